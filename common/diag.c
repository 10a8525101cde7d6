/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The diagnostic engine (see diag.h): a bounded list of problems, each
 * with its own strings. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

/* Longest rendering of an offending value (bytes, before "..."). */
#define VALUE_MAX 96

struct diag {
	struct diag_entry entries[DIAG_MAX];
	size_t n;
	size_t max;
	size_t errors;
	size_t warnings;
	size_t dropped;
	bool oom;
	char *subject;
};

int diag_new(struct diag **ret_diag)
{
	struct diag *d;

	if (!ret_diag)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->max = DIAG_MAX;
	*ret_diag = d;
	return 0;
}

static void entry_clear(struct diag_entry *e)
{
	free((char *)e->path);
	free((char *)e->code);
	free((char *)e->message);
	free((char *)e->value);
	memset(e, 0, sizeof(*e));
}

void diag_reset(struct diag *diag)
{
	if (!diag)
		return;
	for (size_t i = 0; i < diag->n; i++)
		entry_clear(&diag->entries[i]);
	diag->n = 0;
	diag->errors = diag->warnings = diag->dropped = 0;
	diag->oom = false;
	free(diag->subject);
	diag->subject = NULL;
}

void diag_set_subject(struct diag *diag, const char *subject)
{
	char *s;

	if (!diag)
		return;
	s = strdup(subject ? subject : "");
	if (!s) {
		diag->oom = true;
		return;
	}
	free(diag->subject);
	diag->subject = s;
}

const char *diag_subject(const struct diag *diag)
{
	return diag && diag->subject ? diag->subject : "";
}

void diag_add_dropped(struct diag *diag, enum diag_severity sev, size_t n)
{
	if (!diag)
		return;
	if (sev == DIAG_WARNING)
		diag->warnings += n;
	else
		diag->errors += n;
	diag->dropped += n;
}

void diag_free(struct diag *diag)
{
	if (!diag)
		return;
	diag_reset(diag);
	free(diag);
}

void diag_begin(struct diag *diag, size_t max_entries)
{
	if (!diag)
		return;
	diag_reset(diag);
	diag->max = max_entries == 0 || max_entries > DIAG_MAX ? DIAG_MAX : max_entries;
}

bool diag_oom(const struct diag *diag)
{
	return diag && diag->oom;
}

size_t diag_count(const struct diag *diag)
{
	return diag ? diag->n : 0;
}

const struct diag_entry *diag_get(const struct diag *diag, size_t i)
{
	return diag && i < diag->n ? &diag->entries[i] : NULL;
}

size_t diag_errors(const struct diag *diag)
{
	return diag ? diag->errors : 0;
}

size_t diag_warnings(const struct diag *diag)
{
	return diag ? diag->warnings : 0;
}

size_t diag_dropped(const struct diag *diag)
{
	return diag ? diag->dropped : 0;
}

/* A bounded writer: appends while room is left, remembers overflow. */
struct sbuf {
	char buf[VALUE_MAX + 8];
	size_t len;
	bool full;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->full)
		return;
	if (b->len + n > VALUE_MAX) {
		b->full = true;
		return;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
}

static void sb_string(struct sbuf *b, const char *s, size_t n)
{
	sb_put(b, "\"", 1);
	for (size_t i = 0; i < n && !b->full; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			sb_put(b, esc, 2);
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			sb_put(b, esc, 6);
		} else {
			/* Whole UTF-8 sequences (the parser validated them), so
			 * shortening never splits a character. */
			size_t seq = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

			if (seq > n - i)
				seq = n - i;
			sb_put(b, s + i, seq);
			i += seq - 1;
		}
	}
	sb_put(b, "\"", 1);
}

static void sb_value(struct sbuf *b, const struct json_value *v, unsigned int depth)
{
	if (b->full)
		return;
	switch (v->type) {
	case JSON_NULL:
		sb_put(b, "null", 4);
		break;
	case JSON_BOOL:
		if (v->u.boolean)
			sb_put(b, "true", 4);
		else
			sb_put(b, "false", 5);
		break;
	case JSON_NUMBER:
		sb_put(b, v->u.number.text, v->u.number.len);
		break;
	case JSON_STRING:
		sb_string(b, v->u.string.ptr, v->u.string.len);
		break;
	case JSON_ARRAY:
		sb_put(b, "[", 1);
		for (size_t i = 0; i < v->u.array.n && !b->full; i++) {
			if (i)
				sb_put(b, ",", 1);
			if (depth >= 4)
				b->full = true;
			else
				sb_value(b, v->u.array.items[i], depth + 1);
		}
		sb_put(b, "]", 1);
		break;
	case JSON_OBJECT:
		sb_put(b, "{", 1);
		for (size_t i = 0; i < v->u.object.n && !b->full; i++) {
			if (i)
				sb_put(b, ",", 1);
			sb_string(b, v->u.object.members[i].key, v->u.object.members[i].key_len);
			sb_put(b, ":", 1);
			if (depth >= 4)
				b->full = true;
			else
				sb_value(b, v->u.object.members[i].value, depth + 1);
		}
		sb_put(b, "}", 1);
		break;
	}
}

