/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Kubernetes backend of sandbox sessions (contract C20,
 * <flash/sandbox.h>): one Pod per session, over the one Kubernetes client
 * (common/k8s.h, common/k8s-exec.h).
 *
 * The Pod (validated against the server's OpenAPI schema before it is
 * sent): name "sbx-" + the session id (a fixed name, so that two racing
 * Provisions meet in a 409 and the loser adopts), but every later call
 * selects it by its ownership label FLASH_SANDBOX_LABEL=<id>, never by
 * that name; labels app.kubernetes.io/managed-by=flash-operator; the
 * annotation flash.heterocloud.io/sandbox-expires-at (unix seconds);
 * restartPolicy Never, no service-account token, no service links; one
 * container "sandbox" of the spec's image (the image contract: /bin/bash
 * and a userland; kept alive by a bash sleep loop), its cpu and memory as
 * requests and limits, the spec's env; RuntimeClass, NodeSelector,
 * Tolerations and ImagePullSecrets from the backend's configuration
 * strings, parsed once (op_sandbox_k8s_new() refuses malformed ones); and
 * for a limited sandbox (egress disabled or restricted) an init container
 * "net-setup" of NetSetupImage (NET_ADMIN; iproute2 and a POSIX shell)
 * that flushes the Pod's routes, keeping only routes to the resolv.conf
 * nameservers (disabled: DNS only) or also to the allowed destinations
 * (restricted), via the default gateway.
 *
 * Provision: the session's Pod by label if there is one (adopted; a
 * terminating one is waited out first), else created; a 409 AlreadyExists
 * adopts the winner's; then waits (polling, bounded) until it is Running
 * and Ready or has failed (FLASH_SANDBOX_END_FAILED with the container's
 * reason: ErrImagePull, OOMKilled...).  Exec: pods/exec of the session's
 * Pod (container "sandbox"), env applied by a /bin/bash prologue (pods/exec
 * has no environment).  Owned: the label values of every Pod carrying the
 * label in the namespace.  Revoke (the session's gate, before Reap
 * deletes): the annotation flash.heterocloud.io/sandbox-revoked
 * merge-patched onto the session's Pods; a revoked Pod's session is
 * END_REAPED "reaping" to Info, refused by Exec and Provision.  Reap:
 * every Pod with the session's label deleted with gracePeriodSeconds 0,
 * then polled (bounded) until none is left, terminating ones included.  A session seen past its expiry
 * (Info, Exec) has its Pods reaped and is kept as ended (in memory, until
 * its Reap or a new Provision: Info answers END_EXPIRED, Exec
 * -FLASH_E_SANDBOX_ENDED).
 */
#ifndef FLASH_OPERATOR_SANDBOX_K8S_H
#define FLASH_OPERATOR_SANDBOX_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <flash/render.h>
#include <flash/sandbox.h>

#include "diag.h"
#include "k8s.h"

struct op_sandbox_k8s_opts {
	size_t sz;
	const char *namespace;            /* required: where session Pods live */
	const char *runtime_class;        /* NULL: none; a DNS subdomain ("gvisor") */
	const char *node_selector;        /* NULL or "key=value[,key=value...]" (label keys and values) */
	/* NULL or "KEY[=VALUE][:EFFECT][,...]": Equal with a value, Exists
	 * without; EFFECT NoSchedule, PreferNoSchedule or NoExecute (none:
	 * every effect). */
	const char *tolerations;
	const char *image_pull_secrets;   /* NULL or "name[,name...]" (DNS subdomains) */
	const char *net_setup_image;      /* required for limited sandboxes: an image reference */
	const struct flash_schema_set *schemas; /* required: every Pod is checked before it is sent */
	/* A client for one call (from any thread): the backend makes one per
	 * operation.  Required. */
	int (*new_client)(void *ctx, struct k8s_client **ret);
	void *client_ctx;
	unsigned int ready_timeout_ms;    /* [120000] Provision waits for Running and Ready */
	unsigned int reap_timeout_ms;     /* [60000] Reap waits for the Pods to be gone */
	unsigned int poll_ms;             /* [200] the polls of both */
};

/* The backend: its ops and state for flash_sandbox_provider_new().
 * -EINVAL with @diag naming the malformed option, -ENOMEM. */
int op_sandbox_k8s_new(const struct op_sandbox_k8s_opts *opts, const struct flash_sandbox_backend_ops **ret_ops,
		       void **ret_backend, struct diag *diag) __attribute__((warn_unused_result));

/* The backend's settings of flash-operator: each option of @cli (the
 * --sandbox-namespace, --sandbox-net-setup-image, --sandbox-runtime-class,
 * --sandbox-node-selector, --sandbox-tolerations and
 * --sandbox-image-pull-secrets options; may be NULL) over the key of the
 * configuration's sandbox section (@config, may be NULL) into *ret (the
 * strings borrowed; the rest of *ret zero).  Parsing them is
 * op_sandbox_k8s_new()'s.  false when neither names a namespace: no
 * sandbox sessions in Kubernetes mode. */
bool op_sandbox_k8s_settings(const struct op_sandbox_k8s_opts *cli, const struct flash_operator_config *config,
			     struct op_sandbox_k8s_opts *ret);

/* The Pod object of @session_id for @spec (exported for tests): compact
 * JSON in *ret (free()).  -EINVAL, -ENOMEM. */
int op_sandbox_k8s_pod(void *backend, const char *session_id, const struct flash_spec *spec, uint32_t ttl_s,
		       int64_t now, char **ret, size_t *ret_len) __attribute__((warn_unused_result));

#endif
