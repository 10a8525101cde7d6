/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NetworkPolicy import (the API server's validation, field paths and
 * messages; the recorded exchanges 13, 14, 65 and 67 from
 * /work/shared/k8s, copied to tests/data/policy), the Kubernetes semantics
 * on small worlds (every verdict asked of both the compiled entries and
 * the simulator), tiers, capacity and incremental recompiles.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <flowsdn/policy.h>

#include "diag-helpers.h"
#include "helpers.h"

DIAG_TEST_HELPERS(flowsdn)

/* Cause @i of a refused policy (an empty one past the end, so that
 * failure messages can print it). */
static const struct flowsdn_diag_entry *cause(const struct flowsdn_diag *d, size_t i)
{
	static const struct flowsdn_diag_entry none = { .path = "", .code = "", .message = "" };
	const struct flowsdn_diag_entry *e = flowsdn_diag_get(d, i);

	return e ? e : &none;
}
#include "policy-helpers.h"

#define NP(spec) "{\"metadata\":{\"name\":\"np\",\"namespace\":\"ns\"},\"spec\":" spec "}"

static char *read_data(const char *name, size_t *ret_len)
{
	const char *top = getenv("top_srcdir");
	char path[1024];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/data/policy/%s", top ? top : "..", name);
	f = fopen(path, "re");
	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	if (ret_len)
		*ret_len = (size_t)n;
	return buf;
}

static struct flowsdn_policy *parse_tier(const char *json, int tier)
{
	FLOWSDN_OPTS(flowsdn_policy_parse_opts, o, .tier = tier);
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	struct flowsdn_policy *p = NULL;
	int r = flowsdn_policy_parse(json, strlen(json), &o, &p, d);

	if (r < 0) {
		char msg[4096];

		flowsdn_policy_diag_format(d, msg, sizeof(msg));
		cr_assert_fail("parse failed: %s: %s\n%s", flowsdn_strerror(r), msg, json);
	}
	return p;
}

static struct flowsdn_policy *parse_ok(const char *json)
{
	return parse_tier(json, 0);
}

/* @json is refused with cause @idx at @field saying @msg. */
static void expect_cause(const char *json, size_t idx, size_t n, int type, const char *field, const char *msg)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	struct flowsdn_policy *p = NULL;
	int r = flowsdn_policy_parse(json, strlen(json), NULL, &p, d);

	cr_assert(r == -FLOWSDN_E_POLICY_INVALID, "%s: expected invalid, got %d", json, r);
	cr_assert(p == NULL);
	cr_assert(flowsdn_diag_count(d) == n, "%s: %zu causes, expected %zu (first: %s: %s)", json, flowsdn_diag_count(d), n,
		  cause(d, 0)->path, cause(d, 0)->message);
	cr_assert(strcmp(cause(d, idx)->code, flowsdn_policy_cause_reason(type)) == 0, "%s: cause %s, expected %s", json,
		  cause(d, idx)->code, flowsdn_policy_cause_reason(type));
	ASSERT_STREQ(cause(d, idx)->path, field, json);
	if (msg)
		ASSERT_STREQ(cause(d, idx)->message, msg, json);
}

#define INVALID FLOWSDN_POLICY_CAUSE_INVALID

/* ------------------------------------------------------------ recorded exchanges */

Test(policy_import, exchange_14_invalid_cidr_is_refused_like_the_api_server)
{
	char *body = read_data("14-invalid-cidr.request.json", NULL);
	char *expected = read_data("14-invalid-cidr.expected", NULL);
	char *lines[4], *save = NULL, msg[2048];
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	struct flowsdn_policy *p = NULL;

	lines[0] = strtok_r(expected, "\n", &save);
	for (int i = 1; i < 4; i++)
		lines[i] = strtok_r(NULL, "\n", &save);
	ASSERT_ERR(flowsdn_policy_parse(body, strlen(body), NULL, &p, d), -FLOWSDN_E_POLICY_INVALID, "parse");
	cr_assert(flowsdn_diag_count(d) == 1, "%zu causes", flowsdn_diag_count(d));
	ASSERT_STREQ(cause(d, 0)->path, lines[1], "cause field");
	ASSERT_STREQ(cause(d, 0)->code, lines[2], "cause reason");
	ASSERT_STREQ(cause(d, 0)->message, lines[3], "cause message");
	cr_assert(flowsdn_policy_diag_format(d, msg, sizeof(msg)) == (int)strlen(lines[0]));
	ASSERT_STREQ(msg, lines[0], "Status message");
	ASSERT_STREQ(flowsdn_diag_subject(d), "fs-bad", "name");
	free(body);
	free(expected);
}

Test(policy_import, exchange_13_65_67_are_accepted_with_defaults)
{
	static const char *const files[] = { "13-apply.request.json", "65-list-item0.json",
					     "65-list-item1.json", "67-create.request.json" };
	static const unsigned int types[] = { 3, 3, 1, 2 };
	static const char *const names[] = { "fs-web", "default-deny", "web-ingress", "allow-dns-egress" };

	for (size_t i = 0; i < 4; i++) {
		char *body = read_data(files[i], NULL);
		struct flowsdn_policy *p = parse_ok(body);

		ASSERT_STREQ(flowsdn_policy_name(p), names[i], files[i]);
		cr_assert(flowsdn_policy_types(p) == types[i], "%s: types %u", files[i], flowsdn_policy_types(p));
		cr_assert(flowsdn_policy_tier(p) == FLOWSDN_POLICY_TIER_ALLOW);
		flowsdn_policy_free(p);
		free(body);
	}
}

/* ------------------------------------------------------------ validation */

