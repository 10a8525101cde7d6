/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bpf/lib/nat.h on crafted packets (BPF_PROG_TEST_RUN, root), through the
 * harness tests/bpf/nat-test.bpf.c: DNAT and SNAT of IPv4/IPv6 TCP and
 * UDP, the reverse translation of ICMP and ICMPv6 errors quoting a
 * translated packet.  Every checksum of the output (IPv4 header, TCP/UDP
 * with their pseudo header, ICMP, ICMPv6, and those of the quoted packet)
 * is recomputed here from scratch and must be valid: the primitives
 * update incrementally, this test does not.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/mount.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf-test.h"
#include "harness.h"
#include "netns-helpers.h"

#define NAT_OP_DNAT 1
#define NAT_OP_SNAT 2
#define NAT_OP_REV_DNAT_ICMP 3
#define NAT_OP_REV_SNAT_ICMP 4

/* As in nat-test.bpf.c. */
struct nat_req {
	uint32_t op;
	uint16_t port; /* network order */
	uint16_t pad0;
	uint32_t addr[4];
	uint32_t addr2[4];
	int32_t result;
	uint32_t pad1;
};

static char pin_dir[64];
static struct bpf_object *obj;
static int prog_fd, req_fd;

static void setup(void)
{
	node_enter();
	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-nattest-XXXXXX");
	cr_assert(mkdtemp(pin_dir));
	cr_assert(mount("bpffs", pin_dir, "bpf", 0, "mode=0700") == 0, "bpffs: %s", strerror(errno));
	obj = harness_load(pin_dir, "nat_run", "nat_req", &prog_fd, &req_fd);
}

static void teardown(void)
{
	bpf_object__close(obj);
	obj = NULL;
	node_unpin(pin_dir);
}

/* ------------------------------------------------------------ packets */

/* Writes an IP header for @family at @at carrying @l4len bytes of @proto;
 * returns its length.  IPv4 gets its header checksum. */
static size_t iphdr_put(uint8_t *at, int family, const char *src, const char *dst, uint8_t proto, size_t l4len)
{
	if (family == AF_INET) {
		struct iphdr *ip = (void *)at;

		memset(ip, 0, sizeof(*ip));
		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = proto;
		ip->tot_len = htons((uint16_t)(sizeof(*ip) + l4len));
		cr_assert(inet_pton(AF_INET, src, &ip->saddr) == 1 && inet_pton(AF_INET, dst, &ip->daddr) == 1);
		ip->check = htons(fold(sum16(ip, sizeof(*ip), 0)));
		return sizeof(*ip);
	}
	struct ipv6hdr *ip6 = (void *)at;

	memset(ip6, 0, sizeof(*ip6));
	ip6->version = 6;
	ip6->payload_len = htons((uint16_t)l4len);
	ip6->nexthdr = proto;
	ip6->hop_limit = 64;
	cr_assert(inet_pton(AF_INET6, src, &ip6->saddr) == 1 && inet_pton(AF_INET6, dst, &ip6->daddr) == 1);
	return sizeof(*ip6);
}

static const uint8_t *ip_src(const uint8_t *ip) { return ip[0] >> 4 == 4 ? ip + 12 : ip + 8; }
static const uint8_t *ip_dst(const uint8_t *ip) { return ip[0] >> 4 == 4 ? ip + 16 : ip + 24; }
static int ip_family(const uint8_t *ip) { return ip[0] >> 4 == 4 ? AF_INET : AF_INET6; }
static size_t ip_hlen(const uint8_t *ip) { return ip[0] >> 4 == 4 ? (size_t)(ip[0] & 0xf) * 4 : 40; }

/* Writes TCP (20 bytes) or UDP (8) + @payload bytes at @at with ports and
 * the checksum over the pseudo header (UDP: 0 when @udp_nocsum). */
