/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox provider (<flash/sandbox.h>) over a backend whose exec runs
 * the command on this host (op_exec_stream(), what the gVisor backend runs
 * runsc exec with), in a private temporary directory: the provider's
 * in-sandbox scripts (the deadline wrapper, the size-gated read, the
 * counted temp-then-rename write, the checked import, the export) run for
 * real under the host's /bin/bash, setsid, tee, wc, cat, stat, chmod, mv,
 * rm and tar.  The contract suite (tests/integration/test-sandbox-contract)
 * runs the same operations in real sandboxes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <flash/diag.h>
#include <flash/sandbox.h>
#include <flash/spec.h>

#include "helpers.h"
#include "runtime-internal.h"
#include "sandbox-helpers.h"

/* ---------------------------------------------------------- the host backend */
struct host {
	char ids[8][FLASH_SANDBOX_ID_MAX + 1];
	size_t n;
	unsigned int execs, reaps;
	size_t drop_stdin;   /* fault: the last N bytes of stdin never arrive */
	char log[256];       /* order of revoke/reap calls */
};

static struct host *H;

static int find(struct host *h, const char *id)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->ids[i], id) == 0)
			return (int)i;
	return -1;
}

static int h_provision(void *b, const char *id, const struct flash_spec *spec, uint32_t ttl,
		       struct flash_sandbox_info *ret, struct flash_diag *diag)
{
	struct host *h = b;

	(void)spec;
	(void)diag;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->session_id, sizeof(ret->session_id), "%s", id);
	ret->created_at = time(NULL);
	ret->expires_at = ret->created_at + ttl;
	if (find(h, id) >= 0) {
		ret->adopted = true;
		return 0;
	}
	cr_assert(h->n < 8);
	snprintf(h->ids[h->n++], sizeof(h->ids[0]), "%s", id);
	return 0;
}

static int h_info(void *b, const char *id, struct flash_sandbox_info *ret)
{
	if (find(b, id) < 0)
		return -ENOENT;
	snprintf(ret->session_id, sizeof(ret->session_id), "%s", id);
	return 0;
}

static int h_exec(void *b, const char *id, const struct flash_sandbox_exec_io *io, int *ret_code)
{
	struct host *h = b;
	struct op_exec e = { .argv = io->argv, .envp = io->env };
	struct test_dropper d = { .io = io, .drop = h->drop_stdin };
	struct op_exec_io x = {
		.stdin_fn = io->stdin_fn,
		.stdin_userdata = io->stdin_userdata,
		.stdout_fn = io->stdout_fn,
		.stdout_userdata = io->stdout_userdata,
		.stderr_fn = io->stderr_fn,
		.stderr_userdata = io->stderr_userdata,
		.deadline_ms = io->deadline_ms,
	};
	int status = 0, r;

	if (find(h, id) < 0)
		return -ENOENT;
	h->execs++;
	if (h->drop_stdin && io->stdin_fn) {
		x.stdin_fn = test_drop_stdin;
		x.stdin_userdata = &d;
	}
	r = op_exec_stream(&e, &x, &status);
	if (r < 0)
		return r;
	*ret_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 0;
}

static int h_owned(void *b, char ***ret, size_t *n)
{
	struct host *h = b;
	char **v = calloc(h->n + 1, sizeof(*v));

	for (size_t i = 0; i < h->n; i++)
		v[i] = strdup(h->ids[i]);
	*ret = v;
	*n = h->n;
	return 0;
}

static int h_reap(void *b, const char *id)
{
	struct host *h = b;
	int i = find(h, id);

	h->reaps++;
	strncat(h->log, "reap;", sizeof(h->log) - strlen(h->log) - 1);
	if (i < 0)
		return 0;
	memmove(h->ids[i], h->ids[i + 1], (h->n - (size_t)i - 1) * sizeof(h->ids[0]));
	h->n--;
	return 0;
}

static void h_free(void *b)
{
	free(b);
}

static const struct flash_sandbox_backend_ops host_ops = {
	.sz = sizeof(host_ops),
	.provision = h_provision,
	.info = h_info,
	.exec = h_exec,
	.owned = h_owned,
	.reap = h_reap,
	.free = h_free,
};

static int revoke_rc_;

