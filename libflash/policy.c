/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The owner quota policy: parsed and checked from its field table like a
 * spec, then used to check specs (per-workload limits, regions, GPU
 * catalog, protected ranges) and organization totals.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <flash/policy.h>

#include "internal.h"
#include "spec-internal.h"

static const char *const policy_errors[] = {
	[FLASH_E_POLICY_SYNTAX - FLASH_E_POLICY_BASE] = "owner policy is not acceptable JSON",
	[FLASH_E_POLICY_INVALID - FLASH_E_POLICY_BASE] = "owner policy breaks one or more rules",
	[FLASH_E_POLICY_VIOLATION - FLASH_E_POLICY_BASE] = "spec exceeds the owner quota policy",
};

const char *flash__policy_strerror(int code)
{
	size_t i = (size_t)(code - FLASH_E_POLICY_BASE);

	return i < ARRAY_SIZE(policy_errors) ? policy_errors[i] : NULL;
}

static const char *const resource_names[FLASH_POLICY_RESOURCE_COUNT_] = {
	[FLASH_POLICY_CPU_MILLIS] = "cpu_millis",
	[FLASH_POLICY_MEMORY_MIB] = "memory_mib",
	[FLASH_POLICY_REPLICAS] = "replicas",
	[FLASH_POLICY_GPUS] = "gpus",
	[FLASH_POLICY_EPHEMERAL_STORAGE_GIB] = "ephemeral_storage_gib",
	[FLASH_POLICY_PORTS] = "ports",
};

struct flash_policy {
	char **regions;
	size_t n_regions;
	char **gpus;
	size_t n_gpus;
	struct flowsdn_prefix *protected_cidrs;
	size_t n_protected;
	uint64_t workload[FLASH_POLICY_RESOURCE_COUNT_];
	uint64_t organization[FLASH_POLICY_RESOURCE_COUNT_];
	struct flash_policy_weekly_limits weekly;
};

FLASH_API const char *flash_policy_resource_name(enum flash_policy_resource res)
{
	return (unsigned int)res < FLASH_POLICY_RESOURCE_COUNT_ ? resource_names[res] : NULL;
}

FLASH_API void flash_policy_free(struct flash_policy *policy)
{
	if (!policy)
		return;
	for (size_t i = 0; policy->regions && i < policy->n_regions; i++)
		free(policy->regions[i]);
	free(policy->regions);
	for (size_t i = 0; policy->gpus && i < policy->n_gpus; i++)
		free(policy->gpus[i]);
	free(policy->gpus);
	free(policy->protected_cidrs);
	free(policy);
}

static int strv_from(const struct json_value *arr, char ***ret, size_t *ret_n)
{
	size_t n = arr && arr->type == JSON_ARRAY ? arr->u.array.n : 0;

	if (n == 0)
		return 0;
	*ret = calloc(n, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		(*ret)[i] = strdup(arr->u.array.items[i]->u.string.ptr);
		if (!(*ret)[i])
			return -ENOMEM;
		*ret_n = i + 1;
	}
	return 0;
}

static int prefix_cmp(const void *a, const void *b)
{
	return flowsdn_prefix_compare(a, b);
}

static int build(const struct json_value *doc, struct flash_policy *p)
{
	const struct json_value *wl = json_get(doc, "workload_limits");
	const struct json_value *ol = json_get(doc, "organization_limits");
	const struct json_value *wk = json_get(doc, "weekly_limits");
	const struct json_value *prot = json_get(doc, "protected_cidrs");
	int r;

	r = strv_from(json_get(doc, "regions"), &p->regions, &p->n_regions);
	if (r >= 0)
		r = strv_from(json_get(doc, "gpu_catalog"), &p->gpus, &p->n_gpus);
	if (r < 0)
		return r;
	if (prot && prot->u.array.n) {
		p->protected_cidrs = calloc(prot->u.array.n, sizeof(*p->protected_cidrs));
		if (!p->protected_cidrs)
			return -ENOMEM;
		for (size_t i = 0; i < prot->u.array.n; i++) {
			const struct json_value *it = prot->u.array.items[i];

			if (spec_cidr_parse(it->u.string.ptr, it->u.string.len, &p->protected_cidrs[i]) < 0)
				return -EINVAL; /* cannot happen: the schema checked it */
		}
		p->n_protected = prot->u.array.n;
		qsort(p->protected_cidrs, p->n_protected, sizeof(*p->protected_cidrs), prefix_cmp);
	}
	for (size_t i = 0; i < FLASH_POLICY_RESOURCE_COUNT_; i++) {
		p->workload[i] = (uint64_t)jint(wl, resource_names[i], 0);
		p->organization[i] = (uint64_t)jint(ol, resource_names[i], 0);
	}
	p->weekly.sz = sizeof(p->weekly);
	p->weekly.cpu_millicore_seconds = (uint64_t)jint(wk, "cpu_millicore_seconds", 0);
	p->weekly.memory_mib_seconds = (uint64_t)jint(wk, "memory_mib_seconds", 0);
	p->weekly.gpu_seconds = (uint64_t)jint(wk, "gpu_seconds", 0);
	return 0;
}

