/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private to the image module: the parsers of outside input (references,
 * WWW-Authenticate challenges, media types, manifests, indexes, configs),
 * the digest-checking sink every fetched byte goes through, and the two
 * sources (registry, OCI layout) behind one interface.
 */
#ifndef FLASH_IMAGE_INTERNAL_H
#define FLASH_IMAGE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sodium.h>
#include <flash/image.h>

/* ---------------------------------------------------------------- parsers */

/* Every failure of the module says why in a caller's buffer (@why may be
 * NULL or @size 0: nothing written). */
void image_why(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "sha256:" + 64 lowercase hex: libflash's one OCI digest rule (admission
 * and the renderer's image pinning both check with it). */
#define IMAGE_DIGEST_LEN (7 + 64)
bool image_digest_valid(const char *s);

struct image_ref {
	bool layout;        /* "oci:DIR[:tag]" */
	char *dir;          /* layout directory */
	char *host;         /* registry "host[:port]" as written ("docker.io" for Docker Hub) */
	char *api_host;     /* host the API is served on ("registry-1.docker.io" for docker.io) */
	char *repo;         /* "library/busybox" */
	char *tag;          /* NULL when absent */
	char *digest;       /* NULL when absent */
};
/* Parses @s; -FLASH_E_IMAGE_REFERENCE with a message in @why (>= 160
 * bytes) naming the fault.  A registry reference without tag or digest gets
 * tag "latest". */
int image_ref_parse(const char *s, struct image_ref *ret, char *why, size_t why_size);
void image_ref_clear(struct image_ref *r);

enum image_auth_scheme {
	IMAGE_AUTH_OTHER = 0,
	IMAGE_AUTH_BASIC,
	IMAGE_AUTH_BEARER,
};
#define IMAGE_CHALLENGE_PARAM_MAX 1024
struct image_challenge {
	enum image_auth_scheme scheme;
	char realm[IMAGE_CHALLENGE_PARAM_MAX];
	char service[IMAGE_CHALLENGE_PARAM_MAX];
	char scope[IMAGE_CHALLENGE_PARAM_MAX];
	char error[128];
};
/* Longest WWW-Authenticate value parsed. */
#define IMAGE_CHALLENGE_MAX 4096
/* Parses one WWW-Authenticate value (RFC 9110 §11.6.1: one or more
 * challenges of auth-params; token68 forms are refused) and
 * returns the most useful challenge: Bearer, else Basic.  Strict: a
 * malformed value, a control character, a duplicate or empty realm, a
 * known scheme without realm, or a parameter longer than its buffer gives
 * -FLASH_E_IMAGE_CHALLENGE with @why filled; no known scheme gives
 * -FLASH_E_IMAGE_UNAUTHORIZED. */
int image_challenge_parse(const char *s, size_t len, struct image_challenge *ret, char *why, size_t why_size);

/* Longest bearer token accepted from a token service. */
#define IMAGE_TOKEN_MAX (16 * 1024)
/* Reads a token service's answer (the Docker token protocol: a JSON
 * object with "token" or, failing that, "access_token"), @len bytes at
 * @text: 0 and the token in *ret_token (malloc'd; the caller wipes it
 * before freeing it), or -FLASH_E_IMAGE_CHALLENGE (@why filled) when the
 * answer is not such an object or its token is empty, longer than
 * IMAGE_TOKEN_MAX or holds a byte outside the RFC 6750 b64token set;
 * -ENOMEM.  *ret_token is untouched on failure. */
int image_token_reply_parse(const char *text, size_t len, char **ret_token, char *why, size_t why_size);

enum image_media {
	IMAGE_MEDIA_UNKNOWN = 0,
	IMAGE_MEDIA_OCI_MANIFEST,
	IMAGE_MEDIA_OCI_INDEX,
	IMAGE_MEDIA_DOCKER_MANIFEST,
	IMAGE_MEDIA_DOCKER_LIST,
	IMAGE_MEDIA_OCI_CONFIG,
	IMAGE_MEDIA_DOCKER_CONFIG,
	IMAGE_MEDIA_LAYER_TAR,       /* OCI tar */
	IMAGE_MEDIA_LAYER_GZIP,      /* OCI tar+gzip, Docker rootfs.diff.tar.gzip */
	IMAGE_MEDIA_LAYER_ZSTD,      /* OCI tar+zstd */
	IMAGE_MEDIA_LAYER_FOREIGN,   /* non-distributable / foreign layers */
};
/* The media type named by a Content-Type value or mediaType field
 * (parameters after ';' ignored, case-insensitive). */
enum image_media image_media_parse(const char *s, size_t len);
const char *image_media_name(enum image_media m);
bool image_media_is_manifest(enum image_media m);
bool image_media_is_index(enum image_media m);
/* The Accept header value: the four manifest types. */
extern const char image_accept_manifests[];

struct image_desc {
	enum image_media media;
	char digest[IMAGE_DIGEST_LEN + 1];
	uint64_t size;
};

/* Largest size a descriptor may declare (1 TiB). */
#define IMAGE_DESC_SIZE_MAX (UINT64_C(1) << 40)

struct image_manifest {
	struct image_desc config;
	struct image_desc *layers;
	size_t n_layers;
};
/* Parses manifest @text (Content-Type @media) strictly: schemaVersion 2, a
 * mediaType field (if any) equal to @media, descriptors with sha256 digests
 * and bounded sizes, accepted config and layer media types.  Returns 0,
 * -ENOMEM, -FLASH_E_IMAGE_MANIFEST / _MEDIA_TYPE with @why filled. */
int image_manifest_parse(const char *text, size_t len, enum image_media media, struct image_manifest *ret,
			 char *why, size_t why_size);
void image_manifest_clear(struct image_manifest *m);

/* Selects from index @text the manifest for @platform ("os/arch[/variant]")
 * or, with @tag set (OCI layouts), the entry annotated
 * org.opencontainers.image.ref.name=@tag (any platform; "" selects the only
 * entry).  Returns 0 and *ret, -FLASH_E_IMAGE_PLATFORM (none; @why lists
 * what there is), -FLASH_E_IMAGE_MANIFEST / _MEDIA_TYPE, -ENOMEM. */
int image_index_select(const char *text, size_t len, enum image_media media, const char *platform,
		       const char *tag, struct image_desc *ret, char *why, size_t why_size);

/* Checks that config @text names @platform's os and architecture. */
int image_config_check(const char *text, size_t len, const char *platform, char *why, size_t why_size);

/* ---------------------------------------------------------------- sink */

/* Where fetched bytes go: a bounded memory buffer or a file, hashed on
 * the way.  @limit is the most bytes accepted. */
struct image_sink {
	int fd;                 /* -1: memory */
	char *buf;
	size_t len;
	uint64_t written;
	uint64_t limit;
	bool overflow;
	int err;                /* -errno of a failed write */
	crypto_hash_sha256_state sha;
};
void image_sink_init(struct image_sink *s, int fd, uint64_t limit);
/* Returns false (and stops the transfer) on overflow or error. */
bool image_sink_write(struct image_sink *s, const void *data, size_t n);
/* "sha256:HEX" of what was written, into @out (IMAGE_DIGEST_LEN + 1). */
void image_sink_digest(struct image_sink *s, char *out);
void image_sink_clear(struct image_sink *s);
/* sha256 of a buffer as "sha256:HEX". */
void image_sha256(const void *data, size_t len, char *out);

/* ---------------------------------------------------------------- sources */

struct image_registry;

int image_registry_new(const struct image_ref *ref, const struct flash_image_opts *opts,
		       struct image_registry **ret);
void image_registry_free(struct image_registry *r);
/* Sets the deadline of the next operation (monotonic ms). */
void image_registry_set_deadline(struct image_registry *r, uint64_t deadline_ms);
/* GET /v2/REPO/manifests/@ref into @sink (bounded by FLASH_IMAGE_MANIFEST_MAX);
 * *ret_media is the checked Content-Type, @ret_digest (may be NULL) the
 * Docker-Content-Digest header ("" when absent). */
int image_registry_manifest(struct image_registry *r, const char *ref, struct image_sink *sink,
			    enum image_media *ret_media, char *ret_digest, char *why, size_t why_size);
/* GET /v2/REPO/blobs/DIGEST into @sink. */
int image_registry_blob(struct image_registry *r, const char *digest, struct image_sink *sink, char *why,
			size_t why_size);

/* Monotonic clock in ms. */
uint64_t image_now_ms(void);

/* ---------------------------------------------------------------- unpack */

struct diag;
/* What is left of the bounds of struct flash_image_unpack_opts
 * (UINT64_MAX: none), spent by each layer. */
struct image_budget {
	uint64_t bytes;
	uint64_t entries;
};
void image_budget_init(struct image_budget *b, const struct flash_image_unpack_opts *opts);
/* flash_image_layer_unpack() adding to @diag (not refilling it). */
int image_layer_unpack(const char *layer_path, const char *rootfs, struct image_budget *budget, struct diag *diag);

/* Removes @path below @dirfd, recursively, never following a symlink. */
int image_remove_tree_at(int dirfd, const char *name);

#endif
