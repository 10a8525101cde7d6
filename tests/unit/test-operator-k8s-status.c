/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* FlashService status decisions against objects recorded from a real
 * kube-apiserver v1.36 (tests/data/k8s/exchanges): readiness from the
 * Deployment, EndpointSlices and LoadBalancer ingress; terminal Pod
 * failures; the status object validated against the CRD's recorded
 * schema, with lastTransitionTime kept while a status stays; and leader
 * election on the recorded Lease, with a property test of two candidates
 * on skewed, drifting clocks. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/diag.h>
#include <flash/render.h>

#include "helpers.h"
#include "k8s-recorded.h"
#include "k8s-status.h"

#define NOW INT64_C(1796000000) /* 2026-11-30T00:53:20Z */

#define ASSERT_EQ_INT(x, v)                                                                      \
	do {                                                                                     \
		long _r = (long)(x), _v = (long)(v);                                             \
		cr_assert(_r == _v, "%s returned %ld (%s), expected %ld", #x, _r,                \
			  _r < 0 ? test_strerror(_r) : "", _v);                                  \
	} while (0)

static struct json_value *exchange(const char *file)
{
	char *body = k8s_test_exchange(file, "response.body");
	struct json_value *v = k8s_test_parse(body);

	free(body);
	return v;
}

/* Exchange @file's response body with the first @old replaced by @new. */
static struct json_value *edited(const char *file, const char *old, const char *new)
{
	char *body = k8s_test_exchange(file, "response.body");
	char *e = k8s_test_edit(body, old, new);
	struct json_value *v = k8s_test_parse(e);

	free(body);
	free(e);
	return v;
}

static const struct op_k8s_condition *C(const struct op_k8s_status *st, enum op_k8s_cond_type t)
{
	cr_assert(st->cond[t].present, "%s absent", op_k8s_cond_name(t));
	return &st->cond[t];
}

static void assert_cond(const struct op_k8s_status *st, enum op_k8s_cond_type t, bool status, const char *reason,
			const char *text)
{
	const struct op_k8s_condition *c = C(st, t);

	cr_assert_eq(c->status, status, "%s: status %d, expected %d (%s: %s)", op_k8s_cond_name(t), c->status, status,
		     c->reason, c->message);
	cr_assert_str_eq(c->reason, reason, "%s: reason %s (%s)", op_k8s_cond_name(t), c->reason, c->message);
	cr_assert(strstr(c->message, text), "%s: message \"%s\" lacks \"%s\"", op_k8s_cond_name(t), c->message, text);
}

/* The recorded Deployment (35) as if its rollout had completed. */
#define DEP_DONE_OLD "\"unavailableReplicas\":4"
#define DEP_DONE_NEW "\"availableReplicas\":3,\"readyReplicas\":3,\"unavailableReplicas\":0"

Test(k8s_status, recorded_deployment_without_kubelet)
{
	struct json_value *dep = exchange("35-deployment-get-status.json");
	struct op_k8s_status_input in = { .generation = 7, .replicas = 3, .deployment = dep };
	struct op_k8s_status st;

	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	cr_assert_eq(st.observed_generation, 7);
	cr_assert_eq(st.ready_replicas, 0);
	/* 35: no Pod ready (no kubelet), one of four updated. */
	assert_cond(&st, OP_K8S_COND_READY, false, "ReplicasUnavailable", "0 of 3 replicas available, 1 updated");
	assert_cond(&st, OP_K8S_COND_PROGRESSING, true, "ReplicasUnavailable", "0 of 3");
	assert_cond(&st, OP_K8S_COND_DEGRADED, false, "AsExpected", "");
	assert_cond(&st, OP_K8S_COND_SUSPENDED, false, "WithinLimits", "");
	cr_assert(!st.cond[OP_K8S_COND_QUEUED].present, "no GPU, no Queued");

	in.deployment = NULL;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_READY, false, "DeploymentPending", "not created");
	json_free(dep);
	ASSERT_ERR(op_k8s_status_decide(NULL, &st), -EINVAL, "NULL");
}

