/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private to the image module: the content store (image-store.c). */
#ifndef FLASH_IMAGE_STORE_H
#define FLASH_IMAGE_STORE_H

#include "image-internal.h"

/* Fetches blob @d into @sink (bounded to d->size); 0 or an error with @why. */
typedef int (*image_fetch_fn)(void *ctx, const struct image_desc *d, struct image_sink *sink, char *why,
			      size_t why_size);

/* Opens (creating) the store at @path with its blobs/sha256 and locks
 * directories. */
int image_store_open(const char *path, int *ret_fd);

/* Makes sure blob @d is in the store: fetched once under its lock, size and
 * digest checked, fsync'ed and renamed into place; a wrong blob is removed. */
int image_store_ensure(int store_fd, const struct image_desc *d, image_fetch_fn fetch, void *ctx,
		       uint64_t deadline, char *why, size_t why_size);

/* Reads blob @d (at most @max bytes) into a new NUL-terminated buffer. */
int image_store_read(int store_fd, const struct image_desc *d, size_t max, char **ret, size_t *ret_len);

#endif
