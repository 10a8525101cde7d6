/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The request bodies of the agent's POST routes (agent/http.h): the one
 * reader the HTTP layer calls, without a server around it. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/cni.h>
#include <flowsdn/netlink.h>

#include "diag.h"
#include "http.h"
#include "json.h"
#include "util.h"

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

/* Parses a request body that must be a JSON object into *ret_root (NULL
 * on failure): 0, or the refusal (status and diag set). */
static int body_parse(const char *body, size_t len, struct json_value **ret_root, unsigned int *ret_status,
		      struct diag *diag)
{
	struct json_error je = { 0 };
	int err = json_parse(body ? body : "", body ? len : 0, NULL, ret_root, &je);

	if (err == -ENOMEM) {
		agent_diag_set(diag, "out of memory");
		return refuse(ret_status, 500, -ENOMEM);
	}
	if (err < 0) {
		agent_diag_set(diag, "body: line %u column %u: %s", je.line, je.column, je.message);
		return refuse(ret_status, 400, -FLOWSDN_E_AGENT_REFUSED);
	}
	if (!json_is(*ret_root, JSON_OBJECT)) {
		json_free(*ret_root);
		*ret_root = NULL;
		agent_diag_set(diag, "body: not a JSON object");
		return refuse(ret_status, 400, -FLOWSDN_E_AGENT_REFUSED);
	}
	return 0;
}

int agent_http_body_read(enum agent_http_verb verb, const char *body, size_t len, struct agent_http_body *ret,
			 unsigned int *ret_status, struct diag *diag)
{
	struct agent_http_body b = { .root = NULL };
	const struct json_value *list, *mtu_v, *svc_v;
	unsigned int status_dummy;
	uint64_t mtu = 0;
	int err;

	if (!ret_status)
		ret_status = &status_dummy;
	if (!ret || verb > AGENT_HTTP_GC) {
		agent_diag_set(diag, "invalid arguments");
		return refuse(ret_status, 500, -EINVAL);
	}
	err = body_parse(body, len, &b.root, ret_status, diag);
	if (err < 0)
		return err;
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
		svc_v = json_get(b.root, "serviceTranslation");
		if (verb == AGENT_HTTP_ADD && svc_v &&
		    flowsdn_cni_svc_translation_parse(json_string_value(svc_v), &b.rq.svc_translation) < 0) {
			agent_diag_set(diag, "serviceTranslation: must be \"packet\" or \"socket\"");
			err = refuse(ret_status, 400, -FLOWSDN_E_AGENT_REFUSED);
			goto fail;
		}
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

static int read_svc_translation(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	(void)arg;
	if (flowsdn_cni_svc_translation_parse(json_string_value(v), dst) < 0) {
		check_error(ctx, "enum", v, "serviceTranslation: must be \"packet\" or \"socket\"");
		return JSON_READ_REPORTED;
	}
	return 0;
}

static const struct json_field translation_fields[] = {
	{ "serviceTranslation", JSON_STRING, true, read_svc_translation, 0, NULL },
};

int agent_http_translation_read(const char *body, size_t len, enum flowsdn_cni_svc_translation *ret,
				unsigned int *ret_status, struct diag *diag)
{
	enum flowsdn_cni_svc_translation svc = FLOWSDN_CNI_SVC_SOCKET;
	struct json_value *root = NULL;
	struct check_ctx ctx;
	unsigned int status_dummy;
	int err;

	if (!ret_status)
		ret_status = &status_dummy;
	if (!ret) {
		agent_diag_set(diag, "invalid arguments");
		return refuse(ret_status, 500, -EINVAL);
	}
	err = body_parse(body, len, &root, ret_status, diag);
	if (err < 0)
		return err;
	check_ctx_init(&ctx, diag);
	err = json_read_object(&ctx, root, translation_fields, ARRAY_SIZE(translation_fields), &svc);
	json_free(root);
	if (err == -ENOMEM) {
		agent_diag_set(diag, "out of memory");
		return refuse(ret_status, 500, -ENOMEM);
	}
	if (err < 0)
		return refuse(ret_status, 400, -FLOWSDN_E_AGENT_REFUSED);
	*ret = svc;
	return 0;
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
