/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox session calls of the provider/v1 client (<flash/client.h>):
 * the JSON ones through client.c's requests, the streaming ones (exec,
 * read, write, import, export) on a connection of their own
 * (client-conn.c) whose request body is sent as the source gives it and
 * whose answer body goes to the sink as it arrives, chunked framing
 * decoded on the way.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/auth.h>
#include <flash/client.h>
#include <flash/sandbox.h>

#include "client-private.h"
#include "http-client.h"
#include "id-hash.h"
#include "internal.h"
#include "json.h"
#include "names.h"
#include "util.h"

#define HEAD_MAX 16384
#define REFUSAL_MAX (1u << 20)
#define LINE_MAX_BYTES (1u << 20)
#define IO_CHUNK (64u * 1024)
#define PREFIX "/provider/v1/sandboxes"

/* ---------------------------------------------------------------- ids */

/* A session name: a DNS label short enough for the id (names.c). */
static bool name_ok(const char *s)
{
	return s && strlen(s) <= FLASH_CLIENT_SANDBOX_NAME_MAX && names_dns_label_valid(s);
}

FLASH_API int flash_client_sandbox_id(const char *organization, const char *project, const char *name,
				      char ret[FLASH_CLIENT_SANDBOX_ID_STRLEN])
{
	const char *parts[] = { "flash-sandbox-tenant/1", organization, project };
	unsigned char h[32];
	char hex[17];
	int r;

	if (!organization || !project || !name_ok(name) || !ret)
		return -EINVAL;
	r = id_hash_parts(parts, ARRAY_SIZE(parts), h, sizeof(h));
	if (r < 0)
		return r;
	sodium_bin2hex(hex, sizeof(hex), h, 8);
	snprintf(ret, FLASH_CLIENT_SANDBOX_ID_STRLEN, "sb-%s-%s", hex, name);
	return 0;
}

/* A session id as the operator takes it (the one check, <flash/sandbox.h>). */
static bool id_ok(const char *id)
{
	return flash_sandbox_id_valid(id);
}

/* @s percent-encoded for a query value into *ret. */
static int query_escape(const char *s, char **ret)
{
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *o = out;

	if (!out)
		return -ENOMEM;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    strchr("-._~/", ch))
			*o++ = (char)ch;
		else
			o += sprintf(o, "%%%02X", ch);
	}
	*o = '\0';
	*ret = out;
	return 0;
}

/* ---------------------------------------------------------------- JSON calls */

FLASH_API int flash_client_sandbox_provision(struct flash_client *c, const char *session_id, const char *spec,
					     size_t spec_len, uint32_t ttl_s, struct flash_client_response **ret)
{
	struct json_value *doc = NULL;
	struct json_writer *w;
	char path[128], *body = NULL;
	size_t len = 0;
	int r;

	if (!c || !id_ok(session_id) || !spec || !ret)
		return -EINVAL;
	r = json_parse(spec, spec_len, NULL, &doc, NULL);
	if (r < 0)
		return r == -EBADMSG ? -EINVAL : r;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_key(w, "spec");
	jw_value(w, doc);
	if (ttl_s)
		jw_kv_uint(w, "ttl_s", ttl_s);
	jw_object_close(w);
	json_free(doc);
	r = json_writer_finish(w, &body, &len);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), PREFIX "/%s", session_id);
	r = client__call(c, "PUT", path, FLASH_AUTH_ACTION_SANDBOX, body, len, ret);
	free(body);
	return r;
}

FLASH_API int flash_client_sandbox_get(struct flash_client *c, const char *session_id,
				       struct flash_client_response **ret)
{
	char path[128];

	if (!c || !id_ok(session_id) || !ret)
		return -EINVAL;
	snprintf(path, sizeof(path), PREFIX "/%s", session_id);
	return client__call(c, "GET", path, FLASH_AUTH_ACTION_SANDBOX, NULL, 0, ret);
}

