/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for what flowsdn-agent's Kubernetes mode reads from
 * the API server (agent/k8s.c): the first byte picks the kind (Service,
 * EndpointSlice, NetworkPolicy, Namespace), the rest is one watch line
 * read by k8s_watch_parse_line() as the reflector reads it; its object
 * goes through agent_k8s_event() into a service model and a policy state
 * kept for the whole run.  Property: what an object's ADDED put into the
 * models, its DELETED takes back (no agent service and no policy is left);
 * every agent service the model holds was PUT for it; the same object
 * again PUTs nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/conf.h"
#include "../../agent/k8s.h"
#include "../../agent/ops.h"
#include "../../agent/policy.h"
#include "../../agent/services.h"
#include "../../common/k8s.h"
#include "fuzz-helpers.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];
static struct agent_services *svc;
static struct agent_policy *pol;
static const struct agent_ops no_ops = { 0 };

/* A property that does not hold: which one, then a crash for libFuzzer. */
#define check(ok)                                                                                \
	do {                                                                                     \
		if (!(ok)) {                                                                     \
			fprintf(stderr, "fuzz-agent-k8s.c:%d: %s does not hold\n", __LINE__, #ok); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

static void cleanup(void)
{
	agent_services_free(svc);
	agent_policy_free(pol);
	fuzz_tmpdir_remove(dir);
}

static void setup(void)
{
	char conf[512];
	struct agent_config *cfg = NULL;

	fuzz_tmpdir_make(dir, sizeof(dir), "fuzz-agent-k8s");
	snprintf(conf, sizeof(conf), "{\"state-dir\":\"%s\",\"datapath\":false,\"socket-lb-cgroup\":\"\"}", dir);
	check(agent_config_parse(conf, strlen(conf), &cfg, NULL) == 0);
	check(agent_services_new(cfg, &no_ops, NULL, NULL, &svc) == 0);
	check(agent_policy_new(dir, NULL, &pol) == 0);
	agent_config_free(cfg);
	atexit(cleanup);
}

static void send(struct agent_k8s *k, enum agent_k8s_kind kind, enum k8s_event_type type, const struct json_value *obj)
{
	struct k8s_event ev = { .type = type, .object = obj };

	check(agent_k8s_event(k, kind, &ev) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum agent_k8s_kind kinds[] = { AGENT_K8S_SERVICES, AGENT_K8S_ENDPOINTSLICES,
						     AGENT_K8S_NETWORKPOLICIES, AGENT_K8S_NAMESPACES };
	struct agent_k8s_opts o = { .sz = sizeof(o), .node_name = "node-a" };
	struct k8s_status st = { 0 };
	struct json_value *root = NULL;
	const struct json_value *obj;
	enum k8s_event_type type;
	enum agent_k8s_kind kind;
	struct agent_k8s *k = NULL;
	struct agent_k8s_stats a, b;
	char *list = NULL;

	if (!svc)
		setup();
	if (size < 2)
		return 0;
	kind = kinds[data[0] % 4];
	if (k8s_watch_parse_line((const char *)data + 1, size - 1, 0, &type, &root, &st) < 0 || type == 0) {
		json_free(root);
		k8s_status_clear(&st);
		return 0;
	}
	obj = json_get(root, "object");
	o.services = svc;
	o.policy = pol;
	check(agent_k8s_new(&o, &k) == 0);
	/* Both Service kinds listed (empty), so that services go out. */
	send(k, AGENT_K8S_SERVICES, K8S_EVENT_RELIST, NULL);
	send(k, AGENT_K8S_SERVICES, K8S_EVENT_SYNCED, NULL);
	send(k, AGENT_K8S_ENDPOINTSLICES, K8S_EVENT_RELIST, NULL);
	send(k, AGENT_K8S_ENDPOINTSLICES, K8S_EVENT_SYNCED, NULL);
	send(k, kind, K8S_EVENT_ADDED, obj);
	agent_k8s_get_stats(k, &a);
	if (getenv("FUZZ_AGENT_K8S_DEBUG"))
		fprintf(stderr, "after ADDED: %zu agent services, %llu PUT, %llu refused\n", agent_services_count(svc),
			(unsigned long long)a.svc_puts, (unsigned long long)a.svc_refused);
	check(agent_services_count(svc) == a.svc_puts);
	/* The same object again changes nothing. */
	send(k, kind, K8S_EVENT_MODIFIED, obj);
	agent_k8s_get_stats(k, &b);
	check(b.svc_puts == a.svc_puts && b.policy_puts == a.policy_puts && b.namespace_puts == a.namespace_puts);
	if (getenv("FUZZ_AGENT_K8S_DEBUG"))
		fprintf(stderr, "kind %d: %llu services, %llu policies, %llu namespaces\n", (int)kind,
			(unsigned long long)a.svc_puts, (unsigned long long)a.policy_puts,
			(unsigned long long)a.namespace_puts);
	send(k, kind, K8S_EVENT_DELETED, obj);
	check(agent_services_count(svc) == 0);
	check(agent_policy_get(pol, NULL, NULL, &list) == 0);
	check(list && !strcmp(list, "{\"items\":[]}"));
	free(list);
	agent_k8s_free(k);
	json_free(root);
	k8s_status_clear(&st);
	return 0;
}
