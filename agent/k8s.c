/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-agent's Kubernetes mode (agent/k8s.h): the state kept per kind,
 * the translation of Services and EndpointSlices into agent services, of
 * NetworkPolicies and Namespaces into the policy path, and the relist
 * bookkeeping.  Nodes, routes and Pods are in agent/k8s-node.c; the pure
 * body builders in agent/k8s-util.c.
 *
 * Objects are kept as the little each translation needs (never the whole
 * JSON), in hash tables keyed "NS/NAME", so that 10,000 Services with
 * 50,000 endpoints stay small and one endpoint change touches one
 * Service's bodies.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/common.h>

#include "diag.h"
#include "json.h"
#include "k8s-int.h"
#include "k8s.h"
#include "log.h"
#include "policy.h"
#include "services.h"
#include "util.h"

/* ------------------------------------------------------------ Services */

struct svc_port {
	char *name;           /* "" when unnamed */
	char protocol[4];     /* "TCP", "UDP" */
	uint16_t port, node_port;
	char id[36];
	char *body;           /* the body last PUT, NULL: none */
};

struct svc_obj {
	char *uid;
	bool skip;            /* headless, ExternalName, or no frontends */
	bool node_port;       /* NodePort or LoadBalancer */
	bool itp_local, etp_local, affinity;
	unsigned int affinity_timeout;
	struct flowsdn_addr *ips;      /* clusterIPs */
	size_t n_ips;
	struct flowsdn_addr *ext_ips;  /* externalIPs */
	size_t n_ext_ips;
	struct flowsdn_addr *lb_ips;   /* status.loadBalancer.ingress[].ip */
	size_t n_lb_ips;
	char **ranges;                 /* loadBalancerSourceRanges */
	size_t n_ranges;
	struct svc_port *ports;
	size_t n_ports;
};

struct slice_ep {
	struct flowsdn_addr addr;      /* the first address (as kube-proxy) */
	bool active, terminating;
	char *node;                    /* nodeName, or NULL */
};

struct slice_port {
	char *name;
	char protocol[4];
	uint16_t port;
};

struct slice_obj {
	char *key;                     /* NS/NAME of the slice */
	char *group;                   /* NS/SERVICE */
	unsigned int gen;
	struct slice_ep *eps;
	size_t n_eps;
	struct slice_port *ports;
	size_t n_ports;
};

/* A Service and the slices that name it. */
struct svc_group {
	char *key;
	struct svc_obj *svc;           /* NULL while only slices name it */
	unsigned int gen;              /* relist generation the Service was seen in */
	struct slice_obj **slices;
	size_t n_slices;
	/* ids PUT for this group that no port produces any more are deleted:
	 * the ports keep theirs. */
	bool dirty;
};

static void svc_obj_free(struct svc_obj *s)
{
	if (!s)
		return;
	free(s->uid);
	free(s->ips);
	free(s->ext_ips);
	free(s->lb_ips);
	for (size_t i = 0; i < s->n_ranges; i++)
		free(s->ranges[i]);
	free(s->ranges);
	for (size_t i = 0; i < s->n_ports; i++) {
		free(s->ports[i].name);
		free(s->ports[i].body);
	}
	free(s->ports);
	free(s);
}

static void slice_obj_free(struct slice_obj *s)
{
	if (!s)
		return;
	free(s->key);
	free(s->group);
	for (size_t i = 0; i < s->n_eps; i++)
		free(s->eps[i].node);
	free(s->eps);
	for (size_t i = 0; i < s->n_ports; i++)
		free(s->ports[i].name);
	free(s->ports);
	free(s);
}

static void group_free(void *p)
{
	struct svc_group *g = p;

	if (!g)
		return;
	svc_obj_free(g->svc);
	free(g->slices);
	free(g->key);
	free(g);
}

