/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-operator's provider/v1 logic without sockets: every route, tenant
 * isolation per route, generation rules, admission (spec, policy,
 * organization limits, image size), public ports, the store and metrics.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/meter.h>
#include <flash/policy.h>
#include <flash/render.h>

#include "helpers.h"
#include "json.h"
#include "meter-clock.h"
#include "operator-helpers.h"
#include "provider.h"
#include "registry-auth.h"
#include "util.h"

static char dir[64];
static struct op_store *store;
static struct op_metrics *metrics;
static struct op_provider *prov;
static struct flash_auth_signer *signer;
static struct flash_auth_keyset *keys;
static struct flash_operator_config *config;
static struct flash_policy *policy;
static int64_t fake_now; /* > 0: the provider's clock and the tokens' */

#define GIB (UINT64_C(1) << 30)

static void start(const char *config_json, const char *policy_json)
{
	char path[128];
	unsigned char pk[32];

	strcpy(dir, "/tmp/test-operator-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/flash.db", dir);
	ASSERT_OK(op_store_open(path, &store, NULL, 0), "store");
	ASSERT_OK(op_metrics_new(&metrics), "metrics");
	ASSERT_OK(flash_auth_signer_generate("k1", &signer), "signer");
	ASSERT_OK(flash_auth_signer_public_key(signer, pk), "pk");
	ASSERT_OK(flash_auth_keyset_new(&keys), "keyset");
	ASSERT_OK(flash_auth_keyset_add(keys, "k1", pk), "add");
	if (config_json)
		ASSERT_OK(flash_operator_config_parse(config_json, strlen(config_json), &config, NULL), "config");
	if (policy_json)
		ASSERT_OK(flash_policy_parse(policy_json, strlen(policy_json), &policy, NULL), "policy");
	struct op_provider_opts o = {
		.sz = sizeof(o), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE, .keys = keys, .policy = policy,
		.config = config, .store = store, .metrics = metrics, .image = &test_image_ops, .retry_after = 7,
	};
	ASSERT_OK(op_provider_new(&o, &prov), "provider");
}

static void setup(void) { start("{\"publicPortRange\":{\"first\":30000,\"last\":30009}}", NULL); }

static void teardown(void)
{
	char cmd[128];

	op_provider_free(prov);
	op_metrics_free(metrics);
	op_store_close(store);
	flash_auth_signer_free(signer);
	flash_auth_keyset_free(keys);
	flash_operator_config_free(config);
	flash_policy_free(policy);
	prov = NULL, metrics = NULL, store = NULL, signer = NULL, keys = NULL, config = NULL, policy = NULL;
	fake_now = 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(system(cmd) == 0);
}

/* One request; the answer's body is parsed into *ret_doc when asked. */
static struct op_response req(const char *method, const char *path, const char *org, const char *project,
			      enum flash_auth_action action, uint64_t gen, const char *body)
{
	struct op_response r;
	char *tok = org ? test_mint_at(signer, org, project, action, gen, fake_now ? fake_now : (int64_t)time(NULL)) : NULL,
	     hdr[9000];

	if (tok)
		snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	struct op_request rq = { .method = method, .path = path, .authorization = tok ? hdr : NULL,
				 .body = body ? body : "", .body_len = body ? strlen(body) : 0 };
	op_provider_handle(prov, &rq, &r);
	free(tok);
	return r;
}

static char *create_body(const char *name, const char *spec)
{
	char *b = NULL;

	cr_assert(asprintf(&b, "{\"name\":\"%s\",\"spec\":%s}", name, spec) > 0);
	return b;
}

static char *update_body(const char *spec)
{
	char *b = NULL;

	cr_assert(asprintf(&b, "{\"spec\":%s}", spec) > 0);
	return b;
}

static struct json_value *parse(const struct op_response *r)
{
	struct json_value *v = NULL;

	cr_assert(json_parse(r->body, r->body_len, NULL, &v, NULL) == 0, "answer is not JSON: %s", r->body);
	return v;
}

static const char *sget(const struct json_value *v, const char *k)
{
	const char *s = NULL;

	return json_get_string(json_get(v, k), &s) == 0 ? s : NULL;
}

static void expect_error(const struct op_response *r, int status, const char *code)
{
	struct json_value *v;

	cr_assert_eq(r->status, status, "status %d, expected %d: %s", r->status, status, r->body);
	v = parse(r);
	ASSERT_STREQ(sget(json_get(v, "error"), "code"), code, "error code");
	json_free(v);
}

/* A request of org-a/p1 that must be refused with @status and @code. */
static void refused(const char *method, const char *path, enum flash_auth_action action, uint64_t gen,
		    const char *body, int status, const char *code)
{
	struct op_response r = req(method, path, "org-a", "p1", action, gen, body);

	expect_error(&r, status, code);
	op_response_clear(&r);
}

/* Creates @name for (@org, @project); returns the id (static buffer). */
static const char *create(const char *org, const char *project, const char *name, uint64_t gen, const char *spec)
{
	static char id[OP_SERVICE_ID_STRLEN];
	char *b = create_body(name, spec);
	struct op_response r = req("POST", "/provider/v1/services", org, project, FLASH_AUTH_ACTION_CREATE, gen, b);
	struct json_value *v;

	cr_assert_eq(r.status, 201, "create %s: %d %s", name, r.status, r.body);
	v = parse(&r);
	snprintf(id, sizeof(id), "%s", sget(v, "id"));
	json_free(v);
	op_response_clear(&r);
	free(b);
	return id;
}

static char *path_of(const char *id)
{
	char *p = NULL;

	cr_assert(asprintf(&p, "/provider/v1/services/%s", id) > 0);
	return p;
}

TestSuite(operator, .init = setup, .fini = teardown);

