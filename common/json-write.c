/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one JSON emitter (see json.h), and value equality. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "json.h"

struct json_writer {
	yajl_gen g;
	unsigned int flags;
	int error;
};

struct json_writer *json_writer_new(unsigned int flags)
{
	struct json_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->g = yajl_gen_alloc(NULL);
	if (!w->g) {
		free(w);
		return NULL;
	}
	w->flags = flags;
	yajl_gen_config(w->g, yajl_gen_validate_utf8, 1);
	if (flags & JSON_WRITE_PRETTY)
		yajl_gen_config(w->g, yajl_gen_beautify, 1);
	return w;
}

void json_writer_free(struct json_writer *w)
{
	if (!w)
		return;
	yajl_gen_free(w->g);
	free(w);
}

int json_writer_error(const struct json_writer *w)
{
	return w ? w->error : -ENOMEM;
}

/* Records the first failure of a yajl call. */
static void check(struct json_writer *w, yajl_gen_status st)
{
	if (st == yajl_gen_status_ok || w->error)
		return;
	/* yajl aborts on allocation failure; what it reports is misuse or
	 * invalid input (UTF-8, number text, depth). */
	w->error = -EINVAL;
}

static bool live(const struct json_writer *w)
{
	return w && !w->error;
}

int json_writer_finish(struct json_writer *w, char **ret, size_t *ret_len)
{
	const unsigned char *buf;
	size_t len;
	char *out;
	int r;

	if (!w)
		return -ENOMEM;
	r = w->error;
	if (!r && !ret)
		r = -EINVAL;
	if (!r && yajl_gen_get_buf(w->g, &buf, &len) != yajl_gen_status_ok)
		r = -EINVAL;
	/* An incomplete document: yajl still has open containers, or nothing
	 * was written. */
	if (!r && (len == 0 || yajl_gen_map_close(w->g) != yajl_gen_generation_complete))
		r = -EINVAL;
	if (!r) {
		/* Beautified output already ends with a newline. */
		bool nl = (w->flags & JSON_WRITE_NEWLINE) && buf[len - 1] != '\n';
		bool strip = !(w->flags & JSON_WRITE_NEWLINE) && buf[len - 1] == '\n';

		if (strip)
			len--;
		out = malloc(len + 2);
		if (!out) {
			r = -ENOMEM;
		} else {
			memcpy(out, buf, len);
			if (nl)
				out[len++] = '\n';
			out[len] = '\0';
			*ret = out;
			if (ret_len)
				*ret_len = len;
		}
	}
	json_writer_free(w);
	return r;
}

void jw_object_open(struct json_writer *w)
{
	if (live(w))
		check(w, yajl_gen_map_open(w->g));
}

void jw_object_close(struct json_writer *w)
{
	if (live(w))
		check(w, yajl_gen_map_close(w->g));
}

void jw_array_open(struct json_writer *w)
{
	if (live(w))
		check(w, yajl_gen_array_open(w->g));
}

void jw_array_close(struct json_writer *w)
{
	if (live(w))
		check(w, yajl_gen_array_close(w->g));
}

void jw_string_len(struct json_writer *w, const char *s, size_t len)
{
	if (live(w))
		check(w, s ? yajl_gen_string(w->g, (const unsigned char *)s, len) : yajl_gen_null(w->g));
}

void jw_string(struct json_writer *w, const char *s)
{
	jw_string_len(w, s, s ? strlen(s) : 0);
}

void jw_key(struct json_writer *w, const char *key)
{
	if (live(w) && !key)
		w->error = -EINVAL;
	jw_string(w, key);
}

void jw_int(struct json_writer *w, int64_t v)
{
	if (live(w))
		check(w, yajl_gen_integer(w->g, (long long)v));
}

void jw_uint(struct json_writer *w, uint64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);

	if (live(w))
		check(w, yajl_gen_number(w->g, buf, (size_t)n));
}

