/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The front door of the daemons' HTTP servers (flowsdn-agent,
 * flash-operator), private and written once: libmicrohttpd behind a
 * thread that accepts each connection and holds it until its request head
 * (request line and headers) has arrived, peeking without consuming.
 *
 * - A head that is malformed (a NUL or control character anywhere, which
 *   includes the path; two Content-Length headers; Content-Length with
 *   Transfer-Encoding; not an HTTP request line) is answered 400 there,
 *   one larger than max_header_bytes 431.
 * - A head that takes longer than header_timeout_ms is closed, however
 *   steadily it trickles; when max_connections heads are pending on a
 *   listener the oldest is closed for the newcomer.
 * - Complete heads go to libmicrohttpd, at most max_connections at once
 *   per listener, of which the last reserved_connections only take the
 *   requests reserved() names (503 for others, after waiting up to
 *   200 ms for a slot: libmicrohttpd counts a connection until some time
 *   after its socket closed).
 *
 * So neither slow clients nor stuck requests keep the reserved requests
 * from answering.  The door's own answers carry the body refusal() makes;
 * a NULL body closes the connection without an answer.  The door reads
 * heads in clear text: a TLS listener (http_server_listen_tls()) has each
 * connection's TLS terminated by a relay thread of its own (GnuTLS,
 * http-server-tls.c) that passes the clear text over a socket pair, so
 * TLS connections get the same checks, deadline (from accept: handshake
 * and head within header_timeout_ms) and bounds as plain ones.
 */
#ifndef FLASH_COMMON_HTTP_SERVER_H
#define FLASH_COMMON_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <microhttpd.h>

struct http_server;

/* Whether the request (method, path of a complete head) may use the
 * reserve. */
typedef bool (*http_server_reserved_fn)(const char *method, const char *path);
/* The JSON body of the door's answer @status explaining @msg (malloc'ed,
 * freed by the server); NULL: close the connection without answering. */
typedef char *(*http_server_refusal_fn)(unsigned int status, const char *msg);

struct http_server_opts {
	size_t sz;
	unsigned int max_connections;      /* per listener, pending heads and served each; 0: 64 */
	unsigned int reserved_connections; /* of those served, kept for reserved(); < max */
	unsigned int header_timeout_ms;    /* to receive a head; 0: 2000 */
	unsigned int idle_timeout_s;       /* libmicrohttpd's, once the head is in; 0: none */
	unsigned int per_ip_connections;   /* served per client address (TCP); 0: no limit */
	size_t max_header_bytes;           /* a head's size; 0: 16384 */
	unsigned int threads;              /* 0: a thread per connection; N: N threads (epoll) */
	MHD_AccessHandlerCallback handler; /* called with the cls of the listener */
	MHD_RequestCompletedCallback completed; /* may be NULL */
	http_server_reserved_fn reserved;  /* NULL: nothing is reserved */
	http_server_refusal_fn refusal;    /* NULL: plain-text bodies */
	bool upgrade;                      /* routes may take the connection over (MHD_ALLOW_UPGRADE) */
	bool suspend;                      /* routes may suspend and resume their connection
					      (MHD_ALLOW_SUSPEND_RESUME; with threads only) */
};

/* A server with no listener yet.  Errors: -EINVAL (no handler, a reserve
 * not below the bound), -ENOMEM. */
int http_server_new(const struct http_server_opts *opts, struct http_server **ret);
/* Serves the listening socket @fd (taken over: closed by
 * http_server_free(), and on failure) with @cls for the handler.  At most
 * four listeners.  Errors: -EINVAL, -E2BIG, -EBUSY (started), -EIO
 * (libmicrohttpd refused to start). */
int http_server_listen(struct http_server *s, int fd, void *cls);
/* http_server_listen() for TLS on @fd with the PEM certificate chain
 * and private key given (copied).  Errors: those of http_server_listen(),
 * -EINVAL for a certificate or key GnuTLS does not take. */
int http_server_listen_tls(struct http_server *s, int fd, void *cls, const char *cert_pem, size_t cert_len,
			   const char *key_pem, size_t key_len);
/* Starts the front door.  Errors: -EINVAL (no listener), -EBUSY, -errno. */
int http_server_start(struct http_server *s);
/* Stops the door and libmicrohttpd, closes the listeners; NULL is fine. */
void http_server_free(struct http_server *s);

/* A request body as libmicrohttpd hands it to a route, in pieces: kept
 * NUL-terminated up to @max bytes; past that only marked too large (the
 * route answers 413 once the whole body has gone by). */
struct http_body {
	char *data;
	size_t len;
	bool too_large;
};

/* Appends @n bytes of @data; 0, or -ENOMEM. */
int http_body_feed(struct http_body *b, const char *data, size_t n, size_t max);
/* Frees what http_body_feed() kept; @b is empty again. */
void http_body_free(struct http_body *b);

#endif
