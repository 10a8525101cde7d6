/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The endpoint programs on crafted packets (BPF_PROG_TEST_RUN, root):
 * verdicts, rewritten bytes (MACs, TTL and its checksum) and counters, for
 * local delivery, anti-spoofing, policy (deny, port ranges, default deny,
 * identity wildcard), neighbour discovery, malformed packets, TTL, and
 * connection tracking (replies under default deny, TCP states, UDP and
 * ICMP echo, related ICMP errors, garbage collection, flush, table size).
 * The programs are the embedded ones, loaded by flowsdn_datapath_open()
 * into a private bpffs; maps are written through the public API.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <time.h>
#include <sys/mount.h>
#include <bpf/bpf.h>
#include <flowsdn/datapath.h>
#include <flowsdn/maps.h>

#include "bpf-test.h"
#include "netns-helpers.h"

#define LO 1          /* the sender's host veth: loopback will do for test runs */
#define FAR_IFINDEX 77 /* the receiver's (never used: test runs do not redirect) */

static char pin_dir[64];
static struct flowsdn_datapath *dp;
static struct flowsdn_maps *maps;
static int prog_from, prog_to;

static const uint8_t mac_a[6] = { 2, 0, 0, 0, 0, 0xa }, host_a[6] = { 2, 0, 0, 0, 1, 0xa };
static const uint8_t mac_b[6] = { 2, 0, 0, 0, 0, 0xb }, host_b[6] = { 2, 0, 0, 0, 1, 0xb };

static struct flowsdn_endpoint ep_a, ep_b;

static void publish(struct flowsdn_endpoint *e, uint32_t id, uint32_t identity, int ifindex, const uint8_t *mac,
		    const uint8_t *host, const char *a4, const char *a6, uint32_t flags)
{
	memset(e, 0, sizeof(*e));
	e->id = id;
	e->identity = identity;
	e->host_ifindex = ifindex;
	e->flags = flags;
	memcpy(e->mac, mac, 6);
	memcpy(e->host_mac, host, 6);
	ASSERT_OK(flowsdn_addr_parse(a4, strlen(a4), &e->addrs[0]), a4);
	ASSERT_OK(flowsdn_addr_parse(a6, strlen(a6), &e->addrs[1]), a6);
	e->n_addrs = 2;
	ASSERT_OK(flowsdn_maps_endpoint_publish(maps, e), "publish");
}

static void load(enum flowsdn_egress_mode mode)
{
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .egress_mode = mode);

	node_enter();
	dp = dp_open(pin_dir, sizeof(pin_dir), "bpftest", &o, &maps);
	prog_from = dp_pinned(pin_dir, "prog_from_container");
	prog_to = dp_pinned(pin_dir, "prog_to_container");
	publish(&ep_a, 1, 5001, LO, mac_a, host_a, "10.0.0.1", "fd00::1", 0);
	publish(&ep_b, 2, 5002, FAR_IFINDEX, mac_b, host_b, "10.0.0.2", "fd00::2", 0);
}

static void setup_fib(void) { load(FLOWSDN_EGRESS_FIB); }
static void setup_stack(void) { load(FLOWSDN_EGRESS_STACK); }

static void teardown(void)
{
	dp_close(&dp, pin_dir);
}

/* Ethernet (to the sender's gateway MAC) + IPv4 + TCP/UDP/ICMP header. */
static struct frame ip4(const char *src, const char *dst, uint8_t proto, uint16_t dport, uint8_t ttl)
{
	struct frame f = { .len = sizeof(struct ethhdr) + sizeof(struct iphdr) + 20 };
	struct ethhdr *eth = (void *)f.b;
	struct iphdr *ip = (void *)(eth + 1);
	uint8_t *l4 = (uint8_t *)(ip + 1);

	memcpy(eth->h_dest, host_a, 6);
	memcpy(eth->h_source, mac_a, 6);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = ttl;
	ip->protocol = proto;
	ip->tot_len = htons((uint16_t)(f.len - sizeof(*eth)));
	inet_pton(AF_INET, src, &ip->saddr);
	inet_pton(AF_INET, dst, &ip->daddr);
	ip->check = htons(csum(ip, sizeof(*ip)));
	if (proto == IPPROTO_ICMP) {
		l4[0] = 8; /* echo request */
	} else {
		l4[0] = 0x9c;
		l4[1] = 0x40; /* sport 40000 */
		l4[2] = (uint8_t)(dport >> 8);
		l4[3] = (uint8_t)dport;
	}
	return f;
}

static struct frame ip6(const char *src, const char *dst, uint8_t proto, uint16_t dport, uint8_t hops)
{
	struct frame f = { .len = sizeof(struct ethhdr) + sizeof(struct ipv6hdr) + 20 };
	struct ethhdr *eth = (void *)f.b;
	struct ipv6hdr *ip = (void *)(eth + 1);
	uint8_t *l4 = (uint8_t *)(ip + 1);

	memcpy(eth->h_dest, host_a, 6);
	memcpy(eth->h_source, mac_a, 6);
	eth->h_proto = htons(ETH_P_IPV6);
	ip->version = 6;
	ip->payload_len = htons(20);
	ip->nexthdr = proto;
	ip->hop_limit = hops;
	inet_pton(AF_INET6, src, &ip->saddr);
	inet_pton(AF_INET6, dst, &ip->daddr);
	if (proto == IPPROTO_ICMPV6) {
		l4[0] = (uint8_t)dport; /* the ICMPv6 type */
	} else {
		l4[2] = (uint8_t)(dport >> 8);
		l4[3] = (uint8_t)dport;
	}
	return f;
}

/* Runs @prog on @f as received on @ifindex; returns the verdict, @f is
 * replaced by the output bytes. */
static int run(int prog, struct frame *f, int ifindex)
{
	return run_on(prog, f, ifindex);
}

static uint64_t drops(unsigned int reason)
{
	return dp_drops(maps, reason);
}

static struct flowsdn_endpoint_counters counters(uint32_t id)
{
	struct flowsdn_endpoint_counters c;

	ASSERT_OK(flowsdn_maps_endpoint_counters(maps, id, &c), "endpoint counters");
	return c;
}

static void deny(uint32_t ep, enum flowsdn_direction dir, uint32_t identity, uint8_t proto, uint16_t first,
		 uint16_t last, uint32_t flags)
{
	uint16_t ports[32];
	uint8_t bits[32];
	int n = proto ? flowsdn_policy_port_blocks(first, last, ports, bits, 32) : 1;
	struct flowsdn_policy_key k;

	cr_assert(n > 0);
	for (int i = 0; i < n; i++) {
		ASSERT_OK(flowsdn_policy_key_make(ep, dir, identity, proto, proto ? ports[i] : 0, proto ? bits[i] : 0, &k),
			  "key");
		ASSERT_OK(flowsdn_maps_policy_update(maps, &k, flags, 99), "policy entry");
	}
}

