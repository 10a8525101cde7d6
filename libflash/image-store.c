/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The content store of the image module: STORE/blobs/sha256/HEX, each
 * blob written under a temporary name, checked against its descriptor,
 * fsync'ed and renamed into place, under a per-blob flock so that
 * concurrent pulls (threads or processes) fetch it once.
 *
 * The lock is held while that one blob is fetched: a puller waiting for it
 * would otherwise fetch the same bytes.  Waiting is bounded by the
 * operation's deadline (LOCK_NB polled), so a stuck fetch elsewhere costs
 * a waiter its timeout, never more.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "image-store.h"
#include "internal.h"

static int mkdirat_p(int dfd, const char *name)
{
	if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int image_store_open(const char *path, int *ret_fd)
{
	int fd, rc;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = mkdirat_p(fd, "blobs");
	if (rc == 0)
		rc = mkdirat_p(fd, "blobs/sha256");
	if (rc == 0)
		rc = mkdirat_p(fd, "locks");
	if (rc < 0) {
		close(fd);
		return rc;
	}
	*ret_fd = fd;
	return 0;
}

/* The blob is in place with the descriptor's size. */
static bool blob_present(int blobs_fd, const struct image_desc *d)
{
	struct stat st;

	return fstatat(blobs_fd, d->digest + 7, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       (uint64_t)st.st_size == d->size;
}

static int lock_blob(int store_fd, const char *hex, uint64_t deadline, int *ret_fd)
{
	char name[96];
	int fd;

	snprintf(name, sizeof(name), "locks/%s.lock", hex);
	fd = openat(store_fd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	for (;;) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 5 * 1000 * 1000 };

		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int rc = -errno;

			close(fd);
			return rc;
		}
		if (image_now_ms() >= deadline) {
			close(fd);
			return -ETIMEDOUT;
		}
		nanosleep(&ts, NULL);
	}
	*ret_fd = fd;
	return 0;
}

/* Temporary files of @hex left by a puller that died (we hold the lock). */
static void remove_stale(int blobs_fd, const char *hex)
{
	char prefix[96];
	int fd = openat(blobs_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir;
	struct dirent *de;

	if (fd < 0)
		return;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	snprintf(prefix, sizeof(prefix), ".tmp-%s-", hex);
	while ((de = readdir(dir)))
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			(void)unlinkat(blobs_fd, de->d_name, 0);
	closedir(dir);
}

int image_store_ensure(int store_fd, const struct image_desc *d, image_fetch_fn fetch, void *ctx,
		       uint64_t deadline, char *why, size_t why_size)
{
	static unsigned long counter;
	const char *hex = d->digest + 7;
	char tmp[160], got[IMAGE_DIGEST_LEN + 1];
	struct image_sink sink;
	int blobs_fd, lock_fd = -1, fd = -1, rc;

	blobs_fd = openat(store_fd, "blobs/sha256", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (blobs_fd < 0)
		return -errno;
	if (blob_present(blobs_fd, d)) {
		rc = 0;
		goto out;
	}
	rc = lock_blob(store_fd, hex, deadline, &lock_fd);
	if (rc < 0) {
		snprintf(why, why_size, "waiting for the lock of blob %s: %s", d->digest, strerror(-rc));
		goto out;
	}
	if (blob_present(blobs_fd, d)) {
		rc = 0;
		goto out;
	}
	remove_stale(blobs_fd, hex);
	snprintf(tmp, sizeof(tmp), ".tmp-%s-%ld-%ld-%lu", hex, (long)getpid(), (long)syscall(SYS_gettid),
		 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
	fd = openat(blobs_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, why_size, "creating a temporary file in the content store: %s", strerror(-rc));
		goto out;
	}
	image_sink_init(&sink, fd, d->size);
	rc = fetch(ctx, d, &sink, why, why_size);
	if (rc == 0 && sink.written != d->size) {
		snprintf(why, why_size, "blob %s has %llu bytes, its descriptor says %llu", d->digest,
			 (unsigned long long)sink.written, (unsigned long long)d->size);
		rc = -FLASH_E_IMAGE_SIZE;
	}
	if (rc == 0) {
		image_sink_digest(&sink, got);
		if (strcmp(got, d->digest) != 0) {
			snprintf(why, why_size, "blob %s has digest %s: refused and removed", d->digest, got);
			rc = -FLASH_E_IMAGE_DIGEST;
		}
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (rc == 0 && renameat(blobs_fd, tmp, blobs_fd, hex) < 0)
		rc = -errno;
	if (rc == 0 && fsync(blobs_fd) < 0)
		rc = -errno;
	if (rc < 0)
		(void)unlinkat(blobs_fd, tmp, 0);
out:
	if (fd >= 0)
		close(fd);
	if (lock_fd >= 0)
		close(lock_fd); /* releases the flock */
	close(blobs_fd);
	return rc;
}

int image_store_read(int store_fd, const struct image_desc *d, size_t max, char **ret, size_t *ret_len)
{
	char name[96];
	char *buf;
	int fd;
	struct stat st;
	size_t got = 0;

	snprintf(name, sizeof(name), "blobs/sha256/%s", d->digest + 7);
	fd = openat(store_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != d->size || d->size > max) {
		close(fd);
		return -FLASH_E_IMAGE_SIZE;
	}
	buf = malloc(d->size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < d->size) {
		ssize_t n = read(fd, buf + got, d->size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int rc = n < 0 ? -errno : -FLASH_E_IMAGE_SIZE;

			free(buf);
			close(fd);
			return rc;
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*ret = buf;
	*ret_len = got;
	return 0;
}
