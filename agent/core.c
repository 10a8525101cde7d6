/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent core: endpoints (IPAM + veth + datapath), their persisted
 * state, restore and adoption after a restart, the delete queue.  See
 * core.h for the locking and the order of operations. */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <flowsdn/cni.h>
#include <flowsdn/datapath.h>
#include <flowsdn/ipam.h>
#include <flowsdn/netlink.h>

#include "conntrack.h"
#include "diag.h"
#include "core.h"
#include "uplink.h"
#include "json.h"
#include "log.h"
#include "policy.h"
#include "names.h"
#include "replay.h"
#include "util.h"

#define MAX_STATE (16u << 20)
#define STATE_VERSION 2

/* Agent-side latency of one verb: the last TIMING_SAMPLES durations. */
#define TIMING_SAMPLES 1024
struct timing {
	uint64_t count, errors;
	size_t n, pos;
	double ms[TIMING_SAMPLES];
};

/* An endpoint of the table.  Not ready while its ADD runs (its id and
 * addresses are taken, nothing reports it). */
struct ep {
	struct agent_api_endpoint e;
	bool ready;
	int64_t added_ms; /* CLOCK_MONOTONIC when it became ready (0: restored) */
};

/* An owner whose operation runs. */
struct busy {
	char container_id[256];
	char ifname[16];
};

struct agent_core {
	struct agent_config *cfg;
	const struct agent_ops *ops;
	void *ctx;
	/* Guards everything below; never held across a kernel call or I/O. */
	pthread_mutex_t lock;
	pthread_cond_t owner_cond;  /* an owner's slot was released */
	pthread_cond_t state_cond;  /* a state write ended */
	pthread_cond_t del_cond;    /* a deletion was queued or ended */
	struct flowsdn_ipam *ipam;  /* in memory: the state file holds the addresses */
	struct flowsdn_datapath *dp; /* NULL with "datapath": false */
	struct agent_ct *ct_gc;     /* conntrack collector (with dp, when the ops have one) */
	struct agent_policy *pol;   /* policies, namespaces, endpoint identities (own lock) */
	struct ep **eps;
	size_t n_eps, cap_eps;
	struct agent_api_endpoint **dels; /* unpublished, veth being removed (FIFO) */
	size_t n_dels, cap_dels;
	struct busy *busy;
	size_t n_busy, cap_busy;
	uint64_t gen, saved_gen;    /* state changes made / on disk */
	bool writing, stopping;
	int save_err;               /* of the last state write (0: it worked) */
	pthread_t deleter;
	bool deleter_started;
	char *state_path, *queue_dir;
	unsigned int restored, replayed, refused;
	time_t started;
	uint64_t own_netns[2];      /* the agent's and the initial netns inodes (0: unknown) */
	struct timing timing[AGENT_VERB_MAX_];
	unsigned int uplinks;       /* uplinks with the uplink program */
	struct agent_services *services; /* agent/services.c */
	/* Kubernetes mode: GET /v1/node/routes (agent/k8s.h), under lock */
	int (*node_routes)(void *userdata, char **ret_json);
	void *node_routes_userdata;
};

static void timespec_at(int64_t ms, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ms / 1000);
	ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

static bool past(int64_t deadline_ms)
{
	return deadline_ms && util_mono_ms() >= deadline_ms;
}

