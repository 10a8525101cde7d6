/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operator configuration (flash-operator.conf(5)): JSON, every key
 * optional, unknown keys refused, every CIDR through <flowsdn/addr.h>.
 * The format is a set of field tables read by json_read_object(); each
 * problem is reported with its path, and one pass reports them all.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "internal.h"
#include "json.h"
#include "names.h"
#include "render-internal.h"

/* Reports a problem at the current path; returns JSON_READ_REPORTED. */
static int bad(struct check_ctx *ctx, const char *fmt, ...) _printf_(2, 3);
static int bad(struct check_ctx *ctx, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	check_error(ctx, "config", NULL, "%s", msg);
	return JSON_READ_REPORTED;
}

enum str_rule {
	STR_ANY, STR_DNS_LABEL, STR_DNS_SUBDOMAIN, STR_LABEL_KEY, STR_LABEL_VALUE, STR_PATH, STR_IMAGE, STR_BASE64,
	STR_LISTEN,
};

/* Standard base64 (RFC 4648 section 4, padded), at most 64 KiB. */
static bool base64_ok(const char *s)
{
	size_t len = strlen(s), pad = 0;

	if (len == 0 || len % 4 || len > 65536)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '=') {
			if (i < len - 2)
				return false;
			pad++;
		} else if (pad || !(isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '/')) {
			return false;
		}
	}
	return true;
}

/* ADDRESS:PORT or [V6]:PORT, the address a literal (checked again when
 * the operator binds it). */
static bool listen_ok(const char *s)
{
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port;

	if (!colon || colon == s || strlen(s) > 64)
		return false;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || colon[1] == '\0' || colon[1] == '-' || port > 65535)
		return false;
	return strspn(s, "0123456789abcdefABCDEF.:[]") == strlen(s);
}

static bool string_ok(enum str_rule rule, const char *s)
{
	switch (rule) {
	case STR_DNS_LABEL: return names_dns_label_valid(s);
	case STR_DNS_SUBDOMAIN: return names_dns_subdomain_valid(s);
	case STR_LABEL_KEY: return names_label_key_valid(s);
	case STR_LABEL_VALUE: return names_label_value_valid(s);
	case STR_PATH:
		return s[0] == '/' && strlen(s) < 4096 && !strstr(s, "/../") && strcmp(s, "/") != 0 &&
		       !(strlen(s) >= 3 && strcmp(s + strlen(s) - 3, "/..") == 0) && strcmp(s, "/root") != 0;
	case STR_IMAGE: return s[0] && strlen(s) <= 512 && !strpbrk(s, " \t\n");
	case STR_BASE64: return base64_ok(s);
	case STR_LISTEN: return listen_ok(s);
	case STR_ANY: break;
	}
	return s[0] != '\0' && strlen(s) <= 253;
}

/* A string of the rule in @arg (an enum str_rule cast to a pointer's
 * worth of rules below), copied into the char * at @dst. */
static const enum str_rule rules[] = { STR_ANY, STR_DNS_LABEL, STR_DNS_SUBDOMAIN, STR_LABEL_KEY,
				       STR_LABEL_VALUE, STR_PATH, STR_IMAGE, STR_BASE64, STR_LISTEN };
#define RULE(r) (&rules[r])

static int read_name(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	static const char *const what[] = {
		[STR_ANY] = "a non-empty string of at most 253 bytes",
		[STR_DNS_LABEL] = "a DNS label (RFC 1123: a-z, 0-9, '-', at most 63)",
		[STR_DNS_SUBDOMAIN] = "a DNS subdomain (RFC 1123, at most 253)",
		[STR_LABEL_KEY] = "a label key ([prefix/]name)",
		[STR_LABEL_VALUE] = "a label value (at most 63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends)",
		[STR_PATH] = "an absolute path without \"..\" other than / and /root",
		[STR_IMAGE] = "an image reference without spaces",
		[STR_BASE64] = "base64 (RFC 4648, padded) of at most 64 KiB",
		[STR_LISTEN] = "ADDRESS:PORT or [ADDRESS]:PORT",
	};
	enum str_rule rule = *(const enum str_rule *)arg;
	const char *s;
	int r = json_read_strref(ctx, v, &s, NULL);

	if (r < 0)
		return r;
	if (!string_ok(rule, s))
		return bad(ctx, "\"%s\" is not %s", s, what[rule]);
	return json_read_string(ctx, v, dst, NULL);
}

