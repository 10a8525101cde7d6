/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The strict JSON parser shared by both libraries. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "json.h"
#include "helpers.h"

static struct json_value *ok(const char *text)
{
	struct json_value *v = NULL;
	struct json_error e = { 0 };
	int r = json_parse(text, strlen(text), NULL, &v, &e);

	cr_assert(r == 0, "parse(%s) = %d: %s at %u:%u", text, r, e.message, e.line, e.column);
	return v;
}

static struct json_error bad(const char *text, size_t len, const struct json_limits *lim, enum json_error_kind kind)
{
	struct json_value *v = (struct json_value *)0x1;
	struct json_error e = { 0 };
	int r = json_parse(text, len, lim, &v, &e);

	cr_assert(r == -EBADMSG, "parse(%.60s) = %d, want -EBADMSG", text, r);
	cr_assert(e.kind == kind, "parse(%.60s): kind %d (%s), want %d", text, e.kind, e.message, kind);
	cr_assert(v == (struct json_value *)0x1, "ret_value written on failure");
	cr_assert(e.message[0], "no message");
	return e;
}

Test(json, values_and_accessors)
{
	struct json_value *v = ok("{\"a\": 1, \"b\": [true, null, \"x\\u00e9\"], \"c\": -12.5e1, \"d\": 18446744073709551615}");
	int64_t i;
	uint64_t u;
	double d;
	bool bo;
	const char *s;

	cr_assert(v->type == JSON_OBJECT && v->u.object.n == 4);
	ASSERT_OK(json_get_int64(json_get(v, "a"), &i), "a");
	cr_assert(i == 1);
	const struct json_value *b = json_get(v, "b");
	cr_assert(b && b->type == JSON_ARRAY && b->u.array.n == 3);
	ASSERT_OK(json_get_bool(b->u.array.items[0], &bo), "bool");
	cr_assert(bo);
	cr_assert(b->u.array.items[1]->type == JSON_NULL);
	ASSERT_OK(json_get_string(b->u.array.items[2], &s), "string");
	ASSERT_STREQ(s, "x\xc3\xa9", "unescaped UTF-8");
	ASSERT_ERR(json_get_int64(json_get(v, "c"), &i), -ERANGE, "fraction is not an int");
	ASSERT_OK(json_get_double(json_get(v, "c"), &d), "double");
	cr_assert(d == -125.0);
	ASSERT_ERR(json_get_int64(json_get(v, "d"), &i), -ERANGE, "int64 overflow");
	ASSERT_OK(json_get_uint64(json_get(v, "d"), &u), "uint64 max");
	cr_assert(u == UINT64_MAX);
	ASSERT_ERR(json_get_string(json_get(v, "a"), &s), -EINVAL, "type mismatch");
	cr_assert(json_get(v, "zz") == NULL);
	cr_assert(json_get(b, "a") == NULL, "json_get on an array");
	json_free(v);
}

Test(json, integers_exact)
{
	struct json_value *v = ok("[-0, 1e3, 1.0, -9223372036854775808, 9223372036854775808, -1]");
	int64_t i;
	uint64_t u;

	ASSERT_ERR(json_get_int64(v->u.array.items[0], &i), -ERANGE, "-0");
	ASSERT_ERR(json_get_int64(v->u.array.items[1], &i), -ERANGE, "exponent");
	ASSERT_ERR(json_get_int64(v->u.array.items[2], &i), -ERANGE, "1.0");
	ASSERT_OK(json_get_int64(v->u.array.items[3], &i), "INT64_MIN");
	cr_assert(i == INT64_MIN);
	ASSERT_ERR(json_get_int64(v->u.array.items[4], &i), -ERANGE, "INT64_MAX+1");
	ASSERT_ERR(json_get_uint64(v->u.array.items[5], &u), -ERANGE, "negative uint");
	json_free(v);
}

