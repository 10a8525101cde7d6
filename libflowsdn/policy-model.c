/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy database: namespaces, pods, identities, CIDR identities and
 * policies, and the bookkeeping of which endpoints a change makes dirty.
 */
#include "config.h"

#include <stdio.h>
#include <flowsdn/policy.h>

#include "names.h"
#include "policy-internal.h"

/* ------------------------------------------------------------ hash map */

static uint64_t hash_bytes(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static struct pmap_slot *pmap_find(const struct pmap *m, const void *key, size_t len, uint64_t h)
{
	if (!m->cap)
		return NULL;
	for (size_t i = h & (m->cap - 1), n = 0; n < m->cap; i = (i + 1) & (m->cap - 1), n++) {
		struct pmap_slot *s = &m->slots[i];

		if (!s->key)
			return NULL;
		if (s->value && s->hash == h && s->len == len && memcmp(s->key, key, len) == 0)
			return s;
	}
	return NULL;
}

void *pmap_get(const struct pmap *m, const void *key, size_t len)
{
	struct pmap_slot *s = pmap_find(m, key, len, hash_bytes(key, len));

	return s ? s->value : NULL;
}

static int pmap_grow(struct pmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 16;
	struct pmap_slot *old = m->slots, *ns;
	size_t ocap = m->cap;

	while (m->live * 2 >= cap)
		cap *= 2;
	ns = calloc(cap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	m->slots = ns;
	m->cap = cap;
	m->used = m->live = 0;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].key && old[i].value) {
			size_t j = old[i].hash & (cap - 1);

			while (ns[j].key)
				j = (j + 1) & (cap - 1);
			ns[j] = old[i];
			m->used++;
			m->live++;
		}
	}
	free(old);
	return 0;
}

int pmap_put(struct pmap *m, const void *key, size_t len, void *value)
{
	uint64_t h = hash_bytes(key, len);
	struct pmap_slot *s = pmap_find(m, key, len, h);
	size_t i;

	if (!value)
		return -EINVAL;
	if (s) {
		s->key = key;
		s->value = value;
		return 0;
	}
	if ((m->used + 1) * 10 >= m->cap * 7) {
		int r = pmap_grow(m);

		if (r < 0)
			return r;
	}
	for (i = h & (m->cap - 1); m->slots[i].key; i = (i + 1) & (m->cap - 1))
		;
	m->slots[i] = (struct pmap_slot){ .key = key, .len = len, .hash = h, .value = value };
	m->used++;
	m->live++;
	return 0;
}

void *pmap_del(struct pmap *m, const void *key, size_t len)
{
	struct pmap_slot *s = pmap_find(m, key, len, hash_bytes(key, len));
	void *v;

	if (!s)
		return NULL;
	v = s->value;
	s->value = NULL; /* tombstone: key stays non-NULL (it is only compared when value is set) */
	m->live--;
	return v;
}

void pmap_free(struct pmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* Copies and validates caller labels. */
static int labels_from_user(const struct flowsdn_policy_label *labels, size_t n, struct plabels *out)
{
	struct plabels l = { 0 };
	int r;

	if (n && !labels)
		return -EINVAL;
	l.v = calloc(n + 1, sizeof(*l.v));
	if (!l.v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!labels[i].key || !labels[i].value || !names_label_key_valid(labels[i].key) ||
		    !names_label_value_valid(labels[i].value)) {
			plabels_free(&l);
			return -EINVAL;
		}
		l.v[i].key = strdup(labels[i].key);
		l.v[i].value = strdup(labels[i].value);
		l.n++;
		if (!l.v[i].key || !l.v[i].value) {
			plabels_free(&l);
			return -ENOMEM;
		}
	}
	r = plabels_sort(&l);
	if (r < 0) {
		plabels_free(&l);
		return -EINVAL;
	}
	*out = l;
	return 0;
}

/* ------------------------------------------------------------ CIDR identities */

#define CIDR_PINNED ((size_t)1 << 40)

static int cidr_cmp(const void *key, const void *elem)
{
	return flowsdn_prefix_compare(key, &((const struct pcidr *)elem)->prefix);
}

static size_t cidr_find(const struct flowsdn_policy_db *db, const struct flowsdn_prefix *p, bool *found)
{
	return util_lower_bound(db->cidrs, db->n_cidrs, sizeof(*db->cidrs), p, cidr_cmp, found);
}

static uint32_t cidr_new_id(struct flowsdn_policy_db *db)
{
	/* room reserved by cidr_reserve() */
	if (db->n_cidr_free)
		return db->cidr_free[--db->n_cidr_free];
	return POLICY_IDENTITY_LOCAL_BASE + db->cidr_next++;
}

static bool policy_uses_universe(const struct flowsdn_policy *p)
{
	if (p->tier == FLOWSDN_POLICY_TIER_ALLOW)
		return false;
	for (int d = 0; d < 2; d++)
		for (size_t i = 0; i < p->n_rules[d]; i++)
			if (p->rules[d][i].n_peers == 0)
				return true;
	return false;
}

/* A CIDR identity appeared or disappeared: recompute the endpoints whose
 * rules cover it. */
