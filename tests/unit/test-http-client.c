/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * common/http-client.h, the plain HTTP/1.1 client transport of
 * flowsdn-cni's agent client and libflash's provider client: reply heads
 * and bodies as a hostile or broken server sends them, endpoint URLs, and
 * connections; then <flash/client.h> over it against a scripted server on
 * a Unix socket and on loopback TCP (the request it sends, the answers it
 * takes and the ones it refuses).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/un.h>
#include <unistd.h>
#include <flash/client.h>

#include "helpers.h"
#include "http-client.h"
#include "util.h"

static int head_of(const char *s, struct http_reply_head *h)
{
	return http_reply_head_parse(s, strlen(s), 16384, h);
}

Test(http_client, reply_heads_that_are_well_formed)
{
	struct http_reply_head h;

	ASSERT_OK(head_of("HTTP/1.1 200 OK\r\nContent-Length: 12\r\nRetry-After: 7\r\n\r\nhello", &h), "head");
	cr_assert_eq(h.status, 200);
	cr_assert(h.has_length && h.length == 12 && !h.chunked);
	cr_assert_eq(h.retry_after, 7u);
	cr_assert_eq(h.head_len, strlen("HTTP/1.1 200 OK\r\nContent-Length: 12\r\nRetry-After: 7\r\n\r\n"));
	/* no reason phrase, no headers; HTTP/1.0; case-insensitive names */
	ASSERT_OK(head_of("HTTP/1.0 404\r\n\r\n", &h), "bare status line");
	cr_assert(h.status == 404 && !h.has_length && !h.chunked);
	ASSERT_OK(head_of("HTTP/1.1 503 Busy\r\ntransfer-encoding:   Chunked \r\n\r\n", &h), "chunked");
	cr_assert(h.chunked && h.status == 503);
}

Test(http_client, reply_heads_incomplete_or_too_large)
{
	struct http_reply_head h;
	char big[300];

	ASSERT_ERR(head_of("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", &h), -EAGAIN, "no blank line yet");
	memset(big, 'a', sizeof(big));
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	ASSERT_ERR(http_reply_head_parse(big, sizeof(big), 256, &h), -EMSGSIZE, "head over its bound");
}

Test(http_client, reply_heads_refused)
{
	static const char *const bad[] = {
		"HTTP/2 200 OK\r\n\r\n",                                        /* not 1.x */
		"HTTP/1.1 20 OK\r\n\r\n",                                       /* two digits */
		"HTTP/1.1 600 Odd\r\n\r\n",                                     /* past 599 */
		"HTTP/1.1 2000\r\n\r\n",                                        /* four digits */
		"ICY 200 OK\r\n\r\n",                                           /* not HTTP */
		"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",                           /* header without ':' */
		"HTTP/1.1 200 OK\r\n folded: value\r\n\r\n",                    /* obsolete line folding */
		"HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",                   /* bare LF */
		"HTTP/1.1 200 OK\r\nA: b\rContent-Length: 5\r\n\r\n",           /* bare CR hiding a header */
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", /* repeated length */
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",                /* not a number */
		"HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n",               /* two numbers */
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", /* past 64 bits */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",  /* a coding we do not take */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", /* both framings */
	};
	struct http_reply_head h;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(head_of(bad[i], &h), -EBADMSG, "head %zu accepted: %s", i, bad[i]);
}

/* http_reply_parse() of @s: its return, the body in @body. */
static int reply_of(const char *s, size_t max_body, char *body, size_t body_size)
{
	struct http_reply_head h;
	char *copy = strdup(s), *b;
	size_t bl;
	int r;

	cr_assert(copy);
	r = http_reply_parse(copy, strlen(copy), 16384, max_body, &h, &b, &bl);
	if (r == 0) {
		cr_assert(bl < body_size);
		memcpy(body, b, bl);
		body[bl] = '\0';
	}
	free(copy);
	return r;
}

Test(http_client, reply_bodies)
{
	char body[256];

	ASSERT_OK(reply_of("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 100, body, sizeof(body)), "length");
	cr_assert_str_eq(body, "hello");
	ASSERT_OK(reply_of("HTTP/1.1 200 OK\r\n\r\nuntil the close", 100, body, sizeof(body)), "close-delimited");
	cr_assert_str_eq(body, "until the close");
	ASSERT_OK(reply_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			   "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: x\r\n\r\n",
			   100, body, sizeof(body)),
		  "chunked with an extension and a trailer");
	cr_assert_str_eq(body, "hello, world");
	ASSERT_OK(reply_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 100, body, sizeof(body)),
		  "empty chunked");
	cr_assert_str_eq(body, "");
	ASSERT_OK(reply_of("HTTP/1.1 204 No Content\r\n\r\n", 100, body, sizeof(body)), "204");
	ASSERT_OK(reply_of("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
			   "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal",
			   100, body, sizeof(body)),
		  "interim answers before the final one");
	cr_assert_str_eq(body, "final");
}

