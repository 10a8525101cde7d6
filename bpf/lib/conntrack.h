/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Connection tracking: the one table of the datapath (flowsdn_ct, see
 * <flowsdn/maps.h> for its key and entry), used by policy (replies and
 * later packets of an allowed connection are not judged again) and by the
 * tc service path (reverse NAT data in the entry).  This header is the
 * only code that touches the map.
 *
 *   ct_lookup()  what a parsed packet is: CT_NEW (no live entry),
 *                CT_ESTABLISHED (an entry in the packet's direction),
 *                CT_REPLY (an entry with the tuple reversed), CT_RELATED
 *                (an ICMP error whose embedded packet belongs to a
 *                tracked flow);
 *   ct_update()  counts the packet in the entry, follows the TCP state
 *                and moves the expiry;
 *   ct_create()  writes the entry of a new connection once policy allowed
 *                its first packet.
 *
 * What is tracked: TCP segments with SYN, ACK or RST (a segment with none
 * of them is never legitimate and is judged every time), UDP, SCTP and
 * other protocols by their tuple, ICMP/ICMPv6 echo by its identifier.
 * Other ICMP messages are judged one by one, except errors related to a
 * tracked flow.  Non-first IPv4 fragments carry no ports and are never
 * looked up here.  A TCP SYN that finds an entry closed by RST or both
 * FINs is a new connection on the same tuple (CT_NEW: judged again).
 *
 * Timeouts are load-time constants written by the loader from the agent
 * configuration (flowsdn-agent.conf(5)); an entry whose expiry has passed
 * is dead (CT_NEW) and the agent's garbage collector removes it; the LRU
 * evicts the least recently used entries when the table is full.
 */
#ifndef FLOWSDN_BPF_CONNTRACK_H
#define FLOWSDN_BPF_CONNTRACK_H

#include "common.h"
#include "parse.h"

#define CT_NSEC 1000000000ull

/* Timeouts in nanoseconds (set by the loader). */
const volatile __u64 cfg_ct_timeout_tcp = FLOWSDN_CT_TIMEOUT_TCP * CT_NSEC;
const volatile __u64 cfg_ct_timeout_tcp_syn = FLOWSDN_CT_TIMEOUT_TCP_SYN * CT_NSEC;
const volatile __u64 cfg_ct_timeout_tcp_close = FLOWSDN_CT_TIMEOUT_TCP_CLOSE * CT_NSEC;
const volatile __u64 cfg_ct_timeout_udp = FLOWSDN_CT_TIMEOUT_UDP * CT_NSEC;
const volatile __u64 cfg_ct_timeout_udp_replied = FLOWSDN_CT_TIMEOUT_UDP_REPLIED * CT_NSEC;
const volatile __u64 cfg_ct_timeout_icmp = FLOWSDN_CT_TIMEOUT_ICMP * CT_NSEC;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FLOWSDN_CT_DEFAULT_MAX);
	__type(key, struct flowsdn_ct_key);
	__type(value, struct flowsdn_ct_entry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_ct SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flowsdn_ct_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_ctstat SEC(".maps");

enum ct_status {
	CT_NEW = 0,
	CT_ESTABLISHED = 1,
	CT_REPLY = 2,
	CT_RELATED = 3,
};

static __always_inline struct flowsdn_ct_stats *ct_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&flowsdn_ctstat, &zero);
}

/* Whether the ports of @protocol are a flow's (swapped in replies). */
static __always_inline int ct_ported(__u8 protocol)
{
	return protocol == TCP_PROTO || protocol == UDP_PROTO || protocol == SCTP_PROTO;
}

/* The key of a tuple; @reverse swaps the addresses (and the ports of a
 * ported protocol: an ICMP identifier stays in sport). */
static __always_inline void ct_key_fill(struct flowsdn_ct_key *k, __u8 family, __u8 protocol, const __be32 *saddr,
					const __be32 *daddr, __be16 sport, __be16 dport, int reverse)
{
	const __be32 *s = reverse ? daddr : saddr, *d = reverse ? saddr : daddr;

	k->saddr[0] = s[0];
	k->saddr[1] = s[1];
	k->saddr[2] = s[2];
	k->saddr[3] = s[3];
	k->daddr[0] = d[0];
	k->daddr[1] = d[1];
	k->daddr[2] = d[2];
	k->daddr[3] = d[3];
	if (reverse && ct_ported(protocol)) {
		k->sport = dport;
		k->dport = sport;
	} else {
		k->sport = sport;
		k->dport = dport;
	}
	k->protocol = protocol;
	k->family = family;
	k->pad0[0] = 0;
	k->pad0[1] = 0;
}