Test(k8s_status, readiness_needs_replicas_and_endpoint)
{
	struct json_value *dep = edited("35-deployment-get-status.json", DEP_DONE_OLD, DEP_DONE_NEW);
	struct json_value *dep_all = edited("35-deployment-get-status.json", "\"updatedReplicas\":1", "\"updatedReplicas\":3");
	struct json_value *svc = exchange("11-service-lb-apply.json");
	struct json_value *ingress = edited("11-service-lb-apply.json", "\"loadBalancer\":{}",
					    "\"loadBalancer\":{\"ingress\":[{\"ip\":\"198.51.100.20\"}]}");
	struct json_value *slice = exchange("56-eps-create-web.json");
	struct json_value *half = exchange("63-eps-patch-terminating.json");
	struct json_value *none = NULL;
	struct json_value *dep_ok = NULL;
	const struct json_value *slices[1];
	struct op_k8s_status_input in = { .generation = 2, .replicas = 3, .has_service = true };
	struct op_k8s_status st;
	char *text;

	{
		char *b = k8s_test_exchange("62-eps-create-local.json", "response.body");
		char *e = k8s_test_edit_all(b, "\"ready\":true", "\"ready\":false");

		none = k8s_test_parse(e);
		free(b);
		free(e);
	}
	/* updatedReplicas 1 of 3: not ready even with 3 available. */
	in.deployment = dep;
	in.service = svc;
	slices[0] = slice;
	in.slices = slices;
	in.n_slices = 1;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_READY, false, "ReplicasUnavailable", "3 of 3 replicas available, 1 updated");

	/* Both: 3 available and updated. */
	text = k8s_test_exchange("35-deployment-get-status.json", "response.body");
	{
		char *a = k8s_test_edit(text, DEP_DONE_OLD, DEP_DONE_NEW);
		char *b = k8s_test_edit(a, "\"updatedReplicas\":1", "\"updatedReplicas\":3");

		dep_ok = k8s_test_parse(b);
		free(a);
		free(b);
	}
	free(text);
	in.deployment = dep_ok;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_READY, true, "Ready", "3 of 3 replicas available, endpoint ready");
	assert_cond(&st, OP_K8S_COND_PROGRESSING, false, "Complete", "generation 2");
	cr_assert_eq(st.ready_replicas, 3);

	/* 63: one endpoint ready, one terminating: still ready. */
	slices[0] = half;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	cr_assert(C(&st, OP_K8S_COND_READY)->status, "one ready endpoint is enough");
	/* No ready endpoint. */
	slices[0] = none;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_READY, false, "EndpointNotReady", "Service fs-web");
	assert_cond(&st, OP_K8S_COND_PROGRESSING, true, "EndpointNotReady", "");
	in.n_slices = 0;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_READY, false, "EndpointNotReady", "");

	/* Public: the recorded Service has no ingress yet (no LB controller). */
	in.n_slices = 1;
	slices[0] = slice;
	in.public = true;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_READY, false, "LoadBalancerPending", "Service fs-web has no LoadBalancer ingress");
	in.service = ingress;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	cr_assert(C(&st, OP_K8S_COND_READY)->status, "ingress present");

	/* A newer Deployment generation than its controller observed. */
	json_free(dep);
	dep = edited("35-deployment-get-status.json", "\"generation\":2", "\"generation\":3");
	in.deployment = dep;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_READY, false, "RolloutPending", "generation 3");

	/* Scaled to zero: nothing to wait for. */
	in.deployment = dep_all;
	in.replicas = 0;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_READY, true, "ScaledToZero", "0 of 0");

	json_free(dep);
	json_free(dep_all);
	json_free(dep_ok);
	json_free(svc);
	json_free(ingress);
	json_free(slice);
	json_free(half);
	json_free(none);
}

/* Pod 48 (Running, recorded) with @statuses as its containerStatuses. */
static struct json_value *pod_with(const char *statuses)
{
	char repl[2048];

	snprintf(repl, sizeof(repl), "\"status\":{\"containerStatuses\":%s,", statuses);
	return edited("48-pod-status-patch.json", "\"status\":{", repl);
}

#define CS(state, last, restarts)                                                                            \
	"[{\"name\":\"web\",\"image\":\"ghcr.io/acme/web\",\"imageID\":\"\",\"ready\":false,\"restartCount\":" \
	restarts ",\"state\":" state ",\"lastState\":" last "}]"
#define WAITING(reason, msg) "{\"waiting\":{\"reason\":\"" reason "\",\"message\":\"" msg "\"}}"

