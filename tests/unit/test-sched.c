/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GPU inventory and queueing: FIFO per type, no head-of-line blocking
 * across types, node loss returning workloads to the front, slot release
 * on delete, over-size requests refused, smoke-test label and
 * schedulable changes, adoption, versions, and a property test over
 * random event sequences. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <flash/sched.h>

#include "diag-helpers.h"
#include "helpers.h"

DIAG_TEST_HELPERS(flash)

/* x must return exactly v (>= 0). */
#define ASSERT_EQ(x, v, what)                                                                     \
	do {                                                                                      \
		long _r = (long)(x), _v = (long)(v);                                              \
		cr_assert(_r == _v, "%s: %s returned %ld (%s), expected %ld", (what), #x, _r,     \
			  _r < 0 ? test_strerror(_r) : "", _v);                                   \
	} while (0)

/* The first error of @d is at @path with @code and says @text. */
static void assert_diag(const struct flash_diag *d, const char *path, const char *code, const char *text)
{
	const struct flash_diag_entry *e = flash_diag_first_error(d);

	cr_assert(e, "no error in the diag");
	cr_assert_str_eq(e->path, path, "path %s, expected %s", e->path, path);
	cr_assert_str_eq(e->code, code, "code %s, expected %s", e->code, code);
	cr_assert(strstr(e->message, text), "message \"%s\" lacks \"%s\"", e->message, text);
}

static struct flash_sched *sched(void)
{
	struct flash_sched *s = NULL;

	ASSERT_OK(flash_sched_new(NULL, &s), "flash_sched_new");
	return s;
}

static int node(struct flash_sched *s, const char *name, const char *type, uint32_t alloc, bool smoke, bool ready)
{
	FLASH_OPTS(flash_sched_node, n, .name = name, .gpu_type = type, .allocatable = alloc, .smoke_passed = smoke,
		   .schedulable = ready);

	return flash_sched_node_set(s, &n);
}

static int enq(struct flash_sched *s, const char *id, const char *type, uint32_t count)
{
	FLASH_OPTS(flash_sched_request, r, .id = id, .gpu_type = type, .count = count, .organization = "org-1");

	return flash_sched_enqueue(s, &r, NULL);
}

static struct flash_sched_state st(struct flash_sched *s, const char *id)
{
	struct flash_sched_state x;

	ASSERT_OK(flash_sched_state(s, id, &x), id);
	return x;
}

static void assert_queued(struct flash_sched *s, const char *id, uint32_t pos)
{
	struct flash_sched_state x = st(s, id);

	cr_assert_eq(x.phase, FLASH_SCHED_QUEUED, "%s: phase %d, expected queued (node %s)", id, x.phase,
		     x.node ? x.node : "-");
	cr_assert_eq(x.position, pos, "%s: position %" PRIu32 ", expected %" PRIu32, id, x.position, pos);
	cr_assert_null(x.node, "%s: queued with a node", id);
	cr_assert_eq(x.slots, 0, "%s: queued with slots %#" PRIx64, id, x.slots);
	cr_assert(x.reason[0], "%s: queued without a reason", id);
}

static void assert_bound(struct flash_sched *s, const char *id, const char *nodename, uint64_t slots)
{
	struct flash_sched_state x = st(s, id);

	cr_assert_eq(x.phase, FLASH_SCHED_BOUND, "%s: phase %d (reason %s), expected bound", id, x.phase, x.reason);
	cr_assert_str_eq(x.node, nodename, "%s: on %s, expected %s", id, x.node, nodename);
	cr_assert_eq(x.slots, slots, "%s: slots %#" PRIx64 ", expected %#" PRIx64, id, x.slots, slots);
	cr_assert_eq(x.position, 0, "%s: bound with a position", id);
	cr_assert_str_eq(x.reason, "", "%s: bound with reason %s", id, x.reason);
}

static uint32_t node_free(struct flash_sched *s, const char *name)
{
	for (size_t i = 0; i < flash_sched_node_count(s); i++) {
		struct flash_sched_node n;
		uint32_t f;

		ASSERT_OK(flash_sched_node_get(s, i, &n, &f), "node_get");
		if (strcmp(n.name, name) == 0)
			return f;
	}
	cr_assert_fail("no node %s", name);
	return 0;
}

