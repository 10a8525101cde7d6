/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Maglev backend choice: the slot a flow hash selects in its service's
 * table (flowsdn_maglev, <flowsdn/maps.h>), written by
 * flowsdn_maps_maglev_write().  Called by the service lookup (lb.h).
 */
#ifndef FLOWSDN_BPF_LIB_MAGLEV_H
#define FLOWSDN_BPF_LIB_MAGLEV_H

#include "common.h"

/* The backend id of slot (@hash mod @m) of service @svc_id's table, @m
 * being its service_value.maglev_size; 0 (no backend) when the service
 * has no table, @m is 0 or the slot is outside the table (a table of
 * another size than @m: the caller falls back to its random choice). */
static __always_inline __u32 maglev_lookup(__u32 svc_id, __u32 hash, __u32 m)
{
	const struct flowsdn_maglev_value *v;
	void *table;
	__u32 slot;

	if (!m)
		return 0;
	table = bpf_map_lookup_elem(&flowsdn_maglev, &svc_id);
	if (!table)
		return 0;
	slot = hash % m;
	v = bpf_map_lookup_elem(table, &slot);
	return v ? v->backend_id : 0;
}

#endif
