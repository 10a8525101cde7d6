/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent core: endpoints (IPAM + veth + datapath), their persisted
 * state, restore and adoption after a restart, the delete queue. */
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

#include "core.h"
#include "jsonutil.h"
#include "log.h"
#include "replay.h"
#include "util.h"

#define MAX_STATE (16u << 20)

/* Agent-side latency of one verb: the last TIMING_SAMPLES durations. */
#define TIMING_SAMPLES 1024
struct timing {
	uint64_t count, errors;
	size_t n, pos;
	double ms[TIMING_SAMPLES];
};

struct agent_core {
	struct agent_config *cfg;
	const struct agent_ops *ops;
	void *ctx;
	pthread_mutex_t lock; /* everything below; IPAM handles are not thread-safe */
	struct flowsdn_ipam *ipam;
	struct flowsdn_datapath *dp; /* NULL with "datapath": false */
	struct agent_api_endpoint **eps;
	size_t n_eps, cap_eps;
	char *state_path, *queue_dir;
	unsigned int restored, replayed;
	time_t started;
	struct timing timing[AGENT_VERB_MAX_];
};

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
}

static void endpoint_to_dp(const struct agent_api_endpoint *e, struct flowsdn_endpoint *d)
{
	memset(d, 0, sizeof(*d));
	d->id = e->id;
	d->identity = FLOWSDN_IDENTITY_INIT;
	d->host_ifindex = e->host_ifindex;
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

/* Writes every endpoint to <state>/endpoints.json (atomically). */
static int state_save(struct agent_core *a)
{
	_cleanup_free_ char *json = NULL;
	size_t len;
	yajl_gen g;
	int err;

	g = jgen_new();
	if (!g)
		return -ENOMEM;
	yajl_gen_map_open(g);
	jgen_ki(g, "version", 1);
	jgen_str(g, "endpoints");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < a->n_eps; i++)
		agent_api_endpoint_gen(g, a->eps[i]);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	err = jgen_take(g, &json, &len);
	yajl_gen_free(g);
	if (err < 0)
		return err;
	err = util_write_file_atomic(a->state_path, json, len, 0600);
	if (err < 0)
		pr_err("agent: saving %s: %s", a->state_path, strerror(-err));
	return err;
}

