/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Ed25519 public key sets: JWKS (RFC 7517, OKP keys of RFC 8037) and the
 * simple {"kid": "<base64url key>"} map. */
#include "config.h"

#include <stdio.h>
#include <sodium.h>

#include "auth-private.h"

struct keyset_entry {
	char kid[FLASH_AUTH_KID_MAX + 1];
	size_t kid_len;
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];
	/* The canonical header of this kid, base64url-encoded: the header
	 * of nearly every token, recognised without parsing it again. */
	char header_b64[B64URL_LEN(AUTH_CANONICAL_HEADER_MAX) + 1];
	size_t header_b64_len;
};

struct flash_auth_keyset {
	size_t n;
	struct keyset_entry keys[FLASH_AUTH_KEYSET_MAX];
};

FLASH_API int flash_auth_keyset_new(struct flash_auth_keyset **ret_keyset)
{
	struct flash_auth_keyset *ks;

	if (!ret_keyset)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	*ret_keyset = ks;
	return 0;
}

FLASH_API void flash_auth_keyset_free(struct flash_auth_keyset *ks)
{
	free(ks);
}

FLASH_API size_t flash_auth_keyset_count(const struct flash_auth_keyset *ks)
{
	return ks ? ks->n : 0;
}

const unsigned char *auth__keyset_find(const struct flash_auth_keyset *ks, const char *kid, size_t len)
{
	if (!ks)
		return NULL;
	for (size_t i = 0; i < ks->n; i++)
		if (ks->keys[i].kid_len == len && memcmp(ks->keys[i].kid, kid, len) == 0)
			return ks->keys[i].pk;
	return NULL;
}

const unsigned char *auth__keyset_find_header(const struct flash_auth_keyset *ks, const char *b64, size_t len,
					      const char **ret_kid)
{
	if (!ks)
		return NULL;
	for (size_t i = 0; i < ks->n; i++)
		if (ks->keys[i].header_b64_len == len && memcmp(ks->keys[i].header_b64, b64, len) == 0) {
			*ret_kid = ks->keys[i].kid;
			return ks->keys[i].pk;
		}
	return NULL;
}

FLASH_API bool flash_auth_keyset_has(const struct flash_auth_keyset *ks, const char *kid)
{
	return ks && kid && auth__keyset_find(ks, kid, strlen(kid));
}

FLASH_API int flash_auth_keyset_add(struct flash_auth_keyset *ks, const char *kid, const unsigned char *public_key)
{
	char header[AUTH_CANONICAL_HEADER_MAX];
	struct keyset_entry *e;
	size_t len;
	int n;

	if (!ks || !kid || !public_key)
		return -EINVAL;
	len = strlen(kid);
	if (!auth__kid_valid(kid, len))
		return -FLASH_E_AUTH_KEY;
	/* Small-order and non-canonical points would make every signature
	 * check meaningless or fail: refuse them when the key is loaded. */
	if (!crypto_core_ed25519_is_valid_point(public_key))
		return -FLASH_E_AUTH_KEY;
	if (auth__keyset_find(ks, kid, len))
		return -FLASH_E_AUTH_DUPLICATE_KID;
	if (ks->n >= FLASH_AUTH_KEYSET_MAX)
		return -E2BIG;
	n = snprintf(header, sizeof(header), AUTH_CANONICAL_HEADER_FMT, kid);
	if (n < 0 || (size_t)n >= sizeof(header))
		return -EINVAL;
	e = &ks->keys[ks->n];
	n = flash_auth_b64url_encode(header, (size_t)n, e->header_b64, sizeof(e->header_b64));
	if (n < 0)
		return n;
	e->header_b64_len = (size_t)n;
	memcpy(e->kid, kid, len + 1);
	e->kid_len = len;
	memcpy(e->pk, public_key, sizeof(e->pk));
	ks->n++;
	return 0;
}

