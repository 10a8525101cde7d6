/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Kubernetes backend of sandbox sessions (operator/sandbox-k8s.c)
 * under the provider of <flash/sandbox.h>, against the fake API server
 * (tests/k8s-fake.c) with its Pod store and its exec endpoint, which runs
 * the provider's in-sandbox scripts for real on this host (/bin/bash,
 * setsid, tee, wc, cat, stat, chmod, mv, rm, tar): the operations of the
 * contract (provision and its idempotence and race, exec with exit codes,
 * env, stdin and the deadline, read, write, import, export, owned, reap
 * waiting for the Pods to be gone, expiry) go through pods/exec and the
 * Pod API as on a cluster.  Also: the Pod rendered (RuntimeClass,
 * NodeSelector, Tolerations, ImagePullSecrets, the net-setup init
 * container of a limited sandbox, the ownership label) and valid against
 * the recorded OpenAPI schema, and malformed options refused.  Reap's
 * revoke first (the session's gate: an annotation merge-patched on its
 * Pods before any DELETE): a refused PATCH deletes nothing, and a Reap
 * stopped after it leaves a session that refuses work (also through a
 * second backend: another replica, a restarted operator) until a second
 * Reap completes it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <flash/diag.h>
#include <flash/render.h>
#include <flash/sandbox.h>
#include <flash/spec.h>

#include "diag.h"
#include "helpers.h"
#include "json.h"
#include "k8s-fake.h"
#include "k8s.h"
#include "render-test.h"
#include "sandbox-helpers.h"
#include "sandbox-k8s.h"
#include "util.h"

#define NS "sandboxes"

static struct k8s_fake *F;
static struct flash_schema_set *SCHEMAS;
static struct flash_sandbox_provider *P;
static const struct flash_sandbox_backend_ops *OPS; /* P's backend, for a revoke alone */
static void *BACKEND;
static struct flash_spec *SPEC;
static char DIR_[128];

static int new_client(void *ctx, struct k8s_client **ret)
{
	struct k8s_config cfg = { .server = (char *)k8s_fake_url(F) };
	struct k8s_client_opts co = { .sz = sizeof(co), .max_attempts = 1 };

	(void)ctx;
	return k8s_client_new(&cfg, &co, ret);
}

static void base_opts(struct op_sandbox_k8s_opts *o)
{
	*o = (struct op_sandbox_k8s_opts){
		.sz = sizeof(*o), .namespace = NS, .runtime_class = "gvisor",
		.node_selector = "flash.heterocloud.io/sandbox=true,kubernetes.io/arch=amd64",
		.tolerations = "sandbox=true:NoSchedule,gpu:NoExecute", .image_pull_secrets = "regcred",
		.net_setup_image = "registry.test/net-setup:1", .schemas = SCHEMAS, .new_client = new_client,
		.poll_ms = 20, .ready_timeout_ms = 5000, .reap_timeout_ms = 5000,
	};
}

static void setup(void)
{
	static const char spec[] = "{\"region\": \"heteronet-global\", \"image\": \"busybox\", \"cpu_millis\": 100, "
				   "\"memory_mib\": 64, \"egress\": {\"mode\": \"internet\"}}";
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .pod_store = true, .pod_delete_ms = 300 };
	struct op_sandbox_k8s_opts o;
	const struct flash_sandbox_backend_ops *ops = NULL;
	void *backend = NULL;
	char root[160];

	signal(SIGPIPE, SIG_IGN);
	snprintf(DIR_, sizeof(DIR_), "/tmp/test-sandbox-k8s-XXXXXX");
	cr_assert(mkdtemp(DIR_));
	snprintf(root, sizeof(root), "%s/pods", DIR_);
	fo.exec_root = root;
	ASSERT_OK(k8s_fake_new(&fo, &F), "fake API server");
	SCHEMAS = render_test_schema_set(true);
	base_opts(&o);
	ASSERT_OK(op_sandbox_k8s_new(&o, &ops, &backend, NULL), "backend");
	OPS = ops;
	BACKEND = backend;
	ASSERT_OK(flash_sandbox_provider_new(ops, backend, NULL, &P), "provider");
	ASSERT_OK(flash_spec_parse(spec, sizeof(spec) - 1, NULL, &SPEC, NULL), "spec");
}