static size_t l4_put(uint8_t *at, int family, const char *src, const char *dst, uint8_t proto, uint16_t sport,
		     uint16_t dport, size_t payload, bool udp_nocsum)
{
	size_t hl = proto == IPPROTO_TCP ? 20 : 8, len = hl + payload;
	uint8_t a[16], b[16];
	uint16_t c;

	memset(at, 0, len);
	at[0] = (uint8_t)(sport >> 8);
	at[1] = (uint8_t)sport;
	at[2] = (uint8_t)(dport >> 8);
	at[3] = (uint8_t)dport;
	for (size_t i = hl; i < len; i++)
		at[i] = (uint8_t)(i * 7 + 3);
	if (proto == IPPROTO_TCP) {
		at[12] = 5 << 4;
		at[13] = 0x02; /* SYN */
	} else {
		at[4] = (uint8_t)(len >> 8);
		at[5] = (uint8_t)len;
	}
	if (udp_nocsum)
		return len;
	cr_assert(inet_pton(family, src, a) == 1 && inet_pton(family, dst, b) == 1);
	c = l4_checksum(family, a, b, proto, at, len);
	if (proto == IPPROTO_UDP && c == 0)
		c = 0xffff;
	at[proto == IPPROTO_TCP ? 16 : 6] = (uint8_t)(c >> 8);
	at[proto == IPPROTO_TCP ? 17 : 7] = (uint8_t)c;
	return len;
}

static void eth_put(struct frame *f, int family)
{
	struct ethhdr *eth = (void *)f->b;

	memset(eth, 0, sizeof(*eth));
	eth->h_dest[0] = 2;
	eth->h_source[0] = 2;
	eth->h_source[5] = 1;
	eth->h_proto = htons(family == AF_INET ? ETH_P_IP : ETH_P_IPV6);
}

/* Ethernet + IP + TCP/UDP with 13 bytes of payload. */
static struct frame packet(int family, uint8_t proto, const char *src, uint16_t sport, const char *dst, uint16_t dport,
			   bool udp_nocsum)
{
	struct frame f;
	uint8_t l4[64];
	size_t l4len, hl;

	eth_put(&f, family);
	l4len = l4_put(l4, family, src, dst, proto, sport, dport, 13, udp_nocsum);
	hl = iphdr_put(f.b + ETH_HLEN, family, src, dst, proto, l4len);
	memcpy(f.b + ETH_HLEN + hl, l4, l4len);
	f.len = ETH_HLEN + hl + l4len;
	return f;
}

/*
 * An ICMP (type 3 code 3) or ICMPv6 (type 1 code 4) port unreachable from
 * @src to @dst quoting the packet @quoted (its IP header on): the whole of
 * it, or for ICMPv4 with @cut only its IP header and 8 bytes of L4 header
 * (RFC 792's minimum).
 */
static struct frame icmp_error(int family, const char *src, const char *dst, const struct frame *quoted, bool cut)
{
	const uint8_t *q = quoted->b + ETH_HLEN;
	size_t qlen = quoted->len - ETH_HLEN, hl, ilen;
	uint8_t proto = family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	uint8_t *icmp;
	struct frame f;
	uint8_t a[16], b[16];
	uint16_t c;

	if (cut)
		qlen = ip_hlen(q) + 8;
	ilen = 8 + qlen;
	eth_put(&f, family);
	hl = iphdr_put(f.b + ETH_HLEN, family, src, dst, proto, ilen);
	icmp = f.b + ETH_HLEN + hl;
	memset(icmp, 0, 8);
	icmp[0] = family == AF_INET ? 3 : 1;
	icmp[1] = family == AF_INET ? 3 : 4;
	memcpy(icmp + 8, q, qlen);
	if (family == AF_INET) {
		c = fold(sum16(icmp, ilen, 0));
	} else {
		cr_assert(inet_pton(family, src, a) == 1 && inet_pton(family, dst, b) == 1);
		c = l4_checksum(family, a, b, proto, icmp, ilen);
	}
	icmp[2] = (uint8_t)(c >> 8);
	icmp[3] = (uint8_t)c;
	f.len = ETH_HLEN + hl + ilen;
	return f;
}

