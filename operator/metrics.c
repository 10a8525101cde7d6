/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Prometheus counters and histograms of flash-operator (metrics.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* Upper bounds of the histogram buckets, in microseconds (+Inf last). */
static const uint64_t bucket_us[] = { 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,
				      500000, 1000000, 2500000 };
#define N_BUCKETS (sizeof(bucket_us) / sizeof(bucket_us[0]))
/* Status codes a route may answer: the HTTP range 100..599. */
#define STATUS_MIN 100
#define STATUS_MAX 599

struct histogram {
	uint64_t bucket[N_BUCKETS]; /* non-cumulative; cumulated when printed */
	uint64_t count;
	uint64_t sum_ns;
};

struct op_metrics {
	pthread_mutex_t lock;
	uint64_t requests[OP_ROUTE_COUNT_][STATUS_MAX - STATUS_MIN + 1];
	uint64_t exec_open, exec_total;
	struct histogram latency[OP_ROUTE_COUNT_];
	struct histogram commit;
	uint64_t refused[OP_REFUSED_COUNT_];
};

static const char *const route_names[OP_ROUTE_COUNT_] = {
	[OP_ROUTE_CREATE] = "create", [OP_ROUTE_UPDATE] = "update",   [OP_ROUTE_DELETE] = "delete",
	[OP_ROUTE_GET] = "get",       [OP_ROUTE_LIST] = "list",       [OP_ROUTE_USAGE] = "usage", [OP_ROUTE_LOGS] = "logs",
	[OP_ROUTE_EXEC] = "exec",
	[OP_ROUTE_METRICS] = "metrics", [OP_ROUTE_HEALTHZ] = "healthz", [OP_ROUTE_SANDBOX] = "sandbox",
	[OP_ROUTE_OTHER] = "other",
};

static const char *const refusal_names[OP_REFUSED_COUNT_] = {
	[OP_REFUSED_SPEC] = "invalid-spec",
	[OP_REFUSED_POLICY] = "policy",
	[OP_REFUSED_ORG_LIMIT] = "organization-limit",
	[OP_REFUSED_SUSPENDED] = "suspended",
	[OP_REFUSED_IMAGE] = "image",
	[OP_REFUSED_IMAGE_TOO_LARGE] = "image-too-large",
	[OP_REFUSED_PORTS] = "public-ports-exhausted",
};

const char *op_route_name(enum op_route route)
{
	return (unsigned)route < OP_ROUTE_COUNT_ ? route_names[route] : "other";
}

int op_metrics_new(struct op_metrics **ret)
{
	struct op_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	*ret = m;
	return 0;
}

void op_metrics_free(struct op_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static void observe(struct histogram *h, uint64_t ns)
{
	size_t i = 0;

	while (i < N_BUCKETS && ns > bucket_us[i] * 1000)
		i++;
	if (i < N_BUCKETS)
		h->bucket[i]++;
	h->count++;
	h->sum_ns += ns;
}

void op_metrics_request(struct op_metrics *m, enum op_route route, int status, uint64_t latency_ns)
{
	if (!m || (unsigned)route >= OP_ROUTE_COUNT_ || status < STATUS_MIN || status > STATUS_MAX)
		return;
	pthread_mutex_lock(&m->lock);
	m->requests[route][status - STATUS_MIN]++;
	observe(&m->latency[route], latency_ns);
	pthread_mutex_unlock(&m->lock);
}

void op_metrics_commit(struct op_metrics *m, uint64_t ns)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	observe(&m->commit, ns);
	pthread_mutex_unlock(&m->lock);
}

void op_metrics_exec(struct op_metrics *m, int delta)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	if (delta > 0) {
		m->exec_open++;
		m->exec_total++;
	} else if (m->exec_open) {
		m->exec_open--;
	}
	pthread_mutex_unlock(&m->lock);
}

uint64_t op_metrics_exec_open(struct op_metrics *m)
{
	uint64_t v;

	if (!m)
		return 0;
	pthread_mutex_lock(&m->lock);
	v = m->exec_open;
	pthread_mutex_unlock(&m->lock);
	return v;
}

void op_metrics_refused(struct op_metrics *m, enum op_refusal reason)
{
	if (!m || (unsigned)reason >= OP_REFUSED_COUNT_)
		return;
	pthread_mutex_lock(&m->lock);
	m->refused[reason]++;
	pthread_mutex_unlock(&m->lock);
}

