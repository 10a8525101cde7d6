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
 * its network namespace is its own.  Egress: "disabled" runs with
 * --network=none (loopback only); the other modes need the flowsdn wiring
 * and are refused (-EOPNOTSUPP, with a diag) until it is there.
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
 * The warm pool: pool_size idle sandboxes of pool_image, started with
 * --network=none and no tenant data, are claimed by a Provision whose spec
 * names that image and asks no more CPU and memory than the pool's spec
 * and egress "disabled"; a claimed sandbox is renamed to the session
 * (its annotation file and record), never returns, and the pool is
 * refilled in the background.
 */
#ifndef FLASH_OPERATOR_SANDBOX_GVISOR_H
#define FLASH_OPERATOR_SANDBOX_GVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/sandbox.h>

#include "admission.h"

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