FLASH_API int flash_client_sandbox_list(struct flash_client *c, struct flash_client_response **ret)
{
	if (!c || !ret)
		return -EINVAL;
	return client__call(c, "GET", PREFIX, FLASH_AUTH_ACTION_SANDBOX, NULL, 0, ret);
}

FLASH_API int flash_client_sandbox_reap(struct flash_client *c, const char *session_id,
					struct flash_client_response **ret)
{
	char path[128];

	if (!c || !id_ok(session_id) || !ret)
		return -EINVAL;
	snprintf(path, sizeof(path), PREFIX "/%s", session_id);
	return client__call(c, "DELETE", path, FLASH_AUTH_ACTION_SANDBOX, NULL, 0, ret);
}

/* ---------------------------------------------------------------- streams */

/* A streaming exchange. */
struct xfer {
	struct flash_client *c;
	const char *method;
	char *path;                  /* with its query */
	const char *ctype;           /* of the request body */
	const void *body;            /* a body given whole, or */
	size_t body_len;
	flash_client_source_fn source; /* a streamed one: */
	void *source_ud;
	bool has_length;             /* Content-Length: length, else chunked */
	uint64_t length;
	flash_client_sink_fn sink;   /* a 200's body */
	void *sink_ud;
};

/* Sends the request with its body. */
static int send_request(struct xfer *x, struct client_conn *k, int64_t *deadline)
{
	const struct flash_client *c = x->c;
	char *token = NULL, *req = NULL, *buf = NULL;
	const char *h = strncmp(c->base, "https://", 8) == 0 ? c->base + 8 : c->base + 7;
	int hl = (int)strcspn(h, "/"), n, r;
	char framing[64] = "";

	if (c->signer) {
		r = client__mint(c, FLASH_AUTH_ACTION_SANDBOX, false, 0, &token);
		if (r < 0)
			return r;
	} else if (!c->token) {
		return -EINVAL;
	}
	if (x->body)
		snprintf(framing, sizeof(framing), "Content-Length: %zu\r\n", x->body_len);
	else if (x->source && x->has_length)
		snprintf(framing, sizeof(framing), "Content-Length: %" PRIu64 "\r\n", x->length);
	else if (x->source)
		snprintf(framing, sizeof(framing), "Transfer-Encoding: chunked\r\n");
	n = asprintf(&req, "%s %s%s HTTP/1.1\r\nHost: %.*s\r\nAuthorization: Bearer %s\r\n%s%s%s%sConnection: close\r\n\r\n",
		     x->method, c->prefix, x->path, hl, h, token ? token : c->token, x->ctype ? "Content-Type: " : "",
		     x->ctype ? x->ctype : "", x->ctype ? "\r\n" : "", framing);
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	if (n < 0)
		return -ENOMEM;
	r = client__conn_send_all(k, req, (size_t)n, *deadline);
	explicit_bzero(req, (size_t)n);
	free(req);
	if (r < 0)
		return r;
	if (x->body)
		return client__conn_send_all(k, x->body, x->body_len, *deadline);
	if (!x->source)
		return 0;
	buf = malloc(IO_CHUNK + 32);
	if (!buf)
		return -ENOMEM;
	uint64_t sent = 0;
	for (;;) {
		ssize_t got = x->source(buf + 16, IO_CHUNK, x->source_ud);

		if (got < 0) {
			r = (int)got;
			break;
		}
		if (x->has_length && (got == 0 ? sent != x->length : sent + (uint64_t)got > x->length)) {
			r = -EIO; /* the source does not hold what it said */
			break;
		}
		if (x->has_length) {
			if (got == 0) {
				r = 0;
				break;
			}
			r = client__conn_send_all(k, buf + 16, (size_t)got, *deadline);
		} else {
			/* A chunk: size line, data, CRLF; the last one empty. */
			int hlen = snprintf(buf, 16, "%zx\r\n", (size_t)got);

			memmove(buf + hlen, buf + 16, (size_t)got);
			memcpy(buf + hlen + got, "\r\n", 2);
			r = client__conn_send_all(k, buf, (size_t)hlen + (size_t)got + 2, *deadline);
			if (r == 0 && got == 0) {
				/* "0\r\n" + "\r\n" was sent: done */
				break;
			}
		}
		if (r < 0)
			break;
		sent += (uint64_t)got;
		*deadline = util_mono_ms() + c->timeout_ms;
	}
	free(buf);
	return r;
}

