/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Provider command authentication: RFC 4648 and RFC 8037 vectors, strict
 * base64url, key sets, claims, negative tokens with their reasons,
 * generations, operation ids and key files. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sodium.h>
#include <flash/auth.h>
#include <flash/file.h>

#include "diag-helpers.h"
#include "helpers.h"

DIAG_TEST_HELPERS(flash)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* RFC 8037 Appendix A.1: the Ed25519 key pair (d = seed, x = public key). */
static const char rfc8037_d[] = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";
static const char rfc8037_x[] = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
static const unsigned char rfc8037_d_hex[32] = {
	0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
	0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
};
static const unsigned char rfc8037_x_hex[32] = {
	0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64, 0x07, 0x3a,
	0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a,
};
/* RFC 8037 Appendix A.4: the JWS of "Example of Ed25519 signing". */
static const char rfc8037_jws[] =
	"eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc."
	"hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg";

#define NOW 1800000000LL
#define ISS "https://api.heterocloud.example"
#define AUD "flash-provider/eu-1"

static struct flash_auth_signer *S;  /* RFC key, kid "k1" */
static struct flash_auth_signer *S2; /* another key, kid "k2" */
static struct flash_auth_keyset *KS; /* k1 and k2 */

static void setup(void)
{
	unsigned char pk[32];

	ASSERT_OK(flash_auth_signer_from_seed(rfc8037_d_hex, "k1", &S), "signer k1");
	ASSERT_OK(flash_auth_signer_generate("k2", &S2), "signer k2");
	ASSERT_OK(flash_auth_keyset_new(&KS), "keyset");
	ASSERT_OK(flash_auth_signer_public_key(S, pk), "pk1");
	ASSERT_OK(flash_auth_keyset_add(KS, "k1", pk), "add k1");
	ASSERT_OK(flash_auth_signer_public_key(S2, pk), "pk2");
	ASSERT_OK(flash_auth_keyset_add(KS, "k2", pk), "add k2");
}

static void teardown(void)
{
	flash_auth_signer_free(S);
	flash_auth_signer_free(S2);
	flash_auth_keyset_free(KS);
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	cr_assert(vasprintf(&s, fmt, ap) >= 0);
	va_end(ap);
	return s;
}

/* The claims of a valid create command, with @extra members appended
 * (which may repeat none of the standard ones). */
static char *claims_with(long long iat, long long exp, const char *action, const char *extra)
{
	return xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"action\":\"%s\",\"iat\":%lld,\"exp\":%lld,"
			 "\"org\":\"org-7f3a\",\"project\":\"prj-19\"%s%s}",
			 action, iat, exp, extra[0] ? "," : "", extra);
}

static char *sign_raw(const struct flash_auth_signer *s, const char *header, const char *claims)
{
	char *tok = NULL;

	ASSERT_OK(flash_auth_signer_sign_raw(s, header, strlen(header), claims, strlen(claims), &tok), "sign_raw");
	return tok;
}

static const char HDR[] = "{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\"k1\"}";

static int verify_at(const char *tok, enum flash_auth_action action, long long now, unsigned int skew,
		     struct flash_auth_token **ret, struct flash_diag *diag)
{
	FLASH_OPTS(flash_auth_verify_opts, o, .issuer = ISS, .audience = AUD, .action = action, .now = now,
		   .skew = skew);

	return flash_auth_verify(KS, tok, strlen(tok), &o, ret, diag);
}

/* Verifies @tok (freed) for @action at NOW and expects @reason. */
static void expect_reason(char *tok, enum flash_auth_action action, int reason, const char *what)
{
	_cleanup_flash_diag_ struct flash_diag *d = flash_test_diag();
	int r = verify_at(tok, action, NOW, 0, NULL, d);
	const char *detail = flash_test_message(d);

	cr_assert(r == -reason, "%s: got %d (%s: %s), expected %d (%s)", what, r, flash_auth_reason_name(r),
		  detail, -reason, flash_auth_reason_name(reason));
	cr_assert(detail[0], "%s: no detail", what);
	cr_assert(flash_diag_count(d) == 1, "%s: %zu entries, not one", what, flash_diag_count(d));
	ASSERT_STREQ(flash_diag_first_error(d)->code, flash_auth_reason_name(reason), "diag code");
	free(tok);
}

/* ---------------------------------------------------------------- base64url */

Test(b64url, rfc4648_vectors_without_padding)
{
	static const char *const in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const out[] = { "", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy" };
	char buf[16];
	unsigned char dec[16];
	size_t n;

	for (size_t i = 0; i < ARRAY_SIZE(in); i++) {
		cr_assert_eq(flash_auth_b64url_encode(in[i], strlen(in[i]), buf, sizeof(buf)), (int)strlen(out[i]));
		ASSERT_STREQ(buf, out[i], in[i]);
		ASSERT_OK(flash_auth_b64url_decode(out[i], strlen(out[i]), dec, sizeof(dec), &n), out[i]);
		cr_assert(n == strlen(in[i]) && memcmp(dec, in[i], n) == 0, "decode %s", out[i]);
	}
}

Test(b64url, url_alphabet_and_round_trip)
{
	unsigned char all[256], dec[256];
	char enc[400];
	size_t n;

	for (size_t i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)i;
	cr_assert_eq(flash_auth_b64url_encode(all, sizeof(all), enc, sizeof(enc)), 342);
	cr_assert(!strchr(enc, '+') && !strchr(enc, '/') && !strchr(enc, '='));
	cr_assert(strchr(enc, '-') && strchr(enc, '_'));
	ASSERT_OK(flash_auth_b64url_decode(enc, strlen(enc), dec, sizeof(dec), &n), "round trip");
	cr_assert(n == 256 && memcmp(all, dec, 256) == 0);
	ASSERT_ERR(flash_auth_b64url_encode(all, 3, enc, 4), -ENOSPC, "no room for NUL");
}

Test(b64url, strict_refusals)
{
	static const char *const bad[] = {
		"Zg==", "Zg=", "Zm8=",     /* padding */
		"Z", "Zm9vY",              /* 6 bits left over */
		"Zh", "Zm9", "Zm9vYmF",    /* non-zero trailing bits: Zh/Zm9/... are not canonical */
		"Zm+v", "Zm/v", "Zm v", "Zm\nv", "Zm.v", "Zm9v\x80",
	};
	unsigned char dec[16];
	size_t n = 99;

	/* Check the claims of the table: "Zm9" and "Zm8" differ only in trailing bits. */
	ASSERT_OK(flash_auth_b64url_decode("Zm8", 3, dec, sizeof(dec), &n), "canonical Zm8");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		n = 99;
		ASSERT_ERR(flash_auth_b64url_decode(bad[i], strlen(bad[i]), dec, sizeof(dec), &n),
			   -FLASH_E_AUTH_BASE64, bad[i]);
		cr_assert_eq(n, 99, "%s: ret_len touched on failure", bad[i]);
	}
	ASSERT_ERR(flash_auth_b64url_decode("Zm9vYmFy", 8, dec, 5, &n), -ENOSPC, "small buffer");
}

