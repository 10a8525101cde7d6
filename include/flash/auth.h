/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/auth.h> — authentication of provider commands.
 *
 * A provider command carries a compact JWS (RFC 7515) signed with Ed25519,
 * alg "EdDSA" (RFC 8037), whose payload is a JWT claims set (RFC 7519).
 * This module:
 *   - decodes base64url strictly (RFC 7515 §2, RFC 4648 §5: no '=', only
 *     the URL-safe alphabet, zero trailing bits);
 *   - verifies a compact JWS against one public key or a key set (JWKS or
 *     a {"kid": "<base64url key>"} map, several keys for rotation);
 *   - checks the claims of a provider command (issuer, audience, action,
 *     lifetime <= 60 s, clock skew <= 5 s, tenant, generation);
 *   - decides what to do with a command's generation (apply, duplicate,
 *     stale);
 *   - derives the deterministic operation id, an RFC 9562 UUIDv8 from
 *     BLAKE2b (see flash_auth(3) for the exact encoding);
 *   - signs tokens for clients and tests.
 * Every refusal has its own code in the FLASH_E_BASE + 200 (6200) block (enum
 * flash_auth_error); flash_strerror() gives its text and
 * flash_auth_reason_name() a stable short name.
 */
#ifndef FLASH_AUTH_H
#define FLASH_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <flash/common.h>
#include <flash/diag.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Refusal reasons (returned negated). */
enum flash_auth_error {
	FLASH_E_AUTH_BASE = FLASH_E_BASE + 200,
	FLASH_E_AUTH_MALFORMED = FLASH_E_AUTH_BASE, /* not three base64url parts joined by '.' */
	FLASH_E_AUTH_OVERSIZED,         /* token or one of its parts too large */
	FLASH_E_AUTH_BASE64,            /* bad base64url ('=', foreign character, trailing bits) */
	FLASH_E_AUTH_JSON,              /* header or claims not one strict JSON object */
	FLASH_E_AUTH_DUPLICATE_KEY,     /* header or claims repeat a member */
	FLASH_E_AUTH_ALG,               /* header "alg" missing or not exactly "EdDSA" */
	FLASH_E_AUTH_TYP,               /* header "typ" present and not "JWT" */
	FLASH_E_AUTH_CRIT,              /* header "crit" present (no extension is understood) */
	FLASH_E_AUTH_HEADER,            /* header parameter not accepted, or of the wrong type */
	FLASH_E_AUTH_KID_MISSING,       /* header has no "kid" but a key set is used */
	FLASH_E_AUTH_UNKNOWN_KID,       /* "kid" not in the key set */
	FLASH_E_AUTH_SIGNATURE,         /* Ed25519 signature does not verify */
	FLASH_E_AUTH_EXPIRED,           /* now >= exp + skew */
	FLASH_E_AUTH_NOT_YET_VALID,     /* now < nbf - skew */
	FLASH_E_AUTH_ISSUED_IN_FUTURE,  /* now < iat - skew */
	FLASH_E_AUTH_LIFETIME,          /* exp - iat > 60 s, or exp <= iat */
	FLASH_E_AUTH_ISSUER,            /* "iss" not the configured issuer */
	FLASH_E_AUTH_AUDIENCE,          /* "aud" neither the audience nor an array holding it */
	FLASH_E_AUTH_ACTION,            /* "action" not the action of the request */
	FLASH_E_AUTH_MISSING_CLAIM,     /* a required claim (iss, aud, action, exp, iat, org, project) is absent */
	FLASH_E_AUTH_GENERATION_MISSING,/* no "gen" on create, update or delete */
	FLASH_E_AUTH_CLAIM_INVALID,     /* a claim of the wrong type, out of range or too long */
	FLASH_E_AUTH_STALE_GENERATION,  /* generation older than the stored one */
	FLASH_E_AUTH_GENERATION_CONFLICT, /* same generation, different operation */
	FLASH_E_AUTH_KEYSET,            /* key set document malformed or empty */
	FLASH_E_AUTH_KEY,               /* a key is not an Ed25519 OKP key or is invalid */
	FLASH_E_AUTH_DUPLICATE_KID,     /* two keys with the same kid */
	FLASH_E_AUTH_MAX_,              /* end of the used range */
};

