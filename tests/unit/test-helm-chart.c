/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* deploy/helm/heterocloud-flash: the checked-in chart is what
 * tools/flash-manifests generates; rendered without helm (the subset of
 * helm-template.h, which refuses anything else) with its default values
 * it gives exactly the objects of deploy/kubernetes/ (kind, namespace,
 * name and the whole object, CRDs included as `helm template
 * --include-crds` does); with other values exactly what libflash renders
 * for the operator configuration holding them; every rendered object
 * validates against the recorded Kubernetes schemas. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/auth.h>
#include <flash/render.h>

#include "helm-chart.h"
#include "helm-template.h"
#include "helpers.h"
#include "json.h"
#include "render-test.h"

#define CHART "../../deploy/helm/heterocloud-flash/"

struct objs {
	struct json_value *v[64];
	char *json[64];
	size_t n;
};

static void objs_free(struct objs *o)
{
	for (size_t i = 0; i < o->n; i++) {
		json_free(o->v[i]);
		free(o->json[i]);
	}
	o->n = 0;
}

/* Adds every non-empty document of the YAML stream @yaml. */
static void add_yaml(struct objs *o, const char *yaml, const char *what)
{
	char **docs;
	size_t n = render_test_yaml_to_json(yaml, &docs);

	for (size_t i = 0; i < n; i++) {
		struct json_error e;

		if (!docs[i][0] || strcmp(docs[i], "\"\"") == 0 || strcmp(docs[i], "null") == 0) {
			free(docs[i]);
			continue;
		}
		cr_assert(o->n < 64, "too many objects");
		cr_assert(json_parse(docs[i], strlen(docs[i]), NULL, &o->v[o->n], &e) == 0, "%s document %zu: %s\n%s",
			  what, i, e.message, docs[i]);
		cr_assert(json_is(o->v[o->n], JSON_OBJECT), "%s document %zu is not an object", what, i);
		o->json[o->n++] = docs[i];
	}
	free(docs);
}

static struct json_value *parse(const char *json)
{
	struct json_value *v = NULL;
	struct json_error e;

	cr_assert(json_parse(json, strlen(json), NULL, &v, &e) == 0, "%s: %s", json, e.message);
	return v;
}

/* The chart's values.yaml as JSON. */
static struct json_value *chart_values(void)
{
	char *yaml = render_test_read(CHART "values.yaml", NULL);
	char **docs;
	size_t n = render_test_yaml_to_json(yaml, &docs);
	struct json_value *v;

	cr_assert(n == 1, "values.yaml holds %zu documents", n);
	v = parse(docs[0]);
	render_test_free_docs(docs, n);
	free(yaml);
	return v;
}

/* The generated file list: which files are templates and which CRDs. */
static struct helm_chart_file *chart_files(size_t *n)
{
	struct helm_chart_file *files = NULL;
	char err[512];
	int r = helm_chart_generate(&files, n, err, sizeof(err));

