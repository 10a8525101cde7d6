/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The network half of the single-node runtime (runtime-net.h): isolation
 * lowered by libflash and PUT to the agent's /v1/policy, ports published
 * through /v1/service, the replicas' CNI identity.
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <time.h>
#include <unistd.h>
#include <flash/sandbox.h>
#include <flowsdn/addr.h>
#include <flowsdn/cni.h>
#include <flowsdn/diag.h>
#include <flowsdn/policy.h>

#include "agent-client.h"
#include "names.h"
#include "runtime-internal.h"
#include "runtime-net.h"
#include "util.h"

#define NET_MAX_ADDRS 32
#define NET_MAX_PORTS OP_NET_RECORD_PORTS_MAX
#define CLUSTER_IP_TRIES 16
#define VERIFY_MS_DEFAULT 5000

struct net_svc {
	char id[OP_SERVICE_ID_STRLEN];
	char ns[21];
	char cluster_ip[INET6_ADDRSTRLEN];
	char applied_digest[FLASH_SPEC_DIGEST_HEX_SIZE]; /* policies PUT by this process for this spec */
	size_t n_ports;
	char port_ids[NET_MAX_PORTS][OP_SERVICE_ID_STRLEN];
	char *bodies[NET_MAX_PORTS]; /* last body PUT for port_ids[i] (this process) */
	struct net_svc *next;
};

struct op_net {
	char *dir;
	struct agent_client_opts agent;
	char *agent_socket;
	struct flash_operator_config *own_config;
	const struct flash_operator_config *config;
	const struct flash_policy *policy;
	struct flowsdn_prefix node[NET_MAX_ADDRS], dns[NET_MAX_ADDRS];
	size_t n_node, n_dns;
	struct net_svc *svcs;
	bool masquerade_on;
	unsigned int verify_ms;
	uint64_t verified_ms; /* CLOCK_MONOTONIC of the last resync listing */
	uint64_t resyncs;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---------------------------------------------------------------- names */

static void hash_hex(const char *text, size_t bytes, char *out)
{
	unsigned char h[16];

	crypto_generichash(h, bytes, (const unsigned char *)text, strlen(text), NULL, 0);
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

void op_net_namespace(const char *org, char buf[21])
{
	char hex[17];

	hash_hex(org ? org : "", 8, hex);
	snprintf(buf, 21, "org-%s", hex);
}

void op_net_port_service_id(const char *svc_id, const char *protocol, const char *name, char *buf)
{
	char key[256], hex[33];

	snprintf(key, sizeof(key), "flash-port/%s/%s/%s", svc_id, protocol, name);
	hash_hex(key, 16, hex);
	snprintf(buf, OP_SERVICE_ID_STRLEN, NAMES_SERVICE_ID_PREFIX "%s", hex);
}

/* ---------------------------------------------------------------- records */

static char *record_path(struct op_net *n, const char *id)
{
	char *p = NULL;

	return asprintf(&p, "%s/net/%s.json", n->dir, id) < 0 ? NULL : p;
}

int op_net_record_format(const struct op_net_record *r, char **ret_text, size_t *ret_len)
{
	struct json_writer *w = json_writer_new(0);

	if (!w)
		return -ENOMEM;
	jw_object_open(w);
	jw_kv_string(w, "id", r->id);
	jw_kv_string(w, "namespace", r->ns);
	jw_kv_string(w, "clusterIP", r->cluster_ip);
	jw_key(w, "services");
	jw_array_open(w);
	for (size_t i = 0; i < r->n_ports; i++)
		jw_string(w, r->port_ids[i]);
	jw_array_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret_text, ret_len);
}

int op_net_record_parse(const char *text, size_t len, struct op_net_record *ret)
{
	struct op_net_record r = { 0 };
	struct json_value *root = NULL;
	const struct json_value *ids;
	const char *ns, *ip;
	int err = json_parse(text, len, NULL, &root, NULL);

	if (err < 0)
		return err == -ENOMEM ? err : -EBADMSG;
	ids = json_get(root, "services");
	err = -EBADMSG;
	if (!names_service_id_valid(json_string_value(json_get(root, "id"))) || !json_is(ids, JSON_ARRAY) ||
	    ids->u.array.n > OP_NET_RECORD_PORTS_MAX)
		goto out;
	ns = json_string_value(json_get(root, "namespace"));
	ip = json_string_value(json_get(root, "clusterIP"));
	if (util_strcpy_fit(r.id, sizeof(r.id), json_string_value(json_get(root, "id"))) < 0 ||
	    (ns && util_strcpy_fit(r.ns, sizeof(r.ns), ns) < 0) ||
	    (ip && util_strcpy_fit(r.cluster_ip, sizeof(r.cluster_ip), ip) < 0))
		goto out;
	for (size_t i = 0; i < ids->u.array.n; i++) {
		const char *s = json_string_value(ids->u.array.items[i]);

		if (!names_service_id_valid(s) || util_strcpy_fit(r.port_ids[r.n_ports++], OP_SERVICE_ID_STRLEN, s) < 0)
			goto out;
	}
	*ret = r;
	err = 0;
out:
	json_free(root);
	return err;
}

static int record_save(struct op_net *n, const struct net_svc *v)
{
	struct op_net_record rec = { .n_ports = v->n_ports };
	char *text = NULL, *path = record_path(n, v->id);
	size_t len = 0;
	int r;

	snprintf(rec.id, sizeof(rec.id), "%s", v->id);
	snprintf(rec.ns, sizeof(rec.ns), "%s", v->ns);
	snprintf(rec.cluster_ip, sizeof(rec.cluster_ip), "%s", v->cluster_ip);
	memcpy(rec.port_ids, v->port_ids, v->n_ports * sizeof(v->port_ids[0]));
	r = op_net_record_format(&rec, &text, &len);
	if (r == 0)
		r = path ? util_write_file_atomic(path, text, len, 0600) : -ENOMEM;
	free(text);
	free(path);
	return r;
}

static void svc_free(struct net_svc *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < NET_MAX_PORTS; i++)
		free(v->bodies[i]);
	free(v);
}