static int ep_append(struct agent_core *a, struct agent_api_endpoint *e)
{
	if (a->n_eps == a->cap_eps) {
		size_t cap = a->cap_eps ? a->cap_eps * 2 : 16;
		struct agent_api_endpoint **p = realloc(a->eps, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->eps = p;
		a->cap_eps = cap;
	}
	a->eps[a->n_eps++] = e;
	return 0;
}

static void ep_remove_at(struct agent_core *a, size_t i)
{
	free(a->eps[i]);
	memmove(&a->eps[i], &a->eps[i + 1], (a->n_eps - i - 1) * sizeof(a->eps[0]));
	a->n_eps--;
}

static ssize_t ep_find(struct agent_core *a, const char *container_id, const char *ifname)
{
	for (size_t i = 0; i < a->n_eps; i++)
		if (!strcmp(a->eps[i]->container_id, container_id) && !strcmp(a->eps[i]->ifname, ifname))
			return (ssize_t)i;
	return -1;
}

static uint32_t next_id(struct agent_core *a)
{
	for (uint32_t id = 1;; id++) {
		bool used = false;

		for (size_t i = 0; i < a->n_eps && !used; i++)
			used = a->eps[i]->id == id;
		if (!used)
			return id;
	}
}

/* Removes everything an endpoint has: its datapath entries and hooks, the
 * veth pair and host routes, its addresses.  Each step is idempotent. */
static void endpoint_cleanup(struct agent_core *a, const struct agent_api_endpoint *e)
{
	struct flowsdn_nl_err nerr = { { 0 } };
	double t[4];
	int err;

	t[0] = mono_ms();
	if (a->dp) {
		struct flowsdn_endpoint d;

		endpoint_to_dp(e, &d);
		err = a->ops->dp_remove(a->ctx, a->dp, &d);
		if (err < 0)
			pr_warn("agent: endpoint %u: removing map entries: %s", e->id, flowsdn_strerror(err));
		err = a->ops->dp_detach(a->ctx, a->dp, e->host_ifindex);
		if (err < 0)
			pr_warn("agent: endpoint %u: detach: %s", e->id, flowsdn_strerror(err));
	}
	t[1] = mono_ms();
	err = a->ops->veth_teardown(a->ctx, e->host_ifname, e->addrs, e->n_addrs, &nerr);
	if (err < 0)
		pr_warn("agent: endpoint %u: teardown: %s", e->id, nerr.msg);
	t[2] = mono_ms();
	err = flowsdn_ipam_release(a->ipam, e->container_id, e->ifname);
	if (err < 0)
		pr_warn("agent: endpoint %u: releasing addresses: %s", e->id, flowsdn_strerror(err));
	t[3] = mono_ms();
	pr_debug("agent: DEL %s/%s: datapath %.2f ms, veth %.2f ms, ipam %.2f ms", e->container_id, e->ifname,
		 t[1] - t[0], t[2] - t[1], t[3] - t[2]);
}

static int del_locked(struct agent_core *a, const char *container_id, const char *ifname)
{
	ssize_t i = ep_find(a, container_id, ifname);
	struct flowsdn_nl_err nerr = { { 0 } };
	char host[16];
	int err;

	if (i < 0) {
		if (agent_api_host_ifname(container_id, ifname, host, sizeof(host)) == 0)
			(void)a->ops->veth_teardown(a->ctx, host, NULL, 0, &nerr);
		err = flowsdn_ipam_release(a->ipam, container_id, ifname);
		return err < 0 ? err : 0;
	}
	endpoint_cleanup(a, a->eps[i]);
	ep_remove_at(a, (size_t)i);
	err = state_save(a);
	return err < 0 ? err : 1;
}

int agent_core_del(struct agent_core *a, const char *container_id, const char *ifname, struct agent_diag *diag)
{
	double t0 = mono_ms();
	int err;

	if (!a || !container_id || !ifname)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	err = del_locked(a, container_id, ifname);
	timing_add(&a->timing[AGENT_VERB_DEL], mono_ms() - t0, err >= 0);
	pthread_mutex_unlock(&a->lock);
	if (err < 0)
		agent_diag_set(diag, "deleting %s/%s: %s", container_id, ifname, agent_api_strerror(err));
	return err;
}

static int add_locked(struct agent_core *a, const struct agent_request *rq, struct agent_api_endpoint *ret,
		      struct agent_diag *diag)
{
	struct flowsdn_ipam_result lease;
	struct flowsdn_prefix prefixes[AGENT_API_MAX_ADDRS];
	struct flowsdn_nl_err nerr = { { 0 } };
	struct flowsdn_veth veth;
	struct agent_api_endpoint *e = NULL;
	uint64_t ino = 0;
	double t[5];
	ssize_t i;
	int err;

	t[0] = mono_ms();
	i = ep_find(a, rq->container_id, rq->ifname);
	if (i >= 0) {
		struct flowsdn_endpoint_iface f;

		/* A repeated ADD of a live endpoint returns it again. */
		endpoint_to_iface(a->eps[i], &f);
		if (!strcmp(a->eps[i]->netns, rq->netns) && a->ops->endpoint_check(a->ctx, &f, &nerr) == 0) {
			*ret = *a->eps[i];
			return 0;
		}
		err = del_locked(a, rq->container_id, rq->ifname);
		if (err < 0)
			return err;
	}
	err = a->ops->netns_ino(a->ctx, rq->netns, &ino);
	if (err < 0) {
		agent_diag_set(diag, "netns %s: %s", rq->netns, flowsdn_strerror(err));
		return -FLOWSDN_E_NL_NETNS;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	if (copy_str(e->container_id, sizeof(e->container_id), rq->container_id) < 0 ||
	    copy_str(e->ifname, sizeof(e->ifname), rq->ifname) < 0 || copy_str(e->netns, sizeof(e->netns), rq->netns) < 0) {
		agent_diag_set(diag, "containerID, ifname or netns too long");
		free(e);
		return -EINVAL;
	}
	err = flowsdn_ipam_allocate(a->ipam, rq->container_id, rq->ifname, NULL, &lease);
	if (err < 0) {
		agent_diag_set(diag, "allocating addresses: %s",
			 flowsdn_ipam_errmsg(a->ipam)[0] ? flowsdn_ipam_errmsg(a->ipam) : flowsdn_strerror(err));
		free(e);
		return err;
	}
	t[1] = mono_ms();
	agent_api_host_ifname(rq->container_id, rq->ifname, e->host_ifname, sizeof(e->host_ifname));
	e->mtu = rq->mtu ? rq->mtu : a->cfg->mtu;
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
			     .host_routes = true);

		err = a->ops->veth_setup(a->ctx, &vc, &veth, &nerr);
	}
	if (err < 0) {
		agent_diag_set(diag, "%s", nerr.msg[0] ? nerr.msg : flowsdn_strerror(err));
		goto out_free;
	}
	t[2] = mono_ms();
	e->host_ifindex = veth.host_ifindex;
	memcpy(e->host_mac, veth.host_mac, 6);
	memcpy(e->mac, veth.mac, 6);
	e->netns_ino = veth.netns_ino;
	e->id = next_id(a);
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
	err = ep_append(a, e);
	if (err < 0)
		goto out_unpublish;
	err = state_save(a);
	t[4] = mono_ms();
	if (err < 0) {
		agent_diag_set(diag, "saving state: %s", strerror(-err));
		a->n_eps--;
		goto out_unpublish;
	}
	pr_debug("agent: ADD %s/%s: ipam %.2f ms, veth %.2f ms, datapath %.2f ms, state %.2f ms", rq->container_id,
		 rq->ifname, t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3]);
	*ret = *e;
	return 0;

