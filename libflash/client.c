/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The provider/v1 client (<flash/client.h>): HTTP/1.1 over its own
 * connections (client-conn.c).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sodium.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>

#include "client-private.h"
#include "http-client.h"
#include "internal.h"
#include "json.h"
#include "id-hash.h"
#include "names.h"

#define ANSWER_MAX (16u << 20)
#define HEAD_MAX 16384
#define RETRY_AFTER_MAX 30

static char *dup_or_null(const char *s, bool *failed)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*failed = true;
	return d;
}

FLASH_API int flash_client_new(const struct flash_client_opts *opts, struct flash_client **ret_client)
{
	struct flash_client *c;
	bool failed = false;
	const char *ep;

	if (!opts || !OPTS_VALID(opts, flash_client_opts) || !opts->endpoint || !ret_client)
		return -EINVAL;
	ep = opts->endpoint;
	if (strncmp(ep, "unix:", 5) == 0) {
		if (ep[5] == '\0' || strlen(ep + 5) >= 108)
			return -EINVAL;
	} else if (strncmp(ep, "http://", 7) != 0 && strncmp(ep, "https://", 8) != 0) {
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (strncmp(ep, "unix:", 5) == 0) {
		c->unix_path = dup_or_null(ep + 5, &failed);
		c->base = dup_or_null("http://localhost", &failed);
		c->prefix = dup_or_null("", &failed);
	} else {
		c->base = dup_or_null(ep, &failed);
		/* No trailing '/': paths are appended. */
		while (c->base && c->base[0] && c->base[strlen(c->base) - 1] == '/')
			c->base[strlen(c->base) - 1] = '\0';
		c->tls = strncmp(ep, "https://", 8) == 0;
		if (c->tls && c->base) {
			/* libcurl makes the TLS connection to the authority; the
			 * path of the endpoint prefixes every request's. */
			const char *path = strchr(c->base + 8, '/');

			c->prefix = dup_or_null(path ? path : "", &failed);
		} else if (c->base) {
			int r = http_url_split(c->base, &c->host, &c->port, &c->prefix);

			if (r < 0) {
				flash_client_free(c);
				return r;
			}
		}
	}
	c->ca_file = dup_or_null(OPTS_GET(opts, ca_file, NULL), &failed);
	c->timeout_ms = OPTS_GET(opts, timeout_ms, 0) ?: 30000;
	c->retries = OPTS_GET(opts, retries, 0);
	if (failed) {
		flash_client_free(c);
		return -ENOMEM;
	}
	*ret_client = c;
	return 0;
}

FLASH_API void flash_client_free(struct flash_client *c)
{
	if (!c)
		return;
	free(c->base);
	free(c->unix_path);
	free(c->host);
	free(c->port);
	free(c->prefix);
	free(c->ca_file);
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	free(c->iss);
	free(c->aud);
	free(c->org);
	free(c->project);
	free(c);
}

FLASH_API int flash_client_set_token(struct flash_client *c, const char *token)
{
	size_t n, dots = 0;
	char *t;

	if (!c || !token)
		return -EINVAL;
	n = strlen(token);
	if (n == 0 || n > FLASH_AUTH_TOKEN_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char ch = token[i];

		if (ch == '.')
			dots++;
		else if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
			   ch == '_'))
			return -EINVAL;
	}
	if (dots != 2)
		return -EINVAL;
	t = strdup(token);
	if (!t)
		return -ENOMEM;
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	c->token = t;
	c->signer = NULL;
	return 0;
}

FLASH_API int flash_client_set_signer(struct flash_client *c, const struct flash_auth_signer *signer,
				      const struct flash_client_identity *id)
{
	char *iss, *aud, *org, *project = NULL;
	bool failed = false;

	if (!c || !signer || !id || !OPTS_VALID(id, flash_client_identity) || !id->issuer || !id->audience ||
	    !id->organization || !id->organization[0] || strlen(id->organization) > FLASH_AUTH_TENANT_MAX ||
	    (id->project && (!id->project[0] || strlen(id->project) > FLASH_AUTH_TENANT_MAX)) ||
	    !flash_auth_signer_kid(signer)[0])
		return -EINVAL;
	iss = dup_or_null(id->issuer, &failed);
	aud = dup_or_null(id->audience, &failed);
	org = dup_or_null(id->organization, &failed);
	project = dup_or_null(OPTS_GET(id, project, NULL), &failed);
	if (failed) {
		free(iss);
		free(aud);
		free(org);
		free(project);
		return -ENOMEM;
	}
	free(c->iss);
	free(c->aud);
	free(c->org);
	free(c->project);
	c->iss = iss;
	c->aud = aud;
	c->org = org;
	c->project = project;
	c->signer = signer;
	return 0;
}

