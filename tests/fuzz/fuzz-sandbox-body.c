/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the JSON bodies of flash-operator's sandbox routes
 * (operator/sandbox-http.c), through the parsers the routes call first:
 *   'e' + body  POST /provider/v1/sandboxes/ID/exec  (op_sandbox_exec_body_parse())
 *   'p' + body  PUT  /provider/v1/sandboxes/ID       (op_sandbox_provision_body_parse())
 *   anything else: the whole input as an exec body.
 * Properties:
 *  - a refusal says why (-EINVAL with a message), never anything else
 *    but -ENOMEM;
 *  - an accepted exec has argv[0] absolute, at most 4096 arguments, every
 *    env entry NAME=VALUE, an absolute cwd, a timeout within its bounds;
 *    written back as JSON it parses to the same argv, env, cwd, stdin
 *    bytes and timeout;
 *  - an accepted provision has a lifetime within its bounds and a spec
 *    that is one JSON object; written back it parses to the same spec
 *    text and lifetime.
 */
#include <errno.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "sandbox-http.h"

#define TMAX 1800000u
#define TDEF 60000u
#define TTL_MAX 86400u
#define TTL_DEF 3600u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static size_t count(const char **v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

static void check_exec(const char *body, size_t len)
{
	struct op_sandbox_exec_body b = { 0 }, b2 = { 0 };
	struct json_writer *w;
	char err[512] = "", *text = NULL, *b64 = NULL;
	size_t tlen = 0;
	int r = op_sandbox_exec_body_parse(body, len, TMAX, TDEF, &b, err, sizeof(err));

	check(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == -EINVAL)
		check(err[0] != '\0');
	if (r < 0)
		return;
	check(b.argv && b.argv[0] && b.argv[0][0] == '/' && count(b.argv) <= 4096);
	check(b.timeout_ms >= 1 && b.timeout_ms <= TMAX);
	check(!b.cwd || b.cwd[0] == '/');
	for (size_t i = 0; b.env && b.env[i]; i++)
		check(strchr(b.env[i], '=') && b.env[i][0] != '=');
	/* written back, the same request */
	w = json_writer_new(0);
	jw_object_open(w);
	jw_key(w, "argv");
	jw_array_open(w);
	for (size_t i = 0; b.argv[i]; i++)
		jw_string(w, b.argv[i]);
	jw_array_close(w);
	if (b.env) {
		jw_key(w, "env");
		jw_array_open(w);
		for (size_t i = 0; b.env[i]; i++)
			jw_string(w, b.env[i]);
		jw_array_close(w);
	}
	if (b.cwd)
		jw_kv_string(w, "cwd", b.cwd);
	if (b.has_stdin) {
		size_t bl = sodium_base64_ENCODED_LEN(b.in_len, sodium_base64_VARIANT_ORIGINAL);

		b64 = malloc(bl);
		check(b64 != NULL);
		sodium_bin2base64(b64, bl, b.in, b.in_len, sodium_base64_VARIANT_ORIGINAL);
		jw_kv_string(w, "stdin", b64);
	}
	jw_kv_uint(w, "timeout_ms", b.timeout_ms);
	jw_object_close(w);
	check(json_writer_finish(w, &text, &tlen) == 0);
	check(op_sandbox_exec_body_parse(text, tlen, TMAX, TDEF, &b2, err, sizeof(err)) == 0);
	check(count(b.argv) == count(b2.argv) && count(b.env) == count(b2.env));
	for (size_t i = 0; b.argv[i]; i++)
		check(strcmp(b.argv[i], b2.argv[i]) == 0);
	for (size_t i = 0; b.env && b.env[i]; i++)
		check(strcmp(b.env[i], b2.env[i]) == 0);
	check(!b.cwd == !b2.cwd && (!b.cwd || strcmp(b.cwd, b2.cwd) == 0));
	check(b.has_stdin == b2.has_stdin && b.in_len == b2.in_len && (!b.in_len || memcmp(b.in, b2.in, b.in_len) == 0));
	check(b.timeout_ms == b2.timeout_ms);
	op_sandbox_exec_body_clear(&b);
	op_sandbox_exec_body_clear(&b2);
	free(text);
	free(b64);
}

static void check_provision(const char *body, size_t len)
{
	char err[512] = "", *spec = NULL, *spec2 = NULL, *text = NULL;
	size_t slen = 0, slen2 = 0, tlen = 0;
	uint32_t ttl = 0, ttl2 = 0;
	struct json_value *doc = NULL;
	struct json_writer *w;
	int r = op_sandbox_provision_body_parse(body, len, TTL_MAX, TTL_DEF, &spec, &slen, &ttl, err, sizeof(err));

	check(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == -EINVAL)
		check(err[0] != '\0');
	if (r < 0)
		return;
	check(ttl >= 1 && ttl <= TTL_MAX);
	check(json_parse(spec, slen, NULL, &doc, NULL) == 0 && doc->type == JSON_OBJECT);
	w = json_writer_new(0);
	jw_object_open(w);
	jw_key(w, "spec");
	jw_value(w, doc);
	jw_kv_uint(w, "ttl_s", ttl);
	jw_object_close(w);
	check(json_writer_finish(w, &text, &tlen) == 0);
	check(op_sandbox_provision_body_parse(text, tlen, TTL_MAX, TTL_DEF, &spec2, &slen2, &ttl2, err, sizeof(err)) == 0);
	check(ttl2 == ttl && slen2 == slen && memcmp(spec, spec2, slen) == 0);
	json_free(doc);
	free(spec);
	free(spec2);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;

	if (size > (1u << 20))
		return 0;
	if (size && in[0] == 'p')
		check_provision(in + 1, size - 1);
	else if (size && in[0] == 'e')
		check_exec(in + 1, size - 1);
	else
		check_exec(in, size);
	return 0;
}
