/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-operator's Kubernetes mode (flash-operator(8) --kubernetes).
 *
 * k8s-reconcile.c: the per-service reconcile, pure over one client of
 * common/k8s.h.  It is fed the events of the watches (FlashServices, the
 * Deployments, Pods and EndpointSlices it owns, Nodes) and writes:
 *   - its CRDs (server-side apply, field manager "flash-operator"), then
 *     waits until each is Established;
 *   - per FlashService: the tenant Namespace (once per namespace), every
 *     object flash_render() gives (ownerReferences to the FlashService),
 *     each validated against the OpenAPI schemas before it is sent and
 *     applied only when its body changed since the last apply (the
 *     steady path sends nothing); a 409 apply conflict is forced only
 *     on an object owned by that FlashService (ownerReferences uid), else
 *     it is reported (status Degraded, reason ApplyConflict, with the
 *     fields and their manager) and tried again with backoff; an object
 *     no longer rendered is deleted, and after every relist of the
 *     FlashServices (and on becoming leader) each rendered kind is listed
 *     by the operator's label so that what an earlier leader applied and
 *     the current spec no longer renders is deleted too;
 *   - the status through /status (conditions, observedGeneration) when it
 *     changed (op_k8s_status_decide() over the cached Deployment, Pods
 *     and EndpointSlices);
 *   - the usage finalizer and, when a service is deleted, its week's
 *     FlashUsageRecords before the finalizer goes;
 *   - GPU services wait in <flash/sched.h>'s queue (status Queued with
 *     the position) and are rendered bound to a node and slots.
 * Only while it is the leader (op_k8s_set_leader()) and before the
 * leadership deadline (op_k8s_set_leader_until()) does it send anything;
 * a follower keeps its caches.
 *
 * k8s-run.c: the threads (one watch each), the Lease, the wiring.
 *
 * Not thread-safe: callers serialize calls on one struct op_k8s.
 */
#ifndef FLASH_OPERATOR_K8S_RECONCILE_H
#define FLASH_OPERATOR_K8S_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/render.h>

#include "k8s.h"

#define OP_K8S_FIELD_MANAGER "flash-operator"
#define OP_K8S_GROUP "flash.heterocloud.io"
#define OP_K8S_VERSION "v1alpha1"
/* Labels of a FlashService naming its tenant. */
#define OP_K8S_LABEL_ORG "flash.heterocloud.io/organization"
#define OP_K8S_LABEL_PROJECT "flash.heterocloud.io/project"
/* Annotations of a GPU service's Deployment pod template: the node and
 * the logical slots it is bound to. */
#define OP_K8S_ANNOTATION_GPU_SLOTS "flash.heterocloud.io/gpu-slots"
/* Label selectors of the owned-object watches. */
#define OP_K8S_OWNED_SELECTOR "app.kubernetes.io/managed-by=flash-operator"
#define OP_K8S_POD_SELECTOR "flash.heterocloud.io/organization"

struct op_k8s;

/* Helpers the Kubernetes mode's files share: a hash bucket (of @n) of the
 * object @ns/@name; a deep copy of a parsed value (NULL for NULL or on
 * ENOMEM). */
size_t op_k8s_bucket(const char *ns, const char *name, size_t n);
struct json_value *op_k8s_json_clone(const struct json_value *v);

struct op_k8s_opts {
	size_t sz;
	const struct flash_operator_config *config; /* required */
	/* The schemas every object is checked against before it is sent
	 * (required: the operator never sends what the server would refuse
	 * or answer with kubernetes#139253's 500). */
	const struct flash_schema_set *schemas;
	const char *field_manager;  /* [OP_K8S_FIELD_MANAGER] */
	k8s_log_fn log;             /* NULL: nothing logged */
	void *log_userdata;
	/* Unix seconds (status times, metering); NULL: time(). */
	int64_t (*now)(void *userdata);
	void *now_userdata;
	/* Milliseconds between two GETs of a CRD not yet Established [200]. */
	unsigned int crd_poll_ms;
	/* The namespace of the FlashUsageRecords (NULL: each service's own). */
	const char *usage_namespace;
	/* Monotonic microseconds, the clock of op_k8s_set_leader_until()
	 * (called with now_userdata); NULL: CLOCK_MONOTONIC. */
	int64_t (*mono_us)(void *userdata);
};

