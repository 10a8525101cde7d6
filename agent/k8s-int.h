/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inside agent/k8s*.c: the state of struct agent_k8s shared by k8s.c
 * (Services, EndpointSlices, NetworkPolicies, Namespaces, the reflector
 * threads) and k8s-node.c (Nodes, routes, Pods), and the leaf helpers of
 * k8s-util.c (a string-keyed hash table, object field access), which call
 * neither.
 */
#ifndef FLOWSDN_AGENT_K8S_INT_H
#define FLOWSDN_AGENT_K8S_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>

#include "../common/k8s.h" /* the API client */
#include "k8s.h"

/* ------------------------------------------------------------ k8s-util.c */

struct k8s_map_node {
	char *key;
	void *val;
	struct k8s_map_node *next;
};

/* Chained, power-of-two buckets, grown at load 1/2. */
struct k8s_map {
	struct k8s_map_node **buckets;
	size_t n_buckets, n;
};

void *k8s_map_get(const struct k8s_map *m, const char *key);
int k8s_map_put(struct k8s_map *m, const char *key, void *val);
void *k8s_map_del(struct k8s_map *m, const char *key);
void k8s_map_each(struct k8s_map *m, void (*fn)(void *val, void *ctx), void *ctx);
void k8s_map_clear(struct k8s_map *m, void (*free_fn)(void *val));

/* The string at dotted @path of @obj, or NULL. */
const char *k8s_obj_str(const struct json_value *obj, const char *path);
/* "NS/NAME" (namespaced) or "NAME" of @obj. */
int k8s_obj_key(const struct json_value *obj, char *buf, size_t size);

/* ------------------------------------------------------------ k8s-node.c */

enum agent_k8s_route_state {
	AGENT_K8S_ROUTE_PLANNED,
	AGENT_K8S_ROUTE_INSTALLED,
	AGENT_K8S_ROUTE_CONFLICT,
};

struct agent_k8s_route {
	char *node;
	struct flowsdn_prefix dst;
	struct flowsdn_addr gw;
	enum agent_k8s_route_state state;
	char reason[160];
};

struct agent_k8s_node {
	char *name;
	unsigned int gen;
	struct flowsdn_prefix cidrs[AGENT_K8S_MAX_POOLS];
	size_t n_cidrs;
	struct flowsdn_addr addrs[4];  /* InternalIPs */
	size_t n_addrs;
};

struct agent_k8s_pod {
	char *key;
	char *uid;
	unsigned int gen;
	uint32_t ep_id;                /* 0: not matched to an endpoint yet */
	bool event_sent, failure_sent;
	char *annotation;              /* the value last patched or read */
};

/* An Event or a Pod annotation patch decided under the state's lock and
 * sent after it (agent_k8s_node_event()): a slow or refusing API server
 * never holds the watches or the agent's routes behind the lock. */
struct agent_k8s_write {
	struct agent_k8s_write *next;
	bool patch;                    /* a pod annotation patch, else an Event */
	char *ns, *name, *what;        /* the object; what: for the log */
	char *key, *value;             /* patch: the pod's key and the value recorded once patched */
	char *body;
};

/* ------------------------------------------------------------ the state */

struct agent_k8s {
	pthread_mutex_t lock;
	pthread_cond_t stop_cond; /* with lock: agent_k8s_stop() wakes a watch waiting to list again */
	bool stopping;
	char *node_name;
	struct agent_services *services;
	struct agent_policy *policy;
	struct agent_core *core;
	const struct agent_k8s_route_ops *route_ops;
	void *route_ctx;
	struct k8s_client *writer;
	struct flowsdn_prefix pools[AGENT_K8S_MAX_POOLS];
	size_t n_pools;
	int (*set_pools)(void *ctx, const struct flowsdn_prefix *pools, size_t n, struct flowsdn_prefix *ret_pools,
			 size_t max, size_t *ret_n, char *why, size_t why_size);
	void *set_pools_ctx;
	/* The podCIDRs last applied (or started with): what a Node event is compared with. */
	struct flowsdn_prefix cidrs[AGENT_K8S_MAX_POOLS];
	size_t n_cidrs;
	uint64_t pool_changes;      /* podCIDR changes applied */

	unsigned int gen[AGENT_K8S_KIND_MAX_];   /* relist generation per kind */
	bool listing[AGENT_K8S_KIND_MAX_], listed[AGENT_K8S_KIND_MAX_];
	bool svc_synced;

	struct k8s_map groups;       /* "NS/SERVICE" -> struct svc_group */
	struct k8s_map slices;       /* "NS/SLICE" -> struct slice_obj */
	struct k8s_map policies;     /* "NS/NAME" -> struct text_obj */
	struct k8s_map namespaces;   /* "NAME" -> struct text_obj */

	struct agent_k8s_node *nodes;
	size_t n_nodes;
	struct agent_k8s_route *routes;
	size_t n_routes;
	bool node_event_sent;
	struct k8s_map pods;         /* "NS/NAME" -> struct agent_k8s_pod */

	struct agent_k8s_stats stats;
	struct agent_k8s_write *writes, **writes_tail; /* queued under lock */
	pthread_mutex_t write_lock;  /* one sender at a time on the writer client, in order */

	/* agent_k8s_start() */
	pthread_t threads[AGENT_K8S_KIND_MAX_];
	struct k8s_client *clients[AGENT_K8S_KIND_MAX_];
	bool running[AGENT_K8S_KIND_MAX_];
	unsigned int n_running;
};

/* Nodes and Pods events (the state's lock taken inside). */
int agent_k8s_node_event(struct agent_k8s *k, enum agent_k8s_kind kind, const struct k8s_event *ev);
void agent_k8s_node_state_free(struct agent_k8s *k);
/* Sends what agent_k8s_node_event() queued; never under the state's lock. */
void agent_k8s_writes_flush(struct agent_k8s *k);

/* agent_core_set_pools() as agent_k8s_opts.set_pools (@ctx: the core). */
int agent_k8s_core_set_pools(void *ctx, const struct flowsdn_prefix *pools, size_t n, struct flowsdn_prefix *ret_pools,
			     size_t max, size_t *ret_n, char *why, size_t why_size);

#endif
