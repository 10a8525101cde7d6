/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The common NetworkPolicy recipes with real packets, pair by pair
 * (root): four endpoints in three namespaces, each its own netns wired
 * into the datapath, their labels and the policies set through the
 * agent's policy state (agent/policy.c, as the API sets them).  For each
 * recipe every ordered pair of endpoints tries real TCP or UDP exchanges,
 * and what was observed is compared with the verdict the compiled entries
 * give and the one the simulator gives (the source's egress and the
 * destination's ingress, as POST /v1/policy/lookup reports them) for
 * EVERY pair; a disagreement prints the whole table (RECIPES_TABLE=1 in
 * the environment prints it for every recipe).  An exchange is
 * allowed when its reply came back, so a pair allowed under a
 * default-deny policy also shows that replies pass (connection tracking).
 *
 *   A  prod   app=web role=server   http=8080   10.201.0.1
 *   B  prod   app=db  role=client   http=9000   10.201.0.2
 *   C  dev    role=client                       10.201.0.3   (team=a)
 *   D  other  app=web                           10.201.0.4   (team=b)
 *   X  outside the cluster: a netns behind the node's veth fsrX, sending
 *      from 10.202.0.2 (x) or 10.202.0.3 (y), for the ipBlock recipe
 *      (an ipBlock never selects a pod: flowsdn_policy(3)).
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>

#include "conf.h"
#include "diag-helpers.h"
#include "diag.h"
#include "netns-helpers.h"
#include "policy.h"
#include "util.h"

DIAG_TEST_HELPERS(flowsdn)

#include "endpoint-helpers.h"

#define N_EP 4

static const struct member {
	const char *host, *a4, *a6, *labels;
} world[N_EP] = {
	{ "fsrA", "10.201.0.1", "fd00:201::1",
	  "{\"namespace\":\"prod\",\"name\":\"a\",\"labels\":{\"app\":\"web\",\"role\":\"server\"},"
	  "\"namedPorts\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":8080}]}" },
	{ "fsrB", "10.201.0.2", "fd00:201::2",
	  "{\"namespace\":\"prod\",\"name\":\"b\",\"labels\":{\"app\":\"db\",\"role\":\"client\"},"
	  "\"namedPorts\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":9000}]}" },
	{ "fsrC", "10.201.0.3", "fd00:201::3", "{\"namespace\":\"dev\",\"name\":\"c\",\"labels\":{\"role\":\"client\"}}" },
	{ "fsrD", "10.201.0.4", "fd00:201::4", "{\"namespace\":\"other\",\"name\":\"d\",\"labels\":{\"app\":\"web\"}}" },
};
/* Peers beyond the endpoints: the outside netns's two addresses. */
#define N_PEER (N_EP + 2)
static const char *const outside_addr[2] = { "10.202.0.2", "10.202.0.3" };
static const char ep_name[N_PEER] = { 'A', 'B', 'C', 'D', 'x', 'y' };
static const int server_ports[] = { 53, 8080, 9000 };

static char pin_dir[64], state_dir[64];
static struct flowsdn_datapath *dp;
static struct agent_policy *pol;
static struct ep eps[N_EP];
static struct test_ns outside;

static const char *peer_addr(int i)
{
	return i < N_EP ? world[i].a4 : outside_addr[i - N_EP];
}

static const char *peer_ns(int i)
{
	return i < N_EP ? eps[i].ns.path : outside.path;
}

