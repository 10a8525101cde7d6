/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policy verdicts from flowsdn_policy (the model is described in
 * <flowsdn/maps.h>): two longest-prefix lookups, for the peer's identity
 * and for "any identity"; deny from either wins, then allow from either,
 * then the endpoint's default for the direction.
 */
#ifndef FLOWSDN_BPF_POLICY_H
#define FLOWSDN_BPF_POLICY_H

#include "common.h"
#include "counters.h"

/* Security identity of the peer address: a local endpoint's, else the
 * longest ipcache prefix, else world. */
static __always_inline __u32 peer_identity(__u8 family, const __be32 *addr)
{
	struct flowsdn_endpoint_info *ep = ep_lookup(family, addr);
	struct flowsdn_ipcache_key k;
	struct flowsdn_ipcache_value *v;

	if (ep)
		return ep->identity;
	k.prefixlen = FLOWSDN_IPCACHE_PREFIX_BASE + (family == AF_INET ? 32 : 128);
	k.family = family;
	k.pad0[0] = k.pad0[1] = k.pad0[2] = 0;
	k.addr[0] = addr[0];
	k.addr[1] = addr[1];
	k.addr[2] = addr[2];
	k.addr[3] = addr[3];
	v = bpf_map_lookup_elem(&flowsdn_ipcache, &k);
	return v ? v->identity : FLOWSDN_MAP_IDENTITY_WORLD;
}

static __always_inline void policy_hit(struct flowsdn_policy_value *v, __u32 len)
{
	__sync_fetch_and_add(&v->packets, 1);
	__sync_fetch_and_add(&v->bytes, len);
}

/*
 * The verdict for traffic of endpoint @ep in @dir with the peer @identity.
 * Returns 0 (allow) or the drop reason; counts the verdict in @c and
 * in the matching policy entry.
 */
static __always_inline __u32 policy_check(const struct flowsdn_endpoint_info *ep, __u8 dir, __u32 identity,
					  const struct pkt *p, struct flowsdn_endpoint_counters *c)
{
	struct flowsdn_policy_key k = {};
	struct flowsdn_policy_value *v_id, *v_any;
	__u32 enforce = dir == FLOWSDN_DIR_INGRESS ? FLOWSDN_EP_F_ENFORCE_INGRESS : FLOWSDN_EP_F_ENFORCE_EGRESS;
	__u32 reason = 0;

	k.prefixlen = FLOWSDN_POLICY_PREFIX_FULL;
	k.ep_id = FLOWSDN_POLICY_KEY_ID(ep->ep_id, ep->policy_gen & 1);
	k.direction = dir;
	k.identity = identity;
	k.protocol = p->protocol;
	k.dport = p->dport;
	v_id = bpf_map_lookup_elem(&flowsdn_policy, &k);
	k.identity = FLOWSDN_IDENTITY_ANY;
	v_any = bpf_map_lookup_elem(&flowsdn_policy, &k);

	if (v_id && (v_id->flags & FLOWSDN_POLICY_F_DENY)) {
		policy_hit(v_id, p->len);
		reason = FLOWSDN_DROP_POLICY_DENY;
	} else if (v_any && (v_any->flags & FLOWSDN_POLICY_F_DENY)) {
		policy_hit(v_any, p->len);
		reason = FLOWSDN_DROP_POLICY_DENY;
	} else if (v_id) {
		policy_hit(v_id, p->len);
	} else if (v_any) {
		policy_hit(v_any, p->len);
	} else if (ep->flags & enforce) {
		reason = FLOWSDN_DROP_POLICY_DEFAULT;
	}

	if (c) {
		if (dir == FLOWSDN_DIR_INGRESS) {
			if (reason)
				c->deny_ingress++;
			else
				c->allow_ingress++;
		} else {
			if (reason)
				c->deny_egress++;
			else
				c->allow_egress++;
		}
	}
	return reason;
}

#endif
