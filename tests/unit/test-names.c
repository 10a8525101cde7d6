/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One corpus of ids and names through every entry point that checks a
 * naming rule, asserting the same verdict everywhere (issue 12: one
 * validator per rule).  Each corpus entry carries the verdict of every
 * rule, written by hand from the rule's definition (common/names.h), so a
 * wrong rule fails here too, not only a module that disagrees with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <flash/image.h>
#include <flash/render.h>
#include <flash/spec.h>
#include <flowsdn/cni.h>
#include <flowsdn/identity.h>
#include <flowsdn/ipam.h>
#include <flowsdn/netlink.h>
#include <flowsdn/policy.h>

#include "agent-api.h"
#include "diag-helpers.h"
#ifdef TEST_NAMES_AGENT
#include "conf.h"
#include "core.h"
#endif
#include "helpers.h"
#include "json.h"
#include "names.h"
#include "unit/ipam-helpers.h"

DIAG_TEST_HELPERS(flowsdn)

enum rule { R_CID, R_IFNAME, R_LABEL, R_SUBDOMAIN, R_KEY, R_VALUE, N_RULES };

static const char *const rule_names[N_RULES] = {
	"container id", "interface name", "DNS-1123 label", "DNS-1123 subdomain", "label key", "label value",
};

#define C (1u << R_CID)
#define I (1u << R_IFNAME)
#define L (1u << R_LABEL)
#define S (1u << R_SUBDOMAIN)
#define K (1u << R_KEY)
#define V (1u << R_VALUE)

/* A corpus entry: @text followed by @n copies of @fill, and the rules it
 * satisfies. */
struct name_case {
	const char *text;
	char fill;
	size_t n;
	unsigned int ok;
};

static const struct name_case corpus[] = {
	{ "", 0, 0, V },
	{ "a", 0, 0, C | I | L | S | K | V },
	{ "eth0", 0, 0, C | I | L | S | K | V },
	{ "abc-123", 0, 0, C | I | L | S | K | V },
	{ "123", 0, 0, C | I | L | S | K | V },
	{ "1abc", 0, 0, C | I | L | S | K | V },
	{ "x--y", 0, 0, C | I | L | S | K | V },
	{ "-abc", 0, 0, I },
	{ "abc-", 0, 0, C | I },
	{ "_a", 0, 0, I },
	{ "a_b", 0, 0, C | I | K | V },
	{ "a.b", 0, 0, C | I | S | K | V },
	{ "a..b", 0, 0, C | I | K | V },
	{ ".a", 0, 0, I },
	{ "a.", 0, 0, C | I },
	{ ".", 0, 0, 0 },
	{ "..", 0, 0, 0 },
	{ "A", 0, 0, C | I | K | V },
	{ "Abc", 0, 0, C | I | K | V },
	{ "ETH0", 0, 0, C | I | K | V },
	{ "a b", 0, 0, 0 },
	{ " a", 0, 0, 0 },
	{ "a\tb", 0, 0, 0 },
	{ "a\x01", 0, 0, 0 },
	{ "\x7f", 0, 0, 0 },
	{ "a\x7f", 0, 0, 0 },
	{ "\xc3\xa9", 0, 0, 0 },        /* "é": bytes 0x80 and up */
	{ "a\xc3\xa9", 0, 0, 0 },
	{ "a/b", 0, 0, K },
	{ "a:b", 0, 0, 0 },
	{ "example.com/name", 0, 0, K },
	{ "example.com/", 0, 0, 0 },
	{ "/name", 0, 0, 0 },
	{ "a/b/c", 0, 0, 0 },
	{ "Example.com/name", 0, 0, 0 },
	{ "p/", 'b', 63, K },            /* name part at its limit */
	{ "p/", 'b', 64, 0 },            /* one past */
	{ "", 'a', 15, C | I | L | S | K | V },
	{ "", 'a', 16, C | L | S | K | V },
	{ "", 'a', 63, C | L | S | K | V },
	{ "", 'a', 64, C | S },          /* a subdomain has no per-label limit in apimachinery */
	{ "", 'a', 253, C | S },
	{ "", 'a', 254, C },
	{ "", 'a', 255, C },
	{ "", 'a', 256, 0 },
	{ "", 'A', 255, C },
	{ "", 'A', 256, 0 },
};

