/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The connection tracking table from userspace (<flowsdn/datapath.h>,
 * conntrack section): keys, lookups, the walk, garbage collection,
 * flushes, counts and the per-CPU lookup counters.
 *
 * Walks use bpf_map_get_next_key().  Deleting the key a walk stands on
 * would restart it from the first key, so a walk that deletes removes an
 * entry only after it has fetched the key that follows it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <flowsdn/datapath.h>

#include "datapath-internal.h"
#include "internal.h"

FLOWSDN_API int flowsdn_ct_key_make(const struct flowsdn_addr *src, uint16_t sport, const struct flowsdn_addr *dst,
				    uint16_t dport, uint8_t protocol, struct flowsdn_ct_key *ret)
{
	struct flowsdn_ct_key k;
	size_t n;

	if (!src || !dst || !ret || src->family != dst->family)
		return -EINVAL;
	if (src->family == FLOWSDN_AF_INET)
		n = 4;
	else if (src->family == FLOWSDN_AF_INET6)
		n = 16;
	else
		return -EINVAL;
	if ((protocol == IPPROTO_ICMP || protocol == IPPROTO_ICMPV6) && dport != 0)
		return -EINVAL;
	memset(&k, 0, sizeof(k));
	memcpy(k.saddr, src->bytes, n);
	memcpy(k.daddr, dst->bytes, n);
	k.sport = htobe16(sport);
	k.dport = htobe16(dport);
	k.protocol = protocol;
	k.family = src->family;
	*ret = k;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

FLOWSDN_API int flowsdn_maps_ct_lookup(struct flowsdn_maps *maps, const struct flowsdn_ct_key *key,
				       struct flowsdn_ct_entry *ret)
{
	struct flowsdn_ct_entry e;

	if (!maps || !key || !ret)
		return -EINVAL;
	if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_CT], key, &e) < 0)
		return -errno;
	*ret = e;
	return 0;
}

/* What a walk does with each entry: @visit decides; it returns 1 to have
 * the entry deleted, 0 to keep it, or a stop value (anything else). */
typedef int (*walk_fn)(const struct flowsdn_ct_key *key, const struct flowsdn_ct_entry *e, void *userdata);

static int walk(struct flowsdn_maps *maps, walk_fn visit, void *userdata, size_t *ret_removed)
{
	int fd = maps->fd[FSDN_MAP_CT];
	struct flowsdn_ct_key cur, next, doomed;
	bool have_cur = false, have_doomed = false;
	size_t removed = 0;
	int r = 0;

	for (;;) {
		struct flowsdn_ct_entry e;
		int v;

		if (bpf_map_get_next_key(fd, have_cur ? &cur : NULL, &next) < 0) {
			if (errno != ENOENT)
				r = -errno;
			break;
		}
		/* Past the doomed key now: it can go. */
		if (have_doomed) {
			if (bpf_map_delete_elem(fd, &doomed) == 0)
				removed++;
			have_doomed = false;
		}
		cur = next;
		have_cur = true;
		if (bpf_map_lookup_elem(fd, &cur, &e) < 0)
			continue; /* evicted meanwhile */
		v = visit(&cur, &e, userdata);
		if (v == 1) {
			doomed = cur;
			have_doomed = true;
		} else if (v != 0) {
			r = v;
			break;
		}
	}
	if (have_doomed && bpf_map_delete_elem(fd, &doomed) == 0)
		removed++;
	if (ret_removed)
		*ret_removed = removed;
	return r;
}

struct iter_ctx {
	flowsdn_ct_visit_fn fn;
	void *userdata;
	int stopped; /* the caller's value that stopped the walk */
};

static int iter_visit(const struct flowsdn_ct_key *key, const struct flowsdn_ct_entry *e, void *userdata)
{
	struct iter_ctx *c = userdata;

	c->stopped = c->fn(key, e, c->userdata);
	/* 1 means "delete" to walk(): any stop is 2 there. */
	return c->stopped ? 2 : 0;
}

FLOWSDN_API int flowsdn_maps_ct_iterate(struct flowsdn_maps *maps, flowsdn_ct_visit_fn fn, void *userdata)
{
	struct iter_ctx c = { fn, userdata, 0 };
	int r;

	if (!maps || !fn)
		return -EINVAL;
	r = walk(maps, iter_visit, &c, NULL);
	return r == 2 ? c.stopped : r;
}

static int gc_visit(const struct flowsdn_ct_key *key, const struct flowsdn_ct_entry *e, void *userdata)
{
	(void)key;
	return e->expires <= *(const uint64_t *)userdata ? 1 : 0;
}

FLOWSDN_API int flowsdn_maps_ct_gc(struct flowsdn_maps *maps, uint64_t now_ns, size_t *ret_removed)
{
	if (!maps)
		return -EINVAL;
	if (!now_ns)
		now_ns = mono_ns();
	return walk(maps, gc_visit, &now_ns, ret_removed);
}

static int flush_visit(const struct flowsdn_ct_key *key, const struct flowsdn_ct_entry *e, void *userdata)
{
	const struct flowsdn_addr *a = userdata;
	size_t n;

	(void)e;
	if (!a)
		return 1;
	if (key->family != a->family)
		return 0;
	n = a->family == FLOWSDN_AF_INET ? 4 : 16;
	return memcmp(key->saddr, a->bytes, n) == 0 || memcmp(key->daddr, a->bytes, n) == 0 ? 1 : 0;
}

FLOWSDN_API int flowsdn_maps_ct_flush(struct flowsdn_maps *maps, const struct flowsdn_addr *addr, size_t *ret_removed)
{
	if (!maps || (addr && addr->family != FLOWSDN_AF_INET && addr->family != FLOWSDN_AF_INET6))
		return -EINVAL;
	return walk(maps, flush_visit, (void *)addr, ret_removed);
}

struct count_ctx {
	uint64_t now;
	size_t live, total;
};

static int count_visit(const struct flowsdn_ct_key *key, const struct flowsdn_ct_entry *e, void *userdata)
{
	struct count_ctx *c = userdata;

	(void)key;
	c->total++;
	if (e->expires > c->now)
		c->live++;
	return 0;
}

FLOWSDN_API int flowsdn_maps_ct_count(struct flowsdn_maps *maps, uint64_t now_ns, size_t *ret_live, size_t *ret_total)
{
	struct count_ctx c = { .now = now_ns ? now_ns : mono_ns() };
	int r;

	if (!maps)
		return -EINVAL;
	r = walk(maps, count_visit, &c, NULL);
	if (r < 0)
		return r;
	if (ret_live)
		*ret_live = c.live;
	if (ret_total)
		*ret_total = c.total;
	return 0;
}

FLOWSDN_API int flowsdn_maps_ct_stats(struct flowsdn_maps *maps, struct flowsdn_ct_stats *ret)
{
	__u32 key = 0;

	if (!maps || !ret)
		return -EINVAL;
	return flowsdn__percpu_sum(maps, FSDN_MAP_CTSTAT, &key, ret, sizeof(*ret));
}
