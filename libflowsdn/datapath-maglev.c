/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Maglev tables of flowsdn_maglev (<flowsdn/datapath.h>, Maglev part):
 * one BPF array per backend set in a hash of maps keyed by svc_id.  A
 * change of backends rewrites only the slots that moved (the Maglev diff),
 * in one batched update; a new table or a new size is filled aside and
 * switched in with one outer update.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <flowsdn/datapath.h>
#include <flowsdn/maglev.h>

#include "datapath-internal.h"
#include "internal.h"

/* The kernel's ENOTSUPP (not in the uapi errno.h): a map without batch ops. */
#define KERNEL_ENOTSUPP 524

FLOWSDN_STATIC_ASSERT(sizeof(struct flowsdn_maglev_value) == sizeof(uint32_t), "a slot is one backend id");

static bool svc_id_valid(uint32_t svc_id)
{
	return svc_id > 0;
}

static bool batch_unsupported(int e)
{
	return e == EINVAL || e == EOPNOTSUPP || e == KERNEL_ENOTSUPP;
}

/* An fd on @svc_id's table and its size; -ENOENT when it has none. */
static int table_open(struct flowsdn_maps *maps, uint32_t svc_id, int *ret_fd, uint32_t *ret_m)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), id;
	int fd, r;

	if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_MAGLEV], &svc_id, &id) < 0)
		return -errno;
	fd = bpf_map_get_fd_by_id(id); /* the kernel opens bpf fds O_CLOEXEC */
	if (fd < 0)
		return -errno; /* ENOENT: removed meanwhile */
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (info.type != BPF_MAP_TYPE_ARRAY || info.key_size != sizeof(__u32) ||
	    info.value_size != sizeof(struct flowsdn_maglev_value)) {
		pr_warn("Maglev table of service %u: type %u key %u value %u, not an array of backend ids", svc_id,
			info.type, info.key_size, info.value_size);
		close(fd);
		return -FLOWSDN_E_BPF_MAP_LAYOUT;
	}
	*ret_fd = fd;
	*ret_m = info.max_entries;
	return 0;
}

/* Writes vals[i] to slot keys[i], i < n. */
static int write_slots(int fd, const __u32 *keys, const __u32 *vals, __u32 n)
{
	return flowsdn__map_update_many(fd, keys, vals, n, sizeof(*keys), sizeof(*vals));
}

/* A new table of @m slots holding @table, put in the outer map last. */
static int table_replace(struct flowsdn_maps *maps, uint32_t svc_id, const uint32_t *table, uint32_t m)
{
	LIBBPF_OPTS(bpf_map_create_opts, co, .map_flags = BPF_F_INNER_MAP);
	_cleanup_free_ __u32 *keys = malloc((size_t)m * sizeof(*keys));
	int fd, r;

	if (!keys)
		return -ENOMEM;
	for (uint32_t i = 0; i < m; i++)
		keys[i] = i;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "flowsdn_mgl_tbl", sizeof(__u32), sizeof(struct flowsdn_maglev_value),
			    m, &co);
	if (fd < 0) {
		r = -errno;
		pr_warn("Maglev table of service %u (%u slots): %s", svc_id, m, strerror(errno));
		return r;
	}
	r = write_slots(fd, keys, table, m);
	if (r == 0 && bpf_map_update_elem(maps->fd[FSDN_MAP_MAGLEV], &svc_id, &fd, BPF_ANY) < 0)
		r = -errno;
	if (r < 0)
		pr_warn("Maglev table of service %u: %s", svc_id, strerror(-r));
	close(fd); /* the outer map holds it now */
	return r;
}

