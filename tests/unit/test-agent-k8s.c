/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-agent's Kubernetes mode (agent/k8s.h) against the replaying
 * fake API server (tests/k8s-fake.h) and the recorded objects of a real
 * kube-apiserver (tests/data/k8s/exchanges): Services and EndpointSlices
 * into the service model (contents, changed-only PUTs, a 410 relist),
 * NetworkPolicies and Namespaces into the policy path, the node's pools
 * (podCIDRs and the fallback), route planning with conflicts and
 * pruning, and the Event and annotation bodies against the recorded
 * OpenAPI schemas.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <flash/diag.h>
#include <flash/render.h>
#include <flowsdn/common.h>
#include <flowsdn/ipam.h>

#include "../../agent/conf.h"
#include "../../agent/k8s.h"
#include "../../agent/ops.h"
#include "../../agent/policy.h"
#include "../../agent/services.h"
#include "../../common/k8s.h"
#include "diag.h"
#include "helpers.h"
#include "json.h"
#include "k8s-fake.h"
#include "k8s-recorded.h"
#include "util.h"

static char state_dir[64];
static const struct agent_ops no_ops = { 0 }; /* the service model only */

static void setup(void)
{
	snprintf(state_dir, sizeof(state_dir), "/tmp/test-agent-k8s-XXXXXX");
	cr_assert(mkdtemp(state_dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state_dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(agent_k8s, .init = setup, .fini = teardown);

static struct agent_services *services_start(void)
{
	char json[256];
	struct agent_config *c = NULL;
	struct agent_services *s = NULL;

	snprintf(json, sizeof(json), "{\"state-dir\":\"%s\",\"datapath\":false,\"socket-lb-cgroup\":\"\"}", state_dir);
	ASSERT_OK(agent_config_parse(json, strlen(json), &c, NULL), "config");
	ASSERT_OK(agent_services_new(c, &no_ops, NULL, NULL, &s), "services");
	agent_config_free(c);
	return s;
}

static char *svc_get(struct agent_services *s, const char *id)
{
	struct json_writer *w = json_writer_new(0);
	char *out = NULL;
	int r = agent_services_get(s, id, w);

	cr_assert(json_writer_finish(w, &out, NULL) == 0);
	if (r < 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* A list body of the given item texts. */
static char *list_body(const char *kind, const char *rv, const char *const *items, size_t n)
{
	size_t len = 256;
	char *b;

	for (size_t i = 0; i < n; i++)
		len += strlen(items[i]) + 1;
	b = malloc(len);
	cr_assert(b);
	snprintf(b, len, "{\"kind\":\"%s\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"%s\"},\"items\":[", kind,
		 rv);
	for (size_t i = 0; i < n; i++) {
		strcat(b, items[i]);
		if (i + 1 < n)
			strcat(b, ",");
	}
	strcat(b, "]}");
	return b;
}

static struct k8s_client *client_for(struct k8s_fake *f)
{
	struct k8s_config cfg = { .server = (char *)k8s_fake_url(f) };
	struct k8s_client_opts o = { .sz = sizeof(o), .max_attempts = 1, .backoff_ms = 1 };
	struct k8s_client *c = NULL;

	ASSERT_OK(k8s_client_new(&cfg, &o, &c), "client");
	return c;
}

static const char *const empty_stream[] = { NULL };

/* Services 52 (web: http/TCP 80, dns/UDP 53), 53 (web-np: NodePort),
 * 54 (web-local: affinity, internal Local), 55 (headless) and the
 * recorded list of every slice (60), then a 410 and a relist without
 * web-np. */
Test(agent_k8s, services_and_slices_through_the_fake_server)
{
	struct k8s_fake *f = NULL;
	struct agent_services *s = services_start();
	struct agent_k8s *k = NULL;
	struct agent_k8s_stats st;
	struct k8s_status status = { 0 };
	char *svcs[4], *list, *list2, *out, id[36];
	struct k8s_client *c;

	ASSERT_OK(k8s_fake_new(NULL, &f), "fake");
	c = client_for(f);
	ASSERT_OK(agent_k8s_new(&(struct agent_k8s_opts){ .sz = sizeof(struct agent_k8s_opts), .node_name = "node-a",
							  .services = s },
				&k),
		  "new");
	svcs[0] = k8s_test_exchange("52-svc-clusterip-create.json", "response.body");
	svcs[1] = k8s_test_exchange("53-svc-nodeport-create.json", "response.body");
	svcs[2] = k8s_test_exchange("54-svc-affinity-local-create.json", "response.body");
	svcs[3] = k8s_test_exchange("55-svc-headless-create.json", "response.body");
	list = list_body("ServiceList", "300", (const char *const *)svcs, 4);
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/services", .body = list }),
		  "push list");
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/services",
							     .events = empty_stream, .n_events = 0 }),
		  "push watch");
	/* Services first: nothing is PUT before the slices are listed. */
	ASSERT_OK(agent_k8s_sync(k, c, AGENT_K8S_SERVICES, 1, &status), "services sync");
	agent_k8s_get_stats(k, &st);
	cr_assert_eq(st.services, 4);
	cr_assert_eq(st.svc_puts, 0, "no service before its backends are known");
	/* The slices: the recorded LIST (60), then an empty watch stream. */
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET",
							     .path = "/apis/discovery.k8s.io/v1/endpointslices",
							     .exchange = "60" }),
		  "push slice list");
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET",
							     .path = "/apis/discovery.k8s.io/v1/endpointslices",
							     .events = empty_stream, .n_events = 0 }),
		  "push slice watch");
	ASSERT_OK(agent_k8s_sync(k, c, AGENT_K8S_ENDPOINTSLICES, 1, &status), "slices sync");
	cr_assert_eq(k8s_fake_unmatched(f), 0);
	agent_k8s_get_stats(k, &st);
	cr_assert(st.services_synced);
	/* web: 2 ports, web-np: 1, web-local: 1, headless: none. */
	cr_assert_eq(st.svc_puts, 4, "one PUT per (Service, port): %llu", (unsigned long long)st.svc_puts);
	cr_assert_eq(agent_services_count(s), 4);

	agent_k8s_service_id("2e74d6fc-204d-46ac-8a74-25f1d529ba43", "TCP", 80, id);
	out = svc_get(s, id);
	cr_assert(out, "web:80 is %s", id);
	cr_assert(strstr(out, "{\"type\":\"ClusterIP\",\"address\":\"10.96.4.14\",\"port\":80,\"protocol\":\"TCP\"}"), "%s",
		  out);
	/* Two slices (web-m2xg7, web-manual) list the same two pods: once each. */
	cr_assert(strstr(out, "{\"address\":\"10.244.1.7\",\"port\":8080,\"weight\":1,\"state\":\"active\",\"node\":\"local\""),
		  "%s", out);
	cr_assert(strstr(out, "{\"address\":\"10.244.2.9\",\"port\":8080,\"weight\":1,\"state\":\"active\",\"node\":\"node-b\""),
		  "%s", out);
	cr_assert_null(strstr(strstr(out, "10.244.2.9") + 1, "10.244.2.9"), "deduplicated: %s", out);
	free(out);
	agent_k8s_service_id("2e74d6fc-204d-46ac-8a74-25f1d529ba43", "UDP", 53, id);
	out = svc_get(s, id);
	cr_assert(out && strstr(out, "\"port\":53,\"protocol\":\"UDP\"") && strstr(out, "\"port\":5353"), "%s", out);
	free(out);
	{
		struct json_value *v = k8s_test_parse(svcs[2]);
		const char *uid = json_string_value(json_at(v, "metadata.uid"));

		agent_k8s_service_id(uid, "TCP", 80, id);
		json_free(v);
		out = svc_get(s, id);
		cr_assert(out && strstr(out, "\"sessionAffinity\":{\"type\":\"ClientIP\",\"timeoutSeconds\":10800}") &&
				  strstr(out, "\"internalTrafficPolicy\":\"Local\""),
			  "%s", out);
		free(out);
	}
	{
		struct json_value *v = k8s_test_parse(svcs[1]);
		const char *uid = json_string_value(json_at(v, "metadata.uid"));

		agent_k8s_service_id(uid, "TCP", 80, id);
		json_free(v);
		out = svc_get(s, id);
		cr_assert(out && strstr(out, "{\"type\":\"NodePort\",\"port\":30518,\"protocol\":\"TCP\"}"), "%s", out);
		free(out);
	}

	/* A 410 on the next watch: the relist lists web-np no more.  Its
	 * service goes, nothing else is PUT again. */
	{
		static const char *const gone[] = {
			"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
			"\"status\":\"Failure\",\"message\":\"too old resource version: 1 (300)\",\"reason\":\"Expired\",\"code\":410}}",
		};
		const char *kept[] = { svcs[0], svcs[2], svcs[3] };

		list2 = list_body("ServiceList", "310", kept, 3);
		k8s_fake_reset_requests(f);
		/* A restarted reflector lists everything again (unchanged:
		 * nothing PUT), then its watch meets the 410. */
		ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/services",
								     .body = list }),
			  "push list");
		ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/services",
								     .events = gone, .n_events = 1 }),
			  "push 410");
		ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/services",
								     .body = list2 }),
			  "push relist");
		ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/services",
								     .events = empty_stream, .n_events = 0 }),
			  "push watch");
		ASSERT_OK(agent_k8s_sync(k, c, AGENT_K8S_SERVICES, 2, &status), "relist");
		agent_k8s_get_stats(k, &st);
		cr_assert_eq(st.svc_puts, 4, "nothing PUT twice: %llu", (unsigned long long)st.svc_puts);
		cr_assert_eq(st.svc_deletes, 1, "web-np dropped");
		cr_assert_eq(agent_services_count(s), 3);
		cr_assert_eq(k8s_fake_pending(f), 0, "410, relist and watch all served");
	}

	/* One endpoint of web-local terminates (the recorded PATCH answer, 63,
	 * as the controller's slice of web-local). */
	{
		char *rec = k8s_test_exchange("63-eps-patch-terminating.json", "response.body");
		char *slice = k8s_test_edit(rec, "\"name\":\"web-local-manual\"", "\"name\":\"web-local-2p5dv\"");
		struct json_value *obj = k8s_test_parse(slice), *sv = k8s_test_parse(svcs[2]);
		struct k8s_event ev = { .type = K8S_EVENT_MODIFIED, .object = obj, .resource_version = "400" };

		ASSERT_OK(agent_k8s_event(k, AGENT_K8S_ENDPOINTSLICES, &ev), "modified");
		agent_k8s_get_stats(k, &st);
		cr_assert_eq(st.svc_puts, 5, "one PUT for the one change");
		agent_k8s_service_id(json_string_value(json_at(sv, "metadata.uid")), "TCP", 80, id);
		out = svc_get(s, id);
		cr_assert(out && strstr(out, "{\"address\":\"10.244.2.9\",\"port\":8080,\"weight\":1,\"state\":\"terminating\""),
			  "serving+terminating -> terminating: %s", out);
		free(out);
		/* The same event again: unchanged, not PUT. */
		ASSERT_OK(agent_k8s_event(k, AGENT_K8S_ENDPOINTSLICES, &ev), "again");
		agent_k8s_get_stats(k, &st);
		cr_assert_eq(st.svc_puts, 5);
		cr_assert_geq(st.svc_unchanged, 1);
		json_free(obj);
		json_free(sv);
		free(slice);
		free(rec);
	}
	/* A relist in which web-local's affinity timeout changed: its one
	 * PUT goes out at the list's end in a batch, as one snapshot (the
	 * journal is emptied by it). */
	{
		char *edited = k8s_test_edit(svcs[2], "\"timeoutSeconds\":10800", "\"timeoutSeconds\":600");
		const char *const texts[] = { svcs[0], edited, svcs[3] };
		struct k8s_event relist = { .type = K8S_EVENT_RELIST }, synced = { .type = K8S_EVENT_SYNCED };
		struct stat stj;
		char path[128];

		ASSERT_OK(agent_k8s_event(k, AGENT_K8S_SERVICES, &relist), "relist");
		for (size_t i = 0; i < 3; i++) {
			struct json_value *obj = k8s_test_parse(texts[i]);
			struct k8s_event ev = { .type = K8S_EVENT_ADDED, .object = obj };

			ASSERT_OK(agent_k8s_event(k, AGENT_K8S_SERVICES, &ev), "listed");
			json_free(obj);
		}
		agent_k8s_get_stats(k, &st);
		cr_assert_eq(st.svc_puts, 5, "nothing PUT while the list is under way");
		ASSERT_OK(agent_k8s_event(k, AGENT_K8S_SERVICES, &synced), "synced");
		agent_k8s_get_stats(k, &st);
		cr_assert_eq(st.svc_puts, 6, "the one change, at the list's end");
		snprintf(path, sizeof(path), "%s/services.journal", state_dir);
		cr_assert(stat(path, &stj) == 0 && stj.st_size == 0, "one snapshot, no journal record (%lld bytes)",
			  (long long)stj.st_size);
		free(edited);
	}
	/* web deleted: both of its services go. */
	{
		struct json_value *obj = k8s_test_parse(svcs[0]);
		struct k8s_event ev = { .type = K8S_EVENT_DELETED, .object = obj };

		ASSERT_OK(agent_k8s_event(k, AGENT_K8S_SERVICES, &ev), "deleted");
		cr_assert_eq(agent_services_count(s), 1);
		json_free(obj);
	}
	k8s_status_clear(&status);
	for (size_t i = 0; i < 4; i++)
		free(svcs[i]);
	free(list);
	free(list2);
	agent_k8s_free(k);
	k8s_client_free(c);
	k8s_fake_free(f);
	agent_services_free(s);
	/* What the agent saved: the first sync's snapshot and the journal
	 * records of the changes after it read back. */
	s = services_start();
	cr_assert_eq(agent_services_count(s), 1, "web-local alone survives a restart");
	out = svc_get(s, id);
	cr_assert(out && strstr(out, "\"state\":\"terminating\"") && strstr(out, "\"timeoutSeconds\":600"), "%s", out);
	free(out);
	agent_services_free(s);
}