Test(json, strictness)
{
	struct json_error e;

	bad("{\"a\":1,\"a\":2}", 13, NULL, JSON_ERR_DUPLICATE_KEY);
	e = bad("{\"x\":{\"b\":1,\"c\":2,\"b\":3}}", 25, NULL, JSON_ERR_DUPLICATE_KEY);
	cr_assert(strstr(e.message, "\"b\""), "message names the key: %s", e.message);
	bad("{\"a\":1} x", 9, NULL, JSON_ERR_SYNTAX);
	bad("{\"a\":1}{}", 9, NULL, JSON_ERR_SYNTAX);
	bad("/* c */ 1", 9, NULL, JSON_ERR_SYNTAX);
	bad("[1,]", 4, NULL, JSON_ERR_SYNTAX);
	bad("{'a':1}", 7, NULL, JSON_ERR_SYNTAX);
	bad("[01]", 4, NULL, JSON_ERR_SYNTAX);
	bad("[NaN]", 5, NULL, JSON_ERR_SYNTAX);
	bad("\"\xff\xfe\"", 4, NULL, JSON_ERR_UTF8);
	bad("\"\xc0\x80\"", 4, NULL, JSON_ERR_UTF8);
	bad("\"\xed\xa0\x80\"", 5, NULL, JSON_ERR_UTF8);
	bad("\"\xf4\x90\x80\x80\"", 6, NULL, JSON_ERR_UTF8);
	bad("{\"\xe0\x80\xaf\":1}", 9, NULL, JSON_ERR_UTF8);
	bad("", 0, NULL, JSON_ERR_EMPTY);
	bad("  \n ", 4, NULL, JSON_ERR_EMPTY);
	bad("{\"a\\u0000b\":1}", 14, NULL, JSON_ERR_SYNTAX);
}

/* Surrogate escapes: a pair decodes to its code point; an unpaired one
 * (which yajl turns into "?" or pairs with the next escape) is refused
 * with its position, in values and keys. */
Test(json, surrogate_escapes)
{
	static const struct {
		const char *text;
		unsigned int line, column;
	} refused[] = {
		{ "[\"\\ud800x\"]", 1, 3 },               /* lone high, then a character */
		{ "[\"\\ud800\"]", 1, 3 },                /* lone high at the end */
		{ "[\"ab\\uDBFF\\u0041\"]", 1, 5 },        /* high, then a non-surrogate escape */
		{ "[\"\\ud800\\ud800\"]", 1, 3 },          /* high, then high */
		{ "[\"\\udc00\"]", 1, 3 },                /* lone low */
		{ "[\"\\ud83d\\ude00\\udc00\"]", 1, 15 },  /* a pair, then a lone low */
		{ "[\"\\ud800\\n\"]", 1, 3 },             /* high, then another escape */
		{ "{\"k\\ud800\":1}", 1, 4 },              /* in a key */
		{ "{\"a\":\"\\\\\",\n \"b\":\"x\\udfff\"}", 2, 8 }, /* after an escaped backslash, line 2 */
	};
	struct json_value *v;
	const char *str;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct json_error e = bad(refused[i].text, strlen(refused[i].text), NULL, JSON_ERR_UTF8);

		cr_assert(strstr(e.message, "surrogate"), "%s: message %s", refused[i].text, e.message);
		cr_assert(e.line == refused[i].line && e.column == refused[i].column, "%s: at %u:%u, want %u:%u",
			  refused[i].text, e.line, e.column, refused[i].line, refused[i].column);
	}
	/* U+1F600 as a pair, "\\ud800" as plain text after an escaped
	 * backslash, and a literal "?" all stay what they are. */
	v = ok("[\"\\ud83d\\ude00\", \"\\\\ud800\", \"?x\", \"\\u00e9\\uFFFF\"]");
	ASSERT_OK(json_get_string(v->u.array.items[0], &str), "pair");
	ASSERT_STREQ(str, "\xf0\x9f\x98\x80", "U+1F600");
	ASSERT_OK(json_get_string(v->u.array.items[1], &str), "escaped backslash");
	ASSERT_STREQ(str, "\\ud800", "text, not an escape");
	ASSERT_OK(json_get_string(v->u.array.items[2], &str), "question mark");
	ASSERT_STREQ(str, "?x", "literal");
	ASSERT_OK(json_get_string(v->u.array.items[3], &str), "BMP escapes");
	ASSERT_STREQ(str, "\xc3\xa9\xef\xbf\xbf", "U+00E9 U+FFFF");
	json_free(v);
}

