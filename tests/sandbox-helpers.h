/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the tests of sandbox sessions, written once: the provider's
 * tests (tests/unit/test-sandbox*.c, tests/integration/test-sandbox-contract.c)
 * and the provider/v1 routes' (tests/unit/test-operator-sandbox*.c).
 *   - a growing buffer that is a sink of <flash/sandbox.h> and
 *     <flash/client.h> (stdout, stderr, read, export), and a source over
 *     bytes in memory (stdin, write, import);
 *   - a stdin that loses its last bytes, for a backend's exec;
 *   - racing Provisions of one session from two threads;
 *   - a signed client of the routes and the check of an answer's status.
 */
#ifndef FLASH_TESTS_SANDBOX_HELPERS_H
#define FLASH_TESTS_SANDBOX_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <flash/auth.h>
#include <flash/client.h>
#include <flash/sandbox.h>
#include <flash/spec.h>

#include "helpers.h"

/* ------------------------------------------------------------ bytes */

/* What a sink received, NUL-terminated; @fail_after (0: never) makes the
 * sink refuse (-ECANCELED) the bytes that would take it past that many,
 * as a client that goes away. */
struct test_buf {
	char *p;
	size_t len;
	size_t fail_after;
};

static inline int test_buf_sink(const void *buf, size_t len, void *userdata)
{
	struct test_buf *b = userdata;
	char *np;

	if (b->fail_after && b->len + len > b->fail_after)
		return -ECANCELED;
	np = realloc(b->p, b->len + len + 1);
	if (!np)
		return -ENOMEM;
	memcpy(np + b->len, buf, len);
	b->p = np;
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

static inline void test_buf_reset(struct test_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
}

/* @len bytes at @p handed out from @off on, at most @chunk (0: any) at a
 * time; at the end 0 (EOF), or @fail_at_end (a negative errno) instead. */
struct test_src {
	const void *p;
	size_t len, off, chunk;
	int fail_at_end;
};

static inline ssize_t test_src_read(void *buf, size_t cap, void *userdata)
{
	struct test_src *s = userdata;
	size_t n = s->len - s->off;

	if (n == 0)
		return s->fail_at_end ? s->fail_at_end : 0;
	if (n > cap)
		n = cap;
	if (s->chunk && n > s->chunk)
		n = s->chunk;
	memcpy(buf, (const char *)s->p + s->off, n);
	s->off += n;
	return (ssize_t)n;
}

/* The stdin of @io (a backend's exec) less its last @drop bytes, as a
 * transport that loses them: test_drop_stdin() as the stdin source holds
 * back up to sizeof(held) bytes read from @io's own. */
struct test_dropper {
	const struct flash_sandbox_exec_io *io;
	size_t drop;
	char held[65536];
	size_t held_len;
	bool eof;
};

static inline ssize_t test_drop_stdin(void *buf, size_t cap, void *userdata)
{
	struct test_dropper *d = userdata;

	for (;;) {
		if (d->held_len > d->drop) {
			size_t n = d->held_len - d->drop < cap ? d->held_len - d->drop : cap;

			memcpy(buf, d->held, n);
			memmove(d->held, d->held + n, d->held_len - n);
			d->held_len -= n;
			return (ssize_t)n;
		}
		if (d->eof)
			return 0;
		ssize_t n = d->io->stdin_fn(d->held + d->held_len, sizeof(d->held) - d->held_len,
					    d->io->stdin_userdata);
		if (n < 0)
			return n;
		if (n == 0)
			d->eof = true;
		d->held_len += (size_t)n;
	}
}

/* ------------------------------------------------------------ provision */

/* One caller of a Provision race: test_provision_race() as a thread's
 * function provisions @sid from @spec for @ttl seconds on @p; the result
 * in @r and @info. */
struct test_racer {
	struct flash_sandbox_provider *p;
	const struct flash_spec *spec;
	const char *sid;
	uint32_t ttl;
	struct flash_sandbox_info info;
	int r;
};

static inline void *test_provision_race(void *arg)
{
	struct test_racer *x = arg;

	x->r = flash_sandbox_provision(x->p, x->sid, x->spec, x->ttl, &x->info, NULL);
	return NULL;
}

/* ------------------------------------------------------------ the routes */

/* A client of @endpoint whose tokens @signer signs for @org/@project
 * (issuer and audience @iss, @aud). */
static inline struct flash_client *test_sandbox_client(const char *endpoint, struct flash_auth_signer *signer,
							const char *iss, const char *aud, const char *org,
							const char *project)
{
	struct flash_client_opts co = { .sz = sizeof(co), .endpoint = endpoint, .timeout_ms = 20000 };
	struct flash_client_identity id = { .sz = sizeof(id), .issuer = iss, .audience = aud, .organization = org,
					    .project = project };
	struct flash_client *c = NULL;

	ASSERT_OK(flash_client_new(&co, &c), "client");
	ASSERT_OK(flash_client_set_signer(c, signer, &id), "signer");
	return c;
}

/* @r answers with @status and, unless NULL, the error code @code. */
static inline void test_expect_status(struct flash_client_response *r, int status, const char *code, const char *what)
{
	cr_assert(r, "%s: no answer", what);
	cr_assert_eq(flash_client_response_status(r), status, "%s: status %d, not %d: %s", what,
		     flash_client_response_status(r), status, flash_client_response_body(r, NULL));
	if (code)
		cr_assert_str_eq(flash_client_response_error_code(r), code, "%s", what);
}

#endif
