/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The RBAC of deploy/kubernetes/: every Role and ClusterRole in the
 * checked-in manifests grants exactly the verbs of the table below, each
 * with the reason it is there (the API calls flash-operator and
 * flowsdn-agent make); nothing is a wildcard, no Secret is readable, and
 * every RBAC object validates against the recorded rbac_v1 schema. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <flash/render.h>

#include "helpers.h"
#include "json.h"
#include "render-test.h"

struct grant {
	const char *role;     /* "ClusterRole/flash-operator" */
	const char *group;    /* "" for the core group */
	const char *resource;
	const char *verb;
	const char *names;    /* resourceNames joined by ",", NULL: none */
	const char *why;
};

#define OP "ClusterRole/flash-operator"
#define OPNS "Role/flash-operator"
#define AG "ClusterRole/flowsdn-agent"
#define SB "Role/flash-operator-sandbox"
#define CRDS "flashservices.flash.heterocloud.io,flashusagerecords.flash.heterocloud.io"
#define FG "flash.heterocloud.io"

static const struct grant table[] = {
	{ OP, "apiextensions.k8s.io", "customresourcedefinitions", "create", NULL,
	  "first server-side apply of the CRDs is a create (403 without it); create takes no resourceNames" },
	{ OP, "apiextensions.k8s.io", "customresourcedefinitions", "get", CRDS, "waits until the CRDs are Established" },
	{ OP, "apiextensions.k8s.io", "customresourcedefinitions", "patch", CRDS, "server-side apply of its own CRDs" },
	{ OP, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "create", NULL,
	  "first apply of its webhook configuration" },
	{ OP, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "get", "flash-operator",
	  "reads its webhook configuration back" },
	{ OP, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "patch", "flash-operator",
	  "server-side apply of its webhook configuration (caBundle rotation)" },
	{ OP, FG, "flashservices", "get", NULL, "reads one FlashService (provider API GET)" },
	{ OP, FG, "flashservices", "list", NULL, "initial list of the watch" },
	{ OP, FG, "flashservices", "watch", NULL, "reconciles on every change" },
	{ OP, FG, "flashservices", "create", NULL, "provider API POST becomes a FlashService create" },
	{ OP, FG, "flashservices", "patch", NULL, "provider API updates and the finalizer (apply)" },
	{ OP, FG, "flashservices", "delete", NULL, "provider API DELETE" },
	{ OP, FG, "flashservices/status", "patch", NULL, "conditions and observedGeneration via /status" },
	{ OP, FG, "flashservices/finalizers", "update", NULL,
	  "ownerReferences with blockOwnerDeletion (OwnerReferencesPermissionEnforcement)" },
	{ OP, FG, "flashusagerecords", "get", NULL, "reads the week's record" },
	{ OP, FG, "flashusagerecords", "list", NULL, "initial list of the records" },
	{ OP, FG, "flashusagerecords", "watch", NULL, "keeps the records cache" },
	{ OP, FG, "flashusagerecords", "create", NULL, "first apply of a week's record is a create" },
	{ OP, FG, "flashusagerecords", "patch", NULL, "apply of the record's metadata" },
	{ OP, FG, "flashusagerecords/status", "patch", NULL, "usage is written through /status (dropped on create)" },
	{ OP, "apps", "deployments", "get", NULL, "readiness of the workload" },
	{ OP, "apps", "deployments", "list", NULL, "initial list of owned objects" },
	{ OP, "apps", "deployments", "watch", NULL, "reconciles on drift" },
	{ OP, "apps", "deployments", "create", NULL, "first server-side apply is a create" },
	{ OP, "apps", "deployments", "patch", NULL, "server-side apply" },
	{ OP, "apps", "deployments", "delete", NULL, "deletes what it no longer renders" },
	{ OP, "", "services", "get", NULL, "the endpoint (LoadBalancer ingress)" },
	{ OP, "", "services", "list", NULL, "initial list of owned objects" },
	{ OP, "", "services", "watch", NULL, "reconciles on drift" },
	{ OP, "", "services", "create", NULL, "first server-side apply is a create" },
	{ OP, "", "services", "patch", NULL, "server-side apply" },
	{ OP, "", "services", "delete", NULL, "removing every port deletes the Service" },
	{ OP, "", "persistentvolumeclaims", "get", NULL, "the /root claim is bound" },
	{ OP, "", "persistentvolumeclaims", "list", NULL, "initial list of owned objects" },
	{ OP, "", "persistentvolumeclaims", "watch", NULL, "reconciles on drift" },
	{ OP, "", "persistentvolumeclaims", "create", NULL, "first server-side apply is a create" },
	{ OP, "", "persistentvolumeclaims", "patch", NULL, "server-side apply" },
	{ OP, "", "persistentvolumeclaims", "delete", NULL, "persistence switched off" },
	{ OP, "networking.k8s.io", "networkpolicies", "get", NULL, "reads the isolation back" },
	{ OP, "networking.k8s.io", "networkpolicies", "list", NULL, "initial list of owned objects" },
	{ OP, "networking.k8s.io", "networkpolicies", "watch", NULL, "reconciles on drift" },
	{ OP, "networking.k8s.io", "networkpolicies", "create", NULL, "first server-side apply is a create" },
	{ OP, "networking.k8s.io", "networkpolicies", "patch", NULL, "server-side apply" },
	{ OP, "networking.k8s.io", "networkpolicies", "delete", NULL, "service deleted before its GC" },
	{ OP, "autoscaling", "horizontalpodautoscalers", "get", NULL, "reads the autoscaler back" },
	{ OP, "autoscaling", "horizontalpodautoscalers", "list", NULL, "initial list of owned objects" },
	{ OP, "autoscaling", "horizontalpodautoscalers", "watch", NULL, "reconciles on drift" },
	{ OP, "autoscaling", "horizontalpodautoscalers", "create", NULL, "first server-side apply is a create" },
	{ OP, "autoscaling", "horizontalpodautoscalers", "patch", NULL, "server-side apply" },
	{ OP, "autoscaling", "horizontalpodautoscalers", "delete", NULL, "autoscaling removed from the spec" },
	{ OP, "gateway.networking.k8s.io", "httproutes", "get", NULL, "reads the route back (accepted by the Gateway)" },
	{ OP, "gateway.networking.k8s.io", "httproutes", "list", NULL, "initial list of owned objects" },
	{ OP, "gateway.networking.k8s.io", "httproutes", "watch", NULL, "reconciles on drift" },
	{ OP, "gateway.networking.k8s.io", "httproutes", "create", NULL, "first server-side apply is a create" },
	{ OP, "gateway.networking.k8s.io", "httproutes", "patch", NULL, "server-side apply" },
	{ OP, "gateway.networking.k8s.io", "httproutes", "delete", NULL, "a domain's port removed from the spec" },
	{ OP, "", "namespaces", "get", NULL, "checks the tenant namespace and its labels" },
	{ OP, "", "namespaces", "create", NULL,
	  "creates a tenant namespace with its Pod Security and organization labels (no patch: never relabels)" },
	{ OP, "", "pods", "get", NULL, "terminal start-up failures of one Pod" },
	{ OP, "", "pods", "list", NULL, "the service's Pods (readiness, logs, exec target)" },
	{ OP, "", "pods", "watch", NULL, "readiness changes" },
	{ OP, "discovery.k8s.io", "endpointslices", "list", NULL, "the Service's endpoints are ready" },
	{ OP, "discovery.k8s.io", "endpointslices", "watch", NULL, "readiness changes" },
	{ OP, "", "nodes", "get", NULL, "GPU inventory: one node" },
	{ OP, "", "nodes", "list", NULL, "GPU inventory: labels and nvidia.com/gpu allocatable" },
	{ OP, "", "nodes", "watch", NULL, "GPU inventory: node loss frees slots" },
	{ OP, "", "pods/exec", "get", NULL, "Web Shell: the WebSocket upgrade is a GET, authorized as get" },
	{ OP, "", "pods/exec", "create", NULL, "Web Shell: since 1.35 the upgrade needs create as well" },
	{ OP, "", "pods/log", "get", NULL, "flashctl logs" },
	{ OP, "events.k8s.io", "events", "create", NULL, "events on FlashServices" },
	{ OP, "events.k8s.io", "events", "patch", NULL, "repeated events are counted" },
	{ OPNS, "coordination.k8s.io", "leases", "get", NULL, "leader election: reads the Lease" },
	{ OPNS, "coordination.k8s.io", "leases", "create", NULL, "leader election: first Lease (POST)" },
	{ OPNS, "coordination.k8s.io", "leases", "update", NULL, "leader election: renew and take over (PUT)" },
	{ AG, "", "nodes", "get", NULL, "its own Node at start (podCIDRs -> pools, InternalIPs)" },
	{ AG, "", "nodes", "list", NULL, "every Node: direct routes" },
	{ AG, "", "nodes", "watch", NULL, "nodes come and go: routes pruned" },
	{ AG, "", "pods", "list", NULL, "the node's Pods (fieldSelector spec.nodeName)" },
	{ AG, "", "pods", "watch", NULL, "identities follow labels" },
	{ AG, "", "pods", "patch", NULL, "the flowsdn.io/pod-networks annotation" },
	{ AG, "", "services", "list", NULL, "service maps: initial list" },
	{ AG, "", "services", "watch", NULL, "service maps follow Services" },
	{ AG, "", "namespaces", "list", NULL, "namespace labels for policy selectors" },
	{ AG, "", "namespaces", "watch", NULL, "namespace labels change" },
	{ AG, "discovery.k8s.io", "endpointslices", "list", NULL, "service backends: initial list" },
	{ AG, "discovery.k8s.io", "endpointslices", "watch", NULL, "service backends follow slices" },
	{ AG, "networking.k8s.io", "networkpolicies", "list", NULL, "live policy: initial list" },
	{ AG, "networking.k8s.io", "networkpolicies", "watch", NULL, "live policy follows changes" },
	{ AG, "events.k8s.io", "events", "create", NULL, "EndpointCreated, IPAllocationFailed, PodCIDRSelected" },
	/* sandbox sessions in Kubernetes mode, in their namespace only
	 * (operator/sandbox-k8s.c; test-sandbox-k8s checks these are the
	 * verbs of the requests it sends) */
	{ SB, "", "pods", "create", NULL, "Provision: a Pod per session" },
	{ SB, "", "pods", "list", NULL, "a session's Pod selected by label (every operation), Owned, the waits" },
	{ SB, "", "pods", "patch", NULL, "Reap revokes first: the revoke annotation (merge patch)" },
	{ SB, "", "pods", "delete", NULL, "Reap and expiry, grace 0" },
	{ SB, "", "pods/exec", "get", NULL, "Exec and the file operations: the WebSocket upgrade is a GET" },
	{ SB, "", "pods/exec", "create", NULL, "since 1.35 the upgrade needs create as well" },
};