int auth__decode_key32(const struct json_value *v, const char *name, unsigned char *out, char *detail,
		       size_t detail_size)
{
	unsigned char buf[crypto_sign_PUBLICKEYBYTES];
	size_t n = 0;
	int r;

	if (!v || v->type != JSON_STRING) {
		auth__detail(detail, detail_size, "\"%s\" is %s, not a base64url string", name,
			     v ? json_type_name(v->type) : "missing");
		return -FLASH_E_AUTH_KEY;
	}
	r = auth__b64url_decode(v->u.string.ptr, v->u.string.len, NULL, 0, &n, NULL);
	if (r < 0) {
		auth__detail(detail, detail_size, "\"%s\" is not strict base64url", name);
		return r;
	}
	if (n != sizeof(buf)) {
		auth__detail(detail, detail_size, "\"%s\" is %zu bytes, not 32", name, n);
		return -FLASH_E_AUTH_KEY;
	}
	r = auth__b64url_decode(v->u.string.ptr, v->u.string.len, buf, sizeof(buf), &n, NULL);
	if (r < 0)
		return r;
	memcpy(out, buf, sizeof(buf));
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

/* Adds one key, describing a refusal with @where ("keys[2]", "map key \"a\""). */
static int add_key(struct flash_auth_keyset *ks, const char *kid, const unsigned char *pk, const char *where,
		   char *detail, size_t detail_size)
{
	int r = flash_auth_keyset_add(ks, kid, pk);

	if (r == -FLASH_E_AUTH_KEY) {
		if (!auth__kid_valid(kid, strlen(kid)))
			auth__detail(detail, detail_size, "%s: kid is not 1..%d of [A-Za-z0-9._:-]", where,
				     FLASH_AUTH_KID_MAX);
		else
			auth__detail(detail, detail_size, "%s: x is not a valid Ed25519 public key", where);
	} else if (r == -FLASH_E_AUTH_DUPLICATE_KID) {
		auth__detail(detail, detail_size, "%s: kid \"%s\" appears twice", where, kid);
	} else if (r == -E2BIG) {
		auth__detail(detail, detail_size, "more than %d keys", FLASH_AUTH_KEYSET_MAX);
		r = -FLASH_E_AUTH_KEYSET;
	}
	return r;
}

/* Optional JWK member @name: absent, or the string @want. */
static bool member_absent_or(const struct json_value *jwk, const char *name, const char *want)
{
	const struct json_value *v = json_get(jwk, name);

	return !v || auth__json_string_is(v, want);
}

static int parse_jwks(struct flash_auth_keyset *ks, const struct json_value *keys, char *detail, size_t detail_size)
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];
	char where[32];
	int r;

	if (keys->type != JSON_ARRAY) {
		auth__detail(detail, detail_size, "\"keys\" is %s, not an array", json_type_name(keys->type));
		return -FLASH_E_AUTH_KEYSET;
	}
	for (size_t i = 0; i < keys->u.array.n; i++) {
		const struct json_value *jwk = keys->u.array.items[i], *kty, *crv, *kid;

		snprintf(where, sizeof(where), "keys[%zu]", i);
		if (jwk->type != JSON_OBJECT) {
			auth__detail(detail, detail_size, "%s is %s, not a JWK object", where,
				     json_type_name(jwk->type));
			return -FLASH_E_AUTH_KEYSET;
		}
		kty = json_get(jwk, "kty");
		crv = json_get(jwk, "crv");
		kid = json_get(jwk, "kid");
		if (!auth__json_string_is(kty, "OKP")) {
			auth__detail(detail, detail_size, "%s: kty is not \"OKP\"", where);
			return -FLASH_E_AUTH_KEY;
		}
		if (!auth__json_string_is(crv, "Ed25519")) {
			auth__detail(detail, detail_size, "%s: crv is not \"Ed25519\"", where);
			return -FLASH_E_AUTH_KEY;
		}
		if (json_get(jwk, "d")) {
			auth__detail(detail, detail_size, "%s: holds a private key (\"d\"); publish only x", where);
			return -FLASH_E_AUTH_KEY;
		}
		if (!member_absent_or(jwk, "use", "sig") || !member_absent_or(jwk, "alg", "EdDSA")) {
			auth__detail(detail, detail_size, "%s: use must be \"sig\" and alg \"EdDSA\" when present",
				     where);
			return -FLASH_E_AUTH_KEY;
		}
		if (!kid || kid->type != JSON_STRING || kid->u.string.has_nul) {
			auth__detail(detail, detail_size, "%s: kid is missing or not a string", where);
			return -FLASH_E_AUTH_KEY;
		}
		r = auth__decode_key32(json_get(jwk, "x"), "x", pk, detail, detail_size);
		if (r < 0)
			return r;
		r = add_key(ks, kid->u.string.ptr, pk, where, detail, detail_size);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_map(struct flash_auth_keyset *ks, const struct json_value *root, char *detail, size_t detail_size)
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];
	char where[FLASH_AUTH_KID_MAX + 16];
	int r;

	for (size_t i = 0; i < root->u.object.n; i++) {
		const struct json_member *m = &root->u.object.members[i];

		snprintf(where, sizeof(where), "key \"%.*s\"", FLASH_AUTH_KID_MAX, m->key);
		r = auth__decode_key32(m->value, m->key, pk, detail, detail_size);
		if (r < 0)
			return r;
		if (strlen(m->key) != m->key_len) {
			auth__detail(detail, detail_size, "a kid contains a NUL character");
			return -FLASH_E_AUTH_KEY;
		}
		r = add_key(ks, m->key, pk, where, detail, detail_size);
		if (r < 0)
			return r;
	}
	return 0;
}

