/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's services (contract C2, flowsdn-agent(8) "SERVICES"): the
 * model read from the configuration's "services" and from PUT
 * /v1/service/{id} (one reader, one validator, errors naming the field),
 * lowered to backend sets and frontends (<flowsdn/datapath.h>) and
 * published through the ops seam, persisted in <state-dir>/services.json
 * (atomic writes; read back through the same validator, a damaged file
 * refused and never rewritten).  One mutex guards the table; it is held
 * across the map writes and the state write of one change so that
 * changes are applied and saved in order.  Private to agent/.
 */
#ifndef FLOWSDN_AGENT_SERVICES_H
#define FLOWSDN_AGENT_SERVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>

#include "conf.h"
#include "ops.h"

struct diag;
struct check_ctx;
struct json_value;
struct json_writer;
struct agent_services;

/* Limits of one service. */
#define AGENT_SVC_MAX_FRONTENDS 32
#define AGENT_SVC_MAX_BACKENDS 1024
#define AGENT_SVC_MAX_RANGES 64
#define AGENT_SVC_DEFAULT_AFFINITY 10800

/*
 * Starts the table: reads <state-dir>/services.json when there is one
 * (-FLOWSDN_E_AGENT_STATE when it is damaged), applies the configuration's
 * services over it (the configuration wins for the ids it names), and
 * publishes everything through @ops into @dp (NULL: the model only, as
 * with "datapath": false).  With @dp, attaches the socket LB to
 * "socket-lb-cgroup" first ("auto": the cgroup v2 mount, skipped with a
 * warning when there is none; "": not attached).
 */
int agent_services_new(const struct agent_config *cfg, const struct agent_ops *ops, void *ctx,
		       struct flowsdn_datapath *dp, struct agent_services **ret);
/* Frees the table; the datapath keeps what was published.  NULL is fine. */
void agent_services_free(struct agent_services *s);

/* PUT: creates or replaces service @id from the JSON @body (@len bytes).
 * Replacing keeps the service's svcId and the ids of backends that stay,
 * so selection, affinity or backend changes apply live.  On success the
 * stored service is written to @g.  Errors: -FLOWSDN_E_AGENT_REFUSED
 * (@diag names the field; "id" when @id breaks the service id rule),
 * -FLOWSDN_E_AGENT_EXISTS (a frontend belongs to another service), map
 * and state write errors (-errno; nothing changed then), -ENOMEM. */
int agent_services_put(struct agent_services *s, const char *id, const char *body, size_t len,
		       struct json_writer *g, struct diag *diag);
/* PUT of @n services at once (flowsdn-agent's Kubernetes mode after its
 * first list): each as agent_services_put() applies it (ret_errs[i] its
 * result, a refusal logged with its field), then one snapshot of the
 * whole table is written (one fsync'd file instead of @n journal
 * records).  *ret_applied (may be NULL) counts the services applied.
 * Returns 0, or the snapshot write's -errno (the services are applied and
 * published; the journal stays as it was). */
int agent_services_put_many(struct agent_services *s, const char *const *ids, const char *const *bodies, size_t n,
			    int *ret_errs, size_t *ret_applied);
/* Where the sockets of removed UDP backends are looked for besides the
 * agent's own netns: @fn returns a copy of the endpoints (freed with
 * free()), whose namespaces (once each; not those of endpoints whose
 * services are translated per packet, which have no host sockets) are
 * searched through ops->sock_destroy_netns.  @fn is called with the
 * table's lock held: it may not call back into the table.  The agent core
 * sets agent_core_endpoints(). */
struct agent_api_endpoint;
void agent_services_set_endpoints(struct agent_services *s,
				  int (*fn)(void *userdata, struct agent_api_endpoint **ret, size_t *ret_n),
				  void *userdata);

/* DELETE: -FLOWSDN_E_AGENT_NOT_FOUND when unknown. */
int agent_services_delete(struct agent_services *s, const char *id, struct diag *diag);
/* GET one (-FLOWSDN_E_AGENT_NOT_FOUND) or, @id NULL, {"services":[...]}. */
int agent_services_get(struct agent_services *s, const char *id, struct json_writer *g);
size_t agent_services_count(struct agent_services *s);

/* The configuration key "services": reads and checks every entry (path
 * "services[i]...") into a struct agent_svc_list (conf.h) left in
 * *(struct agent_svc_list **)@dst, which agent_services_new() takes in as
 * it is: the services are parsed and checked once.  A struct json_field
 * reader (common/json.h). */
int agent_services_read_config(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);
/* The list is immutable once read; copies of the configuration share it.
 * _ref() returns @l; _unref() frees it with its last reference (NULL is
 * fine for both). */
struct agent_svc_list *agent_svc_list_ref(struct agent_svc_list *l);
void agent_svc_list_unref(struct agent_svc_list *l);
/* The services of @l as the configuration's JSON array, every field but
 * the ids (agent_config_format()). */
void agent_svc_list_gen(const struct agent_svc_list *l, struct json_writer *w);

#endif
