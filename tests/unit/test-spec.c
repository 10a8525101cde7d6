/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Flash spec: the valid and invalid corpora under tests/data/spec
 * (each invalid spec with its exact expected problems), the canonical form
 * and its digest, the getters, and hostile input.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sodium.h>
#include <flash/spec.h>

#include "helpers.h"
#include "json.h"
#include "util.h"

static char *data_path(const char *rel)
{
	const char *top = getenv("top_srcdir");
	char *p = NULL;

	cr_assert(asprintf(&p, "%s/%s", top ? top : "..", rel) > 0);
	return p;
}

static char *slurp(const char *path, size_t *len)
{
	char *data = NULL;
	size_t n = 0;
	int r = util_read_file(path, 16 * 1024 * 1024, &data, &n);

	cr_assert(r == 0, "read %s: %s", path, strerror(-r));
	if (len)
		*len = n;
	return data;
}

static struct flash_spec *parse_ok(const char *text, size_t len, struct flash_diag *diag, const char *what)
{
	struct flash_spec *spec = NULL;
	int r = flash_spec_parse(text, len, NULL, &spec, diag);

	if (r != 0 && diag)
		for (size_t i = 0; i < flash_diag_count(diag); i++)
			cr_log_error("%s: %s: %s [%s]", what, flash_diag_get(diag, i)->path,
				     flash_diag_get(diag, i)->message, flash_diag_get(diag, i)->code);
	cr_assert(r == 0, "%s: parse returned %d (%s)", what, r, flash_strerror(r));
	cr_assert(spec);
	return spec;
}

static struct flash_spec *parse_file(const char *rel, struct flash_diag *diag)
{
	_cleanup_free_ char *path = data_path(rel);
	_cleanup_free_ char *text = NULL;
	size_t len;

	text = slurp(path, &len);
	return parse_ok(text, len, diag, rel);
}

/* "error PATH CODE" / "warning PATH CODE" lines, "-" for the root path. */
static char *render_problems(const struct flash_diag *diag)
{
	char *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);

	cr_assert(f);
	for (size_t i = 0; i < flash_diag_count(diag); i++) {
		const struct flash_diag_entry *e = flash_diag_get(diag, i);

		fprintf(f, "%s %s %s\n", e->severity == FLASH_DIAG_WARNING ? "warning" : "error",
			e->path[0] ? e->path : "-", e->code);
	}
	fclose(f);
	return out;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a > b && strcmp(s + a - b, suffix) == 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .json files of a corpus directory, sorted. */
static size_t corpus(const char *rel, char ***ret)
{
	_cleanup_free_ char *dir = data_path(rel);
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;

	cr_assert(d, "opendir %s", dir);
	while ((de = readdir(d))) {
		if (!has_suffix(de->d_name, ".json"))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		cr_assert(names);
		cr_assert(asprintf(&names[n++], "%s/%s", rel, de->d_name) > 0);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), name_cmp);
	*ret = names;
	return n;
}

/* Expected problems of @json_rel (NAME.expected beside it), "" when none. */
static char *expected_for(const char *json_rel)
{
	_cleanup_free_ char *json_path = data_path(json_rel);
	_cleanup_free_ char *path = NULL;
	char *exp = NULL;

	cr_assert(asprintf(&path, "%.*s.expected", (int)(strlen(json_path) - strlen(".json")), json_path) > 0);
	if (access(path, F_OK) != 0)
		return strdup("");
	exp = slurp(path, NULL);
	return exp;
}

/* parse(canonical(x)) == x, and the canonical form is a fixed point. */
static void check_round_trip(const struct flash_spec *spec, const char *what)
{
	_cleanup_free_ char *c1 = NULL, *c2 = NULL;
	struct flash_spec *again = NULL;
	uint8_t d1[FLASH_SPEC_DIGEST_SIZE], d2[FLASH_SPEC_DIGEST_SIZE];
	size_t l1 = 0, l2 = 0;

	ASSERT_OK(flash_spec_to_json(spec, &c1, &l1), what);
	cr_assert(strlen(c1) == l1, "%s: canonical length", what);
	again = parse_ok(c1, l1, NULL, what);
	cr_assert(flash_spec_equal(spec, again), "%s: parse(canonical(x)) != x", what);
	ASSERT_OK(flash_spec_to_json(again, &c2, &l2), what);
	ASSERT_STREQ(c2, c1, what);
	ASSERT_OK(flash_spec_digest(spec, d1), what);
	ASSERT_OK(flash_spec_digest(again, d2), what);
	cr_assert(memcmp(d1, d2, sizeof(d1)) == 0, "%s: digest changed on round trip", what);
	/* Getters agree too, not only the canonical text. */
	ASSERT_STREQ(flash_spec_image(again), flash_spec_image(spec), what);
	cr_assert_eq(flash_spec_replicas(again), flash_spec_replicas(spec));
	cr_assert_eq(flash_spec_port_count(again), flash_spec_port_count(spec));
	cr_assert_eq(flash_spec_env_count(again), flash_spec_env_count(spec));
	for (int l = 0; l < 4; l++) {
		cr_assert_eq(flash_spec_cidr_count(again, l), flash_spec_cidr_count(spec, l));
		for (size_t i = 0; i < flash_spec_cidr_count(spec, l); i++)
			cr_assert(flowsdn_prefix_compare(flash_spec_cidr(again, l, i), flash_spec_cidr(spec, l, i)) == 0);
	}
	flash_spec_free(again);
}

