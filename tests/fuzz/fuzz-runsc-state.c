/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for what `runsc state ID` prints, as flash-operator
 * reads it (op_runsc_state_parse(), operator/runtime-reap.c: the
 * single-node runtime adopting its replicas, the gVisor sandbox backend
 * checking its sessions).  The first byte is the size of the status
 * buffer (1..32); the rest is runsc's output.
 * Properties:
 *  - a refused output is -EBADMSG, -ENOBUFS or -ENOMEM and leaves the
 *    status and the pid untouched; -ENOBUFS only for a state that is
 *    accepted with room for it;
 *  - an accepted one gives a state runsc knows, NUL-terminated in the
 *    buffer (nothing past it), and a pid from 0 to INT32_MAX; the state and the pid, as
 *    runsc would write them, read back the same.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "fuzz-helpers.h"
#include "json.h"
#include "runtime-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool known(const char *s)
{
	static const char *const states[] = { "creating", "created", "running", "stopped", "paused" };

	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (!strcmp(s, states[i]))
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char status[33], again[33], *text = NULL;
	const char *json;
	size_t n, len, tlen = 0;
	struct json_writer *w;
	pid_t pid = -42, pid2 = -42;
	int r;

	if (size == 0)
		return 0;
	n = data[0] % 32 + 1;
	json = (const char *)data + 1;
	len = size - 1;
	memset(status, 'x', sizeof(status));
	r = op_runsc_state_parse(json, len, status, n, &pid);
	if (r < 0) {
		fuzz_check(r == -EBADMSG || r == -ENOBUFS || r == -ENOMEM);
		fuzz_check(pid == -42);
		for (size_t i = 0; i < sizeof(status); i++)
			fuzz_check(status[i] == 'x');
		if (r == -ENOBUFS) {
			fuzz_check(op_runsc_state_parse(json, len, again, sizeof(again), NULL) == 0);
			fuzz_check(strlen(again) >= n);
		}
		return 0;
	}
	fuzz_check(memchr(status, 0, n) != NULL);
	fuzz_check(known(status));
	fuzz_check(pid >= 0);
	for (size_t i = n; i < sizeof(status); i++)
		fuzz_check(status[i] == 'x'); /* nothing written past the buffer it was given */

	w = json_writer_new(0);
	if (!w)
		return 0;
	jw_object_open(w);
	jw_kv_string(w, "ociVersion", "1.0.2-dev");
	jw_kv_string(w, "status", status);
	jw_kv_int(w, "pid", pid ? pid : -1);
	jw_object_close(w);
	fuzz_check(json_writer_finish(w, &text, &tlen) == 0);
	fuzz_check(op_runsc_state_parse(text, tlen, again, sizeof(again), &pid2) == 0);
	fuzz_check(!strcmp(status, again) && pid == pid2);
	free(text);
	return 0;
}
