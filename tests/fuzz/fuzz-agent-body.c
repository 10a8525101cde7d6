/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the request bodies of flowsdn-agent's POST routes
 * (agent_http_body_read(), which agent/http.c calls for every
 * /v1/cni/add, check, del and gc).  The first byte of an input picks the
 * route ('a' add, 'c' check, 'd' del, 'g' gc; anything else: the whole
 * input as an add).  Properties:
 *  - a refused body gives a negative code, a 400 (500 only for -ENOMEM)
 *    and a message, and leaves the output untouched;
 *  - an accepted owner passes the CNI container id and interface name
 *    rules (and the netns and mtu bounds of ADD/CHECK), and the owner
 *    body the plugin writes for it (agent_api_owner_body()) reads back to
 *    the same owner;
 *  - an accepted GC holds one valid owner per attachment.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/cni.h>

#include "agent-api.h"
#include "conf.h"
#include "diag.h"
#include "http.h"

/* One diag for the whole run (refilled by every call). */
static struct diag *fuzz_diag(void)
{
	static struct diag *d;

	if (!d && diag_new(&d) < 0)
		abort();
	return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void owner_round_trip(enum agent_http_verb verb, const struct agent_http_body *b)
{
	struct agent_http_body again;
	struct diag *diag = fuzz_diag();
	unsigned int status = 0;
	char *text = NULL;

	check(agent_api_add_body(b->rq.container_id, b->rq.ifname, b->rq.netns, b->rq.mtu, b->rq.svc_translation,
				 &text) == 0);
	check(agent_http_body_read(verb, text, strlen(text), &again, &status, diag) == 0);
	check(same(again.rq.container_id, b->rq.container_id) && same(again.rq.ifname, b->rq.ifname));
	check(same(again.rq.netns, b->rq.netns) && again.rq.mtu == b->rq.mtu);
	check(again.rq.svc_translation == b->rq.svc_translation);
	agent_http_body_clear(&again);
	free(text);
}

static void body(enum agent_http_verb verb, const char *text, size_t len)
{
	struct agent_http_body b = { .n = 12345 };
	struct diag *diag = fuzz_diag();
	unsigned int status = 0;
	int r = agent_http_body_read(verb, text, len, &b, &status, diag);

	if (r < 0) {
		check(b.n == 12345 && !b.root);
		check(status == (r == -ENOMEM ? 500u : 400u));
		check(agent_diag_message(diag)[0] != '\0');
		return;
	}
	check(r == 0 && b.root);
	if (verb == AGENT_HTTP_GC) {
		for (size_t i = 0; i < b.n; i++)
			check(flowsdn_cni_container_id_valid(b.ids[i]) && flowsdn_cni_ifname_valid(b.ifnames[i]));
		check(b.ids[b.n] == NULL);
	} else {
		check(flowsdn_cni_container_id_valid(b.rq.container_id) && flowsdn_cni_ifname_valid(b.rq.ifname));
		if (verb != AGENT_HTTP_DEL)
			check(b.rq.netns && b.rq.netns[0] == '/' && strlen(b.rq.netns) < 256 &&
			      (b.rq.mtu == 0 || (b.rq.mtu >= 1280 && b.rq.mtu <= 65535)));
		else
			check(b.rq.mtu == 0);
		owner_round_trip(verb, &b);
	}
	agent_http_body_clear(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char routes[] = "acdg"; /* in enum agent_http_verb order */
	const char *r = size ? memchr(routes, data[0], 4) : NULL;

	if (r)
		body((enum agent_http_verb)(r - routes), (const char *)data + 1, size - 1);
	else
		body(AGENT_HTTP_ADD, (const char *)data, size);
	return 0;
}
