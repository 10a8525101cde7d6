// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The uplink program: tc ingress of a configured uplink interface
 * ("uplink-interfaces"), for services reached from outside the node
 * (NodePort on the node's addresses, LoadBalancer and external IPs).
 *
 * from_uplink:
 *   - a reply of a flow this program sent to another node's backend
 *     (conntrack entry with FLOWSDN_CT_F_SNAT): its destination back to
 *     the client, its source back to the frontend, FIB forwarding;
 *   - a packet to a frontend (EXTERNAL scope of lib/lb.h): a new flow is
 *     checked against the service's source ranges (lib/srcrange.h), gets
 *     a backend (lb_select_backend(), affinity by client address) and is
 *     DNATed to it; later packets follow their frontend entry
 *     (FLOWSDN_CT_F_SVC_FRONT);
 *       - a backend on this node: the backend endpoint's ingress policy,
 *         tracking (reverse NAT data for its replies, which the endpoint
 *         programs translate: lib/svc-xlate.h) and delivery into it, or
 *         the host stack for a host-process backend;
 *       - a backend on another node (FLOWSDN_BACKEND_F_REMOTE): refused
 *         with traffic policy Local (FLOWSDN_DROP_LOCAL_ONLY), else SNAT
 *         to the node's address and a port of the SNAT range, tracking
 *         and bpf_fib_lookup() + redirect;
 *   - anything else is for the node itself: the host firewall
 *     (lib/hostfw.h) judges it, then the host stack.
 *   - an ICMP/ICMPv6 error (port unreachable, fragmentation needed /
 *     packet too big, time exceeded, parameter problem) about a flow
 *     SNATed to another node's backend: its quote (node:port -> backend)
 *     and outer destination back to the client, then the quote's
 *     destination back to the frontend (and the outer source too when
 *     the backend itself sent it; a router's address on the way stays),
 *     FIB forwarding to the client (node_icmp_unsnat(), svc_xlate_reply());
 * to_uplink (tc egress): a TCP/UDP reply of a flow DNATed to a
 * host-process backend gets its source back to the frontend, and an
 * ICMP/ICMPv6 error the node sends about such a flow the same reverse
 * translation (quote and, from the backend, outer source back to the
 * frontend: lib/svc-xlate.h); an endpoint backend's replies and errors
 * were translated by its own from_container already.  The host firewall
 * tracks what the node sends.
 */
#include "lib/common.h"
#include "lib/conntrack.h"
#include "lib/counters.h"
#include "lib/hostfw.h"
#include "lib/l3.h"
#include "lib/lb.h"
#include "lib/nat.h"
#include "lib/parse.h"
#include "lib/policy.h"
#include "lib/srcrange.h"
#include "lib/svc-xlate.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The node's addresses on the uplink (network order; zero: none), the
 * source of SNATed flows; and the SNAT port range (host order), kept
 * apart from the kernel's ephemeral ports.  Set by the loader. */
const volatile __be32 cfg_node_addr4 = 0;
const volatile __be32 cfg_node_addr6[4] = {};
const volatile __u32 cfg_snat_port_min = 61000;
const volatile __u32 cfg_snat_port_max = 65535;

#define SNAT_TRIES 8

/* Per-CPU room for from_uplink's packet and translation. */
struct node_scratch {
	struct pkt p;
	struct svc_xlate x;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct node_scratch);
} node_scratch SEC(".maps");

static __always_inline int node_addr(__u8 family, __be32 *ret)
{
	if (family == AF_INET) {
		ret[0] = cfg_node_addr4;
		ret[1] = ret[2] = ret[3] = 0;
		return cfg_node_addr4 ? 0 : -1;
	}
	ret[0] = cfg_node_addr6[0];
	ret[1] = cfg_node_addr6[1];
	ret[2] = cfg_node_addr6[2];
	ret[3] = cfg_node_addr6[3];
	return ret[0] | ret[1] | ret[2] | ret[3] ? 0 : -1;
}

/* The service of the frontend @p is sent to: the exact frontend, else a
 * NodePort (address zero) when @p is addressed to the node itself. */
static __always_inline struct flowsdn_service_value *node_service(const struct pkt *p)
{
	static const __be32 any[4];
	struct flowsdn_service_value *svc;
	__be32 me[4];

	svc = lb_lookup_service(p->family, p->protocol, p->daddr, p->dport, 0);
	if (svc || node_addr(p->family, me) || !svc_addr_eq(me, p->daddr))
		return svc;
	svc = lb_lookup_service(p->family, p->protocol, any, p->dport, 0);
	return svc && (svc->flags & FLOWSDN_SVC_F_NODEPORT) ? svc : NULL;
}

/* Rewrites @p's source (packet and parsed copy) to @addr:@port. */
static __always_inline __u32 node_snat(struct __sk_buff *skb, struct pkt *p, const __be32 *addr, __be16 port)
{
	struct nat_ctx c;

	if (nat_ctx_init(skb, p, &c) || nat_snat(skb, &c, addr, port))
		return FLOWSDN_DROP_MALFORMED;
	p->saddr[0] = addr[0];
	p->saddr[1] = addr[1];
	p->saddr[2] = addr[2];
	p->saddr[3] = addr[3];
	p->sport = port;
	return 0;
}

/* The destination of @p back to @addr:@port (a SNATed flow's reply). */
static __always_inline __u32 node_undo_snat(struct __sk_buff *skb, struct pkt *p, const __be32 *addr, __be16 port)
{
	struct nat_ctx c;

	if (nat_ctx_init(skb, p, &c) || nat_dnat(skb, &c, addr, port))
		return FLOWSDN_DROP_MALFORMED;
	p->daddr[0] = addr[0];
	p->daddr[1] = addr[1];
	p->daddr[2] = addr[2];
	p->daddr[3] = addr[3];
	p->dport = port;
	return 0;
}

/*
 * Picks the SNAT source port of a new flow to a remote backend: the
 * client's own when it is in the range and free, else random ones of
 * the range; "free" = no live conntrack entry for (node:port -> backend).
 * @p has the node's address as source already; its sport is set.
 */
static __noinline int node_snat_port(struct pkt *p, __be16 client_port)
{
	__u32 span = cfg_snat_port_max - cfg_snat_port_min + 1;
	struct flowsdn_ct_entry *e;
	int dir;

	for (int i = 0; i < SNAT_TRIES; i++) {
		__u32 port = bpf_ntohs(client_port);

		if (i || port < cfg_snat_port_min || port > cfg_snat_port_max)
			port = cfg_snat_port_min + bpf_get_prandom_u32() % span;
		p->sport = bpf_htons((__u16)port);
		if (ct_lookup(p, &e, &dir) == CT_NEW)
			return 0;
	}
	return -1;
}

/* Delivers @p (already DNATed) into the local endpoint @dst. */
static __always_inline int node_deliver(struct __sk_buff *skb, const struct pkt *p,
					const struct flowsdn_endpoint_info *dst, struct flowsdn_endpoint_counters *dc)
{
	if (l3_dec_ttl(skb, p))
		return drop(FLOWSDN_DROP_TTL_EXCEEDED, dc, p->len);
	if (l2_rewrite(skb, dst->host_mac, dst->mac))
		return drop(FLOWSDN_DROP_MALFORMED, dc, p->len);
	count_rx(dc, p->len);
	if (cfg_redirect_peer)
		return bpf_redirect_peer(dst->ifindex, 0);
	skb->mark = cfg_delivered_mark;
	return bpf_redirect(dst->ifindex, 0);
}

/* The reply of a SNATed flow (@e: the entry of the SNATed tuple). */
static __noinline int node_reply(struct __sk_buff *skb, struct pkt *p, struct flowsdn_ct_entry *e, int dir)
{
	struct flowsdn_ct_entry *f;
	__u32 reason;
	int ct;

	ct_update(e, p, dir);
	reason = node_undo_snat(skb, p, e->rev_addr, e->rev_port);
	if (reason)
		return drop(reason, NULL, p->len);
	/* Now backend -> client: the translated tuple's entry has the frontend. */
	ct = ct_lookup(p, &f, &dir);
	if (ct == CT_REPLY && f) {
		ct_update(f, p, dir);
		reason = svc_xlate_reply(skb, p, ct, f, dir);
		if (reason)
			return drop(reason, NULL, p->len);
	}
	return fib_forward(skb, p, NULL);
}

/* A flow (already DNATed) to a backend on this node: the endpoint's
 * ingress policy for a new one, tracking, delivery (a host-process
 * backend: the stack delivers it). */
static __noinline int node_to_local(struct __sk_buff *skb, struct pkt *p, const struct svc_xlate *x)
{
	struct flowsdn_endpoint_counters *dc = NULL;
	struct flowsdn_endpoint_info *dst;
	struct flowsdn_ct_entry *e;
	__u32 reason;
	int ct, dir;

	dst = ep_lookup(p->family, p->daddr);
	if (dst)
		dc = ep_counters(dst->ep_id);
	ct = ct_lookup(p, &e, &dir);
	if (ct == CT_NEW) {
		if (dst) {
			reason = policy_check(dst, FLOWSDN_DIR_INGRESS, peer_identity(p->family, p->saddr), p, dc);
			if (reason)
				return drop(reason, dc, p->len);
		}
		svc_xlate_track(p, dst ? dst->ep_id : 0, x);
	} else if (e && ct != CT_RELATED) {
		ct_update(e, p, dir);
	}
	return dst ? node_deliver(skb, p, dst, dc) : TC_ACT_OK;
}

/* A new flow (already DNATed) to another node's backend: the node's
 * address and a free port to SNAT to (into x->out_*); tracking of the
 * SNATed tuple (the client restored in replies), of the translated tuple
 * (the frontend restored) and of the frontend tuple (the way out).
 * 0 or a drop reason. */
static __noinline __u32 node_track_remote(struct pkt *p, struct svc_xlate *x)
{
	struct flowsdn_ct_entry *init;
	__be32 client[4];
	__be16 client_port = p->sport;

	if (node_addr(p->family, x->out_addr))
		return FLOWSDN_DROP_NO_SNAT_PORT;
	init = svc_ct_init(0);
	if (!init)
		return FLOWSDN_DROP_NO_SNAT_PORT;
	client[0] = p->saddr[0];
	client[1] = p->saddr[1];
	client[2] = p->saddr[2];
	client[3] = p->saddr[3];
	init->rev_addr[0] = client[0];
	init->rev_addr[1] = client[1];
	init->rev_addr[2] = client[2];
	init->rev_addr[3] = client[3];
	init->rev_port = client_port;
	init->svc_id = x->svc_id;
	init->backend_id = x->backend_id;
	init->flags = FLOWSDN_CT_F_SNAT;
	p->saddr[0] = x->out_addr[0];
	p->saddr[1] = x->out_addr[1];
	p->saddr[2] = x->out_addr[2];
	p->saddr[3] = x->out_addr[3];
	if (node_snat_port(p, client_port))
		return FLOWSDN_DROP_NO_SNAT_PORT;
	svc_ct_create(p, init);
	x->snat = 1;
	x->out_port = p->sport;
	p->saddr[0] = client[0];
	p->saddr[1] = client[1];
	p->saddr[2] = client[2];
	p->saddr[3] = client[3];
	p->sport = client_port;
	svc_xlate_track(p, 0, x);
	return 0;
}

/* A new flow of @svc: the source ranges, then the backend choice
 * (affinity by client address) into x->backend_id.  0 or a drop reason. */
static __noinline __u32 node_pick(const struct pkt *p, const struct flowsdn_service_value *svc, struct svc_xlate *x)
{
	struct flowsdn_affinity_key aff;
	struct flowsdn_backend *be;
	__u32 reason, id = 0;

	reason = srcrange_check(svc->svc_id, p->family, p->saddr);
	if (reason)
		return reason;
	lb_affinity_key_addr(&aff, svc->svc_id, p->family, p->saddr);
	be = lb_select_backend(svc, &aff, lb_hash_tuple(p->saddr, p->daddr, p->sport, p->dport, p->protocol), &id);
	if (!be)
		return FLOWSDN_DROP_NO_BACKEND;
	x->backend_id = id;
	return 0;
}

/*
 * The first half of an ICMP error from outside (see the top): when it is
 * about a flow this program SNATed, its quote's source and its outer
 * destination back to the client (@p too: daddr, inner_saddr/sport), so
 * that it is now about client -> backend, the translated tuple's entry.
 * 1 when done, 0 when it is about no such flow (the host's business),
 * -1 when it could not be rewritten.  (Apart from svc_xlate_reply(),
 * which does the second half: one stack frame at a time.)
 */
static __noinline int node_icmp_unsnat(struct __sk_buff *skb, struct pkt *p)
{
	struct flowsdn_ct_entry *e;
	struct nat_ctx c, in;
	int ct, dir;

	ct = ct_lookup(p, &e, &dir);
	if (ct != CT_RELATED || !e || !(e->flags & FLOWSDN_CT_F_SNAT) || dir != FLOWSDN_CT_DIR_ORIG)
		return 0;
	if (nat_ctx_init(skb, p, &c) || nat_icmp_inner(skb, &c, &in) != 1 ||
	    nat_rev_snat_icmp(skb, &c, &in, e->rev_addr, e->rev_port))
		return -1;
	__builtin_memcpy(p->daddr, e->rev_addr, sizeof(p->daddr));
	__builtin_memcpy(p->inner_saddr, e->rev_addr, sizeof(p->inner_saddr));
	p->inner_sport = e->rev_port;
	return 1;
}

SEC("tc")
int from_uplink(struct __sk_buff *skb)
{
	struct flowsdn_service_value *svc;
	struct flowsdn_backend *be = NULL;
	struct flowsdn_ct_entry *e;
	struct node_scratch *sc;
	struct svc_xlate *x;
	struct pkt *p;
	__u32 zero = 0;
	__u32 id = 0, reason, front_flags = 0;
	int rc, ct, dir, remote;

	/* The packet and its translation live in per-CPU room: the stack
	 * is needed by what is called. */
	sc = bpf_map_lookup_elem(&node_scratch, &zero);
	if (!sc)
		return TC_ACT_OK;
	__builtin_memset(sc, 0, sizeof(*sc));
	p = &sc->p;
	x = &sc->x;
	rc = parse_packet(skb, p);
	if (rc == PARSE_PASS)
		return TC_ACT_OK;
	if (rc)
		return drop(FLOWSDN_DROP_MALFORMED, NULL, skb->len);
	if (p->icmp == PKT_ICMP_ERROR) {
		rc = node_icmp_unsnat(skb, p);
		if (rc < 0)
			return drop(FLOWSDN_DROP_MALFORMED, NULL, p->len);
		if (rc == 0)
			goto host;
		ct = ct_lookup(p, &e, &dir);
		reason = svc_xlate_reply(skb, p, ct, e, dir);
		if (reason)
			return drop(reason, NULL, p->len);
		return fib_forward(skb, p, NULL);
	}
	if ((p->protocol != TCP_PROTO && p->protocol != UDP_PROTO) || p->frag == PKT_FRAG_LATER)
		goto host;
	ct = ct_lookup(p, &e, &dir);
	if (ct == CT_REPLY && e && (e->flags & FLOWSDN_CT_F_SNAT))
		return node_reply(skb, p, e, dir);
	svc = node_service(p);
	if (!svc)
		goto host;

	/* A flow seen before follows its frontend entry. */
	if (ct == CT_ESTABLISHED && e && (e->flags & FLOWSDN_CT_F_SVC_FRONT) && e->svc_id == svc->svc_id) {
		id = e->backend_id;
		be = bpf_map_lookup_elem(&flowsdn_backend, &id);
		if (be) {
			ct_update(e, p, dir);
			front_flags = e->flags;
			x->out_addr[0] = e->rev_addr[0];
			x->out_addr[1] = e->rev_addr[1];
			x->out_addr[2] = e->rev_addr[2];
			x->out_addr[3] = e->rev_addr[3];
			x->out_port = e->rev_port;
		}
	}
	if (!be) {
		reason = node_pick(p, svc, x);
		if (reason)
			return drop(reason, NULL, p->len);
		id = x->backend_id;
		be = bpf_map_lookup_elem(&flowsdn_backend, &id);
		if (!be)
			return drop(FLOWSDN_DROP_NO_BACKEND, NULL, p->len);
		x->new_flow = 1;
	}
	remote = (be->flags & FLOWSDN_BACKEND_F_REMOTE) != 0;
	if (remote && (svc->flags & FLOWSDN_SVC_F_LOCAL))
		return drop(FLOWSDN_DROP_LOCAL_ONLY, NULL, p->len);
	svc_xlate_set(x, p, svc->svc_id, id);
	reason = svc_dnat(skb, p, be);
	if (reason)
		return drop(reason, NULL, p->len);
	if (!remote)
		return node_to_local(skb, p, x);
	/* Another node's backend: a new flow gets its way out, a flow seen
	 * before takes the one it got. */
	if (x->new_flow)
		reason = node_track_remote(p, x);
	else
		reason = front_flags & FLOWSDN_CT_F_SNAT ? 0 : FLOWSDN_DROP_NO_SNAT_PORT;
	if (reason)
		return drop(reason, NULL, p->len);
	reason = node_snat(skb, p, x->out_addr, x->out_port);
	if (reason)
		return drop(reason, NULL, p->len);
	return fib_forward(skb, p, NULL);

	/* Not translated: for the node itself. */
host:
	return hostfw_ingress(p);
}

SEC("tc")
int to_uplink(struct __sk_buff *skb)
{
	struct node_scratch *sc;
	__u32 zero = 0;

	sc = bpf_map_lookup_elem(&node_scratch, &zero);
	if (!sc)
		return TC_ACT_OK;
	__builtin_memset(&sc->p, 0, sizeof(sc->p));
	if (parse_packet(skb, &sc->p))
		return TC_ACT_OK;
	if (sc->p.icmp == PKT_ICMP_ERROR ||
	    ((sc->p.protocol == TCP_PROTO || sc->p.protocol == UDP_PROTO) && sc->p.frag != PKT_FRAG_LATER)) {
		struct flowsdn_ct_entry *e;
		int ct, dir;

		/* A reply of, or an error about, a flow DNATed to a
		 * host-process backend (see the top); svc_xlate_reply()
		 * leaves any other alone. */
		ct = ct_lookup(&sc->p, &e, &dir);
		if ((ct == CT_REPLY || ct == CT_RELATED) && e && (e->flags & FLOWSDN_CT_F_SVC_XLATED)) {
			if (ct == CT_REPLY)
				ct_update(e, &sc->p, dir);
			if (svc_xlate_reply(skb, &sc->p, ct, e, dir))
				return drop(FLOWSDN_DROP_MALFORMED, NULL, sc->p.len);
		}
	}
	return hostfw_egress(&sc->p);
}
