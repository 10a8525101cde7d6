/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The decisions of flash-operator's Kubernetes mode, as pure functions on
 * parsed objects (common/json.h trees of what the API server returned)
 * and plain structs: no HTTP, no clock of their own (times are passed in).
 * The reconcile loop calls them with what it lists and watches, and writes
 * what they build through the client of common/k8s.h.
 *
 *   - FlashService status: the conditions Ready, Progressing, Degraded,
 *     Suspended (and Queued for GPU services) with observedGeneration,
 *     reason and message, from the Deployment, its Pods, the
 *     EndpointSlices of its Service, the Service's LoadBalancer ingress
 *     (public services), the meter's suspension and the GPU queue;
 *   - terminal Pod failures (k8s-status.c);
 *   - the status object written through /status, each condition's
 *     lastTransitionTime kept while its status stays (metav1.Condition);
 *   - leader election on a coordination.k8s.io/v1 Lease
 *     (k8s-status-lease.c).
 */
#ifndef FLASH_OPERATOR_K8S_STATUS_H
#define FLASH_OPERATOR_K8S_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/meter.h>
#include <flash/sched.h>

#include "json.h"

/* ---------------------------------------------------------------- pods */

/* CrashLoopBackOff counts as terminal from this many restarts on. */
#define OP_K8S_CRASHLOOP_RESTARTS 5
/* An OOM kill within this many seconds of the container's start is
 * "OOMKilled at start": the memory limit is too small to start at all. */
#define OP_K8S_OOM_START_SECONDS 60

enum op_k8s_failure {
	OP_K8S_FAIL_NONE = 0,
	OP_K8S_FAIL_ERR_IMAGE_PULL,       /* ErrImagePull */
	OP_K8S_FAIL_IMAGE_PULL_BACKOFF,   /* ImagePullBackOff */
	OP_K8S_FAIL_CRASH_LOOP,           /* CrashLoopBackOff past the bound */
	OP_K8S_FAIL_CONFIG,               /* CreateContainerConfigError */
	OP_K8S_FAIL_OOM_AT_START,         /* OOMKilled within the start window */
};

struct op_k8s_pod_failure {
	enum op_k8s_failure kind;
	const char *reason;     /* the Kubernetes reason ("ErrImagePull"); NULL with NONE */
	const char *pod;        /* metadata.name, into the pod's tree */
	const char *container;  /* the container's name, into the pod's tree */
	bool init;              /* an init container */
	int64_t restarts;
	const char *message;    /* the kubelet's message ("" when none) */
};

/* The first terminal failure of Pod @pod (init containers first, then
 * containers, each in order), or kind NONE.  @crashloop_restarts 0 means
 * OP_K8S_CRASHLOOP_RESTARTS.  Never fails on a Pod without status. */
void op_k8s_pod_failure(const struct json_value *pod, uint32_t crashloop_restarts,
			struct op_k8s_pod_failure *ret);

/* ---------------------------------------------------------------- conditions */

enum op_k8s_cond_type {
	OP_K8S_COND_READY,
	OP_K8S_COND_PROGRESSING,
	OP_K8S_COND_DEGRADED,
	OP_K8S_COND_SUSPENDED,
	OP_K8S_COND_QUEUED,      /* GPU services only */
	OP_K8S_COND_N_,
};

struct op_k8s_condition {
	bool present;
	bool status;             /* "True" / "False" */
	char reason[64];         /* CamelCase, as metav1.Condition requires */
	char message[256];
};

/* What the status is computed from.  Trees belong to the caller. */
struct op_k8s_status_input {
	int64_t generation;             /* the FlashService's metadata.generation */
	uint32_t replicas;              /* requested (spec.replicas) */
	bool has_service;               /* ports declared: a Service is rendered */
	bool public;                    /* exposure public: LoadBalancer ingress needed */
	bool suspended;                 /* the meter's decision */
	const char *suspended_message;  /* its words ("weekly CPU limit reached until ...") */
	const struct json_value *deployment;   /* NULL: not created yet */
	const struct json_value *const *pods;  /* the Deployment's Pods */
	size_t n_pods;
	const struct json_value *service;      /* NULL: none (yet) */
	const struct json_value *const *slices;/* EndpointSlices labelled with the Service's name */
	size_t n_slices;
	const struct flash_sched_state *gpu;   /* NULL: no GPU */
	uint32_t crashloop_restarts;    /* 0: OP_K8S_CRASHLOOP_RESTARTS */
};