Test(spec, valid_corpus)
{
	struct flash_diag *diag = NULL;
	char **files = NULL;
	size_t n = corpus("tests/data/spec/valid", &files);

	cr_assert(n >= 10, "valid corpus has %zu specs, want at least 10", n);
	ASSERT_OK(flash_diag_new(&diag), "diag_new");
	for (size_t i = 0; i < n; i++) {
		struct flash_spec *spec = parse_file(files[i], diag);
		_cleanup_free_ char *got = render_problems(diag);
		_cleanup_free_ char *want = expected_for(files[i]);

		cr_expect(strcmp(got, want) == 0, "%s: warnings\n%s\nwant\n%s", files[i], got, want);
		cr_expect_eq(flash_diag_errors(diag), 0);
		check_round_trip(spec, files[i]);
		flash_spec_free(spec);
		free(files[i]);
	}
	free(files);
	flash_diag_free(diag);
}

Test(spec, invalid_corpus)
{
	struct flash_diag *diag = NULL;
	char **files = NULL;
	size_t n = corpus("tests/data/spec/invalid", &files);

	cr_assert(n >= 60, "invalid corpus has %zu specs, want at least 60", n);
	ASSERT_OK(flash_diag_new(&diag), "diag_new");
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *path = data_path(files[i]);
		_cleanup_free_ char *text = NULL;
		_cleanup_free_ char *want = expected_for(files[i]);
		_cleanup_free_ char *got = NULL;
		struct flash_spec *spec = (struct flash_spec *)0x1;
		size_t len;
		int r;

		text = slurp(path, &len);
		r = flash_spec_parse(text, len, NULL, &spec, diag);
		cr_expect(r == -FLASH_E_SPEC_INVALID || r == -FLASH_E_SPEC_SYNTAX, "%s: parse returned %d", files[i], r);
		cr_expect(spec == (struct flash_spec *)0x1, "%s: ret_spec written on failure", files[i]);
		cr_expect(want[0] != '\0', "%s: no .expected file", files[i]);
		got = render_problems(diag);
		cr_expect(strcmp(got, want) == 0, "%s: problems\n%s\nwant\n%s", files[i], got, want);
		cr_expect(flash_diag_errors(diag) > 0, "%s: no error", files[i]);
		/* Every problem has a message; JSON-level ones a position. */
		for (size_t k = 0; k < flash_diag_count(diag); k++) {
			const struct flash_diag_entry *e = flash_diag_get(diag, k);

			cr_expect(e->message && e->message[0], "%s: empty message", files[i]);
			if (r == -FLASH_E_SPEC_SYNTAX)
				cr_expect(e->line >= 1 && e->column >= 1, "%s: no line/column", files[i]);
		}
		free(files[i]);
	}
	free(files);
	flash_diag_free(diag);
}

