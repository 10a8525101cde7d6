/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Source ranges of services (loadBalancerSourceRanges and denied ranges),
 * the model of <flowsdn/maps.h> "source ranges": deny wins, then allow,
 * then everyone when the service has no allow list.  This header owns the
 * flowsdn_srcrange map (every object that includes it creates or reuses
 * the pinned map).
 */
#ifndef FLOWSDN_BPF_SRCRANGE_H
#define FLOWSDN_BPF_SRCRANGE_H

#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FLOWSDN_MAX_SRCRANGE);
	__type(key, struct flowsdn_srcrange_key);
	__type(value, struct flowsdn_srcrange_value);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_srcrange SEC(".maps");

static __always_inline struct flowsdn_srcrange_value *srcrange_find(__u32 svc_id, __u8 list, __u8 family,
								       const __be32 *saddr)
{
	struct flowsdn_srcrange_key k;

	k.prefixlen = FLOWSDN_SRCRANGE_PREFIX_BASE + (family == AF_INET ? 32 : 128);
	k.svc_id = svc_id;
	k.list = list;
	k.family = family;
	k.pad0[0] = k.pad0[1] = 0;
	k.addr[0] = saddr[0];
	k.addr[1] = saddr[1];
	k.addr[2] = saddr[2];
	k.addr[3] = saddr[3];
	return bpf_map_lookup_elem(&flowsdn_srcrange, &k);
}

/* 0 when @saddr may reach service @svc_id from outside, else
 * FLOWSDN_DROP_SOURCE_RANGE.  Counts the deciding entry. */
static __always_inline __u32 srcrange_check(__u32 svc_id, __u8 family, const __be32 *saddr)
{
	const __be32 none[4] = {};
	struct flowsdn_srcrange_value *v;

	v = srcrange_find(svc_id, FLOWSDN_SRCRANGE_DENY, family, saddr);
	if (v) {
		__sync_fetch_and_add(&v->packets, 1);
		return FLOWSDN_DROP_SOURCE_RANGE;
	}
	v = srcrange_find(svc_id, FLOWSDN_SRCRANGE_ALLOW, family, saddr);
	if (v) {
		__sync_fetch_and_add(&v->packets, 1);
		return 0;
	}
	/* The META entry: no address bits, so any source finds it. */
	v = srcrange_find(svc_id, FLOWSDN_SRCRANGE_META, 0, none);
	if (v && (v->flags & FLOWSDN_SRCRANGE_F_HAS_ALLOW)) {
		__sync_fetch_and_add(&v->packets, 1);
		return FLOWSDN_DROP_SOURCE_RANGE;
	}
	return 0;
}

#endif
