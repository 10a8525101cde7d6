/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where the Kubernetes client connects (common/k8s.h): a kubeconfig file
 * (YAML, read with libyaml's document loader) or the in-cluster service
 * account.  Only the fields a daemon needs are honoured; every credential
 * mechanism this client does not implement is refused by name, so a
 * daemon never runs as someone other than the file says.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
#include <yaml.h>

#include "diag.h"
#include "k8s.h"
#include "names.h"
#include "util.h"

#define KUBECONFIG_MAX (1u << 20)  /* the file */
#define KUBECONFIG_PEM_MAX (1u << 20) /* a CA bundle, certificate or key */
#define IN_CLUSTER_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void k8s_config_free(struct k8s_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->server);
	free(cfg->ca_pem);
	if (cfg->token) {
		sodium_memzero(cfg->token, strlen(cfg->token));
		free(cfg->token);
	}
	free(cfg->token_file);
	free(cfg->client_cert_pem);
	if (cfg->client_key_pem) {
		sodium_memzero(cfg->client_key_pem, cfg->client_key_pem_len);
		free(cfg->client_key_pem);
	}
	free(cfg->namespace);
	free(cfg->context);
	free(cfg->user);
	free(cfg);
}

struct kc {
	yaml_document_t doc;
	const char *dir;
	struct diag *diag;
};

static int kc_fail(struct kc *k, int r, const char *path, const char *code, const char *fmt, ...) _printf_(5, 6);
static int kc_fail(struct kc *k, int r, const char *path, const char *code, const char *fmt, ...)
{
	va_list ap;

	if (k->diag) {
		va_start(ap, fmt);
		diag_add_textv(k->diag, DIAG_ERROR, path, code, NULL, fmt, ap);
		va_end(ap);
	}
	return r;
}

/* The scalar text of @n (NULL when @n is not a scalar or holds a NUL). */
static const char *scalar(const yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE)
		return NULL;
	if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
		return NULL;
	return (const char *)n->data.scalar.value;
}

static yaml_node_t *map_get(struct kc *k, const yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *s = scalar(yaml_document_get_node(&k->doc, p->key));

		if (s && strcmp(s, key) == 0)
			return yaml_document_get_node(&k->doc, p->value);
	}
	return NULL;
}

/* The scalar member @key of @map: 0 (absent: *ret NULL) or -EINVAL (not a
 * scalar; reported at @path.@key). */
static int map_scalar(struct kc *k, const yaml_node_t *map, const char *path, const char *key, const char **ret)
{
	yaml_node_t *v = map_get(k, map, key);

	*ret = NULL;
	if (!v)
		return 0;
	/* An empty value ("token:") is null in YAML: absent. */
	if (v->type == YAML_SCALAR_NODE && v->data.scalar.length == 0 &&
	    v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		return 0;
	*ret = scalar(v);
	if (!*ret)
		return kc_fail(k, -EINVAL, path, "kubeconfig-type", "%s: %s must be a string", path, key);
	return 0;
}

/* The item of the sequence @list ("clusters", "users", "contexts") whose
 * name is @name, and its @inner map ("cluster", "user", "context"). */
static int named_entry(struct kc *k, const yaml_node_t *root, const char *list, const char *inner, const char *name,
		       yaml_node_t **ret)
{
	yaml_node_t *seq = map_get(k, root, list);

	if (seq && seq->type == YAML_SEQUENCE_NODE)
		for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top; i++) {
			yaml_node_t *item = yaml_document_get_node(&k->doc, *i);
			const char *n = scalar(map_get(k, item, "name"));

			if (n && strcmp(n, name) == 0) {
				yaml_node_t *m = map_get(k, item, inner);

				if (!m || m->type != YAML_MAPPING_NODE)
					return kc_fail(k, -EINVAL, list, "kubeconfig-type",
						       "%s \"%s\": no %s map", list, name, inner);
				*ret = m;
				return 0;
			}
		}
	else if (seq && !(seq->type == YAML_SCALAR_NODE && seq->data.scalar.length == 0))
		return kc_fail(k, -EINVAL, list, "kubeconfig-type", "%s must be a list", list);
	return kc_fail(k, -ENOENT, list, "kubeconfig-missing", "%s \"%s\" not found in %s", inner, name, list);
}

