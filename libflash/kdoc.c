/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Ordered document tree with JSON and YAML (libyaml) printers. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <yaml.h>

#include "internal.h"
#include "json.h"
#include "kdoc.h"

enum kdoc_type { KDOC_OBJECT, KDOC_ARRAY, KDOC_STRING, KDOC_INT, KDOC_BOOL, KDOC_REF };

struct kdoc {
	enum kdoc_type type;
	bool failed;
	union {
		char *str;
		int64_t i;
		bool b;
		const struct kdoc *ref;
	} u;
	/* objects: keys[i] -> vals[i]; arrays: vals[i] */
	char **keys;
	struct kdoc **vals;
	size_t n, cap;
};

static struct kdoc *node(enum kdoc_type t)
{
	struct kdoc *d = calloc(1, sizeof(*d));

	if (d)
		d->type = t;
	return d;
}

struct kdoc *kdoc_object(void) { return node(KDOC_OBJECT); }
struct kdoc *kdoc_array(void) { return node(KDOC_ARRAY); }

struct kdoc *kdoc_string(const char *s)
{
	struct kdoc *d;

	if (!s)
		return NULL;
	d = node(KDOC_STRING);
	if (!d)
		return NULL;
	d->u.str = strdup(s);
	if (!d->u.str) {
		free(d);
		return NULL;
	}
	return d;
}

struct kdoc *kdoc_stringf(const char *fmt, ...)
{
	struct kdoc *d;
	char *s = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return NULL;
	d = node(KDOC_STRING);
	if (!d) {
		free(s);
		return NULL;
	}
	d->u.str = s;
	return d;
}

struct kdoc *kdoc_int(int64_t v)
{
	struct kdoc *d = node(KDOC_INT);

	if (d)
		d->u.i = v;
	return d;
}

struct kdoc *kdoc_bool(bool v)
{
	struct kdoc *d = node(KDOC_BOOL);

	if (d)
		d->u.b = v;
	return d;
}

struct kdoc *kdoc_borrow(const struct kdoc *target)
{
	struct kdoc *d;

	if (!target)
		return NULL;
	d = node(KDOC_REF);
	if (d)
		d->u.ref = target;
	return d;
}

/* Follows references. */
static const struct kdoc *deref(const struct kdoc *d)
{
	while (d && d->type == KDOC_REF)
		d = d->u.ref;
	return d;
}

const char *kdoc_string_value(const struct kdoc *d)
{
	d = deref(d);
	return d && d->type == KDOC_STRING ? d->u.str : NULL;
}

void kdoc_free(struct kdoc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		if (d->keys)
			free(d->keys[i]);
		kdoc_free(d->vals[i]);
	}
	free(d->keys);
	free(d->vals);
	if (d->type == KDOC_STRING)
		free(d->u.str);
	free(d);
}

static bool grow(struct kdoc *d)
{
	size_t cap;
	struct kdoc **vals;

	if (d->n < d->cap)
		return true;
	cap = d->cap ? d->cap * 2 : 4;
	vals = reallocarray(d->vals, cap, sizeof(*vals));
	if (!vals)
		return false;
	d->vals = vals;
	if (d->type == KDOC_OBJECT) {
		char **keys = reallocarray(d->keys, cap, sizeof(*keys));

		if (!keys)
			return false;
		d->keys = keys;
	}
	d->cap = cap;
	return true;
}

struct kdoc *kdoc_set(struct kdoc *obj, const char *key, struct kdoc *val)
{
	char *k;

	if (!obj || obj->type != KDOC_OBJECT || !key) {
		if (obj)
			obj->failed = true;
		kdoc_free(val);
		return NULL;
	}
	if (!val) {
		obj->failed = true;
		return NULL;
	}
	for (size_t i = 0; i < obj->n; i++) {
		if (strcmp(obj->keys[i], key) == 0) {
			kdoc_free(obj->vals[i]);
			obj->vals[i] = val;
			return val;
		}
	}
	k = strdup(key);
	if (!k || !grow(obj)) {
		free(k);
		kdoc_free(val);
		obj->failed = true;
		return NULL;
	}
	obj->keys[obj->n] = k;
	obj->vals[obj->n++] = val;
	return val;
}

