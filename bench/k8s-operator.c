/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/k8s-operator: flash-operator's Kubernetes reconcile loop
 * (operator/k8s-reconcile.c) against the replaying fake API server
 * (tests/k8s-fake.h, run in a child process so that the operator's RSS
 * is its own), issue 19 item 9, operator half:
 *   1. N FlashServices (default 1,000) listed through the client's
 *      reflector and reconciled: every rendered object applied (schema
 *      checked first) and the status written; total and per service;
 *   2. the steady path: every service reconciled again (resync), requests
 *      per service (goal <= 4; the loop sends none);
 *   3. one spec changed (replicas): the requests it costs (only its
 *      changed objects and its status);
 *   4. operator RSS (VmHWM, goal <= 128 MiB);
 *   5. beside it, the same client's raw request rate: server-side apply
 *      of one Deployment body, back to back, against the same server,
 *      before and after the reconcile (rate, median, p95, p99).
 * Never fails on time.
 *   bench/k8s-operator [SERVICES] [RAW_REQUESTS]
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <flash/render.h>
#include <flash/spec.h>

#include "json.h"
#include "k8s-fake.h"
#include "k8s-reconcile.h"
#include "k8s.h"
#include "util.h"
#include "bench.h"

#define NAMESPACES 50

static long vm_kib(const char *key)
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

static const char *spec_text(unsigned int replicas)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"region\":\"heteronet-global\",\"image\":\"ghcr.io/acme/web:1.0\",\"replicas\":%u,"
		 "\"cpu_millis\":250,\"memory_mib\":128,\"ephemeral_storage_gib\":1,"
		 "\"ports\":[{\"name\":\"http\",\"protocol\":\"tcp\",\"container_port\":8080}],"
		 "\"exposure\":{\"type\":\"internal\",\"traffic_mode\":\"forwarded\",\"allowed_source_cidrs\":[],"
		 "\"denied_source_cidrs\":[]},\"env\":{},\"command\":[],\"args\":[],\"metadata\":{}}",
		 replicas);
	return buf;
}

static void fs_item(struct util_buf *b, unsigned int i, unsigned int replicas, int64_t gen)
{
	char item[2048];
	int n = snprintf(item, sizeof(item),
			 "{\"apiVersion\":\"flash.heterocloud.io/v1alpha1\",\"kind\":\"FlashService\","
			 "\"metadata\":{\"name\":\"svc-%u\",\"namespace\":\"org-%u\",\"uid\":\"uid-%u\","
			 "\"resourceVersion\":\"%u\",\"generation\":%" PRId64 ",\"finalizers\":[\"flash.heterocloud.io/usage\"],"
			 "\"labels\":{\"flash.heterocloud.io/organization\":\"org-%u\"}},\"spec\":%s}",
			 i, i % NAMESPACES, i, 100 + i, gen, i % NAMESPACES, spec_text(replicas));

	util_buf_append(b, item, (size_t)n, 64u << 20);
}

/* The child: the fake server, one scripted list of @n FlashServices and
 * an empty watch stream, until the parent closes the pipe. */
static int child(unsigned int n, int wfd, int rfd)
{
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .accept_writes = true };
	struct k8s_fake *f = NULL;
	struct util_buf b = { 0 };
	const char *path = "/apis/flash.heterocloud.io/v1alpha1/flashservices";
	const char *head = "{\"kind\":\"FlashServiceList\",\"apiVersion\":\"flash.heterocloud.io/v1alpha1\","
			   "\"metadata\":{\"resourceVersion\":\"5000\"},\"items\":[";
	char c;

	if (k8s_fake_new(&fo, &f) < 0)
		return 1;
	util_buf_append(&b, head, strlen(head), 64u << 20);
	for (unsigned int i = 0; i < n; i++) {
		if (i)
			util_buf_append(&b, ",", 1, 64u << 20);
		fs_item(&b, i, 1, 1);
	}
	util_buf_append(&b, "]}", 2, 64u << 20);
	{
		struct k8s_fake_step list = { .method = "GET", .path = path, .body = b.p };
		struct k8s_fake_step watch = { .method = "GET", .path = path, .events = NULL, .n_events = 0,
					       .body = "" };

		if (k8s_fake_push(f, &list) < 0 || k8s_fake_push(f, &watch) < 0)
			return 1;
	}
	free(b.p);
	if (write(wfd, k8s_fake_url(f), strlen(k8s_fake_url(f)) + 1) < 0)
		return 1;
	while (read(rfd, &c, 1) > 0)
		;
	k8s_fake_free(f);
	return 0;
}

static struct flash_schema_set *schemas(void)
{
	static const char *const docs[] = { "apps_v1", "core_v1", "networking_v1", "apiextensions_v1",
					    "autoscaling_v2", "gateway_v1" };
	const char *top = getenv("top_srcdir");
	struct flash_schema_set *set = NULL;

