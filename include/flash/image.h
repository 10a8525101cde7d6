/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/image.h> — image admission (SPEC §3.5): resolving an image
 * reference through the OCI distribution API or a local OCI layout,
 * charging its size against a disk limit, pulling its blobs into a content
 * store and unpacking its layers into a root filesystem.
 *
 * Everything read from a registry or a layout is hostile input: every
 * manifest and blob is checked against the sha256 of its descriptor (and
 * against Docker-Content-Digest), documents are size-bounded, Content-Type
 * must be one of the four manifest media types, and layer entries are
 * extracted with libarchive's secure-extraction flags.
 *
 * A struct flash_image is used by one thread at a time; any number of
 * images (in any number of threads or processes) may pull into one
 * content store at once: each blob is fetched once, under a per-blob lock.
 */
#ifndef FLASH_IMAGE_H
#define FLASH_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/common.h>
#include <flash/diag.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Domain errors of the image module (block FLASH_E_BASE + 500). */
enum {
	FLASH_E_IMAGE_BASE = FLASH_E_BASE + 500,
	FLASH_E_IMAGE_REFERENCE = FLASH_E_IMAGE_BASE, /* malformed image reference */
	FLASH_E_IMAGE_NOT_FOUND,      /* no such repository, tag, manifest or blob */
	FLASH_E_IMAGE_UNAUTHORIZED,   /* credentials missing or refused */
	FLASH_E_IMAGE_CHALLENGE,      /* malformed WWW-Authenticate challenge or token answer */
	FLASH_E_IMAGE_MEDIA_TYPE,     /* Content-Type or mediaType not accepted */
	FLASH_E_IMAGE_DIGEST,         /* content does not match its sha256 digest */
	FLASH_E_IMAGE_SIZE,           /* content larger than its bound or its descriptor */
	FLASH_E_IMAGE_MANIFEST,       /* malformed manifest, index or config */
	FLASH_E_IMAGE_PLATFORM,       /* no manifest for the requested platform */
	FLASH_E_IMAGE_REGISTRY,       /* unexpected registry answer (status, redirect) */
	FLASH_E_IMAGE_TRANSPORT,      /* connection, TLS or timeout failure */
	FLASH_E_IMAGE_LAYOUT,         /* malformed local OCI layout */
	FLASH_E_IMAGE_UNSAFE_ENTRY,   /* a layer entry refused by secure extraction */
	FLASH_E_IMAGE_TOO_LARGE,      /* admission: the image fills or exceeds the disk limit */
	FLASH_E_IMAGE_MAX_,           /* end of the block (not an error) */
};

/* Largest manifest or index accepted (bytes). */
#define FLASH_IMAGE_MANIFEST_MAX (4u * 1024 * 1024)
/* Largest image config blob accepted (bytes). */
#define FLASH_IMAGE_CONFIG_MAX (8u * 1024 * 1024)
/* Most layers in one manifest. */
#define FLASH_IMAGE_LAYERS_MAX 256

/* The credentials of one registry (flash_image_opts.credentials). */
struct flash_image_credential {
	const char *registry;      /* "host[:port]" as a reference writes it ("docker.io") */
	const char *username;
	const char *password;
};

struct flash_image_opts {
	size_t sz;
	const char *content_store; /* blob store directory (made, mode 0700, if missing; its parent
	                            * must exist); NULL: resolve only, pull nothing */
	const char *ca_file;       /* PEM CA bundle for TLS; NULL: system CAs */
	const char *username;      /* basic auth or token-service credentials; NULL: anonymous */
	const char *password;
	const char *platform;      /* "os/arch[/variant]"; NULL: "linux/amd64" */
	bool plain_http;           /* allow http:// (loopback test registries) */
	unsigned int timeout_ms;   /* whole operation; 0: 30000 */
	/* Per-registry credentials: the entry whose registry is the
	 * reference's host[:port] (compared case-insensitively) is used
	 * instead of username/password; none listed: username/password. */
	const struct flash_image_credential *credentials;
	size_t n_credentials;
};

struct flash_image;

/*
 * Resolves @reference to one image manifest for opts->platform:
 *   "host[:port]/repo[:tag][@sha256:HEX]"  a registry (https unless
 *                                          opts->plain_http); a reference
 *                                          without a host means docker.io
 *   "oci:DIR[:tag]"                        a local OCI image layout; the
 *                                          tag may be left out when the
 *                                          layout holds one image
 * An image index (or Docker manifest list) is followed to the manifest of
 * the platform.  The sha256 of every manifest fetched and of the config blob
 * is checked against its descriptor (and, for a digest reference, against
 * the reference); the config's os/architecture must match the platform.
 * Authentication follows the registry's WWW-Authenticate challenge (Basic,
 * or Bearer through its token service) with the credentials of the
 * reference's registry in opts->credentials, else opts->username/password.
 * Redirects are followed (at most 5); Authorization is only ever sent to the
 * registry's own scheme, host and port.  No layer is downloaded.  When
 * opts->content_store is set, the manifest and config are kept there too.
 *
 * @opts may be NULL (defaults); its strings are copied.  On success returns
 * 0 and *ret (free with flash_image_free()).  Errors: -EINVAL, -ENOMEM,
 * -ETIMEDOUT, -EAGAIN (the registry answered 429, 502, 503 or 504: worth a
 * retry), -FLASH_E_IMAGE_*, -errno of the layout or store; @diag (may
 * be NULL) is refilled: on failure one entry at path "image" naming what is
 * wrong.  *ret untouched on failure.  Every function below that takes a
 * diag refills it the same way.
 */
