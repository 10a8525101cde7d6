/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * deploy/helm/heterocloud-flash from the rendered manifests (helm-chart.h).
 * Every edit names the exact rendered text it templates and must find it
 * once: when the renderer changes that text, generation stops with the
 * line instead of writing a chart that differs from the manifests.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/render.h>

#include "helm-chart.h"
#include "json.h"
#include "util.h"

struct gen {
	char *err;
	size_t err_size;
};

__attribute__((format(printf, 3, 4))) static int fail(struct gen *g, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->err, g->err_size, fmt, ap);
	va_end(ap);
	return r;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Replaces the one occurrence of @from in *@text by @to. */
static int replace_once(struct gen *g, const char *file, char **text, const char *from, const char *to)
{
	size_t n = count(*text, from);
	const char *at = strstr(*text, from);
	struct util_buf b = { 0 };
	int r;

	if (n != 1)
		return fail(g, -EPROTO, "%s: the rendered text holds %zu times (not once): %s", file, n, from);
	r = util_buf_append(&b, *text, (size_t)(at - *text), 0);
	if (r == 0)
		r = util_buf_append(&b, to, strlen(to), 0);
	if (r == 0)
		r = util_buf_append(&b, at + strlen(from), strlen(at + strlen(from)), 0);
	if (r < 0) {
		free(b.p);
		return fail(g, r, "out of memory");
	}
	free(*text);
	*text = b.p;
	return 0;
}

__attribute__((format(printf, 1, 2))) static char *strf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

/* Puts each document of @text whose kind is in @kinds (NULL: every
 * document) between {{- if @cond }} and {{- end }}. */
static int wrap_docs(struct gen *g, const char *file, char **text, const char *const *kinds, const char *cond)
{
	struct util_buf b = { 0 };
	const char *p = *text;
	int r = 0;

	if (strncmp(p, "---\n", 4) != 0)
		return fail(g, -EPROTO, "%s: does not start with a document marker", file);
	while (r == 0 && *p) {
		const char *next = strstr(p + 4, "\n---\n");
		const char *end = next ? next + 1 : p + strlen(p);
		const char *kind = strstr(p, "\nkind: ");
		bool wrap = !kinds;
		size_t klen;

		if (!kind || kind > end) {
			free(b.p);
			return fail(g, -EPROTO, "%s: a document without a kind", file);
		}
		kind += 7;
		klen = strcspn(kind, "\n");
		for (size_t i = 0; kinds && kinds[i]; i++)
			wrap |= strlen(kinds[i]) == klen && memcmp(kinds[i], kind, klen) == 0;
		if (wrap) {
			r = util_buf_append(&b, "{{- if ", 7, 0);
			if (r == 0)
				r = util_buf_append(&b, cond, strlen(cond), 0);
			if (r == 0)
				r = util_buf_append(&b, " }}\n", 4, 0);
		}
		if (r == 0)
			r = util_buf_append(&b, p, (size_t)(end - p), 0);
		if (r == 0 && wrap)
			r = util_buf_append(&b, "{{- end }}\n", 11, 0);
		p = end;
	}
	if (r < 0) {
		free(b.p);
		return fail(g, r, "out of memory");
	}
	free(*text);
	*text = b.p;
	return 0;
}

