/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-manifests: writes deploy/kubernetes/ (the CRDs, the operator's
 * RBAC and Deployment, the flowsdn-agent DaemonSet) from libflash, and
 * with --chart the Helm chart generated from the same rendering
 * (helm-chart.h).
 *   flash-manifests [--config OPERATOR.json] [--chart CHARTDIR] OUTDIR
 * Used by `make deploy-manifests`; tests/unit/test-render-manifests and
 * tests/unit/test-helm-chart check that the checked-in files equal what
 * this writes.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <flash/render.h>

#include "helm-chart.h"
#include "util.h"

/* mkdir -p for a path relative or absolute ($(srcdir) is often ".."). */
static int mkdir_parents(char *path)
{
	for (char *p = path + 1;; p++) {
		char c = *p;

		if (c != '/' && c)
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*p = c;
			return -errno;
		}
		*p = c;
		if (!c)
			return 0;
	}
}

/* The chart of the default configuration (a --config changes only the
 * plain manifests: the chart's defaults are the shipped ones). */
static int write_chart(const char *prog, const char *dir)
{
	struct helm_chart_file *files = NULL;
	size_t n = 0;
	char err[512];
	int r;

	r = helm_chart_generate(&files, &n, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s: chart: %s\n", prog, err);
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, files[i].path);
		*strrchr(path, '/') = '\0';
		r = mkdir_parents(path);
		if (r < 0) {
			fprintf(stderr, "%s: mkdir %s: %s\n", prog, path, strerror(-r));
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].path);
		r = util_write_file_atomic(path, files[i].text, files[i].len, 0644);
		if (r < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(-r));
			break;
		}
	}
	helm_chart_files_free(files, n);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "chart", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct flash_operator_config *config = NULL;
	const char *config_path = NULL, *chart_dir = NULL;
	int c, r, status = 1;

	while ((c = getopt_long(argc, argv, "c:C:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config_path = optarg;
			break;
		case 'C':
			chart_dir = optarg;
			break;
		case 'h':
			printf("Usage: %s [--config OPERATOR.json] [--chart CHARTDIR] OUTDIR\n", argv[0]);
			return 0;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "Usage: %s [--config OPERATOR.json] [--chart CHARTDIR] OUTDIR\n", argv[0]);
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
	if (chart_dir && write_chart(argv[0], chart_dir) < 0)
		goto out;
	status = 0;
out:
	flash_operator_config_free(config);
	return status;
}
