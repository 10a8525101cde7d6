/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Maglev tables in the datapath (flowsdn_maps_maglev_*, as root): the
 * embedded datapath is loaded into a bpffs of this test's own mount
 * namespace, tables are written through the diff API and read back, slots
 * the diff leaves alone are proven untouched (a marker written behind the
 * writer's back survives), and the lookup the BPF programs make
 * (maglev_lookup() of bpf/lib/maglev.h, run with BPF_PROG_TEST_RUN) keeps
 * flows on their backend when an unrelated backend leaves.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <flowsdn/datapath.h>
#include <flowsdn/maglev.h>
#include <flowsdn/maps.h>

#include "netns-helpers.h"

#define MARKER 0xdeadbeefu

static struct flowsdn_datapath *dp;
static struct flowsdn_maps *maps;
static char pin_dir[64];

static void setup(void)
{
	node_enter();
	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-maglev-XXXXXX");
	cr_assert(mkdtemp(pin_dir), "mkdtemp");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir);
	int r = flowsdn_datapath_open(&o, &dp);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	maps = flowsdn_datapath_maps(dp);
}

static void teardown(void)
{
	flowsdn_datapath_free(dp);
	dp = NULL;
	node_unpin(pin_dir);
}

TestSuite(maglev_map, .init = setup, .fini = teardown);

static char keys[1000][32];

/* n backends "10.2.x.y:80" with ids 1..n (0 is no backend), weight 1;
 * backend @skip (or none: n) is left out. */
static size_t make_backends(struct flowsdn_maglev_backend *be, size_t n, size_t skip)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (i == skip)
			continue;
		snprintf(keys[i], sizeof(keys[i]), "10.2.%zu.%zu:80", i / 256, i % 256);
		be[k++] = (struct flowsdn_maglev_backend){
			.key = keys[i], .key_len = strlen(keys[i]), .weight = 1, .id = (uint32_t)(i + 1),
		};
	}
	return k;
}

/* An fd on the inner table of @svc_id, straight from the pinned map. */
static int inner_fd(uint32_t svc_id)
{
	char path[128];
	__u32 id;
	int outer, fd;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, FLOWSDN_MAP_MAGLEV);
	outer = bpf_obj_get(path);
	cr_assert(outer >= 0, "open %s: %s", path, strerror(errno));
	cr_assert(bpf_map_lookup_elem(outer, &svc_id, &id) == 0, "service %u has a table: %s", svc_id, strerror(errno));
	fd = bpf_map_get_fd_by_id(id);
	cr_assert(fd >= 0, "table %u: %s", id, strerror(errno));
	close(outer);
	return fd;
}

Test(maglev_map, only_changed_slots_are_written)
{
	static struct flowsdn_maglev_backend be[10];
	static uint32_t a[16381], b[16381], got[16381];
	const uint32_t m = 16381;
	size_t n, written = 0, changed = 0, marked = 0;
	int fd;

	n = make_backends(be, 10, 10);
	ASSERT_OK(flowsdn_maglev_build(be, n, m, NULL, a), "build A");
	n = make_backends(be, 10, 3);
	ASSERT_OK(flowsdn_maglev_build(be, n, m, NULL, b), "build B (without backend 4)");

	ASSERT_OK(flowsdn_maps_maglev_write(maps, 7, NULL, a, m, &written), "write A");
	cr_assert_eq(written, m, "a new table writes every slot, wrote %zu", written);
	ASSERT_OK(flowsdn_maps_maglev_read(maps, 7, got, m), "read A");
	cr_assert(memcmp(got, a, sizeof(a)) == 0, "the map holds table A");

	/* Behind the writer's back: every slot A and B agree on gets a
	 * marker; a writer that touched it would overwrite the marker. */
	fd = inner_fd(7);
	for (uint32_t i = 0; i < m; i++) {
		if (a[i] != b[i]) {
			changed++;
			continue;
		}
		cr_assert(bpf_map_update_elem(fd, &i, &(uint32_t){ MARKER }, BPF_ANY) == 0, "mark slot %u", i);
		marked++;
	}
	cr_assert(changed > 0 && changed < m / 5, "removing one of 10 backends moved %zu of %u slots", changed, m);

	ASSERT_OK(flowsdn_maps_maglev_write(maps, 7, a, b, m, &written), "write B over A");
	cr_assert_eq(written, changed, "wrote %zu slots, the diff has %zu", written, changed);
	ASSERT_OK(flowsdn_maps_maglev_read(maps, 7, got, m), "read B");
	for (uint32_t i = 0; i < m; i++) {
		if (a[i] != b[i])
			cr_assert_eq(got[i], b[i], "changed slot %u holds %u, not B's %u", i, got[i], b[i]);
		else
			cr_assert_eq(got[i], MARKER, "unchanged slot %u was rewritten (%u)", i, got[i]);
	}
	cr_assert_eq(changed + marked, m);

	/* Nothing changed: nothing written, same table object. */
	ASSERT_OK(flowsdn_maps_maglev_write(maps, 7, b, b, m, &written), "write B over B");
	cr_assert_eq(written, 0, "an unchanged table wrote %zu slots", written);
	close(fd);
}

