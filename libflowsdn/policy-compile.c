/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy compiler: the per-endpoint entries in the
 * flowsdn_policy map's model (see <flowsdn/policy.h>), the ipcache, and
 * the datapath's lookup over them.
 *
 * Per endpoint and direction the compiler gathers "items" — (peer
 * identity or 0 = any, protocol or 0 = any, port range, tier, rule) — from
 * every rule of every policy selecting the endpoint, then flattens each
 * identity's items: the any-protocol items give the identity's L3 entry
 * (highest tier wins); for each protocol the port ranges are cut into
 * elementary segments, each taking the highest tier covering it (or the
 * L3 tier, if higher); segments that only repeat the L3 verdict are left
 * to it, the others become aligned power-of-two port blocks.  So one LPM
 * lookup per identity returns the highest tier among that identity's
 * rules, and since the any-peer identity only ever carries ALLOW items,
 * "deny if either lookup denies, else allow if either allows" gives the
 * highest tier over all rules — the tiered verdict.
 */
#include "config.h"

#include <flowsdn/policy.h>

#include "policy-internal.h"
#include <flowsdn/datapath.h>

_Static_assert((int)FLOWSDN_POLICY_INGRESS == (int)FLOWSDN_DIR_INGRESS && (int)FLOWSDN_POLICY_EGRESS == (int)FLOWSDN_DIR_EGRESS,
	       "direction numbering of the map contract");
_Static_assert(POLICY_IDENTITY_LOCAL_BASE == FLOWSDN_IDENTITY_LOCAL_BASE, "CIDR identities");
_Static_assert(POLICY_IDENTITY_ANY == FLOWSDN_IDENTITY_ANY, "any-peer identity");

/* ------------------------------------------------------------ peers */

/* Indexes (into db->idents for selectors, db->cidrs for ipBlocks) of what
 * @pe selects; cached until the identities or CIDRs change. */