static void cidr_changed(struct flowsdn_policy_db *db, const struct flowsdn_prefix *pfx)
{
	db->gen++;
	db->ipcache_valid = false;
	if (db->n_clean == 0)
		return; /* every endpoint is dirty already */
	for (size_t i = 0; i < db->n_policies; i++) {
		struct flowsdn_policy *p = db->policies[i];
		bool hit = policy_uses_universe(p);

		for (int d = 0; d < 2 && !hit; d++)
			for (size_t j = 0; j < p->n_rules[d] && !hit; j++)
				for (size_t k = 0; k < p->rules[d][j].n_peers && !hit; k++) {
					const struct ppeer *pe = &p->rules[d][j].peers[k];

					if (pe->kind == PEER_IPBLOCK && flowsdn_prefix_contains(&pe->cidr, pfx))
						hit = true;
				}
		if (hit)
			pdb_mark_policy(db, p);
	}
}

static int cidr_reserve(struct flowsdn_policy_db *db, size_t more)
{
	struct pcidr *n = realloc(db->cidrs, (db->n_cidrs + more + 1) * sizeof(*n));
	uint32_t *f;

	if (!n)
		return -ENOMEM;
	db->cidrs = n;
	/* the free list can hold every id ever handed out */
	f = realloc(db->cidr_free, (db->cidr_next + more + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	db->cidr_free = f;
	return 0;
}

static void cidr_insert(struct flowsdn_policy_db *db, const struct flowsdn_prefix *p, size_t refs)
{
	bool found;
	size_t at = cidr_find(db, p, &found);

	if (found) {
		db->cidrs[at].refs += refs;
		return;
	}
	/* capacity reserved by the caller */
	memmove(&db->cidrs[at + 1], &db->cidrs[at], (db->n_cidrs - at) * sizeof(*db->cidrs));
	db->cidrs[at] = (struct pcidr){ .prefix = *p, .id = cidr_new_id(db), .refs = refs };
	db->n_cidrs++;
	cidr_changed(db, p);
}

static int pdb_cidr_init(struct flowsdn_policy_db *db)
{
	struct flowsdn_prefix all4 = { .addr = { .family = FLOWSDN_AF_INET }, .len = 0 };
	struct flowsdn_prefix all6 = { .addr = { .family = FLOWSDN_AF_INET6 }, .len = 0 };
	int r = cidr_reserve(db, 2);

	if (r < 0)
		return r;
	cidr_insert(db, &all4, CIDR_PINNED);
	cidr_insert(db, &all6, CIDR_PINNED);
	return 0;
}

static void cidr_unref(struct flowsdn_policy_db *db, const struct flowsdn_prefix *p)
{
	bool found;
	size_t at = cidr_find(db, p, &found);
	struct flowsdn_prefix gone;

	if (!found || --db->cidrs[at].refs > 0)
		return;
	gone = db->cidrs[at].prefix;
	db->cidr_free[db->n_cidr_free++] = db->cidrs[at].id;
	memmove(&db->cidrs[at], &db->cidrs[at + 1], (db->n_cidrs - at - 1) * sizeof(*db->cidrs));
	db->n_cidrs--;
	cidr_changed(db, &gone);
}

static int pdb_cidr_ref(struct flowsdn_policy_db *db, const struct flowsdn_policy *p, int delta)
{
	size_t n = 0;

	for (int d = 0; d < 2; d++)
		for (size_t i = 0; i < p->n_rules[d]; i++)
			for (size_t j = 0; j < p->rules[d][i].n_peers; j++)
				if (p->rules[d][i].peers[j].kind == PEER_IPBLOCK)
					n += 1 + p->rules[d][i].peers[j].n_except;
	if (n == 0)
		return 0;
	if (delta > 0) {
		int r = cidr_reserve(db, n);

		if (r < 0)
			return r;
	}
	for (int d = 0; d < 2; d++)
		for (size_t i = 0; i < p->n_rules[d]; i++)
			for (size_t j = 0; j < p->rules[d][i].n_peers; j++) {
				const struct ppeer *pe = &p->rules[d][i].peers[j];

				if (pe->kind != PEER_IPBLOCK)
					continue;
				for (size_t k = 0; k <= pe->n_except; k++) {
					const struct flowsdn_prefix *x = k == 0 ? &pe->cidr : &pe->except[k - 1];

					if (delta > 0)
						cidr_insert(db, x, 1);
					else
						cidr_unref(db, x);
				}
			}
	return 0;
}

/* ------------------------------------------------------------ database */

FLOWSDN_API int flowsdn_policy_db_new(const struct flowsdn_policy_db_opts *opts,
				      struct flowsdn_policy_db **ret_db)
{
	struct flowsdn_policy_db *db;
	int r;

	if (!ret_db || !OPTS_VALID(opts, flowsdn_policy_db_opts) || !OPTS_GET(opts, identities, NULL))
		return -EINVAL;
	db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	db->max_entries = OPTS_GET(opts, max_entries_per_endpoint, 0);
	if (db->max_entries == 0)
		db->max_entries = 16384;
	db->store = OPTS_GET(opts, identities, NULL);
	r = pdb_cidr_init(db);
	if (r < 0) {
		flowsdn_policy_db_free(db);
		return r;
	}
	*ret_db = db;
	return 0;
}

static void ident_free(struct pident *id)
{
	if (!id)
		return;
	free(id->key);
	free(id->ns);
	plabels_free(&id->labels);
	for (size_t i = 0; i < id->n_ports; i++)
		free(id->ports[i].name);
	free(id->ports);
	free(id);
}

static void pod_free(struct ppod *pod)
{
	if (!pod)
		return;
	free(pod->key);
	free(pod->ns);
	free(pod->name);
	plabels_free(&pod->labels);
	for (size_t i = 0; i < pod->n_ports; i++)
		free(pod->ports[i].name);
	free(pod->ports);
	free(pod->addrs);
	free(pod->entries);
	free(pod);
}

FLOWSDN_API void flowsdn_policy_db_free(struct flowsdn_policy_db *db)
{
	if (!db)
		return;
	for (size_t i = 0; i < db->n_eps; i++)
		pod_free(db->eps[i]);
	free(db->eps);
	for (size_t i = 0; i < db->n_idents; i++)
		ident_free(db->idents[i]);
	free(db->idents);
	for (size_t i = 0; i < db->n_nss; i++) {
		free(db->nss[i]->name);
		plabels_free(&db->nss[i]->labels);
		free(db->nss[i]->podv);
		free(db->nss[i]->identv);
		free(db->nss[i]->polv);
		free(db->nss[i]);
	}
	free(db->nss);
	for (size_t i = 0; i < db->n_policies; i++)
		flowsdn_policy_free(db->policies[i]);
	free(db->policies);
	free(db->cidrs);
	free(db->cidr_free);
	free(db->rules);
	free(db->ipcache);
	free(db->report);
	pmap_free(&db->ns_by_name);
	pmap_free(&db->pod_by_key);
	pmap_free(&db->pod_by_addr);
	pmap_free(&db->ident_by_key);
	pmap_free(&db->policy_by_key);
	free(db);
}

struct pns *pdb_namespace(const struct flowsdn_policy_db *db, const char *name)
{
	return pmap_get(&db->ns_by_name, name, strlen(name));
}

static int ptr_push(void ***arr, size_t *n, void *p)
{
	void **na;

	if ((*n & (*n - 1)) == 0) {
		size_t cap = *n ? *n * 2 : 4;

		na = realloc(*arr, cap * sizeof(void *));
		if (!na)
			return -ENOMEM;
		*arr = na;
	}
	(*arr)[(*n)++] = p;
	return 0;
}

static void ptr_remove(void **arr, size_t *n, void *p)
{
	for (size_t i = 0; i < *n; i++) {
		if (arr[i] == p) {
			arr[i] = arr[--(*n)];
			return;
		}
	}
}

/* The namespace @name, created implicitly (labels: the metadata name). */
static int ns_get_or_create(struct flowsdn_policy_db *db, const char *name, struct pns **ret)
{
	struct pns *ns = pdb_namespace(db, name);
	int r;

	if (ns) {
		*ret = ns;
		return 0;
	}
	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	ns->name = strdup(name);
	ns->labels.v = calloc(1, sizeof(*ns->labels.v));
	if (!ns->name || !ns->labels.v)
		goto oom;
	ns->labels.v[0].key = strdup("kubernetes.io/metadata.name");
	ns->labels.v[0].value = strdup(name);
	ns->labels.n = 1;
	if (!ns->labels.v[0].key || !ns->labels.v[0].value)
		goto oom;
	r = pmap_put(&db->ns_by_name, ns->name, strlen(ns->name), ns);
	if (r < 0)
		goto oom;
	if (ptr_push((void ***)&db->nss, &db->n_nss, ns) < 0) {
		pmap_del(&db->ns_by_name, ns->name, strlen(ns->name));
		goto oom;
	}
	*ret = ns;
	return 0;
oom:
	free(ns->name);
	plabels_free(&ns->labels);
	free(ns);
	return -ENOMEM;
}

/* Marks the pods @p selects dirty.  Once done since the last compile it
 * need not be done again: pods selected since then are new or changed
 * pods, which are dirty anyway. */
void pdb_mark_policy(struct flowsdn_policy_db *db, struct flowsdn_policy *p)
{
	struct pns *ns;

	if (p->marked_epoch == db->compile_epoch + 1)
		return;
	p->marked_epoch = db->compile_epoch + 1;
	ns = pdb_namespace(db, p->ns);
	for (size_t i = 0; ns && i < ns->npodv; i++)
		if (psel_matches(&p->podsel, &ns->podv[i]->labels))
			pdb_pod_dirty(db, ns->podv[i]);
}

void pdb_pod_dirty(struct flowsdn_policy_db *db, struct ppod *pod)
{
	if (!pod->dirty) {
		pod->dirty = true;
		db->n_clean--;
	}
}

/* Does a rule of @p depend on the set of identities matching @id (its
 * selectors match it, or an all-peers rule is expanded to every identity,
 * or resolves egress named ports through identities)? */
static bool policy_depends_on_ident(const struct flowsdn_policy *p, const struct pident *id)
{
	for (int d = 0; d < 2; d++) {
		for (size_t i = 0; i < p->n_rules[d]; i++) {
			const struct prule *r = &p->rules[d][i];
			bool named = false;

			for (size_t j = 0; j < r->n_ports; j++)
				if (r->ports[j].name)
					named = true;
			if (r->n_peers == 0 && (p->tier != FLOWSDN_POLICY_TIER_ALLOW ||
						(named && d == FLOWSDN_POLICY_EGRESS)))
				return true;
			for (size_t j = 0; j < r->n_peers; j++) {
				const struct ppeer *pe = &r->peers[j];

				if (pe->kind != PEER_SELECTOR)
					continue;
				if (pe->ns ? !psel_matches(pe->ns, &id->nsp->labels) : strcmp(id->ns, p->ns) != 0)
					continue;
				if (pe->pod && !psel_matches(pe->pod, &id->labels))
					continue;
				return true;
			}
		}
	}
	return false;
}

static void mark_ident_change(struct flowsdn_policy_db *db, const struct pident *id)
{
	db->gen++;
	if (db->n_clean == 0)
		return; /* every endpoint is dirty already */
	for (size_t i = 0; i < db->n_policies; i++)
		if (policy_depends_on_ident(db->policies[i], id))
			pdb_mark_policy(db, db->policies[i]);
}

/* The canonical text of a pod's identity label set: its labels and
 * POLICY_NS_LABEL=namespace (namespace labels are not part of it: they
 * are looked up when selectors are evaluated). */
static int ident_labels(const char *ns, const struct plabels *labels, char **ret)
{
	struct flowsdn_label *l = calloc(labels->n + 1, sizeof(*l));
	int r;

	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < labels->n; i++)
		l[i] = (struct flowsdn_label){ labels->v[i].key, labels->v[i].value };
	l[labels->n] = (struct flowsdn_label){ POLICY_NS_LABEL, ns };
	r = flowsdn_identity_labels_canonical(l, labels->n + 1, ret);
	free(l);
	return r < 0 ? -EINVAL : 0;
}

static int ident_acquire(struct flowsdn_policy_db *db, const char *ns, const struct plabels *labels,
			 uint32_t *ret_id)
{
	struct flowsdn_label *l = calloc(labels->n + 1, sizeof(*l));
	int r;

	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < labels->n; i++)
		l[i] = (struct flowsdn_label){ labels->v[i].key, labels->v[i].value };
	l[labels->n] = (struct flowsdn_label){ POLICY_NS_LABEL, ns };
	r = flowsdn_identity_acquire(db->store, l, labels->n + 1, ret_id);
	free(l);
	if (r == -FLOWSDN_E_IDENTITY_EXHAUSTED)
		r = -FLOWSDN_E_POLICY_IDENTITIES;
	return r;
}