/* What the reconciler did (counters since op_k8s_new()). */
struct op_k8s_stats {
	uint64_t requests;        /* requests sent, all kinds */
	uint64_t applies;         /* objects applied (Namespaces included) */
	uint64_t apply_skipped;   /* applies skipped: same body as the last applied */
	uint64_t forced;          /* applies repeated with force after a 409 (objects owned by their FlashService) */
	uint64_t conflicts;       /* 409s not forced: reported in the status (ApplyConflict), retried with backoff */
	uint64_t conflict_waits;  /* applies not sent: their conflict's backoff had not passed */
	uint64_t stale_deleted;   /* objects an earlier operator applied, no longer rendered, found by a list */
	uint64_t events;          /* Events created (ApplyConflict) */
	uint64_t deletes;         /* objects no longer rendered, deleted */
	uint64_t status_writes;   /* /status writes */
	uint64_t refused;         /* objects the schemas refused (never sent) */
	uint64_t errors;          /* requests that failed */
	uint64_t services;        /* FlashServices held */
	uint64_t queued;          /* GPU services waiting */
	uint64_t fenced;          /* writes not sent: the leadership deadline had passed */
	uint64_t usage_marks;     /* FlashUsageRecords of the current week flushed (what was added) */
};

/* A reconciler writing through @c (borrowed: it must outlive the
 * reconciler).  Starts as a follower.  0, -EINVAL, -ENOMEM. */
int op_k8s_new(struct k8s_client *c, const struct op_k8s_opts *opts, struct op_k8s **ret);
void op_k8s_free(struct op_k8s *k);

/* Leader or not.  Becoming leader reconciles every service held (what a
 * follower saw was not written).  Returns the first error of that, or 0. */
int op_k8s_set_leader(struct op_k8s *k, bool leader);
bool op_k8s_is_leader(const struct op_k8s *k);

/* The fence of every write: while leader, a request is sent only before
 * @until_us (opts.mono_us's clock: the last successful Lease renewal plus
 * the renew deadline, shorter than the Lease); past it the write is not
 * sent (-ENOLCK, counted in fenced) and its service is reconciled again
 * by op_k8s_reconcile_pending().  Until the first call there is no
 * deadline.  The one call that may come from another thread while a call
 * on @k runs (an atomic store). */
void op_k8s_set_leader_until(struct op_k8s *k, int64_t until_us);
/* Stops the loops over every service (resync, usage flush, pending) at
 * the next service, for good: the process is stopping.  May be called
 * from another thread while a call on @k runs (an atomic store). */
void op_k8s_cancel(struct op_k8s *k);
/* While leader: reconciles again the services a fenced write left
 * undone (other failures are retried at the service's next event or the
 * resync).  0 or the first error. */
int op_k8s_reconcile_pending(struct op_k8s *k);

/* Applies the FlashService and FlashUsageRecord CRDs and waits until the
 * API server reports each Established, polling every crd_poll_ms for at
 * most @timeout_ms.  Sent whether leader or not (CRDs are the same for
 * every replica, and the watches need them).  0, -ETIMEDOUT, the client's
 * errors, -FLASH_E_RENDER_INVALID (a CRD its schemas refuse). */
int op_k8s_crds_apply(struct op_k8s *k, unsigned int timeout_ms);

/* One event of the FlashService watch (the reflector's RELIST, ADDED,
 * MODIFIED, DELETED, BOOKMARK, SYNCED): reconciles that service (a
 * service the RELIST's list no longer holds is forgotten at SYNCED).
 * Returns 0 or the first error of the service's writes (it is retried at
 * its next event or resync); a refused spec is not an error: it becomes
 * the status (Degraded, reason InvalidSpec). */
int op_k8s_service_event(struct op_k8s *k, const struct k8s_event *ev);

enum op_k8s_owned {
	OP_K8S_OWNED_DEPLOYMENT,
	OP_K8S_OWNED_POD,
	OP_K8S_OWNED_ENDPOINTSLICE,
	OP_K8S_OWNED_SERVICE,
};

/* One event of an owned-object watch: the cache of the service it
 * belongs to (namespace and app.kubernetes.io/name label) is updated and
 * its status written when it changed.  Objects of no known service are
 * ignored.  Between a RELIST and its SYNCED nothing is written; at SYNCED
 * what the list did not hold of that kind is dropped from every cache (it
 * was deleted while the watch was down): a Deployment or Service the
 * operator applied is applied again, every status written when it
 * changed.  0 or the first write's error. */
int op_k8s_owned_event(struct op_k8s *k, enum op_k8s_owned kind, const struct k8s_event *ev);

/* One event of the Node watch: the GPU inventory, then the queues are
 * scheduled and every GPU service whose place changed is reconciled. */