/* Subdomains and keys at their limits are built from labels. */
static char *sub_of_len(size_t n)
{
	char *s = calloc(1, n + 1);

	cr_assert(s);
	for (size_t i = 0; i < n; i++)
		s[i] = (i % 64 == 63) ? '.' : 'a';
	cr_assert(s[n - 1] != '.');
	return s;
}

static char *case_text(const struct name_case *c)
{
	size_t t = strlen(c->text);
	char *s = malloc(c->n + t + 1);

	cr_assert(s);
	memcpy(s, c->text, t);
	memset(s + t, c->fill, c->n);
	s[t + c->n] = '\0';
	return s;
}

/* printable form of @s for messages */
static const char *show(const char *s)
{
	static char buf[80];
	size_t o = 0, n = strlen(s);

	for (size_t i = 0; s[i] && o + 5 < sizeof(buf) - 16; i++) {
		unsigned char ch = (unsigned char)s[i];

		o += (size_t)snprintf(buf + o, sizeof(buf) - o, ch > ' ' && ch < 0x7f ? "%c" : "\\x%02x", ch);
	}
	if (n > 40)
		snprintf(buf + o, sizeof(buf) - o, "... (%zu bytes)", n);
	return buf;
}

/* @s as a JSON string literal (malloc'd). */
static char *jstr(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *q = malloc(n * 6 + 3);

	cr_assert(q);
	q[o++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x20 || ch == '"' || ch == '\\')
			o += (size_t)sprintf(q + o, "\\u%04x", ch);
		else
			q[o++] = (char)ch;
	}
	q[o++] = '"';
	q[o] = '\0';
	return q;
}

/* @pre, @s as a JSON string, @post (malloc'd). */
static char *jwrap(const char *pre, const char *s, const char *post)
{
	char *q = jstr(s), *out = NULL;

	cr_assert(asprintf(&out, "%s%s%s", pre, q, post) > 0);
	free(q);
	return out;
}

/* ------------------------------------------------------------ entry points */

static char state_top[256];
static struct flowsdn_ipam *ipam;
static struct flowsdn_identity_store *ids;
static struct flowsdn_policy_db *pdb;
static struct flash_operator_config *config;
#ifdef TEST_NAMES_AGENT
static struct agent_core *agent;

/* The agent core in-process, without a datapath: its only kernel call
 * on the ADD path before the endpoint is built is the netns lookup, which
 * this fake refuses, so an ADD whose names pass stops there. */
static int refusing_netns_ino(void *ctx, const char *path, uint64_t *ret)
{
	(void)ctx, (void)path, (void)ret;
	return -ENOENT;
}

static const struct agent_ops refusing_ops = { .netns_ino = refusing_netns_ino };
#endif

static void setup(void)
{
	struct flowsdn_prefix pool;
	char dir[300];

	snprintf(state_top, sizeof(state_top), "/tmp/test-names.XXXXXX");
	cr_assert(mkdtemp(state_top));
	snprintf(dir, sizeof(dir), "%s/ipam", state_top);
	ASSERT_OK(flowsdn_prefix_parse("10.9.0.0/24", strlen("10.9.0.0/24"), NULL, &pool), "pool");
	ASSERT_OK(flowsdn_ipam_new(dir, &pool, 1, NULL, &ipam, NULL), "ipam");
	snprintf(dir, sizeof(dir), "%s/identity", state_top);
	ASSERT_OK(flowsdn_identity_new(dir, NULL, &ids), "identity store");
	{
		FLOWSDN_OPTS(flowsdn_policy_db_opts, o, .identities = ids);

		ASSERT_OK(flowsdn_policy_db_new(&o, &pdb), "policy db");
	}
	ASSERT_OK(flash_operator_config_default(&config), "operator config");
#ifdef TEST_NAMES_AGENT
	{
		struct agent_config *c = NULL;
		_cleanup_engine_diag_ struct diag *d = test_engine_diag();
		char *json = NULL;

		cr_assert(asprintf(&json, "{\"socket\":\"%s/sock\",\"state-dir\":\"%s/agent\",\"pools\":[\"10.8.0.0/24\"],"
				   "\"datapath\":false}", state_top, state_top) > 0);
		ASSERT_OK(agent_config_parse(json, strlen(json), &c, d), test_engine_text(d));
		ASSERT_OK(agent_core_new(c, &refusing_ops, NULL, &agent), "agent core");
		agent_config_free(c);
		free(json);
	}
#endif
}

