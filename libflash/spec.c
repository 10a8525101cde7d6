/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Flash spec: schema check from the field table, the semantic rules
 * on top of it, the immutable spec object, its canonical JSON and digest.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <sodium.h>
#include <flash/spec.h>

#include "internal.h"
#include "spec-internal.h"

/* Bytes of all env keys and values together. */
#define ENV_TOTAL_MAX (64 * 1024)
/* Bytes of all command and args strings together. */
#define ARGV_TOTAL_MAX (64 * 1024)

static const char *const spec_errors[] = {
	[FLASH_E_SPEC_SYNTAX - FLASH_E_SPEC_BASE] = "spec is not acceptable JSON",
	[FLASH_E_SPEC_INVALID - FLASH_E_SPEC_BASE] = "spec breaks one or more rules",
};

const char *flash__spec_strerror(int code)
{
	size_t i = (size_t)(code - FLASH_E_SPEC_BASE);

	return i < ARRAY_SIZE(spec_errors) ? spec_errors[i] : NULL;
}

struct spec_port {
	char *name;
	enum flash_spec_protocol protocol;
	uint16_t container_port;
};

struct spec_kv {
	char *key;
	char *value;
};

struct spec_domain {
	char *host;
	char *port;
};

struct spec_cidrs {
	struct flowsdn_prefix *v;
	size_t n;
};

struct flash_spec {
	char *region;
	char *image;
	char *gpu_type; /* NULL: none */
	uint32_t replicas;
	uint32_t cpu_millis;
	uint32_t memory_mib;
	uint32_t ephemeral_storage_gib;

	struct spec_port *ports;
	size_t n_ports;

	enum flash_spec_exposure exposure;
	enum flash_spec_traffic_mode traffic_mode;
	enum flash_spec_egress egress;
	bool allow_same_organization;
	struct spec_cidrs cidrs[4];

	struct spec_kv *env;
	size_t n_env;
	struct spec_kv *metadata;
	size_t n_metadata;
	char **command;
	size_t n_command;
	char **args;
	size_t n_args;

	bool has_autoscaling;
	uint32_t as_min;
	uint32_t as_max;
	uint32_t as_target;

	struct spec_domain *domains;
	size_t n_domains;

	char *canonical;
	size_t canonical_len;
	uint8_t digest[FLASH_SPEC_DIGEST_SIZE];
};

/* ---------------------------------------------------------------- semantic rules */

static const struct json_value *member(const struct json_value *obj, const char *key, enum json_type type)
{
	const struct json_value *v = json_get(obj, key);

	return v && v->type == type ? v : NULL;
}

/* Classes a tenant may never name as an allowed source or destination:
 * everything but public and documentation ranges (the latter are not
 * routed at all, and the examples use them). */
#define REFUSED_CLASSES (~(unsigned int)(FLOWSDN_ADDR_PUBLIC | FLOWSDN_ADDR_DOCUMENTATION))

static const char *first_class_name(unsigned int classes)
{
	for (unsigned int bit = 1; bit; bit <<= 1)
		if ((classes & bit) && flowsdn_addr_class_name(bit))
			return flowsdn_addr_class_name(bit);
	return "special-purpose";
}

/* Parses every valid entry of the CIDR list @name of @obj into @out
 * (indexes kept; invalid entries marked with family 0).  Returns the
 * number of entries, or 0 when the list is absent or not an array. */
static size_t parse_cidr_list(const struct json_value *obj, const char *name, struct flowsdn_prefix *out, size_t max)
{
	const struct json_value *arr = member(obj, name, JSON_ARRAY);
	size_t n;

	if (!arr)
		return 0;
	n = arr->u.array.n < max ? arr->u.array.n : max;
	for (size_t i = 0; i < n; i++) {
		const struct json_value *it = arr->u.array.items[i];

		memset(&out[i], 0, sizeof(out[i]));
		if (it->type != JSON_STRING || it->u.string.has_nul ||
		    spec_cidr_parse(it->u.string.ptr, it->u.string.len, &out[i]) < 0)
			out[i].addr.family = 0;
	}
	return n;
}

/* The item limit of @field of the object @object (NULL: the document)
 * from the field table: items past it were reported by the schema and are
 * not examined again. */
static size_t table_max_items(const char *object, const char *field)
{
	const struct spec_field *obj = object ? spec_field_find(&spec_root, object) : &spec_root;
	const struct spec_field *f = spec_field_find(obj, field);

	return f ? f->max_items : 0;
}

static size_t bounded(size_t n, size_t max)
{
	return n < max ? n : max;
}

/* The rules of one allow/deny pair: grantable classes for the allow list,
 * normalized duplicates in both, and allow entries that a deny entry
 * covers entirely (deny wins: a warning). */
