/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/client.h> — a client of flash-operator's provider/v1 API.
 *
 * The one place that speaks provider/v1 (flashctl is built on it): it
 * sends create, update, delete, get, list and usage over HTTP/1.1 to a
 * Unix socket, a TCP host, or HTTPS (libcurl, loaded on the first https://
 * connection), one connection per request, with a bearer token that is either given as is
 * (an API token minted for the action) or minted per request from an
 * Ed25519 signing key (60-second lifetime, the action of the request, the
 * organization and project, the generation of a mutation).
 *
 * A call returns 0 when the operator answered, whatever the HTTP status;
 * the answer (status, body, the stable error code of an error answer,
 * Retry-After) is in a struct flash_client_response.  Answers 503 with
 * Retry-After are retried up to opts->retries times, waiting what the
 * operator asks (at most 30 s each).  Negative returns are transport
 * errors: -ECONNREFUSED, -ENOENT (no such socket), -ETIMEDOUT,
 * -EPROTO (TLS or HTTP failure, or an answer that is not JSON), -EINVAL,
 * -ENOMEM, -E2BIG (an answer larger than 16 MiB).
 *
 * A struct flash_client is not thread-safe: use one per thread.
 */
#ifndef FLASH_CLIENT_H
#define FLASH_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <flash/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct flash_auth_signer;

struct flash_client_opts {
	size_t sz;
	/* "http://HOST:PORT", "https://HOST:PORT" or "unix:PATH"; required. */
	const char *endpoint;
	const char *ca_file;       /* PEM bundle for https; NULL: system CAs */
	unsigned int timeout_ms;   /* per attempt; 0: 30000 */
	unsigned int retries;      /* retries of 503 answers; 0: none */
};

struct flash_client;

/* Creates a client.  Returns 0 and *ret_client (flash_client_free()),
 * -EINVAL (no or malformed endpoint), -ENOMEM. */
FLASH_API FLASH_WUR int flash_client_new(const struct flash_client_opts *opts, struct flash_client **ret_client);
FLASH_API void flash_client_free(struct flash_client *c);

/* Every request carries @token as it is (copied).  Returns 0, -EINVAL
 * (empty, longer than FLASH_AUTH_TOKEN_MAX, or not three base64url parts),
 * -ENOMEM. */
FLASH_API FLASH_WUR int flash_client_set_token(struct flash_client *c, const char *token);

/* Claims of minted tokens. */
struct flash_client_identity {
	size_t sz;
	const char *issuer;        /* required */
	const char *audience;      /* required */
	const char *organization;  /* required, 1..128 bytes */
	const char *project;       /* NULL: none (list and usage over the organization) */
};

/* Every request carries a token minted with @signer (borrowed: it must
 * outlive the client) for @id, valid for 60 seconds from the time of
 * sending.  Returns 0, -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_client_set_signer(struct flash_client *c, const struct flash_auth_signer *signer,
						const struct flash_client_identity *id);

/* An answer of the operator. */
struct flash_client_response;

/* The HTTP status of the answer (200, 201, 4xx, 5xx; with retries of 503
 * answers, the last attempt's), 0 when @r is NULL.  Every string a response gives is
 * owned by it and lives until flash_client_response_free(). */
FLASH_API int flash_client_response_status(const struct flash_client_response *r);
/* The body, NUL-terminated (JSON), owned by @r. */
FLASH_API const char *flash_client_response_body(const struct flash_client_response *r, size_t *ret_len);
/* The "error.code" of an error answer ("not-found", "stale-generation",
 * ...; see flash-operator(8)), NULL for a success. */
FLASH_API const char *flash_client_response_error_code(const struct flash_client_response *r);
/* The "error.message", NULL for a success. */
FLASH_API const char *flash_client_response_error_message(const struct flash_client_response *r);
/* Retry-After seconds of the last answer, 0 without one. */
FLASH_API unsigned int flash_client_response_retry_after(const struct flash_client_response *r);
/* Frees a response with its body and strings; NULL is accepted. */
FLASH_API void flash_client_response_free(struct flash_client_response *r);

/* create: @name and the spec JSON (@spec_len bytes) as generation
 * @generation.  The other calls take the service id the operator gave. */
