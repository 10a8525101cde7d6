/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Source ranges of services (<flowsdn/maps.h> "source ranges", written by
 * flowsdn_maps_srcrange_set(), enforced by bpf/lib/srcrange.h) on crafted
 * packets (BPF_PROG_TEST_RUN, root): deny wins over allow in both
 * nestings, an empty allow list lets everyone in, an allow list refuses
 * every other source of either family, replacing and clearing, counters.
 * The maps are the real datapath's (flowsdn_datapath_open() in a private
 * bpffs); the harness program of tests/bpf/nat-test.bpf.c reuses them.
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
#include <flowsdn/datapath.h>

#include "bpf-test.h"
#include "harness.h"
#include "netns-helpers.h"

static char pin_dir[64];
static struct flowsdn_datapath *dp;
static struct flowsdn_maps *maps;
static struct bpf_object *obj;
static int prog_fd, req_fd;

static void setup(void)
{
	node_enter();
	dp = dp_open(pin_dir, sizeof(pin_dir), "srctest", NULL, &maps);
	/* The harness reuses the datapath's pinned maps. */
	obj = harness_load(pin_dir, "srcrange_run", "srcrange_req", &prog_fd, &req_fd);
}

static void teardown(void)
{
	bpf_object__close(obj);
	obj = NULL;
	dp_close(&dp, pin_dir);
}

static struct flowsdn_prefix pfx(const char *text)
{
	struct flowsdn_prefix p;

	ASSERT_OK(flowsdn_prefix_parse(text, strlen(text), NULL, &p), text);
	return p;
}

/* true when a UDP packet from @src to the service @svc_id passes. */
static bool passes(uint32_t svc_id, const char *src)
{
	uint8_t b[128] __attribute__((aligned(8))) = { 0 }, out[128];
	struct ethhdr *eth = (void *)(b + 2);
	size_t len;
	uint32_t zero = 0;
	struct __sk_buff ctx = { .ifindex = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_out = out, .data_size_out = sizeof(out), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	if (strchr(src, ':')) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->nexthdr = IPPROTO_UDP;
		ip6->payload_len = htons(8);
		ip6->hop_limit = 64;
		cr_assert(inet_pton(AF_INET6, src, &ip6->saddr) == 1, "%s", src);
		inet_pton(AF_INET6, "2001:db8:ffff::10", &ip6->daddr);
		len = sizeof(*eth) + sizeof(*ip6) + 8;
	} else {
		struct iphdr *ip = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		ip->tot_len = htons(28);
		cr_assert(inet_pton(AF_INET, src, &ip->saddr) == 1, "%s", src);
		inet_pton(AF_INET, "192.0.2.10", &ip->daddr);
		len = sizeof(*eth) + sizeof(*ip) + 8;
	}
	o.data_in = b + 2;
	o.data_size_in = (__u32)len;
	ASSERT_OK(bpf_map_update_elem(req_fd, &zero, &svc_id, BPF_ANY), "srcrange_req");
	cr_assert(bpf_prog_test_run_opts(prog_fd, &o) == 0, "BPF_PROG_TEST_RUN: %s", strerror(errno));
	cr_assert(o.retval == TC_ACT_OK || o.retval == TC_ACT_SHOT, "verdict %u", o.retval);
	return o.retval == TC_ACT_OK;
}

#define PASSES(svc, src) cr_assert(passes(svc, src), "%s must reach service %u", src, svc)
#define REFUSED(svc, src) cr_assert(!passes(svc, src), "%s must be refused by service %u", src, svc)

static uint64_t refusals(void)
{
	return dp_drops(maps, FLOWSDN_DROP_SOURCE_RANGE);
}

Test(srcrange, no_ranges_let_everyone_in, .init = setup, .fini = teardown)
{
	PASSES(7, "198.51.100.1");
	PASSES(7, "2001:db8::1");
	cr_assert_eq(refusals(), 0);
}

Test(srcrange, deny_wins_and_allow_list_refuses_the_rest, .init = setup, .fini = teardown)
{
	struct flowsdn_prefix allow[] = { pfx("203.0.113.0/24"), pfx("10.1.2.0/24") };
	struct flowsdn_prefix deny[] = { pfx("203.0.113.7/32"), pfx("10.0.0.0/8") };
	struct flowsdn_prefix host = pfx("203.0.113.0/24");
	uint64_t n;

	allow[0].addr.bytes[3] = 77; /* host bits: ignored */
	ASSERT_OK(flowsdn_maps_srcrange_set(maps, 7, allow, 2, deny, 2), "set");
	PASSES(7, "203.0.113.5");
	REFUSED(7, "203.0.113.7");   /* a denied host inside an allowed range */
	REFUSED(7, "10.1.2.3");      /* an allowed range inside a denied one: deny wins */
	REFUSED(7, "198.51.100.1");  /* outside the allow list */
	REFUSED(7, "2001:db8::1");   /* the allow list has no IPv6 range: refused too */
	PASSES(8, "198.51.100.1");   /* another service is not concerned */
	cr_assert_eq(refusals(), 4);
	/* Host bits of 203.0.113.77/24 were cleared: it is the /24 entry. */
	ASSERT_OK(flowsdn_maps_srcrange_packets(maps, 7, FLOWSDN_SRCRANGE_ALLOW, &host, &n), "allow counter");
	cr_assert_eq(n, 1);
	ASSERT_OK(flowsdn_maps_srcrange_packets(maps, 7, FLOWSDN_SRCRANGE_DENY, &deny[1], &n), "deny counter");
	cr_assert_eq(n, 1);
	ASSERT_OK(flowsdn_maps_srcrange_packets(maps, 7, FLOWSDN_SRCRANGE_META, NULL, &n), "outside counter");
	cr_assert_eq(n, 2);
}