/* ---------------------------------------------------------------- minting */

int client__mint(const struct flash_client *c, enum flash_auth_action action, bool has_gen, uint64_t gen, char **ret)
{
	struct json_writer *w = json_writer_new(0);
	char *claims = NULL;
	size_t len = 0;
	int64_t now = (int64_t)time(NULL);
	int r;

	jw_object_open(w);
	jw_kv_string(w, "iss", c->iss);
	jw_kv_string(w, "aud", c->aud);
	jw_kv_string(w, "action", flash_auth_action_name(action));
	jw_kv_string(w, "org", c->org);
	if (c->project)
		jw_kv_string(w, "project", c->project);
	jw_kv_int(w, "iat", now);
	jw_kv_int(w, "exp", now + FLASH_AUTH_LIFETIME_MAX);
	if (has_gen)
		jw_kv_uint(w, "gen", gen);
	jw_object_close(w);
	r = json_writer_finish(w, &claims, &len);
	if (r < 0)
		return r;
	r = flash_auth_signer_sign(c->signer, claims, len, ret);
	free(claims);
	return r;
}

/* ---------------------------------------------------------------- transport */

void client__parse_error(struct flash_client_response *r)
{
	struct json_value *doc = NULL;
	const struct json_value *e;
	const char *s;

	if (r->status < 400 || json_parse(r->body, r->len, NULL, &doc, NULL) < 0)
		return;
	e = json_get(doc, "error");
	if (json_get_string(json_get(e, "code"), &s) == 0)
		r->error_code = strdup(s);
	if (json_get_string(json_get(e, "message"), &s) == 0)
		r->error_message = strdup(s);
	json_free(doc);
}

/* The Host header: the endpoint's authority ("localhost" for unix:),
 * @ret_len bytes. */
static const char *host_of(const struct flash_client *c, int *ret_len)
{
	const char *h = strncmp(c->base, "https://", 8) == 0 ? c->base + 8 : c->base + 7;

	*ret_len = (int)strcspn(h, "/");
	return h;
}

/* Reads the whole answer (the operator closes after it) before @deadline. */
static int read_answer(struct client_conn *k, int64_t deadline, struct flash_client_response **ret)
{
	struct flash_client_response *resp;
	struct http_reply_head h;
	size_t len = 0, cap = 16384, blen;
	char *buf = malloc(cap + 1), *body;
	int r;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		size_t got = 0;

		if (len == cap) {
			char *nb;

			if (cap >= ANSWER_MAX + HEAD_MAX) {
				r = -E2BIG;
				goto out;
			}
			cap = cap * 4 > ANSWER_MAX + HEAD_MAX ? ANSWER_MAX + HEAD_MAX : cap * 4;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				r = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		r = client__conn_recv(k, buf + len, cap - len, &got);
		if (r == -EAGAIN) {
			r = http_wait_fd(k->fd, POLLIN, deadline);
			if (r < 0)
				goto out;
			continue;
		}
		if (r < 0) {
			r = len ? -EPROTO : -ECONNREFUSED;
			goto out;
		}
		if (got == 0)
			break;
		len += got;
	}
	if (len == 0) {
		/* Accepted and closed unanswered: stopping, or over its limit. */
		r = -ECONNREFUSED;
		goto out;
	}
	r = http_reply_parse(buf, len, HEAD_MAX, ANSWER_MAX, &h, &body, &blen);
	if (r < 0) {
		r = r == -E2BIG ? r : -EPROTO;
		goto out;
	}
	memmove(buf, body, blen);
	buf[blen] = '\0';
	resp = calloc(1, sizeof(*resp));
	if (!resp) {
		r = -ENOMEM;
		goto out;
	}
	resp->status = h.status;
	resp->body = buf;
	resp->len = blen;
	resp->retry_after = h.retry_after;
	buf = NULL;
	client__parse_error(resp);
	*ret = resp;
	r = 0;
out:
	free(buf);
	return r;
}

