/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The provider/v1 API on top of Kubernetes mode (operator/k8s-provider.c,
 * the publisher thread of operator/k8s-run.c): the store's services become
 * FlashService objects on the replaying fake API server (tests/k8s-fake.c),
 * each checked against the FlashService CRD's schema; unchanged services
 * send nothing; a service deleted through the API is deleted; and end to
 * end, a create and a delete through op_provider_handle() reach the fake.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <flash/auth.h>
#include <flash/render.h>
#include <flash/spec.h>

#include "helpers.h"
#include "json.h"
#include "k8s-fake.h"
#include "k8s-reconcile.h"
#include "k8s-recorded.h"
#include "k8s.h"
#include "operator-helpers.h"
#include "provider.h"
#include "store.h"

#define LEASE_HOLDER "flash-operator-6c9f7b8d5-x2k4p_0f6f3a2e-5b1c-4d8e-9a7f-2c3b4d5e6f70"

static void no_sleep(unsigned int ms, void *userdata)
{
	(void)ms, (void)userdata;
}

static struct flash_schema_set *crd_schemas(void)
{
	struct flash_schema_set *set = render_test_schema_set(true);

	for (int crd = FLASH_CRD_FLASHSERVICE; crd <= FLASH_CRD_FLASHUSAGERECORD; crd++) {
		char *text = NULL;
		size_t len;

		ASSERT_OK(flash_render_crd((enum flash_crd)crd, FLASH_RENDER_JSON, &text, &len), "CRD");
		ASSERT_OK(flash_schema_set_add_crd(set, text, len, NULL), "CRD schema");
		free(text);
	}
	return set;
}

static struct k8s_client *client_for(struct k8s_fake *f)
{
	struct k8s_client_opts o = { .sz = sizeof(o), .sleep_ms = no_sleep, .max_attempts = 1 };
	struct k8s_config cfg = { .server = (char *)k8s_fake_url(f) };
	struct k8s_client *c = NULL;

	ASSERT_OK(k8s_client_new(&cfg, &o, &c), "client");
	return c;
}

static size_t count(struct k8s_fake *f, const char *method, const char *part)
{
	size_t n = 0, total = k8s_fake_requests(f);

	for (size_t i = 0; i < total; i++) {
		struct k8s_fake_request r;

		ASSERT_OK(k8s_fake_request_get(f, i, &r), "request");
		if (!strcmp(r.method, method) && strstr(r.path, part))
			n++;
		k8s_fake_request_clear(&r);
	}
	return n;
}

/* The canonical spec text, as the store keeps it. */
static char *canonical(unsigned int replicas)
{
	char *raw = test_spec("ghcr.io/acme/web:1.0", 1, replicas, 1), *out = NULL;
	struct flash_spec *s = NULL;

	ASSERT_OK(flash_spec_parse(raw, strlen(raw), NULL, &s, NULL), "spec");
	ASSERT_OK(flash_spec_to_json(s, &out, NULL), "canonical");
	flash_spec_free(s);
	free(raw);
	return out;
}

Test(k8s_provider, org_namespace)
{
	char ns[OP_K8S_NAMESPACE_MAX + 1];

	cr_assert_eq(op_k8s_org_namespace("org-a", ns, sizeof(ns)), 5);
	cr_assert_str_eq(ns, "org-a");
	/* Not a DNS label: hashed, and still a label. */
	cr_assert_eq(op_k8s_org_namespace("Org_A:1", ns, sizeof(ns)), 37);
	cr_assert(!strncmp(ns, "orgh-", 5), "%s", ns);
	cr_assert_eq(op_k8s_org_namespace("Org_A:2", ns + 0, sizeof(ns)), 37);
	{
		char other[OP_K8S_NAMESPACE_MAX + 1];

		cr_assert_eq(op_k8s_org_namespace("Org_A:1", other, sizeof(other)), 37);
		cr_assert_str_neq(ns, other, "two ids never share a namespace");
	}
	cr_assert_eq(op_k8s_org_namespace("", ns, sizeof(ns)), -EINVAL);
	cr_assert_eq(op_k8s_org_namespace("org-a", ns, 10), -ENOSPC);
}

