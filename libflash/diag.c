/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Diagnostics: a bounded list of problems, each with its own strings. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <yajl/yajl_gen.h>

#include "internal.h"
#include "spec-internal.h"

/* Longest rendering of an offending value (bytes, before "..."). */
#define VALUE_MAX 96

struct flash_diag {
	struct flash_diag_entry entries[FLASH_DIAG_MAX];
	size_t n;
	size_t max;
	size_t errors;
	size_t warnings;
	size_t dropped;
	bool oom;
};

FLASH_API int flash_diag_new(struct flash_diag **ret_diag)
{
	struct flash_diag *d;

	if (!ret_diag)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->max = FLASH_DIAG_MAX;
	*ret_diag = d;
	return 0;
}

static void entry_clear(struct flash_diag_entry *e)
{
	free((char *)e->path);
	free((char *)e->code);
	free((char *)e->message);
	free((char *)e->value);
	memset(e, 0, sizeof(*e));
}

FLASH_API void flash_diag_reset(struct flash_diag *diag)
{
	if (!diag)
		return;
	for (size_t i = 0; i < diag->n; i++)
		entry_clear(&diag->entries[i]);
	diag->n = 0;
	diag->errors = diag->warnings = diag->dropped = 0;
	diag->oom = false;
}

FLASH_API void flash_diag_free(struct flash_diag *diag)
{
	if (!diag)
		return;
	flash_diag_reset(diag);
	free(diag);
}

void diag_begin(struct flash_diag *diag, size_t max_entries)
{
	if (!diag)
		return;
	flash_diag_reset(diag);
	diag->max = max_entries == 0 || max_entries > FLASH_DIAG_MAX ? FLASH_DIAG_MAX : max_entries;
}

bool diag_oom(const struct flash_diag *diag)
{
	return diag && diag->oom;
}

FLASH_API size_t flash_diag_count(const struct flash_diag *diag)
{
	return diag ? diag->n : 0;
}

FLASH_API const struct flash_diag_entry *flash_diag_get(const struct flash_diag *diag, size_t i)
{
	return diag && i < diag->n ? &diag->entries[i] : NULL;
}

FLASH_API size_t flash_diag_errors(const struct flash_diag *diag)
{
	return diag ? diag->errors : 0;
}

FLASH_API size_t flash_diag_warnings(const struct flash_diag *diag)
{
	return diag ? diag->warnings : 0;
}

FLASH_API size_t flash_diag_dropped(const struct flash_diag *diag)
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

static struct flash_diag_entry *entry_new(struct flash_diag *diag, enum flash_diag_severity sev)
{
	if (sev == FLASH_DIAG_WARNING)
		diag->warnings++;
	else
		diag->errors++;
	if (diag->n >= diag->max) {
		diag->dropped++;
		return NULL;
	}
	return &diag->entries[diag->n];
}

