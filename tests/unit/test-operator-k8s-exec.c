/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Web Shell and the logs route in Kubernetes mode: the provider/v1
 * routes (op_provider_handle()) -> the service's Pods listed by label
 * (operator/k8s-pods.c) -> pods/exec and pods/log on the fake API server
 * (tests/k8s-fake.c), whose exec endpoint runs the commands for real.
 * The client's side of the WebSocket is written by hand over a socket
 * pair, as libflash's exec client speaks it.  Covered: replica order and
 * readiness, the label selector sent, the exact argv, stdin and its end,
 * the exit code in STATUS, a terminal's initial size, the time limit, the
 * session cap, 404/409 for replicas that are absent or not ready, no
 * token of the cluster in what the client receives, the logs route's
 * lines (per replica, since, merged by time), and libflash's client
 * (flashctl exec and logs) over the operator's HTTP listener.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>

#include "helpers.h"
#include "json.h"
#include "k8s-fake.h"
#include "k8s-reconcile.h"
#include "k8s.h"
#include "operator-helpers.h"
#include "provider.h"
#include "http.h"
#include "store.h"
#include "util.h"
#include "websocket.h"

#define CLUSTER_TOKEN "cluster-secret-token-0123456789"

/* Four Pods of the service: web-a and web-b ready (web-a older), web-c
 * not ready, stray without a ReplicaSet owner (not the Deployment's). */
static char *pod_list(const char *id)
{
	char *s = NULL;
	static const char fmt[] =
		"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"100\"},\"items\":["
		"{\"metadata\":{\"name\":\"web-b\",\"namespace\":\"org-a\",\"creationTimestamp\":\"2026-12-02T10:00:01Z\","
		"\"labels\":{\"flash.heterocloud.io/service\":\"%s\"},"
		"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s-7d\",\"uid\":\"u1\","
		"\"controller\":true}]},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
		"{\"metadata\":{\"name\":\"stray\",\"namespace\":\"org-a\",\"creationTimestamp\":\"2026-12-02T09:00:00Z\"},"
		"\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
		"{\"metadata\":{\"name\":\"web-c\",\"namespace\":\"org-a\",\"creationTimestamp\":\"2026-12-02T10:00:02Z\","
		"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s-7d\",\"uid\":\"u1\","
		"\"controller\":true}]},\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}},"
		"{\"metadata\":{\"name\":\"web-a\",\"namespace\":\"org-a\",\"creationTimestamp\":\"2026-12-02T10:00:00Z\","
		"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s-7d\",\"uid\":\"u1\","
		"\"controller\":true}]},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]}";

	cr_assert(asprintf(&s, fmt, id, id, id, id) > 0);
	return s;
}

struct env {
	char dir[64];
	struct op_store *store;
	struct op_metrics *metrics;
	struct op_provider *prov;
	struct flash_auth_signer *signer;
	struct flash_auth_keyset *keys;
	struct k8s_fake *fake;
	char id[64];
	char *pods;
};

static struct env *the_env;

static int new_client(void *ctx, struct k8s_client **ret)
{
	struct env *e = ctx;
	struct k8s_config cfg = { .server = (char *)k8s_fake_url(e->fake), .token = (char *)CLUSTER_TOKEN };
	struct k8s_client_opts co = { .sz = sizeof(co), .max_attempts = 1 };

	return k8s_client_new(&cfg, &co, ret);
}

static struct op_response call(struct env *e, const char *method, const char *path, enum flash_auth_action action,
			       uint64_t gen, const char *body, const struct op_request *extra)
{
	struct op_response r;
	char *tok = test_mint(e->signer, "org-a", "p1", action, gen), hdr[9000];
	struct op_request rq = { .method = method, .path = path, .authorization = hdr, .body = body ? body : "",
				 .body_len = body ? strlen(body) : 0 };

	if (extra) {
		rq.query = extra->query;
		rq.query_ctx = extra->query_ctx;
		rq.header = extra->header;
		rq.query_all = extra->query_all;
	}
	snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	op_provider_handle(e->prov, &rq, &r);
	free(tok);
	return r;
}

