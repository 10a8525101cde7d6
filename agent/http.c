/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's HTTP API (libmicrohttpd): a mode-0600 Unix socket and an
 * optional read-only loopback listener; bounded bodies, connections and
 * time; JSON errors with the domain code.  Only the core's API is used. */
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
#include <flowsdn/cni.h>
#include <flowsdn/datapath.h>
#include <flowsdn/ipam.h>
#include <flowsdn/netlink.h>

#include "conf.h"
#include "diag.h"
#include "http.h"
#include "http-server.h"
#include "json.h"
#include "log.h"
#include "util.h"

/*
 * Connections go through the front door of common/http-server.h (head
 * checks, "header-timeout-ms", "max-connections" per listener with
 * "reserved-connections" kept for GET /v1/healthz and POST /v1/cni/del),
 * then to libmicrohttpd, a thread per connection.
 */
#define HEAD_MAX 16384

struct listener {
	struct agent_http *http;
	bool read_only;
};

struct agent_http {
	struct agent_core *core;
	const struct agent_config *cfg;
	struct http_server *server;
	struct listener lis[2];
	size_t n_lis;
	bool unix_bound;
};

/* One request's body, accumulated up to the configured bound. */
struct request {
	char *body;
	size_t len;
	bool too_big;
	int64_t deadline_ms; /* the client's (AGENT_API_DEADLINE_HEADER), 0: none */
	bool bad_deadline;
};

struct reply {
	unsigned int status;
	char *body; /* JSON, owned */
};

static void reply_json(struct reply *r, unsigned int status, struct json_writer *g)
{
	r->status = status;
	if (json_writer_finish(g, &r->body, NULL) < 0) {
		r->status = 500;
		r->body = NULL;
	}
}

/* A generator for a reply (500 already set when there is none). */
static struct json_writer *reply_gen(struct reply *r)
{
	struct json_writer *g = json_writer_new(0);

	if (!g)
		r->status = 500;
	return g;
}

/* A reply that is one object holding the list @key: the generator with
 * {"@key":[ open (NULL, 500 set, when there is none); reply_list_close()
 * closes it and replies 200. */
static struct json_writer *reply_list_open(struct reply *r, const char *key)
{
	struct json_writer *g = reply_gen(r);

	if (g) {
		jw_object_open(g);
		jw_string(g, key);
		jw_array_open(g);
	}
	return g;
}

static void reply_list_close(struct reply *r, struct json_writer *g)
{
	jw_array_close(g);
	jw_object_close(g);
	reply_json(r, 200, g);
}

/* An error reply: the domain code @err (negative) with its name and
 * number, the HTTP status that goes with it. */
_printf_(4, 5) static void reply_error(struct reply *r, unsigned int status, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	struct json_writer *g = reply_gen(r);

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!g)
		return;
	agent_api_error_gen(g, err, msg);
	reply_json(r, status, g);
}

static void timing_gen(struct json_writer *g, const char *name, const struct agent_timing *t)
{
	char buf[32];

	jw_string(g, name);
	jw_object_open(g);
	jw_kv_int(g, "count", (long long)t->count);
	jw_kv_int(g, "errors", (long long)t->errors);
	jw_kv_int(g, "samples", (long long)t->samples);
	if (t->samples) {
		snprintf(buf, sizeof(buf), "%.3f", t->median_ms);
		jw_string(g, "medianMs");
		jw_number(g, buf, strlen(buf));
		snprintf(buf, sizeof(buf), "%.3f", t->p95_ms);
		jw_string(g, "p95Ms");
		jw_number(g, buf, strlen(buf));
		snprintf(buf, sizeof(buf), "%.3f", t->max_ms);
		jw_string(g, "maxMs");
		jw_number(g, buf, strlen(buf));
	}
	jw_object_close(g);
}