static int test_revoke(const char *id, void *userdata)
{
	(void)userdata;
	strncat(H->log, "revoke:", sizeof(H->log) - strlen(H->log) - 1);
	strncat(H->log, id, sizeof(H->log) - strlen(H->log) - 1);
	strncat(H->log, ";", sizeof(H->log) - strlen(H->log) - 1);
	return revoke_rc_;
}

static struct flash_sandbox_provider *P;
static struct flash_spec *SPEC;
static char DIR_[256];
static const char *SID = "sess-1";

static void setup(void)
{
	FLASH_OPTS(flash_sandbox_provider_opts, o, .revoke = test_revoke, .read_max_bytes = 1 << 20);
	static const char spec[] = "{\"region\": \"heteronet-global\", \"image\": \"busybox\", \"cpu_millis\": 100, \"memory_mib\": 64}";
	struct flash_sandbox_info info;

	signal(SIGPIPE, SIG_IGN);
	H = calloc(1, sizeof(*H));
	revoke_rc_ = 0;
	ASSERT_OK(flash_sandbox_provider_new(&host_ops, H, &o, &P), "provider_new");
	ASSERT_OK(flash_spec_parse(spec, sizeof(spec) - 1, NULL, &SPEC, NULL), "spec");
	snprintf(DIR_, sizeof(DIR_), "/tmp/test-sandbox-XXXXXX");
	cr_assert(mkdtemp(DIR_));
	ASSERT_OK(flash_sandbox_provision(P, SID, SPEC, 60, &info, NULL), "provision");
}

static void teardown(void)
{
	char cmd[300];

	flash_sandbox_provider_free(P);
	flash_spec_free(SPEC);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", DIR_);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(sandbox, .init = setup, .fini = teardown);

/* ---------------------------------------------------------- helpers */
static int run(const char *const *argv, uint32_t timeout_ms, const char *in, struct test_buf *out, struct test_buf *err,
	       struct flash_sandbox_exec_result *res)
{
	struct test_src s = { .p = in, .len = in ? strlen(in) : 0 };
	FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .timeout_ms = timeout_ms,
		   .stdin_fn = in ? test_src_read : NULL, .stdin_userdata = &s, .stdout_fn = test_buf_sink,
		   .stdout_userdata = out, .stderr_fn = test_buf_sink, .stderr_userdata = err);

	return flash_sandbox_exec(P, SID, &o, res);
}

static char *path(const char *name)
{
	static char buf[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", DIR_, name);
	return buf[k];
}

static void put_file(const char *name, const void *data, size_t len, mode_t mode)
{
	FILE *f = fopen(path(name), "wb");

	cr_assert(f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
	cr_assert_eq(chmod(path(name), mode), 0);
}

static char *get_file(const char *name, size_t *len)
{
	FILE *f = fopen(path(name), "rb");
	char *d = calloc(1, 1 << 16);

	cr_assert(f, "%s missing", name);
	*len = fread(d, 1, 1 << 16, f);
	fclose(f);
	return d;
}

static size_t entries(void)
{
	char cmd[2048];
	FILE *f;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", DIR_);
	f = popen(cmd, "r");
	cr_assert(fscanf(f, "%zu", &n) == 1);
	pclose(f);
	return n;
}

/* ---------------------------------------------------------- ids, provision */
Test(sandbox, session_ids_checked_once_before_the_backend)
{
	static const char *bad[] = { "", "Sess", "-a", "a-", "a_b", "a.b",
		"a123456789012345678901234567890123456789012345678901234567890123" };
	struct flash_sandbox_info info;
	const char *argv[] = { "/bin/true", NULL };
	FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv);
	struct flash_sandbox_exec_result res;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert(!flash_sandbox_id_valid(bad[i]), "\"%s\" valid", bad[i]);
		ASSERT_ERR(flash_sandbox_provision(P, bad[i], SPEC, 60, &info, NULL), -EINVAL, bad[i]);
		ASSERT_ERR(flash_sandbox_exec(P, bad[i], &o, &res), -EINVAL, bad[i]);
		ASSERT_ERR(flash_sandbox_reap(P, bad[i]), -EINVAL, bad[i]);
	}
	cr_assert(flash_sandbox_id_valid("a"));
	cr_assert(flash_sandbox_id_valid("0-9-z"));
	cr_assert_eq(H->execs, 0);
	cr_assert_eq(H->reaps, 0);
	cr_assert_str_eq(H->log, "", "revoke called for a bad id: %s", H->log);
}

