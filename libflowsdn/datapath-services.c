/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The service writers of <flowsdn/datapath.h>: a service (backend sets
 * and frontends) published over what was there before in the order that
 * keeps every lookup consistent — backends, slots, Maglev slots,
 * frontends, then the stale entries (see flowsdn_maps_service_publish()).
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <flowsdn/datapath.h>
#include <flowsdn/maglev.h>

#include "datapath-internal.h"
#include "internal.h"

#define MAX_WEIGHT 256u
#define MAX_AFFINITY_TIMEOUT 86400u
#define SET_FLAGS (FLOWSDN_SVC_F_LOCAL | FLOWSDN_SVC_F_AFFINITY | FLOWSDN_SVC_F_MAGLEV)
#define FRONTEND_FLAGS \
	(FLOWSDN_SVC_F_NODEPORT | FLOWSDN_SVC_F_EXTERNAL_IP | FLOWSDN_SVC_F_LOADBALANCER | FLOWSDN_SVC_F_TWO_SCOPES)

static void addr_words(const struct flowsdn_addr *a, __be32 out[4])
{
	memset(out, 0, 16);
	memcpy(out, a->bytes, a->family == FLOWSDN_AF_INET ? 4 : 16);
}

static bool family_ok(uint8_t f)
{
	return f == FLOWSDN_AF_INET || f == FLOWSDN_AF_INET6;
}

static bool protocol_ok(uint8_t p)
{
	return p == IPPROTO_TCP || p == IPPROTO_UDP;
}