/* ---------------------------------------------------------------- RFC 8037 */

Test(rfc8037, a1_key_pair, .init = setup, .fini = teardown)
{
	unsigned char pk[32], d[32];
	char x[64];
	size_t n;

	ASSERT_OK(flash_auth_b64url_decode(rfc8037_d, strlen(rfc8037_d), d, sizeof(d), &n), "d");
	cr_assert(n == 32 && memcmp(d, rfc8037_d_hex, 32) == 0, "A.1 d in hex");
	ASSERT_OK(flash_auth_signer_public_key(S, pk), "public key");
	cr_assert(memcmp(pk, rfc8037_x_hex, 32) == 0, "A.1 x in hex");
	flash_auth_b64url_encode(pk, sizeof(pk), x, sizeof(x));
	ASSERT_STREQ(x, rfc8037_x, "A.1 x");
}

Test(rfc8037, a4_signing_is_exact, .init = setup, .fini = teardown)
{
	static const char hdr[] = "{\"alg\":\"EdDSA\"}", payload[] = "Example of Ed25519 signing";
	char *tok = NULL;

	ASSERT_OK(flash_auth_signer_sign_raw(S, hdr, strlen(hdr), payload, strlen(payload), &tok), "sign A.4");
	ASSERT_STREQ(tok, rfc8037_jws, "A.4 JWS");
	free(tok);
}

/* RFC 8037 A.3: the JWK thumbprint of the A.1 key. */
Test(rfc8037, a3_thumbprint)
{
	char tp[FLASH_AUTH_THUMBPRINT_STRLEN];

	cr_assert_eq(flash_auth_jwk_thumbprint(rfc8037_x_hex, tp, sizeof(tp)), 43);
	ASSERT_STREQ(tp, "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k", "A.3 thumbprint");
	ASSERT_ERR(flash_auth_jwk_thumbprint(rfc8037_x_hex, tp, 43), -ENOSPC, "no room");
}

Test(rfc8037, a5_verification)
{
	void *payload = NULL;
	size_t n = 0;
	char jws[sizeof(rfc8037_jws)];

	ASSERT_OK(flash_auth_jws_verify(rfc8037_jws, strlen(rfc8037_jws), rfc8037_x_hex, &payload, &n), "A.5");
	cr_assert(n == 26 && memcmp(payload, "Example of Ed25519 signing", 26) == 0);
	free(payload);
	/* One bit anywhere in the signed bytes breaks it. */
	memcpy(jws, rfc8037_jws, sizeof(jws));
	jws[30] = jws[30] == 'A' ? 'B' : 'A';
	ASSERT_ERR(flash_auth_jws_verify(jws, strlen(jws), rfc8037_x_hex, &payload, &n), -FLASH_E_AUTH_SIGNATURE,
		   "tampered A.4");
}

Test(rfc8037, a4_jws_needs_a_kid_with_a_key_set, .init = setup, .fini = teardown)
{
	expect_reason(strdup(rfc8037_jws), FLASH_AUTH_ACTION_GET, FLASH_E_AUTH_KID_MISSING, "A.4 without kid");
}

/* ---------------------------------------------------------------- valid tokens */

Test(verify, valid_create_token, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW - 10, NOW + 50, "create", "\"gen\":18446744073709551615,\"jti\":\"j-1\""), *tok = NULL;
	struct flash_auth_token *t = NULL;
	_cleanup_flash_diag_ struct flash_diag *d = flash_test_diag();
	uint64_t gen = 0;

	ASSERT_OK(flash_auth_signer_sign(S, c, strlen(c), &tok), "sign");
	ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_CREATE, NOW, 0, &t, d), flash_test_message(d));
	cr_assert(flash_diag_count(d) == 0, "success leaves the diag empty");
	ASSERT_STREQ(flash_auth_token_kid(t), "k1", "kid");
	ASSERT_STREQ(flash_auth_token_org(t), "org-7f3a", "org");
	ASSERT_STREQ(flash_auth_token_project(t), "prj-19", "project");
	ASSERT_STREQ(flash_auth_token_jti(t), "j-1", "jti");
	ASSERT_STREQ(flash_auth_token_claims_json(t), c, "claims");
	cr_assert_eq(flash_auth_token_action(t), FLASH_AUTH_ACTION_CREATE);
	cr_assert_eq(flash_auth_token_iat(t), NOW - 10);
	cr_assert_eq(flash_auth_token_exp(t), NOW + 50);
	cr_assert(flash_auth_token_generation(t, &gen) && gen == UINT64_MAX);
	flash_auth_token_free(t);
	free(tok);
	free(c);
}

Test(verify, audience_array_and_second_key, .init = setup, .fini = teardown)
{
	char *c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":[\"other\",\"" AUD "\"],\"action\":\"get\",\"iat\":%lld,"
			    "\"exp\":%lld,\"org\":\"o\",\"project\":\"p\",\"extra\":{\"ignored\":[1,2]}}",
			    NOW, NOW + 60);
	char *tok = NULL;
	struct flash_auth_token *t = NULL;

	ASSERT_OK(flash_auth_signer_sign(S2, c, strlen(c), &tok), "sign with k2");
	ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_GET, NOW, 0, &t, NULL), "aud array, lifetime 60");
	ASSERT_STREQ(flash_auth_token_kid(t), "k2", "kid");
	cr_assert(!flash_auth_token_generation(t, NULL), "no gen on get");
	cr_assert_null(flash_auth_token_jti(t));
	flash_auth_token_free(t);
	free(tok);
	free(c);
}

/* The canonical header is recognised without parsing; any other spelling
 * goes through the parser with the same result. */
Test(verify, canonical_and_other_headers_agree, .init = setup, .fini = teardown)
{
	static const char *const headers[] = {
		"{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\"k2\"}",
		"{\"kid\":\"k2\",\"typ\":\"JWT\",\"alg\":\"EdDSA\"}",
		"{\"alg\":\"EdDSA\",\"kid\":\"k2\"}",
		" {\"alg\" : \"EdDSA\", \"kid\" : \"k2\"} ",
	};
	char *c = claims_with(NOW, NOW + 30, "get", "");

	for (size_t i = 0; i < ARRAY_SIZE(headers); i++) {
		struct flash_auth_token *t = NULL;
		char *tok = sign_raw(S2, headers[i], c);

		ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_GET, NOW, 0, &t, NULL), headers[i]);
		ASSERT_STREQ(flash_auth_token_kid(t), "k2", headers[i]);
		flash_auth_token_free(t);
		free(tok);
	}
	/* Canonical form, but signed by k1 under k2's kid. */
	expect_reason(sign_raw(S, headers[0], c), FLASH_AUTH_ACTION_GET, FLASH_E_AUTH_SIGNATURE,
		      "canonical header, other key");
	expect_reason(sign_raw(S, "{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\"k7\"}", c),
		      FLASH_AUTH_ACTION_GET, FLASH_E_AUTH_UNKNOWN_KID, "canonical header, unknown kid");
	free(c);
}

