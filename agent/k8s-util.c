/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Leaf helpers of the agent's Kubernetes mode (agent/k8s-int.h,
 * agent/k8s.h): the string-keyed hash table, object field access, and the
 * pure builders (service ids, node pools, Event bodies, the pod-networks
 * annotation patch).  Calls no other agent/k8s*.c file.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "id-hash.h"
#include "json.h"
#include "k8s-int.h"

/* ------------------------------------------------------------ hash table */

static uint64_t str_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

void *k8s_map_get(const struct k8s_map *m, const char *key)
{
	if (!m->n_buckets)
		return NULL;
	for (struct k8s_map_node *n = m->buckets[str_hash(key) & (m->n_buckets - 1)]; n; n = n->next)
		if (!strcmp(n->key, key))
			return n->val;
	return NULL;
}

static int map_grow(struct k8s_map *m)
{
	size_t nb = m->n_buckets ? m->n_buckets * 2 : 64;
	struct k8s_map_node **b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_buckets; i++)
		for (struct k8s_map_node *n = m->buckets[i], *next; n; n = next) {
			size_t at = str_hash(n->key) & (nb - 1);

			next = n->next;
			n->next = b[at];
			b[at] = n;
		}
	free(m->buckets);
	m->buckets = b;
	m->n_buckets = nb;
	return 0;
}

/* Adds @key -> @val (the key copied); @key must not be there. */
int k8s_map_put(struct k8s_map *m, const char *key, void *val)
{
	struct k8s_map_node *n;
	size_t at;

	if ((m->n + 1) * 2 > m->n_buckets && map_grow(m) < 0)
		return -ENOMEM;
	n = malloc(sizeof(*n));
	if (!n || !(n->key = strdup(key))) {
		free(n);
		return -ENOMEM;
	}
	at = str_hash(key) & (m->n_buckets - 1);
	n->val = val;
	n->next = m->buckets[at];
	m->buckets[at] = n;
	m->n++;
	return 0;
}

/* Removes @key; returns its value (NULL when absent). */
void *k8s_map_del(struct k8s_map *m, const char *key)
{
	if (!m->n_buckets)
		return NULL;
	for (struct k8s_map_node **pp = &m->buckets[str_hash(key) & (m->n_buckets - 1)]; *pp; pp = &(*pp)->next) {
		struct k8s_map_node *n = *pp;
		void *val = n->val;

		if (strcmp(n->key, key))
			continue;
		*pp = n->next;
		free(n->key);
		free(n);
		m->n--;
		return val;
	}
	return NULL;
}

/* Calls @fn on every value; @fn may delete the entry it is given. */
void k8s_map_each(struct k8s_map *m, void (*fn)(void *val, void *ctx), void *ctx)
{
	for (size_t i = 0; i < m->n_buckets; i++)
		for (struct k8s_map_node *n = m->buckets[i], *next; n; n = next) {
			next = n->next;
			fn(n->val, ctx);
		}
}