static int ident_ports_add(struct pident *id, const struct ppod *pod, bool *changed)
{
	for (size_t i = 0; i < pod->n_ports; i++) {
		const struct pnamed *pp = &pod->ports[i];
		bool found = false;

		for (size_t j = 0; j < id->n_ports; j++) {
			if (id->ports[j].proto == pp->proto && id->ports[j].port == pp->port &&
			    strcmp(id->ports[j].name, pp->name) == 0) {
				id->ports[j].count++;
				found = true;
				break;
			}
		}
		if (!found) {
			struct pnamed *np = realloc(id->ports, (id->n_ports + 1) * sizeof(*np));

			if (!np)
				return -ENOMEM;
			id->ports = np;
			np[id->n_ports] = (struct pnamed){ .name = strdup(pp->name), .proto = pp->proto,
							   .port = pp->port, .count = 1 };
			if (!np[id->n_ports].name)
				return -ENOMEM;
			id->n_ports++;
			*changed = true;
		}
	}
	return 0;
}

static void ident_ports_remove(struct pident *id, const struct ppod *pod, bool *changed)
{
	for (size_t i = 0; i < pod->n_ports; i++) {
		const struct pnamed *pp = &pod->ports[i];

		for (size_t j = 0; j < id->n_ports; j++) {
			if (id->ports[j].proto == pp->proto && id->ports[j].port == pp->port &&
			    strcmp(id->ports[j].name, pp->name) == 0) {
				if (--id->ports[j].count == 0) {
					free(id->ports[j].name);
					id->ports[j] = id->ports[--id->n_ports];
					*changed = true;
				}
				break;
			}
		}
	}
}