/* Addresses of the string array @arr (those that do not parse skipped). */
static int addrs_read(const struct json_value *arr, const char *member, struct flowsdn_addr **ret, size_t *ret_n)
{
	struct flowsdn_addr *v;
	size_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!json_is(arr, JSON_ARRAY) || !arr->u.array.n)
		return 0;
	v = calloc(arr->u.array.n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < arr->u.array.n; i++) {
		const struct json_value *it = arr->u.array.items[i];

		if (member)
			it = json_get(it, member);
		if (json_is(it, JSON_STRING) &&
		    flowsdn_addr_parse(it->u.string.ptr, it->u.string.len, &v[n]) == 0)
			n++;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static bool port_number(const struct json_value *v, uint16_t *ret)
{
	int64_t x;

	if (!v || json_get_int64(v, &x) < 0 || x < 1 || x > 65535)
		return false;
	*ret = (uint16_t)x;
	return true;
}

static int svc_parse(const struct json_value *obj, struct svc_obj **ret)
{
	struct svc_obj *s = calloc(1, sizeof(*s));
	const struct json_value *spec = json_get(obj, "spec"), *ports, *v;
	const char *type = k8s_obj_str(obj, "spec.type"), *cip = k8s_obj_str(obj, "spec.clusterIP");
	const char *uid = k8s_obj_str(obj, "metadata.uid");
	int r = -ENOMEM;

	if (!s)
		return -ENOMEM;
	/* The ids of its ports are hashed from it: a Service without one
	 * is skipped (with a warning), not taken for a lack of memory. */
	if (!uid || !uid[0]) {
		free(s);
		return -EINVAL;
	}
	s->uid = strdup(uid);
	if (!s->uid)
		goto fail;
	s->skip = (type && !strcmp(type, "ExternalName")) || (cip && !strcmp(cip, "None"));
	s->node_port = type && (!strcmp(type, "NodePort") || !strcmp(type, "LoadBalancer"));
	s->itp_local = (v = json_get(spec, "internalTrafficPolicy")) && json_is(v, JSON_STRING) &&
		       !strcmp(v->u.string.ptr, "Local");
	s->etp_local = (v = json_get(spec, "externalTrafficPolicy")) && json_is(v, JSON_STRING) &&
		       !strcmp(v->u.string.ptr, "Local");
	s->affinity = (v = json_get(spec, "sessionAffinity")) && json_is(v, JSON_STRING) &&
		      !strcmp(v->u.string.ptr, "ClientIP");
	s->affinity_timeout = AGENT_SVC_DEFAULT_AFFINITY;
	if ((v = json_at(obj, "spec.sessionAffinityConfig.clientIP.timeoutSeconds"))) {
		int64_t t;

		if (json_get_int64(v, &t) == 0 && t >= 1 && t <= 86400)
			s->affinity_timeout = (unsigned int)t;
	}
	v = json_get(spec, "clusterIPs");
	if (!json_is(v, JSON_ARRAY) && cip) {
		/* Older objects: clusterIP alone. */
		s->ips = calloc(1, sizeof(*s->ips));
		if (!s->ips)
			goto fail;
		if (flowsdn_addr_parse(cip, strlen(cip), &s->ips[0]) == 0)
			s->n_ips = 1;
	} else if ((r = addrs_read(v, NULL, &s->ips, &s->n_ips)) < 0)
		goto fail;
	if ((r = addrs_read(json_get(spec, "externalIPs"), NULL, &s->ext_ips, &s->n_ext_ips)) < 0 ||
	    (r = addrs_read(json_at(obj, "status.loadBalancer.ingress"), "ip", &s->lb_ips, &s->n_lb_ips)) < 0)
		goto fail;
	r = -ENOMEM;
	v = json_get(spec, "loadBalancerSourceRanges");
	if (json_is(v, JSON_ARRAY) && v->u.array.n) {
		s->ranges = calloc(v->u.array.n, sizeof(*s->ranges));
		if (!s->ranges)
			goto fail;
		for (size_t i = 0; i < v->u.array.n; i++) {
			const struct json_value *it = v->u.array.items[i];
			struct flowsdn_prefix p;

			if (!json_is(it, JSON_STRING) || flowsdn_prefix_parse(it->u.string.ptr, it->u.string.len, NULL, &p) < 0)
				continue;
			if (!(s->ranges[s->n_ranges++] = strdup(it->u.string.ptr)))
				goto fail;
		}
	}
	ports = json_get(spec, "ports");
	if (json_is(ports, JSON_ARRAY) && ports->u.array.n) {
		s->ports = calloc(ports->u.array.n, sizeof(*s->ports));
		if (!s->ports)
			goto fail;
		for (size_t i = 0; i < ports->u.array.n; i++) {
			const struct json_value *p = ports->u.array.items[i];
			const char *proto = k8s_obj_str(p, "protocol"), *name = k8s_obj_str(p, "name");
			struct svc_port *sp = &s->ports[s->n_ports];

			if (!proto)
				proto = "TCP";
			/* The agent's datapath balances TCP and UDP. */
			if (strcmp(proto, "TCP") && strcmp(proto, "UDP"))
				continue;
			if (!port_number(json_get(p, "port"), &sp->port))
				continue;
			(void)port_number(json_get(p, "nodePort"), &sp->node_port);
			snprintf(sp->protocol, sizeof(sp->protocol), "%s", proto);
			if (!(sp->name = strdup(name ? name : "")))
				goto fail;
			if (agent_k8s_service_id(s->uid, sp->protocol, sp->port, sp->id) < 0) {
				free(sp->name);
				sp->name = NULL;
				goto fail;
			}
			s->n_ports++;
		}
	}
	*ret = s;
	return 0;
fail:
	svc_obj_free(s);
	return r;
}

static int slice_parse(const struct json_value *obj, const char *key, struct slice_obj **ret)
{
	struct slice_obj *s = calloc(1, sizeof(*s));
	const char *ns = k8s_obj_str(obj, "metadata.namespace");
	/* json_at() takes dots as separators: the label is read by key. */
	const struct json_value *label = json_get(json_at(obj, "metadata.labels"), "kubernetes.io/service-name");
	const char *svc = json_is(label, JSON_STRING) ? label->u.string.ptr : NULL;
	const struct json_value *eps = json_get(obj, "endpoints"), *ports = json_get(obj, "ports");
	char gkey[512];

	if (!s)
		return -ENOMEM;
	if (!ns || !svc) {
		/* Not a Service's slice: kept (for its relist bookkeeping) but
		 * in no group. */
		svc = NULL;
	} else {
		snprintf(gkey, sizeof(gkey), "%s/%s", ns, svc);
	}
	if (!(s->key = strdup(key)) || (svc && !(s->group = strdup(gkey))))
		goto fail;
	if (json_is(eps, JSON_ARRAY) && eps->u.array.n) {
		s->eps = calloc(eps->u.array.n, sizeof(*s->eps));
		if (!s->eps)
			goto fail;
		for (size_t i = 0; i < eps->u.array.n; i++) {
			const struct json_value *e = eps->u.array.items[i], *a = json_get(e, "addresses"), *c;
			struct slice_ep *se = &s->eps[s->n_eps];
			bool ready = true, serving = true, terminating = false;
			const char *node = k8s_obj_str(e, "nodeName");

			if (!json_is(a, JSON_ARRAY) || !a->u.array.n || !json_is(a->u.array.items[0], JSON_STRING) ||
			    flowsdn_addr_parse(a->u.array.items[0]->u.string.ptr, a->u.array.items[0]->u.string.len,
					       &se->addr) < 0)
				continue;
			c = json_get(e, "conditions");
			/* Absent conditions are unknown: ready and serving count
			 * as true, terminating as false (the API's rules). */
			if (json_get(c, "ready"))
				(void)json_get_bool(json_get(c, "ready"), &ready);
			if (json_get(c, "serving"))
				(void)json_get_bool(json_get(c, "serving"), &serving);
			else
				serving = ready;
			if (json_get(c, "terminating"))
				(void)json_get_bool(json_get(c, "terminating"), &terminating);
			se->active = ready && !terminating;
			se->terminating = !se->active && serving && terminating;
			if (!se->active && !se->terminating)
				continue;
			if (node && !(se->node = strdup(node)))
				goto fail;
			s->n_eps++;
		}
	}
	if (json_is(ports, JSON_ARRAY) && ports->u.array.n) {
		s->ports = calloc(ports->u.array.n, sizeof(*s->ports));
		if (!s->ports)
			goto fail;
		for (size_t i = 0; i < ports->u.array.n; i++) {
			const struct json_value *p = ports->u.array.items[i];
			const char *proto = k8s_obj_str(p, "protocol"), *name = k8s_obj_str(p, "name");
			struct slice_port *sp = &s->ports[s->n_ports];

			if (!port_number(json_get(p, "port"), &sp->port))
				continue;
			snprintf(sp->protocol, sizeof(sp->protocol), "%s", proto ? proto : "TCP");
			if (!(sp->name = strdup(name ? name : "")))
				goto fail;
			s->n_ports++;
		}
	}
	*ret = s;
	return 0;
fail:
	slice_obj_free(s);
	return -ENOMEM;
}

struct be_text {
	struct flowsdn_addr addr;
	uint16_t port;
	bool terminating;
	const char *node;
};

static int be_cmp(const void *a, const void *b)
{
	const struct be_text *x = a, *y = b;
	int r = flowsdn_addr_compare(&x->addr, &y->addr);

	if (!r)
		r = (int)x->port - (int)y->port;
	/* One backend in two slices: the active entry first (it is kept). */
	return r ? r : (int)x->terminating - (int)y->terminating;
}

static bool be_same(const struct be_text *x, const struct be_text *y)
{
	return x->port == y->port && flowsdn_addr_equal(&x->addr, &y->addr);
}

static void addr_json(struct json_writer *w, const struct flowsdn_addr *a)
{
	char buf[FLOWSDN_ADDR_STRLEN];

	flowsdn_addr_format(a, buf, sizeof(buf));
	jw_string(w, buf);
}

static void frontend_json(struct json_writer *w, const char *type, const struct flowsdn_addr *a, unsigned int port,
			  const char *protocol)
{
	jw_object_open(w);
	jw_kv_string(w, "type", type);
	if (a) {
		jw_key(w, "address");
		addr_json(w, a);
	}
	jw_kv_uint(w, "port", port);
	jw_kv_string(w, "protocol", protocol);
	jw_object_close(w);
}

/* The agent service body of port @sp of group @g (NULL when it has no
 * frontend). */
static int port_body(struct agent_k8s *k, const struct svc_group *g, const struct svc_port *sp, char **ret)
{
	const struct svc_obj *s = g->svc;
	struct be_text *be = NULL;
	size_t n_be = 0, cap = 0;
	struct json_writer *w;
	int r;

	*ret = NULL;
	if (s->skip || (!s->n_ips && !s->n_ext_ips && !s->n_lb_ips && !(s->node_port && sp->node_port)))
		return 0;
	for (size_t i = 0; i < g->n_slices; i++) {
		const struct slice_obj *sl = g->slices[i];
		const struct slice_port *p = NULL;

		for (size_t j = 0; j < sl->n_ports && !p; j++)
			if (!strcmp(sl->ports[j].name, sp->name) && !strcmp(sl->ports[j].protocol, sp->protocol))
				p = &sl->ports[j];
		if (!p)
			continue;
		for (size_t j = 0; j < sl->n_eps; j++) {
			if (n_be == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct be_text *nb = realloc(be, nc * sizeof(*nb));

				if (!nb) {
					free(be);
					return -ENOMEM;
				}
				be = nb;
				cap = nc;
			}
			be[n_be].addr = sl->eps[j].addr;
			be[n_be].port = p->port;
			be[n_be].terminating = sl->eps[j].terminating;
			be[n_be].node = sl->eps[j].node;
			n_be++;
		}
	}
	if (n_be > 1)
		qsort(be, n_be, sizeof(*be), be_cmp);
	w = json_writer_new(0);
	if (!w) {
		free(be);
		return -ENOMEM;
	}
	jw_object_open(w);
	jw_key(w, "frontends");
	jw_array_open(w);
	for (size_t i = 0; i < s->n_ips; i++)
		frontend_json(w, "ClusterIP", &s->ips[i], sp->port, sp->protocol);
	for (size_t i = 0; i < s->n_ext_ips; i++)
		frontend_json(w, "ExternalIP", &s->ext_ips[i], sp->port, sp->protocol);
	for (size_t i = 0; i < s->n_lb_ips; i++)
		frontend_json(w, "LoadBalancer", &s->lb_ips[i], sp->port, sp->protocol);
	if (s->node_port && sp->node_port)
		frontend_json(w, "NodePort", NULL, sp->node_port, sp->protocol);
	jw_array_close(w);
	jw_key(w, "backends");
	jw_array_open(w);
	for (size_t i = 0, kept = 0; i < n_be && kept < AGENT_SVC_MAX_BACKENDS; i++) {
		/* Two slices may list one address (a move between slices). */
		if (i && be_same(&be[i - 1], &be[i]))
			continue;
		jw_object_open(w);
		jw_key(w, "address");
		addr_json(w, &be[i].addr);
		jw_kv_uint(w, "port", be[i].port);
		jw_kv_string(w, "state", be[i].terminating ? "terminating" : "active");
		jw_kv_string(w, "node", be[i].node && strcmp(be[i].node, k->node_name) ? be[i].node : "local");
		jw_object_close(w);
		kept++;
	}
	jw_array_close(w);
	free(be);
	jw_kv_string(w, "internalTrafficPolicy", s->itp_local ? "Local" : "Cluster");
	jw_kv_string(w, "externalTrafficPolicy", s->etp_local ? "Local" : "Cluster");
	jw_key(w, "sessionAffinity");
	jw_object_open(w);
	jw_kv_string(w, "type", s->affinity ? "ClientIP" : "None");
	jw_kv_uint(w, "timeoutSeconds", s->affinity_timeout);
	jw_object_close(w);
	if (s->n_ranges) {
		jw_key(w, "loadBalancerSourceRanges");
		jw_array_open(w);
		for (size_t i = 0; i < s->n_ranges && i < AGENT_SVC_MAX_RANGES; i++)
			jw_string(w, s->ranges[i]);
		jw_array_close(w);
	}
	jw_object_close(w);
	r = json_writer_finish(w, ret, NULL);
	return r;
}

static void svc_put(struct agent_k8s *k, struct svc_port *sp, char *body)
{
	struct json_writer *out = json_writer_new(0);
	struct diag *d = NULL;
	char *ignored = NULL;
	int r;

	if (!out || diag_new(&d) < 0) {
		json_writer_free(out);
		free(body);
		return;
	}
	r = agent_services_put(k->services, sp->id, body, strlen(body), out, d);
	if (r < 0) {
		pr_warn("kubernetes: service %s refused: %s", sp->id, agent_diag_message(d));
		k->stats.svc_refused++;
		free(body);
		/* Forget what went before: the next change tries again. */
		free(sp->body);
		sp->body = NULL;
	} else {
		free(sp->body);
		sp->body = body;
		k->stats.svc_puts++;
	}
	(void)json_writer_finish(out, &ignored, NULL);
	free(ignored);
	diag_free(d);
}

static void svc_delete_id(struct agent_k8s *k, const char *id)
{
	int r = agent_services_delete(k->services, id, NULL);

	if (r == 0)
		k->stats.svc_deletes++;
}

/* PUTs the bodies of group @g that changed (after the first sync). */
/* A (re)list of Services or EndpointSlices is under way: its changes go
 * out in one batch when it ends. */
static bool batching(const struct agent_k8s *k)
{
	return !k->svc_synced || k->listing[AGENT_K8S_SERVICES] || k->listing[AGENT_K8S_ENDPOINTSLICES];
}

static int group_sync(struct agent_k8s *k, struct svc_group *g)
{
	if (batching(k) || !g->svc)
		return 0;
	for (size_t i = 0; i < g->svc->n_ports; i++) {
		struct svc_port *sp = &g->svc->ports[i];
		char *body = NULL;
		int r = port_body(k, g, sp, &body);

		if (r < 0)
			return r;
		if (!body) {
			if (sp->body) {
				svc_delete_id(k, sp->id);
				free(sp->body);
				sp->body = NULL;
			}
			continue;
		}
		if (sp->body && !strcmp(sp->body, body)) {
			k->stats.svc_unchanged++;
			free(body);
			continue;
		}
		svc_put(k, sp, body);
	}
	return 0;
}

/* Deletes the agent services of @old that @new (may be NULL) no longer has. */
static void svc_drop_ports(struct agent_k8s *k, struct svc_obj *old, struct svc_obj *new)
{
	for (size_t i = 0; old && i < old->n_ports; i++) {
		bool kept = false;

		if (!old->ports[i].body)
			continue;
		for (size_t j = 0; new && j < new->n_ports && !kept; j++)
			if (!strcmp(new->ports[j].id, old->ports[i].id)) {
				/* Carry the body over: unchanged means not PUT. */
				new->ports[j].body = old->ports[i].body;
				old->ports[i].body = NULL;
				kept = true;
			}
		if (!kept)
			svc_delete_id(k, old->ports[i].id);
	}
}

static struct svc_group *group_get(struct agent_k8s *k, const char *key, bool create)
{
	struct svc_group *g = k8s_map_get(&k->groups, key);

	if (g || !create)
		return g;
	g = calloc(1, sizeof(*g));
	if (!g || !(g->key = strdup(key)) || k8s_map_put(&k->groups, key, g) < 0) {
		group_free(g);
		return NULL;
	}
	return g;
}

static void group_maybe_free(struct agent_k8s *k, struct svc_group *g)
{
	if (g->svc || g->n_slices)
		return;
	k8s_map_del(&k->groups, g->key);
	group_free(g);
}

static int service_set(struct agent_k8s *k, const struct json_value *obj, const char *key)
{
	struct svc_group *g = group_get(k, key, true);
	struct svc_obj *s = NULL;
	int r;

	if (!g)
		return -ENOMEM;
	r = svc_parse(obj, &s);
	if (r < 0) {
		if (r == -ENOMEM)
			return r;
		pr_warn("kubernetes: Service %s skipped: %s", key, strerror(-r));
		group_maybe_free(k, g); /* made for it alone: not kept */
		return 0;
	}
	if (!g->svc)
		k->stats.services++;
	svc_drop_ports(k, g->svc, s);
	svc_obj_free(g->svc);
	g->svc = s;
	g->gen = k->gen[AGENT_K8S_SERVICES];
	return group_sync(k, g);
}

static void service_remove(struct agent_k8s *k, struct svc_group *g)
{
	if (!g->svc)
		return;
	svc_drop_ports(k, g->svc, NULL);
	svc_obj_free(g->svc);
	g->svc = NULL;
	k->stats.services--;
	group_maybe_free(k, g);
}

static void group_unlink_slice(struct agent_k8s *k, struct slice_obj *sl, bool sync)
{
	struct svc_group *g = sl->group ? k8s_map_get(&k->groups, sl->group) : NULL;

	if (!g)
		return;
	for (size_t i = 0; i < g->n_slices; i++)
		if (g->slices[i] == sl) {
			g->slices[i] = g->slices[--g->n_slices];
			break;
		}
	if (sync)
		(void)group_sync(k, g);
	group_maybe_free(k, g);
}

static int slice_set(struct agent_k8s *k, const struct json_value *obj, const char *key)
{
	struct slice_obj *sl = NULL, *old;
	struct svc_group *g;
	int r = slice_parse(obj, key, &sl);

	if (r < 0)
		return r;
	sl->gen = k->gen[AGENT_K8S_ENDPOINTSLICES];
	old = k8s_map_del(&k->slices, key);
	if (old) {
		/* The same group: replaced in place, synced once below. */
		bool same = old->group && sl->group && !strcmp(old->group, sl->group);

		group_unlink_slice(k, old, !same);
		slice_obj_free(old);
	} else
		k->stats.slices++;
	r = k8s_map_put(&k->slices, key, sl);
	if (r < 0) {
		slice_obj_free(sl);
		k->stats.slices--;
		return r;
	}
	if (!sl->group)
		return 0;
	g = group_get(k, sl->group, true);
	if (!g)
		return -ENOMEM;
	{
		struct slice_obj **ns = realloc(g->slices, (g->n_slices + 1) * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		g->slices = ns;
		g->slices[g->n_slices++] = sl;
	}
	return group_sync(k, g);
}

static void slice_remove(struct agent_k8s *k, const char *key)
{
	struct slice_obj *sl = k8s_map_del(&k->slices, key);

	if (!sl)
		return;
	group_unlink_slice(k, sl, true);
	slice_obj_free(sl);
	k->stats.slices--;
}

/* Relist ends: what this list did not hold is gone. */
static void stale_service(void *val, void *ctx)
{
	struct agent_k8s *k = ctx;
	struct svc_group *g = val;

	if (g->svc && g->gen != k->gen[AGENT_K8S_SERVICES])
		service_remove(k, g);
}

static void stale_slice(void *val, void *ctx)
{
	struct agent_k8s *k = ctx;
	struct slice_obj *sl = val;

	if (sl->gen != k->gen[AGENT_K8S_ENDPOINTSLICES])
		slice_remove(k, sl->key);
}

/* The end of a list: every group's changed bodies in one
 * agent_services_put_many() (one state write for all, not one journal
 * record each); ports left without a frontend are deleted. */
struct batch {
	struct agent_k8s *k;
	const char **ids;
	char **bodies;
	struct svc_port **ports;
	size_t n, cap;
	int err;
};

static void batch_group_cb(void *val, void *ctx)
{
	struct batch *b = ctx;
	struct svc_group *g = val;

	for (size_t i = 0; !b->err && g->svc && i < g->svc->n_ports; i++) {
		struct svc_port *sp = &g->svc->ports[i];
		char *body = NULL;

		b->err = port_body(b->k, g, sp, &body);
		if (b->err < 0)
			continue;
		if (!body) {
			if (sp->body) {
				svc_delete_id(b->k, sp->id);
				free(sp->body);
				sp->body = NULL;
			}
			continue;
		}
		if (sp->body && !strcmp(sp->body, body)) {
			free(body);
			continue;
		}
		if (b->n == b->cap) {
			size_t nc = b->cap ? b->cap * 2 : 256;
			const char **ni = realloc(b->ids, nc * sizeof(*ni));
			char **nb = ni ? realloc(b->bodies, nc * sizeof(*nb)) : NULL;
			struct svc_port **np = nb ? realloc(b->ports, nc * sizeof(*np)) : NULL;

			if (ni)
				b->ids = ni;
			if (nb)
				b->bodies = nb;
			if (!np) {
				free(body);
				b->err = -ENOMEM;
				return;
			}
			b->ports = np;
			b->cap = nc;
		}
		b->ids[b->n] = sp->id;
		b->bodies[b->n] = body;
		b->ports[b->n] = sp;
		b->n++;
	}
}

static int batch_sync(struct agent_k8s *k)
{
	struct batch b = { .k = k };
	int *errs = NULL, r;

	k8s_map_each(&k->groups, batch_group_cb, &b);
	r = b.err;
	if (r == 0 && b.n && !(errs = calloc(b.n, sizeof(*errs))))
		r = -ENOMEM;
	if (r == 0 && b.n) {
		r = agent_services_put_many(k->services, b.ids, (const char *const *)b.bodies, b.n, errs, NULL);
		if (r < 0)
			pr_warn("kubernetes: saving the services: %s", strerror(-r));
		r = 0;
		for (size_t i = 0; i < b.n; i++) {
			struct svc_port *sp = b.ports[i];

			if (errs[i] < 0) {
				k->stats.svc_refused++;
				free(b.bodies[i]);
				continue;
			}
			free(sp->body);
			sp->body = b.bodies[i];
			k->stats.svc_puts++;
		}
	} else {
		for (size_t i = 0; i < b.n; i++)
			free(b.bodies[i]);
	}
	free(errs);
	free(b.ids);
	free(b.bodies);
	free(b.ports);
	return r;
}

/* ------------------------------------------------------------ NetworkPolicies, Namespaces */

struct text_obj {
	char *text;
	unsigned int gen;
	char *key;
};

static void text_obj_free(void *p)
{
	struct text_obj *t = p;

	if (!t)
		return;
	free(t->text);
	free(t->key);
	free(t);
}

/* @obj as text without metadata.managedFields, resourceVersion and
 * status (what changes without the object changing for us). */
static int policy_text(const struct json_value *obj, char **ret)
{
	struct json_writer *w = json_writer_new(0);

	if (!w)
		return -ENOMEM;
	jw_object_open(w);
	for (size_t i = 0; i < obj->u.object.n; i++) {
		const struct json_member *m = &obj->u.object.members[i];

		if (!strcmp(m->key, "status"))
			continue;
		jw_key(w, m->key);
		if (strcmp(m->key, "metadata") || !json_is(m->value, JSON_OBJECT)) {
			jw_value(w, m->value);
			continue;
		}
		jw_object_open(w);
		for (size_t j = 0; j < m->value->u.object.n; j++) {
			const struct json_member *mm = &m->value->u.object.members[j];

			if (!strcmp(mm->key, "managedFields") || !strcmp(mm->key, "resourceVersion") ||
			    !strcmp(mm->key, "generation"))
				continue;
			jw_key(w, mm->key);
			jw_value(w, mm->value);
		}
		jw_object_close(w);
	}
	jw_object_close(w);
	return json_writer_finish(w, ret, NULL);
}

static int text_obj_set(struct agent_k8s *k, struct k8s_map *m, enum agent_k8s_kind kind, const char *key,
			char *text, bool *ret_changed)
{
	struct text_obj *t = k8s_map_get(m, key);

	*ret_changed = !t || strcmp(t->text, text);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t || !(t->key = strdup(key)) || k8s_map_put(m, key, t) < 0) {
			text_obj_free(t);
			free(text);
			return -ENOMEM;
		}
	}
	free(t->text);
	t->text = text;
	t->gen = k->gen[kind];
	return 0;
}