void k8s_map_clear(struct k8s_map *m, void (*free_fn)(void *val))
{
	for (size_t i = 0; i < m->n_buckets; i++)
		for (struct k8s_map_node *n = m->buckets[i], *next; n; n = next) {
			next = n->next;
			if (free_fn)
				free_fn(n->val);
			free(n->key);
			free(n);
		}
	free(m->buckets);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------ objects */

const char *k8s_obj_str(const struct json_value *obj, const char *path)
{
	const struct json_value *v = obj ? json_at(obj, path) : NULL;

	return json_is(v, JSON_STRING) ? v->u.string.ptr : NULL;
}

int k8s_obj_key(const struct json_value *obj, char *buf, size_t size)
{
	const char *ns = k8s_obj_str(obj, "metadata.namespace"), *name = k8s_obj_str(obj, "metadata.name");
	int n;

	if (!name)
		return -EINVAL;
	n = ns ? snprintf(buf, size, "%s/%s", ns, name) : snprintf(buf, size, "%s", name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* ------------------------------------------------------------ builders */

/* Two FNV-1a 64 lanes with different bases over "UID/PROTOCOL/PORT": the
 * id only has to be stable and unlikely to collide among a cluster's
 * Services (not secret). */
int agent_k8s_service_id(const char *uid, const char *protocol, unsigned int port, char ret[36])
{
	char port_text[16];
	const char *parts[] = { "flowsdn-k8s-service-id/1", uid ? uid : "", protocol ? protocol : "", port_text };
	unsigned char h[16];
	int r;

	/* Each part whole and preceded by its length: no two (uid, protocol,
	 * port) share an id, however long the uid an API server sends. */
	snprintf(port_text, sizeof(port_text), "%u", port);
	r = id_hash_parts(parts, sizeof(parts) / sizeof(parts[0]), h, sizeof(h));
	if (r < 0)
		return r;
	memcpy(ret, "fs-", 3);
	sodium_bin2hex(ret + 3, 33, h, sizeof(h));
	return 0;
}

int agent_k8s_node_pools(const struct json_value *node, struct flowsdn_prefix *ret_pools, size_t max, size_t *ret_n,
			 bool *ret_fallback, char *ret_why, size_t why_size)
{
	const struct json_value *cidrs = json_at(node, "spec.podCIDRs"), *addrs = json_at(node, "status.addresses");
	const char *one = k8s_obj_str(node, "spec.podCIDR");
	struct flowsdn_prefix out[AGENT_K8S_MAX_POOLS];
	size_t n = 0;

	if (!node || !ret_pools || !ret_n || !max)
		return -EINVAL;
	if (json_is(cidrs, JSON_ARRAY) && cidrs->u.array.n) {
		for (size_t i = 0; i < cidrs->u.array.n && n < AGENT_K8S_MAX_POOLS && n < max; i++) {
			const struct json_value *c = cidrs->u.array.items[i];

			if (!json_is(c, JSON_STRING) || flowsdn_prefix_parse(c->u.string.ptr, c->u.string.len, NULL, &out[n]) < 0) {
				if (ret_why)
					snprintf(ret_why, why_size, "spec.podCIDRs[%zu] is not a CIDR", i);
				return -EINVAL;
			}
			n++;
		}
	} else if (one) {
		if (flowsdn_prefix_parse(one, strlen(one), NULL, &out[0]) < 0) {
			if (ret_why)
				snprintf(ret_why, why_size, "spec.podCIDR \"%.64s\" is not a CIDR", one);
			return -EINVAL;
		}
		n = 1;
	}
	if (n) {
		memcpy(ret_pools, out, n * sizeof(*out));
		*ret_n = n;
		if (ret_fallback)
			*ret_fallback = false;
		return 0;
	}
	/* No podCIDR: 10.<last byte of the InternalIP>.0.0/16. */
	for (size_t i = 0; json_is(addrs, JSON_ARRAY) && i < addrs->u.array.n; i++) {
		const struct json_value *a = addrs->u.array.items[i];
		const char *type = k8s_obj_str(a, "type"), *text = k8s_obj_str(a, "address");
		struct flowsdn_addr ip;
		char buf[32];

		if (!type || strcmp(type, "InternalIP") || !text || flowsdn_addr_parse(text, strlen(text), &ip) < 0 ||
		    ip.family != FLOWSDN_AF_INET)
			continue;
		snprintf(buf, sizeof(buf), "10.%u.0.0/16", ip.bytes[3]);
		if (flowsdn_prefix_parse(buf, strlen(buf), NULL, &ret_pools[0]) < 0)
			return -EINVAL;
		*ret_n = 1;
		if (ret_fallback)
			*ret_fallback = true;
		return 0;
	}
	if (ret_why)
		snprintf(ret_why, why_size, "the node has no podCIDR and no IPv4 InternalIP");
	return -ENOENT;
}

int agent_k8s_event_body(const char *node_name, const char *kind, const char *ns, const char *name, const char *uid,
			 const char *type, const char *reason, const char *action, const char *note, char **ret_json)
{
	struct k8s_event_about ab = {
		.kind = kind, .name = name, .namespace = ns, .uid = uid, .type = type, .reason = reason,
		.action = action, .note = note, .reporting_controller = "flowsdn.io/agent",
		.reporting_instance = node_name,
		/* An Event about a Pod names the node it happened on. */
		.related_kind = ns ? "Node" : NULL, .related_name = ns ? node_name : NULL,
	};

	if (!node_name)
		return -EINVAL;
	return k8s_event_body(&ab, ret_json);
}

int agent_k8s_pod_networks_patch(const char *ifname, const struct flowsdn_addr *addrs, const unsigned int *plens,
				 const struct flowsdn_addr *gateways, size_t n, char **ret_patch, char **ret_value)
{
	struct json_writer *w = json_writer_new(0), *p = NULL;
	char *value = NULL, buf[FLOWSDN_ADDR_STRLEN + 8];
	int r;

	if (!w)
		return -ENOMEM;
	if (!ifname || (n && (!addrs || !plens || !gateways)) || !ret_patch) {
		json_writer_free(w);
		return -EINVAL;
	}
	jw_array_open(w);
	jw_object_open(w);
	jw_kv_string(w, "name", "default");
	jw_kv_string(w, "interface", ifname);
	jw_key(w, "ips");
	jw_array_open(w);
	for (size_t i = 0; i < n; i++) {
		size_t l;

		flowsdn_addr_format(&addrs[i], buf, FLOWSDN_ADDR_STRLEN);
		l = strlen(buf);
		snprintf(buf + l, sizeof(buf) - l, "/%u", plens[i]);
		jw_string(w, buf);
	}
	jw_array_close(w);
	jw_key(w, "gateways");
	jw_array_open(w);
	for (size_t i = 0; i < n; i++) {
		flowsdn_addr_format(&gateways[i], buf, sizeof(buf));
		jw_string(w, buf);
	}
	jw_array_close(w);
	jw_object_close(w);
	jw_array_close(w);
	r = json_writer_finish(w, &value, NULL);
	if (r < 0)
		return r;
	p = json_writer_new(0);
	if (!p) {
		free(value);
		return -ENOMEM;
	}
	jw_object_open(p);
	jw_key(p, "metadata");
	jw_object_open(p);
	jw_key(p, "annotations");
	jw_object_open(p);
	jw_kv_string(p, AGENT_K8S_ANNOTATION, value);
	jw_object_close(p);
	jw_object_close(p);
	jw_object_close(p);
	r = json_writer_finish(p, ret_patch, NULL);
	if (r == 0 && ret_value)
		*ret_value = value;
	else
		free(value);
	return r;
}
