/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The auth module's shared leaf: reason names and texts, strict base64url
 * (RFC 4648 section 5, unpadded), key id syntax, detail strings, the one
 * diag entry of a refusal and JSON error mapping, called
 * by auth.c, auth-jws.c and auth-keyset.c and calling none of them. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "auth-private.h"
#include "internal.h"
#include "names.h"
/* Reason texts and short names, indexed by code - FLASH_E_AUTH_MALFORMED. */
static const struct {
	const char *name;
	const char *text;
} reasons[] = {
#define R(code, n, t) [FLASH_E_AUTH_##code - FLASH_E_AUTH_MALFORMED] = { n, t }
	R(MALFORMED, "malformed", "token is not a compact JWS (three base64url parts joined by '.')"),
	R(OVERSIZED, "oversized", "token or one of its parts is too large"),
	R(BASE64, "bad-base64", "bad base64url (padding, foreign character or non-canonical trailing bits)"),
	R(JSON, "bad-json", "header or claims are not one strict JSON object"),
	R(DUPLICATE_KEY, "duplicate-key", "header or claims repeat a member"),
	R(ALG, "wrong-alg", "algorithm is not EdDSA"),
	R(TYP, "wrong-typ", "typ is not JWT"),
	R(CRIT, "crit", "critical header extensions are refused"),
	R(HEADER, "bad-header", "header parameter not accepted or of the wrong type"),
	R(KID_MISSING, "missing-kid", "token header has no kid"),
	R(UNKNOWN_KID, "unknown-kid", "kid is not in the key set"),
	R(SIGNATURE, "bad-signature", "signature does not verify"),
	R(EXPIRED, "expired", "token has expired"),
	R(NOT_YET_VALID, "not-yet-valid", "token is not yet valid (nbf)"),
	R(ISSUED_IN_FUTURE, "issued-in-future", "token is issued in the future (iat beyond the clock skew)"),
	R(LIFETIME, "lifetime-too-long", "token lifetime exp - iat exceeds 60 seconds or is not positive"),
	R(ISSUER, "wrong-issuer", "issuer is not the configured one"),
	R(AUDIENCE, "wrong-audience", "audience does not include this provider"),
	R(ACTION, "wrong-action", "action does not match the request"),
	R(MISSING_CLAIM, "missing-claim", "a required claim is missing"),
	R(GENERATION_MISSING, "missing-generation", "create, update and delete need a generation (gen)"),
	R(CLAIM_INVALID, "bad-claim", "a claim has the wrong type, range or length"),
	R(STALE_GENERATION, "stale-generation", "generation is older than the stored one"),
	R(GENERATION_CONFLICT, "generation-conflict", "same generation as stored but a different operation"),
	R(KEYSET, "bad-keyset", "key set is malformed or empty"),
	R(KEY, "bad-key", "key is not a valid Ed25519 OKP key"),
	R(DUPLICATE_KID, "duplicate-kid", "two keys have the same kid"),
#undef R
};
_Static_assert(ARRAY_SIZE(reasons) == FLASH_E_AUTH_MAX_ - FLASH_E_AUTH_MALFORMED, "a reason without text");

const char *flash__auth_strerror(int code)
{
	size_t i = (size_t)(code - FLASH_E_AUTH_MALFORMED);

	return code >= FLASH_E_AUTH_MALFORMED && i < ARRAY_SIZE(reasons) ? reasons[i].text : NULL;
}

FLASH_API const char *flash_auth_reason_name(int err)
{
	int code = err < 0 ? -err : err;
	size_t i = (size_t)(code - FLASH_E_AUTH_MALFORMED);

	return code >= FLASH_E_AUTH_MALFORMED && i < ARRAY_SIZE(reasons) ? reasons[i].name : "unknown";
}

static const char b64url_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* 0..63 for an alphabet character, XX (0xff) for anything else. */
#define XX 0xff
static const unsigned char b64url_table[256] = {
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, 62, XX, XX,
	52, 53, 54, 55, 56, 57, 58, 59, 60, 61, XX, XX, XX, XX, XX, XX,
	XX,  0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14,
	15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, XX, XX, XX, XX, 63,
	XX, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
	41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
};
#undef XX

static inline unsigned char b64url_val(unsigned char c)
{
	return b64url_table[c];
}

bool auth__b64url_is_alphabet(unsigned char c)
{
	return b64url_table[c] != 0xff;
}

