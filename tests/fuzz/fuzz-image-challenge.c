/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the registry's WWW-Authenticate challenge parser
 * (libflash/image-parse.c): the input is one header value.  Invariants
 * checked on success: a known scheme, a NUL-terminated realm (non-empty for
 * Bearer) and parameters without control characters; on failure a reason.
 * Crashes, sanitizer reports and broken invariants are findings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void no_controls(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (n == size)
		abort(); /* not NUL-terminated within its buffer */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image_challenge c;
	char why[256] = "";
	int rc = image_challenge_parse((const char *)data, size, &c, why, sizeof(why));

	if (rc == 0) {
		if (c.scheme != IMAGE_AUTH_BASIC && c.scheme != IMAGE_AUTH_BEARER)
			abort();
		no_controls(c.realm, sizeof(c.realm));
		no_controls(c.service, sizeof(c.service));
		no_controls(c.scope, sizeof(c.scope));
		no_controls(c.error, sizeof(c.error));
		if (c.scheme == IMAGE_AUTH_BEARER && c.realm[0] == '\0')
			abort();
	} else if (rc != -FLASH_E_IMAGE_CHALLENGE && rc != -FLASH_E_IMAGE_UNAUTHORIZED) {
		abort();
	} else if (why[0] == '\0') {
		abort();
	}
	return 0;
}
