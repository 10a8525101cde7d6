/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Autoscaling on one node (private to operator/; SPEC §3.1): every sync
 * period, each live service whose spec has `autoscaling` is measured and
 * its replica count moved within min_replicas..max_replicas as the
 * Kubernetes HorizontalPodAutoscaler moves a Deployment's:
 *
 *   - a sample is a ready replica's CPU use over the last period: the
 *     delta of its cgroup's CPU time (op_autoscale_cpu_usec()) over the
 *     wall time between two readings, in millicores; utilisation is the
 *     mean of the samples in percent of the spec's cpu_millis;
 *   - a replica without a sample (starting, not ready, or ready for less
 *     than a period) is not counted as idle: it is left out of the mean;
 *     a scale-up recommends ceil(sum of use / target) (as the HPA, which
 *     counts such replicas at 0 % only on the way up: the same figure),
 *     a scale-down keeps those replicas on top (the HPA's "missing
 *     metrics count as at target on the way down");
 *   - no change while |utilisation / target - 1| <= tolerance (10 %);
 *   - a scale-down takes the highest recommendation of the stabilisation
 *     window (the last 300 s), so a short lull removes nothing;
 *   - a scale-up is bounded per period: at most double, at most +4;
 *   - the result is clamped to min_replicas..max_replicas (and to
 *     OP_AUTOSCALE_REPLICAS_MAX, what one node's status lists).
 *
 * op_autoscale_decide() is that rule alone (no I/O, unit-tested); the
 * loop (op_autoscale_start()) reads the cgroups, tells the runtime its
 * new count (op_runtime_set_desired()) and records a "scaled" event of
 * the service (from, to, the utilisation that caused it).
 */
#ifndef FLASH_OPERATOR_AUTOSCALE_H
#define FLASH_OPERATOR_AUTOSCALE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"
#include "store.h"

#define OP_AUTOSCALE_PERIOD_DEFAULT_S 15u
#define OP_AUTOSCALE_WINDOW_DEFAULT_S 300u
#define OP_AUTOSCALE_TOLERANCE_DEFAULT_PERCENT 10u
/* Scale-up per period: at most this factor, at most this many more. */
#define OP_AUTOSCALE_UP_FACTOR 2u
#define OP_AUTOSCALE_UP_PODS 4u
/* The most replicas the autoscaler runs on one node: every one must be
 * in the runtime's status (its replica list) to be measured. */
#define OP_AUTOSCALE_REPLICAS_MAX OP_STATUS_REPLICAS_SHOWN

/* ------------------------------------------------------------ decision */

struct op_autoscale_params {
	uint32_t min_replicas, max_replicas; /* 1 <= min <= max */
	uint32_t target_percent;             /* of cpu_millis, 1..100 */
	uint32_t cpu_millis;                 /* one replica's CPU (> 0) */
	uint32_t tolerance_percent;          /* 0..99 */
	int64_t window_ms;                   /* scale-down stabilisation, >= 0 */
};

/* One replica's measurement over the last period. */
struct op_autoscale_sample {
	bool measured;       /* false: no sample (not ready, too new) */
	uint64_t used_millis; /* its mean CPU use, millicores */
};

/* The recommendations of the stabilisation window: only those that can
 * still be its maximum are kept (each newer one is lower), so it holds at
 * most one per replica count. */
#define OP_AUTOSCALE_WINDOW_SLOTS (OP_AUTOSCALE_REPLICAS_MAX + 1)
struct op_autoscale_window {
	size_t n;
	struct {
		int64_t at_ms;
		uint32_t replicas;
	} v[OP_AUTOSCALE_WINDOW_SLOTS];
};

struct op_autoscale_decision {
	uint32_t desired;             /* the count to run now */
	uint32_t recommended;         /* these samples' own recommendation (within min..max) */
	uint32_t measured;            /* samples used */
	uint32_t utilisation_percent; /* their mean, of cpu_millis (0 when none) */
	const char *reason;           /* static: why desired is what it is */
};

/* Decides @ret from @current (the count the service runs; >= 1), the
 * samples @s (@n of them, at most @current counted: one per replica) at
 * @now_ms (monotonic), through the window @w (zeroed before the first
 * call; updated).  No I/O. */
void op_autoscale_decide(const struct op_autoscale_params *p, uint32_t current, const struct op_autoscale_sample *s,
			 size_t n, int64_t now_ms, struct op_autoscale_window *w, struct op_autoscale_decision *ret);

/* ------------------------------------------------------------ measuring */

/* The CPU time used so far by the processes of cgroup @parent/@name
 * (microseconds): cgroup2's cpu.stat usage_usec below @cgroup_fs, else
 * cgroup v1's cpuacct.usage (nanoseconds) below @cgroup_fs/cpuacct or
 * @cgroup_fs/cpu,cpuacct.  @cgroup_fs NULL: /sys/fs/cgroup.  0 and
 * *ret; -ENOENT (no such cgroup), -EBADMSG (a file that does not read as
 * one), -EINVAL, -errno. */
int op_autoscale_cpu_usec(const char *cgroup_fs, const char *parent, const char *name, uint64_t *ret);

/* ------------------------------------------------------------ the loop */

struct op_autoscale_opts {
	size_t sz;
	struct op_runtime *runtime; /* required: measured and told */
	/* The live services (required; same contract as the runtime's). */
	int (*services)(void *ctx, struct op_service ***ret, size_t *ret_n);
	/* An event of service @id (NULL: none): "scaled" with its message. */
	void (*event)(void *ctx, const char *id, const char *type, const char *message);
	void *ctx;
	const char *cgroup_parent;  /* NULL: OP_RUNTIME_CGROUP_PARENT_DEFAULT */
	const char *cgroup_fs;      /* NULL: /sys/fs/cgroup */
	unsigned int period_s;      /* 0: OP_AUTOSCALE_PERIOD_DEFAULT_S */
	int window_s;               /* < 0: OP_AUTOSCALE_WINDOW_DEFAULT_S */
	int tolerance_percent;      /* < 0: OP_AUTOSCALE_TOLERANCE_DEFAULT_PERCENT; else 0..99 */
};

/* What the autoscaler last decided for a service (flashctl get). */
struct op_autoscale_view {
	uint32_t current, desired;
	uint32_t measured;            /* replicas measured in the last period */
	uint32_t utilisation_percent; /* their mean CPU use, of cpu_millis */
	int64_t last_scaled;          /* wall clock seconds of the last change; 0: none */
	char reason[64];
};

struct op_autoscale;

/* Starts the loop's thread.  -EINVAL (options), -ENOMEM, -errno. */
int op_autoscale_start(const struct op_autoscale_opts *opts, struct op_autoscale **ret);

/* The last decision for service @id; -ENOENT before the first. */
int op_autoscale_status(struct op_autoscale *as, const char *id, struct op_autoscale_view *ret);

/* Stops the thread; NULL is fine. */
void op_autoscale_stop(struct op_autoscale *as);

#endif
