/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A full disk during the project's state writes (issue 21 item 3): the
 * operator's SQLite store, IPAM and the meter's state file each write on a
 * small tmpfs (private mount namespace, gone with the test) that a filler
 * file has filled on purpose.  Each write must fail with a clear error,
 * leave the last good state readable (also by a fresh open), nothing torn
 * or half-written, and work again once there is room.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>
#include <flash/meter.h>
#include <flowsdn/ipam.h>

#include "helpers.h"
#include "netns-helpers.h"
#include "store.h"

static char dir[64], filler[96];

static void setup(void)
{
	node_enter(); /* private mount namespace */
	snprintf(dir, sizeof(dir), "/tmp/test-full-disk.XXXXXX");
	cr_assert(mkdtemp(dir));
	cr_assert(mount("tmpfs", dir, "tmpfs", 0, "size=4m,mode=0700") == 0, "tmpfs: %s", strerror(errno));
	snprintf(filler, sizeof(filler), "%s/filler", dir);
}

static void teardown(void)
{
	umount2(dir, MNT_DETACH);
	rmdir(dir);
}

TestSuite(full_disk, .init = setup, .fini = teardown, .timeout = 60);

/* Fills the file system: the filler grows until ENOSPC. */
static void fill(void)
{
	static const char block[512] = { 'x' };
	int fd = open(filler, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	ssize_t w;

	cr_assert(fd >= 0);
	while ((w = write(fd, block, sizeof(block))) > 0)
		;
	cr_assert(w < 0 && errno == ENOSPC, "filling: %s", strerror(errno));
	while (write(fd, block, 1) == 1) /* the last bytes of a partial page */
		;
	close(fd);
}

static unsigned int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned int n = 0;

	cr_assert(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void make_room(void)
{
	cr_assert(unlink(filler) == 0);
}

/* A meter document of @services services with long ids. */
static char *meter_doc(unsigned int services, int64_t t)
{
	struct flash_meter *m = NULL;
	char *j = NULL;
	size_t n;

	ASSERT_OK(flash_meter_new(NULL, &m), "meter");
	for (unsigned int i = 0; i < services; i++) {
		char svc[200];
		struct flash_meter_observation o = { .sz = sizeof(o), .service_id = svc, .organization = "org-1",
						     .time = t, .ready_replicas = 1, .cpu_millis = 250, .memory_mib = 128 };

		snprintf(svc, sizeof(svc), "service-%u-%0150u", i, i);
		cr_assert(flash_meter_observe(m, &o) >= 0);
		o.time = t + 3600;
		cr_assert(flash_meter_observe(m, &o) >= 0);
	}
	ASSERT_OK(flash_meter_to_json(m, &j, &n), "meter json");
	flash_meter_free(m);
	return j;
}

Test(full_disk, store)
{
	char path[128], *got = NULL, *good = meter_doc(3, 1796000000), *big = meter_doc(1000, 1796000000);
	struct op_store *st = NULL;
	char err[256] = "";
	int r;

	snprintf(path, sizeof(path), "%s/flash.db", dir);
	ASSERT_OK(op_store_open(path, &st, err, sizeof(err)), err);
	ASSERT_OK(op_store_meter_put(st, good), "the good state");
	fill();
	cr_assert_gt(strlen(big), 100000u, "the new state is larger than the room left (none)");
	r = op_store_meter_put(st, big);
	cr_assert_eq(r, -ENOSPC, "a %zu-byte write on a full disk: %d (%s)", strlen(big), r, strerror(-r));
	ASSERT_OK(op_store_meter_get(st, &got), "read after the failed write");
	ASSERT_STREQ(got, good, "the last good state, in the open store");
	free(got);
	got = NULL;
	op_store_close(st);
	st = NULL;
	/* A fresh open (still full) sees the last good state, nothing torn. */
	r = op_store_open(path, &st, err, sizeof(err));
	cr_assert(r == 0, "reopen on the full disk: %d %s", r, err);
	ASSERT_OK(op_store_meter_get(st, &got), "read after reopen");
	ASSERT_STREQ(got, good, "the last good state after reopen");
	free(got);
	got = NULL;
	make_room();
	ASSERT_OK(op_store_meter_put(st, big), "the write, once there is room");
	op_store_close(st);
	st = NULL;
	ASSERT_OK(op_store_open(path, &st, err, sizeof(err)), err);
	ASSERT_OK(op_store_meter_get(st, &got), "read");
	cr_assert(got && !strcmp(got, big), "the new state");
	free(got);
	op_store_close(st);
	free(good);
	free(big);
}

Test(full_disk, meter_state_file)
{
	char path[128], *good = NULL, *back = NULL, *mine = NULL;
	struct flash_meter *m = NULL, *m2 = NULL;
	struct flash_diag *d = NULL;
	size_t n;
	int r;

	snprintf(path, sizeof(path), "%s/meter.json", dir);
	good = meter_doc(3, 1796000000);
	ASSERT_OK(flash_meter_new(NULL, &m), "meter");
	ASSERT_OK(flash_meter_from_json(m, good, strlen(good), NULL), "good state");
	ASSERT_OK(flash_meter_save(m, path), "save");
	free(good);
	good = meter_doc(1000, 1796000000);
	ASSERT_OK(flash_meter_from_json(m, good, strlen(good), NULL), "big state");
	fill();
	r = flash_meter_save(m, path);
	cr_assert_eq(r, -ENOSPC, "save on a full disk: %d (%s)", r, strerror(-r));
	ASSERT_OK(flash_diag_new(&d), "diag");
	ASSERT_OK(flash_meter_new(NULL, &m2), "meter");
	r = flash_meter_load(m2, path, d);
	cr_assert(r == 0, "the file after the failed save: %d", r);
	ASSERT_OK(flash_meter_to_json(m2, &back, &n), "json");
	free(good);
	good = meter_doc(3, 1796000000);
	ASSERT_STREQ(back, good, "the last good state, whole");
	free(back);
	back = NULL;
	/* No temporary file left taking the room. */
	cr_assert_eq(entries(), 2u, "only the filler and the state file in %s", dir);
	make_room();
	ASSERT_OK(flash_meter_save(m, path), "save once there is room");
	ASSERT_OK(flash_meter_load(m2, path, d), "load");
	ASSERT_OK(flash_meter_to_json(m2, &back, &n), "json");
	ASSERT_OK(flash_meter_to_json(m, &mine, &n), "json");
	ASSERT_STREQ(back, mine, "the new state");
	free(back);
	free(mine);
	free(good);
	flash_diag_free(d);
	flash_meter_free(m);
	flash_meter_free(m2);
}

static struct flowsdn_ipam *ipam_open(const char *state, const struct flowsdn_prefix *pool)
{
	struct flowsdn_ipam *ipam = NULL;
	int r = flowsdn_ipam_new(state, pool, 1, NULL, &ipam, NULL);

	cr_assert(r == 0, "ipam_new: %s", flowsdn_strerror(r));
	return ipam;
}

Test(full_disk, ipam)
{
	struct flowsdn_prefix pool;
	struct flowsdn_ipam *ipam;
	struct flowsdn_ipam_allocation *before = NULL, *after = NULL;
	struct flowsdn_ipam_result res;
	size_t nb = 0, na = 0;
	char state[96], cid[64];
	int r = 0, i;

	ASSERT_OK(flowsdn_prefix_parse("10.78.0.0/16", strlen("10.78.0.0/16"), NULL, &pool), "pool");
	snprintf(state, sizeof(state), "%s/ipam", dir);
	cr_assert(mkdir(state, 0700) == 0);
	ipam = ipam_open(state, &pool);
	for (i = 0; i < 20; i++) {
		snprintf(cid, sizeof(cid), "good-%d", i);
		ASSERT_OK(flowsdn_ipam_allocate(ipam, cid, "eth0", NULL, &res, NULL), cid);
	}
	ASSERT_OK(flowsdn_ipam_list(ipam, &before, &nb), "list");
	fill();
	/* Allocations until one fails: the state has to grow at some point. */
	for (i = 0; i < 20000; i++) {
		snprintf(cid, sizeof(cid), "full-%d", i);
		r = flowsdn_ipam_allocate(ipam, cid, "eth0", NULL, &res, NULL);
		if (r < 0)
			break;
	}
	cr_assert(r == -ENOSPC, "an allocation on the full disk: %d (%s) after %d", r, flowsdn_strerror(r), i);
	ASSERT_ERR(flowsdn_ipam_lookup(ipam, cid, "eth0", &res), -ENOENT, "the failed allocation is not held");
	flowsdn_ipam_free(ipam);
	ipam = ipam_open(state, &pool);
	ASSERT_OK(flowsdn_ipam_list(ipam, &after, &na), "list after reopen");
	cr_assert_eq(na, nb + (size_t)i, "%zu allocations after reopen, %zu before the disk filled + %d made on it",
		     na, nb, i);
	for (size_t k = 0; k < nb; k++)
		ASSERT_OK(flowsdn_ipam_lookup(ipam, before[k].container_id, before[k].ifname, &res), "kept");
	ASSERT_ERR(flowsdn_ipam_lookup(ipam, cid, "eth0", &res), -ENOENT, "the failed one stays absent");
	make_room();
	ASSERT_OK(flowsdn_ipam_allocate(ipam, cid, "eth0", NULL, &res, NULL), "once there is room");
	flowsdn_ipam_free(ipam);
	free(before);
	free(after);
}