FLASH_API int flash_policy_parse(const char *json, size_t len, struct flash_policy **ret_policy,
				 struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	struct json_value *doc = NULL;
	struct flash_policy *p;
	struct check_ctx ctx;
	int r;

	if (!json || !ret_policy)
		return -EINVAL;
	diag_begin(diag, 0);
	r = json_parse_diag(json, len, &spec_json_limits, -FLASH_E_POLICY_SYNTAX, &doc, diag);
	if (r < 0)
		return r;
	check_ctx_init(&ctx, diag);
	spec_schema_check(&policy_root, doc, &ctx);
	if (diag_oom(diag)) {
		r = -ENOMEM;
		goto out_free_doc;
	}
	if (ctx.errors) {
		r = -FLASH_E_POLICY_INVALID;
		goto out_free_doc;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		r = -ENOMEM;
		goto out_free_doc;
	}
	r = build(doc, p);
	if (r < 0) {
		flash_policy_free(p);
		goto out_free_doc;
	}
	*ret_policy = p;
	r = 0;
out_free_doc:
	json_free(doc);
	return r;
}

/* The most replicas @spec may run: replicas, or autoscaling's maximum when
 * larger. */
static uint64_t max_replicas(const struct flash_spec *spec)
{
	uint64_t r = flash_spec_replicas(spec);
	uint64_t as = flash_spec_autoscaling_max_replicas(spec);

	return as > r ? as : r;
}

FLASH_API int flash_policy_usage_of_spec(const struct flash_spec *spec, struct flash_policy_usage *ret_usage)
{
	uint64_t n;

	if (!spec || !ret_usage || ret_usage->sz < sizeof(*ret_usage))
		return -EINVAL;
	n = max_replicas(spec);
	ret_usage->amount[FLASH_POLICY_CPU_MILLIS] = n * flash_spec_cpu_millis(spec);
	ret_usage->amount[FLASH_POLICY_MEMORY_MIB] = n * flash_spec_memory_mib(spec);
	ret_usage->amount[FLASH_POLICY_REPLICAS] = n;
	ret_usage->amount[FLASH_POLICY_GPUS] = n * flash_spec_gpu_count(spec);
	ret_usage->amount[FLASH_POLICY_EPHEMERAL_STORAGE_GIB] = n * flash_spec_ephemeral_storage_gib(spec);
	ret_usage->amount[FLASH_POLICY_PORTS] = flash_spec_port_count(spec);
	return 0;
}

/* The spec field that carries each resource, for the problem's path. */
static const char *const resource_paths[FLASH_POLICY_RESOURCE_COUNT_] = {
	[FLASH_POLICY_CPU_MILLIS] = "cpu_millis",
	[FLASH_POLICY_MEMORY_MIB] = "memory_mib",
	[FLASH_POLICY_REPLICAS] = "replicas",
	[FLASH_POLICY_GPUS] = "gpu_type",
	[FLASH_POLICY_EPHEMERAL_STORAGE_GIB] = "ephemeral_storage_gib",
	[FLASH_POLICY_PORTS] = "ports",
};

static void add_error(struct diag *diag, size_t *errors, const char *path, const char *code,
		      const char *value, const char *fmt, ...) _printf_(6, 7);