Test(json, nul_in_string)
{
	struct json_value *v = ok("[\"a\\u0000b\"]");
	const char *s;

	cr_assert(v->u.array.items[0]->u.string.len == 3 && v->u.array.items[0]->u.string.has_nul);
	ASSERT_ERR(json_get_string(v->u.array.items[0], &s), -EILSEQ, "NUL refused by the accessor");
	json_free(v);
}

Test(json, line_and_column)
{
	const char *t = "{\n  \"a\": 1,\n  \"b\": tru\n}";
	struct json_error e = bad(t, strlen(t), NULL, JSON_ERR_SYNTAX);

	cr_assert(e.line == 3, "line %u (%s)", e.line, e.message);
	cr_assert(e.column >= 8 && e.column <= 12, "column %u", e.column);
}

Test(json, limits)
{
	struct json_limits lim = { .max_depth = 8, .max_string = 16, .max_members = 4, .max_nodes = 20, .max_input = 1000 };
	char deep[4096];
	size_t n = 0;

	bad("[[[[[[[[[1]]]]]]]]]", 19, &lim, JSON_ERR_DEPTH);
	bad("\"0123456789abcdefg\"", 19, &lim, JSON_ERR_STRING_SIZE);
	bad("{\"0123456789abcdefg\":1}", 23, &lim, JSON_ERR_STRING_SIZE);
	bad("[1,2,3,4,5]", 11, &lim, JSON_ERR_CONTAINER_SIZE);
	bad("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5}", 31, &lim, JSON_ERR_CONTAINER_SIZE);
	lim.max_nodes = 10;
	bad("[[1,2,3],[1,2,3],[1,2,3],[1,2,3]]", 33, &lim, JSON_ERR_NODES);
	lim.max_nodes = 20;
	/* Default depth 64: 5000 nested arrays are refused, not a stack overflow. */
	for (; n < 2000; n++)
		deep[n] = '[';
	bad(deep, n, NULL, JSON_ERR_DEPTH);
	memset(deep, ' ', sizeof(deep));
	deep[0] = '1';
	bad(deep, sizeof(deep), &lim, JSON_ERR_INPUT_SIZE);
}

Test(json, big_string_bounded)
{
	size_t len = 10u << 20;
	char *s = malloc(len + 2);

	cr_assert(s);
	s[0] = '"';
	memset(s + 1, 'a', len);
	s[len + 1] = '"';
	bad(s, len + 2, NULL, JSON_ERR_STRING_SIZE);
	free(s);
}

Test(json, many_keys_duplicate_found)
{
	size_t cap = 200000, o = 0;
	char *s = malloc(cap);

	cr_assert(s);
	s[o++] = '{';
	for (int i = 0; i < 5000; i++)
		o += (size_t)snprintf(s + o, cap - o, "\"k%d\":%d,", i, i);
	o += (size_t)snprintf(s + o, cap - o, "\"k4321\":0}");
	bad(s, o, NULL, JSON_ERR_DUPLICATE_KEY);
	free(s);
}

Test(json, paths)
{
	struct json_path p;
	size_t a, b;

	json_path_init(&p);
	ASSERT_STREQ(json_path_str(&p), "", "root");
	a = json_path_push_key(&p, "ports");
	b = json_path_push_index(&p, 1);
	json_path_push_key(&p, "container_port");
	ASSERT_STREQ(json_path_str(&p), "ports[1].container_port", "nested");
	json_path_pop(&p, b);
	ASSERT_STREQ(json_path_str(&p), "ports", "pop");
	json_path_pop(&p, a);
	json_path_push_key(&p, "metadata");
	json_path_push_key(&p, "a.b \"c\"");
	ASSERT_STREQ(json_path_str(&p), "metadata[\"a.b \\\"c\\\"\"]", "quoted key");
}