static void check_cidr_pair(struct check_ctx *ctx, const struct json_value *obj, const char *object,
			    const char *allow_name, const char *deny_name, const char *what)
{
	size_t max_allow = table_max_items(object, allow_name), max_deny = table_max_items(object, deny_name);
	_cleanup_free_ struct flowsdn_prefix *allow = calloc(max_allow ? max_allow : 1, sizeof(*allow));
	_cleanup_free_ struct flowsdn_prefix *deny = calloc(max_deny ? max_deny : 1, sizeof(*deny));
	const struct json_value *allow_arr = member(obj, allow_name, JSON_ARRAY);
	const struct json_value *deny_arr = member(obj, deny_name, JSON_ARRAY);
	char text[FLOWSDN_PREFIX_STRLEN];
	size_t na, nd;

	if (!allow || !deny) {
		ctx->oom = true;
		return;
	}
	na = parse_cidr_list(obj, allow_name, allow, max_allow);
	nd = parse_cidr_list(obj, deny_name, deny, max_deny);

	for (int pass = 0; pass < 2; pass++) {
		const struct flowsdn_prefix *list = pass ? deny : allow;
		const struct json_value *arr = pass ? deny_arr : allow_arr;
		size_t n = pass ? nd : na;
		size_t saved = json_path_push_key(&ctx->path, pass ? deny_name : allow_name);

		for (size_t i = 0; i < n; i++) {
			const struct json_value *item = arr->u.array.items[i];
			size_t saved_i;

			if (!list[i].addr.family)
				continue;
			saved_i = json_path_push_index(&ctx->path, i);
			for (size_t j = 0; j < i; j++) {
				/* Same text is reported by the schema ("duplicate"). */
				if (list[j].addr.family && flowsdn_prefix_compare(&list[i], &list[j]) == 0 &&
				    !(item->u.string.len == arr->u.array.items[j]->u.string.len &&
				      memcmp(item->u.string.ptr, arr->u.array.items[j]->u.string.ptr,
					     item->u.string.len) == 0)) {
					flowsdn_prefix_format(&list[i], text, sizeof(text));
					check_error(ctx, "duplicate", item, "is %s again, like item %zu", text, j);
					break;
				}
			}
			if (pass == 0) {
				unsigned int classes = flowsdn_prefix_classify(&list[i]);

				flowsdn_prefix_format(&list[i], text, sizeof(text));
				if (classes & REFUSED_CLASSES) {
					const char *cls = first_class_name(classes & REFUSED_CLASSES);

					if (strcmp(what, "source") == 0)
						check_error(ctx, "source-class", item,
							    "%s %s %s addresses: private, cluster, link-local and loopback "
							    "sources stay isolated; an empty list allows every publicly "
							    "routable source",
							    text, (classes & FLOWSDN_ADDR_PUBLIC) ? "includes" : "holds only",
							    cls);
					else
						check_error(ctx, "destination-class", item,
							    "%s %s %s addresses: egress destinations must be public",
							    text, (classes & FLOWSDN_ADDR_PUBLIC) ? "includes" : "holds only",
							    cls);
				} else {
					for (size_t j = 0; j < nd; j++)
						if (deny[j].addr.family && flowsdn_prefix_contains(&deny[j], &list[i])) {
							check_warning(ctx, "denied-covers-allowed", item,
								      "is entirely covered by %s[%zu] (deny wins): this "
								      "entry allows nothing",
								      deny_name, j);
							break;
						}
				}
			}
			json_path_pop(&ctx->path, saved_i);
		}
		json_path_pop(&ctx->path, saved);
	}
}

/* Member @key of @obj as a string: @def when absent, NULL when present but
 * not a string (the schema reported that). */
static const char *opt_str(const struct json_value *obj, const char *key, const char *def)
{
	const struct json_value *v = json_get(obj, key);

	if (!v)
		return def;
	return v->type == JSON_STRING && !v->u.string.has_nul ? v->u.string.ptr : NULL;
}

/* The default of @key in the object field @object, from the field table. */
static const char *field_default(const char *object, const char *key)
{
	const struct spec_field *f = spec_field_find(spec_field_find(&spec_root, object), key);

	return f ? f->default_string : NULL;
}

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* The enum members of exposure and egress, defaults applied (NULL when
 * present but not a string). */
static const char *exposure_type(const struct json_value *exp)
{
	return opt_str(exp, "type", field_default("exposure", "type"));
}

static const char *traffic_mode(const struct json_value *exp)
{
	return opt_str(exp, "traffic_mode", field_default("exposure", "traffic_mode"));
}

static const char *egress_mode(const struct json_value *eg)
{
	return opt_str(eg, "mode", field_default("egress", "mode"));
}

static size_t array_len(const struct json_value *obj, const char *key)
{
	const struct json_value *a = member(obj, key, JSON_ARRAY);

	return a ? a->u.array.n : 0;
}

static void check_exposure(struct check_ctx *ctx, const struct json_value *doc)
{
	const struct json_value *exp = member(doc, "exposure", JSON_OBJECT);
	size_t saved;

	if (!exp)
		return;
	saved = json_path_push_key(&ctx->path, "exposure");
	if (streq(traffic_mode(exp), "direct") && streq(exposure_type(exp), "internal")) {
		size_t s2 = json_path_push_key(&ctx->path, "traffic_mode");

		check_error(ctx, "direct-needs-public", json_get(exp, "traffic_mode"),
			    "direct traffic mode needs exposure type public");
		json_path_pop(&ctx->path, s2);
	}
	if (streq(exposure_type(exp), "internal")) {
		static const char *const lists[] = { "allowed_source_cidrs", "denied_source_cidrs" };

		for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
			if (array_len(exp, lists[i]) > 0) {
				size_t s2 = json_path_push_key(&ctx->path, lists[i]);

				check_error(ctx, "sources-need-public", NULL,
					    "source lists apply to public exposure only (type is internal)");
				json_path_pop(&ctx->path, s2);
			}
	}
	check_cidr_pair(ctx, exp, "exposure", "allowed_source_cidrs", "denied_source_cidrs", "source");
	json_path_pop(&ctx->path, saved);
}