/* The recorded LIST of NetworkPolicies (65) and namespaces with labels:
 * the policies land in the policy path; a relist without one removes it. */
Test(agent_k8s, policies_and_namespaces)
{
	struct agent_policy *p = NULL;
	struct agent_k8s *k = NULL;
	struct k8s_fake *f = NULL;
	struct k8s_client *c;
	struct k8s_status status = { 0 };
	struct agent_k8s_stats st;
	char *json = NULL;
	static const char *const ns_items[] = {
		"{\"metadata\":{\"name\":\"flowsdn-demo\",\"uid\":\"u1\",\"resourceVersion\":\"5\",\"labels\":{\"kubernetes.io/metadata.name\":\"flowsdn-demo\",\"team\":\"shop\"}}}",
		"{\"metadata\":{\"name\":\"flash-system\",\"uid\":\"u2\",\"resourceVersion\":\"6\",\"labels\":{\"kubernetes.io/metadata.name\":\"flash-system\"}}}",
	};
	char *nslist = list_body("NamespaceList", "7", ns_items, 2);

	ASSERT_OK(agent_policy_new(state_dir, NULL, &p), "policy");
	ASSERT_OK(k8s_fake_new(NULL, &f), "fake");
	c = client_for(f);
	ASSERT_OK(agent_k8s_new(&(struct agent_k8s_opts){ .sz = sizeof(struct agent_k8s_opts), .node_name = "node-a",
							  .policy = p },
				&k),
		  "new");
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/namespaces", .body = nslist }),
		  "ns list");
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/namespaces",
							     .events = empty_stream }),
		  "ns watch");
	ASSERT_OK(agent_k8s_sync(k, c, AGENT_K8S_NAMESPACES, 1, &status), "namespaces");
	ASSERT_OK(agent_policy_namespaces(p, &json), "namespaces json");
	cr_assert(strstr(json, "\"team\":\"shop\""), "namespace labels reach the policy path: %s", json);
	free(json);
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET",
							     .path = "/apis/networking.k8s.io/v1/networkpolicies",
							     .exchange = "65" }),
		  "np list");
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET",
							     .path = "/apis/networking.k8s.io/v1/networkpolicies",
							     .events = empty_stream }),
		  "np watch");
	ASSERT_OK(agent_k8s_sync(k, c, AGENT_K8S_NETWORKPOLICIES, 1, &status), "policies (recorded 65)");
	cr_assert_eq(k8s_fake_unmatched(f), 0);
	agent_k8s_get_stats(k, &st);
	cr_assert_eq(st.policy_puts, 2, "default-deny and web-ingress: %llu", (unsigned long long)st.policy_puts);
	ASSERT_OK(agent_policy_get(p, "flowsdn-demo", "web-ingress", &json), "web-ingress stored");
	cr_assert(strstr(json, "192.0.2.128/25"), "%s", json);
	free(json);
	/* A relist whose list holds only web-ingress. */
	{
		char *full = k8s_test_exchange("65-netpol-list-all.json", "response.body");
		struct json_value *v = k8s_test_parse(full);
		struct json_writer *w = json_writer_new(0);
		char *item = NULL, *l2;

		jw_value(w, json_at(v, "items")->u.array.items[1]);
		cr_assert(json_writer_finish(w, &item, NULL) == 0);
		l2 = list_body("NetworkPolicyList", "290", (const char *const *)&item, 1);
		ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET",
								     .path = "/apis/networking.k8s.io/v1/networkpolicies",
								     .body = l2 }),
			  "relist");
		ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET",
								     .path = "/apis/networking.k8s.io/v1/networkpolicies",
								     .events = empty_stream }),
			  "watch");
		ASSERT_OK(agent_k8s_sync(k, c, AGENT_K8S_NETWORKPOLICIES, 1, &status), "relist");
		agent_k8s_get_stats(k, &st);
		cr_assert_eq(st.policy_puts, 2, "web-ingress unchanged: not PUT again");
		cr_assert_eq(st.policy_deletes, 1, "default-deny dropped");
		cr_assert_eq(agent_policy_get(p, "flash-system", "default-deny", &json), -FLOWSDN_E_POLICY_NOT_FOUND);
		free(item);
		free(l2);
		free(full);
		json_free(v);
	}
	k8s_status_clear(&status);
	free(nslist);
	agent_k8s_free(k);
	k8s_client_free(c);
	k8s_fake_free(f);
	agent_policy_free(p);
}

