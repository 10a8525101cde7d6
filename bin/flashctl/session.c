/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flashctl session create|get|list|exec|cp|export|import|reap: sandbox
 * sessions through the <flash/client.h> sandbox calls (token action
 * "sandbox").  A SESSION argument is a session id ("sb-" + 16 hex digits
 * + "-" + name) or a name, made an id with --organization-id and
 * --project-id (flash_client_sandbox_id()).
 *
 * Exit codes (flashctl(1)): those of the provider commands (0 done, 1
 * refused, 2 usage or local error, 3 not found, 4 not authorized, 5
 * unreachable or unavailable), except for exec, which exits with the
 * command's own status and keeps flashctl exec's codes for its own
 * failures: 120 token refused, 121 no such session (or ended), 123 too
 * busy, 124 the command reached its timeout (killed), 125 anything else.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>
#include <flash/meter.h>

#include "flashctl.h"
#include "json.h"
#include "util.h"

#define SPEC_MAX (1u << 20)
#define STDIN_MAX (512u * 1024)     /* exec -i: what one request carries */
#define CP_STDIN_MAX (1ull << 30)   /* cp - SID:/path: read whole first (a write needs its length) */

enum {
	SX_EXIT_AUTH = 120,
	SX_EXIT_NOT_FOUND = 121,
	SX_EXIT_BUSY = 123,
	SX_EXIT_TIMEOUT = 124,
	SX_EXIT_FAILED = 125,
};

struct sctx {
	const struct flashctl_globals *g;
	const char *cmd;     /* "session exec", ... */
	struct flash_client *client;
	struct flash_auth_signer *signer;
};

static void sctx_done(struct sctx *x)
{
	flash_client_free(x->client);
	flash_auth_signer_free(x->signer);
}

