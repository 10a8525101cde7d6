/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The compiled policy entries, looked up as the datapath does, against the
 * simulator, on random namespaces, pods, policies (written as JSON and
 * imported) and flows; and incremental compiles against full recomputes.
 * The seed comes from POLICY_SEED or the clock and is printed on every
 * failure: POLICY_SEED=<seed> reruns the same worlds.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <flowsdn/policy.h>

#include "diag-helpers.h"
#include "helpers.h"

DIAG_TEST_HELPERS(flowsdn)
#include "policy-helpers.h"
#include "strbuf-helpers.h"
#include <arpa/inet.h>
#include <flowsdn/maps.h>

#define ARRAY_SIZE_T(a) ((unsigned int)(sizeof(a) / sizeof((a)[0])))

static uint64_t rng_state, g_seed;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static unsigned int R(unsigned int n)
{
	return (unsigned int)(rnd() % n);
}

static uint64_t pick_seed(void)
{
	const char *s = getenv("POLICY_SEED");

	if (s && *s)
		return strtoull(s, NULL, 0);
	return (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
}

/* ------------------------------------------------------------ JSON text */

static const char *const apps[] = { "web", "db", "api", "cache" };
static const char *const tiers[] = { "fe", "be" };
static const char *const versions[] = { "v1", "v2" };
static const char *const teams[] = { "a", "b", "c" };
static const char *const envs[] = { "prod", "dev" };
static const char *const port_names[] = { "http", "dns", "metrics", "nope" };
static const unsigned int numeric_ports[] = { 53, 80, 443, 8080, 9100, 9101, 9102, 30000 };

#define N_NS 6

static void gen_selector(struct sb *b, bool ns)
{
	unsigned int kind = R(6);

	sb_add(b, "{");
	if (kind == 0) {
		sb_add(b, "}");
		return;
	}
	if (kind <= 2) {
		if (ns)
			sb_add(b, "\"matchLabels\":{\"team\":\"%s\"}", teams[R(3)]);
		else if (R(2))
			sb_add(b, "\"matchLabels\":{\"app\":\"%s\"}", apps[R(4)]);
		else
			sb_add(b, "\"matchLabels\":{\"app\":\"%s\",\"tier\":\"%s\"}", apps[R(4)], tiers[R(2)]);
	}
	if (kind >= 2) {
		unsigned int n = 1 + R(2);

		sb_add(b, "%s\"matchExpressions\":[", kind == 2 ? "," : "");
		for (unsigned int i = 0; i < n; i++) {
			const char *key = ns ? (R(2) ? "team" : "env") : (R(2) ? "tier" : "version");
			const char *const *vals = ns ? (key[0] == 't' ? teams : envs)
						     : (key[0] == 't' ? tiers : versions);
			unsigned int nv = key[0] == 't' && ns ? 3 : 2;

			switch (R(4)) {
			case 0:
				sb_add(b, "%s{\"key\":\"%s\",\"operator\":\"In\",\"values\":[\"%s\"]}", i ? "," : "",
				       key, vals[R(nv)]);
				break;
			case 1:
				sb_add(b, "%s{\"key\":\"%s\",\"operator\":\"NotIn\",\"values\":[\"%s\",\"%s\"]}",
				       i ? "," : "", key, vals[R(nv)], vals[R(nv)]);
				break;
			case 2:
				sb_add(b, "%s{\"key\":\"%s\",\"operator\":\"Exists\"}", i ? "," : "", key);
				break;
			default:
				sb_add(b, "%s{\"key\":\"%s\",\"operator\":\"DoesNotExist\"}", i ? "," : "", key);
				break;
			}
		}
		sb_add(b, "]");
	}
	sb_add(b, "}");
}

static void gen_cidr(struct sb *b)
{
	switch (R(7)) {
	case 0:
		sb_add(b, "{\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\"%s]}",
		       R(2) ? ",\"192.0.2.128/25\"" : "");
		break;
	case 1:
		{
			unsigned int o = R(N_NS + 1);

			if (R(2))
				sb_add(b, "{\"cidr\":\"10.%u.0.0/16\",\"except\":[\"10.%u.0.0/24\"]}", o, o);
			else
				sb_add(b, "{\"cidr\":\"10.%u.0.0/16\"}", o);
		}
		break;
	case 2:
		sb_add(b, "{\"cidr\":\"192.0.2.0/24\",\"except\":[\"192.0.2.%u/28\"]}", 16 * R(16));
		break;
	case 3:
		sb_add(b, "{\"cidr\":\"198.51.100.%u/%u\"}", 64 * R(4), 26 + R(7) / 2 * 2);
		break;
	case 4:
		sb_add(b, "{\"cidr\":\"fd00::/8\",\"except\":[\"fd00:%x::/32\"]}", R(N_NS + 1));
		break;
	case 5:
		sb_add(b, "{\"cidr\":\"::/0\"}");
		break;
	default:
		sb_add(b, "{\"cidr\":\"8.8.%u.0/24\"}", R(2) * 4 + 4);
		break;
	}
}

static void gen_peer(struct sb *b)
{
	switch (R(4)) {
	case 0:
		sb_add(b, "{\"ipBlock\":");
		gen_cidr(b);
		sb_add(b, "}");
		break;
	case 1:
		sb_add(b, "{\"podSelector\":");
		gen_selector(b, false);
		sb_add(b, "}");
		break;
	case 2:
		sb_add(b, "{\"namespaceSelector\":");
		gen_selector(b, true);
		sb_add(b, "}");
		break;
	default:
		sb_add(b, "{\"namespaceSelector\":");
		gen_selector(b, true);
		sb_add(b, ",\"podSelector\":");
		gen_selector(b, false);
		sb_add(b, "}");
		break;
	}
}

static void gen_port(struct sb *b)
{
	static const char *const protos[] = { "TCP", "UDP", "SCTP" };
	unsigned int k = R(10);

	sb_add(b, "{");
	if (R(4))
		sb_add(b, "\"protocol\":\"%s\"%s", protos[R(3)], k < 2 ? "" : ",");
	else if (k < 2)
		sb_add(b, "\"protocol\":\"TCP\"");
	if (k >= 2 && k < 6) {
		sb_add(b, "\"port\":%u", numeric_ports[R(8)]);
	} else if (k >= 6 && k < 8) {
		unsigned int lo = numeric_ports[R(8)];

		sb_add(b, "\"port\":%u,\"endPort\":%u", lo, lo + R(200));
	} else if (k >= 8) {
		sb_add(b, "\"port\":\"%s\"", port_names[R(4)]);
	}
	sb_add(b, "}");
}

static void gen_rules(struct sb *b, const char *key, const char *peers)
{
	unsigned int n = R(4);

	sb_add(b, ",\"%s\":[", key);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int pk = R(5), ok = R(5);
		bool comma = false;

		sb_add(b, "%s{", i ? "," : "");
		if (pk > 0) {
			unsigned int np = pk == 1 ? 0 : 1 + R(2);

			sb_add(b, "\"%s\":[", peers);
			for (unsigned int j = 0; j < np; j++) {
				if (j)
					sb_add(b, ",");
				gen_peer(b);
			}
			sb_add(b, "]");
			comma = true;
		}
		if (ok > 0) {
			unsigned int np = ok == 1 ? 0 : 1 + R(3);

			sb_add(b, "%s\"ports\":[", comma ? "," : "");
			for (unsigned int j = 0; j < np; j++) {
				if (j)
					sb_add(b, ",");
				gen_port(b);
			}
			sb_add(b, "]");
		}
		sb_add(b, "}");
	}
	sb_add(b, "]");
}

