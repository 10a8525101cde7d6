/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/policy.h> — the policy compiler: Kubernetes NetworkPolicy
 * (networking.k8s.io/v1, JSON) import, a model of namespaces and pods, the
 * compiler to per-endpoint policy map entries, and a simulator.
 *
 * Semantics (Kubernetes NetworkPolicy, as documented in the API reference):
 *  - A policy selects the pods of its own namespace that match
 *    spec.podSelector ({} selects all of them).  A pod selected by at least
 *    one policy whose policyTypes hold "Ingress" (or "Egress") is isolated
 *    in that direction: only what the union of the rules of all those
 *    policies allows gets through.  A pod selected by none is not isolated.
 *  - policyTypes defaults to ["Ingress"], plus "Egress" when spec.egress
 *    has at least one rule.  An empty rule list isolates and allows
 *    nothing; a rule without "from"/"to" (or with an empty list) matches
 *    every peer; a rule without "ports" (or with an empty list) matches
 *    every port of every protocol.
 *  - A peer is an ipBlock (cidr minus except), or a podSelector (pods of
 *    the policy's namespace), or a namespaceSelector (all pods of the
 *    matching namespaces), or both selectors (the matching pods of the
 *    matching namespaces).  Namespaces carry the automatic label
 *    kubernetes.io/metadata.name.
 *  - ipBlock selects cluster-external addresses: the Kubernetes reference
 *    says ipBlock "should be cluster-external IPs, since Pod IPs are
 *    ephemeral", and leaves pod addresses to the implementation.  Here a
 *    pod (an address of a pod in the model) is selected only by the
 *    selectors, never by an ipBlock, exactly as the datapath resolves a
 *    pod's address to the pod's identity.
 *  - Ports: protocol TCP (default), UDP or SCTP; a number, a range
 *    (port..endPort) or a name.  A named port is resolved against the pod
 *    that receives the traffic: the selected pod for ingress, the peer pod
 *    for egress (an external address has no named ports).  Both the name
 *    and the protocol must match a container port.
 *
 * Tiers.  Every policy has a tier, FLOWSDN_POLICY_TIER_ALLOW for imported
 * Kubernetes policies.  The other tiers express what a Kubernetes policy
 * cannot (the Flash isolation rules): a flow takes the verdict of the
 * highest tier whose rule matches it —
 *   PROTECT (deny) > EXCEPTION (allow) > DENY (deny) > ALLOW (allow)
 * — and the direction's default when no rule matches.  So a CIDR DENY
 * beats any allow, an EXCEPTION (the DNS resolvers on port 53) opens a
 * hole in a DENY, and a PROTECT range can be opened by nothing.  Only
 * ALLOW-tier policies isolate (turn the default into deny).
 *
 * Identities.  Each pod has the numeric identity (from the identity
 * store, <flowsdn/identity.h>) of its label set: its labels plus
 * io.kubernetes.pod.namespace=NAMESPACE (a pod may not carry that label
 * itself).  Namespace labels are not part of it; namespaceSelectors are
 * evaluated against the namespace's current labels.  Each prefix named by an
 * ipBlock (cidr and except), plus 0.0.0.0/0 and ::/0, gets a node-local
 * CIDR identity (>= 0x01000000); the ipcache maps every pod address to its
 * pod's identity and every such prefix to its CIDR identity, and a
 * packet's peer identity is the longest ipcache match.
 *
 * Compiled form (the flowsdn_policy map contract, <flowsdn/maps.h>): per
 * endpoint and direction, LPM entries
 *   (peer identity or 0 = any peer, protocol or 0 = any, port block) -> allow|deny
 * and the direction's default (deny when isolated).  The datapath looks up
 * (peer identity, protocol, port) and then (0, protocol, port); deny if
 * either match denies, else allow if either allows, else the default.  The
 * compiler flattens the tiers so that this two-lookup rule gives exactly
 * the tiered verdict: the any-peer key only ever holds ALLOW-tier allows;
 * every identity key holds, for each port block, the verdict of the
 * highest tier that covers it; port ranges become at most 30 aligned
 * power-of-two port blocks each.
 *
 * Atomic switch.  An endpoint's entries are replaced as a whole, never
 * edited in place: flowsdn_maps_policy_switch() (<flowsdn/datapath.h>)
 * writes the complete new set under the endpoint's inactive policy
 * generation (the key's ep_id with its top bit = the generation,
 * FLOWSDN_POLICY_KEY_ID() of <flowsdn/maps.h>), then switches the
 * endpoint (one update of each of its endpoint-info values, which carry
 * the generation and the default-deny flags together), then deletes the
 * old generation.  A packet sees either the old set or the new one, never
 * a partial set and never an empty one.  So the map needs room for two
 * sets of the largest endpoint: the capacity check at compile time
 * (max_entries_per_endpoint) is what guarantees it, and an endpoint that
 * exceeds it is an error, never a truncated map.
 *
 * Incremental updates.  Applying, replacing or deleting a policy marks
 * dirty the endpoints it selects (before and after the change) — plus,
 * when the change adds or removes a CIDR identity, the endpoints whose
 * ipBlock rules contain that prefix.  flowsdn_policy_db_compile()
 * recomputes the dirty endpoints only and reports which; the result is
 * the same as flowsdn_policy_db_compile() after
 * flowsdn_policy_db_invalidate_all().
 *
 * Thread safety: none; one database is used by one thread at a time.
 */