static void teardown(void)
{
#ifdef TEST_NAMES_AGENT
	agent_core_free(agent);
#endif
	flash_operator_config_free(config);
	flowsdn_policy_db_free(pdb);
	flowsdn_identity_free(ids);
	flowsdn_ipam_free(ipam);
	rm_tree(state_top);
}

struct env {
	const char *cid, *ifname;
};

static const char *env_get(const char *name, void *userdata)
{
	const struct env *e = userdata;

	if (!strcmp(name, "CNI_COMMAND"))
		return "ADD";
	if (!strcmp(name, "CNI_CONTAINERID"))
		return e->cid;
	if (!strcmp(name, "CNI_IFNAME"))
		return e->ifname;
	if (!strcmp(name, "CNI_NETNS"))
		return "/run/netns/x";
	if (!strcmp(name, "CNI_PATH"))
		return "/opt/cni/bin";
	return NULL;
}

static bool cni_env(const char *cid, const char *ifname)
{
	struct env e = { cid, ifname };
	struct flowsdn_cni_env out;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();

	return flowsdn_cni_env_read(env_get, &e, &out, d) == 0;
}

static bool ep_cni_env_cid(const char *s) { return cni_env(s, "eth0"); }
static bool ep_cni_env_ifname(const char *s) { return cni_env("c1", s); }
static bool ep_cni_cid_valid(const char *s) { return flowsdn_cni_container_id_valid(s); }
static bool ep_cni_ifname_valid(const char *s) { return flowsdn_cni_ifname_valid(s); }
static bool ep_netlink_ifname_valid(const char *s) { return flowsdn_netlink_ifname_valid(s); }
static bool ep_ipam_owner_cid(const char *s) { return flowsdn_ipam_owner_valid(s, "eth0"); }
static bool ep_ipam_owner_ifname(const char *s) { return flowsdn_ipam_owner_valid("c1", s); }

/* A real allocation: accepted owners get an address (then give it back). */
static bool ipam_alloc(const char *cid, const char *ifname)
{
	struct flowsdn_ipam_result res;
	int r = flowsdn_ipam_allocate(ipam, cid, ifname, NULL, &res, NULL);

	if (r == 0) {
		ASSERT_OK(flowsdn_ipam_release(ipam, cid, ifname, NULL), "release");
		return true;
	}
	cr_assert(r == -FLOWSDN_E_IPAM_OWNER, "IPAM refused (%s, %s) with %d, not the owner error", show(cid), ifname, r);
	return false;
}

static bool ep_ipam_alloc_cid(const char *s) { return ipam_alloc(s, "eth0"); }
static bool ep_ipam_alloc_ifname(const char *s) { return ipam_alloc("c1", s); }

/* The CNI network name follows the container id rule (CNI's one rule for
 * identifiers). */
static bool ep_cni_network_name(const char *s)
{
	char *json = jwrap("{\"cniVersion\":\"1.0.0\",\"name\":", s, ",\"type\":\"flowsdn-cni\"}");
	struct flowsdn_cni_conf *conf = NULL;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	int r = flowsdn_cni_conf_parse(json, strlen(json), &conf, d);

	flowsdn_cni_conf_free(conf);
	free(json);
	return r == 0;
}

/* The agent API's owner body ({"containerID", "ifname"}), decoded as the
 * agent decodes a queued DEL, and the queue entry's name. */
