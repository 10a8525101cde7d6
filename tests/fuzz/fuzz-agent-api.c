/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the readers of common/agent-api.c, what the node
 * programs read from each other: the endpoint object (flowsdn-agent's
 * answer to flowsdn-cni, and each entry of the agent's endpoint state
 * endpoints.json read back at start), an error body (what the agent
 * client reads from a failed request), and a queue entry (a DEL
 * flowsdn-cni queued for the agent, read by agent_replay_queue()).  The
 * first byte says which ('e', 'x', 'q'); the rest is the JSON.
 * Properties:
 *  - an endpoint that reads is within its bounds and round-trips: its
 *    object as the agent writes it (agent_api_endpoint_gen()) reads back
 *    to an endpoint that writes the same text; a refused one is -EBADMSG
 *    and leaves the output untouched;
 *  - an error body that reads gives a negative code and a message;
 *  - a queue entry that reads names a valid owner, whose queue entry
 *    name can be made.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-helpers.h"
#include "agent-api.h"
#include "json.h"
#include "names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static char *endpoint_json(const struct agent_api_endpoint *e)
{
	struct json_writer *g = json_writer_new(0);
	char *out = NULL;

	fuzz_check(g != NULL);
	agent_api_endpoint_gen(g, e);
	fuzz_check(json_writer_finish(g, &out, NULL) == 0);
	return out;
}

static void endpoint(const struct json_value *root)
{
	struct agent_api_endpoint e, back, untouched;
	struct json_value *again = NULL;
	char *j1, *j2;

	memset(&e, 0xa5, sizeof(e));
	untouched = e;
	if (agent_api_endpoint_parse(root, &e) < 0) {
		fuzz_check(!memcmp(&e, &untouched, sizeof(e)));
		return;
	}
	fuzz_check(memchr(e.container_id, 0, sizeof(e.container_id)) && memchr(e.ifname, 0, sizeof(e.ifname)) &&
	      memchr(e.netns, 0, sizeof(e.netns)) && memchr(e.host_ifname, 0, sizeof(e.host_ifname)));
	fuzz_check(e.n_addrs <= AGENT_API_MAX_ADDRS);
	fuzz_check(names_container_id_valid(e.container_id) && names_ifname_valid(e.ifname) &&
	      names_ifname_valid(e.host_ifname));
	j1 = endpoint_json(&e);
	fuzz_check(json_parse(j1, strlen(j1), NULL, &again, NULL) == 0);
	memset(&back, 0x5a, sizeof(back));
	fuzz_check(agent_api_endpoint_parse(again, &back) == 0);
	j2 = endpoint_json(&back);
	fuzz_check(!strcmp(j1, j2));
	json_free(again);
	free(j1);
	free(j2);
}

static void error_body(const struct json_value *root)
{
	char msg[256] = "";
	int err = 0;

	if (agent_api_error_parse(root, &err, msg, sizeof(msg)) < 0)
		return;
	fuzz_check(err < 0);
	fuzz_check(memchr(msg, 0, sizeof(msg)) != NULL);
}

static void queue_entry(const struct json_value *root)
{
	const char *cid = NULL, *ifn = NULL;
	char *name;

	if (agent_api_queue_entry_parse(root, &cid, &ifn) < 0)
		return;
	fuzz_check(cid && ifn && names_container_id_valid(cid) && names_ifname_valid(ifn));
	name = agent_api_queue_entry_name(cid, ifn);
	fuzz_check(name && !strchr(name, '/') && strlen(name) <= 255);
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_value *root = NULL;

	if (size == 0 || json_parse((const char *)data + 1, size - 1, NULL, &root, NULL) < 0)
		return 0;
	switch (data[0]) {
	case 'x': error_body(root); break;
	case 'q': queue_entry(root); break;
	default: endpoint(root); break;
	}
	json_free(root);
	return 0;
}
