/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's uplinks ("uplink-interfaces", flowsdn-agent.conf(5)): the
 * interfaces where services are reached from outside the node.  At start
 * each gets the uplink program (flowsdn_datapath_uplink_attach()) with
 * the node's addresses on it, the first global IPv4 and IPv6 address it
 * has, as the source of flows sent to other nodes' backends.  Private to
 * agent/.
 */
#ifndef FLOWSDN_AGENT_UPLINK_H
#define FLOWSDN_AGENT_UPLINK_H

#include <flowsdn/datapath.h>

#include "conf.h"
#include "ops.h"

/* Attaches the uplink program to every configured uplink through
 * ops->dp_uplink_attach; one that fails is reported and skipped.
 * Returns how many were attached. */
unsigned int agent_uplinks_attach(const struct agent_config *cfg, const struct agent_ops *ops, void *ctx,
				  struct flowsdn_datapath *dp);

/* The kernel's op: resolves @ifname, reads its addresses (getifaddrs),
 * attaches.  -ENODEV for an unknown interface, loader errors. */
int agent_uplink_kernel_attach(struct flowsdn_datapath *dp, const char *ifname, uint16_t port_min,
			       uint16_t port_max);

#endif
