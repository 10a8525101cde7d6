/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * provider/v1 request handling (provider.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <flash/client.h>
#include <flash/meter.h>
#include <flash/spec.h>

#include "get-cache.h"
#include "json.h"
#include "k8s-exec.h"
#include "k8s-reconcile.h"
#include "provider.h"
#include "util.h"
#include "websocket.h"

#define API_PREFIX "/provider/v1/"
#define EVENTS_SHOWN 10
#define NAME_MAX_LEN 52

struct op_provider {
	struct op_provider_opts o;
	const struct op_image_ops *image;
	struct flash_operator_config *own_config; /* when none was given */
	const struct flash_operator_config *config;
	pthread_mutex_t lock; /* store + meter + get cache */
	struct flash_meter *meter;
	struct op_runtime *runtime; /* NULL: services stay admitted */
	void (*kick)(void *ctx);    /* Kubernetes mode's publisher, or NULL */
	void *kick_ctx;
	/* Kubernetes mode's Pods (exec, logs): a new client each time. */
	int (*k8s_client)(void *ctx, struct k8s_client **ret);
	void *k8s_ctx;
	/* Kubernetes mode: the FlashService's status, or NULL. */
	int (*status_fn)(void *ctx, const struct op_service *s, struct op_service_status *ret);
	void *status_ctx;
	struct op_autoscale *autoscale; /* NULL: none */
	struct op_get_cache *get_cache;
	struct op_shell *shell;     /* NULL once stopped */
};

static int64_t now_of(struct op_provider *p)
{
	return p->o.now ? p->o.now(p->o.now_ctx) : (int64_t)time(NULL);
}

static int64_t meter_now_of(struct op_provider *p)
{
	return p->o.meter_now ? p->o.meter_now(p->o.meter_now_ctx) : now_of(p);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- JSON out */

/* Answers are written with common/'s JSON writer (sticky errors: the
 * answer is built linearly and checked once at the end); these short
 * names keep the views readable. */
struct out {
	struct json_writer *w;
};

static void o_str(struct out *o, const char *s) { jw_string(o->w, s ? s : ""); }
static void o_key(struct out *o, const char *k) { jw_key(o->w, k); }
static void o_kstr(struct out *o, const char *k, const char *v) { o_key(o, k); o_str(o, v); }
static void o_kuint(struct out *o, const char *k, uint64_t v) { jw_kv_uint(o->w, k, v); }
static void o_kint(struct out *o, const char *k, int64_t v) { jw_kv_int(o->w, k, v); }
static void o_kbool(struct out *o, const char *k, bool v) { jw_kv_bool(o->w, k, v); }
static void o_open(struct out *o) { jw_object_open(o->w); }
static void o_close(struct out *o) { jw_object_close(o->w); }
static void o_aopen(struct out *o) { jw_array_open(o->w); }
static void o_aclose(struct out *o) { jw_array_close(o->w); }
static void o_value(struct out *o, const struct json_value *v) { jw_value(o->w, v); }

static void o_time(struct out *o, const char *k, int64_t t)
{
	char buf[FLASH_METER_TIME_STRLEN];

	if (flash_meter_format_time(t, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	o_kstr(o, k, buf);
}

static int o_begin(struct out *o)
{
	o->w = json_writer_new(JSON_WRITE_NEWLINE);
	return o->w ? 0 : -ENOMEM;
}

/* Ends the document into *ret (NUL-terminated, with a final newline). */
static int o_end(struct out *o, char **ret, size_t *ret_len)
{
	int r = json_writer_finish(o->w, ret, ret_len);

	o->w = NULL;
	return r;
}

/* ---------------------------------------------------------------- answers */

static const char internal_error[] = "{\"error\":{\"code\":\"internal\",\"message\":\"cannot build the answer\"}}\n";

static void set_static_500(struct op_response *r)
{
	free(r->body);
	r->status = 500;
	r->body = strdup(internal_error);
	r->body_len = r->body ? strlen(r->body) : 0;
}

/* An error answer: code, message and optional extra members written by
 * @extra. */
static void answer_error_extra(struct op_response *ret, int status, const char *code, void (*extra)(struct out *, const void *),
			       const void *ctx, const char *fmt, ...) _printf_(6, 7);
static void answer_error_extra(struct op_response *ret, int status, const char *code, void (*extra)(struct out *, const void *),
			       const void *ctx, const char *fmt, ...)
{
	char msg[1536];
	struct out o;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ret->status = status;
	if (o_begin(&o) < 0) {
		set_static_500(ret);
		return;
	}
	o_open(&o);
	o_key(&o, "error");
	o_open(&o);
	o_kstr(&o, "code", code);
	o_kstr(&o, "message", msg);
	if (extra)
		extra(&o, ctx);
	o_close(&o);
	o_close(&o);
	if (o_end(&o, &ret->body, &ret->body_len) < 0)
		set_static_500(ret);
}

#define answer_error(ret, status, code, ...) answer_error_extra(ret, status, code, NULL, NULL, __VA_ARGS__)

static void answer_transient(struct op_provider *p, struct op_response *ret, const char *what)
{
	answer_error(ret, 503, "unavailable", "%s: retry", what);
	ret->retry_after = p->o.retry_after ? p->o.retry_after : 2;
}

/* Problems of a struct flash_diag as "path" (the first error's) and
 * "problems": [...]. */
static void extra_diag(struct out *o, const void *ctx)
{
	const struct flash_diag *d = ctx;
	bool path_done = false;

	for (size_t i = 0; i < flash_diag_count(d) && !path_done; i++) {
		const struct flash_diag_entry *e = flash_diag_get(d, i);

		if (e->severity == FLASH_DIAG_ERROR) {
			o_kstr(o, "path", e->path);
			path_done = true;
		}
	}
	o_key(o, "problems");
	o_aopen(o);
	for (size_t i = 0; i < flash_diag_count(d); i++) {
		const struct flash_diag_entry *e = flash_diag_get(d, i);

		if (e->severity != FLASH_DIAG_ERROR)
			continue;
		o_open(o);
		o_kstr(o, "path", e->path);
		o_kstr(o, "code", e->code);
		o_kstr(o, "message", e->message);
		o_close(o);
	}
	o_aclose(o);
}

static void extra_path(struct out *o, const void *ctx)
{
	o_kstr(o, "path", ctx);
}

static void extra_reason(struct out *o, const void *ctx)
{
	o_kstr(o, "reason", ctx);
}

/* ---------------------------------------------------------------- service view */

/* "@key": [{...}, ...]: @n objects whose members @item writes. */
static void o_objects(struct out *o, const char *key, size_t n, void (*item)(struct out *o, const void *v, size_t i),
		      const void *v)
{
	o_key(o, key);
	o_aopen(o);
	for (size_t i = 0; i < n; i++) {
		o_open(o);
		item(o, v, i);
		o_close(o);
	}
	o_aclose(o);
}

static void o_port(struct out *o, const void *v, size_t i)
{
	const struct flash_public_port *p = (const struct flash_public_port *)v + i;

	o_kstr(o, "name", p->name);
	o_kstr(o, "protocol", p->protocol);
	o_kuint(o, "port", p->port);
}

static void o_event(struct out *o, const void *v, size_t i)
{
	const struct op_event *e = (const struct op_event *)v + i;

	o_time(o, "time", e->time);
	o_kstr(o, "type", e->type);
	o_kstr(o, "message", e->message);
}

static void o_ports(struct out *o, const struct flash_public_port *ports, size_t n)
{
	o_objects(o, "public_ports", n, o_port, ports);
}

static void o_replica(struct out *o, const void *v, size_t i)
{
	const struct op_replica_view *r = (const struct op_replica_view *)v + i;

	o_kuint(o, "index", r->index);
	o_kuint(o, "generation", r->generation);
	o_kstr(o, "state", r->state);
	o_kstr(o, "address", r->address);
	o_kuint(o, "restarts", r->restarts);
}

/* The autoscaler's last decision (autoscale.h). */
static void o_autoscale(struct out *o, const struct op_autoscale_view *v)
{
	o_key(o, "autoscaling");
	o_open(o);
	o_kuint(o, "current_replicas", v->current);
	o_kuint(o, "desired_replicas", v->desired);
	o_kuint(o, "measured_replicas", v->measured);
	o_kuint(o, "cpu_percent", v->utilisation_percent);
	o_kstr(o, "reason", v->reason);
	if (v->last_scaled)
		o_time(o, "last_scaled_at", v->last_scaled);
	o_close(o);
}

static void o_condition(struct out *o, const void *v, size_t i)
{
	const struct op_condition_view *c = (const struct op_condition_view *)v + i;

	o_kstr(o, "type", c->type);
	o_kstr(o, "status", c->status);
	o_kstr(o, "reason", c->reason);
	o_kstr(o, "message", c->message);
	if (c->since[0])
		o_kstr(o, "last_transition_time", c->since);
}

static void o_runtime_status(struct out *o, const struct op_service_status *st, const struct op_autoscale_view *as)
{
	o_kstr(o, "phase", st->phase);
	o_kbool(o, "ready", st->ready);
	o_kstr(o, "message", st->message);
	o_kuint(o, "replicas_wanted", st->wanted);
	o_kuint(o, "replicas_ready", st->ready_replicas);
	o_kuint(o, "restarts", st->restarts);
	o_objects(o, "replicas", st->n_replicas, o_replica, st->replicas);
	if (st->n_conditions) {
		o_kint(o, "observed_generation", st->observed_generation);
		o_objects(o, "conditions", st->n_conditions, o_condition, st->conditions);
	}
	if (as)
		o_autoscale(o, as);
}

/* @st: the runtime's view of the service, NULL when there is none yet
 * (or no runtime); @as: the autoscaler's, NULL when none. */
static void o_service(struct out *o, const struct op_service *s, const struct op_event *ev, size_t n_ev,
		      const struct op_service_status *st, const struct op_autoscale_view *as)
{
	o_open(o);
	o_kstr(o, "id", s->id);
	o_kstr(o, "name", s->name);
	o_kstr(o, "project", s->project);
	o_kuint(o, "generation", s->generation);
	o_kstr(o, "operation_id", s->operation_id);
	o_key(o, "status");
	o_open(o);
	if (st) {
		o_runtime_status(o, st, as);
	} else {
		o_kstr(o, "phase", s->phase);
		o_kbool(o, "ready", false);
		o_kstr(o, "message", "admitted and stored; no replica runs yet");
	}
	o_close(o);
	o_key(o, "image");
	o_open(o);
	o_kstr(o, "digest", s->image_digest);
	o_kstr(o, "pinned", s->image_pinned);
	o_kuint(o, "charged_bytes", s->image_bytes);
	o_close(o);
	o_ports(o, s->ports, s->n_ports);
	o_kstr(o, "spec_digest", s->spec_digest);
	o_key(o, "spec");
	jw_raw(o->w, s->spec, strlen(s->spec));
	o_time(o, "created_at", s->created_at);
	o_time(o, "updated_at", s->updated_at);
	if (ev)
		o_objects(o, "events", n_ev, o_event, ev);
	o_close(o);
}

static int service_json(const struct op_service *s, const struct op_event *ev, size_t n_ev,
			const struct op_service_status *st, const struct op_autoscale_view *as, char **ret,
			size_t *ret_len)
{
	struct out o;
	int r = o_begin(&o);

	if (r < 0)
		return r;
	o_service(&o, s, ev, n_ev, st, as);
	return o_end(&o, ret, ret_len);
}

/* ---------------------------------------------------------------- ids */

_Static_assert(OP_SERVICE_ID_STRLEN == FLASH_CLIENT_SERVICE_ID_STRLEN, "the operator's ids are libflash's");

int op_service_id(const char *org, const char *project, const char *name, char ret[OP_SERVICE_ID_STRLEN])
{
	return flash_client_service_id(org, project, name, ret);
}

/* Service names become Kubernetes object names in the Kubernetes mode:
 * an RFC 1035 label of at most 52 characters (flash_render's rule). */
static bool service_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > NAME_MAX_LEN || !(s[0] >= 'a' && s[0] <= 'z') || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/* The one suspension rule (under the lock): 0, or -EDQUOT with @msg when
 * @org's weekly usage stops @spec's workloads (op_admission_check_suspension),
 * or a meter error.  No policy or no weekly limits: never suspended. */
static int suspension_of(struct op_provider *p, const char *org, const struct flash_spec *spec, int64_t now, char *msg,
			 size_t msg_size)
{
	struct flash_policy_weekly_limits wl = { .sz = sizeof(wl) };
	struct flash_meter_decision d;
	int r;

	if (!p->o.policy || flash_policy_weekly_limits(p->o.policy, &wl) < 0)
		return 0;
	struct flash_meter_limits ml = { .sz = sizeof(ml), .cpu_millicore_seconds = wl.cpu_millicore_seconds,
					 .memory_mib_seconds = wl.memory_mib_seconds, .gpu_seconds = wl.gpu_seconds };

	r = flash_meter_decide(p->meter, org, &ml, now, &d);
	if (r == -FLASH_E_METER_ID)
		return 0; /* nothing metered for it yet */
	if (r < 0)
		return r;
	r = op_admission_check_suspension(&d, spec, msg, msg_size);
	flash_meter_decision_clear(&d);
	return r;
}

/* The meter's id of a service incarnation: "ID:gN" (N: the generation of
 * the create that started it), so that a re-created service is new. */
static void meter_id(const struct op_service *s, char *buf, size_t size)
{
	snprintf(buf, size, "%s:g%" PRIu64, s->id, s->created_generation);
}

/* Saves the meter into the store (its own transaction). */
static int meter_save(struct op_provider *p)
{
	char *json = NULL;
	int r = flash_meter_to_json(p->meter, &json, NULL);

	if (r == 0)
		r = op_store_begin(p->o.store);
	if (r == 0) {
		r = op_store_meter_put(p->o.store, json);
		if (r == 0)
			r = op_store_commit(p->o.store, NULL);
		if (r < 0)
			op_store_rollback(p->o.store);
	}
	free(json);
	return r;
}

int op_provider_observe(void *ctx, const struct op_service *s, const struct flash_spec *spec, uint32_t ready)
{
	struct op_provider *p = ctx;
	char id[OP_SERVICE_ID_STRLEN + 24];
	int r;

	if (!p || !s || !spec)
		return -EINVAL;
	meter_id(s, id, sizeof(id));
	struct flash_meter_observation obs = {
		.sz = sizeof(obs), .service_id = id, .organization = s->org, .time = meter_now_of(p),
		.ready_replicas = ready, .cpu_millis = flash_spec_cpu_millis(spec),
		.memory_mib = flash_spec_memory_mib(spec), .gpu_count = flash_spec_gpu_count(spec),
	};
	pthread_mutex_lock(&p->lock);
	r = flash_meter_observe(p->meter, &obs);
	if (r >= 0)
		r = meter_save(p);
	pthread_mutex_unlock(&p->lock);
	return r;
}

int op_provider_suspended(void *ctx, const struct op_service *s, const struct flash_spec *spec, char *msg,
			  size_t msg_size)
{
	struct op_provider *p = ctx;
	int64_t now;
	int r;

	if (!p || !s || !spec)
		return -EINVAL;
	now = meter_now_of(p); /* read before the lock: the clock may be a file */
	pthread_mutex_lock(&p->lock);
	r = suspension_of(p, s->org, spec, now, msg, msg_size);
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* ---------------------------------------------------------------- lifecycle */

void op_provider_event(void *ctx, const char *service_id, const char *type, const char *message)
{
	struct op_provider *p = ctx;

	if (!p || !service_id || !type || !message)
		return;
	pthread_mutex_lock(&p->lock);
	if (op_store_begin(p->o.store) == 0) {
		if (op_store_event_add(p->o.store, service_id, now_of(p), type, message) == 0 &&
		    op_store_commit(p->o.store, NULL) == 0) {
			/* committed */
		} else {
			op_store_rollback(p->o.store);
		}
	}
	pthread_mutex_unlock(&p->lock);
}

/* A session's start or end: an event of its service, counted in
 * /metrics. */
static void exec_audit(void *ctx, const char *service_id, const char *type, const char *message)
{
	struct op_provider *p = ctx;

	op_metrics_exec(p->o.metrics, strcmp(type, "exec-start") == 0 ? 1 : -1);
	op_provider_event(p, service_id, type, message);
}

int op_provider_new(const struct op_provider_opts *opts, struct op_provider **ret)
{
	struct op_provider *p;
	char *state = NULL;
	int r;

	if (!opts || !OPTS_VALID(opts, op_provider_opts) || !opts->issuer || !opts->audience || !opts->keys ||
	    !opts->store || !ret)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memcpy(&p->o, opts, opts->sz < sizeof(p->o) ? opts->sz : sizeof(p->o));
	p->image = opts->image ? opts->image : &op_image_default_ops;
	pthread_mutex_init(&p->lock, NULL);
	p->config = opts->config;
	if (!p->config) {
		r = flash_operator_config_default(&p->own_config);
		if (r < 0)
			goto fail;
		p->config = p->own_config;
	}
	r = flash_meter_new(NULL, &p->meter);
	if (r < 0)
		goto fail;
	r = op_get_cache_new(&p->get_cache);
	if (r < 0)
		goto fail;
	struct op_shell_opts so = { .sz = sizeof(so), .max_sessions = OPTS_GET(opts, exec_max_sessions, 0),
				    .limit_s = OPTS_GET(opts, exec_limit_s, 0), .audit = exec_audit, .audit_ctx = p };
	r = op_shell_new(&so, &p->shell);
	if (r < 0)
		goto fail;
	r = op_store_meter_get(opts->store, &state);
	if (r == 0 && state)
		r = flash_meter_from_json(p->meter, state, strlen(state), NULL);
	free(state);
	if (r < 0)
		goto fail;
	*ret = p;
	return 0;
fail:
	op_provider_free(p);
	return r;
}

void op_provider_free(struct op_provider *p)
{
	if (!p)
		return;
	op_shell_free(p->shell);
	flash_meter_free(p->meter);
	op_get_cache_free(p->get_cache);
	flash_operator_config_free(p->own_config);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void op_provider_stop_exec(struct op_provider *p)
{
	struct op_shell *sh;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	sh = p->shell;
	p->shell = NULL;
	pthread_mutex_unlock(&p->lock);
	/* Sessions audit their end through the lock: freed outside it. */
	op_shell_free(sh);
}

void op_provider_set_runtime(struct op_provider *p, struct op_runtime *rt)
{
	if (p)
		p->runtime = rt;
}

void op_provider_set_status(struct op_provider *p,
			    int (*status)(void *ctx, const struct op_service *s, struct op_service_status *ret), void *ctx)
{
	if (p) {
		p->status_fn = status;
		p->status_ctx = ctx;
	}
}

/* The view of service @s's workload: the runtime's (single node), the
 * FlashService's status (Kubernetes mode), or NULL (none yet). */
static const struct op_service_status *status_of(struct op_provider *p, const struct op_service *s,
						 struct op_service_status *st)
{
	if (p->runtime)
		return op_runtime_status(p->runtime, s->id, st) == 0 ? st : NULL;
	if (p->status_fn)
		return p->status_fn(p->status_ctx, s, st) == 0 ? st : NULL;
	return NULL;
}

void op_provider_set_kick(struct op_provider *p, void (*kick)(void *ctx), void *ctx)
{
	if (p) {
		p->kick = kick;
		p->kick_ctx = ctx;
	}
}

void op_provider_set_k8s(struct op_provider *p, int (*new_client)(void *ctx, struct k8s_client **ret), void *ctx)
{
	if (p) {
		p->k8s_client = new_client;
		p->k8s_ctx = ctx;
	}
}

/* A committed mutation: whoever turns services into workloads looks. */
static void wake(struct op_provider *p)
{
	op_runtime_kick(p->runtime);
	if (p->kick)
		p->kick(p->kick_ctx);
}

void op_provider_set_autoscale(struct op_provider *p, struct op_autoscale *as)
{
	if (p)
		p->autoscale = as;
}

int op_provider_live_services(void *ctx, struct op_service ***ret, size_t *ret_n)
{
	struct op_provider *p = ctx;
	int r;

	if (!p)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	r = op_store_service_list(p->o.store, NULL, NULL, ret, ret_n);
	pthread_mutex_unlock(&p->lock);
	return r;
}

void op_response_clear(struct op_response *r)
{
	if (!r)
		return;
	free(r->body);
	r->body = NULL;
	r->body_len = 0;
}

/* ---------------------------------------------------------------- requests */

struct command {
	enum flash_auth_action action;
	struct flash_auth_token *token;
	const char *org, *project; /* from the token; project "" when absent */
	uint64_t gen;
	char id[OP_SERVICE_ID_STRLEN];
	const char *name;           /* create */
	struct json_value *body;
	struct flash_spec *spec;
	char *canonical;
	char digest_hex[FLASH_SPEC_DIGEST_HEX_SIZE];
	uint8_t digest[FLASH_SPEC_DIGEST_SIZE];
	struct flash_auth_opid opid;
	char opid_text[FLASH_AUTH_OPID_STRLEN];
	struct op_image_info image;
};

static void command_clear(struct command *c)
{
	flash_auth_token_free(c->token);
	json_free(c->body);
	flash_spec_free(c->spec);
	free(c->canonical);
}

static bool verify_token(struct op_provider *p, const struct op_request *req, struct command *c,
			 struct op_response *ret)
{
	FLASH_OPTS(flash_auth_verify_opts, vo, .issuer = p->o.issuer, .audience = p->o.audience, .action = c->action,
		   .now = now_of(p), .skew = p->o.skew ? p->o.skew : 5);
	const char *h = req->authorization, *tok, *detail;
	struct flash_diag *diag = NULL;
	bool ok = false;
	int r;

	if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
		answer_error_extra(ret, 401, "unauthorized", extra_reason, "missing-token",
				   "an Authorization: Bearer <token> header is required");
		return false;
	}
	for (tok = h + 7; *tok == ' '; tok++)
		;
	if (flash_diag_new(&diag) < 0)
		diag = NULL; /* out of memory: the refusal names the reason only */
	r = flash_auth_verify(p->o.keys, tok, strlen(tok), &vo, &c->token, diag);
	detail = flash_diag_first_error(diag) ? flash_diag_first_error(diag)->message : flash_strerror(r);
	if (r == -FLASH_E_AUTH_ACTION)
		answer_error_extra(ret, 403, "wrong-action", extra_reason, flash_auth_reason_name(r),
				   "the token is not for %s: %s", flash_auth_action_name(c->action), detail);
	else if (r < 0)
		answer_error_extra(ret, 401, "unauthorized", extra_reason, flash_auth_reason_name(r), "token refused: %s",
				   detail);
	else
		ok = true;
	flash_diag_free(diag);
	if (!ok)
		return false;
	c->org = flash_auth_token_org(c->token);
	c->project = flash_auth_token_project(c->token);
	if (!c->project)
		c->project = "";
	if (!flash_auth_token_generation(c->token, &c->gen))
		c->gen = 0;
	return true;
}

struct op_metrics *op_provider_metrics(struct op_provider *p)
{
	return p ? p->o.metrics : NULL;
}

bool op_provider_authorize(struct op_provider *p, const char *authorization, enum flash_auth_action action,
			   struct flash_auth_token **ret_token, struct op_response *ret)
{
	struct op_request req = { .method = "", .path = "", .authorization = authorization };
	struct command c = { .action = action };

	memset(ret, 0, sizeof(*ret));
	ret->content_type = "application/json";
	if (!verify_token(p, &req, &c, ret)) {
		if (!ret->body)
			set_static_500(ret);
		return false;
	}
	*ret_token = c.token;
	return true;
}

void op_response_error(struct op_response *ret, int status, const char *code, const struct flash_diag *diag,
		       const char *fmt, ...)
{
	char msg[1536];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	free(ret->body);
	ret->body = NULL;
	ret->content_type = "application/json";
	answer_error_extra(ret, status, code, diag && flash_diag_first_error(diag) ? extra_diag : NULL, diag, "%s", msg);
}

/* The body of create/update: an object with exactly the allowed keys. */
static bool parse_body(const struct op_request *req, struct command *c, struct op_response *ret)
{
	struct json_error je = { 0 };
	const struct json_value *v;

	if (req->body_len == 0) {
		answer_error(ret, 400, "bad-request", "the request needs a JSON body");
		return false;
	}
	if (json_parse(req->body, req->body_len, NULL, &c->body, &je) < 0) {
		answer_error(ret, 400, "bad-request", "the body is not acceptable JSON: line %u column %u: %s", je.line,
			     je.column, je.message);
		return false;
	}
	if (c->body->type != JSON_OBJECT) {
		answer_error(ret, 400, "bad-request", "the body must be a JSON object");
		return false;
	}
	for (size_t i = 0; i < c->body->u.object.n; i++) {
		const char *k = c->body->u.object.members[i].key;

		if (strcmp(k, "spec") != 0 && !(c->action == FLASH_AUTH_ACTION_CREATE && strcmp(k, "name") == 0)) {
			answer_error_extra(ret, 400, "bad-request", extra_path, k, "%s: unknown field", k);
			return false;
		}
	}
	if (c->action == FLASH_AUTH_ACTION_CREATE) {
		v = json_get(c->body, "name");
		if (!v || json_get_string(v, &c->name) < 0 || !service_name_valid(c->name)) {
			answer_error_extra(ret, 400, "bad-request", extra_path, "name",
					   "name: must be 1..%d of a-z, 0-9 and '-', starting with a letter and not ending with '-'",
					   NAME_MAX_LEN);
			return false;
		}
	}
	v = json_get(c->body, "spec");
	if (!v || v->type != JSON_OBJECT) {
		answer_error_extra(ret, 400, "bad-request", extra_path, "spec", "spec: must be an object (the Flash spec)");
		return false;
	}
	return true;
}

static bool parse_spec(struct op_provider *p, struct command *c, struct op_response *ret)
{
	struct flash_diag *diag = NULL;
	struct out o;
	char *text = NULL;
	size_t len = 0;
	bool ok = false;
	int r;

	/* The spec member re-emitted on its own for the spec parser. */
	if (o_begin(&o) < 0 || (o_value(&o, json_get(c->body, "spec")), o_end(&o, &text, &len)) < 0 ||
	    flash_diag_new(&diag) < 0) {
		set_static_500(ret);
		goto out;
	}
	r = flash_spec_parse(text, len, NULL, &c->spec, diag);
	if (r == 0 && p->o.policy)
		r = flash_policy_check_spec(p->o.policy, c->spec, diag);
	if (r == -FLASH_E_POLICY_VIOLATION) {
		op_metrics_refused(p->o.metrics, OP_REFUSED_POLICY);
		answer_error_extra(ret, 422, "policy-violation", extra_diag, diag,
				   "the spec exceeds the owner quota policy");
		goto out;
	}
	if (r < 0) {
		op_metrics_refused(p->o.metrics, OP_REFUSED_SPEC);
		answer_error_extra(ret, 422, "invalid-spec", extra_diag, diag, "the spec is invalid (%zu problem%s)",
				   flash_diag_errors(diag), flash_diag_errors(diag) == 1 ? "" : "s");
		goto out;
	}
	/* Host names need a router one node does not have (Kubernetes mode
	 * renders them as Gateway API HTTPRoutes). */
	if (p->runtime && flash_spec_domain_count(c->spec) > 0) {
		op_metrics_refused(p->o.metrics, OP_REFUSED_SPEC);
		answer_error_extra(ret, 422, "invalid-spec", extra_path, "domains",
				   "domains: not served by the single-node runtime (it has no host-name router; "
				   "Kubernetes mode serves them): remove the field");
		goto out;
	}
	if (flash_spec_to_json(c->spec, &c->canonical, NULL) < 0 || flash_spec_digest(c->spec, c->digest) < 0 ||
	    flash_spec_digest_hex(c->spec, c->digest_hex) < 0) {
		set_static_500(ret);
		goto out;
	}
	ok = true;
out:
	free(text);
	flash_diag_free(diag);
	return ok;
}

static int operation_id(struct command *c)
{
	struct flash_auth_operation op = {
		.sz = sizeof(op),
		.org = c->org,
		.project = c->project,
		.service = c->id,
		.action = c->action,
		.generation = c->gen,
		.spec_digest = c->spec ? c->digest : NULL,
		.spec_digest_len = c->spec ? sizeof(c->digest) : 0,
	};
	int r = flash_auth_operation_id(&op, &c->opid);

	if (r == 0)
		r = flash_auth_opid_format(&c->opid, c->opid_text, sizeof(c->opid_text)) < 0 ? -EINVAL : 0;
	return r;
}

static bool owned(const struct op_service *s, const struct command *c)
{
	return strcmp(s->org, c->org) == 0 && strcmp(s->project, c->project) == 0;
}

static void answer_not_found(struct op_response *ret, const char *id)
{
	answer_error(ret, 404, "not-found", "no service %s", id);
}

static void answer_replay(struct op_response *ret, const struct op_service *s)
{
	ret->status = s->answer_status;
	ret->body = strdup(s->answer);
	ret->body_len = ret->body ? strlen(ret->body) : 0;
	if (!ret->body)
		set_static_500(ret);
}

enum verdict {
	V_ANSWERED = 0, /* ret holds the answer */
	V_APPLY,
};

/* Generation rules against what is stored (under the lock).  @stored may
 * be NULL (unknown or another tenant's). */
static enum verdict decide(const struct command *c, const struct op_service *stored, struct op_response *ret)
{
	enum flash_auth_gen_decision d;
	struct flash_auth_opid sop;
	bool has = stored != NULL;
	int r;

	if (c->action != FLASH_AUTH_ACTION_CREATE && (!stored || (stored->deleted && c->action == FLASH_AUTH_ACTION_UPDATE))) {
		answer_not_found(ret, c->id);
		return V_ANSWERED;
	}
	if (has && flash_auth_opid_parse(stored->operation_id, &sop) < 0) {
		set_static_500(ret);
		return V_ANSWERED;
	}
	r = flash_auth_generation_decide(has, has ? stored->generation : 0, has ? &sop : NULL, c->gen, &c->opid, &d);
	if (r == -FLASH_E_AUTH_STALE_GENERATION) {
		if (stored->deleted && c->action != FLASH_AUTH_ACTION_CREATE) {
			answer_not_found(ret, c->id);
			return V_ANSWERED;
		}
		answer_error(ret, 409, "stale-generation", "generation %" PRIu64 " is older than the stored %" PRIu64,
			     c->gen, stored->generation);
		return V_ANSWERED;
	}
	if (r == -FLASH_E_AUTH_GENERATION_CONFLICT) {
		if (stored->deleted && c->action == FLASH_AUTH_ACTION_DELETE) {
			answer_not_found(ret, c->id);
			return V_ANSWERED;
		}
		answer_error(ret, 409, "generation-conflict",
			     "generation %" PRIu64 " was already used by another operation (%s)", c->gen,
			     stored->operation_id);
		return V_ANSWERED;
	}
	if (r < 0) {
		set_static_500(ret);
		return V_ANSWERED;
	}
	if (d == FLASH_AUTH_GEN_DUPLICATE) {
		answer_replay(ret, stored);
		return V_ANSWERED;
	}
	/* APPLY */
	if (c->action == FLASH_AUTH_ACTION_CREATE && stored && !stored->deleted) {
		answer_error(ret, 409, "exists", "service %s (%s) exists: use update", stored->name, stored->id);
		return V_ANSWERED;
	}
	if (c->action == FLASH_AUTH_ACTION_DELETE && stored->deleted) {
		answer_not_found(ret, c->id);
		return V_ANSWERED;
	}
	return V_APPLY;
}

/* Reads the stored service visible to the command's tenant: NULL when
 * unknown or another tenant's (the two are indistinguishable). */
static int load_visible(struct op_provider *p, const struct command *c, struct op_service **ret)
{
	struct op_service *s = NULL;
	int r = op_store_service_get(p->o.store, c->id, &s);

	if (r == -ENOENT) {
		*ret = NULL;
		return 0;
	}
	if (r < 0)
		return r;
	if (!owned(s, c)) {
		op_service_free(s);
		s = NULL;
	}
	*ret = s;
	return 0;
}

static void answer_store_error(struct op_provider *p, struct op_response *ret, int r)
{
	if (r == -EBUSY)
		answer_transient(p, ret, "the store is busy (SQLITE_BUSY)");
	else
		answer_error(ret, 500, "store", "the store failed: %s", strerror(-r));
}

/* Everything under the lock for create and update: re-decide, the
 * organization limits, suspension, ports, write, commit. */
static void apply_mutation(struct op_provider *p, struct command *c, struct op_response *ret)
{
	struct op_service *stored = NULL, sv = { 0 };
	struct flash_policy_usage cur = { .sz = sizeof(cur) }, mine = { .sz = sizeof(mine) };
	struct flash_diag *diag = NULL;
	struct flash_public_port *ports = NULL;
	uint16_t *taken = NULL;
	size_t n_ports = 0, n_taken = 0;
	char msg[1536];
	uint64_t commit_ns = 0;
	int64_t now = now_of(p), meter_now = meter_now_of(p);
	bool in_txn = false;
	int r;

	pthread_mutex_lock(&p->lock);
	r = op_store_begin(p->o.store);
	if (r < 0) {
		answer_store_error(p, ret, r);
		goto out;
	}
	in_txn = true;
	r = load_visible(p, c, &stored);
	if (r < 0) {
		answer_store_error(p, ret, r);
		goto out;
	}
	if (decide(c, stored, ret) == V_ANSWERED)
		goto out;

	/* Organization limits: the other live services plus this one. */
	if (p->o.policy) {
		r = op_store_org_charge(p->o.store, c->org, c->id, cur.amount);
		if (r < 0) {
			answer_store_error(p, ret, r);
			goto out;
		}
		if (flash_diag_new(&diag) < 0) {
			set_static_500(ret);
			goto out;
		}
		if (flash_policy_check_organization(p->o.policy, &cur, c->spec, diag) < 0) {
			op_metrics_refused(p->o.metrics, OP_REFUSED_ORG_LIMIT);
			answer_error_extra(ret, 422, "organization-limit", extra_diag, diag,
					   "the organization's limits would be exceeded");
			goto out;
		}
		/* Suspension by the weekly metering limits. */
		r = suspension_of(p, c->org, c->spec, meter_now, msg, sizeof(msg));
		if (r == -EDQUOT) {
			op_metrics_refused(p->o.metrics, OP_REFUSED_SUSPENDED);
			answer_error(ret, 403, "suspended", "%s", msg);
			goto out;
		}
		if (r < 0) {
			answer_error(ret, 500, "meter", "metering decision failed: %s", flash_strerror(r));
			goto out;
		}
	}

	/* Public ports: unchanged (protocol, name) pairs keep theirs. */
	r = op_store_ports_taken(p->o.store, c->id, &taken, &n_taken);
	if (r < 0) {
		answer_store_error(p, ret, r);
		goto out;
	}
	r = flash_public_ports_assign(p->config, c->spec, stored && !stored->deleted ? stored->ports : NULL,
				      stored && !stored->deleted ? stored->n_ports : 0, taken, n_taken, &ports, &n_ports);
	if (r == -FLASH_E_RENDER_PORTS_EXHAUSTED) {
		uint16_t first, last;

		flash_operator_config_public_port_range(p->config, &first, &last);
		op_metrics_refused(p->o.metrics, OP_REFUSED_PORTS);
		answer_error(ret, 409, "public-ports-exhausted",
			     "no free public port left in %u-%u for the %zu public port(s) of this spec", first, last,
			     flash_spec_port_count(c->spec));
		goto out;
	}
	if (r < 0) {
		answer_error(ret, 500, "ports", "public port assignment failed: %s", flash_strerror(r));
		goto out;
	}

	if (flash_policy_usage_of_spec(c->spec, &mine) < 0) {
		set_static_500(ret);
		goto out;
	}
	memcpy(sv.id, c->id, sizeof(sv.id));
	sv.org = (char *)c->org;
	sv.project = (char *)c->project;
	sv.name = stored ? stored->name : (char *)c->name;
	sv.generation = c->gen;
	sv.created_generation = stored && !stored->deleted ? stored->created_generation : c->gen;
	memcpy(sv.operation_id, c->opid_text, sizeof(sv.operation_id));
	sv.spec = c->canonical;
	memcpy(sv.spec_digest, c->digest_hex, sizeof(sv.spec_digest));
	sv.image_digest = c->image.digest;
	sv.image_pinned = c->image.pinned;
	sv.image_bytes = c->image.charged_bytes;
	sv.phase = (char *)OP_PHASE_ADMITTED;
	sv.created_at = stored && !stored->deleted ? stored->created_at : now;
	sv.updated_at = now;
	sv.ports = ports;
	sv.n_ports = n_ports;
	memcpy(sv.charge, mine.amount, sizeof(sv.charge));
	sv.answer_status = c->action == FLASH_AUTH_ACTION_CREATE ? 201 : 200;
	if (service_json(&sv, NULL, 0, NULL, NULL, &sv.answer, &(size_t){ 0 }) < 0) {
		set_static_500(ret);
		goto out;
	}

	/* The meter is not told: it is fed the readiness of replicas, and
	 * without a runtime (issue 17) none is ever ready, so there is
	 * nothing to accrue and no state to keep in step with the store. */
	snprintf(msg, sizeof(msg), "%s generation %" PRIu64 " (operation %s): image %s, %" PRIu64 " bytes charged; %zu public port(s)",
		 c->action == FLASH_AUTH_ACTION_CREATE ? "admitted" : "updated", c->gen, c->opid_text, c->image.pinned,
		 c->image.charged_bytes, n_ports);
	r = op_store_service_put(p->o.store, &sv);
	if (r == 0)
		r = op_store_event_add(p->o.store, c->id, now,
				       c->action == FLASH_AUTH_ACTION_CREATE ? "admitted" : "updated", msg);
	if (r == 0) {
		r = op_store_commit(p->o.store, &commit_ns);
		if (r == 0) {
			in_txn = false;
			op_metrics_commit(p->o.metrics, commit_ns);
		}
	}
	if (r < 0) {
		answer_store_error(p, ret, r);
		goto out;
	}
	ret->status = sv.answer_status;
	ret->body = TAKE_PTR(sv.answer);
	ret->body_len = strlen(ret->body);
	wake(p);
out:
	if (in_txn)
		op_store_rollback(p->o.store);
	pthread_mutex_unlock(&p->lock);
	free(sv.answer);
	free(ports);
	free(taken);
	flash_diag_free(diag);
	op_service_free(stored);
}

/* Before the lock: is there anything to apply?  Answers duplicates and
 * refusals without resolving the image. */
static enum verdict precheck(struct op_provider *p, const struct command *c, struct op_response *ret)
{
	struct op_service *stored = NULL;
	enum verdict v;
	int r;

	pthread_mutex_lock(&p->lock);
	r = load_visible(p, c, &stored);
	if (r < 0) {
		answer_store_error(p, ret, r);
		v = V_ANSWERED;
	} else {
		v = decide(c, stored, ret);
	}
	pthread_mutex_unlock(&p->lock);
	op_service_free(stored);
	return v;
}

static bool admit_image(struct op_provider *p, struct command *c, struct op_response *ret)
{
	char err[1024] = "";
	uint64_t limit = op_admission_disk_limit(c->spec, p->o.policy);
	int r = p->image->admit(p->image->ctx, flash_spec_image(c->spec), limit, &c->image, err, sizeof(err));

	if (r == -FLASH_E_IMAGE_TOO_LARGE) {
		op_metrics_refused(p->o.metrics, OP_REFUSED_IMAGE_TOO_LARGE);
		answer_error_extra(ret, 422, "image-too-large", extra_path, "ephemeral_storage_gib", "%s", err);
		return false;
	}
	if (r < 0) {
		op_metrics_refused(p->o.metrics, OP_REFUSED_IMAGE);
		if (op_image_error_transient(r))
			answer_transient(p, ret, err);
		else
			answer_error_extra(ret, 422, "image", extra_path, "image", "image: %s", err[0] ? err : flash_strerror(r));
		return false;
	}
	return true;
}

static void handle_mutation(struct op_provider *p, const struct op_request *req, struct command *c,
			    const char *id, struct op_response *ret)
{
	if (!verify_token(p, req, c, ret))
		return;
	if (c->action == FLASH_AUTH_ACTION_DELETE) {
		snprintf(c->id, sizeof(c->id), "%s", id);
	} else {
		if (!parse_body(req, c, ret))
			return;
		if (c->action == FLASH_AUTH_ACTION_CREATE) {
			if (op_service_id(c->org, c->project, c->name, c->id) < 0) {
				set_static_500(ret);
				return;
			}
		} else {
			snprintf(c->id, sizeof(c->id), "%s", id);
		}
		if (!parse_spec(p, c, ret))
			return;
	}
	if (operation_id(c) < 0) {
		set_static_500(ret);
		return;
	}
	if (precheck(p, c, ret) == V_ANSWERED)
		return;
	if (c->action == FLASH_AUTH_ACTION_DELETE) {
		struct op_service *stored = NULL;
		struct out o;
		uint64_t commit_ns = 0;
		int64_t now = now_of(p), meter_now = meter_now_of(p);
		int r;

		pthread_mutex_lock(&p->lock);
		r = op_store_begin(p->o.store);
		if (r == 0)
			r = load_visible(p, c, &stored);
		if (r < 0) {
			answer_store_error(p, ret, r);
			goto del_out;
		}
		if (decide(c, stored, ret) == V_ANSWERED)
			goto del_out;
		stored->deleted = true;
		stored->generation = c->gen;
		memcpy(stored->operation_id, c->opid_text, sizeof(stored->operation_id));
		stored->updated_at = now;
		stored->n_ports = 0; /* releases them */
		free(stored->answer);
		stored->answer = NULL;
		stored->answer_status = 200;
		if (o_begin(&o) < 0) {
			set_static_500(ret);
			goto del_out;
		}
		o_open(&o);
		o_kstr(&o, "id", stored->id);
		o_kstr(&o, "name", stored->name);
		o_kbool(&o, "deleted", true);
		o_kuint(&o, "generation", c->gen);
		o_kstr(&o, "operation_id", c->opid_text);
		o_close(&o);
		if (o_end(&o, &stored->answer, &(size_t){ 0 }) < 0) {
			set_static_500(ret);
			goto del_out;
		}
		{
			/* Usage records outlive the service: its incarnation
			 * stops accruing now. */
			char mid[OP_SERVICE_ID_STRLEN + 24], *mj = NULL;

			meter_id(stored, mid, sizeof(mid));
			if (flash_meter_delete_service(p->meter, mid, meter_now) == 0 &&
			    flash_meter_to_json(p->meter, &mj, NULL) == 0)
				(void)op_store_meter_put(p->o.store, mj);
			free(mj);
		}
		r = op_store_service_put(p->o.store, stored);
		if (r == 0)
			r = op_store_event_add(p->o.store, c->id, now, "deleted", "deleted; public ports released");
		if (r == 0)
			r = op_store_commit(p->o.store, &commit_ns);
		if (r < 0) {
			answer_store_error(p, ret, r);
			goto del_out;
		}
		op_metrics_commit(p->o.metrics, commit_ns);
		wake(p);
		ret->status = 200;
		ret->body = TAKE_PTR(stored->answer);
		ret->body_len = strlen(ret->body);
del_out:
		op_store_rollback(p->o.store);
		pthread_mutex_unlock(&p->lock);
		op_service_free(stored);
		return;
	}
	if (!admit_image(p, c, ret))
		return;
	apply_mutation(p, c, ret);
}

static void handle_get(struct op_provider *p, const struct op_request *req, struct command *c, const char *id,
		       struct op_response *ret)
{
	struct op_service *s = NULL;
	struct op_event *ev = NULL;
	struct op_service_status st;
	struct op_autoscale_view asv;
	struct op_get_hit hit;
	size_t n_ev = 0;
	uint64_t changes;
	int r = 0;

	if (!verify_token(p, req, c, ret))
		return;
	snprintf(c->id, sizeof(c->id), "%s", id);
	pthread_mutex_lock(&p->lock);
	/* The answer rendered for an unchanged store is the answer -- unless
	 * a runtime reports status, which changes without the store. */
	changes = op_store_changes(p->o.store);
	if (!p->runtime && !p->status_fn && op_get_cache_find(p->get_cache, c->id, changes, &hit)) {
		if (strcmp(hit.org, c->org) == 0 && strcmp(hit.project, c->project) == 0) {
			ret->body = malloc(hit.body_len + 1);
			if (ret->body) {
				memcpy(ret->body, hit.body, hit.body_len + 1);
				ret->body_len = hit.body_len;
				ret->status = 200;
			}
		} else {
			answer_not_found(ret, id);
		}
		pthread_mutex_unlock(&p->lock);
		return;
	}
	r = load_visible(p, c, &s);
	if (r == 0 && s && !s->deleted)
		r = op_store_events(p->o.store, c->id, EVENTS_SHOWN, &ev, &n_ev);
	pthread_mutex_unlock(&p->lock);
	if (r < 0)
		answer_store_error(p, ret, r);
	else if (!s || s->deleted)
		answer_not_found(ret, id);
	else if (service_json(s, ev ? ev : (struct op_event[1]){ { 0 } }, n_ev, status_of(p, s, &st),
			      op_autoscale_status(p->autoscale, s->id, &asv) == 0 ? &asv : NULL, &ret->body,
			      &ret->body_len) < 0)
		set_static_500(ret);
	else
		ret->status = 200;
	if (ret->status == 200 && !p->runtime && !p->status_fn) {
		/* Kept only if nothing was written since it was read. */
		pthread_mutex_lock(&p->lock);
		if (op_store_changes(p->o.store) == changes)
			(void)op_get_cache_put(p->get_cache, c->id, changes, s->org, s->project, ret->body,
					       ret->body_len);
		pthread_mutex_unlock(&p->lock);
	}
	op_events_free(ev, n_ev);
	op_service_free(s);
}

static void handle_list(struct op_provider *p, const struct op_request *req, struct command *c,
			struct op_response *ret)
{
	struct op_service **list = NULL;
	size_t n = 0;
	struct out o;
	int r;

	if (!verify_token(p, req, c, ret))
		return;
	pthread_mutex_lock(&p->lock);
	r = op_store_service_list(p->o.store, c->org, c->project[0] ? c->project : NULL, &list, &n);
	pthread_mutex_unlock(&p->lock);
	if (r < 0) {
		answer_store_error(p, ret, r);
		return;
	}
	if (o_begin(&o) < 0) {
		set_static_500(ret);
		goto out;
	}
	o_open(&o);
	o_key(&o, "services");
	o_aopen(&o);
	for (size_t i = 0; i < n; i++) {
		struct op_service_status st;
		struct op_autoscale_view asv;

		o_service(&o, list[i], NULL, 0, status_of(p, list[i], &st),
			  op_autoscale_status(p->autoscale, list[i]->id, &asv) == 0 ? &asv : NULL);
	}
	o_aclose(&o);
	o_close(&o);
	if (o_end(&o, &ret->body, &ret->body_len) < 0)
		set_static_500(ret);
	else
		ret->status = 200;
out:
	op_service_list_free(list, n);
}

static void o_usage(struct out *o, const char *key, const struct flash_meter_usage *u)
{
	o_key(o, key);
	o_open(o);
	o_kint(o, "cpu_millicore_seconds", u->cpu_millicore_seconds);
	o_kint(o, "memory_mib_seconds", u->memory_mib_seconds);
	o_kint(o, "gpu_seconds", u->gpu_seconds);
	o_kbool(o, "saturated", u->saturated);
	o_close(o);
}

static void handle_usage(struct op_provider *p, const struct op_request *req, struct command *c,
			 struct op_response *ret)
{
	struct flash_meter_usage u = { 0 };
	char week[FLASH_METER_WEEK_STRLEN] = "";
	int64_t now = meter_now_of(p), ws = 0;
	struct out o;
	int r;

	if (!verify_token(p, req, c, ret))
		return;
	if (o_begin(&o) < 0) {
		set_static_500(ret);
		return;
	}
	o_open(&o);
	pthread_mutex_lock(&p->lock);
	r = flash_meter_org_usage(p->meter, c->org, now, &u);
	if (r == -FLASH_E_METER_ID) {
		memset(&u, 0, sizeof(u));
		r = 0;
	}
	flash_meter_week_name(now, week, sizeof(week));
	flash_meter_week_start(now, &ws);
	o_kstr(&o, "week", week);
	o_time(&o, "week_start", ws);
	o_time(&o, "as_of", now);
	o_usage(&o, "organization", &u);
	o_key(&o, "services");
	o_aopen(&o);
	for (size_t i = 0; r == 0 && i < flash_meter_record_count(p->meter); i++) {
		struct flash_meter_record rec;

		if (flash_meter_record_get(p->meter, i, &rec) < 0 || rec.scope != FLASH_METER_SCOPE_SERVICE ||
		    strcmp(rec.organization, c->org) != 0 || rec.week_start != ws)
			continue;
		/* "ID:gN": the service id and its incarnation. */
		char sid[OP_SERVICE_ID_STRLEN];
		snprintf(sid, sizeof(sid), "%.*s", (int)strcspn(rec.service_id, ":"), rec.service_id);
		/* Per-project tokens see their project's services only. */
		if (c->project[0]) {
			struct op_service *s = NULL;
			bool mine = op_store_service_get(p->o.store, sid, &s) == 0 && owned(s, c);

			op_service_free(s);
			if (!mine)
				continue;
		}
		o_open(&o);
		o_kstr(&o, "service_id", sid);
		o_kstr(&o, "meter_id", rec.service_id);
		o_usage(&o, "usage", &rec.usage);
		o_kbool(&o, "deleted", rec.service_deleted);
		o_close(&o);
	}
	pthread_mutex_unlock(&p->lock);
	o_aclose(&o);
	o_close(&o);
	if (r < 0) {
		json_writer_free(o.w);
		answer_error(ret, 500, "meter", "usage failed: %s", flash_strerror(r));
		return;
	}
	if (o_end(&o, &ret->body, &ret->body_len) < 0)
		set_static_500(ret);
	else
		ret->status = 200;
}

/* Kubernetes mode: the Pods of the caller's service @id (k8s-pods.c), a
 * client to use on them in *ret_client.  On failure the answer is
 * written and false returned. */
static bool k8s_pods(struct op_provider *p, const struct command *c, const char *id, bool ready_only,
		     struct k8s_client **ret_client, struct op_k8s_pod **ret, size_t *ret_n, char *ns, size_t ns_size,
		     struct op_response *resp)
{
	struct k8s_client *kc = NULL;
	struct k8s_status st = { 0 };
	int r = p->k8s_client(p->k8s_ctx, &kc);

	if (r == 0)
		r = op_k8s_service_pods(kc, c->org, c->project[0] ? c->project : NULL, id, ready_only, ret, ret_n, ns,
					ns_size, &st);
	if (r < 0) {
		answer_error(resp, 503, "unavailable", "the Kubernetes API server did not list the pods of %s: %s", id,
			     st.message ? st.message : strerror(-r));
		resp->retry_after = p->o.retry_after ? p->o.retry_after : 2;
		k8s_status_clear(&st);
		k8s_client_free(kc);
		return false;
	}
	*ret_client = kc;
	return true;
}

/* ---------------------------------------------------------------- logs */

#define LOGS_MAX_BYTES (1u << 20)

/* "YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z" in ns since the epoch; -EINVAL. */
static int parse_since(const char *s, int64_t *ret)
{
	char whole[FLASH_METER_TIME_STRLEN];
	const char *dot = strchr(s, '.');
	int64_t t, frac = 0, scale = 100000000;
	size_t n = dot ? (size_t)(dot - s) : strlen(s) - 1;

	if (n != FLASH_METER_TIME_STRLEN - 2 || s[strlen(s) - 1] != 'Z')
		return -EINVAL;
	memcpy(whole, s, n);
	whole[n] = 'Z';
	whole[n + 1] = '\0';
	if (flash_meter_parse_time(whole, &t) < 0 || t < 0 || t > INT64_MAX / 1000000000 - 1)
		return -EINVAL;
	if (dot) {
		const char *f = dot + 1;

		if (*f == 'Z')
			return -EINVAL;
		for (; *f != 'Z'; f++, scale /= 10) {
			if (*f < '0' || *f > '9' || scale == 0)
				return -EINVAL;
			frac += (*f - '0') * scale;
		}
	}
	*ret = t * 1000000000 + frac;
	return 0;
}

/* A copy of @s with every byte that is not part of valid UTF-8 as '?'
 * (a workload's output is any bytes; JSON strings are UTF-8). */
static char *utf8_clean(const char *s, size_t len)
{
	char *out = malloc(len + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		unsigned char b = (unsigned char)s[i];
		size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;

		if (n && i + n <= len && json_utf8_valid((const unsigned char *)s + i, n)) {
			memcpy(out + i, s + i, n);
			i += n;
		} else {
			out[i++] = '?';
		}
	}
	out[len] = '\0';
	return out;
}

/* A query value that must be a decimal integer @min..@max. */
static bool query_uint(const char *s, int min, int max, int *ret)
{
	unsigned long v;
	char *end = NULL;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || !s[0] || *end || s[0] == '-' || s[0] == '+' || v < (unsigned long)min || v > (unsigned long)max)
		return false;
	*ret = (int)v;
	return true;
}

/* True when the caller's service @id exists and is not deleted; otherwise
 * the answer (store error or 404) is written and false returned.  The
 * provider's lock is held only for the store read. */
static bool answer_unless_visible(struct op_provider *p, const struct command *c, const char *id,
				  struct op_response *ret)
{
	struct op_service *s = NULL;
	bool visible;
	int r;

	pthread_mutex_lock(&p->lock);
	r = load_visible(p, c, &s);
	pthread_mutex_unlock(&p->lock);
	if (r < 0) {
		answer_store_error(p, ret, r);
		op_service_free(s);
		return false;
	}
	visible = s && !s->deleted;
	op_service_free(s);
	if (!visible)
		answer_not_found(ret, id);
	return visible;
}

struct k8s_log_acc {
	struct util_buf b;
	unsigned int replica;
	char partial[16384];        /* a line not ended yet */
	size_t plen;
	bool oom;
};

/* A chunk of one Pod's log (timestamps=true: "TIME TEXT\n" lines) as
 * "INDEX TIME combined TEXT\n" lines (op_runtime_logs()'s format; the
 * kubelet's log API merges stdout and stderr). */
static int k8s_log_sink(const void *buf, size_t len, void *userdata)
{
	struct k8s_log_acc *a = userdata;
	const char *p = buf;

	for (size_t i = 0; i < len; i++) {
		if (p[i] != '\n') {
			if (a->plen < sizeof(a->partial) - 1)
				a->partial[a->plen++] = p[i];
			continue;
		}
		a->partial[a->plen] = '\0';
		{
			char *sp = strchr(a->partial, ' ');
			char head[64];
			int n;

			if (sp) {
				*sp = '\0';
				n = snprintf(head, sizeof(head), "%u %s combined ", a->replica, a->partial);
				if (n < 0 || (size_t)n >= sizeof(head) ||
				    util_buf_append(&a->b, head, (size_t)n, 4 * LOGS_MAX_BYTES) < 0 ||
				    util_buf_append(&a->b, sp + 1, strlen(sp + 1), 4 * LOGS_MAX_BYTES) < 0 ||
				    util_buf_append(&a->b, "\n", 1, 4 * LOGS_MAX_BYTES) < 0) {
					a->oom = true;
					return -ENOMEM;
				}
			}
		}
		a->plen = 0;
	}
	return 0;
}

static int log_line_cmp(const void *x, const void *y)
{
	const char *a = *(char *const *)x, *b = *(char *const *)y;

	return strcmp(strchr(a, ' ') + 1, strchr(b, ' ') + 1);
}

/* Kubernetes mode: pods/log of the service's Pods (replica @replica or
 * all; since the RFC 3339 time @since when set, at most LOGS_MAX_BYTES
 * each) merged by time, the newest lines that fit LOGS_MAX_BYTES, in
 * *ret.  -EPIPE when the answer (an error) is written already. */
static int k8s_logs(struct op_provider *p, const struct command *c, const char *id, int replica, const char *since,
		    char **ret, struct op_response *resp)
{
	struct k8s_log_acc a = { 0 };
	struct op_k8s_pod *pods = NULL;
	struct k8s_client *kc = NULL;
	char ns[OP_K8S_NAMESPACE_MAX + 1];
	char **lines = NULL;
	size_t n = 0, nl = 0, total = 0, first;
	int r = 0;

	if (!k8s_pods(p, c, id, false, &kc, &pods, &n, ns, sizeof(ns), resp))
		return -EPIPE;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct k8s_log_opts lo = { .sz = sizeof(lo), .namespace = ns, .container = "app", .timestamps = true,
					   .since_time = since, .limit_bytes = LOGS_MAX_BYTES };
		struct k8s_status st = { 0 };

		if (replica >= 0 && (size_t)replica != i)
			continue;
		a.replica = (unsigned int)i;
		a.plen = 0;
		r = k8s_pod_log(kc, pods[i].name, &lo, k8s_log_sink, &a, &st);
		/* A Pod that went away or has not started: no lines. */
		if (r == -ENOENT || r == -EINVAL)
			r = 0;
		k8s_status_clear(&st);
	}
	free(pods);
	k8s_client_free(kc);
	if (r < 0 || a.oom) {
		free(a.b.p);
		answer_error(resp, 503, "unavailable", "the Kubernetes API server did not give the logs of %s: %s", id,
			     strerror(r < 0 ? -r : ENOMEM));
		resp->retry_after = p->o.retry_after ? p->o.retry_after : 2;
		return -EPIPE;
	}
	if (util_buf_append(&a.b, "", 1, SIZE_MAX) < 0) {
		free(a.b.p);
		return -ENOMEM;
	}
	/* Merged by time (stable within a Pod: its order), newest kept. */
	for (char *l = a.b.p, *nlp; *l; l = nlp + 1) {
		char **np = realloc(lines, (nl + 1) * sizeof(*np));

		if (!np) {
			free(lines);
			free(a.b.p);
			return -ENOMEM;
		}
		lines = np;
		lines[nl++] = l;
		nlp = strchr(l, '\n');
		*nlp = '\0'; /* every line of the buffer ends with one */
	}
	if (nl)
		qsort(lines, nl, sizeof(*lines), log_line_cmp);
	first = nl;
	while (first > 0 && total + strlen(lines[first - 1]) + 1 <= LOGS_MAX_BYTES)
		total += strlen(lines[--first]) + 1;
	{
		char *out = malloc(total + 1), *w = out;

		if (!out) {
			free(lines);
			free(a.b.p);
			return -ENOMEM;
		}
		for (size_t i = first; i < nl; i++) {
			size_t l = strlen(lines[i]);

			memcpy(w, lines[i], l);
			w[l] = '\n';
			w += l + 1;
		}
		*w = '\0';
		*ret = out;
	}
	free(lines);
	free(a.b.p);
	return 0;
}

/* GET /provider/v1/services/ID/logs[?replica=N][&since=TIME]: the newest
 * lines (at most LOGS_MAX_BYTES of them) of the replicas' stdout and
 * stderr, oldest first. */
static void handle_logs(struct op_provider *p, const struct op_request *req, struct command *c, const char *id,
			struct op_response *ret)
{
	const char *rs = req->query ? req->query(req->query_ctx, "replica") : NULL;
	const char *ss = req->query ? req->query(req->query_ctx, "since") : NULL;
	char *text = NULL;
	int64_t since = 0;
	int replica = -1, r;
	struct out o;

	if (!verify_token(p, req, c, ret))
		return;
	snprintf(c->id, sizeof(c->id), "%s", id);
	if (rs && !query_uint(rs, 0, 65535, &replica)) {
		answer_error(ret, 400, "bad-request", "replica \"%.32s\" is not an integer 0..65535", rs);
		return;
	}
	if (ss && parse_since(ss, &since) < 0) {
		answer_error(ret, 400, "bad-request", "since \"%.40s\" is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SS[.ffffff]Z)",
			     ss);
		return;
	}
	if (!answer_unless_visible(p, c, id, ret))
		return;
	if (!p->runtime && p->k8s_client) {
		r = k8s_logs(p, c, id, replica, ss, &text, ret);
		if (r == -EPIPE)
			return; /* answered */
	} else if (!p->runtime) {
		answer_error(ret, 409, "no-runtime", "this operator runs no replicas (no runtime): service %s has no logs", id);
		return;
	} else {
		/* Files are read outside the provider's lock. */
		r = op_runtime_logs(p->runtime, id, replica, since, LOGS_MAX_BYTES, &text, NULL);
	}
	if (r == -ENOENT) {
		text = NULL;
		r = 0;
	}
	if (r < 0 || o_begin(&o) < 0) {
		free(text);
		set_static_500(ret);
		return;
	}
	o_open(&o);
	o_kstr(&o, "service_id", id);
	o_key(&o, "lines");
	o_aopen(&o);
	for (char *line = text, *next; line && *line; line = next) {
		char *sp1, *sp2, *sp3, *clean;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* "INDEX TIME STREAM TEXT" (op_runtime_logs()). */
		if (!(sp1 = strchr(line, ' ')) || !(sp2 = strchr(sp1 + 1, ' ')) || !(sp3 = strchr(sp2 + 1, ' ')))
			continue;
		*sp1 = *sp2 = *sp3 = '\0';
		clean = utf8_clean(sp3 + 1, strlen(sp3 + 1));
		if (!clean)
			break;
		o_open(&o);
		o_kuint(&o, "replica", strtoul(line, NULL, 10));
		o_kstr(&o, "time", sp1 + 1);
		o_kstr(&o, "stream", sp2 + 1);
		o_kstr(&o, "text", clean);
		o_close(&o);
		free(clean);
	}
	o_aclose(&o);
	o_close(&o);
	free(text);
	if (o_end(&o, &ret->body, &ret->body_len) < 0)
		set_static_500(ret);
	else
		ret->status = 200;
}

/* ---------------------------------------------------------------- exec */

/* GET /provider/v1/services/ID/exec?tty=0|1[&replica=N][&cols=C&rows=R]
 * [&term=T][&command=ARG]...|[&argv=message]: a WebSocket handshake
 * (argv=message: the argv comes in the first message, exec.h).  Checked in the
 * order a caller learns most from: the token, the handshake, the query,
 * the service, a ready replica, a free session slot. */
static void handle_exec(struct op_provider *p, const struct op_request *req, struct command *c, const char *id,
			struct op_response *ret)
{
#define HDR(n) (req->header ? req->header(req->query_ctx, n) : NULL)
#define Q(n) (req->query ? req->query(req->query_ctx, n) : NULL)
	struct ws_handshake h = { .method = req->method, .upgrade = HDR("Upgrade"), .connection = HDR("Connection"),
				  .version = HDR("Sec-WebSocket-Version"), .key = HDR("Sec-WebSocket-Key"),
				  .protocol = HDR("Sec-WebSocket-Protocol") };
	const char *tty = Q("tty"), *rs = Q("replica"), *cs = Q("cols"), *rws = Q("rows"), *term = Q("term");
	const char *argv_q = Q("argv");
	const char *argv[OP_SHELL_ARGS_MAX];
	struct op_shell_params sp = { 0 };
	struct op_exec_target t;
	int replica = -1, cols = 0, rows = 0, r;
	char err[160], who[400];
	size_t argc;

	if (!verify_token(p, req, c, ret))
		return;
	snprintf(c->id, sizeof(c->id), "%s", id);
	r = ws_server_check(&h, FLASH_CLIENT_EXEC_PROTOCOL, ret->ws_accept, err, sizeof(err));
	if (r < 0) {
		answer_error(ret, r == -EPROTONOSUPPORT ? 426 : 400, r == -EPROTONOSUPPORT ? "upgrade-required" : "bad-request",
			     "exec is a WebSocket (RFC 6455, subprotocol %s): %s", FLASH_CLIENT_EXEC_PROTOCOL, err);
		return;
	}
	argc = req->query_all ? req->query_all(req->query_ctx, "command", argv, OP_SHELL_ARGS_MAX) : 0;
	if ((tty && strcmp(tty, "0") != 0 && strcmp(tty, "1") != 0) || (rs && !query_uint(rs, 0, 65535, &replica)) ||
	    (cs && !query_uint(cs, 1, 65535, &cols)) || (rws && !query_uint(rws, 1, 65535, &rows)) ||
	    (term && (!term[0] || strlen(term) > 64 ||
		      term[strspn(term, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+")])) ||
	    argc > OP_SHELL_ARGS_MAX || (argv_q && (strcmp(argv_q, "message") != 0 || argc > 0))) {
		answer_error(ret, 400, "bad-request",
			     "the query takes tty=0|1, replica=0..65535, cols and rows 1..65535, term (letters, digits, "
			     "-_.+, at most 64) and at most %u command= arguments, or argv=message (the argv in the first "
			     "message) instead of them",
			     OP_SHELL_ARGS_MAX);
		return;
	}
	for (size_t i = 0; i < argc; i++)
		if (!json_utf8_valid((const unsigned char *)argv[i], strlen(argv[i]))) {
			answer_error(ret, 400, "bad-request", "command argument %zu is not UTF-8", i);
			return;
		}
	if (!answer_unless_visible(p, c, id, ret))
		return;
	if (!p->runtime && p->k8s_client) {
		struct op_k8s_pod *pods = NULL;
		char ns[OP_K8S_NAMESPACE_MAX + 1];
		size_t n = 0, all = 0;

		memset(&t, 0, sizeof(t));
		if (!k8s_pods(p, c, id, false, &sp.k8s, &pods, &all, ns, sizeof(ns), ret))
			return;
		/* Replica N is the Nth Pod in replica order; it must be ready. */
		for (size_t i = 0; i < all; i++)
			if (replica < 0 ? pods[i].ready : (int)i == replica) {
				n = i + 1;
				break;
			}
		if (!n) {
			if (replica >= 0 && (size_t)replica >= all)
				answer_error(ret, 404, "no-replica", "service %s has no replica %d", id, replica);
			else if (replica >= 0)
				answer_error(ret, 409, "not-ready", "replica %d of service %s is not ready", replica, id);
			else
				answer_error(ret, 409, "not-ready", "service %s has no ready replica to exec in yet", id);
			free(pods);
			k8s_client_free(sp.k8s);
			return;
		}
		if (!pods[n - 1].ready) {
			answer_error(ret, 409, "not-ready", "replica %d of service %s is not ready", replica, id);
			free(pods);
			k8s_client_free(sp.k8s);
			return;
		}
		t.replica = (unsigned int)(n - 1);
		snprintf(who, sizeof(who), "kid %s org %s project %s", flash_auth_token_kid(c->token), c->org, c->project);
		sp.who = who;
		sp.service_id = id;
		sp.target = &t;
		sp.argv = argc ? argv : NULL;
		sp.argc = argc;
		sp.argv_in_message = argv_q != NULL;
		sp.tty = tty && !strcmp(tty, "1");
		sp.cols = (unsigned short)cols;
		sp.rows = (unsigned short)rows;
		sp.term = term;
		sp.k8s_namespace = ns;
		sp.k8s_pod = pods[n - 1].name;
		pthread_mutex_lock(&p->lock);
		r = p->shell ? op_shell_reserve(p->shell, &sp, &ret->upgrade) : -ESHUTDOWN;
		pthread_mutex_unlock(&p->lock);
		free(pods);
		if (r < 0)
			k8s_client_free(sp.k8s);
		goto reserved;
	}
	if (!p->runtime) {
		answer_error(ret, 409, "no-runtime", "this operator runs no replicas (no runtime): service %s has none to exec in",
			     id);
		return;
	}
	r = op_runtime_exec_target(p->runtime, id, replica, &t);
	if (r == -ENOENT && replica >= 0) {
		answer_error(ret, 404, "no-replica", "service %s has no replica %d", id, replica);
		return;
	}
	if (r < 0) {
		if (replica >= 0)
			answer_error(ret, 409, "not-ready", "replica %d of service %s is not ready", replica, id);
		else
			answer_error(ret, 409, "not-ready", "service %s has no ready replica to exec in yet", id);
		return;
	}
	snprintf(who, sizeof(who), "kid %s org %s project %s", flash_auth_token_kid(c->token), c->org, c->project);
	sp = (struct op_shell_params){ .who = who, .service_id = id, .target = &t, .argv = argc ? argv : NULL,
				       .argc = argc, .argv_in_message = argv_q != NULL,
				       .tty = tty && !strcmp(tty, "1"), .cols = (unsigned short)cols,
				       .rows = (unsigned short)rows, .term = term };
	pthread_mutex_lock(&p->lock);
	r = p->shell ? op_shell_reserve(p->shell, &sp, &ret->upgrade) : -ESHUTDOWN;
	pthread_mutex_unlock(&p->lock);
reserved:
	if (r == -EBUSY) {
		answer_error(ret, 429, "too-many-sessions", "the operator has its %u exec sessions open; try again later",
			     p->o.exec_max_sessions ? p->o.exec_max_sessions : OP_SHELL_MAX_SESSIONS_DEFAULT);
		ret->retry_after = 5;
		return;
	}
	if (r < 0) {
		answer_transient(p, ret, r == -ESHUTDOWN ? "the operator is stopping" : "cannot start a session");
		return;
	}
	ret->status = 101;
	ret->body = strdup("");
	if (!ret->body) {
		op_shell_cancel(ret->upgrade);
		ret->upgrade = NULL;
	}
#undef HDR
#undef Q
}

static void handle_metrics(struct op_provider *p, struct op_response *ret)
{
	if (!p->o.metrics) {
		answer_error(ret, 404, "not-found", "metrics are not kept");
		return;
	}
	if (op_metrics_format(p->o.metrics, &ret->body, &ret->body_len) < 0) {
		set_static_500(ret);
		return;
	}
	ret->status = 200;
	ret->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* Route table: method, path shape, action. */
static enum op_route route_of(const struct op_request *req, const char **ret_id, enum flash_auth_action *ret_action,
			      bool *ret_method_ok, char *id_buf, size_t id_size)
{
	const char *path = req->path, *m = req->method;
	const char *rest;

	*ret_id = NULL;
	*ret_method_ok = true;
	if (strcmp(path, "/metrics") == 0) {
		*ret_method_ok = strcmp(m, "GET") == 0;
		return OP_ROUTE_METRICS;
	}
	if (strcmp(path, "/healthz") == 0) {
		*ret_method_ok = strcmp(m, "GET") == 0;
		return OP_ROUTE_HEALTHZ;
	}
	if (strcmp(path, API_PREFIX "usage") == 0) {
		*ret_method_ok = strcmp(m, "GET") == 0;
		*ret_action = FLASH_AUTH_ACTION_USAGE;
		return OP_ROUTE_USAGE;
	}
	if (strcmp(path, API_PREFIX "services") == 0) {
		if (strcmp(m, "POST") == 0) {
			*ret_action = FLASH_AUTH_ACTION_CREATE;
			return OP_ROUTE_CREATE;
		}
		*ret_method_ok = strcmp(m, "GET") == 0;
		*ret_action = FLASH_AUTH_ACTION_LIST;
		return OP_ROUTE_LIST;
	}
	if (strncmp(path, API_PREFIX "services/", strlen(API_PREFIX "services/")) == 0) {
		rest = path + strlen(API_PREFIX "services/");
		*ret_id = rest;
		if (strchr(rest, '/')) {
			size_t n = (size_t)(strchr(rest, '/') - rest);

			bool logs = strcmp(rest + n, "/logs") == 0, exec = strcmp(rest + n, "/exec") == 0;

			if ((!logs && !exec) || n >= id_size) {
				*ret_id = NULL;
				return OP_ROUTE_OTHER;
			}
			memcpy(id_buf, rest, n);
			id_buf[n] = '\0';
			*ret_id = id_buf;
			*ret_method_ok = strcmp(m, "GET") == 0;
			*ret_action = logs ? FLASH_AUTH_ACTION_LOGS : FLASH_AUTH_ACTION_EXEC;
			return logs ? OP_ROUTE_LOGS : OP_ROUTE_EXEC;
		}
		if (strcmp(m, "PUT") == 0) {
			*ret_action = FLASH_AUTH_ACTION_UPDATE;
			return OP_ROUTE_UPDATE;
		}
		if (strcmp(m, "DELETE") == 0) {
			*ret_action = FLASH_AUTH_ACTION_DELETE;
			return OP_ROUTE_DELETE;
		}
		*ret_method_ok = strcmp(m, "GET") == 0;
		*ret_action = FLASH_AUTH_ACTION_GET;
		return OP_ROUTE_GET;
	}
	return OP_ROUTE_OTHER;
}

void op_provider_handle(struct op_provider *p, const struct op_request *req, struct op_response *ret)
{
	uint64_t t0 = mono_ns();
	struct command c = { 0 };
	const char *id;
	char id_buf[OP_SERVICE_ID_STRLEN];
	bool method_ok;

	memset(ret, 0, sizeof(*ret));
	ret->content_type = "application/json";
	if (!p || !req || !req->method || !req->path) {
		set_static_500(ret);
		return;
	}
	ret->route = route_of(req, &id, &c.action, &method_ok, id_buf, sizeof(id_buf));
	if (ret->route == OP_ROUTE_OTHER) {
		answer_error(ret, 404, "no-route", "no route %s %s", req->method, req->path);
	} else if (!method_ok) {
		answer_error(ret, 405, "method-not-allowed", "%s is not allowed on %s", req->method, req->path);
	} else if (id && !names_service_id_valid(id)) {
		/* Checked after the token so that a malformed id tells an
		 * unauthenticated caller nothing more than a 401. */
		if (verify_token(p, req, &c, ret))
			answer_not_found(ret, id);
	} else {
		switch (ret->route) {
		case OP_ROUTE_METRICS:
			handle_metrics(p, ret);
			break;
		case OP_ROUTE_HEALTHZ:
			ret->status = 200;
			ret->body = strdup("{\"status\":\"ok\"}\n");
			ret->body_len = ret->body ? strlen(ret->body) : 0;
			if (!ret->body)
				set_static_500(ret);
			break;
		case OP_ROUTE_GET:
			handle_get(p, req, &c, id, ret);
			break;
		case OP_ROUTE_LIST:
			handle_list(p, req, &c, ret);
			break;
		case OP_ROUTE_USAGE:
			handle_usage(p, req, &c, ret);
			break;
		case OP_ROUTE_LOGS:
			handle_logs(p, req, &c, id, ret);
			break;
		case OP_ROUTE_EXEC:
			handle_exec(p, req, &c, id, ret);
			break;
		default:
			handle_mutation(p, req, &c, id, ret);
			break;
		}
	}
	command_clear(&c);
	if (!ret->body)
		set_static_500(ret);
	op_metrics_request(p->o.metrics, ret->route, ret->status, mono_ns() - t0);
}
