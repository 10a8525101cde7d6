/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private helpers of libflash (never installed). */
#ifndef FLASH_INTERNAL_H
#define FLASH_INTERNAL_H

#include <flash/common.h>

#include "diag.h"
#include "util.h"

struct flash_diag;
/* The engine behind a public diag (NULL stays NULL). */
struct diag *flash__diag(struct flash_diag *diag);

void flash__log(enum flash_log_level level, const char *fmt, ...) _printf_(2, 3);
#define pr_err(...) flash__log(FLASH_LOG_ERR, __VA_ARGS__)
#define pr_warn(...) flash__log(FLASH_LOG_WARNING, __VA_ARGS__)
#define pr_info(...) flash__log(FLASH_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) flash__log(FLASH_LOG_DEBUG, __VA_ARGS__)

/* Error strings of each module's block (NULL: unknown code).  A module
 * adds its function here and a row to the table in common.c. */
const char *flash__auth_strerror(int code);
const char *flash__spec_strerror(int code);
const char *flash__policy_strerror(int code);
const char *flash__render_strerror(int code);
const char *flash__meter_strerror(int code);
const char *flash__image_strerror(int code);
const char *flash__sched_strerror(int code);
const char *flash__sandbox_strerror(int code);

#endif
