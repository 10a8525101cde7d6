/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kubernetes rendering: golden YAML and JSON for representative specs
 * (tests/data/render/<case>/), every rendered object validated against the
 * recorded Kubernetes OpenAPI schemas, and the rules one by one (runtime
 * class, GPU, direct mode, no Service without ports, deny wins, protected
 * ranges, same-organization grant, persistence, public port stability).
 *
 * FLASH_UPDATE_GOLDEN=1 rewrites the expected files instead of comparing.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <flash/render.h>
#include <flash/spec.h>

#include "helpers.h"
#include "render-test.h"

#define UID "56ae4acd-23a1-48b4-aecf-39c3886155de"
#define DIGEST "sha256:3f1c6a3d2f0e4b7a9c8d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b"

struct golden_case {
	const char *dir;
	const char *name;
	const char *uid;
	const char *service_id;
	const char *digest;
	uint64_t image_bytes;
	uint16_t taken[4];
};

static const struct golden_case cases[] = {
	{ "seed-gpu-udp", "fs-udp-echo", UID, "svc-1", DIGEST, 200u << 20, { 0 } },
	{ "internal-tcp", "fs-api", UID, "svc-2", NULL, 0, { 0 } },
	{ "public-direct", "fs-game", UID, "svc-3", DIGEST, 0, { 30000, 30001 } },
	{ "no-ports", "fs-sleeper", NULL, NULL, NULL, 0, { 0 } },
	{ "persistence", "fs-shell", UID, "svc-7f3a", DIGEST, (7u << 29), { 0 } },
	{ "same-org", "fs-worker", UID, "svc-5", NULL, 0, { 0 } },
	{ "previous-ports", "fs-voice", UID, "svc-6", NULL, 0, { 30001 } },
	{ "pinned-env", "fs-app", UID, "svc-7", DIGEST, 123456789, { 0 } },
	{ "open-sources", "fs-relay", UID, "svc-8", NULL, 0, { 0 } },
	{ "autoscaling-domains", "fs-web", UID, "svc-9", DIGEST, 0, { 0 } },
};

static char *read_optional(const char *rel, size_t *len)
{
	const char *top = getenv("top_srcdir");
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/data/%s", top ? top : ".", rel);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	fclose(f);
	return render_test_read(rel, len);
}

static struct flash_spec *load_spec(const char *dir)
{
	struct flash_spec *spec = NULL;
	struct flash_diag *diag = NULL;
	char rel[256];
	size_t len;
	char *text;
	int r;

	snprintf(rel, sizeof(rel), "render/%s/spec.json", dir);
	text = render_test_read(rel, &len);
	ASSERT_OK(flash_diag_new(&diag), "diag");
	r = flash_spec_parse(text, len, NULL, &spec, diag);
	if (r < 0) {
		const struct flash_diag_entry *e = flash_diag_get(diag, 0);

		cr_assert_fail("%s: spec refused: %s: %s", dir, e ? e->path : "", e ? e->message : "");
	}
	flash_diag_free(diag);
	free(text);
	return spec;
}

static struct flash_operator_config *load_config(const char *dir)
{
	struct flash_operator_config *c = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	char rel[256];
	size_t len;
	char *text;
	int r;

	snprintf(rel, sizeof(rel), "render/%s/config.json", dir);
	text = read_optional(rel, &len);
	if (!text) {
		ASSERT_OK(flash_operator_config_default(&c), "default config");
		return c;
	}
	r = flash_operator_config_parse(text, len, &c, d);
	cr_assert(r == 0, "%s: config refused: %s: %s", dir, diag_path(d), diag_message(d));
	free(text);
	return c;
}

/* Renders case @gc: ports assigned from the previous status, if any. */
static struct flash_render *render_case(const struct golden_case *gc, struct flash_spec **ret_spec)
{
	struct flash_spec *spec = load_spec(gc->dir);
	struct flash_operator_config *config = load_config(gc->dir);
	struct flash_public_port *prev = NULL, *ports = NULL;
	size_t n_prev = 0, n_ports = 0, n_taken = 0;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	struct flash_render *rd = NULL;
	char rel[256];
	char *text;
	size_t len;
	int r;

	snprintf(rel, sizeof(rel), "render/%s/previous.json", gc->dir);
	text = read_optional(rel, &len);
	if (text) {
		r = flash_public_ports_parse(text, len, &prev, &n_prev, d);
		cr_assert(r == 0, "%s: previous: %s %s", gc->dir, diag_path(d), diag_message(d));
		free(text);
	}
	while (n_taken < 4 && gc->taken[n_taken])
		n_taken++;
	ASSERT_OK(flash_public_ports_assign(config, spec, prev, n_prev, gc->taken, n_taken, &ports, &n_ports), "assign");
	FLASH_OPTS(flash_render_opts, opts, .name = gc->name, .namespace_ = "flash-demo", .uid = gc->uid,
		   .organization_id = "org-1234", .project_id = "proj-web", .service_id = gc->service_id,
		   .image_digest = gc->digest, .image_bytes = gc->image_bytes, .public_ports = ports,
		   .n_public_ports = n_ports);
	r = flash_render(spec, config, &opts, &rd, d);
	cr_assert(r == 0, "%s: render: %s: %s %s", gc->dir, flash_strerror(r), diag_path(d), diag_message(d));
	free(prev);
	free(ports);
	flash_operator_config_free(config);
	if (ret_spec)
		*ret_spec = spec;
	else
		flash_spec_free(spec);
	return rd;
}

