/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flash-operator --kubernetes: the threads around the reconciler
 * (k8s-reconcile.h): one watch per thread, each on its own client; the
 * Lease loop, which only renews (its period never waits for a reconcile),
 * publishes the leadership deadline to the reconciler's write fence and
 * wakes the worker; the worker, which does what leadership and the resync
 * ask; every call into the reconciler under one mutex (r->lock), its
 * writes through one client.  The publisher and op_k8s_run_kick() have
 * their own small lock (r->plock), never r->lock. */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "k8s-reconcile.h"
#include "k8s-status.h"
#include "store.h"
#include "util.h"

enum watch_kind { W_FLASH, W_DEPLOY, W_POD, W_SLICE, W_SERVICE, W_NODE, W_N_ };

struct op_k8s_run;

#define STATUS_BUCKETS 1024

/* One FlashService's status as the watch saw it. */
struct fs_seen {
	struct fs_seen *next;
	char *ns, *name;
	struct json_value *status;  /* NULL: none written yet */
	int64_t generation, replicas;
	bool seen;                  /* in the current list */
};

struct watcher {
	struct op_k8s_run *run;
	enum watch_kind kind;
	struct k8s_client *c;
	pthread_t th;
	bool started;
};

struct op_k8s_run {
	struct op_k8s_run_opts o;
	struct k8s_config *cfg;
	struct k8s_client *writer, *lease_c;
	struct flash_schema_set *own_schemas;
	struct flash_operator_config *own_config;
	struct op_k8s *k;
	pthread_mutex_t lock;       /* every call into r->k */
	atomic_bool stopping;
	struct watcher w[W_N_];
	/* The Lease thread and the worker: wlock guards the work flags;
	 * wcond wakes the worker, lcond the Lease thread, the watches'
	 * retries wait on lcond too. */
	pthread_mutex_t wlock;
	pthread_cond_t wcond, lcond;
	bool work_leader, work_resync, work_round;
	pthread_t lease_th, work_th;
	bool lease_started, work_started;
	atomic_bool leading;        /* the Lease thread's last round */
	_Atomic int64_t leader_until; /* monotonic: last renewal + renew deadline; 0: not leader */
	/* The provider API's services published as FlashServices: plock
	 * guards pub_kicked and pub_stats, pcond wakes the publisher. */
	struct k8s_client *pub_c;
	struct op_k8s_publisher *pub;
	int (*services)(void *ctx, struct op_service ***ret, size_t *ret_n);
	void *services_ctx;
	pthread_mutex_t plock;
	pthread_cond_t pcond;
	pthread_t pub_th;
	bool pub_started, pub_kicked;
	struct op_k8s_publish_stats pub_stats;
	/* The FlashServices' status as their watch last saw them (the
	 * provider API's get and list read it): slock guards it. */
	pthread_mutex_t slock;
	struct fs_seen *sb[STATUS_BUCKETS];
	struct op_lease_elector el; /* the Lease thread's only */
	char identity[OP_LEASE_ID_MAX + 1];
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void run_log(struct op_k8s_run *r, enum k8s_log_level lvl, const char *msg)
{
	if (r->o.log)
		r->o.log(lvl, msg, r->o.log_userdata);
}

static int new_client(struct op_k8s_run *r, struct k8s_client **ret)
{
	struct k8s_client_opts co = { .sz = sizeof(co), .user_agent = "flash-operator/0.1" };

	if (r->o.client_opts)
		co = *r->o.client_opts;
	if (!co.log) {
		co.log = r->o.log;
		co.log_userdata = r->o.log_userdata;
	}
	return k8s_client_new(r->o.k8s_config ? r->o.k8s_config : r->cfg, &co, ret);
}

int op_k8s_run_new_client(void *run, struct k8s_client **ret)
{
	return run && ret ? new_client(run, ret) : -EINVAL;
}

/* The OpenAPI v3 documents of the group-versions the operator writes. */
static int fetch_schemas(struct op_k8s_run *r, struct flash_schema_set **ret)
{
	static const char *const paths[] = {
		"/openapi/v3/api/v1", "/openapi/v3/apis/apps/v1", "/openapi/v3/apis/networking.k8s.io/v1",
		"/openapi/v3/apis/autoscaling/v2", "/openapi/v3/apis/apiextensions.k8s.io/v1",
		"/openapi/v3/apis/gateway.networking.k8s.io/v1", "/openapi/v3/apis/events.k8s.io/v1",
	};
	struct flash_schema_set *set = NULL;
	int e = flash_schema_set_new(&set);

	for (size_t i = 0; e >= 0 && i < ARRAY_SIZE(paths); i++) {
		struct k8s_status st = { 0 };
		struct json_value *doc = NULL;
		char *text = NULL;
		size_t len;

		e = k8s_get_path(r->writer, paths[i], &doc, &st);
		k8s_status_clear(&st);
		if (e == -ENOENT && strstr(paths[i], "gateway")) {
			e = 0; /* Gateway API not installed: HTTPRoutes are refused before sending */
			continue;
		}
		if (e < 0)
			break;
		e = json_write_value(doc, 0, &text, &len);
		json_free(doc);
		if (e >= 0)
			e = flash_schema_set_add_openapi(set, text, len, NULL);
		free(text);
	}
	/* The operator's own kinds, from the CRDs it applies. */
	for (int c = FLASH_CRD_FLASHSERVICE; e >= 0 && c <= FLASH_CRD_FLASHUSAGERECORD; c++) {
		char *text = NULL;
		size_t len;

		e = flash_render_crd((enum flash_crd)c, FLASH_RENDER_JSON, &text, &len);
		if (e >= 0)
			e = flash_schema_set_add_crd(set, text, len, NULL);
		free(text);
	}
	if (e < 0) {
		flash_schema_set_free(set);
		return e;
	}
	*ret = set;
	return 0;
}

/* ------------------------------------------------------------ the FlashServices' status */

static size_t status_bucket(const char *ns, const char *name)
{
	return op_k8s_bucket(ns, name, STATUS_BUCKETS);
}

static void fs_seen_free(struct fs_seen *f)
{
	if (!f)
		return;
	free(f->ns);
	free(f->name);
	json_free(f->status);
	free(f);
}

/* One event of the FlashService watch into the status map (RELIST:
 * everything unseen; SYNCED: the unseen dropped). */
static void status_event(struct op_k8s_run *r, const struct k8s_event *ev)
{
	const char *ns, *name;
	struct fs_seen **pp, *f;

	pthread_mutex_lock(&r->slock);
	if (ev->type == K8S_EVENT_RELIST || ev->type == K8S_EVENT_SYNCED) {
		for (size_t i = 0; i < STATUS_BUCKETS; i++)
			for (pp = &r->sb[i]; (f = *pp);) {
				if (ev->type == K8S_EVENT_RELIST || f->seen) {
					f->seen = ev->type != K8S_EVENT_RELIST;
					pp = &f->next;
				} else {
					*pp = f->next;
					fs_seen_free(f);
				}
			}
		goto out;
	}
	ns = json_string_value(json_at(ev->object, "metadata.namespace"));
	name = json_string_value(json_at(ev->object, "metadata.name"));
	if (ev->type == K8S_EVENT_BOOKMARK || !ns || !name)
		goto out;
	for (pp = &r->sb[status_bucket(ns, name)]; (f = *pp); pp = &f->next)
		if (!strcmp(f->ns, ns) && !strcmp(f->name, name))
			break;
	if (ev->type == K8S_EVENT_DELETED) {
		if (f) {
			*pp = f->next;
			fs_seen_free(f);
		}
		goto out;
	}
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->ns = strdup(ns)) || !(f->name = strdup(name))) {
			fs_seen_free(f);
			goto out; /* the next event of it tries again */
		}
		*pp = f;
	}
	f->seen = true;
	json_free(f->status);
	f->status = op_k8s_json_clone(json_get(ev->object, "status"));
	f->generation = 0;
	f->replicas = 1;
	(void)json_get_int64(json_at(ev->object, "metadata.generation"), &f->generation);
	(void)json_get_int64(json_at(ev->object, "spec.replicas"), &f->replicas);