/* @text with every line indented by @indent. */
static char *indent_lines(const char *text, const char *indent)
{
	struct util_buf b = { 0 };
	int r = 0;

	for (const char *p = text; r == 0 && *p;) {
		size_t n = strcspn(p, "\n");

		r = util_buf_append(&b, indent, strlen(indent), 0);
		if (r == 0)
			r = util_buf_append(&b, p, n + (p[n] == '\n'), 0);
		p += n + (p[n] == '\n');
	}
	if (r < 0) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* What the rendered default manifests hold that values.yaml repeats. */
struct defaults {
	char *operator_image;
	char *agent_image;
	char *ns;
	char *webhook_port;
};

static void defaults_free(struct defaults *d)
{
	free(d->operator_image);
	free(d->agent_image);
	free(d->ns);
	free(d->webhook_port);
}

static const char conf_key[] = "  flash-operator.conf: \"";

/* The operator configuration the ConfigMap of operator.yaml holds (the
 * YAML double-quoted scalar is a JSON string) and what values.yaml
 * repeats of it. */
static int read_conf(struct gen *g, const char *operator_yaml, char **ret_conf, struct defaults *d)
{
	const char *start = strstr(operator_yaml, conf_key), *end;
	struct json_value *s = NULL, *conf = NULL;
	const char *text = NULL;
	int r;

	if (!start)
		return fail(g, -EPROTO, "operator.yaml: no %s line", conf_key);
	start += strlen(conf_key) - 1;
	end = strchr(start, '\n');
	r = json_parse(start, (size_t)(end - start), NULL, &s, NULL);
	if (r == 0 && (text = json_string_value(s)))
		r = json_parse(text, strlen(text), NULL, &conf, NULL);
	else if (r == 0)
		r = -EPROTO;
	if (r < 0) {
		json_free(s);
		return fail(g, r == -ENOMEM ? r : -EPROTO, "operator.yaml: the configuration is not a JSON string");
	}
	d->operator_image = strdup(json_string_value(json_at(conf, "operator.image")) ?: "");
	d->agent_image = strdup(json_string_value(json_at(conf, "operator.agentImage")) ?: "");
	d->ns = strdup(json_string_value(json_at(conf, "operator.namespace")) ?: "");
	d->webhook_port = json_is(json_at(conf, "webhook.port"), JSON_NUMBER) ?
				  strdup(json_at(conf, "webhook.port")->u.number.text) :
				  strdup("");
	*ret_conf = strdup(text);
	json_free(conf);
	json_free(s);
	if (!d->operator_image || !d->agent_image || !d->ns || !d->webhook_port || !*ret_conf)
		return fail(g, -ENOMEM, "out of memory");
	if (!d->operator_image[0] || !d->agent_image[0] || !d->ns[0] || !d->webhook_port[0])
		return fail(g, -EPROTO, "operator.yaml: the configuration lacks operator.image, agentImage, namespace "
					"or webhook.port");
	return 0;
}

/* Each edit: the rendered text, the template text (a printf format whose
 * arguments are the defaults named in the table). */
struct edit {
	const char *from, *to;
};

static int apply(struct gen *g, const char *file, char **text, const struct edit *edits, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r;

		if (!edits[i].from || !edits[i].to)
			return fail(g, -ENOMEM, "out of memory");
		r = replace_once(g, file, text, edits[i].from, edits[i].to);
		if (r < 0)
			return r;
	}
	return 0;
}

static void edits_free(struct edit *edits, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)edits[i].from);
		free((char *)edits[i].to);
	}
}

#define IF_PROVIDER "{{- if .Values.providerAuth.publicKeysJson }}\n"
#define IF_WEBHOOK "{{- if .Values.webhook.enabled }}\n"
#define IF_SANDBOX "{{- if .Values.sandbox.enabled }}\n"
#define END "{{- end }}\n"

/* The operator's configuration as a block scalar with the chart's values
 * in it; the Deployment with the image, the webhook's and the provider
 * API's arguments, mounts and volumes; the provider API's key ConfigMap
 * and Service. */