Test(lxc, local_delivery_rewrites_and_redirects, .init = setup_fib, .fini = teardown)
{
	struct frame f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 80, 64);
	struct ethhdr *eth = (void *)f.b;
	struct iphdr *ip = (void *)(eth + 1);

	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "redirected to the peer");
	cr_assert(memcmp(eth->h_dest, mac_b, 6) == 0, "destination MAC = B's");
	cr_assert(memcmp(eth->h_source, host_b, 6) == 0, "source MAC = B's gateway");
	cr_assert(ip->ttl == 63, "TTL decremented (%u)", ip->ttl);
	cr_assert(csum(ip, sizeof(*ip)) == 0, "IPv4 checksum still valid");

	struct frame g = ip6("fd00::1", "fd00::2", IPPROTO_UDP, 53, 2);
	struct ipv6hdr *ip6h = (void *)(g.b + sizeof(struct ethhdr));

	cr_assert(run(prog_from, &g, LO) == TC_ACT_REDIRECT, "IPv6 redirected");
	cr_assert(ip6h->hop_limit == 1, "hop limit decremented");
	cr_assert(memcmp(g.b, mac_b, 6) == 0, "IPv6: destination MAC = B's");

	struct flowsdn_endpoint_counters a = counters(1), b = counters(2);

	cr_assert(a.tx_packets == 2 && a.tx_bytes == f.len + g.len, "A tx %llu/%llu", (unsigned long long)a.tx_packets,
		  (unsigned long long)a.tx_bytes);
	cr_assert(b.rx_packets == 2 && b.allow_ingress == 2 && a.allow_egress == 2, "B rx and verdicts");
}

Test(lxc, spoofed_and_malformed_dropped, .init = setup_fib, .fini = teardown)
{
	struct frame f = ip4("10.0.0.9", "10.0.0.2", IPPROTO_TCP, 80, 64);

	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "unknown source");
	cr_assert(drops(FLOWSDN_DROP_SPOOFED_SOURCE) == 1);
	/* B's address sent from A's interface. */
	f = ip4("10.0.0.2", "10.0.0.1", IPPROTO_TCP, 80, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "another endpoint's source");
	cr_assert(drops(FLOWSDN_DROP_SPOOFED_SOURCE) == 2);

	/* IPv4 header claiming ihl 4; a TCP header cut short. */
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 80, 64);
	f.b[sizeof(struct ethhdr)] = 0x44;
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "bad ihl");
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 80, 64);
	f.len = sizeof(struct ethhdr) + sizeof(struct iphdr) + 2;
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "truncated TCP");
	cr_assert(drops(FLOWSDN_DROP_MALFORMED) == 2);

	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_UDP, 53, 1);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "TTL 1 cannot be forwarded");
	cr_assert(drops(FLOWSDN_DROP_TTL_EXCEEDED) == 1);
}

Test(lxc, arp_and_neighbour_discovery_go_to_the_stack, .init = setup_fib, .fini = teardown)
{
	struct frame f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 80, 64);

	((struct ethhdr *)f.b)->h_proto = htons(ETH_P_ARP);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_OK, "ARP");
	f = ip6("fd00::1", "fd00::2", IPPROTO_ICMPV6, 135, 255); /* neighbour solicitation */
	cr_assert(run(prog_from, &f, LO) == TC_ACT_OK, "NS");
	f = ip6("fe80::1:2", "fe80::1", IPPROTO_UDP, 53, 255);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_OK, "link-local");
	cr_assert(counters(1).tx_packets == 0, "not counted as endpoint traffic");
}

Test(lxc, policy_deny_port_range_and_identity, .init = setup_fib, .fini = teardown)
{
	struct frame f;

	/* B ingress: deny TCP 8000-8099 from A's identity. */
	deny(2, FLOWSDN_DIR_INGRESS, 5001, IPPROTO_TCP, 8000, 8099, FLOWSDN_POLICY_F_DENY);
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 8050, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "8050 denied");
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 8000, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "8000 denied");
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 8100, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "8100 allowed");
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_UDP, 8050, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "UDP 8050 allowed");
	cr_assert(drops(FLOWSDN_DROP_POLICY_DENY) == 2);
	cr_assert(counters(2).deny_ingress == 2 && counters(2).drop_packets == 2, "B's deny counters");
	cr_assert(counters(1).drop_packets == 2, "the sender sees its drops");

	/* A egress: deny all UDP to any peer. */
	deny(1, FLOWSDN_DIR_EGRESS, FLOWSDN_IDENTITY_ANY, IPPROTO_UDP, 1, 65535, FLOWSDN_POLICY_F_DENY);
	f = ip6("fd00::1", "fd00::2", IPPROTO_UDP, 53, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "UDP egress denied");
	f = ip6("fd00::1", "fd00::2", IPPROTO_TCP, 53, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "TCP egress allowed");
	cr_assert(counters(1).deny_egress == 1);
}

Test(lxc, default_deny_and_deny_wins, .init = setup_fib, .fini = teardown)
{
	struct frame f;

	/* B enforces ingress; A's identity may send anything (L3 entry). */
	publish(&ep_b, 2, 5002, FAR_IFINDEX, mac_b, host_b, "10.0.0.2", "fd00::2", FLOWSDN_EP_F_ENFORCE_INGRESS);
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_ICMP, 0, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "no entry: default deny");
	cr_assert(drops(FLOWSDN_DROP_POLICY_DEFAULT) == 1);
	deny(2, FLOWSDN_DIR_INGRESS, 5001, 0, 0, 0, 0); /* allow L3 */
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_ICMP, 0, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "L3 allow");
	/* A wildcard deny on TCP 22 beats the identity's L3 allow. */
	deny(2, FLOWSDN_DIR_INGRESS, FLOWSDN_IDENTITY_ANY, IPPROTO_TCP, 22, 22, FLOWSDN_POLICY_F_DENY);
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 22, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "deny wins");
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 23, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "port 23 allowed");
	cr_assert(drops(FLOWSDN_DROP_POLICY_DENY) == 1);
}