struct op_k8s_status {
	int64_t observed_generation;
	int32_t ready_replicas;
	int32_t available_replicas;
	bool endpoint_ready;            /* a ready endpoint (and ingress when public) */
	struct op_k8s_condition cond[OP_K8S_COND_N_];
};

/* The condition type's name ("Ready"). */
const char *op_k8s_cond_name(enum op_k8s_cond_type t);

/* Decides the status.  Ready is True only when the requested replicas
 * are available in a Deployment that observed its latest generation and,
 * with a Service, an endpoint of its EndpointSlices is ready (ready unset
 * counts as ready, as discovery/v1 says) and, when public, the Service
 * has a LoadBalancer ingress.  A suspended service is Ready False
 * (Suspended); a queued GPU service Ready False (Queued) with its
 * position; a terminal Pod failure or a Deployment past its progress
 * deadline makes Degraded True with the reason and the container.
 * Returns 0 or -EINVAL (NULL). */
int op_k8s_status_decide(const struct op_k8s_status_input *in, struct op_k8s_status *ret);

/* Writes the FlashService status object {"observedGeneration", "readyReplicas",
 * "conditions": [...]} with the one JSON emitter.  @old is the status the
 * object has now (NULL: none): a condition whose status did not change
 * keeps its lastTransitionTime; a new or changed one gets @now (Unix
 * seconds).  Returns 0 with *ret_json (NUL-terminated, freed by the
 * caller), -EINVAL, -ENOMEM, -ERANGE (@now out of range). */
int op_k8s_status_to_json(const struct op_k8s_status *st, const struct json_value *old, int64_t now,
			  char **ret_json, size_t *ret_len);

/* True when the status @st would write differs from @old in anything but
 * times (the reconcile loop skips the write otherwise). */
bool op_k8s_status_changed(const struct op_k8s_status *st, const struct json_value *old);

/* ---------------------------------------------------------------- usage records */

/*
 * FlashUsageRecord objects (flash.heterocloud.io/v1alpha1), one per
 * (organization, ISO week) and per (service, week), their status being
 * flash_meter_record_to_json()'s (k8s-status-usage.c).  A FlashService
 * carries OP_K8S_USAGE_FINALIZER from its first metered second, so that
 * when it is deleted the operator adds its last seconds to the week's
 * records before the object goes.
 */
#define OP_K8S_USAGE_FINALIZER "flash.heterocloud.io/usage"

/* The record's object name: "org.<id>.<yyyy>-w<ww>" or
 * "svc.<id>.<yyyy>-w<ww>" when the id is a DNS-1123 label, else
 * "orgh."/"svch." and the first 32 hex digits of the id's SHA-256 (ids
 * are opaque: upper case, ':' and '_' are not DNS): two ids never share a
 * name, and the name is a DNS-1123 subdomain.  @buf of
 * OP_K8S_USAGE_NAME_MAX + 1 bytes.  Returns its length, -EINVAL (id not
 * an opaque id, or @t out of range), -ENOSPC. */
#define OP_K8S_USAGE_NAME_MAX 77
int op_k8s_usage_record_name(bool service, const char *id, int64_t t, char *buf, size_t size);

/* The FlashUsageRecord object of @r in namespace @ns for a server-side
 * apply of metadata, labels (organization; "scope": organization or
 * service) and, separately, its status: *ret_object without status
 * (POST/apply), *ret_status the {"status": ...} body for /status.  Both
 * NUL-terminated, freed by the caller.  0, -EINVAL, -ENOMEM. */
int op_k8s_usage_record_objects(const struct flash_meter_record *r, const char *ns, char **ret_object,
				char **ret_status);

/* Adds @add (a service's seconds not yet counted: its last interval at
 * deletion) to the record status @old (a FlashUsageRecord's status tree),
 * saturating at INT64_MAX (then saturated: true) and moving accruedUntil
 * to @until when later.  Writes the new status object.  0, -EINVAL,
 * -EBADMSG (@old is not a usage record status), -ENOMEM. */
int op_k8s_usage_add(const struct json_value *old, const struct flash_meter_usage *add, int64_t until,
		     char **ret_json, size_t *ret_len);