static void env_up(struct env *e, unsigned int limit_s, unsigned int max_sessions)
{
	char path[128], *spec = test_spec("test.invalid/app:1000", 1, 1, 1), *body = NULL;
	struct k8s_fake_opts fo = { .sz = sizeof(fo), .token = CLUSTER_TOKEN };
	unsigned char pk[32];
	struct op_response r;
	struct json_value *v;

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "/tmp/test-op-k8s-exec.XXXXXX");
	cr_assert(mkdtemp(e->dir));
	snprintf(path, sizeof(path), "%s/flash.db", e->dir);
	ASSERT_OK(op_store_open(path, &e->store, NULL, 0), "store");
	ASSERT_OK(op_metrics_new(&e->metrics), "metrics");
	ASSERT_OK(flash_auth_signer_generate("k1", &e->signer), "signer");
	ASSERT_OK(flash_auth_signer_public_key(e->signer, pk), "pk");
	ASSERT_OK(flash_auth_keyset_new(&e->keys), "keyset");
	ASSERT_OK(flash_auth_keyset_add(e->keys, "k1", pk), "add");
	{
		struct op_provider_opts o = {
			.sz = sizeof(o), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE, .keys = e->keys,
			.store = e->store, .metrics = e->metrics, .image = &test_image_ops,
			.exec_limit_s = limit_s, .exec_max_sessions = max_sessions,
		};

		ASSERT_OK(op_provider_new(&o, &e->prov), "provider");
	}
	snprintf(path, sizeof(path), "%s/pods", e->dir);
	fo.exec_root = path;
	ASSERT_OK(k8s_fake_new(&fo, &e->fake), "fake");
	op_provider_set_k8s(e->prov, new_client, e);
	cr_assert(asprintf(&body, "{\"name\":\"web\",\"spec\":%s}", spec) > 0);
	r = call(e, "POST", "/provider/v1/services", FLASH_AUTH_ACTION_CREATE, 1, body, NULL);
	cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
	cr_assert(json_parse(r.body, r.body_len, NULL, &v, NULL) == 0);
	snprintf(e->id, sizeof(e->id), "%s", json_string_value(json_get(v, "id")));
	json_free(v);
	op_response_clear(&r);
	e->pods = pod_list(e->id);
	free(spec);
	free(body);
	the_env = e;
}

static void env_down(struct env *e)
{
	char cmd[128];

	op_provider_stop_exec(e->prov);
	op_provider_free(e->prov);
	k8s_fake_free(e->fake);
	op_metrics_free(e->metrics);
	op_store_close(e->store);
	flash_auth_signer_free(e->signer);
	flash_auth_keyset_free(e->keys);
	free(e->pods);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	cr_assert(system(cmd) == 0);
}

static void push_pods(struct env *e)
{
	struct k8s_fake_step s = { .method = "GET", .path = "/api/v1/namespaces/org-a/pods", .body = e->pods };

	ASSERT_OK(k8s_fake_push(e->fake, &s), "pod list");
}

/* ---------------------------------------------------------------- requests */

struct req {
	const char *q[16][2];
	size_t nq;
	const char *h[8][2];
	size_t nh;
};

static const char *req_query(void *ctx, const char *key)
{
	struct req *r = ctx;

	for (size_t i = 0; i < r->nq; i++)
		if (!strcmp(r->q[i][0], key))
			return r->q[i][1];
	return NULL;
}

static const char *req_header(void *ctx, const char *name)
{
	struct req *r = ctx;

	for (size_t i = 0; i < r->nh; i++)
		if (!strcasecmp(r->h[i][0], name))
			return r->h[i][1];
	return NULL;
}