Test(lxc, to_container_polices_stack_traffic, .init = setup_fib, .fini = teardown)
{
	struct frame f;
	struct flowsdn_prefix world;

	/* Endpoint C behind loopback receives from the host stack. */
	struct flowsdn_endpoint ep_c;

	publish(&ep_c, 3, 5003, LO, mac_b, host_b, "10.0.0.3", "fd00::3", 0);
	/* A CIDR identity for 192.0.2.0/24, denied on C's ingress. */
	ASSERT_OK(flowsdn_prefix_parse("192.0.2.0/24", 12, NULL, &world), "prefix");
	ASSERT_OK(flowsdn_maps_ipcache_update(maps, &world, FLOWSDN_IDENTITY_LOCAL_BASE + 1), "ipcache");
	deny(3, FLOWSDN_DIR_INGRESS, FLOWSDN_IDENTITY_LOCAL_BASE + 1, 0, 0, 0, FLOWSDN_POLICY_F_DENY);
	f = ip4("192.0.2.7", "10.0.0.3", IPPROTO_TCP, 80, 64);
	cr_assert(run(prog_to, &f, LO) == TC_ACT_SHOT, "CIDR identity denied");
	f = ip4("198.51.100.7", "10.0.0.3", IPPROTO_TCP, 80, 64);
	cr_assert(run(prog_to, &f, LO) == TC_ACT_OK, "world allowed");
	cr_assert(((struct iphdr *)(f.b + sizeof(struct ethhdr)))->ttl == 64, "the stack's frame is not rewritten");
	struct flowsdn_endpoint_counters c = counters(3);

	cr_assert(c.rx_packets == 1 && c.deny_ingress == 1 && c.allow_ingress == 1, "C counters");
	/* Not C's frame (another endpoint's address on this interface): untouched. */
	f = ip4("198.51.100.7", "10.0.0.2", IPPROTO_TCP, 80, 64);
	cr_assert(run(prog_to, &f, LO) == TC_ACT_OK);
	cr_assert(counters(2).rx_packets == 0);
}

Test(lxc, non_local_destination_uses_the_fib, .init = setup_fib, .fini = teardown)
{
	/* No route in this private netns: the FIB does not forward, the
	 * stack gets the packet (and will answer with an ICMP error). */
	struct frame f = ip4("10.0.0.1", "203.0.113.9", IPPROTO_TCP, 443, 64);

	cr_assert(run(prog_from, &f, LO) == TC_ACT_OK);
	cr_assert(counters(1).tx_packets == 1 && counters(1).drop_packets == 0);
}

Test(lxc, stack_mode_hands_everything_to_the_stack, .init = setup_stack, .fini = teardown)
{
	struct frame f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 80, 64);

	cr_assert(run(prog_from, &f, LO) == TC_ACT_OK, "local destination: to the stack");
	cr_assert(((struct iphdr *)(f.b + sizeof(struct ethhdr)))->ttl == 64, "the stack decrements, not BPF");
	deny(1, FLOWSDN_DIR_EGRESS, 5002, IPPROTO_TCP, 80, 80, FLOWSDN_POLICY_F_DENY);
	f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 80, 64);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "egress policy still applies");
}

Test(lxc, publish_refuses_taken_addresses, .init = setup_fib, .fini = teardown)
{
	struct flowsdn_endpoint c = ep_b;
	struct flowsdn_endpoint_info info;

	c.id = 9; /* B's addresses under another id */
	ASSERT_ERR(flowsdn_maps_endpoint_publish(maps, &c), -EEXIST, "taken address");
	ASSERT_OK(flowsdn_maps_endpoint_lookup(maps, &ep_b.addrs[0], &info), "lookup");
	cr_assert(info.ep_id == 2, "B's entry untouched");
	/* Removing under the wrong id leaves B alone; under its own, idempotent. */
	ASSERT_OK(flowsdn_maps_endpoint_remove(maps, &c), "remove other id");
	ASSERT_OK(flowsdn_maps_endpoint_lookup(maps, &ep_b.addrs[1], &info), "B still there");
	ASSERT_OK(flowsdn_maps_endpoint_remove(maps, &ep_b), "remove");
	ASSERT_OK(flowsdn_maps_endpoint_remove(maps, &ep_b), "remove again");
	ASSERT_ERR(flowsdn_maps_endpoint_lookup(maps, &ep_b.addrs[0], &info), -ENOENT, "gone");
	ASSERT_ERR(flowsdn_maps_endpoint_counters(maps, 2, &(struct flowsdn_endpoint_counters){ 0 }), -ENOENT,
		   "counters gone");
}

/* A pin directory holding a map of another layout is refused, not reused;
 * a directory without a datapath is reported as such. */
Test(lxc, incompatible_pins_are_refused, .init = node_enter)
{
	struct flowsdn_datapath *d = NULL;
	struct flowsdn_maps *m = NULL;
	char dir[] = "/tmp/flowsdn-layout-XXXXXX", path[128];
	int fd;

	cr_assert(mkdtemp(dir));
	cr_assert(mount("bpffs", dir, "bpf", 0, NULL) == 0, "mount bpffs: %s", strerror(errno));
	ASSERT_ERR(flowsdn_maps_open(dir, &m), -FLOWSDN_E_BPF_NOT_LOADED, "empty directory");
	/* flowsdn_ep with a 16-byte value (the contract says 32). */
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "flowsdn_ep", sizeof(struct flowsdn_endpoint_key), 16, 16, NULL);
	cr_assert(fd >= 0, "map: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/flowsdn_ep", dir);
	cr_assert(bpf_obj_pin(fd, path) == 0);
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = dir, .no_mount = true);
	ASSERT_ERR(flowsdn_datapath_open(&o, &d), -FLOWSDN_E_BPF_MAP_LAYOUT, "old layout");
	cr_assert(d == NULL);
	cr_assert(access(path, F_OK) == 0, "the foreign pin is left alone");
	/* Without the mount the directory is refused when mounting is off. */
	cr_assert(umount2(dir, MNT_DETACH) == 0);
	ASSERT_ERR(flowsdn_datapath_open(&o, &d), -FLOWSDN_E_BPF_NO_BPFFS, "not bpffs");
	close(fd);
}

/* ------------------------------------------------------------ conntrack */

#define L4(f) ((f)->b + sizeof(struct ethhdr) + sizeof(struct iphdr))

/* A TCP/UDP frame with both ports (and TCP @flags). */
static struct frame l4_4(const char *src, const char *dst, uint8_t proto, uint16_t sport, uint16_t dport, uint8_t flags)
{
	struct frame f = ip4(src, dst, proto, dport, 64);

	L4(&f)[0] = (uint8_t)(sport >> 8);
	L4(&f)[1] = (uint8_t)sport;
	if (proto == IPPROTO_TCP)
		L4(&f)[13] = flags;
	return f;
}

static struct frame echo4(const char *src, const char *dst, uint8_t type, uint16_t id)
{
	struct frame f = ip4(src, dst, IPPROTO_ICMP, 0, 64);

