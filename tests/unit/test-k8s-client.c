/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Kubernetes client (common/k8s.h) against the replaying fake API
 * server (tests/k8s-fake.h) on 127.0.0.1: every recorded error Status
 * parsed, the recorded exchanges replayed through each call, pagination,
 * watches and the reflector, retries with Retry-After on a fake clock,
 * bounds, token rotation, TLS with client certificates.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "helpers.h"
#include "json.h"
#include "k8s-fake.h"
#include "k8s.h"
#include "util.h"

/* ---------------------------------------------------------------- fixtures */

struct clock {
	unsigned int calls;
	uint64_t total_ms;
	unsigned int ms[16];
};

static void fake_sleep(unsigned int ms, void *userdata)
{
	struct clock *c = userdata;

	if (c->calls < ARRAY_SIZE(c->ms))
		c->ms[c->calls] = ms;
	c->calls++;
	c->total_ms += ms;
}

struct logged {
	unsigned int warnings;
	char warning[4][256];
	unsigned int infos;
};

static void on_log(enum k8s_log_level level, const char *msg, void *userdata)
{
	struct logged *l = userdata;

	if (level == K8S_LOG_WARNING) {
		if (l->warnings < ARRAY_SIZE(l->warning))
			snprintf(l->warning[l->warnings], sizeof(l->warning[0]), "%s", msg);
		l->warnings++;
	} else if (level == K8S_LOG_INFO)
		l->infos++;
}

struct env {
	struct k8s_fake *fake;
	struct k8s_client *c;
	struct clock clock;
	struct logged log;
};

static void env_open(struct env *e, const struct k8s_client_opts *extra)
{
	struct k8s_client_opts o = { .sz = sizeof(o) };
	struct k8s_config cfg = { 0 };

	memset(e, 0, sizeof(*e));
	ASSERT_OK(k8s_fake_new(NULL, &e->fake), "fake API server");
	cr_assert_geq(k8s_fake_exchanges(e->fake), 81, "the 81 recorded exchanges loaded");
	if (extra)
		o = *extra;
	o.sz = sizeof(o);
	o.sleep_ms = fake_sleep;
	o.sleep_userdata = &e->clock;
	o.log = on_log;
	o.log_userdata = &e->log;
	if (!o.request_timeout_ms)
		o.request_timeout_ms = 10000;
	cfg.server = (char *)k8s_fake_url(e->fake);
	cfg.token = (char *)"admin-token";
	ASSERT_OK(k8s_client_new(&cfg, &o, &e->c), "client");
}

static void env_close(struct env *e)
{
	k8s_client_free(e->c);
	k8s_fake_free(e->fake);
}

static struct k8s_fake_request last_request(struct env *e)
{
	struct k8s_fake_request r = { 0 };
	size_t n = k8s_fake_requests(e->fake);

	cr_assert_gt(n, 0, "a request reached the fake");
	ASSERT_OK(k8s_fake_request_get(e->fake, n - 1, &r), "request copy");
	return r;
}

static const struct k8s_ref flashservices = {
	.group = "flash.heterocloud.io", .version = "v1alpha1", .resource = "flashservices", .namespace = "flash-demo",
};

static struct k8s_ref named(struct k8s_ref r, const char *name)
{
	r.name = name;
	return r;
}

static const struct k8s_ref deployments = {
	.group = "apps", .version = "v1", .resource = "deployments", .namespace = "flash-demo",
};

/* ---------------------------------------------------------------- Status */

/* The errno the header's table gives @status (and @reason). */
static int expected_errno(int status, const char *reason, const char *message)
{
	switch (status) {
	case 400: case 415: case 422: return -EINVAL;
	case 401: return -EKEYREJECTED;
	case 403: return -EACCES;
	case 404: return -ENOENT;
	case 409: return reason && !strcmp(reason, "AlreadyExists") ? -EEXIST : -EBUSY;
	case 410: return -ESTALE;
	default: (void)message; return -EPROTO;
	}
}

Test(k8s_status, every_recorded_error_body)
{
	struct k8s_fake *f;
	unsigned int checked = 0, plain = 0;
	char nn[3];

	ASSERT_OK(k8s_fake_new(NULL, &f), "fake");
	for (int i = 1; i <= 81; i++) {
		struct k8s_status st = { 0 };
		const char *body;
		int status;

		snprintf(nn, sizeof(nn), "%02d", i);
		body = k8s_fake_exchange_body(f, nn, &status);
		cr_assert(body || status < 400, "exchange %s has a body", nn);
		if (status < 400)
			continue;
		if (body[0] != '{') {
			/* 32: the plain-text 404 of an unknown resource. */
			ASSERT_ERR(k8s_status_parse(body, strlen(body), &st), -EBADMSG, nn);
			plain++;
			continue;
		}
		ASSERT_OK(k8s_status_parse(body, strlen(body), &st), nn);
		cr_assert_eq(st.code, status, "exchange %s: Status code %d, HTTP %d", nn, st.code, status);
		cr_assert(st.reason && st.message, "exchange %s: reason and message", nn);
		ASSERT_ERR(k8s_status_errno(&st), expected_errno(status, st.reason, st.message), nn);
		for (size_t j = 0; j < st.n_causes; j++)
			cr_assert(st.causes[j].type && st.causes[j].message, "exchange %s cause %zu", nn, j);
		k8s_status_clear(&st);
		checked++;
	}
	/* 04 05 09 12 14 24(no: 200) 29 30 31 33 34 71 74 81: 13 JSON, 32 plain. */
	cr_assert_eq(checked, 13, "JSON error Status bodies: %u", checked);
	cr_assert_eq(plain, 1);
	k8s_fake_free(f);
}

static void parse_nn(struct k8s_fake *f, const char *nn, struct k8s_status *st)
{
	int status;
	const char *body = k8s_fake_exchange_body(f, nn, &status);

	cr_assert(body, "exchange %s", nn);
	ASSERT_OK(k8s_status_parse(body, strlen(body), st), nn);
}

Test(k8s_status, causes_and_details)
{
	struct k8s_status st = { 0 };
	struct k8s_fake *f;

	ASSERT_OK(k8s_fake_new(NULL, &f), "fake");
	/* 409 apply conflict: one cause per field, SSA path notation. */
	parse_nn(f, "09", &st);
	ASSERT_STREQ(st.reason, "Conflict", "09 reason");
	cr_assert_eq(st.n_causes, 2);
	ASSERT_STREQ(st.causes[0].type, "FieldManagerConflict", "09 cause type");
	ASSERT_STREQ(st.causes[0].field, ".spec.replicas", "09 field 0");
	ASSERT_STREQ(st.causes[1].field, ".spec.template.spec.containers[name=\"app\"].image", "09 field 1");
	ASSERT_STREQ(st.causes[1].message, "conflict with \"flash-operator\"", "09 manager");
	ASSERT_ERR(k8s_status_errno(&st), -EBUSY, "409");
	/* 422 with three field causes. */
	parse_nn(f, "04", &st);
	cr_assert_eq(st.code, 422);
	cr_assert_eq(st.n_causes, 3);
	ASSERT_STREQ(st.causes[0].field, "spec.ports[0].protocol", "04 field 0");
	ASSERT_STREQ(st.causes[0].type, "FieldValueNotSupported", "04 type 0");
	ASSERT_STREQ(st.causes[2].type, "FieldValueRequired", "04 type 2");
	ASSERT_STREQ(st.details_name, "fs-invalid", "04 details.name");
	ASSERT_STREQ(st.details_group, "flash.heterocloud.io", "04 details.group");
	ASSERT_STREQ(st.details_kind, "FlashService", "04 details.kind");
	parse_nn(f, "14", &st);
	ASSERT_STREQ(st.causes[0].field, "spec.ingress[0].from[0].ipBlock.cidr", "14 field");
	parse_nn(f, "71", &st);
	ASSERT_STREQ(st.causes[0].field, "eventTime", "71 field");
	/* 401, 403, 404, 415. */
	parse_nn(f, "31", &st);
	ASSERT_STREQ(st.reason, "Unauthorized", "31");
	ASSERT_ERR(k8s_status_errno(&st), -EKEYREJECTED, "401");
	parse_nn(f, "30", &st);
	ASSERT_STREQ(st.reason, "Forbidden", "30");
	ASSERT_STREQ(st.details_kind, "flashservices", "30 kind");
	parse_nn(f, "29", &st);
	ASSERT_STREQ(st.reason, "NotFound", "29");
	parse_nn(f, "33", &st);
	ASSERT_STREQ(st.reason, "UnsupportedMediaType", "33");
	cr_assert(strstr(st.message, "application/apply-patch+yaml"));
	parse_nn(f, "74", &st);
	ASSERT_STREQ(st.reason, "Conflict", "74");
	ASSERT_ERR(k8s_status_errno(&st), -EBUSY, "74");
	k8s_status_clear(&st);
	cr_assert_null(st.reason, "clear resets");
	k8s_fake_free(f);
}

