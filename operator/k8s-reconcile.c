/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-service reconcile of flash-operator's Kubernetes mode
 * (k8s-reconcile.h): pure over one client, fed the watches' events. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sodium.h>

#include <flash/diag.h>
#include <flash/meter.h>
#include <flash/render.h>
#include <flash/sched.h>
#include <flash/spec.h>

#include "k8s-gpu.h"
#include "k8s-reconcile.h"
#include "k8s-status.h"
#include "names.h"
#include "util.h"

#define HASH_BYTES 16
#define BUCKETS 4096

/* Where objects of a kind live. */
struct kind_ref {
	const char *kind, *group, *version, *resource;
	bool cluster;
};

static const struct kind_ref kinds[] = {
	{ "Namespace", NULL, "v1", "namespaces", true },
	{ "PersistentVolumeClaim", NULL, "v1", "persistentvolumeclaims", false },
	{ "NetworkPolicy", "networking.k8s.io", "v1", "networkpolicies", false },
	{ "Deployment", "apps", "v1", "deployments", false },
	{ "HorizontalPodAutoscaler", "autoscaling", "v2", "horizontalpodautoscalers", false },
	{ "Service", NULL, "v1", "services", false },
	{ "HTTPRoute", "gateway.networking.k8s.io", "v1", "httproutes", false },
	{ "CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", true },
	{ "FlashService", OP_K8S_GROUP, OP_K8S_VERSION, "flashservices", false },
	{ "FlashUsageRecord", OP_K8S_GROUP, OP_K8S_VERSION, "flashusagerecords", false },
};

static const struct kind_ref *kind_find(const char *kind)
{
	for (size_t i = 0; kind && i < ARRAY_SIZE(kinds); i++)
		if (!strcmp(kinds[i].kind, kind))
			return &kinds[i];
	return NULL;
}

/* An object applied: what to delete when it is no longer rendered, and
 * the hash of the body last applied. */
struct applied {
	const struct kind_ref *kr;
	char name[254];
	unsigned char hash[HASH_BYTES];
	bool keep;                  /* in the current rendering */
	/* An apply refused with a 409 that was not forced (apply()): the
	 * object in place is not this FlashService's (foreign: never
	 * deleted), the conflict's fields for the status, and when it is
	 * tried again (backoff doubling from CONFLICT_BACKOFF_MS). */
	bool foreign;
	char *conflict;
	int64_t retry_us;
	unsigned int backoff_ms;
};

#define CONFLICT_BACKOFF_MS 1000u
#define CONFLICT_BACKOFF_MAX_MS 300000u

struct objset {
	struct json_value **v;
	unsigned int *gen;          /* the owned-watch list generation each was last seen in */
	size_t n;
};

struct svc {
	struct svc *next;
	char *ns, *name, *uid, *org, *project, *id;
	int64_t generation;
	bool seen;                  /* in the current relist */
	bool deleting;              /* deletionTimestamp set */
	bool has_finalizer;
	bool usage_written;
	bool leader_done;           /* reconciled while leader since it last changed */
	bool rendered;              /* render_apply() completed: applied holds the whole rendering */
	int64_t retry_us;           /* an unforced conflict is tried again then (0: none) */
	char problem_reason[64];    /* set: Degraded with this reason (spec refused, render failed) */
	char problem[256];
	/* From the spec. */
	bool valid, has_service, public_;
	uint32_t replicas, cpu, mem, gpu_count;
	char *gpu_type;
	char *spec_json;            /* the .spec text last parsed */
	struct flash_spec *spec;
	/* GPU queue. */
	bool gpu_held;
	uint64_t gpu_version;
	/* Public ports assigned. */
	struct flash_public_port *pports;
	size_t n_pports;
	/* Written objects. */
	struct applied *applied;
	size_t n_applied;
	/* Status known (last seen or written). */
	struct json_value *status;
	/* Owned objects' cache. */
	struct json_value *deployment, *service;
	unsigned int deployment_gen, service_gen;
	struct objset pods, slices;
};

struct op_k8s {
	struct k8s_client *c;
	struct op_k8s_opts o;
	char *fm;
	bool leader;
	_Atomic int64_t leader_until;   /* op_k8s_set_leader_until() */
	bool fence_logged;
	bool fence_hit;                 /* a write was fenced since it was last cleared */
	atomic_bool cancelled;          /* op_k8s_cancel() */
	bool crds;                      /* op_k8s_crds_apply() is applying */
	/* Between a RELIST and its SYNCED: services are taken in, reconciled
	 * at SYNCED once every one is known (the public ports the others
	 * hold, the GPU queue in list order). */
	bool syncing;
	struct svc *b[BUCKETS];
	struct applied *ns_applied;     /* Namespaces applied */
	size_t n_ns_applied;
	struct flash_sched *sched;
	struct flash_meter *meter;
	struct usage_mark *marks;       /* FlashUsageRecords flushed */
	size_t n_marks;
	uint64_t pass;                  /* resync passes */
	struct op_k8s_stats st;
	const char *gpu_node;           /* op_k8s_gpu_state() */
	/* Per owned kind: the list generation (one more at every RELIST;
	 * what SYNCED finds of an older one was deleted while the watch was
	 * down) and whether a list is in progress. */
	unsigned int owned_gen[4];
	bool owned_listing[4];
};

/* ------------------------------------------------------------ little helpers */

static void logf_(struct op_k8s *k, enum k8s_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(struct op_k8s *k, enum k8s_log_level lvl, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!k->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	k->o.log(lvl, msg, k->o.log_userdata);
}

static int64_t now_s(struct op_k8s *k)
{
	return k->o.now ? k->o.now(k->o.now_userdata) : (int64_t)time(NULL);
}

static const char *str_at(const struct json_value *v, const char *path)
{
	return json_string_value(json_at(v, path));
}

static char *write_value(const struct json_value *v, size_t *ret_len)
{
	char *out = NULL;

	return json_write_value(v, 0, &out, ret_len) < 0 ? NULL : out;
}

static struct json_value *parse(const char *text, size_t len)
{
	struct json_value *v = NULL;

	if (json_parse(text, len, NULL, &v, NULL) < 0)
		return NULL;
	return v;
}

struct json_value *op_k8s_json_clone(const struct json_value *v)
{
	size_t len;
	char *t;
	struct json_value *out;

	if (!v)
		return NULL;
	t = write_value(v, &len);
	if (!t)
		return NULL;
	out = parse(t, len);
	free(t);
	return out;
}

#define clone op_k8s_json_clone

static void replace_str(char **dst, const char *src)
{
	if (*dst && src && !strcmp(*dst, src))
		return;
	free(*dst);
	*dst = src ? strdup(src) : NULL;
}

size_t op_k8s_bucket(const char *ns, const char *name, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = ns; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return (size_t)(h % n);
}

static size_t bucket(const char *ns, const char *name)
{
	return op_k8s_bucket(ns, name, BUCKETS);
}

static struct svc *svc_find(struct op_k8s *k, const char *ns, const char *name)
{
	if (!ns || !name)
		return NULL;
	for (struct svc *s = k->b[bucket(ns, name)]; s; s = s->next)
		if (!strcmp(s->ns, ns) && !strcmp(s->name, name))
			return s;
	return NULL;
}

static void objset_clear(struct objset *o)
{
	for (size_t i = 0; i < o->n; i++)
		json_free(o->v[i]);
	free(o->v);
	free(o->gen);
	o->v = NULL;
	o->gen = NULL;
	o->n = 0;
}

static void objset_remove(struct objset *o, size_t i)
{
	json_free(o->v[i]);
	o->n--;
	o->v[i] = o->v[o->n];
	o->gen[i] = o->gen[o->n];
}

/* Puts (or with @obj NULL removes) the object named @name, seen in list
 * generation @gen. */
static int objset_put(struct objset *o, const char *name, const struct json_value *obj, unsigned int gen)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (!strcmp(str_at(o->v[i], "metadata.name") ?: "", name))
			break;
	if (!obj) {
		if (i < o->n)
			objset_remove(o, i);
		return 0;
	}
	if (i == o->n) {
		struct json_value **p = realloc(o->v, (o->n + 1) * sizeof(*p));
		unsigned int *g;

		if (!p)
			return -ENOMEM;
		o->v = p;
		g = realloc(o->gen, (o->n + 1) * sizeof(*g));
		if (!g)
			return -ENOMEM;
		o->gen = g;
		o->v[o->n++] = NULL;
	}
	json_free(o->v[i]);
	o->gen[i] = gen;
	o->v[i] = clone(obj);
	return o->v[i] ? 0 : -ENOMEM;
}

/* Removes what list generation @gen did not see; true when it did. */
static bool objset_sweep(struct objset *o, unsigned int gen)
{
	bool any = false;

	for (size_t i = 0; i < o->n;)
		if (o->gen[i] != gen) {
			objset_remove(o, i);
			any = true;
		} else
			i++;
	return any;
}

static void svc_free(struct svc *s)
{
	if (!s)
		return;
	free(s->ns);
	free(s->name);
	free(s->uid);
	free(s->org);
	free(s->project);
	free(s->id);
	free(s->gpu_type);
	free(s->spec_json);
	flash_spec_free(s->spec);
	free(s->pports);
	for (size_t i = 0; i < s->n_applied; i++)
		free(s->applied[i].conflict);
	free(s->applied);
	json_free(s->status);
	json_free(s->deployment);
	json_free(s->service);
	objset_clear(&s->pods);
	objset_clear(&s->slices);
	free(s);
}

static void hash_body(const char *body, size_t len, unsigned char out[HASH_BYTES])
{
	crypto_generichash(out, HASH_BYTES, (const unsigned char *)body, len, NULL, 0);
}

static void ref_of(const struct kind_ref *kr, const char *ns, const char *name, struct k8s_ref *ref)
{
	*ref = (struct k8s_ref){
		.group = kr->group,
		.version = kr->version,
		.resource = kr->resource,
		.namespace = kr->cluster ? NULL : ns,
		.name = name,
	};
}

