/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "http-client.h"
#include "util.h"

int http_wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline - util_mono_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, left > 1000000000 ? 1000000000 : (int)left);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* connect() of a non-blocking @fd finished before @deadline. */
static int connect_wait(int fd, const struct sockaddr *sa, socklen_t len, int64_t deadline)
{
	int soerr = 0, r;
	socklen_t sl = sizeof(soerr);

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	r = http_wait_fd(fd, POLLOUT, deadline);
	if (r < 0)
		return r;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
		return -errno;
	return soerr ? -soerr : 0;
}

static int connect_unix(const char *path, int64_t deadline, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	int fd, r;

	if (n == 0)
		return -EINVAL;
	if (n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, n + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A Unix socket never connects in the background: a full backlog
	 * answers EAGAIN (the server is alive, but busy) and nothing is under
	 * way, so the connect is tried again, 1 ms doubling to 32 ms apart,
	 * until the deadline. */
	for (unsigned int pause_ms = 1;; pause_ms = pause_ms < 32 ? pause_ms * 2 : 32) {
		int64_t left;

		r = connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
		if (r != -EAGAIN && r != -EINTR)
			break;
		left = deadline - util_mono_ms();
		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		if (r == -EAGAIN) {
			struct timespec ts = { .tv_nsec = (long)(left < pause_ms ? left : pause_ms) * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	if (r == -ECONNREFUSED && access(path, F_OK) < 0 && errno == ENOENT)
		r = -ENOENT;
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static int connect_tcp(const char *host, const char *port, int64_t deadline, int *ret_fd)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	int r, last = -EHOSTUNREACH;

	r = getaddrinfo(host, port, &hints, &ai);
	if (r == EAI_MEMORY)
		return -ENOMEM;
	if (r != 0)
		return -EHOSTUNREACH;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		if (fd < 0) {
			last = -errno;
			continue;
		}
		last = connect_wait(fd, a->ai_addr, a->ai_addrlen, deadline);
		if (last == 0) {
			freeaddrinfo(ai);
			*ret_fd = fd;
			return 0;
		}
		close(fd);
		if (last == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(ai);
	return last;
}

int http_connect(const char *unix_path, const char *host, const char *port, int64_t deadline, int *ret_fd)
{
	if (!ret_fd || (!unix_path && (!host || !port)))
		return -EINVAL;
	return unix_path ? connect_unix(unix_path, deadline, ret_fd) : connect_tcp(host, port, deadline, ret_fd);
}

int http_send_all(int fd, const void *buf, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
		int r;

		if (w > 0) {
			buf = (const char *)buf + w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			r = http_wait_fd(fd, POLLOUT, deadline);
			if (r < 0)
				return r;
			continue;
		}
		return w < 0 ? -errno : -EPIPE;
	}
	return 0;
}

int http_url_split(const char *url, char **ret_host, char **ret_port, char **ret_prefix)
{
	const char *h, *end, *hend, *p;
	char *host = NULL, *port = NULL, *prefix = NULL;
	size_t plen;

	if (!url || !ret_host || !ret_port || !ret_prefix || strncasecmp(url, "http://", 7) != 0)
		return -EINVAL;
	h = url + 7;
	end = h + strcspn(h, "/?#");
	if (*end == '?' || *end == '#' || strpbrk(end, "?#") || memchr(h, '@', (size_t)(end - h)))
		return -EINVAL;
	if (*h == '[') {
		hend = memchr(h, ']', (size_t)(end - h));
		if (!hend || hend == h + 1)
			return -EINVAL;
		host = strndup(h + 1, (size_t)(hend - h - 1));
		p = hend + 1;
		if (p != end && *p != ':')
			return free(host), -EINVAL;
	} else {
		hend = memchr(h, ':', (size_t)(end - h));
		if (!hend)
			hend = end;
		if (hend == h)
			return -EINVAL;
		host = strndup(h, (size_t)(hend - h));
		p = hend;
	}
	if (!host)
		return -ENOMEM;
	for (const char *c = host; *c; c++)
		if (*c <= ' ' || *c == '/' || *c == '\\' || *c == '%' || *c == 0x7f || (*c == ':' && h[0] != '['))
			return free(host), -EINVAL;
	if (p != end) { /* ":PORT" */
		unsigned long v = 0;

		plen = (size_t)(end - p - 1);
		if (plen == 0 || plen > 5)
			return free(host), -EINVAL;
		for (const char *c = p + 1; c < end; c++) {
			if (*c < '0' || *c > '9')
				return free(host), -EINVAL;
			v = v * 10 + (unsigned long)(*c - '0');
		}
		if (v == 0 || v > 65535)
			return free(host), -EINVAL;
		port = strndup(p + 1, plen);
	} else {
		port = strdup("80");
	}
	plen = strlen(end);
	while (plen && end[plen - 1] == '/')
		plen--;
	prefix = strndup(end, plen);
	if (!port || !prefix) {
		free(host);
		free(port);
		free(prefix);
		return -ENOMEM;
	}
	*ret_host = host;
	*ret_port = port;
	*ret_prefix = prefix;
	return 0;
}

/* Is @name (@n bytes) the header name of the line at @line? */
static bool header_is(const char *line, size_t n, const char *name)
{
	size_t nl = strlen(name);

	return n > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0;
}

/* The value of a header line (after ':', optional whitespace trimmed). */
static void header_value(const char *line, size_t n, const char **ret_v, size_t *ret_n)
{
	const char *v = (const char *)memchr(line, ':', n) + 1, *e = line + n;

	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*ret_v = v;
	*ret_n = (size_t)(e - v);
}

int http_reply_head_parse(const char *buf, size_t len, size_t max_head, struct http_reply_head *ret)
{
	struct http_reply_head h = { 0 };
	const char *end = NULL, *line, *eol;
	size_t scan = len < max_head ? len : max_head;

	if (!buf || !ret)
		return -EINVAL;
	for (size_t i = 0; i + 4 <= scan; i++)
		if (buf[i] == '\r' && memcmp(buf + i, "\r\n\r\n", 4) == 0) {
			end = buf + i;
			break;
		}
	if (!end)
		return len >= max_head ? -EMSGSIZE : -EAGAIN;
	h.head_len = (size_t)(end - buf) + 4;
	/* Lines end in CRLF only: a bare CR or LF could hide a header. */
	for (const char *c = buf; c < end; c++)
		if ((*c == '\r' && c[1] != '\n') || (*c == '\n' && (c == buf || c[-1] != '\r')))
			return -EBADMSG;
	/* "HTTP/1.x NNN[ reason]" */
	if (end - buf < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ' ||
	    buf[9] < '1' || buf[9] > '5' || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' || buf[11] > '9' ||
	    (buf + 12 < end && buf[12] != ' ' && buf[12] != '\r'))
		return -EBADMSG;
	h.status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	line = buf;
	while (!(line[0] == '\r' && line[1] == '\n'))
		line++;
	line += 2; /* the status line ends at or before end */
	for (; line < end + 2; line = eol + 2) {
		const char *v;
		size_t n, vn;

		eol = line;
		while (eol < end && !(eol[0] == '\r' && eol[1] == '\n'))
			eol++;
		n = (size_t)(eol - line);
		if (n == 0 || !memchr(line, ':', n) || line[0] == ' ' || line[0] == '\t' || memchr(line, '\0', n))
			return -EBADMSG;
		header_value(line, n, &v, &vn);
		if (header_is(line, n, "Content-Length")) {
			uint64_t val = 0;

			if (h.has_length || vn == 0 || vn > 19)
				return -EBADMSG;
			for (size_t i = 0; i < vn; i++) {
				if (v[i] < '0' || v[i] > '9')
					return -EBADMSG;
				val = val * 10 + (uint64_t)(v[i] - '0');
			}
			h.has_length = true;
			h.length = val;
		} else if (header_is(line, n, "Transfer-Encoding")) {
			if (h.chunked || vn != 7 || strncasecmp(v, "chunked", 7) != 0)
				return -EBADMSG;
			h.chunked = true;
		} else if (header_is(line, n, "Retry-After")) {
			(void)util_retry_after_parse(line, n, &h.retry_after);
		}
		if (eol == end)
			break;
	}
	if (h.chunked && h.has_length)
		return -EBADMSG;
	*ret = h;
	return 0;
}

/* Decodes the chunked body at @b (@n bytes up to the close) in place. */
static int chunked_decode(char *b, size_t n, size_t max_body, size_t *ret_len)
{
	size_t in = 0, out = 0;

	for (;;) {
		uint64_t size = 0;
		size_t digits = 0;

		while (in < n && util_hexval(b[in]) >= 0) {
			if (++digits > 15)
				return -EBADMSG;
			size = size * 16 + (uint64_t)util_hexval(b[in++]);
		}
		if (digits == 0)
			return -EBADMSG;
		/* chunk extensions are allowed and ignored */
		while (in < n && b[in] != '\r' && b[in] != '\n')
			in++;
		if (in + 2 > n || b[in] != '\r' || b[in + 1] != '\n')
			return -EBADMSG;
		in += 2;
		if (size == 0)
			break;
		if (size > n - in || n - in - size < 2)
			return -EBADMSG;
		if (out + size > max_body)
			return -E2BIG;
		memmove(b + out, b + in, (size_t)size);
		out += (size_t)size;
		in += (size_t)size;
		if (b[in] != '\r' || b[in + 1] != '\n')
			return -EBADMSG;
		in += 2;
	}
	/* trailers: header lines up to a blank line, then nothing */
	for (;;) {
		size_t eol = in;

		while (eol + 1 < n && !(b[eol] == '\r' && b[eol + 1] == '\n'))
			eol++;
		if (eol + 1 >= n)
			return -EBADMSG;
		if (eol == in) {
			in += 2;
			break;
		}
		in = eol + 2;
	}
	if (in != n)
		return -EBADMSG;
	*ret_len = out;
	return 0;
}

enum { CK_SIZE, CK_EXT, CK_SIZE_LF, CK_DATA, CK_DATA_CR, CK_DATA_LF, CK_TRAILER, CK_TRAILER_CR, CK_DONE };

int http_chunked_feed(struct http_chunked *d, const void *buf, size_t n,
		      int (*sink)(const void *data, size_t len, void *userdata), void *userdata)
{
	const char *p = buf;

	while (n) {
		char ch = *p;

		switch (d->state) {
		case CK_SIZE:
			if (util_hexval(ch) >= 0) {
				if (++d->digits > 15)
					return -EBADMSG;
				d->left = d->left * 16 + (uint64_t)util_hexval(ch);
			} else if (d->digits == 0 || ch == '\n') {
				return -EBADMSG;
			} else {
				d->state = ch == '\r' ? CK_SIZE_LF : CK_EXT; /* extensions ignored */
			}
			break;
		case CK_EXT:
			if (ch == '\n')
				return -EBADMSG;
			if (ch == '\r')
				d->state = CK_SIZE_LF;
			break;
		case CK_SIZE_LF:
			if (ch != '\n')
				return -EBADMSG;
			d->digits = 0;
			d->state = d->left ? CK_DATA : CK_TRAILER;
			d->line_empty = true;
			break;
		case CK_DATA: {
			size_t k = d->left < n ? (size_t)d->left : n;
			int r = sink ? sink(p, k, userdata) : 0;

			if (r < 0)
				return r;
			d->left -= k;
			p += k;
			n -= k;
			if (d->left == 0)
				d->state = CK_DATA_CR;
			continue;
		}
		case CK_DATA_CR:
			if (ch != '\r')
				return -EBADMSG;
			d->state = CK_DATA_LF;
			break;
		case CK_DATA_LF:
			if (ch != '\n')
				return -EBADMSG;
			d->state = CK_SIZE;
			break;
		case CK_TRAILER:
			if (ch == '\r')
				d->state = CK_TRAILER_CR;
			else
				d->line_empty = false;
			break;
		case CK_TRAILER_CR:
			if (ch == '\n') {
				if (d->line_empty) {
					d->state = CK_DONE;
				} else {
					d->state = CK_TRAILER;
					d->line_empty = true;
				}
			} else if (ch != '\r') {
				d->state = CK_TRAILER; /* a lone CR is part of the line */
				d->line_empty = false;
			} else {
				d->line_empty = false;
			}
			break;
		default:
			return -EBADMSG; /* bytes after the end */
		}
		p++;
		n--;
	}
	return 0;
}

bool http_chunked_done(const struct http_chunked *d)
{
	return d->state == CK_DONE;
}

int http_reply_parse(char *buf, size_t len, size_t max_head, size_t max_body, struct http_reply_head *ret_head,
		     char **ret_body, size_t *ret_body_len)
{
	struct http_reply_head h;
	size_t blen;
	char *body;
	int r;

	if (!buf || !ret_head || !ret_body || !ret_body_len)
		return -EINVAL;
	for (;;) {
		r = http_reply_head_parse(buf, len, max_head, &h);
		if (r == -EAGAIN)
			return -EBADMSG; /* closed inside the head */
		if (r < 0)
			return r;
		/* Interim answers (100 Continue, 103 Early Hints) come before
		 * the final one, headers only. */
		if (h.status >= 200 || h.status == 101)
			break;
		buf += h.head_len;
		len -= h.head_len;
	}
	body = buf + h.head_len;
	blen = len - h.head_len;
	if (h.chunked) {
		r = chunked_decode(body, blen, max_body, &blen);
		if (r < 0)
			return r;
	} else if (h.has_length) {
		if (h.length > max_body)
			return -E2BIG;
		if (blen != h.length)
			return -EBADMSG;
	} else if (h.status == 204 || h.status == 304 || h.status < 200) {
		if (blen)
			return -EBADMSG;
	} else if (blen > max_body) {
		return -E2BIG;
	}
	*ret_head = h;
	*ret_body = body;
	*ret_body_len = blen;
	return 0;
}
