/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OpenAPI v3 validator against the real Kubernetes schemas: objects a
 * real apiserver accepted pass; a wrong type, a missing required field, an
 * unknown field, a bad enum value and an out-of-range int32 are each
 * caught with their JSON path; the recorded FlashService CRD refuses what
 * the server refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <flash/render.h>

#include "helpers.h"
#include "render-test.h"

static struct flash_schema_set *set;

static void setup(void)
{
	set = render_test_schema_set(true);
}

static void teardown(void)
{
	flash_schema_set_free(set);
	set = NULL;
}

TestSuite(schema, .init = setup, .fini = teardown);

static void expect_valid(const char *text, const char *what)
{
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	int r = flash_schema_validate_object(set, text, strlen(text), d);

	cr_assert(r == 0, "%s: refused (%d %s) at \"%s\": %s", what, r, flash_strerror(r), diag_path(d), diag_message(d));
}

static void expect_invalid(const char *text, const char *path, const char *msg_part, const char *what)
{
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	int r = flash_schema_validate_object(set, text, strlen(text), d);

	ASSERT_ERR(r, -FLASH_E_RENDER_INVALID, what);
	ASSERT_STREQ(diag_path(d), path, what);
	cr_assert(strstr(diag_message(d), msg_part), "%s: message \"%s\" lacks \"%s\"", what, diag_message(d), msg_part);
}

/* Replaces the first @from in @text by @to (new string). */
static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	char *out;

	cr_assert(at, "\"%s\" not in the document", from);
	cr_assert(asprintf(&out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from)) > 0);
	return out;
}

Test(schema, recorded_objects_pass)
{
	static const char *const files[] = { "deployment", "service-lb", "networkpolicy", "pvc-rwx",
					     "crd-flashservices" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[256];
		char *text;

		snprintf(path, sizeof(path), "k8s/recorded/%s.json", files[i]);
		text = render_test_read(path, NULL);
		expect_valid(text, files[i]);
		free(text);
	}
}

Test(schema, wrong_type)
{
	char *dep = render_test_read("k8s/recorded/deployment.json", NULL);
	char *bad = replace(dep, "\"replicas\": 1", "\"replicas\": \"1\"");

	expect_invalid(bad, "spec.replicas", "must be of type integer", "replicas as a string");
	free(bad);
	bad = replace(dep, "\"hostNetwork\": false", "\"hostNetwork\": 0");
	expect_invalid(bad, "spec.template.spec.hostNetwork", "must be of type boolean", "hostNetwork as a number");
	free(bad);
	bad = replace(dep, "\"containerPort\": 8080", "\"containerPort\": 80.5");
	expect_invalid(bad, "spec.template.spec.containers[0].ports[0].containerPort", "integer", "fractional port");
	free(bad);
	free(dep);
}

Test(schema, missing_required)
{
	char *dep = render_test_read("k8s/recorded/deployment.json", NULL);
	/* containers[0].name is required by io.k8s.api.core.v1.Container. */
	char *bad = replace(dep, "\"name\": \"app\",", "");

	expect_invalid(bad, "spec.template.spec.containers[0]", "required field \"name\" is missing", "no container name");
	free(bad);
	free(dep);

	dep = render_test_read("k8s/recorded/networkpolicy.json", NULL);
	bad = replace(dep, "\"cidr\": \"0.0.0.0/0\",", "");
	expect_invalid(bad, "spec.ingress[0].from[0].ipBlock", "required field \"cidr\"", "ipBlock without cidr");
	free(bad);
	free(dep);
}

Test(schema, unknown_field)
{
	char *svc = render_test_read("k8s/recorded/service-lb.json", NULL);
	char *bad = replace(svc, "\"type\": \"LoadBalancer\",", "\"type\": \"LoadBalancer\", \"loadBalancerClas\": \"x\",");

	expect_invalid(bad, "spec.loadBalancerClas", "unknown field \"loadBalancerClas\"", "misspelt field");
	free(bad);
	bad = replace(svc, "\"targetPort\": 8080", "\"targetPort\": 8080, \"hostPort\": 80");
	expect_invalid(bad, "spec.ports[0].hostPort", "unknown field \"hostPort\"", "unknown field in a list item");
	free(bad);
	free(svc);
}

