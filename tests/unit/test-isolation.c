/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash_render_isolation(): a spec's isolation lowered onto flowsdn's
 * tiered policy, loaded into a flowsdn policy database beside pods of the
 * same and of another organization, and every flow of SPEC section 3.4
 * asked of both the compiled entries and the simulator: declared ports
 * only, allowed and denied sources (deny wins), the node's probes, the
 * metadata, link-local, LAN, pod and owner-protected ranges, DNS to
 * exactly the workload DNS servers, the three egress modes and the
 * same-organization grant.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <flash/policy.h>
#include <flash/render.h>
#include <flash/spec.h>

#include "helpers.h"
#include "policy-helpers.h"

#define SPEC_HEAD                                                                                         \
	"{\"region\":\"heteronet-global\",\"image\":\"registry.example/echo:1\",\"replicas\":1,"         \
	"\"cpu_millis\":250,\"memory_mib\":128,\"ephemeral_storage_gib\":10,"                            \
	"\"ports\":[{\"name\":\"game\",\"protocol\":\"udp\",\"container_port\":7777},"                   \
	"{\"name\":\"web\",\"protocol\":\"tcp\",\"container_port\":8080}],"                              \
	"\"exposure\":{\"type\":\"public\",\"traffic_mode\":\"forwarded\","                              \
	"\"allowed_source_cidrs\":[\"203.0.113.0/24\"],\"denied_source_cidrs\":[\"203.0.113.128/25\"]},"
#define SPEC_TAIL ",\"env\":{},\"command\":[\"/echo\"],\"args\":[],\"metadata\":{}}"

static const char *const restricted =
	SPEC_HEAD "\"egress\":{\"mode\":\"restricted\",\"allow_same_organization\":%s,"
		  "\"allowed_destination_cidrs\":[\"198.51.100.10/32\"],\"denied_destination_cidrs\":[]}" SPEC_TAIL;

struct world {
	struct policy_test_db t;
	uint32_t web, peer, other, forged;
};

static struct flowsdn_addr A(const char *s)
{
	struct flowsdn_addr a;

	cr_assert(flowsdn_addr_parse(s, strlen(s), &a) == 0, "address %s", s);
	return a;
}

static struct flowsdn_prefix P(const char *s)
{
	struct flowsdn_prefix p;

	cr_assert(flowsdn_prefix_parse(s, strlen(s), NULL, &p) == 0, "prefix %s", s);
	return p;
}

static uint32_t add_pod(struct world *w, const char *ns, const char *name, const char *app, const char *org,
			const char *addr)
{
	struct flowsdn_policy_label labels[] = { { "app.kubernetes.io/name", app },
						 { "flash.heterocloud.io/organization", org } };
	struct flowsdn_addr a = A(addr);
	FLOWSDN_OPTS(flowsdn_policy_pod, pod, .namespace_name = ns, .name = name, .labels = labels, .n_labels = 2,
		     .addrs = &a, .n_addrs = 1);
	uint32_t id = 0;

	ASSERT_OK(flowsdn_policy_db_set_pod(w->t.db, &pod, &id), "pod");
	return id;
}

static int tier_of(const char *json)
{
	static const char *const words[] = { NULL, "allow", "deny", "exception", "protect" };
	char key[64];

	for (int i = 1; i <= 4; i++) {
		snprintf(key, sizeof(key), "\"flowsdn.io/tier\": \"%s\"", words[i]);
		if (strstr(json, key))
			return i;
	}
	cr_assert_fail("no tier annotation in %s", json);
	return 0;
}

/* Lowers @spec_json into a new world (the workload "fs-web" of
 * organization org-a at 10.244.0.5, a same-organization pod at
 * 10.244.0.6, another organization's at 10.244.0.7, and at 10.244.0.8 a
 * pod of that other organization's namespace that carries organization
 * a's label; namespaces labelled with their organization, as the
 * operator creates them). */
