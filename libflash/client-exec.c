/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The exec client of <flash/client.h>: a WebSocket (common/websocket.h)
 * over a connection of client-conn.c (a Unix socket, HTTP, or HTTPS
 * through libcurl: the same endpoints as every other call).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>

#include "client-private.h"
#include "http-client.h"
#include "internal.h"
#include "json.h"
#include "websocket.h"

#define EXEC_MESSAGE_MAX ((1u << 20) + 16)
#define HEAD_MAX 16384
#define QUERY_MAX 12288 /* the operator reads request heads of 16 KiB */
#define ARG_MAX_BYTES 65536
#define REFUSAL_BODY_MAX (1u << 20)

struct flash_client_exec {
	struct client_conn k;
	unsigned int timeout_ms;
	struct ws_conn *ws;
	bool closed, close_sent, got_status;
	int exit_code;
	char *reason, *message;
	uint8_t rbuf[65536];
};

static int send_all(struct flash_client_exec *x, const void *buf, size_t len)
{
	return client__conn_send_all(&x->k, buf, len, util_mono_ms() + x->timeout_ms);
}

/* @s percent-encoded (RFC 3986: all but the unreserved characters) at @out,
 * which has room for 3 * strlen(@s) + 1. */
static void query_escape(const char *s, char *out)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		    ch == '.' || ch == '_' || ch == '~') {
			*out++ = (char)ch;
		} else {
			*out++ = '%';
			*out++ = hex[ch >> 4];
			*out++ = hex[ch & 15];
		}
	}
	*out = '\0';
}

/* The query of the exec request: tty, replica, size, term, then each
 * argument as one command= (in order), or with @argv_message
 * "argv=message" instead (exec_argv_message() follows the handshake).
 * -E2BIG past QUERY_MAX. */
static int exec_query(const struct flash_client_exec_opts *o, bool argv_message, char **ret)
{
	size_t cap = QUERY_MAX + 1, n = 0;
	char *q = malloc(cap);
	int r = 0;

	if (!q)
		return -ENOMEM;
	n = (size_t)snprintf(q, cap, "?tty=%d", o->tty ? 1 : 0);
	if (o->replica >= 0)
		n += (size_t)snprintf(q + n, cap - n, "&replica=%d", o->replica);
	if (o->tty && o->cols && o->rows)
		n += (size_t)snprintf(q + n, cap - n, "&cols=%u&rows=%u", o->cols, o->rows);
	if (o->tty)
		n += (size_t)snprintf(q + n, cap - n, "&term=%s", o->term ? o->term : "xterm");
	if (argv_message)
		n += (size_t)snprintf(q + n, cap - n, "&argv=message");
	for (size_t i = 0; o->argv && !argv_message && i < o->argc; i++) {
		size_t al = strlen(o->argv[i]);

		/* worst case: every byte escaped */
		if (n + 9 + 3 * al >= cap) {
			char *e = malloc(3 * al + 1);

			if (!e) {
				r = -ENOMEM;
				break;
			}
			query_escape(o->argv[i], e);
			al = strlen(e);
			free(e);
			if (n + 9 + al >= cap) {
				r = -E2BIG;
				break;
			}
		}
		memcpy(q + n, "&command=", 9);
		query_escape(o->argv[i], q + n + 9);
		n += strlen(q + n);
	}
	if (r < 0) {
		free(q);
		return r;
	}
	*ret = q;
	return 0;
}

/* The ARGV message of an argv too long for the URL: a JSON array of the
 * arguments (freed by the caller).  -E2BIG past one message. */
static int exec_argv_message(const struct flash_client_exec_opts *o, char **ret, size_t *ret_len)
{
	struct json_writer *w = json_writer_new(0);
	char *text = NULL;
	size_t len = 0;

	if (!w)
		return -ENOMEM;
	jw_array_open(w);
	for (size_t i = 0; i < o->argc; i++)
		jw_string(w, o->argv[i]);
	jw_array_close(w);
	if (json_writer_finish(w, &text, &len) < 0)
		return -ENOMEM;
	if (len > EXEC_MESSAGE_MAX - 16) {
		free(text);
		return -E2BIG;
	}
	*ret = text;
	*ret_len = len;
	return 0;
}

