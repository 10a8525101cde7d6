/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Secret files: mode and owner checked on the open descriptor, then read. */
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <flash/file.h>

#include "internal.h"

FLASH_API int flash_file_read_secret(const char *path, size_t max, char **ret_data, size_t *ret_size)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len = 0;

	if (!path || !ret_data || !ret_size)
		return -EINVAL;
	if (max == 0 || max > FLASH_SECRET_FILE_MAX)
		max = FLASH_SECRET_FILE_MAX;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	if ((st.st_mode & 0177) != 0 || st.st_uid != geteuid())
		return -EPERM;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;

	buf = malloc(max + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + len, max + 1 - len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			explicit_bzero(buf, len);
			return -EFBIG;
		}
	}
	buf[len] = '\0';
	*ret_data = TAKE_PTR(buf);
	*ret_size = len;
	return 0;
}
