/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading parsed JSON with diagnostics: typed getters by path and the
 * table-driven reader of closed objects (see json.h). */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "json.h"

const char *json_string_value(const struct json_value *v)
{
	const char *s;

	return v && json_get_string(v, &s) == 0 ? s : NULL;
}

const struct json_value *json_at(const struct json_value *root, const char *path)
{
	const struct json_value *cur = root;
	const char *p = path;

	if (!root || !path)
		return NULL;
	while (*p && cur) {
		if (*p == '[') {
			char *end;
			unsigned long long i = strtoull(p + 1, &end, 10);

			if (end == p + 1 || *end != ']' || cur->type != JSON_ARRAY || i >= cur->u.array.n)
				return NULL;
			cur = cur->u.array.items[i];
			p = end + 1;
		} else {
			const char *stop;
			char key[256];
			size_t n;

			if (*p == '.')
				p++;
			stop = p + strcspn(p, ".[");
			n = (size_t)(stop - p);
			if (n == 0 || n >= sizeof(key) || cur->type != JSON_OBJECT)
				return NULL;
			memcpy(key, p, n);
			key[n] = '\0';
			cur = json_get(cur, key);
			p = stop;
		}
	}
	return cur;
}

/* Pushes the steps of @path ("a.b[2]") onto ctx->path; returns the length
 * to pop back to. */
static size_t push_path(struct check_ctx *ctx, const char *path)
{
	size_t saved = ctx->path.len;
	const char *p = path;

	while (p && *p) {
		if (*p == '[') {
			char *end;
			unsigned long long i = strtoull(p + 1, &end, 10);

			json_path_push_index(&ctx->path, (size_t)i);
			p = *end == ']' ? end + 1 : end + strlen(end);
		} else {
			char key[256];
			size_t n;

			if (*p == '.')
				p++;
			n = strcspn(p, ".[");
			if (n >= sizeof(key))
				n = sizeof(key) - 1;
			memcpy(key, p, n);
			key[n] = '\0';
			json_path_push_key(&ctx->path, key);
			p += strcspn(p, ".[");
		}
	}
	return saved;
}

static const char *type_phrase(enum json_type t)
{
	switch (t) {
	case JSON_NULL: return "null";
	case JSON_BOOL: return "a boolean";
	case JSON_NUMBER: return "a number";
	case JSON_STRING: return "a string";
	case JSON_ARRAY: return "an array";
	case JSON_OBJECT: return "an object";
	}
	return "a value";
}

int json_read_value_at(struct check_ctx *ctx, const struct json_value *root, const char *path,
		       enum json_type type, bool required, const struct json_value **ret)
{
	const struct json_value *v = json_at(root, path);
	size_t saved;
	int r = 0;

	if (!v && !required)
		return 0;
	saved = push_path(ctx, path);
	if (!v) {
		check_error(ctx, "required", NULL, "is required");
		r = JSON_READ_REPORTED;
	} else if (v->type != type) {
		check_error(ctx, "type", v, "must be %s, not %s", type_phrase(type), type_phrase(v->type));
		r = JSON_READ_REPORTED;
	} else if (ret) {
		*ret = v;
	}
	json_path_pop(&ctx->path, saved);
	return r;
}

int json_read_string_at(struct check_ctx *ctx, const struct json_value *root, const char *path, bool required,
			const char **ret)
{
	const struct json_value *v = NULL;
	size_t saved;
	int r = json_read_value_at(ctx, root, path, JSON_STRING, required, &v);

	if (r < 0 || !v)
		return r;
	saved = push_path(ctx, path);
	r = json_read_strref(ctx, v, ret, NULL);
	json_path_pop(&ctx->path, saved);
	return r;
}

int json_read_int_at(struct check_ctx *ctx, const struct json_value *root, const char *path, bool required,
		     int64_t min, int64_t max, int64_t *ret)
{
	const struct json_value *v = NULL;
	struct json_int_range range = { min, max };
	int64_t x;
	size_t saved;
	int r = json_read_value_at(ctx, root, path, JSON_NUMBER, required, &v);

	if (r < 0 || !v)
		return r;
	saved = push_path(ctx, path);
	r = json_read_int64(ctx, v, &x, &range);
	json_path_pop(&ctx->path, saved);
	if (r == 0 && ret)
		*ret = x;
	return r;
}

