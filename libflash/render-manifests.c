/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * deploy/kubernetes/: the CRDs, the operator's least-privilege RBAC, the
 * operator Deployment with its configuration, and the flowsdn-agent
 * DaemonSet.  Generated (make deploy-manifests) and checked against the
 * checked-in copies by a test.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "render-internal.h"

static const char *const manifest_paths[FLASH_MANIFEST_COUNT_] = {
	[FLASH_MANIFEST_CRD_FLASHSERVICE] = "crds/flashservices.yaml",
	[FLASH_MANIFEST_CRD_FLASHUSAGERECORD] = "crds/flashusagerecords.yaml",
	[FLASH_MANIFEST_OPERATOR_RBAC] = "operator-rbac.yaml",
	[FLASH_MANIFEST_OPERATOR] = "operator.yaml",
	[FLASH_MANIFEST_AGENT] = "flowsdn-agent.yaml",
	[FLASH_MANIFEST_RUNTIME_CLASSES] = "runtimeclasses.yaml",
	[FLASH_MANIFEST_WEBHOOK] = "operator-webhook.yaml",
	[FLASH_MANIFEST_SANDBOX_RBAC] = "sandbox-rbac.yaml",
};

#define AGENT_NAMESPACE "kube-system"
#define OPERATOR_NAME "flash-operator"
#define AGENT_NAME "flowsdn-agent"
#define CONFIG_PATH "/etc/flash/flash-operator.conf"
#define WEBHOOK_CONFIG_NAME "flash-operator"
#define WEBHOOK_SECRET_NAME "flash-operator-webhook-tls"

FLASH_API const char *flash_manifest_path(enum flash_manifest m)
{
	return (unsigned int)m < FLASH_MANIFEST_COUNT_ ? manifest_paths[m] : NULL;
}

static struct kdoc *object(const char *api_version, const char *kind, const char *name, const char *ns,
			   const char *app)
{
	struct kdoc *o = kdoc_object();
	struct kdoc *md;

	kdoc_set_str(o, "apiVersion", api_version);
	kdoc_set_str(o, "kind", kind);
	md = kdoc_set_obj(o, "metadata");
	kdoc_set_str(md, "name", name);
	if (ns)
		kdoc_set_str(md, "namespace", ns);
	kdoc_set_str(kdoc_set_obj(md, "labels"), FLASH_LABEL_NAME, app);
	kdoc_set_str(kdoc_get(md, "labels"), FLASH_LABEL_MANAGED_BY, "flash-deploy");
	return o;
}

/* One RBAC rule: @verbs on @resources of @group (NULL-terminated lists);
 * @names restricts by resourceNames. */
static void rule(struct kdoc *rules, const char *group, const char *const *resources, const char *const *verbs,
		 const char *const *names)
{
	struct kdoc *r = kdoc_append_obj(rules);
	struct kdoc *l;

	kdoc_append_str(kdoc_set_arr(r, "apiGroups"), group);
	l = kdoc_set_arr(r, "resources");
	for (size_t i = 0; resources[i]; i++)
		kdoc_append_str(l, resources[i]);
	if (names) {
		l = kdoc_set_arr(r, "resourceNames");
		for (size_t i = 0; names[i]; i++)
			kdoc_append_str(l, names[i]);
	}
	l = kdoc_set_arr(r, "verbs");
	for (size_t i = 0; verbs[i]; i++)
		kdoc_append_str(l, verbs[i]);
}

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })

static struct kdoc *binding(const char *kind, const char *role_kind, const char *name, const char *ns,
			    const char *sa, const char *sa_ns, const char *app)
{
	struct kdoc *b = object("rbac.authorization.k8s.io/v1", kind, name, ns, app);
	struct kdoc *ref = kdoc_set_obj(b, "roleRef");
	struct kdoc *subj;

	kdoc_set_str(ref, "apiGroup", "rbac.authorization.k8s.io");
	kdoc_set_str(ref, "kind", role_kind);
	kdoc_set_str(ref, "name", name);
	subj = kdoc_append_obj(kdoc_set_arr(b, "subjects"));
	kdoc_set_str(subj, "kind", "ServiceAccount");
	kdoc_set_str(subj, "name", sa);
	kdoc_set_str(subj, "namespace", sa_ns);
	return b;
}

/* The operator: exactly the verbs it uses (flash-operator(8), RBAC).
 * Server-side apply is PATCH, but the first apply of a new object is
 * authorized as create; watches need list and watch; status goes through
 * the status subresource; ownerReferences with blockOwnerDeletion need
 * update on flashservices/finalizers (OwnerReferencesPermissionEnforcement);
 * the CRDs and the webhook configuration are registered by the operator
 * itself, by name. */
