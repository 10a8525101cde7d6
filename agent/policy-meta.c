/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An endpoint's policy metadata as JSON (policy.h): the body of PUT
 * /v1/endpoint/{id}/labels, read by the route and by the restore of the
 * policy state, written when that state is saved. */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "agent-api.h"
#include "conf.h"
#include "json.h"
#include "names.h"
#include "policy.h"

static int parse_protocol(const char *s, uint8_t *ret)
{
	if (!strcmp(s, "TCP"))
		*ret = IPPROTO_TCP;
	else if (!strcmp(s, "UDP"))
		*ret = IPPROTO_UDP;
	else if (!strcmp(s, "SCTP"))
		*ret = IPPROTO_SCTP;
	else
		return -EINVAL;
	return 0;
}

static const char *protocol_name(uint8_t p)
{
	return p == IPPROTO_UDP ? "UDP" : p == IPPROTO_SCTP ? "SCTP" : "TCP";
}

void agent_policy_meta_buf_clear(struct agent_policy_meta_buf *b)
{
	if (!b)
		return;
	json_free(b->root);
	memset(b, 0, sizeof(*b));
}

int agent_policy_meta_parse(const char *body, size_t len, struct agent_policy_meta_buf *b, struct diag *diag)
{
	struct json_value *root = NULL;
	struct json_error je = { 0 };
	struct agent_policy_meta *meta = &b->meta;

	memset(b, 0, sizeof(*b));
	meta->labels = b->labels;
	meta->ports = b->ports;
	if (json_parse(body, len, NULL, &root, &je) < 0) {
		agent_diag_set(diag, "body: %s (line %u, column %u)", je.message, je.line, je.column);
		return -FLOWSDN_E_AGENT_REFUSED;
	}
	b->root = root;
	if (!json_is(root, JSON_OBJECT)) {
		agent_diag_set(diag, "body: must be an object");
		goto fail;
	}
	for (size_t i = 0; i < root->u.object.n; i++) {
		const struct json_member *m = &root->u.object.members[i];
		const struct json_value *v = m->value;

		if (!strcmp(m->key, "namespace") || !strcmp(m->key, "name")) {
			bool is_ns = !strcmp(m->key, "namespace");
			const char *s;

			if (json_get_string(v, &s) < 0 || !(is_ns ? names_dns_label_valid(s) : names_dns_subdomain_valid(s))) {
				agent_diag_set(diag, "%s: must be a %s", m->key,
					       is_ns ? "DNS label (RFC 1123)" : "DNS subdomain (RFC 1123)");
				goto fail;
			}
			if (is_ns)
				meta->namespace_name = s;
			else
				meta->pod_name = s;
		} else if (!strcmp(m->key, "labels")) {
			if (!json_is(v, JSON_OBJECT) || v->u.object.n > AGENT_POLICY_MAX_LABELS) {
				agent_diag_set(diag, "labels: must be an object of at most %d string values",
					       AGENT_POLICY_MAX_LABELS);
				goto fail;
			}
			for (size_t j = 0; j < v->u.object.n; j++) {
				const char *s;

				if (json_get_string(v->u.object.members[j].value, &s) < 0 ||
				    !names_label_key_valid(v->u.object.members[j].key) || !names_label_value_valid(s)) {
					agent_diag_set(diag, "labels.%s: not a valid Kubernetes label",
						       v->u.object.members[j].key);
					goto fail;
				}
				b->labels[j] = (struct flowsdn_policy_label){ v->u.object.members[j].key, s };
			}
			meta->n_labels = v->u.object.n;
		} else if (!strcmp(m->key, "namedPorts")) {
			if (!json_is(v, JSON_ARRAY) || v->u.array.n > AGENT_POLICY_MAX_PORTS) {
				agent_diag_set(diag, "namedPorts: must be an array of at most %d ports", AGENT_POLICY_MAX_PORTS);
				goto fail;
			}
			for (size_t j = 0; j < v->u.array.n; j++) {
				const struct json_value *o = v->u.array.items[j];
				const struct json_value *pn = json_is(o, JSON_OBJECT) ? json_get(o, "name") : NULL;
				const struct json_value *pp = pn ? json_get(o, "port") : NULL;
				const struct json_value *pr = pn ? json_get(o, "protocol") : NULL;
				const char *name = NULL, *proto = "TCP";
				uint64_t port = 0;

				if (!pn || json_get_string(pn, &name) < 0 || !names_port_name_valid(name) || !pp ||
				    json_get_uint64(pp, &port) < 0 || port < 1 || port > 65535 ||
				    (pr && json_get_string(pr, &proto) < 0) ||
				    parse_protocol(proto, &b->ports[j].protocol) < 0 || o->u.object.n != 2u + (pr != NULL)) {
					agent_diag_set(diag, "namedPorts[%zu]: must be {\"name\": IANA_SVC_NAME, \"protocol\": "
							     "\"TCP\"|\"UDP\"|\"SCTP\", \"port\": 1-65535}", j);
					goto fail;
				}
				b->ports[j].name = name;
				b->ports[j].port = (uint16_t)port;
			}
			meta->n_ports = v->u.array.n;
		} else {
			agent_diag_set(diag, "%s: unknown field", m->key);
			goto fail;
		}
	}
	return 0;
fail:
	agent_policy_meta_buf_clear(b);
	return -FLOWSDN_E_AGENT_REFUSED;
}

int agent_policy_meta_format(const struct agent_policy_meta *m, char **ret_json)
{
	struct json_writer *w;

	if (!m || !ret_json)
		return -EINVAL;
	w = json_writer_new(0);
	jw_object_open(w);
	if (m->namespace_name)
		jw_kv_string(w, "namespace", m->namespace_name);
	if (m->pod_name)
		jw_kv_string(w, "name", m->pod_name);
	jw_key(w, "labels");
	jw_object_open(w);
	for (size_t i = 0; i < m->n_labels; i++)
		jw_kv_string(w, m->labels[i].key, m->labels[i].value);
	jw_object_close(w);
	jw_key(w, "namedPorts");
	jw_array_open(w);
	for (size_t i = 0; i < m->n_ports; i++) {
		jw_object_open(w);
		jw_kv_string(w, "name", m->ports[i].name);
		jw_kv_string(w, "protocol", protocol_name(m->ports[i].protocol));
		jw_kv_uint(w, "port", m->ports[i].port);
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret_json, NULL);
}