/* Detaches @pod from its identity (freeing the identity with its last pod). */
static void pod_unidentify(struct flowsdn_policy_db *db, struct ppod *pod)
{
	struct pident *id = pod->ident;
	bool changed = false;

	if (!id)
		return;
	pod->ident = NULL;
	ident_ports_remove(id, pod, &changed);
	if (--id->refs == 0) {
		mark_ident_change(db, id);
		pmap_del(&db->ident_by_key, id->key, strlen(id->key));
		ptr_remove((void **)db->idents, &db->n_idents, id);
		ptr_remove((void **)id->nsp->identv, &id->nsp->nidentv, id);
		(void)flowsdn_identity_release(db->store, id->id);
		ident_free(id);
	} else if (changed) {
		mark_ident_change(db, id);
	}
}

/* Attaches @pod to the identity of its label set. */
static int pod_identify(struct flowsdn_policy_db *db, struct ppod *pod, struct pns *ns)
{
	_cleanup_free_ char *key = NULL;
	struct pident *id;
	bool changed = false;
	int r;

	r = ident_labels(ns->name, &pod->labels, &key);
	if (r < 0)
		return r;
	id = pmap_get(&db->ident_by_key, key, strlen(key));
	if (!id) {
		id = calloc(1, sizeof(*id));
		if (!id)
			return -ENOMEM;
		id->key = TAKE_PTR(key);
		id->ns = strdup(ns->name);
		id->nsp = ns;
		if (!id->ns || plabels_copy(&id->labels, &pod->labels) < 0) {
			ident_free(id);
			return -ENOMEM;
		}
		r = ident_acquire(db, ns->name, &pod->labels, &id->id);
		if (r < 0) {
			ident_free(id);
			return r;
		}
		r = pmap_put(&db->ident_by_key, id->key, strlen(id->key), id);
		if (r == 0) {
			r = ptr_push((void ***)&db->idents, &db->n_idents, id);
			if (r == 0) {
				r = ptr_push((void ***)&ns->identv, &ns->nidentv, id);
				if (r < 0)
					db->n_idents--;
			}
			if (r < 0)
				pmap_del(&db->ident_by_key, id->key, strlen(id->key));
		}
		if (r < 0) {
			(void)flowsdn_identity_release(db->store, id->id);
			ident_free(id);
			return r;
		}
		changed = true;
	}
	r = ident_ports_add(id, pod, &changed);
	id->refs++;
	pod->ident = id;
	if (r < 0) {
		pod_unidentify(db, pod);
		return r;
	}
	if (changed)
		mark_ident_change(db, id);
	return 0;
}