static int operator_template(struct gen *g, char **text, const struct defaults *d, const char *conf)
{
	const char *f = "templates/operator.yaml";
	char *c = strdup(conf), *block = NULL;
	struct edit conf_edits[] = {
		{ strf("\"image\": \"%s\"", d->operator_image),
		  strdup("\"image\": {{ .Values.images.operator | toJson }}") },
		{ strf("\"agentImage\": \"%s\"", d->agent_image),
		  strdup("\"agentImage\": {{ .Values.images.agent | toJson }}") },
		{ strdup("\"persistence\": {\n    \"enabled\": false\n  }"),
		  strdup("\"persistence\": {\n    \"enabled\": {{ .Values.persistence.enabled }}"
			 "{{- if .Values.persistence.storageClass }},\n"
			 "    \"storageClass\": {{ .Values.persistence.storageClass | toJson }}{{- end }}\n  }") },
		{ strdup("\"webhook\": {\n    \"enabled\": true,"),
		  strdup("\"webhook\": {\n    \"enabled\": {{ .Values.webhook.enabled }},") },
		{ strf("\"port\": %s,\n    \"listen\"", d->webhook_port),
		  strf("\"port\": %s,{{- if .Values.webhook.caBundle }}\n"
		       "    \"caBundle\": {{ .Values.webhook.caBundle | toJson }},{{- end }}\n    \"listen\"",
		       d->webhook_port) },
		/* sandbox sessions in Kubernetes mode: sandbox.namespace */
		{ strdup("\n  \"operator\": {\n"),
		  strdup(IF_SANDBOX "  \"sandbox\": {\n    \"namespace\": {{ .Values.sandbox.namespace | toJson }}\n"
			 "  },{{- end }}\n  \"operator\": {\n") },
	};
	const size_t n_conf = sizeof(conf_edits) / sizeof(conf_edits[0]);
	struct edit dep_edits[] = {
		{ NULL, NULL }, /* the configuration line, below */
		{ strf("        image: %s\n", d->operator_image),
		  strdup("        image: {{ .Values.images.operator | quote }}\n") },
		{ strdup("        - /etc/flash/flash-operator.conf\n        - \"--webhook\"\n"),
		  strdup("        - /etc/flash/flash-operator.conf\n" IF_PROVIDER
			 "        - \"--keys\"\n        - /etc/flash-keys/keys.jwks\n"
			 "        - \"--issuer\"\n        - {{ .Values.providerAuth.issuer | quote }}\n"
			 "        - \"--audience\"\n        - {{ .Values.providerAuth.audience | quote }}\n"
			 "        - \"--listen\"\n        - \"0.0.0.0:{{ .Values.providerAuth.port }}\"\n"
			 "        - \"--state-dir\"\n        - /var/lib/flash\n" END IF_WEBHOOK
			 "        - \"--webhook\"\n" END) },
		{ strdup("          readOnly: true\n        - name: webhook-tls\n          mountPath: /etc/flash-webhook\n"
			 "          readOnly: true\n        ports:\n        - name: webhook\n"
			 "          containerPort: 8443\n          protocol: TCP\n"),
		  strdup("          readOnly: true\n" IF_PROVIDER
			 "        - name: provider-keys\n          mountPath: /etc/flash-keys/keys.jwks\n"
			 "          subPath: keys.jwks\n          readOnly: true\n"
			 "        - name: state\n          mountPath: /var/lib/flash\n" END IF_WEBHOOK
			 "        - name: webhook-tls\n          mountPath: /etc/flash-webhook\n"
			 "          readOnly: true\n        ports:\n        - name: webhook\n"
			 "          containerPort: 8443\n          protocol: TCP\n" END) },
		{ strdup("          name: flash-operator-config\n      - name: webhook-tls\n        secret:\n"
			 "          secretName: flash-operator-webhook-tls\n          defaultMode: 256\n"),
		  strdup("          name: flash-operator-config\n" IF_PROVIDER
			 "      - name: provider-keys\n        configMap:\n          name: flash-operator-keys\n"
			 "          defaultMode: 292\n      - name: state\n        emptyDir: {}\n" END IF_WEBHOOK
			 "      - name: webhook-tls\n        secret:\n"
			 "          secretName: flash-operator-webhook-tls\n          defaultMode: 256\n" END) },
	};
	const size_t n_dep = sizeof(dep_edits) / sizeof(dep_edits[0]);
	const char *nl;
	char *provider_docs = NULL;
	int r;

	if (!c) {
		r = fail(g, -ENOMEM, "out of memory");
		goto out;
	}
	r = apply(g, "the operator configuration", &c, conf_edits, n_conf);
	if (r < 0)
		goto out;
	block = indent_lines(c, "    ");
	nl = strstr(*text, conf_key);
	dep_edits[0].from = nl ? strndup(nl, strcspn(nl, "\n") + 1) : NULL;
	dep_edits[0].to = block ? strf("  flash-operator.conf: |\n%s", block) : NULL;
	r = apply(g, f, text, dep_edits, n_dep);
	if (r < 0)
		goto out;
	provider_docs = strf(IF_PROVIDER "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
			     "  name: flash-operator-keys\n  namespace: %s\n  labels:\n"
			     "    app.kubernetes.io/name: flash-operator\n    app.kubernetes.io/managed-by: flash-deploy\n"
			     "data:\n  keys.jwks: {{ .Values.providerAuth.publicKeysJson | quote }}\n"
			     "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: flash-operator-provider\n"
			     "  namespace: %s\n  labels:\n    app.kubernetes.io/name: flash-operator\n"
			     "    app.kubernetes.io/managed-by: flash-deploy\nspec:\n  type: ClusterIP\n  selector:\n"
			     "    app.kubernetes.io/name: flash-operator\n  ports:\n  - name: provider\n"
			     "    protocol: TCP\n    port: {{ .Values.providerAuth.port }}\n"
			     "    targetPort: {{ .Values.providerAuth.port }}\n" END,
			     d->ns, d->ns);
	if (!provider_docs) {
		r = fail(g, -ENOMEM, "out of memory");
		goto out;
	}
	{
		char *all = strf("%s%s", *text, provider_docs);

		if (!all) {
			r = fail(g, -ENOMEM, "out of memory");
			goto out;
		}
		free(*text);
		*text = all;
	}
out:
	edits_free(conf_edits, n_conf);
	edits_free(dep_edits, n_dep);
	free(provider_docs);
	free(block);
	free(c);
	return r;
}