int op_k8s_node_event(struct op_k8s *k, const struct k8s_event *ev);

/* Reconciles every service held again (the periodic resync; the steady
 * path sends nothing). */
int op_k8s_resync(struct op_k8s *k);

/* While leader: adds to the week's FlashUsageRecords (each service's and
 * each organization's) what the meter counted since the last flush (the
 * periodic flush; a deleted service's are flushed before its finalizer
 * goes).  Records are created when absent and otherwise added to, so
 * that they accumulate across restarts and leader changes.  Nothing is
 * sent for a record with nothing new.  0 or the first error. */
int op_k8s_usage_flush(struct op_k8s *k);

void op_k8s_get_stats(const struct op_k8s *k, struct op_k8s_stats *ret);

/* The GPU queue state of service @ns/@name: 0 and *ret_position (0 when
 * bound) and *ret_node (NULL while queued; valid until the next call),
 * -ENOENT (no such GPU service). */
int op_k8s_gpu_state(const struct op_k8s *k, const char *ns, const char *name, uint32_t *ret_position,
		     const char **ret_node);

/* ------------------------------------------------------------ k8s-provider.c */

/*
 * The provider/v1 API on top of Kubernetes mode: the services the
 * provider API admits into the store are published as FlashService
 * objects (name: the service id, "fs-" and 32 hex digits; namespace: the
 * organization's, op_k8s_org_namespace(); labels: organization, project,
 * service id; spec: the canonical spec), which the reconcile loop then
 * renders like any FlashService written with kubectl.  The provider's
 * writes use their own field manager, so that they never take the
 * reconciler's usage finalizer away.
 */
#define OP_K8S_NAMESPACE_MAX 63
#define OP_K8S_LABEL_SERVICE_ID "flash.heterocloud.io/service-id"
#define OP_K8S_PROVIDER_MANAGER "flash-operator-provider"

struct op_service;

/* The namespace of organization @org: @org itself when it is a DNS
 * label, else "orgh-" and the first 32 hex digits of its SHA-256.  @buf of
 * OP_K8S_NAMESPACE_MAX + 1 bytes.  Its length, -EINVAL, -ENOSPC. */
int op_k8s_org_namespace(const char *org, char *buf, size_t size);

/* The FlashService object of stored service @s (*ret_json freed by the
 * caller) and its namespace into @ret_ns (may be NULL).  0, -EINVAL (an
 * id, organization or project that cannot be a name or label), -ENOMEM. */
int op_k8s_service_object(const struct op_service *s, char **ret_json, size_t *ret_len, char *ret_ns, size_t ns_size);

struct op_service_status;

/* The provider API's view (provider.c's "status" of get and list) of a
 * FlashService's status object @status (NULL: none written yet) for
 * metadata.generation @generation and spec.replicas @replicas: its
 * conditions and observedGeneration, readyReplicas, and a phase derived
 * from them: "suspended" (Suspended True), "failed" (Degraded True:
 * ErrImagePull, CrashLoopBackOff, ApplyConflict, InvalidSpec, ...),
 * "queued" (Queued True), "ready" (Ready True for the current
 * generation), "stopped" (zero replicas), else "provisioning"; the
 * message is the deciding condition's.  0 or -EINVAL. */
int op_k8s_service_status_view(const struct json_value *status, int64_t generation, int64_t replicas,
			       struct op_service_status *ret);

struct op_k8s_publish_stats {
	uint64_t requests, applies, deletes, refused, errors;
};

struct op_k8s_publisher;

/* A publisher writing through @c, checking each object against
 * @schemas (both borrowed). */
int op_k8s_publisher_new(struct k8s_client *c, const struct flash_schema_set *schemas, k8s_log_fn log,
			 void *log_userdata, struct op_k8s_publisher **ret);
void op_k8s_publisher_free(struct op_k8s_publisher *p);

/* Publishes the live services @services: each FlashService applied when
 * its object changed since it was last applied (so a pass over an
 * unchanged store sends nothing); a FlashService it published whose
 * service is no longer among them (deleted through the API) is deleted.
 * 0 or the first error (the others are still tried). */
int op_k8s_publish(struct op_k8s_publisher *p, struct op_service *const *services, size_t n);
void op_k8s_publisher_stats(const struct op_k8s_publisher *p, struct op_k8s_publish_stats *ret);

/* ------------------------------------------------------------ k8s-pods.c */

/* A Pod of a service, in its replica order (k8s-pods.c's head). */
struct op_k8s_pod {
	char name[254];
	char created[40];           /* metadata.creationTimestamp */
	bool ready;
};

