/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The uplink program (bpf/node.bpf.c, <flowsdn/datapath.h>
 * flowsdn_datapath_uplink_attach()): loaded once per uplink with the
 * node's addresses and SNAT port range as load-time constants, sharing
 * the maps pinned by the datapath, pinned as
 * <dir>/prog_from_uplink_<ifindex> and attached to the interface's
 * ingress; to_uplink (the egress translation of ICMP errors, the host
 * firewall's tracking of what the node sends) likewise as
 * <dir>/prog_to_uplink_<ifindex> on its egress.  Attached as endpoint
 * programs are (flowsdn__hooks_attach()): TCX links pinned under
 * <dir>/links where the kernel has TCX, updated in place by the next
 * agent, an older clsact filter of ours removed; else, or when TCX
 * refuses the interface in auto mode (logged with the reason), clsact
 * filters replaced in place.  Either lives as long as the interface or
 * until detached.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <flowsdn/datapath.h>

#include "datapath-internal.h"
#include "internal.h"
#include "node.skel.h"

#define SNAT_PORT_MIN 61000
#define SNAT_PORT_MAX 65535

static int uplink_pin_path(const char *dir, int ifindex, bool ingress, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/prog_%s_uplink_%d", dir, ingress ? "from" : "to", ifindex);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

FLOWSDN_API int flowsdn_datapath_uplink_attach(struct flowsdn_datapath *dp, int ifindex,
					       const struct flowsdn_uplink_opts *opts)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	const struct flowsdn_addr *a4, *a6;
	struct flowsdn_node *skel;
	unsigned int pmin, pmax;
	char path[PATH_MAX], epath[PATH_MAX];
	int r;

	if (!dp || ifindex <= 0 || !OPTS_VALID(opts, flowsdn_uplink_opts))
		return -EINVAL;
	a4 = OPTS_GET(opts, addr4, NULL);
	a6 = OPTS_GET(opts, addr6, NULL);
	pmin = OPTS_GET(opts, snat_port_min, 0);
	pmax = OPTS_GET(opts, snat_port_max, 0);
	if (!pmin && !pmax) {
		pmin = SNAT_PORT_MIN;
		pmax = SNAT_PORT_MAX;
	}
	if ((a4 && a4->family != FLOWSDN_AF_INET) || (a6 && a6->family != FLOWSDN_AF_INET6) || pmin == 0 ||
	    pmin > pmax || pmax > 65535)
		return -EINVAL;
	r = uplink_pin_path(flowsdn__datapath_pin_dir(dp), ifindex, true, path, sizeof(path));
	if (r == 0)
		r = uplink_pin_path(flowsdn__datapath_pin_dir(dp), ifindex, false, epath, sizeof(epath));
	if (r < 0)
		return r;
	oo.pin_root_path = flowsdn__datapath_pin_dir(dp);
	skel = flowsdn_node__open_opts(&oo);
	if (!skel) {
		r = -errno;
		pr_warn("open embedded uplink object: %s", strerror(errno));
		return r == -ENOMEM ? r : -FLOWSDN_E_BPF_OBJECT;
	}
	flowsdn__datapath_rodata(dp, &skel->rodata->cfg_egress_mode, &skel->rodata->cfg_redirect_peer,
				 &skel->rodata->cfg_delivered_mark);
	if (a4)
		memcpy((void *)&skel->rodata->cfg_node_addr4, a4->bytes, 4);
	if (a6)
		memcpy((void *)skel->rodata->cfg_node_addr6, a6->bytes, 16);
	skel->rodata->cfg_snat_port_min = pmin;
	skel->rodata->cfg_snat_port_max = pmax;
	r = flowsdn_node__load(skel);
	if (r < 0) {
		pr_warn("load BPF uplink program: %s", strerror(-r));
		r = r == -EINVAL ? -FLOWSDN_E_BPF_MAP_LAYOUT : r == -ENOMEM ? r : -FLOWSDN_E_BPF_LOAD;
		goto out;
	}
	if ((unlink(path) < 0 && errno != ENOENT) || (unlink(epath) < 0 && errno != ENOENT)) {
		r = -errno;
		goto out;
	}
	r = bpf_program__pin(skel->progs.from_uplink, path);
	if (r == 0)
		r = bpf_program__pin(skel->progs.to_uplink, epath);
	if (r < 0) {
		pr_warn("pin %s: %s", path, strerror(-r));
		goto out_unpin;
	}
	r = flowsdn__hooks_attach(dp, ifindex, bpf_program__fd(skel->progs.from_uplink),
				  bpf_program__fd(skel->progs.to_uplink));
	if (r == 0)
		goto out;
out_unpin:
	unlink(path);
	unlink(epath);
out:
	/* The filter (and the pin) hold the program: the skeleton can go. */
	flowsdn_node__destroy(skel);
	return r;
}

FLOWSDN_API int flowsdn_datapath_uplink_detach(struct flowsdn_datapath *dp, int ifindex)
{
	char path[PATH_MAX];
	int r = 0;

	if (!dp || ifindex <= 0)
		return -EINVAL;
	r = flowsdn__hooks_detach(dp, ifindex);
	for (int ingress = 1; ingress >= 0; ingress--) {
		int e = uplink_pin_path(flowsdn__datapath_pin_dir(dp), ifindex, ingress, path, sizeof(path));

		if (e < 0)
			return e;
		if (unlink(path) < 0 && errno != ENOENT && r == 0)
			r = -errno;
	}
	return r;
}
