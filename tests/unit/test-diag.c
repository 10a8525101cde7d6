/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one diagnostic engine and the JSON reader that reports into it:
 * typed getters by path, table-driven closed objects. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "diag.h"
#include "json.h"
#include "helpers.h"

static struct json_value *parse(const char *text)
{
	struct json_value *v = NULL;

	cr_assert(json_parse(text, strlen(text), NULL, &v, NULL) == 0, "parse %s", text);
	return v;
}

static struct diag *new_diag(void)
{
	struct diag *d = NULL;

	ASSERT_OK(diag_new(&d), "diag_new");
	return d;
}

/* Entry @i must be at @path with @code. */
static void expect(const struct diag *d, size_t i, const char *path, const char *code)
{
	const struct diag_entry *e = diag_get(d, i);

	cr_assert(e, "no entry %zu (of %zu)", i, diag_count(d));
	ASSERT_STREQ(e->path, path, "path");
	ASSERT_STREQ(e->code, code, "code");
	cr_assert(e->message && e->message[0], "entry %zu has no message", i);
}

Test(diag, bounded_with_dropped_count)
{
	struct diag *d = new_diag();

	diag_begin(d, 3);
	for (int i = 0; i < 5; i++)
		diag_add_text(d, DIAG_ERROR, "p", "c", NULL, "problem %d", i);
	diag_add_text(d, DIAG_WARNING, "w", "c", NULL, "warning");
	cr_assert_eq(diag_count(d), 3);
	cr_assert_eq(diag_errors(d), 5);
	cr_assert_eq(diag_warnings(d), 1);
	cr_assert_eq(diag_dropped(d), 3);
	ASSERT_STREQ(diag_get(d, 2)->message, "problem 2", "order kept");
	cr_assert_null(diag_get(d, 3));
	diag_begin(d, 0);
	cr_assert_eq(diag_count(d) + diag_errors(d) + diag_dropped(d), 0, "begin empties");
	diag_add_text(d, DIAG_WARNING, "", "w", NULL, "only a warning");
	cr_assert_null(diag_first_error(d), "a warning is not an error");
	diag_add_text(d, DIAG_ERROR, "a.b", "e", "[1]", "the error");
	ASSERT_STREQ(diag_first_error(d)->path, "a.b", "first error");
	ASSERT_STREQ(diag_first_error(d)->value, "[1]", "value text");
	diag_free(d);
	diag_free(NULL);
	/* A NULL diag takes every call. */
	diag_add_text(NULL, DIAG_ERROR, "", "c", NULL, "x");
	cr_assert_eq(diag_count(NULL), 0);
}

Test(diag, values_json_errors_and_json_output)
{
	struct diag *d = new_diag();
	struct json_value *v = parse("{\"k\":\"quote\\\" and \\u0001\"}");
	struct json_error err = { 0 };
	struct json_value *bad = NULL;
	char *json = NULL;

	diag_begin(d, 0);
	diag_add(d, DIAG_ERROR, "k", "x", json_get(v, "k"), "bad %s", "value");
	ASSERT_STREQ(diag_get(d, 0)->value, "\"quote\\\" and \\u0001\"", "value rendered as JSON");
	cr_assert(json_parse("{\n  \"a\": ,}", 11, NULL, &bad, &err) == -EBADMSG);
	diag_add_json_error(d, &err);
	expect(d, 1, "", "json-syntax");
	cr_assert_eq(diag_get(d, 1)->line, 2);
	cr_assert_gt(diag_get(d, 1)->column, 0);
	ASSERT_OK(diag_to_json(d, "in.json", &json, NULL), "to_json");
	{
		struct json_value *out = parse(json);
		const struct json_value *p = json_get(out, "problems");

		ASSERT_STREQ(json_get(out, "source")->u.string.ptr, "in.json", "source");
		cr_assert(json_get(out, "valid")->type == JSON_BOOL && !json_get(out, "valid")->u.boolean);
		cr_assert(p && p->type == JSON_ARRAY && p->u.array.n == 2);
		ASSERT_STREQ(json_get(p->u.array.items[0], "value")->u.string.ptr, "\"quote\\\" and \\u0001\"",
			     "value escaped once more inside the report");
		cr_assert(json_get(p->u.array.items[1], "line"), "line of the JSON error");
		cr_assert_null(json_get(p->u.array.items[0], "line"), "no line for a rule");
		json_free(out);
	}
	free(json);
	json_free(v);
	diag_free(d);
}

