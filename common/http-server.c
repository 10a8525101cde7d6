/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemons' HTTP front door over libmicrohttpd (http-server.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http-server-tls.h"
#include "http-server.h"
#include "util.h"

#define MAX_LISTENERS 4
#define MIN(a, b) ((a) < (b) ? (a) : (b))

struct listener {
	struct http_server *s;
	int fd;                 /* listening socket */
	bool unix_family;
	struct MHD_Daemon *d;
	unsigned int active;    /* connections libmicrohttpd serves (s->lock) */
	struct http_tls *tls;   /* TLS terminated by a relay (http-server-tls.c); NULL: plain */
};

struct pending {
	int fd;
	int64_t since;
	struct listener *l;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	size_t peeked;          /* bytes of an incomplete head seen so far */
	int64_t full_since;     /* != 0: a complete head waiting for a slot since then */
};

/* How long a complete head waits for a slot before its 503.  Slots free
 * late: libmicrohttpd reports a connection closed (on_connection) some
 * time after its socket closed, so a client that reconnects at once
 * finds its own last connection still counted (32 clients in a loop got
 * 503 "59 requests in progress" on a bound of 56: test-node's load
 * test). */
#define ADMIT_WAIT_MS 200

struct http_server {
	struct http_server_opts o;
	struct listener lis[MAX_LISTENERS];
	size_t n_lis;
	pthread_mutex_t lock;
	pthread_t door;
	bool door_started;
	int wake[2];            /* written to stop the front door */
	struct pending *pend;   /* the front door's own */
	size_t n_pend;
	char *buf;              /* the door's peek buffer, max_header_bytes + 1 */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Best effort: the peer may be gone, and nothing waits for it. */
_printf_(5, 6) static void door_reply(struct http_server *s, int fd, unsigned int status, const char *reason,
				      const char *fmt, ...)
{
	char msg[256], head[256], *body;
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->o.refusal) {
		body = s->o.refusal(status, msg);
		if (!body)
			return;
	} else if (asprintf(&body, "%s\n", msg) < 0) {
		return;
	}
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", status,
		     reason, s->o.refusal ? "application/json" : "text/plain", strlen(body));
	if (n > 0 && (size_t)n < sizeof(head) && send(fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n)
		(void)!send(fd, body, strlen(body), MSG_NOSIGNAL | MSG_DONTWAIT);
	free(body);
}

/* What the front door reads of a complete request head. */
struct head {
	char method[8];
	char path[64];
};

/* Checks a complete request head of @len bytes (up to and with the empty
 * line): 0 and @ret, or -EBADMSG with the reason in @why. */
static int head_check(const char *buf, size_t len, struct head *ret, char *why, size_t why_size)
{
	const char *line = buf, *end = buf + len, *sp1, *sp2, *eol;
	unsigned int n_cl = 0, n_te = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == 0 || (c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f) {
			snprintf(why, why_size, "a NUL or control character (0x%02x) in the request head", c);
			return -EBADMSG;
		}
	}
	eol = memchr(line, '\n', (size_t)(end - line));
	sp1 = eol ? memchr(line, ' ', (size_t)(eol - line)) : NULL;
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp2 || sp1 == line || (size_t)(sp1 - line) >= sizeof(ret->method)) {
		snprintf(why, why_size, "not an HTTP/1.1 request line");
		return -EBADMSG;
	}
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->method, line, (size_t)(sp1 - line));
	memcpy(ret->path, sp1 + 1, MIN((size_t)(sp2 - sp1 - 1), sizeof(ret->path) - 1));
	for (line = eol + 1; line < end; line = eol + 1) {
		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			break;
		if (!strncasecmp(line, "Content-Length:", 15))
			n_cl++;
		else if (!strncasecmp(line, "Transfer-Encoding:", 18))
			n_te++;
	}
	if (n_cl > 1) {
		snprintf(why, why_size, "%u Content-Length headers", n_cl);
		return -EBADMSG;
	}
	if (n_cl && n_te) {
		snprintf(why, why_size, "Content-Length and Transfer-Encoding together");
		return -EBADMSG;
	}
	return 0;
}

static void pend_drop(struct http_server *s, size_t i)
{
	close(s->pend[i].fd);
	s->pend[i] = s->pend[--s->n_pend];
}

