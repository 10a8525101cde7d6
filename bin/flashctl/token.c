/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flashctl keygen --secret FILE --public FILE [--kid KID] [--force]
 * flashctl token sign --key FILE --kid KID --claims JSON
 * flashctl token verify --keys FILE --issuer ISS --audience AUD --action ACTION
 *                       [--now UNIX_SECONDS] [--skew SECONDS] [TOKEN | -]
 * Ed25519 key pairs and provider command tokens (EdDSA JWS); every check
 * is libflash's (<flash/auth.h>).  A secret key file is read only when it
 * is a regular file of mode 0600 (or 0400) owned by the caller; a public
 * key set (--keys) only when nobody but its owner (the caller or root) can
 * write it.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/auth.h>
#include <flash/file.h>

#include "flashctl.h"
#include "util.h"

/* Largest accepted --now: 9999-12-31T23:59:59Z. */
#define NOW_MAX INT64_C(253402300799)

/* Reads a key file through <flash/file.h>'s checks, saying what is wrong:
 * the secret-file rule for a private key, the public-file rule for a key
 * set of public keys. */
static int read_key_file(const char *progname, const char *cmd, const char *option, const char *path, bool secret,
			 char **ret, size_t *ret_len)
{
	char who[64];
	int r = secret ? flash_file_read_secret(path, 0, ret, ret_len) : flash_file_read_public(path, 0, ret, ret_len);

	snprintf(who, sizeof(who), "%s %s", progname, cmd);
	if (r == -EPERM && secret)
		fprintf(stderr, "%s: %s %s: refused: a key file must be owned by you and have mode 0600 (chmod 600 %s)\n",
			who, option, path, path);
	else if (r == -EPERM)
		fprintf(stderr,
			"%s: %s %s: refused: a key set must be owned by you or root and not be writable by group or others "
			"(chmod go-w %s)\n",
			who, option, path, path);
	else if (r == -EBADFD || r == -ELOOP)
		fprintf(stderr, "%s: %s %s: refused: %s\n", who, option, path, util_read_strerror(r));
	else if (r == -EFBIG)
		fprintf(stderr, "%s: %s %s: larger than %d bytes\n", who, option, path, FLASH_SECRET_FILE_MAX);
	else if (r < 0)
		fprintf(stderr, "%s: %s %s: %s\n", who, option, path, strerror(-r));
	return r;
}

static void wipe_free(char *p, size_t len)
{
	if (p) {
		explicit_bzero(p, len);
		free(p);
	}
}

/* ---------------------------------------------------------------- keygen */

static void keygen_usage(FILE *out, const char *progname)
{
	fprintf(out,
		"Usage: %s keygen --secret FILE --public FILE [--kid KID] [--force]\n"
		"Creates an Ed25519 key pair: the secret key as a private JWK (mode 0600) and the\n"
		"public key as a JWKS (mode 0600).  The kid defaults to the RFC 7638 thumbprint.\n"
		"  --secret FILE   where to write the secret key\n"
		"  --public FILE   where to write the public key set\n"
		"  --kid KID       key id, 1..64 of [A-Za-z0-9._:-]\n"
		"  --force         replace existing files\n",
		progname);
}

