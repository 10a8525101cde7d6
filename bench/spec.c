/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Throughput of flash_spec_parse() (JSON parse + every rule + canonical
 * JSON + BLAKE2b digest) and flash_spec_to_json() on one spec file
 * (default: the seed example).  Prints figures; never fails on time.
 *   bench/spec [SPEC.json] [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <flash/spec.h>

#include "util.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of this process: steadier than wall time on a loaded machine. */
static double cpu(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	char default_path[4096];
	const char *path = argc > 1 ? argv[1] : default_path;
	double seconds = argc > 2 ? atof(argv[2]) : 2.0;
	char *text = NULL, *json = NULL;
	size_t len = 0, n = 0, m = 0;
	double t0, t1, c0, c1;
	int r;

	snprintf(default_path, sizeof(default_path), "%s/examples/udp-echo.json", top ? top : ".");
	if (seconds <= 0 || seconds > 600)
		seconds = 2.0;
	r = util_read_file(path, 1 << 20, &text, &len);
	if (r < 0) {
		fprintf(stderr, "bench/spec: %s: %s\n", path, strerror(-r));
		return 2;
	}

	/* Parse + validate + canonicalize (+ digest), until @seconds pass. */
	t0 = now();
	c0 = cpu();
	do {
		for (int i = 0; i < 256; i++) {
			struct flash_spec *spec = NULL;

			r = flash_spec_parse(text, len, NULL, &spec, NULL);
			if (r < 0) {
				fprintf(stderr, "bench/spec: %s: %s\n", path, flash_strerror(r));
				free(text);
				return 1;
			}
			flash_spec_free(spec);
		}
		n += 256;
		t1 = now();
	} while (t1 - t0 < seconds);
	c1 = cpu();
	printf("spec parse+validate+canonicalize: %zu specs in %.2f s = %.0f specs/s wall, %.0f specs/s CPU "
	       "(%.2f us CPU/spec, %zu-byte spec)\n",
	       n, t1 - t0, (double)n / (t1 - t0), (double)n / (c1 - c0), (c1 - c0) * 1e6 / (double)n, len);

	/* Canonical JSON of a parsed spec. */
	{
		struct flash_spec *spec = NULL;

		r = flash_spec_parse(text, len, NULL, &spec, NULL);
		if (r < 0)
			return 1;
		t0 = now();
		do {
			for (int i = 0; i < 1024; i++) {
				if (flash_spec_to_json(spec, &json, NULL) < 0)
					return 1;
				free(json);
			}
			m += 1024;
			t1 = now();
		} while (t1 - t0 < seconds / 4);
		printf("spec to_json (copy of the canonical form made at parse time): %.0f calls/s\n", (double)m / (t1 - t0));
		flash_spec_free(spec);
	}
	free(text);
	return 0;
}
