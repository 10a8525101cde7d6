/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* FlashService status from the objects Kubernetes reports: terminal Pod
 * failures, the conditions and the status object (k8s-status.h). */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <flash/meter.h>

#include "k8s-status.h"
#include "util.h"

/* ---------------------------------------------------------------- helpers */

static bool str_is(const struct json_value *v, const char *s)
{
	const char *t = json_string_value(v);

	return t && strcmp(t, s) == 0;
}

static int64_t int_at(const struct json_value *root, const char *path)
{
	int64_t v = 0;

	if (json_get_int64(json_at(root, path), &v) < 0)
		return 0;
	return v;
}

static const char *str_at(const struct json_value *root, const char *path)
{
	const char *s = json_string_value(json_at(root, path));

	return s ? s : "";
}

/* The item of array @arr whose "type" is @type. */
static const struct json_value *by_type(const struct json_value *arr, const char *type)
{
	if (!json_is(arr, JSON_ARRAY))
		return NULL;
	for (size_t i = 0; i < arr->u.array.n; i++)
		if (str_is(json_get(arr->u.array.items[i], "type"), type))
			return arr->u.array.items[i];
	return NULL;
}

/* ---------------------------------------------------------------- pods */

static bool time_of(const struct json_value *v, int64_t *ret)
{
	const char *s = json_string_value(v);

	return s && flash_meter_parse_time(s, ret) == 0;
}

/* OOMKilled in @term (a ContainerStateTerminated) within the start
 * window of its own start. */
static bool oom_at_start(const struct json_value *term)
{
	int64_t start, end;

	if (!str_is(json_get(term, "reason"), "OOMKilled"))
		return false;
	if (!time_of(json_get(term, "startedAt"), &start) || !time_of(json_get(term, "finishedAt"), &end))
		return true; /* never started long enough to record it */
	return end - start <= OP_K8S_OOM_START_SECONDS;
}

static bool container_failure(const struct json_value *cs, uint32_t bound, struct op_k8s_pod_failure *f)
{
	const struct json_value *waiting = json_at(cs, "state.waiting");
	const char *reason = json_string_value(json_get(waiting, "reason"));
	int64_t restarts = int_at(cs, "restartCount");
	const struct json_value *term;

	f->kind = OP_K8S_FAIL_NONE;
	if (reason) {
		if (strcmp(reason, "ErrImagePull") == 0)
			f->kind = OP_K8S_FAIL_ERR_IMAGE_PULL;
		else if (strcmp(reason, "ImagePullBackOff") == 0)
			f->kind = OP_K8S_FAIL_IMAGE_PULL_BACKOFF;
		else if (strcmp(reason, "CreateContainerConfigError") == 0)
			f->kind = OP_K8S_FAIL_CONFIG;
		else if (strcmp(reason, "CrashLoopBackOff") == 0 && restarts >= bound)
			f->kind = OP_K8S_FAIL_CRASH_LOOP;
	}
	/* An OOM kill at start shows in the current state (just killed) or
	 * the last one (waiting to restart); it wins over the back-off
	 * that follows it, whose count may not have reached the bound. */
	term = json_at(cs, "state.terminated");
	if (!term || !oom_at_start(term))
		term = json_at(cs, "lastState.terminated");
	if (term && oom_at_start(term) &&
	    (f->kind == OP_K8S_FAIL_NONE || f->kind == OP_K8S_FAIL_CRASH_LOOP)) {
		f->kind = OP_K8S_FAIL_OOM_AT_START;
		f->reason = "OOMKilled";
		f->message = str_at(term, "message");
	} else if (f->kind != OP_K8S_FAIL_NONE) {
		f->reason = reason;
		f->message = str_at(waiting, "message");
	}
	if (f->kind == OP_K8S_FAIL_NONE)
		return false;
	f->container = str_at(cs, "name");
	f->restarts = restarts;
	return true;
}