/* Size limits (bytes). */
#define FLASH_AUTH_TOKEN_MAX 8192       /* whole compact token */
#define FLASH_AUTH_HEADER_MAX 512       /* decoded header */
#define FLASH_AUTH_PAYLOAD_MAX 4096     /* decoded claims */
#define FLASH_AUTH_KID_MAX 64           /* kid: 1..64 of [A-Za-z0-9._:-] */
#define FLASH_AUTH_TENANT_MAX 128       /* org, project, jti: 1..128 bytes */
#define FLASH_AUTH_NAME_MAX 253         /* iss, aud, service name */
#define FLASH_AUTH_LIFETIME_MAX 60      /* exp - iat, seconds */
#define FLASH_AUTH_SKEW_MAX 5           /* clock skew, seconds */
#define FLASH_AUTH_KEYSET_MAX 64        /* keys in one set */

#define FLASH_AUTH_PUBLIC_KEY_BYTES 32
#define FLASH_AUTH_SEED_BYTES 32
#define FLASH_AUTH_OPID_STRLEN 37       /* "xxxxxxxx-xxxx-8xxx-yxxx-xxxxxxxxxxxx" + NUL */

/* Stable short name of a refusal ("expired", "unknown-kid", ...) for logs
 * and exit messages; "unknown" for codes outside the block.  Accepts the
 * code negated or not.  Never NULL; static. */
FLASH_API const char *flash_auth_reason_name(int err);

/* ---------------------------------------------------------------- base64url */

/* Encodes @len bytes at @data as base64url without padding into @buf of
 * @size bytes, NUL-terminated.  Returns the length written (without NUL),
 * or -EINVAL (NULL arguments), -ENOSPC (@buf too small). */
FLASH_API int flash_auth_b64url_encode(const void *data, size_t len, char *buf, size_t size);

/* Decodes @len characters at @text (RFC 4648 §5 alphabet, no padding,
 * unused trailing bits zero) into @buf of @size bytes; *ret_len is the
 * decoded length.  Returns 0, -FLASH_E_AUTH_BASE64, -ENOSPC or -EINVAL;
 * *ret_len untouched on failure. */
FLASH_API FLASH_WUR int flash_auth_b64url_decode(const char *text, size_t len, void *buf,
						  size_t size, size_t *ret_len);

/* ---------------------------------------------------------------- actions */

enum flash_auth_action {
	FLASH_AUTH_ACTION_NONE = 0,
	FLASH_AUTH_ACTION_CREATE,
	FLASH_AUTH_ACTION_UPDATE,
	FLASH_AUTH_ACTION_DELETE,
	FLASH_AUTH_ACTION_GET,
	FLASH_AUTH_ACTION_LIST,
	FLASH_AUTH_ACTION_EXEC,
	FLASH_AUTH_ACTION_USAGE,
	FLASH_AUTH_ACTION_LOGS,
	FLASH_AUTH_ACTION_SANDBOX,      /* every sandbox session command (provision, exec, files, reap, list) */
	FLASH_AUTH_ACTION_MAX_,         /* grows by appending before it: the values above are ABI */
};

/* "create", "update", ..., "sandbox"; NULL for NONE or out of range. */
FLASH_API const char *flash_auth_action_name(enum flash_auth_action action);

/* Parses an action name (exact, lower case).  Returns 0 or -EINVAL. */
FLASH_API FLASH_WUR int flash_auth_action_parse(const char *name, enum flash_auth_action *ret_action);

/* True for create, update and delete (which carry a generation). */
FLASH_API bool flash_auth_action_is_mutation(enum flash_auth_action action);

/* ---------------------------------------------------------------- key sets */

/* A set of Ed25519 public keys by kid.  Immutable once built, so one set
 * may be shared by threads that verify; rotation is done by building a new
 * set (holding the old and the new key) and swapping the pointer. */
struct flash_auth_keyset;

/* Builds a key set from JSON: either a JWKS (RFC 7517: {"keys": [ ... ]},
 * each key {"kty": "OKP", "crv": "Ed25519", "kid": ..., "x": ...}, with
 * optional "use" "sig" and "alg" "EdDSA"; a private "d" is refused) or a
 * map {"kid": "<base64url of the 32-byte public key>", ...}.  Every key
 * must be a valid Ed25519 point; at most FLASH_AUTH_KEYSET_MAX keys.
 * On failure @diag (if non-NULL) holds one error naming what is wrong, its
 * code the reason's flash_auth_reason_name().  Returns 0 and *ret_keyset
 * (free with flash_auth_keyset_free()),
 * -FLASH_E_AUTH_KEYSET, -FLASH_E_AUTH_KEY, -FLASH_E_AUTH_DUPLICATE_KID,
 * -FLASH_E_AUTH_BASE64, -ENOMEM or -EINVAL. */
