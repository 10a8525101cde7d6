/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's side of the delete queue: the DELs flowsdn-cni wrote while
 * the agent was unreachable (entry format: common/agent-api.h).  Private
 * to agent/. */
#ifndef FLOWSDN_AGENT_REPLAY_H
#define FLOWSDN_AGENT_REPLAY_H

/* Called for each valid entry; returns < 0 to keep the entry for a later
 * replay, >= 0 when done with it. */
typedef int (*agent_replay_del_fn)(void *userdata, const char *container_id, const char *ifname);

/* Replays every entry of @queue_dir through @del and removes it; an
 * unreadable entry or one naming no valid owner is removed with a
 * warning.  Returns the number replayed (0 when the directory does not
 * exist) or -errno. */
int agent_replay_queue(const char *queue_dir, agent_replay_del_fn del, void *userdata);

#endif
