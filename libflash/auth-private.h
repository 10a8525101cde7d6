/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private interface of the auth module: auth.c (claims, commands),
 * auth-jws.c (JWS, signers), auth-keyset.c (key sets) and their shared
 * leaf auth-util.c (base64url, kid syntax, details). */
#ifndef FLASH_AUTH_PRIVATE_H
#define FLASH_AUTH_PRIVATE_H

#include <flash/auth.h>

#include "json.h"
#include "internal.h"

/* Encoded length of @n bytes in unpadded base64url. */
#define B64URL_LEN(n) (((n) / 3) * 4 + ((n) % 3 ? (n) % 3 + 1 : 0))

/* Decodes strictly; @out may be NULL to validate and measure only.
 * Returns 0, -FLASH_E_AUTH_BASE64 (with the offset of the fault in
 * *ret_bad) or -ENOSPC. */
int auth__b64url_decode(const char *text, size_t len, unsigned char *out, size_t size,
			size_t *ret_len, size_t *ret_bad);

/* True when @c is one of the 64 characters of the base64url alphabet. */
bool auth__b64url_is_alphabet(unsigned char c);

/* True when @kid (@len bytes) is 1..FLASH_AUTH_KID_MAX of [A-Za-z0-9._:-]. */
bool auth__kid_valid(const char *kid, size_t len);

/* The public key of @kid (@len bytes) in @ks, or NULL. */
const unsigned char *auth__keyset_find(const struct flash_auth_keyset *ks, const char *kid, size_t len);

/* True when @v is a JSON string without NUL equal to @want. */
static inline bool auth__json_string_is(const struct json_value *v, const char *want)
{
	return v && v->type == JSON_STRING && !v->u.string.has_nul && strcmp(v->u.string.ptr, want) == 0;
}

/* The header every signer of this library writes for @kid:
 * {"alg":"EdDSA","typ":"JWT","kid":"KID"}. */
#define AUTH_CANONICAL_HEADER_FMT "{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\"%s\"}"
#define AUTH_CANONICAL_HEADER_MAX (sizeof(AUTH_CANONICAL_HEADER_FMT) + FLASH_AUTH_KID_MAX)

/* When the @len base64url characters at @b64 are exactly the encoded
 * canonical header of a key of @ks, returns that key's public key and its
 * kid in *ret_kid; otherwise NULL.  Those bytes are a header the parser
 * accepts with that kid, so verification may skip parsing them. */
const unsigned char *auth__keyset_find_header(const struct flash_auth_keyset *ks, const char *b64, size_t len,
					      const char **ret_kid);

/* Writes a formatted detail into @buf (ignored when NULL or @size 0). */
void auth__detail(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);

/* Room for one detail: the public calls keep it on the stack and copy
 * it into the caller's diag only on failure. */
#define AUTH_DETAIL_MAX 256

/* Starts @diag for one call and returns the detail buffer to fill (NULL
 * without a diag, so that no detail is even formatted). */
char *auth__diag_begin(struct flash_diag *diag, char *buf);

/* After a call that returned @r: on failure (other than -ENOMEM, which
 * the diag could not hold either) adds one error to @diag, coded by the
 * reason's name ("invalid-argument" for -EINVAL), with @detail (or the
 * reason's text when the call left it empty) as the message.  Returns @r. */
int auth__diag_end(struct flash_diag *diag, int r, const char *detail);
/* Calls @call(..., detail, size) (the detail buffer appended) with a
 * stack buffer behind @diag and returns its result. */
#define AUTH_DIAG_CALL(diag, call, ...)                                                          \
	({                                                                                      \
		char auth_buf_[AUTH_DETAIL_MAX];                                                \
		auth__diag_end((diag), call(__VA_ARGS__, auth__diag_begin((diag), auth_buf_),   \
					    sizeof(auth_buf_)),                                 \
			       auth_buf_);                                                      \
	})

/* Maps a json_parse() failure to the auth reason and a detail naming
 * @what ("header", "claims", "key set"). */
int auth__json_error(int r, const struct json_error *err, const char *what, char *detail, size_t size);

/* A verified JWS: the signing input, the kid and the decoded payload. */
struct auth_jws {
	char kid[FLASH_AUTH_KID_MAX + 1];
	bool has_kid;
	unsigned char payload[FLASH_AUTH_PAYLOAD_MAX + 1]; /* NUL-terminated */
	size_t payload_len;
};

/* Parses and verifies @token with @public_key, or when NULL with the key
 * of the header's kid in @ks.  Fills @jws.  Returns 0 or a negated
 * FLASH_E_AUTH_* reason with @detail filled, or -ENOMEM. */
int auth__jws_verify(const char *token, size_t len, const unsigned char *public_key,
		     const struct flash_auth_keyset *ks, struct auth_jws *jws, char *detail,
		     size_t detail_size);

/* Decodes a base64url Ed25519 key field @name of JSON value @v (exactly 32
 * bytes) into @out.  -FLASH_E_AUTH_KEY / -FLASH_E_AUTH_BASE64 with @detail. */
int auth__decode_key32(const struct json_value *v, const char *name, unsigned char *out,
		       char *detail, size_t detail_size);

#endif
