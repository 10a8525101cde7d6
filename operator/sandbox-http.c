/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * provider/v1 sandbox routes (sandbox-http.h).
 *
 * A request's life: op_sandbox_http_begin() checks the route, the token,
 * the session id and the declared sizes and answers at once when any is
 * wrong; otherwise it takes an operation slot.  Streaming uploads (Write,
 * Import) start their worker thread at once and feed it through the input
 * buffer; the others start theirs once the (small, buffered) body is in.
 * The worker decides the answer's head: a JSON answer when it ends before
 * any byte of a streamed body, else a chunked 200 whose bytes go through
 * the output buffer.  Whenever the libmicrohttpd side has nothing to move
 * (input buffer full, no output yet, no head yet) it suspends the
 * connection; the worker resumes it when that changes.  One mutex (the
 * routes') guards every request's state and the suspended flags, so that a
 * connection is resumed exactly when it was suspended, never after
 * libmicrohttpd let go of it.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <flash/client.h>
#include <flash/diag.h>
#include <flash/spec.h>

#include "http-server.h"
#include "json.h"
#include "sandbox-http.h"
#include "util.h"

#define IO_CAP (256u * 1024)     /* each of the two buffers of a request */
#define EXEC_CHUNK (48u * 1024)  /* raw bytes per NDJSON output line */
#define EXEC_ARGS_MAX 4096
#define PATH_MAX_LEN 4096
#define EXPIRES_HEADER "Flash-Sandbox-Expires-At"
#define KNOWN_MAX 256

enum sb_op { SB_LIST, SB_PROVISION, SB_INFO, SB_REAP, SB_EXEC, SB_READ, SB_WRITE, SB_IMPORT, SB_EXPORT };

static void tenants_note(struct op_sandbox_tenants *t, const char *sid, const char *org, const char *project,
			 bool add);

struct op_sandbox_http {
	struct op_provider *provider;
	struct flash_sandbox_provider *sp;
	struct op_sandbox_http_opts o;
	pthread_mutex_t lock;   /* every request's state below */
	pthread_cond_t idle;    /* running reached 0 */
	unsigned int running;   /* operation slots taken */
	bool stopping;
	struct op_sandbox_req *reqs; /* live requests (for stop) */
	/* Sessions known live and their expiry (fixed once provisioned), so
	 * that an operation does not ask the backend first (an info is a
	 * `runsc state` on gVisor); the operation's own failure is what tells
	 * that a session ended or went away, and drops the entry. */
	struct known {
		char id[FLASH_SANDBOX_ID_MAX + 1];
		int64_t expires_at;
	} known[KNOWN_MAX];
	unsigned int known_next; /* the slot replaced next */
};

struct op_sandbox_req {
	struct op_sandbox_http *h;
	struct op_sandbox_req *prev, *next;
	pthread_cond_t cond;
	struct MHD_Connection *conn; /* NULL once libmicrohttpd is done with it */
	unsigned int refs;
	bool suspended, gone, slot, started;
	enum sb_op op;
	char id[FLASH_SANDBOX_ID_MAX + 1];
	char org[64], project[64]; /* the verified token's */
	char tenant[FLASH_CLIENT_SANDBOX_ID_STRLEN]; /* its session ids' prefix "sb-<16 hex>-" */
	char *arg;                 /* path, dir or root */
	uint64_t max;              /* Read: its size gate; uploads: the body bound */
	/* The request body: buffered (JSON) or streamed (in). */
	bool streamed;
	struct http_body body;
	char *in;
	size_t in_len;
	uint64_t in_total;
	bool in_eof;
	int in_err;
	/* The answer. */
	bool head, stream, done, failed, queued;
	int status;
	char *answer;
	size_t answer_len;
	const char *ctype;
	unsigned int retry_after;
	int64_t expires_at;        /* -1: unknown */
	int64_t deadline_ms;       /* of the whole transfer (util_mono_ms()) */
	uint64_t t0_ns;            /* when the head came (the request's latency in /metrics) */
	int answered;              /* the status queued, 0 before */
	bool client_late;          /* the transfer deadline passed */
	char *out;
	size_t out_off, out_len;
};

/* ---------------------------------------------------------------- small pieces */

static uint64_t opt_u64(uint64_t v, uint64_t dflt)
{
	return v ? v : dflt;
}

bool op_sandbox_http_path(const char *url)
{
	size_t n = strlen(OP_SANDBOX_API_PREFIX);

	return url && strncmp(url, OP_SANDBOX_API_PREFIX, n) == 0 && (url[n] == '\0' || url[n] == '/');
}

/* The session's JSON members: id, backend id, times, end. */
static void jw_info(struct json_writer *w, const struct flash_sandbox_info *in)
{
	jw_kv_string(w, "session_id", in->session_id);
	jw_kv_string(w, "backend_id", in->backend_id);
	jw_kv_int(w, "created_at", in->created_at);
	jw_kv_int(w, "expires_at", in->expires_at);
	jw_kv_string(w, "end", flash_sandbox_end_name(in->end));
	if (in->end != FLASH_SANDBOX_LIVE)
		jw_kv_string(w, "end_reason", in->end_reason);
	jw_kv_bool(w, "adopted", in->adopted);
	jw_kv_bool(w, "from_pool", in->from_pool);
}

/* Sets the request's JSON answer from @r (taken over). */
static void take_answer(struct op_sandbox_req *q, struct op_response *r)
{
	free(q->answer);
	q->status = r->status;
	q->answer = r->body;
	q->answer_len = r->body_len;
	q->ctype = "application/json";
	q->retry_after = r->retry_after;
	r->body = NULL;
}

/* An error answer; with @info (a known session) its expires_at, end and
 * end_reason beside "error". */
static void set_error(struct op_sandbox_req *q, int status, const char *code, const struct flash_diag *diag,
		      const struct flash_sandbox_info *info, const char *fmt, ...) _printf_(6, 7);
static void set_error(struct op_sandbox_req *q, int status, const char *code, const struct flash_diag *diag,
		      const struct flash_sandbox_info *info, const char *fmt, ...)
{
	struct op_response r = { 0 };
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	op_response_error(&r, status, code, diag, "%s", msg);
	if (info && r.body && r.body_len > 2 && r.body[r.body_len - 2] == '}') {
		/* Splice the session's members in before the closing brace. */
		struct json_writer *w = json_writer_new(0);
		char *extra = NULL, *nb = NULL;
		size_t elen = 0;

		jw_object_open(w);
		jw_kv_int(w, "expires_at", info->expires_at);
		jw_kv_string(w, "end", flash_sandbox_end_name(info->end));
		if (info->end != FLASH_SANDBOX_LIVE)
			jw_kv_string(w, "end_reason", info->end_reason);
		jw_object_close(w);
		if (json_writer_finish(w, &extra, &elen) == 0 && elen > 2 &&
		    asprintf(&nb, "%.*s,%.*s}\n", (int)(r.body_len - 2), r.body, (int)(elen - 2), extra + 1) > 0) {
			free(r.body);
			r.body = nb;
			r.body_len = strlen(nb);
		}
		free(extra);
	}
	if (status == 503)
		r.retry_after = q->h->o.retry_after ? q->h->o.retry_after : 2;
	take_answer(q, &r);
}

/* A success answer: @w's document (finished here). */
static void set_json(struct op_sandbox_req *q, int status, struct json_writer *w)
{
	char *body = NULL;
	size_t len = 0;

	if (json_writer_finish(w, &body, &len) < 0) {
		set_error(q, 500, "internal", NULL, NULL, "cannot build the answer");
		return;
	}
	free(q->answer);
	q->status = status;
	q->answer = body;
	q->answer_len = len;
	q->ctype = "application/json";
}

/* The answer to an operation's failure @r on a known session. */
static void set_failure(struct op_sandbox_req *q, int r, const struct flash_diag *diag,
			const struct flash_sandbox_info *info, uint64_t size)
{
	const char *what = q->arg ? q->arg : q->id;

	switch (r) {
	case -ENOENT:
		set_error(q, 404, q->arg ? "no-such-file" : "not-found", NULL, info, "%s: no such %s", what,
			  q->arg ? "file or directory" : "session");
		break;
	case -EISDIR:
		set_error(q, 400, "is-a-directory", NULL, info, "%s is a directory", what);
		break;
	case -FLASH_E_SANDBOX_NOT_DIR:
	case -ENOTDIR:
		set_error(q, 400, "not-a-directory", NULL, info, "%s is not a directory", what);
		break;
	case -EFBIG:
		set_error(q, 413, "too-large", NULL, info, "%s is %" PRIu64 " bytes, more than %" PRIu64, what, size,
			  q->max);
		break;
	case -FLASH_E_SANDBOX_ARCHIVE:
		set_error(q, 400, "bad-archive", diag, info, "the archive was refused: %s",
			  flash_diag_first_error(diag) ? flash_diag_first_error(diag)->message : flash_strerror(r));
		break;
	case -FLASH_E_SANDBOX_COUNT:
		set_error(q, 409, "count-mismatch", NULL, info, "%s", flash_strerror(r));
		break;
	case -FLASH_E_SANDBOX_ENDED:
		set_error(q, 410, "ended", NULL, info, "the session has ended");
		break;
	case -FLASH_E_SANDBOX_CONTRACT:
		set_error(q, 502, "image-contract", NULL, info, "%s", flash_strerror(r));
		break;
	case -EINVAL:
		set_error(q, 400, "bad-request", diag, info, "refused: %s",
			  flash_diag_first_error(diag) ? flash_diag_first_error(diag)->message : "invalid argument");
		break;
	case -ETIMEDOUT:
		set_error(q, 504, "timeout", NULL, info, "the sandbox did not answer in time");
		break;
	case -EAGAIN:
	case -EBUSY:
	case -ENOMEM:
	case -ENOSPC:
		set_error(q, 503, "unavailable", NULL, info, "%s: retry", flash_strerror(r));
		break;
	default:
		set_error(q, 500, "internal", NULL, info, "%s", flash_strerror(r));
		break;
	}
}

/* ---------------------------------------------------------------- the two sides */

/* Under h->lock: the libmicrohttpd side waits for the worker.  Never
 * once stopping: libmicrohttpd may not stop with a suspended connection
 * (the callers then end the request instead). */
static void suspend(struct op_sandbox_req *q)
{
	if (!q->suspended && q->conn && !q->h->stopping) {
		q->suspended = true;
		MHD_suspend_connection(q->conn);
	}
}

/* Under h->lock: something changed; the libmicrohttpd side runs again. */
static void wake(struct op_sandbox_req *q)
{
	if (q->suspended && q->conn) {
		q->suspended = false;
		MHD_resume_connection(q->conn);
	}
	pthread_cond_broadcast(&q->cond);
}

/* Under h->lock: waits for a change on @q until its transfer deadline;
 * false (and q->client_late set) once that passed: the client took longer
 * than the routes allow a streamed operation. */
static bool wait_change(struct op_sandbox_req *q)
{
	int64_t left = q->deadline_ms - util_mono_ms();
	struct timespec ts;

	if (left <= 0) {
		q->client_late = true;
		return false;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += left / 1000;
	ts.tv_nsec += (left % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&q->cond, &q->h->lock, &ts);
	return true;
}

static unsigned int max_ops(const struct op_sandbox_http *h)
{
	return h->o.max_ops ? h->o.max_ops : 32;
}

static unsigned int max_ops_per_tenant(const struct op_sandbox_http *h)
{
	unsigned int n = h->o.max_ops_per_tenant ? h->o.max_ops_per_tenant : max_ops(h) / 4;

	return n ? n : 1;
}

/* Under h->lock: the operation slots the tenant @prefix holds. */
static unsigned int tenant_running(const struct op_sandbox_http *h, const char *prefix)
{
	unsigned int n = 0;

	for (const struct op_sandbox_req *r = h->reqs; r; r = r->next)
		n += r->slot && !strcmp(r->tenant, prefix);
	return n;
}

/* Under h->lock: gives the request's operation slot back. */
static void release_slot(struct op_sandbox_req *q)
{
	if (q->slot) {
		q->slot = false;
		if (--q->h->running == 0)
			pthread_cond_broadcast(&q->h->idle);
	}
}

/* Under h->lock: drops a reference; the last one frees. */
static void unref_locked(struct op_sandbox_req *q)
{
	struct op_sandbox_http *h = q->h;

	if (--q->refs)
		return;
	if (q->prev)
		q->prev->next = q->next;
	else if (h->reqs == q)
		h->reqs = q->next;
	if (q->next)
		q->next->prev = q->prev;
	release_slot(q);
	pthread_cond_destroy(&q->cond);
	http_body_free(&q->body);
	free(q->arg);
	free(q->in);
	free(q->out);
	free(q->answer);
	free(q);
}

/* Worker side: @len bytes of a streamed answer.  The first makes the
 * head a chunked 200.  -EPIPE once the client is gone. */
static int push_out(struct op_sandbox_req *q, const void *buf, size_t len)
{
	struct op_sandbox_http *h = q->h;
	int r = 0;

	pthread_mutex_lock(&h->lock);
	if (!q->head) {
		q->head = q->stream = true;
		q->status = 200;
		wake(q);
	}
	while (len) {
		size_t room;

		while (!q->gone && q->out_len - q->out_off == IO_CAP && wait_change(q))
			;
		if (q->gone || q->client_late) {
			r = q->gone ? -EPIPE : -ETIMEDOUT;
			break;
		}
		if (q->out_off) {
			memmove(q->out, q->out + q->out_off, q->out_len - q->out_off);
			q->out_len -= q->out_off;
			q->out_off = 0;
		}
		room = IO_CAP - q->out_len;
		if (room > len)
			room = len;
		memcpy(q->out + q->out_len, buf, room);
		q->out_len += room;
		buf = (const char *)buf + room;
		len -= room;
		wake(q);
	}
	pthread_mutex_unlock(&h->lock);
	return r;
}

static int sink_raw(const void *buf, size_t len, void *userdata)
{
	return len ? push_out(userdata, buf, len) : 0;
}

/* Worker side: the streamed request body. */
static ssize_t source_in(void *buf, size_t cap, void *userdata)
{
	struct op_sandbox_req *q = userdata;
	struct op_sandbox_http *h = q->h;
	ssize_t r;

	pthread_mutex_lock(&h->lock);
	while (!q->in_len && !q->in_eof && !q->gone && !q->in_err) {
		wake(q); /* the libmicrohttpd side may be waiting for room */
		if (!wait_change(q))
			break;
	}
	if (q->client_late) {
		r = -ETIMEDOUT;
	} else if (q->in_err) {
		r = q->in_err;
	} else if (q->in_len) {
		size_t n = q->in_len < cap ? q->in_len : cap;

		memcpy(buf, q->in, n);
		memmove(q->in, q->in + n, q->in_len - n);
		q->in_len -= n;
		r = (ssize_t)n;
		wake(q);
	} else if (q->in_eof) {
		r = 0;
	} else {
		r = -EPIPE;
	}
	pthread_mutex_unlock(&h->lock);
	return r;
}

/* libmicrohttpd side: the streamed answer's bytes. */
static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct op_sandbox_req *q = cls;
	struct op_sandbox_http *h = q->h;
	ssize_t r;

	(void)pos;
	pthread_mutex_lock(&h->lock);
	if (q->out_len > q->out_off) {
		size_t n = q->out_len - q->out_off;

		if (n > max)
			n = max;
		memcpy(buf, q->out + q->out_off, n);
		q->out_off += n;
		if (q->out_off == q->out_len)
			q->out_off = q->out_len = 0;
		pthread_cond_broadcast(&q->cond);
		r = (ssize_t)n;
	} else if (q->done) {
		r = q->failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
	} else if (h->stopping) {
		r = MHD_CONTENT_READER_END_WITH_ERROR; /* cut: the server stops */
	} else {
		suspend(q);
		r = 0;
	}
	pthread_mutex_unlock(&h->lock);
	return r;
}

static void reader_free(void *cls)
{
	struct op_sandbox_req *q = cls;
	struct op_sandbox_http *h = q->h;

	pthread_mutex_lock(&h->lock);
	unref_locked(q);
	pthread_mutex_unlock(&h->lock);
}

/* Under h->lock: queues the decided answer. */
static enum MHD_Result queue(struct op_sandbox_req *q, struct MHD_Connection *conn)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char num[32];

	if (q->stream) {
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, reader, q, reader_free);
		if (resp)
			q->refs++;
	} else {
		resp = MHD_create_response_from_buffer(q->answer_len, q->answer, MHD_RESPMEM_MUST_COPY);
	}
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", q->ctype ? q->ctype : "application/json");
	if (q->expires_at >= 0) {
		snprintf(num, sizeof(num), "%" PRId64, q->expires_at);
		MHD_add_response_header(resp, EXPIRES_HEADER, num);
	}
	if (q->retry_after) {
		snprintf(num, sizeof(num), "%u", q->retry_after);
		MHD_add_response_header(resp, "Retry-After", num);
	}
	q->queued = true;
	q->answered = q->status;
	ret = MHD_queue_response(conn, (unsigned int)q->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ---------------------------------------------------------------- operations */

/* Under h->lock: the entry of @id, or NULL. */
static struct known *known_find(struct op_sandbox_http *h, const char *id)
{
	for (size_t i = 0; i < KNOWN_MAX; i++)
		if (h->known[i].id[0] && strcmp(h->known[i].id, id) == 0)
			return &h->known[i];
	return NULL;
}

/* Remembers (@live) or forgets a session after the backend said so. */
static void known_set(struct op_sandbox_http *h, const struct flash_sandbox_info *in, const char *id, bool live)
{
	struct known *k;

	pthread_mutex_lock(&h->lock);
	k = known_find(h, id);
	if (!live) {
		if (k)
			k->id[0] = '\0';
	} else {
		if (!k) {
			k = &h->known[h->known_next];
			h->known_next = (h->known_next + 1) % KNOWN_MAX;
		}
		snprintf(k->id, sizeof(k->id), "%s", id);
		k->expires_at = in->expires_at;
	}
	pthread_mutex_unlock(&h->lock);
}

/* A revoked session whose Reap has not completed (the backend's gate,
 * <flash/sandbox.h> revoke). */
static bool reaping(const struct flash_sandbox_info *in)
{
	return in->end == FLASH_SANDBOX_END_REAPED && strcmp(in->end_reason, "reaping") == 0;
}

/* The backend's word on the session into @ret, remembered; on failure,
 * or when it ended, the answer is set and false. */
static bool ask_session(struct op_sandbox_req *q, struct flash_sandbox_info *ret)
{
	int r = flash_sandbox_info(q->h->sp, q->id, ret);

	if (r == -ENOENT) {
		known_set(q->h, NULL, q->id, false);
		set_error(q, 404, "not-found", NULL, NULL, "no sandbox session %s", q->id);
		return false;
	}
	if (r < 0) {
		set_failure(q, r, NULL, NULL, 0);
		return false;
	}
	known_set(q->h, ret, q->id, ret->end == FLASH_SANDBOX_LIVE);
	pthread_mutex_lock(&q->h->lock);
	q->expires_at = ret->expires_at;
	pthread_mutex_unlock(&q->h->lock);
	if (reaping(ret)) {
		set_error(q, 409, "reaping", NULL, ret,
			  "the session's Reap began (revoked): only its info and its Reap are served; reap it again");
		return false;
	}
	if (ret->end != FLASH_SANDBOX_LIVE) {
		set_error(q, 410, "ended", NULL, ret, "the session has ended (%s%s%s)", flash_sandbox_end_name(ret->end),
			  ret->end_reason[0] ? ": " : "", ret->end_reason);
		return false;
	}
	return true;
}

/* Before an operation: a session known live and not yet expired is taken
 * as it is (expires_at into @ret); any other is asked about. */
static bool live_session(struct op_sandbox_req *q, struct flash_sandbox_info *ret)
{
	struct known *k;
	bool hit = false;

	pthread_mutex_lock(&q->h->lock);
	k = known_find(q->h, q->id);
	if (k && k->expires_at > (int64_t)time(NULL)) {
		memset(ret, 0, sizeof(*ret));
		snprintf(ret->session_id, sizeof(ret->session_id), "%s", q->id);
		ret->expires_at = k->expires_at;
		q->expires_at = k->expires_at;
		hit = true;
	}
	pthread_mutex_unlock(&q->h->lock);
	return hit || ask_session(q, ret);
}

/* The answer to an operation's failure @r (before any byte of its answer
 * went out): whether the session ended or went away is asked then, so
 * that it is told as such (404, 410 with end and end_reason) and not as
 * the operation's own -ENOENT (no such file) or -EIO. */
static void operation_failed(struct op_sandbox_req *q, int r, const struct flash_diag *diag, uint64_t size)
{
	struct flash_sandbox_info in;

	if (r == -EINVAL || r == -EFBIG || r == -FLASH_E_SANDBOX_ARCHIVE) {
		/* about the request, not the session */
		struct flash_sandbox_info at = { .expires_at = q->expires_at };

		set_failure(q, r, diag, &at, size);
		return;
	}
	if (!ask_session(q, &in))
		return; /* gone or ended: said so */
	set_failure(q, r, diag, &in, size);
}

static void op_info(struct op_sandbox_req *q)
{
	struct flash_sandbox_info in;
	struct json_writer *w;
	int r = flash_sandbox_info(q->h->sp, q->id, &in);

	if (r == -ENOENT) {
		set_error(q, 404, "not-found", NULL, NULL, "no sandbox session %s", q->id);
		return;
	}
	if (r < 0) {
		set_failure(q, r, NULL, NULL, 0);
		return;
	}
	q->expires_at = in.expires_at;
	known_set(q->h, &in, q->id, in.end == FLASH_SANDBOX_LIVE);
	w = json_writer_new(JSON_WRITE_NEWLINE);
	jw_object_open(w);
	jw_info(w, &in);
	jw_object_close(w);
	set_json(q, 200, w);
}

static void op_list(struct op_sandbox_req *q, const char *prefix)
{
	struct json_writer *w;
	char **ids = NULL;
	size_t n = 0;
	int r = flash_sandbox_owned(q->h->sp, &ids, &n);

	if (r < 0) {
		set_failure(q, r, NULL, NULL, 0);
		return;
	}
	w = json_writer_new(JSON_WRITE_NEWLINE);
	jw_object_open(w);
	jw_key(w, "sandboxes");
	jw_array_open(w);
	for (size_t i = 0; i < n; i++) {
		struct flash_sandbox_info in;

		/* Only the token's tenant's: another's are never shown. */
		if (strncmp(ids[i], prefix, strlen(prefix)) != 0 || flash_sandbox_info(q->h->sp, ids[i], &in) < 0)
			continue;
		jw_object_open(w);
		jw_info(w, &in);
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
	flash_sandbox_ids_free(ids, n);
	set_json(q, 200, w);
}

int op_sandbox_provision_body_parse(const char *body, size_t len, uint32_t ttl_max_s, uint32_t ttl_default_s,
				    char **ret_spec, size_t *ret_spec_len, uint32_t *ret_ttl_s, char *err, size_t err_size)
{
	struct json_value *doc = NULL;
	const struct json_value *spec_v, *ttl_v;
	struct json_error je = { 0 };
	struct json_writer *w;
	uint32_t ttl = ttl_default_s;
	uint64_t t;
	int r = -EINVAL;

	if (json_parse(body ? body : "", len, NULL, &doc, &je) < 0 || doc->type != JSON_OBJECT) {
		snprintf(err, err_size, "the body must be a JSON object {\"spec\": {...}, \"ttl_s\": N}%s%s",
			 je.message[0] ? ": " : "", je.message);
		goto out;
	}
	for (size_t i = 0; i < doc->u.object.n; i++) {
		const char *k = doc->u.object.members[i].key;

		if (strcmp(k, "spec") != 0 && strcmp(k, "ttl_s") != 0) {
			snprintf(err, err_size, "%s: unknown field", k);
			goto out;
		}
	}
	spec_v = json_get(doc, "spec");
	ttl_v = json_get(doc, "ttl_s");
	if (!spec_v || spec_v->type != JSON_OBJECT) {
		snprintf(err, err_size, "spec: required, an object");
		goto out;
	}
	if (ttl_v) {
		if (json_get_uint64(ttl_v, &t) < 0 || t == 0 || t > ttl_max_s) {
			snprintf(err, err_size, "ttl_s: must be 1..%" PRIu32, ttl_max_s);
			goto out;
		}
		ttl = (uint32_t)t;
	}
	w = json_writer_new(0);
	jw_value(w, spec_v);
	r = json_writer_finish(w, ret_spec, ret_spec_len);
	if (r == 0)
		*ret_ttl_s = ttl;
out:
	json_free(doc);
	return r;
}

static void op_provision(struct op_sandbox_req *q)
{
	const struct op_sandbox_http_opts *o = &q->h->o;
	struct flash_spec *spec = NULL;
	struct flash_diag *diag = NULL;
	struct flash_sandbox_info in;
	struct json_writer *w;
	char *spec_text = NULL, err[512];
	size_t spec_len = 0;
	uint32_t ttl = 0;
	int r;

	if (q->body.too_large) {
		set_error(q, 413, "too-large", NULL, NULL, "the body is larger than its bound");
		return;
	}
	r = op_sandbox_provision_body_parse(q->body.data, q->body.len, o->ttl_max_s ? o->ttl_max_s : 86400,
					    o->ttl_default_s ? o->ttl_default_s : 3600, &spec_text, &spec_len, &ttl, err,
					    sizeof(err));
	if (r < 0) {
		if (r == -EINVAL)
			set_error(q, 400, "bad-request", NULL, NULL, "%s", err);
		else
			set_error(q, 503, "unavailable", NULL, NULL, "out of memory: retry");
		return;
	}
	if (flash_diag_new(&diag) < 0) {
		set_error(q, 503, "unavailable", NULL, NULL, "out of memory: retry");
		goto out;
	}
	r = flash_spec_parse(spec_text, spec_len, NULL, &spec, diag);
	if (r < 0) {
		set_error(q, 400, "invalid-spec", diag, NULL, "the spec is invalid: %s",
			  flash_diag_first_error(diag) ? flash_diag_first_error(diag)->message : flash_strerror(r));
		goto out;
	}
	tenants_note(q->h->o.tenants, q->id, q->org, q->project, true);
	r = flash_sandbox_provision(q->h->sp, q->id, spec, ttl, &in, diag);
	tenants_note(q->h->o.tenants, q->id, NULL, NULL, false);
	if (r == -FLASH_E_SANDBOX_ENDED) {
		/* revoked (409 reaping) or failed (410): the session says */
		operation_failed(q, r, diag, 0);
		goto out;
	}
	if (r < 0) {
		set_failure(q, r, diag, NULL, 0);
		goto out;
	}
	q->expires_at = in.expires_at;
	known_set(q->h, &in, q->id, in.end == FLASH_SANDBOX_LIVE);
	w = json_writer_new(JSON_WRITE_NEWLINE);
	jw_object_open(w);
	jw_info(w, &in);
	jw_object_close(w);
	set_json(q, in.adopted ? 200 : 201, w);
out:
	flash_spec_free(spec);
	flash_diag_free(diag);
	free(spec_text);
}

static void op_reap(struct op_sandbox_req *q)
{
	struct flash_sandbox_info in;
	struct json_writer *w;
	bool known;
	int r;

	known_set(q->h, NULL, q->id, false);
	known = flash_sandbox_info(q->h->sp, q->id, &in) == 0;
	r = flash_sandbox_reap(q->h->sp, q->id);
	/* an operation that asked meanwhile may have remembered it live */
	known_set(q->h, NULL, q->id, false);
	if (r < 0) {
		/* what is left: revoked ("reaping") when the revoke was done,
		 * and a second Reap completes it */
		if (known)
			known = flash_sandbox_info(q->h->sp, q->id, &in) == 0;
		set_failure(q, r, NULL, known ? &in : NULL, 0);
		return;
	}
	if (!known) {
		memset(&in, 0, sizeof(in)); /* owning nothing: reaped all the same */
		snprintf(in.session_id, sizeof(in.session_id), "%s", q->id);
	}
	in.end = FLASH_SANDBOX_END_REAPED;
	snprintf(in.end_reason, sizeof(in.end_reason), "reaped");
	q->expires_at = in.expires_at;
	w = json_writer_new(JSON_WRITE_NEWLINE);
	jw_object_open(w);
	jw_info(w, &in);
	jw_object_close(w);
	set_json(q, 200, w);
}

/* An exec's stdin: the decoded "stdin" of its body. */
struct mem_source {
	const unsigned char *p;
	size_t left;
};

static ssize_t source_mem(void *buf, size_t cap, void *userdata)
{
	struct mem_source *m = userdata;
	size_t n = m->left < cap ? m->left : cap;

	memcpy(buf, m->p, n);
	m->p += n;
	m->left -= n;
	return (ssize_t)n;
}

/* One NDJSON line {"<key>": "<base64>"} per EXEC_CHUNK of output. */
struct exec_out {
	struct op_sandbox_req *q;
	const char *key;
};

static int sink_exec(const void *buf, size_t len, void *userdata)
{
	const struct exec_out *x = userdata;
	char *line = malloc(sodium_base64_ENCODED_LEN(EXEC_CHUNK, sodium_base64_VARIANT_ORIGINAL) + 32);
	int r = 0;

	if (!line)
		return -ENOMEM;
	while (len && r == 0) {
		size_t n = len > EXEC_CHUNK ? EXEC_CHUNK : len, off;

		off = (size_t)sprintf(line, "{\"%s\":\"", x->key);
		sodium_bin2base64(line + off, sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL), buf, n,
				  sodium_base64_VARIANT_ORIGINAL);
		off += strlen(line + off);
		memcpy(line + off, "\"}\n", 3);
		r = push_out(x->q, line, off + 3);
		buf = (const char *)buf + n;
		len -= n;
	}
	free(line);
	return r;
}

/* A JSON array of strings into a NULL-terminated vector pointing into
 * @v; NULL on a wrong type. */
static const char **strv_of(const struct json_value *v, size_t max, const char **ret_bad)
{
	const char **out;

	*ret_bad = NULL;
	if (v->type != JSON_ARRAY || v->u.array.n > max) {
		*ret_bad = "must be an array of at most 4096 strings";
		return NULL;
	}
	out = calloc(v->u.array.n + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < v->u.array.n; i++) {
		const struct json_value *e = v->u.array.items[i];

		if (e->type != JSON_STRING || e->u.string.has_nul) {
			*ret_bad = "every element must be a string without NUL";
			free(out);
			return NULL;
		}
		out[i] = e->u.string.ptr;
	}
	return out;
}

int op_sandbox_exec_body_parse(const char *body, size_t len, uint64_t timeout_max_ms, uint64_t timeout_default_ms,
			       struct op_sandbox_exec_body *ret, char *err, size_t err_size)
{
	struct op_sandbox_exec_body b = { .timeout_ms = timeout_default_ms };
	struct json_error je = { 0 };
	const struct json_value *v;
	const char *bad = NULL;
	int r = -EINVAL;

	if (json_parse(body ? body : "", len, NULL, &b.doc, &je) < 0 || b.doc->type != JSON_OBJECT) {
		snprintf(err, err_size, "the body must be a JSON object {\"argv\": [...], ...}%s%s",
			 je.message[0] ? ": " : "", je.message);
		goto fail;
	}
	for (size_t i = 0; i < b.doc->u.object.n; i++) {
		const char *k = b.doc->u.object.members[i].key;

		if (strcmp(k, "argv") && strcmp(k, "env") && strcmp(k, "cwd") && strcmp(k, "stdin") &&
		    strcmp(k, "timeout_ms")) {
			snprintf(err, err_size, "%s: unknown field", k);
			goto fail;
		}
	}
	v = json_get(b.doc, "argv");
	if (!v || !(b.argv = strv_of(v, EXEC_ARGS_MAX, &bad)) || !b.argv[0] || b.argv[0][0] != '/') {
		snprintf(err, err_size, "argv: %s", bad ? bad : b.argv ? "argv[0] must be an absolute path" : "required");
		goto fail;
	}
	v = json_get(b.doc, "env");
	if (v) {
		b.env = strv_of(v, EXEC_ARGS_MAX, &bad);
		for (size_t i = 0; b.env && b.env[i]; i++)
			if (!strchr(b.env[i], '=') || b.env[i][0] == '=')
				bad = "every element must be NAME=VALUE";
		if (!b.env || bad) {
			snprintf(err, err_size, "env: %s", bad ? bad : "out of memory");
			goto fail;
		}
	}
	v = json_get(b.doc, "cwd");
	if (v && (json_get_string(v, &b.cwd) < 0 || b.cwd[0] != '/')) {
		snprintf(err, err_size, "cwd: must be an absolute path");
		goto fail;
	}
	v = json_get(b.doc, "timeout_ms");
	if (v && (json_get_uint64(v, &b.timeout_ms) < 0 || b.timeout_ms == 0 || b.timeout_ms > timeout_max_ms)) {
		snprintf(err, err_size, "timeout_ms: must be 1..%" PRIu64, timeout_max_ms);
		goto fail;
	}
	v = json_get(b.doc, "stdin");
	if (v) {
		const char *b64;
		size_t cap;

		if (json_get_string(v, &b64) < 0) {
			snprintf(err, err_size, "stdin: must be a base64 string");
			goto fail;
		}
		cap = v->u.string.len / 4 * 3 + 3;
		b.in = malloc(cap);
		if (!b.in) {
			r = -ENOMEM;
			goto fail;
		}
		if (sodium_base642bin(b.in, cap, b64, v->u.string.len, NULL, &b.in_len, NULL,
				      sodium_base64_VARIANT_ORIGINAL) != 0) {
			snprintf(err, err_size, "stdin: must be base64 (RFC 4648 section 4, padded)");
			goto fail;
		}
		b.has_stdin = true;
	}
	*ret = b;
	return 0;
fail:
	op_sandbox_exec_body_clear(&b);
	return r;
}

void op_sandbox_exec_body_clear(struct op_sandbox_exec_body *b)
{
	free(b->argv);
	free(b->env);
	free(b->in);
	json_free(b->doc);
	memset(b, 0, sizeof(*b));
}

static void op_exec(struct op_sandbox_req *q)
{
	const struct op_sandbox_http_opts *o = &q->h->o;
	uint64_t tmax = (uint64_t)(o->exec_timeout_max_s ? o->exec_timeout_max_s : 1800) * 1000;
	uint64_t tdef = (uint64_t)(o->exec_timeout_default_s ? o->exec_timeout_default_s : 60) * 1000;
	struct op_sandbox_exec_body b = { 0 };
	struct flash_sandbox_info info;
	struct flash_sandbox_exec_result res = { 0 };
	struct exec_out xo = { q, "stdout" }, xe = { q, "stderr" };
	struct mem_source ms;
	char tail[160], err[512];
	bool streaming;
	int r;

	if (q->body.too_large) {
		set_error(q, 413, "too-large", NULL, NULL, "the body is larger than its bound");
		return;
	}
	r = op_sandbox_exec_body_parse(q->body.data, q->body.len, tmax, tdef, &b, err, sizeof(err));
	if (r < 0) {
		if (r == -ENOMEM)
			set_error(q, 503, "unavailable", NULL, NULL, "out of memory: retry");
		else
			set_error(q, 400, "bad-request", NULL, NULL, "%s", err);
		return;
	}
	if (!live_session(q, &info))
		goto out;
	ms = (struct mem_source){ b.in, b.in_len };
	pthread_mutex_lock(&q->h->lock);
	q->ctype = "application/x-ndjson";
	pthread_mutex_unlock(&q->h->lock);
	FLASH_OPTS(flash_sandbox_exec_opts, eo, .argv = b.argv, .env = b.env, .cwd = b.cwd,
		   .stdin_fn = b.has_stdin ? source_mem : NULL, .stdin_userdata = &ms, .stdout_fn = sink_exec,
		   .stdout_userdata = &xo, .stderr_fn = sink_exec, .stderr_userdata = &xe,
		   .timeout_ms = (uint32_t)b.timeout_ms);
	r = flash_sandbox_exec(q->h->sp, q->id, &eo, &res);
	pthread_mutex_lock(&q->h->lock);
	streaming = q->head;
	pthread_mutex_unlock(&q->h->lock);
	if (r < 0 && !streaming) {
		operation_failed(q, r, NULL, 0);
		goto out;
	}
	/* The last line: the outcome, or the error that cut the stream. */
	if (r < 0)
		snprintf(tail, sizeof(tail), "{\"error\":{\"code\":\"exec-failed\",\"message\":\"%s\"},\"expires_at\":%" PRId64 "}\n",
			 r == -EPIPE ? "client gone" : "the exec failed", info.expires_at);
	else
		snprintf(tail, sizeof(tail), "{\"exit_code\":%d,\"timed_out\":%s,\"expires_at\":%" PRId64 "}\n",
			 res.exit_code, res.timed_out ? "true" : "false", info.expires_at);
	push_out(q, tail, strlen(tail));
out:
	op_sandbox_exec_body_clear(&b);
}

static void op_read(struct op_sandbox_req *q)
{
	struct flash_sandbox_info info;
	uint64_t size = 0;
	bool streaming;
	int r;

	if (!live_session(q, &info))
		return;
	pthread_mutex_lock(&q->h->lock);
	q->ctype = "application/octet-stream";
	pthread_mutex_unlock(&q->h->lock);
	r = flash_sandbox_read(q->h->sp, q->id, q->arg, q->max, sink_raw, q, &size);
	pthread_mutex_lock(&q->h->lock);
	streaming = q->head;
	if (r < 0 && streaming)
		q->failed = true; /* the stream ends without its last chunk */
	pthread_mutex_unlock(&q->h->lock);
	if (r < 0 && !streaming)
		operation_failed(q, r, NULL, size);
	if (r == 0 && !streaming) {
		/* An empty file: an empty 200. */
		pthread_mutex_lock(&q->h->lock);
		q->head = q->stream = true;
		q->status = 200;
		pthread_mutex_unlock(&q->h->lock);
	}
}

static void op_export(struct op_sandbox_req *q)
{
	struct flash_sandbox_info info;
	bool streaming;
	int r;

	if (!live_session(q, &info))
		return;
	pthread_mutex_lock(&q->h->lock);
	q->ctype = "application/x-tar";
	pthread_mutex_unlock(&q->h->lock);
	r = flash_sandbox_export(q->h->sp, q->id, q->arg, sink_raw, q);
	pthread_mutex_lock(&q->h->lock);
	streaming = q->head;
	if (r < 0 && streaming)
		q->failed = true;
	if (r == 0 && !streaming) {
		q->head = q->stream = true;
		q->status = 200;
	}
	pthread_mutex_unlock(&q->h->lock);
	if (r < 0 && !streaming)
		operation_failed(q, r, NULL, 0);
}

/* The upload's source, counting against the declared bound. */
static void op_upload(struct op_sandbox_req *q)
{
	struct flash_sandbox_info info;
	struct flash_diag *diag = NULL;
	struct json_writer *w;
	uint64_t written = 0;
	int r;

	if (!live_session(q, &info))
		return;
	if (q->op == SB_WRITE) {
		r = flash_sandbox_write(q->h->sp, q->id, q->arg, source_in, q, &written);
	} else {
		if (flash_diag_new(&diag) < 0)
			diag = NULL;
		r = flash_sandbox_import(q->h->sp, q->id, q->arg, source_in, q, diag);
	}
	if (r < 0 && q->client_late) {
		set_error(q, 408, "client-timeout", NULL, &info, "the body did not arrive within %u s",
			  q->h->o.transfer_timeout_s ? q->h->o.transfer_timeout_s : 3600);
	} else if (r == -EFBIG || (r < 0 && q->in_err == -EFBIG)) {
		set_error(q, 413, "too-large", NULL, &info, "the body is larger than %" PRIu64 " bytes", q->max);
	} else if (r < 0) {
		operation_failed(q, r, diag, 0);
	} else {
		w = json_writer_new(JSON_WRITE_NEWLINE);
		jw_object_open(w);
		jw_kv_string(w, "session_id", q->id);
		jw_kv_string(w, q->op == SB_WRITE ? "path" : "dir", q->arg);
		if (q->op == SB_WRITE)
			jw_kv_uint(w, "written", written);
		jw_kv_int(w, "expires_at", info.expires_at);
		jw_object_close(w);
		set_json(q, 200, w);
	}
	flash_diag_free(diag);
}

static void *worker(void *arg)
{
	struct op_sandbox_req *q = arg;
	struct op_sandbox_http *h = q->h;

	switch (q->op) {
	case SB_PROVISION: op_provision(q); break;
	case SB_INFO: op_info(q); break;
	case SB_REAP: op_reap(q); break;
	case SB_EXEC: op_exec(q); break;
	case SB_READ: op_read(q); break;
	case SB_EXPORT: op_export(q); break;
	case SB_WRITE:
	case SB_IMPORT: op_upload(q); break;
	case SB_LIST: op_list(q, q->arg); break;
	}
	pthread_mutex_lock(&h->lock);
	if (!q->head) {
		q->head = true;
		if (!q->answer) {
			q->status = 500;
			q->answer = strdup("{\"error\":{\"code\":\"internal\",\"message\":\"no answer\"}}\n");
			q->answer_len = q->answer ? strlen(q->answer) : 0;
		}
	}
	q->done = true;
	release_slot(q); /* the operation is over, whatever the connection does */
	wake(q);
	unref_locked(q);
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* Under h->lock: starts the worker.  false: the answer says why. */
static bool start(struct op_sandbox_req *q)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	q->refs++;
	r = pthread_create(&t, &attr, worker, q);
	pthread_attr_destroy(&attr);
	if (r) {
		q->refs--;
		set_error(q, 503, "unavailable", NULL, NULL, "cannot start the operation: retry");
		q->head = true;
		return false;
	}
	q->started = true;
	return true;
}

/* ---------------------------------------------------------------- routing */

struct route {
	enum sb_op op;
	const char *query;  /* the path argument's key, or NULL */
	bool streamed;      /* the body streams to the worker */
	bool json;          /* a JSON body */
};

/* The routes under /provider/v1/sandboxes/ID[/SUB]. */
static const struct {
	const char *sub; /* NULL: the session itself */
	const char *method;
	struct route r;
} routes[] = {
	{ NULL, "PUT", { .op = SB_PROVISION, .json = true } },
	{ NULL, "GET", { .op = SB_INFO } },
	{ NULL, "DELETE", { .op = SB_REAP } },
	{ "exec", "POST", { .op = SB_EXEC, .json = true } },
	{ "files", "GET", { .op = SB_READ, .query = "path" } },
	{ "files", "PUT", { .op = SB_WRITE, .query = "path", .streamed = true } },
	{ "import", "PUT", { .op = SB_IMPORT, .query = "dir", .streamed = true } },
	{ "export", "GET", { .op = SB_EXPORT, .query = "root" } },
};

/* The route of (@method, @url); @id_buf the session id.  Returns 0,
 * -ENOENT (no route) or -EPERM (method not allowed). */
static int route_of(const char *method, const char *url, char *id_buf, size_t id_size, struct route *ret)
{
	const char *rest = url + strlen(OP_SANDBOX_API_PREFIX), *slash, *sub;
	bool known = false;
	size_t n;

	memset(ret, 0, sizeof(*ret));
	id_buf[0] = '\0';
	if (rest[0] == '\0') {
		ret->op = SB_LIST;
		return strcmp(method, "GET") == 0 ? 0 : -EPERM;
	}
	rest++;
	slash = strchr(rest, '/');
	n = slash ? (size_t)(slash - rest) : strlen(rest);
	if (n == 0)
		return -ENOENT;
	if (n < id_size) {
		memcpy(id_buf, rest, n);
		id_buf[n] = '\0';
	} /* else too long: "" is refused as an id */
	sub = slash ? slash + 1 : NULL;
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		if (!routes[i].sub != !sub || (sub && strcmp(sub, routes[i].sub) != 0))
			continue;
		known = true;
		if (strcmp(method, routes[i].method) == 0) {
			*ret = routes[i].r;
			return 0;
		}
	}
	if (known)
		return -EPERM;
	return -ENOENT;
}

