/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The replaying fake Kubernetes API server (k8s-fake.h).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "json.h"
#include "k8s-fake.h"
#include "util.h"
#include "websocket.h"

#define FAKE_MAX_BODY (64u << 20)

struct kv {
	char *key, *value;
};

struct exchange {
	char nn[3];
	char *method, *path;
	struct kv *query;
	size_t n_query;
	char *req_body;             /* compact JSON or NULL */
	int status;
	struct kv *headers;
	size_t n_headers;
	char *body;                 /* compact JSON, the text, or the events one per line */
	size_t body_len;
	bool watch;
	char **events;              /* watch: each event's line (without '\n') */
	size_t n_events;
	unsigned int served;
};

struct step {
	struct k8s_fake_step s;     /* strings below owned */
	char **events;
	struct step *next;
};

struct log_line {
	int64_t t_ns;
	char *container;
	char *text;
};

struct pod_log {
	char *ns, *pod;
	struct log_line *lines;
	size_t n;
	bool ended;
	struct pod_log *next;
};

/* An upgraded connection's thread (joined by k8s_fake_free()). */
struct ws_thread {
	pthread_t t;
	struct ws_thread *next;
};

struct k8s_fake {
	struct MHD_Daemon *d;
	char url[64];
	uint16_t port;
	char *token;
	bool tls_client_ca;
	bool accept_writes;
	struct exchange *ex;
	size_t n_ex;
	pthread_mutex_t lock;
	struct step *steps, **steps_tail;
	struct step *served;
	struct k8s_fake_request *reqs;
	size_t n_reqs, cap_reqs;
	size_t unmatched;
	volatile bool stopping;
	char *exec_root;
	char *exec_rootfs;
	char *exec_protocols;
	bool tls;
	size_t exec_sessions;
	bool pod_store;
	unsigned int pod_delete_ms;
	struct fake_pod *pods;
	uint64_t pod_seq;
	struct ws_thread *threads;
	struct pod_log *logs;
	pthread_cond_t log_cond;
};

/* ---------------------------------------------------------------- loading */

static char *compact(const struct json_value *v, size_t *ret_len)
{
	char *out = NULL;

	return json_write_value(v, 0, &out, ret_len) < 0 ? NULL : out;
}

static int kv_add(struct kv **arr, size_t *n, const char *k, const char *v)
{
	struct kv *p = realloc(*arr, (*n + 1) * sizeof(**arr));

	if (!p)
		return -ENOMEM;
	*arr = p;
	p[*n].key = strdup(k);
	p[*n].value = strdup(v ? v : "");
	if (!p[*n].key || !p[*n].value) {
		free(p[*n].key);
		free(p[*n].value);
		return -ENOMEM;
	}
	(*n)++;
	return 0;
}

static void kv_free(struct kv *arr, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(arr[i].key);
		free(arr[i].value);
	}
	free(arr);
}

static void exchange_clear(struct exchange *e)
{
	free(e->method);
	free(e->path);
	kv_free(e->query, e->n_query);
	free(e->req_body);
	kv_free(e->headers, e->n_headers);
	free(e->body);
	for (size_t i = 0; i < e->n_events; i++)
		free(e->events[i]);
	free(e->events);
	memset(e, 0, sizeof(*e));
}

static int exchange_load(const char *path, const char *nn, struct exchange *e)
{
	_cleanup_free_ char *text = NULL;
	struct json_value *root = NULL;
	const struct json_value *q, *h, *b, *rb;
	struct json_limits lim = { .max_input = 64u << 20, .max_members = 100000 };
	struct json_error err;
	size_t len;
	int64_t st;
	int r;

	memset(e, 0, sizeof(*e));
	if ((r = util_read_file(path, 64u << 20, &text, &len)) < 0)
		return r;
	if (json_parse(text, len, &lim, &root, &err) < 0)
		return -EBADMSG;
	r = -EBADMSG;
	memcpy(e->nn, nn, 2);
	if (!json_string_value(json_at(root, "request.method")) || !json_string_value(json_at(root, "request.path")) ||
	    json_get_int64(json_at(root, "response.status"), &st) < 0)
		goto fail;
	r = -ENOMEM;
	e->method = strdup(json_string_value(json_at(root, "request.method")));
	e->path = strdup(json_string_value(json_at(root, "request.path")));
	if (!e->method || !e->path)
		goto fail;
	/* 77-80 carry their query in the path (the webhook's URL). */
	{
		char *qm = strchr(e->path, '?');

		if (qm)
			*qm = '\0';
	}
	e->status = (int)st;
	q = json_at(root, "request.query");
	for (size_t i = 0; json_is(q, JSON_OBJECT) && i < q->u.object.n; i++)
		if (kv_add(&e->query, &e->n_query, q->u.object.members[i].key,
			   json_string_value(q->u.object.members[i].value)) < 0)
			goto fail;
	for (size_t i = 0; i < e->n_query; i++)
		if (!strcmp(e->query[i].key, "watch"))
			e->watch = true;
	rb = json_at(root, "request.body");
	if (rb && rb->type != JSON_NULL && !(e->req_body = compact(rb, NULL)))
		goto fail;
	h = json_at(root, "response.headers");
	for (size_t i = 0; json_is(h, JSON_OBJECT) && i < h->u.object.n; i++) {
		const char *k = h->u.object.members[i].key;
		const struct json_value *v = h->u.object.members[i].value;

		if (!strcasecmp(k, "transfer-encoding") || !strcasecmp(k, "content-length"))
			continue;
		if (v->type == JSON_ARRAY) {
			for (size_t j = 0; j < v->u.array.n; j++)
				if (kv_add(&e->headers, &e->n_headers, k, json_string_value(v->u.array.items[j])) < 0)
					goto fail;
		} else if (kv_add(&e->headers, &e->n_headers, k, json_string_value(v)) < 0)
			goto fail;
	}
	b = json_at(root, "response.body");
	if (e->watch && json_is(b, JSON_ARRAY)) {
		size_t total = 0;

		e->events = calloc(b->u.array.n + 1, sizeof(*e->events));
		if (!e->events)
			goto fail;
		for (size_t i = 0; i < b->u.array.n; i++) {
			size_t n;

			if (!(e->events[i] = compact(b->u.array.items[i], &n)))
				goto fail;
			e->n_events = i + 1;
			total += n + 1;
		}
		e->body = malloc(total + 1);
		if (!e->body)
			goto fail;
		for (size_t i = 0; i < e->n_events; i++) {
			size_t n = strlen(e->events[i]);

			memcpy(e->body + e->body_len, e->events[i], n);
			e->body_len += n;
			e->body[e->body_len++] = '\n';
		}
		e->body[e->body_len] = '\0';
	} else if (json_is(b, JSON_STRING)) {
		if (!(e->body = strdup(json_string_value(b))))
			goto fail;
		e->body_len = strlen(e->body);
	} else if (b && b->type != JSON_NULL) {
		if (!(e->body = compact(b, &e->body_len)))
			goto fail;
	}
	json_free(root);
	return 0;
fail:
	json_free(root);
	exchange_clear(e);
	return r;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_dir(struct k8s_fake *f, const char *dir)
{
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		char **p;

		if (l < 8 || strcmp(de->d_name + l - 5, ".json") || de->d_name[0] < '0' || de->d_name[0] > '9' ||
		    de->d_name[1] < '0' || de->d_name[1] > '9' || de->d_name[2] != '-')
			continue;
		p = realloc(names, (n + 1) * sizeof(*names));
		if (!p || !(p[n] = strdup(de->d_name))) {
			names = p ? p : names;
			r = -ENOMEM;
			break;
		}
		names = p;
		n++;
	}
	closedir(d);
	if (r == 0 && n) {
		qsort(names, n, sizeof(*names), cmp_names);
		f->ex = calloc(n, sizeof(*f->ex));
		if (!f->ex)
			r = -ENOMEM;
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		char *path;

		if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
			r = -ENOMEM;
			break;
		}
		if ((r = exchange_load(path, names[i], &f->ex[f->n_ex])) == 0)
			f->n_ex++;
		free(path);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

static const struct exchange *find_nn(const struct k8s_fake *f, const char *nn)
{
	for (size_t i = 0; nn && i < f->n_ex; i++)
		if (!strncmp(f->ex[i].nn, nn, 2) && strlen(nn) == 2)
			return &f->ex[i];
	return NULL;
}

const char *k8s_fake_exchange_body(const struct k8s_fake *f, const char *nn, int *ret_status)
{
	const struct exchange *e = find_nn(f, nn);

	if (!e)
		return NULL;
	if (ret_status)
		*ret_status = e->status;
	return e->body;
}

const char *k8s_fake_exchange_request_body(const struct k8s_fake *f, const char *nn)
{
	const struct exchange *e = find_nn(f, nn);

	return e ? e->req_body : NULL;
}

size_t k8s_fake_exchanges(const struct k8s_fake *f)
{
	return f->n_ex;
}

/* ---------------------------------------------------------------- requests */

void k8s_fake_request_clear(struct k8s_fake_request *r)
{
	if (!r)
		return;
	free(r->method);
	free(r->path);
	free(r->query);
	free(r->content_type);
	free(r->authorization);
	free(r->user_agent);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static char *dup0(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int request_copy(const struct k8s_fake_request *in, struct k8s_fake_request *out)
{
	*out = *in;
	out->method = dup0(in->method);
	out->path = dup0(in->path);
	out->query = dup0(in->query);
	out->content_type = dup0(in->content_type);
	out->authorization = dup0(in->authorization);
	out->user_agent = dup0(in->user_agent);
	out->body = NULL;
	if (in->body) {
		out->body = malloc(in->body_len + 1);
		if (out->body) {
			memcpy(out->body, in->body, in->body_len);
			out->body[in->body_len] = '\0';
		}
	}
	if ((in->method && !out->method) || (in->path && !out->path) || (in->query && !out->query) ||
	    (in->content_type && !out->content_type) || (in->authorization && !out->authorization) ||
	    (in->user_agent && !out->user_agent) || (in->body && !out->body)) {
		k8s_fake_request_clear(out);
		return -ENOMEM;
	}
	return 0;
}

size_t k8s_fake_requests(struct k8s_fake *f)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = f->n_reqs;
	pthread_mutex_unlock(&f->lock);
	return n;
}

int k8s_fake_request_get(struct k8s_fake *f, size_t i, struct k8s_fake_request *ret)
{
	int r = -ENOENT;

	pthread_mutex_lock(&f->lock);
	if (i < f->n_reqs)
		r = request_copy(&f->reqs[i], ret);
	pthread_mutex_unlock(&f->lock);
	return r;
}

size_t k8s_fake_unmatched(struct k8s_fake *f)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = f->unmatched;
	pthread_mutex_unlock(&f->lock);
	return n;
}

void k8s_fake_reset_requests(struct k8s_fake *f)
{
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n_reqs; i++)
		k8s_fake_request_clear(&f->reqs[i]);
	f->n_reqs = 0;
	f->unmatched = 0;
	pthread_mutex_unlock(&f->lock);
}

