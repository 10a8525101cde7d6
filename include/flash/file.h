/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/file.h> — reading key and token files.
 *
 * A file that holds a secret (an API token, a private key) must be a
 * regular file owned by the calling user with mode exactly 0600 or 0400:
 * no permission for group or others, no execute bit, no write-only 0200,
 * no setuid, setgid or sticky bit.  Anything else is refused before a
 * byte is read.
 *
 * The reader opens the file without blocking (a FIFO with no writer or a
 * device does not stall it) and without following a final symbolic
 * link, and checks type, mode and owner on the open descriptor.
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

/* Opens @path as described above and reads it whole if it may hold a
 * secret (at most @max bytes; 0 means FLASH_SECRET_FILE_MAX) into a new
 * NUL-terminated buffer *ret_data (freed by the caller, who should wipe
 * it) of *ret_size bytes.
 * Errors: -EINVAL (NULL argument), -ELOOP (a symlink), -EBADFD (not a
 * regular file), -EPERM (a mode other than 0600 or 0400, or another
 * owner), -EFBIG (larger than @max), other -errno from open/read.
 * Outputs untouched on failure. */
FLASH_API FLASH_WUR int flash_file_read_secret(const char *path, size_t max, char **ret_data,
					       size_t *ret_size);

#ifdef __cplusplus
}
#endif

#endif
