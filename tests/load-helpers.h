/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A load driver for the daemons' HTTP APIs (issue 21 item 4): N client
 * threads call one request function in a loop for a given time; the
 * driver counts answers and errors, keeps every latency for the median,
 * p99 and maximum, and samples the server's RSS (VmRSS of a pid) every
 * 100 ms.  LOAD_SECONDS overrides the duration. */
#ifndef FLASH_TESTS_LOAD_HELPERS_H
#define FLASH_TESTS_LOAD_HELPERS_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* An RSS bound measured on a plain build, for this build: AddressSanitizer
 * keeps freed blocks in a quarantine (256 MiB by default) and adds shadow
 * memory and redzones, so under it the bound grows by that much and by
 * the allocator's factor. */
#if defined(__SANITIZE_ADDRESS__)
#define LOAD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOAD_ASAN 1
#endif
#endif
static inline long load_rss_bound_kib(long plain_kib)
{
#ifdef LOAD_ASAN
	return 4 * plain_kib + 512 * 1024;
#else
	return plain_kib;
#endif
}

/* One request: returns the HTTP status (200 counts as success); @thread
 * is the caller's index, @msg (256 bytes) says what went wrong. */
typedef int (*load_request_fn)(void *ctx, unsigned int thread, char *msg);

struct load_result {
	unsigned long ok, errors;
	double p50_ms, p99_ms, max_ms, seconds;
	long rss_first_kib, rss_last_kib, rss_max_kib; /* of the pid, over the run */
	char first_error[256];
};

struct load_thread {
	load_request_fn fn;
	void *ctx;
	unsigned int index;
	double until;
	double *lat;
	size_t n, cap;
	unsigned long errors;
	char first_error[256];
};

static inline double load_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline long load_rss_kib(pid_t pid)
{
	char path[64], line[128];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static inline void *load_thread_main(void *arg)
{
	struct load_thread *t = arg;

	while (load_now_ms() < t->until) {
		char msg[256] = "";
		double t0 = load_now_ms();
		int status = t->fn(t->ctx, t->index, msg);

		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 4096;
			t->lat = realloc(t->lat, t->cap * sizeof(*t->lat));
			if (!t->lat)
				abort();
		}
		t->lat[t->n++] = load_now_ms() - t0;
		if (status != 200) {
			if (!t->errors++)
				snprintf(t->first_error, sizeof(t->first_error), "status %d: %s", status, msg);
		}
	}
	return NULL;
}

static inline int load_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The duration: LOAD_SECONDS when set, else @seconds. */
static inline double load_seconds(double seconds)
{
	const char *e = getenv("LOAD_SECONDS");

	return e && atof(e) > 0 ? atof(e) : seconds;
}

static inline void load_run(load_request_fn fn, void *ctx, unsigned int threads, double seconds, pid_t pid,
			    struct load_result *r)
{
	struct load_thread *t = calloc(threads, sizeof(*t));
	pthread_t *ids = calloc(threads, sizeof(*ids));
	double start = load_now_ms(), *all;
	size_t n = 0;

	cr_assert(t && ids);
	memset(r, 0, sizeof(*r));
	r->rss_first_kib = r->rss_max_kib = load_rss_kib(pid);
	for (unsigned int i = 0; i < threads; i++) {
		t[i] = (struct load_thread){ .fn = fn, .ctx = ctx, .index = i, .until = start + seconds * 1e3 };
		cr_assert(pthread_create(&ids[i], NULL, load_thread_main, &t[i]) == 0);
	}
	while (load_now_ms() < start + seconds * 1e3) {
		long kib = load_rss_kib(pid);

		r->rss_last_kib = kib;
		if (kib > r->rss_max_kib)
			r->rss_max_kib = kib;
		usleep(100000);
	}
	for (unsigned int i = 0; i < threads; i++)
		pthread_join(ids[i], NULL);
	r->seconds = (load_now_ms() - start) / 1e3;
	for (unsigned int i = 0; i < threads; i++)
		n += t[i].n;
	all = malloc((n ? n : 1) * sizeof(*all));
	cr_assert(all);
	n = 0;
	for (unsigned int i = 0; i < threads; i++) {
		memcpy(all + n, t[i].lat, t[i].n * sizeof(*all));
		n += t[i].n;
		r->errors += t[i].errors;
		if (t[i].errors && !r->first_error[0])
			snprintf(r->first_error, sizeof(r->first_error), "%s", t[i].first_error);
		free(t[i].lat);
	}
	qsort(all, n, sizeof(*all), load_cmp);
	r->ok = n - r->errors;
	if (n) {
		r->p50_ms = all[n / 2];
		r->p99_ms = all[(size_t)((double)n * 0.99)];
		r->max_ms = all[n - 1];
	}
	free(all);
	free(ids);
	free(t);
}

static inline void load_print(const char *what, unsigned int threads, const struct load_result *r)
{
	cr_log_info("%s: %u clients, %.1f s: %lu answered, %lu errors, %.0f/s; latency median %.2f ms, p99 %.2f ms, "
		    "max %.2f ms; RSS %ld KiB first, %ld KiB last, %ld KiB max",
		    what, threads, r->seconds, r->ok, r->errors, (double)(r->ok + r->errors) / r->seconds, r->p50_ms,
		    r->p99_ms, r->max_ms, r->rss_first_kib, r->rss_last_kib, r->rss_max_kib);
	printf("%s: %u clients, %.1f s: %lu answered, %lu errors; median %.2f ms, p99 %.2f ms, max %.2f ms; "
	       "RSS %ld -> %ld KiB (max %ld)\n",
	       what, threads, r->seconds, r->ok, r->errors, r->p50_ms, r->p99_ms, r->max_ms, r->rss_first_kib,
	       r->rss_last_kib, r->rss_max_kib);
	fflush(stdout);
}

/* Sends the whole request @req on the Unix socket @path and reads the
 * answer into @out: its status, 0 when none (@out then says why).  No
 * assertion: it runs in the load threads.
 *
 * A connection the server closed before any byte of the request went out
 * (send() fails with EPIPE or ECONNRESET) is made again, at most twice, as
 * an HTTP client does with a request it never sent: a client thread
 * descheduled between connect() and send() looks, to a front door full of
 * heads still arriving, exactly like the slowest of them, and the door
 * rightly makes room with it (1 in about 370,000 requests of the agent's
 * trickling-clients test on 2 loaded CPUs).  A request that went out and
 * got no answer is still an error. */
static inline int load_unix_exchange(const char *path, const char *req, char *out, size_t out_size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	int fd = -1, status = 0;
	size_t len = strlen(req), got = 0;
	ssize_t n;

	out[0] = '\0';
	if (strlen(path) >= sizeof(sa.sun_path))
		return 0;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	for (int attempt = 0;; attempt++) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return 0;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			snprintf(out, out_size, "connect: %m");
			close(fd);
			return 0;
		}
		n = send(fd, req, len, MSG_NOSIGNAL);
		if (n == (ssize_t)len)
			break;
		snprintf(out, out_size, "send (attempt %d): %m", attempt + 1);
		close(fd);
		if (n >= 0 || (errno != EPIPE && errno != ECONNRESET) || attempt == 2)
			return 0;
	}
	while (got < out_size - 1 && (n = read(fd, out + got, out_size - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
	if (sscanf(out, "HTTP/1.%*d %d", &status) != 1)
		status = 0;
	return status;
}

#endif
