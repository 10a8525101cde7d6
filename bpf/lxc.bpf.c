// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The endpoint programs, attached to the host side of each endpoint's veth
 * (tc/TCX ingress: from_container; egress: to_container).
 *
 * from_container (frames the endpoint sent):
 *   - ARP, IPv6 ND, link-local and multicast IPv6: to the host stack;
 *   - the source must be an address published for this very interface
 *     (anti-spoofing), else drop;
 *   - connection tracking (lib/conntrack.h): a packet of a tracked
 *     connection, in either direction, or an ICMP error about one, is
 *     not judged by policy again; only a new connection is, and once
 *     allowed it is tracked;
 *   - egress policy of the sender;
 *   - destination is a local endpoint: its ingress policy, then (mode fib)
 *     TTL decrement, MAC rewrite (gateway MAC -> endpoint MAC) and
 *     bpf_redirect_peer() into its netns, or (mode stack) the host stack,
 *     which routes it by the per-endpoint host route;
 *   - other destinations: (mode fib) bpf_fib_lookup() and redirect to the
 *     egress device (bpf_redirect_neigh() when the neighbour is not
 *     resolved yet; anything the FIB does not forward goes to the stack so
 *     that the kernel answers with the right ICMP); (mode stack) the stack.
 *
 * to_container (frames the host stack sends to the endpoint): connection
 * tracking, ingress policy of new connections, and counters; same-node frames delivered by from_container never
 * pass here (redirect_peer bypasses the host veth; with plain redirect the
 * delivered mark tells them apart).
 */
#include "lib/common.h"
#include "lib/conntrack.h"
#include "lib/counters.h"
#include "lib/frag.h"
#include "lib/hostfw.h" /* the maps: node.bpf.c uses them, every object shares them (its functions are marked unused) */
#include "lib/l3.h"
#include "lib/parse.h"
#include "lib/policy.h"
#include "lib/srcrange.h" /* the map: node.bpf.c enforces it, every object shares it */
#include "lib/svc-xlate.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline int deliver_local(struct __sk_buff *skb, struct pkt *p,
					 const struct flowsdn_endpoint_info *src,
					 const struct flowsdn_endpoint_info *dst,
					 struct flowsdn_endpoint_counters *sc, int ct, const struct svc_xlate *x)
{
	struct flowsdn_endpoint_counters *dc = ep_counters(dst->ep_id);
	__u32 reason;

	/* A pod's traffic to itself (a hairpin) is never judged: Kubernetes
	 * says a pod cannot block access to itself. */
	if (ct == CT_NEW && dst->ep_id != src->ep_id) {
		reason = policy_check(dst, FLOWSDN_DIR_INGRESS, src->identity, p, dc);
		if (reason) {
			/* The sender's counters see its frame dropped too. */
			if (sc) {
				sc->drop_packets++;
				sc->drop_bytes += p->len;
			}
			return drop(reason, dc, p->len);
		}
		svc_xlate_track(p, src->ep_id, x);
	} else {
		count_allowed(dc, FLOWSDN_DIR_INGRESS);
	}
	if (l3_dec_ttl(skb, p))
		return drop(FLOWSDN_DROP_TTL_EXCEEDED, sc, p->len);
	if (l2_rewrite(skb, dst->host_mac, dst->mac))
		return drop(FLOWSDN_DROP_MALFORMED, sc, p->len);
	count_rx(dc, p->len);
	if (cfg_redirect_peer)
		return bpf_redirect_peer(dst->ifindex, 0);
	skb->mark = cfg_delivered_mark;
	return bpf_redirect(dst->ifindex, 0);
}

