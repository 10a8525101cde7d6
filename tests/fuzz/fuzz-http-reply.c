/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the HTTP/1.1 reply parser of common/http-client.h
 * (what an operator, an agent or anything listening on their sockets
 * answers flashctl, flowsdn-cni and flash-operator).  The input is a whole
 * reply as read until the server closed.  Properties:
 *  - the head parser and the whole-reply parser never read or write
 *    outside the input (ASan) and agree on the head they accept;
 *  - an accepted reply has a final status (200..599 or 101: interim 1xx
 *    heads before it are skipped) and a body inside the input, no longer
 *    than the bound given, and for a Content-Length reply exactly that
 *    long;
 *  - a head cut anywhere before its blank line is "not yet" (-EAGAIN) or
 *    refused, never accepted;
 *  - the streaming chunked decoder (http_chunked_feed(), what the sandbox
 *    client streams with) agrees with the whole-reply parser on every
 *    chunked body, fed whole or one byte at a time: the same verdict and
 *    the same decoded bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http-client.h"

#define MAX_HEAD 4096
#define MAX_BODY 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

struct collect {
	char *p;
	size_t len, cap;
};

static int collect(const void *data, size_t len, void *userdata)
{
	struct collect *c = userdata;

	if (c->len + len > c->cap)
		return -E2BIG;
	memcpy(c->p + c->len, data, len);
	c->len += len;
	return 0;
}

/* Streams @n bytes through the decoder in pieces of @step: 0 when whole
 * and done, else the error (or -EBADMSG when it did not end). */
static int stream(const char *b, size_t n, size_t step, struct collect *c)
{
	struct http_chunked d = { 0 };
	int r = 0;

	for (size_t off = 0; off < n && r == 0; off += step)
		r = http_chunked_feed(&d, b + off, n - off < step ? n - off : step, collect, c);
	return r ? r : http_chunked_done(&d) ? 0 : -EBADMSG;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_reply_head h1, h2;
	char *buf, *body = NULL;
	size_t blen = 0;
	int r1, r2;

	if (size > MAX_HEAD + MAX_BODY + 64)
		return 0;
	buf = malloc(size ? size : 1);
	check(buf != NULL);
	memcpy(buf, data, size);
	r1 = http_reply_head_parse(buf, size, MAX_HEAD, &h1);
	check(r1 == 0 || r1 == -EAGAIN || r1 == -EMSGSIZE || r1 == -EBADMSG);
	if (r1 == 0) {
		check(h1.status >= 100 && h1.status <= 599);
		check(h1.head_len >= 16 && h1.head_len <= size && h1.head_len <= MAX_HEAD);
		check(!(h1.chunked && h1.has_length));
		/* cut before the blank line: never a head */
		check(http_reply_head_parse(buf, h1.head_len - 1, MAX_HEAD, &h2) != 0);
	}
	r2 = http_reply_parse(buf, size, MAX_HEAD, MAX_BODY, &h2, &body, &blen);
	if (r1 == 0 && h1.chunked && (h1.status >= 200 || h1.status == 101)) {
		const char *raw = (const char *)data + h1.head_len;
		size_t n = size - h1.head_len;
		struct collect c1 = { malloc(MAX_BODY + 1), 0, MAX_BODY }, c2 = { malloc(MAX_BODY + 1), 0, MAX_BODY };
		int s1, s2;

		check(c1.p && c2.p);
		s1 = stream(raw, n, n ? n : 1, &c1);
		s2 = stream(raw, n, 1, &c2);
		check(s1 == s2 || (s1 < 0 && s2 < 0));
		check(s1 != 0 || (c1.len == c2.len && memcmp(c1.p, c2.p, c1.len) == 0));
		/* the whole-reply parser: the same verdict and bytes (E2BIG aside) */
		if (r2 == 0)
			check(s1 == 0 && c1.len == blen && memcmp(c1.p, body, blen) == 0);
		else if (r2 == -EBADMSG)
			check(s1 != 0);
		free(c1.p);
		free(c2.p);
	}
	check(r2 == 0 || r2 == -EMSGSIZE || r2 == -EBADMSG || r2 == -E2BIG);
	if (r2 == 0) {
		check(r1 == 0 && (h2.status >= 200 || h2.status == 101));
		/* the first head is the final one, or an interim 1xx skipped */
		if (h1.status >= 200 || h1.status == 101)
			check(h2.status == h1.status && h2.head_len == h1.head_len && body == buf + h2.head_len);
		check(body >= buf + h2.head_len && blen <= MAX_BODY && (size_t)(body - buf) + blen <= size);
		if (h2.has_length)
			check(blen == h2.length);
	}
	free(buf);
	return 0;
}