const char *k8s_fake_query_arg(const struct k8s_fake_request *r, const char *key, char *buf, size_t size)
{
	size_t kl = strlen(key);

	for (const char *p = r->query; p && *p;) {
		const char *amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);

		if (n > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			size_t vl = n - kl - 1;

			if (vl >= size)
				vl = size - 1;
			memcpy(buf, p + kl + 1, vl);
			buf[vl] = '\0';
			return buf;
		}
		p += n + (amp ? 1 : 0);
	}
	return NULL;
}

/* ---------------------------------------------------------------- scripts */

static void step_free(struct step *s)
{
	if (!s)
		return;
	free((char *)s->s.method);
	free((char *)s->s.path);
	free((char *)s->s.exchange);
	free((char *)s->s.headers);
	free((char *)s->s.body);
	free((void *)s->s.ws_frames);
	free((char *)s->s.ws_protocol);
	for (size_t i = 0; i < s->s.n_events; i++)
		free(s->events[i]);
	free(s->events);
	free(s);
}

int k8s_fake_push(struct k8s_fake *f, const struct k8s_fake_step *in)
{
	struct step *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->s = *in;
	s->s.method = dup0(in->method);
	s->s.path = dup0(in->path);
	s->s.exchange = dup0(in->exchange);
	s->s.headers = dup0(in->headers);
	s->s.body = dup0(in->body);
	s->s.ws_protocol = dup0(in->ws_protocol);
	s->s.ws_frames = NULL;
	if (in->ws_frames_len) {
		void *p = malloc(in->ws_frames_len);

		if (!p)
			goto fail;
		memcpy(p, in->ws_frames, in->ws_frames_len);
		s->s.ws_frames = p;
	}
	s->s.n_events = 0;
	if (in->n_events) {
		s->events = calloc(in->n_events, sizeof(*s->events));
		if (!s->events)
			goto fail;
		for (size_t i = 0; i < in->n_events; i++) {
			if (!(s->events[i] = strdup(in->events[i])))
				goto fail;
			s->s.n_events = i + 1;
		}
	}
	s->s.events = (const char *const *)s->events;
	if ((in->method && !s->s.method) || (in->path && !s->s.path) || (in->exchange && !s->s.exchange) ||
	    (in->headers && !s->s.headers) || (in->body && !s->s.body) || (in->ws_protocol && !s->s.ws_protocol))
		goto fail;
	if (in->exchange && !find_nn(f, in->exchange))
		goto fail_inval;
	pthread_mutex_lock(&f->lock);
	*f->steps_tail = s;
	f->steps_tail = &s->next;
	pthread_mutex_unlock(&f->lock);
	return 0;
fail_inval:
	step_free(s);
	return -EINVAL;
fail:
	step_free(s);
	return -ENOMEM;
}

size_t k8s_fake_pending(struct k8s_fake *f)
{
	size_t n = 0;

	pthread_mutex_lock(&f->lock);
	for (struct step *s = f->steps; s; s = s->next)
		n++;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* The first queued step @method @path matches, unlinked (locked). */
static struct step *step_take(struct k8s_fake *f, const char *method, const char *path)
{
	for (struct step **pp = &f->steps; *pp; pp = &(*pp)->next) {
		struct step *s = *pp;

		if ((s->s.method && strcmp(s->s.method, method)) || (s->s.path && strcmp(s->s.path, path)))
			continue;
		*pp = s->next;
		if (f->steps_tail == &s->next)
			f->steps_tail = pp;
		s->next = NULL;
		return s;
	}
	return NULL;
}

/* ---------------------------------------------------------------- serving */

struct conn {
	struct util_buf body;
};

/* A streamed answer: chunks with delays, an optional cut. */
struct stream {
	struct k8s_fake *f;
	char **chunks;              /* borrowed */
	size_t n, i, off;
	bool with_newline;
	unsigned int event_delay_ms, hang_ms;
	bool cut;
	size_t cut_after, sent;
	bool delayed;               /* the current chunk's delay is done */
	bool hung;
	char *owned_body;           /* a whole body as one chunk */
	char *one[1];
};

static void nap(struct k8s_fake *f, unsigned int ms)
{
	while (ms && !f->stopping) {
		unsigned int step = ms < 10 ? ms : 10;
		struct timespec ts = { 0, (long)step * 1000000L };

		nanosleep(&ts, NULL);
		ms -= step;
	}
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;

	(void)pos;
	if (s->f->stopping)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (s->cut && s->cut_after && s->sent >= s->cut_after)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	while (s->i < s->n) {
		const char *c = s->chunks[s->i];
		size_t len = strlen(c) + (s->with_newline ? 1 : 0), n;

		if (!s->delayed) {
			nap(s->f, s->event_delay_ms);
			s->delayed = true;
		}
		if (s->off >= len) {
			s->i++;
			s->off = 0;
			s->delayed = false;
			continue;
		}
		n = len - s->off;
		if (n > max)
			n = max;
		if (s->cut && s->cut_after && s->sent + n > s->cut_after)
			n = s->cut_after - s->sent;
		for (size_t k = 0; k < n; k++) {
			size_t at = s->off + k;

			buf[k] = at < strlen(c) ? c[at] : '\n';
		}
		s->off += n;
		s->sent += n;
		return (ssize_t)n;
	}
	if (!s->hung) {
		nap(s->f, s->hang_ms);
		s->hung = true;
	}
	return s->cut ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
}

static void stream_free(void *cls)
{
	struct stream *s = cls;

	free(s->owned_body);
	free(s);
}

static void add_headers_text(struct MHD_Response *resp, const char *text)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[1024];
		char *colon, *v;

		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = '\0';
			colon = strchr(line, ':');
			if (colon) {
				*colon = '\0';
				for (v = colon + 1; *v == ' '; v++)
					;
				MHD_add_response_header(resp, line, v);
			}
		}
		p += n + (nl ? 1 : 0);
	}
}

/* Whether the request's query fits exchange @e (header comment). */
static bool query_fits(const struct exchange *e, const struct kv *q, size_t nq)
{
	for (size_t i = 0; i < e->n_query; i++) {
		bool found = false;

		if (!strcmp(e->query[i].key, "timeoutSeconds"))
			continue;
		for (size_t j = 0; j < nq && !found; j++)
			found = !strcmp(q[j].key, e->query[i].key) && !strcmp(q[j].value, e->query[i].value);
		if (!found)
			return false;
	}
	for (size_t j = 0; j < nq; j++) {
		bool known = false;

		for (size_t i = 0; i < e->n_query && !known; i++)
			known = !strcmp(q[j].key, e->query[i].key);
		if (!known && strcmp(q[j].key, "timeoutSeconds") && strcmp(q[j].key, "allowWatchBookmarks") &&
		    strcmp(q[j].key, "limit"))
			return false;
	}
	return true;
}

/* The same JSON text up to formatting: both parsed and written back. */
static bool body_equal(const char *recorded, const char *body, size_t len)
{
	struct json_value *v = NULL;
	struct json_error err;
	char *c;
	bool eq;

	if (!recorded || !body)
		return false;
	if (json_parse(body, len, NULL, &v, &err) < 0)
		return false;
	c = compact(v, NULL);
	json_free(v);
	eq = c && !strcmp(c, recorded);
	free(c);
	return eq;
}

static struct exchange *exchange_match(struct k8s_fake *f, const char *method, const char *path, const struct kv *q,
				       size_t nq, const char *body, size_t len)
{
	struct exchange *best = NULL;
	bool best_body = false;

	for (size_t i = 0; i < f->n_ex; i++) {
		struct exchange *e = &f->ex[i];
		bool b;

		if (e->status == 401 || e->status == 403 || strcmp(e->method, method) || strcmp(e->path, path) ||
		    !query_fits(e, q, nq))
			continue;
		b = body_equal(e->req_body, body, len);
		if (!best || (b && !best_body) || (b == best_body && e->served < best->served)) {
			best = e;
			best_body = b;
		}
	}
	return best;
}

struct qcollect {
	struct kv *q;
	size_t n;
	char *text;
	size_t tlen;
	bool oom;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct qcollect *c = cls;
	size_t kl = strlen(key), vl = value ? strlen(value) : 0;
	char *t;

	(void)kind;
	if (kv_add(&c->q, &c->n, key, value) < 0) {
		c->oom = true;
		return MHD_NO;
	}
	t = realloc(c->text, c->tlen + kl + vl + 3);
	if (!t) {
		c->oom = true;
		return MHD_NO;
	}
	c->text = t;
	c->tlen += (size_t)sprintf(c->text + c->tlen, "%s%s=%s", c->tlen ? "&" : "", key, value ? value : "");
	return MHD_YES;
}

