/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flowsdn-agent configuration: defaults, strict JSON parsing, output. */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <flowsdn/common.h>
#include <flowsdn/netlink.h>

#include "agent-api.h"
#include "conf.h"
#include "diag.h"
#include "names.h"
#include "hostfw.h"
#include "json.h"
#include "services.h"
#include "util.h"

void agent_diag_set(struct diag *diag, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	diag_reset(diag);
	va_start(ap, fmt);
	diag_add_textv(diag, DIAG_ERROR, "", "agent-request", NULL, fmt, ap);
	va_end(ap);
}

const char *agent_diag_message(const struct diag *diag)
{
	const struct diag_entry *e = diag_first_error(diag);

	return e ? e->message : "";
}

static int set_str(char **dst, const char *s)
{
	char *c = strdup(s);

	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* A copy of the @n strings at @src into *@dst. */
static int dup_list(char ***dst, char *const *src, size_t n)
{
	char **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(v[i] = strdup(src[i]))) {
			free_list(v, i);
			return -ENOMEM;
		}
	*dst = v;
	return 0;
}

void agent_config_free(struct agent_config *c)
{
	if (!c)
		return;
	free_list(c->namespaces, c->n_namespaces);
	free_list(c->policies, c->n_policies);
	free(c->socket);
	free(c->state_dir);
	free(c->pin_dir);
	free(c->http_listen);
	free(c->socket_lb_cgroup);
	free(c->k8s_kubeconfig);
	free(c->k8s_context);
	free(c->k8s_node_name);
	agent_svc_list_unref(c->services);
	free(c);
}

int agent_config_new(struct agent_config **ret)
{
	struct agent_config *c;
	int err = 0;

	if (!ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	err = set_str(&c->socket, AGENT_API_SOCKET);
	if (!err)
		err = set_str(&c->state_dir, AGENT_API_STATE_DIR);
	if (!err)
		err = set_str(&c->pin_dir, "/sys/fs/bpf/flowsdn");
	if (!err)
		err = set_str(&c->http_listen, "");
	if (!err)
		err = set_str(&c->socket_lb_cgroup, "auto");
	if (err) {
		agent_config_free(c);
		return err;
	}
	if (flowsdn_prefix_parse("10.244.0.0/16", 13, NULL, &c->pools[0]) < 0 ||
	    flowsdn_prefix_parse("fd00:10:244::/112", 17, NULL, &c->pools[1]) < 0) {
		agent_config_free(c);
		return -EINVAL;
	}
	c->n_pools = 2;
	c->datapath = true;
	c->egress_stack = false;
	/* tc clsact by default: creating a TCX link costs 10-15 ms per hook
	 * (the kernel waits for an RCU grace period), a tc filter 0.1 ms, and
	 * both outlive the agent; "attach-mode": "tcx" or "auto" choose TCX. */
	c->attach_mode = 2;
	c->mtu = 1500;
	c->max_connections = 64;
	c->reserved_connections = 8; /* max-connections/8, at least 1 */
	c->header_timeout_ms = 2000;
	c->max_request_bytes = 65536;
	c->request_timeout_s = 10;
	c->ct_max = FLOWSDN_CT_DEFAULT_MAX;
	c->ct_gc_interval_s = 30;
	c->snat_port_min = 61000;
	c->snat_port_max = 65535;
	c->ct_timeouts = (struct flowsdn_ct_timeouts){ .tcp = FLOWSDN_CT_TIMEOUT_TCP,
						       .tcp_syn = FLOWSDN_CT_TIMEOUT_TCP_SYN,
						       .tcp_close = FLOWSDN_CT_TIMEOUT_TCP_CLOSE,
						       .udp = FLOWSDN_CT_TIMEOUT_UDP,
						       .udp_replied = FLOWSDN_CT_TIMEOUT_UDP_REPLIED,
						       .icmp = FLOWSDN_CT_TIMEOUT_ICMP };
	*ret = c;
	return 0;
}

int agent_config_load(const char *path, struct agent_config **ret, struct diag *diag)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int err;

	if (!path || !ret)
		return -EINVAL;
	diag_begin(diag, 0);
	/* Room for the most services (65536) a configuration may declare. */
	err = util_read_file(path, 32u << 20, &data, &len);
	if (err < 0) {
		diag_add_text(diag, DIAG_ERROR, "", "read", NULL, "%s: %s", path, util_read_strerror(err));
		return err;
	}
	return agent_config_parse(data, len, ret, diag);
}