Test(json_read, path_lookup)
{
	struct json_value *v = parse("{\"spec\":{\"ports\":[{\"port\":80},{\"port\":443}]},\"a\":[[1,2]]}");

	cr_assert_eq(json_at(v, "")->type, JSON_OBJECT);
	ASSERT_STREQ(json_at(v, "spec.ports[1].port")->u.number.text, "443", "nested");
	ASSERT_STREQ(json_at(v, "a[0][1]")->u.number.text, "2", "indexes");
	cr_assert_null(json_at(v, "spec.ports[2]"), "past the end");
	cr_assert_null(json_at(v, "spec.ports.port"), "a key of an array");
	cr_assert_null(json_at(v, "spec[0]"), "an index of an object");
	cr_assert_null(json_at(v, "nope"));
	json_free(v);
}

Test(json_read, typed_getters_report_full_paths)
{
	struct json_value *v = parse("{\"meta\":{\"name\":\"x\",\"n\":70000,\"f\":1.5,\"b\":\"yes\",\"z\":\"a\\u0000b\"}}");
	struct diag *d = new_diag();
	struct check_ctx ctx;
	const char *s = "untouched";
	int64_t n = -1;
	bool b = false;

	diag_begin(d, 0);
	check_ctx_init(&ctx, d);
	json_path_push_key(&ctx.path, "doc");
	ASSERT_OK(json_read_string_at(&ctx, v, "meta.name", true, &s), "string");
	ASSERT_STREQ(s, "x", "string value");
	ASSERT_ERR(json_read_int_at(&ctx, v, "meta.n", true, 1, 65535, &n), JSON_READ_REPORTED, "range");
	cr_assert_eq(n, -1, "ret untouched on failure");
	ASSERT_ERR(json_read_int_at(&ctx, v, "meta.f", true, 0, 10, &n), JSON_READ_REPORTED, "fraction");
	ASSERT_ERR(json_read_bool_at(&ctx, v, "meta.b", true, &b), JSON_READ_REPORTED, "bool type");
	ASSERT_ERR(json_read_string_at(&ctx, v, "meta.z", true, &s), JSON_READ_REPORTED, "nul");
	ASSERT_ERR(json_read_string_at(&ctx, v, "meta.missing", true, &s), JSON_READ_REPORTED, "required");
	ASSERT_OK(json_read_string_at(&ctx, v, "meta.missing", false, &s), "optional and absent");
	ASSERT_STREQ(s, "x", "absent leaves ret");
	cr_assert_eq(ctx.errors, 5);
	expect(d, 0, "doc.meta.n", "range");
	expect(d, 1, "doc.meta.f", "type");
	expect(d, 2, "doc.meta.b", "type");
	expect(d, 3, "doc.meta.z", "nul");
	expect(d, 4, "doc.meta.missing", "required");
	ASSERT_STREQ(json_path_str(&ctx.path), "doc", "path restored");
	diag_free(d);
	json_free(v);
}

struct inner {
	uint16_t port;
	bool on;
};

struct target {
	char *name;
	const char *ref;
	int64_t count;
	uint32_t u;
	struct inner in;
};

static const struct json_int_range count_range = { -5, 5 };

static const struct json_field inner_fields[] = {
	{ "on", JSON_BOOL, false, json_read_bool, offsetof(struct inner, on), NULL },
	{ "port", JSON_NUMBER, true, json_read_uint16, offsetof(struct inner, port), NULL },
};
static const struct json_table inner_table = { inner_fields, 2, 0 };
static const struct json_table open_inner_table = { inner_fields, 2, JSON_READ_IGNORE_UNKNOWN };

