/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox contract suite: what every backend of <flash/sandbox.h> must
 * do, through the provider callers use.  ONE source, built once per
 * backend: -DSANDBOX_BACKEND_GVISOR (real runsc sandboxes on this node,
 * root) or -DSANDBOX_BACKEND_K8S (a Pod per session against the replaying
 * fake API server) — each defines backend_open()/backend_close() below and
 * nothing else differs.
 *
 * Cases: Provision idempotent (again: adopted) and two racing callers
 * converging on one sandbox; Exec exit codes, death by a signal, exact
 * argv, stdin, the deadline (timed out, the whole process group killed
 * inside the sandbox), a forged report not believed; Read binary-safe,
 * gated before any byte, missing file; Write new (0644), over an existing
 * file (mode kept), over a symlink (the link replaced, its target
 * untouched), a transport that loses bytes (count mismatch: target
 * untouched, no temporary left); Import extracting, and refusing a
 * traversal with a diag naming the member and nothing outside; Export's
 * one top-level directory; Owned; Reap (revoke called first, a revoke
 * failure leaves the sandbox working, gone afterwards; the backend's own
 * revoke, the session's durable gate: failing it deletes nothing, a Reap
 * stopped after it leaves a session refusing work that a second Reap
 * completes); expires_at
 * enforced (END_EXPIRED, Exec refused).
 *
 * The image: BusyBox beside the host's /bin/bash and the libraries ldd
 * names (BusyBox has no bash applet), built by the runner process
 * (PRE_ALL) under /tmp and removed after; every test's backend state and
 * cgroup parent are its own and removed even when it fails.  The
 * Kubernetes backend's Pods are the fake API server's: each Pod's file
 * system a copy of the image, its commands chroot'ed into it (root).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <flash/diag.h>
#include <flash/sandbox.h>
#include <flash/spec.h>

#include "helpers.h"
#include "sandbox-helpers.h"
#include "sandbox-image.h"

#define IMAGE "contract-test"

/* ---------------------------------------------------------- backends */
static const struct flash_sandbox_backend_ops *B_OPS;
static void *B;
static bool skip_all;
static char skip_why[256];
static char image_dir[128];

#ifdef SANDBOX_BACKEND_GVISOR
#include "sandbox-gvisor.h"

#define RUNSC "/usr/bin/runsc"
static char state_dir[128], cg_parent[64];

static struct sbx_image the_image = { .name = IMAGE, .dir = image_dir };

/* What the backend needs to run here; false with @why when it cannot. */
static bool backend_prereq(char *why, size_t size)
{
	if (access(RUNSC, X_OK) < 0 || access("/usr/bin/busybox", X_OK) < 0) {
		snprintf(why, size, "no %s or /usr/bin/busybox: no gVisor sandbox to test",
			 access(RUNSC, X_OK) < 0 ? RUNSC : "busybox");
		return false;
	}
	if (geteuid() != 0) {
		snprintf(why, size, "needs root (runsc, cgroups, network namespaces)");
		return false;
	}
	return true;
}

static void backend_open(unsigned int pool)
{
	FLASH_OPTS(op_sandbox_gvisor_opts, o, .rootfs = sbx_image_rootfs, .rootfs_ctx = &the_image,
		   .reap_interval_ms = 200);

	snprintf(state_dir, sizeof(state_dir), "/tmp/sbx-contract-%d", getpid());
	snprintf(cg_parent, sizeof(cg_parent), "/sbx-contract-%d", getpid());
	o.dir = state_dir;
	o.cgroup_parent = cg_parent;
	o.pool_size = pool;
	o.pool_image = pool ? IMAGE : NULL;
	o.pool_cpu_millis = 500;
	o.pool_memory_mib = 256;
	ASSERT_OK(op_sandbox_gvisor_new(&o, &B_OPS, &B), "gVisor backend");
}

static void backend_close(void)
{
	char cmd[2048];

	/* runsc state, bundles and cgroups are this test's own */
	snprintf(cmd, sizeof(cmd),
		 "for c in $(ls %s/sessions 2>/dev/null); do " RUNSC " --root %s/runsc delete -force $c >/dev/null 2>&1;"
		 " umount -l %s/sessions/$c/netns 2>/dev/null; done;"
		 "rm -rf %s; for d in /sys/fs/cgroup/*%s /sys/fs/cgroup%s; do [ -d $d ] && rmdir $d/* $d 2>/dev/null; done; true",
		 state_dir, state_dir, state_dir, state_dir, cg_parent, cg_parent);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", state_dir);
}

/* The backend's own view: is @cid known to runsc? */
static bool backend_object_exists(const char *cid)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), RUNSC " --root %s/runsc state %s >/dev/null 2>&1", state_dir, cid);
	return system(cmd) == 0;
}
#elif defined(SANDBOX_BACKEND_K8S)
#include "k8s-fake.h"
#include "k8s.h"
#include "render-test.h"
#include "sandbox-k8s.h"

/* The fake API server (tests/k8s-fake.c) with its Pod store; its exec
 * endpoint runs each command chroot'ed into the Pod's copy of the image
 * under an init that reaps orphans. */
#define NS "sandboxes"
static struct k8s_fake *fake;
static struct flash_schema_set *schemas;
static char pods_dir[128];

