/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-agent's Kubernetes mode, the node half (agent/k8s.h): Nodes
 * (this node's PodCIDRSelected event; the direct routes to every other
 * node, planned with their conflicts, installed and pruned), Pods on this
 * node (endpoint metadata, the pod-networks annotation, EndpointCreated
 * and IPAllocationFailed events) and the routes' kernel seam.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/common.h>
#include <flowsdn/ipam.h>
#include <flowsdn/netlink.h>

#include "agent-api.h"
#include "core.h"
#include "diag.h"
#include "json.h"
#include "k8s-int.h"
#include "k8s.h"
#include "log.h"
#include "policy.h"

/* ------------------------------------------------------------ kernel seam */

static int kernel_list(void *ctx, struct flowsdn_prefix **ret_dst, struct flowsdn_addr **ret_gw, bool **ret_ours,
		       size_t *ret_n)
{
	struct flowsdn_route *v = NULL;
	struct flowsdn_prefix *d = NULL;
	struct flowsdn_addr *g = NULL;
	bool *o = NULL;
	size_t n = 0;
	int r;

	(void)ctx;
	r = flowsdn_netlink_route_list(0, &v, &n, NULL);
	if (r < 0)
		return r;
	if (n && (!(d = calloc(n, sizeof(*d))) || !(g = calloc(n, sizeof(*g))) || !(o = calloc(n, sizeof(*o))))) {
		free(d);
		free(g);
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		d[i] = v[i].dst;
		g[i] = v[i].gateway;
		o[i] = v[i].protocol == FLOWSDN_NETLINK_RTPROT;
	}
	free(v);
	*ret_dst = d;
	*ret_gw = g;
	*ret_ours = o;
	*ret_n = n;
	return 0;
}

static int kernel_apply(void *ctx, bool add, const struct flowsdn_prefix *dst, const struct flowsdn_addr *gw)
{
	(void)ctx;
	return flowsdn_netlink_gateway_route(add, dst, gw, NULL);
}

const struct agent_k8s_route_ops agent_k8s_route_ops_kernel = {
	.list = kernel_list,
	.apply = kernel_apply,
};

/* ------------------------------------------------------------ writes */

static void write_free(struct agent_k8s_write *w)
{
	if (!w)
		return;
	free(w->ns);
	free(w->name);
	free(w->what);
	free(w->key);
	free(w->value);
	free(w->body);
	free(w);
}

/* Queues @w (taken) to be sent after the state's lock (under it). */
static void write_queue(struct agent_k8s *k, struct agent_k8s_write *w)
{
	if (!k->writes_tail)
		k->writes_tail = &k->writes;
	*k->writes_tail = w;
	k->writes_tail = &w->next;
}

static struct agent_k8s_write *write_new(bool patch, const char *ns, const char *name, const char *what, char *body)
{
	struct agent_k8s_write *w = calloc(1, sizeof(*w));

	if (!w) {
		free(body);
		return NULL;
	}
	w->patch = patch;
	w->body = body;
	w->ns = ns ? strdup(ns) : NULL;
	w->name = name ? strdup(name) : NULL;
	w->what = strdup(what);
	if ((ns && !w->ns) || (name && !w->name) || !w->what) {
		write_free(w);
		return NULL;
	}
	return w;
}

/* An Event to POST (nothing without a writer client). */
static void send_event(struct agent_k8s *k, const char *kind, const char *ns, const char *name, const char *uid,
		       const char *type, const char *reason, const char *action, const char *note)
{
	struct agent_k8s_write *w;
	char *body = NULL, what[160];

	if (!k->writer || agent_k8s_event_body(k->node_name, kind, ns, name, uid, type, reason, action, note, &body) < 0)
		return;
	snprintf(what, sizeof(what), "event %s on %s %s", reason, kind, name ? name : "");
	w = write_new(false, ns ? ns : "default", NULL, what, body);
	if (w)
		write_queue(k, w);
}