out:
	pthread_mutex_unlock(&r->slock);
}

int op_k8s_run_service_status(void *run, const struct op_service *s, struct op_service_status *ret)
{
	struct op_k8s_run *r = run;
	char ns[OP_K8S_NAMESPACE_MAX + 1];
	int e = -ENOENT;

	if (!r || !s || !s->org || !ret || op_k8s_org_namespace(s->org, ns, sizeof(ns)) < 0)
		return -EINVAL;
	pthread_mutex_lock(&r->slock);
	for (struct fs_seen *f = r->sb[status_bucket(ns, s->id)]; f; f = f->next)
		if (!strcmp(f->ns, ns) && !strcmp(f->name, s->id)) {
			e = op_k8s_service_status_view(f->status, f->generation, f->replicas, ret);
			break;
		}
	pthread_mutex_unlock(&r->slock);
	return e;
}

/* ------------------------------------------------------------ watches */

static int on_event(const struct k8s_event *ev, void *userdata)
{
	struct watcher *w = userdata;
	struct op_k8s_run *r = w->run;
	int e = 0;

	if (atomic_load(&r->stopping))
		return -ECANCELED;
	if (w->kind == W_FLASH)
		status_event(r, ev);
	pthread_mutex_lock(&r->lock);
	switch (w->kind) {
	case W_FLASH:
		e = op_k8s_service_event(r->k, ev);
		break;
	case W_DEPLOY:
		e = op_k8s_owned_event(r->k, OP_K8S_OWNED_DEPLOYMENT, ev);
		break;
	case W_POD:
		e = op_k8s_owned_event(r->k, OP_K8S_OWNED_POD, ev);
		break;
	case W_SLICE:
		e = op_k8s_owned_event(r->k, OP_K8S_OWNED_ENDPOINTSLICE, ev);
		break;
	case W_SERVICE:
		e = op_k8s_owned_event(r->k, OP_K8S_OWNED_SERVICE, ev);
		break;
	case W_NODE:
		e = op_k8s_node_event(r->k, ev);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&r->lock);
	(void)e; /* logged by the reconciler; retried at the next event or resync */
	return 0;
}