Test(k8s_status, refused_shapes)
{
	struct k8s_status st = { 0 };
	static const char *const bad[] = {
		"", "[]", "{}", "{\"kind\":\"Pod\"}", "{\"kind\":\"Status\",\"code\":\"x\"}",
		"{\"kind\":\"Status\",\"code\":-1}", "{\"kind\":\"Status\",\"reason\":7}",
		"{\"kind\":\"Status\",\"details\":[]}", "{\"kind\":\"Status\",\"details\":{\"causes\":{}}}",
		"{\"kind\":\"Status\",\"details\":{\"causes\":[1]}}",
		"{\"kind\":\"Status\",\"details\":{\"causes\":[{\"field\":3}]}}",
		"{\"kind\":\"Status\",\"details\":{\"retryAfterSeconds\":-2}}",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		ASSERT_ERR(k8s_status_parse(bad[i], strlen(bad[i]), &st), -EBADMSG, bad[i]);
	{
		const char *ra = "{\"kind\":\"Status\",\"code\":429,\"details\":{\"retryAfterSeconds\":3}}";

		ASSERT_OK(k8s_status_parse(ra, strlen(ra), &st), "retryAfterSeconds");
	}
	cr_assert_eq(st.retry_after_s, 3);
	ASSERT_ERR(k8s_status_errno(&st), -EAGAIN, "429");
	k8s_status_clear(&st);
}

Test(k8s_status, typed_patch_500_is_a_client_error)
{
	struct k8s_status st = { .code = 500 };

	st.message = strdup("failed to create typed patch object (apps/v1, Kind=Deployment): .spec.replica: "
			    "field not declared in schema");
	cr_assert(k8s_status_is_typed_patch_error(&st));
	ASSERT_ERR(k8s_status_errno(&st), -EINVAL, "kubernetes#139253");
	free(st.message);
	st.message = strdup("etcdserver: request timed out");
	cr_assert(!k8s_status_is_typed_patch_error(&st));
	ASSERT_ERR(k8s_status_errno(&st), -EIO, "a real 500");
	k8s_status_clear(&st);
}

/* ---------------------------------------------------------------- paths */

Test(k8s_ref, paths)
{
	struct k8s_ref core = { .version = "v1", .resource = "pods", .namespace = "ns-1", .name = "web-1",
				.subresource = "status" };
	struct k8s_ref bad;
	char *p = NULL;

	ASSERT_OK(k8s_ref_path(&core, &p), "core");
	ASSERT_STREQ(p, "/api/v1/namespaces/ns-1/pods/web-1/status", "core path");
	free(p);
	ASSERT_OK(k8s_ref_path(&deployments, &p), "group collection");
	ASSERT_STREQ(p, "/apis/apps/v1/namespaces/flash-demo/deployments", "apps path");
	free(p);
	bad = core;
	bad.name = "../x";
	ASSERT_ERR(k8s_ref_path(&bad, &p), -EINVAL, "a name with a slash");
	bad = core;
	bad.namespace = "a/b";
	ASSERT_ERR(k8s_ref_path(&bad, &p), -EINVAL, "a namespace with a slash");
	bad = core;
	bad.name = NULL;
	ASSERT_ERR(k8s_ref_path(&bad, &p), -EINVAL, "a subresource of a collection");
	bad = core;
	bad.group = "Apps?";
	ASSERT_ERR(k8s_ref_path(&bad, &p), -EINVAL, "a bad group");
	bad = core;
	bad.resource = "Pods";
	ASSERT_ERR(k8s_ref_path(&bad, &p), -EINVAL, "an upper-case resource");
}

/* ---------------------------------------------------------------- replays */

static int create_nn(struct env *e, const char *nn, const struct k8s_write_opts *wo, struct json_value **obj,
		     struct k8s_status *st)
{
	const char *body = k8s_fake_exchange_request_body(e->fake, nn);

	cr_assert(body, "exchange %s has a request body", nn);
	return k8s_create(e->c, &flashservices, body, strlen(body), wo, obj, st);
}

Test(k8s_client, create_valid_invalid_and_warnings)
{
	struct k8s_status st = { 0 };
	struct json_value *obj = NULL;
	struct k8s_fake_request r;
	struct env e;

	env_open(&e, NULL);
	ASSERT_OK(create_nn(&e, "03", NULL, &obj, &st), "03 valid create");
	cr_assert_eq(st.code, 201);
	ASSERT_STREQ(json_string_value(json_at(obj, "metadata.name")), "fs-web", "created object");
	json_free(obj);
	r = last_request(&e);
	ASSERT_STREQ(r.exchange, "03", "served 03");
	ASSERT_STREQ(r.content_type, "application/json", "create content type");
	ASSERT_STREQ(r.authorization, "Bearer admin-token", "bearer token");
	ASSERT_STREQ(r.method, "POST", "POST");
	k8s_fake_request_clear(&r);

	obj = NULL;
	ASSERT_ERR(create_nn(&e, "04", NULL, &obj, &st), -EINVAL, "04 invalid create");
	cr_assert_null(obj, "no object on failure");
	cr_assert_eq(st.code, 422);
	cr_assert_eq(st.n_causes, 3);
	ASSERT_STREQ(st.causes[1].field, "spec.replicas", "422 cause field");

	/* 06: two Warning headers, each reaching the log callback. */
	ASSERT_OK(create_nn(&e, "06", NULL, NULL, &st), "06 create with unknown fields");
	cr_assert_eq(e.log.warnings, 2, "warnings logged: %u", e.log.warnings);
	ASSERT_STREQ(e.log.warning[0], "299 - \"unknown field \\\"spec.ports[0].hostPort\\\"\"", "warning 0");
	ASSERT_STREQ(e.log.warning[1], "299 - \"unknown field \\\"spec.replica\\\"\"", "warning 1");

	/* 05: Strict field validation is sent as fieldValidation=Strict: 400. */
	{
		struct k8s_write_opts wo = { .sz = sizeof(wo), .field_validation = "Strict" };

		ASSERT_ERR(create_nn(&e, "05", &wo, NULL, &st), -EINVAL, "05 strict");
		cr_assert_eq(st.code, 400);
		ASSERT_STREQ(st.reason, "BadRequest", "05 reason");
	}
	cr_assert_eq(k8s_fake_unmatched(e.fake), 0);
	k8s_status_clear(&st);
	env_close(&e);
}

static int apply_nn(struct env *e, const char *nn, const struct k8s_ref *ref, const char *manager, bool force,
		    struct k8s_status *st)
{
	const char *body = k8s_fake_exchange_request_body(e->fake, nn);
	struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = manager, .force = force };

	cr_assert(body, "exchange %s body", nn);
	return k8s_apply(e->c, ref, body, strlen(body), &wo, NULL, st);
}