	L4(&f)[0] = type;
	L4(&f)[4] = (uint8_t)(id >> 8);
	L4(&f)[5] = (uint8_t)id;
	return f;
}

/* An ICMP destination unreachable from @src to @dst about the UDP
 * datagram @isrc:@isport -> @idst:@idport. */
static struct frame unreach4(const char *src, const char *dst, const char *isrc, uint16_t isport, const char *idst,
			     uint16_t idport)
{
	struct frame f = ip4(src, dst, IPPROTO_ICMP, 0, 64);
	struct iphdr *ip = (void *)(f.b + sizeof(struct ethhdr));
	uint8_t *icmp = L4(&f);
	struct iphdr *in = (void *)(icmp + 8);
	uint8_t *iu = (uint8_t *)(in + 1);

	f.len = sizeof(struct ethhdr) + sizeof(*ip) + 8 + sizeof(*in) + 8;
	memset(icmp, 0, 8 + sizeof(*in) + 8);
	icmp[0] = 3;
	icmp[1] = 3; /* port unreachable */
	in->version = 4;
	in->ihl = 5;
	in->ttl = 64;
	in->protocol = IPPROTO_UDP;
	in->tot_len = htons(28);
	inet_pton(AF_INET, isrc, &in->saddr);
	inet_pton(AF_INET, idst, &in->daddr);
	iu[0] = (uint8_t)(isport >> 8);
	iu[1] = (uint8_t)isport;
	iu[2] = (uint8_t)(idport >> 8);
	iu[3] = (uint8_t)idport;
	ip->tot_len = htons((uint16_t)(f.len - sizeof(struct ethhdr)));
	ip->check = 0;
	ip->check = htons(csum(ip, sizeof(*ip)));
	return f;
}

static struct flowsdn_ct_key ct_key(const char *src, uint16_t sport, const char *dst, uint16_t dport, uint8_t proto)
{
	struct flowsdn_addr s, d;
	struct flowsdn_ct_key k;

	ASSERT_OK(flowsdn_addr_parse(src, strlen(src), &s), src);
	ASSERT_OK(flowsdn_addr_parse(dst, strlen(dst), &d), dst);
	ASSERT_OK(flowsdn_ct_key_make(&s, sport, &d, dport, proto, &k), "ct key");
	return k;
}

static struct flowsdn_ct_entry ct_get(const char *src, uint16_t sport, const char *dst, uint16_t dport, uint8_t proto)
{
	struct flowsdn_ct_key k = ct_key(src, sport, dst, dport, proto);
	struct flowsdn_ct_entry e;

	ASSERT_OK(flowsdn_maps_ct_lookup(maps, &k, &e), "conntrack entry");
	return e;
}

static bool ct_has(const char *src, uint16_t sport, const char *dst, uint16_t dport, uint8_t proto)
{
	struct flowsdn_ct_key k = ct_key(src, sport, dst, dport, proto);
	struct flowsdn_ct_entry e;

	return flowsdn_maps_ct_lookup(maps, &k, &e) == 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define SEC_NS 1000000000ull
#define SYN 0x02
#define ACK 0x10
#define RST 0x04
#define FIN 0x01

/* A (10.0.0.1) under default-deny ingress, C (10.0.0.3) open, both behind
 * loopback so that from_container accepts either as the sender. */
static struct flowsdn_endpoint ep_c;

static void setup_ct(void)
{
	load(FLOWSDN_EGRESS_FIB);
	publish(&ep_a, 1, 5001, LO, mac_a, host_a, "10.0.0.1", "fd00::1", FLOWSDN_EP_F_ENFORCE_INGRESS);
	publish(&ep_c, 3, 5003, LO, mac_b, host_b, "10.0.0.3", "fd00::3", 0);
}

Test(conntrack, tcp_replies_pass_default_deny_and_states_follow, .init = setup_ct, .fini = teardown)
{
	struct frame f;
	struct flowsdn_ct_entry e;
	struct flowsdn_ct_stats st;
	uint64_t t0 = now_ns();

	/* C cannot open a connection to A... */
	f = l4_4("10.0.0.3", "10.0.0.1", IPPROTO_TCP, 41000, 80, SYN);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "new connection to A: default deny");
	cr_assert(!ct_has("10.0.0.3", 41000, "10.0.0.1", 80, IPPROTO_TCP), "a denied connection is not tracked");
	/* ...but A's own connection to C gets its replies. */
	f = l4_4("10.0.0.1", "10.0.0.3", IPPROTO_TCP, 40000, 80, SYN);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "A's SYN");
	e = ct_get("10.0.0.1", 40000, "10.0.0.3", 80, IPPROTO_TCP);
	cr_assert(e.tcp_state == FLOWSDN_CT_TCP_SYN && e.packets[0] == 1 && e.ep_id == 1, "state %#x packets %llu",
		  e.tcp_state, (unsigned long long)e.packets[0]);
	cr_assert(e.expires > t0 + 59 * SEC_NS && e.expires <= now_ns() + 60 * SEC_NS, "SYN timeout 60 s");
	f = l4_4("10.0.0.3", "10.0.0.1", IPPROTO_TCP, 80, 40000, SYN | ACK);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "C's SYN-ACK reaches A under default deny");
	f = l4_4("10.0.0.1", "10.0.0.3", IPPROTO_TCP, 40000, 80, ACK);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "A's ACK");
	e = ct_get("10.0.0.1", 40000, "10.0.0.3", 80, IPPROTO_TCP);
	cr_assert(e.tcp_state == (FLOWSDN_CT_TCP_SYN | FLOWSDN_CT_TCP_SYNACK | FLOWSDN_CT_TCP_ESTABLISHED), "state %#x",
		  e.tcp_state);
	cr_assert(e.packets[0] == 2 && e.packets[1] == 1 && e.bytes[1] == f.len, "counted both ways");
	cr_assert(e.expires > now_ns() + 21000 * SEC_NS, "established: 6 h");
	f = l4_4("10.0.0.3", "10.0.0.1", IPPROTO_TCP, 80, 40000, ACK);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "data from C");
	/* Policy judged the first packets only; the verdict counters count
	 * every packet (A sent 2, received 3, one denied). */
	ASSERT_OK(flowsdn_maps_ct_stats(maps, &st), "stats");
	cr_assert(st.new_flows == 2 && st.established == 1 && st.reply == 2, "new %llu established %llu reply %llu",
		  (unsigned long long)st.new_flows, (unsigned long long)st.established, (unsigned long long)st.reply);
	cr_assert(counters(1).allow_egress == 2 && counters(1).allow_ingress == 2 && counters(1).deny_ingress == 1,
		  "A verdicts: egress %llu ingress %llu", (unsigned long long)counters(1).allow_egress,
		  (unsigned long long)counters(1).allow_ingress);
	/* A RST closes it: 10 s left; a new SYN on the tuple is a new connection. */
	f = l4_4("10.0.0.3", "10.0.0.1", IPPROTO_TCP, 80, 40000, RST);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "RST passes");
	e = ct_get("10.0.0.1", 40000, "10.0.0.3", 80, IPPROTO_TCP);
	cr_assert((e.tcp_state & FLOWSDN_CT_TCP_RST) && e.expires <= now_ns() + 10 * SEC_NS, "closing");
	f = l4_4("10.0.0.1", "10.0.0.3", IPPROTO_TCP, 40000, 80, SYN);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "SYN again");
	e = ct_get("10.0.0.1", 40000, "10.0.0.3", 80, IPPROTO_TCP);
	cr_assert(e.tcp_state == FLOWSDN_CT_TCP_SYN && e.packets[0] == 1 && e.packets[1] == 0, "a fresh entry");
	ASSERT_OK(flowsdn_maps_ct_stats(maps, &st), "stats");
	cr_assert(st.new_flows == 3, "the new connection was judged (%llu new)", (unsigned long long)st.new_flows);
	/* Segments without SYN, ACK or RST are never tracked. */
	f = l4_4("10.0.0.1", "10.0.0.3", IPPROTO_TCP, 40001, 80, 0);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT);
	cr_assert(!ct_has("10.0.0.1", 40001, "10.0.0.3", 80, IPPROTO_TCP), "flagless segment not tracked");
	ASSERT_OK(flowsdn_maps_ct_stats(maps, &st), "stats");
	cr_assert(st.reply == 3 && st.closed == 1 && st.untracked == 1 && st.created == 2, "reply %llu closed %llu "
		  "untracked %llu created %llu", (unsigned long long)st.reply, (unsigned long long)st.closed,
		  (unsigned long long)st.untracked, (unsigned long long)st.created);
}