static const char *const rbac_kinds[] = { "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", NULL };

static int template_for(struct gen *g, enum flash_manifest m, char **text, const struct defaults *d,
			const char *conf)
{
	const char *f = flash_manifest_path(m);

	switch (m) {
	case FLASH_MANIFEST_OPERATOR_RBAC:
		return wrap_docs(g, f, text, rbac_kinds, ".Values.rbac.create");
	case FLASH_MANIFEST_OPERATOR:
		return operator_template(g, text, d, conf);
	case FLASH_MANIFEST_AGENT: {
		struct edit e[] = {
			{ strf("      - name: install-cni\n        image: %s\n", d->agent_image),
			  strdup("      - name: install-cni\n        image: {{ .Values.images.cniInstall | quote }}\n") },
			{ strf("      - name: flowsdn-agent\n        image: %s\n", d->agent_image),
			  strdup("      - name: flowsdn-agent\n        image: {{ .Values.images.agent | quote }}\n") },
		};
		int r = apply(g, f, text, e, 2);

		edits_free(e, 2);
		return r < 0 ? r : wrap_docs(g, f, text, rbac_kinds, ".Values.rbac.create");
	}
	case FLASH_MANIFEST_RUNTIME_CLASSES:
		return wrap_docs(g, f, text, NULL, ".Values.runtimeClasses.create");
	case FLASH_MANIFEST_WEBHOOK: {
		struct edit e[] = {
			{ strf("      port: %s\n  rules:\n", d->webhook_port),
			  strf("      port: %s\n{{- if .Values.webhook.caBundle }}\n"
			       "    caBundle: {{ .Values.webhook.caBundle | quote }}\n" END "  rules:\n",
			       d->webhook_port) },
		};
		int r = apply(g, f, text, e, 1);

		edits_free(e, 1);
		return r < 0 ? r : wrap_docs(g, f, text, NULL, ".Values.webhook.enabled");
	}
	case FLASH_MANIFEST_SANDBOX_RBAC: {
		/* rendered for the default namespace: each mention of it is
		 * the value's; the RBAC objects also under rbac.create, all
		 * under sandbox.enabled */
		static const char value[] = "namespace: {{ .Values.sandbox.namespace | quote }}\n";
		char *from = strf("namespace: %s\n", FLASH_MANIFEST_SANDBOX_NAMESPACE), *t;
		int r = from ? 0 : fail(g, -ENOMEM, "out of memory");

		/* one at a time: the first of what is left */
		while (r == 0 && (t = strstr(*text, from))) {
			char *b = strf("%.*s%s%s", (int)(t - *text), *text, value, t + strlen(from));

			if (!b) {
				r = fail(g, -ENOMEM, "out of memory");
				break;
			}
			free(*text);
			*text = b;
		}
		free(from);
		from = strf("  name: %s\n", FLASH_MANIFEST_SANDBOX_NAMESPACE);
		if (r == 0 && from)
			r = replace_once(g, f, text, from, "  name: {{ .Values.sandbox.namespace | quote }}\n");
		free(from);
		if (r == 0)
			r = wrap_docs(g, f, text, rbac_kinds, ".Values.rbac.create");
		if (r == 0) {
			t = strf(IF_SANDBOX "%s" END, *text);
			if (!t)
				return fail(g, -ENOMEM, "out of memory");
			free(*text);
			*text = t;
		}
		return r;
	}
	default:
		return 0; /* the CRDs: Helm installs crds/ as they are */
	}
}