Test(http_client, reply_bodies_refused)
{
	static const char *const bad[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello",            /* cut short */
		"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nhello",            /* bytes after it */
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",                     /* closed inside the head */
		"HTTP/1.1 204 No Content\r\n\r\nbody",                          /* a body where none may be */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", /* no last chunk */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", /* no CRLF after data */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nz\r\nhello\r\n0\r\n\r\n", /* size not hex */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nhello\r\n0\r\n\r\n", /* size past the data */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", /* size past 60 bits */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nextra", /* bytes after the end */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTrailer: x\r\n", /* trailer unterminated */
	};
	char body[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(reply_of(bad[i], 100, body, sizeof(body)), -EBADMSG, "reply %zu accepted: %s", i, bad[i]);
	ASSERT_ERR(reply_of("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world", 10, body, sizeof(body)), -E2BIG,
		   "length over the bound");
	ASSERT_ERR(reply_of("HTTP/1.1 200 OK\r\n\r\nhello world", 10, body, sizeof(body)), -E2BIG, "close over the bound");
	ASSERT_ERR(reply_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n",
			    10, body, sizeof(body)),
		   -E2BIG, "chunks over the bound");
}

Test(http_client, endpoint_urls)
{
	static const struct {
		const char *url, *host, *port, *prefix;
	} ok[] = {
		{ "http://127.0.0.1:8080", "127.0.0.1", "8080", "" },
		{ "http://localhost", "localhost", "80", "" },
		{ "http://[::1]:9/", "::1", "9", "" },
		{ "HTTP://example.org:65535/base/path//", "example.org", "65535", "/base/path" },
	};
	static const char *const bad[] = {
		"https://127.0.0.1", "ftp://x", "http://", "http://:80", "http://h:0", "http://h:65536", "http://h:8x",
		"http://h:", "http://u@h", "http://h/?q", "http://h#f", "http://[::1", "http://[]:1", "http://a b",
		"http://h:123456", "http://[::1]x",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char *h = NULL, *p = NULL, *x = NULL;

		ASSERT_OK(http_url_split(ok[i].url, &h, &p, &x), ok[i].url);
		cr_expect_str_eq(h, ok[i].host, "%s", ok[i].url);
		cr_expect_str_eq(p, ok[i].port, "%s", ok[i].url);
		cr_expect_str_eq(x, ok[i].prefix, "%s", ok[i].url);
		free(h);
		free(p);
		free(x);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *h = NULL, *p = NULL, *x = NULL;

		cr_expect_eq(http_url_split(bad[i], &h, &p, &x), -EINVAL, "%s accepted", bad[i]);
		cr_expect(!h && !p && !x, "%s: outputs set on failure", bad[i]);
	}
}

/* ---------------------------------------------------------------- a scripted server */

struct server {
	int lfd;
	char path[108];
	const char *answer; /* sent whole after the request head, then closed */
	size_t answer_len;
	char request[8192]; /* what the client sent (head and body) */
	size_t request_len;
	pthread_t thread;
};

static void *serve(void *arg)
{
	struct server *s = arg;
	int fd = accept(s->lfd, NULL, NULL);

	if (fd < 0)
		return NULL;
	/* Read the head, then as many body bytes as it says. */
	for (;;) {
		ssize_t n = recv(fd, s->request + s->request_len, sizeof(s->request) - 1 - s->request_len, 0);
		char *end, *cl;

		if (n <= 0)
			break;
		s->request_len += (size_t)n;
		s->request[s->request_len] = '\0';
		end = strstr(s->request, "\r\n\r\n");
		if (!end)
			continue;
		cl = strcasestr(s->request, "\r\nContent-Length: ");
		if (!cl || s->request_len - (size_t)(end + 4 - s->request) >= strtoul(cl + 18, NULL, 10))
			break;
	}
	if (s->answer_len)
		(void)!write(fd, s->answer, s->answer_len);
	close(fd);
	return NULL;
}

static void server_unix(struct server *s, const char *answer)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "/tmp/test-http-client.%d.sock", getpid());
	unlink(s->path);
	strcpy(sa.sun_path, s->path);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(s->lfd >= 0);
	cr_assert(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s: %s", s->path, strerror(errno));
	cr_assert(listen(s->lfd, 4) == 0);
	s->answer = answer;
	s->answer_len = strlen(answer);
	cr_assert(pthread_create(&s->thread, NULL, serve, s) == 0);
}

static unsigned int server_tcp(struct server *s, const char *answer)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);

	memset(s, 0, sizeof(*s));
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(s->lfd >= 0);
	cr_assert(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	cr_assert(listen(s->lfd, 4) == 0);
	cr_assert(getsockname(s->lfd, (struct sockaddr *)&sa, &sl) == 0);
	s->answer = answer;
	s->answer_len = strlen(answer);
	cr_assert(pthread_create(&s->thread, NULL, serve, s) == 0);
	return ntohs(sa.sin_port);
}

