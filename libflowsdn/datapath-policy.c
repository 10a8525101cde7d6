/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The atomic per-endpoint policy switch and the scrub of unreachable
 * entries (<flowsdn/datapath.h>; the model is in <flowsdn/maps.h>).
 *
 * Order of a switch: (1) every new entry under the generation not in
 * force, (2) the flip of policy_gen and flags in each address entry of
 * the endpoint, (3) the old generation's entries deleted.  A failure in
 * (1) deletes what (1) wrote; in (2) flips back the addresses already
 * flipped, then as in (1).  The datapath reads policy_gen per packet, so
 * every packet is judged by one complete set.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <flowsdn/datapath.h>

#include "datapath-internal.h"
#include "internal.h"

static int key_for(const struct flowsdn_policy_map_entry *e, uint32_t id, struct flowsdn_policy_key *k)
{
	*k = e->key;
	k->ep_id = id;
	if (flowsdn__policy_key_valid(k) < 0 || (e->flags & ~FLOWSDN_POLICY_F_DENY))
		return -EINVAL;
	return 0;
}

static void delete_entries(int fd, const struct flowsdn_policy_map_entry *e, size_t n, uint32_t id)
{
	struct flowsdn_policy_key k;

	for (size_t i = 0; i < n; i++)
		if (key_for(&e[i], id, &k) == 0)
			bpf_map_delete_elem(fd, &k);
}

/* Writes the @n entries @e under key id @id (@ingress_only: refusing any
 * other direction); *ret_written counts those written, for the undo.
 * @who names the owner in the log. */
static int write_entries(int fd, const struct flowsdn_policy_map_entry *e, size_t n, uint32_t id, bool ingress_only,
			 const char *who, size_t *ret_written)
{
	for (*ret_written = 0; *ret_written < n; (*ret_written)++) {
		size_t i = *ret_written;
		struct flowsdn_policy_key k;
		struct flowsdn_policy_value v = { .flags = e[i].flags, .rule_id = e[i].rule_id };
		int r = key_for(&e[i], id, &k);

		if (r == 0 && ingress_only && k.direction != FLOWSDN_DIR_INGRESS)
			r = -EINVAL;
		if (r < 0) {
			pr_warn("%s: policy entry %zu is invalid", who, i);
			return r;
		}
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY) < 0) {
			r = -errno;
			pr_warn("%s: writing policy entry %zu of %zu: %s", who, i, n, strerror(errno));
			return r;
		}
	}
	return 0;
}

/* Sets policy_gen/flags of the first @n addresses of @ep to @gen/@flags
 * (each was @ep's; BPF_EXIST: a removed address is not recreated). */
static int flip(struct flowsdn_maps *maps, const struct flowsdn_endpoint *ep, size_t n, unsigned int gen,
		uint32_t flags, size_t *ret_done)
{
	int fd = maps->fd[FSDN_MAP_EP];

	for (size_t i = 0; i < n; i++) {
		struct flowsdn_endpoint_key k;
		struct flowsdn_endpoint_info info;

		*ret_done = i;
		if (flowsdn__ep_key(&ep->addrs[i], &k) < 0)
			return -EINVAL;
		if (bpf_map_lookup_elem(fd, &k, &info) < 0 || info.ep_id != ep->id)
			return -ENOENT;
		info.policy_gen = (__u8)gen;
		/* Only the enforcement flags are the policy's. */
		info.flags = (info.flags & ~FLOWSDN_EP_F_ENFORCE) | (flags & FLOWSDN_EP_F_ENFORCE);
		if (bpf_map_update_elem(fd, &k, &info, BPF_EXIST) < 0)
			return -errno;
	}
	*ret_done = n;
	return 0;
}

FLOWSDN_API int flowsdn_maps_policy_generation(struct flowsdn_maps *maps, uint32_t ep_id,
					       const struct flowsdn_addr *addr, unsigned int *ret_gen)
{
	struct flowsdn_endpoint_info info;
	int r;

	if (!maps || !addr || !ret_gen)
		return -EINVAL;
	r = flowsdn_maps_endpoint_lookup(maps, addr, &info);
	if (r < 0)
		return r;
	if (info.ep_id != ep_id)
		return -ENOENT;
	*ret_gen = info.policy_gen & 1;
	return 0;
}

