/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Kubernetes client's transport (k8s-request.h): the reused curl
 * handle, one attempt, and the retry rule around it.
 *
 * Retried, at most opts.max_attempts tries in all, after an exponential
 * delay with jitter (or exactly the server's Retry-After, bounded by
 * backoff_max_ms): a 429 (the server did not act on the request), and for
 * idempotent requests a 5xx (but the 500 of kubernetes#139253) or a
 * transport failure.  A request that may not be repeated (POST, JSON
 * patch) is retried after a transport failure only when it was never sent
 * (connection refused, name not resolved).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "k8s-request.h"
#include "util.h"

void k8s_log(const struct k8s_client *c, enum k8s_log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!c->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	c->o.log(level, buf, c->o.log_userdata);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void k8s_sleep(struct k8s_client *c, unsigned int ms)
{
	if (c->o.sleep_ms) {
		c->o.sleep_ms(ms, c->o.sleep_userdata);
		return;
	}
	while (ms && !c->cancelled) {
		unsigned int step = ms < 50 ? ms : 50;
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)step * 1000000L };

		nanosleep(&ts, NULL);
		ms -= step;
	}
}

/* xorshift64*: jitter only, no secret. */
static uint64_t rng_next(struct k8s_client *c)
{
	uint64_t x = c->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	c->rng = x;
	return x * 2685821657736338717ULL;
}

unsigned int k8s_backoff_ms(struct k8s_client *c, unsigned int attempt)
{
	uint64_t d = c->o.backoff_ms;

	for (unsigned int i = 1; i < attempt && d < c->o.backoff_max_ms; i++)
		d *= 2;
	if (d > c->o.backoff_max_ms)
		d = c->o.backoff_max_ms;
	/* "Equal jitter": half fixed, half random, so that clients that
	 * failed together do not come back together. */
	return (unsigned int)(d / 2 + rng_next(c) % (d / 2 + 1));
}

void k8s_query_init(struct k8s_query *q)
{
	memset(q, 0, sizeof(*q));
}

static void q_append(struct k8s_query *q, const char *s, size_t n)
{
	if (!q->oom && util_buf_append(&q->b, s, n, 0) < 0)
		q->oom = true;
}

void k8s_query_add(struct k8s_query *q, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";

	if (!value)
		return;
	q_append(q, q->sep ? "&" : "?", 1);
	q->sep = true;
	q_append(q, key, strlen(key));
	q_append(q, "=", 1);
	/* RFC 3986 unreserved characters as they are, the rest %XX. */
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		    *p == '.' || *p == '_' || *p == '~')
			q_append(q, (const char *)p, 1);
		else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };

			q_append(q, e, 3);
		}
	}
}

void k8s_query_add_uint(struct k8s_query *q, const char *key, uint64_t value)
{
	char buf[21];

	buf[util_format_u64(value, buf)] = '\0';
	k8s_query_add(q, key, buf);
}

int k8s_query_finish(struct k8s_query *q, const char *path, char **ret)
{
	int r = 0;

	if (q->oom || asprintf(ret, "%s%s", path, q->b.p ? q->b.p : "") < 0)
		r = -ENOMEM;
	free(q->b.p);
	memset(q, 0, sizeof(*q));
	return r;
}

int k8s_body_parse(const struct k8s_client *c, const char *body, size_t len, struct json_value **ret)
{
	struct json_limits lim = {
		.max_depth = 64,
		.max_string = 4u << 20,
		.max_members = 1u << 20,
		.max_nodes = 1u << 24,
		.max_input = c->o.max_body,
	};
	struct json_value *v;
	struct json_error err;

	if (json_parse(body ? body : "", len, &lim, &v, &err) < 0)
		return -EBADMSG;
	if (v->type != JSON_OBJECT) {
		json_free(v);
		return -EBADMSG;
	}
	*ret = v;
	return 0;
}

void k8s_req_done(struct k8s_req *req)
{
	free(req->resp);
	req->resp = NULL;
	req->resp_len = 0;
}

/* One attempt's state, seen by the curl callbacks. */
struct attempt {
	struct k8s_client *c;
	struct k8s_req *req;
	struct util_buf body;
	bool too_big;
	bool idle;
	bool sink_stopped;
	uint64_t last_byte_ms;
	unsigned int retry_after_s;
};

static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
	struct attempt *a = userdata;
	size_t len = size * n;

	if (len > 8 && strncasecmp(data, "warning:", 8) == 0) {
		size_t s = 8, e = len;

		while (s < e && (data[s] == ' ' || data[s] == '\t'))
			s++;
		while (e > s && (data[e - 1] == '\r' || data[e - 1] == '\n'))
			e--;
		k8s_log(a->c, K8S_LOG_WARNING, "%.*s", (int)(e - s > 900 ? 900 : e - s), data + s);
	} else if (util_retry_after_parse(data, len, &a->retry_after_s)) {
		/* kept */
	} else if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		/* A new answer (after a 100 Continue): forget the last one's. */
		a->retry_after_s = 0;
	}
	return len;
}

