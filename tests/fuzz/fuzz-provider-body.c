/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the request bodies of flash-operator's provider/v1
 * API, through op_provider_handle() (what operator/http.c hands every
 * complete request to), in-process over a store in a temporary
 * directory.  Each request carries a valid token for its action, so the
 * body is what decides.  The first byte of an input picks the route:
 *   'c'  POST /provider/v1/services      (create: {"name", "spec"})
 *   'u'  PUT  /provider/v1/services/ID   (update of an unknown id: {"spec"})
 *   anything else: the whole input as a create.
 * The image seam refuses every reference, so nothing is ever stored.
 * Properties:
 *  - the answer is a JSON error object {"error": {"code": C, ...}}, never
 *    a success and never a 500: 400 bad-request for a body that is not
 *    {"name", "spec"} / {"spec"}, 422 invalid-spec (with the spec's
 *    problems) or image (create: the spec was accepted), 404 not-found
 *    (update: the spec was accepted, the service does not exist);
 *  - a refused request changes nothing: the same request answers the same
 *    bytes again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/auth.h>

#include "fuzz-helpers.h"
#include "json.h"
#include "provider.h"
#include "store.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW 1800000000
#define ISSUER "mp.fuzz"
#define AUDIENCE "provider.fuzz"

static const unsigned char seed[32] = {
	0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
	0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
};

static char dir[64];
static struct op_store *store;
static struct flash_auth_keyset *keys;
static struct op_provider *provider;
static char *auth_create, *auth_update;

static void check(int ok)
{
	if (!ok)
		abort();
}

static int64_t fixed_now(void *ctx)
{
	(void)ctx;
	return NOW;
}

static int refuse_image(void *ctx, const char *reference, uint64_t limit, struct op_image_info *ret, char *err,
			size_t err_size)
{
	(void)ctx;
	(void)limit;
	(void)ret;
	snprintf(err, err_size, "%s: manifest unknown (fuzzing: no registry)", reference);
	return -FLASH_E_IMAGE_NOT_FOUND;
}

static const struct op_image_ops image_ops = { .admit = refuse_image };

static void cleanup(void)
{
	op_provider_free(provider);
	op_store_close(store);
	flash_auth_keyset_free(keys);
	free(auth_create);
	free(auth_update);
	fuzz_tmpdir_remove(dir);
}

/* "Bearer <token>" for @action, generation @gen, valid at NOW. */
static char *mint(const struct flash_auth_signer *s, enum flash_auth_action action, uint64_t gen)
{
	char claims[512], *tok = NULL, *h = NULL;

	snprintf(claims, sizeof(claims),
		 "{\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\",\"action\":\"%s\",\"org\":\"org-1\","
		 "\"project\":\"p-1\",\"iat\":%d,\"exp\":%d,\"gen\":%" PRIu64 "}",
		 flash_auth_action_name(action), NOW, NOW + 60, gen);
	if (flash_auth_signer_sign(s, claims, strlen(claims), &tok) < 0 || asprintf(&h, "Bearer %s", tok) < 0)
		abort();
	free(tok);
	return h;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct flash_auth_signer *signer = NULL;
	unsigned char pub[32];
	char path[128], err[256];

	(void)argc;
	(void)argv;
	fuzz_tmpdir_make(dir, sizeof(dir), "fuzz-provider");
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/flash.db", dir);
	if (op_store_open(path, &store, err, sizeof(err)) < 0 || flash_auth_signer_from_seed(seed, "k1", &signer) < 0 ||
	    flash_auth_signer_public_key(signer, pub) < 0 || flash_auth_keyset_new(&keys) < 0 ||
	    flash_auth_keyset_add(keys, "k1", pub) < 0)
		abort();
	auth_create = mint(signer, FLASH_AUTH_ACTION_CREATE, 1);
	auth_update = mint(signer, FLASH_AUTH_ACTION_UPDATE, 2);
	flash_auth_signer_free(signer);
	{
		struct op_provider_opts o = {
			.sz = sizeof(o),
			.issuer = ISSUER,
			.audience = AUDIENCE,
			.keys = keys,
			.store = store,
			.image = &image_ops,
			.now = fixed_now,
		};

		if (op_provider_new(&o, &provider) < 0)
			abort();
	}
	return 0;
}

/* The code of an error answer, NULL when @r is not one. */
static char *error_code(const struct op_response *r)
{
	struct json_value *root = NULL;
	const char *code;
	char *ret = NULL;

	if (json_parse(r->body, r->body_len, NULL, &root, NULL) < 0)
		return NULL;
	code = json_string_value(json_get(json_get(root, "error"), "code"));
	if (code)
		ret = strdup(code);
	json_free(root);
	return ret;
}

static void request(bool create, const char *body, size_t len)
{
	struct op_request req = {
		.method = create ? "POST" : "PUT",
		.path = create ? "/provider/v1/services" : "/provider/v1/services/fs-0123456789abcdef0123456789abcdef",
		.authorization = create ? auth_create : auth_update,
		.body = body,
		.body_len = len,
	};
	struct op_response r = { 0 }, again = { 0 };
	char *code;

	op_provider_handle(provider, &req, &r);
	check(r.body != NULL);
	code = error_code(&r);
	check(code != NULL);
	switch (r.status) {
	case 400:
		check(strcmp(code, "bad-request") == 0);
		break;
	case 422:
		check(strcmp(code, "invalid-spec") == 0 || (create && strcmp(code, "image") == 0));
		break;
	case 404:
		check(!create && strcmp(code, "not-found") == 0);
		break;
	default:
		abort();
	}
	op_provider_handle(provider, &req, &again);
	check(again.status == r.status && again.body_len == r.body_len && memcmp(again.body, r.body, r.body_len) == 0);
	free(code);
	op_response_clear(&r);
	op_response_clear(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0]) {
	case 'c': request(true, (const char *)data + 1, size - 1); break;
	case 'u': request(false, (const char *)data + 1, size - 1); break;
	default: request(true, (const char *)data, size); break;
	}
	return 0;
}