Test(agent_k8s, node_pools_and_fallback)
{
	char *node = k8s_test_exchange("41-node-get.json", "response.body");
	char *bare = k8s_test_edit(node, "\"podCIDR\":\"10.244.1.0/24\",\"podCIDRs\":[\"10.244.1.0/24\",\"fd00:10:244:1::/64\"],", "");
	char *none = k8s_test_edit(bare, "\"type\":\"InternalIP\"", "\"type\":\"ExternalIP\"");
	struct json_value *v = k8s_test_parse(node), *b = k8s_test_parse(bare), *n = k8s_test_parse(none);
	struct flowsdn_prefix pools[4];
	char buf[64], why[128];
	size_t np = 0;
	bool fb = true;

	ASSERT_OK(agent_k8s_node_pools(v, pools, 4, &np, &fb, why, sizeof(why)), "podCIDRs");
	cr_assert_eq(np, 2);
	cr_assert(!fb);
	flowsdn_prefix_format(&pools[0], buf, sizeof(buf));
	ASSERT_STREQ(buf, "10.244.1.0/24", "IPv4 pool");
	flowsdn_prefix_format(&pools[1], buf, sizeof(buf));
	ASSERT_STREQ(buf, "fd00:10:244:1::/64", "IPv6 pool");
	ASSERT_OK(agent_k8s_node_pools(b, pools, 4, &np, &fb, why, sizeof(why)), "fallback");
	cr_assert_eq(np, 1);
	cr_assert(fb);
	flowsdn_prefix_format(&pools[0], buf, sizeof(buf));
	ASSERT_STREQ(buf, "10.11.0.0/16", "10.<last byte of 192.0.2.11>.0.0/16");
	cr_assert_eq(agent_k8s_node_pools(n, pools, 4, &np, &fb, why, sizeof(why)), -ENOENT);
	cr_assert(strstr(why, "InternalIP"), "%s", why);
	json_free(v);
	json_free(b);
	json_free(n);
	free(node);
	free(bare);
	free(none);
}