#ifndef FLOWSDN_POLICY_H
#define FLOWSDN_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>
#include <flowsdn/common.h>
#include <flowsdn/diag.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Domain errors of the policy module (block 4400). */
enum flowsdn_policy_error {
	FLOWSDN_E_POLICY_BASE = FLOWSDN_E_BASE + 400,
	FLOWSDN_E_POLICY_JSON = FLOWSDN_E_POLICY_BASE,    /* not (strict) JSON, or over the JSON limits */
	FLOWSDN_E_POLICY_INVALID,        /* the object fails validation (see the diag) */
	FLOWSDN_E_POLICY_CAPACITY,       /* an endpoint needs more entries than the map holds */
	FLOWSDN_E_POLICY_NOT_FOUND,      /* no such namespace, pod, policy or endpoint */
	FLOWSDN_E_POLICY_ADDR_IN_USE,    /* the address belongs to another pod */
	FLOWSDN_E_POLICY_IDENTITIES,     /* identity space exhausted */
	FLOWSDN_E_POLICY_NOT_COMPILED,   /* the endpoint has changes not compiled yet */
	FLOWSDN_E_POLICY_MAX_,           /* end of the block (not an error) */
};

enum flowsdn_policy_direction {
	FLOWSDN_POLICY_INGRESS = 0, /* to the endpoint (= FLOWSDN_DIR_INGRESS) */
	FLOWSDN_POLICY_EGRESS = 1,  /* from the endpoint (= FLOWSDN_DIR_EGRESS) */
};

enum flowsdn_policy_tier {
	FLOWSDN_POLICY_TIER_ALLOW = 1,     /* Kubernetes allow rules (isolating) */
	FLOWSDN_POLICY_TIER_DENY = 2,      /* deny, beats ALLOW */
	FLOWSDN_POLICY_TIER_EXCEPTION = 3, /* allow, beats DENY */
	FLOWSDN_POLICY_TIER_PROTECT = 4,   /* deny, beats everything */
};

/* ---------------------------------------------------------------- import */

/* Kinds of validation failure, with the Kubernetes cause reasons. */
enum flowsdn_policy_cause_type {
	FLOWSDN_POLICY_CAUSE_INVALID = 1,   /* "FieldValueInvalid" */
	FLOWSDN_POLICY_CAUSE_REQUIRED,      /* "FieldValueRequired" */
	FLOWSDN_POLICY_CAUSE_NOT_SUPPORTED, /* "FieldValueNotSupported" */
	FLOWSDN_POLICY_CAUSE_FORBIDDEN,     /* "FieldValueForbidden" */
	FLOWSDN_POLICY_CAUSE_TYPE,          /* "FieldValueTypeInvalid": wrong JSON type */
	FLOWSDN_POLICY_CAUSE_UNKNOWN_FIELD, /* "FieldValueUnknown": field not in the schema */
};

/* A refused policy's diag (<flowsdn/diag.h>) keeps at most this many
 * causes, in the order the API server reports them; the rest are counted
 * as dropped.  Each cause is one entry: path = the field
 * ("spec.ingress[0].from[0].ipBlock.cidr"), code = its Kubernetes reason
 * (flowsdn_policy_cause_reason(): "FieldValueInvalid", ...), message = the
 * API server's ("Invalid value: \"10.0.0.0/33\": must be a valid CIDR
 * value, ..."); the diag's subject is metadata.name.  A JSON error is one
 * "json-*" entry with its line and column. */