static int operator_rbac(const struct flash_operator_config *c, struct kdoc **docs, size_t *n)
{
	const char *ns = c->operator_namespace;
	struct kdoc *role, *rules;

	docs[*n] = object("v1", "Namespace", ns, NULL, OPERATOR_NAME);
	/* The operator's own Pod passes the restricted standard. */
	pod_security_labels(kdoc_get(kdoc_get(docs[(*n)++], "metadata"), "labels"), "restricted");
	docs[*n] = object("v1", "ServiceAccount", OPERATOR_NAME, ns, OPERATOR_NAME);
	kdoc_set_bool(docs[(*n)++], "automountServiceAccountToken", true);

	role = object("rbac.authorization.k8s.io/v1", "ClusterRole", OPERATOR_NAME, NULL, OPERATOR_NAME);
	rules = kdoc_set_arr(role, "rules");
	/* create cannot be limited by resourceNames (the name is not known
	 * to the authorizer before the object exists). */
	rule(rules, "apiextensions.k8s.io", L("customresourcedefinitions"), L("create"), NULL);
	rule(rules, "apiextensions.k8s.io", L("customresourcedefinitions"), L("get", "patch"),
	     L("flashservices." FLASH_GROUP, "flashusagerecords." FLASH_GROUP));
	rule(rules, "admissionregistration.k8s.io", L("validatingwebhookconfigurations"), L("create"), NULL);
	rule(rules, "admissionregistration.k8s.io", L("validatingwebhookconfigurations"), L("get", "patch"),
	     L(WEBHOOK_CONFIG_NAME));
	rule(rules, FLASH_GROUP, L("flashservices"), L("get", "list", "watch", "create", "patch", "delete"), NULL);
	rule(rules, FLASH_GROUP, L("flashservices/status"), L("patch"), NULL);
	rule(rules, FLASH_GROUP, L("flashservices/finalizers"), L("update"), NULL);
	rule(rules, FLASH_GROUP, L("flashusagerecords"), L("get", "list", "watch", "create", "patch"), NULL);
	rule(rules, FLASH_GROUP, L("flashusagerecords/status"), L("patch"), NULL);
	rule(rules, "apps", L("deployments"), L("get", "list", "watch", "create", "patch", "delete"), NULL);
	rule(rules, "", L("services", "persistentvolumeclaims"), L("get", "list", "watch", "create", "patch", "delete"),
	     NULL);
	rule(rules, "networking.k8s.io", L("networkpolicies"), L("get", "list", "watch", "create", "patch", "delete"),
	     NULL);
	rule(rules, "autoscaling", L("horizontalpodautoscalers"), L("get", "list", "watch", "create", "patch", "delete"),
	     NULL);
	rule(rules, "gateway.networking.k8s.io", L("httproutes"), L("get", "list", "watch", "create", "patch", "delete"),
	     NULL);
	/* Tenant namespaces: created with their Pod Security labels, never
	 * relabelled (no patch: the operator cannot loosen a namespace). */
	rule(rules, "", L("namespaces"), L("get", "create"), NULL);
	/* Readiness: Pods, their EndpointSlices; GPU inventory: Nodes. */
	rule(rules, "", L("pods"), L("get", "list", "watch"), NULL);
	rule(rules, "discovery.k8s.io", L("endpointslices"), L("list", "watch"), NULL);
	rule(rules, "", L("nodes"), L("get", "list", "watch"), NULL);
	/* Web Shell: the WebSocket upgrade of pods/exec is a GET, authorized
	 * as get, and since Kubernetes 1.35 (AuthorizePodWebsocketUpgrade-
	 * CreatePermission) as create too; flashctl logs reads pods/log. */
	rule(rules, "", L("pods/exec"), L("get", "create"), NULL);
	rule(rules, "", L("pods/log"), L("get"), NULL);
	rule(rules, "events.k8s.io", L("events"), L("create", "patch"), NULL);
	docs[(*n)++] = role;
	docs[(*n)++] = binding("ClusterRoleBinding", "ClusterRole", OPERATOR_NAME, NULL, OPERATOR_NAME, ns,
			       OPERATOR_NAME);

	/* Leader election, in its own namespace only: a Lease is created
	 * (POST) once and renewed with PUT (update). */
	role = object("rbac.authorization.k8s.io/v1", "Role", OPERATOR_NAME, ns, OPERATOR_NAME);
	rule(kdoc_set_arr(role, "rules"), "coordination.k8s.io", L("leases"), L("get", "create", "update"), NULL);
	docs[(*n)++] = role;
	docs[(*n)++] = binding("RoleBinding", "Role", OPERATOR_NAME, ns, OPERATOR_NAME, ns, OPERATOR_NAME);
	return 0;
}