/* ------------------------------------------------------------ routes */

struct fake_routes {
	struct flowsdn_prefix dst[16];
	struct flowsdn_addr gw[16];
	bool ours[16];
	size_t n;
	unsigned int adds, dels;
};

static int fr_list(void *ctx, struct flowsdn_prefix **rd, struct flowsdn_addr **rg, bool **ro, size_t *rn)
{
	struct fake_routes *f = ctx;

	*rd = calloc(f->n + 1, sizeof(**rd));
	*rg = calloc(f->n + 1, sizeof(**rg));
	*ro = calloc(f->n + 1, sizeof(**ro));
	memcpy(*rd, f->dst, f->n * sizeof(**rd));
	memcpy(*rg, f->gw, f->n * sizeof(**rg));
	memcpy(*ro, f->ours, f->n * sizeof(**ro));
	*rn = f->n;
	return 0;
}

static int fr_apply(void *ctx, bool add, const struct flowsdn_prefix *dst, const struct flowsdn_addr *gw)
{
	struct fake_routes *f = ctx;

	for (size_t i = 0; i < f->n; i++)
		if (f->dst[i].len == dst->len && flowsdn_addr_equal(&f->dst[i].addr, &dst->addr)) {
			if (!f->ours[i])
				return -EEXIST;
			if (add) {
				f->gw[i] = *gw;
				f->adds++;
			} else {
				f->dst[i] = f->dst[--f->n];
				f->gw[i] = f->gw[f->n];
				f->ours[i] = f->ours[f->n];
				f->dels++;
			}
			return 0;
		}
	if (!add)
		return 0;
	cr_assert(f->n < 16);
	f->dst[f->n] = *dst;
	f->gw[f->n] = *gw;
	f->ours[f->n++] = true;
	f->adds++;
	return 0;
}

