/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The flowsdn_maglev layout measured (root): kernel memory of one Maglev
 * table of M = 16381 slots as the BPF array flowsdn uses (one per service
 * in a hash of maps keyed by svc_id) beside a {svc_id, slot} hash (preallocated and
 * not), read from the maps' fdinfo memlock; and the cost of one slot
 * lookup from BPF (BPF_PROG_TEST_RUN, 256 lookups a run, 20000 runs a
 * round), both layouts and the bare loop, in alternating order, median
 * and p95 of 15 rounds, load average.  Prints figures; never fails on
 * time.  Usage: bench/maglev-map   (run from the build directory)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bench.h"

#define M 16381
#define ROUNDS 15

static long memlock(int fd)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "memlock:", 8))
			v = strtol(line + 8, NULL, 10);
	fclose(f);
	return v;
}

static int fill(int fd, int hash)
{
	for (__u32 i = 0; i < M; i++) {
		__u32 k[2] = { 42, i }, v = i + 1;

		if (bpf_map_update_elem(fd, hash ? (void *)k : (void *)&i, &v, BPF_ANY) < 0)
			return -errno;
	}
	return 0;
}

int main(void)
{
	static const char *const progs[] = { "floor_loop", "hash_lookup", "maglev_table_lookup" };
	LIBBPF_OPTS(bpf_map_create_opts, noprealloc, .map_flags = BPF_F_NO_PREALLOC);
	LIBBPF_OPTS(bpf_map_create_opts, inner, .map_flags = BPF_F_INNER_MAP);
	double ns[3][ROUNDS], load[3] = { 0 };
	struct bpf_object *obj;
	int hp, hn, arr, fd[3], svc = 42;
	unsigned char pkt[64] = { 0 };

	hp = bpf_map_create(BPF_MAP_TYPE_HASH, "slots_hp", 8, 4, M, NULL);
	hn = bpf_map_create(BPF_MAP_TYPE_HASH, "slots_hn", 8, 4, M, &noprealloc);
	arr = bpf_map_create(BPF_MAP_TYPE_ARRAY, "slots_arr", 4, 4, M, &inner);
	if (hp < 0 || hn < 0 || arr < 0 || fill(hp, 1) || fill(hn, 1) || fill(arr, 0)) {
		fprintf(stderr, "maps: %s (run as root)\n", strerror(errno));
		return 1;
	}
	obj = bpf_object__open_file("bench/maglev-map.bpf.o", NULL);
	if (obj) {
		struct bpf_map *map;

		/* The datapath's maps, but private: pinned nowhere. */
		bpf_object__for_each_map(map, obj)
			bpf_map__set_pin_path(map, NULL);
	}
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "bench/maglev-map.bpf.o: %s (run from the build directory, as root)\n", strerror(errno));
		return 1;
	}
	if (fill(bpf_object__find_map_fd_by_name(obj, "slots_hash"), 1) ||
	    bpf_map_update_elem(bpf_object__find_map_fd_by_name(obj, "flowsdn_maglev"), &svc, &arr, BPF_ANY)) {
		fprintf(stderr, "fill: %s\n", strerror(errno));
		return 1;
	}
	for (int p = 0; p < 3; p++)
		fd[p] = bpf_program__fd(bpf_object__find_program_by_name(obj, progs[p]));
	getloadavg(load, 3);
	printf("Maglev table layout, M = %u; load average %.2f %.2f %.2f\n", M, load[0], load[1], load[2]);
	printf("memory: array %ld B (%.1f B/slot), hash prealloc %ld B (%.1f B/slot), hash no-prealloc %ld B (%.1f B/slot)\n",
	       memlock(arr), memlock(arr) / (double)M, memlock(hp), memlock(hp) / (double)M, memlock(hn),
	       memlock(hn) / (double)M);
	for (int r = 0; r < ROUNDS; r++)
		for (int k = 0; k < 3; k++) {
			int p = (k + r) % 3; /* rotate which runs first */
			LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = pkt, .data_size_in = sizeof(pkt), .repeat = 20000);

			if (bpf_prog_test_run_opts(fd[p], &t)) {
				fprintf(stderr, "test run: %s\n", strerror(errno));
				return 1;
			}
			ns[p][r] = t.duration / 256.0;
		}
	for (int p = 0; p < 3; p++)
		qsort(ns[p], ROUNDS, sizeof(double), bench_cmp_double);
	for (int p = 1; p < 3; p++)
		printf("%-22s %6.2f ns/lookup (p95 %6.2f) above the bare loop's %5.2f ns\n", progs[p],
		       ns[p][ROUNDS / 2] - ns[0][ROUNDS / 2], ns[p][ROUNDS * 95 / 100] - ns[0][ROUNDS / 2], ns[0][ROUNDS / 2]);
	getloadavg(load, 3);
	printf("load average at the end %.2f %.2f %.2f\n", load[0], load[1], load[2]);
	bpf_object__close(obj);
	return 0;
}