void auth__detail(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

char *auth__diag_begin(struct flash_diag *diag, char *buf)
{
	diag_begin(flash__diag(diag), 0);
	if (!diag)
		return NULL;
	buf[0] = '\0';
	return buf;
}

int auth__diag_end(struct flash_diag *diag, int r, const char *detail)
{
	const char *code;

	if (!diag || r >= 0 || r == -ENOMEM)
		return r;
	code = r == -EINVAL ? "invalid-argument" : flash_auth_reason_name(r);
	if ((!detail || !detail[0]) && r == -EINVAL)
		detail = "invalid arguments or options";
	else if (!detail || !detail[0])
		detail = flash__auth_strerror(-r);
	if (!detail)
		detail = "refused";
	diag_add_text(flash__diag(diag), DIAG_ERROR, "", code, NULL, "%s", detail);
	return r;
}

int auth__b64url_decode(const char *text, size_t len, unsigned char *out, size_t size,
			size_t *ret_len, size_t *ret_bad)
{
	size_t rem = len % 4, full = len - rem, n = full / 4 * 3 + (rem ? rem - 1 : 0), o = 0, i;
	const unsigned char *t = (const unsigned char *)text;
	unsigned char seen = 0; /* OR of every value: 0xff shows a foreign character */
	unsigned char scratch[3];

	if (out && n > size)
		return -ENOSPC;
	/* One pass: decode (into scratch when only measuring), then look at
	 * what was seen. */
	for (i = 0; i < full; i += 4) {
		unsigned char a = b64url_val(t[i]), b = b64url_val(t[i + 1]), c = b64url_val(t[i + 2]),
			      d = b64url_val(t[i + 3]);
		uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | d;
		unsigned char *dst = out ? out + o : scratch;

		seen |= a | b | c | d;
		dst[0] = (unsigned char)(v >> 16);
		dst[1] = (unsigned char)(v >> 8);
		dst[2] = (unsigned char)v;
		o += out ? 3 : 0;
	}
	for (i = full; i < len; i++)
		seen |= b64url_val(t[i]);
	if (seen == 0xff || (seen & 0xc0)) {
		for (i = 0; b64url_val(t[i]) != 0xff; i++)
			;
		goto out_bad;
	}
	if (rem == 1) {
		/* One character carries 6 bits: not a whole byte. */
		i = len - 1;
		goto out_bad;
	}
	/* The unused low bits of the last character must be zero, so that
	 * every byte string has exactly one encoding. */
	if ((rem == 2 && (b64url_val(t[len - 1]) & 0x0f)) || (rem == 3 && (b64url_val(t[len - 1]) & 0x03))) {
		i = len - 1;
		goto out_bad;
	}
	if (out && rem >= 2) {
		uint32_t v = (uint32_t)b64url_val(t[full]) << 18 | (uint32_t)b64url_val(t[full + 1]) << 12;

		if (rem == 3)
			v |= (uint32_t)b64url_val(t[full + 2]) << 6;
		out[o++] = (unsigned char)(v >> 16);
		if (rem == 3)
			out[o++] = (unsigned char)(v >> 8);
	}
	*ret_len = n;
	return 0;

out_bad:
	if (ret_bad)
		*ret_bad = i;
	return -FLASH_E_AUTH_BASE64;
}

FLASH_API int flash_auth_b64url_decode(const char *text, size_t len, void *buf, size_t size, size_t *ret_len)
{
	if ((!text && len) || !buf || !ret_len)
		return -EINVAL;
	return auth__b64url_decode(text ? text : "", len, buf, size, ret_len, NULL);
}

FLASH_API int flash_auth_b64url_encode(const void *data, size_t len, char *buf, size_t size)
{
	const unsigned char *d = data;
	size_t need = B64URL_LEN(len), o = 0, i;

	if ((!data && len) || !buf)
		return -EINVAL;
	if (need >= size || need > INT32_MAX)
		return -ENOSPC;
	for (i = 0; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];

		buf[o++] = b64url_alphabet[v >> 18 & 63];
		buf[o++] = b64url_alphabet[v >> 12 & 63];
		buf[o++] = b64url_alphabet[v >> 6 & 63];
		buf[o++] = b64url_alphabet[v & 63];
	}
	if (len - i) {
		uint32_t v = (uint32_t)d[i] << 16 | (len - i == 2 ? (uint32_t)d[i + 1] << 8 : 0);

		buf[o++] = b64url_alphabet[v >> 18 & 63];
		buf[o++] = b64url_alphabet[v >> 12 & 63];
		if (len - i == 2)
			buf[o++] = b64url_alphabet[v >> 6 & 63];
	}
	buf[o] = '\0';
	return (int)o;
}

bool auth__kid_valid(const char *kid, size_t len)
{
	return names_opaque_id_valid(kid, len, FLASH_AUTH_KID_MAX);
}

int auth__json_error(int r, const struct json_error *err, const char *what, char *detail, size_t size)
{
	if (r == -ENOMEM)
		return -ENOMEM;
	if (err->kind == JSON_ERR_DUPLICATE_KEY) {
		auth__detail(detail, size, "%s: %s", what, err->message);
		return -FLASH_E_AUTH_DUPLICATE_KEY;
	}
	if (err->kind == JSON_ERR_INPUT_SIZE) {
		auth__detail(detail, size, "%s: %s", what, err->message);
		return -FLASH_E_AUTH_OVERSIZED;
	}
	auth__detail(detail, size, "%s is not valid JSON (line %u, column %u): %s", what, err->line,
		     err->column, err->message);
	return -FLASH_E_AUTH_JSON;
}