Test(sched, fifo_per_type)
{
	struct flash_sched *s = sched();

	ASSERT_OK(node(s, "gpu-1", "a100", 2, true, true), "node");
	ASSERT_EQ(enq(s, "w1", "a100", 2), 0, "enqueue");
	ASSERT_EQ(enq(s, "w2", "a100", 1), 0, "enqueue");
	ASSERT_EQ(enq(s, "w3", "a100", 1), 0, "enqueue");
	assert_queued(s, "w1", 1);
	assert_queued(s, "w3", 3);
	ASSERT_EQ(flash_sched_schedule(s), 1, "one bound");
	assert_bound(s, "w1", "gpu-1", 0x3);
	assert_queued(s, "w2", 1);
	assert_queued(s, "w3", 2);
	cr_assert(strstr(st(s, "w2").reason, "waiting for 1 free GPU of type a100"), "reason: %s", st(s, "w2").reason);
	cr_assert(strstr(st(s, "w3").reason, "behind 1 earlier workload"), "reason: %s", st(s, "w3").reason);
	ASSERT_EQ(flash_sched_schedule(s), 0, "nothing fits");

	/* Slot release on delete: w1's two slots go to w2 and w3, in order. */
	ASSERT_OK(flash_sched_cancel(s, "w1"), "cancel");
	ASSERT_EQ(node_free(s, "gpu-1"), 2, "slots released");
	ASSERT_ERR(flash_sched_state(s, "w1", &(struct flash_sched_state){ 0 }), -ENOENT, "gone");
	ASSERT_EQ(flash_sched_schedule(s), 2, "two bound");
	assert_bound(s, "w2", "gpu-1", 0x1);
	assert_bound(s, "w3", "gpu-1", 0x2);
	ASSERT_EQ(node_free(s, "gpu-1"), 0, "full");
	ASSERT_ERR(flash_sched_cancel(s, "w1"), -ENOENT, "twice");
	flash_sched_free(s);
}

Test(sched, head_blocks_its_own_type_only)
{
	struct flash_sched *s = sched();

	ASSERT_OK(node(s, "gpu-1", "a100", 4, true, true), "node");
	ASSERT_OK(node(s, "gpu-2", "h100", 1, true, true), "node");
	ASSERT_EQ(enq(s, "big", "a100", 2), 0, "enqueue");
	ASSERT_EQ(enq(s, "bigger", "a100", 3), 0, "enqueue");
	ASSERT_EQ(enq(s, "small", "a100", 1), 0, "enqueue");
	ASSERT_EQ(enq(s, "other", "h100", 1), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 2, "big and other bound");
	assert_bound(s, "big", "gpu-1", 0x3);
	/* Two a100 slots are free and "small" would fit, but FIFO keeps it
	 * behind "bigger", which waits for three. */
	assert_queued(s, "bigger", 1);
	assert_queued(s, "small", 2);
	ASSERT_EQ(node_free(s, "gpu-1"), 2, "two free");
	/* The h100 queue never waited for the a100 head. */
	assert_bound(s, "other", "gpu-2", 0x1);
	ASSERT_OK(flash_sched_cancel(s, "big"), "cancel");
	ASSERT_EQ(flash_sched_schedule(s), 2, "both a100 bound");
	assert_bound(s, "bigger", "gpu-1", 0x7);
	assert_bound(s, "small", "gpu-1", 0x8);
	flash_sched_free(s);
}

Test(sched, best_fit_and_lowest_slots)
{
	struct flash_sched *s = sched();

	ASSERT_OK(node(s, "gpu-a", "a100", 8, true, true), "node");
	ASSERT_OK(node(s, "gpu-b", "a100", 2, true, true), "node");
	ASSERT_EQ(enq(s, "w1", "a100", 2), 0, "enqueue");
	ASSERT_EQ(enq(s, "w2", "a100", 3), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 2, "bound");
	/* w1 fills the small node, keeping the large one whole for w2. */
	assert_bound(s, "w1", "gpu-b", 0x3);
	assert_bound(s, "w2", "gpu-a", 0x7);
	ASSERT_EQ(enq(s, "w3", "a100", 1), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 1, "bound");
	assert_bound(s, "w3", "gpu-a", 0x8);
	flash_sched_free(s);
}

