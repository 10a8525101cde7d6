/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/services — the cost of reaching a ClusterIP, at S = 1, 100, 1000,
 * 5000 and 10000 services, each with its own backend entry:
 *   direct    connect() to the backend itself (the reference);
 *   socklb    the flowsdn socket load balancer (bpf/sock.bpf.c) in a
 *             cgroup the bench creates, services loaded through the
 *             agent's own code path (agent/services.c, kernel ops);
 *   iptables  kube-proxy style DNAT chains (iptables-legacy, KUBE-SERVICES
 *             -> KUBE-SVC-* -> KUBE-SEP-*), targeting the last and a
 *             random service;
 *   nft       one nftables dnat verdict map;
 *   tc        the per-packet path (bpf/lxc.bpf.c at tc): a client in an
 *             endpoint netns marked FLOWSDN_EP_F_SVC_PACKET (as a gVisor
 *             sandbox is, its sockets never reaching the socket LB),
 *             wired by flowsdn_netlink_veth_setup() into the socket LB's
 *             netns, connects to the same ClusterIPs; its reference is
 *             direct(endpoint), the same client connecting to the
 *             backend address over the same veth, so that its ratio is
 *             what the translation costs, not the veth hop.
 * Modes: sequential TCP connect()/close() (rate, connect p50/p99) and
 * request/response (connect, 64 B request, 128 B reply, close).  Also the
 * time to load S services into each: for the agent, its configuration
 * file with S services read and the services started (validated,
 * published in one batch, one snapshot fsynced), then 21 more PUTs one
 * at a time (one journal line each, fdatasync; median, max and median
 * CPU), each alternating with a bare append of as many bytes and its
 * fdatasync in the same directory — the floor the disk sets, beside
 * what the PUT costs — wall and CPU time, the state directory on the
 * filesystem of -d (default /var/lib, where production keeps it; never
 * tmpfs), beside iptables-restore and nft -f of the same services.  One
 * line per (mode, S, variant) ending in "ratio X.XXx direct".  Never
 * pass/fail.
 *
 * Closing: the client closes abortively (SO_LINGER 0, an RST) and the
 * server closes only after it, so no run leaves a TIME_WAIT socket
 * behind.  With graceful closes every mode that translates (iptables,
 * nft, tc) showed p99 stalls of 12-16 ms and 0.02-0.1x ratios once a
 * netns had run an earlier variant (the "12 ms stall" of the previous
 * bench): a run leaves the server side, which closed first after its
 * reply, in TIME_WAIT on (backend:9000, client:P); a later connection
 * to another address (a ClusterIP) picks its source port against its
 * own tuple (client:P, VIP:80), which that TIME_WAIT does not block,
 * and after DNAT its SYN lands on the old TIME_WAIT.  The ISN and the
 * TCP timestamp offset are hashed from the pre-translation addresses,
 * so about half of those SYNs fail PAWS (TcpExt.PAWSTimewait): the
 * TIME_WAIT answers with an ACK, the client resets it (Tcp.OutRsts)
 * and resends its SYN only when its retransmit timer, re-armed to
 * TCP_TIMEOUT_MIN (2 jiffies, 8 ms at HZ=250, plus timer slack), fires
 * (TcpExt.TCPSynRetrans) — 12-16 ms.  Neither conntrack nor the
 * datapath's own connection tracking is involved (flushing them does
 * not help), nor delayed ACKs (40 ms), nor the accept backlog
 * (ListenOverflows stayed 0).  The same collision exists in production
 * behind any DNAT whose backends close first; here it only made runs
 * depend on what ran before them.  -v prints the kernel's TCP counters
 * that changed over each run, in the server's and the client's netns.
 *
 * Isolation: root; every variant lives in a network namespace of its own
 * (children of the bench, gone with it), the socket LB in a private
 * bpffs and a cgroup made for the bench under the cgroup v2 mount (never
 * the root cgroup); conntrack is flushed between runs.  The client and
 * the backend server are pinned to one CPU.
 *
 * Ratios: each round runs every variant as a pair with its reference
 * (direct, or direct(endpoint) for tc): two clients pinned to the same
 * CPU taking turns in blocks of 10 connections (a token passed over a
 * pipe; only the blocks are timed; blocks of 50 left the connect mode's
 * quartiles about twice as wide), which of the two starts alternating
 * from pair to pair, and the variants' order alternating from round to
 * round.  A variant's ratio is the median over rounds of its per-pair
 * ratios, printed with their quartiles (IQR).  On a shared virtual
 * machine the rate drifts by ±10 % over a minute and by several per cent
 * from one 100 ms stretch to the next: a ratio of medians taken seconds
 * apart measured that drift as much as the variant, and pairs run one
 * side after the other (2,000 connections each) still had quartiles of
 * ±0.04; turns of half a millisecond put the drift on both sides alike.
 * Medians of rates and latencies are printed too, with the load
 * average, and at the end the socket LB's ratio at S = 10,000 against
 * its ratio at S = 1.
 *
 * Usage: bench/services [-n CONNECTS per run (default 2000)] [-r ROUNDS (1..31, default 3)] [-c CPU]
 *                       [-s S (one level only)] [-l (load lines only)] [-d STATE-DIR-PARENT]
 *                       [-v (TCP counters per pair)] [-p (per connection: the datapath programs'
 *                       runs and run time, from the kernel's BPF statistics)]
 * SIGTERM, SIGINT, SIGHUP and SIGPIPE remove what the bench made (cleanup()).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>

#include "conf.h"
#include "json.h"
#include "log.h"
#include "ops.h"
#include "services.h"
#include "bench.h"

#define MAX_ROUNDS 31
#define PUTS 21 /* PUTs timed after each load */
#define SLOTS 7 /* measured lines per (mode, S) */
#define BACKEND "10.98.0.1"
#define BACKEND_PORT 9000
#define MAX_S 10000

enum variant { V_DIRECT, V_SOCKLB, V_IPT, V_NFT, V_TC, V_COUNT };
static const char *const vnames[] = { "direct", "socklb", "iptables", "nft", "tc" };
#define EP_ADDR "10.202.0.2" /* the tc variant's endpoint */
static const int levels[] = { 1, 100, 1000, 5000, 10000 };

static int connects = 2000, rounds = 3, cpu = 0;
static bool load_only, verbose;
static int only_s; /* -s: one level only (0: all) */
static char statebase[300];
static char cgroup[512], tmpdir[64], statedir[256] = "/var/lib";

struct ns {
	pid_t holder, server;
	char path[64];
};
static struct ns nss[V_COUNT];
static struct flowsdn_datapath *dp;
static pid_t main_pid;
static volatile pid_t client_pid[2]; /* the measuring clients, while they run */

static void pin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static int run(const char *cmd)
{
	int r = system(cmd);

	if (r != 0)
		fprintf(stderr, "bench/services: \"%s\" failed (%d)\n", cmd, r);
	return r;
}

static int enter(const struct ns *n)
{
	int fd = open(n->path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = setns(fd, CLONE_NEWNET);
	close(fd);
	return r < 0 ? -errno : 0;
}

/* The backend: accepts, answers 128 bytes to a request, closes. */
static void serve(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(BACKEND_PORT) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char buf[128] = { 0 };

	pin();
	inet_pton(AF_INET, BACKEND, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0)
		_exit(1);
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		ssize_t n;

		if (c < 0)
			continue;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		n = read(c, buf, sizeof(buf));
		if (n == 64 && send(c, buf, 128, MSG_NOSIGNAL) != 128)
			n = 0; /* the client went: nothing more to read */
		/* Never the first to close: wait for the client's reset, so
		 * that no TIME_WAIT is left on this side (see the top). */
		while (n > 0)
			n = read(c, buf, sizeof(buf));
		close(c);
	}
}

/* A new netns held by a child, set up inside by the shell command @setup;
 * n->path names it. */
static int ns_hold(struct ns *n, const char *setup)
{
	int p[2];
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	n->holder = fork();
	if (n->holder == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) < 0 || system(setup) != 0 || write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		return -EIO;
	close(p[0]);
	snprintf(n->path, sizeof(n->path), "/proc/%d/ns/net", (int)n->holder);
	return 0;
}

/* A netns held by a child, with the backend address on a veth, a
 * route for the service ranges and the server running. */
static int ns_make(struct ns *n)
{
	int r = ns_hold(n, "ip link set lo up && ip link add bk0 type veth peer name bk1 && ip link set bk0 up && "
			   "ip link set bk1 up && ip addr add " BACKEND "/32 dev bk0 && ip route add 10.96.0.0/14 dev bk0");

	if (r < 0)
		return r;
	n->server = fork();
	if (n->server == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (enter(n) < 0)
			_exit(1);
		serve();
	}
	usleep(100000);
	return 0;
}

/* The tc variant's endpoint: a netns held by a child, its veth made by
 * flowsdn_netlink_veth_setup() from the socket LB's netns (the caller's),
 * published with FLOWSDN_EP_F_SVC_PACKET and the endpoint programs
 * attached to its host side. */
static int ep_make(struct ns *n)
{
	struct flowsdn_prefix pfx = { .len = 32 };
	struct flowsdn_endpoint e = { .id = 1, .identity = 1000, .flags = FLOWSDN_EP_F_SVC_PACKET, .n_addrs = 1 };
	struct flowsdn_veth veth;
	int r = ns_hold(n, "ip link set lo up");

	if (r < 0)
		return r;
	if (flowsdn_addr_parse(EP_ADDR, strlen(EP_ADDR), &pfx.addr) < 0)
		return -EINVAL;
	{
		FLOWSDN_OPTS(flowsdn_veth_config, cfg, .netns_path = n->path, .host_ifname = "bsvc0", .ifname = "eth0",
			     .mtu = 1500, .addrs = &pfx, .n_addrs = 1, .host_routes = true);
		r = flowsdn_netlink_veth_setup(&cfg, &veth, NULL);
	}
	if (r < 0)
		return r;
	e.addrs[0] = pfx.addr;
	e.host_ifindex = veth.host_ifindex;
	memcpy(e.mac, veth.mac, 6);
	memcpy(e.host_mac, veth.host_mac, 6);
	r = flowsdn_maps_endpoint_publish(flowsdn_datapath_maps(dp), &e);
	if (r == 0)
		r = flowsdn_datapath_attach(dp, veth.host_ifindex);
	return r;
}

static void svc_addr(int i, char *buf, size_t size, int second_octet)
{
	snprintf(buf, size, "10.%d.%d.%d", second_octet, (i + 1) / 256, (i + 1) % 256);
}

/* The @q quantile of @n values (linear between the two nearest ranks). */
static double quantile(const double *v, int n, double q)
{
	double s[MAX_ROUNDS], pos;
	int i;

	if (n < 1 || n > MAX_ROUNDS)
		return 0;
	memcpy(s, v, (size_t)n * sizeof(*v));
	qsort(s, (size_t)n, sizeof(*s), bench_cmp_double);
	pos = q * (n - 1);
	i = (int)pos;
	return i + 1 < n ? s[i] + (pos - i) * (s[i + 1] - s[i]) : s[i];
}

static double median(const double *v, int n)
{
	double s[MAX_ROUNDS * 4 > PUTS ? MAX_ROUNDS * 4 : PUTS];

	memcpy(s, v, (size_t)n * sizeof(*v));
	qsort(s, (size_t)n, sizeof(*s), bench_cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* The socket LB: an agent start with @s services in its configuration
 * file, the agent's own path — agent_config_load() (read, check every
 * service), agent_services_new() (read, validate, one batched publish,
 * one snapshot written and fsynced) — in a fresh state directory on
 * disk; then one more service through PUT (one journal record,
 * fdatasync).  Wall and CPU times in ms. */
static struct agent_services *svcs;

struct load_times {
	double all, all_cpu;
	double one, one_max, one_cpu; /* PUTS more PUTs: median, max, median CPU */
	double sync, sync_max;        /* as many bare appends + fdatasync of the same bytes */
};

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void service_body(int i, bool with_id, char *buf, size_t size)
{
	char addr[32];
	int n;

	svc_addr(i, addr, sizeof(addr), 96);
	n = snprintf(buf, size, "{");
	if (with_id)
		n += snprintf(buf + n, size - (size_t)n, "\"id\":\"fs-%032x\",", i + 1);
	snprintf(buf + n, size - (size_t)n,
		 "\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"%s\",\"port\":80}],"
		 "\"backends\":[{\"address\":\"" BACKEND "\",\"port\":%d}]}",
		 addr, BACKEND_PORT);
}

static void load_socklb(int s, struct load_times *t)
{
	struct agent_config *cfg = NULL;
	char dir[400], conf[440], body[512], id[40];
	struct json_writer *g;
	double t0, c0, one[PUTS], one_cpu[PUTS], sync[PUTS];
	FILE *f;
	int r, fd;

	snprintf(dir, sizeof(dir), "%s/state-%d", statebase, s);
	snprintf(conf, sizeof(conf), "%s/agent-%d.conf", statebase, s);
	f = fopen(conf, "we");
	if (!f || mkdir(dir, 0700) < 0)
		exit(1);
	fprintf(f, "{\"state-dir\":\"%s\",\"socket-lb-cgroup\":\"%s\",\"services\":[", dir, cgroup);
	for (int i = 0; i < s; i++) {
		service_body(i, true, body, sizeof(body));
		fprintf(f, "%s%s", i ? "," : "", body);
	}
	fprintf(f, "]}\n");
	if (fclose(f) != 0)
		exit(1);
	agent_services_free(svcs);
	svcs = NULL;
	t0 = bench_now_us();
	c0 = cpu_ms();
	r = agent_config_load(conf, &cfg, NULL);
	if (r == 0)
		r = agent_services_new(cfg, &agent_ops_kernel, NULL, dp, &svcs);
	t->all = (bench_now_us() - t0) / 1000;
	t->all_cpu = cpu_ms() - c0;
	if (r < 0) {
		fprintf(stderr, "bench/services: %d services: %s\n", s, flowsdn_strerror(r));
		exit(1);
	}
	/* PUTS more services, one at a time, each alternating with the floor
	 * the disk sets: a bare append of as many bytes to a file in the same
	 * directory and its fdatasync (what the journal record costs without
	 * any of our work). */
	snprintf(conf, sizeof(conf), "%s/bare-append", dir);
	fd = open(conf, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		exit(1);
	for (int k = 0; k < PUTS; k++) {
		service_body(s + k, false, body, sizeof(body));
		snprintf(id, sizeof(id), "fs-%032x", s + k + 1);
		g = json_writer_new(0);
		t0 = bench_now_us();
		c0 = cpu_ms();
		r = agent_services_put(svcs, id, body, strlen(body), g, NULL);
		one[k] = (bench_now_us() - t0) / 1000;
		one_cpu[k] = cpu_ms() - c0;
		json_writer_free(g);
		if (r < 0) {
			fprintf(stderr, "bench/services: PUT %s: %s\n", id, flowsdn_strerror(r));
			exit(1);
		}
		/* A journal record is the service with its ids: about twice the body. */
		t0 = bench_now_us();
		if (write(fd, body, strlen(body)) < 0 || write(fd, body, strlen(body)) < 0 || fdatasync(fd) < 0)
			exit(1);
		sync[k] = (bench_now_us() - t0) / 1000;
	}
	close(fd);
	t->one = median(one, PUTS);
	t->one_cpu = median(one_cpu, PUTS);
	t->sync = median(sync, PUTS);
	t->one_max = t->sync_max = 0;
	for (int k = 0; k < PUTS; k++) {
		t->one_max = one[k] > t->one_max ? one[k] : t->one_max;
		t->sync_max = sync[k] > t->sync_max ? sync[k] : t->sync_max;
	}
	agent_config_free(cfg);
}

static double load_file(enum variant v, int s)
{
	char path[128], cmd[256];
	FILE *f;
	double t0;

	snprintf(path, sizeof(path), "%s/rules-%s", tmpdir, vnames[v]);
	f = fopen(path, "we");
	if (!f)
		exit(1);
	if (v == V_IPT) {
		fprintf(f, "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
			   ":POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n");
		for (int i = 0; i < s; i++)
			fprintf(f, ":KUBE-SVC-%d - [0:0]\n:KUBE-SEP-%d - [0:0]\n", i, i);
		fprintf(f, "-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n");
		for (int i = 0; i < s; i++) {
			char a[32];

			svc_addr(i, a, sizeof(a), 97);
			fprintf(f, "-A KUBE-SERVICES -d %s/32 -p tcp -m comment --comment \"svc %d\" -m tcp --dport 80 "
				   "-j KUBE-SVC-%d\n", a, i, i);
			fprintf(f, "-A KUBE-SVC-%d -m comment --comment \"svc %d\" -j KUBE-SEP-%d\n", i, i, i);
			fprintf(f, "-A KUBE-SEP-%d -p tcp -m tcp -j DNAT --to-destination " BACKEND ":%d\n", i,
				BACKEND_PORT);
		}
		fprintf(f, "COMMIT\n");
	} else {
		fprintf(f, "flush ruleset\ntable ip svc {\n map vips {\n  type ipv4_addr . inet_service : "
			   "ipv4_addr . inet_service\n");
		if (s) {
			fprintf(f, "  elements = {");
			for (int i = 0; i < s; i++) {
				char a[32];

				svc_addr(i, a, sizeof(a), 98 + 1);
				fprintf(f, "%s %s . 80 : " BACKEND " . %d", i ? "," : "", a, BACKEND_PORT);
			}
			fprintf(f, " }\n");
		}
		fprintf(f, " }\n chain out {\n  type nat hook output priority -100;\n"
			   "  dnat ip addr . port to ip daddr . tcp dport map @vips\n }\n}\n");
	}
	fclose(f);
	if (enter(&nss[v]) < 0)
		exit(1);
	snprintf(cmd, sizeof(cmd), v == V_IPT ? "iptables-legacy-restore < %s" : "nft -f %s", path);
	t0 = bench_now_us();
	if (run(cmd) != 0)
		exit(1);
	return (bench_now_us() - t0) / 1000;
}

struct result {
	double rate, p50, p99;
	double block_min, block_med, block_max; /* µs per connection over a block */
	/* -p: per datapath program, runs and nanoseconds over the run */
	double runs[4], ns[4];
};

/* -p: the kernel's run-time statistics of the datapath's programs
 * (BPF_ENABLE_STATS, held for the bench's life: no sysctl is changed),
 * read around every run, so that each line says where its time went. */
enum { P_FROM, P_TO, P_CONNECT4, P_RELEASE, P_COUNT };
static const char *const pnames[P_COUNT] = { "from_container", "to_container", "connect4", "sock_release" };
static bool profile;
static int prog_fd[P_COUNT] = { -1, -1, -1, -1 };

static void prog_stats(double *runs, double *ns)
{
	for (int i = 0; i < P_COUNT; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		runs[i] = ns[i] = 0;
		if (prog_fd[i] >= 0 && bpf_obj_get_info_by_fd(prog_fd[i], &info, &len) == 0) {
			runs[i] = (double)info.run_cnt;
			ns[i] = (double)info.run_time_ns;
		}
	}
}

static int profile_open(const char *pins)
{
	char path[600];
	struct bpf_link_info li;
	__u32 len = sizeof(li);
	static int stats_fd = -1;
	int fd;

	if (stats_fd < 0 && (stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0)
		return -errno;
	/* Again after every agent start: the programs may be new ones. */
	for (int i = 0; i < P_COUNT; i++) {
		if (prog_fd[i] >= 0)
			close(prog_fd[i]);
		prog_fd[i] = -1;
	}
	snprintf(path, sizeof(path), "%s/prog_from_container", pins);
	prog_fd[P_FROM] = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/prog_to_container", pins);
	prog_fd[P_TO] = bpf_obj_get(path);
	for (int i = P_CONNECT4; i <= P_RELEASE; i++) {
		snprintf(path, sizeof(path), "%s/links/sock-%s", pins, i == P_CONNECT4 ? "connect4" : "release");
		fd = bpf_obj_get(path);
		memset(&li, 0, sizeof(li));
		len = sizeof(li);
		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &li, &len) == 0)
			prog_fd[i] = bpf_prog_get_fd_by_id(li.prog_id);
		if (fd >= 0)
			close(fd);
	}
	for (int i = 0; i < P_COUNT; i++)
		if (prog_fd[i] < 0)
			return -ENOENT;
	return 0;
}

/* -v: the kernel's TCP counters of a netns (/proc/PID/net/{snmp,netstat}
 * of its holder, "Tcp.OutRsts", "TcpExt.TW" ...), to print what changed
 * over one run. */
#define MAX_COUNTERS 512
struct counters {
	int n;
	char name[MAX_COUNTERS][48];
	unsigned long long val[MAX_COUNTERS];
};

static void counters_read(pid_t pid, struct counters *c)
{
	static const char *const files[] = { "snmp", "netstat" };

	c->n = 0;
	for (size_t k = 0; k < 2; k++) {
		char path[64], head[8192], vals[8192];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, files[k]);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(head, sizeof(head), f) && fgets(vals, sizeof(vals), f)) {
			char *hs, *vs, *h = strtok_r(head, " \n", &hs), *v = strtok_r(vals, " \n", &vs);

			if (!h || !v || strcmp(h, v) != 0 || strncmp(h, "Tcp", 3) != 0)
				continue;
			h[strlen(h) - 1] = '\0'; /* the ':' */
			while (c->n < MAX_COUNTERS && (v = strtok_r(NULL, " \n", &vs)) != NULL) {
				char *name = strtok_r(NULL, " \n", &hs);

				if (!name)
					break;
				snprintf(c->name[c->n], sizeof(c->name[0]), "%s.%s", h, name);
				c->val[c->n++] = strtoull(v, NULL, 10);
			}
		}
		fclose(f);
	}
}

static void counters_print(const char *what, const struct counters *a, const struct counters *b)
{
	printf("    %s:", what);
	for (int i = 0; i < a->n && i < b->n; i++)
		/* Tcp.CurrEstab and the like are gauges, the rest counters. */
		if (b->val[i] != a->val[i] && !strcmp(a->name[i], b->name[i]) && strcmp(a->name[i], "Tcp.MaxConn"))
			printf(" %s %+lld", a->name[i], (long long)(b->val[i] - a->val[i]));
	printf("\n");
}

/* One side of a pair: @v connecting to @ip. */
struct side {
	enum variant v;
	const char *ip;
};

/* What a side's run leaves before it: the connection tracking of the
 * netns it translates in flushed (conntrack for iptables and nft, the
 * datapath's own table for the tc path's endpoint). */
static void side_prepare(enum variant v)
{
	if (v == V_IPT || v == V_NFT) {
		char cmd[160];

		snprintf(cmd, sizeof(cmd), "nsenter --net=%s conntrack -F >/dev/null 2>&1", nss[v].path);
		if (system(cmd) != 0) {
			/* An empty table is fine. */
		}
	}
	if (v == V_TC) {
		struct flowsdn_addr a;

		if (flowsdn_addr_parse(EP_ADDR, strlen(EP_ADDR), &a) < 0 ||
		    flowsdn_maps_ct_flush(flowsdn_datapath_maps(dp), &a, NULL) < 0)
			exit(1);
	}
}

/* The client of one side, in its netns (socklb: the direct one's, joined
 * to the bench cgroup): @connects sequential connections in blocks of
 * BLOCK, each block started when the token arrives on @go_in and the
 * token passed on @go_out after it, so that the two sides of a pair take
 * turns every few milliseconds and the machine's drift falls on both
 * alike.  Only the blocks are timed; with -p, the datapath programs'
 * statistics are read around each block, so that they are this side's
 * alone.  Writes its struct result to @res_out. */
#define BLOCK 10
static void client(const struct side *sd, bool rr, int go_in, int go_out, int res_out)
{
	static const struct linger abort_close = { .l_onoff = 1, .l_linger = 0 };
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(!strcmp(sd->ip, BACKEND) ? BACKEND_PORT : 80) };
	double *lat = calloc((size_t)connects, sizeof(double)), busy = 0;
	double *blk = calloc((size_t)connects / BLOCK + 1, sizeof(double));
	struct result res = { 0 };
	int nb = 0;
	char buf[128] = { 0 }, tok;

	pin();
	inet_pton(AF_INET, sd->ip, &sa.sin_addr);
	if (!lat || !blk || enter(&nss[sd->v == V_SOCKLB ? V_DIRECT : sd->v]) < 0)
		_exit(1);
	if (sd->v == V_SOCKLB) {
		char path[600];
		int fd;

		snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(1);
		close(fd);
	}
	for (int i = 0; i < connects;) {
		double r0[P_COUNT], n0[P_COUNT], r1[P_COUNT], n1[P_COUNT], b0;

		if (read(go_in, &tok, 1) != 1)
			_exit(2);
		if (profile)
			prog_stats(r0, n0);
		b0 = bench_now_us();
		int i0 = i;

		for (int end = i + BLOCK < connects ? i + BLOCK : connects; i < end; i++) {
			int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			double c0 = bench_now_us();

			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
				_exit(3);
			lat[i] = bench_now_us() - c0;
			if (rr) {
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				if (write(fd, buf, 64) != 64)
					_exit(4);
				for (ssize_t got = 0, n; got < 128; got += n)
					if ((n = read(fd, buf, sizeof(buf))) <= 0)
						_exit(5);
			}
			/* An abortive close (RST): no TIME_WAIT on either side
			 * (see the top). */
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_close, sizeof(abort_close));
			close(fd);
		}
		busy += bench_now_us() - b0;
		blk[nb++] = (bench_now_us() - b0) / (i - i0);
		if (profile) {
			prog_stats(r1, n1);
			for (int k = 0; k < P_COUNT; k++) {
				res.runs[k] += r1[k] - r0[k];
				res.ns[k] += n1[k] - n0[k];
			}
		}
		if (write(go_out, "t", 1) != 1)
			_exit(2);
	}
	qsort(lat, (size_t)connects, sizeof(double), bench_cmp_double);
	res.rate = connects / (busy / 1e6);
	res.p50 = lat[connects / 2];
	res.p99 = lat[connects * 99 / 100];
	qsort(blk, (size_t)nb, sizeof(double), bench_cmp_double);
	res.block_min = blk[0];
	res.block_med = blk[nb / 2];
	res.block_max = blk[nb - 1];
	_exit(write(res_out, &res, sizeof(res)) == (ssize_t)sizeof(res) ? 0 : 6);
}