/* Keeps @text (taken) as @kind's object @key and, when it is new or
 * changed, hands it to @put (agent_policy_put() or _namespace_put());
 * a refusal is logged and counted nowhere else. */
static int text_apply(struct agent_k8s *k, enum agent_k8s_kind kind, const char *key, char *text,
		      int (*put)(struct agent_k8s *k, const char *key, const char *text, struct diag *d),
		      uint64_t *applied)
{
	struct diag *d = NULL;
	bool changed;
	int r = text_obj_set(k, kind == AGENT_K8S_NETWORKPOLICIES ? &k->policies : &k->namespaces, kind, key, text,
			     &changed);

	if (r < 0 || !changed)
		return r;
	if (diag_new(&d) < 0)
		return -ENOMEM;
	if (put(k, key, text, d) < 0)
		pr_warn("kubernetes: %s %s refused: %s", kind == AGENT_K8S_NETWORKPOLICIES ? "NetworkPolicy" : "Namespace",
			key, agent_diag_message(d));
	else
		(*applied)++;
	diag_free(d);
	return 0;
}

/* "NS/NAME" into @ns (size @size) and the name's start. */
static const char *key_split(const char *key, char *ns, size_t size)
{
	const char *slash = strchr(key, '/');

	if (!slash || (size_t)(slash - key) >= size)
		return NULL;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	return slash + 1;
}

