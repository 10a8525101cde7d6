/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/render.h> — Kubernetes rendering: a validated Flash spec and the
 * operator's configuration become the objects flash-operator applies
 * (Deployment, Service, NetworkPolicy, PersistentVolumeClaim), as JSON or
 * YAML; the FlashService and FlashUsageRecord CRDs and the deploy/kubernetes
 * manifests; public port assignment; and an OpenAPI v3 schema validator to
 * check rendered objects against the Kubernetes API's published schemas.
 *
 * Rendering is deterministic: the same inputs give byte-identical output
 * (keys in a fixed order, lists in spec order or sorted).
 */
#ifndef FLASH_RENDER_H
#define FLASH_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/common.h>
#include <flash/diag.h>
#include <flowsdn/addr.h>

#ifdef __cplusplus
extern "C" {
#endif

struct flash_spec;
struct flash_policy;

/* Domain errors of the rendering module (block FLASH_E_BASE + 400 = 6400). */
enum flash_render_error {
	FLASH_E_RENDER_BASE = FLASH_E_BASE + 400,
	FLASH_E_RENDER_CONFIG = FLASH_E_RENDER_BASE,    /* operator configuration refused (details in the diag) */
	FLASH_E_RENDER_PREVIOUS,          /* previous status / port assignment refused */
	FLASH_E_RENDER_PORTS_EXHAUSTED,   /* no free public port left in the range */
	FLASH_E_RENDER_DISK,              /* the image fills or exceeds the disk budget */
	FLASH_E_RENDER_NAME,              /* object name, namespace or id not usable in Kubernetes */
	FLASH_E_RENDER_BAD_DOCUMENT,      /* a schema document or object is not usable JSON */
	FLASH_E_RENDER_NO_SCHEMA,         /* no schema for the object's apiVersion/kind */
	FLASH_E_RENDER_INVALID,           /* the object breaks its schema (details in the diag) */
	FLASH_E_RENDER_MAX_,              /* end of the block (not an error) */
};

/* ------------------------------------------------------------ configuration */

/* The operator configuration (flash-operator.conf(5)): immutable once
 * parsed; share it freely between threads. */
struct flash_operator_config;

/* Parses the @len bytes of JSON at @json.  Every key is optional and
 * unknown keys are refused; CIDRs go through flowsdn_prefix_parse().
 * Returns 0 and *ret_config (free with flash_operator_config_free()),
 * -FLASH_E_RENDER_CONFIG with @diag (if not NULL) naming the key and the
 * rule, -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_operator_config_parse(const char *json, size_t len,
						    struct flash_operator_config **ret_config,
						    struct flash_diag *diag);

/* The configuration with every default (the same as parsing "{}"). */
FLASH_API FLASH_WUR int flash_operator_config_default(struct flash_operator_config **ret_config);

/* Frees a configuration from flash_operator_config_parse() or _default();
 * NULL is accepted. */
FLASH_API void flash_operator_config_free(struct flash_operator_config *config);

/* A few values operators and tests look at. */
FLASH_API bool flash_operator_config_persistence(const struct flash_operator_config *config);
FLASH_API void flash_operator_config_public_port_range(const struct flash_operator_config *config,
						       uint16_t *ret_first, uint16_t *ret_last);
/* The registry section: the CA file, the credentials file and the content
 * store directory (each NULL when not configured).  Strings live as long
 * as @config; NULL outputs are skipped. */
FLASH_API void flash_operator_config_registry(const struct flash_operator_config *config, const char **ret_ca_file,
					      const char **ret_credentials_file, const char **ret_content_store);

/* The runtime section: the single-node runtime's settings, the keys of
 * flash-operator(8)'s --runtime-dir, --cni-bin-dir, --cni-conf,
 * --agent-socket, --runsc, --cgroup-parent and --dns (the options
 * override them).  Each is NULL when not configured; strings live as long
 * as @config. */
struct flash_operator_runtime {
	size_t sz;                 /* sizeof(struct flash_operator_runtime) */
	const char *dir;           /* runtime.dir */
	const char *cni_bin_dir;   /* runtime.cniBinDir */
	const char *cni_conf;      /* runtime.cniConf */
	const char *agent_socket;  /* runtime.agentSocket */
	const char *runsc;         /* runtime.runsc */
	const char *cgroup_parent; /* runtime.cgroupParent */
	const char *dns;           /* runtime.dns, the addresses joined by commas */
	bool masquerade;           /* runtime.masquerade (flash-operator(8) --masquerade) */
	/* The Web Shell (section "exec"; 0 when unset: the operator's
	 * defaults, 16 sessions of 1800 s): flash-operator(8)
	 * --exec-max-sessions and --exec-session-limit. */
	unsigned int exec_max_sessions;    /* exec.maxSessions, 1..1024 */
	unsigned int exec_session_limit_s; /* exec.sessionLimitSeconds, 1..86400 */
	/* Autoscaling on one node (section "autoscaling"; always set: the
	 * defaults are 15 s, 300 s and 10 %): flash-operator(8)
	 * --autoscale-period, --autoscale-window, --autoscale-tolerance. */
	unsigned int autoscale_period_s;          /* autoscaling.syncPeriodSeconds, 1..3600 */
	unsigned int autoscale_window_s;          /* autoscaling.scaleDownStabilizationSeconds, 0..3600 */
	unsigned int autoscale_tolerance_percent; /* autoscaling.tolerancePercent, 0..99 */
	/* The validating admission webhook (section "webhook"): whether the
	 * manifests register it, and the TLS listener flash-operator(8)
	 * --webhook serves it on (--webhook-listen, --webhook-cert,
	 * --webhook-key override them).  Strings live as long as @config. */
	bool webhook_enabled;              /* webhook.enabled */
	const char *webhook_listen;        /* webhook.listen */
	const char *webhook_cert_file;     /* webhook.certFile */
	const char *webhook_key_file;      /* webhook.keyFile */
	/* Sandbox sessions on this node (section "sandbox", flash-operator(8)
	 * SANDBOX SESSIONS; 0/NULL when unset): --sandbox-dir and
	 * --sandbox-pool-* override them. */
	const char *sandbox_dir;               /* sandbox.dir */
	unsigned int sandbox_pool_size;        /* sandbox.poolSize, 0..64 (needs poolImage) */
	const char *sandbox_pool_image;        /* sandbox.poolImage */
	unsigned int sandbox_pool_cpu_millis;  /* sandbox.poolCpuMillis, 1..64000 */
	unsigned int sandbox_pool_memory_mib;  /* sandbox.poolMemoryMib, 4..1048576 */
	/* Sandbox sessions in Kubernetes mode (a Pod per session; not with
	 * sandbox.dir): the namespace turns them on; the other strings are
	 * handed as they are to the backend, which parses them (once) and
	 * refuses malformed ones; --sandbox-* override each. */
	const char *sandbox_namespace;         /* sandbox.namespace, a DNS label */
	const char *sandbox_net_setup_image;   /* sandbox.netSetupImage */
	const char *sandbox_runtime_class;     /* sandbox.runtimeClass, a DNS subdomain */
	const char *sandbox_node_selector;     /* sandbox.nodeSelector, "key=value[,...]" */
	const char *sandbox_tolerations;       /* sandbox.tolerations, "KEY[=VALUE][:EFFECT][,...]" */
	const char *sandbox_image_pull_secrets; /* sandbox.imagePullSecrets, "name[,...]" */
};

/* Fills *@ret (set ret->sz first; the fields that fit in it are
 * written).  0, or -EINVAL for a NULL argument or a too small sz. */
FLASH_API int flash_operator_config_runtime(const struct flash_operator_config *config,
					    struct flash_operator_runtime *ret);

/* ------------------------------------------------------------ public ports */

/* One public port: the (protocol, name) pair of a spec port and the port
 * the load balancer listens on. */
struct flash_public_port {
	char name[64];
	char protocol[4];  /* "tcp" or "udp" */
	uint16_t port;
};

/* Parses the previous assignment from a FlashService status or a whole
 * FlashService object ({"status": {"publicPorts": [...]}} or
 * {"publicPorts": [...]}, each {"name", "protocol", "port"}).  Returns 0
 * and a new array *ret_ports of *ret_n entries (free(); NULL when none),
 * -FLASH_E_RENDER_PREVIOUS with @diag, -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_public_ports_parse(const char *json, size_t len,
						 struct flash_public_port **ret_ports, size_t *ret_n,
						 struct flash_diag *diag);

/* Assigns public ports to the ports of @spec when it is exposed publicly
 * (an internal spec gets none): a (protocol, name) pair found in
 * @previous keeps its port when the port is inside the configured range;
 * every other pair gets the lowest port of the range that is neither kept
 * nor in @taken (ports other services hold).  Pairs of @previous that the
 * spec no longer has are dropped, which frees their ports.  Output is in
 * spec port order.  Returns 0 and *ret_ports (free(); NULL when *ret_n is
 * 0), -FLASH_E_RENDER_PORTS_EXHAUSTED, -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_public_ports_assign(const struct flash_operator_config *config,
						  const struct flash_spec *spec,
						  const struct flash_public_port *previous, size_t n_previous,
						  const uint16_t *taken, size_t n_taken,
						  struct flash_public_port **ret_ports, size_t *ret_n);

/* ------------------------------------------------------------ rendering */

struct flash_render_opts {
	size_t sz;
	const char *name;            /* FlashService name (DNS-1035 label, <= 52 chars); required */
	const char *namespace_;      /* required */
	const char *uid;             /* FlashService uid: ownerReferences; NULL: none written */
	const char *organization_id; /* opaque tenant ids for labels; required */
	const char *project_id;      /* optional */
	const char *service_id;      /* service instance id (admin volume mounts, labels); optional */
	/* "sha256:<64 hex>": the image is pinned to it (repository@digest);
	 * NULL keeps the spec's reference. */
	const char *image_digest;
	/* Bytes the image charges against the disk budget (config plus
	 * compressed layers); 0 when not known. */
	uint64_t image_bytes;
	/* The assignment from flash_public_ports_assign(). */
	const struct flash_public_port *public_ports;
	size_t n_public_ports;
};

/* The rendered objects of one service. */
struct flash_render;

/* Renders @spec with @config.  Objects, in apply order: the
 * PersistentVolumeClaim (with persistence), the NetworkPolicy, the
 * Deployment (without replicas when autoscaled), the
 * HorizontalPodAutoscaler (autoscaling/v2, CPU utilization, with
 * autoscaling and replicas other than 0), the Service (absent when the spec
 * has no port), then one Gateway API HTTPRoute per port the domains name
 * (NAME-PORTNAME, attached to the configuration's gateway, the domains'
 * hosts routed to that port of the Service; domains without gateway.name
 * are refused with -FLASH_E_RENDER_CONFIG).
 * Returns 0 and *ret_render, -FLASH_E_RENDER_NAME (a name or id that
 * cannot be a Kubernetes name or label value), -FLASH_E_RENDER_DISK,
 * -FLASH_E_RENDER_PORTS_EXHAUSTED (a public port without an assignment in
 * @opts), -EINVAL, -ENOMEM; @diag (optional) says what. */
FLASH_API FLASH_WUR int flash_render(const struct flash_spec *spec, const struct flash_operator_config *config,
				     const struct flash_render_opts *opts, struct flash_render **ret_render,
				     struct flash_diag *diag);

/* Frees a rendering and every object in it; NULL is accepted. */
FLASH_API void flash_render_free(struct flash_render *render);

/* Number of objects and the kind ("Deployment", ...) of object @i (NULL
 * when out of range). */
FLASH_API size_t flash_render_count(const struct flash_render *render);
FLASH_API const char *flash_render_kind(const struct flash_render *render, size_t i);

/* Object @i alone as JSON (new NUL-terminated buffer, free()).
 * Returns 0, -EINVAL (out of range), -ENOMEM. */
FLASH_API FLASH_WUR int flash_render_object_json(const struct flash_render *render, size_t i,
						 char **ret_text, size_t *ret_len);

enum flash_render_format {
	FLASH_RENDER_YAML = 0, /* one YAML document per object ("---" before each) */
	FLASH_RENDER_JSON = 1, /* one v1 List holding the objects */
};

/* Every object in @format (new NUL-terminated buffer, free()); the output
 * is accepted by `kubectl apply -f`.  Returns 0, -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_render_print(const struct flash_render *render, enum flash_render_format format,
					   char **ret_text, size_t *ret_len);

/* The tenant namespace @namespace_ of @organization_id, which the
 * operator creates before the first object of a service in it: labelled
 * with the organization (the same-organization grant of the rendered
 * NetworkPolicy selects namespaces by it) and with Pod Security Admission
 * "baseline" for enforce, audit and warn (workload containers are root by
 * design, which "restricted" refuses).  YAML: one document; JSON: the
 * object.  Returns 0, -FLASH_E_RENDER_NAME (@namespace_ not a DNS label,
 * @organization_id not a label value), -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_render_namespace(const char *namespace_, const char *organization_id,
					       enum flash_render_format format, char **ret_text, size_t *ret_len);

/* ------------------------------------------------------------ isolation on flowsdn */

/* What flash_render_isolation() needs besides the spec and the operator
 * configuration: the names (as in struct flash_render_opts) and the facts
 * of the node the workload runs on. */
struct flash_isolation_opts {
	size_t sz;
	const char *name;            /* the workload's selector label value (DNS-1035, <= 52); required */
	const char *namespace_;      /* the organization's namespace (DNS label); required */
	const char *organization_id; /* label value; required */
	const char *project_id;      /* optional */
	const char *service_id;      /* optional */
	/* The owner policy: its protected ranges are denied like the
	 * configuration's (NULL: none). */
	const struct flash_policy *policy;
	/* The node's own addresses: never a destination; a source only of
	 * readiness probes on the declared ports. */
	const struct flowsdn_prefix *node_addresses;
	size_t n_node_addresses;
	/* The workloads' DNS servers (what resolv.conf names): the only
	 * destinations of port 53; 0: the configuration's clusterDNS.addresses. */
	const struct flowsdn_prefix *dns_addresses;
	size_t n_dns_addresses;
};

/* Lowers the isolation of @spec (SPEC section 3.4) onto flowsdn's tiered
 * policy (<flowsdn/policy.h>, annotation flowsdn.io/tier): four
 * NetworkPolicy objects selecting the workload's pods, in this order --
 *   NAME-protect   (tier protect) both ways: the pod, service, LAN,
 *                  HeteroNetwork and infrastructure ranges of @config,
 *                  the owner policy's protected ranges, 169.254.0.0/16,
 *                  fe80::/10, 169.254.169.254 and fd00:ec2::254; except
 *                  the node's addresses inbound and the DNS servers
 *                  outbound, which the next tiers settle;
 *   NAME-exception (tier exception): inbound from the node's addresses
 *                  on the declared ports, outbound to the DNS servers on
 *                  UDP and TCP 53;
 *   NAME-deny      (tier deny): the spec's denied sources and
 *                  destinations, the node's addresses as destinations, and
 *                  the DNS servers and node addresses that lie inside a
 *                  protected range (all their other ports);
 *   NAME           (tier allow): the same NetworkPolicy flash_render()
 *                  renders for Kubernetes (declared ports from the allowed
 *                  sources, or every public source when none is listed;
 *                  egress by mode; the same-organization grant: Pods with the
 *                  organization label in namespaces with it, in one peer).
 * Every object has every section (empty rule lists included), so that a
 * changed spec replaces the four by name.  Returns 0 and *ret_render
 * (flash_render_count(), flash_render_object_json(); free with
 * flash_render_free()), -FLASH_E_RENDER_NAME (with @diag), -EINVAL,
 * -ENOMEM. */
FLASH_API FLASH_WUR int flash_render_isolation(const struct flash_spec *spec,
					       const struct flash_operator_config *config,
					       const struct flash_isolation_opts *opts, struct flash_render **ret_render,
					       struct flash_diag *diag);

/* The configuration's serviceCIDRs, in file order (NULL when @i is out
 * of range): the ranges ClusterIPs come from. */
FLASH_API const struct flowsdn_prefix *flash_operator_config_service_cidr(const struct flash_operator_config *config,
									  size_t i);

/* ------------------------------------------------------------ CRDs, manifests */

enum flash_crd {
	FLASH_CRD_FLASHSERVICE = 0,
	FLASH_CRD_FLASHUSAGERECORD = 1,
};

/* The CustomResourceDefinition (apiextensions.k8s.io/v1) of @crd in
 * @format (YAML: one document; JSON: the object).  The FlashService
 * openAPIV3Schema is generated from the spec's field table, the one the
 * spec validator enforces.  Returns 0, -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_render_crd(enum flash_crd crd, enum flash_render_format format,
					 char **ret_text, size_t *ret_len);

/* The files of deploy/kubernetes/, in order. */
enum flash_manifest {
	FLASH_MANIFEST_CRD_FLASHSERVICE = 0,     /* crds/flashservices.yaml */
	FLASH_MANIFEST_CRD_FLASHUSAGERECORD,     /* crds/flashusagerecords.yaml */
	FLASH_MANIFEST_OPERATOR_RBAC,            /* operator-rbac.yaml */
	FLASH_MANIFEST_OPERATOR,                 /* operator.yaml (ConfigMap + Deployment) */
	FLASH_MANIFEST_AGENT,                    /* flowsdn-agent.yaml (RBAC + DaemonSet) */
	FLASH_MANIFEST_RUNTIME_CLASSES,          /* runtimeclasses.yaml (gvisor, nvidia) */
	FLASH_MANIFEST_WEBHOOK,                  /* operator-webhook.yaml (Service + ValidatingWebhookConfiguration;
						  * no object when webhook.enabled is false) */
	FLASH_MANIFEST_SANDBOX_RBAC,             /* sandbox-rbac.yaml (the namespace of sandbox sessions in
						  * Kubernetes mode, the operator's Role and RoleBinding in it:
						  * sandbox.namespace, else FLASH_MANIFEST_SANDBOX_NAMESPACE) */
	FLASH_MANIFEST_COUNT_,
};

/* The namespace sandbox-rbac.yaml is rendered for when the configuration
 * names none (sandbox.namespace turns the sessions on). */
#define FLASH_MANIFEST_SANDBOX_NAMESPACE "flash-sandboxes"

/* Relative path of manifest @m ("crds/flashservices.yaml"), NULL when out
 * of range. */
FLASH_API const char *flash_manifest_path(enum flash_manifest m);

/* The YAML of manifest @m, for the operator configuration @config (NULL:
 * defaults).  Returns 0, -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_manifest_render(enum flash_manifest m, const struct flash_operator_config *config,
					      char **ret_text, size_t *ret_len);

/* ------------------------------------------------------------ schema validation */

/* A set of OpenAPI v3 schemas, indexed by Kubernetes group/version/kind.
 * The validator understands $ref to "#/..." of the same document, type,
 * properties, required, additionalProperties, items, enum, format (int32,
 * int64, date-time), nullable, minimum/maximum, minLength/maxLength,
 * pattern (POSIX ERE), minItems/maxItems, minProperties/maxProperties,
 * x-kubernetes-list-type
 * set/map uniqueness, x-kubernetes-int-or-string,
 * x-kubernetes-preserve-unknown-fields, allOf, anyOf, oneOf and not;
 * "default" is ignored (a server fills it).  Object schemas that list
 * properties are closed: an unknown field is refused unless
 * additionalProperties or x-kubernetes-preserve-unknown-fields allows it.
 * Read-only once filled. */
struct flash_schema_set;

/* Creates an empty set, to fill with flash_schema_set_add_openapi() and
 * flash_schema_set_add_crd().  Returns 0 and *ret_set (free with
 * flash_schema_set_free()), -EINVAL (@ret_set NULL), -ENOMEM. */
FLASH_API FLASH_WUR int flash_schema_set_new(struct flash_schema_set **ret_set);
/* Frees a set and the documents added to it; NULL is accepted. */
FLASH_API void flash_schema_set_free(struct flash_schema_set *set);

/* Adds an OpenAPI v3 document (GET /openapi/v3/...): every schema of
 * components.schemas with x-kubernetes-group-version-kind becomes the
 * schema of those kinds.  Returns 0, -FLASH_E_RENDER_BAD_DOCUMENT with
 * @diag, -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_schema_set_add_openapi(struct flash_schema_set *set, const char *text, size_t len,
						     struct flash_diag *diag);

/* Adds a CustomResourceDefinition (JSON): each version's
 * schema.openAPIV3Schema becomes the schema of group/version/kind. */
FLASH_API FLASH_WUR int flash_schema_set_add_crd(struct flash_schema_set *set, const char *text, size_t len,
						 struct flash_diag *diag);

/* Validates the JSON object at @text against the schema of its apiVersion
 * and kind.  Returns 0, -FLASH_E_RENDER_INVALID (first violation in @diag:
 * the JSON path and the rule), -FLASH_E_RENDER_NO_SCHEMA,
 * -FLASH_E_RENDER_BAD_DOCUMENT (not JSON, or a schema whose $refs fan out
 * past 200000 schemas applied in one validation; @diag says so), -EINVAL,
 * -ENOMEM.  Schemas nested deeper than 128 (through $ref) are a
 * violation. */
FLASH_API FLASH_WUR int flash_schema_validate_object(const struct flash_schema_set *set, const char *text, size_t len,
						     struct flash_diag *diag);

/* Validates @text against the components.schemas entry @schema_name
 * ("io.k8s.api.core.v1.ServicePort") of the first document that has it. */
FLASH_API FLASH_WUR int flash_schema_validate(const struct flash_schema_set *set, const char *schema_name,
					      const char *text, size_t len, struct flash_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
