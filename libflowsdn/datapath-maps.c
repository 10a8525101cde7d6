/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pinned datapath maps (<flowsdn/datapath.h>, the flowsdn_maps half):
 * opened by path with bpf_obj_get(), checked against <flowsdn/maps.h>,
 * and the endpoint/policy/ipcache writes and counter reads.  Loads no
 * program, so the CNI plugin can publish endpoints with it.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <flowsdn/datapath.h>

#include "datapath-internal.h"
#include "internal.h"

static const char *const drop_names[] = {
#define X(name, value, text) [value] = text,
	FLOWSDN_DROP_REASONS(X)
#undef X
};

FLOWSDN_API const char *flowsdn_drop_reason_name(unsigned int reason)
{
	if (reason >= ARRAY_SIZE(drop_names) || !drop_names[reason])
		return "unknown";
	return drop_names[reason];
}

/* What every pinned map must be. */
static const struct map_spec {
	const char *name;
	enum bpf_map_type type;
	__u32 key_size, value_size;
} map_specs[FSDN_MAP_COUNT_] = {
	[FSDN_MAP_EP] = { FLOWSDN_MAP_ENDPOINTS, BPF_MAP_TYPE_HASH, sizeof(struct flowsdn_endpoint_key),
			  sizeof(struct flowsdn_endpoint_info) },
	[FSDN_MAP_IPCACHE] = { FLOWSDN_MAP_IPCACHE, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct flowsdn_ipcache_key),
			       sizeof(struct flowsdn_ipcache_value) },
	[FSDN_MAP_POLICY] = { FLOWSDN_MAP_POLICY, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct flowsdn_policy_key),
			      sizeof(struct flowsdn_policy_value) },
	[FSDN_MAP_EPSTAT] = { FLOWSDN_MAP_EP_COUNTERS, BPF_MAP_TYPE_PERCPU_HASH, sizeof(__u32),
			      sizeof(struct flowsdn_endpoint_counters) },
	[FSDN_MAP_DROPS] = { FLOWSDN_MAP_DROPS, BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32),
			     sizeof(struct flowsdn_drop_counters) },
	[FSDN_MAP_SVC] = { FLOWSDN_MAP_SERVICES, BPF_MAP_TYPE_HASH, sizeof(struct flowsdn_service_key),
			   sizeof(struct flowsdn_service_value) },
	[FSDN_MAP_BACKEND] = { FLOWSDN_MAP_BACKENDS, BPF_MAP_TYPE_HASH, sizeof(__u32), sizeof(struct flowsdn_backend) },
	[FSDN_MAP_MAGLEV] = { FLOWSDN_MAP_MAGLEV, BPF_MAP_TYPE_HASH_OF_MAPS, sizeof(__u32), sizeof(__u32) },
	[FSDN_MAP_SVC_SLOT] = { FLOWSDN_MAP_SVC_SLOTS, BPF_MAP_TYPE_HASH, sizeof(struct flowsdn_svc_slot_key),
				sizeof(struct flowsdn_svc_slot_value) },
	[FSDN_MAP_AFFINITY] = { FLOWSDN_MAP_AFFINITY, BPF_MAP_TYPE_LRU_HASH, sizeof(struct flowsdn_affinity_key),
				sizeof(struct flowsdn_affinity_value) },
	[FSDN_MAP_SOCK_RNAT] = { FLOWSDN_MAP_SOCK_REVNAT, BPF_MAP_TYPE_LRU_HASH,
				 sizeof(struct flowsdn_sock_revnat_key), sizeof(struct flowsdn_sock_revnat_value) },
	[FSDN_MAP_SRCRANGE] = { FLOWSDN_MAP_SRCRANGE, BPF_MAP_TYPE_LPM_TRIE, sizeof(struct flowsdn_srcrange_key),
				sizeof(struct flowsdn_srcrange_value) },
	[FSDN_MAP_CT] = { FLOWSDN_MAP_CT, BPF_MAP_TYPE_LRU_HASH, sizeof(struct flowsdn_ct_key),
			  sizeof(struct flowsdn_ct_entry) },
	[FSDN_MAP_CTSTAT] = { FLOWSDN_MAP_CT_STATS, BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32),
			      sizeof(struct flowsdn_ct_stats) },
	[FSDN_MAP_FRAG] = { FLOWSDN_MAP_FRAGS, BPF_MAP_TYPE_LRU_HASH, sizeof(struct flowsdn_frag_key),
			    sizeof(struct flowsdn_frag_entry) },
	[FSDN_MAP_HOSTFW] = { FLOWSDN_MAP_HOSTFW, BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(struct flowsdn_hostfw_state) },
	[FSDN_MAP_HOSTFW_STAT] = { FLOWSDN_MAP_HOSTFW_STATS, BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32),
				   sizeof(struct flowsdn_hostfw_counters) },
};

