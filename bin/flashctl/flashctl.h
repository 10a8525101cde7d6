/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flashctl: the global options shared by every subcommand and one entry
 * point per subcommand.  main.c parses the global options and dispatches;
 * each subcommand lives in its own file (validate.c, token.c, render.c,
 * ...) and adds one row to the table in main.c.
 *
 * A subcommand's entry point receives argv[0] = its own name and the
 * arguments after it, and returns the process exit status:
 *   0 success, 1 the subject was checked and found wrong (invalid spec,
 *   bad signature, ...), 2 usage or I/O error.
 */
#ifndef FLASHCTL_H
#define FLASHCTL_H

#include <stdbool.h>
#include <stddef.h>

#include <flash/diag.h>

enum flashctl_exit {
	FLASHCTL_EXIT_OK = 0,
	FLASHCTL_EXIT_FAILURE = 1, /* the input was checked and refused */
	FLASHCTL_EXIT_USAGE = 2,   /* bad arguments or I/O error */
};

enum flashctl_output {
	FLASHCTL_OUTPUT_TABLE = 0, /* human-readable (the default) */
	FLASHCTL_OUTPUT_JSON,
	FLASHCTL_OUTPUT_YAML,
};

struct flashctl_globals {
	const char *progname;        /* "flashctl" */
	const char *organization_id; /* --organization-id, NULL when not given */
	const char *token_file;      /* --token-file, NULL when not given */
	/* Contents of --token-file, read once after checking that it is a
	 * regular file of mode 0600 (or 0400) owned by the caller; NULL when
	 * not given.  NUL-terminated, trailing newlines removed. */
	const char *token;
	size_t token_len;
	enum flashctl_output output; /* -o */
	/* provider/v1 commands (service.c) */
	const char *project_id;      /* --project-id */
	const char *endpoint;        /* --endpoint */
	const char *ca_file;         /* --ca-file */
	const char *issuer;          /* --issuer, for minted tokens */
	const char *audience;        /* --audience, for minted tokens */
};

/* One per subcommand (see the table in main.c). */
/* The message of the first error in @d ("" when none or @d is NULL): for
 * the one-line refusals of calls that report one problem. */
static inline const char *flashctl_diag_message(const struct flash_diag *d)
{
	const struct flash_diag_entry *e = flash_diag_first_error(d);

	return e ? e->message : "";
}

int flashctl_render_main(int argc, char **argv, const struct flashctl_globals *g);
int flashctl_validate_main(int argc, char **argv, const struct flashctl_globals *g);
int flashctl_keygen_main(int argc, char **argv, const struct flashctl_globals *g);
int flashctl_token_main(int argc, char **argv, const struct flashctl_globals *g);
/* create, update, delete, get, list, usage (argv[0] says which). */
int flashctl_service_main(int argc, char **argv, const struct flashctl_globals *g);
int flashctl_logs_main(int argc, char **argv, const struct flashctl_globals *g);
int flashctl_exec_main(int argc, char **argv, const struct flashctl_globals *g);

struct flash_client;
struct flash_auth_signer;
/* The provider client of @g (service.c) and the id of service @target
 * (an id, or a name looked up with list) in @id: FLASHCTL_EXIT_OK with
 * *ret_client and *ret_signer (freed by the caller; the signer may be
 * NULL), or the exit code of the provider commands (flashctl(1)) after
 * saying why on stderr. */
/* The provider client of @g for @cmd alone (no service): as
 * flashctl_open_service(). */
int flashctl_open_client(const struct flashctl_globals *g, const char *cmd, const char *project,
			 struct flash_client **ret_client, struct flash_auth_signer **ret_signer);
struct flash_client_response;
/* A transport error (@r < 0) or an error answer said on stderr (the
 * answer's JSON on stdout with -o json|yaml); the exit code of the
 * provider commands: 0, 1 refused, 3 not found, 4 not authorized, 5
 * unreachable or unavailable. */
int flashctl_report(const struct flashctl_globals *g, const char *cmd, int r, const struct flash_client_response *resp);
/* Writes all of @p to @fd (EINTR retried): false on an error. */
bool flashctl_write_all(int fd, const void *p, size_t n);
int flashctl_session_main(int argc, char **argv, const struct flashctl_globals *g);
int flashctl_open_service(const struct flashctl_globals *g, const char *cmd, const char *project, const char *target,
			  char *id, size_t id_size, struct flash_client **ret_client, struct flash_auth_signer **ret_signer);

#endif
