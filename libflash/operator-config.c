/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operator configuration (flash-operator.conf(5)): JSON, every key
 * optional, unknown keys refused, every CIDR through <flowsdn/addr.h>.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "internal.h"
#include "json.h"
#include "names.h"
#include "render-internal.h"

struct pctx {
	struct flash_render_diag *diag;
	struct json_path path;
};

static int bad(struct pctx *p, const char *fmt, ...) _printf_(2, 3);
static int bad(struct pctx *p, const char *fmt, ...)
{
	va_list ap;

	if (p->diag) {
		snprintf(p->diag->path, sizeof(p->diag->path), "%s", json_path_str(&p->path));
		va_start(ap, fmt);
		vsnprintf(p->diag->message, sizeof(p->diag->message), fmt, ap);
		va_end(ap);
	}
	return -FLASH_E_RENDER_CONFIG;
}

static int set_string(char **dst, const char *s)
{
	char *c = strdup(s);

	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

enum str_rule { STR_ANY, STR_DNS_LABEL, STR_DNS_SUBDOMAIN, STR_LABEL_KEY, STR_LABEL_VALUE, STR_PATH, STR_IMAGE };

static int get_string(struct pctx *p, const struct json_value *v, enum str_rule rule, char **dst)
{
	const char *s;
	bool ok;

	if (json_get_string(v, &s) < 0)
		return bad(p, "must be a string without NUL characters");
	switch (rule) {
	case STR_DNS_LABEL: ok = names_dns_label_valid(s); break;
	case STR_DNS_SUBDOMAIN: ok = names_dns_subdomain_valid(s); break;
	case STR_LABEL_KEY: ok = names_label_key_valid(s); break;
	case STR_LABEL_VALUE: ok = names_label_value_valid(s); break;
	case STR_PATH:
		ok = s[0] == '/' && strlen(s) < 4096 && !strstr(s, "/../") && strcmp(s, "/") != 0 &&
		     !(strlen(s) >= 3 && strcmp(s + strlen(s) - 3, "/..") == 0) && strcmp(s, "/root") != 0;
		break;
	case STR_IMAGE: ok = s[0] && strlen(s) <= 512 && !strpbrk(s, " \t\n"); break;
	default: ok = s[0] != '\0' && strlen(s) <= 253; break;
	}
	if (!ok) {
		static const char *const what[] = {
			[STR_ANY] = "a non-empty string of at most 253 bytes",
			[STR_DNS_LABEL] = "a DNS label (RFC 1123: a-z, 0-9, '-', at most 63)",
			[STR_DNS_SUBDOMAIN] = "a DNS subdomain (RFC 1123, at most 253)",
			[STR_LABEL_KEY] = "a label key ([prefix/]name)",
			[STR_LABEL_VALUE] = "a label value (at most 63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends)",
			[STR_PATH] = "an absolute path without \"..\" other than / and /root",
			[STR_IMAGE] = "an image reference without spaces",
		};
		return bad(p, "\"%s\" is not %s", s, what[rule]);
	}
	return set_string(dst, s);
}

static int get_bool(struct pctx *p, const struct json_value *v, bool *dst)
{
	if (json_get_bool(v, dst) < 0)
		return bad(p, "must be true or false");
	return 0;
}

static int get_prefixes(struct pctx *p, const struct json_value *v, struct prefix_list *dst, size_t max)
{
	struct flowsdn_prefix *out;
	FLOWSDN_OPTS(flowsdn_prefix_opts, popts, .flags = FLOWSDN_PREFIX_ALLOW_HOST);

	if (!v || v->type != JSON_ARRAY)
		return bad(p, "must be an array of CIDRs");
	if (v->u.array.n > max)
		return bad(p, "has %zu entries, at most %zu allowed", v->u.array.n, max);
	out = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.array.n; i++) {
		const char *s;
		size_t saved = json_path_push_index(&p->path, i);
		int r;

		if (json_get_string(v->u.array.items[i], &s) < 0) {
			r = bad(p, "must be a CIDR string");
		} else {
			r = flowsdn_prefix_parse(s, strlen(s), &popts, &out[i]);
			if (r < 0)
				r = bad(p, "\"%s\" is not a CIDR: %s", s, flowsdn_strerror(r));
		}
		json_path_pop(&p->path, saved);
		if (r < 0) {
			free(out);
			return r;
		}
	}
	free(dst->v);
	dst->v = out;
	dst->n = v->u.array.n;
	return 0;
}