int flashctl_keygen_main(int argc, char **argv, const struct flashctl_globals *g)
{
	static const struct option options[] = {
		{ "secret", required_argument, NULL, 's' },
		{ "public", required_argument, NULL, 'p' },
		{ "kid", required_argument, NULL, 'k' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *secret = NULL, *public = NULL, *kid = NULL;
	struct flash_auth_signer *signer = NULL;
	struct flash_auth_keyset *ks = NULL;
	char *jwk = NULL, *jwks = NULL, tp[FLASH_AUTH_THUMBPRINT_STRLEN];
	unsigned char pk[FLASH_AUTH_PUBLIC_KEY_BYTES];
	bool force = false;
	int c, r, status = FLASHCTL_EXIT_USAGE;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 's': secret = optarg; break;
		case 'p': public = optarg; break;
		case 'k': kid = optarg; break;
		case 'f': force = true; break;
		case 'h':
			keygen_usage(stdout, g->progname);
			return FLASHCTL_EXIT_OK;
		default:
			keygen_usage(stderr, g->progname);
			return FLASHCTL_EXIT_USAGE;
		}
	}
	if (!secret || !public || optind != argc) {
		keygen_usage(stderr, g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	if (strcmp(secret, public) == 0) {
		fprintf(stderr, "%s keygen: --secret and --public must be different files\n", g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	r = flash_auth_signer_generate(NULL, &signer);
	if (r == 0)
		r = flash_auth_signer_public_key(signer, pk);
	if (r == 0 && !kid) {
		r = flash_auth_jwk_thumbprint(pk, tp, sizeof(tp));
		kid = tp;
	}
	if (r >= 0) {
		r = flash_auth_signer_set_kid(signer, kid);
		if (r == -FLASH_E_AUTH_KEY) {
			fprintf(stderr, "%s keygen: --kid %s: not 1..%d of [A-Za-z0-9._:-]\n", g->progname, kid,
				FLASH_AUTH_KID_MAX);
			goto out;
		}
	}
	if (r >= 0)
		r = flash_auth_keyset_new(&ks);
	if (r >= 0)
		r = flash_auth_keyset_add(ks, kid, pk);
	if (r >= 0)
		r = flash_auth_keyset_to_jwks(ks, &jwks);
	if (r >= 0)
		r = flash_auth_signer_to_jwk(signer, &jwk);
	if (r < 0) {
		fprintf(stderr, "%s keygen: %s\n", g->progname, flash_strerror(r));
		goto out;
	}
	/* Public first: a failure then never leaves a secret without its
	 * public half. */
	r = flash_auth_key_file_write(public, jwks, strlen(jwks), force);
	if (r < 0) {
		fprintf(stderr, "%s keygen: --public %s: %s%s\n", g->progname, public, strerror(-r),
			r == -EEXIST ? " (use --force to replace it)" : "");
		goto out;
	}
	r = flash_auth_key_file_write(secret, jwk, strlen(jwk), force);
	if (r < 0) {
		fprintf(stderr, "%s keygen: --secret %s: %s%s\n", g->progname, secret, strerror(-r),
			r == -EEXIST ? " (use --force to replace it)" : "");
		goto out;
	}
	printf("%s\n", kid);
	status = FLASHCTL_EXIT_OK;
out:
	if (jwk)
		wipe_free(jwk, strlen(jwk));
	free(jwks);
	flash_auth_keyset_free(ks);
	flash_auth_signer_free(signer);
	return status;
}

/* ---------------------------------------------------------------- token */

static void token_usage(FILE *out, const char *progname)
{
	fprintf(out,
		"Usage: %s token sign --key FILE --kid KID --claims JSON\n"
		"       %s token verify --keys FILE --issuer ISS --audience AUD --action ACTION\n"
		"                          [--now UNIX_SECONDS] [--skew SECONDS] [TOKEN | -]\n"
		"sign prints a compact EdDSA JWS of the claims (a JSON object).  verify checks a\n"
		"provider command token (TOKEN, '-' for standard input, or the global --token-file)\n"
		"and prints its claims; exit 0 valid, 1 refused (the reason on standard error),\n"
		"2 usage or I/O error.\n",
		progname, progname);
}

static int token_sign(int argc, char **argv, const struct flashctl_globals *g)
{
	static const struct option options[] = {
		{ "key", required_argument, NULL, 'K' },
		{ "kid", required_argument, NULL, 'k' },
		{ "claims", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *key = NULL, *kid = NULL, *claims = NULL, *file_kid;
	struct flash_auth_signer *signer = NULL;
	char *text = NULL, *tok = NULL;
	const char *detail;
	struct flash_diag *diag = NULL;
	size_t len = 0;
	int c, r, status = FLASHCTL_EXIT_USAGE;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 'K': key = optarg; break;
		case 'k': kid = optarg; break;
		case 'c': claims = optarg; break;
		case 'h':
			token_usage(stdout, g->progname);
			return FLASHCTL_EXIT_OK;
		default:
			token_usage(stderr, g->progname);
			return FLASHCTL_EXIT_USAGE;
		}
	}
	if (!key || !kid || !claims || optind != argc) {
		token_usage(stderr, g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	if (read_key_file(g->progname, "token sign", "--key", key, true, &text, &len) < 0)
		return FLASHCTL_EXIT_USAGE;
	if (flash_diag_new(&diag) < 0)
		diag = NULL; /* out of memory: the refusal names the reason only */
	r = flash_auth_signer_parse(text, len, &signer, diag);
	detail = flashctl_diag_message(diag);
	if (r < 0) {
		fprintf(stderr, "%s token sign: --key %s: %s%s%s\n", g->progname, key, flash_strerror(r),
			detail[0] ? ": " : "", detail);
		goto out;
	}
	file_kid = flash_auth_signer_kid(signer);
	if (file_kid[0] && strcmp(file_kid, kid) != 0) {
		fprintf(stderr, "%s token sign: --kid %s: the key file is for kid \"%s\"\n", g->progname, kid, file_kid);
		goto out;
	}
	if (flash_auth_signer_set_kid(signer, kid) < 0) {
		fprintf(stderr, "%s token sign: --kid %s: not 1..%d of [A-Za-z0-9._:-]\n", g->progname, kid,
			FLASH_AUTH_KID_MAX);
		goto out;
	}
	r = flash_auth_signer_sign(signer, claims, strlen(claims), &tok);
	if (r < 0) {
		fprintf(stderr, "%s token sign: --claims: %s\n", g->progname, flash_strerror(r));
		status = r == -ENOMEM ? FLASHCTL_EXIT_USAGE : FLASHCTL_EXIT_FAILURE;
		goto out;
	}
	printf("%s\n", tok);
	status = FLASHCTL_EXIT_OK;
out:
	flash_diag_free(diag);
	free(tok);
	flash_auth_signer_free(signer);
	wipe_free(text, len);
	return status;
}

/* Strict unsigned decimal in [lo, hi]. */
static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *ret)
{
	int64_t v = 0;

	if (!s[0] || strlen(s) > 18)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	if (v < lo || v > hi)
		return -ERANGE;
	*ret = v;
	return 0;
}

/* Reads one token from standard input (at most the token limit). */
static int read_stdin_token(char *buf, size_t size, size_t *ret_len)
{
	size_t n = fread(buf, 1, size, stdin);

	if (ferror(stdin))
		return -EIO;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n < size ? n : size - 1] = '\0';
	*ret_len = n;
	return 0;
}

static int token_verify(int argc, char **argv, const struct flashctl_globals *g)
{
	static const struct option options[] = {
		{ "keys", required_argument, NULL, 'K' },
		{ "issuer", required_argument, NULL, 'i' },
		{ "audience", required_argument, NULL, 'a' },
		{ "action", required_argument, NULL, 'x' },
		{ "now", required_argument, NULL, 'n' },
		{ "skew", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *keys = NULL, *issuer = NULL, *audience = NULL, *action_name = NULL, *token = NULL;
	static char stdin_buf[FLASH_AUTH_TOKEN_MAX + 2];
	enum flash_auth_action action;
	struct flash_auth_keyset *ks = NULL;
	struct flash_auth_token *t = NULL;
	char *text = NULL;
	const char *detail;
	struct flash_diag *diag = NULL;
	size_t len = 0, token_len = 0;
	int64_t now = 0, skew = 0;
	int c, r, status = FLASHCTL_EXIT_USAGE;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 'K': keys = optarg; break;
		case 'i': issuer = optarg; break;
		case 'a': audience = optarg; break;
		case 'x': action_name = optarg; break;
		case 'n':
			if (parse_int(optarg, 1, NOW_MAX, &now) < 0) {
				fprintf(stderr, "%s token verify: --now %s: not Unix seconds in 1..%" PRId64 "\n",
					g->progname, optarg, NOW_MAX);
				return FLASHCTL_EXIT_USAGE;
			}
			break;
		case 's':
			if (parse_int(optarg, 0, FLASH_AUTH_SKEW_MAX, &skew) < 0) {
				fprintf(stderr, "%s token verify: --skew %s: not 0..%d seconds\n", g->progname, optarg,
					FLASH_AUTH_SKEW_MAX);
				return FLASHCTL_EXIT_USAGE;
			}
			break;
		case 'h':
			token_usage(stdout, g->progname);
			return FLASHCTL_EXIT_OK;
		default:
			token_usage(stderr, g->progname);
			return FLASHCTL_EXIT_USAGE;
		}
	}
	if (!keys || !issuer || !audience || !action_name || argc - optind > 1 ||
	    (argc - optind == 0 && !g->token)) {
		token_usage(stderr, g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	if (!issuer[0] || !audience[0]) {
		fprintf(stderr, "%s token verify: --issuer and --audience must not be empty\n", g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	if (flash_auth_action_parse(action_name, &action) < 0) {
		fprintf(stderr, "%s token verify: --action %s: expected create, update, delete, get, list, exec, usage, logs or sandbox\n",
			g->progname, action_name);
		return FLASHCTL_EXIT_USAGE;
	}
	if (argc - optind == 1 && strcmp(argv[optind], "-") == 0) {
		if (read_stdin_token(stdin_buf, sizeof(stdin_buf), &token_len) < 0) {
			fprintf(stderr, "%s token verify: reading standard input: %s\n", g->progname, strerror(EIO));
			return FLASHCTL_EXIT_USAGE;
		}
		token = stdin_buf;
	} else if (argc - optind == 1) {
		token = argv[optind];
		token_len = strlen(token);
	} else {
		token = g->token;
		token_len = g->token_len;
	}

	if (read_key_file(g->progname, "token verify", "--keys", keys, false, &text, &len) < 0)
		return FLASHCTL_EXIT_USAGE;
	if (flash_diag_new(&diag) < 0)
		diag = NULL; /* out of memory: the refusal names the reason only */
	r = flash_auth_keyset_parse(text, len, &ks, diag);
	detail = flashctl_diag_message(diag);
	if (r < 0) {
		fprintf(stderr, "%s token verify: --keys %s: %s%s%s\n", g->progname, keys, flash_strerror(r),
			detail[0] ? ": " : "", detail);
		goto out;
	}
	FLASH_OPTS(flash_auth_verify_opts, o, .issuer = issuer, .audience = audience, .action = action,
		   .now = now, .skew = (unsigned int)skew);
	r = flash_auth_verify(ks, token, token_len, &o, &t, diag);
	detail = flashctl_diag_message(diag);
	if (r == -ENOMEM || r == -EINVAL) {
		fprintf(stderr, "%s token verify: %s\n", g->progname, flash_strerror(r));
		goto out;
	}
	if (r < 0) {
		fprintf(stderr, "%s token verify: refused: %s (%d): %s%s%s\n", g->progname, flash_auth_reason_name(r),
			-r, flash_strerror(r), detail[0] ? ": " : "", detail);
		status = FLASHCTL_EXIT_FAILURE;
		goto out;
	}
	printf("%s\n", flash_auth_token_claims_json(t));
	status = FLASHCTL_EXIT_OK;
out:
	flash_diag_free(diag);
	flash_auth_token_free(t);
	flash_auth_keyset_free(ks);
	wipe_free(text, len);
	return status;
}

int flashctl_token_main(int argc, char **argv, const struct flashctl_globals *g)
{
	if (argc >= 2 && strcmp(argv[1], "sign") == 0)
		return token_sign(argc - 1, argv + 1, g);
	if (argc >= 2 && strcmp(argv[1], "verify") == 0)
		return token_verify(argc - 1, argv + 1, g);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		token_usage(stdout, g->progname);
		return FLASHCTL_EXIT_OK;
	}
	token_usage(stderr, g->progname);
	return FLASHCTL_EXIT_USAGE;
}