/* Sandbox sessions in Kubernetes mode (flash-operator(8), SANDBOX
 * SESSIONS): their namespace, and in it only (nothing cluster-wide) a Role
 * of exactly the verbs of the Kubernetes backend (operator/sandbox-k8s.c):
 * a Pod per session created, listed by its ownership label (Provision,
 * Info, Exec, Owned, the waits), merge-patched (the revoke annotation, the
 * session's gate closed before its Reap) and deleted; pods/exec (the
 * WebSocket upgrade is a GET, authorized as get and, since Kubernetes 1.35,
 * as create).  The sessions' Pods run the tenant's image under the
 * configured RuntimeClass and a limited one has a NET_ADMIN init
 * container: the namespace enforces "privileged" and audits and warns at
 * "baseline". */
static int sandbox_rbac(const struct flash_operator_config *c, struct kdoc **docs, size_t *n)
{
	const char *ns = c->sb_namespace ? c->sb_namespace : FLASH_MANIFEST_SANDBOX_NAMESPACE;
	struct kdoc *role, *rules, *labels;

	docs[*n] = object("v1", "Namespace", ns, NULL, OPERATOR_NAME);
	labels = kdoc_get(kdoc_get(docs[(*n)++], "metadata"), "labels");
	pod_security_labels(labels, "baseline");
	kdoc_set_str(labels, "pod-security.kubernetes.io/enforce", "privileged");
	role = object("rbac.authorization.k8s.io/v1", "Role", OPERATOR_NAME "-sandbox", ns, OPERATOR_NAME);
	rules = kdoc_set_arr(role, "rules");
	rule(rules, "", L("pods"), L("create", "delete", "list", "patch"), NULL);
	rule(rules, "", L("pods/exec"), L("get", "create"), NULL);
	docs[(*n)++] = role;
	docs[(*n)++] = binding("RoleBinding", "Role", OPERATOR_NAME "-sandbox", ns, OPERATOR_NAME,
			       c->operator_namespace, OPERATOR_NAME);
	return 0;
}

/* ------------------------------------------------------------ configuration as JSON */

static void labels_obj(struct kdoc *o, const char *key, const struct label *l, size_t n)
{
	struct kdoc *m = kdoc_set_obj(o, key);

	for (size_t i = 0; i < n; i++)
		kdoc_set_str(m, l[i].key, l[i].value);
}

static void prefixes_arr(struct kdoc *o, const char *key, const struct prefix_list *l)
{
	struct kdoc *a = kdoc_set_arr(o, key);

	for (size_t i = 0; i < l->n; i++)
		kdoc_append_prefix(a, &l->v[i]);
}

/* The configuration as the JSON flash_operator_config_parse() reads. */
static struct kdoc *config_doc(const struct flash_operator_config *c)
{
	struct kdoc *o = kdoc_object();
	struct kdoc *x, *arr;