static void teardown(void)
{
	char cmd[300];

	flash_sandbox_provider_free(P);
	flash_spec_free(SPEC);
	k8s_fake_free(F);
	flash_schema_set_free(SCHEMAS);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", DIR_);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(sandbox_k8s, .init = setup, .fini = teardown);

static char *path(const char *name)
{
	static char buf[4][300];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", DIR_, name);
	return buf[i];
}

/* ---------------------------------------------------------------- the Pod */

Test(sandbox_k8s, the_pod_rendered_and_schema_valid)
{
	static const char spec[] = "{\"region\": \"heteronet-global\", \"image\": \"busybox:1.36\", \"cpu_millis\": 250, "
				   "\"memory_mib\": 128, \"env\": {\"LANG\": \"C.UTF-8\"}, \"egress\": "
				   "{\"mode\": \"restricted\", \"allowed_destination_cidrs\": [\"1.1.1.0/24\"]}}";
	const struct flash_sandbox_backend_ops *ops = NULL;
	struct flash_spec *sp = NULL;
	struct op_sandbox_k8s_opts o;
	struct flash_diag *d = NULL;
	struct json_value *v = NULL;
	void *backend = NULL;
	char *text = NULL;
	size_t len = 0;

	base_opts(&o);
	ASSERT_OK(op_sandbox_k8s_new(&o, &ops, &backend, NULL), "backend");
	ASSERT_OK(flash_spec_parse(spec, sizeof(spec) - 1, NULL, &sp, NULL), "spec");
	ASSERT_OK(op_sandbox_k8s_pod(backend, "sess-r", sp, 60, 1796205600, &text, &len), "pod");
	ASSERT_OK(flash_diag_new(&d), "diag");
	{
		int r = flash_schema_validate_object(SCHEMAS, text, len, d);

		cr_assert_eq(r, 0, "the Pod is valid against core/v1's schema: %s",
			     flash_diag_count(d) ? flash_diag_get(d, 0)->message : "");
	}
	ASSERT_OK(json_parse(text, len, NULL, &v, NULL), "JSON");
	ASSERT_STREQ(json_string_value(json_at(v, "metadata.name")), "sbx-sess-r", "name");
	ASSERT_STREQ(json_string_value(json_get(json_at(v, "metadata.labels"), FLASH_SANDBOX_LABEL)), "sess-r",
		     "ownership label");
	ASSERT_STREQ(json_string_value(json_get(json_at(v, "metadata.annotations"),
						"flash.heterocloud.io/sandbox-expires-at")),
		     "1796205660", "expires_at");
	ASSERT_STREQ(json_string_value(json_at(v, "spec.runtimeClassName")), "gvisor", "RuntimeClass");
	ASSERT_STREQ(json_string_value(json_get(json_at(v, "spec.nodeSelector"), "kubernetes.io/arch")), "amd64",
		     "NodeSelector");
	{
		const struct json_value *t = json_at(v, "spec.tolerations");

		cr_assert_eq(t->u.array.n, 2, "two tolerations");
		ASSERT_STREQ(json_string_value(json_get(t->u.array.items[0], "operator")), "Equal", "with a value");
		ASSERT_STREQ(json_string_value(json_get(t->u.array.items[0], "effect")), "NoSchedule", "effect");
		ASSERT_STREQ(json_string_value(json_get(t->u.array.items[1], "operator")), "Exists", "without");
	}
	ASSERT_STREQ(json_string_value(json_get(json_at(v, "spec.imagePullSecrets")->u.array.items[0], "name")),
		     "regcred", "ImagePullSecrets");
	{
		const struct json_value *ic = json_at(v, "spec.initContainers")->u.array.items[0];
		const struct json_value *cmd = json_get(ic, "command");

		ASSERT_STREQ(json_string_value(json_get(ic, "image")), "registry.test/net-setup:1", "NetSetupImage");
		ASSERT_STREQ(json_string_value(cmd->u.array.items[cmd->u.array.n - 1]), "1.1.1.0/24",
			     "the allowed destination kept");
		cr_assert_not_null(strstr(json_string_value(cmd->u.array.items[2]), "route flush"), "routes flushed");
	}
	ASSERT_STREQ(json_string_value(json_get(json_at(v, "spec.containers")->u.array.items[0], "image")),
		     "busybox:1.36", "the spec's image");
	ASSERT_STREQ(json_at(v, "spec.activeDeadlineSeconds")->u.number.text, "60",
		     "the kubelet ends the Pod at its expiry by itself");
	{
		const struct json_value *sc = json_get(json_at(v, "spec.containers")->u.array.items[0], "securityContext");
		const struct json_value *add = json_at(sc, "capabilities.add");

		cr_assert(json_is(json_get(sc, "allowPrivilegeEscalation"), JSON_BOOL) &&
				  !json_get(sc, "allowPrivilegeEscalation")->u.boolean,
			  "no setuid escalation");
		ASSERT_STREQ(json_string_value(json_at(sc, "capabilities.drop")->u.array.items[0]), "ALL", "drop ALL");
		for (size_t i = 0; i < add->u.array.n; i++)
			cr_assert(strcmp(json_string_value(add->u.array.items[i]), "NET_RAW") &&
					  strcmp(json_string_value(add->u.array.items[i]), "NET_ADMIN"),
				  "no raw sockets, no network administration in the tenant's container");
	}
	json_free(v);
	free(text);
	/* An internet sandbox has no init container. */
	ASSERT_OK(op_sandbox_k8s_pod(backend, "sess-i", SPEC, 60, 1796205600, &text, &len), "pod");
	ASSERT_OK(json_parse(text, len, NULL, &v, NULL), "JSON");
	cr_assert_null(json_at(v, "spec.initContainers"), "no net-setup for egress internet");
	json_free(v);
	free(text);
	flash_diag_free(d);
	flash_spec_free(sp);
	ops->free(backend);
}

Test(sandbox_k8s, malformed_options_refused)
{
	static const struct {
		const char *field, *value, *path;
	} bad[] = {
		{ "node_selector", "no-equals", "nodeSelector" },
		{ "node_selector", "a=b,", "nodeSelector" },
		{ "node_selector", "Bad Key=v", "nodeSelector" },
		{ "tolerations", "key:Sometimes", "tolerations" },
		{ "tolerations", "=v", "tolerations" },
		{ "image_pull_secrets", "Not_A_Name", "imagePullSecrets" },
		{ "runtime_class", "UPPER", "runtimeClass" },
		{ "net_setup_image", "has space", "netSetupImage" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const struct flash_sandbox_backend_ops *ops = NULL;
		struct op_sandbox_k8s_opts o;
		struct diag *d = NULL;
		void *backend = NULL;

		base_opts(&o);
		if (!strcmp(bad[i].field, "node_selector"))
			o.node_selector = bad[i].value;
		else if (!strcmp(bad[i].field, "tolerations"))
			o.tolerations = bad[i].value;
		else if (!strcmp(bad[i].field, "image_pull_secrets"))
			o.image_pull_secrets = bad[i].value;
		else if (!strcmp(bad[i].field, "runtime_class"))
			o.runtime_class = bad[i].value;
		else
			o.net_setup_image = bad[i].value;
		ASSERT_OK(diag_new(&d), "diag");
		cr_assert_eq(op_sandbox_k8s_new(&o, &ops, &backend, d), -EINVAL, "%s \"%s\" refused", bad[i].field,
			     bad[i].value);
		cr_assert_eq(diag_errors(d), 1, "one problem named");
		ASSERT_STREQ(diag_get(d, 0)->path, bad[i].path, "the option named");
		diag_free(d);
	}
}

/* ---------------------------------------------------------------- provision */

Test(sandbox_k8s, provision_is_idempotent_and_a_race_converges)
{
	struct flash_sandbox_info a, b;
	struct test_racer r1 = { .p = P, .spec = SPEC, .sid = "sess-race", .ttl = 60 }, r2 = r1;
	pthread_t t1, t2;
	time_t now = time(NULL);

	ASSERT_OK(flash_sandbox_provision(P, "sess-1", SPEC, 60, &a, NULL), "provision");
	cr_assert(!a.adopted, "made");
	ASSERT_STREQ(a.backend_id, "sbx-sess-1", "the Pod's name, informative");
	cr_assert(a.expires_at >= now + 59 && a.expires_at <= now + 62, "expires_at from the ttl");
	ASSERT_OK(flash_sandbox_provision(P, "sess-1", SPEC, 60, &b, NULL), "again");
	cr_assert(b.adopted, "adopted the first");
	cr_assert_eq(k8s_fake_pod_count(F), 1, "one Pod");
	cr_assert_eq(pthread_create(&t1, NULL, test_provision_race, &r1), 0);
	cr_assert_eq(pthread_create(&t2, NULL, test_provision_race, &r2), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	ASSERT_OK(r1.r, "racer 1");
	ASSERT_OK(r2.r, "racer 2");
	cr_assert_eq(k8s_fake_pod_count(F), 2, "the racers converged on one Pod");
	cr_assert(r1.info.adopted || r2.info.adopted, "the loser adopted the winner's");
	ASSERT_STREQ(r1.info.backend_id, r2.info.backend_id, "the same Pod");
	ASSERT_OK(flash_sandbox_info(P, "sess-race", &a), "info");
	cr_assert_eq(a.end, FLASH_SANDBOX_LIVE, "live");
	ASSERT_ERR(flash_sandbox_info(P, "nobody", &a), -ENOENT, "no such session");
}

/* ---------------------------------------------------------------- exec */

static int run(const char *const *argv, const char *const *env, uint32_t timeout_ms, const char *in,
	       struct test_buf *out, struct test_buf *err, struct flash_sandbox_exec_result *res)
{
	struct test_src s = { in, in ? strlen(in) : 0, 0 };
	FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = argv, .env = env, .timeout_ms = timeout_ms,
		   .stdout_fn = test_buf_sink, .stdout_userdata = out, .stderr_fn = test_buf_sink,
		   .stderr_userdata = err);

	if (in) {
		o.stdin_fn = test_src_read;
		o.stdin_userdata = &s;
	}
	return flash_sandbox_exec(P, "sess-x", &o, res);
}

Test(sandbox_k8s, exec_exit_codes_env_stdin_and_deadline)
{
	struct flash_sandbox_info info;
	struct flash_sandbox_exec_result res;
	struct test_buf out = { 0 }, err = { 0 };
	const char *a1[] = { "/bin/sh", "-c", "echo to-err >&2; exit 3", NULL };
	const char *a2[] = { "/usr/bin/printf", "[%s]", "a b", "", "c'd\"e", "$HOME", NULL };
	const char *a3[] = { "/bin/cat", NULL };
	const char *a4[] = { "/bin/sh", "-c", "echo \"$FOO\"", NULL };
	const char *a5[] = { "/bin/sh", "-c", "echo started; sleep 30", NULL };
	const char *env[] = { "FOO=bar baz", NULL };
	int64_t t0;

	ASSERT_OK(flash_sandbox_provision(P, "sess-x", SPEC, 60, &info, NULL), "provision");
	ASSERT_OK(run(a1, NULL, 0, NULL, &out, &err, &res), "exit 3");
	cr_assert_eq(res.exit_code, 3);
	cr_assert(!res.timed_out);
	cr_assert_str_eq(err.p, "to-err\n", "stderr \"%s\"", err.p);
	free(err.p);
	err = (struct test_buf){ 0 };
	ASSERT_OK(run(a2, NULL, 0, NULL, &out, &err, &res), "argv");
	cr_assert_str_eq(out.p, "[a b][][c'd\"e][$HOME]", "the exact argv: %s", out.p);
	free(out.p);
	out = (struct test_buf){ 0 };
	ASSERT_OK(run(a3, NULL, 0, "line one\nline two", &out, &err, &res), "stdin");
	cr_assert_str_eq(out.p, "line one\nline two", "stdin through pods/exec, then its end");
	free(out.p);
	out = (struct test_buf){ 0 };
	ASSERT_OK(run(a4, env, 0, NULL, &out, &err, &res), "env");
	cr_assert_str_eq(out.p, "bar baz\n", "env applied: %s", out.p);
	free(out.p);
	out = (struct test_buf){ 0 };
	t0 = util_mono_ms();
	ASSERT_OK(run(a5, NULL, 300, NULL, &out, &err, &res), "deadline");
	cr_assert(res.timed_out, "timed out (exit %d)", res.exit_code);
	cr_assert_lt(util_mono_ms() - t0, 5000, "at the deadline");
	cr_assert_str_eq(out.p, "started\n");
	free(out.p);
	free(err.p);
	{
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = a1);

		ASSERT_ERR(flash_sandbox_exec(P, "nobody", &o, &res), -ENOENT, "no such session");
	}
}

/* ---------------------------------------------------------------- files */

Test(sandbox_k8s, write_read_import_export)
{
	struct flash_sandbox_info info;
	struct flash_diag *diag = NULL;
	struct test_buf got = { 0 }, t = { 0 };
	struct test_src s;
	uint64_t size = 0, written = 0;
	char data[3000], cmd[1200];
	struct stat st;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	ASSERT_OK(flash_sandbox_provision(P, "sess-f", SPEC, 60, &info, NULL), "provision");
	s = (struct test_src){ data, sizeof(data), 0 };
	ASSERT_OK(flash_sandbox_write(P, "sess-f", path("blob"), test_src_read, &s, &written), "write");
	cr_assert_eq(written, sizeof(data), "byte-counted");
	cr_assert_eq(stat(path("blob"), &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0644, "a new file is 0644");
	ASSERT_OK(flash_sandbox_read(P, "sess-f", path("blob"), 0, test_buf_sink, &got, &size), "read");
	cr_assert_eq(size, sizeof(data));
	cr_assert(got.len == sizeof(data) && !memcmp(got.p, data, sizeof(data)), "binary-safe round trip");
	free(got.p);
	got = (struct test_buf){ 0 };
	ASSERT_ERR(flash_sandbox_read(P, "sess-f", path("blob"), 100, test_buf_sink, &got, &size), -EFBIG, "size gate");
	cr_assert_eq(size, sizeof(data), "the size found");
	cr_assert_null(got.p, "no byte sent before the gate");
	/* A tar imported, then the directory exported. */
	ASSERT_OK(flash_diag_new(&diag), "diag");
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/src/proj/sub %s/dst && echo one > %s/src/proj/a && "
		 "echo two > %s/src/proj/sub/b && tar -C %s/src -cf %s/in.tar proj", DIR_, DIR_, DIR_, DIR_, DIR_, DIR_);
	cr_assert_eq(system(cmd), 0);
	{
		FILE *fp = fopen(path("in.tar"), "rb");
		char buf[4096];
		size_t n;

		cr_assert(fp);
		while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
			test_buf_sink(buf, n, &t);
		fclose(fp);
	}
	s = (struct test_src){ t.p, t.len, 0 };
	ASSERT_OK(flash_sandbox_import(P, "sess-f", path("dst"), test_src_read, &s, diag), "import");
	cr_assert_eq(access(path("dst/proj/sub/b"), R_OK), 0, "extracted");
	free(t.p);
	t = (struct test_buf){ 0 };
	ASSERT_OK(flash_sandbox_export(P, "sess-f", path("dst/proj"), test_buf_sink, &t), "export");
	cr_assert_gt(t.len, 512, "a tar stream");
	cr_assert_not_null(memmem(t.p, t.len, "proj/sub/b", 10), "members under the root's base name");
	free(t.p);
	flash_diag_free(diag);
}

/* ---------------------------------------------------------------- owned, reap, expiry */

Test(sandbox_k8s, owned_reap_waits_until_gone_and_expiry)
{
	struct flash_sandbox_info info;
	struct flash_sandbox_exec_result res;
	const char *a1[] = { "/bin/true", NULL };
	char **ids = NULL;
	size_t n = 0;
	int64_t t0;

	ASSERT_OK(flash_sandbox_provision(P, "sess-a", SPEC, 60, &info, NULL), "a");
	ASSERT_OK(flash_sandbox_provision(P, "sess-b", SPEC, 60, &info, NULL), "b");
	ASSERT_OK(flash_sandbox_owned(P, &ids, &n), "owned");
	cr_assert_eq(n, 2, "two sessions own Pods");
	cr_assert((!strcmp(ids[0], "sess-a") && !strcmp(ids[1], "sess-b")) ||
		  (!strcmp(ids[0], "sess-b") && !strcmp(ids[1], "sess-a")));
	flash_sandbox_ids_free(ids, n);
	t0 = util_mono_ms();
	ASSERT_OK(flash_sandbox_reap(P, "sess-a"), "reap");
	cr_assert_geq(util_mono_ms() - t0, 250, "waited for the Pod to be gone, not only terminating");
	cr_assert_eq(k8s_fake_pod_count(F), 1, "gone from the store");
	ASSERT_ERR(flash_sandbox_info(P, "sess-a", &info), -ENOENT, "no session");
	{
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = a1);

		ASSERT_ERR(flash_sandbox_exec(P, "sess-a", &o, &res), -ENOENT, "no exec after the reap");
	}
	ASSERT_OK(flash_sandbox_reap(P, "sess-a"), "a reap of nothing");
	/* The delete was by name after a select by label, with grace 0. */
	{
		bool seen = false;

		for (size_t i = 0; i < k8s_fake_requests(F); i++) {
			struct k8s_fake_request rq = { 0 };
			char buf[16];

			ASSERT_OK(k8s_fake_request_get(F, i, &rq), "request");
			if (!strcmp(rq.method, "DELETE")) {
				ASSERT_STREQ(rq.path, "/api/v1/namespaces/" NS "/pods/sbx-sess-a", "the Pod selected");
				ASSERT_STREQ(k8s_fake_query_arg(&rq, "gracePeriodSeconds", buf, sizeof(buf)), "0",
					     "grace 0");
				seen = true;
			}
			k8s_fake_request_clear(&rq);
		}
		cr_assert(seen, "a DELETE was sent");
	}
	/* Expiry: a 1 s session is ended (and reaped) when seen after. */
	ASSERT_OK(flash_sandbox_provision(P, "sess-e", SPEC, 1, &info, NULL), "short");
	usleep(1100000);
	ASSERT_OK(flash_sandbox_info(P, "sess-e", &info), "info");
	cr_assert_eq(info.end, FLASH_SANDBOX_END_EXPIRED, "expired");
	cr_assert_eq(k8s_fake_pod_count(F), 1, "its Pod reaped when seen expired");
	ASSERT_OK(flash_sandbox_info(P, "sess-e", &info), "still answered");
	cr_assert_eq(info.end, FLASH_SANDBOX_END_EXPIRED, "as ended");
	{
		FLASH_OPTS(flash_sandbox_exec_opts, o, .argv = a1);

		ASSERT_ERR(flash_sandbox_exec(P, "sess-e", &o, &res), -FLASH_E_SANDBOX_ENDED, "exec of an ended session");
	}
	ASSERT_OK(flash_sandbox_reap(P, "sess-e"), "reap the ended session");
	ASSERT_ERR(flash_sandbox_info(P, "sess-e", &info), -ENOENT, "forgotten after its reap");
	/* A Provision of a session past its expiry whose Pod nobody looked
	 * at gets a new sandbox, not the expired one. */
	ASSERT_OK(flash_sandbox_provision(P, "sess-x", SPEC, 1, &info, NULL), "short");
	usleep(1100000);
	ASSERT_OK(flash_sandbox_provision(P, "sess-x", SPEC, 60, &info, NULL), "again after its expiry");
	cr_assert(!info.adopted && info.end == FLASH_SANDBOX_LIVE, "a new sandbox (adopted %d, end %d)", info.adopted,
		  info.end);
	cr_assert_gt(info.expires_at, (int64_t)time(NULL) + 30, "with the new expiry");
	ASSERT_OK(flash_sandbox_reap(P, "sess-x"), "reap");
}

