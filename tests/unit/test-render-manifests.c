/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* deploy/kubernetes/ and the CRDs: the checked-in files are what libflash
 * generates; every object in them validates against the recorded
 * Kubernetes schemas; the generated CRDs validate FlashService and
 * FlashUsageRecord objects (and refuse broken ones). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <flash/meter.h>
#include <flash/render.h>

#include "helpers.h"
#include "render-test.h"

static bool is_rbac(const char *json)
{
	return strstr(json, "\"apiVersion\":\"rbac.authorization.k8s.io/v1\"") != NULL;
}

Test(manifests, checked_in_files_are_current)
{
	for (int m = 0; m < FLASH_MANIFEST_COUNT_; m++) {
		char rel[256];
		char *want, *got = NULL;
		size_t want_len, got_len = 0;

		ASSERT_OK(flash_manifest_render(m, NULL, &got, &got_len), flash_manifest_path(m));
		snprintf(rel, sizeof(rel), "../../deploy/kubernetes/%s", flash_manifest_path(m));
		want = render_test_read(rel, &want_len);
		cr_assert(want_len == got_len && memcmp(want, got, got_len) == 0,
			  "deploy/kubernetes/%s differs from the generated file: run `make deploy-manifests`",
			  flash_manifest_path(m));
		free(want);
		free(got);
	}
	cr_assert_null(flash_manifest_path(FLASH_MANIFEST_COUNT_));
	ASSERT_ERR(flash_manifest_render(FLASH_MANIFEST_COUNT_, NULL, &(char *){ NULL }, NULL), -EINVAL, "bad manifest");
}

Test(manifests, every_object_matches_the_kubernetes_schemas)
{
	struct flash_schema_set *set = render_test_schema_set(true);
	size_t checked = 0, rbac = 0;

	for (int m = 0; m < FLASH_MANIFEST_COUNT_; m++) {
		char *yaml = NULL;
		char **docs;
		size_t n;

		ASSERT_OK(flash_manifest_render(m, NULL, &yaml, NULL), flash_manifest_path(m));
		n = render_test_yaml_to_json(yaml, &docs);
		cr_assert(n > 0, "%s has no document", flash_manifest_path(m));
		for (size_t i = 0; i < n; i++) {
			_cleanup_diag_ struct flash_diag *d = render_test_diag();
			int r;

			if (is_rbac(docs[i]))
				rbac++;
			r = flash_schema_validate_object(set, docs[i], strlen(docs[i]), d);
			cr_assert(r == 0, "%s document %zu: %s at %s: %s\n%s", flash_manifest_path(m), i, flash_strerror(r),
				  diag_path(d), diag_message(d), docs[i]);
			checked++;
		}
		render_test_free_docs(docs, n);
		free(yaml);
	}
	/* 2 CRDs, Namespace, 2 ServiceAccounts, ConfigMap, Deployment,
	 * DaemonSet, the 6 RBAC objects (against rbac_v1), 2 RuntimeClasses
	 * (node_v1), the webhook's Service and its
	 * ValidatingWebhookConfiguration (admissionregistration_v1); the
	 * sandbox sessions' Namespace, Role and RoleBinding. */
	cr_assert(checked == 21, "checked %zu objects", checked);
	cr_assert(rbac == 8, "checked %zu RBAC objects", rbac);
	flash_schema_set_free(set);
}

Test(manifests, operator_rbac_is_least_privilege)
{
	char *yaml = NULL;

	ASSERT_OK(flash_manifest_render(FLASH_MANIFEST_OPERATOR_RBAC, NULL, &yaml, NULL), "rbac");
	/* No wildcard anywhere; no secrets; CRD writes limited by name. */
	cr_assert_null(strstr(yaml, "'*'"));
	cr_assert_null(strstr(yaml, "\"*\""));
	cr_assert_null(strstr(yaml, "secrets"));
	cr_assert(strstr(yaml, "resourceNames:\n  - flashservices.flash.heterocloud.io"), "%s", yaml);
	free(yaml);
}

static struct flash_schema_set *crd_set(void)
{
	struct flash_schema_set *set = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();