#define FLOWSDN_POLICY_MAX_CAUSES 16

/* The Kubernetes reason string of a cause type ("FieldValueInvalid"...);
 * "" for an unknown type. */
FLOWSDN_API const char *flowsdn_policy_cause_reason(enum flowsdn_policy_cause_type type);

/* Formats the diag like the API server's Status message:
 *   NetworkPolicy.networking.k8s.io "NAME" is invalid: FIELD: MESSAGE
 * (several causes: "is invalid: [F1: M1, F2: M2]"), or the JSON error with
 * its line and column.  Returns the length it needed (snprintf style, so
 * truncation shows as a value >= @size), -EINVAL for NULL @diag. */
FLOWSDN_API int flowsdn_policy_diag_format(const struct flowsdn_diag *diag, char *buf, size_t size);

struct flowsdn_policy_parse_opts {
	size_t sz;
	/* Namespace for an object without metadata.namespace (like
	 * "kubectl -n"); NULL makes metadata.namespace required. */
	const char *default_namespace;
	/* enum flowsdn_policy_tier; 0 = FLOWSDN_POLICY_TIER_ALLOW. */
	int tier;
};

/* A validated NetworkPolicy (opaque). */
struct flowsdn_policy;

/* Parses and validates one NetworkPolicy object (apiVersion
 * networking.k8s.io/v1, kind NetworkPolicy; both may be omitted) from the
 * @len bytes of JSON at @json, the way the API server validates a create:
 * every rule of ValidateNetworkPolicy (selectors, label keys and values,
 * ports, protocols, CIDRs with strict IP validation, except inside cidr,
 * peers, policyTypes) plus unknown fields and wrong JSON types, each
 * reported with its exact field path.  Fields the compiler does not use
 * (status, most of metadata) are accepted unchecked.  Defaults are applied
 * (protocol TCP, policyTypes).
 * On success *ret_policy is a new policy (flowsdn_policy_free()).
 * Errors: -EINVAL (NULL argument, bad opts), -ENOMEM,
 * -FLOWSDN_E_POLICY_JSON, -FLOWSDN_E_POLICY_INVALID; @diag (may be
 * NULL) says what was wrong.  *ret_policy is untouched on failure. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_policy_parse(const char *json, size_t len,
						 const struct flowsdn_policy_parse_opts *opts,
						 struct flowsdn_policy **ret_policy,
						 struct flowsdn_diag *diag);

/* Frees a policy (NULL is fine).  Do not free one handed to a database. */
FLOWSDN_API void flowsdn_policy_free(struct flowsdn_policy *policy);

/* metadata.name and metadata.namespace of @policy, owned by it (NULL when
 * @policy is NULL). */
FLOWSDN_API const char *flowsdn_policy_name(const struct flowsdn_policy *policy);
FLOWSDN_API const char *flowsdn_policy_namespace(const struct flowsdn_policy *policy);
/* Bit (1 << FLOWSDN_POLICY_INGRESS) and/or (1 << FLOWSDN_POLICY_EGRESS):
 * the policyTypes after defaulting. */
FLOWSDN_API unsigned int flowsdn_policy_types(const struct flowsdn_policy *policy);
FLOWSDN_API int flowsdn_policy_tier(const struct flowsdn_policy *policy);

/* ---------------------------------------------------------------- model */

struct flowsdn_policy_label {
	const char *key;
	const char *value;
};

/* A named container port of a pod. */
struct flowsdn_policy_named_port {
	const char *name;  /* IANA_SVC_NAME: 1-15 of [a-z0-9-], one letter */
	uint8_t protocol;  /* IPPROTO_TCP, IPPROTO_UDP or IPPROTO_SCTP */
	uint16_t port;     /* 1-65535 */
};

struct flowsdn_policy_pod {
	size_t sz;
	const char *namespace_name;
	const char *name;
	const struct flowsdn_policy_label *labels;
	size_t n_labels;
	const struct flowsdn_policy_named_port *ports;
	size_t n_ports;
	const struct flowsdn_addr *addrs;  /* the pod's addresses (IPv4 and/or IPv6) */
	size_t n_addrs;
};

struct flowsdn_identity_store;

struct flowsdn_policy_db_opts {
	size_t sz;
	/* Entries one endpoint (both directions) may have: [16384]. */
	size_t max_entries_per_endpoint;
	/* Required: the identity store (<flowsdn/identity.h>) that numbers
	 * pods' label sets; borrowed, it must outlive the database. */
	struct flowsdn_identity_store *identities;
};

