/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pods/exec and pods/log of the Kubernetes client (common/k8s-exec.h)
 * against the fake API server (tests/k8s-fake.h), whose exec endpoint
 * runs the commands for real on this host: the bytes and exit codes
 * checked are those of real processes.  Covered: the exact argv on the
 * wire and in the process, stdout/stderr kept apart, exit codes through
 * the error channel's Status (0, N, 128+signal), stdin with its end (v5
 * close signal), 4 MiB through cat (sending and receiving at once), the v4 fallback (and its refusal to close stdin), a
 * terminal with resize, a program that cannot start, a refused upgrade
 * (403 with its Status, and a bare 403 for no common subprotocol), hostile
 * servers (bad frames, unknown channel, text message, oversize status, no
 * status, a subprotocol not offered), the Status parser alone, and
 * pods/log with follow, timestamps, sinceTime, tailLines, limitBytes,
 * container and a 404.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "k8s-exec.h"
#include "k8s-fake.h"
#include "k8s.h"
#include "util.h"
#include "websocket.h"

struct env {
	struct k8s_fake *fake;
	struct k8s_client *c;
	char root[64];
};

static void env_open(struct env *e, const char *protocols)
{
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .exec_protocols = protocols };
	struct k8s_client_opts o = { .sz = sizeof(o), .connect_timeout_ms = 5000 };
	struct k8s_config cfg = { 0 };

	memset(e, 0, sizeof(*e));
	snprintf(e->root, sizeof(e->root), "/tmp/test-k8s-exec.XXXXXX");
	cr_assert_not_null(mkdtemp(e->root), "a scratch directory");
	fo.exec_root = e->root;
	ASSERT_OK(k8s_fake_new(&fo, &e->fake), "fake API server");
	cfg.server = (char *)k8s_fake_url(e->fake);
	cfg.namespace = (char *)"tenant-a";
	ASSERT_OK(k8s_client_new(&cfg, &o, &e->c), "client");
}

static void env_close(struct env *e)
{
	char cmd[128];

	k8s_client_free(e->c);
	k8s_fake_free(e->fake);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->root);
	cr_assert_eq(system(cmd), 0, "scratch removed");
}

struct out {
	struct util_buf b;
};

static int sink(const void *buf, size_t len, void *userdata)
{
	struct out *o = userdata;

	return util_buf_append(&o->b, buf, len, 1u << 24);
}

struct src {
	const char *data;
	size_t len, off;
};

static ssize_t source(void *buf, size_t cap, void *userdata)
{
	struct src *s = userdata;
	size_t n = s->len - s->off < cap ? s->len - s->off : cap;

	memcpy(buf, s->data + s->off, n);
	s->off += n;
	return (ssize_t)n;
}

static const char *text(struct out *o)
{
	if (util_buf_append(&o->b, "", 1, 1u << 24) < 0)
		return "";
	o->b.len--;
	return o->b.p;
}

static int run(struct env *e, const char *const *argv, size_t argc, const char *in, struct out *out, struct out *err,
	       int *code)
{
	struct k8s_exec_opts o = { .sz = sizeof(o), .pod = "web-0", .container = "app", .argv = argv, .argc = argc };
	struct src s = { in, in ? strlen(in) : 0, 0 };
	struct k8s_exec_run_io io = { .sz = sizeof(io), .out = sink, .out_userdata = out, .err = sink,
				      .err_userdata = err, .deadline = util_mono_ms() + 10000 };
	struct k8s_status st = { 0 };
	int r;

	if (in) {
		io.in = source;
		io.in_userdata = &s;
	}
	r = k8s_exec_run(e->c, &o, &io, code, &st);
	k8s_status_clear(&st);
	return r;
}

