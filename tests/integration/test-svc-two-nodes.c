/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Two simulated nodes, each a network namespace with a flowsdn-agent of
 * its own (its own configuration, state, API socket and bpffs: the agent
 * of node B runs in a mount namespace of its own, where its bpffs is
 * mounted), and a third namespace "outside": the client, and the router
 * between the nodes' uplinks (A 192.0.2.1/24, B 198.18.0.2/24).  Services
 * go in only through each agent's API (PUT /v1/service/ID), as a user or
 * the Kubernetes mode writes them; the packets are real.
 *   - NodePort TCP and UDP on A to a backend of node B ("node": "node-b"):
 *     A's uplink translates, SNATs to its own address and forwards; the
 *     reply comes back through A;
 *   - the same NodePort on B, with B's agent, to its own backend;
 *   - externalTrafficPolicy Local on A with only B's backend refuses,
 *     and the same service changed live to Cluster forwards again;
 *   - A's agent restarted: its NodePort answers again from its state;
 *   - each agent holds only its own services.
 * test-svc-nodeport.c covers the same paths below the agent (the maps
 * written directly), and ICMP errors about them.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "agent-client.h"
#include "json.h"
#include "netns-helpers.h"

#define NODE_A "192.0.2.1"
#define CLIENT "192.0.2.254" /* outside: the client, and the router to B */
#define NODE_B "198.18.0.2"

struct agent_node {
	const char *name;
	char dir[96];
	char sock[128];
	char config[128];
	const char *netns; /* NULL: the test's own */
	pid_t pid;
};

static char top[64];
static struct test_ns outside, netns_b;
static struct agent_node node_a = { .name = "a" }, node_b = { .name = "b" };

static void agent_write_config(struct agent_node *n, const char *uplink, const char *addr, const char *pool)
{
	FILE *f = fopen(n->config, "we");

	cr_assert(f, "%s", n->config);
	fprintf(f,
		"{\"socket\":\"%s\",\"state-dir\":\"%s/state\",\"bpf-pin-dir\":\"%s/bpf\",\"pools\":[\"%s\"],"
		"\"socket-lb-cgroup\":\"\",\"uplink-interfaces\":[\"%s\"],\"node-addresses\":[\"%s\"]}\n",
		n->sock, n->dir, n->dir, pool, uplink, addr);
	fclose(f);
}