/* The seed example, unchanged, and every getter on it. */
Test(spec, seed_example_getters)
{
	struct flash_diag *diag = NULL;
	struct flash_spec *s;
	const struct flowsdn_prefix *p;
	char text[FLOWSDN_PREFIX_STRLEN];

	ASSERT_OK(flash_diag_new(&diag), "diag_new");
	s = parse_file("examples/udp-echo.json", diag);
	cr_assert_eq(flash_diag_count(diag), 0, "the seed has no warnings");
	ASSERT_STREQ(flash_spec_region(s), "heteronet-global", "region");
	ASSERT_STREQ(flash_spec_image(s), "ghcr.io/ipa-cyberlab/ipa-rs-heterocloud-flash:0.1.23", "image");
	cr_assert_eq(flash_spec_replicas(s), 1);
	cr_assert_eq(flash_spec_cpu_millis(s), 250);
	cr_assert_eq(flash_spec_memory_mib(s), 128);
	ASSERT_STREQ(flash_spec_gpu_type(s), "nvidia-geforce-gtx-1080-ti", "gpu_type");
	cr_assert_eq(flash_spec_gpu_count(s), 1);
	cr_assert_eq(flash_spec_ephemeral_storage_gib(s), 10);
	cr_assert_eq(flash_spec_port_count(s), 1);
	ASSERT_STREQ(flash_spec_port_name(s, 0), "game-udp", "port name");
	cr_assert_eq(flash_spec_port_protocol(s, 0), FLASH_SPEC_PROTOCOL_UDP);
	cr_assert_eq(flash_spec_port_container_port(s, 0), 7777);
	cr_assert_null(flash_spec_port_name(s, 1));
	cr_assert_eq(flash_spec_exposure_type(s), FLASH_SPEC_EXPOSURE_PUBLIC);
	cr_assert_eq(flash_spec_traffic_mode(s), FLASH_SPEC_TRAFFIC_FORWARDED);
	cr_assert_eq(flash_spec_egress_mode(s), FLASH_SPEC_EGRESS_RESTRICTED);
	cr_assert_not(flash_spec_egress_allow_same_organization(s));
	cr_assert_eq(flash_spec_cidr_count(s, FLASH_SPEC_ALLOWED_SOURCES), 1);
	p = flash_spec_cidr(s, FLASH_SPEC_ALLOWED_SOURCES, 0);
	flowsdn_prefix_format(p, text, sizeof(text));
	ASSERT_STREQ(text, "203.0.113.0/24", "allowed source");
	p = flash_spec_cidr(s, FLASH_SPEC_DENIED_SOURCES, 0);
	flowsdn_prefix_format(p, text, sizeof(text));
	ASSERT_STREQ(text, "203.0.113.128/25", "denied source");
	p = flash_spec_cidr(s, FLASH_SPEC_ALLOWED_DESTINATIONS, 0);
	flowsdn_prefix_format(p, text, sizeof(text));
	ASSERT_STREQ(text, "198.51.100.10/32", "allowed destination");
	cr_assert_eq(flash_spec_cidr_count(s, FLASH_SPEC_DENIED_DESTINATIONS), 0);
	cr_assert_null(flash_spec_cidr(s, FLASH_SPEC_DENIED_DESTINATIONS, 0));
	cr_assert_null(flash_spec_cidr(s, (enum flash_spec_cidr_list)7, 0));
	cr_assert_eq(flash_spec_env_count(s), 1);
	ASSERT_STREQ(flash_spec_env_get(s, "FLASH_ECHO_LISTEN"), "0.0.0.0:7777", "env");
	cr_assert_null(flash_spec_env_get(s, "NOPE"));
	cr_assert_eq(flash_spec_command_count(s), 1);
	ASSERT_STREQ(flash_spec_command(s, 0), "/usr/local/bin/flash-udp-echo", "command");
	cr_assert_eq(flash_spec_args_count(s), 0);
	cr_assert_eq(flash_spec_metadata_count(s), 0);
	cr_assert_not(flash_spec_has_autoscaling(s));
	cr_assert_eq(flash_spec_autoscaling_max_replicas(s), 0);
	cr_assert_eq(flash_spec_domain_count(s), 0);
	flash_spec_free(s);
	flash_diag_free(diag);
}

/* The canonical JSON of the seed (golden file) and its BLAKE2b-256 digest,
 * computed independently with libsodium here and against a fixed value. */
Test(spec, seed_canonical_and_digest)
{
	_cleanup_free_ char *golden_path = data_path("tests/data/spec/udp-echo.canonical.json");
	_cleanup_free_ char *golden = slurp(golden_path, NULL);
	_cleanup_free_ char *canon = NULL;
	struct flash_spec *s = parse_file("examples/udp-echo.json", NULL);
	uint8_t digest[FLASH_SPEC_DIGEST_SIZE], mine[FLASH_SPEC_DIGEST_SIZE];
	char hex[FLASH_SPEC_DIGEST_HEX_SIZE];
	size_t len;

	ASSERT_OK(flash_spec_to_json(s, &canon, &len), "to_json");
	golden[strcspn(golden, "\n")] = '\0';
	ASSERT_STREQ(canon, golden, "canonical seed");
	ASSERT_OK(flash_spec_digest(s, digest), "digest");
	cr_assert(crypto_generichash(mine, sizeof(mine), (const unsigned char *)canon, len, NULL, 0) == 0);
	cr_assert(memcmp(digest, mine, sizeof(mine)) == 0, "digest is BLAKE2b-256 of the canonical JSON");
	ASSERT_OK(flash_spec_digest_hex(s, hex), "digest_hex");
	ASSERT_STREQ(hex, "f4a7c0907a2a87379ee6191b772b0b7a96a2bb446a5f44bf164f9efbb8770315", "digest hex");
	ASSERT_ERR(flash_spec_digest(NULL, digest), -EINVAL, "NULL spec");
	ASSERT_ERR(flash_spec_to_json(NULL, &canon, &len), -EINVAL, "NULL spec");
	flash_spec_free(s);
}

