/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by the IPAM and identity tests: temporary state directories,
 * parsing shortcuts and a CRC32C to forge state files. */
#ifndef FLOWSDN_TESTS_IPAM_HELPERS_H
#define FLOWSDN_TESTS_IPAM_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <flowsdn/addr.h>

static inline struct flowsdn_prefix PFX(const char *s)
{
	struct flowsdn_prefix p;
	int r = flowsdn_prefix_parse(s, strlen(s), NULL, &p);

	cr_assert(r == 0, "prefix_parse(\"%s\") = %d", s, r);
	return p;
}

static inline struct flowsdn_addr ADDR(const char *s)
{
	struct flowsdn_addr a;
	int r = flowsdn_addr_parse(s, strlen(s), &a);

	cr_assert(r == 0, "addr_parse(\"%s\") = %d", s, r);
	return a;
}

static inline const char *FMT(const struct flowsdn_addr *a, char buf[FLOWSDN_ADDR_STRLEN])
{
	cr_assert(flowsdn_addr_format(a, buf, FLOWSDN_ADDR_STRLEN) > 0);
	return buf;
}

/* A fresh directory under $TMPDIR; *ret_dir is "<tmp>/state" (not yet
 * created) so that the library's creation of it is exercised. */
static inline void make_tmpdir(char *top, size_t top_size, char *dir, size_t dir_size)
{
	const char *t = getenv("TMPDIR");

	snprintf(top, top_size, "%s/flowsdn-test-XXXXXX", t && *t ? t : "/tmp");
	cr_assert(mkdtemp(top), "mkdtemp: %s", strerror(errno));
	snprintf(dir, dir_size, "%s/state", top);
}

static inline int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void rm_tree(const char *top)
{
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline uint32_t test_crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

static inline void read_whole(const char *path, uint8_t **ret, size_t *ret_n)
{
	FILE *f = fopen(path, "rb");
	long n;

	cr_assert(f, "open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	*ret = malloc((size_t)n + 1);
	cr_assert(*ret && fread(*ret, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*ret_n = (size_t)n;
}

static inline void write_whole(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	cr_assert(f && fwrite(p, 1, n, f) == n);
	fclose(f);
}

/* Rewrites the CRC32C trailer of a state file after a test edited it. */
static inline void fix_crc(uint8_t *p, size_t n)
{
	uint32_t c = test_crc32c(p, n - 4);

	for (int i = 0; i < 4; i++)
		p[n - 4 + (size_t)i] = (uint8_t)(c >> (8 * i));
}

#endif
