/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers of the fuzz targets: a property check, and for those that keep
 * state on disk a temporary directory made once per run and removed at
 * exit. */
#ifndef FLASH_TESTS_FUZZ_HELPERS_H
#define FLASH_TESTS_FUZZ_HELPERS_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A property that does not hold: which one (file, line, expression), then
 * a crash for libFuzzer. */
#define fuzz_check(ok)                                                                                   \
	do {                                                                                             \
		if (!(ok)) {                                                                             \
			fprintf(stderr, "%s:%d: %s does not hold\n", __FILE__, __LINE__, #ok);          \
			abort();                                                                         \
		}                                                                                        \
	} while (0)

static inline int fuzz_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Makes $TMPDIR/NAME.XXXXXX (or /tmp) into @dir (@size bytes); aborts
 * when it cannot. */
static inline void fuzz_tmpdir_make(char *dir, size_t size, const char *name)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, size, "%s/%s.XXXXXX", tmp && strlen(tmp) + strlen(name) + 8 < size ? tmp : "/tmp", name);
	if (!mkdtemp(dir))
		abort();
}

/* Removes @dir and everything in it (nothing when @dir is ""). */
static inline void fuzz_tmpdir_remove(const char *dir)
{
	if (dir[0])
		nftw(dir, fuzz_rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

#endif
