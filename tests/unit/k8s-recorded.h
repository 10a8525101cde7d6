/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading the recorded Kubernetes exchanges of tests/data/k8s/exchanges/
 * (copies of ../shared/k8s/exchanges) in the operator's unit tests:
 * whole files, the response body of one, and text edits that derive a
 * variant of a recorded object (a label added, a taint dropped). */
#ifndef FLASH_TESTS_K8S_RECORDED_H
#define FLASH_TESTS_K8S_RECORDED_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* The file at tests/data/@rel, NUL-terminated; freed by the caller. */
static inline char *k8s_test_read(const char *rel, size_t *ret_len)
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

static inline struct json_value *k8s_test_parse(const char *text)
{
	struct json_value *v = NULL;
	struct json_error e;
	int r = json_parse(text, strlen(text), NULL, &v, &e);

	cr_assert(r == 0, "json_parse: %d line %u col %u: %s", r, e.line, e.column, e.message);
	return v;
}

/* @text with its first @old replaced by @new (which must be there). */
static inline char *k8s_test_edit(const char *text, const char *old, const char *new)
{
	const char *at = strstr(text, old);
	size_t a, o = strlen(old), n = strlen(new), t = strlen(text);
	char *out;

	cr_assert(at, "edit: \"%s\" not in the text", old);
	a = (size_t)(at - text);
	out = malloc(t - o + n + 1);
	cr_assert(out);
	memcpy(out, text, a);
	memcpy(out + a, new, n);
	memcpy(out + a + n, at + o, t - a - o + 1);
	return out;
}

/* @text with every @old replaced by @new (at least one must be there). */
static inline char *k8s_test_edit_all(const char *text, const char *old, const char *new)
{
	char *cur = k8s_test_edit(text, old, new);

	while (strstr(cur, old)) {
		char *next = k8s_test_edit(cur, old, new);

		free(cur);
		cur = next;
	}
	return cur;
}

/* The compact JSON text of @path ("response.body") in exchange file
 * exchanges/@name. */
static inline char *k8s_test_exchange(const char *name, const char *path)
{
	char rel[256];
	char *text, *out = NULL;
	struct json_value *v;
	struct json_writer *w;
	size_t len;

	snprintf(rel, sizeof(rel), "k8s/exchanges/%s", name);
	text = k8s_test_read(rel, NULL);
	v = k8s_test_parse(text);
	cr_assert(json_at(v, path), "%s: no %s", name, path);
	w = json_writer_new(0);
	jw_value(w, json_at(v, path));
	cr_assert(json_writer_finish(w, &out, &len) == 0, "%s: write %s", name, path);
	json_free(v);
	free(text);
	return out;
}

#endif