static void timing_add(struct timing *t, double ms, bool ok)
{
	t->count++;
	if (!ok)
		t->errors++;
	t->ms[t->pos] = ms;
	t->pos = (t->pos + 1) % TIMING_SAMPLES;
	if (t->n < TIMING_SAMPLES)
		t->n++;
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void endpoint_to_iface(const struct agent_api_endpoint *e, struct flowsdn_endpoint_iface *f)
{
	memset(f, 0, sizeof(*f));
	f->sz = sizeof(*f);
	f->host_ifindex = e->host_ifindex;
	f->host_ifname = e->host_ifname;
	memcpy(f->host_mac, e->host_mac, 6);
	f->netns_path = e->netns;
	f->netns_ino = e->netns_ino;
	f->ifname = e->ifname;
	memcpy(f->mac, e->mac, 6);
	f->addrs = e->addrs;
	f->n_addrs = e->n_addrs;
	f->gateways = e->gateway;
}

static void endpoint_to_dp(const struct agent_api_endpoint *e, struct flowsdn_endpoint *d)
{
	memset(d, 0, sizeof(*d));
	d->id = e->id;
	d->identity = FLOWSDN_IDENTITY_INIT;
	d->host_ifindex = e->host_ifindex;
	if (e->svc_translation == FLOWSDN_CNI_SVC_PACKET)
		d->flags |= FLOWSDN_EP_F_SVC_PACKET;
	memcpy(d->mac, e->mac, 6);
	memcpy(d->host_mac, e->host_mac, 6);
	d->n_addrs = e->n_addrs;
	for (size_t i = 0; i < e->n_addrs; i++)
		d->addrs[i] = e->addrs[i];
}

static int copy_str(char *dst, size_t size, const char *src)
{
	if (!src || strlen(src) >= size)
		return -1;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/* ------------------------------------------------------------ owners */

static ssize_t busy_find(struct agent_core *a, const char *cid, const char *ifn)
{
	for (size_t i = 0; i < a->n_busy; i++)
		if (!strcmp(a->busy[i].container_id, cid) && !strcmp(a->busy[i].ifname, ifn))
			return (ssize_t)i;
	return -1;
}

/* Takes the owner's slot (lock held; waits on it): 0, or
 * -FLOWSDN_E_AGENT_DEADLINE when @deadline_ms passes first. */
static int owner_acquire_locked(struct agent_core *a, const char *cid, const char *ifn, int64_t deadline_ms)
{
	while (busy_find(a, cid, ifn) >= 0) {
		if (deadline_ms) {
			struct timespec ts;

			timespec_at(deadline_ms, &ts);
			if (pthread_cond_timedwait(&a->owner_cond, &a->lock, &ts) == ETIMEDOUT &&
			    busy_find(a, cid, ifn) >= 0)
				return -FLOWSDN_E_AGENT_DEADLINE;
		} else {
			pthread_cond_wait(&a->owner_cond, &a->lock);
		}
	}
	if (past(deadline_ms))
		return -FLOWSDN_E_AGENT_DEADLINE;
	if (a->n_busy == a->cap_busy) {
		size_t cap = a->cap_busy ? a->cap_busy * 2 : 16;
		struct busy *p = realloc(a->busy, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->busy = p;
		a->cap_busy = cap;
	}
	if (copy_str(a->busy[a->n_busy].container_id, sizeof(a->busy[0].container_id), cid) < 0 ||
	    copy_str(a->busy[a->n_busy].ifname, sizeof(a->busy[0].ifname), ifn) < 0)
		return -EINVAL;
	a->n_busy++;
	return 0;
}

static int owner_acquire(struct agent_core *a, const char *cid, const char *ifn, int64_t deadline_ms)
{
	int err;

	pthread_mutex_lock(&a->lock);
	err = owner_acquire_locked(a, cid, ifn, deadline_ms);
	pthread_mutex_unlock(&a->lock);
	return err;
}

static void owner_release_locked(struct agent_core *a, const char *cid, const char *ifn)
{
	ssize_t i = busy_find(a, cid, ifn);

	if (i >= 0) {
		a->busy[i] = a->busy[--a->n_busy];
		pthread_cond_broadcast(&a->owner_cond);
	}
}

static void owner_release(struct agent_core *a, const char *cid, const char *ifn)
{
	pthread_mutex_lock(&a->lock);
	owner_release_locked(a, cid, ifn);
	pthread_mutex_unlock(&a->lock);
}

/* ------------------------------------------------------------- tables */

static ssize_t ep_find(struct agent_core *a, const char *container_id, const char *ifname)
{
	for (size_t i = 0; i < a->n_eps; i++)
		if (!strcmp(a->eps[i]->e.container_id, container_id) && !strcmp(a->eps[i]->e.ifname, ifname))
			return (ssize_t)i;
	return -1;
}

static int ep_append(struct agent_core *a, struct ep *e)
{
	if (a->n_eps == a->cap_eps) {
		size_t cap = a->cap_eps ? a->cap_eps * 2 : 16;
		struct ep **p = realloc(a->eps, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->eps = p;
		a->cap_eps = cap;
	}
	a->eps[a->n_eps++] = e;
	return 0;
}

/* Takes @e out of the table (not freed). */
static void ep_unlink(struct agent_core *a, const struct ep *e)
{
	for (size_t i = 0; i < a->n_eps; i++) {
		if (a->eps[i] == e) {
			memmove(&a->eps[i], &a->eps[i + 1], (a->n_eps - i - 1) * sizeof(a->eps[0]));
			a->n_eps--;
			return;
		}
	}
}

static int del_append(struct agent_core *a, struct agent_api_endpoint *e)
{
	if (a->n_dels == a->cap_dels) {
		size_t cap = a->cap_dels ? a->cap_dels * 2 : 16;
		struct agent_api_endpoint **p = realloc(a->dels, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->dels = p;
		a->cap_dels = cap;
	}
	a->dels[a->n_dels++] = e;
	return 0;
}

static uint32_t next_id(struct agent_core *a)
{
	for (uint32_t id = 1;; id++) {
		bool used = false;

		for (size_t i = 0; i < a->n_eps && !used; i++)
			used = a->eps[i]->e.id == id;
		if (!used)
			return id;
	}
}

/* -------------------------------------------------------------- state */

/* The state file: every endpoint, and the deletions still running (their
 * addresses are still held; a restarted agent finishes them). */
static char *state_json_locked(struct agent_core *a)
{
	char *json = NULL;
	struct json_writer *g = json_writer_new(0);

	if (!g)
		return NULL;
	jw_object_open(g);
	jw_kv_int(g, "version", STATE_VERSION);
	jw_string(g, "endpoints");
	jw_array_open(g);
	for (size_t i = 0; i < a->n_eps; i++)
		if (a->eps[i]->ready)
			agent_api_endpoint_gen(g, &a->eps[i]->e);
	jw_array_close(g);
	jw_string(g, "deleting");
	jw_array_open(g);
	for (size_t i = 0; i < a->n_dels; i++)
		agent_api_endpoint_gen(g, a->dels[i]);
	jw_array_close(g);
	jw_object_close(g);
	if (json_writer_finish(g, &json, NULL) < 0)
		json = NULL;
	return json;
}

/* Group commit: returns once every change made before the call is on
 * disk (one fsync'd write covers all the changes made until it starts). */
static int state_sync(struct agent_core *a)
{
	uint64_t want;
	int err = 0;

	pthread_mutex_lock(&a->lock);
	want = a->gen;
	while (a->saved_gen < want) {
		uint64_t gen;
		char *json;

		if (a->writing) {
			pthread_cond_wait(&a->state_cond, &a->lock);
			continue;
		}
		a->writing = true;
		gen = a->gen;
		json = state_json_locked(a);
		pthread_mutex_unlock(&a->lock);
		err = json ? util_write_file_atomic(a->state_path, json, strlen(json), 0600) : -ENOMEM;
		free(json);
		pthread_mutex_lock(&a->lock);
		a->writing = false;
		a->save_err = err;
		if (err == 0 && gen > a->saved_gen)
			a->saved_gen = gen;
		pthread_cond_broadcast(&a->state_cond);
		if (err < 0) {
			pr_err("agent: saving %s: %s", a->state_path, strerror(-err));
			break;
		}
	}
	pthread_mutex_unlock(&a->lock);
	return err;
}

/* ---------------------------------------------------------- deletion */

/* Unpublishes an endpoint from the datapath (no lock held). */
static void endpoint_unpublish(struct agent_core *a, const struct agent_api_endpoint *e)
{
	struct flowsdn_endpoint d;
	int err;

	agent_policy_endpoint_remove(a->pol, e->id);
	if (!a->dp)
		return;
	endpoint_to_dp(e, &d);
	err = a->ops->dp_remove(a->ctx, a->dp, &d);
	if (err < 0)
		pr_warn("agent: endpoint %u: removing map entries: %s", e->id, flowsdn_strerror(err));
}

/* What a libflowsdn call (netlink, IPAM) says failed, for the endpoint
 * messages: a diag per call (NULL when out of memory: then only the code
 * is told). */
static struct flowsdn_diag *call_diag(void)
{
	struct flowsdn_diag *d = NULL;

	return flowsdn_diag_new(&d) == 0 ? d : NULL;
}

static void call_diag_freep(struct flowsdn_diag **d)
{
	flowsdn_diag_free(*d);
}

static const char *call_message(const struct flowsdn_diag *d, int err)
{
	const struct flowsdn_diag_entry *e = flowsdn_diag_first_error(d);

	return e ? e->message : flowsdn_strerror(err);
}

/* Removes an unpublished endpoint's hooks and veth pair (no lock held). */
static void endpoint_teardown(struct agent_core *a, const struct agent_api_endpoint *e)
{
	_cleanup_(call_diag_freep) struct flowsdn_diag *nerr = call_diag();
	int err;

	if (a->dp) {
		err = a->ops->dp_detach(a->ctx, a->dp, e->host_ifindex);
		if (err < 0)
			pr_warn("agent: endpoint %u: detach: %s", e->id, flowsdn_strerror(err));
	}
	err = a->ops->veth_teardown(a->ctx, e->host_ifname, e->addrs, e->n_addrs, nerr);
	if (err < 0)
		pr_warn("agent: endpoint %u: teardown: %s", e->id, call_message(nerr, err));
}

/* The background deleter: removes each queued endpoint's veth, then
 * releases its addresses and its owner's slot. */
static void *deleter_main(void *arg)
{
	struct agent_core *a = arg;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct agent_api_endpoint *e;
		double t0;

		while (!a->n_dels && !a->stopping)
			pthread_cond_wait(&a->del_cond, &a->lock);
		if (!a->n_dels)
			break;
		e = a->dels[0];
		pthread_mutex_unlock(&a->lock);
		t0 = mono_ms();
		endpoint_teardown(a, e);
		pr_debug("agent: DEL %s/%s: veth removed in %.2f ms", e->container_id, e->ifname, mono_ms() - t0);
		pthread_mutex_lock(&a->lock);
		(void)flowsdn_ipam_release(a->ipam, e->container_id, e->ifname, NULL);
		memmove(&a->dels[0], &a->dels[1], (a->n_dels - 1) * sizeof(a->dels[0]));
		a->n_dels--;
		a->gen++;
		owner_release_locked(a, e->container_id, e->ifname);
		pthread_cond_broadcast(&a->del_cond);
		free(e);
		/* Saved lazily: a deletion a restart finds again is redone. */
		if (!a->n_dels) {
			pthread_mutex_unlock(&a->lock);
			(void)state_sync(a);
			pthread_mutex_lock(&a->lock);
		}
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

void agent_core_flush(struct agent_core *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	while (a->n_dels)
		pthread_cond_wait(&a->del_cond, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

/* Removes a queued DEL entry of the owner (superseded by what runs now);
 * true when there was one. */
static bool queue_entry_take(struct agent_core *a, const char *cid, const char *ifn)
{
	_cleanup_free_ char *name = agent_api_queue_entry_name(cid, ifn), *path = NULL;

	if (!name || asprintf(&path, "%s/%s", a->queue_dir, name) < 0) {
		path = NULL;
		return false;
	}
	return unlink(path) == 0;
}

/* DEL with the owner's slot held.  @async: the veth goes in the
 * background and the slot is released there (else here, synchronously,
 * and the caller keeps the slot).  1 removed, 0 nothing, -errno. */
static int del_owned(struct agent_core *a, const char *cid, const char *ifn, bool async, bool *ret_slot_passed)
{
	struct agent_api_endpoint *e;
	ssize_t i;
	int err;

	*ret_slot_passed = false;
	pthread_mutex_lock(&a->lock);
	i = ep_find(a, cid, ifn);
	if (i < 0) {
		/* Nothing recorded: still release addresses and a leftover
		 * host interface of that owner. */
		(void)flowsdn_ipam_release(a->ipam, cid, ifn, NULL);
		pthread_mutex_unlock(&a->lock);
		{
			_cleanup_(call_diag_freep) struct flowsdn_diag *nerr = call_diag();
			char host[16];

			if (agent_api_host_ifname(cid, ifn, host, sizeof(host)) == 0)
				(void)a->ops->veth_teardown(a->ctx, host, NULL, 0, nerr);
		}
		return 0;
	}
	e = malloc(sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&a->lock);
		return -ENOMEM;
	}
	*e = a->eps[i]->e;
	pthread_mutex_unlock(&a->lock);

	endpoint_unpublish(a, e);
	pthread_mutex_lock(&a->lock);
	i = ep_find(a, cid, ifn);
	if (i >= 0) {
		struct ep *old = a->eps[i];

		ep_unlink(a, old);
		free(old);
	}
	a->gen++;
	if (async) {
		err = del_append(a, e);
		if (err == 0) {
			*ret_slot_passed = true;
			pthread_cond_broadcast(&a->del_cond);
			e = NULL;
		}
	}
	pthread_mutex_unlock(&a->lock);
	if (e) {
		endpoint_teardown(a, e);
		pthread_mutex_lock(&a->lock);
		(void)flowsdn_ipam_release(a->ipam, cid, ifn, NULL);
		a->gen++;
		pthread_mutex_unlock(&a->lock);
		free(e);
	}
	/* One fsync'd write: the endpoint is "deleting" (or gone). */
	err = state_sync(a);
	return err < 0 ? err : 1;
}

int agent_core_del(struct agent_core *a, const char *cid, const char *ifn, int64_t deadline_ms,
		   struct diag *diag)
{
	double t0 = mono_ms();
	bool passed = false;
	int err;

	if (!a || !names_container_id_valid(cid) || !names_ifname_valid(ifn))
		return -EINVAL;
	err = owner_acquire(a, cid, ifn, deadline_ms);
	if (err == 0) {
		(void)queue_entry_take(a, cid, ifn);
		err = del_owned(a, cid, ifn, true, &passed);
		if (!passed)
			owner_release(a, cid, ifn);
	}
	pthread_mutex_lock(&a->lock);
	timing_add(&a->timing[AGENT_VERB_DEL], mono_ms() - t0, err >= 0);
	pthread_mutex_unlock(&a->lock);
	if (err < 0)
		agent_diag_set(diag, "deleting %s/%s: %s", cid, ifn, agent_api_strerror(err));
	return err;
}

/* --------------------------------------------------------------- ADD */

/* Refuses the agent's own and the initial network namespace. */
static int netns_refuse_own(struct agent_core *a, uint64_t ino, const char *netns, struct diag *diag)
{
	for (size_t k = 0; k < 2; k++) {
		if (a->own_netns[k] && a->own_netns[k] == ino) {
			agent_diag_set(diag, "netns %s is the %s network namespace, not a container's", netns,
				       k == 0 ? "agent's own" : "initial");
			return -FLOWSDN_E_AGENT_HOST_NETNS;
		}
	}
	return 0;
}

static int add_owned(struct agent_core *a, const struct agent_request *rq, struct agent_api_endpoint *ret,
		     struct diag *diag)
{
	struct flowsdn_ipam_result lease;
	struct flowsdn_prefix prefixes[AGENT_API_MAX_ADDRS];
	_cleanup_(call_diag_freep) struct flowsdn_diag *nerr = call_diag();
	struct flowsdn_veth veth;
	struct ep *ep = NULL;
	struct agent_api_endpoint *e;
	uint64_t ino = 0;
	double t[5];
	ssize_t i;
	int err;

	t[0] = mono_ms();
	/* A DEL the plugin queued for this owner came before this ADD. */
	if (queue_entry_take(a, rq->container_id, rq->ifname)) {
		bool passed;

		pr_info("agent: ADD %s/%s: applying its queued DEL first", rq->container_id, rq->ifname);
		err = del_owned(a, rq->container_id, rq->ifname, false, &passed);
		if (err < 0)
			return err;
	}
	pthread_mutex_lock(&a->lock);
	i = ep_find(a, rq->container_id, rq->ifname);
	if (i >= 0) {
		/* CNI: a second ADD without DEL is an error, also (above all)
		 * for another netns. */
		if (strcmp(a->eps[i]->e.netns, rq->netns) != 0)
			agent_diag_set(diag, "%s/%s already has endpoint %u in netns %s", rq->container_id, rq->ifname,
				       a->eps[i]->e.id, a->eps[i]->e.netns);
		else
			agent_diag_set(diag, "%s/%s already has endpoint %u; DEL it first", rq->container_id,
				       rq->ifname, a->eps[i]->e.id);
		pthread_mutex_unlock(&a->lock);
		return -FLOWSDN_E_AGENT_EXISTS;
	}
	pthread_mutex_unlock(&a->lock);
	err = a->ops->netns_ino(a->ctx, rq->netns, &ino);
	if (err < 0) {
		agent_diag_set(diag, "netns %s: %s", rq->netns, flowsdn_strerror(err));
		return -FLOWSDN_E_NL_NETNS;
	}
	err = netns_refuse_own(a, ino, rq->netns, diag);
	if (err < 0)
		return err;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	e = &ep->e;
	if (copy_str(e->container_id, sizeof(e->container_id), rq->container_id) < 0 ||
	    copy_str(e->ifname, sizeof(e->ifname), rq->ifname) < 0 || copy_str(e->netns, sizeof(e->netns), rq->netns) < 0) {
		agent_diag_set(diag, "containerID, ifname or netns too long");
		free(ep);
		return -EINVAL;
	}
	pthread_mutex_lock(&a->lock);
	err = flowsdn_ipam_allocate(a->ipam, rq->container_id, rq->ifname, NULL, &lease, nerr);
	if (err < 0) {
		agent_diag_set(diag, "allocating addresses: %s", call_message(nerr, err));
		pthread_mutex_unlock(&a->lock);
		free(ep);
		return err;
	}
	e->id = next_id(a);
	err = ep_append(a, ep);
	if (err < 0) {
		(void)flowsdn_ipam_release(a->ipam, rq->container_id, rq->ifname, NULL);
		pthread_mutex_unlock(&a->lock);
		free(ep);
		return err;
	}
	pthread_mutex_unlock(&a->lock);
	t[1] = mono_ms();
	agent_api_host_ifname(rq->container_id, rq->ifname, e->host_ifname, sizeof(e->host_ifname));
	e->mtu = rq->mtu ? rq->mtu : a->cfg->mtu;
	e->svc_translation = rq->svc_translation;
	e->n_addrs = lease.n;
	for (unsigned int k = 0; k < lease.n; k++) {
		e->addrs[k] = lease.leases[k].addr;
		e->prefix_len[k] = flowsdn_addr_bits(&e->addrs[k]);
		(void)agent_api_gateway(e->addrs[k].family, &e->gateway[k]);
		flowsdn_prefix_make(&e->addrs[k], e->prefix_len[k], &prefixes[k]);
	}
	{
		FLOWSDN_OPTS(flowsdn_veth_config, vc, .netns_path = rq->netns, .host_ifname = e->host_ifname,
			     .ifname = rq->ifname, .mtu = e->mtu, .addrs = prefixes, .n_addrs = lease.n,
			     /* Both modes: the node and traffic entering it reach
			      * the endpoint through its host routes. */
			     .host_routes = true,
			     /* Stack mode: a reverse-translated NodePort reply
			      * from it has the node's address as source. */
			     .host_accept_local = a->cfg->egress_stack);

		err = a->ops->veth_setup(a->ctx, &vc, &veth, nerr);
	}
	if (err < 0) {
		agent_diag_set(diag, "%s", call_message(nerr, err));
		goto out_release;
	}
	t[2] = mono_ms();
	e->host_ifindex = veth.host_ifindex;
	memcpy(e->host_mac, veth.host_mac, 6);
	memcpy(e->mac, veth.mac, 6);
	e->netns_ino = veth.netns_ino;
	e->created = time(NULL);
	if (a->dp) {
		struct flowsdn_endpoint d;

		err = a->ops->dp_attach(a->ctx, a->dp, e->host_ifindex);
		if (err < 0) {
			agent_diag_set(diag, "attaching the datapath to %s: %s", e->host_ifname, flowsdn_strerror(err));
			goto out_teardown;
		}
		endpoint_to_dp(e, &d);
		err = a->ops->dp_publish(a->ctx, a->dp, &d);
		if (err < 0) {
			agent_diag_set(diag, "publishing endpoint %u: %s", e->id, flowsdn_strerror(err));
			goto out_detach;
		}
	}
	t[3] = mono_ms();
	pthread_mutex_lock(&a->lock);
	ep->ready = true;
	ep->added_ms = util_mono_ms();
	a->gen++;
	pthread_mutex_unlock(&a->lock);
	err = state_sync(a);
	t[4] = mono_ms();
	if (err < 0) {
		agent_diag_set(diag, "saving state: %s", strerror(-err));
		pthread_mutex_lock(&a->lock);
		ep->ready = false;
		pthread_mutex_unlock(&a->lock);
		endpoint_unpublish(a, e);
		goto out_detach;
	}
	pr_debug("agent: ADD %s/%s: ipam %.2f ms, veth %.2f ms, datapath %.2f ms, state %.2f ms", rq->container_id,
		 rq->ifname, t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3]);
	*ret = *e;
	return 0;

out_detach:
	if (a->dp)
		(void)a->ops->dp_detach(a->ctx, a->dp, e->host_ifindex);
out_teardown:
	(void)a->ops->veth_teardown(a->ctx, e->host_ifname, e->addrs, e->n_addrs, NULL);
out_release:
	pthread_mutex_lock(&a->lock);
	ep_unlink(a, ep);
	(void)flowsdn_ipam_release(a->ipam, rq->container_id, rq->ifname, NULL);
	pthread_mutex_unlock(&a->lock);
	free(ep);
	return err;
}

static bool request_valid(const struct agent_request *rq, struct diag *diag)
{
	if (!rq || !names_container_id_valid(rq->container_id) || !names_ifname_valid(rq->ifname) || !rq->netns ||
	    rq->netns[0] != '/') {
		agent_diag_set(diag, "containerID, ifname or netns invalid");
		return false;
	}
	return true;
}

static int deadline_err(struct diag *diag, const char *verb, const struct agent_request *rq)
{
	agent_diag_set(diag, "%s %s/%s: the client's deadline passed before it could start", verb, rq->container_id,
		       rq->ifname);
	return -FLOWSDN_E_AGENT_DEADLINE;
}

int agent_core_add(struct agent_core *a, const struct agent_request *rq, struct agent_api_endpoint *ret,
		   struct diag *diag)
{
	double t0 = mono_ms();
	int err;

	if (!a || !ret || !request_valid(rq, diag))
		return -EINVAL;
	err = owner_acquire(a, rq->container_id, rq->ifname, rq->deadline_ms);
	if (err == -FLOWSDN_E_AGENT_DEADLINE)
		err = deadline_err(diag, "ADD", rq);
	if (err == 0) {
		err = add_owned(a, rq, ret, diag);
		owner_release(a, rq->container_id, rq->ifname);
	}
	pthread_mutex_lock(&a->lock);
	timing_add(&a->timing[AGENT_VERB_ADD], mono_ms() - t0, err == 0);
	pthread_mutex_unlock(&a->lock);
	return err;
}

int agent_core_check(struct agent_core *a, const struct agent_request *rq, struct agent_api_endpoint *ret,
		     struct diag *diag)
{
	struct agent_api_endpoint e;
	struct flowsdn_endpoint_iface f;
	_cleanup_(call_diag_freep) struct flowsdn_diag *nerr = call_diag();
	bool found;
	ssize_t i;
	int err = 0;

	if (!a || !ret || !request_valid(rq, diag))
		return -EINVAL;
	if (past(rq->deadline_ms))
		return deadline_err(diag, "CHECK", rq);
	pthread_mutex_lock(&a->lock);
	i = ep_find(a, rq->container_id, rq->ifname);
	found = i >= 0 && a->eps[i]->ready;
	if (found)
		e = a->eps[i]->e;
	pthread_mutex_unlock(&a->lock);
	if (!found) {
		agent_diag_set(diag, "no endpoint for %s/%s", rq->container_id, rq->ifname);
		return -FLOWSDN_E_AGENT_NOT_FOUND;
	}
	if (strcmp(e.netns, rq->netns) != 0) {
		agent_diag_set(diag, "endpoint is in netns %s, not %s", e.netns, rq->netns);
		return -FLOWSDN_E_NL_MISMATCH;
	}
	endpoint_to_iface(&e, &f);
	err = a->ops->endpoint_check(a->ctx, &f, nerr);
	if (err < 0) {
		agent_diag_set(diag, "%s", call_message(nerr, err));
		return err;
	}
	if (a->dp) {
		err = a->ops->dp_is_attached(a->ctx, a->dp, e.host_ifindex);
		if (err <= 0) {
			agent_diag_set(diag, "datapath not attached to %s", e.host_ifname);
			return err < 0 ? err : -FLOWSDN_E_BPF_ATTACH;
		}
	}
	*ret = e;
	return 0;
}

static bool owner_in(const char *const *ids, const char *const *ifnames, size_t n, const char *cid, const char *ifn)
{
	for (size_t k = 0; k < n; k++)
		if (!strcmp(ids[k], cid) && !strcmp(ifnames[k], ifn))
			return true;
	return false;
}

int agent_core_gc(struct agent_core *a, const char *const *ids, const char *const *ifnames, size_t n,
		  int64_t deadline_ms, struct diag *diag)
{
	int64_t started = util_mono_ms();
	struct busy *victims = NULL;
	size_t n_victims = 0;
	int removed = 0, err = 0;

	if (!a || (n && (!ids || !ifnames)))
		return -EINVAL;
	if (past(deadline_ms)) {
		agent_diag_set(diag, "GC: the client's deadline passed before it could start");
		return -FLOWSDN_E_AGENT_DEADLINE;
	}
	/* The endpoints to remove: invalid ones that existed when the GC
	 * started (an ADD that ends later is not the GC's to judge). */
	pthread_mutex_lock(&a->lock);
	victims = calloc(a->n_eps ? a->n_eps : 1, sizeof(*victims));
	for (size_t i = 0; victims && i < a->n_eps; i++) {
		const struct ep *ep = a->eps[i];

		if (!ep->ready || ep->added_ms > started ||
		    owner_in(ids, ifnames, n, ep->e.container_id, ep->e.ifname))
			continue;
		memcpy(victims[n_victims].container_id, ep->e.container_id, sizeof(victims[0].container_id));
		memcpy(victims[n_victims].ifname, ep->e.ifname, sizeof(victims[0].ifname));
		n_victims++;
	}
	pthread_mutex_unlock(&a->lock);
	if (!victims)
		return -ENOMEM;
	for (size_t i = 0; i < n_victims; i++) {
		bool passed = false;

		err = owner_acquire(a, victims[i].container_id, victims[i].ifname, deadline_ms);
		if (err < 0)
			break;
		err = del_owned(a, victims[i].container_id, victims[i].ifname, true, &passed);
		if (!passed)
			owner_release(a, victims[i].container_id, victims[i].ifname);
		if (err < 0)
			break;
		removed += err;
	}
	free(victims);
	if (err < 0) {
		agent_diag_set(diag, "gc: %s", agent_api_strerror(err));
		return err;
	}
	return removed;
}

static int replay_del(void *userdata, const char *cid, const char *ifn)
{
	struct agent_core *a = userdata;
	bool passed = false;
	int err;

	err = owner_acquire(a, cid, ifn, 0);
	if (err < 0)
		return err;
	err = del_owned(a, cid, ifn, true, &passed);
	if (!passed)
		owner_release(a, cid, ifn);
	return err;
}

int agent_core_replay_queue(struct agent_core *a)
{
	int r;

	if (!a)
		return -EINVAL;
	r = agent_replay_queue(a->queue_dir, replay_del, a);
	if (r > 0) {
		pthread_mutex_lock(&a->lock);
		a->replayed += (unsigned int)r;
		pthread_mutex_unlock(&a->lock);
	}
	return r;
}

/* ------------------------------------------------------------ restore */

/* Why a saved endpoint cannot be adopted: another endpoint has its id or
 * owner, or IPAM cannot give its owner its addresses (held by another
 * owner, outside every pool, reserved).  0 when none; its addresses are
 * then allocated to it. */
static int restore_claim(struct agent_core *a, const struct agent_api_endpoint *e, char *why, size_t size)
{
	FLOWSDN_OPTS(flowsdn_ipam_alloc_opts, ao, .request = e->addrs, .n_request = e->n_addrs);
	_cleanup_(call_diag_freep) struct flowsdn_diag *d = call_diag();
	int err;

	for (size_t i = 0; i < a->n_eps; i++) {
		if (a->eps[i]->e.id == e->id) {
			snprintf(why, size, "id %u is also endpoint %.64s/%s's", e->id, a->eps[i]->e.container_id,
				 a->eps[i]->e.ifname);
			return -FLOWSDN_E_AGENT_CONFLICT;
		}
		if (!strcmp(a->eps[i]->e.container_id, e->container_id) && !strcmp(a->eps[i]->e.ifname, e->ifname)) {
			snprintf(why, size, "its owner has endpoint %u already", a->eps[i]->e.id);
			/* Same owner, same host interface: not to be removed. */
			return -EEXIST;
		}
	}
	if (e->n_addrs == 0) {
		snprintf(why, size, "it has no address");
		return -FLOWSDN_E_AGENT_CONFLICT;
	}
	{
		unsigned int fam = 0;

		for (size_t k = 0; k < e->n_addrs; k++)
			fam |= e->addrs[k].family == FLOWSDN_AF_INET ? FLOWSDN_IPAM_IPV4 : FLOWSDN_IPAM_IPV6;
		ao.families = fam;
	}
	err = flowsdn_ipam_allocate(a->ipam, e->container_id, e->ifname, &ao, NULL, d);
	if (err < 0) {
		snprintf(why, size, "%.200s", call_message(d, err));
		return -FLOWSDN_E_AGENT_CONFLICT;
	}
	return 0;
}

/* Loads the state file, reconciles it with IPAM and adopts each endpoint's
 * interfaces.  An endpoint whose interfaces are gone is cleaned up; one
 * that conflicts is reported and refused (its veth removed, nothing of
 * the other owner touched); deletions a previous agent left are done. */
static int restore(struct agent_core *a)
{
	_cleanup_free_ char *data = NULL;
	struct json_value *root = NULL;
	const struct json_value *eps, *dels;
	bool changed = false;
	size_t len;
	int err;

	err = util_read_file(a->state_path, MAX_STATE, &data, &len);
	if (err == -ENOENT)
		return 0;
	if (err < 0) {
		pr_err("agent: %s: %s", a->state_path, util_read_strerror(err));
		return err;
	}
	err = json_parse(data, len, NULL, &root, NULL);
	eps = json_get(root, "endpoints");
	dels = json_get(root, "deleting");
	if (err < 0 || !json_is(eps, JSON_ARRAY) || (dels && !json_is(dels, JSON_ARRAY))) {
		pr_err("agent: %s is damaged", a->state_path);
		json_free(root);
		return -FLOWSDN_E_AGENT_STATE;
	}
	for (size_t i = 0; dels && i < dels->u.array.n; i++) {
		struct agent_api_endpoint e;

		if (agent_api_endpoint_parse(dels->u.array.items[i], &e) < 0) {
			pr_err("agent: %s: deleting[%zu] is damaged", a->state_path, i);
			json_free(root);
			return -FLOWSDN_E_AGENT_STATE;
		}
		pr_info("agent: finishing the DEL of %s/%s", e.container_id, e.ifname);
		endpoint_teardown(a, &e);
		changed = true;
	}
	for (size_t i = 0; i < eps->u.array.n; i++) {
		struct ep *ep = calloc(1, sizeof(*ep));
		struct flowsdn_endpoint_iface f;
		_cleanup_(call_diag_freep) struct flowsdn_diag *nerr = call_diag();
		char why[256];

		if (!ep) {
			err = -ENOMEM;
			break;
		}
		if (agent_api_endpoint_parse(eps->u.array.items[i], &ep->e) < 0) {
			pr_err("agent: %s: endpoint %zu is damaged", a->state_path, i);
			free(ep);
			err = -FLOWSDN_E_AGENT_STATE;
			break;
		}
		err = restore_claim(a, &ep->e, why, sizeof(why));
		if (err < 0) {
			pr_err("agent: endpoint %u (%s/%s) refused: %s%s", ep->e.id, ep->e.container_id, ep->e.ifname,
			       why, err == -EEXIST ? "" : "; removing its interface");
			/* Only its own interface: its addresses and map
			 * entries may be another endpoint's (and a duplicate
			 * of an owner shares the first one's interface). */
			if (err != -EEXIST)
				endpoint_teardown(a, &ep->e);
			free(ep);
			a->refused++;
			changed = true;
			err = 0;
			continue;
		}
		endpoint_to_iface(&ep->e, &f);
		err = a->dp ? a->ops->dp_adopt(a->ctx, a->dp, &f) : a->ops->endpoint_check(a->ctx, &f, nerr);
		if (err == -FLOWSDN_E_BPF_IFACE_MISMATCH || err == -FLOWSDN_E_NL_MISMATCH ||
		    err == -FLOWSDN_E_NL_NOT_FOUND || err == -FLOWSDN_E_NL_NETNS) {
			pr_warn("agent: endpoint %u (%s/%s) is gone: cleaning up", ep->e.id, ep->e.container_id,
				ep->e.ifname);
			endpoint_unpublish(a, &ep->e);
			endpoint_teardown(a, &ep->e);
			(void)flowsdn_ipam_release(a->ipam, ep->e.container_id, ep->e.ifname, NULL);
			free(ep);
			changed = true;
			err = 0;
			continue;
		}
		if (err < 0)
			pr_warn("agent: endpoint %u: adoption failed: %s", ep->e.id, flowsdn_strerror(err));
		ep->ready = true;
		err = ep_append(a, ep);
		if (err < 0) {
			free(ep);
			break;
		}
		a->restored++;
		{
			struct flowsdn_endpoint d;

			/* Its saved labels: switched from the policy in force. */
			endpoint_to_dp(&ep->e, &d);
			(void)agent_policy_endpoint_restore(a->pol, &d, ep->e.container_id);
		}
	}
	json_free(root);
	if (err == 0 && changed) {
		a->gen++;
		err = state_sync(a);
	}
	return err;
}

/* ---------------------------------------------------------- snapshots */

size_t agent_core_endpoint_count(struct agent_core *a)
{
	size_t n = 0;

	if (!a)
		return 0;
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->n_eps; i++)
		n += a->eps[i]->ready;
	pthread_mutex_unlock(&a->lock);
	return n;
}

int agent_core_endpoints(struct agent_core *a, struct agent_api_endpoint **ret, size_t *ret_n)
{
	struct agent_api_endpoint *v;
	size_t n = 0;

	if (!a || !ret || !ret_n)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	v = calloc(a->n_eps ? a->n_eps : 1, sizeof(*v));
	for (size_t i = 0; v && i < a->n_eps; i++)
		if (a->eps[i]->ready)
			v[n++] = a->eps[i]->e;
	pthread_mutex_unlock(&a->lock);
	if (!v)
		return -ENOMEM;
	*ret = v;
	*ret_n = n;
	return 0;
}

/* agent_services_set_endpoints(): the endpoints' namespaces hold sockets
 * of removed backends too. */
static int endpoints_cb(void *userdata, struct agent_api_endpoint **ret, size_t *ret_n)
{
	return agent_core_endpoints(userdata, ret, ret_n);
}

int agent_core_endpoint(struct agent_core *a, uint32_t id, struct agent_api_endpoint *ret)
{
	int err = -FLOWSDN_E_AGENT_NOT_FOUND;

	if (!a || !ret)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->n_eps; i++) {
		if (a->eps[i]->ready && a->eps[i]->e.id == id) {
			*ret = a->eps[i]->e;
			err = 0;
			break;
		}
	}
	pthread_mutex_unlock(&a->lock);
	return err;
}

/* The ready endpoint @id (lock held), or NULL. */
static struct ep *ep_by_id_locked(struct agent_core *a, uint32_t id)
{
	for (size_t i = 0; i < a->n_eps; i++)
		if (a->eps[i]->ready && a->eps[i]->e.id == id)
			return a->eps[i];
	return NULL;
}

int agent_core_set_translation(struct agent_core *a, uint32_t id, enum flowsdn_cni_svc_translation svc,
			       struct agent_api_endpoint *ret, struct diag *diag)
{
	char cid[sizeof(((struct busy *)0)->container_id)], ifn[sizeof(((struct busy *)0)->ifname)];
	struct agent_api_endpoint e;
	struct ep *ep;
	int err;

	if (!a || !ret || !flowsdn_cni_svc_translation_name(svc))
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	ep = ep_by_id_locked(a, id);
	if (ep) {
		memcpy(cid, ep->e.container_id, sizeof(cid));
		memcpy(ifn, ep->e.ifname, sizeof(ifn));
	}
	pthread_mutex_unlock(&a->lock);
	if (!ep) {
		agent_diag_set(diag, "no endpoint %u", id);
		return -FLOWSDN_E_AGENT_NOT_FOUND;
	}
	/* The owner's slot keeps a DEL or GC of this endpoint out meanwhile. */
	err = owner_acquire(a, cid, ifn, 0);
	if (err < 0)
		return err;
	pthread_mutex_lock(&a->lock);
	ep = ep_by_id_locked(a, id);
	if (ep)
		e = ep->e;
	pthread_mutex_unlock(&a->lock);
	if (!ep) {
		agent_diag_set(diag, "no endpoint %u", id);
		err = -FLOWSDN_E_AGENT_NOT_FOUND;
		goto out;
	}
	if (e.svc_translation != svc) {
		e.svc_translation = svc;
		if (a->dp) {
			struct flowsdn_endpoint d;

			/* Only this flag: the enforcement flags are the policy's. */
			endpoint_to_dp(&e, &d);
			err = a->ops->dp_flags(a->ctx, a->dp, &d, FLOWSDN_EP_F_SVC_PACKET, d.flags & FLOWSDN_EP_F_SVC_PACKET);
			if (err < 0) {
				agent_diag_set(diag, "endpoint %u: %s", id, flowsdn_strerror(err));
				goto out;
			}
		}
		pthread_mutex_lock(&a->lock);
		ep = ep_by_id_locked(a, id);
		if (ep)
			ep->e.svc_translation = svc;
		a->gen++;
		pthread_mutex_unlock(&a->lock);
		err = state_sync(a);
		if (err < 0) {
			agent_diag_set(diag, "saving state: %s", strerror(-err));
			goto out;
		}
	}
	*ret = e;
out:
	owner_release(a, cid, ifn);
	return err;
}

struct agent_policy *agent_core_policy(struct agent_core *a)
{
	return a ? a->pol : NULL;
}

int agent_core_endpoint_labels(struct agent_core *a, uint32_t id, const struct agent_policy_meta *meta,
			       struct diag *diag)
{
	struct agent_api_endpoint e;
	struct flowsdn_endpoint d;
	int err;

	if (!a || !meta)
		return -EINVAL;
	err = agent_core_endpoint(a, id, &e);
	if (err < 0) {
		agent_diag_set(diag, "no endpoint %u", id);
		return err;
	}
	endpoint_to_dp(&e, &d);
	return agent_policy_endpoint_set(a->pol, &d, e.container_id, meta, diag);
}

int agent_core_ipam(struct agent_core *a, struct flowsdn_ipam_pool_summary *pools, size_t max, size_t *ret_n_pools,
		    struct flowsdn_ipam_allocation **ret_allocs, size_t *ret_n_allocs)
{
	int err;

	if (!a || !pools || !ret_n_pools || !ret_allocs || !ret_n_allocs)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	err = flowsdn_ipam_summary(a->ipam, pools, max, ret_n_pools);
	if (err == 0)
		err = flowsdn_ipam_list(a->ipam, ret_allocs, ret_n_allocs);
	pthread_mutex_unlock(&a->lock);
	return err;
}

int agent_core_set_pools(struct agent_core *a, const struct flowsdn_prefix *pools, size_t n,
			 struct flowsdn_prefix *ret_pools, size_t max, size_t *ret_n, char *why, size_t why_size)
{
	_cleanup_(call_diag_freep) struct flowsdn_diag *d = call_diag();
	struct flowsdn_ipam_pool_summary s[FLOWSDN_IPAM_MAX_POOLS];
	size_t ns = 0;
	int err;

	if (!a || !pools || !ret_n || (max && !ret_pools))
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	err = flowsdn_ipam_set_pools(a->ipam, pools, n, d);
	if (err == 0)
		err = flowsdn_ipam_summary(a->ipam, s, FLOWSDN_IPAM_MAX_POOLS, &ns);
	pthread_mutex_unlock(&a->lock);
	if (err == 0) {
		*ret_n = 0;
		for (size_t i = 0; i < ns && i < max && i < FLOWSDN_IPAM_MAX_POOLS; i++)
			ret_pools[(*ret_n)++] = s[i].pool;
	}
	if (err < 0 && why)
		snprintf(why, why_size, "%s", call_message(d, err));
	return err;
}

void agent_core_status(struct agent_core *a, struct agent_status *ret)
{
	struct flowsdn_ipam_pool_summary s[AGENT_MAX_POOLS];
	size_t n = 0;

	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&a->lock);
	ret->started = a->started;
	for (size_t i = 0; i < a->n_eps; i++)
		ret->endpoints += a->eps[i]->ready;
	ret->restored = a->restored;
	ret->replayed = a->replayed;
	ret->refused = a->refused;
	ret->deleting = a->n_dels;
	ret->datapath = a->dp != NULL;
	ret->uplinks = a->uplinks;
	ret->datapath_mode = a->dp ? a->ops->dp_mode(a->ctx, a->dp) : NULL;
	ret->ipam_err = flowsdn_ipam_summary(a->ipam, s, AGENT_MAX_POOLS, &n);
	ret->state_ok = !a->save_err && !a->refused;
	pthread_mutex_unlock(&a->lock);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

void agent_core_timing(struct agent_core *a, enum agent_verb verb, struct agent_timing *ret)
{
	static double sorted[TIMING_SAMPLES];
	static pthread_mutex_t sorted_lock = PTHREAD_MUTEX_INITIALIZER;
	const struct timing *t;

	memset(ret, 0, sizeof(*ret));
	if (!a || verb >= AGENT_VERB_MAX_)
		return;
	pthread_mutex_lock(&sorted_lock);
	pthread_mutex_lock(&a->lock);
	t = &a->timing[verb];
	ret->count = t->count;
	ret->errors = t->errors;
	ret->samples = t->n;
	memcpy(sorted, t->ms, t->n * sizeof(double));
	pthread_mutex_unlock(&a->lock);
	if (ret->samples) {
		qsort(sorted, ret->samples, sizeof(double), cmp_double);
		ret->median_ms = sorted[ret->samples / 2];
		ret->p95_ms = sorted[(ret->samples * 95 - 1) / 100];
		ret->max_ms = sorted[ret->samples - 1];
	}
	pthread_mutex_unlock(&sorted_lock);
}

const struct agent_config *agent_core_config(const struct agent_core *a)
{
	return a ? a->cfg : NULL;
}

void agent_core_free(struct agent_core *a)
{
	if (!a)
		return;
	if (a->deleter_started) {
		/* The deletions already answered are finished first. */
		pthread_mutex_lock(&a->lock);
		a->stopping = true;
		pthread_cond_broadcast(&a->del_cond);
		pthread_mutex_unlock(&a->lock);
		pthread_join(a->deleter, NULL);
	}
	for (size_t i = 0; i < a->n_eps; i++)
		free(a->eps[i]);
	free(a->eps);
	for (size_t i = 0; i < a->n_dels; i++)
		free(a->dels[i]);
	free(a->dels);
	free(a->busy);
	agent_services_free(a->services);
	agent_ct_stop(a->ct_gc);
	agent_policy_free(a->pol);
	if (a->dp)
		a->ops->dp_free(a->ctx, a->dp);
	flowsdn_ipam_free(a->ipam);
	free(a->state_path);
	free(a->queue_dir);
	agent_config_free(a->cfg);
	pthread_cond_destroy(&a->owner_cond);
	pthread_cond_destroy(&a->state_cond);
	pthread_cond_destroy(&a->del_cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

struct agent_services *agent_core_services(struct agent_core *a)
{
	return a ? a->services : NULL;
}

int agent_core_new(const struct agent_config *cfg, const struct agent_ops *ops, void *ctx, struct agent_core **ret)
{
	struct agent_core *a;
	pthread_condattr_t ca;
	int err;

	if (!cfg || !ret)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->owner_cond, &ca);
	pthread_cond_init(&a->state_cond, &ca);
	pthread_cond_init(&a->del_cond, &ca);
	pthread_condattr_destroy(&ca);
	a->ops = ops ? ops : &agent_ops_kernel;
	a->ctx = ctx;
	a->started = time(NULL);
	err = agent_config_dup(cfg, &a->cfg);
	if (err < 0)
		goto out;
	if (asprintf(&a->state_path, "%s/endpoints.json", cfg->state_dir) < 0 ||
	    !(a->queue_dir = agent_api_queue_dir(cfg->state_dir))) {
		a->state_path = NULL;
		err = -ENOMEM;
		goto out;
	}
	err = util_mkdir_p(cfg->state_dir, 0700);
	if (err < 0) {
		pr_err("agent: creating %s: %s", cfg->state_dir, strerror(-err));
		goto out;
	}
	/* The plugin queues into a configured queueDir only when it bears
	 * this mark (common/agent-api.h). */
	err = agent_api_queue_dir_mark(a->queue_dir);
	if (err < 0) {
		pr_err("agent: marking the delete queue %s: %s", a->queue_dir,
		       err == -EPERM ? "not private (owned by another user, or writable by group or others)" : strerror(-err));
		goto out;
	}
	/* Addresses live in the endpoint state (one write per ADD): IPAM is
	 * rebuilt from it at each start. */
	{
		_cleanup_(call_diag_freep) struct flowsdn_diag *d = call_diag();

		err = flowsdn_ipam_new(NULL, cfg->pools, cfg->n_pools, NULL, &a->ipam, d);
		if (err < 0)
			pr_err("agent: IPAM: %s", call_message(d, err));
	}
	if (err < 0) {
		goto out;
	}
	if (a->ops->netns_ino(a->ctx, "/proc/self/ns/net", &a->own_netns[0]) < 0)
		a->own_netns[0] = 0;
	if (a->ops->netns_ino(a->ctx, "/proc/1/ns/net", &a->own_netns[1]) < 0)
		a->own_netns[1] = 0;
	if (cfg->datapath) {
		FLOWSDN_OPTS(flowsdn_datapath_opts, dpo, .pin_dir = cfg->pin_dir,
			     .egress_mode = cfg->egress_stack ? FLOWSDN_EGRESS_STACK : FLOWSDN_EGRESS_FIB,
			     .attach_mode = (enum flowsdn_attach_mode)cfg->attach_mode, .ct_max = cfg->ct_max,
			     .ct_timeouts = &cfg->ct_timeouts);

		err = a->ops->dp_open(a->ctx, &dpo, &a->dp);
		if (err < 0) {
			pr_err("agent: loading the datapath in %s: %s", cfg->pin_dir, flowsdn_strerror(err));
			goto out;
		}
		if (a->ops->dp_ct_gc) {
			err = agent_ct_start(a->ops, a->ctx, a->dp, cfg->ct_gc_interval_s, &a->ct_gc);
			if (err < 0)
				goto out;
		}
		a->uplinks = a->ops->dp_uplink_attach ? agent_uplinks_attach(cfg, a->ops, a->ctx, a->dp) : 0;
	}
	/* The policy writes the real maps only (the ops' fakes have none). */
	err = agent_policy_new(cfg->state_dir, a->dp && a->ops == &agent_ops_kernel ? flowsdn_datapath_maps(a->dp) : NULL,
			       &a->pol);
	if (err == 0) {
		struct diag *d = NULL;

		if (diag_new(&d) < 0)
			d = NULL;
		err = agent_policy_load(a->pol, cfg, d);
		if (err < 0)
			pr_err("agent: configuration: %s", d ? agent_diag_message(d) : flowsdn_strerror(err));
		diag_free(d);
	}
	/* The saved policy state before any endpoint is adopted. */
	if (err == 0)
		err = agent_policy_restore(a->pol);
	if (err < 0)
		goto out;
	err = restore(a);
	if (err < 0)
		goto out;
	agent_policy_restore_done(a->pol);
	err = agent_services_new(a->cfg, a->ops, a->ctx, a->dp, &a->services);
	if (err < 0)
		goto out;
	agent_services_set_endpoints(a->services, endpoints_cb, a);
	err = pthread_create(&a->deleter, NULL, deleter_main, a);
	if (err) {
		err = -err;
		goto out;
	}
	a->deleter_started = true;
	err = agent_core_replay_queue(a);
	if (err < 0)
		goto out;
	*ret = a;
	return 0;
out:
	agent_core_free(a);
	return err;
}

void agent_core_set_node_routes(struct agent_core *core, int (*fn)(void *userdata, char **ret_json), void *userdata)
{
	pthread_mutex_lock(&core->lock);
	core->node_routes = fn;
	core->node_routes_userdata = userdata;
	pthread_mutex_unlock(&core->lock);
}

int agent_core_node_routes(struct agent_core *core, char **ret_json)
{
	int (*fn)(void *userdata, char **ret_json);
	void *userdata;

	pthread_mutex_lock(&core->lock);
	fn = core->node_routes;
	userdata = core->node_routes_userdata;
	pthread_mutex_unlock(&core->lock);
	/* The answer is built outside the core's lock: the routes have theirs. */
	return fn ? fn(userdata, ret_json) : -FLOWSDN_E_AGENT_NOT_FOUND;
}
