/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The chart's Go-template subset (helm-template.h): lexed into text and
 * action nodes with Go's trimming applied at lex time, then evaluated
 * with a stack of if conditions. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helm-template.h"
#include "util.h"

#define MAX_NODES 4096
#define MAX_DEPTH 16

struct node {
	bool action;
	const char *p; /* text, or the action's content without delimiters, markers and outer spaces */
	size_t len;
	unsigned int line;
};

struct tmpl {
	const char *name;
	const struct json_value *const *layers;
	size_t n_layers;
	char *err;
	size_t err_size;
};

__attribute__((format(printf, 3, 4))) static int fail(struct tmpl *t, unsigned int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(t->err, t->err_size, "%s:%u: ", t->name, line);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < t->err_size)
		vsnprintf(t->err + n, t->err_size - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool go_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static unsigned int count_lines(const char *from, const char *to)
{
	unsigned int n = 0;

	for (; from < to; from++)
		n += *from == '\n';
	return n;
}

/* Splits @text into nodes; "{{- " trims the text before, " -}}" the
 * text after, as Go's lexer does. */
static int lex(struct tmpl *t, const char *text, struct node *nodes, size_t *ret_n)
{
	const char *p = text;
	unsigned int line = 1;
	size_t n = 0;
	bool trim_next = false;

	for (;;) {
		const char *open = strstr(p, "{{");
		const char *end = open ? open : p + strlen(p);
		const char *a, *b, *close;
		struct node *txt;

		if (n + 2 > MAX_NODES)
			return fail(t, line, "too many template nodes");
		txt = &nodes[n++];
		txt->action = false;
		txt->p = p;
		txt->len = (size_t)(end - p);
		txt->line = line;
		if (trim_next)
			while (txt->len && go_space(*txt->p)) {
				txt->p++;
				txt->len--;
			}
		line += count_lines(p, end);
		if (!open)
			break;
		a = open + 2;
		if (a[0] == '-' && go_space(a[1])) {
			while (txt->len && go_space(txt->p[txt->len - 1]))
				txt->len--;
			a++;
		} else if (a[0] == '-') {
			return fail(t, line, "'{{-' must be followed by a space");
		}
		close = strstr(a, "}}");
		if (!close)
			return fail(t, line, "unterminated action");
		if (memchr(a, '\n', (size_t)(close - a)))
			return fail(t, line, "an action spans lines");
		b = close;
		trim_next = false;
		if (b - a >= 2 && b[-1] == '-' && go_space(b[-2])) {
			trim_next = true;
			b--;
		} else if (b > a && b[-1] == '-') {
			return fail(t, line, "'-}}' must follow a space");
		}
		while (a < b && go_space(*a))
			a++;
		while (b > a && go_space(b[-1]))
			b--;
		nodes[n].action = true;
		nodes[n].p = a;
		nodes[n].len = (size_t)(b - a);
		nodes[n].line = line;
		n++;
		p = close + 2;
	}
	*ret_n = n;
	return 0;
}

/* ".Values.a.b": the value in the first layer holding it. */
static int lookup(struct tmpl *t, unsigned int line, const char *s, size_t len, const struct json_value **ret)
{
	char path[256];

	if (len < 8 || memcmp(s, ".Values.", 8) != 0)
		return fail(t, line, "'%.*s': only .Values.NAME[.NAME...] is supported", (int)len, s);
	if (len - 8 >= sizeof(path))
		return fail(t, line, "path too long");
	memcpy(path, s + 8, len - 8);
	path[len - 8] = '\0';
	for (size_t i = 0; path[i]; i++) {
		char c = path[i];
		bool ident = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			     (c >= '0' && c <= '9' && i > 0 && path[i - 1] != '.');

		if (!ident && !(c == '.' && i > 0 && path[i + 1] && path[i + 1] != '.'))
			return fail(t, line, "'%s': not a field path", path);
	}
	if (path[0] == '\0')
		return fail(t, line, "'.Values' alone is not supported");
	for (size_t i = 0; i < t->n_layers; i++) {
		const struct json_value *v = json_at(t->layers[i], path);

		if (v) {
			*ret = v;
			return 0;
		}
	}
	return fail(t, line, ".Values.%s: no such value", path);
}

/* An integer Go prints the same through %v of float64 and json.Marshal
 * (Helm's values are float64): at most 6 digits, no exponent. */
static int small_integer(struct tmpl *t, unsigned int line, const struct json_value *v, const char **ret)
{
	const char *s = v->u.number.text;
	size_t digits = strlen(s) - (s[0] == '-');

	if (!json_number_is_integer(v) || digits > 6 || strcmp(s, "-0") == 0)
		return fail(t, line, "number %s: only integers of at most 6 digits are supported", s);
	*ret = s;
	return 0;
}

static int put(struct util_buf *b, const char *s, size_t n)
{
	return util_buf_append(b, s, n, 0);
}

/* The value as text/template prints it (fmt's %v). */
static int print_plain(struct tmpl *t, unsigned int line, const struct json_value *v, struct util_buf *out)
{
	const char *s = NULL;
	int r;

	switch (v->type) {
	case JSON_STRING:
		if (v->u.string.has_nul)
			return fail(t, line, "a string holding NUL");
		return put(out, v->u.string.ptr, v->u.string.len);
	case JSON_BOOL:
		return put(out, v->u.boolean ? "true" : "false", v->u.boolean ? 4 : 5);
	case JSON_NUMBER:
		r = small_integer(t, line, v, &s);
		return r < 0 ? r : put(out, s, strlen(s));
	default:
		return fail(t, line, "cannot print a %s value", json_type_name(v->type));
	}
}

/* Helm's strval(): what quote and toJson see of a scalar. */
static int scalar_text(struct tmpl *t, unsigned int line, const struct json_value *v, struct util_buf *tmp)
{
	if (v->type != JSON_STRING && v->type != JSON_BOOL && v->type != JSON_NUMBER)
		return fail(t, line, "cannot quote a %s value", json_type_name(v->type));
	return print_plain(t, line, v, tmp);
}

/* Go's strconv.Quote for printable ASCII and control bytes. */
static int quote(struct tmpl *t, unsigned int line, const struct json_value *v, struct util_buf *out)
{
	static const char named[] = { '\a', 'a', '\b', 'b', '\f', 'f', '\n', 'n', '\r', 'r', '\t', 't', '\v', 'v' };
	struct util_buf s = { 0 };
	int r = scalar_text(t, line, v, &s);

	if (r == 0)
		r = put(out, "\"", 1);
	for (size_t i = 0; r == 0 && i < s.len; i++) {
		unsigned char c = (unsigned char)s.p[i];
		char esc[8];
		const char *e = NULL;

		if (c >= 0x80) {
			r = fail(t, line, "quote: byte 0x%02x outside ASCII is not supported", c);
			break;
		}
		for (size_t k = 0; k < sizeof(named); k += 2)
			if (c == (unsigned char)named[k]) {
				esc[0] = '\\';
				esc[1] = named[k + 1];
				esc[2] = '\0';
				e = esc;
			}
		if (!e && (c < 0x20 || c == 0x7f)) {
			snprintf(esc, sizeof(esc), "\\x%02x", c);
			e = esc;
		} else if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			esc[2] = '\0';
			e = esc;
		}
		r = e ? put(out, e, strlen(e)) : put(out, (const char *)&c, 1);
	}
	if (r == 0)
		r = put(out, "\"", 1);
	free(s.p);
	return r;
}

