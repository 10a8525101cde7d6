/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The field table is the one source of the spec's schema (the validator
 * and the CRD generator read it): it must be well-formed, and the
 * canonical JSON must write exactly its fields.
 */
#include <criterion/criterion.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <flash/spec.h>

#include "helpers.h"
#include "json.h"
#include "spec-fields.h"
#include "util.h"

static void walk(const struct spec_field *f, const char *path, unsigned int depth)
{
	cr_assert(depth < 8, "%s: too deep", path);
	cr_assert(f->description && f->description[0], "%s: no description", path);
	cr_assert(!(f->required && f->has_default), "%s: required and defaulted", path);
	switch (f->type) {
	case SPEC_STRING:
		cr_assert(f->max_length > 0 && f->min_length <= f->max_length, "%s: lengths", path);
		if (f->pattern) {
			regex_t re;
			size_t n = strlen(f->pattern);

			cr_assert(f->pattern[0] == '^' && f->pattern[n - 1] == '$', "%s: pattern not anchored", path);
			cr_assert(regcomp(&re, f->pattern, REG_EXTENDED | REG_NOSUB) == 0, "%s: pattern", path);
			regfree(&re);
			cr_assert(f->pattern_hint && f->pattern_hint[0], "%s: pattern without hint", path);
			/* Only constructs both POSIX ERE and ECMA-262 read alike. */
			cr_assert(!strstr(f->pattern, "\\d") && !strstr(f->pattern, "\\w") && !strstr(f->pattern, "(?"),
				  "%s: pattern uses a dialect-specific construct", path);
		}
		if (f->enum_values) {
			bool has_default = !f->has_default;

			for (const char *const *e = f->enum_values; *e; e++) {
				cr_assert(strlen(*e) >= f->min_length && strlen(*e) <= f->max_length, "%s: enum %s length",
					  path, *e);
				has_default |= f->default_string && strcmp(*e, f->default_string) == 0;
			}
			cr_assert(has_default, "%s: default not among the enum values", path);
		}
		break;
	case SPEC_INTEGER:
		cr_assert(f->minimum <= f->maximum, "%s: bounds", path);
		if (f->has_default)
			cr_assert(f->default_int >= f->minimum && f->default_int <= f->maximum, "%s: default out of bounds",
				  path);
		break;
	case SPEC_BOOLEAN:
		break;
	case SPEC_OBJECT:
		cr_assert(f->fields && f->n_fields > 0, "%s: no fields", path);
		for (size_t i = 0; i < f->n_fields; i++) {
			char *sub = NULL;

			cr_assert(f->fields[i].name, "%s: unnamed field", path);
			if (i > 0)
				cr_assert(strcmp(f->fields[i - 1].name, f->fields[i].name) < 0, "%s: fields not sorted at %s",
					  path, f->fields[i].name);
			cr_assert(asprintf(&sub, "%s.%s", path, f->fields[i].name) > 0);
			walk(&f->fields[i], sub, depth + 1);
			cr_assert(spec_field_find(f, f->fields[i].name) == &f->fields[i]);
			free(sub);
		}
		break;
	case SPEC_ARRAY:
	case SPEC_MAP:
		cr_assert(f->items && f->max_items > 0, "%s: items", path);
		cr_assert(!f->items->name, "%s: item descriptor has a name", path);
		walk(f->items, path, depth + 1);
		if (f->type == SPEC_MAP) {
			cr_assert(f->key && f->key->type == SPEC_STRING, "%s: map key", path);
			walk(f->key, path, depth + 1);
		}
		break;
	}
}

Test(spec_fields, tables_are_well_formed)
{
	walk(&spec_root, "spec", 0);
	walk(&policy_root, "policy", 0);
	ASSERT_STREQ(spec_type_name(SPEC_MAP), "object", "map is an object");
	cr_assert_null(spec_field_find(&spec_root, "nope"));
}

/* Every key of canonical @v is a table field, and every field that is
 * required or has a default is written. */
static void covers(const struct spec_field *f, const struct json_value *v, const char *path)
{
	if (f->type == SPEC_OBJECT) {
		cr_assert_eq(v->type, JSON_OBJECT, "%s", path);
		for (size_t i = 0; i < v->u.object.n; i++)
			cr_assert(spec_field_find(f, v->u.object.members[i].key), "%s.%s: not in the table", path,
				  v->u.object.members[i].key);
		for (size_t i = 0; i < f->n_fields; i++) {
			const struct json_value *m = json_get(v, f->fields[i].name);

			if (f->fields[i].required || f->fields[i].has_default)
				cr_assert(m, "%s.%s: missing from the canonical form", path, f->fields[i].name);
			if (m)
				covers(&f->fields[i], m, f->fields[i].name);
		}
	} else if (f->type == SPEC_ARRAY) {
		cr_assert_eq(v->type, JSON_ARRAY, "%s", path);
		for (size_t i = 0; i < v->u.array.n; i++)
			covers(f->items, v->u.array.items[i], path);
	}
}

static void check_file(const char *rel)
{
	const char *top = getenv("top_srcdir");
	_cleanup_free_ char *path = NULL, *text = NULL, *canon = NULL;
	struct flash_spec *spec = NULL;
	struct json_value *doc = NULL;
	size_t len;

	cr_assert(asprintf(&path, "%s/%s", top ? top : "..", rel) > 0);
	ASSERT_OK(util_read_file(path, 1 << 20, &text, &len), rel);
	ASSERT_OK(flash_spec_parse(text, len, NULL, &spec, NULL), rel);
	ASSERT_OK(flash_spec_to_json(spec, &canon, &len), rel);
	ASSERT_OK(json_parse(canon, len, NULL, &doc, NULL), rel);
	covers(&spec_root, doc, "spec");
	/* Optional fields without default appear exactly when set. */
	cr_assert_eq(json_get(doc, "gpu_type") != NULL, flash_spec_gpu_type(spec) != NULL);
	cr_assert_eq(json_get(doc, "autoscaling") != NULL, flash_spec_has_autoscaling(spec));
	json_free(doc);
	flash_spec_free(spec);
}

Test(spec_fields, canonical_form_writes_the_table)
{
	check_file("tests/data/spec/valid/08-limits.json");           /* gpu_type, autoscaling */
	check_file("tests/data/spec/valid/02-web-public-direct.json"); /* domains, autoscaling */
	check_file("tests/data/spec/valid/01-minimal.json");           /* defaults only */
}