Test(policy_import, ports)
{
	expect_cause(NP("{\"ingress\":[{\"ports\":[{\"port\":0}]}]}"), 0, 1, INVALID,
		     "spec.ingress[0].ports[0].port", "Invalid value: 0: must be between 1 and 65535, inclusive");
	expect_cause(NP("{\"ingress\":[{\"ports\":[{\"port\":65536}]}]}"), 0, 1, INVALID,
		     "spec.ingress[0].ports[0].port", "Invalid value: 65536: must be between 1 and 65535, inclusive");
	expect_cause(NP("{\"egress\":[{\"ports\":[{\"port\":100,\"endPort\":80}]}]}"), 0, 1, INVALID,
		     "spec.egress[0].ports[0].endPort", "Invalid value: 80: must be greater than or equal to `port`");
	expect_cause(NP("{\"egress\":[{\"ports\":[{\"port\":\"http\",\"endPort\":90}]}]}"), 0, 1, INVALID,
		     "spec.egress[0].ports[0].endPort",
		     "Invalid value: 90: may not be specified when `port` is non-numeric");
	expect_cause(NP("{\"egress\":[{\"ports\":[{\"endPort\":90}]}]}"), 0, 1, INVALID,
		     "spec.egress[0].ports[0].endPort",
		     "Invalid value: 90: may not be specified when `port` is not specified");
	expect_cause(NP("{\"ingress\":[{\"ports\":[{\"protocol\":\"ICMP\"}]}]}"), 0, 1,
		     FLOWSDN_POLICY_CAUSE_NOT_SUPPORTED, "spec.ingress[0].ports[0].protocol",
		     "Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"");
	expect_cause(NP("{\"ingress\":[{\"ports\":[{\"port\":\"HTTP\"}]}]}"), 1, 2, INVALID,
		     "spec.ingress[0].ports[0].port",
		     "Invalid value: \"HTTP\": must contain at least one letter (a-z)");
	expect_cause(NP("{\"ingress\":[{\"ports\":[{\"port\":\"80\"}]}]}"), 0, 1, INVALID,
		     "spec.ingress[0].ports[0].port",
		     "Invalid value: \"80\": must contain at least one letter (a-z)");
	expect_cause(NP("{\"ingress\":[{\"ports\":[{\"port\":\"a--b-\"}]}]}"), 0, 2, INVALID,
		     "spec.ingress[0].ports[0].port",
		     "Invalid value: \"a--b-\": must not contain consecutive hyphens");
	expect_cause(NP("{\"ingress\":[{\"ports\":[{\"port\":\"abcdefghijklmnop\"}]}]}"), 0, 1, INVALID,
		     "spec.ingress[0].ports[0].port",
		     "Invalid value: \"abcdefghijklmnop\": must be no more than 15 characters");
}

Test(policy_import, peers_and_ipblocks)
{
	expect_cause(NP("{\"ingress\":[{\"from\":[{}]}]}"), 0, 1, FLOWSDN_POLICY_CAUSE_REQUIRED,
		     "spec.ingress[0].from[0]", "Required value: must specify a peer");
	expect_cause(NP("{\"egress\":[{\"to\":[{\"podSelector\":{},\"ipBlock\":{\"cidr\":\"10.0.0.0/8\"}}]}]}"), 0, 1,
		     FLOWSDN_POLICY_CAUSE_FORBIDDEN, "spec.egress[0].to[0]",
		     "Forbidden: may not specify both ipBlock and another peer");
	expect_cause(NP("{\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/16\",\"except\":[\"10.0.0.0/8\"]}}]}]}"),
		     0, 1, INVALID, "spec.ingress[0].from[0].ipBlock.except[0]",
		     "Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`");
	expect_cause(NP("{\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/16\",\"except\":[\"10.1.0.0/24\",\"10.0.0.0/16\"]}}]}]}"),
		     1, 2, INVALID, "spec.ingress[0].from[0].ipBlock.except[1]",
		     "Invalid value: \"10.0.0.0/16\": must be a strict subset of `cidr`");
	expect_cause(NP("{\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.1/8\"}}]}]}"), 0, 1, INVALID,
		     "spec.ingress[0].from[0].ipBlock.cidr",
		     "Invalid value: \"10.0.0.1/8\": must not have bits set beyond the prefix length");
	expect_cause(NP("{\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"010.0.0.0/8\"}}]}]}"), 0, 1, INVALID,
		     "spec.ingress[0].from[0].ipBlock.cidr",
		     "Invalid value: \"010.0.0.0/8\": must not have leading 0s in IP or prefix length");
	expect_cause(NP("{\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/08\"}}]}]}"), 0, 1, INVALID,
		     "spec.ingress[0].from[0].ipBlock.cidr",
		     "Invalid value: \"10.0.0.0/08\": must not have leading 0s in IP or prefix length");
	expect_cause(NP("{\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"::ffff:10.0.0.0/104\"}}]}]}"), 0, 1, INVALID,
		     "spec.ingress[0].from[0].ipBlock.cidr",
		     "Invalid value: \"::ffff:10.0.0.0/104\": must not have an IPv4-mapped IPv6 address");
	expect_cause(NP("{\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"\"}}]}]}"), 0, 1,
		     FLOWSDN_POLICY_CAUSE_REQUIRED, "spec.ingress[0].from[0].ipBlock.cidr", "Required value");
	expect_cause(NP("{\"ingress\":[{\"from\":[{\"ipBlock\":{}}]}]}"), 0, 1,
		     FLOWSDN_POLICY_CAUSE_REQUIRED, "spec.ingress[0].from[0].ipBlock.cidr", "Required value");
	expect_cause(NP("{\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"fd00::/8\",\"except\":[\"10.0.0.0/8\"]}}]}]}"),
		     0, 1, INVALID, "spec.egress[0].to[0].ipBlock.except[0]",
		     "Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`");
}

Test(policy_import, selectors)
{
	expect_cause(NP("{\"podSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}}"), 0, 1,
		     FLOWSDN_POLICY_CAUSE_REQUIRED, "spec.podSelector.matchExpressions[0].values",
		     "Required value: must be specified when `operator` is 'In' or 'NotIn'");
	expect_cause(NP("{\"podSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}}"),
		     0, 1, FLOWSDN_POLICY_CAUSE_FORBIDDEN, "spec.podSelector.matchExpressions[0].values",
		     "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
	expect_cause(NP("{\"podSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Foo\"}]}}"), 0, 1,
		     INVALID, "spec.podSelector.matchExpressions[0].operator",
		     "Invalid value: \"Foo\": not a valid selector operator");
	expect_cause(NP("{\"podSelector\":{\"matchLabels\":{\"a/b/c\":\"x\"}}}"), 0, 1, INVALID,
		     "spec.podSelector.matchLabels",
		     "Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' "
		     "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
		     "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with "
		     "an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
	expect_cause(NP("{\"podSelector\":{\"matchLabels\":{\"app\":\"-x\"}}}"), 0, 1, INVALID,
		     "spec.podSelector.matchLabels",
		     "Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric "
		     "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
		     "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
		     "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
	expect_cause(NP("{\"ingress\":[{\"from\":[{\"namespaceSelector\":{\"matchLabels\":{\"/x\":\"y\"}}}]}]}"), 0, 1,
		     INVALID, "spec.ingress[0].from[0].namespaceSelector.matchLabels",
		     "Invalid value: \"/x\": prefix part must be non-empty");
	expect_cause(NP("{\"podSelector\":{\"matchExpressions\":[{\"key\":\"\",\"operator\":\"In\",\"values\":[\"a b\"]}]}}"),
		     0, 2, INVALID, "spec.podSelector.matchExpressions[0].key",
		     "Invalid value: \"\": name part must be non-empty");
}

Test(policy_import, policy_types_metadata_and_decoding)
{
	expect_cause(NP("{\"policyTypes\":[\"Foo\"]}"), 0, 1, FLOWSDN_POLICY_CAUSE_NOT_SUPPORTED,
		     "spec.policyTypes[0]", "Unsupported value: \"Foo\": supported values: \"Ingress\", \"Egress\"");
	expect_cause(NP("{\"policyTypes\":[\"Ingress\",\"Egress\",\"Ingress\"]}"), 0, 1, INVALID, "spec.policyTypes",
		     "Invalid value: [\"Ingress\",\"Egress\",\"Ingress\"]: may not specify more than two policyTypes");
	expect_cause("{\"metadata\":{\"namespace\":\"ns\"},\"spec\":{}}", 0, 1, FLOWSDN_POLICY_CAUSE_REQUIRED,
		     "metadata.name", "Required value: name or generateName is required");
	expect_cause("{\"metadata\":{\"name\":\"Bad_Name\",\"namespace\":\"ns\"}}", 0, 1, INVALID, "metadata.name",
		     NULL);
	expect_cause("{\"metadata\":{\"name\":\"x\"}}", 0, 1, FLOWSDN_POLICY_CAUSE_REQUIRED, "metadata.namespace",
		     "Required value");
	expect_cause(NP("{\"foo\":1}"), 0, 1, FLOWSDN_POLICY_CAUSE_UNKNOWN_FIELD, "spec.foo",
		     "unknown field \"spec.foo\"");
	expect_cause("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\",\"namespace\":\"n\"}}", 0, 1,
		     FLOWSDN_POLICY_CAUSE_NOT_SUPPORTED, "kind", NULL);
	/* a decoding error is reported alone, like the API server's 400 */
	expect_cause(NP("{\"ingress\":[{\"ports\":[{\"port\":true}],\"from\":[{}]}]}"), 0, 1,
		     FLOWSDN_POLICY_CAUSE_TYPE, "spec.ingress[0].ports[0].port", NULL);
	expect_cause(NP("{\"ingress\":[{\"ports\":[{\"port\":80.5}]}]}"), 0, 1, FLOWSDN_POLICY_CAUSE_TYPE,
		     "spec.ingress[0].ports[0].port", NULL);
	expect_cause(NP("{\"podSelector\":{\"matchLabels\":{\"a\":1}}}"), 0, 1, FLOWSDN_POLICY_CAUSE_TYPE,
		     "spec.podSelector.matchLabels.a", NULL);
}

Test(policy_import, several_causes_in_api_server_order_and_format)
{
	const char *json = NP("{\"ingress\":[{\"ports\":[{\"port\":0}],\"from\":[{}]}],\"policyTypes\":[\"X\"]}");
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	struct flowsdn_policy *p = NULL;
	char msg[2048];

	ASSERT_ERR(flowsdn_policy_parse(json, strlen(json), NULL, &p, d), -FLOWSDN_E_POLICY_INVALID, "parse");
	cr_assert(flowsdn_diag_count(d) == 3);
	flowsdn_policy_diag_format(d, msg, sizeof(msg));
	ASSERT_STREQ(msg,
		     "NetworkPolicy.networking.k8s.io \"np\" is invalid: [spec.ingress[0].ports[0].port: Invalid value: "
		     "0: must be between 1 and 65535, inclusive, spec.ingress[0].from[0]: Required value: must "
		     "specify a peer, spec.policyTypes[0]: Unsupported value: \"X\": supported values: "
		     "\"Ingress\", \"Egress\"]",
		     "message");
}

Test(policy_import, json_errors_and_arguments)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	struct flowsdn_policy *p = NULL;
	const char *dup = "{\"metadata\":{\"name\":\"a\",\"name\":\"b\"}}";
	char msg[512];

	ASSERT_ERR(flowsdn_policy_parse("{", 1, NULL, &p, d), -FLOWSDN_E_POLICY_JSON, "truncated");
	cr_assert(flowsdn_test_line(d) == 1);
	ASSERT_ERR(flowsdn_policy_parse(dup, strlen(dup), NULL, &p, d), -FLOWSDN_E_POLICY_JSON, "duplicate key");
	cr_assert(flowsdn_policy_diag_format(d, msg, sizeof(msg)) > 0 && strstr(msg, "line 1"));
	ASSERT_ERR(flowsdn_policy_parse(NULL, 0, NULL, &p, d), -EINVAL, "NULL");
	{
		FLOWSDN_OPTS(flowsdn_policy_parse_opts, o, .tier = 9);

		ASSERT_ERR(flowsdn_policy_parse("{}", 2, &o, &p, d), -EINVAL, "bad tier");
	}
	cr_assert(p == NULL);
	ASSERT_STREQ(flowsdn_strerror(-FLOWSDN_E_POLICY_CAPACITY),
		     "endpoint needs more policy entries than the map holds", "strerror");
}

Test(policy_import, defaults)
{
	struct flowsdn_policy *p = parse_ok(NP("{\"egress\":[{}]}"));

	cr_assert(flowsdn_policy_types(p) == 3, "egress rules add Egress");
	flowsdn_policy_free(p);
	p = parse_ok(NP("{\"egress\":[],\"policyTypes\":[]}"));
	cr_assert(flowsdn_policy_types(p) == 1, "empty egress and policyTypes: Ingress only");
	flowsdn_policy_free(p);
	p = parse_ok("{\"metadata\":{\"name\":\"x\",\"namespace\":\"n\"}}");
	cr_assert(flowsdn_policy_types(p) == 1, "no spec: Ingress, all pods");
	flowsdn_policy_free(p);
	{
		FLOWSDN_OPTS(flowsdn_policy_parse_opts, o, .default_namespace = "dflt");
		const char *j = "{\"metadata\":{\"name\":\"x\"},\"spec\":null}";

		ASSERT_OK(flowsdn_policy_parse(j, strlen(j), &o, &p, NULL), "default namespace");
		ASSERT_STREQ(flowsdn_policy_namespace(p), "dflt", "namespace");
		flowsdn_policy_free(p);
	}
}

/* ------------------------------------------------------------ semantics */

struct world {
	struct flowsdn_policy_db *db;
};

static struct flowsdn_addr A(const char *s)
{
	struct flowsdn_addr a;

	cr_assert(flowsdn_addr_parse(s, strlen(s), &a) == 0, "%s", s);
	return a;
}

/* Adds a pod "ns/name" with labels "k=v,k=v", named ports "name:proto:port,..."
 * and one address; returns its endpoint id. */
static uint32_t pod(struct flowsdn_policy_db *db, const char *ns, const char *name, const char *labels,
		    const char *ports, const char *addr)
{
	struct flowsdn_policy_label l[8];
	struct flowsdn_policy_named_port np[8];
	char lb[256], pb[256], *save = NULL, *t;
	size_t nl = 0, nn = 0;
	struct flowsdn_addr a = A(addr);
	uint32_t ep = 0;

	snprintf(lb, sizeof(lb), "%s", labels);
	for (t = strtok_r(lb, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');

		*eq = '\0';
		l[nl++] = (struct flowsdn_policy_label){ t, eq + 1 };
	}
	snprintf(pb, sizeof(pb), "%s", ports);
	save = NULL;
	for (t = strtok_r(pb, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *c1 = strchr(t, ':'), *c2 = strchr(c1 + 1, ':');

		*c1 = *c2 = '\0';
		np[nn++] = (struct flowsdn_policy_named_port){ t, (uint8_t)atoi(c1 + 1), (uint16_t)atoi(c2 + 1) };
	}
	{
		FLOWSDN_OPTS(flowsdn_policy_pod, d, .namespace_name = ns, .name = name, .labels = l,
			     .n_labels = nl, .ports = np, .n_ports = nn, .addrs = &a, .n_addrs = 1);

		ASSERT_OK(flowsdn_policy_db_set_pod(db, &d, &ep), name);
	}
	return ep;
}

static void apply(struct flowsdn_policy_db *db, const char *json, int tier)
{
	ASSERT_OK(flowsdn_policy_db_apply(db, parse_tier(json, tier)), "apply");
}

/* The verdict of both the compiled entries and the simulator (which must agree). */
static int V(struct flowsdn_policy_db *db, uint32_t ep, int dir, const char *peer, uint8_t proto, uint16_t port)
{
	struct flowsdn_addr a = A(peer);
	int vc = 0, vs = 0;

	ASSERT_OK(flowsdn_policy_db_compile(db, NULL), "compile");
	ASSERT_OK(flowsdn_policy_db_lookup(db, ep, dir, &a, proto, port, &vc), "lookup");
	ASSERT_OK(flowsdn_policy_db_simulate(db, ep, dir, &a, proto, port, &vs), "simulate");
	cr_assert(vc == vs, "ep %u %s %s %u/%u: compiled %d, simulator %d", ep, dir ? "egress" : "ingress", peer,
		  proto, port, vc, vs);
	{
		FLOWSDN_OPTS(flowsdn_policy_decision, dc);
		FLOWSDN_OPTS(flowsdn_policy_decision, ds);

		ASSERT_OK(flowsdn_policy_db_lookup_decision(db, ep, dir, &a, proto, port, &dc), "lookup_decision");
		ASSERT_OK(flowsdn_policy_db_simulate_decision(db, ep, dir, &a, proto, port, &ds), "simulate_decision");
		cr_assert(dc.verdict == vc && dc.reason == ds.reason && dc.rule_id == ds.rule_id && dc.tier == ds.tier,
			  "ep %u %s %s %u/%u: compiled %s rule %u tier %u, simulator %s rule %u tier %u", ep,
			  dir ? "egress" : "ingress", peer, proto, port, flowsdn_policy_reason_name(dc.reason), dc.rule_id,
			  dc.tier, flowsdn_policy_reason_name(ds.reason), ds.rule_id, ds.tier);
	}
	return vc;
}

/* What decided (both paths agree, V() checks): the rule's name, or the
 * reason's. */
static const char *D(struct flowsdn_policy_db *db, uint32_t ep, int dir, const char *peer, uint8_t proto,
		     uint16_t port)
{
	static char name[256];
	FLOWSDN_OPTS(flowsdn_policy_decision, d);
	struct flowsdn_addr a = A(peer);

	(void)V(db, ep, dir, peer, proto, port);
	ASSERT_OK(flowsdn_policy_db_lookup_decision(db, ep, dir, &a, proto, port, &d), "lookup_decision");
	if (d.reason != FLOWSDN_POLICY_REASON_RULE)
		return flowsdn_policy_reason_name(d.reason);
	cr_assert(flowsdn_policy_db_rule_name(db, d.rule_id, name, sizeof(name)) > 0, "rule %u has a name", d.rule_id);
	return name;
}

#define ALLOW FLOWSDN_POLICY_VERDICT_ALLOW
#define DENY FLOWSDN_POLICY_VERDICT_DENY
#define IN FLOWSDN_POLICY_INGRESS
#define OUT FLOWSDN_POLICY_EGRESS
#define TCP 6
#define UDP 17
#define SCTP 132

static struct policy_test_db T;

static struct flowsdn_policy_db *newdb(void)
{
	return policy_test_db_new(&T, 0);
}

static void freedb(struct flowsdn_policy_db *db)
{
	cr_assert(db == T.db);
	policy_test_db_free(&T);
}

#define POL(ns, name, spec) "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns "\"},\"spec\":" spec "}"

Test(policy_semantics, isolation_empty_rules_and_defaulting)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t web = pod(db, "a", "web", "app=web", "", "10.0.0.1");
	uint32_t cli = pod(db, "a", "cli", "app=cli", "", "10.0.0.2");

	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 80) == ALLOW, "not selected: allowed");
	apply(db, POL("a", "deny", "{\"podSelector\":{}}"), 0);
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 80) == DENY, "empty podSelector, no rules: ingress isolated");
	cr_assert(V(db, web, OUT, "10.0.0.2", TCP, 80) == ALLOW, "policyTypes defaults to Ingress only");
	apply(db, POL("a", "all", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{}]}"), 0);
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 80) == ALLOW, "a rule without from/ports allows everything");
	cr_assert(V(db, web, IN, "203.0.113.9", 1, 0) == ALLOW, "... every protocol and peer");
	cr_assert(V(db, cli, IN, "10.0.0.1", TCP, 80) == DENY, "cli still isolated");
	apply(db, POL("a", "eg", "{\"podSelector\":{\"matchLabels\":{\"app\":\"cli\"}},\"egress\":[{\"ports\":[{\"port\":53,\"protocol\":\"UDP\"}]}]}"), 0);
	cr_assert(V(db, cli, OUT, "8.8.8.8", UDP, 53) == ALLOW, "egress rules default policyTypes to Egress");
	cr_assert(V(db, cli, OUT, "8.8.8.8", TCP, 53) == DENY, "protocol matters");
	apply(db, POL("a", "noeg", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"egress\":[],\"policyTypes\":[\"Egress\"]}"), 0);
	cr_assert(V(db, web, OUT, "8.8.8.8", UDP, 53) == DENY, "empty egress list with Egress type: nothing");
	freedb(db);
}

