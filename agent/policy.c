/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's policy state and live enforcement (policy.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/identity.h>

#include "agent-api.h"
#include "conf.h"
#include "diag.h"
#include "hostfw.h"
#include "json.h"
#include "log.h"
#include "policy.h"
#include "policy-store.h"
#include "util.h"

/* A stored NetworkPolicy: the object as it was PUT. */
struct pobj {
	char *ns, *name;
	char *json;
	size_t len;
};

/* A namespace as it was PUT: its labels. */
struct nsobj {
	char *name;
	char **keys, **values;
	size_t n;
};

/* An endpoint the policy knows. */
struct pep {
	struct flowsdn_endpoint dp;     /* as published (id, interface, addresses) */
	char ns[64], pod[254];          /* ns "" : outside policy */
	uint32_t db_id;                 /* the database's endpoint id (in_db) */
	bool in_db;
	struct flowsdn_policy_map_entry *inst; /* installed set */
	size_t n_inst;
	uint32_t inst_flags;            /* FLOWSDN_EP_F_* installed */
};

/* Saved endpoint labels read at start, until their endpoint is adopted. */
struct saved_ep {
	uint32_t id;
	char *container_id;
	char *body; /* agent_policy_meta_format() */
	bool claimed;
};

struct agent_policy {
	pthread_mutex_t lock;
	struct agent_pstore *store;
	bool persist;                   /* save what is changed (not while the configuration loads) */
	struct saved_ep *saved;
	size_t n_saved;
	struct flowsdn_identity_info *prev_ids; /* references the previous agent held */
	size_t n_prev_ids;
	struct flowsdn_identity_store *ids;
	struct flowsdn_policy_db *db;
	struct flowsdn_maps *maps;
	struct pobj *pols;
	size_t n_pols;
	struct nsobj *nss;
	size_t n_nss;
	struct pep **eps;
	size_t n_eps;
	struct flowsdn_policy_ipcache_entry *ipc; /* installed ipcache */
	size_t n_ipc;
	/* The host firewall: the node as the pod "host" of the namespace
	 * AGENT_HOSTFW_NAMESPACE (no address; its entries switched with
	 * flowsdn_maps_hostfw_switch()), and the mode in force. */
	struct pep *host;
	unsigned int host_mode;
	bool host_switched; /* this agent switched it (else the previous one's entries are in force) */
};

static const char *const tier_words[] = { "", "allow", "deny", "exception", "protect" };

static void ns_clear(struct nsobj *n)
{
	for (size_t i = 0; i < n->n; i++) {
		free(n->keys[i]);
		free(n->values[i]);
	}
	free(n->keys);
	free(n->values);
	free(n->name);
}

void agent_policy_free(struct agent_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_pols; i++) {
		free(p->pols[i].ns);
		free(p->pols[i].name);
		free(p->pols[i].json);
	}
	free(p->pols);
	for (size_t i = 0; i < p->n_nss; i++)
		ns_clear(&p->nss[i]);
	free(p->nss);
	for (size_t i = 0; i < p->n_eps; i++) {
		free(p->eps[i]->inst);
		free(p->eps[i]);
	}
	free(p->eps);
	if (p->host)
		free(p->host->inst);
	free(p->host);
	free(p->ipc);
	for (size_t i = 0; i < p->n_saved; i++) {
		free(p->saved[i].container_id);
		free(p->saved[i].body);
	}
	free(p->saved);
	free(p->prev_ids);
	agent_pstore_free(p->store);
	flowsdn_policy_db_free(p->db);
	flowsdn_identity_free(p->ids);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* The node's pseudo-pod of the host policies; the mode in force is the
 * one the datapath has (a previous agent's), until the configuration's
 * or a saved one is applied. */
static int host_new(struct agent_policy *p)
{
	FLOWSDN_OPTS(flowsdn_policy_pod, pod, .namespace_name = AGENT_HOSTFW_NAMESPACE, .name = "host");
	struct flowsdn_hostfw_state st;
	struct pep *e = calloc(1, sizeof(*e));
	int err;

	if (!e)
		return -ENOMEM;
	e->dp.id = FLOWSDN_HOSTFW_EP_ID;
	snprintf(e->ns, sizeof(e->ns), "%s", AGENT_HOSTFW_NAMESPACE);
	snprintf(e->pod, sizeof(e->pod), "host");
	err = flowsdn_policy_db_set_pod(p->db, &pod, &e->db_id);
	if (err < 0) {
		free(e);
		return err;
	}
	e->in_db = true;
	(void)flowsdn_policy_db_identity(p->db, e->db_id, &e->dp.identity);
	if (p->maps && flowsdn_maps_hostfw_state(p->maps, &st) == 0 && st.ep_id == FLOWSDN_HOSTFW_EP_ID) {
		p->host_mode = st.mode <= FLOWSDN_HOSTFW_ENFORCE ? st.mode : FLOWSDN_HOSTFW_OFF;
		e->inst_flags = st.flags & FLOWSDN_EP_F_ENFORCE_INGRESS;
	}
	p->host = e;
	return 0;
}

int agent_policy_new(const char *state_dir, struct flowsdn_maps *maps, struct agent_policy **ret)
{
	_cleanup_free_ char *dir = NULL;
	struct agent_policy *p;
	int err;

	if (!state_dir || !ret)
		return -EINVAL;
	if (asprintf(&dir, "%s/identities", state_dir) < 0)
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	p->maps = maps;
	err = flowsdn_identity_new(dir, NULL, &p->ids);
	if (err < 0) {
		pr_err("agent: identity store %s: %s", dir, flowsdn_strerror(err));
		goto out;
	}
	err = flowsdn_identity_list(p->ids, &p->prev_ids, &p->n_prev_ids);
	if (err < 0)
		goto out;
	err = agent_pstore_open(state_dir, &p->store);
	if (err < 0)
		goto out;
	p->persist = true;
	/* Entries of a switch a crash cut short, in the generation not in
	 * force: the next switch of their endpoint would bring them in. */
	if (maps) {
		size_t removed = 0;

		if (flowsdn_maps_policy_scrub(maps, &removed) == 0 && removed)
			pr_info("agent: %zu policy entries no packet could meet removed", removed);
	}
	{
		FLOWSDN_OPTS(flowsdn_policy_db_opts, o, .identities = p->ids);

		err = flowsdn_policy_db_new(&o, &p->db);
	}
	if (err == 0)
		err = host_new(p);
	if (err < 0)
		goto out;
	*ret = p;
	return 0;
out:
	agent_policy_free(p);
	return err;
}

static struct pep *pep_find(struct agent_policy *p, uint32_t ep_id)
{
	if (p->host && ep_id == FLOWSDN_HOSTFW_EP_ID)
		return p->host;
	for (size_t i = 0; i < p->n_eps; i++)
		if (p->eps[i]->dp.id == ep_id)
			return p->eps[i];
	return NULL;
}

static struct pep *pep_by_db(struct agent_policy *p, uint32_t db_id)
{
	if (p->host && p->host->db_id == db_id)
		return p->host;
	for (size_t i = 0; i < p->n_eps; i++)
		if (p->eps[i]->in_db && p->eps[i]->db_id == db_id)
			return p->eps[i];
	return NULL;
}

/* Installs @n entries with @flags on @e (atomic switch). */
static int install(struct agent_policy *p, struct pep *e, struct flowsdn_policy_map_entry *set, size_t n,
		   uint32_t flags)
{
	int err;

	if (!p->maps) {
		free(set);
		return 0;
	}
	if (e == p->host)
		err = flowsdn_maps_hostfw_switch(p->maps, e->inst, e->n_inst, set, n, flags, p->host_mode);
	else
		err = flowsdn_maps_policy_switch(p->maps, &e->dp, e->inst, e->n_inst, set, n, flags);
	if (err < 0) {
		pr_warn("agent: %s %u: policy switch failed, the previous policy stays: %s",
			e == p->host ? "host firewall" : "endpoint", e->dp.id, flowsdn_strerror(err));
		free(set);
		return err;
	}
	free(e->inst);
	e->inst = set;
	e->n_inst = n;
	e->inst_flags = flags;
	if (e == p->host)
		p->host_switched = true;
	return 0;
}

/* The compiled entries of @e as map entries. */
static int entries_of(struct agent_policy *p, struct pep *e, struct flowsdn_policy_map_entry **ret, size_t *ret_n,
		      uint32_t *ret_flags)
{
	const struct flowsdn_policy_entry *ce;
	struct flowsdn_policy_map_entry *set;
	unsigned int flags = 0;
	size_t n = 0, k = 0;
	int err = flowsdn_policy_db_entries(p->db, e->db_id, &ce, &n, &flags);

	if (err < 0)
		return err;
	set = calloc(n ? n : 1, sizeof(*set));
	if (!set)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		err = flowsdn_policy_entry_to_key(&ce[i], e->dp.id, &set[k].key, &set[k].flags);
		if (err < 0) {
			free(set);
			return err;
		}
		/* The host firewall judges what arrives (host policies are ingress only). */
		if (e == p->host && set[k].key.direction != FLOWSDN_DIR_INGRESS)
			continue;
		set[k++].rule_id = ce[i].rule_id;
	}
	*ret = set;
	*ret_n = k;
	*ret_flags = ((flags & FLOWSDN_POLICY_ENFORCE_INGRESS) ? FLOWSDN_EP_F_ENFORCE_INGRESS : 0) |
		     ((flags & FLOWSDN_POLICY_ENFORCE_EGRESS) && e != p->host ? FLOWSDN_EP_F_ENFORCE_EGRESS : 0);
	return 0;
}