/* Echoes TCP connections and UDP datagrams on every server port, forever. */
static void serve_forever(const char *a4)
{
	struct pollfd fds[2 * 3];
	size_t n = 0;

	for (size_t i = 0; i < 3; i++) {
		for (int t = 0; t < 2; t++) {
			struct sockaddr_storage ss;
			socklen_t len = sockaddr_of(a4, server_ports[i], &ss);
			int one = 1, fd = socket(AF_INET, (t ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);

			if (fd < 0)
				_exit(1);
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(fd, (struct sockaddr *)&ss, len) < 0 || (!t && listen(fd, 64) < 0))
				_exit(2);
			fds[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		}
	}
	for (;;) {
		if (poll(fds, n, -1) < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			char buf[256];
			ssize_t r;

			if (!(fds[i].revents & POLLIN))
				continue;
			if (i % 2 == 0) {
				int c = accept4(fds[i].fd, NULL, NULL, SOCK_CLOEXEC);

				if (c < 0)
					continue;
				set_timeouts(c, 2000);
				r = read(c, buf, sizeof(buf));
				if (r > 0 && write(c, buf, (size_t)r) != r)
					r = -1;
				close(c);
			} else {
				struct sockaddr_storage peer;
				socklen_t plen = sizeof(peer);

				r = recvfrom(fds[i].fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &plen);
				if (r > 0)
					(void)sendto(fds[i].fd, buf, (size_t)r, 0, (struct sockaddr *)&peer, plen);
			}
		}
	}
}

static void setup(void)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();
	static const char *const namespaces[][2] = {
		{ "prod", "{\"labels\":{\"env\":\"prod\"}}" },
		{ "dev", "{\"labels\":{\"team\":\"a\"}}" },
		{ "other", "{\"labels\":{\"team\":\"b\"}}" },
	};
	struct diag *d = NULL;
	int r;

	node_enter();
	ASSERT_OK(flowsdn_netlink_sysctl_write(NULL, "net.ipv4.ip_forward", "1", err), "ip_forward");
	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-recipes-XXXXXX");
	cr_assert(mkdtemp(pin_dir), "mkdtemp");
	snprintf(state_dir, sizeof(state_dir), "/tmp/flowsdn-recipes-state-XXXXXX");
	cr_assert(mkdtemp(state_dir), "mkdtemp");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir, .egress_mode = FLOWSDN_EGRESS_FIB,
		     .attach_mode = FLOWSDN_ATTACH_AUTO);
	r = flowsdn_datapath_open(&o, &dp);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	r = agent_policy_new(state_dir, flowsdn_datapath_maps(dp), &pol);
	cr_assert(r == 0, "policy state: %s", flowsdn_strerror(r));
	diag_new(&d);
	for (size_t i = 0; i < 3; i++) {
		r = agent_policy_namespace_put(pol, namespaces[i][0], namespaces[i][1], strlen(namespaces[i][1]), d);
		cr_assert(r == 0, "namespace %s: %s", namespaces[i][0], agent_diag_message(d));
	}
	for (size_t i = 0; i < N_EP; i++) {
		struct agent_policy_meta_buf b;
		char cid[16];
		pid_t srv;

		ep_wire(dp, &eps[i], 11 + (uint32_t)i, 0, 0, world[i].host, world[i].a4, world[i].a6, true);
		ASSERT_OK(agent_policy_meta_parse(world[i].labels, strlen(world[i].labels), &b, d), agent_diag_message(d));
		snprintf(cid, sizeof(cid), "recipe-%zu", i);
		r = agent_policy_endpoint_set(pol, &eps[i].e, cid, &b.meta, d);
		agent_policy_meta_buf_clear(&b);
		cr_assert(r == 0, "endpoint %c: %s", ep_name[i], agent_diag_message(d));
		srv = fork_in(eps[i].ns.path);
		if (srv == 0)
			serve_forever(world[i].a4);
	}
	diag_free(d);
	/* The world outside, routed through the node. */
	ns_spawn(&outside);
	{
		char cmd[512];

		snprintf(cmd, sizeof(cmd),
			 "ip link add fsrX type veth peer name ext0 && ip link set ext0 netns %d && "
			 "ip addr add 10.202.0.1/24 dev fsrX && ip link set fsrX up",
			 (int)outside.pid);
		cr_assert(system(cmd) == 0, "outside veth");
	}
	cr_assert(run_in(outside.path, "ip addr add 10.202.0.2/24 dev ext0 && ip addr add 10.202.0.3/24 dev ext0 && "
				       "ip link set ext0 up && ip route add default via 10.202.0.1") == 0,
		  "outside addresses");
}

static void teardown(void)
{
	agent_policy_free(pol);
	pol = NULL;
	flowsdn_datapath_free(dp);
	dp = NULL;
	for (size_t i = 0; i < N_EP; i++)
		ns_kill(&eps[i].ns);
	ns_kill(&outside);
	node_unpin(pin_dir);
}

TestSuite(recipes, .init = setup, .fini = teardown, .timeout = 240);

/* One exchange from inside the current netns (from @src, NULL: any):
 * 0 when the echo came back within @ms (UDP: two tries). */
