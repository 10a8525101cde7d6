/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The answers of `get` kept between requests (private to operator/): a
 * small direct-mapped table of rendered service bodies, each tagged with
 * the store's change count when it was read (op_store_changes()).  An
 * entry is used only while the store is unchanged since, so any write —
 * by the provider, the runtime or anything else going through the store —
 * retires every entry at once.  The entry keeps the service's
 * organization and project: the caller still decides visibility.
 *
 * Not locked: the caller serializes (the provider's lock).
 */
#ifndef FLASH_OPERATOR_GET_CACHE_H
#define FLASH_OPERATOR_GET_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OP_GET_CACHE_SLOTS 64

struct op_get_cache;

/* Returns 0, -ENOMEM. */
int op_get_cache_new(struct op_get_cache **ret);
void op_get_cache_free(struct op_get_cache *c);

/* What a hit gives; valid until the next op_get_cache_put(). */
struct op_get_hit {
	const char *org, *project;
	const char *body;
	size_t body_len;
};

/* The entry of @id read at @changes, if there is one. */
bool op_get_cache_find(const struct op_get_cache *c, const char *id, uint64_t changes, struct op_get_hit *ret);
/* Keeps the answer of @id (copied) read at @changes, replacing what its
 * slot held.  Returns 0 or -ENOMEM (the slot is then empty). */
int op_get_cache_put(struct op_get_cache *c, const char *id, uint64_t changes, const char *org, const char *project,
		     const char *body, size_t body_len);

#endif
