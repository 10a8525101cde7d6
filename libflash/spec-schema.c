/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The table-driven schema checker: every rule JSON Schema can express
 * (types, required, closed objects, enums, bounds, lengths, patterns, item
 * counts, unique items) checked from the field table, every problem
 * reported with its path.  Also the two string formats that need code:
 * CIDRs (libflowsdn's parser) and OCI references.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>

#include "internal.h"
#include "names.h"
#include "spec-internal.h"

/* Specs and policies are small: these bounds keep memory use small for
 * any input (largest string: an env value of 32 KiB). */
const struct json_limits spec_json_limits = {
	.max_depth = 16,
	.max_string = 64 * 1024,
	.max_members = 1024,
	.max_nodes = 20000,
	.max_input = 1024 * 1024,
};

/* ---------------------------------------------------------------- patterns */

#define MAX_PATTERNS 16

static struct {
	const char *pattern;
	regex_t re;
} patterns[MAX_PATTERNS];
static size_t n_patterns;
static bool patterns_ok = true;
static pthread_once_t patterns_once = PTHREAD_ONCE_INIT;

static void collect(const struct spec_field *f, unsigned int depth)
{
	if (!f || depth > 8)
		return;
	if (f->pattern) {
		bool seen = false;

		for (size_t i = 0; i < n_patterns; i++)
			seen |= patterns[i].pattern == f->pattern;
		if (!seen) {
			if (n_patterns == MAX_PATTERNS ||
			    regcomp(&patterns[n_patterns].re, f->pattern, REG_EXTENDED | REG_NOSUB) != 0) {
				pr_err("spec: cannot compile pattern %s", f->pattern);
				patterns_ok = false;
				return;
			}
			patterns[n_patterns++].pattern = f->pattern;
		}
	}
	collect(f->items, depth + 1);
	collect(f->key, depth + 1);
	for (size_t i = 0; i < f->n_fields; i++)
		collect(&f->fields[i], depth + 1);
}

static void compile_patterns(void)
{
	collect(&spec_root, 0);
	collect(&policy_root, 0);
}

bool spec_pattern_match(const char *pattern, const char *s, size_t len)
{
	if (!pattern)
		return true;
	/* Every pattern is ASCII-only; refusing other bytes up front keeps
	 * the result independent of the locale. */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80 || s[i] == '\0')
			return false;
	pthread_once(&patterns_once, compile_patterns);
	if (!patterns_ok)
		return false;
	for (size_t i = 0; i < n_patterns; i++)
		if (patterns[i].pattern == pattern)
			return regexec(&patterns[i].re, s, 0, NULL, 0) == 0;
	return false;
}

/* ---------------------------------------------------------------- formats */

int spec_cidr_parse(const char *s, size_t len, struct flowsdn_prefix *ret)
{
	FLOWSDN_OPTS(flowsdn_prefix_opts, opts, .flags = FLOWSDN_PREFIX_ALLOW_HOST);

	return flowsdn_prefix_parse(s, len, &opts, ret);
}

const char *spec_oci_reference_problem(const char *ref)
{
	const char *slash = strchr(ref, '/');
	const char *end;
	size_t name_len;

	/* The first component is a registry only with a '.' or ':' or when
	 * it is "localhost"; otherwise it is part of the repository and
	 * must be lower case (the pattern allows upper case in registries). */
	if (slash) {
		size_t n = (size_t)(slash - ref);
		bool domain = memchr(ref, '.', n) || memchr(ref, ':', n) ||
			      (n == 9 && memcmp(ref, "localhost", 9) == 0);

		if (!domain)
			for (size_t i = 0; i < n; i++)
				if (ref[i] >= 'A' && ref[i] <= 'Z')
					return "repository name must be lower case (the first component is not "
					       "a registry: it has no '.' or ':' and is not localhost)";
	}
	/* The name (registry and repository) is at most 255 bytes. */
	end = strchr(ref, '@');
	name_len = end ? (size_t)(end - ref) : strlen(ref);
	{
		const char *last_slash = NULL, *colon;

		for (size_t i = 0; i < name_len; i++)
			if (ref[i] == '/')
				last_slash = ref + i;
		colon = memchr(last_slash ? last_slash : ref, ':',
			       name_len - (size_t)((last_slash ? last_slash : ref) - ref));
		if (colon)
			name_len = (size_t)(colon - ref);
	}
	if (name_len > 255)
		return "image name (registry and repository) is longer than 255 characters";
	return NULL;
}

/* ---------------------------------------------------------------- reading */

const char *jstr(const struct json_value *obj, const char *key, const char *def)
{
	const struct json_value *v = json_get(obj, key);
	const char *s;

	return v && json_get_string(v, &s) == 0 ? s : def;
}

int64_t jint(const struct json_value *obj, const char *key, int64_t def)
{
	const struct json_value *v = json_get(obj, key);
	int64_t n;

	return v && json_get_int64(v, &n) == 0 ? n : def;
}

