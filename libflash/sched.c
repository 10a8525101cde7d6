/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GPU inventory and queueing: nodes sorted by name, workloads sorted by
 * id, and per GPU type one queue of the queued workloads sorted by their
 * admission sequence number.  A workload keeps its sequence number for
 * life, so a workload returned to its queue by a node's loss lands in
 * front of every workload admitted after it, and the relative order of
 * two queued workloads never changes.
 *
 * After every change the affected queues are "settled": positions
 * renumbered and reasons rewritten, each workload's version bumped only
 * when one of them changed.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <flash/sched.h>

#include "internal.h"
#include "names.h"

#define NODES_DEFAULT 10000u
#define WORKLOADS_DEFAULT 100000u
#define BOUND_MAX 1000000u

static const char *const sched_errors[] = {
	[FLASH_E_SCHED_NAME - FLASH_E_SCHED_BASE] = "node name, workload id, organization or GPU type is malformed",
	[FLASH_E_SCHED_COUNT - FLASH_E_SCHED_BASE] = "GPU count out of range",
	[FLASH_E_SCHED_NO_NODE - FLASH_E_SCHED_BASE] = "no node offers this GPU type",
	[FLASH_E_SCHED_TOO_LARGE - FLASH_E_SCHED_BASE] = "more GPUs asked than any node of the type offers",
	[FLASH_E_SCHED_CONFLICT - FLASH_E_SCHED_BASE] = "workload or slots already held otherwise",
	[FLASH_E_SCHED_FULL - FLASH_E_SCHED_BASE] = "scheduler holds as many nodes or workloads as allowed",
};

const char *flash__sched_strerror(int code)
{
	size_t i = (size_t)(code - FLASH_E_SCHED_BASE);

	return i < ARRAY_SIZE(sched_errors) ? sched_errors[i] : NULL;
}

struct node {
	char *name;
	char *gpu_type; /* NULL: offers none */
	uint32_t allocatable;
	bool smoke_passed, schedulable;
	uint64_t used;  /* bit i: slot i bound */
};

struct workload {
	char *id, *gpu_type, *organization;
	uint32_t count;
	uint64_t seq;               /* admission order */
	enum flash_sched_phase phase;
	uint32_t position;
	struct node *node;          /* BOUND */
	uint64_t slots;
	char note[FLASH_SCHED_REASON_MAX];   /* why it came back to the queue */
	char reason[FLASH_SCHED_REASON_MAX];
	uint64_t version;
};

struct queue {
	char *gpu_type;
	struct workload **items;    /* sorted by seq */
	size_t n, cap;
	size_t total;               /* workloads of the type held, queued or
				     * bound: cap >= total, so that returning
				     * bound ones to the queue never allocates */
};

struct flash_sched {
	uint32_t max_nodes, max_workloads;
	struct node **nodes;        /* sorted by name */
	size_t n_nodes, cap_nodes;
	struct workload **wls;      /* sorted by id */
	size_t n_wls, cap_wls;
	struct queue **queues;      /* sorted by type */
	size_t n_queues, cap_queues;
	uint64_t seq, clock;
};

/* ---------------------------------------------------------------- helpers */

static uint64_t slot_mask(uint32_t n)
{
	return n >= 64 ? UINT64_MAX : ((UINT64_C(1) << n) - 1);
}