int json_read_bool_at(struct check_ctx *ctx, const struct json_value *root, const char *path, bool required,
		      bool *ret)
{
	const struct json_value *v = NULL;
	int r = json_read_value_at(ctx, root, path, JSON_BOOL, required, &v);

	if (r == 0 && v && ret)
		*ret = v->u.boolean;
	return r;
}

int json_read_object(struct check_ctx *ctx, const struct json_value *obj, const struct json_field *fields, size_t n,
		     void *target)
{
	return json_read_object_flags(ctx, obj, fields, n, 0, target);
}

static void report_unknown(struct check_ctx *ctx)
{
	if (ctx->style && ctx->style->unknown)
		ctx->style->unknown(ctx);
	else
		check_error(ctx, "unknown-field", NULL, "unknown key");
}

static void report_type(struct check_ctx *ctx, const struct json_value *v, enum json_type want)
{
	if (ctx->style && ctx->style->type)
		ctx->style->type(ctx, v, want);
	else
		check_error(ctx, "type", v, "must be %s, not %s", type_phrase(want), type_phrase(v->type));
}

static const struct json_field *field_of(const struct json_field *fields, size_t n, const char *key)
{
	for (size_t k = 0; k < n; k++)
		if (strcmp(fields[k].name, key) == 0)
			return &fields[k];
	return NULL;
}

/* Field @f's value @v (its key pushed): the type check, then its reader. */
static int read_field(struct check_ctx *ctx, const struct json_field *f, const struct json_value *v,
		      unsigned int flags, void *target)
{
	bool any = f->type == JSON_NULL && (flags & JSON_READ_NULL_ABSENT);

	if (!any && v->type != f->type) {
		report_type(ctx, v, f->type);
		return 0;
	}
	/* A NULL target checks without storing (the reader gets NULL). */
	return f->read ? f->read(ctx, v, target ? (char *)target + f->offset : NULL, f->arg) : 0;
}

/* json_read_object_flags() with JSON_READ_TABLE_ORDER. */
static int read_table_order(struct check_ctx *ctx, const struct json_value *obj, const struct json_field *fields,
			    size_t n, unsigned int flags, void *target)
{
	for (size_t i = 0; !(flags & JSON_READ_IGNORE_UNKNOWN) && i < obj->u.object.n; i++) {
		const struct json_member *m = &obj->u.object.members[i];

		if (!field_of(fields, n, m->key)) {
			size_t saved = json_path_push_key(&ctx->path, m->key);

			report_unknown(ctx);
			json_path_pop(&ctx->path, saved);
		}
	}
	for (size_t k = 0; k < n; k++) {
		const struct json_value *v = json_get(obj, fields[k].name);
		size_t saved;
		int r;

		if (v && v->type == JSON_NULL && (flags & JSON_READ_NULL_ABSENT))
			v = NULL;
		if (!v) {
			if (fields[k].required)
				check_error_at(ctx, fields[k].name, "required", NULL, "is required");
			continue;
		}
		saved = json_path_push_key(&ctx->path, fields[k].name);
		r = read_field(ctx, &fields[k], v, flags, target);
		json_path_pop(&ctx->path, saved);
		if (r < 0 && r != JSON_READ_REPORTED)
			return r;
	}
	return 0;
}