static void check_egress(struct check_ctx *ctx, const struct json_value *doc)
{
	const struct json_value *eg = member(doc, "egress", JSON_OBJECT);
	const char *mode;
	size_t saved;

	if (!eg)
		return;
	saved = json_path_push_key(&ctx->path, "egress");
	/* Only judge the mode when it is one of the known values. */
	mode = egress_mode(eg);
	if (mode && (!strcmp(mode, "disabled") || !strcmp(mode, "restricted") || !strcmp(mode, "internet"))) {
		size_t s2 = json_path_push_key(&ctx->path, "allowed_destination_cidrs");

		if (!strcmp(mode, "restricted") && array_len(eg, "allowed_destination_cidrs") == 0)
			check_error(ctx, "restricted-needs-destination", NULL,
				    "restricted egress needs at least one allowed destination");
		else if (strcmp(mode, "restricted") && array_len(eg, "allowed_destination_cidrs") > 0)
			check_error(ctx, "destinations-need-restricted", NULL,
				    "allowed destinations apply to restricted egress only (mode is %s)", mode);
		json_path_pop(&ctx->path, s2);
	}
	check_cidr_pair(ctx, eg, "egress", "allowed_destination_cidrs", "denied_destination_cidrs", "destination");
	json_path_pop(&ctx->path, saved);
}

static void check_ports(struct check_ctx *ctx, const struct json_value *doc)
{
	const struct json_value *ports = member(doc, "ports", JSON_ARRAY);
	size_t saved, n;

	if (!ports)
		return;
	n = bounded(ports->u.array.n, table_max_items(NULL, "ports"));
	saved = json_path_push_key(&ctx->path, "ports");
	for (size_t i = 0; i < n; i++) {
		const struct json_value *p = ports->u.array.items[i];
		const char *name = jstr(p, "name", NULL), *proto = jstr(p, "protocol", NULL);
		int64_t port = jint(p, "container_port", -1);
		size_t s2 = json_path_push_index(&ctx->path, i);

		if (p->type != JSON_OBJECT) {
			json_path_pop(&ctx->path, s2);
			continue;
		}
		for (size_t j = 0; j < i; j++) {
			const struct json_value *q = ports->u.array.items[j];
			const char *qname = jstr(q, "name", NULL);

			if (name && qname && strcmp(name, qname) == 0) {
				size_t s3 = json_path_push_key(&ctx->path, "name");

				check_error(ctx, "unique", json_get(p, "name"), "port name is already used by ports[%zu]",
					    j);
				json_path_pop(&ctx->path, s3);
				break;
			}
		}
		for (size_t j = 0; j < i; j++) {
			const struct json_value *q = ports->u.array.items[j];
			const char *qproto = jstr(q, "protocol", NULL);

			if (proto && qproto && port > 0 && strcmp(proto, qproto) == 0 &&
			    jint(q, "container_port", -2) == port) {
				size_t s3 = json_path_push_key(&ctx->path, "container_port");

				check_error(ctx, "unique", json_get(p, "container_port"),
					    "%s port %" PRId64 " is already declared by ports[%zu]", proto, port, j);
				json_path_pop(&ctx->path, s3);
				break;
			}
		}
		json_path_pop(&ctx->path, s2);
	}
	json_path_pop(&ctx->path, saved);
}

static bool ends_with_ci(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && strncasecmp(s + len - n, suffix, n) == 0;
}

/* Env names that look like they hold a credential. */
static bool looks_like_credential(const char *key, size_t len)
{
	static const char *const suffixes[] = {
		"PASSWORD", "PASSWD", "PASS", "TOKEN", "SECRET", "KEY", "APIKEY", "CREDENTIAL", "CREDENTIALS",
		"PRIVATE_KEY", "AUTH", "PWD",
	};

	for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
		size_t n = strlen(suffixes[i]);

		/* The whole name, or "_SUFFIX" at its end. */
		if (len == n && strcasecmp(key, suffixes[i]) == 0)
			return true;
		if (len > n && ends_with_ci(key, len, suffixes[i]) && key[len - n - 1] == '_')
			return true;
	}
	return false;
}

static void check_env(struct check_ctx *ctx, const struct json_value *doc)
{
	const struct json_value *env = member(doc, "env", JSON_OBJECT);
	size_t saved, total = 0;

	if (!env)
		return;
	saved = json_path_push_key(&ctx->path, "env");
	for (size_t i = 0; i < env->u.object.n; i++) {
		const struct json_member *m = &env->u.object.members[i];

		total += m->key_len;
		if (m->value->type == JSON_STRING)
			total += m->value->u.string.len;
		if (looks_like_credential(m->key, m->key_len)) {
			size_t s2 = json_path_push_key(&ctx->path, m->key);

			check_warning(ctx, "credential", NULL,
				      "looks like a credential: env is durable, non-secret configuration; do not put "
				      "application credentials in a Flash spec");
			json_path_pop(&ctx->path, s2);
		}
	}
	if (total > ENV_TOTAL_MAX)
		check_error(ctx, "env-size", NULL, "keys and values total %zu bytes, more than %d", total, ENV_TOTAL_MAX);
	json_path_pop(&ctx->path, saved);
}

static void check_argv(struct check_ctx *ctx, const struct json_value *doc)
{
	static const char *const lists[] = { "command", "args" };
	size_t total = 0;

	for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
		const struct json_value *a = member(doc, lists[l], JSON_ARRAY);

		for (size_t i = 0; a && i < a->u.array.n; i++)
			if (a->u.array.items[i]->type == JSON_STRING)
				total += a->u.array.items[i]->u.string.len;
	}
	if (total > ARGV_TOTAL_MAX) {
		size_t saved = json_path_push_key(&ctx->path, array_len(doc, "args") ? "args" : "command");

		check_error(ctx, "argv-size", NULL, "command and args total %zu bytes, more than %d", total,
			    ARGV_TOTAL_MAX);
		json_path_pop(&ctx->path, saved);
	}
}