static size_t req_query_all(void *ctx, const char *key, const char **out, size_t max)
{
	struct req *r = ctx;
	size_t n = 0;

	for (size_t i = 0; i < r->nq; i++)
		if (!strcmp(r->q[i][0], key)) {
			if (n < max)
				out[n] = r->q[i][1];
			n++;
		}
	return n;
}

static void req_q(struct req *r, const char *k, const char *v)
{
	r->q[r->nq][0] = k;
	r->q[r->nq++][1] = v;
}

static struct op_response exec_call(struct env *e, struct req *rq)
{
	struct op_request x = { .query = req_query, .query_ctx = rq, .header = req_header, .query_all = req_query_all };
	char path[128];

	rq->h[0][0] = "Upgrade";
	rq->h[0][1] = "websocket";
	rq->h[1][0] = "Connection";
	rq->h[1][1] = "Upgrade";
	rq->h[2][0] = "Sec-WebSocket-Version";
	rq->h[2][1] = "13";
	rq->h[3][0] = "Sec-WebSocket-Key";
	rq->h[3][1] = "dGhlIHNhbXBsZSBub25jZQ==";
	rq->h[4][0] = "Sec-WebSocket-Protocol";
	rq->h[4][1] = FLASH_CLIENT_EXEC_PROTOCOL;
	rq->nh = 5;
	snprintf(path, sizeof(path), "/provider/v1/services/%s/exec", e->id);
	return call(e, "GET", path, FLASH_AUTH_ACTION_EXEC, 0, NULL, &x);
}

/* ---------------------------------------------------------------- sessions */

struct sess {
	int sv[2], done[2];
	struct ws_conn *in;
	struct util_buf out, err, all;
	char status[512];
};

static void on_done(void *ctx)
{
	struct sess *s = ctx;

	if (write(s->done[1], "d", 1) < 0)
		cr_log_warn("done pipe");
}

static void sess_start(struct sess *s, struct op_response *r)
{
	memset(s, 0, sizeof(*s));
	cr_assert_eq(r->status, 101, "%d %s", r->status, r->body);
	cr_assert_not_null(r->upgrade, "a session reserved");
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s->sv), 0);
	cr_assert_eq(pipe2(s->done, O_CLOEXEC), 0);
	ASSERT_OK(ws_conn_new(false, 1 << 20, &s->in), "parser");
	ASSERT_OK(op_shell_start(r->upgrade, s->sv[1], NULL, 0, on_done, s), "start");
	r->upgrade = NULL;
}

static void sess_send(struct sess *s, const void *data, size_t len)
{
	uint8_t buf[1024];
	long n = ws_frame_encode(WS_OP_BINARY, true, true, data, len, buf, sizeof(buf));

	cr_assert(n > 0);
	cr_assert_eq(write(s->sv[0], buf, (size_t)n), n);
}

/* Reads until the close frame (within @ms); the outputs and STATUS kept.
 * Returns the close code. */
static int sess_run(struct sess *s, int ms)
{
	int64_t end = util_mono_ms() + ms;

	for (;;) {
		struct ws_message m;
		uint8_t buf[4096];
		struct pollfd p = { .fd = s->sv[0], .events = POLLIN };
		int r = ws_conn_next(s->in, &m);
		ssize_t n;

		if (r == 1) {
			if (m.opcode == WS_OP_CLOSE)
				return m.close_code;
			if (m.opcode != WS_OP_BINARY || m.len < 1)
				continue;
			(void)util_buf_append(&s->all, m.data + 1, m.len - 1, 1 << 20);
			if (m.data[0] == FLASH_EXEC_STDOUT)
				(void)util_buf_append(&s->out, m.data + 1, m.len - 1, 1 << 20);
			else if (m.data[0] == FLASH_EXEC_STDERR)
				(void)util_buf_append(&s->err, m.data + 1, m.len - 1, 1 << 20);
			else if (m.data[0] == FLASH_EXEC_STATUS)
				snprintf(s->status, sizeof(s->status), "%.*s", (int)m.len - 1, m.data + 1);
			continue;
		}
		cr_assert_eq(r, 0, "the session's frames parse: %s", ws_conn_error(s->in));
		cr_assert_lt(util_mono_ms(), end, "the session ended in time");
		if (poll(&p, 1, 100) == 0)
			continue;
		n = read(s->sv[0], buf, sizeof(buf));
		if (n <= 0)
			return -1;
		ASSERT_OK(ws_conn_feed(s->in, buf, (size_t)n), "feed");
	}
}

