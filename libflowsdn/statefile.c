/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The binary state container shared by IPAM and identities: encoding,
 * CRC32C, crash-safe write, verified read, lock file. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "internal.h"
#include "statefile.h"

void sbuf_put(struct sbuf *b, const void *p, size_t n)
{
	if (b->err || n == 0)
		return;
	if (n > SIZE_MAX / 2 - b->len) {
		b->err = -ENOMEM;
		return;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *nd;

		while (cap < b->len + n)
			cap *= 2;
		nd = realloc(b->data, cap);
		if (!nd) {
			b->err = -ENOMEM;
			return;
		}
		b->data = nd;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void sbuf_u8(struct sbuf *b, uint8_t v)
{
	sbuf_put(b, &v, 1);
}

void sbuf_u16(struct sbuf *b, uint16_t v)
{
	uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	sbuf_put(b, x, sizeof(x));
}

void sbuf_u32(struct sbuf *b, uint32_t v)
{
	uint8_t x[4];

	for (int i = 0; i < 4; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	sbuf_put(b, x, sizeof(x));
}

void sbuf_u64(struct sbuf *b, uint64_t v)
{
	uint8_t x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	sbuf_put(b, x, sizeof(x));
}

void sbuf_done(struct sbuf *b)
{
	free(b->data);
	*b = (struct sbuf){ 0 };
}

bool sreader_get(struct sreader *r, void *out, size_t n)
{
	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		memset(out, 0, n);
		return false;
	}
	memcpy(out, r->p + r->off, n);
	r->off += n;
	return true;
}

uint8_t sreader_u8(struct sreader *r)
{
	uint8_t v;

	sreader_get(r, &v, 1);
	return v;
}

uint16_t sreader_u16(struct sreader *r)
{
	uint8_t x[2];

	sreader_get(r, x, sizeof(x));
	return (uint16_t)(x[0] | x[1] << 8);
}

uint32_t sreader_u32(struct sreader *r)
{
	uint8_t x[4];
	uint32_t v = 0;

	sreader_get(r, x, sizeof(x));
	for (int i = 3; i >= 0; i--)
		v = v << 8 | x[i];
	return v;
}

uint64_t sreader_u64(struct sreader *r)
{
	uint8_t x[8];
	uint64_t v = 0;

	sreader_get(r, x, sizeof(x));
	for (int i = 7; i >= 0; i--)
		v = v << 8 | x[i];
	return v;
}

/* CRC32C, reflected polynomial 0x82F63B78, bitwise table built once. */
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t statefile_crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	for (size_t i = 0; i < len; i++)
		crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

int statefile_write(const char *path, const char magic[STATEFILE_MAGIC_LEN], uint32_t version,
		    const void *payload, size_t len)
{
	struct sbuf b = { 0 };
	int r;

	sbuf_put(&b, magic, STATEFILE_MAGIC_LEN);
	sbuf_u32(&b, version);
	sbuf_u32(&b, 0);
	sbuf_u64(&b, len);
	sbuf_put(&b, payload, len);
	if (!b.err)
		sbuf_u32(&b, statefile_crc32c(0, b.data, b.len));
	r = b.err ? b.err : util_write_file_atomic(path, b.data, b.len, 0600);
	sbuf_done(&b);
	return r;
}

int statefile_read(const char *path, const char magic[STATEFILE_MAGIC_LEN], uint32_t max_version,
		   size_t max, char **ret_data, const uint8_t **ret_payload, size_t *ret_len,
		   uint32_t *ret_version)
{
	_cleanup_free_ char *data = NULL;
	struct sreader rd;
	uint8_t m[STATEFILE_MAGIC_LEN];
	uint32_t version, crc;
	uint64_t plen;
	size_t size;
	int r;

	r = util_read_file(path, max, &data, &size);
	if (r < 0)
		return r;
	rd = (struct sreader){ .p = (const uint8_t *)data, .len = size };
	if (size < STATEFILE_HEADER_LEN + STATEFILE_TRAILER_LEN)
		return -EBADMSG;
	sreader_get(&rd, m, sizeof(m));
	if (memcmp(m, magic, sizeof(m)) != 0)
		return -EBADMSG;
	version = sreader_u32(&rd);
	(void)sreader_u32(&rd);
	plen = sreader_u64(&rd);
	if (plen != size - STATEFILE_HEADER_LEN - STATEFILE_TRAILER_LEN)
		return -EBADMSG;
	rd.off = size - STATEFILE_TRAILER_LEN;
	crc = sreader_u32(&rd);
	if (crc != statefile_crc32c(0, data, size - STATEFILE_TRAILER_LEN))
		return -EBADMSG;
	/* Checked after the checksum: a damaged version field is corruption,
	 * a verified higher one is a newer writer. */
	if (version == 0)
		return -EBADMSG;
	if (version > max_version)
		return -EPROTONOSUPPORT;
	*ret_payload = (const uint8_t *)data + STATEFILE_HEADER_LEN;
	*ret_len = (size_t)plen;
	*ret_version = version;
	*ret_data = TAKE_PTR(data);
	return 0;
}

void statefile_remove_stale_temps(const char *dir, const char *base)
{
	_cleanup_free_ char *prefix = NULL;
	DIR *d;
	struct dirent *de;
	size_t plen;
	int dfd;

	if (asprintf(&prefix, "%s.tmp.", base) < 0) {
		prefix = NULL;
		return;
	}
	plen = strlen(prefix);
	d = opendir(dir);
	if (!d)
		return;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, plen) != 0)
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			pr_debug("removed stale temporary state file %s/%s", dir, de->d_name);
	}
	closedir(d);
}

int statefile_ensure_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (stat(dir, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int statefile_lock_open(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);

	return fd < 0 ? -errno : fd;
}

int statefile_lock(int fd, bool exclusive, bool nonblock)
{
	int op = (exclusive ? LOCK_EX : LOCK_SH) | (nonblock ? LOCK_NB : 0);

	while (flock(fd, op) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

void statefile_unlock(int fd)
{
	(void)flock(fd, LOCK_UN);
}
