/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An OpenAPI v3 schema validator for Kubernetes objects: the subset of the
 * schema language that the apiserver's published documents
 * (/openapi/v3/apis/<group>/<version>) and CRD structural schemas use.
 *
 * Objects are closed: an object schema that lists "properties" refuses a
 * member it does not list, unless it has "additionalProperties" (a schema
 * or true) or "x-kubernetes-preserve-unknown-fields: true" — the rule
 * `kubectl apply --validate=strict` and the apiserver's field validation
 * apply.  An object schema without "properties" is free-form.
 */
#include "config.h"

#include <inttypes.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>

#include <flash/render.h>

#include "internal.h"
#include "json.h"
#include "render-internal.h"

#define MAX_SCHEMA_DEPTH 128
/* Schemas applied in one validation, all branches tried included: a
 * document from outside (the API server's) whose $refs fan out, as
 * {"anyOf":[{"$ref":"#/X"},{"$ref":"#/X"}]} in X does, would otherwise
 * take 2^MAX_SCHEMA_DEPTH steps.  The operator's manifests against the
 * Kubernetes schemas take from a few hundred to under 2000 (the tests of
 * render and of the reconcile fail at 200, pass at 2000). */
#define MAX_SCHEMA_STEPS 200000

struct gvk_entry {
	char *group, *version, *kind;
	const struct json_value *schema;
	const struct json_value *doc;  /* where "#/..." references resolve */
};

struct flash_schema_set {
	struct json_value **docs;
	size_t n_docs;
	struct gvk_entry *gvks;
	size_t n_gvks;
};

struct vctx {
	const struct json_value *doc;
	struct json_path path;
	struct diag *diag;
	unsigned int quiet;   /* > 0 while trying anyOf/oneOf branches */
	unsigned int depth;
	size_t steps;         /* schemas applied so far (MAX_SCHEMA_STEPS) */
};

/* The first violation (none while trying anyOf/oneOf branches). */
static int fail(struct vctx *c, const char *fmt, ...) _printf_(2, 3);
static int fail(struct vctx *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->quiet) {
		va_start(ap, fmt);
		diag_add_textv(c->diag, DIAG_ERROR, json_path_str(&c->path), "schema", NULL, fmt, ap);
		va_end(ap);
	}
	return -FLASH_E_RENDER_INVALID;
}

/* Resolves a local reference "#/a/b~1c" inside @doc (RFC 6901 escapes). */
static const struct json_value *resolve_ref(const struct json_value *doc, const char *ref)
{
	const struct json_value *cur = doc;
	const char *p;

	if (!ref || ref[0] != '#')
		return NULL;
	p = ref + 1;
	while (*p) {
		char tok[512];
		size_t n = 0;

		if (*p != '/')
			return NULL;
		p++;
		while (*p && *p != '/') {
			char ch = *p++;

			if (ch == '~') {
				if (*p == '0')
					ch = '~';
				else if (*p == '1')
					ch = '/';
				else
					return NULL;
				p++;
			}
			if (n + 1 >= sizeof(tok))
				return NULL;
			tok[n++] = ch;
		}
		tok[n] = '\0';
		if (cur->type == JSON_OBJECT) {
			cur = json_get(cur, tok);
		} else if (cur->type == JSON_ARRAY) {
			char *end;
			unsigned long idx = strtoul(tok, &end, 10);

			if (!n || *end || idx >= cur->u.array.n)
				return NULL;
			cur = cur->u.array.items[idx];
		} else {
			return NULL;
		}
		if (!cur)
			return NULL;
	}
	return cur;
}

static bool schema_flag(const struct json_value *schema, const char *key)
{
	bool b = false;

	return json_get_bool(json_get(schema, key), &b) == 0 && b;
}

static const char *schema_str(const struct json_value *schema, const char *key)
{
	const char *s = NULL;

	return json_get_string(json_get(schema, key), &s) == 0 ? s : NULL;
}

static size_t utf8_length(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

static bool regex_match(const char *pattern, const char *s, int *ret_err)
{
	regex_t re;
	int r;

	*ret_err = 0;
	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
		*ret_err = -ENOTSUP;
		return false;
	}
	r = regexec(&re, s, 0, NULL, 0);
	regfree(&re);
	return r == 0;
}

