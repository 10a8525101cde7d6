// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A test harness for bpf/lib/nat.h and bpf/lib/srcrange.h: nat_run
 * applies the NAT primitive named in the nat_req map to the packet it is
 * run on, so that tests/bpf/test-nat.c can check the rewritten bytes and
 * checksums with BPF_PROG_TEST_RUN; srcrange_run gives the source-range
 * verdict of a packet's source for the service in srcrange_req
 * (tests/bpf/test-srcrange.c).  Not part of the datapath.
 */
#include "lib/common.h"
#include "lib/counters.h"
#include "lib/parse.h"
#include "lib/nat.h"
#include "lib/srcrange.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define NAT_OP_DNAT 1
#define NAT_OP_SNAT 2
#define NAT_OP_REV_DNAT_ICMP 3 /* addr:port = frontend, addr2 = backend */
#define NAT_OP_REV_SNAT_ICMP 4 /* addr:port = client */

struct nat_req {
	__u32 op;
	__be16 port;
	__u16 pad0;
	__be32 addr[4];
	__be32 addr2[4];
	__s32 result; /* written back: the primitive's return value */
	__u32 pad1;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nat_req);
} nat_req SEC(".maps");

SEC("tc")
int nat_run(struct __sk_buff *skb)
{
	struct nat_ctx c, in;
	struct nat_req *req;
	struct pkt p = {};
	__u32 zero = 0;
	int r;

	req = bpf_map_lookup_elem(&nat_req, &zero);
	if (!req)
		return TC_ACT_SHOT;
	if (parse_packet(skb, &p) || nat_ctx_init(skb, &p, &c)) {
		req->result = 100;
		return TC_ACT_SHOT;
	}
	switch (req->op) {
	case NAT_OP_DNAT:
		r = nat_dnat(skb, &c, req->addr, req->port);
		break;
	case NAT_OP_SNAT:
		r = nat_snat(skb, &c, req->addr, req->port);
		break;
	case NAT_OP_REV_DNAT_ICMP:
	case NAT_OP_REV_SNAT_ICMP:
		r = nat_icmp_inner(skb, &c, &in);
		if (r != 1) {
			r = r ? r : 101;
			break;
		}
		if (req->op == NAT_OP_REV_DNAT_ICMP)
			r = nat_rev_dnat_icmp(skb, &c, &in, req->addr2, req->addr, req->port);
		else
			r = nat_rev_snat_icmp(skb, &c, &in, req->addr, req->port);
		break;
	default:
		r = 102;
	}
	req = bpf_map_lookup_elem(&nat_req, &zero);
	if (req)
		req->result = r;
	return r ? TC_ACT_SHOT : TC_ACT_OK;
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32); /* the svc_id to check */
} srcrange_req SEC(".maps");

/* TC_ACT_OK when the source may reach the service, else the drop (counted
 * under its reason). */
SEC("tc")
int srcrange_run(struct __sk_buff *skb)
{
	struct pkt p = {};
	__u32 zero = 0, *svc_id, reason;

	svc_id = bpf_map_lookup_elem(&srcrange_req, &zero);
	if (!svc_id || parse_packet(skb, &p))
		return TC_ACT_UNSPEC;
	reason = srcrange_check(*svc_id, p.family, p.saddr);
	return reason ? drop(reason, NULL, p.len) : TC_ACT_OK;
}