Test(policy_semantics, union_of_policies_and_selectors)
{
	struct flowsdn_policy_db *db = newdb();
	struct flowsdn_policy_label team[] = { { "team", "blue" } };
	uint32_t web, a1, b1, c2;

	ASSERT_OK(flowsdn_policy_db_set_namespace(db, "one", team, 1), "ns one");
	web = pod(db, "one", "web", "app=web", "", "10.0.0.1");
	a1 = pod(db, "one", "a", "role=a", "", "10.0.0.2");
	b1 = pod(db, "one", "b", "role=b", "", "10.0.0.3");
	c2 = pod(db, "two", "c", "role=a", "", "10.0.1.4");
	(void)a1;
	(void)b1;
	(void)c2;
	apply(db, POL("one", "p1", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"role\":\"a\"}}}],\"ports\":[{\"port\":80}]}]}"), 0);
	apply(db, POL("one", "p2", "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"role\":\"b\"}}}],\"ports\":[{\"port\":443}]}]}"), 0);
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 80) == ALLOW);
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 443) == DENY);
	cr_assert(V(db, web, IN, "10.0.0.3", TCP, 443) == ALLOW, "union of two policies");
	cr_assert(V(db, web, IN, "10.0.1.4", TCP, 80) == DENY, "podSelector alone: own namespace only");
	/* namespaceSelector AND podSelector in one peer, versus two peers */
	apply(db, POL("one", "p3", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"from\":[{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"two\"}},\"podSelector\":{\"matchLabels\":{\"role\":\"a\"}}}],\"ports\":[{\"port\":8080}]}]}"), 0);
	cr_assert(V(db, web, IN, "10.0.1.4", TCP, 8080) == ALLOW, "ns AND pod selector");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 8080) == DENY, "same labels, other namespace");
	apply(db, POL("one", "p4", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"from\":[{\"namespaceSelector\":{\"matchLabels\":{\"team\":\"blue\"}}},{\"podSelector\":{\"matchExpressions\":[{\"key\":\"role\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}}],\"ports\":[{\"port\":9000}]}]}"), 0);
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 9000) == ALLOW, "namespaceSelector peer: every pod of team=blue");
	cr_assert(V(db, web, IN, "10.0.1.4", TCP, 9000) == DENY, "namespace two has no team label");
	freedb(db);
}