Test(conntrack, udp_icmp_and_related_errors, .init = setup_ct, .fini = teardown)
{
	struct frame f;
	struct flowsdn_ct_entry e;

	f = l4_4("10.0.0.1", "10.0.0.3", IPPROTO_UDP, 40000, 53, 0);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "A's DNS query");
	e = ct_get("10.0.0.1", 40000, "10.0.0.3", 53, IPPROTO_UDP);
	cr_assert(!(e.flags & FLOWSDN_CT_F_REPLIED) && e.expires <= now_ns() + 60 * SEC_NS, "UDP: 60 s");
	f = l4_4("10.0.0.3", "10.0.0.1", IPPROTO_UDP, 53, 40000, 0);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "the answer reaches A");
	e = ct_get("10.0.0.1", 40000, "10.0.0.3", 53, IPPROTO_UDP);
	cr_assert((e.flags & FLOWSDN_CT_F_REPLIED) && e.expires > now_ns() + 170 * SEC_NS, "replied: 180 s");
	f = l4_4("10.0.0.3", "10.0.0.1", IPPROTO_UDP, 53, 40001, 0);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "a datagram to another port of A is new: denied");

	f = echo4("10.0.0.1", "10.0.0.3", 8, 7);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "echo request");
	e = ct_get("10.0.0.1", 7, "10.0.0.3", 0, IPPROTO_ICMP);
	cr_assert(e.expires <= now_ns() + 30 * SEC_NS, "ICMP: 30 s");
	f = echo4("10.0.0.3", "10.0.0.1", 0, 7);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "its echo reply");
	f = echo4("10.0.0.3", "10.0.0.1", 0, 8);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "an echo reply nobody asked for");
	f = echo4("10.0.0.3", "10.0.0.1", 8, 9);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "C's echo request to A: denied");

	/* C says port unreachable about A's query: related. */
	f = unreach4("10.0.0.3", "10.0.0.1", "10.0.0.1", 40000, "10.0.0.3", 53);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "ICMP error about a tracked flow");
	f = unreach4("10.0.0.3", "10.0.0.1", "10.0.0.1", 40002, "10.0.0.3", 53);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "ICMP error about an unknown flow");
	struct flowsdn_ct_stats st;

	ASSERT_OK(flowsdn_maps_ct_stats(maps, &st), "stats");
	cr_assert(st.related == 1, "related %llu", (unsigned long long)st.related);
}

Test(conntrack, stack_traffic_and_world_replies, .init = setup_ct, .fini = teardown)
{
	struct frame f;

	f = l4_4("198.51.100.7", "10.0.0.1", IPPROTO_TCP, 443, 40000, SYN | ACK);
	cr_assert(run(prog_to, &f, LO) == TC_ACT_SHOT, "unsolicited from the world: denied");
	f = l4_4("10.0.0.1", "198.51.100.7", IPPROTO_TCP, 40000, 443, SYN);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_OK, "A to the world: the FIB/stack forwards");
	cr_assert(ct_has("10.0.0.1", 40000, "198.51.100.7", 443, IPPROTO_TCP), "tracked by from_container");
	f = l4_4("198.51.100.7", "10.0.0.1", IPPROTO_TCP, 443, 40000, SYN | ACK);
	cr_assert(run(prog_to, &f, LO) == TC_ACT_OK, "the world's reply reaches A");
	/* C accepts from the world; A's reply to that connection passes its
	 * egress even when A denies egress by default. */
	publish(&ep_a, 1, 5001, LO, mac_a, host_a, "10.0.0.1", "fd00::1", FLOWSDN_EP_F_ALL);
	f = l4_4("198.51.100.8", "10.0.0.3", IPPROTO_UDP, 5000, 53, 0);
	cr_assert(run(prog_to, &f, LO) == TC_ACT_OK, "world to C");
	cr_assert(ct_has("198.51.100.8", 5000, "10.0.0.3", 53, IPPROTO_UDP), "tracked by to_container");
	f = l4_4("10.0.0.1", "198.51.100.7", IPPROTO_UDP, 40000, 53, 0);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "A's new egress: default deny");
	f = l4_4("10.0.0.1", "198.51.100.7", IPPROTO_TCP, 40000, 443, ACK);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_OK, "A's tracked connection still flows");
}