/* ------------------------------------------------------------ lifecycle */

int op_k8s_new(struct k8s_client *c, const struct op_k8s_opts *opts, struct op_k8s **ret)
{
	struct op_k8s *k;

	if (!c || !opts || !opts->config || !opts->schemas || !ret || opts->sz < sizeof(size_t))
		return -EINVAL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->c = c;
	atomic_init(&k->leader_until, INT64_MAX);
	memcpy(&k->o, opts, opts->sz < sizeof(k->o) ? opts->sz : sizeof(k->o));
	k->o.sz = sizeof(k->o);
	if (!k->o.crd_poll_ms)
		k->o.crd_poll_ms = 200;
	k->fm = strdup(k->o.field_manager ? k->o.field_manager : OP_K8S_FIELD_MANAGER);
	if (!k->fm || flash_sched_new(NULL, &k->sched) < 0 || flash_meter_new(NULL, &k->meter) < 0) {
		op_k8s_free(k);
		return -ENOMEM;
	}
	*ret = k;
	return 0;
}

void op_k8s_free(struct op_k8s *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < BUCKETS; i++)
		for (struct svc *s = k->b[i], *n; s; s = n) {
			n = s->next;
			svc_free(s);
		}
	for (size_t i = 0; i < k->n_ns_applied; i++)
		free(k->ns_applied[i].conflict);
	free(k->ns_applied);
	free(k->marks);
	flash_sched_free(k->sched);
	flash_meter_free(k->meter);
	free(k->fm);
	free(k);
}

bool op_k8s_is_leader(const struct op_k8s *k)
{
	return k && k->leader;
}

void op_k8s_set_leader_until(struct op_k8s *k, int64_t until_us)
{
	if (k)
		atomic_store(&k->leader_until, until_us);
}

void op_k8s_cancel(struct op_k8s *k)
{
	if (k)
		atomic_store(&k->cancelled, true);
}

static int64_t mono_now(struct op_k8s *k)
{
	struct timespec ts;

	if (k->o.mono_us)
		return k->o.mono_us(k->o.now_userdata);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Whether a write may be sent now: leader, and the Lease this process
 * renewed is still valid (another replica may lead once it lapses). */
static bool may_write(struct op_k8s *k, const char *what)
{
	if (k->crds || (k->leader && !atomic_load(&k->cancelled) && mono_now(k) < atomic_load(&k->leader_until))) {
		k->fence_logged = false;
		return true;
	}
	k->st.fenced++;
	k->fence_hit = true;
	if (!k->fence_logged)
		logf_(k, K8S_LOG_WARNING, "%s: not sent, the leadership deadline passed (Lease not renewed)", what);
	k->fence_logged = true;
	return false;
}

void op_k8s_get_stats(const struct op_k8s *k, struct op_k8s_stats *ret)
{
	if (k && ret) {
		*ret = k->st;
		ret->usage_marks = k->n_marks;
	}
}

/* ------------------------------------------------------------ writes */

static void log_status(struct op_k8s *k, const char *what, int r, const struct k8s_status *st)
{
	logf_(k, K8S_LOG_ERR, "%s: %s (%d %s: %s)", what, strerror(-r), st->code, st->reason ?: "",
	      st->message ?: "");
	for (size_t i = 0; i < st->n_causes; i++)
		logf_(k, K8S_LOG_ERR, "%s: %s %s: %s", what, st->causes[i].type ?: "", st->causes[i].field ?: "",
		      st->causes[i].message ?: "");
}

/* The first error of @d as one line into @buf, or @r's text. */
static const char *first_error(const struct flash_diag *d, int r, char *buf, size_t size)
{
	const struct flash_diag_entry *e = flash_diag_first_error(d);

	buf[0] = '\0';
	if (e)
		flash_diag_entry_format(e, buf, size);
	return buf[0] ? buf : flash_strerror(r);
}

/* The outcome of one request: a refusal logged with its Status and
 * counted, a success counted in *@ok; @st cleared.  Returns @r. */
static int settle(struct op_k8s *k, const char *what, int r, struct k8s_status *st, uint64_t *ok)
{
	if (r < 0) {
		log_status(k, what, r, st);
		k->st.errors++;
	} else if (ok)
		(*ok)++;
	k8s_status_clear(st);
	return r;
}

/* Server-side apply of @body to the status subresource of @kr @ns/@name. */
static int status_put(struct op_k8s *k, const struct kind_ref *kr, const char *ns, const char *name, const char *body,
		      size_t len)
{
	struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = k->fm };
	struct k8s_status st = { 0 };
	struct k8s_ref ref;

	ref_of(kr, ns, name, &ref);
	if (!may_write(k, "write status"))
		return -ENOLCK;
	k->st.requests++;
	return settle(k, "write status", k8s_status_write(k->c, &ref, body, len, &wo, NULL, &st), &st,
		      &k->st.status_writes);
}

/* Checks @body against the schemas: never send what the server refuses. */
static int validate(struct op_k8s *k, const char *what, const char *body, size_t len, char *msg, size_t size)
{
	struct flash_diag *d = NULL;
	int r;

	if (flash_diag_new(&d) < 0)
		return -ENOMEM;
	r = flash_schema_validate_object(k->o.schemas, body, len, d);
	if (r < 0) {
		char line[256];

		snprintf(msg, size, "%s refused by its schema: %s", what, first_error(d, r, line, sizeof(line)));
		logf_(k, K8S_LOG_ERR, "%s", msg);
		k->st.refused++;
	}
	flash_diag_free(d);
	return r;
}

/* The fields of a 409 apply conflict as one line: each field path with
 * the cause's words, which name the manager owning it
 * (".spec.replicas: conflict with \"flash-admin\""). */
static void conflict_text(const struct k8s_status *st, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < st->n_causes && o + 1 < size; i++) {
		int n = snprintf(buf + o, size - o, "%s%s: %s", i ? "; " : "", st->causes[i].field ?: "?",
				 st->causes[i].message ?: "conflict");

		if (n < 0)
			break;
		o += (size_t)n < size - o ? (size_t)n : size - o - 1;
	}
	if (!st->n_causes)
		snprintf(buf, size, "%s", st->message ?: "conflict with another field manager");
}

/* Whether @obj names FlashService uid @uid among its ownerReferences. */
static bool owned_by(const struct json_value *obj, const char *uid)
{
	const struct json_value *refs = json_at(obj, "metadata.ownerReferences");

	for (size_t i = 0; uid && refs && json_is(refs, JSON_ARRAY) && i < refs->u.array.n; i++) {
		const struct json_value *r = refs->u.array.items[i];

		if (!strcmp(str_at(r, "kind") ?: "", "FlashService") &&
		    !strcmp(str_at(r, "apiVersion") ?: "", OP_K8S_GROUP "/" OP_K8S_VERSION) &&
		    !strcmp(str_at(r, "uid") ?: "", uid))
			return true;
	}
	return false;
}

/* Server-side apply of @body.  A 409 (another field manager owns a field
 * the body sets) is forced only for an object rendered for a FlashService
 * (@owner_uid set) whose object in place names that FlashService's uid in
 * its ownerReferences: the operator is by design the only author of those
 * fields, so a kubectl edit or the HPA's old replicas are taken back.
 * Anything else -- a same-named object of someone else, the CRDs (a Helm
 * release may own them), the FlashService's finalizer, a usage record --
 * is not forced: -EBUSY with the fields and their manager in @conflict
 * (may be NULL), and *@ret_foreign (may be NULL) true when the object in
 * place is not owned by @owner_uid. */
static int apply(struct op_k8s *k, const struct kind_ref *kr, const char *ns, const char *name, const char *body,
		 size_t len, const char *owner_uid, char *conflict, size_t conflict_size, bool *ret_foreign,
		 struct json_value **ret_obj)
{
	struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = k->fm };
	struct k8s_status st = { 0 };
	struct k8s_ref ref;
	char what[320], fields[768];
	bool ours = false;
	int r;

	ref_of(kr, ns, name, &ref);
	snprintf(what, sizeof(what), "apply %s %s%s%s", kr->kind, kr->cluster ? "" : ns, kr->cluster ? "" : "/", name);
	if (!may_write(k, what))
		return -ENOLCK;
	k->st.requests++;
	r = k8s_apply(k->c, &ref, body, len, &wo, ret_obj, &st);
	if (r != -EBUSY)
		return settle(k, what, r, &st, &k->st.applies);
	conflict_text(&st, fields, sizeof(fields));
	k8s_status_clear(&st);
	if (owner_uid) {
		struct json_value *cur = NULL;
		int g;

		if (!may_write(k, what))
			return -ENOLCK;
		k->st.requests++;
		g = k8s_get(k->c, &ref, &cur, &st);
		if (g < 0)
			log_status(k, what, g, &st);
		k8s_status_clear(&st);
		ours = g >= 0 && owned_by(cur, owner_uid);
		json_free(cur);
	}
	if (ret_foreign)
		*ret_foreign = owner_uid && !ours;
	if (!ours) {
		logf_(k, K8S_LOG_WARNING, "%s: conflict with another field manager, not forced%s: %s", what,
		      owner_uid ? " (the object in place is not this FlashService's)" : "", fields);
		if (conflict)
			snprintf(conflict, conflict_size, "%s %s: %s", kr->kind, name, fields);
		k->st.conflicts++;
		return -EBUSY;
	}
	logf_(k, K8S_LOG_WARNING, "%s: conflict with another field manager, applying with force: %s", what, fields);
	if (!may_write(k, what))
		return -ENOLCK;
	wo.force = true;
	k->st.forced++;
	k->st.requests++;
	r = k8s_apply(k->c, &ref, body, len, &wo, ret_obj, &st);
	return settle(k, what, r, &st, &k->st.applies);
}