	if (flash_schema_set_new(&set) < 0)
		return NULL;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		char path[1024], *text = NULL;
		size_t len;

		snprintf(path, sizeof(path), "%s/tests/data/k8s/openapi/%s.json", top ? top : ".", docs[i]);
		if (util_read_file(path, 64u << 20, &text, &len) < 0 ||
		    flash_schema_set_add_openapi(set, text, len, NULL) < 0) {
			fprintf(stderr, "k8s-operator: cannot load %s (set top_srcdir)\n", path);
			free(text);
			flash_schema_set_free(set);
			return NULL;
		}
		free(text);
	}
	for (int c = FLASH_CRD_FLASHSERVICE; c <= FLASH_CRD_FLASHUSAGERECORD; c++) {
		char *text = NULL;
		size_t len;

		if (flash_render_crd((enum flash_crd)c, FLASH_RENDER_JSON, &text, &len) < 0 ||
		    flash_schema_set_add_crd(set, text, len, NULL) < 0) {
			free(text);
			flash_schema_set_free(set);
			return NULL;
		}
		free(text);
	}
	return set;
}

struct rate {
	double rate, p50, p95, p99; /* requests/s; microseconds */
};

/* The Deployment the loop renders for one service (the raw requests send
 * the same bytes). */
static char *rendered_deployment(const struct flash_operator_config *config, size_t *ret_len)
{
	struct flash_render_opts ro = { .sz = sizeof(ro), .name = "raw", .namespace_ = "org-raw", .uid = "uid-raw",
					.organization_id = "org-raw", .service_id = "uid-raw" };
	struct flash_spec *spec = NULL;
	struct flash_render *rd = NULL;
	char *out = NULL;
	const char *t = spec_text(1);

	if (flash_spec_parse(t, strlen(t), NULL, &spec, NULL) < 0 || flash_render(spec, config, &ro, &rd, NULL) < 0)
		goto done;
	for (size_t i = 0; i < flash_render_count(rd); i++)
		if (!strcmp(flash_render_kind(rd, i), "Deployment") && flash_render_object_json(rd, i, &out, ret_len) < 0)
			out = NULL;
done:
	flash_render_free(rd);
	flash_spec_free(spec);
	return out;
}

/* @n server-side applies of @body (a Deployment "raw") through @c, back
 * to back. */
static struct rate raw_rate(struct k8s_client *c, const char *body, size_t len, unsigned int n)
{
	struct k8s_ref dref = { .group = "apps", .version = "v1", .resource = "deployments", .namespace = "org-raw",
				.name = "raw" };
	struct k8s_write_opts w = { .sz = sizeof(w), .field_manager = OP_K8S_FIELD_MANAGER };
	double *us = calloc(n, sizeof(*us)), a, z;
	struct rate out = { 0 };
	unsigned int failed = 0;

	if (!us || !body)
		return out;
	a = bench_now_s();
	for (unsigned int i = 0; i < n; i++) {
		struct k8s_status s = { 0 };
		double t = bench_now_s();

		if (k8s_apply(c, &dref, body, len, &w, NULL, &s) < 0)
			failed++;
		us[i] = (bench_now_s() - t) * 1e6;
		k8s_status_clear(&s);
	}
	z = bench_now_s();
	qsort(us, n, sizeof(*us), bench_cmp_double);
	out.rate = n / (z - a);
	out.p50 = us[n / 2];
	out.p95 = us[(size_t)(n * 0.95)];
	out.p99 = us[(size_t)(n * 0.99)];
	if (failed)
		fprintf(stderr, "k8s-operator: %u of %u raw applies failed\n", failed, n);
	free(us);
	return out;
}

struct feed {
	struct op_k8s *k;
	unsigned int errors;
};