	x = kdoc_set_obj(o, "runtimeClassNames");
	kdoc_set_str(x, "cpu", c->runtime_cpu);
	kdoc_set_str(x, "gpu", c->runtime_gpu);
	kdoc_set_str(o, "loadBalancerClass", c->load_balancer_class);
	kdoc_set_str(o, "gpuNodeLabel", c->gpu_node_label);
	labels_obj(o, "gpuNodeSelector", c->gpu_node_selector.v, c->gpu_node_selector.n);
	labels_obj(o, "publicNodeLabels", c->public_node_labels.v, c->public_node_labels.n);
	x = kdoc_set_obj(o, "clusterDNS");
	kdoc_set_str(x, "namespace", c->dns_namespace);
	labels_obj(x, "podLabels", c->dns_pod_labels.v, c->dns_pod_labels.n);
	prefixes_arr(x, "addresses", &c->dns_addresses);
	prefixes_arr(o, "podCIDRs", &c->pod_cidrs);
	prefixes_arr(o, "serviceCIDRs", &c->service_cidrs);
	prefixes_arr(o, "lanCIDRs", &c->lan_cidrs);
	prefixes_arr(o, "heteroNetworkCIDRs", &c->heteronetwork_cidrs);
	prefixes_arr(o, "infrastructureCIDRs", &c->infrastructure_cidrs);
	x = kdoc_set_obj(o, "persistence");
	kdoc_set_bool(x, "enabled", c->persistence);
	if (c->storage_class)
		kdoc_set_str(x, "storageClass", c->storage_class);
	arr = kdoc_set_arr(o, "adminVolumeClaims");
	for (size_t i = 0; i < c->n_admin_claims; i++) {
		x = kdoc_append_obj(arr);
		kdoc_set_str(x, "name", c->admin_claims[i].name);
		kdoc_set_str(x, "claimName", c->admin_claims[i].claim_name);
		kdoc_set_bool(x, "readOnly", c->admin_claims[i].read_only);
	}
	arr = kdoc_set_arr(o, "adminVolumeMounts");
	for (size_t i = 0; i < c->n_admin_mounts; i++) {
		x = kdoc_append_obj(arr);
		kdoc_set_str(x, "serviceInstanceId", c->admin_mounts[i].service_instance_id);
		kdoc_set_str(x, "claim", c->admin_mounts[i].claim);
		kdoc_set_str(x, "mountPath", c->admin_mounts[i].mount_path);
		kdoc_set_bool(x, "readOnly", c->admin_mounts[i].read_only);
	}
	x = kdoc_set_obj(o, "publicPortRange");
	kdoc_set_int(x, "first", c->port_first);
	kdoc_set_int(x, "last", c->port_last);
	x = kdoc_set_obj(o, "webhook");
	kdoc_set_bool(x, "enabled", c->webhook_enabled);
	kdoc_set_str(x, "serviceName", c->webhook_service);
	kdoc_set_int(x, "port", c->webhook_port);
	if (c->webhook_ca_bundle)
		kdoc_set_str(x, "caBundle", c->webhook_ca_bundle);
	kdoc_set_str(x, "listen", c->webhook_listen);
	kdoc_set_str(x, "certFile", c->webhook_cert_file);
	kdoc_set_str(x, "keyFile", c->webhook_key_file);
	if (c->gateway_name) {
		x = kdoc_set_obj(o, "gateway");
		kdoc_set_str(x, "name", c->gateway_name);
		if (c->gateway_namespace)
			kdoc_set_str(x, "namespace", c->gateway_namespace);
		if (c->gateway_section)
			kdoc_set_str(x, "sectionName", c->gateway_section);
	}
	if (c->sb_namespace) {
		/* sandbox sessions in Kubernetes mode (the gVisor keys are a
		 * node's, never a cluster's) */
		x = kdoc_set_obj(o, "sandbox");
		kdoc_set_str(x, "namespace", c->sb_namespace);
		if (c->sb_net_setup_image)
			kdoc_set_str(x, "netSetupImage", c->sb_net_setup_image);
		if (c->sb_runtime_class)
			kdoc_set_str(x, "runtimeClass", c->sb_runtime_class);
		if (c->sb_node_selector)
			kdoc_set_str(x, "nodeSelector", c->sb_node_selector);
		if (c->sb_tolerations)
			kdoc_set_str(x, "tolerations", c->sb_tolerations);
		if (c->sb_pull_secrets)
			kdoc_set_str(x, "imagePullSecrets", c->sb_pull_secrets);
	}
	x = kdoc_set_obj(o, "operator");
	kdoc_set_str(x, "namespace", c->operator_namespace);
	kdoc_set_str(x, "image", c->operator_image);
	kdoc_set_str(x, "agentImage", c->agent_image);
	return o;
}

/* A restricted container: non-root, read-only root, nothing kept. */
static void restricted_security(struct kdoc *ctr)
{
	struct kdoc *sc = kdoc_set_obj(ctr, "securityContext");

	kdoc_set_bool(sc, "runAsNonRoot", true);
	kdoc_set_int(sc, "runAsUser", 65532);
	kdoc_set_bool(sc, "allowPrivilegeEscalation", false);
	kdoc_set_bool(sc, "readOnlyRootFilesystem", true);
	kdoc_append_str(kdoc_set_arr(kdoc_set_obj(sc, "capabilities"), "drop"), "ALL");
	kdoc_set_str(kdoc_set_obj(sc, "seccompProfile"), "type", "RuntimeDefault");
}

static void small_resources(struct kdoc *ctr, const char *cpu, const char *mem)
{
	struct kdoc *res = kdoc_set_obj(ctr, "resources");

	kdoc_set_str(kdoc_set_obj(res, "requests"), "cpu", cpu);
	kdoc_set_str(kdoc_get(res, "requests"), "memory", mem);
	kdoc_set_str(kdoc_set_obj(res, "limits"), "memory", mem);
}

/* The port of webhook.listen ("ADDRESS:PORT", checked by the parser). */
static int64_t webhook_listen_port(const struct flash_operator_config *c)
{
	const char *colon = strrchr(c->webhook_listen, ':');

	return colon ? strtol(colon + 1, NULL, 10) : 0;
}