static void lower(struct world *w, const char *spec_json, const char *policy_json)
{
	struct flash_operator_config *config = NULL;
	struct flash_policy *policy = NULL;
	struct flash_spec *spec = NULL;
	struct flash_render *rd = NULL;
	struct flowsdn_prefix node[] = { P("192.168.1.5/32") };
	struct flowsdn_prefix dns[] = { P("192.168.1.1/32"), P("9.9.9.9/32") };
	FLASH_OPTS(flash_isolation_opts, o, .name = "fs-web", .namespace_ = "org-a", .organization_id = "a",
		   .node_addresses = node, .n_node_addresses = 1, .dns_addresses = dns, .n_dns_addresses = 2);
	static const char *const tiers[] = { "protect", "exception", "deny" };

	ASSERT_OK(flash_operator_config_default(&config), "config");
	ASSERT_OK(flash_spec_parse(spec_json, strlen(spec_json), NULL, &spec, NULL), "spec");
	if (policy_json) {
		ASSERT_OK(flash_policy_parse(policy_json, strlen(policy_json), &policy, NULL), "owner policy");
		o.policy = policy;
	}
	ASSERT_OK(flash_render_isolation(spec, config, &o, &rd, NULL), "lowering");
	cr_assert(flash_render_count(rd) == 4, "%zu objects", flash_render_count(rd));
	policy_test_db_new(&w->t, 0);
	{
		struct flowsdn_policy_label la = { "flash.heterocloud.io/organization", "a" };
		struct flowsdn_policy_label lb = { "flash.heterocloud.io/organization", "b" };

		ASSERT_OK(flowsdn_policy_db_set_namespace(w->t.db, "org-a", &la, 1), "namespace org-a");
		ASSERT_OK(flowsdn_policy_db_set_namespace(w->t.db, "org-b", &lb, 1), "namespace org-b");
	}
	w->web = add_pod(w, "org-a", "web-0", "fs-web", "a", "10.244.0.5");
	w->peer = add_pod(w, "org-a", "peer-0", "fs-peer", "a", "10.244.0.6");
	w->other = add_pod(w, "org-b", "other-0", "fs-other", "b", "10.244.0.7");
	w->forged = add_pod(w, "org-b", "forged-0", "fs-forged", "a", "10.244.0.8");
	for (size_t i = 0; i < 4; i++) {
		char *json = NULL, name[64];
		size_t len = 0;
		struct flowsdn_policy *p = NULL;
		int tier;

		cr_assert_str_eq(flash_render_kind(rd, i), "NetworkPolicy");
		ASSERT_OK(flash_render_object_json(rd, i, &json, &len), "json");
		tier = tier_of(json);
		snprintf(name, sizeof(name), i < 3 ? "\"name\": \"fs-web-%s\"" : "\"name\": \"fs-web\"%s", i < 3 ? tiers[i] : "");
		cr_assert(strstr(json, name), "object %zu is not %s: %s", i, name, json);
		cr_assert(tier == (i == 0 ? FLOWSDN_POLICY_TIER_PROTECT : i == 1 ? FLOWSDN_POLICY_TIER_EXCEPTION :
				   i == 2 ? FLOWSDN_POLICY_TIER_DENY : FLOWSDN_POLICY_TIER_ALLOW),
			  "object %zu tier %d", i, tier);
		{
			FLOWSDN_OPTS(flowsdn_policy_parse_opts, po, .tier = tier);
			int r = flowsdn_policy_parse(json, len, &po, &p, NULL);

			cr_assert(r == 0, "object %zu refused by flowsdn: %s\n%s", i, flowsdn_strerror(r), json);
		}
		ASSERT_OK(flowsdn_policy_db_apply(w->t.db, p), "apply");
		free(json);
	}
	ASSERT_OK(flowsdn_policy_db_compile(w->t.db, NULL), "compile");
	flash_render_free(rd);
	flash_spec_free(spec);
	flash_policy_free(policy);
	flash_operator_config_free(config);
}

/* Both the compiled entries and the simulator say @want. */
static void flow(struct world *w, int dir, const char *peer, uint8_t proto, uint16_t port, int want)
{
	struct flowsdn_addr a = A(peer);
	int vc = 0, vs = 0;

	ASSERT_OK(flowsdn_policy_db_lookup(w->t.db, w->web, dir, &a, proto, port, &vc), "lookup");
	ASSERT_OK(flowsdn_policy_db_simulate(w->t.db, w->web, dir, &a, proto, port, &vs), "simulate");
	cr_assert(vc == want && vs == want, "%s %s %u/%u: compiled %d, simulated %d, want %d",
		  dir == FLOWSDN_POLICY_INGRESS ? "from" : "to", peer, proto, port, vc, vs, want);
}

#define IN FLOWSDN_POLICY_INGRESS
#define OUT FLOWSDN_POLICY_EGRESS
#define OK FLOWSDN_POLICY_VERDICT_ALLOW
#define NO FLOWSDN_POLICY_VERDICT_DENY

static char *read_example(const char *name)
{
	const char *top = getenv("top_srcdir");
	char path[1024], *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/examples/%s", top ? top : "..", name);
	f = fopen(path, "re");
	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	return buf;
}