FLOWSDN_API int flowsdn_maps_maglev_write(struct flowsdn_maps *maps, uint32_t svc_id, const uint32_t *old_table,
					  const uint32_t *new_table, uint32_t m, size_t *ret_written)
{
	_cleanup_free_ struct flowsdn_maglev_change *ch = NULL;
	_cleanup_free_ __u32 *keys = NULL, *vals = NULL;
	uint32_t cur_m = 0;
	size_t n = 0;
	int fd = -1, r;

	if (!maps || !new_table || !svc_id_valid(svc_id))
		return -EINVAL;
	if (!flowsdn_maglev_size_supported(m))
		return -FLOWSDN_E_MAGLEV_SIZE;
	if (old_table) {
		r = table_open(maps, svc_id, &fd, &cur_m);
		if (r < 0 && r != -ENOENT)
			return r;
		if (r == 0 && cur_m != m) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		r = table_replace(maps, svc_id, new_table, m);
		if (r == 0 && ret_written)
			*ret_written = m;
		return r;
	}

	r = flowsdn_maglev_diff(old_table, new_table, m, &ch, &n);
	if (r < 0)
		goto out_close;
	if (n) {
		keys = malloc(n * sizeof(*keys));
		vals = malloc(n * sizeof(*vals));
		if (!keys || !vals) {
			r = -ENOMEM;
			goto out_close;
		}
		for (size_t i = 0; i < n; i++) {
			keys[i] = ch[i].slot;
			vals[i] = ch[i].new_id;
		}
		r = write_slots(fd, keys, vals, (__u32)n);
		if (r < 0) {
			pr_warn("Maglev table of service %u: %s", svc_id, strerror(-r));
			goto out_close;
		}
	}
	if (ret_written)
		*ret_written = n;
out_close:
	close(fd);
	return r;
}

FLOWSDN_API int flowsdn_maps_maglev_read(struct flowsdn_maps *maps, uint32_t svc_id, uint32_t *ret_table, uint32_t m)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	_cleanup_free_ __u32 *keys = NULL, *vals = NULL, *tmp = NULL;
	__u32 done = 0, in = 0, out = 0, cur_m;
	bool batch = true;
	int fd, r;

	if (!maps || !ret_table || !svc_id_valid(svc_id) || m == 0)
		return -EINVAL;
	r = table_open(maps, svc_id, &fd, &cur_m);
	if (r < 0)
		return r;
	if (cur_m != m) {
		r = -EMSGSIZE;
		goto out_close;
	}
	keys = malloc((size_t)m * sizeof(*keys));
	vals = malloc((size_t)m * sizeof(*vals));
	tmp = malloc((size_t)m * sizeof(*tmp));
	if (!keys || !vals || !tmp) {
		r = -ENOMEM;
		goto out_close;
	}
	while (batch && done < m) {
		__u32 count = m - done;
		int e = 0;

		if (bpf_map_lookup_batch(fd, done ? &in : NULL, &out, keys + done, vals + done, &count, &o) < 0)
			e = errno;
		if (e && batch_unsupported(e) && done == 0) {
			batch = false;
			break;
		}
		done += count;
		if (e == ENOENT)
			break; /* the end of the array */
		if (e) {
			r = -e;
			goto out_close;
		}
		in = out;
	}
	if (!batch) {
		for (done = 0; done < m; done++) {
			keys[done] = done;
			if (bpf_map_lookup_elem(fd, &keys[done], &vals[done]) < 0) {
				r = -errno;
				goto out_close;
			}
		}
	}
	if (done != m) {
		r = -EIO;
		goto out_close;
	}
	for (__u32 i = 0; i < m; i++) {
		if (keys[i] >= m) {
			r = -EIO;
			goto out_close;
		}
		tmp[keys[i]] = vals[i];
	}
	memcpy(ret_table, tmp, (size_t)m * sizeof(*tmp));
	r = 0;
out_close:
	close(fd);
	return r;
}

FLOWSDN_API int flowsdn_maps_maglev_remove(struct flowsdn_maps *maps, uint32_t svc_id)
{
	if (!maps || !svc_id_valid(svc_id))
		return -EINVAL;
	if (bpf_map_delete_elem(maps->fd[FSDN_MAP_MAGLEV], &svc_id) < 0)
		return -errno;
	return 0;
}
