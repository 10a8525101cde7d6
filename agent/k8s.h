/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-agent's Kubernetes mode (flowsdn-agent(8) "KUBERNETES"): the
 * cluster's objects, watched through the one API client (common/k8s.h),
 * driven into the agent's own models.
 *
 *   Service + EndpointSlice  -> the service model (agent_services_put/
 *                               delete): one agent service per (Service,
 *                               port), id "fs-" + 32 hex digits hashed from
 *                               the Service's uid, protocol and port;
 *   NetworkPolicy, Namespace -> the live policy path (agent/policy.h);
 *   Pods on this node        -> endpoint metadata (namespace, name, labels,
 *                               named ports: the identity), the
 *                               flowsdn.io/pod-networks annotation and the
 *                               EndpointCreated / IPAllocationFailed events;
 *   Nodes                    -> this node's pools (agent_k8s_node_pools())
 *                               and direct routes <podCIDR> via <nodeIP> to
 *                               every other node (planned, conflict-checked,
 *                               installed through struct agent_k8s_route_ops
 *                               and pruned when a node leaves).
 *
 * Each kind has its reflector (k8s_watch(): list, watch, relist on 410)
 * whose events go to agent_k8s_event(); agent_k8s_start() runs one thread
 * per kind, each with its own client, and one more client for the writes
 * (events, pod annotations; fieldManager "flowsdn-agent").  A (re)list
 * ends with the objects it did not list removed from the models, and a
 * service body is PUT only when it differs from the one last PUT, so a
 * relist changes nothing that did not change.  Services are first PUT
 * once both the Services and the EndpointSlices have been listed (no
 * service goes out without its backends).  One mutex guards the state.
 * Private to agent/.
 */
#ifndef FLOWSDN_AGENT_K8S_H
#define FLOWSDN_AGENT_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>

struct agent_core;
struct agent_policy;
struct agent_services;
struct json_value;
struct k8s_client;
struct k8s_config;
struct k8s_event;
struct k8s_status;

#define AGENT_K8S_FIELD_MANAGER "flowsdn-agent"
#define AGENT_K8S_ANNOTATION "flowsdn.io/pod-networks"
#define AGENT_K8S_MAX_POOLS 16

enum agent_k8s_kind {
	AGENT_K8S_SERVICES,
	AGENT_K8S_ENDPOINTSLICES,
	AGENT_K8S_NETWORKPOLICIES,
	AGENT_K8S_NAMESPACES,
	AGENT_K8S_NODES,
	AGENT_K8S_PODS,          /* spec.nodeName=<node> */
	AGENT_K8S_KIND_MAX_,
};

/* The routes to other nodes, as the kernel sees them (the agent's are
 * those of protocol FLOWSDN_NETLINK_RTPROT). */
struct agent_k8s_route_ops {
	/* Every route of the main table: destination, gateway, whether it is ours. */
	int (*list)(void *ctx, struct flowsdn_prefix **ret_dst, struct flowsdn_addr **ret_gw, bool **ret_ours,
		    size_t *ret_n);
	/* Adds or removes @dst via @gw (flowsdn_netlink_gateway_route()). */
	int (*apply)(void *ctx, bool add, const struct flowsdn_prefix *dst, const struct flowsdn_addr *gw);
};
/* Through libflowsdn's netlink calls in the agent's own netns. */
extern const struct agent_k8s_route_ops agent_k8s_route_ops_kernel;

struct agent_k8s_opts {
	size_t sz;
	const char *node_name;              /* required */
	struct agent_services *services;    /* NULL: Services and EndpointSlices are not followed */
	struct agent_policy *policy;        /* NULL: NetworkPolicies and Namespaces are not followed */
	struct agent_core *core;            /* NULL: Pods are not matched to endpoints */
	const struct agent_k8s_route_ops *route_ops; /* NULL: routes are planned only */
	void *route_ctx;
	/* This node's pools (the conflict check of routes). */
	const struct flowsdn_prefix *pools;
	size_t n_pools;
	/* The client for writes (events, annotations); NULL: none are sent.
	 * Borrowed; used by one thread at a time, never under the state's
	 * lock (Events and annotations are queued under it, sent after). */
	struct k8s_client *writer;
	/* This node's podCIDRs changed after start (a Node event with other
	 * spec.podCIDRs): the IPAM is given @pools; *@ret_n of @ret_pools
	 * (room for @max) are the pools it then holds (the draining ones
	 * too: the routes' conflict check).  NULL: agent_core_set_pools() on
	 * @core when set, else the pools are only the route check's. */
	int (*set_pools)(void *ctx, const struct flowsdn_prefix *pools, size_t n, struct flowsdn_prefix *ret_pools,
			 size_t max, size_t *ret_n, char *why, size_t why_size);
	void *set_pools_ctx;
};