/* A pair: sides @sd[0] and @sd[1] run by two clients pinned to the same
 * CPU, taking turns block by block, @sd[@first] first; their results in
 * @res.  -v: the kernel's TCP counters of the netns involved, over the
 * pair. */
static void measure_pair(const struct side sd[2], bool rr, int first, struct result res[2])
{
	static struct counters before[4], after[4];
	pid_t ns_pid[4], pid[2];
	int go[2][2], rp[2][2], n_ns = 0;

	for (int i = 0; i < 2; i++) {
		enum variant v = sd[i].v;
		/* The server's netns, and the client's (the endpoint's for tc). */
		pid_t cand[2] = { nss[v == V_SOCKLB || v == V_TC ? V_DIRECT : v].holder,
				  nss[v == V_SOCKLB ? V_DIRECT : v].holder };

		side_prepare(v);
		for (int k = 0; k < 2; k++) {
			bool seen = false;

			for (int j = 0; j < n_ns; j++)
				seen |= ns_pid[j] == cand[k];
			if (!seen)
				ns_pid[n_ns++] = cand[k];
		}
	}
	for (int k = 0; verbose && k < n_ns; k++)
		counters_read(ns_pid[k], &before[k]);
	for (int i = 0; i < 2; i++)
		if (pipe2(go[i], O_CLOEXEC) < 0 || pipe2(rp[i], O_CLOEXEC) < 0)
			exit(1);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			exit(1);
		if (pid[i] == 0) {
			/* Only its own ends, so that the other side's death is
			 * an end of file here, not a wait for ever. */
			close(go[i][1]);
			close(go[1 - i][0]);
			close(rp[i][0]);
			close(rp[1 - i][0]);
			close(rp[1 - i][1]);
			client(&sd[i], rr, go[i][0], go[1 - i][1], rp[i][1]);
		}
		client_pid[i] = pid[i];
	}
	/* The parent keeps the token pipes' read ends until both are done,
	 * so that the last token passed finds its pipe; it closes every
	 * write end, so that a client that dies (a failed connect()) ends
	 * the other's wait and this one's read with an end of file. */
	if (write(go[first][1], "t", 1) != 1)
		exit(1);
	for (int i = 0; i < 2; i++) {
		close(go[i][1]);
		close(rp[i][1]);
	}
	bool failed = false;

	for (int i = 0; i < 2; i++) {
		bool got = read(rp[i][0], &res[i], sizeof(res[i])) == (ssize_t)sizeof(res[i]);
		int st = 0;

		waitpid(pid[i], &st, 0);
		client_pid[i] = 0;
		/* Exit 2: its turn never came (the other side died first). */
		if (!got) {
			fprintf(stderr, "bench/services: %s client to %s failed (exit %d)\n", vnames[sd[i].v], sd[i].ip,
				WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			failed = true;
		}
	}
	for (int i = 0; i < 2; i++) {
		close(go[i][0]);
		close(rp[i][0]);
	}
	if (failed)
		exit(1);
	if (verbose) {
		for (int i = 0; i < 2; i++)
			printf("  %s %s %s: %.0f/s p50 %.1f us p99 %.1f us; per block of %d, us per connection: "
			       "min %.1f median %.1f max %.1f\n",
			       vnames[sd[i].v], sd[i].ip, rr ? "req/resp" : "connect", res[i].rate, res[i].p50, res[i].p99,
			       BLOCK, res[i].block_min, res[i].block_med, res[i].block_max);
		for (int k = 0; k < n_ns; k++) {
			char what[48];

			counters_read(ns_pid[k], &after[k]);
			snprintf(what, sizeof(what), "netns of pid %d", (int)ns_pid[k]);
			counters_print(what, &before[k], &after[k]);
		}
	}
}