Test(sched, node_loss_returns_workloads_to_the_front)
{
	struct flash_sched *s = sched();

	ASSERT_OK(node(s, "gpu-1", "a100", 2, true, true), "node");
	ASSERT_OK(node(s, "gpu-2", "a100", 2, true, true), "node");
	ASSERT_EQ(enq(s, "w1", "a100", 1), 0, "enqueue");
	ASSERT_EQ(enq(s, "w2", "a100", 1), 0, "enqueue");
	ASSERT_EQ(enq(s, "w3", "a100", 2), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 3, "bound");
	assert_bound(s, "w1", "gpu-1", 0x1);
	assert_bound(s, "w2", "gpu-1", 0x2);
	assert_bound(s, "w3", "gpu-2", 0x3);
	ASSERT_EQ(enq(s, "w4", "a100", 1), 0, "enqueue");
	ASSERT_EQ(enq(s, "w5", "a100", 1), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 0, "full");

	ASSERT_EQ(flash_sched_node_remove(s, "gpu-1"), 2, "two returned");
	/* Admitted first, so in front of w4 and w5, in their own order. */
	assert_queued(s, "w1", 1);
	assert_queued(s, "w2", 2);
	assert_queued(s, "w4", 3);
	assert_queued(s, "w5", 4);
	cr_assert(strstr(st(s, "w1").reason, "node gpu-1 removed"), "reason: %s", st(s, "w1").reason);
	cr_assert(!strstr(st(s, "w4").reason, "removed"), "reason: %s", st(s, "w4").reason);
	assert_bound(s, "w3", "gpu-2", 0x3);
	ASSERT_ERR(flash_sched_node_remove(s, "gpu-1"), -ENOENT, "twice");

	ASSERT_OK(node(s, "gpu-3", "a100", 3, true, true), "node");
	ASSERT_EQ(flash_sched_schedule(s), 3, "bound");
	assert_bound(s, "w1", "gpu-3", 0x1);
	assert_bound(s, "w2", "gpu-3", 0x2);
	assert_bound(s, "w4", "gpu-3", 0x4);
	assert_queued(s, "w5", 1);
	cr_assert(!strstr(st(s, "w5").reason, "removed"), "reason: %s", st(s, "w5").reason);
	flash_sched_free(s);
}

Test(sched, oversize_and_unknown_type_refused)
{
	struct flash_sched *s = sched();
	struct flash_diag *d = NULL;
	FLASH_OPTS(flash_sched_request, big, .id = "big", .gpu_type = "a100", .count = 8, .organization = "org-1");
	FLASH_OPTS(flash_sched_request, odd, .id = "odd", .gpu_type = "t4", .count = 1, .organization = "org-1");

	ASSERT_OK(flash_diag_new(&d), "diag");
	ASSERT_OK(node(s, "gpu-1", "a100", 4, true, true), "node");
	ASSERT_OK(node(s, "gpu-2", "a100", 2, false, false), "node");
	ASSERT_ERR(flash_sched_enqueue(s, &big, d), -FLASH_E_SCHED_TOO_LARGE, "8 > 4");
	assert_diag(d, "gpu_count", "sched-too-large",
		    "8 GPUs of type a100 asked on one node; the largest node of the type, gpu-1, offers 4");
	flash_diag_reset(d);
	ASSERT_ERR(flash_sched_enqueue(s, &odd, d), -FLASH_E_SCHED_NO_NODE, "no t4 node");
	assert_diag(d, "gpu_type", "sched-no-node", "no node offers GPU type t4 (2 nodes known)");
	ASSERT_EQ(flash_sched_workload_count(s), 0, "nothing held");
	cr_assert_str_eq(flash_strerror(-FLASH_E_SCHED_TOO_LARGE), "more GPUs asked than any node of the type offers");

	/* Capacity counts nodes that are not usable yet: a node joining
	 * before its smoke test has run is worth waiting for. */
	big.count = 4;
	ASSERT_OK(node(s, "gpu-1", "a100", 4, false, true), "node");
	ASSERT_EQ(flash_sched_enqueue(s, &big, d), 0, "4 fits gpu-1 once it passes");
	flash_diag_free(d);
	flash_sched_free(s);
}