const char *flowsdn__map_name(enum fsdn_map m)
{
	return map_specs[m].name;
}

int flowsdn__pin_path(const char *dir, const char *name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

FLOWSDN_API void flowsdn_maps_free(struct flowsdn_maps *maps)
{
	if (!maps)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(maps->fd); i++)
		if (maps->fd[i] >= 0)
			close(maps->fd[i]);
	free(maps->pin_dir);
	free(maps);
}

FLOWSDN_API int flowsdn_maps_open(const char *pin_dir, struct flowsdn_maps **ret)
{
	struct flowsdn_maps *m;
	int r, ncpu;

	if (!ret)
		return -EINVAL;
	if (!pin_dir)
		pin_dir = FLOWSDN_DATAPATH_PIN_DIR;
	if (!*pin_dir || strlen(pin_dir) >= PATH_MAX - 32)
		return -EINVAL;
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EIO;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(m->fd); i++)
		m->fd[i] = -1;
	m->ncpu = (size_t)ncpu;
	m->pin_dir = strdup(pin_dir);
	if (!m->pin_dir) {
		r = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < FSDN_MAP_COUNT_; i++) {
		const struct map_spec *s = &map_specs[i];
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		char path[PATH_MAX];

		r = flowsdn__pin_path(pin_dir, s->name, path, sizeof(path));
		if (r < 0)
			goto out_free;
		m->fd[i] = bpf_obj_get(path);
		if (m->fd[i] < 0) {
			r = -errno;
			pr_warn("datapath map %s: %s", path, strerror(errno));
			if (r == -ENOENT)
				r = -FLOWSDN_E_BPF_NOT_LOADED;
			goto out_free;
		}
		r = bpf_obj_get_info_by_fd(m->fd[i], &info, &len);
		if (r < 0) {
			r = -errno;
			pr_warn("datapath map %s: cannot read its info: %s", path, strerror(errno));
			goto out_free;
		}
		if (info.type != s->type || info.key_size != s->key_size || info.value_size != s->value_size) {
			pr_warn("datapath map %s: type %u key %u value %u, expected type %u key %u value %u", path,
				info.type, info.key_size, info.value_size, s->type, s->key_size, s->value_size);
			r = -FLOWSDN_E_BPF_MAP_LAYOUT;
			goto out_free;
		}
	}
	*ret = m;
	return 0;

out_free:
	flowsdn_maps_free(m);
	return r;
}

int flowsdn__ep_key(const struct flowsdn_addr *a, struct flowsdn_endpoint_key *k)
{
	memset(k, 0, sizeof(*k));
	if (a->family == FLOWSDN_AF_INET)
		memcpy(k->addr, a->bytes, 4);
	else if (a->family == FLOWSDN_AF_INET6)
		memcpy(k->addr, a->bytes, 16);
	else
		return -EINVAL;
	k->family = a->family;
	return 0;
}