/* What each watch lists and follows (all namespaces). */
static const struct watched {
	const char *group, *version, *resource, *selector;
} watched[W_N_] = {
	[W_FLASH] = { OP_K8S_GROUP, OP_K8S_VERSION, "flashservices", NULL },
	[W_DEPLOY] = { "apps", "v1", "deployments", OP_K8S_OWNED_SELECTOR },
	[W_POD] = { NULL, "v1", "pods", OP_K8S_POD_SELECTOR },
	[W_SLICE] = { "discovery.k8s.io", "v1", "endpointslices", OP_K8S_OWNED_SELECTOR },
	[W_SERVICE] = { NULL, "v1", "services", OP_K8S_OWNED_SELECTOR },
	[W_NODE] = { NULL, "v1", "nodes", NULL },
};

static void *watch_main(void *arg)
{
	struct watcher *w = arg;
	struct op_k8s_run *r = w->run;
	const struct watched *wd = &watched[w->kind];
	struct k8s_ref ref = { .group = wd->group, .version = wd->version, .resource = wd->resource };
	struct k8s_watch_opts wo = { .sz = sizeof(wo), .label_selector = wd->selector };

	while (!r->stopping) {
		struct k8s_status st = { 0 };
		int e = k8s_watch(w->c, &ref, &wo, on_event, w, &st);
		char msg[512];

		if (r->stopping || e == -ECANCELED) {
			k8s_status_clear(&st);
			break;
		}
		snprintf(msg, sizeof(msg), "watch %s: %s (%s); listing again in 5 s", ref.resource, strerror(-e),
			 st.message ?: "");
		run_log(r, K8S_LOG_ERR, msg);
		k8s_status_clear(&st);
		pthread_mutex_lock(&r->wlock);
		if (!r->stopping) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 5;
			pthread_cond_timedwait(&r->lcond, &r->wlock, &ts);
		}
		pthread_mutex_unlock(&r->wlock);
	}
	return NULL;
}