static bool agent_owner(const char *cid, const char *ifname)
{
	char *qc = jstr(cid), *qi = jstr(ifname), *body = NULL;
	struct json_value *root = NULL;
	struct json_error err;
	const char *rc = NULL, *ri = NULL;
	char *name;
	bool ok;

	cr_assert(asprintf(&body, "{\"containerID\":%s,\"ifname\":%s}", qc, qi) > 0);
	ASSERT_OK(json_parse(body, strlen(body), NULL, &root, &err), "owner body is JSON");
	ok = agent_api_queue_entry_parse(root, &rc, &ri) == 0;
	name = agent_api_queue_entry_name(cid, ifname);
	cr_assert(ok == (name != NULL), "agent queue: entry name and entry body disagree on (%s, %s)", show(cid), ifname);
	free(name);
	json_free(root);
	free(body);
	free(qc);
	free(qi);
	return ok;
}

#ifdef TEST_NAMES_AGENT
/* POST /v1/cni/add as the agent core takes it: -EINVAL is the refusal of
 * the request's names (the netns is absolute); anything else means they
 * passed (the fake's netns refusal). */
static bool agent_add(const char *cid, const char *ifname)
{
	struct agent_request rq = { .container_id = cid, .ifname = ifname, .netns = "/fake/ns" };
	struct agent_api_endpoint ep;
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	int r = agent_core_add(agent, &rq, &ep, d);

	cr_assert(r < 0, "the fake refuses every netns, yet ADD (%s, %s) succeeded", show(cid), ifname);
	return r != -EINVAL;
}

static bool ep_agent_add_cid(const char *s) { return agent_add(s, "eth0"); }
static bool ep_agent_add_ifname(const char *s) { return agent_add("c1", s); }
#endif

static bool ep_agent_owner_cid(const char *s) { return agent_owner(s, "eth0"); }
static bool ep_agent_owner_ifname(const char *s) { return agent_owner("c1", s); }

/* An endpoint object (the agent's answer to flowsdn-cni, an entry of its
 * endpoint state), read by agent_api_endpoint_parse(). */
static bool agent_endpoint(const char *cid, const char *ifname)
{
	char *qc = jstr(cid), *qi = jstr(ifname), *body = NULL;
	struct json_value *root = NULL;
	struct json_error err;
	struct agent_api_endpoint e;
	bool ok;

	cr_assert(asprintf(&body,
			   "{\"id\":3,\"containerID\":%s,\"interface\":%s,\"netns\":\"/proc/self/ns/net\","
			   "\"netnsInode\":1,\"hostInterface\":\"fsd0123456789ab\",\"hostIfindex\":7,"
			   "\"mac\":\"0a:00:00:00:00:03\",\"hostMac\":\"0a:00:00:00:00:04\",\"mtu\":1450,"
			   "\"created\":1,\"addresses\":[{\"address\":\"10.244.0.3/32\",\"gateway\":\"169.254.1.1\"}]}",
			   qc, qi) > 0);
	ASSERT_OK(json_parse(body, strlen(body), NULL, &root, &err), "endpoint object is JSON");
	ok = agent_api_endpoint_parse(root, &e) == 0;
	json_free(root);
	free(body);
	free(qc);
	free(qi);
	return ok;
}

static bool ep_agent_endpoint_cid(const char *s) { return agent_endpoint(s, "eth0"); }
static bool ep_agent_endpoint_ifname(const char *s) { return agent_endpoint("c1", s); }

static bool policy_import(const char *name, const char *ns, const char *key, const char *value)
{
	char *qn = jstr(name), *qns = jstr(ns), *qk = jstr(key), *qv = jstr(value), *json = NULL;
	struct flowsdn_policy *p = NULL;
	struct flowsdn_diag *d = NULL;
	int r;

	cr_assert(asprintf(&json,
			   "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
			   "\"metadata\":{\"name\":%s,\"namespace\":%s},"
			   "\"spec\":{\"podSelector\":{\"matchLabels\":{%s:%s}},\"policyTypes\":[\"Ingress\"]}}",
			   qn, qns, qk, qv) > 0);
	cr_assert(flowsdn_diag_new(&d) == 0);
	r = flowsdn_policy_parse(json, strlen(json), NULL, &p, d);
	cr_assert(r == 0 || r == -FLOWSDN_E_POLICY_INVALID || r == -FLOWSDN_E_POLICY_JSON,
		  "policy import: unexpected %d for %s", r, json);
	cr_assert(r == 0 || flowsdn_diag_first_error(d), "a refusal without a cause");
	flowsdn_diag_free(d);
	flowsdn_policy_free(p);
	free(json);
	free(qn);
	free(qns);
	free(qk);
	free(qv);
	return r == 0;
}