static void compare_golden(const char *dir, const char *file, const char *got, size_t got_len)
{
	char rel[256];
	char *want;
	size_t want_len;

	snprintf(rel, sizeof(rel), "render/%s/%s", dir, file);
	if (getenv("FLASH_UPDATE_GOLDEN")) {
		char path[1024];
		FILE *f;

		snprintf(path, sizeof(path), "%s/tests/data/%s", getenv("top_srcdir"), rel);
		f = fopen(path, "we");
		cr_assert(f && fwrite(got, 1, got_len, f) == got_len && fclose(f) == 0, "write %s", path);
		return;
	}
	want = render_test_read(rel, &want_len);
	cr_assert(want_len == got_len && memcmp(want, got, got_len) == 0,
		  "%s/%s differs from the rendering:\n%s", dir, file, got);
	free(want);
}

Test(render, golden_files_and_schemas)
{
	struct flash_schema_set *set = render_test_schema_set(true);

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct flash_render *rd = render_case(&cases[c], NULL);
		char *yaml = NULL, *json = NULL;
		size_t yaml_len = 0, json_len = 0, n_docs;
		char **docs;

		ASSERT_OK(flash_render_print(rd, FLASH_RENDER_YAML, &yaml, &yaml_len), "yaml");
		ASSERT_OK(flash_render_print(rd, FLASH_RENDER_JSON, &json, &json_len), "json");
		compare_golden(cases[c].dir, "expected.yaml", yaml, yaml_len);
		compare_golden(cases[c].dir, "expected.json", json, json_len);
		/* Each object, as JSON and as read back from the YAML. */
		n_docs = render_test_yaml_to_json(yaml, &docs);
		cr_assert(n_docs == flash_render_count(rd), "%s: %zu YAML documents for %zu objects", cases[c].dir,
			  n_docs, flash_render_count(rd));
		for (size_t i = 0; i < flash_render_count(rd); i++) {
			_cleanup_diag_ struct flash_diag *d = render_test_diag();
			char *obj = NULL;
			size_t len = 0;
			int r;

			ASSERT_OK(flash_render_object_json(rd, i, &obj, &len), "object json");
			r = flash_schema_validate_object(set, obj, len, d);
			cr_assert(r == 0, "%s %s: %s at %s: %s\n%s", cases[c].dir, flash_render_kind(rd, i),
				  flash_strerror(r), diag_path(d), diag_message(d), obj);
			r = flash_schema_validate_object(set, docs[i], strlen(docs[i]), d);
			cr_assert(r == 0, "%s %s (from YAML): %s at %s: %s\n%s", cases[c].dir, flash_render_kind(rd, i),
				  flash_strerror(r), diag_path(d), diag_message(d), docs[i]);
			free(obj);
		}
		render_test_free_docs(docs, n_docs);
		free(yaml);
		free(json);
		flash_render_free(rd);
	}
	flash_schema_set_free(set);
}

/* The object of @kind as JSON text (NULL when absent). */
static char *object_of(const struct flash_render *rd, const char *kind)
{
	for (size_t i = 0; i < flash_render_count(rd); i++) {
		if (strcmp(flash_render_kind(rd, i), kind) == 0) {
			char *obj = NULL;
			size_t o = 0;
			bool in_string = false;

			ASSERT_OK(flash_render_object_json(rd, i, &obj, NULL), kind);
			/* Compact form: no whitespace outside strings. */
			for (size_t j = 0; obj[j]; j++) {
				if (obj[j] == '"' && (j == 0 || obj[j - 1] != '\\'))
					in_string = !in_string;
				if (!in_string && (obj[j] == ' ' || obj[j] == '\n'))
					continue;
				obj[o++] = obj[j];
			}
			obj[o] = '\0';
			return obj;
		}
	}
	return NULL;
}

static const struct golden_case *find_case(const char *dir)
{
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		if (strcmp(cases[c].dir, dir) == 0)
			return &cases[c];
	cr_assert_fail("no case %s", dir);
	return NULL;
}

#define HAS(text, needle) cr_assert(strstr((text), (needle)), "missing %s in%s", (needle), (text))
#define HASNT(text, needle) cr_assert(!strstr((text), (needle)), "unexpected %s in%s", (needle), (text))

Test(render, deployment_rules)
{
	struct flash_render *rd = render_case(find_case("seed-gpu-udp"), NULL);
	char *dep = object_of(rd, "Deployment");

	HAS(dep, "\"runtimeClassName\":\"nvidia\"");
	HAS(dep, "\"nvidia.com/gpu\":\"1\"");
	HAS(dep, "\"flash.heterocloud.io/gpu-type\":\"nvidia-geforce-gtx-1080-ti\"");
	HAS(dep, "\"image\":\"ghcr.io/ipa-cyberlab/ipa-rs-heterocloud-flash@" DIGEST "\"");
	HAS(dep, "\"automountServiceAccountToken\":false");
	HAS(dep, "\"enableServiceLinks\":false");
	HAS(dep, "\"hostNetwork\":false");
	HAS(dep, "\"hostPID\":false");
	HAS(dep, "\"hostIPC\":false");
	HAS(dep, "\"type\":\"RuntimeDefault\"");
	HAS(dep, "\"privileged\":false");
	HAS(dep, "\"maxSurge\":1");
	HAS(dep, "\"maxUnavailable\":0");
	HAS(dep, "\"uid\":\"" UID "\"");
	/* Every capability dropped, none added (the seed: no added Linux
	 * capabilities). */
	HAS(dep, "\"capabilities\":{\"drop\":[\"ALL\"]}");
	HASNT(dep, "\"add\"");
	HASNT(dep, "hostPath");
	/* Labels carry only the opaque ids, never the spec's metadata. */
	HASNT(dep, "heteronet-global");
	free(dep);
	flash_render_free(rd);

	rd = render_case(find_case("internal-tcp"), NULL);
	dep = object_of(rd, "Deployment");
	HAS(dep, "\"runtimeClassName\":\"gvisor\"");
	HAS(dep, "\"image\":\"ghcr.io/acme/api:2.4.1\"");
	HASNT(dep, "nvidia");
	HASNT(dep, "nodeSelector");
	/* requests = limits */
	HAS(dep, "\"requests\":{\"cpu\":\"500m\",\"memory\":\"512Mi\",\"ephemeral-storage\":\"4Gi\"},\"limits\":{\"cpu\":\"500m\",\"memory\":\"512Mi\",\"ephemeral-storage\":\"4Gi\"");
	free(dep);
	flash_render_free(rd);
}