/* ------------------------------------------------------------ Lease */

int op_k8s_lease_step(struct k8s_client *c, struct op_lease_elector *el, const char *ns, const char *name)
{
	struct k8s_ref ref = {
		.group = "coordination.k8s.io", .version = "v1", .resource = "leases", .namespace = ns, .name = name,
	};
	struct k8s_status st = { 0 };
	struct json_value *lease = NULL, *answer = NULL;
	char *body = NULL;
	int64_t sent;
	int act, e;

	if (!c || !el || !ns || !name)
		return -EINVAL;
	e = k8s_get(c, &ref, &lease, &st);
	if (e < 0 && e != -ENOENT)
		goto out;
	act = op_lease_decide(el, e == -ENOENT ? NULL : lease, ns, name, mono_us(), wall_us(), &body);
	sent = mono_us();
	if (act == OP_LEASE_CREATE) {
		struct k8s_ref coll = ref;

		coll.name = NULL;
		e = k8s_create(c, &coll, body, strlen(body), NULL, &answer, &st);
	} else if (act == OP_LEASE_UPDATE)
		e = k8s_replace(c, &ref, body, strlen(body), NULL, &answer, &st);
	if ((act == OP_LEASE_CREATE || act == OP_LEASE_UPDATE) && e >= 0)
		(void)op_lease_written(el, answer, sent);
out:
	k8s_status_clear(&st);
	json_free(lease);
	json_free(answer);
	free(body);
	return op_lease_is_leader(el, mono_us()) ? 1 : 0;
}

static void deadline_add(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* One renewal: the deadline goes to the reconciler's fence at once (no
 * r->lock), the worker is woken for the rest. */
static void lease_round(struct op_k8s_run *r)
{
	bool leader = op_k8s_lease_step(r->lease_c, &r->el,
					r->o.lease_namespace ? r->o.lease_namespace : k8s_client_namespace(r->lease_c),
					r->o.lease_name ? r->o.lease_name : "flash-operator") == 1;
	int64_t until = leader ? r->el.leader_until_us : 0;
	bool became = false;

	atomic_store(&r->leader_until, until);
	op_k8s_set_leader_until(r->k, until);
	pthread_mutex_lock(&r->wlock);
	if (leader != atomic_load(&r->leading)) {
		run_log(r, K8S_LOG_INFO, leader ? "leader election: leading" : "leader election: following");
		atomic_store(&r->leading, leader);
		r->work_leader = true;
		became = leader;
	}
	r->work_round = true;
	pthread_cond_signal(&r->wcond);
	pthread_mutex_unlock(&r->wlock);
	if (became)
		op_k8s_run_kick(r); /* what a follower did not publish */
}

static void *lease_main(void *arg)
{
	struct op_k8s_run *r = arg;
	unsigned int period = r->o.retry_period_ms ? r->o.retry_period_ms : 2000;
	unsigned int resync = r->o.resync_s ? r->o.resync_s : 300;
	int64_t next_resync = mono_us() + (int64_t)resync * 1000000;

	while (!atomic_load(&r->stopping)) {
		struct timespec ts;

		lease_round(r);
		pthread_mutex_lock(&r->wlock);
		if (mono_us() >= next_resync) {
			r->work_resync = true;
			pthread_cond_signal(&r->wcond);
			next_resync = mono_us() + (int64_t)resync * 1000000;
		}
		deadline_add(&ts, period);
		if (!r->stopping)
			pthread_cond_timedwait(&r->lcond, &r->wlock, &ts);
		pthread_mutex_unlock(&r->wlock);
	}
	return NULL;
}