Test(k8s_provider, publish_applies_changed_services_and_deletes_removed_ones)
{
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .accept_writes = true };
	struct k8s_fake *f = NULL;
	struct k8s_client *c;
	struct flash_schema_set *set = crd_schemas();
	struct op_k8s_publisher *p = NULL;
	struct op_k8s_publish_stats st;
	struct op_service a = { .org = "org-a", .project = "p1", .name = "web" }, b = a;
	struct op_service *list[2] = { &a, &b };
	char *spec1 = canonical(1), *spec3 = canonical(3);

	snprintf(a.id, sizeof(a.id), "fs-0123456789abcdef0123456789abcdef");
	snprintf(b.id, sizeof(b.id), "fs-fedcba9876543210fedcba9876543210");
	a.spec = b.spec = spec1;
	ASSERT_OK(k8s_fake_new(&fo, &f), "fake");
	c = client_for(f);
	ASSERT_OK(op_k8s_publisher_new(c, set, NULL, NULL, &p), "publisher");

	ASSERT_OK(op_k8s_publish(p, list, 2), "publish");
	cr_assert_eq(k8s_fake_requests(f), 2);
	for (size_t i = 0; i < 2; i++) {
		struct k8s_fake_request r;
		char buf[64];
		struct json_value *v;
		_cleanup_diag_ struct flash_diag *d = render_test_diag();

		ASSERT_OK(k8s_fake_request_get(f, i, &r), "request");
		cr_assert_str_eq(r.method, "PATCH");
		cr_assert(strstr(r.path, "/apis/flash.heterocloud.io/v1alpha1/namespaces/org-a/flashservices/fs-"), "%s",
			  r.path);
		cr_assert_str_eq(k8s_fake_query_arg(&r, "fieldManager", buf, sizeof(buf)) ?: "", OP_K8S_PROVIDER_MANAGER,
				 "its own manager: the reconciler's finalizer stays");
		cr_assert_eq(flash_schema_validate_object(set, r.body, r.body_len, d), 0, "%s %s", diag_path(d),
			     diag_message(d));
		v = k8s_test_parse(r.body);
		cr_assert_str_eq(json_string_value(json_get(json_at(v, "metadata.labels"), OP_K8S_LABEL_ORG)), "org-a");
		cr_assert_str_eq(json_string_value(json_get(json_at(v, "metadata.labels"), OP_K8S_LABEL_SERVICE_ID)),
				 i ? b.id : a.id);
		cr_assert_str_eq(json_string_value(json_at(v, "spec.image")), "ghcr.io/acme/web:1.0");
		json_free(v);
		k8s_fake_request_clear(&r);
	}

	/* Nothing changed: nothing sent. */
	k8s_fake_reset_requests(f);
	ASSERT_OK(op_k8s_publish(p, list, 2), "again");
	cr_assert_eq(k8s_fake_requests(f), 0);

	/* b's spec changed, a deleted through the API. */
	b.spec = spec3;
	ASSERT_OK(op_k8s_publish(p, &list[1], 1), "changed");
	cr_assert_eq(count(f, "PATCH", b.id), 1, "b applied again");
	cr_assert_eq(count(f, "PATCH", a.id), 0);
	cr_assert_eq(count(f, "DELETE", a.id), 1, "a deleted");
	cr_assert_eq(k8s_fake_requests(f), 2);
	op_k8s_publisher_stats(p, &st);
	cr_assert_eq(st.applies, 3);
	cr_assert_eq(st.deletes, 1);
	cr_assert_eq(st.errors, 0);

	op_k8s_publisher_free(p);
	k8s_client_free(c);
	k8s_fake_free(f);
	flash_schema_set_free(set);
	free(spec1);
	free(spec3);
}

/* ---------------------------------------------------------------- end to end through the provider API */

