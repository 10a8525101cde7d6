/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the rendering tests: test data files and the set of
 * recorded Kubernetes OpenAPI schemas. */
#ifndef FLASH_TESTS_RENDER_TEST_H
#define FLASH_TESTS_RENDER_TEST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/diag.h>
#include <flash/render.h>

#include "diag-helpers.h"

DIAG_TEST_HELPERS(flash)
#define _cleanup_diag_ _cleanup_flash_diag_
#define render_test_diag flash_test_diag
#define diag_path flash_test_path
#define diag_message flash_test_message

/* Reads tests/data/@rel (NUL-terminated, free()); fails the test when it
 * cannot. */
static inline char *render_test_read(const char *rel, size_t *ret_len)
{
	const char *top = getenv("top_srcdir");
	char path[1024];
	char *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/data/%s", top ? top : ".", rel);
	f = fopen(path, "re");
	cr_assert(f, "cannot open %s (is top_srcdir set?)", path);
	for (;;) {
		size_t n;

		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			cr_assert(buf);
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	cr_assert(!ferror(f), "read %s", path);
	fclose(f);
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

/* The schema set of the recorded OpenAPI documents. */
static inline struct flash_schema_set *render_test_schema_set(bool with_builtin)
{
	static const char *const docs[] = { "apps_v1", "core_v1", "networking_v1", "apiextensions_v1", "rbac_v1",
					    "node_v1", "admissionregistration_v1", "autoscaling_v2", "gateway_v1",
					    "storage_v1", "events_v1", "authorization_v1" };
	struct flash_schema_set *set = NULL;

	cr_assert(flash_schema_set_new(&set) == 0);
	for (size_t i = 0; with_builtin && i < sizeof(docs) / sizeof(docs[0]); i++) {
		char rel[128];
		_cleanup_diag_ struct flash_diag *d = render_test_diag();
		size_t len;
		char *text;
		int r;

		snprintf(rel, sizeof(rel), "k8s/openapi/%s.json", docs[i]);
		text = render_test_read(rel, &len);
		r = flash_schema_set_add_openapi(set, text, len, d);
		cr_assert(r == 0, "%s: %d %s: %s %s", rel, r, flash_strerror(r), diag_path(d), diag_message(d));
		free(text);
	}
	return set;
}

#endif

#include <yaml.h>

/* ---------------------------------------------------------------- YAML -> JSON */

struct rt_buf {
	char *p;
	size_t len, cap;
};

static inline void rt_add(struct rt_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		cr_assert(b->p);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static inline void rt_json_string(struct rt_buf *b, const char *s, size_t n)
{
	rt_add(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			rt_add(b, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			rt_add(b, esc, 6);
		} else {
			rt_add(b, (const char *)&c, 1);
		}
	}
	rt_add(b, "\"", 1);
}

/* True when a plain scalar is an integer in YAML's core schema. */
static inline bool rt_plain_int(const char *s, size_t n)
{
	size_t i = (n && (s[0] == '-' || s[0] == '+')) ? 1 : 0;

	if (i == n)
		return false;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Converts every document of the YAML stream @yaml to JSON text, the way
 * a YAML 1.2 core-schema reader (kubectl's) types plain scalars.  Returns
 * the number of documents; (*ret_docs)[i] are free()d by the caller. */
static inline size_t render_test_yaml_to_json(const char *yaml, char ***ret_docs)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	char **docs = NULL;
	size_t n = 0;
	struct rt_buf b = { 0 };
	/* per nesting level: need a comma before the next item; mapping
	 * levels alternate key/value */
	bool first[128];
	bool is_map[128];
	bool expect_key[128];
	int depth = -1;
	bool done = false;

	cr_assert(yaml_parser_initialize(&parser));
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, strlen(yaml));
	while (!done) {
		cr_assert(yaml_parser_parse(&parser, &ev), "YAML parse error: %s (line %zu)", parser.problem,
			  parser.problem_mark.line + 1);
		/* separator and key/value bookkeeping for the node starting here */
		if (depth >= 0 && (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_MAPPING_START_EVENT ||
				   ev.type == YAML_SEQUENCE_START_EVENT)) {
			if (is_map[depth]) {
				if (expect_key[depth]) {
					if (!first[depth])
						rt_add(&b, ",", 1);
					first[depth] = false;
					cr_assert(ev.type == YAML_SCALAR_EVENT, "non-scalar mapping key");
				} else {
					rt_add(&b, ":", 1);
				}
				expect_key[depth] = !expect_key[depth];
			} else {
				if (!first[depth])
					rt_add(&b, ",", 1);
				first[depth] = false;
			}
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			b.len = 0;
			rt_add(&b, "", 0);
			break;
		case YAML_DOCUMENT_END_EVENT:
			docs = realloc(docs, (n + 1) * sizeof(*docs));
			cr_assert(docs);
			docs[n++] = b.p;
			b.p = NULL;
			b.len = b.cap = 0;
			break;
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT:
			cr_assert(depth + 1 < 128);
			depth++;
			first[depth] = true;
			is_map[depth] = ev.type == YAML_MAPPING_START_EVENT;
			expect_key[depth] = true;
			rt_add(&b, is_map[depth] ? "{" : "[", 1);
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			rt_add(&b, ev.type == YAML_MAPPING_END_EVENT ? "}" : "]", 1);
			depth--;
			break;
		case YAML_SCALAR_EVENT: {
			const char *v = (const char *)ev.data.scalar.value;
			size_t len = ev.data.scalar.length;
			bool key = depth >= 0 && is_map[depth] && !expect_key[depth];

			if (ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !key) {
				if ((len == 4 && memcmp(v, "true", 4) == 0) || (len == 5 && memcmp(v, "false", 5) == 0) ||
				    (len == 4 && memcmp(v, "null", 4) == 0) || rt_plain_int(v, len)) {
					rt_add(&b, v, len);
					break;
				}
			}
			rt_json_string(&b, v, len);
			break;
		}
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	free(b.p);
	*ret_docs = docs;
	return n;
}

static inline void render_test_free_docs(char **docs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(docs[i]);
	free(docs);
}
