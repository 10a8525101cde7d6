/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for flowsdn-agent's configuration parser
 * (agent/conf.c, flowsdn-agent.conf(5)).  Properties:
 *  - a refused file leaves no configuration and names the key at fault
 *    (a diag entry);
 *  - an accepted one is within its bounds, and formats (with every key)
 *    to JSON that parses to a configuration with the same formatting;
 *    its copy formats the same too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_config *cfg = (struct agent_config *)&cfg, *again = NULL, *copy = NULL;
	struct diag *diag = NULL;
	char *f1 = NULL, *f2 = NULL, *f3 = NULL;
	int r;

	check(diag_new(&diag) == 0);
	r = agent_config_parse((const char *)data, size, &cfg, diag);
	if (r < 0) {
		check(cfg == (struct agent_config *)&cfg);
		check(r == -ENOMEM || diag_errors(diag) > 0);
		diag_free(diag);
		return 0;
	}
	check(cfg->n_pools <= AGENT_MAX_POOLS);
	check(cfg->socket && cfg->state_dir && cfg->pin_dir && cfg->http_listen);
	check(cfg->mtu >= 1280 && cfg->mtu <= 65535 && cfg->max_connections >= 1 && cfg->max_connections <= 1024);
	check(agent_config_format(cfg, &f1) == 0);
	check(agent_config_parse(f1, strlen(f1), &again, NULL) == 0);
	check(agent_config_format(again, &f2) == 0);
	check(strcmp(f1, f2) == 0);
	check(agent_config_dup(cfg, &copy) == 0);
	check(agent_config_format(copy, &f3) == 0);
	check(strcmp(f1, f3) == 0);
	free(f1);
	free(f2);
	free(f3);
	agent_config_free(copy);
	agent_config_free(again);
	agent_config_free(cfg);
	diag_free(diag);
	return 0;
}
