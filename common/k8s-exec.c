/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pods/exec over the WebSocket channel protocol and pods/log streamed
 * (k8s-exec.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http-client.h"
#include "k8s-exec.h"
#include "k8s-request.h"
#include "names.h"
#include "util.h"
#include "websocket.h"

#define HEAD_MAX 16384
#define CHUNK 65536
#define ARG_MAX_BYTES 65536

struct k8s_exec {
	CURL *curl;
	int fd;
	int version;
	bool tty, want_stdin, stdin_closed;
	bool eof, closed, close_sent;
	bool got_status;
	struct ws_conn *ws;
	struct util_buf status;
	char err[256];
	uint8_t rbuf[CHUNK];
	uint8_t *wbuf;              /* WS_FRAME_HEAD_MAX + 1 + CHUNK */
	uint8_t out[CHUNK];         /* the last output handed out when it came in pieces */
};

static int fail(struct k8s_exec *x, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct k8s_exec *x, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
	return r;
}

const char *k8s_exec_error(const struct k8s_exec *x)
{
	return x ? x->err : "";
}

int k8s_exec_version(const struct k8s_exec *x)
{
	return x ? x->version : 0;
}

int k8s_exec_fd(const struct k8s_exec *x)
{
	return x ? x->fd : -1;
}

void k8s_exec_free(struct k8s_exec *x)
{
	if (!x)
		return;
	if (x->curl)
		curl_easy_cleanup(x->curl); /* closes its socket */
	ws_conn_free(x->ws);
	free(x->status.p);
	free(x->wbuf);
	free(x);
}

/* ---------------------------------------------------------------- transport */

static int conn_wait(struct k8s_exec *x, short events, int64_t deadline)
{
	if (deadline == 0)
		deadline = INT64_MAX;
	return http_wait_fd(x->fd, events, deadline);
}

static int send_all(struct k8s_exec *x, const void *buf, size_t len, int64_t deadline)
{
	while (len) {
		size_t n = 0;
		CURLcode cc = curl_easy_send(x->curl, buf, len, &n);

		if (cc == CURLE_AGAIN) {
			int r = conn_wait(x, POLLOUT, deadline);

			if (r < 0)
				return r;
			continue;
		}
		if (cc != CURLE_OK)
			return -EPIPE;
		buf = (const char *)buf + n;
		len -= n;
	}
	return 0;
}

/* Up to @cap bytes: 0 with *ret_n (0: the server closed), -EAGAIN, -ECONNRESET. */
static int recv_some(struct k8s_exec *x, void *buf, size_t cap, size_t *ret_n)
{
	size_t n = 0;
	CURLcode cc = curl_easy_recv(x->curl, buf, cap, &n);

	if (cc == CURLE_AGAIN)
		return -EAGAIN;
	if (cc != CURLE_OK)
		return -ECONNRESET;
	*ret_n = n;
	return 0;
}

static int send_frame(struct k8s_exec *x, uint8_t opcode, const void *payload, size_t len, int64_t deadline)
{
	long n = ws_frame_encode(opcode, true, true, payload, len, x->wbuf, WS_FRAME_HEAD_MAX + 1 + CHUNK);

	if (n < 0)
		return (int)n;
	return send_all(x, x->wbuf, (size_t)n, deadline);
}

/* A message on @channel: the channel byte then @len bytes (<= CHUNK). */
static int send_channel(struct k8s_exec *x, uint8_t channel, const void *data, size_t len, int64_t deadline)
{
	uint8_t tmp[1 + CHUNK];

	tmp[0] = channel;
	if (len)
		memcpy(tmp + 1, data, len);
	return send_frame(x, WS_OP_BINARY, tmp, len + 1, deadline);
}

/* ---------------------------------------------------------------- open */

static bool opts_ok(const struct k8s_exec_opts *o)
{
	if (!OPTS_VALID(o, k8s_exec_opts) || !o || !o->pod || !names_dns_subdomain_valid(o->pod))
		return false;
	if (o->namespace && !names_dns_label_valid(o->namespace))
		return false;
	if (o->container && !names_dns_label_valid(o->container))
		return false;
	if (!o->argv || o->argc == 0 || o->argc > K8S_EXEC_ARGS_MAX)
		return false;
	for (size_t i = 0; i < o->argc; i++)
		if (!o->argv[i] || strlen(o->argv[i]) > ARG_MAX_BYTES)
			return false;
	if (o->protocol && strcmp(o->protocol, K8S_EXEC_PROTOCOL_V5) && strcmp(o->protocol, K8S_EXEC_PROTOCOL_V4))
		return false;
	return o->stdout || o->stderr || o->stdin;
}

/* The path and query of the upgrade request. */
static int exec_path(struct k8s_client *c, const struct k8s_exec_opts *o, char **ret)
{
	struct k8s_ref ref = { .version = "v1", .resource = "pods", .name = o->pod, .subresource = "exec" };
	_cleanup_free_ char *path = NULL;
	struct k8s_query q;
	int r;

	ref.namespace = o->namespace ? o->namespace : k8s_client_namespace(c);
	if ((r = k8s_ref_path(&ref, &path)) < 0)
		return r;
	k8s_query_init(&q);
	for (size_t i = 0; i < o->argc; i++)
		k8s_query_add(&q, "command", o->argv[i]);
	k8s_query_add(&q, "container", o->container);
	k8s_query_add(&q, "stdin", o->stdin ? "true" : NULL);
	k8s_query_add(&q, "stdout", o->stdout ? "true" : NULL);
	k8s_query_add(&q, "stderr", o->stderr ? "true" : NULL);
	k8s_query_add(&q, "tty", o->tty ? "true" : NULL);
	return k8s_query_finish(&q, path, ret);
}

/* "host[:port]" of the server URL, for the Host header. */
static int host_of(const char *server, char *buf, size_t size)
{
	const char *p = strstr(server, "://"), *e;

	if (!p)
		return -EINVAL;
	p += 3;
	e = strchr(p, '/');
	if (!e)
		e = p + strlen(p);
	if ((size_t)(e - p) >= size)
		return -ENAMETOOLONG;
	memcpy(buf, p, (size_t)(e - p));
	buf[e - p] = '\0';
	return 0;
}

static int connect_server(struct k8s_client *c, struct k8s_exec *x, unsigned int timeout_ms, struct k8s_status *st)
{
	curl_socket_t sock = CURL_SOCKET_BAD;
	_cleanup_free_ char *url = NULL;
	CURLcode cc;

	if (asprintf(&url, "%s/", c->server) < 0) {
		url = NULL;
		return -ENOMEM;
	}
	/* The client's handle carries the TLS settings (CA, client
	 * certificate, verification): a copy of it makes the connection. */
	x->curl = curl_easy_duphandle(c->curl);
	if (!x->curl)
		return -ENOMEM;
	curl_easy_setopt(x->curl, CURLOPT_URL, url);
	curl_easy_setopt(x->curl, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(x->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(x->curl, CURLOPT_TIMEOUT_MS, 0L);
	curl_easy_setopt(x->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(x->curl, CURLOPT_XFERINFOFUNCTION, NULL);
	curl_easy_setopt(x->curl, CURLOPT_NOPROGRESS, 1L);
	curl_easy_setopt(x->curl, CURLOPT_HEADERFUNCTION, NULL);
	curl_easy_setopt(x->curl, CURLOPT_WRITEFUNCTION, NULL);
	cc = curl_easy_perform(x->curl);
	if (cc != CURLE_OK) {
		int r = k8s_curl_errno(cc);

		fail(x, r, "connecting to %s: %s", c->server, curl_easy_strerror(cc));
		if (st) {
			k8s_status_clear(st);
			st->message = strdup(x->err);
		}
		return r;
	}
	if (curl_easy_getinfo(x->curl, CURLINFO_ACTIVESOCKET, &sock) != CURLE_OK || sock == CURL_SOCKET_BAD)
		return -EPROTO;
	x->fd = (int)sock;
	return 0;
}

/* A header's value in a response head (NUL-terminated), case-insensitive
 * name, or NULL. */
static bool head_header(const char *head, const char *name, char *buf, size_t size)
{
	size_t nl = strlen(name);

	for (const char *p = strchr(head, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
		const char *v, *e;

		if (strncasecmp(p + 1, name, nl) || p[1 + nl] != ':')
			continue;
		for (v = p + 2 + nl; *v == ' ' || *v == '\t'; v++)
			;
		for (e = v; *e && *e != '\r' && *e != '\n'; e++)
			;
		while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if ((size_t)(e - v) >= size)
			return false;
		memcpy(buf, v, (size_t)(e - v));
		buf[e - v] = '\0';
		return true;
	}
	return false;
}

/* The answer to a refused upgrade: its Status (body read to its length or
 * the connection's end, bounded). */
static int refusal(struct k8s_exec *x, const struct http_reply_head *h, char *buf, size_t have, int64_t deadline,
		   struct k8s_status *st)
{
	struct util_buf b = { 0 };
	struct k8s_status local = { 0 };
	const char *body;
	size_t body_len;
	int r;

	if (!st)
		st = &local;
	if (util_buf_append(&b, buf, have, K8S_STATUS_MAX + HEAD_MAX) < 0)
		return -ENOMEM;
	while (!(h->has_length && b.len >= h->head_len + h->length)) {
		char tmp[4096];
		size_t n = 0;

		r = recv_some(x, tmp, sizeof(tmp), &n);
		if (r == -EAGAIN) {
			if (conn_wait(x, POLLIN, deadline) < 0)
				break;
			continue;
		}
		if (r < 0 || n == 0)
			break;
		if (util_buf_append(&b, tmp, n, K8S_STATUS_MAX + HEAD_MAX) < 0)
			break;
	}
	body = b.p ? b.p + h->head_len : "";
	body_len = b.len > h->head_len ? b.len - h->head_len : 0;
	if (h->has_length && body_len > h->length)
		body_len = h->length;
	k8s_status_clear(st);
	if (body_len && k8s_status_parse(body, body_len, st) < 0) {
		size_t n = 0;

		k8s_status_clear(st);
		while (n < body_len && n < 256 && body[n] != '\n' && body[n] != '\r')
			n++;
		st->message = strndup(body, n);
	}
	st->code = h->status;
	r = k8s_status_errno(st);
	if (r == 0)
		r = -EPROTO; /* a 2xx that is not the 101 asked for */
	fail(x, r, "the upgrade was refused: %d %s", h->status, st->message ? st->message : "");
	free(b.p);
	if (st == &local)
		k8s_status_clear(&local);
	return r;
}

int k8s_exec_open(struct k8s_client *c, const struct k8s_exec_opts *opts, struct k8s_exec **ret,
		  struct k8s_status *ret_status)
{
	char key[WS_KEY_STRLEN], host[512], proto[64], head[HEAD_MAX + 1];
	_cleanup_free_ char *path = NULL, *auth = NULL, *req = NULL;
	unsigned int timeout_ms;
	struct http_reply_head h;
	struct k8s_exec *x;
	size_t have = 0;
	int64_t deadline;
	int r, status = 0;

	if (ret_status)
		k8s_status_clear(ret_status);
	if (!c || !ret || !opts_ok(opts))
		return -EINVAL;
	if (c->cancelled)
		return -ECANCELED;
	if ((r = exec_path(c, opts, &path)) < 0 || (r = host_of(c->server, host, sizeof(host))) < 0)
		return r;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fd = -1;
	x->tty = opts->tty;
	x->want_stdin = opts->stdin;
	x->wbuf = malloc(WS_FRAME_HEAD_MAX + 1 + CHUNK);
	if (!x->wbuf || ws_conn_new(false, K8S_EXEC_MESSAGE_MAX, &x->ws) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	timeout_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms : c->o.connect_timeout_ms;
	deadline = util_mono_ms() + timeout_ms;
	if ((r = connect_server(c, x, timeout_ms, ret_status)) < 0)
		goto fail;
	if ((r = k8s_auth_header(c, &auth)) < 0)
		goto fail;
	ws_client_key(key);
	r = asprintf(&req,
		     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n%s%sUpgrade: websocket\r\n"
		     "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
		     "Sec-WebSocket-Protocol: %s\r\n\r\n",
		     path, host, c->user_agent, auth ? auth : "", auth ? "\r\n" : "", key,
		     opts->protocol ? opts->protocol : K8S_EXEC_PROTOCOL_V5 ", " K8S_EXEC_PROTOCOL_V4);
	if (auth)
		explicit_bzero(auth, strlen(auth));
	if (r < 0) {
		req = NULL;
		r = -ENOMEM;
		goto fail;
	}
	r = send_all(x, req, strlen(req), deadline);
	explicit_bzero(req, strlen(req));
	if (r < 0) {
		fail(x, r, "sending the upgrade request: %s", strerror(-r));
		goto fail;
	}
	/* The answer's head. */
	for (;;) {
		size_t n = 0;

		r = http_reply_head_parse(head, have, HEAD_MAX, &h);
		if (r == 0)
			break;
		if (r != -EAGAIN) {
			fail(x, -EPROTO, "the answer to the upgrade is not an HTTP reply");
			r = -EPROTO;
			goto fail;
		}
		r = recv_some(x, head + have, HEAD_MAX - have, &n);
		if (r == -EAGAIN) {
			r = conn_wait(x, POLLIN, deadline);
			if (r < 0) {
				fail(x, r, "no answer to the upgrade within %u ms", timeout_ms);
				goto fail;
			}
			continue;
		}
		if (r < 0 || n == 0) {
			r = -ECONNRESET;
			fail(x, r, "the server closed the connection before answering the upgrade");
			goto fail;
		}
		have += n;
	}
	if (h.status != 101) {
		r = refusal(x, &h, head, have, deadline, ret_status);
		goto fail;
	}
	{
		char saved = head[h.head_len];

		head[h.head_len] = '\0';
		if (!head_header(head, "Sec-WebSocket-Protocol", proto, sizeof(proto)) ||
		    (strcmp(proto, K8S_EXEC_PROTOCOL_V5) && strcmp(proto, K8S_EXEC_PROTOCOL_V4)) ||
		    (opts->protocol && strcmp(proto, opts->protocol))) {
			r = -EPROTO;
			fail(x, r, "the server chose no subprotocol we offered");
			goto fail;
		}
		r = ws_client_check_response(head, h.head_len, key, proto, &status, x->err, sizeof(x->err));
		head[h.head_len] = saved;
		if (r < 0) {
			r = -EPROTO;
			goto fail;
		}
	}
	x->version = strcmp(proto, K8S_EXEC_PROTOCOL_V5) ? 4 : 5;
	if (have > h.head_len && ws_conn_feed(x->ws, head + h.head_len, have - h.head_len) < 0) {
		r = -EPROTO;
		fail(x, r, "the server's first frames are malformed");
		goto fail;
	}
	*ret = x;
	return 0;
fail:
	if (ret_status && r < 0 && !ret_status->message && x->err[0])
		ret_status->message = strdup(x->err);
	k8s_exec_free(x);
	return r;
}

/* ---------------------------------------------------------------- writing */

int k8s_exec_write_stdin(struct k8s_exec *x, const void *buf, size_t len, int64_t deadline)
{
	if (!x || (len && !buf))
		return -EINVAL;
	if (!x->want_stdin || x->stdin_closed || x->closed)
		return -EBADF;
	while (len) {
		size_t n = len < CHUNK ? len : CHUNK;
		int r = send_channel(x, K8S_EXEC_STDIN, buf, n, deadline);

		if (r < 0)
			return r;
		buf = (const char *)buf + n;
		len -= n;
	}
	return 0;
}

int k8s_exec_close_stdin(struct k8s_exec *x, int64_t deadline)
{
	uint8_t m[2] = { K8S_EXEC_CLOSE, K8S_EXEC_STDIN };
	int r;

	if (!x)
		return -EINVAL;
	if (!x->want_stdin || x->stdin_closed)
		return -EBADF;
	if (x->version < 5)
		return -EOPNOTSUPP;
	r = send_frame(x, WS_OP_BINARY, m, sizeof(m), deadline);
	if (r == 0)
		x->stdin_closed = true;
	return r;
}

int k8s_exec_resize(struct k8s_exec *x, unsigned int width, unsigned int height, int64_t deadline)
{
	char j[64];
	int n;

	if (!x || width == 0 || height == 0 || width > 65535 || height > 65535)
		return -EINVAL;
	if (!x->tty)
		return -EBADF;
	n = snprintf(j, sizeof(j), "{\"Width\":%u,\"Height\":%u}", width, height);
	return send_channel(x, K8S_EXEC_RESIZE, j, (size_t)n, deadline);
}

/* ---------------------------------------------------------------- reading */

bool k8s_exec_pending(const struct k8s_exec *x)
{
	/* Bytes of a frame may sit in the parser; the caller polls only when
	 * a read said -EAGAIN, so what counts is whether one was fed. */
	return x && !x->closed && ws_conn_room(x->ws) < K8S_EXEC_MESSAGE_MAX;
}

/* One message parsed: 1 output in *ret, 0 consumed, -errno. */
static int on_message(struct k8s_exec *x, const struct ws_message *m, struct k8s_exec_output *ret)
{
	switch (m->opcode) {
	case WS_OP_PING: {
		int r = send_frame(x, WS_OP_PONG, m->data, m->len, util_mono_ms() + 10000);

		return r < 0 ? fail(x, r, "answering a ping: %s", strerror(-r)) : 0;
	}
	case WS_OP_PONG:
		return 0;
	case WS_OP_CLOSE:
		x->closed = true;
		if (!x->close_sent) {
			uint8_t p[125];

			x->close_sent = true;
			(void)send_frame(x, WS_OP_CLOSE, p, ws_close_payload(WS_CLOSE_NORMAL, NULL, p),
					 util_mono_ms() + 1000);
		}
		return 0;
	case WS_OP_TEXT:
		return fail(x, -EPROTO, "the server sent a text message (the channel protocol is binary)");
	default:
		break;
	}
	if (m->len == 0)
		return 0;
	switch (m->data[0]) {
	case K8S_EXEC_STDOUT:
	case K8S_EXEC_STDERR:
		if (m->len == 1)
			return 0; /* the streams are ready */
		ret->channel = m->data[0];
		ret->data = m->data + 1;
		ret->len = m->len - 1;
		return 1;
	case K8S_EXEC_ERROR:
		if (m->len - 1 > K8S_EXEC_STATUS_MAX - x->status.len)
			return fail(x, -EMSGSIZE, "the error channel's status is over %u bytes", K8S_EXEC_STATUS_MAX);
		if (util_buf_append(&x->status, m->data + 1, m->len - 1, K8S_EXEC_STATUS_MAX) < 0)
			return -ENOMEM;
		x->got_status = x->status.len > 0;
		return 0;
	default:
		return fail(x, -EPROTO, "the server sent a message on channel %u, which it may not", m->data[0]);
	}
}

int k8s_exec_read(struct k8s_exec *x, int64_t deadline, struct k8s_exec_output *ret)
{
	if (!x || !ret)
		return -EINVAL;
	for (;;) {
		struct ws_message m;
		size_t n = 0, room;
		int r;

		while (!x->closed && (r = ws_conn_next(x->ws, &m)) != 0) {
			if (r < 0) {
				uint8_t p[125];
				uint16_t code = ws_conn_close_code(x->ws);

				fail(x, -EPROTO, "the server broke the WebSocket protocol: %s", ws_conn_error(x->ws));
				if (!x->close_sent) {
					x->close_sent = true;
					(void)send_frame(x, WS_OP_CLOSE, p, ws_close_payload(code, NULL, p),
							 util_mono_ms() + 1000);
				}
				return -EPROTO;
			}
			r = on_message(x, &m, ret);
			if (r != 0)
				return r;
		}
		if (x->closed || x->eof) {
			if (!x->got_status)
				return fail(x, -ECONNRESET, "the server closed the exec stream without a status");
			return 0;
		}
		room = ws_conn_room(x->ws);
		r = recv_some(x, x->rbuf, room < sizeof(x->rbuf) ? room : sizeof(x->rbuf), &n);
		if (r == -EAGAIN) {
			if (deadline < 0)
				return -EAGAIN;
			r = conn_wait(x, POLLIN, deadline);
			if (r < 0)
				return fail(x, r, "%s", r == -ETIMEDOUT ? "deadline reached" : strerror(-r));
			continue;
		}
		if (r < 0)
			return fail(x, r, "the connection was cut");
		if (n == 0) {
			x->eof = true;
			continue;
		}
		if (ws_conn_feed(x->ws, x->rbuf, n) < 0)
			return fail(x, -EPROTO, "the server broke the WebSocket protocol: %s", ws_conn_error(x->ws));
	}
}

int k8s_exec_status_parse(const char *text, size_t len, int *ret_code, struct k8s_status *ret_status)
{
	struct json_value *doc = NULL;
	struct k8s_status local = { 0 }, *st = ret_status ? ret_status : &local;
	const char *s;
	bool failure;
	int r;

	if (!text || !ret_code)
		return -EINVAL;
	k8s_status_clear(st);
	if (len > K8S_EXEC_STATUS_MAX)
		return -EMSGSIZE;
	if (json_parse(text, len, NULL, &doc, NULL) < 0 || doc->type != JSON_OBJECT ||
	    !(s = json_string_value(json_get(doc, "status")))) {
		json_free(doc);
		return -EBADMSG;
	}
	if (!strcmp(s, "Success")) {
		json_free(doc);
		*ret_code = 0;
		return 0;
	}
	failure = !strcmp(s, "Failure");
	r = k8s_status_from_json_kindless(doc, st);
	json_free(doc);
	if (r < 0 || !failure) {
		k8s_status_clear(st);
		return -EBADMSG;
	}
	if (st->reason && !strcmp(st->reason, "NonZeroExitCode")) {
		for (size_t i = 0; i < st->n_causes; i++) {
			const char *msg = st->causes[i].message;
			char *end;
			long v;

			if (!st->causes[i].type || strcmp(st->causes[i].type, "ExitCode") || !msg || !*msg)
				continue;
			errno = 0;
			v = strtol(msg, &end, 10);
			if (errno || *end || v < 0 || v > 255)
				break;
			*ret_code = (int)v;
			k8s_status_clear(st);
			return 0;
		}
		k8s_status_clear(&local);
		return -EBADMSG; /* NonZeroExitCode without a usable ExitCode cause */
	}
	r = k8s_status_errno(st);
	k8s_status_clear(&local);
	return r < 0 ? r : -EPROTO;
}

int k8s_exec_exit_code(const struct k8s_exec *x, int *ret_code, struct k8s_status *ret_status)
{
	if (!x || !ret_code)
		return -EINVAL;
	if (!x->got_status)
		return -ECONNRESET;
	return k8s_exec_status_parse(x->status.p, x->status.len, ret_code, ret_status);
}

/* ---------------------------------------------------------------- whole runs */

/* The outputs already there, to the sinks: 1 (more may come), 0 (the
 * command ended), a sink's value or -errno. */
static int run_drain(struct k8s_exec *x, const struct k8s_exec_run_io *io)
{
	struct k8s_exec_output out;
	int r;

	while ((r = k8s_exec_read(x, -1, &out)) == 1) {
		k8s_exec_sink_fn fn = out.channel == K8S_EXEC_STDOUT ? io->out : io->err;
		void *ud = out.channel == K8S_EXEC_STDOUT ? io->out_userdata : io->err_userdata;

		if (fn && (r = fn(out.data, out.len, ud)) != 0)
			return r;
	}
	return r == -EAGAIN ? 1 : r;
}

/* One message (@payload, @len bytes, its channel byte included) sent
 * while the outputs that arrive meanwhile go to the sinks: a command
 * that writes as it reads (cat) never stalls the stream, whatever the
 * sizes.  1 sent, 0 the command ended first, a sink's value or -errno. */
static int run_send(struct k8s_exec *x, const struct k8s_exec_run_io *io, uint8_t *frame, size_t cap,
		    const void *payload, size_t len, int64_t deadline)
{
	long n = ws_frame_encode(WS_OP_BINARY, true, true, payload, len, frame, cap);
	size_t off = 0;

	if (n < 0)
		return (int)n;
	while (off < (size_t)n) {
		size_t sent = 0;
		CURLcode cc = curl_easy_send(x->curl, frame + off, (size_t)n - off, &sent);
		struct pollfd p = { .fd = x->fd, .events = POLLIN | POLLOUT };
		int64_t left;
		int r;

		if (cc == CURLE_OK) {
			off += sent;
			continue;
		}
		if (cc != CURLE_AGAIN)
			return -EPIPE;
		r = run_drain(x, io);
		if (r != 1)
			return r;
		left = deadline ? deadline - util_mono_ms() : 1000;
		if (left <= 0)
			return fail(x, -ETIMEDOUT, "deadline reached");
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
			return -errno;
	}
	return 1;
}

int k8s_exec_run(struct k8s_client *c, const struct k8s_exec_opts *opts, const struct k8s_exec_run_io *io,
		 int *ret_exit_code, struct k8s_status *ret_status)
{
	static const struct k8s_exec_run_io none = { .sz = sizeof(none) };
	struct k8s_exec_opts o;
	struct k8s_exec *x = NULL;
	int64_t deadline;
	bool in_open;
	uint8_t *inbuf = NULL, *frame = NULL;
	int r;

	if (!opts || !ret_exit_code || !OPTS_VALID(io, k8s_exec_run_io) || !OPTS_VALID(opts, k8s_exec_opts))
		return -EINVAL;
	if (!io)
		io = &none;
	memset(&o, 0, sizeof(o));
	memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	o.sz = sizeof(o);
	o.stdin = io->in != NULL;
	o.stdout = o.stderr = true;
	deadline = io->deadline;
	r = k8s_exec_open(c, &o, &x, ret_status);
	if (r < 0)
		return r;
	in_open = o.stdin;
	if (in_open && x->version < 5 && !o.tty) {
		/* v4 cannot say where stdin ends. */
		k8s_exec_free(x);
		return -EOPNOTSUPP;
	}
	if (in_open && (!(inbuf = malloc(1 + CHUNK)) || !(frame = malloc(WS_FRAME_HEAD_MAX + 1 + CHUNK)))) {
		free(inbuf);
		k8s_exec_free(x);
		return -ENOMEM;
	}
	/* Input sent as it comes, the outputs passed on meanwhile. */
	while (in_open) {
		ssize_t n = io->in(inbuf + 1, CHUNK, io->in_userdata);

		if (n < 0) {
			r = (int)n;
			goto out;
		}
		if (n == 0) {
			static const uint8_t close_stdin[2] = { K8S_EXEC_CLOSE, K8S_EXEC_STDIN };

			in_open = false;
			if (x->version < 5)
				continue;
			x->stdin_closed = true;
			r = run_send(x, io, frame, WS_FRAME_HEAD_MAX + 1 + CHUNK, close_stdin, 2, deadline);
		} else {
			inbuf[0] = K8S_EXEC_STDIN;
			r = run_send(x, io, frame, WS_FRAME_HEAD_MAX + 1 + CHUNK, inbuf, (size_t)n + 1, deadline);
		}
		if (r == 0)
			break; /* the command ended before reading all */
		if (r < 0 || r > 1)
			goto out;
		r = run_drain(x, io);
		if (r == 0)
			break;
		if (r != 1)
			goto out;
	}
	for (;;) {
		struct k8s_exec_output out;

		r = k8s_exec_read(x, deadline, &out);
		if (r <= 0)
			break;
		{
			k8s_exec_sink_fn fn = out.channel == K8S_EXEC_STDOUT ? io->out : io->err;
			void *ud = out.channel == K8S_EXEC_STDOUT ? io->out_userdata : io->err_userdata;

			if (fn && (r = fn(out.data, out.len, ud)) != 0)
				goto out;
		}
	}
	if (r == 0)
		r = k8s_exec_exit_code(x, ret_exit_code, ret_status);
	else if (ret_status && !ret_status->message)
		ret_status->message = strdup(x->err);
out:
	free(inbuf);
	free(frame);
	k8s_exec_free(x);
	return r;
}

/* ---------------------------------------------------------------- pods/log */

struct log_sink {
	k8s_exec_sink_fn fn;
	void *userdata;
};

static int log_sink(const char *data, size_t len, void *userdata)
{
	struct log_sink *s = userdata;

	return s->fn(data, len, s->userdata);
}

int k8s_pod_log(struct k8s_client *c, const char *pod, const struct k8s_log_opts *opts, k8s_exec_sink_fn sink,
		void *userdata, struct k8s_status *ret_status)
{
	struct k8s_ref ref = { .version = "v1", .resource = "pods", .name = pod, .subresource = "log" };
	struct log_sink s = { sink, userdata };
	struct k8s_req req = { .method = "GET", .stream = true, .sink = log_sink, .sink_userdata = &s };
	struct k8s_status local = { 0 };
	_cleanup_free_ char *path = NULL;
	struct k8s_query q;
	int r;

	if (!c || !pod || !sink || !OPTS_VALID(opts, k8s_log_opts))
		return -EINVAL;
	if (OPTS_GET(opts, container, NULL) && !names_dns_label_valid(opts->container))
		return -EINVAL;
	if (OPTS_GET(opts, since_time, NULL) && OPTS_GET(opts, since_seconds, 0) > 0)
		return -EINVAL;
	if (OPTS_GET(opts, since_time, NULL) &&
	    (strlen(opts->since_time) > 64 || opts->since_time[strspn(opts->since_time, "0123456789-:.TZtz+")]))
		return -EINVAL;
	ref.namespace = OPTS_GET(opts, namespace, NULL) ? opts->namespace : k8s_client_namespace(c);
	if ((r = k8s_ref_path(&ref, &path)) < 0)
		return r;
	k8s_query_init(&q);
	k8s_query_add(&q, "container", OPTS_GET(opts, container, NULL));
	k8s_query_add(&q, "follow", OPTS_GET(opts, follow, false) ? "true" : NULL);
	if (OPTS_GET(opts, since_seconds, 0) > 0)
		k8s_query_add_uint(&q, "sinceSeconds", (uint64_t)opts->since_seconds);
	k8s_query_add(&q, "sinceTime", OPTS_GET(opts, since_time, NULL));
	k8s_query_add(&q, "timestamps", OPTS_GET(opts, timestamps, false) ? "true" : NULL);
	k8s_query_add(&q, "previous", OPTS_GET(opts, previous, false) ? "true" : NULL);
	if (OPTS_GET(opts, limit_bytes, 0) > 0)
		k8s_query_add_uint(&q, "limitBytes", (uint64_t)opts->limit_bytes);
	if (OPTS_GET(opts, has_tail_lines, false) && opts->tail_lines >= 0)
		k8s_query_add_uint(&q, "tailLines", (uint64_t)opts->tail_lines);
	if ((r = k8s_query_finish(&q, path, &req.path_query)) < 0)
		return r;
	req.no_idle = OPTS_GET(opts, follow, false);
	r = k8s_request(c, &req, ret_status ? ret_status : &local);
	if (r == 0 && req.sink_stop)
		r = req.sink_stop;
	k8s_req_done(&req);
	free(req.path_query);
	k8s_status_clear(&local);
	return r;
}