static bool backend_prereq(char *why, size_t size)
{
	if (access("/usr/bin/busybox", X_OK) < 0) {
		snprintf(why, size, "no /usr/bin/busybox: no image for the fake's Pods");
		return false;
	}
	if (geteuid() != 0) {
		snprintf(why, size, "needs root (the fake's exec chroots into each Pod's file system)");
		return false;
	}
	return true;
}

static int new_client(void *ctx, struct k8s_client **ret)
{
	struct k8s_config cfg = { .server = (char *)k8s_fake_url(fake) };
	struct k8s_client_opts co = { .sz = sizeof(co), .max_attempts = 1 };

	(void)ctx;
	return k8s_client_new(&cfg, &co, ret);
}

static void backend_open(unsigned int pool)
{
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .pod_store = true, .pod_delete_ms = 200,
				    .exec_rootfs = image_dir };
	struct op_sandbox_k8s_opts o = {
		.sz = sizeof(o), .namespace = NS, .runtime_class = "gvisor",
		.net_setup_image = "registry.test/net-setup:1", .new_client = new_client,
		.poll_ms = 20, .ready_timeout_ms = 10000, .reap_timeout_ms = 10000,
	};

	(void)pool;
	snprintf(pods_dir, sizeof(pods_dir), "/tmp/sbx-contract-k8s-%d", getpid());
	cr_assert(mkdir(pods_dir, 0700) == 0 || errno == EEXIST);
	fo.exec_root = pods_dir;
	ASSERT_OK(k8s_fake_new(&fo, &fake), "fake API server");
	schemas = render_test_schema_set(true);
	o.schemas = schemas;
	ASSERT_OK(op_sandbox_k8s_new(&o, &B_OPS, &B, NULL), "Kubernetes backend");
}

static void backend_close(void)
{
	char cmd[256];

	/* the provider freed the backend; the fake and its Pods' files */
	k8s_fake_free(fake);
	fake = NULL;
	flash_schema_set_free(schemas);
	schemas = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", pods_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", pods_dir);
}

/* The backend's own view: is Pod @cid in the API server's store? */
static bool backend_object_exists(const char *cid)
{
	return k8s_fake_pod_exists(fake, NS, cid);
}
#else
#error "build with -DSANDBOX_BACKEND_GVISOR or -DSANDBOX_BACKEND_K8S"
#endif

/* ---------------------------------------------------------- the image */

/* The image of tests/sandbox-image.h. */
static void build_image(void)
{
	snprintf(image_dir, sizeof(image_dir), "/tmp/sbx-contract-image-%d", getpid());
	if (!backend_prereq(skip_why, sizeof(skip_why))) {
		skip_all = true;
		return;
	}
	if (sbx_image_build(image_dir) < 0) {
		skip_all = true;
		snprintf(skip_why, sizeof(skip_why), "could not build the test image in %s", image_dir);
	}
}

static void remove_image(void)
{
	char cmd[256];

	if (image_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", image_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", image_dir);
	}
}


/* The runner builds the image once; the tests run in processes of their
 * own (re-executed), which learn what it made from the environment. */
ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	build_image();
	setenv("SBX_CONTRACT_IMAGE", image_dir, 1);
	if (skip_all)
		setenv("SBX_CONTRACT_SKIP", skip_why, 1);
}

static void learn_from_runner(void)
{
	const char *img = getenv("SBX_CONTRACT_IMAGE"), *why = getenv("SBX_CONTRACT_SKIP");

	if (img)
		snprintf(image_dir, sizeof(image_dir), "%s", img);
	if (why) {
		skip_all = true;
		snprintf(skip_why, sizeof(skip_why), "%s", why);
	}
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	(void)stats;
	remove_image();
}

/* ---------------------------------------------------------- the provider under test */
static struct flash_sandbox_provider *P;
static struct flash_spec *SPEC;
static char revoke_log[256];
static int revoke_rc;
static int gate_rc; /* fault: the backend's revoke fails before it marks anything */
static size_t drop_stdin; /* fault: the transport loses the last N bytes of a stdin */

static int revoke_hook(const char *sid, void *userdata)
{
	(void)userdata;
	snprintf(revoke_log + strlen(revoke_log), sizeof(revoke_log) - strlen(revoke_log), "revoke:%s;", sid);
	return revoke_rc;
}

/* A wrapper around the backend: counts reaps after revokes and can lose
 * stdin bytes, the rest is the backend's own. */
static int w_provision(void *b, const char *sid, const struct flash_spec *spec, uint32_t ttl,
		       struct flash_sandbox_info *ret, struct flash_diag *diag)
{
	return B_OPS->provision(b, sid, spec, ttl, ret, diag);
}

static int w_info(void *b, const char *sid, struct flash_sandbox_info *ret)
{
	return B_OPS->info(b, sid, ret);
}

/* @io, losing the last drop_stdin bytes of its stdin when asked to. */
static struct flash_sandbox_exec_io lossy(const struct flash_sandbox_exec_io *io)
{
	static struct test_dropper d;
	struct flash_sandbox_exec_io x = *io;

	if (drop_stdin && io->stdin_fn) {
		memset(&d, 0, sizeof(d));
		d.io = io;
		d.drop = drop_stdin;
		x.stdin_fn = test_drop_stdin;
		x.stdin_userdata = &d;
	}
	return x;
}