Test(k8s_client, server_side_apply)
{
	struct k8s_ref dep = named(deployments, "fs-web");
	struct k8s_status st = { 0 };
	struct k8s_fake_request r;
	char buf[64];
	struct env e;

	env_open(&e, NULL);
	ASSERT_OK(apply_nn(&e, "07", &dep, "flash-operator", false, &st), "07 first apply");
	cr_assert_eq(st.code, 201, "a first apply creates");
	r = last_request(&e);
	ASSERT_STREQ(r.content_type, "application/apply-patch+yaml", "SSA content type");
	ASSERT_STREQ(r.method, "PATCH", "SSA method");
	ASSERT_STREQ(k8s_fake_query_arg(&r, "fieldManager", buf, sizeof(buf)), "flash-operator", "fieldManager");
	cr_assert_null(k8s_fake_query_arg(&r, "force", buf, sizeof(buf)), "no force unless asked");
	k8s_fake_request_clear(&r);
	ASSERT_OK(apply_nn(&e, "08", &dep, "flash-operator", false, &st), "08 identical apply");
	cr_assert_eq(st.code, 200);
	r = last_request(&e);
	ASSERT_STREQ(r.exchange, "08", "the second identical apply is 08");
	k8s_fake_request_clear(&r);

	/* 09: another manager: 409 with the conflicting fields. */
	ASSERT_ERR(apply_nn(&e, "09", &dep, "flash-admin", false, &st), -EBUSY, "09 conflict");
	cr_assert_eq(st.code, 409);
	cr_assert_eq(st.n_causes, 2);
	ASSERT_STREQ(st.causes[0].field, ".spec.replicas", "conflict field");
	cr_assert(strstr(st.causes[0].message, "flash-operator"), "the manager named");
	cr_assert_eq(k8s_fake_requests(e.fake), 3, "a 409 is not retried");
	/* 10: force=true takes the fields. */
	ASSERT_OK(apply_nn(&e, "10", &dep, "flash-admin", true, &st), "10 forced apply");
	r = last_request(&e);
	ASSERT_STREQ(k8s_fake_query_arg(&r, "force", buf, sizeof(buf)), "true", "force sent");
	ASSERT_STREQ(r.exchange, "10", "10 served");
	k8s_fake_request_clear(&r);

	/* 11 then 12: a changed loadBalancerClass is refused (422). */
	{
		struct k8s_ref svc = { .version = "v1", .resource = "services", .namespace = "flash-demo",
				       .name = "fs-web" };

		ASSERT_OK(apply_nn(&e, "11", &svc, "flash-operator", false, &st), "11");
		ASSERT_ERR(apply_nn(&e, "12", &svc, "flash-operator", false, &st), -EINVAL, "12");
		ASSERT_STREQ(st.causes[0].field, "spec.loadBalancerClass", "12 field");
	}
	/* A field manager is required for an apply. */
	{
		struct k8s_write_opts wo = { .sz = sizeof(wo) };

		ASSERT_ERR(k8s_apply(e.c, &dep, "{}", 2, &wo, NULL, &st), -EINVAL, "apply without a manager");
	}
	cr_assert_eq(k8s_fake_unmatched(e.fake), 0);
	k8s_status_clear(&st);
	env_close(&e);
}

Test(k8s_client, patches_and_status)
{
	struct k8s_status st = { 0 };
	struct json_value *obj = NULL;
	struct k8s_fake_request r;
	struct env e;
	static const struct {
		const char *nn;
		struct k8s_ref ref;
		enum k8s_patch_type type;
		const char *ctype;
	} cases[] = {
		{ "16", { "flash.heterocloud.io", "v1alpha1", "flashservices", "flash-demo", "fs-web", "status" },
		  K8S_PATCH_MERGE, "application/merge-patch+json" },
		{ "28", { "flash.heterocloud.io", "v1alpha1", "flashservices", "flash-demo", "fs-cleanup", NULL },
		  K8S_PATCH_JSON, "application/json-patch+json" },
		{ "44", { NULL, "v1", "nodes", NULL, "node-a", NULL }, K8S_PATCH_MERGE, "application/merge-patch+json" },
		{ "45", { NULL, "v1", "nodes", NULL, "node-a", "status" }, K8S_PATCH_STRATEGIC,
		  "application/strategic-merge-patch+json" },
		{ "63", { "discovery.k8s.io", "v1", "endpointslices", "flowsdn-demo", "web-local-manual", NULL },
		  K8S_PATCH_JSON, "application/json-patch+json" },
		{ "75", { NULL, "v1", "pods", "flowsdn-demo", "web-2", NULL }, K8S_PATCH_STRATEGIC,
		  "application/strategic-merge-patch+json" },
	};

	env_open(&e, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *body = k8s_fake_exchange_request_body(e.fake, cases[i].nn);

		obj = NULL;
		ASSERT_OK(k8s_patch(e.c, &cases[i].ref, cases[i].type, body, strlen(body), NULL, &obj, &st), cases[i].nn);
		cr_assert(json_is(obj, JSON_OBJECT), "%s: the patched object", cases[i].nn);
		json_free(obj);
		r = last_request(&e);
		ASSERT_STREQ(r.exchange, cases[i].nn, "served");
		ASSERT_STREQ(r.content_type, cases[i].ctype, cases[i].nn);
		k8s_fake_request_clear(&r);
	}
	/* 76 (merge) shares 75's path: its body picks it. */
	{
		struct k8s_ref pod = { NULL, "v1", "pods", "flowsdn-demo", "web-2", NULL };
		const char *body = k8s_fake_exchange_request_body(e.fake, "76");

		ASSERT_OK(k8s_patch(e.c, &pod, K8S_PATCH_MERGE, body, strlen(body), NULL, NULL, &st), "76");
		r = last_request(&e);
		ASSERT_STREQ(r.exchange, "76", "76 by its body");
		k8s_fake_request_clear(&r);
	}
	/* force belongs to apply only. */
	{
		struct k8s_write_opts wo = { .sz = sizeof(wo), .force = true };

		ASSERT_ERR(k8s_patch(e.c, &cases[0].ref, K8S_PATCH_MERGE, "{}", 2, &wo, NULL, &st), -EINVAL, "force");
		ASSERT_ERR(k8s_patch(e.c, &cases[0].ref, 9, "{}", 2, NULL, NULL, &st), -EINVAL, "patch type");
	}
	/* k8s_status_write: server-side apply of /status. */
	{
		struct k8s_ref fs = named(flashservices, "fs-web");
		struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = "flash-operator" };
		char buf[64];

		k8s_fake_push(e.fake, &(struct k8s_fake_step){ .method = "PATCH", .exchange = "16" });
		ASSERT_OK(k8s_status_write(e.c, &fs, "{\"status\":{}}", 13, &wo, NULL, &st), "status write");
		r = last_request(&e);
		ASSERT_STREQ(r.path, "/apis/flash.heterocloud.io/v1alpha1/namespaces/flash-demo/flashservices/fs-web/status",
			     "status subresource");
		ASSERT_STREQ(r.content_type, "application/apply-patch+yaml", "status by SSA");
		ASSERT_STREQ(k8s_fake_query_arg(&r, "fieldManager", buf, sizeof(buf)), "flash-operator", "manager");
		k8s_fake_request_clear(&r);
	}
	cr_assert_eq(k8s_fake_unmatched(e.fake), 0);
	k8s_status_clear(&st);
	env_close(&e);
}

