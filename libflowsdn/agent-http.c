/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's HTTP API (libmicrohttpd): a mode-0600 Unix socket and an
 * optional read-only loopback listener; bounded bodies, connections and
 * time; JSON errors. */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <flowsdn/agent.h>
#include <flowsdn/cni.h>
#include <flowsdn/datapath.h>
#include <flowsdn/ipam.h>
#include <flowsdn/netlink.h>

#include "agent-internal.h"
#include "internal.h"
#include "jsonutil.h"

struct listener_ctx {
	struct flowsdn_agent *agent;
	bool read_only;
};

/* One request's body, accumulated up to the configured bound. */
struct request {
	char *body;
	size_t len;
	bool too_big;
};

struct reply {
	unsigned int status;
	char *body; /* JSON, owned */
};

static void reply_json(struct reply *r, unsigned int status, yajl_gen g)
{
	r->status = status;
	if (jgen_take(g, &r->body, NULL) < 0) {
		r->status = 500;
		r->body = NULL;
	}
	yajl_gen_free(g);
}

_printf_(4, 5) static void reply_error(struct reply *r, unsigned int status, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	yajl_gen g = jgen_new();

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!g) {
		r->status = 500;
		return;
	}
	yajl_gen_map_open(g);
	jgen_str(g, "error");
	yajl_gen_map_open(g);
	jgen_kv(g, "code", code);
	jgen_kv(g, "message", msg);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	reply_json(r, status, g);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void timing_add(struct agent_timing *t, double ms, bool ok)
{
	t->count++;
	if (!ok)
		t->errors++;
	t->ms[t->pos] = ms;
	t->pos = (t->pos + 1) % TIMING_SAMPLES;
	if (t->n < TIMING_SAMPLES)
		t->n++;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void timing_gen(yajl_gen g, const char *name, const struct agent_timing *t)
{
	double sorted[TIMING_SAMPLES];
	char buf[32];

	jgen_str(g, name);
	yajl_gen_map_open(g);
	jgen_ki(g, "count", (long long)t->count);
	jgen_ki(g, "errors", (long long)t->errors);
	jgen_ki(g, "samples", (long long)t->n);
	if (t->n) {
		memcpy(sorted, t->ms, t->n * sizeof(double));
		qsort(sorted, t->n, sizeof(double), cmp_double);
		snprintf(buf, sizeof(buf), "%.3f", sorted[t->n / 2]);
		jgen_str(g, "medianMs");
		yajl_gen_number(g, buf, strlen(buf));
		snprintf(buf, sizeof(buf), "%.3f", sorted[(t->n * 95 - 1) / 100]);
		jgen_str(g, "p95Ms");
		yajl_gen_number(g, buf, strlen(buf));
		snprintf(buf, sizeof(buf), "%.3f", sorted[t->n - 1]);
		jgen_str(g, "maxMs");
		yajl_gen_number(g, buf, strlen(buf));
	}
	yajl_gen_map_close(g);
}

/* The owner fields of a request body; an error reply when invalid. */
static struct json_value *parse_body(const struct request *req, struct reply *r)
{
	struct json_value *root = NULL;
	struct json_error je = { 0 };
	int err;

	err = json_parse(req->body ? req->body : "", req->len, NULL, &root, &je);
	if (err == -ENOMEM) {
		reply_error(r, 500, "internal", "out of memory");
		return NULL;
	}
	if (err < 0) {
		reply_error(r, 400, "bad-json", "body: line %u column %u: %s", je.line, je.column, je.message);
		return NULL;
	}
	if (!jis(root, JSON_OBJECT)) {
		reply_error(r, 400, "bad-request", "body: not a JSON object");
		json_free(root);
		return NULL;
	}
	return root;
}

static bool owner_fields(const struct json_value *root, bool need_netns, const char **cid, const char **ifn,
			 const char **netns, struct reply *r)
{
	*cid = jstr(json_get(root, "containerID"));
	*ifn = jstr(json_get(root, "ifname"));
	*netns = jstr(json_get(root, "netns"));
	if (!*cid || !flowsdn_cni_container_id_valid(*cid)) {
		reply_error(r, 400, "bad-request", "containerID: missing or not ^[A-Za-z0-9][A-Za-z0-9_.-]*$");
		return false;
	}
	if (!*ifn || !flowsdn_cni_ifname_valid(*ifn)) {
		reply_error(r, 400, "bad-request", "ifname: missing or not an interface name");
		return false;
	}
	if (need_netns && (!*netns || (*netns)[0] != '/' || strlen(*netns) >= 256)) {
		reply_error(r, 400, "bad-request", "netns: missing or not an absolute path");
		return false;
	}
	return true;
}

/* HTTP status and code for an ADD/CHECK failure. */
static void reply_failure(struct reply *r, int err, const char *msg)
{
	unsigned int status = 500;
	const char *code = "internal";

	switch (-err) {
	case FLOWSDN_E_NL_EXISTS:
		status = 409, code = "name-taken";
		break;
	case FLOWSDN_E_NL_NETNS:
		status = 422, code = "bad-netns";
		break;
	case FLOWSDN_E_IPAM_EXHAUSTED:
	case FLOWSDN_E_IPAM_NO_POOL:
		status = 503, code = "no-address";
		break;
	case FLOWSDN_E_AGENT_NOT_FOUND:
	case FLOWSDN_E_NL_NOT_FOUND:
		status = 404, code = "not-found";
		break;
	case FLOWSDN_E_NL_MISMATCH:
	case FLOWSDN_E_BPF_ATTACH:
	case FLOWSDN_E_BPF_IFACE_MISMATCH:
		status = 409, code = "check-failed";
		break;
	case EINVAL:
		status = 400, code = "bad-request";
		break;
	}
	reply_error(r, status, code, "%s", msg[0] ? msg : flowsdn_strerror(err));
}

static void endpoint_reply(struct reply *r, const struct agent_endpoint *e)
{
	yajl_gen g = jgen_new();

	if (!g) {
		r->status = 500;
		return;
	}
	flowsdn__agent_endpoint_gen(g, e);
	reply_json(r, 200, g);
}

static void route_add_check(struct flowsdn_agent *a, const struct request *req, bool add, struct reply *r)
{
	struct json_value *root = parse_body(req, r);
	const struct agent_endpoint *e = NULL;
	const char *cid, *ifn, *netns;
	char msg[384] = "";
	uint64_t mtu = 0;
	double t0 = now_ms();
	int err;

	if (!root)
		return;
	if (!owner_fields(root, true, &cid, &ifn, &netns, r))
		goto out;
	if (json_get(root, "mtu") && (json_get_uint64(json_get(root, "mtu"), &mtu) < 0 || mtu < 1280 || mtu > 65535)) {
		reply_error(r, 400, "bad-request", "mtu: must be an integer in [1280, 65535]");
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	if (add)
		err = flowsdn__agent_add_locked(a, cid, ifn, netns, (unsigned int)mtu, &e, msg, sizeof(msg));
	else
		err = flowsdn__agent_check_locked(a, cid, ifn, netns, &e, msg, sizeof(msg));
	if (err == 0)
		endpoint_reply(r, e);
	else
		reply_failure(r, err, msg);
	if (add)
		timing_add(&a->t_add, now_ms() - t0, err == 0);
	pthread_mutex_unlock(&a->lock);
out:
	json_free(root);
}

static void route_del(struct flowsdn_agent *a, const struct request *req, struct reply *r)
{
	struct json_value *root = parse_body(req, r);
	const char *cid, *ifn, *netns;
	double t0 = now_ms();
	yajl_gen g;
	int err;

	if (!root)
		return;
	if (!owner_fields(root, false, &cid, &ifn, &netns, r))
		goto out;
	pthread_mutex_lock(&a->lock);
	err = flowsdn__agent_delete_locked(a, cid, ifn);
	timing_add(&a->t_del, now_ms() - t0, err >= 0);
	pthread_mutex_unlock(&a->lock);
	/* A DEL queued while this agent was starting is picked up now. */
	if (err >= 0)
		(void)flowsdn_agent_replay_queue(a);
	if (err < 0) {
		reply_error(r, 500, "internal", "deleting %s/%s: %s", cid, ifn, flowsdn_strerror(err));
		goto out;
	}
	g = jgen_new();
	if (!g) {
		r->status = 500;
		goto out;
	}
	yajl_gen_map_open(g);
	jgen_ki(g, "removed", err);
	yajl_gen_map_close(g);
	reply_json(r, 200, g);
out:
	json_free(root);
}

static void route_gc(struct flowsdn_agent *a, const struct request *req, struct reply *r)
{
	struct json_value *root = parse_body(req, r);
	const struct json_value *list;
	const char **ids = NULL, **ifns = NULL;
	size_t n;
	yajl_gen g;
	int removed;

	if (!root)
		return;
	list = json_get(root, "validAttachments");
	if (!jis(list, JSON_ARRAY)) {
		reply_error(r, 400, "bad-request", "validAttachments: must be an array");
		goto out;
	}
	n = list->u.array.n;
	ids = calloc(n + 1, sizeof(*ids));
	ifns = calloc(n + 1, sizeof(*ifns));
	if (!ids || !ifns) {
		reply_error(r, 500, "internal", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *netns;

		if (!owner_fields(list->u.array.items[i], false, &ids[i], &ifns[i], &netns, r))
			goto out;
	}
	pthread_mutex_lock(&a->lock);
	removed = flowsdn__agent_gc_locked(a, ids, ifns, n);
	pthread_mutex_unlock(&a->lock);
	if (removed < 0) {
		reply_error(r, 500, "internal", "gc: %s", flowsdn_strerror(removed));
		goto out;
	}
	g = jgen_new();
	if (!g) {
		r->status = 500;
		goto out;
	}
	yajl_gen_map_open(g);
	jgen_ki(g, "removed", removed);
	yajl_gen_map_close(g);
	reply_json(r, 200, g);
out:
	free(ids);
	free(ifns);
	json_free(root);
}

static void route_healthz(struct flowsdn_agent *a, struct reply *r)
{
	yajl_gen g = jgen_new();

	if (!g) {
		r->status = 500;
		return;
	}
	pthread_mutex_lock(&a->lock);
	yajl_gen_map_open(g);
	jgen_kv(g, "status", "ok");
	jgen_kv(g, "version", flowsdn_version());
	jgen_ki(g, "uptimeSeconds", (long long)(time(NULL) - a->started));
	jgen_ki(g, "endpoints", (long long)a->n_eps);
	jgen_ki(g, "restoredEndpoints", a->restored);
	jgen_ki(g, "replayedDeletes", a->replayed);
	yajl_gen_map_close(g);
	pthread_mutex_unlock(&a->lock);
	reply_json(r, 200, g);
}

static void module_gen(yajl_gen g, const char *name, const char *status, const char *detail)
{
	yajl_gen_map_open(g);
	jgen_kv(g, "name", name);
	jgen_kv(g, "status", status);
	if (detail)
		jgen_kv(g, "detail", detail);
	yajl_gen_map_close(g);
}

static void route_modules(struct flowsdn_agent *a, struct reply *r)
{
	struct flowsdn_ipam_pool_summary s[FLOWSDN_AGENT_MAX_POOLS];
	yajl_gen g = jgen_new();
	size_t n = 0;
	int err;

	if (!g) {
		r->status = 500;
		return;
	}
	pthread_mutex_lock(&a->lock);
	err = flowsdn_ipam_summary(a->ipam, s, FLOWSDN_AGENT_MAX_POOLS, &n);
	yajl_gen_map_open(g);
	jgen_str(g, "modules");
	yajl_gen_array_open(g);
	module_gen(g, "api", "ok", NULL);
	module_gen(g, "ipam", err < 0 ? "degraded" : "ok", err < 0 ? flowsdn_strerror(err) : NULL);
	if (!a->dp)
		module_gen(g, "datapath", "disabled", "\"datapath\": false in the configuration");
	else
		module_gen(g, "datapath", "ok",
			   flowsdn_datapath_attach_mode(a->dp) == FLOWSDN_ATTACH_TCX ? "tcx" : "tc clsact");
	module_gen(g, "state", access(a->state_path, R_OK) == 0 || a->n_eps == 0 ? "ok" : "degraded", NULL);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	pthread_mutex_unlock(&a->lock);
	reply_json(r, 200, g);
}

static void route_endpoints(struct flowsdn_agent *a, const char *id_text, struct reply *r)
{
	yajl_gen g;
	unsigned long id = 0;
	bool found = false;

	if (id_text) {
		char *end;

		errno = 0;
		id = strtoul(id_text, &end, 10);
		if (errno || *end || !id_text[0] || id_text[0] < '1' || id_text[0] > '9' || id > UINT32_MAX) {
			reply_error(r, 400, "bad-request", "endpoint id \"%.32s\" is not a number", id_text);
			return;
		}
	}
	g = jgen_new();
	if (!g) {
		r->status = 500;
		return;
	}
	pthread_mutex_lock(&a->lock);
	if (!id_text) {
		yajl_gen_map_open(g);
		jgen_str(g, "endpoints");
		yajl_gen_array_open(g);
	}
	for (size_t i = 0; i < a->n_eps; i++) {
		if (id_text && a->eps[i]->id != id)
			continue;
		flowsdn__agent_endpoint_gen(g, a->eps[i]);
		found = true;
	}
	if (!id_text) {
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
	}
	pthread_mutex_unlock(&a->lock);
	if (id_text && !found) {
		yajl_gen_free(g);
		reply_error(r, 404, "not-found", "no endpoint %lu", id);
		return;
	}
	reply_json(r, 200, g);
}

static void gen_prefix(yajl_gen g, const char *key, const struct flowsdn_prefix *p)
{
	char buf[FLOWSDN_PREFIX_STRLEN];

	if (flowsdn_prefix_format(p, buf, sizeof(buf)) >= 0)
		jgen_kv(g, key, buf);
}

static void route_ipam(struct flowsdn_agent *a, struct reply *r)
{
	struct flowsdn_ipam_pool_summary s[FLOWSDN_AGENT_MAX_POOLS];
	struct flowsdn_ipam_allocation *alloc = NULL;
	size_t n = 0, n_alloc = 0;
	yajl_gen g;
	int err;

	pthread_mutex_lock(&a->lock);
	err = flowsdn_ipam_summary(a->ipam, s, FLOWSDN_AGENT_MAX_POOLS, &n);
	if (err == 0)
		err = flowsdn_ipam_list(a->ipam, &alloc, &n_alloc);
	pthread_mutex_unlock(&a->lock);
	if (err < 0) {
		reply_error(r, 500, "internal", "ipam: %s", flowsdn_strerror(err));
		return;
	}
	g = jgen_new();
	if (!g) {
		free(alloc);
		r->status = 500;
		return;
	}
	yajl_gen_map_open(g);
	jgen_str(g, "pools");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n && i < FLOWSDN_AGENT_MAX_POOLS; i++) {
		char gw[FLOWSDN_ADDR_STRLEN];

		yajl_gen_map_open(g);
		gen_prefix(g, "cidr", &s[i].pool);
		if (flowsdn_addr_format(&s[i].gateway, gw, sizeof(gw)) >= 0)
			jgen_kv(g, "gateway", gw);
		jgen_ki(g, "size", (long long)s[i].size);
		jgen_ki(g, "reserved", (long long)s[i].reserved);
		jgen_ki(g, "used", (long long)s[i].used);
		jgen_ki(g, "free", (long long)s[i].free);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	jgen_str(g, "allocations");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n_alloc; i++) {
		char buf[FLOWSDN_ADDR_STRLEN];

		yajl_gen_map_open(g);
		if (flowsdn_addr_format(&alloc[i].addr, buf, sizeof(buf)) >= 0)
			jgen_kv(g, "address", buf);
		jgen_kv(g, "containerID", alloc[i].container_id);
		jgen_kv(g, "ifname", alloc[i].ifname);
		gen_prefix(g, "pool", &alloc[i].pool);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	free(alloc);
	reply_json(r, 200, g);
}

static void route_timing(struct flowsdn_agent *a, struct reply *r)
{
	yajl_gen g = jgen_new();

	if (!g) {
		r->status = 500;
		return;
	}
	pthread_mutex_lock(&a->lock);
	yajl_gen_map_open(g);
	timing_gen(g, "add", &a->t_add);
	timing_gen(g, "del", &a->t_del);
	yajl_gen_map_close(g);
	pthread_mutex_unlock(&a->lock);
	reply_json(r, 200, g);
}

/* Routes a complete request. */
static void agent_route(struct flowsdn_agent *a, bool read_only, const char *method, const char *url,
			const struct request *req, struct reply *r)
{
	static const char *const posts[] = { "/v1/cni/add", "/v1/cni/check", "/v1/cni/del", "/v1/cni/gc" };
	static const char *const gets[] = { "/v1/healthz", "/v1/health/modules", "/v1/endpoint", "/v1/ipam",
					    "/v1/cni/timing" };
	bool is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	bool is_post = !strcmp(method, "POST");
	bool known_post = false, known_get = false;

	for (size_t i = 0; i < ARRAY_SIZE(posts); i++)
		known_post |= !strcmp(url, posts[i]);
	for (size_t i = 0; i < ARRAY_SIZE(gets); i++)
		known_get |= !strcmp(url, gets[i]);
	known_get |= !strncmp(url, "/v1/endpoint/", 13);

	if (read_only && !is_get) {
		reply_error(r, 403, "read-only", "this listener is read-only: %s is not allowed", method);
		return;
	}
	if (!known_post && !known_get) {
		reply_error(r, 404, "not-found", "no route %.128s", url);
		return;
	}
	if ((known_post && !is_post) || (known_get && !is_get)) {
		reply_error(r, 405, "method-not-allowed", "%s is not allowed on %.128s", method, url);
		return;
	}
	if (req->too_big) {
		reply_error(r, 413, "too-large", "request body larger than %u bytes", a->cfg->max_request_bytes);
		return;
	}
	if (!strcmp(url, "/v1/healthz"))
		route_healthz(a, r);
	else if (!strcmp(url, "/v1/health/modules"))
		route_modules(a, r);
	else if (!strcmp(url, "/v1/endpoint"))
		route_endpoints(a, NULL, r);
	else if (!strncmp(url, "/v1/endpoint/", 13))
		route_endpoints(a, url + 13, r);
	else if (!strcmp(url, "/v1/ipam"))
		route_ipam(a, r);
	else if (!strcmp(url, "/v1/cni/timing"))
		route_timing(a, r);
	else if (!strcmp(url, "/v1/cni/add"))
		route_add_check(a, req, true, r);
	else if (!strcmp(url, "/v1/cni/check"))
		route_add_check(a, req, false, r);
	else if (!strcmp(url, "/v1/cni/del"))
		route_del(a, req, r);
	else
		route_gc(a, req, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct listener_ctx *ctx = cls;
	struct request *req = *con_cls;
	struct reply r = { 0 };
	struct MHD_Response *resp;
	enum MHD_Result ret;
	static const char fallback[] = "{\"error\":{\"code\":\"internal\",\"message\":\"internal error\"}}";

	(void)version;
	if (!req) {
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		*con_cls = req;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!req->too_big && req->len + *upload_data_size <= ctx->agent->cfg->max_request_bytes) {
			char *p = realloc(req->body, req->len + *upload_data_size + 1);

			if (!p)
				return MHD_NO;
			memcpy(p + req->len, upload_data, *upload_data_size);
			req->len += *upload_data_size;
			p[req->len] = '\0';
			req->body = p;
		} else {
			req->too_big = true;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	agent_route(ctx->agent, ctx->read_only, method, url, req, &r);
	if (r.body)
		resp = MHD_create_response_from_buffer(strlen(r.body), r.body, MHD_RESPMEM_MUST_FREE);
	else
		resp = MHD_create_response_from_buffer(sizeof(fallback) - 1, (void *)fallback, MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(r.body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(conn, r.status ? r.status : 500, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct request *req = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (req) {
		free(req->body);
		free(req);
		*con_cls = NULL;
	}
}

static struct listener_ctx *ctx_new(struct flowsdn_agent *a, bool ro)
{
	struct listener_ctx *c = calloc(1, sizeof(*c));

	if (c) {
		c->agent = a;
		c->read_only = ro;
	}
	return c;
}

/* Binds the Unix socket under a temporary name, sets mode 0600, then
 * renames it over the configured path: the socket never exists with a
 * wider mode, and a stale socket is replaced. */
static int unix_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char tmp[sizeof(sa.sun_path)];
	struct stat st;
	int fd;

	if (strlen(path) + 16 >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		pr_err("agent: %s exists and is not a socket", path);
		return -EEXIST;
	}
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	memcpy(sa.sun_path, tmp, strlen(tmp) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(tmp);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(tmp, 0600) < 0 || listen(fd, 128) < 0 ||
	    rename(tmp, path) < 0) {
		int err = -errno;

		unlink(tmp);
		close(fd);
		return err;
	}
	return fd;
}

void flowsdn__agent_http_stop(struct flowsdn_agent *a)
{
	if (a->unix_d) {
		MHD_stop_daemon(a->unix_d);
		a->unix_d = NULL;
		unlink(a->cfg->socket);
	}
	if (a->unix_fd >= 0) {
		close(a->unix_fd);
		a->unix_fd = -1;
	}
	if (a->tcp_d) {
		MHD_stop_daemon(a->tcp_d);
		a->tcp_d = NULL;
	}
	free(a->ctx_unix);
	free(a->ctx_tcp);
	a->ctx_unix = a->ctx_tcp = NULL;
}

int flowsdn__agent_http_start(struct flowsdn_agent *a)
{
	const unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;
	int fd;

	a->ctx_unix = ctx_new(a, false);
	if (!a->ctx_unix)
		return -ENOMEM;
	fd = unix_listen(a->cfg->socket);
	if (fd < 0) {
		pr_err("agent: listening on %s: %s", a->cfg->socket, strerror(-fd));
		return -FLOWSDN_E_AGENT_LISTEN;
	}
	a->unix_fd = fd;
	a->unix_d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, a->ctx_unix, MHD_OPTION_LISTEN_SOCKET, fd,
				     MHD_OPTION_CONNECTION_LIMIT, a->cfg->max_connections,
				     MHD_OPTION_CONNECTION_TIMEOUT, a->cfg->request_timeout_s,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
				     MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
	if (!a->unix_d) {
		pr_err("agent: libmicrohttpd refused the socket %s", a->cfg->socket);
		return -FLOWSDN_E_AGENT_LISTEN;
	}
	a->unix_fd = -1; /* owned by the daemon now */
	if (a->cfg->http_listen[0]) {
		struct sockaddr_storage ss = { 0 };
		struct flowsdn_addr addr;
		uint16_t port;
		unsigned int f = flags;

		if (flowsdn__agent_parse_listen(a->cfg->http_listen, &addr, &port) < 0) {
			pr_err("agent: http-listen %s is not a loopback ADDRESS:PORT", a->cfg->http_listen);
			return -FLOWSDN_E_AGENT_LISTEN;
		}
		if (addr.family == FLOWSDN_AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

			sin->sin_family = AF_INET;
			sin->sin_port = htons(port);
			memcpy(&sin->sin_addr, addr.bytes, 4);
		} else {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons(port);
			memcpy(&sin6->sin6_addr, addr.bytes, 16);
			f |= MHD_USE_IPv6;
		}
		a->ctx_tcp = ctx_new(a, true);
		if (!a->ctx_tcp)
			return -ENOMEM;
		a->tcp_d = MHD_start_daemon(f, port, NULL, NULL, on_request, a->ctx_tcp, MHD_OPTION_SOCK_ADDR, &ss,
					    MHD_OPTION_CONNECTION_LIMIT, a->cfg->max_connections,
					    MHD_OPTION_CONNECTION_TIMEOUT, a->cfg->request_timeout_s,
					    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
					    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
		if (!a->tcp_d) {
			pr_err("agent: cannot listen on %s", a->cfg->http_listen);
			return -FLOWSDN_E_AGENT_LISTEN;
		}
	}
	return 0;
}