/* Members sorted bytewise at every level of @v. */
static void assert_sorted(const struct json_value *v, const char *what)
{
	if (v->type == JSON_OBJECT) {
		for (size_t i = 1; i < v->u.object.n; i++)
			cr_assert(strcmp(v->u.object.members[i - 1].key, v->u.object.members[i].key) < 0,
				  "%s: key %s before %s", what, v->u.object.members[i - 1].key,
				  v->u.object.members[i].key);
		for (size_t i = 0; i < v->u.object.n; i++)
			assert_sorted(v->u.object.members[i].value, what);
	} else if (v->type == JSON_ARRAY) {
		for (size_t i = 0; i < v->u.array.n; i++)
			assert_sorted(v->u.array.items[i], what);
	}
}

/* Defaults written out, keys sorted, lists normalized and sorted. */
Test(spec, canonical_defaults_sorted_normalized)
{
	struct flash_spec *s = parse_file("tests/data/spec/valid/01-minimal.json", NULL);
	struct flash_spec *v6 = parse_file("tests/data/spec/valid/03-ipv6-sources.json", NULL);
	struct flash_spec *env = parse_file("tests/data/spec/valid/09-command-args-metadata.json", NULL);
	_cleanup_free_ char *canon = NULL;
	struct json_value *doc = NULL;
	static const char *const want_sources[] = { "8.8.8.0/24", "203.0.113.5/32", "2001:db8::/64", "2001:db8:1::7/128" };
	static const char *const want_env[] = { "A_FIRST", "MIXED_case9", "Z_LAST", "_UNDERSCORE" };
	char text[FLOWSDN_PREFIX_STRLEN];
	size_t len;

	ASSERT_OK(flash_spec_to_json(s, &canon, &len), "to_json");
	ASSERT_STREQ(canon,
		     "{\"args\":[],\"command\":[],\"cpu_millis\":1,\"domains\":[],\"egress\":{\"allow_same_organization\":false,"
		     "\"allowed_destination_cidrs\":[],\"denied_destination_cidrs\":[],\"mode\":\"disabled\"},\"env\":{},"
		     "\"ephemeral_storage_gib\":10,\"exposure\":{\"allowed_source_cidrs\":[],\"denied_source_cidrs\":[],"
		     "\"traffic_mode\":\"forwarded\",\"type\":\"internal\"},\"image\":\"nginx\",\"memory_mib\":4,"
		     "\"metadata\":{},\"ports\":[],\"region\":\"heteronet-global\",\"replicas\":1}",
		     "minimal spec with every default explicit");
	cr_assert_eq(flash_spec_replicas(s), 1);
	cr_assert_eq(flash_spec_ephemeral_storage_gib(s), 10);
	cr_assert_null(flash_spec_gpu_type(s));
	cr_assert_eq(flash_spec_gpu_count(s), 0);
	cr_assert_eq(flash_spec_exposure_type(s), FLASH_SPEC_EXPOSURE_INTERNAL);
	cr_assert_eq(flash_spec_egress_mode(s), FLASH_SPEC_EGRESS_DISABLED);

	cr_assert_eq(flash_spec_cidr_count(v6, FLASH_SPEC_ALLOWED_SOURCES), 4);
	for (size_t i = 0; i < 4; i++) {
		flowsdn_prefix_format(flash_spec_cidr(v6, FLASH_SPEC_ALLOWED_SOURCES, i), text, sizeof(text));
		ASSERT_STREQ(text, want_sources[i], "sorted, normalized sources");
	}
	for (size_t i = 0; i < 4; i++)
		ASSERT_STREQ(flash_spec_env_key(env, i), want_env[i], "env sorted bytewise");
	ASSERT_STREQ(flash_spec_env_get(env, "_UNDERSCORE"), "", "empty value");
	ASSERT_STREQ(flash_spec_arg(env, 6), "with \"quotes\" and \\ backslash", "args kept verbatim");
	ASSERT_STREQ(flash_spec_metadata_get(env, "cost-center"), "cc.1234", "metadata");

	free(canon);
	canon = NULL;
	ASSERT_OK(flash_spec_to_json(v6, &canon, &len), "to_json");
	ASSERT_OK(json_parse(canon, len, NULL, &doc, NULL), "canonical is JSON");
	assert_sorted(doc, "03-ipv6-sources");
	json_free(doc);
	flash_spec_free(s);
	flash_spec_free(v6);
	flash_spec_free(env);
}

