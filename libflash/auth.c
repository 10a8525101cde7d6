/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Provider command authentication: reasons, actions, the claims of a
 * command token, generations, operation ids and key files. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <sodium.h>

#include "auth-private.h"

/* ---------------------------------------------------------------- actions */

static const char *const action_names[] = {
	[FLASH_AUTH_ACTION_CREATE] = "create", [FLASH_AUTH_ACTION_UPDATE] = "update",
	[FLASH_AUTH_ACTION_DELETE] = "delete", [FLASH_AUTH_ACTION_GET] = "get",
	[FLASH_AUTH_ACTION_LIST] = "list",     [FLASH_AUTH_ACTION_EXEC] = "exec",
	[FLASH_AUTH_ACTION_USAGE] = "usage",   [FLASH_AUTH_ACTION_LOGS] = "logs",
	[FLASH_AUTH_ACTION_SANDBOX] = "sandbox",
};
_Static_assert(ARRAY_SIZE(action_names) == FLASH_AUTH_ACTION_MAX_, "an action without a name");

FLASH_API const char *flash_auth_action_name(enum flash_auth_action action)
{
	return (unsigned int)action < ARRAY_SIZE(action_names) ? action_names[action] : NULL;
}

FLASH_API int flash_auth_action_parse(const char *name, enum flash_auth_action *ret_action)
{
	if (!name || !ret_action)
		return -EINVAL;
	for (size_t i = 1; i < ARRAY_SIZE(action_names); i++)
		if (strcmp(name, action_names[i]) == 0) {
			*ret_action = (enum flash_auth_action)i;
			return 0;
		}
	return -EINVAL;
}

FLASH_API bool flash_auth_action_is_mutation(enum flash_auth_action action)
{
	return action == FLASH_AUTH_ACTION_CREATE || action == FLASH_AUTH_ACTION_UPDATE ||
	       action == FLASH_AUTH_ACTION_DELETE;
}

/* ---------------------------------------------------------------- claims */

struct flash_auth_token {
	enum flash_auth_action action;
	int64_t iat, exp;
	bool has_gen;
	uint64_t gen;
	const char *kid, *org, *project, *jti, *claims;
	char data[]; /* the strings above, NUL-terminated, back to back */
};

/* Latest accepted time, 9999-12-31T23:59:59Z: keeps sums far from overflow. */
#define TIME_MAX INT64_C(253402300799)

/* Claim @name as a string of 1..@max bytes without NUL.  Returns 0 (with
 * *ret NULL when absent), or -FLASH_E_AUTH_CLAIM_INVALID. */
static int claim_string(const struct json_value *claims, const char *name, size_t max, const char **ret,
			size_t *ret_len, char *detail, size_t detail_size)
{
	const struct json_value *v = json_get(claims, name);

	*ret = NULL;
	*ret_len = 0;
	if (!v)
		return 0;
	if (v->type != JSON_STRING || v->u.string.has_nul || v->u.string.len == 0 || v->u.string.len > max) {
		auth__detail(detail, detail_size, "claim \"%s\" is not a string of 1..%zu bytes", name, max);
		return -FLASH_E_AUTH_CLAIM_INVALID;
	}
	*ret = v->u.string.ptr;
	*ret_len = v->u.string.len;
	return 0;
}

/* Required time claim @name: an integer in 0..TIME_MAX. */
static int claim_time(const struct json_value *claims, const char *name, bool required, bool *ret_present,
		      int64_t *ret, char *detail, size_t detail_size)
{
	const struct json_value *v = json_get(claims, name);

	*ret_present = v != NULL;
	if (!v) {
		if (!required)
			return 0;
		auth__detail(detail, detail_size, "claim \"%s\" is missing", name);
		return -FLASH_E_AUTH_MISSING_CLAIM;
	}
	if (v->type != JSON_NUMBER || json_get_int64(v, ret) < 0 || *ret < 0 || *ret > TIME_MAX) {
		auth__detail(detail, detail_size, "claim \"%s\" is not an integer number of seconds in 0..%" PRId64,
			     name, TIME_MAX);
		return -FLASH_E_AUTH_CLAIM_INVALID;
	}
	return 0;
}

