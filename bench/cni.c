/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/cni — ADD and DEL latency of flowsdn-cni (with flowsdn-agent) and
 * of the reference bridge + host-local plugins, in the same run.
 *
 * Each iteration gives each plugin a fresh network namespace (made before
 * the clock starts) and times, as a runtime does, fork + exec of the
 * plugin with the configuration on stdin until its stdout is read and it
 * has exited.  Iterations alternate between the two plugins so that load
 * from elsewhere on the machine hits both alike.  Both get IPv4 only
 * (the bridge plugin waits for IPv6 duplicate address detection, which
 * would only measure the kernel's DAD timer).  Runs in a private network
 * and mount namespace: nothing outlives it.  Prints figures, never
 * pass/fail.
 *
 *   bench/cni [-n ITERATIONS] [--attach-mode tc|tcx|auto] [--agent PATH] [--plugin PATH]
 *             [--cni-path DIR]
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

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

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
	double t0 = now_ms();
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
	*ms = now_ms() - t0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double median, p95;
};

static struct stats stats_of(double *v, size_t n)
{
	struct stats s;

	qsort(v, n, sizeof(*v), cmp);
	s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s.p95 = v[(size_t)((double)n * 0.95 + 0.5) - 1];
	return s;
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
		{ 0 },
	};
	char dir[PATH_MAX], agent[PATH_MAX + 32], plugin[PATH_MAX + 32], tmp[] = "/tmp/bench-cni.XXXXXX";
	char conf_path[PATH_MAX], sock[PATH_MAX], fconf[2 * PATH_MAX], bconf[2 * PATH_MAX], cmd[PATH_MAX + 16];
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
	while ((c = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'a': snprintf(agent, sizeof(agent), "%s", optarg); break;
		case 'p': snprintf(plugin, sizeof(plugin), "%s", optarg); break;
		case 'c': cni_path = optarg; break;
		case 'm': attach = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-n ITERATIONS] [--attach-mode tc|tcx|auto] [--agent PATH] [--plugin PATH] "
				"[--cni-path DIR]\n", argv[0]);
			return 2;
		}
	}
	if (strcmp(attach, "tc") && strcmp(attach, "tcx") && strcmp(attach, "auto")) {
		fprintf(stderr, "bench/cni: --attach-mode must be tc, tcx or auto\n");
		return 2;
	}
	if (n < 1 || n > 100000) {
		fprintf(stderr, "bench/cni: -n must be in [1, 100000]\n");
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
	/* A tmpfs for the state: the figures measure the plugins, not the disk. */
	if (mount("tmpfs", tmp, "tmpfs", 0, "mode=0700") < 0) {
		perror("mount tmpfs");
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
		   "\"attach-mode\":\"%s\"}\n", sock, tmp, tmp, attach);
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
		 "\"queueDir\":\"%s/state/cni-queue\"}", sock, tmp);
	snprintf(bconf, sizeof(bconf),
		 "{\"cniVersion\":\"1.0.0\",\"name\":\"benchnet\",\"type\":\"bridge\",\"bridge\":\"fsdbench0\","
		 "\"isGateway\":true,\"ipam\":{\"type\":\"host-local\",\"ranges\":[[{\"subnet\":\"10.253.0.0/16\"}]],"
		 "\"dataDir\":\"%s/host-local\"}}", tmp);
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
		errors += exec_plugin(plugin, "ADD", cid, ns1, cni_path, fconf, &fa[i]) != 0;
		errors += exec_plugin(cmd, "ADD", cid, ns2, cni_path, bconf, &ba[i]) != 0;
		errors += exec_plugin(plugin, "DEL", cid, ns1, cni_path, fconf, &fd[i]) != 0;
		errors += exec_plugin(cmd, "DEL", cid, ns2, cni_path, bconf, &bd[i]) != 0;
		ns_free(h1);
		ns_free(h2);
	}
	kill(agent_pid, SIGTERM);
	waitpid(agent_pid, NULL, 0);
	s_fa = stats_of(fa, n);
	s_fd = stats_of(fd, n);
	s_ba = stats_of(ba, n);
	s_bd = stats_of(bd, n);
	printf("bench/cni: %lu iterations, a fresh netns each, IPv4, timed around fork+exec+wait; agent attach-mode %s\n",
	       n, attach);
	printf("%-24s %12s %12s %12s %12s\n", "", "ADD median", "ADD p95", "DEL median", "DEL p95");
	printf("%-24s %9.2f ms %9.2f ms %9.2f ms %9.2f ms\n", "flowsdn-cni", s_fa.median, s_fa.p95, s_fd.median, s_fd.p95);
	printf("%-24s %9.2f ms %9.2f ms %9.2f ms %9.2f ms\n", "bridge + host-local", s_ba.median, s_ba.p95, s_bd.median,
	       s_bd.p95);
	printf("%-24s %11.2fx %11.2fx %11.2fx %11.2fx\n", "ratio flowsdn/bridge", s_fa.median / s_ba.median,
	       s_fa.p95 / s_ba.p95, s_fd.median / s_bd.median, s_fd.p95 / s_bd.p95);
	printf("goals: ADD median <= 0.40x (%s), DEL median <= 1.00x (%s); %d plugin errors\n",
	       s_fa.median / s_ba.median <= 0.4 ? "met" : "not met", s_fd.median / s_bd.median <= 1.0 ? "met" : "not met",
	       errors);
	umount2(tmp, MNT_DETACH);
	rmdir(tmp);
	free(fa);
	free(fd);
	free(ba);
	free(bd);
	return errors ? 1 : 0;
}
