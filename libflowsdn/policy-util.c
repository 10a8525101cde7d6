/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy module's shared leaf: label sets and label selectors (sorted
 * labels, lookup, copy, free; metav1 selector semantics).  policy-parse.c,
 * policy-model.c and policy-compile.c call these; this file calls none of
 * them.  (policy-sim.c keeps its own selector reading on purpose.)
 */
#include "config.h"

#include <flowsdn/policy.h>

#include "policy-internal.h"

void plabels_free(struct plabels *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].value);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void psel_free(struct psel *sel)
{
	if (!sel)
		return;
	plabels_free(&sel->match);
	for (size_t i = 0; i < sel->n_reqs; i++) {
		free(sel->reqs[i].key);
		for (size_t j = 0; j < sel->reqs[i].n_values; j++)
			free(sel->reqs[i].values[j]);
		free(sel->reqs[i].values);
	}
	free(sel->reqs);
	sel->reqs = NULL;
	sel->n_reqs = 0;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct plabel *)a)->key, ((const struct plabel *)b)->key);
}

int plabels_sort(struct plabels *l)
{
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), label_cmp);
	for (size_t i = 1; i < l->n; i++)
		if (strcmp(l->v[i - 1].key, l->v[i].key) == 0)
			return -EEXIST;
	return 0;
}

static int label_key_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct plabel *)elem)->key);
}

const char *plabels_get(const struct plabels *l, const char *key)
{
	bool found;
	size_t i = util_lower_bound(l->v, l->n, sizeof(*l->v), key, label_key_cmp, &found);

	return found ? l->v[i].value : NULL;
}

int plabels_copy(struct plabels *dst, const struct plabels *src)
{
	struct plabels d = { 0 };

	d.v = calloc(src->n ? src->n : 1, sizeof(*d.v));
	if (!d.v)
		return -ENOMEM;
	for (size_t i = 0; i < src->n; i++) {
		d.v[i].key = strdup(src->v[i].key);
		d.v[i].value = strdup(src->v[i].value);
		d.n++;
		if (!d.v[i].key || !d.v[i].value) {
			plabels_free(&d);
			return -ENOMEM;
		}
	}
	*dst = d;
	return 0;
}

/* Label selector semantics (metav1.LabelSelectorAsSelector): every
 * matchLabels pair and every requirement must hold; an empty selector
 * matches everything. */
bool psel_matches(const struct psel *sel, const struct plabels *labels)
{
	for (size_t i = 0; i < sel->match.n; i++) {
		const char *v = plabels_get(labels, sel->match.v[i].key);

		if (!v || strcmp(v, sel->match.v[i].value) != 0)
			return false;
	}
	for (size_t i = 0; i < sel->n_reqs; i++) {
		const struct preq *r = &sel->reqs[i];
		const char *v = plabels_get(labels, r->key);
		bool in = false;

		if (v)
			for (size_t j = 0; j < r->n_values; j++)
				if (strcmp(v, r->values[j]) == 0)
					in = true;
		switch (r->op) {
		case SEL_IN:
			if (!in)
				return false;
			break;
		case SEL_NOT_IN:
			if (in)
				return false;
			break;
		case SEL_EXISTS:
			if (!v)
				return false;
			break;
		case SEL_DOES_NOT_EXIST:
			if (v)
				return false;
			break;
		default:
			return false;
		}
	}
	return true;
}

void policy_decision_set(struct flowsdn_policy_decision *d, int verdict, int reason, uint32_t rule_id,
			 uint8_t tier)
{
	d->verdict = verdict;
	d->reason = reason;
	if (OPTS_HAS(d, rule_id))
		d->rule_id = rule_id;
	if (OPTS_HAS(d, tier))
		d->tier = tier;
}

FLOWSDN_API const char *flowsdn_policy_reason_name(int reason)
{
	switch (reason) {
	case FLOWSDN_POLICY_REASON_RULE:
		return "rule";
	case FLOWSDN_POLICY_REASON_DEFAULT_DENY:
		return "default deny";
	case FLOWSDN_POLICY_REASON_NOT_SELECTED:
		return "no policy selects";
	case FLOWSDN_POLICY_REASON_SELF:
		return "self";
	default:
		return NULL;
	}
}