Test(sandbox, provision_again_adopts_and_ttl_sets_expiry)
{
	struct flash_sandbox_info info;

	ASSERT_OK(flash_sandbox_provision(P, SID, SPEC, 90, &info, NULL), "provision");
	cr_assert(info.adopted);
	cr_assert_eq(info.expires_at - info.created_at, 90);
	ASSERT_ERR(flash_sandbox_provision(P, "other", SPEC, 0, &info, NULL), -EINVAL, "ttl 0");
	ASSERT_ERR(flash_sandbox_info(P, "nobody", &info), -ENOENT, "info of nothing");
	cr_assert_str_eq(flash_sandbox_end_name(FLASH_SANDBOX_END_EXPIRED), "expired");
}

/* ---------------------------------------------------------- exec */
Test(sandbox, exec_exit_codes_argv_stdin_env_cwd)
{
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 }, err = { 0 };
	const char *a1[] = { "/bin/sh", "-c", "echo to-err >&2; exit 3", NULL };
	const char *a2[] = { "/usr/bin/printf", "[%s]", "a b", "", "c'd\"e", "$HOME", "-n", NULL };
	const char *a3[] = { "/bin/cat", NULL };
	const char *a4[] = { "/bin/sh", "-c", "kill -TERM $$", NULL };
	const char *a5[] = { "/bin/sh", "-c", "echo $FOO; pwd", NULL };
	const char *env[] = { "FOO=bar baz", "PATH=/usr/bin:/bin", NULL };

	ASSERT_OK(run(a1, 0, NULL, &out, &err, &res), "exit 3");
	cr_assert_eq(res.exit_code, 3);
	cr_assert(!res.timed_out);
	cr_assert_str_eq(err.p, "to-err\n", "stderr \"%s\" (the report must be stripped)", err.p);
	free(err.p);
	err = (struct test_buf){ 0 };

	ASSERT_OK(run(a2, 0, NULL, &out, &err, &res), "argv");
	cr_assert_eq(res.exit_code, 0);
	cr_assert_str_eq(out.p, "[a b][][c'd\"e][$HOME][-n]", "argv came out as %s", out.p);
	free(out.p);
	out = (struct test_buf){ 0 };

	ASSERT_OK(run(a3, 0, "line one\nline two", &out, &err, &res), "stdin");
	cr_assert_str_eq(out.p, "line one\nline two");
	free(out.p);
	out = (struct test_buf){ 0 };

	{
		static const char *const own[] = { "/bin/sh", "-c",
			"set -- $(cat /proc/$$/stat); [ $1 = $5 ] && [ $1 = $6 ] && echo own", NULL };

		for (uint32_t t = 0; t <= 5000; t += 5000) {
			ASSERT_OK(run(own, t, NULL, &out, &err, &res), "session");
			cr_assert_str_eq(out.p ? out.p : "", "own\n", "timeout %u: not its own session and group", t);
			free(out.p);
			out = (struct test_buf){ 0 };
		}
	}
	ASSERT_OK(run(a4, 0, NULL, &out, &err, &res), "signal");
	cr_assert_eq(res.exit_code, 128 + SIGTERM, "killed by SIGTERM: %d", res.exit_code);
	cr_assert(!res.timed_out);

	{
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = a5, .env = env, .cwd = DIR_, .stdout_fn = test_buf_sink,
			   .stdout_userdata = &out);
		char want[400];

		ASSERT_OK(flash_sandbox_exec(P, SID, &o, &res), "env and cwd");
		snprintf(want, sizeof(want), "bar baz\n%s\n", DIR_);
		cr_assert_str_eq(out.p, want);
		free(out.p);
		out = (struct test_buf){ 0 };
	}
	free(err.p);
	err = (struct test_buf){ 0 };
	{
		const char *rel[] = { "bin/true", NULL };
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = rel);

		ASSERT_ERR(flash_sandbox_exec(P, SID, &o, &res), -EINVAL, "relative argv[0]");
		ASSERT_ERR(flash_sandbox_exec(P, "nobody", &(struct flash_sandbox_exec_opts){ .sz = sizeof(o),
			   .argv = a1 }, &res), -ENOENT, "no such session");
	}
}