static int peer_select(struct flowsdn_policy_db *db, const struct flowsdn_policy *p, struct ppeer *pe)
{
	size_t n = 0;

	if (pe->cache_gen == db->gen && (pe->cache_ids || pe->cache_idents))
		return 0;
	if (pe->kind == PEER_SELECTOR) {
		struct pident **ids;
		size_t cap = 0;

		/* namespaces first: a podSelector alone stays in the policy's
		 * namespace, and a namespaceSelector naming one namespace by
		 * its metadata.name label need not look at the others */
		const char *only = pe->ns ? plabels_get(&pe->ns->match, "kubernetes.io/metadata.name") : p->ns;
		struct pns *one = only ? pdb_namespace(db, only) : NULL;
		struct pns *const *nss = only ? &one : db->nss;
		size_t n_nss = only ? (one ? 1 : 0) : db->n_nss;

		for (int pass = 0; pass < 2; pass++) {
			n = 0;
			for (size_t i = 0; i < n_nss; i++) {
				const struct pns *ns = nss[i];

				if (pe->ns && !psel_matches(pe->ns, &ns->labels))
					continue;
				if (pass == 0) {
					cap += ns->nidentv;
					continue;
				}
				for (size_t k = 0; k < ns->nidentv; k++)
					if (!pe->pod || psel_matches(pe->pod, &ns->identv[k]->labels))
						ids[n++] = ns->identv[k];
			}
			if (pass == 0) {
				ids = malloc((cap + 1) * sizeof(*ids));
				if (!ids)
					return -ENOMEM;
			}
		}
		free(pe->cache_idents);
		pe->cache_idents = ids;
	} else {
		uint32_t *ids = malloc((db->n_cidrs + 1) * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		for (size_t i = 0; i < db->n_cidrs; i++) {
			const struct flowsdn_prefix *c = &db->cidrs[i].prefix;
			bool out = !flowsdn_prefix_contains(&pe->cidr, c);

			for (size_t k = 0; k < pe->n_except && !out; k++)
				if (flowsdn_prefix_contains(&pe->except[k], c))
					out = true;
			if (!out)
				ids[n++] = (uint32_t)i;
		}
		free(pe->cache_ids);
		pe->cache_ids = ids;
	}
	pe->n_cache = n;
	pe->cache_gen = db->gen;
	return 0;
}

/* ------------------------------------------------------------ items */

struct item {
	uint32_t ident;
	uint8_t dir;
	uint8_t proto;   /* 0: any */
	uint8_t tier;
	uint16_t lo, hi;
	uint32_t rule_id;
	uint8_t foreign; /* flatten_group(): an any-peer item in a peer's group */
};

struct items {
	struct item *v;
	size_t n, cap;
};

static int items_add(struct items *it, uint32_t ident, int dir, uint8_t proto, uint16_t lo, uint16_t hi,
		     int tier, uint32_t rule_id)
{
	if (it->n == it->cap) {
		size_t cap = it->cap ? it->cap * 2 : 64;
		struct item *n = realloc(it->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		it->v = n;
		it->cap = cap;
	}
	it->v[it->n++] = (struct item){ .ident = ident, .dir = (uint8_t)dir, .proto = proto,
					.tier = (uint8_t)tier, .lo = lo, .hi = hi, .rule_id = rule_id };
	return 0;
}

/* Items for every port named @name/@proto among @ports: for egress the
 * ports of a peer identity are the union over its pods (pods sharing
 * labels may number a name differently), and each number is allowed, as
 * Cilium does and flowsdn_policy(3) promises. */
static int named_items(struct items *it, const struct pnamed *ports, size_t n, const struct pport *pp, int dir,
		       int tier, uint32_t ident, uint32_t rule_id)
{
	int ret = 0;

	for (size_t i = 0; i < n && ret == 0; i++)
		if (ports[i].proto == pp->proto && strcmp(ports[i].name, pp->name) == 0)
			ret = items_add(it, ident, dir, pp->proto, ports[i].port, ports[i].port, tier, rule_id);
	return ret;
}

/* Items of rule @r for the peer identity @ident: every numeric port spec
 * (and, with @np/@n_np, the named ones resolved against those ports). */
static int rule_items(struct items *it, const struct prule *r, int dir, int tier, uint32_t ident,
		      const struct pnamed *np, size_t n_np, bool numeric)
{
	int ret = 0;

	if (r->n_ports == 0)
		return numeric ? items_add(it, ident, dir, 0, 0, 65535, tier, r->rule_id) : 0;
	for (size_t i = 0; i < r->n_ports && ret == 0; i++) {
		const struct pport *pp = &r->ports[i];

		if (pp->name) {
			if (np)
				ret = named_items(it, np, n_np, pp, dir, tier, ident, r->rule_id);
		} else if (numeric) {
			ret = items_add(it, ident, dir, pp->proto, pp->has_port ? pp->port : 0,
					pp->has_port ? pp->end : 65535, tier, r->rule_id);
		}
	}
	return ret;
}

static bool rule_has_named(const struct prule *r)
{
	for (size_t i = 0; i < r->n_ports; i++)
		if (r->ports[i].name)
			return true;
	return false;
}

/* Items of one rule of @p for endpoint @pod. */
static int rule_collect(struct flowsdn_policy_db *db, const struct flowsdn_policy *p, struct prule *r,
			int dir, const struct ppod *pod, struct items *it)
{
	/* ingress: named ports are the endpoint's own; egress: the peer's */
	const struct pnamed *self_np = dir == FLOWSDN_POLICY_INGRESS ? pod->ports : NULL;
	size_t self_n = dir == FLOWSDN_POLICY_INGRESS ? pod->n_ports : 0;
	bool egress_named = dir == FLOWSDN_POLICY_EGRESS && rule_has_named(r);
	int tier = p->tier, ret = 0;

	if (r->n_peers == 0) {
		if (tier == FLOWSDN_POLICY_TIER_ALLOW) {
			ret = rule_items(it, r, dir, tier, POLICY_IDENTITY_ANY, self_np, self_n, true);
		} else {
			/* any peer, above ALLOW: every identity there is */
			for (size_t i = 0; i < db->n_idents && ret == 0; i++)
				ret = rule_items(it, r, dir, tier, db->idents[i]->id,
						 egress_named ? db->idents[i]->ports : self_np,
						 egress_named ? db->idents[i]->n_ports : self_n, true);
			for (size_t i = 0; i < db->n_cidrs && ret == 0; i++)
				ret = rule_items(it, r, dir, tier, db->cidrs[i].id, self_np, self_n, true);
			if (ret == 0)
				ret = rule_items(it, r, dir, tier, FLOWSDN_IDENTITY_WORLD, self_np, self_n, true);
			return ret;
		}
		if (egress_named)
			for (size_t i = 0; i < db->n_idents && ret == 0; i++)
				ret = rule_items(it, r, dir, tier, db->idents[i]->id, db->idents[i]->ports,
						 db->idents[i]->n_ports, false);
		return ret;
	}
	for (size_t j = 0; j < r->n_peers && ret == 0; j++) {
		struct ppeer *pe = &r->peers[j];

		ret = peer_select(db, p, pe);
		for (size_t k = 0; k < pe->n_cache && ret == 0; k++) {
			if (pe->kind == PEER_SELECTOR) {
				const struct pident *id = pe->cache_idents[k];

				ret = rule_items(it, r, dir, tier, id->id,
						 egress_named ? id->ports : self_np,
						 egress_named ? id->n_ports : self_n, true);
			} else {
				/* external addresses have no named ports */
				ret = rule_items(it, r, dir, tier, db->cidrs[pe->cache_ids[k]].id,
						 self_np, self_n, true);
			}
		}
	}
	return ret;
}

/* ------------------------------------------------------------ flattening */

struct entries {
	struct flowsdn_policy_entry *v;
	size_t n, cap;
};

static int entries_add(struct entries *e, const struct flowsdn_policy_entry *x)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 64;
		struct flowsdn_policy_entry *n = realloc(e->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		e->v = n;
		e->cap = cap;
	}
	e->v[e->n++] = *x;
	return 0;
}

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	if (x->ident != y->ident)
		return x->ident < y->ident ? -1 : 1;
	if (x->proto != y->proto)
		return x->proto < y->proto ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

static bool is_deny(int tier)
{
	return tier == FLOWSDN_POLICY_TIER_DENY || tier == FLOWSDN_POLICY_TIER_PROTECT;
}

/* Better verdict: higher tier, then lower rule id (deterministic). */
static bool better(int tier, uint32_t rule, int btier, uint32_t brule)
{
	return tier > btier || (tier == btier && tier > 0 && rule < brule);
}

/* Emits [lo, hi] as aligned port blocks. */
static int emit_range(struct entries *e, const struct flowsdn_policy_entry *tmpl, uint32_t lo, uint32_t hi)
{
	while (lo <= hi) {
		unsigned int k = 0;
		struct flowsdn_policy_entry x = *tmpl;
		int r;

		while (k < 16 && (lo & ((1u << (k + 1)) - 1)) == 0 && lo + (1u << (k + 1)) - 1 <= hi)
			k++;
		x.port = (uint16_t)lo;
		x.port_bits = (uint8_t)(16 - k);
		r = entries_add(e, &x);
		if (r < 0)
			return r;
		lo += 1u << k;
	}
	return 0;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

struct scratch {
	struct items items;
	uint32_t *bounds;
	size_t bcap;
	struct item *merged;
	size_t mcap;
};

/* Emits the port range [lo, hi] of @proto with (tier, rule). */
static int emit_block(struct entries *e, const struct item *g, uint8_t proto, int tier, uint32_t rule, uint32_t lo,
		      uint32_t hi)
{
	struct flowsdn_policy_entry x = {
		.identity = g->ident, .direction = g->dir, .protocol = proto,
		.deny = is_deny(tier), .tier = (uint8_t)tier, .rule_id = rule,
	};

	return emit_range(e, &x, lo, hi);
}

static int item_proto_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->proto != y->proto)
		return x->proto < y->proto ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

/*
 * Flattens the items v[0..n) of one (direction, identity), sorted by
 * protocol then lo; f[0..nf) are the same direction's any-peer items
 * (none for the any-peer group itself).
 *
 * The entry the datapath meets names the rule that decides: of the
 * matching rules, the highest tier, then the lowest rule id
 * (flowsdn_policy_db_lookup_decision(3)).  The datapath takes the peer
 * identity's entry over the any-peer one, so wherever this group has an
 * entry, its rule is chosen among the any-peer rules as well; where it
 * has none, the any-peer entry decides alone.
 */
static int flatten_group(struct entries *e, const struct item *v, size_t n, const struct item *f, size_t nf,
			 struct scratch *sc)
{
	int own_l3 = 0, l3_tier = 0;
	uint32_t own_rule = 0, l3_rule = 0;
	struct item *m;
	size_t nm = 0, i = 0;
	int r;

	for (size_t k = 0; k < n && v[k].proto == 0; k++)
		if (better(v[k].tier, v[k].rule_id, own_l3, own_rule)) {
			own_l3 = v[k].tier;
			own_rule = v[k].rule_id;
		}
	/* Every any-protocol rule that matches, own and any-peer. */
	l3_tier = own_l3;
	l3_rule = own_rule;
	for (size_t k = 0; k < nf && f[k].proto == 0; k++)
		if (better(f[k].tier, f[k].rule_id, l3_tier, l3_rule)) {
			l3_tier = f[k].tier;
			l3_rule = f[k].rule_id;
		}
	if (own_l3) {
		struct flowsdn_policy_entry x = {
			.identity = v[0].ident, .direction = v[0].dir, .protocol = 0, .port_bits = 0,
			.deny = is_deny(l3_tier), .port = 0, .tier = (uint8_t)l3_tier, .rule_id = l3_rule,
		};

		r = entries_add(e, &x);
		if (r < 0)
			return r;
	}
	/* The port items, own (foreign 0) and any-peer (1), by protocol. */
	if (sc->mcap < n + nf) {
		struct item *t = reallocarray(sc->merged, n + nf, sizeof(*t));

		if (!t)
			return -ENOMEM;
		sc->merged = t;
		sc->mcap = n + nf;
	}
	m = sc->merged;
	for (size_t k = 0; k < n; k++)
		if (v[k].proto) {
			m[nm] = v[k];
			m[nm++].foreign = 0;
		}
	for (size_t k = 0; k < nf; k++)
		if (f[k].proto) {
			m[nm] = f[k];
			m[nm++].foreign = 1;
		}
	if (nm > 1)
		qsort(m, nm, sizeof(*m), item_proto_cmp);
	while (i < nm) {
		size_t j = i, nb = 0;
		uint8_t proto = m[i].proto;
		int cur_tier = 0;
		uint32_t cur_rule = 0, cur_lo = 0;
		bool open = false, own = own_l3 != 0;

		while (j < nm && m[j].proto == proto) {
			own |= !m[j].foreign;
			j++;
		}
		if (!own) {
			i = j; /* the any-peer entries decide alone */
			continue;
		}
		/* elementary boundaries */
		if (sc->bcap < 2 * (j - i) + 2) {
			uint32_t *ns = realloc(sc->bounds, (2 * (j - i) + 2) * sizeof(*sc->bounds));

			if (!ns)
				return -ENOMEM;
			sc->bounds = ns;
			sc->bcap = 2 * (j - i) + 2;
		}
		for (size_t k = i; k < j; k++) {
			sc->bounds[nb++] = m[k].lo;
			sc->bounds[nb++] = (uint32_t)m[k].hi + 1;
		}
		qsort(sc->bounds, nb, sizeof(*sc->bounds), u32_cmp);
		for (size_t b = 0; b + 1 < nb + 1; b++) {
			uint32_t s = sc->bounds[b];
			uint32_t end = b + 1 < nb ? sc->bounds[b + 1] : 65536;
			bool covered = own_l3 != 0;
			int t = l3_tier;
			uint32_t rl = l3_rule;

			if (b + 1 < nb && s == end)
				continue;
			if (s > 65535)
				break;
			for (size_t k = i; k < j && m[k].lo <= s; k++) {
				if (m[k].hi < s)
					continue;
				covered |= !m[k].foreign;
				if (better(m[k].tier, m[k].rule_id, t, rl)) {
					t = m[k].tier;
					rl = m[k].rule_id;
				}
			}
			if (!covered || (own_l3 && t == l3_tier && rl == l3_rule))
				t = 0; /* left to the any-peer entries, or to the L3 entry */
			if (open && (t != cur_tier || rl != cur_rule)) {
				r = emit_block(e, v, proto, cur_tier, cur_rule, cur_lo, s - 1);
				if (r < 0)
					return r;
				open = false;
			}
			if (!open && t) {
				open = true;
				cur_tier = t;
				cur_rule = rl;
				cur_lo = s;
			}
		}
		if (open) {
			r = emit_block(e, v, proto, cur_tier, cur_rule, cur_lo, 65535);
			if (r < 0)
				return r;
		}
		i = j;
	}
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct flowsdn_policy_entry *x = a, *y = b;

	if (x->direction != y->direction)
		return x->direction < y->direction ? -1 : 1;
	if (x->identity != y->identity)
		return x->identity < y->identity ? -1 : 1;
	if (x->protocol != y->protocol)
		return x->protocol < y->protocol ? -1 : 1;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->port_bits != y->port_bits)
		return x->port_bits < y->port_bits ? -1 : 1;
	return 0;
}