/* Runs @x: *ret_status; a 200 with a sink streams its body there and
 * returns 0 with *ret_refusal NULL; any other answer is read whole into
 * *ret_refusal. */
static int xfer_run(struct xfer *x, struct flash_client_response **ret_refusal)
{
	struct client_conn k = { .fd = -1 };
	int64_t deadline = util_mono_ms() + x->c->timeout_ms;
	struct http_reply_head hd = { 0 };
	struct http_chunked dc = { 0 };
	size_t cap = HEAD_MAX, len = 0;
	uint64_t body_got = 0;
	char *buf = malloc(cap + 1);
	bool have_head = false, streaming = false;
	int r;

	*ret_refusal = NULL;
	if (!buf)
		return -ENOMEM;
	r = client__conn_open(x->c, deadline, &k);
	if (r < 0)
		goto out;
	r = send_request(x, &k, &deadline);
	/* An operator that refuses early answers and closes. */
	if (r < 0 && r != -EPIPE && r != -ECONNRESET)
		goto out;
	if (r < 0)
		r = 0;
	for (;;) {
		size_t got = 0;

		if (len == cap) {
			char *nb;

			if (streaming || cap >= REFUSAL_MAX + HEAD_MAX) {
				r = -E2BIG;
				goto out;
			}
			cap = cap * 4 > REFUSAL_MAX + HEAD_MAX ? REFUSAL_MAX + HEAD_MAX : cap * 4;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				r = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		r = client__conn_recv(&k, buf + len, cap - len, &got);
		if (r == -EAGAIN) {
			r = http_wait_fd(k.fd, POLLIN, deadline);
			if (r < 0)
				goto out;
			continue;
		}
		if (r < 0) {
			r = have_head ? -EPROTO : -ECONNREFUSED;
			goto out;
		}
		if (got == 0)
			break;
		deadline = util_mono_ms() + x->c->timeout_ms;
		len += got;
		if (!have_head) {
			r = http_reply_head_parse(buf, len, HEAD_MAX, &hd);
			if (r == -EAGAIN)
				continue;
			if (r < 0) {
				r = -EPROTO;
				goto out;
			}
			have_head = true;
			streaming = hd.status == 200 && x->sink;
			if (!streaming)
				continue; /* read the whole answer */
			memmove(buf, buf + hd.head_len, len - hd.head_len);
			len -= hd.head_len;
		}
		if (!streaming)
			continue;
		if (hd.chunked) {
			r = http_chunked_feed(&dc, buf, len, x->sink, x->sink_ud);
			if (r == -EBADMSG)
				r = -EPROTO;
		} else {
			r = len ? x->sink(buf, len, x->sink_ud) : 0;
			body_got += len;
		}
		len = 0;
		if (r < 0)
			goto out;
	}
	if (!have_head) {
		r = -ECONNREFUSED;
		goto out;
	}
	if (streaming) {
		/* Whole only with its last chunk, or its full length. */
		r = (hd.chunked ? http_chunked_done(&dc) : !hd.has_length || body_got == hd.length) ? 0 : -EPROTO;
		goto out;
	}
	r = client__response_of(buf, len, REFUSAL_MAX, ret_refusal);
	if (r == 0)
		buf = NULL;
out:
	client__conn_close(&k);
	free(buf);
	return r;
}

static int xfer_path(struct xfer *x, const char *session_id, const char *sub, const char *key, const char *value)
{
	char *esc = NULL;
	int r;

	if (!id_ok(session_id))
		return -EINVAL;
	if (!value)
		return asprintf(&x->path, PREFIX "/%s/%s", session_id, sub) < 0 ? -ENOMEM : 0;
	if (value[0] != '/')
		return -EINVAL;
	r = query_escape(value, &esc);
	if (r < 0)
		return r;
	r = asprintf(&x->path, PREFIX "/%s/%s?%s=%s", session_id, sub, key, esc) < 0 ? -ENOMEM : 0;
	free(esc);
	return r;
}

/* ---------------------------------------------------------------- exec */

struct exec_lines {
	const struct flash_client_sandbox_exec_opts *o;
	struct flash_client_sandbox_exec_result *res;
	char *line;
	size_t len;
	bool final, failed;
	unsigned char *dec;
};

static int exec_line(struct exec_lines *e)
{
	struct json_value *doc = NULL;
	const struct json_value *v;
	const char *s;
	int r = 0;

	if (json_parse(e->line, e->len, NULL, &doc, NULL) < 0 || doc->type != JSON_OBJECT || e->final)
		r = -EPROTO;
	else if ((v = json_get(doc, "stdout")) || (v = json_get(doc, "stderr"))) {
		bool out = json_get(doc, "stdout") != NULL;
		flash_client_sink_fn fn = out ? e->o->stdout_fn : e->o->stderr_fn;
		void *ud = out ? e->o->stdout_userdata : e->o->stderr_userdata;
		size_t n = 0;

		if (json_get_string(v, &s) < 0 ||
		    sodium_base642bin(e->dec, LINE_MAX_BYTES, s, strlen(s), NULL, &n, NULL, sodium_base64_VARIANT_ORIGINAL))
			r = -EPROTO;
		else if (fn && n)
			r = fn(e->dec, n, ud);
	} else if (json_get(doc, "error")) {
		e->final = e->failed = true;
	} else {
		int64_t code = 0, exp = 0;
		bool to = false;

		if (json_get_int64(json_get(doc, "exit_code"), &code) < 0 || json_get_bool(json_get(doc, "timed_out"), &to) < 0)
			r = -EPROTO;
		json_get_int64(json_get(doc, "expires_at"), &exp);
		e->res->exit_code = (int)code;
		e->res->timed_out = to;
		e->res->expires_at = exp;
		e->final = true;
	}
	json_free(doc);
	return r;
}

static int exec_sink(const void *buf, size_t len, void *userdata)
{
	struct exec_lines *e = userdata;
	const char *p = buf;

	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\n') {
			int r = exec_line(e);

			e->len = 0;
			if (r < 0)
				return r;
			continue;
		}
		if (e->len >= LINE_MAX_BYTES)
			return -EPROTO;
		e->line[e->len++] = p[i];
	}
	return 0;
}