/* An array of at most *(size_t *)arg CIDRs into the struct prefix_list at @dst. */
static int read_prefixes(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct prefix_list *list = dst;
	size_t max = *(const size_t *)arg, errors = ctx->errors;
	struct flowsdn_prefix *out;
	FLOWSDN_OPTS(flowsdn_prefix_opts, popts, .flags = FLOWSDN_PREFIX_ALLOW_HOST);

	if (v->u.array.n > max)
		return bad(ctx, "has %zu entries, at most %zu allowed", v->u.array.n, max);
	out = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.array.n; i++) {
		const char *s;
		size_t saved = json_path_push_index(&ctx->path, i);
		int r;

		if (json_get_string(v->u.array.items[i], &s) < 0) {
			bad(ctx, "must be a CIDR string");
		} else {
			r = flowsdn_prefix_parse(s, strlen(s), &popts, &out[i]);
			if (r < 0)
				bad(ctx, "\"%s\" is not a CIDR: %s", s, flowsdn_strerror(r));
		}
		json_path_pop(&ctx->path, saved);
	}
	if (ctx->errors > errors) {
		free(out);
		return JSON_READ_REPORTED;
	}
	free(list->v);
	list->v = out;
	list->n = v->u.array.n;
	return 0;
}

static void free_labels(struct label_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].value);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* An object of at most 16 label keys to values into the struct label_list at @dst. */
static int read_labels(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct label_list out = { NULL, 0 };
	size_t errors = ctx->errors;
	int r = 0;

	(void)arg;
	if (v->u.object.n > 16)
		return bad(ctx, "has %zu labels, at most 16 allowed", v->u.object.n);
	out.v = calloc(v->u.object.n ? v->u.object.n : 1, sizeof(*out.v));
	if (!out.v)
		return -ENOMEM;
	for (; out.n < v->u.object.n && (r >= 0 || r == JSON_READ_REPORTED); out.n++) {
		const struct json_member *m = &v->u.object.members[out.n];
		size_t saved = json_path_push_key(&ctx->path, m->key);

		if (!names_label_key_valid(m->key))
			r = bad(ctx, "\"%s\" is not a label key", m->key);
		else if (!(out.v[out.n].key = strdup(m->key)))
			r = -ENOMEM;
		else
			r = read_name(ctx, m->value, &out.v[out.n].value, RULE(STR_LABEL_VALUE));
		json_path_pop(&ctx->path, saved);
	}
	if ((r < 0 && r != JSON_READ_REPORTED) || ctx->errors > errors) {
		free_labels(&out);
		return r < 0 && r != JSON_READ_REPORTED ? r : JSON_READ_REPORTED;
	}
	free_labels(dst);
	*(struct label_list *)dst = out;
	return 0;
}

static const struct json_int_range port_range = { 1, 65535 };
static const struct json_int_range exec_sessions_range = { 1, 1024 };
static const struct json_int_range exec_limit_range = { 1, 86400 };
static const struct json_int_range as_period_range = { 1, 3600 };
static const struct json_int_range as_window_range = { 0, 3600 };
static const struct json_int_range as_tolerance_range = { 0, 99 };
static const struct json_int_range sb_pool_range = { 0, 64 };
static const struct json_int_range sb_cpu_range = { 1, 64000 };
static const struct json_int_range sb_mem_range = { 4, 1048576 };

/* runtime.dns: at most 3 addresses (resolv.conf's MAXNS), kept as one
 * comma-separated string, the form --dns takes. */
