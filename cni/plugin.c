/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flowsdn-cni: the verbs of the primary veth plugin and of the loopback
 * plugin, on top of libflowsdn's CNI codec and the agent client. */
#include "config.h"

#include <stdio.h>
#include <sys/stat.h>
#include <flowsdn/cni.h>
#include <flowsdn/datapath.h>
#include <flowsdn/ipam.h>
#include <flowsdn/netlink.h>

#include "agent-api.h"
#include "client.h"
#include "json.h"
#include "plugin.h"
#include "queue.h"
#include "util.h"

#define DEFAULT_QUEUE_DIR AGENT_API_STATE_DIR "/" AGENT_API_QUEUE_SUBDIR

/* What one invocation produces. */
struct outcome {
	int status;  /* exit status */
	char *out;   /* stdout */
};

static void fail(struct outcome *o, const char *version, unsigned int code, const char *msg, const char *details)
{
	o->status = 1;
	free(o->out);
	o->out = NULL;
	if (flowsdn_cni_error_format(version, code ? code : FLOWSDN_CNI_CODE_INTERNAL, msg, details, &o->out) < 0)
		o->out = NULL;
}

unsigned int cni_plugin_code(int err)
{
	switch (err < 0 ? -err : err) {
	case FLOWSDN_E_CNI_VERSION_UNKNOWN:
		/* As the reference plugins answer a version they do not know. */
		return FLOWSDN_CNI_CODE_INCOMPATIBLE_VERSION;
	case FLOWSDN_E_AGENT_HOST_NETNS:
		return FLOWSDN_CNI_CODE_INVALID_ENV;
	case FLOWSDN_E_AGENT_UNREACHABLE:
	case FLOWSDN_E_AGENT_TIMEOUT:
	case FLOWSDN_E_AGENT_DEADLINE:
	case FLOWSDN_E_IPAM_EXHAUSTED:
	case FLOWSDN_E_IPAM_NO_POOL:
		return FLOWSDN_CNI_CODE_TRY_AGAIN;
	case FLOWSDN_E_AGENT_NOT_FOUND:
	case FLOWSDN_E_NL_NETNS:
		return FLOWSDN_CNI_CODE_UNKNOWN_CONTAINER;
	case FLOWSDN_E_AGENT_EXISTS:
	case FLOWSDN_E_NL_EXISTS:
	case FLOWSDN_E_NL_MISMATCH:
	case FLOWSDN_E_BPF_ATTACH:
	case FLOWSDN_E_BPF_IFACE_MISMATCH:
		return CNI_PLUGIN_CODE_CONFLICT;
	case FLOWSDN_E_AGENT_REFUSED:
	case FLOWSDN_E_AGENT_CONFIG:
	case EINVAL:
		return FLOWSDN_CNI_CODE_INVALID_CONFIG;
	case FLOWSDN_E_AGENT_PROTOCOL:
		return FLOWSDN_CNI_CODE_INTERNAL;
	default:
		return flowsdn_cni_code(err);
	}
}

/* A parse failure: the CNI error with the diag's first problem as its
 * details. */
static void fail_diag(struct outcome *o, const char *version, int err, const struct flowsdn_diag *diag)
{
	char details[512] = "";
	const struct flowsdn_diag_entry *e = flowsdn_diag_first_error(diag);

	if (e && flowsdn_diag_entry_format(e, details, sizeof(details)) < 0)
		details[0] = '\0';
	fail(o, version, cni_plugin_code(err), flowsdn_strerror(err), details);
}

static void fail_err(struct outcome *o, const char *version, int err, const char *details)
{
	fail(o, version, cni_plugin_code(err), agent_api_strerror(err), details);
}

static void fail_agent(struct outcome *o, const char *version, const char *what, int err,
		       const struct agent_client_err *rerr)
{
	char msg[192];

	snprintf(msg, sizeof(msg), "%s: %s", what, agent_api_strerror(err));
	fail(o, version, cni_plugin_code(err), msg, rerr->message);
}