static int once(struct flash_client *c, const char *method, const char *path, enum flash_auth_action action,
		bool has_gen, uint64_t gen, const char *body, size_t body_len, struct flash_client_response **ret)
{
	struct client_conn k = { .fd = -1 };
	int64_t deadline = util_mono_ms() + c->timeout_ms;
	char *token = NULL, *req = NULL;
	const char *host;
	int r, n, hl;

	host = host_of(c, &hl);
	if (c->signer) {
		r = client__mint(c, action, has_gen, gen, &token);
		if (r < 0)
			return r;
	} else if (!c->token) {
		return -EINVAL;
	}
	if (body)
		n = asprintf(&req,
			     "%s %s%s HTTP/1.1\r\nHost: %.*s\r\nAuthorization: Bearer %s\r\n"
			     "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			     method, c->prefix, path, hl, host, token ? token : c->token, body_len);
	else
		n = asprintf(&req, "%s %s%s HTTP/1.1\r\nHost: %.*s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n",
			     method, c->prefix, path, hl, host, token ? token : c->token);
	if (n < 0) {
		req = NULL;
		r = -ENOMEM;
		goto out;
	}
	r = client__conn_open(c, deadline, &k);
	if (r < 0)
		goto out;
	r = client__conn_send_all(&k, req, (size_t)n, deadline);
	if (r == 0 && body)
		r = client__conn_send_all(&k, body, body_len, deadline);
	/* An operator that refuses early (a 413 for a body over its bound)
	 * answers and closes: its answer is read even when sending failed. */
	if (r < 0 && r != -EPIPE)
		goto out;
	r = read_answer(&k, deadline, ret);
out:
	client__conn_close(&k);
	if (req) {
		explicit_bzero(req, (size_t)n);
		free(req);
	}
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	return r;
}

static int call(struct flash_client *c, const char *method, const char *path, enum flash_auth_action action,
		bool has_gen, uint64_t gen, const char *body, size_t body_len, struct flash_client_response **ret)
{
	struct flash_client_response *resp = NULL;
	int r;

	if (!c || !ret)
		return -EINVAL;
	for (unsigned int attempt = 0;; attempt++) {
		r = once(c, method, path, action, has_gen, gen, body, body_len, &resp);
		if (r < 0)
			return r;
		if (resp->status != 503 || !resp->retry_after || attempt >= c->retries)
			break;
		sleep(resp->retry_after > RETRY_AFTER_MAX ? RETRY_AFTER_MAX : resp->retry_after);
		flash_client_response_free(resp);
		resp = NULL;
	}
	*ret = resp;
	return 0;
}

bool client__id_ok(const char *id)
{
	if (!id || !id[0] || strlen(id) > 64)
		return false;
	for (; *id; id++)
		if (!((*id >= 'a' && *id <= 'z') || (*id >= '0' && *id <= '9') || *id == '-'))
			return false;
	return true;
}

/* {"name": N, "spec": SPEC}: the spec must be one JSON value (checked
 * and written back by the writer). */
static int spec_body(const char *name, const char *spec, size_t spec_len, char **ret, size_t *ret_len)
{
	struct json_value *doc = NULL;
	struct json_writer *w;
	int r = json_parse(spec, spec_len, NULL, &doc, NULL);

	if (r < 0)
		return r == -EBADMSG ? -EINVAL : r;
	w = json_writer_new(0);
	jw_object_open(w);
	if (name)
		jw_kv_string(w, "name", name);
	jw_key(w, "spec");
	jw_value(w, doc);
	jw_object_close(w);
	json_free(doc);
	return json_writer_finish(w, ret, ret_len);
}

FLASH_API int flash_client_create(struct flash_client *c, const char *name, const char *spec, size_t spec_len,
				  uint64_t generation, struct flash_client_response **ret)
{
	char *body = NULL;
	size_t len = 0;
	int r;

	if (!c || !name || !name[0] || !spec || !ret)
		return -EINVAL;
	r = spec_body(name, spec, spec_len, &body, &len);
	if (r < 0)
		return r;
	r = call(c, "POST", "/provider/v1/services", FLASH_AUTH_ACTION_CREATE, true, generation, body, len, ret);
	free(body);
	return r;
}

FLASH_API int flash_client_update(struct flash_client *c, const char *service_id, const char *spec, size_t spec_len,
				  uint64_t generation, struct flash_client_response **ret)
{
	char *body = NULL, path[128];
	size_t len = 0;
	int r;

	if (!c || !client__id_ok(service_id) || !spec || !ret)
		return -EINVAL;
	r = spec_body(NULL, spec, spec_len, &body, &len);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/provider/v1/services/%s", service_id);
	r = call(c, "PUT", path, FLASH_AUTH_ACTION_UPDATE, true, generation, body, len, ret);
	free(body);
	return r;
}

FLASH_API int flash_client_delete(struct flash_client *c, const char *service_id, uint64_t generation,
				  struct flash_client_response **ret)
{
	char path[128];

	if (!c || !client__id_ok(service_id) || !ret)
		return -EINVAL;
	snprintf(path, sizeof(path), "/provider/v1/services/%s", service_id);
	return call(c, "DELETE", path, FLASH_AUTH_ACTION_DELETE, true, generation, NULL, 0, ret);
}

FLASH_API int flash_client_get(struct flash_client *c, const char *service_id, struct flash_client_response **ret)
{
	char path[128];

	if (!c || !client__id_ok(service_id) || !ret)
		return -EINVAL;
	snprintf(path, sizeof(path), "/provider/v1/services/%s", service_id);
	return call(c, "GET", path, FLASH_AUTH_ACTION_GET, false, 0, NULL, 0, ret);
}

FLASH_API int flash_client_list(struct flash_client *c, struct flash_client_response **ret)
{
	return call(c, "GET", "/provider/v1/services", FLASH_AUTH_ACTION_LIST, false, 0, NULL, 0, ret);
}

FLASH_API int flash_client_usage(struct flash_client *c, struct flash_client_response **ret)
{
	return call(c, "GET", "/provider/v1/usage", FLASH_AUTH_ACTION_USAGE, false, 0, NULL, 0, ret);
}

FLASH_API int flash_client_logs(struct flash_client *c, const char *service_id, int replica, const char *since,
				struct flash_client_response **ret)
{
	char path[256];
	size_t n;

	if (!c || !client__id_ok(service_id) || !ret || (since && (!since[0] || strlen(since) > 40 ||
							   since[strspn(since, "0123456789-:.TZ")])))
		return -EINVAL;
	n = (size_t)snprintf(path, sizeof(path), "/provider/v1/services/%s/logs", service_id);
	if (replica >= 0)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "?replica=%d", replica);
	if (since)
		snprintf(path + n, sizeof(path) - n, "%csince=%s", replica >= 0 ? '&' : '?', since);
	return call(c, "GET", path, FLASH_AUTH_ACTION_LOGS, false, 0, NULL, 0, ret);
}

