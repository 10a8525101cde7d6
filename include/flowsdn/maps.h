/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/maps.h> — the map contract: every key and value struct of the
 * flowsdn datapath, the map names, sizes and flags, and the drop reasons.
 *
 * This is the ONE definition.  It is included both by the eBPF programs in
 * bpf/ (compiled with clang -target bpf) and by libflowsdn and its users;
 * there is no second copy "to be kept in sync".  It therefore uses only the
 * fixed-width kernel types of <linux/types.h> (__u8 ... __u64, __be16,
 * __be32), every hole is a named pad member that writers must zero, and
 * every size and offset is checked with a static assertion below.  A unit
 * test (tests/unit/test-maps-btf.c) compiles this header for the BPF target
 * with -g, reads the BTF and checks that each struct has the same size and
 * member offsets as the host build.
 *
 * Byte order: addresses and ports are in network order (as they appear in
 * packets); every other integer is in host order.
 *
 * Address families in keys are FLOWSDN_AF_INET (2) and FLOWSDN_AF_INET6
 * (10), the Linux AF_* values (the same as <flowsdn/addr.h>).  An IPv4
 * address occupies addr[0] of a __be32 addr[4]; addr[1..3] are zero.
 *
 * Maps (pinned by name under the bpffs directory of the datapath, by
 * default /sys/fs/bpf/flowsdn/):
 *
 *   flowsdn_ep       hash     endpoint_key     -> endpoint_info
 *                    local endpoints by address; one entry per address.
 *   flowsdn_ipcache  LPM trie ipcache_key      -> ipcache_value
 *                    remote prefix -> security identity (CIDR identities
 *                    written by the policy compiler, remote endpoints).
 *   flowsdn_policy   LPM trie policy_key       -> policy_value
 *                    per-endpoint, per-direction rules.
 *   flowsdn_epstat   per-CPU hash  __u32 endpoint id -> endpoint_counters
 *   flowsdn_drops    per-CPU array __u32 drop reason -> drop_counters
 *   flowsdn_svc      hash     service_key      -> service_value
 *   flowsdn_backend  hash     __u32 backend id -> backend
 *   flowsdn_maglev   hash of maps  __u32 svc_id -> (array __u32 slot -> maglev_value)
 *                    one Maglev table per backend set, its own size M.
 *   flowsdn_svc_slot hash     svc_slot_key     -> svc_slot_value
 *                    the backends a new flow of a service may get.
 *   flowsdn_affinity LRU hash affinity_key     -> affinity_value
 *                    ClientIP session affinity: client -> backend.
 *   flowsdn_sock_rnat LRU hash sock_revnat_key -> sock_revnat_value
 *                    socket LB reverse translation (recvmsg,
 *                    getpeername): socket + backend -> frontend, written
 *                    by connect() and unconnected UDP sendmsg(); a
 *                    connected socket's entry is deleted when it
 *                    connects again and when it is released.
 *
 * Service model.  A frontend (address, port, protocol) is a flowsdn_svc
 * key; its value names a backend set by svc_id.  The backend set is the
 * slots 0 .. slot_count-1 of flowsdn_svc_slot (ids of active backends, a
 * backend of weight w in w slots) for random choice, and, with
 * FLOWSDN_SVC_F_MAGLEV, the set's table in flowsdn_maglev (maglev_size
 * slots).  A
 * terminating or quarantined backend keeps its flowsdn_backend entry
 * (flows already on it go on) but has no slot: no new flow gets it.
 * Traffic policy Local: a frontend whose external and internal views
 * differ has two entries, scope EXTERNAL (looked up first; flag
 * FLOWSDN_SVC_F_TWO_SCOPES) and scope INTERNAL (what in-cluster clients,
 * the socket LB among them, use); each names its own svc_id.  Writers
 * (flowsdn_maps_service_publish()) write backends, then slots and Maglev
 * tables, then the service values, then remove stale slots, tables and
 * backends, so that a lookup never sees a half-written service.
 *   flowsdn_srcrange LPM trie srcrange_key     -> srcrange_value
 *                    per service: the sources allowed and denied to
 *                    reach it from outside (see "source ranges").
 *   flowsdn_ct       LRU hash ct_key           -> ct_entry
 *                    connection tracking, one table for the whole datapath
 *                    (policy and service reverse NAT); max entries from
 *                    the agent's conntrack-max, set before load.
 *   flowsdn_ctstat   per-CPU array __u32 0     -> ct_stats
 *   flowsdn_frag     LRU hash frag_key         -> frag_entry
 *                    the ports of a fragmented datagram's first fragment,
 *                    for its later fragments.
 *
 * Policy model.  An LPM trie can only treat the LAST varying field of a
 * key as a prefix: every byte before it must match exactly.  So a key
 * cannot carry both a CIDR prefix and a port range.  As in Cilium, the
 * peer is therefore always a numeric security identity (exact) and the
 * prefix is the destination port:
 *
 *   ep_id (32) | direction (8) | identity (32) | protocol (8) | dport (16)
 *
 *   prefixlen  72               any protocol, any port (L3 only)
 *   prefixlen  80               this protocol, any port
 *   prefixlen  80 + n (n<=16)   this protocol, ports sharing the top n bits
 *                               (a port range is a handful of such blocks)
 *
 * Identity 0 (FLOWSDN_IDENTITY_ANY) in a key means "any peer"; the
 * datapath looks up the peer's identity and then identity 0, and the
 * verdict is: deny if either match says deny, else allow if either
 * allows, else the endpoint's default (deny when the endpoint has
 * FLOWSDN_EP_F_ENFORCE_INGRESS/EGRESS for that direction, else allow).
 * Within one lookup the longest prefix wins, so a compiler that wants
 * "deny wins" writes any more-specific allow that a deny covers as deny.
 * Atomic switch: the ep_id of a policy key is the endpoint id with the
 * generation in its top bit (FLOWSDN_POLICY_KEY_ID(ep_id, gen); endpoint
 * ids stay below 2^31), and the datapath looks up the generation its
 * endpoint_info.policy_gen names.  A new policy is written complete
 * under the other generation, then policy_gen and the enforcement flags
 * flip in one update of each address entry, then the old generation is
 * deleted: a packet sees the old set or the new one, never a mix or an
 * empty set.
 * CIDR peers: the compiler gives each CIDR of a policy a local identity
 * (>= FLOWSDN_IDENTITY_LOCAL_BASE, as Cilium's CIDR identities) and
 * writes prefix -> identity into flowsdn_ipcache; a packet's peer
 * identity is the local endpoint's identity, else the longest ipcache
 * match, else FLOWSDN_IDENTITY_WORLD (FLOWSDN_MAP_IDENTITY_WORLD).  A CIDR rule that must also cover
 * longer prefixes present in the ipcache adds a rule for their identities
 * too (the selector semantics of the compiler).
 */
#ifndef FLOWSDN_MAPS_H
#define FLOWSDN_MAPS_H

#include <linux/types.h>

#ifndef __bpf__
#include <stddef.h>
#endif

#ifdef __cplusplus
#define FLOWSDN_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define FLOWSDN_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#define FLOWSDN_CHECK_SIZE(type, size) \
	FLOWSDN_STATIC_ASSERT(sizeof(struct type) == (size), #type " size")
#define FLOWSDN_CHECK_OFF(type, member, off) \
	FLOWSDN_STATIC_ASSERT(__builtin_offsetof(struct type, member) == (off), #type "." #member " offset")

/* ------------------------------------------------------------ map names */
#define FLOWSDN_MAP_ENDPOINTS "flowsdn_ep"
#define FLOWSDN_MAP_IPCACHE "flowsdn_ipcache"
#define FLOWSDN_MAP_POLICY "flowsdn_policy"
#define FLOWSDN_MAP_EP_COUNTERS "flowsdn_epstat"
#define FLOWSDN_MAP_DROPS "flowsdn_drops"
#define FLOWSDN_MAP_SERVICES "flowsdn_svc"
#define FLOWSDN_MAP_BACKENDS "flowsdn_backend"
#define FLOWSDN_MAP_MAGLEV "flowsdn_maglev"
#define FLOWSDN_MAP_SVC_SLOTS "flowsdn_svc_slot"
#define FLOWSDN_MAP_AFFINITY "flowsdn_affinity"
#define FLOWSDN_MAP_SOCK_REVNAT "flowsdn_sock_rnat"
#define FLOWSDN_MAP_SRCRANGE "flowsdn_srcrange"
#define FLOWSDN_MAP_CT "flowsdn_ct"
#define FLOWSDN_MAP_CT_STATS "flowsdn_ctstat"
#define FLOWSDN_MAP_FRAGS "flowsdn_frag"
#define FLOWSDN_MAP_HOSTFW "flowsdn_hostfw"
#define FLOWSDN_MAP_HOSTFW_STATS "flowsdn_hostfw_stat"

/* Capacities (max_entries). */
#define FLOWSDN_MAX_ENDPOINT_ADDRS 65536
#define FLOWSDN_MAX_IPCACHE 65536
#define FLOWSDN_MAX_POLICY 1048576 /* 5,000 endpoints x ~50 entries, twice during switches */
#define FLOWSDN_MAX_ENDPOINTS 16384
#define FLOWSDN_MAX_SERVICES 65536
#define FLOWSDN_MAX_BACKENDS 65536
#define FLOWSDN_MAX_MAGLEV_TABLES FLOWSDN_MAX_SERVICES /* tables at once; svc_id any but 0 */
#define FLOWSDN_MAX_SVC_SLOTS 262144
#define FLOWSDN_MAX_AFFINITY 65536
#define FLOWSDN_MAX_SOCK_REVNAT 65536
/* Slots of one backend set (sum of the weights of its active backends). */
#define FLOWSDN_SVC_MAX_SLOTS_PER_SET 65536
#define FLOWSDN_MAX_SRCRANGE 65536
#define FLOWSDN_CT_DEFAULT_MAX 65536 /* flowsdn_ct, unless the loader sets another size */
#define FLOWSDN_MAX_FRAGS 8192

/*
 * Security identities.  The reserved ones (host 1, world 2, init 5, ...)
 * are enum flowsdn_identity_reserved of <flowsdn/identity.h>, which this
 * header includes outside BPF; the BPF programs need only these: */
#define FLOWSDN_IDENTITY_ANY 0                /* policy key wildcard, never a packet's */
#define FLOWSDN_MAP_IDENTITY_WORLD 2          /* = FLOWSDN_IDENTITY_WORLD: no better match */
#define FLOWSDN_IDENTITY_LOCAL_BASE 0x01000000u /* identities the policy compiler gives CIDRs */

#ifndef __bpf__
#include <flowsdn/identity.h>
FLOWSDN_STATIC_ASSERT(FLOWSDN_MAP_IDENTITY_WORLD == FLOWSDN_IDENTITY_WORLD, "world identity");
FLOWSDN_STATIC_ASSERT(FLOWSDN_IDENTITY_ANY == FLOWSDN_IDENTITY_UNKNOWN, "wildcard identity");
FLOWSDN_STATIC_ASSERT(FLOWSDN_IDENTITY_LOCAL_BASE > FLOWSDN_IDENTITY_MAX_LOCAL, "CIDR identities");
#endif

/* ------------------------------------------------------------ endpoints */

/* flowsdn_ep key: one address of a local endpoint. */
struct flowsdn_endpoint_key {
	__be32 addr[4];  /* IPv4 in addr[0], rest zero */
	__u8 family;     /* FLOWSDN_AF_INET or FLOWSDN_AF_INET6 */
	__u8 pad0[3];    /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_endpoint_key, 20);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_key, addr, 0);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_key, family, 16);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_key, pad0, 17);