FLASH_API FLASH_WUR int flash_client_create(struct flash_client *c, const char *name, const char *spec,
					    size_t spec_len, uint64_t generation,
					    struct flash_client_response **ret);
FLASH_API FLASH_WUR int flash_client_update(struct flash_client *c, const char *service_id, const char *spec,
					    size_t spec_len, uint64_t generation,
					    struct flash_client_response **ret);
FLASH_API FLASH_WUR int flash_client_delete(struct flash_client *c, const char *service_id, uint64_t generation,
					    struct flash_client_response **ret);
FLASH_API FLASH_WUR int flash_client_get(struct flash_client *c, const char *service_id,
					 struct flash_client_response **ret);
FLASH_API FLASH_WUR int flash_client_list(struct flash_client *c, struct flash_client_response **ret);
FLASH_API FLASH_WUR int flash_client_usage(struct flash_client *c, struct flash_client_response **ret);
/* logs (token action "logs"): the replicas' recent stdout and stderr
 * lines; replica @replica only when >= 0; lines at or after @since (RFC
 * 3339 UTC, "YYYY-MM-DDTHH:MM:SS[.ffffff]Z") when not NULL.  -EINVAL for
 * a malformed id or @since. */
FLASH_API FLASH_WUR int flash_client_logs(struct flash_client *c, const char *service_id, int replica,
					  const char *since, struct flash_client_response **ret);

/* A service id and its NUL. */
#define FLASH_CLIENT_SERVICE_ID_STRLEN 36

/* The id the operator gives the service @name of @project in
 * @organization ("fs-" and 32 lower-case hex digits, NUL-terminated in
 * @ret): the first 16 bytes of BLAKE2b-256 over "flash-service-id/1",
 * @organization, @project and @name, each preceded by its length as 8
 * little-endian bytes.  provider/v1 ids are derived, never stored: a
 * client that knows its organization and project names a service by id
 * without asking the operator.  Returns 0, -EINVAL (a NULL argument). */
FLASH_API FLASH_WUR int flash_client_service_id(const char *organization, const char *project, const char *name,
						char ret[FLASH_CLIENT_SERVICE_ID_STRLEN]);

/* ---------------------------------------------------------------- exec */

/* exec (token action "exec"): a session in a ready replica of a service
 * over a WebSocket (RFC 6455, subprotocol FLASH_CLIENT_EXEC_PROTOCOL) to
 * GET /provider/v1/services/ID/exec.  Every message is binary: its first
 * byte a channel, the rest the data.  The client sends STDIN (bytes),
 * RESIZE ({"cols":C,"rows":R}) and CLOSE (one byte, the channel closed:
 * 0, end of input) and, first and only when the request said
 * argv=message (an argv too long for the URL: flash_client_exec_open()
 * chooses), ARGV (a JSON array of the argument strings); the operator
 * sends STDOUT, STDERR (bytes; a TTY
 * session has only STDOUT) and, last, STATUS: {"exit_code":N} with
 * "signal":S when a signal ended the process, and "reason" and "message"
 * when the operator ended the session ("time-limit", "shutdown").  Then
 * the WebSocket closes. */
#define FLASH_CLIENT_EXEC_PROTOCOL "flash.exec.v1"

enum flash_client_exec_channel {
	FLASH_EXEC_STDIN = 0,
	FLASH_EXEC_STDOUT = 1,
	FLASH_EXEC_STDERR = 2,
	FLASH_EXEC_STATUS = 3,
	FLASH_EXEC_RESIZE = 4,
	FLASH_EXEC_ARGV = 5,
	FLASH_EXEC_CLOSE = 255,
};

struct flash_client_exec_opts {
	size_t sz;
	const char *const *argv;  /* exactly the argv run; NULL: /bin/sh */
	size_t argc;              /* 1..256 when argv is set */
	int replica;              /* replica index; < 0: the first ready one */
	bool tty;                 /* a terminal (STDERR goes to STDOUT) */
	unsigned short cols, rows; /* its first size (tty; 0: the operator's 80x24) */
	const char *term;         /* TERM in the session (tty; NULL: "xterm") */
};

struct flash_client_exec;