static int delete_obj(struct op_k8s *k, const struct kind_ref *kr, const char *ns, const char *name)
{
	struct k8s_delete_opts d = { .sz = sizeof(d), .grace_period_seconds = -1, .propagation_policy = "Background" };
	struct k8s_status st = { 0 };
	struct k8s_ref ref;
	int r;

	ref_of(kr, ns, name, &ref);
	if (!may_write(k, "delete"))
		return -ENOLCK;
	k->st.requests++;
	r = k8s_delete(k->c, &ref, &d, NULL, &st);
	if (r == -ENOENT)
		r = 0;
	if (settle(k, "delete", r, &st, &k->st.deletes) >= 0)
		logf_(k, K8S_LOG_INFO, "deleted %s %s/%s: no longer rendered", kr->kind, ns, name);
	return r;
}

/* A Warning Event about FlashService @s (reason ApplyConflict, @note the
 * object, fields and managers), checked against the schemas like every
 * object sent.  Failures are logged only. */
static void conflict_event(struct op_k8s *k, const struct svc *s, const char *note)
{
	struct k8s_event_about ab = {
		.api_version = OP_K8S_GROUP "/" OP_K8S_VERSION, .kind = "FlashService", .name = s->name,
		.namespace = s->ns, .uid = s->uid, .type = "Warning", .reason = "ApplyConflict", .action = "Apply",
		.reporting_controller = "flash.heterocloud.io/operator", .reporting_instance = k->fm,
	};
	struct k8s_ref ref = { .group = "events.k8s.io", .version = "v1", .resource = "events", .namespace = s->ns };
	struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = k->fm };
	struct k8s_status st = { 0 };
	char short_note[1024], msg[320], *body = NULL;

	/* events.k8s.io/v1 notes are at most 1 kB. */
	snprintf(short_note, sizeof(short_note), "%s", note);
	ab.note = short_note;
	if (k8s_event_body(&ab, &body) < 0 || validate(k, "Event", body, strlen(body), msg, sizeof(msg)) < 0 ||
	    !may_write(k, "create Event")) {
		free(body);
		return;
	}
	k->st.requests++;
	(void)settle(k, "create Event", k8s_create(k->c, &ref, body, strlen(body), &wo, NULL, &st), &st,
		     &k->st.events);
	free(body);
}

/* ------------------------------------------------------------ CRDs */

static bool established(const struct json_value *crd)
{
	const struct json_value *c = json_at(crd, "status.conditions");

	for (size_t i = 0; c && json_is(c, JSON_ARRAY) && i < c->u.array.n; i++)
		if (!strcmp(str_at(c->u.array.items[i], "type") ?: "", "Established") &&
		    !strcmp(str_at(c->u.array.items[i], "status") ?: "", "True"))
			return true;
	return false;
}

static void nap_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int op_k8s_crds_apply(struct op_k8s *k, unsigned int timeout_ms)
{
	static const enum flash_crd crds[] = { FLASH_CRD_FLASHSERVICE, FLASH_CRD_FLASHUSAGERECORD };
	const struct kind_ref *kr = kind_find("CustomResourceDefinition");
	int r = 0;

	if (!k)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(crds) && r >= 0; i++) {
		struct json_value *obj = NULL, *parsed = NULL;
		char *text = NULL, name[254], msg[320];
		size_t len;
		unsigned int waited = 0;

		r = flash_render_crd(crds[i], FLASH_RENDER_JSON, &text, &len);
		if (r < 0)
			break;
		parsed = parse(text, len);
		snprintf(name, sizeof(name), "%s", str_at(parsed, "metadata.name") ?: "");
		json_free(parsed);
		r = validate(k, "CustomResourceDefinition", text, len, msg, sizeof(msg));
		if (r >= 0) {
			char fields[1024];

			k->crds = true; /* every replica applies the CRDs: not fenced */
			r = apply(k, kr, NULL, name, text, len, NULL, fields, sizeof(fields), NULL, &obj);
			k->crds = false;
			if (r == -EBUSY) {
				/* Another manager (a Helm release) owns fields of it:
				 * never forced; the CRD in place is waited for. */
				logf_(k, K8S_LOG_WARNING,
				      "%s: owned by another field manager, not taken over; using the CRD in place", fields);
				r = 0;
			}
		}
		free(text);
		while (r >= 0 && !established(obj)) {
			struct k8s_ref ref;
			struct k8s_status st = { 0 };

			if (waited >= timeout_ms) {
				logf_(k, K8S_LOG_ERR, "CRD %s not Established after %u ms", name, waited);
				r = -ETIMEDOUT;
				break;
			}
			json_free(obj);
			obj = NULL;
			if (waited || !timeout_ms) {
				nap_ms(k->o.crd_poll_ms);
				waited += k->o.crd_poll_ms;
			} else
				waited = 1;
			ref_of(kr, NULL, name, &ref);
			k->st.requests++;
			r = k8s_get(k->c, &ref, &obj, &st);
			if (r == -ENOENT)
				r = 0; /* not visible yet */
			else if (r < 0)
				log_status(k, "get CRD", r, &st);
			k8s_status_clear(&st);
		}
		if (r >= 0)
			logf_(k, K8S_LOG_INFO, "CRD %s Established", name);
		json_free(obj);
	}
	return r;
}

/* ------------------------------------------------------------ status */

/* Whether the status known holds exactly the public ports assigned. */
static bool ports_written(const struct svc *s)
{
	const struct json_value *pp = json_get(s->status, "publicPorts");
	size_t n = json_is(pp, JSON_ARRAY) ? pp->u.array.n : 0;

	if (n != s->n_pports)
		return false;
	for (size_t i = 0; i < n; i++) {
		const struct json_value *e = pp->u.array.items[i];
		int64_t port = 0;

		if (json_get_int64(json_get(e, "port"), &port) < 0 || port != s->pports[i].port ||
		    strcmp(json_string_value(json_get(e, "name")) ?: "", s->pports[i].name) ||
		    strcmp(json_string_value(json_get(e, "protocol")) ?: "", s->pports[i].protocol))
			return false;
	}
	return true;
}

/* The status object @status with the public ports assigned added, so
 * that an operator restarting (or another replica taking over) keeps
 * them (flash_public_ports_parse() reads them back). */