int json_read_object_flags(struct check_ctx *ctx, const struct json_value *obj, const struct json_field *fields,
			   size_t n, unsigned int flags, void *target)
{
	size_t errors = ctx->errors;
	int r;

	if (!obj || obj->type != JSON_OBJECT) {
		if (obj && ctx->style && ctx->style->type)
			ctx->style->type(ctx, obj, JSON_OBJECT);
		else
			check_error(ctx, "type", obj, "must be an object");
		return JSON_READ_REPORTED;
	}
	if (flags & JSON_READ_TABLE_ORDER) {
		r = read_table_order(ctx, obj, fields, n, flags, target);
		if (r < 0)
			return r;
		return ctx->oom ? -ENOMEM : ctx->errors > errors ? JSON_READ_REPORTED : 0;
	}
	for (size_t i = 0; i < obj->u.object.n; i++) {
		const struct json_member *m = &obj->u.object.members[i];
		const struct json_field *f = field_of(fields, n, m->key);
		size_t saved;

		r = 0;
		if (!f && (flags & JSON_READ_IGNORE_UNKNOWN))
			continue;
		if (f && m->value->type == JSON_NULL && (flags & JSON_READ_NULL_ABSENT))
			continue;
		saved = json_path_push_key(&ctx->path, m->key);
		if (!f)
			report_unknown(ctx);
		else
			r = read_field(ctx, f, m->value, flags, target);
		json_path_pop(&ctx->path, saved);
		if (r < 0 && r != JSON_READ_REPORTED)
			return r;
	}
	for (size_t k = 0; k < n; k++) {
		const struct json_value *v = json_get(obj, fields[k].name);

		if (fields[k].required && (!v || (v->type == JSON_NULL && (flags & JSON_READ_NULL_ABSENT))))
			check_error_at(ctx, fields[k].name, "required", NULL, "is required");
	}
	return ctx->oom ? -ENOMEM : ctx->errors > errors ? JSON_READ_REPORTED : 0;
}

int json_read_strref(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const char *s;

	(void)arg;
	if (v->type != JSON_STRING) {
		check_error(ctx, "type", v, "must be a string");
		return JSON_READ_REPORTED;
	}
	if (json_get_string(v, &s) < 0) {
		check_error(ctx, "nul", v, "must be a string without NUL characters");
		return JSON_READ_REPORTED;
	}
	if (dst)
		*(const char **)dst = s;
	return 0;
}

int json_read_string(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const char *s;
	char *copy;
	int r = json_read_strref(ctx, v, &s, arg);

	if (r < 0)
		return r;
	copy = strdup(s);
	if (!copy) {
		ctx->oom = true;
		return -ENOMEM;
	}
	free(*(char **)dst);
	*(char **)dst = copy;
	return 0;
}

int json_read_bool(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	(void)arg;
	if (v->type != JSON_BOOL) {
		check_error(ctx, "type", v, "must be a boolean");
		return JSON_READ_REPORTED;
	}
	*(bool *)dst = v->u.boolean;
	return 0;
}

/* An integer in [lo, hi] (narrowed by @arg's range when given). */
static int read_int(struct check_ctx *ctx, const struct json_value *v, const void *arg, int64_t lo, int64_t hi,
		    int64_t *ret)
{
	const struct json_int_range *range = arg;
	int64_t x;

	if (range) {
		lo = range->min > lo ? range->min : lo;
		hi = range->max < hi ? range->max : hi;
	}
	if (v->type != JSON_NUMBER || json_get_int64(v, &x) < 0 || x < lo || x > hi) {
		check_error(ctx, v->type == JSON_NUMBER && json_number_is_integer(v) ? "range" : "type", v,
			    "must be an integer %" PRId64 "..%" PRId64, lo, hi);
		return JSON_READ_REPORTED;
	}
	*ret = x;
	return 0;
}

int json_read_int64(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	return read_int(ctx, v, arg, INT64_MIN, INT64_MAX, dst);
}

int json_read_uint16(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	int64_t x;
	int r = read_int(ctx, v, arg, 0, UINT16_MAX, &x);

	if (r == 0)
		*(uint16_t *)dst = (uint16_t)x;
	return r;
}

int json_read_uint32(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	int64_t x;
	int r = read_int(ctx, v, arg, 0, UINT32_MAX, &x);

	if (r == 0)
		*(uint32_t *)dst = (uint32_t)x;
	return r;
}

int json_read_nested(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const struct json_table *t = arg;

	return json_read_object_flags(ctx, v, t->fields, t->n, t->flags, dst);
}

int json_read_objects(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const struct json_table *t = arg;
	size_t errors = ctx->errors;

	if (v->type != JSON_ARRAY) {
		check_error(ctx, "type", v, "must be an array");
		return JSON_READ_REPORTED;
	}
	for (size_t i = 0; i < v->u.array.n; i++) {
		size_t saved = json_path_push_index(&ctx->path, i);
		int r = json_read_object_flags(ctx, v->u.array.items[i], t->fields, t->n, t->flags, dst);

		json_path_pop(&ctx->path, saved);
		if (r < 0 && r != JSON_READ_REPORTED)
			return r;
	}
	return ctx->errors > errors ? JSON_READ_REPORTED : 0;
}
