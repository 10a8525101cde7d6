/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the OpenAPI v3 documents and CustomResourceDefinitions
 * render's validator reads (libflash/render-openapi.c; in Kubernetes mode
 * they come from the API server): the first byte says which ('c' a CRD,
 * anything else an OpenAPI document), the rest is the document; fixed
 * objects (a FlashService, a ConfigMap, a Service and one of its ports)
 * are then validated against it.
 * Properties:
 *  - a refused document is -FLASH_E_RENDER_BAD_DOCUMENT with a problem
 *    in the diag (or -ENOMEM);
 *  - every validation ends (cyclic $ref, deep nesting and $ref fan-out
 *    are bounded: libFuzzer's -timeout in fuzz-openapi.args catches a
 *    validation that does not) with 0, -FLASH_E_RENDER_INVALID or
 *    -FLASH_E_RENDER_BAD_DOCUMENT (a schema past the validator's bounds)
 *    with a problem in the diag, or -FLASH_E_RENDER_NO_SCHEMA; and the
 *    same answer and first problem twice, and from a second set holding
 *    the same document.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <flash/diag.h>
#include <flash/render.h>

#include "fuzz-helpers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const objects[] = {
	"{\"apiVersion\":\"flash.heterocloud.io/v1alpha1\",\"kind\":\"FlashService\",\"metadata\":{\"name\":\"fs-web\","
	"\"namespace\":\"flash-demo\",\"labels\":{\"flash.heterocloud.io/organization\":\"org-1234\"}},"
	"\"spec\":{\"image\":\"ghcr.io/acme/web@sha256:3f1c6a3d2f0e4b7a9c8d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b\","
	"\"ports\":[{\"name\":\"http\",\"protocol\":\"tcp\",\"container_port\":8080},"
	"{\"name\":\"game\",\"protocol\":\"udp\",\"container_port\":7777}]}}",
	"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"web\",\"namespace\":\"flash-demo\","
	"\"labels\":{\"app\":\"web\"},\"creationTimestamp\":\"2026-11-29T10:23:22Z\"},\"data\":{\"k\":\"v\"}}",
	"{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web\"},\"spec\":{\"type\":\"ClusterIP\","
	"\"selector\":{\"app\":\"web\"},\"ports\":[{\"name\":\"http\",\"port\":80,\"targetPort\":\"http\","
	"\"protocol\":\"TCP\"},{\"name\":\"game\",\"port\":7777,\"targetPort\":7777,\"protocol\":\"UDP\"}]}}",
};
static const char port[] = "{\"name\":\"http\",\"port\":80,\"targetPort\":8080,\"protocol\":\"TCP\",\"appProtocol\":null}";

static int add(struct flash_schema_set *set, uint8_t kind, const char *text, size_t len, struct flash_diag *diag)
{
	return kind == 'c' ? flash_schema_set_add_crd(set, text, len, diag)
			   : flash_schema_set_add_openapi(set, text, len, diag);
}

/* Validation @i (an object, or the port by its schema name): its result,
 * and its first error ("PATH: MESSAGE"; "" for none) into @msg. */
static int run(const struct flash_schema_set *set, size_t i, struct flash_diag *diag, char *msg, size_t size)
{
	const struct flash_diag_entry *e;
	int r;

	flash_diag_reset(diag);
	if (i < sizeof(objects) / sizeof(objects[0]))
		r = flash_schema_validate_object(set, objects[i], strlen(objects[i]), diag);
	else
		r = flash_schema_validate(set, "io.k8s.api.core.v1.ServicePort", port, strlen(port), diag);
	e = flash_diag_first_error(diag);
	msg[0] = '\0';
	if (e)
		snprintf(msg, size, "%s: %s", e->path ? e->path : "", e->message ? e->message : "");
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flash_schema_set *set = NULL, *other = NULL;
	struct flash_diag *diag = NULL;
	const char *text = (const char *)data + 1;
	size_t len;
	int r;

	if (size == 0)
		return 0;
	len = size - 1;
	if (flash_diag_new(&diag) < 0 || flash_schema_set_new(&set) < 0 || flash_schema_set_new(&other) < 0)
		goto out;
	r = add(set, data[0], text, len, diag);
	if (r < 0) {
		fuzz_check(r == -FLASH_E_RENDER_BAD_DOCUMENT || r == -ENOMEM);
		fuzz_check(r == -ENOMEM || flash_diag_errors(diag) > 0);
		goto out;
	}
	flash_diag_reset(diag);
	fuzz_check(add(other, data[0], text, len, diag) == 0);
	for (size_t i = 0; i <= sizeof(objects) / sizeof(objects[0]); i++) {
		char m1[512], m2[512], m3[512];
		int r1 = run(set, i, diag, m1, sizeof(m1));
		int r2 = run(set, i, diag, m2, sizeof(m2));
		int r3 = run(other, i, diag, m3, sizeof(m3));

		fuzz_check(r1 == 0 || r1 == -FLASH_E_RENDER_INVALID || r1 == -FLASH_E_RENDER_NO_SCHEMA ||
			   r1 == -FLASH_E_RENDER_BAD_DOCUMENT || r1 == -ENOMEM);
		if (r1 == -FLASH_E_RENDER_INVALID || r1 == -FLASH_E_RENDER_BAD_DOCUMENT)
			fuzz_check(m1[0] != '\0'); /* a problem in the diag */
		fuzz_check(r1 == r2 && r1 == r3);
		fuzz_check(!strcmp(m1, m2) && !strcmp(m1, m3));
	}
out:
	flash_schema_set_free(set);
	flash_schema_set_free(other);
	flash_diag_free(diag);
	return 0;
}