struct kdoc *kdoc_append(struct kdoc *arr, struct kdoc *val)
{
	if (!arr || arr->type != KDOC_ARRAY) {
		if (arr)
			arr->failed = true;
		kdoc_free(val);
		return NULL;
	}
	if (!val) {
		arr->failed = true;
		return NULL;
	}
	if (!grow(arr)) {
		kdoc_free(val);
		arr->failed = true;
		return NULL;
	}
	arr->vals[arr->n++] = val;
	return val;
}

struct kdoc *kdoc_set_str(struct kdoc *obj, const char *key, const char *s)
{
	if (!s) {
		if (obj)
			obj->failed = true;
		return NULL;
	}
	return kdoc_set(obj, key, kdoc_string(s));
}

struct kdoc *kdoc_set_int(struct kdoc *obj, const char *key, int64_t v) { return kdoc_set(obj, key, kdoc_int(v)); }
struct kdoc *kdoc_set_bool(struct kdoc *obj, const char *key, bool v) { return kdoc_set(obj, key, kdoc_bool(v)); }
struct kdoc *kdoc_set_obj(struct kdoc *obj, const char *key) { return kdoc_set(obj, key, kdoc_object()); }
struct kdoc *kdoc_set_arr(struct kdoc *obj, const char *key) { return kdoc_set(obj, key, kdoc_array()); }
struct kdoc *kdoc_append_obj(struct kdoc *arr) { return kdoc_append(arr, kdoc_object()); }

struct kdoc *kdoc_append_str(struct kdoc *arr, const char *s)
{
	if (!s) {
		if (arr)
			arr->failed = true;
		return NULL;
	}
	return kdoc_append(arr, kdoc_string(s));
}

struct kdoc *kdoc_get(const struct kdoc *obj, const char *key)
{
	if (!obj || obj->type != KDOC_OBJECT || !key)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], key) == 0)
			return obj->vals[i];
	return NULL;
}

size_t kdoc_len(const struct kdoc *d)
{
	return d && (d->type == KDOC_OBJECT || d->type == KDOC_ARRAY) ? d->n : 0;
}

bool kdoc_is_object(const struct kdoc *d)
{
	return d && d->type == KDOC_OBJECT;
}

bool kdoc_failed(const struct kdoc *d)
{
	d = deref(d);
	if (!d)
		return true;
	if (d->failed)
		return true;
	for (size_t i = 0; i < d->n; i++)
		if (kdoc_failed(d->vals[i]))
			return true;
	return false;
}

/* ------------------------------------------------------------- JSON */

/* Through the one emitter: two-space indentation, {} and [] for empty
 * containers, its escapes (json.h) — kubectl's layout. */
static void json_node(struct json_writer *w, const struct kdoc *d)
{
	d = deref(d);
	switch (d->type) {
	case KDOC_STRING:
		jw_string(w, d->u.str);
		break;
	case KDOC_INT:
		jw_int(w, d->u.i);
		break;
	case KDOC_BOOL:
		jw_bool(w, d->u.b);
		break;
	case KDOC_REF:
		break;
	case KDOC_OBJECT:
		jw_object_open(w);
		for (size_t i = 0; i < d->n; i++) {
			jw_key(w, d->keys[i]);
			json_node(w, d->vals[i]);
		}
		jw_object_close(w);
		break;
	case KDOC_ARRAY:
		jw_array_open(w);
		for (size_t i = 0; i < d->n; i++)
			json_node(w, d->vals[i]);
		jw_array_close(w);
		break;
	}
}

int kdoc_to_json(const struct kdoc *d, char **ret_text, size_t *ret_len)
{
	struct json_writer *w;

	if (!ret_text || kdoc_failed(d))
		return -EINVAL;
	w = json_writer_new(JSON_WRITE_PRETTY | JSON_WRITE_INDENT2 | JSON_WRITE_NEWLINE);
	json_node(w, d);
	return json_writer_finish(w, ret_text, ret_len);
}

/* ------------------------------------------------------------- YAML */

/* True when a plain (unquoted) scalar @s would read back as a string under
 * both YAML 1.1 and 1.2 core schema resolution: not empty, not null/bool
 * words (1.1 has yes/no/on/off/y/n too), not starting like a number, an
 * indicator or with a space. */
