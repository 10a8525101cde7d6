/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host firewall with real packets (root): the test's own netns is the
 * node, a veth into a second netns ("outside") plays its uplink, with the
 * uplink programs attached as the agent attaches them and the agent's
 * policy state (agent/policy.c) driving them.  The host policy allows
 * TCP 8080 and UDP 8081 from anyone; everything else to the node is
 * what audit counts and enforce drops.  Nothing of the machine's own
 * interfaces is touched.
 */
#include <criterion/criterion.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <flowsdn/datapath.h>

#include "conf.h"
#include "diag.h"
#include "helpers.h"
#include "hostfw.h"
#include "netns-helpers.h"
#include "policy.h"

#define NODE_IP "192.0.2.1"
#define PEER_IP "192.0.2.2"

static char pin_dir[64], state_dir[64];
static struct test_ns outside;
static struct flowsdn_datapath *dp;
static struct agent_policy *pol;

static const char allow_policy[] =
	"{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
	"\"metadata\":{\"name\":\"node-services\",\"namespace\":\"flowsdn-host\"},"
	"\"spec\":{\"podSelector\":{},\"policyTypes\":[\"Ingress\"],"
	"\"ingress\":[{\"ports\":[{\"protocol\":\"TCP\",\"port\":8080},{\"protocol\":\"UDP\",\"port\":8081}]}]}}";

static void setup(void)
{
	char cmd[256];
	int ifindex, r;
	struct flowsdn_addr a;

	node_enter();
	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-hostfw-XXXXXX");
	cr_assert(mkdtemp(pin_dir), "mkdtemp");
	snprintf(state_dir, sizeof(state_dir), "/tmp/flowsdn-hostfw-state-XXXXXX");
	cr_assert(mkdtemp(state_dir), "mkdtemp");
	ns_spawn(&outside);
	snprintf(cmd, sizeof(cmd),
		 "ip link add fsh0 type veth peer name fsh1 && ip link set fsh1 netns %d && "
		 "ip addr add " NODE_IP "/24 dev fsh0 && ip link set fsh0 up",
		 (int)outside.pid);
	cr_assert(system(cmd) == 0, "uplink veth");
	cr_assert(run_in(outside.path, "ip addr add " PEER_IP "/24 dev fsh1 && ip link set fsh1 up") == 0,
		  "outside address");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir);
	r = flowsdn_datapath_open(&o, &dp);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	ifindex = (int)if_nametoindex("fsh0");
	cr_assert(ifindex > 0);
	ASSERT_OK(flowsdn_addr_parse(NODE_IP, strlen(NODE_IP), &a), "addr");
	FLOWSDN_OPTS(flowsdn_uplink_opts, u, .addr4 = &a);
	r = flowsdn_datapath_uplink_attach(dp, ifindex, &u);
	cr_assert(r == 0, "uplink attach: %s", flowsdn_strerror(r));
	r = agent_policy_new(state_dir, flowsdn_datapath_maps(dp), &pol);
	cr_assert(r == 0, "policy state: %s", flowsdn_strerror(r));
	r = agent_policy_put(pol, AGENT_HOSTFW_NAMESPACE, "node-services", allow_policy, strlen(allow_policy), NULL);
	cr_assert(r == 0, "host policy: %s", flowsdn_strerror(r));
}

static void teardown(void)
{
	agent_policy_free(pol);
	pol = NULL;
	flowsdn_datapath_free(dp);
	dp = NULL;
	ns_kill(&outside);
	node_unpin(pin_dir);
}

TestSuite(hostfw, .init = setup, .fini = teardown, .timeout = 120);

static void set_mode(unsigned int mode)
{
	struct diag *d = NULL;
	int r;

	diag_new(&d);
	r = agent_policy_hostfw_set_mode(pol, mode, d);
	cr_assert(r == 0, "mode %s: %s (%s)", agent_hostfw_mode_name(mode), flowsdn_strerror(r),
		  agent_diag_message(d));
	diag_free(d);
}

static struct flowsdn_hostfw_counters counters(void)
{
	struct flowsdn_hostfw_counters c;

	ASSERT_OK(flowsdn_maps_hostfw_counters(flowsdn_datapath_maps(dp), &c), "counters");
	return c;
}

/* A TCP or UDP echo from outside to the node's @port. */
static int to_node(int port, int type)
{
	return l4_echo(outside.path, NULL, NODE_IP, port, type);
}

Test(hostfw, audit_counts_but_passes)
{
	struct flowsdn_hostfw_counters before, after;

	set_mode(FLOWSDN_HOSTFW_AUDIT);
	before = counters();
	cr_assert_eq(to_node(9090, SOCK_STREAM), 0, "audit: a denied TCP port still answers");
	cr_assert_eq(to_node(9091, SOCK_DGRAM), 0, "audit: a denied UDP port still answers");
	cr_assert_eq(to_node(8080, SOCK_STREAM), 0, "audit: the allowed port answers");
	after = counters();
	cr_assert_geq(after.audited - before.audited, 2, "both denied connections counted (%llu)",
		      (unsigned long long)(after.audited - before.audited));
	cr_assert_geq(after.allowed - before.allowed, 1, "the allowed one counted as allowed");
	cr_assert_eq(after.denied, before.denied, "audit never drops");
	cr_assert_gt(after.tracked, before.tracked, "later packets pass as tracked");
}