static struct flowsdn_policy *gen_policy(unsigned int idx, char *ns_out, size_t ns_size)
{
	FLOWSDN_OPTS(flowsdn_policy_parse_opts, o);
	_cleanup_flowsdn_diag_ struct flowsdn_diag *diag = flowsdn_test_diag();
	struct flowsdn_policy *p = NULL;
	struct sb b = { 0 };
	unsigned int types = R(5), tk = R(10);
	int r;

	o.tier = tk < 7 ? FLOWSDN_POLICY_TIER_ALLOW : (int)(tk - 5); /* 2..4 */
	snprintf(ns_out, ns_size, "ns%u", R(N_NS));
	sb_add(&b, "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
		   "\"metadata\":{\"name\":\"p%u\",\"namespace\":\"%s\"},\"spec\":{\"podSelector\":",
	       idx, ns_out);
	gen_selector(&b, false);
	if (R(3))
		gen_rules(&b, "ingress", "from");
	if (R(3))
		gen_rules(&b, "egress", "to");
	if (types == 1)
		sb_add(&b, ",\"policyTypes\":[\"Ingress\"]");
	else if (types == 2)
		sb_add(&b, ",\"policyTypes\":[\"Egress\"]");
	else if (types == 3)
		sb_add(&b, ",\"policyTypes\":[\"Ingress\",\"Egress\"]");
	sb_add(&b, "}}");
	r = flowsdn_policy_parse(b.p, b.n, &o, &p, diag);
	if (r < 0) {
		char msg[2048];

		flowsdn_policy_diag_format(diag, msg, sizeof(msg));
		cr_assert_fail("seed %" PRIu64 ": generated policy refused: %s\n%s", g_seed, msg, b.p);
	}
	free(b.p);
	return p;
}

