/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the OCI documents a registry or layout hands us
 * (libflash/image-parse.c).  The first byte of an input picks what the
 * rest is:
 *   'm' an OCI image manifest      'd' a Docker v2 manifest
 *   'i' an OCI index (by platform) 'l' a Docker manifest list
 *   't' an OCI layout index.json, selected by the tag "v1"
 *   'c' an image config            'r' an image reference
 *   'a' a token service's answer (the bearer token of a registry)
 *   anything else: the whole input as an OCI manifest.
 * Invariants on success: descriptors carry valid sha256 digests and sizes
 * within their bounds, a token is 1..IMAGE_TOKEN_MAX b64token bytes; on
 * failure a reason.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_desc(const struct image_desc *d)
{
	if (!image_digest_valid(d->digest) || d->size > IMAGE_DESC_SIZE_MAX)
		abort();
}

static void manifest(const char *text, size_t len, enum image_media media)
{
	struct image_manifest m;
	char why[512] = "";
	int rc = image_manifest_parse(text, len, media, &m, why, sizeof(why));

	if (rc < 0) {
		if (rc != -ENOMEM && why[0] == '\0')
			abort();
		return;
	}
	check_desc(&m.config);
	if (m.config.size > FLASH_IMAGE_CONFIG_MAX || m.n_layers > FLASH_IMAGE_LAYERS_MAX)
		abort();
	for (size_t i = 0; i < m.n_layers; i++)
		check_desc(&m.layers[i]);
	image_manifest_clear(&m);
}

static void index_select(const char *text, size_t len, enum image_media media, const char *tag)
{
	struct image_desc d;
	char why[512] = "";
	int rc = image_index_select(text, len, media, tag ? NULL : "linux/amd64", tag, &d, why, sizeof(why));

	if (rc < 0) {
		if (rc != -ENOMEM && why[0] == '\0')
			abort();
		return;
	}
	check_desc(&d);
	if (d.size > FLASH_IMAGE_MANIFEST_MAX || (!image_media_is_manifest(d.media) && !image_media_is_index(d.media)))
		abort();
}

static void reference(const char *text, size_t len)
{
	char *s = strndup(text, len), why[256] = "";
	struct image_ref r;
	int rc;

	if (!s)
		return;
	rc = image_ref_parse(s, &r, why, sizeof(why));
	if (rc == 0) {
		if (r.layout ? !r.dir || !r.dir[0] : !r.host || !r.repo || !r.api_host || (!r.tag && !r.digest))
			abort();
		if (r.digest && !image_digest_valid(r.digest))
			abort();
		image_ref_clear(&r);
	} else if (rc != -ENOMEM && why[0] == '\0') {
		abort();
	}
	free(s);
}

static void token_reply(const char *text, size_t len)
{
	char why[256] = "", *token = NULL;
	int rc = image_token_reply_parse(text, len, &token, why, sizeof(why));
	size_t n;

	if (rc == 0) {
		n = strlen(token);
		if (n == 0 || n > IMAGE_TOKEN_MAX ||
		    strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=") != n)
			abort();
		free(token);
	} else if (token || (rc != -ENOMEM && (rc != -FLASH_E_IMAGE_CHALLENGE || why[0] == '\0'))) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;
	size_t len = size ? size - 1 : 0;

	if (size == 0)
		return 0;
	switch (data[0]) {
	case 'm': manifest(text, len, IMAGE_MEDIA_OCI_MANIFEST); break;
	case 'd': manifest(text, len, IMAGE_MEDIA_DOCKER_MANIFEST); break;
	case 'i': index_select(text, len, IMAGE_MEDIA_OCI_INDEX, NULL); break;
	case 'l': index_select(text, len, IMAGE_MEDIA_DOCKER_LIST, NULL); break;
	case 't': index_select(text, len, IMAGE_MEDIA_OCI_INDEX, "v1"); break;
	case 'c': {
		char why[256];

		(void)image_config_check(text, len, "linux/amd64", why, sizeof(why));
		break;
	}
	case 'r': reference(text, len); break;
	case 'a': token_reply(text, len); break;
	default: manifest((const char *)data, size, IMAGE_MEDIA_OCI_MANIFEST); break;
	}
	return 0;
}