Test(conntrack, gc_flush_and_count, .init = setup_ct, .fini = teardown)
{
	struct frame f;
	size_t live = 99, total = 99, removed = 99;
	struct flowsdn_addr c;

	for (uint16_t port = 1000; port < 1010; port++) {
		f = l4_4("10.0.0.1", "10.0.0.3", IPPROTO_UDP, port, 53, 0);
		cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT);
	}
	f = l4_4("10.0.0.1", "198.51.100.7", IPPROTO_UDP, 2000, 53, 0);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_OK);
	ASSERT_OK(flowsdn_maps_ct_count(maps, 0, &live, &total), "count");
	cr_assert(live == 11 && total == 11, "live %zu total %zu", live, total);
	ASSERT_OK(flowsdn_maps_ct_gc(maps, 0, &removed), "gc now");
	cr_assert(removed == 0, "nothing expired yet (%zu)", removed);
	/* Seen from 61 s later, every UDP entry without a reply is dead. */
	ASSERT_OK(flowsdn_maps_ct_count(maps, now_ns() + 61 * SEC_NS, &live, &total), "count later");
	cr_assert(live == 0 && total == 11, "live %zu total %zu", live, total);
	ASSERT_OK(flowsdn_addr_parse("10.0.0.3", 8, &c), "C");
	ASSERT_OK(flowsdn_maps_ct_flush(maps, &c, &removed), "flush C's");
	cr_assert(removed == 10, "C's 10 entries (%zu)", removed);
	ASSERT_OK(flowsdn_maps_ct_count(maps, 0, &live, &total), "count");
	cr_assert(total == 1, "the world entry stays (%zu)", total);
	ASSERT_OK(flowsdn_maps_ct_gc(maps, now_ns() + 61 * SEC_NS, &removed), "gc later");
	cr_assert(removed == 1, "gc removed %zu", removed);
	ASSERT_OK(flowsdn_maps_ct_count(maps, 0, &live, &total), "count");
	cr_assert(total == 0, "empty (%zu)", total);
	/* After the flush, A's reply traffic is a new (denied) connection. */
	f = l4_4("10.0.0.3", "10.0.0.1", IPPROTO_UDP, 53, 1000, 0);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "forgotten connection: judged again");
}

static int count_one(const struct flowsdn_ct_key *k, const struct flowsdn_ct_entry *e, void *userdata)
{
	(void)k;
	(void)e;
	return ++*(int *)userdata == 3 ? 42 : 0;
}

static uint32_t ct_max_entries(const char *dir)
{
	char path[128];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd;

	snprintf(path, sizeof(path), "%s/flowsdn_ct", dir);
	fd = bpf_obj_get(path);
	cr_assert(fd >= 0, "pinned conntrack table");
	cr_assert(bpf_obj_get_info_by_fd(fd, &info, &len) == 0);
	close(fd);
	return info.max_entries;
}

Test(conntrack, table_size_and_timeouts_from_the_loader, .init = node_enter)
{
	struct flowsdn_ct_timeouts t = { .udp = 5 };
	struct flowsdn_datapath *d = NULL;
	struct flowsdn_endpoint e;
	struct flowsdn_ct_entry ce;
	struct frame f;
	int n = 0, r;
	char path[128];

	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-cttest-XXXXXX");
	cr_assert(mkdtemp(pin_dir));
	{
		FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir, .ct_max = 1024, .ct_timeouts = &t);
		r = flowsdn_datapath_open(&o, &dp);
		cr_assert(r == 0, "load: %s", flowsdn_strerror(r));
	}
	cr_assert(ct_max_entries(pin_dir) == 1024, "conntrack-max applied");
	maps = flowsdn_datapath_maps(dp);
	snprintf(path, sizeof(path), "%s/prog_from_container", pin_dir);
	prog_from = bpf_obj_get(path);
	publish(&e, 1, 5001, LO, mac_a, host_a, "10.0.0.1", "fd00::1", 0);
	for (uint16_t port = 1; port <= 4; port++) {
		f = l4_4("10.0.0.1", "198.51.100.7", IPPROTO_UDP, port, 53, 0);
		cr_assert(run(prog_from, &f, LO) == TC_ACT_OK);
	}
	ce = ct_get("10.0.0.1", 1, "198.51.100.7", 53, IPPROTO_UDP);
	cr_assert(ce.expires <= now_ns() + 5 * SEC_NS, "UDP timeout of 5 s applied");
	ASSERT_ERR(flowsdn_maps_ct_iterate(maps, count_one, &n), 42, "the visitor's value stops the walk");
	cr_assert(n == 3, "stopped after 3 (%d)", n);
	/* Same size again: the table and its entries are reused. */
	{
		FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir, .ct_max = 1024);
		r = flowsdn_datapath_open(&o, &d);
		cr_assert(r == 0, "reload: %s", flowsdn_strerror(r));
		size_t total = 0;
		ASSERT_OK(flowsdn_maps_ct_count(flowsdn_datapath_maps(d), 0, NULL, &total), "count");
		cr_assert(total == 4, "entries kept (%zu)", total);
		flowsdn_datapath_free(d);
		d = NULL;
	}
	/* Another size: a new, empty table. */
	{
		FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir, .ct_max = 2048);
		size_t total = 9;

		r = flowsdn_datapath_open(&o, &d);
		cr_assert(r == 0, "resize: %s", flowsdn_strerror(r));
		cr_assert(ct_max_entries(pin_dir) == 2048, "resized");
		ASSERT_OK(flowsdn_maps_ct_count(flowsdn_datapath_maps(d), 0, NULL, &total), "count");
		cr_assert(total == 0, "a new table (%zu)", total);
		snprintf(path, sizeof(path), "%s/flowsdn_ct_resized", pin_dir);
		cr_assert(access(path, F_OK) != 0, "the old table is not left pinned");
		flowsdn_datapath_free(d);
	}
	teardown();
}

/* ------------------------------------------------------------ atomic policy switch */

static struct flowsdn_policy_map_entry allow_tcp(uint32_t identity, uint16_t port, uint32_t rule)
{
	struct flowsdn_policy_map_entry e = { .rule_id = rule };

	ASSERT_OK(flowsdn_policy_key_make(2, FLOWSDN_DIR_INGRESS, identity, IPPROTO_TCP, port, 16, &e.key), "key");
	return e;
}

static int tcp_to_b(uint16_t port)
{
	/* No TCP flags: never tracked, so every frame is judged. */
	struct frame f = ip4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, port, 64);

	return run(prog_from, &f, LO);
}

