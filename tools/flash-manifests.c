/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-manifests: writes deploy/kubernetes/ (the CRDs, the operator's
 * RBAC and Deployment, the flowsdn-agent DaemonSet) from libflash.
 *   flash-manifests [--config OPERATOR.json] OUTDIR
 * Used by `make deploy-manifests`; tests/unit/test-render-manifests checks
 * that the checked-in files equal what this writes.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <flash/render.h>

#include "util.h"

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct flash_operator_config *config = NULL;
	const char *config_path = NULL;
	int c, r, status = 1;

	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config_path = optarg;
			break;
		case 'h':
			printf("Usage: %s [--config OPERATOR.json] OUTDIR\n", argv[0]);
			return 0;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "Usage: %s [--config OPERATOR.json] OUTDIR\n", argv[0]);
		return 2;
	}
	if (config_path) {
		struct flash_diag *d = NULL;
		const struct flash_diag_entry *e;
		char *text = NULL;
		size_t len = 0;

		r = util_read_file(config_path, 1 << 20, &text, &len);
		if (r < 0) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], config_path, util_read_strerror(r));
			return 2;
		}
		if (flash_diag_new(&d) < 0) {
			free(text);
			return 1;
		}
		r = flash_operator_config_parse(text, len, &config, d);
		free(text);
		e = flash_diag_first_error(d);
		if (r < 0) {
			fprintf(stderr, "%s: %s: %s: %s\n", argv[0], config_path, e ? e->path : "",
				e ? e->message : flash_strerror(r));
			flash_diag_free(d);
			return 1;
		}
		flash_diag_free(d);
	}
	for (int m = 0; m < FLASH_MANIFEST_COUNT_; m++) {
		char path[4096], dir[4096];
		char *text = NULL;
		size_t len = 0;

		snprintf(path, sizeof(path), "%s/%s", argv[optind], flash_manifest_path(m));
		snprintf(dir, sizeof(dir), "%s", path);
		*strrchr(dir, '/') = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "%s: mkdir %s: %m\n", argv[0], dir);
			goto out;
		}
		r = flash_manifest_render(m, config, &text, &len);
		if (r < 0) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], flash_manifest_path(m), flash_strerror(r));
			goto out;
		}
		r = util_write_file_atomic(path, text, len, 0644);
		free(text);
		if (r < 0) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], path, strerror(-r));
			goto out;
		}
	}
	status = 0;
out:
	flash_operator_config_free(config);
	return status;
}