Test(spec, canonical_keys_sorted_for_full_spec)
{
	struct flash_spec *s = parse_file("tests/data/spec/valid/02-web-public-direct.json", NULL);
	_cleanup_free_ char *canon = NULL;
	struct json_value *doc = NULL;
	size_t len;

	cr_assert(flash_spec_has_autoscaling(s));
	cr_assert_eq(flash_spec_autoscaling_min_replicas(s), 2);
	cr_assert_eq(flash_spec_autoscaling_max_replicas(s), 10);
	cr_assert_eq(flash_spec_autoscaling_target_cpu_percent(s), 70);
	cr_assert_eq(flash_spec_domain_count(s), 2);
	ASSERT_STREQ(flash_spec_domain_host(s, 1), "example.com", "domain order kept");
	ASSERT_STREQ(flash_spec_domain_port(s, 1), "http", "domain port");
	cr_assert_eq(flash_spec_traffic_mode(s), FLASH_SPEC_TRAFFIC_DIRECT);
	cr_assert(flash_spec_egress_allow_same_organization(s));
	ASSERT_OK(flash_spec_to_json(s, &canon, &len), "to_json");
	ASSERT_OK(json_parse(canon, len, NULL, &doc, NULL), "canonical is JSON");
	assert_sorted(doc, "02-web-public-direct");
	cr_assert_not_null(json_get(doc, "autoscaling"));
	json_free(doc);
	flash_spec_free(s);
}

/* Two texts of the same spec: same canonical form and digest; a change
 * of one field: a different digest. */
Test(spec, digest_identifies_the_spec)
{
	const char *a = "{\"region\":\"r\",\"image\":\"nginx\",\"cpu_millis\":1,\"memory_mib\":4,"
			"\"exposure\":{\"type\":\"public\",\"allowed_source_cidrs\":[\"2001:DB8::1\",\"8.8.8.8\"]}}";
	const char *b = "{\"exposure\":{\"allowed_source_cidrs\":[\"8.8.8.8/32\",\"2001:db8:0::1/128\"],"
			"\"type\":\"public\",\"traffic_mode\":\"forwarded\"},\n \"memory_mib\":4,\"cpu_millis\":1,"
			"\"image\":\"nginx\",\"region\":\"r\",\"replicas\":1,\"env\":{}}";
	const char *c = "{\"region\":\"r\",\"image\":\"nginx\",\"cpu_millis\":2,\"memory_mib\":4}";
	struct flash_spec *sa = parse_ok(a, strlen(a), NULL, "a");
	struct flash_spec *sb = parse_ok(b, strlen(b), NULL, "b");
	struct flash_spec *sc = parse_ok(c, strlen(c), NULL, "c");
	char ha[FLASH_SPEC_DIGEST_HEX_SIZE], hb[FLASH_SPEC_DIGEST_HEX_SIZE], hc[FLASH_SPEC_DIGEST_HEX_SIZE];

	cr_assert(flash_spec_equal(sa, sb));
	cr_assert_not(flash_spec_equal(sa, sc));
	cr_assert_not(flash_spec_equal(sa, NULL));
	ASSERT_OK(flash_spec_digest_hex(sa, ha), "a");
	ASSERT_OK(flash_spec_digest_hex(sb, hb), "b");
	ASSERT_OK(flash_spec_digest_hex(sc, hc), "c");
	ASSERT_STREQ(ha, hb, "same spec, same digest");
	cr_assert(strcmp(ha, hc) != 0, "different spec, different digest");
	flash_spec_free(sa);
	flash_spec_free(sb);
	flash_spec_free(sc);
}

static int parse_status(const char *text, size_t len, struct flash_diag *diag)
{
	struct flash_spec *spec = NULL;
	int r = flash_spec_parse(text, len, NULL, &spec, diag);

	flash_spec_free(spec);
	return r;
}

static const char *first_code(const struct flash_diag *diag)
{
	const struct flash_diag_entry *e = flash_diag_get(diag, 0);

	return e ? e->code : "(none)";
}

