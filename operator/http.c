/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmicrohttpd wiring of the provider API (http.h).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <flash/client.h>
#include <flash/file.h>

#include "http.h"
#include "http-server.h"
#include "sandbox-http.h"
#include "json.h"
#include "util.h"

struct op_http {
	struct op_provider *provider;
	struct http_server *door;  /* the Unix socket and TCP (TLS relayed, http-server.h) */
	size_t max_body;
	uint16_t port;
	char *cert, *key;
	size_t key_len;
	char *unix_path;
	struct op_sandbox_http *sandbox; /* NULL: no sandbox routes */
};

/* Per request: the body as it arrives; an exec session reserved until
 * the upgrade starts it. */
struct pending {
	struct http_body body;
	struct op_shell_session *upgrade;
	struct op_sandbox_req *sandbox; /* a sandbox route's request (sandbox-http.h) */
};

static enum MHD_Result send_answer(struct MHD_Connection *conn, const struct op_response *r)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(r->body_len, r->body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	char ra[16];

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", r->content_type ? r->content_type : "application/json");
	if (r->retry_after) {
		snprintf(ra, sizeof(ra), "%u", r->retry_after);
		MHD_add_response_header(resp, "Retry-After", ra);
	}
	ret = MHD_queue_response(conn, (unsigned int)r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static const char *query_arg(void *ctx, const char *key)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

static const char *header_arg(void *ctx, const char *name)
{
	return MHD_lookup_connection_value(ctx, MHD_HEADER_KIND, name);
}

struct query_walk {
	const char *key;
	const char **out;
	size_t max, n;
};

static enum MHD_Result query_one(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct query_walk *q = cls;

	(void)kind;
	if (strcmp(key, q->key) == 0) {
		if (q->n < q->max)
			q->out[q->n] = value ? value : "";
		q->n++;
	}
	return MHD_YES;
}

static size_t query_all_arg(void *ctx, const char *key, const char **out, size_t max)
{
	struct query_walk q = { .key = key, .out = out, .max = max };

	MHD_get_connection_values(ctx, MHD_GET_ARGUMENT_KIND, query_one, &q);
	return q.n;
}

/* The session ends: the upgraded connection is closed through MHD. */
static void upgrade_done(void *ctx)
{
	MHD_upgrade_action(ctx, MHD_UPGRADE_ACTION_CLOSE);
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra_in,
		       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct pending *pd = req_cls;
	struct op_shell_session *s = pd ? pd->upgrade : NULL;

	(void)cls;
	(void)conn;
	if (pd)
		pd->upgrade = NULL;
	if (!s || op_shell_start(s, sock, extra_in, extra_in_size, upgrade_done, urh) < 0)
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

/* 101 Switching Protocols to the exec WebSocket. */
static enum MHD_Result send_upgrade(struct MHD_Connection *conn, struct pending *pd, struct op_response *r)
{
	struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, NULL);
	enum MHD_Result ret;

	if (!resp) {
		op_shell_cancel(r->upgrade);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", r->ws_accept);
	MHD_add_response_header(resp, "Sec-WebSocket-Protocol", FLASH_CLIENT_EXEC_PROTOCOL);
	pd->upgrade = r->upgrade;
	ret = MHD_queue_response(conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
	MHD_destroy_response(resp);
	if (ret != MHD_YES) {
		pd->upgrade = NULL;
		op_shell_cancel(r->upgrade);
	}
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct op_http *h = cls;
	struct pending *pd = *con_cls;
	struct op_response resp;
	enum MHD_Result ret;

	(void)version;
	if (!pd) {
		pd = calloc(1, sizeof(*pd));
		if (!pd)
			return MHD_NO;
		*con_cls = pd;
		if (h->sandbox && op_sandbox_http_path(url))
			return op_sandbox_http_begin(h->sandbox, conn, method, url, &pd->sandbox);
		return MHD_YES;
	}
	if (pd->sandbox)
		return op_sandbox_http_step(pd->sandbox, conn, upload_data, upload_size);
	if (*upload_size) {
		if (http_body_feed(&pd->body, upload_data, *upload_size, h->max_body) < 0)
			return MHD_NO;
		*upload_size = 0;
		return MHD_YES;
	}
	if (pd->body.too_large) {
		struct op_response r = { .status = 413, .content_type = "application/json" };
		char body[160];

		snprintf(body, sizeof(body),
			 "{\"error\":{\"code\":\"too-large\",\"message\":\"the body is larger than %zu bytes\"}}\n",
			 h->max_body);
		r.body = body;
		r.body_len = strlen(body);
		return send_answer(conn, &r);
	}
	struct op_request req = {
		.method = method,
		.path = url,
		.authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
		.body = pd->body.data ? pd->body.data : "",
		.body_len = pd->body.len,
		.query = query_arg,
		.query_ctx = conn,
		.header = header_arg,
		.query_all = query_all_arg,
	};
	op_provider_handle(h->provider, &req, &resp);
	ret = resp.upgrade ? send_upgrade(conn, pd, &resp) : send_answer(conn, &resp);
	op_response_clear(&resp);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct pending *pd = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (pd) {
		/* Queued but never upgraded (the client went away first). */
		op_shell_cancel(pd->upgrade);
		op_sandbox_http_completed(pd->sandbox);
		http_body_free(&pd->body);
		free(pd);
		*con_cls = NULL;
	}
}

static int unix_listen(const char *path, char *err, size_t err_size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat sb;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, err_size, "%s: socket path too long", path);
		return -ENAMETOOLONG;
	}
	/* Replace a stale socket, never anything else. */
	if (lstat(path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode)) {
			snprintf(err, err_size, "%s exists and is not a socket", path);
			return -EEXIST;
		}
		unlink(path);
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* fchmod before bind does not apply to the socket file; a umask
	 * of 0177 around bind does. */
	mode_t old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 256) < 0) {
		r = -errno;
		snprintf(err, err_size, "%s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *ret_len, char *err, size_t err_size)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char host[128];
	const char *colon, *port;
	size_t hl;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			goto bad;
		hl = (size_t)(end - s - 1);
		if (hl < sizeof(host))
			memcpy(host, s + 1, hl);
		port = end + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			goto bad;
		hl = (size_t)(colon - s);
		port = colon + 1;
		if (hl < sizeof(host))
			memcpy(host, s, hl);
	}
	if (hl == 0 || hl >= sizeof(host) || !*port)
		goto bad;
	host[hl] = '\0';
	if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
		goto bad;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*ret_len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
bad:
	snprintf(err, err_size, "--listen %s: expected ADDRESS:PORT or [IPv6]:PORT with a numeric address", s);
	return -EINVAL;
}

int op_http_read_pem(const char *path, bool secret, char **ret, size_t *ret_len, char *err, size_t err_size)
{
	int r = secret ? flash_file_read_secret(path, 0, ret, ret_len) : util_read_file(path, 1 << 20, ret, ret_len);

	if (r < 0)
		snprintf(err, err_size, "%s: %s%s", path, strerror(-r),
			 r == -EPERM ? " (a key file must be owned by us with mode 0600 or 0400)" : "");
	return r;
}

/* The front door's answers in the provider API's error shape; a head
 * that did not arrive in time is closed without one. */
static char *door_refusal(unsigned int status, const char *msg)
{
	struct json_writer *w;
	char *body = NULL;

	if (status == 408)
		return NULL;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_key(w, "error");
	jw_object_open(w);
	jw_kv_string(w, "code", status == 503 ? "unavailable" : status == 431 ? "too-large" : "bad-request");
	jw_kv_string(w, "message", msg);
	jw_object_close(w);
	jw_object_close(w);
	if (json_writer_finish(w, &body, NULL) < 0)
		return NULL;
	return body;
}

/* The reserve keeps room for the health check. */
static bool door_reserved(const char *method, const char *path)
{
	return !strcmp(method, "GET") && !strcmp(path, "/healthz");
}

/* A plain TCP listener on @ss; the bound port in @ret_port. */
static int tcp_listen(const struct sockaddr_storage *ss, socklen_t sl, uint16_t *ret_port)
{
	struct sockaddr_storage bound;
	socklen_t bl = sizeof(bound);
	int fd, one = 1, r;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (const struct sockaddr *)ss, sl) < 0 || listen(fd, 256) < 0 ||
	    getsockname(fd, (struct sockaddr *)&bound, &bl) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*ret_port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						       : ((struct sockaddr_in *)&bound)->sin_port);
	return fd;
}

