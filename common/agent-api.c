/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent API's wire format (see agent-api.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <flowsdn/cni.h>
#include <flowsdn/datapath.h>
#include <flowsdn/identity.h>
#include <flowsdn/ipam.h>
#include <flowsdn/maglev.h>
#include <flowsdn/netlink.h>
#include <flowsdn/policy.h>

#include "agent-api.h"
#include "json.h"
#include "names.h"
#include "util.h"

/* ------------------------------------------------------------- errors */

static const char *const agent_errors[] = {
	[FLOWSDN_E_AGENT_CONFIG - FLOWSDN_E_AGENT_BASE] = "invalid agent configuration",
	[FLOWSDN_E_AGENT_LISTEN - FLOWSDN_E_AGENT_BASE] = "cannot open the API listener",
	[FLOWSDN_E_AGENT_STATE - FLOWSDN_E_AGENT_BASE] = "agent state is damaged",
	[FLOWSDN_E_AGENT_UNREACHABLE - FLOWSDN_E_AGENT_BASE] = "flowsdn-agent is not reachable",
	[FLOWSDN_E_AGENT_TIMEOUT - FLOWSDN_E_AGENT_BASE] = "flowsdn-agent did not answer in time",
	[FLOWSDN_E_AGENT_PROTOCOL - FLOWSDN_E_AGENT_BASE] = "flowsdn-agent answered something unexpected",
	[FLOWSDN_E_AGENT_REFUSED - FLOWSDN_E_AGENT_BASE] = "flowsdn-agent refused the request",
	[FLOWSDN_E_AGENT_NOT_FOUND - FLOWSDN_E_AGENT_BASE] = "no such endpoint",
	[FLOWSDN_E_AGENT_DEADLINE - FLOWSDN_E_AGENT_BASE] = "the client's deadline passed before the operation started",
	[FLOWSDN_E_AGENT_EXISTS - FLOWSDN_E_AGENT_BASE] = "the container already has an endpoint on this interface",
	[FLOWSDN_E_AGENT_HOST_NETNS - FLOWSDN_E_AGENT_BASE] = "the network namespace is the node's own",
	[FLOWSDN_E_AGENT_CONFLICT - FLOWSDN_E_AGENT_BASE] = "saved endpoint conflicts with another or with IPAM",
};

const char *agent_api_strerror(int err)
{
	int code = err < 0 ? -err : err;

	if (code >= FLOWSDN_E_AGENT_BASE && code < FLOWSDN_E_AGENT_MAX_)
		return agent_errors[code - FLOWSDN_E_AGENT_BASE];
	return flowsdn_strerror(err);
}