static int check_type(struct vctx *c, const char *type, const struct json_value *inst)
{
	bool ok;

	if (strcmp(type, "object") == 0)
		ok = inst->type == JSON_OBJECT;
	else if (strcmp(type, "array") == 0)
		ok = inst->type == JSON_ARRAY;
	else if (strcmp(type, "string") == 0)
		ok = inst->type == JSON_STRING;
	else if (strcmp(type, "boolean") == 0)
		ok = inst->type == JSON_BOOL;
	else if (strcmp(type, "number") == 0)
		ok = inst->type == JSON_NUMBER;
	else if (strcmp(type, "integer") == 0)
		ok = inst->type == JSON_NUMBER && json_number_is_integer(inst);
	else if (strcmp(type, "null") == 0)
		ok = inst->type == JSON_NULL;
	else
		return fail(c, "schema uses unsupported type \"%s\"", type);
	if (!ok)
		return fail(c, "must be of type %s, not %s", type,
			    inst->type == JSON_NUMBER ? "non-integer number" : json_type_name(inst->type));
	return 0;
}

static int check_format(struct vctx *c, const char *format, const struct json_value *inst)
{
	if (inst->type == JSON_NUMBER && json_number_is_integer(inst)) {
		int64_t v;

		if (strcmp(format, "int32") == 0) {
			if (json_get_int64(inst, &v) < 0 || v < INT32_MIN || v > INT32_MAX)
				return fail(c, "must be a 32-bit integer, not %s", inst->u.number.text);
		} else if (strcmp(format, "int64") == 0) {
			if (json_get_int64(inst, &v) < 0)
				return fail(c, "must be a 64-bit integer, not %s", inst->u.number.text);
		}
	} else if (inst->type == JSON_STRING && strcmp(format, "date-time") == 0) {
		int err;

		if (!regex_match("^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$",
				 inst->u.string.ptr, &err))
			return fail(c, "must be an RFC 3339 date-time");
	}
	return 0;
}

static int validate(struct vctx *c, const struct json_value *schema, const struct json_value *inst);

/* Tries @schema without reporting; true when @inst matches. */
static bool matches(struct vctx *c, const struct json_value *schema, const struct json_value *inst, int *ret_err)
{
	int r;

	c->quiet++;
	r = validate(c, schema, inst);
	c->quiet--;
	*ret_err = r == -FLASH_E_RENDER_INVALID ? 0 : r;
	return r == 0;
}

/* The @max_kw / @min_kw bounds of @schema on a count of @n @what. */
static int check_count(struct vctx *c, const struct json_value *schema, const char *max_kw, const char *min_kw,
		       size_t n, const char *what)
{
	uint64_t lim;

	if (json_get_uint64(json_get(schema, max_kw), &lim) == 0 && n > lim)
		return fail(c, "must have at most %" PRIu64 " %s", lim, what);
	if (json_get_uint64(json_get(schema, min_kw), &lim) == 0 && n < lim)
		return fail(c, "must have at least %" PRIu64 " %s", lim, what);
	return 0;
}

static int validate_object(struct vctx *c, const struct json_value *schema, const struct json_value *inst)
{
	const struct json_value *props = json_get(schema, "properties");
	const struct json_value *addl = json_get(schema, "additionalProperties");
	const struct json_value *req = json_get(schema, "required");
	bool open = schema_flag(schema, "x-kubernetes-preserve-unknown-fields") ||
		    (addl && addl->type == JSON_BOOL && addl->u.boolean) ||
		    (!props && !addl);
	int r;

	if ((r = check_count(c, schema, "maxProperties", "minProperties", inst->u.object.n, "properties")) < 0)
		return r;
	if (req && req->type == JSON_ARRAY) {
		for (size_t i = 0; i < req->u.array.n; i++) {
			const char *name;

			if (json_get_string(req->u.array.items[i], &name) < 0)
				return fail(c, "schema has a non-string in \"required\"");
			if (!json_get(inst, name))
				return fail(c, "required field \"%s\" is missing", name);
		}
	}
	for (size_t i = 0; i < inst->u.object.n; i++) {
		const struct json_member *m = &inst->u.object.members[i];
		const struct json_value *sub = props ? json_get(props, m->key) : NULL;
		size_t saved = json_path_push_key(&c->path, m->key);

		if (!sub && addl && addl->type == JSON_OBJECT)
			sub = addl;
		if (sub)
			r = validate(c, sub, m->value);
		else if (open)
			r = 0;
		else
			r = fail(c, "unknown field \"%s\"", m->key);
		json_path_pop(&c->path, saved);
		if (r < 0)
			return r;
	}
	return 0;
}