Test(k8s_status, terminal_pod_failures)
{
	static const struct {
		const char *statuses;
		enum op_k8s_failure kind;
		const char *reason, *text;
	} cases[] = {
		{ CS(WAITING("ErrImagePull", "manifest unknown"), "{}", "0"), OP_K8S_FAIL_ERR_IMAGE_PULL, "ErrImagePull",
		  "container web of pod web-1: ErrImagePull: manifest unknown" },
		{ CS(WAITING("ImagePullBackOff", "Back-off pulling image"), "{}", "0"), OP_K8S_FAIL_IMAGE_PULL_BACKOFF,
		  "ImagePullBackOff", "container web of pod web-1: ImagePullBackOff" },
		{ CS(WAITING("CreateContainerConfigError", "secret \\\"db\\\" not found"), "{}", "0"), OP_K8S_FAIL_CONFIG,
		  "CreateContainerConfigError", "secret \"db\" not found" },
		{ CS(WAITING("CrashLoopBackOff", "back-off 5m0s"),
		     "{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\",\"startedAt\":\"2026-11-29T11:20:00Z\","
		     "\"finishedAt\":\"2026-11-29T11:20:03Z\"}}", "6"),
		  OP_K8S_FAIL_CRASH_LOOP, "CrashLoopBackOff", "CrashLoopBackOff after 6 restarts: back-off 5m0s" },
		{ CS(WAITING("CrashLoopBackOff", "back-off 5m0s"),
		     "{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\",\"startedAt\":\"2026-11-29T11:20:00Z\","
		     "\"finishedAt\":\"2026-11-29T11:20:02Z\"}}", "1"),
		  OP_K8S_FAIL_OOM_AT_START, "OOMKilled", "container web of pod web-1: OOMKilled" },
		{ CS("{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\",\"startedAt\":\"2026-11-29T11:20:00Z\","
		     "\"finishedAt\":\"2026-11-29T11:20:01Z\"}}", "{}", "0"),
		  OP_K8S_FAIL_OOM_AT_START, "OOMKilled", "OOMKilled" },
		/* Not terminal: a crash loop below the bound, an OOM kill after
		 * two hours of running, a plain ContainerCreating. */
		{ CS(WAITING("CrashLoopBackOff", "back-off 40s"), "{}", "3"), OP_K8S_FAIL_NONE, NULL, NULL },
		{ CS(WAITING("CrashLoopBackOff", "back-off 10s"),
		     "{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\",\"startedAt\":\"2026-11-29T09:20:00Z\","
		     "\"finishedAt\":\"2026-11-29T11:20:00Z\"}}", "1"),
		  OP_K8S_FAIL_NONE, NULL, NULL },
		{ CS(WAITING("ContainerCreating", ""), "{}", "0"), OP_K8S_FAIL_NONE, NULL, NULL },
	};
	struct json_value *dep = exchange("35-deployment-get-status.json");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_value *pod = pod_with(cases[i].statuses);
		const struct json_value *pods[1] = { pod };
		struct op_k8s_status_input in = { .generation = 2, .replicas = 3, .deployment = dep, .pods = pods,
						  .n_pods = 1 };
		struct op_k8s_pod_failure f;
		struct op_k8s_status st;

		op_k8s_pod_failure(pod, 0, &f);
		cr_assert_eq(f.kind, cases[i].kind, "case %zu: kind %d, expected %d", i, f.kind, cases[i].kind);
		ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
		if (cases[i].kind == OP_K8S_FAIL_NONE) {
			assert_cond(&st, OP_K8S_COND_DEGRADED, false, "AsExpected", "");
		} else {
			cr_assert_str_eq(f.container, "web", "case %zu", i);
			cr_assert_str_eq(f.pod, "web-1", "case %zu", i);
			assert_cond(&st, OP_K8S_COND_DEGRADED, true, cases[i].reason, cases[i].text);
			assert_cond(&st, OP_K8S_COND_READY, false, cases[i].reason, "container web");
			assert_cond(&st, OP_K8S_COND_PROGRESSING, false, cases[i].reason, "container web");
		}
		json_free(pod);
	}
	{
		/* The bound is the caller's. */
		struct json_value *pod = pod_with(CS(WAITING("CrashLoopBackOff", "x"), "{}", "3"));
		struct op_k8s_pod_failure f;

		op_k8s_pod_failure(pod, 3, &f);
		cr_assert_eq(f.kind, OP_K8S_FAIL_CRASH_LOOP, "3 restarts with a bound of 3");
		json_free(pod);
	}
	{
		/* The recorded Pods have no container statuses at all. */
		struct json_value *pod = exchange("47-pod-create.json");
		struct op_k8s_pod_failure f;

		op_k8s_pod_failure(pod, 0, &f);
		cr_assert_eq(f.kind, OP_K8S_FAIL_NONE);
		json_free(pod);
	}
	json_free(dep);
}

Test(k8s_status, progress_deadline_suspension_and_gpu_queue)
{
	struct json_value *stuck = edited("35-deployment-get-status.json",
					  "\"status\":\"True\",\"lastUpdateTime\":\"2026-11-29T10:23:23Z\","
					  "\"lastTransitionTime\":\"2026-11-29T10:23:22Z\",\"reason\":\"ReplicaSetUpdated\"",
					  "\"status\":\"False\",\"lastUpdateTime\":\"2026-11-29T10:23:23Z\","
					  "\"lastTransitionTime\":\"2026-11-29T10:23:22Z\",\"reason\":\"ProgressDeadlineExceeded\"");
	struct op_k8s_status_input in = { .generation = 2, .replicas = 3, .deployment = stuck };
	struct flash_sched_state q = { .id = "fs-1", .gpu_type = "a100", .count = 1, .phase = FLASH_SCHED_QUEUED,
				       .position = 2, .reason = "waiting behind 1 earlier workload of type a100" };
	struct op_k8s_status st;

	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_DEGRADED, true, "ProgressDeadlineExceeded", "is progressing");

	in.suspended = true;
	in.suspended_message = "weekly CPU limit of org-1 reached; suspended until 2026-12-07T00:00:00Z";
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_SUSPENDED, true, "WeeklyLimitReached", "until 2026-12-07T00:00:00Z");
	assert_cond(&st, OP_K8S_COND_READY, false, "Suspended", "weekly CPU limit");
	assert_cond(&st, OP_K8S_COND_PROGRESSING, false, "Suspended", "");

	in.suspended = false;
	in.gpu = &q;
	json_free(stuck);
	stuck = exchange("35-deployment-get-status.json");
	in.deployment = stuck;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_QUEUED, true, "WaitingForGPU",
		    "position 2 in the a100 queue: waiting behind 1 earlier workload");
	assert_cond(&st, OP_K8S_COND_READY, false, "Queued", "position 2");
	assert_cond(&st, OP_K8S_COND_PROGRESSING, true, "Queued", "position 2");
	q.phase = FLASH_SCHED_BOUND;
	q.node = "gpu-1";
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	assert_cond(&st, OP_K8S_COND_QUEUED, false, "GPUBound", "1 GPU of type a100 on node gpu-1");
	json_free(stuck);
}

/* The recorded FlashService with @status as its status, validated
 * against the recorded flash_v1alpha1 OpenAPI document. */
