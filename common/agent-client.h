/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The client transport of the agent API (contracts C5): HTTP/1.1 over the
 * agent's Unix socket, one request per connection, one deadline for
 * connect, send and receive (also sent to the agent in
 * AGENT_API_DEADLINE_HEADER), replies bounded to 1 MiB.  Private
 * (common/libagentapi.la): flowsdn-cni (cni/client.c) and flash-operator
 * (operator/) use it.  Not libcurl: the plugin is exec'd for every ADD.
 *
 * Errors: -FLOWSDN_E_AGENT_UNREACHABLE (no agent, or it closed or reset the
 * connection without answering), _TIMEOUT, _PROTOCOL (the answer is not what the API
 * defines), -EINVAL, -ENOMEM; or the domain code of the agent's error
 * body (e.g. -FLOWSDN_E_NL_EXISTS), its message in @err.
 */
#ifndef FLOWSDN_COMMON_AGENT_CLIENT_H
#define FLOWSDN_COMMON_AGENT_CLIENT_H

#include <stddef.h>

#include "agent-api.h"
#include "json.h"

struct agent_client_opts {
	const char *socket;       /* NULL: AGENT_API_SOCKET */
	unsigned int timeout_ms;  /* whole request; 0: 10000; at most 600000 */
};

/* Error detail of a call: the agent's HTTP status and message.  Kept
 * apart from the one diag engine on purpose: it is the outcome of one
 * HTTP exchange (connect/send/read failures with status 0, or the status
 * and the single message of the agent's error reply, whose own problem
 * the agent already reported from its struct diag), relayed as the CNI
 * error's msg/details -- not a list of problems found in an input, so it
 * has no path, rule code or line to carry. */
struct agent_client_err {
	long http_status;         /* 0 when no answer */
	char message[256];
};

/* Fills @err (may be NULL). */
void agent_client_err_set(struct agent_client_err *err, long status, const char *msg);

/* @method @path with the JSON @body (NULL: none): a 2xx JSON object in
 * *ret_root (json_free()), or the error above. */
int agent_client_call(const struct agent_client_opts *opts, const char *method, const char *path, const char *body,
		      struct json_value **ret_root, struct agent_client_err *err);

/* GET /v1/healthz: 0 when the agent answers "ok". */
int agent_client_health(const struct agent_client_opts *opts, struct agent_client_err *err);
/* GET @path (a /v1/... route): the body (freed by the caller) and status. */
int agent_client_get(const struct agent_client_opts *opts, const char *path, char **ret_body, long *ret_status);

#endif
