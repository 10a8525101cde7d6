/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The socket load balancer end to end (root): services published with
 * flowsdn_maps_service_publish() into a private bpffs, the sock programs
 * attached to a cgroup this test creates under the cgroup v2 mount (never
 * the machine's root cgroup), backends served in a netns of their own,
 * and clients forked into the test cgroup.  TCP and UDP, IPv4, IPv6 and
 * IPv4-mapped IPv6; getpeername and UDP replies show the frontend;
 * affinity; selection switched live from random to Maglev; terminating
 * backends get no new flows while their connections go on; a service
 * without backend refuses; a process outside the cgroup is not translated;
 * a removed UDP backend's client sockets are destroyed, a host process's
 * and a runc-style endpoint's (in its own netns).
 *
 * Each test runs in its own process that first becomes its own node
 * (private netns + mount ns, netns-helpers.h); the cgroup is removed in
 * .fini once its clients are gone.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <flowsdn/datapath.h>
#include <flowsdn/maglev.h>
#include <flowsdn/netlink.h>

#include "netns-helpers.h"
#include "socklb-helpers.h"

static struct socklb_node node;

static void setup(void)
{
	socklb_node_up(&node);
}

static void teardown(void)
{
	socklb_node_down(&node);
}

TestSuite(socklb, .init = setup, .fini = teardown, .timeout = 120);

/* @n TCP connections to @ip:@port from the cgroup: how many reached each
 * backend (index by socklb_backend_index()); every one must succeed and
 * getpeername() must show the frontend. */
static void tcp_spread(const char *ip, int port, int n, int *counts)
{
	for (int i = 0; i < n; i++) {
		struct socklb_result r;

		socklb_run(&node, SOCKLB_TCP, ip, port, 1, &r);
		cr_assert(r.err == 0, "TCP %s:%d #%d: %s", ip, port, i, strerror(r.err));
		cr_assert_str_eq(r.peer, socklb_frontend_text(ip, port), "getpeername shows the frontend");
		counts[socklb_backend_index(r.who[0])]++;
	}
}

Test(socklb, tcp_clusterip_v4_spreads_and_shows_frontend)
{
	int counts[SOCKLB_BACKENDS] = { 0 };
	struct socklb_result r;

	socklb_publish(&node, 1, "10.96.0.10", 80, IPPROTO_TCP, SOCKLB_B2 | SOCKLB_B3, 0, 0, NULL);
	tcp_spread("10.96.0.10", 80, 20, counts);
	cr_assert(counts[0] > 0 && counts[1] > 0, "random choice uses both backends: %d %d", counts[0], counts[1]);
	/* Outside the cgroup nothing is translated: no route to the ClusterIP. */
	socklb_run_outside(&node, SOCKLB_TCP, "10.96.0.10", 80, &r);
	cr_assert(r.err != 0, "a process outside the cgroup reached the ClusterIP");
}

Test(socklb, udp_clusterip_v4_replies_come_from_frontend)
{
	struct socklb_result r;

	socklb_publish(&node, 1, "10.96.0.11", 53, IPPROTO_UDP, SOCKLB_B2, 0, 0, NULL);
	socklb_run(&node, SOCKLB_UDP_CONNECTED, "10.96.0.11", 53, 1, &r);
	cr_assert(r.err == 0, "connected UDP: %s", strerror(r.err));
	cr_assert_str_eq(r.who, "2", "answered by the backend");
	cr_assert_str_eq(r.peer, "10.96.0.11:53", "getpeername of a connected UDP socket");
	cr_assert_str_eq(r.from, "10.96.0.11:53", "the reply's source is the ClusterIP");
	socklb_run(&node, SOCKLB_UDP_SENDTO, "10.96.0.11", 53, 1, &r);
	cr_assert(r.err == 0, "unconnected UDP: %s", strerror(r.err));
	cr_assert_str_eq(r.who, "2");
	cr_assert_str_eq(r.from, "10.96.0.11:53", "recvfrom() shows the ClusterIP");
}

/* A connected socket's frontend is recorded under its cookie and backend
 * (flowsdn_sock_rnat) and forgotten when it connects again: connected
 * again to the backend's own address, it shows that address. */
Test(socklb, a_socket_connected_again_elsewhere_forgets_its_frontend)
{
	int p[2], st;
	char got[2][64] = { "", "" };
	ssize_t n;
	pid_t pid;

	socklb_publish(&node, 1, "10.96.0.12", 53, IPPROTO_UDP, SOCKLB_B2, 0, 0, NULL);
	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		struct sockaddr_storage ss, peer;
		socklen_t len, plen;
		int fd;

		close(p[0]);
		socklb_join(&node); /* before socket(): a socket's cgroup is the one it was made in */
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		len = sockaddr_of("10.96.0.12", 53, &ss);
		plen = sizeof(peer);
		if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0 ||
		    getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
			_exit(errno);
		socklb_format(&peer, got[0], sizeof(got[0]));
		len = sockaddr_of("10.210.1.2", SOCKLB_PORT, &ss); /* the very backend it was given */
		plen = sizeof(peer);
		if (connect(fd, (struct sockaddr *)&ss, len) < 0 || getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
			_exit(128 + errno);
		socklb_format(&peer, got[1], sizeof(got[1]));
		_exit(write(p[1], got, sizeof(got)) == (ssize_t)sizeof(got) ? 0 : 3);
	}
	close(p[1]);
	n = read(p[0], got, sizeof(got));
	close(p[0]);
	cr_assert(waitpid(pid, &st, 0) == pid);
	/* errno of the first connect, or 128 + errno of the second. */
	cr_assert(n == (ssize_t)sizeof(got), "client child failed: %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	cr_assert_str_eq(got[0], "10.96.0.12:53", "connected to the ClusterIP");
	cr_assert_str_eq(got[1], socklb_frontend_text("10.210.1.2", SOCKLB_PORT),
			 "connected again to the backend itself: no frontend shown");
}

Test(socklb, ipv6_and_v4_mapped)
{
	struct socklb_result r;

	socklb_publish(&node, 1, "fd00:96::10", 80, IPPROTO_TCP, SOCKLB_B2_6, 0, 0, NULL);
	socklb_run(&node, SOCKLB_TCP, "fd00:96::10", 80, 1, &r);
	cr_assert(r.err == 0, "TCP over IPv6: %s", strerror(r.err));
	cr_assert_str_eq(r.who, "2", "IPv6 backend");
	cr_assert_str_eq(r.peer, "[fd00:96::10]:80");

	socklb_publish(&node, 2, "fd00:96::11", 53, IPPROTO_UDP, SOCKLB_B3_6, 0, 0, NULL);
	socklb_run(&node, SOCKLB_UDP_SENDTO, "fd00:96::11", 53, 1, &r);
	cr_assert(r.err == 0, "UDP over IPv6: %s", strerror(r.err));
	cr_assert_str_eq(r.who, "3");
	cr_assert_str_eq(r.from, "[fd00:96::11]:53", "IPv6 reply from the frontend");

	socklb_publish(&node, 3, "10.96.0.12", 80, IPPROTO_TCP, SOCKLB_B3, 0, 0, NULL);
	socklb_run(&node, SOCKLB_TCP, "::ffff:10.96.0.12", 80, 1, &r);
	cr_assert(r.err == 0, "TCP to an IPv4-mapped frontend: %s", strerror(r.err));
	cr_assert_str_eq(r.who, "3");
	cr_assert_str_eq(r.peer, "[::ffff:10.96.0.12]:80", "getpeername keeps the mapped frontend");

	socklb_publish(&node, 4, "10.96.0.13", 53, IPPROTO_UDP, SOCKLB_B2, 0, 0, NULL);
	socklb_run(&node, SOCKLB_UDP_SENDTO, "::ffff:10.96.0.13", 53, 1, &r);
	cr_assert(r.err == 0, "UDP to an IPv4-mapped frontend: %s", strerror(r.err));
	cr_assert_str_eq(r.who, "2");
	cr_assert_str_eq(r.from, "[::ffff:10.96.0.13]:53");
	/* The closed TCP sockets' records (IPv6, and IPv4 through a mapped
	 * address) went at release; the two unconnected UDP sockets' stay
	 * for the LRU. */
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_SOCK_REVNAT) == 2, "%zu records, not the 2 of unconnected UDP",
		  socklb_map_count(&node, FLOWSDN_MAP_SOCK_REVNAT));
}