/* The symbolic names of every domain code, for the error body. */
#define N(x) { x, #x }
static const struct {
	int code;
	const char *name;
} names[] = {
	N(FLOWSDN_E_AGENT_CONFIG),
	N(FLOWSDN_E_AGENT_LISTEN),
	N(FLOWSDN_E_AGENT_STATE),
	N(FLOWSDN_E_AGENT_UNREACHABLE),
	N(FLOWSDN_E_AGENT_TIMEOUT),
	N(FLOWSDN_E_AGENT_PROTOCOL),
	N(FLOWSDN_E_AGENT_REFUSED),
	N(FLOWSDN_E_AGENT_NOT_FOUND),
	N(FLOWSDN_E_AGENT_DEADLINE),
	N(FLOWSDN_E_AGENT_EXISTS),
	N(FLOWSDN_E_AGENT_HOST_NETNS),
	N(FLOWSDN_E_AGENT_CONFLICT),
	N(FLOWSDN_E_CNI_INCOMPATIBLE),
	N(FLOWSDN_E_CNI_VERSION_UNKNOWN),
	N(FLOWSDN_E_CNI_DECODE),
	N(FLOWSDN_E_CNI_CONFIG),
	N(FLOWSDN_E_CNI_ENV),
	N(FLOWSDN_E_CNI_CONTAINER_ID),
	N(FLOWSDN_E_CNI_IFNAME),
	N(FLOWSDN_E_CNI_ARGS),
	N(FLOWSDN_E_CNI_RESULT),
	N(FLOWSDN_E_CNI_NOT_FOUND),
	N(FLOWSDN_E_CNI_TRY_AGAIN),
	N(FLOWSDN_E_CNI_NOT_READY),
	N(FLOWSDN_E_ADDR_EMPTY),
	N(FLOWSDN_E_ADDR_TOO_LONG),
	N(FLOWSDN_E_ADDR_NUL),
	N(FLOWSDN_E_ADDR_SYNTAX),
	N(FLOWSDN_E_ADDR_OCTET_RANGE),
	N(FLOWSDN_E_ADDR_LEADING_ZERO),
	N(FLOWSDN_E_ADDR_GROUP),
	N(FLOWSDN_E_ADDR_GROUP_COUNT),
	N(FLOWSDN_E_ADDR_DOUBLE_COLON),
	N(FLOWSDN_E_ADDR_ZONE),
	N(FLOWSDN_E_ADDR_FAMILY),
	N(FLOWSDN_E_PREFIX_LENGTH),
	N(FLOWSDN_E_PREFIX_HOST_BITS),
	N(FLOWSDN_E_ADDR_RANGE),
	N(FLOWSDN_E_BPF_NO_BPFFS),
	N(FLOWSDN_E_BPF_NOT_LOADED),
	N(FLOWSDN_E_BPF_MAP_LAYOUT),
	N(FLOWSDN_E_BPF_LOAD),
	N(FLOWSDN_E_BPF_ATTACH),
	N(FLOWSDN_E_BPF_NO_TCX),
	N(FLOWSDN_E_BPF_IFACE_MISMATCH),
	N(FLOWSDN_E_BPF_OBJECT),
	N(FLOWSDN_E_BPF_NOT_CGROUP2),
	N(FLOWSDN_E_IDENTITY_LABEL_KEY),
	N(FLOWSDN_E_IDENTITY_LABEL_VALUE),
	N(FLOWSDN_E_IDENTITY_LABEL_DUPLICATE),
	N(FLOWSDN_E_IDENTITY_LABELS_EMPTY),
	N(FLOWSDN_E_IDENTITY_EXHAUSTED),
	N(FLOWSDN_E_IDENTITY_RESERVED),
	N(FLOWSDN_E_IDENTITY_STATE_CORRUPT),
	N(FLOWSDN_E_IDENTITY_STATE_VERSION),
	N(FLOWSDN_E_IPAM_EXHAUSTED),
	N(FLOWSDN_E_IPAM_POOL_OVERLAP),
	N(FLOWSDN_E_IPAM_POOL_TOO_SMALL),
	N(FLOWSDN_E_IPAM_POOL_TOO_BIG),
	N(FLOWSDN_E_IPAM_NO_POOL),
	N(FLOWSDN_E_IPAM_RESERVED),
	N(FLOWSDN_E_IPAM_IN_USE),
	N(FLOWSDN_E_IPAM_OWNER),
	N(FLOWSDN_E_IPAM_OWNER_CONFLICT),
	N(FLOWSDN_E_IPAM_STATE_CORRUPT),
	N(FLOWSDN_E_IPAM_STATE_VERSION),
	N(FLOWSDN_E_IPAM_ORPHAN),
	N(FLOWSDN_E_IPAM_POOL_CLASS),
	N(FLOWSDN_E_MAGLEV_SIZE),
	N(FLOWSDN_E_MAGLEV_NO_BACKEND),
	N(FLOWSDN_E_MAGLEV_DUPLICATE),
	N(FLOWSDN_E_MAGLEV_KEY),
	N(FLOWSDN_E_MAGLEV_TOO_MANY),
	N(FLOWSDN_E_MAGLEV_PERMUTATION),
	N(FLOWSDN_E_NL_SOCKET),
	N(FLOWSDN_E_NL_NETNS),
	N(FLOWSDN_E_NL_IFNAME),
	N(FLOWSDN_E_NL_EXISTS),
	N(FLOWSDN_E_NL_LINK),
	N(FLOWSDN_E_NL_ADDR),
	N(FLOWSDN_E_NL_ROUTE),
	N(FLOWSDN_E_NL_NEIGH),
	N(FLOWSDN_E_NL_SYSCTL),
	N(FLOWSDN_E_NL_NOT_FOUND),
	N(FLOWSDN_E_NL_MISMATCH),
	N(FLOWSDN_E_POLICY_JSON),
	N(FLOWSDN_E_POLICY_INVALID),
	N(FLOWSDN_E_POLICY_CAPACITY),
	N(FLOWSDN_E_POLICY_NOT_FOUND),
	N(FLOWSDN_E_POLICY_ADDR_IN_USE),
	N(FLOWSDN_E_POLICY_IDENTITIES),
	N(FLOWSDN_E_POLICY_NOT_COMPILED),
};
#undef N

