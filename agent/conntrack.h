/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's conntrack garbage collector: a thread that removes the dead
 * entries of the datapath's flowsdn_ct every conntrack-gc-interval-seconds
 * (flowsdn-agent.conf(5)), through the ops seam (agent_ops.dp_ct_gc).
 * The LRU would evict dead entries only when the table is full; the
 * collector keeps the count of live connections meaningful and leaves
 * room for new ones.  Private to agent/.
 */
#ifndef FLOWSDN_AGENT_CONNTRACK_H
#define FLOWSDN_AGENT_CONNTRACK_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

struct agent_ct;

struct agent_ct_status {
	uint64_t runs;    /* passes finished */
	uint64_t removed; /* entries removed, all passes */
	int last_err;     /* of the last pass (0: it worked) */
};

/* Starts the collector on @dp (which must outlive it) with @ops/@ctx,
 * one pass every @interval_s seconds (>= 1).  -EINVAL, -ENOMEM, or the
 * error of pthread_create(). */
int agent_ct_start(const struct agent_ops *ops, void *ctx, struct flowsdn_datapath *dp, unsigned int interval_s,
		   struct agent_ct **ret);
/* Runs one pass now, in the caller's thread (the collector's own passes
 * wait meanwhile).  Returns the pass's result; *ret_removed may be NULL. */
int agent_ct_run(struct agent_ct *ct, size_t *ret_removed);
/* What the collector did so far. */
void agent_ct_status(struct agent_ct *ct, struct agent_ct_status *ret);
/* Stops the thread (waits for a running pass) and frees.  NULL is fine. */
void agent_ct_stop(struct agent_ct *ct);

#endif
