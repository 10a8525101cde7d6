/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/diag.h> — the diagnostics of every libflowsdn parse and check: a
 * bounded list of problems, each with its JSON path or field, a stable
 * rule code, a message, the offending value, its line and column (for
 * problems of the JSON text itself) and a severity.
 *
 * It is one engine shared with libflash (<flash/diag.h>, struct
 * flowsdn_diag: the same entries, the same rules).  Every parse or
 * validate call takes its arguments in one order — the input, its length,
 * the options, the outputs (ret_*), and the diag last — and refills the
 * diag it is given (NULL: no details).
 */
#ifndef FLOWSDN_DIAG_H
#define FLOWSDN_DIAG_H

#include <stddef.h>
#include <flowsdn/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many problems are kept; later ones are counted as dropped. */
#define FLOWSDN_DIAG_MAX 64

enum flowsdn_diag_severity {
	FLOWSDN_DIAG_ERROR = 0,
	FLOWSDN_DIAG_WARNING = 1,
};

/* One problem.  Strings are owned by the struct flowsdn_diag and live until it
 * is reset (by the next parse/check into it) or freed. */
struct flowsdn_diag_entry {
	enum flowsdn_diag_severity severity;
	const char *path;     /* JSON path ("ports[1].name"); "" for the document */
	const char *code;     /* stable rule code ("minimum", "cidr-class", ...) */
	const char *message;  /* what is wrong, for humans */
	const char *value;    /* the offending value as (possibly shortened) JSON
			       * text; NULL when there is none (e.g. a missing field) */
	unsigned int line;    /* JSON-level problems (codes "json-*"): 1-based */
	unsigned int column;  /* position of the fault (column in bytes); else 0 */
};

/* A list of problems, reused across calls. */
struct flowsdn_diag;

/* Allocates an empty list.  Returns 0, -EINVAL, -ENOMEM. */
FLOWSDN_API int flowsdn_diag_new(struct flowsdn_diag **ret_diag);
/* Frees @diag (NULL is fine). */
FLOWSDN_API void flowsdn_diag_free(struct flowsdn_diag *diag);
/* Empties @diag (NULL is fine). */
FLOWSDN_API void flowsdn_diag_reset(struct flowsdn_diag *diag);

/* Number of entries kept (errors and warnings, in the order found). */
FLOWSDN_API size_t flowsdn_diag_count(const struct flowsdn_diag *diag);
/* Entry @i, or NULL when out of range. */
FLOWSDN_API const struct flowsdn_diag_entry *flowsdn_diag_get(const struct flowsdn_diag *diag, size_t i);
/* Errors and warnings found, including dropped ones. */
FLOWSDN_API size_t flowsdn_diag_errors(const struct flowsdn_diag *diag);
FLOWSDN_API size_t flowsdn_diag_warnings(const struct flowsdn_diag *diag);
/* Problems found but not kept because FLOWSDN_DIAG_MAX were already kept. */
FLOWSDN_API size_t flowsdn_diag_dropped(const struct flowsdn_diag *diag);

/* Writes @diag as one JSON object (no trailing newline) into a new
 * NUL-terminated buffer (*ret_json, freed by the caller):
 *   {"source":SOURCE,"valid":BOOL,"errors":N,"warnings":N,"dropped":N,
 *    "problems":[{"severity":"error","path":...,"code":...,"message":...,
 *                 "value":...,"line":N,"column":N},...]}
 * "value" is omitted when there is none, "line"/"column" when 0, "source"
 * when @source is NULL.
 * Returns 0, -EINVAL, -ENOMEM. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_diag_to_json(const struct flowsdn_diag *diag, const char *source,
					   char **ret_json, size_t *ret_len);

/* The first error of @diag (NULL when there is none): for a caller that
 * shows one line. */
FLOWSDN_API const struct flowsdn_diag_entry *flowsdn_diag_first_error(const struct flowsdn_diag *diag);

/* Writes @entry as one line: "line L column C: MESSAGE" for a fault of
 * the JSON text, "PATH: MESSAGE", or "MESSAGE" when it concerns the whole
 * input.  snprintf style: returns the length needed (truncated when it is
 * >= @size), -EINVAL for a NULL entry. */
FLOWSDN_API int flowsdn_diag_entry_format(const struct flowsdn_diag_entry *entry, char *buf, size_t size);

/* The object the problems are about (a NetworkPolicy's metadata.name),
 * "" when the call names none. */
FLOWSDN_API const char *flowsdn_diag_subject(const struct flowsdn_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
