/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Autoscaling on one node: the decision rule, the cgroup reading and the
 * loop (autoscale.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <flash/spec.h>

#include "autoscale.h"
#include "util.h"

#define CG_FILE_MAX 65536

/* ---------------------------------------------------------------- decision */

static void window_push(struct op_autoscale_window *w, int64_t now_ms, int64_t window_ms, uint32_t replicas)
{
	size_t keep = 0;

	/* Expired entries go from the front, then the ones the new entry
	 * outlives and equals or exceeds from the back. */
	while (keep < w->n && w->v[keep].at_ms < now_ms - window_ms)
		keep++;
	memmove(w->v, w->v + keep, (w->n - keep) * sizeof(w->v[0]));
	w->n -= keep;
	while (w->n && w->v[w->n - 1].replicas <= replicas)
		w->n--;
	if (w->n == ARRAY_SIZE(w->v)) { /* not reached: one entry per count */
		memmove(w->v, w->v + 1, (w->n - 1) * sizeof(w->v[0]));
		w->n--;
	}
	w->v[w->n].at_ms = now_ms;
	w->v[w->n].replicas = replicas;
	w->n++;
}

static uint32_t clamp_u32(uint64_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : (uint32_t)v;
}

void op_autoscale_decide(const struct op_autoscale_params *p, uint32_t current, const struct op_autoscale_sample *s,
			 size_t n, int64_t now_ms, struct op_autoscale_window *w, struct op_autoscale_decision *ret)
{
	uint32_t lo = p->min_replicas ? p->min_replicas : 1, hi = p->max_replicas, measured = 0, missing;
	uint64_t used = 0, rec = current, stab, limit;
	const char *reason;

	if (hi > OP_AUTOSCALE_REPLICAS_MAX)
		hi = OP_AUTOSCALE_REPLICAS_MAX;
	if (hi < lo)
		hi = lo;
	for (size_t i = 0; i < n && i < current; i++)
		if (s[i].measured) {
			used += s[i].used_millis;
			measured++;
		}
	missing = current - measured;
	*ret = (struct op_autoscale_decision){ .measured = measured };
	if (measured == 0 || p->cpu_millis == 0 || p->target_percent == 0) {
		reason = "no replica measured yet";
	} else {
		/* ratio = used / (measured * cpu_millis * target / 100), kept
		 * in integers: num / den with den the use at target. */
		uint64_t num = used * 100, den = (uint64_t)measured * p->cpu_millis * p->target_percent;
		uint64_t at_target = (uint64_t)p->cpu_millis * p->target_percent; /* one replica at target, x100 */
		uint64_t need = (num + at_target - 1) / at_target;                /* ceil(used / target) */
		uint64_t diff = num > den ? num - den : den - num;

		ret->utilisation_percent = (uint32_t)((used * 100 + (uint64_t)measured * p->cpu_millis / 2) /
						      ((uint64_t)measured * p->cpu_millis));
		if (diff * 100 <= (uint64_t)p->tolerance_percent * den) {
			reason = "within tolerance";
		} else if (num > den) {
			rec = need > current ? need : current;
			reason = "above target";
		} else {
			need += missing; /* unmeasured replicas stay (as if at target) */
			rec = need < current ? need : current;
			reason = "below target";
		}
	}
	rec = clamp_u32(rec, lo, hi);
	ret->recommended = (uint32_t)rec;
	window_push(w, now_ms, p->window_ms, (uint32_t)rec);
	stab = rec;
	if (rec < current) {
		stab = w->v[0].replicas < current ? w->v[0].replicas : current; /* the window's highest */
		if (stab > rec)
			reason = "scale-down held by the stabilisation window";
	}
	limit = (uint64_t)current * OP_AUTOSCALE_UP_FACTOR;
	if ((uint64_t)current + OP_AUTOSCALE_UP_PODS < limit)
		limit = (uint64_t)current + OP_AUTOSCALE_UP_PODS;
	if (limit < 1)
		limit = 1;
	if (stab > current && stab > limit) {
		stab = limit;
		reason = "scale-up bounded per period";
	}
	if (current < lo || current > hi)
		reason = current < lo ? "raised to min_replicas" : "lowered to max_replicas";
	ret->desired = clamp_u32(stab, lo, hi);
	ret->reason = reason;
}

/* ---------------------------------------------------------------- measuring */

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EBADMSG;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || (*end && *end != '\n'))
		return -EBADMSG;
	*ret = v;
	return 0;
}

