/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-operator's sandbox routes in Kubernetes mode: the provider/v1
 * routes (operator/sandbox-http.c) on the operator's HTTP listener, served
 * by the Kubernetes backend (operator/sandbox-k8s.c) with the settings the
 * daemon gives it (op_sandbox_k8s_settings(): the command line's over the
 * configuration's sandbox section), against the fake API server
 * (tests/k8s-fake.c) with its Pod store and its exec endpoint, which runs
 * the commands for real on this host; driven by libflash's client, the
 * calls flashctl session makes.  Covered: the settings' precedence; the
 * session's Pod made in the configured namespace with the configured
 * RuntimeClass and NodeSelector; Provision idempotent; Exec's output and
 * exit code; Write then Read of the same bytes; List of the tenant's
 * sessions only; Reap waiting for the Pod to be gone; Reap's revoke first
 * (a PATCH the API server refuses fails the Reap and deletes nothing; a
 * Reap stopped after the revoke answers 409 "reaping" until the next
 * DELETE completes it); the verbs the backend sent are exactly those the
 * Role of deploy/kubernetes/sandbox-rbac.yaml grants; and the whole
 * daemon (op_daemon_start(), what flash-operator --kubernetes runs) with
 * sandbox.namespace in its configuration file serving the routes on Pods,
 * a malformed setting stopping it with the key named.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>
#include <flash/render.h>
#include <flash/sandbox.h>

#include "helpers.h"
#include "daemon.h"
#include "http.h"
#include "json.h"
#include "k8s-fake.h"
#include "k8s.h"
#include "operator-helpers.h"
#include "render-test.h"
#include "sandbox-helpers.h"
#include "sandbox-k8s.h"
#include "store.h"
#include "util.h"

#define NS "agents-sbx"

static char dir[64], sock[128], endpoint[160];
static struct k8s_fake *fake;
static struct flash_schema_set *schemas;
static struct op_store *store;
static struct op_metrics *metrics;
static struct op_provider *prov;
static struct op_http *http;
static struct flash_sandbox_provider *sp;
static const struct flash_sandbox_backend_ops *ops;
static void *backend;
static struct flash_auth_signer *signer;
static struct flash_auth_keyset *keys;

static int new_client(void *ctx, struct k8s_client **ret)
{
	struct k8s_config cfg = { .server = (char *)k8s_fake_url(fake) };
	struct k8s_client_opts co = { .sz = sizeof(co), .max_attempts = 1 };

	(void)ctx;
	return k8s_client_new(&cfg, &co, ret);
}

/* The daemon's way: the command line's settings over the configuration's. */
static void backend_up(void)
{
	static const char conf[] = "{\"sandbox\":{\"namespace\":\"from-config\",\"runtimeClass\":\"gvisor\","
				   "\"nodeSelector\":\"pool=config\",\"netSetupImage\":\"registry.test/net-setup:1\"}}";
	struct op_sandbox_k8s_opts cli = { .sz = sizeof(cli), .namespace = NS, .node_selector = "pool=sandboxes" };
	struct flash_operator_config *c = NULL;
	struct op_sandbox_k8s_opts o;

	ASSERT_OK(flash_operator_config_parse(conf, sizeof(conf) - 1, &c, NULL), "configuration");
	cr_assert(op_sandbox_k8s_settings(&cli, c, &o), "a namespace: sessions served");
	ASSERT_STREQ(o.namespace, NS, "the option over the key");
	ASSERT_STREQ(o.node_selector, "pool=sandboxes", "the option over the key");
	ASSERT_STREQ(o.runtime_class, "gvisor", "the key without an option");
	ASSERT_STREQ(o.net_setup_image, "registry.test/net-setup:1", "the key without an option");
	cr_assert_null(o.tolerations, "neither");
	o.schemas = schemas;
	o.new_client = new_client;
	o.poll_ms = 20;
	o.ready_timeout_ms = 5000;
	o.reap_timeout_ms = 5000;
	ASSERT_OK(op_sandbox_k8s_new(&o, &ops, &backend, NULL), "backend");
	/* the strings were copied: the configuration may go */
	flash_operator_config_free(c);
	ASSERT_OK(flash_sandbox_provider_new(ops, backend, NULL, &sp), "sandbox provider");
	{
		struct op_sandbox_k8s_opts none;

		cr_assert(!op_sandbox_k8s_settings(NULL, NULL, &none), "no namespace anywhere: none");
	}
}

static void setup(void)
{
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .pod_store = true, .pod_delete_ms = 100 };
	char path[128];
	unsigned char pk[32];

	signal(SIGPIPE, SIG_IGN);
	strcpy(dir, "/tmp/test-op-sandbox-k8s-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pods", dir);
	fo.exec_root = path;
	ASSERT_OK(k8s_fake_new(&fo, &fake), "fake API server");
	schemas = render_test_schema_set(true);
	backend_up();
	snprintf(path, sizeof(path), "%s/flash.db", dir);
	snprintf(sock, sizeof(sock), "%s/op.sock", dir);
	snprintf(endpoint, sizeof(endpoint), "unix:%s", sock);
	ASSERT_OK(op_store_open(path, &store, NULL, 0), "store");
	ASSERT_OK(flash_auth_signer_generate("k1", &signer), "signer");
	ASSERT_OK(flash_auth_signer_public_key(signer, pk), "pk");
	ASSERT_OK(flash_auth_keyset_new(&keys), "keyset");
	ASSERT_OK(flash_auth_keyset_add(keys, "k1", pk), "add");
	ASSERT_OK(op_metrics_new(&metrics), "metrics");
	{
		struct op_provider_opts o = { .sz = sizeof(o), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE,
					      .keys = keys, .store = store, .image = &test_image_ops,
					      .metrics = metrics };
		struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .threads = 2, .sandbox = sp };

		ASSERT_OK(op_provider_new(&o, &prov), "provider");
		ASSERT_OK(op_http_start(prov, &ho, &http, NULL, 0), "the operator's HTTP listener");
	}
}