void agent_k8s_writes_flush(struct agent_k8s *k)
{
	struct agent_k8s_write *list;

	pthread_mutex_lock(&k->write_lock);
	pthread_mutex_lock(&k->lock);
	list = k->writes;
	k->writes = NULL;
	k->writes_tail = &k->writes;
	pthread_mutex_unlock(&k->lock);
	while (list) {
		struct agent_k8s_write *w = list;
		struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = AGENT_K8S_FIELD_MANAGER };
		struct k8s_status st = { 0 };
		int r;

		list = w->next;
		if (w->patch) {
			struct k8s_ref ref = { .version = "v1", .resource = "pods", .namespace = w->ns, .name = w->name };

			r = k8s_patch(k->writer, &ref, K8S_PATCH_STRATEGIC, w->body, strlen(w->body), &wo, NULL, &st);
		} else {
			struct k8s_ref ref = { .group = "events.k8s.io", .version = "v1", .resource = "events",
					       .namespace = w->ns };

			r = k8s_create(k->writer, &ref, w->body, strlen(w->body), &wo, NULL, &st);
		}
		if (r < 0)
			pr_warn("kubernetes: %s: %s", w->what, st.message ? st.message : strerror(-r));
		k8s_status_clear(&st);
		pthread_mutex_lock(&k->lock);
		if (r == 0 && w->patch) {
			struct agent_k8s_pod *pod = k8s_map_get(&k->pods, w->key);

			if (pod) {
				free(pod->annotation);
				pod->annotation = w->value;
				w->value = NULL;
			}
			k->stats.annotations++;
		} else if (r == 0) {
			k->stats.events++;
		}
		pthread_mutex_unlock(&k->lock);
		write_free(w);
	}
	pthread_mutex_unlock(&k->write_lock);
}

/* ------------------------------------------------------------ routes */

static bool pool_overlap(const struct agent_k8s *k, const struct flowsdn_prefix *p, char *why, size_t size)
{
	char buf[FLOWSDN_PREFIX_STRLEN];

	for (size_t i = 0; i < k->n_pools; i++)
		if (flowsdn_prefix_overlaps(&k->pools[i], p)) {
			flowsdn_prefix_format(&k->pools[i], buf, sizeof(buf));
			snprintf(why, size, "overlaps this node's pool %s", buf);
			return true;
		}
	return false;
}

static int node_cmp(const void *a, const void *b)
{
	return strcmp(((const struct agent_k8s_node *)a)->name, ((const struct agent_k8s_node *)b)->name);
}

static void routes_free(struct agent_k8s_route *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].node);
	free(v);
}

/* Recomputes the routes from the nodes; installs what is new, removes
 * what no node asks for any more (and, once the nodes are listed, every
 * route of ours in the kernel that no node names: a node that left while
 * the agent was down). */