/* Hostile input: refused with a clear code and bounded memory. */
Test(spec, hostile_input)
{
	struct flash_diag *diag = NULL;
	size_t big = 10 * 1024 * 1024, deep = 100000;
	char *buf;

	ASSERT_OK(flash_diag_new(&diag), "diag_new");

	/* Deep nesting. */
	buf = malloc(2 * deep + 32);
	cr_assert(buf);
	strcpy(buf, "{\"metadata\":");
	memset(buf + strlen(buf), '[', deep);
	buf[12 + deep] = '\0';
	ASSERT_ERR(parse_status(buf, 12 + deep, diag), -FLASH_E_SPEC_SYNTAX, "deep nesting");
	ASSERT_STREQ(first_code(diag), "json-depth", "deep nesting");
	free(buf);

	/* A 10 MB string. */
	buf = malloc(big + 32);
	cr_assert(buf);
	strcpy(buf, "{\"region\":\"");
	memset(buf + 11, 'a', big);
	strcpy(buf + 11 + big, "\"}");
	ASSERT_ERR(parse_status(buf, strlen(buf), diag), -FLASH_E_SPEC_SYNTAX, "10 MB string");
	ASSERT_STREQ(first_code(diag), "json-input-size", "10 MB string");
	/* The same string within a small document is refused by its size too. */
	strcpy(buf + 11 + 70000, "\"}");
	ASSERT_ERR(parse_status(buf, strlen(buf), diag), -FLASH_E_SPEC_SYNTAX, "70 kB string");
	ASSERT_STREQ(first_code(diag), "json-string-size", "70 kB string");
	free(buf);

	/* Invalid UTF-8: a lone continuation byte, an overlong '/', a surrogate. */
	{
		static const char *const bad[] = {
			"{\"region\":\"\x80\"}",
			"{\"region\":\"\xc0\xaf\"}",
			"{\"region\":\"\xed\xa0\x80\"}",
			"{\"env\":{\"A\xff\":\"x\"}}",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			ASSERT_ERR(parse_status(bad[i], strlen(bad[i]), diag), -FLASH_E_SPEC_SYNTAX, "invalid UTF-8");
			ASSERT_STREQ(first_code(diag), "json-utf8", "invalid UTF-8");
		}
	}

	/* Escaped surrogates that are not a pair: "\ud800x" was "?x" and
	 * valid; refused with the escape's line and column. */
	{
		static const char *const bad[] = {
			"{\"region\":\"\\ud800x\"}",
			"{\"region\":\"\\udc00\"}",
			"{\"region\":\"\\ud800\\u0041\"}",
			"{\"env\":{\"A\\ud800\":\"x\"}}",
		};
		static const unsigned int column[] = { 12, 12, 12, 11 };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			const struct flash_diag_entry *e;

			ASSERT_ERR(parse_status(bad[i], strlen(bad[i]), diag), -FLASH_E_SPEC_SYNTAX, bad[i]);
			ASSERT_STREQ(first_code(diag), "json-utf8", bad[i]);
			e = flash_diag_get(diag, 0);
			cr_assert(e->line == 1 && e->column == column[i], "%s: at %u:%u, want 1:%u", bad[i], e->line,
				  e->column, column[i]);
			cr_assert(strstr(e->message, "surrogate"), "%s: message %s", bad[i], e->message);
		}
	}

	/* Duplicate keys, nested. */
	{
		const char *t = "{\"region\":\"r\",\"env\":{\"A\":\"1\",\"A\":\"2\"}}";

		ASSERT_ERR(parse_status(t, strlen(t), diag), -FLASH_E_SPEC_SYNTAX, "duplicate key");
		ASSERT_STREQ(first_code(diag), "json-duplicate-key", "duplicate key");
		cr_assert(strstr(flash_diag_get(diag, 0)->message, "\"A\""), "message names the key: %s",
			  flash_diag_get(diag, 0)->message);
	}

	/* Huge numbers, floats for integers, negative zero. */
	{
		static const struct {
			const char *text, *code;
		} nums[] = {
			{ "99999999999999999999999999999999999999", "maximum" },
			{ "-99999999999999999999999999999999999999", "minimum" },
			{ "1e400", "integer" },
			{ "250.0", "integer" },
			{ "2.5e2", "integer" },
			{ "-0", "integer" },
		};

		for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
			char *t = NULL;

			cr_assert(asprintf(&t, "{\"region\":\"r\",\"image\":\"i\",\"cpu_millis\":%s,\"memory_mib\":4}",
					   nums[i].text) > 0);
			ASSERT_ERR(parse_status(t, strlen(t), diag), -FLASH_E_SPEC_INVALID, nums[i].text);
			ASSERT_STREQ(flash_diag_get(diag, 0)->path, "cpu_millis", nums[i].text);
			ASSERT_STREQ(first_code(diag), nums[i].code, nums[i].text);
			free(t);
		}
	}

	/* A NUL byte in the raw input and trailing garbage. */
	ASSERT_ERR(parse_status("{\"region\":\"a\"}\0x", 16, diag), -FLASH_E_SPEC_SYNTAX, "NUL after document");
	ASSERT_ERR(parse_status("{} {}", 5, diag), -FLASH_E_SPEC_SYNTAX, "two documents");
	ASSERT_ERR(parse_status("", 0, diag), -FLASH_E_SPEC_SYNTAX, "empty");
	ASSERT_STREQ(first_code(diag), "json-empty", "empty");
	/* Input that is not NUL-terminated is never read past its length
	 * (found by the fuzzer: a lone "\r"; ASan/valgrind check it). */
	buf = malloc(1);
	cr_assert(buf);
	buf[0] = '\r';
	ASSERT_ERR(parse_status(buf, 1, diag), -FLASH_E_SPEC_SYNTAX, "lone CR");
	ASSERT_STREQ(first_code(diag), "json-empty", "lone CR");
	free(buf);
	flash_diag_free(diag);
}