Test(policy_semantics, match_expressions)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t web = pod(db, "n", "web", "app=web", "", "10.0.0.1");

	pod(db, "n", "x", "env=prod", "", "10.0.0.2");
	pod(db, "n", "y", "env=dev", "", "10.0.0.3");
	pod(db, "n", "z", "other=1", "", "10.0.0.4");
	apply(db, POL("n", "in", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"from\":[{\"podSelector\":{\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"In\",\"values\":[\"prod\",\"qa\"]}]}}],\"ports\":[{\"port\":1}]},{\"from\":[{\"podSelector\":{\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"NotIn\",\"values\":[\"prod\"]}]}}],\"ports\":[{\"port\":2}]},{\"from\":[{\"podSelector\":{\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"Exists\"}]}}],\"ports\":[{\"port\":3}]},{\"from\":[{\"podSelector\":{\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"DoesNotExist\"}]}}],\"ports\":[{\"port\":4}]}]}"), 0);
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 1) == ALLOW && V(db, web, IN, "10.0.0.3", TCP, 1) == DENY, "In");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 2) == DENY && V(db, web, IN, "10.0.0.3", TCP, 2) == ALLOW &&
		  V(db, web, IN, "10.0.0.4", TCP, 2) == ALLOW, "NotIn matches pods without the key");
	cr_assert(V(db, web, IN, "10.0.0.3", TCP, 3) == ALLOW && V(db, web, IN, "10.0.0.4", TCP, 3) == DENY, "Exists");
	cr_assert(V(db, web, IN, "10.0.0.4", TCP, 4) == ALLOW && V(db, web, IN, "10.0.0.2", TCP, 4) == DENY,
		  "DoesNotExist");
	freedb(db);
}

