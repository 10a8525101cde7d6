/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replaying the delete queue. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent-api.h"
#include "log.h"
#include "replay.h"

int agent_replay_queue(const char *queue_dir, agent_replay_del_fn del, void *userdata)
{
	DIR *d = opendir(queue_dir);
	struct dirent *de;
	int replayed = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		_cleanup_free_ char *path = NULL, *data = NULL;
		struct json_value *root = NULL;
		const char *cid, *ifn;
		size_t len, nl = strlen(de->d_name);

		if (nl < 6 || strcmp(de->d_name + nl - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		if (asprintf(&path, "%s/%s", queue_dir, de->d_name) < 0)
			break;
		if (util_read_file(path, 4096, &data, &len) < 0 || json_parse(data, len, NULL, &root, NULL) < 0) {
			pr_warn("agent: queue entry %s is unreadable; removed", path);
			unlink(path);
			continue;
		}
		if (agent_api_queue_entry_parse(root, &cid, &ifn) == 0) {
			int err = del(userdata, cid, ifn);

			if (err < 0) {
				pr_warn("agent: replaying DEL %s/%s: %s", cid, ifn, agent_api_strerror(err));
				json_free(root);
				continue;
			}
			pr_info("agent: replayed queued DEL %s/%s", cid, ifn);
			replayed++;
		} else {
			pr_warn("agent: queue entry %s names no valid owner; removed", path);
		}
		json_free(root);
		unlink(path);
	}
	closedir(d);
	return replayed;
}
