/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the Status a kubelet writes on the error channel
 * of pods/exec (k8s_exec_status_parse(), common/k8s-exec.c), the one
 * piece of the exec stream that is parsed rather than passed on.
 * Properties:
 *  - an exit status comes back only in 0..255, 0 only for "Success" and
 *    a nonzero one only from a NonZeroExitCode Failure;
 *  - a refusal is -EBADMSG, -ENOMEM, -EMSGSIZE or the negative errno of
 *    a Failure, never a positive value;
 *  - the same input parses to the same outcome twice.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "k8s-exec.h"
#include "k8s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct k8s_status st = { 0 };
	int code = -1, code2 = -1, r, r2;

	r = k8s_exec_status_parse(text, size, &code, &st);
	k8s_status_clear(&st);
	r2 = k8s_exec_status_parse(text, size, &code2, NULL);
	check(r == r2);
	check(r <= 0);
	if (r == 0) {
		check(code >= 0 && code <= 255 && code == code2);
		if (code == 0)
			check(memmem(data, size, "Success", 7) != NULL || memmem(data, size, "NonZeroExitCode", 15) != NULL);
		else
			check(memmem(data, size, "NonZeroExitCode", 15) != NULL);
	}
	return 0;
}
