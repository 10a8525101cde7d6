/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Image admission: resolving a reference (registry or OCI layout) to one
 * verified manifest, the disk-limit decision, pulling into the content
 * store and unpacking a root filesystem.
 */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "dl.h"
#include "image-internal.h"
#include "image-store.h"
#include "internal.h"

#define WHY_SIZE 512
#define DEFAULT_TIMEOUT_MS 30000u
#define DEFAULT_PLATFORM "linux/amd64"
#define INDEX_DEPTH_MAX 2

struct flash_image {
	struct image_ref ref;
	struct image_registry *reg; /* NULL for a layout */
	int layout_fd;              /* -1 for a registry */
	int store_fd;               /* -1 without a content store */
	char *platform;
	unsigned int timeout_ms;
	uint64_t deadline;
	enum image_media media;
	char digest[IMAGE_DIGEST_LEN + 1];
	char *pinned;
	struct image_manifest man;
	uint64_t charged;
};

const char *flash__image_strerror(int code)
{
	switch (code) {
	case FLASH_E_IMAGE_REFERENCE: return "malformed image reference";
	case FLASH_E_IMAGE_NOT_FOUND: return "image, manifest or blob not found";
	case FLASH_E_IMAGE_UNAUTHORIZED: return "registry credentials missing or refused";
	case FLASH_E_IMAGE_CHALLENGE: return "malformed registry authentication challenge or token";
	case FLASH_E_IMAGE_MEDIA_TYPE: return "image media type not accepted";
	case FLASH_E_IMAGE_DIGEST: return "image content does not match its digest";
	case FLASH_E_IMAGE_SIZE: return "image content larger than its bound or descriptor";
	case FLASH_E_IMAGE_MANIFEST: return "malformed image manifest, index or config";
	case FLASH_E_IMAGE_PLATFORM: return "no image for the requested platform";
	case FLASH_E_IMAGE_REGISTRY: return "unexpected registry answer";
	case FLASH_E_IMAGE_TRANSPORT: return "registry connection failed";
	case FLASH_E_IMAGE_LAYOUT: return "malformed OCI image layout";
	case FLASH_E_IMAGE_UNSAFE_ENTRY: return "image layer entry refused by secure extraction";
	case FLASH_E_IMAGE_TOO_LARGE: return "image fills or exceeds the disk limit";
	default: return NULL;
	}
}

static const char *diag_code(int rc)
{
	switch (-rc) {
	case FLASH_E_IMAGE_REFERENCE: return "image-reference";
	case FLASH_E_IMAGE_NOT_FOUND: return "image-not-found";
	case FLASH_E_IMAGE_UNAUTHORIZED: return "image-unauthorized";
	case FLASH_E_IMAGE_CHALLENGE: return "image-challenge";
	case FLASH_E_IMAGE_MEDIA_TYPE: return "image-media-type";
	case FLASH_E_IMAGE_DIGEST: return "image-digest";
	case FLASH_E_IMAGE_SIZE: return "image-size";
	case FLASH_E_IMAGE_MANIFEST: return "image-manifest";
	case FLASH_E_IMAGE_PLATFORM: return "image-platform";
	case FLASH_E_IMAGE_REGISTRY: return "image-registry";
	case FLASH_E_IMAGE_TRANSPORT: return "image-transport";
	case FLASH_E_IMAGE_LAYOUT: return "image-layout";
	case FLASH_E_IMAGE_UNSAFE_ENTRY: return "image-unsafe-entry";
	case FLASH_E_IMAGE_TOO_LARGE: return "image-too-large";
	case ETIMEDOUT: return "image-timeout";
	default: return "image-error";
	}
}

/* One diag entry for a failed call: @why, or the error's description. */
static int fail(struct flash_diag *diag, int rc, const char *why)
{
	if (rc != -ENOMEM)
		diag_add_text(flash__diag(diag), DIAG_ERROR, "image", diag_code(rc), NULL, "%s",
			      why && why[0] ? why : flash_strerror(rc));
	return rc;
}