static void loadavg(char *buf, size_t size)
{
	FILE *f = fopen("/proc/loadavg", "re");

	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)size, f))
			buf[0] = '\0';
		fclose(f);
		buf[strcspn(buf, " \n") ? strcspn(buf, "\n") : 0] = '\0';
	}
}

/* What the bench leaves behind, removed at its end, on exit() and on
 * SIGTERM/SIGINT/SIGHUP/SIGPIPE (async-signal-safe calls only: this runs in the
 * handler too): the client, servers and netns holders (their netns and
 * the endpoint veth go with them), the bench cgroup (empty once the
 * client is gone), the agent's state directory on disk and the tmpfs
 * (the private bpffs in it, and with it the socket LB's links, goes with
 * the bench's private mount namespace). */
static void cleanup(void)
{
	struct timespec pause_20ms = { .tv_nsec = 20 * 1000 * 1000 };
	pid_t rm;

	if (getpid() != main_pid)
		return;
	for (int i = 0; i < 2; i++)
		if (client_pid[i] > 0)
			kill(client_pid[i], SIGKILL);
	for (int v = 0; v < V_COUNT; v++) {
		if (nss[v].server > 0)
			kill(nss[v].server, SIGKILL);
		if (nss[v].holder > 0)
			kill(nss[v].holder, SIGKILL);
		nss[v].server = nss[v].holder = 0;
	}
	while (waitpid(-1, NULL, 0) > 0)
		;
	for (int i = 0; cgroup[0] && i < 50 && rmdir(cgroup) < 0 && errno == EBUSY; i++)
		nanosleep(&pause_20ms, NULL);
	cgroup[0] = '\0';
	if (statebase[0] && (rm = fork()) == 0) {
		execl("/bin/rm", "rm", "-rf", "--one-file-system", statebase, (char *)NULL);
		_exit(127);
	} else if (statebase[0] && rm > 0) {
		int st;

		if (waitpid(rm, &st, 0) != rm || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			static const char msg[] = "bench/services: could not remove the agent state directory\n";

			if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
				/* Nothing more to say. */
			}
		}
	}
	statebase[0] = '\0';
	if (tmpdir[0]) {
		umount2(tmpdir, MNT_DETACH);
		rmdir(tmpdir);
		tmpdir[0] = '\0';
	}
}