static uint32_t set_slot_count(const struct flowsdn_lb_set *set)
{
	uint64_t n = 0;

	for (size_t i = 0; i < set->n_backends; i++)
		if (set->backends[i].state == FLOWSDN_BACKEND_ACTIVE)
			n += set->backends[i].weight;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* Backend id of slot @slot of @set (slot < set_slot_count()). */
static uint32_t set_slot_backend(const struct flowsdn_lb_set *set, uint32_t slot)
{
	for (size_t i = 0; i < set->n_backends; i++) {
		const struct flowsdn_lb_backend *b = &set->backends[i];

		if (b->state != FLOWSDN_BACKEND_ACTIVE)
			continue;
		if (slot < b->weight)
			return b->id;
		slot -= b->weight;
	}
	return 0;
}

static bool backend_same(const struct flowsdn_lb_backend *a, const struct flowsdn_lb_backend *b)
{
	return a->id == b->id && flowsdn_addr_equal(&a->addr, &b->addr) && a->port == b->port &&
	       a->protocol == b->protocol && a->state == b->state && a->flags == b->flags;
}

static const struct flowsdn_lb_backend *find_backend(const struct flowsdn_lb_service *svc, uint32_t id)
{
	for (size_t s = 0; s < svc->n_sets; s++)
		for (size_t i = 0; i < svc->sets[s].n_backends; i++)
			if (svc->sets[s].backends[i].id == id)
				return &svc->sets[s].backends[i];
	return NULL;
}

static const struct flowsdn_lb_set *find_set(const struct flowsdn_lb_service *svc, uint32_t svc_id)
{
	for (size_t s = 0; svc && s < svc->n_sets; s++)
		if (svc->sets[s].svc_id == svc_id)
			return &svc->sets[s];
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Every Maglev slot names an active backend of weight > 0 of @set. */
static int maglev_table_valid(const struct flowsdn_lb_set *set)
{
	_cleanup_free_ uint32_t *ids = calloc(set->n_backends ? set->n_backends : 1, sizeof(*ids));
	size_t n = 0;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < set->n_backends; i++)
		if (set->backends[i].state == FLOWSDN_BACKEND_ACTIVE && set->backends[i].weight)
			ids[n++] = set->backends[i].id;
	qsort(ids, n, sizeof(*ids), cmp_u32);
	for (uint32_t i = 0; i < set->maglev_size; i++)
		if (!n || !bsearch(&set->maglev_table[i], ids, n, sizeof(*ids), cmp_u32))
			return -EINVAL;
	return 0;
}

static int set_valid(const struct flowsdn_lb_service *svc, const struct flowsdn_lb_set *set)
{
	if (!set->svc_id || (set->flags & ~SET_FLAGS) || (set->n_backends && !set->backends))
		return -EINVAL;
	if ((set->flags & FLOWSDN_SVC_F_AFFINITY) &&
	    (set->affinity_timeout == 0 || set->affinity_timeout > MAX_AFFINITY_TIMEOUT))
		return -EINVAL;
	for (size_t i = 0; i < set->n_backends; i++) {
		const struct flowsdn_lb_backend *b = &set->backends[i], *o;

		if (!b->id || !family_ok(b->addr.family) || !b->port || !protocol_ok(b->protocol) ||
		    b->state > FLOWSDN_BACKEND_QUARANTINED || (b->flags & ~FLOWSDN_BACKEND_F_REMOTE) ||
		    b->weight > MAX_WEIGHT)
			return -EINVAL;
		/* One id, one backend, in every set of the service. */
		o = find_backend(svc, b->id);
		if (o && !backend_same(o, b))
			return -EINVAL;
	}
	if (set_slot_count(set) > FLOWSDN_SVC_MAX_SLOTS_PER_SET)
		return -EINVAL;
	if (set->flags & FLOWSDN_SVC_F_MAGLEV) {
		if (!set->maglev_table || !flowsdn_maglev_size_supported(set->maglev_size))
			return -EINVAL;
		return maglev_table_valid(set);
	}
	return 0;
}

static int service_valid(const struct flowsdn_lb_service *svc)
{
	int r;

	if (!svc || (svc->n_sets && !svc->sets) || (svc->n_frontends && !svc->frontends))
		return -EINVAL;
	for (size_t s = 0; s < svc->n_sets; s++) {
		r = set_valid(svc, &svc->sets[s]);
		if (r < 0)
			return r;
		for (size_t t = 0; t < s; t++)
			if (svc->sets[t].svc_id == svc->sets[s].svc_id)
				return -EINVAL;
	}
	for (size_t f = 0; f < svc->n_frontends; f++) {
		const struct flowsdn_lb_frontend *fe = &svc->frontends[f];
		const struct flowsdn_lb_set *set;

		if (!family_ok(fe->addr.family) || !fe->port || !protocol_ok(fe->protocol) ||
		    fe->scope > FLOWSDN_SVC_SCOPE_INTERNAL || (fe->flags & ~FRONTEND_FLAGS) || fe->set >= svc->n_sets)
			return -EINVAL;
		set = &svc->sets[fe->set];
		for (size_t i = 0; i < set->n_backends; i++)
			if (set->backends[i].addr.family != fe->addr.family || set->backends[i].protocol != fe->protocol)
				return -EINVAL;
	}
	return 0;
}

static void frontend_key(const struct flowsdn_lb_frontend *fe, struct flowsdn_service_key *k)
{
	memset(k, 0, sizeof(*k));
	addr_words(&fe->addr, k->addr);
	k->port = htons(fe->port);
	k->protocol = fe->protocol;
	k->family = fe->addr.family;
	k->scope = fe->scope;
}

static bool frontend_in(const struct flowsdn_lb_service *svc, const struct flowsdn_service_key *k)
{
	for (size_t f = 0; svc && f < svc->n_frontends; f++) {
		struct flowsdn_service_key o;

		frontend_key(&svc->frontends[f], &o);
		if (memcmp(&o, k, sizeof(o)) == 0)
			return true;
	}
	return false;
}

/* Entries of one map gathered for one write (flowsdn__map_update_many()). */
struct batch {
	enum fsdn_map map;
	size_t key_size, value_size;
	unsigned char *keys, *vals;
	size_t n, cap;
	int error; /* the first failure to gather: -ENOMEM */
};

static void batch_init(struct batch *b, enum fsdn_map m, size_t key_size, size_t value_size)
{
	*b = (struct batch){ .map = m, .key_size = key_size, .value_size = value_size };
}

static void batch_done(struct batch *b)
{
	free(b->keys);
	free(b->vals);
	b->keys = b->vals = NULL;
	b->n = b->cap = 0;
}

static void batch_add(struct batch *b, const void *key, const void *value)
{
	if (b->error)
		return;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		unsigned char *k = realloc(b->keys, cap * b->key_size), *v;

		if (!k) {
			b->error = -ENOMEM;
			return;
		}
		b->keys = k;
		v = realloc(b->vals, cap * b->value_size);
		if (!v) {
			b->error = -ENOMEM;
			return;
		}
		b->vals = v;
		b->cap = cap;
	}
	memcpy(b->keys + b->n * b->key_size, key, b->key_size);
	memcpy(b->vals + b->n * b->value_size, value, b->value_size);
	b->n++;
}

/* Writes what @b gathered and empties it. */
static int batch_flush(struct flowsdn_maps *maps, struct batch *b)
{
	int r = b->error;

	if (r == 0 && b->n) {
		r = flowsdn__map_update_many(maps->fd[b->map], b->keys, b->vals, b->n, b->key_size, b->value_size);
		if (r < 0)
			pr_warn("service maps: write to %s: %s", flowsdn__map_name(b->map), strerror(-r));
	}
	b->n = 0;
	b->error = 0;
	return r;
}