static const struct agent_k8s_route_ops fake_route_ops = { .list = fr_list, .apply = fr_apply };

static void node_event(struct agent_k8s *k, enum k8s_event_type type, const char *text)
{
	struct json_value *v = k8s_test_parse(text);
	struct k8s_event ev = { .type = type, .object = v };

	ASSERT_OK(agent_k8s_event(k, AGENT_K8S_NODES, &ev), "node event");
	json_free(v);
}

Test(agent_k8s, routes_planned_with_conflicts_and_pruned)
{
	struct fake_routes fr = { 0 };
	struct flowsdn_prefix pools[2];
	struct agent_k8s *k = NULL;
	char *a = k8s_test_exchange("41-node-get.json", "response.body");
	char *b = k8s_test_exchange("40-node-create-b.json", "response.body");
	/* node-c claims a CIDR inside our pool; node-d one a foreign route holds. */
	char *c1 = k8s_test_edit_all(b, "node-b", "node-c");
	char *c = k8s_test_edit_all(c1, "10.244.2.0/24", "10.244.1.128/25");
	char *d1 = k8s_test_edit_all(b, "node-b", "node-d");
	char *d2 = k8s_test_edit_all(d1, "10.244.2.0/24", "10.244.4.0/24");
	char *d = k8s_test_edit_all(d2, "fd00:10:244:2::/64", "fd00:10:244:4::/64");
	char *json = NULL;
	struct k8s_event relist = { .type = K8S_EVENT_RELIST }, synced = { .type = K8S_EVENT_SYNCED };

	ASSERT_OK(flowsdn_prefix_parse("10.244.1.0/24", 13, NULL, &pools[0]), "pool");
	ASSERT_OK(flowsdn_prefix_parse("fd00:10:244:1::/64", 18, NULL, &pools[1]), "pool6");
	/* A foreign route to node-d's CIDR, and a stale one of ours to a node gone. */
	ASSERT_OK(flowsdn_prefix_parse("10.244.4.0/24", 13, NULL, &fr.dst[0]), "foreign");
	ASSERT_OK(flowsdn_addr_parse("198.51.100.1", 12, &fr.gw[0]), "gw");
	ASSERT_OK(flowsdn_prefix_parse("10.244.9.0/24", 13, NULL, &fr.dst[1]), "stale");
	ASSERT_OK(flowsdn_addr_parse("192.0.2.19", 10, &fr.gw[1]), "gw");
	fr.ours[1] = true;
	fr.n = 2;
	ASSERT_OK(agent_k8s_new(&(struct agent_k8s_opts){ .sz = sizeof(struct agent_k8s_opts), .node_name = "node-a",
							  .route_ops = &fake_route_ops, .route_ctx = &fr, .pools = pools,
							  .n_pools = 2 },
				&k),
		  "new");
	ASSERT_OK(agent_k8s_event(k, AGENT_K8S_NODES, &relist), "relist");
	node_event(k, K8S_EVENT_ADDED, a);
	node_event(k, K8S_EVENT_ADDED, b);
	node_event(k, K8S_EVENT_ADDED, c);
	node_event(k, K8S_EVENT_ADDED, d);
	ASSERT_OK(agent_k8s_event(k, AGENT_K8S_NODES, &synced), "synced");
	ASSERT_OK(agent_k8s_routes_json(k, &json), "routes");
	cr_assert(strstr(json, "{\"node\":\"node-b\",\"destination\":\"10.244.2.0/24\",\"gateway\":\"192.0.2.12\",\"state\":\"installed\"}"),
		  "%s", json);
	cr_assert(strstr(json, "{\"node\":\"node-c\",\"destination\":\"10.244.1.128/25\",\"gateway\":\"192.0.2.12\",\"state\":\"conflict\",\"reason\":\"overlaps this node's pool 10.244.1.0/24\"}"),
		  "%s", json);
	cr_assert(strstr(json, "\"destination\":\"10.244.4.0/24\",\"gateway\":\"192.0.2.12\",\"state\":\"conflict\",\"reason\":\"a route to 10.244.4.0/24 exists that is not flowsdn's\""),
		  "%s", json);
	cr_assert(strstr(json, "\"destination\":\"fd00:10:244:2::/64\",\"gateway\":null,\"state\":\"conflict\""),
		  "no IPv6 InternalIP: %s", json);
	cr_assert_null(strstr(json, "node-a\",\"destination"), "no route to ourselves: %s", json);
	free(json);
	/* Installed: node-b's IPv4 route; the stale one of ours pruned; the foreign one kept. */
	cr_assert_eq(fr.adds, 1);
	cr_assert_eq(fr.dels, 1, "the route of a node gone is pruned");
	cr_assert_eq(fr.n, 2);
	cr_assert(!fr.ours[0], "the foreign route stays");
	/* node-b leaves: its route goes. */
	node_event(k, K8S_EVENT_DELETED, b);
	cr_assert_eq(fr.dels, 2);
	cr_assert_eq(fr.n, 1);
	ASSERT_OK(agent_k8s_routes_json(k, &json), "routes");
	cr_assert_null(strstr(json, "node-b"), "%s", json);
	free(json);
	agent_k8s_free(k);
	free(a);
	free(b);
	free(c1);
	free(c);
	free(d1);
	free(d2);
	free(d);
}

