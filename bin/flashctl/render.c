/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flashctl render --spec FILE [--config OPERATOR.json] [--previous STATUS.json]
 *                 [-o yaml|json] [--name NAME] [--namespace NS] [--uid UID]
 *                 [--project-id ID] [--service-id ID] [--image-digest DIGEST]
 *                 [--image-bytes N]
 * Prints the Kubernetes objects flash-operator would apply for a spec.
 * Every decision is libflash's (flash_render()); this file parses
 * arguments and reads files.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/render.h>
#include <flash/spec.h>

#include "flashctl.h"
#include "util.h"

#define READ_MAX (16u * 1024 * 1024)

static void usage(FILE *out, const char *progname)
{
	fprintf(out,
		"Usage: %s [--organization-id ID] render --spec FILE [--config OPERATOR.json]\n"
		"       [--previous STATUS.json] [-o yaml|json] [--name NAME] [--namespace NS] [--uid UID]\n"
		"       [--project-id ID] [--service-id ID] [--image-digest sha256:HEX] [--image-bytes N]\n"
		"Prints the Deployment, Service, NetworkPolicy and PersistentVolumeClaim of a spec.\n"
		"Exit 0 on success, 1 when the spec or the rendering is refused, 2 on usage,\n"
		"configuration or I/O errors.  See flashctl(1) and flash-operator.conf(5).\n",
		progname);
}

static int read_file(const char *progname, const char *what, const char *path, char **ret, size_t *ret_len)
{
	int r = util_read_file(path, READ_MAX, ret, ret_len);

	if (r == -EFBIG)
		fprintf(stderr, "%s render: %s %s: larger than %u bytes\n", progname, what, path, READ_MAX);
	else if (r < 0)
		fprintf(stderr, "%s render: %s %s: %s\n", progname, what, path, util_read_strerror(r));
	return r;
}

/* Every error of @diag, one line each: FILE:LINE:COLUMN or FILE: PATH. */
static void print_errors(const char *file, const struct flash_diag *diag)
{
	for (size_t i = 0; i < flash_diag_count(diag); i++) {
		const struct flash_diag_entry *e = flash_diag_get(diag, i);

		if (e->severity != FLASH_DIAG_ERROR)
			continue;
		if (e->line)
			fprintf(stderr, "%s:%u:%u: %s [%s]\n", file, e->line, e->column, e->message, e->code);
		else if (e->path[0])
			fprintf(stderr, "%s: %s: %s [%s]\n", file, e->path, e->message, e->code);
		else
			fprintf(stderr, "%s: %s [%s]\n", file, e->message, e->code);
	}
}

static struct flash_spec *load_spec(const char *progname, const char *path, int *ret_status)
{
	_cleanup_free_ char *text = NULL;
	struct flash_spec *spec = NULL;
	struct flash_diag *diag = NULL;
	size_t len = 0;
	int r;

	*ret_status = FLASHCTL_EXIT_USAGE;
	if (read_file(progname, "--spec", path, &text, &len) < 0)
		return NULL;
	if (flash_diag_new(&diag) < 0) {
		fprintf(stderr, "%s render: out of memory\n", progname);
		return NULL;
	}
	r = flash_spec_parse(text, len, NULL, &spec, diag);
	if (r == -FLASH_E_SPEC_SYNTAX || r == -FLASH_E_SPEC_INVALID) {
		print_errors(path, diag);
		*ret_status = FLASHCTL_EXIT_FAILURE;
	} else if (r < 0) {
		fprintf(stderr, "%s render: %s: %s\n", progname, path, flash_strerror(r));
	}
	flash_diag_free(diag);
	return spec;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s[0] || s[0] == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int flashctl_render_main(int argc, char **argv, const struct flashctl_globals *g)
{
	enum { OPT_SPEC = 0x100, OPT_CONFIG, OPT_PREVIOUS, OPT_NAME, OPT_NAMESPACE, OPT_UID, OPT_PROJECT,
	       OPT_SERVICE, OPT_DIGEST, OPT_IMAGE_BYTES };
	static const struct option options[] = {
		{ "spec", required_argument, NULL, OPT_SPEC },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "previous", required_argument, NULL, OPT_PREVIOUS },
		{ "output", required_argument, NULL, 'o' },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "namespace", required_argument, NULL, OPT_NAMESPACE },
		{ "uid", required_argument, NULL, OPT_UID },
		{ "project-id", required_argument, NULL, OPT_PROJECT },
		{ "service-id", required_argument, NULL, OPT_SERVICE },
		{ "image-digest", required_argument, NULL, OPT_DIGEST },
		{ "image-bytes", required_argument, NULL, OPT_IMAGE_BYTES },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *progname = g->progname;
	const char *spec_path = NULL, *config_path = NULL, *previous_path = NULL;
	const char *name = NULL, *ns = "default", *uid = NULL, *project = NULL, *service = NULL, *digest = NULL;
	uint64_t image_bytes = 0;
	enum flash_render_format format = g->output == FLASHCTL_OUTPUT_JSON ? FLASH_RENDER_JSON : FLASH_RENDER_YAML;
	struct flash_spec *spec = NULL;
	struct flash_operator_config *config = NULL;
	struct flash_public_port *previous = NULL, *ports = NULL;
	size_t n_previous = 0, n_ports = 0;
	struct flash_render *rd = NULL;
	struct flash_diag *d = NULL;
	char default_name[32];
	char *out = NULL;
	size_t out_len = 0;
	int c, r, status = FLASHCTL_EXIT_USAGE;