/* A record read back: anything malformed is ignored (and left for the
 * next delete to overwrite). */
static void record_load(struct op_net *n, const char *name)
{
	char *path = NULL, *text = NULL;
	struct op_net_record rec;
	struct net_svc *v = NULL;
	size_t len = 0;

	if (asprintf(&path, "%s/net/%s", n->dir, name) < 0)
		return;
	if (util_read_file(path, 1 << 16, &text, &len) < 0 || op_net_record_parse(text, len, &rec) < 0)
		goto out;
	v = calloc(1, sizeof(*v));
	if (!v)
		goto out;
	snprintf(v->id, sizeof(v->id), "%s", rec.id);
	snprintf(v->ns, sizeof(v->ns), "%s", rec.ns);
	snprintf(v->cluster_ip, sizeof(v->cluster_ip), "%s", rec.cluster_ip);
	v->n_ports = rec.n_ports;
	memcpy(v->port_ids, rec.port_ids, rec.n_ports * sizeof(rec.port_ids[0]));
	v->next = n->svcs;
	n->svcs = v;
out:
	free(text);
	free(path);
}

/* ---------------------------------------------------------------- facts */

/* The host prefix (/32, /128) of the address @text. */
static int host_prefix(const char *text, struct flowsdn_prefix *ret)
{
	struct flowsdn_addr a;

	if (flowsdn_addr_parse(text, strlen(text), &a) < 0)
		return -EINVAL;
	return flowsdn_prefix_make(&a, flowsdn_addr_bits(&a), ret);
}

static void node_addresses(struct op_net *n)
{
	struct ifaddrs *ifa = NULL;

	if (getifaddrs(&ifa) < 0)
		return;
	for (struct ifaddrs *i = ifa; i && n->n_node < NET_MAX_ADDRS; i = i->ifa_next) {
		char buf[INET6_ADDRSTRLEN];
		struct flowsdn_prefix p;
		const void *a;

		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		a = i->ifa_addr->sa_family == AF_INET ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
						      : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		if (!inet_ntop(i->ifa_addr->sa_family, a, buf, sizeof(buf)) || host_prefix(buf, &p) < 0)
			continue;
		/* Link-local addresses are protected as a range already;
		 * loopback ones never leave the node (a node address may sit on
		 * lo, so the interface does not decide). */
		if (flowsdn_addr_classify(&p.addr) & (FLOWSDN_ADDR_LINK_LOCAL | FLOWSDN_ADDR_LOOPBACK))
			continue;
		n->node[n->n_node++] = p;
	}
	freeifaddrs(ifa);
}

/* The "nameserver ADDR" lines of @text. */
static void dns_servers(struct op_net *n, const char *text)
{
	for (const char *l = text; l && *l && n->n_dns < NET_MAX_ADDRS;) {
		const char *e = strchrnul(l, '\n');
		char addr[INET6_ADDRSTRLEN + 1];
		struct flowsdn_prefix p;

		if (sscanf(l, "nameserver %46s", addr) == 1 && host_prefix(addr, &p) == 0)
			n->dns[n->n_dns++] = p;
		l = *e ? e + 1 : e;
	}
}

int op_net_new(const struct op_net_opts *opts, struct op_net **ret, char *err, size_t err_size)
{
	struct op_net *n;
	char *d = NULL;
	DIR *dir;
	int r;

	if (!opts || !opts->dir || !ret)
		return -EINVAL;
	if (sodium_init() < 0)
		return -ENOMEM;
	n = calloc(1, sizeof(*n));
	if (!n || !(n->dir = strdup(opts->dir)) ||
	    (opts->agent_socket && !(n->agent_socket = strdup(opts->agent_socket)))) {
		op_net_free(n);
		return -ENOMEM;
	}
	n->agent = (struct agent_client_opts){ .socket = n->agent_socket, .timeout_ms = 10000 };
	n->policy = opts->policy;
	n->config = opts->config;
	n->verify_ms = opts->verify_ms ? opts->verify_ms : VERIFY_MS_DEFAULT;
	n->verified_ms = mono_ms();
	if (!n->config) {
		r = flash_operator_config_default(&n->own_config);
		if (r < 0) {
			op_net_free(n);
			return r;
		}
		n->config = n->own_config;
	}
	node_addresses(n);
	dns_servers(n, opts->resolv_conf);
	if (asprintf(&d, "%s/net", n->dir) < 0) {
		op_net_free(n);
		return -ENOMEM;
	}
	r = util_mkdir_p(d, 0700);
	if (r < 0) {
		snprintf(err, err_size, "%s: %s", d, strerror(-r));
		free(d);
		op_net_free(n);
		return r;
	}
	dir = opendir(d);
	free(d);
	for (struct dirent *e; dir && (e = readdir(dir));)
		if (strlen(e->d_name) > 5 && strcmp(e->d_name + strlen(e->d_name) - 5, ".json") == 0)
			record_load(n, e->d_name);
	if (dir)
		closedir(dir);
	*ret = n;
	return 0;
}

void op_net_free(struct op_net *n)
{
	if (!n)
		return;
	while (n->svcs) {
		struct net_svc *v = n->svcs;

		n->svcs = v->next;
		svc_free(v);
	}
	flash_operator_config_free(n->own_config);
	free(n->agent_socket);
	free(n->dir);
	free(n);
}

static struct net_svc *svc_find(struct op_net *n, const char *id)
{
	for (struct net_svc *v = n->svcs; v; v = v->next)
		if (strcmp(v->id, id) == 0)
			return v;
	return NULL;
}

/* ---------------------------------------------------------------- agent calls */

static int call(struct op_net *n, const char *method, const char *path, const char *body, char *err, size_t err_size)
{
	struct agent_client_err ae = { 0 };
	struct json_value *root = NULL;
	int r = agent_client_call(&n->agent, method, path, body, &root, &ae);

	json_free(root);
	if ((r == -FLOWSDN_E_AGENT_NOT_FOUND || r == -FLOWSDN_E_POLICY_NOT_FOUND) && strcmp(method, "DELETE") == 0)
		return 0; /* already gone (a policy's DELETE says so in its own code) */
	if (r < 0)
		snprintf(err, err_size, "flowsdn-agent %s %s: %s", method, path,
			 ae.message[0] ? ae.message : flowsdn_strerror(r));
	return r;
}

