/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Raw HTTP/1.1 exchanges for the tests of the daemons' HTTP servers
 * (common/http-server.c behind flowsdn-agent and flash-operator). */
#ifndef FLASH_TESTS_HTTP_HELPERS_H
#define FLASH_TESTS_HTTP_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Sends @len bytes of @req on the connected socket @fd (closed here),
 * reads the answer into @out (at most 3 s of waiting) and returns its
 * status, 0 when there was none. */
static inline int test_http_exchange(int fd, const char *req, size_t len, char *out, size_t out_size)
{
	struct timeval tv = { .tv_sec = 3 };
	size_t got = 0;
	ssize_t n;
	int status = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	cr_assert_eq(write(fd, req, len), (ssize_t)len);
	while (got < out_size - 1 && (n = read(fd, out + got, out_size - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
	if (sscanf(out, "HTTP/1.%*d %d", &status) != 1)
		status = 0;
	return status;
}

#endif