/* A path of at most 107 bytes (sun_path): absolute, or for an optional
 * one (@arg non-NULL) possibly empty. */
static int read_path(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	bool may_be_empty = arg != NULL;
	const char *s;
	int r = json_read_strref(ctx, v, &s, NULL);

	if (r < 0)
		return r;
	if ((!may_be_empty && s[0] != '/') || strlen(s) >= 108) {
		check_error(ctx, "path", v, "must be %s (at most 107 bytes)", may_be_empty ? "a string" : "an absolute path");
		return JSON_READ_REPORTED;
	}
	return json_read_string(ctx, v, dst, NULL);
}

static int read_listen(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	char **listen = dst;
	struct flowsdn_addr a;
	uint16_t port;
	int r = read_path(ctx, v, dst, arg);

	if (r < 0 || !(*listen)[0])
		return r;
	r = agent_config_parse_listen(*listen, &a, &port);
	if (r == -EPERM)
		check_error(ctx, "listen", v, "\"%s\" is not a loopback address", *listen);
	else if (r < 0)
		check_error(ctx, "listen", v, "\"%s\" is not ADDRESS:PORT", *listen);
	return r < 0 ? JSON_READ_REPORTED : 0;
}

static int read_pools(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct agent_config *c = dst;
	struct flowsdn_prefix pools[AGENT_MAX_POOLS];

	(void)arg;
	if (v->u.array.n == 0 || v->u.array.n > AGENT_MAX_POOLS) {
		check_error(ctx, "pools", v, "must be an array of 1 to %d prefixes", AGENT_MAX_POOLS);
		return JSON_READ_REPORTED;
	}
	for (size_t p = 0; p < v->u.array.n; p++) {
		const struct json_value *item = v->u.array.items[p];
		const char *s;

		if (json_get_string(item, &s) < 0 || flowsdn_prefix_parse(s, strlen(s), NULL, &pools[p]) < 0) {
			size_t saved = json_path_push_index(&ctx->path, p);

			check_error(ctx, "prefix", item, "not a prefix with host bits clear");
			json_path_pop(&ctx->path, saved);
			return JSON_READ_REPORTED;
		}
	}
	memcpy(c->pools, pools, v->u.array.n * sizeof(pools[0]));
	c->n_pools = v->u.array.n;
	return 0;
}

/* "namespaces" or "policies" (@arg "namespaces" checks each item's
 * shape): an array of objects, each kept as its JSON text.  Policies are
 * validated when the agent applies them (the API server's messages). */
static int read_objects_text(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct agent_config *c = dst;
	bool ns = arg != NULL;
	char **list;
	size_t n = v->u.array.n;

	if (n > 100000) {
		check_error(ctx, "maximum", v, "at most 100000 items");
		return JSON_READ_REPORTED;
	}
	list = calloc(n + 1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct json_value *it = v->u.array.items[i];
		const struct json_value *name = json_is(it, JSON_OBJECT) ? json_get(it, "name") : NULL;
		const struct json_value *labels = name ? json_get(it, "labels") : NULL;
		struct json_writer *w;

		if (!json_is(it, JSON_OBJECT) ||
		    (ns && (!json_is(name, JSON_STRING) || (labels && !json_is(labels, JSON_OBJECT)) ||
			    it->u.object.n != 1u + (labels != NULL)))) {
			size_t saved = json_path_push_index(&ctx->path, i);

			check_error(ctx, "type", it, ns ? "must be {\"name\": NAME, \"labels\": {...}}"
							: "must be a NetworkPolicy object");
			json_path_pop(&ctx->path, saved);
			free_list(list, i);
			return JSON_READ_REPORTED;
		}
		w = json_writer_new(0);
		jw_value(w, it);
		if (json_writer_finish(w, &list[i], NULL) < 0) {
			free_list(list, i);
			return -ENOMEM;
		}
	}
	if (ns) {
		free_list(c->namespaces, c->n_namespaces);
		c->namespaces = list;
		c->n_namespaces = n;
	} else {
		free_list(c->policies, c->n_policies);
		c->policies = list;
		c->n_policies = n;
	}
	return 0;
}