/* @why is always a WHY_SIZE buffer here. */
#define why_set(why, ...) image_why((why), WHY_SIZE, __VA_ARGS__)

FLASH_API void flash_image_free(struct flash_image *img)
{
	if (!img)
		return;
	image_ref_clear(&img->ref);
	image_registry_free(img->reg);
	if (img->layout_fd >= 0)
		close(img->layout_fd);
	if (img->store_fd >= 0)
		close(img->store_fd);
	free(img->platform);
	free(img->pinned);
	image_manifest_clear(&img->man);
	free(img);
}

/* ---------------------------------------------------------------- OCI layouts */

/* blobs/sha256/HEX below the layout, never through a symlink. */
static int layout_open_blob(int layout_fd, const char *digest, int *ret_fd)
{
	int b, s, fd, rc = 0;

	b = openat(layout_fd, "blobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (b < 0)
		return -errno;
	s = openat(b, "sha256", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0) {
		rc = -errno;
		close(b);
		return rc;
	}
	fd = openat(s, digest + 7, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		rc = -errno;
	close(s);
	close(b);
	if (rc == 0)
		*ret_fd = fd;
	return rc;
}

/* Reads a regular file @fd of exactly @size bytes (when @exact) or at most
 * sink->limit into @sink. */
static int read_into(int fd, struct image_sink *sink, const char *what, char *why)
{
	struct stat st;
	char buf[65536];

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		why_set(why, "%s is not a regular file", what);
		return -FLASH_E_IMAGE_LAYOUT;
	}
	if ((uint64_t)st.st_size > sink->limit) {
		why_set(why, "%s has %lld bytes, more than the %llu allowed", what, (long long)st.st_size,
			(unsigned long long)sink->limit);
		return -FLASH_E_IMAGE_SIZE;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (!image_sink_write(sink, buf, (size_t)n)) {
			why_set(why, "%s grew past %llu bytes while read", what, (unsigned long long)sink->limit);
			return sink->err ? sink->err : -FLASH_E_IMAGE_SIZE;
		}
	}
}

static int layout_blob(struct flash_image *img, const struct image_desc *d, struct image_sink *sink, char *why)
{
	int fd = -1, rc = layout_open_blob(img->layout_fd, d->digest, &fd);

	if (rc < 0) {
		why_set(why, "layout %s: blob %s: %s", img->ref.dir, d->digest, strerror(-rc));
		return rc == -ENOENT ? -FLASH_E_IMAGE_NOT_FOUND : rc;
	}
	rc = read_into(fd, sink, d->digest, why);
	close(fd);
	return rc;
}

static int layout_open(struct flash_image *img, struct image_sink *index, char *why)
{
	struct image_sink marker;
	int fd, rc;

	img->layout_fd = open(img->ref.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	if (img->layout_fd < 0) {
		rc = -errno;
		why_set(why, "layout %s: %s", img->ref.dir, strerror(-rc));
		return rc == -ENOENT || rc == -ENOTDIR ? -FLASH_E_IMAGE_LAYOUT : rc;
	}
	fd = openat(img->layout_fd, "oci-layout", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		why_set(why, "layout %s has no oci-layout file", img->ref.dir);
		return -FLASH_E_IMAGE_LAYOUT;
	}
	image_sink_init(&marker, -1, 4096);
	rc = read_into(fd, &marker, "oci-layout", why);
	close(fd);
	if (rc == 0 && (!marker.buf || !strstr(marker.buf, "\"imageLayoutVersion\""))) {
		why_set(why, "layout %s: oci-layout has no imageLayoutVersion", img->ref.dir);
		rc = -FLASH_E_IMAGE_LAYOUT;
	}
	image_sink_clear(&marker);
	if (rc < 0)
		return rc == -FLASH_E_IMAGE_SIZE ? -FLASH_E_IMAGE_LAYOUT : rc;
	fd = openat(img->layout_fd, "index.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		why_set(why, "layout %s has no index.json", img->ref.dir);
		return -FLASH_E_IMAGE_LAYOUT;
	}
	rc = read_into(fd, index, "index.json", why);
	close(fd);
	return rc;
}

/* ---------------------------------------------------------------- fetching */

/* Blob @d from the image's source into @sink. */
static int source_blob(struct flash_image *img, const struct image_desc *d, struct image_sink *sink, char *why)
{
	if (img->reg) {
		image_registry_set_deadline(img->reg, img->deadline);
		return image_registry_blob(img->reg, d->digest, sink, why, WHY_SIZE);
	}
	return layout_blob(img, d, sink, why);
}

static int store_fetch_cb(void *ctx, const struct image_desc *d, struct image_sink *sink, char *why,
			  size_t why_size)
{
	(void)why_size;
	return source_blob(ctx, d, sink, why);
}

/* Checks what @sink received against descriptor @d. */
static int sink_verify(struct image_sink *sink, const struct image_desc *d, const char *what, char *why)
{
	char got[IMAGE_DIGEST_LEN + 1];

	if (sink->written != d->size) {
		why_set(why, "%s %s has %llu bytes, its descriptor says %llu", what, d->digest,
			(unsigned long long)sink->written, (unsigned long long)d->size);
		return -FLASH_E_IMAGE_SIZE;
	}
	image_sink_digest(sink, got);
	if (strcmp(got, d->digest) != 0) {
		why_set(why, "%s %s has digest %s", what, d->digest, got);
		return -FLASH_E_IMAGE_DIGEST;
	}
	return 0;
}

/* The manifest (or index) of descriptor @d, verified, into @sink. */
static int fetch_child(struct flash_image *img, const struct image_desc *d, struct image_sink *sink, char *why)
{
	int rc;

	image_sink_init(sink, -1, d->size);
	if (img->reg) {
		enum image_media m;

		image_registry_set_deadline(img->reg, img->deadline);
		rc = image_registry_manifest(img->reg, d->digest, sink, &m, NULL, why, WHY_SIZE);
		if (rc == 0 && m != d->media) {
			why_set(why, "manifest %s: Content-Type %s, its descriptor says %s", d->digest,
				image_media_name(m), image_media_name(d->media));
			rc = -FLASH_E_IMAGE_MEDIA_TYPE;
		}
	} else {
		rc = layout_blob(img, d, sink, why);
	}
	if (rc == 0)
		rc = sink_verify(sink, d, "manifest", why);
	return rc;
}

/* The top document: a registry manifest by tag or digest, or the layout's
 * entry for the tag. */
static int fetch_top(struct flash_image *img, struct image_sink *doc, char *why)
{
	char hdr[IMAGE_DIGEST_LEN + 1] = "", got[IMAGE_DIGEST_LEN + 1];
	struct image_sink index;
	struct image_desc d;
	int rc;

	if (img->reg) {
		image_sink_init(doc, -1, FLASH_IMAGE_MANIFEST_MAX);
		image_registry_set_deadline(img->reg, img->deadline);
		rc = image_registry_manifest(img->reg, img->ref.digest ? img->ref.digest : img->ref.tag, doc,
					     &img->media, hdr, why, WHY_SIZE);
		if (rc < 0)
			return rc;
		image_sink_digest(doc, got);
		if (img->ref.digest && strcmp(got, img->ref.digest) != 0) {
			why_set(why, "manifest %s has digest %s", img->ref.digest, got);
			return -FLASH_E_IMAGE_DIGEST;
		}
		if (hdr[0] && strcmp(got, hdr) != 0) {
			why_set(why, "manifest %s has digest %s, the registry's Docker-Content-Digest says %s",
				img->ref.digest ? img->ref.digest : img->ref.tag, got, hdr);
			return -FLASH_E_IMAGE_DIGEST;
		}
		memcpy(img->digest, got, sizeof(got));
		return 0;
	}
	image_sink_init(&index, -1, FLASH_IMAGE_MANIFEST_MAX);
	rc = layout_open(img, &index, why);
	if (rc == 0)
		rc = image_index_select(index.buf ? index.buf : "", index.len, IMAGE_MEDIA_OCI_INDEX, NULL,
					img->ref.tag ? img->ref.tag : "", &d, why, WHY_SIZE);
	image_sink_clear(&index);
	if (rc == -FLASH_E_IMAGE_MANIFEST || rc == -FLASH_E_IMAGE_MEDIA_TYPE)
		rc = -FLASH_E_IMAGE_LAYOUT;
	if (rc < 0)
		return rc;
	if (img->ref.digest && strcmp(d.digest, img->ref.digest) != 0) {
		why_set(why, "layout entry is %s, not %s", d.digest, img->ref.digest);
		return -FLASH_E_IMAGE_DIGEST;
	}
	rc = fetch_child(img, &d, doc, why);
	if (rc == 0) {
		img->media = d.media;
		memcpy(img->digest, d.digest, sizeof(d.digest));
	}
	return rc;
}

/* Keeps the verified manifest bytes in the store too. */
static int mem_fetch_cb(void *ctx, const struct image_desc *d, struct image_sink *sink, char *why,
			size_t why_size)
{
	const struct image_sink *doc = ctx;

	(void)d, (void)why, (void)why_size;
	return image_sink_write(sink, doc->buf, doc->len) ? 0 : (sink->err ? sink->err : -FLASH_E_IMAGE_SIZE);
}

static int fetch_config(struct flash_image *img, char *why)
{
	const struct image_desc *d = &img->man.config;
	struct image_sink sink;
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (img->store_fd >= 0) {
		rc = image_store_ensure(img->store_fd, d, store_fetch_cb, img, img->deadline, why, WHY_SIZE);
		if (rc == 0)
			rc = image_store_read(img->store_fd, d, FLASH_IMAGE_CONFIG_MAX, &text, &len);
	} else {
		image_sink_init(&sink, -1, d->size);
		rc = source_blob(img, d, &sink, why);
		if (rc == 0)
			rc = sink_verify(&sink, d, "config", why);
		text = sink.buf;
		len = sink.len;
	}
	if (rc == 0)
		rc = image_config_check(text ? text : "", len, img->platform, why, WHY_SIZE);
	free(text);
	return rc;
}

static int resolve(struct flash_image *img, char *why)
{
	struct image_sink doc = { .buf = NULL };
	int rc, depth = 0;

	rc = fetch_top(img, &doc, why);
	while (rc == 0 && image_media_is_index(img->media)) {
		struct image_desc d;

		if (depth++ >= INDEX_DEPTH_MAX) {
			why_set(why, "index nested more than %d deep", INDEX_DEPTH_MAX);
			rc = -FLASH_E_IMAGE_MANIFEST;
			break;
		}
		rc = image_index_select(doc.buf ? doc.buf : "", doc.len, img->media, img->platform, NULL, &d, why,
					WHY_SIZE);
		if (rc < 0)
			break;
		image_sink_clear(&doc);
		rc = fetch_child(img, &d, &doc, why);
		if (rc == 0) {
			img->media = d.media;
			memcpy(img->digest, d.digest, sizeof(d.digest));
		}
	}
	if (rc == 0)
		rc = image_manifest_parse(doc.buf ? doc.buf : "", doc.len, img->media, &img->man, why, WHY_SIZE);
	if (rc == 0 && img->store_fd >= 0) {
		struct image_desc self = { .media = img->media, .size = doc.len };

		memcpy(self.digest, img->digest, sizeof(self.digest));
		rc = image_store_ensure(img->store_fd, &self, mem_fetch_cb, &doc, img->deadline, why, WHY_SIZE);
	}
	image_sink_clear(&doc);
	if (rc < 0)
		return rc;
	img->charged = img->man.config.size;
	for (size_t i = 0; i < img->man.n_layers; i++)
		img->charged += img->man.layers[i].size; /* each <= 2^40, at most 256: no overflow */
	rc = fetch_config(img, why);
	if (rc < 0)
		return rc;
	if (img->ref.layout)
		rc = asprintf(&img->pinned, "oci:%s@%s", img->ref.dir, img->digest);
	else
		rc = asprintf(&img->pinned, "%s/%s@%s", img->ref.host, img->ref.repo, img->digest);
	if (rc < 0) {
		img->pinned = NULL;
		return -ENOMEM;
	}
	return 0;
}

static bool platform_valid(const char *p)
{
	size_t slashes = 0, n = strlen(p);

	if (n == 0 || n > 64 || p[0] == '/' || p[n - 1] == '/')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '/') {
			if (p[i + 1] == '/')
				return false;
			slashes++;
		} else if (!(p[i] >= 'a' && p[i] <= 'z') && !(p[i] >= '0' && p[i] <= '9') && p[i] != '_') {
			return false;
		}
	}
	return slashes == 1 || slashes == 2;
}