/* endpoint_info.flags */
#define FLOWSDN_EP_F_ENFORCE_INGRESS (1u << 0) /* default deny for traffic to the endpoint */
#define FLOWSDN_EP_F_ENFORCE_EGRESS (1u << 1)  /* default deny for traffic from the endpoint */
/* Services are translated per packet at tc on the endpoint's veth (its
 * sockets never reach the host kernel: gVisor netstack sandboxes), not by
 * the socket LB. */
#define FLOWSDN_EP_F_SVC_PACKET (1u << 2)
/* The flags the policy switch owns. */
#define FLOWSDN_EP_F_ENFORCE (FLOWSDN_EP_F_ENFORCE_INGRESS | FLOWSDN_EP_F_ENFORCE_EGRESS)
#define FLOWSDN_EP_F_ALL (FLOWSDN_EP_F_ENFORCE_INGRESS | FLOWSDN_EP_F_ENFORCE_EGRESS | FLOWSDN_EP_F_SVC_PACKET)

/* flowsdn_ep value: where the endpoint is and who it is. */
struct flowsdn_endpoint_info {
	__u32 ifindex;    /* host-side veth, in the node's namespace */
	__u32 ep_id;      /* endpoint id (key of flowsdn_epstat and policy) */
	__u32 identity;   /* security identity */
	__u32 flags;      /* FLOWSDN_EP_F_* */
	__u8 mac[6];      /* the endpoint's own MAC (inside its netns) */
	__u8 host_mac[6]; /* MAC of the host-side veth (the gateway's MAC) */
	__u8 policy_gen;  /* 0 or 1: the policy generation in force (see the policy model) */
	__u8 pad0[3];     /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_endpoint_info, 32);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_info, ifindex, 0);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_info, ep_id, 4);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_info, identity, 8);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_info, flags, 12);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_info, mac, 16);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_info, host_mac, 22);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_info, policy_gen, 28);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_info, pad0, 29);

