/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The provider client's connections (client-private.h): unix: and http://
 * endpoints through common/http-client.h, https:// through libcurl
 * (CONNECT_ONLY: libcurl makes and verifies the TLS connection, the
 * client speaks HTTP/1.1 over it), loaded when the first https://
 * connection is made.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client-private.h"
#include "dl.h"
#include "http-client.h"
#include "internal.h"
#include "util.h"

int client__curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	default:
		return -EPROTO;
	}
}

static int open_tls(const struct flash_client *c, int64_t deadline, struct client_conn *k)
{
	curl_socket_t sock = CURL_SOCKET_BAD;
	int64_t left = deadline - util_mono_ms();
	char *url;
	CURLcode cc;
	int r;

	r = flash_dl_curl();
	if (r < 0)
		return r == -ELIBACC ? -EPROTO : r;
	if (left <= 0)
		return -ETIMEDOUT;
	if (asprintf(&url, "%s/", c->base) < 0)
		return -ENOMEM;
	k->curl = sym_curl_easy_init();
	if (!k->curl) {
		free(url);
		return -ENOMEM;
	}
	sym_curl_easy_setopt(k->curl, CURLOPT_URL, url);
	sym_curl_easy_setopt(k->curl, CURLOPT_CONNECT_ONLY, 1L);
	sym_curl_easy_setopt(k->curl, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(k->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	sym_curl_easy_setopt(k->curl, CURLOPT_PROTOCOLS_STR, "https");
	if (c->ca_file)
		sym_curl_easy_setopt(k->curl, CURLOPT_CAINFO, c->ca_file);
	cc = sym_curl_easy_perform(k->curl);
	free(url);
	if (cc != CURLE_OK)
		return client__curl_errno(cc);
	if (sym_curl_easy_getinfo(k->curl, CURLINFO_ACTIVESOCKET, &sock) != CURLE_OK || sock == CURL_SOCKET_BAD)
		return -EPROTO;
	k->fd = (int)sock;
	return 0;
}

int client__conn_open(const struct flash_client *c, int64_t deadline, struct client_conn *k)
{
	int r;

	k->fd = -1;
	k->curl = NULL;
	if (c->tls) {
		r = open_tls(c, deadline, k);
		if (r < 0)
			client__conn_close(k);
		return r;
	}
	r = http_connect(c->unix_path, c->host, c->port, deadline, &k->fd);
	if (r == -ECONNRESET || r == -EPIPE || r == -ENETUNREACH)
		r = -ECONNREFUSED;
	return r;
}

int client__conn_send(struct client_conn *k, const void *buf, size_t len, size_t *ret_sent)
{
	if (k->curl) {
		size_t n = 0;
		CURLcode cc = sym_curl_easy_send(k->curl, buf, len, &n);

		if (cc == CURLE_AGAIN)
			return -EAGAIN;
		if (cc != CURLE_OK)
			return -EPIPE;
		*ret_sent = n;
		return 0;
	}
	for (;;) {
		ssize_t w = send(k->fd, buf, len, MSG_NOSIGNAL);

		if (w >= 0) {
			*ret_sent = (size_t)w;
			return 0;
		}
		if (errno == EINTR)
			continue;
		return errno == EAGAIN ? -EAGAIN : -EPIPE;
	}
}

int client__conn_send_all(struct client_conn *k, const void *buf, size_t len, int64_t deadline)
{
	if (!k->curl)
		return http_send_all(k->fd, buf, len, deadline);
	while (len) {
		size_t n = 0;
		int r = client__conn_send(k, buf, len, &n);

		if (r == -EAGAIN) {
			r = http_wait_fd(k->fd, POLLOUT, deadline);
			if (r < 0)
				return r;
			continue;
		}
		if (r < 0)
			return r;
		buf = (const char *)buf + n;
		len -= n;
	}
	return 0;
}

int client__conn_recv(struct client_conn *k, void *buf, size_t len, size_t *ret_got)
{
	if (k->curl) {
		size_t n = 0;
		CURLcode cc = sym_curl_easy_recv(k->curl, buf, len, &n);

		if (cc == CURLE_AGAIN)
			return -EAGAIN;
		if (cc != CURLE_OK)
			return -ECONNRESET;
		*ret_got = n;
		return 0;
	}
	for (;;) {
		ssize_t n = recv(k->fd, buf, len, 0);

		if (n >= 0) {
			*ret_got = (size_t)n;
			return 0;
		}
		if (errno == EINTR)
			continue;
		return errno == EAGAIN ? -EAGAIN : -errno;
	}
}

void client__conn_close(struct client_conn *k)
{
	if (k->curl)
		sym_curl_easy_cleanup(k->curl); /* closes its socket */
	else if (k->fd >= 0)
		close(k->fd);
	k->curl = NULL;
	k->fd = -1;
}
