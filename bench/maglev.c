/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Maglev table build time: flowsdn_maglev_build() against the paper's
 * pseudocode with its N x M permutation matrix (bench/maglev-baseline.c),
 * in the same run, on the same backends.  Prints figures; never fails on
 * time.  Usage: bench/maglev [REPETITIONS]   (default 5; median reported)
 *
 * Our time includes hashing the keys and sorting the backends; the
 * baseline starts from the already computed offsets and skips.  With
 * equal weights both must produce the same table, which is checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <flowsdn/maglev.h>

#include "maglev-baseline.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int run(uint32_t m, size_t n, int reps)
{
	struct flowsdn_maglev_backend *be = calloc(n, sizeof(*be));
	char (*keys)[32] = calloc(n, sizeof(*keys));
	uint32_t *offset = calloc(n, sizeof(*offset)), *skip = calloc(n, sizeof(*skip));
	uint32_t *ours = malloc(m * sizeof(*ours)), *base = malloc(m * sizeof(*base));
	double t_ours[16], t_base[16], mo, mb;
	int r = 1;

	if (!be || !keys || !offset || !skip || !ours || !base)
		goto out;
	for (size_t i = 0; i < n; i++) {
		/* Zero-padded: sorted key order is index order. */
		snprintf(keys[i], sizeof(keys[i]), "10.%03zu.%03zu.%03zu:8080", i / 65536, i / 256 % 256, i % 256);
		be[i] = (struct flowsdn_maglev_backend){ .key = keys[i], .key_len = strlen(keys[i]), .weight = 1, .id = (uint32_t)i };
		if (flowsdn_maglev_permutation(keys[i], strlen(keys[i]), m, FLOWSDN_MAGLEV_DEFAULT_SEED, &offset[i], &skip[i]) < 0)
			goto out;
	}
	for (int k = 0; k < reps; k++) {
		double t0 = now();

		if (flowsdn_maglev_build(be, n, m, NULL, ours) < 0)
			goto out;
		t_ours[k] = now() - t0;
		t0 = now();
		if (baseline_maglev_build(offset, skip, n, m, base) < 0) {
			fprintf(stderr, "baseline: out of memory for %zu x %u\n", n, m);
			goto out;
		}
		t_base[k] = now() - t0;
	}
	mo = median(t_ours, reps);
	mb = median(t_base, reps);
	printf("M=%-7u N=%-5zu flowsdn %9.3f ms   baseline %9.3f ms   ratio %.3fx   tables %s\n", m, n,
	       mo * 1e3, mb * 1e3, mo / mb, memcmp(ours, base, m * sizeof(*ours)) ? "DIFFER" : "identical");
	r = 0;
out:
	free(be);
	free(keys);
	free(offset);
	free(skip);
	free(ours);
	free(base);
	return r;
}

int main(int argc, char **argv)
{
	static const struct { uint32_t m; size_t n; } cases[] = {
		{ 65537, 10 }, { 65537, 100 }, { 65537, 1000 },
		{ 16381, 1000 }, { 131071, 1000 }, { 655373, 1000 },
	};
	int reps = argc > 1 ? atoi(argv[1]) : 5;
	int fail = 0;

	if (reps < 1 || reps > 16) {
		fprintf(stderr, "usage: %s [REPETITIONS 1..16]\n", argv[0]);
		return 2;
	}
	printf("Maglev build time, median of %d runs (equal weights)\n", reps);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		fail |= run(cases[i].m, cases[i].n, reps);
	return fail;
}
