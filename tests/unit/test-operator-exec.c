/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Web Shell sessions (operator/exec.c) without privileges: the session's
 * process.json, the session cap, and whole sessions over a socket pair
 * against a stand-in for runsc (a shell script that runs cat and honours
 * `kill --pid`), with the client's frames written by hand: input in,
 * output and STATUS out, the audit, and a hostile frame closing the
 * session with 1002 and ending its process.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <flash/client.h>

#include "exec.h"
#include "helpers.h"
#include "json.h"
#include "util.h"
#include "websocket.h"

static const char bundle_config[] =
	"{\"ociVersion\":\"1.0.2\",\"process\":{\"terminal\":false,\"user\":{\"uid\":0,\"gid\":0},"
	"\"args\":[\"/usr/local/bin/flash-udp-echo\"],\"env\":[\"PATH=/usr/bin:/bin\",\"HOME=/root\",\"TERM=dumb\","
	"\"GREETING=hello\"],\"cwd\":\"/\",\"capabilities\":{\"bounding\":[]},\"noNewPrivileges\":true},"
	"\"root\":{\"path\":\"rootfs\"}}";

Test(exec, process_json_keeps_the_workload_sets_the_session)
{
	const char *argv[] = { "printf", "[%s]", "a b", "", "\"q\"" };
	struct json_value *doc = NULL;
	const struct json_value *args, *env;
	char *out = NULL;
	size_t len = 0;

	ASSERT_OK(op_shell_process_json(bundle_config, strlen(bundle_config), argv, 5, false, 0, 0, NULL, &out, &len),
		  "pipes");
	ASSERT_OK(json_parse(out, len, NULL, &doc, NULL), "process.json is JSON");
	args = json_get(doc, "args");
	cr_assert(args && args->type == JSON_ARRAY && args->u.array.n == 5, "%s", out);
	for (size_t i = 0; i < 5; i++)
		cr_assert_str_eq(args->u.array.items[i]->u.string.ptr, argv[i], "argument %zu", i);
	cr_assert(strstr(out, "\"cwd\":\"/root\""), "%s", out);
	cr_assert(strstr(out, "\"terminal\":false"), "%s", out);
	cr_assert(strstr(out, "\"noNewPrivileges\":true") && strstr(out, "\"user\":{\"uid\":0,\"gid\":0}"),
		  "the workload's user and privileges: %s", out);
	cr_assert_null(strstr(out, "consoleSize"), "%s", out);
	cr_assert_null(strstr(out, "flash-udp-echo"), "the workload's args are gone: %s", out);
	env = json_get(doc, "env");
	cr_assert(env && env->u.array.n == 4, "the workload's environment as it is: %s", out);
	json_free(doc);
	free(out);

	ASSERT_OK(op_shell_process_json(bundle_config, strlen(bundle_config), argv, 1, true, 120, 40, "xterm-256color",
					&out, &len),
		  "tty");
	cr_assert(strstr(out, "\"terminal\":true") && strstr(out, "\"consoleSize\":{\"height\":40,\"width\":120}"), "%s",
		  out);
	cr_assert(strstr(out, "\"TERM=xterm-256color\"") && !strstr(out, "TERM=dumb"), "TERM replaced: %s", out);
	free(out);
	ASSERT_ERR(op_shell_process_json("{\"process\":7}", 13, argv, 1, false, 0, 0, NULL, &out, &len), -EINVAL,
		   "no process object");
	ASSERT_ERR(op_shell_process_json(bundle_config, strlen(bundle_config), argv, 0, false, 0, 0, NULL, &out, &len),
		   -EINVAL, "no argv");
}

