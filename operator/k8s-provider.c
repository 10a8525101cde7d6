/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The provider/v1 API on top of Kubernetes mode (k8s-reconcile.h): the
 * store's live services become FlashService objects, which the reconcile
 * loop then renders like any other. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include <flash/diag.h>
#include <flash/render.h>

#include "k8s-reconcile.h"
#include "names.h"
#include "runtime.h"
#include "store.h"
#include "util.h"

#define HASH_BYTES 16

int op_k8s_org_namespace(const char *org, char *buf, size_t size)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	int n;

	if (!org || !buf || !names_opaque_id_valid(org, strlen(org), 253))
		return -EINVAL;
	if (size < OP_K8S_NAMESPACE_MAX + 1)
		return -ENOSPC;
	if (names_dns_label_valid(org))
		return snprintf(buf, size, "%s", org);
	crypto_hash_sha256(h, (const unsigned char *)org, strlen(org));
	n = snprintf(buf, size, "orgh-");
	for (size_t i = 0; i < 16; i++)
		n += snprintf(buf + n, size - (size_t)n, "%02x", h[i]);
	return n;
}

int op_k8s_service_object(const struct op_service *s, char **ret_json, size_t *ret_len, char *ret_ns, size_t ns_size)
{
	struct json_writer *w;
	char ns[OP_K8S_NAMESPACE_MAX + 1];
	int r;

	if (!s || !s->spec || !s->org || !ret_json || !names_service_id_valid(s->id))
		return -EINVAL;
	r = op_k8s_org_namespace(s->org, ns, sizeof(ns));
	if (r < 0)
		return r;
	if (!names_label_value_valid(s->org) || (s->project && !names_label_value_valid(s->project)))
		return -EINVAL;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", OP_K8S_GROUP "/" OP_K8S_VERSION);
	jw_kv_string(w, "kind", "FlashService");
	jw_key(w, "metadata");
	jw_object_open(w);
	jw_kv_string(w, "name", s->id);
	jw_kv_string(w, "namespace", ns);
	jw_key(w, "labels");
	jw_object_open(w);
	jw_kv_string(w, OP_K8S_LABEL_ORG, s->org);
	if (s->project)
		jw_kv_string(w, OP_K8S_LABEL_PROJECT, s->project);
	jw_kv_string(w, OP_K8S_LABEL_SERVICE_ID, s->id);
	jw_object_close(w);
	jw_object_close(w);
	jw_key(w, "spec");
	jw_raw(w, s->spec, strlen(s->spec));
	jw_object_close(w);
	r = json_writer_finish(w, ret_json, ret_len);
	if (r >= 0 && ret_ns)
		snprintf(ret_ns, ns_size, "%s", ns);
	return r;
}

/* ------------------------------------------------------------ the provider API's status */

static const struct op_condition_view *cond_find(const struct op_service_status *v, const char *type)
{
	for (size_t i = 0; i < v->n_conditions; i++)
		if (!strcmp(v->conditions[i].type, type))
			return &v->conditions[i];
	return NULL;
}

static bool cond_true(const struct op_condition_view *c)
{
	return c && !strcmp(c->status, "True");
}

static void phase_set(struct op_service_status *v, const char *phase, const struct op_condition_view *c,
		      const char *fallback)
{
	snprintf(v->phase, sizeof(v->phase), "%s", phase);
	if (c && c->message[0])
		snprintf(v->message, sizeof(v->message), "%s: %s", c->reason[0] ? c->reason : c->type, c->message);
	else if (c && c->reason[0])
		snprintf(v->message, sizeof(v->message), "%s", c->reason);
	else
		snprintf(v->message, sizeof(v->message), "%s", fallback);
}

int op_k8s_service_status_view(const struct json_value *status, int64_t generation, int64_t replicas,
			       struct op_service_status *ret)
{
	const struct json_value *conds = json_get(status, "conditions");
	const struct op_condition_view *ready;
	int64_t n = 0;