Test(k8s_client, get_delete_replace)
{
	struct k8s_status st = { 0 };
	struct json_value *obj = NULL;
	struct k8s_fake_request r;
	char buf[64];
	struct env e;

	env_open(&e, NULL);
	{
		struct k8s_ref crd = { "apiextensions.k8s.io", "v1", "customresourcedefinitions", NULL,
				       "flashservices.flash.heterocloud.io", NULL };

		ASSERT_OK(k8s_get(e.c, &crd, &obj, &st), "02 CRD");
		ASSERT_STREQ(json_string_value(json_at(obj, "status.conditions[0].type")), "NamesAccepted", "conditions");
		json_free(obj);
	}
	/* 27 then 29 share a path: the first GET sees the object terminating,
	 * the second finds it gone. */
	{
		struct k8s_ref fs = named(flashservices, "fs-cleanup");

		ASSERT_OK(k8s_get(e.c, &fs, &obj, &st), "27 terminating");
		cr_assert(json_at(obj, "metadata.deletionTimestamp"), "27 has a deletionTimestamp");
		json_free(obj);
		obj = NULL;
		ASSERT_ERR(k8s_get(e.c, &fs, &obj, &st), -ENOENT, "29 gone");
		cr_assert_null(obj);
	}
	ASSERT_STREQ(st.reason, "NotFound", "29 reason");
	/* 32: an unknown resource answers plain text. */
	ASSERT_ERR(k8s_get(e.c, &(struct k8s_ref){ "flash.heterocloud.io", "v1alpha1", "flashwidgets", "flash-demo",
						   "x", NULL }, &obj, &st), -ENOENT, "32");
	cr_assert_eq(k8s_fake_unmatched(e.fake), 1, "32's path has a name, the recording none: unmatched");
	/* The recorded 32 itself. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .exchange = "32" });
	ASSERT_ERR(k8s_get(e.c, &(struct k8s_ref){ "flash.heterocloud.io", "v1alpha1", "flashwidgets", "flash-demo",
						   "x", NULL }, &obj, &st), -ENOENT, "32 scripted");
	ASSERT_STREQ(st.message, "404 page not found", "the plain-text body's line");
	cr_assert_eq(st.code, 404);

	ASSERT_OK(k8s_delete(e.c, &(struct k8s_ref){ "flash.heterocloud.io", "v1alpha1", "flashservices", "flash-demo",
						     "fs-watch", NULL }, NULL, NULL, &st), "23 delete");
	{
		struct k8s_delete_opts d = { .sz = sizeof(d), .propagation_policy = "Foreground",
					     .grace_period_seconds = -1 };

		obj = NULL;
		ASSERT_OK(k8s_delete(e.c, &(struct k8s_ref){ "flash.heterocloud.io", "v1alpha1", "flashservices",
							     "flash-demo", "fs-cleanup", NULL }, &d, &obj, &st), "26");
		cr_assert(json_at(obj, "metadata.deletionTimestamp"), "26: kept by its finalizer");
		json_free(obj);
		r = last_request(&e);
		ASSERT_STREQ(r.exchange, "26", "26 served");
		ASSERT_STREQ(k8s_fake_query_arg(&r, "propagationPolicy", buf, sizeof(buf)), "Foreground", "policy");
		k8s_fake_request_clear(&r);
		d.propagation_policy = "Sideways";
		ASSERT_ERR(k8s_delete(e.c, &(struct k8s_ref){ NULL, "v1", "pods", "x", "y", NULL }, &d, NULL, &st), -EINVAL,
			   "unknown policy");
	}
	{
		struct k8s_ref pod = { NULL, "v1", "pods", "flowsdn-demo", "web-1", NULL };
		struct k8s_delete_opts d = { .sz = sizeof(d), .grace_period_seconds = 0 };

		ASSERT_OK(k8s_delete(e.c, &pod, &d, NULL, &st), "51 forced");
		r = last_request(&e);
		ASSERT_STREQ(r.exchange, "51", "51 served");
		ASSERT_STREQ(k8s_fake_query_arg(&r, "gracePeriodSeconds", buf, sizeof(buf)), "0", "grace 0");
		k8s_fake_request_clear(&r);
	}
	/* PUT: 73 renews, 74 (same path, its own body) is a stale conflict. */
	{
		struct k8s_ref lease = { "coordination.k8s.io", "v1", "leases", "flash-system", "flash-operator", NULL };
		const char *b73 = k8s_fake_exchange_request_body(e.fake, "73");
		const char *b74 = k8s_fake_exchange_request_body(e.fake, "74");

		ASSERT_OK(k8s_replace(e.c, &lease, b73, strlen(b73), NULL, NULL, &st), "73 renew");
		ASSERT_ERR(k8s_replace(e.c, &lease, b74, strlen(b74), NULL, NULL, &st), -EBUSY, "74 stale");
		ASSERT_STREQ(st.reason, "Conflict", "74 reason");
		r = last_request(&e);
		ASSERT_STREQ(r.method, "PUT", "PUT");
		k8s_fake_request_clear(&r);
	}
	cr_assert_eq(k8s_fake_unmatched(e.fake), 1);
	k8s_status_clear(&st);
	env_close(&e);
}

Test(k8s_client, unauthorized_and_forbidden)
{
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .token = "right" };
	struct k8s_config cfg = { .token = (char *)"wrong" };
	struct k8s_status st = { 0 };
	struct k8s_client *c;
	struct k8s_fake *f;

	ASSERT_OK(k8s_fake_new(&fo, &f), "fake with a token");
	cfg.server = (char *)k8s_fake_url(f);
	ASSERT_OK(k8s_client_new(&cfg, NULL, &c), "client");
	ASSERT_ERR(k8s_get(c, &(struct k8s_ref){ NULL, "v1", "nodes", NULL, "node-a", NULL }, NULL, &st), -EKEYREJECTED,
		   "31: a wrong token");
	cr_assert_eq(st.code, 401);
	ASSERT_STREQ(st.reason, "Unauthorized", "401 reason");
	cr_assert_eq(k8s_fake_requests(f), 1, "a 401 is not retried");
	k8s_fake_push(f, &(struct k8s_fake_step){ .exchange = "30" });
	ASSERT_ERR(k8s_get(c, &(struct k8s_ref){ NULL, "v1", "nodes", NULL, "node-a", NULL }, NULL, &st), -EACCES,
		   "30: forbidden");
	cr_assert(strstr(st.message, "cannot list resource"), "the RBAC message kept");
	k8s_status_clear(&st);
	k8s_client_free(c);
	k8s_fake_free(f);
}

/* ---------------------------------------------------------------- lists */

struct items {
	unsigned int n;
	char names[16][64];
};

static int collect_item(const struct json_value *item, void *userdata)
{
	struct items *it = userdata;
	const char *name = json_string_value(json_at(item, "metadata.name"));

	if (it->n < ARRAY_SIZE(it->names))
		snprintf(it->names[it->n], sizeof(it->names[0]), "%s", name ? name : "?");
	it->n++;
	return 0;
}

static int stop_item(const struct json_value *item, void *userdata)
{
	(void)item, (void)userdata;
	return 42;
}

Test(k8s_client, list_pagination)
{
	struct k8s_list_opts lo = { .sz = sizeof(lo), .limit = 2 };
	struct k8s_status st = { 0 };
	struct items it = { 0 };
	struct k8s_fake_request r;
	char *rv = NULL, buf[256];
	struct env e;

	env_open(&e, NULL);
	ASSERT_OK(k8s_list(e.c, &flashservices, &lo, collect_item, &it, &rv, &st), "18-20");
	cr_assert_eq(it.n, 5, "five FlashServices over three pages: %u", it.n);
	ASSERT_STREQ(it.names[0], "fs-lenient", "key order");
	ASSERT_STREQ(it.names[4], "fs-web", "last item");
	ASSERT_STREQ(rv, "280", "the list's resourceVersion");
	free(rv);
	cr_assert_eq(k8s_fake_requests(e.fake), 3);
	ASSERT_OK(k8s_fake_request_get(e.fake, 1, &r), "page 2");
	ASSERT_STREQ(r.exchange, "19", "page 2 is 19");
	ASSERT_STREQ(k8s_fake_query_arg(&r, "continue", buf, sizeof(buf)),
		     "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjgwLCJzdGFydCI6Ii9mcy1wYWdlLTFcdTAwMDAifQ", "continue token");
	cr_assert_null(k8s_fake_query_arg(&r, "resourceVersion", buf, sizeof(buf)), "no version with continue");
	k8s_fake_request_clear(&r);
	ASSERT_OK(k8s_fake_request_get(e.fake, 2, &r), "page 3");
	ASSERT_STREQ(r.exchange, "20", "page 3 is 20");
	k8s_fake_request_clear(&r);

	/* 21: resourceVersion=0 (served from the watch cache). */
	memset(&it, 0, sizeof(it));
	lo = (struct k8s_list_opts){ .sz = sizeof(lo), .resource_version = "0" };
	ASSERT_OK(k8s_list(e.c, &flashservices, &lo, collect_item, &it, NULL, &st), "21");
	cr_assert_eq(it.n, 5);
	r = last_request(&e);
	ASSERT_STREQ(r.exchange, "21", "21 served");
	ASSERT_STREQ(k8s_fake_query_arg(&r, "limit", buf, sizeof(buf)), "500", "default page size");
	k8s_fake_request_clear(&r);

	/* Label selectors are escaped and sent (59). */
	memset(&it, 0, sizeof(it));
	lo = (struct k8s_list_opts){ .sz = sizeof(lo), .label_selector = "kubernetes.io/service-name=web" };
	ASSERT_OK(k8s_list(e.c, &(struct k8s_ref){ "discovery.k8s.io", "v1", "endpointslices", "flowsdn-demo", NULL, NULL },
			   &lo, collect_item, &it, NULL, &st), "59");
	r = last_request(&e);
	ASSERT_STREQ(r.exchange, "59", "59 served");
	k8s_fake_request_clear(&r);
	cr_assert_gt(it.n, 0);
	/* A callback's nonzero value stops the list and is returned. */
	lo = (struct k8s_list_opts){ .sz = sizeof(lo), .limit = 2 };
	k8s_fake_reset_requests(e.fake);
	cr_assert_eq(k8s_list(e.c, &flashservices, &lo, stop_item, NULL, NULL, &st), 42);
	cr_assert_eq(k8s_fake_unmatched(e.fake), 0);
	k8s_status_clear(&st);
	env_close(&e);
}