FLASH_API int flash_image_resolve(const char *reference, const struct flash_image_opts *opts,
				  struct flash_image **ret, struct flash_diag *diag)
{
	char why[WHY_SIZE] = "";
	const char *platform = OPTS_GET(opts, platform, NULL), *store = OPTS_GET(opts, content_store, NULL);
	unsigned int timeout = OPTS_GET(opts, timeout_ms, 0u);
	struct flash_image *img;
	int rc;

	diag_begin(flash__diag(diag), 0);
	if (!reference || !ret || !OPTS_VALID(opts, flash_image_opts))
		return -EINVAL;
	if (!platform)
		platform = DEFAULT_PLATFORM;
	if (!platform_valid(platform)) {
		why_set(why, "platform \"%.64s\" is not os/arch[/variant]", platform);
		return fail(diag, -EINVAL, why);
	}
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	img->layout_fd = img->store_fd = -1;
	img->timeout_ms = timeout ? timeout : DEFAULT_TIMEOUT_MS;
	img->deadline = image_now_ms() + img->timeout_ms;
	img->platform = strdup(platform);
	if (!img->platform) {
		rc = -ENOMEM;
		goto out;
	}
	rc = image_ref_parse(reference, &img->ref, why, sizeof(why));
	if (rc < 0)
		goto out;
	if (!img->ref.layout) {
		rc = image_registry_new(&img->ref, opts, &img->reg);
		if (rc == -ELIBACC)
			why_set(why, "the registry client needs libcurl: %s", flash_dl_error());
		if (rc < 0)
			goto out;
	}
	if (store) {
		rc = image_store_open(store, &img->store_fd);
		if (rc < 0) {
			why_set(why, "content store %s: %s", store, strerror(-rc));
			goto out;
		}
	}
	rc = resolve(img, why);
out:
	if (rc < 0) {
		flash_image_free(img);
		return fail(diag, rc, why);
	}
	*ret = img;
	return 0;
}

