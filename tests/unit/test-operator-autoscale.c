/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Autoscaling on one node (operator/autoscale.c) without privileges: the
 * decision rule as a table of samples (tolerance, the HPA's ceil, the
 * step bound, min/max clamps, replicas without a sample counted as not
 * ready rather than idle), the scale-down stabilisation window over a
 * sequence of periods, and the CPU reading of cgroup2 and v1 files in a
 * directory standing for /sys/fs/cgroup.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autoscale.h"

#define M(x) { .measured = true, .used_millis = (x) }
#define NONE { .measured = false }

struct row {
	const char *what;
	uint32_t min, max, target, cpu, tolerance;
	uint32_t current;
	struct op_autoscale_sample s[8];
	size_t n;
	uint32_t want, want_utilisation, want_measured;
	const char *want_reason;
};

static const struct row rows[] = {
	{ "one replica at twice the target doubles", 1, 4, 50, 1000, 10, 1, { M(1000) }, 1, 2, 100, 1, "above target" },
	{ "4 % over target is within the tolerance", 1, 4, 50, 1000, 10, 1, { M(520) }, 1, 1, 52, 1, "within tolerance" },
	{ "exactly 10 % over is still within it", 1, 4, 50, 1000, 10, 1, { M(550) }, 1, 1, 55, 1, "within tolerance" },
	{ "11 % over is not: ceil(1.11) = 2", 1, 4, 50, 1000, 10, 1, { M(555) }, 1, 2, 56, 1, "above target" },
	{ "tolerance 0: 4 % over scales", 1, 4, 50, 1000, 0, 1, { M(520) }, 1, 2, 52, 1, "above target" },
	{ "the mean of the replicas, not the busiest", 1, 8, 50, 1000, 10, 2, { M(900), M(100) }, 2, 2, 50, 2,
	  "within tolerance" },
	{ "ceil(used / target): 3 x 700 m at 500 m target is 5", 1, 8, 50, 1000, 10, 3, { M(700), M(700), M(700) },
	  3, 5, 70, 3, "above target" },
	{ "scale-up bounded: at most double", 1, 16, 10, 1000, 10, 1, { M(1000) }, 1, 2, 100, 1,
	  "scale-up bounded per period" },
	{ "scale-up bounded: at most +4", 1, 16, 10, 1000, 10, 6, { M(1000), M(1000), M(1000), M(1000), M(1000), M(1000) },
	  6, 10, 100, 6, "scale-up bounded per period" },
	{ "clamped to max_replicas", 1, 3, 50, 1000, 10, 3, { M(1000), M(1000), M(1000) }, 3, 3, 100, 3,
	  "above target" },
	{ "idle falls to min_replicas, not 0 (fresh window)", 2, 4, 50, 1000, 10, 3, { M(0), M(0), M(0) }, 3, 2, 0, 3,
	  "below target" },
	{ "a count below min_replicas is raised at once", 3, 5, 50, 1000, 10, 1, { M(500) }, 1, 3, 50, 1,
	  "raised to min_replicas" },
	{ "a count above max_replicas is lowered at once", 1, 2, 50, 1000, 10, 4, { M(500), M(500), M(500), M(500) },
	  4, 2, 50, 4, "lowered to max_replicas" },
	{ "no sample at all holds", 1, 4, 50, 1000, 10, 2, { NONE, NONE }, 2, 2, 0, 0, "no replica measured yet" },
	{ "replicas without samples are not idle: no scale-down", 1, 4, 50, 1000, 10, 3, { M(100), NONE, NONE }, 3, 3,
	  10, 1, "below target" },
	{ "replicas without samples do not dilute a scale-up", 1, 8, 20, 1000, 10, 3, { M(1000), NONE, NONE }, 3, 5,
	  100, 1, "above target" },
	{ "fewer samples than replicas: the rest count at target", 1, 4, 50, 1000, 10, 4, { M(0) }, 1, 3, 0, 1,
	  "below target" },
	{ "samples beyond the current count are ignored", 1, 4, 50, 1000, 10, 1, { M(500), M(1000), M(1000) }, 3, 1,
	  50, 1, "within tolerance" },
	{ "a small cpu_millis: 240 m of 250 m at target 80 %", 1, 4, 80, 250, 10, 1, { M(240) }, 1, 2, 96, 1,
	  "above target" },
	{ "a replica limit above one node's is cut to it", 1, 1000, 10, 1000, 10, 16,
	  { M(1000), M(1000), M(1000), M(1000), M(1000), M(1000), M(1000), M(1000) }, 8, OP_AUTOSCALE_REPLICAS_MAX,
	  100, 8, "above target" },
};

