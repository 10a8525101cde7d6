/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Kubernetes client (common/k8s.h): the handle, API paths, and the
 * single-object calls (get, create, replace, apply, patch, delete).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "k8s-request.h"
#include "names.h"
#include "util.h"

static void blob_set(struct curl_blob *b, const char *pem, size_t len)
{
	b->data = (void *)pem;
	b->len = len;
	b->flags = CURL_BLOB_COPY;
}

void k8s_client_free(struct k8s_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->server);
	free(c->namespace);
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	free(c->token_file);
	free(c->user_agent);
	free(c);
}

void k8s_client_cancel(struct k8s_client *c)
{
	if (c)
		c->cancelled = 1;
}

void k8s_client_reset_cancel(struct k8s_client *c)
{
	if (c)
		c->cancelled = 0;
}

const char *k8s_client_namespace(const struct k8s_client *c)
{
	return c && c->namespace ? c->namespace : "default";
}

static unsigned int pick(unsigned int v, unsigned int def)
{
	return v ? v : def;
}

int k8s_client_new(const struct k8s_config *cfg, const struct k8s_client_opts *opts, struct k8s_client **ret)
{
	struct k8s_client *c;
	struct timespec ts;
	int r = -ENOMEM;

	if (!cfg || !ret || !cfg->server || !OPTS_VALID(opts, k8s_client_opts))
		return -EINVAL;
	if (!k8s_server_url_valid(cfg->server))
		return -EINVAL;
	if (!cfg->client_cert_pem != !cfg->client_key_pem)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (opts)
		memcpy(&c->o, opts, opts->sz < sizeof(c->o) ? opts->sz : sizeof(c->o));
	c->o.sz = sizeof(c->o);
	c->o.connect_timeout_ms = pick(c->o.connect_timeout_ms, 5000);
	c->o.request_timeout_ms = pick(c->o.request_timeout_ms, 30000);
	c->o.watch_idle_ms = pick(c->o.watch_idle_ms, 90000);
	c->o.watch_timeout_s = pick(c->o.watch_timeout_s, 300);
	c->o.max_attempts = pick(c->o.max_attempts, 5);
	c->o.backoff_ms = pick(c->o.backoff_ms, 250);
	c->o.backoff_max_ms = pick(c->o.backoff_max_ms, 30000);
	if (!c->o.max_body)
		c->o.max_body = K8S_DEFAULT_MAX_BODY;
	if (!c->o.max_watch_line)
		c->o.max_watch_line = K8S_DEFAULT_MAX_WATCH_LINE;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	c->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^ (uintptr_t)c;
	if (!c->rng)
		c->rng = 1;
	if (!(c->server = strdup(cfg->server)) ||
	    !(c->user_agent = strdup(c->o.user_agent ? c->o.user_agent : "flash-k8s-client")) ||
	    (cfg->namespace && !(c->namespace = strdup(cfg->namespace))) ||
	    (cfg->token && !(c->token = strdup(cfg->token))) ||
	    (cfg->token_file && !(c->token_file = strdup(cfg->token_file))))
		goto fail;
	c->o.user_agent = NULL;
	for (size_t n = strlen(c->server); n > 8 && c->server[n - 1] == '/'; n--)
		c->server[n - 1] = '\0';
	c->curl = curl_easy_init();
	if (!c->curl)
		goto fail;
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c->curl, CURLOPT_REDIR_PROTOCOLS_STR, "");
	curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)c->o.connect_timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	/* No proxy from the environment: the API server is reached directly,
	 * and a bearer token never goes to a proxy nobody configured here. */
	curl_easy_setopt(c->curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c->curl, CURLOPT_ACCEPT_ENCODING, NULL);
	if (cfg->ca_pem) {
		blob_set(&c->ca, cfg->ca_pem, cfg->ca_pem_len);
		if (curl_easy_setopt(c->curl, CURLOPT_CAINFO_BLOB, &c->ca) != CURLE_OK) {
			r = -EOPNOTSUPP;
			goto fail;
		}
	}
	if (cfg->insecure_skip_tls_verify) {
		curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (cfg->client_cert_pem) {
		blob_set(&c->cert, cfg->client_cert_pem, cfg->client_cert_pem_len);
		blob_set(&c->key, cfg->client_key_pem, cfg->client_key_pem_len);
		if (curl_easy_setopt(c->curl, CURLOPT_SSLCERT_BLOB, &c->cert) != CURLE_OK ||
		    curl_easy_setopt(c->curl, CURLOPT_SSLCERTTYPE, "PEM") != CURLE_OK ||
		    curl_easy_setopt(c->curl, CURLOPT_SSLKEY_BLOB, &c->key) != CURLE_OK ||
		    curl_easy_setopt(c->curl, CURLOPT_SSLKEYTYPE, "PEM") != CURLE_OK) {
			r = -EOPNOTSUPP;
			goto fail;
		}
	}
	/* The blobs were copied by curl: drop our pointers to the caller's. */
	memset(&c->ca, 0, sizeof(c->ca));
	memset(&c->cert, 0, sizeof(c->cert));
	memset(&c->key, 0, sizeof(c->key));
	if (c->token_file) {
		/* Read at the first request; here a missing or unreadable file
		 * fails early. */
		struct stat st;
		int fd = util_open_regular(c->token_file, 0, &st);

		if (fd < 0) {
			r = fd;
			goto fail;
		}
		close(fd);
		if (c->token) {
			explicit_bzero(c->token, strlen(c->token));
			free(c->token);
			c->token = NULL;
		}
	}
	*ret = c;
	return 0;
fail:
	k8s_client_free(c);
	return r;
}