FLASH_API int flash_client_sandbox_exec(struct flash_client *c, const char *session_id,
					const struct flash_client_sandbox_exec_opts *opts,
					struct flash_client_sandbox_exec_result *ret_result,
					struct flash_client_response **ret_refusal)
{
	struct flash_client_sandbox_exec_result res = { .exit_code = -1 };
	struct exec_lines e = { .o = opts, .res = &res };
	struct xfer x = { .c = c, .method = "POST", .ctype = "application/json" };
	struct json_writer *w;
	char *body = NULL, *b64 = NULL;
	size_t blen = 0;
	int r;

	if (!c || !opts || !OPTS_VALID(opts, flash_client_sandbox_exec_opts) || !opts->argv || !opts->argv[0] ||
	    !ret_result || !ret_refusal || (opts->stdin_len && !opts->stdin_data))
		return -EINVAL;
	r = xfer_path(&x, session_id, "exec", NULL, NULL);
	if (r < 0)
		return r;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_key(w, "argv");
	jw_array_open(w);
	for (size_t i = 0; opts->argv[i]; i++)
		jw_string(w, opts->argv[i]);
	jw_array_close(w);
	if (opts->env) {
		jw_key(w, "env");
		jw_array_open(w);
		for (size_t i = 0; opts->env[i]; i++)
			jw_string(w, opts->env[i]);
		jw_array_close(w);
	}
	if (opts->cwd)
		jw_kv_string(w, "cwd", opts->cwd);
	if (opts->timeout_ms)
		jw_kv_uint(w, "timeout_ms", opts->timeout_ms);
	if (opts->stdin_data) {
		size_t bl = sodium_base64_ENCODED_LEN(opts->stdin_len, sodium_base64_VARIANT_ORIGINAL);

		b64 = malloc(bl);
		if (b64) {
			sodium_bin2base64(b64, bl, opts->stdin_data, opts->stdin_len, sodium_base64_VARIANT_ORIGINAL);
			jw_kv_string(w, "stdin", b64);
		}
	}
	jw_object_close(w);
	r = json_writer_finish(w, &body, &blen);
	e.line = malloc(LINE_MAX_BYTES);
	e.dec = malloc(LINE_MAX_BYTES);
	if (r < 0 || !e.line || !e.dec || (opts->stdin_data && !b64)) {
		r = r < 0 ? r : -ENOMEM;
		goto out;
	}
	x.body = body;
	x.body_len = blen;
	x.sink = exec_sink;
	x.sink_ud = &e;
	r = xfer_run(&x, ret_refusal);
	if (r == 0 && !*ret_refusal) {
		if (e.len || !e.final)
			r = -EPROTO; /* cut before its last line */
		else if (e.failed)
			r = -EIO;
		else
			*ret_result = res;
	}
out:
	free(body);
	free(b64);
	free(e.line);
	free(e.dec);
	free(x.path);
	return r;
}

