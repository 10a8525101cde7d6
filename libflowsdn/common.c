/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Error strings and the log callback. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include <flowsdn/agent.h>
#include <flowsdn/cni.h>
#include <flowsdn/datapath.h>
#include <flowsdn/identity.h>
#include <flowsdn/ipam.h>
#include <flowsdn/maglev.h>
#include <flowsdn/netlink.h>
#include <flowsdn/policy.h>

#include "internal.h"

UTIL_LOG_EXPORT(flowsdn, FLOWSDN_API, enum flowsdn_log_level, flowsdn_log_fn, FLOWSDN_LOG_INFO)

static const struct util_errblock blocks[] = {
	{ FLOWSDN_E_BASE, FLOWSDN_E_ADDR_MAX_, flowsdn__addr_strerror },
	{ FLOWSDN_E_AGENT_BASE, FLOWSDN_E_AGENT_MAX_, flowsdn__agent_strerror },
	{ FLOWSDN_E_BPF_BASE, FLOWSDN_E_BPF_MAX_, flowsdn__bpf_strerror },
	{ FLOWSDN_E_CNI_BASE, FLOWSDN_E_CNI_MAX_, flowsdn__cni_strerror },
	{ FLOWSDN_E_IDENTITY_BASE, FLOWSDN_E_IDENTITY_MAX_, flowsdn__identity_strerror },
	{ FLOWSDN_E_IPAM_BASE, FLOWSDN_E_IPAM_MAX_, flowsdn__ipam_strerror },
	{ FLOWSDN_E_MAGLEV_BASE, FLOWSDN_E_MAGLEV_MAX_, flowsdn__maglev_strerror },
	{ FLOWSDN_E_POLICY_BASE, FLOWSDN_E_POLICY_MAX_, flowsdn__policy_strerror },
	{ FLOWSDN_E_NL_BASE, FLOWSDN_E_NL_MAX_, flowsdn__netlink_strerror },
};

FLOWSDN_API const char *flowsdn_strerror(int err)
{
	return util_strerror(blocks, ARRAY_SIZE(blocks), err, FLOWSDN_E_BASE, "unknown flowsdn error");
}

FLOWSDN_API const char *flowsdn_version(void)
{
	return PACKAGE_VERSION;
}
