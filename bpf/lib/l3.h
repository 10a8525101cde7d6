/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Forwarding in BPF: TTL/hop limit, MAC rewrite, FIB lookup. */
#ifndef FLOWSDN_BPF_L3_H
#define FLOWSDN_BPF_L3_H

#include "common.h"

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

#endif