Test(render, service_rules)
{
	struct flash_render *rd = render_case(find_case("public-direct"), NULL);
	char *svc = object_of(rd, "Service"), *dep = object_of(rd, "Deployment");

	HAS(svc, "\"type\":\"LoadBalancer\"");
	HAS(svc, "\"loadBalancerClass\":\"heteronetwork.io/public\"");
	HAS(svc, "\"externalTrafficPolicy\":\"Local\"");
	HAS(svc, "\"protocol\":\"UDP\",\"port\":30003,\"targetPort\":7777");
	HAS(svc, "\"loadBalancerSourceRanges\":[\"198.51.100.0/24\",\"2001:db8:100::/48\"");
	/* 30000 and 30001 are taken by other services. */
	HAS(svc, "\"port\":30002,\"targetPort\":8080");
	HAS(dep, "\"heteronetwork.io/public-node\":\"true\"");
	free(svc);
	free(dep);
	flash_render_free(rd);

	rd = render_case(find_case("internal-tcp"), NULL);
	svc = object_of(rd, "Service");
	HAS(svc, "\"type\":\"ClusterIP\"");
	HAS(svc, "\"port\":8080,\"targetPort\":8080");
	HASNT(svc, "loadBalancer");
	free(svc);
	flash_render_free(rd);

	/* No ports, no Service; the Deployment is still there. */
	rd = render_case(find_case("no-ports"), NULL);
	cr_assert_null(object_of(rd, "Service"));
	dep = object_of(rd, "Deployment");
	cr_assert_not_null(dep);
	HASNT(dep, "ownerReferences");
	free(dep);
	flash_render_free(rd);
}

Test(render, network_policy_rules)
{
	struct flash_render *rd = render_case(find_case("public-direct"), NULL);
	char *np = object_of(rd, "NetworkPolicy");

	/* Deny wins: the denied part is an except of the allowed block. */
	HAS(np, "\"cidr\":\"198.51.100.0/24\",\"except\":[\"198.51.100.64/26\"");
	HAS(np, "\"cidr\":\"2001:db8:100::/48\",\"except\":[\"2001:db8:100:1::/64\"");
	/* DNS first, then the internet with every protected range excepted. */
	HAS(np, "\"k8s-app\":\"kube-dns\"");
	HAS(np, "\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\",\"100.64.0.0/10\",\"169.254.0.0/16\",\"172.16.0.0/12\",\"192.168.0.0/16\"");
	HAS(np, "\"cidr\":\"::/0\",\"except\":[\"fc00::/7\",\"fe80::/10\"");
	HASNT(np, "namespaceSelector\":{}");
	free(np);
	flash_render_free(rd);

	/* Open sources: both families, protected ranges and the denied
	 * /24 excepted. */
	rd = render_case(find_case("open-sources"), NULL);
	np = object_of(rd, "NetworkPolicy");
	HAS(np, "\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\",\"100.64.0.0/10\",\"169.254.0.0/16\",\"172.16.0.0/12\",\"192.0.2.0/24\",");
	/* egress disabled: only the DNS rule */
	HASNT(np, "\"to\":[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\"");
	free(np);
	flash_render_free(rd);

	/* Same-organization grant both ways, only when asked. */
	rd = render_case(find_case("same-org"), NULL);
	np = object_of(rd, "NetworkPolicy");
	/* Scoped by namespace as well, in the same peer: a pod label alone
	 * never opens a tenant. */
	HAS(np, "\"namespaceSelector\":{\"matchLabels\":{\"flash.heterocloud.io/organization\":\"org-1234\"}},"
		"\"podSelector\":{\"matchLabels\":{\"flash.heterocloud.io/organization\":\"org-1234\"");
	HASNT(np, "\"namespaceSelector\":{}");
	HAS(np, "\"2001:db8::/32\"");
	free(np);
	flash_render_free(rd);
	rd = render_case(find_case("internal-tcp"), NULL);
	np = object_of(rd, "NetworkPolicy");
	HASNT(np, "flash.heterocloud.io/organization\":\"org-1234\"}}}],\"ports");
	/* internal, no grant: no ingress rule at all (isolated) */
	HAS(np, "\"ingress\":[],");
	free(np);
	flash_render_free(rd);

	/* Infrastructure ranges from the config are excepted in restricted mode. */
	rd = render_case(find_case("pinned-env"), NULL);
	np = object_of(rd, "NetworkPolicy");
	HAS(np, "\"cidr\":\"198.51.100.0/24\",\"except\":[\"198.51.100.128/25\"");
	HAS(np, "\"cidr\":\"2001:db8:200::/48\",\"except\":[\"2001:db8:200:ff::/64\"");
	HAS(np, "\"cidr\":\"fd10:96::a/128\"");
	free(np);
	flash_render_free(rd);
}