static bool ep_policy_name(const char *s) { return policy_import(s, "ns", "k", "v"); }
static bool ep_policy_namespace(const char *s) { return policy_import("p", s, "k", "v"); }
static bool ep_policy_label_key(const char *s) { return policy_import("p", "ns", s, "v"); }
static bool ep_policy_label_value(const char *s) { return policy_import("p", "ns", "k", s); }

static bool policy_db_namespace(const char *name, const char *key, const char *value)
{
	const struct flowsdn_policy_label l = { key, value };
	int r = flowsdn_policy_db_set_namespace(pdb, name, &l, 1);

	cr_assert(r == 0 || r == -EINVAL, "policy db: unexpected %d", r);
	return r == 0;
}

static bool ep_policy_db_namespace(const char *s) { return policy_db_namespace(s, "k", "v"); }
static bool ep_policy_db_key(const char *s) { return policy_db_namespace("ns", s, "v"); }
static bool ep_policy_db_value(const char *s) { return policy_db_namespace("ns", "k", s); }

static bool identity_labels(const char *key, const char *value)
{
	const struct flowsdn_label l = { key, value };
	char *text = NULL;
	int r = flowsdn_identity_labels_canonical(&l, 1, &text);

	free(text);
	cr_assert(r == 0 || r == -FLOWSDN_E_IDENTITY_LABEL_KEY || r == -FLOWSDN_E_IDENTITY_LABEL_VALUE,
		  "identity: unexpected %d", r);
	return r == 0;
}

static bool ep_identity_key(const char *s) { return identity_labels(s, "v"); }
static bool ep_identity_value(const char *s) { return identity_labels("k", s); }

/* The store numbers accepted label sets (and gives the number back). */
static bool identity_acquire(const char *key, const char *value)
{
	const struct flowsdn_label l = { key, value };
	uint32_t id = 0;
	int r = flowsdn_identity_acquire(ids, &l, 1, &id);

	if (r == 0) {
		ASSERT_OK(flowsdn_identity_release(ids, id), "identity release");
		return true;
	}
	cr_assert(r == -FLOWSDN_E_IDENTITY_LABEL_KEY || r == -FLOWSDN_E_IDENTITY_LABEL_VALUE,
		  "identity acquire: unexpected %d", r);
	return false;
}

static bool ep_identity_acquire_key(const char *s) { return identity_acquire(s, "v"); }
static bool ep_identity_acquire_value(const char *s) { return identity_acquire("k", s); }

/* A name in a spec: the region is a DNS label. */
static bool ep_spec_region(const char *s)
{
	char *json = jwrap("{\"region\":", s, ",\"image\":\"nginx:1\",\"cpu_millis\":100,\"memory_mib\":64}");
	struct flash_spec *spec = NULL;
	struct flash_diag *diag = NULL;
	int r;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	r = flash_spec_parse(json, strlen(json), NULL, &spec, diag);
	if (r == 0)
		cr_assert(strlen(s) <= 63);
	flash_spec_free(spec);
	flash_diag_free(diag);
	free(json);
	return r == 0;
}

static bool render_with(const char *ns, const char *org)
{
	static const char json[] = "{\"region\":\"r1\",\"image\":\"nginx:1\",\"cpu_millis\":100,\"memory_mib\":64}";
	struct flash_spec *spec = NULL;
	struct flash_render *rd = NULL;
	struct flash_diag *diag = NULL;
	FLASH_OPTS(flash_render_opts, opts, .name = "fs-a", .namespace_ = ns, .organization_id = org);
	int r;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_OK(flash_spec_parse(json, strlen(json), NULL, &spec, diag), "spec");
	r = flash_render(spec, config, &opts, &rd, diag);
	cr_assert(r == 0 || r == -FLASH_E_RENDER_NAME, "render: unexpected %d", r);
	flash_render_free(rd);
	flash_spec_free(spec);
	flash_diag_free(diag);
	return r == 0;
}