static bool opts_ok(const struct flash_client_exec_opts *o)
{
	if (!OPTS_VALID(o, flash_client_exec_opts))
		return false;
	if (o->argv && (o->argc == 0 || o->argc > 256))
		return false;
	for (size_t i = 0; o->argv && i < o->argc; i++)
		if (!o->argv[i] || strlen(o->argv[i]) > ARG_MAX_BYTES)
			return false;
	if (o->term && (!o->term[0] || strlen(o->term) > 64 ||
			o->term[strspn(o->term, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+")]))
		return false;
	return o->replica >= -1 && o->replica <= 65535;
}

/* Content-Length and Retry-After of a response head. */
static size_t head_number(const char *head, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = strchr(head, '\n'); p; p = strchr(p + 1, '\n'))
		if (strncasecmp(p + 1, name, nl) == 0 && p[1 + nl] == ':')
			return strtoul(p + 2 + nl, NULL, 10);
	return 0;
}

/* An error answer (the head read, its body after it) as a response. */
static int refusal_of(struct flash_client_exec *x, int status, char *buf, size_t head_len, size_t have,
		      int64_t deadline, struct flash_client_response **ret)
{
	struct flash_client_response *resp;
	size_t want = head_number(buf, "Content-Length"), got = have - head_len;
	char *body;

	if (want > REFUSAL_BODY_MAX)
		return -E2BIG;
	body = malloc(want + 1);
	if (!body)
		return -ENOMEM;
	memcpy(body, buf + head_len, got < want ? got : want);
	while (got < want) {
		size_t n = 0;
		int r = client__conn_recv(&x->k, body + got, want - got, &n);

		if (r == -EAGAIN) {
			if (http_wait_fd(x->k.fd, POLLIN, deadline) < 0)
				break;
			continue;
		}
		if (r < 0 || n == 0)
			break;
		got += n;
	}
	if (got > want)
		got = want;
	body[got] = '\0';
	resp = calloc(1, sizeof(*resp));
	if (!resp) {
		free(body);
		return -ENOMEM;
	}
	resp->status = status;
	resp->body = body;
	resp->len = got;
	resp->retry_after = (unsigned int)head_number(buf, "Retry-After");
	client__parse_error(resp);
	*ret = resp;
	return 0;
}

static int handshake(struct flash_client_exec *x, struct flash_client *c, const char *path, const char *token,
		     struct flash_client_response **ret_refusal)
{
	char key[WS_KEY_STRLEN], *req = NULL, *buf = NULL, err[160];
	const char *host = strncmp(c->base, "https://", 8) == 0 ? c->base + 8 : c->base + 7;
	int host_len = (int)strcspn(host, "/");
	int64_t deadline = util_mono_ms() + x->timeout_ms;
	size_t have = 0, head_len = 0;
	int r, status = 0, n;

	ws_client_key(key);
	n = asprintf(&req,
		     "GET %s%s HTTP/1.1\r\nHost: %.*s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		     "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n"
		     "Authorization: Bearer %s\r\n\r\n",
		     c->prefix, path, host_len, host, key, FLASH_CLIENT_EXEC_PROTOCOL, token);
	if (n < 0)
		return -ENOMEM;
	r = send_all(x, req, (size_t)n);
	explicit_bzero(req, (size_t)n);
	free(req);
	if (r < 0)
		return r == -ETIMEDOUT ? r : -EPROTO;
	buf = malloc(HEAD_MAX + 1);
	if (!buf)
		return -ENOMEM;
	while (!head_len) {
		size_t got = 0;
		char *end;

		if (have == HEAD_MAX) {
			r = -EPROTO;
			goto out;
		}
		r = client__conn_recv(&x->k, buf + have, HEAD_MAX - have, &got);
		if (r == -EAGAIN) {
			r = http_wait_fd(x->k.fd, POLLIN, deadline);
			if (r < 0)
				goto out;
			continue;
		}
		if (r < 0 || got == 0) {
			r = -EPROTO;
			goto out;
		}
		have += got;
		buf[have] = '\0';
		end = memmem(buf, have, "\r\n\r\n", 4);
		if (end)
			head_len = (size_t)(end - buf) + 4;
	}
	r = ws_client_check_response(buf, head_len, key, FLASH_CLIENT_EXEC_PROTOCOL, &status, err, sizeof(err));
	if (r < 0 && status >= 400) {
		r = refusal_of(x, status, buf, head_len, have, deadline, ret_refusal);
		goto out;
	}
	if (r < 0) {
		r = -EPROTO;
		goto out;
	}
	r = ws_conn_new(false, EXEC_MESSAGE_MAX, &x->ws);
	if (r == 0 && have > head_len)
		r = ws_conn_feed(x->ws, buf + head_len, have - head_len);
out:
	free(buf);
	return r;
}

FLASH_API int flash_client_exec_open(struct flash_client *c, const char *service_id,
				     const struct flash_client_exec_opts *opts, struct flash_client_exec **ret_session,
				     struct flash_client_response **ret_refusal)
{
	struct flash_client_exec_opts defaults = { .sz = sizeof(defaults), .replica = -1 };
	const struct flash_client_exec_opts *o = opts ? opts : &defaults;
	struct flash_client_exec *x = NULL;
	struct flash_client_response *refusal = NULL;
	char *query = NULL, *path = NULL, *token = NULL, *argv_msg = NULL;
	size_t argv_len = 0;
	int r;

	if (!c || !client__id_ok(service_id) || !ret_session || !ret_refusal || !opts_ok(o))
		return -EINVAL;
	if (!c->signer && !c->token)
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->timeout_ms = c->timeout_ms;
	x->k.fd = -1;
	r = exec_query(o, false, &query);
	if (r == -E2BIG && o->argv) {
		/* Too long for the URL: in the first message instead. */
		r = exec_argv_message(o, &argv_msg, &argv_len);
		if (r == 0)
			r = exec_query(o, true, &query);
	}
	if (r < 0)
		goto fail;
	if (asprintf(&path, "/provider/v1/services/%s/exec%s", service_id, query) < 0) {
		path = NULL;
		r = -ENOMEM;
		goto fail;
	}
	if (c->signer) {
		r = client__mint(c, FLASH_AUTH_ACTION_EXEC, false, 0, &token);
		if (r < 0)
			goto fail;
	}
	r = client__conn_open(c, util_mono_ms() + c->timeout_ms, &x->k);
	if (r < 0)
		goto fail;
	r = handshake(x, c, path, token ? token : c->token, &refusal);
	if (r < 0)
		goto fail;
	if (refusal) {
		*ret_refusal = refusal;
		flash_client_exec_free(x);
		x = NULL;
	} else {
		if (argv_msg) {
			r = flash_client_exec_send(x, FLASH_EXEC_ARGV, argv_msg, argv_len);
			if (r < 0)
				goto fail;
		}
		*ret_session = x;
	}
	r = 0;
	goto out;
fail:
	flash_client_exec_free(x);
out:
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	free(query);
	free(path);
	free(argv_msg);
	return r;
}

FLASH_API int flash_client_exec_fd(const struct flash_client_exec *x)
{
	return x ? x->k.fd : -EINVAL;
}

static int send_frame(struct flash_client_exec *x, uint8_t opcode, const void *payload, size_t len)
{
	uint8_t small[WS_FRAME_HEAD_MAX + 125], *buf = len <= 125 ? small : malloc(WS_FRAME_HEAD_MAX + len);
	long n;
	int r;

	if (!buf)
		return -ENOMEM;
	n = ws_frame_encode(opcode, true, true, payload, len, buf, WS_FRAME_HEAD_MAX + len);
	r = n < 0 ? (int)n : send_all(x, buf, (size_t)n);
	if (buf != small)
		free(buf);
	return r;
}

FLASH_API int flash_client_exec_send(struct flash_client_exec *x, unsigned int channel, const void *data, size_t len)
{
	uint8_t *msg;
	int r;

	if (!x || channel > 255 || (len && !data) || len > (1u << 20))
		return -EINVAL;
	if (x->closed || x->close_sent)
		return -EPIPE;
	msg = malloc(len + 1);
	if (!msg)
		return -ENOMEM;
	msg[0] = (uint8_t)channel;
	if (len)
		memcpy(msg + 1, data, len);
	r = send_frame(x, WS_OP_BINARY, msg, len + 1);
	free(msg);
	return r;
}

FLASH_API int flash_client_exec_resize(struct flash_client_exec *x, unsigned short cols, unsigned short rows)
{
	char buf[48];
	int n = snprintf(buf, sizeof(buf), "{\"cols\":%u,\"rows\":%u}", cols, rows);

	return flash_client_exec_send(x, FLASH_EXEC_RESIZE, buf, (size_t)n);
}

FLASH_API int flash_client_exec_close_stdin(struct flash_client_exec *x)
{
	uint8_t ch = FLASH_EXEC_STDIN;

	return flash_client_exec_send(x, FLASH_EXEC_CLOSE, &ch, 1);
}

/* STATUS: {"exit_code":N[,"signal":S][,"reason":R,"message":M]}. */
static void take_status(struct flash_client_exec *x, const uint8_t *data, size_t len)
{
	struct json_value *doc = NULL;
	const char *s;
	int64_t v;

	if (json_parse((const char *)data, len, NULL, &doc, NULL) < 0)
		return;
	if (json_get_int64(json_get(doc, "exit_code"), &v) == 0 && v >= 0 && v <= 255)
		x->exit_code = (int)v;
	else
		x->exit_code = 255;
	if (json_get_int64(json_get(doc, "signal"), &v) == 0 && v > 0 && v < 128)
		x->exit_code = 128 + (int)v;
	if (json_get_string(json_get(doc, "reason"), &s) == 0)
		x->reason = strdup(s);
	if (json_get_string(json_get(doc, "message"), &s) == 0)
		x->message = strdup(s);
	x->got_status = true;
	json_free(doc);
}

FLASH_API int flash_client_exec_recv(struct flash_client_exec *x, unsigned int *ret_channel, const void **ret_data,
				     size_t *ret_len)
{
	if (!x || !ret_channel || !ret_data || !ret_len)
		return -EINVAL;
	for (;;) {
		struct ws_message m;
		int r = x->ws ? ws_conn_next(x->ws, &m) : -EPROTO;

		if (r < 0) {
			uint8_t p[125];

			if (!x->closed && !x->close_sent) {
				x->close_sent = true;
				(void)send_frame(x, WS_OP_CLOSE, p,
						 ws_close_payload(ws_conn_close_code(x->ws), ws_conn_error(x->ws), p));
			}
			x->closed = true;
			return -EPROTO;
		}
		if (r == 1) {
			if (m.opcode == WS_OP_PING) {
				(void)send_frame(x, WS_OP_PONG, m.data, m.len);
				continue;
			}
			if (m.opcode == WS_OP_CLOSE) {
				if (!x->close_sent) {
					uint8_t p[2] = { WS_CLOSE_NORMAL >> 8, WS_CLOSE_NORMAL & 0xff };

					x->close_sent = true;
					(void)send_frame(x, WS_OP_CLOSE, p, sizeof(p));
				}
				x->closed = true;
				return -EPIPE;
			}
			if (m.opcode != WS_OP_BINARY || m.len < 1)
				continue; /* pongs, text: not of this protocol */
			if (m.data[0] == FLASH_EXEC_STATUS)
				take_status(x, m.data + 1, m.len - 1);
			*ret_channel = m.data[0];
			*ret_data = m.data + 1;
			*ret_len = m.len - 1;
			return 1;
		}
		if (x->closed)
			return -EPIPE;
		size_t got = 0, room = ws_conn_room(x->ws);
		int r2 = client__conn_recv(&x->k, x->rbuf, room < sizeof(x->rbuf) ? room : sizeof(x->rbuf), &got);

		if (r2 == -EAGAIN)
			return 0;
		if (r2 < 0 || got == 0) {
			x->closed = true;
			return -EPIPE;
		}
		if (ws_conn_feed(x->ws, x->rbuf, got) < 0) {
			x->closed = true;
			return -EPROTO;
		}
	}
}

FLASH_API bool flash_client_exec_status(const struct flash_client_exec *x, int *ret_exit_code, const char **ret_reason,
					const char **ret_message)
{
	if (!x || !x->got_status)
		return false;
	if (ret_exit_code)
		*ret_exit_code = x->exit_code;
	if (ret_reason)
		*ret_reason = x->reason;
	if (ret_message)
		*ret_message = x->message;
	return true;
}

FLASH_API void flash_client_exec_free(struct flash_client_exec *x)
{
	if (!x)
		return;
	if (x->k.fd >= 0 && x->ws && !x->closed && !x->close_sent) {
		uint8_t p[2] = { WS_CLOSE_NORMAL >> 8, WS_CLOSE_NORMAL & 0xff };

		x->timeout_ms = 1000;
		(void)send_frame(x, WS_OP_CLOSE, p, sizeof(p));
	}
	client__conn_close(&x->k);
	ws_conn_free(x->ws);
	free(x->reason);
	free(x->message);
	free(x);
}