/* flowsdn_epstat value (per CPU; readers add the CPUs up).  "rx" is
 * traffic delivered to the endpoint, "tx" traffic it sent. */
struct flowsdn_endpoint_counters {
	__u64 rx_packets;
	__u64 rx_bytes;
	__u64 tx_packets;
	__u64 tx_bytes;
	__u64 drop_packets;   /* dropped, any reason, either direction */
	__u64 drop_bytes;
	__u64 allow_ingress;  /* verdicts (packets; a tracked connection's count as allowed) */
	__u64 deny_ingress;
	__u64 allow_egress;
	__u64 deny_egress;
};
FLOWSDN_CHECK_SIZE(flowsdn_endpoint_counters, 80);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, rx_packets, 0);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, rx_bytes, 8);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, tx_packets, 16);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, tx_bytes, 24);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, drop_packets, 32);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, drop_bytes, 40);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, allow_ingress, 48);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, deny_ingress, 56);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, allow_egress, 64);
FLOWSDN_CHECK_OFF(flowsdn_endpoint_counters, deny_egress, 72);

/* ------------------------------------------------------------ ipcache */

/* flowsdn_ipcache key (LPM): prefixlen = 32 + the CIDR's length. */
struct flowsdn_ipcache_key {
	__u32 prefixlen;
	__u8 family;     /* exact (part of the first 32 prefix bits) */
	__u8 pad0[3];    /* zero */
	__be32 addr[4];
};
FLOWSDN_CHECK_SIZE(flowsdn_ipcache_key, 24);
FLOWSDN_CHECK_OFF(flowsdn_ipcache_key, prefixlen, 0);
FLOWSDN_CHECK_OFF(flowsdn_ipcache_key, family, 4);
FLOWSDN_CHECK_OFF(flowsdn_ipcache_key, pad0, 5);
FLOWSDN_CHECK_OFF(flowsdn_ipcache_key, addr, 8);
#define FLOWSDN_IPCACHE_PREFIX_BASE 32

