/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host firewall's words (hostfw.h). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <flowsdn/maps.h>

#include "hostfw.h"

const char *const agent_hostfw_mode_words[] = { "off", "audit", "enforce", NULL };

_Static_assert(FLOWSDN_HOSTFW_OFF == 0 && FLOWSDN_HOSTFW_AUDIT == 1 && FLOWSDN_HOSTFW_ENFORCE == 2,
	       "the words follow enum flowsdn_hostfw_mode");

const char *agent_hostfw_mode_name(unsigned int mode)
{
	return mode <= FLOWSDN_HOSTFW_ENFORCE ? agent_hostfw_mode_words[mode] : "?";
}

int agent_hostfw_mode_parse(const char *word, unsigned int *ret)
{
	for (unsigned int i = 0; word && agent_hostfw_mode_words[i]; i++)
		if (!strcmp(word, agent_hostfw_mode_words[i])) {
			*ret = i;
			return 0;
		}
	return -EINVAL;
}
