/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Round-trip properties over generated inputs (issue 21 item 2): for every
 * format the project writes and reads back, parse(print(x)) == x and
 * print(parse(print(x))) == print(x).  Each property draws hundreds of
 * cases from a seeded PRNG; the seed is printed on failure and
 * ROUNDTRIP_SEED=N replays it. */
#include "ipam-helpers.h"

#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <flash/meter.h>
#include <flash/spec.h>
#include <flowsdn/identity.h>
#include <flowsdn/ipam.h>

#include "agent-api.h"
#include "conf.h"
#include "diag.h"
#include "helpers.h"
#include "json.h"
#include "services.h"
#include "strbuf-helpers.h"
#ifdef ROUNDTRIP_OPERATOR
#include "runtime-internal.h"
#include "runtime-net.h"
#endif

/* ------------------------------------------------------------ generator */

static uint64_t seed, rng;

static uint64_t next(void) /* splitmix64 */
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t between(uint64_t lo, uint64_t hi)
{
	return lo + next() % (hi - lo + 1);
}

static bool coin(void)
{
	return next() & 1;
}

static void seed_init(const char *what)
{
	const char *env = getenv("ROUNDTRIP_SEED");

	seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
	rng = seed;
	cr_log_info("%s: ROUNDTRIP_SEED=%" PRIu64, what, seed);
}

/* A random string of @lo..@hi bytes from @alpha. */
static void rand_word(char *buf, size_t lo, size_t hi, const char *alpha)
{
	size_t n = between(lo, hi), k = strlen(alpha);

	for (size_t i = 0; i < n; i++)
		buf[i] = alpha[next() % k];
	buf[n] = '\0';
}

/* A DNS label of 1..@max bytes. */
static void rand_label(char *buf, size_t max)
{
	rand_word(buf, 1, max, "abcdefghijklmnopqrstuvwxyz0123456789-");
	buf[0] = (char)('a' + next() % 26);
	buf[strlen(buf) - 1] = (char)('a' + next() % 26);
}

/* Any text a JSON string may hold: ASCII with quotes, backslashes and
 * control characters, and multi-byte UTF-8 (2, 3 and 4 bytes), as a JSON
 * literal (escaped the way a hand-written file might: \n, \u00e9, raw
 * UTF-8). */
static void rand_json_string(struct sb *b, size_t max_chars)
{
	static const char *const pieces[] = { "\\\"", "\\\\", "\\n", "\\t", "\\u0001", "\\u001f", "\\/",
					      "\\u00e9", "é", "€", "😀", "\\ud83d\\ude00", "x", "A", " ", "0" };
	size_t n = between(0, max_chars);

	sb_add(b, "\"");
	for (size_t i = 0; i < n; i++)
		sb_add(b, "%s", pieces[next() % (sizeof(pieces) / sizeof(pieces[0]))]);
	sb_add(b, "\"");
}

/* ------------------------------------------------------------------ spec */

static const char *const public4[] = { "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "8.8.8.8/32",
				       "1.1.1.0/24", "203.0.113.128/25", "198.51.100.10/32", "9.0.0.0/8" };
static const char *const public6[] = { "2001:db8::/32", "2001:db8:1::/48", "2606:4700::/32",
				       "2001:db8::1/128" };

/* A random sub-list of the public prefixes, in random order, each once. */
static void rand_cidrs(struct sb *b, size_t max)
{
	const char *all[12];
	size_t n = 0, k;

	for (size_t i = 0; i < sizeof(public4) / sizeof(public4[0]); i++)
		all[n++] = public4[i];
	for (size_t i = 0; i < sizeof(public6) / sizeof(public6[0]); i++)
		all[n++] = public6[i];
	for (size_t i = n; i > 1; i--) { /* shuffle */
		size_t j = next() % i;
		const char *t = all[i - 1];

		all[i - 1] = all[j];
		all[j] = t;
	}
	k = between(0, max < n ? max : n);
	sb_add(b, "[");
	for (size_t i = 0; i < k; i++)
		sb_add(b, "%s\"%s\"", i ? "," : "", all[i]);
	sb_add(b, "]");
}