static bool prefix_equal(const struct flowsdn_prefix *a, const struct flowsdn_prefix *b)
{
	return a->len == b->len && a->addr.family == b->addr.family &&
	       !memcmp(a->addr.bytes, b->addr.bytes, a->addr.family == FLOWSDN_AF_INET ? 4 : 16);
}

/* The ipcache the compiled entries assume: new prefixes before the
 * switches (@add), stale ones after (!@add). */
static int ipcache_sync(struct agent_policy *p, bool add)
{
	const struct flowsdn_policy_ipcache_entry *cur;
	size_t n;
	int err;

	if (!p->maps)
		return 0;
	err = flowsdn_policy_db_ipcache(p->db, &cur, &n);
	if (err < 0)
		return err;
	if (add) {
		for (size_t i = 0; i < n; i++) {
			err = flowsdn_maps_ipcache_update(p->maps, &cur[i].prefix, cur[i].identity);
			if (err < 0)
				return err;
		}
		return 0;
	}
	for (size_t i = 0; i < p->n_ipc; i++) {
		bool kept = false;

		for (size_t j = 0; j < n && !kept; j++)
			kept = prefix_equal(&p->ipc[i].prefix, &cur[j].prefix);
		if (!kept)
			(void)flowsdn_maps_ipcache_delete(p->maps, &p->ipc[i].prefix);
	}
	free(p->ipc);
	p->ipc = NULL;
	p->n_ipc = 0;
	if (n) {
		p->ipc = malloc(n * sizeof(*cur));
		if (!p->ipc)
			return -ENOMEM;
		memcpy(p->ipc, cur, n * sizeof(*cur));
		p->n_ipc = n;
	}
	return 0;
}

/* Compiles what changed and switches each endpoint it recomputed.
 * Returns the compile's error (nothing installed), else the first
 * switch error (the others went on). */
static int apply(struct agent_policy *p, struct diag *diag)
{
	FLOWSDN_OPTS(flowsdn_policy_compile_report, rep);
	int err, first = 0;

	err = flowsdn_policy_db_compile(p->db, &rep);
	if (err < 0) {
		if (err == -FLOWSDN_E_POLICY_CAPACITY)
			agent_diag_set(diag, "endpoint %u would need %zu policy entries, the limit is %zu",
				       rep.failed_ep_id, rep.failed_entries, rep.capacity);
		else
			agent_diag_set(diag, "compiling the policy: %s", flowsdn_strerror(err));
		return err;
	}
	err = ipcache_sync(p, true);
	if (err < 0) {
		agent_diag_set(diag, "writing the ipcache: %s", flowsdn_strerror(err));
		return err;
	}
	for (size_t i = 0; i < rep.n_ep_ids; i++) {
		struct pep *e = pep_by_db(p, rep.ep_ids[i]);
		struct flowsdn_policy_map_entry *set = NULL;
		size_t n = 0;
		uint32_t flags = 0;

		if (!e)
			continue;
		err = entries_of(p, e, &set, &n, &flags);
		if (err == 0)
			err = install(p, e, set, n, flags);
		if (err < 0 && !first) {
			first = err;
			agent_diag_set(diag, "endpoint %u: the policy switch failed (the previous policy stays): %s",
				       e->dp.id, flowsdn_strerror(err));
		}
	}
	err = ipcache_sync(p, false);
	return first ? first : err;
}

/* ------------------------------------------------------------ endpoints */

/* Takes @e out of the database; its entries stay in force until the
 * next switch (never an open moment while its labels change). */
static void pep_leave_db(struct agent_policy *p, struct pep *e)
{
	if (!e->in_db)
		return;
	(void)flowsdn_policy_db_delete_pod(p->db, e->ns, e->pod);
	e->in_db = false;
}

/* Saves @meta of endpoint @ep_id (of @container_id). */
static int endpoint_save(struct agent_policy *p, uint32_t ep_id, const char *container_id,
			 const struct agent_policy_meta *meta)
{
	_cleanup_free_ char *body = NULL, *obj = NULL;
	struct json_writer *w;
	char key[16];
	size_t n = 0;
	int err;

	err = agent_policy_meta_format(meta, &body);
	if (err < 0)
		return err;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_string(w, "containerID", container_id ? container_id : "");
	jw_key(w, "endpoint");
	jw_raw(w, body, strlen(body));
	jw_object_close(w);
	err = json_writer_finish(w, &obj, &n);
	if (err < 0)
		return err;
	snprintf(key, sizeof(key), "%u", ep_id);
	return agent_pstore_put(p->store, AGENT_PSTORE_ENDPOINT, key, obj, n);
}

