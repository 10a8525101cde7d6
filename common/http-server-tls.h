/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TLS for the front door (private to common/http-server.c): a relay that
 * terminates TLS (GnuTLS) for one accepted connection in a thread of its
 * own and passes the clear text over a socket pair, whose other end the
 * door holds and checks like a plain connection (head checks, header
 * deadline, connection bounds) before libmicrohttpd serves it.
 */
#ifndef FLASH_COMMON_HTTP_SERVER_TLS_H
#define FLASH_COMMON_HTTP_SERVER_TLS_H

#include <stddef.h>

struct http_tls;

/* Credentials from PEM text (certificate chain, private key).  Errors:
 * -EINVAL (not a usable certificate and key), -ENOMEM. */
int http_tls_new(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
		 struct http_tls **ret);
/* Waits for every relay to end (they end when @stop_fd of their start
 * becomes readable, or either side closes), then frees; NULL is fine. */
void http_tls_free(struct http_tls *t);
/* Relays between the TLS client on @fd and the clear-text socket @plain
 * until either side closes or @stop_fd becomes readable; the handshake
 * must end within @handshake_ms.  Takes both descriptors (closed on
 * failure too).  Errors: -errno of the thread. */
int http_tls_relay(struct http_tls *t, int fd, int plain, int stop_fd, unsigned int handshake_ms);

#endif
