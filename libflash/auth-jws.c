/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Compact JWS with EdDSA/Ed25519 (RFC 7515, RFC 8037): verification and
 * signing.  The base64url codec is in auth-util.c. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <sodium.h>

#include "auth-private.h"

/* Decodes one part of a token, naming it in the detail on failure. */
static int decode_part(const char *text, size_t len, unsigned char *out, size_t size, size_t *ret_len,
		       const char *what, char *detail, size_t detail_size)
{
	size_t bad = 0;
	int r;

	r = auth__b64url_decode(text, len, out, size, ret_len, &bad);
	if (r == -FLASH_E_AUTH_BASE64) {
		unsigned char c = (unsigned char)text[bad];

		if (c == '=')
			auth__detail(detail, detail_size, "%s: base64url padding '=' at offset %zu", what, bad);
		else if (auth__b64url_is_alphabet(c))
			auth__detail(detail, detail_size, "%s: base64url length or trailing bits not canonical",
				     what);
		else
			auth__detail(detail, detail_size, "%s: byte 0x%02x at offset %zu is not base64url",
				     what, c, bad);
	} else if (r == -ENOSPC) {
		auth__detail(detail, detail_size, "%s is larger than %zu bytes", what, size);
		r = -FLASH_E_AUTH_OVERSIZED;
	}
	return r;
}

/* Checks the decoded header: alg, crit, the accepted parameters, typ and
 * kid, in that order of precedence. */
static int check_header(const unsigned char *hdr, size_t hdr_len, struct auth_jws *jws, char *detail,
			size_t detail_size)
{
	const struct json_limits lim = { .max_depth = 8, .max_input = FLASH_AUTH_HEADER_MAX };
	const struct json_value *alg = NULL, *typ = NULL, *kid = NULL;
	const char *unknown = NULL;
	struct json_value *root = NULL;
	struct json_error jerr = { 0 };
	bool crit = false;
	int r;

	r = json_parse((const char *)hdr, hdr_len, &lim, &root, &jerr);
	if (r < 0)
		return auth__json_error(r, &jerr, "header", detail, detail_size);
	if (root->type != JSON_OBJECT) {
		auth__detail(detail, detail_size, "header is a JSON %s, not an object", json_type_name(root->type));
		r = -FLASH_E_AUTH_JSON;
		goto out_free;
	}
	for (size_t i = 0; i < root->u.object.n; i++) {
		const struct json_member *m = &root->u.object.members[i];

		if (strcmp(m->key, "alg") == 0)
			alg = m->value;
		else if (strcmp(m->key, "typ") == 0)
			typ = m->value;
		else if (strcmp(m->key, "kid") == 0)
			kid = m->value;
		else if (strcmp(m->key, "crit") == 0)
			crit = true;
		else if (!unknown)
			unknown = m->key;
	}
	if (!auth__json_string_is(alg, "EdDSA")) {
		if (alg && alg->type == JSON_STRING && !alg->u.string.has_nul)
			auth__detail(detail, detail_size, "header alg \"%.32s\" is not \"EdDSA\"", alg->u.string.ptr);
		else
			auth__detail(detail, detail_size, "header alg is %s, not \"EdDSA\"",
				     alg ? json_type_name(alg->type) : "missing");
		r = -FLASH_E_AUTH_ALG;
		goto out_free;
	}
	if (crit) {
		auth__detail(detail, detail_size, "header has crit: no extension is understood");
		r = -FLASH_E_AUTH_CRIT;
		goto out_free;
	}
	if (unknown) {
		auth__detail(detail, detail_size, "header parameter \"%.32s\" is not accepted (only alg, typ, kid)",
			     unknown);
		r = -FLASH_E_AUTH_HEADER;
		goto out_free;
	}
	if (typ && !auth__json_string_is(typ, "JWT")) {
		auth__detail(detail, detail_size, "header typ is not \"JWT\"");
		r = -FLASH_E_AUTH_TYP;
		goto out_free;
	}
	jws->has_kid = false;
	if (kid) {
		if (kid->type != JSON_STRING || kid->u.string.has_nul ||
		    !auth__kid_valid(kid->u.string.ptr, kid->u.string.len)) {
			auth__detail(detail, detail_size,
				     "header kid is not 1..%d characters of [A-Za-z0-9._:-]", FLASH_AUTH_KID_MAX);
			r = -FLASH_E_AUTH_HEADER;
			goto out_free;
		}
		memcpy(jws->kid, kid->u.string.ptr, kid->u.string.len + 1);
		jws->has_kid = true;
	}
	r = 0;
out_free:
	json_free(root);
	return r;
}