static int compile_endpoint(struct flowsdn_policy_db *db, const struct ppod *pod, struct scratch *sc,
			    struct entries *out, unsigned int *ret_flags)
{
	unsigned int flags = 0;
	int r = 0;

	const struct pns *ns = pdb_namespace(db, pod->ns);

	sc->items.n = 0;
	for (size_t i = 0; ns && i < ns->npolv && r == 0; i++) {
		struct flowsdn_policy *p = ns->polv[i];

		if (!psel_matches(&p->podsel, &pod->labels))
			continue;
		for (int d = 0; d < 2 && r == 0; d++) {
			if (!(p->types & (1u << d)))
				continue;
			if (p->tier == FLOWSDN_POLICY_TIER_ALLOW)
				flags |= d == FLOWSDN_POLICY_INGRESS ? FLOWSDN_POLICY_ENFORCE_INGRESS
								     : FLOWSDN_POLICY_ENFORCE_EGRESS;
			for (size_t k = 0; k < p->n_rules[d] && r == 0; k++)
				r = rule_collect(db, p, &p->rules[d][k], d, pod, &sc->items);
		}
	}
	if (r < 0)
		return r;
	if (sc->items.n > 1)
		qsort(sc->items.v, sc->items.n, sizeof(*sc->items.v), item_cmp);
	for (size_t i = 0, any = 0, n_any = 0; i < sc->items.n && r == 0;) {
		const struct item *g = &sc->items.v[i];
		size_t j = i;

		while (j < sc->items.n && sc->items.v[j].dir == g->dir && sc->items.v[j].ident == g->ident)
			j++;
		/* The any-peer group sorts first in its direction. */
		if (g->ident == POLICY_IDENTITY_ANY) {
			any = i;
			n_any = j - i;
		} else if (n_any && sc->items.v[any].dir != g->dir) {
			n_any = 0;
		}
		r = flatten_group(out, g, j - i, g->ident == POLICY_IDENTITY_ANY ? NULL : &sc->items.v[any],
				  g->ident == POLICY_IDENTITY_ANY ? 0 : n_any, sc);
		i = j;
	}
	if (r < 0)
		return r;
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), entry_cmp);
	*ret_flags = flags;
	return 0;
}

