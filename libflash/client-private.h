/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private pieces of the provider/v1 client shared by client.c (requests)
 * and client-exec.c (exec sessions).
 */
#ifndef FLASH_CLIENT_PRIVATE_H
#define FLASH_CLIENT_PRIVATE_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>
#include <flash/auth.h>
#include <flash/client.h>

struct flash_client {
	char *base;        /* "http://localhost" for unix:, else the endpoint */
	char *unix_path;   /* unix: */
	char *host, *port; /* http:// (common/http-client.h) */
	char *prefix;      /* path prefix of an http:// endpoint, or "" */
	bool tls;          /* https:// (libcurl) */
	char *ca_file;
	unsigned int timeout_ms, retries;
	char *token;       /* fixed token */
	const struct flash_auth_signer *signer;
	char *iss, *aud, *org, *project;
};

struct flash_client_response {
	int status;
	char *body;
	size_t len;
	char *error_code, *error_message;
	unsigned int retry_after;
};

/* A token for @action (with generation @gen when @has_gen), minted with
 * the client's signer: *ret freed (and wiped) by the caller. */
int client__mint(const struct flash_client *c, enum flash_auth_action action, bool has_gen, uint64_t gen, char **ret);
/* The -errno of a libcurl failure. */
int client__curl_errno(CURLcode cc);

/* One connection to the operator (client-conn.c): a socket of our own for
 * unix: and http://, libcurl's TLS connection for https://. */
struct client_conn {
	int fd;     /* poll it; -1 when closed */
	CURL *curl; /* https:// only */
};
/* Connects before @deadline (util_mono_ms()): 0, -ECONNREFUSED, -ENOENT,
 * -ETIMEDOUT, -EHOSTUNREACH, -EPROTO (TLS; libcurl missing), -ENOMEM. */
int client__conn_open(const struct flash_client *c, int64_t deadline, struct client_conn *k);
/* 0 with *ret_sent bytes written, -EAGAIN (poll POLLOUT), -EPIPE. */
int client__conn_send(struct client_conn *k, const void *buf, size_t len, size_t *ret_sent);
/* All of @buf before @deadline: 0, -ETIMEDOUT, -EPIPE. */
int client__conn_send_all(struct client_conn *k, const void *buf, size_t len, int64_t deadline);
/* 0 with *ret_got bytes read (0: the operator closed), -EAGAIN (poll
 * POLLIN), -errno. */
int client__conn_recv(struct client_conn *k, void *buf, size_t len, size_t *ret_got);
void client__conn_close(struct client_conn *k);
/* Fills error_code and error_message of an error answer from its body. */
void client__parse_error(struct flash_client_response *r);
/* A request of @action without a generation, its whole answer in *ret
 * (503 retried as the client says). */
int client__call(struct flash_client *c, const char *method, const char *path, enum flash_auth_action action,
		 const char *body, size_t body_len, struct flash_client_response **ret);
/* The answer in @buf (@len bytes read until the server closed; a body of
 * at most @max_body) as a response that takes @buf over: 0, -EPROTO,
 * -E2BIG, -ENOMEM (then @buf is still the caller's). */
int client__response_of(char *buf, size_t len, size_t max_body, struct flash_client_response **ret);
/* Is @id a service id (1..64 of a-z, 0-9, '-')? */
bool client__id_ok(const char *id);

#endif