/* @tmpl with its one "%s" replaced by @arg. */
static char *spec_of(const char *tmpl, const char *arg)
{
	const char *at = strstr(tmpl, "%s");
	char *s = NULL;

	cr_assert(at && asprintf(&s, "%.*s%s%s", (int)(at - tmpl), tmpl, arg, at + 2) > 0);
	return s;
}

Test(isolation, inbound_declared_ports_from_allowed_sources_deny_wins)
{
	struct world w = { 0 };
	char *spec = spec_of(restricted, "false");

	lower(&w, spec, NULL);
	flow(&w, IN, "203.0.113.5", IPPROTO_UDP, 7777, OK);
	flow(&w, IN, "203.0.113.5", IPPROTO_TCP, 8080, OK);
	flow(&w, IN, "203.0.113.5", IPPROTO_UDP, 7778, NO);   /* undeclared port */
	flow(&w, IN, "203.0.113.5", IPPROTO_TCP, 7777, NO);   /* declared number, other protocol */
	flow(&w, IN, "203.0.113.200", IPPROTO_UDP, 7777, NO); /* denied inside allowed */
	flow(&w, IN, "198.51.100.7", IPPROTO_UDP, 7777, NO);  /* not allowed */
	flow(&w, IN, "10.1.2.3", IPPROTO_UDP, 7777, NO);      /* LAN */
	flow(&w, IN, "169.254.169.254", IPPROTO_UDP, 7777, NO);
	/* The node probes the declared ports and nothing else. */
	flow(&w, IN, "192.168.1.5", IPPROTO_UDP, 7777, OK);
	flow(&w, IN, "192.168.1.5", IPPROTO_TCP, 22, NO);
	policy_test_db_free(&w.t);
	free(spec);
}

Test(isolation, tenants_need_the_same_organization_grant)
{
	struct world w = { 0 };
	char *spec = spec_of(restricted, "false");

	lower(&w, spec, NULL);
	flow(&w, IN, "10.244.0.6", IPPROTO_UDP, 7777, NO);
	flow(&w, IN, "10.244.0.7", IPPROTO_UDP, 7777, NO);
	flow(&w, OUT, "10.244.0.6", IPPROTO_TCP, 80, NO);
	flow(&w, OUT, "10.244.0.7", IPPROTO_TCP, 80, NO);
	policy_test_db_free(&w.t);
	free(spec);

	spec = spec_of(restricted, "true");
	lower(&w, spec, NULL);
	flow(&w, IN, "10.244.0.6", IPPROTO_UDP, 7777, OK);
	flow(&w, IN, "10.244.0.6", IPPROTO_UDP, 7778, NO);
	flow(&w, IN, "10.244.0.7", IPPROTO_UDP, 7777, NO); /* another organization, still */
	/* Organization a's label on a pod of organization b's namespace
	 * opens nothing: the grant selects the namespace too. */
	flow(&w, IN, "10.244.0.8", IPPROTO_UDP, 7777, NO);
	flow(&w, OUT, "10.244.0.6", IPPROTO_TCP, 80, OK);
	flow(&w, OUT, "10.244.0.7", IPPROTO_TCP, 80, NO);
	flow(&w, OUT, "10.244.0.8", IPPROTO_TCP, 80, NO);
	policy_test_db_free(&w.t);
	free(spec);
}

Test(isolation, restricted_egress_and_dns_exactly)
{
	struct world w = { 0 };
	char *spec = spec_of(restricted, "false");

	lower(&w, spec, NULL);
	flow(&w, OUT, "198.51.100.10", IPPROTO_TCP, 443, OK);
	flow(&w, OUT, "198.51.100.11", IPPROTO_TCP, 443, NO);
	/* DNS: the LAN resolver and the public one, port 53 only. */
	flow(&w, OUT, "192.168.1.1", IPPROTO_UDP, 53, OK);
	flow(&w, OUT, "192.168.1.1", IPPROTO_TCP, 53, OK);
	flow(&w, OUT, "192.168.1.1", IPPROTO_TCP, 80, NO);
	flow(&w, OUT, "9.9.9.9", IPPROTO_UDP, 53, OK);
	flow(&w, OUT, "9.9.9.9", IPPROTO_TCP, 443, NO);
	flow(&w, OUT, "8.8.8.8", IPPROTO_UDP, 53, NO); /* not the workload DNS */
	flow(&w, OUT, "10.96.0.10", IPPROTO_UDP, 53, NO); /* not named by the node facts */
	flow(&w, OUT, "169.254.169.254", IPPROTO_TCP, 80, NO);
	flow(&w, OUT, "fd00:ec2::254", IPPROTO_TCP, 80, NO);
	flow(&w, OUT, "192.168.1.5", IPPROTO_TCP, 22, NO); /* the node */
	flow(&w, OUT, "192.168.1.5", IPPROTO_UDP, 7777, NO);
	policy_test_db_free(&w.t);
	free(spec);
}

