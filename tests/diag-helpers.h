/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test helpers over the diag of either library: DIAG_TEST_HELPERS(flash)
 * after <flash/diag.h> (or (flowsdn) after <flowsdn/diag.h>) defines
 *   struct P_diag *P_test_diag(void)   a new diag (fails the test when it cannot),
 *   _cleanup_P_diag_                    frees it at the end of the scope,
 *   P_test_path(d), P_test_message(d)   of the first error ("" when none),
 *   P_test_line(d)                      of the first error (0 when none),
 *   P_test_text(d)                      the first error as one line,
 *   P_test_messages(d)                  every message, joined by "; ". */
#ifndef FLASH_TESTS_DIAG_HELPERS_H
#define FLASH_TESTS_DIAG_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "diag.h"

#define DIAG_TEST_HELPERS(P)                                                                  \
	__attribute__((unused)) static inline void P##_test_diag_freep(struct P##_diag **d)                           \
	{                                                                                     \
		P##_diag_free(*d);                                                            \
	}                                                                                     \
	__attribute__((unused)) static inline struct P##_diag *P##_test_diag(void)                                    \
	{                                                                                     \
		struct P##_diag *d = NULL;                                                    \
                                                                                              \
		cr_assert(P##_diag_new(&d) == 0, #P "_diag_new");                             \
		return d;                                                                     \
	}                                                                                     \
	__attribute__((unused)) static inline const char *P##_test_path(const struct P##_diag *d)                     \
	{                                                                                     \
		const struct P##_diag_entry *e = P##_diag_first_error(d);                     \
                                                                                              \
		return e ? e->path : "";                                                      \
	}                                                                                     \
	__attribute__((unused)) static inline const char *P##_test_message(const struct P##_diag *d)                  \
	{                                                                                     \
		const struct P##_diag_entry *e = P##_diag_first_error(d);                     \
                                                                                              \
		return e ? e->message : "";                                                   \
	}                                                                                     \
	/* All messages joined by "; " ("" when none): for substring checks. */ \
	__attribute__((unused)) static inline const char *P##_test_messages(const struct P##_diag *d)                 \
	{                                                                                     \
		static char buf[4096];                                                        \
		size_t o = 0;                                                                 \
                                                                                              \
		buf[0] = '\0';                                                                \
		for (size_t i = 0; i < P##_diag_count(d) && o < sizeof(buf); i++) {          \
			int n = snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? "; " : "",     \
					 P##_diag_get(d, i)->message);                        \
			if (n > 0)                                                            \
				o += (size_t)n;                                               \
		}                                                                             \
		return buf;                                                                   \
	}                                                                                     \
	/* The first error as one line (P_diag_entry_format), "" when none. */ \
	__attribute__((unused)) static inline const char *P##_test_text(const struct P##_diag *d)                     \
	{                                                                                     \
		static char buf[1024];                                                        \
		const struct P##_diag_entry *e = P##_diag_first_error(d);                     \
                                                                                              \
		buf[0] = '\0';                                                                \
		if (e && P##_diag_entry_format(e, buf, sizeof(buf)) < 0)                      \
			buf[0] = '\0';                                                        \
		return buf;                                                                   \
	}                                                                                     \
	__attribute__((unused)) static inline unsigned int P##_test_line(const struct P##_diag *d)                    \
	{                                                                                     \
		const struct P##_diag_entry *e = P##_diag_first_error(d);                     \
                                                                                              \
		return e ? e->line : 0;                                                       \
	}

/* The same over the private engine (common/diag.h), for the programs'
 * own code (agent/, cni/, operator/). */
static inline void test_engine_diag_freep(struct diag **d)
{
	diag_free(*d);
}
#define _cleanup_engine_diag_ __attribute__((cleanup(test_engine_diag_freep)))
static inline struct diag *test_engine_diag(void)
{
	struct diag *d = NULL;

	cr_assert(diag_new(&d) == 0, "diag_new");
	return d;
}
static inline const char *test_engine_text(const struct diag *d)
{
	static char buf[1024];

	buf[0] = '\0';
	if (diag_first_error(d) && diag_entry_format(diag_first_error(d), buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	return buf;
}

#define _cleanup_flash_diag_ __attribute__((cleanup(flash_test_diag_freep)))
#define _cleanup_flowsdn_diag_ __attribute__((cleanup(flowsdn_test_diag_freep)))

#endif
