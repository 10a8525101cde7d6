/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Source ranges of services in flowsdn_srcrange (<flowsdn/datapath.h>,
 * model in <flowsdn/maps.h>): the writer the agent calls when a service's
 * loadBalancerSourceRanges or denied ranges change.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <flowsdn/datapath.h>

#include "datapath-internal.h"
#include "internal.h"

/* The key of range @p of @list (host bits cleared). */
static int range_key(uint32_t svc_id, uint8_t list, const struct flowsdn_prefix *p, struct flowsdn_srcrange_key *k)
{
	int bits = flowsdn__prefix_bits(p);
	uint8_t a[16];

	if (bits < 0)
		return bits;
	memset(k, 0, sizeof(*k));
	memcpy(a, p->addr.bytes, (size_t)bits / 8);
	for (unsigned int i = 0; i < (unsigned int)bits / 8; i++) {
		unsigned int keep = p->len > i * 8 ? p->len - i * 8 : 0;

		if (keep < 8)
			a[i] &= (uint8_t)(0xff00u >> keep);
	}
	k->prefixlen = FLOWSDN_SRCRANGE_PREFIX_BASE + p->len;
	k->svc_id = svc_id;
	k->list = list;
	k->family = p->addr.family;
	memcpy(k->addr, a, (size_t)bits / 8);
	return 0;
}

static void meta_key(uint32_t svc_id, struct flowsdn_srcrange_key *k)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = FLOWSDN_SRCRANGE_PREFIX_BASE;
	k->svc_id = svc_id;
	k->list = FLOWSDN_SRCRANGE_META;
}

/* Writes @k unless it is there (its counter stays). */
static int range_put(int fd, const struct flowsdn_srcrange_key *k, uint32_t flags)
{
	struct flowsdn_srcrange_value v = { .flags = flags }, old;

	if (bpf_map_lookup_elem(fd, k, &old) == 0 && old.flags == flags)
		return 0;
	if (bpf_map_update_elem(fd, k, &v, BPF_ANY) < 0)
		return -errno;
	return 0;
}

static bool key_listed(const struct flowsdn_srcrange_key *k, const struct flowsdn_srcrange_key *keep, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(k, &keep[i], sizeof(*k)))
			return true;
	return false;
}

/* Removes @svc_id's entries not in @keep[@n] (the META entry too when
 * @keep_meta is false). */
static int remove_stale(int fd, uint32_t svc_id, const struct flowsdn_srcrange_key *keep, size_t n, bool keep_meta)
{
	struct flowsdn_srcrange_key k, next, *gone = NULL;
	size_t n_gone = 0, cap = 0;
	bool first = true;
	int r = 0;

	/* Collect first: deleting while walking an LPM trie restarts the walk. */
	while (bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0) {
		first = false;
		k = next;
		if (k.svc_id != svc_id || (k.list == FLOWSDN_SRCRANGE_META && keep_meta) || key_listed(&k, keep, n))
			continue;
		if (n_gone == cap) {
			size_t c = cap ? cap * 2 : 16;
			struct flowsdn_srcrange_key *p = realloc(gone, c * sizeof(*p));

			if (!p) {
				free(gone);
				return -ENOMEM;
			}
			gone = p;
			cap = c;
		}
		gone[n_gone++] = k;
	}
	for (size_t i = 0; i < n_gone; i++)
		if (bpf_map_delete_elem(fd, &gone[i]) < 0 && errno != ENOENT && !r)
			r = -errno;
	free(gone);
	return r;
}

FLOWSDN_API int flowsdn_maps_srcrange_set(struct flowsdn_maps *maps, uint32_t svc_id, const struct flowsdn_prefix *allow,
					  size_t n_allow, const struct flowsdn_prefix *deny, size_t n_deny)
{
	struct flowsdn_srcrange_key *keys, meta;
	size_t n = 0;
	int fd, r = 0;

	if (!maps || svc_id == 0 || (n_allow && !allow) || (n_deny && !deny))
		return -EINVAL;
	if (n_allow > FLOWSDN_SRCRANGE_MAX_PER_SERVICE || n_deny > FLOWSDN_SRCRANGE_MAX_PER_SERVICE - n_allow)
		return -E2BIG;
	fd = maps->fd[FSDN_MAP_SRCRANGE];
	keys = calloc(n_allow + n_deny + 1, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	/* Every key built (and checked) before anything is written. */
	for (size_t i = 0; i < n_deny && r == 0; i++)
		r = range_key(svc_id, FLOWSDN_SRCRANGE_DENY, &deny[i], &keys[n++]);
	for (size_t i = 0; i < n_allow && r == 0; i++)
		r = range_key(svc_id, FLOWSDN_SRCRANGE_ALLOW, &allow[i], &keys[n++]);
	for (size_t i = 0; i < n && r == 0; i++)
		r = range_put(fd, &keys[i], 0);
	if (r == 0 && n_allow) {
		meta_key(svc_id, &meta);
		r = range_put(fd, &meta, FLOWSDN_SRCRANGE_F_HAS_ALLOW);
	}
	if (r == 0)
		r = remove_stale(fd, svc_id, keys, n, n_allow > 0);
	free(keys);
	return r;
}

FLOWSDN_API int flowsdn_maps_srcrange_clear(struct flowsdn_maps *maps, uint32_t svc_id)
{
	return flowsdn_maps_srcrange_set(maps, svc_id, NULL, 0, NULL, 0);
}

FLOWSDN_API int flowsdn_maps_srcrange_packets(struct flowsdn_maps *maps, uint32_t svc_id,
					      enum flowsdn_srcrange_list list, const struct flowsdn_prefix *prefix,
					      uint64_t *ret)
{
	struct flowsdn_srcrange_key k;
	struct flowsdn_srcrange_value v;
	int r;

	if (!maps || !ret || svc_id == 0)
		return -EINVAL;
	if (list == FLOWSDN_SRCRANGE_META) {
		meta_key(svc_id, &k);
	} else if (list == FLOWSDN_SRCRANGE_ALLOW || list == FLOWSDN_SRCRANGE_DENY) {
		r = range_key(svc_id, (uint8_t)list, prefix, &k);
		if (r < 0)
			return r;
	} else {
		return -EINVAL;
	}
	/* An LPM lookup is a longest match: make sure it is this very entry. */
	if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_SRCRANGE], &k, &v) < 0)
		return -errno;
	{
		struct flowsdn_srcrange_key it, next;
		bool first = true, found = false;

		while (!found && bpf_map_get_next_key(maps->fd[FSDN_MAP_SRCRANGE], first ? NULL : &it, &next) == 0) {
			first = false;
			it = next;
			found = !memcmp(&it, &k, sizeof(k));
		}
		if (!found)
			return -ENOENT;
	}
	*ret = v.packets;
	return 0;
}
