/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-operator's registry credentials file (flash-operator.conf(5),
 * registry.credentialsFile): one JSON object keyed by registry,
 *   {"registry.example:5000": {"username": "u", "password": "p"}, ...}
 * used for Basic authentication or for the Bearer token service, as the
 * registry's challenge asks.  The file must be a regular file of mode 0600
 * or 0400 owned by the operator's user (flash_file_read_secret()).
 */
#ifndef FLASH_OPERATOR_REGISTRY_AUTH_H
#define FLASH_OPERATOR_REGISTRY_AUTH_H

#include <stddef.h>
#include <flash/image.h>

/* Longest registry key ("host[:port]"). */
#define OP_REGISTRY_NAME_MAX 255

struct op_registry_auth {
	struct flash_image_credential *v;  /* strings owned, wiped by _clear() */
	size_t n;
};

/* Parses @len bytes of credentials JSON into *ret (cleared first).
 * Returns 0, -EINVAL with @err naming the key and the fault, -ENOMEM. */
int op_registry_auth_parse(const char *json, size_t len, struct op_registry_auth *ret, char *err,
			   size_t err_size);
/* Reads @path (mode-checked) and parses it; @err names the file. */
int op_registry_auth_load(const char *path, struct op_registry_auth *ret, char *err, size_t err_size);
/* Wipes and frees the credentials. */
void op_registry_auth_clear(struct op_registry_auth *a);

#endif
