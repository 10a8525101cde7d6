/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flashctl exec [-i] [-t] SERVICE [--replica N] [-- ARGV...]: a Web Shell
 * session through flash_client_exec_open().  The remote exit status is
 * flashctl's own; its own failures have codes of their own (flashctl(1)):
 * 120 token refused, 121 no such service or replica, 122 not ready,
 * 123 too many sessions, 124 the session reached its time limit, 125
 * anything else (usage, the operator unreachable, the connection lost).
 *
 * With -t and a terminal on standard input, that terminal is put in raw
 * mode (so Ctrl-C and every other key reach the remote process) and
 * restored on every way out: the end of the session, an error, SIGTERM,
 * SIGHUP, SIGQUIT (handled, then flashctl exits 128 + the signal).
 * SIGWINCH sends the new window size.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>

#include "flashctl.h"

enum {
	EXEC_EXIT_AUTH = 120,
	EXEC_EXIT_NOT_FOUND = 121,
	EXEC_EXIT_NOT_READY = 122,
	EXEC_EXIT_BUSY = 123,
	EXEC_EXIT_LIMIT = 124,
	EXEC_EXIT_FAILED = 125,
};

static int sig_pipe[2] = { -1, -1 };
static struct termios saved_tty;
static bool tty_raw;

static void on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int e = errno;

	if (write(sig_pipe[1], &b, 1) < 0) {
		/* full: a signal of each kind is waiting already */
	}
	errno = e;
}

static void restore_tty(void)
{
	if (tty_raw) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
		tty_raw = false;
	}
}

static int make_raw(void)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, &saved_tty) < 0)
		return -errno;
	t = saved_tty;
	cfmakeraw(&t);
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) < 0)
		return -errno;
	tty_raw = true;
	atexit(restore_tty);
	return 0;
}

bool flashctl_write_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
	return true;
}

static void send_size(struct flash_client_exec *x)
{
	struct winsize ws;

	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row)
		(void)flash_client_exec_resize(x, ws.ws_col, ws.ws_row);
}

/* A refusal's exit code (after saying it on stderr). */
static int refusal_code(const struct flashctl_globals *g, const struct flash_client_response *resp)
{
	int st = flash_client_response_status(resp);
	const char *code = flash_client_response_error_code(resp);

	fprintf(stderr, "%s exec: %d %s: %s\n", g->progname, st, code ? code : "error",
		flash_client_response_error_message(resp) ? flash_client_response_error_message(resp) : "");
	if (st == 401 || st == 403)
		return EXEC_EXIT_AUTH;
	if (st == 404)
		return EXEC_EXIT_NOT_FOUND;
	if (st == 409)
		return EXEC_EXIT_NOT_READY;
	if (st == 429)
		return EXEC_EXIT_BUSY;
	return EXEC_EXIT_FAILED;
}

/* --replica N (before or after the service). */
static bool parse_replica(const struct flashctl_globals *g, const char *s, int *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || !s[0] || *end || s[0] == '-' || v > 65535) {
		fprintf(stderr, "%s exec: --replica %s: expected an index 0..65535\n", g->progname, s);
		return false;
	}
	*ret = (int)v;
	return true;
}

static void exec_usage(FILE *out, const char *progname)
{
	fprintf(out,
		"Usage: %s exec [-i|--stdin] [-t|--tty] ID|NAME [--replica N] [-- ARGV...]\n"
		"Runs ARGV (default /bin/sh) in /root of a ready replica; exits with its status.\n"
		"Global options (before the command): --endpoint, --organization-id, --project-id,\n"
		"--token-file, --issuer, --audience; see flashctl(1).\n",
		progname);
}

/* The session: standard input to STDIN (with -i), STDOUT and STDERR to
 * ours, until STATUS and the close.  The exit code. */
static int run(const struct flashctl_globals *g, struct flash_client_exec *x, bool in, bool tty)
{
	bool in_open = in, done = false;
	int code = EXEC_EXIT_FAILED, r, sig = 0;
	const char *reason = NULL, *message = NULL;
	char buf[32768];

	if (!in)
		(void)flash_client_exec_close_stdin(x);
	while (!done) {
		struct pollfd p[3] = { { .fd = flash_client_exec_fd(x), .events = POLLIN },
				       { .fd = sig_pipe[0], .events = POLLIN },
				       { .fd = in_open ? STDIN_FILENO : -1, .events = POLLIN } };
		unsigned int ch;
		const void *data;
		size_t len;

		/* Everything already received first: TLS may hold bytes the
		 * socket no longer shows. */
		while ((r = flash_client_exec_recv(x, &ch, &data, &len)) == 1) {
			if (ch == FLASH_EXEC_STDOUT || ch == FLASH_EXEC_STDERR)
				(void)flashctl_write_all(ch == FLASH_EXEC_STDOUT ? STDOUT_FILENO : STDERR_FILENO, data, len);
		}
		if (r < 0)
			break;
		if (poll(p, 3, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN) {
			unsigned char b;

			while (read(sig_pipe[0], &b, 1) == 1) {
				if (b == SIGWINCH && tty)
					send_size(x);
				else if (b != SIGWINCH)
					sig = b;
			}
			if (sig)
				break;
		}
		if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

			if (n > 0) {
				if (flash_client_exec_send(x, FLASH_EXEC_STDIN, buf, (size_t)n) < 0)
					done = true;
			} else if (n == 0 || errno != EINTR) {
				in_open = false;
				(void)flash_client_exec_close_stdin(x);
			}
		}
	}
	restore_tty();
	if (sig) {
		fprintf(stderr, "%s exec: ended by signal %d (the remote process is ended too)\n", g->progname, sig);
		return 128 + sig;
	}
	if (!flash_client_exec_status(x, &code, &reason, &message)) {
		fprintf(stderr, "%s exec: the connection to the operator ended before the process did%s\n", g->progname,
			r == -EPROTO ? " (a protocol error)" : "");
		return EXEC_EXIT_FAILED;
	}
	if (reason) {
		fprintf(stderr, "%s exec: %s\n", g->progname, message ? message : reason);
		if (!strcmp(reason, "time-limit"))
			return EXEC_EXIT_LIMIT;
		return EXEC_EXIT_FAILED;
	}
	return code;
}

