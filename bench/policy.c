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
#include <flowsdn/identity.h>
#include <flowsdn/policy.h>

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
	return 0;
}