static void check_autoscaling(struct check_ctx *ctx, const struct json_value *doc)
{
	const struct json_value *as = member(doc, "autoscaling", JSON_OBJECT);
	int64_t min, max, replicas;
	size_t saved;

	if (!as)
		return;
	min = jint(as, "min_replicas", -1);
	max = jint(as, "max_replicas", -1);
	replicas = jint(doc, "replicas", 1);
	if (min < 1 || max < 1 || min > 1000 || max > 1000)
		return; /* reported by the schema */
	saved = json_path_push_key(&ctx->path, "autoscaling");
	if (min > max) {
		size_t s2 = json_path_push_key(&ctx->path, "min_replicas");

		check_error(ctx, "autoscaling-range", json_get(as, "min_replicas"),
			    "must not exceed max_replicas (%" PRId64 ")", max);
		json_path_pop(&ctx->path, s2);
	}
	json_path_pop(&ctx->path, saved);
	if (min <= max && replicas > 0 && replicas <= 1000 && (replicas < min || replicas > max)) {
		saved = json_path_push_key(&ctx->path, "replicas");
		check_error(ctx, "replicas-outside-autoscaling", json_get(doc, "replicas"),
			    "must be 0 or within autoscaling min_replicas..max_replicas (%" PRId64 "..%" PRId64 ")",
			    min, max);
		json_path_pop(&ctx->path, saved);
	}
}

static const struct spec_field *port_name_field(void)
{
	return spec_field_find(spec_field_find(&spec_root, "ports")->items, "name");
}

static void check_domains(struct check_ctx *ctx, const struct json_value *doc)
{
	const struct json_value *domains = member(doc, "domains", JSON_ARRAY);
	const struct json_value *ports = member(doc, "ports", JSON_ARRAY);
	const struct json_value *exp = member(doc, "exposure", JSON_OBJECT);
	size_t saved, n;

	if (!domains || domains->u.array.n == 0)
		return;
	saved = json_path_push_key(&ctx->path, "domains");
	if (streq(exposure_type(exp), "internal"))
		check_error(ctx, "domains-need-public", NULL, "domains need exposure type public");
	n = bounded(domains->u.array.n, table_max_items(NULL, "domains"));
	for (size_t i = 0; i < n; i++) {
		const struct json_value *d = domains->u.array.items[i];
		const char *host = jstr(d, "host", NULL), *port = jstr(d, "port", NULL);
		size_t s2 = json_path_push_index(&ctx->path, i);

		for (size_t j = 0; host && j < i; j++) {
			const char *other = jstr(domains->u.array.items[j], "host", NULL);

			if (other && strcmp(host, other) == 0) {
				size_t s3 = json_path_push_key(&ctx->path, "host");

				check_error(ctx, "unique", json_get(d, "host"), "host is already routed by domains[%zu]", j);
				json_path_pop(&ctx->path, s3);
				break;
			}
		}
		/* A port text the schema refused is not looked up again. */
		if (port && spec_pattern_match(port_name_field()->pattern, port, strlen(port))) {
			const struct json_value *target = NULL;
			size_t s3 = json_path_push_key(&ctx->path, "port");

			for (size_t j = 0; ports && j < ports->u.array.n; j++) {
				const char *name = jstr(ports->u.array.items[j], "name", NULL);

				if (name && strcmp(name, port) == 0) {
					target = ports->u.array.items[j];
					break;
				}
			}
			if (!target)
				check_error(ctx, "domain-port", json_get(d, "port"), "names no declared port");
			else if (strcmp(jstr(target, "protocol", "tcp"), "tcp") != 0)
				check_error(ctx, "domain-port", json_get(d, "port"),
					    "names a %s port; domains route to tcp ports", jstr(target, "protocol", "?"));
			json_path_pop(&ctx->path, s3);
		}
		json_path_pop(&ctx->path, s2);
	}
	json_path_pop(&ctx->path, saved);
}

/* ---------------------------------------------------------------- building */

static void kv_free(struct spec_kv *kv, size_t n)
{
	for (size_t i = 0; kv && i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

FLASH_API void flash_spec_free(struct flash_spec *spec)
{
	if (!spec)
		return;
	free(spec->region);
	free(spec->image);
	free(spec->gpu_type);
	for (size_t i = 0; spec->ports && i < spec->n_ports; i++)
		free(spec->ports[i].name);
	free(spec->ports);
	for (size_t l = 0; l < ARRAY_SIZE(spec->cidrs); l++)
		free(spec->cidrs[l].v);
	kv_free(spec->env, spec->n_env);
	kv_free(spec->metadata, spec->n_metadata);
	strv_free(spec->command, spec->n_command);
	strv_free(spec->args, spec->n_args);
	for (size_t i = 0; spec->domains && i < spec->n_domains; i++) {
		free(spec->domains[i].host);
		free(spec->domains[i].port);
	}
	free(spec->domains);
	free(spec->canonical);
	free(spec);
}

static int dup_str(const char *s, char **ret)
{
	if (!s) {
		*ret = NULL;
		return 0;
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct spec_kv *)a)->key, ((const struct spec_kv *)b)->key);
}

