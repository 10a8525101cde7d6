/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The validating admission webhook of flash-operator (private to
 * operator/): the API server POSTs an AdmissionReview (admission.k8s.io/v1)
 * for every FlashService CREATE and UPDATE to /validate-flashservice
 * (deploy/kubernetes/operator-webhook.yaml), and the spec goes through
 * flash_spec_parse(), the validator `flashctl validate` runs, so that a
 * FlashService written with kubectl is refused exactly as flashctl
 * refuses its spec: the CRD's structural schema and CEL rules are a first
 * line, this is the one that cannot disagree.
 *
 * The answer echoes request.uid; a denial carries status code 422, reason
 * Invalid, the validator's messages joined in status.message (the API
 * server shows the client 'admission webhook "..." denied the request:
 * MESSAGE') and one status.details.causes entry per problem
 * (FieldValueInvalid, field "spec.PATH"); the validator's warnings (a
 * credential-looking env value) become response.warnings either way.
 * Operations other than CREATE and UPDATE, and dry runs alike, are
 * answered the same way (the webhook has no side effects).
 */
#ifndef FLASH_OPERATOR_WEBHOOK_H
#define FLASH_OPERATOR_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

/* The path the API server posts to. */
#define OP_WEBHOOK_PATH "/validate-flashservice"

/* Answers the AdmissionReview request @body (@len bytes): 0 and
 * *ret_json, the AdmissionReview response (allowed or denied; free()),
 * -EBADMSG when @body is not an AdmissionReview v1 request for a
 * flash.heterocloud.io FlashService (@err says what is wrong: the HTTP
 * answer is 400), -ENOMEM.  Outputs are untouched on failure. */
int op_webhook_review(const char *body, size_t len, char **ret_json, size_t *ret_len, char *err, size_t err_size);

struct op_webhook_opts {
	size_t sz;
	const char *listen;     /* "ADDRESS:PORT" ("[v6]:PORT"); required */
	const char *cert_file;  /* PEM serving certificate chain; required */
	const char *key_file;   /* PEM key, mode 0600 or 0400, owned by us; required */
	unsigned int max_connections;   /* 0: 64 */
	unsigned int header_timeout_ms; /* 0: 5000 */
	size_t max_body_bytes;          /* 0: 4 MiB (object and oldObject) */
};

struct op_webhook;

/* Serves POST /validate-flashservice over TLS on its own listener through
 * common/http-server.h (anything else: 404, 405).  On failure @err says
 * what.  Returns 0, -EINVAL, -ENOMEM, -errno. */
int op_webhook_start(const struct op_webhook_opts *opts, struct op_webhook **ret, char *err, size_t err_size);

/* The bound port (useful with port 0). */
uint16_t op_webhook_port(const struct op_webhook *w);

/* Stops the listener; NULL is fine. */
void op_webhook_stop(struct op_webhook *w);

#endif