FLASH_API const char *flash_image_digest(const struct flash_image *img)
{
	return img ? img->digest : NULL;
}

FLASH_API const char *flash_image_pinned(const struct flash_image *img)
{
	return img ? img->pinned : NULL;
}

FLASH_API uint64_t flash_image_charged_bytes(const struct flash_image *img)
{
	return img ? img->charged : 0;
}

FLASH_API const char *flash_image_config_digest(const struct flash_image *img)
{
	return img ? img->man.config.digest : NULL;
}

FLASH_API const char *flash_image_media_type(const struct flash_image *img)
{
	return img ? image_media_name(img->media) : NULL;
}

FLASH_API size_t flash_image_layer_count(const struct flash_image *img)
{
	return img ? img->man.n_layers : 0;
}

FLASH_API const char *flash_image_layer_digest(const struct flash_image *img, size_t i)
{
	return img && i < img->man.n_layers ? img->man.layers[i].digest : NULL;
}

FLASH_API uint64_t flash_image_layer_size(const struct flash_image *img, size_t i)
{
	return img && i < img->man.n_layers ? img->man.layers[i].size : 0;
}

FLASH_API int flash_image_check_disk(uint64_t charged_bytes, uint64_t limit_bytes, struct flash_diag *diag)
{
	char why[WHY_SIZE];

	diag_begin(flash__diag(diag), 0);
	if (charged_bytes < limit_bytes)
		return 0;
	why_set(why, "the image needs %" PRIu64 " bytes (config and compressed layers), the disk limit is %" PRIu64
		" bytes: it %s the limit", charged_bytes, limit_bytes, charged_bytes == limit_bytes ? "fills" : "exceeds");
	return fail(diag, -FLASH_E_IMAGE_TOO_LARGE, why);
}

