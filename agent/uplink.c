/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's uplinks (agent/uplink.h). */
#include "config.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <flowsdn/addr.h>

#include "log.h"
#include "uplink.h"

unsigned int agent_uplinks_attach(const struct agent_config *cfg, const struct agent_ops *ops, void *ctx,
				  struct flowsdn_datapath *dp)
{
	unsigned int n = 0;

	for (size_t i = 0; dp && i < cfg->n_uplinks; i++) {
		int err = ops->dp_uplink_attach(ctx, dp, cfg->uplinks[i], (uint16_t)cfg->snat_port_min,
						(uint16_t)cfg->snat_port_max);

		if (err < 0)
			pr_err("agent: uplink %s: %s", cfg->uplinks[i], flowsdn_strerror(err));
		else
			n++;
	}
	return n;
}

/* Whether @a is a global address (not loopback, link-local, multicast). */
static bool global(const struct flowsdn_addr *a)
{
	unsigned int c = flowsdn_addr_classify(a);

	return !(c & (FLOWSDN_ADDR_LOOPBACK | FLOWSDN_ADDR_LINK_LOCAL | FLOWSDN_ADDR_MULTICAST | FLOWSDN_ADDR_UNSPECIFIED));
}

int agent_uplink_kernel_attach(struct flowsdn_datapath *dp, const char *ifname, uint16_t port_min, uint16_t port_max)
{
	struct flowsdn_addr a4 = { 0 }, a6 = { 0 };
	bool have4 = false, have6 = false;
	struct ifaddrs *ifa = NULL;
	int ifindex = (int)if_nametoindex(ifname);

	if (ifindex <= 0)
		return -ENODEV;
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (struct ifaddrs *p = ifa; p; p = p->ifa_next) {
		struct flowsdn_addr a = { 0 };

		if (!p->ifa_addr || strcmp(p->ifa_name, ifname))
			continue;
		if (p->ifa_addr->sa_family == AF_INET && !have4) {
			a.family = FLOWSDN_AF_INET;
			memcpy(a.bytes, &((struct sockaddr_in *)p->ifa_addr)->sin_addr, 4);
			if (global(&a)) {
				a4 = a;
				have4 = true;
			}
		} else if (p->ifa_addr->sa_family == AF_INET6 && !have6) {
			a.family = FLOWSDN_AF_INET6;
			memcpy(a.bytes, &((struct sockaddr_in6 *)p->ifa_addr)->sin6_addr, 16);
			if (global(&a)) {
				a6 = a;
				have6 = true;
			}
		}
	}
	freeifaddrs(ifa);
	FLOWSDN_OPTS(flowsdn_uplink_opts, o, .addr4 = have4 ? &a4 : NULL, .addr6 = have6 ? &a6 : NULL,
		     .snat_port_min = port_min, .snat_port_max = port_max);
	pr_info("agent: uplink %s (ifindex %d)", ifname, ifindex);
	return flowsdn_datapath_uplink_attach(dp, ifindex, &o);
}