/* ---------------------------------------------------------------- resync */

/* @list (an array of objects) has one whose string at @key (a path of
 * one or two keys) is @value, and, with @ns, whose metadata.namespace is
 * @ns or absent. */
static bool listed(const struct json_value *list, const char *key1, const char *key2, const char *value,
		   const char *ns)
{
	for (size_t i = 0; i < list->u.array.n; i++) {
		const struct json_value *o = list->u.array.items[i], *at = json_get(o, key1);
		const char *got, *got_ns;

		if (key2)
			at = json_get(at, key2);
		got = json_string_value(at);
		if (!got || strcmp(got, value) != 0)
			continue;
		got_ns = ns ? json_string_value(json_get(json_get(o, "metadata"), "namespace")) : NULL;
		if (!got_ns || strcmp(got_ns, ns) == 0)
			return true;
	}
	return false;
}

/* Every verify_ms: what this process PUT and the agent no longer lists
 * is forgotten, so the calls that follow PUT it again.  The agent
 * unreachable or answering oddly: nothing is forgotten (the PUTs that
 * follow report it). */
static void verify(struct op_net *n)
{
	struct json_value *svcs = NULL, *pols = NULL;
	const struct json_value *sl, *pl;
	struct agent_client_err ae = { 0 };
	uint64_t now = mono_ms();

	if (now - n->verified_ms < n->verify_ms)
		return;
	n->verified_ms = now;
	if (!n->svcs || agent_client_call(&n->agent, "GET", "/v1/service", NULL, &svcs, &ae) < 0 ||
	    agent_client_call(&n->agent, "GET", "/v1/policy", NULL, &pols, &ae) < 0)
		goto out;
	sl = json_get(svcs, "services");
	pl = json_get(pols, "items");
	if (!json_is(sl, JSON_ARRAY) || !json_is(pl, JSON_ARRAY))
		goto out;
	for (struct net_svc *v = n->svcs; v; v = v->next) {
		if (v->applied_digest[0]) {
			static const char *const suffix[] = { "", "-deny", "-exception", "-protect" };
			bool all = true;

			for (size_t i = 0; i < 4 && all; i++) {
				char name[OP_SERVICE_ID_STRLEN + 16];

				snprintf(name, sizeof(name), "%s%s", v->id, suffix[i]);
				all = listed(pl, "metadata", "name", name, v->ns);
			}
			if (!all) {
				v->applied_digest[0] = '\0'; /* namespace and policies PUT again */
				n->resyncs++;
			}
		}
		for (size_t k = 0; k < v->n_ports; k++)
			if (v->bodies[k] && !listed(sl, "id", NULL, v->port_ids[k], NULL)) {
				free(v->bodies[k]); /* PUT again */
				v->bodies[k] = NULL;
				n->resyncs++;
			}
	}
out:
	json_free(svcs);
	json_free(pols);
}

uint64_t op_runtime_net_resyncs(const struct op_net *n)
{
	return n ? n->resyncs : 0;
}

/* ---------------------------------------------------------------- isolation */

/* The namespace @ns (with @org's label) and the four tiered policies of
 * @spec named @name (a service's, a sandbox's). */
static int put_policies(struct op_net *n, const char *name, const char *ns, const char *org, const char *project,
			const struct flash_spec *spec, char *err, size_t err_size)
{
	FLASH_OPTS(flash_isolation_opts, o, .name = name, .namespace_ = ns, .organization_id = org,
		   .project_id = project, .policy = n->policy, .node_addresses = n->node,
		   .n_node_addresses = n->n_node, .dns_addresses = n->dns, .n_dns_addresses = n->n_dns);
	struct flash_diag *diag = NULL;
	struct flash_render *rd = NULL;
	char path[192], *body = NULL;
	int r;

	if (flash_diag_new(&diag) < 0)
		return -ENOMEM;
	r = flash_render_isolation(spec, n->config, &o, &rd, diag);
	if (r < 0) {
		const struct flash_diag_entry *e = flash_diag_first_error(diag);
		char what[512] = "";

		if (e)
			flash_diag_entry_format(e, what, sizeof(what));
		snprintf(err, err_size, "isolation: %s%s%s", flash_strerror(r), e ? ": " : "", what);
		goto out;
	}
	/* The namespace first: the same-organization grant selects by it. */
	{
		struct json_writer *w = json_writer_new(0);

		jw_object_open(w);
		jw_key(w, "labels");
		jw_object_open(w);
		if (names_label_value_valid(org))
			jw_kv_string(w, "flash.heterocloud.io/organization", org);
		jw_object_close(w);
		jw_object_close(w);
		r = json_writer_finish(w, &body, NULL);
		if (r < 0)
			goto out;
		snprintf(path, sizeof(path), "/v1/namespace/%s", ns);
		r = call(n, "PUT", path, body, err, err_size);
		free(body);
		body = NULL;
		if (r < 0)
			goto out;
	}
	/* protect, exception, deny, then allow: the isolating allow policy
	 * last, so that no moment has it without the tiers above it. */
	for (size_t i = 0; i < flash_render_count(rd); i++) {
		static const char *const suffix[] = { "-protect", "-exception", "-deny", "" };

		r = flash_render_object_json(rd, i, &body, NULL);
		if (r < 0)
			goto out;
		snprintf(path, sizeof(path), "/v1/policy/%s/%s%s", ns, name, i < 3 ? suffix[i] : "");
		r = call(n, "PUT", path, body, err, err_size);
		free(body);
		body = NULL;
		if (r < 0)
			goto out;
	}
out:
	flash_render_free(rd);
	flash_diag_free(diag);
	return r;
}

