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

struct timespec;

/* CLOCK_MONOTONIC in milliseconds. */
int64_t util_mono_ms(void);

/* *@ts = CLOCK_REALTIME now + @ms: the absolute time of a
 * pthread_cond_timedwait() deadline. */
void util_abstime_after_ms(struct timespec *ts, uint64_t ms);

/* Writes @size bytes to @path crash-safely: a temporary file in the same
 * directory, fsync, rename over @path, fsync of the directory.  @mode is
 * the new file's mode.  Returns 0 or -errno; @path is untouched on failure. */
int util_write_file_atomic(const char *path, const void *data, size_t size, unsigned int mode);

struct stat;

/* The same for the file @name (no '/') in the directory open at @dfd: the
 * temporary file is created with openat(O_CREAT | O_EXCL | O_NOFOLLOW)
 * under a fresh random name, and renameat() replaces whatever @name is
 * (a symlink included) without following it.  Returns 0 or -errno. */
int util_write_file_atomic_at(int dfd, const char *name, const void *data, size_t size, unsigned int mode);

/* Opens the directory @path to write into it, if it is private to us:
 * O_DIRECTORY | O_NOFOLLOW (a final symlink is -ELOOP), owned by the
 * effective user (root for a privileged program), no write permission for
 * group or others (-EPERM otherwise).  Returns the descriptor (O_CLOEXEC)
 * and fills *ret_st, or -errno (-ENOENT, -ENOTDIR, ...). */
int util_open_dir_private(const char *path, struct stat *ret_st);

/*
 * Files named from outside.  The one rule for opening them: open without
 * blocking (O_NONBLOCK, so a FIFO with no writer or a device cannot stall
 * the caller; O_NOCTTY, O_CLOEXEC), then check on the descriptor, not the
 * name, that it is a regular file.
 */

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

/* A growing NUL-terminated byte buffer (zero-initialized; free(b.p)). */
struct util_buf {
	char *p;
	size_t len, cap;
};

/* Appends @n bytes at @s and keeps a NUL after them: 0, -EMSGSIZE when
 * the length would pass @max (0: no bound), -ENOMEM; @b is unchanged on
 * failure. */
int util_buf_append(struct util_buf *b, const void *s, size_t n, size_t max);

/* The delay of an HTTP Retry-After header line ("Retry-After: 3\r\n", @n
 * bytes, the name in any case) in seconds, at most 86400: true when the
 * line is one with delay-seconds (an HTTP date is not honoured). */
bool util_retry_after_parse(const char *line, size_t n, unsigned int *ret_seconds);

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

/* Binary search of the @n elements of @size bytes at @base, sorted by
 * @cmp (which compares @key with an element, strcmp style): the index of
 * the first element not below @key (@n when none), *ret_found whether it
 * equals @key. */
size_t util_lower_bound(const void *base, size_t n, size_t size, const void *key,
			int (*cmp)(const void *key, const void *elem), bool *ret_found);

/* Copies the string @src with its NUL into @dst (@size bytes) when it
 * fits: 0, or -EINVAL (@src NULL) and -ENAMETOOLONG (it does not fit),
 * @dst untouched.  For a reader that refuses what a fixed field cannot
 * hold whole rather than cut it (a cut string may end inside a UTF-8
 * sequence, which JSON cannot carry). */
int util_strcpy_fit(char *dst, size_t size, const char *src);

/* @v in decimal at @buf (room for 20 digits; not NUL-terminated): the
 * number of digits.  The hot paths' snprintf("%llu") (JSON output, JSON
 * paths, addresses). */
static inline size_t util_format_u64(uint64_t v, char *buf)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

/* The value of hex digit @c (either case), -1 for anything else. */
static inline int util_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The log callback of a library, written once: UTIL_LOG_EXPORT(flowsdn,
 * FLOWSDN_API, enum flowsdn_log_level, flowsdn_log_fn, FLOWSDN_LOG_INFO)
 * defines flowsdn_set_log() and the private flowsdn__log(), which formats
 * one line (at most 1023 bytes) only when a callback wants its level.
 */
#define UTIL_LOG_EXPORT(P, API, LEVEL_T, FN_T, DEFAULT_MAX)                          \
	static FN_T P##_log_cb_;                                                      \
	static LEVEL_T P##_log_max_ = DEFAULT_MAX;                                    \
	static void *P##_log_userdata_;                                               \
	API void P##_set_log(FN_T fn, LEVEL_T max_level, void *userdata)             \
	{                                                                            \
		P##_log_cb_ = fn;                                                     \
		P##_log_max_ = max_level;                                             \
		P##_log_userdata_ = userdata;                                         \
	}                                                                            \
	void P##__log(LEVEL_T level, const char *fmt, ...)                           \
	{                                                                            \
		char buf[1024];                                                      \
		va_list ap;                                                          \
                                                                                     \
		if (!P##_log_cb_ || level > P##_log_max_)                              \
			return;                                                      \
		va_start(ap, fmt);                                                   \
		vsnprintf(buf, sizeof(buf), fmt, ap);                                \
		va_end(ap);                                                          \
		P##_log_cb_(level, buf, P##_log_userdata_);                            \
	}

/* A library's P_strerror() over its table of blocks (util_strerror())
 * and P_version(), written once. */
#define UTIL_ERRORS_EXPORT(P, API, BLOCKS, ERRNO_END, UNKNOWN)                       \
	API const char *P##_strerror(int err)                                        \
	{                                                                            \
		return util_strerror(BLOCKS, ARRAY_SIZE(BLOCKS), err, ERRNO_END, UNKNOWN); \
	}                                                                            \
	API const char *P##_version(void)                                            \
	{                                                                            \
		return PACKAGE_VERSION;                                              \
	}

/* fsync() of the directory holding @path. */
int util_fsync_parent(const char *path);

/* Creates the absolute directory @dir and its missing parents with @mode
 * (an existing one is fine).  -EINVAL for a relative path, -errno. */
int util_mkdir_p(const char *dir, unsigned int mode);

#endif
