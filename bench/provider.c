/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/provider: flash-operator's provider/v1 under load on loopback,
 * beside the raw EdDSA JWT verification rate of the same machine.
 *
 *   bench/provider [--seconds N] [--clients N] [--threads N]
 *
 * An operator (the operator/ library in a child process, TCP 127.0.0.1,
 * with the test image seam: libflash's OCI resolver is not in this build)
 * serves N concurrent clients (<flash/client.h>, keep-alive, tokens
 * minted once per phase) doing `get` of one service, then `create` of
 * new services, for N seconds each.  Printed: requests/s, p50/p95/p99,
 * errors (anything but 200/201), the single-core flash_auth_verify()
 * rate measured before and after the load, the operator's RSS before and
 * after each phase, and the load average.  Figures only: no pass/fail.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>

#include "daemon.h"
#include "operator-helpers.h"
#include "util.h"
#include "bench.h"

static char dir[64], keys_path[128];
static struct flash_auth_signer *signer;
static struct flash_auth_keyset *keyset;

static void loadavg(char *buf, size_t size)
{
	FILE *f = fopen("/proc/loadavg", "re");

	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Single-core verification rate over @secs seconds. */
static double verify_rate(double secs)
{
	char *tok = test_mint(signer, "org-bench", "p1", FLASH_AUTH_ACTION_GET, UINT64_MAX);
	FLASH_OPTS(flash_auth_verify_opts, vo, .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE,
		   .action = FLASH_AUTH_ACTION_GET);
	size_t len = strlen(tok), n = 0;
	double t0 = bench_now_s(), t;

	do {
		for (int i = 0; i < 64; i++)
			if (flash_auth_verify(keyset, tok, len, &vo, NULL, NULL) == 0)
				n++;
		t = bench_now_s();
	} while (t - t0 < secs);
	free(tok);
	return (double)n / (t - t0);
}

struct worker {
	pthread_t th;
	int index;
	enum flash_auth_action action;
	const char *endpoint, *token, *service_id, *spec;
	double until;
	double *lat;  /* seconds */
	size_t n, cap;
	size_t errors;
	char first_error[256];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct flash_client_opts co = { .sz = sizeof(co), .endpoint = w->endpoint, .timeout_ms = 10000 };
	struct flash_client *c = NULL;
	char name[64];

	if (flash_client_new(&co, &c) < 0 || flash_client_set_token(c, w->token) < 0) {
		w->errors++;
		return NULL;
	}
	for (size_t seq = 0;; seq++) {
		struct flash_client_response *resp = NULL;
		double t0 = bench_now_s(), t1;
		int r, want;

		if (t0 >= w->until)
			break;
		if (w->action == FLASH_AUTH_ACTION_GET) {
			r = flash_client_get(c, w->service_id, &resp);
			want = 200;
		} else {
			snprintf(name, sizeof(name), "b-%d-%zu", w->index, seq);
			r = flash_client_create(c, name, w->spec, strlen(w->spec), 1, &resp);
			want = 201;
		}
		t1 = bench_now_s();
		if (r < 0 || flash_client_response_status(resp) != want) {
			if (!w->errors)
				snprintf(w->first_error, sizeof(w->first_error), "%s",
					 r < 0 ? strerror(-r) : flash_client_response_body(resp, NULL));
			w->errors++;
		}
		flash_client_response_free(resp);
		if (w->n == w->cap) {
			size_t nc = w->cap ? w->cap * 2 : 4096;
			double *nl = realloc(w->lat, nc * sizeof(*nl));

			if (!nl)
				break;
			w->lat = nl;
			w->cap = nc;
		}
		w->lat[w->n++] = t1 - t0;
	}
	flash_client_free(c);
	return NULL;
}

static double pct(const double *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i];
}

/* One phase: @clients workers for @secs seconds; prints its line and
 * returns the requests per second. */
static double phase(const char *label, enum flash_auth_action action, unsigned int clients, double secs,
		    const char *endpoint, const char *service_id, const char *spec, pid_t op)
{
	char *tok = test_mint(signer, "org-bench", "p1", action,
			      action == FLASH_AUTH_ACTION_CREATE ? 1 : UINT64_MAX);
	struct worker *w = calloc(clients, sizeof(*w));
	long rss0 = rss_kib(op), rss1;
	double t0 = bench_now_s(), elapsed, rps;
	double *all = NULL;
	size_t n = 0, errors = 0;
	const char *first_error = "";

	for (unsigned int i = 0; i < clients; i++) {
		w[i] = (struct worker){ .index = (int)i, .action = action, .endpoint = endpoint, .token = tok,
					.service_id = service_id, .spec = spec, .until = t0 + secs };
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	for (unsigned int i = 0; i < clients; i++)
		pthread_join(w[i].th, NULL);
	elapsed = bench_now_s() - t0;
	for (unsigned int i = 0; i < clients; i++)
		n += w[i].n;
	all = malloc((n ? n : 1) * sizeof(*all));
	n = 0;
	for (unsigned int i = 0; i < clients; i++) {
		memcpy(all + n, w[i].lat, w[i].n * sizeof(*all));
		n += w[i].n;
		errors += w[i].errors;
		if (w[i].errors && !first_error[0])
			first_error = w[i].first_error;
	}
	qsort(all, n, sizeof(*all), bench_cmp_double);
	rss1 = rss_kib(op);
	rps = (double)n / elapsed;
	printf("%-7s clients=%-3u requests=%-8zu errors=%-4zu req/s=%-9.0f p50=%.3f ms p95=%.3f ms p99=%.3f ms"
	       "  operator RSS %ld -> %ld KiB\n",
	       label, clients, n, errors, rps, pct(all, n, 0.50) * 1e3, pct(all, n, 0.95) * 1e3, pct(all, n, 0.99) * 1e3,
	       rss0, rss1);
	if (errors)
		printf("        first error: %s\n", first_error);
	for (unsigned int i = 0; i < clients; i++)
		free(w[i].lat);
	free(w);
	free(all);
	free(tok);
	return rps;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "clients", required_argument, NULL, 'c' },
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	unsigned int seconds = 30, clients = 4, threads = 0; /* 0: the operator's default */
	int pfd[2], c, status;
	unsigned char pk[32];
	char *jwks = NULL, endpoint[64], la0[128], la1[128], cmd[128];
	uint16_t port = 0;
	pid_t op;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 's': seconds = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'c': clients = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 't': threads = (unsigned int)strtoul(optarg, NULL, 10); break;
		default:
			printf("Usage: %s [--seconds N] [--clients N] [--threads N]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (!seconds || !clients || clients > 256 || threads > 64) {
		fprintf(stderr, "provider: --seconds >= 1, --clients 1..256, --threads 0..64\n");
		return 2;
	}
	if (sodium_init() < 0 || flash_auth_signer_generate("bench", &signer) < 0 ||
	    flash_auth_signer_public_key(signer, pk) < 0 || flash_auth_keyset_new(&keyset) < 0 ||
	    flash_auth_keyset_add(keyset, "bench", pk) < 0 || flash_auth_keyset_to_jwks(keyset, &jwks) < 0)
		return 1;
	strcpy(dir, "/tmp/bench-provider-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(keys_path, sizeof(keys_path), "%s/keys.jwks", dir);
	if (util_write_file_atomic(keys_path, jwks, strlen(jwks), 0600) < 0 || pipe2(pfd, O_CLOEXEC) < 0)
		return 1;
	free(jwks);

	struct op_daemon_opts o = { .sz = sizeof(o), .state_dir = dir, .keys_file = keys_path, .issuer = TEST_ISSUER,
				    .audience = TEST_AUDIENCE, .image = &test_image_ops };
	o.http.sz = sizeof(o.http);
	o.http.listen = "127.0.0.1:0";
	o.http.threads = threads;
	o.http.max_connections = 1024;
	o.http.per_ip_connections = 512;
	op = test_operator_fork(&o, pfd[1]);
	close(pfd[1]);
	if (op < 0 || read(pfd[0], &port, sizeof(port)) != sizeof(port)) {
		fprintf(stderr, "provider: the operator did not start\n");
		return 1;
	}
	close(pfd[0]);
	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u", port);

	/* The service the get phase reads. */
	char *spec = test_spec("test.invalid/bench:4096", 1, 1, 1), *tok, id[64] = "";
	struct flash_client_opts co = { .sz = sizeof(co), .endpoint = endpoint };
	struct flash_client *cl = NULL;
	struct flash_client_response *resp = NULL;
	tok = test_mint(signer, "org-bench", "p1", FLASH_AUTH_ACTION_CREATE, 1);
	if (flash_client_new(&co, &cl) < 0 || flash_client_set_token(cl, tok) < 0 ||
	    flash_client_create(cl, "target", spec, strlen(spec), 1, &resp) < 0 ||
	    flash_client_response_status(resp) != 201) {
		fprintf(stderr, "provider: cannot create the target service: %s\n",
			resp ? flash_client_response_body(resp, NULL) : "no answer");
		kill(op, SIGKILL);
		return 1;
	}
	const char *body = flash_client_response_body(resp, NULL), *p = strstr(body, "\"id\":\"");
	if (p)
		snprintf(id, sizeof(id), "%.35s", p + 6);
	flash_client_response_free(resp);
	flash_client_free(cl);
	free(tok);

	loadavg(la0, sizeof(la0));
	printf("bench/provider: %u s per phase, %u clients, operator threads %u (0: one per CPU), %ld CPUs, loopback TCP %s\n",
	       seconds, clients, threads, sysconf(_SC_NPROCESSORS_ONLN), endpoint);
	printf("load average before: %s\n", la0);
	double v0 = verify_rate(3.0);
	printf("jwt     flash_auth_verify single core (before): %.0f verifications/s\n", v0);
	double get_rps = phase("get", FLASH_AUTH_ACTION_GET, clients, seconds, endpoint, id, spec, op);
	/* Services without public ports: the port range (2768 by default)
	 * would run out long before 30 s of creates. */
	char *spec0 = test_spec("test.invalid/bench:4096", 0, 1, 1);
	double create_rps = phase("create", FLASH_AUTH_ACTION_CREATE, clients, seconds, endpoint, id, spec0, op);
	free(spec0);
	double v1 = verify_rate(3.0);
	printf("jwt     flash_auth_verify single core (after):  %.0f verifications/s\n", v1);
	double vm = (v0 + v1) / 2;
	printf("get/verify = %.2f (goal >= 0.80), create/verify = %.2f\n", get_rps / vm, create_rps / vm);
	loadavg(la1, sizeof(la1));
	printf("load average after: %s\n", la1);

	kill(op, SIGTERM);
	waitpid(op, &status, 0);
	free(spec);
	flash_auth_signer_free(signer);
	flash_auth_keyset_free(keyset);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	return 0;
}
