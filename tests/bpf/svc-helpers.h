/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Services written raw into the pinned maps (as <flowsdn/maps.h> lays
 * them out) and TCP/UDP packets with their checksums, for the tests of
 * the tc service paths (test-svc-xlate, test-uplink).  The test defines
 * pin_dir (the datapath's bpffs) before including this. */
#ifndef FLASH_TESTS_BPF_SVC_HELPERS_H
#define FLASH_TESTS_BPF_SVC_HELPERS_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <flowsdn/maps.h>

#include "bpf-test.h"
#include "helpers.h"

static inline int map_fd(const char *name)
{
	return dp_pinned(pin_dir, name);
}

/* ------------------------------------------------------------ services */

static inline void inet(int family, const char *text, __be32 *addr)
{
	memset(addr, 0, 16);
	cr_assert(inet_pton(family, text, addr) == 1, "%s", text);
}

static inline void backend_put_flags(uint32_t id, int family, const char *addr, uint16_t port, uint8_t proto, uint8_t state,
			      uint8_t flags)
{
	struct flowsdn_backend be = { .port = htons(port), .protocol = proto, .family = (uint8_t)family, .state = state,
				      .flags = flags };
	int fd = map_fd(FLOWSDN_MAP_BACKENDS);

	inet(family, addr, be.addr);
	ASSERT_OK(bpf_map_update_elem(fd, &id, &be, BPF_ANY), "backend");
	close(fd);
}

static inline void backend_put(uint32_t id, int family, const char *addr, uint16_t port, uint8_t proto, uint8_t state)
{
	backend_put_flags(id, family, addr, port, proto, state, 0);
}

/* Frontend @addr:@port -> svc_id @svc with the backends @ids in its slots. */
static inline void service_put_flags(uint32_t svc, int family, const char *addr, uint16_t port, uint8_t proto,
			      const uint32_t *ids, uint32_t n, uint32_t flags)
{
	struct flowsdn_service_key k = { .port = htons(port), .protocol = proto, .family = (uint8_t)family,
					 .scope = FLOWSDN_SVC_SCOPE_EXTERNAL };
	struct flowsdn_service_value v = { .svc_id = svc, .slot_count = n, .flags = flags };
	int sfd = map_fd(FLOWSDN_MAP_SERVICES), lfd = map_fd(FLOWSDN_MAP_SVC_SLOTS);

	inet(family, addr, k.addr);
	for (uint32_t i = 0; i < n; i++) {
		struct flowsdn_svc_slot_key sk = { .svc_id = svc, .slot = i };
		struct flowsdn_svc_slot_value sv = { .backend_id = ids[i] };

		ASSERT_OK(bpf_map_update_elem(lfd, &sk, &sv, BPF_ANY), "slot");
	}
	ASSERT_OK(bpf_map_update_elem(sfd, &k, &v, BPF_ANY), "service");
	close(sfd);
	close(lfd);
}

static inline void service_put(uint32_t svc, int family, const char *addr, uint16_t port, uint8_t proto, const uint32_t *ids,
			uint32_t n)
{
	service_put_flags(svc, family, addr, port, proto, ids, n, 0);
}

/* ------------------------------------------------------------ packets */

/* The L4 checksum of the packet whose IP header is at @ip. */
static inline uint16_t l4sum(int family, const uint8_t *ip, uint8_t proto, const uint8_t *l4, size_t len)
{
	size_t off = family == AF_INET ? 12 : 8, alen = family == AF_INET ? 4 : 16;

	return l4_checksum(family, ip + off, ip + off + alen, proto, l4, len);
}

#define L3(f) ((f)->b + ETH_HLEN)
static inline size_t hlen(const struct frame *f) { return L3(f)[0] >> 4 == 4 ? 20 : 40; }
#define L4(f) (L3(f) + hlen(f))

/* Ethernet from @smac to @dmac + IP + TCP (SYN, or SYN-ACK with @synack)
 * or UDP, 11 bytes of payload, valid checksums. */
static inline struct frame packet(int family, uint8_t proto, const char *src, uint16_t sport, const char *dst,
			   uint16_t dport, const uint8_t *smac, const uint8_t *dmac, bool synack)
{
	struct frame f;
	struct ethhdr *eth = (void *)f.b;
	size_t hl = proto == IPPROTO_TCP ? 20 : 8, l4len = hl + 11, ihl = family == AF_INET ? 20 : 40;
	uint8_t *ip = f.b + ETH_HLEN, *l4 = ip + ihl;
	uint16_t c;

	memset(&f, 0, sizeof(f));
	memcpy(eth->h_dest, dmac, 6);
	memcpy(eth->h_source, smac, 6);
	eth->h_proto = htons(family == AF_INET ? ETH_P_IP : ETH_P_IPV6);
	if (family == AF_INET) {
		struct iphdr *h = (void *)ip;

		h->version = 4;
		h->ihl = 5;
		h->ttl = 64;
		h->protocol = proto;
		h->tot_len = htons((uint16_t)(ihl + l4len));
		cr_assert(inet_pton(AF_INET, src, &h->saddr) == 1 && inet_pton(AF_INET, dst, &h->daddr) == 1);
		h->check = htons(fold(sum16(h, 20, 0)));
	} else {
		struct ipv6hdr *h = (void *)ip;

		h->version = 6;
		h->nexthdr = proto;
		h->hop_limit = 64;
		h->payload_len = htons((uint16_t)l4len);
		cr_assert(inet_pton(AF_INET6, src, &h->saddr) == 1 && inet_pton(AF_INET6, dst, &h->daddr) == 1);
	}
	l4[0] = (uint8_t)(sport >> 8);
	l4[1] = (uint8_t)sport;
	l4[2] = (uint8_t)(dport >> 8);
	l4[3] = (uint8_t)dport;
	if (proto == IPPROTO_TCP) {
		l4[12] = 5 << 4;
		l4[13] = synack ? 0x12 : 0x02;
	} else {
		l4[4] = (uint8_t)(l4len >> 8);
		l4[5] = (uint8_t)l4len;
	}
	for (size_t i = hl; i < l4len; i++)
		l4[i] = (uint8_t)(i * 13 + 1);
	c = l4sum(family, ip, proto, l4, l4len);
	l4[proto == IPPROTO_TCP ? 16 : 6] = (uint8_t)(c >> 8);
	l4[proto == IPPROTO_TCP ? 17 : 7] = (uint8_t)c;
	f.len = ETH_HLEN + ihl + l4len;
	return f;
}

static inline int run(int prog, struct frame *f)
{
	return run_on(prog, f, 1);
}

static inline void check_tuple(const struct frame *f, const char *src, uint16_t sport, const char *dst, uint16_t dport)
{
	int family = L3(f)[0] >> 4 == 4 ? AF_INET : AF_INET6;
	const uint8_t *ip = L3(f), *l4 = L4(f);
	size_t alen = family == AF_INET ? 4 : 16, l4len = f->len - ETH_HLEN - hlen(f);
	uint8_t proto = family == AF_INET ? ip[9] : ip[6];
	__be32 s[4], d[4];
	char got_s[64], got_d[64];

	inet(family, src, s);
	inet(family, dst, d);
	inet_ntop(family, ip + (family == AF_INET ? 12 : 8), got_s, sizeof(got_s));
	inet_ntop(family, ip + (family == AF_INET ? 16 : 24), got_d, sizeof(got_d));
	cr_assert(!memcmp(ip + (family == AF_INET ? 12 : 8), s, alen), "source %s, want %s", got_s, src);
	cr_assert(!memcmp(ip + (family == AF_INET ? 16 : 24), d, alen), "destination %s, want %s", got_d, dst);
	cr_assert_eq((l4[0] << 8 | l4[1]), sport, "source port");
	cr_assert_eq((l4[2] << 8 | l4[3]), dport, "destination port");
	if (family == AF_INET)
		cr_assert(fold(sum16(ip, 20, 0)) == 0, "IPv4 header checksum");
	cr_assert(l4sum(family, ip, proto, l4, l4len) == 0, "L4 checksum");
}

/*
 * An ICMP (IPv4) or ICMPv6 error of @type/@code from @src to @dst, @mtu
 * in its header (fragmentation needed, packet too big; else 0), quoting
 * the whole packet of @quoted from its IP header on; valid checksums.
 */
static inline struct frame icmp_error(int family, const char *src, const char *dst, uint8_t type, uint8_t code,
				      uint32_t mtu, const struct frame *quoted, const uint8_t *smac, const uint8_t *dmac)
{
	size_t qlen = quoted->len - ETH_HLEN, ihl = family == AF_INET ? 20 : 40;
	struct frame f = packet(family, IPPROTO_UDP, src, 1, dst, 1, smac, dmac, false);
	uint8_t *ip = L3(&f), *icmp = ip + ihl;
	uint16_t c;

	cr_assert(ETH_HLEN + ihl + 8 + qlen <= sizeof(f.b), "the quote fits the frame");
	memset(icmp, 0, 8);
	icmp[0] = type;
	icmp[1] = code;
	if (family == AF_INET) {
		icmp[6] = (uint8_t)(mtu >> 8);
		icmp[7] = (uint8_t)mtu;
	} else {
		icmp[4] = (uint8_t)(mtu >> 24);
		icmp[5] = (uint8_t)(mtu >> 16);
		icmp[6] = (uint8_t)(mtu >> 8);
		icmp[7] = (uint8_t)mtu;
	}
	memcpy(icmp + 8, L3(quoted), qlen);
	if (family == AF_INET) {
		ip[9] = IPPROTO_ICMP;
		ip[2] = (uint8_t)((ihl + 8 + qlen) >> 8);
		ip[3] = (uint8_t)(ihl + 8 + qlen);
		ip[10] = ip[11] = 0;
		c = fold(sum16(ip, 20, 0));
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
		c = fold(sum16(icmp, 8 + qlen, 0));
	} else {
		ip[6] = IPPROTO_ICMPV6;
		ip[4] = (uint8_t)((8 + qlen) >> 8);
		ip[5] = (uint8_t)(8 + qlen);
		c = l4sum(AF_INET6, ip, IPPROTO_ICMPV6, icmp, 8 + qlen);
	}
	icmp[2] = (uint8_t)(c >> 8);
	icmp[3] = (uint8_t)c;
	f.len = ETH_HLEN + ihl + 8 + qlen;
	return f;
}

/*
 * Checks the ICMP error @f: outer @src -> @dst, type @type, valid IPv4
 * header and ICMP/ICMPv6 checksums, and a quote that is a packet from
 * @q_src:@q_sport to @q_dst:@q_dport with valid checksums (check_tuple()).
 */
static inline void check_icmp_error(const struct frame *f, const char *src, const char *dst, uint8_t type,
				    const char *q_src, uint16_t q_sport, const char *q_dst, uint16_t q_dport)
{
	int family = L3(f)[0] >> 4 == 4 ? AF_INET : AF_INET6;
	const uint8_t *ip = L3(f), *icmp = L4(f);
	size_t alen = family == AF_INET ? 4 : 16, ilen = f->len - ETH_HLEN - hlen(f);
	char got_s[64], got_d[64];
	__be32 s[4], d[4];
	struct frame q;

	inet(family, src, s);
	inet(family, dst, d);
	inet_ntop(family, ip + (family == AF_INET ? 12 : 8), got_s, sizeof(got_s));
	inet_ntop(family, ip + (family == AF_INET ? 16 : 24), got_d, sizeof(got_d));
	cr_assert(!memcmp(ip + (family == AF_INET ? 12 : 8), s, alen), "outer source %s, want %s", got_s, src);
	cr_assert(!memcmp(ip + (family == AF_INET ? 16 : 24), d, alen), "outer destination %s, want %s", got_d, dst);
	cr_assert_eq(icmp[0], type, "ICMP type");
	if (family == AF_INET) {
		cr_assert(fold(sum16(ip, 20, 0)) == 0, "outer IPv4 header checksum");
		cr_assert(fold(sum16(icmp, ilen, 0)) == 0, "ICMP checksum");
	} else {
		cr_assert(l4sum(AF_INET6, ip, IPPROTO_ICMPV6, icmp, ilen) == 0, "ICMPv6 checksum");
	}
	/* The quote as a packet of its own. */
	memset(&q, 0, sizeof(q));
	memcpy(q.b + ETH_HLEN, icmp + 8, ilen - 8);
	q.len = ETH_HLEN + ilen - 8;
	check_tuple(&q, q_src, q_sport, q_dst, q_dport);
}

#endif