Test(render, persistence_and_admin_volumes)
{
	struct flash_render *rd = render_case(find_case("persistence"), NULL);
	char *pvc = object_of(rd, "PersistentVolumeClaim"), *dep = object_of(rd, "Deployment");

	cr_assert(strcmp(flash_render_kind(rd, 0), "PersistentVolumeClaim") == 0, "the claim comes first");
	HAS(pvc, "\"name\":\"fs-shell-root\"");
	HAS(pvc, "\"ReadWriteMany\"");
	HAS(pvc, "\"storageClassName\":\"longhorn-static\"");
	/* 10 GiB budget - 3.5 GiB image = 6.5 GiB = 6656 MiB */
	HAS(pvc, "\"storage\":\"6656Mi\"");
	HAS(dep, "\"mountPath\":\"/root\"");
	HAS(dep, "\"claimName\":\"fs-shell-root\"");
	HAS(dep, "\"mountPath\":\"/mnt/s3\"");
	HAS(dep, "\"claimName\":\"syouyu-s3-acme\"");
	HAS(dep, "\"mountPath\":\"/mnt/datasets\",\"readOnly\":true");
	HASNT(dep, "/mnt/other");
	free(pvc);
	free(dep);
	flash_render_free(rd);

	rd = render_case(find_case("internal-tcp"), NULL);
	cr_assert_null(object_of(rd, "PersistentVolumeClaim"));
	flash_render_free(rd);
}

Test(render, disk_budget_refused)
{
	struct flash_spec *spec = load_spec("internal-tcp"); /* 4 GiB */
	struct flash_operator_config *config = NULL;
	struct flash_render *rd = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	FLASH_OPTS(flash_render_opts, opts, .name = "fs-api", .namespace_ = "flash-demo", .organization_id = "org-1",
		   .image_bytes = UINT64_C(4) << 30);

	ASSERT_OK(flash_operator_config_default(&config), "config");
	ASSERT_ERR(flash_render(spec, config, &opts, &rd, d), -FLASH_E_RENDER_DISK, "image fills the budget");
	ASSERT_STREQ(diag_path(d), "ephemeral_storage_gib", "path");
	cr_assert_null(rd);
	opts.image_bytes = (UINT64_C(4) << 30) - 1;
	ASSERT_OK(flash_render(spec, config, &opts, &rd, d), "image one byte smaller");
	flash_render_free(rd);
	flash_operator_config_free(config);
	flash_spec_free(spec);
}

Test(render, bad_names_refused)
{
	struct flash_spec *spec = load_spec("internal-tcp");
	struct flash_operator_config *config = NULL;
	struct flash_render *rd = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	static const struct {
		const char *name, *ns, *org, *digest, *path;
	} bad[] = {
		{ "Fs-Api", "ns", "org", NULL, "name" },
		{ "1fs", "ns", "org", NULL, "name" },
		{ "fs-api", "NS", "org", NULL, "namespace" },
		{ "fs-api", "ns", "org 1", NULL, "organization_id" },
		{ "fs-api", "ns", "", NULL, "organization_id" },
		{ "fs-api", "ns", "org", "sha256:ABC", "image_digest" },
	};

	ASSERT_OK(flash_operator_config_default(&config), "config");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FLASH_OPTS(flash_render_opts, opts, .name = bad[i].name, .namespace_ = bad[i].ns,
			   .organization_id = bad[i].org, .image_digest = bad[i].digest);

		ASSERT_ERR(flash_render(spec, config, &opts, &rd, d), -FLASH_E_RENDER_NAME, bad[i].path);
		ASSERT_STREQ(diag_path(d), bad[i].path, "diag path");
	}
	ASSERT_ERR(flash_render(NULL, config, NULL, &rd, d), -EINVAL, "NULL");
	flash_operator_config_free(config);
	flash_spec_free(spec);
}

Test(render, public_ports_stable_new_and_freed)
{
	struct flash_spec *spec = NULL;
	struct flash_render *rd = render_case(find_case("previous-ports"), &spec);
	char *svc = object_of(rd, "Service");
	struct flash_operator_config *config = NULL;
	struct flash_public_port *ports = NULL, *again = NULL;
	size_t n = 0, n2 = 0;
	static const struct flash_public_port prev[] = {
		{ "sip", "udp", 30007 }, { "old", "tcp", 30000 }, { "rtp", "udp", 30002 },
	};
	static const uint16_t taken[] = { 30001 };

	/* rtp and sip keep theirs; admin is new and gets the lowest free
	 * port, 30000, which the removed "old" pair freed (30001 is taken). */
	HAS(svc, "\"name\":\"rtp\",\"protocol\":\"UDP\",\"port\":30002");
	HAS(svc, "\"name\":\"sip\",\"protocol\":\"UDP\",\"port\":30007");
	HAS(svc, "\"name\":\"admin\",\"protocol\":\"TCP\",\"port\":30000");
	free(svc);
	flash_render_free(rd);

	ASSERT_OK(flash_operator_config_default(&config), "config");
	ASSERT_OK(flash_public_ports_assign(config, spec, prev, 3, taken, 1, &ports, &n), "assign");
	cr_assert(n == 3);
	/* Assigning again from the result changes nothing. */
	ASSERT_OK(flash_public_ports_assign(config, spec, ports, n, taken, 1, &again, &n2), "again");
	cr_assert(n2 == n && memcmp(again, ports, n * sizeof(*ports)) == 0, "assignment not stable");
	/* A previous port outside the range is not kept. */
	free(again);
	{
		struct flash_public_port out_of_range = { "sip", "udp", 80 };

		ASSERT_OK(flash_public_ports_assign(config, spec, &out_of_range, 1, NULL, 0, &again, &n2), "range");
		cr_assert(again[1].port == 30001, "sip got %u", again[1].port);
		free(again);
	}
	free(ports);
	flash_operator_config_free(config);
	flash_spec_free(spec);
}

