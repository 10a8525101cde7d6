/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The request bodies of flowsdn-agent's POST routes (agent/http-body.c):
 * what each route accepts, and the code, status and message of each
 * refusal.  tests/fuzz/fuzz-agent-body fuzzes the same function. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <flowsdn/cni.h>
#include <flowsdn/netlink.h>

#include "agent-api.h"
#include "conf.h"
#include "diag-helpers.h"
#include "helpers.h"
#include "http.h"

/* Reads @body for @verb expecting @err (0: accepted) and @status. */
static void expect(enum agent_http_verb verb, const char *body, int err, unsigned int status, const char *msg_part)
{
	struct agent_http_body b = { .n = 77 };
	_cleanup_engine_diag_ struct diag *diag = test_engine_diag();
	unsigned int st = 0;
	int r = agent_http_body_read(verb, body, strlen(body), &b, &st, diag);

	cr_assert_eq(r, err, "%s: got %d (%s), want %d", body, r, agent_diag_message(diag), err);
	if (err == 0) {
		agent_http_body_clear(&b);
		return;
	}
	cr_assert_eq(st, status, "%s: status %u, want %u", body, st, status);
	cr_assert(strstr(agent_diag_message(diag), msg_part), "%s: message \"%s\" lacks \"%s\"", body, agent_diag_message(diag), msg_part);
	cr_assert(b.n == 77 && !b.root, "%s: output touched on failure", body);
}

Test(agent_http_body, add_check_fields)
{
	struct agent_http_body b;
	_cleanup_engine_diag_ struct diag *diag = test_engine_diag();
	unsigned int st = 0;
	const char *ok = "{\"containerID\":\"blue\",\"ifname\":\"eth0\",\"netns\":\"/run/netns/blue\",\"mtu\":1450}";

	ASSERT_OK(agent_http_body_read(AGENT_HTTP_ADD, ok, strlen(ok), &b, &st, diag), "add body");
	ASSERT_STREQ(b.rq.container_id, "blue", "containerID");
	ASSERT_STREQ(b.rq.ifname, "eth0", "ifname");
	ASSERT_STREQ(b.rq.netns, "/run/netns/blue", "netns");
	cr_assert_eq(b.rq.mtu, 1450u);
	cr_assert_eq(b.rq.deadline_ms, 0);
	agent_http_body_clear(&b);
	agent_http_body_clear(&b); /* cleared twice is fine */

	expect(AGENT_HTTP_CHECK, "{\"containerID\":\"blue\",\"ifname\":\"eth0\",\"netns\":\"/x\"}", 0, 0, "");
	expect(AGENT_HTTP_ADD, "", -FLOWSDN_E_AGENT_REFUSED, 400, "body: line 1");
	expect(AGENT_HTTP_ADD, "[1]", -FLOWSDN_E_AGENT_REFUSED, 400, "not a JSON object");
	expect(AGENT_HTTP_ADD, "{\"containerID\":\"blue\",\"containerID\":\"red\"}", -FLOWSDN_E_AGENT_REFUSED, 400,
	       "body:");
	expect(AGENT_HTTP_ADD, "{\"containerID\":\"-blue\",\"ifname\":\"eth0\",\"netns\":\"/x\"}",
	       -FLOWSDN_E_CNI_CONTAINER_ID, 400, "containerID");
	expect(AGENT_HTTP_ADD, "{\"containerID\":\"blue\",\"ifname\":\"eth0/1\",\"netns\":\"/x\"}",
	       -FLOWSDN_E_CNI_IFNAME, 400, "ifname");
	expect(AGENT_HTTP_CHECK, "{\"containerID\":\"blue\",\"ifname\":\"eth0\",\"netns\":\"x\"}", -FLOWSDN_E_NL_NETNS,
	       400, "netns");
	expect(AGENT_HTTP_ADD, "{\"containerID\":\"blue\",\"ifname\":\"eth0\",\"netns\":\"/x\",\"mtu\":1279}",
	       -FLOWSDN_E_AGENT_REFUSED, 400, "mtu");
	expect(AGENT_HTTP_ADD, "{\"containerID\":\"blue\",\"ifname\":\"eth0\",\"netns\":\"/x\",\"mtu\":\"1500\"}",
	       -FLOWSDN_E_AGENT_REFUSED, 400, "mtu");
}

Test(agent_http_body, del_needs_no_netns)
{
	expect(AGENT_HTTP_DEL, "{\"containerID\":\"blue\",\"ifname\":\"eth0\"}", 0, 0, "");
	expect(AGENT_HTTP_DEL, "{\"containerID\":\"blue\",\"ifname\":\"eth0\",\"netns\":\"\"}", 0, 0, "");
	expect(AGENT_HTTP_DEL, "{\"ifname\":\"eth0\"}", -FLOWSDN_E_CNI_CONTAINER_ID, 400, "containerID");
}