Test(k8s_exec, argv_outputs_and_exit_codes)
{
	static const char *const argv[] = { "/bin/sh", "-c", "printf '%s|' \"$@\"; echo oops >&2; exit 3", "sh",
					    "a b", "", "x&y=z", "ü" };
	static const char *const ok[] = { "/bin/sh", "-c", "pwd" };
	static const char *const sig[] = { "/bin/sh", "-c", "kill -TERM $$" };
	struct out out = { 0 }, err = { 0 };
	struct k8s_fake_request rq = { 0 };
	char buf[64];
	struct env e;
	int code = -1;

	env_open(&e, NULL);
	ASSERT_OK(run(&e, argv, ARRAY_SIZE(argv), NULL, &out, &err, &code), "exec");
	cr_assert_eq(code, 3, "exit status 3 from the ExitCode cause (got %d)", code);
	ASSERT_STREQ(text(&out), "a b||x&y=z|ü|", "every argument arrived exactly");
	ASSERT_STREQ(text(&err), "oops\n", "stderr apart");
	/* The request on the wire: the exec path, one command= per argument. */
	ASSERT_OK(k8s_fake_request_get(e.fake, 0, &rq), "request recorded");
	ASSERT_STREQ(rq.path, "/api/v1/namespaces/tenant-a/pods/web-0/exec", "path");
	cr_assert_eq(rq.status, 101, "switched protocols");
	ASSERT_STREQ(k8s_fake_query_arg(&rq, "container", buf, sizeof(buf)), "app", "container");
	ASSERT_STREQ(k8s_fake_query_arg(&rq, "stdout", buf, sizeof(buf)), "true", "stdout");
	cr_assert_null(k8s_fake_query_arg(&rq, "stdin", buf, sizeof(buf)), "no stdin asked for");
	cr_assert_null(k8s_fake_query_arg(&rq, "tty", buf, sizeof(buf)), "no tty");
	cr_assert_not_null(strstr(rq.query, "command=/bin/sh&command=-c&command=printf"), "commands in order: %s",
			   rq.query);
	k8s_fake_request_clear(&rq);

	out.b.len = err.b.len = 0;
	ASSERT_OK(run(&e, ok, ARRAY_SIZE(ok), NULL, &out, &err, &code), "exec pwd");
	cr_assert_eq(code, 0, "Success is 0");
	cr_assert_not_null(strstr(text(&out), "/tenant-a/web-0"), "ran in the pod's directory: %s", text(&out));

	ASSERT_OK(run(&e, sig, ARRAY_SIZE(sig), NULL, &out, &err, &code), "exec kill");
	cr_assert_eq(code, 128 + 15, "a signal is 128+N (got %d)", code);
	free(out.b.p);
	free(err.b.p);
	env_close(&e);
}

Test(k8s_exec, stdin_closed_over_v5)
{
	static const char *const argv[] = { "/usr/bin/wc", "-c" };
	struct out out = { 0 }, err = { 0 };
	char big[200001];
	struct env e;
	int code = -1;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	env_open(&e, NULL);
	ASSERT_OK(run(&e, argv, ARRAY_SIZE(argv), big, &out, &err, &code), "exec wc");
	cr_assert_eq(code, 0, "wc exits 0");
	cr_assert_eq(atoi(text(&out)), 200000, "every byte of stdin counted, then EOF: %s", text(&out));
	free(out.b.p);
	free(err.b.p);
	env_close(&e);
}

/* A command that writes while it reads (cat of 4 MiB): the client sends
 * and receives at once, so neither side's buffers stall the stream. */
Test(k8s_exec, stdin_and_stdout_at_once)
{
	static const char *const argv[] = { "/bin/cat" };
	struct out out = { 0 }, err = { 0 };
	size_t size = 4u << 20;
	char *big = malloc(size + 1);
	struct env e;
	int code = -1;

	for (size_t i = 0; i < size; i++)
		big[i] = (char)('a' + i % 26);
	big[size] = '\0';
	env_open(&e, NULL);
	ASSERT_OK(run(&e, argv, ARRAY_SIZE(argv), big, &out, &err, &code), "exec cat");
	cr_assert_eq(code, 0, "cat exits 0");
	cr_assert_eq(out.b.len, size, "every byte came back (%zu)", out.b.len);
	cr_assert(memcmp(out.b.p, big, size) == 0, "in order");
	free(big);
	free(out.b.p);
	free(err.b.p);
	env_close(&e);
}