static char *gen_spec(void)
{
	struct sb b = { 0 };
	char w[80];
	bool public = coin(), autoscale = coin();
	uint32_t min = (uint32_t)between(1, 20), max = min + (uint32_t)between(0, 50);
	size_t ports = between(0, 6), n;
	const char *egress[] = { "disabled", "restricted", "internet" };
	const char *mode = egress[next() % 3];
	char names[8][16];
	bool any_tcp = false, is_tcp[8] = { false };

	rand_label(w, 20);
	sb_add(&b, "{\"region\":\"%s\"", w);
	rand_word(w, 1, 12, "abcdefghijklmnopqrstuvwxyz0123456789");
	sb_add(&b, ",\"image\":\"%s%s%s\"", coin() ? "registry.example.com:5000/team/" : "", w,
	       coin() ? ":v1.2" : "");
	sb_add(&b, ",\"cpu_millis\":%" PRIu64 ",\"memory_mib\":%" PRIu64, between(1, 256000), between(4, 1048576));
	if (coin())
		sb_add(&b, ",\"replicas\":%" PRIu32, autoscale ? (coin() ? 0 : min) : (uint32_t)between(0, 1000));
	else if (autoscale)
		sb_add(&b, ",\"replicas\":%" PRIu32, min);
	if (coin())
		sb_add(&b, ",\"ephemeral_storage_gib\":%" PRIu64, between(1, 10240));
	if (coin()) {
		rand_label(w, 30);
		sb_add(&b, ",\"gpu_type\":\"%s\"", w);
	}
	if (ports || coin()) {
		sb_add(&b, ",\"ports\":[");
		for (size_t i = 0; i < ports; i++) {
			bool tcp = coin();

			snprintf(names[i], sizeof(names[i]), "p%zu-%c", i, (char)('a' + next() % 26));
			any_tcp |= tcp;
			is_tcp[i] = tcp;
			/* ports differ by index, so (protocol, port) is unique */
			sb_add(&b, "%s{\"name\":\"%s\",\"protocol\":\"%s\",\"container_port\":%zu}", i ? "," : "",
			       names[i], tcp ? "tcp" : "udp", 1 + i * 1000 + (size_t)between(0, 999));
		}
		sb_add(&b, "]");
	}
	if (public || coin()) {
		sb_add(&b, ",\"exposure\":{\"type\":\"%s\"", public ? "public" : "internal");
		if (public && coin())
			sb_add(&b, ",\"traffic_mode\":\"%s\"", coin() ? "direct" : "forwarded");
		if (public) {
			sb_add(&b, ",\"allowed_source_cidrs\":");
			rand_cidrs(&b, 6);
			sb_add(&b, ",\"denied_source_cidrs\":");
			rand_cidrs(&b, 6);
		}
		sb_add(&b, "}");
	}
	if (strcmp(mode, "disabled") || coin()) {
		sb_add(&b, ",\"egress\":{\"mode\":\"%s\",\"allow_same_organization\":%s", mode,
		       coin() ? "true" : "false");
		if (!strcmp(mode, "restricted")) {
			sb_add(&b, ",\"allowed_destination_cidrs\":[\"%s\"", public4[next() % 8]);
			sb_add(&b, "]");
		}
		sb_add(&b, ",\"denied_destination_cidrs\":");
		rand_cidrs(&b, 4);
		sb_add(&b, "}");
	}
	n = between(0, 5);
	if (n || coin()) {
		sb_add(&b, ",\"env\":{");
		for (size_t i = 0; i < n; i++) {
			rand_word(w, 1, 10, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
			sb_add(&b, "%s\"E%zu%s\":", i ? "," : "", i, w);
			rand_json_string(&b, 12);
		}
		sb_add(&b, "}");
	}
	n = between(0, 4);
	if (n || coin()) {
		sb_add(&b, ",\"metadata\":{");
		for (size_t i = 0; i < n; i++) {
			rand_word(w, 1, 10, "abcdefghijklmnopqrstuvwxyz0123456789-_.");
			sb_add(&b, "%s\"m%zu%sz\":", i ? "," : "", i, w);
			rand_json_string(&b, 10);
		}
		sb_add(&b, "}");
	}
	for (int list = 0; list < 2; list++) {
		n = between(0, 4);
		if (!n && coin())
			continue;
		sb_add(&b, ",\"%s\":[", list ? "args" : "command");
		for (size_t i = 0; i < n; i++) {
			sb_add(&b, "%s", i ? "," : "");
			rand_json_string(&b, 16);
		}
		sb_add(&b, "]");
	}
	if (autoscale) {
		sb_add(&b, ",\"autoscaling\":{\"min_replicas\":%" PRIu32 ",\"max_replicas\":%" PRIu32, min, max);
		if (coin())
			sb_add(&b, ",\"target_cpu_percent\":%" PRIu64, between(1, 100));
		sb_add(&b, "}");
	}
	if (public && any_tcp && coin()) {
		size_t tcp_port = 0;

		for (size_t i = 0; i < ports; i++)
			if (is_tcp[i])
				tcp_port = i;
		n = between(1, 3);
		sb_add(&b, ",\"domains\":[");
		for (size_t i = 0; i < n; i++) {
			rand_label(w, 20);
			sb_add(&b, "%s{\"host\":\"d%zu%s.example.com\",\"port\":\"%s\"}", i ? "," : "", i, w,
			       names[tcp_port]);
		}
		sb_add(&b, "]");
	}
	sb_add(&b, "}");
	return b.p;
}

static struct flash_spec *parse_spec(const char *json, size_t len, const char *what)
{
	struct flash_spec *s = NULL;
	struct flash_diag *d = NULL;
	const struct flash_diag_entry *e;
	int r;

	ASSERT_OK(flash_diag_new(&d), "diag");
	r = flash_spec_parse(json, len, NULL, &s, d);
	e = flash_diag_first_error(d);

	cr_assert(r == 0, "ROUNDTRIP_SEED=%" PRIu64 ": %s: %s at %s: %s\n%s", seed, what, flash_strerror(r),
		  e ? e->path : "?", e ? e->message : "?", json);
	flash_diag_free(d);
	return s;
}

Test(roundtrip, spec_canonical_form)
{
	size_t domains = 0, env = 0;

	seed_init("spec");
	for (int i = 0; i < 400; i++) {
		char *x = gen_spec(), *c1 = NULL, *c2 = NULL;
		size_t n1, n2;
		struct flash_spec *s1 = parse_spec(x, strlen(x), "generated"), *s2;

		ASSERT_OK(flash_spec_to_json(s1, &c1, &n1), "print");
		s2 = parse_spec(c1, n1, "canonical form");
		cr_assert(flash_spec_equal(s1, s2), "ROUNDTRIP_SEED=%" PRIu64 " case %d: parse(print(x)) != x\n%s\n%s",
			  seed, i, x, c1);
		ASSERT_OK(flash_spec_to_json(s2, &c2, &n2), "print again");
		cr_assert(n1 == n2 && !memcmp(c1, c2, n1),
			  "ROUNDTRIP_SEED=%" PRIu64 " case %d: print(parse(print(x))) differs\n%s\n%s", seed, i, c1, c2);
		/* The strings came back byte for byte. */
		cr_assert_eq(flash_spec_env_count(s1), flash_spec_env_count(s2));
		for (size_t k = 0; k < flash_spec_env_count(s1); k++)
			ASSERT_STREQ(flash_spec_env_value(s1, k), flash_spec_env_get(s2, flash_spec_env_key(s1, k)),
				     "env value");
		cr_assert_eq(flash_spec_args_count(s1), flash_spec_args_count(s2));
		for (size_t k = 0; k < flash_spec_args_count(s1); k++)
			ASSERT_STREQ(flash_spec_arg(s1, k), flash_spec_arg(s2, k), "arg");
		domains += flash_spec_domain_count(s1);
		env += flash_spec_env_count(s1);
		flash_spec_free(s1);
		flash_spec_free(s2);
		free(x);
		free(c1);
		free(c2);
	}
	cr_assert(domains > 0 && env > 0, "the generator covers domains (%zu) and env (%zu)", domains, env);
}

/* ----------------------------------------------------------------- meter */

static char *meter_json(const struct flash_meter *m)
{
	char *j = NULL;
	size_t n;

	ASSERT_OK(flash_meter_to_json(m, &j, &n), "meter print");
	cr_assert_eq(n, strlen(j));
	return j;
}

static void same_records(const struct flash_meter *a, const struct flash_meter *b, int i)
{
	cr_assert_eq(flash_meter_record_count(a), flash_meter_record_count(b),
		     "ROUNDTRIP_SEED=%" PRIu64 " case %d: record count", seed, i);
	for (size_t k = 0; k < flash_meter_record_count(a); k++) {
		struct flash_meter_record ra, rb;
		char *ja = NULL, *jb = NULL;

		ASSERT_OK(flash_meter_record_get(a, k, &ra), "record");
		ASSERT_OK(flash_meter_record_get(b, k, &rb), "record");
		ASSERT_OK(flash_meter_record_to_json(&ra, &ja, NULL), "record json");
		ASSERT_OK(flash_meter_record_to_json(&rb, &jb, NULL), "record json");
		cr_assert(!strcmp(ja, jb) && ra.scope == rb.scope && ra.week_start == rb.week_start &&
				  ra.accrued_until == rb.accrued_until && ra.deleted_at == rb.deleted_at &&
				  ra.service_deleted == rb.service_deleted &&
				  ra.usage.cpu_millicore_seconds == rb.usage.cpu_millicore_seconds &&
				  ra.usage.memory_mib_seconds == rb.usage.memory_mib_seconds &&
				  ra.usage.gpu_seconds == rb.usage.gpu_seconds,
			  "ROUNDTRIP_SEED=%" PRIu64 " case %d: record %zu\n%s\n%s", seed, i, k, ja, jb);
		free(ja);
		free(jb);
	}
}

Test(roundtrip, meter_state_and_usage_records)
{
	const struct flash_meter_opts opts = { .sz = sizeof(opts), .reorder_window = 120 };
	size_t records = 0, deleted = 0;

	seed_init("meter");
	for (int i = 0; i < 200; i++) {
		struct flash_meter *m = NULL, *m2 = NULL;
		int64_t t = 1796000000 + (int64_t)between(0, 3 * 7 * 86400); /* three weeks of late 2026 */
		size_t n = between(1, 60);
		char *j1, *j2;
		struct flash_diag *d = NULL;
		int r;

		ASSERT_OK(flash_diag_new(&d), "diag");
		ASSERT_OK(flash_meter_new(&opts, &m), "meter");
		for (size_t k = 0; k < n; k++) {
			char svc[32], org[16];
			unsigned int s = (unsigned int)between(0, 5);
			struct flash_meter_observation o = {
				.sz = sizeof(o), .service_id = svc, .organization = org,
				.time = t + (int64_t)between(0, 4 * 86400) - 200,
				.ready_replicas = (uint32_t)between(0, 4), .cpu_millis = (uint32_t)between(1, 256000),
				.memory_mib = (uint32_t)between(4, 1048576), .gpu_count = (uint32_t)between(0, 2),
			};

			snprintf(svc, sizeof(svc), "svc-%u.x:%u", s, s);
			snprintf(org, sizeof(org), "org-%u", s % 3);
			t = o.time > t ? o.time : t;
			if (between(0, 15) == 0) {
				r = flash_meter_delete_service(m, svc, t + 1);
				deleted += r == 0;
				continue;
			}
			r = flash_meter_observe(m, &o);
			cr_assert(r >= 0 || r == -FLASH_E_METER_DELETED, "ROUNDTRIP_SEED=%" PRIu64 ": observe: %s", seed,
				  flash_strerror(r));
		}
		j1 = meter_json(m);
		ASSERT_OK(flash_meter_new(&opts, &m2), "meter");
		r = flash_meter_from_json(m2, j1, strlen(j1), d);
		cr_assert(r == 0, "ROUNDTRIP_SEED=%" PRIu64 " case %d: read back: %s (%s: %s)\n%s", seed, i,
			  flash_strerror(r), flash_diag_first_error(d) ? flash_diag_first_error(d)->path : "",
			  flash_diag_first_error(d) ? flash_diag_first_error(d)->message : "", j1);
		same_records(m, m2, i);
		j2 = meter_json(m2);
		cr_assert(!strcmp(j1, j2), "ROUNDTRIP_SEED=%" PRIu64 " case %d: print(parse(print(x))) differs\n%s\n%s",
			  seed, i, j1, j2);
		records += flash_meter_record_count(m);
		flash_diag_free(d);
		free(j1);
		free(j2);
		flash_meter_free(m);
		flash_meter_free(m2);
	}
	cr_assert(records > 200 && deleted > 0, "the generator made records (%zu) and deletions (%zu)", records,
		  deleted);
}

/* ------------------------------------------------------ IPAM and identity */

static char top[256], dir[300];

static void setup(void)
{
	make_tmpdir(top, sizeof(top), dir, sizeof(dir));
}

static void teardown(void)
{
	rm_tree(top);
}

static struct flowsdn_ipam *ipam_open(const struct flowsdn_prefix *pools, size_t n)
{
	struct flowsdn_ipam *ipam = NULL;
	int r = flowsdn_ipam_new(dir, pools, n, NULL, &ipam, NULL);

	cr_assert(r == 0, "ROUNDTRIP_SEED=%" PRIu64 ": ipam_new: %s", seed, flowsdn_strerror(r));
	return ipam;
}

Test(roundtrip, ipam_state, .init = setup, .fini = teardown)
{
	const struct flowsdn_prefix pools[] = { PFX("10.77.0.0/26"), PFX("fd00:77::/120") };
	bool live[64][2] = { { false } };

	seed_init("ipam");
	for (int round = 0; round < 30; round++) {
		struct flowsdn_ipam *ipam = ipam_open(pools, 2), *again;
		struct flowsdn_ipam_allocation *a = NULL, *b = NULL;
		size_t na = 0, nb = 0, want = 0;

		for (int k = 0; k < 40; k++) {
			size_t c = between(0, 63), f = between(0, 1);
			char cid[32];
			const char *ifn = f ? "net1" : "eth0";
			struct flowsdn_ipam_result res;

			snprintf(cid, sizeof(cid), "c%zu", c);
			if (live[c][f]) {
				ASSERT_OK(flowsdn_ipam_release(ipam, cid, ifn, NULL), "release");
				live[c][f] = false;
			} else {
				int r = flowsdn_ipam_allocate(ipam, cid, ifn, NULL, &res, NULL);

				if (r == -FLOWSDN_E_IPAM_EXHAUSTED)
					continue;
				cr_assert(r == 0, "ROUNDTRIP_SEED=%" PRIu64 ": allocate: %s", seed, flowsdn_strerror(r));
				live[c][f] = true;
			}
		}
		for (size_t c = 0; c < 64; c++)
			want += 2 * ((size_t)live[c][0] + (size_t)live[c][1]); /* one lease per family */
		ASSERT_OK(flowsdn_ipam_list(ipam, &a, &na), "list");
		cr_assert_eq(na, want, "ROUNDTRIP_SEED=%" PRIu64 ": %zu allocations, %zu owners", seed, na, want);
		flowsdn_ipam_free(ipam);
		again = ipam_open(pools, 2);
		ASSERT_OK(flowsdn_ipam_list(again, &b, &nb), "list after reopen");
		cr_assert_eq(na, nb, "ROUNDTRIP_SEED=%" PRIu64 " round %d: %zu allocations became %zu", seed, round, na,
			     nb);
		for (size_t k = 0; k < na; k++)
			cr_assert(!strcmp(a[k].container_id, b[k].container_id) && !strcmp(a[k].ifname, b[k].ifname) &&
					  flowsdn_addr_equal(&a[k].addr, &b[k].addr) &&
					  flowsdn_addr_equal(&a[k].pool.addr, &b[k].pool.addr) &&
					  a[k].pool.len == b[k].pool.len,
				  "ROUNDTRIP_SEED=%" PRIu64 " round %d: allocation %zu changed on reopen", seed, round, k);
		for (size_t k = 0; k < na; k++) {
			struct flowsdn_ipam_result r1;

			ASSERT_OK(flowsdn_ipam_lookup(again, a[k].container_id, a[k].ifname, &r1), "lookup");
		}
		free(a);
		free(b);
		flowsdn_ipam_free(again);
	}
}

static struct flowsdn_identity_store *identity_open(void)
{
	struct flowsdn_identity_store *s = NULL;
	int r = flowsdn_identity_new(dir, NULL, &s);

	cr_assert(r == 0, "ROUNDTRIP_SEED=%" PRIu64 ": identity_new: %s", seed, flowsdn_strerror(r));
	return s;
}

Test(roundtrip, identity_state, .init = setup, .fini = teardown)
{
	uint32_t ids[48] = { 0 };
	unsigned int refs[48] = { 0 };

	seed_init("identity");
	for (int round = 0; round < 30; round++) {
		struct flowsdn_identity_store *s = identity_open(), *again;
		struct flowsdn_identity_info *a = NULL, *b = NULL;
		size_t na = 0, nb = 0;

		for (int k = 0; k < 30; k++) {
			size_t set = between(0, 47);
			char v1[16], v2[16];
			const struct flowsdn_label l[] = {
				{ "app.kubernetes.io/name", v1 }, { "k8s-app", v2 }, { "tier", set % 3 ? "web" : "" },
			};
			uint32_t id;

			snprintf(v1, sizeof(v1), "shop_%zu", set);
			snprintf(v2, sizeof(v2), "A.b-%zu", set % 5);
			if (refs[set] && coin()) {
				ASSERT_OK(flowsdn_identity_release(s, ids[set]), "release");
				refs[set]--;
				continue;
			}
			ASSERT_OK(flowsdn_identity_acquire(s, l, 1 + set % 3, &id), "acquire");
			cr_assert(!refs[set] || id == ids[set], "ROUNDTRIP_SEED=%" PRIu64 ": the same set, another id",
				  seed);
			ids[set] = id;
			refs[set]++;
		}
		ASSERT_OK(flowsdn_identity_list(s, &a, &na), "list");
		flowsdn_identity_free(s);
		again = identity_open();
		ASSERT_OK(flowsdn_identity_list(again, &b, &nb), "list after reopen");
		cr_assert_eq(na, nb, "ROUNDTRIP_SEED=%" PRIu64 " round %d: %zu identities became %zu", seed, round, na,
			     nb);
		for (size_t k = 0; k < na; k++)
			cr_assert(a[k].id == b[k].id && a[k].refcount == b[k].refcount && !strcmp(a[k].labels, b[k].labels),
				  "ROUNDTRIP_SEED=%" PRIu64 " round %d: identity %" PRIu32 " (%s, %" PRIu32
				  " refs) became %" PRIu32 " (%s, %" PRIu32 " refs)",
				  seed, round, a[k].id, a[k].labels, a[k].refcount, b[k].id, b[k].labels, b[k].refcount);
		for (size_t set = 0; set < 48; set++)
			if (refs[set])
				cr_assert_eq((unsigned int)flowsdn_identity_refcount(again, ids[set]), refs[set],
					     "ROUNDTRIP_SEED=%" PRIu64 ": refcount of %" PRIu32, seed, ids[set]);
		free(a);
		free(b);
		flowsdn_identity_free(again);
	}
}

/* ------------------------------------------------- agent endpoint records */

static void rand_addr(struct flowsdn_addr *a, bool v6)
{
	char text[64];

	if (v6)
		snprintf(text, sizeof(text), "fd00:%x::%x:%x", (unsigned int)between(0, 0xffff),
			 (unsigned int)between(0, 0xffff), (unsigned int)between(1, 0xffff));
	else
		snprintf(text, sizeof(text), "10.%u.%u.%u", (unsigned int)between(0, 255),
			 (unsigned int)between(0, 255), (unsigned int)between(1, 254));
	*a = ADDR(text);
}

static char *endpoint_json(const struct agent_api_endpoint *e)
{
	struct json_writer *g = json_writer_new(0);
	char *out = NULL;
	size_t n;

	cr_assert(g);
	agent_api_endpoint_gen(g, e);
	ASSERT_OK(json_writer_finish(g, &out, &n), "finish");
	return out;
}

Test(roundtrip, agent_endpoint_records)
{
	seed_init("endpoint");
	for (int i = 0; i < 500; i++) {
		struct agent_api_endpoint e, back;
		struct json_value *root = NULL;
		char *j1, *j2;
		int r;

		memset(&e, 0, sizeof(e));
		memset(&back, 0xa5, sizeof(back));
		e.id = (uint32_t)between(1, UINT32_MAX);
		rand_word(e.container_id, 1, 64, "abcdefghijklmnopqrstuvwxyz0123456789");
		rand_word(e.ifname, 1, 15, "abcdefghijklmnopqrstuvwxyz0123456789");
		snprintf(e.netns, sizeof(e.netns), "/run/netns/%.64s", e.container_id);
		e.netns_ino = next();
		r = agent_api_host_ifname(e.container_id, e.ifname, e.host_ifname, sizeof(e.host_ifname));
		cr_assert(r == 0, "host ifname: %d", r);
		e.host_ifindex = (int)between(1, INT32_MAX);
		for (int k = 0; k < 6; k++) {
			e.mac[k] = (uint8_t)next();
			e.host_mac[k] = (uint8_t)next();
		}
		e.mtu = (unsigned int)between(1280, 9000);
		e.created = (time_t)between(0, 4000000000u);
		e.n_addrs = between(1, 2);
		for (size_t k = 0; k < e.n_addrs; k++) {
			bool v6 = e.n_addrs == 2 ? k == 1 : coin();

			rand_addr(&e.addrs[k], v6);
			e.prefix_len[k] = v6 ? 128 : 32;
			ASSERT_OK(agent_api_gateway(v6 ? AF_INET6 : AF_INET, &e.gateway[k]), "gateway");
		}
		e.svc_translation = coin() ? FLOWSDN_CNI_SVC_PACKET : FLOWSDN_CNI_SVC_SOCKET;
		j1 = endpoint_json(&e);
		ASSERT_OK(json_parse(j1, strlen(j1), NULL, &root, NULL), j1);
		r = agent_api_endpoint_parse(root, &back);
		cr_assert(r == 0, "ROUNDTRIP_SEED=%" PRIu64 " case %d: parse(print(x)) failed: %d\n%s", seed, i, r, j1);
		j2 = endpoint_json(&back);
		cr_assert(!strcmp(j1, j2), "ROUNDTRIP_SEED=%" PRIu64 " case %d: print(parse(print(x))) differs\n%s\n%s",
			  seed, i, j1, j2);
		cr_assert(back.id == e.id && !strcmp(back.container_id, e.container_id) &&
				  !strcmp(back.ifname, e.ifname) && !strcmp(back.netns, e.netns) &&
				  back.netns_ino == e.netns_ino && !strcmp(back.host_ifname, e.host_ifname) &&
				  back.host_ifindex == e.host_ifindex && !memcmp(back.mac, e.mac, 6) &&
				  !memcmp(back.host_mac, e.host_mac, 6) && back.mtu == e.mtu &&
				  back.created == e.created && back.n_addrs == e.n_addrs &&
				  back.svc_translation == e.svc_translation,
			  "ROUNDTRIP_SEED=%" PRIu64 " case %d: parse(print(x)) != x\n%s", seed, i, j1);
		for (size_t k = 0; k < e.n_addrs; k++)
			cr_assert(flowsdn_addr_equal(&back.addrs[k], &e.addrs[k]) &&
					  back.prefix_len[k] == e.prefix_len[k] &&
					  flowsdn_addr_equal(&back.gateway[k], &e.gateway[k]),
				  "ROUNDTRIP_SEED=%" PRIu64 " case %d: address %zu\n%s", seed, i, k, j1);
		json_free(root);
		free(j1);
		free(j2);
	}
}

/* ------------------------------------------------ agent services state */

/* flowsdn-agent's services as saved (snapshot services.json and journal
 * services.journal): random PUT /v1/service bodies and DELETEs, and after
 * some of them a restart over the state directory, which reads back the
 * table GET /v1/services showed, byte for byte (the journal's records
 * replayed over the snapshot, then folded into a new snapshot at each
 * start). */
static struct agent_services *services_start(struct agent_config *cfg)
{
	static const struct agent_ops no_ops = { 0 };
	struct agent_services *s = NULL;
	int r = agent_services_new(cfg, &no_ops, NULL, NULL, &s);

	cr_assert(r == 0, "ROUNDTRIP_SEED=%" PRIu64 ": agent_services_new: %d", seed, r);
	return s;
}

static char *services_all(struct agent_services *s)
{
	struct json_writer *g = json_writer_new(0);
	char *out = NULL;

	cr_assert(g);
	ASSERT_OK(agent_services_get(s, NULL, g), "GET /v1/services");
	ASSERT_OK(json_writer_finish(g, &out, NULL), "finish");
	return out;
}

/* A PUT body for the service of slot @k (its own ClusterIPs, so that no
 * frontend belongs to two services). */
static void rand_service_body(struct sb *b, unsigned int k)
{
	static const char *const sel[] = { "random", "maglev" };
	size_t nf = between(1, 3), nb = between(0, 5), nr = between(0, 2);

	sb_add(b, "{\"frontends\":[");
	for (size_t i = 0; i < nf; i++)
		sb_add(b, "%s{\"type\":\"ClusterIP\",\"address\":\"10.96.%u.%zu\",\"port\":%u,\"protocol\":\"%s\"}",
		       i ? "," : "", k, i + 1, (unsigned int)between(1, 65535), coin() ? "TCP" : "UDP");
	sb_add(b, "],\"backends\":[");
	for (size_t i = 0; i < nb; i++) {
		struct flowsdn_addr a;
		char text[FLOWSDN_ADDR_STRLEN];

		rand_addr(&a, coin());
		cr_assert(flowsdn_addr_format(&a, text, sizeof(text)) > 0);
		sb_add(b, "%s{\"address\":\"%s\",\"port\":%u,\"weight\":%u}", i ? "," : "", text,
		       (unsigned int)between(1, 65535), (unsigned int)between(1, 100));
	}
	sb_add(b, "],\"selection\":\"%s\"", sel[next() % 2]);
	if (coin())
		sb_add(b, ",\"sessionAffinity\":{\"type\":\"ClientIP\",\"timeoutSeconds\":%u}",
		       (unsigned int)between(1, 86400));
	sb_add(b, ",\"loadBalancerSourceRanges\":[");
	for (size_t i = 0; i < nr; i++)
		sb_add(b, "%s\"%s\"", i ? "," : "", public4[i * 3 + next() % 3]);
	sb_add(b, "]}");
}

Test(roundtrip, agent_services_state, .init = setup, .fini = teardown)
{
	struct agent_config *cfg = NULL;
	struct agent_services *s;
	char conf[512], *before, *after;
	size_t restarts = 0, puts = 0, deletes = 0;

	seed_init("agent-services");
	cr_assert(mkdir(dir, 0700) == 0);
	snprintf(conf, sizeof(conf), "{\"state-dir\":\"%s\",\"datapath\":false,\"socket-lb-cgroup\":\"\"}", dir);
	ASSERT_OK(agent_config_parse(conf, strlen(conf), &cfg, NULL), conf);
	s = services_start(cfg);
	for (int i = 0; i < 150; i++) {
		unsigned int k = (unsigned int)between(1, 12);
		char id[40];
		struct diag *d = NULL;
		int r;

		snprintf(id, sizeof(id), "fs-%032x", k);
		ASSERT_OK(diag_new(&d), "diag");
		if (next() % 4 == 0) {
			r = agent_services_delete(s, id, d);
			cr_assert(r == 0 || r == -FLOWSDN_E_AGENT_NOT_FOUND, "ROUNDTRIP_SEED=%" PRIu64 " case %d: DELETE: %d",
				  seed, i, r);
			deletes += r == 0;
		} else {
			struct sb b = { 0 };
			struct json_writer *g = json_writer_new(0);

			rand_service_body(&b, k);
			r = agent_services_put(s, id, b.p, b.n, g, d);
			cr_assert(r == 0, "ROUNDTRIP_SEED=%" PRIu64 " case %d: PUT %s: %d\n%s", seed, i, id, r, b.p);
			puts++;
			json_writer_free(g);
			free(b.p);
		}
		diag_free(d);
		if (next() % 8 == 0) {
			before = services_all(s);
			agent_services_free(s);
			s = services_start(cfg);
			after = services_all(s);
			cr_assert(!strcmp(before, after),
				  "ROUNDTRIP_SEED=%" PRIu64 " case %d: the table read back differs\n%s\n%s", seed, i,
				  before, after);
			free(before);
			free(after);
			restarts++;
		}
	}
	agent_services_free(s);
	agent_config_free(cfg);
	cr_assert(restarts > 5 && puts > 50 && deletes > 5, "the generator restarted (%zu), put (%zu), deleted (%zu)",
		  restarts, puts, deletes);
}

#ifdef ROUNDTRIP_OPERATOR
/* ------------------------------------------- the operator runtime's records */

static void rand_service_id(char *buf, size_t size)
{
	snprintf(buf, size, "fs-%016" PRIx64 "%016" PRIx64, next(), next());
}

/* replica.json (runtime-record.c) and net/ID.json (runtime-net.c), read
 * back when flash-operator starts again. */
Test(roundtrip, operator_runtime_records)
{
	seed_init("operator-records");
	for (int i = 0; i < 500; i++) {
		struct op_replica_record r = { 0 }, rb;
		struct op_net_record n = { 0 }, nb;
		struct flowsdn_addr a;
		char *t1 = NULL, *t2 = NULL;
		size_t l1 = 0, l2 = 0;

		rand_service_id(r.service, sizeof(r.service));
		snprintf(r.id, sizeof(r.id), "%s-%u-%u-%04x", r.service, (unsigned int)between(1, 999),
			 (unsigned int)between(0, 31), (unsigned int)between(0, 0xffff));
		if (next() % 8 == 0)
			r.service[0] = '\0'; /* a record without a service (retired) */
		r.generation = next();
		r.index = (unsigned int)between(0, 31);
		r.restarts = (unsigned int)between(0, UINT32_MAX - 1);
		rand_addr(&a, coin());
		cr_assert(flowsdn_addr_format(&a, r.address, sizeof(r.address)) > 0);
		r.ever_ready = coin();
		r.udp_closed_seen = coin();
		if (coin()) {
			r.sandbox_pid = between(1, INT32_MAX);
			r.sandbox_start = between(1, UINT64_MAX);
		}
		ASSERT_OK(op_replica_record_format(&r, &t1, &l1), "format replica.json");
		memset(&rb, 0xa5, sizeof(rb));
		ASSERT_OK(op_replica_record_parse(t1, l1, 32, &rb), t1);
		ASSERT_OK(op_replica_record_format(&rb, &t2, &l2), "format again");
		cr_assert(l1 == l2 && !memcmp(t1, t2, l1),
			  "ROUNDTRIP_SEED=%" PRIu64 " case %d: print(parse(print(x))) differs\n%s\n%s", seed, i, t1, t2);
		cr_assert(!strcmp(rb.id, r.id) && !strcmp(rb.service, r.service) && rb.generation == r.generation &&
				  rb.index == r.index && rb.restarts == r.restarts && !strcmp(rb.address, r.address) &&
				  rb.ever_ready == r.ever_ready && rb.udp_closed_seen == r.udp_closed_seen &&
				  rb.sandbox_pid == r.sandbox_pid && rb.sandbox_start == r.sandbox_start,
			  "ROUNDTRIP_SEED=%" PRIu64 " case %d: parse(print(x)) != x\n%s", seed, i, t1);
		free(t1);
		free(t2);

		rand_service_id(n.id, sizeof(n.id));
		snprintf(n.ns, sizeof(n.ns), "org-%016" PRIx64, next());
		rand_addr(&a, coin());
		cr_assert(flowsdn_addr_format(&a, n.cluster_ip, sizeof(n.cluster_ip)) > 0);
		n.n_ports = between(0, OP_NET_RECORD_PORTS_MAX);
		for (size_t k = 0; k < n.n_ports; k++)
			rand_service_id(n.port_ids[k], sizeof(n.port_ids[k]));
		ASSERT_OK(op_net_record_format(&n, &t1, &l1), "format net record");
		memset(&nb, 0xa5, sizeof(nb));
		ASSERT_OK(op_net_record_parse(t1, l1, &nb), t1);
		ASSERT_OK(op_net_record_format(&nb, &t2, &l2), "format again");
		cr_assert(l1 == l2 && !memcmp(t1, t2, l1),
			  "ROUNDTRIP_SEED=%" PRIu64 " case %d: print(parse(print(x))) differs\n%s\n%s", seed, i, t1, t2);
		cr_assert(!strcmp(nb.id, n.id) && !strcmp(nb.ns, n.ns) && !strcmp(nb.cluster_ip, n.cluster_ip) &&
				  nb.n_ports == n.n_ports,
			  "ROUNDTRIP_SEED=%" PRIu64 " case %d: parse(print(x)) != x\n%s", seed, i, t1);
		for (size_t k = 0; k < n.n_ports; k++)
			cr_assert(!strcmp(nb.port_ids[k], n.port_ids[k]), "ROUNDTRIP_SEED=%" PRIu64 " case %d: port %zu",
				  seed, i, k);
		free(t1);
		free(t2);
	}
}
#endif
