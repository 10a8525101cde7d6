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
#include "http-client.h"
#include "json.h"
#include "util.h"

#define MAX_REPLY (1u << 20)

/*
 * HTTP/1.1 over the agent's Unix socket through common/http-client.h (not
 * libcurl: the plugin is exec'd for every ADD and DEL, and loading libcurl
 * with its TLS/LDAP/SSH dependency tree costs milliseconds per exec).  The
 * agent is the only peer: one request per connection ("Connection:
 * close"), everything bounded in time (one deadline for connect, send and
 * receive) and size.
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

/* Splits a reply into status and body (moved to the start of @b). */
static int http_parse(struct buf *b, long *status)
{
	struct http_reply_head h;
	char *body;
	size_t blen;

	if (http_reply_parse(b->data, b->len, MAX_REPLY, MAX_REPLY, &h, &body, &blen) < 0)
		return -FLOWSDN_E_AGENT_PROTOCOL;
	memmove(b->data, body, blen);
	b->data[blen] = '\0';
	b->len = blen;
	*status = h.status;
	return 0;
}

/* One request (@method; @body NULL: none).  Returns 0 with the reply body and
 * status, or a FLOWSDN_E_AGENT_* transport error. */
static int request(const struct agent_client_opts *opts, const char *method, const char *path, const char *body,
		   struct buf *reply, long *status, struct agent_client_err *err)
{
	const char *sock = opts ? opts->socket : NULL;
	unsigned int timeout = opts ? opts->timeout_ms : 0u;
	_cleanup_free_ char *req = NULL;
	_cleanup_close_ int fd = -1;
	size_t req_len;
	int64_t deadline;
	int r, n;

	if (timeout > 600000 || !path || !method)
		return -EINVAL;
	if (!sock)
		sock = AGENT_API_SOCKET;
	if (!timeout)
		timeout = 10000;
	if (strlen(sock) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
		return -ENAMETOOLONG;
	deadline = util_mono_ms() + timeout;
	/* The agent does not start what we will no longer wait for. */
	n = body ? asprintf(&req, "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
			    AGENT_API_DEADLINE_HEADER ": %lld\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
			    method, path, (long long)deadline, strlen(body), body)
		 : asprintf(&req, "%s %s HTTP/1.1\r\nHost: localhost\r\n" AGENT_API_DEADLINE_HEADER
			    ": %lld\r\nConnection: close\r\n\r\n", method, path, (long long)deadline);
	if (n < 0)
		return -ENOMEM;
	req_len = (size_t)n;

	r = http_connect(sock, NULL, NULL, deadline, &fd);
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
	r = http_send_all(fd, req, req_len, deadline);
	if (r < 0) {
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
			r = http_wait_fd(fd, POLLIN, deadline);
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
