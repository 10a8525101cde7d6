/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CNI (spec 1.1.0, 0.4.0 and 1.0.0 accepted): configurations, configuration
 * lists, CNI_* environment and CNI_ARGS, results, error and VERSION JSON. */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <strings.h>
#include <flowsdn/cni.h>

#include "internal.h"
#include "json.h"
#include "names.h"

#define IS_OBJ(v) json_is((v), JSON_OBJECT)
#define IS_ARR(v) json_is((v), JSON_ARRAY)
#define IS_STR(v) (json_string_value(v) != NULL)

/* An integer in [lo, hi]: 0 and *ret, or -1. */
static int int_in(const struct json_value *v, long long lo, long long hi, long long *ret)
{
	int64_t x;

	if (json_get_int64(v, &x) < 0 || x < lo || x > hi)
		return -1;
	*ret = x;
	return 0;
}

#define MAX_ENTRIES 64
#define MAX_CONF_SIZE (1u << 20)
#define MAX_ARGS_SIZE 4096
#define MAX_ARGS 64

#define DEFINE_FREEP(type, fn) \
	static inline void fn##p(struct type **p) { fn(*p); }
DEFINE_FREEP(flowsdn_cni_result, flowsdn_cni_result_free)
DEFINE_FREEP(flowsdn_cni_conf, flowsdn_cni_conf_free)
DEFINE_FREEP(flowsdn_cni_conflist, flowsdn_cni_conflist_free)
DEFINE_FREEP(flowsdn_cni_args, flowsdn_cni_args_free)

FLOWSDN_API unsigned int flowsdn_cni_code(int err)
{
	int e = err < 0 ? -err : err;

	switch (e) {
	case 0:
		return 0;
	case FLOWSDN_E_CNI_INCOMPATIBLE:
		return FLOWSDN_CNI_CODE_INCOMPATIBLE_VERSION;
	case FLOWSDN_E_CNI_ENV:
	case FLOWSDN_E_CNI_CONTAINER_ID:
	case FLOWSDN_E_CNI_IFNAME:
	case FLOWSDN_E_CNI_ARGS:
		return FLOWSDN_CNI_CODE_INVALID_ENV;
	case FLOWSDN_E_CNI_DECODE:
	case FLOWSDN_E_CNI_RESULT:
		return FLOWSDN_CNI_CODE_DECODE;
	case FLOWSDN_E_CNI_VERSION_UNKNOWN:
	case FLOWSDN_E_CNI_CONFIG:
		return FLOWSDN_CNI_CODE_INVALID_CONFIG;
	case FLOWSDN_E_CNI_NOT_FOUND:
		return FLOWSDN_CNI_CODE_UNKNOWN_CONTAINER;
	case FLOWSDN_E_CNI_TRY_AGAIN:
	case EAGAIN:
	case ETIMEDOUT:
	case ECONNREFUSED:
	case EBUSY:
		return FLOWSDN_CNI_CODE_TRY_AGAIN;
	case FLOWSDN_E_CNI_NOT_READY:
		return FLOWSDN_CNI_CODE_NOT_AVAILABLE;
	case EIO:
	case ENOSPC:
	case EROFS:
		return FLOWSDN_CNI_CODE_IO;
	default:
		return FLOWSDN_CNI_CODE_INTERNAL;
	}
}

/* ------------------------------------------------------------ versions */

static const char *const supported[] = { "0.4.0", "1.0.0", "1.1.0" };
static const char *const older[] = { "0.1.0", "0.2.0", "0.3.0", "0.3.1" };

FLOWSDN_API const char *const *flowsdn_cni_supported_versions(size_t *ret_count)
{
	if (ret_count)
		*ret_count = ARRAY_SIZE(supported);
	return supported;
}

FLOWSDN_API int flowsdn_cni_version_check(const char *version)
{
	if (!version)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(supported); i++)
		if (strcmp(version, supported[i]) == 0)
			return 0;
	for (size_t i = 0; i < ARRAY_SIZE(older); i++)
		if (strcmp(version, older[i]) == 0)
			return -FLOWSDN_E_CNI_INCOMPATIBLE;
	return -FLOWSDN_E_CNI_VERSION_UNKNOWN;
}

/* Index of @version in supported[] (after a successful check). */
static size_t version_index(const char *version)
{
	for (size_t i = 0; i < ARRAY_SIZE(supported); i++)
		if (strcmp(version, supported[i]) == 0)
			return i;
	return ARRAY_SIZE(supported) - 1;
}

/* Adds one problem to @diag.  Messages are written "FIELD: what is wrong"
 * (the field a JSON path or a variable name, without spaces): the field
 * becomes the entry's path and the rest its message. */
_printf_(2, 3) static void diag_set(struct diag *diag, const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL;
	const char *sep;
	va_list ap;
	int n;

	if (!diag)
		return;
	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		text = NULL;
		diag_add_text(diag, DIAG_ERROR, "", "cni", NULL, "(out of memory)");
		return;
	}
	sep = strstr(text, ": ");
	if (sep && sep > text && !memchr(text, ' ', (size_t)(sep - text))) {
		_cleanup_free_ char *path = strndup(text, (size_t)(sep - text));

		if (path) {
			diag_add_text(diag, DIAG_ERROR, path, "cni", NULL, "%s", sep + 2);
			return;
		}
	}
	diag_add_text(diag, DIAG_ERROR, "", "cni", NULL, "%s", text);
}

/* ------------------------------------------------------------ results */

struct flowsdn_cni_result {
	size_t n_iface, n_ip, n_route, n_ns, n_search;
	struct flowsdn_cni_iface iface[MAX_ENTRIES];
	struct flowsdn_cni_ip ip[MAX_ENTRIES];
	struct flowsdn_cni_route route[MAX_ENTRIES];
	char *ns[MAX_ENTRIES];
	char *search[MAX_ENTRIES];
	char *domain;
};

FLOWSDN_API int flowsdn_cni_result_new(struct flowsdn_cni_result **ret)
{
	struct flowsdn_cni_result *r;

	if (!ret)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*ret = r;
	return 0;
}

FLOWSDN_API void flowsdn_cni_result_free(struct flowsdn_cni_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_ns; i++)
		free(r->ns[i]);
	for (size_t i = 0; i < r->n_search; i++)
		free(r->search[i]);
	free(r->domain);
	free(r);
}

static bool bounded(const char *s, size_t max)
{
	return s && strnlen(s, max) < max;
}

FLOWSDN_API int flowsdn_cni_result_add_iface(struct flowsdn_cni_result *r, const struct flowsdn_cni_iface *iface)
{
	if (!r || !iface || !bounded(iface->name, sizeof(iface->name)) || !iface->name[0] ||
	    !bounded(iface->mac, sizeof(iface->mac)) || !bounded(iface->sandbox, sizeof(iface->sandbox)))
		return -EINVAL;
	if (r->n_iface >= MAX_ENTRIES)
		return -E2BIG;
	r->iface[r->n_iface] = *iface;
	return (int)r->n_iface++;
}

