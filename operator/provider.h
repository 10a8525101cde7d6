/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The provider/v1 API of flash-operator (private to operator/): one
 * function that answers a complete request, independent of the HTTP
 * server, so that every route is unit-tested without sockets.
 *
 *   POST   /provider/v1/services        create  {"name": N, "spec": {...}}
 *   PUT    /provider/v1/services/ID     update  {"spec": {...}}
 *   DELETE /provider/v1/services/ID     delete
 *   GET    /provider/v1/services/ID     get     (with the last events)
 *   GET    /provider/v1/services        list    (the token's project, or
 *                                                the whole organization)
 *   GET    /provider/v1/usage           usage   (this week's metering)
 *   GET    /provider/v1/services/ID/logs   logs
 *   GET    /provider/v1/services/ID/exec   exec (a WebSocket: 101 and
 *                                          ret->upgrade, operator/exec.h)
 *   GET    /metrics                     Prometheus text (no token)
 *   GET    /healthz                     {"status":"ok"} (no token)
 *
 * Every provider route needs "Authorization: Bearer <EdDSA JWT>" whose
 * action is the route's; organization and project come from the token
 * only.  A service of another tenant answers exactly as an unknown id.
 * Errors are {"error": {"code": C, "message": M, ...}} with a stable C
 * (flash-operator(8) lists them); spec errors carry "path" and every
 * problem.  Mutations follow the generation rules of <flash/auth.h>: an
 * older generation is refused, the same one with the same operation id
 * gets the stored answer byte for byte, a newer one is applied.  A
 * transient failure answers 503 with Retry-After.
 *
 * Thread-safe: one mutex guards the store and the meter, held only while a
 * transaction runs, never while a token is verified, a body parsed or an
 * image resolved.
 */
#ifndef FLASH_OPERATOR_PROVIDER_H
#define FLASH_OPERATOR_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/auth.h>
#include <flash/policy.h>
#include <flash/render.h>

#include "admission.h"
#include "autoscale.h"
#include "exec.h"
#include "metrics.h"
#include "runtime.h"
#include "store.h"

struct op_provider_opts {
	size_t sz;
	const char *issuer;                   /* required */
	const char *audience;                 /* required */
	const struct flash_auth_keyset *keys; /* required; borrowed */
	const struct flash_policy *policy;    /* NULL: no owner quota policy */
	const struct flash_operator_config *config; /* NULL: defaults (public port range) */
	struct op_store *store;               /* required; borrowed */
	struct op_metrics *metrics;           /* NULL: none kept */
	const struct op_image_ops *image;     /* NULL: op_image_default_ops */
	int64_t (*now)(void *ctx);            /* NULL: time(NULL) */
	void *now_ctx;
	unsigned int retry_after;             /* seconds in 503 answers (0: 2) */
	unsigned int skew;                    /* token clock skew (0: 5 s) */
	/* Web Shell (exec.h): sessions open at once and their lifetime
	 * (0: the defaults, 16 and 1800 s). */
	unsigned int exec_max_sessions;
	unsigned int exec_limit_s;
	/* The meter's clock (usage, weekly limits, suspension, the usage
	 * route), apart from the one tokens and timestamps are read with, so
	 * a test can move the metering week without expiring its tokens.
	 * NULL: @now. */
	int64_t (*meter_now)(void *ctx);
	void *meter_now_ctx;
};

struct op_provider;

/* Loads the metering state from the store.  Returns 0, -EINVAL, -ENOMEM,
 * -EIO, or a meter state error. */
int op_provider_new(const struct op_provider_opts *opts, struct op_provider **ret);
void op_provider_free(struct op_provider *p);

/* Gives the provider the runtime whose status "get" and "list" show and
 * which a committed mutation wakes; NULL: none (services stay admitted).
 * Set before the HTTP listeners start. */
void op_provider_set_runtime(struct op_provider *p, struct op_runtime *rt);

/* Also wakes @kick(@ctx) after every committed mutation: Kubernetes mode
 * publishes the services as FlashServices (op_k8s_run_kick()).  Set
 * before the HTTP listeners start. */
void op_provider_set_kick(struct op_provider *p, void (*kick)(void *ctx), void *ctx);

/* Kubernetes mode: exec and logs go to the service's Pods through
 * pods/exec and pods/log (k8s-pods.c), each request or session with a
 * client @new_client(@ctx) makes (op_k8s_run_new_client()).  Set before
 * the HTTP listeners start. */
struct k8s_client;
void op_provider_set_k8s(struct op_provider *p, int (*new_client)(void *ctx, struct k8s_client **ret), void *ctx);
/* Kubernetes mode: "get" and "list" show @status(@ctx, s)'s view of each
 * service (op_k8s_run_service_status(): the FlashService's conditions and
 * a phase derived from them) instead of the store's phase; -ENOENT from
 * it (not published or not seen yet) shows the store's.  Set before the
 * HTTP listeners start. */
void op_provider_set_status(struct op_provider *p,
			    int (*status)(void *ctx, const struct op_service *s, struct op_service_status *ret), void *ctx);

/* Gives the provider the autoscaler whose last decisions "get" and
 * "list" show (status.autoscaling); NULL: none.  Set before the HTTP
 * listeners start. */
void op_provider_set_autoscale(struct op_provider *p, struct op_autoscale *as);

/* Appends an event (@type, @message) to service @id in a transaction of
 * its own (a struct op_provider as @ctx): the Web Shell's audit, the
 * autoscaler's "scaled".  A store failure loses the event only. */
void op_provider_event(void *ctx, const char *id, const char *type, const char *message);

/* The live services of every organization (a struct op_provider as
 * @ctx): the runtime's desired state, read under the provider's lock. */
int op_provider_live_services(void *ctx, struct op_service ***ret, size_t *ret_n);

/* Feeds the meter (a struct op_provider as @ctx): service @s (of spec
 * @spec) has @ready ready replicas from now on; saved in the store.
 * >= 0 (an enum flash_meter_outcome) or a meter/store error. */
int op_provider_observe(void *ctx, const struct op_service *s, const struct flash_spec *spec, uint32_t ready);

/* -EDQUOT (with @msg: which limit, until when) when the organization of
 * @s reached a weekly limit that stops @spec's workloads; 0 otherwise. */
int op_provider_suspended(void *ctx, const struct op_service *s, const struct flash_spec *spec, char *msg,
			  size_t msg_size);

struct op_request {
	const char *method;
	const char *path;          /* without the query */
	const char *authorization; /* the header, NULL when absent */
	const char *body;
	size_t body_len;
	/* The query's decoded value of @key, NULL when absent; query NULL:
	 * the request has none. */
	const char *(*query)(void *ctx, const char *key);
	void *query_ctx;
	/* With query_ctx too: request header @name, NULL when absent
	 * (header NULL: none); every value of query key @key in order, at
	 * most @max into @out, returning the count (more than @max: too
	 * many; query_all NULL: none). */
	const char *(*header)(void *ctx, const char *name);
	size_t (*query_all)(void *ctx, const char *key, const char **out, size_t max);
};

struct op_response {
	int status;
	char *body;                /* owned: op_response_clear() */
	size_t body_len;
	const char *content_type;  /* static */
	unsigned int retry_after;  /* > 0: send Retry-After */
	enum op_route route;
	/* exec: status 101 with a reserved session to start on the upgraded
	 * connection (op_shell_start(), or op_shell_cancel()) and the
	 * Sec-WebSocket-Accept value. */
	struct op_shell_session *upgrade;
	char ws_accept[32];
};

/* Ends the open Web Shell sessions and refuses new ones (503): before
 * the HTTP server stops. */
void op_provider_stop_exec(struct op_provider *p);

/* Answers @req into @ret (always filled; a failure to build the answer is
 * a 500 with a static body). */
void op_provider_handle(struct op_provider *p, const struct op_request *req, struct op_response *ret);
void op_response_clear(struct op_response *r);

/* The token check of every provider route, for routes served outside
 * op_provider_handle() (sandbox-http.h): the bearer token of
 * @authorization (the header, NULL when absent) verified for @action
 * with the provider's keys, issuer, audience, clock and skew.  true with
 * *ret_token (flash_auth_token_free()); false with the refusal (401, 403
 * "wrong-action") in @ret. */
bool op_provider_authorize(struct op_provider *p, const char *authorization, enum flash_auth_action action,
			   struct flash_auth_token **ret_token, struct op_response *ret);
/* The provider's metrics (NULL: none kept), for routes served outside
 * op_provider_handle(). */
struct op_metrics *op_provider_metrics(struct op_provider *p);
/* An error answer in the provider API's shape into @ret (its body
 * replaced): {"error": {"code": @code, "message": ..., and with @diag
 * "path" and "problems"}}. */
void op_response_error(struct op_response *ret, int status, const char *code, const struct flash_diag *diag,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The service id of (@org, @project, @name): "fs-" and the first 32 hex
 * digits of BLAKE2b-256 over their length-prefixed encoding, so that a
 * retried create finds its service and two tenants never share an id. */
int op_service_id(const char *org, const char *project, const char *name, char ret[OP_SERVICE_ID_STRLEN]);

#endif