static const char *str_at(const struct json_value *v, const char *key)
{
	const struct json_value *s = json_get(v, key);

	return s && json_is(s, JSON_STRING) ? json_string_value(s) : NULL;
}

/* resourceNames of @rule joined by ",", in @buf ("" when none). */
static const char *names_of(const struct json_value *rule, char *buf, size_t size)
{
	const struct json_value *n = json_get(rule, "resourceNames");

	buf[0] = '\0';
	for (size_t i = 0; n && json_is(n, JSON_ARRAY) && i < n->u.array.n; i++) {
		size_t len = strlen(buf);

		snprintf(buf + len, size - len, "%s%s", i ? "," : "", json_string_value(n->u.array.items[i]));
	}
	return buf;
}

Test(rbac, verbs_are_exactly_the_table)
{
	static const char *const files[] = { "operator-rbac.yaml", "flowsdn-agent.yaml", "operator.yaml",
					     "runtimeclasses.yaml", "operator-webhook.yaml", "sandbox-rbac.yaml" };
	bool seen[sizeof(table) / sizeof(table[0])] = { false };
	size_t roles = 0, grants = 0;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		char rel[256];
		char *yaml, **docs;
		size_t n;

		snprintf(rel, sizeof(rel), "../../deploy/kubernetes/%s", files[f]);
		yaml = render_test_read(rel, NULL);
		n = render_test_yaml_to_json(yaml, &docs);
		for (size_t i = 0; i < n; i++) {
			struct json_value *v = NULL;
			const struct json_value *rules;
			const char *kind;
			char role[256];

			cr_assert(json_parse(docs[i], strlen(docs[i]), NULL, &v, NULL) == 0, "%s[%zu]", files[f], i);
			kind = str_at(v, "kind");
			if (strcmp(kind, "Role") != 0 && strcmp(kind, "ClusterRole") != 0) {
				json_free(v);
				continue;
			}
			roles++;
			snprintf(role, sizeof(role), "%s/%s", kind, str_at(json_get(v, "metadata"), "name"));
			rules = json_get(v, "rules");
			cr_assert(rules && json_is(rules, JSON_ARRAY), "%s: no rules", role);
			for (size_t r = 0; r < rules->u.array.n; r++) {
				const struct json_value *rule = rules->u.array.items[r];
				const struct json_value *groups = json_get(rule, "apiGroups");
				const struct json_value *res = json_get(rule, "resources");
				const struct json_value *verbs = json_get(rule, "verbs");
				char names[512];

				names_of(rule, names, sizeof(names));
				cr_assert(groups && res && verbs, "%s rule %zu lacks apiGroups, resources or verbs", role, r);
				for (size_t g = 0; g < groups->u.array.n; g++)
					for (size_t k = 0; k < res->u.array.n; k++)
						for (size_t b = 0; b < verbs->u.array.n; b++) {
							const char *group = json_string_value(groups->u.array.items[g]);
							const char *resource = json_string_value(res->u.array.items[k]);
							const char *verb = json_string_value(verbs->u.array.items[b]);
							bool found = false;

							cr_assert(strcmp(group, "*") && strcmp(resource, "*") &&
								  strcmp(verb, "*"), "%s: a wildcard", role);
							cr_assert(strcmp(resource, "secrets"), "%s: secrets", role);
							for (size_t t = 0; t < sizeof(table) / sizeof(table[0]) && !found; t++)
								if (!strcmp(table[t].role, role) && !strcmp(table[t].group, group) &&
								    !strcmp(table[t].resource, resource) &&
								    !strcmp(table[t].verb, verb) &&
								    !strcmp(table[t].names ? table[t].names : "", names)) {
									cr_assert(!seen[t], "%s %s/%s %s granted twice", role,
										  group, resource, verb);
									seen[t] = found = true;
								}
							cr_assert(found, "%s grants %s on %s/%s%s%s with no reason in the table",
								  role, verb, group, resource, names[0] ? " named " : "",
								  names);
							grants++;
						}
			}
			json_free(v);
		}
		render_test_free_docs(docs, n);
		free(yaml);
	}
	for (size_t t = 0; t < sizeof(table) / sizeof(table[0]); t++)
		cr_assert(seen[t], "%s lacks %s on %s/%s (%s)", table[t].role, table[t].verb, table[t].group,
			  table[t].resource, table[t].why);
	cr_assert(roles == 4, "found %zu roles", roles);
	cr_assert(grants == sizeof(table) / sizeof(table[0]));
}