/* ------------------------------------------------------------ checks */

/* Every checksum of the IP packet at @ip (@len bytes) is valid; for an
 * ICMP error, also those of the quoted packet as far as it is quoted. */
static void check_sums(const uint8_t *ip, size_t len, bool quoted)
{
	int family = ip_family(ip);
	size_t hl = ip_hlen(ip), l4len = len - hl;
	uint8_t proto = family == AF_INET ? ip[9] : ip[6];
	const uint8_t *l4 = ip + hl;
	/* A quote may end before its L4 data: its L4 checksum is then not
	 * verifiable here (the callers compare its bytes instead). */
	size_t want = family == AF_INET ? (size_t)(ip[2] << 8 | ip[3]) - hl : (size_t)(ip[4] << 8 | ip[5]);
	bool whole = want == l4len;

	if (family == AF_INET)
		cr_assert(fold(sum16(ip, hl, 0)) == 0, "IPv4 header checksum %02x%02x is wrong%s", ip[10], ip[11],
			  quoted ? " (quoted packet)" : "");
	if (proto == IPPROTO_TCP) {
		if (whole)
			cr_assert(l4_checksum(family, ip_src(ip), ip_dst(ip), proto, l4, l4len) == 0, "TCP checksum %02x%02x%s",
				  l4[16], l4[17], quoted ? " (quoted packet)" : "");
	} else if (proto == IPPROTO_UDP) {
		if (whole && (l4[6] || l4[7]))
			cr_assert(l4_checksum(family, ip_src(ip), ip_dst(ip), proto, l4, l4len) == 0, "UDP checksum %02x%02x%s",
				  l4[6], l4[7], quoted ? " (quoted packet)" : "");
	} else if (proto == IPPROTO_ICMP) {
		cr_assert(fold(sum16(l4, l4len, 0)) == 0, "ICMP checksum %02x%02x", l4[2], l4[3]);
		check_sums(l4 + 8, l4len - 8, true);
	} else if (proto == IPPROTO_ICMPV6) {
		cr_assert(l4_checksum(family, ip_src(ip), ip_dst(ip), proto, l4, l4len) == 0, "ICMPv6 checksum %02x%02x", l4[2],
			  l4[3]);
		check_sums(l4 + 8, l4len - 8, true);
	}
}

static void check_addr(const uint8_t *at, int family, const char *want, const char *what)
{
	uint8_t a[16];
	char got[INET6_ADDRSTRLEN];

	cr_assert(inet_pton(family, want, a) == 1);
	inet_ntop(family, at, got, sizeof(got));
	cr_assert(memcmp(at, a, family == AF_INET ? 4 : 16) == 0, "%s: %s, want %s", what, got, want);
}

static void check_port(const uint8_t *at, uint16_t want, const char *what)
{
	uint16_t got = (uint16_t)(at[0] << 8 | at[1]);

	cr_assert(got == want, "%s: port %u, want %u", what, got, want);
}

/* Runs the harness with @op (@addr:@port, @addr2) on @f; returns the
 * primitive's result (0 = done), @f holds the output. */
static int nat(struct frame *f, uint32_t op, int family, const char *addr, uint16_t port, const char *addr2)
{
	struct nat_req req = { .op = op, .port = htons(port) };
	struct __sk_buff ctx = { .ifindex = 1 };
	uint32_t zero = 0;
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = (__u32)f->len, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);
	int r;

	if (addr)
		cr_assert(inet_pton(family, addr, req.addr) == 1, "%s", addr);
	if (addr2)
		cr_assert(inet_pton(family, addr2, req.addr2) == 1, "%s", addr2);
	ASSERT_OK(bpf_map_update_elem(req_fd, &zero, &req, BPF_ANY), "nat_req");
	r = bpf_prog_test_run_opts(prog_fd, &o);
	cr_assert(r == 0, "BPF_PROG_TEST_RUN: %s", strerror(-r));
	cr_assert(o.data_size_out == f->len, "output length %u, input %zu", o.data_size_out, f->len);
	memcpy(f->b, out, f->len);
	ASSERT_OK(bpf_map_lookup_elem(req_fd, &zero, &req), "nat_req result");
	cr_assert((req.result == 0) == (o.retval == TC_ACT_OK), "verdict %u for result %d", o.retval, req.result);
	return req.result;
}

