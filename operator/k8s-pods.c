/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Pods of a service in Kubernetes mode (k8s-reconcile.h): the ones
 * the Web Shell execs into and `flashctl logs` reads.
 *
 * A service's Pods are those of its Deployment's template: in the
 * namespace of the organization (op_k8s_org_namespace()), selected by
 * label, never by derived name: app.kubernetes.io/name=ID,
 * flash.heterocloud.io/organization=ORG, flash.heterocloud.io/service=ID
 * (and flash.heterocloud.io/project=PROJECT for a token of a project),
 * with a controlling ownerReference to a ReplicaSet (what a Deployment
 * makes).  Their replica index is their stable order: ascending
 * metadata.creationTimestamp, then name; a Pod keeps its index while no
 * older one goes away.  Ready: phase Running, condition Ready True, no
 * deletionTimestamp.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s-reconcile.h"
#include "names.h"
#include "util.h"

struct pods_acc {
	struct op_k8s_pod *v;
	size_t n;
	bool ready_only;
	int err;
};

bool op_k8s_pod_ready(const struct json_value *pod)
{
	const struct json_value *conds = json_at(pod, "status.conditions");
	const char *phase = json_string_value(json_at(pod, "status.phase"));

	if (json_at(pod, "metadata.deletionTimestamp") || !phase || strcmp(phase, "Running"))
		return false;
	for (size_t i = 0; json_is(conds, JSON_ARRAY) && i < conds->u.array.n; i++) {
		const struct json_value *c = conds->u.array.items[i];
		const char *t = json_string_value(json_get(c, "type")), *s = json_string_value(json_get(c, "status"));

		if (t && s && !strcmp(t, "Ready"))
			return !strcmp(s, "True");
	}
	return false;
}

static bool owned_by_replicaset(const struct json_value *pod)
{
	const struct json_value *refs = json_at(pod, "metadata.ownerReferences");

	for (size_t i = 0; json_is(refs, JSON_ARRAY) && i < refs->u.array.n; i++) {
		const struct json_value *r = refs->u.array.items[i];
		const char *kind = json_string_value(json_get(r, "kind"));
		bool ctl = false;

		if (kind && !strcmp(kind, "ReplicaSet") && json_get_bool(json_get(r, "controller"), &ctl) == 0 && ctl)
			return true;
	}
	return false;
}

static int pod_item(const struct json_value *item, void *userdata)
{
	struct pods_acc *a = userdata;
	const char *name = json_string_value(json_at(item, "metadata.name"));
	const char *created = json_string_value(json_at(item, "metadata.creationTimestamp"));
	struct op_k8s_pod *p;
	bool ready;

	if (!name || !names_dns_subdomain_valid(name) || strlen(name) >= sizeof(p->name) || !owned_by_replicaset(item))
		return 0;
	ready = op_k8s_pod_ready(item);
	if (a->ready_only && !ready)
		return 0;
	p = realloc(a->v, (a->n + 1) * sizeof(*p));
	if (!p) {
		a->err = -ENOMEM;
		return -ENOMEM;
	}
	a->v = p;
	p += a->n++;
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->created, sizeof(p->created), "%s", created && strlen(created) < sizeof(p->created) ? created : "");
	p->ready = ready;
	return 0;
}

static int pod_cmp(const void *a, const void *b)
{
	const struct op_k8s_pod *x = a, *y = b;
	int c = strcmp(x->created, y->created);

	return c ? c : strcmp(x->name, y->name);
}

int op_k8s_service_pods(struct k8s_client *c, const char *org, const char *project, const char *id, bool ready_only,
			struct op_k8s_pod **ret, size_t *ret_n, char *ret_ns, size_t ns_size, struct k8s_status *st)
{
	struct k8s_ref ref = { .version = "v1", .resource = "pods" };
	struct k8s_list_opts lo = { .sz = sizeof(lo) };
	char ns[OP_K8S_NAMESPACE_MAX + 1], sel[1024];
	struct pods_acc a = { .ready_only = ready_only };
	int r;

	if (!c || !org || !id || !ret || !ret_n || !names_service_id_valid(id) ||
	    (project && !names_label_value_valid(project)) || !names_label_value_valid(org))
		return -EINVAL;
	if ((r = op_k8s_org_namespace(org, ns, sizeof(ns))) < 0)
		return r;
	r = snprintf(sel, sizeof(sel), "app.kubernetes.io/name=%s,%s=%s,flash.heterocloud.io/service=%s%s%s%s", id,
		     OP_K8S_LABEL_ORG, org, id, project ? "," OP_K8S_LABEL_PROJECT "=" : "", project ? project : "", "");
	if (r < 0 || (size_t)r >= sizeof(sel))
		return -EINVAL;
	ref.namespace = ns;
	lo.label_selector = sel;
	r = k8s_list(c, &ref, &lo, pod_item, &a, NULL, st);
	if (r < 0 || a.err < 0) {
		free(a.v);
		return r < 0 ? r : a.err;
	}
	if (a.n)
		qsort(a.v, a.n, sizeof(*a.v), pod_cmp);
	*ret = a.v;
	*ret_n = a.n;
	if (ret_ns)
		snprintf(ret_ns, ns_size, "%s", ns);
	return 0;
}