/* ------------------------------------------------------------ pods */

#define N_PODS 60

struct gpod {
	char name[16];
	char ns[8];
	struct flowsdn_addr addrs[2];
	size_t n_addrs;
	bool live;
	uint32_t ep;
};

static struct flowsdn_addr mk4(unsigned a, unsigned b, unsigned c, unsigned d)
{
	struct flowsdn_addr x = { .family = FLOWSDN_AF_INET };

	x.bytes[0] = (uint8_t)a;
	x.bytes[1] = (uint8_t)b;
	x.bytes[2] = (uint8_t)c;
	x.bytes[3] = (uint8_t)d;
	return x;
}

static struct flowsdn_addr mk6(unsigned g1, unsigned last)
{
	struct flowsdn_addr x = { .family = FLOWSDN_AF_INET6 };

	x.bytes[0] = 0xfd;
	x.bytes[2] = (uint8_t)(g1 >> 8);
	x.bytes[3] = (uint8_t)g1;
	x.bytes[14] = (uint8_t)(last >> 8);
	x.bytes[15] = (uint8_t)last;
	return x;
}

static void set_pod(struct flowsdn_policy_db *db, struct gpod *gp, unsigned int i)
{
	struct flowsdn_policy_label labels[3];
	struct flowsdn_policy_named_port ports[3];
	size_t nl = 0, np = 0;
	unsigned int app = R(4), h;
	int r;

	snprintf(gp->name, sizeof(gp->name), "pod%u", i);
	if (!gp->live)
		snprintf(gp->ns, sizeof(gp->ns), "ns%u", R(N_NS));
	labels[nl++] = (struct flowsdn_policy_label){ "app", apps[app] };
	if (R(3))
		labels[nl++] = (struct flowsdn_policy_label){ "tier", tiers[R(2)] };
	if (R(2))
		labels[nl++] = (struct flowsdn_policy_label){ "version", versions[R(2)] };
	/* named ports are mostly a function of the identity (namespace and
	 * labels), as they are for the pods of one template */
	h = (unsigned int)(gp->ns[2] - '0') * 7 + app * 3 + (unsigned int)nl;
	/* ...except that every third pod numbers "http" the other way: pods
	 * of one identity that disagree on a named port (egress resolves
	 * the union of their numbers on both paths). */
	ports[np++] = (struct flowsdn_policy_named_port){ "http", 6, (h + (i % 3 == 0)) % 2 ? 80 : 8080 };
	if (h % 3 == 0)
		ports[np++] = (struct flowsdn_policy_named_port){ "dns", 17, 53 };
	if (h % 4 != 1)
		ports[np++] = (struct flowsdn_policy_named_port){ "metrics", (uint8_t)(h % 5 ? 6 : 132),
								   (uint16_t)(9100 + h % 3) };
	gp->n_addrs = 0;
	gp->addrs[gp->n_addrs++] = mk4(10, (unsigned)(gp->ns[2] - '0'), i / 250, 1 + i % 250);
	if (R(3) == 0)
		gp->addrs[gp->n_addrs++] = mk6((unsigned)(gp->ns[2] - '0'), i + 1);
	{
		FLOWSDN_OPTS(flowsdn_policy_pod, d, .namespace_name = gp->ns, .name = gp->name,
			     .labels = labels, .n_labels = nl, .ports = ports, .n_ports = np,
			     .addrs = gp->addrs, .n_addrs = gp->n_addrs);

		r = flowsdn_policy_db_set_pod(db, &d, &gp->ep);
	}
	cr_assert(r == 0, "seed: set_pod %s: %s", gp->name, flowsdn_strerror(r));
	gp->live = true;
}