/* The cgroup file @path (small) through the one reader of outside files
 * (util_read_file(): regular files only, never blocking). */
static int read_cg(const char *path, char **ret)
{
	int r = util_read_file(path, CG_FILE_MAX, ret, NULL);

	return r == -EBADFD ? -EBADMSG : r;
}

int op_autoscale_cpu_usec(const char *cgroup_fs, const char *parent, const char *name, uint64_t *ret)
{
	static const char *const v1[] = { "cpuacct", "cpu,cpuacct" };
	char path[4096], *buf = NULL;
	uint64_t v;
	int r;

	if (!parent || !name || !ret || !name[0] || strchr(name, '/') || strstr(parent, ".."))
		return -EINVAL;
	if (!cgroup_fs)
		cgroup_fs = "/sys/fs/cgroup";
	/* cgroup2: "usage_usec N" in cpu.stat. */
	if ((size_t)snprintf(path, sizeof(path), "%s%s/%s/cpu.stat", cgroup_fs, parent, name) >= sizeof(path))
		return -ENAMETOOLONG;
	r = read_cg(path, &buf);
	if (r == 0) {
		for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
			if (strncmp(line, "usage_usec ", 11) == 0) {
				r = parse_u64(line + 11, &v);
				free(buf);
				if (r == 0)
					*ret = v;
				return r;
			}
		free(buf);
		buf = NULL;
		/* A v1 cpu controller's cpu.stat has no usage: try cpuacct. */
	} else if (r != -ENOENT && r != -ENOTDIR) {
		return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(v1); i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s%s/%s/cpuacct.usage", cgroup_fs, v1[i], parent, name) >=
		    sizeof(path))
			return -ENAMETOOLONG;
		r = read_cg(path, &buf);
		if (r == -ENOENT || r == -ENOTDIR)
			continue;
		if (r < 0)
			return r;
		r = parse_u64(buf, &v);
		free(buf);
		if (r == 0)
			*ret = v / 1000;
		return r;
	}
	return -ENOENT;
}

/* ---------------------------------------------------------------- the loop */

/* A replica's last reading. */
struct reading {
	char container[96];
	uint64_t usec;
	int64_t at_ms;
};

struct as_svc {
	char id[OP_SERVICE_ID_STRLEN];
	struct op_autoscale_window window;
	struct reading readings[OP_AUTOSCALE_REPLICAS_MAX];
	size_t n_readings;
	struct op_autoscale_view view; /* under the lock */
	bool has_view, seen;
	struct as_svc *next;
};

struct op_autoscale {
	struct op_autoscale_opts o;
	char *cgroup_parent, *cgroup_fs;
	int64_t period_ms, window_ms;
	uint32_t tolerance;
	struct as_svc *svcs;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping, started;
	pthread_t thread;
};

static struct as_svc *svc_get(struct op_autoscale *as, const char *id)
{
	struct as_svc *s;

	for (s = as->svcs; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->id, sizeof(s->id), "%s", id);
	pthread_mutex_lock(&as->lock);
	s->next = as->svcs;
	as->svcs = s;
	pthread_mutex_unlock(&as->lock);
	return s;
}

static const struct reading *reading_find(const struct as_svc *s, const char *container)
{
	for (size_t i = 0; i < s->n_readings; i++)
		if (strcmp(s->readings[i].container, container) == 0)
			return &s->readings[i];
	return NULL;
}

