/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NodePort from outside with real packets, two simulated nodes (root):
 * node A is the test's own netns, node B a second one, each with its own
 * datapath and bpffs (pin directory) and from_uplink/to_uplink on its
 * uplink; "outside" a third netns, the client and the router between
 * the two nodes (A 192.0.2.1/24 and B 198.18.0.2/24 on two links of it).
 * On A:
 *   - NodePort TCP and UDP to a backend process on B: DNAT + SNAT to A's
 *     address and bpf_fib_lookup() + redirect back out of the uplink; the
 *     echo comes back only because B answers A (B's own route to the
 *     client bypasses A, and a reply from B's address would be refused
 *     by the client's connected socket);
 *   - traffic policy Local with only B's backend: refused, counted;
 *   - UDP to a closed port of B's backend, and of a host-process backend
 *     on A: the client's connected socket gets ECONNREFUSED, i.e. the
 *     ICMP port unreachable reached it about the NodePort address (the
 *     uplink's reverse translation of the error's outer and inner
 *     headers: bpf/node.bpf.c).
 * Services are written into A's pinned maps as <flowsdn/maps.h> lays
 * them out.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>

#include "diag-helpers.h"
#include "netns-helpers.h"

static char pin_dir[64]; /* node A's: what svc-helpers.h writes to */

#include "bpf/svc-helpers.h"

DIAG_TEST_HELPERS(flowsdn)

#define NODE_A "192.0.2.1"
#define CLIENT "192.0.2.254" /* outside: the client, and the router to B */
#define NODE_B "198.18.0.2"

static char pin_b[64];
static struct flowsdn_datapath *dp_a, *dp_b;
static struct test_ns outside, node_b;

/* Opens a datapath on @dir and attaches its uplink programs to @ifname
 * with the node address @addr, in the calling thread's netns. */
static struct flowsdn_datapath *node_datapath(char *dir, size_t size, const char *ifname, const char *addr)
{
	struct flowsdn_datapath *d = NULL;
	struct flowsdn_addr a;
	int r, ifindex = (int)if_nametoindex(ifname);

	cr_assert(ifindex > 0, "%s", ifname);
	snprintf(dir, size, "/tmp/flowsdn-nodeport-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = dir);
	r = flowsdn_datapath_open(&o, &d);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	ASSERT_OK(flowsdn_addr_parse(addr, strlen(addr), &a), "node address");
	FLOWSDN_OPTS(flowsdn_uplink_opts, u, .addr4 = &a);
	r = flowsdn_datapath_uplink_attach(d, ifindex, &u);
	cr_assert(r == 0, "uplink attach %s: %s", ifname, flowsdn_strerror(r));
	return d;
}

static void enter_ns(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert(fd >= 0 && setns(fd, CLONE_NEWNET) == 0, "setns %s", path);
	close(fd);
}

static void setup(void)
{
	char cmd[512];
	int self;

	node_enter();
	ns_spawn(&outside);
	ns_spawn(&node_b);
	snprintf(cmd, sizeof(cmd),
		 "ip link add fsn0 type veth peer name fsn1 && ip link set fsn1 netns %d && "
		 "ip link add fsn2 type veth peer name fsn3 && ip link set fsn2 netns %d && ip link set fsn3 netns %d && "
		 "ip addr add " NODE_A "/24 dev fsn0 && ip link set fsn0 up && "
		 "ip route add 198.18.0.0/24 via " CLIENT " && sysctl -qw net.ipv4.ip_forward=1",
		 (int)outside.pid, (int)outside.pid, (int)node_b.pid);
	cr_assert(system(cmd) == 0, "node A's uplink");
	cr_assert(run_in(outside.path, "ip addr add " CLIENT "/24 dev fsn1 && ip link set fsn1 up && "
				       "ip addr add 198.18.0.254/24 dev fsn2 && ip link set fsn2 up && "
				       "sysctl -qw net.ipv4.ip_forward=1") == 0,
		  "outside");
	cr_assert(run_in(node_b.path, "ip addr add " NODE_B "/24 dev fsn3 && ip link set fsn3 up && "
				      "ip route add default via 198.18.0.254 && sysctl -qw net.ipv4.ip_forward=1") == 0,
		  "node B's uplink");
	dp_a = node_datapath(pin_dir, sizeof(pin_dir), "fsn0", NODE_A);
	/* Node B: its own datapath and bpffs, attached from inside it. */
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	cr_assert(self >= 0);
	enter_ns(node_b.path);
	dp_b = node_datapath(pin_b, sizeof(pin_b), "fsn3", NODE_B);
	cr_assert(setns(self, CLONE_NEWNET) == 0, "back to node A");
	close(self);
}

static void teardown(void)
{
	flowsdn_datapath_free(dp_a);
	flowsdn_datapath_free(dp_b);
	dp_a = dp_b = NULL;
	ns_kill(&outside);
	ns_kill(&node_b);
	node_unpin(pin_dir);
	node_unpin(pin_b);
}

TestSuite(nodeport, .init = setup, .fini = teardown, .timeout = 120);

/* A UDP datagram from netns @from to @ip:@port, on a connected socket:
 * 0 when the socket reports ECONNREFUSED (an ICMP port unreachable about
 * exactly that destination), 1 on silence, 2 on an answer. */
static int udp_refused(const char *from, const char *ip, int port)
{
	pid_t pid = fork_in(from);
	int st;

	if (pid == 0) {
		struct sockaddr_storage ss;
		socklen_t len = sockaddr_of(ip, port, &ss);
		int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		char buf[16];

		if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0)
			_exit(3);
		set_timeouts(fd, 1000);
		for (int i = 0; i < 3; i++) {
			if (send(fd, "ping", 4, 0) < 0)
				_exit(errno == ECONNREFUSED ? 0 : 3);
			if (recv(fd, buf, sizeof(buf), 0) >= 0)
				_exit(2);
			if (errno == ECONNREFUSED)
				_exit(0);
		}
		_exit(1);
	}
	cr_assert(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(nodeport, tcp_and_udp_to_a_backend_on_another_node_are_snated_and_fib_redirected)
{
	uint32_t tcp[] = { 1 }, udp[] = { 2 };

	backend_put_flags(1, AF_INET, NODE_B, 8080, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE, FLOWSDN_BACKEND_F_REMOTE);
	backend_put_flags(2, AF_INET, NODE_B, 8053, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE, FLOWSDN_BACKEND_F_REMOTE);
	service_put_flags(71, AF_INET, "0.0.0.0", 30080, IPPROTO_TCP, tcp, 1, FLOWSDN_SVC_F_NODEPORT);
	service_put_flags(72, AF_INET, "0.0.0.0", 30053, IPPROTO_UDP, udp, 1, FLOWSDN_SVC_F_NODEPORT);
	cr_assert_eq(l4_echo_via(outside.path, node_b.path, NODE_B, 8080, NODE_A, 30080, SOCK_STREAM), 0, "TCP");
	cr_assert_eq(l4_echo_via(outside.path, node_b.path, NODE_B, 8053, NODE_A, 30053, SOCK_DGRAM), 0, "UDP");
}

Test(nodeport, local_traffic_policy_refuses_to_forward_off_node)
{
	uint32_t ids[] = { 3 };
	uint64_t before = dp_drops(flowsdn_datapath_maps(dp_a), FLOWSDN_DROP_LOCAL_ONLY);

	backend_put_flags(3, AF_INET, NODE_B, 8081, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE, FLOWSDN_BACKEND_F_REMOTE);
	service_put_flags(73, AF_INET, "0.0.0.0", 30081, IPPROTO_TCP, ids, 1,
			  FLOWSDN_SVC_F_NODEPORT | FLOWSDN_SVC_F_LOCAL);
	cr_assert_neq(l4_echo_via(outside.path, node_b.path, NODE_B, 8081, NODE_A, 30081, SOCK_STREAM), 0,
		      "Local must not forward to another node");
	cr_assert_gt(dp_drops(flowsdn_datapath_maps(dp_a), FLOWSDN_DROP_LOCAL_ONLY), before, "counted as LOCAL_ONLY");
}

Test(nodeport, closed_udp_port_of_a_remote_backend_is_refused_about_the_nodeport)
{
	uint32_t ids[] = { 4 };

	backend_put_flags(4, AF_INET, NODE_B, 8054, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE, FLOWSDN_BACKEND_F_REMOTE);
	service_put_flags(74, AF_INET, "0.0.0.0", 30054, IPPROTO_UDP, ids, 1, FLOWSDN_SVC_F_NODEPORT);
	cr_assert_eq(udp_refused(outside.path, NODE_A, 30054), 0,
		     "the client gets the port unreachable about " NODE_A ":30054");
}

Test(nodeport, closed_udp_port_of_a_host_backend_is_refused_about_the_nodeport)
{
	uint32_t ids[] = { 5 };

	backend_put(5, AF_INET, NODE_A, 8055, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE);
	service_put_flags(75, AF_INET, "0.0.0.0", 30055, IPPROTO_UDP, ids, 1, FLOWSDN_SVC_F_NODEPORT);
	cr_assert_eq(udp_refused(outside.path, NODE_A, 30055), 0,
		     "the client gets the port unreachable about " NODE_A ":30055");
}

SERIAL_TEST_MAIN()