struct flowsdn_ipcache_value {
	__u32 identity;
	__u32 flags;     /* reserved, zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_ipcache_value, 8);
FLOWSDN_CHECK_OFF(flowsdn_ipcache_value, identity, 0);
FLOWSDN_CHECK_OFF(flowsdn_ipcache_value, flags, 4);

/* ------------------------------------------------------------ policy */

enum flowsdn_direction {
	FLOWSDN_DIR_INGRESS = 0, /* to the endpoint */
	FLOWSDN_DIR_EGRESS = 1,  /* from the endpoint */
};

/* flowsdn_policy key (LPM), see the policy model above.  The fields are
 * in prefix order; prefixlen counts bits from ep_id on. */
struct flowsdn_policy_key {
	__u32 prefixlen;  /* FLOWSDN_POLICY_PREFIX_* + port bits */
	__u32 ep_id;
	__u8 direction;   /* enum flowsdn_direction */
	__u8 pad0[3];     /* zero; part of the exact prefix */
	__u32 identity;   /* peer identity, FLOWSDN_IDENTITY_ANY = any */
	__u8 protocol;    /* IPPROTO_TCP/UDP/SCTP/ICMP/ICMPV6; 0 with prefix L3 */
	__u8 pad1;        /* zero; part of the protocol prefix */
	__be16 dport;     /* network order; ICMP: the type in the high byte */
};
FLOWSDN_CHECK_SIZE(flowsdn_policy_key, 20);
FLOWSDN_CHECK_OFF(flowsdn_policy_key, prefixlen, 0);
FLOWSDN_CHECK_OFF(flowsdn_policy_key, ep_id, 4);
FLOWSDN_CHECK_OFF(flowsdn_policy_key, direction, 8);
FLOWSDN_CHECK_OFF(flowsdn_policy_key, pad0, 9);
FLOWSDN_CHECK_OFF(flowsdn_policy_key, identity, 12);
FLOWSDN_CHECK_OFF(flowsdn_policy_key, protocol, 16);
FLOWSDN_CHECK_OFF(flowsdn_policy_key, pad1, 17);
FLOWSDN_CHECK_OFF(flowsdn_policy_key, dport, 18);
/* The ep_id field of the keys of generation @gen (0 or 1) of @ep_id. */
#define FLOWSDN_POLICY_GEN_BIT 0x80000000u
#define FLOWSDN_POLICY_KEY_ID(ep_id, gen) ((__u32)(ep_id) | ((gen) ? FLOWSDN_POLICY_GEN_BIT : 0u))
/* prefixlen for "any protocol and port" (ep_id, direction+pad, identity) */
#define FLOWSDN_POLICY_PREFIX_L3 96
/* prefixlen for "this protocol, any port" (+ protocol and pad1) */
#define FLOWSDN_POLICY_PREFIX_PROTO 112
/* prefixlen of an exact port; a port block of 2^k ports is FULL - k */
#define FLOWSDN_POLICY_PREFIX_FULL 128

/* policy_value.flags */
#define FLOWSDN_POLICY_F_DENY (1u << 0) /* deny; without it the entry allows */

struct flowsdn_policy_value {
	__u32 flags;     /* FLOWSDN_POLICY_F_* */
	__u32 rule_id;   /* the compiler's rule number, for reports */
	__u64 packets;   /* packets that matched (updated by the datapath) */
	__u64 bytes;
};
FLOWSDN_CHECK_SIZE(flowsdn_policy_value, 24);
FLOWSDN_CHECK_OFF(flowsdn_policy_value, flags, 0);
FLOWSDN_CHECK_OFF(flowsdn_policy_value, rule_id, 4);
FLOWSDN_CHECK_OFF(flowsdn_policy_value, packets, 8);
FLOWSDN_CHECK_OFF(flowsdn_policy_value, bytes, 16);

/* ------------------------------------------------------------ services */

/* flowsdn_svc key: a frontend (ClusterIP/externalIP/LB IP/NodePort). */
struct flowsdn_service_key {
	__be32 addr[4];
	__be16 port;      /* network order */
	__u8 protocol;    /* IPPROTO_TCP/UDP/SCTP */
	__u8 family;
	__u8 scope;       /* FLOWSDN_SVC_SCOPE_* (traffic policy Local view) */
	__u8 pad0[3];     /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_service_key, 24);
FLOWSDN_CHECK_OFF(flowsdn_service_key, addr, 0);
FLOWSDN_CHECK_OFF(flowsdn_service_key, port, 16);
FLOWSDN_CHECK_OFF(flowsdn_service_key, protocol, 18);
FLOWSDN_CHECK_OFF(flowsdn_service_key, family, 19);
FLOWSDN_CHECK_OFF(flowsdn_service_key, scope, 20);
FLOWSDN_CHECK_OFF(flowsdn_service_key, pad0, 21);
#define FLOWSDN_SVC_SCOPE_EXTERNAL 0
#define FLOWSDN_SVC_SCOPE_INTERNAL 1

/* service_value.flags */
#define FLOWSDN_SVC_F_NODEPORT (1u << 0)
#define FLOWSDN_SVC_F_EXTERNAL_IP (1u << 1)
#define FLOWSDN_SVC_F_LOADBALANCER (1u << 2)
#define FLOWSDN_SVC_F_LOCAL (1u << 3)      /* traffic policy Local */
#define FLOWSDN_SVC_F_AFFINITY (1u << 4)   /* ClientIP session affinity */
#define FLOWSDN_SVC_F_MAGLEV (1u << 5)     /* backend by Maglev, else random */
/* This EXTERNAL-scope entry has an INTERNAL-scope twin for in-cluster
 * clients (internal and external traffic policies differ). */
#define FLOWSDN_SVC_F_TWO_SCOPES (1u << 6)
#define FLOWSDN_SVC_F_ALL 0x7fu

struct flowsdn_service_value {
	__u32 svc_id;        /* the backend set: key of its slots and Maglev table */
	__u32 slot_count;    /* slots 0..slot_count-1 in flowsdn_svc_slot; 0 = no backend */
	__u32 flags;         /* FLOWSDN_SVC_F_* */
	__u32 affinity_timeout; /* seconds */
	__u32 maglev_size;   /* M, the table size, when FLOWSDN_SVC_F_MAGLEV */
	__u32 pad0;          /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_service_value, 24);
FLOWSDN_CHECK_OFF(flowsdn_service_value, svc_id, 0);
FLOWSDN_CHECK_OFF(flowsdn_service_value, slot_count, 4);
FLOWSDN_CHECK_OFF(flowsdn_service_value, flags, 8);
FLOWSDN_CHECK_OFF(flowsdn_service_value, affinity_timeout, 12);
FLOWSDN_CHECK_OFF(flowsdn_service_value, maglev_size, 16);
FLOWSDN_CHECK_OFF(flowsdn_service_value, pad0, 20);

/* backend.state */
#define FLOWSDN_BACKEND_ACTIVE 0
#define FLOWSDN_BACKEND_TERMINATING 1
#define FLOWSDN_BACKEND_QUARANTINED 2

/* flowsdn_backend value (key: __u32 backend id, 0 is never used). */
struct flowsdn_backend {
	__be32 addr[4];
	__be16 port;      /* network order */
	__u8 protocol;
	__u8 family;
	__u8 state;       /* FLOWSDN_BACKEND_* */
	__u8 flags;       /* FLOWSDN_BACKEND_F_* */
	__u8 pad0[2];     /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_backend, 24);
FLOWSDN_CHECK_OFF(flowsdn_backend, addr, 0);
FLOWSDN_CHECK_OFF(flowsdn_backend, port, 16);
FLOWSDN_CHECK_OFF(flowsdn_backend, protocol, 18);
FLOWSDN_CHECK_OFF(flowsdn_backend, family, 19);
FLOWSDN_CHECK_OFF(flowsdn_backend, state, 20);
FLOWSDN_CHECK_OFF(flowsdn_backend, flags, 21);
FLOWSDN_CHECK_OFF(flowsdn_backend, pad0, 22);
/* backend.flags */
#define FLOWSDN_BACKEND_F_REMOTE (1u << 0) /* on another node (tc path: SNAT + FIB) */

/*
 * flowsdn_maglev: the Maglev tables, one per backend set.  The outer map
 * is a BPF_MAP_TYPE_HASH_OF_MAPS keyed by the set's svc_id (any id but 0;
 * the agent's ids are sparse, service id * 8 + set, so an outer array
 * indexed by svc_id would run out of room; at most
 * FLOWSDN_MAX_MAGLEV_TABLES tables at once); its entry is a
 * BPF_MAP_TYPE_ARRAY (BPF_F_INNER_MAP, so each table has its own size)
 * of service_value.maglev_size slots, key __u32 slot, value struct
 * flowsdn_maglev_value.  A flow's backend is slot (hash mod M); see
 * maglev_lookup() in bpf/lib/maglev.h.
 *
 * Why inner arrays (measured on kernel 6.18, M = 16381): a slot of an
 * array costs 8 bytes of kernel memory (memlock 131360 B for the table),
 * a {svc_id, slot} hash entry 80-88 bytes (1311568 B preallocated,
 * 1442472 B with BPF_F_NO_PREALLOC).  A lookup from BPF (outer hash plus
 * inner array) costs about as much as one {svc_id, slot} hash lookup:
 * 11.9 ns against 13.6 ns median (bench/maglev-map, load average 1.2);
 * an outer array of maps cost 0.1-2 ns but needs dense svc ids, which
 * the agent does not assign.  A flat array indexed by service
 * base + slot would need a range allocator and could not change one
 * service's size without moving others.
 *
 * Writers (flowsdn_maps_maglev_write()) write only the slots that differ
 * from the previous table (the Maglev diff), in place; a new service or
 * a new size gets a new inner table, filled before it is put in the
 * outer map, so a lookup sees either the old table or the complete new
 * one.  Slot ids are backend ids of flowsdn_backend (0 is no backend).
 */
struct flowsdn_maglev_value {
	__u32 backend_id;
};
FLOWSDN_CHECK_SIZE(flowsdn_maglev_value, 4);
FLOWSDN_CHECK_OFF(flowsdn_maglev_value, backend_id, 0);

/* flowsdn_svc_slot: slot @slot (0 .. slot_count-1) of backend set
 * @svc_id -> an active backend's id. */
struct flowsdn_svc_slot_key {
	__u32 svc_id;
	__u32 slot;
};
FLOWSDN_CHECK_SIZE(flowsdn_svc_slot_key, 8);
FLOWSDN_CHECK_OFF(flowsdn_svc_slot_key, svc_id, 0);
FLOWSDN_CHECK_OFF(flowsdn_svc_slot_key, slot, 4);

struct flowsdn_svc_slot_value {
	__u32 backend_id;
};
FLOWSDN_CHECK_SIZE(flowsdn_svc_slot_value, 4);
FLOWSDN_CHECK_OFF(flowsdn_svc_slot_value, backend_id, 0);

/* flowsdn_affinity key: (backend set, client).  The tc path's client is
 * its source address (family FLOWSDN_AF_INET/INET6); the socket LB's is
 * the client's network namespace (family FLOWSDN_AFFINITY_NETNS, the
 * 64-bit netns cookie in addr[0..1]), as a host process has no source
 * address yet when it connects. */
struct flowsdn_affinity_key {
	__be32 addr[4];
	__u32 svc_id;
	__u8 family;      /* FLOWSDN_AF_INET, FLOWSDN_AF_INET6 or FLOWSDN_AFFINITY_NETNS */
	__u8 pad0[3];     /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_affinity_key, 24);
FLOWSDN_CHECK_OFF(flowsdn_affinity_key, addr, 0);
FLOWSDN_CHECK_OFF(flowsdn_affinity_key, svc_id, 16);
FLOWSDN_CHECK_OFF(flowsdn_affinity_key, family, 20);
FLOWSDN_CHECK_OFF(flowsdn_affinity_key, pad0, 21);
#define FLOWSDN_AFFINITY_NETNS 0xff

struct flowsdn_affinity_value {
	__u64 last_used;  /* bpf_ktime_get_ns() of the last flow that used it */
	__u32 backend_id;
	__u32 pad0;       /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_affinity_value, 16);
FLOWSDN_CHECK_OFF(flowsdn_affinity_value, last_used, 0);
FLOWSDN_CHECK_OFF(flowsdn_affinity_value, backend_id, 8);
FLOWSDN_CHECK_OFF(flowsdn_affinity_value, pad0, 12);

/* flowsdn_sock_rnat key: a socket the socket LB translated (its cookie)
 * and the backend it sent to; the value is the frontend the application
 * asked for, which recvmsg and getpeername give back. */
struct flowsdn_sock_revnat_key {
	__u64 cookie;     /* bpf_get_socket_cookie() */
	__be32 addr[4];   /* backend address */
	__be16 port;      /* backend port, network order */
	__u8 family;
	__u8 pad0[5];     /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_sock_revnat_key, 32);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_key, cookie, 0);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_key, addr, 8);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_key, port, 24);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_key, family, 26);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_key, pad0, 27);

