/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The metering clock read from a file, for tests (meter-clock.h).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/meter.h>

#include "util.h"
#include "meter-clock.h"

/* An RFC 3339 time and a newline fit in far less. */
#define CLOCK_FILE_MAX 128

struct op_meter_clock {
	char *path;
	pthread_mutex_t lock;
	int64_t last; /* the last good reading */
};

/* The file's time, or a negative errno (-EINVAL: not a time). */
static int read_time(const char *path, int64_t *ret_t)
{
	_cleanup_free_ char *text = NULL;
	size_t n = 0;
	int r = util_read_file(path, CLOCK_FILE_MAX, &text, &n);

	if (r < 0)
		return r;
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r'))
		text[--n] = '\0';
	return flash_meter_parse_time(text, ret_t) < 0 ? -EINVAL : 0;
}

int op_meter_clock_open(const char *path, struct op_meter_clock **ret, char *err, size_t err_size)
{
	struct op_meter_clock *c;
	int64_t t = 0;
	int r;

	if (!path || !ret)
		return -EINVAL;
	r = read_time(path, &t);
	if (r < 0) {
		snprintf(err, err_size, "%s: %s", path,
			 r == -EINVAL ? "not a UTC time as RFC 3339 (e.g. 2026-12-02T12:00:00Z)" : util_read_strerror(r));
		return r;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		snprintf(err, err_size, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->last = t;
	*ret = c;
	return 0;
}

void op_meter_clock_free(struct op_meter_clock *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->path);
	free(c);
}

int64_t op_meter_clock_now(void *ctx)
{
	struct op_meter_clock *c = ctx;
	int64_t t = 0, out;

	bool ok = read_time(c->path, &t) == 0;

	pthread_mutex_lock(&c->lock);
	if (ok)
		c->last = t;
	out = c->last;
	pthread_mutex_unlock(&c->lock);
	return out;
}
