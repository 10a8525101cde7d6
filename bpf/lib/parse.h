/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Packet parsing: Ethernet, IPv4/IPv6 and the L4 port used by policy. */
#ifndef FLOWSDN_BPF_PARSE_H
#define FLOWSDN_BPF_PARSE_H

#include "common.h"

#define ICMP_PROTO 1
#define TCP_PROTO 6
#define UDP_PROTO 17
#define SCTP_PROTO 132

/* IPv6 extension headers walked to the transport header. */
#define EXT_HOPOPTS 0
#define EXT_ROUTING 43
#define EXT_FRAGMENT 44
#define EXT_AH 51
#define EXT_DSTOPTS 60
#define EXT_MAX 8 /* headers walked at most; more is refused as malformed */

/* Parse results besides 0 (an IPv4/IPv6 packet in *p). */
#define PARSE_PASS 1      /* not IP, or IPv6 neighbour discovery / link-local: hand to the stack */
#define PARSE_MALFORMED 2 /* truncated or inconsistent headers */

/* The ports of an embedded transport header at @l4 (ICMP echo: the
 * identifier as sport, 0 as dport), into the inner tuple of @p. */
static __always_inline int parse_inner_ports(void *data_end, __u8 *l4, struct pkt *p)
{
	if ((void *)(l4 + 8) > data_end)
		return -1;
	switch (p->inner_protocol) {
	case TCP_PROTO:
	case UDP_PROTO:
	case SCTP_PROTO:
		p->inner_sport = *(__be16 *)l4;
		p->inner_dport = *(__be16 *)(l4 + 2);
		return 0;
	case ICMP_PROTO:
	case IPPROTO_ICMPV6_:
		/* Only an echo request (or reply) can be the packet an error
		 * is about and belong to a tracked flow. */
		if (l4[0] != 8 && l4[0] != 0 && l4[0] != 128 && l4[0] != 129)
			return -1;
		p->inner_sport = *(__be16 *)(l4 + 4);
		p->inner_dport = 0;
		return 0;
	}
	p->inner_sport = p->inner_dport = 0;
	return 0;
}

/* The packet an ICMP/ICMPv6 error embeds (@inner: its IP header).  An
 * error whose embedded header cannot be read is PKT_ICMP_OTHER (never
 * related to a tracked flow). */
static __always_inline void parse_icmp_inner(void *data_end, __u8 *inner, struct pkt *p)
{
	if (p->family == AF_INET) {
		struct iphdr *ip = (void *)inner;
		__u32 ihl;

		if ((void *)(ip + 1) > data_end)
			goto other;
		ihl = ip->ihl * 4;
		if (ip->version != 4 || ihl < sizeof(*ip) || (ip->frag_off & bpf_htons(0x1fff)))
			goto other;
		p->inner_protocol = ip->protocol;
		p->inner_saddr[0] = ip->saddr;
		p->inner_daddr[0] = ip->daddr;
		p->inner_saddr[1] = p->inner_saddr[2] = p->inner_saddr[3] = 0;
		p->inner_daddr[1] = p->inner_daddr[2] = p->inner_daddr[3] = 0;
		if (parse_inner_ports(data_end, inner + ihl, p))
			goto other;
	} else {
		struct ipv6hdr *ip6 = (void *)inner;

		if ((void *)(ip6 + 1) > data_end || ip6->version != 6)
			goto other;
		p->inner_protocol = ip6->nexthdr;
		__builtin_memcpy(p->inner_saddr, &ip6->saddr, 16);
		__builtin_memcpy(p->inner_daddr, &ip6->daddr, 16);
		if (parse_inner_ports(data_end, inner + sizeof(*ip6), p))
			goto other;
	}
	return;
other:
	p->icmp = PKT_ICMP_OTHER;
}

