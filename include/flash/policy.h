/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/policy.h> — the owner quota policy: per-workload and
 * per-organization resource limits, the regions, the GPU catalog, the
 * protected infrastructure ranges and the organization's weekly metering
 * limits.  It is a JSON file (flash-spec(5), section OWNER POLICY),
 * validated like a spec, with problems reported in a struct flash_diag.
 *
 * Checking a spec against the policy is its own call so that the spec
 * itself stays independent of where it runs; problems found there carry
 * the JSON path of the spec field that breaks the policy.
 */
#ifndef FLASH_POLICY_H
#define FLASH_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/common.h>
#include <flash/spec.h>
#include <flowsdn/addr.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Domain errors of the policy module (block FLASH_E_BASE + 100 = 6100). */
enum flash_policy_error {
	FLASH_E_POLICY_BASE = FLASH_E_BASE + 100,
	FLASH_E_POLICY_SYNTAX = FLASH_E_POLICY_BASE, /* the policy file is not acceptable JSON */
	FLASH_E_POLICY_INVALID,       /* the policy file breaks its own rules */
	FLASH_E_POLICY_VIOLATION,     /* a spec exceeds the policy */
	FLASH_E_POLICY_MAX_,          /* end of the block (not an error) */
};

/* The resources with limits. */
enum flash_policy_resource {
	FLASH_POLICY_CPU_MILLIS = 0,
	FLASH_POLICY_MEMORY_MIB,
	FLASH_POLICY_REPLICAS,
	FLASH_POLICY_GPUS,
	FLASH_POLICY_EPHEMERAL_STORAGE_GIB,
	FLASH_POLICY_PORTS,
	FLASH_POLICY_RESOURCE_COUNT_,
};

/* Name of a resource as spelled in the policy file ("cpu_millis", ...);
 * NULL when out of range. */
FLASH_API const char *flash_policy_resource_name(enum flash_policy_resource res);

struct flash_policy;

/* Parses and validates a policy file.  Returns 0 and *ret_policy (free
 * with flash_policy_free()), or -FLASH_E_POLICY_SYNTAX /
 * -FLASH_E_POLICY_INVALID with every problem in @diag (if not NULL),
 * -EINVAL, -ENOMEM.  *ret_policy is untouched on failure. */
FLASH_API FLASH_WUR int flash_policy_parse(const char *json, size_t len, struct flash_policy **ret_policy,
					   struct flash_diag *diag);

/* Frees @policy (NULL is fine). */
FLASH_API void flash_policy_free(struct flash_policy *policy);

/* Checks @spec against the per-workload limits, the region list, the GPU
 * catalog and the protected ranges (no allowed source or destination may
 * overlap one).  Every problem is appended to @diag (if not NULL; so the
 * spec's own diagnostics may come first), with the path of the offending
 * spec field and codes "policy-region",
 * "policy-gpu-type", "policy-limit", "policy-protected-cidr".
 * Returns 0, -FLASH_E_POLICY_VIOLATION, -EINVAL. */
FLASH_API FLASH_WUR int flash_policy_check_spec(const struct flash_policy *policy, const struct flash_spec *spec,
						struct flash_diag *diag);

/* What a workload takes from its organization's limits: per-replica
 * amounts times the most replicas it may run (replicas, or autoscaling
 * max_replicas when larger). */
struct flash_policy_usage {
	size_t sz;
	uint64_t amount[FLASH_POLICY_RESOURCE_COUNT_]; /* by enum flash_policy_resource */
};

/* Fills @ret_usage (whose sz the caller set) with the charge of @spec.
 * Returns 0 or -EINVAL. */
FLASH_API int flash_policy_usage_of_spec(const struct flash_spec *spec, struct flash_policy_usage *ret_usage);

/* Checks that @current (the organization's usage without this workload;
 * NULL for none) plus the charge of @spec stays within the organization
 * limits.  One "policy-org-limit" problem per exceeded resource is
 * appended to @diag (if not NULL).  Returns 0, -FLASH_E_POLICY_VIOLATION,
 * -EINVAL. */
FLASH_API FLASH_WUR int flash_policy_check_organization(const struct flash_policy *policy,
							const struct flash_policy_usage *current,
							const struct flash_spec *spec, struct flash_diag *diag);

/* Limits of @res; UINT64_MAX when @res is out of range. */
FLASH_API uint64_t flash_policy_workload_limit(const struct flash_policy *policy, enum flash_policy_resource res);
FLASH_API uint64_t flash_policy_organization_limit(const struct flash_policy *policy,
						   enum flash_policy_resource res);

/* Weekly metering limits of one organization (consumed by metering). */
struct flash_policy_weekly_limits {
	size_t sz;
	uint64_t cpu_millicore_seconds;
	uint64_t memory_mib_seconds;
	uint64_t gpu_seconds;
};
/* Fills @ret (whose sz the caller set).  Returns 0 or -EINVAL. */
FLASH_API int flash_policy_weekly_limits(const struct flash_policy *policy, struct flash_policy_weekly_limits *ret);

/* The region list, the GPU catalog and the protected ranges, in file
 * order (protected ranges sorted and normalized).  Indexed getters return
 * NULL when @i is out of range. */
FLASH_API size_t flash_policy_region_count(const struct flash_policy *policy);
FLASH_API const char *flash_policy_region(const struct flash_policy *policy, size_t i);
FLASH_API bool flash_policy_has_region(const struct flash_policy *policy, const char *region);
FLASH_API size_t flash_policy_gpu_type_count(const struct flash_policy *policy);
FLASH_API const char *flash_policy_gpu_type(const struct flash_policy *policy, size_t i);
FLASH_API bool flash_policy_has_gpu_type(const struct flash_policy *policy, const char *gpu_type);
FLASH_API size_t flash_policy_protected_count(const struct flash_policy *policy);
FLASH_API const struct flowsdn_prefix *flash_policy_protected(const struct flash_policy *policy, size_t i);

#ifdef __cplusplus
}
#endif

#endif
