/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the rendering tests: test data files and the set of
 * recorded Kubernetes OpenAPI schemas. */
#ifndef FLASH_TESTS_RENDER_TEST_H
#define FLASH_TESTS_RENDER_TEST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/render.h>

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
	static const char *const docs[] = { "apps_v1", "core_v1", "networking_v1", "apiextensions_v1" };
	struct flash_schema_set *set = NULL;

	cr_assert(flash_schema_set_new(&set) == 0);
	for (size_t i = 0; with_builtin && i < sizeof(docs) / sizeof(docs[0]); i++) {
		char rel[128];
		struct flash_render_diag d = { 0 };
		size_t len;
		char *text;
		int r;

		snprintf(rel, sizeof(rel), "k8s/openapi/%s.json", docs[i]);
		text = render_test_read(rel, &len);
		r = flash_schema_set_add_openapi(set, text, len, &d);
		cr_assert(r == 0, "%s: %d %s: %s %s", rel, r, flash_strerror(r), d.path, d.message);
		free(text);
	}
	return set;
}

#endif
