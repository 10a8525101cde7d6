/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * WebSocket handshake checks and framing (websocket.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "websocket.h"

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* ---------------------------------------------------------------- SHA-1 */

static uint32_t rol(uint32_t x, unsigned int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k, t;

		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void ws_sha1(const void *data, size_t len, uint8_t ret[20])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	const uint8_t *p = data;
	uint8_t tail[128] = { 0 };
	size_t full = len / 64 * 64, rest = len - full, tl;
	uint64_t bits = (uint64_t)len * 8;

	for (size_t i = 0; i < full; i += 64)
		sha1_block(h, p + i);
	if (rest)
		memcpy(tail, p + full, rest);
	tail[rest] = 0x80;
	tl = rest + 1 + 8 <= 64 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
	sha1_block(h, tail);
	if (tl == 128)
		sha1_block(h, tail + 64);
	for (int i = 0; i < 5; i++) {
		ret[4 * i] = (uint8_t)(h[i] >> 24);
		ret[4 * i + 1] = (uint8_t)(h[i] >> 16);
		ret[4 * i + 2] = (uint8_t)(h[i] >> 8);
		ret[4 * i + 3] = (uint8_t)h[i];
	}
}

/* ---------------------------------------------------------------- handshake */

int ws_accept_value(const char *key, char ret[WS_ACCEPT_STRLEN])
{
	uint8_t raw[16], digest[20];
	char buf[WS_KEY_STRLEN - 1 + sizeof(ws_guid)];
	size_t n = 0;

	if (!key || strlen(key) != WS_KEY_STRLEN - 1 ||
	    sodium_base642bin(raw, sizeof(raw), key, strlen(key), NULL, &n, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    n != sizeof(raw))
		return -EINVAL;
	memcpy(buf, key, WS_KEY_STRLEN - 1);
	memcpy(buf + WS_KEY_STRLEN - 1, ws_guid, sizeof(ws_guid) - 1);
	ws_sha1(buf, sizeof(buf) - 1, digest);
	sodium_bin2base64(ret, WS_ACCEPT_STRLEN, digest, sizeof(digest), sodium_base64_VARIANT_ORIGINAL);
	return 0;
}

void ws_client_key(char ret[WS_KEY_STRLEN])
{
	uint8_t raw[16];

	randombytes_buf(raw, sizeof(raw));
	sodium_bin2base64(ret, WS_KEY_STRLEN, raw, sizeof(raw), sodium_base64_VARIANT_ORIGINAL);
}

bool ws_token_list_has(const char *list, const char *token)
{
	size_t tl = strlen(token);

	for (const char *p = list; p && *p;) {
		const char *end;
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		end = p;
		while (*end && *end != ',')
			end++;
		n = (size_t)(end - p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == tl && n && strncasecmp(p, token, n) == 0)
			return true;
		p = end;
	}
	return false;
}

int ws_server_check(const struct ws_handshake *h, const char *protocol, char ret_accept[WS_ACCEPT_STRLEN], char *err,
		    size_t err_size)
{
	char accept[WS_ACCEPT_STRLEN];

	if (!h || !ret_accept)
		return -EINVAL;
	if (!h->method || strcmp(h->method, "GET") != 0) {
		snprintf(err, err_size, "a WebSocket handshake is a GET request");
		return -EINVAL;
	}
	if (!ws_token_list_has(h->upgrade, "websocket")) {
		snprintf(err, err_size, "the request needs \"Upgrade: websocket\"");
		return -EINVAL;
	}
	if (!ws_token_list_has(h->connection, "upgrade")) {
		snprintf(err, err_size, "the request needs \"Connection: Upgrade\"");
		return -EINVAL;
	}
	if (!h->version || strcmp(h->version, "13") != 0) {
		snprintf(err, err_size, "Sec-WebSocket-Version %.16s%s: only 13 is spoken", h->version ? h->version : "",
			 h->version ? "" : "(missing)");
		return -EPROTONOSUPPORT;
	}
	if (ws_accept_value(h->key, accept) < 0) {
		snprintf(err, err_size, "Sec-WebSocket-Key must be the base64 of 16 bytes");
		return -EINVAL;
	}
	if (protocol && !ws_token_list_has(h->protocol, protocol)) {
		snprintf(err, err_size, "Sec-WebSocket-Protocol must offer %s", protocol);
		return -EINVAL;
	}
	memcpy(ret_accept, accept, sizeof(accept));
	return 0;
}

/* The value of header @name in a response head, copied into @buf; false
 * when absent (or longer than @size). */
static bool head_value(const char *head, size_t len, const char *name, char *buf, size_t size)
{
	size_t nl = strlen(name);

	for (const char *p = memchr(head, '\n', len), *end = head + len; p && p < end;) {
		const char *line = p + 1, *eol = memchr(line, '\n', (size_t)(end - line));
		size_t ll;

		if (!eol)
			eol = end;
		ll = (size_t)(eol - line);
		if (ll && line[ll - 1] == '\r')
			ll--;
		if (ll > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
			const char *v = line + nl + 1;
			size_t vl = ll - nl - 1;

			while (vl && (*v == ' ' || *v == '\t'))
				v++, vl--;
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (vl >= size)
				return false;
			memcpy(buf, v, vl);
			buf[vl] = '\0';
			return true;
		}
		p = eol < end ? eol : NULL;
	}
	return false;
}

int ws_client_check_response(const char *head, size_t len, const char *key, const char *protocol, int *ret_status,
			     char *err, size_t err_size)
{
	char v[256], want[WS_ACCEPT_STRLEN];
	int status;

	if (!head || !key || !ret_status)
		return -EINVAL;
	if (len < 12 || strncmp(head, "HTTP/1.1 ", 9) != 0 || !isdigit((unsigned char)head[9]) ||
	    !isdigit((unsigned char)head[10]) || !isdigit((unsigned char)head[11])) {
		snprintf(err, err_size, "the answer is not an HTTP/1.1 status line");
		return -EINVAL;
	}
	status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
	*ret_status = status;
	if (status != 101) {
		snprintf(err, err_size, "the server answered %d, not 101 Switching Protocols", status);
		return -EINVAL;
	}
	if (!head_value(head, len, "Upgrade", v, sizeof(v)) || !ws_token_list_has(v, "websocket")) {
		snprintf(err, err_size, "the answer lacks \"Upgrade: websocket\"");
		return -EINVAL;
	}
	if (!head_value(head, len, "Connection", v, sizeof(v)) || !ws_token_list_has(v, "upgrade")) {
		snprintf(err, err_size, "the answer lacks \"Connection: Upgrade\"");
		return -EINVAL;
	}
	if (ws_accept_value(key, want) < 0 || !head_value(head, len, "Sec-WebSocket-Accept", v, sizeof(v)) ||
	    strcmp(v, want) != 0) {
		snprintf(err, err_size, "Sec-WebSocket-Accept is missing or not the value of our key");
		return -EINVAL;
	}
	if (protocol && (!head_value(head, len, "Sec-WebSocket-Protocol", v, sizeof(v)) || strcmp(v, protocol) != 0)) {
		snprintf(err, err_size, "the server did not choose the subprotocol %s", protocol);
		return -EINVAL;
	}
	if (!protocol && head_value(head, len, "Sec-WebSocket-Protocol", v, sizeof(v))) {
		snprintf(err, err_size, "the server chose a subprotocol (%.64s) that was not offered", v);
		return -EINVAL;
	}
	return 0;
}

/* ---------------------------------------------------------------- frames */

long ws_frame_encode(uint8_t opcode, bool fin, bool mask, const void *payload, size_t len, uint8_t *buf, size_t size)
{
	size_t h = 2;
	uint8_t key[4];

	if ((opcode & 0x8) && (len > 125 || !fin))
		return -EINVAL;
	if ((opcode & 0xf) != opcode || (len && !payload))
		return -EINVAL;
	h += len < 126 ? 0 : len <= 0xffff ? 2 : 8;
	h += mask ? 4 : 0;
	if (size < h || size - h < len)
		return -ENOBUFS;
	buf[0] = (uint8_t)((fin ? 0x80 : 0) | opcode);
	if (len < 126) {
		buf[1] = (uint8_t)len;
	} else if (len <= 0xffff) {
		buf[1] = 126;
		buf[2] = (uint8_t)(len >> 8);
		buf[3] = (uint8_t)len;
	} else {
		buf[1] = 127;
		for (int i = 0; i < 8; i++)
			buf[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
	}
	if (mask) {
		buf[1] |= 0x80;
		randombytes_buf(key, sizeof(key));
		memcpy(buf + h - 4, key, 4);
		for (size_t i = 0; i < len; i++)
			buf[h + i] = ((const uint8_t *)payload)[i] ^ key[i & 3];
	} else if (len) {
		memmove(buf + h, payload, len);
	}
	return (long)(h + len);
}

size_t ws_close_payload(uint16_t code, const char *reason, uint8_t buf[125])
{
	size_t n = reason ? strlen(reason) : 0;

	if (n > 123)
		n = 123;
	/* Cut at a character boundary. */
	while (n && reason[n] && ((unsigned char)reason[n] & 0xc0) == 0x80)
		n--;
	buf[0] = (uint8_t)(code >> 8);
	buf[1] = (uint8_t)code;
	if (n)
		memcpy(buf + 2, reason, n);
	return n + 2;
}

struct ws_conn {
	bool from_client;
	size_t max;
	uint8_t *in;          /* received, not yet parsed */
	size_t in_len, in_size;
	size_t consumed;      /* of in, by the last message handed out */
	uint8_t *msg;         /* a fragmented message being assembled */
	size_t msg_len;
	uint8_t msg_opcode;   /* 0: none begun */
	uint8_t ctl[125];     /* a control frame's payload */
	uint16_t close_code;  /* != 0: refused */
	char error[96];
};

int ws_conn_new(bool from_client, size_t max_message, struct ws_conn **ret)
{
	struct ws_conn *c;

	if (!ret || max_message == 0 || max_message > (1u << 30))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->from_client = from_client;
	c->max = max_message;
	*ret = c;
	return 0;
}

void ws_conn_free(struct ws_conn *c)
{
	if (!c)
		return;
	free(c->in);
	free(c->msg);
	free(c);
}

static int refuse(struct ws_conn *c, uint16_t code, const char *why)
{
	c->close_code = code;
	snprintf(c->error, sizeof(c->error), "%s", why);
	return -EPROTO;
}

int ws_conn_feed(struct ws_conn *c, const void *data, size_t len)
{
	size_t bound;

	if (!c || (len && !data))
		return -EINVAL;
	if (c->close_code)
		return -EPROTO;
	if (len == 0) /* nothing to add, and c->in may still be NULL */
		return 0;
	if (c->consumed) {
		memmove(c->in, c->in + c->consumed, c->in_len - c->consumed);
		c->in_len -= c->consumed;
		c->consumed = 0;
	}
	/* One frame at most waits here: its head and payload. */
	bound = c->max + WS_FRAME_HEAD_MAX;
	if (len > bound - c->in_len)
		return -ENOBUFS;
	if (c->in_len + len > c->in_size) {
		size_t ns = c->in_size ? c->in_size : 4096;
		uint8_t *n;

		while (ns < c->in_len + len)
			ns *= 2;
		if (ns > bound)
			ns = bound;
		n = realloc(c->in, ns);
		if (!n)
			return -ENOMEM;
		c->in = n;
		c->in_size = ns;
	}
	memcpy(c->in + c->in_len, data, len);
	c->in_len += len;
	return 0;
}

size_t ws_conn_room(const struct ws_conn *c)
{
	if (!c || c->close_code)
		return 0;
	return c->max + WS_FRAME_HEAD_MAX - (c->in_len - c->consumed);
}

static bool close_code_sendable(uint16_t code)
{
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) || (code >= 3000 && code <= 4999);
}

int ws_conn_next(struct ws_conn *c, struct ws_message *ret)
{
	if (!c || !ret)
		return -EINVAL;
	if (c->close_code)
		return -EPROTO;
	for (;;) {
		const uint8_t *p;
		size_t avail = c->in_len - c->consumed, h = 2;
		uint64_t len;
		bool fin, masked;
		uint8_t op, *dst;

		if (avail < 2)
			return 0;
		p = c->in + c->consumed; /* not before: c->in is NULL until the first feed */
		fin = p[0] & 0x80;
		op = p[0] & 0x0f;
		masked = p[1] & 0x80;
		len = p[1] & 0x7f;
		if (p[0] & 0x70)
			return refuse(c, WS_CLOSE_PROTOCOL, "reserved bits set (no extension was negotiated)");
		if (op != WS_OP_CONTINUATION && op != WS_OP_TEXT && op != WS_OP_BINARY && op != WS_OP_CLOSE &&
		    op != WS_OP_PING && op != WS_OP_PONG)
			return refuse(c, WS_CLOSE_PROTOCOL, "unknown opcode");
		if (masked != c->from_client)
			return refuse(c, WS_CLOSE_PROTOCOL,
				      c->from_client ? "a client's frames must be masked" : "a server's frames must not be masked");
		if ((op & 0x8) && (!fin || len > 125))
			return refuse(c, WS_CLOSE_PROTOCOL, "a control frame must be whole and at most 125 bytes");
		if (len == 126) {
			if (avail < 4)
				return 0;
			len = (uint64_t)p[2] << 8 | p[3];
			h = 4;
			if (len < 126)
				return refuse(c, WS_CLOSE_PROTOCOL, "a length not in its shortest form");
		} else if (len == 127) {
			if (avail < 10)
				return 0;
			len = 0;
			for (int i = 0; i < 8; i++)
				len = len << 8 | p[2 + i];
			h = 10;
			if (len >> 63)
				return refuse(c, WS_CLOSE_PROTOCOL, "a length with the top bit set");
			if (len <= 0xffff)
				return refuse(c, WS_CLOSE_PROTOCOL, "a length not in its shortest form");
		}
		if (op == WS_OP_CONTINUATION && !c->msg_opcode)
			return refuse(c, WS_CLOSE_PROTOCOL, "a continuation frame with no message begun");
		if ((op == WS_OP_TEXT || op == WS_OP_BINARY) && c->msg_opcode)
			return refuse(c, WS_CLOSE_PROTOCOL, "a new message inside a fragmented one");
		if (len > c->max || (!(op & 0x8) && c->msg_len + len > c->max))
			return refuse(c, WS_CLOSE_TOO_BIG, "the message is larger than allowed");
		h += masked ? 4 : 0;
		if (avail < h || avail - h < len)
			return 0;
		/* The payload, unmasked in place. */
		dst = c->in + c->consumed + h;
		if (masked)
			for (size_t i = 0; i < len; i++)
				dst[i] ^= p[h - 4 + (i & 3)];
		c->consumed += h + (size_t)len;
		memset(ret, 0, sizeof(*ret));
		if (op & 0x8) {
			ret->opcode = op;
			memcpy(c->ctl, dst, (size_t)len);
			ret->data = c->ctl;
			ret->len = (size_t)len;
			if (op == WS_OP_CLOSE) {
				ret->close_code = WS_CLOSE_NO_STATUS;
				if (len == 1)
					return refuse(c, WS_CLOSE_PROTOCOL, "a close frame of one byte");
				if (len >= 2) {
					ret->close_code = (uint16_t)(c->ctl[0] << 8 | c->ctl[1]);
					if (!close_code_sendable(ret->close_code))
						return refuse(c, WS_CLOSE_PROTOCOL, "a close code that may not be sent");
					if (!json_utf8_valid(c->ctl + 2, (size_t)len - 2))
						return refuse(c, WS_CLOSE_INVALID, "a close reason that is not UTF-8");
				}
			}
			return 1;
		}
		if (fin && !c->msg_opcode) {
			/* A whole message in one frame: handed out in place. */
			if (op == WS_OP_TEXT && !json_utf8_valid(dst, (size_t)len))
				return refuse(c, WS_CLOSE_INVALID, "a text message that is not UTF-8");
			ret->opcode = op;
			ret->data = dst;
			ret->len = (size_t)len;
			return 1;
		}
		if (len) {
			uint8_t *n = realloc(c->msg, c->msg_len + (size_t)len);

			if (!n)
				return refuse(c, WS_CLOSE_INTERNAL, "out of memory");
			memcpy(n + c->msg_len, dst, (size_t)len);
			c->msg = n;
			c->msg_len += (size_t)len;
		}
		if (op != WS_OP_CONTINUATION)
			c->msg_opcode = op;
		if (!fin)
			continue;
		if (c->msg_opcode == WS_OP_TEXT && !json_utf8_valid(c->msg, c->msg_len))
			return refuse(c, WS_CLOSE_INVALID, "a text message that is not UTF-8");
		ret->opcode = c->msg_opcode;
		ret->data = c->msg;
		ret->len = c->msg_len;
		c->msg_opcode = 0;
		/* Emptied for the next message; the data stays until then. */
		c->msg_len = 0;
		return 1;
	}
}

uint16_t ws_conn_close_code(const struct ws_conn *c)
{
	return c ? c->close_code : 0;
}

const char *ws_conn_error(const struct ws_conn *c)
{
	return c && c->close_code ? c->error : "";
}
