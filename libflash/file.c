/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Secret files: type, mode and owner checked on the open
 * descriptor (common/util.c opens it without blocking), then read. */
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <flash/file.h>

#include "internal.h"

/* Opens @path without following a final symlink and reads it whole if
 * @acceptable(st) says so. */
static int read_checked(const char *path, size_t max, bool (*acceptable)(const struct stat *st), bool wipe,
			char **ret_data, size_t *ret_size)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (!path || !ret_data || !ret_size)
		return -EINVAL;
	if (max == 0 || max > FLASH_SECRET_FILE_MAX)
		max = FLASH_SECRET_FILE_MAX;
	fd = util_open_regular(path, O_NOFOLLOW, &st);
	if (fd < 0)
		return fd;
	if (!acceptable(&st))
		return -EPERM;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	return util_read_fd(fd, (size_t)st.st_size, max, wipe, ret_data, ret_size);
}

/* Exactly 0600 or 0400: no bit for group or others, no execute bit, no
 * write-only 0200, no setuid, setgid or sticky bit; owned by the caller. */
static bool secret_ok(const struct stat *st)
{
	mode_t mode = st->st_mode & 07777;

	return (mode == 0600 || mode == 0400) && st->st_uid == geteuid();
}

FLASH_API int flash_file_read_secret(const char *path, size_t max, char **ret_data, size_t *ret_size)
{
	return read_checked(path, max, secret_ok, true, ret_data, ret_size);
}
