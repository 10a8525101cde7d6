/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Admission of a workload by flash-operator (private to operator/): the
 * image seam and the decisions taken before anything is stored.
 *
 * Image admission goes through an ops table (a seam for tests); the
 * default is libflash's image module (<flash/image.h>): the reference is
 * resolved through the OCI distribution API or a local OCI layout, and
 * flash_image_check_disk() refuses an image whose charged bytes (config
 * plus compressed layers) fill or exceed the workload's disk limit, with
 * both sizes in the message.
 */
#ifndef FLASH_OPERATOR_ADMISSION_H
#define FLASH_OPERATOR_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/image.h>
#include <flash/meter.h>
#include <flash/policy.h>
#include <flash/spec.h>

/* What image admission found. */
struct op_image_info {
	char digest[80];    /* "sha256:<64 hex>" of the manifest */
	char pinned[1024];  /* "host/repo@sha256:..." */
	uint64_t charged_bytes;
};

struct op_image_ops {
	/* Resolves @reference (no layer is pulled) and refuses it when its
	 * charged bytes fill or exceed @limit bytes.  Returns 0 and *ret, or
	 * a negative code with @err (@err_size bytes) saying what:
	 * -FLASH_E_IMAGE_TOO_LARGE (both sizes in @err), transient failures
	 * (op_image_error_transient()) that the sender retries, or any other
	 * refusal of the reference. */
	int (*admit)(void *ctx, const char *reference, uint64_t limit, struct op_image_info *ret, char *err,
		     size_t err_size);
	void *ctx;
};

/* Registry settings of the default ops (a struct op_image_settings as
 * ctx; NULL ctx: the defaults of <flash/image.h>). */
struct op_image_settings {
	const char *ca_file;    /* PEM CA bundle; NULL: system CAs */
	bool plain_http;        /* allow http:// registries (loopback tests) */
	unsigned int timeout_ms;
	/* Per-registry credentials (registry-auth.h); none: anonymous. */
	const struct flash_image_credential *credentials;
	size_t n_credentials;
	const char *content_store; /* blobs kept there at admission; NULL: resolve only */
};

/* The default ops: flash_image_resolve() and flash_image_check_disk(). */
extern const struct op_image_ops op_image_default_ops;

/* True for the failures of admit that are worth a retry (503). */
bool op_image_error_transient(int err);

/* The disk limit of @spec in bytes: ephemeral_storage_gib GiB, lowered to
 * the owner policy's per-workload disk limit when that is smaller (no
 * policy or an unlimited one: the spec's). */
uint64_t op_admission_disk_limit(const struct flash_spec *spec, const struct flash_policy *policy);

/* Suspension at admission: with the organization's weekly usage at its
 * CPU or memory limit every workload is refused, at its GPU limit GPU
 * workloads are.  @d is the meter's decision for the organization now.
 * 0, or -EDQUOT with @msg saying which limit and when it lifts. */
int op_admission_check_suspension(const struct flash_meter_decision *d, const struct flash_spec *spec, char *msg,
				  size_t msg_size);

#endif