Test(operator, create_get_list_delete)
{
	char *spec = test_spec("test.invalid/app:1000", 1, 1, 1);
	const char *id0 = create("org-a", "p1", "echo", 1, spec);
	char id[OP_SERVICE_ID_STRLEN], *p;
	struct op_response r;
	struct json_value *v;
	const struct json_value *a;

	memcpy(id, id0, sizeof(id));
	p = path_of(id);
	r = req("GET", p, "org-a", "p1", FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	v = parse(&r);
	ASSERT_STREQ(sget(v, "name"), "echo", "name");
	ASSERT_STREQ(sget(json_get(v, "status"), "phase"), "admitted", "phase: no runtime, never faked ready");
	cr_assert(strncmp(sget(json_get(v, "image"), "pinned"), "test.invalid/app@sha256:", 24) == 0);
	a = json_get(v, "events");
	cr_assert(a && a->type == JSON_ARRAY && a->u.array.n == 1, "one event");
	ASSERT_STREQ(sget(a->u.array.items[0], "type"), "admitted", "event type");
	json_free(v);
	op_response_clear(&r);

	r = req("GET", "/provider/v1/services", "org-a", NULL, FLASH_AUTH_ACTION_LIST, UINT64_MAX, NULL);
	cr_assert_eq(r.status, 200);
	v = parse(&r);
	a = json_get(v, "services");
	cr_assert(a && a->u.array.n == 1);
	ASSERT_STREQ(sget(a->u.array.items[0], "id"), id, "listed id");
	json_free(v);
	op_response_clear(&r);

	r = req("DELETE", p, "org-a", "p1", FLASH_AUTH_ACTION_DELETE, 2, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	op_response_clear(&r);
	refused("GET", p, FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL, 404, "not-found");
	r = req("GET", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_LIST, UINT64_MAX, NULL);
	v = parse(&r);
	cr_assert_eq(json_get(v, "services")->u.array.n, 0, "deleted services are not listed");
	json_free(v);
	op_response_clear(&r);
	free(p);
	free(spec);
}

/* Another organization, and another project of the same organization,
 * get exactly the answer of an unknown id on every route. */
Test(operator, tenant_isolation_every_route)
{
	char *spec = test_spec("test.invalid/app:1000", 0, 1, 1), *ub = update_body(spec);
	char id[OP_SERVICE_ID_STRLEN], *p, *unknown;
	const char *tenants[][2] = { { "org-b", "p1" }, { "org-a", "p2" } };
	struct op_response r, u;
	struct json_value *v;

	memcpy(id, create("org-a", "p1", "secret", 1, spec), sizeof(id));
	p = path_of(id);
	/* An unknown id of the same shape: the same path length and form. */
	unknown = path_of("fs-00000000000000000000000000000000");
	for (size_t t = 0; t < 2; t++) {
		const char *org = tenants[t][0], *proj = tenants[t][1];
		struct {
			const char *method;
			enum flash_auth_action action;
			uint64_t gen;
			const char *body;
		} routes[] = {
			{ "GET", FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL },
			{ "PUT", FLASH_AUTH_ACTION_UPDATE, 9, ub },
			{ "DELETE", FLASH_AUTH_ACTION_DELETE, 9, NULL },
		};

		for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
			char *expected = NULL;

			r = req(routes[i].method, p, org, proj, routes[i].action, routes[i].gen, routes[i].body);
			u = req(routes[i].method, unknown, org, proj, routes[i].action, routes[i].gen, routes[i].body);
			expect_error(&r, 404, "not-found");
			expect_error(&u, 404, "not-found");
			/* Byte for byte the same once the id in the message is the same. */
			cr_assert(asprintf(&expected, "%.*s%s%s", (int)(strstr(u.body, "fs-") - u.body), u.body, id,
					   strstr(u.body, "fs-") + 35) > 0);
			ASSERT_STREQ(r.body, expected, "foreign id answers as an unknown one");
			free(expected);
			op_response_clear(&r);
			op_response_clear(&u);
		}
		/* list and usage do not show it. */
		r = req("GET", "/provider/v1/services", org, proj, FLASH_AUTH_ACTION_LIST, UINT64_MAX, NULL);
		cr_assert_eq(r.status, 200);
		cr_assert_null(strstr(r.body, id), "list leaks %s: %s", id, r.body);
		cr_assert_null(strstr(r.body, "secret"), "list leaks the name");
		op_response_clear(&r);
		r = req("GET", "/provider/v1/usage", org, proj, FLASH_AUTH_ACTION_USAGE, UINT64_MAX, NULL);
		cr_assert_eq(r.status, 200, "%s", r.body);
		cr_assert_null(strstr(r.body, id), "usage leaks %s: %s", id, r.body);
		op_response_clear(&r);
		/* create with the same name is a service of its own. */
		char *b = create_body("secret", spec);
		r = req("POST", "/provider/v1/services", org, proj, FLASH_AUTH_ACTION_CREATE, 1, b);
		cr_assert_eq(r.status, 201, "%s", r.body);
		v = parse(&r);
		cr_assert_str_neq(sget(v, "id"), id, "two tenants never share an id");
		json_free(v);
		op_response_clear(&r);
		free(b);
	}
	/* The owner still sees it unchanged. */
	r = req("GET", p, "org-a", "p1", FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL);
	cr_assert_eq(r.status, 200);
	v = parse(&r);
	cr_assert_eq(json_get(v, "generation") ? 1 : 0, 1);
	uint64_t g = 0;
	json_get_uint64(json_get(v, "generation"), &g);
	cr_assert_eq(g, 1, "nobody else changed it");
	json_free(v);
	op_response_clear(&r);
	free(p);
	free(unknown);
	free(ub);
	free(spec);
}

Test(operator, token_checks)
{
	char *spec = test_spec("test.invalid/app:1000", 0, 1, 1), *b = create_body("x", spec);
	struct op_response r;
	struct op_request rq = { .method = "GET", .path = "/provider/v1/services" };
	struct json_value *v;

	/* No token. */
	op_provider_handle(prov, &rq, &r);
	expect_error(&r, 401, "unauthorized");
	op_response_clear(&r);
	/* A token for another action. */
	refused("POST", "/provider/v1/services", FLASH_AUTH_ACTION_GET, 1, b, 403, "wrong-action");
	refused("GET", "/provider/v1/services", FLASH_AUTH_ACTION_USAGE, UINT64_MAX, NULL, 403, "wrong-action");
	/* A mutation without a generation. */
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, UINT64_MAX, b);
	expect_error(&r, 401, "unauthorized");
	v = parse(&r);
	ASSERT_STREQ(sget(json_get(v, "error"), "reason"), flash_auth_reason_name(FLASH_E_AUTH_GENERATION_MISSING),
		     "reason");
	json_free(v);
	op_response_clear(&r);
	/* A signature by an unknown key. */
	struct flash_auth_signer *other = NULL;
	char *tok, hdr[9000];
	ASSERT_OK(flash_auth_signer_generate("k1", &other), "other key");
	tok = test_mint(other, "org-a", "p1", FLASH_AUTH_ACTION_LIST, UINT64_MAX);
	snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	rq.authorization = hdr;
	op_provider_handle(prov, &rq, &r);
	expect_error(&r, 401, "unauthorized");
	op_response_clear(&r);
	free(tok);
	flash_auth_signer_free(other);
	/* Org in the body is not a thing: unknown fields are refused. */
	free(b);
	cr_assert(asprintf(&b, "{\"name\":\"x\",\"org\":\"org-b\",\"spec\":%s}", spec) > 0);
	refused("POST", "/provider/v1/services", FLASH_AUTH_ACTION_CREATE, 1, b, 400, "bad-request");
	free(b);
	free(spec);
}

Test(operator, generation_rules)
{
	char *s1 = test_spec("test.invalid/app:1000", 1, 1, 1), *s2 = test_spec("test.invalid/app:1000", 1, 2, 1);
	char *b1 = create_body("gen", s1), *u1 = update_body(s1), *u2 = update_body(s2), *p;
	struct op_response a, b;
	struct json_value *v;
	uint64_t g = 0;

	a = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 5, b1);
	cr_assert_eq(a.status, 201, "%s", a.body);
	sleep(1); /* a re-applied command would carry a new timestamp */
	b = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 5, b1);
	cr_assert_eq(b.status, 201);
	cr_assert_eq(a.body_len, b.body_len);
	cr_assert(memcmp(a.body, b.body, a.body_len) == 0, "same generation: the same answer byte for byte");
	v = parse(&a);
	p = path_of(sget(v, "id"));
	json_free(v);
	op_response_clear(&b);

	refused("PUT", p, FLASH_AUTH_ACTION_UPDATE, 4, u2, 409, "stale-generation");
	refused("PUT", p, FLASH_AUTH_ACTION_UPDATE, 5, u2, 409, "generation-conflict");
	refused("POST", "/provider/v1/services", FLASH_AUTH_ACTION_CREATE, 6, b1, 409, "exists");
	b = req("PUT", p, "org-a", "p1", FLASH_AUTH_ACTION_UPDATE, 6, u2);
	cr_assert_eq(b.status, 200, "%s", b.body);
	v = parse(&b);
	json_get_uint64(json_get(v, "generation"), &g);
	cr_assert_eq(g, 6);
	json_free(v);
	op_response_clear(&a);
	a = req("PUT", p, "org-a", "p1", FLASH_AUTH_ACTION_UPDATE, 6, u2);
	cr_assert(a.status == 200 && a.body_len == b.body_len && memcmp(a.body, b.body, a.body_len) == 0,
		  "update replay is byte for byte");
	op_response_clear(&a);
	op_response_clear(&b);

	/* Delete, its replay, a stale delete, then a re-create needs a newer generation. */
	a = req("DELETE", p, "org-a", "p1", FLASH_AUTH_ACTION_DELETE, 7, NULL);
	cr_assert_eq(a.status, 200, "%s", a.body);
	b = req("DELETE", p, "org-a", "p1", FLASH_AUTH_ACTION_DELETE, 7, NULL);
	cr_assert(b.status == 200 && strcmp(a.body, b.body) == 0, "delete replay");
	op_response_clear(&a);
	op_response_clear(&b);
	refused("PUT", p, FLASH_AUTH_ACTION_UPDATE, 8, u1, 404, "not-found");
	refused("POST", "/provider/v1/services", FLASH_AUTH_ACTION_CREATE, 3, b1, 409, "stale-generation");
	a = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 9, b1);
	cr_assert_eq(a.status, 201, "re-create with a newer generation: %s", a.body);
	op_response_clear(&a);
	free(p);
	free(b1);
	free(u1);
	free(u2);
	free(s1);
	free(s2);
}

