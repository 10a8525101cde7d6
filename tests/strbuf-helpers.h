/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A growing text buffer for the tests that write their inputs (the
 * generators of tests/unit/test-policy-agree.c and test-roundtrip.c):
 * sb_add() appends printf-style; the text is b.p, b.n bytes,
 * NUL-terminated; free(b.p) when done. */
#ifndef FLASH_TESTS_STRBUF_HELPERS_H
#define FLASH_TESTS_STRBUF_HELPERS_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct sb {
	char *p;
	size_t n, cap;
};

__attribute__((format(printf, 2, 3))) static inline void sb_add(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		cr_assert(n >= 0);
		if (b->p && b->n + (size_t)n < b->cap)
			break;
		b->cap = (b->cap + (size_t)n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		cr_assert(b->p);
	}
	b->n += (size_t)n;
}

#endif