/* The policies, namespaces, pods and identities, and the compiled entries. */
struct flowsdn_policy_db;

/* Creates an empty database.  @opts must name the identity store.
 * Errors: -EINVAL, -ENOMEM. */
FLOWSDN_API int flowsdn_policy_db_new(const struct flowsdn_policy_db_opts *opts,
				      struct flowsdn_policy_db **ret_db);

/* Frees the database and every policy handed to it (NULL is fine). */
FLOWSDN_API void flowsdn_policy_db_free(struct flowsdn_policy_db *db);

/* Creates or replaces a namespace and its labels (copied).  The label
 * kubernetes.io/metadata.name=NAME is always set.  Pods of a namespace
 * that was never set belong to an implicit namespace with that label only.
 * Errors: -EINVAL (NULL, or a name/label Kubernetes refuses), -ENOMEM. */
FLOWSDN_API int flowsdn_policy_db_set_namespace(struct flowsdn_policy_db *db, const char *name,
						const struct flowsdn_policy_label *labels,
						size_t n_labels);

/* Creates or replaces a pod (everything copied).  *ret_ep_id (may be NULL)
 * is the pod's endpoint id, stable for the life of the pod (ids of deleted
 * pods are reused).
 * Errors: -EINVAL (NULL, invalid labels, port names, protocols,
 * duplicate label keys, the label io.kubernetes.pod.namespace), -FLOWSDN_E_POLICY_ADDR_IN_USE (an address of
 * another pod), -FLOWSDN_E_POLICY_IDENTITIES, -ENOMEM. */
FLOWSDN_API int flowsdn_policy_db_set_pod(struct flowsdn_policy_db *db,
					  const struct flowsdn_policy_pod *pod,
					  uint32_t *ret_ep_id);

/* Replaces the labels of the pod "@namespace_name/@name" (copied): its
 * addresses, named ports and endpoint id stay, its compiled entries stay
 * installed until the next compile recomputes it and the endpoints whose
 * rules select it.  Errors as flowsdn_policy_db_set_pod(), and
 * -FLOWSDN_E_POLICY_NOT_FOUND when there is no such pod. */
FLOWSDN_API int flowsdn_policy_db_set_pod_labels(struct flowsdn_policy_db *db, const char *namespace_name,
						 const char *name, const struct flowsdn_policy_label *labels,
						 size_t n_labels);

/* Deletes a pod.  -FLOWSDN_E_POLICY_NOT_FOUND when there is none. */
FLOWSDN_API int flowsdn_policy_db_delete_pod(struct flowsdn_policy_db *db,
					     const char *namespace_name, const char *name);

/* Adds @policy, or replaces the policy of the same namespace and name.
 * The database owns @policy from then on (also on failure: it is freed).
 * Errors: -EINVAL, -ENOMEM. */
FLOWSDN_API int flowsdn_policy_db_apply(struct flowsdn_policy_db *db, struct flowsdn_policy *policy);

/* Deletes a policy.  -FLOWSDN_E_POLICY_NOT_FOUND when there is none. */
FLOWSDN_API int flowsdn_policy_db_delete(struct flowsdn_policy_db *db,
					 const char *namespace_name, const char *name);

/* Marks every endpoint dirty (the next compile is a full recompute). */
FLOWSDN_API void flowsdn_policy_db_invalidate_all(struct flowsdn_policy_db *db);

/* Endpoint id of the pod owning @addr; -FLOWSDN_E_POLICY_NOT_FOUND. */
FLOWSDN_API int flowsdn_policy_db_endpoint_by_addr(const struct flowsdn_policy_db *db,
						   const struct flowsdn_addr *addr,
						   uint32_t *ret_ep_id);

/* ---------------------------------------------------------------- compile */

struct flowsdn_policy_compile_report {
	size_t sz;
	/* Out: the endpoints recomputed, ascending (owned by the database,
	 * valid until its next change). */
	const uint32_t *ep_ids;
	size_t n_ep_ids;
	/* Out, on -FLOWSDN_E_POLICY_CAPACITY: the endpoint, the entries it
	 * needed and the capacity. */
	uint32_t failed_ep_id;
	size_t failed_entries;
	size_t capacity;
};