FLOWSDN_API int flowsdn_maps_policy_switch(struct flowsdn_maps *maps, const struct flowsdn_endpoint *ep,
					   const struct flowsdn_policy_map_entry *old_entries, size_t n_old,
					   const struct flowsdn_policy_map_entry *new_entries, size_t n_new,
					   uint32_t ep_flags)
{
	struct flowsdn_endpoint_info info;
	int fd;
	unsigned int cur, next;
	uint32_t cur_id, next_id, cur_flags;
	size_t written = 0, flipped = 0;
	char who[32];
	int r;

	if (!maps || !ep || ep->id == 0 || (ep->id & FLOWSDN_POLICY_GEN_BIT) || ep->n_addrs == 0 ||
	    ep->n_addrs > FLOWSDN_ENDPOINT_MAX_ADDRS || (ep_flags & ~FLOWSDN_EP_F_ALL) || (n_old && !old_entries) ||
	    (n_new && !new_entries))
		return -EINVAL;
	fd = maps->fd[FSDN_MAP_POLICY];
	r = flowsdn_maps_endpoint_lookup(maps, &ep->addrs[0], &info);
	if (r < 0)
		return r;
	if (info.ep_id != ep->id)
		return -ENOENT;
	cur = info.policy_gen & 1;
	cur_flags = info.flags;
	next = cur ^ 1;
	cur_id = FLOWSDN_POLICY_KEY_ID(ep->id, cur);
	next_id = FLOWSDN_POLICY_KEY_ID(ep->id, next);

	snprintf(who, sizeof(who), "endpoint %u", ep->id);
	r = write_entries(fd, new_entries, n_new, next_id, false, who, &written);
	if (r < 0)
		goto out_undo;
	r = flip(maps, ep, ep->n_addrs, next, ep_flags, &flipped);
	if (r < 0) {
		size_t ignored;

		pr_warn("endpoint %u: switching to policy generation %u: %s", ep->id, next, strerror(-r));
		/* Back to the generation and flags in force. */
		flip(maps, ep, flipped, cur, cur_flags, &ignored);
		goto out_undo;
	}
	delete_entries(fd, old_entries, n_old, cur_id);
	return 0;

out_undo:
	delete_entries(fd, new_entries, written, next_id);
	return r;
}

/* ------------------------------------------------------------ host firewall */

FLOWSDN_API int flowsdn_maps_hostfw_state(struct flowsdn_maps *maps, struct flowsdn_hostfw_state *ret)
{
	struct flowsdn_hostfw_state st;
	__u32 zero = 0;

	if (!maps || !ret)
		return -EINVAL;
	if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_HOSTFW], &zero, &st) < 0)
		return -errno;
	*ret = st;
	return 0;
}

FLOWSDN_API int flowsdn_maps_hostfw_switch(struct flowsdn_maps *maps,
					   const struct flowsdn_policy_map_entry *old_entries, size_t n_old,
					   const struct flowsdn_policy_map_entry *new_entries, size_t n_new,
					   uint32_t flags, unsigned int mode)
{
	struct flowsdn_hostfw_state cur, next = { .ep_id = FLOWSDN_HOSTFW_EP_ID };
	uint32_t cur_id, next_id;
	size_t written = 0;
	__u32 zero = 0;
	int fd, r;

	if (!maps || (flags & ~FLOWSDN_EP_F_ENFORCE_INGRESS) || mode > FLOWSDN_HOSTFW_ENFORCE ||
	    (n_old && !old_entries) || (n_new && !new_entries))
		return -EINVAL;
	r = flowsdn_maps_hostfw_state(maps, &cur);
	if (r < 0)
		return r;
	if (cur.ep_id != FLOWSDN_HOSTFW_EP_ID)
		cur.policy_gen = 0; /* never written: nothing in force */
	fd = maps->fd[FSDN_MAP_POLICY];
	next.policy_gen = (cur.policy_gen & 1) ^ 1;
	next.flags = flags;
	next.mode = (__u8)mode;
	cur_id = FLOWSDN_POLICY_KEY_ID(FLOWSDN_HOSTFW_EP_ID, cur.policy_gen & 1);
	next_id = FLOWSDN_POLICY_KEY_ID(FLOWSDN_HOSTFW_EP_ID, next.policy_gen);
	r = write_entries(fd, new_entries, n_new, next_id, true, "host firewall", &written);
	if (r < 0)
		goto out_undo;
	/* One update: generation, flag and mode change together. */
	if (bpf_map_update_elem(maps->fd[FSDN_MAP_HOSTFW], &zero, &next, BPF_ANY) < 0) {
		r = -errno;
		goto out_undo;
	}
	delete_entries(fd, old_entries, n_old, cur_id);
	return 0;

out_undo:
	delete_entries(fd, new_entries, written, next_id);
	return r;
}