	cr_assert(r == 0, "helm_chart_generate: %d %s", r, err);
	return files;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* `helm template --include-crds` of the checked-in chart with @user
 * values (JSON, NULL: none) over values.yaml; NOTES.txt is rendered into
 * *@ret_notes when asked. */
static void render_chart(const char *user, struct objs *out, char **ret_notes)
{
	struct json_value *defaults = chart_values(), *set = parse(user ? user : "{}");
	const struct json_value *layers[] = { set, defaults };
	struct helm_chart_file *files;
	size_t n;

	files = chart_files(&n);
	for (size_t i = 0; i < n; i++) {
		char rel[256], err[512];
		char *text, *rendered = NULL;
		int r;

		snprintf(rel, sizeof(rel), CHART "%s", files[i].path);
		if (strncmp(files[i].path, "crds/", 5) == 0) {
			text = render_test_read(rel, NULL);
			cr_assert_null(strstr(text, "{{"), "%s: Helm installs crds/ without templating", files[i].path);
			add_yaml(out, text, files[i].path);
			free(text);
			continue;
		}
		if (strncmp(files[i].path, "templates/", 10) != 0)
			continue;
		text = render_test_read(rel, NULL);
		r = helm_template_render(files[i].path, text, layers, 2, &rendered, err, sizeof(err));
		cr_assert(r == 0, "%s", err);
		if (has_suffix(files[i].path, ".yaml"))
			add_yaml(out, rendered, files[i].path);
		else if (ret_notes)
			*ret_notes = strdup(rendered);
		free(rendered);
		free(text);
	}
	helm_chart_files_free(files, n);
	json_free(set);
	json_free(defaults);
}

/* What libflash renders into deploy/kubernetes/ for the configuration
 * @config_json (NULL: the defaults); sandbox-rbac.yaml only when the
 * configuration turns sandbox sessions on (sandbox.namespace), as the
 * chart's sandbox.enabled does. */
static void render_manifests(const char *config_json, struct objs *out)
{
	struct flash_operator_config *config = NULL;
	struct flash_operator_runtime rt = { .sz = sizeof(rt) };

	if (config_json) {
		_cleanup_diag_ struct flash_diag *d = render_test_diag();
		int r = flash_operator_config_parse(config_json, strlen(config_json), &config, d);

		cr_assert(r == 0, "config: %s %s", diag_path(d), diag_message(d));
	}
	if (config)
		ASSERT_OK(flash_operator_config_runtime(config, &rt), "runtime settings");
	for (int m = 0; m < FLASH_MANIFEST_COUNT_; m++) {
		char *yaml = NULL;

		if (m == FLASH_MANIFEST_SANDBOX_RBAC && !rt.sandbox_namespace)
			continue;
		ASSERT_OK(flash_manifest_render(m, config, &yaml, NULL), flash_manifest_path(m));
		add_yaml(out, yaml, flash_manifest_path(m));
		free(yaml);
	}
	flash_operator_config_free(config);
}

static const char *str_at(const struct json_value *v, const char *path)
{
	const char *s = json_string_value(json_at(v, path));

	return s ? s : "";
}

static const char *kind_of(const struct json_value *v)
{
	return str_at(v, "kind");
}

/* The object of @o with @v's kind, namespace and name, or -1. */
static ssize_t find(const struct objs *o, const struct json_value *v)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(kind_of(o->v[i]), kind_of(v)) == 0 &&
		    strcmp(str_at(o->v[i], "metadata.namespace"), str_at(v, "metadata.namespace")) == 0 &&
		    strcmp(str_at(o->v[i], "metadata.name"), str_at(v, "metadata.name")) == 0)
			return (ssize_t)i;
	return -1;
}

/* @chart and @want hold the same objects: each (kind, namespace, name)
 * once on both sides, and equal as JSON. */
static void assert_same_objects(const struct objs *chart, const struct objs *want)
{
	for (size_t i = 0; i < chart->n; i++) {
		const struct json_value *v = chart->v[i];
		ssize_t j = find(want, v);

		cr_assert(find(chart, v) == (ssize_t)i, "the chart renders %s %s/%s twice", kind_of(v),
			  str_at(v, "metadata.namespace"), str_at(v, "metadata.name"));
		cr_assert(j >= 0, "the chart renders %s %s/%s, which the manifests do not hold:\n%s", kind_of(v),
			  str_at(v, "metadata.namespace"), str_at(v, "metadata.name"), chart->json[i]);
		cr_assert(json_equal(v, want->v[j]), "%s %s/%s differs:\nchart:     %s\nmanifests: %s", kind_of(v),
			  str_at(v, "metadata.namespace"), str_at(v, "metadata.name"), chart->json[i], want->json[j]);
	}
	for (size_t j = 0; j < want->n; j++)
		cr_assert(find(chart, want->v[j]) >= 0, "the chart does not render %s %s/%s", kind_of(want->v[j]),
			  str_at(want->v[j], "metadata.namespace"), str_at(want->v[j], "metadata.name"));
	cr_assert(chart->n == want->n, "chart %zu objects, manifests %zu", chart->n, want->n);
}

static void assert_schemas(const struct objs *o)
{
	struct flash_schema_set *set = render_test_schema_set(true);

	for (size_t i = 0; i < o->n; i++) {
		_cleanup_diag_ struct flash_diag *d = render_test_diag();
		int r = flash_schema_validate_object(set, o->json[i], strlen(o->json[i]), d);

		cr_assert(r == 0, "%s %s: %s at %s: %s\n%s", kind_of(o->v[i]), str_at(o->v[i], "metadata.name"),
			  flash_strerror(r), diag_path(d), diag_message(d), o->json[i]);
	}
	flash_schema_set_free(set);
}

static const struct json_value *object(const struct objs *o, const char *kind, const char *name)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(kind_of(o->v[i]), kind) == 0 && strcmp(str_at(o->v[i], "metadata.name"), name) == 0)
			return o->v[i];
	cr_assert_fail("no %s %s", kind, name);
	return NULL;
}

