/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/agent.h> — the node agent (what flowsdn-agent runs) and the
 * client the CNI plugin uses to talk to it.
 *
 * The agent owns the node's endpoints: it allocates their addresses
 * (<flowsdn/ipam.h>), builds their veth pairs (<flowsdn/netlink.h>),
 * loads the datapath once at start and attaches it to each endpoint
 * (<flowsdn/datapath.h>), and persists every endpoint in its state
 * directory.  It serves a bounded HTTP/1.1 API (libmicrohttpd) on a
 * mode-0600 Unix socket and, optionally, read-only on a loopback TCP port:
 *
 *   GET  /v1/healthz            API up (after restore and queue replay)
 *   GET  /v1/health/modules     api, ipam, datapath, state: ok/degraded/disabled
 *   GET  /v1/endpoint           every endpoint
 *   GET  /v1/endpoint/{id}      one endpoint (numeric id)
 *   GET  /v1/ipam               pools (size/used/free) and allocations
 *   GET  /v1/cni/timing         ADD/DEL counts and agent-side latency
 *   POST /v1/cni/add            {containerID, ifname, netns[, mtu]} -> endpoint
 *   POST /v1/cni/check          {containerID, ifname, netns} -> endpoint or error
 *   POST /v1/cni/del            {containerID, ifname} -> {"removed": n}
 *   POST /v1/cni/gc             {"validAttachments": [{containerID, ifname}]}
 *
 * Errors are JSON {"error": {"code": "...", "message": "..."}} with an HTTP
 * status (400 bad JSON or field, 404 unknown route or endpoint, 405 wrong
 * method, 403 state change on the read-only listener, 409 conflict (name
 * taken), 413 body too large, 422 unusable netns, 503 not ready / pool
 * exhausted, 500 otherwise).
 *
 * A DEL that cannot reach the agent is queued as a file in the agent's
 * queue directory (flowsdn_agent_queue_delete()); the agent replays the
 * queue when it starts and whenever it serves a DEL.
 */
#ifndef FLOWSDN_AGENT_H
#define FLOWSDN_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>
#include <flowsdn/common.h>

