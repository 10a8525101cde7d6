/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Recorded Node objects (exchanges 39-45 of a real kube-apiserver v1.36)
 * read into the GPU scheduler's inventory: type label, nvidia.com/gpu
 * allocatable, the smoke-test label, Ready, cordon and taints, and watch
 * events driving the scheduler. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "k8s-gpu.h"
#include "k8s-recorded.h"

/* Labels a100 + smoke test passed, 4 GPUs allocatable, on a recorded node. */
static char *gpu_variant(const char *text, const char *smoke, const char *alloc)
{
	char labels[256], status[256];
	char *a, *b;

	snprintf(labels, sizeof(labels),
		 "\"labels\":{\"flash.heterocloud.io/gpu-type\":\"a100\"%s%s%s,", smoke ? ",\"flash.heterocloud.io/gpu-ready\":\"" : "",
		 smoke ? smoke : "", smoke ? "\"" : "");
	snprintf(status, sizeof(status), "\"status\":{\"allocatable\":{\"cpu\":\"8\",\"nvidia.com/gpu\":\"%s\"},", alloc);
	a = k8s_test_edit(text, "\"labels\":{", labels);
	b = k8s_test_edit(a, "\"status\":{", status);
	free(a);
	return b;
}

static int read_node(const char *text, struct flash_sched_node *n, struct json_value **ret_v, struct diag *d)
{
	*ret_v = k8s_test_parse(text);
	return op_k8s_gpu_node_read(*ret_v, NULL, n, d);
}

Test(k8s_gpu, recorded_nodes_without_gpus)
{
	static const char *const files[] = { "39-node-create.json", "41-node-get.json", "44-node-patch-labels.json",
					     "45-node-patch-status.json" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *body = k8s_test_exchange(files[i], "response.body");
		struct flash_sched_node n;
		struct json_value *v;

		ASSERT_OK(read_node(body, &n, &v, NULL), files[i]);
		cr_assert_str_eq(n.name, "node-a", "%s", files[i]);
		cr_assert_null(n.gpu_type, "%s: no GPU label", files[i]);
		cr_assert_eq(n.allocatable, 0, "%s", files[i]);
		cr_assert(!n.smoke_passed, "%s", files[i]);
		/* 39-44 have no Ready condition; 45 is Ready but keeps the
		 * not-ready:NoSchedule taint (the lifecycle controller is off). */
		cr_assert(!n.schedulable, "%s: schedulable", files[i]);
		json_free(v);
		free(body);
	}
}

Test(k8s_gpu, ready_taints_and_cordon)
{
	char *body = k8s_test_exchange("45-node-patch-status.json", "response.body");
	char *gpu = gpu_variant(body, "true", "4");
	char *untainted = k8s_test_edit(gpu, "\"key\":\"node.kubernetes.io/not-ready\"", "\"key\":\"nvidia.com/gpu\"");
	char *cordoned = k8s_test_edit(untainted, "\"spec\":{", "\"spec\":{\"unschedulable\":true,");
	char *noexec = k8s_test_edit(gpu, "\"effect\":\"NoSchedule\"", "\"effect\":\"PreferNoSchedule\"");
	char *notready = k8s_test_edit(untainted, "\"status\":\"True\"", "\"status\":\"Unknown\"");
	struct flash_sched_node n;
	struct json_value *v;

	ASSERT_OK(read_node(gpu, &n, &v, NULL), "gpu");
	cr_assert_str_eq(n.gpu_type, "a100");
	cr_assert_eq(n.allocatable, 4);
	cr_assert(n.smoke_passed);
	cr_assert(!n.schedulable, "the not-ready NoSchedule taint keeps GPU work off");
	json_free(v);
	ASSERT_OK(read_node(untainted, &n, &v, NULL), "untainted");
	cr_assert(n.schedulable, "only the tolerated nvidia.com/gpu taint left");
	json_free(v);
	ASSERT_OK(read_node(cordoned, &n, &v, NULL), "cordoned");
	cr_assert(!n.schedulable, "cordoned");
	json_free(v);
	ASSERT_OK(read_node(noexec, &n, &v, NULL), "prefer");
	cr_assert(n.schedulable, "PreferNoSchedule does not keep work off");
	json_free(v);
	ASSERT_OK(read_node(notready, &n, &v, NULL), "not ready");
	cr_assert(!n.schedulable, "Ready Unknown");
	json_free(v);
	free(body);
	free(gpu);
	free(untainted);
	free(cordoned);
	free(noexec);
	free(notready);
}