static const struct json_field fields[] = {
	{ "count", JSON_NUMBER, false, json_read_int64, offsetof(struct target, count), &count_range },
	{ "inner", JSON_OBJECT, false, json_read_nested, offsetof(struct target, in), &inner_table },
	{ "name", JSON_STRING, true, json_read_string, offsetof(struct target, name), NULL },
	{ "ref", JSON_STRING, false, json_read_strref, offsetof(struct target, ref), NULL },
	{ "u", JSON_NUMBER, false, json_read_uint32, offsetof(struct target, u), NULL },
	{ "anything", JSON_ARRAY, false, NULL, 0, NULL },
};

Test(json_read, table_reads_a_closed_object)
{
	struct json_value *v = parse("{\"name\":\"n\",\"ref\":\"r\",\"count\":-5,\"u\":4294967295,"
				     "\"inner\":{\"port\":8080,\"on\":true},\"anything\":[1]}");
	struct target t = { 0 };
	struct check_ctx ctx;

	check_ctx_init(&ctx, NULL);
	ASSERT_OK(json_read_object(&ctx, v, fields, sizeof(fields) / sizeof(fields[0]), &t), "read");
	ASSERT_STREQ(t.name, "n", "copied string");
	ASSERT_STREQ(t.ref, "r", "borrowed string");
	cr_assert_eq(t.count, -5);
	cr_assert_eq(t.u, UINT32_MAX);
	cr_assert_eq(t.in.port, 8080);
	cr_assert(t.in.on);
	free(t.name);
	json_free(v);
}

Test(json_read, table_refuses_unknown_keys_and_reports_all)
{
	struct json_value *v = parse("{\"nme\":\"n\",\"count\":6,\"u\":-1,\"inner\":{\"on\":1,\"extra\":0},"
				     "\"ref\":false,\"anything\":{}}");
	struct diag *d = new_diag();
	struct target t = { 0 };
	struct check_ctx ctx;

	diag_begin(d, 0);
	check_ctx_init(&ctx, d);
	ASSERT_ERR(json_read_object(&ctx, v, fields, sizeof(fields) / sizeof(fields[0]), &t), JSON_READ_REPORTED,
		   "refused");
	/* In document order, then the missing required fields. */
	expect(d, 0, "nme", "unknown-field");
	expect(d, 1, "count", "range");
	expect(d, 2, "u", "range");
	expect(d, 3, "inner.on", "type");
	expect(d, 4, "inner.extra", "unknown-field");
	expect(d, 5, "inner.port", "required");
	expect(d, 6, "ref", "type");
	expect(d, 7, "anything", "type");
	expect(d, 8, "name", "required");
	cr_assert_eq(diag_count(d), 9);
	cr_assert_null(t.name, "nothing stored for a missing field");
	/* Not an object at all. */
	ASSERT_ERR(json_read_object(&ctx, json_get(v, "count"), fields, 1, &t), JSON_READ_REPORTED, "not an object");
	diag_free(d);
	json_free(v);
}

/* An open format: unknown keys skipped (at any depth whose table says
 * so), every other rule kept. */
Test(json_read, table_ignore_unknown_keeps_the_other_rules)
{
	static const struct json_field open_fields[] = {
		{ "inner", JSON_OBJECT, false, json_read_nested, offsetof(struct target, in), &open_inner_table },
		{ "name", JSON_STRING, true, json_read_string, offsetof(struct target, name), NULL },
	};
	struct json_value *v = parse("{\"x-vendor\":{\"a\":1},\"name\":\"n\",\"inner\":{\"port\":53,\"extra\":[]},\"zz\":0}");
	struct json_value *bad = parse("{\"x\":1,\"name\":7,\"inner\":{\"on\":\"yes\",\"extra\":0}}");
	struct diag *d = new_diag();
	struct target t = { 0 };
	struct check_ctx ctx;

	check_ctx_init(&ctx, NULL);
	ASSERT_OK(json_read_object_flags(&ctx, v, open_fields, 2, JSON_READ_IGNORE_UNKNOWN, &t), "open read");
	ASSERT_STREQ(t.name, "n", "known field read");
	cr_assert_eq(t.in.port, 53, "nested open table read");
	/* Without the flag the same document is refused. */
	check_ctx_init(&ctx, NULL);
	ASSERT_ERR(json_read_object_flags(&ctx, v, open_fields, 2, 0, &t), JSON_READ_REPORTED, "closed read");
	cr_assert_eq(ctx.errors, 2, "x-vendor and zz refused, got %zu", ctx.errors);
	/* Known keys keep their types; required fields stay required. */
	diag_begin(d, 0);
	check_ctx_init(&ctx, d);
	ASSERT_ERR(json_read_object_flags(&ctx, bad, open_fields, 2, JSON_READ_IGNORE_UNKNOWN, &t), JSON_READ_REPORTED,
		   "types");
	expect(d, 0, "name", "type");
	expect(d, 1, "inner.on", "type");
	expect(d, 2, "inner.port", "required");
	cr_assert_eq(diag_count(d), 3);
	ASSERT_STREQ(t.name, "n", "nothing stored over on a type error");
	free(t.name);
	diag_free(d);
	json_free(bad);
	json_free(v);
}