Test(spec, syntax_error_position)
{
	struct flash_diag *diag = NULL;
	const char *t = "{\n  \"region\": \"x\",\n  \"image\" \"y\"\n}\n";
	const struct flash_diag_entry *e;

	ASSERT_OK(flash_diag_new(&diag), "diag_new");
	ASSERT_ERR(parse_status(t, strlen(t), diag), -FLASH_E_SPEC_SYNTAX, "syntax");
	cr_assert_eq(flash_diag_count(diag), 1);
	e = flash_diag_get(diag, 0);
	ASSERT_STREQ(e->code, "json-syntax", "code");
	cr_assert_eq(e->line, 3, "line %u", e->line);
	cr_assert(e->column >= 9 && e->column <= 14, "column %u", e->column);
	ASSERT_STREQ(e->path, "", "path");
	cr_assert_null(e->value);
	flash_diag_free(diag);
}

/* Every problem is reported up to the bound, then counted as dropped. */
Test(spec, problems_are_bounded)
{
	struct flash_diag *diag = NULL;
	FLASH_OPTS(flash_spec_parse_opts, opts, .max_problems = 5);
	struct flash_spec *spec = NULL;
	char *t = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&t, &size);

	cr_assert(f);
	fprintf(f, "{\"region\":\"r\",\"image\":\"i\",\"cpu_millis\":1,\"memory_mib\":4");
	for (int i = 0; i < 100; i++)
		fprintf(f, ",\"unknown%03d\":%d", i, i);
	fprintf(f, "}");
	fclose(f);

	ASSERT_OK(flash_diag_new(&diag), "diag_new");
	ASSERT_ERR(flash_spec_parse(t, size, NULL, &spec, diag), -FLASH_E_SPEC_INVALID, "100 unknown fields");
	cr_assert_eq(flash_diag_count(diag), FLASH_DIAG_MAX);
	cr_assert_eq(flash_diag_errors(diag), 100);
	cr_assert_eq(flash_diag_dropped(diag), 100 - FLASH_DIAG_MAX);
	ASSERT_STREQ(flash_diag_get(diag, 0)->path, "unknown000", "first problem");
	ASSERT_STREQ(flash_diag_get(diag, FLASH_DIAG_MAX - 1)->path, "unknown063", "last kept problem");
	cr_assert_null(flash_diag_get(diag, FLASH_DIAG_MAX));

	ASSERT_ERR(flash_spec_parse(t, size, &opts, &spec, diag), -FLASH_E_SPEC_INVALID, "max_problems 5");
	cr_assert_eq(flash_diag_count(diag), 5);
	cr_assert_eq(flash_diag_dropped(diag), 95);
	cr_assert_null(spec);

	/* Without a diag the status is the same. */
	ASSERT_ERR(flash_spec_parse(t, size, NULL, &spec, NULL), -FLASH_E_SPEC_INVALID, "no diag");
	free(t);
	flash_diag_free(diag);
}