static bool ep_render_namespace(const char *s) { return render_with(s, "org"); }

/* The organization id is a label value that must not be empty. */
static bool ep_render_org(const char *s) { return !s[0] ? !render_with("ns", s) : render_with("ns", s); }

static bool operator_config(const char *pre, const char *s, const char *post)
{
	char *json = jwrap(pre, s, post);
	struct flash_operator_config *c = NULL;
	struct flash_diag *d = NULL;
	int r;

	ASSERT_OK(flash_diag_new(&d), "diag");
	r = flash_operator_config_parse(json, strlen(json), &c, d);
	cr_assert(r == 0 || r == -FLASH_E_RENDER_CONFIG, "operator config: unexpected %d for %s", r, json);
	cr_assert(r == 0 || flash_diag_errors(d) > 0, "operator config: refused without a diagnostic for %s", json);
	flash_operator_config_free(c);
	flash_diag_free(d);
	free(json);
	return r == 0;
}

static bool ep_opconf_namespace(const char *s) { return operator_config("{\"operator\":{\"namespace\":", s, "}}"); }
static bool ep_opconf_storage_class(const char *s)
{
	return operator_config("{\"persistence\":{\"storageClass\":", s, "}}");
}
static bool ep_opconf_label_key(const char *s) { return operator_config("{\"gpuNodeLabel\":", s, "}"); }
static bool ep_opconf_label_value(const char *s) { return operator_config("{\"publicNodeLabels\":{\"k\":", s, "}}"); }

struct entry_point {
	enum rule rule;
	const char *name;
	bool (*accepts)(const char *s);
};

static const struct entry_point entry_points[] = {
	{ R_CID, "CNI_CONTAINERID (flowsdn_cni_env_read)", ep_cni_env_cid },
	{ R_CID, "flowsdn_cni_container_id_valid", ep_cni_cid_valid },
	{ R_CID, "CNI network name (flowsdn_cni_conf_parse)", ep_cni_network_name },
	{ R_CID, "flowsdn_ipam_owner_valid (id)", ep_ipam_owner_cid },
	{ R_CID, "flowsdn_ipam_allocate (id)", ep_ipam_alloc_cid },
	{ R_CID, "agent API owner body (agent_api_queue_entry_parse)", ep_agent_owner_cid },
	{ R_CID, "agent API endpoint object (agent_api_endpoint_parse)", ep_agent_endpoint_cid },
#ifdef TEST_NAMES_AGENT
	{ R_CID, "POST /v1/cni/add (agent_core_add)", ep_agent_add_cid },
#endif
	{ R_IFNAME, "CNI_IFNAME (flowsdn_cni_env_read)", ep_cni_env_ifname },
	{ R_IFNAME, "flowsdn_cni_ifname_valid", ep_cni_ifname_valid },
	{ R_IFNAME, "flowsdn_netlink_ifname_valid", ep_netlink_ifname_valid },
	{ R_IFNAME, "flowsdn_ipam_owner_valid (ifname)", ep_ipam_owner_ifname },
	{ R_IFNAME, "flowsdn_ipam_allocate (ifname)", ep_ipam_alloc_ifname },
	{ R_IFNAME, "agent API owner body (agent_api_queue_entry_parse)", ep_agent_owner_ifname },
	{ R_IFNAME, "agent API endpoint object (agent_api_endpoint_parse)", ep_agent_endpoint_ifname },
#ifdef TEST_NAMES_AGENT
	{ R_IFNAME, "POST /v1/cni/add (agent_core_add)", ep_agent_add_ifname },
#endif
	{ R_LABEL, "NetworkPolicy metadata.namespace (flowsdn_policy_parse)", ep_policy_namespace },
	{ R_LABEL, "flowsdn_policy_db_set_namespace (name)", ep_policy_db_namespace },
	{ R_LABEL, "spec region (flash_spec_parse)", ep_spec_region },
	{ R_LABEL, "render namespace (flash_render)", ep_render_namespace },
	{ R_LABEL, "operator.namespace (flash_operator_config_parse)", ep_opconf_namespace },
	{ R_SUBDOMAIN, "NetworkPolicy metadata.name (flowsdn_policy_parse)", ep_policy_name },
	{ R_SUBDOMAIN, "persistence.storageClass (flash_operator_config_parse)", ep_opconf_storage_class },
	{ R_KEY, "NetworkPolicy matchLabels key (flowsdn_policy_parse)", ep_policy_label_key },
	{ R_KEY, "flowsdn_policy_db_set_namespace (label key)", ep_policy_db_key },
	{ R_KEY, "flowsdn_identity_labels_canonical (key)", ep_identity_key },
	{ R_KEY, "flowsdn_identity_acquire (key)", ep_identity_acquire_key },
	{ R_KEY, "gpuNodeLabel (flash_operator_config_parse)", ep_opconf_label_key },
	{ R_VALUE, "NetworkPolicy matchLabels value (flowsdn_policy_parse)", ep_policy_label_value },
	{ R_VALUE, "flowsdn_policy_db_set_namespace (label value)", ep_policy_db_value },
	{ R_VALUE, "flowsdn_identity_labels_canonical (value)", ep_identity_value },
	{ R_VALUE, "flowsdn_identity_acquire (value)", ep_identity_acquire_value },
	{ R_VALUE, "render organization_id (flash_render)", ep_render_org },
	{ R_VALUE, "publicNodeLabels value (flash_operator_config_parse)", ep_opconf_label_value },
};

