/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-packet service translation (bpf/lib/svc-xlate.h) in the endpoint
 * programs, on crafted packets (BPF_PROG_TEST_RUN, root): a
 * FLOWSDN_EP_F_SVC_PACKET endpoint's packet to a ClusterIP is DNATed to
 * the backend, tracked with the frontend as reverse-NAT data, its reply
 * gets the frontend back as source (in the backend's from_container for a
 * same-node backend, in the client's to_container for a host backend),
 * ICMP errors are translated, later packets stay on their backend when
 * the backend set changes, a service without backend drops, and an
 * endpoint without the flag is left to the socket LB.  The maps are
 * written raw, as <flowsdn/maps.h> lays them out.  Every checksum of each
 * output is verified from scratch.
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
#include <flowsdn/datapath.h>
#include <flowsdn/maps.h>

#include "netns-helpers.h"

static char pin_dir[64];

#include "svc-helpers.h"

static struct flowsdn_datapath *dp;
static struct flowsdn_maps *maps;
static int prog_from, prog_to;

static const uint8_t mac_a[6] = { 2, 0, 0, 0, 0, 0xa }, host_a[6] = { 2, 0, 0, 0, 1, 0xa };
static const uint8_t mac_b[6] = { 2, 0, 0, 0, 0, 0xb }, host_b[6] = { 2, 0, 0, 0, 1, 0xb };

static void publish(uint32_t id, const uint8_t *mac, const uint8_t *host, const char *a4, const char *a6,
		    uint32_t flags)
{
	struct flowsdn_endpoint e = { .id = id, .identity = 5000 + id, .host_ifindex = 1, .flags = flags, .n_addrs = 2 };

	memcpy(e.mac, mac, 6);
	memcpy(e.host_mac, host, 6);
	ASSERT_OK(flowsdn_addr_parse(a4, strlen(a4), &e.addrs[0]), a4);
	ASSERT_OK(flowsdn_addr_parse(a6, strlen(a6), &e.addrs[1]), a6);
	ASSERT_OK(flowsdn_maps_endpoint_publish(maps, &e), "publish");
}

static void setup(void)
{
	node_enter();
	dp = dp_open(pin_dir, sizeof(pin_dir), "xlatetest", NULL, &maps);
	prog_from = dp_pinned(pin_dir, "prog_from_container");
	prog_to = dp_pinned(pin_dir, "prog_to_container");
	/* A: the gVisor client (tc translation); B: a backend endpoint;
	 * C: a client left to the socket LB.  All on lo for test runs. */
	publish(1, mac_a, host_a, "10.0.0.1", "fd00::1", FLOWSDN_EP_F_SVC_PACKET);
	publish(2, mac_b, host_b, "10.0.0.2", "fd00::2", 0);
	publish(3, mac_b, host_b, "10.0.0.3", "fd00::3", 0);
}

static void teardown(void)
{
	dp_close(&dp, pin_dir);
}

static uint64_t drops(unsigned int reason)
{
	return dp_drops(maps, reason);
}

/* ------------------------------------------------------------ tests */

static void same_node_round_trip(int family, uint8_t proto, const char *a, const char *front, const char *b)
{
	uint32_t ids[] = { 7 };
	struct frame f;

	backend_put(7, family, b, 8080, proto, FLOWSDN_BACKEND_ACTIVE);
	service_put(40, family, front, 80, proto, ids, 1);

	f = packet(family, proto, a, 41000, front, 80, mac_a, host_a, false);
	cr_assert_eq(run(prog_from, &f), TC_ACT_REDIRECT, "delivered to the backend endpoint");
	check_tuple(&f, a, 41000, b, 8080);
	/* The backend answers; its from_container restores the frontend. */
	f = packet(family, proto, b, 8080, a, 41000, mac_b, host_b, true);
	cr_assert_eq(run(prog_from, &f), TC_ACT_REDIRECT, "reply delivered to the client");
	check_tuple(&f, front, 80, a, 41000);
	/* The next packet of the flow: again to the backend. */
	f = packet(family, proto, a, 41000, front, 80, mac_a, host_a, true);
	cr_assert_eq(run(prog_from, &f), TC_ACT_REDIRECT);
	check_tuple(&f, a, 41000, b, 8080);
}

Test(svc_xlate, clusterip_to_same_node_backend_ipv4_tcp_udp, .init = setup, .fini = teardown)
{
	same_node_round_trip(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.96.0.10", "10.0.0.2");
	same_node_round_trip(AF_INET, IPPROTO_UDP, "10.0.0.1", "10.96.0.11", "10.0.0.2");
}

Test(svc_xlate, clusterip_to_same_node_backend_ipv6, .init = setup, .fini = teardown)
{
	same_node_round_trip(AF_INET6, IPPROTO_TCP, "fd00::1", "fd00:96::10", "fd00::2");
	same_node_round_trip(AF_INET6, IPPROTO_UDP, "fd00::1", "fd00:96::11", "fd00::2");
}

Test(svc_xlate, host_backend_reply_translated_in_to_container, .init = setup, .fini = teardown)
{
	uint32_t ids[] = { 9 };
	struct frame f;

	/* A backend that is no endpoint (a host process on 10.0.9.9). */
	backend_put(9, AF_INET, "10.0.9.9", 9000, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	service_put(41, AF_INET, "10.96.0.20", 443, IPPROTO_TCP, ids, 1);
	f = packet(AF_INET, IPPROTO_TCP, "10.0.0.1", 42000, "10.96.0.20", 443, mac_a, host_a, false);
	run(prog_from, &f);
	check_tuple(&f, "10.0.0.1", 42000, "10.0.9.9", 9000);
	/* Its reply comes from the stack through the client's to_container. */
	f = packet(AF_INET, IPPROTO_TCP, "10.0.9.9", 9000, "10.0.0.1", 42000, host_a, mac_a, true);
	cr_assert_eq(run(prog_to, &f), TC_ACT_OK);
	check_tuple(&f, "10.96.0.20", 443, "10.0.0.1", 42000);
}

Test(svc_xlate, flows_stay_on_their_backend_and_new_ones_follow_the_set, .init = setup, .fini = teardown)
{
	uint32_t one[] = { 7 }, other[] = { 8 };
	struct frame f;

	backend_put(7, AF_INET, "10.0.0.2", 8080, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	backend_put(8, AF_INET, "10.0.0.3", 8080, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	service_put(42, AF_INET, "10.96.0.30", 80, IPPROTO_TCP, one, 1);
	f = packet(AF_INET, IPPROTO_TCP, "10.0.0.1", 43000, "10.96.0.30", 80, mac_a, host_a, false);
	run(prog_from, &f);
	check_tuple(&f, "10.0.0.1", 43000, "10.0.0.2", 8080);
	/* The backend set becomes {8}; backend 7 terminates. */
	service_put(42, AF_INET, "10.96.0.30", 80, IPPROTO_TCP, other, 1);
	backend_put(7, AF_INET, "10.0.0.2", 8080, IPPROTO_TCP, FLOWSDN_BACKEND_TERMINATING);
	f = packet(AF_INET, IPPROTO_TCP, "10.0.0.1", 43000, "10.96.0.30", 80, mac_a, host_a, true);
	run(prog_from, &f);
	check_tuple(&f, "10.0.0.1", 43000, "10.0.0.2", 8080); /* the established flow drains */
	f = packet(AF_INET, IPPROTO_TCP, "10.0.0.1", 43001, "10.96.0.30", 80, mac_a, host_a, false);
	run(prog_from, &f);
	check_tuple(&f, "10.0.0.1", 43001, "10.0.0.3", 8080); /* a new one goes to the new set */
}

Test(svc_xlate, no_backend_drops_and_socket_endpoints_are_left_alone, .init = setup, .fini = teardown)
{
	uint32_t ids[] = { 7 };
	uint64_t before = drops(FLOWSDN_DROP_NO_BACKEND);
	struct frame f;

	service_put(43, AF_INET, "10.96.0.40", 80, IPPROTO_TCP, NULL, 0);
	f = packet(AF_INET, IPPROTO_TCP, "10.0.0.1", 44000, "10.96.0.40", 80, mac_a, host_a, false);
	cr_assert_eq(run(prog_from, &f), TC_ACT_SHOT, "no backend");
	cr_assert_eq(drops(FLOWSDN_DROP_NO_BACKEND), before + 1);

	backend_put(7, AF_INET, "10.0.0.2", 8080, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	service_put(44, AF_INET, "10.96.0.41", 80, IPPROTO_TCP, ids, 1);
	/* Endpoint 3 has no FLOWSDN_EP_F_SVC_PACKET: the socket LB's business. */
	f = packet(AF_INET, IPPROTO_TCP, "10.0.0.3", 44000, "10.96.0.41", 80, mac_b, host_b, false);
	run(prog_from, &f);
	check_tuple(&f, "10.0.0.3", 44000, "10.96.0.41", 80);
}

Test(svc_xlate, icmp_error_from_the_backend_is_translated, .init = setup, .fini = teardown)
{
	uint32_t ids[] = { 9 };
	struct frame f, e;
	uint8_t *icmp, *ip;
	size_t qlen;
	uint16_t c;

	backend_put(9, AF_INET, "10.0.9.9", 5353, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE);
	service_put(45, AF_INET, "10.96.0.53", 53, IPPROTO_UDP, ids, 1);
	f = packet(AF_INET, IPPROTO_UDP, "10.0.0.1", 45000, "10.96.0.53", 53, mac_a, host_a, false);
	run(prog_from, &f);
	check_tuple(&f, "10.0.0.1", 45000, "10.0.9.9", 5353);
	/* The host answers port unreachable, quoting what it received. */
	qlen = f.len - ETH_HLEN;
	e = packet(AF_INET, IPPROTO_UDP, "10.0.9.9", 1, "10.0.0.1", 1, host_a, mac_a, false);
	ip = L3(&e);
	ip[9] = IPPROTO_ICMP;
	ip[2] = (uint8_t)((20 + 8 + qlen) >> 8);
	ip[3] = (uint8_t)(20 + 8 + qlen);
	ip[10] = ip[11] = 0;
	c = fold(sum16(ip, 20, 0));
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	icmp = ip + 20;
	memset(icmp, 0, 8);
	icmp[0] = 3;
	icmp[1] = 3;
	memcpy(icmp + 8, L3(&f), qlen);
	c = fold(sum16(icmp, 8 + qlen, 0));
	icmp[2] = (uint8_t)(c >> 8);
	icmp[3] = (uint8_t)c;
	e.len = ETH_HLEN + 20 + 8 + qlen;
	cr_assert_eq(run(prog_to, &e), TC_ACT_OK);
	ip = L3(&e);
	icmp = ip + 20;
	cr_assert(fold(sum16(ip, 20, 0)) == 0, "outer IPv4 checksum");
	cr_assert(fold(sum16(icmp, 8 + qlen, 0)) == 0, "ICMP checksum");
	f = packet(AF_INET, IPPROTO_UDP, "10.0.0.1", 45000, "10.96.0.53", 53, mac_a, host_a, false);
	cr_assert(!memcmp(icmp + 8, L3(&f), qlen), "the quote is the packet the client sent");
	cr_assert(!memcmp(ip + 12, (uint8_t[]){ 10, 96, 0, 53 }, 4), "outer source: the frontend");
}
