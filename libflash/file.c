/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Secret and public key files: type, mode and owner checked on the open
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

/* Anyone may read it, nobody else may change it: owned by the caller or
 * root, no write bit for group or others. */
static bool public_ok(const struct stat *st)
{
	return (st->st_mode & 0022) == 0 && (st->st_uid == geteuid() || st->st_uid == 0);
}

FLASH_API int flash_file_read_secret(const char *path, size_t max, char **ret_data, size_t *ret_size)
{
	return read_checked(path, max, secret_ok, true, ret_data, ret_size);
}

FLASH_API int flash_file_read_public(const char *path, size_t max, char **ret_data, size_t *ret_size)
{
	return read_checked(path, max, public_ok, false, ret_data, ret_size);
}