Test(socklb, affinity_keeps_a_client_on_one_backend)
{
	int counts[SOCKLB_BACKENDS] = { 0 };

	socklb_publish(&node, 1, "10.96.0.20", 80, IPPROTO_TCP, SOCKLB_B2 | SOCKLB_B3, FLOWSDN_SVC_F_AFFINITY, 600,
		       NULL);
	tcp_spread("10.96.0.20", 80, 20, counts);
	cr_assert((counts[0] == 20) != (counts[1] == 20), "ClientIP affinity: %d %d", counts[0], counts[1]);
}

Test(socklb, selection_switched_live_random_to_maglev)
{
	struct socklb_result r;
	struct flowsdn_service_value before, after;
	struct flowsdn_addr fa;
	int seen[SOCKLB_BACKENDS] = { 0 };
	static uint32_t table[251];

	ASSERT_OK(flowsdn_addr_parse("10.96.0.30", 10, &fa), "addr");
	socklb_publish(&node, 1, "10.96.0.30", 53, IPPROTO_UDP, SOCKLB_B2 | SOCKLB_B3, 0, 0, NULL);
	ASSERT_OK(flowsdn_maps_service_lookup(node.maps, &fa, 53, IPPROTO_UDP, FLOWSDN_SVC_SCOPE_EXTERNAL, &before),
		  "lookup");
	/* Random: each datagram of one unconnected socket chooses again. */
	socklb_run(&node, SOCKLB_UDP_SENDTO, "10.96.0.30", 53, 20, &r);
	cr_assert(r.err == 0, "random: %s", strerror(r.err));
	for (int i = 0; i < 20; i++)
		seen[socklb_backend_index(r.who[i])]++;
	cr_assert(seen[0] > 0 && seen[1] > 0, "random: %d %d", seen[0], seen[1]);

	/* Maglev, same service (PUT again): the socket's hash keeps it on one backend. */
	socklb_publish(&node, 1, "10.96.0.30", 53, IPPROTO_UDP, SOCKLB_B2 | SOCKLB_B3, FLOWSDN_SVC_F_MAGLEV, 0, NULL);
	ASSERT_OK(flowsdn_maps_service_lookup(node.maps, &fa, 53, IPPROTO_UDP, FLOWSDN_SVC_SCOPE_EXTERNAL, &after),
		  "lookup");
	cr_assert(after.svc_id == before.svc_id, "the service kept its id");
	cr_assert(after.flags & FLOWSDN_SVC_F_MAGLEV);
	cr_assert(after.maglev_size == 251, "table size %u", after.maglev_size);
	/* The table is in flowsdn_maglev's layout (one array per set), every slot a backend. */
	ASSERT_OK(flowsdn_maps_maglev_read(node.maps, after.svc_id, table, 251), "maglev table");
	for (uint32_t i = 0; i < 251; i++)
		cr_assert(table[i] != 0, "maglev slot %u empty", i);
	for (int k = 0; k < 3; k++) {
		socklb_run(&node, SOCKLB_UDP_SENDTO, "10.96.0.30", 53, 20, &r);
		cr_assert(r.err == 0, "maglev: %s", strerror(r.err));
		for (int i = 1; i < 20; i++)
			cr_assert(r.who[i] == r.who[0], "maglev: datagram %d went to B%c, the first to B%c", i, r.who[i],
				  r.who[0]);
	}
}

