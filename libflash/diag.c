/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* <flash/diag.h>: libflash's face of the diagnostic engine (common/diag.c). */
#include "config.h"

#include <flash/diag.h>

#include "diag.h"
#include "internal.h"

_Static_assert(FLASH_DIAG_MAX == DIAG_MAX, "one bound");
_Static_assert((int)FLASH_DIAG_ERROR == (int)DIAG_ERROR && (int)FLASH_DIAG_WARNING == (int)DIAG_WARNING,
	       "one severity");

DIAG_EXPORT(flash, FLASH_API)
