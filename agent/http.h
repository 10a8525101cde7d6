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

#endif
