/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NAT primitives of the tc programs: rewrite the source or destination
 * address (IPv4, IPv6) and port (TCP, UDP) of a packet with incremental
 * checksum updates, and the reverse translation of ICMP/ICMPv6 errors
 * whose quoted packet was translated.
 *
 * Checksums (RFC 1624 incremental updates, never a recomputation):
 *   - IPv4 header checksum: bpf_l3_csum_replace() on address changes;
 *   - TCP, UDP, ICMPv6: bpf_l4_csum_replace() with BPF_F_PSEUDO_HDR for
 *     address changes (the pseudo header) and without it for ports, so
 *     that CHECKSUM_PARTIAL packets (the stack's own) stay right;
 *   - UDP over IPv4 with checksum 0 ("none", RFC 768) stays 0, and a
 *     result of 0 is written as 0xffff (BPF_F_MARK_MANGLED_0);
 *   - ICMPv4 has no pseudo header: address changes leave it alone;
 *   - SCTP (CRC32c) cannot be updated incrementally: refused (NAT_UNSUPPORTED).
 *
 * Every function goes through bpf_skb_load_bytes()/bpf_skb_store_bytes()
 * (the checksum helpers invalidate direct packet pointers anyway) and
 * returns 0 or a negative NAT_* code; on failure the packet may be half
 * rewritten, so the caller drops it.
 */
#ifndef FLOWSDN_BPF_NAT_H
#define FLOWSDN_BPF_NAT_H

#include "common.h"
#include "parse.h"

#define NAT_ERR -1         /* a load/store/checksum helper failed (truncated packet) */
#define NAT_UNSUPPORTED -2 /* protocol without a translatable L4 header */

#define IP4_CSUM_OFF 10
#define IP4_SADDR_OFF 12
#define IP4_DADDR_OFF 16
#define IP6_SADDR_OFF 8
#define IP6_DADDR_OFF 24

#define ICMP_DEST_UNREACH_ 3
#define ICMP_TIME_EXCEEDED_ 11
#define ICMP_PARAMETERPROB_ 12
#define ICMPV6_DEST_UNREACH_ 1
#define ICMPV6_PARAMPROB_ 4

/* Which side of the packet a rewrite changes. */
enum nat_side {
	NAT_SRC = 0,
	NAT_DST = 1,
};

/* Where the headers of the packet (or of an ICMP error's quoted packet)
 * are; filled by nat_ctx_init() or nat_icmp_inner(). */
struct nat_ctx {
	__u32 l3_off;
	__u32 l4_off;
	__u8 family;   /* AF_INET or AF_INET6 */
	__u8 protocol; /* L4 protocol */
	__u8 has_l4;   /* 0 for a non-first IPv4 fragment: no L4 header */
	__u8 pad0;
};

/*
 * Fills @c for the packet @p parsed by parse_packet().  IPv6 extension
 * headers are not walked (as parse_packet()): the L4 header follows the
 * fixed header.
 */
static __always_inline int nat_ctx_init(struct __sk_buff *skb, const struct pkt *p, struct nat_ctx *c)
{
	c->l3_off = p->l3_off;
	c->family = p->family;
	c->protocol = p->protocol;
	c->has_l4 = 1;
	c->pad0 = 0;
	if (p->family == AF_INET) {
		__u8 vihl;
		__be16 frag;

		if (bpf_skb_load_bytes(skb, p->l3_off, &vihl, 1) ||
		    bpf_skb_load_bytes(skb, p->l3_off + 6, &frag, 2))
			return NAT_ERR;
		c->l4_off = p->l3_off + (vihl & 0xf) * 4;
		if (frag & bpf_htons(0x1fff))
			c->has_l4 = 0;
	} else {
		c->l4_off = p->l3_off + sizeof(struct ipv6hdr);
	}
	return 0;
}

/* Offset of the L4 checksum of @c (0: none that covers a pseudo header,
 * i.e. ICMPv4 or an L4 header we do not know). */
static __always_inline __u32 nat_l4_csum_off(const struct nat_ctx *c)
{
	switch (c->protocol) {
	case TCP_PROTO:
		return c->l4_off + 16;
	case UDP_PROTO:
		return c->l4_off + 6;
	case IPPROTO_ICMPV6_:
		return c->l4_off + 2;
	}
	return 0;
}

static __always_inline __u64 nat_l4_csum_flags(const struct nat_ctx *c)
{
	return c->protocol == UDP_PROTO ? BPF_F_MARK_MANGLED_0 : 0;
}

/*
 * Rewrites the source or destination (@side) address of the IP header at
 * @c to @to (4 bytes for IPv4, 16 for IPv6), with the IPv4 header checksum
 * and the pseudo-header part of the L4 checksum.  An unchanged address is
 * left alone.
 */
static __always_inline int nat_write_addr(struct __sk_buff *skb, const struct nat_ctx *c, enum nat_side side, const __be32 *to)
{
	__u32 csum_off = c->has_l4 ? nat_l4_csum_off(c) : 0;
	__u64 flags = BPF_F_PSEUDO_HDR | nat_l4_csum_flags(c);
	__be32 from[4];
	__u32 off;

	if (c->family == AF_INET) {
		off = c->l3_off + (side == NAT_SRC ? IP4_SADDR_OFF : IP4_DADDR_OFF);
		if (bpf_skb_load_bytes(skb, off, from, 4))
			return NAT_ERR;
		if (from[0] == to[0])
			return 0;
		if (csum_off && bpf_l4_csum_replace(skb, csum_off, from[0], to[0], flags | 4))
			return NAT_ERR;
		if (bpf_l3_csum_replace(skb, c->l3_off + IP4_CSUM_OFF, from[0], to[0], 4))
			return NAT_ERR;
		return bpf_skb_store_bytes(skb, off, to, 4, 0) ? NAT_ERR : 0;
	}
	off = c->l3_off + (side == NAT_SRC ? IP6_SADDR_OFF : IP6_DADDR_OFF);
	if (bpf_skb_load_bytes(skb, off, from, 16))
		return NAT_ERR;
	if (from[0] == to[0] && from[1] == to[1] && from[2] == to[2] && from[3] == to[3])
		return 0;
	if (csum_off) {
		__s64 diff = bpf_csum_diff(from, 16, (__be32 *)to, 16, 0);

		if (diff < 0 || bpf_l4_csum_replace(skb, csum_off, 0, (__u64)diff, flags))
			return NAT_ERR;
	}
	return bpf_skb_store_bytes(skb, off, to, 16, 0) ? NAT_ERR : 0;
}

/* Rewrites the TCP/UDP source or destination (@side) port to @to with the
 * L4 checksum.  NAT_UNSUPPORTED for another protocol or a fragment
 * without L4 header. */
static __always_inline int nat_write_port(struct __sk_buff *skb, const struct nat_ctx *c, enum nat_side side, __be16 to)
{
	__u32 off = c->l4_off + (side == NAT_SRC ? 0 : 2);
	__be16 from;

	if (!c->has_l4 || (c->protocol != TCP_PROTO && c->protocol != UDP_PROTO))
		return NAT_UNSUPPORTED;
	if (bpf_skb_load_bytes(skb, off, &from, 2))
		return NAT_ERR;
	if (from == to)
		return 0;
	if (bpf_l4_csum_replace(skb, nat_l4_csum_off(c), from, to, nat_l4_csum_flags(c) | 2))
		return NAT_ERR;
	return bpf_skb_store_bytes(skb, off, &to, 2, 0) ? NAT_ERR : 0;
}

/* Rewrites address and port on one side: the destination (DNAT, NAT_DST)
 * or the source (SNAT, reverse DNAT of a reply: NAT_SRC).  Only
 * TCP and UDP. */
static __always_inline int nat_rewrite(struct __sk_buff *skb, const struct nat_ctx *c, enum nat_side side, const __be32 *addr,
				       __be16 port)
{
	int r;

	if (c->protocol != TCP_PROTO && c->protocol != UDP_PROTO)
		return NAT_UNSUPPORTED;
	r = nat_write_port(skb, c, side, port);
	if (r)
		return r;
	return nat_write_addr(skb, c, side, addr);
}

/* DNAT: destination to @addr:@port. */
static __always_inline int nat_dnat(struct __sk_buff *skb, const struct nat_ctx *c, const __be32 *addr, __be16 port)
{
	return nat_rewrite(skb, c, NAT_DST, addr, port);
}

/* SNAT: source to @addr:@port.  Also the reverse NAT of a reply to a
 * DNATed flow: the source goes back to the frontend the client asked
 * for, the connection tracking entry's rev_addr/rev_port. */
static __always_inline int nat_snat(struct __sk_buff *skb, const struct nat_ctx *c, const __be32 *addr, __be16 port)
{
	return nat_rewrite(skb, c, NAT_SRC, addr, port);
}

/* ------------------------------------------------------------ ICMP errors */

/*
 * Whether the packet at @c is an ICMP error (destination unreachable,
 * time exceeded, parameter problem; ICMPv6 1..4) and, if so, where its
 * quoted packet is: @inner gets its offsets (the quoted header's own
 * family and protocol).  1 yes, 0 no, NAT_ERR when the quote is cut short
 * of its IP header and ports.
 */
static __always_inline int nat_icmp_inner(struct __sk_buff *skb, const struct nat_ctx *c, struct nat_ctx *inner)
{
	__u8 type;

	if (!c->has_l4 || bpf_skb_load_bytes(skb, c->l4_off, &type, 1))
		return 0;
	inner->l3_off = c->l4_off + 8;
	inner->family = c->family;
	inner->has_l4 = 1;
	inner->pad0 = 0;
	if (c->protocol == ICMP_PROTO) {
		__u8 vihl;

		if (type != ICMP_DEST_UNREACH_ && type != ICMP_TIME_EXCEEDED_ && type != ICMP_PARAMETERPROB_)
			return 0;
		if (bpf_skb_load_bytes(skb, inner->l3_off, &vihl, 1) ||
		    bpf_skb_load_bytes(skb, inner->l3_off + 9, &inner->protocol, 1))
			return NAT_ERR;
		if ((vihl >> 4) != 4 || (vihl & 0xf) < 5)
			return NAT_ERR;
		inner->l4_off = inner->l3_off + (vihl & 0xf) * 4;
	} else if (c->protocol == IPPROTO_ICMPV6_) {
		if (type < ICMPV6_DEST_UNREACH_ || type > ICMPV6_PARAMPROB_)
			return 0;
		if (bpf_skb_load_bytes(skb, inner->l3_off + 6, &inner->protocol, 1))
			return NAT_ERR;
		inner->l4_off = inner->l3_off + sizeof(struct ipv6hdr);
	} else {
		return 0;
	}
	/* The ports (first 4 bytes of the quoted L4 header) must be there. */
	if (inner->l4_off + 4 > skb->len)
		return NAT_ERR;
	return 1;
}

/* Offset of the quoted packet's L4 checksum when the quote holds it, else
 * 0 (ICMPv4 quotes as little as 8 bytes of L4 header: TCP's is then cut). */
static __always_inline __u32 nat_inner_csum_off(struct __sk_buff *skb, const struct nat_ctx *in)
{
	__u32 off = in->protocol == TCP_PROTO ? in->l4_off + 16 : in->protocol == UDP_PROTO ? in->l4_off + 6 : 0;

	return off && off + 2 <= skb->len ? off : 0;
}

/*
 * Adds the change of the 2-byte field at @off (its value before: @before)
 * to the ICMP/ICMPv6 checksum at @icmp_csum: the quoted bytes are plain
 * ICMP payload, so no pseudo header and no skb checksum state.
 */
static __always_inline int nat_icmp_fold16(struct __sk_buff *skb, __u32 icmp_csum, __u32 off, __be16 before)
{
	__be16 after;

	if (bpf_skb_load_bytes(skb, off, &after, 2))
		return NAT_ERR;
	if (after == before)
		return 0;
	return bpf_l3_csum_replace(skb, icmp_csum, before, after, 2) ? NAT_ERR : 0;
}

/*
 * Rewrites the quoted packet's source or destination (@side) address and
 * port to @addr:@port: its IPv4 header checksum, its L4 checksum when
 * quoted (UDP's 0 stays 0), and the outer ICMP checksum for every byte
 * changed (the quote is ICMP payload).
 */
static __always_inline int nat_icmp_rewrite_inner(struct __sk_buff *skb, const struct nat_ctx *outer,
						  const struct nat_ctx *in, enum nat_side side, const __be32 *addr, __be16 port)
{
	__u32 icmp_csum = outer->l4_off + 2;
	__u32 l4_csum = nat_inner_csum_off(skb, in);
	__u32 aoff, poff = in->l4_off + (side == NAT_SRC ? 0 : 2);
	__be16 old_ip_csum = 0, old_l4_csum = 0, old_port;
	__be32 from[4] = {};
	__u32 alen = in->family == AF_INET ? 4 : 16;
	__s64 diff;

	if (in->protocol != TCP_PROTO && in->protocol != UDP_PROTO)
		return NAT_UNSUPPORTED;
	if (in->family == AF_INET)
		aoff = in->l3_off + (side == NAT_SRC ? IP4_SADDR_OFF : IP4_DADDR_OFF);
	else
		aoff = in->l3_off + (side == NAT_SRC ? IP6_SADDR_OFF : IP6_DADDR_OFF);
	if (bpf_skb_load_bytes(skb, poff, &old_port, 2))
		return NAT_ERR;
	if (l4_csum && bpf_skb_load_bytes(skb, l4_csum, &old_l4_csum, 2))
		return NAT_ERR;
	if (in->protocol == UDP_PROTO && in->family == AF_INET && old_l4_csum == 0)
		l4_csum = 0; /* no checksum in the quoted datagram */
	if (in->family == AF_INET) {
		if (bpf_skb_load_bytes(skb, aoff, from, 4) ||
		    bpf_skb_load_bytes(skb, in->l3_off + IP4_CSUM_OFF, &old_ip_csum, 2))
			return NAT_ERR;
	} else if (bpf_skb_load_bytes(skb, aoff, from, 16)) {
		return NAT_ERR;
	}

	/* The quoted header's own checksums. */
	if (in->family == AF_INET) {
		if (bpf_l3_csum_replace(skb, in->l3_off + IP4_CSUM_OFF, from[0], addr[0], 4))
			return NAT_ERR;
		if (l4_csum && bpf_l3_csum_replace(skb, l4_csum, from[0], addr[0], 4))
			return NAT_ERR;
		diff = bpf_csum_diff(from, 4, (__be32 *)addr, 4, 0);
	} else {
		diff = bpf_csum_diff(from, 16, (__be32 *)addr, 16, 0);
		if (diff < 0 || (l4_csum && bpf_l3_csum_replace(skb, l4_csum, 0, (__u64)diff, 0)))
			return NAT_ERR;
	}
	if (diff < 0)
		return NAT_ERR;
	if (l4_csum && bpf_l3_csum_replace(skb, l4_csum, old_port, port, 2))
		return NAT_ERR;

	/* The bytes themselves, then the outer checksum for each change. */
	if (bpf_skb_store_bytes(skb, aoff, addr, alen, 0) || bpf_skb_store_bytes(skb, poff, &port, 2, 0))
		return NAT_ERR;
	if (bpf_l3_csum_replace(skb, icmp_csum, 0, (__u64)diff, 0) ||
	    bpf_l3_csum_replace(skb, icmp_csum, old_port, port, 2))
		return NAT_ERR;
	if (in->family == AF_INET && nat_icmp_fold16(skb, icmp_csum, in->l3_off + IP4_CSUM_OFF, old_ip_csum))
		return NAT_ERR;
	if (l4_csum && nat_icmp_fold16(skb, icmp_csum, l4_csum, old_l4_csum))
		return NAT_ERR;
	return 0;
}

/*
 * Reverse NAT of an ICMP error about a DNATed flow, on its way back to
 * the client: the quoted packet (client -> backend) gets its destination
 * back to the frontend @front:@front_port, and the outer source, when the
 * backend @backend itself sent the error, becomes the frontend too (a
 * router's address on the way stays).  @c is the outer packet, @in what
 * nat_icmp_inner() found.
 */
static __always_inline int nat_rev_dnat_icmp(struct __sk_buff *skb, const struct nat_ctx *c, const struct nat_ctx *in,
					     const __be32 *backend, const __be32 *front, __be16 front_port)
{
	__be32 outer_src[4] = {};
	int r;

	r = nat_icmp_rewrite_inner(skb, c, in, NAT_DST, front, front_port);
	if (r)
		return r;
	if (bpf_skb_load_bytes(skb, c->l3_off + (c->family == AF_INET ? IP4_SADDR_OFF : IP6_SADDR_OFF), outer_src,
			       c->family == AF_INET ? 4 : 16))
		return NAT_ERR;
	if (outer_src[0] != backend[0] || outer_src[1] != backend[1] || outer_src[2] != backend[2] ||
	    outer_src[3] != backend[3])
		return 0;
	return nat_write_addr(skb, c, NAT_SRC, front);
}

/*
 * Reverse SNAT of an ICMP error about a flow whose source was translated
 * (NodePort to a remote backend): the quoted packet (node -> backend)
 * gets its source back to the client @client:@client_port, and the outer
 * destination (the node address) becomes the client.
 */
static __always_inline int nat_rev_snat_icmp(struct __sk_buff *skb, const struct nat_ctx *c, const struct nat_ctx *in,
					     const __be32 *client, __be16 client_port)
{
	int r = nat_icmp_rewrite_inner(skb, c, in, NAT_SRC, client, client_port);

	if (r)
		return r;
	return nat_write_addr(skb, c, NAT_DST, client);
}

#endif
