/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-agent's HTTP API (libmicrohttpd) over the agent core: a
 * mode-0600 Unix socket and an optional read-only loopback listener;
 * bounded bodies, connections and time; JSON errors carrying the domain
 * code.  Routes and bodies: flowsdn-agent(8).  Uses only the core's API
 * (agent/core.h).  Private to agent/.
 */
#ifndef FLOWSDN_AGENT_HTTP_H
#define FLOWSDN_AGENT_HTTP_H

#include "core.h"

struct agent_http;

/* Creates the socket directory, listens on the configured socket (and
 * the loopback listener when "http-listen" is set) and serves @core from
 * libmicrohttpd's threads until agent_http_stop().
 * Errors: -FLOWSDN_E_AGENT_LISTEN, -ENOMEM. */
int agent_http_start(struct agent_core *core, struct agent_http **ret);
/* Stops listening (the socket is removed); NULL is fine. */
void agent_http_stop(struct agent_http *http);

/* The bodies of the POST routes, read apart from the server
 * (agent/http-body.c) so that they are tested and fuzzed in-process. */
enum agent_http_verb {
	AGENT_HTTP_ADD,   /* /v1/cni/add:   {"containerID", "ifname", "netns"[, "mtu"][, "serviceTranslation"]} */
	AGENT_HTTP_CHECK, /* /v1/cni/check: the same */
	AGENT_HTTP_DEL,   /* /v1/cni/del:   {"containerID", "ifname"[, "netns"]} */
	AGENT_HTTP_GC,    /* /v1/cni/gc:    {"validAttachments": [{"containerID", "ifname"}, ...]} */
};

/* A body read: strings point into @root (agent_http_body_clear()). */
struct agent_http_body {
	struct json_value *root;
	struct agent_request rq; /* ADD, CHECK, DEL (DEL: netns may be NULL, mtu 0); deadline_ms 0 */
	const char **ids;        /* GC: the @n valid owners */
	const char **ifnames;
	size_t n;
};

/* Reads the @len bytes at @body for @verb: a JSON object whose
 * containerID and ifname pass the CNI rules, an absolute netns shorter
 * than 256 bytes for ADD and CHECK, an mtu in [1280, 65535] when given.
 * Returns 0 and *ret, or the negative code the reply carries
 * (-FLOWSDN_E_AGENT_REFUSED, -FLOWSDN_E_CNI_CONTAINER_ID,
 * -FLOWSDN_E_CNI_IFNAME, -FLOWSDN_E_NL_NETNS, -ENOMEM) with its HTTP
 * status in *ret_status and what is wrong in @diag; *ret is untouched on
 * failure. */
int agent_http_body_read(enum agent_http_verb verb, const char *body, size_t len, struct agent_http_body *ret,
			 unsigned int *ret_status, struct diag *diag);
/* Frees what a read body holds (NULL is fine). */
void agent_http_body_clear(struct agent_http_body *b);

/* The body of PUT /v1/endpoint/{id}/translation: exactly
 * {"serviceTranslation": "packet"|"socket"}.  0 and *ret, or
 * -FLOWSDN_E_AGENT_REFUSED (status 400, @diag names the field),
 * -ENOMEM; *ret untouched on failure. */
int agent_http_translation_read(const char *body, size_t len, enum flowsdn_cni_svc_translation *ret,
				unsigned int *ret_status, struct diag *diag);
/* The policy routes (agent/http-policy.c): true when @url is one of them,
 * with the reply in *ret_status and *ret_body (JSON, malloc'd; NULL for
 * the fallback body).  @body is NULL when the request's body was too big. */
bool agent_http_policy_route(struct agent_core *core, const char *method, const char *url, const char *body,
			     size_t len, unsigned int *ret_status, char **ret_body);

#endif
