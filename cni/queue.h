/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plugin's side of the delete queue: a DEL the agent could not take,
 * written for the agent to replay (entry format: common/agent-api.h).
 * Private to cni/. */
#ifndef FLOWSDN_CNI_QUEUE_H
#define FLOWSDN_CNI_QUEUE_H

/* Writes "<queue_dir>/<container_id>.<ifname>.json" atomically (the
 * directory and missing parents are created, mode 0700).  Queuing the
 * same owner twice keeps one entry.  -EINVAL for a relative @queue_dir or
 * an invalid owner, -errno. */
int cni_queue_delete(const char *queue_dir, const char *container_id, const char *ifname);

#endif