FLOWSDN_API int flowsdn_cni_result_add_ip(struct flowsdn_cni_result *r, const struct flowsdn_cni_ip *ip)
{
	unsigned int bits;

	if (!r || !ip)
		return -EINVAL;
	bits = flowsdn_addr_bits(&ip->addr);
	if (!bits || ip->prefix_len > bits || (ip->has_gateway && flowsdn_addr_bits(&ip->gateway) != bits) ||
	    ip->iface < -1 || (ip->iface >= 0 && (size_t)ip->iface >= r->n_iface))
		return -EINVAL;
	if (r->n_ip >= MAX_ENTRIES)
		return -E2BIG;
	r->ip[r->n_ip++] = *ip;
	return 0;
}

FLOWSDN_API int flowsdn_cni_result_add_route(struct flowsdn_cni_result *r, const struct flowsdn_cni_route *route)
{
	unsigned int bits;

	if (!r || !route)
		return -EINVAL;
	bits = flowsdn_addr_bits(&route->dst.addr);
	if (!bits || route->dst.len > bits || (route->has_gw && flowsdn_addr_bits(&route->gw) != bits))
		return -EINVAL;
	if (r->n_route >= MAX_ENTRIES)
		return -E2BIG;
	r->route[r->n_route++] = *route;
	return 0;
}

static int add_string(char **arr, size_t *n, const char *s)
{
	char *copy;

	if (!s || !s[0] || strlen(s) > 253)
		return -EINVAL;
	if (*n >= MAX_ENTRIES)
		return -E2BIG;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	arr[(*n)++] = copy;
	return 0;
}

FLOWSDN_API int flowsdn_cni_result_add_nameserver(struct flowsdn_cni_result *r, const char *ns)
{
	struct flowsdn_addr a;

	if (!r || !ns || flowsdn_addr_parse(ns, strlen(ns), &a) < 0)
		return -EINVAL;
	return add_string(r->ns, &r->n_ns, ns);
}

FLOWSDN_API int flowsdn_cni_result_add_search(struct flowsdn_cni_result *r, const char *domain)
{
	if (!r)
		return -EINVAL;
	return add_string(r->search, &r->n_search, domain);
}

FLOWSDN_API int flowsdn_cni_result_set_domain(struct flowsdn_cni_result *r, const char *domain)
{
	char *copy = NULL;

	if (!r || !domain || strlen(domain) > 253)
		return -EINVAL;
	if (domain[0]) {
		copy = strdup(domain);
		if (!copy)
			return -ENOMEM;
	}
	free(r->domain);
	r->domain = copy;
	return 0;
}

FLOWSDN_API size_t flowsdn_cni_result_iface_count(const struct flowsdn_cni_result *r)
{
	return r ? r->n_iface : 0;
}

FLOWSDN_API const struct flowsdn_cni_iface *flowsdn_cni_result_iface(const struct flowsdn_cni_result *r, size_t i)
{
	return r && i < r->n_iface ? &r->iface[i] : NULL;
}

FLOWSDN_API size_t flowsdn_cni_result_ip_count(const struct flowsdn_cni_result *r)
{
	return r ? r->n_ip : 0;
}

FLOWSDN_API const struct flowsdn_cni_ip *flowsdn_cni_result_ip(const struct flowsdn_cni_result *r, size_t i)
{
	return r && i < r->n_ip ? &r->ip[i] : NULL;
}

FLOWSDN_API size_t flowsdn_cni_result_route_count(const struct flowsdn_cni_result *r)
{
	return r ? r->n_route : 0;
}

FLOWSDN_API const struct flowsdn_cni_route *flowsdn_cni_result_route(const struct flowsdn_cni_result *r, size_t i)
{
	return r && i < r->n_route ? &r->route[i] : NULL;
}

FLOWSDN_API size_t flowsdn_cni_result_nameserver_count(const struct flowsdn_cni_result *r)
{
	return r ? r->n_ns : 0;
}

FLOWSDN_API const char *flowsdn_cni_result_nameserver(const struct flowsdn_cni_result *r, size_t i)
{
	return r && i < r->n_ns ? r->ns[i] : NULL;
}