static bool plain_is_string(const char *s)
{
	static const char *const words[] = {
		"null", "~", "true", "false", "yes", "no", "on", "off", "y", "n",
	};
	unsigned char c = (unsigned char)s[0];

	if (!c)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (strcasecmp(s, words[i]) == 0)
			return false;
	if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.' || c == ' ')
		return false;
	if (strchr("!&*?|>'\"%@`#,[]{}:=<", c))
		return false;
	return true;
}

static int yaml_emit_node(yaml_emitter_t *em, const struct kdoc *d)
{
	yaml_event_t ev;
	char num[24];
	const char *text;
	yaml_scalar_style_t style = YAML_PLAIN_SCALAR_STYLE;

	d = deref(d);
	switch (d->type) {
	case KDOC_OBJECT:
		if (!yaml_mapping_start_event_initialize(&ev, NULL, (yaml_char_t *)YAML_MAP_TAG, 1,
							 YAML_ANY_MAPPING_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			return -EIO;
		for (size_t i = 0; i < d->n; i++) {
			style = plain_is_string(d->keys[i]) ? YAML_PLAIN_SCALAR_STYLE
							     : YAML_DOUBLE_QUOTED_SCALAR_STYLE;
			if (!yaml_scalar_event_initialize(&ev, NULL, (yaml_char_t *)YAML_STR_TAG,
							  (yaml_char_t *)d->keys[i], (int)strlen(d->keys[i]),
							  1, 1, style) ||
			    !yaml_emitter_emit(em, &ev))
				return -EIO;
			if (yaml_emit_node(em, d->vals[i]) < 0)
				return -EIO;
		}
		if (!yaml_mapping_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
			return -EIO;
		return 0;
	case KDOC_ARRAY:
		if (!yaml_sequence_start_event_initialize(&ev, NULL, (yaml_char_t *)YAML_SEQ_TAG, 1,
							  YAML_ANY_SEQUENCE_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			return -EIO;
		for (size_t i = 0; i < d->n; i++)
			if (yaml_emit_node(em, d->vals[i]) < 0)
				return -EIO;
		if (!yaml_sequence_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
			return -EIO;
		return 0;
	case KDOC_STRING:
		text = d->u.str;
		if (!plain_is_string(text))
			style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
		break;
	case KDOC_INT:
		snprintf(num, sizeof(num), "%" PRId64, d->u.i);
		text = num;
		break;
	case KDOC_BOOL:
		text = d->u.b ? "true" : "false";
		break;
	default:
		return -EINVAL;
	}
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text),
					  1, 1, style) ||
	    !yaml_emitter_emit(em, &ev))
		return -EIO;
	return 0;
}

/* libyaml's output sink. */
struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static int yaml_write(void *data, unsigned char *buffer, size_t size)
{
	struct buf *b = data;

	buf_add(b, (const char *)buffer, size);
	return !b->oom;
}

int kdoc_to_yaml(struct kdoc *const *docs, size_t n, char **ret_text, size_t *ret_len)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	struct buf b = { 0 };
	int r = 0;

	if (!ret_text || (n && !docs))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (kdoc_failed(docs[i]))
			return -EINVAL;
	if (!yaml_emitter_initialize(&em))
		return -ENOMEM;
	yaml_emitter_set_output(&em, yaml_write, &b);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) || !yaml_emitter_emit(&em, &ev)) {
		r = -EIO;
		goto out_emitter;
	}
	for (size_t i = 0; i < n; i++) {
		/* Explicit "---" before each document; implicit end. */
		if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0) ||
		    !yaml_emitter_emit(&em, &ev) ||
		    yaml_emit_node(&em, docs[i]) < 0 ||
		    !yaml_document_end_event_initialize(&ev, 1) ||
		    !yaml_emitter_emit(&em, &ev)) {
			r = -EIO;
			goto out_emitter;
		}
	}
	if (!yaml_stream_end_event_initialize(&ev) || !yaml_emitter_emit(&em, &ev) ||
	    !yaml_emitter_flush(&em))
		r = -EIO;
out_emitter:
	yaml_emitter_delete(&em);
	if (b.oom)
		r = -ENOMEM;
	if (r < 0) {
		free(b.p);
		return r;
	}
	if (!b.p) {
		b.p = strdup("");
		if (!b.p)
			return -ENOMEM;
	}
	*ret_text = b.p;
	if (ret_len)
		*ret_len = b.len;
	return 0;
}