static int operator_deployment(const struct flash_operator_config *c, struct kdoc **docs, size_t *n)
{
	const char *ns = c->operator_namespace;
	struct kdoc *cm, *dep, *sp, *pod, *ctr, *args, *v, *m, *text_doc, *strategy;
	char *text = NULL;
	size_t len;
	int r;

	cm = object("v1", "ConfigMap", OPERATOR_NAME "-config", ns, OPERATOR_NAME);
	text_doc = config_doc(c);
	r = kdoc_to_json(text_doc, &text, &len);
	kdoc_free(text_doc);
	if (r < 0) {
		kdoc_free(cm);
		return r;
	}
	kdoc_set_str(kdoc_set_obj(cm, "data"), "flash-operator.conf", text);
	free(text);
	docs[(*n)++] = cm;

	dep = object("apps/v1", "Deployment", OPERATOR_NAME, ns, OPERATOR_NAME);
	sp = kdoc_set_obj(dep, "spec");
	kdoc_set_int(sp, "replicas", 1);
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(sp, "selector"), "matchLabels"), FLASH_LABEL_NAME, OPERATOR_NAME);
	/* One leader at a time: the old Pod goes before the new one starts. */
	strategy = kdoc_set_obj(sp, "strategy");
	kdoc_set_str(strategy, "type", "Recreate");
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(kdoc_set_obj(sp, "template"), "metadata"), "labels"), FLASH_LABEL_NAME,
		     OPERATOR_NAME);
	pod = kdoc_set_obj(kdoc_get(sp, "template"), "spec");
	kdoc_set_str(pod, "serviceAccountName", OPERATOR_NAME);
	kdoc_set_bool(pod, "enableServiceLinks", false);
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(pod, "securityContext"), "seccompProfile"), "type", "RuntimeDefault");
	ctr = kdoc_append_obj(kdoc_set_arr(pod, "containers"));
	kdoc_set_str(ctr, "name", OPERATOR_NAME);
	kdoc_set_str(ctr, "image", c->operator_image);
	args = kdoc_set_arr(ctr, "args");
	/* The reconcile loop (without --kubernetes and --keys flash-operator
	 * would refuse to start: the single-node provider API needs keys). */
	kdoc_append_str(args, "--kubernetes");
	kdoc_append_str(args, "--config");
	kdoc_append_str(args, CONFIG_PATH);
	if (c->webhook_enabled)
		kdoc_append_str(args, "--webhook");
	small_resources(ctr, "100m", "256Mi");
	restricted_security(ctr);
	m = kdoc_append_obj(kdoc_set_arr(ctr, "volumeMounts"));
	kdoc_set_str(m, "name", "config");
	kdoc_set_str(m, "mountPath", "/etc/flash");
	kdoc_set_bool(m, "readOnly", true);
	v = kdoc_append_obj(kdoc_set_arr(pod, "volumes"));
	kdoc_set_str(v, "name", "config");
	kdoc_set_str(kdoc_set_obj(v, "configMap"), "name", OPERATOR_NAME "-config");
	if (c->webhook_enabled) {
		/* The webhook's serving certificate: a kubernetes.io/tls
		 * Secret (tls.crt, tls.key) at the configured paths' directory. */
		struct kdoc *p = kdoc_append_obj(kdoc_set_arr(ctr, "ports"));
		const char *slash = strrchr(c->webhook_cert_file, '/');

		kdoc_set_str(p, "name", "webhook");
		kdoc_set_int(p, "containerPort", webhook_listen_port(c));
		kdoc_set_str(p, "protocol", "TCP");
		m = kdoc_append_obj(kdoc_get(ctr, "volumeMounts"));
		kdoc_set_str(m, "name", "webhook-tls");
		kdoc_set(m, "mountPath", kdoc_stringf("%.*s", (int)(slash - c->webhook_cert_file), c->webhook_cert_file));
		kdoc_set_bool(m, "readOnly", true);
		v = kdoc_append_obj(kdoc_get(pod, "volumes"));
		kdoc_set_str(v, "name", "webhook-tls");
		kdoc_set_str(kdoc_set_obj(v, "secret"), "secretName", WEBHOOK_SECRET_NAME);
		/* the key rules of flash-operator(8): mode 0400 */
		kdoc_set_int(kdoc_get(v, "secret"), "defaultMode", 0400);
	}
	docs[(*n)++] = dep;
	return 0;
}

static void host_path(struct kdoc *vols, struct kdoc *mounts, const char *name, const char *path, const char *type,
		      const char *mount_path)
{
	struct kdoc *v = kdoc_append_obj(vols);
	struct kdoc *hp, *m;

	kdoc_set_str(v, "name", name);
	hp = kdoc_set_obj(v, "hostPath");
	kdoc_set_str(hp, "path", path);
	kdoc_set_str(hp, "type", type);
	if (mounts) {
		m = kdoc_append_obj(mounts);
		kdoc_set_str(m, "name", name);
		kdoc_set_str(m, "mountPath", mount_path ? mount_path : path);
	}
}