struct agent_k8s;

int agent_k8s_new(const struct agent_k8s_opts *opts, struct agent_k8s **ret);
/* Stops the threads (agent_k8s_stop()) and frees.  NULL is fine. */
void agent_k8s_free(struct agent_k8s *k);

/* One event of @kind's reflector (the k8s_event_fn of agent_k8s_sync()):
 * 0, or a negative errno only for what stops the watch (-ENOMEM).  Objects
 * the models refuse are logged and skipped. */
int agent_k8s_event(struct agent_k8s *k, enum agent_k8s_kind kind, const struct k8s_event *ev);

/* Runs @kind's reflector on @client in the caller's thread until
 * @max_streams watch streams ended (0: until cancelled or an error a
 * relist cannot cure); k8s_watch()'s return value. */
int agent_k8s_sync(struct agent_k8s *k, struct k8s_client *client, enum agent_k8s_kind kind, unsigned int max_streams,
		   struct k8s_status *ret_status);

/* One thread per kind followed, each with a client made from @cfg. */
int agent_k8s_start(struct agent_k8s *k, const struct k8s_config *cfg);
/* Stops and joins the threads; the writer client is cancelled with them
 * (the caller frees it after). */
void agent_k8s_stop(struct agent_k8s *k);

struct agent_k8s_stats {
	uint64_t svc_puts, svc_deletes, svc_unchanged, svc_refused;
	uint64_t policy_puts, policy_deletes, namespace_puts, namespace_deletes;
	uint64_t pods_labelled, annotations, events, relists;
	size_t services, slices, agent_services;
	bool services_synced;     /* Services and EndpointSlices both listed */
};
void agent_k8s_get_stats(struct agent_k8s *k, struct agent_k8s_stats *ret);

/* GET /v1/node/routes: {"node": N, "routes": [{"node", "destination",
 * "gateway", "state": "planned"|"installed"|"conflict", "reason"}]}. */
int agent_k8s_routes_json(struct agent_k8s *k, char **ret_json);

/* At start, before the core: GETs Node @node_name and reads its pools
 * (agent_k8s_node_pools(), fallback included) and its InternalIPs (at
 * most @max_addrs, the NodePort frontends' addresses).  The errors of
 * k8s_get() (@ret_status) and of agent_k8s_node_pools() (@why). */
int agent_k8s_read_node(struct k8s_client *client, const char *node_name, struct flowsdn_prefix *ret_pools,
			size_t max_pools, size_t *ret_n_pools, bool *ret_fallback, struct flowsdn_addr *ret_addrs,
			size_t max_addrs, size_t *ret_n_addrs, char *why, size_t why_size);

/* ------------------------------------------------------------ pure helpers */

/* The agent service id of (Service @uid, @protocol, @port): "fs-" and 32
 * lower-case hex digits (BLAKE2b-128 over the length-prefixed parts,
 * id_hash_parts()), stable across restarts.  0, or -ENOMEM when
 * libsodium could not start (@ret untouched). */
int agent_k8s_service_id(const char *uid, const char *protocol, unsigned int port, char ret[36]);

/* This node's pools from its Node object: spec.podCIDRs (or podCIDR),
 * else 10.<last byte of the first IPv4 InternalIP>.0.0/16 (*ret_fallback
 * true).  -ENOENT when there is neither, -EINVAL for a CIDR that does not
 * parse (@ret_why says which). */
int agent_k8s_node_pools(const struct json_value *node, struct flowsdn_prefix *ret_pools, size_t max, size_t *ret_n,
			 bool *ret_fallback, char *ret_why, size_t why_size);

/* An events.k8s.io/v1 Event about @kind/@ns/@name (@uid may be NULL; @ns
 * NULL for a Node), reported by this node's agent: the body POSTed. */
int agent_k8s_event_body(const char *node_name, const char *kind, const char *ns, const char *name, const char *uid,
			 const char *type, const char *reason, const char *action, const char *note, char **ret_json);

/* The strategic-merge patch setting the flowsdn.io/pod-networks
 * annotation: [{"name":"default","interface":@ifname,"ips":["A/P",..],
 * "gateways":[..]}] (@value_out, may be NULL, gets the annotation's
 * value alone). */
int agent_k8s_pod_networks_patch(const char *ifname, const struct flowsdn_addr *addrs, const unsigned int *plens,
				 const struct flowsdn_addr *gateways, size_t n, char **ret_patch, char **ret_value);

#endif