static int check_identity(const struct json_value *c, const struct flash_auth_verify_opts *opts,
			  enum flash_auth_action *ret_action, char *detail, size_t detail_size)
{
	const struct json_value *iss = json_get(c, "iss"), *aud = json_get(c, "aud"), *act = json_get(c, "action");
	enum flash_auth_action action;
	bool found = false;

	if (!iss || !aud || !act) {
		auth__detail(detail, detail_size, "claim \"%s\" is missing", !iss ? "iss" : !aud ? "aud" : "action");
		return -FLASH_E_AUTH_MISSING_CLAIM;
	}
	if (iss->type != JSON_STRING) {
		auth__detail(detail, detail_size, "claim \"iss\" is %s, not a string", json_type_name(iss->type));
		return -FLASH_E_AUTH_CLAIM_INVALID;
	}
	if (!auth__json_string_is(iss, opts->issuer)) {
		auth__detail(detail, detail_size, "issuer \"%.64s\" is not \"%.64s\"",
			     iss->u.string.has_nul ? "(has NUL)" : iss->u.string.ptr, opts->issuer);
		return -FLASH_E_AUTH_ISSUER;
	}
	if (aud->type == JSON_STRING) {
		found = auth__json_string_is(aud, opts->audience);
	} else if (aud->type == JSON_ARRAY) {
		for (size_t i = 0; i < aud->u.array.n; i++) {
			if (aud->u.array.items[i]->type != JSON_STRING) {
				auth__detail(detail, detail_size, "claim \"aud\"[%zu] is not a string", i);
				return -FLASH_E_AUTH_CLAIM_INVALID;
			}
			found = found || auth__json_string_is(aud->u.array.items[i], opts->audience);
		}
	} else {
		auth__detail(detail, detail_size, "claim \"aud\" is %s, not a string or an array",
			     json_type_name(aud->type));
		return -FLASH_E_AUTH_CLAIM_INVALID;
	}
	if (!found) {
		auth__detail(detail, detail_size, "audience does not include \"%.64s\"", opts->audience);
		return -FLASH_E_AUTH_AUDIENCE;
	}
	if (act->type != JSON_STRING) {
		auth__detail(detail, detail_size, "claim \"action\" is %s, not a string", json_type_name(act->type));
		return -FLASH_E_AUTH_CLAIM_INVALID;
	}
	if (act->u.string.has_nul || flash_auth_action_parse(act->u.string.ptr, &action) < 0) {
		auth__detail(detail, detail_size, "action \"%.32s\" is not a provider action",
			     act->u.string.has_nul ? "(has NUL)" : act->u.string.ptr);
		return -FLASH_E_AUTH_ACTION;
	}
	if (action != opts->action) {
		auth__detail(detail, detail_size, "action is \"%s\", the request is \"%s\"",
			     flash_auth_action_name(action), flash_auth_action_name(opts->action));
		return -FLASH_E_AUTH_ACTION;
	}
	*ret_action = action;
	return 0;
}

static int check_times(const struct json_value *c, int64_t now, int64_t skew, struct flash_auth_token *t,
		       char *detail, size_t detail_size)
{
	bool has_exp, has_iat, has_nbf;
	int64_t nbf = 0;
	int r;

	r = claim_time(c, "exp", true, &has_exp, &t->exp, detail, detail_size);
	if (r < 0)
		return r;
	r = claim_time(c, "iat", true, &has_iat, &t->iat, detail, detail_size);
	if (r < 0)
		return r;
	r = claim_time(c, "nbf", false, &has_nbf, &nbf, detail, detail_size);
	if (r < 0)
		return r;
	if (t->exp <= t->iat || t->exp - t->iat > FLASH_AUTH_LIFETIME_MAX) {
		auth__detail(detail, detail_size, "lifetime exp - iat is %" PRId64 " s, allowed 1..%d",
			     t->exp - t->iat, FLASH_AUTH_LIFETIME_MAX);
		return -FLASH_E_AUTH_LIFETIME;
	}
	if (now < t->iat - skew) {
		auth__detail(detail, detail_size, "iat is %" PRId64 " s ahead of now (skew %" PRId64 " s)",
			     t->iat - now, skew);
		return -FLASH_E_AUTH_ISSUED_IN_FUTURE;
	}
	/* RFC 7519 §4.1.4: not accepted on or after exp. */
	if (now >= t->exp + skew) {
		auth__detail(detail, detail_size, "expired %" PRId64 " s ago (skew %" PRId64 " s)", now - t->exp,
			     skew);
		return -FLASH_E_AUTH_EXPIRED;
	}
	if (has_nbf && now < nbf - skew) {
		auth__detail(detail, detail_size, "not valid for another %" PRId64 " s (nbf, skew %" PRId64 " s)",
			     nbf - now, skew);
		return -FLASH_E_AUTH_NOT_YET_VALID;
	}
	return 0;
}