FLASH_API FLASH_WUR int flash_image_resolve(const char *reference, const struct flash_image_opts *opts,
					    struct flash_image **ret, struct flash_diag *diag);

/* "sha256:<64 hex>" of the platform's manifest. */
FLASH_API const char *flash_image_digest(const struct flash_image *img);
/* The reference pinned to that digest: "host/repo@sha256:..." (or
 * "oci:DIR@sha256:..." for a layout). */
FLASH_API const char *flash_image_pinned(const struct flash_image *img);
/* Bytes charged against the disk limit: config + compressed layers, as
 * their descriptors declare them. */
FLASH_API uint64_t flash_image_charged_bytes(const struct flash_image *img);
/* "sha256:..." of the config blob. */
FLASH_API const char *flash_image_config_digest(const struct flash_image *img);
/* Media type of the manifest ("application/vnd.oci.image.manifest.v1+json"
 * or "application/vnd.docker.distribution.manifest.v2+json"). */
FLASH_API const char *flash_image_media_type(const struct flash_image *img);
/* Layers in order, the lowest first; out-of-range @i gives NULL / 0. */
FLASH_API size_t flash_image_layer_count(const struct flash_image *img);
FLASH_API const char *flash_image_layer_digest(const struct flash_image *img, size_t i);
FLASH_API uint64_t flash_image_layer_size(const struct flash_image *img, size_t i);
/* Frees @img (NULL is fine); credentials kept for pulling are wiped. */
FLASH_API void flash_image_free(struct flash_image *img);

/*
 * The admission decision, the one home of the rule: returns 0 when
 * @charged_bytes (flash_image_charged_bytes()) is below @limit_bytes, and
 * -FLASH_E_IMAGE_TOO_LARGE when it fills or exceeds the limit (an image
 * that fills the disk leaves nothing to run in), with one diag entry
 * (path "image", code "image-too-large") naming both sizes.
 */
FLASH_API FLASH_WUR int flash_image_check_disk(uint64_t charged_bytes, uint64_t limit_bytes, struct flash_diag *diag);

/*
 * Pulls the config and every layer into the content store given to
 * flash_image_resolve() (-EINVAL without one), as
 * STORE/blobs/sha256/HEX: written under a temporary name, its size and
 * sha256 checked against the descriptor, fsync'ed and renamed into place.
 * A blob with a wrong digest or size is refused (-FLASH_E_IMAGE_DIGEST,
 * -FLASH_E_IMAGE_SIZE) and its temporary file removed.  A blob already in
 * the store is not fetched again; concurrent pulls of one blob (threads or
 * processes) fetch it once, under a lock per blob (STORE/locks/HEX.lock,
 * waited for within the timeout).  Returns 0 or an error as for
 * flash_image_resolve().
 */
FLASH_API FLASH_WUR int flash_image_pull(struct flash_image *img, struct flash_diag *diag);

/* Path of blob @digest in @content_store (a new string, freed by the
 * caller), whether or not it is there.  -EINVAL for a malformed digest. */
FLASH_API FLASH_WUR int flash_image_blob_path(const char *content_store, const char *digest, char **ret_path);

/* Bounds of unpacking, over all the layers of one call (0: none).  The
 * disk limit charges compressed bytes; these bound what they expand to. */
struct flash_image_unpack_opts {
	size_t sz;
	uint64_t max_bytes;   /* bytes of regular files written */
	uint64_t max_entries; /* entries (files, directories, links) created */
};

/*
 * Applies one layer (a tar stream, uncompressed, gzip or zstd) at
 * @layer_path onto the directory @rootfs, as an overlay filesystem would:
 * first the layer's whiteouts remove what lower layers left (".wh.NAME"
 * removes NAME; ".wh..wh..opq" empties its directory), then its entries are
 * extracted with ARCHIVE_EXTRACT_SECURE_NODOTDOT, _SECURE_SYMLINKS and
 * _SECURE_NOABSOLUTEPATHS.  Entries are owned by the calling user;
 * permission bits are kept except setuid and setgid; device nodes and FIFOs
 * are skipped (a warning in @diag); hard links must stay inside @rootfs;
 * an existing file is replaced, never written through.  The working
 * directory of the process is not changed (the extraction runs in a
 * thread with its own, unshare(CLONE_FS)).  @opts may be NULL.
 * Returns 0, -EINVAL, -ENOMEM, -FLASH_E_IMAGE_UNSAFE_ENTRY (an absolute
 * path, "..", a path through a symlink, a malformed whiteout; the entry is
 * named in @diag), -FLASH_E_IMAGE_SIZE (a bound of @opts exceeded, checked
 * before the entry is written), -FLASH_E_IMAGE_LAYOUT (not a tar stream),
 * -errno.  On failure @rootfs may hold part of the layer.
 */
FLASH_API FLASH_WUR int flash_image_layer_unpack(const char *layer_path, const char *rootfs,
						 const struct flash_image_unpack_opts *opts, struct flash_diag *diag);

/*
 * Unpacks every layer of @img, from its content store (pulled before),
 * into a new directory @rootfs (which must not exist): into a temporary
 * sibling first, renamed to @rootfs when every layer applied; on failure
 * the temporary directory is removed and @rootfs does not appear.  The
 * bounds of @opts (may be NULL) hold for all layers together.
 * Returns 0 or an error as for flash_image_layer_unpack(), -EEXIST,
 * -ENOENT (a layer not pulled).
 */
FLASH_API FLASH_WUR int flash_image_unpack(const struct flash_image *img, const char *rootfs,
					   const struct flash_image_unpack_opts *opts, struct flash_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