Test(sched, passed_over_when_capacity_shrinks)
{
	struct flash_sched *s = sched();

	ASSERT_OK(node(s, "gpu-1", "a100", 4, true, true), "node");
	ASSERT_OK(node(s, "gpu-2", "a100", 1, true, true), "node");
	ASSERT_OK(node(s, "gpu-3", "a100", 4, true, true), "node");
	ASSERT_EQ(enq(s, "fill1", "a100", 4), 0, "enqueue");
	ASSERT_EQ(enq(s, "fill3", "a100", 4), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 2, "bound");
	ASSERT_EQ(enq(s, "w4", "a100", 4), 0, "enqueue");
	ASSERT_EQ(enq(s, "w1", "a100", 1), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 0, "w4 holds the line");
	assert_queued(s, "w1", 2);
	/* Both four-GPU nodes go: w4 can fit no node left, so it keeps its
	 * place but no longer holds the line. */
	ASSERT_EQ(flash_sched_node_remove(s, "gpu-1"), 1, "fill1 returned");
	ASSERT_EQ(flash_sched_node_remove(s, "gpu-3"), 1, "fill3 returned");
	ASSERT_EQ(flash_sched_schedule(s), 1, "w1 bound");
	assert_bound(s, "w1", "gpu-2", 0x1);
	assert_queued(s, "fill1", 1);
	assert_queued(s, "fill3", 2);
	assert_queued(s, "w4", 3);
	cr_assert(strstr(st(s, "w4").reason, "no node of type a100 offers 4 GPUs now (largest: 1 on gpu-2)"),
		  "reason: %s", st(s, "w4").reason);
	cr_assert(strstr(st(s, "fill1").reason, "node gpu-1 removed; no node of type a100 offers 4"), "reason: %s",
		  st(s, "fill1").reason);
	flash_sched_free(s);
}

Test(sched, smoke_label_and_schedulable)
{
	struct flash_sched *s = sched();

	ASSERT_OK(node(s, "gpu-1", "a100", 2, false, true), "no smoke label");
	ASSERT_EQ(enq(s, "w1", "a100", 1), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 0, "never on a node without the smoke-test label");
	assert_queued(s, "w1", 1);
	ASSERT_OK(node(s, "gpu-1", "a100", 2, true, false), "labelled, not ready");
	ASSERT_EQ(flash_sched_schedule(s), 0, "not schedulable");
	ASSERT_OK(node(s, "gpu-1", "a100", 2, true, true), "labelled and ready");
	ASSERT_EQ(flash_sched_schedule(s), 1, "bound");
	assert_bound(s, "w1", "gpu-1", 0x1);

	/* Losing the label or readiness keeps what runs, takes nothing new. */
	ASSERT_EQ(node(s, "gpu-1", "a100", 2, false, true), 0, "label removed");
	ASSERT_EQ(enq(s, "w2", "a100", 1), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 0, "no new work");
	assert_bound(s, "w1", "gpu-1", 0x1);
	ASSERT_EQ(node(s, "gpu-1", "a100", 2, true, false), 0, "tainted");
	ASSERT_EQ(flash_sched_schedule(s), 0, "no new work");
	assert_bound(s, "w1", "gpu-1", 0x1);
	ASSERT_EQ(node(s, "gpu-1", "a100", 2, true, true), 0, "back");
	ASSERT_EQ(flash_sched_schedule(s), 1, "bound");
	assert_bound(s, "w2", "gpu-1", 0x2);
	flash_sched_free(s);
}