const char *agent_api_error_name(int err)
{
	int code = err < 0 ? -err : err;

	if (code > 0 && code < FLOWSDN_E_BASE)
		return strerrorname_np(code);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].code == code)
			return names[i].name;
	return NULL;
}

int agent_api_error_from_name(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(names[i].name, name))
			return -names[i].code;
	for (int e = 1; e < 200; e++) {
		const char *n = strerrorname_np(e);

		if (n && !strcmp(n, name))
			return -e;
	}
	return 0;
}

void agent_api_error_field_gen(struct json_writer *g, int err, const char *message, const char *field)
{
	const char *name = agent_api_error_name(err);

	jw_object_open(g);
	jw_string(g, "error");
	jw_object_open(g);
	jw_kv_string(g, "code", name ? name : "unknown");
	jw_kv_int(g, "number", err < 0 ? -err : err);
	jw_kv_string(g, "message", message && message[0] ? message : agent_api_strerror(err));
	if (field && field[0])
		jw_kv_string(g, "field", field);
	jw_object_close(g);
	jw_object_close(g);
}

void agent_api_error_gen(struct json_writer *g, int err, const char *message)
{
	agent_api_error_field_gen(g, err, message, NULL);
}

int agent_api_error_parse(const struct json_value *root, int *ret_err, char *msg, size_t msg_size)
{
	const struct json_value *e = json_get(root, "error");
	const char *name = json_string_value(json_get(e, "code")), *m = json_string_value(json_get(e, "message"));
	uint64_t number;

	if (!name || !m || json_get_uint64(json_get(e, "number"), &number) < 0 || number == 0 || number > INT32_MAX)
		return -EBADMSG;
	/* The number decides; a name this side does not know is fine. */
	*ret_err = -(int)number;
	snprintf(msg, msg_size, "%s", m);
	return 0;
}

/* ----------------------------------------------------------- endpoint */

int agent_api_gateway(int family, struct flowsdn_addr *ret)
{
	const char *g = family == FLOWSDN_AF_INET ? FLOWSDN_GATEWAY_V4 : FLOWSDN_GATEWAY_V6;

	return flowsdn_addr_parse(g, strlen(g), ret) < 0 ? -EINVAL : 0;
}