Test(render, public_ports_exhausted)
{
	struct flash_spec *spec = load_spec("public-direct"); /* three ports */
	struct flash_operator_config *config = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	struct flash_public_port *ports = NULL;
	size_t n = 0;
	static const char cfg[] = "{\"publicPortRange\":{\"first\":31000,\"last\":31002}}";
	static const uint16_t taken[] = { 31001 };

	ASSERT_OK(flash_operator_config_parse(cfg, strlen(cfg), &config, d), "config");
	ASSERT_ERR(flash_public_ports_assign(config, spec, NULL, 0, taken, 1, &ports, &n),
		   -FLASH_E_RENDER_PORTS_EXHAUSTED, "two free ports for three");
	cr_assert_null(ports);
	ASSERT_OK(flash_public_ports_assign(config, spec, NULL, 0, NULL, 0, &ports, &n), "three free ports");
	cr_assert(n == 3 && ports[0].port == 31000 && ports[1].port == 31001 && ports[2].port == 31002);
	free(ports);
	flash_operator_config_free(config);
	flash_spec_free(spec);

	/* An internal spec gets no public port. */
	spec = load_spec("internal-tcp");
	ASSERT_OK(flash_operator_config_default(&config), "config");
	ASSERT_OK(flash_public_ports_assign(config, spec, NULL, 0, NULL, 0, &ports, &n), "internal");
	cr_assert(n == 0 && ports == NULL);
	flash_operator_config_free(config);
	flash_spec_free(spec);
}

Test(render, previous_status_refused)
{
	static const char *const bad[] = {
		"[]",
		"{\"status\":[]}",
		"{\"publicPorts\":{}}",
		"{\"publicPorts\":[{\"name\":\"a\",\"protocol\":\"sctp\",\"port\":1}]}",
		"{\"publicPorts\":[{\"name\":\"a\",\"protocol\":\"tcp\",\"port\":65536}]}",
		"{\"publicPorts\":[{\"name\":\"a\",\"protocol\":\"tcp\",\"port\":1,\"x\":1}]}",
		"{\"publicPorts\":[{\"name\":\"a\",\"protocol\":\"tcp\",\"port\":1},{\"name\":\"a\",\"protocol\":\"tcp\",\"port\":2}]}",
		"{\"publicPorts\":[{\"name\":\"a\",\"protocol\":\"tcp\",\"port\":1},{\"name\":\"b\",\"protocol\":\"tcp\",\"port\":1}]}",
		"{\"publicPorts\":[",
	};
	struct flash_public_port *ports = NULL;
	size_t n = 0;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_ERR(flash_public_ports_parse(bad[i], strlen(bad[i]), &ports, &n, d), -FLASH_E_RENDER_PREVIOUS,
			   bad[i]);
		cr_assert_null(ports);
	}
	ASSERT_OK(flash_public_ports_parse("{}", 2, &ports, &n, d), "no ports yet");
	cr_assert(n == 0);
}

/* Each configuration @bad[i].json is refused, the diagnostic naming
 * @bad[i].path, nothing returned. */
struct config_refusal {
	const char *json, *path;
};

static void config_refused(const struct config_refusal *bad, size_t n, struct flash_diag *d)
{
	for (size_t i = 0; i < n; i++) {
		struct flash_operator_config *c = NULL;

		ASSERT_ERR(flash_operator_config_parse(bad[i].json, strlen(bad[i].json), &c, d), -FLASH_E_RENDER_CONFIG,
			   bad[i].json);
		ASSERT_STREQ(diag_path(d), bad[i].path, bad[i].json);
		cr_assert_null(c);
	}
}

/* The runtime section: the keys of the runtime's command-line options,
 * each refusal naming its key. */
Test(render, operator_config_runtime)
{
	static const struct config_refusal bad[] = {
		{ "{\"runtime\":{\"dir\":\"relative\"}}", "runtime.dir" },
		{ "{\"runtime\":{\"cniBinDir\":\"/a/../b\"}}", "runtime.cniBinDir" },
		{ "{\"runtime\":{\"cniConf\":7}}", "runtime.cniConf" },
		{ "{\"runtime\":{\"agentSocket\":\"\"}}", "runtime.agentSocket" },
		{ "{\"runtime\":{\"runsc\":\"runsc\"}}", "runtime.runsc" },
		{ "{\"runtime\":{\"cgroupParent\":\"/\"}}", "runtime.cgroupParent" },
		{ "{\"runtime\":{\"dns\":[\"10.0.0.0/8\"]}}", "runtime.dns[0]" },
		{ "{\"runtime\":{\"dns\":[\"a\",\"b\",\"c\",\"d\"]}}", "runtime.dns" },
		{ "{\"runtime\":{\"dns\":[]}}", "runtime.dns" },
		{ "{\"runtime\":{\"socket\":\"/x\"}}", "runtime.socket" },
	};
	static const char full[] = "{\"runtime\":{\"dir\":\"/var/lib/flash/runtime\",\"cniBinDir\":\"/opt/cni/bin\","
				   "\"cniConf\":\"/etc/cni/net.d/10-flowsdn.conflist\",\"agentSocket\":\"/run/flowsdn/agent.sock\","
				   "\"runsc\":\"/usr/bin/runsc\",\"cgroupParent\":\"/flash\",\"dns\":[\"192.0.2.53\",\"2001:db8::53\"]}}";
	struct flash_operator_config *c = NULL;
	struct flash_operator_runtime rt = { .sz = sizeof(rt) };
	struct flash_diag *d = NULL;

	ASSERT_OK(flash_diag_new(&d), "diag");
	ASSERT_OK(flash_operator_config_default(&c), "defaults");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	cr_assert(!rt.dir && !rt.cni_bin_dir && !rt.cni_conf && !rt.agent_socket && !rt.runsc && !rt.cgroup_parent &&
		  !rt.dns, "no runtime settings by default");
	ASSERT_ERR(flash_operator_config_runtime(c, &(struct flash_operator_runtime){ .sz = 1 }), -EINVAL, "sz");
	ASSERT_ERR(flash_operator_config_runtime(NULL, &rt), -EINVAL, "NULL config");
	flash_operator_config_free(c);
	ASSERT_OK(flash_operator_config_parse(full, strlen(full), &c, d), "runtime section");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	ASSERT_STREQ(rt.dir, "/var/lib/flash/runtime", "dir");
	ASSERT_STREQ(rt.cni_bin_dir, "/opt/cni/bin", "cniBinDir");
	ASSERT_STREQ(rt.cni_conf, "/etc/cni/net.d/10-flowsdn.conflist", "cniConf");
	ASSERT_STREQ(rt.agent_socket, "/run/flowsdn/agent.sock", "agentSocket");
	ASSERT_STREQ(rt.runsc, "/usr/bin/runsc", "runsc");
	ASSERT_STREQ(rt.cgroup_parent, "/flash", "cgroupParent");
	ASSERT_STREQ(rt.dns, "192.0.2.53,2001:db8::53", "dns joined as --dns takes it");
	{
		/* A caller built against a struct without dns gets the rest. */
		struct flash_operator_runtime old = { .sz = offsetof(struct flash_operator_runtime, dns) };

		old.dns = "untouched";
		ASSERT_OK(flash_operator_config_runtime(c, &old), "older struct");
		ASSERT_STREQ(old.cgroup_parent, "/flash", "older struct's fields");
		ASSERT_STREQ(old.dns, "untouched", "past its sz nothing is written");
	}
	flash_operator_config_free(c);
	config_refused(bad, sizeof(bad) / sizeof(bad[0]), d);
	flash_diag_free(d);
}