Test(policy_switch, whole_sets_flip_and_a_failed_switch_keeps_the_old, .init = setup_fib, .fini = teardown)
{
	struct flowsdn_policy_map_entry v1[2] = { allow_tcp(5001, 80, 1), allow_tcp(5001, 8080, 2) };
	struct flowsdn_policy_map_entry v2[2] = { allow_tcp(5001, 81, 3), allow_tcp(5001, 8081, 4) };
	struct flowsdn_policy_map_entry bad[3] = { allow_tcp(5001, 90, 5), allow_tcp(5001, 91, 6), allow_tcp(5001, 92, 7) };
	struct flowsdn_policy_value v;
	struct flowsdn_policy_key k;
	unsigned int gen = 9;
	size_t removed = 9;

	ASSERT_OK(flowsdn_maps_policy_switch(maps, &ep_b, NULL, 0, v1, 2, FLOWSDN_EP_F_ENFORCE_INGRESS), "v1");
	ASSERT_OK(flowsdn_maps_policy_generation(maps, 2, &ep_b.addrs[1], &gen), "generation");
	cr_assert(gen == 1, "v1 went into generation 1 (%u)", gen);
	cr_assert(tcp_to_b(80) == TC_ACT_REDIRECT && tcp_to_b(8080) == TC_ACT_REDIRECT, "v1 allows 80, 8080");
	cr_assert(tcp_to_b(81) == TC_ACT_SHOT, "v1 isolates B");

	ASSERT_OK(flowsdn_maps_policy_switch(maps, &ep_b, v1, 2, v2, 2, FLOWSDN_EP_F_ENFORCE_INGRESS), "v2");
	cr_assert(tcp_to_b(80) == TC_ACT_SHOT && tcp_to_b(81) == TC_ACT_REDIRECT && tcp_to_b(8081) == TC_ACT_REDIRECT,
		  "v2 in force");
	k = v1[0].key;
	k.ep_id = FLOWSDN_POLICY_KEY_ID(2, 1);
	ASSERT_ERR(flowsdn_maps_policy_get(maps, &k, &v), -ENOENT, "v1's entries deleted");
	k = v2[0].key;
	k.ep_id = FLOWSDN_POLICY_KEY_ID(2, 0);
	ASSERT_OK(flowsdn_maps_policy_get(maps, &k, &v), "v2 in generation 0");
	cr_assert(v.rule_id == 3);

	/* The third entry is broken: the switch stops there, undoes the two
	 * it wrote, and v2 stays in force. */
	bad[2].key.prefixlen = FLOWSDN_POLICY_PREFIX_FULL + 1;
	ASSERT_ERR(flowsdn_maps_policy_switch(maps, &ep_b, v2, 2, bad, 3, 0), -EINVAL, "bad set refused");
	ASSERT_OK(flowsdn_maps_policy_generation(maps, 2, &ep_b.addrs[0], &gen), "generation");
	cr_assert(gen == 0, "still generation 0");
	cr_assert(tcp_to_b(81) == TC_ACT_REDIRECT && tcp_to_b(90) == TC_ACT_SHOT && tcp_to_b(80) == TC_ACT_SHOT,
		  "v2 still in force, enforcement kept");
	k = bad[0].key;
	k.ep_id = FLOWSDN_POLICY_KEY_ID(2, 1);
	ASSERT_ERR(flowsdn_maps_policy_get(maps, &k, &v), -ENOENT, "the partial set is gone");

	/* Leftovers no packet can meet (a crash mid-switch, a gone endpoint). */
	ASSERT_OK(flowsdn_maps_policy_update(maps, &k, 0, 8), "stray entry, inactive generation");
	k.ep_id = 99;
	ASSERT_OK(flowsdn_maps_policy_update(maps, &k, 0, 9), "stray entry, no endpoint");
	ASSERT_OK(flowsdn_maps_policy_scrub(maps, &removed), "scrub");
	cr_assert(removed == 2, "scrubbed %zu", removed);
	cr_assert(tcp_to_b(81) == TC_ACT_REDIRECT && tcp_to_b(8081) == TC_ACT_REDIRECT, "v2 untouched by the scrub");
	/* Republishing keeps the generation in force. */
	publish(&ep_b, 2, 5002, FAR_IFINDEX, mac_b, host_b, "10.0.0.2", "fd00::2", FLOWSDN_EP_F_ENFORCE_INGRESS);
	cr_assert(tcp_to_b(81) == TC_ACT_REDIRECT && tcp_to_b(80) == TC_ACT_SHOT, "republished: v2 still in force");
	struct flowsdn_endpoint other = ep_b;

	other.id = 7;
	ASSERT_ERR(flowsdn_maps_policy_switch(maps, &other, NULL, 0, v1, 2, 0), -ENOENT, "addresses of another endpoint");
	other.id = FLOWSDN_POLICY_GEN_BIT | 2;
	ASSERT_ERR(flowsdn_maps_policy_switch(maps, &other, NULL, 0, v1, 2, 0), -EINVAL, "id with the generation bit");
	cr_assert(tcp_to_b(81) == TC_ACT_REDIRECT && tcp_to_b(80) == TC_ACT_SHOT, "refused switches changed nothing");
}

/* ------------------------------------------------------------ fragments, IPv6 extension headers */

/* A fragment of a UDP datagram @id from A to B: the first (UDP header,
 * more fragments) or a later one (offset 1480, no transport header). */
static struct frame frag4(uint16_t dport, uint16_t id, bool first)
{
	struct frame f = l4_4("10.0.0.1", "10.0.0.2", IPPROTO_UDP, 40000, dport, 0);
	struct iphdr *ip = (void *)(f.b + sizeof(struct ethhdr));

	ip->id = htons(id);
	ip->frag_off = htons(first ? 0x2000 : 185);
	if (!first)
		memset(L4(&f), 0xab, 8); /* payload bytes, not ports */
	ip->check = 0;
	ip->check = htons(csum(ip, sizeof(*ip)));
	return f;
}

/* IPv6 A -> B with @ext extension headers (each 8 bytes: its next header
 * and length 0) before a transport header to @dport; @frag_later: the
 * last extension is a fragment header of a later fragment. */
static struct frame ip6_ext(const uint8_t *ext, size_t n_ext, uint8_t proto, uint16_t dport, uint32_t frag_id,
			    bool frag_later)
{
	struct frame f = ip6("fd00::1", "fd00::2", proto, dport, 64);
	struct ipv6hdr *ip = (void *)(f.b + sizeof(struct ethhdr));
	uint8_t *h = (uint8_t *)(ip + 1), l4[20];

	memcpy(l4, h, sizeof(l4));
	ip->nexthdr = n_ext ? ext[0] : proto;
	for (size_t i = 0; i < n_ext; i++) {
		uint8_t *x = h + 8 * i;

		memset(x, 0, 8);
		x[0] = i + 1 < n_ext ? ext[i + 1] : proto;
		if (ext[i] == IPPROTO_FRAGMENT) {
			uint16_t fo = frag_later ? (185 << 3) : 1; /* offset, or M */

			x[2] = (uint8_t)(fo >> 8);
			x[3] = (uint8_t)fo;
			x[4] = (uint8_t)(frag_id >> 24);
			x[5] = (uint8_t)(frag_id >> 16);
			x[6] = (uint8_t)(frag_id >> 8);
			x[7] = (uint8_t)frag_id;
		} else {
			x[2] = 1; /* PadN, 4 bytes */
			x[3] = 4;
		}
	}
	memcpy(h + 8 * n_ext, l4, sizeof(l4));
	if (frag_later)
		memset(h + 8 * n_ext, 0xcd, 8);
	f.len += 8 * n_ext;
	ip->payload_len = htons((uint16_t)(20 + 8 * n_ext));
	return f;
}

