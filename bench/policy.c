/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/policy: load and compile N policies over P pods in S namespaces
 * (1,000 / 5,000 / 50, then twice that), printing wall time, peak memory
 * and entries, and the ratio of the two runs (linear scaling: about 2).
 * Each run is a child process, so that its peak RSS is its own.
 *
 * The world is a typical cluster: per namespace 20 apps of 5 pods (with
 * tier and version labels), a "monitoring" and a "kube-system" namespace;
 * per namespace 20 policies — app-to-app ingress on named and numeric
 * ports, ingress from the monitoring namespace's prometheus, egress to
 * kube-dns, to the next app, and to the Internet minus private ranges.
 *
 * Then, as root, the live path: the same world's compiled entries
 * installed into the real datapath maps (embedded BPF object loaded into
 * a private bpffs in a private mount namespace) with the atomic
 * per-endpoint switch, one changed policy switched on every endpoint it
 * affects, and the peak RSS of that process at 1,000 endpoints and
 * 1,000 policies (the agent's policy code and maps are these), each
 * printed beside its goal (issue 15 item 11).
 *
 *   bench/policy [POLICIES PODS NAMESPACES]
 */
#include <errno.h>
#include <ftw.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <sys/mount.h>
#include <flowsdn/datapath.h>
#include <flowsdn/identity.h>
#include <flowsdn/policy.h>
#include "bench.h"

struct figures {
	double load_s, compile_s, compile_cpu_s, compile_user_s, recompile_s;
	size_t entries, endpoints, max_entries;
	long peak_rss_kib;
	size_t heap_bytes;
	size_t identities, incremental;
};

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double user_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void die(const char *what, int r)
{
	fprintf(stderr, "bench/policy: %s: %s\n", what, flowsdn_strerror(r));
	exit(1);
}

static void add_pod(struct flowsdn_policy_db *db, const char *ns, unsigned int g, unsigned int i)
{
	static const char *const tiers[] = { "fe", "be" };
	char name[32], app[16];
	struct flowsdn_policy_label l[3];
	struct flowsdn_policy_named_port ports[2] = {
		{ "http", 6, (uint16_t)(8080 + (i / 5) % 20) },
		{ "metrics", 6, 9100 },
	};
	struct flowsdn_addr a = { .family = 2 };
	int r;

	snprintf(name, sizeof(name), "pod-%u", g);
	snprintf(app, sizeof(app), "app-%u", (i / 5) % 20);
	l[0] = (struct flowsdn_policy_label){ "app", app };
	l[1] = (struct flowsdn_policy_label){ "tier", tiers[(i / 5) % 2] };
	l[2] = (struct flowsdn_policy_label){ "version", i % 5 == 0 ? "v2" : "v1" };
	a.bytes[0] = 10;
	a.bytes[1] = (uint8_t)(128 + g / 65536);
	a.bytes[2] = (uint8_t)(g / 256);
	a.bytes[3] = (uint8_t)g;
	{
		FLOWSDN_OPTS(flowsdn_policy_pod, d, .namespace_name = ns, .name = name, .labels = l,
			     .n_labels = 3, .ports = ports, .n_ports = 2, .addrs = &a, .n_addrs = 1);

		r = flowsdn_policy_db_set_pod(db, &d, NULL);
		if (r < 0)
			die("set_pod", r);
	}
}

static void add_policy(struct flowsdn_policy_db *db, const char *ns, unsigned int k)
{
	char json[2048];
	struct flowsdn_policy *p;
	int n, r;

	n = snprintf(json, sizeof(json),
		     "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
		     "\"metadata\":{\"name\":\"p-%u\",\"namespace\":\"%s\"},"
		     "\"spec\":{\"podSelector\":{\"matchLabels\":{\"app\":\"app-%u\"}},"
		     "\"policyTypes\":[\"Ingress\",\"Egress\"],"
		     "\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"app-%u\"}}},"
		     "{\"podSelector\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"fe\"]}]}}],"
		     "\"ports\":[{\"port\":\"http\"},{\"port\":8443}]},"
		     "{\"from\":[{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"monitoring\"}},"
		     "\"podSelector\":{\"matchLabels\":{\"app\":\"prometheus\"}}}],\"ports\":[{\"port\":\"metrics\"}]}],"
		     "\"egress\":[{\"to\":[{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"kube-system\"}},"
		     "\"podSelector\":{\"matchLabels\":{\"k8s-app\":\"kube-dns\"}}}],"
		     "\"ports\":[{\"protocol\":\"UDP\",\"port\":53},{\"protocol\":\"TCP\",\"port\":53}]},"
		     "{\"to\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"app-%u\"}}}],\"ports\":[{\"port\":\"http\"}]},"
		     "{\"to\":[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\",\"172.16.0.0/12\",\"192.168.0.0/16\"]}}],"
		     "\"ports\":[{\"port\":443},{\"port\":30000,\"endPort\":32767}]}]}}",
		     k, ns, k % 20, (k + 1) % 20, (k + 2) % 20);
	if (n < 0 || (size_t)n >= sizeof(json))
		die("policy text", -ENOSPC);
	r = flowsdn_policy_parse(json, (size_t)n, NULL, &p, NULL);
	if (r < 0)
		die("parse", r);
	r = flowsdn_policy_db_apply(db, p);
	if (r < 0)
		die("apply", r);
}

static void world(struct flowsdn_policy_db *db, unsigned int n_pol, unsigned int n_pods, unsigned int n_ns)
{
	char ns[32];
	int r;

	{
		struct flowsdn_policy_label mon = { "purpose", "monitoring" };
		struct flowsdn_policy_label prom[] = { { "app", "prometheus" } };
		struct flowsdn_policy_label dns[] = { { "k8s-app", "kube-dns" } };
		struct flowsdn_addr a1 = { .family = 2, .bytes = { 10, 0, 0, 10 } };
		struct flowsdn_addr a2 = { .family = 2, .bytes = { 10, 0, 0, 11 } };
		FLOWSDN_OPTS(flowsdn_policy_pod, pp, .namespace_name = "monitoring", .name = "prometheus",
			     .labels = prom, .n_labels = 1, .addrs = &a1, .n_addrs = 1);
		FLOWSDN_OPTS(flowsdn_policy_pod, dp, .namespace_name = "kube-system", .name = "coredns",
			     .labels = dns, .n_labels = 1, .addrs = &a2, .n_addrs = 1);

		if ((r = flowsdn_policy_db_set_namespace(db, "monitoring", &mon, 1)) < 0 ||
		    (r = flowsdn_policy_db_set_pod(db, &pp, NULL)) < 0 ||
		    (r = flowsdn_policy_db_set_pod(db, &dp, NULL)) < 0)
			die("system pods", r);
	}
	for (unsigned int s = 0; s < n_ns; s++) {
		struct flowsdn_policy_label l[] = { { "team", s % 2 ? "blue" : "red" } };

		snprintf(ns, sizeof(ns), "ns-%u", s);
		r = flowsdn_policy_db_set_namespace(db, ns, l, 1);
		if (r < 0)
			die("namespace", r);
	}
	for (unsigned int i = 0; i < n_pods; i++) {
		unsigned int s = i % n_ns;

		snprintf(ns, sizeof(ns), "ns-%u", s);
		add_pod(db, ns, i, i / n_ns);
	}
	for (unsigned int k = 0; k < n_pol; k++) {
		snprintf(ns, sizeof(ns), "ns-%u", k % n_ns);
		add_policy(db, ns, k / n_ns);
	}
}

static void run(unsigned int n_pol, unsigned int n_pods, unsigned int n_ns, struct figures *f)
{
	/* the identity store persists every change with fsync: on tmpfs when
	 * there is one, so that the figures are the compiler's */
	char dir[64];
	struct flowsdn_identity_store *store = NULL;
	struct flowsdn_policy_db *db = NULL;
	FLOWSDN_OPTS(flowsdn_policy_compile_report, rep);
	struct rusage ru;
	struct mallinfo2 mi;
	double t0, t1;
	char ns[32];
	int r;

	memset(f, 0, sizeof(*f));
	snprintf(dir, sizeof(dir), "%s/bench-policy.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		die("mkdtemp", -errno);
	r = flowsdn_identity_new(dir, NULL, &store);
	if (r < 0)
		die("identity store", r);
	{
		FLOWSDN_OPTS(flowsdn_policy_db_opts, o, .identities = store);

		r = flowsdn_policy_db_new(&o, &db);
		if (r < 0)
			die("db", r);
	}
	t0 = now();
	world(db, n_pol, n_pods, n_ns);
	t1 = now();
	f->load_s = t1 - t0;
	/* the first compile, then full recomputes: the best of 7 (the machine
	 * is shared) */
	for (int rep_i = 0; rep_i < 7; rep_i++) {
		double c0, c1, u0, u1;

		if (rep_i)
			flowsdn_policy_db_invalidate_all(db);
		t0 = now();
		c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		u0 = user_s();
		r = flowsdn_policy_db_compile(db, &rep);
		if (r < 0)
			die("compile", r);
		u1 = user_s();
		c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		t1 = now();
		if (rep_i == 0 || u1 - u0 < f->compile_user_s)
			f->compile_user_s = u1 - u0;
		if (rep_i == 0 || t1 - t0 < f->compile_s)
			f->compile_s = t1 - t0;
		if (rep_i == 0 || c1 - c0 < f->compile_cpu_s)
			f->compile_cpu_s = c1 - c0;
	}
	f->endpoints = rep.n_ep_ids;
	for (size_t i = 0; i < rep.n_ep_ids; i++) {
		const struct flowsdn_policy_entry *e;
		size_t n;

		if (flowsdn_policy_db_entries(db, rep.ep_ids[i], &e, &n, NULL) == 0) {
			f->entries += n;
			if (n > f->max_entries)
				f->max_entries = n;
		}
	}
	mi = mallinfo2();
	f->heap_bytes = mi.uordblks + mi.hblkhd;
	/* one policy changed: the incremental recompute */
	snprintf(ns, sizeof(ns), "ns-%u", 0);
	add_policy(db, ns, 0);
	t0 = now();
	r = flowsdn_policy_db_compile(db, &rep);
	if (r < 0)
		die("recompile", r);
	f->recompile_s = now() - t0;
	f->incremental = rep.n_ep_ids;
	getrusage(RUSAGE_SELF, &ru);
	f->peak_rss_kib = ru.ru_maxrss;
	flowsdn_policy_db_free(db);
	flowsdn_identity_free(store);
	nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* Runs in a child so that ru_maxrss is this run's alone. */
static int run_child(unsigned int n_pol, unsigned int n_pods, unsigned int n_ns, struct figures *f)
{
	int fds[2], status;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct figures x;

		close(fds[0]);
		run(n_pol, n_pods, n_ns, &x);
		if (write(fds[1], &x, sizeof(x)) != (ssize_t)sizeof(x))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], f, sizeof(*f)) != (ssize_t)sizeof(*f))
		f->endpoints = 0;
	close(fds[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && f->endpoints ? 0 : -1;
}

static void print(const char *tag, unsigned int pol, unsigned int pods, unsigned int ns, const struct figures *f)
{
	printf("%-3s %5u policies %6u pods %4u namespaces: load %.3f s (with the identity store's fsyncs), "
	       "compile (best of 7) %.3f s wall, %.3f s CPU (%.3f s user), %zu entries (%.1f per endpoint, max %zu), %zu endpoints\n",
	       tag, pol, pods, ns, f->load_s, f->compile_s, f->compile_cpu_s, f->compile_user_s, f->entries,
	       (double)f->entries / (double)f->endpoints, f->max_entries, f->endpoints);
	printf("    peak RSS %ld KiB (%.2f KiB per endpoint), heap in use after compile %.1f MiB "
	       "(%.2f KiB per endpoint); one policy changed: %zu endpoints recompiled in %.4f s\n",
	       f->peak_rss_kib, (double)f->peak_rss_kib / (double)f->endpoints,
	       (double)f->heap_bytes / 1048576.0, (double)f->heap_bytes / 1024.0 / (double)f->endpoints,
	       f->incremental, f->recompile_s);
}

/* ------------------------------------------------------------ the live path */

struct live {
	double publish_s, install_s, change_s;
	double change_p50_ms, change_p95_ms, change_p99_ms;
	size_t endpoints, entries, changed;
	long peak_rss_kib;
	int failed; /* 0, or the error of the step that failed */
};

struct installed {
	struct flowsdn_endpoint ep;
	struct flowsdn_policy_map_entry *set;
	size_t n;
};

/* Switches endpoint @in to its compiled entries. */
static int install_one(struct flowsdn_policy_db *db, struct flowsdn_maps *m, struct installed *in)
{
	const struct flowsdn_policy_entry *e;
	struct flowsdn_policy_map_entry *set;
	unsigned int flags = 0;
	size_t n = 0;
	int r = flowsdn_policy_db_entries(db, in->ep.id, &e, &n, &flags);

	if (r < 0)
		return r;
	set = calloc(n + 1, sizeof(*set));
	if (!set)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		r = flowsdn_policy_entry_to_key(&e[i], in->ep.id, &set[i].key, &set[i].flags);
		if (r < 0) {
			free(set);
			return r;
		}
		set[i].rule_id = e[i].rule_id;
	}
	r = flowsdn_maps_policy_switch(m, &in->ep, in->set, in->n, set, n, flags & FLOWSDN_EP_F_ALL);
	if (r < 0) {
		free(set);
		return r;
	}
	free(in->set);
	in->set = set;
	in->n = n;
	return 0;
}

static void run_live(unsigned int n_pol, unsigned int n_pods, unsigned int n_ns, struct live *L)
{
	char dir[64], pins[96];
	struct flowsdn_identity_store *store = NULL;
	struct flowsdn_policy_db *db = NULL;
	struct flowsdn_datapath *dp = NULL;
	struct flowsdn_maps *m;
	struct installed *eps = NULL;
	const struct flowsdn_policy_ipcache_entry *ipc;
	size_t n_ipc = 0;
	FLOWSDN_OPTS(flowsdn_policy_compile_report, rep);
	struct rusage ru;
	double t0, *lat = NULL;
	int r;

	memset(L, 0, sizeof(*L));
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		L->failed = -errno;
		return;
	}
	snprintf(dir, sizeof(dir), "%s/bench-policy-live.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir)) {
		L->failed = -errno;
		return;
	}
	snprintf(pins, sizeof(pins), "%s/bpf", dir);
	{
		FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pins);

		r = flowsdn_datapath_open(&o, &dp);
	}
	if (r < 0)
		goto fail;
	m = flowsdn_datapath_maps(dp);
	r = flowsdn_identity_new(dir, NULL, &store);
	if (r < 0)
		goto fail;
	{
		FLOWSDN_OPTS(flowsdn_policy_db_opts, o, .identities = store);

		r = flowsdn_policy_db_new(&o, &db);
	}
	if (r < 0)
		goto fail;
	world(db, n_pol, n_pods, n_ns);
	r = flowsdn_policy_db_compile(db, &rep);
	if (r < 0)
		goto fail;
	eps = calloc(n_pods, sizeof(*eps));
	if (!eps) {
		r = -ENOMEM;
		goto fail;
	}
	/* The endpoints, as the CNI ADDs publish them (not part of the goal). */
	t0 = now();
	for (unsigned int g = 0; g < n_pods; g++) {
		struct flowsdn_endpoint *e = &eps[g].ep;

		e->addrs[0] = (struct flowsdn_addr){ .family = 2,
						     .bytes = { 10, (uint8_t)(128 + g / 65536), (uint8_t)(g / 256), (uint8_t)g } };
		e->n_addrs = 1;
		e->host_ifindex = 1;
		r = flowsdn_policy_db_endpoint_by_addr(db, &e->addrs[0], &e->id);
		if (r == 0)
			r = flowsdn_policy_db_identity(db, e->id, &e->identity);
		if (r == 0)
			r = flowsdn_maps_endpoint_publish(m, e);
		if (r < 0)
			goto fail;
	}
	L->publish_s = now() - t0;
	/* The goal: ipcache and every endpoint's policy, switched in. */
	t0 = now();
	r = flowsdn_policy_db_ipcache(db, &ipc, &n_ipc);
	for (size_t i = 0; r == 0 && i < n_ipc; i++)
		r = flowsdn_maps_ipcache_update(m, &ipc[i].prefix, ipc[i].identity);
	for (unsigned int g = 0; r == 0 && g < n_pods; g++) {
		r = install_one(db, m, &eps[g]);
		L->entries += eps[g].n;
	}
	if (r < 0)
		goto fail;
	L->install_s = now() - t0;
	L->endpoints = n_pods;
	/* One policy changed: recompile and switch what it touches. */
	add_policy(db, "ns-0", 1000000);
	t0 = now();
	r = flowsdn_policy_db_compile(db, &rep);
	if (r < 0)
		goto fail;
	lat = calloc(rep.n_ep_ids + 1, sizeof(*lat));
	if (!lat) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < rep.n_ep_ids; i++) {
		double s0 = now();

		for (unsigned int g = 0; g < n_pods; g++)
			if (eps[g].ep.id == rep.ep_ids[i]) {
				r = install_one(db, m, &eps[g]);
				break;
			}
		if (r < 0)
			goto fail;
		lat[i] = (now() - s0) * 1e3;
	}
	L->change_s = now() - t0;
	L->changed = rep.n_ep_ids;
	qsort(lat, rep.n_ep_ids, sizeof(*lat), bench_cmp_double);
	if (rep.n_ep_ids) {
		L->change_p50_ms = lat[rep.n_ep_ids / 2];
		L->change_p95_ms = lat[(rep.n_ep_ids * 95) / 100];
		L->change_p99_ms = lat[(rep.n_ep_ids * 99) / 100];
	}
	getrusage(RUSAGE_SELF, &ru);
	L->peak_rss_kib = ru.ru_maxrss;
	r = 0;