	while ((c = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
		switch (c) {
		case OPT_SPEC: spec_path = optarg; break;
		case OPT_CONFIG: config_path = optarg; break;
		case OPT_PREVIOUS: previous_path = optarg; break;
		case OPT_NAME: name = optarg; break;
		case OPT_NAMESPACE: ns = optarg; break;
		case OPT_UID: uid = optarg; break;
		case OPT_PROJECT: project = optarg; break;
		case OPT_SERVICE: service = optarg; break;
		case OPT_DIGEST: digest = optarg; break;
		case OPT_IMAGE_BYTES:
			if (parse_u64(optarg, &image_bytes) < 0) {
				fprintf(stderr, "%s render: --image-bytes %s: not a byte count\n", progname, optarg);
				return FLASHCTL_EXIT_USAGE;
			}
			break;
		case 'o':
			if (strcmp(optarg, "yaml") == 0) {
				format = FLASH_RENDER_YAML;
			} else if (strcmp(optarg, "json") == 0) {
				format = FLASH_RENDER_JSON;
			} else {
				fprintf(stderr, "%s render: -o %s: must be yaml or json\n", progname, optarg);
				return FLASHCTL_EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout, progname);
			return FLASHCTL_EXIT_OK;
		default:
			usage(stderr, progname);
			return FLASHCTL_EXIT_USAGE;
		}
	}
	if (!spec_path || optind != argc) {
		usage(stderr, progname);
		return FLASHCTL_EXIT_USAGE;
	}

	spec = load_spec(progname, spec_path, &status);
	if (!spec)
		goto out;
	status = FLASHCTL_EXIT_USAGE;
	if (flash_diag_new(&d) < 0) {
		fprintf(stderr, "%s render: out of memory\n", progname);
		goto out;
	}
	if (config_path) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;

		if (read_file(progname, "--config", config_path, &text, &len) < 0)
			goto out;
		r = flash_operator_config_parse(text, len, &config, d);
		if (r == -FLASH_E_RENDER_CONFIG) {
			print_errors(config_path, d);
			goto out;
		} else if (r < 0) {
			fprintf(stderr, "%s render: --config %s: %s\n", progname, config_path, flash_strerror(r));
			goto out;
		}
	} else if ((r = flash_operator_config_default(&config)) < 0) {
		fprintf(stderr, "%s render: %s\n", progname, flash_strerror(r));
		goto out;
	}
	if (previous_path) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;

		if (read_file(progname, "--previous", previous_path, &text, &len) < 0)
			goto out;
		r = flash_public_ports_parse(text, len, &previous, &n_previous, d);
		if (r == -FLASH_E_RENDER_PREVIOUS) {
			print_errors(previous_path, d);
			goto out;
		} else if (r < 0) {
			fprintf(stderr, "%s render: --previous %s: %s\n", progname, previous_path, flash_strerror(r));
			goto out;
		}
	}
	if (!name) {
		/* A stable default: "fs-" and the start of the spec digest. */
		char hex[FLASH_SPEC_DIGEST_HEX_SIZE];

		if (flash_spec_digest_hex(spec, hex) < 0)
			goto out;
		snprintf(default_name, sizeof(default_name), "fs-%.12s", hex);
		name = default_name;
	}
	status = FLASHCTL_EXIT_FAILURE;
	r = flash_public_ports_assign(config, spec, previous, n_previous, NULL, 0, &ports, &n_ports);
	if (r < 0) {
		fprintf(stderr, "%s render: %s: %s\n", progname, spec_path, flash_strerror(r));
		goto out;
	}
	{
		FLASH_OPTS(flash_render_opts, opts, .name = name, .namespace_ = ns, .uid = uid,
			   .organization_id = g->organization_id ? g->organization_id : "local",
			   .project_id = project, .service_id = service, .image_digest = digest,
			   .image_bytes = image_bytes, .public_ports = ports, .n_public_ports = n_ports);

		r = flash_render(spec, config, &opts, &rd, d);
	}
	if (r < 0) {
		if (flash_diag_errors(d))
			print_errors(spec_path, d);
		else
			fprintf(stderr, "%s render: %s\n", progname, flash_strerror(r));
		goto out;
	}
	r = flash_render_print(rd, format, &out, &out_len);
	if (r < 0) {
		fprintf(stderr, "%s render: %s\n", progname, flash_strerror(r));
		goto out;
	}
	if (fwrite(out, 1, out_len, stdout) != out_len || fflush(stdout) != 0) {
		fprintf(stderr, "%s render: writing the output: %m\n", progname);
		status = FLASHCTL_EXIT_USAGE;
		goto out;
	}
	status = FLASHCTL_EXIT_OK;
out:
	free(out);
	flash_render_free(rd);
	free(ports);
	free(previous);
	flash_operator_config_free(config);
	flash_spec_free(spec);
	flash_diag_free(d);
	return status;
}
