/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Forwarding in BPF: TTL/hop limit, MAC rewrite, FIB lookup. */
#ifndef FLOWSDN_BPF_L3_H
#define FLOWSDN_BPF_L3_H

#include "common.h"
#include "counters.h"

/* Decrements the IPv4 TTL (with the incremental checksum update of
 * RFC 1624, as the kernel's ip_decrease_ttl()) or the IPv6 hop limit.
 * -1 when it is exhausted (the packet must not be forwarded). */
static __always_inline int l3_dec_ttl(struct __sk_buff *skb, const struct pkt *p)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if (p->family == AF_INET) {
		struct iphdr *ip = data + sizeof(struct ethhdr);
		__u32 check;

		if ((void *)(ip + 1) > data_end)
			return -1;
		if (ip->ttl <= 1)
			return -1;
		check = ip->check;
		check += bpf_htons(0x0100);
		ip->check = (__sum16)(check + (check >= 0xffff));
		ip->ttl--;
		return 0;
	} else {
		struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);

		if ((void *)(ip6 + 1) > data_end)
			return -1;
		if (ip6->hop_limit <= 1)
			return -1;
		ip6->hop_limit--;
		return 0;
	}
}

static __always_inline int l2_rewrite(struct __sk_buff *skb, const __u8 *smac, const __u8 *dmac)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return -1;
	__builtin_memcpy(eth->h_source, smac, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, dmac, ETH_ALEN);
	return 0;
}

/*
 * Forwards @p off the node with bpf_fib_lookup() (@sc: the sender's
 * counters, may be NULL): TTL decrement, MAC rewrite and redirect to the
 * egress device, bpf_redirect_neigh() when the neighbour is not resolved;
 * what the FIB does not forward (local address, unreachable, needs
 * fragmentation, forwarding disabled...) goes to the stack, which decides
 * and answers with the right ICMP.
 */
static __always_inline int fib_forward(struct __sk_buff *skb, const struct pkt *p,
				       struct flowsdn_endpoint_counters *sc)
{
	struct bpf_fib_lookup fib = {};
	long rc;

	fib.ifindex = skb->ifindex;
	fib.l4_protocol = p->protocol;
	/* A GSO packet is segmented to the MTU later: no MTU check for it. */
	fib.tot_len = skb->gso_size ? 0 : p->len - sizeof(struct ethhdr);
	if (p->family == AF_INET) {
		fib.family = AF_INET;
		fib.ipv4_src = p->saddr[0];
		fib.ipv4_dst = p->daddr[0];
	} else {
		fib.family = AF_INET6;
		__builtin_memcpy(fib.ipv6_src, p->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, p->daddr, 16);
	}
	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	if (rc < 0)
		return drop(FLOWSDN_DROP_FIB_FAILED, sc, p->len);
	if (rc == BPF_FIB_LKUP_RET_SUCCESS) {
		if (l3_dec_ttl(skb, p))
			return drop(FLOWSDN_DROP_TTL_EXCEEDED, sc, p->len);
		if (l2_rewrite(skb, fib.smac, fib.dmac))
			return drop(FLOWSDN_DROP_MALFORMED, sc, p->len);
		return bpf_redirect(fib.ifindex, 0);
	}
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		struct bpf_redir_neigh nh = {};

		if (l3_dec_ttl(skb, p))
			return drop(FLOWSDN_DROP_TTL_EXCEEDED, sc, p->len);
		if (p->family == AF_INET) {
			nh.nh_family = AF_INET;
			nh.ipv4_nh = fib.ipv4_dst;
		} else {
			nh.nh_family = AF_INET6;
			__builtin_memcpy(nh.ipv6_nh, fib.ipv6_dst, 16);
		}
		return bpf_redirect_neigh(fib.ifindex, &nh, sizeof(nh), 0);
	}
	/* Not forwarded by the FIB (local address, unreachable, needs
	 * fragmentation, forwarding disabled...): the stack decides. */
	return TC_ACT_OK;
}

#endif
