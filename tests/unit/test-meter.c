/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Weekly metering: ISO weeks (53-week years), piecewise-constant
 * integration split at Monday 00:00 UTC, suspension decisions, usage
 * records, the state file, and robustness (clock backwards, duplicates,
 * reordering, saturation). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <flash/meter.h>

#include "diag-helpers.h"
#include "helpers.h"

DIAG_TEST_HELPERS(flash)

#define H 3600
#define D 86400

/* Unix time of a UTC date (test oracle: timegm, independent of the
 * library's own calendar arithmetic). */
static int64_t T(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
			 .tm_hour = h, .tm_min = mi, .tm_sec = s };

	return (int64_t)timegm(&tm);
}

static struct flash_meter *meter(uint32_t window)
{
	FLASH_OPTS(flash_meter_opts, o, .reorder_window = window);
	struct flash_meter *m = NULL;

	ASSERT_OK(flash_meter_new(&o, &m), "flash_meter_new");
	return m;
}

static int obs(struct flash_meter *m, const char *svc, const char *org, int64_t t, uint32_t replicas,
	       uint32_t cpu, uint32_t mem, uint32_t gpu)
{
	FLASH_OPTS(flash_meter_observation, o, .service_id = svc, .organization = org, .time = t,
		   .ready_replicas = replicas, .cpu_millis = cpu, .memory_mib = mem, .gpu_count = gpu);

	return flash_meter_observe(m, &o);
}

static struct flash_meter_usage svc_usage(struct flash_meter *m, const char *svc, int64_t t)
{
	struct flash_meter_usage u;

	ASSERT_OK(flash_meter_service_usage(m, svc, t, &u), svc);
	return u;
}

static struct flash_meter_usage org_usage(struct flash_meter *m, const char *org, int64_t t)
{
	struct flash_meter_usage u;

	ASSERT_OK(flash_meter_org_usage(m, org, t, &u), org);
	return u;
}

/* ---------------------------------------------------------------- weeks */

struct week_case {
	int y, mo, d, h;
	const char *name;   /* ISO week */
	int sy, smo, sd;    /* its Monday */
};

Test(meter, iso_weeks_table)
{
	static const struct week_case cases[] = {
		{ 1970, 1, 1, 0, "1970-W01", 1969, 12, 29 },
		{ 1970, 1, 5, 0, "1970-W02", 1970, 1, 5 },
		{ 2004, 12, 31, 12, "2004-W53", 2004, 12, 27 },
		{ 2005, 1, 2, 23, "2004-W53", 2004, 12, 27 },
		{ 2008, 12, 29, 0, "2009-W01", 2008, 12, 29 },
		{ 2009, 12, 31, 0, "2009-W53", 2009, 12, 28 },
		{ 2010, 1, 3, 23, "2009-W53", 2009, 12, 28 },
		{ 2015, 12, 31, 5, "2015-W53", 2015, 12, 28 },
		{ 2019, 12, 30, 0, "2020-W01", 2019, 12, 30 },
		{ 2020, 12, 31, 0, "2020-W53", 2020, 12, 28 },
		{ 2021, 1, 3, 23, "2020-W53", 2020, 12, 28 },
		{ 2021, 1, 4, 0, "2021-W01", 2021, 1, 4 },
		{ 2026, 1, 1, 0, "2026-W01", 2025, 12, 29 },
		{ 2026, 11, 29, 12, "2026-W48", 2026, 11, 23 },
		{ 2026, 12, 28, 0, "2026-W53", 2026, 12, 28 },
		{ 2027, 1, 1, 0, "2026-W53", 2026, 12, 28 },
		{ 2027, 1, 3, 23, "2026-W53", 2026, 12, 28 },
		{ 2027, 1, 4, 0, "2027-W01", 2027, 1, 4 },
		{ 2032, 12, 31, 0, "2032-W53", 2032, 12, 27 },
		{ 2037, 12, 31, 0, "2037-W53", 2037, 12, 28 },
		{ 2100, 3, 1, 0, "2100-W09", 2100, 3, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct week_case *c = &cases[i];
		int64_t t = T(c->y, c->mo, c->d, c->h, 17, 3), ws;
		char name[FLASH_METER_WEEK_STRLEN];

		ASSERT_OK(flash_meter_week_start(t, &ws), c->name);
		cr_assert_eq(ws, T(c->sy, c->smo, c->sd, 0, 0, 0), "%s: week start %lld", c->name, (long long)ws);
		cr_assert_eq(flash_meter_week_name(t, name, sizeof(name)), 8);
		ASSERT_STREQ(name, c->name, "week name");
	}
}

/* Every day 1970..2200 at a varying second: the library agrees with glibc's
 * strftime %G-W%V and the week starts on the Monday at or before. */
Test(meter, iso_weeks_match_glibc)
{
	for (int64_t day = 0; day < 84000; day++) {
		int64_t t = day * D + (day * 7919) % D, ws;
		time_t tt = (time_t)t;
		char want[32], got[FLASH_METER_WEEK_STRLEN];
		struct tm tm;

		gmtime_r(&tt, &tm);
		strftime(want, sizeof(want), "%G-W%V", &tm);
		cr_assert(flash_meter_week_name(t, got, sizeof(got)) > 0);
		cr_assert_str_eq(got, want, "t=%lld", (long long)t);
		ASSERT_OK(flash_meter_week_start(t, &ws), "week_start");
		cr_assert(ws <= t && t - ws < FLASH_METER_WEEK, "t=%lld ws=%lld", (long long)t, (long long)ws);
		tt = (time_t)ws;
		gmtime_r(&tt, &tm);
		cr_assert(tm.tm_wday == 1 && tm.tm_hour == 0 && tm.tm_min == 0 && tm.tm_sec == 0,
			  "week start of %lld is not Monday 00:00", (long long)t);
	}
}

/* The local time zone plays no part: the same answers under zones far
 * from UTC on either side (with tzdata installed; without it glibc falls
 * back to UTC and the test still holds). */
Test(meter, weeks_ignore_local_time_zone)
{
	static const char *const zones[] = { "Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Kathmandu" };
	const int64_t t = T(2027, 1, 3, 23, 30, 0); /* Sunday 23:30 UTC: Monday in Kiritimati */

	for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
		char name[FLASH_METER_WEEK_STRLEN];
		int64_t ws;

		setenv("TZ", zones[i], 1);
		tzset();
		ASSERT_OK(flash_meter_week_start(t, &ws), zones[i]);
		cr_assert_eq(ws, T(2026, 12, 28, 0, 0, 0), "%s", zones[i]);
		cr_assert_eq(flash_meter_week_name(t, name, sizeof(name)), 8);
		ASSERT_STREQ(name, "2026-W53", zones[i]);
	}
	unsetenv("TZ");
	tzset();
}

Test(meter, weeks_range_and_53_week_years)
{
	int y, w, n53 = 0;
	int64_t ws;
	char buf[FLASH_METER_WEEK_STRLEN];

	/* 400-year Gregorian cycle has exactly 71 long years. */
	for (int year = 2000; year < 2400; year++) {
		ASSERT_OK(flash_meter_iso_week(T(year, 12, 28, 12, 0, 0), &y, &w), "iso_week");
		cr_assert_eq(y, year);
		n53 += w == 53;
	}
	cr_assert_eq(n53, 71);
	ASSERT_ERR(flash_meter_week_start(-1, &ws), -FLASH_E_METER_TIME, "negative");
	ASSERT_ERR(flash_meter_week_start(FLASH_METER_TIME_MAX + 1, &ws), -FLASH_E_METER_TIME, "past max");
	ASSERT_OK(flash_meter_week_start(FLASH_METER_TIME_MAX, &ws), "max");
	cr_assert_eq(ws + FLASH_METER_WEEK, FLASH_METER_TIME_MAX + 1);
	ASSERT_ERR(flash_meter_week_name(0, buf, 8), -ENOSPC, "small buffer");
	ASSERT_ERR(flash_meter_week_start(0, NULL), -EINVAL, "NULL");
}

