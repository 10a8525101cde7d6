/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A metering clock read from a file, for tests (private to operator/):
 * flash-operator --test-meter-clock FILE.  FILE holds one UTC time as
 * RFC 3339 ("2026-12-02T12:00:00Z"); every reading of the clock reads the
 * file again, so a test moves the metering week (usage, weekly limits,
 * suspension and its Monday 00:00 UTC lift) by rewriting it, and never
 * waits a week.  The clock stands still between rewrites.  A reading that
 * fails (file gone, torn or not a time) gives the last good time.  Tokens
 * and timestamps keep the real clock (provider.h: meter_now).
 */
#ifndef FLASH_OPERATOR_METER_CLOCK_H
#define FLASH_OPERATOR_METER_CLOCK_H

#include <stddef.h>
#include <stdint.h>

struct op_meter_clock;

/* Reads @path once (it must hold a time now).  Returns 0, -ENOMEM, a
 * util_read_file() error or -EINVAL (not an RFC 3339 time), with @err
 * (@err_size bytes) saying what. */
int op_meter_clock_open(const char *path, struct op_meter_clock **ret, char *err, size_t err_size);
void op_meter_clock_free(struct op_meter_clock *c);

/* The clock's time in seconds since the epoch (a struct op_meter_clock as
 * @ctx): the file's, or the last good one.  Thread-safe. */
int64_t op_meter_clock_now(void *ctx);

#endif