struct flowsdn_sock_revnat_value {
	__be32 addr[4];   /* frontend address */
	__be16 port;      /* frontend port, network order */
	__u8 family;
	__u8 pad0;        /* zero */
	__u32 svc_id;     /* backend set the backend was chosen from */
};
FLOWSDN_CHECK_SIZE(flowsdn_sock_revnat_value, 24);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_value, addr, 0);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_value, port, 16);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_value, family, 18);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_value, pad0, 19);
FLOWSDN_CHECK_OFF(flowsdn_sock_revnat_value, svc_id, 20);
/* ------------------------------------------------------------ source ranges */

/*
 * Source ranges of a service (loadBalancerSourceRanges, and the denied
 * ranges the Flash spec adds), enforced in BPF on traffic from outside.
 * One LPM trie for every service; a key is
 *
 *   svc_id (32) | list (8) | family (8) | pad (16) | addr (0..128)
 *
 * so that a lookup of (svc_id, list, family, source) finds the longest
 * range of that list.  The verdict for a source: denied if the DENY list
 * matches (deny wins, whatever the allow list says); else allowed if the
 * ALLOW list matches; else allowed only when the service has no allow
 * list at all (an empty allow list = everyone).  Whether it has one is
 * the META entry: list FLOWSDN_SRCRANGE_META with prefixlen
 * FLOWSDN_SRCRANGE_PREFIX_BASE (no address bits, family 0), value flag
 * FLOWSDN_SRCRANGE_F_HAS_ALLOW.  A service without any entry lets
 * everyone in.
 */