Test(k8s_exec, v4_fallback)
{
	static const char *const argv[] = { "/bin/echo", "v4" };
	static const char *const cat[] = { "/bin/cat" };
	struct k8s_exec_opts o = { .sz = sizeof(o), .pod = "web-0", .argv = argv, .argc = 2, .stdout = true };
	struct out out = { 0 }, err = { 0 };
	struct k8s_exec *x = NULL;
	struct k8s_exec_output m;
	struct env e;
	int code = -1, r;

	env_open(&e, "v4.channel.k8s.io");
	ASSERT_OK(k8s_exec_open(e.c, &o, &x, NULL), "open over v4");
	cr_assert_eq(k8s_exec_version(x), 4, "the server chose v4 among v5, v4");
	while ((r = k8s_exec_read(x, util_mono_ms() + 5000, &m)) == 1)
		ASSERT_OK(util_buf_append(&out.b, m.data, m.len, 4096), "output");
	ASSERT_OK(r, "ended");
	ASSERT_OK(k8s_exec_exit_code(x, &code, NULL), "status");
	cr_assert_eq(code, 0, "exit 0");
	ASSERT_STREQ(text(&out), "v4\n", "stdout");
	k8s_exec_free(x);
	/* stdin to the end cannot be said over v4. */
	ASSERT_ERR(run(&e, cat, 1, "data", &out, &err, &code), -EOPNOTSUPP, "v4 cannot close stdin");
	o.stdin = true;
	ASSERT_OK(k8s_exec_open(e.c, &o, &x, NULL), "open with stdin");
	ASSERT_ERR(k8s_exec_close_stdin(x, 0), -EOPNOTSUPP, "close signal is v5 only");
	k8s_exec_free(x);
	/* A client that offers only v5 to a v4 server: a bare 403. */
	o.protocol = K8S_EXEC_PROTOCOL_V5;
	ASSERT_ERR(k8s_exec_open(e.c, &o, &x, NULL), -EACCES, "no common subprotocol");
	free(out.b.p);
	free(err.b.p);
	env_close(&e);
}

Test(k8s_exec, tty_and_resize)
{
	static const char *const argv[] = { "/bin/sh", "-c", "read line; stty size; echo \"got $line\"" };
	struct k8s_exec_opts o = { .sz = sizeof(o), .pod = "web-1", .argv = argv, .argc = 3, .stdin = true,
				   .stdout = true, .tty = true };
	struct out out = { 0 };
	struct k8s_exec *x = NULL;
	struct k8s_exec_output m;
	struct env e;
	int code = -1, r;

	env_open(&e, NULL);
	ASSERT_OK(k8s_exec_open(e.c, &o, &x, NULL), "open with a tty");
	cr_assert_eq(k8s_exec_version(x), 5, "v5 preferred");
	ASSERT_OK(k8s_exec_resize(x, 132, 43, 0), "resize");
	/* The resize is applied before the input line is read. */
	usleep(100000);
	ASSERT_OK(k8s_exec_write_stdin(x, "hello\n", 6, 0), "a line");
	while ((r = k8s_exec_read(x, util_mono_ms() + 5000, &m)) == 1) {
		cr_assert_eq(m.channel, K8S_EXEC_STDOUT, "a terminal has one output");
		ASSERT_OK(util_buf_append(&out.b, m.data, m.len, 1 << 16), "output");
	}
	ASSERT_OK(r, "ended");
	ASSERT_OK(k8s_exec_exit_code(x, &code, NULL), "status");
	cr_assert_eq(code, 0, "exit 0");
	cr_assert_not_null(strstr(text(&out), "43 132"), "the terminal's size set by resize: %s", text(&out));
	cr_assert_not_null(strstr(text(&out), "got hello"), "input read through the terminal: %s", text(&out));
	k8s_exec_free(x);
	free(out.b.p);
	env_close(&e);
}

Test(k8s_exec, program_that_cannot_start)
{
	static const char *const argv[] = { "/no/such/program" };
	struct out out = { 0 }, err = { 0 };
	struct k8s_exec_opts o = { .sz = sizeof(o), .pod = "web-0", .argv = argv, .argc = 1 };
	struct k8s_exec_run_io io = { .sz = sizeof(io), .deadline = util_mono_ms() + 5000 };
	struct k8s_status st = { 0 };
	struct env e;
	int code = -1;

	env_open(&e, NULL);
	ASSERT_ERR(k8s_exec_run(e.c, &o, &io, &code, &st), -EIO, "an InternalError 500 Status");
	cr_assert_eq(st.code, 500, "its code");
	cr_assert(st.message && strstr(st.message, "/no/such/program"), "message names the program");
	k8s_status_clear(&st);
	free(out.b.p);
	free(err.b.p);
	env_close(&e);
}