void jw_bool(struct json_writer *w, bool v)
{
	if (live(w))
		check(w, yajl_gen_bool(w->g, v));
}

void jw_null(struct json_writer *w)
{
	if (live(w))
		check(w, yajl_gen_null(w->g));
}

/* RFC 8259 number syntax: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? */
static bool number_syntax(const char *s, size_t n)
{
	size_t i = 0, d;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0') {
		i++;
	} else {
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	return i == n;
}

void jw_number(struct json_writer *w, const char *text, size_t len)
{
	if (!live(w))
		return;
	if (!text || !number_syntax(text, len)) {
		w->error = -EINVAL;
		return;
	}
	check(w, yajl_gen_number(w->g, text, len));
}

void jw_value(struct json_writer *w, const struct json_value *v)
{
	if (!live(w))
		return;
	if (!v) {
		w->error = -EINVAL;
		return;
	}
	switch (v->type) {
	case JSON_NULL:
		jw_null(w);
		break;
	case JSON_BOOL:
		jw_bool(w, v->u.boolean);
		break;
	case JSON_NUMBER:
		jw_number(w, v->u.number.text, v->u.number.len);
		break;
	case JSON_STRING:
		jw_string_len(w, v->u.string.ptr, v->u.string.len);
		break;
	case JSON_ARRAY:
		jw_array_open(w);
		for (size_t i = 0; i < v->u.array.n; i++)
			jw_value(w, v->u.array.items[i]);
		jw_array_close(w);
		break;
	case JSON_OBJECT:
		jw_object_open(w);
		for (size_t i = 0; i < v->u.object.n; i++) {
			jw_string_len(w, v->u.object.members[i].key, v->u.object.members[i].key_len);
			jw_value(w, v->u.object.members[i].value);
		}
		jw_object_close(w);
		break;
	}
}

void jw_raw(struct json_writer *w, const char *json, size_t len)
{
	struct json_value *v = NULL;
	int r;

	if (!live(w))
		return;
	r = json_parse(json, len, NULL, &v, NULL);
	if (r < 0) {
		w->error = r == -ENOMEM ? -ENOMEM : -EINVAL;
		return;
	}
	jw_value(w, v);
	json_free(v);
}

void jw_kv_string(struct json_writer *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_string(w, s);
}

void jw_kv_int(struct json_writer *w, const char *key, int64_t v)
{
	jw_key(w, key);
	jw_int(w, v);
}

void jw_kv_uint(struct json_writer *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	jw_uint(w, v);
}

void jw_kv_bool(struct json_writer *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_bool(w, v);
}

bool json_equal(const struct json_value *a, const struct json_value *b)
{
	if (!a || !b || a->type != b->type)
		return false;
	switch (a->type) {
	case JSON_NULL:
		return true;
	case JSON_BOOL:
		return a->u.boolean == b->u.boolean;
	case JSON_NUMBER: {
		double x, y;

		if (a->u.number.len == b->u.number.len &&
		    memcmp(a->u.number.text, b->u.number.text, a->u.number.len) == 0)
			return true;
		return json_get_double(a, &x) == 0 && json_get_double(b, &y) == 0 && x == y;
	}
	case JSON_STRING:
		return a->u.string.len == b->u.string.len &&
		       memcmp(a->u.string.ptr, b->u.string.ptr, a->u.string.len) == 0;
	case JSON_ARRAY:
		if (a->u.array.n != b->u.array.n)
			return false;
		for (size_t i = 0; i < a->u.array.n; i++)
			if (!json_equal(a->u.array.items[i], b->u.array.items[i]))
				return false;
		return true;
	case JSON_OBJECT:
		if (a->u.object.n != b->u.object.n)
			return false;
		for (size_t i = 0; i < a->u.object.n; i++) {
			const struct json_value *o = json_get(b, a->u.object.members[i].key);

			if (!o || !json_equal(a->u.object.members[i].value, o))
				return false;
		}
		return true;
	}
	return false;
}