static int map_delete(struct flowsdn_maps *maps, enum fsdn_map m, const void *key)
{
	if (bpf_map_delete_elem(maps->fd[m], key) < 0 && errno != ENOENT) {
		int r = -errno;

		pr_warn("service maps: delete from %s: %s", flowsdn__map_name(m), strerror(errno));
		return r;
	}
	return 0;
}

static void gather_backends(struct batch *b, const struct flowsdn_lb_service *svc, const struct flowsdn_lb_service *old)
{
	for (size_t s = 0; s < svc->n_sets; s++) {
		for (size_t i = 0; i < svc->sets[s].n_backends; i++) {
			const struct flowsdn_lb_backend *be = &svc->sets[s].backends[i], *o;
			struct flowsdn_backend v;

			if (find_backend(svc, be->id) != be)
				continue; /* written with its first set */
			o = old ? find_backend(old, be->id) : NULL;
			if (o && backend_same(o, be))
				continue;
			memset(&v, 0, sizeof(v));
			addr_words(&be->addr, v.addr);
			v.port = htons(be->port);
			v.protocol = be->protocol;
			v.family = be->addr.family;
			v.state = be->state;
			v.flags = be->flags;
			batch_add(b, &be->id, &v);
		}
	}
}

/* Slots 0..n-1 of @set, only those that differ from @old_set's. */
static void gather_slots(struct batch *b, const struct flowsdn_lb_set *set, const struct flowsdn_lb_set *old_set)
{
	uint32_t n = set_slot_count(set), old_n = old_set ? set_slot_count(old_set) : 0;

	for (uint32_t i = 0; i < n; i++) {
		struct flowsdn_svc_slot_key k = { .svc_id = set->svc_id, .slot = i };
		struct flowsdn_svc_slot_value v = { .backend_id = set_slot_backend(set, i) };

		if (i < old_n && set_slot_backend(old_set, i) == v.backend_id)
			continue;
		batch_add(b, &k, &v);
	}
}

static bool has_maglev(const struct flowsdn_lb_set *set)
{
	return set && (set->flags & FLOWSDN_SVC_F_MAGLEV);
}

/* @set's Maglev table: with @old_set's table of the same size, only the
 * slots that differ, in place; else a whole new table switched in
 * (flowsdn_maps_maglev_write()). */
static int write_maglev(struct flowsdn_maps *maps, const struct flowsdn_lb_set *set, const struct flowsdn_lb_set *old_set)
{
	bool diff = has_maglev(old_set) && old_set->maglev_size == set->maglev_size;

	return flowsdn_maps_maglev_write(maps, set->svc_id, diff ? old_set->maglev_table : NULL, set->maglev_table,
					 set->maglev_size, NULL);
}

static void gather_frontends(struct batch *b, const struct flowsdn_lb_service *svc)
{
	for (size_t f = 0; f < svc->n_frontends; f++) {
		const struct flowsdn_lb_frontend *fe = &svc->frontends[f];
		const struct flowsdn_lb_set *set = &svc->sets[fe->set];
		struct flowsdn_service_key k;
		struct flowsdn_service_value v;

		frontend_key(fe, &k);
		memset(&v, 0, sizeof(v));
		v.svc_id = set->svc_id;
		v.slot_count = set_slot_count(set);
		v.flags = set->flags | fe->flags;
		v.affinity_timeout = (set->flags & FLOWSDN_SVC_F_AFFINITY) ? set->affinity_timeout : 0;
		v.maglev_size = has_maglev(set) ? set->maglev_size : 0;
		batch_add(b, &k, &v);
	}
}

/* What @old had and @svc (NULL: nothing) has not, frontends first. */
static int remove_stale(struct flowsdn_maps *maps, const struct flowsdn_lb_service *old,
			const struct flowsdn_lb_service *svc)
{
	int r = 0, t;

	for (size_t f = 0; f < old->n_frontends; f++) {
		struct flowsdn_service_key k;

		frontend_key(&old->frontends[f], &k);
		if (frontend_in(svc, &k))
			continue;
		t = map_delete(maps, FSDN_MAP_SVC, &k);
		r = r ? r : t;
	}
	for (size_t s = 0; s < old->n_sets; s++) {
		const struct flowsdn_lb_set *os = &old->sets[s], *ns = svc ? find_set(svc, os->svc_id) : NULL;
		uint32_t from = ns ? set_slot_count(ns) : 0, to = set_slot_count(os);

		for (uint32_t i = from; i < to; i++) {
			struct flowsdn_svc_slot_key k = { .svc_id = os->svc_id, .slot = i };

			t = map_delete(maps, FSDN_MAP_SVC_SLOT, &k);
			r = r ? r : t;
		}
		if (!has_maglev(os) || has_maglev(ns))
			continue;
		t = flowsdn_maps_maglev_remove(maps, os->svc_id);
		t = t == -ENOENT ? 0 : t;
		r = r ? r : t;
	}
	for (size_t s = 0; s < old->n_sets; s++) {
		for (size_t i = 0; i < old->sets[s].n_backends; i++) {
			uint32_t id = old->sets[s].backends[i].id;

			if (find_backend(old, id) != &old->sets[s].backends[i] || (svc && find_backend(svc, id)))
				continue;
			t = map_delete(maps, FSDN_MAP_BACKEND, &id);
			r = r ? r : t;
		}
	}
	return r;
}

