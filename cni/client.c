/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plugin's side of the agent API: the CNI verbs' requests over the
 * common transport (common/agent-client.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/common.h>

#include "client.h"
#include "json.h"
#include "util.h"

static int endpoint_call(const struct agent_client_opts *opts, const char *path, const char *container_id,
			 const char *ifname, const char *netns, unsigned int mtu, enum flowsdn_cni_svc_translation svc,
			 struct agent_api_endpoint *ret, struct agent_client_err *err)
{
	_cleanup_free_ char *body = NULL;
	struct json_value *root = NULL;
	struct agent_api_endpoint ep;
	int r;

	if (!container_id || !ifname || !netns || !ret)
		return -EINVAL;
	r = agent_api_add_body(container_id, ifname, netns, mtu, svc, &body);
	if (r < 0)
		return r;
	r = agent_client_call(opts, "POST", path, body, &root, err);
	if (r < 0)
		return r;
	r = agent_api_endpoint_parse(root, &ep);
	json_free(root);
	if (r < 0) {
		agent_client_err_set(err, 200, "endpoint reply lacks fields");
		return -FLOWSDN_E_AGENT_PROTOCOL;
	}
	*ret = ep;
	return 0;
}

int agent_client_add(const struct agent_client_opts *opts, const char *container_id,
					 const char *ifname, const char *netns, unsigned int mtu,
					 enum flowsdn_cni_svc_translation svc, struct agent_api_endpoint *ret,
					 struct agent_client_err *err)
{
	return endpoint_call(opts, "/v1/cni/add", container_id, ifname, netns, mtu, svc, ret, err);
}

int agent_client_check(const struct agent_client_opts *opts, const char *container_id,
					   const char *ifname, const char *netns, struct agent_api_endpoint *ret,
					   struct agent_client_err *err)
{
	return endpoint_call(opts, "/v1/cni/check", container_id, ifname, netns, 0, FLOWSDN_CNI_SVC_SOCKET, ret, err);
}

int agent_client_del(const struct agent_client_opts *opts, const char *container_id,
					 const char *ifname, struct agent_client_err *err)
{
	_cleanup_free_ char *body = NULL;
	struct json_value *root = NULL;
	int r;

	if (!container_id || !ifname)
		return -EINVAL;
	r = agent_api_owner_body(container_id, ifname, NULL, 0, &body);
	if (r < 0)
		return r;
	r = agent_client_call(opts, "POST", "/v1/cni/del", body, &root, err);
	json_free(root);
	return r;
}

int agent_client_gc(const struct agent_client_opts *opts, const char *const *ids,
					const char *const *ifnames, size_t n, unsigned int *ret_removed,
					struct agent_client_err *err)
{
	_cleanup_free_ char *body = NULL;
	struct json_value *root = NULL;
	uint64_t removed;
	struct json_writer *g;
	int r;

	if ((n && (!ids || !ifnames)))
		return -EINVAL;
	g = json_writer_new(0);
	if (!g)
		return -ENOMEM;
	jw_object_open(g);
	jw_string(g, "validAttachments");
	jw_array_open(g);
	for (size_t i = 0; i < n; i++) {
		jw_object_open(g);
		jw_kv_string(g, "containerID", ids[i]);
		jw_kv_string(g, "ifname", ifnames[i]);
		jw_object_close(g);
	}
	jw_array_close(g);
	jw_object_close(g);
	r = json_writer_finish(g, &body, NULL);
	if (r < 0)
		return r;
	r = agent_client_call(opts, "POST", "/v1/cni/gc", body, &root, err);
	if (r < 0)
		return r;
	if (json_get_uint64(json_get(root, "removed"), &removed) < 0 || removed > UINT32_MAX) {
		agent_client_err_set(err, 200, "gc reply lacks \"removed\"");
		r = -FLOWSDN_E_AGENT_PROTOCOL;
	} else if (ret_removed) {
		*ret_removed = (unsigned int)removed;
	}
	json_free(root);
	return r;
}


int agent_client_endpoint_labels(const struct agent_client_opts *opts, uint32_t id, const char *body,
				 struct agent_client_err *err)
{
	struct json_value *root = NULL;
	char path[64];
	int r;

	if (!body || !id)
		return -EINVAL;
	snprintf(path, sizeof(path), "/v1/endpoint/%u/labels", id);
	r = agent_client_call(opts, "PUT", path, body, &root, err);
	json_free(root);
	return r;
}