FLASH_API int flash_image_pull(struct flash_image *img, struct flash_diag *diag)
{
	char why[WHY_SIZE] = "";
	int rc = 0;

	diag_begin(flash__diag(diag), 0);
	if (!img || img->store_fd < 0)
		return -EINVAL;
	img->deadline = image_now_ms() + img->timeout_ms;
	rc = image_store_ensure(img->store_fd, &img->man.config, store_fetch_cb, img, img->deadline, why, WHY_SIZE);
	for (size_t i = 0; rc == 0 && i < img->man.n_layers; i++)
		rc = image_store_ensure(img->store_fd, &img->man.layers[i], store_fetch_cb, img, img->deadline, why,
					WHY_SIZE);
	return rc < 0 ? fail(diag, rc, why) : 0;
}

FLASH_API int flash_image_blob_path(const char *content_store, const char *digest, char **ret_path)
{
	char *p;

	if (!content_store || !ret_path || !image_digest_valid(digest))
		return -EINVAL;
	if (asprintf(&p, "%s/blobs/sha256/%s", content_store, digest + 7) < 0)
		return -ENOMEM;
	*ret_path = p;
	return 0;
}

FLASH_API int flash_image_unpack(const struct flash_image *img, const char *rootfs,
				 const struct flash_image_unpack_opts *opts, struct flash_diag *diag)
{
	char why[WHY_SIZE] = "";
	struct image_budget budget;
	_cleanup_free_ char *tmp = NULL;
	struct stat st;
	int rc = 0;

	diag_begin(flash__diag(diag), 0);
	if (!img || !rootfs || img->store_fd < 0 || !OPTS_VALID(opts, flash_image_unpack_opts))
		return -EINVAL;
	image_budget_init(&budget, opts);
	if (lstat(rootfs, &st) == 0) {
		why_set(why, "%s already exists", rootfs);
		return fail(diag, -EEXIST, why);
	}
	if (asprintf(&tmp, "%s.tmp-XXXXXX", rootfs) < 0) {
		tmp = NULL;
		return -ENOMEM;
	}
	if (!mkdtemp(tmp)) {
		rc = -errno;
		why_set(why, "creating %s: %s", tmp, strerror(-rc));
		return fail(diag, rc, why);
	}
	for (size_t i = 0; rc == 0 && i < img->man.n_layers; i++) {
		const struct image_desc *d = &img->man.layers[i];
		char name[96];
		int fd;

		snprintf(name, sizeof(name), "blobs/sha256/%s", d->digest + 7);
		fd = openat(img->store_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != d->size) {
			rc = fd < 0 ? -errno : -FLASH_E_IMAGE_SIZE;
			why_set(why, "layer %s is not in the content store (pull first)", d->digest);
			if (fd >= 0)
				close(fd);
			rc = fail(diag, rc == -ENOENT ? -ENOENT : rc, why);
			break;
		}
		{
			char path[64];

			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			rc = image_layer_unpack(path, tmp, &budget, flash__diag(diag));
		}
		close(fd);
	}
	if (rc == 0 && rename(tmp, rootfs) < 0) {
		rc = -errno;
		why_set(why, "renaming %s to %s: %s", tmp, rootfs, strerror(-rc));
		fail(diag, rc, why);
	}
	if (rc < 0)
		(void)image_remove_tree_at(AT_FDCWD, tmp);
	return rc;
}