static int delete_policies(struct op_net *n, const char *ns, const char *name, char *err, size_t err_size)
{
	static const char *const suffix[] = { "", "-deny", "-exception", "-protect" };
	char path[192];
	int first = 0;

	if (!ns[0])
		return 0;
	/* The isolating allow policy goes last... of the ones that open: the
	 * endpoints are gone or going, so the order only matters for them. */
	for (size_t i = 0; i < 4; i++) {
		int r;

		snprintf(path, sizeof(path), "/v1/policy/%s/%s%s", ns, name, suffix[i]);
		r = call(n, "DELETE", path, NULL, err, err_size);
		if (r < 0 && !first)
			first = r;
	}
	return first;
}

/* ---------------------------------------------------------------- publishing */

/* A ClusterIP for @v: the one recorded, else an address of the first
 * IPv4 serviceCIDR picked by a hash of the id (@attempt moves it on). */
static int cluster_ip(struct op_net *n, struct net_svc *v, unsigned int attempt)
{
	const struct flowsdn_prefix *range = NULL;
	unsigned char h[8];
	uint64_t x;
	uint32_t base, size, off;

	for (size_t i = 0; flash_operator_config_service_cidr(n->config, i); i++)
		if (flash_operator_config_service_cidr(n->config, i)->addr.family == FLOWSDN_AF_INET) {
			range = flash_operator_config_service_cidr(n->config, i);
			break;
		}
	if (!range || range->len > 27)
		return -EADDRNOTAVAIL;
	crypto_generichash(h, sizeof(h), (const unsigned char *)v->id, strlen(v->id), NULL, 0);
	memcpy(&x, h, sizeof(x));
	size = range->len == 0 ? UINT32_MAX : (UINT32_C(1) << (32 - range->len));
	memcpy(&base, range->addr.bytes, 4);
	base = ntohl(base);
	/* Not the network, the broadcast nor the first 16 (DNS and friends). */
	off = 16 + (uint32_t)((x + attempt) % (size - 17));
	{
		struct in_addr a = { .s_addr = htonl(base + off) };

		inet_ntop(AF_INET, &a, v->cluster_ip, sizeof(v->cluster_ip));
	}
	return 0;
}

static void ranges_gen(struct json_writer *w, const char *key, const struct flash_spec *spec, enum flash_spec_cidr_list l)
{
	jw_key(w, key);
	jw_array_open(w);
	for (size_t i = 0; i < flash_spec_cidr_count(spec, l); i++) {
		char buf[FLOWSDN_PREFIX_STRLEN];

		if (flowsdn_prefix_format(flash_spec_cidr(spec, l, i), buf, sizeof(buf)) >= 0)
			jw_string(w, buf);
	}
	jw_array_close(w);
}