Test(sched, type_change_and_shrink_return_workloads)
{
	struct flash_sched *s = sched();

	ASSERT_OK(node(s, "gpu-1", "a100", 4, true, true), "node");
	ASSERT_EQ(enq(s, "w1", "a100", 2), 0, "enqueue");
	ASSERT_EQ(enq(s, "w2", "a100", 1), 0, "enqueue");
	ASSERT_EQ(enq(s, "w3", "a100", 1), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 3, "bound");
	assert_bound(s, "w3", "gpu-1", 0x8);
	/* The device plugin now offers three cards: only the holder of slot
	 * 3 goes back. */
	ASSERT_EQ(node(s, "gpu-1", "a100", 3, true, true), 1, "one returned");
	assert_queued(s, "w3", 1);
	cr_assert(strstr(st(s, "w3").reason, "node gpu-1 offers 3 GPUs of type a100 now"), "reason: %s",
		  st(s, "w3").reason);
	assert_bound(s, "w1", "gpu-1", 0x3);
	assert_bound(s, "w2", "gpu-1", 0x4);
	ASSERT_EQ(node_free(s, "gpu-1"), 0, "three used");
	/* Relabelled to another type: everything on it goes back. */
	ASSERT_EQ(node(s, "gpu-1", "h100", 3, true, true), 2, "two returned");
	assert_queued(s, "w1", 1);
	assert_queued(s, "w2", 2);
	assert_queued(s, "w3", 3);
	cr_assert(strstr(st(s, "w1").reason, "node gpu-1 no longer offers GPU type a100"), "reason: %s",
		  st(s, "w1").reason);
	ASSERT_EQ(node_free(s, "gpu-1"), 3, "all free");
	ASSERT_EQ(flash_sched_schedule(s), 0, "no a100 node");
	/* GPU label removed: the node offers nothing. */
	ASSERT_EQ(node(s, "gpu-1", NULL, 3, true, true), 0, "no type");
	ASSERT_EQ(node_free(s, "gpu-1"), 0, "no slots");
	flash_sched_free(s);
}

Test(sched, adopt_restores_bindings)
{
	struct flash_sched *s = sched();
	FLASH_OPTS(flash_sched_request, r, .id = "w1", .gpu_type = "a100", .count = 2, .organization = "org-1");

	ASSERT_OK(node(s, "gpu-1", "a100", 4, false, false), "node");
	ASSERT_EQ(flash_sched_adopt(s, &r, "gpu-1", 0x6), 0, "adopt");
	assert_bound(s, "w1", "gpu-1", 0x6);
	ASSERT_EQ(flash_sched_adopt(s, &r, "gpu-1", 0x6), 1, "same binding");
	ASSERT_EQ(enq(s, "w1", "a100", 2), 1, "enqueue of a bound workload: nothing changes");
	ASSERT_ERR(flash_sched_adopt(s, &r, "gpu-1", 0x3), -FLASH_E_SCHED_CONFLICT, "other slots");
	r.id = "w2";
	ASSERT_ERR(flash_sched_adopt(s, &r, "gpu-1", 0x3), -FLASH_E_SCHED_CONFLICT, "slot 1 taken");
	ASSERT_ERR(flash_sched_adopt(s, &r, "gpu-1", 0x18), -FLASH_E_SCHED_CONFLICT, "slot 4 past allocatable");
	ASSERT_ERR(flash_sched_adopt(s, &r, "gpu-1", 0x1), -FLASH_E_SCHED_CONFLICT, "one slot for two GPUs");
	ASSERT_ERR(flash_sched_adopt(s, &r, "gpu-9", 0x9), -ENOENT, "no node");
	ASSERT_EQ(flash_sched_adopt(s, &r, "gpu-1", 0x9), 0, "adopt");
	ASSERT_EQ(node_free(s, "gpu-1"), 0, "full");
	ASSERT_EQ(flash_sched_workload_count(s), 2, "two held");
	flash_sched_free(s);
}

Test(sched, versions_change_only_with_state)
{
	struct flash_sched *s = sched();
	uint64_t v1, v2;

	ASSERT_OK(node(s, "gpu-1", "a100", 1, true, true), "node");
	ASSERT_EQ(enq(s, "w1", "a100", 1), 0, "enqueue");
	ASSERT_EQ(enq(s, "w2", "a100", 1), 0, "enqueue");
	ASSERT_EQ(flash_sched_schedule(s), 1, "bound");
	v1 = st(s, "w1").version;
	v2 = st(s, "w2").version;
	ASSERT_EQ(flash_sched_schedule(s), 0, "nothing");
	ASSERT_OK(node(s, "gpu-1", "a100", 1, true, true), "same node again");
	ASSERT_EQ(enq(s, "w1", "a100", 1), 1, "same request");
	cr_assert_eq(st(s, "w1").version, v1, "w1 unchanged");
	cr_assert_eq(st(s, "w2").version, v2, "w2 unchanged");
	ASSERT_OK(flash_sched_cancel(s, "w1"), "cancel");
	ASSERT_EQ(flash_sched_schedule(s), 1, "bound");
	cr_assert_gt(st(s, "w2").version, v2, "w2 bound: new version");
	flash_sched_free(s);
}