/* A resource or subresource: lower-case DNS label. */
static bool resource_valid(const char *s)
{
	return s && names_dns_label_valid(s);
}

int k8s_ref_path(const struct k8s_ref *ref, char **ret_path)
{
	bool core;

	if (!ref || !ret_path || !ref->version || !names_dns_label_valid(ref->version) || !resource_valid(ref->resource))
		return -EINVAL;
	core = !ref->group || !ref->group[0];
	if (!core && !names_dns_subdomain_valid(ref->group))
		return -EINVAL;
	if (ref->namespace && !names_dns_label_valid(ref->namespace))
		return -EINVAL;
	/* Object names: DNS subdomains for most kinds; a few (Events use
	 * "<object>.<hash>") still fit.  '/' and '%' can never appear. */
	if (ref->name && !names_dns_subdomain_valid(ref->name))
		return -EINVAL;
	if (ref->subresource && (!ref->name || !resource_valid(ref->subresource)))
		return -EINVAL;
	{
		char *p;
		int n = asprintf(&p, "%s%s%s/%s%s%s/%s%s%s%s%s", core ? "/api" : "/apis/", core ? "" : ref->group,
				 "", ref->version, ref->namespace ? "/namespaces/" : "",
				 ref->namespace ? ref->namespace : "", ref->resource, ref->name ? "/" : "",
				 ref->name ? ref->name : "", ref->subresource ? "/" : "",
				 ref->subresource ? ref->subresource : "");
		if (n < 0)
			return -ENOMEM;
		*ret_path = p;
	}
	return 0;
}

/* The path of @ref and the query of @opts. */
static int write_query(const struct k8s_ref *ref, const struct k8s_write_opts *opts, bool apply, char **ret)
{
	_cleanup_free_ char *path = NULL;
	struct k8s_query q;
	int r;

	if (!OPTS_VALID(opts, k8s_write_opts))
		return -EINVAL;
	if ((r = k8s_ref_path(ref, &path)) < 0)
		return r;
	if (apply && (!OPTS_GET(opts, field_manager, NULL) || !opts->field_manager[0]))
		return -EINVAL;
	if (OPTS_GET(opts, field_manager, NULL) && strlen(opts->field_manager) > 128)
		return -EINVAL;
	k8s_query_init(&q);
	k8s_query_add(&q, "fieldManager", OPTS_GET(opts, field_manager, NULL));
	if (apply && OPTS_GET(opts, force, false))
		k8s_query_add(&q, "force", "true");
	if (OPTS_GET(opts, dry_run, false))
		k8s_query_add(&q, "dryRun", "All");
	k8s_query_add(&q, "fieldValidation", OPTS_GET(opts, field_validation, NULL));
	return k8s_query_finish(&q, path, ret);
}

/* Runs @req and parses its 2xx body into *ret_obj (when not NULL). */
static int run(struct k8s_client *c, struct k8s_req *req, struct json_value **ret_obj, struct k8s_status *st)
{
	struct k8s_status local = { 0 };
	struct json_value *obj = NULL;
	int r;

	if (!st)
		st = &local;
	r = k8s_request(c, req, st);
	if (r == 0 && ret_obj) {
		r = k8s_body_parse(c, req->resp, req->resp_len, &obj);
		if (r < 0) {
			k8s_status_clear(st);
			st->code = (int)req->status;
			st->message = strdup("the answer is not a JSON object");
		}
	}
	k8s_req_done(req);
	free(req->path_query);
	k8s_status_clear(&local);
	if (r == 0 && ret_obj)
		*ret_obj = obj;
	return r;
}

int k8s_get(struct k8s_client *c, const struct k8s_ref *ref, struct json_value **ret_obj, struct k8s_status *ret_status)
{
	struct k8s_req req = { .method = "GET" };
	int r;

	if (!c || !ref || !ref->name)
		return -EINVAL;
	k8s_status_clear(ret_status);
	if ((r = k8s_ref_path(ref, &req.path_query)) < 0)
		return r;
	return run(c, &req, ret_obj, ret_status);
}

int k8s_get_path(struct k8s_client *c, const char *path, struct json_value **ret_obj, struct k8s_status *ret_status)
{
	struct k8s_req req = { .method = "GET" };

	if (!c || !path || path[0] != '/' || strpbrk(path, "?# \t\r\n"))
		return -EINVAL;
	k8s_status_clear(ret_status);
	if (!(req.path_query = strdup(path)))
		return -ENOMEM;
	return run(c, &req, ret_obj, ret_status);
}

