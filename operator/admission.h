/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Admission of a workload by flash-operator (private to operator/): the
 * image seam and the decisions taken before anything is stored.
 *
 * Image admission goes through an ops table so that tests can use local
 * OCI layouts; the default is libflash's image module (<flash/image.h>):
 * op_image_libflash_resolve() with the defaults (HTTPS with the system
 * CAs, anonymous, nothing pulled).  After resolving, the image's
 * charged bytes (config plus compressed layers) must stay below the
 * workload's disk limit (ephemeral_storage_gib of the spec, or the owner
 * policy's per-workload limit when the spec has none): an image that fills
 * or exceeds it is refused with both sizes in the message.
 */
#ifndef FLASH_OPERATOR_ADMISSION_H
#define FLASH_OPERATOR_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/meter.h>
#include <flash/policy.h>
#include <flash/spec.h>

/* What image resolution found. */
struct op_image_info {
	char digest[80];    /* "sha256:<64 hex>" of the manifest */
	char pinned[1024];  /* "host/repo@sha256:..." */
	uint64_t charged_bytes;
};

struct op_image_ops {
	/* Resolves @reference (no layer is pulled).  Returns 0 and *ret, or a
	 * negative code with @err (@err_size bytes) saying what; transient
	 * failures (-ETIMEDOUT, -ECONNREFUSED, -EAGAIN, -EHOSTUNREACH,
	 * -ENETUNREACH, -ECONNRESET, -EBUSY) are retried by the sender. */
	int (*resolve)(void *ctx, const char *reference, struct op_image_info *ret, char *err, size_t err_size);
	void *ctx;
};

/* Registry options of op_image_libflash_resolve() (its ctx; NULL: the
 * defaults of <flash/image.h>). */
struct op_image_config {
	const char *content_store; /* NULL: nothing kept */
	const char *ca_file;       /* NULL: system CAs */
	const char *username;      /* NULL: anonymous */
	const char *password;
	bool plain_http;           /* loopback test registries only */
	unsigned int timeout_ms;   /* 0: 30000 */
};

/* libflash's resolver (flash_image_resolve()); @ctx is a struct
 * op_image_config or NULL.  @err gets the diag's message. */
int op_image_libflash_resolve(void *ctx, const char *reference, struct op_image_info *ret, char *err,
			      size_t err_size);

/* The default ops: op_image_libflash_resolve() with ctx NULL. */
extern const struct op_image_ops op_image_default_ops;

/* True for the failures of resolve that are worth a retry (503). */
bool op_image_error_transient(int err);

/* The disk limit of @spec in bytes: ephemeral_storage_gib GiB, or the
 * policy's per-workload disk limit when the spec sets 0 (no policy or an
 * unlimited one: UINT64_MAX). */
uint64_t op_admission_disk_limit(const struct flash_spec *spec, const struct flash_policy *policy);

/* Refuses an image of @charged bytes that fills or exceeds @limit bytes
 * (the rule of flash_image_check_disk()): 0, or -FLASH_E_IMAGE_TOO_LARGE
 * with @msg naming both sizes. */
int op_admission_check_disk(uint64_t charged, uint64_t limit, char *msg, size_t msg_size);

/* Suspension at admission: with the organization's weekly usage at its
 * CPU or memory limit every workload is refused, at its GPU limit GPU
 * workloads are.  @d is the meter's decision for the organization now.
 * 0, or -EDQUOT with @msg saying which limit and when it lifts. */
int op_admission_check_suspension(const struct flash_meter_decision *d, const struct flash_spec *spec, char *msg,
				  size_t msg_size);

#endif
