/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy routes of the agent's API (flowsdn-agent(8)):
 *   GET    /v1/policy                    every stored NetworkPolicy
 *   GET    /v1/policy/verdicts           per endpoint, per rule counters
 *   POST   /v1/policy/lookup             the verdict of a packet and its deciding rule
 *   GET|PUT|DELETE /v1/policy/{ns}/{name}
 *   GET    /v1/namespace
 *   PUT|DELETE /v1/namespace/{name}      {"labels": {...}}
 *   GET    /v1/identity
 *   PUT    /v1/endpoint/{id}/labels      {"namespace", "name", "labels", "namedPorts"}
 *   GET|PUT /v1/hostfw                   the host firewall's mode ({"mode"}) and counters
 *   GET    /v1/hostfw/verdicts           and its per-rule counters
 * They call the core (agent_core_policy(), agent_core_endpoint_labels()).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-api.h"
#include "conf.h"
#include "core.h"
#include "diag.h"
#include "http.h"
#include "json.h"
#include "names.h"
#include "policy.h"

static unsigned int policy_status(int err)
{
	switch (-err) {
	case FLOWSDN_E_POLICY_INVALID:
	case FLOWSDN_E_POLICY_JSON:
	case FLOWSDN_E_AGENT_REFUSED:
	case EINVAL:
		return 400;
	case FLOWSDN_E_POLICY_NOT_FOUND:
	case FLOWSDN_E_AGENT_NOT_FOUND:
		return 404;
	case FLOWSDN_E_POLICY_CAPACITY:
	case FLOWSDN_E_POLICY_ADDR_IN_USE:
		return 409;
	case FLOWSDN_E_POLICY_IDENTITIES:
	case FLOWSDN_E_IDENTITY_EXHAUSTED:
		return 503;
	default:
		return 500;
	}
}

static void error_reply(int err, const struct diag *diag, unsigned int *status, char **body)
{
	struct json_writer *g = json_writer_new(0);
	const char *msg = agent_diag_message(diag);

	agent_api_error_gen(g, err, msg[0] ? msg : agent_api_strerror(err));
	*status = policy_status(err);
	if (json_writer_finish(g, body, NULL) < 0)
		*status = 500;
}

/* "{ns}/{name}" into its two parts (each a DNS subdomain/label). */
static bool split_ns_name(const char *rest, char *ns, size_t ns_size, char *name, size_t name_size)
{
	const char *slash = strchr(rest, '/');
	size_t n;

	if (!slash || strchr(slash + 1, '/'))
		return false;
	n = (size_t)(slash - rest);
	if (n == 0 || n >= ns_size || strlen(slash + 1) >= name_size)
		return false;
	memcpy(ns, rest, n);
	ns[n] = '\0';
	strcpy(name, slash + 1);
	return names_dns_label_valid(ns) && names_dns_subdomain_valid(name);
}

/* PUT /v1/endpoint/{id}/labels. */
static int endpoint_labels(struct agent_core *core, uint32_t id, const char *body, size_t len, struct diag *diag)
{
	struct agent_policy_meta_buf b;
	int err = agent_policy_meta_parse(body, len, &b, diag);

	if (err == 0)
		err = agent_core_endpoint_labels(core, id, &b.meta, diag);
	agent_policy_meta_buf_clear(&b);
	return err;
}

/* POST /v1/policy/lookup {"endpoint", "direction", "peer", "protocol", "port"}. */
static int policy_lookup(struct agent_policy *pol, const char *body, size_t len, char **out, struct diag *diag)
{
	static const char usage[] = "body: must be {\"endpoint\": ID, \"direction\": \"ingress\"|\"egress\", "
				    "\"peer\": ADDRESS, \"protocol\": \"TCP\"|\"UDP\"|\"SCTP\"|\"ICMP\"|\"ICMPv6\"|0-255, "
				    "\"port\": 0-65535}";
	static const struct {
		const char *name;
		uint8_t proto;
	} protos[] = { { "TCP", 6 }, { "UDP", 17 }, { "SCTP", 132 }, { "ICMP", 1 }, { "ICMPv6", 58 } };
	struct json_value *root = NULL;
	const struct json_value *pr;
	const char *dir, *peer;
	uint64_t id = 0, port = 0, num = 256;
	struct flowsdn_addr addr;
	uint8_t proto = 0;
	bool known = false;
	int err = -FLOWSDN_E_AGENT_REFUSED;

	if (json_parse(body, len, NULL, &root, NULL) < 0 || !json_is(root, JSON_OBJECT) || root->u.object.n != 5 ||
	    json_get_uint64(json_get(root, "endpoint"), &id) < 0 || id == 0 || id > UINT32_MAX ||
	    !(dir = json_string_value(json_get(root, "direction"))) || (strcmp(dir, "ingress") && strcmp(dir, "egress")) ||
	    !(peer = json_string_value(json_get(root, "peer"))) || !(pr = json_get(root, "protocol")) ||
	    json_get_uint64(json_get(root, "port"), &port) < 0 || port > 65535) {
		agent_diag_set(diag, "%s", usage);
		goto out;
	}
	if (flowsdn_addr_parse(peer, strlen(peer), &addr) < 0) {
		agent_diag_set(diag, "peer: not an IPv4 or IPv6 address");
		goto out;
	}
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (json_string_value(pr) && !strcmp(json_string_value(pr), protos[i].name)) {
			proto = protos[i].proto;
			known = true;
		}
	if (!known && (json_get_uint64(pr, &num) < 0 || num > 255)) {
		agent_diag_set(diag, "%s", usage);
		goto out;
	}
	if (!known)
		proto = (uint8_t)num;
	err = agent_policy_lookup(pol, (uint32_t)id, strcmp(dir, "ingress") ? FLOWSDN_POLICY_EGRESS : FLOWSDN_POLICY_INGRESS,
				  &addr, proto, (uint16_t)port, out, diag);
out:
	json_free(root);
	return err;
}

