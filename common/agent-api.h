/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent API's wire format: what flowsdn-agent (agent/) and flowsdn-cni
 * (cni/) both speak, written once.  Private (common/libagentapi.la, linked
 * by both programs and their tests; never in a public library).
 *
 *   - the endpoint object (API replies and the agent's state file),
 *   - the error body {"error": {"code": NAME, "number": N, "message": M}}
 *     carrying the domain code (name and number) of the failure,
 *   - the owner body {"containerID": ..., "ifname": ...[, "netns", "mtu"]}
 *     of requests and of delete-queue entries,
 *   - the delete-queue entry name "<containerID>.<ifname>.json",
 *   - the host-side interface name of an endpoint,
 *   - the request deadline header,
 *   - the domain codes of the node programs (block 4800 of the flowsdn
 *     range; no library function returns them).
 */
#ifndef FLOWSDN_COMMON_AGENT_API_H
#define FLOWSDN_COMMON_AGENT_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <flowsdn/addr.h>
#include <flowsdn/cni.h>

#include "json.h"

enum agent_api_error {
	FLOWSDN_E_AGENT_BASE = FLOWSDN_E_BASE + 800,
	FLOWSDN_E_AGENT_CONFIG = FLOWSDN_E_AGENT_BASE, /* configuration file invalid (diag names the key) */
	FLOWSDN_E_AGENT_LISTEN,        /* a listener could not be opened (or is not loopback) */
	FLOWSDN_E_AGENT_STATE,         /* state file damaged */
	FLOWSDN_E_AGENT_UNREACHABLE,   /* client: no agent on the socket */
	FLOWSDN_E_AGENT_TIMEOUT,       /* client: the agent did not answer in time */
	FLOWSDN_E_AGENT_PROTOCOL,      /* client: the answer is not what the API defines */
	FLOWSDN_E_AGENT_REFUSED,       /* the agent refused the request (bad field, wrong method) */
	FLOWSDN_E_AGENT_NOT_FOUND,     /* endpoint or route unknown */
	FLOWSDN_E_AGENT_DEADLINE,      /* the client's deadline passed before the operation started */
	FLOWSDN_E_AGENT_EXISTS,        /* the owner (container id, ifname) already has an endpoint */
	FLOWSDN_E_AGENT_HOST_NETNS,    /* the netns is the agent's own or the initial one */
	FLOWSDN_E_AGENT_CONFLICT,      /* saved state contradicts itself or IPAM (endpoint refused) */
	FLOWSDN_E_AGENT_MAX_,
};

#define AGENT_API_SOCKET "/var/run/flowsdn/flowsdn.sock"
#define AGENT_API_STATE_DIR "/var/lib/flowsdn"
#define AGENT_API_QUEUE_SUBDIR "cni-queue"

/* Addresses per endpoint (one per family). */
#define AGENT_API_MAX_ADDRS 2

/* An endpoint as the agent keeps and reports it. */
struct agent_api_endpoint {
	uint32_t id;
	char container_id[256];
	char ifname[16];
	char netns[256];
	uint64_t netns_ino;
	char host_ifname[16];
	int host_ifindex;
	uint8_t mac[6];
	uint8_t host_mac[6];
	unsigned int mtu;
	time_t created;
	size_t n_addrs;
	struct flowsdn_addr addrs[AGENT_API_MAX_ADDRS]; /* IPv4 first */
	unsigned int prefix_len[AGENT_API_MAX_ADDRS];   /* as configured on the interface (32/128) */
	struct flowsdn_addr gateway[AGENT_API_MAX_ADDRS];
	enum flowsdn_cni_svc_translation svc_translation; /* "serviceTranslation" */
};

/* The endpoint object. */
void agent_api_endpoint_gen(struct json_writer *g, const struct agent_api_endpoint *e);
/* Reads an endpoint object (every field required and checked; the
 * container id and the interface names by the rules of common/names.h):
 * 0 or -EBADMSG; @e is untouched on failure. */
int agent_api_endpoint_parse(const struct json_value *o, struct agent_api_endpoint *e);

/* The gateway the agent gives every endpoint of a family. */
int agent_api_gateway(int family, struct flowsdn_addr *ret);

/* The owner body; @netns NULL and @mtu 0 are left out.  *ret freed by the
 * caller.  -ENOMEM, -EINVAL. */
int agent_api_owner_body(const char *container_id, const char *ifname, const char *netns, unsigned int mtu,
			 char **ret);
/* The ADD body: the owner body and, for FLOWSDN_CNI_SVC_PACKET,
 * "serviceTranslation": "packet". */
int agent_api_add_body(const char *container_id, const char *ifname, const char *netns, unsigned int mtu,
		       enum flowsdn_cni_svc_translation svc, char **ret);

/* The error body of a failed request: @err is the negative errno or
 * domain code. */
void agent_api_error_gen(struct json_writer *g, int err, const char *message);
/* The same with the request field at fault ("backends[1].port") in
 * "error.field" (NULL or "": none). */
void agent_api_error_field_gen(struct json_writer *g, int err, const char *message, const char *field);
/* Reads an error body: *ret_err the negative code, @msg the message.
 * -EBADMSG when it is not one. */
int agent_api_error_parse(const struct json_value *root, int *ret_err, char *msg, size_t msg_size);
/* The symbolic name of a code ("FLOWSDN_E_IPAM_EXHAUSTED", "EINVAL"); NULL
 * for a code no module defines. */
const char *agent_api_error_name(int err);
/* The number of a symbolic name (negative), 0 when unknown. */
int agent_api_error_from_name(const char *name);
/* Describes any code the node programs meet (theirs and libflowsdn's). */
const char *agent_api_strerror(int err);

/* The queue directory in a state directory (freed by the caller). */
char *agent_api_queue_dir(const char *state_dir);
/* The entry name of an owner (freed by the caller): "<container_id>.<ifname>.json",
 * or, when that would exceed NAME_MAX (ids longer than about 234 bytes),
 * "<first AGENT_API_QUEUE_NAME_PREFIX bytes of the id>~<128-bit hash of
 * the owner in hex>.json".  The entry's body names the owner; the name only
 * keeps owners apart.  NULL when the owner is invalid or on ENOMEM. */
#define AGENT_API_QUEUE_NAME_PREFIX 200
char *agent_api_queue_entry_name(const char *container_id, const char *ifname);
/* Reads a queue entry (an owner body): pointers into @root. */
int agent_api_queue_entry_parse(const struct json_value *root, const char **ret_container_id,
				const char **ret_ifname);

/*
 * Which directory a queue entry may be written into (agent-api-queue.c).
 * The network configuration names it ("queueDir"), and a network
 * configuration can come from a tenant (a NetworkAttachmentDefinition),
 * so it is not trusted: a configured directory is used only when the
 * agent marked it as the queue of its state directory, with the file
 * AGENT_API_QUEUE_MARKER, which only the owner of that directory (root)
 * can have written.  The queue of the default state directory needs no
 * mark (the agent may never have run there yet).  Either must be private
 * to us (owned by the effective user, not writable by group or others),
 * and no symlink is followed to it or inside it.
 */
#define AGENT_API_QUEUE_MARKER ".flowsdn-agent-queue"

/* The agent's side, at start: creates @queue_dir (mode 0700, parents
 * too) and its marker.  -EPERM / -ELOOP when the directory is not private
 * to us, -errno. */
int agent_api_queue_dir_mark(const char *queue_dir);

/* The plugin's side: opens @queue_dir for writing entries.  @configured
 * says it came from the network configuration (then the marker must be
 * there); otherwise it is created when missing.  Returns the directory
 * descriptor (O_CLOEXEC), or -errno with a reason naming @queue_dir in
 * @why: -ELOOP (a symlink), -EPERM (not private, or not the agent's),
 * -ENOENT, -ENOTDIR. */
int agent_api_queue_dir_open(const char *queue_dir, bool configured, char *why, size_t why_size);

/* The host-side interface name of an endpoint: "fsd" and 12 hex digits
 * of a hash of (@container_id, @ifname); @buf of at least 16 bytes. */
int agent_api_host_ifname(const char *container_id, const char *ifname, char *buf, size_t size);

/* The request header carrying the client's deadline: CLOCK_MONOTONIC
 * milliseconds (client and agent run on the same node, util_mono_ms()),
 * after which the client no longer waits for the answer. */
#define AGENT_API_DEADLINE_HEADER "Flowsdn-Deadline"

#endif