Test(verify, list_needs_neither_project_nor_gen, .init = setup, .fini = teardown)
{
	char *c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"action\":\"list\",\"iat\":%lld,\"exp\":%lld,"
			    "\"org\":\"o\"}", NOW, NOW + 30);
	char *tok = sign_raw(S, HDR, c);

	ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_LIST, NOW, 0, NULL, NULL), "list");
	free(tok);
	free(c);
}

Test(verify, time_window_edges, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 60, "delete", "\"gen\":3");
	char *tok = sign_raw(S, HDR, c);

	ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_DELETE, NOW, 0, NULL, NULL), "at iat");
	ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_DELETE, NOW + 59, 0, NULL, NULL), "exp - 1");
	ASSERT_ERR(verify_at(tok, FLASH_AUTH_ACTION_DELETE, NOW + 60, 0, NULL, NULL), -FLASH_E_AUTH_EXPIRED,
		   "at exp");
	ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_DELETE, NOW + 64, 5, NULL, NULL), "exp + 4, skew 5");
	ASSERT_ERR(verify_at(tok, FLASH_AUTH_ACTION_DELETE, NOW + 65, 5, NULL, NULL), -FLASH_E_AUTH_EXPIRED,
		   "exp + 5, skew 5");
	ASSERT_ERR(verify_at(tok, FLASH_AUTH_ACTION_DELETE, NOW - 1, 0, NULL, NULL),
		   -FLASH_E_AUTH_ISSUED_IN_FUTURE, "iat - 1, no skew");
	ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_DELETE, NOW - 2, 2, NULL, NULL), "iat - 2, skew 2");
	ASSERT_ERR(verify_at(tok, FLASH_AUTH_ACTION_DELETE, NOW - 3, 2, NULL, NULL),
		   -FLASH_E_AUTH_ISSUED_IN_FUTURE, "iat - 3, skew 2");
	ASSERT_ERR(verify_at(tok, FLASH_AUTH_ACTION_DELETE, NOW, 6, NULL, NULL), -EINVAL, "skew 6");
	free(tok);
	free(c);
}

Test(verify, nbf_is_honoured, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 60, "get", "\"nbf\":1800000020");
	char *tok = sign_raw(S, HDR, c);

	ASSERT_ERR(verify_at(tok, FLASH_AUTH_ACTION_GET, NOW + 10, 0, NULL, NULL), -FLASH_E_AUTH_NOT_YET_VALID,
		   "before nbf");
	ASSERT_ERR(verify_at(tok, FLASH_AUTH_ACTION_GET, NOW + 10, 5, NULL, NULL), -FLASH_E_AUTH_NOT_YET_VALID,
		   "nbf - 10, skew 5");
	ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_GET, NOW + 20, 0, NULL, NULL), "at nbf");
	ASSERT_OK(verify_at(tok, FLASH_AUTH_ACTION_GET, NOW + 16, 5, NULL, NULL), "nbf - 4, skew 5");
	free(tok);
	free(c);
}

Test(verify, bad_options)
{
	struct flash_auth_keyset *ks = NULL;

	ASSERT_OK(flash_auth_keyset_new(&ks), "keyset");
	{
		FLASH_OPTS(flash_auth_verify_opts, o, .issuer = ISS, .audience = AUD);
		ASSERT_ERR(flash_auth_verify(ks, "a.b.c", 5, &o, NULL, NULL), -EINVAL, "no action");
	}
	{
		FLASH_OPTS(flash_auth_verify_opts, o, .issuer = "", .audience = AUD, .action = FLASH_AUTH_ACTION_GET);
		ASSERT_ERR(flash_auth_verify(ks, "a.b.c", 5, &o, NULL, NULL), -EINVAL, "empty issuer");
	}
	ASSERT_ERR(flash_auth_verify(ks, "a.b.c", 5, NULL, NULL, NULL), -EINVAL, "no options");
	flash_auth_keyset_free(ks);
}

/* ---------------------------------------------------------------- negative tokens */

#define CREATE FLASH_AUTH_ACTION_CREATE

Test(negative, alg_none, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 30, "create", "\"gen\":1");
	char h[128], p[512];

	flash_auth_b64url_encode("{\"alg\":\"none\",\"kid\":\"k1\"}", 25, h, sizeof(h));
	flash_auth_b64url_encode(c, strlen(c), p, sizeof(p));
	expect_reason(xasprintf("%s.%s.", h, p), CREATE, FLASH_E_AUTH_ALG, "alg none, empty signature");
	free(c);
}

Test(negative, hs256_with_public_key_as_hmac_secret, .init = setup, .fini = teardown)
{
	static const char hdr[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"k1\"}";
	char *c = claims_with(NOW, NOW + 30, "create", "\"gen\":1");
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	char h[128], p[512], m[64], *input;

	flash_auth_b64url_encode(hdr, strlen(hdr), h, sizeof(h));
	flash_auth_b64url_encode(c, strlen(c), p, sizeof(p));
	input = xasprintf("%s.%s", h, p);
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, rfc8037_x_hex, sizeof(rfc8037_x_hex));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)input, strlen(input));
	crypto_auth_hmacsha256_final(&st, mac);
	flash_auth_b64url_encode(mac, sizeof(mac), m, sizeof(m));
	expect_reason(xasprintf("%s.%s", input, m), CREATE, FLASH_E_AUTH_ALG, "HS256 keyed with the public key");
	free(input);
	free(c);
}

Test(negative, rs256, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 30, "create", "\"gen\":1");
	char *tok = sign_raw(S, "{\"alg\":\"RS256\",\"kid\":\"k1\"}", c);

	expect_reason(tok, CREATE, FLASH_E_AUTH_ALG, "RS256");
	free(c);
}

Test(negative, alg_case_and_type, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 30, "create", "\"gen\":1");

	expect_reason(sign_raw(S, "{\"alg\":\"eddsa\",\"kid\":\"k1\"}", c), CREATE, FLASH_E_AUTH_ALG, "alg eddsa");
	expect_reason(sign_raw(S, "{\"alg\":[\"EdDSA\"],\"kid\":\"k1\"}", c), CREATE, FLASH_E_AUTH_ALG, "alg array");
	expect_reason(sign_raw(S, "{\"kid\":\"k1\"}", c), CREATE, FLASH_E_AUTH_ALG, "no alg");
	free(c);
}

