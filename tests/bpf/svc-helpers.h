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

#endif