static bool looks_pem(const char *s, size_t len)
{
	return memmem(s, len, "-----BEGIN ", 11) != NULL;
}

/* @path relative to the kubeconfig's directory (absolute kept). */
static char *resolve(struct kc *k, const char *path)
{
	char *out;

	if (path[0] == '/' || !k->dir)
		return strdup(path);
	if (asprintf(&out, "%s/%s", k->dir, path) < 0)
		return NULL;
	return out;
}

/* PEM material from @file_key (a file) or @data_key (base64 of the PEM)
 * of @map; both is refused.  *ret NULL when neither is set. */
static int read_pem(struct kc *k, const yaml_node_t *map, const char *what, const char *file_key,
		    const char *data_key, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *path = NULL;
	const char *file, *data;
	char *buf = NULL;
	size_t len = 0;
	int r;

	*ret = NULL;
	*ret_len = 0;
	if ((r = map_scalar(k, map, what, file_key, &file)) < 0 || (r = map_scalar(k, map, what, data_key, &data)) < 0)
		return r;
	if (file && data)
		return kc_fail(k, -EINVAL, what, "kubeconfig-ambiguous", "%s: both %s and %s are set", what,
			       file_key, data_key);
	if (data) {
		size_t dlen = strlen(data);

		buf = malloc(dlen / 4 * 3 + 4);
		if (!buf)
			return -ENOMEM;
		if (sodium_base642bin((unsigned char *)buf, dlen / 4 * 3 + 3, data, dlen, " \t\r\n", &len, NULL,
				      sodium_base64_VARIANT_ORIGINAL) != 0) {
			free(buf);
			return kc_fail(k, -EINVAL, what, "kubeconfig-base64", "%s: %s is not base64", what, data_key);
		}
		buf[len] = '\0';
	} else if (file) {
		path = resolve(k, file);
		if (!path)
			return -ENOMEM;
		r = util_read_file(path, KUBECONFIG_PEM_MAX, &buf, &len);
		if (r < 0)
			return kc_fail(k, r == -ENOENT ? -ENOENT : -EINVAL, what, "kubeconfig-file", "%s: %s %s: %s",
				       what, file_key, path, util_read_strerror(r));
	} else
		return 0;
	if (!looks_pem(buf, len)) {
		free(buf);
		return kc_fail(k, -EINVAL, what, "kubeconfig-pem", "%s: %s is not PEM", what, data ? data_key : file_key);
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int parse_bool(struct kc *k, const yaml_node_t *map, const char *what, const char *key, bool *ret)
{
	const char *s;
	int r = map_scalar(k, map, what, key, &s);

	if (r < 0 || !s)
		return r;
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		*ret = true;
	else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		*ret = false;
	else
		return kc_fail(k, -EINVAL, what, "kubeconfig-type", "%s: %s must be true or false, not \"%s\"", what,
			       key, s);
	return 0;
}

/* The server URL: https://, or http:// to a loopback host only (a bearer
 * token never crosses a network in clear). */
static bool server_valid(const char *s)
{
	const char *host;

	if (strncmp(s, "https://", 8) == 0)
		host = s + 8;
	else if (strncmp(s, "http://", 7) == 0) {
		host = s + 7;
		if (strncmp(host, "127.", 4) != 0 && strncmp(host, "[::1]", 5) != 0 &&
		    strncmp(host, "localhost", 9) != 0)
			return false;
	} else
		return false;
	if (!*host || *host == '/' || *host == ':')
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '"' || *p == '\\' || (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

static int read_cluster(struct kc *k, const yaml_node_t *cl, const char *name, struct k8s_config *cfg)
{
	char what[320];
	const char *server;
	int r;

	snprintf(what, sizeof(what), "cluster \"%s\"", name);
	if (map_get(k, cl, "proxy-url"))
		return kc_fail(k, -EINVAL, what, "kubeconfig-refused", "%s: proxy-url is not supported", what);
	if (map_get(k, cl, "tls-server-name"))
		return kc_fail(k, -EINVAL, what, "kubeconfig-refused", "%s: tls-server-name is not supported", what);
	if ((r = map_scalar(k, cl, what, "server", &server)) < 0)
		return r;
	if (!server)
		return kc_fail(k, -EINVAL, what, "kubeconfig-missing", "%s: no server", what);
	if (!server_valid(server))
		return kc_fail(k, -EINVAL, what, "kubeconfig-server",
			       "%s: server \"%s\" is not an https:// URL (http:// only to a loopback host)", what,
			       server);
	if (!(cfg->server = strdup(server)))
		return -ENOMEM;
	/* No trailing slash: paths are appended. */
	for (size_t n = strlen(cfg->server); n > 8 && cfg->server[n - 1] == '/'; n--)
		cfg->server[n - 1] = '\0';
	if ((r = parse_bool(k, cl, what, "insecure-skip-tls-verify", &cfg->insecure_skip_tls_verify)) < 0)
		return r;
	if ((r = read_pem(k, cl, what, "certificate-authority", "certificate-authority-data", &cfg->ca_pem,
			  &cfg->ca_pem_len)) < 0)
		return r;
	if (cfg->ca_pem && cfg->insecure_skip_tls_verify)
		return kc_fail(k, -EINVAL, what, "kubeconfig-ambiguous",
			       "%s: a certificate authority and insecure-skip-tls-verify together", what);
	return 0;
}

static int read_user(struct kc *k, const yaml_node_t *u, const char *name, struct k8s_config *cfg)
{
	static const char *const refused[] = {
		"exec", "auth-provider", "username", "password", "as", "as-uid", "as-groups", "as-user-extra",
	};
	const char *token, *token_file;
	char what[320];
	int r;

	snprintf(what, sizeof(what), "user \"%s\"", name);
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
		if (map_get(k, u, refused[i]))
			return kc_fail(k, -EINVAL, what, "kubeconfig-refused",
				       "%s: %s is not supported (use a token, a token file or a client certificate)",
				       what, refused[i]);
	if ((r = map_scalar(k, u, what, "token", &token)) < 0 || (r = map_scalar(k, u, what, "tokenFile", &token_file)) < 0)
		return r;
	if (token && token_file)
		return kc_fail(k, -EINVAL, what, "kubeconfig-ambiguous", "%s: both token and tokenFile are set", what);
	if (token && !(cfg->token = strdup(token)))
		return -ENOMEM;
	if (token_file && !(cfg->token_file = resolve(k, token_file)))
		return -ENOMEM;
	if ((r = read_pem(k, u, what, "client-certificate", "client-certificate-data", &cfg->client_cert_pem,
			  &cfg->client_cert_pem_len)) < 0 ||
	    (r = read_pem(k, u, what, "client-key", "client-key-data", &cfg->client_key_pem,
			  &cfg->client_key_pem_len)) < 0)
		return r;
	if (!cfg->client_cert_pem != !cfg->client_key_pem)
		return kc_fail(k, -EINVAL, what, "kubeconfig-missing", "%s: a client %s without its %s", what,
			       cfg->client_cert_pem ? "certificate" : "key", cfg->client_cert_pem ? "key" : "certificate");
	return 0;
}

static int kc_read(struct kc *k, const char *context, struct k8s_config *cfg)
{
	yaml_node_t *root = yaml_document_get_root_node(&k->doc), *ctx, *cl, *u;
	const char *cluster, *user, *ns;
	char what[320];
	int r;

	if (!root || root->type != YAML_MAPPING_NODE)
		return kc_fail(k, -EINVAL, "", "kubeconfig-type", "a kubeconfig is a YAML map");
	if (!context) {
		if ((r = map_scalar(k, root, "kubeconfig", "current-context", &context)) < 0)
			return r;
		if (!context)
			return kc_fail(k, -ENOENT, "current-context", "kubeconfig-missing",
				       "no context given and no current-context");
	}
	if ((r = named_entry(k, root, "contexts", "context", context, &ctx)) < 0)
		return r;
	snprintf(what, sizeof(what), "context \"%s\"", context);
	if ((r = map_scalar(k, ctx, what, "cluster", &cluster)) < 0 || (r = map_scalar(k, ctx, what, "user", &user)) < 0 ||
	    (r = map_scalar(k, ctx, what, "namespace", &ns)) < 0)
		return r;
	if (!cluster)
		return kc_fail(k, -EINVAL, what, "kubeconfig-missing", "%s: no cluster", what);
	if (!user)
		return kc_fail(k, -EINVAL, what, "kubeconfig-missing", "%s: no user", what);
	if (ns && !names_dns_label_valid(ns))
		return kc_fail(k, -EINVAL, what, "kubeconfig-namespace", "%s: namespace \"%s\" is not a DNS label",
			       what, ns);
	if (!(cfg->context = strdup(context)) || !(cfg->user = strdup(user)) || (ns && !(cfg->namespace = strdup(ns))))
		return -ENOMEM;
	if ((r = named_entry(k, root, "clusters", "cluster", cluster, &cl)) < 0 || (r = read_cluster(k, cl, cluster, cfg)) < 0)
		return r;
	if ((r = named_entry(k, root, "users", "user", user, &u)) < 0 || (r = read_user(k, u, user, cfg)) < 0)
		return r;
	return 0;
}

int k8s_config_parse_kubeconfig(const char *text, size_t len, const char *dir, const char *context,
				struct k8s_config **ret_cfg, struct diag *diag)
{
	struct kc k = { .dir = dir, .diag = diag };
	struct k8s_config *cfg;
	yaml_parser_t p;
	int r;

	if (!text || !ret_cfg)
		return -EINVAL;
	if (len > KUBECONFIG_MAX)
		return kc_fail(&k, -EINVAL, "", "kubeconfig-size", "a kubeconfig of more than %u bytes", KUBECONFIG_MAX);
	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &k.doc)) {
		r = kc_fail(&k, -EINVAL, "", "kubeconfig-yaml", "not YAML: line %zu column %zu: %s",
			    p.problem_mark.line + 1, p.problem_mark.column + 1, p.problem ? p.problem : "error");
		yaml_parser_delete(&p);
		return r;
	}
	yaml_parser_delete(&p);
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg) {
		yaml_document_delete(&k.doc);
		return -ENOMEM;
	}
	r = kc_read(&k, context, cfg);
	yaml_document_delete(&k.doc);
	if (r < 0) {
		k8s_config_free(cfg);
		return r;
	}
	*ret_cfg = cfg;
	return 0;
}

int k8s_config_from_kubeconfig(const char *path, const char *context, struct k8s_config **ret_cfg,
			       struct diag *diag)
{
	_cleanup_free_ char *text = NULL, *dir = NULL;
	size_t len;
	char *slash;
	int r;

	if (!path || !ret_cfg)
		return -EINVAL;
	r = util_read_file(path, KUBECONFIG_MAX, &text, &len);
	if (r < 0) {
		if (diag)
			diag_add(diag, DIAG_ERROR, "", "kubeconfig-file", NULL, "%s: %s", path, util_read_strerror(r));
		return r == -EFBIG ? -EINVAL : r;
	}
	dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		strcpy(dir, ".");
	return k8s_config_parse_kubeconfig(text, len, dir, context, ret_cfg, diag);
}

/* A host for a URL: an IPv4 or IPv6 literal or a DNS name, nothing else. */
static bool host_valid(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n > 253)
		return false;
	for (const char *p = h; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '.' ||
		      *p == '-' || *p == ':'))
			return false;
	return true;
}