static int read_node_addrs(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct agent_config *c = dst;
	struct flowsdn_addr addrs[AGENT_MAX_NODE_ADDRS];

	(void)arg;
	if (v->u.array.n > AGENT_MAX_NODE_ADDRS) {
		check_error(ctx, "node-addresses", v, "at most %d addresses", AGENT_MAX_NODE_ADDRS);
		return JSON_READ_REPORTED;
	}
	for (size_t i = 0; i < v->u.array.n; i++) {
		const struct json_value *item = v->u.array.items[i];
		const char *s;

		if (json_get_string(item, &s) < 0 || flowsdn_addr_parse(s, strlen(s), &addrs[i]) < 0) {
			size_t saved = json_path_push_index(&ctx->path, i);

			check_error(ctx, "address", item, "not an IPv4 or IPv6 address");
			json_path_pop(&ctx->path, saved);
			return JSON_READ_REPORTED;
		}
	}
	memcpy(c->node_addrs, addrs, v->u.array.n * sizeof(addrs[0]));
	c->n_node_addrs = v->u.array.n;
	return 0;
}

/* "auto", "" or an absolute path. */
static int read_cgroup(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const char *s;
	int r = json_read_strref(ctx, v, &s, NULL);

	if (r < 0)
		return r;
	if (s[0] && strcmp(s, "auto") != 0 && (s[0] != '/' || strlen(s) >= 4096)) {
		check_error(ctx, "path", v, "must be \"auto\", \"\" or an absolute path");
		return JSON_READ_REPORTED;
	}
	return json_read_string(ctx, v, dst, arg);
}

static const char *const egress_words[] = { "fib", "stack", NULL };
static const char *const attach_words[] = { "auto", "tcx", "tc", NULL };

/* One of the NULL-terminated @words, as its index; @expected says them. */
static int read_word(struct check_ctx *ctx, const struct json_value *v, const char *const *words,
		     const char *expected, unsigned int *ret)
{
	const char *s;
	int r = json_read_strref(ctx, v, &s, NULL);

	if (r < 0)
		return r;
	for (unsigned int i = 0; words[i]; i++) {
		if (strcmp(s, words[i]) == 0) {
			*ret = i;
			return 0;
		}
	}
	check_error(ctx, "enum", v, "must be %s", expected);
	return JSON_READ_REPORTED;
}

static int read_egress(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	unsigned int i = 0;
	int r = read_word(ctx, v, egress_words, "\"fib\" or \"stack\"", &i);

	(void)arg;
	if (r == 0)
		*(bool *)dst = i == 1;
	return r;
}

static int read_attach(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	(void)arg;
	return read_word(ctx, v, attach_words, "\"auto\", \"tcx\" or \"tc\"", dst);
}

static int read_hostfw(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	(void)arg;
	return read_word(ctx, v, agent_hostfw_mode_words, AGENT_HOSTFW_MODE_EXPECTED, dst);
}

static int read_uplinks(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct agent_config *c = (struct agent_config *)((char *)dst - offsetof(struct agent_config, uplinks));
	char names[AGENT_MAX_UPLINKS][16];

	(void)arg;
	if (v->u.array.n > AGENT_MAX_UPLINKS) {
		check_error(ctx, "uplink-interfaces", v, "at most %d interfaces", AGENT_MAX_UPLINKS);
		return JSON_READ_REPORTED;
	}
	for (size_t i = 0; i < v->u.array.n; i++) {
		const char *s = NULL;

		if (json_get_string(v->u.array.items[i], &s) < 0 || !flowsdn_netlink_ifname_valid(s)) {
			check_error(ctx, "uplink-interfaces", v, "item %zu: must be an interface name", i);
			return JSON_READ_REPORTED;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(names[j], s)) {
				check_error(ctx, "uplink-interfaces", v, "\"%s\" twice", s);
				return JSON_READ_REPORTED;
			}
		snprintf(names[i], sizeof(names[i]), "%s", s);
	}
	memcpy(c->uplinks, names, sizeof(names[0]) * v->u.array.n);
	c->n_uplinks = v->u.array.n;
	return 0;
}

