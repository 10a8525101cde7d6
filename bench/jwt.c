/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Verification throughput of provider command tokens: full
 * flash_auth_verify() (size, base64url, header JSON, kid lookup, Ed25519,
 * claims JSON and checks, token object) against a bare
 * crypto_sign_verify_detached() over the same signed bytes, in the same
 * run, alternating short blocks so that both see the same machine state.
 * Prints figures only; never fails on time.
 *
 *   bench/jwt [BLOCKS [PER_BLOCK]]     (defaults 200 and 50)
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sodium.h>
#include <flash/auth.h>

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long blocks = argc > 1 ? strtol(argv[1], NULL, 10) : 200, per_block = argc > 2 ? strtol(argv[2], NULL, 10) : 50;
	struct flash_auth_signer *s = NULL;
	struct flash_auth_keyset *ks = NULL;
	struct flash_diag *diag = NULL; /* passed, as callers do: it must cost nothing on success */
	unsigned char pk[32], sig[64];
	double full = 0, bare = 0, n;
	char claims[512], *tok = NULL, *dot2;
	size_t siglen, toklen;
	int64_t t0 = (int64_t)time(NULL);
	unsigned long failures = 0;
	int r;

	if (blocks <= 0 || per_block <= 0 || sodium_init() < 0)
		return 2;
	if (flash_auth_signer_generate("bench-key-2026", &s) < 0 || flash_auth_keyset_new(&ks) < 0 ||
	    flash_auth_signer_public_key(s, pk) < 0 || flash_auth_keyset_add(ks, "bench-key-2026", pk) < 0 ||
	    flash_diag_new(&diag) < 0)
		return 1;
	snprintf(claims, sizeof(claims),
		 "{\"iss\":\"https://api.heterocloud.example\",\"aud\":\"flash-provider/eu-1\",\"action\":\"update\","
		 "\"iat\":%" PRId64 ",\"exp\":%" PRId64 ",\"org\":\"org_01HZX3K4Q9\",\"project\":\"prj_01HZX3M2A7\","
		 "\"gen\":42,\"jti\":\"6f1c2a9e-8d4b-4c1e-9f3a-2b7d5e0c1a88\"}", t0, t0 + 60);
	if (flash_auth_signer_sign(s, claims, strlen(claims), &tok) < 0)
		return 1;
	toklen = strlen(tok);
	dot2 = strrchr(tok, '.');
	if (flash_auth_b64url_decode(dot2 + 1, strlen(dot2 + 1), sig, sizeof(sig), &siglen) < 0)
		return 1;

	FLASH_OPTS(flash_auth_verify_opts, o, .issuer = "https://api.heterocloud.example",
		   .audience = "flash-provider/eu-1", .action = FLASH_AUTH_ACTION_UPDATE, .now = t0 + 1, .skew = 2);
	/* Short alternating blocks, timed in thread CPU time: on a shared
	 * machine both loops then see the same load and descheduled time
	 * is not counted. */
	for (long blk = 0; blk < blocks; blk++) {
		double a, b;

		a = cpu_s();
		for (long i = 0; i < per_block; i++) {
			struct flash_auth_token *t = NULL;

			r = flash_auth_verify(ks, tok, toklen, &o, &t, diag);
			failures += r != 0;
			flash_auth_token_free(t);
		}
		b = cpu_s();
		full += b - a;
		for (long i = 0; i < per_block; i++)
			failures += crypto_sign_verify_detached(sig, (const unsigned char *)tok,
								(size_t)(dot2 - tok), pk) != 0;
		bare += cpu_s() - b;
	}
	n = (double)blocks * (double)per_block;
	printf("token: %zu bytes, %ld blocks of %ld verifications each, alternating (thread CPU time)\n", toklen,
	       blocks, per_block);
	printf("full flash_auth_verify:   %9.0f tokens/s    %7.2f us/token\n", n / full, full / n * 1e6);
	printf("bare crypto_sign_verify:  %9.0f verifies/s  %7.2f us/verify\n", n / bare, bare / n * 1e6);
	printf("ratio full/bare:          %9.3f (goal >= 0.9)\n", bare / full);
	if (failures)
		printf("FAILURES: %lu verifications failed\n", failures);
	free(tok);
	flash_auth_keyset_free(ks);
	flash_auth_signer_free(s);
	flash_diag_free(diag);
	return failures ? 1 : 0;
}