static void validate_status(const char *status)
{
	char *fs = k8s_test_read("k8s/recorded/flashservice-valid.json", NULL);
	char *api = NULL, *obj = NULL;
	struct json_value *v = k8s_test_parse(fs);
	struct json_writer *w = json_writer_new(0);
	struct flash_schema_set *set = NULL;
	struct flash_diag *d = NULL;
	size_t len, alen;
	int r;

	jw_object_open(w);
	for (size_t i = 0; i < v->u.object.n; i++) {
		if (strcmp(v->u.object.members[i].key, "status") == 0)
			continue;
		jw_key(w, v->u.object.members[i].key);
		jw_value(w, v->u.object.members[i].value);
	}
	jw_key(w, "status");
	jw_raw(w, status, strlen(status));
	jw_object_close(w);
	cr_assert(json_writer_finish(w, &obj, &len) == 0);
	ASSERT_OK(flash_diag_new(&d), "diag");
	ASSERT_OK(flash_schema_set_new(&set), "set");
	api = k8s_test_read("k8s/openapi/flash_v1alpha1.json", &alen);
	ASSERT_OK(flash_schema_set_add_openapi(set, api, alen, d), "flash_v1alpha1");
	r = flash_schema_validate_object(set, obj, len, d);
	cr_assert(r == 0, "status refused by the CRD schema: %s: %s", flash_diag_first_error(d)->path,
		  flash_diag_first_error(d)->message);
	/* The schema does check the status: a condition without a reason is
	 * refused. */
	{
		char *bad = k8s_test_edit(obj, "\"reason\":", "\"reason_\":");

		ASSERT_ERR(flash_schema_validate_object(set, bad, strlen(bad), d), -FLASH_E_RENDER_INVALID, "no reason");
		free(bad);
	}
	flash_schema_set_free(set);
	flash_diag_free(d);
	json_free(v);
	free(api);
	free(obj);
	free(fs);
}

Test(k8s_status, status_object_and_transition_times)
{
	struct json_value *dep = exchange("35-deployment-get-status.json");
	struct op_k8s_status_input in = { .generation = 2, .replicas = 3, .deployment = dep };
	struct op_k8s_status st;
	struct json_value *old, *next;
	char *json = NULL, *json2 = NULL;
	size_t len;

	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	ASSERT_OK(op_k8s_status_to_json(&st, NULL, NOW, &json, &len), "to_json");
	validate_status(json);
	old = k8s_test_parse(json);
	cr_assert_str_eq(json_string_value(json_at(old, "conditions[0].type")), "Ready");
	cr_assert_str_eq(json_string_value(json_at(old, "conditions[0].status")), "False");
	cr_assert_str_eq(json_string_value(json_at(old, "conditions[0].lastTransitionTime")), "2026-11-30T00:53:20Z");
	cr_assert(!op_k8s_status_changed(&st, old), "same decision: no write");

	/* An hour later Ready turns True: its time moves, Degraded's stays. */
	json_free(dep);
	dep = edited("35-deployment-get-status.json", "\"updatedReplicas\":1,\"unavailableReplicas\":4",
		     "\"updatedReplicas\":3,\"availableReplicas\":3,\"readyReplicas\":3");
	in.deployment = dep;
	ASSERT_OK(op_k8s_status_decide(&in, &st), "decide");
	cr_assert(op_k8s_status_changed(&st, old), "Ready changed");
	ASSERT_OK(op_k8s_status_to_json(&st, old, NOW + 3600, &json2, &len), "to_json");
	validate_status(json2);
	next = k8s_test_parse(json2);
	cr_assert_str_eq(json_string_value(json_at(next, "conditions[0].status")), "True");
	cr_assert_str_eq(json_string_value(json_at(next, "conditions[0].lastTransitionTime")), "2026-11-30T01:53:20Z");
	cr_assert_str_eq(json_string_value(json_at(next, "conditions[2].type")), "Degraded");
	cr_assert_str_eq(json_string_value(json_at(next, "conditions[2].lastTransitionTime")), "2026-11-30T00:53:20Z",
			 "Degraded stayed False: its time stays");
	cr_assert_eq(json_at(next, "readyReplicas")->u.number.text[0], '3');
	cr_assert(!op_k8s_status_changed(&st, next), "written: no further write");
	ASSERT_ERR(op_k8s_status_to_json(&st, old, -1, &json2, &len), -ERANGE, "bad time");
	json_free(old);
	json_free(next);
	json_free(dep);
	free(json);
	free(json2);
}

/* ---------------------------------------------------------------- Lease */

#define S INT64_C(1000000)

Test(lease, micro_time)
{
	int64_t us;
	char buf[32];

	ASSERT_OK(op_k8s_parse_micro_time("2026-11-29T11:19:17.457240Z", &us), "parse");
	ASSERT_OK(op_k8s_format_micro_time(us, buf, sizeof(buf)), "format");
	cr_assert_str_eq(buf, "2026-11-29T11:19:17.457240Z");
	ASSERT_OK(op_k8s_parse_micro_time("2026-11-29T11:19:17Z", &us), "Time");
	cr_assert_eq(us % S, 0);
	ASSERT_OK(op_k8s_parse_micro_time("2026-11-29T11:19:17.4Z", &us), "one digit");
	cr_assert_eq(us % S, 400000);
	ASSERT_ERR(op_k8s_parse_micro_time("2026-11-29T11:19:17.Z", &us), -EINVAL, "no digits");
	ASSERT_ERR(op_k8s_parse_micro_time("2026-11-29T11:19:17.1234567890Z", &us), -EINVAL, "ten digits");
	ASSERT_ERR(op_k8s_parse_micro_time("2026-11-29 11:19:17Z", &us), -EINVAL, "space");
	ASSERT_ERR(op_k8s_format_micro_time(us, buf, 27), -ENOSPC, "short buffer");
}