static void routes_replan(struct agent_k8s *k)
{
	struct flowsdn_prefix *kd = NULL;
	struct flowsdn_addr *kg = NULL;
	bool *ko = NULL;
	size_t kn = 0, n = 0, cap = 0;
	struct agent_k8s_route *plan = NULL;

	if (k->route_ops && k->route_ops->list(k->route_ctx, &kd, &kg, &ko, &kn) < 0)
		kn = 0;
	if (k->n_nodes > 1)
		qsort(k->nodes, k->n_nodes, sizeof(*k->nodes), node_cmp);
	for (size_t i = 0; i < k->n_nodes; i++) {
		const struct agent_k8s_node *nd = &k->nodes[i];

		if (!strcmp(nd->name, k->node_name))
			continue;
		for (size_t c = 0; c < nd->n_cidrs; c++) {
			struct agent_k8s_route *r;
			char buf[FLOWSDN_PREFIX_STRLEN];

			if (n == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct agent_k8s_route *np = realloc(plan, nc * sizeof(*np));

				if (!np)
					goto out;
				plan = np;
				cap = nc;
			}
			r = &plan[n];
			memset(r, 0, sizeof(*r));
			if (!(r->node = strdup(nd->name)))
				goto out;
			n++;
			r->dst = nd->cidrs[c];
			r->state = AGENT_K8S_ROUTE_PLANNED;
			for (size_t a = 0; a < nd->n_addrs && !r->gw.family; a++)
				if (nd->addrs[a].family == r->dst.addr.family)
					r->gw = nd->addrs[a];
			if (!r->gw.family) {
				r->state = AGENT_K8S_ROUTE_CONFLICT;
				snprintf(r->reason, sizeof(r->reason), "node has no InternalIP of the family");
				continue;
			}
			if (pool_overlap(k, &r->dst, r->reason, sizeof(r->reason))) {
				r->state = AGENT_K8S_ROUTE_CONFLICT;
				continue;
			}
			for (size_t j = 0; j + 1 < n; j++)
				if (plan[j].state != AGENT_K8S_ROUTE_CONFLICT && flowsdn_prefix_overlaps(&plan[j].dst, &r->dst)) {
					flowsdn_prefix_format(&plan[j].dst, buf, sizeof(buf));
					snprintf(r->reason, sizeof(r->reason), "overlaps %s of node %s", buf, plan[j].node);
					r->state = AGENT_K8S_ROUTE_CONFLICT;
					break;
				}
			if (r->state == AGENT_K8S_ROUTE_CONFLICT)
				continue;
			for (size_t j = 0; j < kn; j++)
				if (!ko[j] && kd[j].len == r->dst.len && flowsdn_addr_equal(&kd[j].addr, &r->dst.addr)) {
					snprintf(r->reason, sizeof(r->reason), "a route to %s exists that is not flowsdn's",
						 (flowsdn_prefix_format(&r->dst, buf, sizeof(buf)), buf));
					r->state = AGENT_K8S_ROUTE_CONFLICT;
				}
		}
	}
	/* Remove what was installed and is no longer planned as it was. */
	for (size_t i = 0; i < k->n_routes; i++) {
		const struct agent_k8s_route *o = &k->routes[i];
		bool kept = false;

		if (o->state != AGENT_K8S_ROUTE_INSTALLED)
			continue;
		for (size_t j = 0; j < n && !kept; j++)
			if (plan[j].state == AGENT_K8S_ROUTE_PLANNED && plan[j].dst.len == o->dst.len &&
			    flowsdn_addr_equal(&plan[j].dst.addr, &o->dst.addr) && flowsdn_addr_equal(&plan[j].gw, &o->gw)) {
				plan[j].state = AGENT_K8S_ROUTE_INSTALLED;
				kept = true;
			}
		if (!kept && k->route_ops && k->route_ops->apply(k->route_ctx, false, &o->dst, &o->gw) < 0)
			pr_warn("kubernetes: route to node %s could not be removed", o->node);
	}
	/* Ours in the kernel that no node names (pruned once nodes are listed). */
	for (size_t j = 0; k->route_ops && k->listed[AGENT_K8S_NODES] && j < kn; j++) {
		bool named = false;

		if (!ko[j])
			continue;
		for (size_t i = 0; i < n && !named; i++)
			named = plan[i].state != AGENT_K8S_ROUTE_CONFLICT && plan[i].dst.len == kd[j].len &&
				flowsdn_addr_equal(&plan[i].dst.addr, &kd[j].addr);
		if (!named)
			(void)k->route_ops->apply(k->route_ctx, false, &kd[j], &kg[j]);
	}
	for (size_t i = 0; i < n; i++) {
		struct agent_k8s_route *r = &plan[i];
		int err;

		if (r->state != AGENT_K8S_ROUTE_PLANNED || !k->route_ops)
			continue;
		err = k->route_ops->apply(k->route_ctx, true, &r->dst, &r->gw);
		if (err == 0) {
			r->state = AGENT_K8S_ROUTE_INSTALLED;
		} else {
			r->state = AGENT_K8S_ROUTE_CONFLICT;
			snprintf(r->reason, sizeof(r->reason), "%s",
				 err == -EEXIST ? "a route to it exists that is not flowsdn's" : flowsdn_strerror(err));
		}
	}
	for (size_t i = 0; i < n; i++)
		if (plan[i].state == AGENT_K8S_ROUTE_CONFLICT) {
			char buf[FLOWSDN_PREFIX_STRLEN];

			flowsdn_prefix_format(&plan[i].dst, buf, sizeof(buf));
			pr_warn("kubernetes: route %s to node %s not installed: %s", buf, plan[i].node, plan[i].reason);
		}
	routes_free(k->routes, k->n_routes);
	k->routes = plan;
	k->n_routes = n;
	plan = NULL;
	n = 0;
out:
	routes_free(plan, n);
	free(kd);
	free(kg);
	free(ko);
}

static const char *const route_state_words[] = { "planned", "installed", "conflict" };

