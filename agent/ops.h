/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent core's seam to the kernel: every netlink and datapath call it
 * makes goes through one of these.  agent_ops_kernel is the real thing
 * (libflowsdn's netlink and datapath modules); tests give the core a fake
 * so that it runs in-process without privileges.  @ctx is the pointer
 * given to agent_core_new() with the table.  Private to agent/.
 */
#ifndef FLOWSDN_AGENT_OPS_H
#define FLOWSDN_AGENT_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>

struct agent_ops {
	/* flowsdn_netlink_*() */
	int (*netns_ino)(void *ctx, const char *path, uint64_t *ret_ino);
	int (*veth_setup)(void *ctx, const struct flowsdn_veth_config *cfg, struct flowsdn_veth *ret,
			  struct flowsdn_diag *err);
	int (*veth_teardown)(void *ctx, const char *host_ifname, const struct flowsdn_addr *addrs, size_t n_addrs,
			     struct flowsdn_diag *err);
	int (*endpoint_check)(void *ctx, const struct flowsdn_endpoint_iface *iface, struct flowsdn_diag *err);
	/* flowsdn_datapath_*() and the endpoint maps */
	int (*dp_open)(void *ctx, const struct flowsdn_datapath_opts *opts, struct flowsdn_datapath **ret);
	void (*dp_free)(void *ctx, struct flowsdn_datapath *dp);
	/* "tcx" or "tc clsact" */
	const char *(*dp_mode)(void *ctx, struct flowsdn_datapath *dp);
	int (*dp_attach)(void *ctx, struct flowsdn_datapath *dp, int ifindex);
	int (*dp_detach)(void *ctx, struct flowsdn_datapath *dp, int ifindex);
	int (*dp_is_attached)(void *ctx, struct flowsdn_datapath *dp, int ifindex);
	int (*dp_adopt)(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint_iface *iface);
	int (*dp_publish)(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep);
	/* flowsdn_maps_endpoint_flags_update() */
	int (*dp_flags)(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep, uint32_t mask,
			uint32_t flags);
	/* Removes the endpoint's map entries and the tracked connections of
	 * its addresses (a later endpoint with an address must not inherit
	 * them). */
	int (*dp_remove)(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep);
	/* flowsdn_maps_ct_gc() now; NULL: no collector runs. */
	int (*dp_ct_gc)(void *ctx, struct flowsdn_datapath *dp, size_t *ret_removed);
};

extern const struct agent_ops agent_ops_kernel;

#endif