/* Opens a session of service @service_id.  Returns 0 with *ret_session
 * when the operator switched protocols, or 0 with *ret_refusal (an error
 * answer: "not-found", "not-ready", "too-many-sessions", "wrong-action",
 * ...) when it did not; one of the two is set.  Negative: the transport
 * errors of the other calls, -EINVAL (a malformed id or options; an
 * argument longer than 64 KiB), -E2BIG (an argv beyond 1 MiB as JSON),
 * -EPROTO (not a WebSocket answer).  An argv too long for the URL is
 * sent as the first message (FLASH_EXEC_ARGV) before this returns. */
FLASH_API FLASH_WUR int flash_client_exec_open(struct flash_client *c, const char *service_id,
					       const struct flash_client_exec_opts *opts,
					       struct flash_client_exec **ret_session,
					       struct flash_client_response **ret_refusal);
/* The socket to poll for input (POLLIN) before calling
 * flash_client_exec_recv(). */
FLASH_API int flash_client_exec_fd(const struct flash_client_exec *x);
/* Sends @len bytes (at most 1 MiB) on @channel; blocks until written.
 * 0, -EINVAL, -EPIPE (the session ended), -EPROTO. */
FLASH_API int flash_client_exec_send(struct flash_client_exec *x, unsigned int channel, const void *data,
					       size_t len);
/* RESIZE and CLOSE of stdin, through flash_client_exec_send().  A send
 * that fails means the session is ending: flash_client_exec_recv() says
 * how. */
FLASH_API int flash_client_exec_resize(struct flash_client_exec *x, unsigned short cols,
						 unsigned short rows);
FLASH_API int flash_client_exec_close_stdin(struct flash_client_exec *x);
/* Without blocking: 1 and the next message (*ret_data valid until the
 * next call), 0 when none is waiting (poll the fd), -EPIPE when the
 * session is over (the WebSocket closed), -EPROTO when the operator
 * broke the protocol.  Pings are answered inside. */
FLASH_API FLASH_WUR int flash_client_exec_recv(struct flash_client_exec *x, unsigned int *ret_channel,
					       const void **ret_data, size_t *ret_len);
/* The outcome once STATUS arrived: true with the exit code (128 + S for
 * a signal S) and the operator's reason and message (NULL when the
 * process ended by itself); false before. */
FLASH_API bool flash_client_exec_status(const struct flash_client_exec *x, int *ret_exit_code,
					const char **ret_reason, const char **ret_message);
/* Closes the session (a close frame, then the connection); NULL is fine. */
FLASH_API void flash_client_exec_free(struct flash_client_exec *x);

/* ---------------------------------------------------------------- sandbox sessions */

/* Sandbox sessions (token action "sandbox", flash-operator(8)): one
 * disposable sandbox per session id.  A session belongs to the
 * organization and project of the token that made it: its id is "sb-",
 * 16 hex digits naming the tenant, "-" and the client's name, and the
 * operator answers 404 for an id of another tenant.  Calls that stream
 * (exec, read, write, import, export) return 0 when the operation ran and
 * its outcome came back, or 0 with *ret_refusal (an error answer:
 * "not-found", "ended", "too-large", "no-such-file", "bad-archive", ...)
 * when the operator refused it; negative: the transport errors of the
 * other calls, a sink's or source's error, -EPROTO (a stream cut short or
 * malformed: the operation failed after it began), -EINVAL.  Streams have
 * no overall deadline: the client's timeout_ms bounds each wait for
 * progress. */

/* A session id and its NUL (a DNS label of at most 63 bytes). */
#define FLASH_CLIENT_SANDBOX_ID_STRLEN 64
/* Longest name part of a session id. */
#define FLASH_CLIENT_SANDBOX_NAME_MAX 43

/* The id of session @name (1..43 of [a-z0-9-], starting and ending with a
 * letter or digit) of @project in @organization, into @ret: "sb-", the
 * first 8 bytes of BLAKE2b-256 over "flash-sandbox-tenant/1",
 * @organization and @project (each preceded by its length as 8
 * little-endian bytes) in lower-case hex, "-" and @name.  -EINVAL for a
 * NULL argument or a malformed name. */
FLASH_API FLASH_WUR int flash_client_sandbox_id(const char *organization, const char *project, const char *name,
						char ret[FLASH_CLIENT_SANDBOX_ID_STRLEN]);