fail:
	L->failed = r;
	for (unsigned int g = 0; eps && g < n_pods; g++)
		free(eps[g].set);
	free(eps);
	free(lat);
	flowsdn_policy_db_free(db);
	flowsdn_identity_free(store);
	flowsdn_datapath_free(dp);
	umount2(pins, MNT_DETACH);
	nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static int live_child(unsigned int n_pol, unsigned int n_pods, unsigned int n_ns, struct live *L)
{
	int fds[2], status;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct live x;

		close(fds[0]);
		run_live(n_pol, n_pods, n_ns, &x);
		_exit(write(fds[1], &x, sizeof(x)) == (ssize_t)sizeof(x) ? 0 : 1);
	}
	close(fds[1]);
	if (read(fds[0], L, sizeof(*L)) != (ssize_t)sizeof(*L))
		L->failed = -EIO;
	close(fds[0]);
	waitpid(pid, &status, 0);
	return L->failed;
}

static void live(unsigned int pol, unsigned int pods, unsigned int ns)
{
	struct live a, b;
	double load;

	if (geteuid() != 0) {
		printf("live path: skipped (needs root: it loads the datapath into a private bpffs)\n");
		return;
	}
	load = 0;
	{
		FILE *f = fopen("/proc/loadavg", "re");

		if (f) {
			if (fscanf(f, "%lf", &load) != 1)
				load = 0;
			fclose(f);
		}
	}
	if (live_child(pol, pods, ns, &a) < 0) {
		printf("live path: failed: %s\n", flowsdn_strerror(a.failed));
		return;
	}
	printf("live %u policies %u endpoints (load average %.2f): publish %.3f s; policy installed into the maps "
	       "(ipcache + %zu entries, atomic switch per endpoint) %.3f s   goal <= 1 s\n",
	       pol, pods, load, a.publish_s, a.entries, a.install_s);
	printf("     one changed policy: %zu endpoints switched in %.2f ms   goal <= 10 ms "
	       "(per endpoint median %.3f ms, p95 %.3f ms, p99 %.3f ms)\n",
	       a.changed, a.change_s * 1e3, a.change_p50_ms, a.change_p95_ms, a.change_p99_ms);
	if (live_child(1000, 1000, 10, &b) < 0) {
		printf("live 1000/1000: failed: %s\n", flowsdn_strerror(b.failed));
		return;
	}
	printf("live 1000 policies 1000 endpoints: peak RSS %.1f MiB (compiler, identities, maps handle: the agent's "
	       "policy path)   goal <= 64 MiB (Cilium: 1.5-3 GB at ~21k policies)\n",
	       (double)b.peak_rss_kib / 1024.0);
}