Test(operator, invalid_spec_has_paths)
{
	char *spec = test_spec("test.invalid/app:1000", 1, 1, 1), *b, *bad;
	struct op_response r;
	struct json_value *v;

	bad = strdup(spec);
	memcpy(strstr(bad, "8000"), "0   ", 4); /* container_port 0 */
	b = create_body("bad", bad);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	expect_error(&r, 422, "invalid-spec");
	v = parse(&r);
	ASSERT_STREQ(sget(json_get(v, "error"), "path"), "ports[0].container_port", "JSON path of the error");
	json_free(v);
	op_response_clear(&r);
	cr_assert_eq(op_metrics_refusals(metrics, OP_REFUSED_SPEC), 1);
	free(b);
	free(bad);
	free(spec);
	/* A bad name. */
	spec = test_spec("test.invalid/app:1000", 0, 1, 1);
	b = create_body("Bad_Name", spec);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	expect_error(&r, 400, "bad-request");
	v = parse(&r);
	ASSERT_STREQ(sget(json_get(v, "error"), "path"), "name", "path");
	json_free(v);
	op_response_clear(&r);
	free(b);
	free(spec);
}

Test(operator, image_admission)
{
	/* 1 GiB of disk: an image of exactly 1 GiB fills it and is refused. */
	char *fills = test_spec("test.invalid/big:1073741824", 0, 1, 1);
	char *over = test_spec("test.invalid/big:2000000000", 0, 1, 1);
	char *fits = test_spec("test.invalid/big:1073741823", 0, 1, 1);
	char *down = test_spec("test.invalid/unreachable:1", 0, 1, 1);
	char *missing = test_spec("test.invalid/missing:1", 0, 1, 1);
	char *b;
	struct op_response r;
	struct json_value *v;
	size_t n = 9;

	b = create_body("fills", fills);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	expect_error(&r, 422, "image-too-large");
	cr_assert(strstr(r.body, "needs 1073741824 bytes") && strstr(r.body, "limit is 1073741824 bytes"),
		  "sizes in the error: %s", r.body);
	op_response_clear(&r);
	free(b);
	b = create_body("over", over);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	expect_error(&r, 422, "image-too-large");
	cr_assert(strstr(r.body, "2000000000 bytes") && strstr(r.body, "1073741824 bytes"), "%s", r.body);
	op_response_clear(&r);
	free(b);
	cr_assert_eq(op_metrics_refusals(metrics, OP_REFUSED_IMAGE_TOO_LARGE), 2);
	ASSERT_OK(op_store_count(store, &n), "count");
	cr_assert_eq(n, 0, "nothing stored for refused images");

	b = create_body("down", down);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	expect_error(&r, 503, "unavailable");
	cr_assert_eq(r.retry_after, 7, "Retry-After while transient");
	op_response_clear(&r);
	free(b);
	b = create_body("missing", missing);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	expect_error(&r, 422, "image");
	cr_assert_eq(r.retry_after, 0);
	op_response_clear(&r);
	free(b);

	b = create_body("fits", fits);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	cr_assert_eq(r.status, 201, "%s", r.body);
	v = parse(&r);
	uint64_t charged = 0;
	json_get_uint64(json_get(json_get(v, "image"), "charged_bytes"), &charged);
	cr_assert_eq(charged, 1073741823);
	cr_assert(strstr(sget(json_get(v, "image"), "pinned"), "@sha256:"), "pinned to the digest");
	json_free(v);
	op_response_clear(&r);
	free(b);
	free(fills);
	free(over);
	free(fits);
	free(down);
	free(missing);
}

Test(operator, admission_decisions)
{
	char msg[256];
	struct flash_meter_decision d = { .suspend_all = false, .suspend_gpu = true, .lifts_at = 1765152000 };
	struct flash_spec *cpu = NULL;
	char *s = test_spec("test.invalid/a:1", 0, 1, 3);

	ASSERT_OK(flash_spec_parse(s, strlen(s), NULL, &cpu, NULL), "spec");
	cr_assert_eq(op_admission_disk_limit(cpu, NULL), 3 * GIB);
	ASSERT_OK(op_admission_check_suspension(&d, cpu, msg, sizeof(msg)), "GPU suspension spares CPU workloads");
	d.suspend_all = true;
	d.cpu_reached = true;
	ASSERT_ERR(op_admission_check_suspension(&d, cpu, msg, sizeof(msg)), -EDQUOT, "CPU limit suspends all");
	cr_assert(strstr(msg, "CPU") && strstr(msg, "2025-12-08T00:00:00Z"), "%s", msg);
	flash_spec_free(cpu);
	free(s);
	cr_assert(op_image_error_transient(-FLASH_E_IMAGE_TRANSPORT) && op_image_error_transient(-ETIMEDOUT));
	cr_assert(!op_image_error_transient(-FLASH_E_IMAGE_NOT_FOUND) && !op_image_error_transient(-FLASH_E_IMAGE_TOO_LARGE));
	/* The default ops are libflash's resolver: a missing local layout is
	 * refused (not transient) and said. */
	struct op_image_info info;
	char err[256] = "";
	int r = op_image_default_ops.admit(NULL, "oci:/nonexistent/layout", 3 * GIB, &info, err, sizeof(err));
	cr_assert(r < 0 && !op_image_error_transient(r), "missing layout: %d", r);
	cr_assert(err[0], "the refusal is said");
}

static uint16_t port_of(const struct json_value *svc, const char *name)
{
	const struct json_value *pp = json_get(svc, "public_ports");
	uint64_t v = 0;

	for (size_t i = 0; pp && i < pp->u.array.n; i++)
		if (strcmp(sget(pp->u.array.items[i], "name"), name) == 0)
			json_get_uint64(json_get(pp->u.array.items[i], "port"), &v);
	return (uint16_t)v;
}