static int w_exec(void *b, const char *sid, const struct flash_sandbox_exec_io *io, int *code)
{
	struct flash_sandbox_exec_io x = lossy(io);

	return B_OPS->exec(b, sid, &x, code);
}

/* The backend's own exec with its deadline (gVisor), when it has one. */
static int w_exec_native(void *b, const char *sid, const struct flash_sandbox_exec_io *io,
			 struct flash_sandbox_exec_result *ret)
{
	struct flash_sandbox_exec_io x = lossy(io);

	return B_OPS->exec_native(b, sid, &x, ret);
}

static int w_owned(void *b, char ***ids, size_t *n)
{
	return B_OPS->owned(b, ids, n);
}

static int w_reap(void *b, const char *sid)
{
	snprintf(revoke_log + strlen(revoke_log), sizeof(revoke_log) - strlen(revoke_log), "reap:%s;", sid);
	return B_OPS->reap(b, sid);
}

static void w_free(void *b)
{
	B_OPS->free(b);
}

static int w_revoke(void *b, const char *sid)
{
	snprintf(revoke_log + strlen(revoke_log), sizeof(revoke_log) - strlen(revoke_log), "gate:%s;", sid);
	if (gate_rc)
		return gate_rc;
	cr_assert_not_null(B_OPS->revoke, "the backend has a gate to close");
	return B_OPS->revoke(b, sid);
}

static struct flash_sandbox_backend_ops wrap_ops = {
	.sz = sizeof(wrap_ops),
	.provision = w_provision,
	.info = w_info,
	.exec = w_exec,
	.owned = w_owned,
	.reap = w_reap,
	.free = w_free,
	.revoke = w_revoke,
};

static void open_provider(unsigned int pool)
{
	FLASH_OPTS(flash_sandbox_provider_opts, o, .revoke = revoke_hook, .read_max_bytes = 1 << 20);
	static const char spec[] =
		"{\"region\": \"heteronet-global\", \"image\": \"" IMAGE "\", \"cpu_millis\": 500, \"memory_mib\": 256}";

	learn_from_runner();
	if (skip_all)
		cr_skip_test("%s", skip_why);
	signal(SIGPIPE, SIG_IGN);
	backend_open(pool);
	/* the backend's exec_native when its ops have one (gVisor: the
	 * command run directly, the deadline enforced from outside), else
	 * the provider's wrapper (Kubernetes) */
	wrap_ops.exec_native = B_OPS->sz > offsetof(struct flash_sandbox_backend_ops, exec_native) &&
					       B_OPS->exec_native ? w_exec_native : NULL;
#ifdef SANDBOX_BACKEND_GVISOR
	cr_assert(wrap_ops.exec_native, "the gVisor backend runs Exec natively");
#else
	cr_assert(!wrap_ops.exec_native, "the Kubernetes backend keeps the wrapper");
#endif
	ASSERT_OK(flash_sandbox_provider_new(&wrap_ops, B, &o, &P), "provider");
	ASSERT_OK(flash_spec_parse(spec, sizeof(spec) - 1, NULL, &SPEC, NULL), "spec");
}

static void setup(void)
{
	open_provider(0);
}

static void teardown(void)
{
	flash_sandbox_provider_free(P);
	P = NULL;
	flash_spec_free(SPEC);
	SPEC = NULL;
	if (!skip_all)
		backend_close();
}

TestSuite(contract, .init = setup, .fini = teardown, .timeout = 120);

/* ---------------------------------------------------------- helpers */
static void provision(const char *sid, struct flash_sandbox_info *info)
{
	struct flash_diag *d = NULL;
	int r;

	ASSERT_OK(flash_diag_new(&d), "diag");
	r = flash_sandbox_provision(P, sid, SPEC, 600, info, d);
	if (r < 0 && flash_diag_first_error(d))
		cr_log_error("provision: %s", flash_diag_first_error(d)->message);
	flash_diag_free(d);
	ASSERT_OK(r, "provision");
	cr_assert_eq(info->end, FLASH_SANDBOX_LIVE);
}

/* Runs a shell line in @sid; its stdout in *out (reset first). */
static int sh(const char *sid, const char *line, struct test_buf *out, struct flash_sandbox_exec_result *res)
{
	const char *argv[] = { "/bin/sh", "-c", line, NULL };
	FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .stdout_fn = test_buf_sink, .stdout_userdata = out);

	test_buf_reset(out);
	return flash_sandbox_exec(P, sid, &o, res);
}

static void sh_ok(const char *sid, const char *line, struct test_buf *out)
{
	struct flash_sandbox_exec_result res;

	ASSERT_OK(sh(sid, line, out, &res), line);
	cr_assert_eq(res.exit_code, 0, "%s: exit %d", line, res.exit_code);
}

