/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one diagnostic engine (private; exposed by libflash as struct
 * flash_diag and by libflowsdn as struct flowsdn_diag, whose entries have
 * exactly the layout of struct diag_entry).
 *
 * A diag is a bounded list of problems found by one parse or check: each
 * with a severity, the JSON path or field it concerns ("" for the whole
 * input), a stable rule code ("minimum", "json-syntax", ...), a message
 * for humans, the offending value as shortened JSON text, and for
 * problems of the JSON text itself its line and column.  Problems past
 * the bound are counted (dropped) but not kept.  Allocation failures are
 * remembered (diag_oom()) and the entry is dropped; they never abort the
 * check that reports.
 *
 * Every function accepts a NULL diag: the problem is then only counted by
 * the caller's struct check_ctx (or not at all).
 */
#ifndef FLASH_COMMON_DIAG_H
#define FLASH_COMMON_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "json.h"
#include "util.h"

/* Upper bound of kept entries (FLASH_DIAG_MAX == FLOWSDN_DIAG_MAX). */
#define DIAG_MAX 64

enum diag_severity {
	DIAG_ERROR = 0,
	DIAG_WARNING = 1,
};

struct diag_entry {
	enum diag_severity severity;
	const char *path;
	const char *code;
	const char *message;
	const char *value;
	unsigned int line;
	unsigned int column;
};

struct diag;

int diag_new(struct diag **ret_diag);
void diag_free(struct diag *diag);
void diag_reset(struct diag *diag);
size_t diag_count(const struct diag *diag);
const struct diag_entry *diag_get(const struct diag *diag, size_t i);
size_t diag_errors(const struct diag *diag);
size_t diag_warnings(const struct diag *diag);
size_t diag_dropped(const struct diag *diag);
/* The diag as one JSON object (see flash_diag_to_json()). */
int diag_to_json(const struct diag *diag, const char *source, char **ret_json, size_t *ret_len);

/* Starts a new run: empties @diag and sets the entry limit (0: DIAG_MAX). */
void diag_begin(struct diag *diag, size_t max_entries);
bool diag_oom(const struct diag *diag);

/* Adds one problem.  @value (may be NULL) is rendered as shortened JSON. */
void diag_add(struct diag *diag, enum diag_severity sev, const char *path, const char *code,
	      const struct json_value *value, const char *fmt, ...) _printf_(6, 7);
/* The same with the value given as text that is already JSON. */
void diag_add_text(struct diag *diag, enum diag_severity sev, const char *path, const char *code,
		   const char *value_json, const char *fmt, ...) _printf_(6, 7);
void diag_add_textv(struct diag *diag, enum diag_severity sev, const char *path, const char *code,
		    const char *value_json, const char *fmt, va_list ap) _printf_(6, 0);
/* Counts @n more problems that are not kept (found past a caller's own
 * bound). */
void diag_add_dropped(struct diag *diag, enum diag_severity sev, size_t n);
/* The object the problems are about (a policy's metadata.name): copied;
 * "" when none. */
void diag_set_subject(struct diag *diag, const char *subject);
const char *diag_subject(const struct diag *diag);
/* A JSON-level failure (json_parse() refused the input): code "json-*",
 * the parser's message, line and column. */
void diag_add_json_error(struct diag *diag, const struct json_error *err);
/* One line for @e: "line L column C: MESSAGE" for a fault of the JSON
 * text, "PATH: MESSAGE", or "MESSAGE" for the whole input.  snprintf
 * style: the length needed, -EINVAL for a NULL entry. */
int diag_entry_format(const struct diag_entry *e, char *buf, size_t size);
/* The first error kept (NULL when none): for callers that show one line. */
const struct diag_entry *diag_first_error(const struct diag *diag);

/*
 * A check in progress: the diag it reports into, the JSON path of the
 * value being checked, and the problems counted since check_ctx_init() —
 * also without a diag.
 */
struct check_ctx {
	struct diag *diag;
	struct json_path path;
	size_t errors;
	size_t warnings;
	bool oom;           /* a check could not allocate: the result is -ENOMEM */
	const struct json_read_style *style; /* NULL: the engine's words (json.h) */
};