/* The Lease as the server holds it, from exchange @file with its spec
 * replaced by @holder and @renew. */
static struct json_value *recorded_lease(const char *file)
{
	return exchange(file);
}

static void validate_lease(const char *body)
{
	char *api;
	size_t alen;
	struct flash_schema_set *set = NULL;
	struct flash_diag *d = NULL;
	int r;

	ASSERT_OK(flash_diag_new(&d), "diag");
	ASSERT_OK(flash_schema_set_new(&set), "set");
	api = k8s_test_read("k8s/openapi/coordination_v1.json", &alen);
	ASSERT_OK(flash_schema_set_add_openapi(set, api, alen, d), "coordination_v1");
	r = flash_schema_validate_object(set, body, strlen(body), d);
	cr_assert(r == 0, "Lease refused by coordination/v1: %d %s: %s", r,
		  flash_diag_first_error(d) ? flash_diag_first_error(d)->path : "",
		  flash_diag_first_error(d) ? flash_diag_first_error(d)->message : "");
	flash_schema_set_free(set);
	flash_diag_free(d);
	free(api);
}

Test(lease, recorded_lease_of_another_holder)
{
	struct op_lease_elector e;
	struct json_value *l72 = recorded_lease("72-lease-create.json");
	struct json_value *l73 = recorded_lease("73-lease-renew.json");
	struct json_value *mine;
	int64_t wall = 1796000000 * S;
	char *body = NULL;

	ASSERT_ERR(op_lease_elector_init(&e, "b", 15, 15), -EINVAL, "deadline must be below the duration");
	ASSERT_ERR(op_lease_elector_init(&e, "", 15, 10), -EINVAL, "empty identity");
	ASSERT_OK(op_lease_elector_init(&e, "flash-operator-b_1", 15, 10), "init");
	/* Our clock is far from the recorded renewTime: it does not matter,
	 * only how long the record stays unchanged by our clock. */
	ASSERT_EQ_INT(op_lease_decide(&e, l72, "flash-system", "flash-operator", 100 * S, wall, &body), OP_LEASE_WAIT);
	cr_assert_null(body);
	ASSERT_EQ_INT(op_lease_decide(&e, l72, "flash-system", "flash-operator", 114 * S, wall, &body), OP_LEASE_WAIT);
	/* 73 renewed it: the wait starts again. */
	ASSERT_EQ_INT(op_lease_decide(&e, l73, "flash-system", "flash-operator", 116 * S, wall, &body), OP_LEASE_WAIT);
	ASSERT_EQ_INT(op_lease_decide(&e, l73, "flash-system", "flash-operator", 130 * S, wall, &body), OP_LEASE_WAIT);
	cr_assert(!op_lease_is_leader(&e, 130 * S));
	ASSERT_EQ_INT(op_lease_decide(&e, l73, "flash-system", "flash-operator", 131 * S, wall, &body), OP_LEASE_UPDATE);
	validate_lease(body);
	mine = k8s_test_parse(body);
	cr_assert_str_eq(json_string_value(json_at(mine, "metadata.resourceVersion")), "290", "optimistic concurrency");
	cr_assert_str_eq(json_string_value(json_at(mine, "spec.holderIdentity")), "flash-operator-b_1");
	cr_assert_str_eq(json_string_value(json_at(mine, "spec.renewTime")), "2026-11-30T00:53:20.000000Z");
	cr_assert_str_eq(json_at(mine, "spec.leaseTransitions")->u.number.text, "1");
	cr_assert_str_eq(json_at(mine, "spec.leaseDurationSeconds")->u.number.text, "15");
	cr_assert(!op_lease_is_leader(&e, 131 * S), "not leader before the write succeeds");
	/* The server's answer (our body with a new resourceVersion). */
	ASSERT_OK(op_lease_written(&e, mine, 131 * S), "written");
	cr_assert(op_lease_is_leader(&e, 140 * S));
	cr_assert(!op_lease_is_leader(&e, 141 * S), "renew deadline passed without a renewal");
	free(body);
	/* Renewal keeps acquireTime and the transitions. */
	ASSERT_EQ_INT(op_lease_decide(&e, mine, "flash-system", "flash-operator", 133 * S, wall + 2 * S, &body),
		      OP_LEASE_UPDATE);
	{
		struct json_value *r = k8s_test_parse(body);

		cr_assert_str_eq(json_string_value(json_at(r, "spec.acquireTime")), "2026-11-30T00:53:20.000000Z");
		cr_assert_str_eq(json_string_value(json_at(r, "spec.renewTime")), "2026-11-30T00:53:22.000000Z");
		cr_assert_str_eq(json_at(r, "spec.leaseTransitions")->u.number.text, "1");
		json_free(r);
	}
	free(body);
	/* Seeing another holder's record ends leadership at once. */
	ASSERT_EQ_INT(op_lease_decide(&e, l73, "flash-system", "flash-operator", 134 * S, wall, &body), OP_LEASE_WAIT);
	cr_assert(!op_lease_is_leader(&e, 134 * S));
	/* No Lease: create. */
	ASSERT_EQ_INT(op_lease_decide(&e, NULL, "flash-system", "flash-operator", 135 * S, wall, &body), OP_LEASE_CREATE);
	validate_lease(body);
	free(body);
	json_free(mine);
	json_free(l72);
	json_free(l73);
}