Test(autoscale, decision_table)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *t = &rows[i];
		struct op_autoscale_params p = { .min_replicas = t->min, .max_replicas = t->max,
						 .target_percent = t->target, .cpu_millis = t->cpu,
						 .tolerance_percent = t->tolerance, .window_ms = 300000 };
		struct op_autoscale_window w = { 0 };
		struct op_autoscale_decision d;

		op_autoscale_decide(&p, t->current, t->s, t->n, 1000, &w, &d);
		cr_expect_eq(d.desired, t->want, "%s: desired %u, want %u", t->what, d.desired, t->want);
		cr_expect_eq(d.utilisation_percent, t->want_utilisation, "%s: utilisation %u%%, want %u%%", t->what,
			     d.utilisation_percent, t->want_utilisation);
		cr_expect_eq(d.measured, t->want_measured, "%s: measured %u", t->what, d.measured);
		cr_expect_str_eq(d.reason, t->want_reason, "%s: reason \"%s\"", t->what, d.reason);
		cr_expect(d.desired >= (t->min ? t->min : 1) && d.desired <= t->max, "%s: outside min..max", t->what);
	}
}

/* A sequence of periods through one window (15 s period, 60 s window). */
Test(autoscale, scale_down_waits_for_the_window_scale_up_does_not)
{
	struct op_autoscale_params p = { .min_replicas = 1, .max_replicas = 8, .target_percent = 50,
					 .cpu_millis = 1000, .tolerance_percent = 10, .window_ms = 60000 };
	const struct op_autoscale_sample busy[4] = { M(500), M(500), M(500), M(500) };
	const struct op_autoscale_sample idle[4] = { M(0), M(0), M(0), M(0) };
	const struct op_autoscale_sample half[4] = { M(250), M(250), M(250), M(250) };
	struct op_autoscale_window w = { 0 };
	struct op_autoscale_decision d;

	op_autoscale_decide(&p, 4, busy, 4, 0, &w, &d);
	cr_assert_eq(d.desired, 4);
	cr_assert_str_eq(d.reason, "within tolerance");
	/* Idle 15 s later: the window still holds the 4 of t = 0. */
	op_autoscale_decide(&p, 4, idle, 4, 15000, &w, &d);
	cr_assert_eq(d.recommended, 1);
	cr_assert_eq(d.desired, 4, "scaled down to %u within the window", d.desired);
	cr_assert_str_eq(d.reason, "scale-down held by the stabilisation window");
	/* Half busy (recommends 2) then idle again: the window's highest
	 * after the 4 expires is that 2. */
	op_autoscale_decide(&p, 4, half, 4, 30000, &w, &d);
	cr_assert_eq(d.recommended, 2);
	cr_assert_eq(d.desired, 4);
	op_autoscale_decide(&p, 4, idle, 4, 60000, &w, &d);
	cr_assert_eq(d.desired, 4, "the 4 of t = 0 is 60 s old: still in the window");
	op_autoscale_decide(&p, 4, idle, 4, 60001, &w, &d);
	cr_assert_eq(d.desired, 2, "after the 4 expired the window's highest is the 2 of t = 30 s, not %u", d.desired);
	op_autoscale_decide(&p, 2, idle, 2, 90001, &w, &d);
	cr_assert_eq(d.desired, 1, "the 2 expired: %u", d.desired);
	cr_assert_str_eq(d.reason, "below target");
	/* A burst scales up at once, whatever the window holds. */
	op_autoscale_decide(&p, 1, (const struct op_autoscale_sample[]){ M(1000) }, 1, 95000, &w, &d);
	cr_assert_eq(d.desired, 2);
	cr_assert_str_eq(d.reason, "above target");
	/* Window 0: a scale-down is immediate. */
	struct op_autoscale_window w0 = { 0 };

	p.window_ms = 0;
	op_autoscale_decide(&p, 4, busy, 4, 0, &w0, &d);
	op_autoscale_decide(&p, 4, idle, 4, 1, &w0, &d);
	cr_assert_eq(d.desired, 1);
	cr_assert_leq(w0.n, 1);
}

