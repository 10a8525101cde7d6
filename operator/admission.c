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

/* Until libflash has <flash/image.h> (issue 16 item 4), an image cannot
 * be inspected, so nothing is admitted: refusing is the only answer that
 * keeps "an image that fills the disk never starts" true. */
static int resolve_not_built(void *ctx, const char *reference, struct op_image_info *ret, char *err, size_t err_size)
{
	(void)ctx;
	(void)ret;
	snprintf(err, err_size, "image admission not built: libflash has no OCI resolver, %s cannot be inspected",
		 reference);
	return -ENOSYS;
}

const struct op_image_ops op_image_default_ops = {
	.resolve = resolve_not_built,
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
		return true;
	default:
		return false;
	}
}

uint64_t op_admission_disk_limit(const struct flash_spec *spec, const struct flash_policy *policy)
{
	uint64_t gib = flash_spec_ephemeral_storage_gib(spec);
	uint64_t pol = policy ? flash_policy_workload_limit(policy, FLASH_POLICY_EPHEMERAL_STORAGE_GIB) : UINT64_MAX;

	if (gib == 0 || (pol != UINT64_MAX && pol < gib))
		gib = pol;
	if (gib == UINT64_MAX || gib > UINT64_MAX >> 30)
		return UINT64_MAX;
	return gib << 30;
}

int op_admission_check_disk(uint64_t charged, uint64_t limit, char *msg, size_t msg_size)
{
	if (charged < limit)
		return 0;
	snprintf(msg, msg_size,
		 "the image charges %" PRIu64 " bytes (config and compressed layers), which %s the disk limit of %" PRIu64
		 " bytes",
		 charged, charged == limit ? "fills" : "exceeds", limit);
	return -EFBIG;
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
