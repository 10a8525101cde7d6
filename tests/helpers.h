/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Assertion helpers for the Criterion tests: each says what failed and
 * with which values. */
#ifndef FLASH_TESTS_HELPERS_H
#define FLASH_TESTS_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <dlfcn.h>

#include <flash/common.h>
#include <flowsdn/common.h>

/* A test links libflowsdn, libflash (which knows both ranges), both or
 * neither: the library's strerror is looked up in the loaded objects, NULL
 * when the library is not there. */
static inline const char *test_lib_strerror(const char *name, int code)
{
	const char *(*fn)(int) = NULL;
	void *sym = dlsym(RTLD_DEFAULT, name);

	memcpy(&fn, &sym, sizeof(fn));
	return fn ? fn(code) : NULL;
}

/* The text of @r (either sign): the library's strerror for a domain code,
 * strerror(3) for errno. */
static inline const char *test_strerror(long r)
{
	long e = r < 0 ? -r : r;
	const char *s = NULL;

	if (e >= FLASH_E_BASE && e < FLASH_E_END)
		s = test_lib_strerror("flash_strerror", (int)e);
	else if (e >= FLOWSDN_E_BASE && e < FLOWSDN_E_END) {
		s = test_lib_strerror("flowsdn_strerror", (int)e);
		if (!s)
			s = test_lib_strerror("flash_strerror", (int)e);
	} else if (e < FLOWSDN_E_BASE)
		s = strerror((int)e);
	return s ? s : "domain code of a library this test does not link";
}

/* x must return >= 0. */
#define ASSERT_OK(x, what)                                                          \
	do {                                                                        \
		long _r = (long)(x);                                                \
		cr_assert(_r >= 0, "%s: %s returned %ld (%s)", (what), #x, _r,      \
			  _r < 0 ? test_strerror(_r) : "");                         \
	} while (0)

/* x must return exactly the (negative) error e. */
#define ASSERT_ERR(x, e, what)                                                      \
	do {                                                                        \
		long _r = (long)(x), _e = (long)(e);                                \
		cr_assert(_r == _e, "%s: %s returned %ld (%s), expected %ld (%s)",  \
			  (what), #x, _r, _r ? test_strerror(_r) : "success", _e,   \
			  test_strerror(_e));                                       \
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