/* The reconciler's side of leadership: becoming leader (or not), the
 * periodic resync and usage flush, the services a fenced write left
 * undone.  However long these take, the Lease thread renews on time and
 * the fence stops their writes once the deadline passes. */
static void *work_main(void *arg)
{
	struct op_k8s_run *r = arg;

	pthread_mutex_lock(&r->wlock);
	while (!r->stopping) {
		bool lead = r->work_leader, resync = r->work_resync, round = r->work_round;

		if (!lead && !resync && !round) {
			pthread_cond_wait(&r->wcond, &r->wlock);
			continue;
		}
		r->work_leader = r->work_resync = r->work_round = false;
		pthread_mutex_unlock(&r->wlock);
		pthread_mutex_lock(&r->lock);
		if (lead)
			(void)op_k8s_set_leader(r->k, atomic_load(&r->leading));
		if (resync && !atomic_load(&r->stopping)) {
			(void)op_k8s_resync(r->k);
			(void)op_k8s_usage_flush(r->k);
		}
		if (!lead && !resync && !atomic_load(&r->stopping))
			(void)op_k8s_reconcile_pending(r->k);
		pthread_mutex_unlock(&r->lock);
		pthread_mutex_lock(&r->wlock);
	}
	pthread_mutex_unlock(&r->wlock);
	return NULL;
}

/* ------------------------------------------------------------ the provider API's services */

/* While the Lease this process renewed is valid. */
static bool run_leads(struct op_k8s_run *r)
{
	return atomic_load(&r->leading) && mono_us() < atomic_load(&r->leader_until);
}