static void gen_addr(struct json_writer *g, const struct flowsdn_addr *a)
{
	char buf[FLOWSDN_ADDR_STRLEN];

	if (flowsdn_addr_format(a, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	jw_string(g, buf);
}

static void gen_string_array(struct json_writer *g, const char *key, char *const *arr, size_t n)
{
	if (!n)
		return;
	jw_string(g, key);
	jw_array_open(g);
	for (size_t i = 0; i < n; i++)
		jw_string(g, arr[i]);
	jw_array_close(g);
}

/* Writes the "dns" member when there is anything in it (the 1.0.0 result
 * always carries "dns": {} in the reference plugins; an empty object is
 * accepted by every runtime, so we print it always). */
static void gen_dns(struct json_writer *g, const struct flowsdn_cni_result *r)
{
	jw_string(g, "dns");
	jw_object_open(g);
	gen_string_array(g, "nameservers", r->ns, r->n_ns);
	if (r->domain) {
		jw_string(g, "domain");
		jw_string(g, r->domain);
	}
	gen_string_array(g, "search", r->search, r->n_search);
	jw_object_close(g);
}

static int result_gen(struct json_writer *g, const struct flowsdn_cni_result *r, const char *version)
{
	size_t vi = version_index(version);
	bool v04 = vi == 0, v11 = vi == 2;

	jw_object_open(g);
	jw_string(g, "cniVersion");
	jw_string(g, version);
	if (r->n_iface) {
		jw_string(g, "interfaces");
		jw_array_open(g);
		for (size_t i = 0; i < r->n_iface; i++) {
			const struct flowsdn_cni_iface *f = &r->iface[i];

			jw_object_open(g);
			jw_string(g, "name");
			jw_string(g, f->name);
			if (f->mac[0]) {
				jw_string(g, "mac");
				jw_string(g, f->mac);
			}
			if (v11 && f->mtu) {
				jw_string(g, "mtu");
				jw_int(g, f->mtu);
			}
			if (f->sandbox[0]) {
				jw_string(g, "sandbox");
				jw_string(g, f->sandbox);
			}
			jw_object_close(g);
		}
		jw_array_close(g);
	}
	if (r->n_ip) {
		jw_string(g, "ips");
		jw_array_open(g);
		for (size_t i = 0; i < r->n_ip; i++) {
			const struct flowsdn_cni_ip *ip = &r->ip[i];
			char buf[FLOWSDN_PREFIX_STRLEN], abuf[FLOWSDN_ADDR_STRLEN];

			jw_object_open(g);
			if (v04) {
				jw_string(g, "version");
				jw_string(g, ip->addr.family == FLOWSDN_AF_INET ? "4" : "6");
			}
			if (flowsdn_addr_format(&ip->addr, abuf, sizeof(abuf)) < 0)
				return -EINVAL;
			snprintf(buf, sizeof(buf), "%s/%u", abuf, ip->prefix_len);
			jw_string(g, "address");
			jw_string(g, buf);
			if (ip->has_gateway) {
				jw_string(g, "gateway");
				gen_addr(g, &ip->gateway);
			}
			if (ip->iface >= 0) {
				jw_string(g, "interface");
				jw_int(g, ip->iface);
			}
			jw_object_close(g);
		}
		jw_array_close(g);
	}
	if (r->n_route) {
		jw_string(g, "routes");
		jw_array_open(g);
		for (size_t i = 0; i < r->n_route; i++) {
			char buf[FLOWSDN_PREFIX_STRLEN];

			jw_object_open(g);
			if (flowsdn_prefix_format(&r->route[i].dst, buf, sizeof(buf)) < 0)
				return -EINVAL;
			jw_string(g, "dst");
			jw_string(g, buf);
			if (r->route[i].has_gw) {
				jw_string(g, "gw");
				gen_addr(g, &r->route[i].gw);
			}
			jw_object_close(g);
		}
		jw_array_close(g);
	}
	gen_dns(g, r);
	jw_object_close(g);
	return 0;
}

FLOWSDN_API int flowsdn_cni_result_format(const struct flowsdn_cni_result *r, const char *version, char **ret_json,
					  size_t *ret_len)
{
	struct json_writer *g;
	int err;

	if (!r || !version || !ret_json)
		return -EINVAL;
	err = flowsdn_cni_version_check(version);
	if (err < 0)
		return err;
	g = json_writer_new(0);
	if (!g)
		return -ENOMEM;
	err = result_gen(g, r, version);
	if (err == 0)
		err = json_writer_finish(g, ret_json, ret_len);
	else
		json_writer_free(g);
	return err;
}

/* Parses "ADDR/LEN" keeping host bits. */
static int parse_ip_len(const char *text, struct flowsdn_addr *ret_addr, unsigned int *ret_len)
{
	FLOWSDN_OPTS(flowsdn_prefix_opts, o, .flags = FLOWSDN_PREFIX_NORMALIZE);
	const char *slash = strchr(text, '/');
	struct flowsdn_prefix p;
	struct flowsdn_addr a;

	if (!slash || flowsdn_addr_parse(text, (size_t)(slash - text), &a) < 0 ||
	    flowsdn_prefix_parse(text, strlen(text), &o, &p) < 0)
		return -FLOWSDN_E_CNI_RESULT;
	*ret_addr = a;
	*ret_len = p.len;
	return 0;
}

static int parse_addr_str(const char *text, struct flowsdn_addr *ret)
{
	return flowsdn_addr_parse(text, strlen(text), ret) < 0 ? -FLOWSDN_E_CNI_RESULT : 0;
}

/* Reads an optional string member: 0 (and *ret, NULL when absent) or -1
 * when present with another type. */
static int opt_str(const struct json_value *obj, const char *key, const char **ret)
{
	const struct json_value *v = json_get(obj, key);

	*ret = NULL;
	if (!v)
		return 0;
	if (!IS_STR(v))
		return -1;
	*ret = json_string_value(v);
	return 0;
}

static int dns_parse(const struct json_value *dns, struct flowsdn_cni_result *r, struct diag *diag, int fault)
{
	static const char *const arrays[] = { "nameservers", "search", "options" };
	const char *domain;

	if (!IS_OBJ(dns)) {
		diag_set(diag, "dns: not an object");
		return -fault;
	}
	for (size_t k = 0; k < ARRAY_SIZE(arrays); k++) {
		const struct json_value *a = json_get(dns, arrays[k]);

		if (!a)
			continue;
		if (!IS_ARR(a)) {
			diag_set(diag, "dns.%s: not an array", arrays[k]);
			return -fault;
		}
		for (size_t i = 0; i < a->u.array.n; i++) {
			const struct json_value *s = a->u.array.items[i];
			int err = 0;

			if (!IS_STR(s)) {
				diag_set(diag, "dns.%s[%zu]: not a string", arrays[k], i);
				return -fault;
			}
			if (k == 0)
				err = flowsdn_cni_result_add_nameserver(r, json_string_value(s));
			else if (k == 1)
				err = flowsdn_cni_result_add_search(r, json_string_value(s));
			if (err < 0) {
				diag_set(diag, "dns.%s[%zu]: invalid \"%.64s\"", arrays[k], i, json_string_value(s));
				return err == -ENOMEM ? err : -fault;
			}
		}
	}
	if (opt_str(dns, "domain", &domain) < 0) {
		diag_set(diag, "dns.domain: not a string");
		return -fault;
	}
	if (domain && flowsdn_cni_result_set_domain(r, domain) < 0) {
		diag_set(diag, "dns.domain: invalid");
		return -fault;
	}
	return 0;
}

static int copy_field(char *dst, size_t size, const char *src)
{
	if (!src) {
		dst[0] = '\0';
		return 0;
	}
	if (strlen(src) >= size)
		return -1;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/*
 * The result format (CNI spec 1.1.0, "Success"), strict: a key that is
 * not one of these is refused.  The values' meaning (addresses, prefixes,
 * interface indexes) is checked by result_from_tree(), which runs first
 * so that its messages stay; the table then names what is left over.
 */
static const struct json_field iface_fields[] = {
	{ "name", JSON_STRING, true, NULL, 0, NULL },
	{ "mac", JSON_STRING, false, NULL, 0, NULL },
	{ "mtu", JSON_NUMBER, false, NULL, 0, NULL },
	{ "sandbox", JSON_STRING, false, NULL, 0, NULL },
	{ "socketPath", JSON_STRING, false, NULL, 0, NULL },
	{ "pciID", JSON_STRING, false, NULL, 0, NULL },
};
static const struct json_field ip_fields[] = {
	{ "address", JSON_STRING, true, NULL, 0, NULL },
	{ "gateway", JSON_STRING, false, NULL, 0, NULL },
	{ "interface", JSON_NUMBER, false, NULL, 0, NULL },
	{ "version", JSON_STRING, false, NULL, 0, NULL }, /* 0.4.0 */
};
static const struct json_field route_fields[] = {
	{ "dst", JSON_STRING, true, NULL, 0, NULL },
	{ "gw", JSON_STRING, false, NULL, 0, NULL },
	{ "mtu", JSON_NUMBER, false, NULL, 0, NULL },
	{ "advmss", JSON_NUMBER, false, NULL, 0, NULL },
	{ "priority", JSON_NUMBER, false, NULL, 0, NULL },
	{ "table", JSON_NUMBER, false, NULL, 0, NULL },
	{ "scope", JSON_NUMBER, false, NULL, 0, NULL },
};
static const struct json_field dns_fields[] = {
	{ "nameservers", JSON_ARRAY, false, NULL, 0, NULL },
	{ "domain", JSON_STRING, false, NULL, 0, NULL },
	{ "search", JSON_ARRAY, false, NULL, 0, NULL },
	{ "options", JSON_ARRAY, false, NULL, 0, NULL },
};
static const struct json_table iface_table = { iface_fields, ARRAY_SIZE(iface_fields), 0 };
static const struct json_table ip_table = { ip_fields, ARRAY_SIZE(ip_fields), 0 };
static const struct json_table route_table = { route_fields, ARRAY_SIZE(route_fields), 0 };
static const struct json_table dns_table = { dns_fields, ARRAY_SIZE(dns_fields), 0 };
static const struct json_field result_fields[] = {
	{ "cniVersion", JSON_STRING, true, NULL, 0, NULL },
	{ "interfaces", JSON_ARRAY, false, json_read_objects, 0, &iface_table },
	{ "ips", JSON_ARRAY, false, json_read_objects, 0, &ip_table },
	{ "routes", JSON_ARRAY, false, json_read_objects, 0, &route_table },
	{ "dns", JSON_OBJECT, false, json_read_nested, 0, &dns_table },
};

static int result_from_tree(const struct json_value *root, struct diag *diag, struct flowsdn_cni_result **ret)
{
	_cleanup_(flowsdn_cni_result_freep) struct flowsdn_cni_result *r = NULL;
	const char *version;
	const struct json_value *v;
	struct check_ctx ctx;
	int err;

	if (!IS_OBJ(root)) {
		diag_set(diag, "result: not an object");
		return -FLOWSDN_E_CNI_DECODE;
	}
	if (opt_str(root, "cniVersion", &version) < 0 || !version) {
		diag_set(diag, "result.cniVersion: missing or not a string");
		return -FLOWSDN_E_CNI_RESULT;
	}
	err = flowsdn_cni_version_check(version);
	if (err < 0) {
		diag_set(diag, "result.cniVersion: \"%.32s\" is not supported", version);
		return err;
	}
	err = flowsdn_cni_result_new(&r);
	if (err < 0)
		return err;

	v = json_get(root, "interfaces");
	if (v) {
		if (!IS_ARR(v) || v->u.array.n > MAX_ENTRIES) {
			diag_set(diag, "result.interfaces: not an array of at most %d", MAX_ENTRIES);
			return -FLOWSDN_E_CNI_RESULT;
		}
		for (size_t i = 0; i < v->u.array.n; i++) {
			const struct json_value *o = v->u.array.items[i];
			struct flowsdn_cni_iface f = { 0 };
			const char *name, *mac, *sandbox;
			long long mtu_v = 0;
			const struct json_value *mtu = json_get(o, "mtu");

			if (!IS_OBJ(o) || opt_str(o, "name", &name) < 0 || !name ||
			    opt_str(o, "mac", &mac) < 0 || opt_str(o, "sandbox", &sandbox) < 0 ||
			    copy_field(f.name, sizeof(f.name), name) < 0 || copy_field(f.mac, sizeof(f.mac), mac) < 0 ||
			    copy_field(f.sandbox, sizeof(f.sandbox), sandbox) < 0 || !f.name[0] ||
			    (mtu && int_in(mtu, 0, 65535, &mtu_v) < 0)) {
				diag_set(diag, "result.interfaces[%zu]: invalid", i);
				return -FLOWSDN_E_CNI_RESULT;
			}
			f.mtu = mtu ? (unsigned int)mtu_v : 0;
			err = flowsdn_cni_result_add_iface(r, &f);
			if (err < 0)
				return err;
		}
	}
	v = json_get(root, "ips");
	if (v) {
		if (!IS_ARR(v) || v->u.array.n > MAX_ENTRIES) {
			diag_set(diag, "result.ips: not an array of at most %d", MAX_ENTRIES);
			return -FLOWSDN_E_CNI_RESULT;
		}
		for (size_t i = 0; i < v->u.array.n; i++) {
			const struct json_value *o = v->u.array.items[i], *iface;
			struct flowsdn_cni_ip ip = { .iface = -1 };
			long long idx;
			const char *addr, *gw, *ver;

			if (!IS_OBJ(o) || opt_str(o, "address", &addr) < 0 || !addr ||
			    parse_ip_len(addr, &ip.addr, &ip.prefix_len) < 0 || opt_str(o, "gateway", &gw) < 0 ||
			    (gw && parse_addr_str(gw, &ip.gateway) < 0) || opt_str(o, "version", &ver) < 0 ||
			    (ver && strcmp(ver, ip.addr.family == FLOWSDN_AF_INET ? "4" : "6") != 0)) {
				diag_set(diag, "result.ips[%zu]: invalid", i);
				return -FLOWSDN_E_CNI_RESULT;
			}
			ip.has_gateway = gw != NULL;
			iface = json_get(o, "interface");
			if (iface) {
				if (int_in(iface, 0, (long long)r->n_iface - 1, &idx) < 0) {
					diag_set(diag, "result.ips[%zu].interface: not an index of interfaces", i);
					return -FLOWSDN_E_CNI_RESULT;
				}
				ip.iface = (int)idx;
			}
			if (flowsdn_cni_result_add_ip(r, &ip) < 0) {
				diag_set(diag, "result.ips[%zu]: gateway family differs", i);
				return -FLOWSDN_E_CNI_RESULT;
			}
		}
	}
	v = json_get(root, "routes");
	if (v) {
		if (!IS_ARR(v) || v->u.array.n > MAX_ENTRIES) {
			diag_set(diag, "result.routes: not an array of at most %d", MAX_ENTRIES);
			return -FLOWSDN_E_CNI_RESULT;
		}
		for (size_t i = 0; i < v->u.array.n; i++) {
			FLOWSDN_OPTS(flowsdn_prefix_opts, o, .flags = FLOWSDN_PREFIX_NORMALIZE);
			const struct json_value *e = v->u.array.items[i];
			struct flowsdn_cni_route rt = { 0 };
			const char *dst, *gw;

			if (!IS_OBJ(e) || opt_str(e, "dst", &dst) < 0 || !dst ||
			    flowsdn_prefix_parse(dst, strlen(dst), &o, &rt.dst) < 0 || opt_str(e, "gw", &gw) < 0 ||
			    (gw && parse_addr_str(gw, &rt.gw) < 0)) {
				diag_set(diag, "result.routes[%zu]: invalid", i);
				return -FLOWSDN_E_CNI_RESULT;
			}
			rt.has_gw = gw != NULL;
			if (flowsdn_cni_result_add_route(r, &rt) < 0) {
				diag_set(diag, "result.routes[%zu]: gw family differs from dst", i);
				return -FLOWSDN_E_CNI_RESULT;
			}
		}
	}
	v = json_get(root, "dns");
	if (v) {
		err = dns_parse(v, r, diag, FLOWSDN_E_CNI_RESULT);
		if (err < 0)
			return err;
	}
	check_ctx_init(&ctx, diag);
	json_path_push_key(&ctx.path, "result");
	err = json_read_object(&ctx, root, result_fields, ARRAY_SIZE(result_fields), NULL);
	if (err < 0)
		return err == JSON_READ_REPORTED ? -FLOWSDN_E_CNI_RESULT : err;
	*ret = TAKE_PTR(r);
	return 0;
}

/* Parses @len bytes into a strict tree (common/json.h: no duplicate keys,
 * bounded depth and sizes), the fault's line and column in @diag. */
static int tree_parse(const char *json, size_t len, struct diag *diag, struct json_value **ret)
{
	static const struct json_limits limits = {
		.max_depth = 32,
		.max_string = 64 * 1024,
		.max_members = 65536,
		.max_input = MAX_CONF_SIZE,
	};

	return json_parse_diag(json, len, &limits, -FLOWSDN_E_CNI_DECODE, ret, diag);
}

FLOWSDN_API int flowsdn_cni_result_parse(const char *json, size_t len, struct flowsdn_cni_result **ret,
					 struct flowsdn_diag *public_diag)
{
	struct diag *diag = flowsdn__diag(public_diag);
	struct json_value *root;
	int err;

	if (!json || !ret)
		return -EINVAL;
	diag_begin(diag, 0);
	err = tree_parse(json, len, diag, &root);
	if (err < 0)
		return err;
	err = result_from_tree(root, diag, ret);
	json_free(root);
	return err;
}

/* ------------------------------------------------------- configuration */

struct attachment {
	const char *container_id, *ifname;
};

struct flowsdn_cni_conf {
	struct json_value *root;
	const char *version, *name, *type;
	struct flowsdn_cni_result *prev, *dns;
	bool has_attachments;
	size_t n_att;
	struct attachment *att;
	enum flowsdn_cni_svc_translation svc_translation;
};

FLOWSDN_API void flowsdn_cni_conf_free(struct flowsdn_cni_conf *c)
{
	if (!c)
		return;
	flowsdn_cni_result_free(c->prev);
	flowsdn_cni_result_free(c->dns);
	free(c->att);
	json_free(c->root);
	free(c);
}

/* A required string field; -FLOWSDN_E_CNI_CONFIG naming it otherwise. */
static int req_str(const struct json_value *obj, const char *key, const char *where, struct diag *diag, const char **ret)
{
	const struct json_value *v = json_get(obj, key);

	if (!v) {
		diag_set(diag, "%s%s: missing", where, key);
		return -FLOWSDN_E_CNI_CONFIG;
	}
	if (!IS_STR(v) || !json_string_value(v)[0]) {
		diag_set(diag, "%s%s: must be a non-empty string", where, key);
		return -FLOWSDN_E_CNI_CONFIG;
	}
	*ret = json_string_value(v);
	return 0;
}

/*
 * The network configuration's fields and their types (CNI spec 1.1.0,
 * "Network configuration format").  The format is open: plugins must
 * ignore keys they do not know, so unknown keys are skipped.  The three
 * required strings are checked first by req_str(); dns, prevResult and
 * the attachments are read after the types hold.
 */
static const struct json_field conf_fields[] = {
	{ "cniVersion", JSON_STRING, true, NULL, 0, NULL },
	{ "name", JSON_STRING, true, NULL, 0, NULL },
	{ "type", JSON_STRING, true, NULL, 0, NULL },
	{ "args", JSON_OBJECT, false, NULL, 0, NULL },
	{ "runtimeConfig", JSON_OBJECT, false, NULL, 0, NULL },
	{ "capabilities", JSON_OBJECT, false, NULL, 0, NULL },
	{ "ipam", JSON_OBJECT, false, NULL, 0, NULL },
	{ "dns", JSON_OBJECT, false, NULL, 0, NULL },
	{ "disableCheck", JSON_BOOL, false, NULL, 0, NULL },
	{ "disableGC", JSON_BOOL, false, NULL, 0, NULL },
	{ "prevResult", JSON_OBJECT, false, NULL, 0, NULL },
	{ "cni.dev/valid-attachments", JSON_ARRAY, false, NULL, 0, NULL },
};

static int check_version(const char *version, const char *where, struct diag *diag)
{
	int err = flowsdn_cni_version_check(version);

	if (err == -FLOWSDN_E_CNI_INCOMPATIBLE)
		diag_set(diag, "%scniVersion \"%.32s\" is not supported (supported: 0.4.0, 1.0.0, 1.1.0)", where,
			 version);
	else if (err < 0)
		diag_set(diag, "%scniVersion \"%.32s\" is not a CNI version", where, version);
	return err;
}

/* The checks every configuration starts with: @version supported and
 * "name" a string with a container id's syntax. */
static int conf_version_name(const struct json_value *root, const char *version, struct diag *diag,
			     const char **ret_name)
{
	int err = check_version(version, "", diag);

	if (err < 0)
		return err;
	err = req_str(root, "name", "", diag, ret_name);
	if (err < 0)
		return err;
	if (!names_container_id_valid(*ret_name)) {
		diag_set(diag, "name: \"%.64s\" must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$", *ret_name);
		return -FLOWSDN_E_CNI_CONFIG;
	}
	return 0;
}

/* The @fields of @root, an open format (unknown keys skipped), into
 * @target. */
static int conf_read_fields(const struct json_value *root, const struct json_field *fields, size_t n, void *target,
			    struct diag *diag)
{
	struct check_ctx ctx;
	int err;

	check_ctx_init(&ctx, diag);
	err = json_read_object_flags(&ctx, root, fields, n, JSON_READ_IGNORE_UNKNOWN, target);
	return err == JSON_READ_REPORTED ? -FLOWSDN_E_CNI_CONFIG : err;
}

static int attachments_parse(struct flowsdn_cni_conf *c, const struct json_value *a, struct diag *diag)
{
	c->has_attachments = true;
	if (a->u.array.n > 65536) {
		diag_set(diag, "cni.dev/valid-attachments: too many entries");
		return -FLOWSDN_E_CNI_CONFIG;
	}
	if (a->u.array.n) {
		c->att = calloc(a->u.array.n, sizeof(*c->att));
		if (!c->att)
			return -ENOMEM;
	}
	for (size_t i = 0; i < a->u.array.n; i++) {
		const struct json_value *o = a->u.array.items[i];
		char where[64];
		int err;

		snprintf(where, sizeof(where), "cni.dev/valid-attachments[%zu].", i);
		if (!IS_OBJ(o)) {
			diag_set(diag, "%s: must be an object", where);
			return -FLOWSDN_E_CNI_CONFIG;
		}
		err = req_str(o, "containerID", where, diag, &c->att[i].container_id);
		if (err == 0)
			err = req_str(o, "ifname", where, diag, &c->att[i].ifname);
		if (err < 0)
			return err;
		c->n_att++;
	}
	return 0;
}

FLOWSDN_API int flowsdn_cni_svc_translation_parse(const char *text, enum flowsdn_cni_svc_translation *ret)
{
	if (!text || !ret)
		return -EINVAL;
	if (!strcmp(text, "socket"))
		*ret = FLOWSDN_CNI_SVC_SOCKET;
	else if (!strcmp(text, "packet"))
		*ret = FLOWSDN_CNI_SVC_PACKET;
	else
		return -EINVAL;
	return 0;
}

FLOWSDN_API const char *flowsdn_cni_svc_translation_name(enum flowsdn_cni_svc_translation mode)
{
	switch (mode) {
	case FLOWSDN_CNI_SVC_SOCKET:
		return "socket";
	case FLOWSDN_CNI_SVC_PACKET:
		return "packet";
	}
	return NULL;
}

/* runtimeConfig.flowsdn.serviceTranslation (contract C3), when there.
 * Other keys of runtimeConfig.flowsdn are read by their own getters. */
static int svc_translation_read(struct flowsdn_cni_conf *c, struct diag *diag)
{
	const struct json_value *rc = json_get(c->root, "runtimeConfig"), *f, *v;

	c->svc_translation = FLOWSDN_CNI_SVC_SOCKET;
	f = rc ? json_get(rc, "flowsdn") : NULL;
	if (!f)
		return 0;
	if (!IS_OBJ(f)) {
		diag_set(diag, "runtimeConfig.flowsdn: must be an object");
		return -FLOWSDN_E_CNI_CONFIG;
	}
	v = json_get(f, "serviceTranslation");
	if (v && (!IS_STR(v) || flowsdn_cni_svc_translation_parse(json_string_value(v), &c->svc_translation) < 0)) {
		diag_set(diag, "runtimeConfig.flowsdn.serviceTranslation: must be \"packet\" or \"socket\"");
		return -FLOWSDN_E_CNI_CONFIG;
	}
	return 0;
}

/* The start of a configuration or a list: a JSON object with a string
 * cniVersion.  *ret_root is set as soon as it is parsed (the caller's
 * object owns it, also on a later failure). */
static int parse_versioned_object(const char *json, size_t len, const char *what, struct diag *diag,
				  struct json_value **ret_root, const char **ret_version)
{
	int err = tree_parse(json, len, diag, ret_root);

	if (err < 0)
		return err;
	if (!IS_OBJ(*ret_root)) {
		diag_set(diag, "%s: not a JSON object", what);
		return -FLOWSDN_E_CNI_CONFIG;
	}
	return req_str(*ret_root, "cniVersion", "", diag, ret_version);
}

FLOWSDN_API int flowsdn_cni_conf_parse(const char *json, size_t len, struct flowsdn_cni_conf **ret,
				       struct flowsdn_diag *public_diag)
{
	struct diag *diag = flowsdn__diag(public_diag);
	_cleanup_(flowsdn_cni_conf_freep) struct flowsdn_cni_conf *c = NULL;
	const struct json_value *v;
	int err;

	if (!json || !ret)
		return -EINVAL;
	diag_begin(diag, 0);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	err = parse_versioned_object(json, len, "network configuration", diag, &c->root, &c->version);
	if (err < 0)
		return err;
	err = conf_version_name(c->root, c->version, diag, &c->name);
	if (err < 0)
		return err;
	err = req_str(c->root, "type", "", diag, &c->type);
	if (err < 0)
		return err;
	err = conf_read_fields(c->root, conf_fields, ARRAY_SIZE(conf_fields), NULL, diag);
	if (err < 0)
		return err;
	v = json_get(c->root, "dns");
	if (v) {
		err = flowsdn_cni_result_new(&c->dns);
		if (err < 0)
			return err;
		err = dns_parse(v, c->dns, diag, FLOWSDN_E_CNI_CONFIG);
		if (err < 0)
			return err;
	}
	v = json_get(c->root, "prevResult");
	if (v) {
		struct diag *d = NULL;
		char text[512] = "";

		err = diag_new(&d);
		if (err < 0)
			return err;
		err = result_from_tree(v, d, &c->prev);
		if (err < 0) {
			if (diag_entry_format(diag_first_error(d), text, sizeof(text)) < 0)
				text[0] = '\0';
			diag_set(diag, "prevResult: %s", text);
		}
		diag_free(d);
		if (err < 0)
			return err == -ENOMEM ? err : -FLOWSDN_E_CNI_CONFIG;
	}
	v = json_get(c->root, "cni.dev/valid-attachments");
	if (v) {
		err = attachments_parse(c, v, diag);
		if (err < 0)
			return err;
	}
	err = svc_translation_read(c, diag);
	if (err < 0)
		return err;
	*ret = TAKE_PTR(c);
	return 0;
}

FLOWSDN_API const char *flowsdn_cni_conf_version(const struct flowsdn_cni_conf *c)
{
	return c ? c->version : NULL;
}

FLOWSDN_API const char *flowsdn_cni_conf_name(const struct flowsdn_cni_conf *c)
{
	return c ? c->name : NULL;
}

FLOWSDN_API const char *flowsdn_cni_conf_type(const struct flowsdn_cni_conf *c)
{
	return c ? c->type : NULL;
}

FLOWSDN_API const struct flowsdn_cni_result *flowsdn_cni_conf_prev_result(const struct flowsdn_cni_conf *c)
{
	return c ? c->prev : NULL;
}

FLOWSDN_API const struct flowsdn_cni_result *flowsdn_cni_conf_dns(const struct flowsdn_cni_conf *c)
{
	return c ? c->dns : NULL;
}

FLOWSDN_API enum flowsdn_cni_svc_translation flowsdn_cni_conf_svc_translation(const struct flowsdn_cni_conf *c)
{
	return c ? c->svc_translation : FLOWSDN_CNI_SVC_SOCKET;
}

FLOWSDN_API int flowsdn_cni_conf_get_string(const struct flowsdn_cni_conf *c, const char *key, const char **ret)
{
	const struct json_value *v;

	if (!c || !key || !ret)
		return -EINVAL;
	v = json_get(c->root, key);
	if (!v)
		return -ENOENT;
	if (!IS_STR(v) || !json_string_value(v)[0])
		return -FLOWSDN_E_CNI_CONFIG;
	*ret = json_string_value(v);
	return 0;
}

FLOWSDN_API int flowsdn_cni_conf_get_uint(const struct flowsdn_cni_conf *c, const char *key, unsigned long min,
					  unsigned long max, unsigned long *ret)
{
	const struct json_value *v;
	uint64_t u;

	if (!c || !key || !ret || min > max)
		return -EINVAL;
	v = json_get(c->root, key);
	if (!v)
		return -ENOENT;
	if (json_get_uint64(v, &u) < 0 || u < min || u > max)
		return -FLOWSDN_E_CNI_CONFIG;
	*ret = (unsigned long)u;
	return 0;
}

FLOWSDN_API bool flowsdn_cni_conf_has_attachments(const struct flowsdn_cni_conf *c)
{
	return c && c->has_attachments;
}

FLOWSDN_API size_t flowsdn_cni_conf_attachment_count(const struct flowsdn_cni_conf *c)
{
	return c ? c->n_att : 0;
}

FLOWSDN_API int flowsdn_cni_conf_attachment(const struct flowsdn_cni_conf *c, size_t i, const char **ret_container_id,
					    const char **ret_ifname)
{
	if (!c || !ret_container_id || !ret_ifname)
		return -EINVAL;
	if (i >= c->n_att)
		return -ERANGE;
	*ret_container_id = c->att[i].container_id;
	*ret_ifname = c->att[i].ifname;
	return 0;
}

/* ------------------------------------------------------------ conflist */

struct flowsdn_cni_conflist {
	struct json_value *root;
	const char *version, *name;
	bool disable_check;
	const struct json_value *plugins;
};

FLOWSDN_API void flowsdn_cni_conflist_free(struct flowsdn_cni_conflist *l)
{
	if (!l)
		return;
	json_free(l->root);
	free(l);
}

/* The configuration list's fields (CNI spec 1.1.0, "Configuration
 * format"); open like a network configuration.  cniVersion, cniVersions
 * and name are checked first (their messages name the version rules);
 * each plugin's own configuration is checked when it is derived. */
static const struct json_field conflist_fields[] = {
	{ "cniVersion", JSON_STRING, true, NULL, 0, NULL },
	{ "cniVersions", JSON_ARRAY, false, NULL, 0, NULL },
	{ "name", JSON_STRING, true, NULL, 0, NULL },
	{ "disableCheck", JSON_BOOL, false, json_read_bool, offsetof(struct flowsdn_cni_conflist, disable_check), NULL },
	{ "disableGC", JSON_BOOL, false, NULL, 0, NULL },
	{ "plugins", JSON_ARRAY, false, NULL, 0, NULL },
};

FLOWSDN_API int flowsdn_cni_conflist_parse(const char *json, size_t len, struct flowsdn_cni_conflist **ret,
					   struct flowsdn_diag *public_diag)
{
	struct diag *diag = flowsdn__diag(public_diag);
	_cleanup_(flowsdn_cni_conflist_freep) struct flowsdn_cni_conflist *l = NULL;
	const struct json_value *versions;
	int err;

	if (!json || !ret)
		return -EINVAL;
	diag_begin(diag, 0);
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	err = parse_versioned_object(json, len, "configuration list", diag, &l->root, &l->version);
	if (err < 0)
		return err;
	versions = json_get(l->root, "cniVersions");
	if (versions) {
		size_t best = 0;
		bool found = false;

		if (!IS_ARR(versions)) {
			diag_set(diag, "cniVersions: must be an array of strings");
			return -FLOWSDN_E_CNI_CONFIG;
		}
		for (size_t i = 0; i < versions->u.array.n; i++) {
			const struct json_value *s = versions->u.array.items[i];

			if (!IS_STR(s)) {
				diag_set(diag, "cniVersions[%zu]: must be a string", i);
				return -FLOWSDN_E_CNI_CONFIG;
			}
			if (flowsdn_cni_version_check(json_string_value(s)) == 0 &&
			    (!found || version_index(json_string_value(s)) > best)) {
				best = version_index(json_string_value(s));
				found = true;
			}
		}
		if (found)
			l->version = supported[best];
	}
	err = conf_version_name(l->root, l->version, diag, &l->name);
	if (err < 0)
		return err;
	err = conf_read_fields(l->root, conflist_fields, ARRAY_SIZE(conflist_fields), l, diag);
	if (err < 0)
		return err;
	l->plugins = json_get(l->root, "plugins");
	if (!IS_ARR(l->plugins) || l->plugins->u.array.n == 0) {
		diag_set(diag, "plugins: must be a non-empty array");
		return -FLOWSDN_E_CNI_CONFIG;
	}
	for (size_t i = 0; i < l->plugins->u.array.n; i++) {
		const struct json_value *p = l->plugins->u.array.items[i];
		char where[32];
		const char *type;

		snprintf(where, sizeof(where), "plugins[%zu].", i);
		if (!IS_OBJ(p)) {
			diag_set(diag, "plugins[%zu]: must be an object", i);
			return -FLOWSDN_E_CNI_CONFIG;
		}
		err = req_str(p, "type", where, diag, &type);
		if (err < 0)
			return err;
	}
	*ret = TAKE_PTR(l);
	return 0;
}

FLOWSDN_API const char *flowsdn_cni_conflist_version(const struct flowsdn_cni_conflist *l)
{
	return l ? l->version : NULL;
}

FLOWSDN_API const char *flowsdn_cni_conflist_name(const struct flowsdn_cni_conflist *l)
{
	return l ? l->name : NULL;
}

FLOWSDN_API bool flowsdn_cni_conflist_disable_check(const struct flowsdn_cni_conflist *l)
{
	return l && l->disable_check;
}

FLOWSDN_API size_t flowsdn_cni_conflist_plugin_count(const struct flowsdn_cni_conflist *l)
{
	return l ? l->plugins->u.array.n : 0;
}

FLOWSDN_API int flowsdn_cni_conflist_plugin_conf(const struct flowsdn_cni_conflist *l, size_t i,
						 const char *prev_result, char **ret_json)
{
	const struct json_value *p;
	struct json_value *prev = NULL;
	struct json_writer *g;
	int err;

	if (!l || !ret_json)
		return -EINVAL;
	if (i >= l->plugins->u.array.n)
		return -ERANGE;
	p = l->plugins->u.array.items[i];
	if (prev_result) {
		err = tree_parse(prev_result, strlen(prev_result), NULL, &prev);
		if (err < 0)
			return err;
	}
	g = json_writer_new(0);
	if (!g) {
		json_free(prev);
		return -ENOMEM;
	}
	jw_object_open(g);
	jw_string(g, "cniVersion");
	jw_string(g, l->version);
	jw_string(g, "name");
	jw_string(g, l->name);
	for (size_t k = 0; k < p->u.object.n; k++) {
		const char *key = p->u.object.members[k].key;

		if (!strcmp(key, "cniVersion") || !strcmp(key, "name") || !strcmp(key, "prevResult"))
			continue;
		jw_string(g, key);
		jw_value(g, p->u.object.members[k].value);
	}
	if (prev) {
		jw_string(g, "prevResult");
		jw_value(g, prev);
	}
	jw_object_close(g);
	err = json_writer_finish(g, ret_json, NULL);
	json_free(prev);
	return err;
}

/* --------------------------------------------------- environment, args */

FLOWSDN_API enum flowsdn_cni_command flowsdn_cni_command_parse(const char *text)
{
	static const struct {
		const char *name;
		enum flowsdn_cni_command cmd;
	} cmds[] = {
		{ "ADD", FLOWSDN_CNI_CMD_ADD },       { "DEL", FLOWSDN_CNI_CMD_DEL },
		{ "CHECK", FLOWSDN_CNI_CMD_CHECK },   { "STATUS", FLOWSDN_CNI_CMD_STATUS },
		{ "VERSION", FLOWSDN_CNI_CMD_VERSION }, { "GC", FLOWSDN_CNI_CMD_GC },
	};

	if (!text)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		if (strcmp(text, cmds[i].name) == 0)
			return cmds[i].cmd;
	return 0;
}

FLOWSDN_API bool flowsdn_cni_container_id_valid(const char *id)
{
	return names_container_id_valid(id);
}

FLOWSDN_API bool flowsdn_cni_ifname_valid(const char *name)
{
	return names_ifname_valid(name);
}

FLOWSDN_API int flowsdn_cni_env_read(const char *(*getenv_fn)(const char *name, void *userdata), void *userdata,
				     struct flowsdn_cni_env *ret, struct flowsdn_diag *public_diag)
{
	struct diag *diag = flowsdn__diag(public_diag);
	struct flowsdn_cni_env e = { 0 };
	const char *cmd;

	if (!getenv_fn || !ret)
		return -EINVAL;
	diag_begin(diag, 0);
	cmd = getenv_fn("CNI_COMMAND", userdata);
	if (!cmd || !cmd[0]) {
		diag_set(diag, "CNI_COMMAND is not set");
		return -FLOWSDN_E_CNI_ENV;
	}
	e.command = flowsdn_cni_command_parse(cmd);
	if (!e.command) {
		diag_set(diag, "CNI_COMMAND \"%.32s\" is not one of ADD, DEL, CHECK, STATUS, VERSION, GC", cmd);
		return -FLOWSDN_E_CNI_ENV;
	}
	e.container_id = getenv_fn("CNI_CONTAINERID", userdata);
	e.netns = getenv_fn("CNI_NETNS", userdata);
	e.ifname = getenv_fn("CNI_IFNAME", userdata);
	e.args = getenv_fn("CNI_ARGS", userdata);
	e.path = getenv_fn("CNI_PATH", userdata);
	if (e.command == FLOWSDN_CNI_CMD_ADD || e.command == FLOWSDN_CNI_CMD_DEL ||
	    e.command == FLOWSDN_CNI_CMD_CHECK) {
		if (!e.container_id || !e.container_id[0]) {
			diag_set(diag, "CNI_CONTAINERID is not set");
			return -FLOWSDN_E_CNI_ENV;
		}
		if (!flowsdn_cni_container_id_valid(e.container_id)) {
			diag_set(diag, "CNI_CONTAINERID \"%.64s\" must be 1..255 bytes matching ^[A-Za-z0-9][A-Za-z0-9_.-]*$",
				 e.container_id);
			return -FLOWSDN_E_CNI_CONTAINER_ID;
		}
		if (!e.ifname || !e.ifname[0]) {
			diag_set(diag, "CNI_IFNAME is not set");
			return -FLOWSDN_E_CNI_ENV;
		}
		if (!flowsdn_cni_ifname_valid(e.ifname)) {
			diag_set(diag, "CNI_IFNAME \"%.32s\" is not a valid interface name", e.ifname);
			return -FLOWSDN_E_CNI_IFNAME;
		}
		if (e.command != FLOWSDN_CNI_CMD_DEL && (!e.netns || !e.netns[0])) {
			diag_set(diag, "CNI_NETNS is not set");
			return -FLOWSDN_E_CNI_ENV;
		}
	}
	*ret = e;
	return 0;
}

struct arg_pair {
	char *key, *value;
};

struct flowsdn_cni_args {
	size_t n;
	struct arg_pair pair[MAX_ARGS];
	char *buf;
};

FLOWSDN_API void flowsdn_cni_args_free(struct flowsdn_cni_args *a)
{
	if (!a)
		return;
	free(a->buf);
	free(a);
}

static bool truthy(const char *v)
{
	return !strcasecmp(v, "1") || !strcasecmp(v, "true");
}

FLOWSDN_API int flowsdn_cni_args_parse(const char *text, const char *const *known, struct flowsdn_cni_args **ret,
				       struct flowsdn_diag *public_diag)
{
	struct diag *diag = flowsdn__diag(public_diag);
	_cleanup_(flowsdn_cni_args_freep) struct flowsdn_cni_args *a = NULL;
	bool ignore_unknown = false;
	char *save = NULL, *tok;

	if (!ret)
		return -EINVAL;
	diag_begin(diag, 0);
	if (text && strnlen(text, MAX_ARGS_SIZE + 1) > MAX_ARGS_SIZE) {
		diag_set(diag, "CNI_ARGS is longer than %u bytes", MAX_ARGS_SIZE);
		return -E2BIG;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->buf = strdup(text ? text : "");
	if (!a->buf)
		return -ENOMEM;
	for (tok = strtok_r(a->buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || eq == tok) {
			diag_set(diag, "CNI_ARGS: \"%.64s\" is not KEY=VALUE", tok);
			return -FLOWSDN_E_CNI_ARGS;
		}
		if (a->n >= MAX_ARGS) {
			diag_set(diag, "CNI_ARGS: more than %d pairs", MAX_ARGS);
			return -E2BIG;
		}
		*eq = '\0';
		a->pair[a->n].key = tok;
		a->pair[a->n].value = eq + 1;
		if (!strcmp(tok, "IgnoreUnknown")) {
			if (!truthy(eq + 1) && strcasecmp(eq + 1, "0") && strcasecmp(eq + 1, "false")) {
				diag_set(diag, "CNI_ARGS: IgnoreUnknown=\"%.16s\" is not a boolean", eq + 1);
				return -FLOWSDN_E_CNI_ARGS;
			}
			ignore_unknown = truthy(eq + 1);
		}
		a->n++;
	}
	if (!ignore_unknown) {
		for (size_t i = 0; i < a->n; i++) {
			bool ok = !strcmp(a->pair[i].key, "IgnoreUnknown");

			for (size_t k = 0; known && known[k] && !ok; k++)
				ok = !strcmp(a->pair[i].key, known[k]);
			if (!ok) {
				diag_set(diag, "CNI_ARGS: unknown key \"%.64s\" (set IgnoreUnknown=1 to allow)",
					 a->pair[i].key);
				return -FLOWSDN_E_CNI_ARGS;
			}
		}
	}
	*ret = TAKE_PTR(a);
	return 0;
}

FLOWSDN_API const char *flowsdn_cni_args_get(const struct flowsdn_cni_args *a, const char *key)
{
	if (!a || !key)
		return NULL;
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->pair[i].key, key))
			return a->pair[i].value;
	return NULL;
}

/* ----------------------------------------------------- plugin output */

FLOWSDN_API int flowsdn_cni_error_format(const char *version, unsigned int code, const char *msg, const char *details,
					 char **ret_json)
{
	struct json_writer *g;
	int err;

	if (!msg || !code || !ret_json)
		return -EINVAL;
	if (!version || flowsdn_cni_version_check(version) < 0)
		version = FLOWSDN_CNI_VERSION_LATEST;
	g = json_writer_new(0);
	if (!g)
		return -ENOMEM;
	jw_object_open(g);
	jw_string(g, "cniVersion");
	jw_string(g, version);
	jw_string(g, "code");
	jw_int(g, code);
	jw_string(g, "msg");
	jw_string(g, msg);
	if (details && details[0]) {
		jw_string(g, "details");
		jw_string(g, details);
	}
	jw_object_close(g);
	err = json_writer_finish(g, ret_json, NULL);
	return err;
}

FLOWSDN_API int flowsdn_cni_version_format(const char *version, char **ret_json)
{
	struct json_writer *g;
	int err;

	if (!ret_json)
		return -EINVAL;
	if (!version || flowsdn_cni_version_check(version) < 0)
		version = FLOWSDN_CNI_VERSION_LATEST;
	g = json_writer_new(0);
	if (!g)
		return -ENOMEM;
	jw_object_open(g);
	jw_string(g, "cniVersion");
	jw_string(g, version);
	jw_string(g, "supportedVersions");
	jw_array_open(g);
	for (size_t i = 0; i < ARRAY_SIZE(supported); i++)
		jw_string(g, supported[i]);
	jw_array_close(g);
	jw_object_close(g);
	err = json_writer_finish(g, ret_json, NULL);
	return err;
}
