/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's append-only state journal (journal.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "util.h"

#define HASH_DIGITS 16

struct journal {
	int fd;
	off_t size;
};

static uint64_t fnv1a64(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

int journal_open(int dfd, const char *name, struct journal **ret)
{
	struct journal *j;
	struct stat st;
	int fd;

	if (dfd < 0 || !name || !ret)
		return -EINVAL;
	fd = openat(dfd, name, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int r = S_ISREG(st.st_mode) ? -errno : -EBADFD;

		close(fd);
		return r;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		close(fd);
		return -ENOMEM;
	}
	j->fd = fd;
	j->size = st.st_size;
	*ret = j;
	return 0;
}

void journal_free(struct journal *j)
{
	if (!j)
		return;
	close(j->fd);
	free(j);
}

/* Cuts the file back to @size bytes, on disk. */
static int cut(struct journal *j, off_t size)
{
	if (ftruncate(j->fd, size) < 0 || fdatasync(j->fd) < 0)
		return -errno;
	j->size = size;
	return 0;
}

int journal_read(struct journal *j, size_t max, int (*fn)(const char *text, size_t len, void *userdata),
		 void *userdata, bool *ret_torn, size_t *ret_line)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0, pos = 0, line = 0;
	bool torn = false;
	int r;

	if (!j || !fn)
		return -EINVAL;
	if (lseek(j->fd, 0, SEEK_SET) < 0)
		return -errno;
	r = util_read_fd(j->fd, (size_t)j->size, max, false, &data, &len);
	if (r < 0)
		return r;
	while (pos < len && r == 0) {
		char *nl = memchr(data + pos, '\n', len - pos), *text;
		size_t n = nl ? (size_t)(nl - data) - pos : len - pos;
		char want[HASH_DIGITS + 1];

		line++;
		if (!nl) {
			torn = true;
			break;
		}
		if (n < HASH_DIGITS + 1 || data[pos + HASH_DIGITS] != ' ') {
			r = -EBADMSG;
			break;
		}
		text = data + pos + HASH_DIGITS + 1;
		snprintf(want, sizeof(want), "%016" PRIx64, fnv1a64(text, n - HASH_DIGITS - 1));
		if (memcmp(want, data + pos, HASH_DIGITS) != 0) {
			r = -EBADMSG;
			break;
		}
		*nl = '\0';
		r = fn(text, n - HASH_DIGITS - 1, userdata);
		pos += n + 1;
	}
	if (r == -EBADMSG && ret_line)
		*ret_line = line;
	if (r == 0 && torn)
		r = cut(j, (off_t)pos);
	if (r == 0) {
		j->size = (off_t)pos;
		if (ret_torn)
			*ret_torn = torn;
	}
	return r;
}

int journal_append(struct journal *j, const char *text, size_t len)
{
	_cleanup_free_ char *buf = NULL;
	size_t n = HASH_DIGITS + 1 + len + 1, done = 0;
	int r = 0;

	if (!j || (!text && len) || (len && memchr(text, '\n', len)))
		return -EINVAL;
	buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	snprintf(buf, HASH_DIGITS + 2, "%016" PRIx64 " ", fnv1a64(text, len));
	memcpy(buf + HASH_DIGITS + 1, text, len);
	buf[n - 1] = '\n';
	while (done < n && r == 0) {
		ssize_t w = write(j->fd, buf + done, n - done);

		if (w < 0 && errno != EINTR)
			r = -errno;
		else if (w > 0)
			done += (size_t)w;
	}
	if (r == 0 && fdatasync(j->fd) < 0)
		r = -errno;
	if (r < 0) {
		/* Nothing half-written stays behind. */
		if (ftruncate(j->fd, j->size) == 0)
			(void)fdatasync(j->fd);
		return r;
	}
	j->size += (off_t)n;
	return 0;
}

int journal_reset(struct journal *j)
{
	return j ? cut(j, 0) : -EINVAL;
}

off_t journal_size(const struct journal *j)
{
	return j ? j->size : 0;
}
