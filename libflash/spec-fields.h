/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The field table of the Flash spec (and of the owner quota policy): the
 * ONE description of every field — name, JSON type, required or optional,
 * default, bounds, pattern, enum values, item limits, description, nested
 * tables.  Private to libflash.
 *
 * Everything JSON Schema can say lives here and is enforced by
 * spec_schema_check() (libflash/spec-schema.c); the CRD's
 * openAPIV3Schema is generated from the same table (libflash rendering),
 * so a changed rule changes both.  The semantic rules (uniqueness, CIDR
 * classes, deny-wins, credential warnings, cross-field rules) are code in
 * libflash/spec.c on top of it; fields with such rules carry a
 * spec_format naming the extra check so generators can document it.
 *
 * Conventions a generator can rely on:
 *  - SPEC_OBJECT tables list fields in bytewise-sorted order and are
 *    closed (additionalProperties: false).
 *  - SPEC_MAP is an object with free keys: @key describes the keys (a
 *    SPEC_STRING with max_length/pattern), @items the values;
 *    max_items bounds the number of properties.
 *  - Patterns are anchored ("^...$") and use only the common subset of
 *    POSIX ERE and ECMA-262: bracket classes without escapes, (), |, ?,
 *    *, +, {m,n}, and \. for a literal dot.
 *  - Bounds are inclusive.  Lengths are in bytes (UTF-8).
 */
#ifndef FLASH_SPEC_FIELDS_H
#define FLASH_SPEC_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum spec_type {
	SPEC_STRING,
	SPEC_INTEGER,   /* JSON integer: no fraction, exponent or "-0" */
	SPEC_BOOLEAN,
	SPEC_OBJECT,    /* closed object with the fields of @fields */
	SPEC_ARRAY,     /* items described by @items */
	SPEC_MAP,       /* object with free keys (@key) and values (@items) */
};

/* Checks done in code after the schema rules. */
enum spec_format {
	SPEC_FMT_NONE = 0,
	SPEC_FMT_OCI_REFERENCE, /* distribution reference: name[:tag][@sha256:hex] */
	SPEC_FMT_CIDR,          /* IPv4/IPv6 address or CIDR (flowsdn_prefix_parse) */
	SPEC_FMT_DNS_LABEL,     /* DNS-1123 label: names_dns_label_valid() instead of
				 * the pattern, which is kept for the CRD schema */
};

struct spec_field {
	const char *name;             /* JSON key; NULL for item/key descriptors */
	enum spec_type type;
	bool required;
	const char *description;      /* one sentence */

	/* SPEC_INTEGER: inclusive bounds */
	int64_t minimum;
	int64_t maximum;

	/* SPEC_STRING */
	size_t min_length;
	size_t max_length;            /* always set for strings */
	const char *pattern;          /* NULL: none */
	const char *pattern_hint;     /* the pattern in words, for messages */
	const char *const *enum_values; /* NULL-terminated; NULL: any */
	enum spec_format format;

	/* SPEC_ARRAY and SPEC_MAP */
	size_t max_items;
	bool unique_items;            /* SPEC_ARRAY: items must be distinct */
	const struct spec_field *items;
	const struct spec_field *key; /* SPEC_MAP only */

	/* SPEC_OBJECT */
	const struct spec_field *fields;
	size_t n_fields;

	/* Defaults of optional fields (written out by the canonical form).
	 * Optional arrays, maps and objects default to empty / all-defaults
	 * when has_default is set. */
	bool has_default;
	int64_t default_int;
	bool default_bool;
	const char *default_string;
};

/* The spec document (SPEC_OBJECT). */
extern const struct spec_field spec_root;
/* The owner quota policy document (SPEC_OBJECT). */
extern const struct spec_field policy_root;

/* The field @name of the object descriptor @obj, NULL when absent. */
const struct spec_field *spec_field_find(const struct spec_field *obj, const char *name);

/* Type name as JSON Schema spells it ("string", "integer", "boolean",
 * "object", "array"; "object" for SPEC_MAP). */
const char *spec_type_name(enum spec_type type);

#endif