int agent_k8s_routes_json(struct agent_k8s *k, char **ret_json)
{
	struct json_writer *w;
	char buf[FLOWSDN_PREFIX_STRLEN];

	if (!k || !ret_json)
		return -EINVAL;
	w = json_writer_new(0);
	if (!w)
		return -ENOMEM;
	pthread_mutex_lock(&k->lock);
	jw_object_open(w);
	jw_kv_string(w, "node", k->node_name);
	jw_key(w, "pools");
	jw_array_open(w);
	for (size_t i = 0; i < k->n_pools; i++) {
		flowsdn_prefix_format(&k->pools[i], buf, sizeof(buf));
		jw_string(w, buf);
	}
	jw_array_close(w);
	jw_key(w, "routes");
	jw_array_open(w);
	for (size_t i = 0; i < k->n_routes; i++) {
		const struct agent_k8s_route *r = &k->routes[i];

		jw_object_open(w);
		jw_kv_string(w, "node", r->node);
		flowsdn_prefix_format(&r->dst, buf, sizeof(buf));
		jw_kv_string(w, "destination", buf);
		if (r->gw.family) {
			flowsdn_addr_format(&r->gw, buf, sizeof(buf));
			jw_kv_string(w, "gateway", buf);
		} else {
			jw_key(w, "gateway");
			jw_null(w);
		}
		jw_kv_string(w, "state", route_state_words[r->state]);
		if (r->state == AGENT_K8S_ROUTE_CONFLICT)
			jw_kv_string(w, "reason", r->reason);
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
	pthread_mutex_unlock(&k->lock);
	return json_writer_finish(w, ret_json, NULL);
}

/* ------------------------------------------------------------ nodes */

static int node_read(const struct json_value *obj, struct agent_k8s_node *nd)
{
	const struct json_value *addrs = json_at(obj, "status.addresses");
	char why[128];
	bool fallback = false;

	nd->n_cidrs = 0;
	/* A node without podCIDRs gets no route: its fallback pool is
	 * its own guess, not an allocation the cluster made. */
	if (json_at(obj, "spec.podCIDRs") || k8s_obj_str(obj, "spec.podCIDR")) {
		if (agent_k8s_node_pools(obj, nd->cidrs, AGENT_K8S_MAX_POOLS, &nd->n_cidrs, &fallback, why,
					 sizeof(why)) < 0)
			nd->n_cidrs = 0;
	}
	nd->n_addrs = 0;
	for (size_t i = 0; json_is(addrs, JSON_ARRAY) && i < addrs->u.array.n && nd->n_addrs < 4; i++) {
		const char *type = k8s_obj_str(addrs->u.array.items[i], "type");
		const char *text = k8s_obj_str(addrs->u.array.items[i], "address");

		if (type && !strcmp(type, "InternalIP") && text &&
		    flowsdn_addr_parse(text, strlen(text), &nd->addrs[nd->n_addrs]) == 0)
			nd->n_addrs++;
	}
	return 0;
}

static struct agent_k8s_node *node_find(struct agent_k8s *k, const char *name)
{
	for (size_t i = 0; i < k->n_nodes; i++)
		if (!strcmp(k->nodes[i].name, name))
			return &k->nodes[i];
	return NULL;
}

static void node_remove_at(struct agent_k8s *k, size_t i)
{
	free(k->nodes[i].name);
	k->nodes[i] = k->nodes[--k->n_nodes];
}

int agent_k8s_core_set_pools(void *ctx, const struct flowsdn_prefix *pools, size_t n, struct flowsdn_prefix *ret_pools,
			     size_t max, size_t *ret_n, char *why, size_t why_size)
{
	return agent_core_set_pools(ctx, pools, n, ret_pools, max, ret_n, why, why_size);
}

/* IPAM keeps one bit per address: a podCIDR past its bound (the usual
 * IPv6 /64) is used from its start, as its first /108 (IPv4: /12), which
 * is still the node's own range (@warn: said once, at start). */
static void pools_fit(struct flowsdn_prefix *pools, size_t n, bool warn)
{
	for (size_t i = 0; i < n; i++) {
		unsigned int bits = flowsdn_addr_bits(&pools[i].addr), min_len = bits - 20;

		if (pools[i].len < min_len) {
			char before[FLOWSDN_PREFIX_STRLEN], after[FLOWSDN_PREFIX_STRLEN];

			flowsdn_prefix_format(&pools[i], before, sizeof(before));
			pools[i].len = (uint8_t)min_len;
			flowsdn_prefix_format(&pools[i], after, sizeof(after));
			if (warn)
				pr_warn("kubernetes: podCIDR %s is larger than IPAM's 2^20 addresses: pool %s", before, after);
		}
	}
}

static bool pools_same(const struct flowsdn_prefix *a, size_t na, const struct flowsdn_prefix *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++) {
		bool found = false;

		for (size_t j = 0; j < nb && !found; j++)
			found = flowsdn_prefix_compare(&a[i], &b[j]) == 0;
		if (!found)
			return false;
	}
	return true;
}

