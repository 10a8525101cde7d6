/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* TLS for the front door: one relay thread a connection (http-server-tls.h). */
#include "config.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http-server-tls.h"

struct http_tls {
	gnutls_certificate_credentials_t cred;
	gnutls_priority_t prio;
	pthread_mutex_t lock;
	pthread_cond_t done;
	size_t relays;           /* running */
};

struct relay {
	struct http_tls *t;
	int fd, plain, stop;
	unsigned int handshake_ms;
};

int http_tls_new(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
		 struct http_tls **ret)
{
	gnutls_datum_t cert = { (unsigned char *)cert_pem, (unsigned int)cert_len };
	gnutls_datum_t key = { (unsigned char *)key_pem, (unsigned int)key_len };
	struct http_tls *t;

	if (!cert_pem || !key_pem || cert_len > (1u << 20) || key_len > (1u << 20) || !ret)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->done, NULL);
	if (gnutls_certificate_allocate_credentials(&t->cred) < 0) {
		t->cred = NULL;
		http_tls_free(t);
		return -ENOMEM;
	}
	if (gnutls_certificate_set_x509_key_mem(t->cred, &cert, &key, GNUTLS_X509_FMT_PEM) < 0 ||
	    gnutls_priority_init(&t->prio, "NORMAL:-VERS-TLS1.1:-VERS-TLS1.0", NULL) < 0) {
		http_tls_free(t);
		return -EINVAL;
	}
	*ret = t;
	return 0;
}

void http_tls_free(struct http_tls *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	while (t->relays)
		pthread_cond_wait(&t->done, &t->lock);
	pthread_mutex_unlock(&t->lock);
	if (t->prio)
		gnutls_priority_deinit(t->prio);
	if (t->cred)
		gnutls_certificate_free_credentials(t->cred);
	pthread_cond_destroy(&t->done);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Waits until @fd is ready for @events (or the server stops).  False:
 * stop, error or hang-up with nothing to read. */
static bool wait_for(const struct relay *r, int fd, short events, int timeout_ms)
{
	struct pollfd p[2] = { { .fd = fd, .events = events }, { .fd = r->stop, .events = POLLIN } };
	int n;

	do
		n = poll(p, 2, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n > 0 && !p[1].revents && (p[0].revents & (events | POLLHUP));
}

/* One non-blocking write of the relay: bytes written, 0 for "try again
 * when writable", < 0 to give up. */
typedef ssize_t (*write_fn)(const struct relay *r, gnutls_session_t s, const char *buf, size_t n);

static ssize_t plain_send(const struct relay *r, gnutls_session_t s, const char *buf, size_t n)
{
	ssize_t w = send(r->plain, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)s;
	return w < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : w == 0 ? -1 : w;
}

static ssize_t tls_send(const struct relay *r, gnutls_session_t s, const char *buf, size_t n)
{
	ssize_t w = gnutls_record_send(s, buf, n);

	(void)r;
	return w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED ? 0 : w == 0 ? -1 : w;
}

/* Writes all @n bytes with @fn, waiting for @fd to be writable between. */
static bool write_all(const struct relay *r, gnutls_session_t s, write_fn fn, int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = fn(r, s, buf, n);

		if (w < 0 || (w == 0 && !wait_for(r, fd, POLLOUT, -1)))
			return false;
		buf += w;
		n -= (size_t)w;
	}
	return true;
}

static void relay_run(struct relay *r, gnutls_session_t s)
{
	char buf[16384];
	int rc;

	gnutls_handshake_set_timeout(s, r->handshake_ms);
	do {
		rc = gnutls_handshake(s);
		if (rc == GNUTLS_E_AGAIN && !wait_for(r, r->fd, gnutls_record_get_direction(s) ? POLLOUT : POLLIN,
						      (int)r->handshake_ms))
			return;
	} while (rc < 0 && !gnutls_error_is_fatal(rc));
	if (rc < 0)
		return;
	for (;;) {
		struct pollfd p[3] = {
			{ .fd = r->fd, .events = POLLIN },
			{ .fd = r->plain, .events = POLLIN },
			{ .fd = r->stop, .events = POLLIN },
		};
		bool pending = gnutls_record_check_pending(s) > 0;

		if (!pending && poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (p[2].revents)
			return;
		if (pending || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = gnutls_record_recv(s, buf, sizeof(buf));

			if (n > 0) {
				if (!write_all(r, s, plain_send, r->plain, buf, (size_t)n))
					return;
			} else if (n != GNUTLS_E_AGAIN && n != GNUTLS_E_INTERRUPTED) {
				return; /* closed, or a fatal TLS error */
			}
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = recv(r->plain, buf, sizeof(buf), MSG_DONTWAIT);

			if (n > 0) {
				if (!write_all(r, s, tls_send, r->fd, buf, (size_t)n))
					return;
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				/* The server is done with it: close the TLS side. */
				gnutls_bye(s, GNUTLS_SHUT_WR);
				return;
			}
		}
	}
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	struct http_tls *t = r->t;
	gnutls_session_t s;

	if (gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NONBLOCK) == 0) {
		if (gnutls_priority_set(s, t->prio) == 0 &&
		    gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, t->cred) == 0) {
			gnutls_certificate_server_set_request(s, GNUTLS_CERT_IGNORE);
			gnutls_transport_set_int(s, r->fd);
			relay_run(r, s);
		}
		gnutls_deinit(s);
	}
	close(r->fd);
	close(r->plain);
	free(r);
	pthread_mutex_lock(&t->lock);
	if (--t->relays == 0)
		pthread_cond_broadcast(&t->done);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int http_tls_relay(struct http_tls *t, int fd, int plain, int stop_fd, unsigned int handshake_ms)
{
	struct relay *r = calloc(1, sizeof(*r));
	pthread_attr_t attr;
	pthread_t th;
	int err;

	if (!r) {
		close(fd);
		close(plain);
		return -ENOMEM;
	}
	*r = (struct relay){ .t = t, .fd = fd, .plain = plain, .stop = stop_fd, .handshake_ms = handshake_ms };
	pthread_mutex_lock(&t->lock);
	t->relays++;
	pthread_mutex_unlock(&t->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	err = pthread_create(&th, &attr, relay_main, r);
	pthread_attr_destroy(&attr);
	if (err) {
		pthread_mutex_lock(&t->lock);
		t->relays--;
		pthread_mutex_unlock(&t->lock);
		close(fd);
		close(plain);
		free(r);
		return -err;
	}
	return 0;
}
