/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/k8s-agent (issue 19 item 9, the agent half): flowsdn-agent's
 * Kubernetes watches (agent/k8s.h) syncing N Services (one TCP port
 * each) with E endpoints spread over one EndpointSlice per Service,
 * served by the replaying fake API server (tests/k8s-fake.h) on
 * 127.0.0.1, into the agent's service model (agent/services.c with its
 * journal and state directory; no datapath: the BPF maps need root and
 * are measured by bench/services), then one endpoint changing: the time
 * from the watch request to the change being in the model, repeated.
 * Printed beside the same client's raw request rate (GET of a Node,
 * exchange 41) so that the figures say what the agent adds.  Goals
 * (issue 19): 10,000 Services in <= 10 s, one endpoint change <= 50 ms,
 * agent RSS <= 128 MiB.  Never fails on time.
 *   bench/k8s-agent [SERVICES] [ENDPOINTS] [STATE_DIR]
 * (defaults 10000 50000 and a new directory under $TMPDIR or /tmp).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../agent/conf.h"
#include "../agent/k8s.h"
#include "../agent/ops.h"
#include "../agent/services.h"
#include "../common/k8s.h"
#include "json.h"
#include "k8s-fake.h"
#include "bench.h"

/* VmRSS or VmHWM of this process, in KiB. */
static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key) + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len)
			break;
		b->cap = b->cap ? b->cap * 2 : 1 << 20;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	b->len += (size_t)n;
}

static void slice_json(struct buf *b, size_t i, size_t per, size_t extra, unsigned int rv, size_t changed)
{
	size_t n = per + (i < extra);

	put(b, "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"svc-%zu-abcde\","
	       "\"namespace\":\"bench\",\"uid\":\"00000000-0000-4000-9000-%012zx\",\"resourceVersion\":\"%u\","
	       "\"labels\":{\"kubernetes.io/service-name\":\"svc-%zu\"}},\"addressType\":\"IPv4\",\"endpoints\":[",
	    i, i + 0x100000, rv, i);
	for (size_t e = 0; e < n; e++) {
		/* 10.(128+e).(i/256).(i%256): distinct per (service, endpoint). */
		bool terminating = e == 0 && changed == i;

		put(b, "%s{\"addresses\":[\"10.%zu.%zu.%zu\"],\"conditions\":{\"ready\":%s,\"serving\":true,\"terminating\":%s},"
		       "\"nodeName\":\"node-%c\"}",
		    e ? "," : "", 128 + e % 100, (i / 256) % 256, i % 256, terminating ? "false" : "true",
		    terminating ? "true" : "false", e % 2 ? 'b' : 'a');
	}
	put(b, "],\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":8080}]}");
}

static const char *const no_events[] = { NULL };

struct watch_ctx {
	struct agent_k8s *k;
	double applied_ms;
};

/* The reflector's path: the event into the agent, the time it is in. */
static int watch_event(const struct k8s_event *ev, void *userdata)
{
	struct watch_ctx *w = userdata;
	int r = agent_k8s_event(w->k, AGENT_K8S_ENDPOINTSLICES, ev);

	if (ev->type == K8S_EVENT_MODIFIED)
		w->applied_ms = bench_now_ms();
	return r;
}