static void add_error(struct diag *diag, size_t *errors, const char *path, const char *code,
		      const char *value, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	(*errors)++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag_add_text(diag, DIAG_ERROR, path, code, value, "%s", msg);
}

static void quote(char *buf, size_t size, const char *s)
{
	/* Policy-checked strings are pattern-checked ASCII without quotes
	 * or backslashes. */
	snprintf(buf, size, "\"%s\"", s);
}

static void check_protected(const struct flash_policy *policy, const struct flash_spec *spec, struct diag *diag,
			    size_t *errors)
{
	static const struct {
		enum flash_spec_cidr_list list;
		const char *path;
	} lists[] = {
		{ FLASH_SPEC_ALLOWED_SOURCES, "exposure.allowed_source_cidrs" },
		{ FLASH_SPEC_ALLOWED_DESTINATIONS, "egress.allowed_destination_cidrs" },
	};

	for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
		for (size_t i = 0; i < flash_spec_cidr_count(spec, lists[l].list); i++) {
			const struct flowsdn_prefix *p = flash_spec_cidr(spec, lists[l].list, i);

			for (size_t j = 0; j < policy->n_protected; j++) {
				char text[FLOWSDN_PREFIX_STRLEN], prot[FLOWSDN_PREFIX_STRLEN];
				char value[FLOWSDN_PREFIX_STRLEN + 2];

				if (!flowsdn_prefix_overlaps(p, &policy->protected_cidrs[j]))
					continue;
				flowsdn_prefix_format(p, text, sizeof(text));
				flowsdn_prefix_format(&policy->protected_cidrs[j], prot, sizeof(prot));
				quote(value, sizeof(value), text);
				/* The spec keeps its lists sorted, so the entry is
				 * named by its value, the path is the list's. */
				add_error(diag, errors, lists[l].path, "policy-protected-cidr", value,
					  "%s overlaps the protected infrastructure range %s, which can never be granted",
					  text, prot);
				break;
			}
		}
	}
}

FLASH_API int flash_policy_check_spec(const struct flash_policy *policy, const struct flash_spec *spec,
				      struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	uint64_t per_replica[FLASH_POLICY_RESOURCE_COUNT_];
	char value[96];
	size_t errors = 0;

	if (!policy || !spec)
		return -EINVAL;

	if (!flash_policy_has_region(policy, flash_spec_region(spec))) {
		quote(value, sizeof(value), flash_spec_region(spec));
		add_error(diag, &errors, "region", "policy-region", value, "is not one of the owner's regions");
	}
	if (flash_spec_gpu_type(spec) && !flash_policy_has_gpu_type(policy, flash_spec_gpu_type(spec))) {
		quote(value, sizeof(value), flash_spec_gpu_type(spec));
		add_error(diag, &errors, "gpu_type", "policy-gpu-type", value,
			  policy->n_gpus ? "is not in the owner's GPU catalog" : "GPUs are not offered (the GPU catalog is empty)");
	}

	per_replica[FLASH_POLICY_CPU_MILLIS] = flash_spec_cpu_millis(spec);
	per_replica[FLASH_POLICY_MEMORY_MIB] = flash_spec_memory_mib(spec);
	per_replica[FLASH_POLICY_REPLICAS] = max_replicas(spec);
	per_replica[FLASH_POLICY_GPUS] = max_replicas(spec) * flash_spec_gpu_count(spec);
	per_replica[FLASH_POLICY_EPHEMERAL_STORAGE_GIB] = flash_spec_ephemeral_storage_gib(spec);
	per_replica[FLASH_POLICY_PORTS] = flash_spec_port_count(spec);
	for (size_t i = 0; i < FLASH_POLICY_RESOURCE_COUNT_; i++) {
		const char *path = resource_paths[i];

		if (per_replica[i] <= policy->workload[i])
			continue;
		/* Replicas over the limit because of autoscaling: point there. */
		if (i == FLASH_POLICY_REPLICAS && flash_spec_autoscaling_max_replicas(spec) > flash_spec_replicas(spec))
			path = "autoscaling.max_replicas";
		snprintf(value, sizeof(value), "%" PRIu64, per_replica[i]);
		add_error(diag, &errors, path, "policy-limit", value, "%s %" PRIu64 " exceeds the per-workload limit %" PRIu64,
			  resource_names[i], per_replica[i], policy->workload[i]);
	}
	check_protected(policy, spec, diag, &errors);
	if (diag_oom(diag))
		return -ENOMEM;
	return errors ? -FLASH_E_POLICY_VIOLATION : 0;
}