static void emit_result(struct outcome *o, const struct flowsdn_cni_result *r, const char *version)
{
	int err = flowsdn_cni_result_format(r, version, &o->out, NULL);

	if (err < 0)
		fail_err(o, version, err, "formatting the result");
	else
		o->status = 0;
}

/* Copies the DNS settings of the configuration into @r. */
static int copy_dns(struct flowsdn_cni_result *r, const struct flowsdn_cni_conf *conf)
{
	const struct flowsdn_cni_result *dns = flowsdn_cni_conf_dns(conf);
	int err = 0;

	for (size_t i = 0; dns && i < flowsdn_cni_result_nameserver_count(dns) && err == 0; i++)
		err = flowsdn_cni_result_add_nameserver(r, flowsdn_cni_result_nameserver(dns, i));
	return err;
}

/* The result of the primary plugin for one endpoint: the host veth, the
 * container interface, its addresses with the gateway, default routes. */
static int endpoint_result(const struct agent_api_endpoint *ep, const struct flowsdn_cni_conf *conf,
			   struct flowsdn_cni_result **ret)
{
	struct flowsdn_cni_result *r = NULL;
	struct flowsdn_cni_iface host = { .mtu = ep->mtu }, cont = { .mtu = ep->mtu };
	int err, idx;

	err = flowsdn_cni_result_new(&r);
	if (err < 0)
		return err;
	memcpy(host.name, ep->host_ifname, sizeof(host.name));
	snprintf(host.mac, sizeof(host.mac), "%02x:%02x:%02x:%02x:%02x:%02x", ep->host_mac[0], ep->host_mac[1],
		 ep->host_mac[2], ep->host_mac[3], ep->host_mac[4], ep->host_mac[5]);
	memcpy(cont.name, ep->ifname, sizeof(cont.name));
	snprintf(cont.mac, sizeof(cont.mac), "%02x:%02x:%02x:%02x:%02x:%02x", ep->mac[0], ep->mac[1], ep->mac[2],
		 ep->mac[3], ep->mac[4], ep->mac[5]);
	snprintf(cont.sandbox, sizeof(cont.sandbox), "%s", ep->netns);
	err = flowsdn_cni_result_add_iface(r, &host);
	if (err >= 0)
		err = idx = flowsdn_cni_result_add_iface(r, &cont);
	for (size_t i = 0; err >= 0 && i < ep->n_addrs; i++) {
		struct flowsdn_cni_ip ip = {
			.addr = ep->addrs[i], .prefix_len = ep->prefix_len[i], .has_gateway = true,
			.gateway = ep->gateway[i], .iface = idx,
		};
		struct flowsdn_cni_route rt = { .has_gw = true, .gw = ep->gateway[i] };

		err = flowsdn_cni_result_add_ip(r, &ip);
		rt.dst.addr.family = ep->addrs[i].family;
		rt.dst.len = 0;
		if (err >= 0)
			err = flowsdn_cni_result_add_route(r, &rt);
	}
	if (err >= 0)
		err = copy_dns(r, conf);
	if (err < 0) {
		flowsdn_cni_result_free(r);
		return err;
	}
	*ret = r;
	return 0;
}

struct plugin_ctx {
	const struct flowsdn_cni_conf *conf;
	const struct flowsdn_cni_env *env;
	const char *version;
	struct agent_client_opts client;
	const char *queue_dir;
	bool queue_dir_configured; /* named by the network configuration */
	const char *input;         /* the network configuration as given */
	size_t input_len;
	const struct flowsdn_cni_args *args;
};