Test(sched, bad_input)
{
	struct flash_sched *s = sched();
	struct flash_sched *t = NULL;
	struct flash_sched_state x;
	FLASH_OPTS(flash_sched_opts, o, .max_nodes = 1, .max_workloads = 1);
	FLASH_OPTS(flash_sched_opts, huge, .max_nodes = 2000000);
	FLASH_OPTS(flash_sched_request, r, .id = "w1", .gpu_type = "a100", .count = 1, .organization = "org 1");
	struct flash_sched_node n = { .sz = 1 };

	ASSERT_ERR(flash_sched_new(&huge, &t), -EINVAL, "bound above 1000000");
	ASSERT_ERR(flash_sched_new(NULL, NULL), -EINVAL, "no ret");
	cr_assert_null(t, "ret untouched");
	ASSERT_ERR(flash_sched_node_set(s, &n), -EINVAL, "sz too small");
	ASSERT_ERR(node(s, "Gpu_1", "a100", 1, true, true), -FLASH_E_SCHED_NAME, "not a subdomain");
	ASSERT_ERR(node(s, "gpu-1", "a 100", 1, true, true), -FLASH_E_SCHED_NAME, "not a label value");
	ASSERT_ERR(node(s, "gpu-1", "a100", FLASH_SCHED_SLOTS_MAX + 1, true, true), -FLASH_E_SCHED_COUNT, "65");
	ASSERT_EQ(flash_sched_node_count(s), 0, "nothing added");
	ASSERT_OK(node(s, "gpu-1", "a100", FLASH_SCHED_SLOTS_MAX, true, true), "64 slots");
	ASSERT_ERR(flash_sched_enqueue(s, &r, NULL), -FLASH_E_SCHED_NAME, "organization with a space");
	r.organization = "org-1";
	r.count = 0;
	ASSERT_ERR(flash_sched_enqueue(s, &r, NULL), -FLASH_E_SCHED_COUNT, "zero GPUs");
	r.count = 1;
	r.gpu_type = "";
	ASSERT_ERR(flash_sched_enqueue(s, &r, NULL), -FLASH_E_SCHED_NAME, "empty type");
	r.gpu_type = "a100";
	ASSERT_EQ(flash_sched_enqueue(s, &r, NULL), 0, "enqueue");
	r.count = 2;
	ASSERT_ERR(flash_sched_enqueue(s, &r, NULL), -FLASH_E_SCHED_CONFLICT, "same id, other count");
	ASSERT_ERR(flash_sched_state(s, "w9", &x), -ENOENT, "unknown");
	ASSERT_ERR(flash_sched_workload_get(s, 1, &x), -ERANGE, "past the end");
	ASSERT_OK(flash_sched_workload_get(s, 0, &x), "first");
	cr_assert_str_eq(x.id, "w1");
	cr_assert_str_eq(x.organization, "org-1");
	ASSERT_ERR(flash_sched_node_get(s, 1, &n, NULL), -ERANGE, "past the end");
	flash_sched_free(s);

	ASSERT_OK(flash_sched_new(&o, &s), "bounded");
	ASSERT_OK(node(s, "gpu-1", "a100", 1, true, true), "node");
	ASSERT_ERR(node(s, "gpu-2", "a100", 1, true, true), -FLASH_E_SCHED_FULL, "second node");
	ASSERT_EQ(enq(s, "w1", "a100", 1), 0, "enqueue");
	ASSERT_ERR(enq(s, "w2", "a100", 1), -FLASH_E_SCHED_FULL, "second workload");
	flash_sched_free(s);
	flash_sched_free(NULL);
}

/* ---------------------------------------------------------------- property */

#define P_NODES 6
#define P_WLS 40
static const char *const p_types[] = { "a100", "h100" };

struct p_node {
	bool present;
	const char *type;
	uint32_t alloc;
	bool smoke, ready;
};

struct p_wl {
	bool held;
	uint64_t admitted;    /* the test's own admission counter */
	const char *type;
	uint32_t count;
	enum flash_sched_phase phase;
	char node[16];
};