static void agent_init(struct agent_node *n, const char *netns, const char *uplink, const char *addr,
		       const char *pool)
{
	char cmd[256];

	snprintf(n->dir, sizeof(n->dir), "%s/%s", top, n->name);
	snprintf(n->sock, sizeof(n->sock), "%s/run/flowsdn.sock", n->dir);
	snprintf(n->config, sizeof(n->config), "%s/agent.json", n->dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/run", n->dir);
	cr_assert(system(cmd) == 0, "%s", cmd);
	n->netns = netns;
	agent_write_config(n, uplink, addr, pool);
}

/* Starts @n's agent in its netns; for another node than the test's own,
 * in a mount namespace of its own too (its bpffs is mounted there, where
 * node A's cannot see it).  Waits until it answers /v1/healthz. */
static void agent_start(struct agent_node *n)
{
	struct agent_client_opts o = { .socket = n->sock, .timeout_ms = 500 };
	char bin[512], log[160];
	const char *b = getenv("top_builddir");

	snprintf(bin, sizeof(bin), "%s/bin/flowsdn-agent", b ? b : ".");
	snprintf(log, sizeof(log), "%s/agent.log", n->dir);
	if (access(bin, X_OK) < 0)
		cr_skip_test("%s not built", bin);
	n->pid = fork();
	cr_assert(n->pid >= 0);
	if (n->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (n->netns) {
			int ns = open(n->netns, O_RDONLY | O_CLOEXEC);

			if (ns < 0 || setns(ns, CLONE_NEWNET) < 0 || unshare(CLONE_NEWNS) < 0 ||
			    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
				_exit(126);
			close(ns);
		}
		if (fd >= 0)
			dup2(fd, 2);
		execl(bin, bin, "--config", n->config, (char *)NULL);
		_exit(127);
	}
	/* Loading the datapath is the verifier's work: seconds when loaded. */
	for (int i = 0; i < 1500; i++) {
		if (agent_client_health(&o, NULL) == 0)
			return;
		if (waitpid(n->pid, NULL, WNOHANG) == n->pid)
			break;
		usleep(20000);
	}
	{
		char c[256];

		snprintf(c, sizeof(c), "tail -20 %s >&2", log);
		if (system(c) != 0)
			fputs("(no agent log)\n", stderr);
	}
	cr_assert_fail("node %s: flowsdn-agent did not become healthy (see %s)", n->name, log);
}

static void agent_stop(struct agent_node *n)
{
	pid_t pid = n->pid;

	if (pid <= 0)
		return;
	n->pid = 0;
	kill(pid, SIGTERM);
	for (int i = 0; i < 2000; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert_fail("node %s: flowsdn-agent did not exit within 20 s of SIGTERM", n->name);
}

/* fs-<31 zeros><tag>: a service id of the agent's rule. */
static const char *svc_id(char tag, char buf[40])
{
	snprintf(buf, 40, "fs-%031d%c", 0, tag);
	return buf;
}

/* GET @path of @n's API: the body (freed by the caller), status 200. */
static char *api_get(struct agent_node *n, const char *path)
{
	struct agent_client_opts o = { .socket = n->sock, .timeout_ms = 5000 };
	char *body = NULL;
	long status = 0;

	cr_assert(agent_client_get(&o, path, &body, &status) == 0, "node %s: GET %s", n->name, path);
	cr_assert_eq(status, 200, "node %s: GET %s: %ld %s", n->name, path, status, body);
	return body;
}

/* A NodePort service of one backend @addr:@bport on @node ("local" or a
 * node name), PUT through @n's API as svc_id(@tag). */
static void nodeport_put(struct agent_node *n, char tag, int port, const char *proto, const char *addr, int bport,
			 const char *node, const char *policy)
{
	struct agent_client_opts o = { .socket = n->sock, .timeout_ms = 5000 };
	struct agent_client_err err = { 0 };
	struct json_value *answer = NULL;
	char path[64], id[40], body[512];

	snprintf(path, sizeof(path), "/v1/service/%s", svc_id(tag, id));
	snprintf(body, sizeof(body),
		 "{\"frontends\":[{\"type\":\"NodePort\",\"port\":%d,\"protocol\":\"%s\"}],"
		 "\"backends\":[{\"address\":\"%s\",\"port\":%d,\"node\":\"%s\"}],"
		 "\"externalTrafficPolicy\":\"%s\"}",
		 port, proto, addr, bport, node, policy);
	cr_assert(agent_client_call(&o, "PUT", path, body, &answer, &err) == 0, "node %s: PUT %s: %ld %s", n->name,
		  path, err.http_status, err.message);
	json_free(answer);
}

static void setup(void)
{
	char cmd[512];

	node_enter();
	snprintf(top, sizeof(top), "/tmp/test-two-nodes.XXXXXX");
	cr_assert(mkdtemp(top));
	/* tmpfs in the private mount namespace: gone with the test. */
	cr_assert(mount("tmpfs", top, "tmpfs", 0, "mode=0700") == 0, "tmpfs: %s", strerror(errno));
	ns_spawn(&outside);
	ns_spawn(&netns_b);
	snprintf(cmd, sizeof(cmd),
		 "ip link add fsn0 type veth peer name fsn1 && ip link set fsn1 netns %d && "
		 "ip link add fsn2 type veth peer name fsn3 && ip link set fsn2 netns %d && ip link set fsn3 netns %d && "
		 "ip addr add " NODE_A "/24 dev fsn0 && ip link set fsn0 up && "
		 "ip route add 198.18.0.0/24 via " CLIENT " && sysctl -qw net.ipv4.ip_forward=1",
		 (int)outside.pid, (int)outside.pid, (int)netns_b.pid);
	cr_assert(system(cmd) == 0, "node A's uplink");
	cr_assert(run_in(outside.path, "ip addr add " CLIENT "/24 dev fsn1 && ip link set fsn1 up && "
				       "ip addr add 198.18.0.254/24 dev fsn2 && ip link set fsn2 up && "
				       "sysctl -qw net.ipv4.ip_forward=1") == 0,
		  "outside");
	cr_assert(run_in(netns_b.path, "ip addr add " NODE_B "/24 dev fsn3 && ip link set fsn3 up && "
				       "ip route add default via 198.18.0.254 && sysctl -qw net.ipv4.ip_forward=1") == 0,
		  "node B's uplink");
	agent_init(&node_a, NULL, "fsn0", NODE_A, "10.81.0.0/24");
	agent_init(&node_b, netns_b.path, "fsn3", NODE_B, "10.82.0.0/24");
	agent_start(&node_a);
	agent_start(&node_b);
}

static void teardown(void)
{
	/* The agents are stopped first: the namespaces go with their holders. */
	agent_stop(&node_a);
	agent_stop(&node_b);
	ns_kill(&outside);
	ns_kill(&netns_b);
}

TestSuite(two_nodes, .init = setup, .fini = teardown, .timeout = 180);

Test(two_nodes, nodeport_on_a_reaches_a_backend_of_node_b_through_the_agents)
{
	nodeport_put(&node_a, '1', 30080, "TCP", NODE_B, 8080, "node-b", "Cluster");
	nodeport_put(&node_a, '2', 30053, "UDP", NODE_B, 8053, "node-b", "Cluster");
	cr_assert_eq(l4_echo_via(outside.path, netns_b.path, NODE_B, 8080, NODE_A, 30080, SOCK_STREAM), 0,
		     "TCP " NODE_A ":30080 -> node B's " NODE_B ":8080");
	cr_assert_eq(l4_echo_via(outside.path, netns_b.path, NODE_B, 8053, NODE_A, 30053, SOCK_DGRAM), 0,
		     "UDP " NODE_A ":30053 -> node B's " NODE_B ":8053");
	/* Node B's agent serves its own NodePort to its own backend. */
	nodeport_put(&node_b, '3', 30081, "TCP", NODE_B, 8081, "local", "Local");
	cr_assert_eq(l4_echo_via(outside.path, netns_b.path, NODE_B, 8081, NODE_B, 30081, SOCK_STREAM), 0,
		     "TCP " NODE_B ":30081 -> its own " NODE_B ":8081");
}

Test(two_nodes, local_policy_refuses_off_node_until_changed_live_to_cluster)
{
	char *body, path[64], id[40];

	nodeport_put(&node_a, '4', 30082, "TCP", NODE_B, 8082, "node-b", "Local");
	cr_assert_neq(l4_echo_via(outside.path, netns_b.path, NODE_B, 8082, NODE_A, 30082, SOCK_STREAM), 0,
		      "externalTrafficPolicy Local must not forward to node B");
	snprintf(path, sizeof(path), "/v1/service/%s", svc_id('4', id));
	body = api_get(&node_a, path);
	cr_assert(strstr(body, "\"externalTrafficPolicy\":\"Local\""), "%s", body);
	free(body);
	nodeport_put(&node_a, '4', 30082, "TCP", NODE_B, 8082, "node-b", "Cluster");
	cr_assert_eq(l4_echo_via(outside.path, netns_b.path, NODE_B, 8082, NODE_A, 30082, SOCK_STREAM), 0,
		     "the same service changed live to Cluster forwards");
}

Test(two_nodes, a_restarted_agent_serves_its_nodeports_again_and_each_holds_its_own)
{
	char *a, *b, id5[40], id6[40];

	nodeport_put(&node_a, '5', 30083, "TCP", NODE_B, 8083, "node-b", "Cluster");
	nodeport_put(&node_b, '6', 30084, "TCP", NODE_B, 8084, "local", "Cluster");
	cr_assert_eq(l4_echo_via(outside.path, netns_b.path, NODE_B, 8083, NODE_A, 30083, SOCK_STREAM), 0);
	agent_stop(&node_a);
	agent_start(&node_a);
	cr_assert_eq(l4_echo_via(outside.path, netns_b.path, NODE_B, 8083, NODE_A, 30083, SOCK_STREAM), 0,
		     "node A's NodePort after its agent's restart");
	a = api_get(&node_a, "/v1/service");
	b = api_get(&node_b, "/v1/service");
	svc_id('5', id5);
	svc_id('6', id6);
	cr_assert(strstr(a, id5) && !strstr(a, id6), "A: %s", a);
	cr_assert(strstr(b, id6) && !strstr(b, id5), "B: %s", b);
	free(a);
	free(b);
	/* Node B's port 30083 is not A's: nothing there. */
	cr_assert_neq(l4_echo_via(outside.path, netns_b.path, NODE_B, 8083, NODE_B, 30083, SOCK_STREAM), 0,
		      "B has no service on 30083");
}

SERIAL_TEST_MAIN()