static void sess_end(struct sess *s)
{
	struct pollfd p = { .fd = s->done[0], .events = POLLIN };

	cr_assert_eq(poll(&p, 1, 10000), 1, "the session let go of its connection");
	ws_conn_free(s->in);
	close(s->sv[0]);
	close(s->sv[1]);
	close(s->done[0]);
	close(s->done[1]);
	free(s->out.p);
	free(s->err.p);
	free(s->all.p);
}

static const char *str(struct util_buf *b)
{
	if (util_buf_append(b, "", 1, 1 << 21) < 0)
		return "";
	b->len--;
	return b->p;
}

/* ---------------------------------------------------------------- tests */

Test(k8s_exec_route, pods_in_replica_order)
{
	struct env e;
	struct k8s_client *c = NULL;
	struct op_k8s_pod *pods = NULL;
	struct k8s_fake_request rq = { 0 };
	char ns[64], sel[512];
	size_t n = 0;

	env_up(&e, 0, 0);
	push_pods(&e);
	ASSERT_OK(new_client(&e, &c), "client");
	ASSERT_OK(op_k8s_service_pods(c, "org-a", "p1", e.id, false, &pods, &n, ns, sizeof(ns), NULL), "pods");
	cr_assert_eq(n, 3, "the stray Pod (no ReplicaSet owner) left out");
	ASSERT_STREQ(pods[0].name, "web-a", "oldest first");
	ASSERT_STREQ(pods[1].name, "web-b", "then by creation");
	ASSERT_STREQ(pods[2].name, "web-c", "not ready, still replica 2");
	cr_assert(pods[0].ready && pods[1].ready && !pods[2].ready, "readiness");
	ASSERT_STREQ(ns, "org-a", "the organization's namespace");
	ASSERT_OK(k8s_fake_request_get(e.fake, k8s_fake_requests(e.fake) - 1, &rq), "request");
	snprintf(sel, sizeof(sel), "app.kubernetes.io/name=%s,flash.heterocloud.io/organization=org-a,"
		 "flash.heterocloud.io/service=%s,flash.heterocloud.io/project=p1", e.id, e.id);
	{
		char buf[512];

		ASSERT_STREQ(k8s_fake_query_arg(&rq, "labelSelector", buf, sizeof(buf)), sel, "selected by label");
	}
	k8s_fake_request_clear(&rq);
	free(pods);
	push_pods(&e);
	ASSERT_OK(op_k8s_service_pods(c, "org-a", NULL, e.id, true, &pods, &n, NULL, 0, NULL), "ready pods");
	cr_assert_eq(n, 2, "only the ready ones");
	free(pods);
	k8s_client_free(c);
	env_down(&e);
}