#define L3(f) ((f)->b + ETH_HLEN)
#define L4(f) (L3(f) + ip_hlen(L3(f)))

/* ------------------------------------------------------------ tests */

static void dnat_case(int family, uint8_t proto, const char *client, const char *front, const char *backend,
		      bool udp_nocsum)
{
	struct frame f = packet(family, proto, client, 40000, front, 80, udp_nocsum);

	check_sums(L3(&f), f.len - ETH_HLEN, false);
	ASSERT_OK(nat(&f, NAT_OP_DNAT, family, backend, 8080, NULL), "dnat");
	check_addr(ip_dst(L3(&f)), family, backend, "destination");
	check_addr(ip_src(L3(&f)), family, client, "source (unchanged)");
	check_port(L4(&f) + 2, 8080, "destination");
	check_port(L4(&f), 40000, "source (unchanged)");
	check_sums(L3(&f), f.len - ETH_HLEN, false);
	if (udp_nocsum)
		cr_assert(L4(&f)[6] == 0 && L4(&f)[7] == 0, "UDP checksum 0 (none) must stay 0");

	/* The reply, reverse-NATed: source back to the frontend. */
	f = packet(family, proto, backend, 8080, client, 40000, udp_nocsum);
	ASSERT_OK(nat(&f, NAT_OP_SNAT, family, front, 80, NULL), "reverse nat");
	check_addr(ip_src(L3(&f)), family, front, "reply source");
	check_port(L4(&f), 80, "reply source");
	check_port(L4(&f) + 2, 40000, "reply destination (unchanged)");
	check_sums(L3(&f), f.len - ETH_HLEN, false);
}