static uint64_t rnd_state = 0x9e3779b97f4a7c15u;

static uint32_t rnd(uint32_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state % n);
}

/* Checks every invariant of @s against the model. */
static void p_check(struct flash_sched *s, struct p_node *nodes, struct p_wl *wls, size_t step, bool after_schedule)
{
	uint64_t used[P_NODES] = { 0 };
	uint32_t queued_n[2] = { 0 };

	for (size_t i = 0; i < P_WLS; i++) {
		char id[16];
		struct flash_sched_state x;
		int r;

		snprintf(id, sizeof(id), "w%zu", i);
		r = flash_sched_state(s, id, &x);
		if (!wls[i].held) {
			ASSERT_ERR(r, -ENOENT, id);
			continue;
		}
		ASSERT_OK(r, id);
		if (x.phase == FLASH_SCHED_BOUND) {
			int k = x.node[4] - '0';

			cr_assert(nodes[k].present, "step %zu: %s on a missing node %s", step, id, x.node);
			cr_assert_str_eq(nodes[k].type ? nodes[k].type : "-", x.gpu_type, "step %zu: %s of type %s on %s",
					 step, id, x.gpu_type, x.node);
			cr_assert_eq((uint32_t)__builtin_popcountll(x.slots), x.count, "step %zu: %s count", step, id);
			cr_assert_eq(x.slots & used[k], 0, "step %zu: %s double-books slots %#" PRIx64 " on %s", step,
				     id, x.slots & used[k], x.node);
			used[k] |= x.slots;
			cr_assert_eq(x.slots >> nodes[k].alloc, 0, "step %zu: %s beyond allocatable on %s", step, id,
				     x.node);
			/* A fresh binding went to a usable node. */
			if (wls[i].phase != FLASH_SCHED_BOUND || strcmp(wls[i].node, x.node) != 0)
				cr_assert(after_schedule && nodes[k].smoke && nodes[k].ready,
					  "step %zu: %s newly bound to %s (smoke %d ready %d, schedule %d)", step, id,
					  x.node, nodes[k].smoke, nodes[k].ready, after_schedule);
			snprintf(wls[i].node, sizeof(wls[i].node), "%s", x.node);
		} else {
			cr_assert_eq(x.phase, FLASH_SCHED_QUEUED, "step %zu: %s phase", step, id);
			queued_n[strcmp(x.gpu_type, "a100") == 0 ? 0 : 1]++;
			wls[i].node[0] = '\0';
		}
		wls[i].phase = x.phase;
	}
	for (size_t k = 0; k < P_NODES; k++) {
		char name[16];

		snprintf(name, sizeof(name), "gpu-%zu", k);
		if (nodes[k].present)
			cr_assert_eq(node_free(s, name), nodes[k].alloc - (uint32_t)__builtin_popcountll(used[k]),
				     "step %zu: free slots of %s", step, name);
	}
	/* Queue order: positions 1..n, in admission order. */
	for (size_t t = 0; t < 2; t++) {
		uint64_t last = 0;

		for (uint32_t pos = 1; pos <= queued_n[t]; pos++) {
			size_t found = 0, at = 0;

			for (size_t i = 0; i < P_WLS; i++) {
				struct flash_sched_state x;
				char id[16];

				if (!wls[i].held || wls[i].phase != FLASH_SCHED_QUEUED || strcmp(wls[i].type, p_types[t]))
					continue;
				snprintf(id, sizeof(id), "w%zu", i);
				x = st(s, id);
				if (x.position == pos) {
					found++;
					at = i;
				}
			}
			cr_assert_eq(found, 1, "step %zu: %zu workloads at %s position %u", step, found, p_types[t], pos);
			cr_assert_gt(wls[at].admitted, last, "step %zu: %s queue out of admission order at %u", step,
				     p_types[t], pos);
			last = wls[at].admitted;
		}
	}
	/* After a schedule step, no queue head that fits some node's
	 * allocatable also fits a usable node's free slots (FIFO and
	 * work-conserving). */
	if (!after_schedule)
		return;
	for (size_t t = 0; t < 2; t++) {
		uint32_t cap = 0, best_free = 0;

		for (size_t k = 0; k < P_NODES; k++) {
			if (!nodes[k].present || !nodes[k].type || strcmp(nodes[k].type, p_types[t]))
				continue;
			cap = nodes[k].alloc > cap ? nodes[k].alloc : cap;
			if (nodes[k].smoke && nodes[k].ready) {
				uint32_t f = nodes[k].alloc - (uint32_t)__builtin_popcountll(used[k]);

				best_free = f > best_free ? f : best_free;
			}
		}
		for (uint32_t pos = 1; pos <= queued_n[t]; pos++)
			for (size_t i = 0; i < P_WLS; i++) {
				char id[16];
				struct flash_sched_state x;

				if (!wls[i].held || wls[i].phase != FLASH_SCHED_QUEUED || strcmp(wls[i].type, p_types[t]))
					continue;
				snprintf(id, sizeof(id), "w%zu", i);
				x = st(s, id);
				if (x.position != pos || x.count > cap)
					continue;
				cr_assert_gt(x.count, best_free, "step %zu: head %s (%u GPUs) left queued with %u free",
					     step, id, x.count, best_free);
				pos = queued_n[t]; /* only the first head that fits any node */
				break;
			}
	}
}