void op_k8s_pod_failure(const struct json_value *pod, uint32_t crashloop_restarts, struct op_k8s_pod_failure *ret)
{
	static const char *const lists[] = { "status.initContainerStatuses", "status.containerStatuses" };
	uint32_t bound = crashloop_restarts ? crashloop_restarts : OP_K8S_CRASHLOOP_RESTARTS;

	*ret = (struct op_k8s_pod_failure){ .kind = OP_K8S_FAIL_NONE };
	for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
		const struct json_value *arr = json_at(pod, lists[l]);

		if (!json_is(arr, JSON_ARRAY))
			continue;
		for (size_t i = 0; i < arr->u.array.n; i++) {
			struct op_k8s_pod_failure f = { 0 };

			if (container_failure(arr->u.array.items[i], bound, &f)) {
				f.pod = str_at(pod, "metadata.name");
				f.init = l == 0;
				*ret = f;
				return;
			}
		}
	}
}

/* ---------------------------------------------------------------- conditions */

static const char *const cond_names[OP_K8S_COND_N_] = {
	[OP_K8S_COND_READY] = "Ready",
	[OP_K8S_COND_PROGRESSING] = "Progressing",
	[OP_K8S_COND_DEGRADED] = "Degraded",
	[OP_K8S_COND_SUSPENDED] = "Suspended",
	[OP_K8S_COND_QUEUED] = "Queued",
};

const char *op_k8s_cond_name(enum op_k8s_cond_type t)
{
	return (unsigned)t < OP_K8S_COND_N_ ? cond_names[t] : NULL;
}

static void _printf_(5, 6) cond(struct op_k8s_status *st, enum op_k8s_cond_type t, bool status, const char *reason,
				const char *fmt, ...)
{
	struct op_k8s_condition *c = &st->cond[t];
	va_list ap;

	c->present = true;
	c->status = status;
	snprintf(c->reason, sizeof(c->reason), "%s", reason);
	va_start(ap, fmt);
	vsnprintf(c->message, sizeof(c->message), fmt, ap);
	va_end(ap);
}

/* A ready endpoint in @slices (conditions.ready unset counts as ready). */
static bool endpoint_ready(const struct op_k8s_status_input *in)
{
	for (size_t i = 0; i < in->n_slices; i++) {
		const struct json_value *eps = json_get(in->slices[i], "endpoints");

		if (!json_is(eps, JSON_ARRAY))
			continue;
		for (size_t j = 0; j < eps->u.array.n; j++) {
			const struct json_value *ready = json_at(eps->u.array.items[j], "conditions.ready");

			if (!json_is(ready, JSON_BOOL) || ready->u.boolean)
				return true;
		}
	}
	return false;
}

static bool lb_ingress(const struct json_value *svc)
{
	const struct json_value *ing = json_at(svc, "status.loadBalancer.ingress");

	return json_is(ing, JSON_ARRAY) && ing->u.array.n > 0;
}

/* Why the replicas or the endpoint are not there yet (Ready False). */
static void not_ready(const struct op_k8s_status_input *in, struct op_k8s_status *st, const char **ret_reason,
		      char *msg, size_t size)
{
	const struct json_value *d = in->deployment;

	if (!d) {
		*ret_reason = "DeploymentPending";
		snprintf(msg, size, "the Deployment is not created yet");
	} else if (int_at(d, "status.observedGeneration") < int_at(d, "metadata.generation")) {
		*ret_reason = "RolloutPending";
		snprintf(msg, size, "the Deployment controller has not seen generation %" PRId64 " yet",
			 int_at(d, "metadata.generation"));
	} else if (st->available_replicas < (int64_t)in->replicas ||
		   int_at(d, "status.updatedReplicas") < (int64_t)in->replicas) {
		*ret_reason = "ReplicasUnavailable";
		snprintf(msg, size, "%" PRId32 " of %" PRIu32 " replicas available, %" PRId64 " updated", st->available_replicas,
			 in->replicas, int_at(d, "status.updatedReplicas"));
	} else if (in->has_service && (!in->service || !endpoint_ready(in))) {
		*ret_reason = "EndpointNotReady";
		snprintf(msg, size, "no ready endpoint in the EndpointSlices of Service %s",
			 in->service ? str_at(in->service, "metadata.name") : "(not created yet)");
	} else {
		*ret_reason = "LoadBalancerPending";
		snprintf(msg, size, "Service %s has no LoadBalancer ingress yet", str_at(in->service, "metadata.name"));
	}
}