/*
 * The endpoint's place in the policy model (contracts C3), for PUT
 * /v1/endpoint/{id}/labels: runtimeConfig.flowsdn's "namespace",
 * "labels" and "namedPorts" (a runtime passes them with the capability
 * "flowsdn"), else CNI_ARGS K8S_POD_NAMESPACE; the pod name from
 * K8S_POD_NAME (as kubelet and podman send them).  *ret NULL when no
 * namespace is given (the endpoint stays outside policy).  The agent
 * checks the values.
 */
static int labels_body(const struct plugin_ctx *c, char **ret)
{
	struct json_value *root = NULL;
	const struct json_value *rc = NULL, *ns = NULL, *labels = NULL, *ports = NULL, *t;
	const char *kns = flowsdn_cni_args_get(c->args, "K8S_POD_NAMESPACE");
	const char *kname = flowsdn_cni_args_get(c->args, "K8S_POD_NAME");
	struct json_writer *w;
	int r = 0;

	*ret = NULL;
	if (c->input && json_parse(c->input, c->input_len, NULL, &root, NULL) == 0 &&
	    (t = json_get(root, "runtimeConfig")) && json_is(t, JSON_OBJECT) && (rc = json_get(t, "flowsdn")) &&
	    json_is(rc, JSON_OBJECT)) {
		ns = json_get(rc, "namespace");
		labels = json_get(rc, "labels");
		ports = json_get(rc, "namedPorts");
	}
	/* Without a namespace the endpoint is outside policy anyway. */
	if (!ns && !kns)
		goto out;
	w = json_writer_new(0);
	jw_object_open(w);
	if (ns) {
		jw_key(w, "namespace");
		jw_value(w, ns);
	} else if (kns) {
		jw_kv_string(w, "namespace", kns);
	}
	if (kname)
		jw_kv_string(w, "name", kname);
	if (labels) {
		jw_key(w, "labels");
		jw_value(w, labels);
	}
	if (ports) {
		jw_key(w, "namedPorts");
		jw_value(w, ports);
	}
	jw_object_close(w);
	r = json_writer_finish(w, ret, NULL);
out:
	json_free(root);
	return r;
}

static bool netns_exists(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0;
}

static void primary_add(struct plugin_ctx *c, struct outcome *o)
{
	struct agent_client_err rerr = { 0 };
	struct agent_api_endpoint ep;
	struct flowsdn_cni_result *r = NULL;
	unsigned long mtu = 0;
	char details[320];
	int err;

	err = flowsdn_cni_conf_get_uint(c->conf, "mtu", 1280, 65535, &mtu);
	if (err < 0 && err != -ENOENT) {
		fail(o, c->version, FLOWSDN_CNI_CODE_INVALID_CONFIG, "invalid network configuration",
		     "mtu: must be an integer in [1280, 65535]");
		return;
	}
	if (!netns_exists(c->env->netns)) {
		snprintf(details, sizeof(details), "CNI_NETNS %s: %s", c->env->netns, strerror(errno));
		fail(o, c->version, FLOWSDN_CNI_CODE_UNKNOWN_CONTAINER, "network namespace does not exist", details);
		return;
	}
	err = agent_client_add(&c->client, c->env->container_id, c->env->ifname, c->env->netns,
				       (unsigned int)mtu, flowsdn_cni_conf_svc_translation(c->conf), &ep, &rerr);
	if (err < 0) {
		fail_agent(o, c->version, "ADD", err, &rerr);
		return;
	}
	{
		_cleanup_free_ char *labels = NULL;

		err = labels_body(c, &labels);
		if (err == 0 && labels)
			err = agent_client_endpoint_labels(&c->client, ep.id, labels, &rerr);
		if (err < 0) {
			struct agent_client_err derr = { 0 };

			/* An endpoint outside the policy it was meant for would
			 * allow everything: no endpoint at all. */
			(void)agent_client_del(&c->client, c->env->container_id, c->env->ifname, &derr);
			fail_agent(o, c->version, "ADD (namespace and labels)", err, &rerr);
			return;
		}
	}
	err = endpoint_result(&ep, c->conf, &r);
	if (err < 0) {
		struct agent_client_err derr = { 0 };

		/* Leave nothing behind on a failed ADD. */
		fail_err(o, c->version, err,
			 agent_client_del(&c->client, c->env->container_id, c->env->ifname, &derr) < 0 ?
			 "building the result (and undoing the ADD failed)" : "building the result");
		return;
	}
	emit_result(o, r, c->version);
	flowsdn_cni_result_free(r);
}