Test(render, operator_config)
{
	struct flash_operator_config *c = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	uint16_t first = 0, last = 0;
	static const struct config_refusal bad[] = {
		{ "{\"podCIDRs\":[\"10.244.0.0/33\"]}", "podCIDRs[0]" },
		{ "{\"podCIDRs\":\"10.244.0.0/16\"}", "podCIDRs" },
		{ "{\"infrastructureCIDRs\":[\"10.1.2.3/8\"]}", "infrastructureCIDRs[0]" },
		{ "{\"runtimeClassNames\":{\"cpu\":\"Gvisor\"}}", "runtimeClassNames.cpu" },
		{ "{\"runtimeClassNames\":{\"tpu\":\"x\"}}", "runtimeClassNames.tpu" },
		{ "{\"publicPortRange\":{\"first\":40000,\"last\":30000}}", "publicPortRange" },
		{ "{\"publicPortRange\":{\"first\":0}}", "publicPortRange.first" },
		{ "{\"persistence\":{\"enabled\":\"yes\"}}", "persistence.enabled" },
		{ "{\"clusterDNS\":{\"addresses\":[\"10.96.0.0/12\"]}}", "clusterDNS" },
		{ "{\"publicNodeLabels\":{\"-bad\":\"x\"}}", "publicNodeLabels[\"-bad\"]" },
		{ "{\"adminVolumeMounts\":[{\"serviceInstanceId\":\"s\",\"claim\":\"nope\",\"mountPath\":\"/mnt\"}]}",
		  "adminVolumeMounts[0]" },
		{ "{\"adminVolumeClaims\":[{\"name\":\"x\",\"claimName\":\"c\"}],\"adminVolumeMounts\":"
		  "[{\"serviceInstanceId\":\"s\",\"claim\":\"x\",\"mountPath\":\"/root\"}]}",
		  "adminVolumeMounts[0].mountPath" },
		{ "{\"adminVolumeClaims\":[{\"name\":\"root\",\"claimName\":\"c\"}]}", "adminVolumeClaims[0]" },
		{ "{\"loadBalancerClas\":\"x\"}", "loadBalancerClas" },
		{ "{\"a\":1,\"a\":2}", "" },
		{ "{\"registry\":{\"caFile\":\"ca.pem\"}}", "registry.caFile" },
		{ "{\"registry\":{\"credentialsFile\":\"/etc/../x\"}}", "registry.credentialsFile" },
		{ "{\"registry\":{\"contentStore\":1}}", "registry.contentStore" },
		{ "{\"registry\":{\"token\":\"x\"}}", "registry.token" },
	};
	const char *ca = "x", *creds = "x", *store = "x";
	static const char with_registry[] = "{\"registry\":{\"caFile\":\"/etc/flash/ca.pem\","
					    "\"credentialsFile\":\"/etc/flash/registries.json\","
					    "\"contentStore\":\"/var/lib/flash/blobs\"}}";

	ASSERT_OK(flash_operator_config_default(&c), "defaults");
	cr_assert(!flash_operator_config_persistence(c));
	flash_operator_config_public_port_range(c, &first, &last);
	cr_assert(first == 30000 && last == 32767);
	flash_operator_config_registry(c, &ca, &creds, &store);
	cr_assert(!ca && !creds && !store, "no registry settings by default");
	flash_operator_config_free(c);
	ASSERT_OK(flash_operator_config_parse(with_registry, strlen(with_registry), &c, d), "registry section");
	flash_operator_config_registry(c, &ca, &creds, &store);
	ASSERT_STREQ(ca, "/etc/flash/ca.pem", "caFile");
	ASSERT_STREQ(creds, "/etc/flash/registries.json", "credentialsFile");
	ASSERT_STREQ(store, "/var/lib/flash/blobs", "contentStore");
	flash_operator_config_free(c);
	config_refused(bad, sizeof(bad) / sizeof(bad[0]), d);
	ASSERT_STREQ(flash_strerror(-FLASH_E_RENDER_CONFIG), "operator configuration refused", "strerror");
}

/* The autoscaling section: sync period, scale-down window, tolerance,
 * bounded, each refusal naming its key; the defaults always set. */