Test(negative, header_rules, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 30, "create", "\"gen\":1");

	expect_reason(sign_raw(S, "{\"alg\":\"EdDSA\",\"typ\":\"JWT\"}", c), CREATE, FLASH_E_AUTH_KID_MISSING,
		      "missing kid");
	expect_reason(sign_raw(S, "{\"alg\":\"EdDSA\",\"kid\":\"k9\"}", c), CREATE, FLASH_E_AUTH_UNKNOWN_KID,
		      "unknown kid");
	expect_reason(sign_raw(S, "{\"alg\":\"EdDSA\",\"kid\":\"k1\",\"crit\":[\"exp\"]}", c), CREATE,
		      FLASH_E_AUTH_CRIT, "crit");
	expect_reason(sign_raw(S, "{\"alg\":\"EdDSA\",\"kid\":\"k1\",\"typ\":\"JOSE\"}", c), CREATE,
		      FLASH_E_AUTH_TYP, "typ JOSE");
	expect_reason(sign_raw(S, "{\"alg\":\"EdDSA\",\"kid\":\"k1\",\"jwk\":{\"kty\":\"OKP\"}}", c), CREATE,
		      FLASH_E_AUTH_HEADER, "embedded jwk");
	expect_reason(sign_raw(S, "{\"alg\":\"EdDSA\",\"kid\":7}", c), CREATE, FLASH_E_AUTH_HEADER, "kid number");
	expect_reason(sign_raw(S, "{\"alg\":\"EdDSA\",\"kid\":\"k1\",\"kid\":\"k1\"}", c), CREATE,
		      FLASH_E_AUTH_DUPLICATE_KEY, "duplicate header member");
	expect_reason(sign_raw(S, "[\"EdDSA\"]", c), CREATE, FLASH_E_AUTH_JSON, "header array");
	free(c);
}

Test(negative, tampering, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 30, "create", "\"gen\":1");
	char *good = sign_raw(S, HDR, c), *tok, *dot1 = strchr(good, '.'), *dot2 = strchr(dot1 + 1, '.');
	char *other = sign_raw(S, "{\"alg\":\"EdDSA\",\"kid\":\"k1\"}", c);
	char *c2 = claims_with(NOW, NOW + 30, "create", "\"gen\":2");
	char *other2 = sign_raw(S, HDR, c2);
	unsigned char sig[64];
	char sigtxt[100];
	size_t n;

	/* Header of another signed token, payload and signature of this one. */
	tok = xasprintf("%.*s%s", (int)(strchr(other, '.') - other), other, dot1);
	expect_reason(tok, CREATE, FLASH_E_AUTH_SIGNATURE, "tampered header");
	/* Payload with gen 2, signature over gen 1. */
	tok = xasprintf("%.*s%.*s%s", (int)(dot1 - good), good, (int)(strrchr(other2, '.') - strchr(other2, '.')),
			strchr(other2, '.'), dot2);
	expect_reason(tok, CREATE, FLASH_E_AUTH_SIGNATURE, "tampered payload");
	/* One bit of the signature. */
	ASSERT_OK(flash_auth_b64url_decode(dot2 + 1, strlen(dot2 + 1), sig, sizeof(sig), &n), "sig");
	sig[17] ^= 0x04;
	flash_auth_b64url_encode(sig, sizeof(sig), sigtxt, sizeof(sigtxt));
	tok = xasprintf("%.*s.%s", (int)(dot2 - good), good, sigtxt);
	expect_reason(tok, CREATE, FLASH_E_AUTH_SIGNATURE, "tampered signature");
	/* Signed by k2 but claiming k1. */
	expect_reason(sign_raw(S2, HDR, c), CREATE, FLASH_E_AUTH_SIGNATURE, "wrong key for the kid");
	/* A truncated signature. */
	tok = xasprintf("%.*s", (int)strlen(good) - 6, good);
	expect_reason(tok, CREATE, FLASH_E_AUTH_SIGNATURE, "short signature");
	free(good);
	free(other);
	free(other2);
	free(c);
	free(c2);
}

Test(negative, base64_and_structure, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 30, "create", "\"gen\":1");
	char *good = sign_raw(S, HDR, c), *dot1 = strchr(good, '.'), *tok;
	size_t len = strlen(good);

	expect_reason(xasprintf("%s==", good), CREATE, FLASH_E_AUTH_BASE64, "padded signature");
	/* 86 characters hold 64 bytes with 4 bits to spare: set one of them. */
	tok = strdup(good);
	tok[len - 1] = tok[len - 1] == 'A' ? 'B' : tok[len - 1] == 'Q' ? 'R' : (char)(tok[len - 1] ^ 1);
	expect_reason(tok, CREATE, FLASH_E_AUTH_BASE64, "non-canonical trailing bits");
	tok = strdup(good);
	tok[3] = '+';
	expect_reason(tok, CREATE, FLASH_E_AUTH_BASE64, "'+' in the header");
	tok = xasprintf("%.*s=%s", (int)(dot1 - good), good, dot1);
	expect_reason(tok, CREATE, FLASH_E_AUTH_BASE64, "padded header");
	expect_reason(xasprintf("%.*s", (int)(strrchr(good, '.') - good), good), CREATE, FLASH_E_AUTH_MALFORMED,
		      "two parts");
	expect_reason(xasprintf("%s.", good), CREATE, FLASH_E_AUTH_MALFORMED, "four parts");
	expect_reason(xasprintf("%s", ".e30.AAAA"), CREATE, FLASH_E_AUTH_MALFORMED, "empty header");
	expect_reason(strdup(""), CREATE, FLASH_E_AUTH_MALFORMED, "empty token");
	free(good);
	free(c);
}

Test(negative, sizes, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 30, "create", "\"gen\":1"), *big, *tok;
	size_t n = FLASH_AUTH_TOKEN_MAX + 1;

	big = malloc(n + 1);
	memset(big, 'A', n);
	big[n] = '\0';
	big[100] = '.';
	big[200] = '.';
	expect_reason(big, CREATE, FLASH_E_AUTH_OVERSIZED, "8193-byte token");
	/* Claims of 4200 bytes: the token fits 8192 but the payload does not fit 4096. */
	big = malloc(4200);
	memset(big, 'x', 4199);
	big[4199] = '\0';
	tok = xasprintf("\"gen\":1,\"pad\":\"%s\"", big);
	free(big);
	big = claims_with(NOW, NOW + 30, "create", tok);
	free(tok);
	expect_reason(sign_raw(S, HDR, big), CREATE, FLASH_E_AUTH_OVERSIZED, "4 KiB claims");
	free(big);
	free(c);
}

Test(negative, claims_json, .init = setup, .fini = teardown)
{
	char *c = xasprintf("{\"iss\":\"" ISS "\",\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"action\":\"create\","
			    "\"iat\":%lld,\"exp\":%lld,\"org\":\"o\",\"project\":\"p\",\"gen\":1}", NOW, NOW + 30);

	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_DUPLICATE_KEY, "duplicate claims");
	free(c);
	c = claims_with(NOW, NOW + 30, "create", "\"gen\":1");
	{
		char *g = xasprintf("%s x", c);

		expect_reason(sign_raw(S, HDR, g), CREATE, FLASH_E_AUTH_JSON, "trailing garbage");
		free(g);
		g = xasprintf("%s{}", c);
		expect_reason(sign_raw(S, HDR, g), CREATE, FLASH_E_AUTH_JSON, "two JSON values");
		free(g);
	}
	expect_reason(sign_raw(S, HDR, "[1,2]"), CREATE, FLASH_E_AUTH_JSON, "claims array");
	expect_reason(sign_raw(S, HDR, "{\"iss\":\"\xc3\x28\"}"), CREATE, FLASH_E_AUTH_JSON, "invalid UTF-8");
	free(c);
}