/* The HTTP status of a failed call (the body carries the domain code). */
static unsigned int status_of(int err)
{
	switch (-err) {
	case FLOWSDN_E_NL_EXISTS:
	case FLOWSDN_E_NL_MISMATCH:
	case FLOWSDN_E_BPF_ATTACH:
	case FLOWSDN_E_BPF_IFACE_MISMATCH:
		return 409;
	case FLOWSDN_E_NL_NETNS:
		return 422;
	case FLOWSDN_E_IPAM_EXHAUSTED:
	case FLOWSDN_E_IPAM_NO_POOL:
		return 503;
	case FLOWSDN_E_AGENT_NOT_FOUND:
	case FLOWSDN_E_NL_NOT_FOUND:
		return 404;
	case FLOWSDN_E_AGENT_EXISTS:
		return 409;
	case FLOWSDN_E_AGENT_HOST_NETNS:
		return 422;
	case FLOWSDN_E_AGENT_DEADLINE:
		return 504;
	case EINVAL:
	case FLOWSDN_E_AGENT_REFUSED:
		return 400;
	default:
		return 500;
	}
}

static void reply_failure(struct reply *r, int err, const struct diag *diag)
{
	const char *msg = agent_diag_message(diag);

	reply_error(r, status_of(err), err, "%s", msg[0] ? msg : agent_api_strerror(err));
}

/* A diag for one request; NULL when out of memory (the reply then names
 * the code only). */
static struct diag *request_diag(void)
{
	struct diag *d = NULL;

	return diag_new(&d) < 0 ? NULL : d;
}

static void endpoint_reply(struct reply *r, const struct agent_api_endpoint *e)
{
	struct json_writer *g = reply_gen(r);

	if (!g)
		return;
	agent_api_endpoint_gen(g, e);
	reply_json(r, 200, g);
}

static void count_reply(struct reply *r, const char *key, int n)
{
	struct json_writer *g = reply_gen(r);

	if (!g)
		return;
	jw_object_open(g);
	jw_kv_int(g, key, n);
	jw_object_close(g);
	reply_json(r, 200, g);
}

/* The body of @verb (agent_http_body_read()); an error reply when it is
 * refused. */
static bool read_body(enum agent_http_verb verb, const struct request *req, struct agent_http_body *b,
		      struct reply *r)
{
	struct diag *diag = request_diag();
	unsigned int status = 500;
	int err = agent_http_body_read(verb, req->body, req->len, b, &status, diag);

	if (err < 0) {
		const char *msg = agent_diag_message(diag);

		reply_error(r, status, err, "%s", msg[0] ? msg : agent_api_strerror(err));
	}
	diag_free(diag);
	return err == 0;
}

static void route_add_check(struct agent_core *core, const struct request *req, bool add, struct reply *r)
{
	struct agent_http_body b;
	struct agent_api_endpoint e;
	struct diag *diag;
	int err;

	if (!read_body(add ? AGENT_HTTP_ADD : AGENT_HTTP_CHECK, req, &b, r))
		return;
	diag = request_diag();
	b.rq.deadline_ms = req->deadline_ms;
	err = add ? agent_core_add(core, &b.rq, &e, diag) : agent_core_check(core, &b.rq, &e, diag);
	if (err == 0)
		endpoint_reply(r, &e);
	else
		reply_failure(r, err, diag);
	agent_http_body_clear(&b);
	diag_free(diag);
}

/* The answer of a verb that removes: how many, or the failure; then the
 * request's body and diag are done with. */
static void removed_reply(struct reply *r, int removed, struct diag *diag, struct agent_http_body *b)
{
	if (removed < 0)
		reply_failure(r, removed, diag);
	else
		count_reply(r, "removed", removed);
	agent_http_body_clear(b);
	diag_free(diag);
}

static void route_del(struct agent_core *core, const struct request *req, struct reply *r)
{
	struct agent_http_body b;
	struct diag *diag;
	int err;

	if (!read_body(AGENT_HTTP_DEL, req, &b, r))
		return;
	diag = request_diag();
	err = agent_core_del(core, b.rq.container_id, b.rq.ifname, req->deadline_ms, diag);
	/* A DEL queued while this agent was starting is picked up now. */
	if (err >= 0)
		(void)agent_core_replay_queue(core);
	removed_reply(r, err, diag, &b);
}

