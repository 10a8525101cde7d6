/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flash-operator's registry credentials file (registry-auth.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/file.h>

#include "diag.h"
#include "json.h"
#include "registry-auth.h"

struct cred_ref {
	const char *username, *password;
};

/* One entry: a list of two fields. */
static const struct json_field cred_fields[] = {
	{ "username", JSON_STRING, true, json_read_strref, offsetof(struct cred_ref, username), NULL },
	{ "password", JSON_STRING, true, json_read_strref, offsetof(struct cred_ref, password), NULL },
};

static void wipe_free(const char *s)
{
	if (s) {
		explicit_bzero((char *)s, strlen(s));
		free((char *)s);
	}
}

void op_registry_auth_clear(struct op_registry_auth *a)
{
	for (size_t i = 0; i < a->n; i++) {
		wipe_free(a->v[i].registry);
		wipe_free(a->v[i].username);
		wipe_free(a->v[i].password);
	}
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

/* Wipes the strings of the parsed tree (the secrets) before it is freed. */
static void wipe_tree(struct json_value *v)
{
	if (!v)
		return;
	if (v->type == JSON_STRING)
		explicit_bzero((char *)v->u.string.ptr, v->u.string.len);
	for (size_t i = 0; v->type == JSON_OBJECT && i < v->u.object.n; i++)
		wipe_tree(v->u.object.members[i].value);
}

/* A registry as a reference writes it: host[:port], no scheme or path. */
static bool registry_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= OP_REGISTRY_NAME_MAX && !strpbrk(s, "/@ \t\r\n") && s[0] != ':' && s[0] != '.';
}

int op_registry_auth_parse(const char *json, size_t len, struct op_registry_auth *ret, char *err,
			   size_t err_size)
{
	struct op_registry_auth a = { 0 };
	struct json_value *root = NULL;
	struct json_error jerr;
	struct check_ctx ctx;
	struct diag *diag = NULL;
	int r;

	op_registry_auth_clear(ret);
	r = json_parse(json, len, NULL, &root, &jerr);
	if (r == -EBADMSG) {
		snprintf(err, err_size, "line %u column %u: %s", jerr.line, jerr.column, jerr.message);
		return -EINVAL;
	}
	if (r < 0)
		return r;
	r = diag_new(&diag);
	if (r < 0)
		goto out;
	check_ctx_init(&ctx, diag);
	if (root->type != JSON_OBJECT) {
		check_error(&ctx, "type", root, "must be an object of registries");
	} else {
		a.v = calloc(root->u.object.n ? root->u.object.n : 1, sizeof(*a.v));
		if (!a.v) {
			r = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; a.v && i < root->u.object.n; i++) {
		const struct json_member *m = &root->u.object.members[i];
		struct cred_ref c = { 0 };
		size_t saved = json_path_push_key(&ctx.path, m->key);

		if (!registry_name_ok(m->key))
			check_error(&ctx, "registry", NULL, "not a registry host[:port]");
		else if (json_read_object(&ctx, m->value, cred_fields, ARRAY_SIZE(cred_fields), &c) == 0) {
			struct flash_image_credential *e = &a.v[a.n++];

			e->registry = strdup(m->key);
			e->username = strdup(c.username);
			e->password = strdup(c.password);
			if (!e->registry || !e->username || !e->password)
				ctx.oom = true;
		}
		json_path_pop(&ctx.path, saved);
	}
	if (ctx.oom) {
		r = -ENOMEM;
	} else if (ctx.errors) {
		const struct diag_entry *e = diag_first_error(diag);

		if (e)
			diag_entry_format(e, err, err_size);
		r = -EINVAL;
	} else {
		*ret = a;
		a = (struct op_registry_auth){ 0 };
		r = 0;
	}
out:
	op_registry_auth_clear(&a);
	diag_free(diag);
	wipe_tree(root);
	json_free(root);
	return r;
}

int op_registry_auth_load(const char *path, struct op_registry_auth *ret, char *err, size_t err_size)
{
	char *text = NULL, why[512] = "";
	size_t len = 0;
	int r = flash_file_read_secret(path, 0, &text, &len);

	if (r < 0) {
		snprintf(err, err_size, "%s: %s%s", path, r == -EPERM ? "must be mode 0600 or 0400 and ours: " : "",
			 strerror(-r));
		return r;
	}
	r = op_registry_auth_parse(text, len, ret, why, sizeof(why));
	explicit_bzero(text, len);
	free(text);
	if (r < 0)
		snprintf(err, err_size, "%s: %s", path, why[0] ? why : strerror(-r));
	return r;
}