Test(negative, time_claims, .init = setup, .fini = teardown)
{
	char *c;

	c = claims_with(NOW, NOW + 61, "create", "\"gen\":1");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_LIFETIME, "lifetime 61 s");
	free(c);
	c = claims_with(NOW, NOW, "create", "\"gen\":1");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_LIFETIME, "exp == iat");
	free(c);
	c = claims_with(NOW - 70, NOW - 10, "create", "\"gen\":1");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_EXPIRED, "expired");
	free(c);
	c = claims_with(NOW + 10, NOW + 60, "create", "\"gen\":1");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_ISSUED_IN_FUTURE, "iat in the future");
	free(c);
	c = claims_with(NOW, NOW + 30, "create", "\"gen\":1,\"nbf\":1800000009");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_NOT_YET_VALID, "nbf in the future");
	free(c);
	c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"action\":\"create\",\"iat\":%lld,"
		      "\"org\":\"o\",\"project\":\"p\",\"gen\":1}", NOW);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_MISSING_CLAIM, "no exp");
	free(c);
	c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"action\":\"create\",\"iat\":%lld,\"exp\":%lld.5,"
		      "\"org\":\"o\",\"project\":\"p\",\"gen\":1}", NOW, NOW + 30);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_CLAIM_INVALID, "fractional exp");
	free(c);
	c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"action\":\"create\",\"iat\":\"%lld\",\"exp\":%lld,"
		      "\"org\":\"o\",\"project\":\"p\",\"gen\":1}", NOW, NOW + 30);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_CLAIM_INVALID, "iat as a string");
	free(c);
}

Test(negative, identity_claims, .init = setup, .fini = teardown)
{
	char *c;

	c = xasprintf("{\"iss\":\"https://evil.example\",\"aud\":\"" AUD "\",\"action\":\"create\",\"iat\":%lld,"
		      "\"exp\":%lld,\"org\":\"o\",\"project\":\"p\",\"gen\":1}", NOW, NOW + 30);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_ISSUER, "wrong issuer");
	free(c);
	c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"flash-provider/us-1\",\"action\":\"create\",\"iat\":%lld,"
		      "\"exp\":%lld,\"org\":\"o\",\"project\":\"p\",\"gen\":1}", NOW, NOW + 30);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_AUDIENCE, "wrong audience");
	free(c);
	c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":[\"a\",\"" AUD "x\"],\"action\":\"create\",\"iat\":%lld,"
		      "\"exp\":%lld,\"org\":\"o\",\"project\":\"p\",\"gen\":1}", NOW, NOW + 30);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_AUDIENCE, "audience array without ours");
	free(c);
	c = claims_with(NOW, NOW + 30, "delete", "\"gen\":1");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_ACTION, "delete token for create");
	free(c);
	c = claims_with(NOW, NOW + 30, "Create", "\"gen\":1");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_ACTION, "action with a capital");
	free(c);
	c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"act\":\"create\",\"iat\":%lld,"
		      "\"exp\":%lld,\"org\":\"o\",\"project\":\"p\",\"gen\":1}", NOW, NOW + 30);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_MISSING_CLAIM, "act instead of action");
	free(c);
}

Test(negative, tenant_and_generation, .init = setup, .fini = teardown)
{
	char *c, org[200];

	c = claims_with(NOW, NOW + 30, "create", "");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_GENERATION_MISSING, "create without gen");
	free(c);
	c = claims_with(NOW, NOW + 30, "update", "");
	expect_reason(sign_raw(S, HDR, c), FLASH_AUTH_ACTION_UPDATE, FLASH_E_AUTH_GENERATION_MISSING,
		      "update without gen");
	free(c);
	c = claims_with(NOW, NOW + 30, "create", "\"gen\":-1");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_CLAIM_INVALID, "negative gen");
	free(c);
	c = claims_with(NOW, NOW + 30, "create", "\"gen\":18446744073709551616");
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_CLAIM_INVALID, "gen 2^64");
	free(c);
	c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"action\":\"create\",\"iat\":%lld,"
		      "\"exp\":%lld,\"project\":\"p\",\"gen\":1}", NOW, NOW + 30);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_MISSING_CLAIM, "no org");
	free(c);
	memset(org, 'o', 129);
	org[129] = '\0';
	c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"action\":\"create\",\"iat\":%lld,"
		      "\"exp\":%lld,\"org\":\"%s\",\"project\":\"p\",\"gen\":1}", NOW, NOW + 30, org);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_CLAIM_INVALID, "org of 129 bytes");
	free(c);
	c = xasprintf("{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"action\":\"create\",\"iat\":%lld,"
		      "\"exp\":%lld,\"org\":\"o\\u0000x\",\"project\":\"p\",\"gen\":1}", NOW, NOW + 30);
	expect_reason(sign_raw(S, HDR, c), CREATE, FLASH_E_AUTH_CLAIM_INVALID, "org with NUL");
	free(c);
}

Test(negative, every_reason_has_its_name_and_text)
{
	for (int code = FLASH_E_AUTH_MALFORMED; code < FLASH_E_AUTH_MAX_; code++) {
		const char *name = flash_auth_reason_name(-code), *text = flash_strerror(-code);

		cr_assert(strcmp(name, "unknown") != 0, "code %d has no name", code);
		cr_assert(strcmp(text, "unknown flash error") != 0, "code %d has no text", code);
		for (int other = FLASH_E_AUTH_MALFORMED; other < code; other++) {
			cr_assert(strcmp(name, flash_auth_reason_name(other)) != 0, "name of %d repeated", code);
			cr_assert(strcmp(text, flash_strerror(other)) != 0, "text of %d repeated", code);
		}
	}
	ASSERT_STREQ(flash_auth_reason_name(FLASH_E_AUTH_MAX_), "unknown", "past the end");
}

/* The codes are an interface (flash_auth(3) lists them): they never move. */
Test(negative, reason_codes_are_stable)
{
	static const char *const names[] = {
		"malformed", "oversized", "bad-base64", "bad-json", "duplicate-key", "wrong-alg", "wrong-typ",
		"crit", "bad-header", "missing-kid", "unknown-kid", "bad-signature", "expired", "not-yet-valid",
		"issued-in-future", "lifetime-too-long", "wrong-issuer", "wrong-audience", "wrong-action",
		"missing-claim", "missing-generation", "bad-claim", "stale-generation", "generation-conflict",
		"bad-keyset", "bad-key", "duplicate-kid",
	};

	cr_assert_eq(FLASH_E_AUTH_MAX_ - FLASH_E_AUTH_MALFORMED, (int)ARRAY_SIZE(names));
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		ASSERT_STREQ(flash_auth_reason_name(6200 + (int)i), names[i], "code");
	cr_assert_eq(FLASH_E_AUTH_EXPIRED, 6212);
	cr_assert_eq(FLASH_E_AUTH_DUPLICATE_KID, 6226);
}

/* ---------------------------------------------------------------- key sets */

