/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Options validation and crash-safe file I/O shared by both libraries. */
#include "config.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

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

int util_strcpy_fit(char *dst, size_t size, const char *src)
{
	size_t n;

	if (!src)
		return -EINVAL;
	n = strlen(src);
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

size_t util_lower_bound(const void *base, size_t n, size_t size, const void *key,
			int (*cmp)(const void *key, const void *elem), bool *ret_found)
{
	const char *p = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp(key, p + mid * size) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (ret_found)
		*ret_found = lo < n && cmp(key, p + lo * size) == 0;
	return lo;
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

/* A name for a temporary file beside @name: "<name>.tmp.XXXXXX" with six
 * random characters (what statefile.c's crash cleanup looks for). */
static char *temp_name(const char *name)
{
	static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[6];
	char *tmp = NULL;

	if (getentropy(rnd, sizeof(rnd)) < 0)
		return NULL;
	if (asprintf(&tmp, "%s.tmp.%c%c%c%c%c%c", name, chars[rnd[0] % 62], chars[rnd[1] % 62], chars[rnd[2] % 62],
		     chars[rnd[3] % 62], chars[rnd[4] % 62], chars[rnd[5] % 62]) < 0)
		return NULL;
	return tmp;
}

int util_write_file_atomic_at(int dfd, const char *name, const void *data, size_t size, unsigned int mode)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;
	const unsigned char *p = data;
	size_t done = 0;
	int r;

	if (dfd < 0 || !name || !*name || strchr(name, '/') || (!data && size))
		return -EINVAL;
	/* A fresh name, never an existing file or a symlink planted there. */
	for (int tries = 0; fd < 0; tries++) {
		free(tmp);
		tmp = temp_name(name);
		if (!tmp)
			return -ENOMEM;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && (errno != EEXIST || tries >= 100))
			return -errno;
	}
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
	/* rename replaces whatever @name is (a symlink too), never follows it. */
	if (renameat(dfd, tmp, dfd, name) < 0) {
		r = -errno;
		goto out_unlink;
	}
	return fsync(dfd) < 0 ? -errno : 0;

out_unlink:
	unlinkat(dfd, tmp, 0);
	return r;
}

int util_write_file_atomic(const char *path, const void *data, size_t size, unsigned int mode)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_close_ int dfd = -1;
	const char *slash, *name;

	if (!path || (!data && size))
		return -EINVAL;
	slash = strrchr(path, '/');
	name = slash ? slash + 1 : path;
	copy = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	if (!copy)
		return -ENOMEM;
	dfd = open(copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	return util_write_file_atomic_at(dfd, name, data, size, mode);
}

int util_open_dir_private(const char *path, struct stat *ret_st)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (!path || !ret_st)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOTDIR && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? -ELOOP : -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid() || (st.st_mode & 0022))
		return -EPERM;
	*ret_st = st;
	return TAKE_FD(fd);
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

int64_t util_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void util_abstime_after_ms(struct timespec *ts, uint64_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
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

int util_buf_append(struct util_buf *b, const void *s, size_t n, size_t max)
{
	if (n > SIZE_MAX - b->len - 1 || (max && b->len + n > max))
		return -EMSGSIZE;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap = cap > SIZE_MAX / 2 ? b->len + n + 1 : cap * 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

bool util_retry_after_parse(const char *line, size_t n, unsigned int *ret_seconds)
{
	unsigned long v = 0;
	bool digits = false;
	size_t i = 12;

	if (n <= 12 || strncasecmp(line, "retry-after:", 12) != 0)
		return false;
	while (i < n && (line[i] == ' ' || line[i] == '\t'))
		i++;
	for (; i < n && line[i] >= '0' && line[i] <= '9'; i++) {
		digits = true;
		if (v < 86400)
			v = v * 10 + (unsigned long)(line[i] - '0');
	}
	while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n'))
		i++;
	if (!digits || i != n)
		return false;
	*ret_seconds = v > 86400 ? 86400 : (unsigned int)v;
	return true;
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