TestSuite(names, .init = setup, .fini = teardown);

/* Every entry point of a rule gives the corpus entry's verdict for it. */
static void run_case(const char *s, unsigned int ok)
{
	for (size_t e = 0; e < sizeof(entry_points) / sizeof(entry_points[0]); e++) {
		const struct entry_point *ep = &entry_points[e];
		bool want = ok & (1u << ep->rule);

		cr_expect(ep->accepts(s) == want, "%s: \"%s\" should be %s as a %s", ep->name, show(s),
			  want ? "accepted" : "refused", rule_names[ep->rule]);
	}
}

Test(names, one_corpus_one_verdict_everywhere)
{
	for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
		char *s = case_text(&corpus[i]);

		run_case(s, corpus[i].ok);
		free(s);
	}
}

/* Subdomains and label keys at their limits (253-byte prefix + '/' +
 * 63-byte name = 317) and one byte past each. */
Test(names, limits_of_subdomains_and_keys)
{
	char *sub253 = sub_of_len(253), *sub254 = sub_of_len(254), *key = NULL, *key_long = NULL;

	ASSERT_STREQ(sub253 + 252, "a", "ends in a label");
	cr_assert(asprintf(&key, "%s/%063d", sub253, 0) > 0 && strlen(key) == 317);
	cr_assert(asprintf(&key_long, "%s/%063d", sub254, 0) > 0);
	run_case(sub253, C | S);
	run_case(sub254, C);
	run_case(key, K);
	run_case(key_long, 0);
	free(key_long);
	free(key);
	free(sub254);
	free(sub253);
}

/* The CRD's pattern for DNS-label fields says what libflash checks: the
 * generated FlashService schema validates a spec's region exactly as
 * flash_spec_parse() does, over the whole corpus. */