Test(hostfw, enforce_drops_a_denied_port_and_passes_an_allowed_one)
{
	struct flowsdn_hostfw_counters before, after;
	char *json = NULL;

	set_mode(FLOWSDN_HOSTFW_ENFORCE);
	before = counters();
	cr_assert_neq(to_node(9090, SOCK_STREAM), 0, "enforce: a denied TCP port does not answer");
	cr_assert_neq(to_node(9091, SOCK_DGRAM), 0, "enforce: a denied UDP port does not answer");
	cr_assert_eq(to_node(8080, SOCK_STREAM), 0, "enforce: the allowed TCP port answers");
	cr_assert_eq(to_node(8081, SOCK_DGRAM), 0, "enforce: the allowed UDP port answers");
	after = counters();
	cr_assert_geq(after.denied - before.denied, 2, "denied first packets counted (%llu)",
		      (unsigned long long)(after.denied - before.denied));
	cr_assert_geq(after.allowed - before.allowed, 2, "allowed connections counted");
	cr_assert_eq(after.audited, before.audited, "enforce audits nothing");
	/* The allowing rule counted its packets, with its name. */
	ASSERT_OK(agent_policy_hostfw(pol, true, &json), "verdicts");
	cr_assert(strstr(json, "\"mode\":\"enforce\""), "%s", json);
	cr_assert(strstr(json, "\"name\":\"flowsdn-host/node-services"), "the rule is named: %s", json);
	cr_assert(strstr(json, "\"verdict\":\"allow\",\"packets\":"), "%s", json);
	cr_assert(!strstr(json, "\"rules\":[]"), "the allowing rule counted: %s", json);
	free(json);
}

Test(hostfw, replies_of_the_hosts_own_connections_pass)
{
	set_mode(FLOWSDN_HOSTFW_ENFORCE);
	/* The node connects out: the replies come from port 7000 to one of
	 * its ephemeral ports, which no host rule allows. */
	cr_assert_eq(l4_echo(NULL, outside.path, PEER_IP, 7000, SOCK_STREAM), 0, "TCP out and back");
	cr_assert_eq(l4_echo(NULL, outside.path, PEER_IP, 7001, SOCK_DGRAM), 0, "UDP out and back");
	/* And a new connection from outside to such a port is still refused. */
	cr_assert_neq(to_node(40000, SOCK_STREAM), 0, "an unsolicited one is not");
}

Test(hostfw, off_judges_nothing)
{
	struct flowsdn_hostfw_counters before, after;

	set_mode(FLOWSDN_HOSTFW_OFF);
	before = counters();
	cr_assert_eq(to_node(9090, SOCK_STREAM), 0, "off: every port answers");
	after = counters();
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "off: nothing counted");
}

Test(hostfw, a_refused_switch_leaves_the_state_in_force)
{
	struct flowsdn_maps *maps = flowsdn_datapath_maps(dp);
	struct flowsdn_hostfw_state before, after;
	struct flowsdn_policy_map_entry e = { 0 };

	set_mode(FLOWSDN_HOSTFW_ENFORCE);
	ASSERT_OK(flowsdn_maps_hostfw_state(maps, &before), "state");
	cr_assert(before.ep_id == FLOWSDN_HOSTFW_EP_ID && before.mode == FLOWSDN_HOSTFW_ENFORCE &&
			  (before.flags & FLOWSDN_EP_F_ENFORCE_INGRESS),
		  "enforce, selected");
	e.key.prefixlen = FLOWSDN_POLICY_PREFIX_L3;
	e.key.direction = FLOWSDN_DIR_EGRESS;
	ASSERT_ERR(flowsdn_maps_hostfw_switch(maps, NULL, 0, &e, 1, FLOWSDN_EP_F_ENFORCE_INGRESS,
					      FLOWSDN_HOSTFW_AUDIT),
		   -EINVAL, "an egress entry");
	ASSERT_ERR(flowsdn_maps_hostfw_switch(maps, NULL, 0, NULL, 0, 0, 3), -EINVAL, "no such mode");
	ASSERT_ERR(flowsdn_maps_hostfw_switch(maps, NULL, 0, NULL, 0, FLOWSDN_EP_F_ENFORCE_EGRESS, 1), -EINVAL,
		   "an egress flag");
	ASSERT_OK(flowsdn_maps_hostfw_state(maps, &after), "state");
	cr_assert(memcmp(&before, &after, sizeof(before)) == 0, "the state in force is untouched");
	cr_assert_neq(to_node(9090, SOCK_STREAM), 0, "and still enforced");
	cr_assert_eq(to_node(8080, SOCK_STREAM), 0, "with its rules");
}

/* An agent restart: while none runs the pinned state goes on enforcing;
 * the next one restores the saved rules and mode, switches the host from
 * the entries in force, and its scrub keeps the host's entries. */