static int build_kv(const struct json_value *obj, struct spec_kv **ret, size_t *ret_n)
{
	size_t n = obj ? obj->u.object.n : 0;
	struct spec_kv *kv;

	*ret = NULL;
	*ret_n = 0;
	if (n == 0)
		return 0;
	kv = calloc(n, sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	*ret = kv;
	for (size_t i = 0; i < n; i++) {
		const struct json_member *m = &obj->u.object.members[i];

		if (dup_str(m->key, &kv[i].key) < 0 || dup_str(m->value->u.string.ptr, &kv[i].value) < 0)
			return -ENOMEM;
		*ret_n = i + 1;
	}
	qsort(kv, n, sizeof(*kv), kv_cmp);
	return 0;
}

static int build_strv(const struct json_value *arr, char ***ret, size_t *ret_n)
{
	size_t n = arr ? arr->u.array.n : 0;
	char **v;

	*ret = NULL;
	*ret_n = 0;
	if (n == 0)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	*ret = v;
	for (size_t i = 0; i < n; i++) {
		if (dup_str(arr->u.array.items[i]->u.string.ptr, &v[i]) < 0)
			return -ENOMEM;
		*ret_n = i + 1;
	}
	return 0;
}

static int prefix_cmp(const void *a, const void *b)
{
	return flowsdn_prefix_compare(a, b);
}

static int build_cidrs(const struct json_value *obj, const char *name, struct spec_cidrs *out)
{
	const struct json_value *arr = member(obj, name, JSON_ARRAY);
	size_t n = arr ? arr->u.array.n : 0;

	out->v = NULL;
	out->n = 0;
	if (n == 0)
		return 0;
	out->v = calloc(n, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct json_value *it = arr->u.array.items[i];

		if (spec_cidr_parse(it->u.string.ptr, it->u.string.len, &out->v[i]) < 0)
			return -EINVAL; /* cannot happen: the schema checked it */
	}
	out->n = n;
	qsort(out->v, n, sizeof(*out->v), prefix_cmp);
	return 0;
}

static int build(const struct json_value *doc, struct flash_spec *s)
{
	const struct json_value *exp = member(doc, "exposure", JSON_OBJECT);
	const struct json_value *eg = member(doc, "egress", JSON_OBJECT);
	const struct json_value *ports = member(doc, "ports", JSON_ARRAY);
	const struct json_value *as = member(doc, "autoscaling", JSON_OBJECT);
	const struct json_value *domains = member(doc, "domains", JSON_ARRAY);
	int r;

	if (dup_str(jstr(doc, "region", NULL), &s->region) < 0 || dup_str(jstr(doc, "image", NULL), &s->image) < 0 ||
	    dup_str(jstr(doc, "gpu_type", NULL), &s->gpu_type) < 0)
		return -ENOMEM;
	s->replicas = (uint32_t)jint(doc, "replicas", spec_field_find(&spec_root, "replicas")->default_int);
	s->cpu_millis = (uint32_t)jint(doc, "cpu_millis", 0);
	s->memory_mib = (uint32_t)jint(doc, "memory_mib", 0);
	s->ephemeral_storage_gib = (uint32_t)jint(
		doc, "ephemeral_storage_gib", spec_field_find(&spec_root, "ephemeral_storage_gib")->default_int);

	if (ports && ports->u.array.n) {
		s->ports = calloc(ports->u.array.n, sizeof(*s->ports));
		if (!s->ports)
			return -ENOMEM;
		for (size_t i = 0; i < ports->u.array.n; i++) {
			const struct json_value *p = ports->u.array.items[i];

			if (dup_str(jstr(p, "name", NULL), &s->ports[i].name) < 0)
				return -ENOMEM;
			s->n_ports = i + 1;
			s->ports[i].protocol = strcmp(jstr(p, "protocol", "tcp"), "udp") == 0 ? FLASH_SPEC_PROTOCOL_UDP
											      : FLASH_SPEC_PROTOCOL_TCP;
			s->ports[i].container_port = (uint16_t)jint(p, "container_port", 0);
		}
	}

	s->exposure = streq(exposure_type(exp), "public") ? FLASH_SPEC_EXPOSURE_PUBLIC : FLASH_SPEC_EXPOSURE_INTERNAL;
	s->traffic_mode = streq(traffic_mode(exp), "direct") ? FLASH_SPEC_TRAFFIC_DIRECT : FLASH_SPEC_TRAFFIC_FORWARDED;
	s->egress = streq(egress_mode(eg), "restricted") ? FLASH_SPEC_EGRESS_RESTRICTED
		    : streq(egress_mode(eg), "internet") ? FLASH_SPEC_EGRESS_INTERNET
							 : FLASH_SPEC_EGRESS_DISABLED;
	s->allow_same_organization =
		jbool(eg, "allow_same_organization",
		      spec_field_find(spec_field_find(&spec_root, "egress"), "allow_same_organization")->default_bool);
	r = build_cidrs(exp, "allowed_source_cidrs", &s->cidrs[FLASH_SPEC_ALLOWED_SOURCES]);
	if (r >= 0)
		r = build_cidrs(exp, "denied_source_cidrs", &s->cidrs[FLASH_SPEC_DENIED_SOURCES]);
	if (r >= 0)
		r = build_cidrs(eg, "allowed_destination_cidrs", &s->cidrs[FLASH_SPEC_ALLOWED_DESTINATIONS]);
	if (r >= 0)
		r = build_cidrs(eg, "denied_destination_cidrs", &s->cidrs[FLASH_SPEC_DENIED_DESTINATIONS]);
	if (r < 0)
		return r;

	r = build_kv(member(doc, "env", JSON_OBJECT), &s->env, &s->n_env);
	if (r >= 0)
		r = build_kv(member(doc, "metadata", JSON_OBJECT), &s->metadata, &s->n_metadata);
	if (r >= 0)
		r = build_strv(member(doc, "command", JSON_ARRAY), &s->command, &s->n_command);
	if (r >= 0)
		r = build_strv(member(doc, "args", JSON_ARRAY), &s->args, &s->n_args);
	if (r < 0)
		return r;

	if (as) {
		s->has_autoscaling = true;
		s->as_min = (uint32_t)jint(as, "min_replicas", 1);
		s->as_max = (uint32_t)jint(as, "max_replicas", 1);
		s->as_target = (uint32_t)jint(
			as, "target_cpu_percent",
			spec_field_find(spec_field_find(&spec_root, "autoscaling"), "target_cpu_percent")->default_int);
	}
	if (domains && domains->u.array.n) {
		s->domains = calloc(domains->u.array.n, sizeof(*s->domains));
		if (!s->domains)
			return -ENOMEM;
		for (size_t i = 0; i < domains->u.array.n; i++) {
			const struct json_value *d = domains->u.array.items[i];

			s->n_domains = i + 1;
			if (dup_str(jstr(d, "host", NULL), &s->domains[i].host) < 0 ||
			    dup_str(jstr(d, "port", NULL), &s->domains[i].port) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- canonical JSON */

static void gen_cidrs(struct json_writer *w, const char *key, const struct spec_cidrs *c)
{
	char text[FLOWSDN_PREFIX_STRLEN];

	jw_key(w, key);
	jw_array_open(w);
	for (size_t i = 0; i < c->n; i++) {
		int n = flowsdn_prefix_format(&c->v[i], text, sizeof(text));

		/* A parsed prefix always formats; a failure leaves the
		 * document incomplete, which finishing reports. */
		if (n >= 0)
			jw_string_len(w, text, (size_t)n);
		else
			return;
	}
	jw_array_close(w);
}

static void gen_strv(struct json_writer *w, const char *key, char *const *v, size_t n)
{
	jw_key(w, key);
	jw_array_open(w);
	for (size_t i = 0; i < n; i++)
		jw_string(w, v[i]);
	jw_array_close(w);
}

static void gen_kv(struct json_writer *w, const char *key, const struct spec_kv *kv, size_t n)
{
	jw_key(w, key);
	jw_object_open(w);
	for (size_t i = 0; i < n; i++)
		jw_kv_string(w, kv[i].key, kv[i].value);
	jw_object_close(w);
}

/* Keys in bytewise order at every level (the field tables are sorted
 * the same way; a unit test checks the output is). */
static void gen_spec(struct json_writer *w, const struct flash_spec *s)
{
	static const char *const egress_names[] = { "disabled", "restricted", "internet" };

	jw_object_open(w);
	gen_strv(w, "args", s->args, s->n_args);
	if (s->has_autoscaling) {
		jw_key(w, "autoscaling");
		jw_object_open(w);
		jw_kv_int(w, "max_replicas", s->as_max);
		jw_kv_int(w, "min_replicas", s->as_min);
		jw_kv_int(w, "target_cpu_percent", s->as_target);
		jw_object_close(w);
	}
	gen_strv(w, "command", s->command, s->n_command);
	jw_kv_int(w, "cpu_millis", s->cpu_millis);
	jw_key(w, "domains");
	jw_array_open(w);
	for (size_t i = 0; i < s->n_domains; i++) {
		jw_object_open(w);
		jw_kv_string(w, "host", s->domains[i].host);
		jw_kv_string(w, "port", s->domains[i].port);
		jw_object_close(w);
	}
	jw_array_close(w);

	jw_key(w, "egress");
	jw_object_open(w);
	jw_kv_bool(w, "allow_same_organization", s->allow_same_organization);
	gen_cidrs(w, "allowed_destination_cidrs", &s->cidrs[FLASH_SPEC_ALLOWED_DESTINATIONS]);
	gen_cidrs(w, "denied_destination_cidrs", &s->cidrs[FLASH_SPEC_DENIED_DESTINATIONS]);
	jw_kv_string(w, "mode", egress_names[s->egress]);
	jw_object_close(w);

	gen_kv(w, "env", s->env, s->n_env);
	jw_kv_int(w, "ephemeral_storage_gib", s->ephemeral_storage_gib);

	jw_key(w, "exposure");
	jw_object_open(w);
	gen_cidrs(w, "allowed_source_cidrs", &s->cidrs[FLASH_SPEC_ALLOWED_SOURCES]);
	gen_cidrs(w, "denied_source_cidrs", &s->cidrs[FLASH_SPEC_DENIED_SOURCES]);
	jw_kv_string(w, "traffic_mode", s->traffic_mode == FLASH_SPEC_TRAFFIC_DIRECT ? "direct" : "forwarded");
	jw_kv_string(w, "type", s->exposure == FLASH_SPEC_EXPOSURE_PUBLIC ? "public" : "internal");
	jw_object_close(w);

	if (s->gpu_type)
		jw_kv_string(w, "gpu_type", s->gpu_type);
	jw_kv_string(w, "image", s->image);
	jw_kv_int(w, "memory_mib", s->memory_mib);
	gen_kv(w, "metadata", s->metadata, s->n_metadata);

	jw_key(w, "ports");
	jw_array_open(w);
	for (size_t i = 0; i < s->n_ports; i++) {
		jw_object_open(w);
		jw_kv_int(w, "container_port", s->ports[i].container_port);
		jw_kv_string(w, "name", s->ports[i].name);
		jw_kv_string(w, "protocol", flash_spec_protocol_name(s->ports[i].protocol));
		jw_object_close(w);
	}
	jw_array_close(w);

	jw_kv_string(w, "region", s->region);
	jw_kv_int(w, "replicas", s->replicas);
	jw_object_close(w);
}

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static int sodium_status = -1;

static void init_sodium(void)
{
	sodium_status = sodium_init();
}

static int canonicalize(struct flash_spec *s)
{
	struct json_writer *w;
	int r;

	pthread_once(&sodium_once, init_sodium);
	if (sodium_status < 0)
		return -ENOSYS;
	w = json_writer_new(0);
	gen_spec(w, s);
	r = json_writer_finish(w, &s->canonical, &s->canonical_len);
	if (r < 0)
		return r;
	crypto_generichash(s->digest, sizeof(s->digest), (const unsigned char *)s->canonical, s->canonical_len,
			   NULL, 0);
	return 0;
}

/* ---------------------------------------------------------------- parse */

FLASH_API int flash_spec_parse(const char *json, size_t len, const struct flash_spec_parse_opts *opts,
			       struct flash_spec **ret_spec, struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	struct json_value *doc = NULL;
	struct flash_spec *spec = NULL;
	struct check_ctx ctx;
	int r;

	if (!json || !ret_spec || !OPTS_VALID(opts, flash_spec_parse_opts))
		return -EINVAL;
	diag_begin(diag, OPTS_GET(opts, max_problems, 0));

	r = json_parse_diag(json, len, &spec_json_limits, -FLASH_E_SPEC_SYNTAX, &doc, diag);
	if (r < 0)
		return r;

	check_ctx_init(&ctx, diag);
	if (spec_schema_check(&spec_root, doc, &ctx) || doc->type == JSON_OBJECT) {
		/* The semantic rules look only at members of the right type,
		 * so they run even when some schema rules failed. */
		check_ports(&ctx, doc);
		check_exposure(&ctx, doc);
		check_egress(&ctx, doc);
		check_env(&ctx, doc);
		check_argv(&ctx, doc);
		check_autoscaling(&ctx, doc);
		check_domains(&ctx, doc);
	}
	if (ctx.oom || diag_oom(diag)) {
		r = -ENOMEM;
		goto out_free_doc;
	}
	if (ctx.errors > 0) {
		r = -FLASH_E_SPEC_INVALID;
		goto out_free_doc;
	}

	spec = calloc(1, sizeof(*spec));
	if (!spec) {
		r = -ENOMEM;
		goto out_free_doc;
	}
	r = build(doc, spec);
	if (r >= 0)
		r = canonicalize(spec);
	if (r < 0) {
		flash_spec_free(spec);
		goto out_free_doc;
	}
	*ret_spec = spec;
	r = 0;
out_free_doc:
	json_free(doc);
	return r;
}

/* ---------------------------------------------------------------- output */

FLASH_API int flash_spec_to_json(const struct flash_spec *spec, char **ret_json, size_t *ret_len)
{
	char *s;

	if (!spec || !ret_json)
		return -EINVAL;
	s = strndup(spec->canonical, spec->canonical_len);
	if (!s)
		return -ENOMEM;
	*ret_json = s;
	if (ret_len)
		*ret_len = spec->canonical_len;
	return 0;
}

FLASH_API int flash_spec_digest(const struct flash_spec *spec, uint8_t ret_digest[FLASH_SPEC_DIGEST_SIZE])
{
	if (!spec || !ret_digest)
		return -EINVAL;
	memcpy(ret_digest, spec->digest, FLASH_SPEC_DIGEST_SIZE);
	return 0;
}

FLASH_API int flash_spec_digest_hex(const struct flash_spec *spec, char buf[FLASH_SPEC_DIGEST_HEX_SIZE])
{
	if (!spec || !buf)
		return -EINVAL;
	sodium_bin2hex(buf, FLASH_SPEC_DIGEST_HEX_SIZE, spec->digest, FLASH_SPEC_DIGEST_SIZE);
	return 0;
}

FLASH_API bool flash_spec_equal(const struct flash_spec *a, const struct flash_spec *b)
{
	return a && b && a->canonical_len == b->canonical_len &&
	       memcmp(a->canonical, b->canonical, a->canonical_len) == 0;
}

/* ---------------------------------------------------------------- getters */

FLASH_API const char *flash_spec_region(const struct flash_spec *spec)
{
	return spec ? spec->region : NULL;
}

FLASH_API const char *flash_spec_image(const struct flash_spec *spec)
{
	return spec ? spec->image : NULL;
}

FLASH_API uint32_t flash_spec_replicas(const struct flash_spec *spec)
{
	return spec ? spec->replicas : 0;
}

FLASH_API uint32_t flash_spec_cpu_millis(const struct flash_spec *spec)
{
	return spec ? spec->cpu_millis : 0;
}

FLASH_API uint32_t flash_spec_memory_mib(const struct flash_spec *spec)
{
	return spec ? spec->memory_mib : 0;
}

FLASH_API const char *flash_spec_gpu_type(const struct flash_spec *spec)
{
	return spec ? spec->gpu_type : NULL;
}

FLASH_API uint32_t flash_spec_gpu_count(const struct flash_spec *spec)
{
	return spec && spec->gpu_type ? 1 : 0;
}

FLASH_API uint32_t flash_spec_ephemeral_storage_gib(const struct flash_spec *spec)
{
	return spec ? spec->ephemeral_storage_gib : 0;
}

FLASH_API size_t flash_spec_port_count(const struct flash_spec *spec)
{
	return spec ? spec->n_ports : 0;
}

FLASH_API const char *flash_spec_port_name(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_ports ? spec->ports[i].name : NULL;
}

FLASH_API enum flash_spec_protocol flash_spec_port_protocol(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_ports ? spec->ports[i].protocol : FLASH_SPEC_PROTOCOL_TCP;
}

FLASH_API uint16_t flash_spec_port_container_port(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_ports ? spec->ports[i].container_port : 0;
}

FLASH_API const char *flash_spec_protocol_name(enum flash_spec_protocol protocol)
{
	return protocol == FLASH_SPEC_PROTOCOL_UDP ? "udp" : "tcp";
}

FLASH_API enum flash_spec_exposure flash_spec_exposure_type(const struct flash_spec *spec)
{
	return spec ? spec->exposure : FLASH_SPEC_EXPOSURE_INTERNAL;
}

FLASH_API enum flash_spec_traffic_mode flash_spec_traffic_mode(const struct flash_spec *spec)
{
	return spec ? spec->traffic_mode : FLASH_SPEC_TRAFFIC_FORWARDED;
}

FLASH_API enum flash_spec_egress flash_spec_egress_mode(const struct flash_spec *spec)
{
	return spec ? spec->egress : FLASH_SPEC_EGRESS_DISABLED;
}

FLASH_API bool flash_spec_egress_allow_same_organization(const struct flash_spec *spec)
{
	return spec && spec->allow_same_organization;
}

FLASH_API size_t flash_spec_cidr_count(const struct flash_spec *spec, enum flash_spec_cidr_list list)
{
	return spec && (unsigned int)list < ARRAY_SIZE(spec->cidrs) ? spec->cidrs[list].n : 0;
}

FLASH_API const struct flowsdn_prefix *flash_spec_cidr(const struct flash_spec *spec, enum flash_spec_cidr_list list,
						       size_t i)
{
	return spec && (unsigned int)list < ARRAY_SIZE(spec->cidrs) && i < spec->cidrs[list].n ? &spec->cidrs[list].v[i]
												  : NULL;
}

static int kv_key_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct spec_kv *)elem)->key);
}

static const char *kv_find(const struct spec_kv *kv, size_t n, const char *key)
{
	bool found;
	size_t i;

	if (!key)
		return NULL;
	i = util_lower_bound(kv, n, sizeof(*kv), key, kv_key_cmp, &found);
	return found ? kv[i].value : NULL;
}

FLASH_API size_t flash_spec_env_count(const struct flash_spec *spec)
{
	return spec ? spec->n_env : 0;
}

FLASH_API const char *flash_spec_env_key(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_env ? spec->env[i].key : NULL;
}

FLASH_API const char *flash_spec_env_value(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_env ? spec->env[i].value : NULL;
}

FLASH_API const char *flash_spec_env_get(const struct flash_spec *spec, const char *key)
{
	return spec ? kv_find(spec->env, spec->n_env, key) : NULL;
}

FLASH_API size_t flash_spec_metadata_count(const struct flash_spec *spec)
{
	return spec ? spec->n_metadata : 0;
}

FLASH_API const char *flash_spec_metadata_key(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_metadata ? spec->metadata[i].key : NULL;
}

FLASH_API const char *flash_spec_metadata_value(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_metadata ? spec->metadata[i].value : NULL;
}

FLASH_API const char *flash_spec_metadata_get(const struct flash_spec *spec, const char *key)
{
	return spec ? kv_find(spec->metadata, spec->n_metadata, key) : NULL;
}

FLASH_API size_t flash_spec_command_count(const struct flash_spec *spec)
{
	return spec ? spec->n_command : 0;
}

FLASH_API const char *flash_spec_command(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_command ? spec->command[i] : NULL;
}

FLASH_API size_t flash_spec_args_count(const struct flash_spec *spec)
{
	return spec ? spec->n_args : 0;
}

FLASH_API const char *flash_spec_arg(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_args ? spec->args[i] : NULL;
}

FLASH_API bool flash_spec_has_autoscaling(const struct flash_spec *spec)
{
	return spec && spec->has_autoscaling;
}

FLASH_API uint32_t flash_spec_autoscaling_min_replicas(const struct flash_spec *spec)
{
	return spec && spec->has_autoscaling ? spec->as_min : 0;
}

FLASH_API uint32_t flash_spec_autoscaling_max_replicas(const struct flash_spec *spec)
{
	return spec && spec->has_autoscaling ? spec->as_max : 0;
}

FLASH_API uint32_t flash_spec_autoscaling_target_cpu_percent(const struct flash_spec *spec)
{
	return spec && spec->has_autoscaling ? spec->as_target : 0;
}

FLASH_API size_t flash_spec_domain_count(const struct flash_spec *spec)
{
	return spec ? spec->n_domains : 0;
}

FLASH_API const char *flash_spec_domain_host(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_domains ? spec->domains[i].host : NULL;
}

FLASH_API const char *flash_spec_domain_port(const struct flash_spec *spec, size_t i)
{
	return spec && i < spec->n_domains ? spec->domains[i].port : NULL;
}