Test(agent_http_body, gc_attachments)
{
	const char *ok = "{\"validAttachments\":[{\"containerID\":\"blue\",\"ifname\":\"eth0\"},"
			 "{\"containerID\":\"red\",\"ifname\":\"net1\"}]}";
	struct agent_http_body b;
	unsigned int st = 0;

	ASSERT_OK(agent_http_body_read(AGENT_HTTP_GC, ok, strlen(ok), &b, &st, NULL), "gc body");
	cr_assert_eq(b.n, 2u);
	ASSERT_STREQ(b.ids[1], "red", "second owner");
	ASSERT_STREQ(b.ifnames[1], "net1", "second ifname");
	cr_assert_null(b.ids[2]);
	agent_http_body_clear(&b);

	expect(AGENT_HTTP_GC, "{\"validAttachments\":[]}", 0, 0, "");
	expect(AGENT_HTTP_GC, "{}", -FLOWSDN_E_AGENT_REFUSED, 400, "validAttachments");
	expect(AGENT_HTTP_GC, "{\"validAttachments\":[{\"containerID\":\"blue\",\"ifname\":\"eth0\"},7]}",
	       -FLOWSDN_E_CNI_CONTAINER_ID, 400, "containerID");
}

/* What the plugin writes (agent_api_owner_body()) reads back the same. */
Test(agent_http_body, owner_body_round_trip)
{
	struct agent_http_body b;
	char *text = NULL;

	ASSERT_OK(agent_api_owner_body("abc.123_x-y", "eth0", "/proc/42/ns/net", 9000, &text), "owner body");
	ASSERT_OK(agent_http_body_read(AGENT_HTTP_ADD, text, strlen(text), &b, NULL, NULL), "read it back");
	ASSERT_STREQ(b.rq.container_id, "abc.123_x-y", "containerID");
	ASSERT_STREQ(b.rq.netns, "/proc/42/ns/net", "netns");
	cr_assert_eq(b.rq.mtu, 9000u);
	agent_http_body_clear(&b);
	free(text);
}

/* serviceTranslation of ADD (contract C3) and the body of PUT
 * /v1/endpoint/{id}/translation. */
Test(agent_http_body, service_translation)
{
	struct agent_http_body b;
	_cleanup_engine_diag_ struct diag *diag = test_engine_diag();
	enum flowsdn_cni_svc_translation svc = (enum flowsdn_cni_svc_translation)9;
	unsigned int st = 0;
	const char *add = "{\"containerID\":\"g\",\"ifname\":\"eth0\",\"netns\":\"/x\",\"serviceTranslation\":\"packet\"}";
	char *text = NULL;

	ASSERT_OK(agent_http_body_read(AGENT_HTTP_ADD, add, strlen(add), &b, &st, diag), "add body");
	cr_assert_eq(b.rq.svc_translation, FLOWSDN_CNI_SVC_PACKET);
	agent_http_body_clear(&b);
	expect(AGENT_HTTP_ADD, "{\"containerID\":\"g\",\"ifname\":\"eth0\",\"netns\":\"/x\",\"serviceTranslation\":\"tc\"}",
	       -FLOWSDN_E_AGENT_REFUSED, 400, "serviceTranslation");
	expect(AGENT_HTTP_ADD, "{\"containerID\":\"g\",\"ifname\":\"eth0\",\"netns\":\"/x\",\"serviceTranslation\":1}",
	       -FLOWSDN_E_AGENT_REFUSED, 400, "serviceTranslation");

	/* What the plugin writes reads back the same. */
	ASSERT_OK(agent_api_add_body("g", "eth0", "/x", 0, FLOWSDN_CNI_SVC_PACKET, &text), "add body");
	cr_assert(strstr(text, "\"serviceTranslation\":\"packet\""), "%s", text);
	ASSERT_OK(agent_http_body_read(AGENT_HTTP_ADD, text, strlen(text), &b, &st, diag), text);
	cr_assert_eq(b.rq.svc_translation, FLOWSDN_CNI_SVC_PACKET);
	agent_http_body_clear(&b);
	free(text);
	ASSERT_OK(agent_api_add_body("g", "eth0", "/x", 0, FLOWSDN_CNI_SVC_SOCKET, &text), "socket body");
	cr_assert(!strstr(text, "serviceTranslation"), "the default is left out: %s", text);
	free(text);
	ASSERT_ERR(agent_api_add_body("g", "eth0", "/x", 0, (enum flowsdn_cni_svc_translation)5, &text), -EINVAL,
		   "no such mode");

	ASSERT_OK(agent_http_translation_read("{\"serviceTranslation\":\"packet\"}", 31, &svc, &st, diag), "packet");
	cr_assert_eq(svc, FLOWSDN_CNI_SVC_PACKET);
	ASSERT_OK(agent_http_translation_read("{\"serviceTranslation\":\"socket\"}", 31, &svc, &st, diag), "socket");
	cr_assert_eq(svc, FLOWSDN_CNI_SVC_SOCKET);
	static const char *const refused[] = { "", "[]", "{}", "{\"serviceTranslation\":\"Packet\"}",
					       "{\"serviceTranslation\":\"packet\",\"x\":1}",
					       "{\"serviceTranslation\":true}" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		_cleanup_engine_diag_ struct diag *d = test_engine_diag();

		svc = (enum flowsdn_cni_svc_translation)9;
		st = 0;
		ASSERT_ERR(agent_http_translation_read(refused[i], strlen(refused[i]), &svc, &st, d),
			   -FLOWSDN_E_AGENT_REFUSED, refused[i]);
		cr_assert_eq(st, 400u, "%s: status %u", refused[i], st);
		cr_assert(agent_diag_message(d)[0], "%s: no message", refused[i]);
		cr_assert_eq((int)svc, 9, "%s: output touched on failure", refused[i]);
	}
}