Test(nat, dnat_and_reverse_ipv4_tcp, .init = setup, .fini = teardown)
{
	dnat_case(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.96.0.10", "10.0.0.2", false);
}

Test(nat, dnat_and_reverse_ipv4_udp, .init = setup, .fini = teardown)
{
	dnat_case(AF_INET, IPPROTO_UDP, "10.0.0.1", "10.96.0.10", "10.0.0.2", false);
	dnat_case(AF_INET, IPPROTO_UDP, "192.168.200.7", "10.96.255.254", "172.16.1.250", false);
}

Test(nat, ipv4_udp_without_checksum_keeps_none, .init = setup, .fini = teardown)
{
	dnat_case(AF_INET, IPPROTO_UDP, "10.0.0.1", "10.96.0.10", "10.0.0.2", true);
}

Test(nat, dnat_and_reverse_ipv6_tcp_udp, .init = setup, .fini = teardown)
{
	dnat_case(AF_INET6, IPPROTO_TCP, "fd00::1", "fd00:96::10", "fd00::2", false);
	dnat_case(AF_INET6, IPPROTO_UDP, "fd00::1", "fd00:96::10", "fd00:1234:5678::ffff:2", false);
}

Test(nat, snat_source_address_and_port, .init = setup, .fini = teardown)
{
	struct frame f = packet(AF_INET, IPPROTO_TCP, "203.0.113.7", 51000, "10.0.1.5", 8080, false);

	ASSERT_OK(nat(&f, NAT_OP_SNAT, AF_INET, "192.168.50.1", 33001, NULL), "snat");
	check_addr(ip_src(L3(&f)), AF_INET, "192.168.50.1", "source");
	check_port(L4(&f), 33001, "source");
	check_addr(ip_dst(L3(&f)), AF_INET, "10.0.1.5", "destination (unchanged)");
	check_sums(L3(&f), f.len - ETH_HLEN, false);

	f = packet(AF_INET6, IPPROTO_UDP, "2001:db8::7", 51000, "fd00:1::5", 8080, false);
	ASSERT_OK(nat(&f, NAT_OP_SNAT, AF_INET6, "fd00:50::1", 33002, NULL), "snat v6");
	check_addr(ip_src(L3(&f)), AF_INET6, "fd00:50::1", "source");
	check_port(L4(&f), 33002, "source");
	check_sums(L3(&f), f.len - ETH_HLEN, false);
}

Test(nat, unchanged_rewrite_leaves_the_packet_identical, .init = setup, .fini = teardown)
{
	struct frame f = packet(AF_INET, IPPROTO_TCP, "10.0.0.1", 40000, "10.0.0.2", 80, false), g = f;

	ASSERT_OK(nat(&f, NAT_OP_DNAT, AF_INET, "10.0.0.2", 80, NULL), "same address and port");
	cr_assert(memcmp(f.b, g.b, f.len) == 0, "bytes changed by a no-op rewrite");
}

Test(nat, protocols_without_ports_are_refused, .init = setup, .fini = teardown)
{
	struct frame f = packet(AF_INET, IPPROTO_UDP, "10.0.0.1", 40000, "10.0.0.2", 80, false);

	L3(&f)[9] = 132; /* SCTP: CRC32c, no incremental update */
	cr_assert(nat(&f, NAT_OP_DNAT, AF_INET, "10.0.0.3", 80, NULL) == -2, "SCTP must be NAT_UNSUPPORTED");
	L3(&f)[9] = IPPROTO_ICMP;
	cr_assert(nat(&f, NAT_OP_DNAT, AF_INET, "10.0.0.3", 80, NULL) == -2, "ICMP must be NAT_UNSUPPORTED");
}

/* An error from the backend about the translated packet client ->
 * backend goes back with the frontend in the quote and as outer source. */
static void icmp_rev_dnat_case(int family, uint8_t proto, const char *client, const char *front,
			       const char *backend, bool cut)
{
	struct frame orig = packet(family, proto, client, 40000, backend, 8080, false);
	struct frame f = icmp_error(family, backend, client, &orig, cut), want;
	const uint8_t *in;

	check_sums(L3(&f), f.len - ETH_HLEN, false);
	ASSERT_OK(nat(&f, NAT_OP_REV_DNAT_ICMP, family, front, 80, backend), "reverse nat of the error");
	check_addr(ip_src(L3(&f)), family, front, "outer source (the backend sent it)");
	check_addr(ip_dst(L3(&f)), family, client, "outer destination (unchanged)");
	in = L4(&f) + 8;
	check_addr(ip_dst(in), family, front, "quoted destination");
	check_addr(ip_src(in), family, client, "quoted source (unchanged)");
	check_port(in + ip_hlen(in) + 2, 80, "quoted destination");
	check_port(in + ip_hlen(in), 40000, "quoted source (unchanged)");
	check_sums(L3(&f), f.len - ETH_HLEN, false);
	/* The quote is now byte for byte the packet as the client sent it
	 * (checksums included, also those a cut quote does not let us verify). */
	want = packet(family, proto, client, 40000, front, 80, false);
	cr_assert(memcmp(in, L3(&want), f.len - (size_t)(in - f.b)) == 0, "quoted packet differs from the original");
}

Test(nat, icmp_error_reverse_dnat_ipv4, .init = setup, .fini = teardown)
{
	icmp_rev_dnat_case(AF_INET, IPPROTO_UDP, "10.0.0.1", "10.96.0.10", "10.0.0.2", false);
	icmp_rev_dnat_case(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.96.0.10", "10.0.0.2", false);
	/* Quote cut after 8 bytes of TCP: no TCP checksum to fix. */
	icmp_rev_dnat_case(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.96.0.10", "10.0.0.2", true);
	icmp_rev_dnat_case(AF_INET, IPPROTO_UDP, "10.0.0.1", "10.96.0.10", "10.0.0.2", true);
}

Test(nat, icmp_error_reverse_dnat_ipv6, .init = setup, .fini = teardown)
{
	icmp_rev_dnat_case(AF_INET6, IPPROTO_UDP, "fd00::1", "fd00:96::10", "fd00::2", false);
	icmp_rev_dnat_case(AF_INET6, IPPROTO_TCP, "fd00::1", "fd00:96::10", "fd00::2", false);
}

Test(nat, icmp_error_from_a_router_keeps_its_source, .init = setup, .fini = teardown)
{
	struct frame orig = packet(AF_INET, IPPROTO_UDP, "10.0.0.1", 40000, "10.0.0.2", 8080, false);
	struct frame f = icmp_error(AF_INET, "192.168.9.1", "10.0.0.1", &orig, false);

	ASSERT_OK(nat(&f, NAT_OP_REV_DNAT_ICMP, AF_INET, "10.96.0.10", 80, "10.0.0.2"), "reverse nat");
	check_addr(ip_src(L3(&f)), AF_INET, "192.168.9.1", "outer source (a router: unchanged)");
	check_addr(ip_dst(L4(&f) + 8), AF_INET, "10.96.0.10", "quoted destination");
	check_sums(L3(&f), f.len - ETH_HLEN, false);
}

Test(nat, icmp_error_reverse_snat, .init = setup, .fini = teardown)
{
	/* node 192.168.50.1:33001 -> remote backend, the backend's node says
	 * port unreachable; the client was 203.0.113.7:51000. */
	struct frame orig = packet(AF_INET, IPPROTO_UDP, "192.168.50.1", 33001, "10.0.1.5", 8080, false);
	struct frame f = icmp_error(AF_INET, "10.0.1.5", "192.168.50.1", &orig, false);
	const uint8_t *in;

	ASSERT_OK(nat(&f, NAT_OP_REV_SNAT_ICMP, AF_INET, "203.0.113.7", 51000, NULL), "reverse snat");
	check_addr(ip_dst(L3(&f)), AF_INET, "203.0.113.7", "outer destination");
	in = L4(&f) + 8;
	check_addr(ip_src(in), AF_INET, "203.0.113.7", "quoted source");
	check_port(in + ip_hlen(in), 51000, "quoted source");
	check_sums(L3(&f), f.len - ETH_HLEN, false);

	orig = packet(AF_INET6, IPPROTO_TCP, "fd00:50::1", 33001, "fd00:1::5", 8080, false);
	f = icmp_error(AF_INET6, "fd00:1::5", "fd00:50::1", &orig, false);
	ASSERT_OK(nat(&f, NAT_OP_REV_SNAT_ICMP, AF_INET6, "2001:db8::7", 51000, NULL), "reverse snat v6");
	check_addr(ip_dst(L3(&f)), AF_INET6, "2001:db8::7", "outer destination");
	check_sums(L3(&f), f.len - ETH_HLEN, false);
}

Test(nat, non_error_icmp_is_not_a_quote, .init = setup, .fini = teardown)
{
	struct frame orig = packet(AF_INET, IPPROTO_UDP, "10.0.0.1", 40000, "10.0.0.2", 8080, false);
	struct frame f = icmp_error(AF_INET, "10.0.0.2", "10.0.0.1", &orig, false);

	L4(&f)[0] = 0; /* echo reply */
	cr_assert(nat(&f, NAT_OP_REV_DNAT_ICMP, AF_INET, "10.96.0.10", 80, "10.0.0.2") == 101,
		  "an echo reply must not be taken for an error");
}