uint64_t op_metrics_requests(struct op_metrics *m, enum op_route route, int status)
{
	uint64_t v;

	if (!m || (unsigned)route >= OP_ROUTE_COUNT_ || status < STATUS_MIN || status > STATUS_MAX)
		return 0;
	pthread_mutex_lock(&m->lock);
	v = m->requests[route][status - STATUS_MIN];
	pthread_mutex_unlock(&m->lock);
	return v;
}

uint64_t op_metrics_refusals(struct op_metrics *m, enum op_refusal reason)
{
	uint64_t v;

	if (!m || (unsigned)reason >= OP_REFUSED_COUNT_)
		return 0;
	pthread_mutex_lock(&m->lock);
	v = m->refused[reason];
	pthread_mutex_unlock(&m->lock);
	return v;
}

static void print_histogram(FILE *f, const char *name, const char *labels, const struct histogram *h)
{
	uint64_t cum = 0;

	for (size_t i = 0; i < N_BUCKETS; i++) {
		cum += h->bucket[i];
		fprintf(f, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, labels[0] ? "," : "",
			(double)bucket_us[i] / 1e6, cum);
	}
	fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, labels[0] ? "," : "", h->count);
	fprintf(f, "%s_sum%s%s%s %.9f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		(double)h->sum_ns / 1e9);
	fprintf(f, "%s_count%s%s%s %" PRIu64 "\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		h->count);
}

int op_metrics_format(struct op_metrics *m, char **ret, size_t *ret_len)
{
	struct op_metrics *snap;
	char *buf = NULL, labels[64];
	size_t len = 0;
	FILE *f;

	if (!m || !ret)
		return -EINVAL;
	/* Print from a snapshot: the lock is not held while formatting. */
	snap = malloc(sizeof(*snap));
	if (!snap)
		return -ENOMEM;
	pthread_mutex_lock(&m->lock);
	memcpy(snap, m, sizeof(*snap));
	pthread_mutex_unlock(&m->lock);
	f = open_memstream(&buf, &len);
	if (!f) {
		free(snap);
		return -ENOMEM;
	}
	fputs("# HELP flash_operator_requests_total provider/v1 requests by route and HTTP status code.\n"
	      "# TYPE flash_operator_requests_total counter\n",
	      f);
	for (int r = 0; r < OP_ROUTE_COUNT_; r++)
		for (int s = STATUS_MIN; s <= STATUS_MAX; s++)
			if (snap->requests[r][s - STATUS_MIN])
				fprintf(f, "flash_operator_requests_total{route=\"%s\",code=\"%d\"} %" PRIu64 "\n",
					route_names[r], s, snap->requests[r][s - STATUS_MIN]);
	fputs("# HELP flash_operator_request_duration_seconds Time from the complete request to the answer.\n"
	      "# TYPE flash_operator_request_duration_seconds histogram\n",
	      f);
	for (int r = 0; r < OP_ROUTE_COUNT_; r++) {
		if (!snap->latency[r].count)
			continue;
		snprintf(labels, sizeof(labels), "route=\"%s\"", route_names[r]);
		print_histogram(f, "flash_operator_request_duration_seconds", labels, &snap->latency[r]);
	}
	fputs("# HELP flash_operator_store_commit_seconds Time of each store commit (WAL, synchronous=FULL).\n"
	      "# TYPE flash_operator_store_commit_seconds histogram\n",
	      f);
	print_histogram(f, "flash_operator_store_commit_seconds", "", &snap->commit);
	fputs("# HELP flash_operator_admissions_refused_total Admissions refused, by reason.\n"
	      "# TYPE flash_operator_admissions_refused_total counter\n",
	      f);
	for (int i = 0; i < OP_REFUSED_COUNT_; i++)
		fprintf(f, "flash_operator_admissions_refused_total{reason=\"%s\"} %" PRIu64 "\n", refusal_names[i],
			snap->refused[i]);
	fprintf(f,
		"# HELP flash_operator_exec_sessions_open Web Shell sessions open now.\n"
		"# TYPE flash_operator_exec_sessions_open gauge\n"
		"flash_operator_exec_sessions_open %" PRIu64 "\n"
		"# HELP flash_operator_exec_sessions_total Web Shell sessions started.\n"
		"# TYPE flash_operator_exec_sessions_total counter\n"
		"flash_operator_exec_sessions_total %" PRIu64 "\n",
		snap->exec_open, snap->exec_total);
	free(snap);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}