/* ---------------------------------------------------------------- watches */

struct events {
	unsigned int n;
	enum k8s_event_type type[64];
	char rv[64][16];
	char name[64][64];
	int stop_after;             /* return 7 after this many events (0: never) */
};

static int collect_event(const struct k8s_event *ev, void *userdata)
{
	struct events *es = userdata;
	const char *name = ev->object ? json_string_value(json_at(ev->object, "metadata.name")) : NULL;

	if (es->n < ARRAY_SIZE(es->type)) {
		es->type[es->n] = ev->type;
		snprintf(es->rv[es->n], sizeof(es->rv[0]), "%s", ev->resource_version ? ev->resource_version : "");
		snprintf(es->name[es->n], sizeof(es->name[0]), "%s", name ? name : "");
	}
	es->n++;
	return es->stop_after && (int)es->n >= es->stop_after ? 7 : 0;
}

static void watch_replay(const char *nn, const struct k8s_ref *ref, const char *rv0, const char *label,
			 const char *field, unsigned int expect, const char *rv_end)
{
	struct k8s_watch_opts wo = { .sz = sizeof(wo), .label_selector = label, .field_selector = field };
	struct k8s_status st = { 0 };
	struct events es = { 0 };
	struct k8s_fake_request r;
	char *rv = strdup(rv0), buf[128];
	struct env e;

	env_open(&e, NULL);
	ASSERT_OK(k8s_watch_once(e.c, ref, &wo, &rv, collect_event, &es, &st), nn);
	cr_assert_eq(es.n, expect, "%s: %u events", nn, es.n);
	ASSERT_STREQ(rv, rv_end, "the last version seen");
	ASSERT_STREQ(es.rv[es.n - 1], rv_end, "the last event's version");
	r = last_request(&e);
	ASSERT_STREQ(r.exchange, nn, "served");
	ASSERT_STREQ(k8s_fake_query_arg(&r, "watch", buf, sizeof(buf)), "1", "watch=1");
	ASSERT_STREQ(k8s_fake_query_arg(&r, "allowWatchBookmarks", buf, sizeof(buf)), "true", "bookmarks asked");
	ASSERT_STREQ(k8s_fake_query_arg(&r, "resourceVersion", buf, sizeof(buf)), rv0, "from the version given");
	k8s_fake_request_clear(&r);
	free(rv);
	k8s_status_clear(&st);
	env_close(&e);
}

Test(k8s_watch, replays)
{
	/* 22: ADDED, MODIFIED, MODIFIED, DELETED, BOOKMARK. */
	watch_replay("22", &flashservices, "280", NULL, NULL, 5, "284");
	watch_replay("43", &(struct k8s_ref){ NULL, "v1", "nodes", NULL, NULL, NULL }, "232", NULL,
		     "metadata.name=node-a", 3, "236");
	watch_replay("46", &(struct k8s_ref){ NULL, "v1", "pods", NULL, NULL, NULL }, "237", NULL,
		     "spec.nodeName=node-a", 6, "244");
	/* 61 and 66 end with the same BOOKMARK twice: delivered once. */
	watch_replay("61", &(struct k8s_ref){ "discovery.k8s.io", "v1", "endpointslices", "flowsdn-demo", NULL, NULL },
		     "267", "kubernetes.io/service-name=web-local", NULL, 5, "279");
	watch_replay("66", &(struct k8s_ref){ "networking.k8s.io", "v1", "networkpolicies", NULL, NULL, NULL }, "284",
		     NULL, NULL, 3, "287");
}

Test(k8s_watch, types_of_22)
{
	struct k8s_watch_opts wo = { .sz = sizeof(wo) };
	struct k8s_status st = { 0 };
	struct events es = { 0 };
	char *rv = strdup("280");
	struct env e;
	static const enum k8s_event_type want[] = {
		K8S_EVENT_ADDED, K8S_EVENT_MODIFIED, K8S_EVENT_MODIFIED, K8S_EVENT_DELETED, K8S_EVENT_BOOKMARK,
	};

	env_open(&e, NULL);
	ASSERT_OK(k8s_watch_once(e.c, &flashservices, &wo, &rv, collect_event, &es, &st), "22");
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		cr_assert_eq(es.type[i], want[i], "event %zu", i);
	ASSERT_STREQ(es.name[0], "fs-watch", "the object");
	free(rv);
	env_close(&e);
}

Test(k8s_watch, too_old_410)
{
	struct k8s_watch_opts wo = { .sz = sizeof(wo), .no_bookmarks = true };
	struct k8s_status st = { 0 };
	struct events es = { 0 };
	char *rv = strdup("1");
	struct env e;

	env_open(&e, NULL);
	ASSERT_ERR(k8s_watch_once(e.c, &flashservices, &wo, &rv, collect_event, &es, &st), -ESTALE, "24");
	cr_assert_eq(st.code, 410);
	ASSERT_STREQ(st.reason, "Expired", "410 reason");
	ASSERT_STREQ(st.message, "too old resource version: 1 (232)", "410 message");
	cr_assert_eq(es.n, 0);
	ASSERT_STREQ(rv, "1", "the version is kept");
	free(rv);
	k8s_status_clear(&st);
	env_close(&e);
}

#define EV(type, name, rv) \
	"{\"type\":\"" type "\",\"object\":{\"kind\":\"FlashService\",\"metadata\":{\"name\":\"" name \
	"\",\"uid\":\"u-" name "\",\"resourceVersion\":\"" rv "\"}}}"
#define BOOKMARK(rv) "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"FlashService\",\"metadata\":{\"resourceVersion\":\"" rv "\"}}}"
#define GONE "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 300 (400)\",\"reason\":\"Expired\",\"code\":410}}"

static const char *const seq_bookmark_410[] = { EV("ADDED", "a", "301"), BOOKMARK("305"), GONE };