int auth__jws_verify(const char *token, size_t len, const unsigned char *public_key,
		     const struct flash_auth_keyset *ks, struct auth_jws *jws, char *detail, size_t detail_size)
{
	unsigned char hdr[FLASH_AUTH_HEADER_MAX], sig[crypto_sign_BYTES];
	const char *dot1, *dot2, *sig_text;
	size_t hdr_b64, pay_b64, sig_b64, hdr_len = 0, sig_len = 0;
	const unsigned char *key = public_key;
	int r;

	if (len > FLASH_AUTH_TOKEN_MAX) {
		auth__detail(detail, detail_size, "token is %zu bytes, more than %d", len, FLASH_AUTH_TOKEN_MAX);
		return -FLASH_E_AUTH_OVERSIZED;
	}
	dot1 = memchr(token, '.', len);
	dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token)) : NULL;
	if (!dot1 || !dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token))) {
		auth__detail(detail, detail_size, "token is not three parts separated by '.'");
		return -FLASH_E_AUTH_MALFORMED;
	}
	hdr_b64 = (size_t)(dot1 - token);
	pay_b64 = (size_t)(dot2 - dot1 - 1);
	sig_text = dot2 + 1;
	sig_b64 = len - (size_t)(sig_text - token);
	if (hdr_b64 == 0) {
		auth__detail(detail, detail_size, "token has an empty header");
		return -FLASH_E_AUTH_MALFORMED;
	}

	if (!key) {
		const char *kid = NULL;

		/* The common case: the exact header our signers write. */
		key = auth__keyset_find_header(ks, token, hdr_b64, &kid);
		if (key) {
			memcpy(jws->kid, kid, strlen(kid) + 1);
			jws->has_kid = true;
			goto out_payload;
		}
	}
	r = decode_part(token, hdr_b64, hdr, sizeof(hdr), &hdr_len, "header", detail, detail_size);
	if (r < 0)
		return r;
	r = check_header(hdr, hdr_len, jws, detail, detail_size);
	if (r < 0)
		return r;
	if (!key) {
		if (!jws->has_kid) {
			auth__detail(detail, detail_size, "header has no kid");
			return -FLASH_E_AUTH_KID_MISSING;
		}
		key = auth__keyset_find(ks, jws->kid, strlen(jws->kid));
		if (!key) {
			auth__detail(detail, detail_size, "kid \"%s\" is not in the key set", jws->kid);
			return -FLASH_E_AUTH_UNKNOWN_KID;
		}
	}

out_payload:
	r = decode_part(dot1 + 1, pay_b64, jws->payload, FLASH_AUTH_PAYLOAD_MAX, &jws->payload_len, "payload",
			detail, detail_size);
	if (r < 0)
		return r;
	jws->payload[jws->payload_len] = '\0';

	r = decode_part(sig_text, sig_b64, NULL, 0, &sig_len, "signature", detail, detail_size);
	if (r < 0)
		return r;
	if (sig_len != crypto_sign_BYTES) {
		auth__detail(detail, detail_size, "signature is %zu bytes, not %d", sig_len, crypto_sign_BYTES);
		return -FLASH_E_AUTH_SIGNATURE;
	}
	r = decode_part(sig_text, sig_b64, sig, sizeof(sig), &sig_len, "signature", detail, detail_size);
	if (r < 0)
		return r;
	if (crypto_sign_verify_detached(sig, (const unsigned char *)token, (size_t)(dot2 - token), key) != 0) {
		auth__detail(detail, detail_size, "Ed25519 signature does not verify");
		return -FLASH_E_AUTH_SIGNATURE;
	}
	return 0;
}