int op_k8s_status_decide(const struct op_k8s_status_input *in, struct op_k8s_status *ret)
{
	struct op_k8s_status st = { 0 };
	struct op_k8s_pod_failure fail = { .kind = OP_K8S_FAIL_NONE };
	const struct json_value *deadline = NULL;
	bool replicas_ok, ready;
	char msg[256];
	const char *why;

	if (!in || !ret || (in->n_pods && !in->pods) || (in->n_slices && !in->slices))
		return -EINVAL;
	st.observed_generation = in->generation;
	if (in->deployment) {
		const struct json_value *prog = by_type(json_at(in->deployment, "status.conditions"), "Progressing");

		st.ready_replicas = (int32_t)int_at(in->deployment, "status.readyReplicas");
		st.available_replicas = (int32_t)int_at(in->deployment, "status.availableReplicas");
		if (str_is(json_get(prog, "status"), "False") &&
		    str_is(json_get(prog, "reason"), "ProgressDeadlineExceeded"))
			deadline = prog;
	}
	for (size_t i = 0; i < in->n_pods && fail.kind == OP_K8S_FAIL_NONE; i++)
		op_k8s_pod_failure(in->pods[i], in->crashloop_restarts, &fail);

	replicas_ok = in->deployment &&
		      int_at(in->deployment, "status.observedGeneration") >= int_at(in->deployment, "metadata.generation") &&
		      st.available_replicas >= (int64_t)in->replicas &&
		      int_at(in->deployment, "status.updatedReplicas") >= (int64_t)in->replicas;
	st.endpoint_ready = !in->has_service || in->replicas == 0 ||
			    (in->service && endpoint_ready(in) && (!in->public || lb_ingress(in->service)));
	ready = replicas_ok && st.endpoint_ready && !in->suspended &&
		!(in->gpu && in->gpu->phase == FLASH_SCHED_QUEUED);

	if (in->suspended)
		cond(&st, OP_K8S_COND_SUSPENDED, true, "WeeklyLimitReached", "%s",
		     in->suspended_message ? in->suspended_message : "the organization reached a weekly limit");
	else
		cond(&st, OP_K8S_COND_SUSPENDED, false, "WithinLimits", "the organization is within its weekly limits");

	if (fail.kind == OP_K8S_FAIL_CRASH_LOOP)
		cond(&st, OP_K8S_COND_DEGRADED, true, fail.reason,
		     "%scontainer %s of pod %s: CrashLoopBackOff after %" PRId64 " restarts%s%s", fail.init ? "init " : "",
		     fail.container, fail.pod, fail.restarts, fail.message[0] ? ": " : "", fail.message);
	else if (fail.kind != OP_K8S_FAIL_NONE)
		cond(&st, OP_K8S_COND_DEGRADED, true, fail.reason, "%scontainer %s of pod %s: %s%s%s",
		     fail.init ? "init " : "", fail.container, fail.pod, fail.reason, fail.message[0] ? ": " : "",
		     fail.message);
	else if (deadline)
		cond(&st, OP_K8S_COND_DEGRADED, true, "ProgressDeadlineExceeded", "%s", str_at(deadline, "message"));
	else
		cond(&st, OP_K8S_COND_DEGRADED, false, "AsExpected", "no terminal failure");

	if (in->gpu) {
		if (in->gpu->phase == FLASH_SCHED_QUEUED)
			cond(&st, OP_K8S_COND_QUEUED, true, "WaitingForGPU", "position %" PRIu32 " in the %s queue: %s",
			     in->gpu->position, in->gpu->gpu_type, in->gpu->reason);
		else
			cond(&st, OP_K8S_COND_QUEUED, false, "GPUBound", "%" PRIu32 " GPU%s of type %s on node %s",
			     in->gpu->count, in->gpu->count == 1 ? "" : "s", in->gpu->gpu_type, in->gpu->node);
	}

	if (ready) {
		cond(&st, OP_K8S_COND_READY, true, in->replicas ? "Ready" : "ScaledToZero",
		     "%" PRIu32 " of %" PRIu32 " replicas available%s", in->replicas, in->replicas,
		     in->has_service && in->replicas ? ", endpoint ready" : "");
		cond(&st, OP_K8S_COND_PROGRESSING, false, "Complete", "generation %" PRId64 " is rolled out",
		     in->generation);
	} else {
		const char *prefix = "";

		if (in->suspended) {
			why = "Suspended";
			prefix = "suspended: ";
			snprintf(msg, sizeof(msg), "%s", st.cond[OP_K8S_COND_SUSPENDED].message);
		} else if (in->gpu && in->gpu->phase == FLASH_SCHED_QUEUED) {
			why = "Queued";
			snprintf(msg, sizeof(msg), "%s", st.cond[OP_K8S_COND_QUEUED].message);
		} else if (st.cond[OP_K8S_COND_DEGRADED].status) {
			why = st.cond[OP_K8S_COND_DEGRADED].reason;
			snprintf(msg, sizeof(msg), "%s", st.cond[OP_K8S_COND_DEGRADED].message);
		} else {
			not_ready(in, &st, &why, msg, sizeof(msg));
		}
		cond(&st, OP_K8S_COND_READY, false, why, "%s%s", prefix, msg);
		if (in->suspended || st.cond[OP_K8S_COND_DEGRADED].status)
			cond(&st, OP_K8S_COND_PROGRESSING, false, why, "%s%s", prefix, msg);
		else
			cond(&st, OP_K8S_COND_PROGRESSING, true, why, "%s%s", prefix, msg);
	}
	*ret = st;
	return 0;
}