/* A JSON string is a YAML double-quoted scalar (the values are ASCII). */
static char *yaml_quote(const char *s)
{
	struct json_writer *w = json_writer_new(0);
	char *out = NULL;
	size_t len;

	if (!w)
		return NULL;
	jw_string(w, s);
	if (json_writer_finish(w, &out, &len) < 0) /* frees @w */
		out = NULL;
	return out;
}

static char *values_yaml(const struct defaults *d)
{
	char *op = yaml_quote(d->operator_image), *ag = yaml_quote(d->agent_image), *s = NULL;

	if (op && ag)
		s = strf("# Default values of the heterocloud-flash chart, generated by tools/flash-manifests\n"
			 "# (`make deploy-manifests`) from the configuration deploy/kubernetes/ is rendered\n"
			 "# with: these defaults render exactly the objects of deploy/kubernetes/.\n"
			 "images:\n"
			 "  # flash-operator (its configuration's operator.image)\n"
			 "  operator: %s\n"
			 "  # the flowsdn-agent DaemonSet (operator.agentImage)\n"
			 "  agent: %s\n"
			 "  # the DaemonSet's install-cni init container (flowsdn-cni install)\n"
			 "  cniInstall: %s\n"
			 "# flash-operator.conf(5) persistence: a PersistentVolumeClaim per FlashService\n"
			 "# volume, of storageClass (\"\": the cluster's default class)\n"
			 "persistence:\n"
			 "  enabled: false\n"
			 "  storageClass: \"\"\n"
			 "# The provider/v1 API (flash-operator(8) --keys, --issuer, --audience, --listen):\n"
			 "# off while publicKeysJson is empty; otherwise the JWKS (or {\"kid\": key} map)\n"
			 "# of the keys that sign commands, and issuer and audience must be set.\n"
			 "providerAuth:\n"
			 "  publicKeysJson: \"\"\n"
			 "  issuer: \"\"\n"
			 "  audience: \"\"\n"
			 "  port: 8080\n"
			 "# The ClusterRoles, Roles and their bindings of flash-operator and flowsdn-agent\n"
			 "rbac:\n"
			 "  create: true\n"
			 "# The RuntimeClasses gvisor (runsc) and nvidia\n"
			 "runtimeClasses:\n"
			 "  create: true\n"
			 "# The validating admission webhook (Service, ValidatingWebhookConfiguration, the\n"
			 "# operator's --webhook); caBundle: base64 PEM of the CA of its serving certificate\n"
			 "webhook:\n"
			 "  enabled: true\n"
			 "  caBundle: \"\"\n"
			 "# Sandbox sessions in Kubernetes mode (flash-operator(8) SANDBOX SESSIONS): a Pod\n"
			 "# per session in namespace (made, with the operator's Role of exactly the verbs\n"
			 "# of the Kubernetes backend), and sandbox.namespace in the operator's configuration\n"
			 "sandbox:\n"
			 "  enabled: false\n"
			 "  namespace: \"" FLASH_MANIFEST_SANDBOX_NAMESPACE "\"\n",
			 op, ag, ag);
	free(op);
	free(ag);
	return s;
}

