/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/file.h> — reading files that hold secrets (API tokens, private
 * keys).  Such a file must be a regular file owned by the calling user
 * with no permission for group or others and no execute bit: mode 0600
 * (or the stricter 0400).  Anything else is refused before a byte is read,
 * so a token left readable by others is never used.
 */
#ifndef FLASH_FILE_H
#define FLASH_FILE_H

#include <stddef.h>
#include <flash/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest secret file accepted by flash_file_read_secret(). */
#define FLASH_SECRET_FILE_MAX (64 * 1024)

/* Opens @path without following a final symlink (O_NOFOLLOW, O_CLOEXEC),
 * checks it as described above and reads it whole (at most @max bytes; 0
 * means FLASH_SECRET_FILE_MAX) into a new NUL-terminated buffer
 * *ret_data (freed by the caller, who should wipe it) of *ret_size bytes.
 * Errors: -EINVAL (NULL argument), -ELOOP (a symlink), -EBADFD (not a
 * regular file), -EPERM (group or other permission bits, an execute bit, or
 * another owner), -EFBIG (larger than @max), other -errno from open/read.
 * Outputs untouched on failure. */
FLASH_API FLASH_WUR int flash_file_read_secret(const char *path, size_t max, char **ret_data,
					       size_t *ret_size);

#ifdef __cplusplus
}
#endif

#endif