/* What the real API server refused (issue 19): these grants are there. */
Test(rbac, what_the_server_refused_is_granted)
{
	static const struct {
		const char *group, *resource, *verb;
	} need[] = {
		{ "apps", "deployments", "create" },
		{ "", "services", "create" },
		{ "networking.k8s.io", "networkpolicies", "create" },
		{ "", "persistentvolumeclaims", "create" },
		{ FG, "flashusagerecords", "create" },
		{ FG, "flashservices/finalizers", "update" },
	};

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		bool found = false;

		for (size_t t = 0; t < sizeof(table) / sizeof(table[0]) && !found; t++)
			found = !strcmp(table[t].role, OP) && !strcmp(table[t].group, need[i].group) &&
				!strcmp(table[t].resource, need[i].resource) && !strcmp(table[t].verb, need[i].verb);
		cr_assert(found, "the operator still lacks %s on %s", need[i].verb, need[i].resource);
	}
}

/* Every RBAC object of deploy/ against the recorded rbac_v1 schema, and
 * a broken one refused. */
Test(rbac, objects_match_rbac_v1)
{
	struct flash_schema_set *set = render_test_schema_set(true);
	static const char bad[] = "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","
				  "\"metadata\":{\"name\":\"x\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]}";
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	char *yaml = NULL, **docs;
	size_t n, checked = 0;

	for (int m = 0; m < FLASH_MANIFEST_COUNT_; m++) {
		ASSERT_OK(flash_manifest_render(m, NULL, &yaml, NULL), flash_manifest_path(m));
		n = render_test_yaml_to_json(yaml, &docs);
		for (size_t i = 0; i < n; i++) {
			int r;

			if (!strstr(docs[i], "\"apiVersion\":\"rbac.authorization.k8s.io/v1\""))
				continue;
			r = flash_schema_validate_object(set, docs[i], strlen(docs[i]), d);
			cr_assert(r == 0, "%s[%zu]: %s: %s", flash_manifest_path(m), i, diag_path(d), diag_message(d));
			checked++;
		}
		render_test_free_docs(docs, n);
		free(yaml);
	}
	cr_assert(checked == 8, "checked %zu RBAC objects", checked);
	/* verbs is required by io.k8s.api.rbac.v1.PolicyRule. */
	ASSERT_ERR(flash_schema_validate_object(set, bad, strlen(bad), d), -FLASH_E_RENDER_INVALID, "no verbs");
	ASSERT_STREQ(diag_path(d), "rules[0]", "no verbs path");
	flash_schema_set_free(set);
}
