/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An endpoint of the datapath integration tests: its own network
 * namespace (ns_spawn()), a veth to it (eth0 inside, MTU 1500) carrying
 * its IPv4 /32 and IPv6 /128, published into the datapath's maps and with
 * the endpoint programs attached to its host side.  Include after
 * DIAG_TEST_HELPERS(flowsdn) and netns-helpers.h.
 */
#ifndef FLASH_TESTS_ENDPOINT_HELPERS_H
#define FLASH_TESTS_ENDPOINT_HELPERS_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <string.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>

struct ep {
	struct test_ns ns;
	struct flowsdn_veth veth;
	struct flowsdn_endpoint e;
};

/* Wires @ep (host side @host, addresses @a4 and @a6, host routes to them
 * when @host_routes) as endpoint @id of @d with @identity and @flags. */
static inline void ep_wire(struct flowsdn_datapath *d, struct ep *ep, uint32_t id, uint32_t identity, uint32_t flags,
			   const char *host, const char *a4, const char *a6, bool host_routes)
{
	struct flowsdn_prefix pfx[2];
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();
	int r;

	ns_spawn(&ep->ns);
	memset(&ep->e, 0, sizeof(ep->e));
	ASSERT_OK(flowsdn_addr_parse(a4, strlen(a4), &ep->e.addrs[0]), a4);
	ASSERT_OK(flowsdn_addr_parse(a6, strlen(a6), &ep->e.addrs[1]), a6);
	ep->e.n_addrs = 2;
	pfx[0] = (struct flowsdn_prefix){ .addr = ep->e.addrs[0], .len = 32 };
	pfx[1] = (struct flowsdn_prefix){ .addr = ep->e.addrs[1], .len = 128 };
	FLOWSDN_OPTS(flowsdn_veth_config, cfg, .netns_path = ep->ns.path, .host_ifname = host, .ifname = "eth0",
		     .mtu = 1500, .addrs = pfx, .n_addrs = 2, .host_routes = host_routes);
	r = flowsdn_netlink_veth_setup(&cfg, &ep->veth, err);
	cr_assert(r == 0, "veth setup %s: %s (%s)", host, flowsdn_strerror(r), flowsdn_test_messages(err));
	ep->e.id = id;
	ep->e.identity = identity;
	ep->e.flags = flags;
	ep->e.host_ifindex = ep->veth.host_ifindex;
	memcpy(ep->e.mac, ep->veth.mac, 6);
	memcpy(ep->e.host_mac, ep->veth.host_mac, 6);
	ASSERT_OK(flowsdn_maps_endpoint_publish(flowsdn_datapath_maps(d), &ep->e), "publish");
	ASSERT_OK(flowsdn_datapath_attach(d, ep->veth.host_ifindex), "attach");
}

#endif