/* The tenant's id prefix "sb-<16 hex>-" of a verified token. */
static int tenant_prefix(const struct flash_auth_token *t, char *buf, size_t size)
{
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	const char *project = flash_auth_token_project(t);
	int r = flash_client_sandbox_id(flash_auth_token_org(t), project ? project : "", "x", id);

	if (r < 0 || strlen(id) >= size)
		return r < 0 ? r : -ENOSPC;
	id[strlen(id) - 1] = '\0'; /* drop the "x" */
	snprintf(buf, size, "%s", id);
	return 0;
}

/* A decoded query value: NULL when absent; *ret_nul when it holds a NUL
 * (which a C string would silently cut). */
static const char *query_value(struct MHD_Connection *conn, const char *key, bool *ret_nul)
{
	const char *v = NULL;
	size_t len = 0;

	*ret_nul = false;
	if (MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, key, strlen(key), &v, &len) != MHD_YES || !v)
		return NULL;
	*ret_nul = strlen(v) != len;
	return v;
}

static enum MHD_Result answer_now(struct op_sandbox_req *q, struct MHD_Connection *conn)
{
	enum MHD_Result ret;

	pthread_mutex_lock(&q->h->lock);
	q->head = true;
	ret = queue(q, conn);
	pthread_mutex_unlock(&q->h->lock);
	return ret;
}