Test(k8s_watch, reflector_relists_after_410)
{
	struct k8s_watch_opts wo = { .sz = sizeof(wo), .max_streams = 2 };
	struct k8s_status st = { 0 };
	struct events es = { 0 };
	struct k8s_fake_request r;
	const char *path = "/apis/flash.heterocloud.io/v1alpha1/namespaces/flash-demo/flashservices";
	char buf[64];
	struct env e;

	env_open(&e, NULL);
	/* list (21: 5 items, rv 280), a stream with a bookmark then 410, list
	 * again, 22's stream (two streams in all). */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .path = path, .exchange = "21" });
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .path = path, .events = seq_bookmark_410, .n_events = 3 });
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .path = path, .exchange = "21" });
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .path = path, .exchange = "22" });
	ASSERT_OK(k8s_watch(e.c, &flashservices, &wo, collect_event, &es, &st), "reflector");
	/* RELIST, 5 ADDED, SYNCED, ADDED, BOOKMARK | RELIST, 5 ADDED, SYNCED, 22's 5 */
	cr_assert_eq(es.n, 7 + 2 + 7 + 5, "events: %u", es.n);
	cr_assert_eq(es.type[0], K8S_EVENT_RELIST);
	cr_assert_eq(es.type[6], K8S_EVENT_SYNCED);
	ASSERT_STREQ(es.rv[6], "280", "SYNCED carries the list's version");
	cr_assert_eq(es.type[8], K8S_EVENT_BOOKMARK);
	ASSERT_STREQ(es.rv[8], "305", "the bookmark's version kept");
	cr_assert_eq(es.type[9], K8S_EVENT_RELIST, "410 lists again");
	cr_assert_eq(es.type[15], K8S_EVENT_SYNCED);
	cr_assert_eq(es.type[20], K8S_EVENT_BOOKMARK);
	cr_assert_eq(k8s_fake_requests(e.fake), 4);
	ASSERT_OK(k8s_fake_request_get(e.fake, 1, &r), "first watch");
	ASSERT_STREQ(k8s_fake_query_arg(&r, "resourceVersion", buf, sizeof(buf)), "280", "watch from the list");
	ASSERT_STREQ(k8s_fake_query_arg(&r, "timeoutSeconds", buf, sizeof(buf)), "300", "timeoutSeconds");
	k8s_fake_request_clear(&r);
	ASSERT_OK(k8s_fake_request_get(e.fake, 2, &r), "relist");
	cr_assert_null(k8s_fake_query_arg(&r, "watch", buf, sizeof(buf)), "a list, not a watch");
	k8s_fake_request_clear(&r);
	cr_assert_eq(e.log.infos, 1, "the relist is logged");
	k8s_status_clear(&st);
	env_close(&e);
}

static const char *const seq_cut[] = { EV("ADDED", "a", "401"), EV("MODIFIED", "a", "402"), EV("MODIFIED", "a", "403") };
static const char *const seq_dup[] = { EV("ADDED", "b", "501"), EV("ADDED", "b", "501"), EV("MODIFIED", "b", "502"),
				       EV("MODIFIED", "b", "502"), BOOKMARK("503"), BOOKMARK("503") };

Test(k8s_watch, cut_resumes_from_the_last_version)
{
	struct k8s_watch_opts wo = { .sz = sizeof(wo), .resource_version = "400", .max_streams = 2 };
	struct k8s_status st = { 0 };
	struct events es = { 0 };
	struct k8s_fake_request r;
	const char *path = "/apis/flash.heterocloud.io/v1alpha1/namespaces/flash-demo/flashservices";
	size_t cut = strlen(seq_cut[0]) + 1 + strlen(seq_cut[1]) + 1 + 20;
	char buf[64];
	struct env e;

	env_open(&e, NULL);
	/* Cut 20 bytes into the third event. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .path = path, .events = seq_cut, .n_events = 3, .cut = true,
						      .cut_after = cut });
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .path = path, .events = seq_dup, .n_events = 6 });
	ASSERT_OK(k8s_watch(e.c, &flashservices, &wo, collect_event, &es, &st), "cut then resume");
	/* 2 before the cut; then ADDED, MODIFIED, BOOKMARK (duplicates dropped). */
	cr_assert_eq(es.n, 5, "events: %u", es.n);
	ASSERT_STREQ(es.rv[1], "402", "the half event is not delivered");
	ASSERT_STREQ(es.rv[4], "503", "bookmark");
	ASSERT_OK(k8s_fake_request_get(e.fake, 1, &r), "the resumed watch");
	ASSERT_STREQ(k8s_fake_query_arg(&r, "resourceVersion", buf, sizeof(buf)), "402", "resumed from 402");
	k8s_fake_request_clear(&r);
	cr_assert_eq(e.clock.calls, 1, "one backoff after the cut");
	cr_assert(e.clock.ms[0] >= 125 && e.clock.ms[0] <= 250, "backoff %u ms", e.clock.ms[0]);
	/* watch_once reports the cut itself. */
	{
		char *rv = strdup("400");

		k8s_fake_push(e.fake, &(struct k8s_fake_step){ .path = path, .events = seq_cut, .n_events = 3,
							      .cut = true, .cut_after = cut });
		memset(&es, 0, sizeof(es));
		ASSERT_ERR(k8s_watch_once(e.c, &flashservices, &wo, &rv, collect_event, &es, &st), -ECONNRESET, "cut");
		ASSERT_STREQ(rv, "402", "the version before the cut");
		free(rv);
	}
	k8s_status_clear(&st);
	env_close(&e);
}

Test(k8s_watch, callback_stops)
{
	struct k8s_watch_opts wo = { .sz = sizeof(wo), .resource_version = "280" };
	struct k8s_status st = { 0 };
	struct events es = { .stop_after = 2 };
	struct env e;

	env_open(&e, NULL);
	cr_assert_eq(k8s_watch(e.c, &flashservices, &wo, collect_event, &es, &st), 7, "the callback's value");
	cr_assert_eq(es.n, 2);
	env_close(&e);
}

Test(k8s_watch, idle_timeout)
{
	struct k8s_client_opts o = { .sz = sizeof(o), .watch_idle_ms = 300 };
	struct k8s_watch_opts wo = { .sz = sizeof(wo) };
	struct k8s_status st = { 0 };
	struct events es = { 0 };
	char *rv = strdup("400");
	struct env e;

	env_open(&e, &o);
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .events = seq_cut, .n_events = 1, .hang_ms = 3000 });
	ASSERT_ERR(k8s_watch_once(e.c, &flashservices, &wo, &rv, collect_event, &es, &st), -ETIMEDOUT, "idle");
	cr_assert_eq(es.n, 1);
	ASSERT_STREQ(rv, "401", "version before the silence");
	free(rv);
	k8s_status_clear(&st);
	env_close(&e);
}

Test(k8s_watch, line_bound)
{
	struct k8s_client_opts o = { .sz = sizeof(o), .max_watch_line = 256 };
	struct k8s_watch_opts wo = { .sz = sizeof(wo) };
	struct k8s_status st = { 0 };
	struct events es = { 0 };
	char *rv = strdup("280");
	struct env e;

	env_open(&e, &o);
	/* 22's events carry managedFields: each is over 256 bytes. */
	ASSERT_ERR(k8s_watch_once(e.c, &flashservices, &wo, &rv, collect_event, &es, &st), -EMSGSIZE, "line bound");
	cr_assert_eq(es.n, 0);
	cr_assert(strstr(st.message, "size bound"), "message: %s", st.message);
	free(rv);
	k8s_status_clear(&st);
	env_close(&e);
}