Test(meter, time_format_parse)
{
	static const char *const bad[] = {
		"2026-02-29T00:00:00Z", "2026-12-28T24:00:00Z", "2026-12-28T00:00:60Z",
		"2026-12-28t00:00:00Z", "2026-12-28T00:00:00z", "2026-12-28T00:00:00+00:00",
		"2026-12-28T00:00:00Z ", "2026-12-28 00:00:00Z", "2026-13-01T00:00:00Z",
		"2026-00-01T00:00:00Z", "2026-04-31T00:00:00Z", "1969-12-31T23:59:59Z",
		"9999-12-27T00:00:00Z", "+026-12-28T00:00:00Z", "",
	};
	char buf[FLASH_METER_TIME_STRLEN];
	int64_t t;

	cr_assert_eq(flash_meter_format_time(T(2024, 2, 29, 23, 59, 58), buf, sizeof(buf)), 20);
	ASSERT_STREQ(buf, "2024-02-29T23:59:58Z", "format");
	ASSERT_OK(flash_meter_parse_time("2024-02-29T23:59:58Z", &t), "parse");
	cr_assert_eq(t, T(2024, 2, 29, 23, 59, 58));
	ASSERT_OK(flash_meter_parse_time("2000-02-29T00:00:00Z", &t), "leap 2000");
	ASSERT_OK(flash_meter_parse_time("9999-12-26T23:59:59Z", &t), "max");
	cr_assert_eq(t, FLASH_METER_TIME_MAX);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_ERR(flash_meter_parse_time(bad[i], &t), -FLASH_E_METER_TIME, bad[i]);
	ASSERT_ERR(flash_meter_parse_time("2100-02-29T00:00:00Z", &t), -FLASH_E_METER_TIME, "2100 not leap");
}

/* ---------------------------------------------------------------- integration */

/* One row: a service's observations, then the usage expected in the week
 * of each check time. */
struct step {
	int64_t t;
	uint32_t replicas, cpu, mem, gpu;
};
struct check {
	int64_t t;
	int64_t cpu, mem, gpu;
};
struct scenario {
	const char *name;
	struct step steps[8];
	size_t n_steps;
	struct check checks[6];
	size_t n_checks;
};

