/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* JSON output with yajl_gen and small accessors over common/json.h trees
 * (private to libflowsdn). */
#ifndef FLOWSDN_JSONUTIL_H
#define FLOWSDN_JSONUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_gen.h>

#include "json.h"

/* A generator that validates UTF-8 (NULL on allocation failure). */
yajl_gen jgen_new(void);
/* Emits a NUL-terminated string. */
void jgen_str(yajl_gen g, const char *s);
/* Emits "key": "value". */
void jgen_kv(yajl_gen g, const char *key, const char *value);
/* Emits "key": integer. */
void jgen_ki(yajl_gen g, const char *key, long long value);
/* Emits a parsed value (numbers keep their exact text). */
void jgen_value(yajl_gen g, const struct json_value *v);
/* Copies the generated text into a NUL-terminated buffer (freed by the
 * caller); -ENOMEM, -EINVAL when the document is incomplete or invalid. */
int jgen_take(yajl_gen g, char **ret, size_t *ret_len);

/* The string of @v, or NULL when @v is absent, not a string or holds a
 * NUL character. */
const char *jstr(const struct json_value *v);
static inline bool jis(const struct json_value *v, enum json_type t)
{
	return v && v->type == t;
}

#endif
