/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy simulator: answers "does this endpoint let this packet
 * through?" directly from the policy objects and the pods, the way the
 * Kubernetes documentation states the semantics, without identities,
 * CIDR identities, entries or lookups.  It shares nothing with the
 * compiler but the parsed objects (its selector matching is its own), so
 * that the agreement test compares two independent readings of the rules.
 */
#include "config.h"

#include <flowsdn/policy.h>

#include "policy-internal.h"

static const char *label_value(const struct plabels *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].key, key) == 0)
			return l->v[i].value;
	return NULL;
}

static bool value_listed(const struct preq *r, const char *v)
{
	for (size_t i = 0; i < r->n_values; i++)
		if (strcmp(r->values[i], v) == 0)
			return true;
	return false;
}

/* matchLabels AND matchExpressions; {} matches everything. */
static bool sim_selects(const struct psel *sel, const struct plabels *labels)
{
	bool ok = true;

	for (size_t i = 0; ok && i < sel->match.n; i++) {
		const char *v = label_value(labels, sel->match.v[i].key);

		ok = v && strcmp(v, sel->match.v[i].value) == 0;
	}
	for (size_t i = 0; ok && i < sel->n_reqs; i++) {
		const struct preq *r = &sel->reqs[i];
		const char *v = label_value(labels, r->key);

		if (r->op == SEL_IN)
			ok = v && value_listed(r, v);
		else if (r->op == SEL_NOT_IN)
			ok = !v || !value_listed(r, v);
		else if (r->op == SEL_EXISTS)
			ok = v != NULL;
		else if (r->op == SEL_DOES_NOT_EXIST)
			ok = v == NULL;
		else
			ok = false;
	}
	return ok;
}

static const struct plabels *ns_labels(const struct flowsdn_policy_db *db, const char *ns)
{
	const struct pns *n = pdb_namespace(db, ns);

	return n ? &n->labels : NULL;
}

static bool peer_matches(const struct flowsdn_policy_db *db, const struct flowsdn_policy *p,
			 const struct ppeer *pe, const struct ppod *peer_pod, const struct flowsdn_addr *addr)
{
	if (pe->kind == PEER_IPBLOCK) {
		/* ipBlock: cluster-external addresses only */
		if (peer_pod || addr->family != pe->cidr.addr.family ||
		    !flowsdn_prefix_contains_addr(&pe->cidr, addr))
			return false;
		for (size_t i = 0; i < pe->n_except; i++)
			if (flowsdn_prefix_contains_addr(&pe->except[i], addr))
				return false;
		return true;
	}
	if (!peer_pod)
		return false;
	if (pe->ns) {
		const struct plabels *nl = ns_labels(db, peer_pod->ns);

		if (!nl || !sim_selects(pe->ns, nl))
			return false;
	} else if (strcmp(peer_pod->ns, p->ns) != 0) {
		return false;
	}
	return !pe->pod || sim_selects(pe->pod, &peer_pod->labels);
}

/* Whether two pods share an identity: the same namespace and the same
 * label set. */
static bool same_identity(const struct ppod *a, const struct ppod *b)
{
	if (strcmp(a->ns, b->ns) != 0 || a->labels.n != b->labels.n)
		return false;
	for (size_t i = 0; i < a->labels.n; i++) {
		const char *v = label_value(&b->labels, a->labels.v[i].key);

		if (!v || strcmp(v, a->labels.v[i].value) != 0)
			return false;
	}
	return true;
}

/* Whether @pod numbers the port @name/@proto as @port. */
static bool names_port(const struct ppod *pod, const char *name, uint8_t proto, uint16_t port)
{
	for (size_t i = 0; i < pod->n_ports; i++)
		if (strcmp(pod->ports[i].name, name) == 0 && pod->ports[i].proto == proto && pod->ports[i].port == port)
			return true;
	return false;
}

/*
 * A named port: on ingress the receiving pod's own number; on egress, as
 * Cilium does (flowsdn_policy(3)), any number that a pod with the peer's
 * identity gives the name — pods of one identity may number a name
 * differently, and traffic to each number is allowed to all of them.
 */
static bool port_matches(const struct flowsdn_policy_db *db, const struct pport *pp, int dir, const struct ppod *self,
			 const struct ppod *peer_pod, uint8_t proto, uint16_t port)
{
	const struct ppod *target = dir == FLOWSDN_POLICY_INGRESS ? self : peer_pod;

	if (pp->proto != proto)
		return false;
	if (!pp->has_port)
		return true;
	if (!pp->name)
		return port >= pp->port && port <= pp->end;
	if (!target)
		return false;
	if (dir == FLOWSDN_POLICY_INGRESS)
		return names_port(target, pp->name, proto, port);
	for (size_t i = 0; i < db->n_eps; i++)
		if (db->eps[i] && same_identity(db->eps[i], target) && names_port(db->eps[i], pp->name, proto, port))
			return true;
	return false;
}

