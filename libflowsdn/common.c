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

static flowsdn_log_fn log_fn;
static enum flowsdn_log_level log_max = FLOWSDN_LOG_INFO;
static void *log_userdata;

FLOWSDN_API void flowsdn_set_log(flowsdn_log_fn fn, enum flowsdn_log_level max_level, void *userdata)
{
	log_fn = fn;
	log_max = max_level;
	log_userdata = userdata;
}

void flowsdn__log(enum flowsdn_log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!log_fn || level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_fn(level, buf, log_userdata);
}

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
