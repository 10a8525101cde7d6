/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/cni — ADD and DEL latency of flowsdn-cni (with flowsdn-agent) and
 * of the reference bridge + host-local plugins, in the same run.
 *
 * Each iteration gives each plugin a fresh network namespace (made before
 * the clock starts) and times, as a runtime does, fork + exec of the
 * plugin with the configuration on stdin until its stdout is read and it
 * has exited.  Which plugin goes first alternates every iteration, for ADD
 * and for DEL (a second veth delete in a row costs more than the first),
 * and load from elsewhere on the machine hits both alike.  The state of
 * both (the agent's state directory, host-local's dataDir) is on the file
 * system of /var/lib, as on a node, not on tmpfs.  Both get IPv4 only
 * (the bridge plugin waits for IPv6 duplicate address detection, which
 * would only measure the kernel's DAD timer).  Then P ADDs of each plugin
 * are started at once, each timed, beside the lone ADD.  Runs in a
 * private network and mount namespace; its directory under /var/lib is
 * removed at the end.  Prints figures (median, p95, p99, the load average
 * before and after), never pass/fail.
 *
 *   bench/cni [-n ITERATIONS] [-P PARALLEL] [--attach-mode tc|tcx|auto] [--agent PATH]
 *             [--plugin PATH] [--cni-path DIR] [--state-parent DIR]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

/* A netns held by a child; path /proc/PID/ns/net. */
static pid_t ns_new(char path[64])
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) < 0 || write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, 1) != 1) {
		close(p[0]);
		return -1;
	}
	close(p[0]);
	snprintf(path, 64, "/proc/%d/ns/net", (int)pid);
	return pid;
}

static void ns_free(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Runs @plugin as a runtime does; returns its exit status, the elapsed
 * time in *ms. */
static int exec_plugin(const char *plugin, const char *cmd, const char *cid, const char *netns, const char *cni_path,
		       const char *conf, double *ms)
{
	int in[2], out[2], st;
	char buf[8192];
	double t0 = bench_now_ms();
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char e_cmd[32], e_cid[128], e_ns[96], e_path[PATH_MAX + 16];
		char *envp[] = { e_cmd, e_cid, e_ns, "CNI_IFNAME=eth0", e_path, "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
				 NULL };

		snprintf(e_cmd, sizeof(e_cmd), "CNI_COMMAND=%s", cmd);
		snprintf(e_cid, sizeof(e_cid), "CNI_CONTAINERID=%s", cid);
		snprintf(e_ns, sizeof(e_ns), "CNI_NETNS=%s", netns);
		snprintf(e_path, sizeof(e_path), "CNI_PATH=%s", cni_path);
		dup2(in[0], 0);
		dup2(out[1], 1);
		execle(plugin, plugin, (char *)NULL, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (write(in[1], conf, strlen(conf)) < 0)
		perror("write");
	close(in[1]);
	while (read(out[0], buf, sizeof(buf)) > 0)
		;
	close(out[0]);
	waitpid(pid, &st, 0);
	*ms = bench_now_ms() - t0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double median, p95, p99;
};

static double rank(const double *sorted, size_t n, double q)
{
	size_t i = (size_t)((double)n * q + 0.5);

	return sorted[i ? (i > n ? n : i) - 1 : 0];
}

static struct stats stats_of(double *v, size_t n)
{
	struct stats s;

	qsort(v, n, sizeof(*v), cmp);
	s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s.p95 = rank(v, n, 0.95);
	s.p99 = rank(v, n, 0.99);
	return s;
}

/* @p ADDs of @plugin started at once (each in its fresh netns, all made
 * before), each timed as above; the netns are freed after their DELs. */
static int parallel_adds(const char *plugin, const char *cni_path, const char *conf, const char *prefix, size_t p,
			 double *ms)
{
	pid_t *holders = calloc(p, sizeof(*holders)), *kids = calloc(p, sizeof(*kids));
	char (*ns)[64] = calloc(p, 64);
	int go[2], res[2], errors = 0;

	if (!holders || !kids || !ns)
		return -1;
	/* The holders first: they must not keep the start pipe open. */
	for (size_t i = 0; i < p; i++)
		if ((holders[i] = ns_new(ns[i])) < 0)
			return -1;
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0)
		return -1;
	for (size_t i = 0; i < p; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			char cid[64], c;
			double t;
			int st;

			close(go[1]);
			if (read(go[0], &c, 1) < 0)
				_exit(1);
			snprintf(cid, sizeof(cid), "%s%zu", prefix, i);
			st = exec_plugin(plugin, "ADD", cid, ns[i], cni_path, conf, &t);
			if (write(res[1], &(struct { size_t i; double t; int st; }){ i, t, st },
				  sizeof(struct { size_t i; double t; int st; })) < 0)
				_exit(1);
			_exit(0);
		}
	}
	close(go[0]);
	close(res[1]);
	close(go[1]); /* all start: read() returns 0 */
	for (size_t k = 0; k < p; k++) {
		struct { size_t i; double t; int st; } r;

		if (read(res[0], &r, sizeof(r)) != (ssize_t)sizeof(r) || r.i >= p) {
			errors++;
			continue;
		}
		ms[r.i] = r.t;
		errors += r.st != 0;
	}
	close(res[0]);
	for (size_t i = 0; i < p; i++)
		waitpid(kids[i], NULL, 0);
	for (size_t i = 0; i < p; i++) {
		char cid[64];
		double t;

		snprintf(cid, sizeof(cid), "%s%zu", prefix, i);
		errors += exec_plugin(plugin, "DEL", cid, ns[i], cni_path, conf, &t) != 0;
		ns_free(holders[i]);
	}
	free(holders);
	free(kids);
	free(ns);
	return errors;
}