enum flowsdn_srcrange_list {
	FLOWSDN_SRCRANGE_ALLOW = 0,
	FLOWSDN_SRCRANGE_DENY = 1,
	FLOWSDN_SRCRANGE_META = 2,
};

struct flowsdn_srcrange_key {
	__u32 prefixlen;  /* FLOWSDN_SRCRANGE_PREFIX_BASE + the range's length */
	__u32 svc_id;     /* flowsdn_service_value.svc_id (the EXTERNAL scope's) */
	__u8 list;        /* enum flowsdn_srcrange_list */
	__u8 family;      /* FLOWSDN_AF_INET/INET6; 0 in the META entry */
	__u8 pad0[2];     /* zero; part of the exact prefix */
	__be32 addr[4];   /* the range's network address (host bits zero) */
};
FLOWSDN_CHECK_SIZE(flowsdn_srcrange_key, 28);
FLOWSDN_CHECK_OFF(flowsdn_srcrange_key, prefixlen, 0);
FLOWSDN_CHECK_OFF(flowsdn_srcrange_key, svc_id, 4);
FLOWSDN_CHECK_OFF(flowsdn_srcrange_key, list, 8);
FLOWSDN_CHECK_OFF(flowsdn_srcrange_key, family, 9);
FLOWSDN_CHECK_OFF(flowsdn_srcrange_key, pad0, 10);
FLOWSDN_CHECK_OFF(flowsdn_srcrange_key, addr, 12);
/* prefixlen of (svc_id, list, family, pad): the bits before the address */
#define FLOWSDN_SRCRANGE_PREFIX_BASE 64

/* srcrange_value.flags */
#define FLOWSDN_SRCRANGE_F_HAS_ALLOW (1u << 0) /* META: the service has an allow list */

struct flowsdn_srcrange_value {
	__u32 flags;      /* FLOWSDN_SRCRANGE_F_* (META), 0 in ranges */
	__u32 pad0;       /* zero */
	__u64 packets;    /* packets this entry decided (updated by the datapath) */
};
FLOWSDN_CHECK_SIZE(flowsdn_srcrange_value, 16);
FLOWSDN_CHECK_OFF(flowsdn_srcrange_value, flags, 0);
FLOWSDN_CHECK_OFF(flowsdn_srcrange_value, pad0, 4);
FLOWSDN_CHECK_OFF(flowsdn_srcrange_value, packets, 8);
/* ------------------------------------------------------------ conntrack */

/*
 * flowsdn_ct key: the tuple as the packet carries it in the direction the
 * connection was first seen (the "original" direction), after any service
 * DNAT of the tc path.  A reply is looked up with addresses and ports
 * swapped.  ICMP echo: the identifier in sport and 0 in dport, in both
 * directions (a reply's key swaps the addresses only).
 */
struct flowsdn_ct_key {
	__be32 saddr[4];  /* IPv4 in [0], rest zero */
	__be32 daddr[4];
	__be16 sport;     /* network order; ICMP: the echo identifier */
	__be16 dport;     /* network order; ICMP: 0 */
	__u8 protocol;    /* IPPROTO_* */
	__u8 family;      /* FLOWSDN_AF_INET or FLOWSDN_AF_INET6 */
	__u8 pad0[2];     /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_ct_key, 40);
FLOWSDN_CHECK_OFF(flowsdn_ct_key, saddr, 0);
FLOWSDN_CHECK_OFF(flowsdn_ct_key, daddr, 16);
FLOWSDN_CHECK_OFF(flowsdn_ct_key, sport, 32);
FLOWSDN_CHECK_OFF(flowsdn_ct_key, dport, 34);
FLOWSDN_CHECK_OFF(flowsdn_ct_key, protocol, 36);
FLOWSDN_CHECK_OFF(flowsdn_ct_key, family, 37);
FLOWSDN_CHECK_OFF(flowsdn_ct_key, pad0, 38);

/* ct_entry.tcp_state: what the connection has shown (bits accumulate). */
#define FLOWSDN_CT_TCP_SYN (1u << 0)        /* SYN in the original direction */
#define FLOWSDN_CT_TCP_SYNACK (1u << 1)     /* SYN+ACK in the reply direction */
#define FLOWSDN_CT_TCP_ESTABLISHED (1u << 2) /* handshake done (or picked up mid-stream) */
#define FLOWSDN_CT_TCP_FIN_ORIG (1u << 3)   /* FIN from the originator */
#define FLOWSDN_CT_TCP_FIN_REPLY (1u << 4)  /* FIN from the responder */
#define FLOWSDN_CT_TCP_RST (1u << 5)        /* RST from either side */
#define FLOWSDN_CT_TCP_CLOSING (FLOWSDN_CT_TCP_RST | FLOWSDN_CT_TCP_FIN_ORIG | FLOWSDN_CT_TCP_FIN_REPLY)

/* ct_entry.flags */
#define FLOWSDN_CT_F_SVC_XLATED (1u << 0) /* the tc service path translated it (rev_* valid) */
#define FLOWSDN_CT_F_REPLIED (1u << 1)    /* a packet was seen in the reply direction */
/* The tc path rewrote the flow's source (NodePort to another node's
 * backend): rev_addr/rev_port hold the client's own address and port, to
 * restore into replies' destination (the entry of the SNATed tuple). */
#define FLOWSDN_CT_F_SNAT (1u << 2)
/* The entry of a translated flow's frontend tuple (client -> frontend,
 * as the client sends it): backend_id is where its packets go;
 * rev_addr/rev_port is the source they leave with (the client's own, or
 * the node's address and port with FLOWSDN_CT_F_SNAT).  Never a reply's. */
