/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/file.h> — reading key and token files.
 *
 * A file that holds a secret (an API token, a private key) must be a
 * regular file owned by the calling user with mode exactly 0600 or 0400:
 * no permission for group or others, no execute bit, no write-only 0200,
 * no setuid, setgid or sticky bit.  A file that holds public keys (a key
 * set that verifies tokens) needs no secrecy but needs integrity: anyone
 * may read it, but it must be owned by the caller or root and not be
 * writable by group or others, since whoever can add a key to it can mint
 * tokens.  Anything else is refused before a byte is read.
 *
 * Both readers open the file without blocking (a FIFO with no writer or a
 * device does not stall them) and without following a final symbolic
 * link, and check type, mode and owner on the open descriptor.
 */
#ifndef FLASH_FILE_H
#define FLASH_FILE_H

#include <stddef.h>
#include <flash/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest file accepted by flash_file_read_secret() and flash_file_read_public(). */
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

/* As flash_file_read_secret(), for a file of public keys: any mode without
 * group or other write permission, owned by the caller or root.
 * Errors as flash_file_read_secret(); -EPERM for a group- or
 * world-writable file or another owner. */
FLASH_API FLASH_WUR int flash_file_read_public(const char *path, size_t max, char **ret_data,
					       size_t *ret_size);

#ifdef __cplusplus
}
#endif

#endif