	if (!ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->wanted = replicas > 0 && replicas <= UINT32_MAX ? (unsigned int)replicas : 0;
	if (json_get_int64(json_get(status, "readyReplicas"), &n) == 0 && n > 0 && n <= UINT32_MAX)
		ret->ready_replicas = (unsigned int)n;
	(void)json_get_int64(json_get(status, "observedGeneration"), &ret->observed_generation);
	for (size_t i = 0; conds && json_is(conds, JSON_ARRAY) && i < conds->u.array.n &&
			   ret->n_conditions < OP_STATUS_CONDITIONS_SHOWN; i++) {
		const struct json_value *c = conds->u.array.items[i];
		struct op_condition_view *cv = &ret->conditions[ret->n_conditions];
		const char *type = json_string_value(json_get(c, "type"));

		if (!type)
			continue;
		snprintf(cv->type, sizeof(cv->type), "%s", type);
		snprintf(cv->status, sizeof(cv->status), "%s", json_string_value(json_get(c, "status")) ?: "Unknown");
		snprintf(cv->reason, sizeof(cv->reason), "%s", json_string_value(json_get(c, "reason")) ?: "");
		snprintf(cv->message, sizeof(cv->message), "%s", json_string_value(json_get(c, "message")) ?: "");
		snprintf(cv->since, sizeof(cv->since), "%s", json_string_value(json_get(c, "lastTransitionTime")) ?: "");
		ret->n_conditions++;
	}
	ready = cond_find(ret, "Ready");
	if (!ret->n_conditions)
		phase_set(ret, "provisioning", NULL, "published as a FlashService; the operator has not written its status yet");
	else if (cond_true(cond_find(ret, "Suspended")))
		phase_set(ret, "suspended", cond_find(ret, "Suspended"), "suspended");
	else if (cond_true(cond_find(ret, "Degraded")))
		phase_set(ret, "failed", cond_find(ret, "Degraded"), "degraded");
	else if (cond_true(cond_find(ret, "Queued")))
		phase_set(ret, "queued", cond_find(ret, "Queued"), "waiting for a GPU");
	else if (cond_true(ready) && ret->observed_generation >= generation) {
		phase_set(ret, "ready", ready, "ready");
		ret->ready = true;
	} else if (!ret->wanted)
		phase_set(ret, "stopped", NULL, "zero replicas requested");
	else if (cond_true(ready))
		phase_set(ret, "provisioning", NULL, "the operator has not yet observed the latest generation");
	else
		phase_set(ret, "provisioning", ready ? ready : cond_find(ret, "Progressing"), "provisioning");
	return 0;
}

/* ------------------------------------------------------------ the publisher */

struct published {
	char ns[OP_K8S_NAMESPACE_MAX + 1];
	char name[OP_SERVICE_ID_STRLEN];
	unsigned char hash[HASH_BYTES];
	bool live;
};

struct op_k8s_publisher {
	struct k8s_client *c;
	const struct flash_schema_set *schemas;
	k8s_log_fn log;
	void *log_userdata;
	struct published *v;
	size_t n;
	struct op_k8s_publish_stats st;
};

int op_k8s_publisher_new(struct k8s_client *c, const struct flash_schema_set *schemas, k8s_log_fn log,
			 void *log_userdata, struct op_k8s_publisher **ret)
{
	struct op_k8s_publisher *p;

	if (!c || !schemas || !ret)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->c = c;
	p->schemas = schemas;
	p->log = log;
	p->log_userdata = log_userdata;
	*ret = p;
	return 0;
}

void op_k8s_publisher_free(struct op_k8s_publisher *p)
{
	if (!p)
		return;
	free(p->v);
	free(p);
}

void op_k8s_publisher_stats(const struct op_k8s_publisher *p, struct op_k8s_publish_stats *ret)
{
	if (p && ret)
		*ret = p->st;
}

static void plog(struct op_k8s_publisher *p, const char *what, const char *name, int r, const struct k8s_status *st)
{
	char msg[768];

	if (!p->log)
		return;
	snprintf(msg, sizeof(msg), "provider: %s FlashService %s: %s (%d %s)", what, name, strerror(-r), st ? st->code : 0,
		 st && st->message ? st->message : "");
	p->log(K8S_LOG_ERR, msg, p->log_userdata);
	/* A 409 is never forced (a kubectl edit of the spec is a person's):
	 * its fields and their manager are said. */
	for (size_t i = 0; st && i < st->n_causes; i++) {
		snprintf(msg, sizeof(msg), "provider: %s FlashService %s: %s %s: %s", what, name, st->causes[i].type ?: "",
			 st->causes[i].field ?: "", st->causes[i].message ?: "");
		p->log(K8S_LOG_ERR, msg, p->log_userdata);
	}
}

static struct published *find(struct op_k8s_publisher *p, const char *ns, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].ns, ns) && !strcmp(p->v[i].name, name))
			return &p->v[i];
	return NULL;
}