Test(autoscale, the_window_keeps_one_entry_per_count)
{
	struct op_autoscale_params p = { .min_replicas = 1, .max_replicas = 16, .target_percent = 100,
					 .cpu_millis = 100, .tolerance_percent = 0, .window_ms = 1000000 };
	struct op_autoscale_window w = { 0 };
	struct op_autoscale_decision d;
	struct op_autoscale_sample s[16];

	/* 16 .. 1 recommended in a row: all kept (each lower), no overflow. */
	for (uint32_t k = 16; k >= 1; k--) {
		for (uint32_t i = 0; i < 16; i++)
			s[i] = (struct op_autoscale_sample){ .measured = true, .used_millis = i < k ? 100 : 0 };
		op_autoscale_decide(&p, 16, s, 16, (int64_t)(16 - k) * 1000, &w, &d);
		cr_assert_eq(d.recommended, k);
		cr_assert_eq(d.desired, 16, "k=%u: %u", k, d.desired);
	}
	cr_assert_eq(w.n, 16);
	/* A 16 again replaces every lower one. */
	for (uint32_t i = 0; i < 16; i++)
		s[i] = (struct op_autoscale_sample){ .measured = true, .used_millis = 100 };
	op_autoscale_decide(&p, 16, s, 16, 20000, &w, &d);
	cr_assert_eq(w.n, 1);
	cr_assert_eq(w.v[0].replicas, 16);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/test-autoscale.XXXXXX");

	cr_assert(d && mkdtemp(d));
	return d;
}

static void put(const char *root, const char *rel, const char *text)
{
	char path[4096], cmd[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	cr_assert_eq(system(cmd), 0);
	f = fopen(path, "w");
	cr_assert(f);
	fputs(text, f);
	fclose(f);
}

static void rmtree(char *d)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	cr_assert_eq(system(cmd), 0);
	free(d);
}

Test(autoscale, cpu_time_from_cgroup2_and_v1)
{
	char *root = tmpdir();
	uint64_t us = 0;

	put(root, "flash/r2/cpu.stat", "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n");
	cr_assert_eq(op_autoscale_cpu_usec(root, "/flash", "r2", &us), 0);
	cr_assert_eq(us, 1234567);
	/* v1: cpuacct.usage in ns; a v1 cpu controller's cpu.stat (no
	 * usage_usec) is passed over. */
	put(root, "flash/r1/cpu.stat", "nr_periods 3\nnr_throttled 0\nthrottled_time 0\n");
	put(root, "cpuacct/flash/r1/cpuacct.usage", "9876543210\n");
	cr_assert_eq(op_autoscale_cpu_usec(root, "/flash", "r1", &us), 0);
	cr_assert_eq(us, 9876543);
	put(root, "cpu,cpuacct/flash/r3/cpuacct.usage", "5000\n");
	cr_assert_eq(op_autoscale_cpu_usec(root, "/flash", "r3", &us), 0);
	cr_assert_eq(us, 5);
	/* Errors leave *ret alone. */
	us = 42;
	cr_assert_eq(op_autoscale_cpu_usec(root, "/flash", "nope", &us), -ENOENT);
	put(root, "cpuacct/flash/bad/cpuacct.usage", "12x\n");
	cr_assert_eq(op_autoscale_cpu_usec(root, "/flash", "bad", &us), -EBADMSG);
	put(root, "flash/bad2/cpu.stat", "usage_usec -5\n");
	cr_assert_eq(op_autoscale_cpu_usec(root, "/flash", "bad2", &us), -EBADMSG);
	cr_assert_eq(op_autoscale_cpu_usec(root, "/flash", "a/b", &us), -EINVAL);
	cr_assert_eq(op_autoscale_cpu_usec(root, "/fl/../ash", "r1", &us), -EINVAL);
	/* A directory where a file should be is not read. */
	put(root, "flash/dir/cpu.stat/x", "");
	cr_assert_eq(op_autoscale_cpu_usec(root, "/flash", "dir", &us), -EBADMSG);
	cr_assert_eq(us, 42);
	rmtree(root);
}

Test(autoscale, start_refuses_bad_options)
{
	struct op_autoscale *as = NULL;
	struct op_autoscale_opts o = { .sz = sizeof(o) };

	cr_assert_eq(op_autoscale_start(NULL, &as), -EINVAL);
	cr_assert_eq(op_autoscale_start(&o, &as), -EINVAL, "no runtime, no services");
	cr_assert_null(as);
	op_autoscale_stop(NULL);
}