static int read_node_name(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const char *s;
	int r = json_read_strref(ctx, v, &s, NULL);

	(void)arg;
	if (r < 0)
		return r;
	if (!names_dns_subdomain_valid(s)) {
		check_error(ctx, "node-name", v, "must be a node name (a DNS subdomain)");
		return JSON_READ_REPORTED;
	}
	return json_read_string(ctx, v, dst, NULL);
}

static int read_context(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const char *s;
	int r = json_read_strref(ctx, v, &s, NULL);

	(void)arg;
	if (r < 0)
		return r;
	if (!s[0] || strlen(s) > 253) {
		check_error(ctx, "context", v, "must be a kubeconfig context name (1-253 bytes)");
		return JSON_READ_REPORTED;
	}
	return json_read_string(ctx, v, dst, NULL);
}

#define K(name, fn, field) { name, JSON_STRING, false, fn, offsetof(struct agent_config, field), NULL }
static const struct json_field k8s_fields[] = {
	K("context", read_context, k8s_context),
	K("kubeconfig", read_path, k8s_kubeconfig),
	K("nodeName", read_node_name, k8s_node_name),
};
#undef K
static const struct json_table k8s_table = { k8s_fields, ARRAY_SIZE(k8s_fields), 0 };

/* "kubernetes": the object's keys, and Kubernetes mode on. */
static int read_kubernetes(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct agent_config *c = dst;

	(void)arg;
	c->kubernetes = true;
	return json_read_nested(ctx, v, dst, &k8s_table);
}

static const struct json_int_range mtu_range = { 1280, 65535 }, conn_range = { 2, 1024 },
				   reserve_range = { 1, 512 }, head_range = { 10, 60000 },
				   req_range = { 1024, 1 << 20 }, timeout_range = { 1, 600 },
				   ct_max_range = { 1024, 1 << 24 }, ct_gc_range = { 1, 3600 },
				   ct_timeout_range = { 1, 7 * 86400 }, snat_range = { 1024, 65535 };
static const char optional[] = "";