Test(k8s_exec, refused_upgrade)
{
	static const char *const argv[] = { "/bin/true" };
	struct k8s_exec_opts o = { .sz = sizeof(o), .pod = "web-0", .argv = argv, .argc = 1, .stdout = true };
	struct k8s_fake_step step = {
		.method = "GET", .path = "/api/v1/namespaces/tenant-a/pods/web-0/exec", .status = 403,
		.body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":"
			"\"pods \\\"web-0\\\" is forbidden: User \\\"system:serviceaccount:flash:flash-operator\\\" "
			"cannot create resource \\\"pods/exec\\\" in API group \\\"\\\" in the namespace "
			"\\\"tenant-a\\\"\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"web-0\",\"kind\":\"pods\"},"
			"\"code\":403}"
	};
	struct k8s_status st = { 0 };
	struct k8s_exec *x = NULL;
	struct env e;

	env_open(&e, NULL);
	ASSERT_OK(k8s_fake_push(e.fake, &step), "script a 403");
	ASSERT_ERR(k8s_exec_open(e.c, &o, &x, &st), -EACCES, "refused");
	cr_assert_null(x, "no session");
	cr_assert_eq(st.code, 403, "code");
	ASSERT_STREQ(st.reason, "Forbidden", "reason parsed");
	ASSERT_STREQ(st.details_kind, "pods", "details parsed");
	cr_assert_not_null(strstr(st.message, "cannot create resource \"pods/exec\""), "message: %s", st.message);
	k8s_status_clear(&st);
	/* A 404 Status for a pod that is gone. */
	step.status = 404;
	step.body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":"
		    "\"pods \\\"web-0\\\" not found\",\"reason\":\"NotFound\",\"code\":404}";
	ASSERT_OK(k8s_fake_push(e.fake, &step), "script a 404");
	ASSERT_ERR(k8s_exec_open(e.c, &o, &x, &st), -ENOENT, "not found");
	ASSERT_STREQ(st.reason, "NotFound", "reason");
	k8s_status_clear(&st);
	env_close(&e);
}

/* A server sending @frames after the 101 (subprotocol @proto, NULL: the
 * first offered): what k8s_exec_read() ends with. */
static int hostile(struct env *e, const void *frames, size_t len, const char *proto, int *ret_open, char *err,
		   size_t err_size)
{
	static const char *const argv[] = { "/bin/true" };
	struct k8s_exec_opts o = { .sz = sizeof(o), .pod = "web-0", .argv = argv, .argc = 1, .stdout = true };
	struct k8s_fake_step step = { .method = "GET", .path = "/api/v1/namespaces/tenant-a/pods/web-0/exec",
				      .ws_frames = frames, .ws_frames_len = len, .ws_protocol = proto };
	struct k8s_exec *x = NULL;
	struct k8s_exec_output m;
	int r, code;

	ASSERT_OK(k8s_fake_push(e->fake, &step), "script");
	*ret_open = k8s_exec_open(e->c, &o, &x, NULL);
	if (*ret_open < 0)
		return *ret_open;
	while ((r = k8s_exec_read(x, util_mono_ms() + 5000, &m)) == 1)
		;
	if (r == 0)
		r = k8s_exec_exit_code(x, &code, NULL);
	snprintf(err, err_size, "%s", k8s_exec_error(x));
	k8s_exec_free(x);
	return r;
}

static size_t frame(uint8_t *buf, uint8_t opcode, const void *data, size_t len)
{
	long n = ws_frame_encode(opcode, true, false, data, len, buf, WS_FRAME_HEAD_MAX + len);

	cr_assert_gt(n, 0, "frame encoded");
	return (size_t)n;
}