Test(keyset, jwks_and_map_forms)
{
	char *jwks = xasprintf("{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\",\"x\":\"%s\","
			       "\"use\":\"sig\",\"alg\":\"EdDSA\"}]}", rfc8037_x);
	char *map = xasprintf("{\"a\":\"%s\"}", rfc8037_x), *out = NULL;
	struct flash_auth_keyset *ks = NULL, *ks2 = NULL;
	_cleanup_flash_diag_ struct flash_diag *d = flash_test_diag();

	ASSERT_OK(flash_auth_keyset_parse(jwks, strlen(jwks), &ks, d), flash_test_message(d));
	cr_assert(flash_auth_keyset_count(ks) == 1 && flash_auth_keyset_has(ks, "a") && !flash_auth_keyset_has(ks, "b"));
	ASSERT_OK(flash_auth_keyset_to_jwks(ks, &out), "to_jwks");
	ASSERT_OK(flash_auth_keyset_parse(out, strlen(out), &ks2, d), "re-parse own JWKS");
	cr_assert(flash_auth_keyset_has(ks2, "a"));
	flash_auth_keyset_free(ks2);
	ks2 = NULL;
	flash_auth_keyset_free(ks);
	ks = NULL;
	ASSERT_OK(flash_auth_keyset_parse(map, strlen(map), &ks, d), flash_test_message(d));
	cr_assert(flash_auth_keyset_has(ks, "a"));
	flash_auth_keyset_free(ks);
	free(out);
	free(jwks);
	free(map);
}

static void expect_keyset_error(const char *json, int err)
{
	struct flash_auth_keyset *ks = NULL;
	_cleanup_flash_diag_ struct flash_diag *d = flash_test_diag();
	int r = flash_auth_keyset_parse(json, strlen(json), &ks, d);
	const char *detail = flash_test_message(d);

	cr_assert(r == err, "%s: got %d (%s), expected %d", json, r, detail, err);
	cr_assert(detail[0], "%s: no detail", json);
	ASSERT_STREQ(flash_diag_first_error(d)->code, flash_auth_reason_name(err), "diag code");
	cr_assert_null(ks);
}

Test(keyset, refusals)
{
	/* A small-order point: y = 1 (the identity). */
	static const char identity[] = "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
	char buf[512];

	expect_keyset_error("{}", -FLASH_E_AUTH_KEYSET);
	expect_keyset_error("{\"keys\":[]}", -FLASH_E_AUTH_KEYSET);
	expect_keyset_error("[]", -FLASH_E_AUTH_KEYSET);
	snprintf(buf, sizeof(buf), "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"%s\",\"d\":\"%s\"}", rfc8037_x,
		 rfc8037_d);
	expect_keyset_error(buf, -FLASH_E_AUTH_KEYSET);
	expect_keyset_error("{\"a\":\"x\",\"a\":\"y\"}", -FLASH_E_AUTH_KEYSET);
	expect_keyset_error("{\"a\":\"AAAA\"}", -FLASH_E_AUTH_KEY);
	snprintf(buf, sizeof(buf), "{\"a\":\"%s=\"}", rfc8037_x);
	expect_keyset_error(buf, -FLASH_E_AUTH_BASE64);
	snprintf(buf, sizeof(buf), "{\"a b\":\"%s\"}", rfc8037_x);
	expect_keyset_error(buf, -FLASH_E_AUTH_KEY);
	snprintf(buf, sizeof(buf), "{\"a\":\"%s\"}", identity);
	expect_keyset_error(buf, -FLASH_E_AUTH_KEY);
	snprintf(buf, sizeof(buf), "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\",\"x\":\"%s\"},"
		 "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\",\"x\":\"%s\"}]}", rfc8037_x, rfc8037_x);
	expect_keyset_error(buf, -FLASH_E_AUTH_DUPLICATE_KID);
	snprintf(buf, sizeof(buf), "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\",\"x\":\"%s\","
		 "\"d\":\"%s\"}]}", rfc8037_x, rfc8037_d);
	expect_keyset_error(buf, -FLASH_E_AUTH_KEY);
	snprintf(buf, sizeof(buf), "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"a\",\"x\":\"%s\"}]}",
		 rfc8037_x);
	expect_keyset_error(buf, -FLASH_E_AUTH_KEY);
	snprintf(buf, sizeof(buf), "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed448\",\"kid\":\"a\",\"x\":\"%s\"}]}",
		 rfc8037_x);
	expect_keyset_error(buf, -FLASH_E_AUTH_KEY);
	snprintf(buf, sizeof(buf), "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"%s\"}]}", rfc8037_x);
	expect_keyset_error(buf, -FLASH_E_AUTH_KEY);
	snprintf(buf, sizeof(buf), "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\",\"use\":\"enc\","
		 "\"x\":\"%s\"}]}", rfc8037_x);
	expect_keyset_error(buf, -FLASH_E_AUTH_KEY);
}

Test(keyset, rotation, .init = setup, .fini = teardown)
{
	char *c = claims_with(NOW, NOW + 30, "get", ""), *old_tok = sign_raw(S, HDR, c), *new_tok;
	struct flash_auth_keyset *rotated = NULL;
	struct flash_auth_signer *k3 = NULL;
	unsigned char pk[32];
	FLASH_OPTS(flash_auth_verify_opts, o, .issuer = ISS, .audience = AUD, .action = FLASH_AUTH_ACTION_GET,
		   .now = NOW);

	/* Before: k1 in use.  During: k1 and k3.  After: k3 only. */
	ASSERT_OK(flash_auth_signer_generate("k3", &k3), "k3");
	new_tok = sign_raw(k3, "{\"alg\":\"EdDSA\",\"kid\":\"k3\"}", c);
	ASSERT_ERR(flash_auth_verify(KS, new_tok, strlen(new_tok), &o, NULL, NULL), -FLASH_E_AUTH_UNKNOWN_KID,
		   "k3 before rotation");
	ASSERT_OK(flash_auth_keyset_new(&rotated), "new set");
	ASSERT_OK(flash_auth_signer_public_key(S, pk), "pk k1");
	ASSERT_OK(flash_auth_keyset_add(rotated, "k1", pk), "k1");
	ASSERT_OK(flash_auth_signer_public_key(k3, pk), "pk k3");
	ASSERT_OK(flash_auth_keyset_add(rotated, "k3", pk), "k3");
	ASSERT_ERR(flash_auth_keyset_add(rotated, "k3", pk), -FLASH_E_AUTH_DUPLICATE_KID, "k3 twice");
	ASSERT_OK(flash_auth_verify(rotated, old_tok, strlen(old_tok), &o, NULL, NULL), "k1 during rotation");
	ASSERT_OK(flash_auth_verify(rotated, new_tok, strlen(new_tok), &o, NULL, NULL), "k3 during rotation");
	flash_auth_keyset_free(rotated);
	rotated = NULL;
	ASSERT_OK(flash_auth_keyset_new(&rotated), "after");
	ASSERT_OK(flash_auth_keyset_add(rotated, "k3", pk), "k3");
	ASSERT_ERR(flash_auth_verify(rotated, old_tok, strlen(old_tok), &o, NULL, NULL), -FLASH_E_AUTH_UNKNOWN_KID,
		   "k1 after rotation");
	ASSERT_OK(flash_auth_verify(rotated, new_tok, strlen(new_tok), &o, NULL, NULL), "k3 after rotation");
	flash_auth_keyset_free(rotated);
	flash_auth_signer_free(k3);
	free(old_tok);
	free(new_tok);
	free(c);
}

