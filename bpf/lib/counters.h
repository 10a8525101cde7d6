/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-endpoint counters and drop accounting. */
#ifndef FLOWSDN_BPF_COUNTERS_H
#define FLOWSDN_BPF_COUNTERS_H

#include "common.h"

/* The counters entry of @ep_id (created by userspace at publish), or NULL. */
static __always_inline struct flowsdn_endpoint_counters *ep_counters(__u32 ep_id)
{
	return bpf_map_lookup_elem(&flowsdn_epstat, &ep_id);
}

static __always_inline void count_tx(struct flowsdn_endpoint_counters *c, __u32 len)
{
	if (c) {
		c->tx_packets++;
		c->tx_bytes += len;
	}
}

static __always_inline void count_rx(struct flowsdn_endpoint_counters *c, __u32 len)
{
	if (c) {
		c->rx_packets++;
		c->rx_bytes += len;
	}
}

/* Counts a packet allowed in @dir without a policy lookup (a tracked
 * connection's): the verdict counters count every packet either way. */
static __always_inline void count_allowed(struct flowsdn_endpoint_counters *c, __u8 dir)
{
	if (!c)
		return;
	if (dir == FLOWSDN_DIR_INGRESS)
		c->allow_ingress++;
	else
		c->allow_egress++;
}

/* Counts a drop for @reason (and for the endpoint's counters @c, may be
 * NULL) and returns the tc verdict that drops. */
static __always_inline int drop(__u32 reason, struct flowsdn_endpoint_counters *c, __u32 len)
{
	struct flowsdn_drop_counters *d = bpf_map_lookup_elem(&flowsdn_drops, &reason);

	if (d) {
		d->packets++;
		d->bytes += len;
	}
	if (c) {
		c->drop_packets++;
		c->drop_bytes += len;
	}
	return TC_ACT_SHOT;
}

#endif