static int endpoint_set_locked(struct agent_policy *p, const struct flowsdn_endpoint *ep, const char *container_id,
			       const struct agent_policy_meta *meta, bool save, struct diag *diag)
{
	struct pep *e;
	int err = 0;

	e = pep_find(p, ep->id);
	if (!e) {
		struct pep **t = reallocarray(p->eps, p->n_eps + 1, sizeof(*t));

		e = t ? calloc(1, sizeof(*e)) : NULL;
		if (t)
			p->eps = t;
		if (!e)
			return -ENOMEM;
		p->eps[p->n_eps++] = e;
		/* An endpoint the agent did not know yet (a new one, or one a
		 * previous agent left): the enforcement in force stays until
		 * its policy is switched, never cleared on the way. */
		if (p->maps) {
			struct flowsdn_endpoint_info info;

			if (flowsdn_maps_endpoint_lookup(p->maps, &ep->addrs[0], &info) == 0 && info.ep_id == ep->id)
				e->inst_flags = info.flags & FLOWSDN_EP_F_ENFORCE;
		}
	}
	e->dp = *ep;
	{
		char ns[sizeof(e->ns)], pod[sizeof(e->pod)];

		snprintf(ns, sizeof(ns), "%s", meta->namespace_name ? meta->namespace_name : "");
		if (meta->pod_name && meta->pod_name[0])
			snprintf(pod, sizeof(pod), "%s", meta->pod_name);
		else
			snprintf(pod, sizeof(pod), "endpoint-%u", ep->id);
		/* The same pod with new labels or ports is replaced in place
		 * (its database id, entries and, when its labels stay, its
		 * identity kept); another one takes its place. */
		if (strcmp(ns, e->ns) || strcmp(pod, e->pod))
			pep_leave_db(p, e);
		memcpy(e->ns, ns, sizeof(ns));
		memcpy(e->pod, pod, sizeof(pod));
	}
	if (e->ns[0]) {
		FLOWSDN_OPTS(flowsdn_policy_pod, pod, .namespace_name = e->ns, .name = e->pod, .labels = meta->labels,
			     .n_labels = meta->n_labels, .ports = meta->ports, .n_ports = meta->n_ports,
			     .addrs = ep->addrs, .n_addrs = ep->n_addrs);

		err = flowsdn_policy_db_set_pod(p->db, &pod, &e->db_id);
		if (err < 0) {
			agent_diag_set(diag, "endpoint %u: %s", ep->id,
				       err == -EINVAL ? "a label, port name or protocol Kubernetes refuses"
						      : flowsdn_strerror(err));
			return err;
		}
		e->in_db = true;
		(void)flowsdn_policy_db_identity(p->db, e->db_id, &e->dp.identity);
	} else {
		e->dp.identity = FLOWSDN_IDENTITY_INIT;
	}
	if (p->maps) {
		struct flowsdn_endpoint pub = e->dp;

		/* The enforcement flags are the installed policy's, the others
		 * (service translation) the endpoint's own. */
		pub.flags = (e->dp.flags & ~FLOWSDN_EP_F_ENFORCE) | e->inst_flags;
		err = flowsdn_maps_endpoint_publish(p->maps, &pub);
		if (err < 0) {
			agent_diag_set(diag, "endpoint %u: publishing its identity: %s", ep->id, flowsdn_strerror(err));
			return err;
		}
	}
	err = apply(p, diag);
	/* Outside policy now: nothing recompiled it, it allows everything. */
	if (err == 0 && !e->in_db && (e->n_inst || e->inst_flags))
		err = install(p, e, NULL, 0, 0);
	if (err == 0 && save && p->persist) {
		err = endpoint_save(p, ep->id, container_id, meta);
		if (err < 0)
			agent_diag_set(diag, "endpoint %u: saving its labels: %s (they are in force until the agent restarts)",
				       ep->id, strerror(-err));
	}
	return err;
}

int agent_policy_endpoint_set(struct agent_policy *p, const struct flowsdn_endpoint *ep, const char *container_id,
			      const struct agent_policy_meta *meta, struct diag *diag)
{
	int err;

	if (!p || !ep || !meta)
		return -EINVAL;
	if (meta->namespace_name && !strcmp(meta->namespace_name, AGENT_HOSTFW_NAMESPACE)) {
		agent_diag_set(diag, "namespace: " AGENT_HOSTFW_NAMESPACE " is the host firewall's, no endpoint joins it");
		return -EINVAL;
	}
	if (meta->namespace_name && strlen(meta->namespace_name) >= sizeof(((struct pep *)0)->ns)) {
		agent_diag_set(diag, "namespace: at most 63 characters");
		return -EINVAL;
	}
	if (meta->pod_name && strlen(meta->pod_name) >= sizeof(((struct pep *)0)->pod)) {
		agent_diag_set(diag, "name: at most 253 characters");
		return -EINVAL;
	}
	pthread_mutex_lock(&p->lock);
	err = endpoint_set_locked(p, ep, container_id, meta, true, diag);
	pthread_mutex_unlock(&p->lock);
	return err;
}

void agent_policy_endpoint_remove(struct agent_policy *p, uint32_t ep_id)
{
	char key[16];

	if (!p)
		return;
	snprintf(key, sizeof(key), "%u", ep_id);
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_eps; i++) {
		struct pep *e = p->eps[i];

		if (e->dp.id != ep_id)
			continue;
		if (e->in_db)
			(void)flowsdn_policy_db_delete_pod(p->db, e->ns, e->pod);
		/* Its map entries go with the endpoint (flowsdn_maps_endpoint_remove). */
		free(e->inst);
		free(e);
		p->eps[i] = p->eps[--p->n_eps];
		(void)apply(p, NULL);
		break;
	}
	if (p->persist)
		(void)agent_pstore_delete(p->store, AGENT_PSTORE_ENDPOINT, key);
	pthread_mutex_unlock(&p->lock);
}

/* ------------------------------------------------------------ policies */

static ssize_t pol_find(struct agent_policy *p, const char *ns, const char *name)
{
	for (size_t i = 0; i < p->n_pols; i++)
		if (!strcmp(p->pols[i].ns, ns) && !strcmp(p->pols[i].name, name))
			return (ssize_t)i;
	return -1;
}