/* flowsdn-agent.conf(5), one row per key. */
#define F(name, type, fn, field, arg) { name, type, false, fn, offsetof(struct agent_config, field), arg }
static const struct json_field config_fields[] = {
	F("attach-mode", JSON_STRING, read_attach, attach_mode, NULL),
	F("bpf-pin-dir", JSON_STRING, read_path, pin_dir, NULL),
	F("conntrack-gc-interval-seconds", JSON_NUMBER, json_read_uint32, ct_gc_interval_s, &ct_gc_range),
	F("conntrack-max", JSON_NUMBER, json_read_uint32, ct_max, &ct_max_range),
	F("conntrack-timeout-icmp-seconds", JSON_NUMBER, json_read_uint32, ct_timeouts.icmp, &ct_timeout_range),
	F("conntrack-timeout-tcp-close-seconds", JSON_NUMBER, json_read_uint32, ct_timeouts.tcp_close,
	  &ct_timeout_range),
	F("conntrack-timeout-tcp-seconds", JSON_NUMBER, json_read_uint32, ct_timeouts.tcp, &ct_timeout_range),
	F("conntrack-timeout-tcp-syn-seconds", JSON_NUMBER, json_read_uint32, ct_timeouts.tcp_syn, &ct_timeout_range),
	F("conntrack-timeout-udp-replied-seconds", JSON_NUMBER, json_read_uint32, ct_timeouts.udp_replied,
	  &ct_timeout_range),
	F("conntrack-timeout-udp-seconds", JSON_NUMBER, json_read_uint32, ct_timeouts.udp, &ct_timeout_range),
	F("datapath", JSON_BOOL, json_read_bool, datapath, NULL),
	F("egress-mode", JSON_STRING, read_egress, egress_stack, NULL),
	F("header-timeout-ms", JSON_NUMBER, json_read_uint32, header_timeout_ms, &head_range),
	F("host-firewall", JSON_STRING, read_hostfw, host_firewall, NULL),
	F("http-listen", JSON_STRING, read_listen, http_listen, optional),
	{ "kubernetes", JSON_OBJECT, false, read_kubernetes, 0, NULL },
	F("max-connections", JSON_NUMBER, json_read_uint32, max_connections, &conn_range),
	F("max-request-bytes", JSON_NUMBER, json_read_uint32, max_request_bytes, &req_range),
	F("mtu", JSON_NUMBER, json_read_uint32, mtu, &mtu_range),
	{ "namespaces", JSON_ARRAY, false, read_objects_text, 0, "namespaces" },
	{ "node-addresses", JSON_ARRAY, false, read_node_addrs, 0, NULL },
	{ "policies", JSON_ARRAY, false, read_objects_text, 0, NULL },
	{ "pools", JSON_ARRAY, false, read_pools, 0, NULL },
	F("reserved-connections", JSON_NUMBER, json_read_uint32, reserved_connections, &reserve_range),
	F("request-timeout-seconds", JSON_NUMBER, json_read_uint32, request_timeout_s, &timeout_range),
	F("services", JSON_ARRAY, agent_services_read_config, services, NULL),
	F("snat-port-max", JSON_NUMBER, json_read_uint32, snat_port_max, &snat_range),
	F("snat-port-min", JSON_NUMBER, json_read_uint32, snat_port_min, &snat_range),
	F("socket", JSON_STRING, read_path, socket, NULL),
	F("socket-lb-cgroup", JSON_STRING, read_cgroup, socket_lb_cgroup, NULL),
	F("state-dir", JSON_STRING, read_path, state_dir, NULL),
	{ "uplink-interfaces", JSON_ARRAY, false, read_uplinks, offsetof(struct agent_config, uplinks), NULL },
};
#undef F

/* Checks "ADDR:PORT" / "[ADDR6]:PORT" on a loopback address. */
int agent_config_parse_listen(const char *text, struct flowsdn_addr *ret_addr, uint16_t *ret_port)
{
	const char *colon, *host;
	size_t host_len;
	struct flowsdn_addr a;
	char *end;
	unsigned long port;

	if (!text || !text[0])
		return -EINVAL;
	if (text[0] == '[') {
		const char *rb = strchr(text, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		host = text + 1;
		host_len = (size_t)(rb - host);
		colon = rb + 1;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return -EINVAL;
		host = text;
		host_len = (size_t)(colon - text);
	}
	if (flowsdn_addr_parse(host, host_len, &a) < 0)
		return -EINVAL;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || colon[1] < '1' || colon[1] > '9' || port > 65535)
		return -EINVAL;
	if (!(flowsdn_addr_classify(&a) & FLOWSDN_ADDR_LOOPBACK))
		return -EPERM;
	*ret_addr = a;
	*ret_port = (uint16_t)port;
	return 0;
}

/* The reserve defaults to a eighth of max-connections (at least 1) and
 * must leave at least one connection for other requests. */
static int config_check_reserve(struct agent_config *c, struct diag *diag)
{
	if (!c->reserved_connections)
		c->reserved_connections = c->max_connections / 8 ? c->max_connections / 8 : 1;
	if (c->reserved_connections >= c->max_connections) {
		diag_add_text(diag, DIAG_ERROR, "reserved-connections", "maximum", NULL,
			      "must be less than max-connections (%u), is %u", c->max_connections,
			      c->reserved_connections);
		return -FLOWSDN_E_AGENT_CONFIG;
	}
	return 0;
}