/* Every address of the endpoint must be in prevResult. */
static int prev_matches(const struct flowsdn_cni_result *prev, const struct agent_api_endpoint *ep, char *msg,
			size_t size)
{
	for (size_t i = 0; i < ep->n_addrs; i++) {
		bool found = false;

		for (size_t k = 0; k < flowsdn_cni_result_ip_count(prev) && !found; k++)
			found = flowsdn_addr_equal(&flowsdn_cni_result_ip(prev, k)->addr, &ep->addrs[i]);
		if (!found) {
			char a[FLOWSDN_ADDR_STRLEN];

			flowsdn_addr_format(&ep->addrs[i], a, sizeof(a));
			snprintf(msg, size, "address %s of the endpoint is not in prevResult", a);
			return -1;
		}
	}
	return 0;
}

static void primary_check(struct plugin_ctx *c, struct outcome *o)
{
	const struct flowsdn_cni_result *prev = flowsdn_cni_conf_prev_result(c->conf);
	struct agent_client_err rerr = { 0 };
	struct agent_api_endpoint ep;
	char msg[256];
	int err;

	if (!prev) {
		fail(o, c->version, FLOWSDN_CNI_CODE_INVALID_CONFIG, "invalid network configuration",
		     "CHECK needs prevResult");
		return;
	}
	if (!netns_exists(c->env->netns)) {
		fail(o, c->version, FLOWSDN_CNI_CODE_UNKNOWN_CONTAINER, "network namespace does not exist",
		     c->env->netns);
		return;
	}
	err = agent_client_check(&c->client, c->env->container_id, c->env->ifname, c->env->netns, &ep, &rerr);
	if (err < 0) {
		fail_agent(o, c->version, "CHECK", err, &rerr);
		return;
	}
	if (prev_matches(prev, &ep, msg, sizeof(msg)) < 0) {
		fail(o, c->version, CNI_PLUGIN_CODE_CONFLICT, "endpoint differs from prevResult", msg);
		return;
	}
	o->status = 0;
}

/* True when @netns is the plugin's own network namespace or the initial
 * one: never a container's (the endpoint's interface cannot be there). */
static bool netns_is_the_nodes(const char *netns)
{
	static const char *const nodes[] = { "/proc/self/ns/net", "/proc/1/ns/net" };
	struct stat st, node;

	/* stat() opens nothing: a FIFO cannot block it.  A namespace is its
	 * nsfs inode. */
	if (stat(netns, &st) < 0)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++)
		if (stat(nodes[i], &node) == 0 && node.st_dev == st.st_dev && node.st_ino == st.st_ino)
			return true;
	return false;
}

/*
 * With the agent down, the endpoint goes at once from the container's
 * side: deleting CNI_IFNAME inside CNI_NETNS removes the veth pair,
 * whichever netns the plugin runs in (the host side lives in the agent's,
 * which need not be ours).  Nothing is deleted in the node's own netns,
 * nor anything but a veth.  Without a netns (gone, or empty) there is
 * nothing to do: a pair dies with its namespace.  Best effort: the queued
 * DEL does the rest when the agent is back.
 */
static void delete_container_side(const struct plugin_ctx *c)
{
	if (!c->env->netns || !c->env->netns[0] || netns_is_the_nodes(c->env->netns))
		return;
	(void)flowsdn_netlink_veth_delete(c->env->netns, c->env->ifname, NULL);
}