/* What kind of ICMP (@v6 0) or ICMPv6 (@v6 1) message type @type is. */
static __always_inline __u8 icmp_kind(__u8 type, int v6)
{
	if (v6) {
		if (type == 128)
			return PKT_ICMP_ECHO_REQUEST;
		if (type == 129)
			return PKT_ICMP_ECHO_REPLY;
		return type >= 1 && type <= 4 ? PKT_ICMP_ERROR : PKT_ICMP_OTHER;
	}
	if (type == 8)
		return PKT_ICMP_ECHO_REQUEST;
	if (type == 0)
		return PKT_ICMP_ECHO_REPLY;
	return type == 3 || type == 4 || type == 11 || type == 12 ? PKT_ICMP_ERROR : PKT_ICMP_OTHER;
}

/* The ports of TCP/UDP/SCTP (the same offsets in all three) and TCP's
 * flags; for ICMP/ICMPv6 the type in dport's high byte, the echo
 * identifier in sport and, for an error, the embedded packet's tuple. */
static __always_inline int parse_l4(void *data, void *data_end, __u32 off, struct pkt *p)
{
	__u8 *l4 = (__u8 *)data + off;

	p->dport = 0;
	p->sport = 0;
	switch (p->protocol) {
	case TCP_PROTO:
		if ((void *)(l4 + 14) > data_end)
			return PARSE_MALFORMED;
		p->tcp_flags = l4[13];
		/* fallthrough */
	case UDP_PROTO:
	case SCTP_PROTO:
		if ((void *)(l4 + 4) > data_end)
			return PARSE_MALFORMED;
		p->sport = *(__be16 *)l4;
		p->dport = *(__be16 *)(l4 + 2);
		return 0;
	case ICMP_PROTO:
	case IPPROTO_ICMPV6_:
		if ((void *)(l4 + 1) > data_end)
			return PARSE_MALFORMED;
		/* ICMP under IPv6 or ICMPv6 under IPv4: not a message of ours. */
		if ((p->protocol == ICMP_PROTO) != (p->family == AF_INET)) {
			p->icmp = PKT_ICMP_OTHER;
			return 0;
		}
		p->dport = bpf_htons((__u16)l4[0] << 8);
		p->icmp = icmp_kind(l4[0], p->family == AF_INET6);
		if (p->icmp == PKT_ICMP_ECHO_REQUEST || p->icmp == PKT_ICMP_ECHO_REPLY) {
			if ((void *)(l4 + 8) > data_end)
				return PARSE_MALFORMED;
			p->sport = *(__be16 *)(l4 + 4);
		} else if (p->icmp == PKT_ICMP_ERROR) {
			parse_icmp_inner(data_end, l4 + 8, p);
		}
		return 0;
	}
	return 0;
}

/*
 * Walks IPv6 extension headers (hop-by-hop, routing, destination
 * options, AH and fragment) from the fixed header's next header to the
 * transport header: p->protocol becomes the real L4 protocol, *ret_off
 * its offset.  A fragment header sets p->frag and p->frag_id; a non-first
 * fragment ends the walk (no transport header follows).  Bounded:
 * EXT_MAX headers, each within the linear data.
 */
static __always_inline int parse_ipv6_ext(void *data, void *data_end, __u32 off, struct pkt *p, __u32 *ret_off)
{
	for (int i = 0; i < EXT_MAX; i++) {
		__u8 *h = (__u8 *)data + off;
		__u8 next = p->protocol;

		if (next != EXT_HOPOPTS && next != EXT_ROUTING && next != EXT_DSTOPTS && next != EXT_AH &&
		    next != EXT_FRAGMENT) {
			*ret_off = off;
			return 0;
		}
		if (off > 1024 || (void *)(h + 8) > data_end)
			return PARSE_MALFORMED;
		p->protocol = h[0];
		if (next == EXT_FRAGMENT) {
			__u16 fo = bpf_ntohs(*(__be16 *)(h + 2));

			p->frag_id = *(__be32 *)(h + 4);
			if (fo & 0xfff8) {
				p->frag = PKT_FRAG_LATER;
				*ret_off = off + 8;
				return 1;
			}
			if (fo & 1)
				p->frag = PKT_FRAG_FIRST;
			off += 8;
		} else if (next == EXT_AH) {
			off += ((__u32)h[1] + 2) * 4;
		} else {
			off += ((__u32)h[1] + 1) * 8;
		}
	}
	return PARSE_MALFORMED;
}