static void set_namespaces(struct flowsdn_policy_db *db)
{
	for (unsigned int i = 0; i < N_NS; i++) {
		struct flowsdn_policy_label l[2];
		size_t n = 0;
		char name[8];

		snprintf(name, sizeof(name), "ns%u", i);
		if (R(4))
			l[n++] = (struct flowsdn_policy_label){ "team", teams[R(3)] };
		if (R(2))
			l[n++] = (struct flowsdn_policy_label){ "env", envs[R(2)] };
		cr_assert(flowsdn_policy_db_set_namespace(db, name, l, n) == 0);
	}
}

/* An address: a pod's, or one of the interesting external ones. */
static struct flowsdn_addr gen_addr(const struct gpod *pods, size_t n)
{
	unsigned int k = R(10);

	if (k < 5) {
		const struct gpod *gp = &pods[R((unsigned int)n)];

		if (gp->live)
			return gp->addrs[R((unsigned int)gp->n_addrs)];
	}
	switch (R(8)) {
	case 0:
		return mk4(10, R(N_NS + 1), R(2), R(256)); /* pod range, maybe no pod */
	case 1:
		return mk4(192, 0, 2, R(256));
	case 2:
		return mk4(198, 51, 100, R(256));
	case 3:
		return mk4(8, 8, 4 * R(3), R(256));
	case 4:
		return mk6(R(N_NS + 1), R(70));
	case 5:
		return mk4(203, 0, 113, R(256));
	case 6: {
		struct flowsdn_addr a = mk6(0, R(256));

		a.bytes[0] = 0x20;
		a.bytes[1] = 0x01;
		return a;
	}
	default:
		return mk4(R(256), R(256), R(256), R(256));
	}
}

static uint16_t gen_port_num(void)
{
	static const uint16_t interesting[] = { 0, 1, 53, 79, 80, 81, 443, 8080, 9100, 9101, 9102,
						 9103, 30000, 30100, 30199, 30200, 65535 };

	if (R(4) == 0)
		return (uint16_t)R(65536);
	return interesting[R(ARRAY_SIZE_T(interesting))];
}

static size_t flows_checked, flows_run, flows_allowed;

/* The endpoints' entries in the map contract's layout, and the ipcache:
 * an LPM emulation on the raw key bits, independent of the library's
 * own lookup. */
struct mapped {
	struct flowsdn_policy_key *keys;
	uint32_t *flags;
	uint32_t *rules; /* the value's rule_id, which the datapath counts */
	size_t n;
	unsigned int ep_flags;
};
static struct mapped mapped[N_PODS + 1];
static const struct flowsdn_policy_ipcache_entry *ipc;
static size_t n_ipc;