static void sync_service(struct op_autoscale *as, const struct op_service *svc, int64_t now)
{
	struct op_service_status st;
	struct op_autoscale_sample samples[OP_AUTOSCALE_REPLICAS_MAX] = { 0 };
	struct reading fresh[OP_AUTOSCALE_REPLICAS_MAX];
	struct op_autoscale_decision d;
	struct flash_spec *spec = NULL;
	struct as_svc *s;
	size_t n = 0, n_fresh = 0;

	if (flash_spec_parse(svc->spec, strlen(svc->spec), NULL, &spec, NULL) < 0)
		return;
	if (!flash_spec_has_autoscaling(spec) || op_runtime_status(as->o.runtime, svc->id, &st) < 0 ||
	    st.wanted == 0 || strcmp(st.phase, "failed") == 0 || strcmp(st.phase, "suspended") == 0 ||
	    !(s = svc_get(as, svc->id))) {
		flash_spec_free(spec);
		return;
	}
	s->seen = true;
	struct op_autoscale_params p = {
		.min_replicas = flash_spec_autoscaling_min_replicas(spec),
		.max_replicas = flash_spec_autoscaling_max_replicas(spec),
		.target_percent = flash_spec_autoscaling_target_cpu_percent(spec),
		.cpu_millis = flash_spec_cpu_millis(spec),
		.tolerance_percent = as->tolerance,
		.window_ms = as->window_ms,
	};

	/* One sample per ready replica of this generation read twice, the
	 * readings at least half a period apart. */
	for (size_t i = 0; i < st.n_replicas && n < ARRAY_SIZE(samples); i++) {
		const struct op_replica_view *v = &st.replicas[i];
		const struct reading *old;
		uint64_t usec;

		if (v->generation != svc->generation || strcmp(v->state, "ready") != 0 || !v->container[0])
			continue;
		if (op_autoscale_cpu_usec(as->cgroup_fs, as->cgroup_parent, v->container, &usec) < 0) {
			samples[n++].measured = false;
			continue;
		}
		old = reading_find(s, v->container);
		if (old && now - old->at_ms >= as->period_ms / 2 && usec >= old->usec) {
			samples[n].measured = true;
			samples[n].used_millis = (usec - old->usec) / (uint64_t)(now - old->at_ms); /* us per ms */
			n++;
		} else {
			samples[n++].measured = false;
		}
		if (old && now - old->at_ms < as->period_ms / 2) {
			fresh[n_fresh++] = *old; /* too close: keep the older reading */
		} else {
			snprintf(fresh[n_fresh].container, sizeof(fresh[n_fresh].container), "%s", v->container);
			fresh[n_fresh].usec = usec;
			fresh[n_fresh++].at_ms = now;
		}
	}
	memcpy(s->readings, fresh, n_fresh * sizeof(fresh[0]));
	s->n_readings = n_fresh;
	op_autoscale_decide(&p, st.wanted, samples, n, now, &s->window, &d);
	if (d.desired != st.wanted && op_runtime_set_desired(as->o.runtime, svc->id, d.desired) == 0) {
		char msg[256];

		snprintf(msg, sizeof(msg),
			 "scaled from %u to %u replicas: CPU %u%% of cpu_millis over %u measured replica%s (target %u%%, %s)",
			 st.wanted, d.desired, d.utilisation_percent, d.measured, d.measured == 1 ? "" : "s",
			 p.target_percent, d.reason);
		if (as->o.event)
			as->o.event(as->o.ctx, svc->id, "scaled", msg);
		pthread_mutex_lock(&as->lock);
		s->view.last_scaled = time(NULL);
		pthread_mutex_unlock(&as->lock);
	}
	pthread_mutex_lock(&as->lock);
	s->view.current = st.wanted;
	s->view.desired = d.desired;
	s->view.measured = d.measured;
	s->view.utilisation_percent = d.utilisation_percent;
	snprintf(s->view.reason, sizeof(s->view.reason), "%s", d.reason);
	s->has_view = true;
	pthread_mutex_unlock(&as->lock);
	flash_spec_free(spec);
}

static void sync_all(struct op_autoscale *as)
{
	struct op_service **list = NULL;
	struct as_svc *gone = NULL;
	size_t n = 0;
	int64_t now = util_mono_ms();

	if (as->o.services(as->o.ctx, &list, &n) < 0)
		return;
	for (struct as_svc *s = as->svcs; s; s = s->next)
		s->seen = false;
	for (size_t i = 0; i < n; i++)
		sync_service(as, list[i], now);
	op_service_list_free(list, n);
	/* Services deleted, or no longer autoscaled, are forgotten. */
	pthread_mutex_lock(&as->lock);
	for (struct as_svc **pp = &as->svcs, *s; (s = *pp);) {
		if (!s->seen) {
			*pp = s->next;
			s->next = gone;
			gone = s;
			continue;
		}
		pp = &s->next;
	}
	pthread_mutex_unlock(&as->lock);
	while (gone) {
		struct as_svc *s = gone;

		gone = s->next;
		free(s);
	}
}

