/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the body of flowsdn-agent's PUT /v1/hostfw
 * (agent_policy_hostfw_body_parse(), which the route and the restore of
 * the saved mode call).  Properties:
 *  - a refused body gives -FLOWSDN_E_AGENT_REFUSED and a message, and
 *    leaves the mode untouched;
 *  - an accepted one names a mode of enum flowsdn_hostfw_mode, and the
 *    body the agent saves for it ({"mode": NAME}) reads back to the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/maps.h>

#include "agent-api.h"
#include "conf.h"
#include "diag.h"
#include "hostfw.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct diag *d;
	unsigned int mode = 12345, again = 54321;
	char saved[64];
	int r, n;

	if (!d && diag_new(&d) < 0)
		abort();
	r = agent_policy_hostfw_body_parse((const char *)data, size, &mode, d);
	if (r < 0) {
		check(r == -FLOWSDN_E_AGENT_REFUSED && mode == 12345 && agent_diag_message(d)[0] != '\0');
		return 0;
	}
	check(r == 0 && mode <= FLOWSDN_HOSTFW_ENFORCE);
	n = snprintf(saved, sizeof(saved), "{\"mode\":\"%s\"}", agent_hostfw_mode_name(mode));
	check(agent_policy_hostfw_body_parse(saved, (size_t)n, &again, d) == 0 && again == mode);
	return 0;
}