static void route_gc(struct agent_core *core, const struct request *req, struct reply *r)
{
	struct agent_http_body b;
	struct diag *diag;
	int removed;

	if (!read_body(AGENT_HTTP_GC, req, &b, r))
		return;
	diag = request_diag();
	removed = agent_core_gc(core, b.ids, b.ifnames, b.n, req->deadline_ms, diag);
	removed_reply(r, removed, diag, &b);
}

static void route_healthz(struct agent_core *core, struct reply *r)
{
	struct json_writer *g = reply_gen(r);
	struct agent_status st;

	if (!g)
		return;
	agent_core_status(core, &st);
	jw_object_open(g);
	jw_kv_string(g, "status", "ok");
	jw_kv_string(g, "version", flowsdn_version());
	jw_kv_int(g, "uptimeSeconds", (long long)(time(NULL) - st.started));
	jw_kv_int(g, "endpoints", (long long)st.endpoints);
	jw_kv_int(g, "restoredEndpoints", st.restored);
	jw_kv_int(g, "replayedDeletes", st.replayed);
	jw_kv_int(g, "refusedEndpoints", st.refused);
	jw_kv_int(g, "deletingEndpoints", (long long)st.deleting);
	jw_object_close(g);
	reply_json(r, 200, g);
}

static void module_gen(struct json_writer *g, const char *name, const char *status, const char *detail)
{
	jw_object_open(g);
	jw_kv_string(g, "name", name);
	jw_kv_string(g, "status", status);
	if (detail)
		jw_kv_string(g, "detail", detail);
	jw_object_close(g);
}

static void route_modules(struct agent_core *core, struct reply *r)
{
	struct json_writer *g = reply_list_open(r, "modules");
	struct agent_status st;

	if (!g)
		return;
	agent_core_status(core, &st);
	module_gen(g, "api", "ok", NULL);
	module_gen(g, "ipam", st.ipam_err < 0 ? "degraded" : "ok", st.ipam_err < 0 ? flowsdn_strerror(st.ipam_err) : NULL);
	if (!st.datapath)
		module_gen(g, "datapath", "disabled", "\"datapath\": false in the configuration");
	else
		module_gen(g, "datapath", "ok", st.datapath_mode);
	module_gen(g, "state", st.state_ok ? "ok" : "degraded", NULL);
	{
		const struct agent_config *cfg = agent_core_config(core);

		if (cfg->n_uplinks)
			module_gen(g, "uplinks", st.uplinks == cfg->n_uplinks ? "ok" : "degraded", NULL);
	}
	reply_list_close(r, g);
}

/* An endpoint id of a path: decimal 1..UINT32_MAX followed by exactly
 * @rest ("" or "/translation").  false after a 400 reply. */
static bool endpoint_id_parse(const char *text, const char *rest, uint32_t *ret, struct reply *r)
{
	unsigned long id;
	char *end;

	errno = 0;
	id = strtoul(text, &end, 10);
	if (errno || strcmp(end, rest) || text[0] < '1' || text[0] > '9' || id > UINT32_MAX) {
		reply_error(r, 400, -FLOWSDN_E_AGENT_REFUSED, "endpoint id \"%.32s\" is not a number", text);
		return false;
	}
	*ret = (uint32_t)id;
	return true;
}

/* PUT /v1/endpoint/{id}/translation */
static void route_translation(struct agent_core *core, const char *id_text, const struct request *req,
			      struct reply *r)
{
	enum flowsdn_cni_svc_translation svc;
	struct agent_api_endpoint e;
	unsigned int status = 500;
	struct diag *diag;
	uint32_t id;
	int err;