struct pending {
	struct ppod *pod;
	struct entries e;
	unsigned int flags;
};

FLOWSDN_API int flowsdn_policy_db_compile(struct flowsdn_policy_db *db,
					  struct flowsdn_policy_compile_report *report)
{
	struct scratch sc = { 0 };
	struct pending *pend = NULL;
	size_t n_pend = 0, n_dirty = 0;
	uint32_t *rep = NULL;
	int r = 0;

	if (!db || !OPTS_VALID(report, flowsdn_policy_compile_report))
		return -EINVAL;
	for (size_t i = 0; i < db->n_eps; i++)
		if (db->eps[i] && db->eps[i]->dirty)
			n_dirty++;
	pend = calloc(n_dirty + 1, sizeof(*pend));
	rep = malloc((n_dirty + 1) * sizeof(*rep));
	if (!pend || !rep) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < db->n_eps && r == 0; i++) {
		struct ppod *pod = db->eps[i];
		struct pending *pe;

		if (!pod || !pod->dirty)
			continue;
		pe = &pend[n_pend++];
		pe->pod = pod;
		r = compile_endpoint(db, pod, &sc, &pe->e, &pe->flags);
		if (r == 0 && pe->e.n > db->max_entries) {
			if (OPTS_HAS(report, capacity)) {
				report->failed_ep_id = pod->ep_id;
				report->failed_entries = pe->e.n;
				report->capacity = db->max_entries;
			}
			pr_warn("policy: endpoint %u (%s) needs %zu entries, capacity %zu", pod->ep_id,
				pod->key, pe->e.n, db->max_entries);
			r = -FLOWSDN_E_POLICY_CAPACITY;
		}
	}
	if (r < 0)
		goto out;
	/* commit: every endpoint fits */
	for (size_t i = 0; i < n_pend; i++) {
		struct ppod *pod = pend[i].pod;

		free(pod->entries);
		pod->entries = TAKE_PTR(pend[i].e.v);
		pod->n_entries = pend[i].e.n;
		pod->flags = pend[i].flags;
		pod->dirty = false;
		pod->compiled = true;
		db->n_clean++;
		rep[i] = pod->ep_id;
	}
	db->compile_epoch++;
	free(db->report);
	db->report = TAKE_PTR(rep);
	db->n_report = n_pend;
	if (report) {
		report->ep_ids = db->report;
		report->n_ep_ids = db->n_report;
	}