static int verify_detail(const struct flash_auth_keyset *keys, const char *token, size_t len,
			 const struct flash_auth_verify_opts *opts, struct flash_auth_token **ret_token,
			 char *ret_detail, size_t detail_size)
{
	const struct json_limits lim = { .max_depth = 16, .max_input = FLASH_AUTH_PAYLOAD_MAX };
	const char *org, *project, *jti;
	size_t org_len, project_len, jti_len, kid_len;
	enum flash_auth_action action = FLASH_AUTH_ACTION_NONE;
	struct flash_auth_token tok = { 0 }, *t;
	struct json_value *claims = NULL;
	struct json_error jerr = { 0 };
	const struct json_value *gen;
	struct auth_jws jws_buf, *jws = &jws_buf; /* on the stack: no allocation on the hot path */
	int64_t now;
	char *p;
	int r;

	if (!keys || !token || !OPTS_VALID(opts, flash_auth_verify_opts) || !opts || !opts->issuer ||
	    !opts->issuer[0] || !opts->audience || !opts->audience[0] || !flash_auth_action_name(opts->action) ||
	    opts->skew > FLASH_AUTH_SKEW_MAX || opts->now < 0 || opts->now > TIME_MAX)
		return -EINVAL;
	now = opts->now ? opts->now : (int64_t)time(NULL);

	r = auth__jws_verify(token, len, NULL, keys, jws, ret_detail, detail_size);
	if (r < 0)
		goto out;

	r = json_parse((const char *)jws->payload, jws->payload_len, &lim, &claims, &jerr);
	if (r < 0) {
		r = auth__json_error(r, &jerr, "claims", ret_detail, detail_size);
		goto out;
	}
	if (claims->type != JSON_OBJECT) {
		auth__detail(ret_detail, detail_size, "claims are a JSON %s, not an object",
			     json_type_name(claims->type));
		r = -FLASH_E_AUTH_JSON;
		goto out;
	}
	r = check_identity(claims, opts, &action, ret_detail, detail_size);
	if (r < 0)
		goto out;
	r = check_times(claims, now, (int64_t)opts->skew, &tok, ret_detail, detail_size);
	if (r < 0)
		goto out;

	r = claim_string(claims, "org", FLASH_AUTH_TENANT_MAX, &org, &org_len, ret_detail, detail_size);
	if (r < 0)
		goto out;
	r = claim_string(claims, "project", FLASH_AUTH_TENANT_MAX, &project, &project_len, ret_detail, detail_size);
	if (r < 0)
		goto out;
	if (!org || (!project && action != FLASH_AUTH_ACTION_LIST && action != FLASH_AUTH_ACTION_USAGE)) {
		auth__detail(ret_detail, detail_size, "claim \"%s\" is missing", !org ? "org" : "project");
		r = -FLASH_E_AUTH_MISSING_CLAIM;
		goto out;
	}
	gen = json_get(claims, "gen");
	if (gen) {
		if (gen->type != JSON_NUMBER || json_get_uint64(gen, &tok.gen) < 0) {
			auth__detail(ret_detail, detail_size, "claim \"gen\" is not an unsigned 64-bit integer");
			r = -FLASH_E_AUTH_CLAIM_INVALID;
			goto out;
		}
		tok.has_gen = true;
	} else if (flash_auth_action_is_mutation(action)) {
		auth__detail(ret_detail, detail_size, "claim \"gen\" is missing on %s", flash_auth_action_name(action));
		r = -FLASH_E_AUTH_GENERATION_MISSING;
		goto out;
	}
	r = claim_string(claims, "jti", FLASH_AUTH_TENANT_MAX, &jti, &jti_len, ret_detail, detail_size);
	if (r < 0)
		goto out;

	r = 0;
	if (!ret_token)
		goto out;
	kid_len = strlen(jws->kid);
	t = malloc(sizeof(*t) + kid_len + 1 + org_len + 1 + project_len + 1 + jti_len + 1 + jws->payload_len + 1);
	if (!t) {
		r = -ENOMEM;
		goto out;
	}
	*t = tok;
	t->action = action;
	p = t->data;
#define PUT(field, s, n)                      \
	do {                                  \
		t->field = (s) ? p : NULL;    \
		if (s)                        \
			memcpy(p, (s), (n));  \
		p[(n)] = '\0';                \
		p += (n) + 1;                 \
	} while (0)
	PUT(kid, jws->kid, kid_len);
	PUT(org, org, org_len);
	PUT(project, project, project_len);
	PUT(jti, jti, jti_len);
	PUT(claims, (const char *)jws->payload, jws->payload_len);
#undef PUT
	*ret_token = t;
out:
	json_free(claims);
	return r;
}

