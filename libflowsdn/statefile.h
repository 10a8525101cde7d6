/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private: the binary container of libflowsdn's persisted state (IPAM,
 * identities), its little-endian encoder/decoder and the lock file.
 *
 * File layout (all integers little-endian, whatever the host):
 *   magic[8] | u32 version | u32 zero | u64 payload_len | payload | u32 crc32c
 * The CRC32C (Castagnoli) covers every byte before it.  A file is written
 * whole with util_write_file_atomic() (temp + fsync + rename + dir fsync),
 * so a reader sees either the previous or the next complete file; a file
 * that does not verify was damaged outside the library and is refused
 * (never rewritten) so that the operator can inspect it.
 */
#ifndef FLOWSDN_STATEFILE_H
#define FLOWSDN_STATEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATEFILE_MAGIC_LEN 8
#define STATEFILE_HEADER_LEN 24
#define STATEFILE_TRAILER_LEN 4

/* Growable little-endian encoder.  A failed allocation is remembered in
 * @err (-ENOMEM) and later puts do nothing. */
struct sbuf {
	uint8_t *data;
	size_t len, cap;
	int err;
};

void sbuf_put(struct sbuf *b, const void *p, size_t n);
void sbuf_u8(struct sbuf *b, uint8_t v);
void sbuf_u16(struct sbuf *b, uint16_t v);
void sbuf_u32(struct sbuf *b, uint32_t v);
void sbuf_u64(struct sbuf *b, uint64_t v);
void sbuf_done(struct sbuf *b);

/* Bounds-checked decoder: reading past the end sets @bad and yields zeros. */
struct sreader {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

bool sreader_get(struct sreader *r, void *out, size_t n);
uint8_t sreader_u8(struct sreader *r);
uint16_t sreader_u16(struct sreader *r);
uint32_t sreader_u32(struct sreader *r);
uint64_t sreader_u64(struct sreader *r);

uint32_t statefile_crc32c(uint32_t crc, const void *data, size_t len);

/* Writes @payload wrapped in the container to @path crash-safely. */
int statefile_write(const char *path, const char magic[STATEFILE_MAGIC_LEN], uint32_t version,
		    const void *payload, size_t len);

/* Reads and verifies @path.  On success *ret_data (malloc'd, freed by the
 * caller) holds the whole file and *ret_payload and *ret_len point at the
 * payload inside it, *ret_version its version.
 * -ENOENT: no file; -EFBIG: larger than @max; -EBADMSG: truncated, wrong
 * magic, length or checksum; -EPROTONOSUPPORT: version above
 * @max_version; other -errno from reading. */
int statefile_read(const char *path, const char magic[STATEFILE_MAGIC_LEN], uint32_t max_version,
		   size_t max, char **ret_data, const uint8_t **ret_payload, size_t *ret_len,
		   uint32_t *ret_version);

/* Removes the temporary files "<base>.tmp.XXXXXX" that a writer killed before
 * its rename left in @dir.  Only call while holding the exclusive lock
 * that every writer holds. */
void statefile_remove_stale_temps(const char *dir, const char *base);

/* Creates @dir (mode 0700) when missing; -ENOTDIR when it is not one. */
int statefile_ensure_dir(const char *dir);

/* Opens (creating, mode 0600) the lock file @path, O_CLOEXEC. */
int statefile_lock_open(const char *path);

/* flock() @fd: @exclusive or shared, waiting unless @nonblock (then
 * -EWOULDBLOCK).  Retries on EINTR. */
int statefile_lock(int fd, bool exclusive, bool nonblock);
void statefile_unlock(int fd);

#endif