Test(k8s_exec_route, a_session_in_the_first_ready_pod)
{
	struct env e;
	struct req rq = { 0 };
	struct op_response r;
	struct sess s;
	struct k8s_fake_request fr = { 0 };
	char path[160];

	env_up(&e, 0, 0);
	push_pods(&e);
	req_q(&rq, "tty", "0");
	req_q(&rq, "command", "/bin/sh");
	req_q(&rq, "command", "-c");
	req_q(&rq, "command", "cat; echo \"$0 in $(pwd)\" >&2; exit 4");
	req_q(&rq, "command", "arg zero");
	r = exec_call(&e, &rq);
	sess_start(&s, &r);
	op_response_clear(&r);
	sess_send(&s, "\0hello\n", 7);
	sess_send(&s, "\xff\x00", 2); /* stdin ends */
	cr_assert_eq(sess_run(&s, 10000), WS_CLOSE_NORMAL, "closed normally");
	ASSERT_STREQ(str(&s.out), "hello\n", "stdin came back through cat");
	cr_assert_not_null(strstr(str(&s.err), "arg zero in "), "the exact argv ($0): %s", str(&s.err));
	cr_assert_not_null(strstr(str(&s.err), "/org-a/web-a"), "ran in replica 0, web-a: %s", str(&s.err));
	ASSERT_STREQ(s.status, "{\"exit_code\":4}", "the exit code through the error channel");
	cr_assert_null(strstr(str(&s.all), CLUSTER_TOKEN), "no cluster credential in what the client got");
	sess_end(&s);
	/* The exec request the fake saw: the operator's token, the argv. */
	snprintf(path, sizeof(path), "/api/v1/namespaces/org-a/pods/web-a/exec");
	for (size_t i = 0; i < k8s_fake_requests(e.fake); i++) {
		ASSERT_OK(k8s_fake_request_get(e.fake, i, &fr), "request");
		if (!strcmp(fr.path, path))
			break;
		k8s_fake_request_clear(&fr);
	}
	ASSERT_STREQ(fr.path, path, "pods/exec of web-a");
	ASSERT_STREQ(fr.authorization, "Bearer " CLUSTER_TOKEN, "the operator's own credential");
	cr_assert_not_null(strstr(fr.query, "command=/bin/sh&command=-c&command=cat; echo"), "%s", fr.query);
	k8s_fake_request_clear(&fr);
	env_down(&e);
}

Test(k8s_exec_route, replicas_absent_or_not_ready_and_the_cap)
{
	struct env e;
	struct req rq = { 0 }, rq2 = { 0 }, rq3 = { 0 };
	struct op_response r;
	struct sess s;

	env_up(&e, 0, 1);
	push_pods(&e);
	req_q(&rq, "replica", "2");
	r = exec_call(&e, &rq);
	cr_assert_eq(r.status, 409, "web-c is not ready: %d %s", r.status, r.body);
	op_response_clear(&r);
	push_pods(&e);
	req_q(&rq2, "replica", "3");
	r = exec_call(&e, &rq2);
	cr_assert_eq(r.status, 404, "no replica 3: %d %s", r.status, r.body);
	op_response_clear(&r);
	/* One session open (sleep), the cap is 1: the next is 429. */
	push_pods(&e);
	req_q(&rq3, "replica", "1");
	req_q(&rq3, "command", "/bin/sleep");
	req_q(&rq3, "command", "5");
	r = exec_call(&e, &rq3);
	sess_start(&s, &r);
	op_response_clear(&r);
	push_pods(&e);
	r = exec_call(&e, &rq3);
	cr_assert_eq(r.status, 429, "the session cap: %d %s", r.status, r.body);
	op_response_clear(&r);
	/* The client goes away: the session ends, the slot comes back. */
	shutdown(s.sv[0], SHUT_RDWR);
	{
		struct pollfd p = { .fd = s.done[0], .events = POLLIN };

		cr_assert_eq(poll(&p, 1, 10000), 1, "the session ended with its client");
	}
	sess_end(&s);
	env_down(&e);
}

