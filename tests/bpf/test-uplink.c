/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The uplink program (bpf/node.bpf.c, attached by
 * flowsdn_datapath_uplink_attach() to a uplink veth of the test's own
 * namespace) on crafted packets (BPF_PROG_TEST_RUN, root): NodePort and
 * LoadBalancer traffic from outside DNATed to a backend endpoint of the
 * node and its replies translated back by the endpoint programs; to
 * another node's backend SNATed to the node's address and a port of the
 * SNAT range, and its replies restored; traffic policy Local refusing to
 * forward off-node; source ranges dropping a denied client; IPv6; the
 * host firewall judging what is for the node, never what NodePort
 * translates; a host-process backend's replies leaving through to_uplink
 * with the NodePort as their source; ICMP/ICMPv6 errors about translated
 * flows (from a remote backend or a router on the way, and from a
 * host-process backend leaving through to_uplink) reverse-translated,
 * quote and outer header.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
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
static int prog_up, prog_from, prog_to_up;

static const uint8_t mac_b[6] = { 2, 0, 0, 0, 0, 0xb }, host_b[6] = { 2, 0, 0, 0, 1, 0xb };
static const uint8_t mac_out[6] = { 2, 0, 0, 0, 9, 9 }, mac_up[6] = { 2, 0, 0, 0, 9, 1 };

static void log_cb(enum flowsdn_log_level level, const char *msg, void *u)
{
	(void)u;
	if (level <= FLOWSDN_LOG_WARNING)
		fprintf(stderr, "flowsdn: %s\n", msg);
}

static void setup(void)
{
	struct flowsdn_addr a4, a6;
	struct flowsdn_endpoint e = { .id = 2, .identity = 5002, .host_ifindex = 1, .n_addrs = 2 };
	char name[64];
	int r, up;

	node_enter();
	flowsdn_set_log(log_cb, FLOWSDN_LOG_WARNING, NULL);
	cr_assert(system("ip link add up0 type veth peer name up1 && ip link set up0 up && ip link set up1 up") == 0, "uplink veth");
	up = (int)if_nametoindex("up0");
	cr_assert(up > 0);
	dp = dp_open(pin_dir, sizeof(pin_dir), "uplinktest", NULL, &maps);
	ASSERT_OK(flowsdn_addr_parse("192.0.2.1", 9, &a4), "node address");
	ASSERT_OK(flowsdn_addr_parse("2001:db8:1::1", 13, &a6), "node address 6");
	FLOWSDN_OPTS(flowsdn_uplink_opts, uo, .addr4 = &a4, .addr6 = &a6, .snat_port_min = 62000,
		     .snat_port_max = 62009);
	r = flowsdn_datapath_uplink_attach(dp, up, &uo);
	cr_assert(r == 0, "uplink attach: %s", flowsdn_strerror(r));
	snprintf(name, sizeof(name), "prog_from_uplink_%d", up);
	prog_up = dp_pinned(pin_dir, name);
	snprintf(name, sizeof(name), "prog_to_uplink_%d", up);
	prog_to_up = dp_pinned(pin_dir, name);
	prog_from = dp_pinned(pin_dir, "prog_from_container");
	/* B: a backend endpoint of this node (its host veth: lo for test runs). */
	memcpy(e.mac, mac_b, 6);
	memcpy(e.host_mac, host_b, 6);
	ASSERT_OK(flowsdn_addr_parse("10.0.0.2", 8, &e.addrs[0]), "b");
	ASSERT_OK(flowsdn_addr_parse("fd00::2", 7, &e.addrs[1]), "b6");
	ASSERT_OK(flowsdn_maps_endpoint_publish(maps, &e), "publish");
}

static void teardown(void)
{
	dp_close(&dp, pin_dir);
}

static uint64_t drops(unsigned int reason)
{
	return dp_drops(maps, reason);
}