/* The tier of the annotation flowsdn.io/tier (absent: allow). */
static int tier_of(const char *json, size_t len, const char *name, int *ret, struct diag *diag)
{
	struct json_value *root = NULL;
	const struct json_value *md, *an, *t;
	const char *s;
	int err = 0;

	*ret = FLOWSDN_POLICY_TIER_ALLOW;
	if (json_parse(json, len, NULL, &root, NULL) < 0)
		return 0; /* the parser below says what is wrong */
	md = json_get(root, "metadata");
	an = md ? json_get(md, "annotations") : NULL;
	t = an ? json_get(an, "flowsdn.io/tier") : NULL;
	if (t) {
		err = -FLOWSDN_E_POLICY_INVALID;
		if (json_get_string(t, &s) == 0)
			for (int i = 1; i <= FLOWSDN_POLICY_TIER_PROTECT; i++)
				if (!strcmp(s, tier_words[i])) {
					*ret = i;
					err = 0;
				}
		if (err)
			agent_diag_set(diag,
				       "NetworkPolicy.networking.k8s.io \"%s\" is invalid: metadata.annotations[flowsdn.io/tier]: "
				       "Unsupported value: supported values: \"allow\", \"deny\", \"exception\", \"protect\"",
				       name);
	}
	json_free(root);
	return err;
}

/* What a host policy may not say (flowsdn-agent(8) "HOST FIREWALL"):
 * it selects nodes, and standalone there is one, so its podSelector is
 * {}; it judges what arrives on the uplinks, so it has no egress. */
static int host_policy_check(const char *json, size_t len, const struct flowsdn_policy *pol, struct diag *diag)
{
	struct json_value *root = NULL;
	const struct json_value *spec, *sel;
	int err = 0;

	if (json_parse(json, len, NULL, &root, NULL) < 0)
		return -FLOWSDN_E_POLICY_JSON;
	spec = json_get(root, "spec");
	sel = spec ? json_get(spec, "podSelector") : NULL;
	if (sel && (!json_is(sel, JSON_OBJECT) || sel->u.object.n)) {
		agent_diag_set(diag,
			       "NetworkPolicy.networking.k8s.io \"%s\" is invalid: spec.podSelector: a host policy "
			       "(namespace " AGENT_HOSTFW_NAMESPACE ") selects the node: it must be {}",
			       flowsdn_policy_name(pol));
		err = -FLOWSDN_E_POLICY_INVALID;
	} else if (flowsdn_policy_types(pol) & (1u << FLOWSDN_POLICY_EGRESS)) {
		agent_diag_set(diag,
			       "NetworkPolicy.networking.k8s.io \"%s\" is invalid: spec.policyTypes: a host policy "
			       "(namespace " AGENT_HOSTFW_NAMESPACE ") judges what arrives on the uplinks: Ingress only",
			       flowsdn_policy_name(pol));
		err = -FLOWSDN_E_POLICY_INVALID;
	}
	json_free(root);
	return err;
}

/* Parses @json as the policy @ns/@name. */
static int pol_parse(const char *ns, const char *name, const char *json, size_t len, struct flowsdn_policy **ret,
		     struct diag *diag)
{
	struct flowsdn_diag *d = NULL;
	int tier, err;

	err = tier_of(json, len, name, &tier, diag);
	if (err < 0)
		return err;
	err = flowsdn_diag_new(&d);
	if (err < 0)
		return err;
	{
		FLOWSDN_OPTS(flowsdn_policy_parse_opts, o, .default_namespace = ns, .tier = tier);

		err = flowsdn_policy_parse(json, len, &o, ret, d);
	}
	if (err < 0) {
		char msg[1024];

		flowsdn_policy_diag_format(d, msg, sizeof(msg));
		agent_diag_set(diag, "%s", msg);
	} else if (!strcmp(ns, AGENT_HOSTFW_NAMESPACE) && host_policy_check(json, len, *ret, diag) < 0) {
		flowsdn_policy_free(*ret);
		*ret = NULL;
		err = -FLOWSDN_E_POLICY_INVALID;
	} else if (strcmp(flowsdn_policy_namespace(*ret), ns) || strcmp(flowsdn_policy_name(*ret), name)) {
		agent_diag_set(diag, "the object is %s/%s, the path names %s/%s", flowsdn_policy_namespace(*ret),
			       flowsdn_policy_name(*ret), ns, name);
		flowsdn_policy_free(*ret);
		*ret = NULL;
		err = -FLOWSDN_E_POLICY_INVALID;
	}
	flowsdn_diag_free(d);
	return err;
}

int agent_policy_put(struct agent_policy *p, const char *ns, const char *name, const char *json, size_t len,
		     struct diag *diag)
{
	struct flowsdn_policy *pol = NULL, *old = NULL;
	char *copy = NULL, *cns = NULL, *cname = NULL;
	bool saved = true;
	ssize_t at;
	int err;

	if (!p || !ns || !name || !json)
		return -EINVAL;
	err = pol_parse(ns, name, json, len, &pol, diag);
	if (err < 0)
		return err;
	pthread_mutex_lock(&p->lock);
	at = pol_find(p, ns, name);
	if (at >= 0 && pol_parse(ns, name, p->pols[at].json, p->pols[at].len, &old, NULL) < 0)
		old = NULL;
	copy = strndup(json, len);
	if (at < 0) {
		struct pobj *t = reallocarray(p->pols, p->n_pols + 1, sizeof(*t));

		if (t)
			p->pols = t;
		cns = strdup(ns);
		cname = strdup(name);
		if (!t || !cns || !cname)
			copy = (free(copy), NULL);
	}
	if (!copy) {
		free(cns);
		free(cname);
		flowsdn_policy_free(pol);
		flowsdn_policy_free(old);
		err = -ENOMEM;
		goto out;
	}
	err = flowsdn_policy_db_apply(p->db, pol);
	if (err == 0)
		err = apply(p, diag);
	if (err != -FLOWSDN_E_POLICY_CAPACITY && err != -ENOMEM && p->persist) {
		char key[320];
		int e2;

		snprintf(key, sizeof(key), "%s/%s", ns, name);
		e2 = agent_pstore_put(p->store, AGENT_PSTORE_POLICY, key, json, len);
		if (e2 < 0) {
			agent_diag_set(diag, "saving the policy: %s (the previous one stays)", strerror(-e2));
			err = e2;
			saved = false;
		}
	}
	if (err == -FLOWSDN_E_POLICY_CAPACITY || err == -ENOMEM || !saved) {
		/* Undo: the previous object (or none) comes back. */
		if (old)
			(void)flowsdn_policy_db_apply(p->db, TAKE_PTR(old));
		else
			(void)flowsdn_policy_db_delete(p->db, ns, name);
		(void)apply(p, NULL);
		free(copy);
		free(cns);
		free(cname);
		goto out;
	}
	if (at < 0) {
		p->pols[p->n_pols++] = (struct pobj){ cns, cname, copy, len };
	} else {
		free(p->pols[at].json);
		p->pols[at].json = copy;
		p->pols[at].len = len;
	}
out:
	flowsdn_policy_free(old);
	pthread_mutex_unlock(&p->lock);
	return err;
}