Test(k8s_exec_route, a_terminal_and_the_time_limit)
{
	struct env e;
	struct req rq = { 0 };
	struct op_response r;
	struct sess s;
	int64_t t0;

	env_up(&e, 1, 0);
	push_pods(&e);
	req_q(&rq, "tty", "1");
	req_q(&rq, "cols", "132");
	req_q(&rq, "rows", "43");
	req_q(&rq, "command", "/bin/sh");
	req_q(&rq, "command", "-c");
	req_q(&rq, "command", "sleep 0.2; stty size; exec sleep 30");
	r = exec_call(&e, &rq);
	t0 = util_mono_ms();
	sess_start(&s, &r);
	op_response_clear(&r);
	cr_assert_eq(sess_run(&s, 10000), WS_CLOSE_GOING_AWAY, "ended by the operator");
	cr_assert_lt(util_mono_ms() - t0, 5000, "at the 1 s limit, not at the command's end");
	cr_assert_not_null(strstr(str(&s.out), "43 132"), "the terminal's size from the query: %s", str(&s.out));
	cr_assert_not_null(strstr(s.status, "\"reason\":\"time-limit\""), "STATUS says why: %s", s.status);
	sess_end(&s);
	env_down(&e);
}

Test(k8s_exec_route, logs_of_the_pods)
{
	const int64_t t0 = 1796205600LL * 1000000000; /* 2026-12-02T10:00:00Z */
	struct env e;
	struct req rq = { 0 };
	struct op_request x = { .query = req_query, .query_ctx = &rq };
	struct op_response r;
	struct json_value *v = NULL;
	const struct json_value *lines;
	char path[128];

	env_up(&e, 0, 0);
	ASSERT_OK(k8s_fake_pod_log_add(e.fake, "org-a", "web-a", "app", t0 + 1000000000, "a one"), "log");
	ASSERT_OK(k8s_fake_pod_log_add(e.fake, "org-a", "web-a", "app", t0 + 3000000000LL, "a two"), "log");
	ASSERT_OK(k8s_fake_pod_log_add(e.fake, "org-a", "web-b", "app", t0 + 2000000000, "b one"), "log");
	snprintf(path, sizeof(path), "/provider/v1/services/%s/logs", e.id);
	push_pods(&e);
	r = call(&e, "GET", path, FLASH_AUTH_ACTION_LOGS, 0, NULL, &x);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	cr_assert(json_parse(r.body, r.body_len, NULL, &v, NULL) == 0);
	lines = json_get(v, "lines");
	cr_assert_eq(lines->u.array.n, 3, "three lines (web-c has no log: none): %s", r.body);
	ASSERT_STREQ(json_string_value(json_get(lines->u.array.items[0], "text")), "a one", "merged by time");
	ASSERT_STREQ(json_string_value(json_get(lines->u.array.items[1], "text")), "b one", "merged by time");
	ASSERT_STREQ(json_string_value(json_get(lines->u.array.items[2], "text")), "a two", "merged by time");
	{
		uint64_t rep = 9;

		ASSERT_OK(json_get_uint64(json_get(lines->u.array.items[1], "replica"), &rep), "replica");
		cr_assert_eq(rep, 1, "web-b is replica 1");
	}
	ASSERT_STREQ(json_string_value(json_get(lines->u.array.items[0], "time")), "2026-12-02T10:00:01.000000000Z",
		     "the kubelet's timestamp");
	json_free(v);
	op_response_clear(&r);
	/* Replica 0 since 10:00:02: only "a two". */
	req_q(&rq, "replica", "0");
	req_q(&rq, "since", "2026-12-02T10:00:02Z");
	push_pods(&e);
	r = call(&e, "GET", path, FLASH_AUTH_ACTION_LOGS, 0, NULL, &x);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	cr_assert(json_parse(r.body, r.body_len, NULL, &v, NULL) == 0);
	lines = json_get(v, "lines");
	cr_assert_eq(lines->u.array.n, 1, "%s", r.body);
	ASSERT_STREQ(json_string_value(json_get(lines->u.array.items[0], "text")), "a two", "since and replica");
	json_free(v);
	op_response_clear(&r);
	env_down(&e);
}

/* libflash's client (what flashctl exec and flashctl logs use) over the
 * operator's HTTP listener, the operator in Kubernetes mode, the fake API
 * server behind it. */