FLASH_API FLASH_WUR int flash_auth_keyset_parse(const char *json, size_t len,
						struct flash_auth_keyset **ret_keyset,
						struct flash_diag *diag);

/* An empty key set, to be filled with flash_auth_keyset_add(). */
FLASH_API FLASH_WUR int flash_auth_keyset_new(struct flash_auth_keyset **ret_keyset);

/* Adds @public_key (32 bytes) under @kid.  Returns 0, -FLASH_E_AUTH_KEY
 * (not a valid point, or @kid not 1..64 of [A-Za-z0-9._:-]),
 * -FLASH_E_AUTH_DUPLICATE_KID, -E2BIG (set full), -EINVAL or -ENOMEM. */
FLASH_API FLASH_WUR int flash_auth_keyset_add(struct flash_auth_keyset *ks, const char *kid,
					      const unsigned char *public_key);

/* Number of keys. 0 for NULL. */
FLASH_API size_t flash_auth_keyset_count(const struct flash_auth_keyset *ks);

/* True when @kid is in the set. */
FLASH_API bool flash_auth_keyset_has(const struct flash_auth_keyset *ks, const char *kid);

/* The set as a JWKS document {"keys":[...]} (one line, newline-terminated)
 * in *ret_json (free()).  Returns 0, -EINVAL or -ENOMEM. */
FLASH_API int flash_auth_keyset_to_jwks(const struct flash_auth_keyset *ks, char **ret_json);

/* Frees @ks; NULL is accepted. */
FLASH_API void flash_auth_keyset_free(struct flash_auth_keyset *ks);

/* ---------------------------------------------------------------- signing keys */

/* An Ed25519 secret key with its kid.  The secret is wiped on free. */
struct flash_auth_signer;

/* A fresh key pair from the system's random source. */
FLASH_API FLASH_WUR int flash_auth_signer_generate(const char *kid, struct flash_auth_signer **ret_signer);

/* A key pair from its 32-byte seed (RFC 8032 private key, the JWK "d"). */
FLASH_API FLASH_WUR int flash_auth_signer_from_seed(const unsigned char *seed, const char *kid,
						    struct flash_auth_signer **ret_signer);

/* Parses a private JWK {"kty":"OKP","crv":"Ed25519","d":...,"x":...,"kid":...}
 * ("kid" optional; "x" must be the public key of "d").  On failure @diag
 * (if non-NULL) holds one error naming what is wrong, its code the
 * reason's flash_auth_reason_name().  Returns 0, -FLASH_E_AUTH_KEY,
 * -FLASH_E_AUTH_BASE64, -ENOMEM or -EINVAL. */
FLASH_API FLASH_WUR int flash_auth_signer_parse(const char *json, size_t len,
						struct flash_auth_signer **ret_signer,
						struct flash_diag *diag);

/* Replaces the kid of @s (1..64 of [A-Za-z0-9._:-]).  Returns 0,
 * -FLASH_E_AUTH_KEY (invalid kid) or -EINVAL. */
FLASH_API int flash_auth_signer_set_kid(struct flash_auth_signer *s, const char *kid);

/* The kid ("" when the key has none). */
FLASH_API const char *flash_auth_signer_kid(const struct flash_auth_signer *s);

/* Copies the 32-byte public key into @ret_public_key.  Returns 0 or -EINVAL. */
FLASH_API int flash_auth_signer_public_key(const struct flash_auth_signer *s, unsigned char *ret_public_key);

/* The private JWK (with "d") as one line in *ret_json; the caller frees it
 * (after wiping it: it holds the secret). */
FLASH_API int flash_auth_signer_to_jwk(const struct flash_auth_signer *s, char **ret_json);

/* Signs @header_len bytes of @header and @payload_len bytes of @payload
 * as they are (no checks: this is for tests and for other JWS users) and
 * returns the compact JWS in *ret_token (free()).  Returns 0, -EINVAL,
 * -FLASH_E_AUTH_OVERSIZED or -ENOMEM. */
FLASH_API int flash_auth_signer_sign_raw(const struct flash_auth_signer *s, const void *header,
					 size_t header_len, const void *payload, size_t payload_len,
					 char **ret_token);