Test(socklb, terminating_backend_gets_no_new_flows_and_drains)
{
	int counts[SOCKLB_BACKENDS] = { 0 };
	int held;

	socklb_publish(&node, 1, "10.96.0.40", 80, IPPROTO_TCP, SOCKLB_B3, 0, 0, NULL);
	held = socklb_hold(&node, SOCK_STREAM, "10.96.0.40", 80);
	socklb_publish(&node, 1, "10.96.0.40", 80, IPPROTO_TCP, SOCKLB_B2 | SOCKLB_B3, 0, 0, "3");
	tcp_spread("10.96.0.40", 80, 20, counts);
	cr_assert(counts[0] == 20 && counts[1] == 0, "terminating B3 got new flows: %d %d", counts[0], counts[1]);
	cr_assert(socklb_hold_ping(&node, held) == 0, "the connection to the terminating backend drains");
}

Test(socklb, no_active_backend_refuses)
{
	struct socklb_result r;

	socklb_publish(&node, 1, "10.96.0.50", 80, IPPROTO_TCP, SOCKLB_B2, 0, 0, "2");
	socklb_run(&node, SOCKLB_TCP, "10.96.0.50", 80, 1, &r);
	cr_assert(r.err == ECONNREFUSED, "connect: %s, expected ECONNREFUSED", strerror(r.err));
	socklb_publish(&node, 2, "10.96.0.51", 53, IPPROTO_UDP, SOCKLB_B2, 0, 0, "2");
	socklb_run(&node, SOCKLB_UDP_SENDTO, "10.96.0.51", 53, 1, &r);
	cr_assert(r.err == ECONNREFUSED, "sendto: %s, expected ECONNREFUSED", strerror(r.err));
}