static int policy_put_cb(struct agent_k8s *k, const char *key, const char *text, struct diag *d)
{
	char ns[256];
	const char *name = key_split(key, ns, sizeof(ns));

	return name ? agent_policy_put(k->policy, ns, name, text, strlen(text), d) : -EINVAL;
}

static int namespace_put_cb(struct agent_k8s *k, const char *key, const char *text, struct diag *d)
{
	return agent_policy_namespace_put(k->policy, key, text, strlen(text), d);
}

static int policy_set(struct agent_k8s *k, const struct json_value *obj, const char *key)
{
	char *text = NULL;
	int r;

	if (!k8s_obj_str(obj, "metadata.namespace") || !k8s_obj_str(obj, "metadata.name"))
		return 0;
	r = policy_text(obj, &text);
	return r < 0 ? r : text_apply(k, AGENT_K8S_NETWORKPOLICIES, key, text, policy_put_cb, &k->stats.policy_puts);
}

static void policy_remove(struct agent_k8s *k, const char *key)
{
	struct text_obj *t = k8s_map_del(&k->policies, key);
	char ns[256];
	const char *name = t ? key_split(key, ns, sizeof(ns)) : NULL;

	text_obj_free(t);
	if (name && agent_policy_delete(k->policy, ns, name, NULL) == 0)
		k->stats.policy_deletes++;
}