/* Signs a claims set: @claims_json must be one strict JSON object; the
 * header is {"alg":"EdDSA","typ":"JWT","kid":KID} with the signer's kid
 * (which must not be empty).  The claims are signed byte for byte as
 * given.  Returns 0 and *ret_token (free()), -FLASH_E_AUTH_JSON,
 * -FLASH_E_AUTH_DUPLICATE_KEY, -FLASH_E_AUTH_OVERSIZED, -EINVAL or
 * -ENOMEM. */
FLASH_API FLASH_WUR int flash_auth_signer_sign(const struct flash_auth_signer *s, const char *claims_json,
					       size_t len, char **ret_token);

/* Frees and wipes @s; NULL is accepted. */
FLASH_API void flash_auth_signer_free(struct flash_auth_signer *s);

/* The size of a thumbprint with its NUL. */
#define FLASH_AUTH_THUMBPRINT_STRLEN 44
/* RFC 7638 JWK thumbprint of a 32-byte Ed25519 public key (RFC 8037 §2):
 * the base64url SHA-256 of {"crv":"Ed25519","kty":"OKP","x":"<x>"}, 43
 * characters and a NUL into @buf (at least FLASH_AUTH_THUMBPRINT_STRLEN
 * bytes); a natural kid.  Returns 43, -EINVAL or -ENOSPC. */
FLASH_API int flash_auth_jwk_thumbprint(const unsigned char *public_key, char *buf, size_t size);

/* ---------------------------------------------------------------- JWS */

/* Verifies a compact JWS @token of @len bytes with one 32-byte Ed25519
 * @public_key: strict base64url, header a JSON object with "alg" "EdDSA",
 * optional "typ" "JWT" and optional "kid" (nothing else; "crit"
 * refused), then the signature.  The payload is not interpreted.  Returns
 * 0 and the decoded payload in *ret_payload (free(); NUL-terminated, its
 * length in *ret_payload_len), or a negative FLASH_E_AUTH_* code, -EINVAL
 * or -ENOMEM; outputs untouched on failure. */
FLASH_API FLASH_WUR int flash_auth_jws_verify(const char *token, size_t len, const unsigned char *public_key,
					      void **ret_payload, size_t *ret_payload_len);

/* ---------------------------------------------------------------- provider commands */

struct flash_auth_verify_opts {
	size_t sz;
	const char *issuer;     /* required: "iss" must equal it */
	const char *audience;   /* required: "aud" must equal it or be an array holding it */
	enum flash_auth_action action; /* required: "action" must name it */
	int64_t now;            /* Unix seconds; 0 = the current time */
	unsigned int skew;      /* allowed clock skew, seconds, 0..FLASH_AUTH_SKEW_MAX */
};

/* The verified claims of a command token. */
struct flash_auth_token;

/*
 * Verifies a provider command token against @keys and @opts, in this
 * order: size, structure, base64url, header (alg, typ, crit, kid),
 * signature, then the claims:
 *   iss, aud, action      exact matches (required);
 *   exp, iat              required integers, 0 < exp - iat <= 60,
 *                         iat - skew <= now < exp + skew;
 *   nbf                   optional integer, nbf - skew <= now;
 *   org                   required string, 1..128 bytes, opaque;
 *   project               string, 1..128 bytes, opaque; required except
 *                         for list and usage;
 *   gen                   unsigned 64-bit integer; required for create,
 *                         update and delete;
 *   jti                   optional string, 1..128 bytes.
 * Other claims are ignored.  Returns 0 and, if @ret_token is non-NULL,
 * the claims in *ret_token (free with flash_auth_token_free()); or the
 * negated reason (enum flash_auth_error), -EINVAL (bad arguments or
 * options) or -ENOMEM.  On failure @diag (if non-NULL) holds one error
 * whose code is flash_auth_reason_name() of the reason ("invalid-argument"
 * for -EINVAL) and whose message names the claim or parameter.  Nothing is
 * allocated when verification succeeds.
 */
FLASH_API FLASH_WUR int flash_auth_verify(const struct flash_auth_keyset *keys, const char *token,
					  size_t len, const struct flash_auth_verify_opts *opts,
					  struct flash_auth_token **ret_token, struct flash_diag *diag);

/* Accessors of a verified token.  Strings are owned by the token; NULL
 * (or 0/false) for an absent optional claim or a NULL token. */