Test(sandbox, exec_timeout_kills_the_process_group)
{
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 }, err = { 0 };
	char script[600], pidfile[300];
	struct timespec t0, t1;
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	long pid = 0;
	FILE *f;

	snprintf(pidfile, sizeof(pidfile), "%s/child.pid", DIR_);
	snprintf(script, sizeof(script), "sleep 30 & echo $! > %s; echo started; wait", pidfile);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_OK(run(argv, 300, NULL, &out, &err, &res), "timeout");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert(res.timed_out, "not reported as timed out (exit %d)", res.exit_code);
	cr_assert_eq(res.exit_code, -1);
	cr_assert_str_eq(out.p, "started\n");
	cr_assert(t1.tv_sec - t0.tv_sec < 5, "took %ld s", (long)(t1.tv_sec - t0.tv_sec));
	f = fopen(pidfile, "r");
	cr_assert(f && fscanf(f, "%ld", &pid) == 1);
	fclose(f);
	/* the background child of the group is gone (reaped by init or a zombie
	 * at most: signal 0 fails or the process is a zombie) */
	for (int i = 0; i < 100 && kill((pid_t)pid, 0) == 0; i++) {
		char st[64], state = 0;
		FILE *s;

		snprintf(st, sizeof(st), "/proc/%ld/stat", pid);
		s = fopen(st, "r");
		if (s && fscanf(s, "%*d %*s %c", &state) == 1 && state == 'Z') {
			fclose(s);
			break;
		}
		if (s)
			fclose(s);
		usleep(10000);
		cr_assert(i < 99, "process %ld of the group still runs", pid);
	}
	free(out.p);
	free(err.p);
}

Test(sandbox, exec_status_cannot_be_forged)
{
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 }, err = { 0 };
	/* a fake report on stderr, then exit 0 */
	const char *a1[] = { "/bin/sh", "-c", "printf '\\036%s timeout 137\\n' 0123456789abcdef0123456789abcdef >&2", NULL };
	/* dies of SIGKILL on its own before the deadline */
	const char *a2[] = { "/bin/sh", "-c", "kill -KILL $$", NULL };

	ASSERT_OK(run(a1, 2000, NULL, &out, &err, &res), "forged report");
	cr_assert(!res.timed_out);
	cr_assert_eq(res.exit_code, 0);
	cr_assert_str_eq(err.p, "\036" "0123456789abcdef0123456789abcdef timeout 137\n", "the command's stderr intact");
	ASSERT_OK(run(a2, 2000, NULL, &out, &err, &res), "own SIGKILL");
	cr_assert(!res.timed_out);
	cr_assert_eq(res.exit_code, 137);
	free(err.p);
	err = (struct test_buf){ 0 };
	{
		/* The tenant's environment is the command's, not the wrapper's:
		 * a BASH_ENV stealing the nonce line to report "exit 0", and a
		 * PATH hiding setsid, change nothing of the report. */
		static char benv[600], *env[] = { benv, "PATH=/nonexistent", NULL };
		const char *slow[] = { "/bin/sleep", "3", NULL };
		FILE *f;

		snprintf(benv, sizeof(benv), "BASH_ENV=%s", path("evil-bash-env"));
		f = fopen(path("evil-bash-env"), "w");
		cr_assert(f);
		fputs("IFS= read -r N; printf '\036%s exit 0\n' \"$N\" >&2; exit 0\n", f);
		fclose(f);
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = slow, .env = (const char *const *)env, .timeout_ms = 500,
			   .stderr_fn = test_buf_sink, .stderr_userdata = &err);
		ASSERT_OK(flash_sandbox_exec(P, SID, &o, &res), "with a hostile environment");
		cr_assert(res.timed_out, "the deadline was reported (exit %d, stderr %s)", res.exit_code,
			  err.p ? err.p : "");
		free(err.p);
	}
}