/* Removes the objects of kinds @kinds from @o. */
static void drop_kinds(struct objs *o, const char *const *kinds)
{
	size_t k = 0;

	for (size_t i = 0; i < o->n; i++) {
		bool drop = false;

		for (size_t j = 0; kinds[j]; j++)
			drop |= strcmp(kind_of(o->v[i]), kinds[j]) == 0;
		if (drop) {
			json_free(o->v[i]);
			free(o->json[i]);
			continue;
		}
		o->v[k] = o->v[i];
		o->json[k++] = o->json[i];
	}
	o->n = k;
}

Test(chart, checked_in_files_are_current)
{
	size_t n;
	struct helm_chart_file *files = chart_files(&n);
	bool values = false, chart = false;

	for (size_t i = 0; i < n; i++) {
		char rel[256];
		size_t len;
		char *want;

		snprintf(rel, sizeof(rel), CHART "%s", files[i].path);
		want = render_test_read(rel, &len);
		cr_assert(len == files[i].len && memcmp(want, files[i].text, len) == 0,
			  "deploy/helm/heterocloud-flash/%s differs from the generated file: run `make deploy-manifests`",
			  files[i].path);
		free(want);
		values |= strcmp(files[i].path, "values.yaml") == 0;
		chart |= strcmp(files[i].path, "Chart.yaml") == 0 && strstr(files[i].text, "apiVersion: v2\n");
	}
	cr_assert(values && chart, "values.yaml and a Chart.yaml of apiVersion v2");
	cr_assert(n == 11, "%zu generated files", n);
	helm_chart_files_free(files, n);
}

Test(chart, default_values_render_the_plain_manifests)
{
	struct objs chart = { 0 }, want = { 0 };
	char *notes = NULL;

	render_chart(NULL, &chart, &notes);
	render_manifests(NULL, &want);
	assert_same_objects(&chart, &want);
	/* 2 CRDs, Namespace, 2 ServiceAccounts, ConfigMap, Deployment,
	 * DaemonSet, 6 RBAC objects, 2 RuntimeClasses, the webhook's
	 * Service and configuration (as test-render-manifests counts) */
	cr_assert(chart.n == 18, "%zu objects", chart.n);
	assert_schemas(&chart);
	cr_assert(notes && strstr(notes, "flash-operator-webhook-tls") && !strstr(notes, "provider/v1"), "%s", notes);
	free(notes);
	objs_free(&chart);
	objs_free(&want);
}

/* Images, persistence with a storage class and the webhook's CA: the
 * chart renders what libflash renders for the configuration saying so. */
Test(chart, custom_values_render_what_libflash_renders_for_them)
{
	struct objs chart = { 0 }, want = { 0 };
	const struct json_value *ds;

	render_chart("{\"images\":{\"operator\":\"registry.example.com/flash/operator:1.2@sha256:"
		     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
		     "\"agent\":\"registry.example.com:5000/flowsdn/agent:1.2\","
		     "\"cniInstall\":\"registry.example.com:5000/flowsdn/agent:1.2\"},"
		     "\"persistence\":{\"enabled\":true,\"storageClass\":\"fast-ssd\"},"
		     "\"webhook\":{\"caBundle\":\"TUlJQmtUQ0IrZ0lKQUtIQmZwM0xOQ0N0TUEwR0NTcUdTSWIzRFFFQkN3VUE=\"}}",
		     &chart, NULL);
	render_manifests("{\"operator\":{\"image\":\"registry.example.com/flash/operator:1.2@sha256:"
			 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
			 "\"agentImage\":\"registry.example.com:5000/flowsdn/agent:1.2\"},"
			 "\"persistence\":{\"enabled\":true,\"storageClass\":\"fast-ssd\"},"
			 "\"webhook\":{\"caBundle\":\"TUlJQmtUQ0IrZ0lKQUtIQmZwM0xOQ0N0TUEwR0NTcUdTSWIzRFFFQkN3VUE=\"}}",
			 &want);
	assert_same_objects(&chart, &want);
	assert_schemas(&chart);
	/* the values did reach the objects (not the defaults compared twice) */
	ds = object(&chart, "DaemonSet", "flowsdn-agent");
	cr_assert_str_eq(str_at(ds, "spec.template.spec.initContainers[0].image"),
			 "registry.example.com:5000/flowsdn/agent:1.2");
	cr_assert(strstr(json_string_value(json_get(json_get(object(&chart, "ConfigMap", "flash-operator-config"),
								       "data"),
							      "flash-operator.conf")) ?: "",
			 "\"storageClass\": \"fast-ssd\""));
	objs_free(&chart);
	objs_free(&want);
}