FLASH_API const char *flash_auth_token_kid(const struct flash_auth_token *t);
FLASH_API const char *flash_auth_token_org(const struct flash_auth_token *t);
FLASH_API const char *flash_auth_token_project(const struct flash_auth_token *t);
FLASH_API const char *flash_auth_token_jti(const struct flash_auth_token *t);
FLASH_API enum flash_auth_action flash_auth_token_action(const struct flash_auth_token *t);
FLASH_API int64_t flash_auth_token_iat(const struct flash_auth_token *t);
FLASH_API int64_t flash_auth_token_exp(const struct flash_auth_token *t);
/* Returns true and *ret_gen when the token has "gen". */
FLASH_API bool flash_auth_token_generation(const struct flash_auth_token *t, uint64_t *ret_gen);
/* The claims set exactly as signed (a JSON object, NUL-terminated). */
FLASH_API const char *flash_auth_token_claims_json(const struct flash_auth_token *t);
/* Frees a token from flash_auth_verify() and the strings it owns; NULL is
 * accepted. */
FLASH_API void flash_auth_token_free(struct flash_auth_token *t);

/* ---------------------------------------------------------------- generations and operation ids */

/* An operation id: 16 bytes, an RFC 9562 UUID version 8. */
struct flash_auth_opid {
	unsigned char bytes[16];
};

/* What identifies an operation. */
struct flash_auth_operation {
	size_t sz;
	const char *org;            /* 1..128 bytes */
	const char *project;        /* 0..128 bytes ("" for org-wide operations) */
	const char *service;        /* 0..253 bytes ("" when there is none, as for list) */
	enum flash_auth_action action;
	uint64_t generation;
	const void *spec_digest;    /* canonical spec digest; may be NULL when... */
	size_t spec_digest_len;     /* ... this is 0; at most 64 bytes */
};

/* Derives the operation id of @op: BLAKE2b-128 over a length-prefixed
 * encoding of (org, project, service, action, generation, spec digest),
 * with the UUID version (8) and variant (10) bits set.  The encoding is
 * given in flash_auth(3).  Returns 0, or -EINVAL (NULL, a string too
 * long, no action, digest too long). */
FLASH_API FLASH_WUR int flash_auth_operation_id(const struct flash_auth_operation *op,
						struct flash_auth_opid *ret_id);

/* Writes @id as 36 lower-case characters with hyphens and a NUL into @buf
 * (at least FLASH_AUTH_OPID_STRLEN bytes).  Returns 36 or -EINVAL/-ENOSPC. */
FLASH_API int flash_auth_opid_format(const struct flash_auth_opid *id, char *buf, size_t size);

/* Parses the 36-character form (either case).  Returns 0 or -EINVAL. */
FLASH_API FLASH_WUR int flash_auth_opid_parse(const char *text, struct flash_auth_opid *ret_id);

enum flash_auth_gen_decision {
	FLASH_AUTH_GEN_APPLY = 1,   /* newer generation (or nothing stored): apply it */
	FLASH_AUTH_GEN_DUPLICATE,   /* same generation and operation: already done, succeed again */
};

/*
 * Decides on a command of generation @gen and operation id @op given what
 * is stored for the service (@stored_gen and @stored_op; @has_stored false
 * when the service has no generation yet).  Returns 0 and *ret_decision
 * (APPLY when gen > stored_gen or nothing is stored; DUPLICATE when equal
 * with the same operation id), -FLASH_E_AUTH_STALE_GENERATION (gen <
 * stored_gen), -FLASH_E_AUTH_GENERATION_CONFLICT (same generation, other
 * operation) or -EINVAL.
 */
FLASH_API FLASH_WUR int flash_auth_generation_decide(bool has_stored, uint64_t stored_gen,
						     const struct flash_auth_opid *stored_op, uint64_t gen,
						     const struct flash_auth_opid *op,
						     enum flash_auth_gen_decision *ret_decision);

/* ---------------------------------------------------------------- key files */

/* Writes a key file: @size bytes to @path atomically with mode 0600
 * (temporary file, fsync, rename).  Key files are read back with
 * flash_file_read_secret() of <flash/file.h>, which refuses any other mode.  Refuses to replace an existing file (-EEXIST) unless
 * @overwrite.  Returns 0 or -errno. */
FLASH_API int flash_auth_key_file_write(const char *path, const void *data, size_t size, bool overwrite);

#ifdef __cplusplus
}
#endif

#endif