Test(isolation, disabled_is_dns_only)
{
	struct world w = { 0 };
	char *spec = spec_of(SPEC_HEAD "\"egress\":{\"mode\":\"disabled\",\"allow_same_organization\":%s,"
				       "\"allowed_destination_cidrs\":[],\"denied_destination_cidrs\":[]}" SPEC_TAIL,
			     "false");

	lower(&w, spec, NULL);
	flow(&w, OUT, "198.51.100.10", IPPROTO_TCP, 443, NO);
	flow(&w, OUT, "1.1.1.1", IPPROTO_TCP, 443, NO);
	flow(&w, OUT, "192.168.1.1", IPPROTO_UDP, 53, OK);
	flow(&w, OUT, "9.9.9.9", IPPROTO_UDP, 53, OK);
	flow(&w, OUT, "9.9.9.9", IPPROTO_ICMP, 0, NO);
	policy_test_db_free(&w.t);
	free(spec);
}

Test(isolation, internet_is_public_destinations_minus_protected_and_denied)
{
	struct world w = { 0 };
	char *spec = spec_of(SPEC_HEAD "\"egress\":{\"mode\":\"internet\",\"allow_same_organization\":%s,"
				       "\"allowed_destination_cidrs\":[],\"denied_destination_cidrs\":[\"1.0.0.0/24\"]}" SPEC_TAIL,
			     "false");
	char *pol = read_example("owner-policy.json");

	lower(&w, spec, NULL);
	flow(&w, OUT, "1.1.1.1", IPPROTO_TCP, 443, OK);
	flow(&w, OUT, "2606:4700::1111", IPPROTO_TCP, 443, OK);
	flow(&w, OUT, "1.0.0.1", IPPROTO_TCP, 443, NO); /* denied destination */
	flow(&w, OUT, "10.0.0.1", IPPROTO_TCP, 443, NO);
	flow(&w, OUT, "172.16.0.1", IPPROTO_TCP, 443, NO);
	flow(&w, OUT, "fe80::1", IPPROTO_TCP, 443, NO);
	flow(&w, OUT, "169.254.169.254", IPPROTO_TCP, 80, NO);
	flow(&w, OUT, "192.168.1.5", IPPROTO_TCP, 22, NO);
	flow(&w, OUT, "100.64.1.1", IPPROTO_TCP, 443, NO); /* HeteroNetwork (the configuration's) */
	flow(&w, OUT, "192.0.2.1", IPPROTO_TCP, 443, OK);  /* no owner policy yet */
	policy_test_db_free(&w.t);

	lower(&w, spec, pol);
	flow(&w, OUT, "192.0.2.1", IPPROTO_TCP, 443, NO);
	flow(&w, OUT, "1.1.1.1", IPPROTO_TCP, 443, OK);
	policy_test_db_free(&w.t);
	free(pol);
	free(spec);
}

Test(isolation, refusals)
{
	struct flash_operator_config *config = NULL;
	struct flash_spec *spec = NULL;
	struct flash_render *rd = NULL;
	char *s = spec_of(restricted, "false");
	FLASH_OPTS(flash_isolation_opts, o, .name = "fs-web", .namespace_ = "Org A", .organization_id = "a");

	ASSERT_OK(flash_operator_config_default(&config), "config");
	ASSERT_OK(flash_spec_parse(s, strlen(s), NULL, &spec, NULL), "spec");
	ASSERT_ERR(flash_render_isolation(spec, config, &o, &rd, NULL), -FLASH_E_RENDER_NAME, "bad namespace");
	o.namespace_ = "org-a";
	o.n_node_addresses = 1;
	ASSERT_ERR(flash_render_isolation(spec, config, &o, &rd, NULL), -EINVAL, "count without array");
	o.n_node_addresses = 0;
	ASSERT_ERR(flash_render_isolation(NULL, config, &o, &rd, NULL), -EINVAL, "no spec");
	cr_assert(rd == NULL);
	ASSERT_OK(flash_render_isolation(spec, config, &o, &rd, NULL), "defaults: the configuration's DNS");
	{
		char *json = NULL;
		size_t len;

		ASSERT_OK(flash_render_object_json(rd, 1, &json, &len), "exception");
		cr_assert(strstr(json, "\"cidr\": \"10.96.0.10/32\""), "%s", json);
		free(json);
	}
	flash_render_free(rd);
	flash_spec_free(spec);
	flash_operator_config_free(config);
	free(s);
}
