/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Error strings and the log callback. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include <flowsdn/cni.h>
#include <flowsdn/datapath.h>
#include <flowsdn/identity.h>
#include <flowsdn/ipam.h>
#include <flowsdn/maglev.h>
#include <flowsdn/netlink.h>
#include <flowsdn/policy.h>

#include "internal.h"

/* The messages of every module's domain codes: one leaf file, so that a
 * program linking one module of the library does not carry the others. */

/* addr */
static const char *const addr_errors[] = {
	[FLOWSDN_E_ADDR_EMPTY - FLOWSDN_E_BASE] = "address is empty",
	[FLOWSDN_E_ADDR_TOO_LONG - FLOWSDN_E_BASE] = "address text is too long",
	[FLOWSDN_E_ADDR_NUL - FLOWSDN_E_BASE] = "address contains a NUL byte",
	[FLOWSDN_E_ADDR_SYNTAX - FLOWSDN_E_BASE] = "address syntax is invalid",
	[FLOWSDN_E_ADDR_OCTET_RANGE - FLOWSDN_E_BASE] = "IPv4 octet is greater than 255",
	[FLOWSDN_E_ADDR_LEADING_ZERO - FLOWSDN_E_BASE] = "IPv4 octet has a leading zero",
	[FLOWSDN_E_ADDR_GROUP - FLOWSDN_E_BASE] = "IPv6 group has more than 4 hex digits",
	[FLOWSDN_E_ADDR_GROUP_COUNT - FLOWSDN_E_BASE] = "IPv6 address has the wrong number of groups",
	[FLOWSDN_E_ADDR_DOUBLE_COLON - FLOWSDN_E_BASE] = "IPv6 '::' appears more than once",
	[FLOWSDN_E_ADDR_ZONE - FLOWSDN_E_BASE] = "IPv6 zone index is not accepted",
	[FLOWSDN_E_ADDR_FAMILY - FLOWSDN_E_BASE] = "wrong address family",
	[FLOWSDN_E_PREFIX_LENGTH - FLOWSDN_E_BASE] = "prefix length is missing, malformed or out of range",
	[FLOWSDN_E_PREFIX_HOST_BITS - FLOWSDN_E_BASE] = "prefix has bits set past its length",
	[FLOWSDN_E_ADDR_RANGE - FLOWSDN_E_BASE] = "address is outside the range",
};

static const char *addr_strerror(int code)
{
	size_t i = (size_t)(code - FLOWSDN_E_BASE);

	return i < ARRAY_SIZE(addr_errors) ? addr_errors[i] : NULL;
}

/* cni */
static const char *const cni_errors[] = {
	[FLOWSDN_E_CNI_INCOMPATIBLE - FLOWSDN_E_CNI_BASE] = "incompatible CNI version",
	[FLOWSDN_E_CNI_VERSION_UNKNOWN - FLOWSDN_E_CNI_BASE] = "unknown CNI version",
	[FLOWSDN_E_CNI_DECODE - FLOWSDN_E_CNI_BASE] = "failed to decode JSON",
	[FLOWSDN_E_CNI_CONFIG - FLOWSDN_E_CNI_BASE] = "invalid network configuration",
	[FLOWSDN_E_CNI_ENV - FLOWSDN_E_CNI_BASE] = "invalid CNI environment variables",
	[FLOWSDN_E_CNI_CONTAINER_ID - FLOWSDN_E_CNI_BASE] = "invalid CNI_CONTAINERID",
	[FLOWSDN_E_CNI_IFNAME - FLOWSDN_E_CNI_BASE] = "invalid CNI_IFNAME",
	[FLOWSDN_E_CNI_ARGS - FLOWSDN_E_CNI_BASE] = "invalid CNI_ARGS",
	[FLOWSDN_E_CNI_RESULT - FLOWSDN_E_CNI_BASE] = "malformed CNI result",
	[FLOWSDN_E_CNI_NOT_FOUND - FLOWSDN_E_CNI_BASE] = "container or interface does not exist",
	[FLOWSDN_E_CNI_TRY_AGAIN - FLOWSDN_E_CNI_BASE] = "temporarily unavailable, try again later",
	[FLOWSDN_E_CNI_NOT_READY - FLOWSDN_E_CNI_BASE] = "plugin is not available",
};

static const char *cni_strerror(int code)
{
	size_t i = (size_t)(code - FLOWSDN_E_CNI_BASE);

	return i < ARRAY_SIZE(cni_errors) ? cni_errors[i] : NULL;
}