/* The record a connect() writes (flowsdn_sock_rnat) goes with its socket
 * (cgroup/sock_release), so that closed connections never fill the LRU
 * and push out a long-lived one's: short TCP connections leave nothing,
 * held TCP and connected UDP sockets keep theirs until they close. */
Test(socklb, closed_sockets_leave_no_record)
{
	int counts[SOCKLB_BACKENDS] = { 0 };
	size_t n = 0;

	socklb_publish(&node, 1, "10.96.0.13", 80, IPPROTO_TCP, SOCKLB_B2 | SOCKLB_B3, 0, 0, NULL);
	socklb_publish(&node, 2, "10.96.0.14", 53, IPPROTO_UDP, SOCKLB_B2, 0, 0, NULL);
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_SOCK_REVNAT) == 0, "records before any socket");
	socklb_hold(&node, SOCK_STREAM, "10.96.0.13", 80);
	socklb_hold(&node, SOCK_DGRAM, "10.96.0.14", 53);
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_SOCK_REVNAT) == 2, "one record per held socket");
	tcp_spread("10.96.0.13", 80, 30, counts);
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_SOCK_REVNAT) == 2,
		  "30 closed TCP connections left %zu records beside the 2 held",
		  socklb_map_count(&node, FLOWSDN_MAP_SOCK_REVNAT) - 2);
	cr_assert(socklb_hold_ping(&node, 0) == 0 && socklb_hold_ping(&node, 1) == 0, "held sockets still work");
	for (size_t i = 0; i < node.n_hold; i++) {
		kill(node.hold[i].pid, SIGKILL);
		waitpid(node.hold[i].pid, NULL, 0);
		close(node.hold[i].cmd);
		close(node.hold[i].res);
	}
	node.n_hold = 0;
	/* Released with the process's files, at its exit. */
	for (int i = 0; i < 50 && (n = socklb_map_count(&node, FLOWSDN_MAP_SOCK_REVNAT)) != 0; i++)
		usleep(20000);
	cr_assert(n == 0, "%zu records left after the held sockets closed", n);
}

/* An earlier version's socket storage pin (flowsdn_sock_conn) is removed
 * when the datapath is opened on its directory again. */
Test(socklb, an_earlier_versions_socket_storage_pin_is_removed)
{
	struct flowsdn_datapath *dp2 = NULL;
	char path[PATH_MAX];
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "flowsdn_sock_conn", 4, 44, 1, NULL);

	cr_assert(fd >= 0, "map: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/flowsdn_sock_conn", node.pin_dir);
	cr_assert(bpf_obj_pin(fd, path) == 0, "pin %s: %s", path, strerror(errno));
	close(fd);
	{
		FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = node.pin_dir);
		ASSERT_OK(flowsdn_datapath_open(&o, &dp2), "open again");
	}
	cr_assert(access(path, F_OK) < 0 && errno == ENOENT, "%s still pinned", path);
	flowsdn_datapath_free(dp2);
}

Test(socklb, removed_service_leaves_nothing)
{
	struct flowsdn_service_value v;
	struct flowsdn_addr fa;

	ASSERT_OK(flowsdn_addr_parse("10.96.0.60", 10, &fa), "addr");
	socklb_publish(&node, 1, "10.96.0.60", 80, IPPROTO_TCP, SOCKLB_B2 | SOCKLB_B3, FLOWSDN_SVC_F_MAGLEV, 0, NULL);
	socklb_remove(&node, 1);
	ASSERT_ERR(flowsdn_maps_service_lookup(node.maps, &fa, 80, IPPROTO_TCP, FLOWSDN_SVC_SCOPE_EXTERNAL, &v), -ENOENT,
		   "frontend gone");
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_SVC_SLOTS) == 0, "slots left");
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_MAGLEV) == 0, "maglev slots left");
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_BACKENDS) == 0, "backends left");
}

