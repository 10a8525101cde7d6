/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The request bodies of the agent's POST routes (agent/http.h): the one
 * reader the HTTP layer calls, without a server around it. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/cni.h>
#include <flowsdn/netlink.h>

#include "http.h"
#include "json.h"

static int refuse(unsigned int *ret_status, unsigned int status, int err)
{
	*ret_status = status;
	return err;
}

/* The owner of @o: containerID and ifname always, netns when @need_netns. */
static int owner_fields(const struct json_value *o, bool need_netns, const char **cid, const char **ifn,
			const char **netns, unsigned int *ret_status, struct diag *diag)
{
	*cid = json_string_value(json_get(o, "containerID"));
	*ifn = json_string_value(json_get(o, "ifname"));
	*netns = json_string_value(json_get(o, "netns"));
	if (!*cid || !flowsdn_cni_container_id_valid(*cid)) {
		agent_diag_set(diag, "containerID: missing or not ^[A-Za-z0-9][A-Za-z0-9_.-]*$");
		return refuse(ret_status, 400, -FLOWSDN_E_CNI_CONTAINER_ID);
	}
	if (!*ifn || !flowsdn_cni_ifname_valid(*ifn)) {
		agent_diag_set(diag, "ifname: missing or not an interface name");
		return refuse(ret_status, 400, -FLOWSDN_E_CNI_IFNAME);
	}
	if (need_netns && (!*netns || (*netns)[0] != '/' || strlen(*netns) >= 256)) {
		agent_diag_set(diag, "netns: missing or not an absolute path");
		return refuse(ret_status, 400, -FLOWSDN_E_NL_NETNS);
	}
	return 0;
}

int agent_http_body_read(enum agent_http_verb verb, const char *body, size_t len, struct agent_http_body *ret,
			 unsigned int *ret_status, struct diag *diag)
{
	struct agent_http_body b = { .root = NULL };
	struct json_error je = { 0 };
	const struct json_value *list, *mtu_v;
	unsigned int status_dummy;
	uint64_t mtu = 0;
	int err;

	if (!ret_status)
		ret_status = &status_dummy;
	if (!ret || verb > AGENT_HTTP_GC) {
		agent_diag_set(diag, "invalid arguments");
		return refuse(ret_status, 500, -EINVAL);
	}
	err = json_parse(body ? body : "", body ? len : 0, NULL, &b.root, &je);
	if (err == -ENOMEM) {
		agent_diag_set(diag, "out of memory");
		return refuse(ret_status, 500, -ENOMEM);
	}
	if (err < 0) {
		agent_diag_set(diag, "body: line %u column %u: %s", je.line, je.column, je.message);
		return refuse(ret_status, 400, -FLOWSDN_E_AGENT_REFUSED);
	}
	if (!json_is(b.root, JSON_OBJECT)) {
		agent_diag_set(diag, "body: not a JSON object");
		err = refuse(ret_status, 400, -FLOWSDN_E_AGENT_REFUSED);
		goto fail;
	}
	if (verb != AGENT_HTTP_GC) {
		err = owner_fields(b.root, verb != AGENT_HTTP_DEL, &b.rq.container_id, &b.rq.ifname, &b.rq.netns,
				   ret_status, diag);
		if (err < 0)
			goto fail;
		mtu_v = json_get(b.root, "mtu");
		if (verb != AGENT_HTTP_DEL && mtu_v && (json_get_uint64(mtu_v, &mtu) < 0 || mtu < 1280 || mtu > 65535)) {
			agent_diag_set(diag, "mtu: must be an integer in [1280, 65535]");
			err = refuse(ret_status, 400, -FLOWSDN_E_AGENT_REFUSED);
			goto fail;
		}
		b.rq.mtu = (unsigned int)mtu;
		*ret = b;
		return 0;
	}
	list = json_get(b.root, "validAttachments");
	if (!json_is(list, JSON_ARRAY)) {
		agent_diag_set(diag, "validAttachments: must be an array");
		err = refuse(ret_status, 400, -FLOWSDN_E_AGENT_REFUSED);
		goto fail;
	}
	b.n = list->u.array.n;
	b.ids = calloc(b.n + 1, sizeof(*b.ids));
	b.ifnames = calloc(b.n + 1, sizeof(*b.ifnames));
	if (!b.ids || !b.ifnames) {
		agent_diag_set(diag, "out of memory");
		err = refuse(ret_status, 500, -ENOMEM);
		goto fail;
	}
	for (size_t i = 0; i < b.n; i++) {
		const char *netns;

		err = owner_fields(list->u.array.items[i], false, &b.ids[i], &b.ifnames[i], &netns, ret_status, diag);
		if (err < 0)
			goto fail;
	}
	*ret = b;
	return 0;
fail:
	agent_http_body_clear(&b);
	return err;
}

void agent_http_body_clear(struct agent_http_body *b)
{
	if (!b)
		return;
	json_free(b->root);
	free(b->ids);
	free(b->ifnames);
	*b = (struct agent_http_body){ .root = NULL };
}
