/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The provider/v1 sandbox routes of flash-operator (private to operator/):
 * sandbox sessions (<flash/sandbox.h>) over HTTP, with streamed bodies
 * both ways.  Every route needs a token whose action is "sandbox"; a
 * session belongs to the organization and project of the token: its id is
 * "sb-", 16 hex digits of the tenant (flash_client_sandbox_id()), "-" and
 * the client's name, and an id of another tenant answers 404 exactly as an
 * unknown one.
 *
 *   GET    /provider/v1/sandboxes                 the tenant's sessions
 *   PUT    /provider/v1/sandboxes/ID              Provision {"spec": {...}, "ttl_s": N}
 *                                                 (201 made, 200 adopted)
 *   GET    /provider/v1/sandboxes/ID              info
 *   DELETE /provider/v1/sandboxes/ID              Reap (returns once gone)
 *   POST   /provider/v1/sandboxes/ID/exec         {"argv": [...], "env": [...], "cwd": C,
 *                                                 "stdin": BASE64, "timeout_ms": N}:
 *                                                 NDJSON lines {"stdout": B64}, {"stderr": B64},
 *                                                 last {"exit_code": N, "timed_out": B}
 *   GET    /provider/v1/sandboxes/ID/files?path=P[&max=N]   Read (octet stream; 413 before any byte)
 *   PUT    /provider/v1/sandboxes/ID/files?path=P           Write (Content-Length required)
 *   PUT    /provider/v1/sandboxes/ID/import?dir=D           Import a tar body
 *   GET    /provider/v1/sandboxes/ID/export?root=R          Export as tar
 *
 * A Reap revokes the session first (the backend's durable gate,
 * <flash/sandbox.h>): from then on every route but its info (200, "end":
 * "reaped", "end_reason": "reaping") and DELETE answers 409 "reaping",
 * and a Reap that failed half-way (or an operator that crashed there)
 * is completed by the next DELETE.
 *
 * Every answer about a session carries the header Flash-Sandbox-Expires-At
 * (unix seconds) and its JSON carries "expires_at" and, once the session
 * ended, "end" and "end_reason".
 *
 * Each request's operation runs on a thread of its own (at most max_ops
 * at once, 503 with Retry-After beyond); the libmicrohttpd side only moves
 * bytes through two bounded buffers and suspends the connection while
 * there is nothing to move, so neither a slow client nor a slow sandbox
 * holds a server thread.  A client that goes away makes the operation's
 * next read or write of the stream fail, which ends the operation (an
 * exec's command is killed by the provider); the session stays.
 */
#ifndef FLASH_OPERATOR_SANDBOX_HTTP_H
#define FLASH_OPERATOR_SANDBOX_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <microhttpd.h>
#include <flash/sandbox.h>

#include "provider.h"

#define OP_SANDBOX_API_PREFIX "/provider/v1/sandboxes"

struct op_sandbox_http_opts {
	size_t sz;
	unsigned int max_ops;          /* operations at once; 0: 32 */
	uint64_t write_max_bytes;      /* a Write's body; 0: 1 GiB */
	uint64_t import_max_bytes;     /* an Import's body; 0: 1 GiB */
	uint64_t read_max_bytes;       /* a Read's size gate (max= may lower it); 0: 64 MiB */
	size_t json_max_bytes;         /* a Provision's or Exec's JSON body; 0: 1 MiB */
	unsigned int exec_timeout_max_s; /* an Exec's timeout_ms bound; 0: 1800 */
	unsigned int exec_timeout_default_s; /* without timeout_ms; 0: 60 */
	uint32_t ttl_default_s;        /* a Provision without ttl_s; 0: 3600 */
	uint32_t ttl_max_s;            /* 0: 86400 */
	unsigned int retry_after;      /* seconds in 503 answers; 0: 2 */
	unsigned int transfer_timeout_s; /* a request's whole streamed transfer (a slow reader or
					    sender, however steady); 0: 3600 */
	struct op_sandbox_tenants *tenants; /* noted at each Provision (below); NULL: none */
	unsigned int max_ops_per_tenant; /* of max_ops, one organization+project's at once (a tenant
					    whose sandbox stalls its operations keeps only its own slots);
					    0: a quarter of max_ops, at least 1 */
};

/*
 * Whose session is being provisioned: the Provision route notes the
 * verified token's organization and project for the session id while the
 * backend provisions it, and the gVisor backend's tenant callback
 * (op_sandbox_gvisor_opts.tenant) reads them for the sandbox's identity
 * labels and policy namespace (the session id carries only a hash of
 * them).  Made by the daemon before either, freed after both.
 */
struct op_sandbox_tenants;
int op_sandbox_tenants_new(struct op_sandbox_tenants **ret);
void op_sandbox_tenants_free(struct op_sandbox_tenants *t);
/* The callback: -ENOENT when no Provision of @sid is in progress. */
int op_sandbox_tenants_lookup(void *t, const char *sid, char *org, size_t org_size, char *project,
			      size_t project_size);

struct op_sandbox_http;
struct op_sandbox_req;

/* Serves @sp (borrowed; outlives the routes) with tokens checked by @p
 * (borrowed).  -EINVAL, -ENOMEM. */
int op_sandbox_http_new(struct op_provider *p, struct flash_sandbox_provider *sp,
			const struct op_sandbox_http_opts *opts, struct op_sandbox_http **ret);

/* Is @url one of the sandbox routes' paths? */
bool op_sandbox_http_path(const char *url);

/* The first call of libmicrohttpd's access handler for a request whose
 * path op_sandbox_http_path() took: *ret_req is the request's state,
 * given to every later call (op_sandbox_http_step()) and to
 * op_sandbox_http_completed() when the request ends.  MHD_NO on a failure
 * to answer. */
enum MHD_Result op_sandbox_http_begin(struct op_sandbox_http *h, struct MHD_Connection *conn, const char *method,
				      const char *url, struct op_sandbox_req **ret_req);
/* The later calls: body bytes (*upload_size > 0) and the end of the
 * request. */
enum MHD_Result op_sandbox_http_step(struct op_sandbox_req *q, struct MHD_Connection *conn, const char *upload_data,
				     size_t *upload_size);
/* The connection is done with the request (answered or gone). */
void op_sandbox_http_completed(struct op_sandbox_req *q);

/* The body of POST .../exec, parsed and checked (what the route does
 * first; also the fuzz target's entry): argv (NULL-terminated, argv[0]
 * absolute, at most 4096), env ("NAME=VALUE"), cwd (absolute), stdin
 * (base64 decoded into @in), timeout_ms (1..@timeout_max_ms, else
 * @timeout_default_ms).  The strings point into @doc.  0, -EINVAL (@err
 * says what), -ENOMEM; op_sandbox_exec_body_clear() frees. */
struct json_value;
struct op_sandbox_exec_body {
	struct json_value *doc;
	const char **argv, **env;
	const char *cwd;
	unsigned char *in;
	size_t in_len;
	bool has_stdin;
	uint64_t timeout_ms;
};
int op_sandbox_exec_body_parse(const char *body, size_t len, uint64_t timeout_max_ms, uint64_t timeout_default_ms,
			       struct op_sandbox_exec_body *ret, char *err, size_t err_size);
void op_sandbox_exec_body_clear(struct op_sandbox_exec_body *b);
/* The body of PUT /provider/v1/sandboxes/ID: {"spec": OBJECT, "ttl_s":
 * 1..@ttl_max_s (else @ttl_default_s)}: the spec's JSON text in
 * *ret_spec (free()), the lifetime in *ret_ttl_s.  0, -EINVAL (@err says
 * what), -ENOMEM. */
int op_sandbox_provision_body_parse(const char *body, size_t len, uint32_t ttl_max_s, uint32_t ttl_default_s,
				    char **ret_spec, size_t *ret_spec_len, uint32_t *ret_ttl_s, char *err, size_t err_size);

/* Before the HTTP server stops: new requests are refused (503), the
 * running operations see their client gone, and every suspended
 * connection is resumed (libmicrohttpd may not stop with one). */
void op_sandbox_http_stop(struct op_sandbox_http *h);
/* Waits for the running operations and frees; NULL is fine. */
void op_sandbox_http_free(struct op_sandbox_http *h);

#endif