	if (!endpoint_id_parse(id_text, "/translation", &id, r))
		return;
	diag = request_diag();
	err = agent_http_translation_read(req->body, req->len, &svc, &status, diag);
	if (err < 0) {
		const char *msg = agent_diag_message(diag);

		reply_error(r, status, err, "%s", msg[0] ? msg : agent_api_strerror(err));
	} else {
		err = agent_core_set_translation(core, id, svc, &e, diag);
		if (err == 0)
			endpoint_reply(r, &e);
		else
			reply_failure(r, err, diag);
	}
	diag_free(diag);
}

static void route_endpoints(struct agent_core *core, const char *id_text, struct reply *r)
{
	struct agent_api_endpoint *eps = NULL, one;
	uint32_t id = 0;
	size_t n = 0;
	struct json_writer *g;
	int err;

	if (id_text) {
		if (!endpoint_id_parse(id_text, "", &id, r))
			return;
		err = agent_core_endpoint(core, id, &one);
		if (err < 0) {
			reply_error(r, status_of(err), err, "no endpoint %u", id);
			return;
		}
		endpoint_reply(r, &one);
		return;
	}
	err = agent_core_endpoints(core, &eps, &n);
	if (err < 0) {
		reply_error(r, 500, err, "listing endpoints");
		return;
	}
	g = reply_list_open(r, "endpoints");
	if (!g) {
		free(eps);
		return;
	}
	for (size_t i = 0; i < n; i++)
		agent_api_endpoint_gen(g, &eps[i]);
	free(eps);
	reply_list_close(r, g);
}

static void gen_prefix(struct json_writer *g, const char *key, const struct flowsdn_prefix *p)
{
	char buf[FLOWSDN_PREFIX_STRLEN];

	if (flowsdn_prefix_format(p, buf, sizeof(buf)) >= 0)
		jw_kv_string(g, key, buf);
}

static void route_ipam(struct agent_core *core, struct reply *r)
{
	struct flowsdn_ipam_pool_summary s[AGENT_MAX_POOLS];
	struct flowsdn_ipam_allocation *alloc = NULL;
	size_t n = 0, n_alloc = 0;
	struct json_writer *g;
	int err;

	err = agent_core_ipam(core, s, AGENT_MAX_POOLS, &n, &alloc, &n_alloc);
	if (err < 0) {
		reply_error(r, 500, err, "ipam: %s", flowsdn_strerror(err));
		return;
	}
	g = reply_list_open(r, "pools");
	if (!g) {
		free(alloc);
		return;
	}
	for (size_t i = 0; i < n && i < AGENT_MAX_POOLS; i++) {
		char gw[FLOWSDN_ADDR_STRLEN];

		jw_object_open(g);
		gen_prefix(g, "cidr", &s[i].pool);
		if (flowsdn_addr_format(&s[i].gateway, gw, sizeof(gw)) >= 0)
			jw_kv_string(g, "gateway", gw);
		jw_kv_int(g, "size", (long long)s[i].size);
		jw_kv_int(g, "reserved", (long long)s[i].reserved);
		jw_kv_int(g, "used", (long long)s[i].used);
		jw_kv_int(g, "free", (long long)s[i].free);
		jw_object_close(g);
	}
	jw_array_close(g);
	jw_string(g, "allocations");
	jw_array_open(g);
	for (size_t i = 0; i < n_alloc; i++) {
		char buf[FLOWSDN_ADDR_STRLEN];

		jw_object_open(g);
		if (flowsdn_addr_format(&alloc[i].addr, buf, sizeof(buf)) >= 0)
			jw_kv_string(g, "address", buf);
		jw_kv_string(g, "containerID", alloc[i].container_id);
		jw_kv_string(g, "ifname", alloc[i].ifname);
		gen_prefix(g, "pool", &alloc[i].pool);
		jw_object_close(g);
	}
	jw_array_close(g);
	jw_object_close(g);
	free(alloc);
	reply_json(r, 200, g);
}