FLASH_API int flash_auth_verify(const struct flash_auth_keyset *keys, const char *token, size_t len,
				const struct flash_auth_verify_opts *opts, struct flash_auth_token **ret_token,
				struct flash_diag *diag)
{
	return AUTH_DIAG_CALL(diag, verify_detail, keys, token, len, opts, ret_token);
}

FLASH_API const char *flash_auth_token_kid(const struct flash_auth_token *t) { return t ? t->kid : NULL; }
FLASH_API const char *flash_auth_token_org(const struct flash_auth_token *t) { return t ? t->org : NULL; }
FLASH_API const char *flash_auth_token_project(const struct flash_auth_token *t) { return t ? t->project : NULL; }
FLASH_API const char *flash_auth_token_jti(const struct flash_auth_token *t) { return t ? t->jti : NULL; }
FLASH_API const char *flash_auth_token_claims_json(const struct flash_auth_token *t) { return t ? t->claims : NULL; }
FLASH_API int64_t flash_auth_token_iat(const struct flash_auth_token *t) { return t ? t->iat : 0; }
FLASH_API int64_t flash_auth_token_exp(const struct flash_auth_token *t) { return t ? t->exp : 0; }

FLASH_API enum flash_auth_action flash_auth_token_action(const struct flash_auth_token *t)
{
	return t ? t->action : FLASH_AUTH_ACTION_NONE;
}

FLASH_API bool flash_auth_token_generation(const struct flash_auth_token *t, uint64_t *ret_gen)
{
	if (!t || !t->has_gen)
		return false;
	if (ret_gen)
		*ret_gen = t->gen;
	return true;
}

FLASH_API void flash_auth_token_free(struct flash_auth_token *t)
{
	free(t);
}

/* ---------------------------------------------------------------- operation ids */

#define OPID_DOMAIN "flash.operation-id.v1"
#define OPID_DIGEST_MAX 64

static void hash_field(crypto_generichash_state *st, const void *data, size_t len)
{
	unsigned char prefix[4] = { (unsigned char)(len >> 24), (unsigned char)(len >> 16),
				    (unsigned char)(len >> 8), (unsigned char)len };

	crypto_generichash_update(st, prefix, sizeof(prefix));
	if (len)
		crypto_generichash_update(st, data, len);
}