static bool client_cert_ok(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	unsigned int status = 0, n = 0;

	if (!ci || !ci->tls_session)
		return false;
	if (!gnutls_certificate_get_peers((gnutls_session_t)ci->tls_session, &n) || n == 0)
		return false;
	return gnutls_certificate_verify_peers2((gnutls_session_t)ci->tls_session, &status) == 0 && status == 0;
}

static void record(struct k8s_fake *f, struct MHD_Connection *conn, const char *method, const char *path,
		   const struct qcollect *q, const struct conn *c, const char *nn, bool scripted, int status,
		   bool unmatched)
{
	struct k8s_fake_request r = { 0 };

	r.method = dup0(method);
	r.path = dup0(path);
	r.query = dup0(q->text ? q->text : "");
	r.content_type = dup0(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type"));
	r.authorization = dup0(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"));
	r.user_agent = dup0(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "User-Agent"));
	if (c->body.p) {
		r.body = malloc(c->body.len + 1);
		if (r.body) {
			memcpy(r.body, c->body.p, c->body.len + 1);
			r.body_len = c->body.len;
		}
	}
	if (nn)
		memcpy(r.exchange, nn, 2);
	r.scripted = scripted;
	r.status = status;
	r.client_cert_verified = f->tls_client_ca && client_cert_ok(conn);
	pthread_mutex_lock(&f->lock);
	if (f->n_reqs == f->cap_reqs) {
		size_t cap = f->cap_reqs ? f->cap_reqs * 2 : 64;
		struct k8s_fake_request *p = realloc(f->reqs, cap * sizeof(*p));

		if (p) {
			f->reqs = p;
			f->cap_reqs = cap;
		}
	}
	if (f->n_reqs < f->cap_reqs)
		f->reqs[f->n_reqs++] = r;
	else
		k8s_fake_request_clear(&r);
	if (unmatched)
		f->unmatched++;
	pthread_mutex_unlock(&f->lock);
}

static enum MHD_Result queue(struct MHD_Connection *conn, struct MHD_Response *resp, int status)
{
	enum MHD_Result r;

	if (!resp)
		return MHD_NO;
	r = MHD_queue_response(conn, (unsigned int)status, resp);
	MHD_destroy_response(resp);
	return r;
}

static struct MHD_Response *stream_response(struct k8s_fake *f, char **chunks, size_t n, bool with_newline,
					    const struct k8s_fake_step *st)
{
	struct stream *s = calloc(1, sizeof(*s));
	struct MHD_Response *resp;

	if (!s)
		return NULL;
	s->f = f;
	s->chunks = chunks;
	s->n = n;
	s->with_newline = with_newline;
	if (st) {
		s->event_delay_ms = st->event_delay_ms;
		s->hang_ms = st->hang_ms;
		s->cut = st->cut;
		s->cut_after = st->cut_after;
	}
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free);
	if (!resp)
		free(s);
	return resp;
}

/* A served step's strings may still be streamed: it is kept, on a list
 * freed with the fake. */
static void step_retire(struct k8s_fake *f, struct step *s)
{
	pthread_mutex_lock(&f->lock);
	s->next = f->served;
	f->served = s;
	pthread_mutex_unlock(&f->lock);
}

