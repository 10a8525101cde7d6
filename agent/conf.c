/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flowsdn-agent configuration: defaults, strict JSON parsing, output. */
#include "config.h"

#include <stdio.h>
#include <flowsdn/common.h>

#include "agent-api.h"
#include "conf.h"
#include "jsonutil.h"
#include "util.h"

void agent_diag_set(struct agent_diag *diag, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	va_start(ap, fmt);
	vsnprintf(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
}

static int set_str(char **dst, const char *s)
{
	char *c = strdup(s);

	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

void agent_config_free(struct agent_config *c)
{
	if (!c)
		return;
	free(c->socket);
	free(c->state_dir);
	free(c->pin_dir);
	free(c->http_listen);
	free(c);
}

int agent_config_new(struct agent_config **ret)
{
	struct agent_config *c;
	int err = 0;

	if (!ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	err = set_str(&c->socket, AGENT_API_SOCKET);
	if (!err)
		err = set_str(&c->state_dir, AGENT_API_STATE_DIR);
	if (!err)
		err = set_str(&c->pin_dir, "/sys/fs/bpf/flowsdn");
	if (!err)
		err = set_str(&c->http_listen, "");
	if (err) {
		agent_config_free(c);
		return err;
	}
	if (flowsdn_prefix_parse("10.244.0.0/16", 13, NULL, &c->pools[0]) < 0 ||
	    flowsdn_prefix_parse("fd00:10:244::/112", 17, NULL, &c->pools[1]) < 0) {
		agent_config_free(c);
		return -EINVAL;
	}
	c->n_pools = 2;
	c->datapath = true;
	c->egress_stack = false;
	/* tc clsact by default: creating a TCX link costs 10-15 ms per hook
	 * (the kernel waits for an RCU grace period), a tc filter 0.1 ms, and
	 * both outlive the agent; "attach-mode": "tcx" or "auto" choose TCX. */
	c->attach_mode = 2;
	c->mtu = 1500;
	c->max_connections = 64;
	c->reserved_connections = 8;
	c->header_timeout_ms = 2000;
	c->max_request_bytes = 65536;
	c->request_timeout_s = 10;
	*ret = c;
	return 0;
}

int agent_config_load(const char *path, struct agent_diag *diag,
					  struct agent_config **ret)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int err;

	if (!path || !ret)
		return -EINVAL;
	err = util_read_file(path, 1 << 20, &data, &len);
	if (err < 0) {
		agent_diag_set(diag, "%s: %s", path, util_read_strerror(err));
		return err;
	}
	return agent_config_parse(data, len, diag, ret);
}

static int path_key(const struct json_value *v, const char *key, char **dst, bool may_be_empty,
		    struct agent_diag *diag)
{
	const char *s = jstr(v);

	if (!s || (!may_be_empty && s[0] != '/') || strlen(s) >= 108) {
		agent_diag_set(diag, "%s: must be %s (at most 107 bytes)", key,
			 may_be_empty ? "a string" : "an absolute path");
		return -FLOWSDN_E_AGENT_CONFIG;
	}
	return set_str(dst, s);
}

static int uint_key(const struct json_value *v, const char *key, uint64_t min, uint64_t max, unsigned int *dst,
		    struct agent_diag *diag)
{
	uint64_t u;

	if (json_get_uint64(v, &u) < 0 || u < min || u > max) {
		agent_diag_set(diag, "%s: must be an integer in [%llu, %llu]", key, (unsigned long long)min,
			 (unsigned long long)max);
		return -FLOWSDN_E_AGENT_CONFIG;
	}
	*dst = (unsigned int)u;
	return 0;
}

/* Checks "ADDR:PORT" / "[ADDR6]:PORT" on a loopback address. */
int agent_config_parse_listen(const char *text, struct flowsdn_addr *ret_addr, uint16_t *ret_port)
{
	const char *colon, *host;
	size_t host_len;
	struct flowsdn_addr a;
	char *end;
	unsigned long port;

	if (!text || !text[0])
		return -EINVAL;
	if (text[0] == '[') {
		const char *rb = strchr(text, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		host = text + 1;
		host_len = (size_t)(rb - host);
		colon = rb + 1;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return -EINVAL;
		host = text;
		host_len = (size_t)(colon - text);
	}
	if (flowsdn_addr_parse(host, host_len, &a) < 0)
		return -EINVAL;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || colon[1] < '1' || colon[1] > '9' || port > 65535)
		return -EINVAL;
	if (!(flowsdn_addr_classify(&a) & FLOWSDN_ADDR_LOOPBACK))
		return -EPERM;
	*ret_addr = a;
	*ret_port = (uint16_t)port;
	return 0;
}

int agent_config_parse(const char *json, size_t len, struct agent_diag *diag,
					   struct agent_config **ret)
{
	struct agent_config *c = NULL;
	struct json_value *root = NULL;
	struct json_error je = { 0 };
	int err;

	if (!json || !ret)
		return -EINVAL;
	err = json_parse(json, len, NULL, &root, &je);
	if (err == -EBADMSG) {
		agent_diag_set(diag, "line %u column %u: %s", je.line, je.column, je.message);
		return -FLOWSDN_E_AGENT_CONFIG;
	}
	if (err < 0)
		return err;
	err = agent_config_new(&c);
	if (err < 0)
		goto out;
	if (!jis(root, JSON_OBJECT)) {
		agent_diag_set(diag, "configuration: not a JSON object");
		err = -FLOWSDN_E_AGENT_CONFIG;
		goto out;
	}
	for (size_t i = 0; i < root->u.object.n && err == 0; i++) {
		const char *k = root->u.object.members[i].key;
		const struct json_value *v = root->u.object.members[i].value;

		if (!strcmp(k, "socket")) {
			err = path_key(v, k, &c->socket, false, diag);
		} else if (!strcmp(k, "state-dir")) {
			err = path_key(v, k, &c->state_dir, false, diag);
		} else if (!strcmp(k, "bpf-pin-dir")) {
			err = path_key(v, k, &c->pin_dir, false, diag);
		} else if (!strcmp(k, "http-listen")) {
			struct flowsdn_addr a;
			uint16_t port;

			err = path_key(v, k, &c->http_listen, true, diag);
			if (!err && c->http_listen[0]) {
				err = agent_config_parse_listen(c->http_listen, &a, &port);
				if (err == -EPERM) {
					agent_diag_set(diag, "http-listen: \"%s\" is not a loopback address", c->http_listen);
					err = -FLOWSDN_E_AGENT_CONFIG;
				} else if (err < 0) {
					agent_diag_set(diag, "http-listen: \"%s\" is not ADDRESS:PORT", c->http_listen);
					err = -FLOWSDN_E_AGENT_CONFIG;
				}
			}
		} else if (!strcmp(k, "pools")) {
			if (!jis(v, JSON_ARRAY) || v->u.array.n == 0 || v->u.array.n > AGENT_MAX_POOLS) {
				agent_diag_set(diag, "pools: must be an array of 1 to %d prefixes", AGENT_MAX_POOLS);
				err = -FLOWSDN_E_AGENT_CONFIG;
				break;
			}
			for (size_t p = 0; p < v->u.array.n; p++) {
				const char *s = jstr(v->u.array.items[p]);

				if (!s || flowsdn_prefix_parse(s, strlen(s), NULL, &c->pools[p]) < 0) {
					agent_diag_set(diag, "pools[%zu]: not a prefix with host bits clear", p);
					err = -FLOWSDN_E_AGENT_CONFIG;
					break;
				}
			}
			c->n_pools = v->u.array.n;
		} else if (!strcmp(k, "datapath")) {
			if (json_get_bool(v, &c->datapath) < 0) {
				agent_diag_set(diag, "datapath: must be a boolean");
				err = -FLOWSDN_E_AGENT_CONFIG;
			}
		} else if (!strcmp(k, "egress-mode")) {
			const char *s = jstr(v);

			if (s && !strcmp(s, "fib"))
				c->egress_stack = false;
			else if (s && !strcmp(s, "stack"))
				c->egress_stack = true;
			else {
				agent_diag_set(diag, "egress-mode: must be \"fib\" or \"stack\"");
				err = -FLOWSDN_E_AGENT_CONFIG;
			}
		} else if (!strcmp(k, "attach-mode")) {
			const char *s = jstr(v);

			if (s && !strcmp(s, "auto"))
				c->attach_mode = 0;
			else if (s && !strcmp(s, "tcx"))
				c->attach_mode = 1;
			else if (s && !strcmp(s, "tc"))
				c->attach_mode = 2;
			else {
				agent_diag_set(diag, "attach-mode: must be \"auto\", \"tcx\" or \"tc\"");
				err = -FLOWSDN_E_AGENT_CONFIG;
			}
		} else if (!strcmp(k, "mtu")) {
			err = uint_key(v, k, 1280, 65535, &c->mtu, diag);
		} else if (!strcmp(k, "max-connections")) {
			err = uint_key(v, k, 2, 1024, &c->max_connections, diag);
		} else if (!strcmp(k, "reserved-connections")) {
			err = uint_key(v, k, 1, 512, &c->reserved_connections, diag);
		} else if (!strcmp(k, "header-timeout-ms")) {
			err = uint_key(v, k, 10, 60000, &c->header_timeout_ms, diag);
		} else if (!strcmp(k, "max-request-bytes")) {
			err = uint_key(v, k, 1024, 1 << 20, &c->max_request_bytes, diag);
		} else if (!strcmp(k, "request-timeout-seconds")) {
			err = uint_key(v, k, 1, 600, &c->request_timeout_s, diag);
		} else {
			agent_diag_set(diag, "%s: unknown key", k);
			err = -FLOWSDN_E_AGENT_CONFIG;
		}
	}
	/* Without the key: an eighth of the connections, at least one. */
	if (err == 0 && !json_get(root, "reserved-connections"))
		c->reserved_connections = c->max_connections / 8 ? c->max_connections / 8 : 1;
	if (err == 0 && c->reserved_connections >= c->max_connections) {
		agent_diag_set(diag, "reserved-connections: must be less than max-connections (%u)", c->max_connections);
		err = -FLOWSDN_E_AGENT_CONFIG;
	}
out:
	json_free(root);
	if (err < 0)
		agent_config_free(c);
	else
		*ret = c;
	return err;
}

int agent_config_format(const struct agent_config *c, char **ret_json)
{
	static const char *const attach[] = { "auto", "tcx", "tc" };
	yajl_gen g;
	int err;

	if (!c || !ret_json)
		return -EINVAL;
	g = jgen_new();
	if (!g)
		return -ENOMEM;
	yajl_gen_config(g, yajl_gen_beautify, 1);
	yajl_gen_map_open(g);
	jgen_kv(g, "socket", c->socket);
	jgen_kv(g, "state-dir", c->state_dir);
	jgen_kv(g, "bpf-pin-dir", c->pin_dir);
	jgen_kv(g, "http-listen", c->http_listen);
	jgen_str(g, "pools");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < c->n_pools; i++) {
		char buf[FLOWSDN_PREFIX_STRLEN];

		if (flowsdn_prefix_format(&c->pools[i], buf, sizeof(buf)) >= 0)
			jgen_str(g, buf);
	}
	yajl_gen_array_close(g);
	jgen_str(g, "datapath");
	yajl_gen_bool(g, c->datapath);
	jgen_kv(g, "egress-mode", c->egress_stack ? "stack" : "fib");
	jgen_kv(g, "attach-mode", attach[c->attach_mode % 3]);
	jgen_ki(g, "mtu", c->mtu);
	jgen_ki(g, "max-connections", c->max_connections);
	jgen_ki(g, "reserved-connections", c->reserved_connections);
	jgen_ki(g, "header-timeout-ms", c->header_timeout_ms);
	jgen_ki(g, "max-request-bytes", c->max_request_bytes);
	jgen_ki(g, "request-timeout-seconds", c->request_timeout_s);
	yajl_gen_map_close(g);
	err = jgen_take(g, ret_json, NULL);
	yajl_gen_free(g);
	return err;
}

/* Copies @src into a new configuration. */
int agent_config_dup(const struct agent_config *src, struct agent_config **ret)
{
	struct agent_config *c;
	int err;

	err = agent_config_new(&c);
	if (err < 0)
		return err;
	err = set_str(&c->socket, src->socket);
	if (!err)
		err = set_str(&c->state_dir, src->state_dir);
	if (!err)
		err = set_str(&c->pin_dir, src->pin_dir);
	if (!err)
		err = set_str(&c->http_listen, src->http_listen);
	if (err) {
		agent_config_free(c);
		return err;
	}
	memcpy(c->pools, src->pools, sizeof(c->pools));
	c->n_pools = src->n_pools;
	c->datapath = src->datapath;
	c->egress_stack = src->egress_stack;
	c->attach_mode = src->attach_mode;
	c->mtu = src->mtu;
	c->max_connections = src->max_connections;
	c->reserved_connections = src->reserved_connections;
	c->header_timeout_ms = src->header_timeout_ms;
	c->max_request_bytes = src->max_request_bytes;
	c->request_timeout_s = src->request_timeout_s;
	*ret = c;
	return 0;
}