Test(k8s_exec_route, libflash_client_through_the_http_listener)
{
	const char *argv[] = { "/bin/sh", "-c", "read x; echo \"got $x\"; echo oops >&2; exit 7" };
	struct env e;
	struct op_http *http = NULL;
	struct flash_client *fc = NULL;
	struct flash_client_exec *x = NULL;
	struct flash_client_response *refusal = NULL, *resp = NULL;
	struct util_buf out = { 0 }, err = { 0 };
	char sock[128], endpoint[160];
	int code = -1;

	env_up(&e, 0, 0);
	snprintf(sock, sizeof(sock), "%s/op.sock", e.dir);
	snprintf(endpoint, sizeof(endpoint), "unix:%s", sock);
	{
		struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .threads = 2 };

		ASSERT_OK(op_http_start(e.prov, &ho, &http, NULL, 0), "HTTP listener");
	}
	{
		struct flash_client_opts co = { .sz = sizeof(co), .endpoint = endpoint, .timeout_ms = 10000 };
		struct flash_client_identity id = { .sz = sizeof(id), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE,
						    .organization = "org-a", .project = "p1" };

		ASSERT_OK(flash_client_new(&co, &fc), "client");
		ASSERT_OK(flash_client_set_signer(fc, e.signer, &id), "signer");
	}
	push_pods(&e);
	{
		struct flash_client_exec_opts xo = { .sz = sizeof(xo), .argv = argv, .argc = 3, .replica = 1 };

		ASSERT_OK(flash_client_exec_open(fc, e.id, &xo, &x, &refusal), "exec through the operator");
	}
	ASSERT_OK(flash_client_exec_send(x, FLASH_EXEC_STDIN, "hi\n", 3), "stdin");
	ASSERT_OK(flash_client_exec_close_stdin(x), "stdin's end");
	for (int64_t end = util_mono_ms() + 10000; !flash_client_exec_status(x, &code, NULL, NULL);) {
		unsigned int ch;
		const void *data;
		size_t len;
		int r = flash_client_exec_recv(x, &ch, &data, &len);

		cr_assert_lt(util_mono_ms(), end, "STATUS in time");
		if (r == 0) {
			struct pollfd p = { .fd = flash_client_exec_fd(x), .events = POLLIN };

			(void)poll(&p, 1, 100);
			continue;
		}
		cr_assert_eq(r, 1, "a message: %d", r);
		if (ch == FLASH_EXEC_STDOUT)
			ASSERT_OK(util_buf_append(&out, data, len, 4096), "stdout");
		else if (ch == FLASH_EXEC_STDERR)
			ASSERT_OK(util_buf_append(&err, data, len, 4096), "stderr");
	}
	cr_assert_eq(code, 7, "the remote exit code (%d)", code);
	ASSERT_STREQ(str(&out), "got hi\n", "stdout");
	ASSERT_STREQ(str(&err), "oops\n", "stderr apart");
	flash_client_exec_free(x);
	/* It ran in replica 1: web-b's directory exists, web-a's does not. */
	{
		char p[256];

		snprintf(p, sizeof(p), "%s/pods/org-a/web-b", e.dir);
		cr_assert_eq(access(p, F_OK), 0, "replica 1 is web-b");
	}
	/* flashctl logs' call. */
	ASSERT_OK(k8s_fake_pod_log_add(e.fake, "org-a", "web-b", "app", 0, "hello from web-b"), "log");
	push_pods(&e);
	ASSERT_OK(flash_client_logs(fc, e.id, 1, NULL, &resp), "logs");
	cr_assert_eq(flash_client_response_status(resp), 200);
	{
		size_t len = 0;
		const char *body = flash_client_response_body(resp, &len);

		cr_assert_not_null(strstr(body, "\"text\":\"hello from web-b\""), "%s", body);
		cr_assert_not_null(strstr(body, "\"replica\":1"), "%s", body);
	}
	flash_client_response_free(resp);
	flash_client_free(fc);
	op_http_stop(http);
	free(out.p);
	free(err.p);
	env_down(&e);
}