static void wait_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static struct op_response call(struct op_provider *prov, struct flash_auth_signer *signer, const char *method,
			       const char *path, enum flash_auth_action action, uint64_t gen, const char *body)
{
	struct op_response r;
	char *tok = test_mint(signer, "org-a", "p1", action, gen), hdr[9000];
	struct op_request rq = { .method = method, .path = path, .authorization = hdr, .body = body ? body : "",
				 .body_len = body ? strlen(body) : 0 };

	snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	op_provider_handle(prov, &rq, &r);
	free(tok);
	return r;
}

/* The provider API on Kubernetes mode against the fake, as daemon.c wires
 * it: the publisher, the kick and the status of the FlashService watch. */
struct pe {
	char dir[64];
	struct op_store *store;
	struct op_metrics *metrics;
	struct op_provider *prov;
	struct flash_auth_signer *signer;
	struct flash_auth_keyset *keys;
	struct flash_operator_config *config;
	struct k8s_fake *f;
	struct flash_schema_set *set;
	struct k8s_config cfg;
	struct k8s_client_opts co;
	struct op_k8s_run *run;
	char *est;
};

/* @fs_list: the FlashService list the watch gets first (NULL: none). */
static void pe_open(struct pe *e, const char *fs_list)
{
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .accept_writes = true };
	const char *crd2 = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/flashusagerecords.flash.heterocloud.io";
	unsigned char pk[32];
	char path[128];

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "/tmp/test-k8s-provider-XXXXXX");
	cr_assert(mkdtemp(e->dir));
	e->set = crd_schemas();
	e->co = (struct k8s_client_opts){ .sz = sizeof(e->co), .sleep_ms = no_sleep, .max_attempts = 1 };
	snprintf(path, sizeof(path), "%s/flash.db", e->dir);
	ASSERT_OK(op_store_open(path, &e->store, NULL, 0), "store");
	ASSERT_OK(op_metrics_new(&e->metrics), "metrics");
	ASSERT_OK(flash_auth_signer_generate("k1", &e->signer), "signer");
	ASSERT_OK(flash_auth_signer_public_key(e->signer, pk), "pk");
	ASSERT_OK(flash_auth_keyset_new(&e->keys), "keyset");
	ASSERT_OK(flash_auth_keyset_add(e->keys, "k1", pk), "add");
	{
		static const char cj[] = "{\"publicPortRange\":{\"first\":30000,\"last\":30009}}";

		ASSERT_OK(flash_operator_config_parse(cj, strlen(cj), &e->config, NULL), "config");
	}
	{
		struct op_provider_opts o = {
			.sz = sizeof(o), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE, .keys = e->keys,
			.config = e->config, .store = e->store, .metrics = e->metrics, .image = &test_image_ops,
		};

		ASSERT_OK(op_provider_new(&o, &e->prov), "provider");
	}
	ASSERT_OK(k8s_fake_new(&fo, &e->f), "fake");
	e->est = k8s_test_edit(k8s_fake_exchange_body(e->f, "02", NULL), "flashservices.flash", "flashusagerecords.flash");
	{
		struct k8s_fake_step s1 = { .method = "GET", .path = crd2, .body = e->est };

		ASSERT_OK(k8s_fake_push(e->f, &s1), "CRD");
	}
	if (fs_list) {
		struct k8s_fake_step s2 = { .method = "GET", .path = "/apis/flash.heterocloud.io/v1alpha1/flashservices",
					    .body = fs_list };

		ASSERT_OK(k8s_fake_push(e->f, &s2), "the FlashService list");
	}
	e->cfg.server = (char *)k8s_fake_url(e->f);
	{
		struct op_k8s_run_opts ro = {
			.sz = sizeof(ro), .k8s_config = &e->cfg, .client_opts = &e->co, .config = e->config,
			.schemas = e->set, .lease_namespace = "flash-system", .identity = LEASE_HOLDER,
			.retry_period_ms = 50,
		};

		ASSERT_OK(op_k8s_run_start(&ro, &e->run), "Kubernetes mode");
	}
	ASSERT_OK(op_k8s_run_publish(e->run, op_provider_live_services, e->prov), "publisher");
	op_provider_set_kick(e->prov, op_k8s_run_kick, e->run);
	op_provider_set_status(e->prov, op_k8s_run_service_status, e->run);
}