/* ---------------------------------------------------------------- status object */

/* @old's condition of @type. */
static const struct json_value *old_cond(const struct json_value *old, const char *type)
{
	return by_type(json_get(old, "conditions"), type);
}

int op_k8s_status_to_json(const struct op_k8s_status *st, const struct json_value *old, int64_t now,
			  char **ret_json, size_t *ret_len)
{
	char stamp[FLASH_METER_TIME_STRLEN];
	struct json_writer *w;
	int r;

	if (!st || !ret_json)
		return -EINVAL;
	r = flash_meter_format_time(now, stamp, sizeof(stamp));
	if (r < 0)
		return -ERANGE;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_int(w, "observedGeneration", st->observed_generation);
	jw_kv_int(w, "readyReplicas", st->ready_replicas);
	jw_key(w, "conditions");
	jw_array_open(w);
	for (int t = 0; t < OP_K8S_COND_N_; t++) {
		const struct op_k8s_condition *c = &st->cond[t];
		const struct json_value *o = old_cond(old, cond_names[t]);
		const char *status = c->status ? "True" : "False";
		const char *since = str_at(o, "lastTransitionTime");
		int64_t ignored;

		if (!c->present)
			continue;
		/* The old time stays only while the status stays (and reads). */
		if (!o || !str_is(json_get(o, "status"), status) || flash_meter_parse_time(since, &ignored) < 0)
			since = stamp;
		jw_object_open(w);
		jw_kv_string(w, "type", cond_names[t]);
		jw_kv_string(w, "status", status);
		jw_kv_int(w, "observedGeneration", st->observed_generation);
		jw_kv_string(w, "lastTransitionTime", since);
		jw_kv_string(w, "reason", c->reason);
		jw_kv_string(w, "message", c->message);
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret_json, ret_len);
}

bool op_k8s_status_changed(const struct op_k8s_status *st, const struct json_value *old)
{
	size_t n = 0;

	if (!st || !old)
		return true;
	if (int_at(old, "observedGeneration") != st->observed_generation ||
	    int_at(old, "readyReplicas") != st->ready_replicas)
		return true;
	for (int t = 0; t < OP_K8S_COND_N_; t++) {
		const struct op_k8s_condition *c = &st->cond[t];
		const struct json_value *o = old_cond(old, cond_names[t]);

		if (!c->present) {
			if (o)
				return true;
			continue;
		}
		n++;
		if (!o || !str_is(json_get(o, "status"), c->status ? "True" : "False") ||
		    !str_is(json_get(o, "reason"), c->reason) || !str_is(json_get(o, "message"), c->message) ||
		    int_at(o, "observedGeneration") != st->observed_generation)
			return true;
	}
	return !json_is(json_get(old, "conditions"), JSON_ARRAY) || json_get(old, "conditions")->u.array.n != n;
}