out:
	if (pend)
		for (size_t i = 0; i < n_pend; i++)
			free(pend[i].e.v);
	free(pend);
	free(rep);
	free(sc.items.v);
	free(sc.bounds);
	free(sc.merged);
	return r;
}

FLOWSDN_API int flowsdn_policy_db_entries(const struct flowsdn_policy_db *db, uint32_t ep_id,
					  const struct flowsdn_policy_entry **ret_entries,
					  size_t *ret_n, unsigned int *ret_flags)
{
	const struct ppod *pod;

	if (!db || !ret_entries || !ret_n)
		return -EINVAL;
	if (ep_id == 0 || ep_id > db->n_eps || !(pod = db->eps[ep_id - 1]))
		return -FLOWSDN_E_POLICY_NOT_FOUND;
	if (!pod->compiled)
		return -FLOWSDN_E_POLICY_NOT_COMPILED;
	*ret_entries = pod->entries;
	*ret_n = pod->n_entries;
	if (ret_flags)
		*ret_flags = pod->flags;
	return pod->dirty ? 1 : 0;
}

/* ------------------------------------------------------------ ipcache */

static int ipc_cmp(const void *a, const void *b)
{
	return flowsdn_prefix_compare(&((const struct flowsdn_policy_ipcache_entry *)a)->prefix,
				      &((const struct flowsdn_policy_ipcache_entry *)b)->prefix);
}