Test(sched, property_random_events)
{
	long binds = 0, returned = 0, refused = 0;

	for (unsigned round = 0; round < 40; round++) {
		struct flash_sched *s = sched();
		struct p_node nodes[P_NODES] = { 0 };
		struct p_wl wls[P_WLS] = { 0 };
		uint64_t admitted = 0;

		for (size_t step = 0; step < 400; step++) {
			uint32_t op = rnd(10), k = rnd(P_NODES), i = rnd(P_WLS);
			char name[16], id[16];
			bool scheduled = false;

			snprintf(name, sizeof(name), "gpu-%u", k);
			snprintf(id, sizeof(id), "w%u", i);
			if (op <= 1) { /* node appears or changes */
				struct p_node n = { .present = true, .type = rnd(8) ? p_types[rnd(2)] : NULL,
						    .alloc = rnd(9), .smoke = rnd(4) != 0, .ready = rnd(4) != 0 };

				int r = node(s, name, n.type, n.alloc, n.smoke, n.ready);

				ASSERT_OK(r, name);
				returned += r;
				if (!n.type)
					n.alloc = 0;
				nodes[k] = n;
			} else if (op == 2) { /* node vanishes */
				int r = flash_sched_node_remove(s, name);

				if (nodes[k].present) {
					ASSERT_OK(r, name);
					returned += r;
				} else
					ASSERT_ERR(r, -ENOENT, name);
				nodes[k].present = false;
			} else if (op <= 5) { /* a workload is admitted */
				const char *type = p_types[rnd(2)];
				uint32_t count = 1 + rnd(5);
				int r = enq(s, id, type, count);

				if (wls[i].held) {
					cr_assert(r == 1 || r == -FLASH_E_SCHED_CONFLICT, "step %zu: re-enqueue %s: %d",
						  step, id, r);
				} else if (r == 0) {
					wls[i] = (struct p_wl){ .held = true, .admitted = ++admitted, .type = type,
								.count = count, .phase = FLASH_SCHED_QUEUED };
				} else {
					cr_assert(r == -FLASH_E_SCHED_NO_NODE || r == -FLASH_E_SCHED_TOO_LARGE,
						  "step %zu: enqueue %s: %d", step, id, r);
					refused++;
				}
			} else if (op == 6) { /* a workload is deleted */
				int r = flash_sched_cancel(s, id);

				if (wls[i].held)
					ASSERT_OK(r, id);
				else
					ASSERT_ERR(r, -ENOENT, id);
				wls[i].held = false;
			} else {
				int r = flash_sched_schedule(s);

				ASSERT_OK(r, "schedule");
				binds += r;
				scheduled = true;
			}
			p_check(s, nodes, wls, step, scheduled);
		}
		flash_sched_free(s);
	}
	/* The sequences reached every rule (40 rounds of 400 events). */
	cr_assert_gt(binds, 500, "only %ld bindings", binds);
	cr_assert_gt(returned, 100, "only %ld workloads returned by node changes", returned);
	cr_assert_gt(refused, 100, "only %ld refusals", refused);
	cr_log_info("%ld bindings, %ld returned, %ld refused", binds, returned, refused);
}