Test(meter, integration_table)
{
	const int64_t mon = T(2026, 12, 28, 0, 0, 0); /* 2026-W53 */
	const int64_t week = FLASH_METER_WEEK;
	const struct scenario cases[] = {
		{ "one hour, two replicas",
		  { { mon + H, 2, 500, 1024, 0 }, { mon + 2 * H, 2, 500, 1024, 0 } }, 2,
		  { { mon + 2 * H, 2 * 500 * H, 2 * 1024 * H, 0 } }, 1 },
		{ "scale zero accrues nothing",
		  { { mon, 0, 4000, 8192, 1 }, { mon + D, 0, 4000, 8192, 1 } }, 2,
		  { { mon + D, 0, 0, 0 } }, 1 },
		{ "update counts from the observation carrying it",
		  { { mon, 1, 100, 10, 0 }, { mon + 10, 3, 200, 20, 1 }, { mon + 30, 3, 200, 20, 1 } }, 3,
		  { { mon + 30, 100 * 10 + 600 * 20, 10 * 10 + 60 * 20, 3 * 20 } }, 1 },
		{ "week spanning New Year (2026-W53 holds 2026-12-31 and 2027-01-02)",
		  { { T(2026, 12, 31, 12, 0, 0), 1, 1000, 512, 2 }, { T(2027, 1, 2, 12, 0, 0), 1, 1000, 512, 2 } }, 2,
		  { { T(2027, 1, 3, 0, 0, 0), 1000 * 2 * D, 512 * 2 * D, 2 * 2 * D },
		    { T(2026, 12, 28, 0, 0, 0), 1000 * 2 * D, 512 * 2 * D, 2 * 2 * D } }, 2 },
		{ "interval spanning two boundaries",
		  { { mon - H, 1, 1, 1, 1 }, { mon + week + H, 1, 1, 1, 1 } }, 2,
		  { { mon - 1, H, H, H }, { mon, week, week, week }, { mon + week + H, H, H, H } }, 3 },
		{ "ends exactly on the boundary: new week starts at zero",
		  { { mon - H, 2, 10, 10, 0 }, { mon, 2, 10, 10, 0 } }, 2,
		  { { mon - 1, 20 * H, 20 * H, 0 }, { mon, 0, 0, 0 } }, 2 },
		{ "four boundaries in one interval",
		  { { mon + 3 * D, 1, 7, 0, 0 }, { mon + 4 * week + 3 * D, 1, 7, 0, 0 } }, 2,
		  { { mon + 3 * D, 7 * 4 * D, 0, 0 }, { mon + week, 7 * week, 0, 0 }, { mon + 3 * week, 7 * week, 0, 0 },
		    { mon + 4 * week + 3 * D, 7 * 3 * D, 0, 0 }, { mon + 6 * D, 7 * 4 * D, 0, 0 } }, 5 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct scenario *c = &cases[i];
		struct flash_meter *m = meter(0);

		for (size_t j = 0; j < c->n_steps; j++) {
			const struct step *s = &c->steps[j];

			ASSERT_OK(obs(m, "svc-a", "org-a", s->t, s->replicas, s->cpu, s->mem, s->gpu), c->name);
		}
		for (size_t j = 0; j < c->n_checks; j++) {
			const struct check *k = &c->checks[j];
			/* Committed records only: query at the last observation. */
			struct flash_meter_record rec = { 0 };
			int r = flash_meter_record_find(m, FLASH_METER_SCOPE_SERVICE, "svc-a", k->t, &rec);
			int64_t cpu = r == 0 ? rec.usage.cpu_millicore_seconds : 0;
			int64_t mem = r == 0 ? rec.usage.memory_mib_seconds : 0;
			int64_t gpu = r == 0 ? rec.usage.gpu_seconds : 0;

			cr_assert(r == 0 || r == -ENOENT, "%s: find %d", c->name, r);
			cr_assert(cpu == k->cpu && mem == k->mem && gpu == k->gpu,
				  "%s check %zu: got (%lld, %lld, %lld), want (%lld, %lld, %lld)", c->name, j,
				  (long long)cpu, (long long)mem, (long long)gpu, (long long)k->cpu,
				  (long long)k->mem, (long long)k->gpu);
			if (r == 0) {
				struct flash_meter_record o;

				ASSERT_OK(flash_meter_record_find(m, FLASH_METER_SCOPE_ORGANIZATION, "org-a",
								  k->t, &o), "org record");
				cr_assert_eq(o.usage.cpu_millicore_seconds, cpu, "%s: org equals its one service", c->name);
			}
		}
		flash_meter_free(m);
	}
}

/* Queries add the part since the last observation, up to t. */
Test(meter, usage_projects_to_t)
{
	struct flash_meter *m = meter(0);
	const int64_t mon = T(2026, 11, 23, 0, 0, 0);
	struct flash_meter_usage u;

	ASSERT_OK(obs(m, "s1", "o1", mon + D, 3, 250, 100, 1), "obs");
	u = svc_usage(m, "s1", mon + D + 100);
	cr_assert_eq(u.cpu_millicore_seconds, 3 * 250 * 100);
	cr_assert_eq(u.gpu_seconds, 300);
	/* Next week: only the part after Monday. */
	u = org_usage(m, "o1", mon + FLASH_METER_WEEK + 10);
	cr_assert_eq(u.memory_mib_seconds, 3 * 100 * 10);
	u = org_usage(m, "nobody", mon);
	cr_assert_eq(u.cpu_millicore_seconds, 0);
	ASSERT_ERR(flash_meter_service_usage(m, "nope", mon, &u), -FLASH_E_METER_UNKNOWN_SERVICE, "unknown");
	flash_meter_free(m);
}

/* ---------------------------------------------------------------- decisions */

Test(meter, suspension_exactly_at_the_limit)
{
	struct flash_meter *m = meter(0);
	const int64_t t0 = T(2026, 12, 29, 8, 0, 0);
	/* 2 replicas × 500 millis = 1000 millicore-seconds per second:
	 * the limit 3600000 is reached after exactly one hour. */
	FLASH_OPTS(flash_meter_limits, lim, .cpu_millicore_seconds = 3600000,
		   .memory_mib_seconds = FLASH_METER_UNLIMITED, .gpu_seconds = FLASH_METER_UNLIMITED);
	struct flash_meter_decision d;

	ASSERT_OK(obs(m, "web", "acme", t0, 2, 500, 64, 0), "obs");
	ASSERT_OK(obs(m, "gpu", "acme", t0, 1, 1000, 64, 1), "obs");
	ASSERT_OK(obs(m, "gpu", "acme", t0 + 1, 0, 1000, 64, 1), "gpu scaled to zero");
	/* 1000 millicore-seconds committed by "gpu" in its one second. */
	ASSERT_OK(flash_meter_decide(m, "acme", &lim, t0, &d), "decide t0");
	cr_assert(!d.suspend_all && d.n_suspend == 0);
	cr_assert_eq(d.cpu_reached_at, t0 + 3600 - 1, "reach time %lld", (long long)(d.cpu_reached_at - t0));
	cr_assert_eq(d.memory_reached_at, FLASH_METER_NEVER);
	cr_assert_eq(d.next_check_at, d.cpu_reached_at);
	cr_assert_eq(d.lifts_at, FLASH_METER_NEVER);
	flash_meter_decision_clear(&d);

	/* One second before: usage 1000 × 3598 + 1000 < limit. */
	ASSERT_OK(flash_meter_decide(m, "acme", &lim, t0 + 3598, &d), "decide before");
	cr_assert(!d.cpu_reached && !d.suspend_all);
	cr_assert_eq(d.usage.cpu_millicore_seconds, 3598000 + 1000);
	flash_meter_decision_clear(&d);

	/* Exactly at the limit: reached (>=), everything suspended. */
	ASSERT_OK(flash_meter_decide(m, "acme", &lim, t0 + 3599, &d), "decide at");
	cr_assert_eq(d.usage.cpu_millicore_seconds, 3600000);
	cr_assert(d.cpu_reached && d.suspend_all && !d.suspend_gpu);
	cr_assert_eq(d.n_suspend, 2);
	ASSERT_STREQ(d.suspend[0], "gpu", "sorted");
	ASSERT_STREQ(d.suspend[1], "web", "sorted");
	cr_assert_eq(d.lifts_at, T(2027, 1, 4, 0, 0, 0), "lifts next Monday 00:00 UTC");
	cr_assert_eq(d.cpu_reached_at, t0 + 3599);
	cr_assert_eq(d.next_check_at, d.week_end);
	flash_meter_decision_clear(&d);

	/* The new week starts at zero: nothing suspended any more. */
	ASSERT_OK(flash_meter_decide(m, "acme", &lim, T(2027, 1, 4, 0, 0, 0), &d), "next week");
	cr_assert(!d.cpu_reached && d.n_suspend == 0);
	cr_assert_eq(d.usage.cpu_millicore_seconds, 0);
	flash_meter_decision_clear(&d);
	flash_meter_free(m);
}

Test(meter, gpu_only_suspension_leaves_cpu_workloads)
{
	struct flash_meter *m = meter(0);
	const int64_t t0 = T(2027, 3, 1, 0, 0, 0);
	FLASH_OPTS(flash_meter_limits, lim, .cpu_millicore_seconds = 1000000000000,
		   .memory_mib_seconds = 1000000000000, .gpu_seconds = 2 * 3600);
	struct flash_meter_decision d;

	ASSERT_OK(obs(m, "cpu-1", "lab", t0, 4, 1000, 2048, 0), "cpu-1");
	ASSERT_OK(obs(m, "train", "lab", t0, 2, 4000, 16384, 1), "train");
	ASSERT_OK(obs(m, "cpu-2", "lab", t0, 1, 500, 512, 0), "cpu-2");
	ASSERT_OK(obs(m, "other", "elsewhere", t0, 1, 1, 1, 8), "other org");
	ASSERT_OK(flash_meter_decide(m, "lab", &lim, t0 + 3600, &d), "decide");
	cr_assert(d.gpu_reached && d.suspend_gpu && !d.suspend_all);
	cr_assert(!d.cpu_reached && !d.memory_reached);
	cr_assert_eq(d.n_suspend, 1);
	ASSERT_STREQ(d.suspend[0], "train", "only the GPU workload");
	cr_assert_eq(d.lifts_at, T(2027, 3, 8, 0, 0, 0));
	flash_meter_decision_clear(&d);
	/* Below the GPU limit one second earlier. */
	ASSERT_OK(flash_meter_decide(m, "lab", &lim, t0 + 3599, &d), "decide");
	cr_assert(!d.suspend_gpu && d.n_suspend == 0);
	cr_assert_eq(d.gpu_reached_at, t0 + 3600);
	flash_meter_decision_clear(&d);
	flash_meter_free(m);
}

Test(meter, memory_limit_and_reach_times)
{
	struct flash_meter *m = meter(0);
	const int64_t t0 = T(2027, 3, 7, 23, 0, 0); /* Sunday 23:00 */
	FLASH_OPTS(flash_meter_limits, lim, .cpu_millicore_seconds = FLASH_METER_UNLIMITED,
		   .memory_mib_seconds = 1024 * 7200, .gpu_seconds = 0);
	struct flash_meter_decision d;

	ASSERT_OK(obs(m, "db", "o", t0, 1, 10, 1024, 0), "obs");
	ASSERT_OK(flash_meter_decide(m, "o", &lim, t0, &d), "decide");
	/* Two hours needed but the week ends in one: not this week. */
	cr_assert_eq(d.memory_reached_at, FLASH_METER_NEVER);
	cr_assert_eq(d.cpu_reached_at, FLASH_METER_NEVER);
	/* A GPU limit of 0 is reached at once, but "db" uses no GPU. */
	cr_assert(d.gpu_reached && d.suspend_gpu && d.n_suspend == 0);
	cr_assert_eq(d.gpu_reached_at, t0);
	cr_assert_eq(d.next_check_at, T(2027, 3, 8, 0, 0, 0));
	flash_meter_decision_clear(&d);
	ASSERT_OK(flash_meter_decide(m, "o", &lim, T(2027, 3, 8, 0, 0, 0), &d), "decide");
	cr_assert_eq(d.memory_reached_at, T(2027, 3, 8, 2, 0, 0));
	flash_meter_decision_clear(&d);
	ASSERT_OK(flash_meter_decide(m, "o", &lim, T(2027, 3, 8, 2, 0, 0), &d), "decide");
	cr_assert(d.memory_reached && d.suspend_all && d.n_suspend == 1);
	flash_meter_decision_clear(&d);
	flash_meter_free(m);
}

Test(meter, limits_validation)
{
	struct flash_meter *m = meter(0);
	FLASH_OPTS(flash_meter_limits, lim, .cpu_millicore_seconds = (uint64_t)INT64_MAX + 1);
	struct flash_meter_limits old = { .sz = sizeof(size_t) + sizeof(uint64_t), .cpu_millicore_seconds = 5 };
	struct flash_meter_decision d = { 0 };

	ASSERT_ERR(flash_meter_decide(m, "o", &lim, 0, &d), -FLASH_E_METER_LIMIT, "too large");
	cr_assert_eq(d.suspend, NULL);
	ASSERT_ERR(flash_meter_decide(m, "o", NULL, 0, &d), -EINVAL, "NULL limits");
	ASSERT_ERR(flash_meter_decide(m, "bad org!", &old, 0, &d), -FLASH_E_METER_ID, "bad org");
	/* An older caller's struct without memory/gpu: those are unlimited. */
	ASSERT_OK(flash_meter_decide(m, "o", &old, 0, &d), "old struct");
	cr_assert(!d.memory_reached && !d.gpu_reached && d.memory_reached_at == FLASH_METER_NEVER);
	flash_meter_decision_clear(&d);
	flash_meter_free(m);
}

/* ---------------------------------------------------------------- records */

Test(meter, deleted_service_keeps_its_record)
{
	struct flash_meter *m = meter(0);
	const int64_t t0 = T(2026, 12, 30, 10, 0, 0);
	struct flash_meter_record rec;
	struct flash_meter_usage u;
	char *json = NULL;

	ASSERT_OK(obs(m, "gone", "acme", t0, 2, 250, 128, 0), "obs");
	ASSERT_OK(obs(m, "stay", "acme", t0, 1, 100, 64, 0), "obs");
	ASSERT_OK(flash_meter_delete_service(m, "gone", t0 + 600), "delete");
	ASSERT_OK(flash_meter_record_find(m, FLASH_METER_SCOPE_SERVICE, "gone", t0, &rec), "record");
	cr_assert(rec.service_deleted);
	cr_assert_eq(rec.deleted_at, t0 + 600);
	cr_assert_eq(rec.usage.cpu_millicore_seconds, 2 * 250 * 600);
	ASSERT_STREQ(rec.organization, "acme", "org");
	/* The organization still counts it, forever in that week. */
	u = org_usage(m, "acme", t0 + 1200);
	cr_assert_eq(u.cpu_millicore_seconds, 2 * 250 * 600 + 100 * 1200);
	u = svc_usage(m, "gone", t0 + 5000);
	cr_assert_eq(u.cpu_millicore_seconds, 2 * 250 * 600, "no accrual after deletion");
	ASSERT_ERR(obs(m, "gone", "acme", t0 + 700, 2, 250, 128, 0), -FLASH_E_METER_DELETED, "after deletion");
	cr_assert_eq(obs(m, "gone", "acme", t0 + 500, 2, 250, 128, 0), FLASH_METER_LATE, "before deletion");
	ASSERT_ERR(flash_meter_delete_service(m, "gone", t0 + 700), -FLASH_E_METER_UNKNOWN_SERVICE, "twice");
	ASSERT_OK(flash_meter_record_to_json(&rec, &json, NULL), "json");
	cr_assert(strstr(json, "\"serviceDeleted\": true") && strstr(json, "\"deletedAt\": \"2026-12-30T10:10:00Z\""),
		  "%s", json);
	free(json);
	/* Survives a save/load round trip. */
	{
		char *doc = NULL;
		struct flash_meter *m2 = meter(0);
		size_t len;

		ASSERT_OK(flash_meter_to_json(m, &doc, &len), "to_json");
		ASSERT_OK(flash_meter_from_json(m2, doc, len, NULL), "from_json");
		ASSERT_OK(flash_meter_record_find(m2, FLASH_METER_SCOPE_SERVICE, "gone", t0, &rec), "record");
		cr_assert(rec.service_deleted && rec.usage.cpu_millicore_seconds == 2 * 250 * 600);
		ASSERT_ERR(obs(m2, "gone", "acme", t0 + 700, 1, 1, 1, 0), -FLASH_E_METER_DELETED, "tombstone kept");
		free(doc);
		flash_meter_free(m2);
	}
	/* A service deleted with no usage still leaves a tombstone. */
	ASSERT_OK(obs(m, "idle", "acme", t0, 0, 1, 1, 0), "idle");
	ASSERT_OK(flash_meter_delete_service(m, "idle", t0), "delete idle");
	ASSERT_OK(flash_meter_record_find(m, FLASH_METER_SCOPE_SERVICE, "idle", t0, &rec), "idle record");
	cr_assert(rec.service_deleted && rec.usage.cpu_millicore_seconds == 0);
	flash_meter_free(m);
}

Test(meter, record_status_json_golden)
{
	const struct flash_meter_record rec = {
		.scope = FLASH_METER_SCOPE_SERVICE,
		.organization = "acme",
		.service_id = "svc-1",
		.week_start = T(2026, 12, 28, 0, 0, 0),
		.usage = { .cpu_millicore_seconds = 123, .memory_mib_seconds = 456, .gpu_seconds = 7 },
		.accrued_until = T(2027, 1, 1, 12, 0, 0),
	};
	static const char want[] =
		"{\n"
		"    \"scope\": \"Service\",\n"
		"    \"organization\": \"acme\",\n"
		"    \"serviceId\": \"svc-1\",\n"
		"    \"week\": \"2026-W53\",\n"
		"    \"weekStart\": \"2026-12-28T00:00:00Z\",\n"
		"    \"weekEnd\": \"2027-01-04T00:00:00Z\",\n"
		"    \"cpuMillicoreSeconds\": 123,\n"
		"    \"memoryMiBSeconds\": 456,\n"
		"    \"gpuSeconds\": 7,\n"
		"    \"saturated\": false,\n"
		"    \"accruedUntil\": \"2027-01-01T12:00:00Z\",\n"
		"    \"serviceDeleted\": false\n"
		"}\n";
	char *json = NULL;
	size_t len = 0;

	ASSERT_OK(flash_meter_record_to_json(&rec, &json, &len), "to_json");
	ASSERT_STREQ(json, want, "status JSON");
	cr_assert_eq(len, strlen(want));
	free(json);
}

/* ---------------------------------------------------------------- persistence */

static char *tmpdir(void)
{
	char *d = strdup("/tmp/test-meter.XXXXXX");

	cr_assert(d && mkdtemp(d), "mkdtemp");
	return d;
}

static void rm_dir(char *d, const char *file)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", d, file);
	unlink(p);
	rmdir(d);
	free(d);
}