static void map_all(struct flowsdn_policy_db *db, const struct gpod *pods, size_t n)
{
	for (size_t i = 0; i <= N_PODS; i++) {
		free(mapped[i].keys);
		free(mapped[i].flags);
		free(mapped[i].rules);
		memset(&mapped[i], 0, sizeof(mapped[i]));
	}
	for (size_t i = 0; i < n; i++) {
		const struct flowsdn_policy_entry *e;
		struct mapped *m;
		size_t ne;

		if (!pods[i].live)
			continue;
		cr_assert(pods[i].ep <= N_PODS);
		m = &mapped[pods[i].ep];
		cr_assert(flowsdn_policy_db_entries(db, pods[i].ep, &e, &ne, &m->ep_flags) == 0);
		m->keys = calloc(ne + 1, sizeof(*m->keys));
		m->flags = calloc(ne + 1, sizeof(*m->flags));
		m->rules = calloc(ne + 1, sizeof(*m->rules));
		cr_assert(m->keys && m->flags && m->rules);
		for (size_t k = 0; k < ne; k++) {
			ASSERT_OK(flowsdn_policy_entry_to_key(&e[k], pods[i].ep, &m->keys[k], &m->flags[k]), "to_key");
			m->rules[k] = e[k].rule_id;
		}
		m->n = ne;
	}
	ASSERT_OK(flowsdn_policy_db_ipcache(db, &ipc, &n_ipc), "ipcache");
}

static bool bits_equal(const uint8_t *a, const uint8_t *b, unsigned int bits)
{
	for (unsigned int i = 0; i < bits; i++)
		if (((a[i / 8] >> (7 - i % 8)) & 1) != ((b[i / 8] >> (7 - i % 8)) & 1))
			return false;
	return true;
}

/* BPF_MAP_TYPE_LPM_TRIE lookup: the longest key whose first prefixlen
 * data bits equal those of @k; -1 when none. */
static long lpm(const struct mapped *m, const struct flowsdn_policy_key *k)
{
	long best = -1;

	for (size_t i = 0; i < m->n; i++) {
		if (best >= 0 && m->keys[i].prefixlen <= m->keys[best].prefixlen)
			continue;
		if (bits_equal((const uint8_t *)&m->keys[i] + 4, (const uint8_t *)k + 4, m->keys[i].prefixlen))
			best = (long)i;
	}
	return best;
}

/* The verdict as the datapath reaches it, and in *@ret_rule the rule_id
 * of the entry it counts (0 for none). */
static int map_verdict(uint32_t ep, int dir, const struct flowsdn_addr *peer, uint8_t proto, uint16_t port,
		       uint32_t *ret_rule)
{
	const struct mapped *m = &mapped[ep];
	uint32_t ident = FLOWSDN_IDENTITY_WORLD;
	int best_len = -1;
	struct flowsdn_policy_key k;
	long a, b;

	for (size_t i = 0; i < n_ipc; i++)
		if (flowsdn_prefix_contains_addr(&ipc[i].prefix, peer) && ipc[i].prefix.len > best_len) {
			best_len = ipc[i].prefix.len;
			ident = ipc[i].identity;
		}
	if (proto != 6 && proto != 17 && proto != 132)
		port = 0;
	memset(&k, 0, sizeof(k));
	k.prefixlen = FLOWSDN_POLICY_PREFIX_FULL;
	k.ep_id = ep;
	k.direction = (uint8_t)dir;
	k.identity = ident;
	k.protocol = proto;
	k.dport = htons(port);
	a = lpm(m, &k);
	k.identity = FLOWSDN_IDENTITY_ANY;
	b = lpm(m, &k);
	/* bpf/lib/policy.h's order */
	*ret_rule = 0;
	if (a >= 0 && (m->flags[a] & FLOWSDN_POLICY_F_DENY)) {
		*ret_rule = m->rules[a];
		return FLOWSDN_POLICY_VERDICT_DENY;
	}
	if (b >= 0 && (m->flags[b] & FLOWSDN_POLICY_F_DENY)) {
		*ret_rule = m->rules[b];
		return FLOWSDN_POLICY_VERDICT_DENY;
	}
	if (a >= 0 || b >= 0) {
		*ret_rule = m->rules[a >= 0 ? a : b];
		return FLOWSDN_POLICY_VERDICT_ALLOW;
	}
	return m->ep_flags & (dir == FLOWSDN_POLICY_INGRESS ? FLOWSDN_POLICY_ENFORCE_INGRESS
							     : FLOWSDN_POLICY_ENFORCE_EGRESS)
		       ? FLOWSDN_POLICY_VERDICT_DENY
		       : FLOWSDN_POLICY_VERDICT_ALLOW;
}