static void free_labels(struct label *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

static int get_labels(struct pctx *p, const struct json_value *v, struct label **dst, size_t *dst_n)
{
	struct label *out;
	size_t n = 0;
	int r = 0;

	if (!v || v->type != JSON_OBJECT)
		return bad(p, "must be an object of label keys to values");
	if (v->u.object.n > 16)
		return bad(p, "has %zu labels, at most 16 allowed", v->u.object.n);
	out = calloc(v->u.object.n ? v->u.object.n : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (; n < v->u.object.n; n++) {
		const struct json_member *m = &v->u.object.members[n];
		size_t saved = json_path_push_key(&p->path, m->key);

		if (!names_label_key_valid(m->key))
			r = bad(p, "\"%s\" is not a label key", m->key);
		else if ((r = set_string(&out[n].key, m->key)) == 0)
			r = get_string(p, m->value, STR_LABEL_VALUE, &out[n].value);
		json_path_pop(&p->path, saved);
		if (r < 0) {
			free_labels(out, n + 1);
			return r;
		}
	}
	free_labels(*dst, *dst_n);
	*dst = out;
	*dst_n = n;
	return 0;
}

static int get_port(struct pctx *p, const struct json_value *v, uint16_t *dst)
{
	uint64_t u;

	if (json_get_uint64(v, &u) < 0 || u < 1 || u > 65535)
		return bad(p, "must be an integer 1..65535");
	*dst = (uint16_t)u;
	return 0;
}

/* Calls @fn for each member of object @v, with the path pushed. */
#define FOR_MEMBERS(p, v, m, body)                                                      \
	do {                                                                            \
		if (!(v) || (v)->type != JSON_OBJECT)                                   \
			return bad((p), "must be an object");                            \
		for (size_t _i = 0; _i < (v)->u.object.n; _i++) {                       \
			const struct json_member *m = &(v)->u.object.members[_i];       \
			size_t _saved = json_path_push_key(&(p)->path, m->key);         \
			int _r;                                                         \
			_r = ({ body; });                                               \
			json_path_pop(&(p)->path, _saved);                              \
			if (_r < 0)                                                     \
				return _r;                                              \
		}                                                                       \
	} while (0)

#define KEY(name) (strcmp(m->key, (name)) == 0)
#define UNKNOWN() bad(p, "unknown key")

static int parse_runtime_classes(struct pctx *p, struct flash_operator_config *c, const struct json_value *v)
{
	FOR_MEMBERS(p, v, m,
		    KEY("cpu") ? get_string(p, m->value, STR_DNS_SUBDOMAIN, &c->runtime_cpu) :
		    KEY("gpu") ? get_string(p, m->value, STR_DNS_SUBDOMAIN, &c->runtime_gpu) : UNKNOWN());
	return 0;
}

static int parse_dns(struct pctx *p, struct flash_operator_config *c, const struct json_value *v)
{
	FOR_MEMBERS(p, v, m,
		    KEY("namespace") ? get_string(p, m->value, STR_DNS_LABEL, &c->dns_namespace) :
		    KEY("podLabels") ? get_labels(p, m->value, &c->dns_pod_labels, &c->n_dns_pod_labels) :
		    KEY("addresses") ? get_prefixes(p, m->value, &c->dns_addresses, 8) : UNKNOWN());
	for (size_t i = 0; i < c->dns_addresses.n; i++)
		if (c->dns_addresses.v[i].len != flowsdn_addr_bits(&c->dns_addresses.v[i].addr))
			return bad(p, "clusterDNS.addresses must be addresses, not networks");
	return 0;
}

static int parse_persistence(struct pctx *p, struct flash_operator_config *c, const struct json_value *v)
{
	FOR_MEMBERS(p, v, m,
		    KEY("enabled") ? get_bool(p, m->value, &c->persistence) :
		    KEY("storageClass") ? get_string(p, m->value, STR_DNS_SUBDOMAIN, &c->storage_class) : UNKNOWN());
	return 0;
}

static int parse_port_range(struct pctx *p, struct flash_operator_config *c, const struct json_value *v)
{
	FOR_MEMBERS(p, v, m,
		    KEY("first") ? get_port(p, m->value, &c->port_first) :
		    KEY("last") ? get_port(p, m->value, &c->port_last) : UNKNOWN());
	if (c->port_first > c->port_last)
		return bad(p, "first (%u) is after last (%u)", c->port_first, c->port_last);
	return 0;
}

static int parse_operator(struct pctx *p, struct flash_operator_config *c, const struct json_value *v)
{
	FOR_MEMBERS(p, v, m,
		    KEY("namespace") ? get_string(p, m->value, STR_DNS_LABEL, &c->operator_namespace) :
		    KEY("image") ? get_string(p, m->value, STR_IMAGE, &c->operator_image) :
		    KEY("agentImage") ? get_string(p, m->value, STR_IMAGE, &c->agent_image) : UNKNOWN());
	return 0;
}

static int parse_claim(struct pctx *p, struct admin_claim *a, const struct json_value *v)
{
	FOR_MEMBERS(p, v, m,
		    KEY("name") ? get_string(p, m->value, STR_DNS_LABEL, &a->name) :
		    KEY("claimName") ? get_string(p, m->value, STR_DNS_SUBDOMAIN, &a->claim_name) :
		    KEY("readOnly") ? get_bool(p, m->value, &a->read_only) : UNKNOWN());
	if (!a->name || !a->claim_name)
		return bad(p, "needs name and claimName");
	if (strcmp(a->name, "root") == 0)
		return bad(p, "name \"root\" is reserved for the /root volume");
	return 0;
}

static int parse_mount(struct pctx *p, struct admin_mount *a, const struct json_value *v)
{
	FOR_MEMBERS(p, v, m,
		    KEY("serviceInstanceId") ? get_string(p, m->value, STR_LABEL_VALUE, &a->service_instance_id) :
		    KEY("claim") ? get_string(p, m->value, STR_DNS_LABEL, &a->claim) :
		    KEY("mountPath") ? get_string(p, m->value, STR_PATH, &a->mount_path) :
		    KEY("readOnly") ? get_bool(p, m->value, &a->read_only) : UNKNOWN());
	if (!a->service_instance_id || !a->service_instance_id[0] || !a->claim || !a->mount_path)
		return bad(p, "needs serviceInstanceId, claim and mountPath");
	return 0;
}

static void free_claims(struct admin_claim *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(a[i].name);
		free(a[i].claim_name);
	}
	free(a);
}

static void free_mounts(struct admin_mount *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(a[i].service_instance_id);
		free(a[i].claim);
		free(a[i].mount_path);
	}
	free(a);
}