/* ------------------------------------------------------------ podCIDR changes */

struct pool_hook {
	unsigned int calls;
	struct flowsdn_prefix last[4];
	size_t n_last;
	struct flowsdn_prefix held[4];  /* what the IPAM holds: the new pools, then the draining */
	size_t n_held;
	int fail;
};

/* The IPAM's side (agent_core_set_pools()): takes the new pools and keeps
 * each old one that is not among them as draining (addresses in use). */
static int hook_set_pools(void *ctx, const struct flowsdn_prefix *pools, size_t n, struct flowsdn_prefix *ret, size_t max,
			  size_t *ret_n, char *why, size_t why_size)
{
	struct pool_hook *h = ctx;
	struct flowsdn_prefix next[4];
	size_t nn = 0;

	h->calls++;
	memcpy(h->last, pools, n * sizeof(*pools));
	h->n_last = n;
	if (h->fail) {
		snprintf(why, why_size, "pool overlaps a pool still in use");
		return h->fail;
	}
	for (size_t i = 0; i < n; i++)
		next[nn++] = pools[i];
	for (size_t i = 0; i < h->n_held; i++) {
		bool kept = false;

		for (size_t j = 0; j < n; j++)
			kept = kept || flowsdn_prefix_compare(&pools[j], &h->held[i]) == 0;
		if (!kept)
			next[nn++] = h->held[i];
	}
	memcpy(h->held, next, nn * sizeof(*next));
	h->n_held = nn;
	cr_assert(max >= nn);
	memcpy(ret, next, nn * sizeof(*next));
	*ret_n = nn;
	return 0;
}

static size_t pod_cidr_events(struct k8s_fake *f, const char *needle)
{
	size_t n = 0, total = k8s_fake_requests(f);

	for (size_t i = 0; i < total; i++) {
		struct k8s_fake_request r;

		ASSERT_OK(k8s_fake_request_get(f, i, &r), "request");
		if (!strcmp(r.method, "POST") && strstr(r.path, "/events") && r.body &&
		    strstr(r.body, "PodCIDRSelected") && (!needle || strstr(r.body, needle)))
			n++;
		k8s_fake_request_clear(&r);
	}
	return n;
}

/* The cluster gives this node other podCIDRs after the agent started: the
 * IPAM gets the new pools (the old ones drain: the hook's side, tested in
 * test-ipam), the routes are checked against every pool still held (the
 * draining one too), and PodCIDRSelected is sent again naming both; the
 * same Node again changes nothing; a refusal is a Warning Event and the
 * pools stay. */