/* ---------------------------------------------------------- provision */
Test(contract, provision_idempotent_and_racing_callers_converge)
{
	struct test_racer a = { .p = P, .spec = SPEC, .sid = "race-1", .ttl = 600 }, b = a;
	struct flash_sandbox_info again, info;
	pthread_t ta, tb;
	char **ids = NULL;
	size_t n = 0;

	pthread_create(&ta, NULL, test_provision_race, &a);
	pthread_create(&tb, NULL, test_provision_race, &b);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	ASSERT_OK(a.r, "racer a");
	ASSERT_OK(b.r, "racer b");
	cr_assert_str_eq(a.info.backend_id, b.info.backend_id, "two sandboxes: %s and %s", a.info.backend_id,
			 b.info.backend_id);
	cr_assert(a.info.adopted != b.info.adopted, "exactly one racer adopts (a %d, b %d)", a.info.adopted,
		  b.info.adopted);
	ASSERT_OK(flash_sandbox_provision(P, "race-1", SPEC, 600, &again, NULL), "again");
	cr_assert(again.adopted);
	cr_assert_str_eq(again.backend_id, a.info.backend_id);
	cr_assert(again.expires_at > time(NULL) + 500, "expires_at %lld", (long long)again.expires_at);
	ASSERT_OK(flash_sandbox_info(P, "race-1", &info), "info");
	cr_assert_eq(info.end, FLASH_SANDBOX_LIVE);
	cr_assert_eq(info.expires_at, again.expires_at);

	ASSERT_OK(flash_sandbox_owned(P, &ids, &n), "owned");
	cr_assert_eq(n, 1, "owned %zu", n);
	cr_assert_str_eq(ids[0], "race-1");
	flash_sandbox_ids_free(ids, n);

	cr_assert(backend_object_exists(a.info.backend_id));
	ASSERT_OK(flash_sandbox_reap(P, "race-1"), "reap");
	cr_assert(!backend_object_exists(a.info.backend_id), "Reap returned before the sandbox was gone");
	ASSERT_ERR(flash_sandbox_info(P, "race-1", &info), -ENOENT, "info after reap");
	ASSERT_OK(flash_sandbox_owned(P, &ids, &n), "owned after");
	cr_assert_eq(n, 0);
	flash_sandbox_ids_free(ids, n);
	ASSERT_OK(flash_sandbox_reap(P, "race-1"), "reap of nothing");
}

/* ---------------------------------------------------------- exec */
Test(contract, exec_codes_argv_stdin_deadline_and_group_kill)
{
	struct flash_sandbox_info info;
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 }, err = { 0 };
	struct timespec t0, t1;

	provision("exec-1", &info);
	ASSERT_OK(sh("exec-1", "exit 42", &out, &res), "exit 42");
	cr_assert_eq(res.exit_code, 42);
	cr_assert(!res.timed_out);
	/* its own session and process group, with and without a deadline */
	{
		static const char *const own[] = { "/bin/sh", "-c",
			"set -- $(cat /proc/$$/stat); [ $1 = $5 ] && [ $1 = $6 ] && echo own", NULL };

		for (uint32_t t = 0; t <= 5000; t += 5000) {
			FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = own, .stdout_fn = test_buf_sink, .stdout_userdata = &out,
				   .timeout_ms = t);

			test_buf_reset(&out);
			ASSERT_OK(flash_sandbox_exec(P, "exec-1", &o, &res), "session");
			cr_assert_str_eq(out.p ? out.p : "", "own\n", "timeout %u: not its own session and group", t);
		}
	}
	ASSERT_OK(sh("exec-1", "kill -TERM $$", &out, &res), "signal");
	cr_assert_eq(res.exit_code, 128 + SIGTERM, "exit %d", res.exit_code);

	{
		const char *argv[] = { "/bin/printf", "[%s]", "a b", "", "$x;`y`", "--", NULL };
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .stdout_fn = test_buf_sink, .stdout_userdata = &out);

		test_buf_reset(&out);
		ASSERT_OK(flash_sandbox_exec(P, "exec-1", &o, &res), "argv");
		cr_assert_str_eq(out.p, "[a b][][$x;`y`][--]", "argv arrived as %s", out.p);
	}
	{
		const char *argv[] = { "/bin/cat", NULL };
		struct test_src s = { .p = "binary\0and text\n", .len = 16 };
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .stdin_fn = test_src_read, .stdin_userdata = &s,
			   .stdout_fn = test_buf_sink, .stdout_userdata = &out, .stderr_fn = test_buf_sink,
			   .stderr_userdata = &err);

		test_buf_reset(&out);
		ASSERT_OK(flash_sandbox_exec(P, "exec-1", &o, &res), "stdin");
		cr_assert_eq(out.len, 16);
		cr_assert(memcmp(out.p, "binary\0and text\n", 16) == 0);
		cr_assert_eq(err.len, 0, "stderr \"%s\" (the wrapper's report leaked)", err.p);
	}
	{
		/* the deadline: the command and its background child die */
		const char *argv[] = { "/bin/sh", "-c", "sleep 60 & echo $! > /tmp/child; echo started; wait", NULL };
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .stdout_fn = test_buf_sink, .stdout_userdata = &out,
			   .timeout_ms = 500);

		test_buf_reset(&out);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ASSERT_OK(flash_sandbox_exec(P, "exec-1", &o, &res), "deadline");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		cr_assert(res.timed_out, "not timed out (exit %d)", res.exit_code);
		cr_assert_str_eq(out.p, "started\n");
		cr_assert(t1.tv_sec - t0.tv_sec < 10, "took %ld s", (long)(t1.tv_sec - t0.tv_sec));
		/* gVisor's init reaps orphans: the child is gone, not a zombie */
		sh_ok("exec-1", "for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 $(cat /tmp/child) 2>/dev/null || "
			       "{ echo gone; exit 0; }; sleep 0.1; done; echo alive", &out);
		cr_assert_str_eq(out.p, "gone\n", "the group's background child survived the deadline");
	}
	{
		/* a forged report and a command that SIGKILLs itself */
		ASSERT_OK(sh("exec-1", "printf '\\036%s timeout 137\\n' 0123456789abcdef0123456789abcdef >&2; exit 0",
			     &out, &res), "forged");
		cr_assert(!res.timed_out);
		cr_assert_eq(res.exit_code, 0);
		ASSERT_OK(sh("exec-1", "kill -KILL $$", &out, &res), "own SIGKILL");
		cr_assert(!res.timed_out);
		cr_assert_eq(res.exit_code, 137);
	}
	test_buf_reset(&out);
	test_buf_reset(&err);
	ASSERT_OK(flash_sandbox_reap(P, "exec-1"), "reap");
}

