/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Lists and watches (common/k8s.h): pagination with limit/continue, one
 * watch stream parsed line by line as it arrives, and the reflector loop
 * of client-go (list, watch, resume from the last resourceVersion,
 * relist after 410 Gone).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "k8s-request.h"
#include "names.h"
#include "util.h"

static int collection_path(const struct k8s_ref *ref, char **ret)
{
	if (!ref || ref->name || ref->subresource)
		return -EINVAL;
	return k8s_ref_path(ref, ret);
}

static int selectors_valid(const char *label, const char *field)
{
	/* Selectors go into the query escaped; bounded so a URL stays sane. */
	if ((label && strlen(label) > 4096) || (field && strlen(field) > 4096))
		return -EINVAL;
	return 0;
}

int k8s_list(struct k8s_client *c, const struct k8s_ref *ref, const struct k8s_list_opts *opts, k8s_item_fn fn,
	     void *userdata, char **ret_resource_version, struct k8s_status *ret_status)
{
	struct k8s_status local = { 0 }, *st = ret_status ? ret_status : &local;
	_cleanup_free_ char *path = NULL, *cont = NULL, *rv = NULL;
	unsigned int limit = OPTS_GET(opts, limit, 0) ? opts->limit : 500;
	const char *match = OPTS_GET(opts, resource_version_match, NULL);
	int r;

	if (!c || !fn || !OPTS_VALID(opts, k8s_list_opts))
		return -EINVAL;
	if (match && strcmp(match, "NotOlderThan") != 0 && strcmp(match, "Exact") != 0)
		return -EINVAL;
	if ((r = selectors_valid(OPTS_GET(opts, label_selector, NULL), OPTS_GET(opts, field_selector, NULL))) < 0)
		return r;
	k8s_status_clear(st);
	if ((r = collection_path(ref, &path)) < 0)
		return r;
	for (bool first = true;; first = false) {
		struct k8s_req req = { .method = "GET" };
		struct json_value *page = NULL;
		const struct json_value *items;
		const char *next, *page_rv;
		struct k8s_query q;

		k8s_query_init(&q);
		k8s_query_add(&q, "labelSelector", OPTS_GET(opts, label_selector, NULL));
		k8s_query_add(&q, "fieldSelector", OPTS_GET(opts, field_selector, NULL));
		k8s_query_add_uint(&q, "limit", limit);
		if (first) {
			/* With continue the version is the token's. */
			k8s_query_add(&q, "resourceVersion", OPTS_GET(opts, resource_version, NULL));
			k8s_query_add(&q, "resourceVersionMatch", match);
		} else
			k8s_query_add(&q, "continue", cont);
		if ((r = k8s_query_finish(&q, path, &req.path_query)) < 0)
			break;
		r = k8s_request(c, &req, st);
		free(req.path_query);
		if (r == 0 && (r = k8s_body_parse(c, req.resp, req.resp_len, &page)) < 0) {
			k8s_status_clear(st);
			st->code = (int)req.status;
			st->message = strdup("the list answer is not a JSON object");
		}
		k8s_req_done(&req);
		if (r < 0)
			break;
		items = json_get(page, "items");
		next = json_string_value(json_at(page, "metadata.continue"));
		page_rv = json_string_value(json_at(page, "metadata.resourceVersion"));
		if (!(json_is(items, JSON_ARRAY) || json_is(items, JSON_NULL)) || (first && !page_rv)) {
			json_free(page);
			k8s_status_clear(st);
			st->code = 200;
			st->message = strdup("the list answer has no items or no metadata.resourceVersion");
			r = -EBADMSG;
			break;
		}
		if (first && !(rv = strdup(page_rv))) {
			json_free(page);
			r = -ENOMEM;
			break;
		}
		for (size_t i = 0; items->type == JSON_ARRAY && i < items->u.array.n; i++) {
			r = fn(items->u.array.items[i], userdata);
			if (r)
				break;
		}
		{
			bool more = next && *next;

			free(cont);
			cont = more ? strdup(next) : NULL;
			json_free(page);
			if (r)
				break;
			if (more && !cont) {
				r = -ENOMEM;
				break;
			}
			if (!more)
				break;
		}
	}
	k8s_status_clear(&local);
	if (r == 0 && ret_resource_version)
		*ret_resource_version = TAKE_PTR(rv);
	return r;
}

/* One stream's state: the line being assembled and the last event. */
struct stream {
	struct k8s_client *c;
	k8s_event_fn fn;
	void *userdata;
	char **rv;
	struct k8s_status *st;
	struct util_buf line;
	int err;                    /* a parse failure or an ERROR event */
	unsigned int events;
	enum k8s_event_type last_type;
	char *last_uid, *last_rv;
};