/*
 * Parses the frame.  ARP and other non-IP frames, IPv6 neighbour discovery
 * (NS/NA/RS/RA/redirect) and IPv6 packets from or to link-local addresses
 * are PARSE_PASS: they concern the link between the endpoint and its
 * gateway and belong to the kernel.  IPv6 extension headers are walked to
 * the transport header (parse_ipv6_ext()).  Non-first fragments carry no
 * ports: dport stays 0 and p->frag says PKT_FRAG_LATER until lib/frag.h
 * gives them their first fragment's ports.
 */
static __always_inline int parse_packet(struct __sk_buff *skb, struct pkt *p)
{
	/* Ethernet, the longest IPv4 header (or IPv6 and a few extension
	 * headers) and the L4 bytes we read (an ICMP error: its 8 bytes, the
	 * embedded IP header and 8 bytes past it). */
	const __u32 want = 256;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth;

	/* Headers outside the linear part (rare on veths): pull them in. */
	if (data + want > data_end && skb->len > (__u32)(data_end - data)) {
		bpf_skb_pull_data(skb, skb->len < want ? skb->len : want);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	eth = data;

	if ((void *)(eth + 1) > data_end)
		return PARSE_MALFORMED;
	p->l3_off = sizeof(*eth);
	p->len = skb->len;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 ihl;

		if ((void *)(ip + 1) > data_end)
			return PARSE_MALFORMED;
		ihl = ip->ihl * 4;
		if (ip->version != 4 || ihl < sizeof(*ip))
			return PARSE_MALFORMED;
		p->family = AF_INET;
		p->protocol = ip->protocol;
		p->saddr[0] = ip->saddr;
		p->daddr[0] = ip->daddr;
		p->saddr[1] = p->saddr[2] = p->saddr[3] = 0;
		p->daddr[1] = p->daddr[2] = p->daddr[3] = 0;
		p->frag_id = (__be32)ip->id;
		if (ip->frag_off & bpf_htons(0x1fff)) {
			p->dport = 0;
			p->frag = PKT_FRAG_LATER;
			return 0;
		}
		if (ip->frag_off & bpf_htons(0x2000))
			p->frag = PKT_FRAG_FIRST;
		return parse_l4(data, data_end, sizeof(*eth) + ihl, p);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		__u32 off = 0;
		int r;

		if ((void *)(ip6 + 1) > data_end)
			return PARSE_MALFORMED;
		if (ip6->version != 6)
			return PARSE_MALFORMED;
		p->family = AF_INET6;
		p->protocol = ip6->nexthdr;
		__builtin_memcpy(p->saddr, &ip6->saddr, 16);
		__builtin_memcpy(p->daddr, &ip6->daddr, 16);
		/* fe80::/10 on either side: link-local traffic. */
		if ((p->saddr[0] & bpf_htonl(0xffc00000)) == bpf_htonl(0xfe800000) ||
		    (p->daddr[0] & bpf_htonl(0xffc00000)) == bpf_htonl(0xfe800000))
			return PARSE_PASS;
		/* ff00::/8: multicast (MLD, ND to solicited-node groups). */
		if ((p->daddr[0] & bpf_htonl(0xff000000)) == bpf_htonl(0xff000000))
			return PARSE_PASS;
		r = parse_ipv6_ext(data, data_end, sizeof(*eth) + sizeof(*ip6), p, &off);
		if (r == 1)
			return 0; /* a non-first fragment */
		if (r)
			return PARSE_MALFORMED;
		if (parse_l4(data, data_end, off, p))
			return PARSE_MALFORMED;
		/* Neighbour discovery types 133..137 (the type is in dport's high byte). */
		if (p->protocol == IPPROTO_ICMPV6_) {
			__u8 type = bpf_ntohs(p->dport) >> 8;

			if (type >= 133 && type <= 137)
				return PARSE_PASS;
		}
		return 0;
	}
	return PARSE_PASS;
}

#endif