/* The key of @p itself (@reverse 0) or of its reply direction. */
static __always_inline void ct_key_of(struct flowsdn_ct_key *k, const struct pkt *p, int reverse)
{
	__be16 dport = ct_ported(p->protocol) ? p->dport : 0;

	ct_key_fill(k, p->family, p->protocol, p->saddr, p->daddr, p->sport, dport, reverse);
}

/* Whether @p is tracked at all (see the top of this file). */
static __always_inline int ct_trackable(const struct pkt *p)
{
	if (p->frag == PKT_FRAG_LATER)
		return 0;
	if (p->protocol == TCP_PROTO)
		return (p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK | PKT_TCP_RST)) != 0;
	if (p->protocol == ICMP_PROTO || p->protocol == IPPROTO_ICMPV6_)
		return p->icmp == PKT_ICMP_ECHO_REQUEST || p->icmp == PKT_ICMP_ECHO_REPLY;
	return 1;
}

static __always_inline int ct_live(const struct flowsdn_ct_entry *e, __u64 now)
{
	return e->expires > now;
}

/*
 * Classifies @p (see the top of this file).  For CT_ESTABLISHED and
 * CT_REPLY *ret is the entry and *ret_dir FLOWSDN_CT_DIR_ORIG or _REPLY
 * (the packet's direction, for ct_update()); for CT_RELATED *ret is the
 * related flow's entry and *ret_dir the direction of the embedded packet.
 * *ret is NULL for CT_NEW.
 */