static void primary_del(struct plugin_ctx *c, struct outcome *o)
{
	struct agent_client_err rerr = { 0 };
	int err;

	err = agent_client_del(&c->client, c->env->container_id, c->env->ifname, &rerr);
	if (err == -FLOWSDN_E_AGENT_UNREACHABLE || err == -FLOWSDN_E_AGENT_TIMEOUT) {
		char why[384];

		/* The agent replays the queue when it is back; the interface
		 * goes now so that the container's name is free again. */
		err = cni_queue_delete(c->queue_dir, c->queue_dir_configured, c->env->container_id, c->env->ifname,
				       why, sizeof(why));
		if (err < 0) {
			fail(o, c->version, FLOWSDN_CNI_CODE_IO, "flowsdn-agent is down and the DEL cannot be queued",
			     why);
			return;
		}
		delete_container_side(c);
		o->status = 0;
		return;
	}
	if (err < 0) {
		fail_agent(o, c->version, "DEL", err, &rerr);
		return;
	}
	o->status = 0;
}

static void primary_status(struct plugin_ctx *c, struct outcome *o)
{
	struct agent_client_err rerr = { 0 };
	int err = agent_client_health(&c->client, &rerr);

	if (err == -FLOWSDN_E_AGENT_UNREACHABLE)
		fail(o, c->version, FLOWSDN_CNI_CODE_NOT_AVAILABLE, "flowsdn-agent is not running", rerr.message);
	else if (err < 0)
		fail(o, c->version, FLOWSDN_CNI_CODE_NOT_AVAILABLE_DAMAGED, "flowsdn-agent is not healthy",
		     rerr.message[0] ? rerr.message : flowsdn_strerror(err));
	else
		o->status = 0;
}

static void primary_gc(struct plugin_ctx *c, struct outcome *o)
{
	size_t n = flowsdn_cni_conf_attachment_count(c->conf);
	const char **ids = calloc(n + 1, sizeof(*ids)), **ifns = calloc(n + 1, sizeof(*ifns));
	struct agent_client_err rerr = { 0 };
	int err = 0;

	if (!ids || !ifns) {
		fail_err(o, c->version, -ENOMEM, NULL);
		goto out;
	}
	if (!flowsdn_cni_conf_has_attachments(c->conf)) {
		fail(o, c->version, FLOWSDN_CNI_CODE_INVALID_CONFIG, "invalid network configuration",
		     "GC needs cni.dev/valid-attachments");
		goto out;
	}
	for (size_t i = 0; i < n && err == 0; i++)
		err = flowsdn_cni_conf_attachment(c->conf, i, &ids[i], &ifns[i]);
	if (err == 0)
		err = agent_client_gc(&c->client, ids, ifns, n, NULL, &rerr);
	if (err < 0)
		fail_agent(o, c->version, "GC", err, &rerr);
	else
		o->status = 0;
out:
	free(ids);
	free(ifns);
}

/* The loopback plugin: lo up in the netns (ADD), down (DEL; a netns that
 * is gone is fine), up (CHECK). */