static int on_event(const struct k8s_event *ev, void *userdata)
{
	struct feed *f = userdata;

	if (op_k8s_service_event(f->k, ev) < 0)
		f->errors++;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 10) : 1000;
	unsigned int raw = argc > 2 ? (unsigned int)strtoul(argv[2], NULL, 10) : 2000;
	int up[2], down[2];
	char url[128] = "";
	pid_t pid;
	struct k8s_config cfg = { 0 };
	struct k8s_client_opts co = { .sz = sizeof(co) };
	struct k8s_client *c = NULL;
	struct flash_operator_config *config = NULL;
	struct flash_schema_set *set;
	struct op_k8s_opts ko = { .sz = sizeof(ko) };
	struct op_k8s *k = NULL;
	struct op_k8s_stats s0, s1, s2, s3;
	struct k8s_ref ref = { .group = OP_K8S_GROUP, .version = OP_K8S_VERSION, .resource = "flashservices" };
	struct k8s_watch_opts wo = { .sz = sizeof(wo), .max_streams = 1, .list_limit = 5000 };
	struct k8s_status st = { 0 };
	struct feed fd = { 0 };
	double t0, t1, t2, t3, t4, t5;
	long hwm_before;
	struct rate raw_before, raw_after;
	char *dep;
	size_t dep_len = 0;
	int r;

	if (!n || !raw || pipe(up) < 0 || pipe(down) < 0)
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		_exit(child(n, up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	if (read(up[0], url, sizeof(url) - 1) <= 0) {
		fprintf(stderr, "k8s-operator: the fake server did not start\n");
		return 1;
	}
	hwm_before = vm_kib("VmHWM:");
	set = schemas();
	cfg.server = url;
	if (!set || k8s_client_new(&cfg, &co, &c) < 0 || flash_operator_config_default(&config) < 0)
		return 1;
	dep = rendered_deployment(config, &dep_len);
	raw_before = raw_rate(c, dep, dep_len, raw);
	ko.config = config;
	ko.schemas = set;
	if (op_k8s_new(c, &ko, &k) < 0 || op_k8s_set_leader(k, true) < 0)
		return 1;
	fd.k = k;

	/* 1. Create: list, reconcile every service. */
	op_k8s_get_stats(k, &s0);
	t0 = bench_now_s();
	r = k8s_watch(c, &ref, &wo, on_event, &fd, &st);
	t1 = bench_now_s();
	k8s_status_clear(&st);
	op_k8s_get_stats(k, &s1);
	printf("k8s-operator: %u FlashServices in %u namespaces against the fake API server (%s)\n", n, NAMESPACES,
	       url);
	printf("  create: %.2f s total, %.2f ms per service; %" PRIu64 " requests (%.2f per service: %" PRIu64
	       " applies, %" PRIu64 " status writes), %" PRIu64 " errors, %" PRIu64 " refused by schema%s\n",
	       t1 - t0, (t1 - t0) * 1e3 / n, s1.requests - s0.requests, (double)(s1.requests - s0.requests) / n,
	       s1.applies - s0.applies, s1.status_writes - s0.status_writes, s1.errors - s0.errors, s1.refused,
	       r < 0 ? " (watch error)" : "");
	printf("  reconciled: %" PRIu64 " services held, %.0f services/s, %.0f requests/s\n", s1.services,
	       n / (t1 - t0), (double)(s1.requests - s0.requests) / (t1 - t0));

	/* 2. Steady path. */
	t2 = bench_now_s();
	(void)op_k8s_resync(k);
	t3 = bench_now_s();
	op_k8s_get_stats(k, &s2);
	printf("  steady path (resync of every service): %.2f ms, %" PRIu64 " requests (%.3f per service; goal <= 4)\n",
	       (t3 - t2) * 1e3, s2.requests - s1.requests, (double)(s2.requests - s1.requests) / n);

	/* 3. One spec changed. */
	{
		struct util_buf b = { 0 };
		struct json_value *v = NULL;
		struct k8s_event ev = { .type = K8S_EVENT_MODIFIED };

		fs_item(&b, n / 2, 3, 2);
		if (json_parse(b.p, b.len, NULL, &v, NULL) < 0)
			return 1;
		ev.object = v;
		t4 = bench_now_s();
		(void)op_k8s_service_event(k, &ev);
		t5 = bench_now_s();
		op_k8s_get_stats(k, &s3);
		printf("  one spec changed (replicas 1 -> 3): %.2f ms, %" PRIu64 " requests (%" PRIu64
		       " applies: the Deployment; %" PRIu64 " status write)\n",
		       (t5 - t4) * 1e3, s3.requests - s2.requests, s3.applies - s2.applies,
		       s3.status_writes - s2.status_writes);
		json_free(v);
		free(b.p);
	}
	printf("  operator RSS: VmHWM %.1f MiB (%.1f MiB before the first service), VmRSS %.1f MiB (goal <= 128 MiB)\n",
	       vm_kib("VmHWM:") / 1024.0, hwm_before / 1024.0, vm_kib("VmRSS:") / 1024.0);

	/* 5. The same client's raw request rate (measured before and after). */
	raw_after = raw_rate(c, dep, dep_len, raw);
	free(dep);
	printf("  beside it, the client's raw rate (server-side apply of the same rendered Deployment, %zu bytes, back to "
	       "back): before the "
	       "reconcile %.0f requests/s (median %.1f us, p95 %.1f, p99 %.1f), after %.0f requests/s (median %.1f us, "
	       "p95 %.1f, p99 %.1f); the reconcile loop sent at %.0f%% of the mean\n",
	       dep_len, raw_before.rate, raw_before.p50, raw_before.p95, raw_before.p99, raw_after.rate, raw_after.p50,
	       raw_after.p95, raw_after.p99,
	       100.0 * ((double)(s1.requests - s0.requests) / (t1 - t0)) / ((raw_before.rate + raw_after.rate) / 2));
	op_k8s_free(k);
	k8s_client_free(c);
	flash_schema_set_free(set);
	flash_operator_config_free(config);
	close(down[1]);
	waitpid(pid, NULL, 0);
	return fd.errors ? 1 : 0;
}