void check_ctx_init(struct check_ctx *ctx, struct diag *diag);
/* A problem at ctx->path (or at ctx->path + "." + @field when @field is
 * given to check_error_at()). */
void check_error(struct check_ctx *ctx, const char *code, const struct json_value *value, const char *fmt, ...)
	_printf_(4, 5);
void check_warning(struct check_ctx *ctx, const char *code, const struct json_value *value, const char *fmt, ...)
	_printf_(4, 5);
void check_error_at(struct check_ctx *ctx, const char *field, const char *code, const struct json_value *value,
		    const char *fmt, ...) _printf_(5, 6);

/*
 * The public face of the engine, written once: DIAG_EXPORT(flash, FLASH_API)
 * defines flash_diag_new() ... flash_diag_to_json() over struct
 * PREFIX_diag (never defined: a pointer to one is a struct diag) and
 * struct PREFIX_diag_entry (checked to have struct diag_entry's layout).
 */
#define DIAG_ENTRY_SAME_(P, f) \
	_Static_assert(offsetof(struct P##_diag_entry, f) == offsetof(struct diag_entry, f), #f)
#define DIAG_EXPORT(P, API)                                                                     \
	_Static_assert(sizeof(struct P##_diag_entry) == sizeof(struct diag_entry), "entry size");  \
	DIAG_ENTRY_SAME_(P, severity);                                                          \
	DIAG_ENTRY_SAME_(P, path);                                                              \
	DIAG_ENTRY_SAME_(P, code);                                                              \
	DIAG_ENTRY_SAME_(P, message);                                                           \
	DIAG_ENTRY_SAME_(P, value);                                                             \
	DIAG_ENTRY_SAME_(P, line);                                                              \
	DIAG_ENTRY_SAME_(P, column);                                                            \
	API int P##_diag_new(struct P##_diag **ret_diag)                                        \
	{                                                                                       \
		return diag_new((struct diag **)ret_diag);                                      \
	}                                                                                       \
	API void P##_diag_free(struct P##_diag *d) { diag_free((struct diag *)d); }             \
	API void P##_diag_reset(struct P##_diag *d) { diag_reset((struct diag *)d); }           \
	API size_t P##_diag_count(const struct P##_diag *d) { return diag_count((const struct diag *)d); } \
	API size_t P##_diag_errors(const struct P##_diag *d) { return diag_errors((const struct diag *)d); } \
	API size_t P##_diag_warnings(const struct P##_diag *d)                                  \
	{                                                                                       \
		return diag_warnings((const struct diag *)d);                                   \
	}                                                                                       \
	API size_t P##_diag_dropped(const struct P##_diag *d)                                   \
	{                                                                                       \
		return diag_dropped((const struct diag *)d);                                    \
	}                                                                                       \
	API const struct P##_diag_entry *P##_diag_get(const struct P##_diag *d, size_t i)      \
	{                                                                                       \
		return (const struct P##_diag_entry *)diag_get((const struct diag *)d, i);      \
	}                                                                                       \
	API const struct P##_diag_entry *P##_diag_first_error(const struct P##_diag *d)        \
	{                                                                                       \
		return (const struct P##_diag_entry *)diag_first_error((const struct diag *)d); \
	}                                                                                       \
	API int P##_diag_to_json(const struct P##_diag *d, const char *source, char **ret_json, \
				 size_t *ret_len)                                               \
	{                                                                                       \
		return diag_to_json((const struct diag *)d, source, ret_json, ret_len);         \
	}                                                                                       \
	API int P##_diag_entry_format(const struct P##_diag_entry *e, char *buf, size_t size)   \
	{                                                                                       \
		return diag_entry_format((const struct diag_entry *)e, buf, size);              \
	}                                                                                       \
	API const char *P##_diag_subject(const struct P##_diag *d)                              \
	{                                                                                       \
		return diag_subject((const struct diag *)d);                                    \
	}                                                                                       \
	struct diag *P##__diag(struct P##_diag *d)                                              \
	{                                                                                       \
		return (struct diag *)d;                                                        \
	}

#endif