static int read_dns_servers(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	char **out = dst, *joined = NULL;
	size_t errors = ctx->errors, len = 0;

	(void)arg;
	if (v->u.array.n == 0 || v->u.array.n > 3)
		return bad(ctx, "must hold 1 to 3 addresses, not %zu", v->u.array.n);
	for (size_t i = 0; i < v->u.array.n; i++) {
		FLOWSDN_OPTS(flowsdn_prefix_opts, popts, .flags = FLOWSDN_PREFIX_ALLOW_HOST);
		struct flowsdn_prefix pfx;
		size_t saved = json_path_push_index(&ctx->path, i);
		const char *s;

		if (json_get_string(v->u.array.items[i], &s) < 0)
			bad(ctx, "must be an address string");
		else if (flowsdn_prefix_parse(s, strlen(s), &popts, &pfx) < 0 || strchr(s, '/'))
			bad(ctx, "\"%s\" is not an IP address", s);
		json_path_pop(&ctx->path, saved);
	}
	if (ctx->errors > errors)
		return JSON_READ_REPORTED;
	for (size_t i = 0; i < v->u.array.n; i++)
		len += strlen(json_string_value(v->u.array.items[i])) + 1;
	joined = calloc(1, len);
	if (!joined)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.array.n; i++) {
		if (i)
			strcat(joined, ",");
		strcat(joined, json_string_value(v->u.array.items[i]));
	}
	free(*out);
	*out = joined;
	return 0;
}

/* The tables: one row per key of flash-operator.conf(5). */
#define F(name, type, fn, field, arg) { name, type, false, fn, offsetof(struct flash_operator_config, field), arg }

