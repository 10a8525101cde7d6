/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flowsdn-agent's log: its own messages and libflowsdn's (through
 * flowsdn_set_log()), one line each on stderr.  Private to agent/. */
#ifndef FLOWSDN_AGENT_LOG_H
#define FLOWSDN_AGENT_LOG_H

#include <flowsdn/common.h>

#include "util.h"

/* Messages above @max are dropped (default FLOWSDN_LOG_INFO). */
void agent_log_set_level(enum flowsdn_log_level max);
void agent_log(enum flowsdn_log_level level, const char *fmt, ...) _printf_(2, 3);
/* A flowsdn_log_fn writing the library's messages the same way. */
void agent_log_library(enum flowsdn_log_level level, const char *msg, void *userdata);

#define pr_err(...) agent_log(FLOWSDN_LOG_ERR, __VA_ARGS__)
#define pr_warn(...) agent_log(FLOWSDN_LOG_WARNING, __VA_ARGS__)
#define pr_info(...) agent_log(FLOWSDN_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) agent_log(FLOWSDN_LOG_DEBUG, __VA_ARGS__)

#endif