static void server_done(struct server *s)
{
	pthread_join(s->thread, NULL);
	close(s->lfd);
	if (s->path[0])
		unlink(s->path);
}

Test(http_client, connections)
{
	struct server s;
	int fd = -1;
	char port[8];
	unsigned int p;

	ASSERT_ERR(http_connect("/nonexistent/test-http-client.sock", NULL, NULL, util_mono_ms() + 1000, &fd), -ENOENT,
		   "no such socket");
	server_unix(&s, "HTTP/1.1 200 OK\r\n\r\n");
	ASSERT_OK(http_connect(s.path, NULL, NULL, util_mono_ms() + 1000, &fd), "connect to the Unix socket");
	ASSERT_OK(http_send_all(fd, "GET / HTTP/1.1\r\n\r\n", 18, util_mono_ms() + 1000), "send");
	ASSERT_OK(http_wait_fd(fd, POLLIN, util_mono_ms() + 2000), "an answer to read");
	close(fd);
	server_done(&s);

	/* A port nobody listens on: the listener closed again. */
	p = server_tcp(&s, "");
	close(s.lfd);
	pthread_cancel(s.thread);
	pthread_join(s.thread, NULL);
	snprintf(port, sizeof(port), "%u", p);
	ASSERT_ERR(http_connect(NULL, "127.0.0.1", port, util_mono_ms() + 1000, &fd), -ECONNREFUSED, "closed port");
	ASSERT_ERR(http_connect(NULL, "name.invalid", "80", util_mono_ms() + 1000, &fd), -EHOSTUNREACH,
		   "a name that resolves to nothing");

	/* Nothing to read: the deadline, not a hang. */
	server_unix(&s, "");
	ASSERT_OK(http_connect(s.path, NULL, NULL, util_mono_ms() + 1000, &fd), "connect");
	ASSERT_ERR(http_wait_fd(fd, POLLIN, util_mono_ms() + 50), -ETIMEDOUT, "silent server");
	ASSERT_OK(http_send_all(fd, "GET / HTTP/1.1\r\n\r\n", 18, util_mono_ms() + 1000), "send");
	close(fd);
	server_done(&s);
}

static void *accept_one_later(void *arg)
{
	int lfd = *(int *)arg, fd;
	struct timespec ts = { .tv_nsec = 50 * 1000000L };

	nanosleep(&ts, NULL);
	fd = accept(lfd, NULL, NULL);
	return (void *)(intptr_t)fd;
}

/* A Unix socket whose backlog is full answers EAGAIN and connects nothing
 * in the background: the connect is tried again until the deadline, and
 * goes through once the server takes a connection. */