/* An array of closed objects: each item checked, its index in the path. */
Test(json_read, table_array_of_objects)
{
	static const struct json_field list_fields[] = {
		{ "items", JSON_ARRAY, true, json_read_objects, offsetof(struct target, in), &inner_table },
	};
	struct json_value *v = parse("{\"items\":[{\"port\":1},{\"port\":2,\"on\":true}]}");
	struct json_value *bad = parse("{\"items\":[{\"port\":1},3,{\"on\":true,\"x\":1}]}");
	struct diag *d = new_diag();
	struct target t = { 0 };
	struct check_ctx ctx;

	check_ctx_init(&ctx, NULL);
	ASSERT_OK(json_read_object(&ctx, v, list_fields, 1, &t), "read");
	cr_assert_eq(t.in.port, 2, "items read in order into the target");
	cr_assert(t.in.on);
	diag_begin(d, 0);
	check_ctx_init(&ctx, d);
	ASSERT_ERR(json_read_object(&ctx, bad, list_fields, 1, &t), JSON_READ_REPORTED, "refused");
	expect(d, 0, "items[1]", "type");
	expect(d, 1, "items[2].x", "unknown-field");
	expect(d, 2, "items[2].port", "required");
	cr_assert_eq(diag_count(d), 3);
	diag_free(d);
	json_free(bad);
	json_free(v);
}

/* A format whose decoder words its own messages (the policy importer):
 * the style's hooks report, null is "not set", unknown keys come first
 * and then the fields in table order, and a JSON_NULL field takes any
 * type. */
struct styled {
	struct check_ctx ctx; /* first: the hooks find the rest through it */
	char log[512];
};

static void styled_unknown(struct check_ctx *ctx)
{
	struct styled *st = (struct styled *)ctx;
	size_t o = strlen(st->log);

	snprintf(st->log + o, sizeof(st->log) - o, "unknown %s;", json_path_str(&ctx->path));
	ctx->errors++;
}

static void styled_type(struct check_ctx *ctx, const struct json_value *v, enum json_type want)
{
	struct styled *st = (struct styled *)ctx;
	size_t o = strlen(st->log);

	snprintf(st->log + o, sizeof(st->log) - o, "type %s %s/%s;", json_path_str(&ctx->path), json_type_name(want),
		 json_type_name(v->type));
	ctx->errors++;
}

static int read_any(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	(void)ctx;
	(void)arg;
	*(enum json_type *)dst = v->type;
	return 0;
}