/* identity */
static const char *const identity_errors[] = {
	[FLOWSDN_E_IDENTITY_LABEL_KEY - FLOWSDN_E_IDENTITY_BASE] = "label key is not a valid Kubernetes label key",
	[FLOWSDN_E_IDENTITY_LABEL_VALUE - FLOWSDN_E_IDENTITY_BASE] = "label value is not a valid Kubernetes label value",
	[FLOWSDN_E_IDENTITY_LABEL_DUPLICATE - FLOWSDN_E_IDENTITY_BASE] = "label key appears twice in the set",
	[FLOWSDN_E_IDENTITY_LABELS_EMPTY - FLOWSDN_E_IDENTITY_BASE] = "label set is empty or has too many labels",
	[FLOWSDN_E_IDENTITY_EXHAUSTED - FLOWSDN_E_IDENTITY_BASE] = "every local identity is in use",
	[FLOWSDN_E_IDENTITY_RESERVED - FLOWSDN_E_IDENTITY_BASE] = "reserved identities cannot be released",
	[FLOWSDN_E_IDENTITY_STATE_CORRUPT - FLOWSDN_E_IDENTITY_BASE] = "identity state file is truncated or damaged",
	[FLOWSDN_E_IDENTITY_STATE_VERSION - FLOWSDN_E_IDENTITY_BASE] = "identity state file has a newer format version",
};

static const char *identity_strerror(int code)
{
	size_t i = (size_t)(code - FLOWSDN_E_IDENTITY_BASE);

	return i < ARRAY_SIZE(identity_errors) ? identity_errors[i] : NULL;
}

/* ipam */
static const char *const ipam_errors[] = {
	[FLOWSDN_E_IPAM_EXHAUSTED - FLOWSDN_E_IPAM_BASE] = "address pool is exhausted",
	[FLOWSDN_E_IPAM_POOL_OVERLAP - FLOWSDN_E_IPAM_BASE] = "address pools overlap",
	[FLOWSDN_E_IPAM_POOL_TOO_SMALL - FLOWSDN_E_IPAM_BASE] = "address pool has no usable address",
	[FLOWSDN_E_IPAM_POOL_TOO_BIG - FLOWSDN_E_IPAM_BASE] = "address pool is larger than 2^20 addresses",
	[FLOWSDN_E_IPAM_NO_POOL - FLOWSDN_E_IPAM_BASE] = "no address pool for this family or address",
	[FLOWSDN_E_IPAM_RESERVED - FLOWSDN_E_IPAM_BASE] = "address is reserved (network, gateway or broadcast)",
	[FLOWSDN_E_IPAM_IN_USE - FLOWSDN_E_IPAM_BASE] = "address is allocated to another owner",
	[FLOWSDN_E_IPAM_OWNER - FLOWSDN_E_IPAM_BASE] = "invalid container id or interface name",
	[FLOWSDN_E_IPAM_OWNER_CONFLICT - FLOWSDN_E_IPAM_BASE] = "owner already holds another address of this family",
	[FLOWSDN_E_IPAM_STATE_CORRUPT - FLOWSDN_E_IPAM_BASE] = "IPAM state file is truncated or damaged",
	[FLOWSDN_E_IPAM_STATE_VERSION - FLOWSDN_E_IPAM_BASE] = "IPAM state file has a newer format version",
	[FLOWSDN_E_IPAM_ORPHAN - FLOWSDN_E_IPAM_BASE] = "IPAM state holds allocations outside the configured pools",
	[FLOWSDN_E_IPAM_POOL_CLASS - FLOWSDN_E_IPAM_BASE] = "address pool holds addresses no pod can use",
};

static const char *ipam_strerror(int code)
{
	size_t i = (size_t)(code - FLOWSDN_E_IPAM_BASE);

	return i < ARRAY_SIZE(ipam_errors) ? ipam_errors[i] : NULL;
}

/* datapath */
static const char *bpf_strerror(int code)
{
	switch (code) {
	case FLOWSDN_E_BPF_NO_BPFFS:
		return "pin directory is not on a bpf filesystem and mounting one failed";
	case FLOWSDN_E_BPF_NOT_LOADED:
		return "no datapath maps pinned in the directory (datapath not loaded)";
	case FLOWSDN_E_BPF_MAP_LAYOUT:
		return "a pinned map does not match the map contract";
	case FLOWSDN_E_BPF_LOAD:
		return "the kernel refused a datapath program";
	case FLOWSDN_E_BPF_ATTACH:
		return "attaching the datapath programs to the interface failed";
	case FLOWSDN_E_BPF_NO_TCX:
		return "the kernel has no TCX links";
	case FLOWSDN_E_BPF_IFACE_MISMATCH:
		return "the interface no longer belongs to the endpoint";
	case FLOWSDN_E_BPF_OBJECT:
		return "the embedded BPF object is damaged";
	case FLOWSDN_E_BPF_NOT_CGROUP2:
		return "not a cgroup v2 directory";
	}
	return NULL;
}