static void on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int cgroup_make(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mnt[4096] = "";

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (sep && !strncmp(sep, " - cgroup2 ", 11) && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1)
			break;
		mnt[0] = '\0';
	}
	fclose(f);
	if (!mnt[0])
		return -ENOENT;
	snprintf(cgroup, sizeof(cgroup), "%s/flowsdn-bench-services-%d", mnt, (int)getpid());
	return mkdir(cgroup, 0755) < 0 ? -errno : 0;
}

int main(int argc, char **argv)
{
	char pins[96], la[128];
	struct statfs sfs;
	int opt, r;

	while ((opt = getopt(argc, argv, "n:r:c:s:ld:vph")) != -1) {
		switch (opt) {
		case 'v':
			verbose = true;
			break;
		case 'p':
			profile = true;
			break;
		case 's':
			only_s = atoi(optarg);
			break;
		case 'l':
			load_only = true;
			break;
		case 'd':
			snprintf(statedir, sizeof(statedir), "%s", optarg);
			break;
		case 'n':
			connects = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-n CONNECTS] [-r ROUNDS (1..%d)] [-c CPU] [-s S] [-l] [-d STATE-DIR-PARENT] [-v] [-p]\n", argv[0],
				MAX_ROUNDS);
			return 2;
		}
	}
	if (connects < 100 || connects > 1000000 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "bench/services: -n 100..1000000, -r 1..%d\n", MAX_ROUNDS);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench/services: needs root (namespaces, BPF, cgroups)\n");
		return 77;
	}
	main_pid = getpid();
	{
		struct sigaction sa = { .sa_handler = on_signal };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		sigaction(SIGPIPE, &sa, NULL); /* bench/services | head */
	}
	if (atexit(cleanup) != 0)
		return 1;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		perror("bench/services: private mount namespace");
		return 1;
	}
	/* The agent's state where production keeps it: a fresh directory on
	 * the filesystem of -d (default /var/lib, where /var/lib/flowsdn
	 * lives), never tmpfs, whose fsync costs nothing. */
	snprintf(statebase, sizeof(statebase), "%s/flowsdn-bench-services-XXXXXX", statedir);
	if (!mkdtemp(statebase)) {
		perror("bench/services: state directory");
		return 1;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bench-services-XXXXXX");
	if (!mkdtemp(tmpdir) || mount("tmpfs", tmpdir, "tmpfs", 0, "mode=0700") < 0) {
		perror("bench/services: tmpdir");
		return 1;
	}
	for (int v = 0; v < V_COUNT; v++)
		if (v != V_SOCKLB && v != V_TC && ns_make(&nss[v]) < 0)
			return 1;
	r = cgroup_make();
	if (r < 0) {
		fprintf(stderr, "bench/services: no cgroup v2 to make the bench cgroup in: %s\n", strerror(-r));
		return 1;
	}
	/* The socket LB variant: its own netns (the direct one's, so that
	 * both see the same stack), bpffs and cgroup. */
	if (enter(&nss[V_DIRECT]) < 0)
		return 1;
	snprintf(pins, sizeof(pins), "%s/bpf", tmpdir);
	{
		FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pins);
		r = flowsdn_datapath_open(&o, &dp);
	}
	if (r < 0) {
		fprintf(stderr, "bench/services: datapath: %s\n", flowsdn_strerror(r));
		return 1;
	}
	r = ep_make(&nss[V_TC]);
	if (r < 0) {
		fprintf(stderr, "bench/services: the tc variant's endpoint: %s\n", flowsdn_strerror(r));
		return 1;
	}
	loadavg(la, sizeof(la));
	printf("bench/services: %d connections per run, %d rounds, client and server on CPU %d, load average %s\n",
	       connects, rounds, cpu, la);
	if (statfs(statebase, &sfs) == 0)
		printf("agent state in %s (filesystem magic 0x%lx%s)\n", statebase, (unsigned long)sfs.f_type,
		       sfs.f_type == TMPFS_MAGIC ? ", tmpfs: fsync is free there, not what production pays" : "");
	printf("tc(packet) and direct(endpoint): from an endpoint netns over its veth; tc(packet)'s ratio is against "
	       "direct(endpoint)\n");
	static const char *const slots[] = { "direct", "socklb", "iptables(last)", "iptables(random)",
					     "nft", "direct(endpoint)", "tc(packet)" };
	/* The socket LB's ratio to direct at each S, per mode (0: not measured). */
	double socklb_ratio[2][sizeof(levels) / sizeof(levels[0])] = { { 0 } };

	for (size_t li = 0; li < sizeof(levels) / sizeof(levels[0]); li++) {
		int s = levels[li], target = s - 1, rnd = s > 1 ? (int)((unsigned)rand() % (unsigned)s) : 0;
		struct load_times t_sock;
		double t_ipt, t_nft;
		/* Per (mode, slot, round): rate, p50, p99.  Slots: 0 direct, 1 socklb, 2 ipt last, 3 ipt
		 * random, 4 nft, 5 direct(endpoint), 6 tc; the two references (0, 5) are run once beside
		 * each variant they are the reference of (ref[][][]), and each variant's ratio is taken
		 * against the reference run next to it (pair[][][]). */
		double rate[2][SLOTS][MAX_ROUNDS], p50[2][SLOTS][MAX_ROUNDS], p99[2][SLOTS][MAX_ROUNDS];
		double pair[2][SLOTS][MAX_ROUNDS];
		static double ref[2][2][3][MAX_ROUNDS * 4]; /* [mode][0 direct, 1 endpoint][rate, p50, p99][run] */
		int n_ref[2][2] = { { 0, 0 }, { 0, 0 } };
		/* -p: per (mode, slot, program) runs and ns summed over the rounds, and connections */
		double prof_runs[2][SLOTS][P_COUNT] = { { { 0 } } }, prof_ns[2][SLOTS][P_COUNT] = { { { 0 } } };
		double prof_conns[2][SLOTS] = { { 0 } };
		char a_sock[32], a_ipt[32], a_ipt_r[32], a_nft[32];
		static const int variants[] = { 1, 2, 3, 4, 6 };
		const int n_var = (int)(sizeof(variants) / sizeof(variants[0]));

		if (only_s && s != only_s)
			continue;
		load_socklb(s, &t_sock);
		if (profile && (r = profile_open(pins)) < 0) {
			fprintf(stderr, "bench/services: -p: the programs' statistics: %s\n", strerror(-r));
			return 1;
		}
		t_ipt = load_file(V_IPT, s);
		t_nft = load_file(V_NFT, s);
		svc_addr(target, a_sock, sizeof(a_sock), 96);
		svc_addr(target, a_ipt, sizeof(a_ipt), 97);
		svc_addr(rnd, a_ipt_r, sizeof(a_ipt_r), 97);
		svc_addr(target, a_nft, sizeof(a_nft), 99);
		for (int k = 0; k < rounds && !load_only; k++) {
			for (int mode = 0; mode < 2; mode++) {
				for (int jj = 0; jj < n_var; jj++) {
					/* The variants' order alternates over rounds, and within a pair
					 * which side runs first alternates too. */
					int slot = variants[k % 2 ? n_var - 1 - jj : jj], e = slot == 6;
					bool ref_first = (k + jj) % 2 == 0;
					struct side sd[2] = { { e ? V_TC : V_DIRECT, BACKEND }, { V_TC, a_sock } };
					struct result pr[2], res, rres;

					switch (slot) {
					case 1:
						sd[1] = (struct side){ V_SOCKLB, a_sock };
						break;
					case 2:
						sd[1] = (struct side){ V_IPT, a_ipt };
						break;
					case 3:
						sd[1] = (struct side){ V_IPT, a_ipt_r };
						break;
					case 4:
						sd[1] = (struct side){ V_NFT, a_nft };
						break;
					default:
						break;
					}
					measure_pair(sd, mode, ref_first ? 0 : 1, pr);
					rres = pr[0];
					res = pr[1];
					rate[mode][slot][k] = res.rate;
					p50[mode][slot][k] = res.p50;
					p99[mode][slot][k] = res.p99;
					pair[mode][slot][k] = res.rate / rres.rate;
					for (int i = 0; i < P_COUNT; i++) {
						prof_runs[mode][slot][i] += res.runs[i];
						prof_ns[mode][slot][i] += res.ns[i];
						prof_runs[mode][e ? 5 : 0][i] += rres.runs[i];
						prof_ns[mode][e ? 5 : 0][i] += rres.ns[i];
					}
					prof_conns[mode][slot] += connects;
					prof_conns[mode][e ? 5 : 0] += connects;
					ref[mode][e][0][n_ref[mode][e]] = rres.rate;
					ref[mode][e][1][n_ref[mode][e]] = rres.p50;
					ref[mode][e][2][n_ref[mode][e]] = rres.p99;
					n_ref[mode][e]++;
				}
			}
		}
		for (int mode = 0; mode < 2 && !load_only; mode++) {
			for (int j = 0; j < SLOTS; j++) {
				const char *m = mode ? "req/resp" : "connect";

				if (j == 0 || j == 5) {
					int e = j == 5, n = n_ref[mode][e];

					printf("%-8s S=%-5d %-16s %9.0f/s  connect p50 %6.1f us p99 %7.1f us  (%d runs, one "
					       "beside each variant)  ratio 1.00x direct\n",
					       m, s, slots[j], median(ref[mode][e][0], n), median(ref[mode][e][1], n),
					       median(ref[mode][e][2], n), n);
					continue;
				}
				/* The median of the per-pair ratios, and their quartiles: what the
				 * bench can resolve on this machine now. */
				printf("%-8s S=%-5d %-16s %9.0f/s  connect p50 %6.1f us p99 %7.1f us  pairs %d IQR "
				       "%.2f-%.2f  ratio %.2fx direct\n",
				       m, s, slots[j], median(rate[mode][j], rounds), median(p50[mode][j], rounds),
				       median(p99[mode][j], rounds), rounds, quantile(pair[mode][j], rounds, 0.25),
				       quantile(pair[mode][j], rounds, 0.75), median(pair[mode][j], rounds));
				if (j == 1)
					socklb_ratio[mode][li] = median(pair[mode][j], rounds);
			}
			/* Where the datapath's time went, per connection. */
			for (int j = 0; profile && j < SLOTS; j++) {
				static const int show[SLOTS] = { 0, 1, 0, 0, 0, 1, 1 };
				double total = 0;

				if (!show[j] || !prof_conns[mode][j])
					continue;
				printf("profile  S=%-5d %-16s", s, slots[j]);
				for (int i = 0; i < P_COUNT; i++) {
					double runs = prof_runs[mode][j][i];

					/* A program this variant's packets do not pass (a stray
					 * packet of another namespace's is not its cost). */
					if (runs < prof_conns[mode][j] / 100)
						continue;
					printf("  %s %.2f/conn x %.0f ns", pnames[i], runs / prof_conns[mode][j],
					       prof_ns[mode][j][i] / runs);
					total += prof_ns[mode][j][i] / prof_conns[mode][j];
				}
				printf("  = %.2f us of BPF per %s\n", total / 1000, mode ? "request/response" : "connection");
			}
		}
		printf("load    S=%-5d agent (config file read + start with S services) %7.1f ms (cpu %.1f), "
		       "one more PUT %.2f ms (cpu %.2f, max of %d %.2f; bare append+fdatasync %.2f, max %.2f); "
		       "iptables-restore %7.1f ms; nft -f %7.1f ms; goals <= 100 ms and <= 5 ms: %s, %s\n",
		       s, t_sock.all, t_sock.all_cpu, t_sock.one, t_sock.one_cpu, PUTS, t_sock.one_max, t_sock.sync,
		       t_sock.sync_max, t_ipt, t_nft, t_sock.all <= 100 ? "met" : "missed",
		       t_sock.one <= 5 ? "met" : "missed");
	}
	for (int mode = 0; mode < 2 && !load_only; mode++) {
		double r1 = socklb_ratio[mode][0], rn = socklb_ratio[mode][sizeof(levels) / sizeof(levels[0]) - 1];

		/* Against direct at each S, so that the machine's drift between S = 1 and
		 * S = 10,000 cancels out. */
		if (r1 > 0 && rn > 0)
			printf("%-8s socklb S=%d against S=1: %.2fx vs %.2fx direct, %+.1f %% (goal within 3 %%)\n",
			       mode ? "req/resp" : "connect", levels[sizeof(levels) / sizeof(levels[0]) - 1], rn, r1,
			       (rn / r1 - 1) * 100);
	}
	loadavg(la, sizeof(la));
	printf("load average at the end %s\n", la);
	agent_services_free(svcs);
	flowsdn_datapath_socklb_detach(dp);
	flowsdn_datapath_free(dp);
	cleanup();
	return 0;
}