int agent_config_parse(const char *json, size_t len, struct agent_config **ret, struct diag *diag)
{
	struct agent_config *c = NULL;
	struct json_value *root = NULL;
	struct check_ctx ctx;
	int err;

	if (!json || !ret)
		return -EINVAL;
	diag_begin(diag, 0);
	err = json_parse_diag(json, len, NULL, -FLOWSDN_E_AGENT_CONFIG, &root, diag);
	if (err < 0)
		return err;
	err = agent_config_new(&c);
	if (err < 0)
		goto out;
	check_ctx_init(&ctx, diag);
	c->reserved_connections = 0; /* not given: follows max-connections */
	err = json_read_object(&ctx, root, config_fields, ARRAY_SIZE(config_fields), c);
	if (err == JSON_READ_REPORTED)
		err = -FLOWSDN_E_AGENT_CONFIG;
	if (err == 0)
		err = config_check_reserve(c, diag);
	if (err == 0 && c->snat_port_min > c->snat_port_max) {
		diag_add_text(diag, DIAG_ERROR, "snat-port-min", "maximum", NULL, "must not exceed snat-port-max (%u), is %u",
			      c->snat_port_max, c->snat_port_min);
		err = -FLOWSDN_E_AGENT_CONFIG;
	}
out:
	json_free(root);
	if (err < 0)
		agent_config_free(c);
	else
		*ret = c;
	return err;
}

int agent_config_format(const struct agent_config *c, char **ret_json)
{
	struct json_writer *w;

	if (!c || !ret_json)
		return -EINVAL;
	w = json_writer_new(JSON_WRITE_PRETTY | JSON_WRITE_NEWLINE);
	jw_object_open(w);
	jw_kv_string(w, "socket", c->socket);
	jw_kv_string(w, "state-dir", c->state_dir);
	jw_kv_string(w, "bpf-pin-dir", c->pin_dir);
	jw_kv_string(w, "http-listen", c->http_listen);
	jw_key(w, "pools");
	jw_array_open(w);
	for (size_t i = 0; i < c->n_pools; i++) {
		char buf[FLOWSDN_PREFIX_STRLEN];

		if (flowsdn_prefix_format(&c->pools[i], buf, sizeof(buf)) >= 0)
			jw_string(w, buf);
	}
	jw_array_close(w);
	jw_kv_bool(w, "datapath", c->datapath);
	jw_kv_string(w, "egress-mode", egress_words[c->egress_stack ? 1 : 0]);
	jw_kv_string(w, "attach-mode", attach_words[c->attach_mode % 3]);
	jw_kv_uint(w, "mtu", c->mtu);
	jw_kv_uint(w, "max-connections", c->max_connections);
	jw_kv_uint(w, "reserved-connections", c->reserved_connections);
	jw_kv_uint(w, "header-timeout-ms", c->header_timeout_ms);
	jw_kv_uint(w, "max-request-bytes", c->max_request_bytes);
	jw_kv_uint(w, "request-timeout-seconds", c->request_timeout_s);
	jw_key(w, "node-addresses");
	jw_array_open(w);
	for (size_t i = 0; i < c->n_node_addrs; i++) {
		char buf[FLOWSDN_ADDR_STRLEN];

		if (flowsdn_addr_format(&c->node_addrs[i], buf, sizeof(buf)) >= 0)
			jw_string(w, buf);
	}
	jw_array_close(w);
	jw_kv_string(w, "socket-lb-cgroup", c->socket_lb_cgroup);
	jw_key(w, "services");
	agent_svc_list_gen(c->services, w);
	jw_key(w, "uplink-interfaces");
	jw_array_open(w);
	for (size_t i = 0; i < c->n_uplinks; i++)
		jw_string(w, c->uplinks[i]);
	jw_array_close(w);
	jw_kv_uint(w, "snat-port-min", c->snat_port_min);
	jw_kv_uint(w, "snat-port-max", c->snat_port_max);
	jw_kv_string(w, "host-firewall", agent_hostfw_mode_name(c->host_firewall));
	if (c->kubernetes) {
		jw_key(w, "kubernetes");
		jw_object_open(w);
		if (c->k8s_kubeconfig)
			jw_kv_string(w, "kubeconfig", c->k8s_kubeconfig);
		if (c->k8s_context)
			jw_kv_string(w, "context", c->k8s_context);
		if (c->k8s_node_name)
			jw_kv_string(w, "nodeName", c->k8s_node_name);
		jw_object_close(w);
	}
	jw_kv_uint(w, "conntrack-max", c->ct_max);
	jw_kv_uint(w, "conntrack-gc-interval-seconds", c->ct_gc_interval_s);
	jw_kv_uint(w, "conntrack-timeout-tcp-seconds", c->ct_timeouts.tcp);
	jw_kv_uint(w, "conntrack-timeout-tcp-syn-seconds", c->ct_timeouts.tcp_syn);
	jw_kv_uint(w, "conntrack-timeout-tcp-close-seconds", c->ct_timeouts.tcp_close);
	jw_kv_uint(w, "conntrack-timeout-udp-seconds", c->ct_timeouts.udp);
	jw_kv_uint(w, "conntrack-timeout-udp-replied-seconds", c->ct_timeouts.udp_replied);
	jw_kv_uint(w, "conntrack-timeout-icmp-seconds", c->ct_timeouts.icmp);
	jw_key(w, "namespaces");
	jw_array_open(w);
	for (size_t i = 0; i < c->n_namespaces; i++)
		jw_raw(w, c->namespaces[i], strlen(c->namespaces[i]));
	jw_array_close(w);
	jw_key(w, "policies");
	jw_array_open(w);
	for (size_t i = 0; i < c->n_policies; i++)
		jw_raw(w, c->policies[i], strlen(c->policies[i]));
	jw_array_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret_json, NULL);
}

