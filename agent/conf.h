/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-agent's configuration (flowsdn-agent.conf(5)): defaults,
 * strict JSON parsing, output with every key.  Private to agent/.
 */
#ifndef FLOWSDN_AGENT_CONF_H
#define FLOWSDN_AGENT_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>
#include <flowsdn/datapath.h>

#define AGENT_MAX_POOLS 16
#define AGENT_MAX_UPLINKS 4
#define AGENT_MAX_NODE_ADDRS 16

struct diag;
struct agent_svc_list; /* agent/services.h */

/* A failure's explanation, naming the key or the object at fault, is one
 * error in the engine's struct diag (common/diag.h), code "agent-request".
 * Replaces what @diag held by that one error (@diag may be NULL). */
void agent_diag_set(struct diag *diag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The message of @diag's first error; "" when none or @diag is NULL. */
const char *agent_diag_message(const struct diag *diag);

struct agent_config {
	char *socket;
	char *state_dir;
	char *pin_dir;
	char *http_listen; /* "" for none */
	struct flowsdn_prefix pools[AGENT_MAX_POOLS];
	size_t n_pools;
	bool datapath;
	bool egress_stack;
	unsigned int attach_mode; /* enum flowsdn_attach_mode */
	unsigned int mtu;
	unsigned int max_connections;      /* per listener, heads pending and requests served each */
	unsigned int reserved_connections; /* of those served, kept for healthz and DEL */
	unsigned int header_timeout_ms;    /* to receive a request head */
	unsigned int max_request_bytes;
	unsigned int request_timeout_s;
	/* services (agent/services.h) */
	struct flowsdn_addr node_addrs[AGENT_MAX_NODE_ADDRS]; /* "node-addresses": NodePort frontends */
	size_t n_node_addrs;
	char *socket_lb_cgroup; /* "auto" (the cgroup v2 mount), "" (none) or an absolute path */
	struct agent_svc_list *services; /* "services", read and checked once; NULL when absent */
	unsigned int ct_max;               /* conntrack table entries */
	unsigned int ct_gc_interval_s;     /* garbage collection of dead entries */
	struct flowsdn_ct_timeouts ct_timeouts; /* seconds */
	/* "namespaces": [{"name", "labels"}] and "policies": [NetworkPolicy],
	 * each item kept as its JSON text (applied by agent/policy.c). */
	char **namespaces;
	size_t n_namespaces;
	char **policies;
	size_t n_policies;
	char uplinks[AGENT_MAX_UPLINKS][16]; /* "uplink-interfaces": services from outside arrive there */
	size_t n_uplinks;
	unsigned int snat_port_min, snat_port_max; /* source ports of flows sent to other nodes' backends */
	unsigned int host_firewall; /* "host-firewall": enum flowsdn_hostfw_mode (agent/hostfw.h) */
	/* "kubernetes": {"kubeconfig", "context", "nodeName"} (agent/k8s.h);
	 * the key (or --kubernetes) turns Kubernetes mode on.  NULL strings:
	 * in-cluster configuration, the current context, $NODE_NAME or the
	 * host name. */
	bool kubernetes;
	char *k8s_kubeconfig;
	char *k8s_context;
	char *k8s_node_name;
};

/* The defaults (every key of flowsdn-agent.conf(5)).  -ENOMEM. */
int agent_config_new(struct agent_config **ret);
/* Parses a JSON configuration (@len bytes); keys absent keep their
 * defaults, unknown keys and wrong types are refused.  Errors: -EINVAL,
 * -FLOWSDN_E_AGENT_CONFIG (@diag names the key), -ENOMEM.  *ret is
 * written only on success. */
/* Parses flowsdn-agent.conf(5) (a field table: unknown keys refused); on
 * -FLOWSDN_E_AGENT_CONFIG @diag (may be NULL) names each key at fault. */
int agent_config_parse(const char *json, size_t len, struct agent_config **ret, struct diag *diag);
/* Reads and parses the file @path (at most 1 MiB). */
int agent_config_load(const char *path, struct agent_config **ret, struct diag *diag);
void agent_config_free(struct agent_config *cfg);
/* The configuration as JSON with every key (freed by the caller). */
int agent_config_format(const struct agent_config *cfg, char **ret_json);
/* A copy of @src. */
int agent_config_dup(const struct agent_config *src, struct agent_config **ret);
/* "ADDR:PORT" or "[ADDR6]:PORT": -EINVAL malformed, -EPERM not loopback. */
int agent_config_parse_listen(const char *text, struct flowsdn_addr *ret_addr, uint16_t *ret_port);

#endif