static const struct json_field runtime_class_fields[] = {
	F("cpu", JSON_STRING, read_name, runtime_cpu, RULE(STR_DNS_SUBDOMAIN)),
	F("gpu", JSON_STRING, read_name, runtime_gpu, RULE(STR_DNS_SUBDOMAIN)),
};
static const size_t max8 = 8, max64 = 64, max256 = 256;
static const struct json_field dns_fields[] = {
	F("addresses", JSON_ARRAY, read_prefixes, dns_addresses, &max8),
	F("namespace", JSON_STRING, read_name, dns_namespace, RULE(STR_DNS_LABEL)),
	F("podLabels", JSON_OBJECT, read_labels, dns_pod_labels, NULL),
};
static const struct json_field persistence_fields[] = {
	F("enabled", JSON_BOOL, json_read_bool, persistence, NULL),
	F("storageClass", JSON_STRING, read_name, storage_class, RULE(STR_DNS_SUBDOMAIN)),
};
static const struct json_field port_range_fields[] = {
	F("first", JSON_NUMBER, json_read_uint16, port_first, &port_range),
	F("last", JSON_NUMBER, json_read_uint16, port_last, &port_range),
};
static const struct json_field registry_fields[] = {
	F("caFile", JSON_STRING, read_name, registry_ca_file, RULE(STR_PATH)),
	F("contentStore", JSON_STRING, read_name, content_store, RULE(STR_PATH)),
	F("credentialsFile", JSON_STRING, read_name, registry_credentials_file, RULE(STR_PATH)),
};
static const struct json_field runtime_fields[] = {
	F("agentSocket", JSON_STRING, read_name, rt_agent_socket, RULE(STR_PATH)),
	F("cgroupParent", JSON_STRING, read_name, rt_cgroup_parent, RULE(STR_PATH)),
	F("cniBinDir", JSON_STRING, read_name, rt_cni_bin_dir, RULE(STR_PATH)),
	F("cniConf", JSON_STRING, read_name, rt_cni_conf, RULE(STR_PATH)),
	F("dir", JSON_STRING, read_name, rt_dir, RULE(STR_PATH)),
	F("dns", JSON_ARRAY, read_dns_servers, rt_dns, NULL),
	F("masquerade", JSON_BOOL, json_read_bool, rt_masquerade, NULL),
	F("runsc", JSON_STRING, read_name, rt_runsc, RULE(STR_PATH)),
};
static const struct json_field sandbox_fields[] = {
	F("dir", JSON_STRING, read_name, sb_dir, RULE(STR_PATH)),
	/* the Kubernetes backend parses these (op_sandbox_k8s_new()) */
	F("imagePullSecrets", JSON_STRING, read_name, sb_pull_secrets, RULE(STR_ANY)),
	F("namespace", JSON_STRING, read_name, sb_namespace, RULE(STR_DNS_LABEL)),
	F("netSetupImage", JSON_STRING, read_name, sb_net_setup_image, RULE(STR_IMAGE)),
	F("nodeSelector", JSON_STRING, read_name, sb_node_selector, RULE(STR_ANY)),
	F("poolCpuMillis", JSON_NUMBER, json_read_uint32, sb_pool_cpu, &sb_cpu_range),
	F("poolImage", JSON_STRING, read_name, sb_pool_image, RULE(STR_IMAGE)),
	F("poolMemoryMib", JSON_NUMBER, json_read_uint32, sb_pool_mem, &sb_mem_range),
	F("poolSize", JSON_NUMBER, json_read_uint32, sb_pool_size, &sb_pool_range),
	F("runtimeClass", JSON_STRING, read_name, sb_runtime_class, RULE(STR_DNS_SUBDOMAIN)),
	F("tolerations", JSON_STRING, read_name, sb_tolerations, RULE(STR_ANY)),
};
static const struct json_field exec_fields[] = {
	F("maxSessions", JSON_NUMBER, json_read_uint32, exec_max_sessions, &exec_sessions_range),
	F("sessionLimitSeconds", JSON_NUMBER, json_read_uint32, exec_session_limit_s, &exec_limit_range),
};
static const struct json_field autoscaling_fields[] = {
	F("scaleDownStabilizationSeconds", JSON_NUMBER, json_read_uint32, as_window_s, &as_window_range),
	F("syncPeriodSeconds", JSON_NUMBER, json_read_uint32, as_period_s, &as_period_range),
	F("tolerancePercent", JSON_NUMBER, json_read_uint32, as_tolerance_percent, &as_tolerance_range),
};
static const struct json_field webhook_fields[] = {
	F("caBundle", JSON_STRING, read_name, webhook_ca_bundle, RULE(STR_BASE64)),
	F("certFile", JSON_STRING, read_name, webhook_cert_file, RULE(STR_PATH)),
	F("enabled", JSON_BOOL, json_read_bool, webhook_enabled, NULL),
	F("keyFile", JSON_STRING, read_name, webhook_key_file, RULE(STR_PATH)),
	F("listen", JSON_STRING, read_name, webhook_listen, RULE(STR_LISTEN)),
	F("port", JSON_NUMBER, json_read_uint16, webhook_port, &port_range),
	F("serviceName", JSON_STRING, read_name, webhook_service, RULE(STR_DNS_LABEL)),
};
static const struct json_field gateway_fields[] = {
	F("name", JSON_STRING, read_name, gateway_name, RULE(STR_DNS_SUBDOMAIN)),
	F("namespace", JSON_STRING, read_name, gateway_namespace, RULE(STR_DNS_LABEL)),
	F("sectionName", JSON_STRING, read_name, gateway_section, RULE(STR_DNS_SUBDOMAIN)),
};
static const struct json_field operator_fields[] = {
	F("agentImage", JSON_STRING, read_name, agent_image, RULE(STR_IMAGE)),
	F("image", JSON_STRING, read_name, operator_image, RULE(STR_IMAGE)),
	F("namespace", JSON_STRING, read_name, operator_namespace, RULE(STR_DNS_LABEL)),
};
#undef F

#define CLAIM(name, type, fn, field, arg) { name, type, false, fn, offsetof(struct admin_claim, field), arg }
static const struct json_field claim_fields[] = {
	CLAIM("claimName", JSON_STRING, read_name, claim_name, RULE(STR_DNS_SUBDOMAIN)),
	CLAIM("name", JSON_STRING, read_name, name, RULE(STR_DNS_LABEL)),
	CLAIM("readOnly", JSON_BOOL, json_read_bool, read_only, NULL),
};
#undef CLAIM
#define MOUNT(name, type, fn, field, arg) { name, type, false, fn, offsetof(struct admin_mount, field), arg }
static const struct json_field mount_fields[] = {
	MOUNT("claim", JSON_STRING, read_name, claim, RULE(STR_DNS_LABEL)),
	MOUNT("mountPath", JSON_STRING, read_name, mount_path, RULE(STR_PATH)),
	MOUNT("readOnly", JSON_BOOL, json_read_bool, read_only, NULL),
	MOUNT("serviceInstanceId", JSON_STRING, read_name, service_instance_id, RULE(STR_LABEL_VALUE)),
};
#undef MOUNT