/* GET /v1/node/routes: Kubernetes mode's routes to the other nodes. */
static void route_node_routes(struct agent_core *core, struct reply *r)
{
	char *json = NULL;
	int err = agent_core_node_routes(core, &json);

	if (err == -FLOWSDN_E_AGENT_NOT_FOUND) {
		reply_error(r, 404, err, "the agent is not in Kubernetes mode (flowsdn-agent --kubernetes)");
		return;
	}
	if (err < 0) {
		reply_error(r, 500, err, "routes: %s", agent_api_strerror(err));
		return;
	}
	r->status = 200;
	r->body = json;
}

static void route_timing(struct agent_core *core, struct reply *r)
{
	struct json_writer *g = reply_gen(r);
	struct agent_timing add, del;

	if (!g)
		return;
	agent_core_timing(core, AGENT_VERB_ADD, &add);
	agent_core_timing(core, AGENT_VERB_DEL, &del);
	jw_object_open(g);
	timing_gen(g, "add", &add);
	timing_gen(g, "del", &del);
	jw_object_close(g);
	reply_json(r, 200, g);
}

/* /v1/service and /v1/service/{id}: GET, PUT, DELETE (agent/services.h).
 * A refused body answers 400 with the field at fault in "error.field". */
static void route_service(struct agent_core *core, const char *method, const char *id, const struct request *req,
			  struct reply *r)
{
	struct agent_services *svcs = agent_core_services(core);
	struct json_writer *g;
	struct diag *diag;
	int err;

	if (!strcmp(method, "GET") || !strcmp(method, "HEAD")) {
		g = reply_gen(r);
		if (!g)
			return;
		err = agent_services_get(svcs, id, g);
		if (err == 0) {
			reply_json(r, 200, g);
			return;
		}
		json_writer_free(g);
		reply_error(r, status_of(err), err, "no service \"%.64s\"", id ? id : "");
		return;
	}
	diag = request_diag();
	if (!strcmp(method, "PUT")) {
		g = reply_gen(r);
		err = g ? agent_services_put(svcs, id, req->body ? req->body : "", req->len, g, diag) : -ENOMEM;
		if (err == 0) {
			reply_json(r, 200, g);
			diag_free(diag);
			return;
		}
		json_writer_free(g);
	} else {
		err = agent_services_delete(svcs, id, diag);
		if (err == 0) {
			count_reply(r, "removed", 1);
			diag_free(diag);
			return;
		}
	}
	{
		const struct diag_entry *e = diag_first_error(diag);
		struct json_writer *eg = reply_gen(r);

		if (eg) {
			agent_api_error_field_gen(eg, err, e && e->message[0] ? e->message : agent_api_strerror(err),
						  e ? e->path : NULL);
			reply_json(r, err == -FLOWSDN_E_AGENT_EXISTS ? 409 : status_of(err), eg);
		}
	}
	diag_free(diag);
}