Test(render, operator_config_autoscaling)
{
	static const struct config_refusal bad[] = {
		{ "{\"autoscaling\":{\"syncPeriodSeconds\":0}}", "autoscaling.syncPeriodSeconds" },
		{ "{\"autoscaling\":{\"syncPeriodSeconds\":3601}}", "autoscaling.syncPeriodSeconds" },
		{ "{\"autoscaling\":{\"scaleDownStabilizationSeconds\":-1}}", "autoscaling.scaleDownStabilizationSeconds" },
		{ "{\"autoscaling\":{\"tolerancePercent\":100}}", "autoscaling.tolerancePercent" },
		{ "{\"autoscaling\":{\"tolerancePercent\":0.5}}", "autoscaling.tolerancePercent" },
		{ "{\"autoscaling\":{\"window\":5}}", "autoscaling.window" },
	};
	static const char good[] = "{\"autoscaling\":{\"syncPeriodSeconds\":1,\"scaleDownStabilizationSeconds\":0,"
				   "\"tolerancePercent\":0}}";
	struct flash_operator_config *c = NULL;
	struct flash_operator_runtime rt = { .sz = sizeof(rt) };
	struct flash_diag *d = NULL;

	ASSERT_OK(flash_diag_new(&d), "diag");
	ASSERT_OK(flash_operator_config_default(&c), "defaults");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	cr_assert(rt.autoscale_period_s == 15 && rt.autoscale_window_s == 300 && rt.autoscale_tolerance_percent == 10,
		  "defaults %u %u %u", rt.autoscale_period_s, rt.autoscale_window_s, rt.autoscale_tolerance_percent);
	flash_operator_config_free(c);
	ASSERT_OK(flash_operator_config_parse(good, strlen(good), &c, d), "autoscaling section");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	cr_assert(rt.autoscale_period_s == 1 && rt.autoscale_window_s == 0 && rt.autoscale_tolerance_percent == 0,
		  "0 is a value: %u %u %u", rt.autoscale_period_s, rt.autoscale_window_s, rt.autoscale_tolerance_percent);
	flash_operator_config_free(c);
	c = NULL;
	ASSERT_OK(flash_operator_config_parse("{\"autoscaling\":{\"tolerancePercent\":5}}", 38, &c, d), "one key");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	cr_assert(rt.autoscale_period_s == 15 && rt.autoscale_window_s == 300 && rt.autoscale_tolerance_percent == 5,
		  "the other keys keep their defaults");
	flash_operator_config_free(c);
	config_refused(bad, sizeof(bad) / sizeof(bad[0]), d);
	flash_diag_free(d);
}

/* The exec section: the Web Shell's limits, bounded, each refusal naming
 * its key; 0 when unset (the operator's defaults). */
Test(render, operator_config_exec)
{
	static const struct config_refusal bad[] = {
		{ "{\"exec\":{\"maxSessions\":0}}", "exec.maxSessions" },
		{ "{\"exec\":{\"maxSessions\":1025}}", "exec.maxSessions" },
		{ "{\"exec\":{\"sessionLimitSeconds\":86401}}", "exec.sessionLimitSeconds" },
		{ "{\"exec\":{\"sessionLimitSeconds\":\"30m\"}}", "exec.sessionLimitSeconds" },
		{ "{\"exec\":{\"shell\":\"/bin/bash\"}}", "exec.shell" },
	};
	static const char good[] = "{\"exec\":{\"maxSessions\":4,\"sessionLimitSeconds\":60}}";
	struct flash_operator_config *c = NULL;
	struct flash_operator_runtime rt = { .sz = sizeof(rt) };
	struct flash_diag *d = NULL;

	ASSERT_OK(flash_diag_new(&d), "diag");
	ASSERT_OK(flash_operator_config_default(&c), "defaults");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	cr_assert(rt.exec_max_sessions == 0 && rt.exec_session_limit_s == 0, "unset by default");
	flash_operator_config_free(c);
	ASSERT_OK(flash_operator_config_parse(good, strlen(good), &c, d), "exec section");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	cr_assert_eq(rt.exec_max_sessions, 4);
	cr_assert_eq(rt.exec_session_limit_s, 60);
	flash_operator_config_free(c);
	config_refused(bad, sizeof(bad) / sizeof(bad[0]), d);
	flash_diag_free(d);
}

/* The sandbox section (sandbox sessions on this node): bounded, the pool
 * keys only with dir and poolSize with poolImage, each refusal naming its
 * key or section; unset by default. */