/* Provision (PUT): the session's sandbox from the spec JSON (@spec_len
 * bytes), living @ttl_s seconds (0: the operator's default); 201 when
 * made, 200 when it was there already (idempotent). */
FLASH_API FLASH_WUR int flash_client_sandbox_provision(struct flash_client *c, const char *session_id,
						       const char *spec, size_t spec_len, uint32_t ttl_s,
						       struct flash_client_response **ret);
FLASH_API FLASH_WUR int flash_client_sandbox_get(struct flash_client *c, const char *session_id,
						 struct flash_client_response **ret);
/* The tenant's sessions: {"sandboxes": [...]}. */
FLASH_API FLASH_WUR int flash_client_sandbox_list(struct flash_client *c, struct flash_client_response **ret);
/* Reap (DELETE): returns once the sandbox is gone. */
FLASH_API FLASH_WUR int flash_client_sandbox_reap(struct flash_client *c, const char *session_id,
						  struct flash_client_response **ret);

/* Receives bytes: 0 to go on, a negative errno to stop the call. */
typedef int (*flash_client_sink_fn)(const void *buf, size_t len, void *userdata);
/* Supplies up to @cap bytes: the count, 0 at the end, or a negative errno. */
typedef ssize_t (*flash_client_source_fn)(void *buf, size_t cap, void *userdata);

struct flash_client_sandbox_exec_opts {
	size_t sz;
	const char *const *argv;   /* NULL-terminated, argv[0] absolute; required */
	const char *const *env;    /* "NAME=value", NULL-terminated, or NULL */
	const char *cwd;           /* absolute, or NULL */
	const void *stdin_data;    /* the whole standard input (at most ~700 KiB), or NULL */
	size_t stdin_len;
	uint32_t timeout_ms;       /* 0: the operator's default */
	flash_client_sink_fn stdout_fn; /* NULL: discarded */
	void *stdout_userdata;
	flash_client_sink_fn stderr_fn; /* NULL: discarded */
	void *stderr_userdata;
};

struct flash_client_sandbox_exec_result {
	int exit_code;       /* 128+N for signal N; -1 when timed out */
	bool timed_out;      /* the deadline came first: the command's process group was killed */
	int64_t expires_at;  /* the session's, unix seconds */
};

/* Runs a command in the session's sandbox, its output streamed to the
 * sinks as it comes.  0 with *ret_result, or 0 with *ret_refusal. */
FLASH_API FLASH_WUR int flash_client_sandbox_exec(struct flash_client *c, const char *session_id,
						  const struct flash_client_sandbox_exec_opts *opts,
						  struct flash_client_sandbox_exec_result *ret_result,
						  struct flash_client_response **ret_refusal);
/* Streams the file @path (absolute) to @sink; refused ("too-large", 413)
 * before any byte when it is larger than @max_bytes (0: the operator's
 * bound). */
FLASH_API FLASH_WUR int flash_client_sandbox_read(struct flash_client *c, const char *session_id, const char *path,
						  uint64_t max_bytes, flash_client_sink_fn sink, void *userdata,
						  struct flash_client_response **ret_refusal);
/* Writes exactly @size bytes of @source to @path (absolute): the answer
 * ({"written": N, ...} or an error) in *ret.  A source that ends early or
 * gives more fails (-EIO) and the target stays untouched. */
FLASH_API FLASH_WUR int flash_client_sandbox_write(struct flash_client *c, const char *session_id, const char *path,
						   uint64_t size, flash_client_source_fn source, void *userdata,
						   struct flash_client_response **ret);
/* Extracts the tar stream of @source under @dir (absolute, existing),
 * sent chunked; the answer in *ret ("bad-archive" names the member). */
FLASH_API FLASH_WUR int flash_client_sandbox_import(struct flash_client *c, const char *session_id, const char *dir,
						    flash_client_source_fn source, void *userdata,
						    struct flash_client_response **ret);
/* Streams a tar of @root (absolute, a directory) to @sink: members under
 * one top-level directory named after @root's base name. */
FLASH_API FLASH_WUR int flash_client_sandbox_export(struct flash_client *c, const char *session_id, const char *root,
						    flash_client_sink_fn sink, void *userdata,
						    struct flash_client_response **ret_refusal);

#ifdef __cplusplus
}
#endif

#endif