static void same_records(struct flash_meter *a, struct flash_meter *b, const char *what)
{
	size_t n = flash_meter_record_count(a);

	cr_assert_eq(n, flash_meter_record_count(b), "%s: record counts %zu vs %zu", what, n,
		     flash_meter_record_count(b));
	for (size_t i = 0; i < n; i++) {
		struct flash_meter_record x, y;

		ASSERT_OK(flash_meter_record_get(a, i, &x), "get");
		ASSERT_OK(flash_meter_record_get(b, i, &y), "get");
		cr_assert(x.scope == y.scope && strcmp(x.organization, y.organization) == 0 &&
			  x.week_start == y.week_start &&
			  x.usage.cpu_millicore_seconds == y.usage.cpu_millicore_seconds &&
			  x.usage.memory_mib_seconds == y.usage.memory_mib_seconds &&
			  x.usage.gpu_seconds == y.usage.gpu_seconds && x.usage.saturated == y.usage.saturated &&
			  x.service_deleted == y.service_deleted,
			  "%s: record %zu differs (%lld vs %lld)", what, i, (long long)x.usage.cpu_millicore_seconds,
			  (long long)y.usage.cpu_millicore_seconds);
	}
}

/* Reload from disk mid-week (with observations still held in the reorder
 * window) continues with the same totals as a meter that never stopped. */