static bool port_valid(const char *p)
{
	unsigned long v = 0;

	if (!*p || strlen(p) > 5)
		return false;
	for (const char *c = p; *c; c++) {
		if (*c < '0' || *c > '9')
			return false;
		v = v * 10 + (unsigned long)(*c - '0');
	}
	return v >= 1 && v <= 65535;
}

int k8s_config_in_cluster(const struct k8s_in_cluster_opts *opts, struct k8s_config **ret_cfg, struct diag *diag)
{
	const char *dir, *host, *port;
	_cleanup_free_ char *ns_path = NULL, *ca_path = NULL, *ns = NULL;
	struct k8s_config *cfg;
	struct stat st;
	size_t len;
	int r;

	if (!ret_cfg || !OPTS_VALID(opts, k8s_in_cluster_opts))
		return -EINVAL;
	dir = OPTS_GET(opts, dir, NULL) ? opts->dir : IN_CLUSTER_DIR;
	host = OPTS_GET(opts, host, NULL) ? opts->host : getenv("KUBERNETES_SERVICE_HOST");
	port = OPTS_GET(opts, port, NULL) ? opts->port : getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !*host || !port || !*port) {
		if (diag)
			diag_add(diag, DIAG_ERROR, "", "in-cluster-missing", NULL,
				 "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
		return -ENOENT;
	}
	if (!host_valid(host) || !port_valid(port)) {
		if (diag)
			diag_add(diag, DIAG_ERROR, "", "in-cluster-invalid", NULL,
				 "KUBERNETES_SERVICE_HOST \"%.64s\" or KUBERNETES_SERVICE_PORT \"%.16s\" is malformed",
				 host, port);
		return -EINVAL;
	}
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return -ENOMEM;
	r = -ENOMEM;
	if (asprintf(&cfg->server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port) < 0) {
		cfg->server = NULL;
		goto fail;
	}
	if (asprintf(&cfg->token_file, "%s/token", dir) < 0) {
		cfg->token_file = NULL;
		goto fail;
	}
	if (asprintf(&ca_path, "%s/ca.crt", dir) < 0 || asprintf(&ns_path, "%s/namespace", dir) < 0)
		goto fail;
	/* The token is read by the client at every change; here only its
	 * presence is checked, so that a missing mount fails at start. */
	r = util_open_regular(cfg->token_file, 0, &st);
	if (r < 0) {
		if (diag)
			diag_add(diag, DIAG_ERROR, "", "in-cluster-token", NULL, "%s: %s", cfg->token_file,
				 util_read_strerror(r));
		goto fail;
	}
	close(r);
	r = util_read_file(ca_path, KUBECONFIG_PEM_MAX, &cfg->ca_pem, &cfg->ca_pem_len);
	if (r < 0 || !looks_pem(cfg->ca_pem, cfg->ca_pem_len)) {
		if (diag)
			diag_add(diag, DIAG_ERROR, "", "in-cluster-ca", NULL, "%s: %s", ca_path,
				 r < 0 ? util_read_strerror(r) : "not PEM");
		r = r < 0 ? r : -EINVAL;
		goto fail;
	}
	r = util_read_file(ns_path, 256, &ns, &len);
	if (r == 0) {
		while (len && (ns[len - 1] == '\n' || ns[len - 1] == ' ' || ns[len - 1] == '\r'))
			ns[--len] = '\0';
		if (len && !names_dns_label_valid(ns)) {
			if (diag)
				diag_add(diag, DIAG_ERROR, "", "in-cluster-namespace", NULL,
					 "%s: \"%.64s\" is not a namespace name", ns_path, ns);
			r = -EINVAL;
			goto fail;
		}
		if (len)
			cfg->namespace = TAKE_PTR(ns);
	} else if (r != -ENOENT) {
		if (diag)
			diag_add(diag, DIAG_ERROR, "", "in-cluster-namespace", NULL, "%s: %s", ns_path,
				 util_read_strerror(r));
		goto fail;
	}
	*ret_cfg = cfg;
	return 0;
fail:
	k8s_config_free(cfg);
	return r;
}