/* A nested table whose cross-field rule follows in @check. */
static int read_section(struct check_ctx *ctx, const struct json_value *v, void *target, const struct json_field *fields,
			size_t n, int (*check)(struct check_ctx *ctx, void *target))
{
	int r = json_read_object(ctx, v, fields, n, target);

	return r == 0 && check ? check(ctx, target) : r;
}

static int check_dns(struct check_ctx *ctx, void *target)
{
	struct flash_operator_config *c = target;

	for (size_t i = 0; i < c->dns_addresses.n; i++)
		if (c->dns_addresses.v[i].len != flowsdn_addr_bits(&c->dns_addresses.v[i].addr))
			return bad(ctx, "clusterDNS.addresses must be addresses, not networks");
	return 0;
}

static int check_port_range(struct check_ctx *ctx, void *target)
{
	struct flash_operator_config *c = target;

	if (c->port_first > c->port_last)
		return bad(ctx, "first (%u) is after last (%u)", c->port_first, c->port_last);
	return 0;
}

static int check_sandbox(struct check_ctx *ctx, void *target)
{
	struct flash_operator_config *c = target;

	if ((c->sb_pool_size || c->sb_pool_image || c->sb_pool_cpu || c->sb_pool_mem) && !c->sb_dir)
		return bad(ctx, "the pool keys need dir");
	if (!c->sb_pool_size != !c->sb_pool_image)
		return bad(ctx, "poolSize and poolImage go together");
	if (c->sb_dir && c->sb_namespace)
		return bad(ctx, "dir (gVisor on this node) and namespace (a Pod per session in Kubernetes mode) "
				"exclude each other");
	if ((c->sb_net_setup_image || c->sb_runtime_class || c->sb_node_selector || c->sb_tolerations ||
	     c->sb_pull_secrets) && !c->sb_namespace)
		return bad(ctx, "the Kubernetes keys need namespace");
	return 0;
}

static int check_claim(struct check_ctx *ctx, void *target)
{
	struct admin_claim *a = target;

	if (!a->name || !a->claim_name)
		return bad(ctx, "needs name and claimName");
	if (strcmp(a->name, "root") == 0)
		return bad(ctx, "name \"root\" is reserved for the /root volume");
	return 0;
}

static int check_mount(struct check_ctx *ctx, void *target)
{
	struct admin_mount *a = target;

	if (!a->service_instance_id || !a->service_instance_id[0] || !a->claim || !a->mount_path)
		return bad(ctx, "needs serviceInstanceId, claim and mountPath");
	return 0;
}

#define SECTION(fn, fields, check)                                                                \
	static int fn(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg) \
	{                                                                                         \
		(void)arg;                                                                        \
		return read_section(ctx, v, dst, fields, ARRAY_SIZE(fields), check);             \
	}
SECTION(read_runtime_classes, runtime_class_fields, NULL)
SECTION(read_runtime, runtime_fields, NULL)
SECTION(read_exec, exec_fields, NULL)
SECTION(read_sandbox, sandbox_fields, check_sandbox)
SECTION(read_autoscaling, autoscaling_fields, NULL)
SECTION(read_dns, dns_fields, check_dns)
SECTION(read_persistence, persistence_fields, NULL)
SECTION(read_port_range, port_range_fields, check_port_range)
SECTION(read_operator, operator_fields, NULL)
SECTION(read_registry, registry_fields, NULL)
SECTION(read_webhook, webhook_fields, NULL)
SECTION(read_gateway, gateway_fields, NULL)
#undef SECTION

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