/* Recomputes the entries of every dirty endpoint.  All or nothing: when
 * one endpoint exceeds max_entries_per_endpoint the call fails with
 * -FLOWSDN_E_POLICY_CAPACITY (naming it in @report) and every endpoint
 * keeps its previous entries, still dirty.  @report may be NULL.
 * Errors: -EINVAL, -ENOMEM, -FLOWSDN_E_POLICY_CAPACITY. */
FLOWSDN_API int flowsdn_policy_db_compile(struct flowsdn_policy_db *db,
					  struct flowsdn_policy_compile_report *report);

/* One compiled LPM entry of an endpoint (host byte order).
 * Key: (direction, identity, protocol, the first @port_bits bits of port).
 *   protocol 0: any protocol and port (port, port_bits 0)
 *   port_bits 0: any port of @protocol; 16: exactly @port */
struct flowsdn_policy_entry {
	uint32_t identity;   /* peer identity; 0 = any peer */
	uint8_t direction;   /* enum flowsdn_policy_direction */
	uint8_t protocol;    /* IPPROTO_*, 0 = any */
	uint8_t port_bits;   /* 0..16 */
	uint8_t deny;        /* 1 = deny, 0 = allow */
	uint16_t port;       /* first port of the block */
	uint8_t tier;        /* enum flowsdn_policy_tier that decided it */
	uint8_t pad0;
	uint32_t rule_id;    /* the deciding rule (see flowsdn_policy_db_rule_name) */
};

/* Bits of an endpoint's flags. */
#define FLOWSDN_POLICY_ENFORCE_INGRESS (1u << 0) /* default deny to the endpoint */
#define FLOWSDN_POLICY_ENFORCE_EGRESS (1u << 1)  /* default deny from the endpoint */

/* The installed (last compiled) entries of an endpoint, sorted by key
 * (owned by the database, valid until its next compile), and its
 * FLOWSDN_POLICY_ENFORCE_* flags.  Returns 0, or 1 when changes are
 * pending (the endpoint is dirty: these are still the previous entries,
 * which is what stays installed after a failed compile).
 * Errors: -EINVAL, -FLOWSDN_E_POLICY_NOT_FOUND,
 * -FLOWSDN_E_POLICY_NOT_COMPILED (never compiled). */
FLOWSDN_API int flowsdn_policy_db_entries(const struct flowsdn_policy_db *db, uint32_t ep_id,
					  const struct flowsdn_policy_entry **ret_entries,
					  size_t *ret_n, unsigned int *ret_flags);

struct flowsdn_policy_key;

/* Writes @entry of endpoint @ep_id as a key of the flowsdn_policy map
 * (struct flowsdn_policy_key of <flowsdn/maps.h>: prefixlen, ep_id,
 * direction, identity, protocol, dport in network order) and the value
 * flags (FLOWSDN_POLICY_F_DENY or 0) to store with entry->rule_id.
 * For the atomic switch, @ep_id is the policy generation the loader
 * writes (see the top of this header).  Errors: -EINVAL. */
FLOWSDN_API int flowsdn_policy_entry_to_key(const struct flowsdn_policy_entry *entry, uint32_t ep_id,
					    struct flowsdn_policy_key *ret_key, uint32_t *ret_flags);

/* One ipcache entry: an address prefix and its identity. */
struct flowsdn_policy_ipcache_entry {
	struct flowsdn_prefix prefix;
	uint32_t identity;
};

/* The ipcache the compiled entries assume (pod addresses as host
 * prefixes, CIDR identities), sorted by prefix; owned by the database,
 * valid until its next change.  Errors: -EINVAL, -ENOMEM. */
FLOWSDN_API int flowsdn_policy_db_ipcache(struct flowsdn_policy_db *db,
					  const struct flowsdn_policy_ipcache_entry **ret_entries,
					  size_t *ret_n);

/* The identity of the pod with endpoint id @ep_id. */
FLOWSDN_API int flowsdn_policy_db_identity(const struct flowsdn_policy_db *db, uint32_t ep_id,
					   uint32_t *ret_identity);

/* "NAMESPACE/NAME ingress[I]" (or egress[I]) of a rule_id into @buf;
 * returns the length or -FLOWSDN_E_POLICY_NOT_FOUND / -ENOSPC. */
FLOWSDN_API int flowsdn_policy_db_rule_name(const struct flowsdn_policy_db *db, uint32_t rule_id,
					    char *buf, size_t size);