Test(maglev_map, new_size_switches_the_whole_table)
{
	static struct flowsdn_maglev_backend be[5];
	static uint32_t small[251], big[509], got[509];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), id_small;
	size_t n = make_backends(be, 5, 5), written = 0;
	int fd;

	ASSERT_OK(flowsdn_maglev_build(be, n, 251, NULL, small), "build 251");
	ASSERT_OK(flowsdn_maglev_build(be, n, 509, NULL, big), "build 509");
	ASSERT_OK(flowsdn_maps_maglev_write(maps, 1, NULL, small, 251, NULL), "write 251");
	fd = inner_fd(1);
	cr_assert(bpf_obj_get_info_by_fd(fd, &info, &len) == 0);
	id_small = info.id;
	cr_assert_eq(info.max_entries, 251);
	close(fd);

	/* An old table of another size: the new table is filled aside. */
	ASSERT_OK(flowsdn_maps_maglev_write(maps, 1, small, big, 509, &written), "write 509");
	cr_assert_eq(written, 509);
	ASSERT_ERR(flowsdn_maps_maglev_read(maps, 1, got, 251), -EMSGSIZE, "read at the old size");
	ASSERT_OK(flowsdn_maps_maglev_read(maps, 1, got, 509), "read 509");
	cr_assert(memcmp(got, big, sizeof(big)) == 0, "the map holds the 509-slot table");
	fd = inner_fd(1);
	memset(&info, 0, sizeof(info));
	cr_assert(bpf_obj_get_info_by_fd(fd, &info, &len) == 0);
	cr_assert_eq(info.max_entries, 509);
	cr_assert_neq(info.id, id_small, "a new size is a new table");
	close(fd);

	/* No old table but one in the map: a complete new table. */
	ASSERT_OK(flowsdn_maps_maglev_write(maps, 1, NULL, big, 509, &written), "rewrite 509");
	cr_assert_eq(written, 509);
}

Test(maglev_map, remove_and_bad_arguments)
{
	static struct flowsdn_maglev_backend be[3];
	static uint32_t t[251];
	size_t n = make_backends(be, 3, 3);

	ASSERT_OK(flowsdn_maglev_build(be, n, 251, NULL, t), "build");
	ASSERT_OK(flowsdn_maps_maglev_write(maps, UINT32_MAX, NULL, t, 251, NULL), "largest id");
	ASSERT_OK(flowsdn_maps_maglev_remove(maps, UINT32_MAX), "remove");
	ASSERT_ERR(flowsdn_maps_maglev_read(maps, UINT32_MAX, t, 251), -ENOENT, "read removed");
	ASSERT_ERR(flowsdn_maps_maglev_remove(maps, UINT32_MAX), -ENOENT, "remove twice");
	ASSERT_ERR(flowsdn_maps_maglev_read(maps, 9, t, 251), -ENOENT, "never written");
	ASSERT_ERR(flowsdn_maps_maglev_write(maps, 0, NULL, t, 251, NULL), -EINVAL, "svc id 0");
	/* svc ids are sparse (agent: service id * 8 + set): past the table count. */
	ASSERT_OK(flowsdn_maps_maglev_write(maps, FLOWSDN_MAX_MAGLEV_TABLES * 8u + 7, NULL, t, 251, NULL), "sparse id");
	ASSERT_OK(flowsdn_maps_maglev_remove(maps, FLOWSDN_MAX_MAGLEV_TABLES * 8u + 7), "remove sparse id");
	ASSERT_ERR(flowsdn_maps_maglev_write(maps, 2, NULL, t, 7, NULL), -FLOWSDN_E_MAGLEV_SIZE, "size 7");
	ASSERT_ERR(flowsdn_maps_maglev_write(maps, 2, NULL, NULL, 251, NULL), -EINVAL, "no table");
	ASSERT_ERR(flowsdn_maps_maglev_write(NULL, 2, NULL, t, 251, NULL), -EINVAL, "no maps");
	ASSERT_ERR(flowsdn_maps_maglev_remove(maps, 0), -EINVAL, "remove id 0");
	ASSERT_ERR(flowsdn_maps_maglev_read(maps, 2, NULL, 251), -EINVAL, "read into NULL");
}

