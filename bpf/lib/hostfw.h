/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host firewall (the model is in <flowsdn/maps.h>, "host firewall"):
 * what arrives on an uplink for the node itself, after the service path
 * of node.bpf.c let it go to the stack (a packet that NodePort or another
 * frontend translates to a backend is judged by that backend's policy,
 * never here).
 *
 *   hostfw_ingress()  tc ingress of the uplink (node.bpf.c from_uplink):
 *       mode off: the stack, nothing counted;
 *       addressed to a local endpoint: the stack (the endpoint's own
 *       policy judges it at its veth);
 *       a packet of a tracked connection (the host's own, seen leaving by
 *       hostfw_egress(), or one let in before), or an ICMP error about
 *       one: passes, counted as tracked;
 *       a new connection: the host's policy entries (ingress, the peer's
 *       identity), as an endpoint's; allowed (or no host policy selects
 *       the node): tracked and passed; denied: dropped in enforce mode
 *       (drop reason of the policy), in audit mode counted and tracked
 *       too, so that a connection is counted once, at its first packet,
 *       and is what enforce would have refused.
 *   hostfw_egress()   tc egress of the uplink (node.bpf.c to_uplink):
 *       tracks what the node sends (its own connections, and those it
 *       forwards or masquerades) so that their replies pass.
 *
 * A connection tracked before a mode or rule change keeps passing (as an
 * endpoint's do after a policy change) until it ends or times out.
 */
#ifndef FLOWSDN_BPF_HOSTFW_H
#define FLOWSDN_BPF_HOSTFW_H

#include "common.h"
#include "conntrack.h"
#include "counters.h"
#include "parse.h"
#include "policy.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flowsdn_hostfw_state);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_hostfw SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flowsdn_hostfw_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_hostfw_stat SEC(".maps");

/* The state in force (copied: one consistent read), 0 when it is on. */
static __always_inline int hostfw_state(struct flowsdn_hostfw_state *ret)
{
	struct flowsdn_hostfw_state *st;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&flowsdn_hostfw, &zero);
	if (!st)
		return -1;
	__builtin_memcpy(ret, st, sizeof(*ret));
	return ret->mode == FLOWSDN_HOSTFW_OFF || ret->ep_id != FLOWSDN_HOSTFW_EP_ID ? -1 : 0;
}

static __always_inline struct flowsdn_hostfw_counters *hostfw_counters(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&flowsdn_hostfw_stat, &zero);
}

/* Tracks the new connection @p (from the peer, or the host's own). */
static __always_inline void hostfw_track(const struct pkt *p)
{
	struct flowsdn_ct_entry init = { .ep_id = FLOWSDN_HOSTFW_EP_ID, .flags = FLOWSDN_CT_F_HOST };

	ct_create(p, &init);
}

/* @p (parsed) arrived on the uplink for the node: TC_ACT_OK or a drop. */
__attribute__((unused)) static __noinline int hostfw_ingress(struct pkt *p)
{
	struct flowsdn_endpoint_info host = {};
	struct flowsdn_hostfw_counters *c;
	struct flowsdn_hostfw_state st;
	struct flowsdn_ct_entry *e;
	__u32 reason;
	int ct, dir;

	if (hostfw_state(&st) || ep_lookup(p->family, p->daddr))
		return TC_ACT_OK;
	c = hostfw_counters();
	if (p->frag == PKT_FRAG_LATER) {
		/* No ports: a protocol-wide or L3 rule decides, as the
		 * endpoints' later fragments without their first. */
		ct = CT_NEW;
		e = NULL;
	} else {
		ct = ct_lookup(p, &e, &dir);
	}
	if (ct != CT_NEW) {
		if (e && ct != CT_RELATED)
			ct_update(e, p, dir);
		if (c)
			__sync_fetch_and_add(&c->tracked, 1);
		return TC_ACT_OK;
	}
	host.ep_id = FLOWSDN_HOSTFW_EP_ID;
	host.flags = st.flags & FLOWSDN_EP_F_ENFORCE_INGRESS;
	host.policy_gen = st.policy_gen & 1;
	reason = policy_check(&host, FLOWSDN_DIR_INGRESS, peer_identity(p->family, p->saddr), p, NULL);
	if (reason && st.mode == FLOWSDN_HOSTFW_ENFORCE) {
		if (c)
			__sync_fetch_and_add(&c->denied, 1);
		return drop(reason, NULL, p->len);
	}
	if (c)
		__sync_fetch_and_add(reason ? &c->audited : &c->allowed, 1);
	if (p->frag != PKT_FRAG_LATER)
		hostfw_track(p);
	return TC_ACT_OK;
}

/* The node sends @skb out of the uplink: its connections are tracked. */
__attribute__((unused)) static __noinline int hostfw_egress(struct pkt *p)
{
	struct flowsdn_hostfw_state st;
	struct flowsdn_ct_entry *e;
	int ct, dir;

	/* A local endpoint's own flows are its policy's (lib/policy.h). */
	if (hostfw_state(&st) || p->frag == PKT_FRAG_LATER || ep_lookup(p->family, p->saddr))
		return TC_ACT_OK;
	ct = ct_lookup(p, &e, &dir);
	if (ct == CT_NEW)
		hostfw_track(p);
	else if (e && ct != CT_RELATED && (e->flags & FLOWSDN_CT_F_HOST))
		ct_update(e, p, dir);
	return TC_ACT_OK;
}

#endif
