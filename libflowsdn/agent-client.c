/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plugin's side of the agent API: HTTP over the Unix socket with
 * libcurl (bounded time and size), the delete queue, host interface
 * names. */
#include "config.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <flowsdn/agent.h>

#include "agent-internal.h"
#include "internal.h"
#include "jsonutil.h"

#define MAX_REPLY (1u << 20)

struct buf {
	char *data;
	size_t len;
	bool overflow;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct buf *b = userdata;
	size_t n = size * nmemb;
	char *p;

	if (b->len + n > MAX_REPLY) {
		b->overflow = true;
		return 0;
	}
	p = realloc(b->data, b->len + n + 1);
	if (!p)
		return 0;
	memcpy(p + b->len, ptr, n);
	b->len += n;
	p[b->len] = '\0';
	b->data = p;
	return n;
}

static void err_set(struct flowsdn_agent_reply_err *err, long status, const char *msg)
{
	if (!err)
		return;
	err->http_status = status;
	snprintf(err->message, sizeof(err->message), "%s", msg);
}

/* One request: @body NULL for GET.  Returns 0 with the reply body and
 * status, or a FLOWSDN_E_AGENT_* transport error. */
static int request(const struct flowsdn_agent_client_opts *opts, const char *path, const char *body,
		   struct buf *reply, long *status, struct flowsdn_agent_reply_err *err)
{
	const char *sock = OPTS_GET(opts, socket, NULL);
	unsigned int timeout = OPTS_GET(opts, timeout_ms, 0u);
	struct curl_slist *hdr = NULL;
	char url[512], ebuf[CURL_ERROR_SIZE] = "";
	CURLcode rc;
	CURL *c;
	int r = 0;

	if (!OPTS_VALID(opts, flowsdn_agent_client_opts) || timeout > 600000)
		return -EINVAL;
	if (!sock)
		sock = FLOWSDN_AGENT_SOCKET;
	if (!timeout)
		timeout = 10000;
	c = curl_easy_init();
	if (!c)
		return -ENOMEM;
	snprintf(url, sizeof(url), "http://localhost%s", path);
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, reply);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		err_set(err, 0, "no answer within the timeout");
		r = -FLOWSDN_E_AGENT_TIMEOUT;
	} else if (rc == CURLE_COULDNT_CONNECT) {
		err_set(err, 0, ebuf[0] ? ebuf : "cannot connect");
		r = -FLOWSDN_E_AGENT_UNREACHABLE;
	} else if (rc != CURLE_OK) {
		err_set(err, 0, reply->overflow ? "reply too large" : ebuf[0] ? ebuf : curl_easy_strerror(rc));
		r = -FLOWSDN_E_AGENT_PROTOCOL;
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	return r;
}

/* Interprets a JSON reply: 2xx parses into *ret_root; an error status
 * keeps the agent's message and gives -FLOWSDN_E_AGENT_REFUSED (or
 * NOT_FOUND for 404). */
static int reply_parse(struct buf *reply, long status, struct json_value **ret_root,
		       struct flowsdn_agent_reply_err *err)
{
	struct json_value *root = NULL;
	int r;

	r = reply->data ? json_parse(reply->data, reply->len, NULL, &root, NULL) : -EBADMSG;
	if (r == -ENOMEM)
		return r;
	if (status < 200 || status > 299) {
		const char *msg = jstr(json_get(json_get(root, "error"), "message"));

		if (!msg && r == 0) {
			err_set(err, status, "error reply without a message");
		} else if (!msg) {
			err_set(err, status, "error reply is not JSON");
		} else {
			err_set(err, status, msg);
		}
		json_free(root);
		if (!msg)
			return -FLOWSDN_E_AGENT_PROTOCOL;
		return status == 404 ? -FLOWSDN_E_AGENT_NOT_FOUND : -FLOWSDN_E_AGENT_REFUSED;
	}
	if (r < 0 || !jis(root, JSON_OBJECT)) {
		err_set(err, status, "reply is not a JSON object");
		json_free(root);
		return -FLOWSDN_E_AGENT_PROTOCOL;
	}
	*ret_root = root;
	return 0;
}

static int call(const struct flowsdn_agent_client_opts *opts, const char *path, const char *body,
		struct json_value **ret_root, struct flowsdn_agent_reply_err *err)
{
	struct buf reply = { 0 };
	long status = 0;
	int r;