static int namespace_set(struct agent_k8s *k, const struct json_value *obj, const char *key)
{
	const struct json_value *labels = json_at(obj, "metadata.labels");
	struct json_writer *w = json_writer_new(0);
	char *text = NULL;
	int r;

	if (!w)
		return -ENOMEM;
	jw_object_open(w);
	jw_key(w, "labels");
	if (json_is(labels, JSON_OBJECT))
		jw_value(w, labels);
	else {
		jw_object_open(w);
		jw_object_close(w);
	}
	jw_object_close(w);
	r = json_writer_finish(w, &text, NULL);
	return r < 0 ? r : text_apply(k, AGENT_K8S_NAMESPACES, key, text, namespace_put_cb, &k->stats.namespace_puts);
}

static void namespace_remove(struct agent_k8s *k, const char *key)
{
	struct text_obj *t = k8s_map_del(&k->namespaces, key);
	bool had = t != NULL;

	text_obj_free(t);
	if (had && agent_policy_namespace_delete(k->policy, key, NULL) == 0)
		k->stats.namespace_deletes++;
}

struct stale_ctx {
	struct agent_k8s *k;
	enum agent_k8s_kind kind;
};

static void stale_text(void *val, void *ctx)
{
	struct stale_ctx *c = ctx;
	struct text_obj *t = val;
	char key[512];

	if (t->gen == c->k->gen[c->kind])
		return;
	snprintf(key, sizeof(key), "%s", t->key);
	if (c->kind == AGENT_K8S_NETWORKPOLICIES)
		policy_remove(c->k, key);
	else
		namespace_remove(c->k, key);
}