out_unpublish:
	if (a->dp) {
		struct flowsdn_endpoint d;

		endpoint_to_dp(e, &d);
		(void)a->ops->dp_remove(a->ctx, a->dp, &d);
	}
out_detach:
	if (a->dp)
		(void)a->ops->dp_detach(a->ctx, a->dp, e->host_ifindex);
out_teardown:
	(void)a->ops->veth_teardown(a->ctx, e->host_ifname, e->addrs, e->n_addrs, NULL);
out_free:
	free(e);
	(void)flowsdn_ipam_release(a->ipam, rq->container_id, rq->ifname);
	return err;
}

static bool request_valid(const struct agent_request *rq, struct agent_diag *diag)
{
	if (!rq || !flowsdn_cni_container_id_valid(rq->container_id) || !flowsdn_cni_ifname_valid(rq->ifname) ||
	    !rq->netns || rq->netns[0] != '/') {
		agent_diag_set(diag, "containerID, ifname or netns invalid");
		return false;
	}
	return true;
}

int agent_core_add(struct agent_core *a, const struct agent_request *rq, struct agent_api_endpoint *ret,
		   struct agent_diag *diag)
{
	double t0 = mono_ms();
	int err;

	if (!a || !ret || !request_valid(rq, diag))
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	err = add_locked(a, rq, ret, diag);
	timing_add(&a->timing[AGENT_VERB_ADD], mono_ms() - t0, err == 0);
	pthread_mutex_unlock(&a->lock);
	return err;
}

int agent_core_check(struct agent_core *a, const struct agent_request *rq, struct agent_api_endpoint *ret,
		     struct agent_diag *diag)
{
	struct flowsdn_endpoint_iface f;
	struct flowsdn_nl_err nerr = { { 0 } };
	ssize_t i;
	int err = 0;

	if (!a || !ret || !request_valid(rq, diag))
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	i = ep_find(a, rq->container_id, rq->ifname);
	if (i < 0) {
		agent_diag_set(diag, "no endpoint for %s/%s", rq->container_id, rq->ifname);
		err = -FLOWSDN_E_AGENT_NOT_FOUND;
		goto out;
	}
	if (strcmp(a->eps[i]->netns, rq->netns) != 0) {
		agent_diag_set(diag, "endpoint is in netns %s, not %s", a->eps[i]->netns, rq->netns);
		err = -FLOWSDN_E_NL_MISMATCH;
		goto out;
	}
	endpoint_to_iface(a->eps[i], &f);
	err = a->ops->endpoint_check(a->ctx, &f, &nerr);
	if (err < 0) {
		agent_diag_set(diag, "%s", nerr.msg[0] ? nerr.msg : flowsdn_strerror(err));
		goto out;
	}
	if (a->dp) {
		err = a->ops->dp_is_attached(a->ctx, a->dp, a->eps[i]->host_ifindex);
		if (err <= 0) {
			agent_diag_set(diag, "datapath not attached to %s", a->eps[i]->host_ifname);
			err = err < 0 ? err : -FLOWSDN_E_BPF_ATTACH;
			goto out;
		}
		err = 0;
	}
	*ret = *a->eps[i];
out:
	pthread_mutex_unlock(&a->lock);
	return err;
}