Test(contract, exec_cwd_env_deadline_met_and_commands_that_cannot_start)
{
	struct flash_sandbox_info info;
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 }, err = { 0 };
	struct timespec t0, t1;

	provision("exec-2", &info);
	for (uint32_t t = 0; t <= 5000; t += 5000) {
		/* cwd and env, with and without a deadline */
		static const char *const argv[] = { "/bin/sh", "-c", "pwd; echo \"$FLASH_T\"", NULL };
		static const char *const env[] = { "FLASH_T=a b", NULL };
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .env = env, .cwd = "/tmp", .stdout_fn = test_buf_sink,
			   .stdout_userdata = &out, .timeout_ms = t);

		test_buf_reset(&out);
		ASSERT_OK(flash_sandbox_exec(P, "exec-2", &o, &res), "cwd");
		cr_assert_eq(res.exit_code, 0);
		cr_assert_str_eq(out.p ? out.p : "", "/tmp\na b\n", "timeout %u: %s", t, out.p);
	}
	for (uint32_t t = 0; t <= 5000; t += 5000) {
		/* what a shell would say of a command it cannot start; a
		 * command of its own exiting 128 keeps it */
		static const struct {
			const char *argv0, *cwd;
			int code;
		} c[] = {
			{ "/bin/no-such-program", NULL, 127 },
			{ "/etc/hostname-not-executable", NULL, 126 },
			{ "/bin/true", "/no/such/dir", 1 },
		};

		sh_ok("exec-2", "echo x > /etc/hostname-not-executable; chmod 644 /etc/hostname-not-executable", &out);
		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			const char *argv[] = { c[i].argv0, NULL };
			FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .cwd = c[i].cwd, .stderr_fn = test_buf_sink,
				   .stderr_userdata = &err, .timeout_ms = t);

			test_buf_reset(&err);
			ASSERT_OK(flash_sandbox_exec(P, "exec-2", &o, &res), c[i].argv0);
			cr_assert_eq(res.exit_code, c[i].code, "%s (cwd %s, timeout %u): exit %d, stderr %s", c[i].argv0,
				     c[i].cwd ? c[i].cwd : "-", t, res.exit_code, err.p ? err.p : "");
			cr_assert(!res.timed_out);
		}
		{
			static const char *const argv[] = { "/bin/sh", "-c", "exit 128", NULL };
			FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .timeout_ms = t);

			ASSERT_OK(flash_sandbox_exec(P, "exec-2", &o, &res), "exit 128");
			cr_assert_eq(res.exit_code, 128, "exit 128 came back as %d", res.exit_code);
		}
	}
	{
		/* a deadline not reached: the command's own status at once,
		 * a self-SIGKILL included */
		static const char *const argv[] = { "/bin/sh", "-c", "exit 3", NULL };
		static const char *const self[] = { "/bin/sh", "-c", "kill -KILL $$", NULL };
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .timeout_ms = 20000);

		clock_gettime(CLOCK_MONOTONIC, &t0);
		ASSERT_OK(flash_sandbox_exec(P, "exec-2", &o, &res), "before the deadline");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		cr_assert_eq(res.exit_code, 3);
		cr_assert(!res.timed_out);
		cr_assert(t1.tv_sec - t0.tv_sec < 10, "waited for the deadline: %ld s", (long)(t1.tv_sec - t0.tv_sec));
		o.argv = self;
		ASSERT_OK(flash_sandbox_exec(P, "exec-2", &o, &res), "self SIGKILL with a deadline");
		cr_assert(!res.timed_out);
		cr_assert_eq(res.exit_code, 137);
	}
	{
		/* the deadline over a command whose leader has already
		 * exited, a child of its group holding stdout: the group
		 * still dies at the deadline, and the leader's own status
		 * is the answer */
		static const char *const argv[] = { "/bin/sh", "-c",
			"sleep 60 & echo $! > /tmp/child2; echo started", NULL };
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .stdout_fn = test_buf_sink, .stdout_userdata = &out,
			   .timeout_ms = 700);

		test_buf_reset(&out);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ASSERT_OK(flash_sandbox_exec(P, "exec-2", &o, &res), "leader gone, child holding stdout");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		cr_assert_str_eq(out.p ? out.p : "", "started\n");
		cr_assert(t1.tv_sec - t0.tv_sec < 4, "took %ld s (the transport's grace?)", (long)(t1.tv_sec - t0.tv_sec));
		cr_assert(!res.timed_out && res.exit_code == 0, "the leader exited 0 by itself: timed out %d, exit %d",
			  res.timed_out, res.exit_code);
		sh_ok("exec-2", "for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 $(cat /tmp/child2) 2>/dev/null || "
			       "{ echo gone; exit 0; }; sleep 0.1; done; echo alive", &out);
		cr_assert_str_eq(out.p, "gone\n", "the group's child outlived the deadline");
	}
	test_buf_reset(&out);
	test_buf_reset(&err);
	ASSERT_OK(flash_sandbox_reap(P, "exec-2"), "reap");
}