#ifdef __cplusplus
extern "C" {
#endif

enum flowsdn_agent_error {
	FLOWSDN_E_AGENT_BASE = FLOWSDN_E_BASE + 800,
	FLOWSDN_E_AGENT_CONFIG = FLOWSDN_E_AGENT_BASE, /* configuration file invalid (diag names the key) */
	FLOWSDN_E_AGENT_LISTEN,        /* a listener could not be opened (or is not loopback) */
	FLOWSDN_E_AGENT_STATE,         /* state file damaged */
	FLOWSDN_E_AGENT_UNREACHABLE,   /* client: no agent on the socket */
	FLOWSDN_E_AGENT_TIMEOUT,       /* client: the agent did not answer in time */
	FLOWSDN_E_AGENT_PROTOCOL,      /* client: the answer is not what the API defines */
	FLOWSDN_E_AGENT_REFUSED,       /* client: the agent answered with an error (message kept) */
	FLOWSDN_E_AGENT_NOT_FOUND,     /* endpoint or route unknown */
	FLOWSDN_E_AGENT_MAX_,
};

#define FLOWSDN_AGENT_SOCKET "/var/run/flowsdn/flowsdn.sock"
#define FLOWSDN_AGENT_STATE_DIR "/var/lib/flowsdn"

/* ------------------------------------------------------- configuration */

struct flowsdn_agent_config;

/* Details of a configuration error. */
struct flowsdn_agent_diag {
	char msg[256];
};

/* The defaults (every key of flowsdn-agent.conf(5)).  -ENOMEM. */
FLOWSDN_API int flowsdn_agent_config_new(struct flowsdn_agent_config **ret);
/* Parses a JSON configuration (@len bytes); keys absent keep their
 * defaults, unknown keys and wrong types are refused.  Errors: -EINVAL,
 * -FLOWSDN_E_AGENT_CONFIG (@diag names the key), -ENOMEM. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_config_parse(const char *json, size_t len, struct flowsdn_agent_diag *diag,
						       struct flowsdn_agent_config **ret);
/* Reads and parses the file @path (at most 1 MiB). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_config_load(const char *path, struct flowsdn_agent_diag *diag,
						      struct flowsdn_agent_config **ret);
FLOWSDN_API void flowsdn_agent_config_free(struct flowsdn_agent_config *cfg);
/* The configuration as JSON with every key (freed by the caller). */
FLOWSDN_API int flowsdn_agent_config_format(const struct flowsdn_agent_config *cfg, char **ret_json);
/* Individual settings (owned by @cfg). */
FLOWSDN_API const char *flowsdn_agent_config_socket(const struct flowsdn_agent_config *cfg);
FLOWSDN_API const char *flowsdn_agent_config_state_dir(const struct flowsdn_agent_config *cfg);

/* ------------------------------------------------------------ the agent */

struct flowsdn_agent;

/* Starts an agent: creates the state and socket directories, opens IPAM,
 * loads the datapath (unless "datapath" is false), restores the saved
 * endpoints (adopting their interfaces; an endpoint whose interface is
 * gone is cleaned up), replays the delete queue, then listens.  The API
 * is served by libmicrohttpd's threads until flowsdn_agent_free().
 * Errors: -FLOWSDN_E_AGENT_LISTEN, -FLOWSDN_E_AGENT_STATE, errors of IPAM
 * and the loader, -errno.  @cfg is copied. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_new(const struct flowsdn_agent_config *cfg, struct flowsdn_agent **ret);
/* Stops listening and releases the handle; endpoints, pinned programs
 * and state stay (forwarding goes on).  NULL is fine. */
FLOWSDN_API void flowsdn_agent_free(struct flowsdn_agent *agent);
/* Number of endpoints the agent holds. */
FLOWSDN_API size_t flowsdn_agent_endpoint_count(struct flowsdn_agent *agent);
/* Replays the delete queue now; returns the number of entries replayed. */
FLOWSDN_API int flowsdn_agent_replay_queue(struct flowsdn_agent *agent);

/* -------------------------------------------------------------- client */

/* An endpoint as the agent reports it to the plugin. */
struct flowsdn_agent_endpoint {
	uint32_t id;
	char host_ifname[16];
	char ifname[16];
	uint8_t mac[6];
	uint8_t host_mac[6];
	char netns[256];
	unsigned int mtu;
	size_t n_addrs;
	struct flowsdn_addr addrs[2];   /* IPv4 first */
	unsigned int prefix_len[2];     /* as configured on the interface (32/128) */
	struct flowsdn_addr gateway[2]; /* per address */
};

struct flowsdn_agent_client_opts {
	size_t sz;
	const char *socket;       /* NULL: FLOWSDN_AGENT_SOCKET */
	unsigned int timeout_ms;  /* whole request; 0: 10000; at most 600000 */
};

/* Error detail of a client call: the agent's HTTP status and message. */
struct flowsdn_agent_reply_err {
	long http_status;         /* 0 when no answer */
	char message[256];
};

/* POST /v1/cni/add, /v1/cni/check.  @netns required; @mtu 0 = agent's.
 * Errors: -FLOWSDN_E_AGENT_UNREACHABLE, _TIMEOUT, _PROTOCOL (not JSON or
 * fields missing), _REFUSED (the agent's error in @err), -EINVAL. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_client_add(const struct flowsdn_agent_client_opts *opts,
						     const char *container_id, const char *ifname, const char *netns,
						     unsigned int mtu, struct flowsdn_agent_endpoint *ret,
						     struct flowsdn_agent_reply_err *err);
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_client_check(const struct flowsdn_agent_client_opts *opts,
						       const char *container_id, const char *ifname, const char *netns,
						       struct flowsdn_agent_endpoint *ret,
						       struct flowsdn_agent_reply_err *err);
/* POST /v1/cni/del: 0 (also when the agent had nothing), errors as above. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_client_del(const struct flowsdn_agent_client_opts *opts,
						     const char *container_id, const char *ifname,
						     struct flowsdn_agent_reply_err *err);
/* POST /v1/cni/gc with @n valid attachments (@ids[i], @ifnames[i]);
 * *ret_removed (may be NULL) gets how many endpoints were removed. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_client_gc(const struct flowsdn_agent_client_opts *opts,
						    const char *const *ids, const char *const *ifnames, size_t n,
						    unsigned int *ret_removed, struct flowsdn_agent_reply_err *err);
/* GET /v1/healthz: 0 when the agent answers "ok". */
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_client_health(const struct flowsdn_agent_client_opts *opts,
							struct flowsdn_agent_reply_err *err);
/* GET @path (a /v1/... route): the body (freed by the caller) and status. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_client_get(const struct flowsdn_agent_client_opts *opts, const char *path,
						     char **ret_body, long *ret_status);

/* ------------------------------------------------------ delete queue */

/* Queues a DEL for the agent: writes "<dir>/<container_id>.<ifname>.json"
 * atomically (the directory and missing parents are created, mode 0700).
 * Queuing the same owner twice keeps one entry.  -EINVAL for a relative
 * @queue_dir or an invalid owner, -errno. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_agent_queue_delete(const char *queue_dir, const char *container_id,
						       const char *ifname);
/* The queue directory inside a state directory ("<state_dir>/cni-queue";
 * freed by the caller). */
FLOWSDN_API char *flowsdn_agent_queue_dir(const char *state_dir);

/* The host-side interface name of an endpoint: "fsd" and 12 hex digits
 * of a hash of (@container_id, @ifname); @buf of at least 16 bytes. */
FLOWSDN_API int flowsdn_agent_host_ifname(const char *container_id, const char *ifname, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