static int validate_array(struct vctx *c, const struct json_value *schema, const struct json_value *inst)
{
	const struct json_value *items = json_get(schema, "items");
	const char *list_type = schema_str(schema, "x-kubernetes-list-type");
	const struct json_value *map_keys = json_get(schema, "x-kubernetes-list-map-keys");
	int r;

	if ((r = check_count(c, schema, "maxItems", "minItems", inst->u.array.n, "items")) < 0)
		return r;
	for (size_t i = 0; i < inst->u.array.n; i++) {
		size_t saved = json_path_push_index(&c->path, i);

		r = items ? validate(c, items, inst->u.array.items[i]) : 0;
		/* list-type set: items unique; map: the map keys unique. */
		for (size_t j = 0; r == 0 && j < i && list_type; j++) {
			const struct json_value *a = inst->u.array.items[i], *b = inst->u.array.items[j];
			bool dup;

			if (strcmp(list_type, "set") == 0) {
				dup = json_equal(a, b);
			} else if (strcmp(list_type, "map") == 0 && map_keys && map_keys->type == JSON_ARRAY &&
				   a->type == JSON_OBJECT && b->type == JSON_OBJECT) {
				dup = true;
				for (size_t k = 0; k < map_keys->u.array.n; k++) {
					const char *key;
					const struct json_value *ka, *kb;

					if (json_get_string(map_keys->u.array.items[k], &key) < 0)
						break;
					ka = json_get(a, key);
					kb = json_get(b, key);
					if (!(ka && kb && json_equal(ka, kb)) && !(!ka && !kb)) {
						dup = false;
						break;
					}
				}
			} else {
				dup = false;
			}
			if (dup)
				r = fail(c, "duplicates item %zu of a list of type %s", j, list_type);
		}
		json_path_pop(&c->path, saved);
		if (r < 0)
			return r;
	}
	return 0;
}

static int validate_scalar(struct vctx *c, const struct json_value *schema, const struct json_value *inst)
{
	uint64_t lim;
	double bound, v;

	if (inst->type == JSON_STRING) {
		size_t len = utf8_length(inst->u.string.ptr, inst->u.string.len);
		const char *pattern = schema_str(schema, "pattern");

		if (json_get_uint64(json_get(schema, "maxLength"), &lim) == 0 && len > lim)
			return fail(c, "must be at most %" PRIu64 " characters", lim);
		if (json_get_uint64(json_get(schema, "minLength"), &lim) == 0 && len < lim)
			return fail(c, "must be at least %" PRIu64 " characters", lim);
		if (pattern) {
			int err;

			if (inst->u.string.has_nul)
				return fail(c, "must not contain NUL");
			if (!regex_match(pattern, inst->u.string.ptr, &err)) {
				if (err < 0)
					return fail(c, "schema pattern \"%s\" is not supported", pattern);
				return fail(c, "must match the pattern \"%s\"", pattern);
			}
		}
	} else if (inst->type == JSON_NUMBER && json_get_double(inst, &v) == 0) {
		if (json_get_double(json_get(schema, "maximum"), &bound) == 0 &&
		    (schema_flag(schema, "exclusiveMaximum") ? v >= bound : v > bound))
			return fail(c, "must be at most %s%g", schema_flag(schema, "exclusiveMaximum") ? "(exclusive) " : "", bound);
		if (json_get_double(json_get(schema, "minimum"), &bound) == 0 &&
		    (schema_flag(schema, "exclusiveMinimum") ? v <= bound : v < bound))
			return fail(c, "must be at least %s%g", schema_flag(schema, "exclusiveMinimum") ? "(exclusive) " : "", bound);
	}
	return 0;
}