static void teardown(void)
{
	char cmd[128];

	op_http_stop(http);
	flash_sandbox_provider_free(sp);
	op_provider_free(prov);
	op_metrics_free(metrics);
	op_store_close(store);
	flash_auth_signer_free(signer);
	flash_auth_keyset_free(keys);
	k8s_fake_free(fake);
	flash_schema_set_free(schemas);
	http = NULL, prov = NULL, store = NULL, signer = NULL, keys = NULL, sp = NULL, metrics = NULL, fake = NULL;
	schemas = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(operator_sandbox_k8s, .init = setup, .fini = teardown, .timeout = 60);

static struct flash_client *client_of(const char *org, const char *project)
{
	return test_sandbox_client(endpoint, signer, TEST_ISSUER, TEST_AUDIENCE, org, project);
}

static const char spec_json[] = "{\"region\":\"heteronet-global\",\"image\":\"registry.test/box:1\",\"cpu_millis\":250,"
				"\"memory_mib\":128,\"egress\":{\"mode\":\"internet\"}}";

static char *provisioned(struct flash_client *c, const char *name, char id[FLASH_CLIENT_SANDBOX_ID_STRLEN])
{
	struct flash_client_response *r = NULL;

	ASSERT_OK(flash_client_sandbox_id("org-a", "p1", name, id), "id");
	ASSERT_OK(flash_client_sandbox_provision(c, id, spec_json, strlen(spec_json), 120, &r), "provision");
	test_expect_status(r, 201, NULL, "made");
	flash_client_response_free(r);
	return id;
}

/* The body of the first POST the fake recorded (the Pod sent). */
static struct json_value *pod_sent(void)
{
	struct json_value *v = NULL;

	for (size_t i = 0; i < k8s_fake_requests(fake) && !v; i++) {
		struct k8s_fake_request rq = { 0 };

		ASSERT_OK(k8s_fake_request_get(fake, i, &rq), "request");
		if (!strcmp(rq.method, "POST")) {
			ASSERT_STREQ(rq.path, "/api/v1/namespaces/" NS "/pods", "created in the configured namespace");
			cr_assert(json_parse(rq.body, rq.body_len, NULL, &v, NULL) == 0);
		}
		k8s_fake_request_clear(&rq);
	}
	cr_assert(v, "no Pod was created");
	return v;
}

Test(operator_sandbox_k8s, flashctl_session_calls_through_the_routes_on_pods)
{
	struct flash_client *a = client_of("org-a", "p1"), *b = client_of("org-b", "p1");
	struct flash_client_response *r = NULL;
	struct flash_client_sandbox_exec_result res;
	struct test_buf out = { 0 }, got = { 0 };
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN], file[160], pod[128];
	const char *argv[] = { "/bin/sh", "-c", "cat; echo \" and $0\"; exit 5", "from-argv", NULL };
	static const char data[] = "bytes\0with a NUL and\nlines\n";
	struct json_value *v;

	provisioned(a, "k1", id);
	snprintf(pod, sizeof(pod), "sbx-%s", id);
	cr_assert(k8s_fake_pod_exists(fake, NS, pod), "the session's Pod");
	v = pod_sent();
	ASSERT_STREQ(json_string_value(json_at(v, "spec.runtimeClassName")), "gvisor", "RuntimeClass");
	ASSERT_STREQ(json_string_value(json_get(json_at(v, "spec.nodeSelector"), "pool")), "sandboxes", "NodeSelector");
	ASSERT_STREQ(json_string_value(json_get(json_at(v, "metadata.labels"), FLASH_SANDBOX_LABEL)), id,
		     "the ownership label");
	json_free(v);
	ASSERT_OK(flash_client_sandbox_provision(a, id, spec_json, strlen(spec_json), 120, &r), "again");
	test_expect_status(r, 200, NULL, "adopted");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"adopted\":true"));
	flash_client_response_free(r);
	cr_assert_eq(k8s_fake_pod_count(fake), 1, "one Pod");

	/* exec: stdin, stdout, the exit code */
	{
		FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = argv, .stdin_data = "in", .stdin_len = 2,
			   .stdout_fn = test_buf_sink, .stdout_userdata = &out);

		ASSERT_OK(flash_client_sandbox_exec(a, id, &o, &res, &r), "exec");
		cr_assert_null(r, "refused: %s", flash_client_response_body(r, NULL));
		cr_assert_eq(res.exit_code, 5);
		cr_assert(!res.timed_out);
		cr_assert_gt(res.expires_at, 0);
		ASSERT_STREQ(out.p, "in and from-argv\n", "through pods/exec");
	}
	/* write, then read the same bytes (the Pod's files are this host's) */
	snprintf(file, sizeof(file), "%s/blob", dir);
	{
		struct test_src s = { data, sizeof(data) - 1, 0 };

		ASSERT_OK(flash_client_sandbox_write(a, id, file, sizeof(data) - 1, test_src_read, &s, &r), "write");
		test_expect_status(r, 200, NULL, "written");
		flash_client_response_free(r);
		ASSERT_OK(flash_client_sandbox_read(a, id, file, 0, test_buf_sink, &got, &r), "read");
		cr_assert_null(r, "refused: %s", flash_client_response_body(r, NULL));
		cr_assert(got.len == sizeof(data) - 1 && !memcmp(got.p, data, got.len), "binary-safe round trip");
	}
	/* list: the tenant's only */
	ASSERT_OK(flash_client_sandbox_list(a, &r), "list");
	test_expect_status(r, 200, NULL, "list");
	cr_assert(strstr(flash_client_response_body(r, NULL), id), "%s", flash_client_response_body(r, NULL));
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_list(b, &r), "list of another tenant");
	cr_assert_null(strstr(flash_client_response_body(r, NULL), id), "another tenant's session listed");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_get(b, id, &r), "get by another tenant");
	test_expect_status(r, 404, "not-found", "another tenant's session is an unknown one");
	flash_client_response_free(r);

	/* reap: gone when answered */
	ASSERT_OK(flash_client_sandbox_reap(a, id, &r), "reap");
	test_expect_status(r, 200, NULL, "reaped");
	flash_client_response_free(r);
	cr_assert(!k8s_fake_pod_exists(fake, NS, pod), "the Pod is gone (not merely terminating) when Reap answers");
	ASSERT_OK(flash_client_sandbox_get(a, id, &r), "get");
	test_expect_status(r, 404, "not-found", "after the reap");
	flash_client_response_free(r);
	free(out.p);
	free(got.p);
	flash_client_free(a);
	flash_client_free(b);
}

