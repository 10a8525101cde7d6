/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's policy state (flowsdn-agent(8), /v1/policy, /v1/namespace,
 * /v1/identity, PUT /v1/endpoint/{id}/labels): Kubernetes NetworkPolicy
 * objects and namespaces, the endpoints' namespace, pod name, labels and
 * named ports, identities allocated from the labels (released with the
 * endpoint), and live enforcement: after every change the policy
 * database (<flowsdn/policy.h>) recompiles the endpoints it touches and
 * each one is switched atomically (flowsdn_maps_policy_switch()).
 *
 * A change that cannot be compiled (an endpoint over its capacity) is
 * undone: the database and the maps keep the previous policy and the
 * call fails.  A switch that fails leaves that endpoint's previous policy
 * in force; the call fails and names it.  One mutex guards the state; it
 * is held across map updates (kernel calls the outside does not drive)
 * and the writes of the agent's own state directory, never across
 * network or file I/O of a client.
 *
 * What the API sets (namespaces, policies, endpoint labels) is saved in
 * <state-dir>/policy/ (policy-store.h) before the call returns and
 * restored at start, before the endpoints are adopted: agent_core_new()
 * calls agent_policy_load() (the configuration's objects, not saved: the
 * configuration stays their home), agent_policy_restore() (the saved
 * objects, over the configuration's of the same name), then
 * agent_policy_endpoint_restore() for each endpoint it adopts and
 * agent_policy_restore_done().  Private to agent/.
 */
#ifndef FLOWSDN_AGENT_POLICY_H
#define FLOWSDN_AGENT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/datapath.h>
#include <flowsdn/policy.h>

struct diag;
struct agent_policy;
struct json_value;

#define AGENT_POLICY_MAX_LABELS 64
#define AGENT_POLICY_MAX_PORTS 64

/* Creates the state; identities are kept under @state_dir/identities.
 * @maps (borrowed, may be NULL: compile without a datapath). */
int agent_policy_new(const char *state_dir, struct flowsdn_maps *maps, struct agent_policy **ret);
void agent_policy_free(struct agent_policy *p);

/* What an endpoint is, as the policy sees it. */
struct agent_policy_meta {
	const char *namespace_name; /* NULL or "": the endpoint is outside policy (allows everything) */
	const char *pod_name;       /* NULL: the container id's first 63 bytes */
	const struct flowsdn_policy_label *labels;
	size_t n_labels;
	const struct flowsdn_policy_named_port *ports;
	size_t n_ports;
};

/* An endpoint's metadata read from the body of PUT
 * /v1/endpoint/{id}/labels ({"namespace", "name", "labels", "namedPorts"},
 * flowsdn-agent(8)); the strings point into @root. */
struct agent_policy_meta_buf {
	struct agent_policy_meta meta;
	struct flowsdn_policy_label labels[AGENT_POLICY_MAX_LABELS];
	struct flowsdn_policy_named_port ports[AGENT_POLICY_MAX_PORTS];
	struct json_value *root;
};
/* -FLOWSDN_E_AGENT_REFUSED with the field named in @diag; @b is cleared
 * on failure.  The one reader of that body. */
int agent_policy_meta_parse(const char *body, size_t len, struct agent_policy_meta_buf *b, struct diag *diag);
void agent_policy_meta_buf_clear(struct agent_policy_meta_buf *b);
/* @m as such a body (malloc'd). */
int agent_policy_meta_format(const struct agent_policy_meta *m, char **ret_json);

/* Sets (or replaces) the metadata of the published endpoint @ep (its id,
 * addresses and interface), allocates its identity, republishes it with
 * that identity and applies the policy.  -EINVAL (names or labels
 * Kubernetes refuses; @diag says which), -FLOWSDN_E_POLICY_* codes,
 * -errno of the maps. */
int agent_policy_endpoint_set(struct agent_policy *p, const struct flowsdn_endpoint *ep, const char *container_id,
			      const struct agent_policy_meta *meta, struct diag *diag);
/* Forgets endpoint @ep_id (its identity reference is released). */
void agent_policy_endpoint_remove(struct agent_policy *p, uint32_t ep_id);

/* PUT /v1/policy/{ns}/{name}: @json is a networking.k8s.io/v1
 * NetworkPolicy; its tier from metadata.annotations["flowsdn.io/tier"].
 * -FLOWSDN_E_POLICY_INVALID/_JSON with the API server's message in
 * @diag. */
int agent_policy_put(struct agent_policy *p, const char *ns, const char *name, const char *json, size_t len,
		     struct diag *diag);
/* -FLOWSDN_E_POLICY_NOT_FOUND when there is none. */
int agent_policy_delete(struct agent_policy *p, const char *ns, const char *name, struct diag *diag);
/* The stored object (@ns and @name) or the list of all (@ns NULL) as
 * JSON.  -FLOWSDN_E_POLICY_NOT_FOUND. */
int agent_policy_get(struct agent_policy *p, const char *ns, const char *name, char **ret_json);

/* PUT /v1/namespace/{name} {"labels":{...}}. */
int agent_policy_namespace_put(struct agent_policy *p, const char *name, const char *json, size_t len,
			       struct diag *diag);
int agent_policy_namespace_delete(struct agent_policy *p, const char *name, struct diag *diag);
int agent_policy_namespaces(struct agent_policy *p, char **ret_json);

/* GET /v1/identity: the identities of the endpoints. */
int agent_policy_identities(struct agent_policy *p, char **ret_json);
/* GET /v1/policy/verdicts: per endpoint, per rule, allowed and denied
 * packets (from the policy map's entry counters). */
int agent_policy_verdicts(struct agent_policy *p, char **ret_json);

/* POST /v1/policy/lookup: the verdict endpoint @ep_id gives a packet in
 * @direction (FLOWSDN_POLICY_INGRESS/EGRESS) with the peer @peer, as the
 * compiled entries decide it (what the datapath does and counts) and as
 * the simulator reads the objects, each with its deciding rule or
 * reason.  -FLOWSDN_E_AGENT_NOT_FOUND (no such endpoint, or outside
 * policy: @diag says which). */
int agent_policy_lookup(struct agent_policy *p, uint32_t ep_id, int direction, const struct flowsdn_addr *peer,
			uint8_t protocol, uint16_t port, char **ret_json, struct diag *diag);

/* The host firewall (flowsdn-agent(8) "HOST FIREWALL", agent/hostfw.h):
 * the policies of namespace AGENT_HOSTFW_NAMESPACE (podSelector {},
 * ingress only; other ones are refused) judge what arrives on the
 * uplinks for the node, compiled for the reserved endpoint
 * FLOWSDN_HOSTFW_EP_ID (POST /v1/policy/lookup takes it too).
 *
 * Sets the mode (enum flowsdn_hostfw_mode): the host's entries are
 * switched with it in one step; saved (PUT /v1/hostfw) when the state is
 * persisted.  On failure the previous mode stays.  -EINVAL, -errno. */
int agent_policy_hostfw_set_mode(struct agent_policy *p, unsigned int mode, struct diag *diag);
/* The body of PUT /v1/hostfw, {"mode": "off"|"audit"|"enforce"}:
 * -FLOWSDN_E_AGENT_REFUSED with what is wrong in @diag.  The one reader
 * of that body (the route and the saved mode). */
int agent_policy_hostfw_body_parse(const char *body, size_t len, unsigned int *ret_mode, struct diag *diag);
/* GET /v1/hostfw (@verdicts false): mode, whether a host policy selects
 * the node, entries and counters; GET /v1/hostfw/verdicts: the same and
 * the per-rule counters of the entries in force. */
int agent_policy_hostfw(struct agent_policy *p, bool verdicts, char **ret_json);

struct agent_config;
/* The "host-firewall" mode, "namespaces" and "policies" of the
 * configuration (flowsdn-agent.conf(5)), applied in that order; the first refused
 * names its item in @diag ("policies[2]: NetworkPolicy... is invalid"). */
int agent_policy_load(struct agent_policy *p, const struct agent_config *cfg, struct diag *diag);

/* Applies the saved namespaces and policies and reads the saved endpoint
 * labels (applied by agent_policy_endpoint_restore()).  A damaged or
 * refused file is quarantined and named in the log; the others load.
 * Returns how many were quarantined, or -errno. */
int agent_policy_restore(struct agent_policy *p);
/* Gives the adopted endpoint @ep of @container_id its saved metadata
 * (nothing when there is none, or it was another owner's): its policy is
 * switched from the entries in force to the recompiled ones, with no
 * moment in between where it is open.  0, or the error of
 * agent_policy_endpoint_set(). */
int agent_policy_endpoint_restore(struct agent_policy *p, const struct flowsdn_endpoint *ep,
				  const char *container_id);
/* After the last endpoint_restore: forgets the saved labels of endpoints
 * not adopted, drops the identity references the previous agent held
 * (the restored endpoints hold their own now) and deletes the policy
 * entries no packet can meet. */
void agent_policy_restore_done(struct agent_policy *p);

#endif
