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
	/* agent_uplink_kernel_attach(): the uplink program on @ifname */
	int (*dp_uplink_attach)(void *ctx, struct flowsdn_datapath *dp, const char *ifname, uint16_t port_min,
				uint16_t port_max);
	/* flowsdn_maps_endpoint_flags_update() */
	int (*dp_flags)(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep, uint32_t mask,
			uint32_t flags);
	/* Removes the endpoint's map entries and the tracked connections of
	 * its addresses (a later endpoint with an address must not inherit
	 * them). */
	int (*dp_remove)(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep);
	/* services (agent/services.c): flowsdn_maps_service_publish/_remove()
	 * on the datapath's maps, flowsdn_datapath_socklb_attach().  A table
	 * without them keeps the service model only. */
	int (*dp_service_publish)(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_lb_service *svc,
				  const struct flowsdn_lb_service *old);
	int (*dp_service_remove)(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_lb_service *old);
	/* flowsdn_maps_services_publish(): the start's one batch (NULL: one
	 * dp_service_publish each) */
	int (*dp_services_publish)(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_lb_service *const *svcs,
				   const struct flowsdn_lb_service *const *olds, size_t n);
	/* flowsdn_maps_srcrange_set() of backend set @svc_id */
	int (*dp_srcrange_set)(void *ctx, struct flowsdn_datapath *dp, uint32_t svc_id, const struct flowsdn_prefix *allow,
			       size_t n_allow, const struct flowsdn_prefix *deny, size_t n_deny);
	int (*dp_socklb_attach)(void *ctx, struct flowsdn_datapath *dp, const char *cgroup_path);
	/* flowsdn_netlink_sock_destroy(): sockets of removed UDP backends */
	int (*sock_destroy)(void *ctx, const struct flowsdn_addr *peer, uint16_t port, uint8_t protocol,
			    size_t *ret_count);
	/* flowsdn_maps_ct_gc() now; NULL: no collector runs. */
	int (*dp_ct_gc)(void *ctx, struct flowsdn_datapath *dp, size_t *ret_removed);
	/* flowsdn_netlink_sock_destroy_netns(): the same in an endpoint's
	 * netns, when it still is the one of inode @netns_ino */
	int (*sock_destroy_netns)(void *ctx, const char *netns_path, uint64_t netns_ino,
				  const struct flowsdn_addr *peer, uint16_t port, uint8_t protocol, size_t *ret_count);
};

extern const struct agent_ops agent_ops_kernel;

#endif