static void *loop(void *arg)
{
	struct op_autoscale *as = arg;

	for (;;) {
		struct timespec ts;

		pthread_mutex_lock(&as->lock);
		if (as->stopping) {
			pthread_mutex_unlock(&as->lock);
			break;
		}
		pthread_mutex_unlock(&as->lock);
		sync_all(as);
		util_abstime_after_ms(&ts, (uint64_t)as->period_ms);
		pthread_mutex_lock(&as->lock);
		while (!as->stopping)
			if (pthread_cond_timedwait(&as->wake, &as->lock, &ts) != 0)
				break;
		pthread_mutex_unlock(&as->lock);
	}
	return NULL;
}

int op_autoscale_start(const struct op_autoscale_opts *opts, struct op_autoscale **ret)
{
	struct op_autoscale *as;
	int window_s, tol;

	if (!opts || !OPTS_VALID(opts, op_autoscale_opts) || !opts->runtime || !opts->services || !ret)
		return -EINVAL;
	window_s = opts->window_s < 0 ? (int)OP_AUTOSCALE_WINDOW_DEFAULT_S : opts->window_s;
	tol = opts->tolerance_percent < 0 ? (int)OP_AUTOSCALE_TOLERANCE_DEFAULT_PERCENT : opts->tolerance_percent;
	if (tol > 99 || opts->period_s > 86400 || window_s > 86400)
		return -EINVAL;
	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	memcpy(&as->o, opts, opts->sz < sizeof(as->o) ? opts->sz : sizeof(as->o));
	as->cgroup_parent = strdup(opts->cgroup_parent ? opts->cgroup_parent : OP_RUNTIME_CGROUP_PARENT_DEFAULT);
	as->cgroup_fs = opts->cgroup_fs ? strdup(opts->cgroup_fs) : NULL;
	as->period_ms = (int64_t)(opts->period_s ? opts->period_s : OP_AUTOSCALE_PERIOD_DEFAULT_S) * 1000;
	as->window_ms = (int64_t)window_s * 1000;
	as->tolerance = (uint32_t)tol;
	pthread_mutex_init(&as->lock, NULL);
	pthread_cond_init(&as->wake, NULL);
	if (!as->cgroup_parent || (opts->cgroup_fs && !as->cgroup_fs)) {
		op_autoscale_stop(as);
		return -ENOMEM;
	}
	int r = pthread_create(&as->thread, NULL, loop, as);

	if (r != 0) {
		op_autoscale_stop(as);
		return -r;
	}
	as->started = true;
	*ret = as;
	return 0;
}

int op_autoscale_status(struct op_autoscale *as, const char *id, struct op_autoscale_view *ret)
{
	int r = -ENOENT;

	if (!as || !id || !ret)
		return -EINVAL;
	pthread_mutex_lock(&as->lock);
	for (struct as_svc *s = as->svcs; s; s = s->next)
		if (strcmp(s->id, id) == 0 && s->has_view) {
			*ret = s->view;
			r = 0;
		}
	pthread_mutex_unlock(&as->lock);
	return r;
}

void op_autoscale_stop(struct op_autoscale *as)
{
	if (!as)
		return;
	if (as->started) {
		pthread_mutex_lock(&as->lock);
		as->stopping = true;
		pthread_cond_broadcast(&as->wake);
		pthread_mutex_unlock(&as->lock);
		pthread_join(as->thread, NULL);
	}
	while (as->svcs) {
		struct as_svc *s = as->svcs;

		as->svcs = s->next;
		free(s);
	}
	pthread_mutex_destroy(&as->lock);
	pthread_cond_destroy(&as->wake);
	free(as->cgroup_parent);
	free(as->cgroup_fs);
	free(as);
}