FLOWSDN_API int flowsdn_policy_db_set_namespace(struct flowsdn_policy_db *db, const char *name,
						const struct flowsdn_policy_label *labels,
						size_t n_labels)
{
	struct plabels l = { 0 };
	struct plabel *nv;
	struct pns *ns;
	int r;

	if (!db || !name || !names_dns_label_valid(name))
		return -EINVAL;
	r = labels_from_user(labels, n_labels, &l);
	if (r < 0)
		return r;
	/* the automatic label wins over a caller's */
	if (!plabels_get(&l, "kubernetes.io/metadata.name")) {
		nv = realloc(l.v, (l.n + 1) * sizeof(*nv));
		if (!nv) {
			plabels_free(&l);
			return -ENOMEM;
		}
		l.v = nv;
		l.v[l.n].key = strdup("kubernetes.io/metadata.name");
		l.v[l.n].value = strdup(name);
		l.n++;
		if (!l.v[l.n - 1].key || !l.v[l.n - 1].value) {
			plabels_free(&l);
			return -ENOMEM;
		}
		(void)plabels_sort(&l);
	} else {
		for (size_t i = 0; i < l.n; i++) {
			if (strcmp(l.v[i].key, "kubernetes.io/metadata.name") == 0) {
				char *v = strdup(name);

				if (!v) {
					plabels_free(&l);
					return -ENOMEM;
				}
				free(l.v[i].value);
				l.v[i].value = v;
			}
		}
	}
	r = ns_get_or_create(db, name, &ns);
	if (r < 0) {
		plabels_free(&l);
		return r;
	}
	/* the namespace's labels decide which namespaceSelectors select its
	 * pods' identities: recompute what depended on them, before and after */
	for (size_t i = 0; i < db->n_idents; i++)
		if (db->idents[i]->nsp == ns)
			mark_ident_change(db, db->idents[i]);
	plabels_free(&ns->labels);
	ns->labels = l;
	ns->explicit_ = true;
	for (size_t i = 0; i < db->n_idents; i++)
		if (db->idents[i]->nsp == ns)
			mark_ident_change(db, db->idents[i]);
	db->gen++;
	db->ipcache_valid = false;
	return 0;
}

