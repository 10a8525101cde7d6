/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the token parser of <flash/auth.h>.  The first byte
 * of an input picks what the rest is:
 *   't'  a compact token, verified against a key set holding the RFC 8037
 *        A.1 key as "k1" and with that key alone (flash_auth_jws_verify);
 *   'c'  a claims set: signed with the A.1 key (header alg/typ/kid), then
 *        verified for the action chosen by the next byte, so that the claim
 *        checks behind the signature are reached;
 *   'h'  a protected header: signed with fixed valid claims, then verified;
 *   'k'  a key set document, then a private JWK;
 *   'b'  base64url text: when it decodes, encoding the bytes again must
 *        give the same text (strict decoding means one text per value);
 *   anything else: the whole input as a token.
 * Crashes, sanitizer reports and broken invariants are findings.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <flash/auth.h>

#define NOW 1800000000

static const unsigned char seed[32] = {
	0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
	0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
};
static const char valid_claims[] =
	"{\"iss\":\"mp\",\"aud\":\"prov\",\"action\":\"update\",\"iat\":1800000000,\"exp\":1800000060,"
	"\"org\":\"o\",\"project\":\"p\",\"gen\":1}";

static struct flash_auth_signer *signer;
static struct flash_auth_keyset *keys;
static unsigned char public_key[32];
static struct flash_diag *diag;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (flash_auth_signer_from_seed(seed, "k1", &signer) < 0 || flash_auth_signer_public_key(signer, public_key) < 0 ||
	    flash_auth_keyset_new(&keys) < 0 || flash_auth_keyset_add(keys, "k1", public_key) < 0 ||
	    flash_diag_new(&diag) < 0)
		abort();
	return 0;
}

static void verify(const char *tok, size_t len, enum flash_auth_action action)
{
	FLASH_OPTS(flash_auth_verify_opts, o, .issuer = "mp", .audience = "prov", .action = action, .now = NOW,
		   .skew = 2);
	struct flash_auth_token *t = NULL;
	int r = flash_auth_verify(keys, tok, len, &o, &t, diag);

	/* One entry naming the refusal, none on success. */
	if (flash_diag_count(diag) != (r < 0 && r != -ENOMEM ? 1u : 0u))
		abort();
	if (r == 0) {
		/* Accepted: the accessors hold what was checked. */
		if (!t || flash_auth_token_action(t) != action || !flash_auth_token_org(t) ||
		    flash_auth_token_exp(t) - flash_auth_token_iat(t) > FLASH_AUTH_LIFETIME_MAX ||
		    (flash_auth_action_is_mutation(action) && !flash_auth_token_generation(t, NULL)))
			abort();
	} else if (t) {
		abort();
	}
	flash_auth_token_free(t);
}

static void fuzz_token(const uint8_t *data, size_t size)
{
	void *payload = NULL;
	size_t n = 0;

	verify((const char *)data, size, FLASH_AUTH_ACTION_UPDATE);
	if (flash_auth_jws_verify((const char *)data, size, public_key, &payload, &n) == 0)
		free(payload);
}

static void fuzz_signed(const void *header, size_t header_len, const void *claims, size_t claims_len,
			enum flash_auth_action action)
{
	char *tok = NULL;

	if (flash_auth_signer_sign_raw(signer, header, header_len, claims, claims_len, &tok) == 0) {
		verify(tok, strlen(tok), action);
		free(tok);
	}
}

static void fuzz_b64url(const uint8_t *data, size_t size)
{
	unsigned char *dec = malloc(size + 1);
	char *enc = malloc(size + 2);
	size_t n = 0;

	if (!dec || !enc)
		abort();
	if (flash_auth_b64url_decode((const char *)data, size, dec, size + 1, &n) == 0) {
		int len = flash_auth_b64url_encode(dec, n, enc, size + 2);

		if (len < 0 || (size_t)len != size || memcmp(enc, data, size) != 0)
			abort();
	}
	free(dec);
	free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char header[] = "{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\"k1\"}";
	struct flash_auth_keyset *ks = NULL;
	struct flash_auth_signer *s = NULL;

	if (size == 0)
		return 0;
	switch (data[0]) {
	case 't':
		fuzz_token(data + 1, size - 1);
		break;
	case 'c':
		if (size >= 2)
			fuzz_signed(header, strlen(header), data + 2, size - 2,
				    (enum flash_auth_action)(data[1] % 7 + 1));
		break;
	case 'h':
		fuzz_signed(data + 1, size - 1, valid_claims, strlen(valid_claims), FLASH_AUTH_ACTION_UPDATE);
		break;
	case 'k':
		if (flash_auth_keyset_parse((const char *)data + 1, size - 1, &ks, NULL) == 0 &&
		    flash_auth_keyset_count(ks) == 0)
			abort();
		flash_auth_keyset_free(ks);
		if (flash_auth_signer_parse((const char *)data + 1, size - 1, &s, diag) == 0 && !s)
			abort();
		flash_auth_signer_free(s);
		break;
	case 'b':
		fuzz_b64url(data + 1, size - 1);
		break;
	default:
		fuzz_token(data, size);
		break;
	}
	return 0;
}
