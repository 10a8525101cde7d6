/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-packet service translation at tc, for endpoints whose sockets never
 * reach the host kernel (FLOWSDN_EP_F_SVC_PACKET: gVisor netstack
 * sandboxes, which the socket LB cannot see).  The same service maps and
 * backend choice as the socket LB (lib/lb.h), the one connection
 * tracking table (lib/conntrack.h), the NAT primitives of lib/nat.h.
 *
 * A new flow from such an endpoint to a service frontend gets a backend
 * (lb_select_backend(), affinity by source address) and its destination
 * rewritten to it; once policy allowed it, two entries track it:
 *   - the translated tuple (client -> backend), the flow's entry that
 *     policy and every later packet use, with rev_addr/rev_port = the
 *     frontend, svc_id and backend_id, flag FLOWSDN_CT_F_SVC_XLATED;
 *   - the frontend tuple (client -> frontend), flag FLOWSDN_CT_F_SVC_FRONT,
 *     whose backend_id keeps later packets of the flow on their backend
 *     whatever the backend set becomes (a backend gone: the flow is
 *     balanced again).
 * Replies (CT_REPLY of a translated entry) get their source back to the
 * frontend, and ICMP errors about the flow (CT_RELATED) their quoted
 * packet and, when the backend sent them, their outer source: wherever
 * the reply is seen first, in the backend's from_container (same node)
 * or in the client's to_container (host process or remote backend).  A
 * reply whose source already is the frontend is not translated again.
 */
#ifndef FLOWSDN_BPF_SVC_XLATE_H
#define FLOWSDN_BPF_SVC_XLATE_H

#include "common.h"
#include "conntrack.h"
#include "lb.h"
#include "nat.h"

/* The translation of the packet being handled (svc_xlate_from_endpoint()). */
struct svc_xlate {
	__be32 front_addr[4]; /* the frontend the endpoint asked for */
	__be16 front_port;
	__u8 translated;      /* the destination was rewritten to a backend */
	__u8 new_flow;        /* ... chosen now: track the frontend tuple too */
	__u8 snat;            /* the source becomes out_addr:out_port (NodePort to another node) */
	__u8 pad0;
	__be16 out_port;
	__be32 out_addr[4];
	__u32 svc_id;
	__u32 backend_id;
};

/* Per-CPU room for the conntrack entries being built (the 512-byte BPF
 * stack does not hold them beside the rest); private to each object. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flowsdn_ct_entry);
} svc_ct_scratch SEC(".maps");

/* The scratch entry, zeroed, with @ep_id; NULL never happens (an array
 * of one element) but is handled. */
static __always_inline struct flowsdn_ct_entry *svc_ct_init(__u32 ep_id)
{
	__u32 zero = 0;
	struct flowsdn_ct_entry *init = bpf_map_lookup_elem(&svc_ct_scratch, &zero);

	if (init) {
		__builtin_memset(init, 0, sizeof(*init));
		init->ep_id = ep_id;
	}
	return init;
}

/* ct_create() as a subprogram of its own, so that its entry and key are
 * on the stack once, not once per caller. */
static __noinline __attribute__((unused)) int svc_ct_create(const struct pkt *p, const struct flowsdn_ct_entry *init)
{
	return ct_create(p, init);
}

