/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Kubernetes client's transport (private to common/k8s-*.c): one
 * request with its bounded retries over the client's reused curl handle,
 * the answer's body bounded, Warning headers logged, Retry-After kept,
 * the bearer token re-read when its file changes.  A streaming request
 * (a watch) hands its body to a sink as it arrives.
 */
#ifndef FLASH_COMMON_K8S_REQUEST_H
#define FLASH_COMMON_K8S_REQUEST_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "k8s.h"
#include "util.h"

struct k8s_client {
	CURL *curl;
	char *server;
	char *namespace;
	char *token;                /* the static token, or the token file's last contents */
	char *token_file;
	struct stat token_st;       /* of the file when read */
	char *user_agent;
	struct curl_blob ca, cert, key;
	struct k8s_client_opts o;   /* defaults filled */
	volatile sig_atomic_t cancelled;
	uint64_t rng;               /* jitter */
};

/* Whether a request may be sent again after it went out. */
enum k8s_retry {
	K8S_RETRY_IDEMPOTENT = 0,   /* GET, PUT, DELETE, apply, merge and strategic patches */
	K8S_RETRY_NOT_SENT,         /* POST, JSON patch: only when not sent, or after 429 */
};

/* Receives a streamed body (status 200 only); nonzero stops the transfer
 * (kept in req->sink_stop). */
typedef int (*k8s_sink_fn)(const char *data, size_t len, void *userdata);

struct k8s_req {
	const char *method;
	char *path_query;           /* "/api/v1/pods?watch=1", owned by the caller */
	const char *content_type;   /* NULL: no body */
	const char *body;
	size_t body_len;
	enum k8s_retry retry;
	bool stream;                /* a watch: no whole-request timeout, idle bound, body to @sink */
	bool no_idle;               /* stream: no idle bound either (a followed log) */
	k8s_sink_fn sink;
	void *sink_userdata;
	/* Out: */
	long status;
	char *resp;                 /* the body (non-stream answers, and error answers of streams) */
	size_t resp_len;
	int sink_stop;              /* what the sink returned when it stopped the transfer */
};

/* Sends @req, retrying as the header says (k8s.h): 0 with req->status
 * 2xx, or the errno of the refusal with *st filled.  One attempt when
 * req->stream (the watch loop resumes by itself). */
int k8s_request(struct k8s_client *c, struct k8s_req *req, struct k8s_status *st);
/* "Authorization: Bearer TOKEN" for a request made outside k8s_request()
 * (the exec upgrade), the token file re-read when it changed: *ret
 * (wipe and free it) is NULL when the client has no token.  -ENOMEM. */
int k8s_auth_header(struct k8s_client *c, char **ret);
void k8s_req_done(struct k8s_req *req);

/* The errno of a failed transfer (k8s.h's transport errors). */
int k8s_curl_errno(CURLcode cc);

/* "?k=v&k=v" built up with escaped values (NULL values skipped). */
struct k8s_query {
	struct util_buf b;
	bool sep;
	bool oom;
};
void k8s_query_init(struct k8s_query *q);
void k8s_query_add(struct k8s_query *q, const char *key, const char *value);
void k8s_query_add_uint(struct k8s_query *q, const char *key, uint64_t value);
/* "@path?query" in *ret (just @path when no argument was added); frees
@q's text.  -ENOMEM when something failed. */
int k8s_query_finish(struct k8s_query *q, const char *path, char **ret);

/* Parses a 2xx body (bounded by the client's limits) into *ret: -EBADMSG
 * when it is not a JSON object. */
int k8s_body_parse(const struct k8s_client *c, const char *body, size_t len, struct json_value **ret);

/* The retry sleep: the caller's clock or nanosleep slices that
 * k8s_client_cancel() cuts short. */
void k8s_sleep(struct k8s_client *c, unsigned int ms);
/* The delay before retry @attempt (1-based): exponential with jitter. */
unsigned int k8s_backoff_ms(struct k8s_client *c, unsigned int attempt);
void k8s_log(const struct k8s_client *c, enum k8s_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