Test(socklb, shrink_removes_stale_slots_and_backends)
{
	socklb_publish(&node, 1, "10.96.0.70", 80, IPPROTO_TCP, SOCKLB_B2 | SOCKLB_B3, 0, 0, NULL);
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_SVC_SLOTS) == 2);
	socklb_publish(&node, 1, "10.96.0.70", 80, IPPROTO_TCP, SOCKLB_B2, 0, 0, NULL);
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_SVC_SLOTS) == 1, "stale slot removed");
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_BACKENDS) == 1, "removed backend deleted");
}

Test(socklb, attach_refuses_what_is_not_cgroup2)
{
	ASSERT_ERR(flowsdn_datapath_socklb_attach(node.dp, "/tmp"), -FLOWSDN_E_BPF_NOT_CGROUP2, "tmpfs");
	ASSERT_ERR(flowsdn_datapath_socklb_attach(node.dp, "/nonexistent/cg"), -FLOWSDN_E_BPF_NOT_CGROUP2, "missing");
	ASSERT_ERR(flowsdn_datapath_socklb_attach(node.dp, "relative"), -EINVAL, "relative");
	/* Attaching again to the same cgroup switches the links in place. */
	ASSERT_OK(flowsdn_datapath_socklb_attach(node.dp, node.cgroup), "re-attach");
}

/* Item 5: a removed UDP backend's connected client sockets are destroyed
 * (sock_diag SOCK_DESTROY): the client gets ECONNABORTED and can connect
 * again, to a backend that is there. */
Test(socklb, removed_udp_backend_client_gets_an_error)
{
	struct flowsdn_addr b2;
	size_t n = 0;
	int held, r;
	struct socklb_result res;

	socklb_publish(&node, 1, "10.96.0.80", 53, IPPROTO_UDP, SOCKLB_B2, 0, 0, NULL);
	held = socklb_hold(&node, SOCK_DGRAM, "10.96.0.80", 53);
	cr_assert_eq(socklb_hold_ping(&node, held), 0, "the UDP client exchanges with B2");
	socklb_publish(&node, 1, "10.96.0.80", 53, IPPROTO_UDP, SOCKLB_B3, 0, 0, NULL);
	ASSERT_OK(flowsdn_addr_parse("10.210.1.2", 10, &b2), "addr");
	r = flowsdn_netlink_sock_destroy(&b2, SOCKLB_PORT, IPPROTO_UDP, &n);
	if (r == -EOPNOTSUPP)
		cr_skip_test("the kernel has no CONFIG_INET_DIAG_DESTROY");
	ASSERT_OK(r, "sock destroy");
	cr_assert(n >= 1, "the client's socket was found and destroyed (%zu)", n);
	/* udp_abort() sets ECONNABORTED for the next receive and disconnects
	 * the socket, so a send that comes first fails with EDESTADDRREQ. */
	r = socklb_hold_ping(&node, held);
	cr_assert(r == ECONNABORTED || r == EDESTADDRREQ, "the client's next call fails, got %s", strerror(r));
	socklb_run(&node, SOCKLB_UDP_CONNECTED, "10.96.0.80", 53, 1, &res);
	cr_assert(res.err == 0 && res.who[0] == '3', "a new socket reaches the remaining backend");
}

/* Item 5 in an endpoint's netns: a runc-style endpoint (a netns routed
 * through the node) whose process's UDP socket the socket LB connected
 * to B2.  The agent's own netns holds no such socket; searching the
 * endpoint's netns (a helper thread opens the sock_diag socket there)
 * destroys it, and the caller's netns stays the node's. */