/* ---------------------------------------------------------------- emitter */

static char *emit_done(struct json_writer *w)
{
	char *out = NULL;
	size_t len = 0;
	int r = json_writer_finish(w, &out, &len);

	cr_assert(r == 0, "json_writer_finish = %d", r);
	cr_assert_eq(strlen(out), len, "length");
	return out;
}

Test(json_write, escaping_and_types)
{
	struct json_writer *w = json_writer_new(0);
	char *out;

	jw_object_open(w);
	jw_kv_string(w, "s", "a\"b\\c\n\t\x01/\xc3\xa9");
	jw_kv_int(w, "neg", INT64_MIN);
	jw_kv_uint(w, "big", UINT64_MAX);
	jw_kv_bool(w, "t", true);
	jw_key(w, "n");
	jw_null(w);
	jw_key(w, "nul");
	jw_string(w, NULL);
	jw_key(w, "x");
	jw_number(w, "-1.5e3", 6);
	jw_key(w, "a");
	jw_array_open(w);
	jw_string_len(w, "z\0y", 3);
	jw_array_close(w);
	jw_object_close(w);
	out = emit_done(w);
	ASSERT_STREQ(out,
		     "{\"s\":\"a\\\"b\\\\c\\n\\t\\u0001/\xc3\xa9\",\"neg\":-9223372036854775808,"
		     "\"big\":18446744073709551615,\"t\":true,\"n\":null,\"nul\":null,\"x\":-1.5e3,"
		     "\"a\":[\"z\\u0000y\"]}",
		     "emitted");
	free(out);
}

Test(json_write, round_trip_keeps_numbers_and_order)
{
	static const char *const docs[] = {
		"{\"b\":1,\"a\":[1.50,-0.0,1e400,\"\\u00e9\\u0000\"],\"c\":{\"\":null}}",
		"[]",
		"\"x\"",
		"18446744073709551616",
	};

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct json_value *v = ok(docs[i]), *v2;
		struct json_writer *w = json_writer_new(0);
		char *out;

		jw_value(w, v);
		out = emit_done(w);
		v2 = ok(out);
		cr_assert(json_equal(v, v2), "round trip of %s gave %s", docs[i], out);
		/* Numbers keep their exact text. */
		if (i == 0)
			cr_assert(strstr(out, "1.50") && strstr(out, "1e400"), "number text: %s", out);
		/* json_write_value() is the same text in one call. */
		{
			char *one = NULL;
			size_t len = 0;

			cr_assert_eq(json_write_value(v, 0, &one, &len), 0);
			cr_assert_str_eq(one, out);
			cr_assert_eq(len, strlen(out));
			free(one);
		}
		json_free(v);
		json_free(v2);
		free(out);
	}
}

Test(json_write, errors_are_sticky_and_reported)
{
	struct json_writer *w;
	char *out = (char *)0x1;

	/* Invalid UTF-8 is refused, and everything after it is ignored. */
	w = json_writer_new(0);
	jw_array_open(w);
	jw_string(w, "\xff");
	cr_assert_eq(json_writer_error(w), -EINVAL);
	jw_string(w, "fine");
	jw_array_close(w);
	cr_assert_eq(json_writer_finish(w, &out, NULL), -EINVAL);
	cr_assert(out == (char *)0x1, "ret written on failure");

	/* An incomplete document. */
	w = json_writer_new(0);
	jw_array_open(w);
	jw_int(w, 1);
	cr_assert_eq(json_writer_finish(w, &out, NULL), -EINVAL);

	/* A number that is not JSON, and a value where a key belongs. */
	w = json_writer_new(0);
	jw_number(w, "01", 2);
	cr_assert_eq(json_writer_finish(w, &out, NULL), -EINVAL);
	w = json_writer_new(0);
	jw_object_open(w);
	jw_int(w, 1);
	cr_assert_eq(json_writer_finish(w, &out, NULL), -EINVAL);

	/* Nothing at all; and a NULL writer. */
	cr_assert_eq(json_writer_finish(json_writer_new(0), &out, NULL), -EINVAL);
	jw_object_open(NULL);
	cr_assert_eq(json_writer_finish(NULL, &out, NULL), -ENOMEM);
	cr_assert(out == (char *)0x1, "ret written on failure");
}

