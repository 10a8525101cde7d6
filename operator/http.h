/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The HTTP side of flash-operator (private to operator/): libmicrohttpd
 * on TCP (TLS with a certificate and key) and/or a Unix socket, feeding
 * complete requests to op_provider_handle().
 *
 * The Unix socket and plain TCP go through the front door of
 * common/http-server.h: a malformed head (a NUL or control character, two
 * Content-Length headers) is 400, a head not received within the header
 * timeout is closed, pending heads and requests served are bounded per
 * listener with a reserve for GET /healthz; then an idle timeout, client
 * addresses, header bytes and body bytes (413 beyond) are bounded.  TCP
 * with TLS is libmicrohttpd's own listener (connections in total and per
 * client address, the idle timeout): the door cannot read heads there.
 * The server is event driven (epoll, a small thread pool): a slow client
 * holds one connection slot, never a thread or a lock.
 */
#ifndef FLASH_OPERATOR_HTTP_H
#define FLASH_OPERATOR_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider.h"

struct flash_sandbox_provider;
struct op_sandbox_http_opts;

struct op_http_opts {
	size_t sz;
	const char *listen;        /* "ADDRESS:PORT" ("[v6]:PORT"); NULL: no TCP */
	const char *unix_path;     /* Unix socket (mode 0600); NULL: none */
	const char *tls_cert_file; /* PEM; with tls_key_file: HTTPS on TCP */
	const char *tls_key_file;  /* PEM, mode 0600 or 0400, owned by us */
	unsigned int max_connections; /* per listener, heads pending and served each; 0: 512 */
	unsigned int per_ip_connections; /* 0: 64 (TCP only) */
	unsigned int timeout_s;    /* idle timeout, 0: 10 */
	size_t max_header_bytes;   /* 0: 16 KiB */
	size_t max_body_bytes;     /* 0: 1 MiB */
	unsigned int threads;      /* 0: one per CPU (at most 16) */
	unsigned int header_timeout_ms; /* to receive a head; 0: min(timeout_s, 5 s) */
	unsigned int reserved_connections; /* of those served, for GET /healthz; 0: 1/16 */
	/* Sandbox sessions (sandbox-http.h): served under
	 * /provider/v1/sandboxes when set (borrowed, outlives the server). */
	struct flash_sandbox_provider *sandbox;
	const struct op_sandbox_http_opts *sandbox_opts; /* NULL: defaults */
};

struct op_http;

/* Starts listening.  On failure @err says what.  Returns 0, -EINVAL,
 * -ENOTSUP (TLS asked, libmicrohttpd built without it), -errno. */
int op_http_start(struct op_provider *p, const struct op_http_opts *opts, struct op_http **ret, char *err,
		  size_t err_size);

/* The bound TCP port (useful with port 0), 0 without TCP. */
uint16_t op_http_port(const struct op_http *h);

/* Stops the server (waits for the threads); NULL is fine. */
void op_http_stop(struct op_http *h);

/* Shared with the webhook listener (webhook.c): a non-blocking listening
 * TCP socket on @listen ("ADDRESS:PORT", "[v6]:PORT", numeric) and its
 * bound port; a PEM file (@secret: the key rules of flash_file_read_secret()).
 * On failure @err says what; -EINVAL, -errno. */
int op_http_tcp_listen(const char *listen, uint16_t *ret_port, char *err, size_t err_size);
int op_http_read_pem(const char *path, bool secret, char **ret, size_t *ret_len, char *err, size_t err_size);

#endif