static bool buf_add(struct attempt *a, const char *data, size_t len, size_t max)
{
	int r = util_buf_append(&a->body, data, len, max);

	if (r == -EMSGSIZE)
		a->too_big = true;
	return r == 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
	struct attempt *a = userdata;
	size_t len = size * n;
	long status = 0;

	a->last_byte_ms = now_ms();
	if (a->req->stream) {
		curl_easy_getinfo(a->c->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status == 200) {
			int r = a->req->sink(data, len, a->req->sink_userdata);

			if (r) {
				a->req->sink_stop = r;
				a->sink_stopped = true;
				return 0;
			}
			return len;
		}
		/* An error answer of a watch: its Status, bounded. */
		return buf_add(a, data, len, K8S_STATUS_MAX) ? len : 0;
	}
	return buf_add(a, data, len, a->c->o.max_body) ? len : 0;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct attempt *a = userdata;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	if (a->c->cancelled)
		return 1;
	if (a->req->stream && !a->req->no_idle && now_ms() - a->last_byte_ms > a->c->o.watch_idle_ms) {
		a->idle = true;
		return 1;
	}
	return 0;
}

/* The token for this attempt: the file's contents, re-read when the file
 * changed (the kubelet rotates projected service-account tokens by
 * replacing the file).  A file that cannot be read keeps the last token. */
static void token_refresh(struct k8s_client *c)
{
	struct stat st;
	char *data;
	size_t len;
	int fd, r;

	if (!c->token_file)
		return;
	fd = util_open_regular(c->token_file, 0, &st);
	if (fd < 0) {
		k8s_log(c, K8S_LOG_WARNING, "token file %s: %s (keeping the last token)", c->token_file,
			util_read_strerror(fd));
		return;
	}
	if (c->token && st.st_ino == c->token_st.st_ino && st.st_dev == c->token_st.st_dev &&
	    st.st_size == c->token_st.st_size && st.st_mtim.tv_sec == c->token_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == c->token_st.st_mtim.tv_nsec) {
		close(fd);
		return;
	}
	r = util_read_fd(fd, (size_t)st.st_size, 64 * 1024, true, &data, &len);
	close(fd);
	if (r < 0) {
		k8s_log(c, K8S_LOG_WARNING, "token file %s: %s (keeping the last token)", c->token_file,
			util_read_strerror(r));
		return;
	}
	while (len && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' '))
		data[--len] = '\0';
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
		k8s_log(c, K8S_LOG_INFO, "token file %s changed: token reloaded", c->token_file);
	}
	c->token = data;
	c->token_st = st;
}

/* What a curl failure means (k8s.h). */
int k8s_curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return -ECONNRESET;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
		return -EKEYREJECTED;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EPROTO;
	}
}

static void fill_transport_status(struct k8s_status *st, int r, const char *what)
{
	k8s_status_clear(st);
	st->message = strdup(what);
	(void)r;
}

/* The refusal's Status from the body of a non-2xx answer; a body that is
 * not a Status (the plain-text 404 of an unknown path) gives its first
 * line as the message. */
static void fill_http_status(struct k8s_status *st, long status, const char *body, size_t len, unsigned int retry_after)
{
	k8s_status_clear(st);
	if (!body || k8s_status_parse(body, len, st) < 0) {
		size_t n = 0;

		k8s_status_clear(st);
		while (n < len && n < 256 && body[n] != '\n' && body[n] != '\r')
			n++;
		st->message = strndup(body ? body : "", n);
	}
	st->code = (int)status;
	if (retry_after)
		st->retry_after_s = retry_after;
}

int k8s_auth_header(struct k8s_client *c, char **ret)
{
	char *h = NULL;

	token_refresh(c);
	if (c->token && asprintf(&h, "Authorization: Bearer %s", c->token) < 0)
		return -ENOMEM;
	*ret = h;
	return 0;
}