Test(meter, reload_mid_week_continues)
{
	char *dir = tmpdir(), path[256];
	struct flash_meter *a = meter(120), *b = meter(120);
	const int64_t t0 = T(2027, 1, 6, 9, 0, 0); /* Wednesday */
	_cleanup_flash_diag_ struct flash_diag *err = flash_test_diag();

	snprintf(path, sizeof(path), "%s/meter.json", dir);
	for (int i = 0; i < 10; i++) {
		ASSERT_OK(obs(a, "api", "acme", t0 + i * 50, 1 + i % 3, 300, 256, 0), "obs");
		ASSERT_OK(obs(a, "ml", "acme", t0 + i * 70, 1, 2000, 8192, i % 2), "obs");
	}
	ASSERT_OK(flash_meter_save(a, path), "save");
	ASSERT_OK(flash_meter_load(b, path, err), "load");
	same_records(a, b, "after load");
	for (int i = 10; i < 40; i++) {
		int64_t t = t0 + i * 50 + (i % 4 == 0 ? -60 : 0); /* some reordered */

		cr_assert_eq(obs(a, "api", "acme", t, 2, 300, 256, 0), obs(b, "api", "acme", t, 2, 300, 256, 0));
		cr_assert_eq(obs(a, "ml", "acme", t0 + i * 70, 2, 2000, 8192, 1),
			     obs(b, "ml", "acme", t0 + i * 70, 2, 2000, 8192, 1));
	}
	same_records(a, b, "continued");
	{
		struct flash_meter_usage ua = org_usage(a, "acme", t0 + D), ub = org_usage(b, "acme", t0 + D);

		cr_assert(ua.cpu_millicore_seconds == ub.cpu_millicore_seconds && ua.gpu_seconds == ub.gpu_seconds &&
			  ua.memory_mib_seconds == ub.memory_mib_seconds && ua.cpu_millicore_seconds > 0);
	}
	flash_meter_free(a);
	flash_meter_free(b);

	/* A service with nothing committed yet still accepts an earlier first
	 * observation after a reload; one with commits does not. */
	a = meter(120);
	b = meter(120);
	ASSERT_OK(obs(a, "new", "acme", t0, 1, 10, 0, 0), "first");
	ASSERT_OK(obs(a, "old", "acme", t0, 1, 10, 0, 0), "first");
	ASSERT_OK(obs(a, "old", "acme", t0 + 500, 1, 10, 0, 0), "held");
	ASSERT_OK(obs(a, "old", "acme", t0 + 1000, 1, 10, 0, 0), "commits [t0, t0+500)");
	ASSERT_OK(flash_meter_save(a, path), "save");
	ASSERT_OK(flash_meter_load(b, path, err), "load");
	cr_assert_eq(obs(b, "new", "acme", t0 - 60, 2, 10, 0, 0), FLASH_METER_REORDERED, "rebased");
	cr_assert_eq(obs(b, "old", "acme", t0 + 400, 2, 10, 0, 0), FLASH_METER_LATE, "already committed");
	cr_assert_eq(svc_usage(b, "new", t0 + 100).cpu_millicore_seconds, 10 * (2 * 60 + 100));
	cr_assert_eq(svc_usage(b, "old", t0 + 500).cpu_millicore_seconds, 10 * 500);
	flash_meter_free(a);
	flash_meter_free(b);
	rm_dir(dir, "meter.json");
}

/* Every truncation of a good file, and targeted corruptions, are refused
 * with a clear error and leave the loaded state untouched. */
Test(meter, corrupt_or_truncated_file_refused)
{
	char *dir = tmpdir(), path[256];
	struct flash_meter *a = meter(0), *b = meter(0);
	const int64_t t0 = T(2027, 1, 6, 9, 0, 0);
	char *doc = NULL, *good = NULL;
	size_t len, glen;
	_cleanup_flash_diag_ struct flash_diag *err = flash_test_diag();
	struct flash_meter_usage u;

	snprintf(path, sizeof(path), "%s/meter.json", dir);
	ASSERT_OK(obs(a, "api", "acme", t0, 2, 300, 256, 0), "obs");
	ASSERT_OK(obs(a, "api", "acme", t0 + 100, 2, 300, 256, 0), "obs");
	ASSERT_OK(flash_meter_to_json(a, &doc, &len), "to_json");
	/* b holds a different, good state. */
	ASSERT_OK(obs(b, "x", "y", t0, 1, 7, 7, 0), "obs");
	ASSERT_OK(obs(b, "x", "y", t0 + 10, 1, 7, 7, 0), "obs");
	ASSERT_OK(flash_meter_to_json(b, &good, &glen), "to_json");
	for (size_t cut = 0; cut < len - 1; cut++) {
		int r = flash_meter_from_json(b, doc, cut, err);

		cr_assert(r == -FLASH_E_METER_STATE_SYNTAX, "cut at %zu: %d", cut, r);
		cr_assert(flash_test_message(err)[0], "cut at %zu: no message", cut);
	}
	{
		FILE *f = fopen(path, "w");

		cr_assert(f);
		fwrite(doc, 1, len / 2, f);
		fclose(f);
	}
	ASSERT_ERR(flash_meter_load(b, path, err), -FLASH_E_METER_STATE_SYNTAX, "truncated file");
	cr_assert(flash_test_line(err) > 0, "line of the fault");
	u = svc_usage(b, "x", t0 + 10);
	cr_assert_eq(u.cpu_millicore_seconds, 70, "last good state kept");
	{
		char *again = NULL;

		ASSERT_OK(flash_meter_to_json(b, &again, NULL), "to_json");
		ASSERT_STREQ(again, good, "state unchanged");
		free(again);
	}
	ASSERT_ERR(flash_meter_load(b, "/nonexistent/meter.json", err), -ENOENT, "missing");
	free(doc);
	free(good);
	flash_meter_free(a);
	flash_meter_free(b);
	rm_dir(dir, "meter.json");
}

struct corruption {
	const char *from, *to; /* first occurrence replaced */
	int err;
	const char *path;      /* expected error path prefix */
};