	ASSERT_OK(flash_schema_set_new(&set), "set");
	for (int c = FLASH_CRD_FLASHSERVICE; c <= FLASH_CRD_FLASHUSAGERECORD; c++) {
		char *json = NULL;
		size_t len = 0;
		int r;

		ASSERT_OK(flash_render_crd(c, FLASH_RENDER_JSON, &json, &len), "crd json");
		r = flash_schema_set_add_crd(set, json, len, d);
		cr_assert(r == 0, "add crd %d: %s %s", c, diag_path(d), diag_message(d));
		free(json);
	}
	return set;
}

static const char flashservice_head[] =
	"{\"apiVersion\":\"flash.heterocloud.io/v1alpha1\",\"kind\":\"FlashService\","
	"\"metadata\":{\"name\":\"fs-web\",\"namespace\":\"flash-demo\"},\"spec\":";

static int validate_spec(struct flash_schema_set *set, const char *spec, struct flash_diag *d)
{
	char *obj = NULL;
	int r;

	cr_assert(asprintf(&obj, "%s%s}", flashservice_head, spec) > 0);
	r = flash_schema_validate_object(set, obj, strlen(obj), d);
	free(obj);
	return r;
}

Test(manifests, flashservice_crd_validates_specs)
{
	struct flash_schema_set *set = crd_set();
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	static const struct {
		const char *spec, *path, *what;
	} bad[] = {
		{ "{\"region\":\"r\",\"cpu_millis\":250,\"memory_mib\":128}", "spec", "no image" },
		{ "{\"region\":\"r\",\"image\":\"x\",\"cpu_millis\":\"250\",\"memory_mib\":128}", "spec.cpu_millis",
		  "wrong type" },
		{ "{\"region\":\"r\",\"image\":\"x\",\"cpu_millis\":250,\"memory_mib\":128,\"replica\":2}",
		  "spec.replica", "unknown field" },
		{ "{\"region\":\"r\",\"image\":\"x\",\"cpu_millis\":0,\"memory_mib\":128}", "spec.cpu_millis",
		  "below minimum" },
		{ "{\"region\":\"r\",\"image\":\"x\",\"cpu_millis\":1,\"memory_mib\":128,"
		  "\"ports\":[{\"name\":\"stun\",\"protocol\":\"sctp\",\"container_port\":3478}]}",
		  "spec.ports[0].protocol", "bad enum" },
		{ "{\"region\":\"r\",\"image\":\"x\",\"cpu_millis\":1,\"memory_mib\":128,"
		  "\"ports\":[{\"name\":\"Web\",\"protocol\":\"tcp\",\"container_port\":80}]}",
		  "spec.ports[0].name", "pattern" },
		{ "{\"region\":\"r\",\"image\":\"x\",\"cpu_millis\":1,\"memory_mib\":128,"
		  "\"exposure\":{\"allowed_source_cidrs\":[\"1.2.3.4\",\"1.2.3.4\"]}}",
		  "spec.exposure.allowed_source_cidrs[1]", "set with a duplicate" },
	};

	ASSERT_OK(validate_spec(set,
				"{\"region\":\"heteronet-global\",\"image\":\"ghcr.io/acme/web:1.0\",\"replicas\":1,"
				"\"cpu_millis\":250,\"memory_mib\":128,\"gpu_type\":\"nvidia-geforce-gtx-1080-ti\","
				"\"ephemeral_storage_gib\":10,"
				"\"ports\":[{\"name\":\"game-udp\",\"protocol\":\"udp\",\"container_port\":7777}],"
				"\"exposure\":{\"type\":\"public\",\"traffic_mode\":\"forwarded\","
				"\"allowed_source_cidrs\":[\"203.0.113.0/24\"],\"denied_source_cidrs\":[\"203.0.113.128/25\"]},"
				"\"egress\":{\"mode\":\"restricted\",\"allow_same_organization\":false,"
				"\"allowed_destination_cidrs\":[\"198.51.100.10/32\"],\"denied_destination_cidrs\":[]},"
				"\"env\":{\"FLASH_ECHO_LISTEN\":\"0.0.0.0:7777\"},"
				"\"command\":[\"/usr/local/bin/flash-udp-echo\"],\"args\":[],\"metadata\":{}}",
				d),
		  "the seed's spec");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_ERR(validate_spec(set, bad[i].spec, d), -FLASH_E_RENDER_INVALID, bad[i].what);
		ASSERT_STREQ(diag_path(d), bad[i].path, bad[i].what);
	}
	flash_schema_set_free(set);
}

