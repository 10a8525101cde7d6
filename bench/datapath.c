/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/datapath — same-node TCP throughput between two endpoints, one
 * iperf3 stream of T seconds (default 10), through:
 *   flowsdn  the endpoint programs (egress fib, TCX or tc, redirect_peer),
 *            endpoints wired by flowsdn_netlink_veth_setup();
 *   bridge   the reference CNI bridge plugin + host-local IPAM;
 *   ptp      the reference CNI ptp plugin + host-local IPAM;
 * all in one run, and prints Gbit/s and the ratios.  Never pass/fail.
 *
 * Runs as root and isolates itself: the process moves into a private
 * network and mount namespace (the "node"), the endpoint namespaces are
 * held by children that die with it, the plugins' IPAM state goes to a
 * temporary directory that is removed at the end.  Traffic never leaves
 * these namespaces.
 *
 * The three setups exist side by side and take turns, ROUNDS times (the
 * machine is shared: alternating spreads the noise evenly); the median of
 * each is compared.
 *
 * Usage: bench/datapath [-t SECONDS (1..60, default 10)] [-r ROUNDS (1..9, default 3)]
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>
#include "bench.h"

#define CNI_DIR "/usr/lib/cni"

#define MAX_ROUNDS 9

static int seconds = 10;
static int rounds = 3;
static char tmpdir[64];

struct holder {
	pid_t pid;
	char path[64];
};

static int spawn_netns(struct holder *h)
{
	int p[2];
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	h->pid = fork();
	if (h->pid < 0)
		return -errno;
	if (h->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) < 0 || system("ip link set lo up") != 0 || write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1) {
		close(p[0]);
		return -ECHILD;
	}
	close(p[0]);
	snprintf(h->path, sizeof(h->path), "/proc/%d/ns/net", (int)h->pid);
	return 0;
}

static void kill_netns(struct holder *h)
{
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		waitpid(h->pid, NULL, 0);
		h->pid = 0;
	}
}

/* Runs argv with @env_extra (NULL-terminated) in netns @ns (NULL: here),
 * @in on stdin, stdout into @out (may be NULL).  Exit status or -1. */