Test(socklb, removed_udp_backend_client_in_endpoint_netns_gets_an_error)
{
	struct test_ns ep;
	struct flowsdn_addr b2;
	char cmd[256], before[64] = { 0 }, after[64] = { 0 };
	uint64_t ino = 0;
	size_t n = 99;
	int held, r;

	ns_spawn(&ep);
	snprintf(cmd, sizeof(cmd), "ip link add fsl1 type veth peer name eth0 netns %d", (int)ep.pid);
	cr_assert(system(cmd) == 0, "%s", cmd);
	cr_assert(system("ip addr add 10.211.0.1/24 dev fsl1 && ip link set fsl1 up && "
			 "echo 1 > /proc/sys/net/ipv4/ip_forward") == 0, "node side of the endpoint");
	cr_assert(run_in(ep.path, "ip addr add 10.211.0.2/24 dev eth0 && ip link set eth0 up && "
				  "ip route add default via 10.211.0.1") == 0, "endpoint side");
	cr_assert(run_in(node.ns.path, "ip route add 10.211.0.0/24 via 10.210.1.1") == 0, "backends route back");
	socklb_publish(&node, 1, "10.96.0.81", 53, IPPROTO_UDP, SOCKLB_B2, 0, 0, NULL);
	held = socklb_hold_in(&node, ep.path, SOCK_DGRAM, "10.96.0.81", 53);
	cr_assert_eq(socklb_hold_ping(&node, held), 0, "the endpoint's UDP client exchanges with B2");
	socklb_publish(&node, 1, "10.96.0.81", 53, IPPROTO_UDP, SOCKLB_B3, 0, 0, NULL);
	ASSERT_OK(flowsdn_addr_parse("10.210.1.2", 10, &b2), "addr");
	r = flowsdn_netlink_sock_destroy(&b2, SOCKLB_PORT, IPPROTO_UDP, &n);
	if (r == -EOPNOTSUPP)
		cr_skip_test("the kernel has no CONFIG_INET_DIAG_DESTROY");
	ASSERT_OK(r, "sock destroy in the node's netns");
	cr_assert_eq(n, 0, "the endpoint's socket is not in the node's netns");
	cr_assert_eq(socklb_hold_ping(&node, held), 0, "still exchanging");
	ASSERT_ERR(flowsdn_netlink_sock_destroy_netns("/tmp", 0, &b2, SOCKLB_PORT, IPPROTO_UDP, &n), -FLOWSDN_E_NL_NETNS,
		   "not a namespace");
	ASSERT_OK(flowsdn_netlink_netns_ino(ep.path, &ino), "the endpoint's inode");
	/* The path names another namespace than the one recorded (a reused
	 * PID): not searched, the socket stays. */
	n = 77;
	ASSERT_ERR(flowsdn_netlink_sock_destroy_netns(ep.path, ino + 1, &b2, SOCKLB_PORT, IPPROTO_UDP, &n),
		   -FLOWSDN_E_NL_MISMATCH, "another namespace than recorded");
	cr_assert_eq(n, 77, "ret_count untouched on failure");
	cr_assert_eq(socklb_hold_ping(&node, held), 0, "still exchanging: nothing was destroyed");
	cr_assert(readlink("/proc/thread-self/ns/net", before, sizeof(before) - 1) > 0);
	n = 0;
	ASSERT_OK(flowsdn_netlink_sock_destroy_netns(ep.path, ino, &b2, SOCKLB_PORT, IPPROTO_UDP, &n), "in the endpoint");
	cr_assert_eq(n, 1, "the endpoint's socket was found and destroyed (%zu)", n);
	cr_assert(readlink("/proc/thread-self/ns/net", after, sizeof(after) - 1) > 0);
	cr_assert(!strncmp(before, after, sizeof(before)), "the caller's thread stayed in its netns");
	r = socklb_hold_ping(&node, held);
	cr_assert(r == ECONNABORTED || r == EDESTADDRREQ, "the client's next call fails, got %s", strerror(r));
	ns_kill(&ep);
}

/* @n services 10.97.i/256.i%256:80 -> backend B2 (or B3 for odd i), set
 * and backend ids from @base, in @svcs/@sets/@bes/@fes. */
