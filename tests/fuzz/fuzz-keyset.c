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
	struct flash_diag *diag = NULL;
	char *j1 = NULL, *j2 = NULL;
	int r;

	if (flash_diag_new(&diag) < 0)
		return 0;
	r = flash_auth_keyset_parse((const char *)data, size, &ks, diag);
	if (r < 0) {
		/* *ret_keyset untouched on failure, and the diag says why. */
		check(ks == (struct flash_auth_keyset *)&ks);
		check(r == -ENOMEM || flash_diag_errors(diag) == 1);
		flash_diag_free(diag);
		return 0;
	}
	check(flash_diag_count(diag) == 0);
	check(flash_auth_keyset_count(ks) >= 1 && flash_auth_keyset_count(ks) <= FLASH_AUTH_KEYSET_MAX);
	check(flash_auth_keyset_to_jwks(ks, &j1) == 0);
	check(flash_auth_keyset_parse(j1, strlen(j1), &again, diag) == 0);
	check(flash_auth_keyset_count(again) == flash_auth_keyset_count(ks));
	check(flash_auth_keyset_to_jwks(again, &j2) == 0);
	check(strcmp(j1, j2) == 0);
	free(j1);
	free(j2);
	flash_auth_keyset_free(again);
	flash_auth_keyset_free(ks);
	flash_diag_free(diag);
	return 0;
}