static void entry_commit(struct flash_diag *diag, struct flash_diag_entry *e, enum flash_diag_severity sev,
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
static void diag_vadd(struct flash_diag *diag, enum flash_diag_severity sev, const char *path, const char *code,
		      const struct json_value *value, const char *value_json, const char *fmt, va_list ap)
	_printf_(7, 0);

static void diag_vadd(struct flash_diag *diag, enum flash_diag_severity sev, const char *path, const char *code,
		      const struct json_value *value, const char *value_json, const char *fmt, va_list ap)
{
	struct flash_diag_entry *e;
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

void diag_add(struct flash_diag *diag, enum flash_diag_severity sev, const char *path, const char *code,
	      const struct json_value *value, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	va_start(ap, fmt);
	diag_vadd(diag, sev, path, code, value, NULL, fmt, ap);
	va_end(ap);
}

void diag_add_text(struct flash_diag *diag, enum flash_diag_severity sev, const char *path, const char *code,
		   const char *value_json, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	va_start(ap, fmt);
	diag_vadd(diag, sev, path, code, NULL, value_json, fmt, ap);
	va_end(ap);
}

void diag_add_json_error(struct flash_diag *diag, const struct json_error *err)
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
	diag_add_text(diag, FLASH_DIAG_ERROR, "", code, NULL, "%s", err->message[0] ? err->message : "invalid JSON");
	if (diag->n > n) {
		diag->entries[n].line = err->line;
		diag->entries[n].column = err->column;
	}
}

void check_ctx_init(struct check_ctx *ctx, struct flash_diag *diag)
{
	ctx->diag = diag;
	json_path_init(&ctx->path);
	ctx->errors = ctx->warnings = 0;
	ctx->oom = false;
}

void check_error(struct check_ctx *ctx, const char *code, const struct json_value *value, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;

	ctx->errors++;
	if (!ctx->diag)
		return;
	va_start(ap, fmt);
	msg = vformat(fmt, ap);
	va_end(ap);
	diag_add(ctx->diag, FLASH_DIAG_ERROR, json_path_str(&ctx->path), code, value, "%s", msg ? msg : "(out of memory)");
	if (!msg)
		ctx->diag->oom = true;
	free(msg);
}

void check_warning(struct check_ctx *ctx, const char *code, const struct json_value *value, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;

	ctx->warnings++;
	if (!ctx->diag)
		return;
	va_start(ap, fmt);
	msg = vformat(fmt, ap);
	va_end(ap);
	diag_add(ctx->diag, FLASH_DIAG_WARNING, json_path_str(&ctx->path), code, value, "%s",
		 msg ? msg : "(out of memory)");
	if (!msg)
		ctx->diag->oom = true;
	free(msg);
}

/* ---------------------------------------------------------------- JSON output */

static int gen_str(yajl_gen g, const char *s)
{
	return yajl_gen_string(g, (const unsigned char *)s, strlen(s)) == yajl_gen_status_ok ? 0 : -ENOMEM;
}

static int gen_kv_str(yajl_gen g, const char *k, const char *v)
{
	return gen_str(g, k) < 0 || gen_str(g, v) < 0 ? -ENOMEM : 0;
}

static int gen_kv_int(yajl_gen g, const char *k, long long v)
{
	return gen_str(g, k) < 0 || yajl_gen_integer(g, v) != yajl_gen_status_ok ? -ENOMEM : 0;
}

FLASH_API int flash_diag_to_json(const struct flash_diag *diag, const char *source, char **ret_json, size_t *ret_len)
{
	const unsigned char *buf;
	size_t len;
	yajl_gen g;
	char *out;
	int r = -ENOMEM;

	if (!diag || !ret_json)
		return -EINVAL;
	g = yajl_gen_alloc(NULL);
	if (!g)
		return -ENOMEM;
	if (yajl_gen_map_open(g) != yajl_gen_status_ok)
		goto out_free_gen;
	if (source && gen_kv_str(g, "source", source) < 0)
		goto out_free_gen;
	if (gen_str(g, "valid") < 0 || yajl_gen_bool(g, diag->errors == 0) != yajl_gen_status_ok)
		goto out_free_gen;
	if (gen_kv_int(g, "errors", (long long)diag->errors) < 0 ||
	    gen_kv_int(g, "warnings", (long long)diag->warnings) < 0 ||
	    gen_kv_int(g, "dropped", (long long)diag->dropped) < 0)
		goto out_free_gen;
	if (gen_str(g, "problems") < 0 || yajl_gen_array_open(g) != yajl_gen_status_ok)
		goto out_free_gen;
	for (size_t i = 0; i < diag->n; i++) {
		const struct flash_diag_entry *e = &diag->entries[i];

		if (yajl_gen_map_open(g) != yajl_gen_status_ok)
			goto out_free_gen;
		if (gen_kv_str(g, "severity", e->severity == FLASH_DIAG_WARNING ? "warning" : "error") < 0 ||
		    gen_kv_str(g, "path", e->path) < 0 || gen_kv_str(g, "code", e->code) < 0 ||
		    gen_kv_str(g, "message", e->message) < 0)
			goto out_free_gen;
		if (e->value && gen_kv_str(g, "value", e->value) < 0)
			goto out_free_gen;
		if (e->line && (gen_kv_int(g, "line", e->line) < 0 || gen_kv_int(g, "column", e->column) < 0))
			goto out_free_gen;
		if (yajl_gen_map_close(g) != yajl_gen_status_ok)
			goto out_free_gen;
	}
	if (yajl_gen_array_close(g) != yajl_gen_status_ok || yajl_gen_map_close(g) != yajl_gen_status_ok)
		goto out_free_gen;
	if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
		goto out_free_gen;
	out = strndup((const char *)buf, len);
	if (!out)
		goto out_free_gen;
	*ret_json = out;
	if (ret_len)
		*ret_len = len;
	r = 0;
out_free_gen:
	yajl_gen_free(g);
	return r;
}