/* ---------------------------------------------------------- files */
Test(contract, read_write_import_export)
{
	struct flash_sandbox_info info;
	struct test_buf out = { 0 };
	unsigned char bin[5000];
	uint64_t size = 0, n = 0;
	struct test_src s;

	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)(i * 13 + 1);
	bin[7] = 0;
	provision("files-1", &info);

	/* write: a new file (0644), read back byte for byte */
	s = (struct test_src){ .p = (const char *)bin, .len = sizeof(bin) };
	ASSERT_OK(flash_sandbox_write(P, "files-1", "/root/bin.dat", test_src_read, &s, &n), "write new");
	cr_assert_eq(n, sizeof(bin));
	sh_ok("files-1", "stat -c %a /root/bin.dat", &out);
	cr_assert_str_eq(out.p, "644\n");
	test_buf_reset(&out);
	ASSERT_OK(flash_sandbox_read(P, "files-1", "/root/bin.dat", 0, test_buf_sink, &out, &size), "read");
	cr_assert_eq(size, sizeof(bin));
	cr_assert_eq(out.len, sizeof(bin));
	cr_assert(memcmp(out.p, bin, sizeof(bin)) == 0, "read back differs");
	test_buf_reset(&out);
	ASSERT_ERR(flash_sandbox_read(P, "files-1", "/root/bin.dat", 100, test_buf_sink, &out, &size), -EFBIG, "gate");
	cr_assert_eq(out.len, 0, "bytes sent past the gate");
	cr_assert_eq(size, sizeof(bin));
	ASSERT_ERR(flash_sandbox_read(P, "files-1", "/root/none", 0, test_buf_sink, &out, &size), -ENOENT, "missing");

	/* the mode of an existing file is kept */
	sh_ok("files-1", "echo old > /root/tool && chmod 750 /root/tool", &out);
	s = (struct test_src){ .p = "#!/bin/sh\n", .len = 10 };
	ASSERT_OK(flash_sandbox_write(P, "files-1", "/root/tool", test_src_read, &s, &n), "write existing");
	sh_ok("files-1", "stat -c %a /root/tool; cat /root/tool", &out);
	cr_assert_str_eq(out.p, "750\n#!/bin/sh\n");

	/* a symlink is replaced, its target untouched */
	sh_ok("files-1", "echo keep > /root/target && ln -s /root/target /root/link", &out);
	s = (struct test_src){ .p = "new", .len = 3 };
	ASSERT_OK(flash_sandbox_write(P, "files-1", "/root/link", test_src_read, &s, &n), "write symlink");
	sh_ok("files-1", "[ -L /root/link ] && echo link; cat /root/target; cat /root/link; echo", &out);
	cr_assert_str_eq(out.p, "keep\nnew\n");

	/* bytes lost on the way: refused, the target and its directory as before */
	sh_ok("files-1", "echo original > /root/f; ls -A /root | wc -l", &out);
	{
		char before[32];

		snprintf(before, sizeof(before), "%s", out.p);
		drop_stdin = 2;
		s = (struct test_src){ .p = "longer content", .len = 14 };
		ASSERT_ERR(flash_sandbox_write(P, "files-1", "/root/f", test_src_read, &s, &n), -FLASH_E_SANDBOX_COUNT,
			   "count mismatch");
		drop_stdin = 0;
		sh_ok("files-1", "cat /root/f; ls -A /root | wc -l", &out);
		{
			char want[64];

			snprintf(want, sizeof(want), "original\n%s", before);
			cr_assert_str_eq(out.p, want, "after a count mismatch: %s", out.p);
		}
	}

	/* export: one top-level directory named after the root */
	sh_ok("files-1", "mkdir -p /root/proj/sub && echo a > /root/proj/sub/a && echo b > /root/proj/b", &out);
	test_buf_reset(&out);
	ASSERT_OK(flash_sandbox_export(P, "files-1", "/root/proj", test_buf_sink, &out), "export");
	{
		struct flash_diag *d = NULL;
		struct test_src t = { .p = out.p, .len = out.len };
		struct test_buf list = { 0 };
		char *copy = malloc(out.len);

		memcpy(copy, out.p, out.len);
		t.p = copy;
		/* import it elsewhere, then list */
		ASSERT_OK(flash_diag_new(&d), "diag");
		sh_ok("files-1", "mkdir -p /tmp/in", &list);
		ASSERT_OK(flash_sandbox_import(P, "files-1", "/tmp/in", test_src_read, &t, d), "import");
		sh_ok("files-1", "cd /tmp/in && find . | sort; cat proj/sub/a", &list);
		cr_assert_str_eq(list.p, ".\n./proj\n./proj/b\n./proj/sub\n./proj/sub/a\na\n", "layout: %s", list.p);
		test_buf_reset(&list);
		free(copy);

		/* a traversal: refused, named, nothing outside */
		{
			/* hand-made ustar: "../escape" with 3 bytes */
			unsigned char tar[512 * 4] = { 0 };
			unsigned int sum = 0;

			memcpy(tar, "../escape", 9);
			memcpy(tar + 100, "0000644", 7);
			memcpy(tar + 108, "0000000", 7);
			memcpy(tar + 116, "0000000", 7);
			memcpy(tar + 124, "00000000003", 11);
			memcpy(tar + 136, "00000000000", 11);
			tar[156] = '0';
			memcpy(tar + 257, "ustar\0" "00", 8);
			memset(tar + 148, ' ', 8);
			for (int i = 0; i < 512; i++)
				sum += tar[i];
			snprintf((char *)tar + 148, 8, "%06o", sum);
			memcpy(tar + 512, "bad", 3);
			t = (struct test_src){ .p = (const char *)tar, .len = sizeof(tar) };
			ASSERT_ERR(flash_sandbox_import(P, "files-1", "/tmp/in", test_src_read, &t, d), -FLASH_E_SANDBOX_ARCHIVE,
				   "traversal");
			cr_assert_str_eq(flash_diag_first_error(d)->path, "../escape");
			sh_ok("files-1", "[ -e /tmp/escape ] && echo escaped; true", &list);
			cr_assert_eq(list.len, 0, "extracted outside: %s", list.p);
		}
		flash_diag_free(d);
		test_buf_reset(&list);
	}
	test_buf_reset(&out);
	ASSERT_OK(flash_sandbox_reap(P, "files-1"), "reap");
}

