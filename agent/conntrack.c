/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's conntrack garbage collector (conntrack.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "conntrack.h"
#include "log.h"

struct agent_ct {
	const struct agent_ops *ops;
	void *ctx;
	struct flowsdn_datapath *dp;
	unsigned int interval_s;
	pthread_t thread;
	pthread_mutex_t run_lock; /* one pass at a time */
	pthread_mutex_t lock;     /* guards what follows; never held across a pass */
	pthread_cond_t cond;
	bool stop;
	struct agent_ct_status st;
};

int agent_ct_run(struct agent_ct *ct, size_t *ret_removed)
{
	size_t removed = 0;
	int err;

	if (!ct)
		return -EINVAL;
	pthread_mutex_lock(&ct->run_lock);
	err = ct->ops->dp_ct_gc(ct->ctx, ct->dp, &removed);
	pthread_mutex_unlock(&ct->run_lock);
	pthread_mutex_lock(&ct->lock);
	ct->st.runs++;
	ct->st.removed += removed;
	ct->st.last_err = err;
	pthread_mutex_unlock(&ct->lock);
	if (err < 0)
		pr_warn("agent: conntrack garbage collection: %s", flowsdn_strerror(err));
	else if (removed)
		pr_debug("agent: conntrack garbage collection removed %zu dead entries", removed);
	if (ret_removed)
		*ret_removed = removed;
	return err;
}

static void *gc_main(void *arg)
{
	struct agent_ct *ct = arg;
	struct timespec at;

	pthread_mutex_lock(&ct->lock);
	while (!ct->stop) {
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += ct->interval_s;
		while (!ct->stop && pthread_cond_timedwait(&ct->cond, &ct->lock, &at) != ETIMEDOUT)
			;
		if (ct->stop)
			break;
		pthread_mutex_unlock(&ct->lock);
		(void)agent_ct_run(ct, NULL);
		pthread_mutex_lock(&ct->lock);
	}
	pthread_mutex_unlock(&ct->lock);
	return NULL;
}

int agent_ct_start(const struct agent_ops *ops, void *ctx, struct flowsdn_datapath *dp, unsigned int interval_s,
		   struct agent_ct **ret)
{
	struct agent_ct *ct;
	pthread_condattr_t ca;
	int err;

	if (!ops || !ops->dp_ct_gc || !dp || !interval_s || !ret)
		return -EINVAL;
	ct = calloc(1, sizeof(*ct));
	if (!ct)
		return -ENOMEM;
	ct->ops = ops;
	ct->ctx = ctx;
	ct->dp = dp;
	ct->interval_s = interval_s;
	pthread_mutex_init(&ct->run_lock, NULL);
	pthread_mutex_init(&ct->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ct->cond, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&ct->thread, NULL, gc_main, ct);
	if (err) {
		pthread_cond_destroy(&ct->cond);
		pthread_mutex_destroy(&ct->lock);
		pthread_mutex_destroy(&ct->run_lock);
		free(ct);
		return -err;
	}
	*ret = ct;
	return 0;
}

void agent_ct_status(struct agent_ct *ct, struct agent_ct_status *ret)
{
	if (!ct || !ret)
		return;
	pthread_mutex_lock(&ct->lock);
	*ret = ct->st;
	pthread_mutex_unlock(&ct->lock);
}

void agent_ct_stop(struct agent_ct *ct)
{
	if (!ct)
		return;
	pthread_mutex_lock(&ct->lock);
	ct->stop = true;
	pthread_cond_broadcast(&ct->cond);
	pthread_mutex_unlock(&ct->lock);
	pthread_join(ct->thread, NULL);
	pthread_cond_destroy(&ct->cond);
	pthread_mutex_destroy(&ct->lock);
	pthread_mutex_destroy(&ct->run_lock);
	free(ct);
}