Test(agent_k8s, pod_cidr_change_after_start_updates_the_pools)
{
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .accept_writes = true };
	struct k8s_fake *f = NULL;
	struct k8s_client *w;
	struct fake_routes fr = { 0 };
	struct pool_hook hook = { 0 };
	struct agent_k8s *k = NULL;
	struct agent_k8s_stats st;
	char *a = k8s_test_exchange("41-node-get.json", "response.body");
	char *a2 = k8s_test_edit_all(a, "10.244.1.0/24", "10.244.7.0/24");
	char *a3 = k8s_test_edit_all(a, "10.244.1.0/24", "10.244.8.0/24");
	char *b = k8s_test_exchange("40-node-create-b.json", "response.body");
	/* node-c claims a CIDR inside our old pool: a conflict while it drains. */
	char *c1 = k8s_test_edit_all(b, "node-b", "node-c");
	char *c = k8s_test_edit_all(c1, "10.244.2.0/24", "10.244.1.128/25");
	char *json = NULL, buf[64];
	struct k8s_event relist = { .type = K8S_EVENT_RELIST }, synced = { .type = K8S_EVENT_SYNCED };

	/* As agent_k8s_read_node() gives them at start: the IPv6 /64 as its
	 * first /108 (IPAM's bound). */
	hook.n_held = 2;
	ASSERT_OK(flowsdn_prefix_parse("10.244.1.0/24", 13, NULL, &hook.held[0]), "pool");
	ASSERT_OK(flowsdn_prefix_parse("fd00:10:244:1::/108", 19, NULL, &hook.held[1]), "pool6");
	ASSERT_OK(k8s_fake_new(&fo, &f), "fake");
	w = client_for(f);
	ASSERT_OK(agent_k8s_new(&(struct agent_k8s_opts){ .sz = sizeof(struct agent_k8s_opts), .node_name = "node-a",
							  .route_ops = &fake_route_ops, .route_ctx = &fr, .pools = hook.held,
							  .n_pools = 2, .writer = w, .set_pools = hook_set_pools,
							  .set_pools_ctx = &hook },
				&k),
		  "new");
	ASSERT_OK(agent_k8s_event(k, AGENT_K8S_NODES, &relist), "relist");
	node_event(k, K8S_EVENT_ADDED, a);
	node_event(k, K8S_EVENT_ADDED, c);
	ASSERT_OK(agent_k8s_event(k, AGENT_K8S_NODES, &synced), "synced");
	cr_assert_eq(hook.calls, 0, "the pools it started with (the /64 is its /108)");
	cr_assert_eq(pod_cidr_events(f, NULL), 1, "PodCIDRSelected once at start");

	/* The podCIDR changes. */
	node_event(k, K8S_EVENT_MODIFIED, a2);
	cr_assert_eq(hook.calls, 1, "the IPAM got the new pools");
	cr_assert_eq(hook.n_last, 2);
	flowsdn_prefix_format(&hook.last[0], buf, sizeof(buf));
	ASSERT_STREQ(buf, "10.244.7.0/24", "the new IPv4 pool");
	flowsdn_prefix_format(&hook.last[1], buf, sizeof(buf));
	ASSERT_STREQ(buf, "fd00:10:244:1::/108", "the IPv6 one as the IPAM can take it");
	cr_assert_eq(pod_cidr_events(f, NULL), 2, "PodCIDRSelected again");
	cr_assert_eq(pod_cidr_events(f, "10.244.7.0/24"), 1, "naming the new pool");
	cr_assert_eq(pod_cidr_events(f, "draining (addresses in use kept until released) 10.244.1.0/24"), 1,
		     "and the draining one");
	ASSERT_OK(agent_k8s_routes_json(k, &json), "routes");
	cr_assert(strstr(json, "\"pools\":[\"10.244.7.0/24\",\"fd00:10:244:1::/108\",\"10.244.1.0/24\"]"), "%s", json);
	cr_assert(strstr(json, "\"destination\":\"10.244.1.128/25\",\"gateway\":\"192.0.2.12\",\"state\":\"conflict\","
			 "\"reason\":\"overlaps this node's pool 10.244.1.0/24\""),
		  "the draining pool is still ours: %s", json);
	free(json);

	/* The same Node again: nothing. */
	node_event(k, K8S_EVENT_MODIFIED, a2);
	cr_assert_eq(hook.calls, 1);
	cr_assert_eq(pod_cidr_events(f, NULL), 2);

	/* A change the IPAM refuses: a Warning, the pools stay. */
	hook.fail = -FLOWSDN_E_IPAM_POOL_OVERLAP;
	node_event(k, K8S_EVENT_MODIFIED, a3);
	cr_assert_eq(hook.calls, 2);
	cr_assert_eq(pod_cidr_events(f, "not applied: pool overlaps a pool still in use"), 1);
	ASSERT_OK(agent_k8s_routes_json(k, &json), "routes");
	cr_assert(strstr(json, "\"10.244.7.0/24\"") && !strstr(json, "10.244.8.0/24\""), "%s", json);
	free(json);
	agent_k8s_get_stats(k, &st);
	agent_k8s_free(k);
	k8s_client_free(w);
	k8s_fake_free(f);
	free(a);
	free(a2);
	free(a3);
	free(b);
	free(c1);
	free(c);
}

/* ------------------------------------------------------------ bodies */

Test(agent_k8s, event_and_annotation_bodies_are_schema_valid)
{
	struct flash_schema_set *set = render_test_schema_set(true);
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	struct flowsdn_addr addrs[2], gws[2];
	unsigned int plens[2] = { 24, 64 };
	char *ev = NULL, *patch = NULL, *value = NULL, *rec;
	struct json_value *pv, *rv;

	ASSERT_OK(agent_k8s_event_body("node-a", "Pod", "flowsdn-demo", "web-2", "0ccbf5e1-abb5-49d6-9b43-58bbbbc6776e",
				       "Normal", "EndpointCreated", "Created", "endpoint 10.244.1.7 created", &ev),
		  "pod event");
	{
		int vr = flash_schema_validate_object(set, ev, strlen(ev), d);

		cr_assert(vr == 0, "%s: %s %s", ev, diag_path(d), diag_message(d));
	}
	cr_assert(strstr(ev, "\"reportingController\":\"flowsdn.io/agent\"") && strstr(ev, "\"reportingInstance\":\"node-a\""),
		  "%s", ev);
	free(ev);
	ASSERT_OK(agent_k8s_event_body("node-a", "Node", NULL, "node-a", NULL, "Normal", "PodCIDRSelected", "Selected",
				       "pools 10.244.1.0/24", &ev),
		  "node event");
	{
		int vr = flash_schema_validate_object(set, ev, strlen(ev), d);

		cr_assert(vr == 0, "%s: %s %s", ev, diag_path(d), diag_message(d));
	}
	cr_assert(strstr(ev, "\"namespace\":\"default\""), "%s", ev);
	free(ev);
	ASSERT_OK(agent_k8s_event_body("node-a", "Pod", "flowsdn-demo", "web-9", NULL, "Warning", "IPAllocationFailed",
				       "Allocate", "pools full", &ev),
		  "failure event");
	{
		int vr = flash_schema_validate_object(set, ev, strlen(ev), d);

		cr_assert(vr == 0, "%s: %s %s", ev, diag_path(d), diag_message(d));
	}
	free(ev);
	/* The annotation as the recorded strategic merge (75) carries it. */
	ASSERT_OK(flowsdn_addr_parse("10.244.1.7", 10, &addrs[0]), "a");
	ASSERT_OK(flowsdn_addr_parse("fd00:10:244:1::7", 16, &addrs[1]), "a6");
	ASSERT_OK(flowsdn_addr_parse("10.244.1.1", 10, &gws[0]), "g");
	ASSERT_OK(flowsdn_addr_parse("fd00:10:244:1::1", 16, &gws[1]), "g6");
	ASSERT_OK(agent_k8s_pod_networks_patch("eth0", addrs, plens, gws, 2, &patch, &value), "patch");
	rec = k8s_test_exchange("75-pod-annotate-strategic.json", "request.body");
	pv = k8s_test_parse(patch);
	rv = k8s_test_parse(rec);
	cr_assert(json_equal(pv, rv), "ours %s\nrecorded %s", patch, rec);
	cr_assert(value && value[0] == '[', "%s", value);
	json_free(pv);
	json_free(rv);
	free(rec);
	free(patch);
	free(value);
	flash_schema_set_free(set);
}