bool jbool(const struct json_value *obj, const char *key, bool def)
{
	const struct json_value *v = json_get(obj, key);
	bool b;

	return v && json_get_bool(v, &b) == 0 ? b : def;
}

/* ---------------------------------------------------------------- checker */

static const char *type_article(enum spec_type t)
{
	switch (t) {
	case SPEC_STRING:
		return "a string";
	case SPEC_INTEGER:
		return "an integer";
	case SPEC_BOOLEAN:
		return "a boolean";
	case SPEC_OBJECT:
	case SPEC_MAP:
		return "an object";
	case SPEC_ARRAY:
		return "an array";
	}
	return "?";
}

static const char *json_article(enum json_type t)
{
	switch (t) {
	case JSON_NULL:
		return "null";
	case JSON_BOOL:
		return "a boolean";
	case JSON_NUMBER:
		return "a number";
	case JSON_STRING:
		return "a string";
	case JSON_ARRAY:
		return "an array";
	case JSON_OBJECT:
		return "an object";
	}
	return "?";
}

static bool type_matches(enum spec_type t, const struct json_value *v)
{
	switch (t) {
	case SPEC_STRING:
		return v->type == JSON_STRING;
	case SPEC_INTEGER:
		return v->type == JSON_NUMBER;
	case SPEC_BOOLEAN:
		return v->type == JSON_BOOL;
	case SPEC_OBJECT:
	case SPEC_MAP:
		return v->type == JSON_OBJECT;
	case SPEC_ARRAY:
		return v->type == JSON_ARRAY;
	}
	return false;
}

static bool check_integer(const struct spec_field *f, const struct json_value *v, struct check_ctx *ctx)
{
	const char *text = v->u.number.text;
	int64_t n;

	if (!json_number_is_integer(v)) {
		check_error(ctx, "integer", v, "must be an integer (no fraction or exponent)");
		return false;
	}
	if (strcmp(text, "-0") == 0) {
		check_error(ctx, "integer", v, "must be an integer (negative zero is not accepted)");
		return false;
	}
	if (json_get_int64(v, &n) < 0) {
		if (text[0] == '-')
			check_error(ctx, "minimum", v, "must be at least %" PRId64, f->minimum);
		else
			check_error(ctx, "maximum", v, "must be at most %" PRId64, f->maximum);
		return false;
	}
	if (n < f->minimum) {
		check_error(ctx, "minimum", v, "must be at least %" PRId64, f->minimum);
		return false;
	}
	if (n > f->maximum) {
		check_error(ctx, "maximum", v, "must be at most %" PRId64, f->maximum);
		return false;
	}
	return true;
}

static bool check_string(const struct spec_field *f, const struct json_value *v, struct check_ctx *ctx)
{
	const char *s = v->u.string.ptr;
	size_t len = v->u.string.len;

	if (v->u.string.has_nul) {
		check_error(ctx, "nul-character", v, "must not contain a NUL character");
		return false;
	}
	if (f->enum_values) {
		char list[128];
		size_t o = 0;

		for (const char *const *e = f->enum_values; *e; e++)
			if (strlen(*e) == len && memcmp(*e, s, len) == 0)
				return true;
		list[0] = '\0';
		for (const char *const *e = f->enum_values; *e && o < sizeof(list); e++) {
			int w = snprintf(list + o, sizeof(list) - o, "%s%s", o ? ", " : "", *e);

			if (w < 0)
				break;
			o += (size_t)w;
		}
		check_error(ctx, "enum", v, "must be one of: %s", list);
		return false;
	}
	if (len < f->min_length) {
		if (f->min_length == 1)
			check_error(ctx, "min-length", v, "must not be empty");
		else
			check_error(ctx, "min-length", v, "must be at least %zu characters", f->min_length);
		return false;
	}
	if (len > f->max_length) {
		check_error(ctx, "max-length", v, "must be at most %zu bytes (is %zu)", f->max_length, len);
		return false;
	}
	if (f->format == SPEC_FMT_DNS_LABEL) {
		/* the one DNS label rule; the pattern only describes it to the
		 * API server */
		if (!names_dns_label_valid(s)) {
			check_error(ctx, "pattern", v, "must be %s", f->pattern_hint ? f->pattern_hint : f->pattern);
			return false;
		}
	} else if (f->pattern && !spec_pattern_match(f->pattern, s, len)) {
		check_error(ctx, "pattern", v, "must be %s", f->pattern_hint ? f->pattern_hint : f->pattern);
		return false;
	}
	switch (f->format) {
	case SPEC_FMT_NONE:
	case SPEC_FMT_DNS_LABEL:
		break;
	case SPEC_FMT_OCI_REFERENCE: {
		const char *problem = spec_oci_reference_problem(s);

		if (problem) {
			check_error(ctx, "oci-reference", v, "%s", problem);
			return false;
		}
		break;
	}
	case SPEC_FMT_CIDR: {
		struct flowsdn_prefix p;
		int r = spec_cidr_parse(s, len, &p);

		if (r == -FLOWSDN_E_PREFIX_HOST_BITS) {
			FLOWSDN_OPTS(flowsdn_prefix_opts, norm, .flags = FLOWSDN_PREFIX_NORMALIZE);
			char text[FLOWSDN_PREFIX_STRLEN] = "";

			if (flowsdn_prefix_parse(s, len, &norm, &p) == 0)
				flowsdn_prefix_format(&p, text, sizeof(text));
			check_error(ctx, "cidr", v, "has bits set past its prefix length (the network is %s)", text);
			return false;
		}
		if (r < 0) {
			check_error(ctx, "cidr", v, "must be an IPv4 or IPv6 address or CIDR: %s",
				    flowsdn_strerror(r));
			return false;
		}
		break;
	}
	}
	return true;
}

