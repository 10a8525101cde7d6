/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the key set parser of <flash/auth.h>
 * (flash_auth_keyset_parse: a JWKS or a {"kid": "x"} map, as
 * flash-operator --keys reads it).  Properties:
 *  - a refused document leaves no set and says what is wrong;
 *  - an accepted one holds 1..FLASH_AUTH_KEYSET_MAX keys, and its JWKS
 *    (flash_auth_keyset_to_jwks) parses to a set with the same count,
 *    whose JWKS is the same text byte for byte.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <flash/auth.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flash_auth_keyset *ks = (struct flash_auth_keyset *)&ks, *again = NULL;
	char detail[256] = "", *j1 = NULL, *j2 = NULL;
	int r;

	r = flash_auth_keyset_parse((const char *)data, size, &ks, detail, sizeof(detail));
	if (r < 0) {
		/* *ret_keyset untouched on failure. */
		check(ks == (struct flash_auth_keyset *)&ks);
		check(r == -ENOMEM || detail[0] != '\0');
		return 0;
	}
	check(flash_auth_keyset_count(ks) >= 1 && flash_auth_keyset_count(ks) <= FLASH_AUTH_KEYSET_MAX);
	check(flash_auth_keyset_to_jwks(ks, &j1) == 0);
	check(flash_auth_keyset_parse(j1, strlen(j1), &again, detail, sizeof(detail)) == 0);
	check(flash_auth_keyset_count(again) == flash_auth_keyset_count(ks));
	check(flash_auth_keyset_to_jwks(again, &j2) == 0);
	check(strcmp(j1, j2) == 0);
	free(j1);
	free(j2);
	flash_auth_keyset_free(again);
	flash_auth_keyset_free(ks);
	return 0;
}