enum op_k8s_finalizer_action {
	OP_K8S_FINALIZER_KEEP = 0,    /* nothing to change */
	OP_K8S_FINALIZER_ADD = 1,     /* live service without it: add it */
	OP_K8S_FINALIZER_RECORD = 2,  /* being deleted: write its last usage, then remove */
	OP_K8S_FINALIZER_REMOVE = 3,  /* being deleted and its usage is written: remove it */
};

/* What to do with the usage finalizer of FlashService @fs, given whether
 * its final usage has been written to the week's records. */
enum op_k8s_finalizer_action op_k8s_usage_finalizer(const struct json_value *fs, bool usage_written);

/* ---------------------------------------------------------------- Lease */

/*
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection does it: a candidate takes a Lease over only when the
 * record it sees (holder, renewTime, transitions) has not changed for
 * leaseDurationSeconds by ITS OWN clock since it first saw it, so clocks
 * set apart (skew) never matter; the holder counts itself leader only
 * until renew_deadline after it SENT its last successful write.  Every
 * write carries the resourceVersion read, so of two racing writes one
 * gets 409.  Safe while renew_deadline < duration (less the clocks' rate
 * difference over one duration).
 *
 * Times are microseconds of the candidate's own clock (CLOCK_REALTIME is
 * fine: only differences count).  acquireTime and renewTime are written
 * as MicroTime ("2026-11-29T11:19:17.457240Z").
 */
#define OP_LEASE_ID_MAX 253

struct op_lease_elector {
	char identity[OP_LEASE_ID_MAX + 1];
	int64_t duration_us;        /* leaseDurationSeconds written */
	int64_t renew_deadline_us;  /* < duration_us */
	/* What was last seen. */
	bool seen;                  /* a Lease was read */
	char seen_holder[OP_LEASE_ID_MAX + 1];
	char seen_renew[40];
	int64_t seen_transitions;
	int64_t seen_at_us;         /* own clock, when that record was first seen */
	int64_t leader_until_us;    /* own clock; 0: not leader */
	int64_t acquire_time_us;    /* Lease time of our acquisition (kept across renewals) */
};

enum op_lease_action {
	OP_LEASE_WAIT = 0,      /* another holder's lease is live: do nothing */
	OP_LEASE_CREATE = 1,    /* no Lease: POST *ret_body */
	OP_LEASE_UPDATE = 2,    /* acquire or renew: PUT *ret_body (carries resourceVersion) */
};

/* Sets up an elector.  @duration_s 1..3600, @renew_deadline_s 1..duration-1.
 * 0 or -EINVAL (identity empty, too long, bad times). */
int op_lease_elector_init(struct op_lease_elector *e, const char *identity, int32_t duration_s,
			  int32_t renew_deadline_s);

/* Decides from @lease (the object GET returned; NULL for 404) at @now_us
 * (own clock) and @wall_us (Unix microseconds for acquireTime/renewTime).
 * @ns, @name: the Lease's.  Returns an enum op_lease_action with
 * *ret_body (the object to send, NUL-terminated, freed by the caller; NULL
 * with WAIT), or -EINVAL, -ENOMEM, -EBADMSG (@lease is not a Lease: no
 * spec, no resourceVersion).  With WAIT, and whenever the record seen is
 * another holder's, leadership is given up at once. */
int op_lease_decide(struct op_lease_elector *e, const struct json_value *lease, const char *ns,
		    const char *name, int64_t now_us, int64_t wall_us, char **ret_body);

/* The write sent at @sent_us (own clock, read before sending) succeeded
 * and the server answered @lease: leader until @sent_us + renew_deadline.
 * 0, -EINVAL, -EBADMSG. */
int op_lease_written(struct op_lease_elector *e, const struct json_value *lease, int64_t sent_us);

/* A failed write (409, timeout, 5xx) needs no call: leadership lasts
 * until the deadline of the last success and no longer. */
/* Whether @e may act as leader at @now_us (own clock). */
bool op_lease_is_leader(const struct op_lease_elector *e, int64_t now_us);

/* Parses a MicroTime or Time ("...T11:19:17.457240Z", "...T11:19:17Z") into
 * Unix microseconds; -EINVAL otherwise. */
int op_k8s_parse_micro_time(const char *text, int64_t *ret_us);
/* Formats Unix microseconds as MicroTime into @buf (>= 28 bytes). */
int op_k8s_format_micro_time(int64_t us, char *buf, size_t size);

#endif
