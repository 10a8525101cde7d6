/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-cni's verbs: the primary veth plugin (any "type" but
 * "loopback") and the loopback plugin ("type": "loopback"), on top of
 * libflowsdn's CNI codec and the agent client.  Private to cni/.
 */
#ifndef FLOWSDN_CNI_PLUGIN_H
#define FLOWSDN_CNI_PLUGIN_H

#include <stddef.h>

/* A plugin-specific CNI code: the interface name is taken or the
 * endpoint's state conflicts. */
#define CNI_PLUGIN_CODE_CONFLICT 101

struct cni_plugin_opts {
	/* Defaults for the configuration keys "agentSocket", "queueDir",
	 * "timeoutMs" (NULL/0: AGENT_API_SOCKET, /var/lib/flowsdn/cni-queue,
	 * 10000). */
	const char *socket;
	const char *queue_dir;
	unsigned int timeout_ms;
};

/*
 * Runs one invocation: @input is the configuration from stdin (@len
 * bytes), the CNI_* variables come through @getenv_fn.  The primary
 * plugin asks flowsdn-agent (over its socket, every request bounded by
 * the timeout) to build, check and delete endpoints; a DEL the agent
 * cannot take is queued on disk, and the pair removed at once from inside
 * CNI_NETNS (never in the plugin's own netns).  On 0, *ret_status is the
 * process exit status (0 success, 1 error) and *ret_out what to print on
 * stdout (a result, the VERSION answer or the error JSON; "" when nothing
 * is printed), freed by the caller.  -EINVAL / -ENOMEM only when even the output could not be made.
 * @opts may be NULL.
 */
int cni_plugin_run(const char *input, size_t len, const char *(*getenv_fn)(const char *name, void *userdata),
		   void *userdata, const struct cni_plugin_opts *opts, char **ret_out, int *ret_status);

/* The CNI error code of a failed call: the one place that maps domain
 * codes (the agent's, the client's, libflowsdn's) and errno to CNI codes. */
unsigned int cni_plugin_code(int err);

#endif