static void *publish_main(void *arg)
{
	struct op_k8s_run *r = arg;
	unsigned int resync = r->o.resync_s ? r->o.resync_s : 300;

	pthread_mutex_lock(&r->plock);
	while (!r->stopping) {
		struct timespec ts;

		if (r->pub_kicked && run_leads(r)) {
			struct op_service **list = NULL;
			size_t n = 0;
			bool again = false;

			r->pub_kicked = false;
			pthread_mutex_unlock(&r->plock);
			if (r->services(r->services_ctx, &list, &n) >= 0) {
				(void)op_k8s_publish(r->pub, list, n); /* errors logged; the next kick or resync retries */
				op_service_list_free(list, n);
			} else
				again = true;
			pthread_mutex_lock(&r->plock);
			op_k8s_publisher_stats(r->pub, &r->pub_stats);
			if (again)
				r->pub_kicked = true;
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += resync;
		if (pthread_cond_timedwait(&r->pcond, &r->plock, &ts) == ETIMEDOUT)
			r->pub_kicked = true;
	}
	pthread_mutex_unlock(&r->plock);
	return NULL;
}

int op_k8s_run_publish(struct op_k8s_run *r, int (*services)(void *ctx, struct op_service ***ret, size_t *ret_n),
		       void *ctx)
{
	int e;

	if (!r || !services)
		return -EINVAL;
	if (r->pub_started)
		return -EALREADY;
	if ((e = new_client(r, &r->pub_c)) < 0 ||
	    (e = op_k8s_publisher_new(r->pub_c, r->o.schemas ? r->o.schemas : r->own_schemas, r->o.log,
				      r->o.log_userdata, &r->pub)) < 0)
		return e;
	r->services = services;
	r->services_ctx = ctx;
	pthread_mutex_lock(&r->plock);
	r->pub_kicked = true;
	pthread_mutex_unlock(&r->plock);
	if ((e = -pthread_create(&r->pub_th, NULL, publish_main, r)) < 0)
		return e;
	r->pub_started = true;
	return 0;
}

/* Never waits for r->lock: the provider API calls it while a resync may
 * hold that for long. */
void op_k8s_run_kick(void *run)
{
	struct op_k8s_run *r = run;

	if (!r)
		return;
	pthread_mutex_lock(&r->plock);
	r->pub_kicked = true;
	pthread_cond_broadcast(&r->pcond);
	pthread_mutex_unlock(&r->plock);
}

void op_k8s_run_publish_stats(struct op_k8s_run *r, struct op_k8s_publish_stats *ret)
{
	if (!r || !ret)
		return;
	pthread_mutex_lock(&r->plock);
	*ret = r->pub_stats;
	pthread_mutex_unlock(&r->plock);
}

/* ------------------------------------------------------------ start, stop */

int op_k8s_run_start(const struct op_k8s_run_opts *opts, struct op_k8s_run **ret)
{
	struct op_k8s_run *r;
	struct op_k8s_opts ko = { .sz = sizeof(ko) };
	int e;

	if (!opts || !ret)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->o = *opts;
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->wlock, NULL);
	pthread_mutex_init(&r->plock, NULL);
	pthread_mutex_init(&r->slock, NULL);
	pthread_cond_init(&r->wcond, NULL);
	pthread_cond_init(&r->lcond, NULL);
	pthread_cond_init(&r->pcond, NULL);
	if (!opts->config && opts->config_file) {
		char *text = NULL, msg[512];
		size_t len;

		e = util_read_file(opts->config_file, 1u << 20, &text, &len);
		if (e >= 0)
			e = flash_operator_config_parse(text, len, &r->own_config, NULL);
		free(text);
		if (e < 0) {
			snprintf(msg, sizeof(msg), "%s: %s", opts->config_file, flash_strerror(e));
			run_log(r, K8S_LOG_ERR, msg);
			goto fail;
		}
	} else if (!opts->config && (e = flash_operator_config_default(&r->own_config)) < 0)
		goto fail;
	if (!opts->k8s_config) {
		const char *kc = opts->kubeconfig ? opts->kubeconfig : getenv("KUBECONFIG");
		struct diag *d = NULL;

		if ((e = diag_new(&d)) < 0)
			goto fail;

		e = kc ? k8s_config_from_kubeconfig(kc, opts->context, &r->cfg, d)
		       : k8s_config_in_cluster(NULL, &r->cfg, d);
		if (e < 0 && d && diag_count(d))
			run_log(r, K8S_LOG_ERR, diag_get(d, 0)->message);
		diag_free(d);
		if (e < 0)
			goto fail;
	}
	if ((e = new_client(r, &r->writer)) < 0 || (e = new_client(r, &r->lease_c)) < 0)
		goto fail;
	if (opts->identity)
		snprintf(r->identity, sizeof(r->identity), "%s", opts->identity);
	else {
		char host[128] = "flash-operator";

		(void)gethostname(host, sizeof(host) - 1);
		snprintf(r->identity, sizeof(r->identity), "%s_%ld", host, (long)getpid());
	}
	e = op_lease_elector_init(&r->el, r->identity, opts->lease_duration_s ? (int32_t)opts->lease_duration_s : 15,
				  opts->renew_deadline_s ? (int32_t)opts->renew_deadline_s : 10);
	if (e < 0)
		goto fail;
	if (!opts->schemas && (e = fetch_schemas(r, &r->own_schemas)) < 0)
		goto fail;
	ko.config = opts->config ? opts->config : r->own_config;
	ko.schemas = opts->schemas ? opts->schemas : r->own_schemas;
	ko.log = opts->log;
	ko.log_userdata = opts->log_userdata;
	/* Usage records live beside the Lease, in the operator's namespace. */
	ko.usage_namespace = opts->lease_namespace ? opts->lease_namespace : k8s_client_namespace(r->writer);
	if ((e = op_k8s_new(r->writer, &ko, &r->k)) < 0)
		goto fail;
	op_k8s_set_leader_until(r->k, 0); /* no write before the first renewal */
	if ((e = op_k8s_crds_apply(r->k, 60000)) < 0)
		goto fail;
	for (int i = 0; i < W_N_; i++) {
		r->w[i].run = r;
		r->w[i].kind = (enum watch_kind)i;
		if ((e = new_client(r, &r->w[i].c)) < 0)
			goto fail;
	}
	for (int i = 0; i < W_N_; i++) {
		if ((e = -pthread_create(&r->w[i].th, NULL, watch_main, &r->w[i])) < 0)
			goto fail;
		r->w[i].started = true;
	}
	if ((e = -pthread_create(&r->work_th, NULL, work_main, r)) < 0)
		goto fail;
	r->work_started = true;
	if ((e = -pthread_create(&r->lease_th, NULL, lease_main, r)) < 0)
		goto fail;
	r->lease_started = true;
	*ret = r;
	return 0;
fail:
	op_k8s_run_stop(r);
	return e;
}

