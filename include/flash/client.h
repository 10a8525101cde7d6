/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/client.h> — a client of flash-operator's provider/v1 API.
 *
 * The one place that speaks provider/v1 (flashctl is built on it): it
 * sends create, update, delete, get, list and usage over HTTP, HTTPS or a
 * Unix socket (libcurl), with a bearer token that is either given as is
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

#ifdef __cplusplus
}
#endif

#endif