static int attempt_once(struct k8s_client *c, struct k8s_req *req, struct attempt *a, CURLcode *ret_cc,
			bool *ret_sent)
{
	_cleanup_free_ char *url = NULL, *auth = NULL, *ctype = NULL;
	struct curl_slist *h = NULL, *t;
	CURLcode cc;

	if (asprintf(&url, "%s%s", c->server, req->path_query) < 0) {
		url = NULL;
		return -ENOMEM;
	}
	token_refresh(c);
	h = curl_slist_append(h, "Accept: application/json");
	if (h && c->token) {
		if (asprintf(&auth, "Authorization: Bearer %s", c->token) < 0) {
			auth = NULL;
			curl_slist_free_all(h);
			return -ENOMEM;
		}
		h = (t = curl_slist_append(h, auth)) ? t : (curl_slist_free_all(h), NULL);
	}
	if (h && req->content_type) {
		if (asprintf(&ctype, "Content-Type: %s", req->content_type) < 0) {
			ctype = NULL;
			curl_slist_free_all(h);
			return -ENOMEM;
		}
		h = (t = curl_slist_append(h, ctype)) ? t : (curl_slist_free_all(h), NULL);
	}
	/* No "Expect: 100-continue" round trip for large bodies. */
	if (h)
		h = (t = curl_slist_append(h, "Expect:")) ? t : (curl_slist_free_all(h), NULL);
	if (!h) {
		if (auth)
			explicit_bzero(auth, strlen(auth));
		return -ENOMEM;
	}
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, req->method);
	if (req->content_type) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	} else {
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, strcmp(req->method, "GET") ? req->method : NULL);
	}
	curl_easy_setopt(c->curl, CURLOPT_NOBODY, 0L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, req->stream ? 0L : (long)c->o.request_timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, a);
	a->last_byte_ms = now_ms();
	cc = curl_easy_perform(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(h);
	if (auth)
		explicit_bzero(auth, strlen(auth));
	/* Not sent: no connection was made (curl itself resends once on a
	 * reused connection found dead). */
	*ret_sent = cc != CURLE_COULDNT_CONNECT && cc != CURLE_COULDNT_RESOLVE_HOST &&
		    cc != CURLE_COULDNT_RESOLVE_PROXY;
	*ret_cc = cc;
	return 0;
}

int k8s_request(struct k8s_client *c, struct k8s_req *req, struct k8s_status *st)
{
	unsigned int attempt = 0;
	int r;

	k8s_status_clear(st);
	for (;;) {
		struct attempt a = { .c = c, .req = req };
		bool sent = false, retry = false;
		unsigned int delay = 0;
		CURLcode cc;
		long status = 0;

		attempt++;
		if (c->cancelled) {
			fill_transport_status(st, -ECANCELED, "cancelled");
			return -ECANCELED;
		}
		req->status = 0;
		k8s_req_done(req);
		r = attempt_once(c, req, &a, &cc, &sent);
		if (r < 0) {
			free(a.body.p);
			return r;
		}
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
		if (cc != CURLE_OK) {
			char msg[CURL_ERROR_SIZE + 64];

			free(a.body.p);
			if (a.sink_stopped)
				return 0;
			if (c->cancelled) {
				fill_transport_status(st, -ECANCELED, "cancelled");
				return -ECANCELED;
			}
			if (a.too_big) {
				snprintf(msg, sizeof(msg), "%s %s: the answer is larger than %zu bytes", req->method,
					 req->path_query, req->stream ? (size_t)K8S_STATUS_MAX : c->o.max_body);
				fill_transport_status(st, -EMSGSIZE, msg);
				return -EMSGSIZE;
			}
			r = a.idle ? -ETIMEDOUT : k8s_curl_errno(cc);
			if (cc == CURLE_WRITE_ERROR)
				r = -ENOMEM;
			snprintf(msg, sizeof(msg), "%s %s: %s", req->method, req->path_query,
				 a.idle ? "watch idle timeout" : curl_easy_strerror(cc));
			fill_transport_status(st, r, msg);
			if (req->stream && status == 200)
				return r; /* a cut stream: the watch loop resumes */
			retry = (r == -ECONNREFUSED || r == -EHOSTUNREACH || r == -ETIMEDOUT || r == -ECONNRESET) &&
				(req->retry == K8S_RETRY_IDEMPOTENT || !sent);
		} else {
			req->status = status;
			if (status >= 200 && status < 300) {
				req->resp = a.body.p;
				req->resp_len = a.body.len;
				k8s_status_clear(st);
				st->code = (int)status;
				return 0;
			}
			fill_http_status(st, status, a.body.p, a.body.len, a.retry_after_s);
			free(a.body.p);
			r = k8s_status_errno(st);
			if (status == 429)
				retry = true;
			else if (status >= 500 && status < 600 && !k8s_status_is_typed_patch_error(st))
				retry = req->retry == K8S_RETRY_IDEMPOTENT;
			if (retry && st->retry_after_s) {
				uint64_t ms = (uint64_t)st->retry_after_s * 1000;

				delay = ms > c->o.backoff_max_ms ? c->o.backoff_max_ms : (unsigned int)ms;
			}
		}
		if (!retry || req->stream || attempt >= c->o.max_attempts)
			return r;
		if (!delay)
			delay = k8s_backoff_ms(c, attempt);
		k8s_log(c, K8S_LOG_INFO, "%s %s: %s; retry %u of %u in %u ms", req->method, req->path_query,
			st->message ? st->message : "failed", attempt, c->o.max_attempts - 1, delay);
		k8s_sleep(c, delay);
	}
}