static void usage_exit(void)
{
	fprintf(stderr, "usage: bench/k8s-agent [SERVICES] [ENDPOINTS] [STATE_DIR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t n_svc = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
	size_t n_ep = argc > 2 ? strtoul(argv[2], NULL, 10) : 50000;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char state_dir[512], conf[768], cmd[600], id[36];
	struct buf svcs = { 0 }, slices = { 0 };
	struct k8s_fake *f = NULL;
	struct k8s_client *c = NULL;
	struct agent_config *cfg = NULL;
	struct agent_services *s = NULL;
	struct agent_k8s *k = NULL;
	struct agent_k8s_stats st;
	struct k8s_status status = { 0 };
	static const struct agent_ops no_ops = { 0 };
	double t0, t_svc, t_all, raw[2000], chg[21];
	long rss_base, rss_after, hwm;
	size_t per, extra;
	int r;

	if (!n_svc || n_svc > 60000 || n_ep < n_svc || argc > 4)
		usage_exit();
	per = n_ep / n_svc;
	extra = n_ep % n_svc;
	if (argc > 3)
		snprintf(state_dir, sizeof(state_dir), "%s", argv[3]);
	else {
		snprintf(state_dir, sizeof(state_dir), "%s/bench-k8s-agent-XXXXXX", tmp);
		if (!mkdtemp(state_dir)) {
			perror("mkdtemp");
			return 1;
		}
	}
	if (k8s_fake_new(NULL, &f) < 0) {
		fprintf(stderr, "fake server failed\n");
		return 1;
	}
	{
		struct k8s_config kc = { .server = (char *)k8s_fake_url(f) };
		struct k8s_client_opts co = { .sz = sizeof(co), .max_attempts = 1 };

		if (k8s_client_new(&kc, &co, &c) < 0)
			return 1;
	}
	/* The client's raw rate: GET of a Node (recorded 41). */
	{
		struct k8s_ref node = { .version = "v1", .resource = "nodes", .name = "node-a" };
		size_t nr = sizeof(raw) / sizeof(raw[0]);

		for (size_t i = 0; i < nr; i++) {
			struct json_value *obj = NULL;
			double a = bench_now_ms();

			if (k8s_get(c, &node, &obj, &status) < 0) {
				fprintf(stderr, "GET node failed: %s\n", status.message ? status.message : "?");
				return 1;
			}
			raw[i] = bench_now_ms() - a;
			json_free(obj);
		}
		qsort(raw, nr, sizeof(raw[0]), bench_cmp_double);
		printf("client raw: GET node (41)       n=%zu median %.3f ms  p95 %.3f ms  %.0f req/s\n", nr, raw[nr / 2],
		       raw[nr * 95 / 100], 1e3 / raw[nr / 2]);
	}
	/* The lists. */
	put(&svcs, "{\"kind\":\"ServiceList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"2\"},\"items\":[");
	for (size_t i = 0; i < n_svc; i++)
		put(&svcs, "%s{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"svc-%zu\",\"namespace\":\"bench\","
			   "\"uid\":\"00000000-0000-4000-8000-%012zx\",\"resourceVersion\":\"2\"},\"spec\":{\"type\":\"ClusterIP\","
			   "\"clusterIP\":\"10.96.%zu.%zu\",\"clusterIPs\":[\"10.96.%zu.%zu\"],\"ports\":[{\"name\":\"http\","
			   "\"protocol\":\"TCP\",\"port\":80,\"targetPort\":8080}],\"sessionAffinity\":\"None\","
			   "\"internalTrafficPolicy\":\"Cluster\"}}",
		    i ? "," : "", i, i, i / 256 % 256 + 0, i % 256, i / 256 % 256, i % 256);
	put(&svcs, "]}");
	put(&slices, "{\"kind\":\"EndpointSliceList\",\"apiVersion\":\"discovery.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"2\"},\"items\":[");
	for (size_t i = 0; i < n_svc; i++) {
		if (i)
			put(&slices, ",");
		slice_json(&slices, i, per, extra, 2, (size_t)-1);
	}
	put(&slices, "]}");
	snprintf(conf, sizeof(conf), "{\"state-dir\":\"%s\",\"datapath\":false,\"socket-lb-cgroup\":\"\"}", state_dir);
	if (agent_config_parse(conf, strlen(conf), &cfg, NULL) < 0 || agent_services_new(cfg, &no_ops, NULL, NULL, &s) < 0 ||
	    agent_k8s_new(&(struct agent_k8s_opts){ .sz = sizeof(struct agent_k8s_opts), .node_name = "node-a", .services = s },
			  &k) < 0) {
		fprintf(stderr, "agent start failed\n");
		return 1;
	}
	k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/services", .body = svcs.p });
	k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/api/v1/services", .events = no_events });
	k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/apis/discovery.k8s.io/v1/endpointslices",
						  .body = slices.p });
	k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/apis/discovery.k8s.io/v1/endpointslices",
						  .events = no_events });
	free(svcs.p);
	free(slices.p);
	rss_base = status_kib("VmRSS:");
	t0 = bench_now_ms();
	r = agent_k8s_sync(k, c, AGENT_K8S_SERVICES, 1, &status);
	t_svc = bench_now_ms() - t0;
	if (r == 0)
		r = agent_k8s_sync(k, c, AGENT_K8S_ENDPOINTSLICES, 1, &status);
	t_all = bench_now_ms() - t0;
	if (r < 0) {
		fprintf(stderr, "sync failed: %s %s\n", strerror(-r), status.message ? status.message : "");
		return 1;
	}
	rss_after = status_kib("VmRSS:");
	agent_k8s_get_stats(k, &st);
	printf("sync: %zu Services, %zu endpoints in %zu slices -> %zu agent services (%llu PUTs, %llu refused)\n", n_svc, n_ep,
	       st.slices, st.agent_services, (unsigned long long)st.svc_puts, (unsigned long long)st.svc_refused);
	printf("sync: Services listed in %.0f ms, everything in the model in %.0f ms (%.1f s; goal <= 10 s), %.0f "
	       "services/s\n",
	       t_svc, t_all, t_all / 1e3, (double)n_svc / (t_all / 1e3));
	/* One endpoint changes (terminating), through a watch stream; then
	 * back.  Time from the watch request to the change in the model. */
	for (size_t round = 0; round < sizeof(chg) / sizeof(chg[0]); round++) {
		size_t which = (round * 7919) % n_svc;
		struct buf ev = { 0 };
		const char *lines[1];
		char *rv = strdup("2");
		struct k8s_ref ref = { .group = "discovery.k8s.io", .version = "v1", .resource = "endpointslices" };
		struct k8s_watch_opts wo = { .sz = sizeof(wo), .resource_version = "2" };
		struct json_writer *w;
		struct watch_ctx wctx;
		char *out = NULL;
		char svc_uid[64];
		double a;

		put(&ev, "{\"type\":\"MODIFIED\",\"object\":");
		slice_json(&ev, which, per, extra, (unsigned int)(3 + round), which);
		put(&ev, "}");
		lines[0] = ev.p;
		k8s_fake_push(f, &(struct k8s_fake_step){ .method = "GET", .path = "/apis/discovery.k8s.io/v1/endpointslices",
							  .events = lines, .n_events = 1 });
		a = bench_now_ms();
		wctx.k = k;
		wctx.applied_ms = 0;
		r = k8s_watch_once(c, &ref, &wo, &rv, watch_event, &wctx, &status);
		free(rv);
		free(ev.p);
		if (r < 0 || !wctx.applied_ms) {
			fprintf(stderr, "round %zu: watch failed: %s\n", round, strerror(-r));
			return 1;
		}
		chg[round] = wctx.applied_ms - a;
		snprintf(svc_uid, sizeof(svc_uid), "00000000-0000-4000-8000-%012zx", which);
		agent_k8s_service_id(svc_uid, "TCP", 80, id);
		w = json_writer_new(0);
		(void)agent_services_get(s, id, w);
		(void)json_writer_finish(w, &out, NULL);
		if (!out || !strstr(out, "\"state\":\"terminating\"")) {
			fprintf(stderr, "round %zu: the change is not in the model\n", round);
			return 1;
		}
		free(out);
	}
	qsort(chg, sizeof(chg) / sizeof(chg[0]), sizeof(chg[0]), bench_cmp_double);
	printf("one endpoint change (watch event -> model): n=%zu median %.2f ms  p95 %.2f ms  max %.2f ms (goal <= 50 "
	       "ms)\n",
	       sizeof(chg) / sizeof(chg[0]), chg[10], chg[19], chg[20]);
	hwm = status_kib("VmHWM:");
	printf("RSS: before sync %ld KiB (fake server with its bodies), after %ld KiB: agent state %+.1f MiB; process "
	       "peak %.1f MiB (goal: agent <= 128 MiB)\n",
	       rss_base, rss_after, (double)(rss_after - rss_base) / 1024.0, (double)hwm / 1024.0);
	k8s_status_clear(&status);
	agent_k8s_free(k);
	agent_services_free(s);
	agent_config_free(cfg);
	k8s_client_free(c);
	k8s_fake_free(f);
	if (argc <= 3) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state_dir);
		if (system(cmd) != 0)
			return 1;
	}
	return 0;
}