Test(policy_semantics, ports_named_ranges_and_protocols)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t web = pod(db, "n", "web", "app=web", "http:6:8080,dns:17:5353", "10.0.0.1");
	uint32_t cli = pod(db, "n", "cli", "app=cli", "", "10.0.0.2");

	pod(db, "n", "api", "app=api", "http:6:9090", "10.0.0.3");
	apply(db, POL("n", "p", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"ports\":[{\"port\":\"http\"},{\"protocol\":\"UDP\",\"port\":\"dns\"},{\"protocol\":\"TCP\",\"port\":\"dns\"},{\"port\":30000,\"endPort\":30100},{\"protocol\":\"SCTP\"}]}]}"), 0);
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 8080) == ALLOW, "named port resolved on the pod");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 80) == DENY);
	cr_assert(V(db, web, IN, "10.0.0.2", UDP, 5353) == ALLOW, "dns is UDP");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 5353) == DENY, "dns/TCP does not exist on the pod");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 30000) == ALLOW && V(db, web, IN, "10.0.0.2", TCP, 30100) == ALLOW,
		  "endPort inclusive");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 30101) == DENY && V(db, web, IN, "10.0.0.2", TCP, 29999) == DENY);
	cr_assert(V(db, web, IN, "10.0.0.2", UDP, 30050) == DENY, "range is TCP (default protocol)");
	cr_assert(V(db, web, IN, "10.0.0.2", SCTP, 7) == ALLOW, "protocol without port: all its ports");
	cr_assert(V(db, web, IN, "10.0.0.2", 1, 0) == DENY, "ICMP not listed");
	/* egress named port: resolved on each destination pod */
	apply(db, POL("n", "e", "{\"podSelector\":{\"matchLabels\":{\"app\":\"cli\"}},\"policyTypes\":[\"Egress\"],\"egress\":[{\"ports\":[{\"port\":\"http\"}]}]}"), 0);
	cr_assert(V(db, cli, OUT, "10.0.0.1", TCP, 8080) == ALLOW && V(db, cli, OUT, "10.0.0.3", TCP, 9090) == ALLOW);
	cr_assert(V(db, cli, OUT, "10.0.0.1", TCP, 9090) == DENY && V(db, cli, OUT, "10.0.0.3", TCP, 8080) == DENY);
	cr_assert(V(db, cli, OUT, "8.8.8.8", TCP, 8080) == DENY, "external addresses have no named ports");
	freedb(db);
}

/* Defect (a): cache1 and cache2 share labels (one identity) but number
 * the port "cache" 7000 and 7001.  A client's egress to app=cache port
 * "cache" allows both numbers to both pods (the union, as Cilium does and
 * flowsdn_policy(3) promises) on both paths, whichever pod came first. */
Test(policy_semantics, egress_named_port_is_the_union_over_the_identity)
{
	for (int order = 0; order < 2; order++) {
		struct flowsdn_policy_db *db = newdb();
		uint32_t cli = pod(db, "n", "cli", "app=cli", "", "10.0.0.9");
		uint32_t id1 = 0, id2 = 0, c1, c2;

		if (order == 0) {
			c1 = pod(db, "n", "cache1", "app=cache", "cache:6:7000", "10.0.0.1");
			c2 = pod(db, "n", "cache2", "app=cache", "cache:6:7001", "10.0.0.2");
		} else {
			c2 = pod(db, "n", "cache2", "app=cache", "cache:6:7001", "10.0.0.2");
			c1 = pod(db, "n", "cache1", "app=cache", "cache:6:7000", "10.0.0.1");
		}
		ASSERT_OK(flowsdn_policy_db_identity(db, c1, &id1), "identity");
		ASSERT_OK(flowsdn_policy_db_identity(db, c2, &id2), "identity");
		cr_assert(id1 == id2, "one identity");
		apply(db, POL("n", "e", "{\"podSelector\":{\"matchLabels\":{\"app\":\"cli\"}},\"policyTypes\":[\"Egress\"],"
					"\"egress\":[{\"to\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"cache\"}}}],"
					"\"ports\":[{\"port\":\"cache\"}]}]}"), 0);
		cr_assert(V(db, cli, OUT, "10.0.0.1", TCP, 7000) == ALLOW, "order %d: cache1:7000", order);
		cr_assert(V(db, cli, OUT, "10.0.0.2", TCP, 7001) == ALLOW, "order %d: cache2:7001 (Kubernetes allows it)",
			  order);
		cr_assert(V(db, cli, OUT, "10.0.0.2", TCP, 7000) == ALLOW && V(db, cli, OUT, "10.0.0.1", TCP, 7001) == ALLOW,
			  "order %d: the union reaches both pods", order);
		cr_assert(V(db, cli, OUT, "10.0.0.1", TCP, 7002) == DENY, "no other number");
		/* Deleting the pod that brought 7001 takes the number away. */
		ASSERT_OK(flowsdn_policy_db_delete_pod(db, "n", "cache2"), "delete cache2");
		cr_assert(V(db, cli, OUT, "10.0.0.1", TCP, 7001) == DENY, "7001 gone with cache2");
		cr_assert(V(db, cli, OUT, "10.0.0.1", TCP, 7000) == ALLOW);
		freedb(db);
	}
}

/* Defect (b): "a pod cannot block access to itself" — a pod under
 * default-deny ingress and egress still reaches its own address, on both
 * paths; other pods with its very labels do not. */
Test(policy_semantics, a_pod_cannot_block_access_to_itself)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t web = pod(db, "n", "web", "app=web", "", "10.0.0.1");

	pod(db, "n", "web2", "app=web", "", "10.0.0.2");
	apply(db, POL("n", "deny", "{\"podSelector\":{},\"policyTypes\":[\"Ingress\",\"Egress\"]}"), 0);
	cr_assert(V(db, web, IN, "10.0.0.1", TCP, 80) == ALLOW, "its own address, ingress");
	cr_assert(V(db, web, OUT, "10.0.0.1", UDP, 53) == ALLOW, "its own address, egress");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 80) == DENY, "a pod of the same identity is another pod");
	cr_assert(V(db, web, OUT, "10.0.0.2", TCP, 80) == DENY);
	freedb(db);
}

Test(policy_semantics, ipblock_except_and_families)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t web = pod(db, "n", "web", "app=web", "", "10.0.0.1");

	pod(db, "n", "cli", "app=cli", "", "10.0.0.2");
	apply(db, POL("n", "p", "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\",\"192.0.2.0/24\"]}},{\"ipBlock\":{\"cidr\":\"192.0.2.64/26\"}},{\"ipBlock\":{\"cidr\":\"2001:db8::/32\"}}]}]}"), 0);
	cr_assert(V(db, web, IN, "8.8.8.8", TCP, 1) == ALLOW);
	cr_assert(V(db, web, IN, "10.9.9.9", TCP, 1) == DENY, "except");
	cr_assert(V(db, web, IN, "192.0.2.1", TCP, 1) == DENY, "except");
	cr_assert(V(db, web, IN, "192.0.2.65", TCP, 1) == ALLOW, "another peer allows inside the except");
	cr_assert(V(db, web, IN, "2001:db8::5", UDP, 1) == ALLOW);
	cr_assert(V(db, web, IN, "2001:db9::5", UDP, 1) == DENY, "IPv4 0/0 does not cover IPv6");
	apply(db, POL("n", "q", "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/24\"}}]}]}"), 0);
	cr_assert(V(db, web, IN, "10.0.0.77", TCP, 1) == ALLOW, "external address in the block");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 1) == DENY, "a pod is selected by selectors, not ipBlock");
	freedb(db);
}

