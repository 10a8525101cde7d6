/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The runtime's disk-backed bounded file systems (root): a sparse ext4
 * image on a loop device is bounded (ENOSPC at its size, the host file
 * holds only what was written), keeps its files across an unmount and a
 * mount, leaves no loop device behind, and refuses what it cannot do
 * without leaving files.  Everything in a private mount namespace and a
 * temporary directory.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "helpers.h"
#include "loop-helpers.h"
#include "runtime-internal.h"

#define MIB (UINT64_C(1) << 20)

static char dir[64];

static void setup(void)
{
	REQUIRE_ROOT();
	if (access("/dev/loop-control", R_OK | W_OK) < 0)
		cr_skip_test("no /dev/loop-control: the kernel has no loop devices here");
	cr_assert(unshare(CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
	cr_assert(mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0);
	strcpy(dir, "/var/tmp/test-storage-XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[256];

	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "umount -l '%s'/mnt 2>/dev/null; rm -rf '%s'", dir, dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(storage, .init = setup, .fini = teardown);

Test(storage, bounded_sparse_and_kept_across_mounts)
{
	char img[128], mnt[128], file[160], err[512] = "", buf[1 << 20];
	struct statfs sf;
	struct stat st;
	uint64_t written = 0;
	int fd;

	snprintf(img, sizeof(img), "%s/disk.img", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	ASSERT_OK(op_storage_create(img, 32 * MIB, NULL, err, sizeof(err)), err);
	cr_assert(stat(img, &st) == 0 && st.st_size == (off_t)(32 * MIB), "the file is the bound");
	cr_assert((uint64_t)st.st_blocks * 512 < 8 * MIB, "sparse: %lld bytes used for 32 MiB",
		  (long long)st.st_blocks * 512);
	cr_assert(!op_storage_mounted(mnt), "not mounted yet");
	cr_assert(op_storage_mount(img, mnt, err, sizeof(err)) == 0, "%s", err);
	cr_assert(op_storage_mounted(mnt));
	cr_assert_eq(loops_of(img), 1, "one loop device");
	cr_assert(statfs(mnt, &sf) == 0 && (uint64_t)sf.f_blocks * sf.f_bsize <= 32 * MIB);

	/* Filling it ends in ENOSPC within the bound. */
	memset(buf, 'x', sizeof(buf));
	snprintf(file, sizeof(file), "%s/fill", mnt);
	cr_assert((fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0);
	for (int i = 0; i < 64; i++) {
		ssize_t n = write(fd, buf, sizeof(buf));

		if (n < 0) {
			cr_assert_eq(errno, ENOSPC, "write: %s", strerror(errno));
			break;
		}
		written += (uint64_t)n;
	}
	cr_assert(fsync(fd) < 0 ? errno == ENOSPC : true);
	close(fd);
	cr_assert(written > 16 * MIB && written <= 32 * MIB, "%llu bytes written in a 32 MiB file system",
		  (unsigned long long)written);
	cr_assert(stat(img, &st) == 0 && (uint64_t)st.st_blocks * 512 <= 32 * MIB, "the host file stays bounded");
	unlink(file);

	/* Files stay across an unmount and a mount (the /root volume). */
	snprintf(file, sizeof(file), "%s/keep", mnt);
	cr_assert((fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0);
	cr_assert(write(fd, "kept\n", 5) == 5);
	cr_assert(fsync(fd) == 0);
	close(fd);
	cr_assert(umount(mnt) == 0, "umount: %s", strerror(errno));
	cr_assert(!op_storage_mounted(mnt));
	for (int i = 0; i < 100 && loops_of(img) > 0; i++)
		usleep(10000);
	cr_assert_eq(loops_of(img), 0, "the loop device goes with the unmount (autoclear)");
	cr_assert(op_storage_mount(img, mnt, err, sizeof(err)) == 0, "%s", err);
	cr_assert((fd = open(file, O_RDONLY | O_CLOEXEC)) >= 0, "the file is still there");
	cr_assert(read(fd, buf, sizeof(buf)) == 5 && memcmp(buf, "kept\n", 5) == 0);
	close(fd);
	cr_assert(umount(mnt) == 0);
}

Test(storage, refusals_leave_nothing)
{
	char img[128], junk[128], mnt[128], err[512] = "";
	struct stat st;
	int fd;

	snprintf(img, sizeof(img), "%s/disk.img", dir);
	snprintf(junk, sizeof(junk), "%s/junk.img", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	ASSERT_ERR(op_storage_create(img, 1 * MIB, NULL, err, sizeof(err)), -EINVAL, "too small");
	cr_assert(strstr(err, img), "%s", err);
	cr_assert(stat(img, &st) < 0 && errno == ENOENT, "nothing made");

	err[0] = '\0';
	ASSERT_ERR(op_storage_create(img, 32 * MIB, "/nonexistent/mkfs.ext4", err, sizeof(err)),
		   -EIO, "mkfs missing");
	cr_assert(strstr(err, "/nonexistent/mkfs.ext4"), "%s", err);
	cr_assert(stat(img, &st) < 0 && errno == ENOENT, "the half-made file is removed");

	/* An existing file is never overwritten. */
	cr_assert((fd = open(img, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0);
	cr_assert(write(fd, "data", 4) == 4);
	close(fd);
	ASSERT_ERR(op_storage_create(img, 32 * MIB, NULL, err, sizeof(err)), -EEXIST, "exists");
	cr_assert(stat(img, &st) == 0 && st.st_size == 4, "left as it was");

	/* Not a file system: refused, no loop device left attached. */
	cr_assert((fd = open(junk, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0);
	cr_assert(ftruncate(fd, 32 * MIB) == 0);
	close(fd);
	err[0] = '\0';
	cr_assert(op_storage_mount(junk, mnt, err, sizeof(err)) < 0, "junk mounted");
	cr_assert(strstr(err, junk), "%s", err);
	cr_assert(!op_storage_mounted(mnt));
	for (int i = 0; i < 100 && loops_of(junk) > 0; i++)
		usleep(10000);
	cr_assert_eq(loops_of(junk), 0, "no loop device left for a failed mount");
}