static void batch_build(unsigned int n, uint32_t base, struct flowsdn_lb_service *svcs, struct flowsdn_lb_set *sets,
			struct flowsdn_lb_backend *bes, struct flowsdn_lb_frontend *fes)
{
	for (unsigned int i = 0; i < n; i++) {
		const char *b = i % 2 ? "10.210.1.3" : "10.210.1.2";
		char fa[32];

		snprintf(fa, sizeof(fa), "10.97.%u.%u", i / 256, i % 256);
		bes[i] = (struct flowsdn_lb_backend){ .id = base + i, .port = SOCKLB_PORT, .protocol = IPPROTO_TCP,
						      .weight = 1, .state = FLOWSDN_BACKEND_ACTIVE };
		ASSERT_OK(flowsdn_addr_parse(b, strlen(b), &bes[i].addr), b);
		sets[i] = (struct flowsdn_lb_set){ .svc_id = base + i, .backends = &bes[i], .n_backends = 1 };
		fes[i] = (struct flowsdn_lb_frontend){ .port = 80, .protocol = IPPROTO_TCP,
						       .scope = FLOWSDN_SVC_SCOPE_EXTERNAL, .set = 0 };
		ASSERT_OK(flowsdn_addr_parse(fa, strlen(fa), &fes[i].addr), fa);
		svcs[i] = (struct flowsdn_lb_service){ .sets = &sets[i], .n_sets = 1, .frontends = &fes[i],
						       .n_frontends = 1 };
	}
}

Test(socklb, services_published_in_one_batch)
{
	enum { N = 600 };
	static struct flowsdn_lb_service svcs[N];
	static struct flowsdn_lb_set sets[N];
	static struct flowsdn_lb_backend bes[N];
	static struct flowsdn_lb_frontend fes[N];
	static const struct flowsdn_lb_service *v[N], *o[N];
	struct socklb_result r;

	batch_build(N, 100, svcs, sets, bes, fes);
	for (unsigned int i = 0; i < N; i++)
		v[i] = &svcs[i];
	/* One invalid service refuses the whole batch before any write. */
	bes[N - 1].weight = 300;
	ASSERT_ERR(flowsdn_maps_services_publish(node.maps, v, NULL, N), -EINVAL, "weight 300 in the batch");
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_SERVICES) == 0, "a refused batch wrote frontends");
	cr_assert(socklb_map_count(&node, FLOWSDN_MAP_BACKENDS) == 0, "a refused batch wrote backends");
	bes[N - 1].weight = 1;
	ASSERT_OK(flowsdn_maps_services_publish(node.maps, v, NULL, N), "a batch of 600");
	cr_assert_eq(socklb_map_count(&node, FLOWSDN_MAP_SERVICES), N);
	cr_assert_eq(socklb_map_count(&node, FLOWSDN_MAP_SVC_SLOTS), N);
	cr_assert_eq(socklb_map_count(&node, FLOWSDN_MAP_BACKENDS), N);
	/* Real connections through the first and the last of the batch. */
	socklb_run(&node, SOCKLB_TCP, "10.97.0.0", 80, 1, &r);
	cr_assert(r.err == 0 && !strcmp(r.who, "2"), "first service: %s, by %s", strerror(r.err), r.who);
	socklb_run(&node, SOCKLB_TCP, "10.97.2.87", 80, 1, &r);
	cr_assert(r.err == 0 && !strcmp(r.who, "3"), "last service (599, odd): %s, by %s", strerror(r.err), r.who);

	/* Over the olds: every service moves to new backend ids, the old
	 * backend entries go, and the frontends stay reachable. */
	{
		static struct flowsdn_lb_service nsvcs[N];
		static struct flowsdn_lb_set nsets[N];
		static struct flowsdn_lb_backend nbes[N];
		static struct flowsdn_lb_frontend nfes[N];

		batch_build(N, 100, nsvcs, nsets, nbes, nfes);
		for (unsigned int i = 0; i < N; i++) {
			nbes[i].id = 5000 + i;
			o[i] = v[i];
			v[i] = &nsvcs[i];
		}
		ASSERT_OK(flowsdn_maps_services_publish(node.maps, v, o, N), "batch over the olds");
		cr_assert_eq(socklb_map_count(&node, FLOWSDN_MAP_BACKENDS), N, "old backend entries removed");
		cr_assert_eq(socklb_map_count(&node, FLOWSDN_MAP_SERVICES), N);
		socklb_run(&node, SOCKLB_TCP, "10.97.2.87", 80, 1, &r);
		cr_assert(r.err == 0 && !strcmp(r.who, "3"), "after the move: %s, by %s", strerror(r.err), r.who);
	}
	ASSERT_ERR(flowsdn_maps_services_publish(NULL, v, NULL, N), -EINVAL, "no maps");
	ASSERT_ERR(flowsdn_maps_services_publish(node.maps, NULL, NULL, 1), -EINVAL, "no services");
}