static int endpoint_valid(const struct flowsdn_endpoint *ep)
{
	if (!ep || ep->id == 0 || ep->host_ifindex <= 0 || ep->n_addrs == 0 ||
	    ep->n_addrs > FLOWSDN_ENDPOINT_MAX_ADDRS || (ep->flags & ~FLOWSDN_EP_F_ALL))
		return -EINVAL;
	for (size_t i = 0; i < ep->n_addrs; i++)
		if (ep->addrs[i].family != FLOWSDN_AF_INET && ep->addrs[i].family != FLOWSDN_AF_INET6)
			return -EINVAL;
	return 0;
}

FLOWSDN_API int flowsdn_maps_endpoint_publish(struct flowsdn_maps *maps, const struct flowsdn_endpoint *ep)
{
	struct flowsdn_endpoint_info info = {};
	_cleanup_free_ struct flowsdn_endpoint_counters *zero = NULL;
	int r;

	if (!maps || endpoint_valid(ep) < 0)
		return -EINVAL;
	/* Refuse before writing anything if an address is someone else's. */
	for (size_t i = 0; i < ep->n_addrs; i++) {
		struct flowsdn_endpoint_key k;
		struct flowsdn_endpoint_info cur;

		flowsdn__ep_key(&ep->addrs[i], &k);
		if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_EP], &k, &cur) == 0 && cur.ep_id != ep->id) {
			char buf[FLOWSDN_ADDR_STRLEN];

			flowsdn_addr_format(&ep->addrs[i], buf, sizeof(buf));
			pr_warn("endpoint %u: address %s belongs to endpoint %u", ep->id, buf, cur.ep_id);
			return -EEXIST;
		}
	}
	/* Counters first: the datapath counts from the first packet on. */
	zero = calloc(maps->ncpu, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(maps->fd[FSDN_MAP_EPSTAT], &ep->id, zero, BPF_NOEXIST) < 0 && errno != EEXIST) {
		r = -errno;
		pr_warn("endpoint %u: counters entry: %s", ep->id, strerror(errno));
		return r;
	}
	info.ifindex = (__u32)ep->host_ifindex;
	info.ep_id = ep->id;
	info.identity = ep->identity;
	info.flags = ep->flags;
	memcpy(info.mac, ep->mac, 6);
	memcpy(info.host_mac, ep->host_mac, 6);
	for (size_t i = 0; i < ep->n_addrs; i++) {
		struct flowsdn_endpoint_key k;
		struct flowsdn_endpoint_info cur;

		flowsdn__ep_key(&ep->addrs[i], &k);
		/* A republished endpoint keeps the policy generation in force. */
		if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_EP], &k, &cur) == 0 && cur.ep_id == ep->id)
			info.policy_gen = cur.policy_gen;
		else
			info.policy_gen = 0;
		if (bpf_map_update_elem(maps->fd[FSDN_MAP_EP], &k, &info, BPF_ANY) < 0) {
			r = -errno;
			pr_warn("endpoint %u: address entry: %s", ep->id, strerror(errno));
			/* Undo the entries written so far. */
			for (size_t j = 0; j < i; j++) {
				flowsdn__ep_key(&ep->addrs[j], &k);
				bpf_map_delete_elem(maps->fd[FSDN_MAP_EP], &k);
			}
			return r;
		}
	}
	return 0;
}

FLOWSDN_API int flowsdn_maps_endpoint_flags_update(struct flowsdn_maps *maps, const struct flowsdn_endpoint *ep,
						  uint32_t mask, uint32_t flags)
{
	if (!maps || !ep || ep->n_addrs == 0 || ep->n_addrs > FLOWSDN_ENDPOINT_MAX_ADDRS || (mask & ~FLOWSDN_EP_F_ALL) ||
	    (flags & ~mask))
		return -EINVAL;
	for (size_t i = 0; i < ep->n_addrs; i++) {
		struct flowsdn_endpoint_key k;
		struct flowsdn_endpoint_info info;

		if (flowsdn__ep_key(&ep->addrs[i], &k) < 0)
			return -EINVAL;
		if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_EP], &k, &info) < 0 || info.ep_id != ep->id)
			return -ENOENT;
		info.flags = (info.flags & ~mask) | flags;
		if (bpf_map_update_elem(maps->fd[FSDN_MAP_EP], &k, &info, BPF_EXIST) < 0)
			return -errno;
	}
	return 0;
}

