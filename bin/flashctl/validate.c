/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flashctl validate [--policy FILE] [--canonical] SPEC...
 * Checks each spec file (and, with --policy, the owner quota policy) and
 * prints every problem compiler-style, "FILE: PATH: message", or as JSON.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/policy.h>
#include <flash/spec.h>

#include "flashctl.h"
#include "util.h"

/* Files larger than this are not read at all; the library refuses specs
 * above its own (smaller) input limit with a diagnostic. */
#define READ_MAX (16u * 1024 * 1024)

/* One problem, compiler-style: the one formatter for specs and policies. */
static void print_problem(FILE *out, const char *file, const struct flash_diag_entry *e)
{
	if (e->line)
		fprintf(out, "%s:%u:%u: ", file, e->line, e->column);
	else if (e->path[0])
		fprintf(out, "%s: %s: ", file, e->path);
	else
		fprintf(out, "%s: ", file);
	if (e->severity == FLASH_DIAG_WARNING)
		fprintf(out, "warning: ");
	fprintf(out, "%s", e->message);
	if (e->value)
		fprintf(out, " (value: %s)", e->value);
	fprintf(out, " [%s]\n", e->code);
}

static void print_table(FILE *out, const char *file, const struct flash_diag *diag)
{
	for (size_t i = 0; i < flash_diag_count(diag); i++)
		print_problem(out, file, flash_diag_get(diag, i));
	if (flash_diag_dropped(diag))
		fprintf(out, "%s: %zu more problems not shown\n", file, flash_diag_dropped(diag));
}

static int read_file(const char *progname, const char *path, char **ret, size_t *ret_len)
{
	int r = util_read_file(path, READ_MAX, ret, ret_len);

	if (r == -EFBIG)
		fprintf(stderr, "%s validate: %s: larger than %u bytes\n", progname, path, READ_MAX);
	else if (r < 0)
		fprintf(stderr, "%s validate: %s: %s\n", progname, path, util_read_strerror(r));
	return r;
}

static void usage(FILE *out, const char *progname)
{
	fprintf(out,
		"Usage: %s [-o json|yaml|table] validate [--policy FILE] [--canonical] SPEC...\n"
		"Checks Flash spec files; exit 0 when all are valid, 1 when one is not, 2 on usage or I/O errors.\n"
		"  --policy FILE   also check each spec against this owner quota policy\n"
		"  --canonical     print the canonical JSON of each valid spec (table output)\n",
		progname);
}

/* Validates one file into @diag; *ret_spec gets the spec when valid. */
static int validate_one(const char *progname, const char *path, const struct flash_policy *policy,
			struct flash_diag *diag, struct flash_spec **ret_spec)
{
	_cleanup_free_ char *text = NULL;
	struct flash_spec *spec = NULL;
	size_t len = 0;
	int r;

	if (read_file(progname, path, &text, &len) < 0)
		return FLASHCTL_EXIT_USAGE;
	r = flash_spec_parse(text, len, NULL, &spec, diag);
	if (r == -ENOMEM || r == -EINVAL) {
		fprintf(stderr, "%s validate: %s: %s\n", progname, path, flash_strerror(r));
		return FLASHCTL_EXIT_USAGE;
	}
	if (r == 0 && policy) {
		r = flash_policy_check_spec(policy, spec, diag);
		if (r == -ENOMEM || r == -EINVAL) {
			fprintf(stderr, "%s validate: %s: %s\n", progname, path, flash_strerror(r));
			flash_spec_free(spec);
			return FLASHCTL_EXIT_USAGE;
		}
	}
	*ret_spec = spec;
	return flash_diag_errors(diag) ? FLASHCTL_EXIT_FAILURE : FLASHCTL_EXIT_OK;
}