static enum MHD_Result answer_exchange(struct k8s_fake *f, struct MHD_Connection *conn, struct exchange *e,
				       const struct k8s_fake_step *st)
{
	struct MHD_Response *resp;

	if (e->watch && e->status == 200)
		resp = stream_response(f, e->events, e->n_events, true, st);
	else if (st && (st->cut || st->event_delay_ms || st->hang_ms)) {
		/* A plain body sent slowly or cut: one chunk. */
		resp = stream_response(f, &e->body, e->body ? 1 : 0, false, st);
	} else
		resp = MHD_create_response_from_buffer(e->body_len, e->body ? e->body : (char *)"",
						       MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	for (size_t i = 0; i < e->n_headers; i++)
		MHD_add_response_header(resp, e->headers[i].key, e->headers[i].value);
	if (st && st->headers)
		add_headers_text(resp, st->headers);
	return queue(conn, resp, e->status);
}

/* ---------------------------------------------------------------- the Pod store */

struct fake_pod {
	char *ns, *name, *uid;
	struct json_value *obj;     /* as created */
	int64_t created;            /* unix seconds */
	int64_t deleted_ms;         /* util_mono_ms() of the delete, 0: live */
	uint64_t rv;
	struct fake_pod *next;
};

/* A Pod gone from the store takes its exec directory with it. */
static void pod_dir_remove(struct k8s_fake *f, const struct fake_pod *p)
{
	char *cmd = NULL;

	if (!f->exec_root || strchr(p->ns, '\'') || strchr(p->name, '\'') || strchr(p->ns, '/') || strchr(p->name, '/'))
		return;
	if (asprintf(&cmd, "rm -rf '%s/%s/%s'", f->exec_root, p->ns, p->name) >= 0 && system(cmd) != 0) {
		/* a leftover directory: the test's scratch removes it */
	}
	free(cmd);
}

static void pod_free(struct fake_pod *p)
{
	free(p->ns);
	free(p->name);
	free(p->uid);
	json_free(p->obj);
	free(p);
}

/* Pods deleted more than pod_delete_ms ago are gone (locked). */
static void pods_expire(struct k8s_fake *f)
{
	int64_t now = util_mono_ms();

	for (struct fake_pod **pp = &f->pods; *pp;) {
		struct fake_pod *p = *pp;

		if (p->deleted_ms && now - p->deleted_ms >= (int64_t)f->pod_delete_ms) {
			*pp = p->next;
			pod_dir_remove(f, p);
			pod_free(p);
			continue;
		}
		pp = &p->next;
	}
}

static struct fake_pod *pod_find(struct k8s_fake *f, const char *ns, const char *name)
{
	for (struct fake_pod *p = f->pods; p; p = p->next)
		if (!strcmp(p->ns, ns) && !strcmp(p->name, name))
			return p;
	return NULL;
}

static void time_text(int64_t t, char buf[32])
{
	time_t s = (time_t)t;
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The stored Pod as the API server shows it: its metadata with uid,
 * resourceVersion, creationTimestamp (and deletionTimestamp while it is
 * terminating), its spec, and a status the fake's "kubelet" writes: Running
 * and Ready at once. */
static void pod_write(struct json_writer *w, const struct fake_pod *p)
{
	const struct json_value *o = p->obj, *md = json_get(o, "metadata");
	char t[32], rv[24];

	jw_object_open(w);
	for (size_t i = 0; i < o->u.object.n; i++) {
		const struct json_member *m = &o->u.object.members[i];

		if (!strcmp(m->key, "metadata") || !strcmp(m->key, "status"))
			continue;
		jw_key(w, m->key);
		jw_value(w, m->value);
	}
	jw_key(w, "metadata");
	jw_object_open(w);
	for (size_t i = 0; json_is(md, JSON_OBJECT) && i < md->u.object.n; i++) {
		const struct json_member *m = &md->u.object.members[i];

		if (!strcmp(m->key, "uid") || !strcmp(m->key, "resourceVersion") || !strcmp(m->key, "creationTimestamp") ||
		    !strcmp(m->key, "name") || !strcmp(m->key, "namespace") || !strcmp(m->key, "generateName"))
			continue;
		jw_key(w, m->key);
		jw_value(w, m->value);
	}
	jw_kv_string(w, "name", p->name);
	jw_kv_string(w, "namespace", p->ns);
	jw_kv_string(w, "uid", p->uid);
	snprintf(rv, sizeof(rv), "%" PRIu64, p->rv);
	jw_kv_string(w, "resourceVersion", rv);
	time_text(p->created, t);
	jw_kv_string(w, "creationTimestamp", t);
	if (p->deleted_ms) {
		jw_kv_string(w, "deletionTimestamp", t);
		jw_kv_int(w, "deletionGracePeriodSeconds", 0);
	}
	jw_object_close(w);
	jw_key(w, "status");
	jw_object_open(w);
	jw_kv_string(w, "phase", "Running");
	jw_key(w, "conditions");
	jw_array_open(w);
	jw_object_open(w);
	jw_kv_string(w, "type", "Ready");
	jw_kv_string(w, "status", p->deleted_ms ? "False" : "True");
	jw_object_close(w);
	jw_array_close(w);
	jw_object_close(w);
	jw_object_close(w);
}

/* Does @p's labels match @sel ("k=v,k,k!=v": equality, existence,
 * inequality)? */
static bool pod_selected(const struct fake_pod *p, const char *sel)
{
	const struct json_value *labels = json_at(p->obj, "metadata.labels");

	for (const char *s = sel; s && *s;) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		char term[512], *eq;
		const char *have;
		bool neg = false;

		if (n >= sizeof(term))
			return false;
		memcpy(term, s, n);
		term[n] = '\0';
		eq = strchr(term, '=');
		if (eq) {
			if (eq > term && eq[-1] == '!') {
				neg = true;
				eq[-1] = '\0';
			}
			*eq++ = '\0';
			if (*eq == '=')
				eq++;
		}
		have = json_string_value(json_get(labels, term));
		if (!eq ? !have : neg ? (have && !strcmp(have, eq)) : (!have || strcmp(have, eq)))
			return false;
		s = e ? e + 1 : NULL;
	}
	return true;
}

static enum MHD_Result json_answer(struct MHD_Connection *conn, int status, char *body)
{
	struct MHD_Response *resp;

	if (!body)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	return queue(conn, resp, status);
}

/* A Status whose message is @pre @name @post. */
static char *pod_status_body(int code, const char *reason, const char *pre, const char *name, const char *post)
{
	char *msg = NULL, *body = NULL;

	if (asprintf(&msg, "%s%s%s", pre, name, post) < 0)
		return NULL;
	if (asprintf(&body,
		     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"%s\","
		     "\"reason\":\"%s\",\"details\":{\"name\":\"%s\",\"kind\":\"pods\"},\"code\":%d}",
		     msg, reason, name, code) < 0)
		body = NULL;
	free(msg);
	return body;
}

/* /api/v1/namespaces/NS/pods[/NAME]: the store's answer, or false when
 * the path is not the store's. */
/* RFC 7386: @target with the merge patch @patch applied, written to @w
 * (a member null in the patch removes it; objects merge, anything else
 * replaces). */
static void merge_write(struct json_writer *w, const struct json_value *target, const struct json_value *patch)
{
	if (!json_is(patch, JSON_OBJECT)) {
		jw_value(w, patch);
		return;
	}
	jw_object_open(w);
	for (size_t i = 0; json_is(target, JSON_OBJECT) && i < target->u.object.n; i++) {
		const struct json_member *m = &target->u.object.members[i];

		if (json_get(patch, m->key))
			continue;
		jw_key(w, m->key);
		jw_value(w, m->value);
	}
	for (size_t i = 0; i < patch->u.object.n; i++) {
		const struct json_member *m = &patch->u.object.members[i];

		if (json_is(m->value, JSON_NULL))
			continue;
		jw_key(w, m->key);
		merge_write(w, json_get(target, m->key), m->value);
	}
	jw_object_close(w);
}

static bool answer_pods(struct k8s_fake *f, struct MHD_Connection *conn, const char *method, const char *url,
			const struct qcollect *q, const struct conn *c, enum MHD_Result *ret)
{
	static const char pre[] = "/api/v1/namespaces/";
	char ns[256], name[256] = "";
	const char *p, *e;
	struct json_writer *w;
	char *body = NULL;
	int status = 200;

	if (strncmp(url, pre, sizeof(pre) - 1))
		return false;
	p = url + sizeof(pre) - 1;
	e = strchr(p, '/');
	if (!e || (size_t)(e - p) >= sizeof(ns) || strncmp(e, "/pods", 5) || (e[5] && e[5] != '/'))
		return false;
	memcpy(ns, p, (size_t)(e - p));
	ns[e - p] = '\0';
	if (e[5] == '/') {
		if (strchr(e + 6, '/') || strlen(e + 6) >= sizeof(name) || !e[6])
			return false;
		snprintf(name, sizeof(name), "%s", e + 6);
	}
	pthread_mutex_lock(&f->lock);
	pods_expire(f);
	if (!strcmp(method, "POST") && !name[0]) {
		struct json_value *obj = NULL;
		const char *nm = NULL, *gen = NULL;
		struct fake_pod *np;

		if (!c->body.p || json_parse(c->body.p, c->body.len, NULL, &obj, NULL) < 0 || obj->type != JSON_OBJECT) {
			json_free(obj);
			status = 400;
			body = pod_status_body(400, "BadRequest", "the body of a Pod create is not a JSON object", "", "");
		} else {
			nm = json_string_value(json_at(obj, "metadata.name"));
			gen = json_string_value(json_at(obj, "metadata.generateName"));
			if (!nm && gen) {
				snprintf(name, sizeof(name), "%s%05u", gen, (unsigned int)(++f->pod_seq % 100000));
				nm = name;
			}
			if (!nm) {
				json_free(obj);
				status = 422;
				body = pod_status_body(422, "Invalid", "Pod is invalid: metadata.name: Required value", "", "");
			} else if (pod_find(f, ns, nm)) {
				status = 409;
				body = pod_status_body(409, "AlreadyExists", "pods \\\"", nm, "\\\" already exists");
				json_free(obj);
			} else if ((np = calloc(1, sizeof(*np)))) {
				char uid[48];

				snprintf(uid, sizeof(uid), "0f0f0f0f-0000-4000-8000-%012" PRIu64, ++f->pod_seq);
				np->ns = strdup(ns);
				np->name = strdup(nm);
				np->uid = strdup(uid);
				np->obj = obj;
				np->created = time(NULL);
				np->rv = ++f->pod_seq;
				np->next = f->pods;
				f->pods = np;
				status = 201;
				w = json_writer_new(0);
				pod_write(w, np);
				if (json_writer_finish(w, &body, NULL) < 0)
					body = NULL;
			} else {
				json_free(obj);
			}
		}
	} else if (!strcmp(method, "GET") && !name[0]) {
		const char *sel = NULL;

		for (size_t i = 0; i < q->n; i++)
			if (!strcmp(q->q[i].key, "labelSelector"))
				sel = q->q[i].value;
		w = json_writer_new(0);
		jw_object_open(w);
		jw_kv_string(w, "kind", "PodList");
		jw_kv_string(w, "apiVersion", "v1");
		jw_key(w, "metadata");
		jw_object_open(w);
		jw_kv_string(w, "resourceVersion", "1");
		jw_object_close(w);
		jw_key(w, "items");
		jw_array_open(w);
		for (struct fake_pod *pd = f->pods; pd; pd = pd->next)
			if (!strcmp(pd->ns, ns) && pod_selected(pd, sel))
				pod_write(w, pd);
		jw_array_close(w);
		jw_object_close(w);
		if (json_writer_finish(w, &body, NULL) < 0)
			body = NULL;
	} else if ((!strcmp(method, "GET") || !strcmp(method, "DELETE")) && name[0]) {
		struct fake_pod *pd = pod_find(f, ns, name);

		if (!pd) {
			status = 404;
			body = pod_status_body(404, "NotFound", "pods \\\"", name, "\\\" not found");
		} else {
			if (!strcmp(method, "DELETE") && !pd->deleted_ms) {
				pd->deleted_ms = util_mono_ms();
				pd->rv = ++f->pod_seq;
			}
			w = json_writer_new(0);
			pod_write(w, pd);
			if (json_writer_finish(w, &body, NULL) < 0)
				body = NULL;
			if (!strcmp(method, "DELETE") && f->pod_delete_ms == 0) {
				for (struct fake_pod **pp = &f->pods; *pp; pp = &(*pp)->next)
					if (*pp == pd) {
						*pp = pd->next;
						pod_dir_remove(f, pd);
						pod_free(pd);
						break;
					}
			}
		}
	} else if (!strcmp(method, "PATCH") && name[0]) {
		struct fake_pod *pd = pod_find(f, ns, name);
		struct json_value *patch = NULL, *merged = NULL;
		const char *ct;
		char *text = NULL;
		size_t len = 0;

		if (!pd) {
			status = 404;
			body = pod_status_body(404, "NotFound", "pods \\\"", name, "\\\" not found");
		} else if (!(ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type")) ||
			   strcmp(ct, "application/merge-patch+json") ||
			   !c->body.p || json_parse(c->body.p, c->body.len, NULL, &patch, NULL) < 0 ||
			   patch->type != JSON_OBJECT) {
			status = 415;
			body = pod_status_body(415, "UnsupportedMediaType",
					       "the fake's Pod store takes a merge patch (a JSON object) only", "", "");
		} else {
			w = json_writer_new(0);
			merge_write(w, pd->obj, patch);
			if (json_writer_finish(w, &text, &len) == 0 && json_parse(text, len, NULL, &merged, NULL) == 0) {
				json_free(pd->obj);
				pd->obj = merged;
				pd->rv = ++f->pod_seq;
			}
			free(text);
			w = json_writer_new(0);
			pod_write(w, pd);
			if (json_writer_finish(w, &body, NULL) < 0)
				body = NULL;
		}
		json_free(patch);
	} else {
		status = 405;
		body = pod_status_body(405, "MethodNotAllowed", "the fake's Pod store does not take this method", "", "");
	}
	pthread_mutex_unlock(&f->lock);
	record(f, conn, method, url, q, c, NULL, false, status, false);
	*ret = json_answer(conn, status, body);
	return true;
}

/* With the Pod store on: is the Pod there and not terminating? */
static bool pod_live(struct k8s_fake *f, const char *ns, const char *name)
{
	struct fake_pod *p;
	bool live;

	pthread_mutex_lock(&f->lock);
	pods_expire(f);
	p = pod_find(f, ns, name);
	live = p && !p->deleted_ms;
	pthread_mutex_unlock(&f->lock);
	return live;
}

bool k8s_fake_pod_exists(struct k8s_fake *f, const char *ns, const char *name)
{
	bool found;

	pthread_mutex_lock(&f->lock);
	pods_expire(f);
	found = pod_find(f, ns, name) != NULL;
	pthread_mutex_unlock(&f->lock);
	return found;
}

size_t k8s_fake_pod_count(struct k8s_fake *f)
{
	size_t n = 0;

	pthread_mutex_lock(&f->lock);
	pods_expire(f);
	for (struct fake_pod *p = f->pods; p; p = p->next)
		n++;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* ---------------------------------------------------------------- pods/exec */

/* "/api/v1/namespaces/NS/pods/NAME/SUB": NS and NAME into the buffers. */
static bool pod_subresource(const char *url, const char *sub, char *ns, char *pod, size_t size)
{
	static const char pre[] = "/api/v1/namespaces/";
	const char *p, *e;
	size_t n;

	if (strncmp(url, pre, sizeof(pre) - 1))
		return false;
	p = url + sizeof(pre) - 1;
	e = strchr(p, '/');
	if (!e || (size_t)(e - p) >= size || strncmp(e, "/pods/", 6))
		return false;
	n = (size_t)(e - p);
	memcpy(ns, p, n);
	ns[n] = '\0';
	p = e + 6;
	e = strchr(p, '/');
	if (!e || (size_t)(e - p) >= size || strcmp(e + 1, sub))
		return false;
	n = (size_t)(e - p);
	memcpy(pod, p, n);
	pod[n] = '\0';
	return ns[0] && pod[0] && !strchr(ns, '.') && strcmp(ns, "..") && strcmp(pod, "..") && !strchr(pod, '/');
}

struct exec_session {
	struct k8s_fake *f;
	struct MHD_UpgradeResponseHandle *urh;
	int sock;
	uint8_t *extra;
	size_t extra_len;
	bool v5;
	bool in, out, err, tty;
	char **argv;
	size_t argc;
	char *dir;
	const void *raw;            /* a scripted answer's bytes, else NULL */
	size_t raw_len;
	struct ws_conn *ws;
	pid_t pid;
	int in_fd, out_fd, err_fd, master;
	struct util_buf pending;    /* stdin not yet taken by the process */
	size_t pending_off;
	bool close_pending;         /* stdin ends once pending is written */
	uint8_t buf[WS_FRAME_HEAD_MAX + 1 + 65536];
};

static int sock_send_all(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (poll(&p, 1, 5000) <= 0)
				return -ETIMEDOUT;
			continue;
		}
		if (n <= 0)
			return -EPIPE;
		buf = (const char *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

static int ws_send(struct exec_session *x, uint8_t opcode, const void *data, size_t len)
{
	long n = ws_frame_encode(opcode, true, false, data, len, x->buf, sizeof(x->buf));

	return n < 0 ? (int)n : sock_send_all(x->sock, x->buf, (size_t)n);
}

static int ws_send_channel(struct exec_session *x, uint8_t ch, const void *data, size_t len)
{
	uint8_t tmp[1 + 65536];

	if (len > 65536)
		return -E2BIG;
	tmp[0] = ch;
	if (len)
		memcpy(tmp + 1, data, len);
	return ws_send(x, WS_OP_BINARY, tmp, len + 1);
}

/* The Status of the kubelet's remotecommand for @wstatus (a waitpid
 * status), or for a program that could not be started (@start_errno). */
static void send_status(struct exec_session *x, int wstatus, int start_errno)
{
	struct json_writer *w = json_writer_new(0);
	char *text = NULL, msg[512];
	size_t len = 0;
	int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : 255;

	jw_object_open(w);
	jw_key(w, "metadata");
	jw_object_open(w);
	jw_object_close(w);
	if (start_errno) {
		snprintf(msg, sizeof(msg), "failed to exec in container: exec: \"%s\": %s", x->argv[0],
			 strerror(start_errno));
		jw_kv_string(w, "status", "Failure");
		jw_kv_string(w, "message", msg);
		jw_kv_string(w, "reason", "InternalError");
		jw_kv_int(w, "code", 500);
	} else if (code == 0) {
		jw_kv_string(w, "status", "Success");
	} else {
		char n[16];

		snprintf(n, sizeof(n), "%d", code);
		snprintf(msg, sizeof(msg), "command terminated with non-zero exit code: command '%s' exited with %d",
			 x->argv[0], code);
		jw_kv_string(w, "status", "Failure");
		jw_kv_string(w, "message", msg);
		jw_kv_string(w, "reason", "NonZeroExitCode");
		jw_key(w, "details");
		jw_object_open(w);
		jw_key(w, "causes");
		jw_array_open(w);
		jw_object_open(w);
		jw_kv_string(w, "reason", "ExitCode");
		jw_kv_string(w, "message", n);
		jw_object_close(w);
		jw_array_close(w);
		jw_object_close(w);
	}
	jw_object_close(w);
	if (json_writer_finish(w, &text, &len) == 0)
		(void)ws_send_channel(x, 3, text, len);
	free(text);
}

/* fork/exec of the session's argv; 0 or the child's exec errno (> 0). */
static int exec_spawn(struct exec_session *x)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, ep[2], slave = -1, e = 0;
	char home[4200];
	char *envp[] = { (char *)"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", home, NULL };
	ssize_t n;

	snprintf(home, sizeof(home), "HOME=%s", x->dir);
	if (pipe2(ep, O_CLOEXEC) < 0)
		return errno;
	if (x->tty) {
		x->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (x->master < 0 || grantpt(x->master) < 0 || unlockpt(x->master) < 0 ||
		    (slave = open(ptsname(x->master), O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
			e = errno;
			close(ep[0]);
			close(ep[1]);
			return e ? e : EIO;
		}
	} else if ((x->in && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		e = errno;
		close(ep[0]);
		close(ep[1]);
		return e;
	}
	x->pid = fork();
	if (x->pid == 0) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

		setsid();
		if (x->tty) {
			(void)ioctl(slave, TIOCSCTTY, 0);
			dup2(x->in ? slave : devnull, 0);
			dup2(slave, 1);
			dup2(slave, 2);
		} else {
			dup2(x->in ? in[0] : devnull, 0);
			dup2(out[1], 1);
			dup2(err[1], 2);
		}
		if (x->f->exec_rootfs) {
			/* The Pod's own file system, and an init that reaps
			 * the orphans of its processes (a container's PID 1,
			 * gVisor's init), exiting as the command did. */
			pid_t cmd;
			int st = 0;

			/* A mount namespace of its own (gone with its last
			 * process) where the Pod's /proc is mounted, as a
			 * container runtime mounts one. */
			if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
				goto exec_failed;
			if (chroot(x->dir) < 0 || (chdir("/root") < 0 && chdir("/") < 0))
				goto exec_failed;
			(void)mkdir("/proc", 0555);
			(void)mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
			(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
			cmd = fork();
			if (cmd == 0) {
				execvpe(x->argv[0], x->argv, envp);
				goto exec_failed;
			}
			/* This init execs nothing: what the fake holds open
			 * (the command's pipes, sockets) is closed here, or the
			 * command would never see the end of its stdin. */
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
			if (syscall(SYS_close_range, 3u, ~0u, 0u) < 0)
				for (int fd = 3; fd < 4096; fd++)
					close(fd);
			for (;;) {
				pid_t w = waitpid(-1, &st, 0);

				if (w == cmd || (w < 0 && errno != EINTR))
					break;
			}
			/* Orphans still dying (a killed group) are reaped for a
			 * little while; live ones are left to the host's init. */
			for (int i = 0; i < 40;) {
				pid_t w = waitpid(-1, NULL, WNOHANG);

				if (w < 0 && errno != EINTR)
					break;
				if (w == 0) {
					usleep(5000);
					i++;
				}
			}
			if (WIFSIGNALED(st)) {
				signal(WTERMSIG(st), SIG_DFL);
				kill(getpid(), WTERMSIG(st));
				_exit(128 + WTERMSIG(st));
			}
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 255);
		}
		if (chdir(x->dir) == 0)
			execvpe(x->argv[0], x->argv, envp);
exec_failed:
		e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0) {
			/* the parent sees a closed pipe */
		}
		_exit(127);
	}
	e = x->pid < 0 ? errno : 0;
	close(ep[1]);
	if (slave >= 0)
		close(slave);
	if (in[0] >= 0)
		close(in[0]);
	if (out[1] >= 0)
		close(out[1]);
	if (err[1] >= 0)
		close(err[1]);
	x->in_fd = x->tty ? (x->in ? x->master : -1) : in[1];
	x->out_fd = x->tty ? x->master : out[0];
	x->err_fd = x->tty ? -1 : err[0];
	if (x->pid < 0) {
		close(ep[0]);
		return e;
	}
	n = read(ep[0], &e, sizeof(e));
	close(ep[0]);
	if (n == (ssize_t)sizeof(e)) {
		waitpid(x->pid, NULL, 0);
		x->pid = -1;
		return e ? e : EIO;
	}
	if (x->in_fd >= 0)
		fcntl(x->in_fd, F_SETFL, fcntl(x->in_fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

static void close_stdin(struct exec_session *x)
{
	if (x->in_fd >= 0 && x->in_fd != x->master)
		close(x->in_fd);
	else if (x->in_fd >= 0 && x->tty)
		(void)write(x->master, "\x04", 1); /* ^D: the terminal's end of input */
	x->in_fd = -1;
}

/* A client message; false: the client closed. */
static bool exec_on_message(struct exec_session *x, const struct ws_message *m)
{
	if (m->opcode == WS_OP_CLOSE)
		return false;
	if (m->opcode == WS_OP_PING) {
		(void)ws_send(x, WS_OP_PONG, m->data, m->len);
		return true;
	}
	if (m->opcode != WS_OP_BINARY || m->len == 0)
		return true;
	/* wsstream: the close signal (v5), then the channels; a channel the
	 * protocol does not have is ignored. */
	if (x->v5 && m->data[0] == 255) {
		if (m->len == 2 && m->data[1] == 0) {
			if (x->pending.len > x->pending_off)
				x->close_pending = true;
			else
				close_stdin(x);
		}
		return m->len == 2;
	}
	if (m->data[0] == 0 && x->in_fd >= 0) {
		/* Kept until the process takes it (exec_flush_stdin()): the
		 * session never blocks on a process that is writing. */
		if (util_buf_append(&x->pending, m->data + 1, m->len - 1, 64u << 20) < 0)
			return false;
	} else if (m->data[0] == 4 && x->tty) {
		struct json_value *doc = NULL;
		uint64_t w, h;

		if (json_parse((const char *)m->data + 1, m->len - 1, NULL, &doc, NULL) == 0 &&
		    json_get_uint64(json_get(doc, "Width"), &w) == 0 && json_get_uint64(json_get(doc, "Height"), &h) == 0 &&
		    w <= 65535 && h <= 65535) {
			struct winsize ws = { .ws_row = (unsigned short)h, .ws_col = (unsigned short)w };

			(void)ioctl(x->master, TIOCSWINSZ, &ws);
		}
		json_free(doc);
	}
	return true;
}

/* Writes what the process takes of the pending stdin. */
static void exec_flush_stdin(struct exec_session *x)
{
	while (x->in_fd >= 0 && x->pending.len > x->pending_off) {
		ssize_t n = write(x->in_fd, x->pending.p + x->pending_off, x->pending.len - x->pending_off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			x->pending_off = x->pending.len; /* the process closed its stdin */
			break;
		}
		x->pending_off += (size_t)n;
	}
	if (x->pending_off >= x->pending.len) {
		x->pending.len = x->pending_off = 0;
		if (x->close_pending) {
			x->close_pending = false;
			close_stdin(x);
		}
	}
}

static bool exec_pump(struct exec_session *x, int *fd, uint8_t ch)
{
	uint8_t tmp[65536];
	ssize_t n = read(*fd, tmp, sizeof(tmp));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0) {
		if (*fd != x->master)
			close(*fd);
		*fd = -1;
		return false;
	}
	(void)ws_send_channel(x, ch, tmp, (size_t)n);
	return true;
}

static void exec_run(struct exec_session *x)
{
	int wstatus = 0, e;
	bool client_open = true;
	uint8_t p[125];

	/* The streams are ready: an empty message on the lowest output
	 * channel (kubelet's remotecommand). */
	(void)ws_send_channel(x, x->out ? 1 : x->err ? 2 : 3, NULL, 0);
	e = exec_spawn(x);
	if (e) {
		send_status(x, 0, e);
		goto close;
	}
	if (x->extra_len && ws_conn_feed(x->ws, x->extra, x->extra_len) == 0) {
		struct ws_message m;

		while (ws_conn_next(x->ws, &m) == 1)
			client_open = client_open && exec_on_message(x, &m);
		exec_flush_stdin(x);
	}
	while (client_open && !x->f->stopping && (x->out_fd >= 0 || x->err_fd >= 0)) {
		bool pending = x->pending.len > x->pending_off;
		struct pollfd pf[4] = { { .fd = pending && x->pending.len - x->pending_off > (256u << 10) ? -1 : x->sock,
					  .events = POLLIN },
					{ .fd = x->out_fd, .events = POLLIN },
					{ .fd = x->err_fd, .events = POLLIN },
					{ .fd = pending ? x->in_fd : -1, .events = POLLOUT } };

		if (poll(pf, 4, 50) <= 0)
			continue;
		if (pf[3].revents)
			exec_flush_stdin(x);
		if (pf[0].revents) {
			uint8_t tmp[65536];
			size_t room = ws_conn_room(x->ws);
			ssize_t n = recv(x->sock, tmp, room < sizeof(tmp) ? room : sizeof(tmp), 0);
			struct ws_message m;
			int r;

			if (n <= 0 || ws_conn_feed(x->ws, tmp, (size_t)n) < 0) {
				client_open = false;
				break;
			}
			while (client_open && (r = ws_conn_next(x->ws, &m)) == 1)
				client_open = exec_on_message(x, &m);
			if (r < 0)
				client_open = false;
			exec_flush_stdin(x);
		}
		if (pf[1].revents && x->out_fd >= 0)
			exec_pump(x, &x->out_fd, 1);
		if (pf[2].revents && x->err_fd >= 0)
			exec_pump(x, &x->err_fd, 2);
	}
	if (!client_open || x->f->stopping)
		kill(-x->pid, SIGKILL);
	while (waitpid(x->pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	x->pid = -1;
	if (client_open)
		send_status(x, wstatus, 0);
close:
	(void)ws_send(x, WS_OP_CLOSE, p, ws_close_payload(WS_CLOSE_NORMAL, NULL, p));
	/* The client's close frame, briefly. */
	if (client_open) {
		struct pollfd pf = { .fd = x->sock, .events = POLLIN };
		uint8_t tmp[4096];

		if (poll(&pf, 1, 200) > 0 && recv(x->sock, tmp, sizeof(tmp), 0) < 0) {
			/* gone already */
		}
	}
}

static void exec_session_free(struct exec_session *x)
{
	if (x->in_fd >= 0 && x->in_fd != x->master)
		close(x->in_fd);
	if (x->out_fd >= 0 && x->out_fd != x->master)
		close(x->out_fd);
	if (x->err_fd >= 0)
		close(x->err_fd);
	if (x->master >= 0)
		close(x->master);
	for (size_t i = 0; i < x->argc; i++)
		free(x->argv[i]);
	free(x->argv);
	free(x->pending.p);
	free(x->dir);
	free(x->extra);
	ws_conn_free(x->ws);
	free(x);
}

static void *exec_thread(void *arg)
{
	struct exec_session *x = arg;
	int fl = fcntl(x->sock, F_GETFL);

	if (fl >= 0)
		(void)fcntl(x->sock, F_SETFL, fl | O_NONBLOCK);
	if (x->raw) {
		(void)sock_send_all(x->sock, x->raw, x->raw_len);
		shutdown(x->sock, SHUT_WR);
	} else {
		exec_run(x);
	}
	MHD_upgrade_action(x->urh, MHD_UPGRADE_ACTION_CLOSE);
	pthread_mutex_lock(&x->f->lock);
	if (!x->raw)
		x->f->exec_sessions++;
	pthread_mutex_unlock(&x->f->lock);
	exec_session_free(x);
	return NULL;
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
		       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct exec_session *x = cls;
	struct ws_thread *t;

	(void)conn, (void)con_cls;
	x->sock = sock;
	x->urh = urh;
	if (extra_in_size && (x->extra = malloc(extra_in_size))) {
		memcpy(x->extra, extra_in, extra_in_size);
		x->extra_len = extra_in_size;
	}
	/* Plain HTTP: the session runs here, on the connection's own thread
	 * (thread-per-connection mode allows it).  A thread of its own that
	 * gives the socket back while this callback has not returned yet
	 * made MHD 0.9.75 stall new connections for seconds, now and then.
	 * TLS needs the callback to return (MHD forwards the bytes then). */
	if (!x->f->tls) {
		exec_thread(x);
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t || pthread_create(&t->t, NULL, exec_thread, x) != 0) {
		free(t);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		exec_session_free(x);
		return;
	}
	pthread_mutex_lock(&x->f->lock);
	t->next = x->f->threads;
	x->f->threads = t;
	pthread_mutex_unlock(&x->f->lock);
}

size_t k8s_fake_exec_sessions(struct k8s_fake *f)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = f->exec_sessions;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* The first protocol of the client's offer that @ours lists. */
static bool pick_protocol(const char *offer, const char *ours, char *buf, size_t size)
{
	for (const char *p = offer; p && *p;) {
		const char *e = strchr(p, ',');
		size_t n;

		while (*p == ' ')
			p++;
		n = e ? (size_t)(e - p) : strlen(p);
		while (n && p[n - 1] == ' ')
			n--;
		if (n && n < size) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			if (ws_token_list_has(ours, buf))
				return true;
		}
		p = e ? e + 1 : NULL;
	}
	return false;
}

static bool arg_true(const struct qcollect *q, const char *key)
{
	for (size_t i = 0; i < q->n; i++)
		if (!strcmp(q->q[i].key, key))
			return !strcmp(q->q[i].value, "true") || !strcmp(q->q[i].value, "1");
	return false;
}

/* A pods/exec upgrade: a real session, or @st's raw bytes.  The answer
 * queued (or an error answer); the request recorded with its status. */
static enum MHD_Result answer_exec(struct k8s_fake *f, struct MHD_Connection *conn, const char *url, const char *ns,
				   const char *pod, const struct qcollect *q, const struct conn *c,
				   const struct k8s_fake_step *st)
{
	const char *key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Key");
	const char *offer = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-WebSocket-Protocol");
	const char *upgrade = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Upgrade");
	char accept[WS_ACCEPT_STRLEN], proto[64];
	struct exec_session *x;
	struct MHD_Response *resp;

	if (!upgrade || !ws_token_list_has(upgrade, "websocket") || !key || ws_accept_value(key, accept) < 0) {
		static const char msg[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
					  "\"message\":\"Upgrade request required\",\"reason\":\"BadRequest\",\"code\":400}";

		record(f, conn, "GET", url, q, c, NULL, st != NULL, 400, false);
		resp = MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_PERSISTENT);
		if (resp)
			MHD_add_response_header(resp, "Content-Type", "application/json");
		return queue(conn, resp, 400);
	}
	if (st && st->ws_protocol)
		snprintf(proto, sizeof(proto), "%s", st->ws_protocol);
	else if (!pick_protocol(offer, st ? "v5.channel.k8s.io,v4.channel.k8s.io" : f->exec_protocols, proto,
				sizeof(proto))) {
		/* x/net/websocket refuses a handshake it cannot serve with a
		 * bare 403. */
		record(f, conn, "GET", url, q, c, NULL, st != NULL, 403, false);
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		return queue(conn, resp, 403);
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return MHD_NO;
	x->f = f;
	x->in_fd = x->out_fd = x->err_fd = x->master = -1;
	x->pid = -1;
	x->v5 = !strcmp(proto, "v5.channel.k8s.io");
	x->in = arg_true(q, "stdin");
	x->out = arg_true(q, "stdout");
	x->err = arg_true(q, "stderr");
	x->tty = arg_true(q, "tty");
	if (st) {
		x->raw = st->ws_frames ? st->ws_frames : "";
		x->raw_len = st->ws_frames_len;
	} else {
		for (size_t i = 0; i < q->n; i++) {
			char **p;

			if (strcmp(q->q[i].key, "command"))
				continue;
			p = realloc(x->argv, (x->argc + 2) * sizeof(*p));
			if (!p)
				break;
			x->argv = p;
			x->argv[x->argc] = strdup(q->q[i].value);
			x->argv[++x->argc] = NULL;
		}
		if (asprintf(&x->dir, "%s/%s/%s", f->exec_root, ns, pod) < 0)
			x->dir = NULL;
		if (x->dir)
			(void)util_mkdir_p(x->dir, 0755);
		/* A Pod's file system: the template copied once. */
		if (x->dir && f->exec_rootfs) {
			char *cmd = NULL;

			/* and the devices a container runtime gives */
			if (asprintf(&cmd,
				     "[ -e '%s/.k8s-fake-rootfs' ] || { cp -a '%s/.' '%s' && cd '%s' && mkdir -p dev && "
				     "{ [ -e dev/null ] || mknod -m 666 dev/null c 1 3; } && "
				     "{ [ -e dev/zero ] || mknod -m 666 dev/zero c 1 5; } && "
				     "{ [ -e dev/urandom ] || mknod -m 444 dev/urandom c 1 9; } && touch .k8s-fake-rootfs; }",
				     x->dir, f->exec_rootfs, x->dir, x->dir) < 0 || system(cmd) != 0) {
				free(x->dir);
				x->dir = NULL;
			}
			free(cmd);
		}
	}
	if (ws_conn_new(true, 1u << 20, &x->ws) < 0 || (!st && (!x->argc || !x->dir))) {
		exec_session_free(x);
		return MHD_NO;
	}
	record(f, conn, "GET", url, q, c, NULL, st != NULL, 101, false);
	resp = MHD_create_response_for_upgrade(on_upgrade, x);
	if (!resp) {
		exec_session_free(x);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Upgrade", "websocket");
	MHD_add_response_header(resp, "Connection", "Upgrade");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	MHD_add_response_header(resp, "Sec-WebSocket-Protocol", proto);
	return queue(conn, resp, 101);
}

/* ---------------------------------------------------------------- pods/log */

static struct pod_log *log_find(struct k8s_fake *f, const char *ns, const char *pod, bool create)
{
	struct pod_log *l;

	for (l = f->logs; l; l = l->next)
		if (!strcmp(l->ns, ns) && !strcmp(l->pod, pod))
			return l;
	if (!create || !(l = calloc(1, sizeof(*l))))
		return NULL;
	l->ns = strdup(ns);
	l->pod = strdup(pod);
	if (!l->ns || !l->pod) {
		free(l->ns);
		free(l->pod);
		free(l);
		return NULL;
	}
	l->next = f->logs;
	f->logs = l;
	return l;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int k8s_fake_pod_log_add(struct k8s_fake *f, const char *ns, const char *pod, const char *container, int64_t t_ns,
			 const char *line)
{
	struct pod_log *l;
	struct log_line *p;
	int r = -ENOMEM;

	if (!f || !ns || !pod || !line)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	l = log_find(f, ns, pod, true);
	if (l && (p = realloc(l->lines, (l->n + 1) * sizeof(*p)))) {
		l->lines = p;
		p[l->n].t_ns = t_ns ? t_ns : now_ns();
		p[l->n].container = dup0(container);
		p[l->n].text = strdup(line);
		if (p[l->n].text && (!container || p[l->n].container)) {
			l->n++;
			r = 0;
		} else {
			free(p[l->n].container);
			free(p[l->n].text);
		}
	}
	pthread_cond_broadcast(&f->log_cond);
	pthread_mutex_unlock(&f->lock);
	return r;
}

int k8s_fake_pod_log_end(struct k8s_fake *f, const char *ns, const char *pod)
{
	struct pod_log *l;

	pthread_mutex_lock(&f->lock);
	l = log_find(f, ns, pod, true);
	if (l)
		l->ended = true;
	pthread_cond_broadcast(&f->log_cond);
	pthread_mutex_unlock(&f->lock);
	return l ? 0 : -ENOMEM;
}

/* RFC 3339 with nanoseconds, as the kubelet writes timestamps=true. */
static void rfc3339(int64_t t_ns, char buf[64])
{
	time_t sec = (time_t)(t_ns / 1000000000);
	unsigned int frac = (unsigned int)(t_ns % 1000000000);
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, 64 - n, ".%09uZ", frac % 1000000000u);
}

static int64_t parse_rfc3339(const char *s)
{
	struct tm tm = { 0 };
	const char *e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	int64_t ns = 0;

	if (!e)
		return -1;
	if (*e == '.') {
		int digits = 0;

		for (e++; *e >= '0' && *e <= '9'; e++, digits++)
			if (digits < 9)
				ns = ns * 10 + (*e - '0');
		for (; digits < 9; digits++)
			ns *= 10;
	}
	if (*e != 'Z')
		return -1;
	return (int64_t)timegm(&tm) * 1000000000 + ns;
}

struct log_stream {
	struct k8s_fake *f;
	char ns[256], pod[256], container[64];
	bool timestamps, follow;
	int64_t since_ns;
	size_t next;                /* the next line to look at */
	int64_t limit;              /* bytes left, < 0: none */
	struct util_buf pending;
	size_t off;
};

static bool line_selected(const struct log_stream *s, const struct log_line *ln)
{
	return ln->t_ns >= s->since_ns && (!s->container[0] || !ln->container || !strcmp(ln->container, s->container));
}

static ssize_t log_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct log_stream *s = cls;
	size_t n;

	(void)pos;
	if (s->limit == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	while (s->off >= s->pending.len) {
		struct pod_log *l;
		bool have = false;

		s->pending.len = 0;
		s->off = 0;
		if (s->limit == 0 || s->f->stopping)
			return MHD_CONTENT_READER_END_OF_STREAM;
		pthread_mutex_lock(&s->f->lock);
		l = log_find(s->f, s->ns, s->pod, false);
		while (l && s->next < l->n && !have) {
			const struct log_line *ln = &l->lines[s->next++];
			char ts[64];

			if (!line_selected(s, ln))
				continue;
			if (s->timestamps) {
				rfc3339(ln->t_ns, ts);
				(void)util_buf_append(&s->pending, ts, strlen(ts), FAKE_MAX_BODY);
				(void)util_buf_append(&s->pending, " ", 1, FAKE_MAX_BODY);
			}
			(void)util_buf_append(&s->pending, ln->text, strlen(ln->text), FAKE_MAX_BODY);
			(void)util_buf_append(&s->pending, "\n", 1, FAKE_MAX_BODY);
			have = true;
		}
		if (!have && (!s->follow || !l || l->ended)) {
			pthread_mutex_unlock(&s->f->lock);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (!have) {
			struct timespec ts;

			util_abstime_after_ms(&ts, 50);
			pthread_cond_timedwait(&s->f->log_cond, &s->f->lock, &ts);
		}
		pthread_mutex_unlock(&s->f->lock);
	}
	n = s->pending.len - s->off;
	if (n > max)
		n = max;
	if (s->limit >= 0 && (int64_t)n > s->limit)
		n = (size_t)s->limit;
	memcpy(buf, s->pending.p + s->off, n);
	s->off += n;
	if (s->limit > 0)
		s->limit -= (int64_t)n;
	return (ssize_t)n;
}

static void log_stream_free(void *cls)
{
	struct log_stream *s = cls;

	free(s->pending.p);
	free(s);
}

static const char *arg_value(const struct qcollect *q, const char *key)
{
	for (size_t i = 0; i < q->n; i++)
		if (!strcmp(q->q[i].key, key))
			return q->q[i].value;
	return NULL;
}

static enum MHD_Result status_answer(struct MHD_Connection *conn, int code, const char *reason, const char *msg)
{
	char *body = NULL;

	if (asprintf(&body,
		     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
		     "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}",
		     msg, reason, code) < 0)
		return MHD_NO;
	return json_answer(conn, code, body);
}

static enum MHD_Result answer_log(struct k8s_fake *f, struct MHD_Connection *conn, const char *url, const char *ns,
				  const char *pod, const struct qcollect *q, const struct conn *c)
{
	struct log_stream *s;
	struct MHD_Response *resp;
	struct pod_log *l;
	const char *v;
	char msg[600];

	pthread_mutex_lock(&f->lock);
	l = log_find(f, ns, pod, false);
	pthread_mutex_unlock(&f->lock);
	if (!l) {
		record(f, conn, "GET", url, q, c, NULL, false, 404, false);
		snprintf(msg, sizeof(msg), "pods \\\"%.200s\\\" not found", pod);
		return status_answer(conn, 404, "NotFound", msg);
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return MHD_NO;
	s->f = f;
	snprintf(s->ns, sizeof(s->ns), "%s", ns);
	snprintf(s->pod, sizeof(s->pod), "%s", pod);
	if ((v = arg_value(q, "container")))
		snprintf(s->container, sizeof(s->container), "%s", v);
	s->timestamps = arg_true(q, "timestamps");
	s->follow = arg_true(q, "follow");
	s->limit = (v = arg_value(q, "limitBytes")) ? strtoll(v, NULL, 10) : -1;
	if ((v = arg_value(q, "sinceSeconds")))
		s->since_ns = now_ns() - strtoll(v, NULL, 10) * 1000000000;
	if ((v = arg_value(q, "sinceTime")) && (s->since_ns = parse_rfc3339(v)) < 0) {
		free(s);
		record(f, conn, "GET", url, q, c, NULL, false, 400, false);
		return status_answer(conn, 400, "BadRequest", "sinceTime: not an RFC 3339 time");
	}
	if ((v = arg_value(q, "tailLines"))) {
		size_t tail = strtoull(v, NULL, 10), sel = 0;

		pthread_mutex_lock(&f->lock);
		for (size_t i = l->n; i > 0 && sel <= tail; i--) {
			if (line_selected(s, &l->lines[i - 1]))
				sel++;
			if (sel <= tail)
				s->next = i - 1;
		}
		if (tail == 0)
			s->next = l->n;
		pthread_mutex_unlock(&f->lock);
	}
	record(f, conn, "GET", url, q, c, NULL, false, 200, false);
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, log_read, s, log_stream_free);
	if (!resp) {
		free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "text/plain");
	return queue(conn, resp, 200);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			       const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct k8s_fake *f = cls;
	struct conn *c = *con_cls;
	struct qcollect q = { 0 };
	struct exchange *e = NULL;
	struct step *s = NULL;
	enum MHD_Result ret;
	const char *auth;
	int status = 404;

	(void)version;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		*con_cls = c;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		if (util_buf_append(&c->body, upload_data, n, FAKE_MAX_BODY) < 0)
			return MHD_NO;
		*upload_data_size = 0;
		return MHD_YES;
	}
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &q);
	pthread_mutex_lock(&f->lock);
	s = step_take(f, method, url);
	pthread_mutex_unlock(&f->lock);
	auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	if (s) {
		const struct k8s_fake_step *st = &s->s;
		char ns[256], pod[256];

		/* Recorded on arrival: a client may give up during the delay. */
		if (st->ws_frames || st->ws_protocol) {
			nap(f, st->delay_ms);
			if (pod_subresource(url, "exec", ns, pod, sizeof(ns)))
				ret = answer_exec(f, conn, url, ns, pod, &q, c, st);
			else
				ret = MHD_NO;
		} else if (st->exchange) {
			e = (struct exchange *)find_nn(f, st->exchange);
			record(f, conn, method, url, &q, c, e->nn, true, e->status, false);
			nap(f, st->delay_ms);
			ret = answer_exchange(f, conn, e, st);
		} else {
			struct MHD_Response *resp;

			status = st->status ? st->status : 200;
			record(f, conn, method, url, &q, c, NULL, true, status, false);
			nap(f, st->delay_ms);
			if (st->n_events)
				resp = stream_response(f, s->events, st->n_events, true, st);
			else if (st->cut || st->event_delay_ms || st->hang_ms) {
				resp = stream_response(f, (char **)&st->body, st->body ? 1 : 0, false, st);
			} else
				resp = MHD_create_response_from_buffer(st->body ? strlen(st->body) : 0,
								       (void *)(st->body ? st->body : ""),
								       MHD_RESPMEM_PERSISTENT);
			if (resp) {
				MHD_add_response_header(resp, "Content-Type", "application/json");
				add_headers_text(resp, st->headers);
			}
			ret = queue(conn, resp, status);
		}
		step_retire(f, s);
		goto out;
	}
	if (f->token && (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, f->token)) &&
	    (e = (struct exchange *)find_nn(f, "31"))) {
		record(f, conn, method, url, &q, c, e->nn, false, e->status, false);
		ret = answer_exchange(f, conn, e, NULL);
		goto out;
	}
	{
		char ns[256], pod[256];

		if (f->exec_root && !strcmp(method, "GET") && pod_subresource(url, "exec", ns, pod, sizeof(ns))) {
			if (f->pod_store && !pod_live(f, ns, pod)) {
				record(f, conn, method, url, &q, c, NULL, false, 404, false);
				ret = json_answer(conn, 404, pod_status_body(404, "NotFound", "pods \\\"", pod, "\\\" not found"));
			} else {
				ret = answer_exec(f, conn, url, ns, pod, &q, c, NULL);
			}
			goto out;
		}
		if (f->pod_store && answer_pods(f, conn, method, url, &q, c, &ret))
			goto out;
		if (!strcmp(method, "GET") && pod_subresource(url, "log", ns, pod, sizeof(ns))) {
			ret = answer_log(f, conn, url, ns, pod, &q, c);
			goto out;
		}
	}
	pthread_mutex_lock(&f->lock);
	e = exchange_match(f, method, url, q.q, q.n, c->body.p, c->body.len);
	if (e)
		e->served++;
	pthread_mutex_unlock(&f->lock);
	if (e) {
		record(f, conn, method, url, &q, c, e->nn, false, e->status, false);
		ret = answer_exchange(f, conn, e, NULL);
	} else if (f->accept_writes && strcmp(method, "GET")) {
		static const char success[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
					      "\"status\":\"Success\",\"code\":200}";
		bool del = !strcmp(method, "DELETE");
		struct MHD_Response *resp;

		status = !strcmp(method, "POST") ? 201 : 200;
		record(f, conn, method, url, &q, c, NULL, false, status, false);
		if (del)
			resp = MHD_create_response_from_buffer(strlen(success), (void *)success, MHD_RESPMEM_PERSISTENT);
		else
			resp = MHD_create_response_from_buffer(c->body.len, c->body.p ? c->body.p : (char *)"",
							       MHD_RESPMEM_MUST_COPY);
		if (resp)
			MHD_add_response_header(resp, "Content-Type", "application/json");
		ret = queue(conn, resp, status);
	} else {
		char *msg = NULL;
		struct MHD_Response *resp;

		if (asprintf(&msg,
			     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
			     "\"message\":\"k8s-fake: no exchange for %s %s\",\"reason\":\"NotFound\",\"code\":404}",
			     method, url) < 0)
			msg = NULL;
		record(f, conn, method, url, &q, c, NULL, false, 404, true);
		resp = msg ? MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_MUST_FREE) : NULL;
		if (resp)
			MHD_add_response_header(resp, "Content-Type", "application/json");
		else
			free(msg);
		ret = queue(conn, resp, 404);
	}
out:
	kv_free(q.q, q.n);
	free(q.text);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct conn *c = *con_cls;

	(void)cls, (void)conn, (void)toe;
	if (c) {
		free(c->body.p);
		free(c);
		*con_cls = NULL;
	}
}

static int default_dir(char *buf, size_t size)
{
	const char *top = getenv("top_srcdir");
	static const char *const rel[] = { "tests/data/k8s/exchanges", "../tests/data/k8s/exchanges" };

	if (top) {
		snprintf(buf, size, "%s/tests/data/k8s/exchanges", top);
		if (access(buf, R_OK) == 0)
			return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(rel); i++)
		if (access(rel[i], R_OK) == 0) {
			snprintf(buf, size, "%s", rel[i]);
			return 0;
		}
	return -ENOENT;
}

int k8s_fake_new(const struct k8s_fake_opts *opts, struct k8s_fake **ret)
{
	struct k8s_fake *f;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const union MHD_DaemonInfo *di;
	unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
	bool tls = opts && opts->tls_cert_pem && opts->tls_key_pem;
	char dir[4096];
	int r;

	if (!ret)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->log_cond, NULL);
	f->steps_tail = &f->steps;
	if (opts && opts->token && !(f->token = strdup(opts->token))) {
		k8s_fake_free(f);
		return -ENOMEM;
	}
	if (opts && opts->exchanges_dir)
		snprintf(dir, sizeof(dir), "%s", opts->exchanges_dir);
	else if ((r = default_dir(dir, sizeof(dir))) < 0) {
		k8s_fake_free(f);
		return r;
	}
	if ((r = load_dir(f, dir)) < 0) {
		k8s_fake_free(f);
		return r;
	}
	f->tls_client_ca = tls && opts->client_ca_pem;
	f->accept_writes = opts && opts->accept_writes;
	if ((opts && opts->exec_root && !(f->exec_root = strdup(opts->exec_root))) ||
	    (opts && opts->exec_rootfs && !(f->exec_rootfs = strdup(opts->exec_rootfs))) ||
	    !(f->exec_protocols = strdup(opts && opts->exec_protocols ? opts->exec_protocols
								    : "v5.channel.k8s.io,v4.channel.k8s.io"))) {
		k8s_fake_free(f);
		return -ENOMEM;
	}
	flags |= MHD_ALLOW_UPGRADE;
	f->tls = tls;
	f->pod_store = opts && opts->pod_store;
	f->pod_delete_ms = opts ? opts->pod_delete_ms : 0;
	if (tls) {
		flags |= MHD_USE_TLS;
		f->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, f, MHD_OPTION_SOCK_ADDR, &sa,
					MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_HTTPS_MEM_KEY,
					opts->tls_key_pem, MHD_OPTION_HTTPS_MEM_CERT, opts->tls_cert_pem,
					f->tls_client_ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END,
					opts->client_ca_pem, MHD_OPTION_END);
	} else
		f->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, f, MHD_OPTION_SOCK_ADDR, &sa,
					MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
	if (!f->d) {
		k8s_fake_free(f);
		return -EADDRNOTAVAIL;
	}
	di = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
	f->port = di ? di->port : 0;
	snprintf(f->url, sizeof(f->url), "%s://127.0.0.1:%u", tls ? "https" : "http", f->port);
	*ret = f;
	return 0;
}

const char *k8s_fake_url(const struct k8s_fake *f)
{
	return f->url;
}

uint16_t k8s_fake_port(const struct k8s_fake *f)
{
	return f->port;
}

void k8s_fake_free(struct k8s_fake *f)
{
	struct step *s, *next;

	if (!f)
		return;
	f->stopping = true;
	/* Upgraded connections first: their threads end at f->stopping
	 * (processes killed) and give their sockets back to MHD. */
	for (;;) {
		struct ws_thread *t;

		pthread_mutex_lock(&f->lock);
		t = f->threads;
		if (t)
			f->threads = t->next;
		pthread_mutex_unlock(&f->lock);
		if (!t)
			break;
		pthread_join(t->t, NULL);
		free(t);
	}
	if (f->d)
		MHD_stop_daemon(f->d);
	for (struct pod_log *l = f->logs, *ln; l; l = ln) {
		ln = l->next;
		for (size_t i = 0; i < l->n; i++) {
			free(l->lines[i].container);
			free(l->lines[i].text);
		}
		free(l->lines);
		free(l->ns);
		free(l->pod);
		free(l);
	}
	free(f->exec_root);
	free(f->exec_rootfs);
	free(f->exec_protocols);
	while (f->pods) {
		struct fake_pod *p = f->pods;

		f->pods = p->next;
		pod_free(p);
	}
	pthread_cond_destroy(&f->log_cond);
	for (s = f->steps; s; s = next) {
		next = s->next;
		step_free(s);
	}
	for (s = f->served; s; s = next) {
		next = s->next;
		step_free(s);
	}
	for (size_t i = 0; i < f->n_ex; i++)
		exchange_clear(&f->ex[i]);
	free(f->ex);
	for (size_t i = 0; i < f->n_reqs; i++)
		k8s_fake_request_clear(&f->reqs[i]);
	free(f->reqs);
	free(f->token);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