Test(operator_sandbox_k8s, reap_revokes_first_over_the_routes)
{
	static const char refused[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
				      "\"message\":\"etcdserver: request timed out\",\"reason\":\"InternalError\",\"code\":500}";
	struct flash_client *a = client_of("org-a", "p1");
	struct flash_client_response *r = NULL;
	struct flash_client_sandbox_exec_result res;
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN], pod[128], path[256];
	const char *t[] = { "/bin/true", NULL };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = t);

	provisioned(a, "k2", id);
	snprintf(pod, sizeof(pod), "sbx-%s", id);
	snprintf(path, sizeof(path), "/api/v1/namespaces/" NS "/pods/%s", pod);
	{
		struct k8s_fake_step st = { .method = "PATCH", .path = path, .status = 500, .body = refused };

		ASSERT_OK(k8s_fake_push(fake, &st), "a refused PATCH");
	}
	ASSERT_OK(flash_client_sandbox_reap(a, id, &r), "reap");
	cr_assert_geq(flash_client_response_status(r), 500, "the revoke's failure fails the Reap: %d %s",
		      flash_client_response_status(r), flash_client_response_body(r, NULL));
	flash_client_response_free(r);
	cr_assert(k8s_fake_pod_exists(fake, NS, pod), "nothing deleted");
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o, &res, &r), "exec");
	cr_assert_null(r, "the session still works: %s", flash_client_response_body(r, NULL));

	/* the Reap stopped after its revoke (a crash): 409 until the next */
	ASSERT_OK(ops->revoke(backend, id), "the revoke alone");
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o, &res, &r), "exec");
	test_expect_status(r, 409, "reaping", "exec on a revoked session");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_provision(a, id, spec_json, strlen(spec_json), 120, &r), "provision");
	test_expect_status(r, 409, "reaping", "provision of a revoked session");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_get(a, id, &r), "get");
	test_expect_status(r, 200, NULL, "its info");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"end_reason\":\"reaping\""), "%s",
		  flash_client_response_body(r, NULL));
	flash_client_response_free(r);
	cr_assert(k8s_fake_pod_exists(fake, NS, pod), "still there");
	ASSERT_OK(flash_client_sandbox_reap(a, id, &r), "the next reap");
	test_expect_status(r, 200, NULL, "completed");
	flash_client_response_free(r);
	cr_assert(!k8s_fake_pod_exists(fake, NS, pod), "gone");
	flash_client_free(a);
}

