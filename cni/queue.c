/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Queuing a DEL for the agent. */
#include "config.h"

#include <stdio.h>

#include "agent-api.h"
#include "queue.h"
#include "util.h"

int cni_queue_delete(const char *queue_dir, const char *container_id, const char *ifname)
{
	_cleanup_free_ char *path = NULL, *body = NULL, *name = NULL;
	int r;

	if (!queue_dir || queue_dir[0] != '/')
		return -EINVAL;
	name = agent_api_queue_entry_name(container_id, ifname);
	if (!name)
		return -EINVAL;
	/* The agent may never have run here: make the state directory too. */
	r = util_mkdir_p(queue_dir, 0700);
	if (r < 0)
		return r;
	if (asprintf(&path, "%s/%s", queue_dir, name) < 0)
		return -ENOMEM;
	r = agent_api_owner_body(container_id, ifname, NULL, 0, &body);
	if (r < 0)
		return r;
	return util_write_file_atomic(path, body, strlen(body), 0600);
}