static void nodeport_to_local(int family, const char *client, const char *node, const char *b)
{
	uint32_t ids[] = { 7 };
	struct frame f;

	backend_put(7, family, b, 8080, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	/* NodePort: on every node address (frontend address zero). */
	service_put_flags(50, family, family == AF_INET ? "0.0.0.0" : "::", 30080, IPPROTO_TCP, ids, 1,
			  FLOWSDN_SVC_F_NODEPORT);
	f = packet(family, IPPROTO_TCP, client, 50000, node, 30080, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_REDIRECT, "into the backend endpoint");
	check_tuple(&f, client, 50000, b, 8080);
	/* The endpoint's reply leaves with the node's address and NodePort. */
	f = packet(family, IPPROTO_TCP, b, 8080, client, 50000, mac_b, host_b, true);
	run(prog_from, &f);
	check_tuple(&f, node, 30080, client, 50000);
	/* The next packet from outside follows the flow. */
	f = packet(family, IPPROTO_TCP, client, 50000, node, 30080, mac_out, mac_up, true);
	cr_assert_eq(run(prog_up, &f), TC_ACT_REDIRECT);
	check_tuple(&f, client, 50000, b, 8080);
}

Test(uplink, nodeport_to_a_local_backend, .init = setup, .fini = teardown)
{
	nodeport_to_local(AF_INET, "203.0.113.7", "192.0.2.1", "10.0.0.2");
}

Test(uplink, nodeport_to_a_local_backend_ipv6, .init = setup, .fini = teardown)
{
	nodeport_to_local(AF_INET6, "2001:db8:ff::7", "2001:db8:1::1", "fd00::2");
}

Test(uplink, loadbalancer_to_a_remote_backend_is_snated, .init = setup, .fini = teardown)
{
	uint32_t ids[] = { 8 };
	struct frame f;
	uint16_t nat;

	backend_put_flags(8, AF_INET, "10.1.0.5", 8080, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE, FLOWSDN_BACKEND_F_REMOTE);
	service_put_flags(51, AF_INET, "198.51.100.80", 53, IPPROTO_UDP, ids, 1, FLOWSDN_SVC_F_LOADBALANCER);
	f = packet(AF_INET, IPPROTO_UDP, "203.0.113.7", 40000, "198.51.100.80", 53, mac_out, mac_up, false);
	run(prog_up, &f);
	nat = (uint16_t)(L4(&f)[0] << 8 | L4(&f)[1]);
	cr_assert(nat >= 62000 && nat <= 62009, "SNAT port %u outside 62000-62009", nat);
	check_tuple(&f, "192.0.2.1", nat, "10.1.0.5", 8080);
	/* The remote backend answers the node; the client gets it from the LB IP. */
	f = packet(AF_INET, IPPROTO_UDP, "10.1.0.5", 8080, "192.0.2.1", nat, mac_out, mac_up, false);
	run(prog_up, &f);
	check_tuple(&f, "198.51.100.80", 53, "203.0.113.7", 40000);
	/* The flow's next packet takes the same way out. */
	f = packet(AF_INET, IPPROTO_UDP, "203.0.113.7", 40000, "198.51.100.80", 53, mac_out, mac_up, false);
	run(prog_up, &f);
	check_tuple(&f, "192.0.2.1", nat, "10.1.0.5", 8080);
}

Test(uplink, local_policy_refuses_off_node_and_source_ranges_drop, .init = setup, .fini = teardown)
{
	uint32_t ids[] = { 8 }, local[] = { 7 };
	struct flowsdn_prefix deny;
	uint64_t before = drops(FLOWSDN_DROP_LOCAL_ONLY), denied = drops(FLOWSDN_DROP_SOURCE_RANGE);
	struct frame f;

	backend_put_flags(8, AF_INET, "10.1.0.5", 8080, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE, FLOWSDN_BACKEND_F_REMOTE);
	service_put_flags(52, AF_INET, "198.51.100.81", 80, IPPROTO_TCP, ids, 1,
			  FLOWSDN_SVC_F_LOADBALANCER | FLOWSDN_SVC_F_LOCAL);
	f = packet(AF_INET, IPPROTO_TCP, "203.0.113.7", 40001, "198.51.100.81", 80, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_SHOT, "Local: never off-node");
	cr_assert_eq(drops(FLOWSDN_DROP_LOCAL_ONLY), before + 1);

	backend_put(7, AF_INET, "10.0.0.2", 8080, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	service_put_flags(53, AF_INET, "198.51.100.82", 80, IPPROTO_TCP, local, 1, FLOWSDN_SVC_F_LOADBALANCER);
	ASSERT_OK(flowsdn_prefix_parse("203.0.113.7/32", 14, NULL, &deny), "prefix");
	ASSERT_OK(flowsdn_maps_srcrange_set(maps, 53, NULL, 0, &deny, 1), "deny the client");
	f = packet(AF_INET, IPPROTO_TCP, "203.0.113.7", 40002, "198.51.100.82", 80, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_SHOT, "denied source");
	cr_assert_eq(drops(FLOWSDN_DROP_SOURCE_RANGE), denied + 1);
	f = packet(AF_INET, IPPROTO_TCP, "203.0.113.8", 40002, "198.51.100.82", 80, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_REDIRECT, "another client is let in");
	check_tuple(&f, "203.0.113.8", 40002, "10.0.0.2", 8080);
}

Test(uplink, detach_removes_the_program, .init = setup, .fini = teardown)
{
	char path[128];
	int up = (int)if_nametoindex("up0");

	ASSERT_OK(flowsdn_datapath_uplink_detach(dp, up), "detach");
	snprintf(path, sizeof(path), "%s/prog_from_uplink_%d", pin_dir, up);
	cr_assert(access(path, F_OK) < 0 && errno == ENOENT, "pin removed");
	cr_assert(system("tc filter show dev up0 ingress | grep -q bpf") != 0, "no filter left");
	ASSERT_OK(flowsdn_datapath_uplink_detach(dp, up), "detach again");
}

/* The host firewall (bpf/lib/hostfw.h): what is for the node is judged,
 * what NodePort translates to a backend is not; audit never drops. */
Test(uplink, host_firewall_judges_what_is_for_the_node_only, .init = setup, .fini = teardown)
{
	struct flowsdn_policy_map_entry allow = { 0 };
	struct flowsdn_hostfw_counters c0, c1;
	uint32_t ids[] = { 9 };
	struct frame f;

	/* One host rule: TCP 8080 from anyone; enforce. */
	ASSERT_OK(flowsdn_policy_key_make(FLOWSDN_HOSTFW_EP_ID, FLOWSDN_DIR_INGRESS, FLOWSDN_IDENTITY_ANY, IPPROTO_TCP,
					  8080, 16, &allow.key),
		  "key");
	allow.rule_id = 77;
	ASSERT_OK(flowsdn_maps_hostfw_switch(maps, NULL, 0, &allow, 1, FLOWSDN_EP_F_ENFORCE_INGRESS,
					     FLOWSDN_HOSTFW_ENFORCE),
		  "enforce");
	ASSERT_OK(flowsdn_maps_hostfw_counters(maps, &c0), "counters");
	/* NodePort 30081 -> the backend endpoint's 9090: no host rule allows
	 * either port, and it goes through. */
	backend_put(9, AF_INET, "10.0.0.2", 9090, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	service_put_flags(51, AF_INET, "0.0.0.0", 30081, IPPROTO_TCP, ids, 1, FLOWSDN_SVC_F_NODEPORT);
	f = packet(AF_INET, IPPROTO_TCP, "203.0.113.7", 50001, "192.0.2.1", 30081, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_REDIRECT, "NodePort: into the backend, not judged by the host firewall");
	check_tuple(&f, "203.0.113.7", 50001, "10.0.0.2", 9090);
	/* For the node itself: a denied port dropped, the allowed one passes. */
	f = packet(AF_INET, IPPROTO_TCP, "203.0.113.7", 50002, "192.0.2.1", 22, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_SHOT, "port 22 refused");
	f = packet(AF_INET, IPPROTO_UDP, "203.0.113.7", 50003, "192.0.2.1", 8080, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_SHOT, "UDP 8080 refused (the rule is TCP)");
	f = packet(AF_INET, IPPROTO_TCP, "203.0.113.7", 50004, "192.0.2.1", 8080, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_OK, "TCP 8080 to the stack");
	ASSERT_OK(flowsdn_maps_hostfw_counters(maps, &c1), "counters");
	cr_assert_eq(c1.denied - c0.denied, 2, "two refused");
	cr_assert_eq(c1.allowed - c0.allowed, 1, "one allowed (the NodePort flow is not counted)");
	{
		struct flowsdn_policy_key k = allow.key;
		struct flowsdn_policy_value v;
		struct flowsdn_hostfw_state st;

		ASSERT_OK(flowsdn_maps_hostfw_state(maps, &st), "state");
		k.ep_id = FLOWSDN_POLICY_KEY_ID(FLOWSDN_HOSTFW_EP_ID, st.policy_gen);
		ASSERT_OK(flowsdn_maps_policy_get(maps, &k, &v), "the rule's entry");
		cr_assert(v.rule_id == 77 && v.packets == 1, "the rule counted its packet (rule %u, %llu)", v.rule_id,
			  (unsigned long long)v.packets);
	}
	cr_assert_geq(dp_drops(maps, FLOWSDN_DROP_POLICY_DEFAULT), 2, "in the drop table");
	/* Audit: the same refused packet passes, counted. */
	ASSERT_OK(flowsdn_maps_hostfw_switch(maps, &allow, 1, &allow, 1, FLOWSDN_EP_F_ENFORCE_INGRESS,
					     FLOWSDN_HOSTFW_AUDIT),
		  "audit");
	f = packet(AF_INET, IPPROTO_TCP, "203.0.113.7", 50005, "192.0.2.1", 22, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_OK, "audit lets port 22 through");
	ASSERT_OK(flowsdn_maps_hostfw_counters(maps, &c0), "counters");
	cr_assert_eq(c0.audited - c1.audited, 1, "and counts it");
	cr_assert_eq(c0.denied, c1.denied);
}

/* A remote backend's (or a router's) ICMP error about a SNATed flow: back
 * to the client, about the flow as the client sent it.  @svc_addr: the
 * service's frontend address (zero for a NodePort, @flags saying so);
 * @front: the address the client sends to. */
static void icmp_about_remote(int family, const char *client, const char *svc_addr, uint8_t flags, const char *front,
			      uint16_t front_port, const char *node, const char *backend, const char *router)
{
	uint32_t ids[] = { 8 };
	uint8_t unreach = family == AF_INET ? 3 : 1, too_big = family == AF_INET ? 3 : 2;
	struct frame f, e;
	uint16_t nat;

	backend_put_flags(8, family, backend, 8080, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE, FLOWSDN_BACKEND_F_REMOTE);
	service_put_flags(54, family, svc_addr, front_port, IPPROTO_UDP, ids, 1, flags);
	f = packet(family, IPPROTO_UDP, client, 40010, front, front_port, mac_out, mac_up, false);
	run(prog_up, &f);
	nat = (uint16_t)(L4(&f)[0] << 8 | L4(&f)[1]);
	check_tuple(&f, node, nat, backend, 8080);
	/* The backend's port is closed: port unreachable from the backend. */
	e = icmp_error(family, backend, node, unreach, family == AF_INET ? 3 : 4, 0, &f, mac_out, mac_up);
	run(prog_up, &e);
	check_icmp_error(&e, front, client, unreach, client, 40010, front, front_port);
	/* A router on the way: fragmentation needed / packet too big; its
	 * own address stays the source, the MTU as it said. */
	e = icmp_error(family, router, node, too_big, family == AF_INET ? 4 : 0, 1280, &f, mac_out, mac_up);
	run(prog_up, &e);
	check_icmp_error(&e, router, client, too_big, client, 40010, front, front_port);
	cr_assert_eq(L4(&e)[6] << 8 | L4(&e)[7], 1280, "the MTU stays");
}

Test(uplink, icmp_errors_about_a_remote_backend_flow_reach_the_client, .init = setup, .fini = teardown)
{
	icmp_about_remote(AF_INET, "203.0.113.7", "198.51.100.80", FLOWSDN_SVC_F_LOADBALANCER, "198.51.100.80", 53,
			  "192.0.2.1", "10.1.0.5", "192.0.2.254");
}

Test(uplink, icmpv6_errors_about_a_nodeport_flow_to_a_remote_backend_reach_the_client, .init = setup,
     .fini = teardown)
{
	icmp_about_remote(AF_INET6, "2001:db8:ff::7", "::", FLOWSDN_SVC_F_NODEPORT, "2001:db8:1::1", 30053,
			  "2001:db8:1::1", "fd00:1::5", "2001:db8:1::fe");
}

/* A host-process backend (the node's own address): the node's port
 * unreachable leaves through to_uplink about the NodePort. */
Test(uplink, icmp_error_from_a_host_backend_is_translated_on_the_way_out, .init = setup, .fini = teardown)
{
	uint32_t ids[] = { 10 };
	struct frame f, e;

	backend_put(10, AF_INET, "192.0.2.1", 8053, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE);
	service_put_flags(55, AF_INET, "0.0.0.0", 30054, IPPROTO_UDP, ids, 1, FLOWSDN_SVC_F_NODEPORT);
	f = packet(AF_INET, IPPROTO_UDP, "203.0.113.9", 40020, "192.0.2.1", 30054, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_OK, "to the host stack");
	check_tuple(&f, "203.0.113.9", 40020, "192.0.2.1", 8053);
	e = icmp_error(AF_INET, "192.0.2.1", "203.0.113.9", 3, 3, 0, &f, mac_up, mac_out);
	cr_assert_eq(run(prog_to_up, &e), TC_ACT_OK);
	check_icmp_error(&e, "192.0.2.1", "203.0.113.9", 3, "203.0.113.9", 40020, "192.0.2.1", 30054);
}

/* A host-process backend's replies (TCP and UDP, IPv4 and IPv6) leave
 * through to_uplink with the NodePort as their source; the node's other
 * traffic is left as it came. */
static void host_backend_reply(int family, int proto, const char *client, const char *node, uint32_t id)
{
	uint32_t ids[] = { id };
	struct frame f, other, before;

	backend_put(id, family, node, 8090, proto, FLOWSDN_BACKEND_ACTIVE);
	service_put_flags(60 + id, family, family == AF_INET ? "0.0.0.0" : "::", 30090, proto, ids, 1,
			  FLOWSDN_SVC_F_NODEPORT);
	f = packet(family, proto, client, 40030, node, 30090, mac_out, mac_up, false);
	cr_assert_eq(run(prog_up, &f), TC_ACT_OK, "to the host stack");
	check_tuple(&f, client, 40030, node, 8090);
	f = packet(family, proto, node, 8090, client, 40030, mac_up, mac_out, true);
	cr_assert_eq(run(prog_to_up, &f), TC_ACT_OK);
	check_tuple(&f, node, 30090, client, 40030);
	/* The node's own flow from the backend's port to someone else. */
	other = packet(family, proto, node, 8090, client, 40031, mac_up, mac_out, false);
	before = other;
	cr_assert_eq(run(prog_to_up, &other), TC_ACT_OK);
	cr_assert(!memcmp(other.b, before.b, other.len), "another flow untouched");
}

Test(uplink, replies_of_a_host_backend_leave_with_the_nodeport, .init = setup, .fini = teardown)
{
	host_backend_reply(AF_INET, IPPROTO_TCP, "203.0.113.9", "192.0.2.1", 11);
	host_backend_reply(AF_INET, IPPROTO_UDP, "203.0.113.9", "192.0.2.1", 12);
	host_backend_reply(AF_INET6, IPPROTO_TCP, "2001:db8:9::9", "2001:db8:1::1", 13);
	host_backend_reply(AF_INET6, IPPROTO_UDP, "2001:db8:9::9", "2001:db8:1::1", 14);
}

/* An error about no translated flow is the host's: left as it came. */
Test(uplink, icmp_error_about_an_unknown_flow_is_left_alone, .init = setup, .fini = teardown)
{
	struct frame f = packet(AF_INET, IPPROTO_UDP, "192.0.2.1", 62005, "10.1.0.99", 8080, mac_up, mac_out, false);
	struct frame e = icmp_error(AF_INET, "10.1.0.99", "192.0.2.1", 3, 3, 0, &f, mac_out, mac_up), before = e;

	cr_assert_eq(run(prog_up, &e), TC_ACT_OK, "to the host stack");
	cr_assert(!memcmp(e.b, before.b, e.len), "untouched");
	e = before;
	cr_assert_eq(run(prog_to_up, &e), TC_ACT_OK);
	cr_assert(!memcmp(e.b, before.b, e.len), "untouched on the way out");
}