static void pe_close(struct pe *e)
{
	char cmd[128];

	op_k8s_run_stop(e->run);
	op_provider_free(e->prov);
	k8s_fake_free(e->f);
	flash_schema_set_free(e->set);
	op_metrics_free(e->metrics);
	op_store_close(e->store);
	flash_auth_signer_free(e->signer);
	flash_auth_keyset_free(e->keys);
	flash_operator_config_free(e->config);
	free(e->est);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	cr_assert(system(cmd) == 0);
}

Test(k8s_provider, provider_api_create_and_delete_become_flashservice_writes)
{
	struct pe e;
	struct op_response r;
	struct json_value *v;
	char *spec = test_spec("test.invalid/app:1000", 1, 1, 1), *body = NULL, id[64], fspath[256], svcpath[128];

	pe_open(&e, NULL);
	cr_assert(asprintf(&body, "{\"name\":\"echo\",\"spec\":%s}", spec) > 0);
	r = call(e.prov, e.signer, "POST", "/provider/v1/services", FLASH_AUTH_ACTION_CREATE, 1, body);
	cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
	v = k8s_test_parse(r.body);
	snprintf(id, sizeof(id), "%s", json_string_value(json_get(v, "id")));
	json_free(v);
	op_response_clear(&r);
	snprintf(fspath, sizeof(fspath), "/apis/flash.heterocloud.io/v1alpha1/namespaces/org-a/flashservices/%s", id);
	for (int i = 0; i < 250 && count(e.f, "PATCH", fspath) == 0; i++)
		wait_ms(20);
	cr_assert_eq(count(e.f, "PATCH", fspath), 1, "the create became a FlashService apply");

	snprintf(svcpath, sizeof(svcpath), "/provider/v1/services/%s", id);
	r = call(e.prov, e.signer, "DELETE", svcpath, FLASH_AUTH_ACTION_DELETE, 2, NULL);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	op_response_clear(&r);
	for (int i = 0; i < 250 && count(e.f, "DELETE", fspath) == 0; i++)
		wait_ms(20);
	cr_assert_eq(count(e.f, "DELETE", fspath), 1, "the delete became a FlashService delete");
	pe_close(&e);
	free(spec);
	free(body);
}

/* A status object with conditions (type, status, reason) for the view. */
static struct json_value *status_of(const char *ready, const char *ready_reason, const char *degraded,
				    const char *degraded_reason, const char *extra, int64_t observed, int ready_replicas)
{
	char *text = NULL;
	struct json_value *v;

	cr_assert(asprintf(&text,
			   "{\"observedGeneration\":%lld,\"readyReplicas\":%d,\"conditions\":["
			   "{\"type\":\"Ready\",\"status\":\"%s\",\"observedGeneration\":%lld,"
			   "\"lastTransitionTime\":\"2026-11-30T12:00:00Z\",\"reason\":\"%s\",\"message\":\"ready words\"},"
			   "{\"type\":\"Degraded\",\"status\":\"%s\",\"observedGeneration\":%lld,"
			   "\"lastTransitionTime\":\"2026-11-30T12:00:00Z\",\"reason\":\"%s\",\"message\":\"pull access denied\"}%s]}",
			   (long long)observed, ready_replicas, ready, (long long)observed, ready_reason, degraded,
			   (long long)observed, degraded_reason, extra) > 0);
	v = k8s_test_parse(text);
	free(text);
	return v;
}

/* The phase comes from the conditions, in the order of what matters
 * most; the conditions themselves are shown as written. */