/* ------------------------------------------------------------ events */

int agent_k8s_event(struct agent_k8s *k, enum agent_k8s_kind kind, const struct k8s_event *ev)
{
	char key[512];
	int r = 0;

	if (!k || !ev || kind >= AGENT_K8S_KIND_MAX_)
		return -EINVAL;
	if (kind == AGENT_K8S_NODES || kind == AGENT_K8S_PODS)
		return agent_k8s_node_event(k, kind, ev);
	/* A kind whose model the agent was not given is not followed. */
	if (((kind == AGENT_K8S_SERVICES || kind == AGENT_K8S_ENDPOINTSLICES) && !k->services) ||
	    ((kind == AGENT_K8S_NETWORKPOLICIES || kind == AGENT_K8S_NAMESPACES) && !k->policy))
		return 0;
	pthread_mutex_lock(&k->lock);
	switch (ev->type) {
	case K8S_EVENT_RELIST:
		k->gen[kind]++;
		k->listing[kind] = true;
		k->stats.relists++;
		break;
	case K8S_EVENT_SYNCED:
		/* What the list did not hold is gone (still batched). */
		if (kind == AGENT_K8S_SERVICES)
			k8s_map_each(&k->groups, stale_service, k);
		else if (kind == AGENT_K8S_ENDPOINTSLICES)
			k8s_map_each(&k->slices, stale_slice, k);
		else {
			struct stale_ctx c = { k, kind };

			k8s_map_each(kind == AGENT_K8S_NETWORKPOLICIES ? &k->policies : &k->namespaces, stale_text, &c);
		}
		k->listing[kind] = false;
		k->listed[kind] = true;
		if (kind != AGENT_K8S_SERVICES && kind != AGENT_K8S_ENDPOINTSLICES)
			break;
		/* Both caches full (the first time: every Service goes out
		 * once, with its backends), and no list under way: the
		 * batch. */
		if (k->listed[AGENT_K8S_SERVICES] && k->listed[AGENT_K8S_ENDPOINTSLICES])
			k->svc_synced = true;
		if (!batching(k))
			r = batch_sync(k);
		break;
	case K8S_EVENT_ADDED:
	case K8S_EVENT_MODIFIED:
	case K8S_EVENT_DELETED:
		if (!ev->object || k8s_obj_key(ev->object, key, sizeof(key)) < 0)
			break;
		if (ev->type == K8S_EVENT_DELETED) {
			if (kind == AGENT_K8S_SERVICES) {
				struct svc_group *g = k8s_map_get(&k->groups, key);

				if (g)
					service_remove(k, g);
			} else if (kind == AGENT_K8S_ENDPOINTSLICES)
				slice_remove(k, key);
			else if (kind == AGENT_K8S_NETWORKPOLICIES)
				policy_remove(k, key);
			else
				namespace_remove(k, key);
			break;
		}
		if (kind == AGENT_K8S_SERVICES)
			r = service_set(k, ev->object, key);
		else if (kind == AGENT_K8S_ENDPOINTSLICES)
			r = slice_set(k, ev->object, key);
		else if (kind == AGENT_K8S_NETWORKPOLICIES)
			r = policy_set(k, ev->object, key);
		else
			r = namespace_set(k, ev->object, key);
		break;
	case K8S_EVENT_BOOKMARK:
		break;
	}
	k->stats.agent_services = k->services ? agent_services_count(k->services) : 0;
	pthread_mutex_unlock(&k->lock);
	return r == -ENOMEM ? r : 0;
}