FLASH_API int flash_auth_jws_verify(const char *token, size_t len, const unsigned char *public_key,
				    void **ret_payload, size_t *ret_payload_len)
{
	struct auth_jws *jws;
	void *copy;
	int r;

	if (!token || !public_key || !ret_payload || !ret_payload_len)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	jws = malloc(sizeof(*jws));
	if (!jws)
		return -ENOMEM;
	r = auth__jws_verify(token, len, public_key, NULL, jws, NULL, 0);
	if (r < 0)
		goto out_free;
	copy = malloc(jws->payload_len + 1);
	if (!copy) {
		r = -ENOMEM;
		goto out_free;
	}
	memcpy(copy, jws->payload, jws->payload_len + 1);
	*ret_payload = copy;
	*ret_payload_len = jws->payload_len;
out_free:
	free(jws);
	return r;
}

/* ---------------------------------------------------------------- signing */

struct flash_auth_signer {
	unsigned char sk[crypto_sign_SECRETKEYBYTES]; /* seed || public key */
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];
	char kid[FLASH_AUTH_KID_MAX + 1];
};

static int signer_alloc(const char *kid, struct flash_auth_signer **ret)
{
	struct flash_auth_signer *s;
	size_t kid_len = kid ? strlen(kid) : 0;

	if (kid_len && !auth__kid_valid(kid, kid_len))
		return -FLASH_E_AUTH_KEY;
	if (sodium_init() < 0)
		return -EIO;
	s = sodium_malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	if (kid_len)
		memcpy(s->kid, kid, kid_len + 1);
	*ret = s;
	return 0;
}

FLASH_API void flash_auth_signer_free(struct flash_auth_signer *s)
{
	if (s)
		sodium_free(s); /* wipes the memory */
}

FLASH_API int flash_auth_signer_generate(const char *kid, struct flash_auth_signer **ret_signer)
{
	struct flash_auth_signer *s = NULL;
	int r;

	if (!ret_signer)
		return -EINVAL;
	r = signer_alloc(kid, &s);
	if (r < 0)
		return r;
	crypto_sign_keypair(s->pk, s->sk);
	*ret_signer = s;
	return 0;
}

FLASH_API int flash_auth_signer_from_seed(const unsigned char *seed, const char *kid,
					  struct flash_auth_signer **ret_signer)
{
	struct flash_auth_signer *s = NULL;
	int r;

	if (!seed || !ret_signer)
		return -EINVAL;
	r = signer_alloc(kid, &s);
	if (r < 0)
		return r;
	crypto_sign_seed_keypair(s->pk, s->sk, seed);
	*ret_signer = s;
	return 0;
}