Test(k8s_provider, the_status_view_derives_the_phase_from_the_conditions)
{
	static const char queued[] = ",{\"type\":\"Queued\",\"status\":\"True\",\"reason\":\"WaitingForGPU\","
				     "\"message\":\"position 2 in the a100 queue\"}";
	static const char suspended[] = ",{\"type\":\"Suspended\",\"status\":\"True\",\"reason\":\"WeeklyLimit\","
					"\"message\":\"weekly CPU limit reached\"}";
	struct op_service_status st;
	struct json_value *v;

	ASSERT_OK(op_k8s_service_status_view(NULL, 1, 2, &st), "no status yet");
	cr_assert_str_eq(st.phase, "provisioning");
	cr_assert_eq(st.n_conditions, 0);
	cr_assert_eq(st.wanted, 2);

	v = status_of("True", "Available", "False", "AsExpected", "", 3, 2);
	ASSERT_OK(op_k8s_service_status_view(v, 3, 2, &st), "ready");
	cr_assert_str_eq(st.phase, "ready");
	cr_assert(st.ready);
	cr_assert_eq(st.ready_replicas, 2);
	cr_assert_eq(st.observed_generation, 3);
	cr_assert_eq(st.n_conditions, 2);
	cr_assert_str_eq(st.conditions[0].type, "Ready");
	cr_assert_str_eq(st.conditions[0].status, "True");
	cr_assert_str_eq(st.conditions[0].reason, "Available");
	cr_assert_str_eq(st.conditions[0].since, "2026-11-30T12:00:00Z");
	ASSERT_OK(op_k8s_service_status_view(v, 4, 2, &st), "a newer generation not yet observed");
	cr_assert_str_eq(st.phase, "provisioning");
	cr_assert(!st.ready);
	json_free(v);

	v = status_of("False", "ErrImagePull", "True", "ErrImagePull", "", 1, 0);
	ASSERT_OK(op_k8s_service_status_view(v, 1, 1, &st), "degraded");
	cr_assert_str_eq(st.phase, "failed");
	cr_assert(strstr(st.message, "ErrImagePull") && strstr(st.message, "pull access denied"), "%s", st.message);
	json_free(v);

	v = status_of("False", "Queued", "False", "AsExpected", queued, 1, 0);
	ASSERT_OK(op_k8s_service_status_view(v, 1, 1, &st), "queued");
	cr_assert_str_eq(st.phase, "queued");
	cr_assert(strstr(st.message, "position 2"), "%s", st.message);
	cr_assert_eq(st.n_conditions, 3);
	json_free(v);

	v = status_of("False", "Suspended", "True", "ErrImagePull", suspended, 1, 0);
	ASSERT_OK(op_k8s_service_status_view(v, 1, 1, &st), "suspended first");
	cr_assert_str_eq(st.phase, "suspended");
	json_free(v);

	v = status_of("False", "Progressing", "False", "AsExpected", "", 1, 0);
	ASSERT_OK(op_k8s_service_status_view(v, 1, 0, &st), "zero replicas");
	cr_assert_str_eq(st.phase, "stopped");
	ASSERT_OK(op_k8s_service_status_view(v, 1, 3, &st), "starting");
	cr_assert_str_eq(st.phase, "provisioning");
	json_free(v);
}

/* End to end: the provider API's get and list in Kubernetes mode show the
 * FlashService's conditions (as its watch saw them) and the phase they
 * give, in the single-node shape (status.phase, ready, message,
 * replicas_wanted, replicas_ready), not the store's "admitted". */