#define FLOWSDN_CT_F_SVC_FRONT (1u << 3)
/* A connection of the node itself seen on an uplink (the host firewall,
 * bpf/lib/hostfw.h): opened by the host, or to it and let in. */
#define FLOWSDN_CT_F_HOST (1u << 4)
/* The flags ct_create() takes from its init entry. */
#define FLOWSDN_CT_F_INIT_MASK (FLOWSDN_CT_F_SVC_XLATED | FLOWSDN_CT_F_SNAT | FLOWSDN_CT_F_SVC_FRONT | FLOWSDN_CT_F_HOST)

/* ct_entry direction indexes (packets[], bytes[]). */
#define FLOWSDN_CT_DIR_ORIG 0
#define FLOWSDN_CT_DIR_REPLY 1

/* flowsdn_ct value. */
struct flowsdn_ct_entry {
	__u64 expires;      /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) after which it is dead */
	__u64 created;      /* bpf_ktime_get_ns() at creation */
	__u64 packets[2];   /* [FLOWSDN_CT_DIR_ORIG], [FLOWSDN_CT_DIR_REPLY] */
	__u64 bytes[2];
	__be32 rev_addr[4]; /* service frontend address to restore in replies' source */
	__be16 rev_port;    /* and its port (network order) */
	__u8 tcp_state;     /* FLOWSDN_CT_TCP_* */
	__u8 pad0;          /* zero */
	__u32 flags;        /* FLOWSDN_CT_F_* */
	__u32 svc_id;       /* service and backend of a translated flow */
	__u32 backend_id;
	__u32 policy_rule;  /* rule id that allowed the connection (0: no rule, default allow) */
	__u32 ep_id;        /* the local endpoint that judged it (0: none) */
};
FLOWSDN_CHECK_SIZE(flowsdn_ct_entry, 88);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, expires, 0);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, created, 8);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, packets, 16);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, bytes, 32);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, rev_addr, 48);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, rev_port, 64);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, tcp_state, 66);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, pad0, 67);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, flags, 68);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, svc_id, 72);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, backend_id, 76);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, policy_rule, 80);
FLOWSDN_CHECK_OFF(flowsdn_ct_entry, ep_id, 84);

/* flowsdn_ctstat value (per CPU, one entry, key 0): what lookups found. */
struct flowsdn_ct_stats {
	__u64 new_flows;    /* no live entry: the packet was judged by policy */
	__u64 established;  /* matched in the original direction */
	__u64 reply;        /* matched in the reply direction */
	__u64 related;      /* ICMP errors about a tracked flow */
	__u64 created;      /* entries written */
	__u64 create_failed; /* map update refused */
	__u64 untracked;    /* packets never tracked (TCP without SYN/ACK/RST, other ICMP) */
	__u64 closed;       /* TCP entries that saw RST or both FINs */
};
FLOWSDN_CHECK_SIZE(flowsdn_ct_stats, 64);
FLOWSDN_CHECK_OFF(flowsdn_ct_stats, new_flows, 0);
FLOWSDN_CHECK_OFF(flowsdn_ct_stats, established, 8);
FLOWSDN_CHECK_OFF(flowsdn_ct_stats, reply, 16);
FLOWSDN_CHECK_OFF(flowsdn_ct_stats, related, 24);
FLOWSDN_CHECK_OFF(flowsdn_ct_stats, created, 32);
FLOWSDN_CHECK_OFF(flowsdn_ct_stats, create_failed, 40);
FLOWSDN_CHECK_OFF(flowsdn_ct_stats, untracked, 48);
FLOWSDN_CHECK_OFF(flowsdn_ct_stats, closed, 56);

/* Default timeouts (seconds); the loader may set others. */
#define FLOWSDN_CT_TIMEOUT_TCP 21600      /* established TCP: 6 h */
#define FLOWSDN_CT_TIMEOUT_TCP_SYN 60     /* handshake not finished */
#define FLOWSDN_CT_TIMEOUT_TCP_CLOSE 10   /* after RST or both FINs */
#define FLOWSDN_CT_TIMEOUT_UDP 60         /* UDP (and other ported protocols) */
#define FLOWSDN_CT_TIMEOUT_UDP_REPLIED 180 /* once a reply was seen */
#define FLOWSDN_CT_TIMEOUT_ICMP 30

/* ------------------------------------------------------------ fragments */

/* flowsdn_frag key: one fragmented datagram (RFC 791/8200: source,
 * destination, identification and protocol). */
struct flowsdn_frag_key {
	__be32 saddr[4];
	__be32 daddr[4];
	__be32 id;        /* IPv4: the 16-bit identification in the first 2 bytes of a __be32, rest zero; IPv6: the fragment header's */
	__u8 protocol;    /* the transport protocol */
	__u8 family;
	__u8 pad0[2];     /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_frag_key, 40);
FLOWSDN_CHECK_OFF(flowsdn_frag_key, saddr, 0);
FLOWSDN_CHECK_OFF(flowsdn_frag_key, daddr, 16);
FLOWSDN_CHECK_OFF(flowsdn_frag_key, id, 32);
FLOWSDN_CHECK_OFF(flowsdn_frag_key, protocol, 36);
FLOWSDN_CHECK_OFF(flowsdn_frag_key, family, 37);
FLOWSDN_CHECK_OFF(flowsdn_frag_key, pad0, 38);

/* flowsdn_frag value: the first fragment's ports. */
struct flowsdn_frag_entry {
	__u64 expires;    /* bpf_ktime_get_ns(); FLOWSDN_FRAG_TIMEOUT after the first fragment */
	__be16 sport;
	__be16 dport;
	__u32 pad0;       /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_frag_entry, 16);
