/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the meter state flash-operator reads back at start
 * (flash_meter_from_json(), which flash_meter_load() calls on the file:
 * usage records, live services and their held observations).  The meter
 * has a reorder window, so that held observations are accepted.
 * Properties:
 *  - a refused document is one of the state errors with a diag error,
 *    and leaves the meter's state as it was (its JSON unchanged);
 *  - an accepted one round-trips: its JSON (flash_meter_to_json()) reads
 *    into a fresh meter, whose JSON is the same text byte for byte, with
 *    the same records.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/diag.h>
#include <flash/meter.h>

#include "fuzz-helpers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static struct flash_meter *meter(void)
{
	struct flash_meter_opts o = { .sz = sizeof(o), .reorder_window = 300 };
	struct flash_meter *m = NULL;

	fuzz_check(flash_meter_new(&o, &m) == 0);
	return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flash_meter *m = meter(), *again = NULL;
	struct flash_diag *diag = NULL;
	char *empty = NULL, *text = NULL, *text2 = NULL;
	size_t len = 0, len2 = 0;
	int r;

	fuzz_check(flash_diag_new(&diag) == 0);
	fuzz_check(flash_meter_to_json(m, &empty, NULL) == 0);
	r = flash_meter_from_json(m, (const char *)data, size, diag);
	if (r == -ENOMEM)
		goto out;
	if (r < 0) {
		fuzz_check(r == -FLASH_E_METER_STATE_SYNTAX || r == -FLASH_E_METER_STATE_INVALID ||
		      r == -FLASH_E_METER_STATE_INCONSISTENT);
		fuzz_check(flash_diag_errors(diag) > 0);
		fuzz_check(flash_meter_to_json(m, &text, &len) == 0);
		fuzz_check(!strcmp(text, empty));
		goto out;
	}
	fuzz_check(flash_meter_to_json(m, &text, &len) == 0);
	again = meter();
	flash_diag_reset(diag);
	r = flash_meter_from_json(again, text, len, diag);
	if (r < 0)
		fprintf(stderr, "the meter's own JSON is refused (%d):\n%s\n", r, text);
	fuzz_check(r == 0);
	fuzz_check(flash_meter_to_json(again, &text2, &len2) == 0);
	fuzz_check(len2 == len && !memcmp(text2, text, len));
	fuzz_check(flash_meter_record_count(again) == flash_meter_record_count(m));
out:
	free(empty);
	free(text);
	free(text2);
	flash_diag_free(diag);
	flash_meter_free(m);
	flash_meter_free(again);
	return 0;
}