static int parse_claims(struct pctx *p, struct flash_operator_config *c, const struct json_value *v)
{
	if (!v || v->type != JSON_ARRAY || v->u.array.n > 64)
		return bad(p, "must be an array of at most 64 claims");
	free_claims(c->admin_claims, c->n_admin_claims);
	c->n_admin_claims = 0;
	c->admin_claims = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(*c->admin_claims));
	if (!c->admin_claims)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.array.n; i++) {
		size_t saved = json_path_push_index(&p->path, i);
		int r;

		c->n_admin_claims = i + 1;
		r = parse_claim(p, &c->admin_claims[i], v->u.array.items[i]);
		for (size_t j = 0; r == 0 && j < i; j++)
			if (strcmp(c->admin_claims[j].name, c->admin_claims[i].name) == 0)
				r = bad(p, "name \"%s\" is used twice", c->admin_claims[i].name);
		json_path_pop(&p->path, saved);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_mounts(struct pctx *p, struct flash_operator_config *c, const struct json_value *v)
{
	if (!v || v->type != JSON_ARRAY || v->u.array.n > 1024)
		return bad(p, "must be an array of at most 1024 mounts");
	free_mounts(c->admin_mounts, c->n_admin_mounts);
	c->n_admin_mounts = 0;
	c->admin_mounts = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(*c->admin_mounts));
	if (!c->admin_mounts)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.array.n; i++) {
		size_t saved = json_path_push_index(&p->path, i);
		int r;

		c->n_admin_mounts = i + 1;
		r = parse_mount(p, &c->admin_mounts[i], v->u.array.items[i]);
		json_path_pop(&p->path, saved);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_root(struct pctx *p, struct flash_operator_config *c, const struct json_value *v)
{
	FOR_MEMBERS(p, v, m,
		    KEY("runtimeClassNames") ? parse_runtime_classes(p, c, m->value) :
		    KEY("loadBalancerClass") ? get_string(p, m->value, STR_LABEL_KEY, &c->load_balancer_class) :
		    KEY("gpuNodeLabel") ? get_string(p, m->value, STR_LABEL_KEY, &c->gpu_node_label) :
		    KEY("publicNodeLabels") ? get_labels(p, m->value, &c->public_node_labels, &c->n_public_node_labels) :
		    KEY("clusterDNS") ? parse_dns(p, c, m->value) :
		    KEY("podCIDRs") ? get_prefixes(p, m->value, &c->pod_cidrs, 64) :
		    KEY("serviceCIDRs") ? get_prefixes(p, m->value, &c->service_cidrs, 64) :
		    KEY("lanCIDRs") ? get_prefixes(p, m->value, &c->lan_cidrs, 64) :
		    KEY("heteroNetworkCIDRs") ? get_prefixes(p, m->value, &c->heteronetwork_cidrs, 64) :
		    KEY("infrastructureCIDRs") ? get_prefixes(p, m->value, &c->infrastructure_cidrs, 256) :
		    KEY("persistence") ? parse_persistence(p, c, m->value) :
		    KEY("adminVolumeClaims") ? parse_claims(p, c, m->value) :
		    KEY("adminVolumeMounts") ? parse_mounts(p, c, m->value) :
		    KEY("publicPortRange") ? parse_port_range(p, c, m->value) :
		    KEY("operator") ? parse_operator(p, c, m->value) : UNKNOWN());
	/* Every mount names a declared claim. */
	for (size_t i = 0; i < c->n_admin_mounts; i++) {
		bool found = false;

		for (size_t j = 0; j < c->n_admin_claims && !found; j++)
			found = strcmp(c->admin_mounts[i].claim, c->admin_claims[j].name) == 0;
		if (!found) {
			size_t saved = json_path_push_key(&p->path, "adminVolumeMounts");
			int r;

			json_path_push_index(&p->path, i);
			r = bad(p, "claim \"%s\" is not in adminVolumeClaims", c->admin_mounts[i].claim);
			json_path_pop(&p->path, saved);
			return r;
		}
	}
	return 0;
}

FLASH_API void flash_operator_config_free(struct flash_operator_config *c)
{
	if (!c)
		return;
	free(c->runtime_cpu);
	free(c->runtime_gpu);
	free(c->load_balancer_class);
	free(c->gpu_node_label);
	free_labels(c->public_node_labels, c->n_public_node_labels);
	free(c->dns_namespace);
	free_labels(c->dns_pod_labels, c->n_dns_pod_labels);
	free(c->dns_addresses.v);
	free(c->pod_cidrs.v);
	free(c->service_cidrs.v);
	free(c->lan_cidrs.v);
	free(c->heteronetwork_cidrs.v);
	free(c->infrastructure_cidrs.v);
	free(c->storage_class);
	free_claims(c->admin_claims, c->n_admin_claims);
	free_mounts(c->admin_mounts, c->n_admin_mounts);
	free(c->operator_namespace);
	free(c->operator_image);
	free(c->agent_image);
	free(c);
}

/* The defaults, written as a configuration document so that they go
 * through the same parser and checks as the operator's file. */
static const char default_config[] =
	"{"
	"\"runtimeClassNames\":{\"cpu\":\"gvisor\",\"gpu\":\"nvidia\"},"
	"\"loadBalancerClass\":\"heteronetwork.io/public\","
	"\"gpuNodeLabel\":\"flash.heterocloud.io/gpu-type\","
	"\"publicNodeLabels\":{\"heteronetwork.io/public-node\":\"true\"},"
	"\"clusterDNS\":{\"namespace\":\"kube-system\",\"podLabels\":{\"k8s-app\":\"kube-dns\"},"
	"\"addresses\":[\"10.96.0.10\"]},"
	"\"podCIDRs\":[\"10.244.0.0/16\"],"
	"\"serviceCIDRs\":[\"10.96.0.0/12\"],"
	"\"lanCIDRs\":[\"10.0.0.0/8\",\"172.16.0.0/12\",\"192.168.0.0/16\",\"fc00::/7\"],"
	"\"heteroNetworkCIDRs\":[\"100.64.0.0/10\"],"
	"\"infrastructureCIDRs\":[],"
	"\"persistence\":{\"enabled\":false},"
	"\"adminVolumeClaims\":[],"
	"\"adminVolumeMounts\":[],"
	"\"publicPortRange\":{\"first\":30000,\"last\":32767},"
	"\"operator\":{\"namespace\":\"flash-system\","
	"\"image\":\"ghcr.io/heterocloud/flash-operator:" PACKAGE_VERSION "\","
	"\"agentImage\":\"ghcr.io/heterocloud/flowsdn-agent:" PACKAGE_VERSION "\"}"
	"}";

static int parse_into(struct flash_operator_config *c, const char *json, size_t len, struct flash_render_diag *diag)
{
	struct json_value *v = NULL;
	struct json_error err = { 0 };
	struct pctx p = { .diag = diag };
	int r;

	json_path_init(&p.path);
	r = json_parse(json, len, NULL, &v, &err);
	if (r == -EBADMSG) {
		if (diag) {
			diag->path[0] = '\0';
			snprintf(diag->message, sizeof(diag->message), "line %u column %u: %s", err.line, err.column,
				 err.message);
		}
		return -FLASH_E_RENDER_CONFIG;
	}
	if (r < 0)
		return r;
	r = parse_root(&p, c, v);
	json_free(v);
	return r;
}

FLASH_API int flash_operator_config_parse(const char *json, size_t len, struct flash_operator_config **ret_config,
					  struct flash_render_diag *diag)
{
	struct flash_operator_config *c;
	int r;

	if (!json || !ret_config)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	r = parse_into(c, default_config, sizeof(default_config) - 1, NULL);
	if (r == 0)
		r = parse_into(c, json, len, diag);
	if (r < 0) {
		flash_operator_config_free(c);
		return r;
	}
	*ret_config = c;
	return 0;
}

FLASH_API int flash_operator_config_default(struct flash_operator_config **ret_config)
{
	return flash_operator_config_parse("{}", 2, ret_config, NULL);
}

FLASH_API bool flash_operator_config_persistence(const struct flash_operator_config *config)
{
	return config && config->persistence;
}

FLASH_API void flash_operator_config_public_port_range(const struct flash_operator_config *config,
						       uint16_t *ret_first, uint16_t *ret_last)
{
	if (!config)
		return;
	if (ret_first)
		*ret_first = config->port_first;
	if (ret_last)
		*ret_last = config->port_last;
}