Test(k8s_watch, parse_line)
{
	struct k8s_status st = { 0 };
	struct json_value *root = NULL;
	enum k8s_event_type t;
	static const char *const bad[] = {
		"", "{}", "[1]", "{\"type\":\"ADDED\"}", "{\"type\":\"ADDED\",\"object\":{}}",
		"{\"type\":\"RENAMED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}",
		"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Pod\"}}", "{\"type\":7,\"object\":{}}",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		ASSERT_ERR(k8s_watch_parse_line(bad[i], strlen(bad[i]), 0, &t, &root, &st), -EBADMSG, bad[i]);
	ASSERT_ERR(k8s_watch_parse_line(GONE, strlen(GONE), 0, &t, &root, &st), -ESTALE, "ERROR 410");
	cr_assert_eq(st.code, 410);
	ASSERT_ERR(k8s_watch_parse_line(EV("ADDED", "a", "1"), strlen(EV("ADDED", "a", "1")), 16, &t, &root, &st),
		   -EMSGSIZE, "bound");
	ASSERT_OK(k8s_watch_parse_line(EV("DELETED", "a", "9"), strlen(EV("DELETED", "a", "9")), 0, &t, &root, &st),
		  "DELETED");
	cr_assert_eq(t, K8S_EVENT_DELETED);
	ASSERT_STREQ(json_string_value(json_at(root, "object.metadata.resourceVersion")), "9", "object");
	json_free(root);
	k8s_status_clear(&st);
}

/* ---------------------------------------------------------------- retries */

static const struct k8s_ref node_a = { NULL, "v1", "nodes", NULL, "node-a", NULL };

Test(k8s_retry, retry_after_429)
{
	struct k8s_status st = { 0 };
	struct json_value *obj = NULL;
	struct env e;

	env_open(&e, NULL);
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .status = 429, .headers = "Retry-After: 2",
						      .body = "{\"kind\":\"Status\",\"code\":429,\"reason\":\"TooManyRequests\"}" });
	ASSERT_OK(k8s_get(e.c, &node_a, &obj, &st), "429 then 41");
	ASSERT_STREQ(json_string_value(json_at(obj, "metadata.name")), "node-a", "41's node");
	json_free(obj);
	cr_assert_eq(k8s_fake_requests(e.fake), 2);
	cr_assert_eq(e.clock.calls, 1);
	cr_assert_eq(e.clock.ms[0], 2000, "Retry-After honoured exactly: %u ms", e.clock.ms[0]);
	/* A POST is retried after a 429 too: the server did nothing. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .status = 429, .headers = "Retry-After: 1", .body = "{}" });
	ASSERT_OK(create_nn(&e, "03", NULL, NULL, &st), "POST after 429");
	cr_assert_eq(k8s_fake_requests(e.fake), 4);
	cr_assert_eq(e.clock.ms[1], 1000);
	/* Retry-After is bounded by backoff_max_ms. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .status = 429, .headers = "Retry-After: 86400", .body = "{}" });
	ASSERT_OK(k8s_get(e.c, &node_a, NULL, &st), "huge Retry-After");
	cr_assert_eq(e.clock.ms[2], 30000, "bounded: %u", e.clock.ms[2]);
	env_close(&e);
}

Test(k8s_retry, server_errors)
{
	struct k8s_client_opts o = { .sz = sizeof(o), .max_attempts = 4, .backoff_ms = 100, .backoff_max_ms = 1000 };
	struct k8s_status st = { 0 };
	struct env e;

	env_open(&e, &o);
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .status = 500, .body = "{\"kind\":\"Status\",\"code\":500,\"message\":\"etcd\"}" });
	ASSERT_OK(k8s_get(e.c, &node_a, NULL, &st), "500 then 200");
	cr_assert_eq(k8s_fake_requests(e.fake), 2);
	cr_assert(e.clock.ms[0] >= 50 && e.clock.ms[0] <= 100, "first delay %u in [50, 100]", e.clock.ms[0]);
	/* Exhausted: 4 attempts, delays doubling with jitter. */
	for (int i = 0; i < 4; i++)
		k8s_fake_push(e.fake, &(struct k8s_fake_step){ .status = 503, .body = "{\"kind\":\"Status\",\"code\":503}" });
	ASSERT_ERR(k8s_get(e.c, &node_a, NULL, &st), -EAGAIN, "503 x4");
	cr_assert_eq(st.code, 503);
	cr_assert_eq(k8s_fake_requests(e.fake), 6);
	cr_assert_eq(e.clock.calls, 4);
	cr_assert(e.clock.ms[1] >= 50 && e.clock.ms[1] <= 100, "delay 1: %u", e.clock.ms[1]);
	cr_assert(e.clock.ms[2] >= 100 && e.clock.ms[2] <= 200, "delay 2: %u", e.clock.ms[2]);
	cr_assert(e.clock.ms[3] >= 200 && e.clock.ms[3] <= 400, "delay 3: %u", e.clock.ms[3]);
	cr_assert_eq(k8s_fake_pending(e.fake), 0);
	/* A POST is not sent twice after a 5xx. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .status = 500, .body = "{\"kind\":\"Status\",\"code\":500}" });
	ASSERT_ERR(create_nn(&e, "03", NULL, NULL, &st), -EIO, "POST 500");
	cr_assert_eq(k8s_fake_requests(e.fake), 7, "no retry of the POST");
	/* Nor a JSON patch. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .status = 502, .body = "bad gateway" });
	ASSERT_ERR(k8s_patch(e.c, &node_a, K8S_PATCH_JSON, "[]", 2, NULL, NULL, &st), -EIO, "JSON patch 502");
	ASSERT_STREQ(st.message, "bad gateway", "a body that is not a Status");
	cr_assert_eq(k8s_fake_requests(e.fake), 8);
	/* kubernetes#139253: a 500 for a typed-patch error is not retried. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .status = 500, .body =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"failed to create typed patch object (apps/v1, Kind=Deployment): .spec.replica: field not declared in schema\",\"reason\":\"InternalError\",\"code\":500}" });
	{
		struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = "flash-operator" };

		struct k8s_ref dep = named(deployments, "fs-web");

		ASSERT_ERR(k8s_apply(e.c, &dep, "{\"spec\":{\"replica\":1}}", 22, &wo, NULL, &st), -EINVAL, "#139253");
	}
	cr_assert_eq(k8s_fake_requests(e.fake), 9, "not retried");
	ASSERT_STREQ(st.reason, "InternalError", "the Status kept");
	k8s_status_clear(&st);
	env_close(&e);
}

Test(k8s_retry, connection_errors)
{
	struct k8s_client_opts o = { .sz = sizeof(o), .max_attempts = 3, .backoff_ms = 10, .connect_timeout_ms = 2000 };
	struct k8s_config cfg = { .server = (char *)"http://127.0.0.1:1" };
	struct clock clk = { 0 };
	struct k8s_status st = { 0 };
	struct k8s_client *c;

	o.sleep_ms = fake_sleep;
	o.sleep_userdata = &clk;
	ASSERT_OK(k8s_client_new(&cfg, &o, &c), "client to a closed port");
	ASSERT_ERR(k8s_get(c, &node_a, NULL, &st), -ECONNREFUSED, "refused");
	cr_assert_eq(st.code, 0, "no answer");
	cr_assert(st.message && strstr(st.message, "/api/v1/nodes/node-a"), "message names the request");
	cr_assert_eq(clk.calls, 2, "three attempts, two delays");
	/* Not sent: a POST is retried too. */
	ASSERT_ERR(k8s_create(c, &flashservices, "{}", 2, NULL, NULL, &st), -ECONNREFUSED, "refused POST");
	cr_assert_eq(clk.calls, 4);
	k8s_client_cancel(c);
	ASSERT_ERR(k8s_get(c, &node_a, NULL, &st), -ECANCELED, "cancelled");
	k8s_client_reset_cancel(c);
	k8s_status_clear(&st);
	k8s_client_free(c);
}

Test(k8s_retry, cut_and_slow_answers)
{
	struct k8s_client_opts o = { .sz = sizeof(o), .request_timeout_ms = 300, .max_attempts = 2 };
	struct k8s_status st = { 0 };
	struct json_value *obj = NULL;
	struct env e;

	env_open(&e, &o);
	/* A body cut in the middle: the GET is sent again. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .exchange = "41", .cut = true, .cut_after = 100 });
	ASSERT_OK(k8s_get(e.c, &node_a, &obj, &st), "cut then whole");
	ASSERT_STREQ(json_string_value(json_at(obj, "metadata.name")), "node-a", "the whole answer");
	json_free(obj);
	cr_assert_eq(k8s_fake_requests(e.fake), 2);
	/* Slower than the request timeout, twice. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .exchange = "41", .delay_ms = 1500 });
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .exchange = "41", .delay_ms = 1500 });
	ASSERT_ERR(k8s_get(e.c, &node_a, &obj, &st), -ETIMEDOUT, "timeout");
	cr_assert_eq(st.code, 0);
	/* A POST that timed out was sent: not again. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .exchange = "03", .delay_ms = 1500 });
	ASSERT_ERR(create_nn(&e, "03", NULL, NULL, &st), -ETIMEDOUT, "POST timeout");
	cr_assert_eq(k8s_fake_requests(e.fake), 5, "the POST once");
	k8s_status_clear(&st);
	env_close(&e);
}

Test(k8s_client, answer_bound)
{
	struct k8s_client_opts o = { .sz = sizeof(o), .max_body = 1024 };
	struct k8s_status st = { 0 };
	struct json_value *obj = NULL;
	struct env e;

	struct k8s_ref dep = named(deployments, "fs-web");

	env_open(&e, &o);
	ASSERT_ERR(k8s_get(e.c, &dep, &obj, &st), -EMSGSIZE, "35 is over 1 KiB");
	cr_assert_null(obj);
	cr_assert(strstr(st.message, "larger than 1024"), "message: %s", st.message);
	cr_assert_eq(k8s_fake_requests(e.fake), 1, "not retried");
	/* A 2xx body that is not JSON. */
	k8s_fake_push(e.fake, &(struct k8s_fake_step){ .body = "not json" });
	ASSERT_ERR(k8s_get(e.c, &node_a, &obj, &st), -EBADMSG, "not JSON");
	k8s_status_clear(&st);
	env_close(&e);
}