/* sandbox.enabled: the sessions' Namespace, the operator's Role and
 * RoleBinding there, and sandbox.namespace in its configuration, exactly
 * what libflash renders for the configuration naming that namespace. */
Test(chart, sandbox_enabled_renders_what_libflash_renders_for_its_namespace)
{
	struct objs chart = { 0 }, want = { 0 }, plain = { 0 };
	const struct json_value *role, *cm;

	render_chart("{\"sandbox\":{\"enabled\":true,\"namespace\":\"agents-sbx\"}}", &chart, NULL);
	render_manifests("{\"sandbox\":{\"namespace\":\"agents-sbx\"}}", &want);
	assert_same_objects(&chart, &want);
	assert_schemas(&chart);
	render_manifests(NULL, &plain);
	cr_assert(chart.n == plain.n + 3, "%zu objects, %zu without sandboxes", chart.n, plain.n);
	role = object(&chart, "Role", "flash-operator-sandbox");
	cr_assert_str_eq(str_at(role, "metadata.namespace"), "agents-sbx", "the Role is the namespace's only");
	cr_assert_str_eq(str_at(object(&chart, "RoleBinding", "flash-operator-sandbox"), "metadata.namespace"),
			 "agents-sbx");
	object(&chart, "Namespace", "agents-sbx");
	cm = object(&chart, "ConfigMap", "flash-operator-config");
	{
		const char *conf = json_string_value(json_get(json_get(cm, "data"), "flash-operator.conf"));
		struct flash_operator_config *c = NULL;
		struct flash_operator_runtime rt = { .sz = sizeof(rt) };

		cr_assert(conf);
		ASSERT_OK(flash_operator_config_parse(conf, strlen(conf), &c, NULL), "the chart's configuration");
		ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime");
		cr_assert_str_eq(rt.sandbox_namespace, "agents-sbx", "the operator serves sandboxes there");
		flash_operator_config_free(c);
	}
	objs_free(&chart);
	objs_free(&want);
	objs_free(&plain);
}

Test(chart, webhook_off_renders_what_libflash_renders_without_it)
{
	struct objs chart = { 0 }, want = { 0 };

	render_chart("{\"webhook\":{\"enabled\":false}}", &chart, NULL);
	render_manifests("{\"webhook\":{\"enabled\":false}}", &want);
	assert_same_objects(&chart, &want);
	cr_assert(chart.n == 16, "%zu objects", chart.n);
	cr_assert_null(strstr(chart.json[find(&chart, object(&chart, "Deployment", "flash-operator"))], "webhook"));
	assert_schemas(&chart);
	objs_free(&chart);
	objs_free(&want);
}

Test(chart, rbac_and_runtime_classes_can_be_left_out)
{
	static const char *const left_out[] = { "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
						"RuntimeClass", NULL };
	struct objs chart = { 0 }, want = { 0 };

	render_chart("{\"rbac\":{\"create\":false},\"runtimeClasses\":{\"create\":false}}", &chart, NULL);
	render_manifests(NULL, &want);
	drop_kinds(&want, left_out);
	cr_assert(want.n == 10);
	assert_same_objects(&chart, &want);
	objs_free(&chart);
	objs_free(&want);
}

Test(chart, cni_install_image_is_its_own_value)
{
	struct objs chart = { 0 }, want = { 0 };
	const struct json_value *ds, *want_ds;

	render_chart("{\"images\":{\"cniInstall\":\"registry.example.com/flowsdn/cni-install:7\"}}", &chart, NULL);
	render_manifests(NULL, &want);
	ds = object(&chart, "DaemonSet", "flowsdn-agent");
	want_ds = object(&want, "DaemonSet", "flowsdn-agent");
	cr_assert_str_eq(str_at(ds, "spec.template.spec.initContainers[0].image"),
			 "registry.example.com/flowsdn/cni-install:7");
	cr_assert_str_eq(str_at(ds, "spec.template.spec.containers[0].image"),
			 str_at(want_ds, "spec.template.spec.containers[0].image"));
	assert_schemas(&chart);
	objs_free(&chart);
	objs_free(&want);
}

/* providerAuth: the key set reaches the operator byte for byte (through
 * quote and YAML), with the provider API's arguments, its state volume
 * and Service; everything else stays as the manifests hold it. */
