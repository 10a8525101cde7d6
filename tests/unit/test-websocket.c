/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * WebSocket (common/websocket.c): the RFC 6455 vectors (section 1.3 key,
 * section 5.7 frames), SHA-1 vectors (FIPS 180 / RFC 3174), and hostile
 * frames each refused with its close code.
 */
#include <criterion/criterion.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "websocket.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

Test(websocket, sha1_vectors)
{
	static const struct {
		const char *in;
		const char *hex;
	} v[] = {
		{ "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
		{ "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
	};
	uint8_t d[20];
	char h[41];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ws_sha1(v[i].in, strlen(v[i].in), d);
		hex(d, 20, h);
		cr_assert_str_eq(h, v[i].hex, "SHA-1(\"%s\")", v[i].in);
	}
	/* A million 'a' (FIPS 180 vector), crossing every padding case. */
	char *m = malloc(1000000);
	cr_assert(m);
	memset(m, 'a', 1000000);
	ws_sha1(m, 1000000, d);
	hex(d, 20, h);
	cr_assert_str_eq(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	free(m);
	/* 55, 56 and 64 bytes: the tail in one or two blocks. */
	ws_sha1("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 55, d);
	hex(d, 20, h);
	cr_assert_str_eq(h, "c1c8bbdc22796e28c0e15163d20899b65621d65a");
	ws_sha1("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 56, d);
	hex(d, 20, h);
	cr_assert_str_eq(h, "c2db330f6083854c99d4b5bfb6e8f29f201be699");
}

Test(websocket, accept_value_of_rfc_example)
{
	char a[WS_ACCEPT_STRLEN];

	ASSERT_OK(ws_accept_value("dGhlIHNhbXBsZSBub25jZQ==", a), "RFC 6455 1.3 key");
	cr_assert_str_eq(a, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	ASSERT_ERR(ws_accept_value("dGhlIHNhbXBsZSBub25jZQ", a), -EINVAL, "no padding");
	ASSERT_ERR(ws_accept_value("dGhlIHNhbXBsZSBub25jZX==", a), -EINVAL, "not canonical base64 of 16 bytes");
	ASSERT_ERR(ws_accept_value("", a), -EINVAL, "empty");
	ASSERT_ERR(ws_accept_value("aGVsbG8gd29ybGQgaGVsbG8gd29y", a), -EINVAL, "21 bytes");
}

Test(websocket, server_check_names_the_wrong_header)
{
	struct ws_handshake h = { .method = "GET", .upgrade = "WebSocket", .connection = "keep-alive, Upgrade",
				  .version = "13", .key = "dGhlIHNhbXBsZSBub25jZQ==", .protocol = "x, flash.exec.v1" };
	char a[WS_ACCEPT_STRLEN], err[128];

	ASSERT_OK(ws_server_check(&h, "flash.exec.v1", a, err, sizeof(err)), "good handshake");
	cr_assert_str_eq(a, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	h.protocol = "flash.exec.v2";
	ASSERT_ERR(ws_server_check(&h, "flash.exec.v1", a, err, sizeof(err)), -EINVAL, "protocol");
	cr_assert(strstr(err, "Sec-WebSocket-Protocol"), "%s", err);
	h.protocol = "flash.exec.v1";
	h.version = "8";
	ASSERT_ERR(ws_server_check(&h, "flash.exec.v1", a, err, sizeof(err)), -EPROTONOSUPPORT, "version");
	cr_assert(strstr(err, "13"), "%s", err);
	h.version = "13";
	h.connection = "keep-alive";
	ASSERT_ERR(ws_server_check(&h, NULL, a, err, sizeof(err)), -EINVAL, "connection");
	cr_assert(strstr(err, "Connection"), "%s", err);
	h.connection = "upgrade";
	h.upgrade = "h2c";
	ASSERT_ERR(ws_server_check(&h, NULL, a, err, sizeof(err)), -EINVAL, "upgrade");
	h.upgrade = "websocket";
	h.method = "POST";
	ASSERT_ERR(ws_server_check(&h, NULL, a, err, sizeof(err)), -EINVAL, "method");
	h.method = "GET";
	h.key = NULL;
	ASSERT_ERR(ws_server_check(&h, NULL, a, err, sizeof(err)), -EINVAL, "key");
	cr_assert(strstr(err, "Sec-WebSocket-Key"), "%s", err);
}

Test(websocket, client_checks_the_answer)
{
	const char *ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: flash.exec.v1\r\n\r\n";
	const char *bad_accept = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
				 "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\nSec-WebSocket-Protocol: flash.exec.v1\r\n\r\n";
	const char *refused = "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n\r\n";
	const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
	char err[128];
	int st = 0;

	ASSERT_OK(ws_client_check_response(ok, strlen(ok), key, "flash.exec.v1", &st, err, sizeof(err)), "101");
	cr_assert_eq(st, 101);
	ASSERT_ERR(ws_client_check_response(bad_accept, strlen(bad_accept), key, "flash.exec.v1", &st, err, sizeof(err)),
		   -EINVAL, "accept");
	cr_assert(strstr(err, "Accept"), "%s", err);
	ASSERT_ERR(ws_client_check_response(ok, strlen(ok), key, "other", &st, err, sizeof(err)), -EINVAL, "protocol");
	ASSERT_ERR(ws_client_check_response(ok, strlen(ok), key, NULL, &st, err, sizeof(err)), -EINVAL, "unoffered");
	ASSERT_ERR(ws_client_check_response(refused, strlen(refused), key, NULL, &st, err, sizeof(err)), -EINVAL, "403");
	cr_assert_eq(st, 403);
	ASSERT_ERR(ws_client_check_response("SSH-2.0", 7, key, NULL, &st, err, sizeof(err)), -EINVAL, "not HTTP");
}

Test(websocket, token_lists)
{
	cr_assert(ws_token_list_has("keep-alive, Upgrade", "upgrade"));
	cr_assert(ws_token_list_has(" a ,\tb\t", "b"));
	cr_assert_not(ws_token_list_has("upgraded", "upgrade"));
	cr_assert_not(ws_token_list_has(NULL, "upgrade"));
	cr_assert_not(ws_token_list_has(",,", ""));
}

/* RFC 6455 5.7: the unmasked and masked "Hello". */
Test(websocket, rfc_examples_parse)
{
	static const uint8_t unmasked[] = { 0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f };
	static const uint8_t masked[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	static const uint8_t frag[] = { 0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f };
	static const uint8_t ping[] = { 0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f };
	struct ws_conn *c;
	struct ws_message m;

	ASSERT_OK(ws_conn_new(false, 1024, &c), "client side");
	ASSERT_OK(ws_conn_feed(c, unmasked, sizeof(unmasked)), "feed");
	cr_assert_eq(ws_conn_next(c, &m), 1);
	cr_assert_eq(m.opcode, WS_OP_TEXT);
	cr_assert_eq(m.len, 5);
	cr_assert_eq(memcmp(m.data, "Hello", 5), 0);
	cr_assert_eq(ws_conn_next(c, &m), 0, "nothing more");
	/* Fragments with a ping between them, one byte at a time. */
	for (size_t i = 0; i < 5; i++) {
		ASSERT_OK(ws_conn_feed(c, frag + i, 1), "feed");
		cr_assert_eq(ws_conn_next(c, &m), 0, "incomplete at %zu", i);
	}
	ASSERT_OK(ws_conn_feed(c, ping, sizeof(ping)), "ping");
	cr_assert_eq(ws_conn_next(c, &m), 1);
	cr_assert_eq(m.opcode, WS_OP_PING);
	cr_assert_eq(memcmp(m.data, "Hello", 5), 0);
	ASSERT_OK(ws_conn_feed(c, frag + 5, sizeof(frag) - 5), "last fragment");
	cr_assert_eq(ws_conn_next(c, &m), 1);
	cr_assert_eq(m.opcode, WS_OP_TEXT);
	cr_assert_eq(m.len, 5);
	cr_assert_eq(memcmp(m.data, "Hello", 5), 0);
	ws_conn_free(c);

	ASSERT_OK(ws_conn_new(true, 1024, &c), "server side");
	ASSERT_OK(ws_conn_feed(c, masked, sizeof(masked)), "feed");
	cr_assert_eq(ws_conn_next(c, &m), 1);
	cr_assert_eq(m.len, 5);
	cr_assert_eq(memcmp(m.data, "Hello", 5), 0);
	ws_conn_free(c);
}

Test(websocket, encode_round_trip_every_length_form)
{
	static const size_t lens[] = { 0, 1, 125, 126, 65535, 65536, 200000 };
	uint8_t *payload = malloc(200000), *buf = malloc(200000 + WS_FRAME_HEAD_MAX);

	cr_assert(payload && buf);
	for (size_t i = 0; i < 200000; i++)
		payload[i] = (uint8_t)(i * 7);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		for (int mask = 0; mask < 2; mask++) {
			struct ws_conn *c;
			struct ws_message m;
			long n = ws_frame_encode(WS_OP_BINARY, true, mask, payload, lens[k], buf, 200000 + WS_FRAME_HEAD_MAX);

			ASSERT_OK(n, "encode");
			ASSERT_OK(ws_conn_new(mask, 1 << 20, &c), "parser");
			ASSERT_OK(ws_conn_feed(c, buf, (size_t)n), "feed");
			cr_assert_eq(ws_conn_next(c, &m), 1, "len %zu mask %d: %s", lens[k], mask, ws_conn_error(c));
			cr_assert_eq(m.len, lens[k]);
			cr_assert(lens[k] == 0 || memcmp(m.data, payload, lens[k]) == 0, "payload of %zu", lens[k]);
			ws_conn_free(c);
		}
	}
	ASSERT_ERR(ws_frame_encode(WS_OP_PING, true, false, payload, 126, buf, 1000), -EINVAL, "long ping");
	ASSERT_ERR(ws_frame_encode(WS_OP_CLOSE, false, false, payload, 2, buf, 1000), -EINVAL, "fragmented close");
	ASSERT_ERR(ws_frame_encode(WS_OP_BINARY, true, true, payload, 100, buf, 105), -ENOBUFS, "small buffer");
	free(payload);
	free(buf);
}

/* Each hostile frame: what a server (from_client) must refuse, and with
 * which code. */
Test(websocket, hostile_frames_refused_with_their_code)
{
	static const struct {
		const char *what;
		uint8_t bytes[16];
		size_t len;
		bool from_client;
		uint16_t code;
	} v[] = {
		{ "unmasked from a client", { 0x82, 0x01, 0x00 }, 3, true, WS_CLOSE_PROTOCOL },
		{ "masked from a server", { 0x82, 0x81, 1, 2, 3, 4, 0 }, 7, false, WS_CLOSE_PROTOCOL },
		{ "RSV1 set", { 0xc2, 0x80, 0, 0, 0, 0 }, 6, true, WS_CLOSE_PROTOCOL },
		{ "opcode 3", { 0x83, 0x80, 0, 0, 0, 0 }, 6, true, WS_CLOSE_PROTOCOL },
		{ "opcode 0xb", { 0x8b, 0x80, 0, 0, 0, 0 }, 6, true, WS_CLOSE_PROTOCOL },
		{ "fragmented ping", { 0x09, 0x80, 0, 0, 0, 0 }, 6, true, WS_CLOSE_PROTOCOL },
		{ "ping of 126", { 0x89, 0xfe, 0x00, 0x7e }, 4, true, WS_CLOSE_PROTOCOL },
		{ "16-bit length of 5", { 0x82, 0xfe, 0x00, 0x05 }, 4, true, WS_CLOSE_PROTOCOL },
		{ "64-bit length of 300", { 0x82, 0xff, 0, 0, 0, 0, 0, 0, 0x01, 0x2c }, 10, true, WS_CLOSE_PROTOCOL },
		{ "64-bit length, top bit", { 0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0 }, 10, true, WS_CLOSE_PROTOCOL },
		{ "2^62 bytes", { 0x82, 0xff, 0x40, 0, 0, 0, 0, 0, 0, 0 }, 10, true, WS_CLOSE_TOO_BIG },
		{ "over the bound", { 0x82, 0xfe, 0x10, 0x01 }, 4, true, WS_CLOSE_TOO_BIG },
		{ "continuation first", { 0x80, 0x80, 0, 0, 0, 0 }, 6, true, WS_CLOSE_PROTOCOL },
		{ "message in a message", { 0x02, 0x80, 0, 0, 0, 0, 0x82, 0x80, 0, 0, 0, 0 }, 12, true, WS_CLOSE_PROTOCOL },
		{ "close of one byte", { 0x88, 0x81, 0, 0, 0, 0, 0x03 }, 7, true, WS_CLOSE_PROTOCOL },
		{ "close code 1005", { 0x88, 0x82, 0, 0, 0, 0, 0x03, 0xed }, 8, true, WS_CLOSE_PROTOCOL },
		{ "close code 999", { 0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe7 }, 8, true, WS_CLOSE_PROTOCOL },
		{ "close reason not UTF-8", { 0x88, 0x83, 0, 0, 0, 0, 0x03, 0xe8, 0xff }, 9, true, WS_CLOSE_INVALID },
		{ "text not UTF-8", { 0x81, 0x82, 0, 0, 0, 0, 0xc3, 0x28 }, 8, true, WS_CLOSE_INVALID },
		{ "fragmented text not UTF-8", { 0x01, 0x81, 0, 0, 0, 0, 0xe2, 0x80, 0x81, 0, 0, 0, 0, 0x28 }, 14, true,
		  WS_CLOSE_INVALID },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct ws_conn *c;
		struct ws_message m;
		int r;

		ASSERT_OK(ws_conn_new(v[i].from_client, 4096, &c), "parser");
		ASSERT_OK(ws_conn_feed(c, v[i].bytes, v[i].len), v[i].what);
		while ((r = ws_conn_next(c, &m)) == 1)
			;
		cr_assert_eq(r, -EPROTO, "%s: returned %d", v[i].what, r);
		cr_assert_eq(ws_conn_close_code(c), v[i].code, "%s: code %u, expected %u (%s)", v[i].what,
			     ws_conn_close_code(c), v[i].code, ws_conn_error(c));
		cr_assert(ws_conn_error(c)[0], "%s: a reason", v[i].what);
		/* Nothing more after a refusal. */
		cr_assert_eq(ws_conn_feed(c, "x", 1), -EPROTO, "%s", v[i].what);
		cr_assert_eq(ws_conn_next(c, &m), -EPROTO, "%s", v[i].what);
		ws_conn_free(c);
	}
}

Test(websocket, fragments_summing_past_the_bound_refused)
{
	uint8_t buf[200], payload[60] = { 0 };
	struct ws_conn *c;
	struct ws_message m;
	long n;
	int r = 0;

	ASSERT_OK(ws_conn_new(true, 100, &c), "parser");
	n = ws_frame_encode(WS_OP_BINARY, false, true, payload, 60, buf, sizeof(buf));
	ASSERT_OK(ws_conn_feed(c, buf, (size_t)n), "first 60");
	cr_assert_eq(ws_conn_next(c, &m), 0);
	n = ws_frame_encode(WS_OP_CONTINUATION, true, true, payload, 60, buf, sizeof(buf));
	ASSERT_OK(ws_conn_feed(c, buf, (size_t)n), "next 60");
	r = ws_conn_next(c, &m);
	cr_assert_eq(r, -EPROTO);
	cr_assert_eq(ws_conn_close_code(c), WS_CLOSE_TOO_BIG);
	ws_conn_free(c);
}

Test(websocket, feed_bounded)
{
	struct ws_conn *c;
	uint8_t big[300] = { 0 };

	ASSERT_OK(ws_conn_new(true, 100, &c), "parser");
	cr_assert_eq(ws_conn_room(c), 100 + WS_FRAME_HEAD_MAX);
	ASSERT_ERR(ws_conn_feed(c, big, sizeof(big)), -ENOBUFS, "more than a frame");
	ws_conn_free(c);
	ASSERT_ERR(ws_conn_new(true, 0, &c), -EINVAL, "no bound");
}

/* A connection asked for a message before any byte arrived, and fed an
 * empty chunk, has no buffer yet: neither may do arithmetic on it (clang's
 * UBSan stopped test-operator-exec on "applying zero offset to null
 * pointer" in ws_conn_next). */
Test(websocket, next_and_empty_feed_before_any_data)
{
	struct ws_conn *c;
	struct ws_message m;

	ASSERT_OK(ws_conn_new(false, 100, &c), "parser");
	ASSERT_OK(ws_conn_next(c, &m), "nothing received yet");
	ASSERT_OK(ws_conn_feed(c, NULL, 0), "empty chunk");
	ASSERT_OK(ws_conn_next(c, &m), "still nothing");
	cr_assert_eq(ws_conn_room(c), 100 + WS_FRAME_HEAD_MAX);
	ws_conn_free(c);
}

Test(websocket, close_payload_cut_at_a_character)
{
	uint8_t b[125];
	char reason[200];
	size_t n;

	memset(reason, 'a', sizeof(reason));
	/* "é" (2 bytes) straddling byte 123. */
	reason[122] = (char)0xc3;
	reason[123] = (char)0xa9;
	reason[199] = '\0';
	n = ws_close_payload(1000, reason, b);
	cr_assert_eq(n, 2 + 122, "cut before the character: %zu", n);
	cr_assert_eq(b[0], 0x03);
	cr_assert_eq(b[1], 0xe8);
	n = ws_close_payload(1011, NULL, b);
	cr_assert_eq(n, 2);
}
