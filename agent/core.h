/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent core: the node's endpoints (IPAM + veth + datapath), their
 * persisted state, restore and adoption after a restart, the delete
 * queue.  It locks internally (every function may be called from any
 * thread) and knows nothing of HTTP: agent/http.c serves it.  Kernel
 * calls go through struct agent_ops (agent/ops.h).  Private to agent/.
 *
 * Locking: one mutex guards the in-memory tables (endpoints, IPAM, the
 * state generation) and is never held across a kernel call or a file
 * write; operations on one owner (container id, ifname) are serialised by
 * the owner's slot, which an ADD, CHECK-free DEL, GC or queue replay
 * holds for its whole run, so ADDs of different owners run in parallel.
 * The state file is written by group commit: one fsync'd write covers
 * every change made before it started.  A DEL answers once the endpoint
 * is unpublished and saved as "deleting"; its veth is removed by a
 * background thread, and its addresses (and its owner slot) are released
 * only after that.
 *
 * Deadlines are CLOCK_MONOTONIC milliseconds (0: none): an operation whose
 * deadline has passed when its owner's slot is free is not started
 * (-FLOWSDN_E_AGENT_DEADLINE).
 *
 * Errors are -errno or negative domain codes (libflowsdn's and
 * FLOWSDN_E_AGENT_* of common/agent-api.h), with an explanation in the
 * optional struct diag (common/diag.h).
 */
#ifndef FLOWSDN_AGENT_CORE_H
#define FLOWSDN_AGENT_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <flowsdn/ipam.h>

#include "agent-api.h"
#include "conf.h"
#include "ops.h"
#include "services.h"

struct agent_core;

/* Starts the core: creates the state directory, opens IPAM, loads the
 * datapath through @ops (unless "datapath" is false), restores the saved
 * endpoints (adopting their interfaces; an endpoint whose interface is
 * gone is cleaned up) and replays the delete queue.  @ops NULL is
 * agent_ops_kernel; @ctx is passed to every op.  @cfg is copied.
 * Errors: -FLOWSDN_E_AGENT_STATE, errors of IPAM and the loader, -errno. */
int agent_core_new(const struct agent_config *cfg, const struct agent_ops *ops, void *ctx,
		   struct agent_core **ret);
/* Releases the core; endpoints, pinned programs and state stay
 * (forwarding goes on).  NULL is fine. */
void agent_core_free(struct agent_core *core);

/* The services (agent/services.h), owned by the core. */
struct agent_services *agent_core_services(struct agent_core *core);

/* The configuration the core runs with (owned by the core). */
const struct agent_config *agent_core_config(const struct agent_core *core);

/* One ADD or CHECK. */
struct agent_request {
	const char *container_id;
	const char *ifname;
	const char *netns;   /* ADD, CHECK */
	unsigned int mtu;    /* ADD; 0: the configured one */
	int64_t deadline_ms; /* CLOCK_MONOTONIC; 0: none */
	enum flowsdn_cni_svc_translation svc_translation; /* ADD */
};

/* ADD: builds the endpoint into *ret.  A queued DEL of the same owner is
 * applied first.  Errors: -EINVAL, -FLOWSDN_E_AGENT_DEADLINE,
 * -FLOWSDN_E_AGENT_EXISTS (the owner has an endpoint: DEL it first),
 * -FLOWSDN_E_AGENT_HOST_NETNS (the agent's own or the initial netns),
 * -FLOWSDN_E_NL_NETNS, IPAM, netlink and datapath errors. */
int agent_core_add(struct agent_core *core, const struct agent_request *rq, struct agent_api_endpoint *ret,
		   struct diag *diag);
/* CHECK: 0 and the endpoint, -FLOWSDN_E_AGENT_NOT_FOUND, or the failed
 * check. */
int agent_core_check(struct agent_core *core, const struct agent_request *rq, struct agent_api_endpoint *ret,
		     struct diag *diag);
/* DEL of one owner: 1 when an endpoint was removed, 0 when there was none
 * (its addresses and a leftover host interface are still released),
 * -errno when the state could not be saved. */
int agent_core_del(struct agent_core *core, const char *container_id, const char *ifname, int64_t deadline_ms,
		   struct diag *diag);
/* GC: removes every endpoint whose owner is not among the @n valid ones
 * and that existed when the GC started.  Returns the number removed. */
