/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Assertion helpers for the Criterion tests: each says what failed and
 * with which values. */
#ifndef FLASH_TESTS_HELPERS_H
#define FLASH_TESTS_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

/* x must return >= 0. */
#define ASSERT_OK(x, what)                                                          \
	do {                                                                        \
		long _r = (long)(x);                                                \
		cr_assert(_r >= 0, "%s: %s returned %ld (%s)", (what), #x, _r,      \
			  _r < 0 ? strerror((int)-_r) : "");                        \
	} while (0)

/* x must return exactly the (negative) error e. */
#define ASSERT_ERR(x, e, what)                                                      \
	do {                                                                        \
		long _r = (long)(x), _e = (long)(e);                                \
		cr_assert(_r == _e, "%s: %s returned %ld, expected %ld", (what), #x, \
			  _r, _e);                                                  \
	} while (0)

#define ASSERT_STREQ(a, b, what)                                                    \
	do {                                                                        \
		const char *_a = (a), *_b = (b);                                    \
		cr_assert(_a && _b && strcmp(_a, _b) == 0,                          \
			  "%s: got \"%s\", expected \"%s\"", (what), _a ? _a : "(null)", \
			  _b ? _b : "(null)");                                      \
	} while (0)

/* Integration tests need root; without it they skip and say why. */
#define REQUIRE_ROOT()                                                              \
	do {                                                                        \
		if (geteuid() != 0)                                                 \
			cr_skip_test("needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)"); \
	} while (0)

#endif
