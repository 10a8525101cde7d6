/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-packet service translation end to end (root): endpoints in their
 * own netns wired by flowsdn_netlink_veth_setup() and served by the BPF
 * programs; endpoint A is marked FLOWSDN_EP_F_SVC_PACKET (as a gVisor
 * netstack sandbox is), so its sockets connect to a ClusterIP that no
 * socket LB translates: the tc programs do, and its replies come back
 * from the ClusterIP (a connected UDP socket accepts nothing else).  TCP
 * and UDP, IPv4 and IPv6, a backend endpoint on the node and a backend
 * process of the host; an endpoint without the mark is not translated.
 * Services are written into the pinned maps as <flowsdn/maps.h> lays them
 * out.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>

#include "diag-helpers.h"
#include "netns-helpers.h"

static char pin_dir[64];

#include "bpf/svc-helpers.h"

DIAG_TEST_HELPERS(flowsdn)

#define A4 "10.201.0.2"
#define B4 "10.201.0.3"
#define C4 "10.201.0.4"
#define A6 "fd00:201::2"
#define B6 "fd00:201::3"
#define C6 "fd00:201::4"
#define HOST4 "10.201.9.9" /* a host process backend */

#include "endpoint-helpers.h"

static struct flowsdn_datapath *dp;
static struct ep epa, epb, epc;

static void make_endpoint(struct ep *ep, uint32_t id, const char *host, const char *a4, const char *a6, uint32_t flags)
{
	ep_wire(dp, ep, id, 1000 + id, flags, host, a4, a6, true);
}

static void node_up(void)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();
	int r;

	node_enter();
	ASSERT_OK(flowsdn_netlink_sysctl_write(NULL, "net.ipv4.ip_forward", "1", err), "ip_forward");
	ASSERT_OK(flowsdn_netlink_sysctl_write(NULL, "net.ipv6.conf.all.forwarding", "1", err), "v6 forwarding");
	cr_assert(system(""
			 "ip addr add " HOST4 "/32 dev lo") == 0, "host backend address");
	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-svcpkt-XXXXXX");
	cr_assert(mkdtemp(pin_dir), "mkdtemp");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir);
	r = flowsdn_datapath_open(&o, &dp);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	make_endpoint(&epa, 21, "fsdnSA", A4, A6, FLOWSDN_EP_F_SVC_PACKET);
	make_endpoint(&epb, 22, "fsdnSB", B4, B6, 0);
	make_endpoint(&epc, 23, "fsdnSC", C4, C6, 0);
}

static void node_down(void)
{
	flowsdn_datapath_free(dp);
	dp = NULL;
	ns_kill(&epa.ns);
	ns_kill(&epb.ns);
	ns_kill(&epc.ns);
	if (pin_dir[0]) {
		umount2(pin_dir, MNT_DETACH);
		rmdir(pin_dir);
	}
}

Test(svc_packet, clusterip_tcp_udp_to_a_node_endpoint, .init = node_up, .fini = node_down, .timeout = 120)
{
	uint32_t tcp[] = { 1 }, udp[] = { 2 }, tcp6[] = { 3 }, udp6[] = { 4 };

	backend_put(1, AF_INET, B4, 8080, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	backend_put(2, AF_INET, B4, 5353, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE);
	backend_put(3, AF_INET6, B6, 8080, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	backend_put(4, AF_INET6, B6, 5353, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE);
	service_put(61, AF_INET, "10.96.1.10", 80, IPPROTO_TCP, tcp, 1);
	service_put(62, AF_INET, "10.96.1.10", 53, IPPROTO_UDP, udp, 1);
	service_put(63, AF_INET6, "fd00:96::10", 80, IPPROTO_TCP, tcp6, 1);
	service_put(64, AF_INET6, "fd00:96::10", 53, IPPROTO_UDP, udp6, 1);
	cr_assert_eq(l4_echo_via(epa.ns.path, epb.ns.path, B4, 8080, "10.96.1.10", 80, SOCK_STREAM), 0, "TCP");
	cr_assert_eq(l4_echo_via(epa.ns.path, epb.ns.path, B4, 5353, "10.96.1.10", 53, SOCK_DGRAM), 0, "UDP");
	cr_assert_eq(l4_echo_via(epa.ns.path, epb.ns.path, B6, 8080, "fd00:96::10", 80, SOCK_STREAM), 0, "TCP v6");
	cr_assert_eq(l4_echo_via(epa.ns.path, epb.ns.path, B6, 5353, "fd00:96::10", 53, SOCK_DGRAM), 0, "UDP v6");
	/* C has no FLOWSDN_EP_F_SVC_PACKET: its sockets are the socket LB's,
	 * the tc path leaves its packets alone (nothing answers 10.96.1.10). */
	cr_assert_neq(l4_echo_via(epc.ns.path, epb.ns.path, B4, 8080, "10.96.1.10", 80, SOCK_STREAM), 0,
		      "an unmarked endpoint must not be translated at tc");
}

Test(svc_packet, clusterip_to_a_host_process, .init = node_up, .fini = node_down, .timeout = 120)
{
	uint32_t tcp[] = { 5 }, udp[] = { 6 };

	backend_put(5, AF_INET, HOST4, 9090, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	backend_put(6, AF_INET, HOST4, 9053, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE);
	service_put(65, AF_INET, "10.96.1.20", 443, IPPROTO_TCP, tcp, 1);
	service_put(66, AF_INET, "10.96.1.20", 53, IPPROTO_UDP, udp, 1);
	cr_assert_eq(l4_echo_via(epa.ns.path, NULL, HOST4, 9090, "10.96.1.20", 443, SOCK_STREAM), 0, "TCP");
	cr_assert_eq(l4_echo_via(epa.ns.path, NULL, HOST4, 9053, "10.96.1.20", 53, SOCK_DGRAM), 0, "UDP");
}

SERIAL_TEST_MAIN()