FLASH_API int flash_policy_check_organization(const struct flash_policy *policy, const struct flash_policy_usage *current,
					      const struct flash_spec *spec, struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	struct flash_policy_usage add = { .sz = sizeof(add) };
	size_t errors = 0;
	int r;

	if (!policy || !spec || (current && current->sz < sizeof(*current)))
		return -EINVAL;
	r = flash_policy_usage_of_spec(spec, &add);
	if (r < 0)
		return r;
	for (size_t i = 0; i < FLASH_POLICY_RESOURCE_COUNT_; i++) {
		uint64_t have = current ? current->amount[i] : 0;
		uint64_t total = have + add.amount[i];
		char value[32];

		if (total < have) /* overflow */
			total = UINT64_MAX;
		if (total <= policy->organization[i])
			continue;
		snprintf(value, sizeof(value), "%" PRIu64, add.amount[i]);
		add_error(diag, &errors, resource_paths[i], "policy-org-limit", value,
			  "organization %s would be %" PRIu64 " (%" PRIu64 " in use + %" PRIu64
			  " for this workload), over the organization limit %" PRIu64,
			  resource_names[i], total, have, add.amount[i], policy->organization[i]);
	}
	if (diag_oom(diag))
		return -ENOMEM;
	return errors ? -FLASH_E_POLICY_VIOLATION : 0;
}

FLASH_API uint64_t flash_policy_workload_limit(const struct flash_policy *policy, enum flash_policy_resource res)
{
	return policy && (unsigned int)res < FLASH_POLICY_RESOURCE_COUNT_ ? policy->workload[res] : UINT64_MAX;
}

FLASH_API uint64_t flash_policy_organization_limit(const struct flash_policy *policy, enum flash_policy_resource res)
{
	return policy && (unsigned int)res < FLASH_POLICY_RESOURCE_COUNT_ ? policy->organization[res] : UINT64_MAX;
}

FLASH_API int flash_policy_weekly_limits(const struct flash_policy *policy, struct flash_policy_weekly_limits *ret)
{
	if (!policy || !ret || ret->sz < sizeof(*ret))
		return -EINVAL;
	ret->cpu_millicore_seconds = policy->weekly.cpu_millicore_seconds;
	ret->memory_mib_seconds = policy->weekly.memory_mib_seconds;
	ret->gpu_seconds = policy->weekly.gpu_seconds;
	return 0;
}

FLASH_API size_t flash_policy_region_count(const struct flash_policy *policy)
{
	return policy ? policy->n_regions : 0;
}

FLASH_API const char *flash_policy_region(const struct flash_policy *policy, size_t i)
{
	return policy && i < policy->n_regions ? policy->regions[i] : NULL;
}

FLASH_API bool flash_policy_has_region(const struct flash_policy *policy, const char *region)
{
	for (size_t i = 0; policy && region && i < policy->n_regions; i++)
		if (strcmp(policy->regions[i], region) == 0)
			return true;
	return false;
}

FLASH_API size_t flash_policy_gpu_type_count(const struct flash_policy *policy)
{
	return policy ? policy->n_gpus : 0;
}

FLASH_API const char *flash_policy_gpu_type(const struct flash_policy *policy, size_t i)
{
	return policy && i < policy->n_gpus ? policy->gpus[i] : NULL;
}

FLASH_API bool flash_policy_has_gpu_type(const struct flash_policy *policy, const char *gpu_type)
{
	for (size_t i = 0; policy && gpu_type && i < policy->n_gpus; i++)
		if (strcmp(policy->gpus[i], gpu_type) == 0)
			return true;
	return false;
}

FLASH_API size_t flash_policy_protected_count(const struct flash_policy *policy)
{
	return policy ? policy->n_protected : 0;
}

FLASH_API const struct flowsdn_prefix *flash_policy_protected(const struct flash_policy *policy, size_t i)
{
	return policy && i < policy->n_protected ? &policy->protected_cidrs[i] : NULL;
}