Test(json_write, pretty_and_newline)
{
	struct json_writer *w = json_writer_new(JSON_WRITE_PRETTY | JSON_WRITE_NEWLINE);
	char *out;

	jw_object_open(w);
	jw_kv_int(w, "a", 1);
	jw_object_close(w);
	out = emit_done(w);
	ASSERT_STREQ(out, "{\n    \"a\": 1\n}\n", "pretty");
	free(out);
	w = json_writer_new(JSON_WRITE_NEWLINE);
	jw_raw(w, " [ 1 , {\"k\" : true} ] ", 22);
	out = emit_done(w);
	ASSERT_STREQ(out, "[1,{\"k\":true}]\n", "raw, compact, newline");
	free(out);
	w = json_writer_new(0);
	jw_raw(w, "[1,", 3);
	cr_assert_eq(json_writer_finish(w, &out, NULL), -EINVAL, "raw text that is not JSON");
}

Test(json_write, pretty_layout_empty_containers_and_escapes)
{
	static const char s[] = "q\"\\/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9";
	struct json_writer *w = json_writer_new(JSON_WRITE_PRETTY | JSON_WRITE_INDENT2 | JSON_WRITE_NEWLINE);
	char *out;

	jw_object_open(w);
	jw_key(w, "o");
	jw_object_open(w);
	jw_object_close(w);
	jw_key(w, "a");
	jw_array_open(w);
	jw_array_close(w);
	jw_key(w, "l");
	jw_array_open(w);
	jw_int(w, 1);
	jw_object_open(w);
	jw_kv_string(w, "s", s);
	jw_object_close(w);
	jw_array_close(w);
	jw_object_close(w);
	out = emit_done(w);
	ASSERT_STREQ(out,
		     "{\n"
		     "  \"o\": {},\n"
		     "  \"a\": [],\n"
		     "  \"l\": [\n"
		     "    1,\n"
		     "    {\n"
		     "      \"s\": \"q\\\"\\\\/\\u0008\\u000c\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\"\n"
		     "    }\n"
		     "  ]\n"
		     "}\n",
		     "two-space pretty, empty containers on one line, escapes");
	free(out);

	/* Four spaces without INDENT2, and no newline without _NEWLINE. */
	w = json_writer_new(JSON_WRITE_PRETTY);
	jw_array_open(w);
	jw_object_open(w);
	jw_object_close(w);
	jw_array_close(w);
	out = emit_done(w);
	ASSERT_STREQ(out, "[\n    {}\n]", "four-space pretty");
	free(out);
}

Test(json_write, keys_only_where_keys_belong)
{
	struct json_writer *w;
	char *out = NULL;

	w = json_writer_new(0);
	jw_array_open(w);
	jw_key(w, "k");
	cr_assert_eq(json_writer_error(w), -EINVAL, "a key in an array");
	json_writer_free(w);

	w = json_writer_new(0);
	jw_object_open(w);
	jw_key(w, "k");
	jw_key(w, "k2");
	cr_assert_eq(json_writer_error(w), -EINVAL, "a key after a key");
	json_writer_free(w);

	w = json_writer_new(0);
	jw_object_open(w);
	jw_key(w, "k");
	jw_object_close(w);
	cr_assert_eq(json_writer_finish(w, &out, NULL), -EINVAL, "an object closed after a key");
	cr_assert_null(out);

	w = json_writer_new(0);
	jw_array_open(w);
	jw_object_close(w);
	cr_assert_eq(json_writer_error(w), -EINVAL, "an array closed as an object");
	json_writer_free(w);

	w = json_writer_new(0);
	jw_int(w, 1);
	jw_int(w, 2);
	cr_assert_eq(json_writer_error(w), -EINVAL, "a second top-level value");
	json_writer_free(w);

	w = json_writer_new(0);
	for (int i = 0; i <= JSON_WRITE_MAX_DEPTH; i++)
		jw_array_open(w);
	cr_assert_eq(json_writer_error(w), -EINVAL, "nested deeper than JSON_WRITE_MAX_DEPTH");
	json_writer_free(w);

	/* Overlong and surrogate UTF-8 are refused, as the parser refuses them. */
	w = json_writer_new(0);
	jw_string(w, "\xc0\xaf");
	cr_assert_eq(json_writer_error(w), -EINVAL, "overlong solidus");
	json_writer_free(w);
	w = json_writer_new(0);
	jw_string(w, "\xed\xa0\x80");
	cr_assert_eq(json_writer_error(w), -EINVAL, "encoded surrogate");
	json_writer_free(w);
}