/* The Kubernetes verb of a request the backend sent. */
static const char *verb_of(const struct k8s_fake_request *rq, bool *ret_exec)
{
	*ret_exec = strstr(rq->path, "/exec") != NULL;
	if (!strcmp(rq->method, "POST"))
		return "create";
	if (!strcmp(rq->method, "PATCH"))
		return "patch";
	if (!strcmp(rq->method, "DELETE"))
		return "delete";
	if (!strcmp(rq->method, "PUT"))
		return "update";
	if (*ret_exec)
		return "get";
	/* a GET of the collection is a list, of one Pod a get */
	return strncmp(rq->path + strlen("/api/v1/namespaces/" NS), "/pods/", 6) ? "list" : "get";
}

/* Every verb the backend used (a whole session's life, the revoke
 * included) is granted by the Role of deploy/kubernetes/sandbox-rbac.yaml
 * and the Role grants no other: exactly the verbs of the backend. */
Test(operator_sandbox_k8s, the_role_grants_exactly_the_verbs_the_backend_uses)
{
	struct flash_client *a = client_of("org-a", "p1");
	struct flash_client_response *r = NULL;
	struct flash_client_sandbox_exec_result res;
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN], used[512] = "", granted[512] = "";
	const char *t[] = { "/bin/true", NULL };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = t);
	char *yaml = NULL, **docs = NULL;
	size_t n;

	k8s_fake_reset_requests(fake);
	provisioned(a, "k3", id);
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o, &res, &r), "exec");
	cr_assert_null(r);
	ASSERT_OK(flash_client_sandbox_list(a, &r), "list");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_reap(a, id, &r), "reap");
	test_expect_status(r, 200, NULL, "reaped");
	flash_client_response_free(r);
	for (size_t i = 0; i < k8s_fake_requests(fake); i++) {
		struct k8s_fake_request rq = { 0 };
		char one[64];
		bool exec;
		const char *verb;

		ASSERT_OK(k8s_fake_request_get(fake, i, &rq), "request");
		cr_assert(!strncmp(rq.path, "/api/v1/namespaces/" NS "/", strlen("/api/v1/namespaces/" NS "/")),
			  "nothing outside the sandbox namespace: %s %s", rq.method, rq.path);
		verb = verb_of(&rq, &exec);
		snprintf(one, sizeof(one), "%s:%s;", exec ? "pods/exec" : "pods", verb);
		if (!strstr(used, one))
			snprintf(used + strlen(used), sizeof(used) - strlen(used), "%s", one);
		k8s_fake_request_clear(&rq);
	}
	/* the Role, as libflash renders it for this namespace */
	{
		struct flash_operator_config *c = NULL;
		static const char conf[] = "{\"sandbox\":{\"namespace\":\"" NS "\"}}";

		ASSERT_OK(flash_operator_config_parse(conf, sizeof(conf) - 1, &c, NULL), "configuration");
		ASSERT_OK(flash_manifest_render(FLASH_MANIFEST_SANDBOX_RBAC, c, &yaml, NULL), "sandbox-rbac.yaml");
		flash_operator_config_free(c);
	}
	n = render_test_yaml_to_json(yaml, &docs);
	for (size_t i = 0; i < n; i++) {
		struct json_value *v = NULL;
		const struct json_value *rules;

		cr_assert(json_parse(docs[i], strlen(docs[i]), NULL, &v, NULL) == 0);
		if (strcmp(json_string_value(json_get(v, "kind")), "Role")) {
			json_free(v);
			continue;
		}
		ASSERT_STREQ(json_string_value(json_at(v, "metadata.namespace")), NS, "the Role is the namespace's");
		rules = json_get(v, "rules");
		for (size_t k = 0; k < rules->u.array.n; k++) {
			const struct json_value *res_ = json_get(rules->u.array.items[k], "resources");
			const struct json_value *verbs = json_get(rules->u.array.items[k], "verbs");

			for (size_t x = 0; x < res_->u.array.n; x++)
				for (size_t y = 0; y < verbs->u.array.n; y++) {
					char one[64];

					snprintf(one, sizeof(one), "%s:%s;", json_string_value(res_->u.array.items[x]),
						 json_string_value(verbs->u.array.items[y]));
					snprintf(granted + strlen(granted), sizeof(granted) - strlen(granted), "%s", one);
				}
		}
		json_free(v);
	}
	render_test_free_docs(docs, n);
	free(yaml);
	/* used ⊆ granted, and granted ⊆ used (pods/exec create: the
	 * upgrade's second check since 1.35, not a request of its own) */
	for (char *p = used, *e; (e = strchr(p, ';')); p = e + 1) {
		char one[64];

		snprintf(one, sizeof(one), "%.*s;", (int)(e - p), p);
		cr_assert_not_null(strstr(granted, one), "the backend used %s, which the Role does not grant (%s)", one,
				   granted);
	}
	for (char *p = granted, *e; (e = strchr(p, ';')); p = e + 1) {
		char one[64];

		snprintf(one, sizeof(one), "%.*s;", (int)(e - p), p);
		if (!strcmp(one, "pods/exec:create;"))
			continue;
		cr_assert_not_null(strstr(used, one), "the Role grants %s, which the backend never used (%s)", one, used);
	}
	flash_client_free(a);
}

