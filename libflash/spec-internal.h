/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private to libflash: filling a struct flash_diag, the table-driven schema
 * checker shared by the spec and the owner policy, and small helpers to
 * read a JSON tree that the checker has accepted.
 */
#ifndef FLASH_SPEC_INTERNAL_H
#define FLASH_SPEC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <flash/spec.h>
#include <flowsdn/addr.h>

#include "json.h"
#include "spec-fields.h"
#include "util.h"

/* ---------------------------------------------------------------- diag */

/* Starts a new run: empties @diag and sets the entry limit (0: default). */
void diag_begin(struct flash_diag *diag, size_t max_entries);

/* Adds one problem.  @value (may be NULL) is rendered as shortened JSON.
 * A NULL @diag only counts nothing; allocation failures are remembered
 * (diag_oom()) and the entry is dropped. */
void diag_add(struct flash_diag *diag, enum flash_diag_severity sev, const char *path, const char *code,
	      const struct json_value *value, const char *fmt, ...) _printf_(6, 7);
/* The same with the value given as text that is already JSON. */
void diag_add_text(struct flash_diag *diag, enum flash_diag_severity sev, const char *path, const char *code,
		   const char *value_json, const char *fmt, ...) _printf_(6, 7);
/* A JSON-level failure (json_parse() refused the input). */
void diag_add_json_error(struct flash_diag *diag, const struct json_error *err);

bool diag_oom(const struct flash_diag *diag);

/* Errors counted since diag_begin() — also without a diag (the checks
 * count in a local tally then). */
struct check_ctx {
	struct flash_diag *diag;
	struct json_path path;
	size_t errors;
	size_t warnings;
	bool oom;           /* a check could not allocate: the result is -ENOMEM */
};

void check_ctx_init(struct check_ctx *ctx, struct flash_diag *diag);
void check_error(struct check_ctx *ctx, const char *code, const struct json_value *value, const char *fmt, ...)
	_printf_(4, 5);
void check_warning(struct check_ctx *ctx, const char *code, const struct json_value *value, const char *fmt, ...)
	_printf_(4, 5);

/* ---------------------------------------------------------------- schema */

/* Checks @v against the descriptor @f, reporting every problem at paths
 * below ctx->path.  Returns true when @v (and everything below it) passed. */
bool spec_schema_check(const struct spec_field *f, const struct json_value *v, struct check_ctx *ctx);

/* True when @s matches the field's pattern (no pattern: true).  Only ASCII
 * input can match. */
bool spec_pattern_match(const char *pattern, const char *s, size_t len);

/* Parses a CIDR field: an address (host prefix) or ADDRESS/LEN with no
 * host bits.  Returns 0 or a negative flowsdn error. */
int spec_cidr_parse(const char *s, size_t len, struct flowsdn_prefix *ret);

/* Checks the distribution-reference rules a regular expression cannot say.
 * Returns NULL when @ref is fine, else a static message. */
const char *spec_oci_reference_problem(const char *ref);

/* ---------------------------------------------------------------- reading */

/* For a tree the schema accepted: member values with defaults. */
const char *jstr(const struct json_value *obj, const char *key, const char *def);
int64_t jint(const struct json_value *obj, const char *key, int64_t def);
bool jbool(const struct json_value *obj, const char *key, bool def);

/* JSON limits used for specs and policies (bounded memory). */
extern const struct json_limits spec_json_limits;

#endif