Test(schema, enum_and_ranges)
{
	char *svc = render_test_read("k8s/recorded/service-lb.json", NULL);
	char *bad = replace(svc, "\"protocol\": \"UDP\"", "\"protocol\": \"udp\"");

	expect_invalid(bad, "spec.ports[1].protocol", "not one of the allowed values", "lower-case protocol");
	free(bad);
	bad = replace(svc, "\"port\": 80,", "\"port\": 4294967296,");
	expect_invalid(bad, "spec.ports[0].port", "32-bit", "port beyond int32");
	free(bad);
	/* int-or-string: a targetPort may be a name, not a boolean. */
	bad = replace(svc, "\"targetPort\": 8080", "\"targetPort\": \"http\"");
	expect_valid(bad, "named targetPort");
	free(bad);
	bad = replace(svc, "\"targetPort\": 8080", "\"targetPort\": true");
	expect_invalid(bad, "spec.ports[0].targetPort", "oneOf", "boolean targetPort");
	free(bad);
	/* list-type map keyed by (port, protocol): a duplicate is refused. */
	bad = replace(svc, "\"port\": 7777,", "\"port\": 80,");
	expect_valid(bad, "same port number, other protocol");
	free(bad);
	free(svc);

	svc = render_test_read("k8s/recorded/deployment.json", NULL);
	bad = replace(svc, "\"protocol\": \"UDP\"", "\"protocol\": \"TCP\"");
	free(svc);
	svc = replace(bad, "\"containerPort\": 7777", "\"containerPort\": 8080");
	expect_invalid(svc, "spec.template.spec.containers[0].ports[1]", "duplicates item 0", "duplicate port/protocol");
	free(bad);
	free(svc);
}

Test(schema, no_schema_for_kind)
{
	static const char obj[] = "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\"}";
	_cleanup_diag_ struct flash_diag *d = render_test_diag();

	ASSERT_ERR(flash_schema_validate_object(set, obj, strlen(obj), d), -FLASH_E_RENDER_NO_SCHEMA, "no policy doc");
	ASSERT_ERR(flash_schema_validate_object(set, "{", 1, d), -FLASH_E_RENDER_BAD_DOCUMENT, "not JSON");
	ASSERT_ERR(flash_schema_validate_object(NULL, obj, strlen(obj), d), -EINVAL, "NULL set");
}

Test(schema, named_schema)
{
	static const char good[] = "{\"name\":\"x\",\"port\":53,\"protocol\":\"UDP\"}";
	static const char bad[] = "{\"name\":\"x\"}";
	_cleanup_diag_ struct flash_diag *d = render_test_diag();

	ASSERT_OK(flash_schema_validate(set, "io.k8s.api.core.v1.ServicePort", good, strlen(good), d), "ServicePort");
	ASSERT_ERR(flash_schema_validate(set, "io.k8s.api.core.v1.ServicePort", bad, strlen(bad), d),
		   -FLASH_E_RENDER_INVALID, "ServicePort without port");
	ASSERT_ERR(flash_schema_validate(set, "io.k8s.api.core.v1.NoSuch", good, strlen(good), d),
		   -FLASH_E_RENDER_NO_SCHEMA, "unknown schema");
}

/* The recorded CRD, as a validator of FlashService objects, agrees with
 * what the real server answered (03: 201, 04: 422, 05: 400 Strict). */
Test(schema, recorded_crd_agrees_with_server)
{
	struct flash_schema_set *crd_set = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	char *crd = render_test_read("k8s/recorded/crd-flashservices.json", NULL);
	char *valid = render_test_read("k8s/recorded/flashservice-valid.json", NULL);
	char *invalid = render_test_read("k8s/recorded/flashservice-invalid.json", NULL);
	char *unknown = render_test_read("k8s/recorded/flashservice-unknown-fields.json", NULL);
	char *fixed;

	ASSERT_OK(flash_schema_set_new(&crd_set), "new");
	ASSERT_OK(flash_schema_set_add_crd(crd_set, crd, strlen(crd), d), "add crd");
	ASSERT_OK(flash_schema_validate_object(crd_set, valid, strlen(valid), d), "03 valid");
	ASSERT_ERR(flash_schema_validate_object(crd_set, invalid, strlen(invalid), d), -FLASH_E_RENDER_INVALID, "04");
	/* The first cause in document order: no image. */
	ASSERT_STREQ(diag_path(d), "spec", "04 path");
	cr_assert(strstr(diag_message(d), "\"image\""), "04: %s", diag_message(d));
	fixed = replace(invalid, "\"replicas\": -1,", "\"image\": \"x\", \"replicas\": -1,");
	ASSERT_ERR(flash_schema_validate_object(crd_set, fixed, strlen(fixed), d), -FLASH_E_RENDER_INVALID, "04b");
	ASSERT_STREQ(diag_path(d), "spec.replicas", "04 replicas");
	free(fixed);
	ASSERT_ERR(flash_schema_validate_object(crd_set, unknown, strlen(unknown), d), -FLASH_E_RENDER_INVALID, "05");
	ASSERT_STREQ(diag_path(d), "spec.replica", "05 path");
	cr_assert(strstr(diag_message(d), "unknown field \"replica\""), "05: %s", diag_message(d));
	flash_schema_set_free(crd_set);
	free(crd);
	free(valid);
	free(invalid);
	free(unknown);
}

/* Documents that are not OpenAPI documents or CRDs are refused with the
 * path of what is wrong, and leave the set as it was. */
