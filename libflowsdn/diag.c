/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* <flowsdn/diag.h>: libflowsdn's face of the diagnostic engine (common/diag.c). */
#include "config.h"

#include <flowsdn/diag.h>

#include "diag.h"
#include "internal.h"

_Static_assert(FLOWSDN_DIAG_MAX == DIAG_MAX, "one bound");
_Static_assert((int)FLOWSDN_DIAG_ERROR == (int)DIAG_ERROR && (int)FLOWSDN_DIAG_WARNING == (int)DIAG_WARNING,
	       "one severity");

DIAG_EXPORT(flowsdn, FLOWSDN_API)