/* ------------------------------------------------------------ lifetime */

int agent_k8s_new(const struct agent_k8s_opts *opts, struct agent_k8s **ret)
{
	struct agent_k8s *k;

	if (!opts || !ret || !util_opts_valid(opts, opts->sz, sizeof(*opts)) || !opts->node_name ||
	    !opts->node_name[0] || (opts->n_pools && !opts->pools) || opts->n_pools > AGENT_K8S_MAX_POOLS)
		return -EINVAL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	pthread_mutex_init(&k->lock, NULL);
	pthread_mutex_init(&k->write_lock, NULL);
	k->writes_tail = &k->writes;
	pthread_cond_init(&k->stop_cond, NULL);
	k->node_name = strdup(opts->node_name);
	if (!k->node_name) {
		agent_k8s_free(k);
		return -ENOMEM;
	}
	k->services = opts->services;
	k->policy = opts->policy;
	k->core = opts->core;
	k->route_ops = opts->route_ops;
	k->route_ctx = opts->route_ctx;
	k->writer = opts->writer;
	k->set_pools = OPTS_GET(opts, set_pools, NULL);
	k->set_pools_ctx = OPTS_GET(opts, set_pools_ctx, NULL);
	if (!k->set_pools && k->core) {
		k->set_pools = agent_k8s_core_set_pools;
		k->set_pools_ctx = k->core;
	}
	if (opts->n_pools) {
		memcpy(k->pools, opts->pools, opts->n_pools * sizeof(*k->pools));
		memcpy(k->cidrs, opts->pools, opts->n_pools * sizeof(*k->cidrs));
	}
	k->n_pools = k->n_cidrs = opts->n_pools;
	*ret = k;
	return 0;
}

void agent_k8s_free(struct agent_k8s *k)
{
	if (!k)
		return;
	agent_k8s_stop(k);
	/* The slices are in k->slices; groups only point at them. */
	k8s_map_clear(&k->groups, group_free);
	k8s_map_clear(&k->slices, (void (*)(void *))slice_obj_free);
	k8s_map_clear(&k->policies, text_obj_free);
	k8s_map_clear(&k->namespaces, text_obj_free);
	agent_k8s_node_state_free(k);
	pthread_cond_destroy(&k->stop_cond);
	pthread_mutex_destroy(&k->lock);
	pthread_mutex_destroy(&k->write_lock);
	free(k->node_name);
	free(k);
}

