/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private parts of the agent module. */
#ifndef FLOWSDN_AGENT_INTERNAL_H
#define FLOWSDN_AGENT_INTERNAL_H

#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <yajl/yajl_gen.h>
#include <flowsdn/addr.h>
#include <flowsdn/agent.h>

#define FLOWSDN_AGENT_MAX_POOLS 16

struct flowsdn_agent_config {
	char *socket;
	char *state_dir;
	char *pin_dir;
	char *http_listen; /* "" for none */
	struct flowsdn_prefix pools[FLOWSDN_AGENT_MAX_POOLS];
	size_t n_pools;
	bool datapath;
	bool egress_stack;
	unsigned int attach_mode; /* enum flowsdn_attach_mode */
	unsigned int mtu;
	unsigned int max_connections;
	unsigned int max_request_bytes;
	unsigned int request_timeout_s;
};

struct agent_endpoint {
	uint32_t id;
	char container_id[256];
	char ifname[16];
	char netns[256];
	uint64_t netns_ino;
	char host_ifname[16];
	int host_ifindex;
	uint8_t host_mac[6];
	uint8_t mac[6];
	unsigned int mtu;
	size_t n_addrs;
	struct flowsdn_addr addrs[2];
	time_t created;
};

/* Agent-side latency of one verb: the last TIMING_SAMPLES durations. */
#define TIMING_SAMPLES 1024
struct agent_timing {
	uint64_t count, errors;
	size_t n, pos;
	double ms[TIMING_SAMPLES];
};

struct MHD_Daemon;
struct flowsdn_datapath;
struct flowsdn_ipam;

struct flowsdn_agent {
	struct flowsdn_agent_config *cfg;
	pthread_mutex_t lock; /* everything below; IPAM handles are not thread-safe */
	struct flowsdn_ipam *ipam;
	struct flowsdn_datapath *dp; /* NULL with "datapath": false */
	char *dp_error;
	struct agent_endpoint **eps;
	size_t n_eps, cap_eps;
	char *state_path, *queue_dir;
	unsigned int restored, replayed;
	time_t started;
	struct agent_timing t_add, t_del;
	struct MHD_Daemon *unix_d, *tcp_d;
	struct listener_ctx *ctx_unix, *ctx_tcp;
	int unix_fd;
};

int flowsdn__agent_http_start(struct flowsdn_agent *a);
void flowsdn__agent_http_stop(struct flowsdn_agent *a);
ssize_t flowsdn__agent_find(struct flowsdn_agent *a, const char *container_id, const char *ifname);
int flowsdn__agent_add_locked(struct flowsdn_agent *a, const char *container_id, const char *ifname,
			      const char *netns, unsigned int mtu, const struct agent_endpoint **ret, char *msg,
			      size_t msg_size);
int flowsdn__agent_check_locked(struct flowsdn_agent *a, const char *container_id, const char *ifname,
				const char *netns, const struct agent_endpoint **ret, char *msg, size_t msg_size);
int flowsdn__agent_delete_locked(struct flowsdn_agent *a, const char *container_id, const char *ifname);
int flowsdn__agent_gc_locked(struct flowsdn_agent *a, const char *const *ids, const char *const *ifnames, size_t n);

int flowsdn__agent_config_dup(const struct flowsdn_agent_config *src, struct flowsdn_agent_config **ret);
/* "ADDR:PORT" or "[ADDR6]:PORT": -EINVAL malformed, -EPERM not loopback. */
int flowsdn__agent_parse_listen(const char *text, struct flowsdn_addr *ret_addr, uint16_t *ret_port);

/* The JSON object of an endpoint (API and state file). */
void flowsdn__agent_endpoint_gen(yajl_gen g, const struct agent_endpoint *e);
/* Reads the endpoint object of an add/check reply. */
struct json_value;
int flowsdn__agent_endpoint_from_json(const struct json_value *o, struct flowsdn_agent_endpoint *ep);

#endif