	r = request(opts, path, body, &reply, &status, err);
	if (r == 0)
		r = reply_parse(&reply, status, ret_root, err);
	free(reply.data);
	return r;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (!s || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6 ||
	    strlen(s) != 17)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

/* Reads the endpoint object the agent returns for add/check. */
int flowsdn__agent_endpoint_from_json(const struct json_value *o, struct flowsdn_agent_endpoint *ep)
{
	const struct json_value *addrs = json_get(o, "addresses");
	const char *host = jstr(json_get(o, "hostInterface")), *ifn = jstr(json_get(o, "interface"));
	uint64_t id, mtu;

	memset(ep, 0, sizeof(*ep));
	if (json_get_uint64(json_get(o, "id"), &id) < 0 || id == 0 || id > UINT32_MAX ||
	    json_get_uint64(json_get(o, "mtu"), &mtu) < 0 || mtu > 65535 || !host || strlen(host) > 15 || !ifn ||
	    strlen(ifn) > 15 || parse_mac(jstr(json_get(o, "mac")), ep->mac) < 0 ||
	    parse_mac(jstr(json_get(o, "hostMac")), ep->host_mac) < 0 || !jstr(json_get(o, "netns")) ||
	    strlen(jstr(json_get(o, "netns"))) >= sizeof(ep->netns) || !jis(addrs, JSON_ARRAY) ||
	    addrs->u.array.n > 2)
		return -FLOWSDN_E_AGENT_PROTOCOL;
	ep->id = (uint32_t)id;
	ep->mtu = (unsigned int)mtu;
	memcpy(ep->host_ifname, host, strlen(host) + 1);
	memcpy(ep->ifname, ifn, strlen(ifn) + 1);
	memcpy(ep->netns, jstr(json_get(o, "netns")), strlen(jstr(json_get(o, "netns"))) + 1);
	for (size_t i = 0; i < addrs->u.array.n; i++) {
		FLOWSDN_OPTS(flowsdn_prefix_opts, po, .flags = FLOWSDN_PREFIX_NORMALIZE);
		const struct json_value *a = addrs->u.array.items[i];
		const char *cidr = jstr(json_get(a, "address")), *gw = jstr(json_get(a, "gateway")), *slash;
		struct flowsdn_prefix p;

		if (!cidr || !gw || !(slash = strchr(cidr, '/')) ||
		    flowsdn_addr_parse(cidr, (size_t)(slash - cidr), &ep->addrs[i]) < 0 ||
		    flowsdn_prefix_parse(cidr, strlen(cidr), &po, &p) < 0 ||
		    flowsdn_addr_parse(gw, strlen(gw), &ep->gateway[i]) < 0 ||
		    ep->gateway[i].family != ep->addrs[i].family)
			return -FLOWSDN_E_AGENT_PROTOCOL;
		ep->prefix_len[i] = p.len;
		ep->n_addrs++;
	}
	return 0;
}

static int owner_body(const char *container_id, const char *ifname, const char *netns, unsigned int mtu,
		      char **ret)
{
	yajl_gen g = jgen_new();
	int r;

	if (!g)
		return -ENOMEM;
	yajl_gen_map_open(g);
	jgen_kv(g, "containerID", container_id);
	jgen_kv(g, "ifname", ifname);
	if (netns)
		jgen_kv(g, "netns", netns);
	if (mtu)
		jgen_ki(g, "mtu", mtu);
	yajl_gen_map_close(g);
	r = jgen_take(g, ret, NULL);
	yajl_gen_free(g);
	return r;
}

static int endpoint_call(const struct flowsdn_agent_client_opts *opts, const char *path, const char *container_id,
			 const char *ifname, const char *netns, unsigned int mtu, struct flowsdn_agent_endpoint *ret,
			 struct flowsdn_agent_reply_err *err)
{
	_cleanup_free_ char *body = NULL;
	struct json_value *root = NULL;
	struct flowsdn_agent_endpoint ep;
	int r;

	if (!container_id || !ifname || !netns || !ret)
		return -EINVAL;
	r = owner_body(container_id, ifname, netns, mtu, &body);
	if (r < 0)
		return r;
	r = call(opts, path, body, &root, err);
	if (r < 0)
		return r;
	r = flowsdn__agent_endpoint_from_json(root, &ep);
	json_free(root);
	if (r < 0) {
		err_set(err, 200, "endpoint reply lacks fields");
		return r;
	}
	*ret = ep;
	return 0;
}

FLOWSDN_API int flowsdn_agent_client_add(const struct flowsdn_agent_client_opts *opts, const char *container_id,
					 const char *ifname, const char *netns, unsigned int mtu,
					 struct flowsdn_agent_endpoint *ret, struct flowsdn_agent_reply_err *err)
{
	return endpoint_call(opts, "/v1/cni/add", container_id, ifname, netns, mtu, ret, err);
}

FLOWSDN_API int flowsdn_agent_client_check(const struct flowsdn_agent_client_opts *opts, const char *container_id,
					   const char *ifname, const char *netns, struct flowsdn_agent_endpoint *ret,
					   struct flowsdn_agent_reply_err *err)
{
	return endpoint_call(opts, "/v1/cni/check", container_id, ifname, netns, 0, ret, err);
}

FLOWSDN_API int flowsdn_agent_client_del(const struct flowsdn_agent_client_opts *opts, const char *container_id,
					 const char *ifname, struct flowsdn_agent_reply_err *err)
{
	_cleanup_free_ char *body = NULL;
	struct json_value *root = NULL;
	int r;

	if (!container_id || !ifname)
		return -EINVAL;
	r = owner_body(container_id, ifname, NULL, 0, &body);
	if (r < 0)
		return r;
	r = call(opts, "/v1/cni/del", body, &root, err);
	json_free(root);
	return r;
}

FLOWSDN_API int flowsdn_agent_client_gc(const struct flowsdn_agent_client_opts *opts, const char *const *ids,
					const char *const *ifnames, size_t n, unsigned int *ret_removed,
					struct flowsdn_agent_reply_err *err)
{
	_cleanup_free_ char *body = NULL;
	struct json_value *root = NULL;
	uint64_t removed;
	yajl_gen g;
	int r;