FLASH_API int flash_auth_operation_id(const struct flash_auth_operation *op, struct flash_auth_opid *ret_id)
{
	crypto_generichash_state st;
	unsigned char gen[8], out[16];
	const char *action;
	size_t org_len, project_len, service_len;

	if (!op || !ret_id || !OPTS_VALID(op, flash_auth_operation) || !op->org || !op->project || !op->service)
		return -EINVAL;
	action = flash_auth_action_name(op->action);
	org_len = strnlen(op->org, FLASH_AUTH_TENANT_MAX + 1);
	project_len = strnlen(op->project, FLASH_AUTH_TENANT_MAX + 1);
	service_len = strnlen(op->service, FLASH_AUTH_NAME_MAX + 1);
	if (!action || org_len == 0 || org_len > FLASH_AUTH_TENANT_MAX || project_len > FLASH_AUTH_TENANT_MAX ||
	    service_len > FLASH_AUTH_NAME_MAX || op->spec_digest_len > OPID_DIGEST_MAX ||
	    (!op->spec_digest && op->spec_digest_len))
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	for (int i = 0; i < 8; i++)
		gen[i] = (unsigned char)(op->generation >> (56 - 8 * i));
	crypto_generichash_init(&st, NULL, 0, sizeof(out));
	hash_field(&st, OPID_DOMAIN, strlen(OPID_DOMAIN));
	hash_field(&st, op->org, org_len);
	hash_field(&st, op->project, project_len);
	hash_field(&st, op->service, service_len);
	hash_field(&st, action, strlen(action));
	hash_field(&st, gen, sizeof(gen));
	hash_field(&st, op->spec_digest, op->spec_digest_len);
	crypto_generichash_final(&st, out, sizeof(out));
	out[6] = (unsigned char)((out[6] & 0x0f) | 0x80); /* version 8 */
	out[8] = (unsigned char)((out[8] & 0x3f) | 0x80); /* variant 10 */
	memcpy(ret_id->bytes, out, sizeof(out));
	return 0;
}

FLASH_API int flash_auth_opid_format(const struct flash_auth_opid *id, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!id || !buf)
		return -EINVAL;
	if (size < FLASH_AUTH_OPID_STRLEN)
		return -ENOSPC;
	for (size_t i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			buf[o++] = '-';
		buf[o++] = hex[id->bytes[i] >> 4];
		buf[o++] = hex[id->bytes[i] & 15];
	}
	buf[o] = '\0';
	return (int)o;
}

FLASH_API int flash_auth_opid_parse(const char *text, struct flash_auth_opid *ret_id)
{
	struct flash_auth_opid id;
	size_t o = 0;

	if (!text || !ret_id || strnlen(text, FLASH_AUTH_OPID_STRLEN) != FLASH_AUTH_OPID_STRLEN - 1)
		return -EINVAL;
	for (size_t i = 0; i < FLASH_AUTH_OPID_STRLEN - 1;) {
		int hi, lo;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (text[i++] != '-')
				return -EINVAL;
			continue;
		}
		hi = util_hexval(text[i]);
		lo = util_hexval(text[i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		id.bytes[o++] = (unsigned char)(hi << 4 | lo);
		i += 2;
	}
	*ret_id = id;
	return 0;
}

/* ---------------------------------------------------------------- generations */

FLASH_API int flash_auth_generation_decide(bool has_stored, uint64_t stored_gen,
					   const struct flash_auth_opid *stored_op, uint64_t gen,
					   const struct flash_auth_opid *op, enum flash_auth_gen_decision *ret_decision)
{
	if (!op || !ret_decision || (has_stored && !stored_op))
		return -EINVAL;
	if (!has_stored || gen > stored_gen) {
		*ret_decision = FLASH_AUTH_GEN_APPLY;
		return 0;
	}
	if (gen < stored_gen)
		return -FLASH_E_AUTH_STALE_GENERATION;
	if (memcmp(stored_op->bytes, op->bytes, sizeof(op->bytes)) != 0)
		return -FLASH_E_AUTH_GENERATION_CONFLICT;
	*ret_decision = FLASH_AUTH_GEN_DUPLICATE;
	return 0;
}

/* ---------------------------------------------------------------- key files */

FLASH_API int flash_auth_key_file_write(const char *path, const void *data, size_t size, bool overwrite)
{
	struct stat st;

	if (!path || !data)
		return -EINVAL;
	if (!overwrite && lstat(path, &st) == 0)
		return -EEXIST;
	return util_write_file_atomic(path, data, size, 0600);
}