/* Is @s a whole session id (not a name)? */
static bool is_id(const char *s)
{
	if (strncmp(s, "sb-", 3) != 0 || strlen(s) < 21 || s[19] != '-')
		return false;
	for (int i = 3; i < 19; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* The session id of @arg (an id, or a name) into @id. */
static int session_id(struct sctx *x, const char *arg, char id[FLASH_CLIENT_SANDBOX_ID_STRLEN])
{
	if (is_id(arg) && strlen(arg) < FLASH_CLIENT_SANDBOX_ID_STRLEN) {
		snprintf(id, FLASH_CLIENT_SANDBOX_ID_STRLEN, "%s", arg);
		return FLASHCTL_EXIT_OK;
	}
	if (!x->g->organization_id || !x->g->project_id) {
		fprintf(stderr, "%s %s: %s: a session name needs --organization-id and --project-id (or give the session id)\n",
			x->g->progname, x->cmd, arg);
		return FLASHCTL_EXIT_USAGE;
	}
	if (flash_client_sandbox_id(x->g->organization_id, x->g->project_id, arg, id) < 0) {
		fprintf(stderr, "%s %s: %s: a session name is 1..%d of a-z, 0-9 and '-', not at either end\n",
			x->g->progname, x->cmd, arg, FLASH_CLIENT_SANDBOX_NAME_MAX);
		return FLASHCTL_EXIT_USAGE;
	}
	return FLASHCTL_EXIT_OK;
}

/* "SESSION:/path" into @id and *ret_path; false when @arg is not one. */
static bool remote_of(struct sctx *x, const char *arg, char id[FLASH_CLIENT_SANDBOX_ID_STRLEN], const char **ret_path,
		      int *ret_status)
{
	const char *colon = strchr(arg, ':');
	char name[128];

	if (!colon || colon == arg || colon[1] != '/' || (size_t)(colon - arg) >= sizeof(name))
		return false;
	memcpy(name, arg, (size_t)(colon - arg));
	name[colon - arg] = '\0';
	*ret_path = colon + 1;
	*ret_status = session_id(x, name, id);
	return true;
}

static int open_x(struct sctx *x, const struct flashctl_globals *g, const char *cmd)
{
	x->g = g;
	x->cmd = cmd;
	return flashctl_open_client(g, cmd, g->project_id, &x->client, &x->signer);
}

/* The one line of a session in a table. */
static void print_row(const struct json_value *s)
{
	const char *id = "", *end = "", *reason = "";
	int64_t exp = 0;
	char when[FLASH_METER_TIME_STRLEN] = "-";

	json_get_string(json_get(s, "session_id"), &id);
	json_get_string(json_get(s, "end"), &end);
	json_get_string(json_get(s, "end_reason"), &reason);
	if (json_get_int64(json_get(s, "expires_at"), &exp) == 0 && exp > 0 &&
	    flash_meter_format_time(exp, when, sizeof(when)) < 0)
		snprintf(when, sizeof(when), "%" PRId64, exp);
	printf("%-63s  %-8s %-20s %s\n", id, end, when, reason);
}

/* A JSON answer printed: as it is (-o json|yaml), or as a table. */
static void print_answer(struct sctx *x, const struct flash_client_response *resp, bool list)
{
	struct json_value *doc = NULL;
	size_t len;
	const char *body = flash_client_response_body(resp, &len);

	if (x->g->output != FLASHCTL_OUTPUT_TABLE || json_parse(body, len, NULL, &doc, NULL) < 0) {
		fputs(body, stdout);
		return;
	}
	printf("%-63s  %-8s %-20s %s\n", "SESSION", "END", "EXPIRES", "REASON");
	if (list) {
		const struct json_value *a = json_get(doc, "sandboxes");

		for (size_t i = 0; a && a->type == JSON_ARRAY && i < a->u.array.n; i++)
			print_row(a->u.array.items[i]);
	} else {
		print_row(doc);
	}
	json_free(doc);
}

/* ---------------------------------------------------------------- create, get, list, reap */

static int do_create(struct sctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "spec", required_argument, NULL, 's' },
		{ "ttl", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *spec_path = NULL;
	unsigned long ttl = 0;
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN], *spec = NULL, *end;
	size_t spec_len = 0;
	struct flash_client_response *resp = NULL;
	int c, r, status;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': spec_path = optarg; break;
		case 't':
			errno = 0;
			ttl = strtoul(optarg, &end, 10);
			if (errno || *end || !optarg[0] || ttl == 0 || ttl > UINT32_MAX) {
				fprintf(stderr, "%s %s: --ttl %s: expected seconds, 1..%" PRIu32 "\n", x->g->progname,
					x->cmd, optarg, UINT32_MAX);
				return FLASHCTL_EXIT_USAGE;
			}
			break;
		case 'h':
			printf("Usage: %s session create SESSION --spec FILE [--ttl SECONDS]\n", x->g->progname);
			return FLASHCTL_EXIT_OK;
		default: return FLASHCTL_EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || !spec_path) {
		fprintf(stderr, "Usage: %s session create SESSION --spec FILE [--ttl SECONDS]\n", x->g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	status = session_id(x, argv[optind], id);
	if (status != FLASHCTL_EXIT_OK)
		return status;
	r = util_read_file(spec_path, SPEC_MAX, &spec, &spec_len);
	if (r < 0) {
		fprintf(stderr, "%s %s: --spec %s: %s\n", x->g->progname, x->cmd, spec_path, strerror(-r));
		return FLASHCTL_EXIT_USAGE;
	}
	r = flash_client_sandbox_provision(x->client, id, spec, spec_len, (uint32_t)ttl, &resp);
	free(spec);
	if (r == -EINVAL) {
		fprintf(stderr, "%s %s: --spec %s: not JSON\n", x->g->progname, x->cmd, spec_path);
		return FLASHCTL_EXIT_USAGE;
	}
	status = flashctl_report(x->g, x->cmd, r, resp);
	if (status == FLASHCTL_EXIT_OK)
		print_answer(x, resp, false);
	flash_client_response_free(resp);
	return status;
}

static int do_simple(struct sctx *x, int argc, char **argv, const char *verb)
{
	struct flash_client_response *resp = NULL;
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	bool list = strcmp(verb, "list") == 0;
	int r, status;

	if (argc != (list ? 1 : 2) || (argc > 1 && argv[1][0] == '-')) {
		fprintf(stderr, "Usage: %s session %s%s\n", x->g->progname, verb, list ? "" : " SESSION");
		return FLASHCTL_EXIT_USAGE;
	}
	if (!list) {
		status = session_id(x, argv[1], id);
		if (status != FLASHCTL_EXIT_OK)
			return status;
	}
	if (list)
		r = flash_client_sandbox_list(x->client, &resp);
	else if (strcmp(verb, "reap") == 0)
		r = flash_client_sandbox_reap(x->client, id, &resp);
	else
		r = flash_client_sandbox_get(x->client, id, &resp);
	status = flashctl_report(x->g, x->cmd, r, resp);
	if (status == FLASHCTL_EXIT_OK)
		print_answer(x, resp, list);
	flash_client_response_free(resp);
	return status;
}

/* ---------------------------------------------------------------- exec */

static int to_fd(const void *buf, size_t len, void *userdata)
{
	int fd = *(const int *)userdata;

	return flashctl_write_all(fd, buf, len) ? 0 : -EPIPE;
}

/* Standard input read whole, at most @max bytes: 0, -E2BIG, -errno. */
static int read_stdin(uint64_t max, char **ret, size_t *ret_len)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= max + 1) {
				free(buf);
				return -E2BIG;
			}
			cap = cap * 2 > max + 1 ? (size_t)max + 1 : cap * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(STDIN_FILENO, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;

			free(buf);
			return e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max) {
		free(buf);
		return -E2BIG;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int exec_status_of(const struct flash_client_response *resp)
{
	switch (flash_client_response_status(resp)) {
	case 401:
	case 403: return SX_EXIT_AUTH;
	case 404:
	case 410: return SX_EXIT_NOT_FOUND;
	case 503: return SX_EXIT_BUSY;
	default: return SX_EXIT_FAILED;
	}
}

static int do_exec(struct sctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stdin", no_argument, NULL, 'i' },
		{ "timeout", required_argument, NULL, 't' },
		{ "env", required_argument, NULL, 'e' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char **env = calloc((size_t)argc + 1, sizeof(*env));
	size_t n_env = 0, in_len = 0;
	const char *cwd = NULL;
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN], *in = NULL, *end;
	bool with_stdin = false;
	double timeout = 0;
	int c, r, status = SX_EXIT_FAILED, out_fd = STDOUT_FILENO, err_fd = STDERR_FILENO;
	struct flash_client_response *refusal = NULL;
	struct flash_client_sandbox_exec_result res = { 0 };

	if (!env)
		return SX_EXIT_FAILED;
	optind = 0;
	/* "+": options stop at the session, the command's own are its own. */
	while ((c = getopt_long(argc, argv, "+ie:w:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': with_stdin = true; break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				fprintf(stderr, "%s %s: --env %s: expected NAME=VALUE\n", x->g->progname, x->cmd, optarg);
				goto usage;
			}
			env[n_env++] = optarg;
			break;
		case 'w': cwd = optarg; break;
		case 't':
			errno = 0;
			timeout = strtod(optarg, &end);
			if (errno || *end || !optarg[0] || !(timeout > 0) || timeout > 86400) {
				fprintf(stderr, "%s %s: --timeout %s: expected seconds (0.001..86400)\n", x->g->progname,
					x->cmd, optarg);
				goto usage;
			}
			break;
		case 'h':
			printf("Usage: %s session exec [-i] [--timeout S] [--env N=V]... [--cwd DIR] SESSION -- ARGV...\n",
			       x->g->progname);
			free(env);
			return FLASHCTL_EXIT_OK;
		default: goto usage;
		}
	}
	if (optind < argc && strcmp(argv[optind + 0], "--") == 0)
		optind++;
	if (argc - optind < 2)
		goto usage;
	status = session_id(x, argv[optind], id);
	if (status != FLASHCTL_EXIT_OK) {
		status = SX_EXIT_FAILED;
		goto out;
	}
	optind++;
	if (strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc || argv[optind][0] != '/') {
		fprintf(stderr, "%s %s: the command must be an absolute path (argv[0] is run as it is)\n", x->g->progname,
			x->cmd);
		goto usage;
	}
	if (with_stdin) {
		r = read_stdin(STDIN_MAX, &in, &in_len);
		if (r < 0) {
			fprintf(stderr, "%s %s: standard input: %s\n", x->g->progname, x->cmd,
				r == -E2BIG ? "more than 512 KiB (use session cp for data)" : strerror(-r));
			status = SX_EXIT_FAILED;
			goto out;
		}
	}
	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = (const char *const *)argv + optind,
		   .env = n_env ? env : NULL, .cwd = cwd, .stdin_data = in, .stdin_len = in_len,
		   .timeout_ms = (uint32_t)(timeout * 1000 + 0.5), .stdout_fn = to_fd, .stdout_userdata = &out_fd,
		   .stderr_fn = to_fd, .stderr_userdata = &err_fd);
	r = flash_client_sandbox_exec(x->client, id, &o, &res, &refusal);
	if (r < 0) {
		fprintf(stderr, "%s %s: %s\n", x->g->progname, x->cmd,
			r == -EPROTO || r == -EIO ? "the exec failed before its end" : strerror(-r));
		status = SX_EXIT_FAILED;
	} else if (refusal) {
		fprintf(stderr, "%s %s: %d %s: %s\n", x->g->progname, x->cmd, flash_client_response_status(refusal),
			flash_client_response_error_code(refusal) ? flash_client_response_error_code(refusal) : "error",
			flash_client_response_error_message(refusal) ? flash_client_response_error_message(refusal) : "");
		status = exec_status_of(refusal);
	} else if (res.timed_out) {
		fprintf(stderr, "%s %s: the command reached its timeout and was killed\n", x->g->progname, x->cmd);
		status = SX_EXIT_TIMEOUT;
	} else {
		status = res.exit_code;
	}
	goto out;
usage:
	fprintf(stderr, "Usage: %s session exec [-i] [--timeout S] [--env N=V]... [--cwd DIR] SESSION -- ARGV...\n",
		x->g->progname);
	status = SX_EXIT_FAILED;
out:
	flash_client_response_free(refusal);
	free(in);
	free(env);
	return status;
}

/* ---------------------------------------------------------------- cp, export, import */

struct fd_source {
	int fd;
	const char *mem; /* or bytes in memory */
	size_t left;
};

static ssize_t from_source(void *buf, size_t cap, void *userdata)
{
	struct fd_source *s = userdata;
	ssize_t n;

	if (s->mem) {
		size_t k = s->left < cap ? s->left : cap;

		memcpy(buf, s->mem, k);
		s->mem += k;
		s->left -= k;
		return (ssize_t)k;
	}
	do
		n = read(s->fd, buf, cap);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* A refusal of a streaming call, said; its exit code. */
static int stream_status(struct sctx *x, int r, struct flash_client_response *resp, const char *what)
{
	int status;

	if (r < 0 && r != -EPROTO && r != -EIO && r != -ECONNREFUSED && r != -ENOENT && r != -ETIMEDOUT) {
		fprintf(stderr, "%s %s: %s: %s\n", x->g->progname, x->cmd, what, strerror(-r));
		return r == -EPIPE ? FLASHCTL_EXIT_USAGE : FLASHCTL_EXIT_FAILURE;
	}
	if (r == -EPROTO || r == -EIO) {
		fprintf(stderr, "%s %s: %s: the transfer failed before its end\n", x->g->progname, x->cmd, what);
		return FLASHCTL_EXIT_FAILURE;
	}
	status = flashctl_report(x->g, x->cmd, r, resp);
	return status;
}

/* Opens @path for writing ("-": standard output). */
static int open_out(struct sctx *x, const char *path)
{
	int fd;

	if (strcmp(path, "-") == 0)
		return STDOUT_FILENO;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fprintf(stderr, "%s %s: %s: %s\n", x->g->progname, x->cmd, path, strerror(errno));
	return fd;
}

static int do_download(struct sctx *x, const char *id, const char *rpath, const char *local, bool tar)
{
	struct flash_client_response *resp = NULL;
	int fd = open_out(x, local), r, status;

	if (fd < 0)
		return FLASHCTL_EXIT_USAGE;
	r = tar ? flash_client_sandbox_export(x->client, id, rpath, to_fd, &fd, &resp)
		: flash_client_sandbox_read(x->client, id, rpath, 0, to_fd, &fd, &resp);
	status = stream_status(x, r, resp, rpath);
	flash_client_response_free(resp);
	if (fd != STDOUT_FILENO && close(fd) < 0 && status == FLASHCTL_EXIT_OK) {
		fprintf(stderr, "%s %s: %s: %s\n", x->g->progname, x->cmd, local, strerror(errno));
		status = FLASHCTL_EXIT_USAGE;
	}
	if (status != FLASHCTL_EXIT_OK && fd != STDOUT_FILENO)
		unlink(local); /* no partial copy left behind */
	return status;
}

static int do_upload(struct sctx *x, const char *local, const char *id, const char *rpath, bool tar)
{
	struct flash_client_response *resp = NULL;
	struct fd_source src = { .fd = STDIN_FILENO };
	char *data = NULL;
	uint64_t size = 0;
	struct stat st;
	int r, status;

	if (strcmp(local, "-") != 0) {
		src.fd = open(local, O_RDONLY | O_CLOEXEC);
		if (src.fd < 0 || fstat(src.fd, &st) < 0 || (!tar && !S_ISREG(st.st_mode))) {
			fprintf(stderr, "%s %s: %s: %s\n", x->g->progname, x->cmd, local,
				src.fd < 0 ? strerror(errno) : "not a regular file");
			if (src.fd >= 0)
				close(src.fd);
			return FLASHCTL_EXIT_USAGE;
		}
		size = (uint64_t)st.st_size;
	} else if (!tar) {
		/* A write needs its length first: standard input is read whole. */
		size_t len = 0;

		r = read_stdin(CP_STDIN_MAX, &data, &len);
		if (r < 0) {
			fprintf(stderr, "%s %s: standard input: %s\n", x->g->progname, x->cmd, strerror(-r));
			return FLASHCTL_EXIT_USAGE;
		}
		src.mem = data ? data : "";
		src.left = len;
		size = len;
	}
	r = tar ? flash_client_sandbox_import(x->client, id, rpath, from_source, &src, &resp)
		: flash_client_sandbox_write(x->client, id, rpath, size, from_source, &src, &resp);
	status = stream_status(x, r, resp, rpath);
	if (status == FLASHCTL_EXIT_OK && x->g->output != FLASHCTL_OUTPUT_TABLE)
		fputs(flash_client_response_body(resp, NULL), stdout);
	flash_client_response_free(resp);
	if (src.fd != STDIN_FILENO)
		close(src.fd);
	free(data);
	return status;
}

static int do_cp(struct sctx *x, int argc, char **argv)
{
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	const char *rpath = NULL;
	int status = FLASHCTL_EXIT_OK;

	if (argc != 3) {
		fprintf(stderr, "Usage: %s session cp FILE|- SESSION:/PATH | SESSION:/PATH FILE|-\n", x->g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	if (remote_of(x, argv[1], id, &rpath, &status)) {
		if (status != FLASHCTL_EXIT_OK)
			return status;
		if (strchr(argv[2], ':') && argv[2][0] != '/' && argv[2][0] != '.') {
			fprintf(stderr, "%s %s: one side is local\n", x->g->progname, x->cmd);
			return FLASHCTL_EXIT_USAGE;
		}
		return do_download(x, id, rpath, argv[2], false);
	}
	if (remote_of(x, argv[2], id, &rpath, &status)) {
		if (status != FLASHCTL_EXIT_OK)
			return status;
		return do_upload(x, argv[1], id, rpath, false);
	}
	fprintf(stderr, "%s %s: one side must be SESSION:/PATH (an absolute path)\n", x->g->progname, x->cmd);
	return FLASHCTL_EXIT_USAGE;
}

static int do_tar(struct sctx *x, int argc, char **argv, bool export)
{
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	const char *rpath = NULL, *remote = export ? (argc > 1 ? argv[1] : "") : (argc > 2 ? argv[2] : "");
	int status = FLASHCTL_EXIT_OK;

	if (argc < 2 || argc > 3 || (!export && argc != 3) || !remote_of(x, remote, id, &rpath, &status)) {
		fprintf(stderr, "Usage: %s session %s\n", x->g->progname,
			export ? "export SESSION:/DIR [FILE|-]" : "import FILE|- SESSION:/DIR");
		return FLASHCTL_EXIT_USAGE;
	}
	if (status != FLASHCTL_EXIT_OK)
		return status;
	return export ? do_download(x, id, rpath, argc == 3 ? argv[2] : "-", true)
		      : do_upload(x, argv[1], id, rpath, true);
}

/* ---------------------------------------------------------------- dispatch */

int flashctl_session_main(int argc, char **argv, const struct flashctl_globals *g)
{
	static const char *const verbs[] = { "create", "get", "list", "exec", "cp", "export", "import", "reap" };
	struct sctx x = { 0 };
	char cmd[32];
	const char *verb = argc > 1 ? argv[1] : NULL;
	bool known = false;
	int status;

	for (size_t i = 0; verb && i < ARRAY_SIZE(verbs); i++)
		known |= strcmp(verb, verbs[i]) == 0;
	if (!known) {
		bool help = verb && (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0);

		fprintf(help ? stdout : stderr,
			"Usage: %s session create SESSION --spec FILE [--ttl SECONDS]\n"
			"       %s session get|reap SESSION\n"
			"       %s session list\n"
			"       %s session exec [-i] [--timeout S] [--env N=V]... [--cwd DIR] SESSION -- ARGV...\n"
			"       %s session cp FILE|- SESSION:/PATH | SESSION:/PATH FILE|-\n"
			"       %s session export SESSION:/DIR [FILE|-]\n"
			"       %s session import FILE|- SESSION:/DIR\n",
			g->progname, g->progname, g->progname, g->progname, g->progname, g->progname, g->progname);
		return help ? FLASHCTL_EXIT_OK : FLASHCTL_EXIT_USAGE;
	}
	snprintf(cmd, sizeof(cmd), "session %s", verb);
	status = open_x(&x, g, cmd);
	if (status != FLASHCTL_EXIT_OK) {
		sctx_done(&x);
		return strcmp(verb, "exec") == 0 ? SX_EXIT_FAILED : status;
	}
	argc--;
	argv++;
	if (strcmp(verb, "create") == 0)
		status = do_create(&x, argc, argv);
	else if (strcmp(verb, "exec") == 0)
		status = do_exec(&x, argc, argv);
	else if (strcmp(verb, "cp") == 0)
		status = do_cp(&x, argc, argv);
	else if (strcmp(verb, "export") == 0 || strcmp(verb, "import") == 0)
		status = do_tar(&x, argc, argv, strcmp(verb, "export") == 0);
	else
		status = do_simple(&x, argc, argv, verb);
	sctx_done(&x);
	return status;
}