static int grow(void *pp, size_t *cap, size_t need)
{
	void **p = pp;
	size_t c = *cap ? *cap : 8;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = reallocarray(*p, c, sizeof(void *));
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

static void insert_at(void *base, size_t *n, size_t i, void *item)
{
	void **a = base;

	memmove(a + i + 1, a + i, (*n - i) * sizeof(*a));
	a[i] = item;
	(*n)++;
}

static void remove_at(void *base, size_t *n, size_t i)
{
	void **a = base;

	memmove(a + i, a + i + 1, (*n - i - 1) * sizeof(*a));
	(*n)--;
}

static int cmp_node(const void *key, const void *elem)
{
	return strcmp(key, (*(struct node *const *)elem)->name);
}

static int cmp_wl(const void *key, const void *elem)
{
	return strcmp(key, (*(struct workload *const *)elem)->id);
}

static int cmp_queue(const void *key, const void *elem)
{
	return strcmp(key, (*(struct queue *const *)elem)->gpu_type);
}

static int cmp_seq(const void *key, const void *elem)
{
	uint64_t a = *(const uint64_t *)key, b = (*(struct workload *const *)elem)->seq;

	return a < b ? -1 : a > b;
}

static struct node *node_find(const struct flash_sched *s, const char *name, size_t *ret_i)
{
	bool found;
	size_t i = util_lower_bound(s->nodes, s->n_nodes, sizeof(*s->nodes), name, cmp_node, &found);

	if (ret_i)
		*ret_i = i;
	return found ? s->nodes[i] : NULL;
}

static struct workload *wl_find(const struct flash_sched *s, const char *id, size_t *ret_i)
{
	bool found;
	size_t i = util_lower_bound(s->wls, s->n_wls, sizeof(*s->wls), id, cmp_wl, &found);

	if (ret_i)
		*ret_i = i;
	return found ? s->wls[i] : NULL;
}

static struct queue *queue_find(const struct flash_sched *s, const char *type, size_t *ret_i)
{
	bool found;
	size_t i = util_lower_bound(s->queues, s->n_queues, sizeof(*s->queues), type, cmp_queue, &found);

	if (ret_i)
		*ret_i = i;
	return found ? s->queues[i] : NULL;
}

static bool id_valid(const char *s)
{
	return s && names_opaque_id_valid(s, strlen(s), FLASH_SCHED_ID_MAX);
}

static bool type_valid(const char *s)
{
	return s && s[0] && names_label_value_valid(s);
}

static void touch(struct flash_sched *s, struct workload *w)
{
	w->version = ++s->clock;
}

static void _printf_(3, 4) set_text(struct flash_sched *s, struct workload *w, const char *fmt, ...)
{
	char buf[FLASH_SCHED_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (strcmp(buf, w->reason) != 0) {
		memcpy(w->reason, buf, sizeof(buf));
		touch(s, w);
	}
}

/* Largest allocatable of the known nodes of @type (0: none), and the
 * first node by name that offers it (NULL when no node offers @type). */
static uint32_t capacity(const struct flash_sched *s, const char *type, const struct node **ret_node)
{
	const struct node *best = NULL;

	for (size_t i = 0; i < s->n_nodes; i++) {
		const struct node *n = s->nodes[i];

		if (n->gpu_type && strcmp(n->gpu_type, type) == 0 && (!best || n->allocatable > best->allocatable))
			best = n;
	}
	if (ret_node)
		*ret_node = best;
	return best ? best->allocatable : 0;
}

static uint32_t free_slots(const struct node *n)
{
	return n->allocatable - (uint32_t)__builtin_popcountll(n->used & slot_mask(n->allocatable));
}

static bool node_usable(const struct node *n, const char *type)
{
	return n->gpu_type && n->smoke_passed && n->schedulable && strcmp(n->gpu_type, type) == 0;
}

/* The usable node of @type with the fewest free slots >= @count (ties:
 * the first by name); NULL when none. */
static struct node *best_fit(const struct flash_sched *s, const char *type, uint32_t count)
{
	struct node *best = NULL;

	for (size_t i = 0; i < s->n_nodes; i++) {
		struct node *n = s->nodes[i];
		uint32_t f;

		if (!node_usable(n, type))
			continue;
		f = free_slots(n);
		if (f >= count && (!best || f < free_slots(best)))
			best = n;
	}
	return best;
}

/* ---------------------------------------------------------------- queues */

static int queue_get(struct flash_sched *s, const char *type, struct queue **ret)
{
	size_t i;
	struct queue *q = queue_find(s, type, &i);

	if (!q) {
		if (grow(&s->queues, &s->cap_queues, s->n_queues + 1) < 0)
			return -ENOMEM;
		q = calloc(1, sizeof(*q));
		if (!q || !(q->gpu_type = strdup(type))) {
			free(q);
			return -ENOMEM;
		}
		insert_at(s->queues, &s->n_queues, i, q);
	}
	*ret = q;
	return 0;
}

/* Puts @w (not queued) into its queue by sequence number.  The queue
 * exists and has room (wl_reserve()). */
static void queue_put(struct flash_sched *s, struct workload *w)
{
	struct queue *q = queue_find(s, w->gpu_type, NULL);
	size_t i = util_lower_bound(q->items, q->n, sizeof(*q->items), &w->seq, cmp_seq, NULL);

	insert_at(q->items, &q->n, i, w);
	if (w->phase != FLASH_SCHED_QUEUED || w->node) {
		w->phase = FLASH_SCHED_QUEUED;
		w->node = NULL;
		w->slots = 0;
		touch(s, w);
	}
}

static void queue_take(struct flash_sched *s, struct workload *w)
{
	struct queue *q = queue_find(s, w->gpu_type, NULL);
	bool found;
	size_t i = util_lower_bound(q->items, q->n, sizeof(*q->items), &w->seq, cmp_seq, &found);

	(void)s;
	if (found)
		remove_at(q->items, &q->n, i);
}

/* Positions and reasons of @q's workloads from the inventory as it is. */
static void queue_settle(struct flash_sched *s, struct queue *q)
{
	const struct node *big;
	uint32_t cap = capacity(s, q->gpu_type, &big);
	size_t ahead = 0;

	for (size_t i = 0; i < q->n; i++) {
		struct workload *w = q->items[i];
		const char *sep = w->note[0] ? "; " : "";

		if (w->position != i + 1) {
			w->position = (uint32_t)(i + 1);
			touch(s, w);
		}
		if (w->count > cap) {
			if (cap)
				set_text(s, w, "%s%sno node of type %s offers %" PRIu32 " GPUs now (largest: %" PRIu32
					 " on %s)", w->note, sep, w->gpu_type, w->count, cap, big->name);
			else
				set_text(s, w, "%s%sno node of type %s offers GPUs now", w->note, sep, w->gpu_type);
			continue;
		}
		if (ahead)
			set_text(s, w, "%s%swaiting behind %zu earlier workload%s of type %s", w->note, sep, ahead,
				 ahead == 1 ? "" : "s", w->gpu_type);
		else
			set_text(s, w, "%s%swaiting for %" PRIu32 " free GPU%s of type %s on one usable node", w->note,
				 sep, w->count, w->count == 1 ? "" : "s", w->gpu_type);
		ahead++;
	}
}

static void settle_all(struct flash_sched *s)
{
	for (size_t i = 0; i < s->n_queues; i++)
		queue_settle(s, s->queues[i]);
}

/* ---------------------------------------------------------------- lifetime */

int flash_sched_new(const struct flash_sched_opts *opts, struct flash_sched **ret)
{
	struct flash_sched *s;
	uint32_t mn, mw;

	if (!ret || !OPTS_VALID(opts, flash_sched_opts))
		return -EINVAL;
	mn = OPTS_GET(opts, max_nodes, 0);
	mw = OPTS_GET(opts, max_workloads, 0);
	if (mn > BOUND_MAX || mw > BOUND_MAX)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->max_nodes = mn ? mn : NODES_DEFAULT;
	s->max_workloads = mw ? mw : WORKLOADS_DEFAULT;
	*ret = s;
	return 0;
}

static void node_free(struct node *n)
{
	if (!n)
		return;
	free(n->name);
	free(n->gpu_type);
	free(n);
}

static void wl_free(struct workload *w)
{
	if (!w)
		return;
	free(w->id);
	free(w->gpu_type);
	free(w->organization);
	free(w);
}

void flash_sched_free(struct flash_sched *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_nodes; i++)
		node_free(s->nodes[i]);
	for (size_t i = 0; i < s->n_wls; i++)
		wl_free(s->wls[i]);
	for (size_t i = 0; i < s->n_queues; i++) {
		free(s->queues[i]->gpu_type);
		free(s->queues[i]->items);
		free(s->queues[i]);
	}
	free(s->nodes);
	free(s->wls);
	free(s->queues);
	free(s);
}

/* ---------------------------------------------------------------- nodes */

/* Bound workloads of @n that the change to (@type, @alloc) evicts: all
 * of them when the type changes, those holding a slot past @alloc when
 * it shrinks. */
static bool evicted(const struct workload *w, const struct node *n, const char *type, uint32_t alloc)
{
	if (w->phase != FLASH_SCHED_BOUND || w->node != n)
		return false;
	if (!type || strcmp(type, w->gpu_type) != 0)
		return true;
	return (w->slots & ~slot_mask(alloc)) != 0;
}

/* Returns @w (bound) to its queue with @note. */
static void _printf_(3, 4) requeue(struct flash_sched *s, struct workload *w, const char *fmt, ...)
{
	va_list ap;

	w->node->used &= ~w->slots;
	va_start(ap, fmt);
	vsnprintf(w->note, sizeof(w->note), fmt, ap);
	va_end(ap);
	queue_put(s, w);
}

int flash_sched_node_set(struct flash_sched *s, const struct flash_sched_node *node)
{
	const char *name, *type;
	uint32_t alloc;
	char *nname = NULL, *ntype = NULL;
	struct node *n;
	size_t at;
	int r, moved = 0;

	if (!s || !node || !OPTS_VALID(node, flash_sched_node))
		return -EINVAL;
	name = OPTS_GET(node, name, NULL);
	type = OPTS_GET(node, gpu_type, NULL);
	alloc = OPTS_GET(node, allocatable, 0);
	if (type && !type[0])
		type = NULL;
	if (!name || !names_dns_subdomain_valid(name) || (type && !type_valid(type)))
		return -FLASH_E_SCHED_NAME;
	if (alloc > FLASH_SCHED_SLOTS_MAX)
		return -FLASH_E_SCHED_COUNT;
	if (!type)
		alloc = 0;
	n = node_find(s, name, &at);
	if (!n && s->n_nodes >= s->max_nodes)
		return -FLASH_E_SCHED_FULL;
	if (type && !(ntype = strdup(type)))
		return -ENOMEM;
	if (!n) {
		r = -ENOMEM;
		if (grow(&s->nodes, &s->cap_nodes, s->n_nodes + 1) < 0 || !(nname = strdup(name)) ||
		    !(n = calloc(1, sizeof(*n))))
			goto out_free;
		n->name = TAKE_PTR(nname);
		insert_at(s->nodes, &s->n_nodes, at, n);
	}
	for (size_t i = 0; i < s->n_wls; i++) {
		struct workload *w = s->wls[i];

		if (!evicted(w, n, type, alloc))
			continue;
		if (!type || strcmp(type, w->gpu_type) != 0)
			requeue(s, w, "returned to the queue: node %s no longer offers GPU type %s", n->name,
				w->gpu_type);
		else
			requeue(s, w, "returned to the queue: node %s offers %" PRIu32 " GPUs of type %s now",
				n->name, alloc, w->gpu_type);
		moved++;
	}
	free(n->gpu_type);
	n->gpu_type = TAKE_PTR(ntype);
	n->allocatable = alloc;
	n->smoke_passed = OPTS_GET(node, smoke_passed, false);
	n->schedulable = OPTS_GET(node, schedulable, false);
	settle_all(s);
	return moved;

out_free:
	free(nname);
	free(ntype);
	return r;
}

int flash_sched_node_remove(struct flash_sched *s, const char *name)
{
	struct node *n;
	size_t at;
	int moved = 0;

	if (!s || !name)
		return -EINVAL;
	n = node_find(s, name, &at);
	if (!n)
		return -ENOENT;
	for (size_t i = 0; i < s->n_wls; i++) {
		struct workload *w = s->wls[i];

		if (w->phase == FLASH_SCHED_BOUND && w->node == n) {
			requeue(s, w, "returned to the queue: node %s removed", n->name);
			moved++;
		}
	}
	remove_at(s->nodes, &s->n_nodes, at);
	node_free(n);
	settle_all(s);
	return moved;
}

size_t flash_sched_node_count(const struct flash_sched *s)
{
	return s ? s->n_nodes : 0;
}

int flash_sched_node_get(const struct flash_sched *s, size_t index, struct flash_sched_node *ret, uint32_t *ret_free)
{
	const struct node *n;

	if (!s || !ret)
		return -EINVAL;
	if (index >= s->n_nodes)
		return -ERANGE;
	n = s->nodes[index];
	*ret = (struct flash_sched_node){
		.sz = sizeof(*ret),
		.name = n->name,
		.gpu_type = n->gpu_type,
		.allocatable = n->allocatable,
		.smoke_passed = n->smoke_passed,
		.schedulable = n->schedulable,
	};
	if (ret_free)
		*ret_free = free_slots(n);
	return 0;
}

/* ---------------------------------------------------------------- workloads */

struct req {
	const char *id, *type, *org;
	uint32_t count;
};

/* Checks @req's fields. */
static int req_check(const struct flash_sched_request *in, struct req *out, struct diag *diag)
{
	if (!OPTS_VALID(in, flash_sched_request))
		return -EINVAL;
	out->id = OPTS_GET(in, id, NULL);
	out->type = OPTS_GET(in, gpu_type, NULL);
	out->count = OPTS_GET(in, count, 0);
	out->org = OPTS_GET(in, organization, NULL);
	if (!id_valid(out->id) || !id_valid(out->org))
		return -FLASH_E_SCHED_NAME;
	if (!type_valid(out->type)) {
		diag_add_text(diag, DIAG_ERROR, "gpu_type", "sched-name", NULL,
			      "GPU type must be a non-empty label value");
		return -FLASH_E_SCHED_NAME;
	}
	if (out->count < 1 || out->count > FLASH_SCHED_SLOTS_MAX) {
		diag_add_text(diag, DIAG_ERROR, "gpu_count", "sched-count", NULL, "must be 1..%d GPUs, not %" PRIu32,
			      FLASH_SCHED_SLOTS_MAX, out->count);
		return -FLASH_E_SCHED_COUNT;
	}
	return 0;
}

/* Whether @q fits some known node of its type. */
static int req_fits(const struct flash_sched *s, const struct req *q, struct diag *diag)
{
	const struct node *big;
	uint32_t cap = capacity(s, q->type, &big);

	if (!big) {
		diag_add_text(diag, DIAG_ERROR, "gpu_type", "sched-no-node", NULL,
			      "no node offers GPU type %s (%zu nodes known)", q->type, s->n_nodes);
		return -FLASH_E_SCHED_NO_NODE;
	}
	if (q->count > cap) {
		diag_add_text(diag, DIAG_ERROR, "gpu_count", "sched-too-large", NULL,
			      "%" PRIu32 " GPUs of type %s asked on one node; the largest node of the type, %s, offers %" PRIu32,
			      q->count, q->type, big->name, cap);
		return -FLASH_E_SCHED_TOO_LARGE;
	}
	return 0;
}

static bool same_request(const struct workload *w, const struct req *q)
{
	return strcmp(w->gpu_type, q->type) == 0 && strcmp(w->organization, q->org) == 0 && w->count == q->count;
}

/* A new workload for @q, in the id index (room reserved by the caller). */
static int wl_add(struct flash_sched *s, const struct req *q, size_t at, struct workload **ret)
{
	struct workload *w = calloc(1, sizeof(*w));

	if (!w || !(w->id = strdup(q->id)) || !(w->gpu_type = strdup(q->type)) ||
	    !(w->organization = strdup(q->org))) {
		wl_free(w);
		return -ENOMEM;
	}
	w->count = q->count;
	w->seq = ++s->seq;
	queue_find(s, q->type, NULL)->total++;
	touch(s, w);
	insert_at(s->wls, &s->n_wls, at, w);
	*ret = w;
	return 0;
}

/* Room for one more workload of @type, in the index and in its queue. */
static int wl_reserve(struct flash_sched *s, const char *type)
{
	struct queue *q;
	int r;

	if (s->n_wls >= s->max_workloads)
		return -FLASH_E_SCHED_FULL;
	if (grow(&s->wls, &s->cap_wls, s->n_wls + 1) < 0)
		return -ENOMEM;
	r = queue_get(s, type, &q);
	return r < 0 ? r : grow(&q->items, &q->cap, q->total + 1);
}

int flash_sched_enqueue(struct flash_sched *s, const struct flash_sched_request *req, struct flash_diag *diag)
{
	struct diag *d = flash__diag(diag);
	struct workload *w;
	struct req q;
	size_t at;
	int r;

	if (!s || !req)
		return -EINVAL;
	r = req_check(req, &q, d);
	if (r < 0)
		return r;
	w = wl_find(s, q.id, &at);
	if (w) {
		if (same_request(w, &q))
			return 1;
		diag_add_text(d, DIAG_ERROR, "", "sched-conflict", NULL,
			      "workload %s is held for %" PRIu32 " GPUs of type %s (organization %s)", w->id,
			      w->count, w->gpu_type, w->organization);
		return -FLASH_E_SCHED_CONFLICT;
	}
	r = req_fits(s, &q, d);
	if (r < 0)
		return r;
	r = wl_reserve(s, q.type);
	if (r < 0)
		return r;
	r = wl_add(s, &q, at, &w);
	if (r < 0)
		return r;
	w->phase = FLASH_SCHED_QUEUED;
	queue_put(s, w);
	queue_settle(s, queue_find(s, w->gpu_type, NULL));
	return 0;
}

static void bind(struct flash_sched *s, struct workload *w, struct node *n, uint64_t slots)
{
	n->used |= slots;
	w->phase = FLASH_SCHED_BOUND;
	w->node = n;
	w->slots = slots;
	w->position = 0;
	w->note[0] = '\0';
	w->reason[0] = '\0';
	touch(s, w);
}

int flash_sched_adopt(struct flash_sched *s, const struct flash_sched_request *req, const char *node, uint64_t slots)
{
	struct workload *w;
	struct node *n;
	struct req q;
	size_t at;
	int r;

	if (!s || !req || !node)
		return -EINVAL;
	r = req_check(req, &q, NULL);
	if (r < 0)
		return r;
	n = node_find(s, node, NULL);
	if (!n)
		return -ENOENT;
	w = wl_find(s, q.id, &at);
	if (w)
		return same_request(w, &q) && w->node == n && w->slots == slots ? 1 : -FLASH_E_SCHED_CONFLICT;
	if (!n->gpu_type || strcmp(n->gpu_type, q.type) != 0 || (unsigned)__builtin_popcountll(slots) != q.count ||
	    (slots & ~slot_mask(n->allocatable)) || (slots & n->used))
		return -FLASH_E_SCHED_CONFLICT;
	r = wl_reserve(s, q.type);
	if (r < 0)
		return r;
	r = wl_add(s, &q, at, &w);
	if (r < 0)
		return r;
	bind(s, w, n, slots);
	settle_all(s);
	return 0;
}

int flash_sched_cancel(struct flash_sched *s, const char *id)
{
	struct workload *w;
	size_t at;

	if (!s || !id)
		return -EINVAL;
	w = wl_find(s, id, &at);
	if (!w)
		return -ENOENT;
	if (w->phase == FLASH_SCHED_BOUND)
		w->node->used &= ~w->slots;
	else
		queue_take(s, w);
	queue_find(s, w->gpu_type, NULL)->total--;
	remove_at(s->wls, &s->n_wls, at);
	settle_all(s);
	wl_free(w);
	return 0;
}

/* The @count lowest free slots of @n (which has them). */
static uint64_t pick_slots(const struct node *n, uint32_t count)
{
	uint64_t free = ~n->used & slot_mask(n->allocatable), got = 0;

	while (count--) {
		uint64_t low = free & -free;

		got |= low;
		free &= ~low;
	}
	return got;
}

int flash_sched_schedule(struct flash_sched *s)
{
	int bound = 0;

	if (!s)
		return -EINVAL;
	for (size_t qi = 0; qi < s->n_queues; qi++) {
		struct queue *q = s->queues[qi];
		uint32_t cap = capacity(s, q->gpu_type, NULL);
		size_t i = 0;

		while (i < q->n) {
			struct workload *w = q->items[i];
			struct node *n;

			if (w->count > cap) {
				i++; /* fits no node at all: passed over, keeps its place */
				continue;
			}
			n = best_fit(s, q->gpu_type, w->count);
			if (!n)
				break; /* FIFO: nobody of this type passes a head that waits for slots */
			remove_at(q->items, &q->n, i);
			bind(s, w, n, pick_slots(n, w->count));
			bound++;
		}
		queue_settle(s, q);
	}
	return bound;
}

static void state_of(const struct workload *w, struct flash_sched_state *ret)
{
	*ret = (struct flash_sched_state){
		.id = w->id,
		.gpu_type = w->gpu_type,
		.organization = w->organization,
		.count = w->count,
		.phase = w->phase,
		.position = w->phase == FLASH_SCHED_QUEUED ? w->position : 0,
		.node = w->node ? w->node->name : NULL,
		.slots = w->slots,
		.reason = w->reason,
		.version = w->version,
	};
}

int flash_sched_state(const struct flash_sched *s, const char *id, struct flash_sched_state *ret)
{
	const struct workload *w;

	if (!s || !id || !ret)
		return -EINVAL;
	w = wl_find(s, id, NULL);
	if (!w)
		return -ENOENT;
	state_of(w, ret);
	return 0;
}

size_t flash_sched_workload_count(const struct flash_sched *s)
{
	return s ? s->n_wls : 0;
}

int flash_sched_workload_get(const struct flash_sched *s, size_t index, struct flash_sched_state *ret)
{
	if (!s || !ret)
		return -EINVAL;
	if (index >= s->n_wls)
		return -ERANGE;
	state_of(s->wls[index], ret);
	return 0;
}