/* Deletes every policy entry of @ep_id. */
static int policy_remove_endpoint(struct flowsdn_maps *maps, uint32_t ep_id)
{
	int fd = maps->fd[FSDN_MAP_POLICY];
	struct flowsdn_policy_key key, next, *doomed = NULL;
	size_t n = 0, cap = 0;
	const void *prev = NULL;
	int r = 0;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if ((next.ep_id & ~FLOWSDN_POLICY_GEN_BIT) == ep_id) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct flowsdn_policy_key *t = reallocarray(doomed, ncap, sizeof(*t));

				if (!t) {
					r = -ENOMEM;
					goto out;
				}
				doomed = t;
				cap = ncap;
			}
			doomed[n++] = next;
		}
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, &doomed[i]) < 0 && errno != ENOENT && r == 0)
			r = -errno;
out:
	free(doomed);
	return r;
}

FLOWSDN_API int flowsdn_maps_endpoint_remove(struct flowsdn_maps *maps, const struct flowsdn_endpoint *ep)
{
	int r = 0;

	if (!maps || !ep || ep->id == 0 || ep->n_addrs > FLOWSDN_ENDPOINT_MAX_ADDRS)
		return -EINVAL;
	for (size_t i = 0; i < ep->n_addrs; i++) {
		struct flowsdn_endpoint_key k;
		struct flowsdn_endpoint_info cur;

		if (flowsdn__ep_key(&ep->addrs[i], &k) < 0)
			return -EINVAL;
		if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_EP], &k, &cur) < 0 || cur.ep_id != ep->id)
			continue; /* gone, or re-used by another endpoint: not ours to delete */
		if (bpf_map_delete_elem(maps->fd[FSDN_MAP_EP], &k) < 0 && errno != ENOENT && r == 0)
			r = -errno;
	}
	if (bpf_map_delete_elem(maps->fd[FSDN_MAP_EPSTAT], &ep->id) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	{
		int p = policy_remove_endpoint(maps, ep->id);

		if (p < 0 && r == 0)
			r = p;
	}
	return r;
}

FLOWSDN_API int flowsdn_maps_endpoint_lookup(struct flowsdn_maps *maps, const struct flowsdn_addr *addr,
					     struct flowsdn_endpoint_info *ret_info)
{
	struct flowsdn_endpoint_key k;
	struct flowsdn_endpoint_info info;

	if (!maps || !addr || !ret_info || flowsdn__ep_key(addr, &k) < 0)
		return -EINVAL;
	if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_EP], &k, &info) < 0)
		return -errno;
	*ret_info = info;
	return 0;
}

int flowsdn__percpu_sum(const struct flowsdn_maps *maps, enum fsdn_map m, const void *key, void *ret, size_t size)
{
	_cleanup_free_ __u64 *v = NULL;
	size_t n = size / sizeof(__u64);
	__u64 sum[16] = {};

	if (size % sizeof(__u64) || n > sizeof(sum) / sizeof(sum[0]))
		return -EINVAL;
	v = calloc(maps->ncpu, size);
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(maps->fd[m], key, v) < 0)
		return -errno;
	for (size_t cpu = 0; cpu < maps->ncpu; cpu++)
		for (size_t i = 0; i < n; i++)
			sum[i] += v[cpu * n + i];
	memcpy(ret, sum, size);
	return 0;
}

