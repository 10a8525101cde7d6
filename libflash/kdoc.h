/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small mutable document tree for the Kubernetes objects libflash writes,
 * and its two printers (private to libflash).
 *
 * Objects keep their keys in insertion order, so a renderer that adds keys
 * in a fixed order prints byte-identical JSON and YAML every time.
 *
 * Errors are sticky, to keep rendering code linear: every constructor
 * returns NULL when out of memory, kdoc_set()/kdoc_append() take ownership
 * of the child even on failure and mark the parent failed when the child is
 * NULL (or when they cannot grow), and kdoc_failed() reports whether any
 * node of a tree failed.  A NULL parent is accepted (the child is freed).
 */
#ifndef FLASH_KDOC_H
#define FLASH_KDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kdoc;

struct kdoc *kdoc_object(void);
struct kdoc *kdoc_array(void);
struct kdoc *kdoc_string(const char *s);       /* copies @s; NULL @s gives NULL */
struct kdoc *kdoc_stringf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct kdoc *kdoc_int(int64_t v);
struct kdoc *kdoc_bool(bool v);
void kdoc_free(struct kdoc *d);
/* A node that prints as @target without owning it: @target must outlive
 * the tree holding the reference. */
struct kdoc *kdoc_borrow(const struct kdoc *target);
/* The text of a string node, NULL for other nodes. */
const char *kdoc_string_value(const struct kdoc *d);

/* Adds @key -> @val at the end of object @obj (a key already present is
 * replaced in place).  Takes @val in every case.  Returns @val (NULL on
 * failure) so callers can keep filling a child. */
struct kdoc *kdoc_set(struct kdoc *obj, const char *key, struct kdoc *val);
struct kdoc *kdoc_append(struct kdoc *arr, struct kdoc *val);

/* Shorthands: kdoc_set(obj, key, kdoc_string(s)) and so on. */
struct kdoc *kdoc_set_str(struct kdoc *obj, const char *key, const char *s);
struct kdoc *kdoc_set_int(struct kdoc *obj, const char *key, int64_t v);
struct kdoc *kdoc_set_bool(struct kdoc *obj, const char *key, bool v);
struct kdoc *kdoc_set_obj(struct kdoc *obj, const char *key);   /* new empty object */
struct kdoc *kdoc_set_arr(struct kdoc *obj, const char *key);   /* new empty array */
struct kdoc *kdoc_append_obj(struct kdoc *arr);
struct kdoc *kdoc_append_str(struct kdoc *arr, const char *s);

/* Member @key of object @obj, NULL when absent. */
struct kdoc *kdoc_get(const struct kdoc *obj, const char *key);
size_t kdoc_len(const struct kdoc *d);  /* members or items; 0 for scalars */
bool kdoc_is_object(const struct kdoc *d);

/* True when some node of the tree could not be built (out of memory). */
bool kdoc_failed(const struct kdoc *d);

/* Prints @d as JSON through the one emitter (common/json.h: two-space
 * indentation, {} and [] when empty, a final newline).  Returns 0 and a
 * NUL-terminated *ret_text (*ret_len without the NUL), -ENOMEM, or -EINVAL
 * for a failed tree or a string that is not UTF-8. */
int kdoc_to_json(const struct kdoc *d, char **ret_text, size_t *ret_len);

/* Prints the @n trees as one YAML stream of @n documents (libyaml emitter,
 * block style; strings that a YAML 1.1 or 1.2 reader would take for another
 * type are quoted).  Same returns as kdoc_to_json(). */
int kdoc_to_yaml(struct kdoc *const *docs, size_t n, char **ret_text, size_t *ret_len);

#endif