static void check_flow(struct flowsdn_policy_db *db, uint64_t seed, uint32_t ep, int dir,
		       const struct flowsdn_addr *peer, uint8_t proto, uint16_t port)
{
	int vc = 0, vs = 0, r;
	char a[FLOWSDN_ADDR_STRLEN];
	uint32_t peer_ep = 0;
	/* The datapath never judges a pod's traffic to itself (lxc.bpf.c
	 * compares the endpoints before any map lookup). */
	bool self = flowsdn_policy_db_endpoint_by_addr(db, peer, &peer_ep) == 0 && peer_ep == ep;

	flowsdn_addr_format(peer, a, sizeof(a));
	r = flowsdn_policy_db_lookup(db, ep, dir, peer, proto, port, &vc);
	cr_assert(r == 0, "seed %" PRIu64 ": lookup: %s", seed, flowsdn_strerror(r));
	r = flowsdn_policy_db_simulate(db, ep, dir, peer, proto, port, &vs);
	cr_assert(r == 0, "seed %" PRIu64 ": simulate: %s", seed, flowsdn_strerror(r));
	{
		FLOWSDN_OPTS(flowsdn_policy_decision, dc);
		FLOWSDN_OPTS(flowsdn_policy_decision, ds);
		uint32_t rm = 0;
		int vm = self ? FLOWSDN_POLICY_VERDICT_ALLOW : map_verdict(ep, dir, peer, proto, port, &rm);
		char nc[256] = "-", ns[256] = "-";

		cr_assert(vm == vc, "seed %" PRIu64 ": endpoint %u %s peer %s proto %u port %u: map-layout LPM %d, "
			  "library lookup %d", seed, ep, dir ? "egress" : "ingress", a, proto, port, vm, vc);
		ASSERT_OK(flowsdn_policy_db_lookup_decision(db, ep, dir, peer, proto, port, &dc), "lookup_decision");
		ASSERT_OK(flowsdn_policy_db_simulate_decision(db, ep, dir, peer, proto, port, &ds), "simulate_decision");
		cr_assert(dc.verdict == vc && ds.verdict == vs, "the decisions carry the verdicts");
		cr_assert(self || dc.rule_id == rm,
			  "seed %" PRIu64 ": endpoint %u %s peer %s proto %u port %u: the datapath counts rule %u, "
			  "lookup reports rule %u", seed, ep, dir ? "egress" : "ingress", a, proto, port, rm, dc.rule_id);
		(void)flowsdn_policy_db_rule_name(db, dc.rule_id, nc, sizeof(nc));
		(void)flowsdn_policy_db_rule_name(db, ds.rule_id, ns, sizeof(ns));
		cr_assert(dc.reason == ds.reason && dc.rule_id == ds.rule_id && dc.tier == ds.tier,
			  "seed %" PRIu64 ": endpoint %u %s peer %s proto %u port %u: compiled %s %u (%s, tier %u), "
			  "simulator %s %u (%s, tier %u) (rerun with POLICY_SEED=%" PRIu64 ")",
			  seed, ep, dir ? "egress" : "ingress", a, proto, port, flowsdn_policy_reason_name(dc.reason),
			  dc.rule_id, nc, dc.tier, flowsdn_policy_reason_name(ds.reason), ds.rule_id, ns, ds.tier, seed);
	}
	cr_assert(vc == vs,
		  "seed %" PRIu64 ": endpoint %u %s peer %s proto %u port %u: compiled %s, simulator %s "
		  "(rerun with POLICY_SEED=%" PRIu64 ")",
		  seed, ep, dir ? "egress" : "ingress", a, proto, port, vc == 1 ? "allow" : "deny",
		  vs == 1 ? "allow" : "deny", seed);
	flows_checked++;
	flows_allowed += vc == FLOWSDN_POLICY_VERDICT_ALLOW;
}