Test(manifests, usage_record_crd)
{
	struct flash_schema_set *set = crd_set();
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	static const char good[] =
		"{\"apiVersion\":\"flash.heterocloud.io/v1alpha1\",\"kind\":\"FlashUsageRecord\","
		"\"metadata\":{\"name\":\"org-1234-2026-w48\"},"
		"\"status\":{\"scope\":\"Organization\",\"organization\":\"org-1234\",\"week\":\"2026-W48\","
		"\"weekStart\":\"2026-11-23T00:00:00Z\",\"weekEnd\":\"2026-11-30T00:00:00Z\","
		"\"cpuMillicoreSeconds\":9000,\"memoryMiBSeconds\":4608,\"gpuSeconds\":0,\"saturated\":false,"
		"\"accruedUntil\":\"2026-11-29T10:00:00Z\"}}";
	char *bad;

	ASSERT_OK(flash_schema_validate_object(set, good, strlen(good), d), "usage record");
	bad = strdup(good);
	memcpy(strstr(bad, "2026-W48"), "2026-48W", 8);
	ASSERT_ERR(flash_schema_validate_object(set, bad, strlen(bad), d), -FLASH_E_RENDER_INVALID, "week pattern");
	ASSERT_STREQ(diag_path(d), "status.week", "week path");
	free(bad);
	bad = strdup(good);
	memcpy(strstr(bad, "2026-11-29T10:00:00Z"), "2026-11-29 10:00:00Z", 20);
	ASSERT_ERR(flash_schema_validate_object(set, bad, strlen(bad), d), -FLASH_E_RENDER_INVALID, "date-time");
	ASSERT_STREQ(diag_path(d), "status.accruedUntil", "date-time path");
	free(bad);
	flash_schema_set_free(set);
}

Test(manifests, crd_yaml_and_json_agree)
{
	for (int c = FLASH_CRD_FLASHSERVICE; c <= FLASH_CRD_FLASHUSAGERECORD; c++) {
		char *yaml = NULL, *json = NULL;
		char **docs;
		size_t n;
		struct flash_schema_set *a = NULL, *b = NULL;
		_cleanup_diag_ struct flash_diag *d = render_test_diag();

		ASSERT_OK(flash_render_crd(c, FLASH_RENDER_YAML, &yaml, NULL), "yaml");
		ASSERT_OK(flash_render_crd(c, FLASH_RENDER_JSON, &json, NULL), "json");
		n = render_test_yaml_to_json(yaml, &docs);
		cr_assert(n == 1);
		/* Both forms load as the same CRD. */
		ASSERT_OK(flash_schema_set_new(&a), "a");
		ASSERT_OK(flash_schema_set_new(&b), "b");
		ASSERT_OK(flash_schema_set_add_crd(a, docs[0], strlen(docs[0]), d), "yaml crd");
		ASSERT_OK(flash_schema_set_add_crd(b, json, strlen(json), d), "json crd");
		flash_schema_set_free(a);
		flash_schema_set_free(b);
		render_test_free_docs(docs, n);
		free(yaml);
		free(json);
	}
	ASSERT_ERR(flash_render_crd(7, FLASH_RENDER_YAML, &(char *){ NULL }, NULL), -EINVAL, "bad crd");
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Rule codes of the spec validator that a structural schema can express. */
static bool structural(const char *code)
{
	static const char *const codes[] = {
		"type", "integer", "pattern", "minimum", "maximum", "required", "enum", "unknown-field",
		"max-length", "min-length", "max-items", "max-properties",
	};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(code, codes[i]) == 0)
			return true;
	return false;
}

/* The spec's invalid corpus (tests/data/spec/invalid/NNN-name.json with
 * NNN-name.expected: "error PATH CODE" lines): every spec with a
 * structural error is refused by the generated CRD, at one of the paths
 * the spec validator names (a missing field: at its parent object). */
