/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The endpoint programs on crafted packets (BPF_PROG_TEST_RUN, root):
 * verdicts, rewritten bytes (MACs, TTL and its checksum) and counters, for
 * local delivery, anti-spoofing, policy (deny, port ranges, default deny,
 * identity wildcard), neighbour discovery, malformed packets and TTL.
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
#include <sys/mount.h>
#include <bpf/bpf.h>
#include <flowsdn/datapath.h>
#include <flowsdn/maps.h>

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
	char path[128];

	node_enter();
	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-bpftest-XXXXXX");
	cr_assert(mkdtemp(pin_dir));
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir, .egress_mode = mode);
	int r = flowsdn_datapath_open(&o, &dp);

	cr_assert(r == 0, "load: %s", flowsdn_strerror(r));
	maps = flowsdn_datapath_maps(dp);
	snprintf(path, sizeof(path), "%s/prog_from_container", pin_dir);
	prog_from = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/prog_to_container", pin_dir);
	prog_to = bpf_obj_get(path);
	cr_assert(prog_from >= 0 && prog_to >= 0, "pinned programs");
	publish(&ep_a, 1, 5001, LO, mac_a, host_a, "10.0.0.1", "fd00::1", 0);
	publish(&ep_b, 2, 5002, FAR_IFINDEX, mac_b, host_b, "10.0.0.2", "fd00::2", 0);
}

static void setup_fib(void) { load(FLOWSDN_EGRESS_FIB); }
static void setup_stack(void) { load(FLOWSDN_EGRESS_STACK); }

static void teardown(void)
{
	flowsdn_datapath_free(dp);
	dp = NULL;
	if (pin_dir[0]) {
		umount2(pin_dir, MNT_DETACH);
		rmdir(pin_dir);
	}
}

static uint16_t csum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* b sits 2 bytes past an 8-byte boundary, so that the IP header after the
 * 14-byte Ethernet header is 4-byte aligned, as in an skb. */
struct frame {
	uint8_t pad[2];
	uint8_t b[256];
	size_t len;
} __attribute__((aligned(8)));

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
	struct __sk_buff ctx = { .ifindex = (__u32)ifindex };
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = (__u32)f->len, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);
	int r = bpf_prog_test_run_opts(prog, &o);

	cr_assert(r == 0, "BPF_PROG_TEST_RUN: %s", strerror(-r));
	cr_assert(o.data_size_out == f->len, "output length %u, input %zu", o.data_size_out, f->len);
	memcpy(f->b, out, f->len);
	return (int)o.retval;
}

static uint64_t drops(unsigned int reason)
{
	struct flowsdn_drop_counters d;

	ASSERT_OK(flowsdn_maps_drop_counters(maps, reason, &d), "drop counters");
	return d.packets;
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

SERIAL_TEST_MAIN()