/* The flowsdn agent: a privileged host-network DaemonSet (it is the CNI
 * and loads BPF programs); its API token is a projected volume because
 * the Pod does not automount one. */
static int agent(const struct flash_operator_config *c, struct kdoc **docs, size_t *n)
{
	struct kdoc *role, *rules, *ds, *sp, *pod, *init, *ctr, *vols, *mounts, *init_mounts, *sc, *proj, *src, *tol;
	struct kdoc *v, *srcs, *item, *cmd;

	docs[*n] = object("v1", "ServiceAccount", AGENT_NAME, AGENT_NAMESPACE, AGENT_NAME);
	kdoc_set_bool(docs[(*n)++], "automountServiceAccountToken", false);
	role = object("rbac.authorization.k8s.io/v1", "ClusterRole", AGENT_NAME, NULL, AGENT_NAME);
	rules = kdoc_set_arr(role, "rules");
	/* Exactly the calls of agent/k8s*.c: its Node at start (podCIDRs ->
	 * pools) and every Node watched (direct routes). */
	rule(rules, "", L("nodes"), L("get", "list", "watch"), NULL);
	/* Local Pods (fieldSelector spec.nodeName): identities; the
	 * flowsdn.io/pod-networks annotation (strategic merge patch). */
	rule(rules, "", L("pods"), L("list", "watch", "patch"), NULL);
	/* Services, their slices, policies and namespaces: watched only. */
	rule(rules, "", L("services", "namespaces"), L("list", "watch"), NULL);
	rule(rules, "discovery.k8s.io", L("endpointslices"), L("list", "watch"), NULL);
	rule(rules, "networking.k8s.io", L("networkpolicies"), L("list", "watch"), NULL);
	/* EndpointCreated, IPAllocationFailed, PodCIDRSelected: created once each. */
	rule(rules, "events.k8s.io", L("events"), L("create"), NULL);
	docs[(*n)++] = role;
	docs[(*n)++] = binding("ClusterRoleBinding", "ClusterRole", AGENT_NAME, NULL, AGENT_NAME, AGENT_NAMESPACE,
			       AGENT_NAME);

	ds = object("apps/v1", "DaemonSet", AGENT_NAME, AGENT_NAMESPACE, AGENT_NAME);
	sp = kdoc_set_obj(ds, "spec");
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(sp, "selector"), "matchLabels"), FLASH_LABEL_NAME, AGENT_NAME);
	kdoc_set_str(kdoc_set_obj(sp, "updateStrategy"), "type", "RollingUpdate");
	kdoc_set_int(kdoc_set_obj(kdoc_get(sp, "updateStrategy"), "rollingUpdate"), "maxUnavailable", 1);
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(kdoc_set_obj(sp, "template"), "metadata"), "labels"), FLASH_LABEL_NAME,
		     AGENT_NAME);
	pod = kdoc_set_obj(kdoc_get(sp, "template"), "spec");
	kdoc_set_str(pod, "serviceAccountName", AGENT_NAME);
	kdoc_set_bool(pod, "automountServiceAccountToken", false);
	kdoc_set_bool(pod, "hostNetwork", true);
	kdoc_set_str(pod, "dnsPolicy", "ClusterFirstWithHostNet");
	kdoc_set_str(pod, "priorityClassName", "system-node-critical");
	tol = kdoc_append_obj(kdoc_set_arr(pod, "tolerations"));
	kdoc_set_str(tol, "operator", "Exists");

	vols = kdoc_set_arr(pod, "volumes");
	init_mounts = kdoc_array();
	mounts = kdoc_array();
	host_path(vols, init_mounts, "cni-bin", "/opt/cni/bin", "DirectoryOrCreate", "/host/opt/cni/bin");
	host_path(vols, init_mounts, "cni-conf", "/etc/cni/net.d", "DirectoryOrCreate", "/host/etc/cni/net.d");
	host_path(vols, mounts, "run", "/var/run/flowsdn", "DirectoryOrCreate", NULL);
	host_path(vols, mounts, "state", "/var/lib/flowsdn", "DirectoryOrCreate", NULL);
	host_path(vols, mounts, "bpffs", "/sys/fs/bpf", "DirectoryOrCreate", NULL);
	{
		struct kdoc *m = kdoc_append_obj(mounts);

		kdoc_set_str(m, "name", "api-token");
		kdoc_set_str(m, "mountPath", "/var/run/secrets/kubernetes.io/serviceaccount");
		kdoc_set_bool(m, "readOnly", true);
	}
	v = kdoc_append_obj(vols);
	kdoc_set_str(v, "name", "api-token");
	proj = kdoc_set_obj(v, "projected");
	kdoc_set_int(proj, "defaultMode", 0444);
	srcs = kdoc_set_arr(proj, "sources");
	src = kdoc_set_obj(kdoc_append_obj(srcs), "serviceAccountToken");
	kdoc_set_str(src, "path", "token");
	kdoc_set_int(src, "expirationSeconds", 3607);
	src = kdoc_set_obj(kdoc_append_obj(srcs), "configMap");
	kdoc_set_str(src, "name", "kube-root-ca.crt");
	item = kdoc_append_obj(kdoc_set_arr(src, "items"));
	kdoc_set_str(item, "key", "ca.crt");
	kdoc_set_str(item, "path", "ca.crt");
	src = kdoc_set_obj(kdoc_append_obj(srcs), "downwardAPI");
	item = kdoc_append_obj(kdoc_set_arr(src, "items"));
	kdoc_set_str(item, "path", "namespace");
	kdoc_set_str(kdoc_set_obj(item, "fieldRef"), "apiVersion", "v1");
	kdoc_set_str(kdoc_get(item, "fieldRef"), "fieldPath", "metadata.namespace");

	/* The init container puts the CNI plugin and its configuration on
	 * the host. */
	init = kdoc_append_obj(kdoc_set_arr(pod, "initContainers"));
	kdoc_set_str(init, "name", "install-cni");
	kdoc_set_str(init, "image", c->agent_image);
	cmd = kdoc_set_arr(init, "command");
	kdoc_append_str(cmd, "flowsdn-cni");
	kdoc_append_str(cmd, "install");
	small_resources(init, "10m", "64Mi");
	sc = kdoc_set_obj(init, "securityContext");
	kdoc_set_int(sc, "runAsUser", 0);
	kdoc_set_bool(sc, "allowPrivilegeEscalation", false);
	kdoc_set(init, "volumeMounts", init_mounts);

	ctr = kdoc_append_obj(kdoc_set_arr(pod, "containers"));
	kdoc_set_str(ctr, "name", AGENT_NAME);
	kdoc_set_str(ctr, "image", c->agent_image);
	cmd = kdoc_set_arr(ctr, "command");
	kdoc_append_str(cmd, "flowsdn-agent");
	kdoc_append_str(cmd, "--kubernetes");
	item = kdoc_append_obj(kdoc_set_arr(ctr, "env"));
	kdoc_set_str(item, "name", "NODE_NAME");
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(item, "valueFrom"), "fieldRef"), "fieldPath", "spec.nodeName");
	small_resources(ctr, "100m", "512Mi");
	/* BPF programs, netlink and the host network: privileged. */
	kdoc_set_bool(kdoc_set_obj(ctr, "securityContext"), "privileged", true);
	kdoc_set(ctr, "volumeMounts", mounts);
	docs[(*n)++] = ds;
	return 0;
}

