/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ids derived from names, written once: the BLAKE2b digest of a list of
 * strings, each whole and preceded by its length (64-bit little-endian),
 * so that no two different lists hash alike however long a part is.
 * libflash's service id (flash_client_service_id()) and the agent's
 * service id of a Kubernetes Service port (agent_k8s_service_id()) are
 * this digest of their parts, the first part naming the derivation and
 * its version.  Private; linked into libflash and the agent (it needs
 * libsodium, which libcommon does not link).
 */
#ifndef FLASH_COMMON_ID_HASH_H
#define FLASH_COMMON_ID_HASH_H

#include <stddef.h>

/* The digest of @parts[0..@n) into @out (@out_len 16..64 bytes): 0, or
 * -EINVAL (a NULL part, a length out of range) or -ENOMEM (libsodium
 * could not start). */
int id_hash_parts(const char *const *parts, size_t n, unsigned char *out, size_t out_len);

#endif