int main(int argc, char **argv)
{
	unsigned int pol = 1000, pods = 5000, ns = 50;
	struct figures a, b;

	if (argc == 4) {
		pol = (unsigned int)strtoul(argv[1], NULL, 10);
		pods = (unsigned int)strtoul(argv[2], NULL, 10);
		ns = (unsigned int)strtoul(argv[3], NULL, 10);
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [POLICIES PODS NAMESPACES]\n", argv[0]);
		return 2;
	}
	if (!pol || !pods || !ns || ns > 4000 || pods > 4000000) {
		fprintf(stderr, "bench/policy: sizes out of range\n");
		return 2;
	}
	if (run_child(pol, pods, ns, &a) < 0 || run_child(2 * pol, 2 * pods, 2 * ns, &b) < 0) {
		fprintf(stderr, "bench/policy: a run failed\n");
		return 1;
	}
	print("1x", pol, pods, ns, &a);
	print("2x", 2 * pol, 2 * pods, 2 * ns, &b);
	printf("ratio 2x/1x: compile CPU time %.2f (user %.2f), wall %.2f (goal <= 2.2), load+compile %.2f, entries %.2f, peak RSS %.2f\n",
	       b.compile_cpu_s / a.compile_cpu_s, b.compile_user_s / a.compile_user_s, b.compile_s / a.compile_s, (b.load_s + b.compile_s) / (a.load_s + a.compile_s),
	       (double)b.entries / (double)a.entries, (double)b.peak_rss_kib / (double)a.peak_rss_kib);
	live(pol, pods, ns);
	return 0;
}
