/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/common.h> — conventions shared by every libflowsdn module:
 * the export macro, the error space, the log callback and the options
 * struct pattern.
 *
 * Errors.  Every int-returning function returns 0 (or a documented
 * non-negative value) on success and a negative number on failure: either
 * -errno (-EINVAL for bad arguments, -ENOMEM, ...) or the negation of a
 * domain code from enum flowsdn_error (>= FLOWSDN_E_BASE).  Both kinds are
 * described by flowsdn_strerror().
 *
 * Options.  Calls that will grow take a pointer to a struct whose first
 * member is "size_t sz", set by the caller to sizeof(the struct it was
 * compiled against).  A newer library accepts older, shorter structs; an
 * older library refuses (-EINVAL) a longer struct whose unknown tail is
 * not all zero.  NULL options mean defaults.  Use FLOWSDN_OPTS() to declare
 * one.
 */
#ifndef FLOWSDN_COMMON_H
#define FLOWSDN_COMMON_H

#include <stddef.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLOWSDN_API __attribute__((visibility("default")))
#define FLOWSDN_WUR __attribute__((warn_unused_result))

/* Library version (of the headers; flowsdn_version() gives the loaded one). */
#define FLOWSDN_VERSION_MAJOR 0
#define FLOWSDN_VERSION_MINOR 1
#define FLOWSDN_VERSION_PATCH 0

/* Declares an options struct @NAME of type struct TYPE with sz filled in:
 *   FLOWSDN_OPTS(flowsdn_prefix_opts, o, .flags = FLOWSDN_PREFIX_NORMALIZE);
 * It zeroes the padding too, with a GNU statement expression (GCC and
 * Clang; -pedantic warns).  Strict ISO C11 writes the initializer itself,
 * with FLOWSDN_OPTS_SZ() first:
 *   struct flowsdn_prefix_opts o = { FLOWSDN_OPTS_SZ(flowsdn_prefix_opts),
 *                                    .flags = FLOWSDN_PREFIX_NORMALIZE };
 * (the members it does not name are zero, which is all the library reads).
 */
#define FLOWSDN_OPTS_SZ(TYPE) .sz = sizeof(struct TYPE)
#define FLOWSDN_OPTS(TYPE, NAME, ...)                                       \
	struct TYPE NAME = ({                                               \
		struct TYPE ___##NAME;                                      \
		__builtin_memset(&___##NAME, 0, sizeof(___##NAME));         \
		___##NAME = (struct TYPE){ .sz = sizeof(struct TYPE),       \
					    __VA_ARGS__ };                  \
		___##NAME;                                                  \
	})

/*
 * Domain errors.  libflowsdn's codes are 4000..4999 (FLOWSDN_E_BASE to
 * FLOWSDN_E_END - 1); libflash's are 6000..6999, so the ranges never
 * overlap.  Each module owns a block of 100 codes, written
 * FLOWSDN_E_BASE + offset; the blocks are fixed so that a code keeps its
 * number across releases.
 *   +0 addr, +100 ipam, +200 maglev, +300 identity, +400 policy,
 *   +500 cni, +600 bpf loader, +700 netlink, +800 agent/config.
 * Module headers define their codes; the address codes are here because
 * every module parses addresses.
 */
enum flowsdn_error {
	FLOWSDN_E_BASE = 4000,
	FLOWSDN_E_END = 5000,             /* one past the last libflowsdn code */
	FLOWSDN_E_ADDR_EMPTY = FLOWSDN_E_BASE,     /* empty text */
	FLOWSDN_E_ADDR_TOO_LONG,          /* longer than any valid form */
	FLOWSDN_E_ADDR_NUL,               /* NUL byte inside the given length */
	FLOWSDN_E_ADDR_SYNTAX,            /* character or structure not allowed */
	FLOWSDN_E_ADDR_OCTET_RANGE,       /* IPv4 octet above 255 */
	FLOWSDN_E_ADDR_LEADING_ZERO,      /* IPv4 octet with a leading zero (octal ambiguity) */
	FLOWSDN_E_ADDR_GROUP,             /* IPv6 group of more than 4 hex digits */
	FLOWSDN_E_ADDR_GROUP_COUNT,       /* IPv6 with too few or too many groups */
	FLOWSDN_E_ADDR_DOUBLE_COLON,      /* IPv6 "::" more than once, or misplaced */
	FLOWSDN_E_ADDR_ZONE,              /* IPv6 zone index ("%eth0") not accepted */
	FLOWSDN_E_ADDR_FAMILY,            /* wrong or mixed address family */
	FLOWSDN_E_PREFIX_LENGTH,          /* missing, malformed or out-of-range prefix length */
	FLOWSDN_E_PREFIX_HOST_BITS,       /* bits set beyond the prefix length */
	FLOWSDN_E_ADDR_RANGE,             /* arithmetic left the address space or prefix */
	FLOWSDN_E_ADDR_MAX_,              /* end of the addr block (not an error) */
};

/* Describes @err (a negative or positive errno or flowsdn_error code).
 * Never returns NULL; the string is static. */
FLOWSDN_API const char *flowsdn_strerror(int err);

enum flowsdn_log_level {
	FLOWSDN_LOG_ERR = 3,
	FLOWSDN_LOG_WARNING = 4,
	FLOWSDN_LOG_INFO = 6,
	FLOWSDN_LOG_DEBUG = 7,
};

/* Receives one formatted diagnostic line (no trailing newline). */
typedef void (*flowsdn_log_fn)(enum flowsdn_log_level level, const char *msg, void *userdata);

/* Sets the process-wide log callback; NULL (the default) discards
 * diagnostics.  Messages above @max_level are not formatted at all.
 * Call before other threads use the library. */
FLOWSDN_API void flowsdn_set_log(flowsdn_log_fn fn, enum flowsdn_log_level max_level, void *userdata);

/* Version of the loaded library, "MAJOR.MINOR.PATCH". */
FLOWSDN_API const char *flowsdn_version(void);

#ifdef __cplusplus
}
#endif

#endif