/* Go's json.Marshal: strings with \" \\ \n \r \t and < > & as \u003c
 * \u003e \u0026 (HTML-safe); other control bytes (whose escape changed
 * between Go releases) and non-ASCII are refused. */
static int to_json(struct tmpl *t, unsigned int line, const struct json_value *v, struct util_buf *out)
{
	struct util_buf s = { 0 };
	int r;

	if (v->type != JSON_STRING)
		return v->type == JSON_BOOL || v->type == JSON_NUMBER ? print_plain(t, line, v, out) :
									 fail(t, line, "toJson of a %s value is not supported",
									      json_type_name(v->type));
	r = print_plain(t, line, v, &s);
	if (r == 0)
		r = put(out, "\"", 1);
	for (size_t i = 0; r == 0 && i < s.len; i++) {
		unsigned char c = (unsigned char)s.p[i];
		const char *e = NULL;

		if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f) {
			r = fail(t, line, "toJson: byte 0x%02x is not supported", c);
			break;
		}
		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '<': e = "\\u003c"; break;
		case '>': e = "\\u003e"; break;
		case '&': e = "\\u0026"; break;
		default: break;
		}
		r = e ? put(out, e, strlen(e)) : put(out, (const char *)&c, 1);
	}
	if (r == 0)
		r = put(out, "\"", 1);
	free(s.p);
	return r;
}