Test(meter, corruption_table)
{
	struct flash_meter *a = meter(30), *b = meter(0);
	const int64_t t0 = T(2027, 1, 6, 9, 0, 0);
	static const struct corruption cases[] = {
		{ "\"cpuMillicoreSeconds\": 60000", "\"cpuMillicoreSeconds\": 60001", -FLASH_E_METER_STATE_INCONSISTENT, "records" },
		{ "\"cpuMillicoreSeconds\": 60000", "\"cpuMillicoreSeconds\": -1", -FLASH_E_METER_STATE_INVALID, "records[0].cpuMillicoreSeconds" },
		{ "\"cpuMillicoreSeconds\": 60000", "\"cpuMillicoreSeconds\": 6e4", -FLASH_E_METER_STATE_INVALID, "records[0].cpuMillicoreSeconds" },
		{ "\"cpuMillicoreSeconds\": 60000", "\"cpuMillicoreSeconds\": 9223372036854775808", -FLASH_E_METER_STATE_INVALID, "records[0].cpuMillicoreSeconds" },
		{ "\"week\": \"2027-W01\"", "\"week\": \"2027-W02\"", -FLASH_E_METER_STATE_INVALID, "records[0].week" },
		{ "\"weekStart\": \"2027-01-04T00:00:00Z\"", "\"weekStart\": \"2027-01-05T00:00:00Z\"", -FLASH_E_METER_STATE_INVALID, "records[0].weekStart" },
		{ "\"scope\": \"Organization\"", "\"scope\": \"Org\"", -FLASH_E_METER_STATE_INVALID, "records[0].scope" },
		{ "\"saturated\": false", "\"saturated\": 0", -FLASH_E_METER_STATE_INVALID, "records[0].saturated" },
		{ "\"saturated\": false", "\"saturated\": false, \"extra\": 1", -FLASH_E_METER_STATE_INVALID, "records[0].extra" },
		{ "\"format\": \"flash-meter-state/1\"", "\"format\": \"flash-meter-state/2\"", -FLASH_E_METER_STATE_INVALID, "format" },
		{ "\"organization\": \"acme\"", "\"organization\": \"ac me\"", -FLASH_E_METER_STATE_INVALID, "records[0].organization" },
		{ "\"readyReplicas\": 2", "\"readyReplicas\": 4294967296", -FLASH_E_METER_STATE_INVALID, "services[0].readyReplicas" },
		{ "\"time\": \"2027-01-06T09:02:00Z\"", "\"time\": \"2027-01-06T09:00:00Z\"", -FLASH_E_METER_STATE_INVALID, "services[0].held[0].time" },
		{ "\"accruedUntil\": \"2027-01-06T09:01:40Z\"", "\"accruedUntil\": \"2027-01-16T09:01:40Z\"", -FLASH_E_METER_STATE_INVALID, "records[0].accruedUntil" },
		{ "\"serviceDeleted\": false", "\"serviceDeleted\": true, \"deletedAt\": \"2027-01-06T09:05:00Z\"", -FLASH_E_METER_STATE_INCONSISTENT, "records" },
		{ "\"committedAt\": \"2027-01-06T09:01:40Z\"", "\"committedAt\": \"2027-01-06T09:01:00Z\"", -FLASH_E_METER_STATE_INCONSISTENT, "records" },
		{ "\"services\": [\n        {\n            \"serviceId\": \"api\"", "\"services\": [\n        {\n            \"serviceId\": \"apx\"", -FLASH_E_METER_STATE_INCONSISTENT, "records" },
		{ "\"fresh\": false", "\"fresh\": null", -FLASH_E_METER_STATE_INVALID, "services[0].fresh" },
		{ "{", "{\"format\": \"x\", ", -FLASH_E_METER_STATE_SYNTAX, "" },
		{ "\"records\"", "\"records\": [], \"x\"", -FLASH_E_METER_STATE_INVALID, "x" },
		/* The field tables: a misspelt record field is named (before the
		 * then missing one), a held entry is closed too. */
		{ "\"saturated\"", "\"saturatd\"", -FLASH_E_METER_STATE_INVALID, "records[" },
		{ "\"time\"", "\"x\": 1, \"time\"", -FLASH_E_METER_STATE_INVALID, "services[0].held[0].x" },
	};
	char *doc = NULL;
	size_t len;

	/* Committed to 09:01:40 (window 30 s), one held at 09:02:00. */
	ASSERT_OK(obs(a, "api", "acme", t0, 2, 300, 256, 0), "obs");
	ASSERT_OK(obs(a, "api", "acme", t0 + 100, 2, 300, 256, 0), "obs");
	ASSERT_OK(obs(a, "api", "acme", t0 + 120, 2, 300, 256, 0), "obs");
	ASSERT_OK(obs(a, "api", "acme", t0 + 130, 2, 300, 256, 0), "obs");
	ASSERT_OK(flash_meter_to_json(a, &doc, &len), "to_json");
	ASSERT_OK(flash_meter_from_json(b, doc, len, NULL), "pristine document loads");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct corruption *c = &cases[i];
		const char *at = strstr(doc, c->from);
		char bad[8192];
		_cleanup_flash_diag_ struct flash_diag *err = flash_test_diag();
		int r;

		cr_assert(at, "case %zu: \"%s\" not in document:\n%s", i, c->from, doc);
		snprintf(bad, sizeof(bad), "%.*s%s%s", (int)(at - doc), doc, c->to, at + strlen(c->from));
		r = flash_meter_from_json(b, bad, strlen(bad), err);
		cr_assert_eq(r, c->err, "case %zu (%s): %d %s: %s", i, c->to, r, flash_test_path(err), flash_test_message(err));
		cr_assert(strncmp(flash_test_path(err), c->path, strlen(c->path)) == 0, "case %zu: path \"%s\" want \"%s\" (%s)",
			  i, flash_test_path(err), c->path, flash_test_message(err));
		cr_assert(flash_test_message(err)[0], "case %zu: message", i);
	}
	free(doc);
	flash_meter_free(a);
	flash_meter_free(b);
}

/* Random byte changes of a good document never crash; a refused one
 * leaves the state as it was, an accepted one round-trips. */
Test(meter, mutated_documents)
{
	struct flash_meter *a = meter(60), *b = meter(60);
	const int64_t t0 = T(2027, 1, 3, 23, 50, 0);
	static const char alphabet[] = "0123456789\"{}[],:-TZWe.tfn \\x";
	char *doc = NULL, *before = NULL;
	unsigned int seed = 77;
	size_t len;
	int accepted = 0;

	for (int i = 0; i < 30; i++) {
		ASSERT_OK(obs(a, i % 3 ? "api" : "ml", i % 3 ? "acme" : "lab", t0 + i * 40, 1 + (uint32_t)i % 3, 300, 256,
			      (uint32_t)i % 2), "obs");
	}
	ASSERT_OK(flash_meter_delete_service(a, "ml", t0 + 1200), "delete");
	ASSERT_OK(flash_meter_to_json(a, &doc, &len), "to_json");
	ASSERT_OK(flash_meter_to_json(b, &before, NULL), "to_json");
	for (int iter = 0; iter < 3000; iter++) {
		char *bad = strdup(doc);
		int r;

		cr_assert(bad);
		for (int k = 1 + (int)(rand_r(&seed) % 3); k > 0; k--)
			bad[rand_r(&seed) % len] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
		r = flash_meter_from_json(b, bad, len, NULL);
		if (r == 0) {
			char *again = NULL;
			size_t alen;
			struct flash_meter *c = meter(60);

			accepted++;
			ASSERT_OK(flash_meter_to_json(b, &again, &alen), "to_json");
			ASSERT_OK(flash_meter_from_json(c, again, alen, NULL), "accepted state reloads");
			free(before);
			before = again;
			flash_meter_free(c);
		} else {
			char *now = NULL;

			cr_assert(r == -FLASH_E_METER_STATE_SYNTAX || r == -FLASH_E_METER_STATE_INVALID ||
				  r == -FLASH_E_METER_STATE_INCONSISTENT, "iteration %d: %d", iter, r);
			ASSERT_OK(flash_meter_to_json(b, &now, NULL), "to_json");
			ASSERT_STREQ(now, before, "refused document left the state alone");
			free(now);
		}
		free(bad);
	}
	cr_log_info("%d of 3000 mutated documents were accepted", accepted);
	free(doc);
	free(before);
	flash_meter_free(a);
	flash_meter_free(b);
}

/* ---------------------------------------------------------------- robustness */

struct logged {
	int warnings;
	char last[512];
};

static void capture(enum flash_log_level level, const char *msg, void *userdata)
{
	struct logged *l = userdata;

	if (level <= FLASH_LOG_WARNING) {
		l->warnings++;
		snprintf(l->last, sizeof(l->last), "%s", msg);
	}
}

