/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent API's client transport (agent-client.h): HTTP/1.1 over the
 * agent's Unix socket, bounded in time and size; used by flowsdn-cni
 * and flash-operator. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <flowsdn/common.h>

#include "agent-client.h"
#include "json.h"
#include "util.h"

#define MAX_REPLY (1u << 20)

/*
 * A minimal HTTP/1.1 client over the agent's Unix socket.  Not libcurl:
 * the plugin is exec'd for every ADD and DEL, and loading libcurl with
 * its TLS/LDAP/SSH dependency tree costs about 20 ms per exec (measured:
 * an empty program linked with -lcurl starts in 25 ms, without it in
 * 4 ms), which alone would exceed the whole ADD budget.  The agent is the
 * only peer: one request per connection ("Connection: close"), a reply
 * with Content-Length or ended by close, everything bounded in time
 * (one deadline for connect, send and receive) and size.
 */
struct buf {
	char *data;
	size_t len;
};

void agent_client_err_set(struct agent_client_err *err, long status, const char *msg)
{
	if (!err)
		return;
	err->http_status = status;
	snprintf(err->message, sizeof(err->message), "%s", msg);
}

/* Waits for @events on @fd until @deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline - agent_api_now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Splits a reply into status and body (moved to the start of @b). */
static int http_parse(struct buf *b, long *status)
{
	char *end = b->data ? strstr(b->data, "\r\n\r\n") : NULL, *cl;
	unsigned long code, clen;
	size_t head;

	if (!end || strncmp(b->data, "HTTP/1.", 7) != 0 || b->len < 12 || b->data[8] != ' ')
		return -FLOWSDN_E_AGENT_PROTOCOL;
	code = strtoul(b->data + 9, NULL, 10);
	if (code < 100 || code > 599)
		return -FLOWSDN_E_AGENT_PROTOCOL;
	head = (size_t)(end + 4 - b->data);
	*end = '\0';
	if (strcasestr(b->data, "\r\nTransfer-Encoding:"))
		return -FLOWSDN_E_AGENT_PROTOCOL; /* the agent never chunks */
	cl = strcasestr(b->data, "\r\nContent-Length:");
	if (cl) {
		clen = strtoul(cl + 17, NULL, 10);
		if (clen != b->len - head)
			return -FLOWSDN_E_AGENT_PROTOCOL;
	}
	memmove(b->data, b->data + head, b->len - head + 1);
	b->len -= head;
	*status = (long)code;
	return 0;
}

/* One request (@method; @body NULL: none).  Returns 0 with the reply body and
 * status, or a FLOWSDN_E_AGENT_* transport error. */
static int request(const struct agent_client_opts *opts, const char *method, const char *path, const char *body,
		   struct buf *reply, long *status, struct agent_client_err *err)
{
	const char *sock = opts ? opts->socket : NULL;
	unsigned int timeout = opts ? opts->timeout_ms : 0u;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_free_ char *req = NULL;
	_cleanup_close_ int fd = -1;
	size_t req_len, sent = 0;
	int64_t deadline;
	int r, n;