/* ---------------------------------------------------------- reap, expiry */
Test(contract, reap_revokes_first_and_expiry_ends_sessions)
{
	struct flash_sandbox_info info, e;
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 };
	int i;

	provision("reap-1", &info);
	revoke_rc = -EIO;
	revoke_log[0] = '\0';
	ASSERT_ERR(flash_sandbox_reap(P, "reap-1"), -EIO, "revoke failure");
	cr_assert_str_eq(revoke_log, "revoke:reap-1;", "the backend was asked to reap: %s", revoke_log);
	sh_ok("reap-1", "echo still", &out);
	cr_assert_str_eq(out.p, "still\n");
	revoke_rc = 0;
	revoke_log[0] = '\0';
	ASSERT_OK(flash_sandbox_reap(P, "reap-1"), "reap");
	cr_assert_str_eq(revoke_log, "revoke:reap-1;gate:reap-1;reap:reap-1;", "order: %s", revoke_log);
	cr_assert(!backend_object_exists(info.backend_id));
	ASSERT_ERR(sh("reap-1", "true", &out, &res), -ENOENT, "exec after reap");

	/* a 1 s session ends by itself */
	ASSERT_OK(flash_sandbox_provision(P, "short-1", SPEC, 1, &info, NULL), "provision short");
	for (i = 0; i < 100; i++) {
		ASSERT_OK(flash_sandbox_info(P, "short-1", &e), "info");
		if (e.end != FLASH_SANDBOX_LIVE)
			break;
		usleep(100000);
	}
	cr_assert_eq(e.end, FLASH_SANDBOX_END_EXPIRED, "end %s after %d polls", flash_sandbox_end_name(e.end), i);
	cr_assert_eq(e.expires_at, info.expires_at);
	/* reaped in the background */
	for (i = 0; i < 100 && backend_object_exists(info.backend_id); i++)
		usleep(100000);
	cr_assert(!backend_object_exists(info.backend_id), "the expired sandbox is still there");
	ASSERT_ERR(sh("short-1", "true", &out, &res), -FLASH_E_SANDBOX_ENDED, "exec after expiry");
	ASSERT_OK(flash_sandbox_reap(P, "short-1"), "reap expired");
	ASSERT_ERR(flash_sandbox_info(P, "short-1", &e), -ENOENT, "forgotten after reap");
	test_buf_reset(&out);
}

/* The session's gate (the backend's durable revoke): a revoke that fails
 * deletes nothing and leaves the session working; a Reap stopped between
 * the revoke and the delete (a crash, simulated by calling the backend's
 * revoke alone) leaves a session that refuses Exec, Read and Provision,
 * says "reaping", still owns its sandbox, and whose next Reap completes. */
