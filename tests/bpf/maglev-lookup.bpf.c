// SPDX-License-Identifier: LGPL-2.1-or-later
/* maglev_lookup() of bpf/lib/maglev.h run by BPF_PROG_TEST_RUN: the packet
 * carries {svc_id, hash, m} after its Ethernet header, the program returns
 * the backend id the datapath would choose (tests/integration/test-maglev-map.c). */
#include "lib/maglev.h"

struct maglev_query {
	__u32 svc_id;
	__u32 hash;
	__u32 m;
};

SEC("tc")
int maglev_query(struct __sk_buff *skb)
{
	struct maglev_query q;

	if (bpf_skb_load_bytes(skb, ETH_HLEN, &q, sizeof(q)) < 0)
		return 0;
	return (int)maglev_lookup(q.svc_id, q.hash, q.m);
}

char LICENSE[] SEC("license") = "GPL";
