/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Image admission against a real registry: libflash's resolve, pull and
 * unpack beside the reference tools doing the same work in the same run —
 * `skopeo inspect --raw` (resolve), `skopeo copy docker://... oci:` (pull)
 * and `umoci raw unpack` (unpack, whiteouts applied) — on the busybox image
 * of tests/integration/registry.sh, served by docker-registry on loopback.
 * Rounds alternate which side runs first; medians, p95 and p99 and the
 * load average are printed.  The peers are whole processes (their start-up
 * is part of what a caller of them pays).  Figures only; never fails on
 * time.
 *
 *   bench/image SRCDIR [ROUNDS]        (default 15)
 */
#include "config.h"

#include <flash/image.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

#define STEPS 3

static const char *step_name[STEPS] = { "resolve", "pull", "unpack" };

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	qsort(v, n, sizeof(*v), cmp);
	return v[i < n ? i : n - 1];
}

/* libflash: the three steps into @work/lib-N; times into t[STEPS]. */
static int lib_round(const char *ref, const char *work, int n, double t[STEPS])
{
	char store[PATH_MAX], rootfs[PATH_MAX + 16];
	FLASH_OPTS(flash_image_opts, o, .plain_http = true, .content_store = store);
	struct flash_image *img = NULL;
	double t0;
	int r;

	snprintf(store, sizeof(store), "%s/lib-%d", work, n);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", store);
	t0 = bench_now_ms();
	r = flash_image_resolve(ref, &o, &img, NULL);
	t[0] = bench_now_ms() - t0;
	if (r == 0) {
		t0 = bench_now_ms();
		r = flash_image_pull(img, NULL);
		t[1] = bench_now_ms() - t0;
	}
	if (r == 0) {
		t0 = bench_now_ms();
		r = flash_image_unpack(img, rootfs, NULL, NULL);
		t[2] = bench_now_ms() - t0;
	}
	flash_image_free(img);
	return r;
}

/* The peers: skopeo and umoci, the same three steps. */
static int peer_round(const char *ref, const char *work, int n, double t[STEPS])
{
	double t0 = bench_now_ms();
	int r = run("skopeo --insecure-policy inspect --raw --tls-verify=false docker://%s >/dev/null", ref);

	t[0] = bench_now_ms() - t0;
	if (r == 0) {
		t0 = bench_now_ms();
		r = run("skopeo --insecure-policy copy --quiet --src-tls-verify=false docker://%s oci:%s/peer-%d:v1", ref,
			work, n);
		t[1] = bench_now_ms() - t0;
	}
	if (r == 0) {
		t0 = bench_now_ms();
		r = run("umoci raw unpack --rootless --image %s/peer-%d:v1 %s/peer-%d/rootfs >/dev/null 2>&1", work, n, work,
			n);
		t[2] = bench_now_ms() - t0;
	}
	return r;
}

int main(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : "..";
	int rounds = argc > 2 ? atoi(argv[2]) : 15, failures = 0;
	char work[] = "/tmp/flash-bench-image-XXXXXX", script[PATH_MAX], port[16] = "", ref[64], line[64];
	double *lib[STEPS], *peer[STEPS], load[3];
	FILE *f;

	if (rounds < 1 || !mkdtemp(work))
		return 2;
	snprintf(script, sizeof(script), "%s/tests/integration/registry.sh", src);
	if (run("sh '%s' start '%s' anon none >'%s/port' && sh '%s' fill '%s' \"$(cat '%s/port')\" >'%s/fill.log' 2>&1",
		script, work, work, script, work, work, work) != 0) {
		fprintf(stderr, "bench/image: could not start and fill docker-registry (see %s)\n", work);
		return 1;
	}
	snprintf(line, sizeof(line), "%s/port", work);
	f = fopen(line, "r");
	if (!f || !fgets(port, sizeof(port), f))
		return 1;
	fclose(f);
	port[strcspn(port, "\n")] = '\0';
	snprintf(ref, sizeof(ref), "127.0.0.1:%s/small:v1", port);
	for (int s = 0; s < STEPS; s++) {
		lib[s] = calloc((size_t)rounds, sizeof(double));
		peer[s] = calloc((size_t)rounds, sizeof(double));
		if (!lib[s] || !peer[s])
			return 1;
	}
	for (int i = 0; i < rounds; i++) {
		double a[STEPS], b[STEPS];

		/* alternate which side runs first */
		if (i % 2 == 0)
			failures += (lib_round(ref, work, i, a) != 0) + (peer_round(ref, work, i, b) != 0);
		else
			failures += (peer_round(ref, work, i, b) != 0) + (lib_round(ref, work, i, a) != 0);
		for (int s = 0; s < STEPS; s++) {
			lib[s][i] = a[s];
			peer[s][i] = b[s];
		}
	}
	if (getloadavg(load, 3) != 3)
		load[0] = load[1] = load[2] = -1;
	printf("image admission, %s (busybox + whiteout layer), %d rounds, load %.2f %.2f %.2f, %d failures\n", ref,
	       rounds, load[0], load[1], load[2], failures);
	printf("%-8s %-26s %9s %9s %9s\n", "step", "side", "p50 ms", "p95 ms", "p99 ms");
	for (int s = 0; s < STEPS; s++) {
		static const char *peer_name[STEPS] = { "skopeo inspect --raw", "skopeo copy", "umoci raw unpack" };

		printf("%-8s %-26s %9.2f %9.2f %9.2f\n", step_name[s], "libflash", pct(lib[s], (size_t)rounds, 0.5),
		       pct(lib[s], (size_t)rounds, 0.95), pct(lib[s], (size_t)rounds, 0.99));
		printf("%-8s %-26s %9.2f %9.2f %9.2f\n", step_name[s], peer_name[s], pct(peer[s], (size_t)rounds, 0.5),
		       pct(peer[s], (size_t)rounds, 0.95), pct(peer[s], (size_t)rounds, 0.99));
		free(lib[s]);
		free(peer[s]);
	}
	(void)run("sh '%s' stop '%s' anon; rm -rf '%s'", script, work, work);
	return failures ? 1 : 0;
}
