/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The network half of the single-node runtime (private to operator/;
 * contracts C6): what flowsdn-agent is told about each Flash service, all
 * through the agent client (common/agent-client.h).
 *
 *  - Isolation: flash_render_isolation() lowers the spec onto the four
 *    tiered NetworkPolicy objects, PUT to /v1/policy/NS/NAME before any
 *    replica of the spec starts (NS: the organization's namespace,
 *    "org-" and 16 hex digits of a hash of the organization id, PUT to
 *    /v1/namespace with the organization label; NAME: the service id),
 *    again whenever the spec changes, DELETEd with the service.  The node
 *    facts: the node's addresses (every non-loopback address of the
 *    operator's network namespace) and the workloads' DNS servers (the
 *    nameservers of their resolv.conf).
 *  - Publishing: one agent service per spec port, id "fs-" + 32 hex
 *    digits of a hash of (service id, protocol, port name), with a
 *    ClusterIP frontend on the container port (the service's ClusterIP,
 *    one per Flash service, taken from the configuration's first IPv4
 *    serviceCIDR and kept for the service's life) and, for a public
 *    service, a NodePort frontend on the port the operator assigned;
 *    backends = the ready replicas' addresses on the container port;
 *    externalTrafficPolicy Local for direct traffic mode; the spec's
 *    allowed and denied sources as loadBalancerSourceRanges and
 *    deniedSourceRanges.  Scale to zero keeps the frontends with no
 *    backends; delete removes them.
 *  - The CNI identity of a replica (runtimeConfig.flowsdn): the
 *    organization's namespace and the labels the policies select.
 *
 * What was published is recorded in DIR/net/ID.json (written atomically),
 * so that a restarted operator withdraws what a service deleted meanwhile
 * left and keeps the ClusterIPs.  One thread (the reconcile loop) uses it.
 */
#ifndef FLASH_OPERATOR_RUNTIME_NET_H
#define FLASH_OPERATOR_RUNTIME_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <netinet/in.h>
#include <flash/policy.h>
#include <flash/render.h>
#include <flash/spec.h>

#include "json.h"
#include "store.h"

struct op_net_opts {
	const char *dir;                            /* required: the runtime directory (DIR/net is made) */
	const char *agent_socket;                   /* NULL: the agent's default */
	const struct flash_operator_config *config; /* NULL: the defaults */
	const struct flash_policy *policy;          /* the owner policy; NULL: none */
	const char *resolv_conf;                    /* the workloads' resolv.conf text (its nameservers) */
	unsigned int verify_ms;                     /* resync period (see below); 0: 5000 */
};

/* What DIR/net/ID.json records of a Flash service: its organization's
 * namespace, its ClusterIP and the agent services of its ports. */
#define OP_NET_RECORD_PORTS_MAX 64
struct op_net_record {
	char id[OP_SERVICE_ID_STRLEN];
	char ns[21];
	char cluster_ip[INET6_ADDRSTRLEN];
	size_t n_ports;
	char port_ids[OP_NET_RECORD_PORTS_MAX][OP_SERVICE_ID_STRLEN];
};

/* The file's text for @r: 0 and *ret_text (free()), -ENOMEM. */
int op_net_record_format(const struct op_net_record *r, char **ret_text, size_t *ret_len);
/* Reads the file's text (@len bytes): 0 and *ret; -EBADMSG when it is
 * not JSON, its "id" or one of its "services" is not a valid service id,
 * or it has more than OP_NET_RECORD_PORTS_MAX services (such a file is
 * ignored, and left for the next delete to overwrite), or its namespace
 * or ClusterIP is longer than its field; -ENOMEM.  Absent, they are "". */
int op_net_record_parse(const char *text, size_t len, struct op_net_record *ret);

struct op_net;

/* Reads DIR/net and the node's addresses.  @err says what is wrong.
 * 0, -EINVAL, -ENOMEM, -errno. */
int op_net_new(const struct op_net_opts *opts, struct op_net **ret, char *err, size_t err_size);
void op_net_free(struct op_net *n);

/* Brings the agent in line with service @s (@spec parsed from it) whose
 * ready replicas have the @n_ready addresses @ready: the namespace and
 * the policies (PUT when the spec changed since the last successful PUT,
 * or the first time in this process), the agent services (PUT when their
 * body changed; the ports the spec lost DELETEd).  Replicas may start
 * only after a 0.  <0 with @err: the agent refused or is unreachable.
 * Resync: at most every verify_ms, the first call lists the agent's
 * services and policies (GET /v1/service, /v1/policy); what this process
 * PUT and the agent no longer has (an agent restarted on an empty state
 * dir, a DELETE behind the operator's back) is PUT again by this and the
 * following calls, so a loss is mended within verify_ms and a pass. */
int op_runtime_net_service(struct op_net *n, const struct op_service *s, const struct flash_spec *spec,
			   const char *const *ready, size_t n_ready, char *err, size_t err_size);

/* Withdraws everything of service @id (agent services, policies, the
 * record).  0 or the first error (the record stays, to be retried). */
int op_runtime_net_service_del(struct op_net *n, const char *id);

/* How many objects the resync found missing at the agent and PUT again
 * since op_net_new(). */
uint64_t op_runtime_net_resyncs(const struct op_net *n);

/* Withdraws every recorded service that is not among the @n_live ids. */
void op_runtime_net_prune(struct op_net *n, const char *const *live, size_t n_live);

/* Writes the value of runtimeConfig.flowsdn for a replica of service
 * @svc_id (organization @org; NULL when unknown, as for a DEL, whose
 * identity the agent does not read).  Any thread (reads nothing shared). */
void op_runtime_net_cni_identity(struct json_writer *w, const char *svc_id, const char *org);

/* The organization's namespace of @org into @buf (at least 21 bytes). */
void op_net_namespace(const char *org, char buf[21]);

/* The agent service id of port (@protocol, @name) of service @svc_id
 * into @buf (at least OP_SERVICE_ID_STRLEN). */
void op_net_port_service_id(const char *svc_id, const char *protocol, const char *name, char *buf);

/* ---------------------------------------------------------------- CNI and sandboxes */

/* How flowsdn-cni is run (a runtime's replicas, a sandbox backend's
 * sessions). */
struct op_cni {
	const char *bin_dir;      /* required: CNI_PATH, holding flowsdn-cni */
	const char *conf;         /* a conflist whose first plugin is used; NULL: built in */
	const char *agent_socket; /* the built-in configuration's agentSocket; NULL: the default */
};

/* The network configuration op_cni_run() gives flowsdn-cni on stdin,
 * from the conflist at @conflist (@len bytes; NULL: the built-in one,
 * type flowsdn-cni with agentSocket @agent_socket when not NULL): the
 * conflist read by libflowsdn's CNI codec (flowsdn_cni_conflist_parse():
 * a supported cniVersion, a valid name, a non-empty plugins array of
 * objects with a type), its first plugin with the list's cniVersion and
 * name (flowsdn_cni_conflist_plugin_conf()), and runtimeConfig.flowsdn =
 * @identity (a JSON object; NULL: {}) in place of the plugin's own
 * runtimeConfig.  0 and *@ret (NUL-terminated, freed by the caller);
 * -EBADMSG for a conflist refused, with @err naming what is wrong (the
 * field's path and the fault); -ENOMEM, -EINVAL. */
int op_cni_config_build(const char *conflist, size_t len, const char *agent_socket, const char *identity,
			char **ret, char *err, size_t err_size) __attribute__((warn_unused_result));

/* The address of flowsdn-cni's ADD result (@len bytes at @json, read by
 * flowsdn_cni_result_parse()): its first ip's address without the prefix
 * length, in canonical text (flowsdn_addr_format()), into @address.  0;
 * -EBADMSG (not a CNI result, or one without an address) and -ENOBUFS
 * (@address too small) with @err saying why, leaving @address untouched;
 * -ENOMEM, -EINVAL. */
int op_cni_result_address(const char *json, size_t len, char *address, size_t address_size, char *err,
			  size_t err_size) __attribute__((warn_unused_result));

/* Runs flowsdn-cni @cmd ("ADD", "DEL") for container @container_id
 * (CNI_ARGS K8S_POD_NAMESPACE=@pod_ns, K8S_POD_NAME=@container_id) in
 * netns @netns, with runtimeConfig.flowsdn = @identity (a JSON object,
 * NULL: {}).  ADD: the first address of the result (no prefix) into
 * @address.  0 or <0 with @err. */
int op_cni_run(const struct op_cni *c, const char *cmd, const char *container_id, const char *pod_ns,
	       const char *netns, const char *identity, char *address, size_t address_size, char *err,
	       size_t err_size);

/* A sandbox session's network identity: its endpoint (pod) name and
 * policy name @name (the container id, a DNS-1035 label), session @sid,
 * organization @org and project @project (label values; NULL or invalid:
 * left out); namespace: the organization's (op_net_namespace()). */
struct op_net_sandbox {
	const char *name, *sid, *org, *project;
};

/* The sandbox pool's namespace and the one policy isolating it: an idle
 * pool sandbox's endpoint sits there, selected by a policy with both
 * directions and no rule (nothing in or out, not even DNS). */
#define OP_NET_POOL_NAMESPACE "flash-sandbox-pool"
#define OP_NET_POOL_POLICY "idle"

/* runtimeConfig.flowsdn of a sandbox (@sb) or, @sb NULL, of an idle pool
 * sandbox named @pool_name: per-packet service translation, namespace,
 * labels.  A new JSON text in *ret.  0, -ENOMEM. */
int op_net_sandbox_identity(const struct op_net_sandbox *sb, const char *pool_name, char **ret);

/* PUTs the pool's namespace and isolating policy (idempotent).  0 or <0
 * with @err. */
int op_net_sandbox_pool_isolate(struct op_net *n, char *err, size_t err_size);

/* PUTs @sb's organization namespace and the four tiered policies of
 * @spec (flash_render_isolation(), named @sb->name): before its endpoint
 * exists or is relabelled into them.  0 or <0 with @err. */
int op_net_sandbox_policies_put(struct op_net *n, const struct op_net_sandbox *sb, const struct flash_spec *spec,
				char *err, size_t err_size);

/* DELETEs them (absent ones are fine).  0 or the first error. */
int op_net_sandbox_policies_del(struct op_net *n, const char *name, const char *org, char *err, size_t err_size);

/* The claim of an idle pool sandbox: one PUT /v1/endpoint/ID/labels of
 * the endpoint of container @container_id moves it from the pool's
 * namespace into @sb's, with @sb's labels; the agent recompiles and
 * switches the endpoint's policy entries in one map switch (the pool's
 * deny-all stays in force until then).  @sb's policies must be PUT
 * first.  0 or <0 with @err. */
int op_net_sandbox_claim(struct op_net *n, const char *container_id, const struct op_net_sandbox *sb, char *err,
			 size_t err_size);

/* Waits up to @timeout_ms until the agent's IPAM (GET /v1/ipam) holds no
 * address of @container_id: the agent finishes a CNI DEL in the
 * background (the veth removed, then the address released).  0,
 * -ETIMEDOUT, or the agent's error, with @err. */
int op_net_released(struct op_net *n, const char *container_id, unsigned int timeout_ms, char *err,
		    size_t err_size);

/* Egress masquerade: workloads reach the Internet through the node's
 * address.  The operator owns one nftables table, "inet flowsdn_flash"
 * (never another), with a postrouting nat chain: per address pool of the
 * agent (GET /v1/ipam), "saddr POOL daddr != POOL
 * masquerade".  Netfilter sees the workloads' packets only where the
 * host stack forwards them: the agent's egress-mode "stack"
 * (flowsdn-agent.conf(5)); in mode fib the datapath redirects past it. */
#define OP_NET_NFT_TABLE "flowsdn_flash"

/* The nft script of the table for @pools (created idempotently: made if
 * missing, deleted and made again in one transaction).  0, -EINVAL,
 * -ENOMEM. */
int op_net_masquerade_script(const struct flowsdn_prefix *pools, size_t n_pools, char **ret);
/* Applies it (nft -f -) for the agent's pools.  0 or <0 with @err. */
int op_net_masquerade_start(struct op_net *n, char *err, size_t err_size);
/* Deletes the table when op_net_masquerade_start() made it. */
int op_net_masquerade_stop(struct op_net *n, char *err, size_t err_size);

#endif
