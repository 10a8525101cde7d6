/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-operator's /metrics (private to operator/): request counters by
 * route and status code, request latency and store commit time
 * histograms, and admissions refused by reason, printed in the Prometheus
 * text exposition format 0.0.4.  Updates take a mutex held for a few
 * additions, never across I/O.
 */
#ifndef FLASH_OPERATOR_METRICS_H
#define FLASH_OPERATOR_METRICS_H

#include <stddef.h>
#include <stdint.h>

enum op_route {
	OP_ROUTE_CREATE = 0,
	OP_ROUTE_UPDATE,
	OP_ROUTE_DELETE,
	OP_ROUTE_GET,
	OP_ROUTE_LIST,
	OP_ROUTE_USAGE,
	OP_ROUTE_LOGS,
	OP_ROUTE_EXEC,
	OP_ROUTE_METRICS,
	OP_ROUTE_HEALTHZ,
	OP_ROUTE_SANDBOX, /* every /provider/v1/sandboxes route (sandbox-http.h) */
	OP_ROUTE_OTHER, /* no route matched */
	OP_ROUTE_COUNT_,
};

/* "create", ..., "other". */
const char *op_route_name(enum op_route route);

/* Why an admission was refused (the "reason" label). */
enum op_refusal {
	OP_REFUSED_SPEC = 0,      /* invalid spec */
	OP_REFUSED_POLICY,        /* per-workload limits, regions, GPU catalog, protected ranges */
	OP_REFUSED_ORG_LIMIT,     /* organization limits */
	OP_REFUSED_SUSPENDED,     /* weekly metering limit reached */
	OP_REFUSED_IMAGE,         /* image refused (unknown, unreachable, malformed) */
	OP_REFUSED_IMAGE_TOO_LARGE,
	OP_REFUSED_PORTS,         /* public ports exhausted */
	OP_REFUSED_COUNT_,
};

struct op_metrics;

int op_metrics_new(struct op_metrics **ret);
void op_metrics_free(struct op_metrics *m);

void op_metrics_request(struct op_metrics *m, enum op_route route, int status, uint64_t latency_ns);
void op_metrics_commit(struct op_metrics *m, uint64_t ns);
void op_metrics_refused(struct op_metrics *m, enum op_refusal reason);
/* A Web Shell session began (@delta 1) or ended (-1): the gauge of open
 * sessions and the counter of sessions. */
void op_metrics_exec(struct op_metrics *m, int delta);

/* Counter values, for tests. */
uint64_t op_metrics_requests(struct op_metrics *m, enum op_route route, int status);
uint64_t op_metrics_refusals(struct op_metrics *m, enum op_refusal reason);
uint64_t op_metrics_exec_open(struct op_metrics *m);

/* The exposition text in a new buffer (free()). */
int op_metrics_format(struct op_metrics *m, char **ret, size_t *ret_len);

#endif