static int read_claims(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct flash_operator_config *c = dst;
	size_t errors = ctx->errors;

	(void)arg;
	if (v->u.array.n > 64)
		return bad(ctx, "must be an array of at most 64 claims");
	free_claims(c->admin_claims, c->n_admin_claims);
	c->n_admin_claims = 0;
	c->admin_claims = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(*c->admin_claims));
	if (!c->admin_claims)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.array.n; i++) {
		size_t saved = json_path_push_index(&ctx->path, i);
		int r;

		c->n_admin_claims = i + 1;
		r = read_section(ctx, v->u.array.items[i], &c->admin_claims[i], claim_fields, ARRAY_SIZE(claim_fields),
				 check_claim);
		for (size_t j = 0; r == 0 && j < i; j++)
			if (c->admin_claims[j].name && strcmp(c->admin_claims[j].name, c->admin_claims[i].name) == 0)
				r = bad(ctx, "name \"%s\" is used twice", c->admin_claims[i].name);
		json_path_pop(&ctx->path, saved);
		if (r < 0 && r != JSON_READ_REPORTED)
			return r;
	}
	return ctx->errors > errors ? JSON_READ_REPORTED : 0;
}

static int read_mounts(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct flash_operator_config *c = dst;
	size_t errors = ctx->errors;

	(void)arg;
	if (v->u.array.n > 1024)
		return bad(ctx, "must be an array of at most 1024 mounts");
	free_mounts(c->admin_mounts, c->n_admin_mounts);
	c->n_admin_mounts = 0;
	c->admin_mounts = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(*c->admin_mounts));
	if (!c->admin_mounts)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.array.n; i++) {
		size_t saved = json_path_push_index(&ctx->path, i);
		int r;

		c->n_admin_mounts = i + 1;
		r = read_section(ctx, v->u.array.items[i], &c->admin_mounts[i], mount_fields, ARRAY_SIZE(mount_fields),
				 check_mount);
		json_path_pop(&ctx->path, saved);
		if (r < 0 && r != JSON_READ_REPORTED)
			return r;
	}
	return ctx->errors > errors ? JSON_READ_REPORTED : 0;
}

#define F(name, type, fn, field, arg) { name, type, false, fn, offsetof(struct flash_operator_config, field), arg }
/* Whole-config readers get the config itself (offset 0). */
#define W(name, type, fn) { name, type, false, fn, 0, NULL }
static const struct json_field root_fields[] = {
	W("adminVolumeClaims", JSON_ARRAY, read_claims),
	W("adminVolumeMounts", JSON_ARRAY, read_mounts),
	W("autoscaling", JSON_OBJECT, read_autoscaling),
	W("clusterDNS", JSON_OBJECT, read_dns),
	W("exec", JSON_OBJECT, read_exec),
	W("gateway", JSON_OBJECT, read_gateway),
	F("gpuNodeLabel", JSON_STRING, read_name, gpu_node_label, RULE(STR_LABEL_KEY)),
	F("gpuNodeSelector", JSON_OBJECT, read_labels, gpu_node_selector, NULL),
	F("heteroNetworkCIDRs", JSON_ARRAY, read_prefixes, heteronetwork_cidrs, &max64),
	F("infrastructureCIDRs", JSON_ARRAY, read_prefixes, infrastructure_cidrs, &max256),
	F("lanCIDRs", JSON_ARRAY, read_prefixes, lan_cidrs, &max64),
	F("loadBalancerClass", JSON_STRING, read_name, load_balancer_class, RULE(STR_LABEL_KEY)),
	W("operator", JSON_OBJECT, read_operator),
	W("persistence", JSON_OBJECT, read_persistence),
	F("podCIDRs", JSON_ARRAY, read_prefixes, pod_cidrs, &max64),
	F("publicNodeLabels", JSON_OBJECT, read_labels, public_node_labels, NULL),
	W("publicPortRange", JSON_OBJECT, read_port_range),
	W("registry", JSON_OBJECT, read_registry),
	W("runtime", JSON_OBJECT, read_runtime),
	W("runtimeClassNames", JSON_OBJECT, read_runtime_classes),
	W("sandbox", JSON_OBJECT, read_sandbox),
	F("serviceCIDRs", JSON_ARRAY, read_prefixes, service_cidrs, &max64),
	W("webhook", JSON_OBJECT, read_webhook),
};
#undef W
#undef F