Test(names, crd_pattern_agrees_with_the_rule)
{
	struct flash_schema_set *set = NULL;
	char *crd = NULL;
	size_t len = 0;

	ASSERT_OK(flash_schema_set_new(&set), "schema set");
	ASSERT_OK(flash_render_crd(FLASH_CRD_FLASHSERVICE, FLASH_RENDER_JSON, &crd, &len), "CRD");
	ASSERT_OK(flash_schema_set_add_crd(set, crd, len, NULL), "add CRD");
	for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
		char *s = case_text(&corpus[i]);
		char *obj = jwrap("{\"apiVersion\":\"flash.heterocloud.io/v1alpha1\",\"kind\":\"FlashService\","
				  "\"metadata\":{\"name\":\"fs-a\"},\"spec\":{\"region\":",
				  s, ",\"image\":\"nginx:1\",\"cpu_millis\":100,\"memory_mib\":64}}");
		struct flash_diag *d = NULL;
		bool schema_ok;

		ASSERT_OK(flash_diag_new(&d), "diag");
		schema_ok = flash_schema_validate_object(set, obj, strlen(obj), d) == 0;
		cr_expect(schema_ok || flash_diag_errors(d) > 0, "\"%s\": refused without a diagnostic", show(s));
		flash_diag_free(d);

		cr_expect(schema_ok == ep_spec_region(s), "\"%s\": CRD schema says %s, flash_spec_parse says %s",
			  show(s), schema_ok ? "valid" : "invalid", schema_ok ? "invalid" : "valid");
		cr_expect(schema_ok == !!(corpus[i].ok & L), "\"%s\": CRD schema verdict %d", show(s), schema_ok);
		free(obj);
		free(s);
	}
	free(crd);
	flash_schema_set_free(set);
}

#define HEX64 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

/* One OCI digest rule in libflash: the renderer's image pinning and the
 * image module's blob paths give the same verdict on every digest. */
Test(names, one_digest_rule_for_render_and_image)
{
	static const struct {
		const char *digest;
		bool ok;
	} cases[] = {
		{ "sha256:" HEX64, true },
		{ "sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", false },
		{ "sha256:" HEX64 "0", false },
		{ "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a", false },
		{ "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ag", false },
		{ "sha512:" HEX64, false },
		{ "SHA256:" HEX64, false },
		{ "sha256;" HEX64, false },
		{ "sha256:", false },
		{ "", false },
	};
	static const char json[] = "{\"region\":\"r1\",\"image\":\"nginx:1\",\"cpu_millis\":100,\"memory_mib\":64}";
	struct flash_spec *spec = NULL;

	ASSERT_OK(flash_spec_parse(json, strlen(json), NULL, &spec, NULL), "spec");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FLASH_OPTS(flash_render_opts, opts, .name = "fs-a", .namespace_ = "ns", .organization_id = "org",
			   .image_digest = cases[i].digest);
		struct flash_render *rd = NULL;
		char *path = NULL;
		int r_render = flash_render(spec, config, &opts, &rd, NULL);
		int r_image = flash_image_blob_path("/store", cases[i].digest, &path);

		cr_expect_eq(r_render, cases[i].ok ? 0 : -FLASH_E_RENDER_NAME, "flash_render(image_digest \"%s\"): %d",
			     cases[i].digest, r_render);
		cr_expect_eq(r_image, cases[i].ok ? 0 : -EINVAL, "flash_image_blob_path(\"%s\"): %d", cases[i].digest,
			     r_image);
		flash_render_free(rd);
		free(path);
	}
	flash_spec_free(spec);
}

/* The service id rule: the operator's ids and flashctl's id-or-name test
 * share names_service_id_valid(). */
Test(names, service_id_rule)
{
	static const struct {
		const char *id;
		bool ok;
	} cases[] = {
		{ "fs-0123456789abcdef0123456789abcdef", true },
		{ "fs-00000000000000000000000000000000", true },
		{ "fs-0123456789ABCDEF0123456789abcdef", false },
		{ "fs-0123456789abcdef0123456789abcde", false },
		{ "fs-0123456789abcdef0123456789abcdef0", false },
		{ "fs-0123456789abcdef0123456789abcdeg", false },
		{ "fx-0123456789abcdef0123456789abcdef", false },
		{ "fs_0123456789abcdef0123456789abcdef", false },
		{ "FS-0123456789abcdef0123456789abcdef", false },
		{ "0123456789abcdef0123456789abcdef012", false },
		{ "fs-api", false },
		{ "fs-", false },
		{ "", false },
	};

	cr_assert_eq(strlen(cases[0].id), NAMES_SERVICE_ID_LEN);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(names_service_id_valid(cases[i].id), cases[i].ok, "\"%s\"", cases[i].id);
	cr_expect(!names_service_id_valid(NULL), "NULL");
}