static void run_flows(struct flowsdn_policy_db *db, uint64_t seed, const struct gpod *pods, size_t n,
		      size_t count)
{
	static const uint8_t protos[] = { 6, 6, 17, 17, 132, 1 };

	for (size_t f = 0; f < count; f++) {
		struct flowsdn_addr src = gen_addr(pods, n), dst = gen_addr(pods, n);
		uint8_t proto = protos[R(6)];
		uint16_t port = gen_port_num();
		uint32_t ep;

		flows_run++;
		if (flowsdn_policy_db_endpoint_by_addr(db, &src, &ep) == 0)
			check_flow(db, seed, ep, FLOWSDN_POLICY_EGRESS, &dst, proto, port);
		if (flowsdn_policy_db_endpoint_by_addr(db, &dst, &ep) == 0)
			check_flow(db, seed, ep, FLOWSDN_POLICY_INGRESS, &src, proto, port);
	}
}

struct snap {
	struct flowsdn_policy_entry *e;
	size_t n;
	unsigned int flags;
	bool present;
};

static void snapshot(struct flowsdn_policy_db *db, const struct gpod *pods, size_t n, struct snap *s)
{
	for (size_t i = 0; i < n; i++) {
		const struct flowsdn_policy_entry *e;

		free(s[i].e);
		memset(&s[i], 0, sizeof(s[i]));
		if (!pods[i].live)
			continue;
		cr_assert(flowsdn_policy_db_entries(db, pods[i].ep, &e, &s[i].n, &s[i].flags) == 0);
		s[i].e = malloc((s[i].n + 1) * sizeof(*e));
		cr_assert(s[i].e);
		if (s[i].n)
			memcpy(s[i].e, e, s[i].n * sizeof(*e));
		s[i].present = true;
	}
}

static bool same(const struct snap *a, const struct snap *b)
{
	return a->present == b->present && a->n == b->n && a->flags == b->flags &&
	       (a->n == 0 || memcmp(a->e, b->e, a->n * sizeof(*a->e)) == 0);
}

