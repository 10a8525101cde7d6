/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Many map entries in one BPF_MAP_UPDATE_BATCH (datapath-internal.h),
 * for the service and Maglev writers. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <bpf/bpf.h>

#include "datapath-internal.h"

#define KERNEL_ENOTSUPP 524 /* the kernel's ENOTSUPP, not in the uapi */

static bool batch_unsupported(int e)
{
	return e == EINVAL || e == EOPNOTSUPP || e == KERNEL_ENOTSUPP;
}

int flowsdn__map_update_many(int fd, const void *keys, const void *vals, size_t n, size_t key_size,
			     size_t value_size)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	const unsigned char *k = keys, *v = vals;
	size_t done = 0;

	/* A batch stops at its first failing element and counts those done. */
	while (done < n) {
		__u32 count = n - done > UINT32_MAX ? UINT32_MAX : (__u32)(n - done);

		if (bpf_map_update_batch(fd, k + done * key_size, v + done * value_size, &count, &o) == 0) {
			done += count;
			continue;
		}
		if (!batch_unsupported(errno) || count)
			return -errno;
		break;
	}
	for (; done < n; done++)
		if (bpf_map_update_elem(fd, k + done * key_size, v + done * value_size, BPF_ANY) < 0)
			return -errno;
	return 0;
}