/* A pending connection is readable: hands it on, refuses it, or waits
 * for more. */
static void pend_advance(struct http_server *s, size_t i)
{
	struct pending *p = &s->pend[i];
	size_t max = s->o.max_header_bytes;
	char why[160];
	struct head hd;
	const char *end;
	ssize_t n;
	bool admit;
	unsigned int active;

	n = recv(p->fd, s->buf, max, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		pend_drop(s, i);
		return;
	}
	if ((size_t)n == p->peeked && !p->full_since)
		return;
	s->buf[n] = '\0';
	end = memmem(s->buf, (size_t)n, "\r\n\r\n", 4);
	if (!end) {
		/* Part of a head: polled again by time, not by POLLIN, which
		 * the unread bytes would keep raised. */
		p->peeked = (size_t)n;
		if ((size_t)n < max)
			return;
		door_reply(s, p->fd, 431, "Request Header Fields Too Large", "request head larger than %zu bytes",
			   max);
		pend_drop(s, i);
		return;
	}
	if (head_check(s->buf, (size_t)(end + 4 - s->buf), &hd, why, sizeof(why)) < 0) {
		door_reply(s, p->fd, 400, "Bad Request", "%s", why);
		pend_drop(s, i);
		return;
	}
	pthread_mutex_lock(&s->lock);
	active = p->l->active;
	admit = active < s->o.max_connections - s->o.reserved_connections ||
		(active < s->o.max_connections && s->o.reserved && s->o.reserved(hd.method, hd.path));
	pthread_mutex_unlock(&s->lock);
	if (!admit && (!p->full_since || now_ms() - p->full_since < ADMIT_WAIT_MS)) {
		/* Polled again by time (peeked), not by POLLIN. */
		if (!p->full_since)
			p->full_since = now_ms();
		p->peeked = (size_t)n;
		return;
	}
	if (!admit) {
		door_reply(s, p->fd, 503, "Service Unavailable", "%u requests in progress on this listener", active);
		pend_drop(s, i);
		return;
	}
	/* libmicrohttpd owns the socket from here, also on failure. */
	(void)MHD_add_connection(p->l->d, p->fd, (const struct sockaddr *)&p->addr, p->addr_len);
	s->pend[i] = s->pend[--s->n_pend];
}

static void door_accept(struct http_server *s, struct listener *l)
{
	struct pending p = { .l = l, .addr_len = sizeof(p.addr) };
	size_t n_here = 0, oldest = SIZE_MAX;

	p.fd = accept4(l->fd, (struct sockaddr *)&p.addr, &p.addr_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (p.fd < 0) {
		/* Out of descriptors: the listener stays readable; do not
		 * spin on it. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			usleep(10000);
		return;
	}
	if (l->tls) {
		/* The door checks the clear text: the relay decrypts into one
		 * end of a socket pair, the door holds the other. */
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
			close(p.fd);
			return;
		}
		if (http_tls_relay(l->tls, p.fd, sv[1], s->wake[0], s->o.header_timeout_ms) < 0) {
			close(sv[0]);
			return;
		}
		p.fd = sv[0];
	}
	if (p.addr_len == 0 || l->unix_family) {
		/* AF_UNIX peers are unnamed: give the family at least. */
		p.addr.ss_family = AF_UNIX;
		p.addr_len = sizeof(sa_family_t);
	}
	p.since = now_ms();
	for (size_t i = 0; i < s->n_pend; i++) {
		if (s->pend[i].l != l)
			continue;
		n_here++;
		/* A complete head waiting for a slot (full_since) is not slow:
		 * the oldest head still arriving goes first. */
		if (oldest == SIZE_MAX || (!s->pend[i].full_since && s->pend[oldest].full_since) ||
		    (!s->pend[i].full_since == !s->pend[oldest].full_since && s->pend[i].since < s->pend[oldest].since))
			oldest = i;
	}
	if (n_here >= s->o.max_connections) {
		/* Full of heads still arriving: the slowest makes room. */
		door_reply(s, s->pend[oldest].fd, 408, "Request Timeout", "request head not received in time");
		pend_drop(s, oldest);
	}
	s->pend[s->n_pend++] = p;
}