static void loopback(struct plugin_ctx *c, struct outcome *o)
{
	const struct flowsdn_cni_result *prev = flowsdn_cni_conf_prev_result(c->conf);
	struct flowsdn_diag *nerr = NULL;
	enum flowsdn_cni_command cmd = c->env->command;
	int err, ifindex;

	if (cmd == FLOWSDN_CNI_CMD_STATUS || cmd == FLOWSDN_CNI_CMD_GC) {
		o->status = 0;
		return;
	}
	if (cmd == FLOWSDN_CNI_CMD_DEL) {
		/* Best effort: the netns may be going away. */
		if (netns_exists(c->env->netns))
			err = flowsdn_netlink_link_set_up(c->env->netns, "lo", false, NULL);
		o->status = 0;
		return;
	}
	if (!netns_exists(c->env->netns)) {
		fail(o, c->version, FLOWSDN_CNI_CODE_UNKNOWN_CONTAINER, "network namespace does not exist",
		     c->env->netns);
		return;
	}
	if (cmd == FLOWSDN_CNI_CMD_CHECK) {
		err = flowsdn_netlink_link_get(c->env->netns, "lo", &ifindex, NULL);
		if (err < 0)
			fail_err(o, c->version, err, "lo");
		else
			o->status = 0;
		return;
	}
	err = flowsdn_diag_new(&nerr);
	if (err == 0)
		err = flowsdn_netlink_link_set_up(c->env->netns, "lo", true, nerr);
	if (err < 0) {
		const struct flowsdn_diag_entry *e = flowsdn_diag_first_error(nerr);

		fail_err(o, c->version, err, e ? e->message : "lo");
		flowsdn_diag_free(nerr);
		return;
	}
	flowsdn_diag_free(nerr);
	if (prev) {
		emit_result(o, prev, c->version);
	} else {
		struct flowsdn_cni_result *r = NULL;
		struct flowsdn_cni_iface lo = { .name = "lo", .mac = "00:00:00:00:00:00" };
		struct flowsdn_cni_ip v4 = { .prefix_len = 8, .iface = 0 }, v6 = { .prefix_len = 128, .iface = 0 };

		snprintf(lo.sandbox, sizeof(lo.sandbox), "%s", c->env->netns);
		err = flowsdn_cni_result_new(&r);
		if (err == 0 && flowsdn_addr_parse("127.0.0.1", 9, &v4.addr) == 0 &&
		    flowsdn_addr_parse("::1", 3, &v6.addr) == 0 && flowsdn_cni_result_add_iface(r, &lo) == 0 &&
		    flowsdn_cni_result_add_ip(r, &v4) == 0 && flowsdn_cni_result_add_ip(r, &v6) == 0)
			emit_result(o, r, c->version);
		else
			fail_err(o, c->version, err < 0 ? err : -ENOMEM, NULL);
		flowsdn_cni_result_free(r);
	}
}

/* The cniVersion a configuration asks for, also when the configuration is
 * otherwise invalid (errors answer in it when it is one we speak); NULL
 * when there is none.  Freed by the caller. */
static char *requested_version(const char *input, size_t len)
{
	struct json_value *root = NULL;
	char *v = NULL;

	if (input && len && json_parse(input, len, NULL, &root, NULL) == 0 && json_string_value(json_get(root, "cniVersion")))
		v = strdup(json_string_value(json_get(root, "cniVersion")));
	json_free(root);
	return v;
}

/* VERSION: the input's cniVersion when readable (the input holds only
 * {"cniVersion": ...}), else the latest. */
static void version_verb(const char *input, size_t len, struct outcome *o)
{
	struct json_value *root = NULL;
	const char *v = NULL;

	if (input && len && json_parse(input, len, NULL, &root, NULL) == 0)
		v = json_string_value(json_get(root, "cniVersion"));
	if (flowsdn_cni_version_format(v, &o->out) < 0)
		o->out = NULL;
	o->status = o->out ? 0 : 1;
	json_free(root);
}