static int signer_parse_detail(const char *json, size_t len, struct flash_auth_signer **ret_signer,
			       char *ret_detail, size_t detail_size)
{
	const struct json_limits lim = { .max_depth = 4, .max_input = 65536 };
	unsigned char seed[crypto_sign_SEEDBYTES], x[crypto_sign_PUBLICKEYBYTES];
	struct flash_auth_signer *s = NULL;
	const struct json_value *kty, *crv, *kidv;
	const char *kid = NULL;
	struct json_value *root = NULL;
	struct json_error jerr = { 0 };
	int r;

	if (!json || !ret_signer)
		return -EINVAL;
	r = json_parse(json, len, &lim, &root, &jerr);
	if (r < 0) {
		r = auth__json_error(r, &jerr, "secret key", ret_detail, detail_size);
		/* A key file is not a token: report its faults as key faults. */
		if (r != -ENOMEM)
			r = -FLASH_E_AUTH_KEY;
		return r;
	}
	if (root->type != JSON_OBJECT) {
		auth__detail(ret_detail, detail_size, "secret key is not a JSON object (a private JWK)");
		r = -FLASH_E_AUTH_KEY;
		goto out;
	}
	kty = json_get(root, "kty");
	crv = json_get(root, "crv");
	if (!auth__json_string_is(kty, "OKP") || !auth__json_string_is(crv, "Ed25519")) {
		auth__detail(ret_detail, detail_size, "secret key is not kty \"OKP\" crv \"Ed25519\"");
		r = -FLASH_E_AUTH_KEY;
		goto out;
	}
	kidv = json_get(root, "kid");
	if (kidv) {
		if (kidv->type != JSON_STRING || kidv->u.string.has_nul ||
		    !auth__kid_valid(kidv->u.string.ptr, kidv->u.string.len)) {
			auth__detail(ret_detail, detail_size, "secret key kid is not 1..%d of [A-Za-z0-9._:-]",
				     FLASH_AUTH_KID_MAX);
			r = -FLASH_E_AUTH_KEY;
			goto out;
		}
		kid = kidv->u.string.ptr;
	}
	r = auth__decode_key32(json_get(root, "d"), "d", seed, ret_detail, detail_size);
	if (r < 0)
		goto out;
	r = auth__decode_key32(json_get(root, "x"), "x", x, ret_detail, detail_size);
	if (r < 0)
		goto out;
	r = flash_auth_signer_from_seed(seed, kid, &s);
	if (r < 0)
		goto out;
	if (sodium_memcmp(s->pk, x, sizeof(x)) != 0) {
		auth__detail(ret_detail, detail_size, "secret key: x is not the public key of d");
		flash_auth_signer_free(s);
		r = -FLASH_E_AUTH_KEY;
		goto out;
	}
	*ret_signer = s;
	r = 0;
out:
	sodium_memzero(seed, sizeof(seed));
	/* The tree held "d" as text: wipe it before freeing. */
	if (root && root->type == JSON_OBJECT) {
		const struct json_value *d = json_get(root, "d");

		if (d && d->type == JSON_STRING)
			sodium_memzero((void *)d->u.string.ptr, d->u.string.len);
	}
	json_free(root);
	return r;
}

FLASH_API int flash_auth_signer_parse(const char *json, size_t len, struct flash_auth_signer **ret_signer,
				      struct flash_diag *diag)
{
	return AUTH_DIAG_CALL(diag, signer_parse_detail, json, len, ret_signer);
}

FLASH_API int flash_auth_signer_set_kid(struct flash_auth_signer *s, const char *kid)
{
	size_t len;

	if (!s || !kid)
		return -EINVAL;
	len = strlen(kid);
	if (!auth__kid_valid(kid, len))
		return -FLASH_E_AUTH_KEY;
	memcpy(s->kid, kid, len + 1);
	return 0;
}

FLASH_API int flash_auth_jwk_thumbprint(const unsigned char *public_key, char *buf, size_t size)
{
	char x[B64URL_LEN(crypto_sign_PUBLICKEYBYTES) + 1], members[96];
	unsigned char digest[crypto_hash_sha256_BYTES];
	int n;

	if (!public_key || !buf)
		return -EINVAL;
	if (size < FLASH_AUTH_THUMBPRINT_STRLEN)
		return -ENOSPC;
	if (sodium_init() < 0)
		return -EIO;
	flash_auth_b64url_encode(public_key, crypto_sign_PUBLICKEYBYTES, x, sizeof(x));
	/* RFC 7638 §3.2: the required members only, sorted, no white space. */
	n = snprintf(members, sizeof(members), "{\"crv\":\"Ed25519\",\"kty\":\"OKP\",\"x\":\"%s\"}", x);
	if (n < 0 || (size_t)n >= sizeof(members))
		return -EINVAL;
	crypto_hash_sha256(digest, (const unsigned char *)members, (unsigned long long)n);
	return flash_auth_b64url_encode(digest, sizeof(digest), buf, size);
}

FLASH_API const char *flash_auth_signer_kid(const struct flash_auth_signer *s)
{
	return s ? s->kid : NULL;
}