/* ---------------------------------------------------------------- the gate */

/* The methods and paths of the requests since the last reset, "M P;". */
static void requests_text(char *buf, size_t size, size_t *ret_patches, size_t *ret_deletes)
{
	buf[0] = '\0';
	*ret_patches = *ret_deletes = 0;
	for (size_t i = 0; i < k8s_fake_requests(F); i++) {
		struct k8s_fake_request rq = { 0 };

		ASSERT_OK(k8s_fake_request_get(F, i, &rq), "request");
		if (!strcmp(rq.method, "PATCH") || !strcmp(rq.method, "DELETE")) {
			snprintf(buf + strlen(buf), size - strlen(buf), "%s %s;", rq.method, rq.path);
			*(!strcmp(rq.method, "PATCH") ? ret_patches : ret_deletes) += 1;
		}
		k8s_fake_request_clear(&rq);
	}
}

Test(sandbox_k8s, reap_revokes_first_and_a_half_done_reap_is_completed)
{
	static const char refused[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
				      "\"message\":\"etcdserver: request timed out\",\"reason\":\"InternalError\",\"code\":500}";
	struct k8s_fake_step st = { .method = "PATCH", .path = "/api/v1/namespaces/" NS "/pods/sbx-sess-g", .status = 500,
				    .body = refused };
	const struct flash_sandbox_backend_ops *ops2 = NULL;
	struct flash_sandbox_provider *p2 = NULL;
	struct flash_sandbox_info info, e;
	struct flash_sandbox_exec_result res;
	struct op_sandbox_k8s_opts o;
	const char *a1[] = { "/bin/true", NULL };
	FLASH_OPTS(flash_sandbox_exec_opts, xo, .argv = a1);
	void *b2 = NULL;
	char seen[1024];
	size_t patches, deletes;

	ASSERT_OK(flash_sandbox_provision(P, "sess-g", SPEC, 60, &info, NULL), "provision");
	/* The API server refuses the revoke: nothing deleted, the session works. */
	ASSERT_OK(k8s_fake_push(F, &st), "a refused PATCH");
	k8s_fake_reset_requests(F);
	cr_assert_lt(flash_sandbox_reap(P, "sess-g"), 0, "the Reap fails with its revoke");
	requests_text(seen, sizeof(seen), &patches, &deletes);
	cr_assert_eq(patches, 1, "the revoke was tried: %s", seen);
	cr_assert_eq(deletes, 0, "nothing deleted after a failed revoke: %s", seen);
	cr_assert(k8s_fake_pod_exists(F, NS, "sbx-sess-g"), "the Pod is still there");
	ASSERT_OK(flash_sandbox_info(P, "sess-g", &e), "info");
	cr_assert_eq(e.end, FLASH_SANDBOX_LIVE, "still live (%s)", e.end_reason);
	ASSERT_OK(flash_sandbox_exec(P, "sess-g", &xo, &res), "exec after a failed revoke");
	cr_assert_eq(res.exit_code, 0);

	/* A crash after the revoke: the annotation is on the Pod, nothing deleted. */
	k8s_fake_reset_requests(F);
	ASSERT_OK(OPS->revoke(BACKEND, "sess-g"), "the backend's revoke alone");
	{
		struct k8s_fake_request rq = { 0 };
		bool found = false;

		for (size_t i = 0; i < k8s_fake_requests(F) && !found; i++) {
			ASSERT_OK(k8s_fake_request_get(F, i, &rq), "request");
			if (!strcmp(rq.method, "PATCH")) {
				found = true;
				ASSERT_STREQ(rq.path, "/api/v1/namespaces/" NS "/pods/sbx-sess-g", "the Pod selected by label");
				ASSERT_STREQ(rq.content_type, "application/merge-patch+json", "a merge patch");
				cr_assert_not_null(strstr(rq.body, "\"flash.heterocloud.io/sandbox-revoked\""), "%s", rq.body);
				cr_assert_eq(rq.status, 200, "the fake applied it");
			}
			k8s_fake_request_clear(&rq);
		}
		cr_assert(found, "a PATCH was sent");
	}
	ASSERT_OK(flash_sandbox_info(P, "sess-g", &e), "info of a revoked session");
	cr_assert_eq(e.end, FLASH_SANDBOX_END_REAPED, "end %s", flash_sandbox_end_name(e.end));
	ASSERT_STREQ(e.end_reason, "reaping", "reaping");
	cr_assert_eq(e.expires_at, info.expires_at, "expires_at kept");
	ASSERT_ERR(flash_sandbox_exec(P, "sess-g", &xo, &res), -FLASH_E_SANDBOX_ENDED, "exec refused");
	ASSERT_ERR(flash_sandbox_provision(P, "sess-g", SPEC, 60, &e, NULL), -FLASH_E_SANDBOX_ENDED,
		   "provision refused, not adopted");
	cr_assert(k8s_fake_pod_exists(F, NS, "sbx-sess-g"), "the revoke alone deleted nothing");

	/* Another replica (or the operator restarted) sees the gate closed:
	 * it is on the Pod, not in a process's memory. */
	base_opts(&o);
	ASSERT_OK(op_sandbox_k8s_new(&o, &ops2, &b2, NULL), "a second backend");
	ASSERT_OK(flash_sandbox_provider_new(ops2, b2, NULL, &p2), "its provider");
	ASSERT_OK(flash_sandbox_info(p2, "sess-g", &e), "info there");
	ASSERT_STREQ(e.end_reason, "reaping", "reaping there too");
	ASSERT_ERR(flash_sandbox_exec(p2, "sess-g", &xo, &res), -FLASH_E_SANDBOX_ENDED, "exec refused there");
	/* Its Reap completes the first one's. */
	k8s_fake_reset_requests(F);
	ASSERT_OK(flash_sandbox_reap(p2, "sess-g"), "the second Reap");
	requests_text(seen, sizeof(seen), &patches, &deletes);
	cr_assert_eq(deletes, 1, "%s", seen);
	cr_assert_eq(strncmp(seen, "PATCH ", 6), 0, "revoked again before the DELETE: %s", seen);
	cr_assert(!k8s_fake_pod_exists(F, NS, "sbx-sess-g"), "gone");
	ASSERT_ERR(flash_sandbox_info(P, "sess-g", &e), -ENOENT, "forgotten");
	ASSERT_OK(OPS->revoke(BACKEND, "sess-g"), "revoking a session owning nothing");
	flash_sandbox_provider_free(p2);
}
