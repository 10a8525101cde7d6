/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Service load balancing, shared by the socket LB (bpf/sock.bpf.c) and
 * the per-packet tc path: the frontend lookup (with the scope of traffic
 * policy Local), the backend choice (ClientIP affinity, then Maglev or a
 * random slot; only active backends get new flows) and the maps that only
 * load balancing reads (slots, affinity, socket reverse NAT).  The model
 * is described at the top of <flowsdn/maps.h>.
 *
 * Everything is static __always_inline; no helper here writes a packet.
 */
#ifndef FLOWSDN_BPF_LB_H
#define FLOWSDN_BPF_LB_H

#include "common.h"
#include "maglev.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FLOWSDN_MAX_SVC_SLOTS);
	__type(key, struct flowsdn_svc_slot_key);
	__type(value, struct flowsdn_svc_slot_value);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_svc_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FLOWSDN_MAX_AFFINITY);
	__type(key, struct flowsdn_affinity_key);
	__type(value, struct flowsdn_affinity_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_affinity SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FLOWSDN_MAX_SOCK_REVNAT);
	__type(key, struct flowsdn_sock_revnat_key);
	__type(value, struct flowsdn_sock_revnat_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_sock_rnat SEC(".maps");

#define LB_NS_PER_SEC 1000000000ull

/* Finalizer of MurmurHash3: the mixing step of the flow hashes below. */
static __always_inline __u32 lb_mix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static __always_inline __u32 lb_hash_step(__u32 h, __u32 w)
{
	return lb_mix32(h ^ (w + 0x9e3779b9u + (h << 6) + (h >> 2)));
}

/* A 64-bit value (a socket cookie) as a 32-bit hash. */
static __always_inline __u32 lb_hash_u64(__u64 v)
{
	return lb_hash_step(lb_mix32((__u32)v), (__u32)(v >> 32));
}

/* The hash of a flow's 5-tuple, the same on every node (Maglev keeps a
 * flow on its backend wherever it is looked up).  IPv4 uses saddr[0] and
 * daddr[0] only; the other words are zero. */
static __always_inline __u32 lb_hash_tuple(const __be32 *saddr, const __be32 *daddr, __be16 sport, __be16 dport,
					   __u8 protocol)
{
	__u32 h = protocol;

	h = lb_hash_step(h, saddr[0]);
	h = lb_hash_step(h, saddr[1]);
	h = lb_hash_step(h, saddr[2]);
	h = lb_hash_step(h, saddr[3]);
	h = lb_hash_step(h, daddr[0]);
	h = lb_hash_step(h, daddr[1]);
	h = lb_hash_step(h, daddr[2]);
	h = lb_hash_step(h, daddr[3]);
	return lb_hash_step(h, ((__u32)sport << 16) | dport);
}

/*
 * The service of frontend (@family, @protocol, @addr, @port): NULL when
 * none.  @internal: the client is in the cluster (an endpoint or a host
 * process, every socket LB client), so a frontend with two scopes is
 * answered from its INTERNAL entry (internalTrafficPolicy); traffic from
 * outside uses the EXTERNAL entry (externalTrafficPolicy).
 */
static __always_inline struct flowsdn_service_value *lb_lookup_service(__u8 family, __u8 protocol,
									 const __be32 *addr, __be16 port,
									 int internal)
{
	struct flowsdn_service_key k;
	struct flowsdn_service_value *v;

	k.addr[0] = addr[0];
	k.addr[1] = family == AF_INET ? 0 : addr[1];
	k.addr[2] = family == AF_INET ? 0 : addr[2];
	k.addr[3] = family == AF_INET ? 0 : addr[3];
	k.port = port;
	k.protocol = protocol;
	k.family = family;
	k.scope = FLOWSDN_SVC_SCOPE_EXTERNAL;
	k.pad0[0] = 0;
	k.pad0[1] = 0;
	k.pad0[2] = 0;
	v = bpf_map_lookup_elem(&flowsdn_svc, &k);
	if (v && internal && (v->flags & FLOWSDN_SVC_F_TWO_SCOPES)) {
		k.scope = FLOWSDN_SVC_SCOPE_INTERNAL;
		v = bpf_map_lookup_elem(&flowsdn_svc, &k);
	}
	return v;
}

/* Affinity key of a tc-path client (its source address). */
static __always_inline void lb_affinity_key_addr(struct flowsdn_affinity_key *k, __u32 svc_id, __u8 family,
						 const __be32 *addr)
{
	k->addr[0] = addr[0];
	k->addr[1] = family == AF_INET ? 0 : addr[1];
	k->addr[2] = family == AF_INET ? 0 : addr[2];
	k->addr[3] = family == AF_INET ? 0 : addr[3];
	k->svc_id = svc_id;
	k->family = family;
	k->pad0[0] = 0;
	k->pad0[1] = 0;
	k->pad0[2] = 0;
}

/* Affinity key of a socket LB client (its network namespace). */
static __always_inline void lb_affinity_key_netns(struct flowsdn_affinity_key *k, __u32 svc_id, __u64 netns_cookie)
{
	k->addr[0] = (__u32)netns_cookie;
	k->addr[1] = (__u32)(netns_cookie >> 32);
	k->addr[2] = 0;
	k->addr[3] = 0;
	k->svc_id = svc_id;
	k->family = FLOWSDN_AFFINITY_NETNS;
	k->pad0[0] = 0;
	k->pad0[1] = 0;
	k->pad0[2] = 0;
}

/* An active backend by id, else NULL. */
static __always_inline struct flowsdn_backend *lb_active_backend(__u32 id)
{
	struct flowsdn_backend *be;

	if (!id)
		return NULL;
	be = bpf_map_lookup_elem(&flowsdn_backend, &id);
	return be && be->state == FLOWSDN_BACKEND_ACTIVE ? be : NULL;
}

/* The backend id of slot @hash of the service's Maglev table, 0 when the
 * service has no table or the slot is not in it (maglev_lookup()). */
static __always_inline __u32 lb_maglev_backend(const struct flowsdn_service_value *svc, __u32 hash)
{
	return maglev_lookup(svc->svc_id, hash, svc->maglev_size);
}

/* The backend id of slot @hash % slot_count, 0 when the slot is not
 * written (a writer shrinking the set). */
static __always_inline __u32 lb_slot_backend(const struct flowsdn_service_value *svc, __u32 hash)
{
	struct flowsdn_svc_slot_key k;
	struct flowsdn_svc_slot_value *v;

	k.svc_id = svc->svc_id;
	k.slot = hash % svc->slot_count;
	v = bpf_map_lookup_elem(&flowsdn_svc_slot, &k);
	return v ? v->backend_id : 0;
}

/*
 * Chooses the backend of a new flow of @svc: NULL when the service has no
 * active backend.  @aff (NULL: no affinity) is the client's affinity key;
 * with FLOWSDN_SVC_F_AFFINITY a remembered backend that is still active
 * and within the timeout wins, and the choice is remembered.  @hash picks
 * the Maglev slot (FLOWSDN_SVC_F_MAGLEV: a flow hash, lb_hash_tuple())
 * or the random slot (bpf_get_prandom_u32(), or a flow hash).  The id
 * chosen goes to *ret_id.
 */
static __always_inline struct flowsdn_backend *lb_select_backend(const struct flowsdn_service_value *svc,
								  const struct flowsdn_affinity_key *aff,
								  __u32 hash, __u32 *ret_id)
{
	struct flowsdn_affinity_value *av, nav;
	struct flowsdn_backend *be;
	int affinity = aff && (svc->flags & FLOWSDN_SVC_F_AFFINITY);
	__u64 now = 0;
	__u32 id;

	if (!svc->slot_count)
		return NULL;
	if (affinity) {
		now = bpf_ktime_get_ns();
		av = bpf_map_lookup_elem(&flowsdn_affinity, aff);
		if (av && now - av->last_used <= (__u64)svc->affinity_timeout * LB_NS_PER_SEC) {
			be = lb_active_backend(av->backend_id);
			if (be) {
				av->last_used = now;
				*ret_id = av->backend_id;
				return be;
			}
		}
	}
	/* A Maglev slot of a backend that just stopped being active (its
	 * table not rewritten yet) falls back to the random slots. */
	be = NULL;
	id = 0;
	if (svc->flags & FLOWSDN_SVC_F_MAGLEV) {
		id = lb_maglev_backend(svc, hash);
		be = lb_active_backend(id);
	}
	if (!be) {
		id = lb_slot_backend(svc, hash);
		be = lb_active_backend(id);
	}
	if (!be)
		return NULL;
	if (affinity) {
		nav.last_used = now;
		nav.backend_id = id;
		nav.pad0 = 0;
		bpf_map_update_elem(&flowsdn_affinity, aff, &nav, BPF_ANY);
	}
	*ret_id = id;
	return be;
}

#endif