	if (timeout > 600000 || !path || !method)
		return -EINVAL;
	if (!sock)
		sock = AGENT_API_SOCKET;
	if (!timeout)
		timeout = 10000;
	if (strlen(sock) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	deadline = agent_api_now_ms() + timeout;
	/* The agent does not start what we will no longer wait for. */
	n = body ? asprintf(&req, "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
			    AGENT_API_DEADLINE_HEADER ": %lld\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
			    method, path, (long long)deadline, strlen(body), body)
		 : asprintf(&req, "%s %s HTTP/1.1\r\nHost: localhost\r\n" AGENT_API_DEADLINE_HEADER
			    ": %lld\r\nConnection: close\r\n\r\n", method, path, (long long)deadline);
	if (n < 0)
		return -ENOMEM;
	req_len = (size_t)n;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EAGAIN || errno == EINPROGRESS) {
			/* Backlog full: the agent is alive but busy. */
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			r = wait_fd(fd, POLLOUT, deadline);
			if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr)
				r = -soerr;
		} else {
			r = -errno;
		}
		if (r == -ETIMEDOUT) {
			agent_client_err_set(err, 0, "connecting: no answer within the timeout");
			return -FLOWSDN_E_AGENT_TIMEOUT;
		}
		if (r < 0) {
			char msg[256];

			snprintf(msg, sizeof(msg), "connecting to %s: %s", sock, strerror(-r));
			agent_client_err_set(err, 0, msg);
			return -FLOWSDN_E_AGENT_UNREACHABLE;
		}
	}
	while (sent < req_len) {
		ssize_t w = send(fd, req + sent, req_len - sent, MSG_NOSIGNAL);

		if (w > 0) {
			sent += (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			r = wait_fd(fd, POLLOUT, deadline);
			if (r == 0)
				continue;
		} else {
			r = -errno;
		}
		agent_client_err_set(err, 0, r == -ETIMEDOUT ? "sending: no progress within the timeout" : "sending the request failed");
		return r == -ETIMEDOUT ? -FLOWSDN_E_AGENT_TIMEOUT : -FLOWSDN_E_AGENT_UNREACHABLE;
	}
	reply->data = malloc(MAX_REPLY + 1);
	if (!reply->data)
		return -ENOMEM;
	reply->data[0] = '\0';
	for (;;) {
		ssize_t got = recv(fd, reply->data + reply->len, MAX_REPLY + 1 - reply->len, 0);

		if (got > 0) {
			reply->len += (size_t)got;
			if (reply->len > MAX_REPLY) {
				agent_client_err_set(err, 0, "reply larger than 1 MiB");
				return -FLOWSDN_E_AGENT_PROTOCOL;
			}
			reply->data[reply->len] = '\0';
			continue;
		}
		if (got == 0)
			break;
		if (errno == EAGAIN || errno == EINTR) {
			r = wait_fd(fd, POLLIN, deadline);
			if (r == 0)
				continue;
			agent_client_err_set(err, 0, "no answer within the timeout");
			return -FLOWSDN_E_AGENT_TIMEOUT;
		}
		if (reply->len == 0 && (errno == ECONNRESET || errno == EPIPE)) {
			/* It died (or was killed) with the request in hand:
			 * down, as if it had never accepted (a DEL is queued,
			 * and replaying one that did happen is a no-op). */
			agent_client_err_set(err, 0, "the agent went away before answering");
			return -FLOWSDN_E_AGENT_UNREACHABLE;
		}
		agent_client_err_set(err, 0, "reading the reply failed");
		return -FLOWSDN_E_AGENT_PROTOCOL;
	}
	if (reply->len == 0) {
		/* Accepted and closed unanswered: stopping, or over its
		 * connection limit. */
		agent_client_err_set(err, 0, "the agent closed the connection without answering");
		return -FLOWSDN_E_AGENT_UNREACHABLE;
	}
	if (http_parse(reply, status) < 0) {
		agent_client_err_set(err, 0, "reply is not HTTP/1.x");
		return -FLOWSDN_E_AGENT_PROTOCOL;
	}
	return 0;
}

/* Interprets a JSON reply: 2xx parses into *ret_root; an error status
 * gives the domain code of the agent's error body (message in @err). */
static int reply_parse(struct buf *reply, long status, struct json_value **ret_root, struct agent_client_err *err)
{
	struct json_value *root = NULL;
	int r;

	r = reply->data ? json_parse(reply->data, reply->len, NULL, &root, NULL) : -EBADMSG;
	if (r == -ENOMEM)
		return r;
	if (status < 200 || status > 299) {
		char msg[256];
		int code;

		if (r < 0 || agent_api_error_parse(root, &code, msg, sizeof(msg)) < 0) {
			agent_client_err_set(err, status, r < 0 ? "error reply is not JSON" : "error reply without code and message");
			json_free(root);
			return -FLOWSDN_E_AGENT_PROTOCOL;
		}
		agent_client_err_set(err, status, msg);
		json_free(root);
		return code;
	}
	if (r < 0 || !json_is(root, JSON_OBJECT)) {
		agent_client_err_set(err, status, "reply is not a JSON object");
		json_free(root);
		return -FLOWSDN_E_AGENT_PROTOCOL;
	}
	*ret_root = root;
	return 0;
}

int agent_client_call(const struct agent_client_opts *opts, const char *method, const char *path, const char *body,
		      struct json_value **ret_root, struct agent_client_err *err)
{
	struct buf reply = { 0 };
	long status = 0;
	int r;

	if (!ret_root)
		return -EINVAL;
	r = request(opts, method, path, body, &reply, &status, err);
	if (r == 0)
		r = reply_parse(&reply, status, ret_root, err);
	free(reply.data);
	return r;
}

int agent_client_health(const struct agent_client_opts *opts,
					    struct agent_client_err *err)
{
	struct json_value *root = NULL;
	const char *status;
	int r;

	r = agent_client_call(opts, "GET", "/v1/healthz", NULL, &root, err);
	if (r < 0)
		return r;
	status = json_string_value(json_get(root, "status"));
	if (!status || strcmp(status, "ok") != 0) {
		agent_client_err_set(err, 200, status ? status : "healthz without status");
		r = -FLOWSDN_E_AGENT_PROTOCOL;
	}
	json_free(root);
	return r;
}

int agent_client_get(const struct agent_client_opts *opts, const char *path,
					 char **ret_body, long *ret_status)
{
	struct buf reply = { 0 };
	long status = 0;
	int r;

	if (!path || path[0] != '/' || !ret_body || !ret_status)
		return -EINVAL;
	r = request(opts, "GET", path, NULL, &reply, &status, NULL);
	if (r < 0) {
		free(reply.data);
		return r;
	}
	if (!reply.data) {
		reply.data = strdup("");
		if (!reply.data)
			return -ENOMEM;
	}
	*ret_body = reply.data;
	*ret_status = status;
	return 0;
}