FLASH_API int flash_auth_signer_public_key(const struct flash_auth_signer *s, unsigned char *ret_public_key)
{
	if (!s || !ret_public_key)
		return -EINVAL;
	memcpy(ret_public_key, s->pk, sizeof(s->pk));
	return 0;
}

FLASH_API int flash_auth_signer_to_jwk(const struct flash_auth_signer *s, char **ret_json)
{
	char d[B64URL_LEN(crypto_sign_SEEDBYTES) + 1], x[B64URL_LEN(crypto_sign_PUBLICKEYBYTES) + 1];
	char *out = NULL;
	int n;

	if (!s || !ret_json)
		return -EINVAL;
	/* The seed is the first half of libsodium's secret key. */
	if (flash_auth_b64url_encode(s->sk, crypto_sign_SEEDBYTES, d, sizeof(d)) < 0 ||
	    flash_auth_b64url_encode(s->pk, sizeof(s->pk), x, sizeof(x)) < 0)
		return -EINVAL;
	if (s->kid[0])
		n = asprintf(&out, "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"%s\",\"d\":\"%s\",\"x\":\"%s\"}\n",
			     s->kid, d, x);
	else
		n = asprintf(&out, "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"d\":\"%s\",\"x\":\"%s\"}\n", d, x);
	sodium_memzero(d, sizeof(d));
	if (n < 0)
		return -ENOMEM;
	*ret_json = out;
	return 0;
}

FLASH_API int flash_auth_signer_sign_raw(const struct flash_auth_signer *s, const void *header, size_t header_len,
					 const void *payload, size_t payload_len, char **ret_token)
{
	unsigned char sig[crypto_sign_BYTES];
	size_t hl = B64URL_LEN(header_len), pl = B64URL_LEN(payload_len), sl = B64URL_LEN(sizeof(sig)), total;
	char *out;
	int n;

	if (!s || (!header && header_len) || (!payload && payload_len) || !ret_token)
		return -EINVAL;
	if (header_len > FLASH_AUTH_TOKEN_MAX || payload_len > FLASH_AUTH_TOKEN_MAX)
		return -FLASH_E_AUTH_OVERSIZED;
	total = hl + 1 + pl + 1 + sl;
	out = malloc(total + 1);
	if (!out)
		return -ENOMEM;
	n = flash_auth_b64url_encode(header, header_len, out, hl + 1);
	out[n] = '.';
	n = flash_auth_b64url_encode(payload, payload_len, out + hl + 1, pl + 1);
	out[hl + 1 + (size_t)n] = '.';
	crypto_sign_detached(sig, NULL, (const unsigned char *)out, hl + 1 + pl, s->sk);
	flash_auth_b64url_encode(sig, sizeof(sig), out + hl + 1 + pl + 1, sl + 1);
	*ret_token = out;
	return 0;
}

FLASH_API int flash_auth_signer_sign(const struct flash_auth_signer *s, const char *claims_json, size_t len,
				     char **ret_token)
{
	const struct json_limits lim = { .max_depth = 16, .max_input = FLASH_AUTH_PAYLOAD_MAX };
	struct json_value *root = NULL;
	struct json_error jerr = { 0 };
	char header[AUTH_CANONICAL_HEADER_MAX];
	int r, n;

	if (!s || !claims_json || !ret_token || !s->kid[0])
		return -EINVAL;
	r = json_parse(claims_json, len, &lim, &root, &jerr);
	if (r < 0)
		return auth__json_error(r, &jerr, "claims", NULL, 0);
	r = root->type == JSON_OBJECT ? 0 : -FLASH_E_AUTH_JSON;
	json_free(root);
	if (r < 0)
		return r;
	n = snprintf(header, sizeof(header), AUTH_CANONICAL_HEADER_FMT, s->kid);
	if (n < 0 || (size_t)n >= sizeof(header))
		return -EINVAL;
	return flash_auth_signer_sign_raw(s, header, (size_t)n, claims_json, len, ret_token);
}