Test(json_read, table_order_null_absent_and_style)
{
	static const struct json_read_style style = { styled_unknown, styled_type };
	struct any_target {
		struct target t;
		enum json_type any;
	};
	static const struct json_field styled_fields[] = {
		{ "count", JSON_NUMBER, false, json_read_int64, offsetof(struct target, count), &count_range },
		{ "inner", JSON_OBJECT, false, json_read_nested, offsetof(struct target, in), &inner_table },
		{ "name", JSON_STRING, true, json_read_string, offsetof(struct target, name), NULL },
		{ "ref", JSON_STRING, false, json_read_strref, offsetof(struct target, ref), NULL },
		{ "any", JSON_NULL, false, read_any, offsetof(struct any_target, any), NULL },
	};
	const unsigned int flags = JSON_READ_NULL_ABSENT | JSON_READ_TABLE_ORDER;
	struct json_value *v = parse("{\"ref\":7,\"zz\":1,\"name\":null,\"any\":[1],\"count\":\"x\",\"yy\":2,"
				     "\"inner\":null}");
	struct json_value *ok = parse("{\"any\":\"s\",\"name\":\"n\",\"ref\":null,\"count\":3}");
	struct any_target t = { .t.ref = "kept" };
	struct styled st = { .log = "" };

	check_ctx_init(&st.ctx, NULL);
	cr_assert_null(st.ctx.style, "check_ctx_init: the engine's own words");
	st.ctx.style = &style;
	ASSERT_ERR(json_read_object_flags(&st.ctx, v, styled_fields, 5, flags, &t), JSON_READ_REPORTED, "refused");
	/* unknown keys in document order, then the table's order; a null name
	 * is missing (the engine's own "required": no hook for it) */
	ASSERT_STREQ(st.log, "unknown zz;unknown yy;type count number/string;type ref string/number;", "styled");
	cr_assert_eq(st.ctx.errors, 5, "4 styled problems and the required name, got %zu", st.ctx.errors);
	cr_assert_eq(t.any, JSON_ARRAY, "a JSON_NULL field takes any type");
	st.log[0] = '\0';
	check_ctx_init(&st.ctx, NULL);
	st.ctx.style = &style;
	ASSERT_OK(json_read_object_flags(&st.ctx, ok, styled_fields, 5, flags, &t), "read");
	ASSERT_STREQ(st.log, "", "nothing reported");
	ASSERT_STREQ(t.t.name, "n", "read");
	ASSERT_STREQ(t.t.ref, "kept", "a null member stores nothing");
	cr_assert_eq(t.t.count, 3);
	cr_assert_eq(t.any, JSON_STRING);
	/* the hook also words "not an object" */
	ASSERT_ERR(json_read_object_flags(&st.ctx, json_get(ok, "count"), styled_fields, 5, flags, &t),
		   JSON_READ_REPORTED, "not an object");
	ASSERT_STREQ(st.log, "type  object/number;", "styled");
	free(t.t.name);
	json_free(ok);
	json_free(v);
}

/* ---------------------------------------------------------------- shared helpers */

static int int_cmp(const void *key, const void *elem)
{
	int a = *(const int *)key, b = *(const int *)elem;

	return a < b ? -1 : a > b;
}

Test(util, lower_bound)
{
	static const int v[] = { 1, 3, 3, 3, 7, 9 };
	static const struct {
		int key;
		size_t index;
		bool found;
	} cases[] = {
		{ 0, 0, false }, { 1, 0, true }, { 2, 1, false }, { 3, 1, true },
		{ 4, 4, false }, { 9, 5, true }, { 10, 6, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool found = !cases[i].found;
		size_t at = util_lower_bound(v, 6, sizeof(v[0]), &cases[i].key, int_cmp, &found);

		cr_assert_eq(at, cases[i].index, "key %d: index %zu, want %zu", cases[i].key, at, cases[i].index);
		cr_assert_eq(found, cases[i].found, "key %d: found", cases[i].key);
	}
	cr_assert_eq(util_lower_bound(v, 0, sizeof(v[0]), &cases[1].key, int_cmp, NULL), 0, "empty");
}

Test(util, hexval)
{
	static const char digits[] = "0123456789abcdefABCDEF";

	for (size_t i = 0; i < sizeof(digits) - 1; i++)
		cr_assert_eq(util_hexval(digits[i]), i < 16 ? (int)i : (int)i - 6, "digit %c", digits[i]);
	cr_assert_eq(util_hexval('g'), -1);
	cr_assert_eq(util_hexval('G'), -1);
	cr_assert_eq(util_hexval('/'), -1);
	cr_assert_eq(util_hexval(':'), -1);
	cr_assert_eq(util_hexval('\0'), -1);
}
