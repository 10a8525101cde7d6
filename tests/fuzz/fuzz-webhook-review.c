/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the AdmissionReview bodies the API server POSTs to
 * flash-operator's validating webhook (operator/webhook.c
 * op_webhook_review(), what the listener hands every complete body to).
 * The input is one body.  Properties:
 *  - a refused body is -EBADMSG with a reason (the HTTP answer is 400)
 *    and leaves the output untouched;
 *  - an accepted one answers an admission.k8s.io/v1 AdmissionReview whose
 *    response echoes request.uid, says allowed true or false, and carries
 *    status code 422 exactly when it denies;
 *  - the same body answers the same bytes again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-helpers.h"
#include "json.h"
#include "webhook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static const char *string_at(const struct json_value *v, const char *path)
{
	return json_string_value(json_at(v, path));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_value *in = NULL, *out = NULL;
	char err[512] = "", err2[512] = "", *json = NULL, *again = NULL;
	size_t len = 0, len2 = 0;
	const struct json_value *allowed;
	const char *uid;
	int r, r2;

	r = op_webhook_review((const char *)data, size, &json, &len, err, sizeof(err));
	if (r == -ENOMEM)
		return 0;
	if (r < 0) {
		fuzz_check(r == -EBADMSG);
		fuzz_check(err[0] != '\0');
		fuzz_check(json == NULL && len == 0);
		return 0;
	}
	fuzz_check(r == 0 && json != NULL && len == strlen(json));
	fuzz_check(json_parse(json, len, NULL, &out, NULL) == 0);
	fuzz_check(json_is(out, JSON_OBJECT));
	fuzz_check(!strcmp(string_at(out, "apiVersion") ?: "", "admission.k8s.io/v1"));
	fuzz_check(!strcmp(string_at(out, "kind") ?: "", "AdmissionReview"));
	/* Accepted, so the input is JSON with a request.uid. */
	fuzz_check(json_parse((const char *)data, size, NULL, &in, NULL) == 0);
	uid = string_at(in, "request.uid");
	fuzz_check(uid && !strcmp(string_at(out, "response.uid") ?: "", uid));
	allowed = json_at(out, "response.allowed");
	fuzz_check(json_is(allowed, JSON_BOOL));
	if (!allowed->u.boolean) {
		int64_t c = 0;

		fuzz_check(json_get_int64(json_at(out, "response.status.code"), &c) == 0 && c == 422);
		fuzz_check(string_at(out, "response.status.message") != NULL);
	}
	r2 = op_webhook_review((const char *)data, size, &again, &len2, err2, sizeof(err2));
	fuzz_check(r2 == 0 || r2 == -ENOMEM);
	fuzz_check(r2 < 0 || (len2 == len && !memcmp(again, json, len)));
	free(again);
	json_free(in);
	json_free(out);
	free(json);
	return 0;
}