Test(manifests, crd_refuses_structural_cases_of_the_spec_corpus)
{
	const char *top = getenv("top_srcdir");
	struct flash_schema_set *set = crd_set();
	char dirpath[1024];
	char *names[512];
	size_t n_names = 0, refused = 0, skipped = 0;
	struct dirent *de;
	DIR *dir;

	snprintf(dirpath, sizeof(dirpath), "%s/tests/data/spec/invalid", top ? top : ".");
	dir = opendir(dirpath);
	cr_assert(dir, "cannot open %s", dirpath);
	while ((de = readdir(dir)) && n_names < 512) {
		size_t len = strlen(de->d_name);

		if (len > 9 && strcmp(de->d_name + len - 9, ".expected") == 0)
			cr_assert(names[n_names++] = strndup(de->d_name, len - 9));
	}
	closedir(dir);
	qsort(names, n_names, sizeof(names[0]), cmp_names);
	for (size_t f = 0; f < n_names; f++) {
		char rel[512];
		char *expected, *spec, *line, *save = NULL;
		char paths[16][256];
		size_t n_paths = 0;
		bool any_structural = false, json_level = false, matched = false;
		_cleanup_diag_ struct flash_diag *d = render_test_diag();
		int r;

		snprintf(rel, sizeof(rel), "spec/invalid/%s.expected", names[f]);
		expected = render_test_read(rel, NULL);
		for (line = strtok_r(expected, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char sev[16], path[256], code[64];

			if (sscanf(line, "%15s %255s %63s", sev, path, code) != 3 || strcmp(sev, "error") != 0)
				continue;
			if (strncmp(code, "json-", 5) == 0 || strcmp(code, "nul-character") == 0)
				json_level = true;
			if (strcmp(path, "-") == 0) /* the document itself */
				path[0] = '\0';
			/* Map keys (env, metadata) have patterns a structural
			 * schema cannot state (no propertyNames in CRDs). */
			if (strcmp(code, "pattern") == 0 &&
			    (strncmp(path, "env", 3) == 0 || strncmp(path, "metadata", 8) == 0))
				continue;
			if (structural(code) && n_paths < 16) {
				any_structural = true;
				if (strcmp(code, "required") == 0) {
					/* reported at the parent */
					char *dot = strrchr(path, '.');

					if (dot)
						*dot = '\0';
					else
						path[0] = '\0';
				}
				snprintf(paths[n_paths++], sizeof(paths[0]), "spec%s%s", path[0] ? "." : "", path);
			}
		}
		free(expected);
		if (!any_structural || json_level) {
			skipped++;
			continue;
		}
		snprintf(rel, sizeof(rel), "spec/invalid/%s.json", names[f]);
		spec = render_test_read(rel, NULL);
		r = validate_spec(set, spec, d);
		cr_assert(r == -FLASH_E_RENDER_INVALID, "%s: the CRD accepts a spec with a structural error (%d)", rel, r);
		for (size_t i = 0; i < n_paths && !matched; i++)
			matched = strcmp(paths[i], diag_path(d)) == 0;
		cr_assert(matched, "%s: the CRD refused at %s (%s), not where the spec validator did (%s...)", rel,
			  diag_path(d), diag_message(d), paths[0]);
		refused++;
		free(spec);
	}
	cr_assert(refused >= 50, "only %zu structural cases found (skipped %zu)", refused, skipped);
	cr_log_info("%zu structural cases refused, %zu semantic or JSON-level ones skipped", refused, skipped);
	for (size_t f = 0; f < n_names; f++)
		free(names[f]);
	flash_schema_set_free(set);
}

/* The configuration written into the operator's ConfigMap reads back as
 * the configuration it was written from (here: the defaults). */
Test(manifests, operator_configmap_round_trips)
{
	char *yaml = NULL, *conf = NULL;
	yaml_parser_t parser;
	yaml_event_t ev;
	bool next_is_value = false, done = false;
	struct flash_operator_config *c = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	uint16_t first = 0, last = 0;

	ASSERT_OK(flash_manifest_render(FLASH_MANIFEST_OPERATOR, NULL, &yaml, NULL), "operator");
	cr_assert(yaml_parser_initialize(&parser));
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, strlen(yaml));
	while (!done && !conf) {
		cr_assert(yaml_parser_parse(&parser, &ev));
		if (ev.type == YAML_SCALAR_EVENT) {
			if (next_is_value)
				conf = strndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
			next_is_value = strcmp((const char *)ev.data.scalar.value, "flash-operator.conf") == 0;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	cr_assert_not_null(conf, "no flash-operator.conf in the ConfigMap");
	ASSERT_OK(flash_operator_config_parse(conf, strlen(conf), &c, d), "parse the ConfigMap's configuration");
	flash_operator_config_public_port_range(c, &first, &last);
	cr_assert(first == 30000 && last == 32767);
	cr_assert(!flash_operator_config_persistence(c));
	/* Written again, it is the same manifest. */
	{
		char *again = NULL;

		ASSERT_OK(flash_manifest_render(FLASH_MANIFEST_OPERATOR, c, &again, NULL), "again");
		ASSERT_STREQ(again, yaml, "operator.yaml from the parsed configuration");
		free(again);
	}
	flash_operator_config_free(c);
	free(conf);
	free(yaml);
}

/* The CRD is never stricter than the spec validator: every spec of the
 * valid corpus (tests/data/spec/valid/) and the render goldens' specs is
 * accepted as a FlashService. */
Test(manifests, crd_accepts_the_valid_corpus)
{
	const char *top = getenv("top_srcdir");
	struct flash_schema_set *set = crd_set();
	const char *const dirs[] = { "spec/valid", "render" };
	size_t accepted = 0;

	for (size_t k = 0; k < sizeof(dirs) / sizeof(dirs[0]); k++) {
		char dirpath[1024];
		struct dirent *de;
		DIR *dir;

		snprintf(dirpath, sizeof(dirpath), "%s/tests/data/%s", top ? top : ".", dirs[k]);
		dir = opendir(dirpath);
		cr_assert(dir, "cannot open %s", dirpath);
		while ((de = readdir(dir))) {
			char rel[512];
			_cleanup_diag_ struct flash_diag *d = render_test_diag();
			size_t len = strlen(de->d_name);
			char *spec;
			int r;

			if (de->d_name[0] == '.')
				continue;
			if (k == 0 && (len < 5 || strcmp(de->d_name + len - 5, ".json") != 0))
				continue;
			if (k == 0)
				snprintf(rel, sizeof(rel), "%s/%s", dirs[k], de->d_name);
			else
				snprintf(rel, sizeof(rel), "%s/%s/spec.json", dirs[k], de->d_name);
			spec = render_test_read(rel, NULL);
			r = validate_spec(set, spec, d);
			cr_assert(r == 0, "%s: refused by the CRD at %s: %s", rel, diag_path(d), diag_message(d));
			accepted++;
			free(spec);
		}
		closedir(dir);
	}
	cr_assert(accepted >= 20, "only %zu specs", accepted);
	flash_schema_set_free(set);
}

/* The usage record CRD accepts the status libflash's metering writes
 * (flash_meter_record_to_json()), for both scopes and a deleted service. */
Test(manifests, usage_record_crd_matches_the_meter)
{
	struct flash_schema_set *set = crd_set();
	const struct flash_meter_record records[] = {
		{ .scope = FLASH_METER_SCOPE_ORGANIZATION, .organization = "org-1234", .week_start = 1795392000,
		  .usage = { .cpu_millicore_seconds = 9000, .memory_mib_seconds = 4608 }, .accrued_until = 1795946400 },
		{ .scope = FLASH_METER_SCOPE_SERVICE, .organization = "org-1234", .service_id = "svc-1",
		  .week_start = 1795392000, .usage = { .gpu_seconds = 36, .saturated = true },
		  .accrued_until = 1795946400, .service_deleted = true, .deleted_at = 1795946400 },
	};

	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++) {
		_cleanup_diag_ struct flash_diag *d = render_test_diag();
		char *status = NULL, *obj = NULL;
		int r;

		ASSERT_OK(flash_meter_record_to_json(&records[i], &status, NULL), "record json");
		cr_assert(asprintf(&obj, "{\"apiVersion\":\"flash.heterocloud.io/v1alpha1\",\"kind\":\"FlashUsageRecord\","
				   "\"metadata\":{\"name\":\"r\"},\"status\":%s}", status) > 0);
		r = flash_schema_validate_object(set, obj, strlen(obj), d);
		cr_assert(r == 0, "record %zu refused at %s: %s\n%s", i, diag_path(d), diag_message(d), obj);
		free(status);
		free(obj);
	}
	flash_schema_set_free(set);
}