FLOWSDN_CHECK_OFF(flowsdn_frag_entry, expires, 0);
FLOWSDN_CHECK_OFF(flowsdn_frag_entry, sport, 8);
FLOWSDN_CHECK_OFF(flowsdn_frag_entry, dport, 10);
FLOWSDN_CHECK_OFF(flowsdn_frag_entry, pad0, 12);
#define FLOWSDN_FRAG_TIMEOUT 30 /* seconds, as the kernel's ipfrag_time */

/* ------------------------------------------------------------ drops */

/*
 * Drop reasons: one list, expanded into the enum here and into the string
 * table of flowsdn_drop_reason_name() (<flowsdn/datapath.h>).  Values are
 * stable: append only.  X(NAME, value, "text").
 */
#define FLOWSDN_DROP_REASONS(X)                                              \
	X(NONE, 0, "none")                                                  \
	X(POLICY_DENY, 1, "policy denied")                                  \
	X(POLICY_DEFAULT, 2, "no policy entry allows (default deny)")       \
	X(SPOOFED_SOURCE, 3, "source address is not the endpoint's")        \
	X(MALFORMED, 4, "malformed or truncated packet")                    \
	X(UNKNOWN_L3, 5, "unsupported ethertype")                           \
	X(FIB_FAILED, 6, "FIB lookup failed")                               \
	X(REDIRECT_FAILED, 7, "redirect failed")                            \
	X(TTL_EXCEEDED, 8, "TTL or hop limit exhausted")                    \
	X(SOURCE_RANGE, 9, "source not in the service's source ranges (or denied)") \
	X(NO_BACKEND, 10, "service has no active backend")                  \
	X(LOCAL_ONLY, 11, "traffic policy Local: no backend on this node")  \
	X(NO_SNAT_PORT, 12, "no free source port to SNAT to")

enum flowsdn_drop_reason {
#define FLOWSDN_X_ENUM(name, value, text) FLOWSDN_DROP_##name = value,
	FLOWSDN_DROP_REASONS(FLOWSDN_X_ENUM)
#undef FLOWSDN_X_ENUM
	FLOWSDN_DROP_MAX_, /* number of reasons (flowsdn_drops max_entries) */
};

/* flowsdn_drops value (per CPU), indexed by enum flowsdn_drop_reason. */
struct flowsdn_drop_counters {
	__u64 packets;
	__u64 bytes;
};
FLOWSDN_CHECK_SIZE(flowsdn_drop_counters, 16);
FLOWSDN_CHECK_OFF(flowsdn_drop_counters, packets, 0);
FLOWSDN_CHECK_OFF(flowsdn_drop_counters, bytes, 8);

/* ------------------------------------------------------------ settings */

/* Egress modes (the datapath's per-node setting). */
enum flowsdn_egress_mode {
	FLOWSDN_EGRESS_FIB = 0,   /* non-local traffic: bpf_fib_lookup + redirect */
	FLOWSDN_EGRESS_STACK = 1, /* every frame from an endpoint goes to the host stack */
};

/* ------------------------------------------------------------ host firewall */

/*
 * The host firewall (bpf/lib/hostfw.h) judges what arrives on an uplink
 * for the node itself (not translated to a backend by the service path,
 * not addressed to a local endpoint).  Its rules are ordinary policy
 * entries (flowsdn_policy) of the reserved endpoint id
 * FLOWSDN_HOSTFW_EP_ID, direction ingress, switched by generation like an
 * endpoint's; the generation, the enforcement flag and the mode in force
 * are the one entry of flowsdn_hostfw, written in one update (a packet
 * sees the old state or the new one).
 *
 *   flowsdn_hostfw       array  __u32 0 -> hostfw_state
 *   flowsdn_hostfw_stat  per-CPU array __u32 0 -> hostfw_counters
 */
#define FLOWSDN_HOSTFW_EP_ID 0x7fffffffu /* never a real endpoint's id */

enum flowsdn_hostfw_mode {
	FLOWSDN_HOSTFW_OFF = 0,     /* nothing judged, nothing tracked */
	FLOWSDN_HOSTFW_AUDIT = 1,   /* judged and counted, never dropped */
	FLOWSDN_HOSTFW_ENFORCE = 2, /* denied new connections dropped */
};

struct flowsdn_hostfw_state {
	__u32 ep_id;      /* FLOWSDN_HOSTFW_EP_ID (0: never written, off) */
	__u32 flags;      /* FLOWSDN_EP_F_ENFORCE_INGRESS: a host policy selects the node */
	__u8 mode;        /* enum flowsdn_hostfw_mode */
	__u8 policy_gen;  /* 0 or 1: the generation of the entries in force */
	__u8 pad0[6];     /* zero */
};
FLOWSDN_CHECK_SIZE(flowsdn_hostfw_state, 16);
FLOWSDN_CHECK_OFF(flowsdn_hostfw_state, ep_id, 0);
FLOWSDN_CHECK_OFF(flowsdn_hostfw_state, flags, 4);
FLOWSDN_CHECK_OFF(flowsdn_hostfw_state, mode, 8);
FLOWSDN_CHECK_OFF(flowsdn_hostfw_state, policy_gen, 9);
FLOWSDN_CHECK_OFF(flowsdn_hostfw_state, pad0, 10);

/* flowsdn_hostfw_stat value (per CPU; readers add the CPUs up), packets. */
struct flowsdn_hostfw_counters {
	__u64 allowed;    /* new connections a rule (or no host policy) let in */
	__u64 denied;     /* new connections dropped (enforce) */
	__u64 audited;    /* new connections enforce would drop, let in (audit) */
	__u64 tracked;    /* packets of tracked connections (host's own, or let in) */
};
FLOWSDN_CHECK_SIZE(flowsdn_hostfw_counters, 32);
FLOWSDN_CHECK_OFF(flowsdn_hostfw_counters, allowed, 0);
FLOWSDN_CHECK_OFF(flowsdn_hostfw_counters, denied, 8);
FLOWSDN_CHECK_OFF(flowsdn_hostfw_counters, audited, 16);
FLOWSDN_CHECK_OFF(flowsdn_hostfw_counters, tracked, 24);

#endif