static int probe(const char *src, const char *ip, int port, int type, int ms)
{
	static const char msg[] = "recipe";
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(ip, port, &ss);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), tries = type == SOCK_DGRAM ? 2 : 1;
	struct pollfd p = { .fd = fd };
	char buf[64];

	if (fd < 0)
		return 1;
	if (src) {
		struct sockaddr_storage from;
		socklen_t flen = sockaddr_of(src, 0, &from);

		if (bind(fd, (struct sockaddr *)&from, flen) < 0)
			return 6;
	}
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS)
		return 2;
	if (type == SOCK_STREAM) {
		int e = 0;
		socklen_t el = sizeof(e);

		p.events = POLLOUT;
		if (poll(&p, 1, ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e)
			return 3;
	}
	for (int i = 0; i < tries; i++) {
		if (write(fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			return 4;
		p.events = POLLIN;
		if (poll(&p, 1, type == SOCK_DGRAM ? ms / 2 : ms) == 1 && read(fd, buf, sizeof(buf)) == (ssize_t)sizeof(msg))
			return 0;
	}
	return 5;
}

struct try {
	int src, dst, type, port;
	bool observed, compiled, simulated;
	pid_t pid;
};

/* The verdict @ep gives in @dir to @peer, compiled and simulated. */
static void verdict(int ep, int dir, int peer, int type, int port, bool *compiled, bool *simulated)
{
	_cleanup_free_ char *out = NULL;
	struct flowsdn_addr a;
	const char *sim;
	int r;

	ASSERT_OK(flowsdn_addr_parse(peer_addr(peer), strlen(peer_addr(peer)), &a), "peer");
	r = agent_policy_lookup(pol, eps[ep].e.id, dir, &a, type == SOCK_STREAM ? 6 : 17, (uint16_t)port, &out, NULL);
	cr_assert(r == 0, "lookup %c: %s", ep_name[ep], flowsdn_strerror(r));
	sim = strstr(out, "\"simulated\":{");
	cr_assert(sim, "%s", out);
	*compiled = strstr(out, "\"verdict\":\"allow\"") && strstr(out, "\"verdict\":\"allow\"") < sim;
	*simulated = strncmp(sim + 13, "\"verdict\":\"allow\"", 17) == 0;
}

static void start(struct try *t, int ms)
{
	t->pid = fork_in(peer_ns(t->src));
	if (t->pid == 0)
		_exit(probe(t->src < N_EP ? NULL : peer_addr(t->src), world[t->dst].a4, t->port, t->type, ms));
}

static bool finish(struct try *t)
{
	int st;

	waitpid(t->pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Every ordered pair of endpoints (and, @outside, from the two outside
 * addresses to each endpoint), each of @n (type, port) exchanges:
 * observed against compiled and simulated verdicts. */
static void check_pairs_from(const char *recipe, const int (*probes)[2], size_t n, bool from_outside)
{
	struct try tries[(N_EP * (N_EP - 1) + 2 * N_EP) * 4];
	size_t k = 0, bad = 0;

	cr_assert(n <= 4);
	for (int s = 0; s < (from_outside ? N_PEER : N_EP); s++)
		for (int d = 0; d < N_EP; d++)
			for (size_t i = 0; s != d && i < n; i++) {
				struct try *t = &tries[k++];
				bool ce = true, se = true, ci, si;

				*t = (struct try){ .src = s, .dst = d, .type = probes[i][0], .port = probes[i][1] };
				if (s < N_EP) /* the outside has no policy of its own */
					verdict(s, FLOWSDN_POLICY_EGRESS, d, t->type, t->port, &ce, &se);
				verdict(d, FLOWSDN_POLICY_INGRESS, s, t->type, t->port, &ci, &si);
				t->compiled = ce && ci;
				t->simulated = se && si;
			}
	/* All at once: a denied exchange costs its timeout once. */
	for (size_t i = 0; i < k; i++)
		start(&tries[i], 1000);
	for (size_t i = 0; i < k; i++)
		tries[i].observed = finish(&tries[i]);
	/* An allowed exchange that timed out on a loaded machine gets one
	 * more, slower try; a denied one that passed does not. */
	for (size_t i = 0; i < k; i++)
		if (!tries[i].observed && tries[i].simulated) {
			start(&tries[i], 4000);
			tries[i].observed = finish(&tries[i]);
		}
	for (size_t i = 0; i < k; i++)
		bad += tries[i].observed != tries[i].simulated || tries[i].compiled != tries[i].simulated;
	if (bad || getenv("RECIPES_TABLE")) {
		char table[8192];
		size_t off = 0;

		for (size_t i = 0; i < k && off < sizeof(table) - 80; i++) {
			const struct try *t = &tries[i];

			off += (size_t)snprintf(table + off, sizeof(table) - off, "  %c -> %c %s %-5d observed %-5s compiled %-5s simulated %-5s%s\n",
						ep_name[t->src], ep_name[t->dst], t->type == SOCK_STREAM ? "TCP" : "UDP",
						t->port, t->observed ? "allow" : "deny", t->compiled ? "allow" : "deny",
						t->simulated ? "allow" : "deny",
						t->observed != t->simulated || t->compiled != t->simulated ? "  <--" : "");
		}
		cr_assert(!bad, "%s: %zu of %zu exchanges disagree:\n%s", recipe, bad, k, table);
		if (!bad) /* RECIPES_TABLE set: the table of a recipe that agrees too */
			fprintf(stderr, "%s: all %zu agree\n%s", recipe, k, table);
	}
}

static void check_pairs(const char *recipe, const int (*probes)[2], size_t n)
{
	check_pairs_from(recipe, probes, n, false);
}

static void put(const char *name, const char *spec)
{
	char json[2048];
	struct diag *d = NULL;
	int r;

	snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"prod\"},\"spec\":%s}", name, spec);
	diag_new(&d);
	r = agent_policy_put(pol, "prod", name, json, strlen(json), d);
	cr_assert(r == 0, "%s: %s", name, agent_diag_message(d));
	diag_free(d);
}

static const int tcp8080[][2] = { { SOCK_STREAM, 8080 } };

Test(recipes, no_policy_everything_flows)
{
	static const int both[][2] = { { SOCK_STREAM, 8080 }, { SOCK_DGRAM, 8080 } };

	check_pairs("no policy", both, 2);
}

Test(recipes, deny_all_ingress)
{
	static const int both[][2] = { { SOCK_STREAM, 8080 }, { SOCK_DGRAM, 8080 } };

	put("deny-all", "{\"podSelector\":{},\"policyTypes\":[\"Ingress\"]}");
	check_pairs("deny all ingress", both, 2);
}

Test(recipes, allow_from_one_namespace)
{
	put("from-team-a", "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"from\":"
			   "[{\"namespaceSelector\":{\"matchLabels\":{\"team\":\"a\"}}}]}]}");
	check_pairs("allow from one namespace", tcp8080, 1);
}

Test(recipes, allow_from_labelled_pods_in_any_namespace)
{
	put("from-clients", "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"namespaceSelector\":{},"
			    "\"podSelector\":{\"matchLabels\":{\"role\":\"client\"}}}]}]}");
	check_pairs("allow from labelled pods in any namespace", tcp8080, 1);
}

Test(recipes, ipblock_with_except)
{
	put("from-block", "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.202.0.0/24\","
			  "\"except\":[\"10.202.0.3/32\"]}}]}]}");
	check_pairs_from("ipBlock with except", tcp8080, 1, true);
}

Test(recipes, egress_deny_except_dns)
{
	static const int probes[][2] = { { SOCK_DGRAM, 53 }, { SOCK_STREAM, 53 }, { SOCK_STREAM, 8080 } };

	put("dns-only", "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"ports\":"
			"[{\"protocol\":\"UDP\",\"port\":53},{\"protocol\":\"TCP\",\"port\":53}]}]}");
	check_pairs("egress deny except DNS", probes, 3);
}

Test(recipes, port_range_with_end_port)
{
	static const int probes[][2] = { { SOCK_STREAM, 8080 }, { SOCK_STREAM, 9000 }, { SOCK_DGRAM, 8080 } };

	put("range", "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"protocol\":\"TCP\",\"port\":8000,"
		     "\"endPort\":8100}]}]}");
	check_pairs("port range with endPort", probes, 3);
}

Test(recipes, named_ports)
{
	static const int probes[][2] = { { SOCK_STREAM, 8080 }, { SOCK_STREAM, 9000 } };

	put("named", "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"protocol\":\"TCP\",\"port\":\"http\"}]}]}");
	check_pairs("named ports", probes, 2);
}

SERIAL_TEST_MAIN()
