/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * IPAM call latency, the cost on the CNI ADD/DEL path: each call locks,
 * re-reads the state, applies and rewrites it with fsync.  Prints the
 * median and 99th percentile of allocate and release with 0, 250 and 4000
 * allocations already held, in a fresh directory under $TMPDIR (default
 * /tmp; fsync cost depends on that file system).  Figures only.
 * Usage: bench/ipam [CALLS]   (default 200 per size)
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <flowsdn/ipam.h>
#include "bench.h"

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int run(const char *top, int held, int calls)
{
	char dir[512], owner[32];
	struct flowsdn_prefix pools[2];
	struct flowsdn_ipam *ipam = NULL;
	double *ta = calloc((size_t)calls, sizeof(double)), *tr = calloc((size_t)calls, sizeof(double));
	int r = 1;

	snprintf(dir, sizeof(dir), "%s/held-%d", top, held);
	if (!ta || !tr || flowsdn_prefix_parse("10.30.0.0/16", 12, NULL, &pools[0]) < 0 ||
	    flowsdn_prefix_parse("fd00:30::/112", 13, NULL, &pools[1]) < 0 ||
	    flowsdn_ipam_new(dir, pools, 2, NULL, &ipam, NULL) < 0)
		goto out;
	for (int i = 0; i < held; i++) {
		snprintf(owner, sizeof(owner), "held%d", i);
		if (flowsdn_ipam_allocate(ipam, owner, "eth0", NULL, NULL, NULL) < 0)
			goto out;
	}
	for (int i = 0; i < calls; i++) {
		double t0;

		snprintf(owner, sizeof(owner), "bench%d", i);
		t0 = bench_now_s();
		if (flowsdn_ipam_allocate(ipam, owner, "eth0", NULL, NULL, NULL) < 0)
			goto out;
		ta[i] = bench_now_s() - t0;
		t0 = bench_now_s();
		if (flowsdn_ipam_release(ipam, owner, "eth0", NULL) != 2)
			goto out;
		tr[i] = bench_now_s() - t0;
	}
	qsort(ta, (size_t)calls, sizeof(double), bench_cmp_double);
	qsort(tr, (size_t)calls, sizeof(double), bench_cmp_double);
	printf("held %-5d allocate median %7.3f ms p99 %7.3f ms   release median %7.3f ms p99 %7.3f ms\n", held,
	       ta[calls / 2] * 1e3, ta[calls * 99 / 100] * 1e3, tr[calls / 2] * 1e3, tr[calls * 99 / 100] * 1e3);
	r = 0;
out:
	if (r)
		fprintf(stderr, "held %d: %s\n", held, flowsdn_strerror(r));
	flowsdn_ipam_free(ipam);
	free(ta);
	free(tr);
	return r;
}

int main(int argc, char **argv)
{
	const char *t = getenv("TMPDIR");
	char top[256];
	int calls = argc > 1 ? atoi(argv[1]) : 200, fail = 0;

	if (calls < 10 || calls > 100000) {
		fprintf(stderr, "usage: %s [CALLS 10..100000]\n", argv[0]);
		return 2;
	}
	snprintf(top, sizeof(top), "%s/flowsdn-bench-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 1;
	}
	printf("IPAM call latency in %s (IPv4 + IPv6 per owner), %d calls each\n", top, calls);
	fail |= run(top, 0, calls);
	fail |= run(top, 250, calls);
	fail |= run(top, 4000, calls);
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return fail;
}