Test(policy_semantics, tiers_express_flash_isolation)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t w = pod(db, "tenant", "w", "app=w", "", "10.244.0.5");
	uint32_t dns = pod(db, "kube-system", "dns", "k8s-app=kube-dns", "", "10.244.1.10");

	pod(db, "other", "x", "app=x", "", "10.244.2.7");
	(void)dns;
	apply(db, POL("tenant", "iso", "{\"podSelector\":{},\"policyTypes\":[\"Ingress\",\"Egress\"],\"ingress\":[{\"ports\":[{\"port\":8080}]}],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\"}}]},{\"to\":[{\"namespaceSelector\":{}}]}]}"), 0);
	cr_assert(V(db, w, OUT, "10.96.0.1", TCP, 443) == ALLOW && V(db, w, OUT, "10.244.2.7", TCP, 80) == ALLOW,
		  "allowed by the ALLOW tier");
	apply(db, POL("tenant", "deny", "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/8\"}},{\"ipBlock\":{\"cidr\":\"169.254.0.0/16\"}},{\"namespaceSelector\":{}}]}]}"),
	      FLOWSDN_POLICY_TIER_DENY);
	cr_assert(V(db, w, OUT, "10.96.0.1", TCP, 443) == DENY, "CIDR deny beats allow");
	cr_assert(V(db, w, OUT, "10.244.2.7", TCP, 80) == DENY, "pods denied by selector");
	cr_assert(V(db, w, OUT, "8.8.8.8", TCP, 443) == ALLOW, "public still allowed");
	apply(db, POL("tenant", "dns", "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.96.0.10/32\"}},{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"kube-system\"}},\"podSelector\":{\"matchLabels\":{\"k8s-app\":\"kube-dns\"}}}],\"ports\":[{\"protocol\":\"UDP\",\"port\":53},{\"protocol\":\"TCP\",\"port\":53}]}]}"),
	      FLOWSDN_POLICY_TIER_EXCEPTION);
	cr_assert(V(db, w, OUT, "10.96.0.10", UDP, 53) == ALLOW, "DNS exception beats deny");
	cr_assert(V(db, w, OUT, "10.244.1.10", TCP, 53) == ALLOW, "DNS pod by selector");
	cr_assert(V(db, w, OUT, "10.96.0.10", UDP, 54) == DENY && V(db, w, OUT, "10.96.0.11", UDP, 53) == DENY);
	apply(db, POL("tenant", "protect", "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.96.0.0/16\"}}]}]}"),
	      FLOWSDN_POLICY_TIER_PROTECT);
	cr_assert(V(db, w, OUT, "10.96.0.10", UDP, 53) == DENY, "protected range: nothing opens it");
	cr_assert(V(db, w, OUT, "10.244.1.10", UDP, 53) == ALLOW, "the DNS pod is outside it");
	/* non-ALLOW tiers do not isolate */
	cr_assert(V(db, w, IN, "8.8.8.8", TCP, 8080) == ALLOW && V(db, w, IN, "8.8.8.8", TCP, 22) == DENY);
	freedb(db);
}

Test(policy_semantics, exchange_13_on_a_world)
{
	struct flowsdn_policy_db *db = newdb();
	char *body = read_data("13-apply.request.json", NULL);
	uint32_t web = pod(db, "flash-demo", "web", "app.kubernetes.io/name=fs-web", "", "10.244.0.5");
	char name[128];
	const struct flowsdn_policy_entry *e;
	size_t n;
	unsigned int flags;

	pod(db, "kube-system", "coredns", "k8s-app=kube-dns", "", "10.244.1.10");
	pod(db, "flash-demo", "other", "app=other", "", "10.244.0.6");
	apply(db, body, 0);
	cr_assert(V(db, web, OUT, "10.244.1.10", UDP, 53) == ALLOW && V(db, web, OUT, "10.244.1.10", TCP, 53) == ALLOW);
	cr_assert(V(db, web, OUT, "10.244.1.10", TCP, 80) == DENY);
	cr_assert(V(db, web, OUT, "8.8.8.8", TCP, 443) == ALLOW && V(db, web, OUT, "192.168.1.1", TCP, 443) == DENY);
	cr_assert(V(db, web, OUT, "169.254.169.254", TCP, 80) == DENY);
	cr_assert(V(db, web, IN, "8.8.8.8", TCP, 8080) == ALLOW && V(db, web, IN, "8.8.8.8", UDP, 7777) == ALLOW);
	cr_assert(V(db, web, IN, "8.8.8.8", TCP, 7777) == DENY && V(db, web, IN, "10.1.2.3", TCP, 8080) == DENY);
	cr_assert(V(db, web, IN, "10.244.0.6", TCP, 8080) == DENY, "pods are not in an ipBlock");
	ASSERT_OK(flowsdn_policy_db_entries(db, web, &e, &n, &flags), "entries");
	cr_assert(flags == (FLOWSDN_POLICY_ENFORCE_INGRESS | FLOWSDN_POLICY_ENFORCE_EGRESS));
	cr_assert(n > 0 && e[0].rule_id != 0);
	ASSERT_OK(flowsdn_policy_db_rule_name(db, e[0].rule_id, name, sizeof(name)), "rule name");
	cr_assert(strncmp(name, "flash-demo/fs-web ", 18) == 0, "%s", name);
	free(body);
	freedb(db);
}

Test(policy_compile, port_blocks_are_aligned_and_minimal)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t web = pod(db, "n", "web", "a=b", "", "10.0.0.1");
	const struct flowsdn_policy_entry *e;
	size_t n;

	apply(db, POL("n", "p", "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"port\":1,\"endPort\":65535}]},{\"ports\":[{\"protocol\":\"UDP\",\"port\":1024,\"endPort\":2047}]}]}"), 0);
	ASSERT_OK(flowsdn_policy_db_compile(db, NULL), "compile");
	ASSERT_OK(flowsdn_policy_db_entries(db, web, &e, &n, NULL), "entries");
	/* TCP 1..65535 = 16 blocks (1, 2-3, 4-7, ... 32768-65535); UDP 1024..2047 = one /6 block */
	cr_assert(n == 17, "%zu entries", n);
	for (size_t i = 0; i < n; i++) {
		unsigned int size = 1u << (16 - e[i].port_bits);

		cr_assert(e[i].identity == 0 && e[i].port % size == 0, "aligned block");
	}
	cr_assert(e[16].protocol == UDP && e[16].port == 1024 && e[16].port_bits == 6);
	cr_assert(V(db, web, IN, "1.2.3.4", TCP, 0) == DENY && V(db, web, IN, "1.2.3.4", TCP, 65535) == ALLOW);
	freedb(db);
}