/* maglev */
static const char *const maglev_errors[] = {
	[FLOWSDN_E_MAGLEV_SIZE - FLOWSDN_E_MAGLEV_BASE] = "Maglev table size is not a supported prime",
	[FLOWSDN_E_MAGLEV_NO_BACKEND - FLOWSDN_E_MAGLEV_BASE] = "no Maglev backend has a weight above 0",
	[FLOWSDN_E_MAGLEV_DUPLICATE - FLOWSDN_E_MAGLEV_BASE] = "two Maglev backends have the same key",
	[FLOWSDN_E_MAGLEV_KEY - FLOWSDN_E_MAGLEV_BASE] = "Maglev backend key is empty or too long",
	[FLOWSDN_E_MAGLEV_TOO_MANY - FLOWSDN_E_MAGLEV_BASE] = "more Maglev backends than table slots",
	[FLOWSDN_E_MAGLEV_PERMUTATION - FLOWSDN_E_MAGLEV_BASE] = "Maglev offset or skip out of range",
};

static const char *maglev_strerror(int code)
{
	size_t i = (size_t)(code - FLOWSDN_E_MAGLEV_BASE);

	return i < ARRAY_SIZE(maglev_errors) ? maglev_errors[i] : NULL;
}

/* netlink */
static const char *netlink_strerror(int code)
{
	switch (code) {
	case FLOWSDN_E_NL_SOCKET:
		return "netlink socket could not be opened";
	case FLOWSDN_E_NL_NETNS:
		return "network namespace missing or not usable";
	case FLOWSDN_E_NL_IFNAME:
		return "invalid interface name";
	case FLOWSDN_E_NL_EXISTS:
		return "interface name already taken";
	case FLOWSDN_E_NL_LINK:
		return "creating or changing a link failed";
	case FLOWSDN_E_NL_ADDR:
		return "adding an address failed";
	case FLOWSDN_E_NL_ROUTE:
		return "adding or removing a route failed";
	case FLOWSDN_E_NL_NEIGH:
		return "adding a neighbour entry failed";
	case FLOWSDN_E_NL_SYSCTL:
		return "writing a sysctl failed";
	case FLOWSDN_E_NL_NOT_FOUND:
		return "no such interface";
	case FLOWSDN_E_NL_MISMATCH:
		return "the interface is not the expected one";
	}
	return NULL;
}

/* policy */
static const char *const policy_errors[] = {
	[FLOWSDN_E_POLICY_JSON - FLOWSDN_E_POLICY_BASE] = "policy is not valid JSON",
	[FLOWSDN_E_POLICY_INVALID - FLOWSDN_E_POLICY_BASE] = "policy is invalid",
	[FLOWSDN_E_POLICY_CAPACITY - FLOWSDN_E_POLICY_BASE] = "endpoint needs more policy entries than the map holds",
	[FLOWSDN_E_POLICY_NOT_FOUND - FLOWSDN_E_POLICY_BASE] = "no such namespace, pod, policy or endpoint",
	[FLOWSDN_E_POLICY_ADDR_IN_USE - FLOWSDN_E_POLICY_BASE] = "address belongs to another pod",
	[FLOWSDN_E_POLICY_IDENTITIES - FLOWSDN_E_POLICY_BASE] = "no identity left",
	[FLOWSDN_E_POLICY_NOT_COMPILED - FLOWSDN_E_POLICY_BASE] = "endpoint has changes that are not compiled",
};

static const char *policy_strerror(int code)
{
	size_t i = (size_t)(code - FLOWSDN_E_POLICY_BASE);

	return i < ARRAY_SIZE(policy_errors) ? policy_errors[i] : NULL;
}

UTIL_LOG_EXPORT(flowsdn, FLOWSDN_API, enum flowsdn_log_level, flowsdn_log_fn, FLOWSDN_LOG_INFO)

static const struct util_errblock blocks[] = {
	{ FLOWSDN_E_BASE, FLOWSDN_E_ADDR_MAX_, addr_strerror },
	{ FLOWSDN_E_BPF_BASE, FLOWSDN_E_BPF_MAX_, bpf_strerror },
	{ FLOWSDN_E_CNI_BASE, FLOWSDN_E_CNI_MAX_, cni_strerror },
	{ FLOWSDN_E_IDENTITY_BASE, FLOWSDN_E_IDENTITY_MAX_, identity_strerror },
	{ FLOWSDN_E_IPAM_BASE, FLOWSDN_E_IPAM_MAX_, ipam_strerror },
	{ FLOWSDN_E_MAGLEV_BASE, FLOWSDN_E_MAGLEV_MAX_, maglev_strerror },
	{ FLOWSDN_E_POLICY_BASE, FLOWSDN_E_POLICY_MAX_, policy_strerror },
	{ FLOWSDN_E_NL_BASE, FLOWSDN_E_NL_MAX_, netlink_strerror },
};

UTIL_ERRORS_EXPORT(flowsdn, FLOWSDN_API, blocks, FLOWSDN_E_BASE, "unknown flowsdn error")