/* The agent service of spec port @i (C2 shape). */
static int port_body(const struct op_service *s, const struct flash_spec *spec, size_t i, const char *cip,
		     const char *const *ready, size_t n_ready, char **ret)
{
	const char *name = flash_spec_port_name(spec, i);
	const char *proto = flash_spec_protocol_name(flash_spec_port_protocol(spec, i));
	const char *upper = flash_spec_port_protocol(spec, i) == FLASH_SPEC_PROTOCOL_UDP ? "UDP" : "TCP";
	uint16_t cport = flash_spec_port_container_port(spec, i), nodeport = 0;
	bool public = flash_spec_exposure_type(spec) == FLASH_SPEC_EXPOSURE_PUBLIC;
	struct json_writer *w = json_writer_new(0);

	for (size_t j = 0; public && j < s->n_ports; j++)
		if (strcmp(s->ports[j].name, name) == 0 && strcmp(s->ports[j].protocol, proto) == 0)
			nodeport = s->ports[j].port;
	jw_object_open(w);
	jw_key(w, "frontends");
	jw_array_open(w);
	jw_object_open(w);
	jw_kv_string(w, "type", "ClusterIP");
	jw_kv_string(w, "address", cip);
	jw_kv_uint(w, "port", cport);
	jw_kv_string(w, "protocol", upper);
	jw_object_close(w);
	if (nodeport) {
		jw_object_open(w);
		jw_kv_string(w, "type", "NodePort");
		jw_kv_uint(w, "port", nodeport);
		jw_kv_string(w, "protocol", upper);
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_key(w, "backends");
	jw_array_open(w);
	for (size_t j = 0; j < n_ready; j++) {
		jw_object_open(w);
		jw_kv_string(w, "address", ready[j]);
		jw_kv_uint(w, "port", cport);
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_kv_string(w, "externalTrafficPolicy",
		     public && flash_spec_traffic_mode(spec) == FLASH_SPEC_TRAFFIC_DIRECT ? "Local" : "Cluster");
	if (public) {
		ranges_gen(w, "loadBalancerSourceRanges", spec, FLASH_SPEC_ALLOWED_SOURCES);
		ranges_gen(w, "deniedSourceRanges", spec, FLASH_SPEC_DENIED_SOURCES);
	}
	jw_object_close(w);
	return json_writer_finish(w, ret, NULL);
}

static int publish(struct op_net *n, struct net_svc *v, const struct op_service *s, const struct flash_spec *spec,
		   const char *const *ready, size_t n_ready, char *err, size_t err_size)
{
	char ids[NET_MAX_PORTS][OP_SERVICE_ID_STRLEN], path[64];
	size_t np = flash_spec_port_count(spec);
	bool changed = false;
	int r = 0;

	if (np > NET_MAX_PORTS)
		np = NET_MAX_PORTS;
	if (np && !v->cluster_ip[0]) {
		r = cluster_ip(n, v, 0);
		if (r < 0) {
			snprintf(err, err_size, "no IPv4 serviceCIDR of /27 or more to take a ClusterIP from");
			return r;
		}
		changed = true;
	}
	for (size_t i = 0; i < np; i++) {
		char *body = NULL;
		size_t slot;

		op_net_port_service_id(s->id, flash_spec_protocol_name(flash_spec_port_protocol(spec, i)),
				       flash_spec_port_name(spec, i), ids[i]);
		for (slot = 0; slot < v->n_ports && strcmp(v->port_ids[slot], ids[i]) != 0; slot++)
			;
		for (unsigned int attempt = 1;; attempt++) {
			r = port_body(s, spec, i, v->cluster_ip, ready, n_ready, &body);
			if (r < 0)
				return r;
			if (slot < v->n_ports && v->bodies[slot] && strcmp(v->bodies[slot], body) == 0) {
				free(body);
				break; /* as published */
			}
			snprintf(path, sizeof(path), "/v1/service/%s", ids[i]);
			r = call(n, "PUT", path, body, err, err_size);
			/* The ClusterIP is another service's: the next one, while
			 * this service has published none yet. */
			if (r == -FLOWSDN_E_AGENT_EXISTS && i == 0 && slot == v->n_ports && attempt < CLUSTER_IP_TRIES &&
			    cluster_ip(n, v, attempt) == 0) {
				free(body);
				changed = true;
				continue;
			}
			if (r < 0) {
				free(body);
				return r;
			}
			if (slot == v->n_ports) {
				if (v->n_ports == NET_MAX_PORTS) {
					free(body);
					return -E2BIG;
				}
				snprintf(v->port_ids[v->n_ports++], OP_SERVICE_ID_STRLEN, "%s", ids[i]);
				changed = true;
				/* Recorded before anything else: a crash leaves it known. */
				r = record_save(n, v);
				if (r < 0) {
					free(body);
					snprintf(err, err_size, "recording the service: %s", strerror(-r));
					return r;
				}
			}
			free(v->bodies[slot]);
			v->bodies[slot] = body;
			break;
		}
	}
	/* Ports the spec no longer has. */
	for (size_t k = 0; k < v->n_ports;) {
		bool keep = false;

		for (size_t i = 0; i < np && !keep; i++)
			keep = strcmp(v->port_ids[k], ids[i]) == 0;
		if (keep) {
			k++;
			continue;
		}
		snprintf(path, sizeof(path), "/v1/service/%s", v->port_ids[k]);
		r = call(n, "DELETE", path, NULL, err, err_size);
		if (r < 0)
			return r;
		free(v->bodies[k]);
		v->n_ports--;
		memmove(&v->port_ids[k], &v->port_ids[k + 1], (v->n_ports - k) * sizeof(v->port_ids[0]));
		memmove(&v->bodies[k], &v->bodies[k + 1], (v->n_ports - k) * sizeof(v->bodies[0]));
		v->bodies[v->n_ports] = NULL;
		changed = true;
	}
	if (changed) {
		r = record_save(n, v);
		if (r < 0)
			snprintf(err, err_size, "recording the service: %s", strerror(-r));
	}
	return r;
}

int op_runtime_net_service(struct op_net *n, const struct op_service *s, const struct flash_spec *spec,
			   const char *const *ready, size_t n_ready, char *err, size_t err_size)
{
	struct net_svc *v;
	int r;

	if (!n || !s || !spec || (n_ready && !ready))
		return -EINVAL;
	verify(n);
	v = svc_find(n, s->id);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
		snprintf(v->id, sizeof(v->id), "%s", s->id);
		v->next = n->svcs;
		n->svcs = v;
	}
	if (!v->ns[0])
		op_net_namespace(s->org, v->ns);
	if (strcmp(v->applied_digest, s->spec_digest) != 0) {
		r = record_save(n, v); /* known before its first policy lands */
		if (r < 0) {
			snprintf(err, err_size, "recording the service: %s", strerror(-r));
			return r;
		}
		r = put_policies(n, s->id, v->ns, s->org, NULL, spec, err, err_size);
		if (r < 0)
			return r;
		snprintf(v->applied_digest, sizeof(v->applied_digest), "%s", s->spec_digest);
	}
	return publish(n, v, s, spec, ready, n_ready, err, err_size);
}

int op_runtime_net_service_del(struct op_net *n, const char *id)
{
	struct net_svc **pp, *v;
	char err[512], path[64], *rec;
	int first = 0, r;

	if (!n || !id)
		return -EINVAL;
	for (pp = &n->svcs; (v = *pp) && strcmp(v->id, id) != 0; pp = &v->next)
		;
	if (!v)
		return 0;
	for (size_t k = 0; k < v->n_ports; k++) {
		snprintf(path, sizeof(path), "/v1/service/%s", v->port_ids[k]);
		r = call(n, "DELETE", path, NULL, err, sizeof(err));
		if (r < 0 && !first)
			first = r;
	}
	r = delete_policies(n, v->ns, v->id, err, sizeof(err));
	if (r < 0 && !first)
		first = r;
	if (first < 0)
		return first; /* kept: the next pass retries */
	rec = record_path(n, id);
	if (rec)
		unlink(rec);
	free(rec);
	*pp = v->next;
	svc_free(v);
	return 0;
}

void op_runtime_net_prune(struct op_net *n, const char *const *live, size_t n_live)
{
	struct net_svc *v, *next;

	if (!n)
		return;
	for (v = n->svcs; v; v = next) {
		bool found = false;

		next = v->next;
		for (size_t i = 0; i < n_live && !found; i++)
			found = strcmp(live[i], v->id) == 0;
		if (!found)
			op_runtime_net_service_del(n, v->id);
	}
}

void op_runtime_net_cni_identity(struct json_writer *w, const char *svc_id, const char *org)
{
	char ns[21];

	op_net_namespace(org, ns);
	jw_object_open(w);
	jw_kv_string(w, "serviceTranslation", "packet");
	jw_kv_string(w, "namespace", ns);
	jw_key(w, "labels");
	jw_object_open(w);
	jw_kv_string(w, "app.kubernetes.io/name", svc_id ? svc_id : "");
	if (org && names_label_value_valid(org))
		jw_kv_string(w, "flash.heterocloud.io/organization", org);
	jw_kv_string(w, "flash.heterocloud.io/service", svc_id ? svc_id : "");
	jw_object_close(w);
	jw_object_close(w);
}

/* ---------------------------------------------------------------- CNI */

/* Why libflowsdn's CNI codec refused with @r, as one line into @err (the
 * first problem of @diag); -ENOMEM stays itself, any other refusal is
 * the input's fault: -EBADMSG. */
static int cni_problem(int r, struct flowsdn_diag *diag, char *err, size_t err_size)
{
	const struct flowsdn_diag_entry *e = flowsdn_diag_first_error(diag);

	if (r == -ENOMEM) {
		snprintf(err, err_size, "%s", strerror(ENOMEM));
		return r;
	}
	if (!e || flowsdn_diag_entry_format(e, err, err_size) < 0 || !err[0])
		snprintf(err, err_size, "%s", flowsdn_strerror(r));
	return -EBADMSG;
}

int op_cni_config_build(const char *conflist, size_t len, const char *agent_socket, const char *identity,
			char **ret, char *err, size_t err_size)
{
	struct flowsdn_cni_conflist *list = NULL;
	struct flowsdn_diag *diag = NULL;
	struct json_value *first = NULL;
	struct json_writer *w = NULL;
	char *plugin = NULL;
	int r;

	if (!ret || !err || !err_size)
		return -EINVAL;
	err[0] = '\0';
	if (conflist) {
		/* the conflist and its first plugin read as libflowsdn's CNI
		 * codec reads them, the way a runtime would */
		r = flowsdn_diag_new(&diag);
		if (r == 0)
			r = flowsdn_cni_conflist_parse(conflist, len, &list, diag);
		if (r < 0) {
			r = cni_problem(r, diag, err, err_size);
			goto out;
		}
		r = flowsdn_cni_conflist_plugin_conf(list, 0, NULL, &plugin);
		if (r == 0)
			r = json_parse(plugin, strlen(plugin), NULL, &first, NULL);
		if (r < 0) {
			snprintf(err, err_size, "%s", strerror(-r));
			goto out;
		}
	}
	w = json_writer_new(0);
	if (!w) {
		r = -ENOMEM;
		snprintf(err, err_size, "%s", strerror(ENOMEM));
		goto out;
	}
	jw_object_open(w);
	if (first) {
		/* cniVersion, name and the plugin's own keys; its runtimeConfig
		 * is the operator's */
		for (size_t i = 0; i < first->u.object.n; i++) {
			const char *k = first->u.object.members[i].key;

			if (strcmp(k, "runtimeConfig") == 0)
				continue;
			jw_key(w, k);
			jw_value(w, first->u.object.members[i].value);
		}
	} else {
		jw_kv_string(w, "cniVersion", "1.0.0");
		jw_kv_string(w, "name", "flowsdn");
		jw_kv_string(w, "type", "flowsdn-cni");
		if (agent_socket)
			jw_kv_string(w, "agentSocket", agent_socket);
	}
	jw_key(w, "runtimeConfig");
	jw_object_open(w);
	jw_key(w, "flowsdn");
	if (identity)
		jw_raw(w, identity, strlen(identity));
	else {
		jw_object_open(w);
		jw_object_close(w);
	}
	jw_object_close(w);
	jw_object_close(w);
	r = json_writer_finish(w, ret, NULL);
	w = NULL;
	if (r < 0)
		snprintf(err, err_size, "%s", strerror(-r));
out:
	json_writer_free(w);
	json_free(first);
	free(plugin);
	flowsdn_cni_conflist_free(list);
	flowsdn_diag_free(diag);
	return r;
}

int op_cni_result_address(const char *json, size_t len, char *address, size_t address_size, char *err,
			  size_t err_size)
{
	struct flowsdn_cni_result *res = NULL;
	struct flowsdn_diag *diag = NULL;
	const struct flowsdn_cni_ip *ip;
	char buf[FLOWSDN_ADDR_STRLEN];
	int r;

	if (!json || !address || !err || !err_size)
		return -EINVAL;
	err[0] = '\0';
	r = flowsdn_diag_new(&diag);
	if (r == 0)
		r = flowsdn_cni_result_parse(json, len, &res, diag);
	if (r < 0) {
		r = cni_problem(r, diag, err, err_size);
		goto out;
	}
	ip = flowsdn_cni_result_ip(res, 0);
	if (!ip) {
		snprintf(err, err_size, "ips: no address");
		r = -EBADMSG;
		goto out;
	}
	r = flowsdn_addr_format(&ip->addr, buf, sizeof(buf));
	if (r >= 0 && (size_t)r >= address_size)
		r = -ENOBUFS;
	if (r < 0) {
		snprintf(err, err_size, "ips[0].address: %s", strerror(-r));
		goto out;
	}
	memcpy(address, buf, (size_t)r + 1);
	r = 0;
out:
	flowsdn_cni_result_free(res);
	flowsdn_diag_free(diag);
	return r;
}

int op_cni_run(const struct op_cni *c, const char *cmd, const char *container_id, const char *pod_ns,
	       const char *netns, const char *identity, char *address, size_t address_size, char *err,
	       size_t err_size)
{
	char *conf = NULL, *out = NULL, *errs = NULL, *plugin = NULL, *text = NULL, *env[8] = { 0 }, how[64], why[256];
	struct json_value *res = NULL;
	size_t len = 0;
	int status = 0, r;

	if (!c || !c->bin_dir || !cmd || !container_id || !pod_ns)
		return -EINVAL;
	if (c->conf) {
		r = util_read_file(c->conf, 1 << 20, &text, &len);
		if (r < 0) {
			snprintf(err, err_size, "CNI configuration %s: %s", c->conf, strerror(-r));
			return r;
		}
	}
	r = op_cni_config_build(text, len, c->agent_socket, identity, &conf, why, sizeof(why));
	free(text);
	if (r < 0) {
		snprintf(err, err_size, "CNI configuration %s: %s", c->conf ? c->conf : "(built in)", why);
		return r;
	}
	if (asprintf(&plugin, "%s/flowsdn-cni", c->bin_dir) < 0 || asprintf(&env[0], "CNI_COMMAND=%s", cmd) < 0 ||
	    asprintf(&env[1], "CNI_CONTAINERID=%s", container_id) < 0 ||
	    asprintf(&env[2], "CNI_NETNS=%s", netns ? netns : "") < 0 || asprintf(&env[3], "CNI_IFNAME=eth0") < 0 ||
	    asprintf(&env[4], "CNI_PATH=%s", c->bin_dir) < 0 ||
	    asprintf(&env[5], "CNI_ARGS=K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s", pod_ns, container_id) < 0 ||
	    asprintf(&env[6], "PATH=/usr/sbin:/usr/bin:/sbin:/bin") < 0) {
		r = -ENOMEM;
		goto out;
	}
	struct op_exec e = { .argv = (const char *const[]){ plugin, NULL }, .envp = (const char *const *)env,
			     .input = conf, .input_len = strlen(conf), .timeout_ms = 30000 };
	r = op_exec_run(&e, &status, &out, &errs);
	if (r < 0) {
		snprintf(err, err_size, "flowsdn-cni %s: %s", cmd, strerror(-r));
		goto out;
	}
	if (status != 0) {
		const char *msg = NULL;

		op_exec_status_str(status, how, sizeof(how));
		if (json_parse(out, strlen(out), NULL, &res, NULL) == 0)
			msg = json_string_value(json_get(res, "details")) ?: json_string_value(json_get(res, "msg"));
		snprintf(err, err_size, "flowsdn-cni %s: %s: %s", cmd, how, msg ? msg : out);
		r = -EIO;
		goto out;
	}
	if (address) {
		r = op_cni_result_address(out, strlen(out), address, address_size, why, sizeof(why));
		if (r < 0) {
			snprintf(err, err_size, "flowsdn-cni ADD: the result: %s", why);
			goto out;
		}
	}
out:
	json_free(res);
	for (size_t i = 0; i < ARRAY_SIZE(env); i++)
		free(env[i]);
	free(plugin);
	free(conf);
	free(out);
	free(errs);
	return r;
}

/* ---------------------------------------------------------------- sandboxes */

/* The labels of @sb (or of an idle pool sandbox). */
static void sandbox_labels(struct json_writer *w, const struct op_net_sandbox *sb, const char *pool_name)
{
	jw_key(w, "labels");
	jw_object_open(w);
	if (!sb) {
		jw_kv_string(w, "app.kubernetes.io/name", pool_name);
		jw_kv_string(w, "flash.heterocloud.io/sandbox-pool", OP_NET_POOL_POLICY);
	} else {
		jw_kv_string(w, "app.kubernetes.io/name", sb->name);
		if (sb->org && names_label_value_valid(sb->org))
			jw_kv_string(w, "flash.heterocloud.io/organization", sb->org);
		if (sb->project && sb->project[0] && names_label_value_valid(sb->project))
			jw_kv_string(w, "flash.heterocloud.io/project", sb->project);
		jw_kv_string(w, FLASH_SANDBOX_LABEL, sb->sid);
	}
	jw_object_close(w);
}

int op_net_sandbox_identity(const struct op_net_sandbox *sb, const char *pool_name, char **ret)
{
	struct json_writer *w = json_writer_new(0);
	char ns[21];

	if (!w)
		return -ENOMEM;
	if (sb)
		op_net_namespace(sb->org, ns);
	jw_object_open(w);
	jw_kv_string(w, "serviceTranslation", "packet");
	jw_kv_string(w, "namespace", sb ? ns : OP_NET_POOL_NAMESPACE);
	sandbox_labels(w, sb, pool_name);
	jw_object_close(w);
	return json_writer_finish(w, ret, NULL);
}

int op_net_sandbox_pool_isolate(struct op_net *n, char *err, size_t err_size)
{
	/* Both directions, no rule: nothing in or out (DNS neither). */
	static const char policy[] =
		"{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
		"\"metadata\":{\"name\":\"" OP_NET_POOL_POLICY "\",\"namespace\":\"" OP_NET_POOL_NAMESPACE "\"},"
		"\"spec\":{\"podSelector\":{},\"policyTypes\":[\"Ingress\",\"Egress\"],\"ingress\":[],\"egress\":[]}}";
	int r;

	if (!n)
		return -EINVAL;
	r = call(n, "PUT", "/v1/namespace/" OP_NET_POOL_NAMESPACE, "{\"labels\":{}}", err, err_size);
	if (r == 0)
		r = call(n, "PUT", "/v1/policy/" OP_NET_POOL_NAMESPACE "/" OP_NET_POOL_POLICY, policy, err, err_size);
	return r;
}

int op_net_sandbox_policies_put(struct op_net *n, const struct op_net_sandbox *sb, const struct flash_spec *spec,
				char *err, size_t err_size)
{
	char ns[21];

	if (!n || !sb || !sb->name || !sb->sid || !spec)
		return -EINVAL;
	op_net_namespace(sb->org, ns);
	return put_policies(n, sb->name, ns, sb->org ? sb->org : "", sb->project && sb->project[0] ? sb->project : NULL,
			    spec, err, err_size);
}

int op_net_sandbox_policies_del(struct op_net *n, const char *name, const char *org, char *err, size_t err_size)
{
	char ns[21];

	if (!n || !name)
		return -EINVAL;
	op_net_namespace(org, ns);
	return delete_policies(n, ns, name, err, err_size);
}

/* GET @path and look in its array @key for an object of @container_id
 * (its "containerID"): 1 (with its "id" in *@ret_id when asked), 0 when
 * none, <0 with @err. */
static int find_container(struct op_net *n, const char *path, const char *key, const char *container_id,
			  uint64_t *ret_id, char *err, size_t err_size)
{
	struct agent_client_err ae = { 0 };
	struct json_value *root = NULL;
	const struct json_value *list;
	int r = agent_client_call(&n->agent, "GET", path, NULL, &root, &ae);

	if (r < 0) {
		snprintf(err, err_size, "flowsdn-agent GET %s: %s", path, ae.message[0] ? ae.message : flowsdn_strerror(r));
		return r;
	}
	list = json_get(root, key);
	for (size_t i = 0; json_is(list, JSON_ARRAY) && i < list->u.array.n && r == 0; i++) {
		const struct json_value *o = list->u.array.items[i];
		const char *c = json_string_value(json_get(o, "containerID"));

		if (c && strcmp(c, container_id) == 0 && (!ret_id || json_get_uint64(json_get(o, "id"), ret_id) == 0))
			r = 1;
	}
	json_free(root);
	return r;
}

int op_net_sandbox_claim(struct op_net *n, const char *container_id, const struct op_net_sandbox *sb, char *err,
			 size_t err_size)
{
	struct json_writer *w = NULL;
	char path[64], ns[21], *body = NULL;
	uint64_t id = 0;
	int r;

	if (!n || !container_id || !sb || !sb->name || !sb->sid)
		return -EINVAL;
	r = find_container(n, "/v1/endpoint", "endpoints", container_id, &id, err, err_size);
	if (r < 0)
		return r;
	if (r == 0 || id == 0) {
		snprintf(err, err_size, "flowsdn-agent: no endpoint of %s", container_id);
		return -ENOENT;
	}
	op_net_namespace(sb->org, ns);
	w = json_writer_new(0);
	if (!w)
		return -ENOMEM;
	jw_object_open(w);
	jw_kv_string(w, "namespace", ns);
	jw_kv_string(w, "name", container_id);
	sandbox_labels(w, sb, NULL);
	jw_object_close(w);
	r = json_writer_finish(w, &body, NULL);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/v1/endpoint/%" PRIu64 "/labels", id);
	r = call(n, "PUT", path, body, err, err_size);
	free(body);
	return r;
}

int op_net_released(struct op_net *n, const char *container_id, unsigned int timeout_ms, char *err,
		    size_t err_size)
{
	uint64_t until = mono_ms() + timeout_ms;
	unsigned int pause_ms = 5;

	if (!n || !container_id)
		return -EINVAL;
	for (;;) {
		int r = find_container(n, "/v1/ipam", "allocations", container_id, NULL, err, err_size);

		if (r <= 0)
			return r;
		if (mono_ms() >= until) {
			snprintf(err, err_size, "flowsdn-agent: the address of %s is still held", container_id);
			return -ETIMEDOUT;
		}
		usleep(pause_ms * 1000);
		pause_ms = pause_ms < 100 ? pause_ms * 2 : 100;
	}
}

/* ---------------------------------------------------------------- masquerade */

static const char *nft_path(void)
{
	static const char *const paths[] = { "/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft" };

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

static int nft_run(const char *script, char *err, size_t err_size)
{
	const char *nft = nft_path();
	char *out = NULL, *errs = NULL, how[64];
	int status = 0, r;

	if (!nft) {
		snprintf(err, err_size, "nft: not found (Debian package nftables)");
		return -ENOENT;
	}
	struct op_exec e = { .argv = (const char *const[]){ nft, "-f", "-", NULL }, .input = script,
			     .input_len = strlen(script), .timeout_ms = 10000 };
	r = op_exec_run(&e, &status, &out, &errs);
	if (r == 0 && status != 0) {
		op_exec_status_str(status, how, sizeof(how));
		snprintf(err, err_size, "nft -f: %s: %.300s", how, errs ? errs : "");
		r = -EIO;
	} else if (r < 0) {
		snprintf(err, err_size, "nft: %s", strerror(-r));
	}
	free(out);
	free(errs);
	return r;
}

int op_net_masquerade_script(const struct flowsdn_prefix *pools, size_t n_pools, char **ret)
{
	char *text = NULL, *next = NULL;

	/* Created idempotently in one transaction: the table is made if
	 * missing, deleted, and made again with the rules. */
	if (asprintf(&text, "table inet " OP_NET_NFT_TABLE " {}\ndelete table inet " OP_NET_NFT_TABLE "\n"
			    "table inet " OP_NET_NFT_TABLE " {\n"
			    "\tchain postrouting {\n"
			    "\t\ttype nat hook postrouting priority srcnat; policy accept;\n") < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n_pools; i++) {
		char buf[FLOWSDN_PREFIX_STRLEN];
		const char *fam = pools[i].addr.family == FLOWSDN_AF_INET ? "ip" : "ip6";

		if (flowsdn_prefix_format(&pools[i], buf, sizeof(buf)) < 0) {
			free(text);
			return -EINVAL;
		}
		/* Leaving the pool (the node itself is input, never postrouting). */
		if (asprintf(&next, "%s\t\t%s saddr %s %s daddr != %s masquerade\n", text, fam,
			     buf, fam, buf) < 0) {
			free(text);
			return -ENOMEM;
		}
		free(text);
		text = next;
	}
	if (asprintf(&next, "%s\t}\n}\n", text) < 0) {
		free(text);
		return -ENOMEM;
	}
	free(text);
	*ret = next;
	return 0;
}

int op_net_masquerade_start(struct op_net *n, char *err, size_t err_size)
{
	struct agent_client_err ae = { 0 };
	struct json_value *root = NULL;
	const struct json_value *pools;
	struct flowsdn_prefix p[NET_MAX_ADDRS];
	size_t np = 0;
	char *script = NULL;
	int r;

	if (!n)
		return -EINVAL;
	r = agent_client_call(&n->agent, "GET", "/v1/ipam", NULL, &root, &ae);
	if (r < 0) {
		snprintf(err, err_size, "flowsdn-agent GET /v1/ipam: %s", ae.message[0] ? ae.message : flowsdn_strerror(r));
		return r;
	}
	pools = json_get(root, "pools");
	for (size_t i = 0; json_is(pools, JSON_ARRAY) && i < pools->u.array.n && np < NET_MAX_ADDRS; i++) {
		const char *c = json_string_value(json_get(pools->u.array.items[i], "cidr"));

		if (c && flowsdn_prefix_parse(c, strlen(c), NULL, &p[np]) == 0)
			np++;
	}
	json_free(root);
	if (np == 0) {
		snprintf(err, err_size, "masquerade: the agent has no address pool");
		return -ENOENT;
	}
	r = op_net_masquerade_script(p, np, &script);
	if (r == 0)
		r = nft_run(script, err, err_size);
	free(script);
	if (r == 0)
		n->masquerade_on = true;
	return r;
}

int op_net_masquerade_stop(struct op_net *n, char *err, size_t err_size)
{
	int r;

	if (!n || !n->masquerade_on)
		return 0;
	r = nft_run("table inet " OP_NET_NFT_TABLE " {}\ndelete table inet " OP_NET_NFT_TABLE "\n", err, err_size);
	if (r == 0)
		n->masquerade_on = false;
	return r;
}
