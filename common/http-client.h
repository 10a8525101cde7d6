/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one plain HTTP/1.1 client transport of the project (private,
 * common/libcommon.la): a connection of our own to a Unix socket or a TCP
 * host, one deadline (CLOCK_MONOTONIC ms, util_mono_ms()) for connect,
 * send and receive, and the parser of a whole reply read until the server
 * closed ("Connection: close": one request per connection).  Not libcurl:
 * its TLS/LDAP/SSH dependency tree costs a program linking it 6 ms of
 * dynamic loading at every start (measured on an empty program,
 * bench/exec), which flowsdn-cni (exec'd at every ADD, common/agent-client.c)
 * and flashctl (libflash/client*.c, Web Shell round trips) do not pay.
 * TLS is libcurl's (libflash loads it only for https://).
 *
 * Replies are bounded by the caller; everything in a reply is checked: the
 * status line, Content-Length against the bytes received, chunked framing
 * (sizes, CRLFs, the last chunk), duplicate or contradicting framing
 * headers.
 */
#ifndef FLASH_COMMON_HTTP_CLIENT_H
#define FLASH_COMMON_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Waits for @events (POLLIN, POLLOUT) on @fd until @deadline: 0, -ETIMEDOUT
 * or -errno (EINTR retried). */
int http_wait_fd(int fd, short events, int64_t deadline);

/* A connected, non-blocking, close-on-exec stream socket: to the Unix
 * socket @unix_path when not NULL, else to @host (a name, an IPv4 address
 * or an IPv6 address without brackets) and @port (decimal), each address
 * of the name tried in turn until @deadline.  -ENOENT (no such socket
 * file), -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH (the name resolves to
 * nothing), -ENAMETOOLONG, -errno. */
int http_connect(const char *unix_path, const char *host, const char *port, int64_t deadline, int *ret_fd);

/* Writes all of @buf to the non-blocking @fd before @deadline (MSG_NOSIGNAL):
 * 0, -ETIMEDOUT, -EPIPE or -errno. */
int http_send_all(int fd, const void *buf, size_t len, int64_t deadline);

/* Splits "http://HOST[:PORT][/PREFIX]" into host (brackets of an IPv6
 * literal removed), port ("80" when none) and the path prefix (without a
 * trailing '/', "" when none), each malloc'd.  -EINVAL for another scheme,
 * an empty or malformed host, a port outside 1..65535, user info, a query or
 * a fragment. */
int http_url_split(const char *url, char **ret_host, char **ret_port, char **ret_prefix);

/* The head of a reply: complete when it holds "\r\n\r\n". */
struct http_reply_head {
	int status;               /* 100..599 */
	size_t head_len;          /* bytes up to and including the blank line */
	bool chunked;             /* Transfer-Encoding: chunked */
	bool has_length;
	uint64_t length;          /* Content-Length, when has_length */
	unsigned int retry_after; /* seconds (Retry-After), 0 when none */
};

/* Parses the head at the start of @buf (@len bytes, not necessarily
 * NUL-terminated): 0, -EAGAIN when the blank line is not there yet (and
 * @len is under @max_head), -EMSGSIZE when it is not within @max_head
 * bytes, -EBADMSG when it is not an HTTP/1.x reply head (status line, a
 * header without ':', a bad or repeated Content-Length, a Transfer-Encoding
 * other than chunked, both framings at once). */
int http_reply_head_parse(const char *buf, size_t len, size_t max_head, struct http_reply_head *ret);

/* A whole reply read until the server closed, interim 1xx heads (not 101)
 * before it skipped: its head checked as above,
 * the body located (*ret_body, *ret_body_len: inside @buf, a chunked body
 * decoded in place) and checked against its framing: -EBADMSG for a body
 * shorter than its Content-Length, bytes after it, chunk framing errors or
 * a chunked body without its last chunk; -E2BIG for a body over
 * @max_body. */
int http_reply_parse(char *buf, size_t len, size_t max_head, size_t max_body, struct http_reply_head *ret_head,
		     char **ret_body, size_t *ret_body_len);

/* A chunked body decoded as it streams, byte for byte the rules of
 * http_reply_parse(): hex sizes (at most 15 digits) with extensions
 * ignored up to CRLF, data and its CRLF, the last chunk (size 0), trailer
 * lines up to a blank line, and nothing after it.  Zeroed to start. */
struct http_chunked {
	int state;
	uint64_t left;
	unsigned int digits;
	bool line_empty;
};

/* Feeds @n bytes of the body; the decoded data goes to @sink (with
 * @userdata) as it comes.  0, -EBADMSG (framing broken, or bytes after
 * the end), or the sink's negative return. */
int http_chunked_feed(struct http_chunked *d, const void *buf, size_t n,
		      int (*sink)(const void *data, size_t len, void *userdata), void *userdata);
/* True once the last chunk and the trailers went by. */
bool http_chunked_done(const struct http_chunked *d);

#endif
