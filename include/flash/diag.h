/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/diag.h> — the diagnostics of every libflash parse and check: a
 * bounded list of problems, each with its JSON path or field, a stable
 * rule code, a message, the offending value, its line and column (for
 * problems of the JSON text itself) and a severity.
 *
 * It is one engine shared with libflowsdn (<flowsdn/diag.h>, struct
 * flowsdn_diag: the same entries, the same rules).  Every parse or
 * validate call takes its arguments in one order — the input, its length,
 * the options, the outputs (ret_*), and the diag last — and refills the
 * diag it is given (NULL: no details).
 */
#ifndef FLASH_DIAG_H
#define FLASH_DIAG_H

#include <stddef.h>
#include <flash/common.h>
#include <flowsdn/diag.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The entries, their severities and the bound are libflowsdn's (one
 * definition, <flowsdn/diag.h>): struct flash_diag_entry is struct
 * flowsdn_diag_entry. */
#define FLASH_DIAG_MAX FLOWSDN_DIAG_MAX
#define flash_diag_severity flowsdn_diag_severity
#define FLASH_DIAG_ERROR FLOWSDN_DIAG_ERROR
#define FLASH_DIAG_WARNING FLOWSDN_DIAG_WARNING
#define flash_diag_entry flowsdn_diag_entry
struct flash_diag_entry; /* that is, struct flowsdn_diag_entry */

/* A list of problems, reused across calls. */
struct flash_diag;

/* libflash's functions over it: each does what its flowsdn_diag_
 * counterpart in <flowsdn/diag.h> documents (same returns, same output). */
FLASH_API int flash_diag_new(struct flash_diag **ret_diag);
FLASH_API void flash_diag_free(struct flash_diag *diag);
FLASH_API void flash_diag_reset(struct flash_diag *diag);
FLASH_API size_t flash_diag_count(const struct flash_diag *diag);
FLASH_API const struct flash_diag_entry *flash_diag_get(const struct flash_diag *diag, size_t i);
FLASH_API size_t flash_diag_errors(const struct flash_diag *diag);
FLASH_API size_t flash_diag_warnings(const struct flash_diag *diag);
FLASH_API size_t flash_diag_dropped(const struct flash_diag *diag);
FLASH_API FLASH_WUR int flash_diag_to_json(const struct flash_diag *diag, const char *source,
					   char **ret_json, size_t *ret_len);
FLASH_API const struct flash_diag_entry *flash_diag_first_error(const struct flash_diag *diag);
FLASH_API int flash_diag_entry_format(const struct flash_diag_entry *entry, char *buf, size_t size);
FLASH_API const char *flash_diag_subject(const struct flash_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
