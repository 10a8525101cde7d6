/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the C benches share: a monotonic clock, the figures of a series
 * (median, p95, p99 by nearest rank), the load average beside them, and a
 * sink that only counts.  Figures only: nothing here passes or fails.
 */
#ifndef FLASH_BENCH_H
#define FLASH_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds, milliseconds and microseconds on CLOCK_MONOTONIC. */
static inline double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline double bench_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts the @n (> 0) milliseconds of @v in place, prints their median,
 * p95 and p99 on a line named @what and returns the median (v[n / 2]). */
static inline double bench_report(const char *what, double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	printf("%-40s median %7.1f ms  p95 %7.1f  p99 %7.1f  (n=%zu)\n", what, v[n / 2], v[(n * 95 + 99) / 100 - 1],
	       v[(n * 99 + 99) / 100 - 1], n);
	return v[n / 2];
}

/* The load average, @when ("before", "after") the timed part. */
static inline void bench_load(const char *when)
{
	double l[3];

	if (getloadavg(l, 3) == 3)
		printf("load average %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
}

/* A sink (flash_sandbox_sink_fn, flash_client_sink_fn) that adds the
 * length of what it gets to the size_t at @userdata. */
static inline int bench_count_sink(const void *buf, size_t len, void *userdata)
{
	(void)buf;
	*(size_t *)userdata += len;
	return 0;
}

#endif