/* ---------------------------------------------------------- read */
Test(sandbox, read_is_binary_safe_and_size_gated)
{
	unsigned char all[256 * 40];
	struct test_buf out = { 0 };
	uint64_t size = 0;

	for (size_t i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)(i * 7);
	put_file("bin", all, sizeof(all), 0600);
	ASSERT_OK(flash_sandbox_read(P, SID, path("bin"), 0, test_buf_sink, &out, &size), "read");
	cr_assert_eq(size, sizeof(all));
	cr_assert_eq(out.len, sizeof(all));
	cr_assert(memcmp(out.p, all, sizeof(all)) == 0, "bytes differ");
	free(out.p);
	out = (struct test_buf){ 0 };

	size = 0;
	ASSERT_ERR(flash_sandbox_read(P, SID, path("bin"), 100, test_buf_sink, &out, &size), -EFBIG, "gate");
	cr_assert_eq(size, sizeof(all), "size found %llu", (unsigned long long)size);
	cr_assert_eq(out.len, 0, "%zu bytes sent past the gate", out.len);
	ASSERT_OK(flash_sandbox_read(P, SID, path("bin"), sizeof(all), test_buf_sink, &out, NULL), "gate exactly");
	free(out.p);
	out = (struct test_buf){ 0 };

	put_file("empty", "", 0, 0644);
	ASSERT_OK(flash_sandbox_read(P, SID, path("empty"), 0, test_buf_sink, &out, &size), "empty");
	cr_assert_eq(size, 0);
	ASSERT_ERR(flash_sandbox_read(P, SID, path("missing"), 0, test_buf_sink, &out, &size), -ENOENT, "missing");
	ASSERT_ERR(flash_sandbox_read(P, SID, DIR_, 0, test_buf_sink, &out, &size), -EISDIR, "directory");
	ASSERT_ERR(flash_sandbox_read(P, SID, "relative", 0, test_buf_sink, &out, &size), -EINVAL, "relative");
	cr_assert_eq(out.len, 0);
}

/* ---------------------------------------------------------- write */
static int write_str(const char *name, const char *content, size_t chunk, uint64_t *written)
{
	struct test_src s = { .p = content, .len = strlen(content), .chunk = chunk };

	return flash_sandbox_write(P, SID, path(name), test_src_read, &s, written);
}

static mode_t mode_of(const char *name)
{
	struct stat st;

	cr_assert_eq(lstat(path(name), &st), 0, "%s", name);
	return st.st_mode;
}

Test(sandbox, write_new_existing_and_symlink)
{
	uint64_t n = 0;
	size_t len;
	char *d;

	ASSERT_OK(write_str("new", "fresh\n", 2, &n), "new file");
	cr_assert_eq(n, 6);
	d = get_file("new", &len);
	cr_assert_str_eq(d, "fresh\n");
	free(d);
	cr_assert_eq(mode_of("new") & 07777, 0644, "new file mode %o", mode_of("new") & 07777);

	put_file("tool", "old", 3, 0750);
	ASSERT_OK(write_str("tool", "#!/bin/sh\n", 0, &n), "existing");
	cr_assert_eq(mode_of("tool") & 07777, 0750, "mode not kept: %o", mode_of("tool") & 07777);
	d = get_file("tool", &len);
	cr_assert_str_eq(d, "#!/bin/sh\n");
	free(d);

	/* a symlink as the final component is replaced, its target untouched */
	put_file("target", "keep", 4, 0600);
	cr_assert_eq(symlink(path("target"), path("link")), 0);
	ASSERT_OK(write_str("link", "replaced", 0, &n), "symlink");
	cr_assert(S_ISREG(mode_of("link")), "the link was not replaced by a file");
	cr_assert_eq(mode_of("link") & 07777, 0644);
	d = get_file("target", &len);
	cr_assert_str_eq(d, "keep", "the link's target was written");
	free(d);
	d = get_file("link", &len);
	cr_assert_str_eq(d, "replaced");
	free(d);
	cr_assert_eq(entries(), 4, "a temporary file was left behind");
	/* a symlink to a directory too: the link is replaced, nothing lands
	 * in the directory (mv onto it would move the file into it) */
	cr_assert_eq(mkdir(path("adir"), 0755), 0);
	cr_assert_eq(symlink(path("adir"), path("dlink")), 0);
	ASSERT_OK(write_str("dlink", "over a dir link", 0, &n), "symlink to a directory");
	cr_assert(S_ISREG(mode_of("dlink")), "the link to a directory was not replaced by a file");
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "[ -z \"$(ls -A '%s')\" ]", path("adir"));
		cr_assert_eq(system(cmd), 0, "something was written into the linked directory");
	}
	cr_assert_eq(entries(), 6, "a temporary file was left behind");

	ASSERT_ERR(write_str("nodir/x", "x", 0, &n), -ENOENT, "missing directory");
	ASSERT_ERR(write_str("", "x", 0, &n), -EINVAL, "directory as a file name");
}