/* Copies @src into a new configuration. */
int agent_config_dup(const struct agent_config *src, struct agent_config **ret)
{
	struct agent_config *c;
	int err;

	err = agent_config_new(&c);
	if (err < 0)
		return err;
	err = set_str(&c->socket, src->socket);
	if (!err)
		err = set_str(&c->state_dir, src->state_dir);
	if (!err)
		err = set_str(&c->pin_dir, src->pin_dir);
	if (!err)
		err = set_str(&c->http_listen, src->http_listen);
	if (!err)
		err = set_str(&c->socket_lb_cgroup, src->socket_lb_cgroup);
	if (!err && src->k8s_kubeconfig)
		err = set_str(&c->k8s_kubeconfig, src->k8s_kubeconfig);
	if (!err && src->k8s_context)
		err = set_str(&c->k8s_context, src->k8s_context);
	if (!err && src->k8s_node_name)
		err = set_str(&c->k8s_node_name, src->k8s_node_name);
	if (err) {
		agent_config_free(c);
		return err;
	}
	c->services = agent_svc_list_ref(src->services);
	memcpy(c->pools, src->pools, sizeof(c->pools));
	c->n_pools = src->n_pools;
	c->datapath = src->datapath;
	c->egress_stack = src->egress_stack;
	c->attach_mode = src->attach_mode;
	c->mtu = src->mtu;
	c->max_connections = src->max_connections;
	c->reserved_connections = src->reserved_connections;
	c->header_timeout_ms = src->header_timeout_ms;
	c->max_request_bytes = src->max_request_bytes;
	c->request_timeout_s = src->request_timeout_s;
	memcpy(c->node_addrs, src->node_addrs, sizeof(c->node_addrs));
	c->n_node_addrs = src->n_node_addrs;
	c->ct_max = src->ct_max;
	memcpy(c->uplinks, src->uplinks, sizeof(c->uplinks));
	c->n_uplinks = src->n_uplinks;
	c->snat_port_min = src->snat_port_min;
	c->snat_port_max = src->snat_port_max;
	c->host_firewall = src->host_firewall;
	c->kubernetes = src->kubernetes;
	c->ct_gc_interval_s = src->ct_gc_interval_s;
	c->ct_timeouts = src->ct_timeouts;
	if (dup_list(&c->namespaces, src->namespaces, src->n_namespaces) < 0 ||
	    dup_list(&c->policies, src->policies, src->n_policies) < 0) {
		agent_config_free(c);
		return -ENOMEM;
	}
	c->n_namespaces = src->n_namespaces;
	c->n_policies = src->n_policies;
	*ret = c;
	return 0;
}
