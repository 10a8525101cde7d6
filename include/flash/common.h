/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/common.h> — conventions shared by every libflash module: the
 * export macro, the error space and the log callback.  They mirror
 * <flowsdn/common.h>: int functions return 0 or a negative errno or the
 * negation of a domain code (enum flash_error, 6000..6999) or of a
 * libflowsdn code it passes on (4000..4999); options
 * structs begin with "size_t sz" and are declared with FLASH_OPTS().
 */
#ifndef FLASH_COMMON_H
#define FLASH_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLASH_API __attribute__((visibility("default")))
#define FLASH_WUR __attribute__((warn_unused_result))

#define FLASH_VERSION_MAJOR 0
#define FLASH_VERSION_MINOR 1
#define FLASH_VERSION_PATCH 0

/* Declares an options struct @NAME of type struct TYPE with sz filled in. */
#define FLASH_OPTS(TYPE, NAME, ...)                                         \
	struct TYPE NAME = ({                                               \
		struct TYPE ___##NAME;                                      \
		__builtin_memset(&___##NAME, 0, sizeof(___##NAME));         \
		___##NAME = (struct TYPE){ .sz = sizeof(struct TYPE),       \
					    __VA_ARGS__ };                  \
		___##NAME;                                                  \
	})

/*
 * Domain errors.  libflash's codes are 6000..6999 (FLASH_E_BASE to
 * FLASH_E_END - 1), disjoint from libflowsdn's 4000..4999: libflash links
 * libflowsdn and passes its codes on unchanged, so a bare int names one
 * library's code and flash_strerror() describes both ranges.  Each module
 * owns a fixed block of 100 codes, written FLASH_E_BASE + offset:
 *   +0 spec, +100 owner policy, +200 auth (JWT/keys), +300 metering,
 *   +400 rendering, +500 image/OCI, +600 GPU scheduler, +700 store,
 *   +800 provider API, +900 sandbox sessions.
 * Each module header defines its block's base (FLASH_E_SPEC_BASE, ...)
 * and its codes inside the block.
 */
enum flash_error {
	FLASH_E_BASE = 6000,
	FLASH_E_END = 7000,   /* one past the last libflash code */
};

/* Describes @err: a negative or positive errno, libflash code
 * (6000..6999) or libflowsdn code (4000..4999, the text of
 * flowsdn_strerror()).  Never NULL; the string is static. */
FLASH_API const char *flash_strerror(int err);

enum flash_log_level {
	FLASH_LOG_ERR = 3,
	FLASH_LOG_WARNING = 4,
	FLASH_LOG_INFO = 6,
	FLASH_LOG_DEBUG = 7,
};

typedef void (*flash_log_fn)(enum flash_log_level level, const char *msg, void *userdata);

/* Sets the process-wide log callback; NULL (the default) discards
 * diagnostics.  Call before other threads use the library. */
FLASH_API void flash_set_log(flash_log_fn fn, enum flash_log_level max_level, void *userdata);

/* Version of the loaded library, "MAJOR.MINOR.PATCH". */
FLASH_API const char *flash_version(void);

#ifdef __cplusplus
}
#endif

#endif