enum flowsdn_policy_verdict {
	FLOWSDN_POLICY_VERDICT_ALLOW = 1,
	FLOWSDN_POLICY_VERDICT_DENY = 2,
};

/* Evaluates a packet of endpoint @ep_id in @direction with the peer
 * address @peer, exactly as the datapath does with the compiled maps:
 * longest ipcache match for the peer identity (else world), LPM lookups
 * of (identity, protocol, port) and (any, protocol, port), deny wins,
 * else allow, else the endpoint's default.  @port is ignored for
 * protocols without ports.  *ret_verdict is an enum flowsdn_policy_verdict.
 * Errors: -EINVAL, -FLOWSDN_E_POLICY_NOT_FOUND,
 * -FLOWSDN_E_POLICY_NOT_COMPILED. */
FLOWSDN_API int flowsdn_policy_db_lookup(struct flowsdn_policy_db *db, uint32_t ep_id, int direction,
					 const struct flowsdn_addr *peer, uint8_t protocol,
					 uint16_t port, int *ret_verdict);

/* Why a verdict was reached. */
enum flowsdn_policy_reason {
	FLOWSDN_POLICY_REASON_RULE = 1,     /* the rule rule_id decided */
	FLOWSDN_POLICY_REASON_DEFAULT_DENY, /* an allow-tier policy selects the endpoint in that
					     * direction and no rule allows: "default deny" */
	FLOWSDN_POLICY_REASON_NOT_SELECTED, /* no allow-tier policy selects it in that direction
					     * and no rule matches: "no policy selects" */
	FLOWSDN_POLICY_REASON_SELF,         /* the endpoint's own address: always allowed */
};

/* A verdict and what decided it. */
struct flowsdn_policy_decision {
	size_t sz;
	int verdict;      /* out: enum flowsdn_policy_verdict */
	int reason;       /* out: enum flowsdn_policy_reason */
	/* out, with FLOWSDN_POLICY_REASON_RULE: the deciding rule, as
	 * flowsdn_policy_db_rule_name() names it and as the datapath counts
	 * it (the rule_id of the policy map entry the packet meets); 0
	 * otherwise. */
	uint32_t rule_id;
	uint8_t tier;     /* out: its policy's enum flowsdn_policy_tier (0 without a rule) */
};

/* Short text of a reason: "rule", "default deny", "no policy selects",
 * "self"; NULL for another value. */
FLOWSDN_API const char *flowsdn_policy_reason_name(int reason);

/* flowsdn_policy_db_lookup() with what decided.  Of the rules that match
 * a packet, the one of the highest tier decides, and among rules of
 * that tier the lowest rule id (rule ids follow the order the policies
 * were added and their rules within each); the compiled entries carry
 * that rule, so the datapath's per-entry counters count the same one.
 * @ret->sz must be set; only its out fields are written, on success.
 * Errors as flowsdn_policy_db_lookup(). */
FLOWSDN_API int flowsdn_policy_db_lookup_decision(struct flowsdn_policy_db *db, uint32_t ep_id, int direction,
						  const struct flowsdn_addr *peer, uint8_t protocol, uint16_t port,
						  struct flowsdn_policy_decision *ret);

/* ---------------------------------------------------------------- simulator */

/* Evaluates the same question directly on the policy objects (written
 * independently of the compiler): does the endpoint @ep_id let a packet
 * with peer address @peer, @protocol and @port through in @direction?
 * The peer is the pod owning @peer if there is one, else an external
 * address.  *ret_verdict is an enum flowsdn_policy_verdict.
 * Errors: -EINVAL, -FLOWSDN_E_POLICY_NOT_FOUND. */
FLOWSDN_API int flowsdn_policy_db_simulate(const struct flowsdn_policy_db *db, uint32_t ep_id,
					   int direction, const struct flowsdn_addr *peer,
					   uint8_t protocol, uint16_t port, int *ret_verdict);

/* flowsdn_policy_db_simulate() with what decided, by the rule stated at
 * flowsdn_policy_db_lookup_decision() read on the policy objects: the
 * two report the same decision for the same question.  Errors as
 * flowsdn_policy_db_simulate(). */
FLOWSDN_API int flowsdn_policy_db_simulate_decision(const struct flowsdn_policy_db *db, uint32_t ep_id,
						    int direction, const struct flowsdn_addr *peer, uint8_t protocol,
						    uint16_t port, struct flowsdn_policy_decision *ret);

#ifdef __cplusplus
}
#endif

#endif