SEC("tc")
int from_container(struct __sk_buff *skb)
{
	struct flowsdn_endpoint_counters *sc;
	struct flowsdn_endpoint_info *src, *dst;
	struct flowsdn_ct_entry *ce;
	struct svc_xlate x;
	struct pkt p = {};
	__u32 reason;
	int rc, ct, ct_dir;

	rc = parse_packet(skb, &p);
	if (rc == PARSE_PASS)
		return TC_ACT_OK;
	if (rc)
		return drop(FLOWSDN_DROP_MALFORMED, NULL, skb->len);
	frag_track(&p);

	src = ep_lookup(p.family, p.saddr);
	if (!src || src->ifindex != skb->ifindex)
		return drop(FLOWSDN_DROP_SPOOFED_SOURCE, NULL, p.len);
	sc = ep_counters(src->ep_id);
	count_tx(sc, p.len);

	/* A service frontend: to a backend (FLOWSDN_EP_F_SVC_PACKET only). */
	reason = svc_xlate_from_endpoint(skb, &p, src, &x);
	if (reason)
		return drop(reason, sc, p.len);
	dst = ep_lookup(p.family, p.daddr);
	ct = ct_lookup(&p, &ce, &ct_dir);
	/* A reply of a translated flow leaves with the frontend's address. */
	reason = svc_xlate_reply(skb, &p, ct, ce, ct_dir);
	if (reason)
		return drop(reason, sc, p.len);
	if (ct == CT_NEW && !(dst && dst->ep_id == src->ep_id)) {
		reason = policy_check(src, FLOWSDN_DIR_EGRESS,
				      dst ? dst->identity : peer_identity(p.family, p.daddr), &p, sc);
		if (reason)
			return drop(reason, sc, p.len);
	} else {
		count_allowed(sc, FLOWSDN_DIR_EGRESS);
		if (ce && ct != CT_RELATED && !(cfg_egress_mode == FLOWSDN_EGRESS_STACK && dst))
			ct_update(ce, &p, ct_dir);
	}

	if (cfg_egress_mode == FLOWSDN_EGRESS_STACK) {
		/* A local destination's to_container judges and tracks it. */
		if (ct == CT_NEW && !dst)
			svc_xlate_track(&p, src->ep_id, &x);
		return TC_ACT_OK;
	}
	if (dst)
		return deliver_local(skb, &p, src, dst, sc, ct, &x);
	if (ct == CT_NEW)
		svc_xlate_track(&p, src->ep_id, &x);
	return fib_forward(skb, &p, sc);
}

SEC("tc")
int to_container(struct __sk_buff *skb)
{
	struct flowsdn_endpoint_counters *dc;
	struct flowsdn_endpoint_info *dst;
	struct flowsdn_ct_entry *ce;
	struct pkt p = {};
	__u32 reason;
	int rc, ct, ct_dir;

	if (!cfg_redirect_peer && skb->mark == cfg_delivered_mark) {
		/* Delivered (and counted) by from_container. */
		skb->mark = 0;
		return TC_ACT_OK;
	}
	rc = parse_packet(skb, &p);
	if (rc == PARSE_PASS)
		return TC_ACT_OK;
	if (rc)
		return drop(FLOWSDN_DROP_MALFORMED, NULL, skb->len);
	frag_track(&p);

	dst = ep_lookup(p.family, p.daddr);
	if (!dst || dst->ifindex != skb->ifindex)
		return TC_ACT_OK; /* not addressed to this endpoint (the kernel's business) */
	dc = ep_counters(dst->ep_id);
	ct = ct_lookup(&p, &ce, &ct_dir);
	/* A reply of a translated flow arrives with the frontend's address. */
	reason = svc_xlate_reply(skb, &p, ct, ce, ct_dir);
	if (reason)
		return drop(reason, dc, p.len);
	if (ct == CT_NEW) {
		reason = policy_check(dst, FLOWSDN_DIR_INGRESS, peer_identity(p.family, p.saddr), &p, dc);
		if (reason)
			return drop(reason, dc, p.len);
		ct_track(&p, dst->ep_id);
	} else {
		count_allowed(dc, FLOWSDN_DIR_INGRESS);
		if (ct != CT_RELATED)
			ct_update(ce, &p, ct_dir);
	}
	count_rx(dc, p.len);
	return TC_ACT_OK;
}