/* ---------------------------------------------------------------- responses */

FLASH_API int flash_client_response_status(const struct flash_client_response *r)
{
	return r ? r->status : 0;
}

FLASH_API const char *flash_client_response_body(const struct flash_client_response *r, size_t *ret_len)
{
	if (!r)
		return NULL;
	if (ret_len)
		*ret_len = r->len;
	return r->body;
}

FLASH_API const char *flash_client_response_error_code(const struct flash_client_response *r)
{
	return r ? r->error_code : NULL;
}

FLASH_API const char *flash_client_response_error_message(const struct flash_client_response *r)
{
	return r ? r->error_message : NULL;
}

FLASH_API unsigned int flash_client_response_retry_after(const struct flash_client_response *r)
{
	return r ? r->retry_after : 0;
}

FLASH_API void flash_client_response_free(struct flash_client_response *r)
{
	if (!r)
		return;
	free(r->body);
	free(r->error_code);
	free(r->error_message);
	free(r);
}

/* ---------------------------------------------------------------- ids */

_Static_assert(FLASH_CLIENT_SERVICE_ID_STRLEN == NAMES_SERVICE_ID_LEN + 1, "a service id and its NUL");

FLASH_API int flash_client_service_id(const char *organization, const char *project, const char *name,
				      char ret[FLASH_CLIENT_SERVICE_ID_STRLEN])
{
	const char *parts[] = { "flash-service-id/1", organization, project, name };
	const size_t prefix = sizeof(NAMES_SERVICE_ID_PREFIX) - 1;
	unsigned char h[32];
	int r;

	if (!organization || !project || !name || !ret)
		return -EINVAL;
	r = id_hash_parts(parts, sizeof(parts) / sizeof(parts[0]), h, sizeof(h));
	if (r < 0)
		return r;
	memcpy(ret, NAMES_SERVICE_ID_PREFIX, prefix);
	sodium_bin2hex(ret + prefix, FLASH_CLIENT_SERVICE_ID_STRLEN - prefix, h, (NAMES_SERVICE_ID_LEN - prefix) / 2);
	return 0;
}