Test(srcrange, deny_only_and_ipv6, .init = setup, .fini = teardown)
{
	struct flowsdn_prefix deny[] = { pfx("192.0.2.0/24"), pfx("2001:db8:bad::/48") };
	struct flowsdn_prefix allow6[] = { pfx("2001:db8:1::/48") };

	ASSERT_OK(flowsdn_maps_srcrange_set(maps, 9, NULL, 0, deny, 2), "deny only");
	REFUSED(9, "192.0.2.9");
	REFUSED(9, "2001:db8:bad:1::5");
	PASSES(9, "198.51.100.1");
	PASSES(9, "2001:db8:1::5");
	ASSERT_OK(flowsdn_maps_srcrange_set(maps, 9, allow6, 1, deny, 2), "an IPv6 allow list");
	PASSES(9, "2001:db8:1::5");
	REFUSED(9, "2001:db8:2::5");
	REFUSED(9, "198.51.100.1");
}

Test(srcrange, replace_and_clear, .init = setup, .fini = teardown)
{
	struct flowsdn_prefix a1[] = { pfx("203.0.113.0/24") }, a2[] = { pfx("198.51.100.0/24") };
	struct flowsdn_prefix d1[] = { pfx("198.51.100.66/32") };
	uint64_t n;

	ASSERT_OK(flowsdn_maps_srcrange_set(maps, 3, a1, 1, d1, 1), "first");
	PASSES(3, "203.0.113.1");
	REFUSED(3, "198.51.100.1");
	ASSERT_OK(flowsdn_maps_srcrange_set(maps, 3, a2, 1, NULL, 0), "replaced");
	REFUSED(3, "203.0.113.1");
	PASSES(3, "198.51.100.66"); /* no longer denied */
	ASSERT_ERR(flowsdn_maps_srcrange_packets(maps, 3, FLOWSDN_SRCRANGE_ALLOW, &a1[0], &n), -ENOENT,
		   "the old range is gone");
	ASSERT_OK(flowsdn_maps_srcrange_set(maps, 3, NULL, 0, d1, 1), "no allow list any more");
	PASSES(3, "203.0.113.1");
	REFUSED(3, "198.51.100.66");
	ASSERT_OK(flowsdn_maps_srcrange_clear(maps, 3), "clear");
	PASSES(3, "198.51.100.66");
	ASSERT_ERR(flowsdn_maps_srcrange_packets(maps, 3, FLOWSDN_SRCRANGE_META, NULL, &n), -ENOENT, "no META");
	ASSERT_OK(flowsdn_maps_srcrange_clear(maps, 3), "clear again");
}

Test(srcrange, bad_arguments_write_nothing, .init = setup, .fini = teardown)
{
	struct flowsdn_prefix good = pfx("203.0.113.0/24"), bad = good;
	static struct flowsdn_prefix many[FLOWSDN_SRCRANGE_MAX_PER_SERVICE + 1];

	bad.len = 33;
	ASSERT_ERR(flowsdn_maps_srcrange_set(maps, 4, &good, 1, &bad, 1), -EINVAL, "prefix length 33");
	PASSES(4, "198.51.100.1"); /* the good allow range was not written either */
	ASSERT_ERR(flowsdn_maps_srcrange_set(maps, 0, &good, 1, NULL, 0), -EINVAL, "svc_id 0");
	ASSERT_ERR(flowsdn_maps_srcrange_set(maps, 4, NULL, 1, NULL, 0), -EINVAL, "NULL with a count");
	for (size_t i = 0; i < FLOWSDN_SRCRANGE_MAX_PER_SERVICE + 1; i++)
		many[i] = good;
	ASSERT_ERR(flowsdn_maps_srcrange_set(maps, 4, many, FLOWSDN_SRCRANGE_MAX_PER_SERVICE + 1, NULL, 0), -E2BIG,
		   "too many");
	PASSES(4, "198.51.100.1");
}