Test(policy_compile, capacity_is_a_compile_error_and_keeps_the_old_entries)
{
	FLOWSDN_OPTS(flowsdn_policy_compile_report, rep);
	struct flowsdn_policy_db *db = policy_test_db_new(&T, 8);
	const struct flowsdn_policy_entry *e;
	uint32_t web;
	size_t n;

	web = pod(db, "n", "web", "a=b", "", "10.0.0.1");
	apply(db, POL("n", "small", "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"port\":80}]}]}"), 0);
	ASSERT_OK(flowsdn_policy_db_compile(db, &rep), "compile");
	apply(db, POL("n", "big", "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"port\":1,\"endPort\":65535}]}]}"), 0);
	ASSERT_ERR(flowsdn_policy_db_compile(db, &rep), -FLOWSDN_E_POLICY_CAPACITY, "too many entries");
	/* 1..79 and 81..65535 for "big" (7 + 14 blocks), 80 stays "small"'s
	 * (the lower rule id decides, and the entry names it) */
	cr_assert(rep.failed_ep_id == web && rep.failed_entries == 22 && rep.capacity == 8, "%u %zu %zu",
		  rep.failed_ep_id, rep.failed_entries, rep.capacity);
	cr_assert(flowsdn_policy_db_entries(db, web, &e, &n, NULL) == 1, "stale: old set still installed");
	cr_assert(n == 1 && e[0].port == 80 && e[0].port_bits == 16, "old entries kept, not truncated");
	ASSERT_OK(flowsdn_policy_db_delete(db, "n", "big"), "delete");
	ASSERT_OK(flowsdn_policy_db_compile(db, &rep), "compile");
	cr_assert(flowsdn_policy_db_entries(db, web, &e, &n, NULL) == 0 && n == 1);
	freedb(db);
}

static bool reported(const struct flowsdn_policy_compile_report *r, uint32_t ep)
{
	for (size_t i = 0; i < r->n_ep_ids; i++)
		if (r->ep_ids[i] == ep)
			return true;
	return false;
}

Test(policy_compile, incremental_recomputes_only_the_selected_endpoints)
{
	FLOWSDN_OPTS(flowsdn_policy_compile_report, rep);
	struct flowsdn_policy_db *db = newdb();
	uint32_t a1 = pod(db, "n", "a1", "app=a", "", "10.0.0.1");
	uint32_t a2 = pod(db, "n", "a2", "app=a", "", "10.0.0.2");
	uint32_t b1 = pod(db, "n", "b1", "app=b", "", "10.0.0.3");
	uint32_t o1 = pod(db, "m", "o1", "app=a", "", "10.0.1.1");

	ASSERT_OK(flowsdn_policy_db_compile(db, &rep), "compile");
	cr_assert(rep.n_ep_ids == 4);
	ASSERT_OK(flowsdn_policy_db_compile(db, &rep), "compile");
	cr_assert(rep.n_ep_ids == 0, "nothing dirty");
	apply(db, POL("n", "p", "{\"podSelector\":{\"matchLabels\":{\"app\":\"a\"}},\"ingress\":[{\"from\":[{\"podSelector\":{}}]}]}"), 0);
	ASSERT_OK(flowsdn_policy_db_compile(db, &rep), "compile");
	cr_assert(rep.n_ep_ids == 2 && reported(&rep, a1) && reported(&rep, a2), "add: the selected pods only");
	apply(db, POL("n", "p", "{\"podSelector\":{\"matchLabels\":{\"app\":\"b\"}},\"ingress\":[{\"from\":[{\"podSelector\":{}}]}]}"), 0);
	ASSERT_OK(flowsdn_policy_db_compile(db, &rep), "compile");
	cr_assert(rep.n_ep_ids == 3 && reported(&rep, b1), "change: selected before and after");
	ASSERT_OK(flowsdn_policy_db_delete(db, "n", "p"), "delete");
	ASSERT_ERR(flowsdn_policy_db_delete(db, "n", "p"), -FLOWSDN_E_POLICY_NOT_FOUND, "delete twice");
	ASSERT_OK(flowsdn_policy_db_compile(db, &rep), "compile");
	cr_assert(rep.n_ep_ids == 1 && rep.ep_ids[0] == b1, "delete");
	cr_assert(!reported(&rep, o1));
	freedb(db);
}

Test(policy_model, bad_input)
{
	struct flowsdn_policy_db *db = newdb();
	struct flowsdn_addr a = A("10.0.0.1");
	struct flowsdn_policy_label bad[] = { { "a/b/c", "x" } };
	struct flowsdn_policy_named_port badport[] = { { "HTTP", 6, 80 } };
	FLOWSDN_OPTS(flowsdn_policy_pod, d, .namespace_name = "n", .name = "p", .addrs = &a, .n_addrs = 1);
	uint32_t ep;
	int v;

	ASSERT_OK(flowsdn_policy_db_set_pod(db, &d, &ep), "pod");
	d.name = "q";
	ASSERT_ERR(flowsdn_policy_db_set_pod(db, &d, &ep), -FLOWSDN_E_POLICY_ADDR_IN_USE, "address of another pod");
	d.n_addrs = 0;
	d.labels = bad;
	d.n_labels = 1;
	ASSERT_ERR(flowsdn_policy_db_set_pod(db, &d, &ep), -EINVAL, "bad label");
	d.n_labels = 0;
	d.ports = badport;
	d.n_ports = 1;
	ASSERT_ERR(flowsdn_policy_db_set_pod(db, &d, &ep), -EINVAL, "bad port name");
	d.namespace_name = "Bad";
	d.n_ports = 0;
	ASSERT_ERR(flowsdn_policy_db_set_pod(db, &d, &ep), -EINVAL, "bad namespace");
	ASSERT_ERR(flowsdn_policy_db_set_namespace(db, "n", bad, 1), -EINVAL, "bad namespace label");
	ASSERT_ERR(flowsdn_policy_db_delete_pod(db, "n", "q"), -FLOWSDN_E_POLICY_NOT_FOUND, "no such pod");
	ASSERT_ERR(flowsdn_policy_db_lookup(db, 1, IN, &a, TCP, 1, &v), -FLOWSDN_E_POLICY_NOT_COMPILED, "not compiled");
	ASSERT_ERR(flowsdn_policy_db_lookup(db, 99, IN, &a, TCP, 1, &v), -FLOWSDN_E_POLICY_NOT_FOUND, "no endpoint");
	ASSERT_ERR(flowsdn_policy_db_lookup(db, 1, 7, &a, TCP, 1, &v), -EINVAL, "direction");
	ASSERT_ERR(flowsdn_policy_db_apply(db, NULL), -EINVAL, "NULL policy");
	ASSERT_OK(flowsdn_policy_db_delete_pod(db, "n", "p"), "delete pod");
	freedb(db);
	flowsdn_policy_db_free(NULL);
	flowsdn_policy_free(NULL);
	ASSERT_ERR(flowsdn_policy_db_new(NULL, &db), -EINVAL, "no identity store");
}