int agent_policy_delete(struct agent_policy *p, const char *ns, const char *name, struct diag *diag)
{
	ssize_t at;
	int err;

	if (!p || !ns || !name)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	at = pol_find(p, ns, name);
	if (at < 0) {
		agent_diag_set(diag, "networkpolicies.networking.k8s.io \"%s\" not found", name);
		err = -FLOWSDN_E_POLICY_NOT_FOUND;
		goto out;
	}
	err = flowsdn_policy_db_delete(p->db, ns, name);
	if (err == 0) {
		char key[320];
		int e2;

		free(p->pols[at].ns);
		free(p->pols[at].name);
		free(p->pols[at].json);
		p->pols[at] = p->pols[--p->n_pols];
		err = apply(p, diag);
		snprintf(key, sizeof(key), "%s/%s", ns, name);
		e2 = p->persist ? agent_pstore_delete(p->store, AGENT_PSTORE_POLICY, key) : 0;
		if (e2 < 0 && err == 0) {
			agent_diag_set(diag, "removing the saved policy: %s (it is out of force until the agent restarts)",
				       strerror(-e2));
			err = e2;
		}
	}
out:
	pthread_mutex_unlock(&p->lock);
	return err;
}

int agent_policy_get(struct agent_policy *p, const char *ns, const char *name, char **ret_json)
{
	struct json_writer *w;
	int err = 0;

	if (!p || !ret_json)
		return -EINVAL;
	w = json_writer_new(0);
	pthread_mutex_lock(&p->lock);
	if (ns) {
		ssize_t at = pol_find(p, ns, name ? name : "");

		if (at < 0)
			err = -FLOWSDN_E_POLICY_NOT_FOUND;
		else
			jw_raw(w, p->pols[at].json, p->pols[at].len);
	} else {
		jw_object_open(w);
		jw_key(w, "items");
		jw_array_open(w);
		for (size_t i = 0; i < p->n_pols; i++)
			jw_raw(w, p->pols[i].json, p->pols[i].len);
		jw_array_close(w);
		jw_object_close(w);
	}
	pthread_mutex_unlock(&p->lock);
	if (err < 0) {
		json_writer_free(w);
		return err;
	}
	return json_writer_finish(w, ret_json, NULL);
}

/* ------------------------------------------------------------ namespaces */

int agent_policy_namespace_put(struct agent_policy *p, const char *name, const char *json, size_t len,
			       struct diag *diag)
{
	struct json_value *root = NULL;
	const struct json_value *labels;
	struct flowsdn_policy_label *lv = NULL;
	struct nsobj n = { 0 };
	struct json_error je = { 0 };
	int err;

	if (!p || !name || !json)
		return -EINVAL;
	err = json_parse(json, len, NULL, &root, &je);
	if (err < 0) {
		agent_diag_set(diag, "namespace body: %s (line %u, column %u)", je.message, je.line, je.column);
		return -FLOWSDN_E_AGENT_REFUSED;
	}
	labels = json_is(root, JSON_OBJECT) ? json_get(root, "labels") : NULL;
	if (!json_is(root, JSON_OBJECT) || root->u.object.n > (labels ? 1u : 0u) ||
	    (labels && !json_is(labels, JSON_OBJECT))) {
		agent_diag_set(diag, "namespace body: must be {\"labels\": {\"key\": \"value\", ...}}");
		err = -FLOWSDN_E_AGENT_REFUSED;
		goto out;
	}
	n.n = labels ? labels->u.object.n : 0;
	n.name = strdup(name);
	n.keys = calloc(n.n + 1, sizeof(char *));
	n.values = calloc(n.n + 1, sizeof(char *));
	lv = calloc(n.n + 1, sizeof(*lv));
	if (!n.name || !n.keys || !n.values || !lv) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n.n; i++) {
		const struct json_member *m = &labels->u.object.members[i];
		const char *v;

		if (json_get_string(m->value, &v) < 0) {
			agent_diag_set(diag, "labels.%s: must be a string", m->key);
			err = -FLOWSDN_E_AGENT_REFUSED;
			goto out;
		}
		n.keys[i] = strdup(m->key);
		n.values[i] = strdup(v);
		if (!n.keys[i] || !n.values[i]) {
			err = -ENOMEM;
			goto out;
		}
		lv[i] = (struct flowsdn_policy_label){ n.keys[i], n.values[i] };
	}
	pthread_mutex_lock(&p->lock);
	err = flowsdn_policy_db_set_namespace(p->db, name, lv, n.n);
	if (err == -EINVAL) {
		agent_diag_set(diag, "Namespace \"%s\" is invalid: a name or label Kubernetes refuses", name);
		err = -FLOWSDN_E_AGENT_REFUSED;
	}
	if (err == 0) {
		size_t i = 0;

		while (i < p->n_nss && strcmp(p->nss[i].name, name))
			i++;
		if (i == p->n_nss) {
			struct nsobj *t = reallocarray(p->nss, p->n_nss + 1, sizeof(*t));

			if (!t) {
				err = -ENOMEM;
			} else {
				p->nss = t;
				p->n_nss++;
			}
		} else {
			ns_clear(&p->nss[i]);
		}
		if (err == 0) {
			p->nss[i] = n;
			n = (struct nsobj){ 0 };
			err = apply(p, diag);
		}
		if (err == 0 && p->persist) {
			err = agent_pstore_put(p->store, AGENT_PSTORE_NAMESPACE, name, json, len);
			if (err < 0)
				agent_diag_set(diag, "saving the namespace: %s (its labels are in force until the agent restarts)",
					       strerror(-err));
		}
	}
	pthread_mutex_unlock(&p->lock);
out:
	ns_clear(&n);
	free(lv);
	json_free(root);
	return err;
}

int agent_policy_namespace_delete(struct agent_policy *p, const char *name, struct diag *diag)
{
	int err = -FLOWSDN_E_POLICY_NOT_FOUND;

	if (!p || !name)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_nss; i++) {
		if (strcmp(p->nss[i].name, name))
			continue;
		/* Back to the implicit namespace (its name label only). */
		err = flowsdn_policy_db_set_namespace(p->db, name, NULL, 0);
		ns_clear(&p->nss[i]);
		p->nss[i] = p->nss[--p->n_nss];
		if (err == 0)
			err = apply(p, diag);
		if (err == 0 && p->persist)
			err = agent_pstore_delete(p->store, AGENT_PSTORE_NAMESPACE, name);
		break;
	}
	if (err == -FLOWSDN_E_POLICY_NOT_FOUND)
		agent_diag_set(diag, "namespaces \"%s\" not found", name);
	pthread_mutex_unlock(&p->lock);
	return err;
}