static bool owner_in(const char *const *ids, const char *const *ifnames, size_t n, const char *cid, const char *ifn)
{
	for (size_t k = 0; k < n; k++)
		if (!strcmp(ids[k], cid) && !strcmp(ifnames[k], ifn))
			return true;
	return false;
}

int agent_core_gc(struct agent_core *a, const char *const *ids, const char *const *ifnames, size_t n,
		  struct agent_diag *diag)
{
	struct flowsdn_ipam_allocation *alloc = NULL;
	size_t n_alloc = 0;
	int removed = 0, err;

	if (!a || (n && (!ids || !ifnames)))
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	for (size_t i = a->n_eps; i-- > 0;) {
		if (owner_in(ids, ifnames, n, a->eps[i]->container_id, a->eps[i]->ifname))
			continue;
		endpoint_cleanup(a, a->eps[i]);
		ep_remove_at(a, i);
		removed++;
	}
	if (flowsdn_ipam_list(a->ipam, &alloc, &n_alloc) == 0) {
		for (size_t i = 0; i < n_alloc; i++)
			if (!owner_in(ids, ifnames, n, alloc[i].container_id, alloc[i].ifname) &&
			    flowsdn_ipam_release(a->ipam, alloc[i].container_id, alloc[i].ifname) > 0)
				removed++;
		free(alloc);
	}
	err = state_save(a);
	pthread_mutex_unlock(&a->lock);
	if (err < 0) {
		agent_diag_set(diag, "gc: saving state: %s", strerror(-err));
		return err;
	}
	return removed;
}

static int replay_del(void *userdata, const char *container_id, const char *ifname)
{
	return del_locked(userdata, container_id, ifname);
}