static char *notes_txt(const struct defaults *d)
{
	return strf("HeteroCloud Flash is installed: flash-operator in the namespace %s,\n"
		    "flowsdn-agent in kube-system, the FlashService and FlashUsageRecord CRDs.\n"
		    "{{- if .Values.webhook.enabled }}\n"
		    "\n"
		    "The validating webhook needs its serving certificate: create the\n"
		    "kubernetes.io/tls Secret flash-operator-webhook-tls in %s and set\n"
		    "webhook.caBundle to the base64 PEM of the CA that signed it.\n"
		    "{{- end }}\n"
		    "{{- if .Values.providerAuth.publicKeysJson }}\n"
		    "\n"
		    "The provider/v1 API listens on the Service flash-operator-provider, port\n"
		    "{{ .Values.providerAuth.port }} (flash-operator(8)).\n"
		    "{{- end }}\n",
		    d->ns, d->ns);
}

void helm_chart_files_free(struct helm_chart_file *files, size_t n)
{
	for (size_t i = 0; files && i < n; i++)
		free(files[i].text);
	free(files);
}

int helm_chart_generate(struct helm_chart_file **ret_files, size_t *ret_n, char *err, size_t err_size)
{
	/* crds/ as deploy/kubernetes/ has it (Helm installs it as is), the
	 * rest under templates/ */
	static char template_paths[FLASH_MANIFEST_COUNT_][128];
	struct gen g = { .err = err, .err_size = err_size };
	struct defaults d = { 0 };
	struct helm_chart_file *files;
	size_t n = 0;
	char *conf = NULL, *operator_yaml = NULL;
	int r;

	files = calloc(FLASH_MANIFEST_COUNT_ + 3, sizeof(*files));
	if (!files)
		return -ENOMEM;
	r = flash_manifest_render(FLASH_MANIFEST_OPERATOR, NULL, &operator_yaml, NULL);
	if (r < 0) {
		fail(&g, r, "operator.yaml: %s", flash_strerror(r));
		goto out;
	}
	r = read_conf(&g, operator_yaml, &conf, &d);
	if (r < 0)
		goto out;
	files[n].path = "Chart.yaml";
	files[n++].text = strf("apiVersion: v2\n"
			       "name: heterocloud-flash\n"
			       "description: HeteroCloud Flash on Kubernetes (flash-operator, its CRDs and admission "
			       "webhook, the flowsdn-agent CNI DaemonSet)\n"
			       "type: application\n"
			       "version: %s\n"
			       "appVersion: \"%s\"\n",
			       PACKAGE_VERSION, PACKAGE_VERSION);
	files[n].path = "values.yaml";
	files[n++].text = values_yaml(&d);
	files[n].path = "templates/NOTES.txt";
	files[n++].text = notes_txt(&d);
	for (int m = 0; m < FLASH_MANIFEST_COUNT_; m++) {
		char *text = NULL;

		r = flash_manifest_render(m, NULL, &text, NULL);
		if (r < 0) {
			fail(&g, r, "%s: %s", flash_manifest_path(m), flash_strerror(r));
			goto out;
		}
		snprintf(template_paths[m], sizeof(template_paths[m]), "%s%s",
			 strncmp(flash_manifest_path(m), "crds/", 5) == 0 ? "" : "templates/", flash_manifest_path(m));
		files[n].path = template_paths[m];
		files[n++].text = text;
		r = template_for(&g, m, &files[n - 1].text, &d, conf);
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!files[i].text) {
			r = fail(&g, -ENOMEM, "out of memory");
			goto out;
		}
		files[i].len = strlen(files[i].text);
	}
	*ret_files = files;
	*ret_n = n;
	files = NULL;
out:
	helm_chart_files_free(files, n);
	defaults_free(&d);
	free(conf);
	free(operator_yaml);
	return r;
}