Test(k8s_provider, get_shows_the_flashservice_conditions_and_their_phase)
{
	struct pe e;
	struct op_response r;
	struct json_value *v;
	const struct json_value *conds;
	char *spec = test_spec("test.invalid/app:1000", 1, 1, 1), *body = NULL, id[OP_SERVICE_ID_STRLEN], path[128],
	     *list = NULL;
	bool degraded = false;

	ASSERT_OK(op_service_id("org-a", "p1", "echo", id), "id");
	cr_assert(asprintf(&list,
			   "{\"kind\":\"FlashServiceList\",\"apiVersion\":\"flash.heterocloud.io/v1alpha1\","
			   "\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[{\"apiVersion\":\"flash.heterocloud.io/v1alpha1\","
			   "\"kind\":\"FlashService\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"org-a\",\"uid\":\"uid-echo\","
			   "\"resourceVersion\":\"9\",\"generation\":1,\"finalizers\":[\"flash.heterocloud.io/usage\"],"
			   "\"labels\":{\"flash.heterocloud.io/organization\":\"org-a\",\"flash.heterocloud.io/project\":\"p1\","
			   "\"flash.heterocloud.io/service-id\":\"%s\"}},\"spec\":%s,"
			   "\"status\":{\"observedGeneration\":1,\"readyReplicas\":0,\"conditions\":["
			   "{\"type\":\"Ready\",\"status\":\"False\",\"observedGeneration\":1,\"lastTransitionTime\":"
			   "\"2026-11-30T12:00:00Z\",\"reason\":\"ErrImagePull\",\"message\":\"pull access denied\"},"
			   "{\"type\":\"Degraded\",\"status\":\"True\",\"observedGeneration\":1,\"lastTransitionTime\":"
			   "\"2026-11-30T12:00:00Z\",\"reason\":\"ErrImagePull\",\"message\":\"web-1: pull access denied\"}]}}]}",
			   id, id, spec) > 0);
	pe_open(&e, list);
	cr_assert(asprintf(&body, "{\"name\":\"echo\",\"spec\":%s}", spec) > 0);
	r = call(e.prov, e.signer, "POST", "/provider/v1/services", FLASH_AUTH_ACTION_CREATE, 1, body);
	cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
	op_response_clear(&r);
	snprintf(path, sizeof(path), "/provider/v1/services/%s", id);
	for (int i = 0; i < 250; i++) {
		struct op_service s = { .org = (char *)"org-a" };
		struct op_service_status st;

		snprintf(s.id, sizeof(s.id), "%s", id);
		if (op_k8s_run_service_status(e.run, &s, &st) == 0)
			break;
		wait_ms(20);
	}
	r = call(e.prov, e.signer, "GET", path, FLASH_AUTH_ACTION_GET, 0, NULL);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	v = k8s_test_parse(r.body);
	cr_assert_str_eq(json_string_value(json_at(v, "status.phase")) ?: "", "failed", "%s", r.body);
	cr_assert(json_at(v, "status.ready") && !json_at(v, "status.ready")->u.boolean, "%s", r.body);
	cr_assert(strstr(json_string_value(json_at(v, "status.message")) ?: "", "pull access denied"), "%s", r.body);
	conds = json_at(v, "status.conditions");
	cr_assert(conds && json_is(conds, JSON_ARRAY) && conds->u.array.n == 2, "%s", r.body);
	for (size_t i = 0; i < conds->u.array.n; i++) {
		const struct json_value *c = conds->u.array.items[i];

		if (!strcmp(json_string_value(json_get(c, "type")) ?: "", "Degraded"))
			degraded = !strcmp(json_string_value(json_get(c, "status")) ?: "", "True") &&
				   !strcmp(json_string_value(json_get(c, "reason")) ?: "", "ErrImagePull");
	}
	cr_assert(degraded, "Degraded True, ErrImagePull: %s", r.body);
	cr_assert(json_at(v, "status.replicas_wanted") && json_at(v, "status.replicas_ready"), "the single-node fields");
	json_free(v);
	op_response_clear(&r);

	r = call(e.prov, e.signer, "GET", "/provider/v1/services", FLASH_AUTH_ACTION_LIST, 0, NULL);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	cr_assert(strstr(r.body, "\"phase\":\"failed\"") && !strstr(r.body, "\"admitted\""), "list: %s", r.body);
	op_response_clear(&r);
	pe_close(&e);
	free(spec);
	free(body);
	free(list);
}