Test(meter, clock_backwards_ignored_and_logged)
{
	struct flash_meter *m = meter(0);
	struct logged log = { 0 };
	const int64_t t0 = T(2027, 2, 1, 12, 0, 0);

	flash_set_log(capture, FLASH_LOG_DEBUG, &log);
	ASSERT_OK(obs(m, "s", "o", t0, 1, 1000, 0, 0), "obs");
	ASSERT_OK(obs(m, "s", "o", t0 + 100, 1, 1000, 0, 0), "obs");
	cr_assert_eq(obs(m, "s", "o", t0 + 40, 5, 1000, 0, 0), FLASH_METER_LATE);
	cr_assert_eq(log.warnings, 1);
	cr_assert(strstr(log.last, "backwards"), "%s", log.last);
	ASSERT_OK(obs(m, "s", "o", t0 + 200, 1, 1000, 0, 0), "obs");
	cr_assert_eq(svc_usage(m, "s", t0 + 200).cpu_millicore_seconds, 200 * 1000, "late values ignored");
	flash_set_log(NULL, FLASH_LOG_INFO, NULL);
	flash_meter_free(m);
}

/* A gap longer than max_gap (observer down, clock jumped forward) counts
 * only max_gap seconds, in queries and commits alike, and is logged. */
Test(meter, long_gap_is_capped)
{
	FLASH_OPTS(flash_meter_opts, o, .max_gap = 2 * D);
	struct flash_meter *m = NULL;
	struct logged log = { 0 };
	const int64_t t0 = T(2027, 2, 1, 0, 0, 0); /* Monday */
	FLASH_OPTS(flash_meter_limits, lim, .cpu_millicore_seconds = 1000000000000);
	struct flash_meter_decision d;

	ASSERT_OK(flash_meter_new(&o, &m), "new");
	flash_set_log(capture, FLASH_LOG_DEBUG, &log);
	ASSERT_OK(obs(m, "s", "o", t0, 1, 1, 0, 0), "obs");
	cr_assert_eq(svc_usage(m, "s", t0 + 5 * D).cpu_millicore_seconds, 2 * D, "projection capped");
	ASSERT_OK(flash_meter_decide(m, "o", &lim, t0 + 5 * D, &d), "decide");
	cr_assert_eq(d.cpu_reached_at, FLASH_METER_NEVER, "no longer accruing");
	flash_meter_decision_clear(&d);
	ASSERT_OK(obs(m, "s", "o", t0 + 5 * D, 1, 1, 0, 0), "obs");
	cr_assert_eq(log.warnings, 1);
	cr_assert(strstr(log.last, "not observed"), "%s", log.last);
	ASSERT_OK(obs(m, "s", "o", t0 + 5 * D + 100, 1, 1, 0, 0), "obs");
	cr_assert_eq(svc_usage(m, "s", t0 + 5 * D + 100).cpu_millicore_seconds, 2 * D + 100);
	/* A jump to the last representable time creates a bounded number of
	 * records, and the state still loads. */
	ASSERT_OK(obs(m, "s", "o", FLASH_METER_TIME_MAX, 1, 1, 0, 0), "obs");
	cr_assert(flash_meter_record_count(m) <= 6, "%zu records", flash_meter_record_count(m));
	{
		char *doc = NULL;
		size_t len;
		struct flash_meter *m2 = NULL;

		ASSERT_OK(flash_meter_new(&o, &m2), "new");
		ASSERT_OK(flash_meter_to_json(m, &doc, &len), "to_json");
		ASSERT_OK(flash_meter_from_json(m2, doc, len, NULL), "from_json");
		free(doc);
		flash_meter_free(m2);
	}
	flash_set_log(NULL, FLASH_LOG_INFO, NULL);
	flash_meter_free(m);
	{
		FLASH_OPTS(flash_meter_opts, bad, .max_gap = 59);

		ASSERT_ERR(flash_meter_new(&bad, &m), -EINVAL, "max_gap too small");
	}
}

Test(meter, duplicates_and_replacements)
{
	struct flash_meter *m = meter(60);
	const int64_t t0 = T(2027, 2, 1, 12, 0, 0);

	cr_assert_eq(obs(m, "s", "o", t0, 1, 10, 0, 0), FLASH_METER_APPLIED);
	cr_assert_eq(obs(m, "s", "o", t0, 1, 10, 0, 0), FLASH_METER_DUPLICATE);
	cr_assert_eq(obs(m, "s", "o", t0 + 30, 2, 10, 0, 0), FLASH_METER_APPLIED);
	cr_assert_eq(obs(m, "s", "o", t0 + 30, 2, 10, 0, 0), FLASH_METER_DUPLICATE, "held duplicate");
	cr_assert_eq(obs(m, "s", "o", t0 + 30, 3, 10, 0, 0), FLASH_METER_REPLACED, "same time, new values");
	cr_assert_eq(obs(m, "s", "o", t0 + 20, 1, 10, 0, 0), FLASH_METER_REORDERED);
	cr_assert_eq(obs(m, "s", "o", t0 + 100, 3, 10, 0, 0), FLASH_METER_APPLIED);
	/* 0..20 at 1, 20..30 at 1, 30..100 at 3, then projection to 130 at 3. */
	cr_assert_eq(svc_usage(m, "s", t0 + 130).cpu_millicore_seconds, 10 * (20 + 10 + 70 * 3 + 30 * 3));
	ASSERT_ERR(obs(m, "s", "other-org", t0 + 200, 1, 1, 1, 1), -FLASH_E_METER_ORG_MISMATCH, "org");
	ASSERT_ERR(obs(m, "", "o", t0, 1, 1, 1, 1), -FLASH_E_METER_ID, "empty id");
	ASSERT_ERR(obs(m, "s/../x", "o", t0, 1, 1, 1, 1), -FLASH_E_METER_ID, "slash");
	ASSERT_ERR(obs(m, "s", "o", -5, 1, 1, 1, 1), -FLASH_E_METER_TIME, "time");
	flash_meter_free(m);
}

/* Observations shuffled within the window give exactly the totals of the
 * same observations in order. */
Test(meter, reordering_within_window_is_exact)
{
	const int64_t t0 = T(2027, 1, 3, 23, 0, 0); /* crosses a Monday */
	struct flash_meter *in = meter(0), *shuf = meter(300);
	struct step s[200];
	unsigned int seed = 12345;

	for (int i = 0; i < 200; i++)
		s[i] = (struct step){ t0 + i * 37, 1 + (uint32_t)(i % 5), 100 + (uint32_t)i, 64, (uint32_t)(i % 2) };
	for (int i = 0; i < 200; i++)
		ASSERT_OK(obs(in, "s", "o", s[i].t, s[i].replicas, s[i].cpu, s[i].mem, s[i].gpu), "in order");
	/* Sort by index + random 0..5: nothing moves more than 5 places
	 * (185 s < the 300 s window), the first one included. */
	{
		int key[200];

		for (int i = 0; i < 200; i++)
			key[i] = i + (int)(rand_r(&seed) % 6);
		for (int i = 1; i < 200; i++)
			for (int j = i; j > 0 && key[j - 1] > key[j]; j--) {
				struct step x = s[j];
				int k = key[j];

				s[j] = s[j - 1];
				s[j - 1] = x;
				key[j] = key[j - 1];
				key[j - 1] = k;
			}
	}
	for (int i = 0; i < 200; i++) {
		int r = obs(shuf, "s", "o", s[i].t, s[i].replicas, s[i].cpu, s[i].mem, s[i].gpu);

		cr_assert(r == FLASH_METER_APPLIED || r == FLASH_METER_REORDERED, "step %d: %d", i, r);
	}
	ASSERT_OK(flash_meter_delete_service(in, "s", t0 + 200 * 37), "flush");
	ASSERT_OK(flash_meter_delete_service(shuf, "s", t0 + 200 * 37), "flush");
	same_records(in, shuf, "shuffled");
	cr_assert_eq(flash_meter_record_count(in), 4, "two weeks × two scopes");
	flash_meter_free(in);
	flash_meter_free(shuf);
}