	if ((n && (!ids || !ifnames)))
		return -EINVAL;
	g = jgen_new();
	if (!g)
		return -ENOMEM;
	yajl_gen_map_open(g);
	jgen_str(g, "validAttachments");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n; i++) {
		yajl_gen_map_open(g);
		jgen_kv(g, "containerID", ids[i]);
		jgen_kv(g, "ifname", ifnames[i]);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	r = jgen_take(g, &body, NULL);
	yajl_gen_free(g);
	if (r < 0)
		return r;
	r = call(opts, "/v1/cni/gc", body, &root, err);
	if (r < 0)
		return r;
	if (json_get_uint64(json_get(root, "removed"), &removed) < 0 || removed > UINT32_MAX) {
		err_set(err, 200, "gc reply lacks \"removed\"");
		r = -FLOWSDN_E_AGENT_PROTOCOL;
	} else if (ret_removed) {
		*ret_removed = (unsigned int)removed;
	}
	json_free(root);
	return r;
}

FLOWSDN_API int flowsdn_agent_client_health(const struct flowsdn_agent_client_opts *opts,
					    struct flowsdn_agent_reply_err *err)
{
	struct json_value *root = NULL;
	const char *status;
	int r;

	r = call(opts, "/v1/healthz", NULL, &root, err);
	if (r < 0)
		return r;
	status = jstr(json_get(root, "status"));
	if (!status || strcmp(status, "ok") != 0) {
		err_set(err, 200, status ? status : "healthz without status");
		r = -FLOWSDN_E_AGENT_PROTOCOL;
	}
	json_free(root);
	return r;
}

FLOWSDN_API int flowsdn_agent_client_get(const struct flowsdn_agent_client_opts *opts, const char *path,
					 char **ret_body, long *ret_status)
{
	struct buf reply = { 0 };
	long status = 0;
	int r;

	if (!path || path[0] != '/' || !ret_body || !ret_status)
		return -EINVAL;
	r = request(opts, path, NULL, &reply, &status, NULL);
	if (r < 0) {
		free(reply.data);
		return r;
	}
	if (!reply.data) {
		reply.data = strdup("");
		if (!reply.data)
			return -ENOMEM;
	}
	*ret_body = reply.data;
	*ret_status = status;
	return 0;
}

/* ------------------------------------------------------ delete queue */

FLOWSDN_API char *flowsdn_agent_queue_dir(const char *state_dir)
{
	char *p = NULL;

	if (!state_dir || asprintf(&p, "%s/cni-queue", state_dir) < 0)
		return NULL;
	return p;
}

static bool owner_valid(const char *container_id, const char *ifname)
{
	if (!container_id || !ifname || !container_id[0] || strlen(container_id) > 255 || !ifname[0] ||
	    strlen(ifname) > 15 || !strcmp(ifname, ".") || !strcmp(ifname, ".."))
		return false;
	for (const char *p = container_id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '.' || *p == '-'))
			return false;
	for (const char *p = ifname; *p; p++)
		if (*p == '/' || *p == ':' || *p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

FLOWSDN_API int flowsdn_agent_queue_delete(const char *queue_dir, const char *container_id, const char *ifname)
{
	_cleanup_free_ char *path = NULL, *body = NULL;
	int r;

	if (!queue_dir || !owner_valid(container_id, ifname))
		return -EINVAL;
	if (mkdir(queue_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (asprintf(&path, "%s/%s.%s.json", queue_dir, container_id, ifname) < 0)
		return -ENOMEM;
	r = owner_body(container_id, ifname, NULL, 0, &body);
	if (r < 0)
		return r;
	return util_write_file_atomic(path, body, strlen(body), 0600);
}

FLOWSDN_API int flowsdn_agent_host_ifname(const char *container_id, const char *ifname, char *buf, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 */
	const char *parts[2] = { container_id, ifname };

	if (!container_id || !ifname || !buf || size < 16)
		return -EINVAL;
	for (int k = 0; k < 2; k++) {
		for (const unsigned char *p = (const unsigned char *)parts[k]; *p; p++) {
			h ^= *p;
			h *= 0x100000001b3ULL;
		}
		h ^= 0xff; /* separator: ("ab","c") and ("a","bc") differ */
		h *= 0x100000001b3ULL;
	}
	snprintf(buf, size, "fsd%012llx", (unsigned long long)(h & 0xffffffffffffULL));
	return 0;
}