FLOWSDN_API int flowsdn_maps_hostfw_counters(struct flowsdn_maps *maps, struct flowsdn_hostfw_counters *ret)
{
	__u32 zero = 0;

	if (!maps || !ret)
		return -EINVAL;
	return flowsdn__percpu_sum(maps, FSDN_MAP_HOSTFW_STAT, &zero, ret, sizeof(*ret));
}

/* The generation in force per endpoint id, from a walk of flowsdn_ep. */
struct gen_of {
	uint32_t ep_id;
	unsigned int gen;
};

static int cmp_gen(const void *a, const void *b)
{
	uint32_t x = ((const struct gen_of *)a)->ep_id, y = ((const struct gen_of *)b)->ep_id;

	return x < y ? -1 : x > y;
}

FLOWSDN_API int flowsdn_maps_policy_scrub(struct flowsdn_maps *maps, size_t *ret_removed)
{
	struct flowsdn_endpoint_key ek, enext;
	struct flowsdn_policy_key pk, pnext, doomed;
	struct gen_of *gens = NULL;
	size_t n = 0, cap = 0, removed = 0;
	bool have = false, have_doomed = false;
	int r = 0;

	if (!maps)
		return -EINVAL;
	while (bpf_map_get_next_key(maps->fd[FSDN_MAP_EP], have ? &ek : NULL, &enext) == 0) {
		struct flowsdn_endpoint_info info;

		ek = enext;
		have = true;
		if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_EP], &ek, &info) < 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct gen_of *t = reallocarray(gens, ncap, sizeof(*t));

			if (!t) {
				r = -ENOMEM;
				goto out;
			}
			gens = t;
			cap = ncap;
		}
		gens[n++] = (struct gen_of){ info.ep_id, info.policy_gen & 1u };
	}
	/* The host firewall's entries: the generation its state names. */
	{
		struct flowsdn_hostfw_state st;

		if (flowsdn_maps_hostfw_state(maps, &st) == 0 && st.ep_id == FLOWSDN_HOSTFW_EP_ID) {
			struct gen_of *t = reallocarray(gens, n + 1, sizeof(*t));

			if (!t) {
				r = -ENOMEM;
				goto out;
			}
			gens = t;
			gens[n++] = (struct gen_of){ FLOWSDN_HOSTFW_EP_ID, st.policy_gen & 1u };
		}
	}
	if (n > 1) /* qsort and bsearch of NULL, 0 are undefined */
		qsort(gens, n, sizeof(*gens), cmp_gen);
	have = false;
	while (bpf_map_get_next_key(maps->fd[FSDN_MAP_POLICY], have ? &pk : NULL, &pnext) == 0) {
		struct gen_of want = { pnext.ep_id & ~FLOWSDN_POLICY_GEN_BIT, 0 }, *g;

		if (have_doomed) {
			if (bpf_map_delete_elem(maps->fd[FSDN_MAP_POLICY], &doomed) == 0)
				removed++;
			have_doomed = false;
		}
		pk = pnext;
		have = true;
		g = n ? bsearch(&want, gens, n, sizeof(*gens), cmp_gen) : NULL;
		if (!g || FLOWSDN_POLICY_KEY_ID(g->ep_id, g->gen) != pk.ep_id) {
			doomed = pk;
			have_doomed = true;
		}
	}
	if (have_doomed && bpf_map_delete_elem(maps->fd[FSDN_MAP_POLICY], &doomed) == 0)
		removed++;
out:
	free(gens);
	if (ret_removed)
		*ret_removed = removed;
	return r;
}

FLOWSDN_API int flowsdn_maps_policy_iterate(struct flowsdn_maps *maps, flowsdn_policy_visit_fn fn, void *userdata)
{
	struct flowsdn_policy_key cur, next;
	struct flowsdn_policy_value v;
	bool have = false;
	int r;

	if (!maps || !fn)
		return -EINVAL;
	while (bpf_map_get_next_key(maps->fd[FSDN_MAP_POLICY], have ? &cur : NULL, &next) == 0) {
		cur = next;
		have = true;
		/* The exact key is in the map: the longest match is itself. */
		if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_POLICY], &cur, &v) < 0)
			continue;
		r = fn(&cur, &v, userdata);
		if (r)
			return r;
	}
	return errno == ENOENT || !have ? 0 : -errno;
}
