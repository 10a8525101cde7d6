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
	CURL *curl;
	char *base;        /* "http://localhost" for unix:, else the endpoint */
	char *unix_path;
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
/* Fills error_code and error_message of an error answer from its body. */
void client__parse_error(struct flash_client_response *r);
/* Is @id a service id (1..64 of a-z, 0-9, '-')? */
bool client__id_ok(const char *id);

#endif