static int keyset_parse_detail(const char *json, size_t len, struct flash_auth_keyset **ret_keyset,
			       char *ret_detail, size_t detail_size)
{
	const struct json_limits lim = { .max_depth = 8, .max_input = 65536, .max_members = 256 };
	struct flash_auth_keyset *ks = NULL;
	const struct json_value *keys;
	struct json_value *root = NULL;
	struct json_error jerr = { 0 };
	int r;

	if (!json || !ret_keyset)
		return -EINVAL;
	r = json_parse(json, len, &lim, &root, &jerr);
	if (r < 0) {
		r = auth__json_error(r, &jerr, "key set", ret_detail, detail_size);
		return r == -ENOMEM ? r : -FLASH_E_AUTH_KEYSET;
	}
	if (root->type != JSON_OBJECT) {
		auth__detail(ret_detail, detail_size, "key set is a JSON %s, not an object",
			     json_type_name(root->type));
		r = -FLASH_E_AUTH_KEYSET;
		goto out_free_json;
	}
	if (json_get(root, "kty")) {
		auth__detail(ret_detail, detail_size, "%s",
			     json_get(root, "d") ? "this is a private JWK, not a key set: publish only the public key"
						 : "this is a single JWK, not a key set: wrap it as {\"keys\":[...]}");
		r = -FLASH_E_AUTH_KEYSET;
		goto out_free_json;
	}
	r = flash_auth_keyset_new(&ks);
	if (r < 0)
		goto out_free_json;
	keys = json_get(root, "keys");
	/* {"keys": [...]} is a JWKS; a map's values are all strings, so a
	 * kid named "keys" cannot be mistaken for one. */
	if (keys && keys->type != JSON_STRING)
		r = parse_jwks(ks, keys, ret_detail, detail_size);
	else
		r = parse_map(ks, root, ret_detail, detail_size);
	if (r < 0)
		goto out_free_keyset;
	if (ks->n == 0) {
		auth__detail(ret_detail, detail_size, "key set holds no key");
		r = -FLASH_E_AUTH_KEYSET;
		goto out_free_keyset;
	}
	*ret_keyset = TAKE_PTR(ks);
	r = 0;
out_free_keyset:
	flash_auth_keyset_free(ks);
out_free_json:
	json_free(root);
	return r;
}

FLASH_API int flash_auth_keyset_parse(const char *json, size_t len, struct flash_auth_keyset **ret_keyset,
				      struct flash_diag *diag)
{
	return AUTH_DIAG_CALL(diag, keyset_parse_detail, json, len, ret_keyset);
}

FLASH_API int flash_auth_keyset_to_jwks(const struct flash_auth_keyset *ks, char **ret_json)
{
	/* Per key: {"kty":"OKP","crv":"Ed25519","use":"sig","alg":"EdDSA","kid":"..","x":".."} */
	const size_t per_key = 96 + FLASH_AUTH_KID_MAX + B64URL_LEN(crypto_sign_PUBLICKEYBYTES);
	size_t cap, o = 0;
	char *out;

	if (!ks || !ret_json)
		return -EINVAL;
	cap = 16 + ks->n * per_key;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	o += (size_t)snprintf(out + o, cap - o, "{\"keys\":[");
	for (size_t i = 0; i < ks->n; i++) {
		char x[B64URL_LEN(crypto_sign_PUBLICKEYBYTES) + 1];

		flash_auth_b64url_encode(ks->keys[i].pk, sizeof(ks->keys[i].pk), x, sizeof(x));
		o += (size_t)snprintf(out + o, cap - o,
				      "%s{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"use\":\"sig\",\"alg\":\"EdDSA\","
				      "\"kid\":\"%s\",\"x\":\"%s\"}",
				      i ? "," : "", ks->keys[i].kid, x);
	}
	snprintf(out + o, cap - o, "]}\n");
	*ret_json = out;
	return 0;
}