static int pod_fill(struct ppod *pod, const struct flowsdn_policy_pod *d)
{
	int r;

	pod->ns = strdup(d->namespace_name);
	pod->name = strdup(d->name);
	if (!pod->ns || !pod->name || asprintf(&pod->key, "%s/%s", d->namespace_name, d->name) < 0) {
		pod->key = NULL;
		return -ENOMEM;
	}
	r = labels_from_user(d->labels, d->n_labels, &pod->labels);
	if (r < 0)
		return r;
	if (plabels_get(&pod->labels, POLICY_NS_LABEL))
		return -EINVAL; /* reserved for the identity's namespace */
	if (d->n_ports && !d->ports)
		return -EINVAL;
	pod->ports = calloc(d->n_ports + 1, sizeof(*pod->ports));
	if (!pod->ports)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_ports; i++) {
		const struct flowsdn_policy_named_port *np = &d->ports[i];

		if (!np->name || !names_port_name_valid(np->name) || np->port == 0 ||
		    (np->protocol != PROTO_TCP && np->protocol != PROTO_UDP && np->protocol != PROTO_SCTP))
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (strcmp(d->ports[j].name, np->name) == 0)
				return -EINVAL; /* container port names are unique in a pod */
		pod->ports[i].name = strdup(np->name);
		if (!pod->ports[i].name)
			return -ENOMEM;
		pod->ports[i].proto = np->protocol;
		pod->ports[i].port = np->port;
		pod->n_ports++;
	}
	if (d->n_addrs && !d->addrs)
		return -EINVAL;
	pod->addrs = calloc(d->n_addrs + 1, sizeof(*pod->addrs));
	if (!pod->addrs)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_addrs; i++) {
		if (d->addrs[i].family != FLOWSDN_AF_INET && d->addrs[i].family != FLOWSDN_AF_INET6)
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (flowsdn_addr_equal(&d->addrs[i], &d->addrs[j]))
				return -EINVAL;
		pod->addrs[pod->n_addrs] = d->addrs[i];
		if (d->addrs[i].family == FLOWSDN_AF_INET)
			memset(pod->addrs[pod->n_addrs].bytes + 4, 0, 12);
		pod->n_addrs++;
	}
	return 0;
}

static void pod_addrs_unindex(struct flowsdn_policy_db *db, struct ppod *pod)
{
	for (size_t i = 0; i < pod->n_addrs; i++)
		if (pmap_get(&db->pod_by_addr, &pod->addrs[i], sizeof(pod->addrs[i])) == pod)
			pmap_del(&db->pod_by_addr, &pod->addrs[i], sizeof(pod->addrs[i]));
}

static int pod_addrs_index(struct flowsdn_policy_db *db, struct ppod *pod)
{
	for (size_t i = 0; i < pod->n_addrs; i++) {
		int r = pmap_put(&db->pod_by_addr, &pod->addrs[i], sizeof(pod->addrs[i]), pod);

		if (r < 0) {
			pod_addrs_unindex(db, pod);
			return r;
		}
	}
	return 0;
}

struct ppod *pdb_pod_by_addr(const struct flowsdn_policy_db *db, const struct flowsdn_addr *a)
{
	struct flowsdn_addr k;

	memset(&k, 0, sizeof(k));
	k.family = a->family;
	memcpy(k.bytes, a->bytes, a->family == FLOWSDN_AF_INET ? 4 : 16);
	return pmap_get(&db->pod_by_addr, &k, sizeof(k));
}

FLOWSDN_API int flowsdn_policy_db_set_pod(struct flowsdn_policy_db *db,
					  const struct flowsdn_policy_pod *pod,
					  uint32_t *ret_ep_id)
{
	struct ppod *np = NULL, *old = NULL;
	struct pns *ns;
	size_t slot = SIZE_MAX;
	int r;

	if (!db || !pod || !OPTS_VALID(pod, flowsdn_policy_pod) || !pod->namespace_name || !pod->name ||
	    !names_dns_label_valid(pod->namespace_name) || !*pod->name || strchr(pod->name, '/'))
		return -EINVAL;
	np = calloc(1, sizeof(*np));
	if (!np)
		return -ENOMEM;
	r = pod_fill(np, pod);
	if (r < 0)
		goto fail;
	for (size_t i = 0; i < np->n_addrs; i++) {
		struct ppod *owner = pdb_pod_by_addr(db, &np->addrs[i]);

		if (owner && strcmp(owner->key, np->key) != 0) {
			r = -FLOWSDN_E_POLICY_ADDR_IN_USE;
			goto fail;
		}
	}
	r = ns_get_or_create(db, np->ns, &ns);
	if (r < 0)
		goto fail;
	old = pmap_get(&db->pod_by_key, np->key, strlen(np->key));
	if (old) {
		slot = old->ep_id - 1;
	} else {
		for (slot = db->free_hint; slot < db->n_eps && db->eps[slot]; slot++)
			;
		db->free_hint = slot + 1;
		if (slot == db->n_eps) {
			r = ptr_push((void ***)&db->eps, &db->n_eps, NULL);
			if (r < 0)
				goto fail;
		}
	}
	np->ep_id = (uint32_t)slot + 1;
	if (!old) {
		r = ptr_push((void ***)&ns->podv, &ns->npodv, np);
		if (r < 0)
			goto fail;
	}
	r = pod_identify(db, np, ns);
	if (r < 0)
		goto fail_unlist;
	if (old)
		pod_addrs_unindex(db, old);
	r = pod_addrs_index(db, np);
	if (r == 0 && !old) {
		r = pmap_put(&db->pod_by_key, np->key, strlen(np->key), np);
		if (r < 0)
			pod_addrs_unindex(db, np);
	}
	if (r < 0) {
		pod_unidentify(db, np);
		if (old)
			(void)pod_addrs_index(db, old);
		goto fail_unlist;
	}
	if (old) {
		/* same key: replacing the value cannot fail */
		(void)pmap_put(&db->pod_by_key, np->key, strlen(np->key), np);
		for (size_t i = 0; i < ns->npodv; i++)
			if (ns->podv[i] == old)
				ns->podv[i] = np;
		if (!old->dirty)
			db->n_clean--;
		pod_unidentify(db, old);
		/* the datapath keeps the old entries until the recompute */
		np->entries = TAKE_PTR(old->entries);
		np->n_entries = old->n_entries;
		np->flags = old->flags;
		np->compiled = old->compiled;
		pod_free(old);
	} else {
		ns->n_pods++;
	}
	db->eps[slot] = np;
	np->dirty = true;
	db->ipcache_valid = false;
	if (ret_ep_id)
		*ret_ep_id = np->ep_id;
	return 0;
fail_unlist:
	if (!old)
		ptr_remove((void **)ns->podv, &ns->npodv, np);
fail:
	if (!old && slot < db->free_hint)
		db->free_hint = slot;
	pod_free(np);
	return r;
}