static int status_with_ports(const char *status, size_t len, const struct svc *s, char **ret, size_t *ret_len)
{
	struct json_value *v = parse(status, len);
	struct json_writer *w;

	if (!v || !json_is(v, JSON_OBJECT)) {
		json_free(v);
		return -EINVAL;
	}
	w = json_writer_new(0);
	jw_object_open(w);
	for (size_t i = 0; i < v->u.object.n; i++) {
		jw_key(w, v->u.object.members[i].key);
		jw_value(w, v->u.object.members[i].value);
	}
	jw_key(w, "publicPorts");
	jw_array_open(w);
	for (size_t i = 0; i < s->n_pports; i++) {
		jw_object_open(w);
		jw_kv_string(w, "name", s->pports[i].name);
		jw_kv_string(w, "protocol", s->pports[i].protocol);
		jw_kv_uint(w, "port", s->pports[i].port);
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
	json_free(v);
	return json_writer_finish(w, ret, ret_len);
}

/* Opens the FlashService object of @s and its metadata (name, namespace),
 * for the caller to go on in metadata. */
static void fs_head(struct json_writer *w, const struct svc *s)
{
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", OP_K8S_GROUP "/" OP_K8S_VERSION);
	jw_kv_string(w, "kind", "FlashService");
	jw_key(w, "metadata");
	jw_object_open(w);
	jw_kv_string(w, "name", s->name);
	jw_kv_string(w, "namespace", s->ns);
}

/* The tenant Namespace's entry (ns_create()), or NULL. */
static const struct applied *ns_entry(const struct op_k8s *k, const char *ns)
{
	for (size_t i = 0; i < k->n_ns_applied; i++)
		if (!strcmp(k->ns_applied[i].name, ns))
			return &k->ns_applied[i];
	return NULL;
}

static int write_status(struct op_k8s *k, struct svc *s)
{
	struct op_k8s_status_input in = {
		.generation = s->generation,
		.replicas = s->replicas,
		.has_service = s->has_service,
		.public = s->public_,
		.deployment = s->deployment,
		.pods = (const struct json_value *const *)s->pods.v,
		.n_pods = s->pods.n,
		.service = s->service,
		.slices = (const struct json_value *const *)s->slices.v,
		.n_slices = s->slices.n,
	};
	struct flash_sched_state gs;
	struct op_k8s_status st;
	struct json_writer *w;
	char *status = NULL, *body = NULL;
	size_t slen, blen;
	int64_t now = now_s(k);
	int r;

	if (s->gpu_held && flash_sched_state(k->sched, s->id, &gs) == 0)
		in.gpu = &gs;
	r = op_k8s_status_decide(&in, &st);
	if (r < 0)
		return r;
	if (s->problem_reason[0]) {
		struct op_k8s_condition *d = &st.cond[OP_K8S_COND_DEGRADED], *rd = &st.cond[OP_K8S_COND_READY];

		d->present = true;
		d->status = true;
		snprintf(d->reason, sizeof(d->reason), "%s", s->problem_reason);
		snprintf(d->message, sizeof(d->message), "%.*s", (int)sizeof(d->message) - 1, s->problem);
		if (!s->deployment) {
			rd->present = true;
			rd->status = false;
			snprintf(rd->reason, sizeof(rd->reason), "%s", s->problem_reason);
			snprintf(rd->message, sizeof(rd->message), "%.*s", (int)sizeof(rd->message) - 1, s->problem);
		}
	}
	if (!st.cond[OP_K8S_COND_DEGRADED].status) {
		/* An apply conflict not forced (or the tenant Namespace's labels
		 * another manager set): Degraded with the fields and the manager
		 * owning them until the apply goes through. */
		const struct applied *nse = ns_entry(k, s->ns);
		const char *c = nse && nse->conflict ? nse->conflict : NULL;

		for (size_t i = 0; !c && i < s->n_applied; i++)
			c = s->applied[i].conflict;
		if (c) {
			struct op_k8s_condition *d = &st.cond[OP_K8S_COND_DEGRADED];

			d->present = true;
			d->status = true;
			snprintf(d->reason, sizeof(d->reason), "ApplyConflict");
			snprintf(d->message, sizeof(d->message), "%.*s", (int)sizeof(d->message) - 1, c);
		}
	}
	/* Only the leader meters: a replica taking over starts counting when
	 * it does, so what the last leader flushed is never counted twice. */
	if (k->leader && s->valid && s->org && s->id) {
		struct flash_meter_observation ob = {
			.sz = sizeof(ob), .service_id = s->id, .organization = s->org, .time = now,
			.ready_replicas = st.ready_replicas > 0 ? (uint32_t)st.ready_replicas : 0,
			.cpu_millis = s->cpu, .memory_mib = s->mem, .gpu_count = s->gpu_type ? s->gpu_count : 0,
		};

		(void)flash_meter_observe(k->meter, &ob);
	}
	if (!k->leader || (s->status && !op_k8s_status_changed(&st, s->status) && ports_written(s)))
		return 0;
	r = op_k8s_status_to_json(&st, s->status, now, &status, &slen);
	if (r < 0)
		return r;
	if (s->n_pports) {
		char *with = NULL;

		r = status_with_ports(status, slen, s, &with, &slen);
		if (r < 0)
			goto out;
		free(status);
		status = with;
	}
	w = json_writer_new(0);
	fs_head(w, s);
	jw_object_close(w);
	jw_key(w, "status");
	jw_raw(w, status, slen);
	jw_object_close(w);
	r = json_writer_finish(w, &body, &blen);
	if (r < 0)
		goto out;
	r = status_put(k, kind_find("FlashService"), s->ns, s->name, body, blen);
	if (r >= 0) {
		json_free(s->status);
		s->status = parse(status, slen);
	}
out:
	free(status);
	free(body);
	return r;
}

/* ------------------------------------------------------------ finalizer and usage */

static int apply_finalizer(struct op_k8s *k, struct svc *s, bool with)
{
	struct json_writer *w = json_writer_new(0);
	char *body = NULL;
	size_t len;
	int r;

	fs_head(w, s);
	if (with) {
		jw_key(w, "finalizers");
		jw_array_open(w);
		jw_string(w, OP_K8S_USAGE_FINALIZER);
		jw_array_close(w);
	}
	jw_object_close(w);
	jw_object_close(w);
	r = json_writer_finish(w, &body, &len);
	if (r < 0)
		return r;
	r = apply(k, kind_find("FlashService"), s->ns, s->name, body, len, NULL, NULL, 0, NULL, NULL);
	free(body);
	if (r >= 0)
		s->has_finalizer = with;
	return r;
}

/* What this operator (since it started leading) has added to one
 * FlashUsageRecord: a flush adds the meter's usage since then, so that
 * records accumulate across restarts and leader changes instead of being
 * overwritten with what one process saw (an interval not yet flushed when
 * a leader stops is lost: at most one resync period). */
struct usage_mark {
	char ns[OP_K8S_NAMESPACE_MAX + 1];
	char name[OP_K8S_USAGE_NAME_MAX + 1];
	struct flash_meter_usage written;
	uint64_t pass;              /* the resync pass that last flushed it */
	int64_t week_start;         /* the week of the record (pruned once it is past) */
};

static struct usage_mark *mark_get(struct op_k8s *k, const char *ns, const char *name, int64_t week_start)
{
	struct usage_mark *m;

	for (size_t i = 0; i < k->n_marks; i++)
		if (!strcmp(k->marks[i].ns, ns) && !strcmp(k->marks[i].name, name))
			return &k->marks[i];
	m = realloc(k->marks, (k->n_marks + 1) * sizeof(*m));
	if (!m)
		return NULL;
	k->marks = m;
	m += k->n_marks++;
	memset(m, 0, sizeof(*m));
	m->week_start = week_start;
	snprintf(m->ns, sizeof(m->ns), "%s", ns);
	snprintf(m->name, sizeof(m->name), "%s", name);
	return m;
}

static int64_t sub0(int64_t a, int64_t b)
{
	return a > b ? a - b : 0;
}

/* Adds to the week's record of (@scope, @id) in @ns what the meter
 * counted since the last flush: created (object, then status) when
 * absent, else its status read and op_k8s_usage_add()ed.  Nothing is
 * sent when nothing was counted. */
static int usage_flush(struct op_k8s *k, const char *ns, enum flash_meter_scope scope, const char *id, const char *org,
		       int64_t now)
{
	const struct kind_ref *kr = kind_find("FlashUsageRecord");
	bool svc = scope == FLASH_METER_SCOPE_SERVICE;
	struct flash_meter_usage u = { 0 }, delta;
	struct flash_meter_record rec = { .scope = scope, .organization = org, .service_id = svc ? id : NULL };
	struct k8s_status st = { 0 };
	struct json_value *cur = NULL;
	struct usage_mark *m;
	struct k8s_ref ref;
	char name[OP_K8S_USAGE_NAME_MAX + 1], msg[320], *obj = NULL, *status = NULL, *add = NULL, *body = NULL;
	size_t len;
	int r;

	r = svc ? flash_meter_service_usage(k->meter, id, now, &u) : flash_meter_org_usage(k->meter, id, now, &u);
	if (r < 0)
		return 0; /* never metered */
	if ((r = flash_meter_week_start(now, &rec.week_start)) < 0)
		return r;
	if (op_k8s_usage_record_name(svc, id, now, name, sizeof(name)) < 0 ||
	    !(m = mark_get(k, ns, name, rec.week_start)))
		return -EINVAL;
	m->pass = k->pass;
	delta = (struct flash_meter_usage){
		.cpu_millicore_seconds = sub0(u.cpu_millicore_seconds, m->written.cpu_millicore_seconds),
		.memory_mib_seconds = sub0(u.memory_mib_seconds, m->written.memory_mib_seconds),
		.gpu_seconds = sub0(u.gpu_seconds, m->written.gpu_seconds),
	};
	if (!delta.cpu_millicore_seconds && !delta.memory_mib_seconds && !delta.gpu_seconds)
		return 0;
	rec.usage = delta;
	rec.accrued_until = now;
	ref_of(kr, ns, name, &ref);
	k->st.requests++;
	r = k8s_get(k->c, &ref, &cur, &st);
	if (r == -ENOENT || (r >= 0 && !json_get(cur, "status"))) {
		/* The first of the week: the object, then its status. */
		k8s_status_clear(&st);
		r = op_k8s_usage_record_objects(&rec, ns, &obj, &status);
		if (r >= 0)
			r = validate(k, "FlashUsageRecord", obj, strlen(obj), msg, sizeof(msg));
		if (r >= 0)
			r = apply(k, kr, ns, name, obj, strlen(obj), NULL, NULL, 0, NULL, NULL);
		if (r >= 0)
			r = status_put(k, kr, ns, name, status, strlen(status));
	} else if (r >= 0) {
		k8s_status_clear(&st);
		r = op_k8s_usage_add(json_get(cur, "status"), &delta, now, &add, &len);
		if (r >= 0) {
			struct json_writer *w = json_writer_new(0);

			jw_object_open(w);
			jw_kv_string(w, "apiVersion", OP_K8S_GROUP "/" OP_K8S_VERSION);
			jw_kv_string(w, "kind", "FlashUsageRecord");
			jw_key(w, "metadata");
			jw_object_open(w);
			jw_kv_string(w, "name", name);
			jw_kv_string(w, "namespace", ns);
			jw_object_close(w);
			jw_key(w, "status");
			jw_raw(w, add, len);
			jw_object_close(w);
			r = json_writer_finish(w, &body, &len);
		}
		if (r >= 0)
			r = status_put(k, kr, ns, name, body, len);
	} else
		r = settle(k, "get FlashUsageRecord", r, &st, NULL);
	if (r >= 0)
		m->written = u;
	json_free(cur);
	free(obj);
	free(status);
	free(add);
	free(body);
	return r;
}

static const char *usage_ns(const struct op_k8s *k, const struct svc *s)
{
	return k->o.usage_namespace ? k->o.usage_namespace : s->ns;
}

/* The week's FlashUsageRecords of the service and its organization,
 * with the service's last seconds, before its finalizer goes. */
static int write_usage(struct op_k8s *k, struct svc *s)
{
	int64_t now = now_s(k);
	int r;

	if (!s->org || !s->id)
		return 0; /* never metered */
	(void)flash_meter_delete_service(k->meter, s->id, now);
	r = usage_flush(k, usage_ns(k, s), FLASH_METER_SCOPE_SERVICE, s->id, s->org, now);
	if (r >= 0)
		r = usage_flush(k, usage_ns(k, s), FLASH_METER_SCOPE_ORGANIZATION, s->org, s->org, now);
	return r;
}

/* ------------------------------------------------------------ rendering */

/* Writes @v with @key: @val set in the object at @path (objects made
 * when missing). */
static void emit_set(struct json_writer *w, const struct json_value *v, const char *const *path, size_t n,
		     const char *key, const char *val)
{
	bool found = false;

	if (!v || !json_is(v, JSON_OBJECT)) {
		jw_object_open(w);
		for (size_t i = 0; i < n; i++) {
			jw_key(w, path[i]);
			jw_object_open(w);
		}
		if (!n) {
			jw_kv_string(w, key, val);
		} else {
			jw_kv_string(w, key, val);
		}
		for (size_t i = 0; i < n; i++)
			jw_object_close(w);
		jw_object_close(w);
		return;
	}
	jw_object_open(w);
	for (size_t i = 0; i < v->u.object.n; i++) {
		const struct json_member *m = &v->u.object.members[i];

		if (!n && !strcmp(m->key, key))
			continue;
		jw_key(w, m->key);
		if (n && !strcmp(m->key, path[0])) {
			found = true;
			emit_set(w, m->value, path + 1, n - 1, key, val);
		} else
			jw_value(w, m->value);
	}
	if (!n)
		jw_kv_string(w, key, val);
	else if (!found) {
		jw_key(w, path[0]);
		emit_set(w, NULL, path + 1, n - 1, key, val);
	}
	jw_object_close(w);
}

static char *set_in(const char *text, size_t len, const char *const *path, size_t n, const char *key,
		    const char *val, size_t *ret_len)
{
	struct json_value *v = parse(text, len);
	struct json_writer *w;
	char *out = NULL;

	if (!v)
		return NULL;
	w = json_writer_new(0);
	emit_set(w, v, path, n, key, val);
	json_free(v);
	if (json_writer_finish(w, &out, ret_len) < 0)
		return NULL;
	return out;
}

/* The Deployment of a bound GPU service: pinned to its node, its slots
 * annotated. */
static char *gpu_bind(const char *text, size_t len, const struct flash_sched_state *gs, size_t *ret_len)
{
	static const char *const sel[] = { "spec", "template", "spec", "nodeSelector" };
	static const char *const ann[] = { "spec", "template", "metadata", "annotations" };
	char slots[256] = "";
	size_t l1;
	char *a, *b;

	for (unsigned int i = 0, o = 0; i < 64; i++)
		if (gs->slots & (1ull << i))
			o += (unsigned int)snprintf(slots + o, sizeof(slots) - o, "%s%u", o ? "," : "", i);
	a = set_in(text, len, sel, ARRAY_SIZE(sel), "kubernetes.io/hostname", gs->node, &l1);
	if (!a)
		return NULL;
	b = set_in(a, l1, ann, ARRAY_SIZE(ann), OP_K8S_ANNOTATION_GPU_SLOTS, slots, ret_len);
	free(a);
	return b;
}

static void set_problem(struct svc *s, const char *reason, const char *msg)
{
	snprintf(s->problem_reason, sizeof(s->problem_reason), "%s", reason);
	snprintf(s->problem, sizeof(s->problem), "%.*s", (int)sizeof(s->problem) - 1, msg);
}

/* The labels of the rendered Namespace @text that the Namespace in place
 * (@ns) lacks or holds with another value, as one line into @buf; empty
 * when none.  A GET that fails says nothing (checked again later). */
static void ns_labels_check(struct op_k8s *k, const char *ns, const char *text, size_t len, char *buf, size_t size)
{
	struct k8s_ref ref = { .version = "v1", .resource = "namespaces", .name = ns };
	struct k8s_status st = { 0 };
	struct json_value *want = parse(text, len), *cur = NULL;
	const struct json_value *wl = json_at(want, "metadata.labels"), *cl;
	size_t o = 0;

	buf[0] = '\0';
	k->st.requests++;
	if (k8s_get(k->c, &ref, &cur, &st) < 0) {
		logf_(k, K8S_LOG_INFO, "namespace %s: its labels not checked (%s)", ns, st.message ?: "GET failed");
		goto out;
	}
	cl = json_at(cur, "metadata.labels");
	for (size_t i = 0; wl && json_is(wl, JSON_OBJECT) && i < wl->u.object.n && o + 1 < size; i++) {
		const char *key = wl->u.object.members[i].key, *w = json_string_value(wl->u.object.members[i].value);
		const char *c = json_string_value(json_get(cl, key));
		int n;

		if (c && w && !strcmp(c, w))
			continue;
		n = c ? snprintf(buf + o, size - o, "%slabel %s is \"%s\", not \"%s\"", o ? "; " : "", key, c, w ?: "")
		      : snprintf(buf + o, size - o, "%slabel %s missing (\"%s\")", o ? "; " : "", key, w ?: "");
		if (n < 0)
			break;
		o += (size_t)n < size - o ? (size_t)n : size - o - 1;
	}
out:
	k8s_status_clear(&st);
	json_free(want);
	json_free(cur);
}

/* The tenant Namespace, created once (its organization and Pod Security
 * labels; never relabelled: the operator's RBAC has get and create on
 * namespaces, no patch).  AlreadyExists is success; the labels of the
 * Namespace in place are then compared with the rendered ones and what
 * differs is reported as the services' ApplyConflict (never changed; looked
 * at again with backoff, so a Namespace fixed by hand clears it). */
static int ns_create(struct op_k8s *k, struct svc *s)
{
	struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = k->fm };
	struct k8s_ref ref = { .version = "v1", .resource = "namespaces" };
	struct k8s_status st = { 0 };
	struct applied *p = NULL;
	char *text = NULL;
	size_t len;
	char msg[320], labels[768] = "";
	bool exists = false;
	int r;

	for (size_t i = 0; i < k->n_ns_applied && !p; i++)
		if (!strcmp(k->ns_applied[i].name, s->ns))
			p = &k->ns_applied[i];
	if (p && (!p->conflict || mono_now(k) < p->retry_us))
		return 0;
	r = flash_render_namespace(s->ns, s->org, FLASH_RENDER_JSON, &text, &len);
	if (r < 0)
		return r;
	if (p) {
		exists = true; /* its labels looked at again */
	} else {
		r = validate(k, "Namespace", text, len, msg, sizeof(msg));
		if (r >= 0 && !may_write(k, "create Namespace"))
			r = -ENOLCK;
		else if (r >= 0) {
			k->st.requests++;
			r = k8s_create(k->c, &ref, text, len, &wo, NULL, &st);
			exists = r == -EEXIST;
			r = settle(k, "create Namespace", r == -EEXIST ? 0 : r, &st, &k->st.applies);
		}
	}
	if (r >= 0 && exists)
		ns_labels_check(k, s->ns, text, len, labels, sizeof(labels));
	free(text);
	if (r < 0)
		return r;
	if (!p) {
		p = realloc(k->ns_applied, (k->n_ns_applied + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		k->ns_applied = p;
		p += k->n_ns_applied++;
		memset(p, 0, sizeof(*p));
		p->kr = kind_find("Namespace");
		snprintf(p->name, sizeof(p->name), "%s", s->ns);
	}
	if (labels[0]) {
		char *was = p->conflict;

		if (asprintf(&p->conflict, "Namespace %s: %s (set by another manager; tenant Namespaces are created, "
			     "never relabelled)", s->ns, labels) < 0)
			p->conflict = NULL;
		if (p->conflict && (!was || strcmp(was, p->conflict)))
			conflict_event(k, s, p->conflict);
		free(was);
		p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : CONFLICT_BACKOFF_MS;
		if (p->backoff_ms > CONFLICT_BACKOFF_MAX_MS)
			p->backoff_ms = CONFLICT_BACKOFF_MAX_MS;
		p->retry_us = mono_now(k) + (int64_t)p->backoff_ms * 1000;
		k->st.conflicts++;
		logf_(k, K8S_LOG_WARNING, "%s; looked at again in %u ms", p->conflict ?: labels, p->backoff_ms);
	} else {
		free(p->conflict);
		p->conflict = NULL;
		p->backoff_ms = 0;
	}
	return 0;
}

static void ns_forget(struct op_k8s *k, const char *ns)
{
	for (size_t i = 0; i < k->n_ns_applied; i++)
		if (!strcmp(k->ns_applied[i].name, ns)) {
			free(k->ns_applied[i].conflict);
			k->ns_applied[i] = k->ns_applied[--k->n_ns_applied];
			logf_(k, K8S_LOG_WARNING, "namespace %s: gone (404), to be created again", ns);
			return;
		}
}

static struct applied *applied_find(struct svc *s, const struct kind_ref *kr, const char *name)
{
	for (size_t i = 0; i < s->n_applied; i++)
		if (s->applied[i].kr == kr && !strcmp(s->applied[i].name, name))
			return &s->applied[i];
	return NULL;
}

static struct applied *applied_add(struct svc *s, const struct kind_ref *kr, const char *name)
{
	struct applied *a = realloc(s->applied, (s->n_applied + 1) * sizeof(*a));

	if (!a)
		return NULL;
	s->applied = a;
	a += s->n_applied++;
	memset(a, 0, sizeof(*a));
	a->kr = kr;
	snprintf(a->name, sizeof(a->name), "%s", name);
	return a;
}

static void applied_remove(struct svc *s, size_t i)
{
	free(s->applied[i].conflict);
	s->applied[i] = s->applied[--s->n_applied];
}

/* Applies one rendered object unless its body is the one last applied.
 * An unforced conflict is recorded on its entry (the status says it, the
 * retry waits for its backoff) and is not an error of the reconcile. */
static int object_apply(struct op_k8s *k, struct svc *s, const char *kind, char *text, size_t len)
{
	const struct kind_ref *kr = kind_find(kind);
	unsigned char h[HASH_BYTES];
	struct json_value *v;
	struct applied *a;
	char name[254], msg[320], conflict[1024];
	bool foreign = false;
	int r;

	if (!kr)
		return -EINVAL;
	v = parse(text, len);
	snprintf(name, sizeof(name), "%s", str_at(v, "metadata.name") ?: "");
	json_free(v);
	hash_body(text, len, h);
	a = applied_find(s, kr, name);
	if (a) {
		a->keep = true;
		if (!memcmp(a->hash, h, HASH_BYTES)) {
			k->st.apply_skipped++;
			return 0;
		}
		if (a->conflict && mono_now(k) < a->retry_us) {
			k->st.conflict_waits++;
			return 0; /* backing off: tried again at retry_us */
		}
	}
	r = validate(k, kind, text, len, msg, sizeof(msg));
	if (r < 0) {
		set_problem(s, "RenderRefused", msg);
		return r;
	}
	r = apply(k, kr, s->ns, name, text, len, s->uid, conflict, sizeof(conflict), &foreign, NULL);
	if (r == -ENOENT && !kr->cluster)
		ns_forget(k, s->ns); /* the Namespace was deleted: created again at the next reconcile */
	if (r == -EBUSY) {
		if (!a && !(a = applied_add(s, kr, name)))
			return -ENOMEM;
		a->keep = true;
		a->foreign = foreign;
		memset(a->hash, 0, sizeof(a->hash));
		if (!a->conflict || strcmp(a->conflict, conflict))
			conflict_event(k, s, conflict); /* new or changed: said once, not at every retry */
		free(a->conflict);
		a->conflict = strdup(conflict);
		a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : CONFLICT_BACKOFF_MS;
		if (a->backoff_ms > CONFLICT_BACKOFF_MAX_MS)
			a->backoff_ms = CONFLICT_BACKOFF_MAX_MS;
		a->retry_us = mono_now(k) + (int64_t)a->backoff_ms * 1000;
		logf_(k, K8S_LOG_WARNING, "FlashService %s/%s: %s kept as it is, tried again in %u ms", s->ns, s->name,
		      a->conflict ?: name, a->backoff_ms);
		return a->conflict ? 0 : -ENOMEM;
	}
	if (r < 0)
		return r;
	if (!a && !(a = applied_add(s, kr, name)))
		return -ENOMEM;
	a->keep = true;
	a->foreign = false;
	free(a->conflict);
	a->conflict = NULL;
	a->backoff_ms = 0;
	a->retry_us = 0;
	memcpy(a->hash, h, HASH_BYTES);
	return 0;
}

/* Public ports other services hold. */
static int taken_ports(struct op_k8s *k, const struct svc *self, uint16_t **ret, size_t *ret_n)
{
	uint16_t *v = NULL;
	size_t n = 0;

	for (size_t i = 0; i < BUCKETS; i++)
		for (struct svc *s = k->b[i]; s; s = s->next) {
			if (s == self || !s->n_pports)
				continue;
			uint16_t *p = realloc(v, (n + s->n_pports) * sizeof(*v));

			if (!p) {
				free(v);
				return -ENOMEM;
			}
			v = p;
			for (size_t j = 0; j < s->n_pports; j++)
				v[n++] = s->pports[j].port;
		}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int render_apply(struct op_k8s *k, struct svc *s, const struct flash_sched_state *gs)
{
	struct flash_render_opts ro = {
		.sz = sizeof(ro), .name = s->name, .namespace_ = s->ns, .uid = s->uid,
		.organization_id = s->org, .project_id = s->project, .service_id = s->id,
	};
	struct flash_render *rd = NULL;
	struct flash_diag *d = NULL;
	int r, first = 0;

	if (s->public_) {
		struct flash_public_port *np = NULL;
		uint16_t *taken = NULL;
		size_t nn = 0, nt = 0;

		r = taken_ports(k, s, &taken, &nt);
		if (r >= 0)
			r = flash_public_ports_assign(k->o.config, s->spec, s->pports, s->n_pports, taken, nt, &np, &nn);
		free(taken);
		if (r < 0) {
			set_problem(s, "PublicPortsExhausted", flash_strerror(r));
			return 0;
		}
		free(s->pports);
		s->pports = np;
		s->n_pports = nn;
		ro.public_ports = np;
		ro.n_public_ports = nn;
	}
	if (flash_diag_new(&d) < 0)
		return -ENOMEM;
	r = flash_render(s->spec, k->o.config, &ro, &rd, d);
	if (r < 0) {
		char line[256];

		set_problem(s, "RenderFailed", first_error(d, r, line, sizeof(line)));
		flash_diag_free(d);
		return 0;
	}
	flash_diag_free(d);
	r = ns_create(k, s);
	s->rendered = false;
	for (size_t i = 0; i < s->n_applied; i++)
		s->applied[i].keep = false;
	for (size_t i = 0; r >= 0 && i < flash_render_count(rd); i++) {
		const char *kind = flash_render_kind(rd, i);
		char *text = NULL;
		size_t len;

		r = flash_render_object_json(rd, i, &text, &len);
		if (r < 0)
			break;
		if (gs && gs->phase == FLASH_SCHED_BOUND && !strcmp(kind, "Deployment")) {
			size_t l2;
			char *b = gpu_bind(text, len, gs, &l2);

			free(text);
			if (!b) {
				r = -ENOMEM;
				break;
			}
			text = b;
			len = l2;
		}
		r = object_apply(k, s, kind, text, len);
		free(text);
		if (r < 0 && !first)
			first = r;
		if (r != -ENOMEM)
			r = 0;
	}
	flash_render_free(rd);
	if (r < 0)
		return r;
	/* Prune: what is no longer rendered goes (the Service when every
	 * port went; the Deployment stays); an object in place that is not
	 * this FlashService's (an unforced conflict) is only forgotten. */
	for (size_t i = 0; !first && i < s->n_applied;) {
		if (s->applied[i].keep) {
			i++;
			continue;
		}
		if (!s->applied[i].foreign) {
			r = delete_obj(k, s->applied[i].kr, s->ns, s->applied[i].name);
			if (r < 0) {
				first = r;
				break;
			}
		}
		applied_remove(s, i);
	}
	s->retry_us = 0;
	for (size_t i = 0; i < s->n_applied; i++)
		if (s->applied[i].conflict && (!s->retry_us || s->applied[i].retry_us < s->retry_us))
			s->retry_us = s->applied[i].retry_us;
	{
		const struct applied *nse = ns_entry(k, s->ns);

		if (nse && nse->conflict && (!s->retry_us || nse->retry_us < s->retry_us))
			s->retry_us = nse->retry_us;
	}
	s->rendered = !first;
	return first;
}

/* ------------------------------------------------------------ one service */

static int gpu_release(struct op_k8s *k, struct svc *s)
{
	if (!s->gpu_held)
		return 0;
	s->gpu_held = false;
	(void)flash_sched_cancel(k->sched, s->id);
	return flash_sched_schedule(k->sched);
}

static int reconcile(struct op_k8s *k, struct svc *s);

/* Schedules the queues and reconciles every GPU service whose place
 * changed (bound, moved, returned to its queue). */
static int gpu_followup(struct op_k8s *k)
{
	int first = 0;

	(void)flash_sched_schedule(k->sched);
	for (size_t i = 0; i < BUCKETS; i++)
		for (struct svc *s = k->b[i]; s; s = s->next) {
			struct flash_sched_state gs;
			int r;

			if (!s->gpu_type || s->deleting)
				continue;
			if (!s->gpu_held && !strcmp(s->problem_reason, "GPUUnavailable")) {
				s->problem_reason[0] = s->problem[0] = '\0'; /* a node came: try again */
			} else if (!s->gpu_held || flash_sched_state(k->sched, s->id, &gs) < 0 ||
				   gs.version == s->gpu_version)
				continue;
			r = reconcile(k, s);
			if (r < 0 && !first)
				first = r;
		}
	return first;
}

static int reconcile_one(struct op_k8s *k, struct svc *s);

/* One service's writes; a write fenced by the leadership deadline leaves
 * it to op_k8s_reconcile_pending() (other failures wait for the service's
 * next event or the resync, as before: no retry storm on a 403). */
static int reconcile(struct op_k8s *k, struct svc *s)
{
	bool hit = k->fence_hit;
	int r;

	if (!k->leader)
		return 0;
	s->leader_done = true;
	k->fence_hit = false;
	r = reconcile_one(k, s);
	if (k->fence_hit)
		s->leader_done = false;
	k->fence_hit = hit || k->fence_hit;
	return r;
}

/* write_status() outside reconcile(): a fenced write leaves the service pending. */
static int status_or_pending(struct op_k8s *k, struct svc *s)
{
	bool hit = k->fence_hit;
	int r;

	k->fence_hit = false;
	r = write_status(k, s);
	if (k->fence_hit)
		s->leader_done = false;
	k->fence_hit = hit || k->fence_hit;
	return r;
}

static int reconcile_one(struct op_k8s *k, struct svc *s)
{
	struct flash_sched_state gs = { 0 };
	bool queued = false;
	int r = 0;

	if (s->deleting) {
		if (s->gpu_held) {
			gpu_release(k, s);
			(void)gpu_followup(k);
		}
		if (!s->has_finalizer)
			return 0;
		if (!s->usage_written) {
			r = write_usage(k, s);
			if (r < 0)
				return r;
			s->usage_written = true;
		}
		return apply_finalizer(k, s, false);
	}
	if (!s->has_finalizer && s->org && s->id) {
		r = apply_finalizer(k, s, true);
		if (r < 0)
			return r;
	}
	if (s->valid && s->gpu_type) {
		if (!s->gpu_held) {
			struct flash_sched_request rq = {
				.sz = sizeof(rq), .id = s->id, .gpu_type = s->gpu_type,
				.count = s->gpu_count, .organization = s->org,
			};
			struct flash_diag *d = NULL;

			if (flash_diag_new(&d) < 0)
				return -ENOMEM;
			r = flash_sched_enqueue(k->sched, &rq, d);
			if (r >= 0) {
				s->gpu_held = true;
				(void)flash_sched_schedule(k->sched);
			} else {
				char line[256];

				set_problem(s, "GPUUnavailable", first_error(d, r, line, sizeof(line)));
			}
			flash_diag_free(d);
			r = 0;
		}
		if (s->gpu_held && flash_sched_state(k->sched, s->id, &gs) == 0) {
			s->gpu_version = gs.version;
			queued = gs.phase == FLASH_SCHED_QUEUED;
		}
	}
	if (s->valid && !s->problem_reason[0] && !queued)
		r = render_apply(k, s, s->gpu_held ? &gs : NULL);
	{
		int r2 = write_status(k, s);

		if (!r)
			r = r2;
	}
	return r;
}

static bool has_finalizer(const struct json_value *fs)
{
	const struct json_value *f = json_at(fs, "metadata.finalizers");

	for (size_t i = 0; f && json_is(f, JSON_ARRAY) && i < f->u.array.n; i++)
		if (!strcmp(json_string_value(f->u.array.items[i]) ?: "", OP_K8S_USAGE_FINALIZER))
			return true;
	return false;
}

/* Takes in what a FlashService object says; true when something that
 * matters for the writes changed. */
static int svc_update(struct op_k8s *k, struct svc *s, const struct json_value *fs)
{
	const struct json_value *spec = json_get(fs, "spec");
	const char *uid = str_at(fs, "metadata.uid");
	const char *org, *uid_or_id = uid;
	int64_t gen = 0;
	char *text;
	size_t len;

	/* json_at() splits on '.': label keys are read with json_get(). */
	{
		const struct json_value *labels = json_at(fs, "metadata.labels");

		const char *sid = json_string_value(json_get(labels, OP_K8S_LABEL_SERVICE_ID));

		org = json_string_value(json_get(labels, OP_K8S_LABEL_ORG));
		replace_str(&s->project, json_string_value(json_get(labels, OP_K8S_LABEL_PROJECT)));
		/* The provider API's id when it published the service (it names
		 * the object by its id), else the uid: a label copied onto
		 * another object (kubectl get -o yaml, renamed) never makes it
		 * share the first one's id, GPU slots and usage. */
		if (sid && !strcmp(sid, s->name) && names_opaque_id_valid(sid, strlen(sid), 253))
			uid_or_id = sid;
	}
	(void)json_get_int64(json_at(fs, "metadata.generation"), &gen);
	s->generation = gen;
	replace_str(&s->uid, uid);
	replace_str(&s->org, org);
	replace_str(&s->id, uid_or_id);
	s->deleting = json_at(fs, "metadata.deletionTimestamp") != NULL;
	s->has_finalizer = has_finalizer(fs);
	if (!s->status && json_get(fs, "status")) {
		s->status = clone(json_get(fs, "status"));
		/* The public ports it was given keep their numbers. */
		if (!s->n_pports && json_get(s->status, "publicPorts")) {
			size_t plen;
			char *pt = write_value(s->status, &plen);

			if (pt && flash_public_ports_parse(pt, plen, &s->pports, &s->n_pports, NULL) < 0) {
				s->pports = NULL;
				s->n_pports = 0;
			}
			free(pt);
		}
	}
	text = spec ? write_value(spec, &len) : strdup("null");
	if (!text)
		return -ENOMEM;
	if (s->spec_json && !strcmp(s->spec_json, text)) {
		free(text);
		return 0;
	}
	free(s->spec_json);
	s->spec_json = text;
	flash_spec_free(s->spec);
	s->spec = NULL;
	s->problem_reason[0] = s->problem[0] = '\0';
	s->valid = false;
	if (!s->org || !names_label_value_valid(s->org)) {
		set_problem(s, "InvalidSpec", "label " OP_K8S_LABEL_ORG " missing or not a label value");
	} else {
		struct flash_diag *d = NULL;
		int r;

		if (flash_diag_new(&d) < 0)
			return -ENOMEM;
		r = flash_spec_parse(text, strlen(text), NULL, &s->spec, d);
		if (r < 0) {
			char line[256];

			set_problem(s, "InvalidSpec", first_error(d, r, line, sizeof(line)));
		}
		flash_diag_free(d);
	}
	if (s->spec) {
		const char *gt = flash_spec_gpu_type(s->spec);
		bool gpu_changed = (gt == NULL) != (s->gpu_type == NULL) || (gt && strcmp(gt, s->gpu_type)) ||
				   (gt && flash_spec_gpu_count(s->spec) != s->gpu_count);

		s->valid = true;
		s->replicas = flash_spec_replicas(s->spec);
		s->cpu = flash_spec_cpu_millis(s->spec);
		s->mem = flash_spec_memory_mib(s->spec);
		s->has_service = flash_spec_port_count(s->spec) > 0;
		s->public_ = flash_spec_exposure_type(s->spec) == FLASH_SPEC_EXPOSURE_PUBLIC;
		if (gpu_changed)
			gpu_release(k, s);
		replace_str(&s->gpu_type, gt);
		s->gpu_count = gt ? flash_spec_gpu_count(s->spec) : 0;
	}
	return 0;
}

static void svc_forget(struct op_k8s *k, struct svc *s)
{
	struct svc **pp = &k->b[bucket(s->ns, s->name)];
	bool gpu = s->gpu_held;

	gpu_release(k, s);
	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp)
		*pp = s->next;
	svc_free(s);
	k->st.services--;
	if (gpu)
		(void)gpu_followup(k);
}

/* ------------------------------------------------------------ stale objects */

/* The namespaced kinds flash_render() gives, listed for stale objects. */
static const char *const rendered_kinds[] = {
	"PersistentVolumeClaim", "NetworkPolicy", "Deployment", "HorizontalPodAutoscaler", "Service", "HTTPRoute",
};

struct stale {
	char ns[64], name[254], owner[254], uid[128];
};

struct stale_list {
	struct stale *v;
	size_t n;
	int err;
};

/* One listed object: kept as a candidate when a FlashService is its
 * owner (by ownerReferences: the label alone proves nothing). */
static int stale_item(const struct json_value *item, void *userdata)
{
	const struct json_value *refs = json_at(item, "metadata.ownerReferences");
	struct stale_list *l = userdata;

	for (size_t i = 0; refs && json_is(refs, JSON_ARRAY) && i < refs->u.array.n; i++) {
		const struct json_value *r = refs->u.array.items[i];
		struct stale *p;

		if (strcmp(str_at(r, "kind") ?: "", "FlashService") ||
		    strcmp(str_at(r, "apiVersion") ?: "", OP_K8S_GROUP "/" OP_K8S_VERSION) || !str_at(r, "uid") ||
		    !str_at(r, "name"))
			continue;
		p = realloc(l->v, (l->n + 1) * sizeof(*p));
		if (!p) {
			l->err = -ENOMEM;
			return 1;
		}
		l->v = p;
		p += l->n++;
		snprintf(p->ns, sizeof(p->ns), "%s", str_at(item, "metadata.namespace") ?: "");
		snprintf(p->name, sizeof(p->name), "%s", str_at(item, "metadata.name") ?: "");
		snprintf(p->owner, sizeof(p->owner), "%s", str_at(r, "name"));
		snprintf(p->uid, sizeof(p->uid), "%s", str_at(r, "uid"));
		break;
	}
	return 0;
}

/* What an earlier operator (before a restart or a leader change) applied
 * and the current specs no longer render: each rendered kind is listed
 * in every namespace by the operator's managed-by label (paginated), and
 * an object is deleted only when its ownerReferences name a FlashService
 * held here by uid, that service's rendering was applied whole, and it
 * is not part of that rendering.  An object owned by a FlashService that
 * no longer exists (or was recreated: another uid) is left to the
 * garbage collector, which deletes a dependent once no owner of its
 * ownerReferences exists; an object without such an owner is never
 * touched (a copied label is not ownership).  A kind the server does not
 * serve (404: Gateway API not installed) has nothing to prune. */
static int stale_prune(struct op_k8s *k)
{
	int first = 0;

	if (!k->leader || k->syncing || !k->st.services)
		return 0; /* only objects of a service held are ever deleted */
	for (size_t i = 0; i < ARRAY_SIZE(rendered_kinds) && !atomic_load(&k->cancelled); i++) {
		const struct kind_ref *kr = kind_find(rendered_kinds[i]);
		struct k8s_ref ref = { .group = kr->group, .version = kr->version, .resource = kr->resource };
		struct k8s_list_opts lo = { .sz = sizeof(lo), .label_selector = OP_K8S_OWNED_SELECTOR, .limit = 500 };
		struct k8s_status st = { 0 };
		struct stale_list l = { 0 };
		int r;

		k->st.requests++;
		r = k8s_list(k->c, &ref, &lo, stale_item, &l, NULL, &st);
		if (l.err < 0)
			r = l.err;
		if (r == -ENOENT) {
			k8s_status_clear(&st);
			r = 0;
		} else if (r < 0) {
			char what[128];

			snprintf(what, sizeof(what), "list %s for stale objects", kr->resource);
			(void)settle(k, what, r, &st, NULL);
		}
		k8s_status_clear(&st);
		for (size_t j = 0; r >= 0 && j < l.n; j++) {
			struct stale *o = &l.v[j];
			struct svc *s = svc_find(k, o->ns, o->owner);

			if (!s || !s->uid || strcmp(s->uid, o->uid) || !s->rendered || s->deleting ||
			    applied_find(s, kr, o->name))
				continue;
			logf_(k, K8S_LOG_INFO, "%s %s/%s: owned by FlashService %s but no longer rendered (applied before "
			      "a restart or by an earlier leader): deleting", kr->kind, o->ns, o->name, o->owner);
			r = delete_obj(k, kr, o->ns, o->name);
			if (r >= 0)
				k->st.stale_deleted++;
		}
		free(l.v);
		if (r < 0 && !first)
			first = r;
	}
	return first;
}

int op_k8s_service_event(struct op_k8s *k, const struct k8s_event *ev)
{
	const char *ns, *name;
	struct svc *s;
	int r;

	if (!k || !ev)
		return -EINVAL;
	if (ev->type == K8S_EVENT_RELIST || ev->type == K8S_EVENT_SYNCED) {
		for (size_t i = 0; i < BUCKETS; i++)
			for (struct svc *x = k->b[i], *n; x; x = n) {
				n = x->next;
				if (ev->type == K8S_EVENT_RELIST)
					x->seen = false;
				else if (!x->seen)
					svc_forget(k, x);
			}
		k->syncing = ev->type == K8S_EVENT_RELIST;
		if (k->syncing)
			return 0;
		r = op_k8s_resync(k);
		{
			int r2 = stale_prune(k);

			return r < 0 ? r : r2;
		}
	}
	if (ev->type == K8S_EVENT_BOOKMARK || !ev->object)
		return 0;
	ns = str_at(ev->object, "metadata.namespace");
	name = str_at(ev->object, "metadata.name");
	if (!ns || !name)
		return -EBADMSG;
	s = svc_find(k, ns, name);
	if (ev->type == K8S_EVENT_DELETED) {
		if (s)
			svc_forget(k, s);
		return 0;
	}
	if (!s) {
		size_t b = bucket(ns, name);

		s = calloc(1, sizeof(*s));
		if (!s || !(s->ns = strdup(ns)) || !(s->name = strdup(name))) {
			svc_free(s);
			return -ENOMEM;
		}
		s->next = k->b[b];
		k->b[b] = s;
		k->st.services++;
	}
	s->seen = true;
	r = svc_update(k, s, ev->object);
	if (r < 0 || k->syncing)
		return r;
	return reconcile(k, s);
}

/* ------------------------------------------------------------ owned objects */

/* The end of an owned-object list: what it did not hold was deleted while
 * the watch was down.  A Deployment or Service gone is applied again;
 * every status is written when it changed. */
static int owned_synced(struct op_k8s *k, enum op_k8s_owned kind)
{
	unsigned int gen = k->owned_gen[kind];
	int first = 0;

	k->owned_listing[kind] = false;
	for (size_t i = 0; i < BUCKETS; i++)
		for (struct svc *s = k->b[i]; s; s = s->next) {
			const struct kind_ref *kr = NULL;
			const char *gone = NULL;
			int r;

			switch (kind) {
			case OP_K8S_OWNED_DEPLOYMENT:
				if (s->deployment && s->deployment_gen != gen) {
					kr = kind_find("Deployment");
					gone = str_at(s->deployment, "metadata.name");
				}
				break;
			case OP_K8S_OWNED_SERVICE:
				if (s->service && s->service_gen != gen) {
					kr = kind_find("Service");
					gone = str_at(s->service, "metadata.name");
				}
				break;
			case OP_K8S_OWNED_POD:
				(void)objset_sweep(&s->pods, gen);
				break;
			case OP_K8S_OWNED_ENDPOINTSLICE:
				(void)objset_sweep(&s->slices, gen);
				break;
			}
			if (kr) {
				struct applied *a = applied_find(s, kr, gone ?: "");

				if (a)
					memset(a->hash, 0, sizeof(a->hash)); /* applied again */
				if (kind == OP_K8S_OWNED_DEPLOYMENT) {
					json_free(s->deployment);
					s->deployment = NULL;
				} else {
					json_free(s->service);
					s->service = NULL;
				}
				r = a ? reconcile(k, s) : status_or_pending(k, s);
			} else
				r = status_or_pending(k, s);
			if (r < 0 && !first)
				first = r;
		}
	return first;
}

int op_k8s_owned_event(struct op_k8s *k, enum op_k8s_owned kind, const struct k8s_event *ev)
{
	const struct json_value *labels;
	const char *ns, *owner, *name;
	struct svc *s;
	unsigned int gen;
	bool del;
	int r = 0;

	if (!k || !ev || (unsigned int)kind >= ARRAY_SIZE(k->owned_gen))
		return -EINVAL;
	if (ev->type == K8S_EVENT_RELIST) {
		k->owned_gen[kind]++;
		k->owned_listing[kind] = true;
		return 0;
	}
	if (ev->type == K8S_EVENT_SYNCED)
		return owned_synced(k, kind);
	if (!ev->object || ev->type == K8S_EVENT_BOOKMARK)
		return 0;
	gen = k->owned_gen[kind];
	ns = str_at(ev->object, "metadata.namespace");
	name = str_at(ev->object, "metadata.name");
	labels = json_at(ev->object, "metadata.labels");
	owner = json_string_value(json_get(labels, "app.kubernetes.io/name"));
	if (kind == OP_K8S_OWNED_ENDPOINTSLICE && !owner)
		owner = json_string_value(json_get(labels, "kubernetes.io/service-name"));
	s = svc_find(k, ns, owner);
	if (!s || !name)
		return 0;
	del = ev->type == K8S_EVENT_DELETED;
	switch (kind) {
	case OP_K8S_OWNED_DEPLOYMENT:
		json_free(s->deployment);
		s->deployment = del ? NULL : clone(ev->object);
		s->deployment_gen = gen;
		break;
	case OP_K8S_OWNED_SERVICE:
		json_free(s->service);
		s->service = del ? NULL : clone(ev->object);
		s->service_gen = gen;
		break;
	case OP_K8S_OWNED_POD:
		r = objset_put(&s->pods, name, del ? NULL : ev->object, gen);
		break;
	case OP_K8S_OWNED_ENDPOINTSLICE:
		r = objset_put(&s->slices, name, del ? NULL : ev->object, gen);
		break;
	default:
		return -EINVAL;
	}
	if (r < 0 || k->owned_listing[kind])
		return r; /* the list's end (SYNCED) writes what changed */
	if (del && k->leader && (kind == OP_K8S_OWNED_DEPLOYMENT || kind == OP_K8S_OWNED_SERVICE)) {
		/* Deleted behind our back: apply it again. */
		const struct kind_ref *kr = kind_find(kind == OP_K8S_OWNED_DEPLOYMENT ? "Deployment" : "Service");
		struct applied *a = applied_find(s, kr, name);

		if (a) {
			memset(a->hash, 0, sizeof(a->hash));
			return reconcile(k, s);
		}
	}
	return status_or_pending(k, s);
}

/* ------------------------------------------------------------ nodes, resync */

int op_k8s_node_event(struct op_k8s *k, const struct k8s_event *ev)
{
	const char *type;
	int r;

	if (!k || !ev)
		return -EINVAL;
	switch (ev->type) {
	case K8S_EVENT_ADDED:
		type = "ADDED";
		break;
	case K8S_EVENT_MODIFIED:
		type = "MODIFIED";
		break;
	case K8S_EVENT_DELETED:
		type = "DELETED";
		break;
	default:
		return 0;
	}
	r = op_k8s_gpu_node_event(k->sched, type, ev->object, NULL, NULL);
	if (r < 0)
		logf_(k, K8S_LOG_WARNING, "node %s: not usable for GPUs (%d)", str_at(ev->object, "metadata.name") ?: "?",
		      r);
	return gpu_followup(k);
}

int op_k8s_resync(struct op_k8s *k)
{
	int first = 0;

	if (!k)
		return -EINVAL;
	for (size_t i = 0; i < BUCKETS && !atomic_load(&k->cancelled); i++)
		for (struct svc *s = k->b[i]; s && !atomic_load(&k->cancelled); s = s->next) {
			int r = reconcile(k, s);

			if (r < 0 && !first)
				first = r;
		}
	return first;
}

/* Also the services whose unforced apply conflict is due again. */
int op_k8s_reconcile_pending(struct op_k8s *k)
{
	int first = 0;

	if (!k)
		return -EINVAL;
	if (!k->leader || k->syncing)
		return 0;
	for (size_t i = 0; i < BUCKETS && !atomic_load(&k->cancelled); i++)
		for (struct svc *s = k->b[i]; s && !atomic_load(&k->cancelled); s = s->next) {
			bool due = !s->leader_done || (s->retry_us && mono_now(k) >= s->retry_us);
			int r = due ? reconcile(k, s) : 0;

			if (r < 0 && !first)
				first = r;
		}
	return first;
}

/* Drops the marks of the weeks before @week_start: their records are
 * never written again. */
static void marks_prune(struct op_k8s *k, int64_t week_start)
{
	size_t j = 0;

	for (size_t i = 0; i < k->n_marks; i++)
		if (k->marks[i].week_start >= week_start)
			k->marks[j++] = k->marks[i];
	k->n_marks = j;
}

int op_k8s_usage_flush(struct op_k8s *k)
{
	int64_t now, week;
	int first = 0;

	if (!k)
		return -EINVAL;
	if (!k->leader)
		return 0;
	now = now_s(k);
	if (flash_meter_week_start(now, &week) < 0)
		return -EINVAL;
	marks_prune(k, week);
	k->pass++;
	for (size_t i = 0; i < BUCKETS && !atomic_load(&k->cancelled); i++)
		for (struct svc *s = k->b[i]; s && !atomic_load(&k->cancelled); s = s->next) {
			char name[OP_K8S_USAGE_NAME_MAX + 1];
			struct usage_mark *m;
			int r;

			if (!s->org || !s->id || s->deleting)
				continue;
			r = usage_flush(k, usage_ns(k, s), FLASH_METER_SCOPE_SERVICE, s->id, s->org, now);
			/* The organization's record once a pass. */
			if (r >= 0 && op_k8s_usage_record_name(false, s->org, now, name, sizeof(name)) >= 0 &&
			    (!(m = mark_get(k, usage_ns(k, s), name, week)) || m->pass != k->pass))
				r = usage_flush(k, usage_ns(k, s), FLASH_METER_SCOPE_ORGANIZATION, s->org, s->org, now);
			if (r < 0 && !first)
				first = r;
		}
	return first;
}

int op_k8s_set_leader(struct op_k8s *k, bool leader)
{
	bool was;

	if (!k)
		return -EINVAL;
	was = k->leader;
	k->leader = leader;
	if (leader && !was) {
		int r, r2;

		logf_(k, K8S_LOG_INFO, "leader: reconciling %" PRIu64 " services", k->st.services);
		r = op_k8s_resync(k);
		r2 = stale_prune(k);
		return r < 0 ? r : r2;
	}
	return 0;
}

int op_k8s_gpu_state(const struct op_k8s *k, const char *ns, const char *name, uint32_t *ret_position,
		     const char **ret_node)
{
	struct flash_sched_state gs;
	struct svc *s;

	if (!k)
		return -EINVAL;
	s = svc_find((struct op_k8s *)k, ns, name);
	if (!s || !s->gpu_held || flash_sched_state(k->sched, s->id, &gs) < 0)
		return -ENOENT;
	if (ret_position)
		*ret_position = gs.phase == FLASH_SCHED_QUEUED ? gs.position : 0;
	if (ret_node)
		*ret_node = gs.node;
	return 0;
}