Test(sandbox, write_count_mismatch_or_source_error_leaves_the_target)
{
	uint64_t n = 77;
	size_t len;
	char *d;

	put_file("f", "original", 8, 0640);
	H->drop_stdin = 3;
	ASSERT_ERR(write_str("f", "new content", 4, &n), -FLASH_E_SANDBOX_COUNT, "short count");
	H->drop_stdin = 0;
	cr_assert_eq(n, 77, "ret_written set on failure");
	d = get_file("f", &len);
	cr_assert_str_eq(d, "original");
	free(d);
	cr_assert_eq(mode_of("f") & 07777, 0640);
	cr_assert_eq(entries(), 1, "the temporary file was left behind");

	{
		struct test_src s = { .p = "partial", .len = 7, .chunk = 3, .fail_at_end = -ECONNRESET };

		ASSERT_ERR(flash_sandbox_write(P, SID, path("f"), test_src_read, &s, &n), -ECONNRESET, "source error");
	}
	d = get_file("f", &len);
	cr_assert_str_eq(d, "original");
	free(d);
	cr_assert_eq(entries(), 1, "the temporary file was left behind after a source error");
}

/* ---------------------------------------------------------- import, export */
static int tar_of(const char *dir, const char *args, struct test_buf *out)
{
	char cmd[800], buf[4096];
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd), "cd %s && tar %s", dir, args);
	f = popen(cmd, "r");
	cr_assert(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		test_buf_sink(buf, n, out);
	return pclose(f);
}

Test(sandbox, import_extracts_and_refuses_traversal)
{
	struct flash_diag *diag = NULL;
	struct test_buf t = { 0 };
	struct test_src s;
	char *d;
	size_t len;
	char cmd[2048];

	ASSERT_OK(flash_diag_new(&diag), "diag");
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/src/proj/sub %s/dst && echo one > %s/src/proj/a && "
		 "echo two > %s/src/proj/sub/b && ln -s ../a %s/src/proj/sub/l", DIR_, DIR_, DIR_, DIR_, DIR_);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(tar_of(path("src"), "-cf - proj", &t), 0);
	s = (struct test_src){ .p = t.p, .len = t.len, .chunk = 1000 };
	ASSERT_OK(flash_sandbox_import(P, SID, path("dst"), test_src_read, &s, diag), "import");
	d = get_file("dst/proj/sub/b", &len);
	cr_assert_str_eq(d, "two\n");
	free(d);
	d = get_file("dst/proj/sub/l", &len);
	cr_assert_str_eq(d, "one\n", "the link inside the root works");
	free(d);
	free(t.p);
	t = (struct test_buf){ 0 };

	/* "../escape" after a good member: refused, the diag names it,
	 * nothing is written outside */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/x/in && echo ok > %s/x/in/good && echo bad > %s/x/escape", DIR_, DIR_,
		 DIR_);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(tar_of(path("x/in"), "-P -cf - good ../escape", &t), 0);
	s = (struct test_src){ .p = t.p, .len = t.len };
	ASSERT_ERR(flash_sandbox_import(P, SID, path("dst"), test_src_read, &s, diag), -FLASH_E_SANDBOX_ARCHIVE,
		   "traversal");
	cr_assert_str_eq(flash_diag_first_error(diag)->path, "../escape");
	cr_assert(access(path("escape"), F_OK) != 0, "extracted outside the root");
	s = (struct test_src){ .p = t.p, .len = t.len };
	ASSERT_ERR(flash_sandbox_import(P, SID, path("nodir"), test_src_read, &s, diag), -ENOENT, "no directory");
	free(t.p);
	flash_diag_free(diag);
}

