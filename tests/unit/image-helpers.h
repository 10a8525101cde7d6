/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Building tar layers and OCI layouts for the image tests (libarchive,
 * libsodium for the digests). */
#ifndef FLASH_TESTS_IMAGE_HELPERS_H
#define FLASH_TESTS_IMAGE_HELPERS_H

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

/* One tar entry: type 'f' file, 'd' dir, 'l' symlink (data = target),
 * 'h' hard link (data = target), 'c' character device. */
struct tar_item {
	char type;
	const char *path;
	const char *data;
	unsigned int mode;
};

/* Writes @items as a tar (gzip'ed when @gzip) to @path. */
static inline void tar_write(const char *path, const struct tar_item *items, size_t n, bool gzip)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();

	cr_assert(a && e);
	cr_assert(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
	if (gzip)
		cr_assert(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
	cr_assert(archive_write_open_filename(a, path) == ARCHIVE_OK, "open %s: %s", path, archive_error_string(a));
	for (size_t i = 0; i < n; i++) {
		const struct tar_item *it = &items[i];
		size_t len = it->type == 'f' && it->data ? strlen(it->data) : 0;

		archive_entry_clear(e);
		archive_entry_set_pathname(e, it->path);
		archive_entry_set_mtime(e, 1700000000, 0);
		switch (it->type) {
		case 'f':
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, it->mode ? it->mode : 0644);
			archive_entry_set_size(e, (la_int64_t)len);
			break;
		case 'd':
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_perm(e, it->mode ? it->mode : 0755);
			break;
		case 'l':
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_perm(e, 0777);
			archive_entry_set_symlink(e, it->data);
			break;
		case 'h':
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_hardlink(e, it->data);
			break;
		case 'c':
			archive_entry_set_filetype(e, AE_IFCHR);
			archive_entry_set_perm(e, 0666);
			archive_entry_set_rdevmajor(e, 1);
			archive_entry_set_rdevminor(e, 3);
			break;
		}
		cr_assert(archive_write_header(a, e) == ARCHIVE_OK, "tar header %s: %s", it->path,
			  archive_error_string(a));
		if (len)
			cr_assert(archive_write_data(a, it->data, len) == (la_ssize_t)len);
	}
	archive_entry_free(e);
	cr_assert(archive_write_close(a) == ARCHIVE_OK);
	archive_write_free(a);
}

static inline void sha256_hex(const void *data, size_t len, char out[72])
{
	unsigned char h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, data, len);
	strcpy(out, "sha256:");
	for (size_t i = 0; i < sizeof(h); i++)
		sprintf(out + 7 + 2 * i, "%02x", h[i]);
}

static inline char *file_slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert(f, "open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*ret_len = (size_t)n;
	return buf;
}

static inline void file_put(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	cr_assert(f, "create %s", path);
	cr_assert(fwrite(data, 1, len, f) == len);
	cr_assert(fclose(f) == 0);
}

/* Stores @data as a blob of layout @dir; its digest into @digest. */
static inline void layout_blob(const char *dir, const void *data, size_t len, char digest[72])
{
	char path[PATH_MAX * 2];

	sha256_hex(data, len, digest);
	snprintf(path, sizeof(path), "%s/blobs/sha256/%s", dir, digest + 7);
	file_put(path, data, len);
}

static inline void layout_init(const char *dir)
{
	char path[PATH_MAX * 2];
	static const char marker[] = "{\"imageLayoutVersion\":\"1.0.0\"}";

	snprintf(path, sizeof(path), "mkdir -p '%s/blobs/sha256'", dir);
	cr_assert(system(path) == 0);
	snprintf(path, sizeof(path), "%s/oci-layout", dir);
	file_put(path, marker, strlen(marker));
}

static inline int file_exists(const char *dir, const char *rel)
{
	char path[PATH_MAX * 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return lstat(path, &st) == 0;
}

static inline char *test_tmpdir(const char *tag)
{
	char *d;

	cr_assert(asprintf(&d, "%s/flash-%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tag) > 0);
	cr_assert(mkdtemp(d), "mkdtemp %s", d);
	return d;
}

static inline void rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)system(cmd);
}

#endif
