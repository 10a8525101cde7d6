/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/sched.h> — GPU inventory and queueing (SPEC §3.7, Kubernetes).
 *
 * A scheduler holds an inventory of nodes (name, the GPU type they offer,
 * how many GPUs of it are allocatable, whether they passed the GPU smoke
 * test, whether they take new work) and one FIFO queue per GPU type of
 * workloads waiting for GPUs (id, type, count, organization).  A
 * workload's GPUs are all on one node: flash_sched_schedule() binds queue
 * heads to nodes with enough free slots and gives each bound workload
 * logical slot indexes 0..allocatable-1 on its node (the device plugin
 * grants the actual cards; the slots only keep the bookkeeping exact).
 *
 * The rules:
 *   - FIFO per type: a workload is bound only when every workload of its
 *     type admitted before it is bound, except those that cannot fit any
 *     known node of the type (see below).  Types never wait for each
 *     other.
 *   - A node is used only when it offers the type, passed the smoke test
 *     and is schedulable.  Among those, the one with the fewest free slots
 *     that still fits is taken (ties: the name), and the lowest free slots.
 *   - flash_sched_enqueue() refuses a workload asking for more GPUs than
 *     any known node of its type offers (-FLASH_E_SCHED_TOO_LARGE) or of a
 *     type no known node offers (-FLASH_E_SCHED_NO_NODE), instead of
 *     letting it wait forever.  A queued workload that no longer fits any
 *     node (its largest node went) keeps its place, is passed over and
 *     says why in its reason.
 *   - flash_sched_cancel() (the workload was deleted) frees its slots.
 *   - A node removed, or changed so that it no longer offers a bound
 *     workload's type or its slots (allocatable lowered), returns those
 *     workloads to their queue in admission order, that is in front of
 *     every workload admitted after them, with a reason naming the node.
 *     A node that stops being schedulable or loses its smoke-test label
 *     keeps the workloads bound to it (as Kubernetes keeps running pods;
 *     the caller cancels or requeues evicted ones) and gets no new ones.
 *
 * Every workload's state carries a version that grows each time its phase,
 * position, node, slots or reason change, so that a caller writes back
 * only what changed.  A scheduler is not thread-safe: callers serialize
 * access to one scheduler.
 */
#ifndef FLASH_SCHED_H
#define FLASH_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/common.h>
#include <flash/diag.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Domain errors of the scheduler (block FLASH_E_BASE + 600 = 6600). */
enum {
	FLASH_E_SCHED_BASE = FLASH_E_BASE + 600,
	FLASH_E_SCHED_NAME = FLASH_E_SCHED_BASE, /* node name, workload id, organization or GPU type malformed */
	FLASH_E_SCHED_COUNT,      /* GPU count out of range */
	FLASH_E_SCHED_NO_NODE,    /* no known node offers the GPU type */
	FLASH_E_SCHED_TOO_LARGE,  /* more GPUs than any node of the type offers */
	FLASH_E_SCHED_CONFLICT,   /* workload held with another request, or slots taken */
	FLASH_E_SCHED_FULL,       /* node or workload bound of the options reached */
	FLASH_E_SCHED_MAX_,       /* end of the block (not an error) */
};

/* Most GPUs (slots) one node offers and one workload asks for. */
#define FLASH_SCHED_SLOTS_MAX 64
/* Longest workload id and organization, in bytes. */
#define FLASH_SCHED_ID_MAX 253
/* Longest reason text, NUL included. */
#define FLASH_SCHED_REASON_MAX 160

struct flash_sched;

struct flash_sched_opts {
	size_t sz;
	/* Bounds on the nodes and on the workloads (queued and bound) held:
	 * default 10000 and 100000, at most 1000000 each. */
	uint32_t max_nodes;
	uint32_t max_workloads;
};

/* Creates an empty scheduler.  @opts may be NULL.  Errors: -EINVAL (bad
 * options), -ENOMEM.  *ret owned by the caller (flash_sched_free()). */
FLASH_API int flash_sched_new(const struct flash_sched_opts *opts, struct flash_sched **ret);

/* Frees @s and everything it holds; NULL is ignored. */
FLASH_API void flash_sched_free(struct flash_sched *s);

/* ---------------------------------------------------------------- nodes */

/* A node as the inventory sees it.  The strings are copied. */
struct flash_sched_node {
	size_t sz;
	const char *name;     /* a DNS-1123 subdomain (a Node's name) */
	const char *gpu_type; /* label value it offers; NULL or "": none */
	uint32_t allocatable; /* GPUs of gpu_type (0..FLASH_SCHED_SLOTS_MAX) */
	bool smoke_passed;    /* passed the GPU smoke test */
	bool schedulable;     /* Ready, not cordoned, no taint keeping GPU work off */
};

