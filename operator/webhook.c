/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The validating admission webhook (webhook.h): AdmissionReview v1 in,
 * flash_spec_parse() on the FlashService's spec, AdmissionReview out.
 */
#include "config.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <flash/diag.h>
#include <flash/spec.h>

#include "http.h"
#include "http-server.h"
#include "json.h"
#include "util.h"
#include "webhook.h"

#define FLASH_GROUP "flash.heterocloud.io"

static int bad_review(char *err, size_t err_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad_review(char *err, size_t err_size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, err_size, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static const char *string_at(const struct json_value *root, const char *path)
{
	const struct json_value *v = json_at(root, path);

	return v && json_is(v, JSON_STRING) && !v->u.string.has_nul ? json_string_value(v) : NULL;
}

/* "spec" or "spec.PATH" / "spec[...]" for a validator path. */
static void field_of(const struct flash_diag_entry *e, char *buf, size_t size)
{
	if (!e->path || !e->path[0])
		snprintf(buf, size, "spec");
	else
		snprintf(buf, size, "spec%s%s", e->path[0] == '[' ? "" : ".", e->path);
}

/* The response of @uid: allowed, or denied with the errors of @diag;
 * the warnings of @diag either way. */
static int answer(const char *uid, bool allowed, const struct flash_diag *diag, char **ret_json, size_t *ret_len)
{
	struct json_writer *w = json_writer_new(0);
	size_t n = flash_diag_count(diag), warnings = 0;

	if (!w)
		return -ENOMEM;
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", "admission.k8s.io/v1");
	jw_kv_string(w, "kind", "AdmissionReview");
	jw_key(w, "response");
	jw_object_open(w);
	jw_kv_string(w, "uid", uid);
	jw_kv_bool(w, "allowed", allowed);
	if (!allowed) {
		char *msg = NULL;
		size_t msg_len = 0, errors = 0;
		FILE *f = open_memstream(&msg, &msg_len);

		if (!f) {
			json_writer_free(w);
			return -ENOMEM;
		}
		for (size_t i = 0; i < n; i++) {
			const struct flash_diag_entry *e = flash_diag_get(diag, i);
			char field[512];

			if (e->severity != FLASH_DIAG_ERROR)
				continue;
			field_of(e, field, sizeof(field));
			fprintf(f, "%s%s: %s", errors++ ? "; " : "", field, e->message);
		}
		if (flash_diag_dropped(diag))
			fprintf(f, "; and %zu more", flash_diag_dropped(diag));
		if (fclose(f) != 0 || !msg) {
			free(msg);
			json_writer_free(w);
			return -ENOMEM;
		}
		jw_key(w, "status");
		jw_object_open(w);
		jw_kv_int(w, "code", 422);
		jw_kv_string(w, "reason", "Invalid");
		jw_kv_string(w, "message", msg_len ? msg : "spec: refused by the Flash spec validator");
		jw_key(w, "details");
		jw_object_open(w);
		jw_key(w, "causes");
		jw_array_open(w);
		for (size_t i = 0; i < n; i++) {
			const struct flash_diag_entry *e = flash_diag_get(diag, i);
			char field[512];

			if (e->severity != FLASH_DIAG_ERROR)
				continue;
			field_of(e, field, sizeof(field));
			jw_object_open(w);
			jw_kv_string(w, "reason", "FieldValueInvalid");
			jw_kv_string(w, "message", e->message);
			jw_kv_string(w, "field", field);
			jw_object_close(w);
		}
		jw_array_close(w);
		jw_object_close(w);
		jw_object_close(w);
		free(msg);
	}
	for (size_t i = 0; i < n; i++)
		warnings += flash_diag_get(diag, i)->severity == FLASH_DIAG_WARNING;
	if (warnings) {
		jw_key(w, "warnings");
		jw_array_open(w);
		for (size_t i = 0; i < n; i++) {
			const struct flash_diag_entry *e = flash_diag_get(diag, i);
			char field[512], text[1024];

			if (e->severity != FLASH_DIAG_WARNING)
				continue;
			field_of(e, field, sizeof(field));
			snprintf(text, sizeof(text), "%s: %s", field, e->message);
			jw_string(w, text);
		}
		jw_array_close(w);
	}
	jw_object_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret_json, ret_len);
}

int op_webhook_review(const char *body, size_t len, char **ret_json, size_t *ret_len, char *err, size_t err_size)
{
	struct json_value *root = NULL;
	const struct json_value *req, *spec;
	const char *uid, *op, *s;
	struct flash_diag *diag = NULL;
	struct flash_spec *parsed = NULL;
	struct json_writer *w;
	char *text = NULL;
	size_t text_len = 0;
	bool allowed = true;
	int r;

	if (!body || !ret_json)
		return -EINVAL;
	if (json_parse(body, len, NULL, &root, NULL) < 0 || !json_is(root, JSON_OBJECT)) {
		r = bad_review(err, err_size, "the body is not a JSON object");
		goto out;
	}
	if (!(s = string_at(root, "apiVersion")) || strcmp(s, "admission.k8s.io/v1") != 0 ||
	    !(s = string_at(root, "kind")) || strcmp(s, "AdmissionReview") != 0) {
		r = bad_review(err, err_size, "not an admission.k8s.io/v1 AdmissionReview");
		goto out;
	}
	req = json_get(root, "request");
	uid = string_at(req, "uid");
	if (!req || !json_is(req, JSON_OBJECT) || !uid || !uid[0] || strlen(uid) > 128) {
		r = bad_review(err, err_size, "request.uid: required (a string of at most 128 bytes)");
		goto out;
	}
	if (!(s = string_at(req, "kind.group")) || strcmp(s, FLASH_GROUP) != 0 || !(s = string_at(req, "kind.kind")) ||
	    strcmp(s, "FlashService") != 0) {
		r = bad_review(err, err_size, "request.kind: this webhook validates " FLASH_GROUP " FlashService only");
		goto out;
	}
	op = string_at(req, "operation");
	if (!op) {
		r = bad_review(err, err_size, "request.operation: required");
		goto out;
	}
	r = flash_diag_new(&diag);
	if (r < 0)
		goto out;
	/* DELETE and CONNECT carry no new object to check. */
	if (strcmp(op, "CREATE") == 0 || strcmp(op, "UPDATE") == 0) {
		spec = json_at(req, "object.spec");
		if (!spec) {
			r = bad_review(err, err_size, "request.object.spec: required for %s", op);
			goto out;
		}
		w = json_writer_new(0);
		if (!w) {
			r = -ENOMEM;
			goto out;
		}
		jw_value(w, spec);
		r = json_writer_finish(w, &text, &text_len);
		if (r < 0)
			goto out;
		r = flash_spec_parse(text, text_len, NULL, &parsed, diag);
		if (r == -ENOMEM || r == -EINVAL)
			goto out;
		allowed = r == 0;
	}
	r = answer(uid, allowed, diag, ret_json, ret_len);
out:
	flash_spec_free(parsed);
	flash_diag_free(diag);
	free(text);
	json_free(root);
	return r;
}

/* ------------------------------------------------------------ the listener */

struct op_webhook {
	struct http_server *door;
	size_t max_body;
	uint16_t port;
	char *cert, *key;
	size_t key_len;
};

struct pending {
	struct http_body body;
};

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned int status, const char *type, const char *body,
				 size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", type);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned int status, const char *msg)
{
	char body[768];

	snprintf(body, sizeof(body), "%s\n", msg);
	return send_text(conn, status, "text/plain; charset=utf-8", body, strlen(body));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct op_webhook *wh = cls;
	struct pending *pd = *con_cls;
	char err[512] = "", *json = NULL;
	size_t json_len = 0;
	enum MHD_Result ret;
	int r;

	(void)version;
	if (!pd) {
		pd = calloc(1, sizeof(*pd));
		if (!pd)
			return MHD_NO;
		*con_cls = pd;
		return MHD_YES;
	}
	if (*upload_size) {
		if (http_body_feed(&pd->body, upload_data, *upload_size, wh->max_body) < 0)
			return MHD_NO;
		*upload_size = 0;
		return MHD_YES;
	}
	/* The API server adds ?timeout=5s: the path alone decides. */
	if (strcmp(url, OP_WEBHOOK_PATH) != 0)
		return send_error(conn, 404, "no such route: the webhook serves POST " OP_WEBHOOK_PATH);
	if (strcmp(method, "POST") != 0)
		return send_error(conn, 405, "only POST");
	if (pd->body.too_large)
		return send_error(conn, 413, "the AdmissionReview is larger than the webhook's body bound");
	r = op_webhook_review(pd->body.data ? pd->body.data : "", pd->body.len, &json, &json_len, err, sizeof(err));
	if (r == -EBADMSG)
		return send_error(conn, 400, err);
	if (r < 0)
		return send_error(conn, 500, strerror(-r));
	ret = send_text(conn, 200, "application/json", json, json_len);
	free(json);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct pending *pd = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (pd) {
		http_body_free(&pd->body);
		free(pd);
		*con_cls = NULL;
	}
}

int op_webhook_start(const struct op_webhook_opts *opts, struct op_webhook **ret, char *err, size_t err_size)
{
	struct http_server_opts so = {
		.sz = sizeof(so),
		.max_connections = OPTS_GET(opts, max_connections, 0) ?: 64,
		.header_timeout_ms = OPTS_GET(opts, header_timeout_ms, 0) ?: 5000,
		.idle_timeout_s = 10,
		.threads = 2,
		.handler = on_request,
		.completed = on_completed,
	};
	struct op_webhook *wh;
	size_t cert_len = 0;
	int r, fd;

	if (!opts || !OPTS_VALID(opts, op_webhook_opts) || !ret || !opts->listen || !opts->cert_file ||
	    !opts->key_file)
		return -EINVAL;
	wh = calloc(1, sizeof(*wh));
	if (!wh)
		return -ENOMEM;
	wh->max_body = OPTS_GET(opts, max_body_bytes, 0) ?: 4u << 20;
	r = op_http_read_pem(opts->cert_file, false, &wh->cert, &cert_len, err, err_size);
	if (r == 0)
		r = op_http_read_pem(opts->key_file, true, &wh->key, &wh->key_len, err, err_size);
	if (r < 0)
		goto fail;
	r = http_server_new(&so, &wh->door);
	if (r < 0) {
		snprintf(err, err_size, "webhook: cannot set up the HTTP server: %s", strerror(-r));
		goto fail;
	}
	fd = op_http_tcp_listen(opts->listen, &wh->port, err, err_size);
	if (fd < 0) {
		r = fd;
		goto fail;
	}
	r = http_server_listen_tls(wh->door, fd, wh, wh->cert, cert_len, wh->key, wh->key_len);
	if (r == 0)
		r = http_server_start(wh->door);
	if (r < 0) {
		snprintf(err, err_size, "webhook %s: cannot start%s", opts->listen,
			 r == -EINVAL ? ": the TLS certificate and key are not usable together" : "");
		goto fail;
	}
	*ret = wh;
	return 0;
fail:
	op_webhook_stop(wh);
	return r;
}

uint16_t op_webhook_port(const struct op_webhook *wh)
{
	return wh ? wh->port : 0;
}

void op_webhook_stop(struct op_webhook *wh)
{
	if (!wh)
		return;
	http_server_free(wh->door);
	free(wh->cert);
	if (wh->key) {
		explicit_bzero(wh->key, wh->key_len);
		free(wh->key);
	}
	free(wh);
}
