/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private parts shared by datapath.c (the loader) and datapath-maps.c. */
#ifndef FLOWSDN_DATAPATH_INTERNAL_H
#define FLOWSDN_DATAPATH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <flowsdn/addr.h>
#include <flowsdn/datapath.h>

enum fsdn_map {
	FSDN_MAP_EP,
	FSDN_MAP_IPCACHE,
	FSDN_MAP_POLICY,
	FSDN_MAP_EPSTAT,
	FSDN_MAP_DROPS,
	FSDN_MAP_SVC,
	FSDN_MAP_BACKEND,
	FSDN_MAP_MAGLEV,
	FSDN_MAP_SVC_SLOT,
	FSDN_MAP_AFFINITY,
	FSDN_MAP_SOCK_RNAT,
	FSDN_MAP_SRCRANGE,
	FSDN_MAP_CT,
	FSDN_MAP_CTSTAT,
	FSDN_MAP_FRAG,
	FSDN_MAP_HOSTFW,
	FSDN_MAP_HOSTFW_STAT,
	FSDN_MAP_COUNT_,
};

struct flowsdn_maps {
	int fd[FSDN_MAP_COUNT_];
	size_t ncpu; /* possible CPUs (per-CPU value arrays) */
	char *pin_dir;
};

const char *flowsdn__map_name(enum fsdn_map m);
/* Writes the @n pairs keys[i] (@key_size bytes each), vals[i]
 * (@value_size) to @fd with BPF_MAP_UPDATE_BATCH, or one update each on a
 * kernel without it for this map type (datapath-batch.c). */
int flowsdn__map_update_many(int fd, const void *keys, const void *vals, size_t n, size_t key_size,
			     size_t value_size);

struct flowsdn_datapath;
/* The pin directory of @dp. */
const char *flowsdn__datapath_pin_dir(const struct flowsdn_datapath *dp);
/* The per-node settings @dp loaded the endpoint programs with (for the
 * uplink program, which must agree). */
void flowsdn__datapath_rodata(const struct flowsdn_datapath *dp, __u32 *egress_mode, __u32 *redirect_peer,
			      __u32 *delivered_mark);
/* tc clsact filter of ours on @ifindex's ingress or egress (replacing an
 * older one) / its removal (0 when none). */
int flowsdn__tc_attach(int ifindex, bool ingress, int prog_fd);
int flowsdn__tc_detach(int ifindex, bool ingress);
/* Attaches @from_fd to the ingress and @to_fd to the egress of @ifindex
 * in the datapath's mode: TCX links pinned under <dir>/links (a pinned
 * link found there updated in place, an older tc filter of ours
 * removed), in auto mode falling back to tc clsact with the reason
 * logged; tc: our clsact filters, replaced in place.  Both or neither. */
int flowsdn__hooks_attach(struct flowsdn_datapath *dp, int ifindex, int from_fd, int to_fd);
/* Removes both kinds of attachment of ours from @ifindex. */
int flowsdn__hooks_detach(struct flowsdn_datapath *dp, int ifindex);
/* The address width of @p (32 or 128), or -EINVAL for a NULL prefix, a
 * family that is neither or a length beyond the width. */
int flowsdn__prefix_bits(const struct flowsdn_prefix *p);
/* "@dir/@name" into @buf; -ENAMETOOLONG if it does not fit. */
int flowsdn__pin_path(const char *dir, const char *name, char *buf, size_t size);

/* -EINVAL for a policy key with non-zero pad, a bad direction or prefix. */
int flowsdn__policy_key_valid(const struct flowsdn_policy_key *k);
/* The flowsdn_ep key of @a; -EINVAL when it is not IPv4/IPv6. */
int flowsdn__ep_key(const struct flowsdn_addr *a, struct flowsdn_endpoint_key *k);
/* The per-CPU value at @key of map @m summed over the CPUs into @ret, a
 * struct of @size bytes made of __u64 counters only; -errno of the lookup
 * (-ENOENT), -ENOMEM.  *ret is untouched on failure. */
int flowsdn__percpu_sum(const struct flowsdn_maps *maps, enum fsdn_map m, const void *key, void *ret, size_t size);

#endif
