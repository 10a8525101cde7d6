/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The identity allocator used by the policy database: a numeric identity
 * for each canonical label set, reference counted.  This is the one
 * place that knows how identities are allocated, so that moving to the
 * node-wide identity module is a change of this file only.
 */
#include "config.h"

#include "policy-internal.h"

#define IDENT_FIRST 256u      /* cluster-local identities start here (Cilium) */
#define IDENT_LAST 0x00ffffffu /* below the node-local (CIDR) identities */

struct pident_slot {
	char *labels;
	uint32_t id;
	size_t refs;
};

struct pident_alloc {
	struct pmap by_labels;
	struct pident_slot **slots; /* index = id - IDENT_FIRST */
	size_t n_slots, cap_slots;
	uint32_t *free_ids;
	size_t n_free;
};

int pident_alloc_new(struct pident_alloc **ret)
{
	struct pident_alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	*ret = a;
	return 0;
}

void pident_alloc_free(struct pident_alloc *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_slots; i++) {
		if (a->slots[i]) {
			free(a->slots[i]->labels);
			free(a->slots[i]);
		}
	}
	free(a->slots);
	free(a->free_ids);
	pmap_free(&a->by_labels);
	free(a);
}

int pident_alloc_acquire(struct pident_alloc *a, const char *labels, uint32_t *ret_id)
{
	struct pident_slot *s = pmap_get(&a->by_labels, labels, strlen(labels));
	uint32_t id;
	int r;

	if (s) {
		s->refs++;
		*ret_id = s->id;
		return 0;
	}
	if (a->n_free) {
		id = a->free_ids[a->n_free - 1];
	} else {
		if (a->n_slots > IDENT_LAST - IDENT_FIRST)
			return -FLOWSDN_E_POLICY_IDENTITIES;
		id = IDENT_FIRST + (uint32_t)a->n_slots;
		if (a->n_slots == a->cap_slots) {
			size_t cap = a->cap_slots ? a->cap_slots * 2 : 16;
			struct pident_slot **ns = realloc(a->slots, cap * sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			a->slots = ns;
			a->cap_slots = cap;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->labels = strdup(labels);
	s->id = id;
	s->refs = 1;
	if (!s->labels) {
		free(s);
		return -ENOMEM;
	}
	r = pmap_put(&a->by_labels, s->labels, strlen(s->labels), s);
	if (r < 0) {
		free(s->labels);
		free(s);
		return r;
	}
	if (a->n_free)
		a->n_free--;
	else
		a->n_slots++;
	a->slots[id - IDENT_FIRST] = s;
	*ret_id = id;
	return 0;
}

void pident_alloc_release(struct pident_alloc *a, uint32_t id)
{
	struct pident_slot *s;
	uint32_t *nf;

	if (id < IDENT_FIRST || id - IDENT_FIRST >= a->n_slots)
		return;
	s = a->slots[id - IDENT_FIRST];
	if (!s || --s->refs > 0)
		return;
	nf = realloc(a->free_ids, (a->n_free + 1) * sizeof(*nf));
	if (!nf) {
		/* keep the identity allocated rather than lose track of it */
		s->refs = 1;
		return;
	}
	a->free_ids = nf;
	pmap_del(&a->by_labels, s->labels, strlen(s->labels));
	a->slots[id - IDENT_FIRST] = NULL;
	a->free_ids[a->n_free++] = id;
	free(s->labels);
	free(s);
}
