/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The delete queue's directory: the agent marks its own, the plugin writes
 * only into a directory so marked (or the default one), never through a
 * symlink. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "agent-api.h"
#include "util.h"

#define MARKER_TEXT "flowsdn-agent delete queue: DELs the plugin could not hand over are written here\n"

int agent_api_queue_dir_mark(const char *queue_dir)
{
	_cleanup_close_ int dfd = -1;
	struct stat st;
	int r;

	if (!queue_dir || queue_dir[0] != '/')
		return -EINVAL;
	r = util_mkdir_p(queue_dir, 0700);
	if (r < 0)
		return r;
	dfd = util_open_dir_private(queue_dir, &st);
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, AGENT_API_QUEUE_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid())
		return 0;
	return util_write_file_atomic_at(dfd, AGENT_API_QUEUE_MARKER, MARKER_TEXT, strlen(MARKER_TEXT), 0600);
}

int agent_api_queue_dir_open(const char *queue_dir, bool configured, char *why, size_t why_size)
{
	_cleanup_close_ int dfd = -1;
	struct stat st;
	int r;

	if (!why || !why_size)
		return -EINVAL;
	why[0] = '\0';
	if (!queue_dir || queue_dir[0] != '/') {
		snprintf(why, why_size, "queue directory %s is not an absolute path", queue_dir ? queue_dir : "(none)");
		return -EINVAL;
	}
	if (!configured) {
		/* The agent may never have run here: make the state directory too. */
		r = util_mkdir_p(queue_dir, 0700);
		if (r < 0) {
			snprintf(why, why_size, "creating %s: %s", queue_dir, strerror(-r));
			return r;
		}
	}
	dfd = util_open_dir_private(queue_dir, &st);
	if (dfd == -ELOOP)
		snprintf(why, why_size, "%s is a symbolic link (not followed)", queue_dir);
	else if (dfd == -EPERM && lstat(queue_dir, &st) == 0)
		snprintf(why, why_size,
			 "%s is not private to uid %u (owned by uid %u, mode %04o): it must be ours and not writable "
			 "by group or others",
			 queue_dir, (unsigned int)geteuid(), (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
	else if (dfd < 0)
		snprintf(why, why_size, "%s: %s", queue_dir, strerror(-dfd));
	if (dfd < 0)
		return dfd;
	if (configured && (fstatat(dfd, AGENT_API_QUEUE_MARKER, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
			   st.st_uid != geteuid())) {
		snprintf(why, why_size,
			 "queueDir %s is not flowsdn-agent's delete queue (no %s in it: the agent marks the queue of "
			 "its state-dir when it starts)",
			 queue_dir, AGENT_API_QUEUE_MARKER);
		return -EPERM;
	}
	return TAKE_FD(dfd);
}
