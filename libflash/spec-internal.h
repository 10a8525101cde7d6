/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private to libflash: the table-driven schema
 * checker shared by the spec and the owner policy, and small helpers to
 * read a JSON tree that the checker has accepted.
 */
#ifndef FLASH_SPEC_INTERNAL_H
#define FLASH_SPEC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <flash/spec.h>
#include <flowsdn/addr.h>

#include "diag.h"
#include "json.h"
#include "spec-fields.h"
#include "util.h"

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
