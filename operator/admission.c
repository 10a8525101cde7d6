/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Admission decisions of flash-operator and the image seam (admission.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "admission.h"

static int admit_default(void *ctx, const char *reference, uint64_t limit, struct op_image_info *ret, char *err,
			 size_t err_size)
{
	const struct op_image_settings *set = ctx;
	FLASH_OPTS(flash_image_opts, o, .ca_file = set ? set->ca_file : NULL, .plain_http = set && set->plain_http,
		   .timeout_ms = set ? set->timeout_ms : 0, .credentials = set ? set->credentials : NULL,
		   .n_credentials = set ? set->n_credentials : 0, .content_store = set ? set->content_store : NULL);
	struct flash_image *img = NULL;
	struct flash_diag *diag = NULL;
	int r = flash_diag_new(&diag);

	if (r < 0)
		return r;
	r = flash_image_resolve(reference, &o, &img, diag);
	if (r == 0)
		r = flash_image_check_disk(flash_image_charged_bytes(img), limit, diag);
	if (r == 0) {
		snprintf(ret->digest, sizeof(ret->digest), "%s", flash_image_digest(img));
		snprintf(ret->pinned, sizeof(ret->pinned), "%s", flash_image_pinned(img));
		ret->charged_bytes = flash_image_charged_bytes(img);
	} else {
		const struct flash_diag_entry *e = flash_diag_get(diag, 0);

		snprintf(err, err_size, "%s", e && e->message ? e->message : flash_strerror(r));
	}
	flash_image_free(img);
	flash_diag_free(diag);
	return r;
}

const struct op_image_ops op_image_default_ops = {
	.admit = admit_default,
};

bool op_image_error_transient(int err)
{
	switch (-err) {
	case ETIMEDOUT:
	case ECONNREFUSED:
	case EAGAIN:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ECONNRESET:
	case EBUSY:
	case FLASH_E_IMAGE_TRANSPORT:
		return true;
	default:
		return false;
	}
}

uint64_t op_admission_disk_limit(const struct flash_spec *spec, const struct flash_policy *policy)
{
	uint64_t gib = flash_spec_ephemeral_storage_gib(spec);
	uint64_t pol = policy ? flash_policy_workload_limit(policy, FLASH_POLICY_EPHEMERAL_STORAGE_GIB) : UINT64_MAX;

	if (pol != UINT64_MAX && pol < gib)
		gib = pol;
	if (gib == UINT64_MAX || gib > UINT64_MAX >> 30)
		return UINT64_MAX;
	return gib << 30;
}

int op_admission_check_suspension(const struct flash_meter_decision *d, const struct flash_spec *spec, char *msg,
				  size_t msg_size)
{
	char lifts[FLASH_METER_TIME_STRLEN] = "";

	if (d->lifts_at != FLASH_METER_NEVER && flash_meter_format_time(d->lifts_at, lifts, sizeof(lifts)) < 0)
		lifts[0] = '\0';
	if (d->suspend_all) {
		snprintf(msg, msg_size, "the organization reached its weekly %s limit: workloads are suspended until %s",
			 d->cpu_reached ? "CPU" : "memory", lifts);
		return -EDQUOT;
	}
	if (d->suspend_gpu && flash_spec_gpu_count(spec) > 0) {
		snprintf(msg, msg_size, "the organization reached its weekly GPU limit: GPU workloads are suspended until %s",
			 lifts);
		return -EDQUOT;
	}
	return 0;
}
