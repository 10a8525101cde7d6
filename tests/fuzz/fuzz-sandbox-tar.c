/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the tar checker of sandbox imports
 * (flash_sandbox_tar_feed/finish of <flash/sandbox.h>, what
 * flash_sandbox_import() runs every archive through).  Properties:
 *  - what the checker passes on is always a prefix of its input (bytes
 *    are never altered, reordered or invented);
 *  - the verdict and the bytes passed on do not depend on how the stream
 *    is cut into chunks (the whole input, then chunks whose sizes the
 *    input's first byte picks);
 *  - a refusal is -FLASH_E_SANDBOX_ARCHIVE with exactly one error in the
 *    diag; an acceptance leaves the diag empty.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <flash/diag.h>
#include <flash/sandbox.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

struct out {
	const uint8_t *input;
	size_t input_len, len;
};

/* Compares against the input instead of storing: a prefix of it. */
static int sink(const void *buf, size_t len, void *userdata)
{
	struct out *o = userdata;

	check(o->len + len <= o->input_len);
	check(memcmp(o->input + o->len, buf, len) == 0);
	o->len += len;
	return 0;
}

static int run(const uint8_t *data, size_t size, size_t chunk, struct out *o)
{
	struct flash_sandbox_tar *t = NULL;
	struct flash_diag *diag = NULL;
	size_t off = 0;
	int r = 0;

	if (flash_sandbox_tar_new(&t) < 0 || flash_diag_new(&diag) < 0)
		abort();
	while (off < size && r == 0) {
		size_t n = chunk && chunk < size - off ? chunk : size - off;

		r = flash_sandbox_tar_feed(t, data + off, n, sink, o, diag);
		off += n;
	}
	if (r == 0)
		r = flash_sandbox_tar_finish(t, diag);
	if (r == 0)
		check(flash_diag_count(diag) == 0);
	else
		check(r == -ENOMEM || (r == -FLASH_E_SANDBOX_ARCHIVE && flash_diag_errors(diag) == 1));
	flash_diag_free(diag);
	flash_sandbox_tar_free(t);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct out whole = { data, size, 0 }, cut = { data, size, 0 };
	size_t chunk = size ? (size_t)data[0] % 97 + 1 : 1;
	int r1, r2;

	r1 = run(data, size, 0, &whole);
	r2 = run(data, size, chunk, &cut);
	if (r1 == -ENOMEM || r2 == -ENOMEM)
		return 0;
	check(r1 == r2);
	check(whole.len == cut.len);
	return 0;
}