int flashctl_exec_main(int argc, char **argv, const struct flashctl_globals *g)
{
	static const struct option options[] = {
		{ "stdin", no_argument, NULL, 'i' },
		{ "tty", no_argument, NULL, 't' },
		{ "replica", required_argument, NULL, 'r' },
		{ "project-id", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	static const int handled[] = { SIGTERM, SIGHUP, SIGQUIT, SIGINT, SIGWINCH, SIGPIPE };
	const char *project = g->project_id, *target = NULL;
	struct flash_client *client = NULL;
	struct flash_auth_signer *signer = NULL;
	struct flash_client_exec *x = NULL;
	struct flash_client_response *refusal = NULL;
	struct flash_client_exec_opts eo = { .sz = sizeof(eo), .replica = -1 };
	bool in = false, tty = false;
	char id[64] = "";
	int c, status, r;

	/* "+": options end at the service; ARGV after "--" is never ours. */
	while ((c = getopt_long(argc, argv, "+ith", options, NULL)) != -1) {
		switch (c) {
		case 'i': in = true; break;
		case 't': tty = true; break;
		case 'r':
			if (!parse_replica(g, optarg, &eo.replica))
				return EXEC_EXIT_FAILED;
			break;
		case 'P': project = optarg; break;
		case 'h':
			exec_usage(stdout, g->progname);
			return FLASHCTL_EXIT_OK;
		default:
			exec_usage(stderr, g->progname);
			return EXEC_EXIT_FAILED;
		}
	}
	if (optind < argc)
		target = argv[optind++];
	/* --replica may follow the service. */
	while (optind < argc && strcmp(argv[optind], "--") != 0) {
		if (!strcmp(argv[optind], "--replica") && optind + 1 < argc) {
			if (!parse_replica(g, argv[optind + 1], &eo.replica))
				return EXEC_EXIT_FAILED;
			optind += 2;
			continue;
		}
		fprintf(stderr, "%s exec: unexpected %s (the command goes after \"--\")\n", g->progname, argv[optind]);
		return EXEC_EXIT_FAILED;
	}
	if (optind < argc)
		optind++; /* "--" */
	if (!target) {
		exec_usage(stderr, g->progname);
		return EXEC_EXIT_FAILED;
	}
	if (optind < argc) {
		eo.argv = (const char *const *)argv + optind;
		eo.argc = (size_t)(argc - optind);
	}
	eo.tty = tty;
	eo.term = tty && getenv("TERM") && getenv("TERM")[0] ? getenv("TERM") : NULL;
	if (tty && isatty(STDIN_FILENO)) {
		struct winsize ws;

		if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) {
			eo.cols = ws.ws_col;
			eo.rows = ws.ws_row;
		}
	}
	status = flashctl_open_service(g, "exec", project, target, id, sizeof(id), &client, &signer);
	if (status != FLASHCTL_EXIT_OK)
		return status == 3 ? EXEC_EXIT_NOT_FOUND : status == 4 ? EXEC_EXIT_AUTH : EXEC_EXIT_FAILED;
	r = flash_client_exec_open(client, id, &eo, &x, &refusal);
	if (r == -EINVAL && eo.term) {
		/* A TERM the operator would refuse: its default instead. */
		eo.term = NULL;
		r = flash_client_exec_open(client, id, &eo, &x, &refusal);
	}
	if (r < 0) {
		if (r == -E2BIG || r == -EINVAL || r == -EPROTO)
			fprintf(stderr, "%s exec: %s\n", g->progname,
				r == -E2BIG  ? "the command is too long (at most 1 MiB as a JSON array)" :
				r == -EINVAL ? "at most 256 arguments of at most 64 KiB each" :
					       "the operator did not answer with a WebSocket");
		else
			fprintf(stderr, "%s exec: cannot reach the operator: %s\n", g->progname, strerror(-r));
		status = EXEC_EXIT_FAILED;
		goto out;
	}
	if (refusal) {
		status = refusal_code(g, refusal);
		goto out;
	}
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		status = EXEC_EXIT_FAILED;
		goto out;
	}
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++) {
		struct sigaction sa = { .sa_handler = handled[i] == SIGPIPE ? SIG_IGN : on_signal };

		sigemptyset(&sa.sa_mask);
		sigaction(handled[i], &sa, NULL);
	}
	if (tty && isatty(STDIN_FILENO) && make_raw() < 0) {
		fprintf(stderr, "%s exec: cannot put the terminal in raw mode: %s\n", g->progname, strerror(errno));
		status = EXEC_EXIT_FAILED;
		goto out;
	}
	status = run(g, x, in, tty);
out:
	restore_tty();
	flash_client_exec_free(x);
	flash_client_response_free(refusal);
	flash_client_free(client);
	flash_auth_signer_free(signer);
	return status;
}