static struct flash_policy *load_policy(const char *progname, const char *path, enum flashctl_output output,
					int *ret_status)
{
	_cleanup_free_ char *text = NULL;
	struct flash_policy *policy = NULL;
	struct flash_diag *diag = NULL;
	size_t len = 0;
	int r;

	*ret_status = FLASHCTL_EXIT_USAGE;
	if (read_file(progname, path, &text, &len) < 0)
		return NULL;
	if (flash_diag_new(&diag) < 0) {
		fprintf(stderr, "%s validate: out of memory\n", progname);
		return NULL;
	}
	r = flash_policy_parse(text, len, &policy, diag);
	if (r == -FLASH_E_POLICY_SYNTAX || r == -FLASH_E_POLICY_INVALID) {
		/* A broken policy is a configuration error, not an invalid spec. */
		fprintf(stderr, "%s validate: --policy %s: %s\n", progname, path, flash_strerror(r));
		if (output == FLASHCTL_OUTPUT_TABLE) {
			print_table(stderr, path, diag);
		} else {
			char *json = NULL;

			if (flash_diag_to_json(diag, path, &json, NULL) == 0)
				printf("[%s]\n", json);
			free(json);
		}
	} else if (r < 0) {
		fprintf(stderr, "%s validate: --policy %s: %s\n", progname, path, flash_strerror(r));
	} else {
		*ret_status = FLASHCTL_EXIT_OK;
	}
	flash_diag_free(diag);
	return policy;
}

int flashctl_validate_main(int argc, char **argv, const struct flashctl_globals *g)
{
	static const struct option options[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "canonical", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *policy_path = NULL;
	struct flash_policy *policy = NULL;
	struct flash_diag *diag = NULL;
	bool canonical = false, first = true;
	int c, status = FLASHCTL_EXIT_OK;

	while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		switch (c) {
		case 'p':
			policy_path = optarg;
			break;
		case 'c':
			canonical = true;
			break;
		case 'h':
			usage(stdout, g->progname);
			return FLASHCTL_EXIT_OK;
		default:
			usage(stderr, g->progname);
			return FLASHCTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s validate: no spec file given\n", g->progname);
		usage(stderr, g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	if (canonical && g->output != FLASHCTL_OUTPUT_TABLE) {
		fprintf(stderr, "%s validate: --canonical prints JSON itself; do not combine it with -o\n", g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	if (policy_path) {
		policy = load_policy(g->progname, policy_path, g->output, &status);
		if (!policy)
			return status;
	}
	if (flash_diag_new(&diag) < 0) {
		fprintf(stderr, "%s validate: out of memory\n", g->progname);
		flash_policy_free(policy);
		return FLASHCTL_EXIT_USAGE;
	}

	/* JSON and YAML print one array of results, one object per file (a
	 * JSON document is also a YAML 1.2 document). */
	if (g->output != FLASHCTL_OUTPUT_TABLE)
		printf("[");
	for (int i = optind; i < argc; i++) {
		struct flash_spec *spec = NULL;
		int one = validate_one(g->progname, argv[i], policy, diag, &spec);

		if (one == FLASHCTL_EXIT_USAGE) {
			status = FLASHCTL_EXIT_USAGE;
			continue;
		}
		if (one > status)
			status = one;
		if (g->output == FLASHCTL_OUTPUT_TABLE) {
			print_table(stdout, argv[i], diag);
			if (one == FLASHCTL_EXIT_OK)
				printf("%s: valid (%zu warning%s)\n", argv[i], flash_diag_warnings(diag),
				       flash_diag_warnings(diag) == 1 ? "" : "s");
			if (spec && canonical) {
				char *json = NULL;

				if (flash_spec_to_json(spec, &json, NULL) == 0)
					printf("%s\n", json);
				free(json);
			}
		} else {
			char *json = NULL;

			if (flash_diag_to_json(diag, argv[i], &json, NULL) < 0) {
				fprintf(stderr, "%s validate: out of memory\n", g->progname);
				status = FLASHCTL_EXIT_USAGE;
			} else {
				printf("%s%s", first ? "" : ",", json);
				first = false;
			}
			free(json);
		}
		flash_spec_free(spec);
	}
	if (g->output != FLASHCTL_OUTPUT_TABLE)
		printf("]\n");
	flash_diag_free(diag);
	flash_policy_free(policy);
	return status;
}