Test(schema, bad_documents_named_by_path)
{
	static const struct {
		bool crd;
		const char *text, *path, *code;
	} cases[] = {
		{ false, "{\"openapi\":\"3.0.0\"}", "components.schemas", "required" },
		{ false, "{\"components\":{\"schemas\":[]}}", "components.schemas", "type" },
		{ false, "{\"components\":{\"schemas\":{\"a\":{\"x-kubernetes-group-version-kind\":"
			 "[{\"group\":\"\",\"version\":\"v1\"}]}}}}",
		  "components.schemas.a[\"x-kubernetes-group-version-kind\"][0].kind", "required" },
		{ false, "{\"components\":{\"schemas\":{\"a\":{\"x-kubernetes-group-version-kind\":"
			 "[{\"group\":\"\",\"version\":1,\"kind\":\"K\"}]}}}}",
		  "components.schemas.a[\"x-kubernetes-group-version-kind\"][0].version", "type" },
		{ true, "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
			"\"spec\":{\"group\":\"g\",\"names\":{\"kind\":\"K\"}}}", "spec.versions", "required" },
		{ true, "{\"apiVersion\":\"v1\",\"kind\":\"CustomResourceDefinition\","
			"\"spec\":{\"group\":\"g\",\"names\":{\"kind\":\"K\"},\"versions\":[]}}", "apiVersion", "const" },
		{ true, "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
			"\"spec\":{\"group\":\"g\",\"names\":{},\"versions\":[]}}", "spec.names.kind", "required" },
		{ true, "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
			"\"spec\":{\"group\":\"g\",\"names\":{\"kind\":\"K\"},\"versions\":[{\"name\":\"v1\","
			"\"schema\":{\"openAPIV3Schema\":{}}},{\"name\":\"v2\"}]}}",
		  "spec.versions[1].schema.openAPIV3Schema", "required" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct flash_schema_set *s = NULL;
		_cleanup_diag_ struct flash_diag *d = render_test_diag();
		const char *t = cases[i].text;
		int r;

		ASSERT_OK(flash_schema_set_new(&s), "new");
		r = cases[i].crd ? flash_schema_set_add_crd(s, t, strlen(t), d) : flash_schema_set_add_openapi(s, t, strlen(t), d);
		ASSERT_ERR(r, -FLASH_E_RENDER_BAD_DOCUMENT, t);
		ASSERT_STREQ(diag_path(d), cases[i].path, t);
		ASSERT_STREQ(flash_diag_first_error(d)->code, cases[i].code, t);
		/* Nothing was taken in: the first version of the last case is
		 * not there. */
		t = "{\"apiVersion\":\"g/v1\",\"kind\":\"K\"}";
		r = flash_schema_validate_object(s, t, strlen(t), d);
		ASSERT_ERR(r, -FLASH_E_RENDER_NO_SCHEMA, cases[i].text);
		flash_schema_set_free(s);
	}
}

/* Documents from outside whose $refs loop or fan out end, with a problem
 * named: a cycle at the nesting bound (a violation), a fan-out (each
 * level trying two branches, 2^128 steps unbounded) at the step budget
 * (the document refused).  tests/fuzz/corpus/fuzz-openapi/ref-fan-out. */
Test(schema, cyclic_and_fanned_out_refs_are_bounded)
{
	static const char cycle[] = "{\"components\":{\"schemas\":{\"X\":{\"$ref\":\"#/components/schemas/X\","
				    "\"x-kubernetes-group-version-kind\":[{\"group\":\"\",\"version\":\"v1\",\"kind\":\"K\"}]}}}}";
	static const char fan[] = "{\"components\":{\"schemas\":{\"X\":{\"anyOf\":[{\"$ref\":\"#/components/schemas/X\"},"
				  "{\"$ref\":\"#/components/schemas/X\"}],"
				  "\"x-kubernetes-group-version-kind\":[{\"group\":\"\",\"version\":\"v1\",\"kind\":\"K\"}]}}}}";
	static const char obj[] = "{\"apiVersion\":\"v1\",\"kind\":\"K\"}";
	struct flash_schema_set *s = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();

	ASSERT_OK(flash_schema_set_new(&s), "new");
	ASSERT_OK(flash_schema_set_add_openapi(s, cycle, strlen(cycle), d), "cycle");
	ASSERT_ERR(flash_schema_validate_object(s, obj, strlen(obj), d), -FLASH_E_RENDER_INVALID, "cycle");
	cr_assert(strstr(diag_message(d), "deeper than 128"), "%s", diag_message(d));
	flash_schema_set_free(s);

	ASSERT_OK(flash_schema_set_new(&s), "new");
	ASSERT_OK(flash_schema_set_add_openapi(s, fan, strlen(fan), d), "fan-out");
	ASSERT_ERR(flash_schema_validate_object(s, obj, strlen(obj), d), -FLASH_E_RENDER_BAD_DOCUMENT, "fan-out");
	cr_assert(strstr(diag_message(d), "more than 200000 steps"), "%s", diag_message(d));
	ASSERT_ERR(flash_schema_validate_object(s, obj, strlen(obj), d), -FLASH_E_RENDER_BAD_DOCUMENT, "again");
	flash_schema_set_free(s);
}
