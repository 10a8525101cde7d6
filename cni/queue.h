/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plugin's side of the delete queue: a DEL the agent could not take,
 * written for the agent to replay (entry format and directory rules:
 * common/agent-api.h).  Private to cni/. */
#ifndef FLOWSDN_CNI_QUEUE_H
#define FLOWSDN_CNI_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

/* Writes "<queue_dir>/<container_id>.<ifname>.json" atomically, inside
 * the directory opened by agent_api_queue_dir_open() (@configured: named
 * by the network configuration, so it must be the agent's marked queue;
 * otherwise it and missing parents are created, mode 0700), never through
 * a symlink.  Queuing the same owner twice keeps one entry.  -EINVAL for
 * a relative @queue_dir or an invalid owner, -ELOOP, -EPERM, -errno; the
 * reason, naming the directory, in @why. */
int cni_queue_delete(const char *queue_dir, bool configured, const char *container_id, const char *ifname,
		     char *why, size_t why_size);

#endif