Test(json, equal)
{
	struct json_value *a = ok("{\"x\":[1,\"s\",null,true],\"y\":{\"z\":1.0}}");
	struct json_value *b = ok("{\"y\":{\"z\":1},\"x\":[1.0,\"s\",null,true]}");
	struct json_value *c = ok("{\"x\":[1,\"s\",null,false],\"y\":{\"z\":1}}");
	struct json_value *d = ok("{\"x\":[1,\"s\",null,true]}");

	cr_assert(json_equal(a, b), "same members in another order, 1 == 1.0");
	cr_assert(!json_equal(a, c), "a different bool");
	cr_assert(!json_equal(a, d), "a member missing");
	cr_assert(!json_equal(a, NULL));
	json_free(a);
	json_free(b);
	json_free(c);
	json_free(d);
}

/* A tree larger than the arena's first chunk (and than one chunk of the
 * largest size): every value, key and nested container is intact, in
 * document order, across chunks; a failure deep inside a large document
 * leaves nothing behind (valgrind). */
Test(json, large_tree_across_arena_chunks)
{
	size_t n = 9000, cap = n * 700 + 64, len = 0;
	char *text = malloc(cap), pad[601];
	struct json_value *v = NULL;
	struct json_error je;

	cr_assert(text);
	memset(pad, 'x', 600);
	pad[600] = '\0';
	len += (size_t)snprintf(text + len, cap - len, "[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "%s{\"i\":%zu,\"s\":\"%zu%s\",\"a\":[[%zu]]}", i ? "," : "", i,
					i, pad, i);
	len += (size_t)snprintf(text + len, cap - len, "]");
	cr_assert_gt(len, (size_t)(5u << 20), "more than a chunk of the largest size");
	ASSERT_OK(json_parse(text, len, NULL, &v, NULL), "parse");
	cr_assert_eq(v->type, JSON_ARRAY);
	cr_assert_eq(v->u.array.n, n);
	for (size_t i = 0; i < n; i++) {
		const struct json_value *o = v->u.array.items[i], *a;
		uint64_t x = 0;
		char want[32];

		cr_assert_eq(o->u.object.n, 3);
		cr_assert_str_eq(o->u.object.members[2].key, "a");
		ASSERT_OK(json_get_uint64(json_get(o, "i"), &x), "i");
		cr_assert_eq(x, i);
		snprintf(want, sizeof(want), "%zu", i);
		cr_assert(!strncmp(json_string_value(json_get(o, "s")), want, strlen(want)));
		cr_assert_eq(json_get(o, "s")->u.string.len, strlen(want) + 600);
		a = json_get(o, "a");
		cr_assert(a && a->u.array.n == 1 && a->u.array.items[0]->u.array.n == 1);
		ASSERT_OK(json_get_uint64(a->u.array.items[0]->u.array.items[0], &x), "a[0][0]");
		cr_assert_eq(x, i);
	}
	json_free(v);
	v = NULL;
	/* The last object gets a duplicate key: refused after the whole tree was built. */
	memcpy(text + len - 1, ",{\"k\":1,\"k\":2}]", 16);
	cr_assert_eq(json_parse(text, len + 14, NULL, &v, &je), -EBADMSG);
	cr_assert_eq(je.kind, JSON_ERR_DUPLICATE_KEY);
	cr_assert_null(v, "nothing returned");
	free(text);
}
