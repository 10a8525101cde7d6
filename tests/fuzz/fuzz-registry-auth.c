/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for flash-operator's registry credentials file
 * (op_registry_auth_parse(), what op_registry_auth_load() calls on
 * registry.credentialsFile of flash-operator.conf(5)).  Properties:
 *  - a refused file is -EINVAL with a reason, and leaves no credential;
 *  - an accepted one has one credential per registry key, each a
 *    host[:port] without '/', '@' or blanks, with its username and
 *    password as strings.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-helpers.h"
#include "registry-auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct op_registry_auth a = { 0 };
	char err[512] = "";
	int r = op_registry_auth_parse((const char *)data, size, &a, err, sizeof(err));

	if (r == -ENOMEM) {
		op_registry_auth_clear(&a);
		return 0;
	}
	if (r < 0) {
		fuzz_check(r == -EINVAL && err[0] && a.n == 0 && !a.v);
		return 0;
	}
	fuzz_check(r == 0 && (a.n == 0 || a.v));
	for (size_t i = 0; i < a.n; i++) {
		const struct flash_image_credential *c = &a.v[i];

		fuzz_check(c->registry && c->username && c->password);
		fuzz_check(c->registry[0] && strlen(c->registry) <= OP_REGISTRY_NAME_MAX &&
		      !strpbrk(c->registry, "/@ \t\r\n"));
		for (size_t k = 0; k < i; k++)
			fuzz_check(strcmp(a.v[k].registry, c->registry) != 0);
	}
	op_registry_auth_clear(&a);
	return 0;
}