/* maglev_lookup(svc_id, hash, m) as the datapath runs it. */
struct query {
	struct bpf_object *obj;
	int prog_fd;
};

static void query_open(struct query *q)
{
	const char *top = getenv("top_builddir") ? getenv("top_builddir") : ".";
	char path[4096];
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = pin_dir);

	snprintf(path, sizeof(path), "%s/tests/bpf/maglev-lookup.bpf.o", top);
	q->obj = bpf_object__open_file(path, &oo);
	cr_assert(q->obj, "open %s: %s", path, strerror(errno));
	/* The maps are the datapath's pinned ones (reused by name). */
	cr_assert(bpf_object__load(q->obj) == 0, "load %s: %s", path, strerror(errno));
	q->prog_fd = bpf_program__fd(bpf_object__find_program_by_name(q->obj, "maglev_query"));
	cr_assert(q->prog_fd >= 0);
}

static uint32_t query_run(struct query *q, uint32_t svc_id, uint32_t hash, uint32_t m)
{
	uint8_t pkt[ETH_HLEN + 12] = { 0 };
	uint32_t args[3] = { svc_id, hash, m };
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = pkt, .data_size_in = sizeof(pkt));

	memcpy(pkt + ETH_HLEN, args, sizeof(args));
	cr_assert(bpf_prog_test_run_opts(q->prog_fd, &t) == 0, "test run: %s", strerror(errno));
	return t.retval;
}

/* Pseudo-random flow hashes (a fixed xorshift sequence). */
static uint32_t next_hash(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * The paper's promise, through the map and the BPF lookup: N = 100
 * backends at M = 65537 (the paper's size; at M = 16381, M/N = 164, kept
 * backends lose about 1.3 % of their slots); backend 38 leaves.  Slots of kept backends stay
 * (>= 99 %), flows on kept backends keep their backend (>= 99 % of
 * 2000 flows), flows of the leaver land on some other backend.
 */
Test(maglev_map, flows_keep_their_backend_when_an_unrelated_one_leaves)
{
	static struct flowsdn_maglev_backend be[100];
	static uint32_t a[65537], b[65537], got[65537], before[2000];
	const uint32_t m = 65537, svc = 42, gone = 38;
	size_t n, kept_slots = 0, same_slots = 0, kept_flows = 0, same_flows = 0, written = 0;
	struct query q;
	uint32_t seed = 2463534242u;

	n = make_backends(be, 100, 100);
	ASSERT_OK(flowsdn_maglev_build(be, n, m, NULL, a), "build with 100");
	n = make_backends(be, 100, gone - 1);
	ASSERT_OK(flowsdn_maglev_build(be, n, m, NULL, b), "build without backend 38");
	ASSERT_OK(flowsdn_maps_maglev_write(maps, svc, NULL, a, m, NULL), "write A");

	query_open(&q);
	cr_assert_eq(query_run(&q, svc, 12345, m), a[12345 % m], "BPF reads slot hash mod M");
	cr_assert_eq(query_run(&q, svc + 1, 12345, m), 0, "a service without a table has no backend");
	cr_assert_eq(query_run(&q, svc, 12345, 0), 0, "M = 0 has no backend");
	for (size_t f = 0; f < 2000; f++)
		before[f] = query_run(&q, svc, next_hash(&seed), m);

	ASSERT_OK(flowsdn_maps_maglev_write(maps, svc, a, b, m, &written), "write B over A");
	ASSERT_OK(flowsdn_maps_maglev_read(maps, svc, got, m), "read B");
	cr_assert(memcmp(got, b, sizeof(b)) == 0, "the map holds table B");
	for (uint32_t i = 0; i < m; i++) {
		if (a[i] == gone)
			continue;
		kept_slots++;
		same_slots += got[i] == a[i];
	}
	cr_assert(same_slots * 100 >= kept_slots * 99, "kept backends kept %zu of %zu slots (< 99 %%)", same_slots,
		  kept_slots);

	seed = 2463534242u;
	for (size_t f = 0; f < 2000; f++) {
		uint32_t now = query_run(&q, svc, next_hash(&seed), m);

		cr_assert(now >= 1 && now <= 100 && now != gone, "flow %zu went to backend %u", f, now);
		if (before[f] == gone)
			continue;
		kept_flows++;
		same_flows += now == before[f];
	}
	cr_assert(kept_flows > 1900, "%zu of 2000 flows were on kept backends", kept_flows);
	cr_assert(same_flows * 100 >= kept_flows * 99, "%zu of %zu flows kept their backend (< 99 %%)", same_flows,
		  kept_flows);
	cr_assert(written < m / 20, "the diff wrote %zu slots", written);
	bpf_object__close(q.obj);
}
