/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Metering throughput: observations per second with many services, a
 * decision per organization, and the state file's size and save/load time.
 * Prints figures only; never passes or fails on time.
 *
 *   bench/bench-meter [services] [observations-per-service] [window]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <flash/meter.h>
#include "bench.h"

static int die(const char *what, int r)
{
	fprintf(stderr, "bench-meter: %s: %s\n", what, flash_strerror(r));
	return 1;
}

int main(int argc, char **argv)
{
	unsigned long n_svc = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
	unsigned long n_obs = argc > 2 ? strtoul(argv[2], NULL, 10) : 200;
	unsigned long window = argc > 3 ? strtoul(argv[3], NULL, 10) : 60;
	const unsigned long n_org = n_svc / 100 ? n_svc / 100 : 1;
	const int64_t t0 = INT64_C(1798675200); /* 2026-12-31T00:00:00Z, a Thursday */
	FLASH_OPTS(flash_meter_opts, o, .reorder_window = (uint32_t)window);
	FLASH_OPTS(flash_meter_limits, lim, .cpu_millicore_seconds = INT64_C(1) << 40,
		   .memory_mib_seconds = FLASH_METER_UNLIMITED, .gpu_seconds = 36000);
	struct flash_meter *m = NULL, *m2 = NULL;
	char path[] = "/tmp/bench-meter.XXXXXX", file[64];
	struct flash_diag *err = NULL;
	unsigned long suspended = 0, n_sent = 0, n_reordered = 0;
	char *json = NULL;
	size_t len = 0;
	double t, dt;
	int r;

	if (window > 3600 || n_svc == 0 || n_obs == 0)
		return fprintf(stderr, "usage: bench-meter [services] [observations] [window<=3600]\n"), 2;
	r = flash_meter_new(&o, &m);
	if (r < 0)
		return die("new", r);
	t = bench_now_s();
	/* Round-robin over services, hourly per service (200 h cross a
	 * Monday); after every 7th, one stamped 10 s before it arrives
	 * (reordered when window >= 10, late and ignored when 0). */
	for (unsigned long i = 0; i < n_obs; i++) {
		for (unsigned long s = 0; s < n_svc; s++) {
			char id[32], org[32];
			int64_t when = t0 + (int64_t)i * 3600;
			FLASH_OPTS(flash_meter_observation, ob, .service_id = id, .organization = org,
				   .time = when, .ready_replicas = (uint32_t)(1 + (s + i / 50) % 4),
				   .cpu_millis = 250, .memory_mib = 512, .gpu_count = s % 10 == 0);

			snprintf(id, sizeof(id), "svc-%06lu", s);
			snprintf(org, sizeof(org), "org-%04lu", s % n_org);
			r = flash_meter_observe(m, &ob);
			if (r < 0)
				return die("observe", r);
			n_sent++;
			if ((s + i) % 7 == 0 && i > 0) {
				ob.time = when - 10;
				ob.ready_replicas = 1;
				r = flash_meter_observe(m, &ob);
				if (r < 0)
					return die("observe", r);
				n_sent++;
				n_reordered += r == FLASH_METER_REORDERED;
			}
		}
	}
	dt = bench_now_s() - t;
	printf("observe: %lu services, %lu observations (%lu reordered, window %lu s): %.0f ns/observation, %.2f M/s\n",
	       n_svc, n_sent, n_reordered, window, dt * 1e9 / (double)n_sent, (double)n_sent / dt / 1e6);

	t = bench_now_s();
	for (unsigned long g = 0; g < n_org; g++) {
		struct flash_meter_decision d;
		char org[32];

		snprintf(org, sizeof(org), "org-%04lu", g);
		r = flash_meter_decide(m, org, &lim, t0 + (int64_t)n_obs * 3600, &d);
		if (r < 0)
			return die("decide", r);
		suspended += d.n_suspend;
		flash_meter_decision_clear(&d);
	}
	dt = bench_now_s() - t;
	printf("decide: %lu organizations: %.1f us/decision (%lu workloads to suspend)\n", n_org,
	       dt * 1e6 / (double)n_org, suspended);

	if (!mkdtemp(path))
		return die("mkdtemp", -errno);
	snprintf(file, sizeof(file), "%s/meter.json", path);
	t = bench_now_s();
	r = flash_meter_to_json(m, &json, &len);
	if (r < 0)
		return die("to_json", r);
	dt = bench_now_s() - t;
	printf("to_json: %zu records, %zu live services: %zu bytes in %.1f ms\n", flash_meter_record_count(m),
	       n_svc, len, dt * 1e3);
	t = bench_now_s();
	r = flash_meter_save(m, file);
	if (r < 0)
		return die("save", r);
	printf("save (temp + fsync + rename + dir fsync): %.1f ms\n", (bench_now_s() - t) * 1e3);
	r = flash_meter_new(&o, &m2);
	if (r < 0)
		return die("new", r);
	if (flash_diag_new(&err) < 0)
		return die("flash_diag_new", -ENOMEM);
	t = bench_now_s();
	r = flash_meter_load(m2, file, err);
	if (r < 0)
		return die(flash_diag_first_error(err) ? flash_diag_first_error(err)->message : "load", r);
	printf("load (strict parse + full consistency check): %.1f ms\n", (bench_now_s() - t) * 1e3);
	unlink(file);
	rmdir(path);
	free(json);
	flash_meter_free(m);
	flash_meter_free(m2);
	flash_diag_free(err);
	return 0;
}