static char *render_value(const struct json_value *v)
{
	struct sbuf b = { .len = 0 };

	sb_value(&b, v, 0);
	if (b.full) {
		/* The buffer has room for the marker past VALUE_MAX. */
		memcpy(b.buf + b.len, "...", 3);
		b.len += 3;
	}
	return strndup(b.buf, b.len);
}

static struct diag_entry *entry_new(struct diag *diag, enum diag_severity sev)
{
	if (sev == DIAG_WARNING)
		diag->warnings++;
	else
		diag->errors++;
	if (diag->n >= diag->max) {
		diag->dropped++;
		return NULL;
	}
	return &diag->entries[diag->n];
}

static void entry_commit(struct diag *diag, struct diag_entry *e, enum diag_severity sev,
			 const char *path, const char *code, char *value, char *message)
{
	e->severity = sev;
	e->path = strdup(path ? path : "");
	e->code = strdup(code);
	e->message = message;
	e->value = value;
	if (!e->path || !e->code || !e->message) {
		entry_clear(e);
		free(value);
		diag->oom = true;
		diag->dropped++;
		return;
	}
	diag->n++;
}

static char *vformat(const char *fmt, va_list ap) _printf_(1, 0);

static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

/* The shared body of diag_add() and diag_add_text(): the offending value
 * comes as a JSON node (@value) or as ready JSON text (@value_json). */
static void diag_vadd(struct diag *diag, enum diag_severity sev, const char *path, const char *code,
		      const struct json_value *value, const char *value_json, const char *fmt, va_list ap)
	_printf_(7, 0);

static void diag_vadd(struct diag *diag, enum diag_severity sev, const char *path, const char *code,
		      const struct json_value *value, const char *value_json, const char *fmt, va_list ap)
{
	struct diag_entry *e;
	char *val = NULL;

	e = entry_new(diag, sev);
	if (!e)
		return;
	if (value)
		val = render_value(value);
	else if (value_json)
		val = strdup(value_json);
	if ((value || value_json) && !val) {
		diag->oom = true;
		diag->dropped++;
		return;
	}
	entry_commit(diag, e, sev, path, code, val, vformat(fmt, ap));
}

void diag_add(struct diag *diag, enum diag_severity sev, const char *path, const char *code,
	      const struct json_value *value, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	va_start(ap, fmt);
	diag_vadd(diag, sev, path, code, value, NULL, fmt, ap);
	va_end(ap);
}

void diag_add_text(struct diag *diag, enum diag_severity sev, const char *path, const char *code,
		   const char *value_json, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	va_start(ap, fmt);
	diag_vadd(diag, sev, path, code, NULL, value_json, fmt, ap);
	va_end(ap);
}

void diag_add_textv(struct diag *diag, enum diag_severity sev, const char *path, const char *code,
		    const char *value_json, const char *fmt, va_list ap)
{
	if (diag)
		diag_vadd(diag, sev, path, code, NULL, value_json, fmt, ap);
}

void diag_add_json_error(struct diag *diag, const struct json_error *err)
{
	static const char *const codes[] = {
		[JSON_ERR_SYNTAX] = "json-syntax",
		[JSON_ERR_UTF8] = "json-utf8",
		[JSON_ERR_DUPLICATE_KEY] = "json-duplicate-key",
		[JSON_ERR_DEPTH] = "json-depth",
		[JSON_ERR_STRING_SIZE] = "json-string-size",
		[JSON_ERR_CONTAINER_SIZE] = "json-container-size",
		[JSON_ERR_NODES] = "json-nodes",
		[JSON_ERR_INPUT_SIZE] = "json-input-size",
		[JSON_ERR_EMPTY] = "json-empty",
	};
	const char *code = "json-syntax";
	size_t n;

	if (!diag)
		return;
	if ((size_t)err->kind < ARRAY_SIZE(codes) && codes[err->kind])
		code = codes[err->kind];
	n = diag->n;
	diag_add_text(diag, DIAG_ERROR, "", code, NULL, "%s", err->message[0] ? err->message : "invalid JSON");
	if (diag->n > n) {
		diag->entries[n].line = err->line;
		diag->entries[n].column = err->column;
	}
}