FLOWSDN_API int flowsdn_policy_db_set_pod_labels(struct flowsdn_policy_db *db, const char *namespace_name,
						 const char *name, const struct flowsdn_policy_label *labels,
						 size_t n_labels)
{
	_cleanup_free_ struct flowsdn_policy_named_port *ports = NULL;
	_cleanup_free_ char *key = NULL;
	const struct ppod *old;

	if (!db || !namespace_name || !name || (n_labels && !labels))
		return -EINVAL;
	if (asprintf(&key, "%s/%s", namespace_name, name) < 0) {
		key = NULL;
		return -ENOMEM;
	}
	old = pmap_get(&db->pod_by_key, key, strlen(key));
	if (!old)
		return -FLOWSDN_E_POLICY_NOT_FOUND;
	ports = calloc(old->n_ports + 1, sizeof(*ports));
	if (!ports)
		return -ENOMEM;
	for (size_t i = 0; i < old->n_ports; i++)
		ports[i] = (struct flowsdn_policy_named_port){ old->ports[i].name, old->ports[i].proto,
							       old->ports[i].port };
	{
		/* set_pod copies everything before it frees the old pod. */
		FLOWSDN_OPTS(flowsdn_policy_pod, pod, .namespace_name = old->ns, .name = old->name, .labels = labels,
			     .n_labels = n_labels, .ports = ports, .n_ports = old->n_ports, .addrs = old->addrs,
			     .n_addrs = old->n_addrs);

		return flowsdn_policy_db_set_pod(db, &pod, NULL);
	}
}

FLOWSDN_API int flowsdn_policy_db_delete_pod(struct flowsdn_policy_db *db,
					     const char *namespace_name, const char *name)
{
	_cleanup_free_ char *key = NULL;
	struct ppod *pod;
	struct pns *ns;

	if (!db || !namespace_name || !name)
		return -EINVAL;
	if (asprintf(&key, "%s/%s", namespace_name, name) < 0) {
		key = NULL;
		return -ENOMEM;
	}
	pod = pmap_get(&db->pod_by_key, key, strlen(key));
	if (!pod)
		return -FLOWSDN_E_POLICY_NOT_FOUND;
	pod_addrs_unindex(db, pod);
	pod_unidentify(db, pod);
	pmap_del(&db->pod_by_key, pod->key, strlen(pod->key));
	db->eps[pod->ep_id - 1] = NULL;
	if (pod->ep_id - 1 < db->free_hint)
		db->free_hint = pod->ep_id - 1;
	ns = pdb_namespace(db, pod->ns);
	if (ns) {
		ns->n_pods--;
		ptr_remove((void **)ns->podv, &ns->npodv, pod);
	}
	if (!pod->dirty)
		db->n_clean--;
	pod_free(pod);
	db->ipcache_valid = false;
	return 0;
}