/* The RuntimeClasses rendered Pods name: the sandbox (gVisor's runsc) for
 * CPU workloads; the NVIDIA runtime for GPU workloads, only on nodes that
 * passed the GPU smoke test (gpuNodeSelector) and tolerating the
 * nvidia.com/gpu taint GPU nodes carry. */
static int runtime_classes(const struct flash_operator_config *c, struct kdoc **docs, size_t *n)
{
	struct kdoc *rc, *sched, *tol;

	rc = object("node.k8s.io/v1", "RuntimeClass", c->runtime_cpu, NULL, OPERATOR_NAME);
	kdoc_set_str(rc, "handler", "runsc");
	docs[(*n)++] = rc;
	rc = object("node.k8s.io/v1", "RuntimeClass", c->runtime_gpu, NULL, OPERATOR_NAME);
	kdoc_set_str(rc, "handler", "nvidia");
	sched = kdoc_set_obj(rc, "scheduling");
	labels_obj(sched, "nodeSelector", c->gpu_node_selector.v, c->gpu_node_selector.n);
	tol = kdoc_append_obj(kdoc_set_arr(sched, "tolerations"));
	kdoc_set_str(tol, "key", "nvidia.com/gpu");
	kdoc_set_str(tol, "operator", "Exists");
	kdoc_set_str(tol, "effect", "NoSchedule");
	docs[(*n)++] = rc;
	return 0;
}

/* The validating admission webhook: the Service in front of the
 * operator's TLS listener and the ValidatingWebhookConfiguration sending
 * every FlashService CREATE and UPDATE to it (failurePolicy Fail: no
 * write gets past an unreachable validator). */