/* ---------------------------------------------------------------- tokens */

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "we");

	cr_assert(fp, "%s", path);
	fputs(text, fp);
	fclose(fp);
}

Test(k8s_client, token_file_rotation)
{
	char dir[] = "/tmp/k8s-token-XXXXXX", tok[64], tmp[64];
	struct k8s_config cfg = { 0 };
	struct k8s_status st = { 0 };
	struct k8s_fake_request r;
	struct k8s_client *c;
	struct k8s_fake *f;
	struct logged log = { 0 };
	struct k8s_client_opts o = { .sz = sizeof(o), .log = on_log, .log_userdata = &log };

	cr_assert(mkdtemp(dir));
	snprintf(tok, sizeof(tok), "%s/token", dir);
	snprintf(tmp, sizeof(tmp), "%s/token.new", dir);
	write_file(tok, "token-one\n");
	ASSERT_OK(k8s_fake_new(NULL, &f), "fake");
	cfg.server = (char *)k8s_fake_url(f);
	cfg.token_file = tok;
	ASSERT_OK(k8s_client_new(&cfg, &o, &c), "client");
	ASSERT_OK(k8s_get(c, &node_a, NULL, &st), "first");
	ASSERT_OK(k8s_fake_request_get(f, 0, &r), "request 0");
	ASSERT_STREQ(r.authorization, "Bearer token-one", "the file's token, newline dropped");
	k8s_fake_request_clear(&r);
	/* Rotated as the kubelet does: a new file renamed over the old, same
	 * size (the inode tells). */
	write_file(tmp, "token-two\n");
	cr_assert_eq(rename(tmp, tok), 0);
	ASSERT_OK(k8s_get(c, &node_a, NULL, &st), "after rotation");
	ASSERT_OK(k8s_fake_request_get(f, 1, &r), "request 1");
	ASSERT_STREQ(r.authorization, "Bearer token-two", "the rotated token");
	k8s_fake_request_clear(&r);
	cr_assert_eq(log.infos, 1, "the reload logged");
	/* A file that disappears keeps the last token. */
	cr_assert_eq(unlink(tok), 0);
	ASSERT_OK(k8s_get(c, &node_a, NULL, &st), "file gone");
	ASSERT_OK(k8s_fake_request_get(f, 2, &r), "request 2");
	ASSERT_STREQ(r.authorization, "Bearer token-two", "kept");
	k8s_fake_request_clear(&r);
	cr_assert_eq(log.warnings, 1);
	k8s_client_free(c);
	/* A client needs its token file at start. */
	ASSERT_ERR(k8s_client_new(&cfg, &o, &c), -ENOENT, "no token file");
	k8s_fake_free(f);
	rmdir(dir);
}

/* ---------------------------------------------------------------- TLS */

static char *slurp(const char *dir, const char *name)
{
	char path[256], *data = NULL;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ASSERT_OK(util_read_file(path, 1 << 20, &data, &len), path);
	return data;
}

/* A CA, a server certificate for 127.0.0.1 and a client certificate,
 * both signed by it (openssl, installed by scripts/deps.sh). */
static void make_pki(const char *dir)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && exec >/dev/null 2>&1 && "
		 "K='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes' && "
		 "openssl req -x509 $K -keyout ca.key -out ca.pem -days 1 -subj /CN=k8s-test-ca && "
		 "printf 'subjectAltName=IP:127.0.0.1\\n' > srv.ext && "
		 "printf 'extendedKeyUsage=clientAuth\\n' > cli.ext && "
		 "openssl req $K -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 && "
		 "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 1 "
		 "-extfile srv.ext && "
		 "openssl req $K -keyout cli.key -out cli.csr -subj /CN=system:node:node-a/O=system:nodes && "
		 "openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cli.pem -days 1 "
		 "-extfile cli.ext",
		 dir);
	cr_assert_eq(system(cmd), 0, "openssl (scripts/deps.sh installs it)");
}

Test(k8s_client, tls_ca_and_client_certificate)
{
	char dir[] = "/tmp/k8s-tls-XXXXXX", cmd[128];
	struct k8s_fake_opts fo = { .sz = sizeof(fo) };
	struct k8s_config cfg = { 0 };
	struct k8s_status st = { 0 };
	struct k8s_fake_request r;
	struct k8s_client *c;
	struct k8s_fake *f;
	char *ca, *srv, *srv_key, *cli, *cli_key;
	struct k8s_client_opts o = { .sz = sizeof(o), .max_attempts = 1, .connect_timeout_ms = 30000,
				     .request_timeout_ms = 60000 };

	cr_assert(mkdtemp(dir));
	make_pki(dir);
	ca = slurp(dir, "ca.pem");
	srv = slurp(dir, "srv.pem");
	srv_key = slurp(dir, "srv.key");
	cli = slurp(dir, "cli.pem");
	cli_key = slurp(dir, "cli.key");
	fo.tls_cert_pem = srv;
	fo.tls_key_pem = srv_key;
	fo.client_ca_pem = ca;
	ASSERT_OK(k8s_fake_new(&fo, &f), "TLS fake");
	cr_assert(strncmp(k8s_fake_url(f), "https://", 8) == 0);
	cfg.server = (char *)k8s_fake_url(f);
	cfg.ca_pem = ca;
	cfg.ca_pem_len = strlen(ca);
	cfg.client_cert_pem = cli;
	cfg.client_cert_pem_len = strlen(cli);
	cfg.client_key_pem = cli_key;
	cfg.client_key_pem_len = strlen(cli_key);
	ASSERT_OK(k8s_client_new(&cfg, &o, &c), "client with CA and certificate");
	ASSERT_OK(k8s_get(c, &node_a, NULL, &st), "GET over TLS");
	ASSERT_OK(k8s_fake_request_get(f, 0, &r), "request");
	cr_assert(r.client_cert_verified, "the client certificate was presented and verified");
	cr_assert_null(r.authorization, "no bearer token configured: none sent");
	k8s_fake_request_clear(&r);
	k8s_client_free(c);

	/* Without the CA, the system store does not know the server. */
	cfg.ca_pem = NULL;
	cfg.ca_pem_len = 0;
	ASSERT_OK(k8s_client_new(&cfg, &o, &c), "client without the CA");
	ASSERT_ERR(k8s_get(c, &node_a, NULL, &st), -EKEYREJECTED, "untrusted server");
	cr_assert_eq(st.code, 0);
	k8s_client_free(c);
	/* insecure-skip-tls-verify accepts it. */
	cfg.insecure_skip_tls_verify = true;
	ASSERT_OK(k8s_client_new(&cfg, &o, &c), "insecure client");
	ASSERT_OK(k8s_get(c, &node_a, NULL, &st), "insecure GET");
	k8s_client_free(c);
	/* Without a client certificate the server sees none. */
	cfg.insecure_skip_tls_verify = false;
	cfg.ca_pem = ca;
	cfg.ca_pem_len = strlen(ca);
	cfg.client_cert_pem = cfg.client_key_pem = NULL;
	cfg.client_cert_pem_len = cfg.client_key_pem_len = 0;
	cfg.token = (char *)"t";
	ASSERT_OK(k8s_client_new(&cfg, &o, &c), "client without a certificate");
	k8s_fake_reset_requests(f);
	ASSERT_OK(k8s_get(c, &node_a, NULL, &st), "GET with a token over TLS");
	ASSERT_OK(k8s_fake_request_get(f, 0, &r), "request");
	cr_assert(!r.client_cert_verified, "no certificate presented");
	ASSERT_STREQ(r.authorization, "Bearer t", "the token instead");
	k8s_fake_request_clear(&r);
	k8s_client_free(c);
	k8s_status_clear(&st);
	k8s_fake_free(f);
	free(ca);
	free(srv);
	free(srv_key);
	free(cli);
	free(cli_key);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