static __always_inline int ct_lookup(const struct pkt *p, struct flowsdn_ct_entry **ret, int *ret_dir)
{
	struct flowsdn_ct_stats *st = ct_stats();
	struct flowsdn_ct_entry *e;
	struct flowsdn_ct_key k;
	__u64 now = bpf_ktime_get_ns();

	*ret = NULL;
	*ret_dir = FLOWSDN_CT_DIR_ORIG;
	if (p->icmp == PKT_ICMP_ERROR && p->frag != PKT_FRAG_LATER) {
		/* The embedded packet went the other way: as sent, it is the
		 * flow's original direction when the error's receiver opened
		 * the flow, else its reply direction. */
		for (int rev = 0; rev < 2; rev++) {
			ct_key_fill(&k, p->family, p->inner_protocol, p->inner_saddr, p->inner_daddr, p->inner_sport,
				    p->inner_dport, rev);
			e = bpf_map_lookup_elem(&flowsdn_ct, &k);
			if (e && ct_live(e, now)) {
				if (st)
					st->related++;
				*ret = e;
				*ret_dir = rev ? FLOWSDN_CT_DIR_REPLY : FLOWSDN_CT_DIR_ORIG;
				return CT_RELATED;
			}
		}
		goto out_new;
	}
	if (!ct_trackable(p)) {
		if (st)
			st->untracked++;
		return CT_NEW;
	}
	ct_key_of(&k, p, 0);
	e = bpf_map_lookup_elem(&flowsdn_ct, &k);
	if (e && ct_live(e, now)) {
		/* A new SYN on a closed connection's tuple: a new connection. */
		if (p->protocol == TCP_PROTO && (e->tcp_state & FLOWSDN_CT_TCP_CLOSING) &&
		    (p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == PKT_TCP_SYN)
			goto out_new;
		if (st)
			st->established++;
		*ret = e;
		return CT_ESTABLISHED;
	}
	ct_key_of(&k, p, 1);
	e = bpf_map_lookup_elem(&flowsdn_ct, &k);
	if (e && ct_live(e, now)) {
		if (st)
			st->reply++;
		*ret = e;
		*ret_dir = FLOWSDN_CT_DIR_REPLY;
		return CT_REPLY;
	}
out_new:
	if (st)
		st->new_flows++;
	return CT_NEW;
}

/* The timeout of @e after a packet (its state already updated). */
static __always_inline __u64 ct_timeout(const struct flowsdn_ct_entry *e, __u8 protocol)
{
	if (protocol == TCP_PROTO) {
		if ((e->tcp_state & FLOWSDN_CT_TCP_RST) ||
		    (e->tcp_state & (FLOWSDN_CT_TCP_FIN_ORIG | FLOWSDN_CT_TCP_FIN_REPLY)) ==
			    (FLOWSDN_CT_TCP_FIN_ORIG | FLOWSDN_CT_TCP_FIN_REPLY))
			return cfg_ct_timeout_tcp_close;
		return (e->tcp_state & FLOWSDN_CT_TCP_ESTABLISHED) ? cfg_ct_timeout_tcp : cfg_ct_timeout_tcp_syn;
	}
	if (protocol == ICMP_PROTO || protocol == IPPROTO_ICMPV6_)
		return cfg_ct_timeout_icmp;
	return (e->flags & FLOWSDN_CT_F_REPLIED) ? cfg_ct_timeout_udp_replied : cfg_ct_timeout_udp;
}

/* The TCP state after a segment with @flags in @dir. */
static __always_inline __u8 ct_tcp_next(__u8 state, __u8 flags, int dir)
{
	if (flags & PKT_TCP_RST)
		state |= FLOWSDN_CT_TCP_RST;
	if (flags & PKT_TCP_FIN)
		state |= dir == FLOWSDN_CT_DIR_REPLY ? FLOWSDN_CT_TCP_FIN_REPLY : FLOWSDN_CT_TCP_FIN_ORIG;
	if (dir == FLOWSDN_CT_DIR_ORIG && (flags & PKT_TCP_SYN) && !(flags & PKT_TCP_ACK))
		state |= FLOWSDN_CT_TCP_SYN;
	if (dir == FLOWSDN_CT_DIR_REPLY && (flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == (PKT_TCP_SYN | PKT_TCP_ACK))
		state |= FLOWSDN_CT_TCP_SYNACK;
	if (dir == FLOWSDN_CT_DIR_ORIG && (flags & PKT_TCP_ACK) && !(flags & PKT_TCP_SYN) &&
	    (state & FLOWSDN_CT_TCP_SYNACK))
		state |= FLOWSDN_CT_TCP_ESTABLISHED;
	return state;
}

/* Counts @p in @e (direction @dir), follows TCP and moves the expiry.
 * Concurrent updates from other CPUs may interleave: the counters are
 * atomic, the state bits only accumulate. */
static __always_inline void ct_update(struct flowsdn_ct_entry *e, const struct pkt *p, int dir)
{
	int d = dir == FLOWSDN_CT_DIR_REPLY ? 1 : 0;
	struct flowsdn_ct_stats *st;
	__u8 state;

	__sync_fetch_and_add(&e->packets[d], 1);
	__sync_fetch_and_add(&e->bytes[d], p->len);
	if (d && !(e->flags & FLOWSDN_CT_F_REPLIED))
		e->flags |= FLOWSDN_CT_F_REPLIED;
	if (p->protocol == TCP_PROTO) {
		state = ct_tcp_next(e->tcp_state, p->tcp_flags, dir);
		if (state != e->tcp_state) {
			if ((state & FLOWSDN_CT_TCP_CLOSING) && !(e->tcp_state & FLOWSDN_CT_TCP_CLOSING)) {
				st = ct_stats();
				if (st)
					st->closed++;
			}
			e->tcp_state = state;
		}
	}
	e->expires = bpf_ktime_get_ns() + ct_timeout(e, p->protocol);
}

/*
 * Tracks the connection @p opens (after policy allowed it): writes its
 * entry from @init (NULL: an empty one; svc_id, backend_id, rev_*,
 * policy_rule, ep_id and flags are taken from it) with @p counted.
 * Returns 0, 1 when @p is not trackable (nothing written) or a negative
 * errno of the map update.
 */
static __always_inline int ct_create(const struct pkt *p, const struct flowsdn_ct_entry *init)
{
	struct flowsdn_ct_stats *st = ct_stats();
	struct flowsdn_ct_entry e = {};
	struct flowsdn_ct_key k;
	__u64 now = bpf_ktime_get_ns();
	long r;

	if (!ct_trackable(p) || p->icmp == PKT_ICMP_ECHO_REPLY)
		return 1;
	if (init) {
		__builtin_memcpy(e.rev_addr, init->rev_addr, sizeof(e.rev_addr));
		e.rev_port = init->rev_port;
		e.flags = init->flags & FLOWSDN_CT_F_INIT_MASK;
		e.svc_id = init->svc_id;
		e.backend_id = init->backend_id;
		e.policy_rule = init->policy_rule;
		e.ep_id = init->ep_id;
	}
	e.created = now;
	e.packets[0] = 1;
	e.bytes[0] = p->len;
	if (p->protocol == TCP_PROTO) {
		e.tcp_state = ct_tcp_next(0, p->tcp_flags, FLOWSDN_CT_DIR_ORIG);
		/* Picked up mid-stream (an ACK without SYN: the table was
		 * flushed or the entry evicted): established. */
		if ((p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == PKT_TCP_ACK)
			e.tcp_state |= FLOWSDN_CT_TCP_ESTABLISHED;
	}
	e.expires = now + ct_timeout(&e, p->protocol);
	ct_key_of(&k, p, 0);
	r = bpf_map_update_elem(&flowsdn_ct, &k, &e, BPF_ANY);
	if (st) {
		if (r)
			st->create_failed++;
		else
			st->created++;
	}
	return r ? (int)r : 0;
}

/* Tracks the new connection @p of local endpoint @ep_id that policy
 * allowed (no service translation). */
static __always_inline void ct_track(const struct pkt *p, __u32 ep_id)
{
	struct flowsdn_ct_entry init = { .ep_id = ep_id };

	ct_create(p, &init);
}

#endif