int agent_core_replay_queue(struct agent_core *a)
{
	int r;

	if (!a)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	r = agent_replay_queue(a->queue_dir, replay_del, a);
	if (r > 0)
		a->replayed += (unsigned int)r;
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* Loads endpoints.json and adopts each endpoint's interface. */
static int restore(struct agent_core *a)
{
	_cleanup_free_ char *data = NULL;
	struct json_value *root = NULL;
	const struct json_value *eps;
	bool dropped = false;
	size_t len;
	int err;

	err = util_read_file(a->state_path, MAX_STATE, &data, &len);
	if (err == -ENOENT)
		return 0;
	if (err < 0)
		return err;
	err = json_parse(data, len, NULL, &root, NULL);
	eps = json_get(root, "endpoints");
	if (err < 0 || !jis(eps, JSON_ARRAY)) {
		pr_err("agent: %s is damaged", a->state_path);
		json_free(root);
		return -FLOWSDN_E_AGENT_STATE;
	}
	for (size_t i = 0; i < eps->u.array.n; i++) {
		struct agent_api_endpoint *e = calloc(1, sizeof(*e));
		struct flowsdn_endpoint_iface f;
		struct flowsdn_nl_err nerr = { { 0 } };

		if (!e) {
			err = -ENOMEM;
			break;
		}
		if (agent_api_endpoint_parse(eps->u.array.items[i], e) < 0) {
			pr_err("agent: %s: endpoint %zu is damaged", a->state_path, i);
			free(e);
			err = -FLOWSDN_E_AGENT_STATE;
			break;
		}
		endpoint_to_iface(e, &f);
		err = a->dp ? a->ops->dp_adopt(a->ctx, a->dp, &f) : a->ops->endpoint_check(a->ctx, &f, &nerr);
		if (err == -FLOWSDN_E_BPF_IFACE_MISMATCH || err == -FLOWSDN_E_NL_MISMATCH ||
		    err == -FLOWSDN_E_NL_NOT_FOUND || err == -FLOWSDN_E_NL_NETNS) {
			pr_warn("agent: endpoint %u (%s/%s) is gone: cleaning up", e->id, e->container_id, e->ifname);
			endpoint_cleanup(a, e);
			free(e);
			dropped = true;
			err = 0;
			continue;
		}
		if (err < 0)
			pr_warn("agent: endpoint %u: adoption failed: %s", e->id, flowsdn_strerror(err));
		err = ep_append(a, e);
		if (err < 0) {
			free(e);
			break;
		}
		a->restored++;
	}
	json_free(root);
	if (err == 0 && dropped)
		err = state_save(a);
	return err;
}

size_t agent_core_endpoint_count(struct agent_core *a)
{
	size_t n;

	if (!a)
		return 0;
	pthread_mutex_lock(&a->lock);
	n = a->n_eps;
	pthread_mutex_unlock(&a->lock);
	return n;
}

int agent_core_endpoints(struct agent_core *a, struct agent_api_endpoint **ret, size_t *ret_n)
{
	struct agent_api_endpoint *v;
	size_t n;

	if (!a || !ret || !ret_n)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	n = a->n_eps;
	v = calloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		v[i] = *a->eps[i];
	pthread_mutex_unlock(&a->lock);
	if (!v)
		return -ENOMEM;
	*ret = v;
	*ret_n = n;
	return 0;
}

int agent_core_endpoint(struct agent_core *a, uint32_t id, struct agent_api_endpoint *ret)
{
	int err = -FLOWSDN_E_AGENT_NOT_FOUND;

	if (!a || !ret)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->n_eps; i++) {
		if (a->eps[i]->id == id) {
			*ret = *a->eps[i];
			err = 0;
			break;
		}
	}
	pthread_mutex_unlock(&a->lock);
	return err;
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

void agent_core_status(struct agent_core *a, struct agent_status *ret)
{
	struct flowsdn_ipam_pool_summary s[AGENT_MAX_POOLS];
	size_t n = 0;

	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&a->lock);
	ret->started = a->started;
	ret->endpoints = a->n_eps;
	ret->restored = a->restored;
	ret->replayed = a->replayed;
	ret->datapath = a->dp != NULL;
	ret->datapath_mode = a->dp ? a->ops->dp_mode(a->ctx, a->dp) : NULL;
	ret->ipam_err = flowsdn_ipam_summary(a->ipam, s, AGENT_MAX_POOLS, &n);
	ret->state_ok = a->n_eps == 0 || access(a->state_path, R_OK) == 0;
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
	for (size_t i = 0; i < a->n_eps; i++)
		free(a->eps[i]);
	free(a->eps);
	if (a->dp)
		a->ops->dp_free(a->ctx, a->dp);
	flowsdn_ipam_free(a->ipam);
	free(a->state_path);
	free(a->queue_dir);
	agent_config_free(a->cfg);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

int agent_core_new(const struct agent_config *cfg, const struct agent_ops *ops, void *ctx, struct agent_core **ret)
{
	struct agent_core *a;
	_cleanup_free_ char *ipam_dir = NULL;
	char errbuf[256] = "";
	int err;

	if (!cfg || !ret)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	a->ops = ops ? ops : &agent_ops_kernel;
	a->ctx = ctx;
	a->started = time(NULL);
	err = agent_config_dup(cfg, &a->cfg);
	if (err < 0)
		goto out;
	if (asprintf(&a->state_path, "%s/endpoints.json", cfg->state_dir) < 0 ||
	    asprintf(&ipam_dir, "%s/ipam", cfg->state_dir) < 0 ||
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
	{
		FLOWSDN_OPTS(flowsdn_ipam_opts, io, .errbuf = errbuf, .errbuf_size = sizeof(errbuf));

		err = flowsdn_ipam_new(ipam_dir, cfg->pools, cfg->n_pools, &io, &a->ipam);
	}
	if (err < 0) {
		pr_err("agent: IPAM in %s: %s", ipam_dir, errbuf[0] ? errbuf : flowsdn_strerror(err));
		goto out;
	}
	if (cfg->datapath) {
		FLOWSDN_OPTS(flowsdn_datapath_opts, dpo, .pin_dir = cfg->pin_dir,
			     .egress_mode = cfg->egress_stack ? FLOWSDN_EGRESS_STACK : FLOWSDN_EGRESS_FIB,
			     .attach_mode = (enum flowsdn_attach_mode)cfg->attach_mode);

		err = a->ops->dp_open(a->ctx, &dpo, &a->dp);
		if (err < 0) {
			pr_err("agent: loading the datapath in %s: %s", cfg->pin_dir, flowsdn_strerror(err));
			goto out;
		}
	}
	err = restore(a);
	if (err < 0)
		goto out;
	err = agent_core_replay_queue(a);
	if (err < 0)
		goto out;
	*ret = a;
	return 0;
out:
	agent_core_free(a);
	return err;
}