int cni_plugin_run(const char *input, size_t len, const char *(*getenv_fn)(const char *name, void *userdata),
		   void *userdata, const struct cni_plugin_opts *opts, char **ret_out, int *ret_status)
{
	static const char *const known_args[] = { "K8S_POD_NAME", "K8S_POD_NAMESPACE", "K8S_POD_INFRA_CONTAINER_ID",
						  "K8S_POD_UID", NULL };
	struct flowsdn_diag *diag = NULL;
	struct flowsdn_cni_conf *conf = NULL;
	struct flowsdn_cni_args *args = NULL;
	struct flowsdn_cni_env env;
	struct outcome o = { .status = 1 };
	struct plugin_ctx c = { 0 };
	unsigned long timeout = 0;
	int err;

	if (!getenv_fn || !ret_out || !ret_status)
		return -EINVAL;
	err = flowsdn_diag_new(&diag);
	if (err < 0)
		return err;
	err = flowsdn_cni_env_read(getenv_fn, userdata, &env, diag);
	if (err < 0) {
		/* Answer in the configuration's version when it has one. */
		char *v = requested_version(input, len);

		fail_diag(&o, v, err, diag);
		free(v);
		goto out;
	}
	if (env.command == FLOWSDN_CNI_CMD_VERSION) {
		version_verb(input, len, &o);
		goto out;
	}
	err = input ? flowsdn_cni_conf_parse(input, len, &conf, diag) : -FLOWSDN_E_CNI_DECODE;
	if (err < 0) {
		char *v = requested_version(input, len);

		fail_diag(&o, v, err, diag);
		free(v);
		goto out;
	}
	c.conf = conf;
	c.env = &env;
	c.input = input;
	c.input_len = len;
	c.version = flowsdn_cni_conf_version(conf);
	err = flowsdn_cni_args_parse(env.args, known_args, &args, diag);
	if (err < 0) {
		fail_diag(&o, c.version, err, diag);
		goto out;
	}
	c.args = args;
	c.client.socket = opts ? opts->socket : NULL;
	c.queue_dir = opts ? opts->queue_dir : NULL;
	c.client.timeout_ms = opts ? opts->timeout_ms : 0u;
	if (!c.queue_dir)
		c.queue_dir = DEFAULT_QUEUE_DIR;
	err = flowsdn_cni_conf_get_string(conf, "agentSocket", &c.client.socket);
	if (err == 0 || err == -ENOENT) {
		const char *trusted = c.queue_dir;

		err = flowsdn_cni_conf_get_string(conf, "queueDir", &c.queue_dir);
		/* Naming the default (the agent's) again is no configuration. */
		c.queue_dir_configured = err == 0 && strcmp(c.queue_dir, trusted) != 0;
	}
	if (err == 0 || err == -ENOENT)
		err = flowsdn_cni_conf_get_uint(conf, "timeoutMs", 1, 600000, &timeout);
	if (err == 0)
		c.client.timeout_ms = (unsigned int)timeout;
	if (err < 0 && err != -ENOENT) {
		fail(&o, c.version, FLOWSDN_CNI_CODE_INVALID_CONFIG, "invalid network configuration",
		     "agentSocket/queueDir must be non-empty strings, timeoutMs an integer in [1, 600000]");
		goto out;
	}
	if ((c.client.socket && c.client.socket[0] != '/') || c.queue_dir[0] != '/') {
		fail(&o, c.version, FLOWSDN_CNI_CODE_INVALID_CONFIG, "invalid network configuration",
		     "agentSocket and queueDir must be absolute paths");
		goto out;
	}
	if (!strcmp(flowsdn_cni_conf_type(conf), "loopback")) {
		loopback(&c, &o);
		goto out;
	}
	switch (env.command) {
	case FLOWSDN_CNI_CMD_ADD:
		primary_add(&c, &o);
		break;
	case FLOWSDN_CNI_CMD_CHECK:
		primary_check(&c, &o);
		break;
	case FLOWSDN_CNI_CMD_DEL:
		primary_del(&c, &o);
		break;
	case FLOWSDN_CNI_CMD_STATUS:
		primary_status(&c, &o);
		break;
	case FLOWSDN_CNI_CMD_GC:
		primary_gc(&c, &o);
		break;
	default:
		fail(&o, c.version, FLOWSDN_CNI_CODE_INVALID_ENV, "invalid CNI_COMMAND", NULL);
		break;
	}
out:
	flowsdn_cni_args_free(args);
	flowsdn_cni_conf_free(conf);
	flowsdn_diag_free(diag);
	if (!o.out) {
		o.out = strdup("");
		if (!o.out)
			return -ENOMEM;
	}
	*ret_out = o.out;
	*ret_status = o.status;
	return 0;
}