void agent_k8s_get_stats(struct agent_k8s *k, struct agent_k8s_stats *ret)
{
	pthread_mutex_lock(&k->lock);
	*ret = k->stats;
	ret->services_synced = k->svc_synced;
	ret->agent_services = k->services ? agent_services_count(k->services) : 0;
	pthread_mutex_unlock(&k->lock);
}

/* ------------------------------------------------------------ reflectors */

static const struct k8s_ref kind_refs[AGENT_K8S_KIND_MAX_] = {
	[AGENT_K8S_SERVICES] = { .version = "v1", .resource = "services" },
	[AGENT_K8S_ENDPOINTSLICES] = { .group = "discovery.k8s.io", .version = "v1", .resource = "endpointslices" },
	[AGENT_K8S_NETWORKPOLICIES] = { .group = "networking.k8s.io", .version = "v1", .resource = "networkpolicies" },
	[AGENT_K8S_NAMESPACES] = { .version = "v1", .resource = "namespaces" },
	[AGENT_K8S_NODES] = { .version = "v1", .resource = "nodes" },
	[AGENT_K8S_PODS] = { .version = "v1", .resource = "pods" },
};

struct sync_ctx {
	struct agent_k8s *k;
	enum agent_k8s_kind kind;
};

static int sync_event(const struct k8s_event *ev, void *userdata)
{
	struct sync_ctx *c = userdata;

	return agent_k8s_event(c->k, c->kind, ev);
}

int agent_k8s_sync(struct agent_k8s *k, struct k8s_client *client, enum agent_k8s_kind kind, unsigned int max_streams,
		   struct k8s_status *ret_status)
{
	struct sync_ctx c = { k, kind };
	struct k8s_watch_opts wo = { .sz = sizeof(wo), .max_streams = max_streams };
	char selector[300];

	if (!k || !client || kind >= AGENT_K8S_KIND_MAX_)
		return -EINVAL;
	if (kind == AGENT_K8S_PODS) {
		snprintf(selector, sizeof(selector), "spec.nodeName=%s", k->node_name);
		wo.field_selector = selector;
	}
	return k8s_watch(client, &kind_refs[kind], &wo, sync_event, &c, ret_status);
}

struct thread_arg {
	struct agent_k8s *k;
	enum agent_k8s_kind kind;
};

static void *reflector_thread(void *p)
{
	struct thread_arg *a = p;
	struct agent_k8s *k = a->k;
	enum agent_k8s_kind kind = a->kind;
	struct k8s_status st = { 0 };
	int r;

	free(a);
	/* Until stopped: an error a relist does not cure (403 while the RBAC
	 * is not there yet, 401, a lack of memory) is said and the kind
	 * listed again, 1 s doubling to 60 s later. */
	for (unsigned int backoff_ms = 1000;; backoff_ms = backoff_ms < 60000 ? backoff_ms * 2 : 60000) {
		struct timespec until;
		bool stop;

		r = agent_k8s_sync(k, k->clients[kind], kind, 0, &st);
		if (r == -ECANCELED)
			break;
		pr_err("kubernetes: watch of %s failed: %s%s%s; listing it again in %u s", kind_refs[kind].resource,
		       strerror(-r), st.message ? ": " : "", st.message ? st.message : "", backoff_ms / 1000);
		k8s_status_clear(&st);
		pthread_mutex_lock(&k->lock);
		/* A list cut short holds no batch back. */
		k->listing[kind] = false;
		util_abstime_after_ms(&until, backoff_ms);
		while (!k->stopping && pthread_cond_timedwait(&k->stop_cond, &k->lock, &until) != ETIMEDOUT)
			;
		stop = k->stopping;
		pthread_mutex_unlock(&k->lock);
		if (stop)
			break;
	}
	k8s_status_clear(&st);
	return NULL;
}

int agent_k8s_start(struct agent_k8s *k, const struct k8s_config *cfg)
{
	struct k8s_client_opts co = { .sz = sizeof(co), .user_agent = "flowsdn-agent" };
	int r = 0;

	if (!k || !cfg)
		return -EINVAL;
	pthread_mutex_lock(&k->lock);
	k->stopping = false;
	pthread_mutex_unlock(&k->lock);
	for (int kind = 0; kind < AGENT_K8S_KIND_MAX_; kind++) {
		struct thread_arg *a;

		if (((kind == AGENT_K8S_SERVICES || kind == AGENT_K8S_ENDPOINTSLICES) && !k->services) ||
		    ((kind == AGENT_K8S_NETWORKPOLICIES || kind == AGENT_K8S_NAMESPACES) && !k->policy))
			continue;
		r = k8s_client_new(cfg, &co, &k->clients[kind]);
		if (r < 0)
			break;
		a = malloc(sizeof(*a));
		if (!a) {
			r = -ENOMEM;
			break;
		}
		a->k = k;
		a->kind = (enum agent_k8s_kind)kind;
		r = -pthread_create(&k->threads[kind], NULL, reflector_thread, a);
		if (r < 0) {
			free(a);
			break;
		}
		k->running[kind] = true;
		k->n_running++;
	}
	if (r < 0)
		agent_k8s_stop(k);
	return r;
}

void agent_k8s_stop(struct agent_k8s *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	k->stopping = true;
	pthread_cond_broadcast(&k->stop_cond);
	pthread_mutex_unlock(&k->lock);
	for (int kind = 0; kind < AGENT_K8S_KIND_MAX_; kind++)
		if (k->clients[kind])
			k8s_client_cancel(k->clients[kind]);
	/* A thread may be sending an Event or an annotation. */
	if (k->writer && k->n_running)
		k8s_client_cancel(k->writer);
	for (int kind = 0; kind < AGENT_K8S_KIND_MAX_; kind++) {
		if (k->running[kind])
			pthread_join(k->threads[kind], NULL);
		k->running[kind] = false;
		k->n_running = 0;
		k8s_client_free(k->clients[kind]);
		k->clients[kind] = NULL;
	}
}