/* ---------------------------------------------------------------- files */

FLASH_API int flash_client_sandbox_read(struct flash_client *c, const char *session_id, const char *path,
					uint64_t max_bytes, flash_client_sink_fn sink, void *userdata,
					struct flash_client_response **ret_refusal)
{
	struct xfer x = { .c = c, .method = "GET", .sink = sink, .sink_ud = userdata };
	char *full = NULL;
	int r;

	if (!c || !path || !sink || !ret_refusal)
		return -EINVAL;
	r = xfer_path(&x, session_id, "files", "path", path);
	if (r == 0 && max_bytes) {
		r = asprintf(&full, "%s&max=%" PRIu64, x.path, max_bytes) < 0 ? -ENOMEM : 0;
		free(x.path);
		x.path = full;
	}
	if (r == 0)
		r = xfer_run(&x, ret_refusal);
	free(x.path);
	return r;
}

FLASH_API int flash_client_sandbox_write(struct flash_client *c, const char *session_id, const char *path,
					 uint64_t size, flash_client_source_fn source, void *userdata,
					 struct flash_client_response **ret)
{
	struct xfer x = { .c = c, .method = "PUT", .ctype = "application/octet-stream", .source = source,
			  .source_ud = userdata, .has_length = true, .length = size };
	int r;

	if (!c || !path || !source || !ret)
		return -EINVAL;
	r = xfer_path(&x, session_id, "files", "path", path);
	if (r == 0)
		r = xfer_run(&x, ret);
	free(x.path);
	return r;
}

FLASH_API int flash_client_sandbox_import(struct flash_client *c, const char *session_id, const char *dir,
					  flash_client_source_fn source, void *userdata,
					  struct flash_client_response **ret)
{
	struct xfer x = { .c = c, .method = "PUT", .ctype = "application/x-tar", .source = source,
			  .source_ud = userdata };
	int r;

	if (!c || !dir || !source || !ret)
		return -EINVAL;
	r = xfer_path(&x, session_id, "import", "dir", dir);
	if (r == 0)
		r = xfer_run(&x, ret);
	free(x.path);
	return r;
}

FLASH_API int flash_client_sandbox_export(struct flash_client *c, const char *session_id, const char *root,
					  flash_client_sink_fn sink, void *userdata,
					  struct flash_client_response **ret_refusal)
{
	struct xfer x = { .c = c, .method = "GET", .sink = sink, .sink_ud = userdata };
	int r;

	if (!c || !root || !sink || !ret_refusal)
		return -EINVAL;
	r = xfer_path(&x, session_id, "export", "root", root);
	if (r == 0)
		r = xfer_run(&x, ret_refusal);
	free(x.path);
	return r;
}
