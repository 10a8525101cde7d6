/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sodium.h>

#include "id-hash.h"

int id_hash_parts(const char *const *parts, size_t n, unsigned char *out, size_t out_len)
{
	crypto_generichash_state st;

	if ((!parts && n) || !out || out_len < crypto_generichash_BYTES_MIN || out_len > crypto_generichash_BYTES_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!parts[i])
			return -EINVAL;
	if (sodium_init() < 0)
		return -ENOMEM;
	crypto_generichash_init(&st, NULL, 0, out_len);
	for (size_t i = 0; i < n; i++) {
		uint64_t len = strlen(parts[i]);
		unsigned char le[8];

		for (int b = 0; b < 8; b++)
			le[b] = (unsigned char)(len >> (8 * b));
		crypto_generichash_update(&st, le, sizeof(le));
		crypto_generichash_update(&st, (const unsigned char *)parts[i], len);
	}
	crypto_generichash_final(&st, out, out_len);
	return 0;
}