Test(k8s_exec, hostile_servers)
{
	static const uint8_t masked[] = { 0x82, 0x82, 1, 2, 3, 4, 0, 0 }; /* a masked frame from a server */
	static const uint8_t reserved[] = { 0xc2, 0x01, 0x01 };          /* RSV1 set */
	uint8_t buf[WS_FRAME_HEAD_MAX + K8S_EXEC_STATUS_MAX + 64], *big;
	char err[256];
	size_t n;
	int op;
	struct env e;

	env_open(&e, NULL);
	cr_assert_eq(hostile(&e, masked, sizeof(masked), NULL, &op, err, sizeof(err)), -EPROTO, "masked frame");
	cr_assert_not_null(strstr(err, "WebSocket"), "said: %s", err);
	cr_assert_eq(hostile(&e, reserved, sizeof(reserved), NULL, &op, err, sizeof(err)), -EPROTO, "RSV1");
	{
		static const uint8_t ch9[] = { 9, 'x' };

		n = frame(buf, WS_OP_BINARY, ch9, sizeof(ch9));
		cr_assert_eq(hostile(&e, buf, n, NULL, &op, err, sizeof(err)), -EPROTO, "channel 9");
		cr_assert_not_null(strstr(err, "channel 9"), "said: %s", err);
	}
	n = frame(buf, WS_OP_TEXT, "1hello", 6);
	{
		int r = hostile(&e, buf, n, NULL, &op, err, sizeof(err));

		cr_assert_eq(r, -EPROTO, "text message: %d %d %s reqs %zu pending %zu", r, op, err,
			     k8s_fake_requests(e.fake), k8s_fake_pending(e.fake));
	}
	cr_assert_not_null(strstr(err, "text"), "said: %s", err);
	/* A status over the bound. */
	big = malloc(K8S_EXEC_STATUS_MAX + 2);
	memset(big, ' ', K8S_EXEC_STATUS_MAX + 2);
	big[0] = 3;
	n = frame(buf, WS_OP_BINARY, big, K8S_EXEC_STATUS_MAX + 2);
	free(big);
	cr_assert_eq(hostile(&e, buf, n, NULL, &op, err, sizeof(err)), -EMSGSIZE, "oversize status");
	/* Output, then the end without a status. */
	{
		static const uint8_t out[] = { 1, 'h', 'i' };

		n = frame(buf, WS_OP_BINARY, out, sizeof(out));
		cr_assert_eq(hostile(&e, buf, n, NULL, &op, err, sizeof(err)), -ECONNRESET, "no status");
		cr_assert_not_null(strstr(err, "without a status"), "said: %s", err);
	}
	/* A status that is no Status. */
	{
		static const uint8_t st[] = "\003{\"kind\":\"Pod\"}";

		n = frame(buf, WS_OP_BINARY, st, sizeof(st) - 1);
		cr_assert_eq(hostile(&e, buf, n, NULL, &op, err, sizeof(err)), -EBADMSG, "not a Status");
	}
	/* A subprotocol that was not offered. */
	{
		int r = hostile(&e, "", 0, "v3.channel.k8s.io", &op, err, sizeof(err));

		cr_assert_eq(r, -EPROTO, "v3 chosen: %d", r);
	}
	cr_assert_eq(op, -EPROTO, "refused at the upgrade");
	env_close(&e);
}

Test(k8s_exec, status_parser)
{
	struct k8s_status st = { 0 };
	int code = -1;

	ASSERT_OK(k8s_exec_status_parse("{\"metadata\":{},\"status\":\"Success\"}", 34, &code, &st), "Success");
	cr_assert_eq(code, 0);
	{
		static const char t[] = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with "
					"non-zero exit code: error executing command [sh -c exit 42], exit code 42\","
					"\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\","
					"\"message\":\"42\"}]}}";

		ASSERT_OK(k8s_exec_status_parse(t, strlen(t), &code, &st), "exit 42");
		cr_assert_eq(code, 42);
	}
	{
		static const char t[] = "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":"
					"[{\"reason\":\"ExitCode\",\"message\":\"-1\"}]}}";

		ASSERT_ERR(k8s_exec_status_parse(t, strlen(t), &code, &st), -EBADMSG, "exit code out of range");
	}
	{
		static const char t[] = "{\"status\":\"Failure\",\"message\":\"container not found (\\\"x\\\")\","
					"\"reason\":\"BadRequest\",\"code\":400}";

		ASSERT_ERR(k8s_exec_status_parse(t, strlen(t), &code, &st), -EINVAL, "a failed exec");
		ASSERT_STREQ(st.reason, "BadRequest", "reason kept");
		k8s_status_clear(&st);
	}
	ASSERT_ERR(k8s_exec_status_parse("[1]", 3, &code, &st), -EBADMSG, "not an object");
	ASSERT_ERR(k8s_exec_status_parse("{\"status\":\"Maybe\"}", 18, &code, &st), -EBADMSG, "unknown status");
}

/* ---------------------------------------------------------------- pods/log */

static int log_run(struct env *e, const struct k8s_log_opts *o, struct out *out, struct k8s_status *st)
{
	out->b.len = 0;
	return k8s_pod_log(e->c, "web-0", o, sink, out, st);
}

struct follower {
	struct env *e;
	struct out out;
	int r;
};