int agent_policy_namespaces(struct agent_policy *p, char **ret_json)
{
	struct json_writer *w;

	if (!p || !ret_json)
		return -EINVAL;
	w = json_writer_new(0);
	pthread_mutex_lock(&p->lock);
	jw_object_open(w);
	jw_key(w, "items");
	jw_array_open(w);
	for (size_t i = 0; i < p->n_nss; i++) {
		jw_object_open(w);
		jw_kv_string(w, "name", p->nss[i].name);
		jw_key(w, "labels");
		jw_object_open(w);
		for (size_t j = 0; j < p->nss[i].n; j++)
			jw_kv_string(w, p->nss[i].keys[j], p->nss[i].values[j]);
		jw_object_close(w);
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
	pthread_mutex_unlock(&p->lock);
	return json_writer_finish(w, ret_json, NULL);
}

/* ------------------------------------------------------------ reports */

int agent_policy_identities(struct agent_policy *p, char **ret_json)
{
	struct json_writer *w;

	if (!p || !ret_json)
		return -EINVAL;
	w = json_writer_new(0);
	pthread_mutex_lock(&p->lock);
	jw_object_open(w);
	jw_key(w, "items");
	jw_array_open(w);
	for (size_t i = 0; i < p->n_eps; i++) {
		const struct pep *e = p->eps[i];
		_cleanup_free_ char *labels = NULL;

		jw_object_open(w);
		jw_kv_uint(w, "endpoint", e->dp.id);
		jw_kv_uint(w, "identity", e->dp.identity);
		jw_kv_string(w, "namespace", e->ns);
		jw_kv_string(w, "name", e->pod);
		if (flowsdn_identity_lookup_id(p->ids, e->dp.identity, &labels) == 0)
			jw_kv_string(w, "labels", labels);
		if (e->in_db)
			jw_kv_uint(w, "references", (uint64_t)flowsdn_identity_refcount(p->ids, e->dp.identity));
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
	pthread_mutex_unlock(&p->lock);
	return json_writer_finish(w, ret_json, NULL);
}

/* One counted policy entry, from the walk of the map. */
struct hit {
	struct flowsdn_policy_key key;
	struct flowsdn_policy_value v;
};

struct hits {
	struct hit *v;
	size_t n, cap;
};

static int hit_collect(const struct flowsdn_policy_key *key, const struct flowsdn_policy_value *value, void *ud)
{
	struct hits *h = ud;

	if (!value->packets)
		return 0;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 256;
		struct hit *t = reallocarray(h->v, cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		h->v = t;
		h->cap = cap;
	}
	h->v[h->n++] = (struct hit){ *key, *value };
	return 0;
}

static int hit_cmp(const void *x, const void *y)
{
	uint32_t a = ((const struct hit *)x)->key.ep_id, b = ((const struct hit *)y)->key.ep_id;

	return a < b ? -1 : a > b;
}

/* The counted entries of policy key id @id (the sorted @h) as "rules". */
static void rules_gen(struct agent_policy *p, struct json_writer *w, const struct hits *h, uint32_t id)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->v[mid].key.ep_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	jw_key(w, "rules");
	jw_array_open(w);
	for (size_t j = lo; j < h->n && h->v[j].key.ep_id == id; j++) {
		const struct hit *x = &h->v[j];
		char name[256];

		jw_object_open(w);
		jw_kv_uint(w, "rule", x->v.rule_id);
		if (flowsdn_policy_db_rule_name(p->db, x->v.rule_id, name, sizeof(name)) >= 0)
			jw_kv_string(w, "name", name);
		jw_kv_string(w, "direction", x->key.direction == FLOWSDN_DIR_INGRESS ? "ingress" : "egress");
		jw_kv_string(w, "verdict", (x->v.flags & FLOWSDN_POLICY_F_DENY) ? "deny" : "allow");
		jw_kv_uint(w, "packets", x->v.packets);
		jw_kv_uint(w, "bytes", x->v.bytes);
		jw_object_close(w);
	}
	jw_array_close(w);
}

/* One walk of the policy map: every counted entry, sorted by key id. */
static int hits_read(struct agent_policy *p, struct hits *h)
{
	int err;

	if (!p->maps)
		return 0;
	err = flowsdn_maps_policy_iterate(p->maps, hit_collect, h);
	if (err < 0)
		return err;
	if (h->n > 1) /* qsort(NULL, 0, ...) is undefined */
		qsort(h->v, h->n, sizeof(*h->v), hit_cmp);
	return 0;
}

int agent_policy_verdicts(struct agent_policy *p, char **ret_json)
{
	struct hits h = { 0 };
	struct json_writer *w;
	int err = 0;

	if (!p || !ret_json)
		return -EINVAL;
	w = json_writer_new(0);
	pthread_mutex_lock(&p->lock);
	/* One walk of the policy map for every endpoint's counted entries. */
	err = hits_read(p, &h);
	if (err < 0)
		goto out;
	jw_object_open(w);
	jw_key(w, "endpoints");
	jw_array_open(w);
	for (size_t i = 0; i < p->n_eps; i++) {
		const struct pep *e = p->eps[i];
		struct flowsdn_endpoint_counters c = { 0 };
		unsigned int gen = 0;

		if (p->maps) {
			if (flowsdn_maps_endpoint_counters(p->maps, e->dp.id, &c) < 0)
				memset(&c, 0, sizeof(c));
			if (flowsdn_maps_policy_generation(p->maps, e->dp.id, &e->dp.addrs[0], &gen) < 0)
				gen = 0;
		}
		jw_object_open(w);
		jw_kv_uint(w, "endpoint", e->dp.id);
		jw_kv_uint(w, "allowIngress", c.allow_ingress);
		jw_kv_uint(w, "denyIngress", c.deny_ingress);
		jw_kv_uint(w, "allowEgress", c.allow_egress);
		jw_kv_uint(w, "denyEgress", c.deny_egress);
		rules_gen(p, w, &h, FLOWSDN_POLICY_KEY_ID(e->dp.id, gen));
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
out:
	pthread_mutex_unlock(&p->lock);
	free(h.v);
	if (err < 0) {
		json_writer_free(w);
		return err;
	}
	return json_writer_finish(w, ret_json, NULL);
}

static void decision_gen(struct agent_policy *p, struct json_writer *w, const struct flowsdn_policy_decision *d)
{
	char name[256];

	jw_kv_string(w, "verdict", d->verdict == FLOWSDN_POLICY_VERDICT_DENY ? "deny" : "allow");
	jw_kv_string(w, "reason", flowsdn_policy_reason_name(d->reason));
	if (d->reason != FLOWSDN_POLICY_REASON_RULE)
		return;
	jw_kv_uint(w, "rule", d->rule_id);
	if (flowsdn_policy_db_rule_name(p->db, d->rule_id, name, sizeof(name)) >= 0)
		jw_kv_string(w, "name", name);
	if (d->tier <= FLOWSDN_POLICY_TIER_PROTECT)
		jw_kv_string(w, "tier", tier_words[d->tier]);
}

int agent_policy_lookup(struct agent_policy *p, uint32_t ep_id, int direction, const struct flowsdn_addr *peer,
			uint8_t protocol, uint16_t port, char **ret_json, struct diag *diag)
{
	FLOWSDN_OPTS(flowsdn_policy_decision, dc);
	FLOWSDN_OPTS(flowsdn_policy_decision, ds);
	struct json_writer *w;
	struct pep *e;
	int err;

	if (!p || !peer || !ret_json)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	e = pep_find(p, ep_id);
	if (!e || !e->in_db) {
		agent_diag_set(diag, e ? "endpoint %u is outside policy (no namespace): it allows everything"
				       : "no endpoint %u has labels", ep_id);
		pthread_mutex_unlock(&p->lock);
		return -FLOWSDN_E_AGENT_NOT_FOUND;
	}
	err = flowsdn_policy_db_lookup_decision(p->db, e->db_id, direction, peer, protocol, port, &dc);
	if (err == 0)
		err = flowsdn_policy_db_simulate_decision(p->db, e->db_id, direction, peer, protocol, port, &ds);
	if (err < 0) {
		agent_diag_set(diag, "endpoint %u: %s", ep_id, flowsdn_strerror(err));
		pthread_mutex_unlock(&p->lock);
		return err;
	}
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_uint(w, "endpoint", ep_id);
	decision_gen(p, w, &dc);
	jw_key(w, "simulated");
	jw_object_open(w);
	decision_gen(p, w, &ds);
	jw_object_close(w);
	jw_object_close(w);
	pthread_mutex_unlock(&p->lock);
	return json_writer_finish(w, ret_json, NULL);
}

/* ------------------------------------------------------------ host firewall */

/* Switches the host's entries, freshly compiled, with the mode p->host_mode. */
static int host_switch_locked(struct agent_policy *p, struct diag *diag)
{
	struct flowsdn_policy_map_entry *set = NULL;
	size_t n = 0;
	uint32_t flags = 0;
	/* Whatever is not compiled yet first (the host's entries among it). */
	int err = apply(p, diag);

	if (err < 0)
		return err;
	err = entries_of(p, p->host, &set, &n, &flags);
	if (err == 0)
		err = install(p, p->host, set, n, flags);
	if (err < 0)
		agent_diag_set(diag, "the host firewall's switch failed (the previous state stays): %s",
			       flowsdn_strerror(err));
	return err;
}

int agent_policy_hostfw_body_parse(const char *body, size_t len, unsigned int *ret_mode, struct diag *diag)
{
	struct json_value *root = NULL;
	const char *word;
	unsigned int mode;
	int err = 0;

	if (json_parse(body, len, NULL, &root, NULL) < 0 || !json_is(root, JSON_OBJECT) || root->u.object.n != 1 ||
	    !(word = json_string_value(json_get(root, "mode")))) {
		agent_diag_set(diag, "body: must be {\"mode\": " AGENT_HOSTFW_MODE_EXPECTED "}");
		err = -FLOWSDN_E_AGENT_REFUSED;
	} else if (agent_hostfw_mode_parse(word, &mode) < 0) {
		agent_diag_set(diag, "mode: \"%.32s\" is not " AGENT_HOSTFW_MODE_EXPECTED, word);
		err = -FLOWSDN_E_AGENT_REFUSED;
	} else {
		*ret_mode = mode;
	}
	json_free(root);
	return err;
}

int agent_policy_hostfw_set_mode(struct agent_policy *p, unsigned int mode, struct diag *diag)
{
	unsigned int old;
	int err;

	if (!p || mode > FLOWSDN_HOSTFW_ENFORCE)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	old = p->host_mode;
	p->host_mode = mode;
	err = host_switch_locked(p, diag);
	if (err == 0 && p->persist) {
		char body[48];
		int n = snprintf(body, sizeof(body), "{\"mode\":\"%s\"}", agent_hostfw_mode_name(mode));

		err = agent_pstore_put(p->store, AGENT_PSTORE_HOSTFW, "mode", body, (size_t)n);
		if (err < 0) {
			agent_diag_set(diag, "saving the host firewall's mode: %s (the previous one stays)", strerror(-err));
			p->host_mode = old;
			(void)host_switch_locked(p, NULL);
		}
	}
	if (err < 0)
		p->host_mode = old;
	pthread_mutex_unlock(&p->lock);
	return err;
}

int agent_policy_hostfw(struct agent_policy *p, bool verdicts, char **ret_json)
{
	struct flowsdn_hostfw_counters c = { 0 };
	struct flowsdn_hostfw_state st = { 0 };
	struct hits h = { 0 };
	struct json_writer *w;
	int err = 0;

	if (!p || !ret_json)
		return -EINVAL;
	w = json_writer_new(0);
	pthread_mutex_lock(&p->lock);
	if (p->maps) {
		err = flowsdn_maps_hostfw_state(p->maps, &st);
		if (err == 0)
			err = flowsdn_maps_hostfw_counters(p->maps, &c);
		if (err == 0 && verdicts)
			err = hits_read(p, &h);
		if (err < 0)
			goto out;
	}
	jw_object_open(w);
	jw_kv_string(w, "mode", agent_hostfw_mode_name(p->host_mode));
	jw_kv_string(w, "namespace", AGENT_HOSTFW_NAMESPACE);
	jw_kv_uint(w, "endpoint", FLOWSDN_HOSTFW_EP_ID);
	jw_kv_uint(w, "identity", p->host->dp.identity);
	/* Whether a host policy selects the node (else everything is allowed). */
	{
		const struct flowsdn_policy_entry *ce;
		unsigned int flags = 0;
		size_t n = 0;

		if (flowsdn_policy_db_entries(p->db, p->host->db_id, &ce, &n, &flags) < 0)
			flags = 0;
		jw_kv_bool(w, "selected", (flags & FLOWSDN_POLICY_ENFORCE_INGRESS) != 0);
	}
	jw_kv_uint(w, "entries", p->host->n_inst);
	jw_kv_bool(w, "datapath", p->maps != NULL);
	jw_kv_uint(w, "allowed", c.allowed);
	jw_kv_uint(w, "denied", c.denied);
	jw_kv_uint(w, "audited", c.audited);
	jw_kv_uint(w, "tracked", c.tracked);
	if (verdicts)
		rules_gen(p, w, &h, FLOWSDN_POLICY_KEY_ID(FLOWSDN_HOSTFW_EP_ID, st.policy_gen & 1));
	jw_object_close(w);
out:
	pthread_mutex_unlock(&p->lock);
	free(h.v);
	if (err < 0) {
		json_writer_free(w);
		return err;
	}
	return json_writer_finish(w, ret_json, NULL);
}

/* ------------------------------------------------------------ configuration */

int agent_policy_load(struct agent_policy *p, const struct agent_config *cfg, struct diag *diag)
{
	int err = 0;

	if (!p || !cfg)
		return -EINVAL;
	p->persist = false;
	err = agent_policy_hostfw_set_mode(p, cfg->host_firewall, diag);
	for (size_t i = 0; i < cfg->n_namespaces && err == 0; i++) {
		struct json_value *root = NULL;
		const struct json_value *labels;
		const char *name;
		char *body = NULL;
		struct json_writer *w;

		err = json_parse(cfg->namespaces[i], strlen(cfg->namespaces[i]), NULL, &root, NULL);
		if (err < 0 || !(name = json_string_value(json_get(root, "name")))) {
			json_free(root);
			err = -EINVAL;
			break;
		}
		labels = json_get(root, "labels");
		w = json_writer_new(0);
		jw_object_open(w);
		if (labels) {
			jw_key(w, "labels");
			jw_value(w, labels);
		}
		jw_object_close(w);
		err = json_writer_finish(w, &body, NULL);
		if (err == 0)
			err = agent_policy_namespace_put(p, name, body, strlen(body), diag);
		if (err < 0) {
			char msg[512];

			snprintf(msg, sizeof(msg), "%s", agent_diag_message(diag));
			agent_diag_set(diag, "namespaces[%zu] (%s): %s", i, name, msg);
		}
		free(body);
		json_free(root);
	}
	for (size_t i = 0; i < cfg->n_policies && err == 0; i++) {
		struct json_value *root = NULL;
		const struct json_value *md;
		const char *ns, *name;

		err = json_parse(cfg->policies[i], strlen(cfg->policies[i]), NULL, &root, NULL);
		md = err == 0 ? json_get(root, "metadata") : NULL;
		ns = md ? json_string_value(json_get(md, "namespace")) : NULL;
		name = md ? json_string_value(json_get(md, "name")) : NULL;
		if (!ns || !name) {
			agent_diag_set(diag, "policies[%zu]: metadata.namespace and metadata.name are required", i);
			json_free(root);
			err = -FLOWSDN_E_POLICY_INVALID;
			break;
		}
		err = agent_policy_put(p, ns, name, cfg->policies[i], strlen(cfg->policies[i]), diag);
		if (err < 0) {
			char msg[1024];

			snprintf(msg, sizeof(msg), "%s", agent_diag_message(diag));
			agent_diag_set(diag, "policies[%zu]: %s", i, msg);
		}
		json_free(root);
	}
	p->persist = true;
	return err;
}

/* ------------------------------------------------------------ restore */

static int restore_one(void *ctx, enum agent_pstore_kind kind, const char *key, const char *obj, size_t len,
		       struct diag *diag)
{
	struct agent_policy *p = ctx;

	switch (kind) {
	case AGENT_PSTORE_NAMESPACE:
		return agent_policy_namespace_put(p, key, obj, len, diag);
	case AGENT_PSTORE_POLICY: {
		const char *slash = strchr(key, '/');
		char ns[64];

		snprintf(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
		return agent_policy_put(p, ns, slash + 1, obj, len, diag);
	}
	case AGENT_PSTORE_ENDPOINT: {
		struct agent_policy_meta_buf b;
		struct json_value *root = NULL;
		const struct json_value *ep;
		const char *cid;
		struct saved_ep *t, se = { .id = (uint32_t)strtoul(key, NULL, 10) };
		struct json_writer *w;
		int err;

		if (json_parse(obj, len, NULL, &root, NULL) < 0 ||
		    !(cid = json_string_value(json_get(root, "containerID"))) || !(ep = json_get(root, "endpoint"))) {
			json_free(root);
			agent_diag_set(diag, "not {\"containerID\": ..., \"endpoint\": {...}}");
			return -FLOWSDN_E_AGENT_STATE;
		}
		w = json_writer_new(0);
		jw_value(w, ep);
		err = json_writer_finish(w, &se.body, NULL);
		se.container_id = strdup(cid);
		json_free(root);
		if (err == 0 && !se.container_id)
			err = -ENOMEM;
		if (err == 0)
			err = agent_policy_meta_parse(se.body, strlen(se.body), &b, diag);
		agent_policy_meta_buf_clear(&b);
		t = err == 0 ? reallocarray(p->saved, p->n_saved + 1, sizeof(*t)) : NULL;
		if (err == 0 && !t)
			err = -ENOMEM;
		if (err < 0) {
			free(se.body);
			free(se.container_id);
			return err;
		}
		p->saved = t;
		p->saved[p->n_saved++] = se;
		return 0;
	}
	case AGENT_PSTORE_HOSTFW: {
		unsigned int mode;
		int err = agent_policy_hostfw_body_parse(obj, len, &mode, diag);

		return err < 0 ? err : agent_policy_hostfw_set_mode(p, mode, diag);
	}
	default:
		return -EINVAL;
	}
}

int agent_policy_restore(struct agent_policy *p)
{
	int total = 0;

	if (!p)
		return -EINVAL;
	/* Applied as they were saved: not saved again. */
	p->persist = false;
	for (int k = AGENT_PSTORE_NAMESPACE; k < AGENT_PSTORE_KIND_MAX_; k++) {
		int r = agent_pstore_load(p->store, (enum agent_pstore_kind)k, restore_one, p);

		if (r < 0) {
			p->persist = true;
			return r;
		}
		total += r;
	}
	p->persist = true;
	pthread_mutex_lock(&p->lock);
	if (p->n_pols || p->n_nss || p->n_saved)
		pr_info("agent: policy state restored: %zu namespaces, %zu policies, labels of %zu endpoints%s", p->n_nss,
			p->n_pols, p->n_saved, total ? " (damaged files quarantined, see above)" : "");
	pthread_mutex_unlock(&p->lock);
	return total;
}

int agent_policy_endpoint_restore(struct agent_policy *p, const struct flowsdn_endpoint *ep,
				  const char *container_id)
{
	struct agent_policy_meta_buf b;
	struct diag *d = NULL;
	int err = 0;

	if (!p || !ep || !container_id)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_saved; i++) {
		struct saved_ep *se = &p->saved[i];

		if (se->id != ep->id || strcmp(se->container_id, container_id))
			continue;
		if (diag_new(&d) < 0)
			d = NULL;
		err = agent_policy_meta_parse(se->body, strlen(se->body), &b, d);
		if (err == 0)
			err = endpoint_set_locked(p, ep, container_id, &b.meta, false, d);
		agent_policy_meta_buf_clear(&b);
		if (err < 0)
			pr_err("agent: endpoint %u: restoring its labels: %s", ep->id,
			       d && agent_diag_message(d)[0] ? agent_diag_message(d) : flowsdn_strerror(err));
		else
			se->claimed = true;
		diag_free(d);
		break;
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

void agent_policy_restore_done(struct agent_policy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_saved; i++) {
		char key[16];

		if (!p->saved[i].claimed) {
			snprintf(key, sizeof(key), "%u", p->saved[i].id);
			(void)agent_pstore_delete(p->store, AGENT_PSTORE_ENDPOINT, key);
		}
		free(p->saved[i].container_id);
		free(p->saved[i].body);
	}
	free(p->saved);
	p->saved = NULL;
	p->n_saved = 0;
	/* The restored endpoints took their own references. */
	for (size_t i = 0; i < p->n_prev_ids; i++)
		for (uint32_t r = 0; r < p->prev_ids[i].refcount; r++)
			if (flowsdn_identity_release(p->ids, p->prev_ids[i].id) < 0)
				break;
	free(p->prev_ids);
	p->prev_ids = NULL;
	p->n_prev_ids = 0;
	/* The host's entries in force are this agent's before the scrub. */
	if (!p->host_switched && host_switch_locked(p, NULL) < 0)
		pr_err("agent: the host firewall keeps the previous agent's rules and mode");
	if (p->maps) {
		size_t removed = 0;

		if (flowsdn_maps_policy_scrub(p->maps, &removed) == 0 && removed)
			pr_debug("agent: %zu policy entries of the previous agent removed", removed);
	}
	pthread_mutex_unlock(&p->lock);
}