static int set_str(char **dst, const char *s)
{
	char *p = s ? strdup(s) : NULL;

	if (s && !p)
		return -ENOMEM;
	free(*dst);
	*dst = p;
	return 0;
}

/* One complete line: parse, keep the version, drop an exact repeat, hand
 * it on.  Returns nonzero to stop the stream. */
static int stream_line(struct stream *s, const char *line, size_t len)
{
	struct json_value *root = NULL;
	const struct json_value *obj;
	enum k8s_event_type type;
	const char *rv, *uid;
	struct k8s_event ev;
	int r;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (!len)
		return 0;
	r = k8s_watch_parse_line(line, len, s->c->o.max_watch_line, &type, &root, s->st);
	if (r < 0) {
		if (r == -EBADMSG || r == -EMSGSIZE) {
			k8s_status_clear(s->st);
			s->st->code = 200;
			s->st->message = strdup(r == -EBADMSG ? "a watch line that is not an event"
							      : "a watch event over its size bound");
		}
		s->err = r;
		return r;
	}
	obj = json_get(root, "object");
	rv = json_string_value(json_at(obj, "metadata.resourceVersion"));
	uid = json_string_value(json_at(obj, "metadata.uid"));
	if (s->events && type == s->last_type && s->last_rv && !strcmp(rv, s->last_rv) &&
	    ((!uid && !s->last_uid) || (uid && s->last_uid && !strcmp(uid, s->last_uid)))) {
		json_free(root);
		return 0;
	}
	if (set_str(s->rv, rv) < 0 || set_str(&s->last_rv, rv) < 0 || set_str(&s->last_uid, uid) < 0) {
		json_free(root);
		s->err = -ENOMEM;
		return -ENOMEM;
	}
	s->last_type = type;
	s->events++;
	ev = (struct k8s_event){ .type = type, .object = obj, .resource_version = *s->rv };
	r = s->fn(&ev, s->userdata);
	json_free(root);
	return r;
}

static int stream_sink(const char *data, size_t len, void *userdata)
{
	struct stream *s = userdata;

	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		int r;

		if (s->line.len + n > s->c->o.max_watch_line) {
			k8s_status_clear(s->st);
			s->st->code = 200;
			s->st->message = strdup("a watch event over its size bound");
			s->err = -EMSGSIZE;
			return -EMSGSIZE;
		}
		/* A line whole in this chunk is parsed where it is. */
		if ((!nl || s->line.len) && util_buf_append(&s->line, data, n, 0) < 0) {
			s->err = -ENOMEM;
			return -ENOMEM;
		}
		if (!nl)
			return 0;
		r = s->line.len ? stream_line(s, s->line.p, s->line.len) : stream_line(s, data, n);
		s->line.len = 0;
		if (r)
			return r;
		data += n + 1;
		len -= n + 1;
	}
	return 0;
}

int k8s_watch_once(struct k8s_client *c, const struct k8s_ref *ref, const struct k8s_watch_opts *opts,
		   char **io_resource_version, k8s_event_fn fn, void *userdata, struct k8s_status *ret_status)
{
	struct k8s_status local = { 0 };
	struct stream s = { .c = c, .fn = fn, .userdata = userdata, .rv = io_resource_version };
	struct k8s_req req = { .method = "GET", .stream = true, .sink = stream_sink, .sink_userdata = &s };
	_cleanup_free_ char *path = NULL;
	struct k8s_query q;
	int r;

	if (!c || !fn || !io_resource_version || !*io_resource_version || !OPTS_VALID(opts, k8s_watch_opts))
		return -EINVAL;
	if ((r = selectors_valid(OPTS_GET(opts, label_selector, NULL), OPTS_GET(opts, field_selector, NULL))) < 0)
		return r;
	s.st = ret_status ? ret_status : &local;
	k8s_status_clear(s.st);
	if ((r = collection_path(ref, &path)) < 0)
		return r;
	k8s_query_init(&q);
	k8s_query_add(&q, "watch", "1");
	k8s_query_add(&q, "labelSelector", OPTS_GET(opts, label_selector, NULL));
	k8s_query_add(&q, "fieldSelector", OPTS_GET(opts, field_selector, NULL));
	if (!OPTS_GET(opts, no_bookmarks, false))
		k8s_query_add(&q, "allowWatchBookmarks", "true");
	k8s_query_add(&q, "resourceVersion", *io_resource_version);
	k8s_query_add_uint(&q, "timeoutSeconds", c->o.watch_timeout_s);
	if ((r = k8s_query_finish(&q, path, &req.path_query)) < 0)
		return r;
	r = k8s_request(c, &req, s.st);
	free(req.path_query);
	k8s_req_done(&req);
	if (req.sink_stop)
		r = s.err ? s.err : req.sink_stop;
	else if (r == 0 && s.line.len) {
		/* The stream ended inside an event. */
		k8s_status_clear(s.st);
		s.st->code = 200;
		s.st->message = strdup("the watch stream ended inside an event");
		r = -ECONNRESET;
	}
	free(s.line.p);
	free(s.last_uid);
	free(s.last_rv);
	k8s_status_clear(&local);
	return r;
}