Test(operator, public_ports)
{
	char *s3 = test_spec("test.invalid/a:1", 3, 1, 1), *s2 = test_spec("test.invalid/a:1", 2, 1, 1);
	char *s0 = test_spec("test.invalid/a:1", 0, 1, 1), *s8 = test_spec("test.invalid/a:1", 8, 1, 1);
	char *b, *p, id[OP_SERVICE_ID_STRLEN];
	struct op_response r;
	struct json_value *v;
	uint16_t p1;

	/* Three ports of ten. */
	b = create_body("web", s3);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	cr_assert_eq(r.status, 201, "%s", r.body);
	v = parse(&r);
	snprintf(id, sizeof(id), "%s", sget(v, "id"));
	cr_assert_eq(port_of(v, "p0"), 30000);
	cr_assert_eq(port_of(v, "p1"), 30001);
	cr_assert_eq(port_of(v, "p2"), 30002);
	p1 = port_of(v, "p1");
	json_free(v);
	op_response_clear(&r);
	free(b);
	/* Another service: eight more ports do not fit in the seven left. */
	b = create_body("big", s8);
	r = req("POST", "/provider/v1/services", "org-b", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	expect_error(&r, 409, "public-ports-exhausted");
	cr_assert(strstr(r.body, "30000-30009"), "%s", r.body);
	op_response_clear(&r);
	free(b);
	cr_assert_eq(op_metrics_refusals(metrics, OP_REFUSED_PORTS), 1);
	/* Dropping p2 keeps p0 and p1 on their ports. */
	p = path_of(id);
	b = update_body(s2);
	r = req("PUT", p, "org-a", "p1", FLASH_AUTH_ACTION_UPDATE, 2, b);
	cr_assert_eq(r.status, 200, "%s", r.body);
	v = parse(&r);
	cr_assert_eq(port_of(v, "p1"), p1, "unchanged (protocol, name) keeps its port");
	cr_assert_eq(port_of(v, "p2"), 0);
	json_free(v);
	op_response_clear(&r);
	free(b);
	/* Eight now fit (2 + 8 = 10), and none collides. */
	b = create_body("big", s8);
	r = req("POST", "/provider/v1/services", "org-b", "p1", FLASH_AUTH_ACTION_CREATE, 2, b);
	cr_assert_eq(r.status, 201, "%s", r.body);
	v = parse(&r);
	for (int i = 0; i < 8; i++) {
		char n[8];

		snprintf(n, sizeof(n), "p%d", i);
		cr_assert(port_of(v, n) >= 30002 && port_of(v, n) <= 30009, "two services never share a port");
	}
	json_free(v);
	op_response_clear(&r);
	free(b);
	/* Removing every port releases them. */
	b = update_body(s0);
	r = req("PUT", p, "org-a", "p1", FLASH_AUTH_ACTION_UPDATE, 3, b);
	cr_assert_eq(r.status, 200, "%s", r.body);
	op_response_clear(&r);
	free(b);
	uint16_t *taken = NULL;
	size_t n = 0;
	ASSERT_OK(op_store_ports_taken(store, NULL, &taken, &n), "taken");
	cr_assert_eq(n, 8, "only the second service holds ports");
	free(taken);
	free(p);
	free(s0);
	free(s2);
	free(s3);
	free(s8);
}

Test(operator, organization_limits)
{
	static const char pol[] =
		"{\"regions\":[\"heteronet-global\"],\"gpu_catalog\":[],\"protected_cidrs\":[],"
		"\"workload_limits\":{\"cpu_millis\":4000,\"memory_mib\":8192,\"replicas\":10,\"gpus\":0,"
		"\"ephemeral_storage_gib\":50,\"ports\":16},"
		"\"organization_limits\":{\"cpu_millis\":16000,\"memory_mib\":32768,\"replicas\":5,\"gpus\":0,"
		"\"ephemeral_storage_gib\":500,\"ports\":64},"
		"\"weekly_limits\":{\"cpu_millicore_seconds\":1000000000,\"memory_mib_seconds\":1000000000,\"gpu_seconds\":0}}";
	char *s3 = test_spec("test.invalid/a:1", 0, 3, 1), *b;
	struct op_response r;

	teardown();
	start(NULL, pol);
	b = create_body("one", s3);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	cr_assert_eq(r.status, 201, "%s", r.body);
	op_response_clear(&r);
	free(b);
	/* 3 + 3 replicas > 5 */
	b = create_body("two", s3);
	r = req("POST", "/provider/v1/services", "org-a", "p2", FLASH_AUTH_ACTION_CREATE, 1, b);
	expect_error(&r, 422, "organization-limit");
	op_response_clear(&r);
	free(b);
	cr_assert_eq(op_metrics_refusals(metrics, OP_REFUSED_ORG_LIMIT), 1);
	/* Another organization has its own budget. */
	b = create_body("two", s3);
	r = req("POST", "/provider/v1/services", "org-b", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	cr_assert_eq(r.status, 201, "%s", r.body);
	op_response_clear(&r);
	free(b);
	free(s3);
}

/* An organization at its weekly CPU limit is suspended at admission (the
 * metering state as the store keeps it); another one is not. */
Test(operator, suspended_organization)
{
	static const char pol[] =
		"{\"regions\":[\"heteronet-global\"],\"gpu_catalog\":[],\"protected_cidrs\":[],"
		"\"workload_limits\":{\"cpu_millis\":4000,\"memory_mib\":8192,\"replicas\":10,\"gpus\":0,"
		"\"ephemeral_storage_gib\":50,\"ports\":16},"
		"\"organization_limits\":{\"cpu_millis\":16000,\"memory_mib\":32768,\"replicas\":40,\"gpus\":0,"
		"\"ephemeral_storage_gib\":500,\"ports\":64},"
		"\"weekly_limits\":{\"cpu_millicore_seconds\":1000,\"memory_mib_seconds\":1000000000,\"gpu_seconds\":0}}";
	struct flash_meter *m = NULL;
	int64_t now = (int64_t)time(NULL), ws = 0, t0;
	char *json = NULL, *s = test_spec("test.invalid/a:1", 0, 1, 1), *b = create_body("late", s);
	struct op_response r;
	size_t len;

	teardown();
	start(NULL, pol);
	op_provider_free(prov);
	prov = NULL;
	/* 10 s of 1000 millicores: 10000 millicore-seconds this week. */
	ASSERT_OK(flash_meter_week_start(now, &ws), "week");
	t0 = now - 10 >= ws ? now - 10 : ws;
	ASSERT_OK(flash_meter_new(NULL, &m), "meter");
	struct flash_meter_observation o1 = { .sz = sizeof(o1), .service_id = "old", .organization = "org-a",
					      .time = t0, .ready_replicas = 1, .cpu_millis = 1000, .memory_mib = 1 };
	struct flash_meter_observation o2 = o1;
	o2.time = t0 + 10;
	o2.ready_replicas = 0;
	ASSERT_OK(flash_meter_observe(m, &o1), "observe");
	ASSERT_OK(flash_meter_observe(m, &o2), "observe");
	ASSERT_OK(flash_meter_to_json(m, &json, &len), "json");
	ASSERT_OK(op_store_meter_put(store, json), "meter state into the store");
	flash_meter_free(m);
	free(json);
	json = NULL;
	ASSERT_OK(op_store_meter_get(store, &json), "read back");
	cr_assert(json && strstr(json, "org-a"), "the state round-trips");
	free(json);
	struct op_provider_opts o = { .sz = sizeof(o), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE, .keys = keys,
				      .policy = policy, .store = store, .metrics = metrics, .image = &test_image_ops };
	ASSERT_OK(op_provider_new(&o, &prov), "provider loads the metering state");

	refused("POST", "/provider/v1/services", FLASH_AUTH_ACTION_CREATE, 1, b, 403, "suspended");
	cr_assert_eq(op_metrics_refusals(metrics, OP_REFUSED_SUSPENDED), 1);
	r = req("GET", "/provider/v1/usage", "org-a", NULL, FLASH_AUTH_ACTION_USAGE, UINT64_MAX, NULL);
	cr_assert(strstr(r.body, "\"cpu_millicore_seconds\":10000"), "%s", r.body);
	op_response_clear(&r);
	r = req("POST", "/provider/v1/services", "org-b", "p1", FLASH_AUTH_ACTION_CREATE, 1, b);
	cr_assert_eq(r.status, 201, "another organization is not suspended: %s", r.body);
	op_response_clear(&r);
	free(b);
	free(s);
}

Test(operator, routes_and_metrics)
{
	struct op_request rq = { .method = "GET", .path = "/nowhere" };
	struct op_response r;

	op_provider_handle(prov, &rq, &r);
	expect_error(&r, 404, "no-route");
	op_response_clear(&r);
	rq.method = "PATCH";
	rq.path = "/provider/v1/services";
	op_provider_handle(prov, &rq, &r);
	expect_error(&r, 405, "method-not-allowed");
	op_response_clear(&r);
	rq.method = "GET";
	rq.path = "/healthz";
	op_provider_handle(prov, &rq, &r);
	cr_assert_eq(r.status, 200);
	op_response_clear(&r);
	r = req("GET", "/provider/v1/services", "org-a", NULL, FLASH_AUTH_ACTION_LIST, UINT64_MAX, NULL);
	op_response_clear(&r);
	rq.path = "/metrics";
	op_provider_handle(prov, &rq, &r);
	cr_assert_eq(r.status, 200);
	ASSERT_STREQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8", "content type");
	cr_assert(strstr(r.body, "flash_operator_requests_total{route=\"list\",code=\"200\"} 1\n"), "%s", r.body);
	cr_assert(strstr(r.body, "flash_operator_requests_total{route=\"other\",code=\"404\"} 1\n"));
	cr_assert(strstr(r.body, "flash_operator_request_duration_seconds_count{route=\"list\"} 2\n"), "%s", r.body); /* 405 and 200 */
	cr_assert(strstr(r.body, "# TYPE flash_operator_store_commit_seconds histogram\n"));
	cr_assert(strstr(r.body, "flash_operator_admissions_refused_total{reason=\"image-too-large\"} 0\n"));
	op_response_clear(&r);
	cr_assert_eq(op_metrics_requests(metrics, OP_ROUTE_HEALTHZ, 200), 1);
}

Test(operator, usage_route)
{
	char *s = test_spec("test.invalid/a:1", 0, 1, 1);
	char id[OP_SERVICE_ID_STRLEN];
	struct op_response r;
	struct json_value *v;
	const struct json_value *list;

	memcpy(id, create("org-a", "p1", "metered", 1, s), sizeof(id));
	r = req("GET", "/provider/v1/usage", "org-a", NULL, FLASH_AUTH_ACTION_USAGE, UINT64_MAX, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	v = parse(&r);
	cr_assert(sget(v, "week") && sget(v, "week")[4] == '-', "week name");
	int64_t cpu = -1;
	json_get_int64(json_get(json_get(v, "organization"), "cpu_millicore_seconds"), &cpu);
	cr_assert_eq(cpu, 0, "no ready replica (no runtime): nothing accrues");
	list = json_get(v, "services");
	cr_assert(list && list->type == JSON_ARRAY);
	json_free(v);
	op_response_clear(&r);
	free(s);
}

/* ---------------------------------------------------------------- store */

Test(operator, store_reopen_and_versions)
{
	char *s = test_spec("test.invalid/a:1", 1, 1, 1), path[128], err[256];
	char id[OP_SERVICE_ID_STRLEN];
	struct op_service *sv = NULL;
	struct op_store *st2 = NULL;

	memcpy(id, create("org-a", "p1", "kept", 1, s), sizeof(id));
	cr_assert_eq(op_store_schema_version(store), OP_STORE_SCHEMA_VERSION);
	op_provider_free(prov);
	prov = NULL;
	op_store_close(store);
	snprintf(path, sizeof(path), "%s/flash.db", dir);
	ASSERT_OK(op_store_open(path, &store, err, sizeof(err)), "reopen");
	ASSERT_OK(op_store_service_get(store, id, &sv), "kept after reopen");
	ASSERT_STREQ(sv->name, "kept", "name");
	cr_assert_eq(sv->n_ports, 1);
	cr_assert_eq(sv->ports[0].port, 30000);
	cr_assert_eq(sv->answer_status, 201);
	op_service_free(sv);
	ASSERT_ERR(op_store_service_get(store, "fs-00000000000000000000000000000000", &sv), -ENOENT, "unknown");

	/* A database from a newer program is refused, not rewritten. */
	op_store_close(store);
	store = NULL;
	sqlite3 *db = NULL;
	cr_assert(sqlite3_open(path, &db) == SQLITE_OK);
	cr_assert(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	ASSERT_ERR(op_store_open(path, &st2, err, sizeof(err)), -EPROTONOSUPPORT, "newer schema");
	cr_assert(strstr(err, "99"), "%s", err);
	/* A FIFO is refused without blocking. */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert(mkfifo(path, 0600) == 0);
	ASSERT_ERR(op_store_open(path, &st2, err, sizeof(err)), -EBADFD, "fifo");
	free(s);
}

Test(operator, service_ids)
{
	char a[OP_SERVICE_ID_STRLEN], b[OP_SERVICE_ID_STRLEN], c[OP_SERVICE_ID_STRLEN];

	ASSERT_OK(op_service_id("org", "p", "n", a), "a");
	ASSERT_OK(op_service_id("org", "p", "n", b), "b");
	ASSERT_STREQ(a, b, "deterministic");
	ASSERT_OK(op_service_id("or", "gp", "n", c), "c");
	cr_assert_str_neq(a, c, "length-prefixed: no ambiguity between fields");
	cr_assert_eq(strlen(a), 35);
	cr_assert(strncmp(a, "fs-", 3) == 0);
	cr_assert(names_service_id_valid(a) && names_service_id_valid(c), "the ids pass the one service id rule");
}

/* The registry credentials file: a table per registry, every fault named
 * by its key, secrets only from a file of mode 0600 or 0400. */
Test(operator, registry_credentials_file)
{
	static const char good[] = "{\"registry.example:5000\":{\"username\":\"u\",\"password\":\"p\"},"
				   "\"docker.io\":{\"username\":\"d\",\"password\":\"q\"}}";
	static const struct {
		const char *json, *msg;
	} bad[] = {
		{ "[]", "must be an object" },
		{ "{\"r.example\":{\"username\":\"u\"}}", "[\"r.example\"].password: is required" },
		{ "{\"r.example\":{\"username\":\"u\",\"password\":\"p\",\"token\":\"t\"}}", "[\"r.example\"].token" },
		{ "{\"https://r.example\":{\"username\":\"u\",\"password\":\"p\"}}", "not a registry" },
		{ "{\"r.example\":{\"username\":1,\"password\":\"p\"}}", "[\"r.example\"].username" },
		{ "{\"r\":{}", "line 1" },
	};
	struct op_registry_auth a = { 0 };
	char err[512], path[] = "/tmp/test-operator-creds.XXXXXX";
	int fd;

	ASSERT_OK(op_registry_auth_parse(good, strlen(good), &a, err, sizeof(err)), err);
	cr_assert_eq(a.n, 2);
	ASSERT_STREQ(a.v[0].registry, "registry.example:5000", "first registry");
	ASSERT_STREQ(a.v[1].password, "q", "second password");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ASSERT_ERR(op_registry_auth_parse(bad[i].json, strlen(bad[i].json), &a, err, sizeof(err)), -EINVAL,
			   bad[i].json);
		cr_assert(strstr(err, bad[i].msg), "%s: \"%s\" lacks \"%s\"", bad[i].json, err, bad[i].msg);
		cr_assert_eq(a.n, 0, "nothing kept on failure");
	}

	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, good, strlen(good)), (ssize_t)strlen(good));
	close(fd);
	cr_assert_eq(chmod(path, 0644), 0);
	ASSERT_ERR(op_registry_auth_load(path, &a, err, sizeof(err)), -EPERM, "mode 0644");
	cr_assert(strstr(err, "0600"), "%s", err);
	cr_assert_eq(chmod(path, 0600), 0);
	ASSERT_OK(op_registry_auth_load(path, &a, err, sizeof(err)), err);
	cr_assert_eq(a.n, 2);
	op_registry_auth_clear(&a);
	cr_assert_eq(a.n, 0);
	cr_assert_null(a.v);
	unlink(path);
}

/* A get answered from the kept answer is the answer of the store: the
 * same bytes while nothing changed, a new answer after any write (an
 * update, an event), and still 404 for another tenant once the owner's
 * answer is kept. */
Test(operator, get_answers_kept_only_while_the_store_is_unchanged)
{
	char *spec = test_spec("test.invalid/app:1000", 1, 1, 1), *ub = update_body(spec), *first, *p;
	char id[OP_SERVICE_ID_STRLEN];
	struct op_response r;
	struct json_value *v;
	uint64_t g = 0;

	memcpy(id, create("org-a", "p1", "kept", 1, spec), sizeof(id));
	p = path_of(id);
	r = req("GET", p, "org-a", "p1", FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	first = strdup(r.body);
	op_response_clear(&r);
	r = req("GET", p, "org-a", "p1", FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	ASSERT_STREQ(r.body, first, "an unchanged store answers the same bytes");
	op_response_clear(&r);

	/* Kept for org-a p1: another organization and another project still
	 * get the unknown id's answer. */
	r = req("GET", p, "org-b", "p1", FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL);
	expect_error(&r, 404, "not-found");
	op_response_clear(&r);
	r = req("GET", p, "org-a", "p2", FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL);
	expect_error(&r, 404, "not-found");
	op_response_clear(&r);

	r = req("PUT", p, "org-a", "p1", FLASH_AUTH_ACTION_UPDATE, 2, ub);
	cr_assert(r.status == 200 || r.status == 202, "%u %s", r.status, r.body);
	op_response_clear(&r);
	r = req("GET", p, "org-a", "p1", FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_neq(r.body, first, "an update retires the kept answer");
	v = parse(&r);
	json_get_uint64(json_get(v, "generation"), &g);
	cr_assert_eq(g, 2, "the new generation is shown");
	json_free(v);
	op_response_clear(&r);

	r = req("DELETE", p, "org-a", "p1", FLASH_AUTH_ACTION_DELETE, 3, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	op_response_clear(&r);
	r = req("GET", p, "org-a", "p1", FLASH_AUTH_ACTION_GET, UINT64_MAX, NULL);
	expect_error(&r, 404, "not-found");
	op_response_clear(&r);
	free(first);
	free(p);
	free(ub);
	free(spec);
}

/* ---------------------------------------------------------------- logs */

/* The runtime's service source, always busy: its loop never acts (nor
 * sweeps the log files the test writes). */
static int no_services(void *ctx, struct op_service ***ret, size_t *ret_n)
{
	(void)ctx;
	(void)ret;
	(void)ret_n;
	return -EBUSY;
}

/* The query of one logs request: "k=v&k=v" (values not encoded). */
static const char *query_of(void *ctx, const char *key)
{
	static char vals[8][128];
	static unsigned int next;
	char *val = vals[next++ % 8]; /* the provider holds up to seven values at once (exec) */
	const char *q = ctx;

	for (const char *p = q; p && *p;) {
		const char *eq = strchr(p, '='), *amp = strchr(p, '&');
		size_t kl = eq ? (size_t)(eq - p) : 0, vl;

		if (!eq)
			break;
		vl = amp ? (size_t)(amp - eq - 1) : strlen(eq + 1);
		if (kl == strlen(key) && strncmp(p, key, kl) == 0 && vl < sizeof(vals[0])) {
			memcpy(val, eq + 1, vl);
			val[vl] = '\0';
			return val;
		}
		p = amp ? amp + 1 : NULL;
	}
	return NULL;
}

static struct op_response logs_req(const char *id, const char *query, const char *org, enum flash_auth_action action)
{
	struct op_response r;
	char *tok = test_mint(signer, org, "p1", action, UINT64_MAX), hdr[9000], path[160];

	snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	snprintf(path, sizeof(path), "/provider/v1/services/%s/logs", id);
	struct op_request rq = { .method = "GET", .path = path, .authorization = hdr, .body = "",
				 .query = query ? query_of : NULL, .query_ctx = (void *)query };
	op_provider_handle(prov, &rq, &r);
	free(tok);
	return r;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* GET /provider/v1/services/ID/logs (token action logs): the replicas'
 * lines merged oldest first (the rotated file before the live one),
 * ?replica and ?since narrow them, bytes that are not UTF-8 become '?',
 * malformed parameters are 400, another tenant's or a deleted service 404,
 * an operator without a runtime 409. */
Test(operator, logs_route)
{
	char *spec = test_spec("test.invalid/app:1000", 1, 1, 1);
	char id[OP_SERVICE_ID_STRLEN], rtdir[160], bin[200], ld[240], path[300], err[256];
	struct op_runtime *rt = NULL;
	struct json_value *v;
	const struct json_value *lines;
	struct op_response r;

	snprintf(id, sizeof(id), "%s", create("org-a", "p1", "web", 1, spec));
	r = logs_req(id, NULL, "org-a", FLASH_AUTH_ACTION_LOGS);
	expect_error(&r, 409, "no-runtime");
	op_response_clear(&r);
	r = logs_req(id, NULL, "org-a", FLASH_AUTH_ACTION_GET);
	expect_error(&r, 403, "wrong-action");
	op_response_clear(&r);

	/* A runtime that runs nothing: only its log files matter. */
	snprintf(rtdir, sizeof(rtdir), "%s/runtime", dir);
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	cr_assert(mkdir(bin, 0700) == 0);
	snprintf(path, sizeof(path), "%s/flowsdn-cni", bin);
	cr_assert(symlink("/bin/true", path) == 0);
	struct op_runtime_opts ro = { .sz = sizeof(ro), .dir = rtdir, .runsc = "/bin/true", .cni_bin_dir = bin,
				      .services = no_services, .interval_ms = 60000 };
	err[0] = '\0';
	cr_assert(op_runtime_start(&ro, &rt, err, sizeof(err)) == 0, "runtime: %s", err);
	op_provider_set_runtime(prov, rt);

	r = logs_req(id, NULL, "org-a", FLASH_AUTH_ACTION_LOGS);
	cr_assert_eq(r.status, 200, "no logs yet: %d %s", r.status, r.body);
	v = parse(&r);
	cr_assert(json_is(lines = json_get(v, "lines"), JSON_ARRAY) && lines->u.array.n == 0, "%s", r.body);
	json_free(v);
	op_response_clear(&r);

	snprintf(ld, sizeof(ld), "%s/logs/%s", rtdir, id);
	ASSERT_OK(util_mkdir_p(ld, 0700), "logs dir");
	snprintf(path, sizeof(path), "%s/0.log.1", ld);
	write_text(path, "2026-12-01T10:00:00.000001Z stdout zero-old\n");
	snprintf(path, sizeof(path), "%s/0.log", ld);
	write_text(path, "2026-12-01T10:00:02.000000Z stdout zero-new\n"
			 "2026-12-01T10:00:04.000000Z stderr bad \xff byte\n");
	snprintf(path, sizeof(path), "%s/1.log", ld);
	write_text(path, "2026-12-01T10:00:01.500000Z stderr one-a\n2026-12-01T10:00:03.000000Z stdout one-b\n");

	r = logs_req(id, NULL, "org-a", FLASH_AUTH_ACTION_LOGS);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	v = parse(&r);
	lines = json_get(v, "lines");
	cr_assert(json_is(lines, JSON_ARRAY) && lines->u.array.n == 5, "%s", r.body);
	{
		static const char *const texts[] = { "zero-old", "one-a", "zero-new", "one-b", "bad ? byte" };
		static const unsigned int replicas[] = { 0, 1, 0, 1, 0 };
		static const char *const streams[] = { "stdout", "stderr", "stdout", "stdout", "stderr" };

		for (size_t i = 0; i < 5; i++) {
			const struct json_value *l = lines->u.array.items[i];
			uint64_t rep = 99;

			cr_assert_str_eq(sget(l, "text"), texts[i], "line %zu in time order", i);
			cr_assert_str_eq(sget(l, "stream"), streams[i], "line %zu stream", i);
			cr_assert(json_get_uint64(json_get(l, "replica"), &rep) == 0 && rep == replicas[i], "line %zu", i);
		}
		ASSERT_STREQ(sget(lines->u.array.items[0], "time"), "2026-12-01T10:00:00.000001Z", "time kept");
	}
	ASSERT_STREQ(sget(v, "service_id"), id, "service id");
	json_free(v);
	op_response_clear(&r);

	r = logs_req(id, "replica=1&since=2026-12-01T10:00:02Z", "org-a", FLASH_AUTH_ACTION_LOGS);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	v = parse(&r);
	lines = json_get(v, "lines");
	cr_assert(lines->u.array.n == 1, "replica 1 since 10:00:02: %s", r.body);
	ASSERT_STREQ(sget(lines->u.array.items[0], "text"), "one-b", "replica and since");
	json_free(v);
	op_response_clear(&r);
	r = logs_req(id, "since=2026-12-01T10:00:01.5Z", "org-a", FLASH_AUTH_ACTION_LOGS);
	v = parse(&r);
	cr_assert(json_get(v, "lines")->u.array.n == 4, "fractional since is inclusive: %s", r.body);
	json_free(v);
	op_response_clear(&r);

	static const char *const bad_queries[] = { "replica=x", "replica=-1", "replica=65536", "since=yesterday",
						   "since=2026-12-01T10:00:00", "since=2026-12-01T10:00:00.Z",
						   "since=2026-13-01T10:00:00Z", "since=2026-12-01T10:00:00.1234567890Z" };
	for (size_t i = 0; i < sizeof(bad_queries) / sizeof(bad_queries[0]); i++) {
		r = logs_req(id, bad_queries[i], "org-a", FLASH_AUTH_ACTION_LOGS);
		expect_error(&r, 400, "bad-request");
		cr_assert(strstr(r.body, strchr(bad_queries[i], '=') + 1), "the message names the value: %s", r.body);
		op_response_clear(&r);
	}
	r = logs_req(id, NULL, "org-b", FLASH_AUTH_ACTION_LOGS);
	expect_error(&r, 404, "not-found");
	op_response_clear(&r);
	r = logs_req("fs-00000000000000000000000000000000", NULL, "org-a", FLASH_AUTH_ACTION_LOGS);
	expect_error(&r, 404, "not-found");
	op_response_clear(&r);
	{
		/* Only GET, and only /logs below a service. */
		char p2[200];
		struct op_request rq = { .method = "POST", .path = p2, .body = "" };

		snprintf(p2, sizeof(p2), "/provider/v1/services/%s/logs", id);
		op_provider_handle(prov, &rq, &r);
		expect_error(&r, 405, "method-not-allowed");
		op_response_clear(&r);
		snprintf(p2, sizeof(p2), "/provider/v1/services/%s/shell", id);
		rq.method = "GET";
		op_provider_handle(prov, &rq, &r);
		expect_error(&r, 404, "no-route");
		op_response_clear(&r);
	}
	char *dp = path_of(id);
	r = req("DELETE", dp, "org-a", "p1", FLASH_AUTH_ACTION_DELETE, 2, NULL);
	cr_assert_eq(r.status, 200, "delete: %s", r.body);
	op_response_clear(&r);
	r = logs_req(id, NULL, "org-a", FLASH_AUTH_ACTION_LOGS);
	expect_error(&r, 404, "not-found");
	op_response_clear(&r);

	op_provider_set_runtime(prov, NULL);
	op_runtime_stop(rt);
	free(dp);
	free(spec);
}

/* ---------------------------------------------------------------- metering live */

static int64_t clock_of(void *ctx)
{
	(void)ctx;
	return fake_now;
}

/* What the runtime does each pass for every live service: tell the meter
 * its ready replicas, ask whether it is suspended.  @ready: per service
 * (by name), the replicas it runs; returns the suspended names. */
static void runtime_pass(const char *const *names, const uint32_t *ready, size_t n, bool *suspended)
{
	struct op_service **list = NULL;
	size_t nl = 0;

	ASSERT_OK(op_provider_live_services(prov, &list, &nl), "live services");
	for (size_t k = 0; k < n; k++) {
		suspended[k] = false;
		for (size_t i = 0; i < nl; i++) {
			struct flash_spec *spec = NULL;
			char msg[512] = "";
			int r;

			if (strcmp(list[i]->name, names[k]) != 0)
				continue;
			ASSERT_OK(flash_spec_parse(list[i]->spec, strlen(list[i]->spec), NULL, &spec, NULL), "spec");
			r = op_provider_suspended(prov, list[i], spec, msg, sizeof(msg));
			cr_assert(r == 0 || r == -EDQUOT, "%s: %d", names[k], r);
			suspended[k] = r == -EDQUOT;
			cr_assert(!suspended[k] || strstr(msg, "Monday") || strstr(msg, "00:00"),
				  "the message says when it lifts: %s", msg);
			/* A suspended service's replicas are stopped. */
			ASSERT_OK(op_provider_observe(prov, list[i], spec, suspended[k] ? 0 : ready[k]), "observe");
			flash_spec_free(spec);
		}
	}
	op_service_list_free(list, nl);
}

/* Reaching an organization's weekly GPU limit suspends its GPU workloads
 * only, its memory or CPU limit all of them, another organization stays;
 * everything resumes at Monday 00:00 UTC (the clock is injected); the
 * usage route shows the week, exact, and keeps a deleted service's
 * record. */
Test(operator, weekly_limits_suspend_and_resume_on_monday)
{
	static const char pol[] =
		"{\"regions\":[\"heteronet-global\"],\"gpu_catalog\":[\"nvidia-geforce-gtx-1080-ti\"],"
		"\"protected_cidrs\":[],"
		"\"workload_limits\":{\"cpu_millis\":4000,\"memory_mib\":8192,\"replicas\":10,\"gpus\":1,"
		"\"ephemeral_storage_gib\":50,\"ports\":16},"
		"\"organization_limits\":{\"cpu_millis\":16000,\"memory_mib\":32768,\"replicas\":40,\"gpus\":4,"
		"\"ephemeral_storage_gib\":500,\"ports\":64},"
		"\"weekly_limits\":{\"cpu_millicore_seconds\":300000,\"memory_mib_seconds\":2048000,\"gpu_seconds\":100}}";
	static const char *const names[] = { "cpu", "gpu", "big" };
	const uint32_t one[] = { 1, 1, 1 };
	char *cpu = test_spec("test.invalid/a:1", 0, 1, 1), *gpu = NULL, *big = NULL, *b, week[16];
	int64_t t0 = 0, monday = 0;
	bool susp[3];
	struct op_response r;
	struct json_value *v;

	cr_assert(asprintf(&gpu, "%.*s\"gpu_type\":\"nvidia-geforce-gtx-1080-ti\",%s",
			   (int)(strstr(cpu, "\"cpu_millis\"") - cpu), cpu, strstr(cpu, "\"cpu_millis\"")) > 0);
	cr_assert(asprintf(&big, "%.*s\"memory_mib\":4096%s", (int)(strstr(cpu, "\"memory_mib\":128") - cpu), cpu,
			   strstr(cpu, "\"memory_mib\":128") + strlen("\"memory_mib\":128")) > 0);
	ASSERT_OK(flash_meter_parse_time("2026-12-02T12:00:00Z", &t0), "a Wednesday");
	ASSERT_OK(flash_meter_parse_time("2026-12-07T00:00:00Z", &monday), "the next Monday");
	teardown();
	start(NULL, pol);
	op_provider_free(prov);
	struct op_provider_opts o = { .sz = sizeof(o), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE, .keys = keys,
				      .policy = policy, .store = store, .metrics = metrics, .image = &test_image_ops,
				      .now = clock_of };
	ASSERT_OK(op_provider_new(&o, &prov), "provider with an injected clock");
	fake_now = t0;
	char cpu_id[OP_SERVICE_ID_STRLEN];
	snprintf(cpu_id, sizeof(cpu_id), "%s", create("org-a", "p1", "cpu", 1, cpu));
	create("org-a", "p1", "gpu", 1, gpu);
	create("org-b", "p1", "big", 1, big);

	runtime_pass(names, one, 3, susp); /* all three ready from t0 */
	cr_assert(!susp[0] && !susp[1] && !susp[2], "nothing used yet");
	fake_now = t0 + 99;
	runtime_pass(names, one, 3, susp);
	cr_assert(!susp[1], "99 GPU-seconds of 100");
	fake_now = t0 + 100;
	runtime_pass(names, one, 3, susp);
	cr_assert(susp[1] && !susp[0] && !susp[2], "the GPU limit suspends the GPU workload only: %d %d %d", susp[0],
		  susp[1], susp[2]);
	fake_now = t0 + 500; /* big: 4096 MiB x 500 s = the memory limit */
	runtime_pass(names, one, 3, susp);
	cr_assert(susp[2] && !susp[0] && susp[1], "the memory limit suspends org-b; org-a's CPU workload runs");
	fake_now = t0 + 1100; /* org-a: 250 m x 1100 s + 250 m x 100 s = 300000 */
	runtime_pass(names, one, 3, susp);
	cr_assert(susp[0] && susp[1], "the CPU limit suspends all of org-a's workloads");
	r = req("GET", "/provider/v1/usage", "org-a", NULL, FLASH_AUTH_ACTION_USAGE, UINT64_MAX, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	v = parse(&r);
	ASSERT_OK(flash_meter_week_name(t0, week, sizeof(week)), "week");
	ASSERT_STREQ(sget(v, "week"), week, "usage names the week");
	ASSERT_STREQ(sget(v, "week_start"), "2026-11-30T00:00:00Z", "from Monday");
	{
		int64_t c = -1, g = -1;

		json_get_int64(json_get(json_get(v, "organization"), "cpu_millicore_seconds"), &c);
		json_get_int64(json_get(json_get(v, "organization"), "gpu_seconds"), &g);
		cr_assert(c == 300000 && g == 100, "cpu %lld, gpu %lld", (long long)c, (long long)g);
	}
	json_free(v);
	op_response_clear(&r);

	/* One second before Monday 00:00 UTC still suspended; at it, all run. */
	fake_now = monday - 1;
	runtime_pass(names, one, 3, susp);
	cr_assert(susp[0] && susp[1] && susp[2], "still this week");
	fake_now = monday;
	runtime_pass(names, one, 3, susp);
	cr_assert(!susp[0] && !susp[1] && !susp[2], "resumed at Monday 00:00 UTC: %d %d %d", susp[0], susp[1], susp[2]);

	/* Usage outlives a deleted service. */
	fake_now = monday + 10;
	runtime_pass(names, one, 3, susp);
	b = path_of(cpu_id);
	r = req("DELETE", b, "org-a", "p1", FLASH_AUTH_ACTION_DELETE, 2, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	op_response_clear(&r);
	fake_now = monday + 20;
	r = req("GET", "/provider/v1/usage", "org-a", NULL, FLASH_AUTH_ACTION_USAGE, UINT64_MAX, NULL);
	v = parse(&r);
	{
		const struct json_value *list = json_get(v, "services");
		bool found = false;

		for (size_t i = 0; json_is(list, JSON_ARRAY) && i < list->u.array.n; i++) {
			const struct json_value *e = list->u.array.items[i];
			bool del = false;
			int64_t c = -1;

			if (strcmp(sget(e, "service_id"), cpu_id) != 0)
				continue;
			found = true;
			json_get_bool(json_get(e, "deleted"), &del);
			json_get_int64(json_get(json_get(e, "usage"), "cpu_millicore_seconds"), &c);
			cr_assert(del && c == 2500, "the deleted service's record: deleted %d, %lld", del, (long long)c);
		}
		cr_assert(found, "the deleted service's usage is still listed: %s", r.body);
	}
	json_free(v);
	op_response_clear(&r);
	free(b);
	free(cpu);
	free(gpu);
	free(big);
}

/* ---------------------------------------------------------------- exec */

/* One exec request's query and headers ("Name: value" lines). */
struct exec_ctx {
	const char *query;
	const char *const *headers;
};

static const char *exec_query(void *ctx, const char *key)
{
	return query_of((void *)((struct exec_ctx *)ctx)->query, key);
}

/* The first value of @key only: enough for the refusals tested. */
static size_t exec_query_all(void *ctx, const char *key, const char **out, size_t max)
{
	const char *v = exec_query(ctx, key);

	if (!v || max == 0)
		return 0;
	out[0] = v;
	return 1;
}

static const char *exec_header(void *ctx, const char *name)
{
	const struct exec_ctx *x = ctx;

	for (size_t i = 0; x->headers && x->headers[i]; i++) {
		size_t n = strlen(name);

		if (strncasecmp(x->headers[i], name, n) == 0 && x->headers[i][n] == ':')
			return x->headers[i] + n + 2;
	}
	return NULL;
}

static const char *const ws_headers[] = { "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
					  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
					  "Sec-WebSocket-Protocol: flash.exec.v1", NULL };

static struct op_response exec_req(const char *id, const char *query, const char *const *headers, const char *org,
				   enum flash_auth_action action)
{
	struct exec_ctx x = { .query = query, .headers = headers };
	struct op_response r;
	char *tok = org ? test_mint(signer, org, "p1", action, UINT64_MAX) : NULL, hdr[9000], path[160];

	if (tok)
		snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	snprintf(path, sizeof(path), "/provider/v1/services/%s/exec", id);
	struct op_request rq = { .method = "GET", .path = path, .authorization = tok ? hdr : NULL, .body = "",
				 .query = exec_query, .query_ctx = &x, .header = exec_header,
				 .query_all = exec_query_all };
	op_provider_handle(prov, &rq, &r);
	free(tok);
	return r;
}

/* GET /provider/v1/services/ID/exec (token action exec): the refusals
 * before any protocol switch, in order (token, handshake, query, tenant,
 * runtime, readiness); a spec with domains refused once a runtime runs. */
Test(operator, exec_route_refusals)
{
	static const char *const old_version[] = { "Upgrade: websocket", "Connection: Upgrade",
						   "Sec-WebSocket-Version: 8",
						   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
						   "Sec-WebSocket-Protocol: flash.exec.v1", NULL };
	static const char *const no_protocol[] = { "Upgrade: websocket", "Connection: Upgrade",
						   "Sec-WebSocket-Version: 13",
						   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", NULL };
	char *spec = test_spec("test.invalid/app:1000", 1, 1, 1), *domains = NULL, *body;
	char id[OP_SERVICE_ID_STRLEN], rtdir[160], bin[200], path[300], err[256];
	struct op_runtime *rt = NULL;
	struct op_response r;
	struct json_value *v;

	snprintf(id, sizeof(id), "%s", create("org-a", "p1", "web", 1, spec));
	r = exec_req(id, NULL, ws_headers, NULL, FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 401, "unauthorized");
	op_response_clear(&r);
	r = exec_req(id, NULL, ws_headers, "org-a", FLASH_AUTH_ACTION_LOGS);
	expect_error(&r, 403, "wrong-action");
	op_response_clear(&r);
	r = exec_req(id, NULL, NULL, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 400, "bad-request");
	cr_assert(strstr(r.body, "Upgrade: websocket"), "names the missing header: %s", r.body);
	op_response_clear(&r);
	r = exec_req(id, NULL, old_version, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 426, "upgrade-required");
	op_response_clear(&r);
	r = exec_req(id, NULL, no_protocol, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 400, "bad-request");
	cr_assert(strstr(r.body, "flash.exec.v1"), "%s", r.body);
	op_response_clear(&r);
	r = exec_req(id, "tty=yes", ws_headers, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 400, "bad-request");
	op_response_clear(&r);
	r = exec_req(id, "term=a;b", ws_headers, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 400, "bad-request");
	op_response_clear(&r);
	/* argv=message stands for the command= arguments, never beside them. */
	r = exec_req(id, "argv=message&command=id", ws_headers, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 400, "bad-request");
	cr_assert(strstr(r.body, "argv=message"), "names argv=message: %s", r.body);
	op_response_clear(&r);
	r = exec_req(id, "argv=url", ws_headers, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 400, "bad-request");
	op_response_clear(&r);
	r = exec_req(id, NULL, ws_headers, "org-b", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 404, "not-found");
	op_response_clear(&r);
	r = exec_req(id, NULL, ws_headers, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 409, "no-runtime");
	cr_assert_null(r.upgrade);
	op_response_clear(&r);

	/* A runtime that runs nothing: no replica is ever ready. */
	snprintf(rtdir, sizeof(rtdir), "%s/runtime", dir);
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	cr_assert(mkdir(bin, 0700) == 0);
	snprintf(path, sizeof(path), "%s/flowsdn-cni", bin);
	cr_assert(symlink("/bin/true", path) == 0);
	struct op_runtime_opts ro = { .sz = sizeof(ro), .dir = rtdir, .runsc = "/bin/true", .cni_bin_dir = bin,
				      .services = no_services, .interval_ms = 60000 };
	err[0] = '\0';
	cr_assert(op_runtime_start(&ro, &rt, err, sizeof(err)) == 0, "runtime: %s", err);
	op_provider_set_runtime(prov, rt);
	r = exec_req(id, "tty=1&cols=100&rows=30", ws_headers, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 409, "not-ready");
	cr_assert_null(r.upgrade);
	op_response_clear(&r);
	r = exec_req(id, "replica=3", ws_headers, "org-a", FLASH_AUTH_ACTION_EXEC);
	expect_error(&r, 404, "no-replica");
	op_response_clear(&r);

	/* domains: refused on the single-node runtime, naming the field. */
	cr_assert(asprintf(&domains, "%.*s,\"domains\":[{\"host\":\"web.example.org\",\"port\":\"p0\"}]}",
			   (int)strlen(spec) - 1, spec) > 0);
	body = create_body("dom", domains);
	r = req("POST", "/provider/v1/services", "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1, body);
	expect_error(&r, 422, "invalid-spec");
	v = parse(&r);
	ASSERT_STREQ(sget(json_get(v, "error"), "path"), "domains", "the field is named");
	json_free(v);
	op_response_clear(&r);
	free(body);
	free(domains);
	op_provider_set_runtime(prov, NULL);
	op_runtime_stop(rt);
	free(spec);
}

/* flash-operator --test-meter-clock: the file's time at every reading,
 * the last good one when a reading fails; a file without a time refuses
 * the start with a message naming it. */
Test(operator, meter_clock_reads_its_file)
{
	char cdir[] = "/tmp/test-meter-clock.XXXXXX", path[64], err[256] = "";
	struct op_meter_clock *c = NULL;
	int64_t t0 = 0, t1 = 0;

	cr_assert(mkdtemp(cdir));
	snprintf(path, sizeof(path), "%s/clock", cdir);
	cr_assert_eq(op_meter_clock_open(path, &c, err, sizeof(err)), -ENOENT, "no file");
	cr_assert(strstr(err, path), "the message names the file: %s", err);
	cr_assert_null(c, "untouched on failure");
	ASSERT_OK(util_write_file_atomic(path, "yesterday\n", 10, 0600), "write");
	cr_assert_eq(op_meter_clock_open(path, &c, err, sizeof(err)), -EINVAL, "not a time");
	cr_assert(strstr(err, "RFC 3339"), "%s", err);
	ASSERT_OK(util_write_file_atomic(path, "2026-12-02T12:00:00Z\n", 21, 0600), "write");
	cr_assert_eq(op_meter_clock_open(path, &c, err, sizeof(err)), 0, "open: %s", err);
	ASSERT_OK(flash_meter_parse_time("2026-12-02T12:00:00Z", &t0), "t0");
	ASSERT_OK(flash_meter_parse_time("2026-12-07T00:00:00Z", &t1), "t1");
	cr_assert_eq(op_meter_clock_now(c), t0, "the file's time");
	cr_assert_eq(op_meter_clock_now(c), t0, "standing still");
	ASSERT_OK(util_write_file_atomic(path, "2026-12-07T00:00:00Z", 20, 0600), "rewrite");
	cr_assert_eq(op_meter_clock_now(c), t1, "read again at every reading");
	ASSERT_OK(util_write_file_atomic(path, "2026-12-0", 9, 0600), "torn");
	cr_assert_eq(op_meter_clock_now(c), t1, "a torn file keeps the last good time");
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(op_meter_clock_now(c), t1, "a missing file too");
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(op_meter_clock_now(c), t1, "a directory in its place too");
	op_meter_clock_free(c);
	rmdir(path);
	rmdir(cdir);
}