static int write_call(struct k8s_client *c, const char *method, const struct k8s_ref *ref, const char *ctype,
		      enum k8s_retry retry, bool apply, const char *body, size_t len, const struct k8s_write_opts *opts,
		      struct json_value **ret_obj, struct k8s_status *st)
{
	struct k8s_req req = {
		.method = method, .content_type = ctype, .body = body, .body_len = len, .retry = retry,
	};
	int r;

	if (!c || !ref || !body)
		return -EINVAL;
	k8s_status_clear(st);
	if ((r = write_query(ref, opts, apply, &req.path_query)) < 0)
		return r;
	return run(c, &req, ret_obj, st);
}

int k8s_create(struct k8s_client *c, const struct k8s_ref *ref, const char *body, size_t len,
	       const struct k8s_write_opts *opts, struct json_value **ret_obj, struct k8s_status *ret_status)
{
	if (ref && ref->name)
		return -EINVAL;
	return write_call(c, "POST", ref, "application/json", K8S_RETRY_NOT_SENT, false, body, len, opts, ret_obj,
			  ret_status);
}

int k8s_replace(struct k8s_client *c, const struct k8s_ref *ref, const char *body, size_t len,
		const struct k8s_write_opts *opts, struct json_value **ret_obj, struct k8s_status *ret_status)
{
	if (ref && !ref->name)
		return -EINVAL;
	return write_call(c, "PUT", ref, "application/json", K8S_RETRY_IDEMPOTENT, false, body, len, opts, ret_obj,
			  ret_status);
}

int k8s_apply(struct k8s_client *c, const struct k8s_ref *ref, const char *body, size_t len,
	      const struct k8s_write_opts *opts, struct json_value **ret_obj, struct k8s_status *ret_status)
{
	if (ref && !ref->name)
		return -EINVAL;
	return write_call(c, "PATCH", ref, "application/apply-patch+yaml", K8S_RETRY_IDEMPOTENT, true, body, len, opts,
			  ret_obj, ret_status);
}

int k8s_status_write(struct k8s_client *c, const struct k8s_ref *ref, const char *body, size_t len,
		     const struct k8s_write_opts *opts, struct json_value **ret_obj, struct k8s_status *ret_status)
{
	struct k8s_ref r;

	if (!ref || (ref->subresource && strcmp(ref->subresource, "status") != 0))
		return -EINVAL;
	r = *ref;
	r.subresource = "status";
	return k8s_apply(c, &r, body, len, opts, ret_obj, ret_status);
}

int k8s_patch(struct k8s_client *c, const struct k8s_ref *ref, enum k8s_patch_type type, const char *body,
	      size_t len, const struct k8s_write_opts *opts, struct json_value **ret_obj, struct k8s_status *ret_status)
{
	const char *ctype;

	switch (type) {
	case K8S_PATCH_MERGE:
		ctype = "application/merge-patch+json";
		break;
	case K8S_PATCH_STRATEGIC:
		ctype = "application/strategic-merge-patch+json";
		break;
	case K8S_PATCH_JSON:
		ctype = "application/json-patch+json";
		break;
	default:
		return -EINVAL;
	}
	if (ref && !ref->name)
		return -EINVAL;
	if (OPTS_GET(opts, force, false))
		return -EINVAL; /* force is an apply parameter */
	return write_call(c, "PATCH", ref, ctype, type == K8S_PATCH_JSON ? K8S_RETRY_NOT_SENT : K8S_RETRY_IDEMPOTENT,
			  false, body, len, opts, ret_obj, ret_status);
}

int k8s_delete(struct k8s_client *c, const struct k8s_ref *ref, const struct k8s_delete_opts *opts,
	       struct json_value **ret_obj, struct k8s_status *ret_status)
{
	static const char *const policies[] = { "Foreground", "Background", "Orphan" };
	_cleanup_free_ char *path = NULL;
	struct k8s_req req = { .method = "DELETE" };
	const char *policy = OPTS_GET(opts, propagation_policy, NULL);
	int64_t grace = OPTS_GET(opts, grace_period_seconds, -1);
	struct k8s_query q;
	bool known = !policy;
	int r;

	if (!c || !ref || !ref->name || !OPTS_VALID(opts, k8s_delete_opts))
		return -EINVAL;
	for (size_t i = 0; policy && i < ARRAY_SIZE(policies); i++)
		known |= strcmp(policy, policies[i]) == 0;
	if (!known)
		return -EINVAL;
	k8s_status_clear(ret_status);
	if ((r = k8s_ref_path(ref, &path)) < 0)
		return r;
	k8s_query_init(&q);
	k8s_query_add(&q, "propagationPolicy", policy);
	if (grace >= 0)
		k8s_query_add_uint(&q, "gracePeriodSeconds", (uint64_t)grace);
	if (OPTS_GET(opts, dry_run, false))
		k8s_query_add(&q, "dryRun", "All");
	if ((r = k8s_query_finish(&q, path, &req.path_query)) < 0)
		return r;
	return run(c, &req, ret_obj, ret_status);
}
