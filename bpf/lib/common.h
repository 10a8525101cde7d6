/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared definitions of the flowsdn BPF programs: the maps (their types
 * from <flowsdn/maps.h>), the per-node settings and small helpers.
 * Everything here is static __always_inline: the programs have no BPF
 * subprogram calls.
 */
#ifndef FLOWSDN_BPF_COMMON_H
#define FLOWSDN_BPF_COMMON_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <flowsdn/maps.h>

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_ICMPV6_ 58

/*
 * Per-node settings, written into .rodata by the loader before the
 * object is loaded (the verifier then prunes the branches not taken).
 */
const volatile __u32 cfg_egress_mode = FLOWSDN_EGRESS_FIB;
/* 1: same-node delivery with bpf_redirect_peer() (straight into the
 * peer's netns ingress); 0: bpf_redirect() to the peer's host veth egress. */
const volatile __u32 cfg_redirect_peer = 1;
/* skb->mark that from_container puts on a frame it redirects to a host
 * veth's egress (cfg_redirect_peer == 0) so that to_container does not
 * count and police it a second time; to_container clears it. */
const volatile __u32 cfg_delivered_mark = 0x0f5d0001;

/* ------------------------------------------------------------ maps */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FLOWSDN_MAX_ENDPOINT_ADDRS);
	__type(key, struct flowsdn_endpoint_key);
	__type(value, struct flowsdn_endpoint_info);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_ep SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FLOWSDN_MAX_IPCACHE);
	__type(key, struct flowsdn_ipcache_key);
	__type(value, struct flowsdn_ipcache_value);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_ipcache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FLOWSDN_MAX_POLICY);
	__type(key, struct flowsdn_policy_key);
	__type(value, struct flowsdn_policy_value);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_policy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, FLOWSDN_MAX_ENDPOINTS);
	__type(key, __u32);
	__type(value, struct flowsdn_endpoint_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_epstat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FLOWSDN_DROP_MAX_);
	__type(key, __u32);
	__type(value, struct flowsdn_drop_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_drops SEC(".maps");

/* Service maps: part of the contract, written by the agent; the
 * translation programs that read them are not in this object yet. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FLOWSDN_MAX_SERVICES);
	__type(key, struct flowsdn_service_key);
	__type(value, struct flowsdn_service_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_svc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FLOWSDN_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct flowsdn_backend);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_backend SEC(".maps");

/* The Maglev tables (<flowsdn/maps.h>): the inner template's size is a
 * placeholder, BPF_F_INNER_MAP lets each service's table have its own. */
FLOWSDN_STATIC_ASSERT(sizeof(struct flowsdn_maglev_value) == sizeof(__u32), "a Maglev slot is one __u32");
struct flowsdn_maglev_table {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	/* struct flowsdn_maglev_value; named as __u32 because clang emits
	 * only a forward declaration for a struct seen through this nested
	 * definition, and libbpf needs the value size. */
	__type(value, __u32);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, FLOWSDN_MAX_MAGLEV_TABLES);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct flowsdn_maglev_table); /* last: a flexible array */
} flowsdn_maglev SEC(".maps");

/* ------------------------------------------------------------ packets */

/* What the programs need of a parsed IPv4/IPv6 packet. */
struct pkt {
	__u8 family;      /* AF_INET or AF_INET6 */
	__u8 protocol;    /* L4 protocol (IPv6: the first next header) */
	__be16 dport;     /* network order; ICMP type << 8; 0 when unknown */
	__be32 saddr[4];
	__be32 daddr[4];
	__u32 l3_off;     /* offset of the IP header */
	__u32 len;        /* skb->len */
	__be16 sport;     /* TCP/UDP/SCTP source port; ICMP echo: the identifier; else 0 */
	__u8 tcp_flags;   /* TCP: the flags byte (PKT_TCP_*); else 0 */
	__u8 icmp;        /* PKT_ICMP_*: the kind of ICMP/ICMPv6 message */
	__u8 frag;        /* PKT_FRAG_*: fragment position */
	__be32 frag_id;   /* fragment identification (IPv4: the 16-bit id) */
	/* An ICMP error's embedded packet (PKT_ICMP_ERROR): its tuple as it
	 * was sent (ports as in struct flowsdn_ct_key). */
	__u8 inner_protocol;
	__be16 inner_sport;
	__be16 inner_dport;
	__be32 inner_saddr[4];
	__be32 inner_daddr[4];
};

#define PKT_TCP_FIN 0x01
#define PKT_TCP_SYN 0x02
#define PKT_TCP_RST 0x04
#define PKT_TCP_ACK 0x10

#define PKT_ICMP_NONE 0       /* not ICMP */
#define PKT_ICMP_ECHO_REQUEST 1
#define PKT_ICMP_ECHO_REPLY 2
#define PKT_ICMP_ERROR 3      /* unreachable, time exceeded, parameter problem, too big */
#define PKT_ICMP_OTHER 4      /* anything else (never tracked) */

#define PKT_FRAG_NONE 0
#define PKT_FRAG_FIRST 1      /* first fragment of a fragmented datagram (has the L4 header) */
#define PKT_FRAG_LATER 2      /* non-first fragment: no L4 header */
#define PKT_FRAG_LATER_KNOWN 3 /* non-first fragment, ports taken from its first fragment (lib/frag.h) */

static __always_inline void ep_key_make(struct flowsdn_endpoint_key *k, __u8 family, const __be32 *addr)
{
	k->addr[0] = addr[0];
	k->addr[1] = addr[1];
	k->addr[2] = addr[2];
	k->addr[3] = addr[3];
	k->family = family;
	k->pad0[0] = 0;
	k->pad0[1] = 0;
	k->pad0[2] = 0;
}

static __always_inline struct flowsdn_endpoint_info *ep_lookup(__u8 family, const __be32 *addr)
{
	struct flowsdn_endpoint_key k;

	ep_key_make(&k, family, addr);
	return bpf_map_lookup_elem(&flowsdn_ep, &k);
}

#endif