Test(hostfw, enforcement_survives_an_agent_restart)
{
	struct flowsdn_maps *maps = flowsdn_datapath_maps(dp);
	struct flowsdn_hostfw_state st;
	size_t removed = 99;
	int r;

	set_mode(FLOWSDN_HOSTFW_ENFORCE);
	agent_policy_free(pol);
	pol = NULL;
	cr_assert_neq(to_node(9090, SOCK_STREAM), 0, "no agent: still enforced");
	cr_assert_eq(to_node(8080, SOCK_STREAM), 0, "no agent: the rule still allows");
	ASSERT_OK(flowsdn_maps_policy_scrub(maps, &removed), "scrub");
	cr_assert_eq(removed, 0, "the host's entries in force are not stale");
	r = agent_policy_new(state_dir, maps, &pol);
	cr_assert(r == 0, "policy state: %s", flowsdn_strerror(r));
	cr_assert_geq(agent_policy_restore(pol), 0, "restore");
	agent_policy_restore_done(pol);
	ASSERT_OK(flowsdn_maps_hostfw_state(maps, &st), "state");
	cr_assert(st.mode == FLOWSDN_HOSTFW_ENFORCE && (st.flags & FLOWSDN_EP_F_ENFORCE_INGRESS),
		  "the saved mode and the rules are back (mode %u, flags %#x)", st.mode, st.flags);
	cr_assert_neq(to_node(9090, SOCK_STREAM), 0, "restarted: enforced");
	cr_assert_eq(to_node(8080, SOCK_STREAM), 0, "restarted: allowed");
}

/* ---- the mode switch is atomic */

static volatile int flipping;

static void *flipper(void *arg)
{
	unsigned int *flips = arg;

	while (flipping) {
		set_mode(*flips % 2 ? FLOWSDN_HOSTFW_ENFORCE : FLOWSDN_HOSTFW_AUDIT);
		(*flips)++;
		usleep(1000);
	}
	return NULL;
}

/* Receives datagrams on the node's @port until 1 s of silence; how many. */
static int count_datagrams(int port, int ready_fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(NODE_IP, port, &ss);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), n = 0, rcvbuf = 1 << 20;
	char buf[64];

	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	set_timeouts(fd, 1500);
	if (write(ready_fd, "r", 1) != 1)
		return -1;
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		n++;
	return n;
}

Test(hostfw, switching_mode_is_atomic)
{
	enum { SENT = 2000 };
	struct flowsdn_hostfw_counters before, after;
	unsigned int flips = 0;
	pthread_t t;
	int p[2], got[2], st;
	pid_t rcv, snd;
	char c;

	set_mode(FLOWSDN_HOSTFW_AUDIT);
	/* Prime the neighbour entries both ways (ARP passes the firewall). */
	cr_assert_eq(to_node(8081, SOCK_DGRAM), 0, "allowed UDP");
	cr_assert(pipe2(p, O_CLOEXEC) == 0 && pipe2(got, O_CLOEXEC) == 0);
	rcv = fork_in(NULL);
	if (rcv == 0) {
		int n = count_datagrams(9092, p[1]);

		_exit(write(got[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1);
	}
	cr_assert_eq(read(p[0], &c, 1), 1, "receiver ready");
	before = counters();
	flipping = 1;
	cr_assert(pthread_create(&t, NULL, flipper, &flips) == 0);
	snd = fork_in(outside.path);
	if (snd == 0) {
		struct sockaddr_storage ss;
		socklen_t len = sockaddr_of(NODE_IP, 9092, &ss);

		/* A source port of its own (a new connection) each time: an
		 * ephemeral port drawn twice would meet the tracked entry of an
		 * audited datagram. */
		for (int i = 0; i < SENT; i++) {
			struct sockaddr_storage src;
			socklen_t slen = sockaddr_of(PEER_IP, 20000 + i, &src);
			int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

			if (fd < 0 || bind(fd, (struct sockaddr *)&src, slen) < 0 ||
			    sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len) != 1)
				_exit(1);
			close(fd);
			usleep(200);
		}
		_exit(0);
	}
	waitpid(snd, &st, 0);
	flipping = 0;
	pthread_join(t, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sender");
	int received = -1;

	cr_assert_eq(read(got[0], &received, sizeof(received)), (ssize_t)sizeof(received), "receiver result");
	waitpid(rcv, NULL, 0);
	after = counters();
	unsigned long long audited = after.audited - before.audited, denied = after.denied - before.denied;

	cr_assert_gt(flips, 10, "the mode changed during the traffic (%u switches)", flips);
	cr_assert_gt(audited, 0, "some datagrams met audit");
	cr_assert_gt(denied, 0, "some met enforce");
	cr_assert_eq(audited + denied, SENT, "each datagram was judged once, in one mode (%llu + %llu)", audited,
		     denied);
	cr_assert_eq((unsigned long long)received, audited,
		     "exactly the audited ones arrived (%d received, %llu audited, %llu denied)", received, audited,
		     denied);
}

SERIAL_TEST_MAIN()