/* A Pod is ready: phase Running, condition Ready True, not being
 * deleted (the Web Shell's Pods, sandbox sessions). */
bool op_k8s_pod_ready(const struct json_value *pod);

/* The Pods of service @id of @org (and @project when not NULL) through
 * @c, in replica order, only the ready ones when @ready_only: *ret
 * (free()) and *ret_n; the namespace in @ret_ns (may be NULL).  The
 * client's errors (k8s.h), -EINVAL, -ENOMEM. */
int op_k8s_service_pods(struct k8s_client *c, const char *org, const char *project, const char *id, bool ready_only,
			struct op_k8s_pod **ret, size_t *ret_n, char *ret_ns, size_t ns_size, struct k8s_status *st)
	__attribute__((warn_unused_result));

/* ------------------------------------------------------------ k8s-run.c */

struct op_k8s_run_opts {
	size_t sz;
	const char *kubeconfig;     /* NULL: $KUBECONFIG, then in-cluster */
	const char *context;        /* NULL: current-context */
	const struct flash_operator_config *config; /* NULL: read from config_file, or the defaults */
	const char *config_file;    /* flash-operator.conf(5), when config is NULL */
	const struct flash_schema_set *schemas; /* NULL: fetched from the server's /openapi/v3 */
	const char *lease_namespace;/* [the client's namespace] */
	const char *lease_name;     /* ["flash-operator"] */
	const char *identity;       /* [hostname_pid] */
	unsigned int lease_duration_s;   /* [15] */
	unsigned int renew_deadline_s;   /* [10] */
	unsigned int retry_period_ms;    /* [2000] */
	unsigned int resync_s;           /* [300] */
	k8s_log_fn log;
	void *log_userdata;
	/* Tests: a ready-made client configuration instead of kubeconfig. */
	const struct k8s_config *k8s_config;
	const struct k8s_client_opts *client_opts;
};

struct op_k8s_run;
struct op_lease_elector;

/* One round of leader election on Lease @ns/@name through @c (GET, then
 * the create or update op_lease_decide() asks for): 1 when @el may act
 * as leader now, 0 when not, -EINVAL. */
int op_k8s_lease_step(struct k8s_client *c, struct op_lease_elector *el, const char *ns, const char *name);

/* Starts Kubernetes mode: applies the CRDs, starts the Lease loop and
 * the watches (FlashServices, Deployments, Pods, EndpointSlices, Nodes),
 * each on its own thread and client.  0, or the errors of the client, the
 * configuration or op_k8s_crds_apply(). */
int op_k8s_run_start(const struct op_k8s_run_opts *opts, struct op_k8s_run **ret);
/* Publishes the provider API's services as FlashServices (k8s-provider.c)
 * from a thread of its own: at every op_k8s_run_kick() and resync, while
 * leader, @services lists them (op_provider_live_services(), the list
 * freed with op_service_list_free()).  0, -EINVAL, -EALREADY, -ENOMEM. */
int op_k8s_run_publish(struct op_k8s_run *r, int (*services)(void *ctx, struct op_service ***ret, size_t *ret_n),
		       void *ctx);
/* A new client of the run's configuration (a struct op_k8s_run as @run),
 * for a caller's own thread (the Web Shell's sessions, logs). */
int op_k8s_run_new_client(void *run, struct k8s_client **ret);
/* The OpenAPI schemas the run checks objects against (given or fetched
 * from the server at start); NULL before op_k8s_run_start(). */
const struct flash_schema_set *op_k8s_run_schemas(struct op_k8s_run *r);
/* Wakes the publisher (a struct op_k8s_run as @run): the store changed. */
void op_k8s_run_kick(void *run);
void op_k8s_run_publish_stats(struct op_k8s_run *r, struct op_k8s_publish_stats *ret);
/* The provider API's status of stored service @s (a struct op_k8s_run as
 * @run; op_provider_set_status()): its FlashService as the FlashService
 * watch last saw it (every replica watches: a follower answers too; no
 * request is sent), through op_k8s_service_status_view().  -ENOENT when
 * the watch has not seen it (not published yet), -EINVAL. */
int op_k8s_run_service_status(void *run, const struct op_service *s, struct op_service_status *ret);

/* Stops the threads (k8s_client_cancel) and frees everything. */
void op_k8s_run_stop(struct op_k8s_run *r);
bool op_k8s_run_is_leader(struct op_k8s_run *r);
void op_k8s_run_stats(struct op_k8s_run *r, struct op_k8s_stats *ret);

#endif