Test(spec, offending_values)
{
	struct flash_diag *diag = NULL;
	char *t = NULL;
	const struct flash_diag_entry *e;

	ASSERT_OK(flash_diag_new(&diag), "diag_new");
	cr_assert(asprintf(&t,
			   "{\"region\":\"r\",\"image\":\"i\",\"cpu_millis\":1,\"memory_mib\":4,"
			   "\"ports\":[{\"name\":\"ok\",\"protocol\":\"tcp\",\"container_port\":70000}],"
			   "\"metadata\":{\"k\":[1,2,3]},\"gpu_type\":\"%0300d\"}",
			   0) > 0);
	ASSERT_ERR(parse_status(t, strlen(t), diag), -FLASH_E_SPEC_INVALID, "values");
	cr_assert_eq(flash_diag_count(diag), 3);
	e = flash_diag_get(diag, 0);
	ASSERT_STREQ(e->path, "gpu_type", "path");
	cr_assert(strlen(e->value) <= 100 && strstr(e->value, "...") && e->value[0] == '"',
		  "long value shortened: %s", e->value);
	e = flash_diag_get(diag, 1);
	ASSERT_STREQ(e->path, "metadata.k", "path");
	ASSERT_STREQ(e->value, "[1,2,3]", "array value as JSON");
	e = flash_diag_get(diag, 2);
	ASSERT_STREQ(e->path, "ports[0].container_port", "path");
	ASSERT_STREQ(e->value, "70000", "number value");
	ASSERT_STREQ(e->message, "must be at most 65535", "message");
	free(t);
	flash_diag_free(diag);
}

Test(spec, diag_to_json)
{
	struct flash_diag *diag = NULL;
	const char *t = "{\"region\":\"r\",\"image\":\"i\",\"cpu_millis\":0,\"memory_mib\":4,\"env\":{\"X_TOKEN\":\"\\\"q\\\"\"}}";
	_cleanup_free_ char *json = NULL;
	struct json_value *doc = NULL;
	const struct json_value *problems;
	size_t len;

	ASSERT_OK(flash_diag_new(&diag), "diag_new");
	ASSERT_ERR(parse_status(t, strlen(t), diag), -FLASH_E_SPEC_INVALID, "invalid");
	ASSERT_OK(flash_diag_to_json(diag, "spec \"1\".json", &json, &len), "to_json");
	ASSERT_OK(json_parse(json, len, NULL, &doc, NULL), "output is JSON");
	ASSERT_STREQ(json_get(doc, "source")->u.string.ptr, "spec \"1\".json", "source");
	cr_assert_eq(json_get(doc, "valid")->u.boolean, false);
	problems = json_get(doc, "problems");
	cr_assert_eq(problems->u.array.n, 2);
	ASSERT_STREQ(json_get(problems->u.array.items[0], "code")->u.string.ptr, "minimum", "code");
	ASSERT_STREQ(json_get(problems->u.array.items[0], "value")->u.string.ptr, "0", "value");
	ASSERT_STREQ(json_get(problems->u.array.items[1], "severity")->u.string.ptr, "warning", "severity");
	ASSERT_STREQ(json_get(problems->u.array.items[1], "path")->u.string.ptr, "env.X_TOKEN", "path");
	cr_assert_null(json_get(problems->u.array.items[1], "line"));
	json_free(doc);
	ASSERT_ERR(flash_diag_to_json(NULL, NULL, &json, &len), -EINVAL, "NULL diag");
	flash_diag_free(diag);
}

Test(spec, bad_arguments_and_strerror)
{
	struct flash_spec *spec = NULL;
	struct flash_spec_parse_opts big[2];

	ASSERT_ERR(flash_spec_parse(NULL, 0, NULL, &spec, NULL), -EINVAL, "NULL text");
	ASSERT_ERR(flash_spec_parse("{}", 2, NULL, NULL, NULL), -EINVAL, "NULL ret");
	/* A longer options struct with a non-zero unknown tail is refused. */
	memset(big, 0xff, sizeof(big));
	big[0].sz = sizeof(big);
	ASSERT_ERR(flash_spec_parse("{}", 2, &big[0], &spec, NULL), -EINVAL, "unknown opts tail");
	ASSERT_ERR(flash_diag_new(NULL), -EINVAL, "diag_new NULL");
	flash_spec_free(NULL);
	flash_diag_free(NULL);
	cr_assert_eq(flash_spec_replicas(NULL), 0);
	cr_assert_null(flash_spec_region(NULL));
	ASSERT_STREQ(flash_strerror(-FLASH_E_SPEC_INVALID), "spec breaks one or more rules", "strerror");
	ASSERT_STREQ(flash_strerror(-FLASH_E_SPEC_SYNTAX), "spec is not acceptable JSON", "strerror");
	ASSERT_STREQ(flash_spec_protocol_name(FLASH_SPEC_PROTOCOL_UDP), "udp", "protocol name");
}