static int validate_combinators(struct vctx *c, const struct json_value *schema, const struct json_value *inst)
{
	const struct json_value *all = json_get(schema, "allOf");
	const struct json_value *any = json_get(schema, "anyOf");
	const struct json_value *one = json_get(schema, "oneOf");
	const struct json_value *not = json_get(schema, "not");
	int r, err;

	if (all && all->type == JSON_ARRAY)
		for (size_t i = 0; i < all->u.array.n; i++)
			if ((r = validate(c, all->u.array.items[i], inst)) < 0)
				return r;
	if (any && any->type == JSON_ARRAY) {
		bool ok = false;

		for (size_t i = 0; i < any->u.array.n && !ok; i++) {
			ok = matches(c, any->u.array.items[i], inst, &err);
			if (err < 0)
				return err;
		}
		if (!ok)
			return fail(c, "matches none of the anyOf schemas");
	}
	if (one && one->type == JSON_ARRAY) {
		size_t hits = 0;

		for (size_t i = 0; i < one->u.array.n; i++) {
			hits += matches(c, one->u.array.items[i], inst, &err);
			if (err < 0)
				return err;
		}
		if (hits != 1)
			return fail(c, "matches %zu of the oneOf schemas, not exactly one", hits);
	}
	if (not && not->type == JSON_OBJECT) {
		if (matches(c, not, inst, &err))
			return fail(c, "matches a schema it must not match");
		if (err < 0)
			return err;
	}
	return 0;
}

static int validate(struct vctx *c, const struct json_value *schema, const struct json_value *inst)
{
	const char *ref, *type, *format;
	const struct json_value *en;
	int r;

	if (schema->type == JSON_BOOL)
		return schema->u.boolean ? 0 : fail(c, "no value is allowed here");
	if (schema->type != JSON_OBJECT)
		return fail(c, "schema is a %s, not an object", json_type_name(schema->type));
	if (++c->depth > MAX_SCHEMA_DEPTH) {
		r = fail(c, "schema nesting deeper than %d", MAX_SCHEMA_DEPTH);
		goto out_depth;
	}
	/* Past the budget the document is at fault, not the object: said
	 * once, even inside a branch being tried, and not taken for a
	 * branch that does not match (matches() passes it on). */
	if (++c->steps > MAX_SCHEMA_STEPS) {
		if (c->steps == MAX_SCHEMA_STEPS + 1)
			diag_add_text(c->diag, DIAG_ERROR, json_path_str(&c->path), "schema", NULL,
				      "the schema takes more than %d steps to check (a $ref that fans out)",
				      MAX_SCHEMA_STEPS);
		r = -FLASH_E_RENDER_BAD_DOCUMENT;
		goto out_depth;
	}
	ref = schema_str(schema, "$ref");
	if (ref) {
		const struct json_value *target = resolve_ref(c->doc, ref);

		if (!target) {
			r = fail(c, "schema reference \"%s\" does not resolve", ref);
			goto out_depth;
		}
		if ((r = validate(c, target, inst)) < 0)
			goto out_depth;
	}
	if (inst->type == JSON_NULL && schema_flag(schema, "nullable")) {
		r = 0;
		goto out_depth;
	}
	type = schema_str(schema, "type");
	if (schema_flag(schema, "x-kubernetes-int-or-string")) {
		if (!(inst->type == JSON_STRING || (inst->type == JSON_NUMBER && json_number_is_integer(inst)))) {
			r = fail(c, "must be an integer or a string, not %s", json_type_name(inst->type));
			goto out_depth;
		}
	} else if (type && (r = check_type(c, type, inst)) < 0) {
		goto out_depth;
	}
	en = json_get(schema, "enum");
	if (en && en->type == JSON_ARRAY) {
		bool found = false;

		for (size_t i = 0; i < en->u.array.n && !found; i++)
			found = json_equal(en->u.array.items[i], inst);
		if (!found) {
			r = inst->type == JSON_STRING ? fail(c, "\"%s\" is not one of the allowed values", inst->u.string.ptr)
						      : fail(c, "is not one of the allowed values");
			goto out_depth;
		}
	}
	format = schema_str(schema, "format");
	if (format && (r = check_format(c, format, inst)) < 0)
		goto out_depth;
	if (inst->type == JSON_OBJECT)
		r = validate_object(c, schema, inst);
	else if (inst->type == JSON_ARRAY)
		r = validate_array(c, schema, inst);
	else
		r = validate_scalar(c, schema, inst);
	if (r < 0)
		goto out_depth;
	r = validate_combinators(c, schema, inst);
out_depth:
	c->depth--;
	return r;
}