static int run(const char *ns, char *const argv[], char *const env[], const char *in, char *out, size_t out_size)
{
	int pin[2], pout[2], st;
	size_t len = 0;
	pid_t pid;

	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (ns) {
			int fd = open(ns, O_RDONLY | O_CLOEXEC);

			if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
				_exit(126);
		}
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		for (size_t i = 0; env && env[i]; i++)
			putenv(env[i]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	if (in && write(pin[1], in, strlen(in)) < 0)
		perror("write");
	close(pin[1]);
	for (;;) {
		char buf[4096];
		ssize_t n = read(pout[0], buf, sizeof(buf));

		if (n <= 0)
			break;
		if (out && len + 1 < out_size) {
			size_t k = (size_t)n < out_size - 1 - len ? (size_t)n : out_size - 1 - len;

			memcpy(out + len, buf, k);
			len += k;
		}
	}
	if (out)
		out[len] = '\0';
	close(pout[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* iperf3 server in @srv_ns on @ip, client in @cli_ns: Gbit/s received, or < 0. */
static double iperf(const char *cli_ns, const char *srv_ns, const char *ip)
{
	char t[16], out[1 << 16];
	char *srv_argv[] = { "iperf3", "-s", "-1", "-B", (char *)ip, NULL };
	char *cli_argv[] = { "iperf3", "-c", (char *)ip, "-t", t, "-J", NULL };
	const char *p;
	double bps = -1;
	pid_t srv;
	int rc = -1;

	snprintf(t, sizeof(t), "%d", seconds);
	srv = fork();
	if (srv == 0) {
		int fd = open(srv_ns, O_RDONLY | O_CLOEXEC), null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
			_exit(126);
		dup2(null, 1);
		execvp(srv_argv[0], srv_argv);
		_exit(127);
	}
	/* The server binds quickly; retry the client while it does not. */
	for (int i = 0; i < 20 && rc != 0; i++) {
		usleep(200 * 1000);
		rc = run(cli_ns, cli_argv, NULL, NULL, out, sizeof(out));
	}
	kill(srv, SIGKILL);
	waitpid(srv, NULL, 0);
	if (rc != 0)
		return -1;
	p = strstr(out, "\"sum_received\"");
	if (p)
		p = strstr(p, "\"bits_per_second\":");
	if (p)
		bps = strtod(p + strlen("\"bits_per_second\":"), NULL);
	return bps / 1e9;
}

/* One topology: client and server namespaces and the server's address. */
struct topo {
	const char *name;
	struct holder a, b;
	char ip[64];
	bool ok;
	double gbps[MAX_ROUNDS];
};

static struct flowsdn_datapath *dp;

static void setup_flowsdn(struct topo *t)
{
	struct holder *a = &t->a, *b = &t->b;
	struct flowsdn_veth va, vb;
	struct flowsdn_diag *err = NULL;
	struct flowsdn_prefix pa, pb;
	struct flowsdn_endpoint ea = { 0 }, eb = { 0 };
	char pins[96];
	int r;

	snprintf(pins, sizeof(pins), "%s/bpf", tmpdir);
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pins);
	r = flowsdn_datapath_open(&o, &dp);
	if (r < 0) {
		fprintf(stderr, "flowsdn: datapath: %s\n", flowsdn_strerror(r));
		return;
	}
	if (spawn_netns(a) < 0 || spawn_netns(b) < 0)
		return;
	if (flowsdn_prefix_parse("10.212.0.2/32", 13, NULL, &pa) < 0 ||
	    flowsdn_prefix_parse("10.212.0.3/32", 13, NULL, &pb) < 0)
		return;
	FLOWSDN_OPTS(flowsdn_veth_config, ca, .netns_path = a->path, .host_ifname = "fsdnbenchA", .ifname = "eth0",
		     .addrs = &pa, .n_addrs = 1);
	FLOWSDN_OPTS(flowsdn_veth_config, cb, .netns_path = b->path, .host_ifname = "fsdnbenchB", .ifname = "eth0",
		     .addrs = &pb, .n_addrs = 1);
	if (flowsdn_diag_new(&err) < 0)
		exit(1);
	if ((r = flowsdn_netlink_veth_setup(&ca, &va, err)) < 0 || (r = flowsdn_netlink_veth_setup(&cb, &vb, err)) < 0) {
		fprintf(stderr, "flowsdn: %s\n", flowsdn_diag_first_error(err) ? flowsdn_diag_first_error(err)->message
									: flowsdn_strerror(r));
		flowsdn_diag_free(err);
		return;
	}
	flowsdn_diag_free(err);
	ea = (struct flowsdn_endpoint){ .id = 1, .identity = 1001, .host_ifindex = va.host_ifindex, .n_addrs = 1 };
	eb = (struct flowsdn_endpoint){ .id = 2, .identity = 1002, .host_ifindex = vb.host_ifindex, .n_addrs = 1 };
	ea.addrs[0] = pa.addr;
	eb.addrs[0] = pb.addr;
	memcpy(ea.mac, va.mac, 6);
	memcpy(ea.host_mac, va.host_mac, 6);
	memcpy(eb.mac, vb.mac, 6);
	memcpy(eb.host_mac, vb.host_mac, 6);
	if ((r = flowsdn_maps_endpoint_publish(flowsdn_datapath_maps(dp), &ea)) < 0 ||
	    (r = flowsdn_maps_endpoint_publish(flowsdn_datapath_maps(dp), &eb)) < 0 ||
	    (r = flowsdn_datapath_attach(dp, va.host_ifindex)) < 0 || (r = flowsdn_datapath_attach(dp, vb.host_ifindex)) < 0) {
		fprintf(stderr, "flowsdn: %s\n", flowsdn_strerror(r));
		return;
	}
	printf("  flowsdn: egress fib, %s, redirect_peer\n",
	       flowsdn_datapath_attach_mode(dp) == FLOWSDN_ATTACH_TCX ? "TCX" : "tc clsact");
	snprintf(t->ip, sizeof(t->ip), "10.212.0.3");
	t->ok = true;
}

/* Extracts the first "address": "A.B.C.D/N" of a CNI result, without /N. */
static int result_ip(const char *json, char *ip, size_t size)
{
	const char *p = strstr(json, "\"address\"");
	size_t n = 0;

	if (!p || !(p = strchr(p + 9, '"')))
		return -1;
	p++;
	while (p[n] && p[n] != '/' && p[n] != '"' && n + 1 < size)
		n++;
	memcpy(ip, p, n);
	ip[n] = '\0';
	return n ? 0 : -1;
}

static int cni(const char *cmd, const char *type, const char *ns, const char *id, const char *conf, char *out,
	       size_t out_size)
{
	char e_cmd[64], e_id[96], e_ns[96], e_path[64] = "CNI_PATH=" CNI_DIR, e_if[] = "CNI_IFNAME=eth0";
	char *env[] = { e_cmd, e_id, e_ns, e_if, e_path, NULL };
	char bin[128];
	char *argv[] = { bin, NULL };

	snprintf(e_cmd, sizeof(e_cmd), "CNI_COMMAND=%s", cmd);
	snprintf(e_id, sizeof(e_id), "CNI_CONTAINERID=%s", id);
	snprintf(e_ns, sizeof(e_ns), "CNI_NETNS=%s", ns);
	snprintf(bin, sizeof(bin), CNI_DIR "/%s", type);
	return run(NULL, argv, env, conf, out, out_size);
}

static void cni_conf(const char *type, const char *subnet, char *conf, size_t size)
{
	if (strcmp(type, "bridge") == 0)
		snprintf(conf, size,
			 "{\"cniVersion\":\"1.0.0\",\"name\":\"bench-bridge\",\"type\":\"bridge\",\"bridge\":\"fsdnbench0\","
			 "\"isGateway\":true,\"ipMasq\":false,\"ipam\":{\"type\":\"host-local\",\"subnet\":\"%s\","
			 "\"dataDir\":\"%s/ipam\"}}",
			 subnet, tmpdir);
	else
		snprintf(conf, size,
			 "{\"cniVersion\":\"1.0.0\",\"name\":\"bench-ptp\",\"type\":\"ptp\",\"ipMasq\":false,"
			 "\"ipam\":{\"type\":\"host-local\",\"subnet\":\"%s\",\"dataDir\":\"%s/ipam\"}}",
			 subnet, tmpdir);
}

static void setup_cni(struct topo *t, const char *subnet)
{
	char conf[1024], out[8192];

	cni_conf(t->name, subnet, conf, sizeof(conf));
	if (spawn_netns(&t->a) < 0 || spawn_netns(&t->b) < 0)
		return;
	if (cni("ADD", t->name, t->a.path, "bench-a", conf, out, sizeof(out)) != 0) {
		fprintf(stderr, "%s ADD a: %s\n", t->name, out);
		return;
	}
	if (cni("ADD", t->name, t->b.path, "bench-b", conf, out, sizeof(out)) != 0 ||
	    result_ip(out, t->ip, sizeof(t->ip)) < 0) {
		fprintf(stderr, "%s ADD b: %s\n", t->name, out);
		return;
	}
	t->ok = true;
}

static void teardown_cni(struct topo *t, const char *subnet)
{
	char conf[1024], out[8192];

	cni_conf(t->name, subnet, conf, sizeof(conf));
	if (t->a.pid)
		cni("DEL", t->name, t->a.path, "bench-a", conf, out, sizeof(out));
	if (t->b.pid)
		cni("DEL", t->name, t->b.path, "bench-b", conf, out, sizeof(out));
	kill_netns(&t->a);
	kill_netns(&t->b);
}

static double median(const double *v, int n)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, (size_t)n * sizeof(*v));
	qsort(s, (size_t)n, sizeof(*s), bench_cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static const char *const subnets[] = { NULL, "10.213.0.0/24", "10.214.0.0/24" };
	struct topo topo[3] = { { .name = "flowsdn" }, { .name = "bridge" }, { .name = "ptp" } };
	char pins[96];
	double med[3];
	int opt, status = 0;

	while ((opt = getopt(argc, argv, "t:r:h")) != -1) {
		switch (opt) {
		case 't':
			seconds = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS (1..60)] [-r ROUNDS (1..%d)]\n", argv[0], MAX_ROUNDS);
			return 2;
		}
	}
	if (seconds < 1 || seconds > 60 || rounds < 1 || rounds > MAX_ROUNDS || optind != argc) {
		fprintf(stderr, "usage: %s [-t SECONDS (1..60)] [-r ROUNDS (1..%d)]\n", argv[0], MAX_ROUNDS);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench/datapath: needs root (namespaces, BPF)\n");
		return 77;
	}
	if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		perror("unshare");
		return 1;
	}
	if (system("ip link set lo up") != 0)
		return 1;
	/* ptp and bridge (isGateway) route through the node: forwarding on. */
	if (flowsdn_netlink_sysctl_write(NULL, "net.ipv4.ip_forward", "1", NULL) < 0) {
		fprintf(stderr, "bench/datapath: cannot enable IPv4 forwarding\n");
		return 1;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/flowsdn-bench-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}

	printf("datapath throughput: iperf3 TCP, 1 stream, %d s, IPv4, two endpoints on one node;\n"
	       "%d round(s), the three setups taking turns in each round, median shown\n",
	       seconds, rounds);
	setup_flowsdn(&topo[0]);
	setup_cni(&topo[1], subnets[1]);
	setup_cni(&topo[2], subnets[2]);
	for (int r = 0; r < rounds; r++) {
		printf("  round %d:", r + 1);
		for (int i = 0; i < 3; i++) {
			topo[i].gbps[r] = topo[i].ok ? iperf(topo[i].a.path, topo[i].b.path, topo[i].ip) : -1;
			printf("  %s %.2f", topo[i].name, topo[i].gbps[r]);
			fflush(stdout);
		}
		printf("\n");
	}
	for (int i = 0; i < 3; i++) {
		med[i] = topo[i].ok ? median(topo[i].gbps, rounds) : -1;
		printf("  %-10s %8.2f Gbit/s\n", topo[i].name, med[i]);
		status |= med[i] <= 0;
	}
	if (med[0] > 0 && med[2] > 0)
		printf("  flowsdn/ptp    %.2fx  (goal >= 1.0)\n", med[0] / med[2]);
	if (med[0] > 0 && med[1] > 0)
		printf("  flowsdn/bridge %.2fx\n", med[0] / med[1]);

	flowsdn_netlink_veth_teardown("fsdnbenchA", NULL, 0, NULL);
	flowsdn_netlink_veth_teardown("fsdnbenchB", NULL, 0, NULL);
	kill_netns(&topo[0].a);
	kill_netns(&topo[0].b);
	flowsdn_datapath_free(dp);
	snprintf(pins, sizeof(pins), "%s/bpf", tmpdir);
	umount2(pins, MNT_DETACH);
	teardown_cni(&topo[1], subnets[1]);
	teardown_cni(&topo[2], subnets[2]);
	{
		char *rm[] = { "rm", "-rf", "--", tmpdir, NULL };

		run(NULL, rm, NULL, NULL, NULL, 0);
	}
	return status;
}