static bool rule_matches(const struct flowsdn_policy_db *db, const struct flowsdn_policy *p,
			 const struct prule *r, int dir, const struct ppod *self,
			 const struct ppod *peer_pod, const struct flowsdn_addr *addr,
			 uint8_t proto, uint16_t port)
{
	bool peer_ok = r->n_peers == 0, port_ok = r->n_ports == 0;

	for (size_t i = 0; !peer_ok && i < r->n_peers; i++)
		peer_ok = peer_matches(db, p, &r->peers[i], peer_pod, addr);
	for (size_t i = 0; !port_ok && i < r->n_ports; i++)
		port_ok = port_matches(db, &r->ports[i], dir, self, peer_pod, proto, port);
	return peer_ok && port_ok;
}

FLOWSDN_API int flowsdn_policy_db_simulate_decision(const struct flowsdn_policy_db *db, uint32_t ep_id,
						    int direction, const struct flowsdn_addr *peer, uint8_t protocol,
						    uint16_t port, struct flowsdn_policy_decision *ret)
{
	const struct ppod *self, *peer_pod;
	bool isolated = false;
	int best = 0;
	uint32_t best_rule = 0;

	if (!db || !peer || !ret || !OPTS_VALID(ret, flowsdn_policy_decision) ||
	    (direction != FLOWSDN_POLICY_INGRESS && direction != FLOWSDN_POLICY_EGRESS) ||
	    (peer->family != FLOWSDN_AF_INET && peer->family != FLOWSDN_AF_INET6))
		return -EINVAL;
	if (ep_id == 0 || ep_id > db->n_eps || !(self = db->eps[ep_id - 1]))
		return -FLOWSDN_E_POLICY_NOT_FOUND;
	if (protocol != PROTO_TCP && protocol != PROTO_UDP && protocol != PROTO_SCTP)
		port = 0;
	peer_pod = pdb_pod_by_addr(db, peer);
	/* Kubernetes: a pod cannot block access to itself. */
	if (peer_pod == self) {
		policy_decision_set(ret, FLOWSDN_POLICY_VERDICT_ALLOW, FLOWSDN_POLICY_REASON_SELF, 0, 0);
		return 0;
	}
	/* The highest tier that matches, then the lowest rule id. */
	for (size_t i = 0; i < db->n_policies; i++) {
		const struct flowsdn_policy *p = db->policies[i];

		if (strcmp(p->ns, self->ns) != 0 || !sim_selects(&p->podsel, &self->labels) ||
		    !(p->types & (1u << direction)))
			continue;
		if (p->tier == FLOWSDN_POLICY_TIER_ALLOW)
			isolated = true;
		for (size_t k = 0; k < p->n_rules[direction]; k++) {
			const struct prule *r = &p->rules[direction][k];

			if ((p->tier > best || (p->tier == best && r->rule_id < best_rule)) &&
			    rule_matches(db, p, r, direction, self, peer_pod, peer, protocol, port)) {
				best = p->tier;
				best_rule = r->rule_id;
			}
		}
	}
	if (best)
		policy_decision_set(ret,
				    best == FLOWSDN_POLICY_TIER_DENY || best == FLOWSDN_POLICY_TIER_PROTECT
					    ? FLOWSDN_POLICY_VERDICT_DENY
					    : FLOWSDN_POLICY_VERDICT_ALLOW,
				    FLOWSDN_POLICY_REASON_RULE, best_rule, (uint8_t)best);
	else if (isolated)
		policy_decision_set(ret, FLOWSDN_POLICY_VERDICT_DENY, FLOWSDN_POLICY_REASON_DEFAULT_DENY, 0, 0);
	else
		policy_decision_set(ret, FLOWSDN_POLICY_VERDICT_ALLOW, FLOWSDN_POLICY_REASON_NOT_SELECTED, 0, 0);
	return 0;
}

FLOWSDN_API int flowsdn_policy_db_simulate(const struct flowsdn_policy_db *db, uint32_t ep_id,
					   int direction, const struct flowsdn_addr *peer,
					   uint8_t protocol, uint16_t port, int *ret_verdict)
{
	FLOWSDN_OPTS(flowsdn_policy_decision, d);
	int r;

	if (!ret_verdict)
		return -EINVAL;
	r = flowsdn_policy_db_simulate_decision(db, ep_id, direction, peer, protocol, port, &d);
	if (r == 0)
		*ret_verdict = d.verdict;
	return r;
}