/* ------------------------------------------------------------- sets */

FLASH_API int flash_schema_set_new(struct flash_schema_set **ret_set)
{
	struct flash_schema_set *s;

	if (!ret_set)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*ret_set = s;
	return 0;
}

FLASH_API void flash_schema_set_free(struct flash_schema_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n_gvks; i++) {
		free(set->gvks[i].group);
		free(set->gvks[i].version);
		free(set->gvks[i].kind);
	}
	free(set->gvks);
	for (size_t i = 0; i < set->n_docs; i++)
		json_free(set->docs[i]);
	free(set->docs);
	free(set);
}

static int parse_text(const char *text, size_t len, struct json_value **ret, struct diag *diag)
{
	/* OpenAPI documents are a few MB with wide component maps. */
	struct json_limits lim = { .max_members = 100000, .max_input = 32u << 20, .max_nodes = 4000000 };
	struct json_error err = { 0 };
	int r = json_parse(text, len, &lim, ret, &err);

	if (r == -EBADMSG)
		return render_diag_json(diag, -FLASH_E_RENDER_BAD_DOCUMENT, &err);
	return r;
}

static int add_gvk(struct flash_schema_set *set, const char *group, const char *version, const char *kind,
		   const struct json_value *schema, const struct json_value *doc)
{
	struct gvk_entry *g = reallocarray(set->gvks, set->n_gvks + 1, sizeof(*g));
	struct gvk_entry e = { 0 };

	if (!g)
		return -ENOMEM;
	set->gvks = g;
	e.group = strdup(group);
	e.version = strdup(version);
	e.kind = strdup(kind);
	if (!e.group || !e.version || !e.kind) {
		free(e.group);
		free(e.version);
		free(e.kind);
		return -ENOMEM;
	}
	e.schema = schema;
	e.doc = doc;
	set->gvks[set->n_gvks++] = e;
	return 0;
}