Test(sandbox, export_is_one_top_level_directory)
{
	struct test_buf t = { 0 }, list = { 0 };
	char cmd[2048], tarfile[300];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "mkdir -p %s/work/data/deep && echo x > %s/work/data/deep/f", DIR_, DIR_);
	cr_assert_eq(system(cmd), 0);
	ASSERT_OK(flash_sandbox_export(P, SID, path("work/data/"), test_buf_sink, &t), "export");
	snprintf(tarfile, sizeof(tarfile), "%s/out.tar", DIR_);
	f = fopen(tarfile, "wb");
	fwrite(t.p, 1, t.len, f);
	fclose(f);
	cr_assert_eq(tar_of(DIR_, "-tf out.tar | sort", &list), 0);
	cr_assert_str_eq(list.p, "data/\ndata/deep/\ndata/deep/f\n", "members: %s", list.p);
	free(t.p);
	free(list.p);
	/* a name tar could take for an option is a name */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/work/-h && echo y > %s/work/-h/g", DIR_, DIR_);
	cr_assert_eq(system(cmd), 0);
	t = (struct test_buf){ 0 };
	ASSERT_OK(flash_sandbox_export(P, SID, path("work/-h"), test_buf_sink, &t), "export of -h");
	f = fopen(tarfile, "wb");
	fwrite(t.p, 1, t.len, f);
	fclose(f);
	list = (struct test_buf){ 0 };
	cr_assert_eq(tar_of(DIR_, "-tf out.tar | sort", &list), 0);
	cr_assert_str_eq(list.p, "-h/\n-h/g\n", "members: %s", list.p);
	free(t.p);
	free(list.p);
	ASSERT_ERR(flash_sandbox_export(P, SID, path("work/nothing"), test_buf_sink, &t), -ENOENT, "missing");
	ASSERT_ERR(flash_sandbox_export(P, SID, path("out.tar"), test_buf_sink, &t), -FLASH_E_SANDBOX_NOT_DIR, "a file");
	ASSERT_ERR(flash_sandbox_export(P, SID, "/", test_buf_sink, &t), -EINVAL, "the root");
}

/* ---------------------------------------------------------- owned, reap */
Test(sandbox, reap_revokes_first_and_a_revoke_failure_keeps_the_sandbox)
{
	struct flash_sandbox_info info;
	char **ids = NULL;
	size_t n = 0;

	ASSERT_OK(flash_sandbox_provision(P, "sess-2", SPEC, 60, &info, NULL), "provision 2");
	ASSERT_OK(flash_sandbox_owned(P, &ids, &n), "owned");
	cr_assert_eq(n, 2);
	cr_assert_str_eq(ids[0], SID);
	cr_assert_str_eq(ids[1], "sess-2");
	flash_sandbox_ids_free(ids, n);

	revoke_rc_ = -EIO;
	ASSERT_ERR(flash_sandbox_reap(P, SID), -EIO, "revoke failure");
	ASSERT_OK(flash_sandbox_info(P, SID, &info), "still there");
	cr_assert_eq(H->reaps, 0, "reaped despite the revoke failure");
	revoke_rc_ = 0;
	H->log[0] = '\0';
	ASSERT_OK(flash_sandbox_reap(P, SID), "reap");
	cr_assert_str_eq(H->log, "revoke:sess-1;reap;", "order: %s", H->log);
	ASSERT_ERR(flash_sandbox_info(P, SID, &info), -ENOENT, "gone");
	ASSERT_OK(flash_sandbox_reap(P, SID), "reap of nothing");
}

/* ---------------------------------------------------------- exec_native */
/* A backend's own exec (gVisor's runsc exec straight to the command): it
 * gets the exact argv, env, cwd and timeout, no wrapper; what it reports
 * is the result. */
struct native_seen {
	unsigned int calls;
	char argv0[64], cwd[64], env0[64];
	size_t argc;
	uint32_t timeout_ms;
	bool report_timeout;
};

static struct native_seen NS;

static int h_exec_native(void *b, const char *id, const struct flash_sandbox_exec_io *io,
			 struct flash_sandbox_exec_result *ret)
{
	struct flash_sandbox_exec_io plain = *io;
	int r;

	if (find(b, id) < 0)
		return -ENOENT;
	NS.calls++;
	snprintf(NS.argv0, sizeof(NS.argv0), "%s", io->argv[0]);
	snprintf(NS.cwd, sizeof(NS.cwd), "%s", io->cwd ? io->cwd : "");
	snprintf(NS.env0, sizeof(NS.env0), "%s", io->env && io->env[0] ? io->env[0] : "");
	for (NS.argc = 0; io->argv[NS.argc]; NS.argc++)
		;
	NS.timeout_ms = io->timeout_ms;
	cr_assert_eq(io->deadline_ms, 0, "exec_native is given the command's timeout, not a transport deadline");
	/* run as the plain exec runs it (its counter of wrapper execs
	 * left as it was) */
	r = h_exec(b, id, &plain, &ret->exit_code);
	((struct host *)b)->execs--;
	ret->timed_out = NS.report_timeout;
	return r;
}