/* Property: splitting an interval at arbitrary points (with the same
 * values) never changes any week's total. */
Test(meter, property_split_never_changes_total)
{
	unsigned int seed = 2026;

	for (int iter = 0; iter < 300; iter++) {
		struct flash_meter *whole = meter(0), *split = meter(0);
		int64_t a = (int64_t)(rand_r(&seed) % 2000000000u);
		int64_t len = 1 + (int64_t)(rand_r(&seed) % (5u * 604800u));
		uint32_t rep = rand_r(&seed) % 4 == 0 ? UINT32_MAX : (uint32_t)(rand_r(&seed) % 1000);
		uint32_t cpu = (uint32_t)rand_r(&seed), mem = (uint32_t)rand_r(&seed) % 100000, gpu = (uint32_t)rand_r(&seed) % 9;
		int64_t pts[16];
		int n = (int)(rand_r(&seed) % 16);

		for (int i = 0; i < n; i++)
			pts[i] = a + (int64_t)(rand_r(&seed) % (uint32_t)len);
		/* ascending */
		for (int i = 1; i < n; i++)
			for (int j = i; j > 0 && pts[j - 1] > pts[j]; j--) {
				int64_t x = pts[j];

				pts[j] = pts[j - 1];
				pts[j - 1] = x;
			}
		ASSERT_OK(obs(whole, "s", "o", a, rep, cpu, mem, gpu), "whole");
		ASSERT_OK(obs(whole, "s", "o", a + len, rep, cpu, mem, gpu), "whole");
		ASSERT_OK(obs(split, "s", "o", a, rep, cpu, mem, gpu), "split");
		for (int i = 0; i < n; i++)
			cr_assert(obs(split, "s", "o", pts[i], rep, cpu, mem, gpu) >= 0);
		ASSERT_OK(obs(split, "s", "o", a + len, rep, cpu, mem, gpu), "split");
		same_records(whole, split, "split");
		flash_meter_free(whole);
		flash_meter_free(split);
	}
}

/* Maximum values saturate at INT64_MAX and are flagged; the largest
 * non-saturating products are exact. */
Test(meter, maximum_values_saturate)
{
	struct flash_meter *m = meter(0);
	const int64_t t0 = T(2027, 1, 4, 0, 0, 0);
	struct flash_meter_record rec;
	struct flash_meter_decision d;
	FLASH_OPTS(flash_meter_limits, lim, .cpu_millicore_seconds = INT64_MAX,
		   .memory_mib_seconds = FLASH_METER_UNLIMITED, .gpu_seconds = FLASH_METER_UNLIMITED);
	struct flash_meter_usage u;

	ASSERT_OK(obs(m, "big", "o", t0, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX), "obs");
	ASSERT_OK(obs(m, "big", "o", t0 + FLASH_METER_WEEK, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX), "obs");
	ASSERT_OK(flash_meter_record_find(m, FLASH_METER_SCOPE_SERVICE, "big", t0, &rec), "record");
	cr_assert(rec.usage.saturated);
	cr_assert_eq(rec.usage.cpu_millicore_seconds, INT64_MAX);
	cr_assert_eq(rec.usage.gpu_seconds, INT64_MAX);
	/* A saturated counter reaches any finite limit. */
	ASSERT_OK(flash_meter_decide(m, "o", &lim, t0 + 10, &d), "decide");
	cr_assert(d.cpu_reached && d.suspend_all);
	flash_meter_decision_clear(&d);
	/* Another org: (2^32-1) × (2^31-1) × 1 s fits (< 2^63). */
	ASSERT_OK(obs(m, "wide", "p", t0, INT32_MAX, UINT32_MAX, 1, 0), "obs");
	u = svc_usage(m, "wide", t0 + 1);
	cr_assert_eq((uint64_t)u.cpu_millicore_seconds, (uint64_t)UINT32_MAX * INT32_MAX);
	cr_assert(!u.saturated);
	/* Two seconds of it do not fit in int64: saturated. */
	u = svc_usage(m, "wide", t0 + 2);
	cr_assert(u.saturated && u.cpu_millicore_seconds == INT64_MAX);
	/* A realistic large org: 1000 cores × 10000 replicas for a week is
	 * 6.048e18 millicore-seconds, still exact. */
	ASSERT_OK(obs(m, "farm", "q", t0, 10000, 1000000, 0, 0), "obs");
	u = org_usage(m, "q", t0 + FLASH_METER_WEEK - 1);
	cr_assert_eq(u.cpu_millicore_seconds, INT64_C(10000) * 1000000 * (FLASH_METER_WEEK - 1));
	cr_assert(!u.saturated);
	/* The saturated state round-trips through JSON. */
	{
		char *doc = NULL;
		size_t len;
		struct flash_meter *m2 = meter(0);

		ASSERT_OK(flash_meter_to_json(m, &doc, &len), "to_json");
		ASSERT_OK(flash_meter_from_json(m2, doc, len, NULL), "from_json");
		same_records(m, m2, "saturated");
		free(doc);
		flash_meter_free(m2);
	}
	flash_meter_free(m);
}

Test(meter, prune_drops_old_weeks)
{
	struct flash_meter *m = meter(0);
	const int64_t t0 = T(2027, 1, 4, 0, 0, 0);
	struct flash_meter_record rec;
	char *doc = NULL;
	size_t len;

	ASSERT_OK(obs(m, "s", "o", t0 - 10, 1, 1, 1, 0), "obs");
	ASSERT_OK(obs(m, "s", "o", t0 + 10, 1, 1, 1, 0), "obs");
	cr_assert_eq(flash_meter_record_count(m), 4);
	cr_assert_eq(flash_meter_prune(m, t0), 2);
	ASSERT_ERR(flash_meter_record_find(m, FLASH_METER_SCOPE_SERVICE, "s", t0 - 10, &rec), -ENOENT, "pruned");
	ASSERT_OK(flash_meter_record_find(m, FLASH_METER_SCOPE_SERVICE, "s", t0, &rec), "kept");
	cr_assert_eq(rec.usage.cpu_millicore_seconds, 10);
	ASSERT_OK(flash_meter_to_json(m, &doc, &len), "to_json");
	{
		struct flash_meter *m2 = meter(0);

		ASSERT_OK(flash_meter_from_json(m2, doc, len, NULL), "from_json");
		same_records(m, m2, "pruned");
		flash_meter_free(m2);
	}
	free(doc);
	flash_meter_free(m);
}

Test(meter, arguments_and_strerror)
{
	struct flash_meter *m = NULL;
	FLASH_OPTS(flash_meter_opts, big, .reorder_window = 3601);
	struct flash_meter_record rec;

	ASSERT_ERR(flash_meter_new(&big, &m), -EINVAL, "window too large");
	cr_assert_eq(m, NULL);
	ASSERT_ERR(flash_meter_new(NULL, NULL), -EINVAL, "NULL ret");
	ASSERT_OK(flash_meter_new(NULL, &m), "defaults");
	ASSERT_ERR(flash_meter_observe(m, NULL), -EINVAL, "NULL obs");
	ASSERT_ERR(flash_meter_record_get(m, 0, &rec), -ERANGE, "empty");
	ASSERT_ERR(flash_meter_delete_service(m, "x", 0), -FLASH_E_METER_UNKNOWN_SERVICE, "unknown");
	ASSERT_STREQ(flash_strerror(-FLASH_E_METER_ORG_MISMATCH), "service belongs to another organization", "strerror");
	ASSERT_STREQ(flash_strerror(-FLASH_E_METER_STATE_INCONSISTENT), "meter state records are inconsistent", "strerror");
	flash_meter_free(m);
	flash_meter_free(NULL);
	flash_meter_decision_clear(NULL);
}
