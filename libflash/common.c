/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Error strings and the log callback of libflash. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include <flash/auth.h>
#include <flash/image.h>
#include <flash/meter.h>
#include <flash/policy.h>
#include <flash/render.h>
#include <flash/sandbox.h>
#include <flash/sched.h>
#include <flash/spec.h>
#include <flowsdn/common.h>

#include "internal.h"

UTIL_LOG_EXPORT(flash, FLASH_API, enum flash_log_level, flash_log_fn, FLASH_LOG_INFO)

/* One row per module: { first code, end of block, its strerror }; the
 * last row passes libflowsdn's range on to flowsdn_strerror(). */
static const struct util_errblock blocks[] = {
	{ FLASH_E_SPEC_BASE, FLASH_E_SPEC_MAX_, flash__spec_strerror },
	{ FLASH_E_POLICY_BASE, FLASH_E_POLICY_MAX_, flash__policy_strerror },
	{ FLASH_E_AUTH_BASE, FLASH_E_AUTH_MAX_, flash__auth_strerror },
	{ FLASH_E_METER_BASE, FLASH_E_METER_MAX_, flash__meter_strerror },
	{ FLASH_E_RENDER_BASE, FLASH_E_RENDER_MAX_, flash__render_strerror },
	{ FLASH_E_IMAGE_BASE, FLASH_E_IMAGE_MAX_, flash__image_strerror },
	{ FLASH_E_SCHED_BASE, FLASH_E_SCHED_MAX_, flash__sched_strerror },
	{ FLASH_E_SANDBOX_BASE, FLASH_E_SANDBOX_MAX_, flash__sandbox_strerror },
	{ FLOWSDN_E_BASE, FLOWSDN_E_END, flowsdn_strerror },
};

/* errno values end below libflowsdn's range, the lowest domain code
 * libflash can return. */
UTIL_ERRORS_EXPORT(flash, FLASH_API, blocks, FLOWSDN_E_BASE, "unknown flash error")