Test(k8s_gpu, smoke_label_and_bad_values)
{
	char *body = k8s_test_exchange("44-node-patch-labels.json", "response.body");
	char *failed = gpu_variant(body, "false", "2");
	char *nolabel = gpu_variant(body, NULL, "2");
	char *frac = gpu_variant(body, "true", "500m");
	char *huge = gpu_variant(body, "true", "65");
	char *pod = k8s_test_edit(body, "\"kind\":\"Node\"", "\"kind\":\"Pod\"");
	struct flash_sched_node n;
	struct json_value *v;
	struct diag *d = NULL;
	const struct diag_entry *e;

	ASSERT_OK(diag_new(&d), "diag");
	ASSERT_OK(read_node(failed, &n, &v, d), "failed");
	cr_assert(!n.smoke_passed, "value false");
	cr_assert_eq(n.allocatable, 2);
	json_free(v);
	ASSERT_OK(read_node(nolabel, &n, &v, d), "no label");
	cr_assert(!n.smoke_passed, "no label");
	json_free(v);
	{
		/* The selector is the operator's (gpuNodeSelector): all of it. */
		static const char *const sel[] = { "flash.heterocloud.io/gpu-ready", "true", "kubernetes.io/os", "linux",
						   NULL };
		static const char *const other[] = { "example.com/gpu-ok", "yes", NULL };
		struct op_k8s_gpu_labels l1 = { .smoke_selector = sel }, l2 = { .smoke_selector = other };
		char *ok = gpu_variant(body, "true", "2");

		v = k8s_test_parse(ok);
		ASSERT_OK(op_k8s_gpu_node_read(v, &l1, &n, d), "selector");
		cr_assert(n.smoke_passed, "both labels match");
		ASSERT_OK(op_k8s_gpu_node_read(v, &l2, &n, d), "selector");
		cr_assert(!n.smoke_passed, "example.com/gpu-ok missing");
		json_free(v);
		free(ok);
	}
	ASSERT_ERR(read_node(frac, &n, &v, d), JSON_READ_REPORTED, "500m");
	e = diag_first_error(d);
	cr_assert_str_eq(e->path, "status.allocatable[\"nvidia.com/gpu\"]");
	cr_assert(strstr(e->message, "whole number of GPUs"), "%s", e->message);
	json_free(v);
	diag_reset(d);
	ASSERT_ERR(read_node(huge, &n, &v, d), JSON_READ_REPORTED, "65");
	cr_assert(strstr(diag_first_error(d)->message, "65 GPUs on one node"), "%s", diag_first_error(d)->message);
	json_free(v);
	diag_reset(d);
	ASSERT_ERR(read_node(pod, &n, &v, d), JSON_READ_REPORTED, "a Pod");
	cr_assert_str_eq(diag_first_error(d)->code, "kind");
	json_free(v);
	diag_free(d);
	free(body);
	free(failed);
	free(nolabel);
	free(frac);
	free(huge);
	free(pod);
}

Test(k8s_gpu, watch_events_drive_the_scheduler)
{
	char *body = k8s_test_exchange("45-node-patch-status.json", "response.body");
	char *gpu = gpu_variant(body, "true", "2");
	char *ready = k8s_test_edit(gpu, "\"key\":\"node.kubernetes.io/not-ready\"", "\"key\":\"nvidia.com/gpu\"");
	char *bad = gpu_variant(body, "true", "x");
	struct json_value *v1 = k8s_test_parse(gpu), *v2 = k8s_test_parse(ready), *v3 = k8s_test_parse(bad);
	struct flash_sched *s = NULL;
	struct flash_sched_state st;
	FLASH_OPTS(flash_sched_request, r, .id = "fs-1", .gpu_type = "a100", .count = 2, .organization = "org-1");

	ASSERT_OK(flash_sched_new(NULL, &s), "new");
	ASSERT_ERR(flash_sched_enqueue(s, &r, NULL), -FLASH_E_SCHED_NO_NODE, "no node yet");
	ASSERT_OK(op_k8s_gpu_node_event(s, "ADDED", v1, NULL, NULL), "added");
	ASSERT_OK(flash_sched_enqueue(s, &r, NULL), "enqueue");
	cr_assert_eq(flash_sched_schedule(s), 0, "tainted node takes nothing");
	ASSERT_OK(op_k8s_gpu_node_event(s, "MODIFIED", v2, NULL, NULL), "taint gone");
	cr_assert_eq(flash_sched_schedule(s), 1, "bound");
	ASSERT_OK(flash_sched_state(s, "fs-1", &st), "state");
	cr_assert_str_eq(st.node, "node-a");
	ASSERT_OK(op_k8s_gpu_node_event(s, "BOOKMARK", v2, NULL, NULL), "bookmark");
	ASSERT_ERR(op_k8s_gpu_node_event(s, "ERROR", v2, NULL, NULL), -EINVAL, "unknown event");
	/* A node that no longer reads is dropped, and its workload returned. */
	ASSERT_ERR(op_k8s_gpu_node_event(s, "MODIFIED", v3, NULL, NULL), JSON_READ_REPORTED, "bad allocatable");
	cr_assert_eq(flash_sched_node_count(s), 0, "dropped");
	ASSERT_OK(flash_sched_state(s, "fs-1", &st), "state");
	cr_assert_eq(st.phase, FLASH_SCHED_QUEUED);
	cr_assert(strstr(st.reason, "node node-a removed"), "%s", st.reason);
	ASSERT_OK(op_k8s_gpu_node_event(s, "ADDED", v2, NULL, NULL), "back");
	cr_assert_eq(flash_sched_schedule(s), 1, "bound again");
	cr_assert_eq(op_k8s_gpu_node_event(s, "DELETED", v2, NULL, NULL), 1, "deleted: one workload returned");
	ASSERT_OK(op_k8s_gpu_node_event(s, "DELETED", v2, NULL, NULL), "deleted twice is no error");
	flash_sched_free(s);
	json_free(v1);
	json_free(v2);
	json_free(v3);
	free(body);
	free(gpu);
	free(ready);
	free(bad);
}