static int publish_one(struct op_k8s_publisher *p, const struct op_service *s)
{
	struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = OP_K8S_PROVIDER_MANAGER };
	struct k8s_ref ref = { .group = OP_K8S_GROUP, .version = OP_K8S_VERSION, .resource = "flashservices" };
	struct k8s_status st = { 0 };
	unsigned char h[HASH_BYTES];
	char ns[OP_K8S_NAMESPACE_MAX + 1], *body = NULL;
	struct published *pb;
	struct flash_diag *d = NULL;
	size_t len;
	int r;

	r = op_k8s_service_object(s, &body, &len, ns, sizeof(ns));
	if (r < 0) {
		plog(p, "build", s->id, r, NULL);
		return r;
	}
	crypto_generichash(h, HASH_BYTES, (const unsigned char *)body, len, NULL, 0);
	pb = find(p, ns, s->id);
	if (pb) {
		pb->live = true;
		if (!memcmp(pb->hash, h, HASH_BYTES)) {
			free(body);
			return 0;
		}
	}
	r = flash_diag_new(&d);
	if (r >= 0)
		r = flash_schema_validate_object(p->schemas, body, len, d);
	flash_diag_free(d);
	if (r < 0) {
		p->st.refused++;
		plog(p, "refused by its schema:", s->id, r, NULL);
		free(body);
		return r;
	}
	ref.namespace = ns;
	ref.name = s->id;
	p->st.requests++;
	r = k8s_apply(p->c, &ref, body, len, &wo, NULL, &st);
	free(body);
	if (r < 0) {
		plog(p, "apply", s->id, r, &st);
		p->st.errors++;
		k8s_status_clear(&st);
		return r;
	}
	k8s_status_clear(&st);
	p->st.applies++;
	if (!pb) {
		pb = realloc(p->v, (p->n + 1) * sizeof(*pb));
		if (!pb)
			return -ENOMEM;
		p->v = pb;
		pb += p->n++;
		memset(pb, 0, sizeof(*pb));
		snprintf(pb->ns, sizeof(pb->ns), "%s", ns);
		snprintf(pb->name, sizeof(pb->name), "%s", s->id);
		pb->live = true;
	}
	memcpy(pb->hash, h, HASH_BYTES);
	return 0;
}

int op_k8s_publish(struct op_k8s_publisher *p, struct op_service *const *services, size_t n)
{
	int first = 0;

	if (!p || (n && !services))
		return -EINVAL;
	for (size_t i = 0; i < p->n; i++)
		p->v[i].live = false;
	for (size_t i = 0; i < n; i++) {
		int r;

		if (services[i]->deleted)
			continue;
		r = publish_one(p, services[i]);
		if (r < 0 && !first)
			first = r;
	}
	/* Deleted through the provider API: delete the FlashService (its
	 * usage finalizer keeps it until the week's usage is written). */
	for (size_t i = 0; i < p->n;) {
		struct k8s_ref ref = { .group = OP_K8S_GROUP, .version = OP_K8S_VERSION, .resource = "flashservices",
				       .namespace = p->v[i].ns, .name = p->v[i].name };
		struct k8s_delete_opts dopts = { .sz = sizeof(dopts), .grace_period_seconds = -1 };
		struct k8s_status st = { 0 };
		int r;

		if (p->v[i].live) {
			i++;
			continue;
		}
		p->st.requests++;
		r = k8s_delete(p->c, &ref, &dopts, NULL, &st);
		if (r == -ENOENT)
			r = 0;
		if (r < 0) {
			plog(p, "delete", p->v[i].name, r, &st);
			p->st.errors++;
			if (!first)
				first = r;
			k8s_status_clear(&st);
			i++;
			continue;
		}
		k8s_status_clear(&st);
		p->st.deletes++;
		p->v[i] = p->v[--p->n];
	}
	return first;
}