Test(chart, provider_auth_serves_the_provider_api)
{
	static const char *const want_args[] = { "--kubernetes", "--config", "/etc/flash/flash-operator.conf",
						 "--keys", "/etc/flash-keys/keys.jwks", "--issuer", "marketplace",
						 "--audience", "provider-7", "--listen", "0.0.0.0:8080", "--state-dir",
						 "/var/lib/flash", "--webhook", NULL };
	struct objs chart = { 0 }, want = { 0 };
	const struct json_value *dep, *args, *keys_cm, *svc;
	char *user = NULL, *notes = NULL;
	struct json_value *set_keys;
	size_t i;

	cr_assert(asprintf(&user,
			   "{\"providerAuth\":{\"publicKeysJson\":\"%s\",\"issuer\":\"marketplace\","
			   "\"audience\":\"provider-7\"}}",
			   "{\\\"keys\\\":[{\\\"kty\\\":\\\"OKP\\\",\\\"crv\\\":\\\"Ed25519\\\",\\\"kid\\\":\\\"mp-1\\\","
			   "\\\"x\\\":\\\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\\\"}]}\\n") > 0);
	set_keys = parse(user);
	render_chart(user, &chart, &notes);
	render_manifests(NULL, &want);
	assert_schemas(&chart);
	cr_assert(chart.n == want.n + 2, "%zu objects", chart.n);

	keys_cm = object(&chart, "ConfigMap", "flash-operator-keys");
	cr_assert_str_eq(str_at(keys_cm, "metadata.namespace"), "flash-system");
	cr_assert_str_eq(json_string_value(json_get(json_get(keys_cm, "data"), "keys.jwks")),
			 str_at(set_keys, "providerAuth.publicKeysJson"));
	{
		/* what the operator reads at --keys is a key set it accepts */
		const char *jwks = json_string_value(json_get(json_get(keys_cm, "data"), "keys.jwks"));
		struct flash_auth_keyset *ks = NULL;

		ASSERT_OK(flash_auth_keyset_parse(jwks, strlen(jwks), &ks, NULL), "keyset");
		cr_assert(flash_auth_keyset_has(ks, "mp-1"));
		flash_auth_keyset_free(ks);
	}
	svc = object(&chart, "Service", "flash-operator-provider");
	cr_assert_str_eq(json_at(svc, "spec.ports[0].port")->u.number.text, "8080");

	dep = object(&chart, "Deployment", "flash-operator");
	args = json_at(dep, "spec.template.spec.containers[0].args");
	cr_assert(json_is(args, JSON_ARRAY));
	for (i = 0; want_args[i]; i++) {
		cr_assert(i < args->u.array.n, "argument %zu missing", i);
		cr_assert_str_eq(json_string_value(args->u.array.items[i]) ?: "", want_args[i], "argument %zu", i);
	}
	cr_assert(args->u.array.n == i, "%zu arguments", args->u.array.n);
	/* the key file is mounted as a file (subPath), not the ConfigMap
	 * volume's symbolic link flash_file_read_public() refuses */
	cr_assert_str_eq(str_at(dep, "spec.template.spec.containers[0].volumeMounts[1].subPath"), "keys.jwks");
	cr_assert(notes && strstr(notes, "flash-operator-provider"), "%s", notes);

	/* every other object as the manifests hold it */
	for (size_t k = 0; k < want.n; k++) {
		ssize_t c = find(&chart, want.v[k]);

		cr_assert(c >= 0);
		if (strcmp(kind_of(want.v[k]), "Deployment") != 0)
			cr_assert(json_equal(chart.v[c], want.v[k]), "%s differs", chart.json[c]);
	}
	json_free(set_keys);
	free(user);
	free(notes);
	objs_free(&chart);
	objs_free(&want);
}

/* ---------------------------------------------------------------- the renderer */

static char *render(const char *tmpl, const char *values, char *err, size_t err_size, int *ret)
{
	struct json_value *v = parse(values);
	const struct json_value *layers[] = { v };
	char *out = NULL;

	*ret = helm_template_render("t", tmpl, layers, 1, &out, err, err_size);
	json_free(v);
	return out;
}

static void expect(const char *tmpl, const char *values, const char *want)
{
	char err[256];
	int r;
	char *out = render(tmpl, values, err, sizeof(err), &r);

	cr_assert(r == 0, "%s: %s", tmpl, err);
	cr_assert_str_eq(out, want, "template %s", tmpl);
	free(out);
}

