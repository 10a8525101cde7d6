/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The streaming tar checker of sandbox imports: crafted ustar, pax and GNU
 * archives accepted byte for byte (whole and one byte at a time), and every
 * refusal (absolute names, "..", links leaving the root, members under a
 * link, devices, FIFOs, long names over the bound, bad checksums, truncated
 * archives, data after the end) naming the member, with nothing of the
 * refused header passed on.  And the archives GNU tar or BusyBox tar would
 * read differently from the checker (pax size, pax path against GNU L/K,
 * GNU.sparse.*, the prefix field under the old-GNU magic, numbers and
 * checksums read two ways) refused.  With SANDBOX_TAR_CORPUS set to a
 * directory, those bypass archives are written there (the fuzz seeds in
 * tests/fuzz/corpus/fuzz-sandbox-tar/ came from it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/diag.h>
#include <flash/sandbox.h>

#include "helpers.h"

/* ---------------------------------------------------------- building */
struct buf {
	unsigned char *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 1024;
		b->p = realloc(b->p, b->cap);
		cr_assert(b->p);
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void octal(unsigned char *f, size_t len, unsigned long long v)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%0*llo", (int)(len - 1), v);
	memcpy(f, tmp, len - 1);
	f[len - 1] = '\0';
}

static void header(struct buf *b, const char *name, char type, size_t size, const char *link, bool gnu)
{
	unsigned char h[512] = { 0 };
	unsigned int sum = 0;

	memcpy(h, name, strnlen(name, 100));
	octal(h + 100, 8, 0644);
	octal(h + 108, 8, 0);
	octal(h + 116, 8, 0);
	octal(h + 124, 12, size);
	octal(h + 136, 12, 1700000000);
	h[156] = (unsigned char)type;
	if (link)
		memcpy(h + 157, link, strnlen(link, 100));
	if (gnu)
		memcpy(h + 257, "ustar  ", 8);
	else
		memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	for (size_t i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	put(b, h, 512);
}

static void data(struct buf *b, const void *d, size_t n)
{
	static const unsigned char zero[512];

	put(b, d, n);
	if (n % 512)
		put(b, zero, 512 - n % 512);
}

static void file(struct buf *b, const char *name, const char *content)
{
	header(b, name, '0', strlen(content), NULL, false);
	data(b, content, strlen(content));
}

static void end(struct buf *b)
{
	static const unsigned char zero[1024];

	put(b, zero, 1024);
}

static void pax(struct buf *b, const char *key, const char *value)
{
	char rec[8192];
	size_t n = strlen(key) + strlen(value) + 3, len = n;
	int w;

	/* the length counts its own digits */
	for (;;) {
		w = snprintf(rec, sizeof(rec), "%zu %s=%s\n", len, key, value);
		if ((size_t)w == len)
			break;
		len = n + (size_t)snprintf(NULL, 0, "%zu", len);
	}
	header(b, "PaxHeaders/x", 'x', (size_t)w, NULL, false);
	data(b, rec, (size_t)w);
}

/* One pax 'x' header with the records of @kv (key, value, ..., NULL). */
static void pax_multi(struct buf *b, const char *const *kv)
{
	struct buf d = { 0 };

	for (size_t i = 0; kv[i]; i += 2) {
		char rec[1024];
		size_t n = strlen(kv[i]) + strlen(kv[i + 1]) + 3, len = n;
		int w;

		for (;;) {
			w = snprintf(rec, sizeof(rec), "%zu %s=%s\n", len, kv[i], kv[i + 1]);
			if ((size_t)w == len)
				break;
			len = n + (size_t)snprintf(NULL, 0, "%zu", len);
		}
		put(&d, rec, (size_t)w);
	}
	header(b, "PaxHeaders/x", 'x', d.len, NULL, false);
	data(b, d.p, d.len);
	free(d.p);
}

/* The checksum of the header at @h written again (unsigned sum). */
static void resum(unsigned char *h)
{
	unsigned int sum = 0;

	memset(h + 148, ' ', 8);
	for (size_t i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

static void dump(const struct buf *b, const char *name)
{
	const char *dir = getenv("SANDBOX_TAR_CORPUS");
	char path[4096];
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	cr_assert(f, "%s", path);
	cr_assert_eq(fwrite(b->p, 1, b->len, f), b->len);
	fclose(f);
}

static void gnu_long(struct buf *b, char type, const char *name)
{
	header(b, "././@LongLink", type, strlen(name) + 1, NULL, true);
	data(b, name, strlen(name) + 1);
}

/* ---------------------------------------------------------- checking */
struct run {
	int feed, finish;
	struct buf out;
	char path[256], code[64];
};

static int sink(const void *d, size_t n, void *userdata)
{
	put(userdata, d, n);
	return 0;
}

/* Feeds @b in chunks of @chunk bytes (0: whole). */
static struct run check(const struct buf *b, size_t chunk)
{
	struct flash_sandbox_tar *t = NULL;
	struct flash_diag *d = NULL;
	struct run r = { 0 };
	size_t off = 0;

	ASSERT_OK(flash_sandbox_tar_new(&t), "tar_new");
	ASSERT_OK(flash_diag_new(&d), "diag_new");
	while (off < b->len && r.feed == 0) {
		size_t n = chunk ? chunk : b->len;

		if (n > b->len - off)
			n = b->len - off;
		r.feed = flash_sandbox_tar_feed(t, b->p + off, n, sink, &r.out, d);
		off += n;
	}
	r.finish = flash_sandbox_tar_finish(t, d);
	if (flash_diag_first_error(d)) {
		snprintf(r.path, sizeof(r.path), "%s", flash_diag_first_error(d)->path);
		snprintf(r.code, sizeof(r.code), "%s", flash_diag_first_error(d)->code);
	}
	flash_diag_free(d);
	flash_sandbox_tar_free(t);
	return r;
}

static void accepted(struct buf *b)
{
	size_t chunks[] = { 0, 1, 7, 512, 4096 };

	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct run r = check(b, chunks[i]);

		cr_assert_eq(r.feed, 0, "chunk %zu: feed %d (%s %s)", chunks[i], r.feed, r.code, r.path);
		cr_assert_eq(r.finish, 0, "chunk %zu: finish %d (%s %s)", chunks[i], r.finish, r.code, r.path);
		cr_assert_eq(r.out.len, b->len, "chunk %zu: %zu bytes out of %zu", chunks[i], r.out.len, b->len);
		cr_assert(memcmp(r.out.p, b->p, b->len) == 0, "chunk %zu: bytes changed", chunks[i]);
		free(r.out.p);
	}
	free(b->p);
}

/* Refused with @code naming @member; what went out is exactly the first
 * @passed bytes of the archive, whatever the chunking. */
static void refused(struct buf *b, const char *code, const char *member, size_t passed)
{
	size_t chunks[] = { 0, 1, 100, 512 };

	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct run r = check(b, chunks[i]);

		cr_assert(r.feed == -FLASH_E_SANDBOX_ARCHIVE || r.finish == -FLASH_E_SANDBOX_ARCHIVE,
			  "chunk %zu: not refused (feed %d finish %d)", chunks[i], r.feed, r.finish);
		cr_assert_str_eq(r.code, code, "chunk %zu: code %s, expected %s", chunks[i], r.code, code);
		cr_assert_str_eq(r.path, member, "chunk %zu: member \"%s\", expected \"%s\"", chunks[i], r.path,
				 member);
		cr_assert_eq(r.out.len, passed, "chunk %zu: %zu bytes passed on, expected %zu", chunks[i],
			     r.out.len, passed);
		cr_assert(passed == 0 || memcmp(r.out.p, b->p, passed) == 0, "chunk %zu: bytes changed", chunks[i]);
		free(r.out.p);
	}
	free(b->p);
}

Test(sandbox_tar, ustar_files_dirs_links_accepted)
{
	struct buf b = { 0 };

	header(&b, "proj/", '5', 0, NULL, false);
	file(&b, "proj/a.txt", "hello\n");
	file(&b, "./proj//b.bin", "\x00\x01\x02\xff");
	header(&b, "proj/sub/", '5', 0, NULL, false);
	header(&b, "proj/sub/up", '2', 0, "../a.txt", false);
	header(&b, "proj/sub/deep", '2', 0, "../../proj/sub", false);
	header(&b, "proj/sub/here", '2', 0, "x/y", false);
	header(&b, "proj/hard", '1', 0, "proj/a.txt", false);
	header(&b, "./", '5', 0, NULL, false);
	end(&b);
	accepted(&b);
}

Test(sandbox_tar, pax_and_gnu_long_names_accepted)
{
	struct buf b = { 0 };
	char name[300];

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memcpy(name, "dir/", 4);
	pax(&b, "path", name);
	file(&b, "short", "pax named");
	gnu_long(&b, 'L', name);
	file(&b, "short2", "gnu named");
	gnu_long(&b, 'K', "dir/target");
	header(&b, "dir/link", '2', 0, "ignored", true);
	/* a ustar prefix */
	{
		struct buf h = { 0 };

		header(&h, "leaf", '0', 0, NULL, false);
		memcpy(h.p + 345, "pre/fix", 7);
		memset(h.p + 148, ' ', 8);
		unsigned int sum = 0;
		for (size_t i = 0; i < 512; i++)
			sum += h.p[i];
		snprintf((char *)h.p + 148, 8, "%06o", sum);
		h.p[155] = ' ';
		put(&b, h.p, 512);
		free(h.p);
	}
	end(&b);
	accepted(&b);
}

Test(sandbox_tar, absolute_and_dotdot_refused)
{
	struct buf b = { 0 };

	file(&b, "ok", "x");
	file(&b, "/etc/passwd", "x");
	end(&b);
	refused(&b, "absolute-name", "/etc/passwd", 1024);

	memset(&b, 0, sizeof(b));
	file(&b, "a/../../b", "x");
	end(&b);
	refused(&b, "dotdot", "a/../../b", 0);

	memset(&b, 0, sizeof(b));
	file(&b, "..", "x");
	end(&b);
	refused(&b, "dotdot", "..", 0);
}

Test(sandbox_tar, pax_path_overrides_and_is_checked)
{
	struct buf b = { 0 };

	pax(&b, "path", "../evil");
	file(&b, "harmless", "x");
	end(&b);
	/* nothing passed: the held pax header goes with its refused member */
	refused(&b, "dotdot", "../evil", 0);

	memset(&b, 0, sizeof(b));
	pax(&b, "linkpath", "/etc/shadow");
	header(&b, "l", '2', 0, "fine", false);
	end(&b);
	refused(&b, "link-outside", "l", 0);
}

Test(sandbox_tar, symlinks_leaving_the_root_refused)
{
	struct buf b = { 0 };

	header(&b, "l", '2', 0, "/etc", false);
	end(&b);
	refused(&b, "link-outside", "l", 0);

	memset(&b, 0, sizeof(b));
	header(&b, "d/", '5', 0, NULL, false);
	header(&b, "d/l", '2', 0, "../..", false);
	end(&b);
	refused(&b, "link-outside", "d/l", 512);

	/* ".." after a descent: resolution may pass through another link */
	memset(&b, 0, sizeof(b));
	header(&b, "a/", '5', 0, NULL, false);
	header(&b, "a/l", '2', 0, ".", false);
	header(&b, "a/m", '2', 0, "l/l/l/../../..", false);
	end(&b);
	refused(&b, "link-outside", "a/m", 1024);
}

Test(sandbox_tar, members_under_a_symlink_refused)
{
	struct buf b = { 0 };

	header(&b, "l", '2', 0, "sub", false);
	file(&b, "./l/escape", "x");
	end(&b);
	refused(&b, "under-symlink", "./l/escape", 512);
}

Test(sandbox_tar, hard_links_outside_or_to_symlinks_refused)
{
	struct buf b = { 0 };

	header(&b, "h", '1', 0, "../outside", false);
	end(&b);
	refused(&b, "link-outside", "h", 0);

	memset(&b, 0, sizeof(b));
	header(&b, "h", '1', 0, "/etc/passwd", false);
	end(&b);
	refused(&b, "link-outside", "h", 0);

	memset(&b, 0, sizeof(b));
	header(&b, "d/", '5', 0, NULL, false);
	header(&b, "d/s", '2', 0, "../x", false);
	header(&b, "h", '1', 0, "d/s", false);
	end(&b);
	refused(&b, "link-outside", "h", 1024);
}

Test(sandbox_tar, devices_fifos_and_unknown_types_refused)
{
	struct buf b = { 0 };

	header(&b, "c", '3', 0, NULL, false);
	end(&b);
	refused(&b, "device", "c", 0);

	memset(&b, 0, sizeof(b));
	header(&b, "bd", '4', 0, NULL, false);
	end(&b);
	refused(&b, "device", "bd", 0);

	memset(&b, 0, sizeof(b));
	file(&b, "f", "ok");
	header(&b, "p", '6', 0, NULL, false);
	end(&b);
	refused(&b, "fifo", "p", 1024);

	memset(&b, 0, sizeof(b));
	header(&b, "s", 'S', 0, NULL, true);
	end(&b);
	refused(&b, "type", "s", 0);
}

Test(sandbox_tar, long_names_over_the_bound_refused)
{
	struct buf b = { 0 };
	char *name = malloc(FLASH_SANDBOX_TAR_NAME_MAX + 2);

	memset(name, 'x', FLASH_SANDBOX_TAR_NAME_MAX + 1);
	name[FLASH_SANDBOX_TAR_NAME_MAX + 1] = '\0';
	gnu_long(&b, 'L', name);
	file(&b, "x", "x");
	end(&b);
	refused(&b, "name-too-long", "", 0);

	memset(&b, 0, sizeof(b));
	pax(&b, "path", name);
	file(&b, "x", "x");
	end(&b);
	refused(&b, "name-too-long", "", 0);

	/* exactly at the bound: accepted */
	memset(&b, 0, sizeof(b));
	name[FLASH_SANDBOX_TAR_NAME_MAX] = '\0';
	gnu_long(&b, 'L', name);
	file(&b, "x", "x");
	end(&b);
	accepted(&b);
	free(name);
}

Test(sandbox_tar, truncated_archives_refused)
{
	struct buf b = { 0 };

	file(&b, "a", "0123456789");
	b.len -= 100;  /* inside the data: what came passed */
	refused(&b, "truncated", "", 924);

	memset(&b, 0, sizeof(b));
	file(&b, "a", "0123456789");
	put(&b, "partial", 7); /* inside a header */
	refused(&b, "truncated", "", 1024);

	memset(&b, 0, sizeof(b));
	file(&b, "a", "0123456789"); /* no end blocks */
	refused(&b, "truncated", "", 1024);

	memset(&b, 0, sizeof(b));
	pax(&b, "path", "p");
	end(&b);                     /* an extension without its member */
	refused(&b, "truncated", "", 0);

	memset(&b, 0, sizeof(b));     /* empty stream */
	refused(&b, "truncated", "", 0);
}

Test(sandbox_tar, bad_checksum_number_and_trailing_data_refused)
{
	struct buf b = { 0 };

	file(&b, "a", "x");
	b.p[0] = 'b'; /* name changed after the checksum */
	end(&b);
	refused(&b, "checksum", "", 0);

	memset(&b, 0, sizeof(b));
	header(&b, "a", '0', 0, NULL, false);
	memcpy(b.p + 124, "0000000009x", 11); /* not octal */
	{
		unsigned int sum = 0;

		memset(b.p + 148, ' ', 8);
		for (size_t i = 0; i < 512; i++)
			sum += b.p[i];
		snprintf((char *)b.p + 148, 8, "%06o", sum);
		b.p[155] = ' ';
	}
	end(&b);
	refused(&b, "bad-number", "", 0);

	memset(&b, 0, sizeof(b));
	file(&b, "a", "x");
	end(&b);
	put(&b, "junk", 4);
	refused(&b, "trailing-data", "", 2048);

	memset(&b, 0, sizeof(b)); /* zero padding after the end is fine, and not passed on */
	file(&b, "a", "x");
	end(&b);
	{
		struct buf padded = { 0 };
		unsigned char zero[4096] = { 0 };
		struct run r;

		put(&padded, b.p, b.len);
		put(&padded, zero, sizeof(zero));
		r = check(&padded, 0);
		cr_assert_eq(r.feed, 0);
		cr_assert_eq(r.finish, 0);
		cr_assert_eq(r.out.len, b.len, "%zu bytes out", r.out.len);
		free(r.out.p);
		free(padded.p);
	}
	free(b.p);
}

Test(sandbox_tar, null_sink_discards)
{
	struct flash_sandbox_tar *t = NULL;
	struct buf b = { 0 };
	int r;

	file(&b, "a", "x");
	end(&b);
	ASSERT_OK(flash_sandbox_tar_new(&t), "tar_new");
	r = flash_sandbox_tar_feed(t, b.p, b.len, NULL, NULL, NULL);
	cr_assert_eq(r, 0, "a NULL sink discards: %d", r);
	cr_assert_eq(flash_sandbox_tar_members(t), 1);
	flash_sandbox_tar_free(t);
	free(b.p);
}

static int failing_sink(const void *d, size_t n, void *userdata)
{
	(void)d;
	(void)n;
	(void)userdata;
	return -EPIPE;
}

Test(sandbox_tar, failing_sink_returned_and_sticky)
{
	struct flash_sandbox_tar *t = NULL;
	struct buf b = { 0 };

	file(&b, "a", "x");
	end(&b);
	ASSERT_OK(flash_sandbox_tar_new(&t), "tar_new");
	ASSERT_ERR(flash_sandbox_tar_feed(t, b.p, b.len, failing_sink, NULL, NULL), -EPIPE, "feed");
	ASSERT_ERR(flash_sandbox_tar_feed(t, b.p, 1, sink, NULL, NULL), -EPIPE, "feed after failure");
	ASSERT_ERR(flash_sandbox_tar_finish(t, NULL), -EPIPE, "finish after failure");
	flash_sandbox_tar_free(t);
	free(b.p);
}

/* BusyBox ignores pax size: with size=1024 before a size-0 file the
 * checker would skip two blocks as data that BusyBox reads as headers. */
Test(sandbox_tar, pax_size_refused)
{
	struct buf b = { 0 };

	pax(&b, "size", "1024");
	header(&b, "f", '0', 0, NULL, false);
	header(&b, "dev", '3', 0, NULL, false);
	header(&b, "../escape", '0', 0, NULL, false);
	end(&b);
	dump(&b, "bypass-pax-size.tar");
	refused(&b, "pax-key", "f", 0);

	/* the same after an accepted member: it goes, the rest does not */
	memset(&b, 0, sizeof(b));
	file(&b, "ok", "x");
	pax(&b, "size", "0");
	file(&b, "g", "y");
	end(&b);
	refused(&b, "pax-key", "g", 1024);
}

/* GNU tar gives pax path/linkpath priority over GNU L/K, BusyBox takes
 * the last: a member with both is refused, whichever comes first. */
Test(sandbox_tar, pax_path_with_gnu_long_name_refused)
{
	struct buf b = { 0 };
	static const char *const kv[] = { "path", "realname", "linkpath", "/outside", NULL };

	pax_multi(&b, kv);
	gnu_long(&b, 'L', "checkername");
	gnu_long(&b, 'K', "ok");
	header(&b, "checkername", '2', 0, "ok", true);
	end(&b);
	dump(&b, "bypass-pax-gnu-long.tar");
	refused(&b, "ext-conflict", "checkername", 0);

	memset(&b, 0, sizeof(b));
	gnu_long(&b, 'L', "a");
	pax(&b, "path", "b");
	file(&b, "a", "x");
	end(&b);
	refused(&b, "ext-conflict", "a", 0);

	/* two long names, two pax headers: refused too */
	memset(&b, 0, sizeof(b));
	gnu_long(&b, 'L', "a");
	gnu_long(&b, 'L', "b");
	file(&b, "a", "x");
	end(&b);
	refused(&b, "gnu-long", "a", 0);

	memset(&b, 0, sizeof(b));
	pax(&b, "path", "a");
	pax(&b, "path", "b");
	file(&b, "a", "x");
	end(&b);
	refused(&b, "pax", "a", 0);

	memset(&b, 0, sizeof(b));
	{
		static const char *const twice[] = { "path", "a", "path", "b", NULL };

		pax_multi(&b, twice);
	}
	file(&b, "a", "x");
	end(&b);
	refused(&b, "pax-key", "a", 0);
}

/* GNU tar renames a member by GNU.sparse.name and reframes it by the
 * other GNU.sparse.* keys; BusyBox ignores them. */
Test(sandbox_tar, gnu_sparse_keys_and_members_refused)
{
	struct buf b = { 0 };
	static const char *const kv[] = {
		"GNU.sparse.major", "1", "GNU.sparse.minor", "0",
		"GNU.sparse.name", "../../etc/cron.d/x", "GNU.sparse.realsize", "4", NULL
	};

	pax_multi(&b, kv);
	file(&b, "GNUSparseFile.0/harmless", "data");
	end(&b);
	dump(&b, "bypass-gnu-sparse-name.tar");
	refused(&b, "pax-key", "GNUSparseFile.0/harmless", 0);

	memset(&b, 0, sizeof(b));
	header(&b, "vol", 'M', 0, NULL, true);
	end(&b);
	refused(&b, "type", "vol", 0);

	memset(&b, 0, sizeof(b));
	header(&b, "label", 'V', 0, NULL, true);
	end(&b);
	refused(&b, "type", "label", 0);

	/* keys outside the allow-list, a global header setting path */
	memset(&b, 0, sizeof(b));
	pax(&b, "hdrcharset", "BINARY");
	file(&b, "h", "x");
	end(&b);
	refused(&b, "pax-key", "h", 0);

	memset(&b, 0, sizeof(b));
	pax(&b, " path", "x"); /* GNU tar skips the extra space, BusyBox does not */
	file(&b, "h", "x");
	end(&b);
	refused(&b, "pax-key", "h", 0);

	/* the allowed keys still pass */
	memset(&b, 0, sizeof(b));
	{
		static const char *const ok[] = {
			"mtime", "1700000000.5", "atime", "1", "ctime", "2", "uid", "0", "gid", "0",
			"uname", "root", "gname", "root", "comment", "hi", "charset", "ISO-IR 10646 2000 UTF-8",
			"path", "p", "linkpath", "q", NULL
		};

		pax_multi(&b, ok);
	}
	file(&b, "p", "x");
	end(&b);
	accepted(&b);
}

/* BusyBox joins the prefix field to the name under the old-GNU magic too;
 * GNU tar does not. */
Test(sandbox_tar, prefix_without_posix_magic_refused)
{
	struct buf b = { 0 };

	header(&b, "leaf", '0', 0, NULL, true);
	memcpy(b.p + 345, "../../etc", 9);
	resum(b.p);
	end(&b);
	dump(&b, "bypass-oldgnu-prefix.tar");
	refused(&b, "prefix", "leaf", 0);
}

/* Headers the extractors could read apart from the checker: an empty name
 * field (BusyBox takes it for an end block unless a long name is
 * pending), sizes on directories and links, a regular file
 * named like a directory, base-256 lead bytes GNU tar refuses, an
 * unterminated or signed-only checksum, a blank size. */
Test(sandbox_tar, header_ambiguities_refused)
{
	struct buf b = { 0 };

	gnu_long(&b, 'L', "named");
	header(&b, "x", '0', 1024, NULL, true);
	b.p[b.len - 512] = '\0';
	resum(b.p + b.len - 512);
	{
		unsigned char dots[1024];

		memset(dots, '.', sizeof(dots));
		data(&b, dots, sizeof(dots));
	}
	end(&b);
	dump(&b, "ambiguous-empty-name.tar");
	refused(&b, "empty-name", "named", 0);

	memset(&b, 0, sizeof(b));
	header(&b, "d/", '5', 1024, NULL, false);
	put(&b, (unsigned char[1024]){ 0 }, 1024);
	end(&b);
	refused(&b, "size", "d/", 0);

	memset(&b, 0, sizeof(b));
	/* GNU tar skips a symlink's data, BusyBox reads it as a header */
	header(&b, "l", '2', 512, "t", false);
	header(&b, "dev", '3', 0, NULL, false);
	end(&b);
	dump(&b, "bypass-symlink-size.tar");
	refused(&b, "size", "l", 0);

	memset(&b, 0, sizeof(b));
	file(&b, "f/", "x");
	end(&b);
	refused(&b, "type", "f/", 0);

	/* base-256 with a lead byte other than 0x80 */
	memset(&b, 0, sizeof(b));
	header(&b, "f", '0', 0, NULL, true);
	memset(b.p + 124, 0, 12);
	b.p[124] = 0x81;
	resum(b.p);
	end(&b);
	refused(&b, "bad-number", "", 0);

	/* base-256 with 0x80: accepted */
	memset(&b, 0, sizeof(b));
	header(&b, "f", '0', 0, NULL, true);
	memset(b.p + 124, 0, 12);
	b.p[124] = 0x80;
	b.p[135] = 3;
	resum(b.p);
	data(&b, "abc", 3);
	end(&b);
	accepted(&b);

	/* a blank size field */
	memset(&b, 0, sizeof(b));
	header(&b, "f", '0', 0, NULL, false);
	memset(b.p + 124, ' ', 12);
	resum(b.p);
	end(&b);
	refused(&b, "bad-number", "", 0);

	/* a checksum right only signed */
	memset(&b, 0, sizeof(b));
	header(&b, "f\xe9", '0', 0, NULL, false);
	{
		int sum = 0;

		memset(b.p + 148, ' ', 8);
		for (size_t i = 0; i < 512; i++)
			sum += (signed char)b.p[i];
		snprintf((char *)b.p + 148, 8, "%06o", sum);
		b.p[155] = ' ';
	}
	end(&b);
	refused(&b, "checksum", "", 0);

	/* a checksum of eight digits: BusyBox's strtoul reads on */
	memset(&b, 0, sizeof(b));
	header(&b, "f", '0', 0, NULL, false);
	{
		unsigned int sum = 0;

		memset(b.p + 148, ' ', 8);
		for (size_t i = 0; i < 512; i++)
			sum += b.p[i];
		/* eight digits: the spaces counted are the same */
		snprintf((char *)b.p + 148, 9, "%08o", sum);
		b.p[156] = '0';
	}
	end(&b);
	refused(&b, "checksum", "", 0);
}