Test(contract, a_reap_stopped_after_its_revoke_refuses_work_and_a_second_reap_completes)
{
	struct flash_sandbox_info info, e;
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 };
	char **ids = NULL;
	size_t n = 0;
	bool owned = false;

	provision("gate-1", &info);
	gate_rc = -EIO;
	revoke_log[0] = '\0';
	ASSERT_ERR(flash_sandbox_reap(P, "gate-1"), -EIO, "the backend's revoke failed");
	gate_rc = 0;
	cr_assert_str_eq(revoke_log, "revoke:gate-1;gate:gate-1;", "no delete after a failed revoke: %s", revoke_log);
	cr_assert(backend_object_exists(info.backend_id), "a failed revoke deleted the sandbox");
	sh_ok("gate-1", "echo still", &out);
	cr_assert_str_eq(out.p, "still\n");

	/* the crash: revoked, nothing deleted */
	ASSERT_OK(B_OPS->revoke(B, "gate-1"), "the backend's revoke alone");
	ASSERT_OK(flash_sandbox_info(P, "gate-1", &e), "info of a revoked session");
	cr_assert_eq(e.end, FLASH_SANDBOX_END_REAPED, "end %s", flash_sandbox_end_name(e.end));
	cr_assert_str_eq(e.end_reason, "reaping");
	cr_assert_eq(e.expires_at, info.expires_at, "expires_at still told");
	ASSERT_ERR(sh("gate-1", "echo no", &out, &res), -FLASH_E_SANDBOX_ENDED, "exec after the revoke");
	ASSERT_ERR(flash_sandbox_read(P, "gate-1", "/bin/sh", 0, test_buf_sink, &out, NULL), -FLASH_E_SANDBOX_ENDED,
		   "read after the revoke");
	ASSERT_ERR(flash_sandbox_provision(P, "gate-1", SPEC, 600, &e, NULL), -FLASH_E_SANDBOX_ENDED,
		   "provision of a revoked session (no adopting it)");
	cr_assert(backend_object_exists(info.backend_id), "the revoke alone deleted the sandbox");
	ASSERT_OK(flash_sandbox_owned(P, &ids, &n), "owned");
	for (size_t i = 0; i < n; i++)
		owned = owned || strcmp(ids[i], "gate-1") == 0;
	flash_sandbox_ids_free(ids, n);
	cr_assert(owned, "a revoked session still owns its sandbox (Owned lists it for the Reap to finish)");
	ASSERT_OK(B_OPS->revoke(B, "gate-1"), "a second revoke is harmless");

	/* the second Reap completes */
	revoke_log[0] = '\0';
	ASSERT_OK(flash_sandbox_reap(P, "gate-1"), "the second reap");
	cr_assert_str_eq(revoke_log, "revoke:gate-1;gate:gate-1;reap:gate-1;", "order: %s", revoke_log);
	cr_assert(!backend_object_exists(info.backend_id), "the sandbox is still there");
	ASSERT_ERR(flash_sandbox_info(P, "gate-1", &e), -ENOENT, "forgotten after the reap");
	ASSERT_OK(B_OPS->revoke(B, "gate-1"), "revoking a session owning nothing");
	test_buf_reset(&out);
}

/* ---------------------------------------------------------- a dead sandbox */
#ifndef SANDBOX_BACKEND_K8S
/* Not over the Kubernetes backend here: the fake API server runs the Pod's
 * commands on this host without the memory limit a runtime (gVisor's
 * RuntimeClass) enforces, so nothing dies of its memory. */
Test(contract, a_sandbox_over_its_memory_ends_failed)
{
	struct flash_sandbox_info info, e;
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 };
	int i, r;

	provision("oom-1", &info);
	/* 256 MiB of memory: 400 MiB written to a memory-backed file */
	r = sh("oom-1", "dd if=/dev/zero of=/tmp/big bs=1M count=400 2>/dev/null; echo survived", &out, &res);
	cr_assert(r < 0 || !out.p || strcmp(out.p, "survived\n") != 0, "400 MiB fit in 256 MiB");
	for (i = 0; i < 50; i++) {
		ASSERT_OK(flash_sandbox_info(P, "oom-1", &e), "info");
		if (e.end != FLASH_SANDBOX_LIVE)
			break;
		usleep(100000);
	}
	cr_assert_eq(e.end, FLASH_SANDBOX_END_FAILED, "end %s", flash_sandbox_end_name(e.end));
	cr_log_info("dead sandbox: %s", e.end_reason);
	cr_assert(e.end_reason[0], "no reason");
	r = sh("oom-1", "true", &out, &res);
	cr_assert(r == -FLASH_E_SANDBOX_ENDED, "exec on a dead sandbox: %d (%s)", r, flash_strerror(r));
	ASSERT_OK(flash_sandbox_reap(P, "oom-1"), "reap");
	cr_assert(!backend_object_exists(info.backend_id));
	test_buf_reset(&out);
}
#endif

#ifdef SANDBOX_BACKEND_GVISOR
/* ---------------------------------------------------------- the warm pool (gVisor) */
Test(pool, warm_pool_claims_and_refills, .fini = teardown, .timeout = 120)
{
	struct flash_sandbox_info info;
	struct test_buf out = { 0 };
	int i;

	open_provider(1);
	for (i = 0; i < 200 && op_sandbox_gvisor_pool_idle(B) < 1; i++)
		usleep(50000);
	cr_assert_eq(op_sandbox_gvisor_pool_idle(B), 1, "the pool did not fill");
	provision("warm-1", &info);
	cr_assert(info.from_pool, "not claimed from the pool");
	sh_ok("warm-1", "echo ready; hostname >/dev/null", &out);
	cr_assert_str_eq(out.p, "ready\n");
	for (i = 0; i < 200 && op_sandbox_gvisor_pool_idle(B) < 1; i++)
		usleep(50000);
	cr_assert_eq(op_sandbox_gvisor_pool_idle(B), 1, "the pool was not refilled");
	{
		char **ids = NULL;
		size_t n = 0;

		ASSERT_OK(flash_sandbox_owned(P, &ids, &n), "owned");
		cr_assert_eq(n, 1, "idle pool sandboxes are owned by no session (%zu)", n);
		flash_sandbox_ids_free(ids, n);
	}
	ASSERT_OK(flash_sandbox_reap(P, "warm-1"), "reap");
	cr_assert(!backend_object_exists(info.backend_id), "a claimed sandbox outlived its Reap");
	test_buf_reset(&out);
}
#endif
