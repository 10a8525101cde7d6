/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the Kubernetes objects flash-operator's
 * Kubernetes mode reads from the API server and decides on
 * (operator/k8s-status.c, k8s-status-usage.c, k8s-status-lease.c): the
 * first byte says what the rest is, one JSON object:
 *   'p'  a Pod: op_k8s_pod_failure();
 *   'd'  a Deployment, Pod, Service and EndpointSlice at once (the object
 *        in each role), its "status" the FlashService's old status:
 *        op_k8s_status_decide(), op_k8s_status_to_json(),
 *        op_k8s_status_changed();
 *   'u'  a FlashUsageRecord status: op_k8s_usage_add();
 *   'l'  a Lease: op_lease_decide(), op_lease_written();
 *   'f'  a FlashService: op_k8s_usage_finalizer();
 *   't'  a MicroTime text: op_k8s_parse_micro_time().
 * Properties:
 *  - a Pod failure names its pod and container and has a reason exactly
 *    when it is one;
 *  - the status written parses, and compared with what it decided says
 *    "no change" (the loop would not write it again);
 *  - a usage status added to parses, and adding nothing to it gives the
 *    same text again;
 *  - a Lease body to send parses as a Lease the elector accepts as its
 *    write; a refused Lease is -EBADMSG;
 *  - a MicroTime formats and parses back to the same microsecond.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/meter.h>

#include "fuzz-helpers.h"
#include "json.h"
#include "k8s-status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define NOW 1800000000

static void pod(const struct json_value *v)
{
	struct op_k8s_pod_failure f;

	op_k8s_pod_failure(v, 0, &f);
	fuzz_check((f.kind == OP_K8S_FAIL_NONE) == (f.reason == NULL));
	if (f.kind != OP_K8S_FAIL_NONE)
		fuzz_check(f.pod && f.container && f.message);
}

static void status(const struct json_value *v)
{
	const struct json_value *one[1] = { v };
	struct op_k8s_status_input in = {
		.generation = 2,
		.replicas = 2,
		.has_service = true,
		.public = true,
		.deployment = v,
		.pods = one,
		.n_pods = 1,
		.service = v,
		.slices = one,
		.n_slices = 1,
	};
	struct op_k8s_status st;
	struct json_value *written = NULL;
	char *json = NULL;
	size_t len = 0;
	int r;

	fuzz_check(op_k8s_status_decide(&in, &st) == 0);
	r = op_k8s_status_to_json(&st, json_get(v, "status"), NOW, &json, &len);
	if (r == -ENOMEM)
		return;
	fuzz_check(r == 0);
	fuzz_check(json_parse(json, len, NULL, &written, NULL) == 0);
	fuzz_check(!op_k8s_status_changed(&st, written));
	json_free(written);
	free(json);
}

static void usage(const struct json_value *v)
{
	const struct flash_meter_usage add = { .cpu_millicore_seconds = 1000, .memory_mib_seconds = 2000, .gpu_seconds = 1 };
	const struct flash_meter_usage none = { 0 };
	struct json_value *once = NULL;
	char *j1 = NULL, *j2 = NULL;
	size_t l1 = 0, l2 = 0;
	int r = op_k8s_usage_add(v, &add, NOW, &j1, &l1);

	if (r < 0) {
		fuzz_check(r == -EBADMSG || r == -ENOMEM);
		return;
	}
	fuzz_check(json_parse(j1, l1, NULL, &once, NULL) == 0);
	r = op_k8s_usage_add(once, &none, NOW, &j2, &l2);
	fuzz_check(r == 0 || r == -ENOMEM);
	fuzz_check(r < 0 || (l1 == l2 && !memcmp(j1, j2, l1)));
	json_free(once);
	free(j1);
	free(j2);
}

static void lease(const struct json_value *v)
{
	struct op_lease_elector e;
	struct json_value *sent = NULL;
	char *body = NULL;
	int r;

	fuzz_check(op_lease_elector_init(&e, "op-fuzz", 15, 10) == 0);
	r = op_lease_decide(&e, v, "flash-system", "flash-operator", 1000000, (int64_t)NOW * 1000000, &body);
	if (r < 0) {
		fuzz_check(r == -EBADMSG || r == -ENOMEM);
		fuzz_check(body == NULL);
		return;
	}
	fuzz_check((r == OP_LEASE_WAIT) == (body == NULL));
	if (!body)
		return;
	fuzz_check(json_parse(body, strlen(body), NULL, &sent, NULL) == 0);
	/* The server answers what was sent, with a resourceVersion. */
	if (!json_at(sent, "metadata.resourceVersion")) {
		char *with = NULL;

		json_free(sent);
		sent = NULL;
		fuzz_check(asprintf(&with, "{\"metadata\":{\"resourceVersion\":\"1\"},%s", strchr(body, '{') + 1) > 0);
		if (json_parse(with, strlen(with), NULL, &sent, NULL) < 0) /* a duplicate "metadata" */
			sent = NULL;
		free(with);
	}
	if (sent)
		fuzz_check(op_lease_written(&e, sent, 1000001) == 0 && op_lease_is_leader(&e, 1000002));
	json_free(sent);
	free(body);
}

static void micro_time(const char *text, size_t len)
{
	char *s = strndup(text, len), buf[64];
	int64_t us, again;

	if (!s)
		return;
	if (op_k8s_parse_micro_time(s, &us) == 0) {
		fuzz_check(op_k8s_format_micro_time(us, buf, sizeof(buf)) >= 0);
		fuzz_check(op_k8s_parse_micro_time(buf, &again) == 0 && again == us);
	}
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_value *v = NULL;

	if (size == 0)
		return 0;
	if (data[0] == 't') {
		micro_time((const char *)data + 1, size - 1);
		return 0;
	}
	if (json_parse((const char *)data + 1, size - 1, NULL, &v, NULL) < 0)
		return 0;
	switch (data[0]) {
	case 'p': pod(v); break;
	case 'd': status(v); break;
	case 'u': usage(v); break;
	case 'l': lease(v); break;
	case 'f':
		(void)op_k8s_usage_finalizer(v, false);
		(void)op_k8s_usage_finalizer(v, true);
		break;
	default: break;
	}
	json_free(v);
	return 0;
}