bool agent_http_policy_route(struct agent_core *core, const char *method, const char *url, const char *body,
			     size_t len, unsigned int *ret_status, char **ret_body)
{
	struct agent_policy *pol = agent_core_policy(core);
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), put = !strcmp(method, "PUT"),
	     del = !strcmp(method, "DELETE");
	struct diag *diag = NULL;
	char ns[64], name[254];
	char *out = NULL;
	int err = -FLOWSDN_E_AGENT_REFUSED;
	unsigned long id = 0;
	bool ok_method;

	if (!strcmp(url, "/v1/policy") || !strcmp(url, "/v1/policy/verdicts") || !strcmp(url, "/v1/namespace") ||
	    !strcmp(url, "/v1/identity"))
		ok_method = get;
	else if (!strcmp(url, "/v1/policy/lookup"))
		ok_method = !strcmp(method, "POST");
	else if (!strcmp(url, "/v1/hostfw"))
		ok_method = get || put;
	else if (!strcmp(url, "/v1/hostfw/verdicts"))
		ok_method = get;
	else if (!strncmp(url, "/v1/policy/", 11) || !strncmp(url, "/v1/namespace/", 14))
		ok_method = get || put || del;
	else if (!strncmp(url, "/v1/endpoint/", 13) && strstr(url + 13, "/labels") &&
		 !strcmp(strstr(url + 13, "/labels"), "/labels"))
		ok_method = put;
	else
		return false;
	diag_new(&diag);
	if (!ok_method) {
		agent_diag_set(diag, "%s is not allowed on %.128s", method, url);
		error_reply(-FLOWSDN_E_AGENT_REFUSED, diag, ret_status, ret_body);
		*ret_status = 405;
		goto out;
	}
	if ((put || !strcmp(method, "POST")) && (!body || !len)) {
		agent_diag_set(diag, body ? "%s needs a body" : "%s: request body larger than max-request-bytes", url);
		error_reply(-FLOWSDN_E_AGENT_REFUSED, diag, ret_status, ret_body);
		*ret_status = body ? 400 : 413;
		goto out;
	}
	if (!strcmp(url, "/v1/policy")) {
		err = agent_policy_get(pol, NULL, NULL, &out);
	} else if (!strcmp(url, "/v1/policy/verdicts")) {
		err = agent_policy_verdicts(pol, &out);
	} else if (!strcmp(url, "/v1/policy/lookup")) {
		err = policy_lookup(pol, body, len, &out, diag);
	} else if (!strcmp(url, "/v1/hostfw") || !strcmp(url, "/v1/hostfw/verdicts")) {
		unsigned int mode;

		if (put) {
			err = agent_policy_hostfw_body_parse(body, len, &mode, diag);
			if (err == 0)
				err = agent_policy_hostfw_set_mode(pol, mode, diag);
		} else {
			err = 0;
		}
		if (err == 0)
			err = agent_policy_hostfw(pol, url[10] == '/', &out);
	} else if (!strcmp(url, "/v1/namespace")) {
		err = agent_policy_namespaces(pol, &out);
	} else if (!strcmp(url, "/v1/identity")) {
		err = agent_policy_identities(pol, &out);
	} else if (!strncmp(url, "/v1/policy/", 11)) {
		if (!split_ns_name(url + 11, ns, sizeof(ns), name, sizeof(name))) {
			agent_diag_set(diag, "%.128s: not /v1/policy/NAMESPACE/NAME", url);
			goto fail;
		}
		if (get) {
			err = agent_policy_get(pol, ns, name, &out);
			if (err < 0)
				agent_diag_set(diag, "networkpolicies.networking.k8s.io \"%s\" not found", name);
		} else {
			err = put ? agent_policy_put(pol, ns, name, body, len, diag) : agent_policy_delete(pol, ns, name, diag);
			if (err == 0 && put)
				err = agent_policy_get(pol, ns, name, &out);
		}
	} else if (!strncmp(url, "/v1/namespace/", 14)) {
		if (!names_dns_label_valid(url + 14)) {
			agent_diag_set(diag, "%.128s: a namespace name is a DNS label (RFC 1123)", url);
			goto fail;
		}
		if (get) {
			agent_diag_set(diag, "GET /v1/namespace lists them all");
			goto fail;
		}
		err = put ? agent_policy_namespace_put(pol, url + 14, body, len, diag)
			  : agent_policy_namespace_delete(pol, url + 14, diag);
	} else {
		char *end;

		id = strtoul(url + 13, &end, 10);
		if (end == url + 13 || strcmp(end, "/labels") || id == 0 || id > UINT32_MAX) {
			agent_diag_set(diag, "%.128s: not /v1/endpoint/ID/labels", url);
			goto fail;
		}
		err = endpoint_labels(core, (uint32_t)id, body, len, diag);
	}
	if (err < 0)
		goto fail;
	if (!out) {
		struct json_writer *g = json_writer_new(0);

		jw_object_open(g);
		jw_kv_bool(g, "ok", true);
		jw_object_close(g);
		if (json_writer_finish(g, &out, NULL) < 0)
			out = NULL;
	}
	*ret_status = out ? 200 : 500;
	*ret_body = out;
	goto out;
fail:
	error_reply(err, diag, ret_status, ret_body);
out:
	diag_free(diag);
	return true;
}