static void b_allows_only(uint8_t proto, uint16_t port)
{
	publish(&ep_b, 2, 5002, FAR_IFINDEX, mac_b, host_b, "10.0.0.2", "fd00::2", FLOWSDN_EP_F_ENFORCE_INGRESS);
	deny(2, FLOWSDN_DIR_INGRESS, 5001, proto, port, port, 0);
}

Test(fragments, later_fragments_take_the_first_ones_verdict, .init = setup_fib, .fini = teardown)
{
	struct frame f;

	b_allows_only(IPPROTO_UDP, 53);
	f = frag4(53, 100, true);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "first fragment to UDP 53");
	f = frag4(53, 100, false);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "its later fragment follows it");
	f = frag4(53, 101, false);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "a later fragment whose first was never seen");
	f = frag4(54, 102, true);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "first fragment to UDP 54: denied");
	f = frag4(54, 102, false);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "and so is the rest of that datagram");
}

Test(fragments, ipv6_extension_headers_are_walked, .init = setup_fib, .fini = teardown)
{
	static const uint8_t dst[] = { IPPROTO_DSTOPTS };
	static const uint8_t many[] = { IPPROTO_HOPOPTS, IPPROTO_ROUTING, IPPROTO_DSTOPTS };
	static const uint8_t frag[] = { IPPROTO_DSTOPTS, IPPROTO_FRAGMENT };
	uint8_t too_many[9];
	struct frame f;

	b_allows_only(IPPROTO_TCP, 80);
	f = ip6_ext(dst, 1, IPPROTO_TCP, 80, 0, false);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "TCP 80 behind a destination-options header");
	f = ip6_ext(dst, 1, IPPROTO_TCP, 81, 0, false);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "TCP 81 behind it: denied");
	f = ip6_ext(many, 3, IPPROTO_TCP, 80, 0, false);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "hop-by-hop, routing, destination options");
	f = ip6_ext(frag, 2, IPPROTO_TCP, 80, 7, false);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "first IPv6 fragment to TCP 80");
	f = ip6_ext(frag, 2, IPPROTO_TCP, 80, 7, true);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "its later fragment");
	f = ip6_ext(frag, 2, IPPROTO_TCP, 80, 8, true);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "a later fragment without its first");
	memset(too_many, IPPROTO_DSTOPTS, sizeof(too_many));
	f = ip6_ext(too_many, sizeof(too_many), IPPROTO_TCP, 80, 0, false);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "more than 8 extension headers");
	cr_assert(drops(FLOWSDN_DROP_MALFORMED) == 1, "counted as malformed");
}

/* Kubernetes: a pod cannot block access to itself.  A hairpin (A to its
 * own address through its veth) passes A's default-deny egress and
 * ingress; another endpoint is still denied. */
Test(lxc, a_pod_reaches_itself_under_default_deny, .init = setup_fib, .fini = teardown)
{
	struct frame f;

	publish(&ep_a, 1, 5001, LO, mac_a, host_a, "10.0.0.1", "fd00::1", FLOWSDN_EP_F_ALL);
	f = l4_4("10.0.0.1", "10.0.0.1", IPPROTO_TCP, 40000, 80, SYN);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_REDIRECT, "A to itself");
	f = l4_4("10.0.0.1", "10.0.0.2", IPPROTO_TCP, 40000, 80, SYN);
	cr_assert(run(prog_from, &f, LO) == TC_ACT_SHOT, "A to B: default deny egress");
	cr_assert(counters(1).deny_egress == 1 && counters(1).allow_egress == 1, "verdicts counted");
}

SERIAL_TEST_MAIN()

/* The endpoint's own flag (FLOWSDN_EP_F_SVC_PACKET) and the policy's
 * (FLOWSDN_EP_F_ENFORCE_*) are written apart and never clobber each
 * other. */
Test(lxc, endpoint_flags_are_updated_apart, .init = setup_fib, .fini = teardown)
{
	struct flowsdn_endpoint_info info;

	ASSERT_OK(flowsdn_maps_endpoint_flags_update(maps, &ep_a, FLOWSDN_EP_F_SVC_PACKET, FLOWSDN_EP_F_SVC_PACKET),
		  "set the translation flag");
	ASSERT_OK(flowsdn_maps_policy_switch(maps, &ep_a, NULL, 0, NULL, 0, FLOWSDN_EP_F_ENFORCE_INGRESS), "policy");
	for (size_t i = 0; i < ep_a.n_addrs; i++) {
		ASSERT_OK(flowsdn_maps_endpoint_lookup(maps, &ep_a.addrs[i], &info), "lookup");
		cr_assert_eq(info.flags, FLOWSDN_EP_F_SVC_PACKET | FLOWSDN_EP_F_ENFORCE_INGRESS, "address %zu flags %#x", i,
			     info.flags);
	}
	ASSERT_OK(flowsdn_maps_endpoint_flags_update(maps, &ep_a, FLOWSDN_EP_F_SVC_PACKET, 0), "clear it");
	ASSERT_OK(flowsdn_maps_endpoint_lookup(maps, &ep_a.addrs[0], &info), "lookup");
	cr_assert_eq(info.flags, FLOWSDN_EP_F_ENFORCE_INGRESS, "enforcement kept: %#x", info.flags);
	ASSERT_ERR(flowsdn_maps_endpoint_flags_update(maps, &ep_a, FLOWSDN_EP_F_SVC_PACKET, FLOWSDN_EP_F_ENFORCE_EGRESS),
		   -EINVAL, "flags outside the mask");
	ASSERT_ERR(flowsdn_maps_endpoint_flags_update(maps, &ep_a, 1u << 30, 0), -EINVAL, "unknown bit");
	ep_b.id = 99; /* its addresses are endpoint 2's */
	ASSERT_ERR(flowsdn_maps_endpoint_flags_update(maps, &ep_b, FLOWSDN_EP_F_SVC_PACKET, 0), -ENOENT, "not its");
}
