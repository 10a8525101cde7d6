/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-cni's client of the agent API: HTTP/1.1 over the agent's Unix
 * socket, every request bounded in time (one deadline for connect, send
 * and receive, also sent to the agent) and size.  Private to cni/.
 *
 * Errors: -FLOWSDN_E_AGENT_UNREACHABLE (no agent, or it closed without
 * answering), _TIMEOUT, _PROTOCOL (the answer is not what the API
 * defines), -EINVAL, -ENOMEM; or the domain code of the agent's error
 * body (e.g. -FLOWSDN_E_NL_EXISTS), its message in @err.
 */
#ifndef FLOWSDN_CNI_CLIENT_H
#define FLOWSDN_CNI_CLIENT_H

#include <stddef.h>

#include "agent-api.h"
#include "agent-client.h"

/* POST /v1/cni/add, /v1/cni/check.  @netns required; @mtu 0 = agent's;
 * @svc how services reach the endpoint (runtimeConfig serviceTranslation). */
int agent_client_add(const struct agent_client_opts *opts, const char *container_id, const char *ifname,
		     const char *netns, unsigned int mtu, enum flowsdn_cni_svc_translation svc,
		     struct agent_api_endpoint *ret, struct agent_client_err *err);
int agent_client_check(const struct agent_client_opts *opts, const char *container_id, const char *ifname,
		       const char *netns, struct agent_api_endpoint *ret, struct agent_client_err *err);
/* POST /v1/cni/del: 0 (also when the agent had nothing). */
int agent_client_del(const struct agent_client_opts *opts, const char *container_id, const char *ifname,
		     struct agent_client_err *err);
/* PUT /v1/endpoint/@id/labels with @body ({"namespace", "name",
 * "labels", "namedPorts"}, contracts C3). */
int agent_client_endpoint_labels(const struct agent_client_opts *opts, uint32_t id, const char *body,
				 struct agent_client_err *err);
/* POST /v1/cni/gc with @n valid attachments (@ids[i], @ifnames[i]);
 * *ret_removed (may be NULL) gets how many endpoints were removed. */
int agent_client_gc(const struct agent_client_opts *opts, const char *const *ids, const char *const *ifnames,
		    size_t n, unsigned int *ret_removed, struct agent_client_err *err);
#endif
