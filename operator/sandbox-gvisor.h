/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The gVisor backend of sandbox sessions (private to operator/): one runsc
 * sandbox per session on this node, behind the backend ops of
 * <flash/sandbox.h>.
 *
 * A session's sandbox is a runsc container (ptrace platform) whose id is
 * random ("sbx-" and 16 hex digits, never derived from the session id),
 * carrying the annotation FLASH_SANDBOX_LABEL=<session id>: Provision,
 * Info, Owned and Reap select it by that annotation (`runsc list`), so
 * they work from a session id alone after an operator restart.  Its root
 * is the image's unpacked root, shared read-only, under a memory overlay
 * (--overlay2=root:memory: writes are charged to the sandbox's memory);
 * its process is a keep-alive /bin/bash loop (the image contract); its
 * cgroup is CGROUP_PARENT/<container id> with the spec's CPU and memory;
 * its network namespace is its own.  Without networking (no
 * cni_bin_dir) it runs with --network=none (loopback only) and egress
 * modes other than "disabled" are refused (-EOPNOTSUPP, with a diag).
 * With it: the netns is wired by flowsdn-cni before runsc starts with
 * --network=sandbox (on /proc/sys/net made private: gVisor 10704); the
 * endpoint's identity is namespace org-HASH of the organization, labels
 * app.kubernetes.io/name=<container id>, the organization, the project
 * and FLASH_SANDBOX_LABEL=<session id>; the session's four tiered
 * policies (flash_render_isolation(): disabled = DNS only, restricted =
 * the allowed destinations, internet = public destinations; protected
 * ranges and denied destinations refused) are PUT before the endpoint
 * exists.  Teardown: CNI DEL, a wait (up to 10 s) until the agent's IPAM
 * no longer holds the address (the agent finishes a DEL in the
 * background), then the policies DELETEd; a failure keeps the record,
 * to be retried.
 *
 * Files under opts->dir: runsc/ (runsc --root), sessions/<container id>/
 * (bundle: config.json, netns, session.json: session id, created_at,
 * expires_at, and "revoked" once the session's Reap closed its gate:
 * Info then says END_REAPED "reaping", Exec and Provision refuse),
 * locks/<session id> (flock: two racing Provisions converge),
 * ended/<session id>.json (the end of an expired or failed session, kept
 * until Reap or TTL_ENDED).
 *
 * A thread enforces expires_at: an expired session's sandbox is removed
 * and its end recorded (Info then says FLASH_SANDBOX_END_EXPIRED).  A
 * sandbox that died says FLASH_SANDBOX_END_FAILED with the reason ("OOM
 * killed" from its memory cgroup, or "sandbox stopped").
 *
 * The warm pool: pool_size idle sandboxes of pool_image, started with no
 * tenant data, are claimed by a Provision whose spec names that image and
 * asks no more CPU and memory than the pool's spec (and, without
 * networking, egress "disabled"); a claimed sandbox is renamed to the
 * session (its record), never returns, and the pool is refilled in the
 * background.  With networking an idle sandbox is wired in namespace
 * OP_NET_POOL_NAMESPACE, whose one policy lets nothing in or out (not
 * even DNS); the claim PUTs the session's policies (they select nothing
 * yet), then moves the endpoint into the session's namespace and labels
 * with one PUT /v1/endpoint/ID/labels: the agent switches its policy
 * entries from deny-all to the session's in one map switch, so there is
 * no moment with more than the session's policy.
 */
#ifndef FLASH_OPERATOR_SANDBOX_GVISOR_H
#define FLASH_OPERATOR_SANDBOX_GVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/sandbox.h>

#include "admission.h"

struct flash_operator_config;
struct flash_policy;

#define OP_SANDBOX_CGROUP_PARENT_DEFAULT "/flash-sandbox"

struct op_sandbox_gvisor_opts {
	size_t sz;
	const char *dir;            /* required: state directory (made 0700) */
	const char *runsc;          /* NULL: /usr/bin/runsc */
	const char *cgroup_parent;  /* NULL: OP_SANDBOX_CGROUP_PARENT_DEFAULT */
	/* The unpacked root of @image (a directory, shared by the sandboxes of
	 * that image, each writing to its own memory overlay): 0 and a new
	 * string, or -errno with @err saying why.  NULL: the image is
	 * resolved, pulled with @registry into DIR/images/store and unpacked
	 * once per manifest digest into DIR/images/HEX (op_sandbox_image_rootfs). */
	int (*rootfs)(void *ctx, const char *image, char **ret_path, char *err, size_t err_size);
	void *rootfs_ctx;
	const struct op_image_settings *registry; /* NULL: <flash/image.h> defaults */
	unsigned int reap_interval_ms; /* expiry scan; 0: 1000 */
	/* warm pool (0: none) */
	unsigned int pool_size;
	const char *pool_image;
	uint32_t pool_cpu_millis;   /* what a pooled sandbox offers; 0: 1000 */
	uint32_t pool_memory_mib;   /* 0: 512 */
	/* flowsdn networking (NULL cni_bin_dir: none, sandboxes run with
	 * --network=none and only egress "disabled"): a netns wired by
	 * flowsdn-cni (the agent's CNI path, an IPAM address, per-packet
	 * service translation), `runsc --network=sandbox`, the session's
	 * egress policy at the agent (runtime-net.h). */
	const char *cni_bin_dir;    /* holding flowsdn-cni */
	const char *cni_conf;       /* NULL: built in */
	const char *agent_socket;   /* NULL: the agent's default */
	const struct flash_operator_config *config; /* protected ranges, DNS; NULL: defaults */
	const struct flash_policy *policy;          /* the owner policy; NULL: none */
	const char *resolv_conf;    /* text: the sessions' /etc/resolv.conf; its nameservers are their DNS servers */
	/* The organization and project of session @sid (label values, into
	 * the buffers; op_sandbox_tenants_lookup() for the routes' Provisions);
	 * NULL, or -ENOENT from it: the organization is the session id's
	 * tenant part ("sb-" and 16 hex digits, flash_client_sandbox_id()), no
	 * project. */
	int (*tenant)(void *ctx, const char *sid, char *org, size_t org_size, char *project, size_t project_size);
	void *tenant_ctx;
};

/* The default rootfs callback (@ctx: the backend). */
int op_sandbox_image_rootfs(void *ctx, const char *image, char **ret_path, char *err, size_t err_size);

/* Starts the backend (its expiry thread, the pool's filling): the ops and
 * the backend to give flash_sandbox_provider_new().  -EINVAL (no dir), -ENOENT (no runsc), -errno. */
int op_sandbox_gvisor_new(const struct op_sandbox_gvisor_opts *opts, const struct flash_sandbox_backend_ops **ret_ops,
			  void **ret_backend);

/* Idle sandboxes in the pool now (for tests and the bench). */
unsigned int op_sandbox_gvisor_pool_idle(void *backend);

#endif
