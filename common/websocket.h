/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * WebSocket (RFC 6455), private and written once for both ends: the
 * operator's exec route (server) and libflash's exec client.  No I/O
 * here: the handshake checks take header values and give the answer's
 * values; a struct ws_conn is fed the bytes a socket gave and hands back
 * whole messages, and ws_frame_encode() writes a frame into a buffer.
 *
 * What the parser refuses (each with the close code RFC 6455 section 7.4
 * gives, ws_conn_close_code()):
 * - 1002: reserved bits set (no extension is negotiated), an unknown
 *   opcode, a control frame that is fragmented or longer than 125 bytes,
 *   an unmasked frame from a client or a masked one from a server, a
 *   length not in its shortest form or with the top bit set, a
 *   continuation with no message begun, a data frame inside a fragmented
 *   message, a close frame of one byte or with a code that may not be
 *   sent;
 * - 1007: a text message or close reason that is not UTF-8;
 * - 1009: a frame or message longer than the bound the connection has.
 * After a refusal the connection parses nothing more.
 */
#ifndef FLASH_COMMON_WEBSOCKET_H
#define FLASH_COMMON_WEBSOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WS_KEY_STRLEN 25    /* base64 of 16 bytes, NUL */
#define WS_ACCEPT_STRLEN 29 /* base64 of a SHA-1, NUL */
#define WS_FRAME_HEAD_MAX 14

enum ws_opcode {
	WS_OP_CONTINUATION = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xa,
};

enum ws_close_code {
	WS_CLOSE_NORMAL = 1000,
	WS_CLOSE_GOING_AWAY = 1001,
	WS_CLOSE_PROTOCOL = 1002,
	WS_CLOSE_UNSUPPORTED = 1003,
	WS_CLOSE_NO_STATUS = 1005,  /* never sent: a close frame without a code */
	WS_CLOSE_INVALID = 1007,
	WS_CLOSE_POLICY = 1008,
	WS_CLOSE_TOO_BIG = 1009,
	WS_CLOSE_INTERNAL = 1011,
};

/* SHA-1 (FIPS 180-4) of @len bytes, for the Sec-WebSocket-Accept value
 * only: none of the libraries every part links (libsodium has no SHA-1,
 * GnuTLS comes only with the HTTP server) offers it. */
void ws_sha1(const void *data, size_t len, uint8_t ret[20]);

/* Sec-WebSocket-Accept of the client's @key: base64(SHA-1(key GUID)).
 * -EINVAL when @key is not the base64 of 16 bytes (section 4.2.1). */
int ws_accept_value(const char *key, char ret[WS_ACCEPT_STRLEN]);

/* A new random Sec-WebSocket-Key (libsodium's randombytes). */
void ws_client_key(char ret[WS_KEY_STRLEN]);

/* The header values of an opening handshake (NULL when absent). */
struct ws_handshake {
	const char *method;
	const char *upgrade;     /* must contain the token "websocket" */
	const char *connection;  /* must contain the token "Upgrade" */
	const char *version;     /* must be "13" */
	const char *key;
	const char *protocol;    /* Sec-WebSocket-Protocol: a list of tokens */
};

/* Is @list (comma-separated tokens, as Connection and
 * Sec-WebSocket-Protocol are) holding @token, case-insensitively? */
bool ws_token_list_has(const char *list, const char *token);

/* Server side: checks @h for a WebSocket opening handshake that offers
 * subprotocol @protocol (NULL: none needed) and gives the accept value.
 * 0; -EINVAL with @err naming the header that is wrong; -EPROTONOSUPPORT
 * (version not 13: answer 426 with "Sec-WebSocket-Version: 13"). */
int ws_server_check(const struct ws_handshake *h, const char *protocol, char ret_accept[WS_ACCEPT_STRLEN], char *err,
		    size_t err_size);

/* Client side: checks a response head (status line and headers, up to
 * the empty line, @len bytes) to a request made with @key and
 * @protocol: 101, "Upgrade: websocket", "Connection: Upgrade", the
 * accept value of @key and the protocol chosen.  *ret_status is the
 * status whenever the line parses.  0; -EINVAL with @err. */
int ws_client_check_response(const char *head, size_t len, const char *key, const char *protocol, int *ret_status,
			     char *err, size_t err_size);

/* Writes one frame (FIN set when @fin) of @opcode carrying @len bytes
 * into @buf (at least WS_FRAME_HEAD_MAX + len bytes), masked with a
 * random key when @mask (a client's frames).  Returns the frame's size;
 * -EINVAL (a control frame longer than 125 bytes), -ENOBUFS. */
long ws_frame_encode(uint8_t opcode, bool fin, bool mask, const void *payload, size_t len, uint8_t *buf,
		     size_t size);

/* A close frame's payload: @code (big-endian) and @reason (cut at 123
 * bytes, at a UTF-8 boundary).  Returns its length. */
size_t ws_close_payload(uint16_t code, const char *reason, uint8_t buf[125]);

struct ws_message {
	uint8_t opcode;        /* TEXT, BINARY, CLOSE, PING or PONG */
	const uint8_t *data;   /* unmasked, valid until the next ws_conn call */
	size_t len;
	uint16_t close_code;   /* CLOSE: the code, WS_CLOSE_NO_STATUS without one */
};

struct ws_conn;

/* A parser for the frames coming from a client (@from_client: they must
 * be masked) or a server, with messages (and frames) at most
 * @max_message bytes.  -EINVAL, -ENOMEM. */
int ws_conn_new(bool from_client, size_t max_message, struct ws_conn **ret);
void ws_conn_free(struct ws_conn *c);

/* Appends received bytes.  -ENOBUFS when more than one frame's worth is
 * waiting unparsed (call ws_conn_next() first), -EPROTO after a refusal. */
int ws_conn_feed(struct ws_conn *c, const void *data, size_t len);

/* How many bytes ws_conn_feed() takes now. */
size_t ws_conn_room(const struct ws_conn *c);

/* The next complete message (control frames come as they arrive, also
 * between the fragments of a message).  1 and *ret; 0 when more bytes are
 * needed; -EPROTO when the peer broke the protocol (the code to close
 * with in ws_conn_close_code(), the reason in ws_conn_error()). */
int ws_conn_next(struct ws_conn *c, struct ws_message *ret);

uint16_t ws_conn_close_code(const struct ws_conn *c);
const char *ws_conn_error(const struct ws_conn *c);

#endif
