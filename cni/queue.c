/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Queuing a DEL for the agent. */
#include "config.h"

#include <stdio.h>

#include "agent-api.h"
#include "queue.h"
#include "util.h"

int cni_queue_delete(const char *queue_dir, bool configured, const char *container_id, const char *ifname,
		     char *why, size_t why_size)
{
	_cleanup_free_ char *body = NULL, *name = NULL;
	_cleanup_close_ int dfd = -1;
	int r;

	if (!why || !why_size)
		return -EINVAL;
	why[0] = '\0';
	name = agent_api_queue_entry_name(container_id, ifname);
	if (!name) {
		snprintf(why, why_size, "invalid owner");
		return -EINVAL;
	}
	dfd = agent_api_queue_dir_open(queue_dir, configured, why, why_size);
	if (dfd < 0)
		return dfd;
	r = agent_api_owner_body(container_id, ifname, NULL, 0, &body);
	if (r >= 0)
		r = util_write_file_atomic_at(dfd, name, body, strlen(body), 0600);
	if (r < 0)
		snprintf(why, why_size, "writing %s/%s: %s", queue_dir, name, strerror(-r));
	return r;
}