Test(exec, session_cap)
{
	struct op_shell_opts o = { .sz = sizeof(o), .max_sessions = 2 };
	struct op_exec_target t = { .replica = 0 };
	struct op_shell_params p = { .service_id = "fs-x", .target = &t };
	struct op_shell_session *s[3] = { NULL };
	struct op_shell *sh;

	ASSERT_OK(op_shell_new(&o, &sh), "new");
	cr_assert_eq(op_shell_limit_s(sh), OP_SHELL_LIMIT_S_DEFAULT);
	ASSERT_OK(op_shell_reserve(sh, &p, &s[0]), "first");
	ASSERT_OK(op_shell_reserve(sh, &p, &s[1]), "second");
	cr_assert_eq(op_shell_open(sh), 2);
	ASSERT_ERR(op_shell_reserve(sh, &p, &s[2]), -EBUSY, "third over the cap");
	op_shell_cancel(s[0]);
	cr_assert_eq(op_shell_open(sh), 1);
	ASSERT_OK(op_shell_reserve(sh, &p, &s[2]), "a slot given back is free again");
	op_shell_cancel(s[1]);
	op_shell_cancel(s[2]);
	cr_assert_eq(op_shell_open(sh), 0);
	p.argc = OP_SHELL_ARGS_MAX + 1;
	p.argv = (const char *const[]){ "x" };
	ASSERT_ERR(op_shell_reserve(sh, &p, &s[0]), -EINVAL, "too many arguments");
	op_shell_free(sh);
}

/* ---------------------------------------------------------------- sessions */

struct audit_log {
	pthread_mutex_t lock;
	char start[1024], end[1024];
	int n;
};

static void on_audit(void *ctx, const char *service_id, const char *type, const char *message)
{
	struct audit_log *a = ctx;

	cr_assert_str_eq(service_id, "fs-test");
	pthread_mutex_lock(&a->lock);
	snprintf(strcmp(type, "exec-start") == 0 ? a->start : a->end, sizeof(a->start), "%s", message);
	a->n++;
	pthread_mutex_unlock(&a->lock);
}

static int done_fd = -1;
static void on_done(void *ctx)
{
	(void)ctx;
	if (write(done_fd, "d", 1) < 0)
		cr_log_warn("done pipe");
}

struct fixture {
	char dir[64];
	struct op_exec_target t;
	struct op_shell *sh;
	struct audit_log audit;
	int sv[2], done[2];
	struct ws_conn *in; /* frames from the session */
};

/* A stand-in for runsc: "exec ... --internal-pid-file F ID" writes its pid
 * to F and runs cat (of the process.json's args, only cat is run);
 * "kill --pid N ID KILL" kills N. */
static void fixture_up(struct fixture *f)
{
	static const char fake[] = "#!/bin/sh\n"
				   "for a; do case $prev in --internal-pid-file) pidf=$a;; --pid) pid=$a;; esac; prev=$a; done\n"
				   "case \" $* \" in *\" kill \"*) kill -9 \"$pid\"; exit 0;; esac\n"
				   "echo $$ >\"$pidf\"\n"
				   "exec cat\n";
	char path[128];
	FILE *fp;

	snprintf(f->dir, sizeof(f->dir), "/tmp/test-operator-exec.XXXXXX");
	cr_assert(mkdtemp(f->dir));
	snprintf(f->t.runsc, sizeof(f->t.runsc), "%s/runsc", f->dir);
	fp = fopen(f->t.runsc, "we");
	cr_assert(fp);
	fputs(fake, fp);
	fclose(fp);
	chmod(f->t.runsc, 0700);
	snprintf(f->t.root, sizeof(f->t.root), "%s", f->dir);
	snprintf(f->t.bundle, sizeof(f->t.bundle), "%s", f->dir);
	snprintf(f->t.container, sizeof(f->t.container), "fs-test-g1-0-0");
	snprintf(path, sizeof(path), "%s/config.json", f->dir);
	fp = fopen(path, "we");
	cr_assert(fp);
	fputs(bundle_config, fp);
	fclose(fp);
	pthread_mutex_init(&f->audit.lock, NULL);
	struct op_shell_opts o = { .sz = sizeof(o), .audit = on_audit, .audit_ctx = &f->audit, .limit_s = 20 };
	ASSERT_OK(op_shell_new(&o, &f->sh), "shell");
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->sv), 0);
	cr_assert_eq(pipe2(f->done, O_CLOEXEC), 0);
	done_fd = f->done[1];
	ASSERT_OK(ws_conn_new(false, 1 << 20, &f->in), "parser");
}