static void *door_main(void *arg)
{
	struct http_server *s = arg;
	size_t cap = s->o.max_connections * s->n_lis + MAX_LISTENERS + 1;
	struct pollfd *fds = calloc(cap, sizeof(*fds));
	size_t *idx = calloc(cap, sizeof(*idx));

	if (!fds || !idx)
		goto out;
	for (;;) {
		size_t n = 0, first_pend;
		bool partial = false;
		int64_t now;

		fds[n++] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		for (size_t i = 0; i < s->n_lis; i++)
			fds[n++] = (struct pollfd){ .fd = s->lis[i].fd, .events = POLLIN };
		first_pend = n;
		for (size_t i = 0; i < s->n_pend; i++) {
			if (s->pend[i].peeked) {
				partial = true;
				continue;
			}
			idx[n] = i;
			fds[n++] = (struct pollfd){ .fd = s->pend[i].fd, .events = POLLIN };
		}
		if (poll(fds, n, partial ? 10 : 50) < 0 && errno != EINTR)
			break;
		if (fds[0].revents)
			break;
		/* Pending connections from the last (indexes move as they
		 * leave): the readable ones, and every partial head again. */
		for (size_t i = s->n_pend; i-- > 0;) {
			bool ready = s->pend[i].peeked > 0;

			for (size_t k = first_pend; k < n && !ready; k++)
				ready = idx[k] == i && fds[k].fd == s->pend[i].fd && fds[k].revents;
			if (ready)
				pend_advance(s, i);
		}
		now = now_ms();
		for (size_t i = s->n_pend; i-- > 0;) {
			if (now - s->pend[i].since >= (int64_t)s->o.header_timeout_ms) {
				door_reply(s, s->pend[i].fd, 408, "Request Timeout",
					   "request head not received within %u ms", s->o.header_timeout_ms);
				pend_drop(s, i);
			}
		}
		for (size_t i = 0; i < s->n_lis; i++)
			if (fds[1 + i].revents & POLLIN)
				door_accept(s, &s->lis[i]);
	}
out:
	free(fds);
	free(idx);
	return NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct listener *l = cls;

	(void)conn;
	(void)socket_context;
	pthread_mutex_lock(&l->s->lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		l->active++;
	else if (l->active)
		l->active--;
	pthread_mutex_unlock(&l->s->lock);
}

int http_server_new(const struct http_server_opts *opts, struct http_server **ret)
{
	struct http_server *s;

	if (!opts || !OPTS_VALID(opts, http_server_opts) || !ret || !OPTS_GET(opts, handler, NULL))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o.sz = sizeof(s->o);
	s->o.max_connections = OPTS_GET(opts, max_connections, 0) ?: 64;
	s->o.reserved_connections = OPTS_GET(opts, reserved_connections, 0);
	s->o.header_timeout_ms = OPTS_GET(opts, header_timeout_ms, 0) ?: 2000;
	s->o.idle_timeout_s = OPTS_GET(opts, idle_timeout_s, 0);
	s->o.per_ip_connections = OPTS_GET(opts, per_ip_connections, 0);
	s->o.max_header_bytes = OPTS_GET(opts, max_header_bytes, 0) ?: 16384;
	s->o.threads = OPTS_GET(opts, threads, 0);
	s->o.handler = opts->handler;
	s->o.completed = OPTS_GET(opts, completed, NULL);
	s->o.reserved = OPTS_GET(opts, reserved, NULL);
	s->o.upgrade = OPTS_GET(opts, upgrade, false);
	s->o.refusal = OPTS_GET(opts, refusal, NULL);
	s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->lock, NULL);
	if (s->o.reserved_connections >= s->o.max_connections || s->o.max_header_bytes > (1u << 20)) {
		http_server_free(s);
		return -EINVAL;
	}
	s->buf = malloc(s->o.max_header_bytes + 1);
	if (!s->buf) {
		http_server_free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

int http_server_listen(struct http_server *s, int fd, void *cls)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl = sizeof(ss);
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC |
			     (s->o.upgrade ? MHD_ALLOW_UPGRADE : 0) |
			     (s->o.suspend && s->o.threads ? MHD_ALLOW_SUSPEND_RESUME : 0);
	struct listener *l;
	size_t mem;

	if (!s || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	if (s->door_started || s->n_lis >= MAX_LISTENERS) {
		close(fd);
		return s->door_started ? -EBUSY : -E2BIG;
	}
	/* The door admits at most max_connections (its own count, from
	 * on_connection); libmicrohttpd counts a connection until some time
	 * after it closed, so its own limit is set above the door's and never
	 * decides: its refusal path is not one a client should meet. */
	/* Room for a head of max_header_bytes and the buffers around it. */
	mem = 2 * s->o.max_header_bytes;
	l = &s->lis[s->n_lis];
	l->s = s;
	l->fd = fd;
	l->unix_family = getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_UNIX;
	if (s->o.threads)
		l->d = MHD_start_daemon(flags | MHD_USE_EPOLL, 0, NULL, NULL, s->o.handler, cls,
					MHD_OPTION_THREAD_POOL_SIZE, s->o.threads, MHD_OPTION_CONNECTION_LIMIT,
					2 * s->o.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
					s->o.per_ip_connections, MHD_OPTION_CONNECTION_TIMEOUT, s->o.idle_timeout_s,
					MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem, MHD_OPTION_NOTIFY_COMPLETED,
					s->o.completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, l,
					MHD_OPTION_END);
	else
		l->d = MHD_start_daemon(flags | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL, s->o.handler, cls,
					MHD_OPTION_CONNECTION_LIMIT, 2 * s->o.max_connections,
					MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->o.per_ip_connections,
					MHD_OPTION_CONNECTION_TIMEOUT, s->o.idle_timeout_s,
					MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem, MHD_OPTION_NOTIFY_COMPLETED,
					s->o.completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, l,
					MHD_OPTION_END);
	if (!l->d) {
		close(fd);
		l->fd = -1;
		return -EIO;
	}
	s->n_lis++;
	return 0;
}

int http_server_listen_tls(struct http_server *s, int fd, void *cls, const char *cert_pem, size_t cert_len,
			   const char *key_pem, size_t key_len)
{
	struct http_tls *tls = NULL;
	int r;

	if (!s || s->door_started || s->n_lis >= MAX_LISTENERS) {
		if (fd >= 0)
			close(fd);
		return !s ? -EINVAL : s->door_started ? -EBUSY : -E2BIG;
	}
	r = http_tls_new(cert_pem, cert_len, key_pem, key_len, &tls);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	r = http_server_listen(s, fd, cls);
	if (r < 0) {
		http_tls_free(tls);
		return r;
	}
	s->lis[s->n_lis - 1].tls = tls;
	return 0;
}

int http_server_start(struct http_server *s)
{
	int err;

	if (!s || !s->n_lis)
		return -EINVAL;
	if (s->door_started)
		return -EBUSY;
	s->pend = calloc(s->o.max_connections * s->n_lis + 1, sizeof(*s->pend));
	if (!s->pend)
		return -ENOMEM;
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	err = pthread_create(&s->door, NULL, door_main, s);
	if (err)
		return -err;
	s->door_started = true;
	return 0;
}

void http_server_free(struct http_server *s)
{
	if (!s)
		return;
	if (s->door_started) {
		(void)!write(s->wake[1], "x", 1);
		pthread_join(s->door, NULL);
	}
	for (size_t i = 0; i < s->n_pend; i++)
		close(s->pend[i].fd);
	for (size_t i = 0; i < s->n_lis; i++) {
		if (s->lis[i].d)
			MHD_stop_daemon(s->lis[i].d);
		if (s->lis[i].fd >= 0)
			close(s->lis[i].fd);
		/* The relays saw the wake-up (or their clear text close). */
		http_tls_free(s->lis[i].tls);
	}
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	free(s->pend);
	free(s->buf);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int http_body_feed(struct http_body *b, const char *data, size_t n, size_t max)
{
	char *nb;

	if (b->too_large || n > max || b->len > max - n) {
		b->too_large = true;
		return 0;
	}
	nb = realloc(b->data, b->len + n + 1);
	if (!nb)
		return -ENOMEM;
	memcpy(nb + b->len, data, n);
	b->data = nb;
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

void http_body_free(struct http_body *b)
{
	free(b->data);
	*b = (struct http_body){ 0 };
}
