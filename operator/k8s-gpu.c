/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kubernetes Node objects -> the GPU scheduler's inventory (k8s-gpu.h). */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "k8s-gpu.h"
#include "names.h"
#include "util.h"

static const char *const default_tolerated[] = { OP_K8S_GPU_RESOURCE, NULL };
static const char *const default_smoke[] = { OP_K8S_GPU_SMOKE_LABEL, OP_K8S_GPU_SMOKE_VALUE, NULL };

/* Every (key, value) of the smoke-test selector is among @lab. */
static bool smoke_passed(const struct json_value *lab, const struct op_k8s_gpu_labels *labels)
{
	const char *const *sel = labels && labels->smoke_selector ? labels->smoke_selector : default_smoke;

	for (; sel[0] && sel[1]; sel += 2) {
		const char *v = json_string_value(json_get(lab, sel[0]));

		if (!v || strcmp(v, sel[1]) != 0)
			return false;
	}
	return true;
}

static bool tolerated(const struct op_k8s_gpu_labels *labels, const char *key)
{
	const char *const *t = labels && labels->tolerated ? labels->tolerated : default_tolerated;

	for (; *t; t++)
		if (strcmp(*t, key) == 0)
			return true;
	return false;
}

/* Ready condition "True". */
static bool node_ready(const struct json_value *node)
{
	const struct json_value *conds = json_at(node, "status.conditions");

	if (!json_is(conds, JSON_ARRAY))
		return false;
	for (size_t i = 0; i < conds->u.array.n; i++) {
		const struct json_value *c = conds->u.array.items[i];
		const char *type = json_string_value(json_get(c, "type"));

		if (type && strcmp(type, "Ready") == 0) {
			const char *st = json_string_value(json_get(c, "status"));

			return st && strcmp(st, "True") == 0;
		}
	}
	return false;
}

/* Some NoSchedule or NoExecute taint the GPU pods do not tolerate. */
static bool node_tainted(const struct json_value *node, const struct op_k8s_gpu_labels *labels)
{
	const struct json_value *taints = json_at(node, "spec.taints");

	if (!json_is(taints, JSON_ARRAY))
		return false;
	for (size_t i = 0; i < taints->u.array.n; i++) {
		const struct json_value *t = taints->u.array.items[i];
		const char *key = json_string_value(json_get(t, "key"));
		const char *effect = json_string_value(json_get(t, "effect"));

		if (!key || !effect || (strcmp(effect, "NoSchedule") != 0 && strcmp(effect, "NoExecute") != 0))
			continue;
		if (!tolerated(labels, key))
			return true;
	}
	return false;
}

/* A plain decimal quantity 0..FLASH_SCHED_SLOTS_MAX ("8"); extended
 * resources are whole numbers and the API server writes them so. */
static int read_count(struct check_ctx *ctx, const struct json_value *v, uint32_t *ret)
{
	const char *s = json_string_value(v);
	uint32_t n = 0;

	if (!s || !s[0] || strlen(s) > 3) {
		check_error(ctx, "range", v, "must be a whole number of GPUs 0..%d", FLASH_SCHED_SLOTS_MAX);
		return JSON_READ_REPORTED;
	}
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9') {
			check_error(ctx, "range", v, "must be a whole number of GPUs 0..%d", FLASH_SCHED_SLOTS_MAX);
			return JSON_READ_REPORTED;
		}
		n = n * 10 + (uint32_t)(*p - '0');
	}
	if (n > FLASH_SCHED_SLOTS_MAX) {
		check_error(ctx, "range", v, "%" PRIu32 " GPUs on one node: at most %d are supported", n,
			    FLASH_SCHED_SLOTS_MAX);
		return JSON_READ_REPORTED;
	}
	*ret = n;
	return 0;
}

int op_k8s_gpu_node_read(const struct json_value *node, const struct op_k8s_gpu_labels *labels,
			 struct flash_sched_node *ret, struct diag *diag)
{
	const char *type_label = labels && labels->type_label ? labels->type_label : OP_K8S_GPU_TYPE_LABEL;
	const char *kind, *api, *name = NULL, *type;
	const struct json_value *lab, *alloc, *unsched;
	uint32_t n = 0;
	struct check_ctx ctx;
	size_t mark;

	if (!node || !ret)
		return -EINVAL;
	check_ctx_init(&ctx, diag);
	kind = json_string_value(json_get(node, "kind"));
	api = json_string_value(json_get(node, "apiVersion"));
	/* Watch events and list items may omit kind (items of a NodeList
	 * carry none); when present they must say Node v1. */
	if ((kind && strcmp(kind, "Node") != 0) || (api && strcmp(api, "v1") != 0))
		check_error(&ctx, "kind", NULL, "not a v1 Node (%s %s)", api ? api : "-", kind ? kind : "-");
	if (json_read_string_at(&ctx, node, "metadata.name", true, &name) == 0 && name &&
	    !names_dns_subdomain_valid(name))
		check_error_at(&ctx, "metadata.name", "name", json_at(node, "metadata.name"),
			       "must be a DNS-1123 subdomain");
	lab = json_at(node, "metadata.labels");
	type = json_string_value(json_get(lab, type_label));
	if (type && type[0] && !names_label_value_valid(type)) {
		mark = json_path_push_key(&ctx.path, "metadata");
		json_path_push_key(&ctx.path, "labels");
		check_error_at(&ctx, type_label, "label-value", json_get(lab, type_label), "not a label value");
		json_path_pop(&ctx.path, mark);
	}
	if (type && !type[0])
		type = NULL;
	alloc = json_get(json_at(node, "status.allocatable"), OP_K8S_GPU_RESOURCE);
	if (alloc) {
		mark = json_path_push_key(&ctx.path, "status");
		json_path_push_key(&ctx.path, "allocatable");
		json_path_push_key(&ctx.path, OP_K8S_GPU_RESOURCE);
		read_count(&ctx, alloc, &n);
		json_path_pop(&ctx.path, mark);
	}
	if (ctx.oom)
		return -ENOMEM;
	if (ctx.errors)
		return JSON_READ_REPORTED;
	unsched = json_at(node, "spec.unschedulable");
	*ret = (struct flash_sched_node){
		.sz = sizeof(*ret),
		.name = name,
		.gpu_type = type,
		.allocatable = type ? n : 0,
		.smoke_passed = smoke_passed(lab, labels),
		.schedulable = node_ready(node) && !(json_is(unsched, JSON_BOOL) && unsched->u.boolean) &&
			       !node_tainted(node, labels),
	};
	return 0;
}

int op_k8s_gpu_node_event(struct flash_sched *s, const char *event, const struct json_value *node,
			  const struct op_k8s_gpu_labels *labels, struct diag *diag)
{
	struct flash_sched_node n;
	const char *name;
	int r;

	if (!s || !event || !node)
		return -EINVAL;
	if (strcmp(event, "BOOKMARK") == 0)
		return 0;
	if (strcmp(event, "DELETED") == 0) {
		name = json_string_value(json_at(node, "metadata.name"));
		if (!name)
			return -EINVAL;
		r = flash_sched_node_remove(s, name);
		return r == -ENOENT ? 0 : r;
	}
	if (strcmp(event, "ADDED") != 0 && strcmp(event, "MODIFIED") != 0)
		return -EINVAL;
	r = op_k8s_gpu_node_read(node, labels, &n, diag);
	if (r < 0) {
		name = json_string_value(json_at(node, "metadata.name"));
		if (name)
			(void)flash_sched_node_remove(s, name);
		return r;
	}
	return flash_sched_node_set(s, &n);
}