static void fixture_down(struct fixture *f)
{
	char cmd[128];

	op_shell_free(f->sh);
	ws_conn_free(f->in);
	close(f->sv[0]);
	close(f->sv[1]);
	close(f->done[0]);
	close(f->done[1]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	cr_assert_eq(system(cmd), 0);
}

static void send_msg(struct fixture *f, uint8_t opcode, bool mask, const void *data, size_t len)
{
	uint8_t buf[256];
	long n = ws_frame_encode(opcode, true, mask, data, len, buf, sizeof(buf));

	cr_assert(n > 0);
	cr_assert_eq(write(f->sv[0], buf, (size_t)n), n);
}

/* The next message from the session within 10 s. */
static bool next_msg(struct fixture *f, struct ws_message *m)
{
	for (int waited = 0; waited < 10000;) {
		uint8_t buf[4096];
		struct pollfd p = { .fd = f->sv[0], .events = POLLIN };
		int r = ws_conn_next(f->in, m);
		ssize_t n;

		if (r == 1)
			return true;
		cr_assert_eq(r, 0, "the session's frames parse: %s", ws_conn_error(f->in));
		if (poll(&p, 1, 100) == 0) {
			waited += 100;
			continue;
		}
		n = read(f->sv[0], buf, sizeof(buf));
		if (n <= 0)
			return false;
		ASSERT_OK(ws_conn_feed(f->in, buf, (size_t)n), "feed");
	}
	return false;
}

static void start_session(struct fixture *f)
{
	struct op_shell_params p = { .who = "kid k org o project p", .service_id = "fs-test", .target = &f->t,
				     .argv = (const char *const[]){ "cat" }, .argc = 1 };
	struct op_shell_session *s = NULL;

	ASSERT_OK(op_shell_reserve(f->sh, &p, &s), "reserve");
	ASSERT_OK(op_shell_start(s, f->sv[1], NULL, 0, on_done, NULL), "start");
}

static void wait_done(struct fixture *f)
{
	struct pollfd p = { .fd = f->done[0], .events = POLLIN };
	char c;

	cr_assert_eq(poll(&p, 1, 10000), 1, "the session ended");
	cr_assert_eq(read(f->done[0], &c, 1), 1);
}

Test(exec, a_session_through_a_websocket)
{
	struct fixture f = { 0 };
	struct ws_message m;
	char out[64] = "";
	size_t got = 0;
	bool status = false;

	fixture_up(&f);
	start_session(&f);
	send_msg(&f, WS_OP_BINARY, true, "\0hello", 6);
	send_msg(&f, WS_OP_PING, true, "p1", 2);
	while (got < 5 && next_msg(&f, &m)) {
		if (m.opcode == WS_OP_PONG) {
			cr_assert(m.len == 2 && !memcmp(m.data, "p1", 2), "the ping's payload comes back");
			continue;
		}
		cr_assert_eq(m.opcode, WS_OP_BINARY);
		cr_assert_eq(m.data[0], FLASH_EXEC_STDOUT);
		memcpy(out + got, m.data + 1, m.len - 1);
		got += m.len - 1;
	}
	cr_assert_str_eq(out, "hello");
	/* End of input: cat exits 0. */
	send_msg(&f, WS_OP_BINARY, true, "\xff\x00", 2);
	while (next_msg(&f, &m) && m.opcode != WS_OP_CLOSE) {
		if (m.opcode == WS_OP_BINARY && m.data[0] == FLASH_EXEC_STATUS) {
			cr_assert(m.len - 1 == strlen("{\"exit_code\":0}") && !memcmp(m.data + 1, "{\"exit_code\":0}", m.len - 1),
				  "status %.*s", (int)m.len - 1, m.data + 1);
			status = true;
		}
	}
	cr_assert(status, "STATUS before the close");
	cr_assert_eq(m.opcode, WS_OP_CLOSE);
	cr_assert_eq(m.close_code, WS_CLOSE_NORMAL);
	wait_done(&f);
	pthread_mutex_lock(&f.audit.lock);
	cr_assert_eq(f.audit.n, 2, "start and end audited");
	cr_assert(strstr(f.audit.start, "\"who\":\"kid k org o project p\"") && strstr(f.audit.start, "\"argv\":[\"cat\"]"),
		  "%s", f.audit.start);
	cr_assert(strstr(f.audit.end, "\"exit_code\":0") && strstr(f.audit.end, "\"bytes_in\":5") &&
			  strstr(f.audit.end, "\"bytes_out\":5") && strstr(f.audit.end, "\"duration_ms\":"),
		  "%s", f.audit.end);
	pthread_mutex_unlock(&f.audit.lock);
	/* The slot is given back right after the connection is. */
	for (int i = 0; i < 100 && op_shell_open(f.sh); i++)
		usleep(10000);
	cr_assert_eq(op_shell_open(f.sh), 0, "the slot is given back");
	fixture_down(&f);
}

Test(exec, an_unmasked_frame_closes_with_1002_and_ends_the_process)
{
	struct fixture f = { 0 };
	struct ws_message m;
	char pidpath[200], *pidtext = NULL;
	FILE *fp;
	int pid = 0;

	fixture_up(&f);
	start_session(&f);
	snprintf(pidpath, sizeof(pidpath), "%s/exec-0.pid", f.dir);
	for (int i = 0; i < 200 && access(pidpath, F_OK) != 0; i++)
		usleep(10000);
	fp = fopen(pidpath, "re");
	cr_assert(fp, "the stand-in wrote its pid");
	cr_assert_eq(fscanf(fp, "%d", &pid), 1);
	fclose(fp);
	free(pidtext);
	send_msg(&f, WS_OP_BINARY, false, "\0x", 2);
	while (next_msg(&f, &m) && m.opcode != WS_OP_CLOSE)
		;
	cr_assert_eq(m.opcode, WS_OP_CLOSE);
	cr_assert_eq(m.close_code, WS_CLOSE_PROTOCOL, "close code %u", m.close_code);
	wait_done(&f);
	cr_assert(kill(pid, 0) < 0 && errno == ESRCH, "the session's process %d was ended", pid);
	pthread_mutex_lock(&f.audit.lock);
	cr_assert(strstr(f.audit.end, "\"reason\":\"protocol-error\""), "%s", f.audit.end);
	pthread_mutex_unlock(&f.audit.lock);
	fixture_down(&f);
}

Test(exec, the_limit_ends_a_session)
{
	struct fixture f = { 0 };
	struct op_shell_opts o = { .sz = sizeof(o), .limit_s = 1 };
	struct ws_message m;
	bool limited = false;

	fixture_up(&f);
	op_shell_free(f.sh);
	ASSERT_OK(op_shell_new(&o, &f.sh), "a 1 s limit");
	start_session(&f);
	while (next_msg(&f, &m) && m.opcode != WS_OP_CLOSE)
		if (m.opcode == WS_OP_BINARY && m.data[0] == FLASH_EXEC_STATUS)
			limited = memmem(m.data, m.len, "\"reason\":\"time-limit\"", 21) &&
				  memmem(m.data, m.len, "limit of 1 s", 12);
	cr_assert(limited, "STATUS says the time limit");
	cr_assert_eq(m.close_code, WS_CLOSE_GOING_AWAY);
	wait_done(&f);
	fixture_down(&f);
}

/* A session ended before runsc exec wrote the process's pid file: the
 * stand-in starts its "sandbox process" (sleep 1000), writes its pid only
 * 0.5 s later, then waits for it, as runsc exec waits; the client hangs
 * up at once.  The process must be killed by that pid once it appears,
 * not left running behind a SIGKILLed runsc exec. */
Test(exec, a_session_ended_before_the_pid_file_still_kills_the_process)
{
	struct fixture f = { 0 };
	char script[1024], path[200];
	FILE *fp;
	int pid = 0;
	bool gone = false;

	fixture_up(&f);
	snprintf(script, sizeof(script),
		 "#!/bin/sh\n"
		 "for a; do case $prev in --internal-pid-file) pidf=$a;; --pid) pid=$a;; esac; prev=$a; done\n"
		 "case \" $* \" in *\" kill \"*) kill -9 \"$pid\"; exit 0;; esac\n"
		 "sleep 1000 &\n"
		 "echo $! >%s/sandbox.pid\n"
		 "sleep 0.5\n"
		 "echo $! >\"$pidf\"\n"
		 "wait\n",
		 f.dir);
	fp = fopen(f.t.runsc, "we");
	cr_assert(fp);
	fputs(script, fp);
	fclose(fp);
	start_session(&f);
	cr_assert_eq(shutdown(f.sv[0], SHUT_RDWR), 0);
	wait_done(&f);
	snprintf(path, sizeof(path), "%s/sandbox.pid", f.dir);
	fp = fopen(path, "re");
	cr_assert(fp, "the stand-in started its process");
	cr_assert_eq(fscanf(fp, "%d", &pid), 1);
	fclose(fp);
	/* Gone, or a zombie waiting for init. */
	for (int i = 0; i < 200 && !gone; i++) {
		char stat[256] = "", *p;
		FILE *sp;

		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		sp = fopen(path, "re");
		if (!sp || !fgets(stat, sizeof(stat), sp))
			gone = true;
		else if ((p = strrchr(stat, ')')) && p[1] == ' ' && p[2] == 'Z')
			gone = true;
		if (sp)
			fclose(sp);
		if (!gone)
			usleep(10000);
	}
	if (!gone)
		kill(pid, SIGKILL);
	cr_assert(gone, "the process %d started before its pid file was written still runs", pid);
	pthread_mutex_lock(&f.audit.lock);
	cr_assert(strstr(f.audit.end, "\"reason\":\"disconnected\""), "%s", f.audit.end);
	pthread_mutex_unlock(&f.audit.lock);
	fixture_down(&f);
}

/* argv=message: the argv of the client's first message (ARGV, a JSON
 * array) is what process.json runs, exactly; anything else first is
 * refused with reason bad-argv and nothing runs. */
static void start_argv_session(struct fixture *f)
{
	struct op_shell_params p = { .who = "kid k org o project p", .service_id = "fs-test", .target = &f->t,
				     .argv_in_message = true };
	struct op_shell_session *s = NULL;

	ASSERT_OK(op_shell_reserve(f->sh, &p, &s), "reserve");
	ASSERT_OK(op_shell_start(s, f->sv[1], NULL, 0, on_done, NULL), "start");
}

static void send_big(struct fixture *f, const void *data, size_t len)
{
	uint8_t *buf = malloc(len + WS_FRAME_HEAD_MAX);
	long n;

	cr_assert(buf);
	n = ws_frame_encode(WS_OP_BINARY, true, true, data, len, buf, len + WS_FRAME_HEAD_MAX);
	cr_assert(n > 0);
	for (long off = 0; off < n;) {
		ssize_t w = write(f->sv[0], buf + off, (size_t)(n - off));

		cr_assert(w > 0);
		off += w;
	}
	free(buf);
}

Test(exec, argv_in_the_first_message)
{
	struct fixture f = { 0 };
	struct ws_message m;
	struct json_value *doc = NULL;
	const struct json_value *args;
	char script[1024], path[200], *big = malloc(30001), *msg = NULL, *text = NULL;
	size_t len = 0;
	bool status = false;
	FILE *fp;

	cr_assert(big);
	memset(big, 'x', 30000);
	big[30000] = '\0';
	fixture_up(&f);
	/* The stand-in keeps the process.json it was given. */
	snprintf(script, sizeof(script),
		 "#!/bin/sh\n"
		 "for a; do case $prev in --internal-pid-file) pidf=$a;; --process) procf=$a;; --pid) pid=$a;; esac; prev=$a; done\n"
		 "case \" $* \" in *\" kill \"*) kill -9 \"$pid\"; exit 0;; esac\n"
		 "cp \"$procf\" %s/seen.json\n"
		 "echo $$ >\"$pidf\"\n"
		 "exec cat\n",
		 f.dir);
	fp = fopen(f.t.runsc, "we");
	cr_assert(fp);
	fputs(script, fp);
	fclose(fp);
	start_argv_session(&f);
	cr_assert(asprintf(&msg, "%c[\"printf\",\"[%%s]\\n\",\"a b\",\"\",\"\\\"q\\\"\",\"%s\"]", FLASH_EXEC_ARGV, big) > 0);
	send_big(&f, msg, strlen(msg));
	send_msg(&f, WS_OP_BINARY, true, "\xff\x00", 2);
	while (next_msg(&f, &m) && m.opcode != WS_OP_CLOSE)
		if (m.opcode == WS_OP_BINARY && m.data[0] == FLASH_EXEC_STATUS)
			status = m.len - 1 == strlen("{\"exit_code\":0}");
	cr_assert(status, "STATUS 0");
	wait_done(&f);
	snprintf(path, sizeof(path), "%s/seen.json", f.dir);
	cr_assert_eq(util_read_file(path, 1 << 20, &text, &len), 0, "the stand-in saw a process.json");
	ASSERT_OK(json_parse(text, len, NULL, &doc, NULL), "process.json");
	args = json_get(doc, "args");
	cr_assert(args && args->type == JSON_ARRAY && args->u.array.n == 6, "args: %.200s", text);
	cr_assert_str_eq(json_string_value(args->u.array.items[0]), "printf");
	cr_assert_str_eq(json_string_value(args->u.array.items[1]), "[%s]\n");
	cr_assert_str_eq(json_string_value(args->u.array.items[2]), "a b");
	cr_assert_str_eq(json_string_value(args->u.array.items[3]), "");
	cr_assert_str_eq(json_string_value(args->u.array.items[4]), "\"q\"");
	cr_assert_str_eq(json_string_value(args->u.array.items[5]), big);
	pthread_mutex_lock(&f.audit.lock);
	cr_assert(strstr(f.audit.start, "\"argv\":[\"printf\""), "the audit has the argv: %.100s", f.audit.start);
	pthread_mutex_unlock(&f.audit.lock);
	json_free(doc);
	free(text);
	free(msg);
	free(big);
	fixture_down(&f);
}

Test(exec, a_first_message_other_than_argv_is_refused)
{
#define B(x) { x, sizeof(x) - 1 }
	static const struct {
		const char *m;
		size_t n;
	} bad[] = { B("\0input"), B("\x05{\"not\":\"an array\"}"), B("\x05[]"), B("\x05[1]"), B("\x05[\"a\\u0000b\"]"),
		    B("\x05[\"x\""), B("\x04{\"cols\":80,\"rows\":24}") };
#undef B

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fixture f = { 0 };
		struct ws_message m;
		bool refused = false;
		char seen[200];

		fixture_up(&f);
		start_argv_session(&f);
		send_msg(&f, WS_OP_BINARY, true, bad[i].m, bad[i].n);
		while (next_msg(&f, &m) && m.opcode != WS_OP_CLOSE)
			if (m.opcode == WS_OP_BINARY && m.data[0] == FLASH_EXEC_STATUS)
				refused = memmem(m.data, m.len, "\"reason\":\"bad-argv\"", 19) != NULL;
		cr_assert(refused, "message %zu: STATUS says bad-argv", i);
		wait_done(&f);
		snprintf(seen, sizeof(seen), "%s/exec-0.pid", f.dir);
		cr_assert(access(seen, F_OK) != 0, "message %zu: runsc exec was run", i);
		pthread_mutex_lock(&f.audit.lock);
		cr_assert(strstr(f.audit.end, "\"reason\":\"bad-argv\""), "%s", f.audit.end);
		pthread_mutex_unlock(&f.audit.lock);
		fixture_down(&f);
	}
}
