/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the WebSocket frame parser of common/websocket.h:
 * what a Web Shell client sends the operator's exec route (masked frames)
 * and what a server (the operator, or a kubelet through pods/exec) sends
 * libflash's and the operator's clients.  The first byte picks the side
 * (bit 0: frames from a client) and the size of the pieces the rest is
 * fed in (bits 1-6, 1..64 bytes).  Properties:
 *  - the parser never reads or writes outside its input (ASan), never
 *    asks for bytes it has no room for while holding no message (a stuck
 *    connection), and stops for good after a refusal;
 *  - a message is at most the bound given, of a known opcode, a control
 *    message at most 125 bytes, a close code one that may be sent or
 *    "no status";
 *  - every data message delivered, encoded again (masked when from a
 *    client) and fed to a fresh parser of the same side, comes out the
 *    same: what the parser accepts is what the encoder writes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "websocket.h"

#define MAX_MESSAGE 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void roundtrip(bool from_client, const struct ws_message *m)
{
	static uint8_t frame[WS_FRAME_HEAD_MAX + MAX_MESSAGE];
	struct ws_conn *c = NULL;
	struct ws_message back;
	long n = ws_frame_encode(m->opcode, true, from_client, m->data, m->len, frame, sizeof(frame));

	check(n > 0);
	check(ws_conn_new(from_client, MAX_MESSAGE, &c) == 0);
	check(ws_conn_feed(c, frame, (size_t)n) == 0);
	check(ws_conn_next(c, &back) == 1);
	check(back.opcode == m->opcode && back.len == m->len && (!m->len || memcmp(back.data, m->data, m->len) == 0));
	ws_conn_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ws_conn *c = NULL;
	bool from_client, refused = false;
	size_t piece, off = 1;

	if (size < 1)
		return 0;
	from_client = data[0] & 1;
	piece = 1 + ((data[0] >> 1) & 63);
	check(ws_conn_new(from_client, MAX_MESSAGE, &c) == 0);
	while (off < size && !refused) {
		size_t room = ws_conn_room(c), n = size - off;
		struct ws_message m;
		int r;

		if (n > piece)
			n = piece;
		if (n > room)
			n = room;
		if (n) {
			r = ws_conn_feed(c, data + off, n);
			check(r == 0 || r == -EPROTO);
			if (r == -EPROTO)
				break;
			off += n;
		}
		for (;;) {
			r = ws_conn_next(c, &m);
			if (r == 0)
				break;
			if (r < 0) {
				check(r == -EPROTO && ws_conn_close_code(c) >= 1000 && ws_conn_error(c) != NULL);
				refused = true;
				break;
			}
			check(m.len <= MAX_MESSAGE);
			check(m.opcode == WS_OP_TEXT || m.opcode == WS_OP_BINARY || m.opcode == WS_OP_CLOSE ||
			      m.opcode == WS_OP_PING || m.opcode == WS_OP_PONG);
			if (m.opcode >= WS_OP_CLOSE)
				check(m.len <= 125);
			if (m.opcode == WS_OP_CLOSE)
				check(m.close_code == WS_CLOSE_NO_STATUS || (m.close_code >= 1000 && m.close_code < 5000));
			if (m.opcode == WS_OP_TEXT || m.opcode == WS_OP_BINARY || m.opcode == WS_OP_PING ||
			    m.opcode == WS_OP_PONG)
				roundtrip(from_client, &m);
		}
		/* no room and no message: the parser would wait forever */
		check(refused || n || ws_conn_room(c) > 0 || off >= size);
	}
	if (refused) {
		struct ws_message m;

		check(ws_conn_next(c, &m) == -EPROTO);
	}
	ws_conn_free(c);
	return 0;
}