static int rule_ids_assign(struct flowsdn_policy_db *db, struct flowsdn_policy *p)
{
	size_t need = p->n_rules[0] + p->n_rules[1], k = 1, free_n = 0;

	for (size_t i = 1; i < db->n_rules; i++)
		if (!db->rules[i].policy)
			free_n++;
	if (free_n < need || db->n_rules == 0) {
		size_t grow = need - (free_n < need ? free_n : need);
		struct prule_ref *nr = realloc(db->rules, (db->n_rules + grow + 1) * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		db->rules = nr;
		if (db->n_rules == 0)
			db->rules[db->n_rules++] = (struct prule_ref){ 0 }; /* rule_id 0: none */
		for (size_t i = 0; i < grow; i++)
			db->rules[db->n_rules++] = (struct prule_ref){ 0 };
	}
	for (int d = 0; d < 2; d++) {
		for (size_t i = 0; i < p->n_rules[d]; i++) {
			while (db->rules[k].policy)
				k++;
			db->rules[k] = (struct prule_ref){ .policy = p, .dir = (uint8_t)d, .index = (uint32_t)i };
			p->rules[d][i].rule_id = (uint32_t)k;
		}
	}
	return 0;
}

static void rule_ids_release(struct flowsdn_policy_db *db, const struct flowsdn_policy *p)
{
	for (int d = 0; d < 2; d++)
		for (size_t i = 0; i < p->n_rules[d]; i++)
			db->rules[p->rules[d][i].rule_id].policy = NULL;
}

FLOWSDN_API int flowsdn_policy_db_apply(struct flowsdn_policy_db *db, struct flowsdn_policy *policy)
{
	struct flowsdn_policy *old;
	struct pns *ns;
	int r;

	if (!db || !policy) {
		flowsdn_policy_free(policy);
		return -EINVAL;
	}
	r = ns_get_or_create(db, policy->ns, &ns);
	if (r < 0)
		goto fail;
	r = rule_ids_assign(db, policy);
	if (r < 0)
		goto fail;
	r = ptr_push((void ***)&db->policies, &db->n_policies, policy);
	if (r == 0) {
		r = ptr_push((void ***)&ns->polv, &ns->npolv, policy);
		if (r < 0)
			db->n_policies--;
	}
	if (r < 0) {
		rule_ids_release(db, policy);
		goto fail;
	}
	r = pdb_cidr_ref(db, policy, +1);
	if (r < 0) {
		db->n_policies--;
		ns->npolv--;
		rule_ids_release(db, policy);
		goto fail;
	}
	old = pmap_get(&db->policy_by_key, policy->key, strlen(policy->key));
	/* cannot fail: the key exists already or the map grows below */
	r = pmap_put(&db->policy_by_key, policy->key, strlen(policy->key), policy);
	if (r < 0) {
		(void)pdb_cidr_ref(db, policy, -1);
		db->n_policies--;
		ns->npolv--;
		rule_ids_release(db, policy);
		goto fail;
	}
	policy->serial = ++db->next_serial;
	if (old) {
		pdb_mark_policy(db, old);
		(void)pdb_cidr_ref(db, old, -1);
		rule_ids_release(db, old);
		ptr_remove((void **)db->policies, &db->n_policies, old);
		ptr_remove((void **)ns->polv, &ns->npolv, old);
		flowsdn_policy_free(old);
	}
	pdb_mark_policy(db, policy);
	return 0;
fail:
	flowsdn_policy_free(policy);
	return r;
}

FLOWSDN_API int flowsdn_policy_db_delete(struct flowsdn_policy_db *db,
					 const char *namespace_name, const char *name)
{
	_cleanup_free_ char *key = NULL;
	struct flowsdn_policy *p;

	if (!db || !namespace_name || !name)
		return -EINVAL;
	if (asprintf(&key, "%s/%s", namespace_name, name) < 0) {
		key = NULL;
		return -ENOMEM;
	}
	p = pmap_get(&db->policy_by_key, key, strlen(key));
	if (!p)
		return -FLOWSDN_E_POLICY_NOT_FOUND;
	pdb_mark_policy(db, p);
	(void)pdb_cidr_ref(db, p, -1);
	rule_ids_release(db, p);
	pmap_del(&db->policy_by_key, p->key, strlen(p->key));
	ptr_remove((void **)db->policies, &db->n_policies, p);
	{
		struct pns *ns = pdb_namespace(db, p->ns);

		if (ns)
			ptr_remove((void **)ns->polv, &ns->npolv, p);
	}
	flowsdn_policy_free(p);
	return 0;
}

FLOWSDN_API void flowsdn_policy_db_invalidate_all(struct flowsdn_policy_db *db)
{
	if (!db)
		return;
	db->gen++;
	for (size_t i = 0; i < db->n_eps; i++)
		if (db->eps[i])
			pdb_pod_dirty(db, db->eps[i]);
}

FLOWSDN_API int flowsdn_policy_db_endpoint_by_addr(const struct flowsdn_policy_db *db,
						   const struct flowsdn_addr *addr,
						   uint32_t *ret_ep_id)
{
	struct ppod *pod;

	if (!db || !addr || !ret_ep_id)
		return -EINVAL;
	pod = pdb_pod_by_addr(db, addr);
	if (!pod)
		return -FLOWSDN_E_POLICY_NOT_FOUND;
	*ret_ep_id = pod->ep_id;
	return 0;
}

FLOWSDN_API int flowsdn_policy_db_identity(const struct flowsdn_policy_db *db, uint32_t ep_id,
					   uint32_t *ret_identity)
{
	if (!db || !ret_identity)
		return -EINVAL;
	if (ep_id == 0 || ep_id > db->n_eps || !db->eps[ep_id - 1])
		return -FLOWSDN_E_POLICY_NOT_FOUND;
	*ret_identity = db->eps[ep_id - 1]->ident->id;
	return 0;
}

FLOWSDN_API int flowsdn_policy_db_rule_name(const struct flowsdn_policy_db *db, uint32_t rule_id,
					    char *buf, size_t size)
{
	const struct prule_ref *rr;
	int n;

	if (!db || !buf)
		return -EINVAL;
	if (rule_id == 0 || rule_id >= db->n_rules || !db->rules[rule_id].policy)
		return -FLOWSDN_E_POLICY_NOT_FOUND;
	rr = &db->rules[rule_id];
	n = snprintf(buf, size, "%s %s[%u]", rr->policy->key,
		     rr->dir == FLOWSDN_POLICY_INGRESS ? "ingress" : "egress", rr->index);
	return n >= 0 && (size_t)n < size ? n : -ENOSPC;
}

