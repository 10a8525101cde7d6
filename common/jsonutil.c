/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* yajl_gen helpers and accessors over common/json.h trees. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

yajl_gen jgen_new(void)
{
	yajl_gen g = yajl_gen_alloc(NULL);

	if (g)
		yajl_gen_config(g, yajl_gen_validate_utf8, 1);
	return g;
}

void jgen_str(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

void jgen_kv(yajl_gen g, const char *key, const char *value)
{
	jgen_str(g, key);
	jgen_str(g, value);
}

void jgen_ki(yajl_gen g, const char *key, long long value)
{
	jgen_str(g, key);
	yajl_gen_integer(g, value);
}

void jgen_value(yajl_gen g, const struct json_value *v)
{
	switch (v->type) {
	case JSON_NULL:
		yajl_gen_null(g);
		break;
	case JSON_BOOL:
		yajl_gen_bool(g, v->u.boolean);
		break;
	case JSON_NUMBER:
		yajl_gen_number(g, v->u.number.text, v->u.number.len);
		break;
	case JSON_STRING:
		yajl_gen_string(g, (const unsigned char *)v->u.string.ptr, v->u.string.len);
		break;
	case JSON_ARRAY:
		yajl_gen_array_open(g);
		for (size_t i = 0; i < v->u.array.n; i++)
			jgen_value(g, v->u.array.items[i]);
		yajl_gen_array_close(g);
		break;
	case JSON_OBJECT:
		yajl_gen_map_open(g);
		for (size_t i = 0; i < v->u.object.n; i++) {
			yajl_gen_string(g, (const unsigned char *)v->u.object.members[i].key,
					v->u.object.members[i].key_len);
			jgen_value(g, v->u.object.members[i].value);
		}
		yajl_gen_map_close(g);
		break;
	}
}

int jgen_take(yajl_gen g, char **ret, size_t *ret_len)
{
	const unsigned char *buf;
	size_t len;
	char *copy;

	if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
		return -EINVAL;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	*ret = copy;
	if (ret_len)
		*ret_len = len;
	return 0;
}

const char *jstr(const struct json_value *v)
{
	const char *s;

	return v && json_get_string(v, &s) == 0 ? s : NULL;
}