static size_t pools_words(char *note, size_t size, size_t len, const char *head, const struct flowsdn_prefix *p,
			  size_t n)
{
	char buf[FLOWSDN_PREFIX_STRLEN];

	for (size_t i = 0; i < n && len < size; i++) {
		flowsdn_prefix_format(&p[i], buf, sizeof(buf));
		len += (size_t)snprintf(note + len, size - len, "%s%s", i ? " " : head, buf);
	}
	return len < size ? len : size - 1;
}

/* This node's podCIDRs as its Node says now: when they differ from the
 * pools in use (the cluster re-allocated them after the agent started),
 * the IPAM gets them (a pool left out drains: its addresses stay with
 * their pods until released, never given again), the routes are planned
 * again against every pool still held, and PodCIDRSelected is sent again.
 * A Node without podCIDRs changes nothing (the fallback pool is only a
 * start-up guess).  Under the state's lock. */
static void own_node(struct agent_k8s *k, const struct json_value *obj, const char *name)
{
	struct flowsdn_prefix np[AGENT_K8S_MAX_POOLS], held[AGENT_K8S_MAX_POOLS];
	size_t nn = 0, nh = 0, len = 0;
	char why[256] = "", note[512] = "";
	bool fallback = false, changed = false;
	const char *uid = k8s_obj_str(obj, "metadata.uid");

	if ((json_at(obj, "spec.podCIDRs") || k8s_obj_str(obj, "spec.podCIDR")) &&
	    agent_k8s_node_pools(obj, np, AGENT_K8S_MAX_POOLS, &nn, &fallback, why, sizeof(why)) == 0 && !fallback &&
	    nn && (pools_fit(np, nn, false), !pools_same(np, nn, k->cidrs, k->n_cidrs))) {
		int r = 0;

		memcpy(held, np, nn * sizeof(*np));
		nh = nn;
		if (k->set_pools)
			r = k->set_pools(k->set_pools_ctx, np, nn, held, AGENT_K8S_MAX_POOLS, &nh, why, sizeof(why));
		len = pools_words(note, sizeof(note), 0, "podCIDRs changed: ", np, nn);
		if (r < 0) {
			pr_warn("kubernetes: node %s: %s; not applied: %s", name, note, why[0] ? why : flowsdn_strerror(r));
			snprintf(note + len, sizeof(note) - len, "; not applied: %s", why[0] ? why : flowsdn_strerror(r));
			send_event(k, "Node", NULL, name, uid, "Warning", "PodCIDRSelected", "Selected", note);
			k->node_event_sent = true;
			memcpy(k->cidrs, np, nn * sizeof(*np)); /* told once; tried again when they change again */
			k->n_cidrs = nn;
			return;
		}
		memcpy(k->cidrs, np, nn * sizeof(*np));
		k->n_cidrs = nn;
		memcpy(k->pools, held, nh * sizeof(*held));
		k->n_pools = nh;
		k->pool_changes++;
		changed = true;
		pr_info("kubernetes: node %s: %s", name, note);
	}
	if (k->node_event_sent && !changed)
		return;
	len = pools_words(note, sizeof(note), 0, "pools ", k->pools, changed ? nn : k->n_pools);
	if (changed && nh > nn)
		pools_words(note, sizeof(note), len, "; draining (addresses in use kept until released) ", k->pools + nn,
			    nh - nn);
	send_event(k, "Node", NULL, name, uid, "Normal", "PodCIDRSelected", "Selected", note[0] ? note : "no pools");
	k->node_event_sent = true;
	/* The caller plans the routes again (against k->pools). */
}