/* ---------------------------------------------------------------- two candidates */

struct sim_server {
	char *lease;        /* JSON text; NULL: none */
	uint64_t rv;
};

/* Applies a write (POST when @create) as the API server would:
 * resourceVersion must match.  Returns the stored text or NULL (409). */
static const char *sim_write(struct sim_server *srv, const char *body, bool create)
{
	struct json_value *v = k8s_test_parse(body);
	const char *rv = json_string_value(json_at(v, "metadata.resourceVersion"));
	char cur[32], *out = NULL;
	struct json_writer *w;
	size_t len;

	snprintf(cur, sizeof(cur), "%" PRIu64, srv->rv);
	if (create ? srv->lease != NULL : (!srv->lease || !rv || strcmp(rv, cur) != 0)) {
		json_free(v);
		return NULL;
	}
	srv->rv++;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", "coordination.k8s.io/v1");
	jw_kv_string(w, "kind", "Lease");
	jw_key(w, "metadata");
	jw_object_open(w);
	jw_kv_string(w, "name", "flash-operator");
	jw_kv_string(w, "namespace", "flash-system");
	snprintf(cur, sizeof(cur), "%" PRIu64, srv->rv);
	jw_kv_string(w, "resourceVersion", cur);
	jw_object_close(w);
	jw_key(w, "spec");
	jw_value(w, json_get(v, "spec"));
	jw_object_close(w);
	cr_assert(json_writer_finish(w, &out, &len) == 0);
	free(srv->lease);
	srv->lease = out;
	json_free(v);
	return out;
}

struct sim_cand {
	struct op_lease_elector e;
	double offset_s, rate;   /* own clock = offset + real * rate */
	int64_t next_act_ms;     /* real time of the next attempt */
	int64_t paused_until_ms;
	/* A write in flight: lands at land_ms, answer read at answer_ms. */
	char *pending;
	bool pending_create;
	int64_t land_ms, answer_ms, sent_us;
	char *answer;            /* NULL: 409 */
	bool landed;
};

static int64_t own_us(const struct sim_cand *c, int64_t real_ms)
{
	return (int64_t)((c->offset_s + (double)real_ms / 1000.0 * c->rate) * 1e6);
}

static uint64_t sim_rnd = 0x2545f4914f6cdd1du;

static uint32_t srnd(uint32_t n)
{
	sim_rnd ^= sim_rnd << 13;
	sim_rnd ^= sim_rnd >> 7;
	sim_rnd ^= sim_rnd << 17;
	return (uint32_t)(sim_rnd % n);
}

Test(lease, two_candidates_never_both_lead)
{
	int64_t both = 0, led = 0, transitions = 0;

	for (unsigned round = 0; round < 12; round++) {
		struct sim_server srv = { 0 };
		struct sim_cand c[2] = { 0 };
		char last_holder[64] = "";

		for (int i = 0; i < 2; i++) {
			char id[32];

			snprintf(id, sizeof(id), "flash-operator-%c_%u", 'a' + i, round);
			ASSERT_OK(op_lease_elector_init(&c[i].e, id, 15, 10), "init");
			/* Clocks hours apart, one running up to 0.5 % fast or slow. */
			c[i].offset_s = 1796000000.0 + (double)srnd(7200) - 3600.0;
			c[i].rate = 1.0 + ((double)srnd(1001) - 500.0) / 100000.0;
			c[i].next_act_ms = srnd(2000);
		}
		for (int64_t t = 0; t < 600000; t += 10) { /* ten minutes of 10 ms steps */
			for (int i = 0; i < 2; i++) {
				struct sim_cand *x = &c[i];

				if (x->pending && !x->landed && t >= x->land_ms) {
					const char *stored = sim_write(&srv, x->pending, x->pending_create);

					x->answer = stored ? strdup(stored) : NULL;
					x->landed = true;
				}
				if (x->pending && x->landed && t >= x->answer_ms) {
					if (x->answer) {
						struct json_value *v = k8s_test_parse(x->answer);

						ASSERT_OK(op_lease_written(&x->e, v, x->sent_us), "written");
						json_free(v);
					}
					free(x->pending);
					free(x->answer);
					x->pending = x->answer = NULL;
					x->landed = false;
				}
				if (x->pending || t < x->next_act_ms || t < x->paused_until_ms)
					continue;
				{
					struct json_value *cur = srv.lease ? k8s_test_parse(srv.lease) : NULL;
					char *body = NULL;
					int a = op_lease_decide(&x->e, cur, "flash-system", "flash-operator", own_us(x, t),
								own_us(x, t) - (int64_t)(x->offset_s * 1e6) +
									INT64_C(1796000000) * 1000000, &body);

					ASSERT_OK(a, "decide");
					if (a != OP_LEASE_WAIT) {
						/* Sent now; lands 0-800 ms later; the answer
						 * takes up to 800 ms more. */
						x->pending = body;
						x->pending_create = a == OP_LEASE_CREATE;
						x->sent_us = own_us(x, t);
						x->land_ms = t + srnd(800);
						x->answer_ms = x->land_ms + srnd(800);
					}
					json_free(cur);
				}
				x->next_act_ms = t + 2000 + srnd(500); /* retry period with jitter */
				/* Now and then a candidate stalls (GC, SIGSTOP, network). */
				if (srnd(40) == 0)
					x->paused_until_ms = t + 5000 + srnd(30000);
			}
			{
				bool l0 = op_lease_is_leader(&c[0].e, own_us(&c[0], t));
				bool l1 = op_lease_is_leader(&c[1].e, own_us(&c[1], t));

				cr_assert(!(l0 && l1), "round %u, t=%" PRId64 " ms: both candidates lead", round, t);
				both += l0 && l1;
				led += l0 || l1;
				if (l0 || l1) {
					const char *who = c[l0 ? 0 : 1].e.identity;

					if (strcmp(who, last_holder) != 0) {
						transitions++;
						snprintf(last_holder, sizeof(last_holder), "%s", who);
					}
				}
			}
		}
		for (int i = 0; i < 2; i++) {
			free(c[i].pending);
			free(c[i].answer);
		}
		free(srv.lease);
	}
	/* Someone led most of the time, and leadership did change hands. */
	cr_assert_eq(both, 0);
	cr_assert_gt(led, 12 * 60000 / 2, "led only %" PRId64 " of %d steps", led, 12 * 60000);
	cr_assert_gt(transitions, 12, "only %" PRId64 " changes of leader", transitions);
	cr_log_info("led %" PRId64 " of %d steps, %" PRId64 " changes of leader", led, 12 * 60000, transitions);
}