/* ---------------------------------------------------------- tenants */

struct tenant_note {
	struct tenant_note *next;
	char id[FLASH_SANDBOX_ID_MAX + 1];
	char org[64], project[64];
};

struct op_sandbox_tenants {
	pthread_mutex_t lock;
	struct tenant_note *notes; /* Provisions in progress */
};

int op_sandbox_tenants_new(struct op_sandbox_tenants **ret)
{
	struct op_sandbox_tenants *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	*ret = t;
	return 0;
}

void op_sandbox_tenants_free(struct op_sandbox_tenants *t)
{
	if (!t)
		return;
	while (t->notes) {
		struct tenant_note *n = t->notes;

		t->notes = n->next;
		free(n);
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Notes (@add) or forgets the tenant of @sid's Provision in progress.
 * Two Provisions of one session at once carry the same tenant (the id
 * is derived from it), so the first note found is the right one. */
static void tenants_note(struct op_sandbox_tenants *t, const char *sid, const char *org, const char *project,
			 bool add)
{
	struct tenant_note *n, **pp;

	if (!t)
		return;
	if (add) {
		n = calloc(1, sizeof(*n));
		if (!n)
			return; /* the backend falls back to the id's tenant part */
		snprintf(n->id, sizeof(n->id), "%s", sid);
		snprintf(n->org, sizeof(n->org), "%s", org);
		snprintf(n->project, sizeof(n->project), "%s", project);
		pthread_mutex_lock(&t->lock);
		n->next = t->notes;
		t->notes = n;
		pthread_mutex_unlock(&t->lock);
		return;
	}
	pthread_mutex_lock(&t->lock);
	for (pp = &t->notes; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->id, sid)) {
			n = *pp;
			*pp = n->next;
			free(n);
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

int op_sandbox_tenants_lookup(void *ctx, const char *sid, char *org, size_t org_size, char *project,
			      size_t project_size)
{
	struct op_sandbox_tenants *t = ctx;
	int r = -ENOENT;

	if (!t || !sid)
		return -ENOENT;
	pthread_mutex_lock(&t->lock);
	for (struct tenant_note *n = t->notes; n; n = n->next) {
		if (!strcmp(n->id, sid)) {
			snprintf(org, org_size, "%s", n->org);
			snprintf(project, project_size, "%s", n->project);
			r = 0;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

enum MHD_Result op_sandbox_http_begin(struct op_sandbox_http *h, struct MHD_Connection *conn, const char *method,
				      const char *url, struct op_sandbox_req **ret_req)
{
	struct op_sandbox_req *q = calloc(1, sizeof(*q));
	struct flash_auth_token *token = NULL;
	struct op_response resp = { 0 };
	char prefix[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	struct route rt;
	const char *cl;
	int r;

	*ret_req = NULL;
	if (!q)
		return MHD_NO;
	q->h = h;
	q->refs = 1; /* the connection's */
	q->conn = conn;
	q->expires_at = -1;
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&q->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	q->t0_ns = (uint64_t)util_mono_ms() * 1000000u;
	q->deadline_ms = util_mono_ms() + 1000 * (int64_t)(h->o.transfer_timeout_s ? h->o.transfer_timeout_s : 3600);
	pthread_mutex_lock(&h->lock);
	q->next = h->reqs;
	if (h->reqs)
		h->reqs->prev = q;
	h->reqs = q;
	pthread_mutex_unlock(&h->lock);
	*ret_req = q;

	r = route_of(method, url, q->id, sizeof(q->id), &rt);
	q->op = rt.op;
	if (r == -ENOENT) {
		set_error(q, 404, "no-route", NULL, NULL, "no route %s %s", method, url);
		return answer_now(q, conn);
	}
	if (r == -EPERM) {
		set_error(q, 405, "method-not-allowed", NULL, NULL, "%s is not allowed on %s", method, url);
		return answer_now(q, conn);
	}
	/* The token before anything about the session is said. */
	if (!op_provider_authorize(h->provider, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
				   FLASH_AUTH_ACTION_SANDBOX, &token, &resp)) {
		take_answer(q, &resp);
		return answer_now(q, conn);
	}
	r = tenant_prefix(token, prefix, sizeof(prefix));
	snprintf(q->tenant, sizeof(q->tenant), "%s", prefix);
	snprintf(q->org, sizeof(q->org), "%s", flash_auth_token_org(token) ? flash_auth_token_org(token) : "");
	snprintf(q->project, sizeof(q->project), "%s",
		 flash_auth_token_project(token) ? flash_auth_token_project(token) : "");
	flash_auth_token_free(token);
	if (r < 0) {
		set_error(q, 500, "internal", NULL, NULL, "cannot derive the tenant");
		return answer_now(q, conn);
	}
	if (rt.op == SB_LIST) {
		q->arg = strdup(prefix);
		if (!q->arg)
			return MHD_NO;
	} else if (!flash_sandbox_id_valid(q->id) || strncmp(q->id, prefix, strlen(prefix)) != 0 ||
	    strlen(q->id) == strlen(prefix)) {
		/* Another tenant's session is an unknown one. */
		set_error(q, 404, "not-found", NULL, NULL, "no sandbox session %s", q->id);
		return answer_now(q, conn);
	}
	if (rt.query) {
		bool nul;
		const char *v = query_value(conn, rt.query, &nul);

		if (!v || nul || v[0] != '/' || strlen(v) > PATH_MAX_LEN) {
			set_error(q, 400, "bad-request", NULL, NULL, "%s: %s", rt.query,
				  !v ? "required" : nul ? "holds a NUL" : "must be an absolute path of at most 4096 bytes");
			return answer_now(q, conn);
		}
		q->arg = strdup(v);
		if (!q->arg)
			return MHD_NO;
	}
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
	if (rt.op == SB_READ) {
		const char *mx = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "max");
		char *end;

		q->max = opt_u64(h->o.read_max_bytes, FLASH_SANDBOX_READ_MAX_DEFAULT);
		if (mx) {
			unsigned long long m = strtoull(mx, &end, 10);

			if (!*mx || *end || mx[0] == '-' || m == 0 || m > q->max) {
				set_error(q, 400, "bad-request", NULL, NULL, "max: must be 1..%" PRIu64, q->max);
				return answer_now(q, conn);
			}
			q->max = m;
		}
	}
	if (rt.streamed) {
		q->max = rt.op == SB_WRITE ? opt_u64(h->o.write_max_bytes, 1ull << 30)
					   : opt_u64(h->o.import_max_bytes, 1ull << 30);
		if (rt.op == SB_WRITE && !cl) {
			set_error(q, 411, "length-required", NULL, NULL, "a write needs a Content-Length");
			return answer_now(q, conn);
		}
		if (cl && strtoull(cl, NULL, 10) > q->max) {
			set_error(q, 413, "too-large", NULL, NULL, "the body is larger than %" PRIu64 " bytes", q->max);
			return answer_now(q, conn);
		}
		q->in = malloc(IO_CAP);
		if (!q->in)
			return MHD_NO;
	}
	if (rt.op == SB_READ || rt.op == SB_EXPORT || rt.op == SB_EXEC) {
		q->out = malloc(IO_CAP);
		if (!q->out)
			return MHD_NO;
	}
	q->streamed = rt.streamed;
	pthread_mutex_lock(&h->lock);
	if (h->stopping || h->running >= max_ops(h) || tenant_running(h, q->tenant) >= max_ops_per_tenant(h)) {
		bool all = h->running >= max_ops(h);

		pthread_mutex_unlock(&h->lock);
		set_error(q, 503, "unavailable", NULL, NULL, "%s",
			  h->stopping ? "stopping"
			  : all      ? "too many sandbox operations at once: retry"
				     : "too many sandbox operations of this organization and project at once: retry");
		return answer_now(q, conn);
	}
	h->running++;
	q->slot = true;
	if (rt.streamed && !start(q)) {
		pthread_mutex_unlock(&h->lock);
		return answer_now(q, conn);
	}
	pthread_mutex_unlock(&h->lock);
	return MHD_YES;
}

enum MHD_Result op_sandbox_http_step(struct op_sandbox_req *q, struct MHD_Connection *conn, const char *upload_data,
				     size_t *upload_size)
{
	struct op_sandbox_http *h = q->h;
	size_t json_max = h->o.json_max_bytes ? h->o.json_max_bytes : 1u << 20;
	enum MHD_Result ret = MHD_YES;

	pthread_mutex_lock(&h->lock);
	if (q->queued) {
		/* Answered early: whatever else comes is not read. */
		*upload_size = 0;
		goto out;
	}
	if (*upload_size) {
		if (q->streamed && !q->done && !q->gone) {
			size_t n = IO_CAP - q->in_len;

			if (n > *upload_size)
				n = *upload_size;
			if (q->in_total + n > q->max) {
				/* A chunked body over the bound. */
				q->in_err = -EFBIG;
				*upload_size = 0;
			} else {
				memcpy(q->in + q->in_len, upload_data, n);
				q->in_len += n;
				q->in_total += n;
				*upload_size -= n;
			}
			pthread_cond_broadcast(&q->cond);
			if (*upload_size && h->stopping) {
				q->in_err = -ECANCELED;
				*upload_size = 0;
			} else if (*upload_size) {
				suspend(q); /* the worker wakes us when it took some */
			}
		} else if (!q->streamed && !q->started) {
			if (http_body_feed(&q->body, upload_data, *upload_size, json_max) < 0)
				ret = MHD_NO;
			*upload_size = 0;
		} else {
			*upload_size = 0; /* the operation is over: the rest is dropped */
		}
		goto out;
	}
	/* The whole request is in. */
	if (!q->in_eof) {
		q->in_eof = true;
		pthread_cond_broadcast(&q->cond);
		if (!q->started && !q->head)
			start(q);
	}
	if (q->head) {
		ret = queue(q, conn);
		goto out;
	}
	if (h->stopping) {
		/* The worker may still run: a static answer, not q->answer. */
		static const char stopping[] = "{\"error\":{\"code\":\"unavailable\",\"message\":\"stopping\"}}\n";
		struct MHD_Response *resp = MHD_create_response_from_buffer(sizeof(stopping) - 1, (void *)stopping,
									    MHD_RESPMEM_PERSISTENT);

		q->queued = true;
		q->answered = 503;
		ret = resp ? MHD_queue_response(conn, 503, resp) : MHD_NO;
		if (resp)
			MHD_destroy_response(resp);
		goto out;
	}
	suspend(q);
out:
	pthread_mutex_unlock(&h->lock);
	return ret;
}

void op_sandbox_http_completed(struct op_sandbox_req *q)
{
	struct op_sandbox_http *h;

	if (!q)
		return;
	h = q->h;
	pthread_mutex_lock(&h->lock);
	/* Counted once done with, answered (its status) or not (0: gone). */
	op_metrics_request(op_provider_metrics(h->provider), OP_ROUTE_SANDBOX, q->answered,
			   (uint64_t)util_mono_ms() * 1000000u - q->t0_ns);
	q->gone = true;
	q->conn = NULL;
	q->suspended = false;
	pthread_cond_broadcast(&q->cond);
	unref_locked(q);
	pthread_mutex_unlock(&h->lock);
}

/* ---------------------------------------------------------------- life */

int op_sandbox_http_new(struct op_provider *p, struct flash_sandbox_provider *sp,
			const struct op_sandbox_http_opts *opts, struct op_sandbox_http **ret)
{
	struct op_sandbox_http *h;

	if (!p || !sp || !ret || (opts && !OPTS_VALID(opts, op_sandbox_http_opts)))
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->provider = p;
	h->sp = sp;
	if (opts)
		memcpy(&h->o, opts, opts->sz < sizeof(h->o) ? opts->sz : sizeof(h->o));
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->idle, NULL);
	*ret = h;
	return 0;
}

void op_sandbox_http_stop(struct op_sandbox_http *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	for (struct op_sandbox_req *q = h->reqs; q; q = q->next) {
		q->gone = true;
		wake(q);
	}
	pthread_mutex_unlock(&h->lock);
}

void op_sandbox_http_free(struct op_sandbox_http *h)
{
	if (!h)
		return;
	op_sandbox_http_stop(h);
	pthread_mutex_lock(&h->lock);
	while (h->running)
		pthread_cond_wait(&h->idle, &h->lock);
	pthread_mutex_unlock(&h->lock);
	pthread_cond_destroy(&h->idle);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
