/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The real kernel operations of the agent core: libflowsdn's netlink and
 * datapath modules. */
#include "config.h"

#include "ops.h"
#include "uplink.h"

static int k_netns_ino(void *ctx, const char *path, uint64_t *ret_ino)
{
	(void)ctx;
	return flowsdn_netlink_netns_ino(path, ret_ino);
}

static int k_veth_setup(void *ctx, const struct flowsdn_veth_config *cfg, struct flowsdn_veth *ret,
			struct flowsdn_diag *err)
{
	(void)ctx;
	return flowsdn_netlink_veth_setup(cfg, ret, err);
}

static int k_veth_teardown(void *ctx, const char *host_ifname, const struct flowsdn_addr *addrs, size_t n_addrs,
			   struct flowsdn_diag *err)
{
	(void)ctx;
	return flowsdn_netlink_veth_teardown(host_ifname, addrs, n_addrs, err);
}

static int k_endpoint_check(void *ctx, const struct flowsdn_endpoint_iface *iface, struct flowsdn_diag *err)
{
	(void)ctx;
	return flowsdn_netlink_endpoint_check(iface, err);
}

static int k_dp_open(void *ctx, const struct flowsdn_datapath_opts *opts, struct flowsdn_datapath **ret)
{
	(void)ctx;
	return flowsdn_datapath_open(opts, ret);
}

static void k_dp_free(void *ctx, struct flowsdn_datapath *dp)
{
	(void)ctx;
	flowsdn_datapath_free(dp);
}

static const char *k_dp_mode(void *ctx, struct flowsdn_datapath *dp)
{
	(void)ctx;
	return flowsdn_datapath_attach_mode(dp) == FLOWSDN_ATTACH_TCX ? "tcx" : "tc clsact";
}

static int k_dp_attach(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	(void)ctx;
	return flowsdn_datapath_attach(dp, ifindex);
}

static int k_dp_detach(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	(void)ctx;
	return flowsdn_datapath_detach(dp, ifindex);
}

static int k_dp_is_attached(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	(void)ctx;
	return flowsdn_datapath_is_attached(dp, ifindex);
}

static int k_dp_adopt(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint_iface *iface)
{
	(void)ctx;
	return flowsdn_datapath_adopt(dp, iface);
}

static int k_dp_publish(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep)
{
	(void)ctx;
	return flowsdn_maps_endpoint_publish(flowsdn_datapath_maps(dp), ep);
}

static int k_dp_flags(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep, uint32_t mask,
		      uint32_t flags)
{
	(void)ctx;
	return flowsdn_maps_endpoint_flags_update(flowsdn_datapath_maps(dp), ep, mask, flags);
}

static int k_dp_uplink_attach(void *ctx, struct flowsdn_datapath *dp, const char *ifname, uint16_t port_min,
			      uint16_t port_max)
{
	(void)ctx;
	return agent_uplink_kernel_attach(dp, ifname, port_min, port_max);
}

static int k_dp_remove(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep)
{
	struct flowsdn_maps *m = flowsdn_datapath_maps(dp);
	int r, t;

	(void)ctx;
	r = flowsdn_maps_endpoint_remove(m, ep);
	for (size_t i = 0; i < ep->n_addrs && i < FLOWSDN_ENDPOINT_MAX_ADDRS; i++) {
		t = flowsdn_maps_ct_flush(m, &ep->addrs[i], NULL);
		r = r < 0 ? r : t;
	}
	return r;
}

static int k_dp_ct_gc(void *ctx, struct flowsdn_datapath *dp, size_t *ret_removed)
{
	(void)ctx;
	return flowsdn_maps_ct_gc(flowsdn_datapath_maps(dp), 0, ret_removed);
}

static int k_dp_service_publish(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_lb_service *svc,
				const struct flowsdn_lb_service *old)
{
	(void)ctx;
	return flowsdn_maps_service_publish(flowsdn_datapath_maps(dp), svc, old);
}

static int k_dp_srcrange_set(void *ctx, struct flowsdn_datapath *dp, uint32_t svc_id, const struct flowsdn_prefix *allow,
			     size_t n_allow, const struct flowsdn_prefix *deny, size_t n_deny)
{
	(void)ctx;
	return flowsdn_maps_srcrange_set(flowsdn_datapath_maps(dp), svc_id, allow, n_allow, deny, n_deny);
}

static int k_dp_service_remove(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_lb_service *old)
{
	(void)ctx;
	return flowsdn_maps_service_remove(flowsdn_datapath_maps(dp), old);
}

static int k_dp_socklb_attach(void *ctx, struct flowsdn_datapath *dp, const char *cgroup_path)
{
	(void)ctx;
	return flowsdn_datapath_socklb_attach(dp, cgroup_path);
}

static int k_dp_services_publish(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_lb_service *const *svcs,
				 const struct flowsdn_lb_service *const *olds, size_t n)
{
	(void)ctx;
	return flowsdn_maps_services_publish(flowsdn_datapath_maps(dp), svcs, olds, n);
}

static int k_sock_destroy(void *ctx, const struct flowsdn_addr *peer, uint16_t port, uint8_t protocol,
			  size_t *ret_count)
{
	(void)ctx;
	return flowsdn_netlink_sock_destroy(peer, port, protocol, ret_count);
}

static int k_sock_destroy_netns(void *ctx, const char *netns_path, uint64_t netns_ino, const struct flowsdn_addr *peer,
				uint16_t port, uint8_t protocol, size_t *ret_count)
{
	(void)ctx;
	return flowsdn_netlink_sock_destroy_netns(netns_path, netns_ino, peer, port, protocol, ret_count);
}

const struct agent_ops agent_ops_kernel = {
	.netns_ino = k_netns_ino,
	.veth_setup = k_veth_setup,
	.veth_teardown = k_veth_teardown,
	.endpoint_check = k_endpoint_check,
	.dp_open = k_dp_open,
	.dp_free = k_dp_free,
	.dp_mode = k_dp_mode,
	.dp_attach = k_dp_attach,
	.dp_detach = k_dp_detach,
	.dp_is_attached = k_dp_is_attached,
	.dp_adopt = k_dp_adopt,
	.dp_publish = k_dp_publish,
	.dp_flags = k_dp_flags,
	.dp_uplink_attach = k_dp_uplink_attach,
	.dp_remove = k_dp_remove,
	.dp_service_publish = k_dp_service_publish,
	.dp_services_publish = k_dp_services_publish,
	.dp_service_remove = k_dp_service_remove,
	.dp_srcrange_set = k_dp_srcrange_set,
	.dp_socklb_attach = k_dp_socklb_attach,
	.sock_destroy = k_sock_destroy,
	.dp_ct_gc = k_dp_ct_gc,
	.sock_destroy_netns = k_sock_destroy_netns,
};