static __always_inline int svc_addr_eq(const __be32 *a, const __be32 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

/* Records in @x that @p, sent to a frontend of backend set @svc_id, goes
 * to backend @backend_id. */
static __always_inline void svc_xlate_set(struct svc_xlate *x, const struct pkt *p, __u32 svc_id, __u32 backend_id)
{
	x->front_addr[0] = p->daddr[0];
	x->front_addr[1] = p->daddr[1];
	x->front_addr[2] = p->daddr[2];
	x->front_addr[3] = p->daddr[3];
	x->front_port = p->dport;
	x->svc_id = svc_id;
	x->backend_id = backend_id;
	x->translated = 1;
}

/* Rewrites @p's destination (packet and parsed copy) to backend @be. */
static __always_inline __u32 svc_dnat(struct __sk_buff *skb, struct pkt *p, const struct flowsdn_backend *be)
{
	struct nat_ctx c;

	if (nat_ctx_init(skb, p, &c) || nat_dnat(skb, &c, be->addr, be->port))
		return FLOWSDN_DROP_MALFORMED;
	p->daddr[0] = be->addr[0];
	p->daddr[1] = be->addr[1];
	p->daddr[2] = be->addr[2];
	p->daddr[3] = be->addr[3];
	p->dport = be->port;
	return 0;
}

/*
 * from_container of endpoint @src: translates a TCP/UDP packet to a
 * service frontend when @src has FLOWSDN_EP_F_SVC_PACKET.  Returns 0
 * (@p now describes the packet as it leaves, @x what was done) or a drop
 * reason (FLOWSDN_DROP_NO_BACKEND: the service has no active backend).
 */
static __noinline __attribute__((unused)) __u32 svc_xlate_from_endpoint(struct __sk_buff *skb, struct pkt *p,
						     const struct flowsdn_endpoint_info *src, struct svc_xlate *x)
{
	struct flowsdn_service_value *svc;
	struct flowsdn_affinity_key aff;
	struct flowsdn_backend *be = NULL;
	struct flowsdn_ct_entry *e;
	__u32 id = 0;
	int ct, dir;

	x->translated = 0;
	x->new_flow = 0;
	if (!(src->flags & FLOWSDN_EP_F_SVC_PACKET) || (p->protocol != TCP_PROTO && p->protocol != UDP_PROTO) ||
	    p->frag == PKT_FRAG_LATER)
		return 0;
	svc = lb_lookup_service(p->family, p->protocol, p->daddr, p->dport, 1);
	if (!svc)
		return 0;
	ct = ct_lookup(p, &e, &dir);
	if (ct == CT_ESTABLISHED && e && (e->flags & FLOWSDN_CT_F_SVC_FRONT) && e->svc_id == svc->svc_id) {
		id = e->backend_id;
		/* Any state: a terminating backend keeps its flows. */
		be = bpf_map_lookup_elem(&flowsdn_backend, &id);
		if (be)
			ct_update(e, p, dir);
	}
	if (!be) {
		lb_affinity_key_addr(&aff, svc->svc_id, p->family, p->saddr);
		be = lb_select_backend(svc, &aff, lb_hash_tuple(p->saddr, p->daddr, p->sport, p->dport, p->protocol),
				       &id);
		if (!be)
			return FLOWSDN_DROP_NO_BACKEND;
		x->new_flow = 1;
	}
	svc_xlate_set(x, p, svc->svc_id, id);
	return svc_dnat(skb, p, be);
}

/*
 * Tracks the new connection @p of endpoint @ep_id (what ct_track() does)
 * with the translation @x when there was one: its reverse-NAT data in the
 * entry, and for a flow balanced just now the frontend tuple's entry too.
 * @p is left as it came.
 */
static __noinline __attribute__((unused)) void svc_xlate_track(struct pkt *p, __u32 ep_id, const struct svc_xlate *x)
{
	struct flowsdn_ct_entry *init = svc_ct_init(ep_id);
	__be32 d0, d1, d2, d3;
	__be16 dport;

	if (!init)
		return;
	if (!x || !x->translated) {
		svc_ct_create(p, init);
		return;
	}
	init->rev_addr[0] = x->front_addr[0];
	init->rev_addr[1] = x->front_addr[1];
	init->rev_addr[2] = x->front_addr[2];
	init->rev_addr[3] = x->front_addr[3];
	init->rev_port = x->front_port;
	init->svc_id = x->svc_id;
	init->backend_id = x->backend_id;
	init->flags = FLOWSDN_CT_F_SVC_XLATED;
	svc_ct_create(p, init);
	if (!x->new_flow)
		return;
	d0 = p->daddr[0];
	d1 = p->daddr[1];
	d2 = p->daddr[2];
	d3 = p->daddr[3];
	dport = p->dport;
	p->daddr[0] = x->front_addr[0];
	p->daddr[1] = x->front_addr[1];
	p->daddr[2] = x->front_addr[2];
	p->daddr[3] = x->front_addr[3];
	p->dport = x->front_port;
	/* rev_* of a frontend entry: the source the flow leaves with. */
	init->rev_addr[0] = x->snat ? x->out_addr[0] : p->saddr[0];
	init->rev_addr[1] = x->snat ? x->out_addr[1] : p->saddr[1];
	init->rev_addr[2] = x->snat ? x->out_addr[2] : p->saddr[2];
	init->rev_addr[3] = x->snat ? x->out_addr[3] : p->saddr[3];
	init->rev_port = x->snat ? x->out_port : p->sport;
	init->flags = FLOWSDN_CT_F_SVC_FRONT | (x->snat ? FLOWSDN_CT_F_SNAT : 0);
	svc_ct_create(p, init);
	p->daddr[0] = d0;
	p->daddr[1] = d1;
	p->daddr[2] = d2;
	p->daddr[3] = d3;
	p->dport = dport;
}

/*
 * The reverse translation of a packet that connection tracking classified
 * (@ct, @e, @dir from ct_lookup()): a reply of a translated flow gets the
 * frontend as its source, an ICMP error about one (quoting the packet the
 * client sent) the frontend in its quote and, when the backend sent it,
 * as its source.  0, or FLOWSDN_DROP_MALFORMED when the packet could not
 * be rewritten.
 */
static __noinline __attribute__((unused)) __u32 svc_xlate_reply(struct __sk_buff *skb, struct pkt *p, int ct,
					     const struct flowsdn_ct_entry *e, int dir)
{
	struct nat_ctx c, in;

	if (!e || !(e->flags & FLOWSDN_CT_F_SVC_XLATED))
		return 0;
	if (ct == CT_REPLY) {
		/* Replies match the translated tuple's entry; a packet that
		 * already carries the frontend as source does not. */
		if (p->sport == e->rev_port && svc_addr_eq(p->saddr, e->rev_addr))
			return 0;
		if (nat_ctx_init(skb, p, &c) || nat_snat(skb, &c, e->rev_addr, e->rev_port))
			return FLOWSDN_DROP_MALFORMED;
		p->saddr[0] = e->rev_addr[0];
		p->saddr[1] = e->rev_addr[1];
		p->saddr[2] = e->rev_addr[2];
		p->saddr[3] = e->rev_addr[3];
		p->sport = e->rev_port;
		return 0;
	}
	if (ct != CT_RELATED || dir != FLOWSDN_CT_DIR_ORIG ||
	    (p->inner_dport == e->rev_port && svc_addr_eq(p->inner_daddr, e->rev_addr)))
		return 0;
	if (nat_ctx_init(skb, p, &c) || nat_icmp_inner(skb, &c, &in) != 1 ||
	    nat_rev_dnat_icmp(skb, &c, &in, p->inner_daddr, e->rev_addr, e->rev_port))
		return FLOWSDN_DROP_MALFORMED;
	return 0;
}

#endif