Test(render, operator_config_sandbox)
{
	static const struct config_refusal bad[] = {
		{ "{\"sandbox\":{\"dir\":\"relative\"}}", "sandbox.dir" },
		{ "{\"sandbox\":{\"dir\":\"/var/lib/s\",\"poolSize\":65,\"poolImage\":\"busybox\"}}", "sandbox.poolSize" },
		{ "{\"sandbox\":{\"dir\":\"/var/lib/s\",\"poolCpuMillis\":0}}", "sandbox.poolCpuMillis" },
		{ "{\"sandbox\":{\"dir\":\"/var/lib/s\",\"poolImage\":\"a b\"}}", "sandbox.poolImage" },
		{ "{\"sandbox\":{\"dir\":\"/var/lib/s\",\"poolSize\":2}}", "sandbox" },
		{ "{\"sandbox\":{\"poolSize\":2,\"poolImage\":\"busybox\"}}", "sandbox" },
		{ "{\"sandbox\":{\"dir\":\"/var/lib/s\",\"ttl\":5}}", "sandbox.ttl" },
		{ "{\"sandbox\":{\"dir\":\"/var/lib/s\",\"namespace\":\"sbx\"}}", "sandbox" },
		{ "{\"sandbox\":{\"runtimeClass\":\"gvisor\"}}", "sandbox" },
		{ "{\"sandbox\":{\"namespace\":\"Not_A_Label\"}}", "sandbox.namespace" },
		{ "{\"sandbox\":{\"namespace\":\"sbx\",\"runtimeClass\":\"UPPER\"}}", "sandbox.runtimeClass" },
		{ "{\"sandbox\":{\"namespace\":\"sbx\",\"netSetupImage\":\"a b\"}}", "sandbox.netSetupImage" },
		{ "{\"sandbox\":{\"namespace\":\"sbx\",\"nodeSelector\":\"\"}}", "sandbox.nodeSelector" },
	};
	static const char k8s[] = "{\"sandbox\":{\"namespace\":\"agent-sbx\",\"netSetupImage\":\"registry.example/ns:1\","
				  "\"runtimeClass\":\"gvisor\",\"nodeSelector\":\"pool=sbx\",\"tolerations\":\"sbx:NoSchedule\","
				  "\"imagePullSecrets\":\"regcred\"}}";
	static const char good[] = "{\"sandbox\":{\"dir\":\"/var/lib/flash/sandbox\",\"poolSize\":4,"
				   "\"poolImage\":\"registry.example/sbx:1\",\"poolCpuMillis\":500,\"poolMemoryMib\":256}}";
	struct flash_operator_config *c = NULL;
	struct flash_operator_runtime rt = { .sz = sizeof(rt) };
	struct flash_diag *d = NULL;

	ASSERT_OK(flash_diag_new(&d), "diag");
	ASSERT_OK(flash_operator_config_default(&c), "defaults");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	cr_assert(!rt.sandbox_dir && rt.sandbox_pool_size == 0 && !rt.sandbox_pool_image, "unset by default");
	flash_operator_config_free(c);
	ASSERT_OK(flash_operator_config_parse(good, strlen(good), &c, d), "sandbox section");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	cr_assert_str_eq(rt.sandbox_dir, "/var/lib/flash/sandbox");
	cr_assert_eq(rt.sandbox_pool_size, 4);
	cr_assert_str_eq(rt.sandbox_pool_image, "registry.example/sbx:1");
	cr_assert_eq(rt.sandbox_pool_cpu_millis, 500);
	cr_assert_eq(rt.sandbox_pool_memory_mib, 256);
	cr_assert_null(rt.sandbox_namespace, "no Kubernetes sessions with dir");
	flash_operator_config_free(c);
	/* Kubernetes mode: the strings as given (the backend parses them) */
	ASSERT_OK(flash_operator_config_parse(k8s, strlen(k8s), &c, d), "sandbox section, Kubernetes mode");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
	cr_assert_null(rt.sandbox_dir);
	cr_assert_str_eq(rt.sandbox_namespace, "agent-sbx");
	cr_assert_str_eq(rt.sandbox_net_setup_image, "registry.example/ns:1");
	cr_assert_str_eq(rt.sandbox_runtime_class, "gvisor");
	cr_assert_str_eq(rt.sandbox_node_selector, "pool=sbx");
	cr_assert_str_eq(rt.sandbox_tolerations, "sbx:NoSchedule");
	cr_assert_str_eq(rt.sandbox_image_pull_secrets, "regcred");
	flash_operator_config_free(c);
	config_refused(bad, sizeof(bad) / sizeof(bad[0]), d);
	flash_diag_free(d);
}

/* Autoscaling: an autoscaling/v2 HorizontalPodAutoscaler on CPU
 * utilization, and a Deployment that leaves replicas to it; domains: one
 * HTTPRoute per named port, attached to the configured Gateway, routed to
 * the Service port (the public one); without a Gateway they are refused. */
Test(render, autoscaling_and_domains)
{
	struct flash_spec *spec = NULL;
	struct flash_render *rd = render_case(find_case("autoscaling-domains"), &spec);
	struct flash_operator_config *config = NULL;
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	struct flash_render *none = NULL;
	char *dep = object_of(rd, "Deployment"), *hpa = object_of(rd, "HorizontalPodAutoscaler");
	char *route = object_of(rd, "HTTPRoute"), *svc = object_of(rd, "Service");
	size_t routes = 0;

	HASNT(dep, "\"replicas\"");
	HAS(hpa, "\"scaleTargetRef\":{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"fs-web\"}");
	HAS(hpa, "\"minReplicas\":2,\"maxReplicas\":10");
	HAS(hpa, "\"resource\":{\"name\":\"cpu\",\"target\":{\"type\":\"Utilization\",\"averageUtilization\":70}}");
	HAS(route, "\"parentRefs\":[{\"group\":\"gateway.networking.k8s.io\",\"kind\":\"Gateway\",\"name\":\"public\","
		   "\"namespace\":\"gateway-system\",\"sectionName\":\"https\"}]");
	HAS(route, "\"name\":\"fs-web-http\"");
	HAS(route, "\"hostnames\":[\"www.example.com\",\"example.com\"]");
	/* the public port the Service listens on for "http" */
	HAS(svc, "\"name\":\"http\",\"protocol\":\"TCP\",\"port\":30000,\"targetPort\":8080");
	HAS(route, "\"backendRefs\":[{\"group\":\"\",\"kind\":\"Service\",\"name\":\"fs-web\",\"port\":30000}]");
	for (size_t i = 0; i < flash_render_count(rd); i++)
		routes += strcmp(flash_render_kind(rd, i), "HTTPRoute") == 0;
	cr_assert(routes == 1, "%zu routes for one named port", routes);
	free(dep);
	free(hpa);
	free(route);
	free(svc);

	/* No Gateway configured: refused, naming the key. */
	ASSERT_OK(flash_operator_config_default(&config), "config");
	{
		struct flash_public_port *ports = NULL;
		size_t n = 0;

		ASSERT_OK(flash_public_ports_assign(config, spec, NULL, 0, NULL, 0, &ports, &n), "assign");
		FLASH_OPTS(flash_render_opts, o, .name = "fs-web", .namespace_ = "flash-demo", .organization_id = "org-1234",
			   .public_ports = ports, .n_public_ports = n);
		ASSERT_ERR(flash_render(spec, config, &o, &none, d), -FLASH_E_RENDER_CONFIG, "domains without a gateway");
		ASSERT_STREQ(diag_path(d), "gateway.name", "path");
		cr_assert_null(none);
		free(ports);
	}
	flash_operator_config_free(config);
	flash_spec_free(spec);
	flash_render_free(rd);
}