int op_http_tcp_listen(const char *listen, uint16_t *ret_port, char *err, size_t err_size)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int r = parse_listen(listen, &ss, &sl, err, err_size);

	if (r < 0)
		return r;
	r = tcp_listen(&ss, sl, ret_port);
	if (r < 0)
		snprintf(err, err_size, "%s: cannot listen (address in use or not local?)", listen);
	return r;
}

int op_http_start(struct op_provider *p, const struct op_http_opts *opts, struct op_http **ret, char *err,
		  size_t err_size)
{
	unsigned int max_conn = OPTS_GET(opts, max_connections, 0) ?: 512;
	unsigned int per_ip = OPTS_GET(opts, per_ip_connections, 0) ?: 64;
	unsigned int timeout = OPTS_GET(opts, timeout_s, 0) ?: 10;
	/* A head arrives within the idle timeout, and within 5 s. */
	unsigned int header_ms = OPTS_GET(opts, header_timeout_ms, 0) ?: (timeout >= 5 ? 5000 : timeout * 1000);
	unsigned int reserved = OPTS_GET(opts, reserved_connections, 0) ?: max_conn / 16;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* One thread per CPU: more only adds context switches (epoll). */
	unsigned int threads = OPTS_GET(opts, threads, 0) ?: (unsigned int)(cpus < 1 ? 1 : cpus > 16 ? 16 : cpus);
	size_t max_header = OPTS_GET(opts, max_header_bytes, 0) ?: 16384;
	struct http_server_opts so = {
		.sz = sizeof(so),
		.max_connections = max_conn,
		.reserved_connections = reserved,
		.header_timeout_ms = header_ms,
		.idle_timeout_s = timeout,
		.per_ip_connections = per_ip,
		.max_header_bytes = max_header,
		.threads = threads,
		.handler = on_request,
		.completed = on_completed,
		.upgrade = true, /* the Web Shell's WebSocket */
		.suspend = true, /* the sandbox routes' streams */
		.reserved = door_reserved,
		.refusal = door_refusal,
	};
	struct op_http *h;
	size_t cert_len = 0;
	int r, fd;

	if (!p || !opts || !OPTS_VALID(opts, op_http_opts) || !ret || (!opts->listen && !opts->unix_path) ||
	    (!opts->tls_cert_file != !opts->tls_key_file))
		return -EINVAL;
	if (reserved >= max_conn || header_ms > 600000) {
		snprintf(err, err_size, "%s", reserved >= max_conn ? "the reserve must be smaller than the connection bound"
								   : "the header timeout is at most 600000 ms");
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->provider = p;
	h->max_body = OPTS_GET(opts, max_body_bytes, 0) ?: 1u << 20;
	if (OPTS_GET(opts, sandbox, NULL)) {
		r = op_sandbox_http_new(p, opts->sandbox, OPTS_GET(opts, sandbox_opts, NULL), &h->sandbox);
		if (r < 0) {
			snprintf(err, err_size, "cannot set up the sandbox routes: %s", strerror(-r));
			goto fail;
		}
	}

	r = http_server_new(&so, &h->door);
	if (r < 0) {
		snprintf(err, err_size, "cannot set up the HTTP server: %s", strerror(-r));
		goto fail;
	}
	if (opts->unix_path) {
		fd = unix_listen(opts->unix_path, err, err_size);
		if (fd < 0) {
			r = fd;
			goto fail;
		}
		h->unix_path = strdup(opts->unix_path);
		if (!h->unix_path) {
			close(fd);
			r = -ENOMEM;
			goto fail;
		}
		if (http_server_listen(h->door, fd, h) < 0) {
			snprintf(err, err_size, "%s: cannot start the HTTP server", opts->unix_path);
			r = -EIO;
			goto fail;
		}
	}
	if (opts->listen) {
		struct sockaddr_storage ss;
		socklen_t sl;

		r = parse_listen(opts->listen, &ss, &sl, err, err_size);
		if (r < 0)
			goto fail;
		if (opts->tls_cert_file) {
			r = op_http_read_pem(opts->tls_cert_file, false, &h->cert, &cert_len, err, err_size);
			if (r == 0)
				r = op_http_read_pem(opts->tls_key_file, true, &h->key, &h->key_len, err, err_size);
			if (r < 0)
				goto fail;
		}
		fd = tcp_listen(&ss, sl, &h->port);
		if (fd < 0) {
			snprintf(err, err_size, "%s: cannot listen (address in use or not local?)", opts->listen);
			r = -EADDRNOTAVAIL;
			goto fail;
		}
		/* TLS goes through the same front door: a relay terminates it
		 * and the door checks the clear text. */
		r = opts->tls_cert_file ? http_server_listen_tls(h->door, fd, h, h->cert, cert_len, h->key, h->key_len)
					: http_server_listen(h->door, fd, h);
		if (r < 0) {
			snprintf(err, err_size, "%s: cannot start the HTTP server%s", opts->listen,
				 r == -EINVAL ? ": the TLS certificate and key are not usable together" : "");
			goto fail;
		}
	}
	if (h->door) {
		r = http_server_start(h->door);
		if (r < 0) {
			snprintf(err, err_size, "cannot start the HTTP front door: %s", strerror(-r));
			goto fail;
		}
	}
	*ret = h;
	return 0;
fail:
	op_http_stop(h);
	return r;
}

uint16_t op_http_port(const struct op_http *h)
{
	return h ? h->port : 0;
}

void op_http_stop(struct op_http *h)
{
	if (!h)
		return;
	/* Upgraded connections end before the server stops. */
	op_provider_stop_exec(h->provider);
	/* Suspended connections are resumed before libmicrohttpd stops. */
	op_sandbox_http_stop(h->sandbox);
	http_server_free(h->door);
	op_sandbox_http_free(h->sandbox);
	if (h->unix_path) {
		unlink(h->unix_path);
		free(h->unix_path);
	}
	free(h->cert);
	if (h->key) {
		explicit_bzero(h->key, h->key_len);
		free(h->key);
	}
	free(h);
}