static int ipcache_build(struct flowsdn_policy_db *db)
{
	struct flowsdn_policy_ipcache_entry *v;
	size_t n = db->n_cidrs, k = 0;

	if (db->ipcache_valid)
		return 0;
	for (size_t i = 0; i < db->n_eps; i++)
		if (db->eps[i])
			n += db->eps[i]->n_addrs;
	v = malloc((n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < db->n_eps; i++) {
		const struct ppod *pod = db->eps[i];

		for (size_t j = 0; pod && j < pod->n_addrs; j++) {
			(void)flowsdn_prefix_make(&pod->addrs[j], flowsdn_addr_bits(&pod->addrs[j]), &v[k].prefix);
			v[k++].identity = pod->ident->id;
		}
	}
	for (size_t i = 0; i < db->n_cidrs; i++) {
		v[k].prefix = db->cidrs[i].prefix;
		v[k++].identity = db->cidrs[i].id;
	}
	qsort(v, k, sizeof(*v), ipc_cmp);
	/* a pod's address wins over an equal CIDR (pods were added first and
	 * qsort is not stable: resolve by keeping the pod identity) */
	n = 0;
	for (size_t i = 0; i < k; i++) {
		if (n && flowsdn_prefix_compare(&v[n - 1].prefix, &v[i].prefix) == 0) {
			if (v[i].identity < POLICY_IDENTITY_LOCAL_BASE)
				v[n - 1] = v[i];
			continue;
		}
		v[n++] = v[i];
	}
	memset(db->ipcache_lens, 0, sizeof(db->ipcache_lens));
	for (size_t i = 0; i < n; i++) {
		int f = v[i].prefix.addr.family == FLOWSDN_AF_INET6;

		db->ipcache_lens[f][v[i].prefix.len / 32] |= 1u << (v[i].prefix.len % 32);
	}
	free(db->ipcache);
	db->ipcache = v;
	db->n_ipcache = n;
	db->ipcache_valid = true;
	return 0;
}

FLOWSDN_API int flowsdn_policy_db_ipcache(struct flowsdn_policy_db *db,
					  const struct flowsdn_policy_ipcache_entry **ret_entries,
					  size_t *ret_n)
{
	int r;

	if (!db || !ret_entries || !ret_n)
		return -EINVAL;
	r = ipcache_build(db);
	if (r < 0)
		return r;
	*ret_entries = db->ipcache;
	*ret_n = db->n_ipcache;
	return 0;
}

/* Longest ipcache match, else world. */
static uint32_t ipcache_lookup(const struct flowsdn_policy_db *db, const struct flowsdn_addr *a)
{
	int f = a->family == FLOWSDN_AF_INET6;
	int bits = (int)flowsdn_addr_bits(a);

	for (int len = bits; len >= 0; len--) {
		struct flowsdn_policy_ipcache_entry key;
		const struct flowsdn_policy_ipcache_entry *hit;

		if (!(db->ipcache_lens[f][len / 32] & (1u << (len % 32))))
			continue;
		(void)flowsdn_prefix_make(a, (unsigned int)len, &key.prefix);
		hit = bsearch(&key, db->ipcache, db->n_ipcache, sizeof(key), ipc_cmp);
		if (hit)
			return hit->identity;
	}
	return FLOWSDN_IDENTITY_WORLD;
}

/* LPM over one endpoint's entries for (dir, ident, proto, port): the
 * longest port block of @proto, else the identity's L3 entry. */
static const struct flowsdn_policy_entry *policy_lpm(const struct ppod *pod, int dir, uint32_t ident,
						     uint8_t proto, uint16_t port)
{
	struct flowsdn_policy_entry key = { .identity = ident, .direction = (uint8_t)dir };
	const struct flowsdn_policy_entry *hit;

	if (pod->n_entries == 0)
		return NULL;

	if (proto != 0) {
		for (int bits = 16; bits >= 0; bits--) {
			uint16_t mask = bits ? (uint16_t)(0xffffu << (16 - bits)) : 0;

			key.protocol = proto;
			key.port = port & mask;
			key.port_bits = (uint8_t)bits;
			hit = bsearch(&key, pod->entries, pod->n_entries, sizeof(key), entry_cmp);
			if (hit)
				return hit;
		}
	}
	key.protocol = 0;
	key.port = 0;
	key.port_bits = 0;
	return bsearch(&key, pod->entries, pod->n_entries, sizeof(key), entry_cmp);
}

FLOWSDN_API int flowsdn_policy_db_lookup_decision(struct flowsdn_policy_db *db, uint32_t ep_id, int direction,
						  const struct flowsdn_addr *peer, uint8_t protocol, uint16_t port,
						  struct flowsdn_policy_decision *ret)
{
	const struct flowsdn_policy_entry *a, *b, *hit;
	const struct ppod *pod;
	uint32_t ident;
	unsigned int enforce;
	int r;

	if (!db || !peer || !ret || !OPTS_VALID(ret, flowsdn_policy_decision) ||
	    (direction != FLOWSDN_POLICY_INGRESS && direction != FLOWSDN_POLICY_EGRESS) ||
	    (peer->family != FLOWSDN_AF_INET && peer->family != FLOWSDN_AF_INET6))
		return -EINVAL;
	if (ep_id == 0 || ep_id > db->n_eps || !(pod = db->eps[ep_id - 1]))
		return -FLOWSDN_E_POLICY_NOT_FOUND;
	if (pod->dirty)
		return -FLOWSDN_E_POLICY_NOT_COMPILED;
	r = ipcache_build(db);
	if (r < 0)
		return r;
	/* "A pod cannot block access to itself": its own address is always
	 * allowed (the datapath never judges a pod's traffic to itself). */
	if (pdb_pod_by_addr(db, peer) == pod) {
		policy_decision_set(ret, FLOWSDN_POLICY_VERDICT_ALLOW, FLOWSDN_POLICY_REASON_SELF, 0, 0);
		return 0;
	}
	if (protocol != PROTO_TCP && protocol != PROTO_UDP && protocol != PROTO_SCTP)
		port = 0;
	ident = ipcache_lookup(db, peer);
	a = policy_lpm(pod, direction, ident, protocol, port);
	b = policy_lpm(pod, direction, POLICY_IDENTITY_ANY, protocol, port);
	enforce = direction == FLOWSDN_POLICY_INGRESS ? FLOWSDN_POLICY_ENFORCE_INGRESS
						      : FLOWSDN_POLICY_ENFORCE_EGRESS;
	/* The datapath's order (bpf/lib/policy.h), which counts the entry. */
	hit = a && a->deny ? a : b && b->deny ? b : a ? a : b;
	if (hit)
		policy_decision_set(ret, hit->deny ? FLOWSDN_POLICY_VERDICT_DENY : FLOWSDN_POLICY_VERDICT_ALLOW,
				    FLOWSDN_POLICY_REASON_RULE, hit->rule_id, hit->tier);
	else if (pod->flags & enforce)
		policy_decision_set(ret, FLOWSDN_POLICY_VERDICT_DENY, FLOWSDN_POLICY_REASON_DEFAULT_DENY, 0, 0);
	else
		policy_decision_set(ret, FLOWSDN_POLICY_VERDICT_ALLOW, FLOWSDN_POLICY_REASON_NOT_SELECTED, 0, 0);
	return 0;
}

FLOWSDN_API int flowsdn_policy_db_lookup(struct flowsdn_policy_db *db, uint32_t ep_id, int direction,
					 const struct flowsdn_addr *peer, uint8_t protocol,
					 uint16_t port, int *ret_verdict)
{
	FLOWSDN_OPTS(flowsdn_policy_decision, d);
	int r;

	if (!ret_verdict)
		return -EINVAL;
	r = flowsdn_policy_db_lookup_decision(db, ep_id, direction, peer, protocol, port, &d);
	if (r == 0)
		*ret_verdict = d.verdict;
	return r;
}

FLOWSDN_API int flowsdn_policy_entry_to_key(const struct flowsdn_policy_entry *entry, uint32_t ep_id,
					    struct flowsdn_policy_key *ret_key, uint32_t *ret_flags)
{
	struct flowsdn_policy_key k;
	int r;

	if (!entry || !ret_key || !ret_flags || entry->direction > FLOWSDN_POLICY_EGRESS)
		return -EINVAL;
	r = flowsdn_policy_key_make(ep_id, (enum flowsdn_direction)entry->direction, entry->identity,
				    entry->protocol, entry->port, entry->port_bits, &k);
	if (r < 0)
		return r;
	*ret_key = k;
	*ret_flags = entry->deny ? FLOWSDN_POLICY_F_DENY : 0;
	return 0;
}