/* The directory of this executable, for the default paths. */
static void self_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	if (n <= 0) {
		snprintf(buf, size, ".");
		return;
	}
	buf[n] = '\0';
	*strrchr(buf, '/') = '\0';
	/* libtool puts the real binary in .libs/ */
	if (strlen(buf) > 6 && !strcmp(buf + strlen(buf) - 6, "/.libs"))
		buf[strlen(buf) - 6] = '\0';
}

static int wait_socket(const char *path, int ms)
{
	struct stat st;

	for (int i = 0; i < ms / 10; i++) {
		if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
			return 0;
		usleep(10000);
	}
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "iterations", required_argument, NULL, 'n' },
		{ "agent", required_argument, NULL, 'a' },
		{ "plugin", required_argument, NULL, 'p' },
		{ "cni-path", required_argument, NULL, 'c' },
		{ "attach-mode", required_argument, NULL, 'm' },
		{ "parallel", required_argument, NULL, 'P' },
		{ "state-parent", required_argument, NULL, 's' },
		{ 0 },
	};
	char dir[PATH_MAX], agent[PATH_MAX + 32], plugin[PATH_MAX + 32], tmp[] = "/tmp/bench-cni.XXXXXX";
	char state[PATH_MAX];
	const char *state_parent = "/var/lib";
	unsigned long par = 50;
	double load0[3] = { 0 }, load1[3] = { 0 }, *pf, *pb;
	struct stats s_pf, s_pb;
	char cmd_timing[2 * PATH_MAX + 128], agent_timing[1024] = "";
	char conf_path[PATH_MAX], sock[PATH_MAX], fconf[3 * PATH_MAX], bconf[3 * PATH_MAX], cmd[PATH_MAX + 16];
	const char *cni_path = "/usr/lib/cni", *attach = "tc";
	double *fa, *fd, *ba, *bd;
	unsigned long n = 200;
	struct stats s_fa, s_fd, s_ba, s_bd;
	pid_t agent_pid;
	FILE *f;
	int c, errors = 0;

	self_dir(dir, sizeof(dir));
	snprintf(agent, sizeof(agent), "%s/../bin/flowsdn-agent", dir);
	snprintf(plugin, sizeof(plugin), "%s/../bin/flowsdn-cni", dir);
	while ((c = getopt_long(argc, argv, "n:P:", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'P': par = strtoul(optarg, NULL, 10); break;
		case 's': state_parent = optarg; break;
		case 'a': snprintf(agent, sizeof(agent), "%s", optarg); break;
		case 'p': snprintf(plugin, sizeof(plugin), "%s", optarg); break;
		case 'c': cni_path = optarg; break;
		case 'm': attach = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-n ITERATIONS] [-P PARALLEL] [--attach-mode tc|tcx|auto] [--agent PATH] "
				"[--plugin PATH] [--cni-path DIR] [--state-parent DIR]\n", argv[0]);
			return 2;
		}
	}
	if (strcmp(attach, "tc") && strcmp(attach, "tcx") && strcmp(attach, "auto")) {
		fprintf(stderr, "bench/cni: --attach-mode must be tc, tcx or auto\n");
		return 2;
	}
	if (n < 1 || n > 100000 || par < 1 || par > 500) {
		fprintf(stderr, "bench/cni: -n must be in [1, 100000], -P in [1, 500]\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench/cni: needs root (network namespaces, veths, BPF)\n");
		return 77;
	}
	snprintf(cmd, sizeof(cmd), "%s/bridge", cni_path);
	if (access(cmd, X_OK) < 0) {
		fprintf(stderr, "bench/cni: %s missing: apt-get install containernetworking-plugins\n", cmd);
		return 77;
	}
	if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		perror("bench/cni: private namespaces");
		return 1;
	}
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	/* A tmpfs for the socket and the bpffs mount point; the state of both
	 * plugins lives where a node keeps it (the file system of /var/lib). */
	if (mount("tmpfs", tmp, "tmpfs", 0, "mode=0700") < 0) {
		perror("mount tmpfs");
		return 1;
	}
	snprintf(state, sizeof(state), "%s/bench-cni.XXXXXX", state_parent);
	if (!mkdtemp(state)) {
		perror(state);
		return 1;
	}
	if (system("ip link set lo up") != 0)
		return 1;
	snprintf(sock, sizeof(sock), "%s/agent.sock", tmp);
	snprintf(conf_path, sizeof(conf_path), "%s/agent.json", tmp);
	f = fopen(conf_path, "w");
	if (!f)
		return 1;
	fprintf(f, "{\"socket\":\"%s\",\"state-dir\":\"%s/state\",\"bpf-pin-dir\":\"%s/bpf\",\"pools\":[\"10.252.0.0/16\"],"
		   "\"attach-mode\":\"%s\"}\n", sock, state, tmp, attach);
	fclose(f);
	agent_pid = fork();
	if (agent_pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 2);
		execl(agent, agent, "--config", conf_path, (char *)NULL);
		_exit(127);
	}
	if (wait_socket(sock, 10000) < 0) {
		fprintf(stderr, "bench/cni: %s did not start\n", agent);
		return 1;
	}
	snprintf(fconf, sizeof(fconf),
		 "{\"cniVersion\":\"1.0.0\",\"name\":\"flowsdn\",\"type\":\"flowsdn-cni\",\"agentSocket\":\"%s\","
		 "\"queueDir\":\"%s/state/cni-queue\"}", sock, state);
	snprintf(bconf, sizeof(bconf),
		 "{\"cniVersion\":\"1.0.0\",\"name\":\"benchnet\",\"type\":\"bridge\",\"bridge\":\"fsdbench0\","
		 "\"isGateway\":true,\"ipam\":{\"type\":\"host-local\",\"ranges\":[[{\"subnet\":\"10.253.0.0/16\"}]],"
		 "\"dataDir\":\"%s/host-local\"}}", state);
	getloadavg(load0, 3);
	fa = calloc(n, sizeof(double));
	fd = calloc(n, sizeof(double));
	ba = calloc(n, sizeof(double));
	bd = calloc(n, sizeof(double));
	if (!fa || !fd || !ba || !bd)
		return 1;
	for (unsigned long i = 0; i < n; i++) {
		char ns1[64], ns2[64], cid[64];
		pid_t h1 = ns_new(ns1), h2 = ns_new(ns2);

		if (h1 < 0 || h2 < 0) {
			fprintf(stderr, "bench/cni: netns\n");
			return 1;
		}
		snprintf(cid, sizeof(cid), "bench%lu", i);
		/* Who goes first alternates, for ADD and for DEL. */
		if (i % 2 == 0) {
			errors += exec_plugin(plugin, "ADD", cid, ns1, cni_path, fconf, &fa[i]) != 0;
			errors += exec_plugin(cmd, "ADD", cid, ns2, cni_path, bconf, &ba[i]) != 0;
			errors += exec_plugin(plugin, "DEL", cid, ns1, cni_path, fconf, &fd[i]) != 0;
			errors += exec_plugin(cmd, "DEL", cid, ns2, cni_path, bconf, &bd[i]) != 0;
		} else {
			errors += exec_plugin(cmd, "ADD", cid, ns2, cni_path, bconf, &ba[i]) != 0;
			errors += exec_plugin(plugin, "ADD", cid, ns1, cni_path, fconf, &fa[i]) != 0;
			errors += exec_plugin(cmd, "DEL", cid, ns2, cni_path, bconf, &bd[i]) != 0;
			errors += exec_plugin(plugin, "DEL", cid, ns1, cni_path, fconf, &fd[i]) != 0;
		}
		ns_free(h1);
		ns_free(h2);
	}
	/* The agent's own view of the same ADDs and DELs (its share of them). */
	snprintf(cmd_timing, sizeof(cmd_timing),
		 "curl -s --max-time 5 --unix-socket '%s' http://localhost/v1/cni/timing > '%s/timing.json' 2>/dev/null",
		 sock, tmp);
	if (system(cmd_timing) == 0) {
		char tpath[PATH_MAX + 16];
		FILE *tf;

		snprintf(tpath, sizeof(tpath), "%s/timing.json", tmp);
		tf = fopen(tpath, "r");
		if (tf) {
			if (!fgets(agent_timing, sizeof(agent_timing), tf))
				agent_timing[0] = '\0';
			fclose(tf);
		}
	}
	pf = calloc(par, sizeof(double));
	pb = calloc(par, sizeof(double));
	if (!pf || !pb)
		return 1;
	errors += parallel_adds(plugin, cni_path, fconf, "par", par, pf);
	errors += parallel_adds(cmd, cni_path, bconf, "par", par, pb);
	getloadavg(load1, 3);
	kill(agent_pid, SIGTERM);
	waitpid(agent_pid, NULL, 0);
	s_pf = stats_of(pf, par);
	s_pb = stats_of(pb, par);
	s_fa = stats_of(fa, n);
	s_fd = stats_of(fd, n);
	s_ba = stats_of(ba, n);
	s_bd = stats_of(bd, n);
	printf("bench/cni: %lu iterations, a fresh netns each, IPv4, timed around fork+exec+wait; order alternating;\n"
	       "  state in %s (%s); agent attach-mode %s; load average %.2f %.2f %.2f before, %.2f %.2f %.2f after\n",
	       n, state, state_parent, attach, load0[0], load0[1], load0[2], load1[0], load1[1], load1[2]);
	printf("%-24s %10s %10s %10s %10s %10s %10s\n", "", "ADD med", "ADD p95", "ADD p99", "DEL med", "DEL p95",
	       "DEL p99");
	printf("%-24s %7.2f ms %7.2f ms %7.2f ms %7.2f ms %7.2f ms %7.2f ms\n", "flowsdn-cni", s_fa.median, s_fa.p95,
	       s_fa.p99, s_fd.median, s_fd.p95, s_fd.p99);
	printf("%-24s %7.2f ms %7.2f ms %7.2f ms %7.2f ms %7.2f ms %7.2f ms\n", "bridge + host-local", s_ba.median,
	       s_ba.p95, s_ba.p99, s_bd.median, s_bd.p95, s_bd.p99);
	printf("%-24s %9.2fx %9.2fx %9.2fx %9.2fx %9.2fx %9.2fx\n", "ratio flowsdn/bridge", s_fa.median / s_ba.median,
	       s_fa.p95 / s_ba.p95, s_fa.p99 / s_ba.p99, s_fd.median / s_bd.median, s_fd.p95 / s_bd.p95,
	       s_fd.p99 / s_bd.p99);
	if (agent_timing[0])
		printf("agent-side, sequential part (GET /v1/cni/timing): %s\n", agent_timing);
	printf("%lu ADDs at once: %-10s median %7.2f ms p95 %7.2f ms = %5.2fx its lone ADD median\n", par, "flowsdn-cni",
	       s_pf.median, s_pf.p95, s_pf.median / s_fa.median);
	printf("%lu ADDs at once: %-10s median %7.2f ms p95 %7.2f ms = %5.2fx its lone ADD median\n", par, "bridge",
	       s_pb.median, s_pb.p95, s_pb.median / s_ba.median);
	printf("goals: ADD median <= 0.40x (%s), ADD p95 <= 0.50x (%s), DEL median <= 0.30x (%s), "
	       "%lu parallel ADDs median <= 2x lone (%s); %d plugin errors\n",
	       s_fa.median / s_ba.median <= 0.4 ? "met" : "not met", s_fa.p95 / s_ba.p95 <= 0.5 ? "met" : "not met",
	       s_fd.median / s_bd.median <= 0.3 ? "met" : "not met", par,
	       s_pf.median / s_fa.median <= 2.0 ? "met" : "not met", errors);
	free(pf);
	free(pb);
	{
		char rm[PATH_MAX + 16];

		snprintf(rm, sizeof(rm), "rm -rf '%s'", state);
		if (system(rm) != 0)
			fprintf(stderr, "bench/cni: could not remove %s\n", state);
	}
	umount2(tmp, MNT_DETACH);
	rmdir(tmp);
	free(fa);
	free(fd);
	free(ba);
	free(bd);
	return errors ? 1 : 0;
}
