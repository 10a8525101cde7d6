/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private helpers shared by libflowsdn and libflash (a libtool convenience
 * library linked into both, hidden; never installed).
 */
#ifndef FLASH_COMMON_UTIL_H
#define FLASH_COMMON_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Moves ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p) ({ __typeof__(p) _tp = (p); (p) = NULL; _tp; })
#define TAKE_FD(fd) ({ int _tf = (fd); (fd) = -1; _tf; })

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/*
 * Options structs: the first member is "size_t sz".  util_opts_valid()
 * refuses an sz smaller than that member, and a caller struct larger than
 * ours whose unknown tail is not zero.  OPTS_GET() reads a field only if
 * the caller's struct has it.
 */
bool util_opts_valid(const void *opts, size_t user_sz, size_t our_sz);
#define OPTS_VALID(opts, type) \
	(!(opts) || util_opts_valid((opts), (opts)->sz, sizeof(struct type)))
#define OPTS_HAS(opts, field) \
	((opts) && (opts)->sz >= offsetof(__typeof__(*(opts)), field) + sizeof((opts)->field))
#define OPTS_GET(opts, field, fallback) (OPTS_HAS(opts, field) ? (opts)->field : (fallback))

/* Writes @size bytes to @path crash-safely: a temporary file in the same
 * directory, fsync, rename over @path, fsync of the directory.  @mode is
 * the new file's mode.  Returns 0 or -errno; @path is untouched on failure. */
int util_write_file_atomic(const char *path, const void *data, size_t size, unsigned int mode);

/*
 * Files named from outside.  The one rule for opening them: open without
 * blocking (O_NONBLOCK, so a FIFO with no writer or a device cannot stall
 * the caller; O_NOCTTY, O_CLOEXEC), then check on the descriptor, not the
 * name, that it is a regular file.
 */
struct stat;

/* Opens @path read-only by the rule above; @flags adds open flags (such as
 * O_NOFOLLOW).  Returns the descriptor and fills *ret_st, or -errno:
 * -EBADFD when @path is not a regular file, -ELOOP for a final symlink
 * under O_NOFOLLOW. */
int util_open_regular(const char *path, int flags, struct stat *ret_st);

/* Reads @fd to its end, at most @max bytes (@hint, the size expected, only
 * sizes the first buffer), into a NUL-terminated buffer (*ret_data, freed
 * by the caller; *ret_size without the NUL, may be NULL).  With @wipe the
 * bytes read are cleared before a failure frees them.  -EFBIG when longer
 * than @max, -errno otherwise; outputs untouched on failure. */
int util_read_fd(int fd, size_t hint, size_t max, bool wipe, char **ret_data, size_t *ret_size);

/* Reads a whole regular file of at most @max bytes, opened by the rule
 * above, into a NUL-terminated buffer as util_read_fd() does.
 * -EBADFD when @path is not a regular file, -EFBIG when larger than @max,
 * -EINVAL for a NULL argument, -errno otherwise; outputs untouched on
 * failure. */
int util_read_file(const char *path, size_t max, char **ret_data, size_t *ret_size);

/* What a util_read_file() error means, for a message after the path:
 * "not a regular file" for -EBADFD, "a symbolic link" for -ELOOP, the
 * errno text otherwise. */
const char *util_read_strerror(int err);

/* The error spaces of both libraries: -errno below @domain_base, above it
 * blocks of domain codes each described by its module's function (which
 * returns NULL for a code it does not know). */
struct util_errblock {
	int lo, hi; /* [lo, hi) */
	const char *(*fn)(int code);
};
/* Describes @err (either sign); never NULL: @unknown for an unknown
 * domain code. */
const char *util_strerror(const struct util_errblock *blocks, size_t n, int err, int domain_base,
			  const char *unknown);

/* fsync() of the directory holding @path. */
int util_fsync_parent(const char *path);

/* Creates the absolute directory @dir and its missing parents with @mode
 * (an existing one is fine).  -EINVAL for a relative path, -errno. */
int util_mkdir_p(const char *dir, unsigned int mode);

#endif