int agent_core_gc(struct agent_core *core, const char *const *ids, const char *const *ifnames, size_t n,
		  int64_t deadline_ms, struct diag *diag);
/* Waits until every background veth deletion is done. */
void agent_core_flush(struct agent_core *core);
/* Replays the delete queue; returns the number of entries replayed. */
int agent_core_replay_queue(struct agent_core *core);

/* Snapshots (copies; *ret freed by the caller). */
size_t agent_core_endpoint_count(struct agent_core *core);
int agent_core_endpoints(struct agent_core *core, struct agent_api_endpoint **ret, size_t *ret_n);
/* One endpoint by id: 0, -FLOWSDN_E_AGENT_NOT_FOUND. */
int agent_core_endpoint(struct agent_core *core, uint32_t id, struct agent_api_endpoint *ret);
/* How services reach endpoint @id (PUT /v1/endpoint/{id}/translation):
 * republishes it with or without FLOWSDN_EP_F_SVC_PACKET and saves the
 * state; *ret the endpoint as it is now.  Holds the owner's slot (a DEL
 * waits).  -FLOWSDN_E_AGENT_NOT_FOUND, datapath errors, -errno of the
 * state write. */
int agent_core_set_translation(struct agent_core *core, uint32_t id, enum flowsdn_cni_svc_translation svc,
			       struct agent_api_endpoint *ret, struct diag *diag);

struct agent_policy;
struct agent_policy_meta;
/* The policy state (agent/policy.h), owned by the core. */
struct agent_policy *agent_core_policy(struct agent_core *core);
/* PUT /v1/endpoint/{id}/labels: the namespace, pod name, labels and
 * named ports of endpoint @id (agent_policy_endpoint_set()).
 * -FLOWSDN_E_AGENT_NOT_FOUND for an unknown id. */
int agent_core_endpoint_labels(struct agent_core *core, uint32_t id, const struct agent_policy_meta *meta,
			       struct diag *diag);
/* IPAM: replaces the pools (flowsdn_ipam_set_pools(): a pool left out
 * that still holds addresses drains: they stay with their endpoints until
 * released and are never given again); @ret_pools (room for @max) gets
 * the pools now held, the draining ones last.  @why (may be NULL) says
 * what was refused.  0 or its errors. */
int agent_core_set_pools(struct agent_core *core, const struct flowsdn_prefix *pools, size_t n,
			 struct flowsdn_prefix *ret_pools, size_t max, size_t *ret_n, char *why, size_t why_size);
/* IPAM: the pools (at most @max) and every allocation. */
int agent_core_ipam(struct agent_core *core, struct flowsdn_ipam_pool_summary *pools, size_t max, size_t *ret_n_pools,
		    struct flowsdn_ipam_allocation **ret_allocs, size_t *ret_n_allocs);

/* Kubernetes mode (agent/k8s.h): @fn answers GET /v1/node/routes with
 * its JSON (malloc'd) until it is set back to NULL (before what @userdata
 * points to is freed).  agent_core_node_routes() calls it, or returns
 * -FLOWSDN_E_AGENT_NOT_FOUND when the agent is not in Kubernetes mode. */
void agent_core_set_node_routes(struct agent_core *core, int (*fn)(void *userdata, char **ret_json), void *userdata);
int agent_core_node_routes(struct agent_core *core, char **ret_json);

struct agent_status {
	time_t started;
	size_t endpoints;
	unsigned int restored, replayed;
	unsigned int refused;       /* saved endpoints refused at restore (conflicts) */
	size_t deleting;            /* DELs whose veth is still being removed */
	bool datapath;              /* loaded ("datapath": true) */
	unsigned int uplinks;       /* uplink-interfaces with the uplink program */
	const char *datapath_mode;  /* "tcx", "tc clsact"; static */
	int ipam_err;               /* 0 or the IPAM summary's error */
	bool state_ok;              /* the last state write worked and no saved endpoint was refused */
};
void agent_core_status(struct agent_core *core, struct agent_status *ret);

/* Agent-side latency of the ADD and DEL verbs. */
enum agent_verb { AGENT_VERB_ADD, AGENT_VERB_DEL, AGENT_VERB_MAX_ };
struct agent_timing {
	uint64_t count, errors;
	size_t samples;
	double median_ms, p95_ms, max_ms; /* over the last samples */
};
void agent_core_timing(struct agent_core *core, enum agent_verb verb, struct agent_timing *ret);

#endif