Test(policy_agree, random_worlds_100k_flows, .timeout = 600)
{
	uint64_t seed = pick_seed();
	size_t worlds = 0;

	flows_checked = 0;
	flows_run = 0;
	flows_allowed = 0;
	g_seed = seed;
	rng_state = seed ? seed : 1;
	fprintf(stderr, "policy agreement: seed %" PRIu64 "\n", seed);
	while (flows_run < 100000) {
		struct policy_test_db t;
		struct flowsdn_policy_db *db = policy_test_db_new(&t, 0);
		struct gpod pods[N_PODS] = { 0 };
		struct snap before[N_PODS] = { 0 }, inc[N_PODS] = { 0 }, full[N_PODS] = { 0 };
		unsigned int n_pol = 5 + R(25);
		struct flowsdn_policy_compile_report rep;

		set_namespaces(db);
		for (unsigned int i = 0; i < N_PODS; i++)
			set_pod(db, &pods[i], i);
		for (unsigned int i = 0; i < n_pol; i++) {
			char ns[8];
			struct flowsdn_policy *p = gen_policy(i, ns, sizeof(ns));

			ASSERT_OK(flowsdn_policy_db_apply(db, p), "apply");
		}
		memset(&rep, 0, sizeof(rep));
		rep.sz = sizeof(rep);
		ASSERT_OK(flowsdn_policy_db_compile(db, &rep), "compile");
		map_all(db, pods, N_PODS);
		run_flows(db, seed, pods, N_PODS, 4000);

		/* incremental changes, each checked against a full recompute */
		for (unsigned int step = 0; step < 6; step++) {
			unsigned int what = R(6);
			char ns[8], name[16];

			snapshot(db, pods, N_PODS, before);
			if (what <= 1) {
				struct flowsdn_policy *p = gen_policy(R(n_pol + 3), ns, sizeof(ns));

				ASSERT_OK(flowsdn_policy_db_apply(db, p), "apply (change)");
			} else if (what == 2) {
				snprintf(name, sizeof(name), "p%u", R(n_pol));
				for (unsigned int k = 0; k < N_NS; k++) {
					snprintf(ns, sizeof(ns), "ns%u", k);
					(void)flowsdn_policy_db_delete(db, ns, name);
				}
			} else if (what == 3) {
				unsigned int i = R(N_PODS);

				set_pod(db, &pods[i], i); /* new labels (same namespace), or back */
			} else if (what == 4) {
				unsigned int i = R(N_PODS);

				if (pods[i].live) {
					ASSERT_OK(flowsdn_policy_db_delete_pod(db, pods[i].ns, pods[i].name), "delete pod");
					pods[i].live = false;
				}
			} else {
				set_namespaces(db);
			}
			memset(&rep, 0, sizeof(rep));
			rep.sz = sizeof(rep);
			ASSERT_OK(flowsdn_policy_db_compile(db, &rep), "incremental compile");
			snapshot(db, pods, N_PODS, inc);
			/* every endpoint whose entries changed was reported */
			for (size_t i = 0; i < N_PODS; i++) {
				bool reported = false;

				if (same(&before[i], &inc[i]) || !inc[i].present)
					continue;
				for (size_t k = 0; k < rep.n_ep_ids; k++)
					if (rep.ep_ids[k] == pods[i].ep)
						reported = true;
				cr_assert(reported, "seed %" PRIu64 ": endpoint %u changed but was not reported",
					  seed, pods[i].ep);
			}
			flowsdn_policy_db_invalidate_all(db);
			ASSERT_OK(flowsdn_policy_db_compile(db, NULL), "full compile");
			snapshot(db, pods, N_PODS, full);
			for (size_t i = 0; i < N_PODS; i++)
				cr_assert(same(&inc[i], &full[i]),
					  "seed %" PRIu64 ": world %zu step %u: endpoint %u: incremental "
					  "(%zu entries) != full recompute (%zu entries)",
					  seed, worlds, step, pods[i].ep, inc[i].n, full[i].n);
			map_all(db, pods, N_PODS);
			run_flows(db, seed, pods, N_PODS, 1500);
		}
		for (size_t i = 0; i < N_PODS; i++) {
			free(before[i].e);
			free(inc[i].e);
			free(full[i].e);
		}
		policy_test_db_free(&t);
		ipc = NULL;
		n_ipc = 0;
		worlds++;
	}
	fprintf(stderr, "policy agreement: seed %" PRIu64 ": %zu worlds, %zu flows, %zu endpoint-direction verdicts agree (%zu allow, %zu deny)\n",
		seed, worlds, flows_run, flows_checked, flows_allowed, flows_checked - flows_allowed);
	cr_assert(flows_run >= 100000 && flows_checked >= flows_run / 2);
	for (size_t i = 0; i <= N_PODS; i++) {
		free(mapped[i].keys);
		free(mapped[i].flags);
	}
}