static int node_set(struct agent_k8s *k, const struct json_value *obj, const char *name)
{
	struct agent_k8s_node *nd = node_find(k, name);

	if (!nd) {
		struct agent_k8s_node *nv = realloc(k->nodes, (k->n_nodes + 1) * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		k->nodes = nv;
		nd = &k->nodes[k->n_nodes];
		memset(nd, 0, sizeof(*nd));
		if (!(nd->name = strdup(name)))
			return -ENOMEM;
		k->n_nodes++;
	}
	nd->gen = k->gen[AGENT_K8S_NODES];
	node_read(obj, nd);
	if (!strcmp(name, k->node_name))
		own_node(k, obj, name);
	return 0;
}

/* ------------------------------------------------------------ pods */

static void pod_free(void *p)
{
	struct agent_k8s_pod *pod = p;

	if (!pod)
		return;
	free(pod->key);
	free(pod->uid);
	free(pod->annotation);
	free(pod);
}

struct pod_meta {
	struct agent_policy_meta meta;
	struct flowsdn_policy_label labels[AGENT_POLICY_MAX_LABELS];
	struct flowsdn_policy_named_port ports[AGENT_POLICY_MAX_PORTS];
};

static void pod_meta_read(const struct json_value *obj, struct pod_meta *m)
{
	const struct json_value *labels = json_at(obj, "metadata.labels"), *ctrs = json_at(obj, "spec.containers");

	memset(m, 0, sizeof(*m));
	m->meta.namespace_name = k8s_obj_str(obj, "metadata.namespace");
	m->meta.pod_name = k8s_obj_str(obj, "metadata.name");
	for (size_t i = 0; json_is(labels, JSON_OBJECT) && i < labels->u.object.n &&
			   m->meta.n_labels < AGENT_POLICY_MAX_LABELS; i++)
		if (json_is(labels->u.object.members[i].value, JSON_STRING)) {
			m->labels[m->meta.n_labels].key = labels->u.object.members[i].key;
			m->labels[m->meta.n_labels].value = labels->u.object.members[i].value->u.string.ptr;
			m->meta.n_labels++;
		}
	for (size_t c = 0; json_is(ctrs, JSON_ARRAY) && c < ctrs->u.array.n; c++) {
		const struct json_value *ports = json_get(ctrs->u.array.items[c], "ports");

		for (size_t i = 0; json_is(ports, JSON_ARRAY) && i < ports->u.array.n &&
				   m->meta.n_ports < AGENT_POLICY_MAX_PORTS; i++) {
			const struct json_value *p = ports->u.array.items[i];
			const char *name = k8s_obj_str(p, "name"), *proto = k8s_obj_str(p, "protocol");
			int64_t port;
			struct flowsdn_policy_named_port *np = &m->ports[m->meta.n_ports];

			if (!name || json_get_int64(json_get(p, "containerPort"), &port) < 0 || port < 1 || port > 65535)
				continue;
			np->name = name;
			np->port = (uint16_t)port;
			np->protocol = !proto || !strcmp(proto, "TCP") ? IPPROTO_TCP
				       : !strcmp(proto, "UDP")         ? IPPROTO_UDP
								       : IPPROTO_SCTP;
			m->meta.n_ports++;
		}
	}
	m->meta.labels = m->labels;
	m->meta.ports = m->ports;
}

/* The endpoint of this node holding one of the pod's IPs. */
static bool pod_endpoint(struct agent_k8s *k, const struct json_value *obj, struct agent_api_endpoint *ret)
{
	const struct json_value *ips = json_at(obj, "status.podIPs");
	struct agent_api_endpoint *eps = NULL;
	size_t n = 0;
	bool found = false;

	if (!k->core || !json_is(ips, JSON_ARRAY) || !ips->u.array.n)
		return false;
	if (agent_core_endpoints(k->core, &eps, &n) < 0)
		return false;
	for (size_t i = 0; i < ips->u.array.n && !found; i++) {
		const char *text = k8s_obj_str(ips->u.array.items[i], "ip");
		struct flowsdn_addr a;

		if (!text || flowsdn_addr_parse(text, strlen(text), &a) < 0)
			continue;
		for (size_t e = 0; e < n && !found; e++)
			for (size_t j = 0; j < eps[e].n_addrs && !found; j++)
				if (flowsdn_addr_equal(&eps[e].addrs[j], &a)) {
					*ret = eps[e];
					found = true;
				}
	}
	free(eps);
	return found;
}

/* The pool prefix length of @a (its endpoint's interface has /32 or
 * /128; the annotation tells the pod network). */
static unsigned int pool_len(struct agent_k8s *k, const struct flowsdn_addr *a)
{
	for (size_t i = 0; i < k->n_pools; i++)
		if (flowsdn_prefix_contains_addr(&k->pools[i], a))
			return k->pools[i].len;
	return flowsdn_addr_bits(a);
}

static bool ipam_exhausted(struct agent_k8s *k)
{
	struct flowsdn_ipam_pool_summary pools[AGENT_MAX_POOLS];
	struct flowsdn_ipam_allocation *allocs = NULL;
	size_t np = 0, na = 0;
	bool full = true;

	if (!k->core || agent_core_ipam(k->core, pools, AGENT_MAX_POOLS, &np, &allocs, &na) < 0)
		return false;
	free(allocs);
	for (size_t i = 0; i < np && i < AGENT_MAX_POOLS; i++)
		if (pools[i].pool.addr.family == FLOWSDN_AF_INET && pools[i].free)
			full = false;
	return np && full;
}

static int pod_set(struct agent_k8s *k, const struct json_value *obj, const char *key)
{
	struct agent_k8s_pod *pod = k8s_map_get(&k->pods, key);
	const char *uid = k8s_obj_str(obj, "metadata.uid"), *phase = k8s_obj_str(obj, "status.phase");
	const struct json_value *ann = json_get(json_at(obj, "metadata.annotations"), AGENT_K8S_ANNOTATION);
	const struct json_value *hostnet = json_at(obj, "spec.hostNetwork");
	struct agent_api_endpoint ep;
	struct pod_meta m;
	bool host = false;

	if (hostnet)
		(void)json_get_bool(hostnet, &host);
	if (host)
		return 0;
	if (!pod) {
		pod = calloc(1, sizeof(*pod));
		if (!pod || !(pod->key = strdup(key)) || k8s_map_put(&k->pods, key, pod) < 0) {
			pod_free(pod);
			return -ENOMEM;
		}
	}
	if (uid && (!pod->uid || strcmp(pod->uid, uid))) {
		/* A new pod under the same name. */
		free(pod->uid);
		pod->uid = strdup(uid);
		pod->ep_id = 0;
		pod->event_sent = pod->failure_sent = false;
	}
	pod->gen = k->gen[AGENT_K8S_PODS];
	if (json_is(ann, JSON_STRING) && (!pod->annotation || strcmp(pod->annotation, ann->u.string.ptr))) {
		free(pod->annotation);
		pod->annotation = strdup(ann->u.string.ptr);
	}
	if (!pod_endpoint(k, obj, &ep)) {
		if (!pod->failure_sent && phase && !strcmp(phase, "Pending") && !json_at(obj, "status.podIP") &&
		    ipam_exhausted(k)) {
			send_event(k, "Pod", k8s_obj_str(obj, "metadata.namespace"), k8s_obj_str(obj, "metadata.name"),
				   uid, "Warning", "IPAllocationFailed", "Allocate", "the node's IPv4 pools are full");
			pod->failure_sent = true;
		}
		return 0;
	}
	pod_meta_read(obj, &m);
	{
		struct diag *d = NULL;

		if (diag_new(&d) < 0)
			return -ENOMEM;
		if (agent_core_endpoint_labels(k->core, ep.id, &m.meta, d) < 0)
			pr_warn("kubernetes: pod %s: endpoint %u labels refused: %s", key, ep.id, agent_diag_message(d));
		else
			k->stats.pods_labelled++;
		diag_free(d);
	}
	pod->ep_id = ep.id;
	{
		unsigned int plens[AGENT_API_MAX_ADDRS];
		char *patch = NULL, *value = NULL;

		for (size_t i = 0; i < ep.n_addrs; i++)
			plens[i] = pool_len(k, &ep.addrs[i]);
		if (agent_k8s_pod_networks_patch(ep.ifname, ep.addrs, plens, ep.gateway, ep.n_addrs, &patch, &value) == 0 &&
		    (!pod->annotation || strcmp(pod->annotation, value)) && k->writer) {
			char what[600];
			struct agent_k8s_write *w;

			snprintf(what, sizeof(what), "annotating pod %s", key);
			w = write_new(true, k8s_obj_str(obj, "metadata.namespace"), k8s_obj_str(obj, "metadata.name"), what,
				      patch);
			patch = NULL;
			if (w && (w->key = strdup(key))) {
				w->value = value;
				value = NULL;
				write_queue(k, w);
			} else {
				write_free(w);
			}
		}
		free(patch);
		free(value);
	}
	if (!pod->event_sent) {
		char note[256], a[FLOWSDN_ADDR_STRLEN];
		size_t len = 0;

		len += (size_t)snprintf(note, sizeof(note), "endpoint");
		for (size_t i = 0; i < ep.n_addrs && len < sizeof(note); i++) {
			flowsdn_addr_format(&ep.addrs[i], a, sizeof(a));
			len += (size_t)snprintf(note + len, sizeof(note) - len, " %s", a);
		}
		if (len < sizeof(note))
			snprintf(note + len, sizeof(note) - len, " created on %s (%s ifindex %d)", k->node_name,
				 ep.host_ifname, ep.host_ifindex);
		send_event(k, "Pod", k8s_obj_str(obj, "metadata.namespace"), k8s_obj_str(obj, "metadata.name"), uid,
			   "Normal", "EndpointCreated", "Created", note);
		pod->event_sent = true;
	}
	return 0;
}

static void stale_pod(void *val, void *ctx)
{
	struct agent_k8s *k = ctx;
	struct agent_k8s_pod *pod = val;

	if (pod->gen != k->gen[AGENT_K8S_PODS])
		pod_free(k8s_map_del(&k->pods, pod->key));
}

/* ------------------------------------------------------------ events */

int agent_k8s_node_event(struct agent_k8s *k, enum agent_k8s_kind kind, const struct k8s_event *ev)
{
	char key[512];
	int r = 0;

	pthread_mutex_lock(&k->lock);
	switch (ev->type) {
	case K8S_EVENT_RELIST:
		k->gen[kind]++;
		k->stats.relists++;
		break;
	case K8S_EVENT_SYNCED:
		k->listed[kind] = true;
		if (kind == AGENT_K8S_PODS) {
			k8s_map_each(&k->pods, stale_pod, k);
			break;
		}
		for (size_t i = k->n_nodes; i-- > 0;)
			if (k->nodes[i].gen != k->gen[AGENT_K8S_NODES])
				node_remove_at(k, i);
		routes_replan(k);
		break;
	case K8S_EVENT_ADDED:
	case K8S_EVENT_MODIFIED:
	case K8S_EVENT_DELETED:
		if (!ev->object || k8s_obj_key(ev->object, key, sizeof(key)) < 0)
			break;
		if (kind == AGENT_K8S_PODS) {
			if (ev->type == K8S_EVENT_DELETED)
				pod_free(k8s_map_del(&k->pods, key));
			else
				r = pod_set(k, ev->object, key);
			break;
		}
		if (ev->type == K8S_EVENT_DELETED) {
			for (size_t i = 0; i < k->n_nodes; i++)
				if (!strcmp(k->nodes[i].name, key)) {
					node_remove_at(k, i);
					break;
				}
		} else
			r = node_set(k, ev->object, key);
		/* Routes follow every change once the first list is in. */
		if (k->listed[AGENT_K8S_NODES])
			routes_replan(k);
		break;
	case K8S_EVENT_BOOKMARK:
		break;
	}
	pthread_mutex_unlock(&k->lock);
	agent_k8s_writes_flush(k);
	return r == -ENOMEM ? r : 0;
}

void agent_k8s_node_state_free(struct agent_k8s *k)
{
	while (k->writes) {
		struct agent_k8s_write *w = k->writes;

		k->writes = w->next;
		write_free(w);
	}
	k->writes_tail = &k->writes;
	for (size_t i = 0; i < k->n_nodes; i++)
		free(k->nodes[i].name);
	free(k->nodes);
	k->nodes = NULL;
	k->n_nodes = 0;
	routes_free(k->routes, k->n_routes);
	k->routes = NULL;
	k->n_routes = 0;
	k8s_map_clear(&k->pods, pod_free);
}

int agent_k8s_read_node(struct k8s_client *client, const char *node_name, struct flowsdn_prefix *ret_pools,
			size_t max_pools, size_t *ret_n_pools, bool *ret_fallback, struct flowsdn_addr *ret_addrs,
			size_t max_addrs, size_t *ret_n_addrs, char *why, size_t why_size)
{
	struct k8s_ref ref = { .version = "v1", .resource = "nodes", .name = node_name };
	struct k8s_status st = { 0 };
	struct json_value *node = NULL;
	struct agent_k8s_node nd = { 0 };
	int r;

	if (!client || !node_name || !ret_pools || !ret_n_pools || !ret_n_addrs)
		return -EINVAL;
	r = k8s_get(client, &ref, &node, &st);
	if (r < 0) {
		snprintf(why, why_size, "GET node %s: %s", node_name, st.message ? st.message : strerror(-r));
		k8s_status_clear(&st);
		return r;
	}
	r = agent_k8s_node_pools(node, ret_pools, max_pools, ret_n_pools, ret_fallback, why, why_size);
	if (r == 0)
		pools_fit(ret_pools, *ret_n_pools, true);
	if (r == 0) {
		node_read(node, &nd);
		*ret_n_addrs = 0;
		for (size_t i = 0; i < nd.n_addrs && i < max_addrs; i++)
			ret_addrs[(*ret_n_addrs)++] = nd.addrs[i];
	}
	json_free(node);
	return r;
}
