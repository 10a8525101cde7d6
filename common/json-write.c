/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one JSON emitter (see json.h), and value equality. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "util.h"

struct json_level {
	bool object;
	size_t n;               /* members or items written so far */
};

struct json_writer {
	char *buf;
	size_t len, cap;
	unsigned int flags;
	unsigned int indent;    /* spaces a level when pretty, 0 when compact */
	int error;
	bool want_value;        /* in an object, after a key */
	bool complete;          /* the top-level value is written */
	size_t depth;
	struct json_level stack[JSON_WRITE_MAX_DEPTH];
};

struct json_writer *json_writer_new(unsigned int flags)
{
	struct json_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->flags = flags;
	if (flags & JSON_WRITE_PRETTY)
		w->indent = flags & JSON_WRITE_INDENT2 ? 2 : 4;
	return w;
}

void json_writer_free(struct json_writer *w)
{
	if (!w)
		return;
	free(w->buf);
	free(w);
}

int json_writer_error(const struct json_writer *w)
{
	return w ? w->error : -ENOMEM;
}

static bool live(const struct json_writer *w)
{
	return w && !w->error;
}

static void fail(struct json_writer *w, int error)
{
	if (!w->error)
		w->error = error;
}

/* Room for @n more bytes and a NUL. */
static bool reserve(struct json_writer *w, size_t n)
{
	size_t cap;
	char *p;

	if (w->cap - w->len > n)
		return true;
	if (n > SIZE_MAX / 2 - w->len) {
		fail(w, -ENOMEM);
		return false;
	}
	cap = w->cap ? w->cap : 256;
	while (cap - w->len <= n)
		cap *= 2;
	p = realloc(w->buf, cap);
	if (!p) {
		fail(w, -ENOMEM);
		return false;
	}
	w->buf = p;
	w->cap = cap;
	return true;
}

static void put(struct json_writer *w, const char *s, size_t n)
{
	if (!reserve(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

static void put_char(struct json_writer *w, char c)
{
	if (reserve(w, 1))
		w->buf[w->len++] = c;
}

/* A newline and the indentation of @depth (pretty output only). */
static void newline(struct json_writer *w, size_t depth)
{
	size_t n = depth * w->indent;

	if (!w->indent || !reserve(w, n + 1))
		return;
	w->buf[w->len++] = '\n';
	memset(w->buf + w->len, ' ', n);
	w->len += n;
}

/* Before a value or a key: the separator and line break its position asks
 * for.  Returns false (the error set) when nothing may be written here;
 * *ret_key tells a string in key position. */
static bool begin(struct json_writer *w, bool string, bool *ret_key)
{
	struct json_level *top;

	*ret_key = false;
	if (w->complete) {
		fail(w, -EINVAL);
		return false;
	}
	if (w->depth == 0)
		return true;
	top = &w->stack[w->depth - 1];
	if (top->object && w->want_value) {
		w->want_value = false;
		return true;
	}
	if (top->object && !string) {
		/* A value where a key belongs. */
		fail(w, -EINVAL);
		return false;
	}
	if (top->n++)
		put_char(w, ',');
	newline(w, w->depth);
	*ret_key = top->object;
	return true;
}

/* After a value: the document is complete when it was the top one. */
static void end(struct json_writer *w)
{
	if (w->depth == 0)
		w->complete = true;
}

static void scalar(struct json_writer *w, const char *text, size_t len)
{
	bool key;

	if (!live(w) || !begin(w, false, &key))
		return;
	put(w, text, len);
	end(w);
}

static void open_container(struct json_writer *w, bool object)
{
	bool key;

	if (!live(w) || !begin(w, false, &key))
		return;
	if (w->depth == JSON_WRITE_MAX_DEPTH) {
		fail(w, -EINVAL);
		return;
	}
	w->stack[w->depth++] = (struct json_level){ .object = object };
	put_char(w, object ? '{' : '[');
}

static void close_container(struct json_writer *w, bool object)
{
	struct json_level *top;

	if (!live(w))
		return;
	top = w->depth ? &w->stack[w->depth - 1] : NULL;
	if (!top || top->object != object || w->want_value) {
		fail(w, -EINVAL);
		return;
	}
	w->depth--;
	if (top->n)
		newline(w, w->depth);
	put_char(w, object ? '}' : ']');
	end(w);
}

int json_writer_finish(struct json_writer *w, char **ret, size_t *ret_len)
{
	int r;

	if (!w)
		return -ENOMEM;
	r = w->error;
	/* An incomplete document: open containers, or nothing written. */
	if (!r && (!ret || !w->complete))
		r = -EINVAL;
	if (!r && (w->flags & JSON_WRITE_NEWLINE))
		put_char(w, '\n');
	if (!r && !reserve(w, 0))
		r = w->error;
	if (!r) {
		w->buf[w->len] = '\0';
		*ret = w->buf;
		if (ret_len)
			*ret_len = w->len;
		w->buf = NULL;
	}
	json_writer_free(w);
	return r;
}

void jw_object_open(struct json_writer *w)
{
	open_container(w, true);
}

void jw_object_close(struct json_writer *w)
{
	close_container(w, true);
}

void jw_array_open(struct json_writer *w)
{
	open_container(w, false);
}

void jw_array_close(struct json_writer *w)
{
	close_container(w, false);
}

/* The escaped body of a string (see json.h for the choices). */
static void put_escaped(struct json_writer *w, const unsigned char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];
		char esc[6] = { '\\', 0 };
		size_t n = 2;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(w, (const char *)s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0xf];
			n = 6;
		}
		put(w, esc, n);
	}
	put(w, (const char *)s + run, len - run);
}

void jw_string_len(struct json_writer *w, const char *s, size_t len)
{
	bool key;

	if (!live(w))
		return;
	if (!s) {
		jw_null(w);
		return;
	}
	if (!json_utf8_valid((const unsigned char *)s, len)) {
		fail(w, -EINVAL);
		return;
	}
	if (!begin(w, true, &key))
		return;
	put_char(w, '"');
	put_escaped(w, (const unsigned char *)s, len);
	put_char(w, '"');
	if (key) {
		put(w, ": ", w->indent ? 2 : 1);
		w->want_value = true;
	} else {
		end(w);
	}
}

void jw_string(struct json_writer *w, const char *s)
{
	jw_string_len(w, s, s ? strlen(s) : 0);
}

void jw_key(struct json_writer *w, const char *key)
{
	if (!live(w))
		return;
	/* Only where a key belongs. */
	if (!key || w->complete || w->depth == 0 || !w->stack[w->depth - 1].object || w->want_value) {
		fail(w, -EINVAL);
		return;
	}
	jw_string(w, key);
}

void jw_int(struct json_writer *w, int64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRId64, v);

	scalar(w, buf, (size_t)n);
}

void jw_uint(struct json_writer *w, uint64_t v)
{
	char buf[24];

	scalar(w, buf, util_format_u64(v, buf));
}

void jw_bool(struct json_writer *w, bool v)
{
	if (v)
		scalar(w, "true", 4);
	else
		scalar(w, "false", 5);
}

void jw_null(struct json_writer *w)
{
	scalar(w, "null", 4);
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
	scalar(w, text, len);
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

int json_write_value(const struct json_value *v, unsigned int flags, char **ret, size_t *ret_len)
{
	struct json_writer *w;
	size_t len = 0;
	int r;

	if (!v || !ret)
		return -EINVAL;
	w = json_writer_new(flags);
	if (!w)
		return -ENOMEM;
	jw_value(w, v);
	r = json_writer_finish(w, ret, &len);
	if (r >= 0 && ret_len)
		*ret_len = len;
	return r;
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