/* The caller's callback, with what it returned when it stopped the loop
 * (told apart from the client's own errors). */
struct guard {
	k8s_event_fn fn;
	void *userdata;
	int stop;
};

static int guarded(const struct k8s_event *ev, void *userdata)
{
	struct guard *g = userdata;
	int r = g->fn(ev, g->userdata);

	if (r)
		g->stop = r;
	return r;
}

/* Items of a (re)list come as ADDED with no version of their own: the
 * list's comes with SYNCED. */
static int relist_item(const struct json_value *item, void *userdata)
{
	struct k8s_event ev = { .type = K8S_EVENT_ADDED, .object = item };

	return guarded(&ev, userdata);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool curable(int r)
{
	return r == -ECONNRESET || r == -ETIMEDOUT || r == -ECONNREFUSED || r == -EHOSTUNREACH || r == -EAGAIN ||
	       r == -EIO || r == -EPROTO;
}

int k8s_watch(struct k8s_client *c, const struct k8s_ref *ref, const struct k8s_watch_opts *opts, k8s_event_fn fn,
	      void *userdata, struct k8s_status *ret_status)
{
	struct k8s_status local = { 0 }, *st = ret_status ? ret_status : &local;
	struct guard g = { .fn = fn, .userdata = userdata };
	char *rv = NULL;
	unsigned int streams = 0, failures = 0;
	int r;

	if (!c || !fn || !OPTS_VALID(opts, k8s_watch_opts))
		return -EINVAL;
	if (OPTS_GET(opts, resource_version, NULL) && !(rv = strdup(opts->resource_version)))
		return -ENOMEM;
	for (;;) {
		if (c->cancelled) {
			r = -ECANCELED;
			break;
		}
		if (!rv) {
			struct k8s_list_opts lo = {
				.sz = sizeof(lo),
				.label_selector = OPTS_GET(opts, label_selector, NULL),
				.field_selector = OPTS_GET(opts, field_selector, NULL),
				.limit = OPTS_GET(opts, list_limit, 0),
			};
			struct k8s_event ev = { .type = K8S_EVENT_RELIST };
			char *list_rv = NULL;

			if ((r = guarded(&ev, &g)))
				break;
			r = k8s_list(c, ref, &lo, relist_item, &g, &list_rv, st);
			if (r) {
				free(list_rv);
				if (g.stop)
					break;
				if (r < 0 && (curable(r) || r == -ESTALE) && !c->cancelled) {
					failures++;
					k8s_log(c, K8S_LOG_INFO, "list: %s; again in a while",
						st->message ? st->message : strerror(-r));
					k8s_sleep(c, k8s_backoff_ms(c, failures));
					continue;
				}
				break;
			}
			rv = list_rv;
			ev = (struct k8s_event){ .type = K8S_EVENT_SYNCED, .resource_version = rv };
			if ((r = guarded(&ev, &g)))
				break;
		}
		{
			uint64_t t0 = mono_ms();

			r = k8s_watch_once(c, ref, opts, &rv, guarded, &g, st);
			/* A stream the server ends at once is no progress: back
			 * off as after a failure. */
			if (r == 0 && mono_ms() - t0 < 1000)
				failures++;
			else if (r == 0)
				failures = 0;
		}
		streams++;
		if (g.stop || (r < 0 && !curable(r) && r != -ESTALE))
			break;
		if (r == -ESTALE) {
			k8s_log(c, K8S_LOG_INFO, "watch from resourceVersion %s: %s; listing again", rv,
				st->message ? st->message : "expired");
			free(rv);
			rv = NULL;
			failures = 0;
		} else if (r < 0) {
			failures++;
			k8s_log(c, K8S_LOG_INFO, "watch: %s; resuming from resourceVersion %s",
				st->message ? st->message : strerror(-r), rv);
		}
		if (OPTS_GET(opts, max_streams, 0) && streams >= opts->max_streams) {
			r = 0;
			k8s_status_clear(st);
			break;
		}
		if (failures)
			k8s_sleep(c, k8s_backoff_ms(c, failures));
	}
	free(rv);
	if (g.stop)
		r = g.stop;
	k8s_status_clear(&local);
	return r;
}