/* ---------------------------------------------------------------- signing keys */

Test(signer, private_jwk_round_trip, .init = setup, .fini = teardown)
{
	struct flash_auth_signer *back = NULL;
	_cleanup_flash_diag_ struct flash_diag *d = flash_test_diag();
	char *jwk = NULL, *bad;
	unsigned char a[32], b[32];

	ASSERT_OK(flash_auth_signer_to_jwk(S, &jwk), "to_jwk");
	cr_assert(strstr(jwk, rfc8037_d) && strstr(jwk, rfc8037_x) && strstr(jwk, "\"kid\":\"k1\""), "%s", jwk);
	ASSERT_OK(flash_auth_signer_parse(jwk, strlen(jwk), &back, d), flash_test_message(d));
	ASSERT_STREQ(flash_auth_signer_kid(back), "k1", "kid");
	ASSERT_OK(flash_auth_signer_set_kid(back, "k-2026.11"), "set kid");
	ASSERT_STREQ(flash_auth_signer_kid(back), "k-2026.11", "kid replaced");
	ASSERT_ERR(flash_auth_signer_set_kid(back, "bad kid"), -FLASH_E_AUTH_KEY, "kid with a space");
	ASSERT_OK(flash_auth_signer_public_key(S, a), "a");
	ASSERT_OK(flash_auth_signer_public_key(back, b), "b");
	cr_assert(memcmp(a, b, 32) == 0);
	flash_auth_signer_free(back);
	back = NULL;
	/* x of another key. */
	bad = xasprintf("{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"d\":\"%s\",\"x\":\"%s\"}", rfc8037_d,
			"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
	ASSERT_ERR(flash_auth_signer_parse(bad, strlen(bad), &back, d), -FLASH_E_AUTH_KEY,
		   "x not of d");
	cr_assert(strstr(flash_test_message(d), "x is not the public key of d"), "%s", flash_test_message(d));
	ASSERT_STREQ(flash_diag_first_error(d)->code, "bad-key", "diag code");
	cr_assert_null(back);
	free(bad);
	free(jwk);
}

Test(signer, sign_refuses_bad_claims, .init = setup, .fini = teardown)
{
	char *tok = NULL;

	ASSERT_ERR(flash_auth_signer_sign(S, "{\"a\":1,\"a\":2}", 13, &tok), -FLASH_E_AUTH_DUPLICATE_KEY, "dup");
	ASSERT_ERR(flash_auth_signer_sign(S, "[]", 2, &tok), -FLASH_E_AUTH_JSON, "array");
	ASSERT_ERR(flash_auth_signer_sign(S, "{} x", 4, &tok), -FLASH_E_AUTH_JSON, "garbage");
	cr_assert_null(tok);
}

/* ---------------------------------------------------------------- operation ids */

static struct flash_auth_opid opid_of(const char *org, const char *project, const char *service,
				      enum flash_auth_action action, uint64_t gen, const char *digest)
{
	FLASH_OPTS(flash_auth_operation, op, .org = org, .project = project, .service = service, .action = action,
		   .generation = gen, .spec_digest = digest, .spec_digest_len = digest ? strlen(digest) : 0);
	struct flash_auth_opid id;

	ASSERT_OK(flash_auth_operation_id(&op, &id), "operation id");
	return id;
}

Test(opid, deterministic_and_sensitive_to_every_field)
{
	struct flash_auth_opid base = opid_of("o", "p", "svc", FLASH_AUTH_ACTION_UPDATE, 5, "digest");
	struct flash_auth_opid same = opid_of("o", "p", "svc", FLASH_AUTH_ACTION_UPDATE, 5, "digest");
	struct flash_auth_opid diff[] = {
		opid_of("o2", "p", "svc", FLASH_AUTH_ACTION_UPDATE, 5, "digest"),
		opid_of("o", "p2", "svc", FLASH_AUTH_ACTION_UPDATE, 5, "digest"),
		opid_of("o", "p", "svc2", FLASH_AUTH_ACTION_UPDATE, 5, "digest"),
		opid_of("o", "p", "svc", FLASH_AUTH_ACTION_CREATE, 5, "digest"),
		opid_of("o", "p", "svc", FLASH_AUTH_ACTION_UPDATE, 6, "digest"),
		opid_of("o", "p", "svc", FLASH_AUTH_ACTION_UPDATE, 5, "digesT"),
		opid_of("o", "p", "svc", FLASH_AUTH_ACTION_UPDATE, 5, NULL),
		/* Moving bytes between fields changes the id (length prefixes). */
		opid_of("op", "", "svc", FLASH_AUTH_ACTION_UPDATE, 5, "digest"),
		opid_of("o", "ps", "vc", FLASH_AUTH_ACTION_UPDATE, 5, "digest"),
	};

	cr_assert(memcmp(&base, &same, 16) == 0, "same input, same id");
	for (size_t i = 0; i < ARRAY_SIZE(diff); i++) {
		cr_assert(memcmp(&base, &diff[i], 16) != 0, "variant %zu gives the same id", i);
		cr_assert((diff[i].bytes[6] >> 4) == 8 && (diff[i].bytes[8] >> 6) == 2, "version/variant %zu", i);
	}
}

/* Recomputes the id from the encoding documented in flash_auth(3). */
Test(opid, matches_the_documented_encoding)
{
	static const char *const fields[] = { "flash.operation-id.v1", "org-1", "proj-1", "web", "update" };
	static const unsigned char digest[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
						  17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
	unsigned char enc[256], want[16];
	size_t o = 0;
	uint64_t gen = 0x0102030405060708ULL;
	char text[FLASH_AUTH_OPID_STRLEN], upper[FLASH_AUTH_OPID_STRLEN];
	struct flash_auth_opid id, parsed;
	FLASH_OPTS(flash_auth_operation, op, .org = "org-1", .project = "proj-1", .service = "web",
		   .action = FLASH_AUTH_ACTION_UPDATE, .generation = gen, .spec_digest = digest,
		   .spec_digest_len = sizeof(digest));

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		size_t n = strlen(fields[i]);

		enc[o++] = 0, enc[o++] = 0, enc[o++] = 0, enc[o++] = (unsigned char)n;
		memcpy(enc + o, fields[i], n);
		o += n;
	}
	enc[o++] = 0, enc[o++] = 0, enc[o++] = 0, enc[o++] = 8;
	for (int i = 0; i < 8; i++)
		enc[o++] = (unsigned char)(gen >> (56 - 8 * i));
	enc[o++] = 0, enc[o++] = 0, enc[o++] = 0, enc[o++] = 32;
	memcpy(enc + o, digest, 32);
	o += 32;
	crypto_generichash(want, sizeof(want), enc, o, NULL, 0);
	want[6] = (want[6] & 0x0f) | 0x80;
	want[8] = (want[8] & 0x3f) | 0x80;

	ASSERT_OK(flash_auth_operation_id(&op, &id), "id");
	cr_assert(memcmp(id.bytes, want, 16) == 0, "documented encoding");
	cr_assert_eq(flash_auth_opid_format(&id, text, sizeof(text)), 36);
	cr_assert(text[8] == '-' && text[13] == '-' && text[14] == '8' && text[18] == '-' && text[23] == '-');
	cr_assert(strchr("89ab", text[19]), "variant nibble %c", text[19]);
	for (size_t i = 0; i < sizeof(text); i++)
		upper[i] = (char)(text[i] >= 'a' && text[i] <= 'f' ? text[i] - 32 : text[i]);
	ASSERT_OK(flash_auth_opid_parse(upper, &parsed), "parse upper case");
	cr_assert(memcmp(&parsed, &id, 16) == 0);
	ASSERT_ERR(flash_auth_opid_parse("0123", &parsed), -EINVAL, "short");
	text[8] = 'x';
	ASSERT_ERR(flash_auth_opid_parse(text, &parsed), -EINVAL, "no hyphen");
}

Test(opid, bad_arguments)
{
	struct flash_auth_opid id;
	char big[300];
	FLASH_OPTS(flash_auth_operation, op, .org = "", .project = "", .service = "", .action = FLASH_AUTH_ACTION_GET);

	ASSERT_ERR(flash_auth_operation_id(&op, &id), -EINVAL, "empty org");
	op.org = "o";
	op.action = FLASH_AUTH_ACTION_NONE;
	ASSERT_ERR(flash_auth_operation_id(&op, &id), -EINVAL, "no action");
	op.action = FLASH_AUTH_ACTION_GET;
	memset(big, 's', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	op.service = big;
	ASSERT_ERR(flash_auth_operation_id(&op, &id), -EINVAL, "service of 299 bytes");
	op.service = "";
	op.spec_digest_len = 65;
	op.spec_digest = big;
	ASSERT_ERR(flash_auth_operation_id(&op, &id), -EINVAL, "digest of 65 bytes");
}

/* ---------------------------------------------------------------- generations */

Test(generation, decisions)
{
	struct flash_auth_opid a = opid_of("o", "p", "s", FLASH_AUTH_ACTION_UPDATE, 5, "d1");
	struct flash_auth_opid b = opid_of("o", "p", "s", FLASH_AUTH_ACTION_UPDATE, 5, "d2");
	enum flash_auth_gen_decision d = 0;

	ASSERT_OK(flash_auth_generation_decide(false, 0, NULL, 0, &a, &d), "nothing stored");
	cr_assert_eq(d, FLASH_AUTH_GEN_APPLY);
	d = 0;
	ASSERT_OK(flash_auth_generation_decide(true, 4, &b, 5, &a, &d), "newer");
	cr_assert_eq(d, FLASH_AUTH_GEN_APPLY);
	ASSERT_OK(flash_auth_generation_decide(true, 5, &a, 5, &a, &d), "same");
	cr_assert_eq(d, FLASH_AUTH_GEN_DUPLICATE);
	d = 0;
	ASSERT_ERR(flash_auth_generation_decide(true, 5, &b, 5, &a, &d), -FLASH_E_AUTH_GENERATION_CONFLICT,
		   "same generation, other operation");
	ASSERT_ERR(flash_auth_generation_decide(true, 6, &a, 5, &a, &d), -FLASH_E_AUTH_STALE_GENERATION, "older");
	ASSERT_ERR(flash_auth_generation_decide(true, UINT64_MAX, &a, 0, &a, &d), -FLASH_E_AUTH_STALE_GENERATION,
		   "0 after max");
	cr_assert_eq(d, 0, "decision written on refusal");
	ASSERT_ERR(flash_auth_generation_decide(true, 1, NULL, 2, &a, &d), -EINVAL, "stored without op");
}

/* ---------------------------------------------------------------- key files */

Test(keyfile, written_0600_and_not_replaced)
{
	char dir[] = "/tmp/test-auth-XXXXXX", path[64];
	char *data = NULL;
	size_t n = 0;
	struct stat st;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/key.json", dir);
	ASSERT_OK(flash_auth_key_file_write(path, "{}", 2, false), "write");
	cr_assert(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600, "mode %o", st.st_mode & 07777);
	ASSERT_ERR(flash_auth_key_file_write(path, "[]", 2, false), -EEXIST, "no overwrite");
	ASSERT_OK(flash_file_read_secret(path, 0, &data, &n), "read back");
	ASSERT_STREQ(data, "{}", "not replaced");
	free(data);
	data = NULL;
	ASSERT_OK(flash_auth_key_file_write(path, "[]", 2, true), "overwrite");
	ASSERT_OK(flash_file_read_secret(path, 0, &data, &n), "read after overwrite");
	ASSERT_STREQ(data, "[]", "replaced");
	free(data);
	cr_assert(chmod(path, 0644) == 0);
	ASSERT_ERR(flash_file_read_secret(path, 0, &data, &n), -EPERM, "0644 refused");
	unlink(path);
	rmdir(dir);
}

/* ---------------------------------------------------------------- actions */

Test(action, names)
{
	enum flash_auth_action a;

	for (int i = FLASH_AUTH_ACTION_CREATE; i < FLASH_AUTH_ACTION_MAX_; i++) {
		ASSERT_OK(flash_auth_action_parse(flash_auth_action_name(i), &a), "round trip");
		cr_assert_eq((int)a, i);
	}
	ASSERT_OK(flash_auth_action_parse("logs", &a), "logs");
	cr_assert_eq(a, FLASH_AUTH_ACTION_LOGS);
	cr_assert(!flash_auth_action_is_mutation(FLASH_AUTH_ACTION_LOGS), "reading logs carries no generation");
	ASSERT_OK(flash_auth_action_parse("sandbox", &a), "sandbox");
	cr_assert_eq(a, FLASH_AUTH_ACTION_SANDBOX);
	cr_assert(!flash_auth_action_is_mutation(FLASH_AUTH_ACTION_SANDBOX), "sandbox commands carry no generation");
	cr_assert_null(flash_auth_action_name(FLASH_AUTH_ACTION_MAX_));
	ASSERT_ERR(flash_auth_action_parse("act", &a), -EINVAL, "act");
	ASSERT_ERR(flash_auth_action_parse("CREATE", &a), -EINVAL, "upper case");
	cr_assert_null(flash_auth_action_name(FLASH_AUTH_ACTION_NONE));
	cr_assert(flash_auth_action_is_mutation(FLASH_AUTH_ACTION_DELETE) &&
		  !flash_auth_action_is_mutation(FLASH_AUTH_ACTION_EXEC));
}