FLOWSDN_API int flowsdn_maps_endpoint_counters(struct flowsdn_maps *maps, uint32_t ep_id,
					       struct flowsdn_endpoint_counters *ret)
{
	if (!maps || !ret)
		return -EINVAL;
	return flowsdn__percpu_sum(maps, FSDN_MAP_EPSTAT, &ep_id, ret, sizeof(*ret));
}

FLOWSDN_API int flowsdn_maps_drop_counters(struct flowsdn_maps *maps, unsigned int reason,
					   struct flowsdn_drop_counters *ret)
{
	__u32 key = reason;

	if (!maps || !ret || reason >= FLOWSDN_DROP_MAX_)
		return -EINVAL;
	return flowsdn__percpu_sum(maps, FSDN_MAP_DROPS, &key, ret, sizeof(*ret));
}

FLOWSDN_API int flowsdn_policy_key_make(uint32_t ep_id, enum flowsdn_direction direction, uint32_t identity,
					uint8_t protocol, uint16_t port, unsigned int port_prefix_bits,
					struct flowsdn_policy_key *ret)
{
	struct flowsdn_policy_key k;

	if (!ret || ep_id == 0 || (direction != FLOWSDN_DIR_INGRESS && direction != FLOWSDN_DIR_EGRESS) ||
	    port_prefix_bits > 16)
		return -EINVAL;
	if (protocol == 0 && (port != 0 || port_prefix_bits != 0))
		return -EINVAL;
	if (port_prefix_bits < 16 && (port & (uint16_t)(0xffffu >> port_prefix_bits)))
		return -EINVAL;
	memset(&k, 0, sizeof(k));
	k.ep_id = ep_id;
	k.direction = (__u8)direction;
	k.identity = identity;
	k.protocol = protocol;
	k.dport = htobe16(port);
	if (protocol == 0)
		k.prefixlen = FLOWSDN_POLICY_PREFIX_L3;
	else
		k.prefixlen = FLOWSDN_POLICY_PREFIX_PROTO + port_prefix_bits;
	*ret = k;
	return 0;
}

FLOWSDN_API int flowsdn_policy_port_blocks(uint16_t first, uint16_t last, uint16_t *ret_ports, uint8_t *ret_bits,
					   size_t max)
{
	uint16_t ports[32];
	uint8_t bits[32];
	size_t n = 0;
	uint32_t cur = first, end = last;

	if (!ret_ports || !ret_bits || first == 0 || first > last)
		return -EINVAL;
	while (cur <= end) {
		/* The largest aligned block starting at cur that fits. */
		unsigned int k = 0;

		while (k < 16 && (cur & ((1u << (k + 1)) - 1)) == 0 && cur + (1u << (k + 1)) - 1 <= end)
			k++;
		ports[n] = (uint16_t)cur;
		bits[n] = (uint8_t)(16 - k);
		n++;
		cur += 1u << k;
	}
	if (n > max)
		return -ENOBUFS;
	memcpy(ret_ports, ports, n * sizeof(*ports));
	memcpy(ret_bits, bits, n * sizeof(*bits));
	return (int)n;
}

int flowsdn__policy_key_valid(const struct flowsdn_policy_key *k)
{
	if (!k || k->ep_id == 0 || k->pad0[0] || k->pad0[1] || k->pad0[2] || k->pad1 ||
	    (k->direction != FLOWSDN_DIR_INGRESS && k->direction != FLOWSDN_DIR_EGRESS))
		return -EINVAL;
	if (k->prefixlen == FLOWSDN_POLICY_PREFIX_L3)
		return k->protocol == 0 && k->dport == 0 ? 0 : -EINVAL;
	if (k->prefixlen < FLOWSDN_POLICY_PREFIX_PROTO || k->prefixlen > FLOWSDN_POLICY_PREFIX_FULL)
		return -EINVAL;
	{
		unsigned int bits = k->prefixlen - FLOWSDN_POLICY_PREFIX_PROTO;
		uint16_t port = be16toh(k->dport);

		if (bits < 16 && (port & (uint16_t)(0xffffu >> bits)))
			return -EINVAL;
	}
	return 0;
}