/* The phases of flowsdn_maps_service_publish() over @n services at once,
 * each phase one batched write per map. */
static int publish_many(struct flowsdn_maps *maps, const struct flowsdn_lb_service *const *svcs,
			const struct flowsdn_lb_service *const *olds, size_t n)
{
	struct batch b;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		if (service_valid(svcs[i]) < 0 || (olds && olds[i] && service_valid(olds[i]) < 0))
			return -EINVAL;
	batch_init(&b, FSDN_MAP_BACKEND, sizeof(uint32_t), sizeof(struct flowsdn_backend));
	for (size_t i = 0; i < n; i++)
		gather_backends(&b, svcs[i], olds ? olds[i] : NULL);
	r = batch_flush(maps, &b);
	batch_done(&b);
	batch_init(&b, FSDN_MAP_SVC_SLOT, sizeof(struct flowsdn_svc_slot_key), sizeof(struct flowsdn_svc_slot_value));
	for (size_t i = 0; i < n && r == 0; i++) {
		for (size_t s = 0; s < svcs[i]->n_sets && r == 0; s++) {
			const struct flowsdn_lb_set *set = &svcs[i]->sets[s];
			const struct flowsdn_lb_set *os = find_set(olds ? olds[i] : NULL, set->svc_id);

			gather_slots(&b, set, os);
			if (has_maglev(set))
				r = write_maglev(maps, set, os);
		}
	}
	if (r == 0)
		r = batch_flush(maps, &b);
	batch_done(&b);
	batch_init(&b, FSDN_MAP_SVC, sizeof(struct flowsdn_service_key), sizeof(struct flowsdn_service_value));
	for (size_t i = 0; i < n && r == 0; i++)
		gather_frontends(&b, svcs[i]);
	if (r == 0)
		r = batch_flush(maps, &b);
	batch_done(&b);
	for (size_t i = 0; i < n && r == 0; i++)
		if (olds && olds[i])
			r = remove_stale(maps, olds[i], svcs[i]);
	return r;
}

FLOWSDN_API int flowsdn_maps_service_publish(struct flowsdn_maps *maps, const struct flowsdn_lb_service *svc,
					     const struct flowsdn_lb_service *old)
{
	if (!maps || !svc)
		return -EINVAL;
	return publish_many(maps, &svc, old ? &old : NULL, 1);
}

FLOWSDN_API int flowsdn_maps_services_publish(struct flowsdn_maps *maps, const struct flowsdn_lb_service *const *svcs,
					      const struct flowsdn_lb_service *const *olds, size_t n)
{
	if (!maps || (n && !svcs))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!svcs[i])
			return -EINVAL;
	return publish_many(maps, svcs, olds, n);
}

FLOWSDN_API int flowsdn_maps_service_remove(struct flowsdn_maps *maps, const struct flowsdn_lb_service *old)
{
	if (!maps || service_valid(old) < 0)
		return -EINVAL;
	return remove_stale(maps, old, NULL);
}

FLOWSDN_API int flowsdn_maps_service_lookup(struct flowsdn_maps *maps, const struct flowsdn_addr *addr, uint16_t port,
					    uint8_t protocol, uint8_t scope, struct flowsdn_service_value *ret)
{
	struct flowsdn_lb_frontend fe = { .port = port, .protocol = protocol, .scope = scope };
	struct flowsdn_service_key k;
	struct flowsdn_service_value v;

	if (!maps || !addr || !ret || !family_ok(addr->family))
		return -EINVAL;
	fe.addr = *addr;
	frontend_key(&fe, &k);
	if (bpf_map_lookup_elem(maps->fd[FSDN_MAP_SVC], &k, &v) < 0)
		return -errno;
	*ret = v;
	return 0;
}