static bool check_array(const struct spec_field *f, const struct json_value *v, struct check_ctx *ctx)
{
	size_t n = v->u.array.n;
	bool ok = true;

	if (n > f->max_items) {
		check_error(ctx, "max-items", NULL, "must have at most %zu items (has %zu)", f->max_items, n);
		ok = false;
		n = f->max_items; /* the items past the bound are not examined */
	}
	for (size_t i = 0; i < n; i++) {
		const struct json_value *item = v->u.array.items[i];
		size_t saved = json_path_push_index(&ctx->path, i);

		if (!spec_schema_check(f->items, item, ctx))
			ok = false;
		else if (f->unique_items)
			for (size_t j = 0; j < i; j++)
				if (json_equal(v->u.array.items[j], item)) {
					check_error(ctx, "duplicate", item, "duplicates item %zu", j);
					ok = false;
					break;
				}
		json_path_pop(&ctx->path, saved);
	}
	return ok;
}

static bool check_map(const struct spec_field *f, const struct json_value *v, struct check_ctx *ctx)
{
	size_t n = v->u.object.n;
	bool ok = true;

	if (n > f->max_items) {
		check_error(ctx, "max-properties", NULL, "must have at most %zu entries (has %zu)", f->max_items, n);
		ok = false;
		n = f->max_items;
	}
	for (size_t i = 0; i < n; i++) {
		const struct json_member *m = &v->u.object.members[i];
		size_t saved = json_path_push_key(&ctx->path, m->key);
		const struct json_value key = {
			.type = JSON_STRING,
			.u.string = { .ptr = m->key, .len = m->key_len },
		};

		/* The key is checked as a string value, reported at the
		 * member's path. */
		if (!check_string(f->key, &key, ctx))
			ok = false;
		if (!spec_schema_check(f->items, m->value, ctx))
			ok = false;
		json_path_pop(&ctx->path, saved);
	}
	return ok;
}

static bool check_object(const struct spec_field *f, const struct json_value *v, struct check_ctx *ctx)
{
	bool ok = true;

	/* Unknown members first, in document order. */
	for (size_t i = 0; i < v->u.object.n; i++) {
		const struct json_member *m = &v->u.object.members[i];

		if (!spec_field_find(f, m->key)) {
			size_t saved = json_path_push_key(&ctx->path, m->key);
			char allowed[512];
			size_t o = 0;

			allowed[0] = '\0';
			for (size_t k = 0; k < f->n_fields && o < sizeof(allowed); k++) {
				int w = snprintf(allowed + o, sizeof(allowed) - o, "%s%s", k ? ", " : "",
						 f->fields[k].name);
				if (w < 0)
					break;
				o += (size_t)w;
			}
			check_error(ctx, "unknown-field", NULL, "unknown field (known fields: %s)", allowed);
			json_path_pop(&ctx->path, saved);
			ok = false;
		}
	}
	/* Then every known field, in table (sorted) order. */
	for (size_t k = 0; k < f->n_fields; k++) {
		const struct spec_field *field = &f->fields[k];
		const struct json_value *mv = json_get(v, field->name);
		size_t saved = json_path_push_key(&ctx->path, field->name);

		if (!mv) {
			if (field->required) {
				check_error(ctx, "required", NULL, "is required");
				ok = false;
			}
		} else if (!spec_schema_check(field, mv, ctx)) {
			ok = false;
		}
		json_path_pop(&ctx->path, saved);
	}
	return ok;
}

bool spec_schema_check(const struct spec_field *f, const struct json_value *v, struct check_ctx *ctx)
{
	if (!type_matches(f->type, v)) {
		check_error(ctx, "type", v, "must be %s, not %s", type_article(f->type), json_article(v->type));
		return false;
	}
	switch (f->type) {
	case SPEC_STRING:
		return check_string(f, v, ctx);
	case SPEC_INTEGER:
		return check_integer(f, v, ctx);
	case SPEC_BOOLEAN:
		return true;
	case SPEC_OBJECT:
		return check_object(f, v, ctx);
	case SPEC_ARRAY:
		return check_array(f, v, ctx);
	case SPEC_MAP:
		return check_map(f, v, ctx);
	}
	return false;
}
