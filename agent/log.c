/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flowsdn-agent's log lines. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "log.h"

static enum flowsdn_log_level log_max = FLOWSDN_LOG_INFO;

void agent_log_set_level(enum flowsdn_log_level max)
{
	log_max = max;
}

void agent_log_library(enum flowsdn_log_level level, const char *msg, void *userdata)
{
	static const char *const names[] = { [FLOWSDN_LOG_ERR] = "error", [FLOWSDN_LOG_WARNING] = "warning",
					     [FLOWSDN_LOG_INFO] = "info", [FLOWSDN_LOG_DEBUG] = "debug" };

	(void)userdata;
	if (level > log_max)
		return;
	fprintf(stderr, "flowsdn-agent: %s: %s\n", level <= FLOWSDN_LOG_DEBUG && names[level] ? names[level] : "log",
		msg);
}

void agent_log(enum flowsdn_log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	agent_log_library(level, buf, NULL);
}