static int read_root(struct check_ctx *ctx, struct flash_operator_config *c, const struct json_value *v)
{
	int r = json_read_object(ctx, v, root_fields, ARRAY_SIZE(root_fields), c);

	if (r < 0)
		return r;
	/* Every mount names a declared claim. */
	for (size_t i = 0; i < c->n_admin_mounts; i++) {
		bool found = false;

		for (size_t j = 0; j < c->n_admin_claims && !found; j++)
			found = strcmp(c->admin_mounts[i].claim, c->admin_claims[j].name) == 0;
		if (!found) {
			size_t saved = json_path_push_key(&ctx->path, "adminVolumeMounts");

			json_path_push_index(&ctx->path, i);
			bad(ctx, "claim \"%s\" is not in adminVolumeClaims", c->admin_mounts[i].claim);
			json_path_pop(&ctx->path, saved);
			return JSON_READ_REPORTED;
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
	free_labels(&c->gpu_node_selector);
	free(c->webhook_service);
	free(c->webhook_ca_bundle);
	free(c->webhook_listen);
	free(c->webhook_cert_file);
	free(c->webhook_key_file);
	free(c->gateway_name);
	free(c->gateway_namespace);
	free(c->gateway_section);
	free_labels(&c->public_node_labels);
	free(c->dns_namespace);
	free_labels(&c->dns_pod_labels);
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
	free(c->registry_ca_file);
	free(c->registry_credentials_file);
	free(c->content_store);
	free(c->rt_dir);
	free(c->sb_dir);
	free(c->sb_pool_image);
	free(c->sb_namespace);
	free(c->sb_net_setup_image);
	free(c->sb_runtime_class);
	free(c->sb_node_selector);
	free(c->sb_tolerations);
	free(c->sb_pull_secrets);
	free(c->rt_cni_bin_dir);
	free(c->rt_cni_conf);
	free(c->rt_agent_socket);
	free(c->rt_runsc);
	free(c->rt_cgroup_parent);
	free(c->rt_dns);
	free(c);
}

/* The defaults, written as a configuration document so that they go
 * through the same parser and checks as the operator's file. */
static const char default_config[] =
	"{"
	"\"runtimeClassNames\":{\"cpu\":\"gvisor\",\"gpu\":\"nvidia\"},"
	"\"loadBalancerClass\":\"heteronetwork.io/public\","
	"\"gpuNodeLabel\":\"flash.heterocloud.io/gpu-type\","
	"\"gpuNodeSelector\":{\"flash.heterocloud.io/gpu-ready\":\"true\"},"
	"\"publicNodeLabels\":{\"heteronetwork.io/public-node\":\"true\"},"
	"\"clusterDNS\":{\"namespace\":\"kube-system\",\"podLabels\":{\"k8s-app\":\"kube-dns\"},"
	"\"addresses\":[\"10.96.0.10\"]},"
	"\"podCIDRs\":[\"10.244.0.0/16\"],"
	"\"serviceCIDRs\":[\"10.96.0.0/12\"],"
	"\"lanCIDRs\":[\"10.0.0.0/8\",\"172.16.0.0/12\",\"192.168.0.0/16\",\"fc00::/7\"],"
	"\"heteroNetworkCIDRs\":[\"100.64.0.0/10\"],"
	"\"infrastructureCIDRs\":[],"
	"\"persistence\":{\"enabled\":false},"
	"\"autoscaling\":{\"syncPeriodSeconds\":15,\"scaleDownStabilizationSeconds\":300,\"tolerancePercent\":10},"
	"\"adminVolumeClaims\":[],"
	"\"adminVolumeMounts\":[],"
	"\"publicPortRange\":{\"first\":30000,\"last\":32767},"
	"\"webhook\":{\"enabled\":true,\"serviceName\":\"flash-operator-webhook\",\"port\":443,"
	"\"listen\":\"0.0.0.0:8443\",\"certFile\":\"/etc/flash-webhook/tls.crt\","
	"\"keyFile\":\"/etc/flash-webhook/tls.key\"},"
	"\"operator\":{\"namespace\":\"flash-system\","
	"\"image\":\"ghcr.io/heterocloud/flash-operator:" PACKAGE_VERSION "\","
	"\"agentImage\":\"ghcr.io/heterocloud/flowsdn-agent:" PACKAGE_VERSION "\"}"
	"}";

static int parse_into(struct flash_operator_config *c, const char *json, size_t len, struct diag *diag)
{
	struct json_value *v = NULL;
	struct check_ctx ctx;
	int r;

	r = json_parse_diag(json, len, NULL, -FLASH_E_RENDER_CONFIG, &v, diag);
	if (r < 0)
		return r;
	check_ctx_init(&ctx, diag);
	r = read_root(&ctx, c, v);
	json_free(v);
	if (ctx.oom || diag_oom(diag))
		return -ENOMEM;
	return r == JSON_READ_REPORTED ? -FLASH_E_RENDER_CONFIG : r;
}

FLASH_API int flash_operator_config_parse(const char *json, size_t len, struct flash_operator_config **ret_config,
					  struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	struct flash_operator_config *c;
	int r;

	if (!json || !ret_config)
		return -EINVAL;
	diag_begin(diag, 0);
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

FLASH_API void flash_operator_config_registry(const struct flash_operator_config *config, const char **ret_ca_file,
					      const char **ret_credentials_file, const char **ret_content_store)
{
	if (!config)
		return;
	if (ret_ca_file)
		*ret_ca_file = config->registry_ca_file;
	if (ret_credentials_file)
		*ret_credentials_file = config->registry_credentials_file;
	if (ret_content_store)
		*ret_content_store = config->content_store;
}

FLASH_API const struct flowsdn_prefix *flash_operator_config_service_cidr(const struct flash_operator_config *config,
									  size_t i)
{
	return config && i < config->service_cidrs.n ? &config->service_cidrs.v[i] : NULL;
}

FLASH_API int flash_operator_config_runtime(const struct flash_operator_config *config,
					    struct flash_operator_runtime *ret)
{
	struct flash_operator_runtime v = { .sz = sizeof(v) };
	size_t n;

	if (!config || !ret || ret->sz < offsetof(struct flash_operator_runtime, dir))
		return -EINVAL;
	v.dir = config->rt_dir;
	v.cni_bin_dir = config->rt_cni_bin_dir;
	v.cni_conf = config->rt_cni_conf;
	v.agent_socket = config->rt_agent_socket;
	v.runsc = config->rt_runsc;
	v.cgroup_parent = config->rt_cgroup_parent;
	v.dns = config->rt_dns;
	v.masquerade = config->rt_masquerade;
	v.exec_max_sessions = config->exec_max_sessions;
	v.exec_session_limit_s = config->exec_session_limit_s;
	v.autoscale_period_s = config->as_period_s;
	v.autoscale_window_s = config->as_window_s;
	v.autoscale_tolerance_percent = config->as_tolerance_percent;
	v.webhook_enabled = config->webhook_enabled;
	v.webhook_listen = config->webhook_listen;
	v.webhook_cert_file = config->webhook_cert_file;
	v.webhook_key_file = config->webhook_key_file;
	v.sandbox_dir = config->sb_dir;
	v.sandbox_pool_size = config->sb_pool_size;
	v.sandbox_pool_image = config->sb_pool_image;
	v.sandbox_pool_cpu_millis = config->sb_pool_cpu;
	v.sandbox_pool_memory_mib = config->sb_pool_mem;
	v.sandbox_namespace = config->sb_namespace;
	v.sandbox_net_setup_image = config->sb_net_setup_image;
	v.sandbox_runtime_class = config->sb_runtime_class;
	v.sandbox_node_selector = config->sb_node_selector;
	v.sandbox_tolerations = config->sb_tolerations;
	v.sandbox_image_pull_secrets = config->sb_pull_secrets;
	/* An older caller's smaller struct gets the fields it knows. */
	n = ret->sz < sizeof(v) ? ret->sz : sizeof(v);
	v.sz = ret->sz;
	memcpy(ret, &v, n);
	return 0;
}