/* Adds node @node->name or replaces what is known of it.  A change that
 * takes a bound workload's type or slots away returns it to its queue.
 * Returns the number of workloads returned (>= 0), or -EINVAL (NULL, bad
 * sz), -FLASH_E_SCHED_NAME, -FLASH_E_SCHED_COUNT (allocatable too large),
 * -FLASH_E_SCHED_FULL (a new node past max_nodes), -ENOMEM; nothing
 * changes on error. */
FLASH_API int flash_sched_node_set(struct flash_sched *s, const struct flash_sched_node *node);

/* Removes node @name: its workloads go back to the front of their queues
 * (reason "node NAME removed").  Returns how many (>= 0), -EINVAL,
 * -ENOENT. */
FLASH_API int flash_sched_node_remove(struct flash_sched *s, const char *name);

/* Number of nodes, and node @index (sorted by name) with its free slots
 * (*ret_free, may be NULL).  Strings point into @s and stay valid until
 * its next modifying call.  get: -EINVAL, -ERANGE past the end. */
FLASH_API size_t flash_sched_node_count(const struct flash_sched *s);
FLASH_API int flash_sched_node_get(const struct flash_sched *s, size_t index, struct flash_sched_node *ret,
				   uint32_t *ret_free);

/* ---------------------------------------------------------------- workloads */

/* What a workload asks for.  The strings are copied. */
struct flash_sched_request {
	size_t sz;
	const char *id;           /* 1..253 bytes of [A-Za-z0-9._:-] */
	const char *gpu_type;     /* a non-empty label value */
	uint32_t count;           /* GPUs on one node, 1..FLASH_SCHED_SLOTS_MAX */
	const char *organization; /* same syntax as id */
};

/* Admits @req at the back of its type's queue.  Returns 0 (queued), 1
 * (the same request is already held, queued or bound: nothing changes),
 * or -EINVAL, -FLASH_E_SCHED_NAME, -FLASH_E_SCHED_COUNT,
 * -FLASH_E_SCHED_NO_NODE, -FLASH_E_SCHED_TOO_LARGE,
 * -FLASH_E_SCHED_CONFLICT (the id is held with another request: cancel
 * it first), -FLASH_E_SCHED_FULL, -ENOMEM.  A refusal is described in
 * @diag (may be NULL) with path "gpu_type" or "gpu_count", the numbers
 * and the largest node. */
FLASH_API FLASH_WUR int flash_sched_enqueue(struct flash_sched *s, const struct flash_sched_request *req,
					    struct flash_diag *diag);

/* Records a workload already bound to @node on slots @slots (bit i = slot
 * i; as many bits as @req->count), as an operator restarting finds it on
 * the cluster.  It is admitted after every workload held.  Returns 0, 1
 * (the same binding is held), -EINVAL, the errors of enqueue for @req,
 * -ENOENT (no such node), -FLASH_E_SCHED_CONFLICT (node of another type,
 * slots beyond allocatable or taken, id held otherwise).  The node's
 * smoke-test and schedulable flags are not checked: the workload runs. */
FLASH_API FLASH_WUR int flash_sched_adopt(struct flash_sched *s, const struct flash_sched_request *req,
					  const char *node, uint64_t slots);

/* Removes workload @id, queued or bound (its slots are freed).  0,
 * -EINVAL, -ENOENT. */
FLASH_API int flash_sched_cancel(struct flash_sched *s, const char *id);

/* Binds every queue head that fits, type by type, as described above.
 * Returns the number of workloads bound by this call (>= 0). */
FLASH_API int flash_sched_schedule(struct flash_sched *s);

enum flash_sched_phase {
	FLASH_SCHED_QUEUED = 1,
	FLASH_SCHED_BOUND = 2,
};

/* The state of one workload.  Strings point into @s and stay valid until
 * its next modifying call. */
struct flash_sched_state {
	const char *id;
	const char *gpu_type;
	const char *organization;
	uint32_t count;
	enum flash_sched_phase phase;
	uint32_t position;   /* QUEUED: 1-based place in its type's queue */
	const char *node;    /* BOUND: the node; NULL when queued */
	uint64_t slots;      /* BOUND: bit i set for logical slot i */
	/* QUEUED: why it waits ("waiting for 2 free GPUs of type a100",
	 * "returned to the queue: node gpu-1 removed", ...); BOUND: "". */
	const char *reason;
	uint64_t version;    /* grows with every change of the fields above */
};

/* The state of workload @id.  0, -EINVAL, -ENOENT. */
FLASH_API int flash_sched_state(const struct flash_sched *s, const char *id, struct flash_sched_state *ret);

/* Number of workloads, and workload @index (sorted by id).  get: -EINVAL,
 * -ERANGE past the end. */
FLASH_API size_t flash_sched_workload_count(const struct flash_sched *s);
FLASH_API int flash_sched_workload_get(const struct flash_sched *s, size_t index, struct flash_sched_state *ret);

#ifdef __cplusplus
}
#endif

#endif
