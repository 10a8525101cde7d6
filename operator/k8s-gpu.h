/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The GPU inventory from Kubernetes Node objects: a v1 Node (a parsed
 * common/json.h tree, as a list or watch gives it) becomes the
 * struct flash_sched_node of <flash/sched.h>.
 *
 *   gpu_type      the value of the operator's GPU node label
 *                 (gpuNodeLabel, "flash.heterocloud.io/gpu-type")
 *   allocatable   status.allocatable["nvidia.com/gpu"] (what the NVIDIA
 *                 device plugin reports; a plain integer)
 *   smoke_passed  every label of the smoke-test selector matches: the
 *                 operator config's gpuNodeSelector, which the nvidia
 *                 RuntimeClass's scheduling also uses (default
 *                 "flash.heterocloud.io/gpu-ready": "true", set on a node
 *                 once it passed the GPU smoke test)
 *   schedulable   status condition Ready is "True", spec.unschedulable is
 *                 not true (cordon), and no NoSchedule/NoExecute taint
 *                 except those the GPU pods tolerate ("nvidia.com/gpu")
 *
 * No HTTP here: the reconcile loop feeds what the client lists and
 * watches.
 */
#ifndef FLASH_OPERATOR_K8S_GPU_H
#define FLASH_OPERATOR_K8S_GPU_H

#include <flash/sched.h>

#include "diag.h"
#include "json.h"

#define OP_K8S_GPU_TYPE_LABEL "flash.heterocloud.io/gpu-type"
#define OP_K8S_GPU_SMOKE_LABEL "flash.heterocloud.io/gpu-ready"
#define OP_K8S_GPU_SMOKE_VALUE "true"
#define OP_K8S_GPU_RESOURCE "nvidia.com/gpu"

struct op_k8s_gpu_labels {
	const char *type_label;        /* NULL: OP_K8S_GPU_TYPE_LABEL */
	/* The smoke-test selector: label keys and values alternating,
	 * NULL-terminated; NULL: OP_K8S_GPU_SMOKE_LABEL=OP_K8S_GPU_SMOKE_VALUE. */
	const char *const *smoke_selector;
	/* Taint keys the GPU pods tolerate, NULL-terminated; NULL: just
	 * OP_K8S_GPU_RESOURCE. */
	const char *const *tolerated;
};

/* Reads Node @node into *ret (its strings point into @node).  @labels may
 * be NULL (the defaults).  Returns 0, -EINVAL (NULL arguments), or
 * JSON_READ_REPORTED with each problem in @diag (may be NULL): not a v1
 * Node, a name that is not a DNS subdomain, a GPU label value that is not
 * a label value, an allocatable that is not a plain integer 0..64. */
int op_k8s_gpu_node_read(const struct json_value *node, const struct op_k8s_gpu_labels *labels,
			 struct flash_sched_node *ret, struct diag *diag);

/* Applies one watch event on a Node to @s: @event "ADDED" or "MODIFIED"
 * sets the node (a node that cannot be read is removed, since what is
 * known of it is stale, and the read's error returned), "DELETED" removes
 * it (an unknown one is no error), "BOOKMARK" does nothing.  Returns the
 * number of workloads returned to their queues, or the errors of
 * op_k8s_gpu_node_read() and flash_sched_node_set(), -EINVAL for another
 * @event. */
int op_k8s_gpu_node_event(struct flash_sched *s, const char *event, const struct json_value *node,
			  const struct op_k8s_gpu_labels *labels, struct diag *diag);

#endif