void check_ctx_init(struct check_ctx *ctx, struct diag *diag)
{
	ctx->diag = diag;
	json_path_init(&ctx->path);
	ctx->errors = ctx->warnings = 0;
	ctx->oom = false;
	ctx->style = NULL;
}

/* The shared body of check_error(), check_warning() and check_error_at():
 * counts the problem, and reports it at ctx->path (+ @field). */
static void check_vreport(struct check_ctx *ctx, enum diag_severity sev, const char *field, const char *code,
			  const struct json_value *value, const char *fmt, va_list ap) _printf_(6, 0);

static void check_vreport(struct check_ctx *ctx, enum diag_severity sev, const char *field, const char *code,
			  const struct json_value *value, const char *fmt, va_list ap)
{
	size_t saved = ctx->path.len;
	char *msg;

	if (sev == DIAG_WARNING)
		ctx->warnings++;
	else
		ctx->errors++;
	if (!ctx->diag)
		return;
	msg = vformat(fmt, ap);
	if (field)
		saved = json_path_push_key(&ctx->path, field);
	diag_add(ctx->diag, sev, json_path_str(&ctx->path), code, value, "%s", msg ? msg : "(out of memory)");
	if (field)
		json_path_pop(&ctx->path, saved);
	if (!msg)
		ctx->diag->oom = true;
	free(msg);
}

void check_error(struct check_ctx *ctx, const char *code, const struct json_value *value, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_vreport(ctx, DIAG_ERROR, NULL, code, value, fmt, ap);
	va_end(ap);
}

void check_warning(struct check_ctx *ctx, const char *code, const struct json_value *value, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_vreport(ctx, DIAG_WARNING, NULL, code, value, fmt, ap);
	va_end(ap);
}

void check_error_at(struct check_ctx *ctx, const char *field, const char *code, const struct json_value *value,
		    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_vreport(ctx, DIAG_ERROR, field, code, value, fmt, ap);
	va_end(ap);
}

int diag_entry_format(const struct diag_entry *e, char *buf, size_t size)
{
	int n;

	if (!e || (!buf && size))
		return -EINVAL;
	if (e->line)
		n = snprintf(buf, size, "line %u column %u: %s", e->line, e->column, e->message);
	else if (e->path[0])
		n = snprintf(buf, size, "%s: %s", e->path, e->message);
	else
		n = snprintf(buf, size, "%s", e->message);
	return n < 0 ? -EINVAL : n;
}

const struct diag_entry *diag_first_error(const struct diag *diag)
{
	for (size_t i = 0; diag && i < diag->n; i++)
		if (diag->entries[i].severity == DIAG_ERROR)
			return &diag->entries[i];
	return NULL;
}

int diag_to_json(const struct diag *diag, const char *source, char **ret_json, size_t *ret_len)
{
	struct json_writer *w;

	if (!diag || !ret_json)
		return -EINVAL;
	w = json_writer_new(0);
	jw_object_open(w);
	if (source)
		jw_kv_string(w, "source", source);
	jw_kv_bool(w, "valid", diag->errors == 0);
	jw_kv_int(w, "errors", (int64_t)diag->errors);
	jw_kv_int(w, "warnings", (int64_t)diag->warnings);
	jw_kv_int(w, "dropped", (int64_t)diag->dropped);
	jw_key(w, "problems");
	jw_array_open(w);
	for (size_t i = 0; i < diag->n; i++) {
		const struct diag_entry *e = &diag->entries[i];

		jw_object_open(w);
		jw_kv_string(w, "severity", e->severity == DIAG_WARNING ? "warning" : "error");
		jw_kv_string(w, "path", e->path);
		jw_kv_string(w, "code", e->code);
		jw_kv_string(w, "message", e->message);
		if (e->value)
			jw_kv_string(w, "value", e->value);
		if (e->line) {
			jw_kv_int(w, "line", e->line);
			jw_kv_int(w, "column", e->column);
		}
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret_json, ret_len);
}
