/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Maglev table build time: flowsdn_maglev_build() beside the paper's
 * pseudocode as production balancers write it (bench/maglev-baseline.c:
 * next[] per backend, slots computed on the fly, no matrix), in the same
 * run, on the same backends, single-threaded.  Both sides hash the keys
 * (the same SipHash-2-4); ours also sorts them and computes exact shares.
 * Repetitions alternate which side runs first; each line gives the median
 * and p95 of both and the ratio of the medians beside the goal (0.55x).
 * With equal weights both must build the same table, which is checked.
 * Prints figures; never fails on time (exit 1 only when the tables
 * differ or a build fails).
 *
 * Usage: bench/maglev [REPETITIONS]   (default 41, 5..1001)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <flowsdn/maglev.h>

#include "maglev-baseline.h"
#include "bench.h"

#define GOAL 0.55

/* Nearest-rank percentile of v[0..n-1] (sorted here). */
static double rank(double *v, int n, double q)
{
	int k = (int)(q * n + 0.999999);

	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	if (k < 1)
		k = 1;
	return v[(k > n ? n : k) - 1];
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int time_ours(const struct flowsdn_maglev_backend *be, size_t n, uint32_t m, uint32_t *t, double *ret)
{
	double t0 = bench_now_s();

	if (flowsdn_maglev_build(be, n, m, NULL, t) < 0)
		return -1;
	*ret = bench_now_s() - t0;
	return 0;
}

static int time_base(const struct baseline_backend *bb, size_t n, uint32_t m, uint32_t *t, double *ret)
{
	double t0 = bench_now_s();

	if (baseline_maglev_build(bb, n, m, FLOWSDN_MAGLEV_DEFAULT_SEED, t) < 0)
		return -1;
	*ret = bench_now_s() - t0;
	return 0;
}

static int run(uint32_t m, size_t n, int reps, bool goal)
{
	struct flowsdn_maglev_backend *be = calloc(n, sizeof(*be));
	struct baseline_backend *bb = calloc(n, sizeof(*bb));
	char (*keys)[32] = calloc(n, sizeof(*keys));
	uint32_t *ours = malloc(m * sizeof(*ours)), *base = malloc(m * sizeof(*base));
	double *t_ours = calloc((size_t)reps, sizeof(double)), *t_base = calloc((size_t)reps, sizeof(double));
	double mo, mb, po, pb, dummy;
	bool same;
	int r = 1;

	if (!be || !bb || !keys || !ours || !base || !t_ours || !t_base)
		goto out;
	for (size_t i = 0; i < n; i++) {
		/* Zero-padded: sorted key order is index order, so our ids
		 * (= indexes) match the baseline's indexes. */
		snprintf(keys[i], sizeof(keys[i]), "10.%03zu.%03zu.%03zu:8080", i / 65536, i / 256 % 256, i % 256);
		be[i] = (struct flowsdn_maglev_backend){ .key = keys[i], .key_len = strlen(keys[i]), .weight = 1, .id = (uint32_t)i };
		bb[i] = (struct baseline_backend){ .key = keys[i], .key_len = strlen(keys[i]) };
	}
	/* Untimed first builds: page in the tables and the allocator. */
	if (time_ours(be, n, m, ours, &dummy) < 0 || time_base(bb, n, m, base, &dummy) < 0) {
		fprintf(stderr, "M=%u N=%zu: build failed\n", m, n);
		goto out;
	}
	same = memcmp(ours, base, m * sizeof(*ours)) == 0;
	for (int k = 0; k < reps; k++) {
		int e = k % 2 ? time_base(bb, n, m, base, &t_base[k]) || time_ours(be, n, m, ours, &t_ours[k])
			      : time_ours(be, n, m, ours, &t_ours[k]) || time_base(bb, n, m, base, &t_base[k]);

		if (e) {
			fprintf(stderr, "M=%u N=%zu: build failed\n", m, n);
			goto out;
		}
	}
	mo = median(t_ours, reps);
	mb = median(t_base, reps);
	po = rank(t_ours, reps, 0.95);
	pb = rank(t_base, reps, 0.95);
	printf("M=%-6u N=%-4zu flowsdn %7.3f ms (p95 %7.3f)  baseline %7.3f ms (p95 %7.3f)  tables %-9s ratio %.2fx baseline%s\n",
	       m, n, mo * 1e3, po * 1e3, mb * 1e3, pb * 1e3, same ? "identical" : "DIFFER", mo / mb,
	       goal ? (mo / mb <= GOAL ? "  (goal <= 0.55x: met)" : "  (goal <= 0.55x: NOT met)") : "  (no goal)");
	r = same ? 0 : 1;
out:
	free(be);
	free(bb);
	free(keys);
	free(ours);
	free(base);
	free(t_ours);
	free(t_base);
	return r;
}

int main(int argc, char **argv)
{
	static const struct { uint32_t m; size_t n; bool goal; } cases[] = {
		{ 65537, 10, true }, { 65537, 100, true }, { 65537, 1000, true },
		{ 16381, 1000, true }, { 131071, 1000, true }, { 655373, 1000, false },
	};
	int reps = argc > 1 ? atoi(argv[1]) : 41;
	double load[3] = { 0 };
	int fail = 0;

	if (reps < 5 || reps > 1001) {
		fprintf(stderr, "usage: %s [REPETITIONS 5..1001]\n", argv[0]);
		return 2;
	}
	getloadavg(load, 3);
	printf("Maglev build time, single thread, equal weights, hashing included on both sides;\n"
	       "%d repetitions alternating which side runs first; load average %.2f %.2f %.2f\n", reps, load[0],
	       load[1], load[2]);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		fail |= run(cases[i].m, cases[i].n, reps, cases[i].goal);
	getloadavg(load, 3);
	printf("load average at the end %.2f %.2f %.2f\n", load[0], load[1], load[2]);
	return fail;
}