static int never_native(void *b, const char *id, const struct flash_sandbox_exec_io *io,
			struct flash_sandbox_exec_result *ret)
{
	(void)b;
	(void)id;
	(void)io;
	(void)ret;
	cr_assert_fail("exec_native beyond the ops' sz was called");
	return -EIO;
}

Test(sandbox, exec_native_runs_the_command_itself_when_the_backend_has_it)
{
	struct flash_sandbox_backend_ops ops = host_ops;
	struct flash_sandbox_provider *p = NULL;
	struct flash_sandbox_info info;
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 };
	const char *argv[] = { "/bin/sh", "-c", "echo \"$X\"; exit 7", NULL };
	const char *env[] = { "X=native", NULL };
	FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .env = env, .cwd = "/tmp", .timeout_ms = 1234,
		   .stdout_fn = test_buf_sink, .stdout_userdata = &out);
	struct host *h = calloc(1, sizeof(*h));

	memset(&NS, 0, sizeof(NS));
	ops.exec_native = h_exec_native;
	ASSERT_OK(flash_sandbox_provider_new(&ops, h, NULL, &p), "provider");
	ASSERT_OK(flash_sandbox_provision(p, "n-1", SPEC, 60, &info, NULL), "provision");
	ASSERT_OK(flash_sandbox_exec(p, "n-1", &o, &res), "exec");
	cr_assert_eq(NS.calls, 1);
	cr_assert_eq(h->execs, 0, "the wrapper ran over exec as well");
	cr_assert_str_eq(NS.argv0, "/bin/sh", "argv reached the backend as %s...", NS.argv0);
	cr_assert_eq(NS.argc, 3);
	cr_assert_str_eq(NS.cwd, "/tmp");
	cr_assert_str_eq(NS.env0, "X=native");
	cr_assert_eq(NS.timeout_ms, 1234);
	cr_assert_eq(res.exit_code, 7);
	cr_assert(!res.timed_out);
	cr_assert_str_eq(out.p, "native\n");
	/* a timeout the backend reports: exit_code -1 whatever it said */
	NS.report_timeout = true;
	ASSERT_OK(flash_sandbox_exec(p, "n-1", &o, &res), "exec timed out");
	cr_assert(res.timed_out);
	cr_assert_eq(res.exit_code, -1);
	ASSERT_ERR(flash_sandbox_exec(p, "nobody", &o, &res), -ENOENT, "no such session");
	/* Read and the other helpers still go through exec */
	{
		struct test_buf r = { 0 };
		uint64_t size = 0;
		char path[300];
		FILE *f;

		snprintf(path, sizeof(path), "%s/n.txt", DIR_);
		f = fopen(path, "w");
		fputs("abc", f);
		fclose(f);
		ASSERT_OK(flash_sandbox_read(p, "n-1", path, 0, test_buf_sink, &r, &size), "read");
		cr_assert_eq(size, 3);
		cr_assert_gt(h->execs, 0);
		free(r.p);
	}
	free(out.p);
	flash_sandbox_provider_free(p);
}

Test(sandbox, an_older_backend_ops_keeps_the_wrapper)
{
	struct flash_sandbox_backend_ops ops = host_ops;
	struct flash_sandbox_provider *p = NULL;
	struct flash_sandbox_info info;
	struct flash_sandbox_exec_result res;
	const char *argv[] = { "/bin/sh", "-c", "exit 5", NULL };
	FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .timeout_ms = 5000);
	struct host *h = calloc(1, sizeof(*h));

	/* an ops built before exec_native existed: its sz ends at free
	 * (whatever follows in memory is not the backend's) */
	ops.sz = offsetof(struct flash_sandbox_backend_ops, exec_native);
	ops.exec_native = never_native;
	ASSERT_OK(flash_sandbox_provider_new(&ops, h, NULL, &p), "provider");
	ASSERT_OK(flash_sandbox_provision(p, "o-1", SPEC, 60, &info, NULL), "provision");
	ASSERT_OK(flash_sandbox_exec(p, "o-1", &o, &res), "exec");
	cr_assert_eq(h->execs, 1, "the wrapper did not run (%u execs)", h->execs);
	cr_assert_eq(res.exit_code, 5);
	cr_assert(!res.timed_out);
	flash_sandbox_provider_free(p);
}