Test(http_client, full_unix_backlog_is_waited_for)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd, fill[64], n, fd = -1;
	pthread_t t;
	void *accepted;
	int64_t t0;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/test-http-client-backlog.%d.sock", getpid());
	unlink(sa.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(lfd >= 0);
	cr_assert(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	cr_assert(listen(lfd, 0) == 0);
	for (n = 0; n < 64; n++) {
		fill[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		cr_assert(fill[n] >= 0);
		if (connect(fill[n], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			cr_assert_eq(errno, EAGAIN, "connect: %s", strerror(errno));
			close(fill[n]);
			break;
		}
	}
	cr_assert(n > 0 && n < 64, "the backlog took %d connections", n);
	t0 = util_mono_ms();
	ASSERT_ERR(http_connect(sa.sun_path, NULL, NULL, t0 + 100, &fd), -ETIMEDOUT, "a busy server, short deadline");
	cr_assert(util_mono_ms() - t0 >= 90, "gave up after %lld ms", (long long)(util_mono_ms() - t0));
	cr_assert(pthread_create(&t, NULL, accept_one_later, &lfd) == 0);
	ASSERT_OK(http_connect(sa.sun_path, NULL, NULL, util_mono_ms() + 5000, &fd), "connect once a slot is free");
	pthread_join(t, &accepted);
	cr_assert((intptr_t)accepted >= 0);
	close((int)(intptr_t)accepted);
	close(fd);
	for (int i = 0; i < n; i++)
		close(fill[i]);
	close(lfd);
	unlink(sa.sun_path);
}

/* ---------------------------------------------------------------- <flash/client.h> over it */

/* flash_client_get() of service "fs-1" at @endpoint: its return, the
 * response in *ret. */
static int client_get(const char *endpoint, struct flash_client_response **ret)
{
	struct flash_client_opts o = { .sz = sizeof(o), .endpoint = endpoint, .timeout_ms = 5000 };
	struct flash_client *c = NULL;
	int r;

	ASSERT_OK(flash_client_new(&o, &c), "client");
	ASSERT_OK(flash_client_set_token(c, "aaa.bbb.ccc"), "token");
	r = flash_client_get(c, "fs-1", ret);
	flash_client_free(c);
	return r;
}

Test(http_client, provider_client_request_and_answers)
{
	struct flash_client_response *resp = NULL;
	struct server s;
	char ep[160];
	unsigned int port;
	size_t len;

	/* The request on a Unix socket: one per connection, the token. */
	server_unix(&s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"id\":\"fs-1\"}");
	snprintf(ep, sizeof(ep), "unix:%s", s.path);
	ASSERT_OK(client_get(ep, &resp), "get over a Unix socket");
	server_done(&s);
	cr_assert(strncmp(s.request, "GET /provider/v1/services/fs-1 HTTP/1.1\r\nHost: localhost\r\n", 58) == 0, "%s",
		  s.request);
	cr_assert(strstr(s.request, "\r\nAuthorization: Bearer aaa.bbb.ccc\r\n"), "%s", s.request);
	cr_assert(strstr(s.request, "\r\nConnection: close\r\n"), "%s", s.request);
	cr_assert_eq(flash_client_response_status(resp), 200);
	cr_assert_str_eq(flash_client_response_body(resp, &len), "{\"id\":\"fs-1\"}");
	cr_assert_eq(len, 13u);
	flash_client_response_free(resp);

	/* TCP with a path prefix; a chunked error answer with Retry-After. */
	port = server_tcp(&s, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
			      "14\r\n{\"error\":{\"code\":\"bu\r\n"
			      "1b\r\nsy\",\"message\":\"try later\"}}\r\n0\r\n\r\n");
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u/flash/", port);
	resp = NULL;
	ASSERT_OK(client_get(ep, &resp), "get over TCP");
	server_done(&s);
	cr_assert(strncmp(s.request, "GET /flash/provider/v1/services/fs-1 HTTP/1.1\r\n", 47) == 0, "%s", s.request);
	snprintf(ep, sizeof(ep), "\r\nHost: 127.0.0.1:%u\r\n", port);
	cr_assert(strstr(s.request, ep), "Host header: %s", s.request);
	cr_assert_eq(flash_client_response_status(resp), 503);
	cr_assert_eq(flash_client_response_retry_after(resp), 3u);
	cr_assert_str_eq(flash_client_response_error_code(resp), "busy");
	cr_assert_str_eq(flash_client_response_error_message(resp), "try later");
	flash_client_response_free(resp);
}

Test(http_client, provider_client_refuses_broken_answers)
{
	static const char *const broken[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n{\"id\":\"fs-1\"}", /* cut short */
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}{}",               /* more than it said */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n",  /* no last chunk */
		"HTTP/9.9 200 OK\r\n\r\n{}",                                        /* not HTTP/1.x */
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",                         /* closed in the head */
	};
	struct flash_client_response *resp = NULL;
	struct server s;
	char ep[160];

	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		server_unix(&s, broken[i]);
		snprintf(ep, sizeof(ep), "unix:%s", s.path);
		cr_expect_eq(client_get(ep, &resp), -EPROTO, "answer %zu taken: %s", i, broken[i]);
		server_done(&s);
	}
	/* Accepted and closed without a word: as good as refused. */
	server_unix(&s, "");
	snprintf(ep, sizeof(ep), "unix:%s", s.path);
	ASSERT_ERR(client_get(ep, &resp), -ECONNREFUSED, "closed unanswered");
	server_done(&s);
	ASSERT_ERR(client_get("unix:/nonexistent/flash-operator.sock", &resp), -ENOENT, "no such socket");
}

/* The derivation provider/v1 documents, pinned to an id a running
 * flash-operator gave (bench/exec's "shell" of org-1/p-1), and what it
 * refuses. */
Test(http_client, service_ids_are_derived_from_the_name)
{
	char id[FLASH_CLIENT_SERVICE_ID_STRLEN], other[FLASH_CLIENT_SERVICE_ID_STRLEN];

	ASSERT_OK(flash_client_service_id("org-1", "p-1", "shell", id), "derive");
	cr_assert_str_eq(id, "fs-b2ec5adf898097ef316863d262617fa3");
	/* length-prefixed parts: moving a byte between them changes the id */
	ASSERT_OK(flash_client_service_id("org-1", "p-1s", "hell", other), "derive");
	cr_assert_str_neq(id, other);
	ASSERT_ERR(flash_client_service_id(NULL, "p-1", "shell", id), -EINVAL, "no organization");
	ASSERT_ERR(flash_client_service_id("org-1", NULL, "shell", id), -EINVAL, "no project");
	ASSERT_ERR(flash_client_service_id("org-1", "p-1", NULL, id), -EINVAL, "no name");
}