static void *follow_thread(void *arg)
{
	struct follower *f = arg;
	struct k8s_log_opts o = { .sz = sizeof(o), .follow = true };

	f->r = k8s_pod_log(f->e->c, "web-0", &o, sink, &f->out, NULL);
	return NULL;
}

Test(k8s_log, options_and_follow)
{
	const int64_t t0 = 1796169600LL * 1000000000; /* 2026-12-02T00:00:00Z */
	struct k8s_log_opts o = { .sz = sizeof(o) };
	struct k8s_status st = { 0 };
	struct out out = { 0 };
	struct follower fl = { 0 };
	pthread_t t;
	struct env e;
	char buf[64];
	struct k8s_fake_request rq = { 0 };

	env_open(&e, NULL);
	ASSERT_OK(k8s_fake_pod_log_add(e.fake, "tenant-a", "web-0", "app", t0, "one"), "line");
	ASSERT_OK(k8s_fake_pod_log_add(e.fake, "tenant-a", "web-0", "app", t0 + 1000000000, "two"), "line");
	ASSERT_OK(k8s_fake_pod_log_add(e.fake, "tenant-a", "web-0", "side", t0 + 2000000000, "side"), "line");
	ASSERT_OK(k8s_fake_pod_log_add(e.fake, "tenant-a", "web-0", "app", t0 + 3000000000LL, "three"), "line");
	ASSERT_OK(log_run(&e, &o, &out, &st), "whole log");
	ASSERT_STREQ(text(&out), "one\ntwo\nside\nthree\n", "all lines");
	o.container = "app";
	o.timestamps = true;
	ASSERT_OK(log_run(&e, &o, &out, &st), "timestamps");
	cr_assert_not_null(strstr(text(&out), "2026-12-02T00:00:01.000000000Z two\n"), "RFC 3339 prefix: %s",
			   text(&out));
	cr_assert_null(strstr(text(&out), "side"), "container filtered");
	o.timestamps = false;
	o.since_time = "2026-12-02T00:00:01Z";
	ASSERT_OK(log_run(&e, &o, &out, &st), "sinceTime");
	ASSERT_STREQ(text(&out), "two\nthree\n", "older lines dropped");
	ASSERT_OK(k8s_fake_request_get(e.fake, k8s_fake_requests(e.fake) - 1, &rq), "recorded");
	ASSERT_STREQ(k8s_fake_query_arg(&rq, "sinceTime", buf, sizeof(buf)), "2026-12-02T00:00:01Z", "sinceTime sent");
	ASSERT_STREQ(rq.path, "/api/v1/namespaces/tenant-a/pods/web-0/log", "log path");
	k8s_fake_request_clear(&rq);
	o.since_time = NULL;
	o.has_tail_lines = true;
	o.tail_lines = 1;
	ASSERT_OK(log_run(&e, &o, &out, &st), "tailLines");
	ASSERT_STREQ(text(&out), "three\n", "the last line");
	o.has_tail_lines = false;
	o.limit_bytes = 6;
	ASSERT_OK(log_run(&e, &o, &out, &st), "limitBytes");
	ASSERT_STREQ(text(&out), "one\ntw", "cut at 6 bytes");
	o.limit_bytes = 0;
	o.since_seconds = 5;
	o.since_time = "2026-12-02T00:00:01Z";
	ASSERT_ERR(log_run(&e, &o, &out, &st), -EINVAL, "sinceSeconds and sinceTime exclude each other");
	ASSERT_ERR(k8s_pod_log(e.c, "web-9", NULL, sink, &out, &st), -ENOENT, "no such pod");
	cr_assert_eq(st.code, 404, "404 Status");
	k8s_status_clear(&st);

	/* follow: lines added later arrive, the end of the log ends it. */
	fl.e = &e;
	cr_assert_eq(pthread_create(&t, NULL, follow_thread, &fl), 0);
	usleep(100000);
	ASSERT_OK(k8s_fake_pod_log_add(e.fake, "tenant-a", "web-0", "app", 0, "four"), "a later line");
	usleep(100000);
	ASSERT_OK(k8s_fake_pod_log_end(e.fake, "tenant-a", "web-0"), "end");
	pthread_join(t, NULL);
	ASSERT_OK(fl.r, "follow ended with the log");
	ASSERT_STREQ(text(&fl.out), "one\ntwo\nside\nthree\nfour\n", "the later line followed");
	free(fl.out.b.p);
	free(out.b.p);
	env_close(&e);
}