const struct flash_schema_set *op_k8s_run_schemas(struct op_k8s_run *r)
{
	return !r ? NULL : r->o.schemas ? r->o.schemas : r->own_schemas;
}

void op_k8s_run_stop(struct op_k8s_run *r)
{
	if (!r)
		return;
	atomic_store(&r->stopping, true);
	if (r->k)
		op_k8s_cancel(r->k); /* the resync and usage flush loops stop */
	pthread_mutex_lock(&r->wlock);
	pthread_cond_broadcast(&r->wcond);
	pthread_cond_broadcast(&r->lcond);
	pthread_mutex_unlock(&r->wlock);
	pthread_mutex_lock(&r->plock);
	pthread_cond_broadcast(&r->pcond);
	pthread_mutex_unlock(&r->plock);
	for (int i = 0; i < W_N_; i++)
		if (r->w[i].c)
			k8s_client_cancel(r->w[i].c);
	if (r->lease_c)
		k8s_client_cancel(r->lease_c);
	if (r->pub_c)
		k8s_client_cancel(r->pub_c);
	if (r->writer)
		k8s_client_cancel(r->writer);
	for (int i = 0; i < W_N_; i++)
		if (r->w[i].started)
			pthread_join(r->w[i].th, NULL);
	if (r->lease_started)
		pthread_join(r->lease_th, NULL);
	if (r->work_started)
		pthread_join(r->work_th, NULL);
	if (r->pub_started)
		pthread_join(r->pub_th, NULL);
	op_k8s_publisher_free(r->pub);
	k8s_client_free(r->pub_c);
	for (int i = 0; i < W_N_; i++)
		k8s_client_free(r->w[i].c);
	op_k8s_free(r->k);
	k8s_client_free(r->writer);
	k8s_client_free(r->lease_c);
	flash_schema_set_free(r->own_schemas);
	k8s_config_free(r->cfg);
	flash_operator_config_free(r->own_config);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->wlock);
	pthread_mutex_destroy(&r->plock);
	pthread_mutex_destroy(&r->slock);
	for (size_t i = 0; i < STATUS_BUCKETS; i++)
		for (struct fs_seen *f = r->sb[i], *n; f; f = n) {
			n = f->next;
			fs_seen_free(f);
		}
	pthread_cond_destroy(&r->wcond);
	pthread_cond_destroy(&r->lcond);
	pthread_cond_destroy(&r->pcond);
	free(r);
}

bool op_k8s_run_is_leader(struct op_k8s_run *r)
{
	return r && run_leads(r);
}

void op_k8s_run_stats(struct op_k8s_run *r, struct op_k8s_stats *ret)
{
	if (!r || !ret)
		return;
	pthread_mutex_lock(&r->lock);
	op_k8s_get_stats(r->k, ret);
	pthread_mutex_unlock(&r->lock);
}