static int keep_doc(struct flash_schema_set *set, struct json_value *doc)
{
	struct json_value **d = reallocarray(set->docs, set->n_docs + 1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	set->docs = d;
	set->docs[set->n_docs++] = doc;
	return 0;
}

/* Takes @doc into @set with the kinds added since @n_before when @r is 0;
 * otherwise (or when that fails) takes those kinds back and frees @doc.
 * Returns @r or the failure. */
static int adopt_doc(struct flash_schema_set *set, struct json_value *doc, size_t n_before, int r)
{
	if (r == 0)
		r = keep_doc(set, doc);
	if (r == 0)
		return 0;
	while (set->n_gvks > n_before) {
		struct gvk_entry *e = &set->gvks[--set->n_gvks];

		free(e->group);
		free(e->version);
		free(e->kind);
	}
	json_free(doc);
	return r;
}

/* Starts reading a document for @set: the diag emptied, @ctx reporting
 * into it, the text parsed into *ret_doc. */
static int open_doc(struct flash_schema_set *set, const char *text, size_t len, struct diag *diag,
		    struct json_value **ret_doc, struct check_ctx *ctx)
{
	if (!set || !text)
		return -EINVAL;
	diag_begin(diag, 0);
	check_ctx_init(ctx, diag);
	return parse_text(text, len, ret_doc, diag);
}

/* What a check that reported problems into @ctx returns. */
static int read_result(const struct check_ctx *ctx, int r)
{
	if (ctx->oom || r == -ENOMEM)
		return -ENOMEM;
	if (r < 0 || ctx->errors)
		return -FLASH_E_RENDER_BAD_DOCUMENT;
	return 0;
}

/* One x-kubernetes-group-version-kind entry of an OpenAPI v3 schema. */
struct gvk_ref {
	const char *group, *version, *kind;
};

static const struct json_field gvk_fields[] = {
	{ "group", JSON_STRING, true, json_read_strref, offsetof(struct gvk_ref, group), NULL },
	{ "version", JSON_STRING, true, json_read_strref, offsetof(struct gvk_ref, version), NULL },
	{ "kind", JSON_STRING, true, json_read_strref, offsetof(struct gvk_ref, kind), NULL },
};

FLASH_API int flash_schema_set_add_openapi(struct flash_schema_set *set, const char *text, size_t len,
					   struct flash_diag *public_diag)
{
	struct json_value *doc = NULL;
	const struct json_value *schemas = NULL;
	struct check_ctx ctx;
	size_t n_before;
	int r = open_doc(set, text, len, flash__diag(public_diag), &doc, &ctx);

	if (r < 0)
		return r;
	n_before = set->n_gvks;
	r = json_read_value_at(&ctx, doc, "components.schemas", JSON_OBJECT, true, &schemas);
	for (size_t i = 0; r == 0 && i < schemas->u.object.n; i++) {
		const struct json_member *m = &schemas->u.object.members[i];
		const struct json_value *gvks = json_get(m->value, "x-kubernetes-group-version-kind");
		size_t s1, s2;

		if (!json_is(gvks, JSON_ARRAY))
			continue;
		s1 = json_path_push_key(&ctx.path, "components");
		json_path_push_key(&ctx.path, "schemas");
		json_path_push_key(&ctx.path, m->key);
		json_path_push_key(&ctx.path, "x-kubernetes-group-version-kind");
		for (size_t j = 0; r == 0 && j < gvks->u.array.n; j++) {
			struct gvk_ref g = { 0 };

			s2 = json_path_push_index(&ctx.path, j);
			r = json_read_object_flags(&ctx, gvks->u.array.items[j], gvk_fields, ARRAY_SIZE(gvk_fields),
						   0, &g);
			json_path_pop(&ctx.path, s2);
			if (r == 0)
				r = add_gvk(set, g.group, g.version, g.kind, m->value, doc);
		}
		json_path_pop(&ctx.path, s1);
	}
	return adopt_doc(set, doc, n_before, read_result(&ctx, r));
}

/* The head of a CustomResourceDefinition (an open format: what is not
 * named here is not looked at). */
struct crd_head {
	const char *api_version, *kind, *group, *names_kind;
	const struct json_value *versions;
};

static int read_ref(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	(void)ctx;
	(void)arg;
	*(const struct json_value **)dst = v;
	return 0;
}

static const struct json_field crd_names_fields[] = {
	{ "kind", JSON_STRING, true, json_read_strref, offsetof(struct crd_head, names_kind), NULL },
};
static const struct json_field crd_spec_fields[] = {
	{ "group", JSON_STRING, true, json_read_strref, offsetof(struct crd_head, group), NULL },
	{ "names", JSON_OBJECT, true, json_read_nested, 0,
	  &(struct json_table){ crd_names_fields, ARRAY_SIZE(crd_names_fields), JSON_READ_IGNORE_UNKNOWN } },
	{ "versions", JSON_ARRAY, true, read_ref, offsetof(struct crd_head, versions), NULL },
};
static const struct json_field crd_fields[] = {
	{ "apiVersion", JSON_STRING, true, json_read_strref, offsetof(struct crd_head, api_version), NULL },
	{ "kind", JSON_STRING, true, json_read_strref, offsetof(struct crd_head, kind), NULL },
	{ "spec", JSON_OBJECT, true, json_read_nested, 0,
	  &(struct json_table){ crd_spec_fields, ARRAY_SIZE(crd_spec_fields), JSON_READ_IGNORE_UNKNOWN } },
};

FLASH_API int flash_schema_set_add_crd(struct flash_schema_set *set, const char *text, size_t len,
				       struct flash_diag *public_diag)
{
	struct json_value *doc = NULL;
	struct crd_head h = { 0 };
	struct check_ctx ctx;
	size_t n_before;
	int r = open_doc(set, text, len, flash__diag(public_diag), &doc, &ctx);

	if (r < 0)
		return r;
	n_before = set->n_gvks;
	r = json_read_object_flags(&ctx, doc, crd_fields, ARRAY_SIZE(crd_fields), JSON_READ_IGNORE_UNKNOWN, &h);
	if (r == 0 && strcmp(h.api_version, "apiextensions.k8s.io/v1") != 0)
		check_error_at(&ctx, "apiVersion", "const", json_get(doc, "apiVersion"),
			       "must be apiextensions.k8s.io/v1");
	if (r == 0 && strcmp(h.kind, "CustomResourceDefinition") != 0)
		check_error_at(&ctx, "kind", "const", json_get(doc, "kind"), "must be CustomResourceDefinition");
	for (size_t i = 0; r == 0 && !ctx.errors && i < h.versions->u.array.n; i++) {
		const struct json_value *v = h.versions->u.array.items[i];
		const struct json_value *schema = NULL;
		const char *name = NULL;
		size_t saved = json_path_push_key(&ctx.path, "spec");

		json_path_push_key(&ctx.path, "versions");
		json_path_push_index(&ctx.path, i);
		r = json_read_value_at(&ctx, v, "", JSON_OBJECT, true, NULL);
		if (r == 0)
			r = json_read_string_at(&ctx, v, "name", true, &name);
		if (r == 0)
			r = json_read_value_at(&ctx, v, "schema.openAPIV3Schema", JSON_OBJECT, true, &schema);
		json_path_pop(&ctx.path, saved);
		if (r == 0)
			r = add_gvk(set, h.group, name, h.names_kind, schema, doc);
	}
	return adopt_doc(set, doc, n_before, read_result(&ctx, r));
}

static const struct gvk_entry *find_gvk(const struct flash_schema_set *set, const char *api_version, const char *kind)
{
	const char *slash = strchr(api_version, '/');
	const char *version = slash ? slash + 1 : api_version;
	size_t glen = slash ? (size_t)(slash - api_version) : 0;

	for (size_t i = 0; i < set->n_gvks; i++) {
		const struct gvk_entry *g = &set->gvks[i];

		if (strlen(g->group) == glen && strncmp(g->group, api_version, glen) == 0 &&
		    strcmp(g->version, version) == 0 && strcmp(g->kind, kind) == 0)
			return g;
	}
	return NULL;
}

FLASH_API int flash_schema_validate_object(const struct flash_schema_set *set, const char *text, size_t len,
					   struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	struct json_value *inst = NULL;
	const char *api_version, *kind;
	const struct gvk_entry *g;
	struct vctx c = { .diag = diag };
	int r;

	if (!set || !text)
		return -EINVAL;
	diag_begin(diag, 0);
	r = parse_text(text, len, &inst, diag);
	if (r < 0)
		return r;
	if (json_get_string(json_get(inst, "apiVersion"), &api_version) < 0 ||
	    json_get_string(json_get(inst, "kind"), &kind) < 0) {
		r = render_diag_fail(diag, -FLASH_E_RENDER_INVALID, "", "the object has no string apiVersion and kind");
		goto out_inst;
	}
	g = find_gvk(set, api_version, kind);
	if (!g) {
		r = render_diag_fail(diag, -FLASH_E_RENDER_NO_SCHEMA, "", "no schema for %s %s", api_version, kind);
		goto out_inst;
	}
	json_path_init(&c.path);
	c.doc = g->doc;
	r = validate(&c, g->schema, inst);
out_inst:
	json_free(inst);
	return r;
}

FLASH_API int flash_schema_validate(const struct flash_schema_set *set, const char *schema_name, const char *text,
				    size_t len, struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	struct json_value *inst = NULL;
	const struct json_value *schema = NULL;
	struct vctx c = { .diag = diag };
	int r;

	if (!set || !schema_name || !text)
		return -EINVAL;
	diag_begin(diag, 0);
	for (size_t i = 0; i < set->n_docs && !schema; i++) {
		schema = json_get(json_get(json_get(set->docs[i], "components"), "schemas"), schema_name);
		c.doc = set->docs[i];
	}
	if (!schema) {
		return render_diag_fail(diag, -FLASH_E_RENDER_NO_SCHEMA, "", "no schema named %s", schema_name);
	}
	r = parse_text(text, len, &inst, diag);
	if (r < 0)
		return r;
	json_path_init(&c.path);
	r = validate(&c, schema, inst);
	json_free(inst);
	return r;
}