Test(policy_model, ipcache_and_identities)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t p1 = pod(db, "n", "p1", "app=a", "", "10.0.0.1");
	uint32_t p2 = pod(db, "n", "p2", "app=a", "", "10.0.0.2");
	uint32_t p3 = pod(db, "m", "p3", "app=a", "", "10.0.0.3");
	const struct flowsdn_policy_ipcache_entry *ic;
	uint32_t i1, i2, i3;
	size_t n;

	ASSERT_OK(flowsdn_policy_db_identity(db, p1, &i1), "id");
	ASSERT_OK(flowsdn_policy_db_identity(db, p2, &i2), "id");
	ASSERT_OK(flowsdn_policy_db_identity(db, p3, &i3), "id");
	cr_assert(i1 == i2 && i1 != i3 && i1 >= 256 && i1 < 0x01000000, "same labels and namespace, same identity");
	apply(db, POL("n", "p", "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/8\",\"except\":[\"10.0.0.0/24\"]}}]}]}"), 0);
	ASSERT_OK(flowsdn_policy_db_ipcache(db, &ic, &n), "ipcache");
	/* 0.0.0.0/0, ::/0, 10/8, 10.0.0/24 and the three pods */
	cr_assert(n == 7, "%zu ipcache entries", n);
	for (size_t i = 0; i < n; i++)
		if (ic[i].prefix.len == 32)
			cr_assert(ic[i].identity < 0x01000000);
		else
			cr_assert(ic[i].identity >= 0x01000000);
	ASSERT_OK(flowsdn_policy_db_delete(db, "n", "p"), "delete");
	ASSERT_OK(flowsdn_policy_db_ipcache(db, &ic, &n), "ipcache");
	cr_assert(n == 5, "CIDR identities released with their last policy");
	freedb(db);
}

/* issue 15: lookup and simulate name the deciding rule: the highest
 * tier, then the lowest rule id (the earlier policy, the earlier rule),
 * whether it names the peer or allows every peer; or the reason. */
Test(policy_semantics, lookup_and_simulate_name_the_deciding_rule)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t web = pod(db, "n", "web", "app=web", "", "10.0.0.1");
	FLOWSDN_OPTS(flowsdn_policy_decision, d);
	struct flowsdn_addr a = A("10.0.0.1");

	(void)pod(db, "n", "cli", "app=cli", "", "10.0.0.2");
	(void)pod(db, "n", "other", "app=other", "", "10.0.0.3");
	ASSERT_STREQ(D(db, web, IN, "10.0.0.2", TCP, 80), "no policy selects", "not selected");
	apply(db, POL("n", "a", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":["
				"{\"from\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"cli\"}}}],\"ports\":[{\"port\":80}]},"
				"{\"ports\":[{\"port\":443}]}]}"), 0);
	apply(db, POL("n", "b", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":["
				"{\"ports\":[{\"port\":80}]},{\"from\":[{\"podSelector\":{}}],\"ports\":[{\"port\":443}]}]}"), 0);
	ASSERT_STREQ(D(db, web, IN, "10.0.0.2", TCP, 80), "n/a ingress[0]", "the earlier rule, naming the peer");
	ASSERT_STREQ(D(db, web, IN, "10.0.0.3", TCP, 80), "n/b ingress[0]", "the only one that matches");
	ASSERT_STREQ(D(db, web, IN, "10.0.0.3", TCP, 443), "n/a ingress[1]", "any peer, earlier than b's selector");
	ASSERT_STREQ(D(db, web, IN, "203.0.113.1", TCP, 443), "n/a ingress[1]", "an external peer");
	ASSERT_STREQ(D(db, web, IN, "10.0.0.2", TCP, 22), "default deny", "selected, nothing allows");
	ASSERT_STREQ(D(db, web, OUT, "10.0.0.2", TCP, 22), "no policy selects", "egress is not isolated");
	ASSERT_STREQ(D(db, web, IN, "10.0.0.1", TCP, 22), "self", "its own address");
	/* A higher tier wins over a lower rule id. */
	apply(db, POL("n", "c", "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"podSelector\":"
				"{\"matchLabels\":{\"app\":\"other\"}}}]}]}"), FLOWSDN_POLICY_TIER_DENY);
	ASSERT_STREQ(D(db, web, IN, "10.0.0.3", TCP, 443), "n/c ingress[0]", "deny tier over allow");
	ASSERT_OK(flowsdn_policy_db_lookup_decision(db, web, IN, &(struct flowsdn_addr){ 0 }, TCP, 1, &d) == -EINVAL
			  ? 0 : -1, "no family: -EINVAL");
	ASSERT_OK(flowsdn_policy_db_lookup_decision(db, web, IN, &a, TCP, 1, &d), "self");
	cr_assert(d.verdict == ALLOW && d.reason == FLOWSDN_POLICY_REASON_SELF && d.rule_id == 0 && d.tier == 0);
	cr_assert(flowsdn_policy_reason_name(0) == NULL && flowsdn_policy_reason_name(99) == NULL);
	freedb(db);
}

/* issue 15: a pod's labels change alone: its addresses, named ports and
 * endpoint id stay, the policies that select it (or select by it) follow. */
Test(policy_semantics, set_pod_labels_keeps_addresses_and_ports)
{
	struct flowsdn_policy_db *db = newdb();
	uint32_t web = pod(db, "n", "web", "app=web", "http:6:8080", "10.0.0.1");
	uint32_t cli = pod(db, "n", "cli", "app=cli", "", "10.0.0.2"), id = 0, before = 0;
	struct flowsdn_policy_label other[] = { { "app", "other" } }, back[] = { { "app", "cli" } },
				    web2[] = { { "app", "web" }, { "tier", "front" } };

	apply(db, POL("n", "p", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"from\":"
				"[{\"podSelector\":{\"matchLabels\":{\"app\":\"cli\"}}}],\"ports\":[{\"port\":\"http\"}]}]}"), 0);
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 8080) == ALLOW, "cli -> web:http");
	ASSERT_OK(flowsdn_policy_db_identity(db, cli, &before), "identity");
	ASSERT_OK(flowsdn_policy_db_set_pod_labels(db, "n", "cli", other, 1), "relabel cli");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 8080) == DENY, "no longer app=cli: denied, same address");
	ASSERT_OK(flowsdn_policy_db_endpoint_by_addr(db, &(struct flowsdn_addr){ .family = FLOWSDN_AF_INET,
											  .bytes = { 10, 0, 0, 2 } }, &id),
		  "address kept");
	cr_assert_eq(id, cli, "endpoint id kept");
	ASSERT_OK(flowsdn_policy_db_identity(db, cli, &id), "identity");
	cr_assert_neq(id, before, "a new label set, a new identity");
	ASSERT_OK(flowsdn_policy_db_set_pod_labels(db, "n", "cli", back, 1), "back");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 8080) == ALLOW, "app=cli again");
	ASSERT_OK(flowsdn_policy_db_set_pod_labels(db, "n", "web", web2, 2), "relabel web");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 8080) == ALLOW, "still selected, its named port kept");
	cr_assert(V(db, web, IN, "10.0.0.2", TCP, 8081) == DENY, "and only it");
	ASSERT_OK(flowsdn_policy_db_set_pod_labels(db, "n", "web", other, 1), "web leaves the selector");
	cr_assert(V(db, web, IN, "10.0.0.3", TCP, 22) == ALLOW, "not selected: open");
	ASSERT_ERR(flowsdn_policy_db_set_pod_labels(db, "n", "nobody", other, 1), -FLOWSDN_E_POLICY_NOT_FOUND, "no pod");
	ASSERT_ERR(flowsdn_policy_db_set_pod_labels(db, "n", "cli", NULL, 1), -EINVAL, "labels NULL");
	{
		struct flowsdn_policy_label bad[] = { { "-x", "y" } };

		ASSERT_ERR(flowsdn_policy_db_set_pod_labels(db, "n", "cli", bad, 1), -EINVAL, "a label Kubernetes refuses");
		cr_assert(V(db, web, OUT, "10.0.0.2", TCP, 1) == ALLOW);
		ASSERT_OK(flowsdn_policy_db_identity(db, cli, &id), "identity");
		cr_assert_neq(id, 0u, "the refused change left the pod as it was");
	}
	freedb(db);
}