Test(agent_k8s, service_ids_are_stable_and_distinct)
{
	char a[36], b[36], c[36], d[36];

	agent_k8s_service_id("2e74d6fc-204d-46ac-8a74-25f1d529ba43", "TCP", 80, a);
	agent_k8s_service_id("2e74d6fc-204d-46ac-8a74-25f1d529ba43", "TCP", 80, b);
	agent_k8s_service_id("2e74d6fc-204d-46ac-8a74-25f1d529ba43", "UDP", 80, c);
	agent_k8s_service_id("2e74d6fc-204d-46ac-8a74-25f1d529ba43", "TCP", 81, d);
	ASSERT_STREQ(a, b, "stable");
	cr_assert_eq(strlen(a), 35);
	cr_assert_eq(strncmp(a, "fs-", 3), 0);
	cr_assert(strcmp(a, c) && strcmp(a, d) && strcmp(c, d), "%s %s %s", a, c, d);
	/* A uid far longer than a UUID (fuzz-agent-k8s found two ports of
	 * one such Service on one id when the uid was cut at 320 bytes). */
	char uid[1024];

	memset(uid, 'M', sizeof(uid) - 1);
	uid[sizeof(uid) - 1] = '\0';
	agent_k8s_service_id(uid, "TCP", 80, a);
	agent_k8s_service_id(uid, "TCP", 53, b);
	agent_k8s_service_id(uid, "UDP", 80, c);
	cr_assert(strcmp(a, b) && strcmp(a, c) && strcmp(b, c), "%s %s %s", a, b, c);
	/* the parts are length-prefixed: moving a byte between them changes the id */
	agent_k8s_service_id("ab", "TCP", 80, a);
	agent_k8s_service_id("a", "bTCP", 80, b);
	cr_assert(strcmp(a, b), "%s", a);
}

/* A watch whose list is refused (403: the agent's RBAC not there yet)
 * lists again later rather than stopping for good, and agent_k8s_stop()
 * wakes it from that wait at once. */
Test(agent_k8s, refused_list_is_retried_and_stop_is_prompt)
{
	struct agent_policy *p = NULL;
	struct agent_k8s *k = NULL;
	struct k8s_fake *f = NULL;
	struct k8s_config cfg = { 0 };
	char *json = NULL;
	static const char *const ns_items[] = {
		"{\"metadata\":{\"name\":\"flowsdn-demo\",\"uid\":\"u1\",\"resourceVersion\":\"5\",\"labels\":{\"team\":\"shop\"}}}",
	};
	char *nslist = list_body("NamespaceList", "7", ns_items, 1);
	bool seen = false;
	int64_t t0;

	ASSERT_OK(agent_policy_new(state_dir, NULL, &p), "policy");
	ASSERT_OK(k8s_fake_new(NULL, &f), "fake");
	cfg.server = (char *)k8s_fake_url(f);
	ASSERT_OK(agent_k8s_new(&(struct agent_k8s_opts){ .sz = sizeof(struct agent_k8s_opts), .node_name = "node-a",
							  .policy = p },
				&k),
		  "new");
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/namespaces", .exchange = "30" }),
		  "403 first");
	ASSERT_OK(k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/namespaces", .body = nslist }),
		  "then the list");
	ASSERT_OK(agent_k8s_start(k, &cfg), "start");
	for (int i = 0; i < 100 && !seen; i++) {
		struct timespec ts = { .tv_nsec = 50 * 1000000L };

		nanosleep(&ts, NULL);
		ASSERT_OK(agent_policy_namespaces(p, &json), "namespaces json");
		seen = strstr(json, "\"team\":\"shop\"") != NULL;
		free(json);
	}
	cr_assert(seen, "the namespaces were never listed again after the 403");
	t0 = util_mono_ms();
	agent_k8s_stop(k);
	cr_assert(util_mono_ms() - t0 < 1000, "stop took %lld ms", (long long)(util_mono_ms() - t0));
	agent_k8s_free(k);
	agent_policy_free(p);
	k8s_fake_free(f);
	free(nslist);
}