static void refused(const char *tmpl, const char *values, const char *why)
{
	char err[256];
	int r;
	char *out = render(tmpl, values, err, sizeof(err), &r);

	cr_assert(r == -EINVAL, "%s rendered (%s)", tmpl, out ? out : "");
	cr_assert(strstr(err, why), "%s: message '%s' does not say '%s'", tmpl, err, why);
	cr_assert_null(out);
}

/* Outputs as Go's text/template and Helm's sprig functions give them. */
Test(renderer, renders_the_subset_as_helm_does)
{
	const char *v = "{\"s\":\"a \\\"b\\\" \\\\ <&>\\n\\t\\u0001\",\"t\":true,\"f\":false,\"n\":443,\"z\":0,"
			"\"e\":\"\",\"m\":{\"k\":\"v\"},\"em\":{},\"l\":[1],\"el\":[]}";

	expect("x: {{ .Values.m.k }}\n", v, "x: v\n");
	expect("{{ .Values.t }} {{ .Values.f }} {{ .Values.n }}", v, "true false 443");
	expect("{{ .Values.s | quote }}", v, "\"a \\\"b\\\" \\\\ <&>\\n\\t\\x01\"");
	expect("{{ .Values.n | quote }}{{ .Values.t | quote }}", v, "\"443\"\"true\"");
	expect("{{ .Values.m.k | toJson }}{{ .Values.n | toJson }}", v, "\"v\"443");
	expect("{{ .Values.e | toJson }}", v, "\"\"");
	/* Go's trimming: all whitespace up to the action, on its side only */
	expect("a  \n\n{{- .Values.m.k }}  \nb", v, "av  \nb");
	expect("a {{ .Values.m.k -}} \n\t b", v, "a vb");
	/* if: Go's truth; nested; trimmed lines */
	expect("a\n{{- if .Values.t }}\nb\n{{- end }}\nc", v, "a\nb\nc");
	expect("a\n{{- if .Values.f }}\nb\n{{- end }}\nc", v, "a\nc");
	expect("{{ if .Values.z }}z{{ end }}{{ if .Values.e }}e{{ end }}{{ if .Values.em }}m{{ end }}"
	       "{{ if .Values.el }}l{{ end }}{{ if .Values.m }}M{{ end }}{{ if .Values.l }}L{{ end }}"
	       "{{ if .Values.n }}N{{ end }}",
	       v, "MLN");
	expect("{{ if .Values.t }}1{{ if .Values.f }}2{{ end }}3{{ end }}", v, "13");
	expect("{{ if .Values.f }}{{ if .Values.t }}2{{ end }}{{ end }}x", v, "x");
}

Test(renderer, refuses_what_it_does_not_render_as_helm_would)
{
	const char *v = "{\"s\":\"\\u00e9\",\"c\":\"\\u0008\",\"m\":{\"k\":1},\"big\":1000000,\"fr\":1.5,\"t\":true}";

	refused("{{ .Release.Name }}", v, "only .Values");
	refused("{{ .Values.nope }}", v, "no such value");
	refused("{{ .Values.m.k.x }}", v, "no such value");
	refused("{{ .Values.m }}", v, "cannot print a object");
	refused("{{ .Values.m | toYaml }}", v, "only quote and toJson");
	refused("{{ .Values.m.k | quote | upper }}", v, "only quote and toJson");
	refused("{{ if .Values.t }}{{ if .Values.fr }}{{ .Values.t | b64enc }}{{ end }}{{ end }}", v,
		"only quote and toJson"); /* in a branch not taken as well */
	refused("{{ .Values.s | quote }}", v, "outside ASCII");
	refused("{{ .Values.c | toJson }}", v, "byte 0x08");
	refused("{{ .Values.big }}", v, "at most 6 digits");
	refused("{{ .Values.fr }}", v, "at most 6 digits");
	refused("{{ include \"x\" . }}", v, "literals");
	refused("{{/* comment */}}", v, "comments");
	refused("{{ range .Values.m }}{{ end }}", v, "not supported");
	refused("{{ if .Values.t }}a{{ else }}b{{ end }}", v, "not supported");
	refused("{{ if .Values.t }}a", v, "'if' without 'end'");
	refused("a{{ end }}", v, "'end' without 'if'");
	refused("a\nb {{ .Values.t", v, "t:2: unterminated");
	refused("{{-.Values.t }}", v, "followed by a space");
	refused("{{ $x := 1 }}", v, "not supported");
}