/* ---------------------------------------------------------------- the daemon */

static void k8s_no_sleep(unsigned int ms, void *userdata)
{
	(void)ms, (void)userdata;
}

/* @text with the first @old replaced by @new (k8s-recorded.h's, which
 * cannot be included beside render-test.h). */
static char *edit_once(const char *text, const char *old, const char *new)
{
	const char *at = text ? strstr(text, old) : NULL;
	char *out = NULL;

	cr_assert(at, "no %s to edit", old);
	cr_assert(asprintf(&out, "%.*s%s%s", (int)(at - text), text, new, at + strlen(old)) > 0);
	return out;
}

static void write_file(const char *path, const char *text)
{
	ASSERT_OK(util_write_file_atomic(path, text, strlen(text), 0600), path);
}

/* flash-operator --kubernetes with the provider API, as bin/ starts it:
 * its configuration file names the sandbox namespace and settings, a
 * command-line option overrides one; a malformed setting stops the start
 * naming its key; the routes then make, run and reap a session's Pod on
 * the fake API server through the daemon's own listener and clients. */
Test(operator_sandbox_k8s, the_daemon_in_kubernetes_mode_serves_sandboxes_on_pods, .timeout = 60)
{
	const char *crd2 = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/flashusagerecords.flash.heterocloud.io";
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .pod_store = true, .accept_writes = true };
	struct k8s_client_opts co = { .sz = sizeof(co), .sleep_ms = k8s_no_sleep, .max_attempts = 1 };
	struct flash_auth_keyset *ks = NULL;
	struct flash_schema_set *set = render_test_schema_set(true);
	struct k8s_fake *f = NULL;
	struct k8s_config cfg = { 0 };
	struct op_daemon *d = NULL;
	struct flash_client *a;
	struct flash_client_response *r = NULL;
	struct flash_client_sandbox_exec_result res;
	struct test_buf out = { 0 };
	char kpath[128], conf[128], podroot[128], dsock[128], err[1024] = "", id[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	char pod[128], *jwks = NULL, *est;
	unsigned char pk[32];
	const char *argv[] = { "/bin/echo", "on", "a", "Pod", NULL };

	for (int crd = FLASH_CRD_FLASHSERVICE; crd <= FLASH_CRD_FLASHUSAGERECORD; crd++) {
		char *text = NULL;
		size_t len;

		ASSERT_OK(flash_render_crd((enum flash_crd)crd, FLASH_RENDER_JSON, &text, &len), "CRD");
		ASSERT_OK(flash_schema_set_add_crd(set, text, len, NULL), "CRD schema");
		free(text);
	}
	snprintf(kpath, sizeof(kpath), "%s/keys.jwks", dir);
	snprintf(conf, sizeof(conf), "%s/flash-operator.conf", dir);
	snprintf(podroot, sizeof(podroot), "%s/daemon-pods", dir);
	snprintf(dsock, sizeof(dsock), "%s/daemon.sock", dir);
	ASSERT_OK(flash_auth_signer_public_key(signer, pk), "pk");
	ASSERT_OK(flash_auth_keyset_new(&ks), "ks");
	ASSERT_OK(flash_auth_keyset_add(ks, "k1", pk), "add");
	ASSERT_OK(flash_auth_keyset_to_jwks(ks, &jwks), "jwks");
	write_file(kpath, jwks);
	free(jwks);
	flash_auth_keyset_free(ks);
	fo.exec_root = podroot;
	ASSERT_OK(k8s_fake_new(&fo, &f), "a fake API server of the daemon's");
	est = edit_once(k8s_fake_exchange_body(f, "02", NULL), "flashservices.flash", "flashusagerecords.flash");
	cfg.server = (char *)k8s_fake_url(f);

	struct op_k8s_run_opts ko = { .sz = sizeof(ko), .k8s_config = &cfg, .client_opts = &co, .schemas = set,
				      .lease_namespace = "flash-system", .identity = "test-sandbox-k8s",
				      .retry_period_ms = 50 };
	struct op_sandbox_k8s_opts cli = { .sz = sizeof(cli), .node_selector = "pool=from-the-flag" };
	struct op_daemon_opts o = { .sz = sizeof(o), .state_dir = dir, .keys_file = kpath, .issuer = TEST_ISSUER,
				    .audience = TEST_AUDIENCE, .config_file = conf, .image = &test_image_ops,
				    .kubernetes = &ko, .sandbox_k8s = &cli };
	o.http.sz = sizeof(o.http);
	o.http.unix_path = dsock;
	o.http.threads = 2;

	/* a malformed setting stops the start, naming its key */
	write_file(conf, "{\"sandbox\":{\"namespace\":\"" NS "\",\"tolerations\":\"key:Sometimes\"}}");
	{
		struct k8s_fake_step st = { .method = "GET", .path = crd2, .body = est };

		ASSERT_OK(k8s_fake_push(f, &st), "CRD");
	}
	cr_assert_lt(op_daemon_start(&o, &d, err, sizeof(err)), 0, "a malformed toleration");
	cr_assert_null(d);
	cr_assert(strstr(err, "sandbox.tolerations"), "the key named: %s", err);

	/* the file's namespace and RuntimeClass, the flag's NodeSelector */
	write_file(conf, "{\"sandbox\":{\"namespace\":\"" NS "\",\"runtimeClass\":\"gvisor\","
			 "\"nodeSelector\":\"pool=from-the-file\"}}");
	{
		struct k8s_fake_step st = { .method = "GET", .path = crd2, .body = est };

		ASSERT_OK(k8s_fake_push(f, &st), "CRD");
	}
	err[0] = '\0';
	ASSERT_OK(op_daemon_start(&o, &d, err, sizeof(err)), err);
	cr_assert_not_null(op_daemon_sandbox(d), "a sandbox provider in Kubernetes mode");
	{
		struct flash_client_opts cop = { .sz = sizeof(cop), .timeout_ms = 20000 };
		struct flash_client_identity idn = { .sz = sizeof(idn), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE,
						     .organization = "org-a", .project = "p1" };
		char ep[160];

		snprintf(ep, sizeof(ep), "unix:%s", dsock);
		cop.endpoint = ep;
		ASSERT_OK(flash_client_new(&cop, &a), "client");
		ASSERT_OK(flash_client_set_signer(a, signer, &idn), "signer");
	}
	ASSERT_OK(flash_client_sandbox_id("org-a", "p1", "d1", id), "id");
	snprintf(pod, sizeof(pod), "sbx-%s", id);
	ASSERT_OK(flash_client_sandbox_provision(a, id, spec_json, strlen(spec_json), 120, &r), "provision");
	test_expect_status(r, 201, NULL, "made by the daemon");
	flash_client_response_free(r);
	cr_assert(k8s_fake_pod_exists(f, NS, pod), "the Pod in the configured namespace");
	{
		struct json_value *v = NULL;

		for (size_t i = 0; i < k8s_fake_requests(f) && !v; i++) {
			struct k8s_fake_request rq = { 0 };

			ASSERT_OK(k8s_fake_request_get(f, i, &rq), "request");
			if (!strcmp(rq.method, "POST") && !strcmp(rq.path, "/api/v1/namespaces/" NS "/pods"))
				cr_assert(json_parse(rq.body, rq.body_len, NULL, &v, NULL) == 0);
			k8s_fake_request_clear(&rq);
		}
		cr_assert(v, "the Pod was sent");
		ASSERT_STREQ(json_string_value(json_at(v, "spec.runtimeClassName")), "gvisor", "the file's");
		ASSERT_STREQ(json_string_value(json_get(json_at(v, "spec.nodeSelector"), "pool")), "from-the-flag",
			     "the flag over the file");
		json_free(v);
	}
	{
		FLASH_OPTS(flash_client_sandbox_exec_opts, xo, .argv = argv, .stdout_fn = test_buf_sink,
			   .stdout_userdata = &out);

		ASSERT_OK(flash_client_sandbox_exec(a, id, &xo, &res, &r), "exec");
		cr_assert_null(r, "refused: %s", flash_client_response_body(r, NULL));
		cr_assert_eq(res.exit_code, 0);
		ASSERT_STREQ(out.p, "on a Pod\n", "pods/exec through the daemon");
	}
	ASSERT_OK(flash_client_sandbox_reap(a, id, &r), "reap");
	test_expect_status(r, 200, NULL, "reaped");
	flash_client_response_free(r);
	cr_assert(!k8s_fake_pod_exists(f, NS, pod), "gone");
	flash_client_free(a);
	op_daemon_stop(d);

	/* the namespace without Kubernetes mode is refused */
	o.kubernetes = NULL;
	o.sandbox_k8s = NULL;
	o.http.unix_path = NULL;
	err[0] = '\0';
	ASSERT_ERR(op_daemon_start(&o, &d, err, sizeof(err)), -EINVAL, "sandbox.namespace without --kubernetes");
	cr_assert(strstr(err, "sandbox.namespace"), "%s", err);
	free(out.p);
	free(est);
	k8s_fake_free(f);
	flash_schema_set_free(set);
}