/* Go's truth of a value in {{ if }}. */
static bool truth(const struct json_value *v)
{
	switch (v->type) {
	case JSON_BOOL:
		return v->u.boolean;
	case JSON_NUMBER: {
		double d = 0;

		return json_get_double(v, &d) == 0 && d != 0;
	}
	case JSON_STRING:
		return v->u.string.len > 0;
	case JSON_ARRAY:
		return v->u.array.n > 0;
	case JSON_OBJECT:
		return v->u.object.n > 0;
	default:
		return false;
	}
}

static bool word(const struct node *a, const char *w, const char **rest)
{
	size_t n = strlen(w);

	if (a->len < n || memcmp(a->p, w, n) != 0)
		return false;
	if (a->len == n) {
		*rest = a->p + n;
		return true;
	}
	if (a->p[n] != ' ')
		return false;
	*rest = a->p + n + 1;
	return true;
}

int helm_template_render(const char *name, const char *text, const struct json_value *const *layers,
			 size_t n_layers, char **ret_text, char *err, size_t err_size)
{
	struct tmpl t = { .name = name, .layers = layers, .n_layers = n_layers, .err = err, .err_size = err_size };
	struct util_buf out = { 0 };
	struct node *nodes;
	bool active[MAX_DEPTH + 1] = { true };
	unsigned int open_line[MAX_DEPTH + 1] = { 0 };
	size_t n = 0, depth = 0;
	int r;

	if (!name || !text || !ret_text || !err || !err_size)
		return -EINVAL;
	err[0] = '\0';
	nodes = calloc(MAX_NODES, sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	r = lex(&t, text, nodes, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct node *a = &nodes[i];
		const struct json_value *v = NULL;
		const char *rest, *bar;

		if (!a->action) {
			if (active[depth] && a->len)
				r = put(&out, a->p, a->len);
			continue;
		}
		if (memchr(a->p, '"', a->len) || memchr(a->p, '`', a->len) || (a->len && a->p[0] == '/'))
			r = fail(&t, a->line, "'%.*s': literals and comments are not supported", (int)a->len, a->p);
		else if (word(a, "if", &rest)) {
			if (depth == MAX_DEPTH) {
				r = fail(&t, a->line, "if nested too deep");
				break;
			}
			r = lookup(&t, a->line, rest, a->len - (size_t)(rest - a->p), &v);
			if (r < 0)
				break;
			depth++;
			active[depth] = active[depth - 1] && truth(v);
			open_line[depth] = a->line;
		} else if (a->len == 3 && memcmp(a->p, "end", 3) == 0) {
			if (depth == 0)
				r = fail(&t, a->line, "'end' without 'if'");
			else
				depth--;
		} else if (a->len && a->p[0] == '.') {
			size_t path_len = a->len;
			const char *fn = NULL;
			size_t fn_len = 0;

			bar = memchr(a->p, '|', a->len);
			if (bar) {
				path_len = (size_t)(bar - a->p);
				while (path_len && a->p[path_len - 1] == ' ')
					path_len--;
				fn = bar + 1;
				while (fn < a->p + a->len && *fn == ' ')
					fn++;
				fn_len = (size_t)(a->p + a->len - fn);
			}
			/* checked in a branch not taken too: the chart's
			 * default values leave some untaken */
			if (fn && !(fn_len == 5 && memcmp(fn, "quote", 5) == 0) &&
			    !(fn_len == 6 && memcmp(fn, "toJson", 6) == 0)) {
				r = fail(&t, a->line, "'%.*s': only quote and toJson are supported after '|'", (int)fn_len,
					 fn);
				break;
			}
			r = lookup(&t, a->line, a->p, path_len, &v);
			if (r < 0 || !active[depth])
				continue;
			if (!fn)
				r = print_plain(&t, a->line, v, &out);
			else if (fn[0] == 'q')
				r = quote(&t, a->line, v, &out);
			else
				r = to_json(&t, a->line, v, &out);
		} else {
			r = fail(&t, a->line, "'%.*s': not supported (only .Values, quote, toJson, if, end)",
				 (int)a->len, a->p);
		}
	}
	if (r == 0 && depth)
		r = fail(&t, open_line[depth], "'if' without 'end'");
	if (r == 0 && !out.p)
		r = put(&out, "", 0);
	free(nodes);
	if (r < 0) {
		free(out.p);
		if (r == -ENOMEM)
			snprintf(err, err_size, "%s: out of memory", name);
		return r == -ENOMEM ? r : -EINVAL;
	}
	*ret_text = out.p;
	return 0;
}