static void fmt_mac(const uint8_t m[6], char buf[18])
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (!s || strlen(s) != 17 ||
	    sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

void agent_api_endpoint_gen(struct json_writer *g, const struct agent_api_endpoint *e)
{
	char mac[18];

	jw_object_open(g);
	jw_kv_int(g, "id", e->id);
	jw_kv_string(g, "containerID", e->container_id);
	jw_kv_string(g, "interface", e->ifname);
	jw_kv_string(g, "netns", e->netns);
	jw_kv_uint(g, "netnsInode", e->netns_ino);
	jw_kv_string(g, "hostInterface", e->host_ifname);
	jw_kv_int(g, "hostIfindex", e->host_ifindex);
	fmt_mac(e->mac, mac);
	jw_kv_string(g, "mac", mac);
	fmt_mac(e->host_mac, mac);
	jw_kv_string(g, "hostMac", mac);
	jw_kv_int(g, "mtu", e->mtu);
	jw_kv_int(g, "created", (long long)e->created);
	jw_kv_string(g, "serviceTranslation", flowsdn_cni_svc_translation_name(e->svc_translation));
	jw_string(g, "addresses");
	jw_array_open(g);
	for (size_t i = 0; i < e->n_addrs; i++) {
		char a[FLOWSDN_ADDR_STRLEN], cidr[FLOWSDN_PREFIX_STRLEN];

		if (flowsdn_addr_format(&e->addrs[i], a, sizeof(a)) < 0)
			continue;
		snprintf(cidr, sizeof(cidr), "%s/%u", a, e->prefix_len[i]);
		jw_object_open(g);
		jw_kv_string(g, "address", cidr);
		if (flowsdn_addr_format(&e->gateway[i], a, sizeof(a)) >= 0)
			jw_kv_string(g, "gateway", a);
		jw_object_close(g);
	}
	jw_array_close(g);
	jw_object_close(g);
}

int agent_api_endpoint_parse(const struct json_value *o, struct agent_api_endpoint *ret)
{
	const struct json_value *addrs = json_get(o, "addresses"), *svc = json_get(o, "serviceTranslation");
	struct agent_api_endpoint e = { 0 };
	uint64_t id, ino, mtu, created;
	int64_t ifindex;

	if (json_get_uint64(json_get(o, "id"), &id) < 0 || id == 0 || id > UINT32_MAX ||
	    json_get_uint64(json_get(o, "netnsInode"), &ino) < 0 ||
	    json_get_uint64(json_get(o, "mtu"), &mtu) < 0 || mtu > 65535 ||
	    json_get_uint64(json_get(o, "created"), &created) < 0 ||
	    json_get_int64(json_get(o, "hostIfindex"), &ifindex) < 0 || ifindex <= 0 || ifindex > INT32_MAX ||
	    util_strcpy_fit(e.container_id, sizeof(e.container_id), json_string_value(json_get(o, "containerID"))) < 0 ||
	    util_strcpy_fit(e.ifname, sizeof(e.ifname), json_string_value(json_get(o, "interface"))) < 0 ||
	    util_strcpy_fit(e.netns, sizeof(e.netns), json_string_value(json_get(o, "netns"))) < 0 ||
	    util_strcpy_fit(e.host_ifname, sizeof(e.host_ifname), json_string_value(json_get(o, "hostInterface"))) < 0 ||
	    !names_container_id_valid(e.container_id) || !names_ifname_valid(e.ifname) ||
	    !names_ifname_valid(e.host_ifname) ||
	    parse_mac(json_string_value(json_get(o, "mac")), e.mac) < 0 || parse_mac(json_string_value(json_get(o, "hostMac")), e.host_mac) < 0 ||
	    !json_is(addrs, JSON_ARRAY) || addrs->u.array.n > AGENT_API_MAX_ADDRS)
		return -EBADMSG;
	/* Optional: state saved before it existed has none (socket). */
	if (svc && flowsdn_cni_svc_translation_parse(json_string_value(svc), &e.svc_translation) < 0)
		return -EBADMSG;
	e.id = (uint32_t)id;
	e.netns_ino = ino;
	e.mtu = (unsigned int)mtu;
	e.created = (time_t)created;
	e.host_ifindex = (int)ifindex;
	for (size_t i = 0; i < addrs->u.array.n; i++) {
		FLOWSDN_OPTS(flowsdn_prefix_opts, po, .flags = FLOWSDN_PREFIX_NORMALIZE);
		const struct json_value *a = addrs->u.array.items[i];
		const char *cidr = json_string_value(json_get(a, "address")), *gw = json_string_value(json_get(a, "gateway"));
		const char *slash = cidr ? strchr(cidr, '/') : NULL;
		struct flowsdn_prefix p;

		if (!slash || !gw || flowsdn_addr_parse(cidr, (size_t)(slash - cidr), &e.addrs[i]) < 0 ||
		    flowsdn_prefix_parse(cidr, strlen(cidr), &po, &p) < 0 ||
		    flowsdn_addr_parse(gw, strlen(gw), &e.gateway[i]) < 0 || e.gateway[i].family != e.addrs[i].family)
			return -EBADMSG;
		e.prefix_len[i] = p.len;
		e.n_addrs++;
	}
	*ret = e;
	return 0;
}

/* -------------------------------------------------- owners and queue */

int agent_api_owner_body(const char *container_id, const char *ifname, const char *netns, unsigned int mtu,
			 char **ret)
{
	return agent_api_add_body(container_id, ifname, netns, mtu, FLOWSDN_CNI_SVC_SOCKET, ret);
}

int agent_api_add_body(const char *container_id, const char *ifname, const char *netns, unsigned int mtu,
		       enum flowsdn_cni_svc_translation svc, char **ret)
{
	struct json_writer *g;
	int r;

	if (!container_id || !ifname || !ret || !flowsdn_cni_svc_translation_name(svc))
		return -EINVAL;
	g = json_writer_new(0);
	if (!g)
		return -ENOMEM;
	jw_object_open(g);
	jw_kv_string(g, "containerID", container_id);
	jw_kv_string(g, "ifname", ifname);
	if (netns)
		jw_kv_string(g, "netns", netns);
	if (mtu)
		jw_kv_int(g, "mtu", mtu);
	if (svc != FLOWSDN_CNI_SVC_SOCKET)
		jw_kv_string(g, "serviceTranslation", flowsdn_cni_svc_translation_name(svc));
	jw_object_close(g);
	r = json_writer_finish(g, ret, NULL);
	return r;
}

char *agent_api_queue_dir(const char *state_dir)
{
	char *p = NULL;

	if (!state_dir || asprintf(&p, "%s/" AGENT_API_QUEUE_SUBDIR, state_dir) < 0)
		return NULL;
	return p;
}

/* FNV-1a 64 over the owner's two parts, each followed by a separator so
 * that ("ab","c") and ("a","bc") differ; @basis picks one of two
 * independent hashes. */
static uint64_t owner_hash(const char *container_id, const char *ifname, uint64_t basis)
{
	const char *parts[2] = { container_id, ifname };
	uint64_t h = basis;

	for (int k = 0; k < 2; k++) {
		for (const unsigned char *p = (const unsigned char *)parts[k]; *p; p++) {
			h ^= *p;
			h *= 0x100000001b3ULL;
		}
		h ^= 0xff;
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL
#define FNV_BASIS_ALT 0x84222325cbf29ce4ULL

char *agent_api_queue_entry_name(const char *container_id, const char *ifname)
{
	char *p = NULL;
	int r;

	if (!names_container_id_valid(container_id) || !names_ifname_valid(ifname))
		return NULL;
	if (strlen(container_id) + 1 + strlen(ifname) + strlen(".json") <= NAME_MAX)
		r = asprintf(&p, "%s.%s.json", container_id, ifname);
	else /* a long id: its prefix and a 128-bit hash of the whole owner */
		r = asprintf(&p, "%.*s~%016llx%016llx.json", AGENT_API_QUEUE_NAME_PREFIX, container_id,
			     (unsigned long long)owner_hash(container_id, ifname, FNV_BASIS),
			     (unsigned long long)owner_hash(container_id, ifname, FNV_BASIS_ALT));
	return r < 0 ? NULL : p;
}

int agent_api_queue_entry_parse(const struct json_value *root, const char **ret_container_id, const char **ret_ifname)
{
	const char *cid = json_string_value(json_get(root, "containerID")), *ifn = json_string_value(json_get(root, "ifname"));

	if (!json_is(root, JSON_OBJECT) || !names_container_id_valid(cid) || !names_ifname_valid(ifn))
		return -EBADMSG;
	*ret_container_id = cid;
	*ret_ifname = ifn;
	return 0;
}

int agent_api_host_ifname(const char *container_id, const char *ifname, char *buf, size_t size)
{
	if (!container_id || !ifname || !buf || size < 16)
		return -EINVAL;
	snprintf(buf, size, "fsd%012llx",
		 (unsigned long long)(owner_hash(container_id, ifname, FNV_BASIS) & 0xffffffffffffULL));
	return 0;
}
