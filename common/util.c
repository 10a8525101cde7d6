/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Options validation and crash-safe file I/O shared by both libraries. */
#include "config.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <sys/stat.h>

#include "util.h"

bool util_opts_valid(const void *opts, size_t user_sz, size_t our_sz)
{
	const unsigned char *p = opts;

	if (user_sz < sizeof(size_t))
		return false;
	for (size_t i = our_sz; i < user_sz; i++)
		if (p[i])
			return false;
	return true;
}

const char *util_strerror(const struct util_errblock *blocks, size_t n, int err, int domain_base,
			  const char *unknown)
{
	int code = err < 0 ? -err : err;

	if (code == 0)
		return "success";
	if (code < domain_base) {
		const char *s = strerrordesc_np(code);

		return s ? s : "unknown error";
	}
	for (size_t i = 0; i < n; i++) {
		if (blocks[i].fn && code >= blocks[i].lo && code < blocks[i].hi) {
			const char *s = blocks[i].fn(code);

			if (s)
				return s;
		}
	}
	return unknown;
}

int util_fsync_parent(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);
	_cleanup_close_ int dfd = -1;

	if (!copy)
		return -ENOMEM;
	dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fsync(dfd) < 0)
		return -errno;
	return 0;
}

int util_write_file_atomic(const char *path, const void *data, size_t size, unsigned int mode)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;
	const unsigned char *p = data;
	size_t done = 0;
	int r;

	if (!path || (!data && size))
		return -EINVAL;
	if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) {
		tmp = NULL;
		return -ENOMEM;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0) {
		r = -errno;
		goto out_unlink;
	}
	while (done < size) {
		ssize_t n = write(fd, p + done, size - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out_unlink;
		}
		done += (size_t)n;
	}
	if (fsync(fd) < 0) {
		r = -errno;
		goto out_unlink;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto out_unlink;
	}
	return util_fsync_parent(path);

out_unlink:
	unlink(tmp);
	return r;
}

int util_open_regular(const char *path, int flags, struct stat *ret_st)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (!path || !ret_st)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | flags);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	*ret_st = st;
	return TAKE_FD(fd);
}

static void wipe_free(char *buf, size_t len, bool wipe)
{
	if (buf && wipe)
		explicit_bzero(buf, len);
	free(buf);
}

int util_read_fd(int fd, size_t hint, size_t max, bool wipe, char **ret_data, size_t *ret_size)
{
	char *buf;
	size_t len = 0, cap;
	int r;

	if (fd < 0 || !ret_data || max == SIZE_MAX)
		return -EINVAL;
	if (hint > max)
		return -EFBIG;
	cap = hint + 1;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len + 1 == cap) {
			/* Full: one byte more tells the end from a longer file
			 * (one that grew) without growing the buffer first. */
			char probe, *nb;

			n = read(fd, &probe, 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				r = -errno;
				goto out_free;
			}
			if (n == 0)
				break;
			if (len >= max) {
				r = -EFBIG;
				goto out_free;
			}
			cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
			nb = malloc(cap);
			if (!nb) {
				r = -ENOMEM;
				goto out_free;
			}
			memcpy(nb, buf, len);
			wipe_free(buf, len, wipe);
			buf = nb;
			buf[len++] = probe;
			if (wipe)
				explicit_bzero(&probe, sizeof(probe));
			continue;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_data = buf;
	if (ret_size)
		*ret_size = len;
	return 0;

out_free:
	wipe_free(buf, len, wipe);
	return r;
}

int util_read_file(const char *path, size_t max, char **ret_data, size_t *ret_size)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (!path || !ret_data)
		return -EINVAL;
	fd = util_open_regular(path, 0, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	return util_read_fd(fd, (size_t)st.st_size, max, false, ret_data, ret_size);
}

const char *util_read_strerror(int err)
{
	const char *s;

	if (err == -EBADFD)
		return "not a regular file";
	if (err == -ELOOP)
		return "a symbolic link";
	s = strerrordesc_np(err < 0 ? -err : err);
	return s ? s : "unknown error";
}

int util_mkdir_p(const char *dir, unsigned int mode)
{
	_cleanup_free_ char *copy = NULL;

	if (!dir || dir[0] != '/')
		return -EINVAL;
	copy = strdup(dir);
	if (!copy)
		return -ENOMEM;
	for (char *p = copy + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (copy[0] && mkdir(copy, (mode_t)mode) < 0 && errno != EEXIST)
			return -errno;
		if (!c)
			break;
		*p = c;
	}
	return 0;
}