FLOWSDN_API int flowsdn_maps_policy_update(struct flowsdn_maps *maps, const struct flowsdn_policy_key *key,
					   uint32_t flags, uint32_t rule_id)
{
	struct flowsdn_policy_value v = { .flags = flags, .rule_id = rule_id };

	if (!maps || flowsdn__policy_key_valid(key) < 0 || (flags & ~FLOWSDN_POLICY_F_DENY))
		return -EINVAL;
	if (bpf_map_update_elem(maps->fd[FSDN_MAP_POLICY], key, &v, BPF_ANY) < 0)
		return -errno;
	return 0;
}

FLOWSDN_API int flowsdn_maps_policy_delete(struct flowsdn_maps *maps, const struct flowsdn_policy_key *key)
{
	if (!maps || flowsdn__policy_key_valid(key) < 0)
		return -EINVAL;
	if (bpf_map_delete_elem(maps->fd[FSDN_MAP_POLICY], key) < 0)
		return -errno;
	return 0;
}

FLOWSDN_API int flowsdn_maps_policy_get(struct flowsdn_maps *maps, const struct flowsdn_policy_key *key,
					struct flowsdn_policy_value *ret)
{
	struct flowsdn_policy_value v;
	struct flowsdn_policy_key cur, next;
	const void *prev = NULL;
	bool found = false;

	if (!maps || !ret || flowsdn__policy_key_valid(key) < 0)
		return -EINVAL;
	/* A lookup returns the longest match, which may be a shorter entry:
	 * make sure this very key is in the map first. */
	while (!found && bpf_map_get_next_key(maps->fd[FSDN_MAP_POLICY], prev, &next) == 0) {
		found = memcmp(&next, key, sizeof(next)) == 0;
		cur = next;
		prev = &cur;
	}
	if (!found)
		return -ENOENT;
	if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_POLICY], key, &v) < 0)
		return -errno;
	*ret = v;
	return 0;
}

int flowsdn__prefix_bits(const struct flowsdn_prefix *p)
{
	unsigned int bits = p ? flowsdn_addr_bits(&p->addr) : 0;

	return bits == 0 || p->len > bits ? -EINVAL : (int)bits;
}

static int ipcache_key(const struct flowsdn_prefix *p, struct flowsdn_ipcache_key *k)
{
	int bits = flowsdn__prefix_bits(p);

	if (bits < 0)
		return bits;
	memset(k, 0, sizeof(*k));
	k->prefixlen = FLOWSDN_IPCACHE_PREFIX_BASE + p->len;
	k->family = p->addr.family;
	memcpy(k->addr, p->addr.bytes, (size_t)bits / 8);
	return 0;
}

FLOWSDN_API int flowsdn_maps_ipcache_update(struct flowsdn_maps *maps, const struct flowsdn_prefix *prefix,
					    uint32_t identity)
{
	struct flowsdn_ipcache_key k;
	struct flowsdn_ipcache_value v = { .identity = identity };

	if (!maps || ipcache_key(prefix, &k) < 0 || identity == FLOWSDN_IDENTITY_ANY)
		return -EINVAL;
	if (bpf_map_update_elem(maps->fd[FSDN_MAP_IPCACHE], &k, &v, BPF_ANY) < 0)
		return -errno;
	return 0;
}

FLOWSDN_API int flowsdn_maps_ipcache_delete(struct flowsdn_maps *maps, const struct flowsdn_prefix *prefix)
{
	struct flowsdn_ipcache_key k;

	if (!maps || ipcache_key(prefix, &k) < 0)
		return -EINVAL;
	if (bpf_map_delete_elem(maps->fd[FSDN_MAP_IPCACHE], &k) < 0)
		return -errno;
	return 0;
}