/* Routes a complete request. */
static void agent_route(struct agent_http *h, bool read_only, const char *method, const char *url,
			const struct request *req, struct reply *r)
{
	static const char *const posts[] = { "/v1/cni/add", "/v1/cni/check", "/v1/cni/del", "/v1/cni/gc" };
	static const char *const gets[] = { "/v1/healthz", "/v1/health/modules", "/v1/endpoint", "/v1/ipam",
					    "/v1/ip", "/v1/node/routes", "/v1/cni/timing" };
	bool is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	bool is_post = !strcmp(method, "POST"), is_put = !strcmp(method, "PUT");
	bool known_post = false, known_get = false, known_put = false;
	struct agent_core *core = h->core;
	size_t url_len = strlen(url);

	for (size_t i = 0; i < ARRAY_SIZE(posts); i++)
		known_post |= !strcmp(url, posts[i]);
	for (size_t i = 0; i < ARRAY_SIZE(gets); i++)
		known_get |= !strcmp(url, gets[i]);
	/* /v1/endpoint/{id}/translation: PUT; /v1/endpoint/{id}: GET. */
	known_put = !strncmp(url, "/v1/endpoint/", 13) && url_len > 25 && !strcmp(url + url_len - 12, "/translation");
	known_get |= !known_put && !strncmp(url, "/v1/endpoint/", 13);
	if (!strcmp(url, "/v1/service") || !strncmp(url, "/v1/service/", 12)) {
		bool one = url[11] == '/';

		if (read_only && !is_get) {
			reply_error(r, 403, -FLOWSDN_E_AGENT_REFUSED, "this listener is read-only: %s is not allowed",
				    method);
		} else if (!is_get && (!one || (strcmp(method, "PUT") && strcmp(method, "DELETE")))) {
			reply_error(r, 405, -FLOWSDN_E_AGENT_REFUSED, "%s is not allowed on %.128s", method, url);
		} else if (req->too_big) {
			reply_error(r, 413, -FLOWSDN_E_AGENT_REFUSED, "request body larger than %u bytes",
				    h->cfg->max_request_bytes);
		} else {
			route_service(core, method, one ? url + 12 : NULL, req, r);
		}
		return;
	}

	if (read_only && !is_get) {
		reply_error(r, 403, -FLOWSDN_E_AGENT_REFUSED, "this listener is read-only: %s is not allowed", method);
		return;
	}
	if (agent_http_policy_route(core, method, url, req->too_big ? NULL : req->body, req->len, &r->status, &r->body))
		return;
	if (!known_post && !known_get && !known_put) {
		reply_error(r, 404, -FLOWSDN_E_AGENT_NOT_FOUND, "no route %.128s", url);
		return;
	}
	if ((known_post && !is_post) || (known_get && !is_get) || (known_put && !is_put)) {
		reply_error(r, 405, -FLOWSDN_E_AGENT_REFUSED, "%s is not allowed on %.128s", method, url);
		return;
	}
	if (req->bad_deadline) {
		reply_error(r, 400, -FLOWSDN_E_AGENT_REFUSED, "%s: not a CLOCK_MONOTONIC time in milliseconds",
			    AGENT_API_DEADLINE_HEADER);
		return;
	}
	if (req->too_big) {
		reply_error(r, 413, -FLOWSDN_E_AGENT_REFUSED, "request body larger than %u bytes",
			    h->cfg->max_request_bytes);
		return;
	}
	if (!strcmp(url, "/v1/healthz"))
		route_healthz(core, r);
	else if (!strcmp(url, "/v1/health/modules"))
		route_modules(core, r);
	else if (!strcmp(url, "/v1/endpoint"))
		route_endpoints(core, NULL, r);
	else if (known_put)
		route_translation(core, url + 13, req, r);
	else if (!strncmp(url, "/v1/endpoint/", 13))
		route_endpoints(core, url + 13, r);
	else if (!strcmp(url, "/v1/ipam") || !strcmp(url, "/v1/ip"))
		route_ipam(core, r);
	else if (!strcmp(url, "/v1/node/routes"))
		route_node_routes(core, r);
	else if (!strcmp(url, "/v1/cni/timing"))
		route_timing(core, r);
	else if (!strcmp(url, "/v1/cni/add"))
		route_add_check(core, req, true, r);
	else if (!strcmp(url, "/v1/cni/check"))
		route_add_check(core, req, false, r);
	else if (!strcmp(url, "/v1/cni/del"))
		route_del(core, req, r);
	else
		route_gc(core, req, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct listener *ctx = cls;
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
		{
			const char *dl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, AGENT_API_DEADLINE_HEADER);
			char *end;

			if (dl) {
				errno = 0;
				req->deadline_ms = strtoll(dl, &end, 10);
				req->bad_deadline = errno || end == dl || *end || req->deadline_ms <= 0;
			}
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!req->too_big && req->len + *upload_data_size <= ctx->http->cfg->max_request_bytes) {
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
	agent_route(ctx->http, ctx->read_only, method, url, req, &r);
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

/* The door's answers: the agent's error body with the domain code. */
static char *door_refusal(unsigned int status, const char *msg)
{
	struct json_writer *g = json_writer_new(0);
	char *body = NULL;

	(void)status;
	if (!g)
		return NULL;
	agent_api_error_gen(g, -FLOWSDN_E_AGENT_REFUSED, msg);
	if (json_writer_finish(g, &body, NULL) < 0)
		return NULL;
	return body;
}

/* The requests the reserve keeps room for. */
static bool door_reserved(const char *method, const char *path)
{
	return (!strcmp(method, "GET") && !strcmp(path, "/v1/healthz")) ||
	       (!strcmp(method, "POST") && !strcmp(path, "/v1/cni/del"));
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

/* The directory of the socket @path, created when missing. */
static int mkdir_parent(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	return util_mkdir_p(dir, 0755);
}

/* A loopback TCP listener for "http-listen". */
static int tcp_listen(const char *text)
{
	struct sockaddr_storage ss = { 0 };
	struct flowsdn_addr addr;
	socklen_t len;
	uint16_t port;
	int fd, one = 1;

	if (agent_config_parse_listen(text, &addr, &port) < 0)
		return -EINVAL;
	if (addr.family == FLOWSDN_AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr.bytes, 4);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, addr.bytes, 16);
		len = sizeof(*sin6);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

void agent_http_stop(struct agent_http *h)
{
	if (!h)
		return;
	http_server_free(h->server);
	if (h->unix_bound)
		unlink(h->cfg->socket);
	free(h);
}

/* The listening socket @fd, served with the routes (read-only or not). */
static int listener_start(struct agent_http *h, int fd, bool read_only)
{
	struct listener *l = &h->lis[h->n_lis++];

	l->http = h;
	l->read_only = read_only;
	return http_server_listen(h->server, fd, l) < 0 ? -FLOWSDN_E_AGENT_LISTEN : 0;
}

static int http_start(struct agent_http *h)
{
	const struct agent_config *cfg = h->cfg;
	struct http_server_opts so = {
		.sz = sizeof(so),
		.max_connections = cfg->max_connections,
		.reserved_connections = cfg->reserved_connections,
		.header_timeout_ms = cfg->header_timeout_ms,
		.idle_timeout_s = cfg->request_timeout_s,
		.max_header_bytes = HEAD_MAX,
		.handler = on_request,
		.completed = on_completed,
		.reserved = door_reserved,
		.refusal = door_refusal,
	};
	int fd, err;

	err = http_server_new(&so, &h->server);
	if (err < 0)
		return err == -ENOMEM ? err : -FLOWSDN_E_AGENT_LISTEN;
	err = mkdir_parent(cfg->socket);
	if (err < 0) {
		pr_err("agent: creating the directory of %s: %s", cfg->socket, strerror(-err));
		return -FLOWSDN_E_AGENT_LISTEN;
	}
	fd = unix_listen(cfg->socket);
	if (fd < 0) {
		pr_err("agent: listening on %s: %s", cfg->socket, strerror(-fd));
		return -FLOWSDN_E_AGENT_LISTEN;
	}
	h->unix_bound = true;
	if (listener_start(h, fd, false) < 0) {
		pr_err("agent: libmicrohttpd refused to start for %s", cfg->socket);
		return -FLOWSDN_E_AGENT_LISTEN;
	}
	if (cfg->http_listen[0]) {
		fd = tcp_listen(cfg->http_listen);
		if (fd < 0) {
			pr_err("agent: cannot listen on %s: %s", cfg->http_listen,
			       fd == -EINVAL ? "not a loopback ADDRESS:PORT" : strerror(-fd));
			return -FLOWSDN_E_AGENT_LISTEN;
		}
		if (listener_start(h, fd, true) < 0) {
			pr_err("agent: libmicrohttpd refused to start for %s", cfg->http_listen);
			return -FLOWSDN_E_AGENT_LISTEN;
		}
	}
	return http_server_start(h->server);
}

int agent_http_start(struct agent_core *core, struct agent_http **ret)
{
	struct agent_http *h;
	int err;

	if (!core || !ret)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->core = core;
	h->cfg = agent_core_config(core);
	err = http_start(h);
	if (err < 0) {
		agent_http_stop(h);
		return err;
	}
	*ret = h;
	return 0;
}