static int webhook(const struct flash_operator_config *c, struct kdoc **docs, size_t *n)
{
	const char *ns = c->operator_namespace;
	struct kdoc *svc, *sp, *p, *vwc, *wh, *cc, *ref, *rl;

	if (!c->webhook_enabled)
		return 0;
	svc = object("v1", "Service", c->webhook_service, ns, OPERATOR_NAME);
	sp = kdoc_set_obj(svc, "spec");
	kdoc_set_str(sp, "type", "ClusterIP");
	kdoc_set_str(kdoc_set_obj(sp, "selector"), FLASH_LABEL_NAME, OPERATOR_NAME);
	p = kdoc_append_obj(kdoc_set_arr(sp, "ports"));
	kdoc_set_str(p, "name", "webhook");
	kdoc_set_str(p, "protocol", "TCP");
	kdoc_set_int(p, "port", c->webhook_port);
	kdoc_set_str(p, "targetPort", "webhook");
	docs[(*n)++] = svc;

	vwc = object("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", WEBHOOK_CONFIG_NAME, NULL,
		     OPERATOR_NAME);
	wh = kdoc_append_obj(kdoc_set_arr(vwc, "webhooks"));
	kdoc_set_str(wh, "name", "flashservices." FLASH_GROUP);
	kdoc_append_str(kdoc_set_arr(wh, "admissionReviewVersions"), "v1");
	kdoc_set_str(wh, "sideEffects", "None");
	kdoc_set_str(wh, "failurePolicy", "Fail");
	kdoc_set_str(wh, "matchPolicy", "Equivalent");
	kdoc_set_int(wh, "timeoutSeconds", 5);
	cc = kdoc_set_obj(wh, "clientConfig");
	ref = kdoc_set_obj(cc, "service");
	kdoc_set_str(ref, "namespace", ns);
	kdoc_set_str(ref, "name", c->webhook_service);
	kdoc_set_str(ref, "path", FLASH_WEBHOOK_PATH);
	kdoc_set_int(ref, "port", c->webhook_port);
	if (c->webhook_ca_bundle)
		kdoc_set_str(cc, "caBundle", c->webhook_ca_bundle);
	rl = kdoc_append_obj(kdoc_set_arr(wh, "rules"));
	kdoc_append_str(kdoc_set_arr(rl, "apiGroups"), FLASH_GROUP);
	kdoc_append_str(kdoc_set_arr(rl, "apiVersions"), FLASH_VERSION);
	kdoc_append_str(kdoc_set_arr(rl, "operations"), "CREATE");
	kdoc_append_str(kdoc_get(rl, "operations"), "UPDATE");
	kdoc_append_str(kdoc_set_arr(rl, "resources"), "flashservices");
	kdoc_set_str(rl, "scope", "Namespaced");
	docs[(*n)++] = vwc;
	return 0;
}

FLASH_API int flash_manifest_render(enum flash_manifest m, const struct flash_operator_config *config,
				    char **ret_text, size_t *ret_len)
{
	struct flash_operator_config *defaults = NULL;
	struct kdoc *docs[16] = { 0 };
	size_t n = 0;
	int r;

	if ((unsigned int)m >= FLASH_MANIFEST_COUNT_ || !ret_text)
		return -EINVAL;
	if (!config) {
		r = flash_operator_config_default(&defaults);
		if (r < 0)
			return r;
		config = defaults;
	}
	switch (m) {
	case FLASH_MANIFEST_CRD_FLASHSERVICE:
		docs[n++] = crd_flashservice();
		r = 0;
		break;
	case FLASH_MANIFEST_CRD_FLASHUSAGERECORD:
		docs[n++] = crd_flashusagerecord();
		r = 0;
		break;
	case FLASH_MANIFEST_OPERATOR_RBAC:
		r = operator_rbac(config, docs, &n);
		break;
	case FLASH_MANIFEST_OPERATOR:
		r = operator_deployment(config, docs, &n);
		break;
	case FLASH_MANIFEST_AGENT:
		r = agent(config, docs, &n);
		break;
	case FLASH_MANIFEST_RUNTIME_CLASSES:
		r = runtime_classes(config, docs, &n);
		break;
	case FLASH_MANIFEST_WEBHOOK:
		r = webhook(config, docs, &n);
		break;
	case FLASH_MANIFEST_SANDBOX_RBAC:
		r = sandbox_rbac(config, docs, &n);
		break;
	default:
		r = -EINVAL;
	}
	for (size_t i = 0; r == 0 && i < n; i++)
		if (kdoc_failed(docs[i]))
			r = -ENOMEM;
	if (r == 0)
		r = render_print_docs(docs, n, FLASH_RENDER_YAML, ret_text, ret_len);
	for (size_t i = 0; i < n; i++)
		kdoc_free(docs[i]);
	flash_operator_config_free(defaults);
	return r;
}