/* ---------------------------------------------------------------- usage records */

Test(usage, record_names)
{
	char buf[OP_K8S_USAGE_NAME_MAX + 1];
	char other[OP_K8S_USAGE_NAME_MAX + 1];

	/* NOW is Monday 2026-11-30, ISO week 2026-W49. */
	cr_assert_eq(op_k8s_usage_record_name(false, "org-1234", NOW, buf, sizeof(buf)), 21);
	cr_assert_str_eq(buf, "org.org-1234.2026-w49");
	ASSERT_OK(op_k8s_usage_record_name(true, "fs-0123456789abcdef0123456789abcdef", NOW - 3201, buf, sizeof(buf)),
		  "service");
	cr_assert_str_eq(buf, "svc.fs-0123456789abcdef0123456789abcdef.2026-w48", "Sunday 23:59:59: week 48");
	/* Opaque ids that are no DNS label are hashed (SHA-256 of the id). */
	ASSERT_OK(op_k8s_usage_record_name(false, "Org:A_1", NOW, buf, sizeof(buf)), "hashed");
	cr_assert_str_eq(buf, "orgh.76c02be6939a1798b80c014f6887495b.2026-w49");
	ASSERT_OK(op_k8s_usage_record_name(false, "org:a_1", NOW, other, sizeof(other)), "hashed");
	cr_assert_str_neq(buf, other, "case matters in opaque ids");
	{
		char id[254];

		memset(id, 'a', 253);
		id[253] = '\0';
		ASSERT_OK(op_k8s_usage_record_name(false, id, NOW, buf, sizeof(buf)), "253 bytes");
		cr_assert_eq(strncmp(buf, "orgh.", 5), 0, "longer than a label: hashed");
		memset(id, 'a', 63);
		id[63] = '\0';
		cr_assert_eq(op_k8s_usage_record_name(false, id, NOW, buf, sizeof(buf)), 76, "the longest name");
	}
	ASSERT_ERR(op_k8s_usage_record_name(false, "org 1", NOW, buf, sizeof(buf)), -EINVAL, "space");
	ASSERT_ERR(op_k8s_usage_record_name(false, "org-1", -1, buf, sizeof(buf)), -EINVAL, "time");
	ASSERT_ERR(op_k8s_usage_record_name(false, "org-1", NOW, buf, 20), -ENOSPC, "short buffer");
}

/* The schema set of the FlashUsageRecord CRD libflash renders. */
static struct flash_schema_set *usage_schema(struct flash_diag *d)
{
	struct flash_schema_set *set = NULL;
	char *crd = NULL;
	size_t len;

	ASSERT_OK(flash_render_crd(FLASH_CRD_FLASHUSAGERECORD, FLASH_RENDER_JSON, &crd, &len), "crd");
	ASSERT_OK(flash_schema_set_new(&set), "set");
	ASSERT_OK(flash_schema_set_add_crd(set, crd, len, d), "add crd");
	free(crd);
	return set;
}

