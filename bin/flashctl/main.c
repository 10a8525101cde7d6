/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flashctl: global options and the subcommand table.  Each subcommand is
 * one row here and one file beside this one.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/common.h>
#include <flash/file.h>

#include "flashctl.h"

struct subcommand {
	const char *name;
	int (*main)(int argc, char **argv, const struct flashctl_globals *g);
	const char *summary;
};

/* Only subcommands that exist are listed: one row each, sorted by name. */
static const struct subcommand subcommands[] = {
	{ "create", flashctl_service_main, "create a service (--name NAME --spec FILE)" },
	{ "delete", flashctl_service_main, "delete a service" },
	{ "exec", flashctl_exec_main, "run a command (a shell by default) in a ready replica (-i, -t)" },
	{ "get", flashctl_service_main, "show a service, its status and last events" },
	{ "keygen", flashctl_keygen_main, "create an Ed25519 key pair for provider command tokens" },
	{ "list", flashctl_service_main, "list the services of the organization or project" },
	{ "logs", flashctl_logs_main, "show (-f: follow) the replicas' standard output and error" },
	{ "render", flashctl_render_main, "print the Kubernetes objects of a spec (YAML or JSON)" },
	{ "session", flashctl_session_main, "sandbox sessions: create, exec, cp, export, import, reap, list" },
	{ "token", flashctl_token_main, "sign or verify a provider command token (EdDSA JWT)" },
	{ "update", flashctl_service_main, "replace the spec of a service" },
	{ "usage", flashctl_service_main, "this week's metered usage of the organization" },
	{ "validate", flashctl_validate_main, "check Flash spec files (and an owner quota policy)" },
};

static void usage(FILE *out, const char *progname)
{
	fprintf(out,
		"Usage: %s [--organization-id ID] [--project-id ID] [--token-file FILE] [-o json|yaml|table]\n"
		"       %*s [--endpoint URL|unix:PATH] [--ca-file FILE] [--issuer ISS] [--audience AUD]\n"
		"       %*s COMMAND [ARGS...]\n"
		"       %s --help | --version\n"
		"\nCommands:\n",
		progname, (int)strlen(progname), "", (int)strlen(progname), "", progname);
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
	fprintf(out, "\nRun '%s COMMAND --help' for a command's options; see flashctl(1).\n", progname);
}

static int parse_output(const char *s, enum flashctl_output *ret)
{
	if (strcmp(s, "table") == 0)
		*ret = FLASHCTL_OUTPUT_TABLE;
	else if (strcmp(s, "json") == 0)
		*ret = FLASHCTL_OUTPUT_JSON;
	else if (strcmp(s, "yaml") == 0)
		*ret = FLASHCTL_OUTPUT_YAML;
	else
		return -EINVAL;
	return 0;
}

/* Reads the token file after the library checked its type, owner and mode. */
static int load_token(const char *progname, struct flashctl_globals *g, char **ret_buf)
{
	char *data = NULL;
	size_t len = 0;
	int r = flash_file_read_secret(g->token_file, 0, &data, &len);

	if (r < 0) {
		if (r == -EPERM)
			fprintf(stderr, "%s: --token-file %s: refused: it must be owned by you and have mode 0600 (chmod 600 %s)\n",
				progname, g->token_file, g->token_file);
		else if (r == -EBADFD)
			fprintf(stderr, "%s: --token-file %s: not a regular file\n", progname, g->token_file);
		else if (r == -ELOOP)
			fprintf(stderr, "%s: --token-file %s: is a symbolic link (refused)\n", progname, g->token_file);
		else
			fprintf(stderr, "%s: --token-file %s: %s\n", progname, g->token_file, flash_strerror(r));
		return r;
	}
	while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		data[--len] = '\0';
	g->token = data;
	g->token_len = len;
	*ret_buf = data;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "organization-id", required_argument, NULL, 'O' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "output", required_argument, NULL, 'o' },
		{ "project-id", required_argument, NULL, 'P' },
		{ "endpoint", required_argument, NULL, 'E' },
		{ "ca-file", required_argument, NULL, 'A' },
		{ "issuer", required_argument, NULL, 'I' },
		{ "audience", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	struct flashctl_globals g = { .progname = "flashctl" };
	char *token_buf = NULL;
	const struct subcommand *cmd = NULL;
	int c, status;

	/* "+": stop at the first non-option, the subcommand. */
	while ((c = getopt_long(argc, argv, "+o:hV", options, NULL)) != -1) {
		switch (c) {
		case 'O':
			if (optarg[0] == '\0') {
				fprintf(stderr, "%s: --organization-id must not be empty\n", g.progname);
				return FLASHCTL_EXIT_USAGE;
			}
			g.organization_id = optarg;
			break;
		case 'T':
			g.token_file = optarg;
			break;
		case 'P':
			if (optarg[0] == '\0') {
				fprintf(stderr, "%s: --project-id must not be empty\n", g.progname);
				return FLASHCTL_EXIT_USAGE;
			}
			g.project_id = optarg;
			break;
		case 'E': g.endpoint = optarg; break;
		case 'A': g.ca_file = optarg; break;
		case 'I': g.issuer = optarg; break;
		case 'U': g.audience = optarg; break;
		case 'o':
			if (parse_output(optarg, &g.output) < 0) {
				fprintf(stderr, "%s: -o %s: expected json, yaml or table\n", g.progname, optarg);
				return FLASHCTL_EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout, g.progname);
			return FLASHCTL_EXIT_OK;
		case 'V':
			printf("flashctl %s (libflash %s)\n", PACKAGE_VERSION, flash_version());
			return FLASHCTL_EXIT_OK;
		default:
			usage(stderr, g.progname);
			return FLASHCTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr, g.progname);
		return FLASHCTL_EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (strcmp(argv[optind], subcommands[i].name) == 0)
			cmd = &subcommands[i];
	if (!cmd) {
		fprintf(stderr, "%s: unknown command '%s' (see '%s --help')\n", g.progname, argv[optind], g.progname);
		return FLASHCTL_EXIT_USAGE;
	}
	if (g.token_file && load_token(g.progname, &g, &token_buf) < 0)
		return FLASHCTL_EXIT_USAGE;

	/* The subcommand parses its own options from a fresh getopt state. */
	argc -= optind;
	argv += optind;
	optind = 0;
	status = cmd->main(argc, argv, &g);

	if (token_buf) {
		explicit_bzero(token_buf, g.token_len);
		free(token_buf);
	}
	return status;
}