Test(usage, records_objects_and_adding)
{
	struct flash_meter *m = NULL;
	FLASH_OPTS(flash_meter_observation, o1, .service_id = "fs-1", .organization = "org-1", .time = NOW,
		   .ready_replicas = 2, .cpu_millis = 500, .memory_mib = 256, .gpu_count = 1);
	FLASH_OPTS(flash_meter_observation, o2, .service_id = "fs-1", .organization = "org-1", .time = NOW + 100,
		   .ready_replicas = 2, .cpu_millis = 500, .memory_mib = 256, .gpu_count = 1);
	struct flash_meter_record rec;
	struct flash_diag *d = NULL;
	struct flash_schema_set *set;
	char *obj = NULL, *status = NULL, *added = NULL;
	struct json_value *sv, *av;
	size_t len;
	int r;

	ASSERT_OK(flash_diag_new(&d), "diag");
	set = usage_schema(d);
	ASSERT_OK(flash_meter_new(NULL, &m), "meter");
	ASSERT_OK(flash_meter_observe(m, &o1), "observe");
	ASSERT_OK(flash_meter_observe(m, &o2), "observe");
	ASSERT_OK(flash_meter_record_find(m, FLASH_METER_SCOPE_ORGANIZATION, "org-1", NOW, &rec), "org record");
	ASSERT_OK(op_k8s_usage_record_objects(&rec, "flash-system", &obj, &status), "objects");
	r = flash_schema_validate_object(set, obj, strlen(obj), d);
	cr_assert(r == 0, "object: %s: %s", flash_diag_first_error(d)->path, flash_diag_first_error(d)->message);
	r = flash_schema_validate_object(set, status, strlen(status), d);
	cr_assert(r == 0, "status: %s: %s", flash_diag_first_error(d)->path, flash_diag_first_error(d)->message);
	sv = k8s_test_parse(status);
	cr_assert_str_eq(json_string_value(json_at(sv, "metadata.name")), "org.org-1.2026-w49");
	cr_assert_str_eq(json_string_value(json_at(sv, "status.weekStart")), "2026-11-30T00:00:00Z");
	cr_assert_str_eq(json_string_value(json_at(sv, "status.weekEnd")), "2026-12-07T00:00:00Z");
	cr_assert_str_eq(json_at(sv, "status.cpuMillicoreSeconds")->u.number.text, "100000", "500 x 2 x 100 s");
	{
		struct json_value *ov = k8s_test_parse(obj);

		cr_assert_null(json_get(ov, "status"), "status goes through /status only");
		cr_assert_str_eq(json_string_value(json_get(json_at(ov, "metadata.labels"), "flash.heterocloud.io/organization")),
				 "org-1");
		json_free(ov);
	}

	/* The deleted service's last 50 s at the same values. */
	{
		struct flash_meter_usage add = { .cpu_millicore_seconds = 50000, .memory_mib_seconds = 25600,
						 .gpu_seconds = 100 };

		ASSERT_OK(op_k8s_usage_add(json_get(sv, "status"), &add, NOW + 150, &added, &len), "add");
		av = k8s_test_parse(added);
		cr_assert_str_eq(json_at(av, "cpuMillicoreSeconds")->u.number.text, "150000");
		cr_assert_str_eq(json_at(av, "memoryMiBSeconds")->u.number.text, "76800");
		cr_assert_str_eq(json_at(av, "gpuSeconds")->u.number.text, "300");
		cr_assert_str_eq(json_string_value(json_at(av, "accruedUntil")), "2026-11-30T00:55:50Z");
		cr_assert(!json_at(av, "saturated")->u.boolean);
		json_free(av);
		free(added);
		/* Saturates at INT64_MAX. */
		add.cpu_millicore_seconds = INT64_MAX;
		ASSERT_OK(op_k8s_usage_add(json_get(sv, "status"), &add, NOW, &added, &len), "add");
		av = k8s_test_parse(added);
		cr_assert_str_eq(json_at(av, "cpuMillicoreSeconds")->u.number.text, "9223372036854775807");
		cr_assert(json_at(av, "saturated")->u.boolean);
		cr_assert_str_eq(json_string_value(json_at(av, "accruedUntil")), "2026-11-30T00:55:00Z",
				 "an earlier time does not move accruedUntil back");
		json_free(av);
		free(added);
		ASSERT_ERR(op_k8s_usage_add(sv, &add, NOW, &added, &len), -EBADMSG, "the object, not its status");
		add.gpu_seconds = -1;
		ASSERT_ERR(op_k8s_usage_add(json_get(sv, "status"), &add, NOW, &added, &len), -EINVAL, "negative");
	}
	json_free(sv);
	free(obj);
	free(status);
	flash_meter_free(m);
	flash_schema_set_free(set);
	flash_diag_free(d);
}

Test(usage, finalizer_on_recorded_flashservices)
{
	struct json_value *fresh = exchange("17-main-patch-ignores-status.json");
	struct json_value *with = exchange("25-add-finalizer.json");
	struct json_value *deleting = exchange("27-get-terminating.json");

	cr_assert_str_eq(OP_K8S_USAGE_FINALIZER, "flash.heterocloud.io/usage", "the name the recordings use");
	cr_assert_eq(op_k8s_usage_finalizer(fresh, false), OP_K8S_FINALIZER_ADD);
	cr_assert_eq(op_k8s_usage_finalizer(with, false), OP_K8S_FINALIZER_KEEP);
	cr_assert_eq(op_k8s_usage_finalizer(deleting, false), OP_K8S_FINALIZER_RECORD);
	cr_assert_eq(op_k8s_usage_finalizer(deleting, true), OP_K8S_FINALIZER_REMOVE);
	json_free(fresh);
	json_free(with);
	json_free(deleting);
}
