/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Weekly runtime metering: piecewise-constant integration of service
 * observations into (organization, week) and (service, week) records,
 * suspension decisions, and the crash-safe JSON state file.
 *
 * Each live service keeps a committed point (time tc, values sc): every
 * interval before tc has been added to the records.  Observations newer
 * than tc wait in a small sorted list ("held") until they are older than
 * the reorder window, then commit in time order: the interval [tc, t)
 * accrues at sc, split at each Monday 00:00 UTC, and (t, values) becomes
 * the committed point.  Queries add the held part on the fly.
 *
 * Bounds: every factor is a uint32_t and an interval is at most one week
 * (604800 < 2^20 s) once split, so one piece is < 2^84; it is computed with
 * overflow checks and saturates at INT64_MAX, as do the sums.  Saturating
 * non-negative addition gives min(true total, INT64_MAX) whatever the
 * order and the split points, so splitting never changes a result.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <flash/meter.h>

#include "internal.h"
#include "json.h"
#include "names.h"

#define DAY INT64_C(86400)
#define WEEK FLASH_METER_WEEK
/* 1970-01-05T00:00:00Z, the first Monday of the Unix epoch. */
#define FIRST_MONDAY (4 * DAY)
#define COUNTER_MAX ((uint64_t)INT64_MAX)
#define WINDOW_MAX 3600u
#define PENDING_DEFAULT 64u
#define PENDING_MAX 4096u
#define GAP_DEFAULT (366 * 86400u)
#define GAP_MIN 60u
#define STATE_FILE_MAX (64u << 20)
#define STATE_FORMAT "flash-meter-state/1"

static const char *const meter_errors[] = {
	[FLASH_E_METER_ID - FLASH_E_METER_ID] = "service or organization id is malformed",
	[FLASH_E_METER_TIME - FLASH_E_METER_ID] = "time is malformed or out of range",
	[FLASH_E_METER_ORG_MISMATCH - FLASH_E_METER_ID] = "service belongs to another organization",
	[FLASH_E_METER_UNKNOWN_SERVICE - FLASH_E_METER_ID] = "no such service in the meter",
	[FLASH_E_METER_DELETED - FLASH_E_METER_ID] = "service was deleted before this observation",
	[FLASH_E_METER_LIMIT - FLASH_E_METER_ID] = "weekly limit out of range",
	[FLASH_E_METER_STATE_SYNTAX - FLASH_E_METER_ID] = "meter state is not valid or complete JSON",
	[FLASH_E_METER_STATE_INVALID - FLASH_E_METER_ID] = "meter state has an invalid field",
	[FLASH_E_METER_STATE_INCONSISTENT - FLASH_E_METER_ID] = "meter state records are inconsistent",
};

const char *flash__meter_strerror(int code)
{
	size_t i = (size_t)(code - FLASH_E_METER_ID);

	return i < ARRAY_SIZE(meter_errors) ? meter_errors[i] : NULL;
}

/* ---------------------------------------------------------------- time */

static bool time_ok(int64_t t)
{
	return t >= 0 && t <= FLASH_METER_TIME_MAX;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Caller checked time_ok(t). */
static int64_t week_of(int64_t t)
{
	return FIRST_MONDAY + floor_div(t - FIRST_MONDAY, WEEK) * WEEK;
}

/* Days since 1970-01-01 -> proleptic Gregorian date (H. Hinnant's
 * days_from_civil inverse, valid for any int64 day count we produce). */
static void civil_from_days(int64_t z, int64_t *y, unsigned int *m, unsigned int *d)
{
	int64_t era, yoe, doy, mp;

	z += 719468;
	era = floor_div(z, 146097);
	int64_t doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int64_t days_from_civil(int64_t y, unsigned int m, unsigned int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void iso_week_of(int64_t t, int *ret_year, int *ret_week)
{
	int64_t thursday = floor_div(week_of(t), DAY) + 3, y;
	unsigned int m, d;

	civil_from_days(thursday, &y, &m, &d);
	*ret_year = (int)y;
	*ret_week = (int)((thursday - days_from_civil(y, 1, 1)) / 7 + 1);
}

FLASH_API int flash_meter_week_start(int64_t t, int64_t *ret_start)
{
	if (!ret_start)
		return -EINVAL;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	*ret_start = week_of(t);
	return 0;
}

FLASH_API int flash_meter_iso_week(int64_t t, int *ret_year, int *ret_week)
{
	if (!ret_year || !ret_week)
		return -EINVAL;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	iso_week_of(t, ret_year, ret_week);
	return 0;
}

FLASH_API int flash_meter_week_name(int64_t t, char *buf, size_t size)
{
	int year, week;

	if (!buf)
		return -EINVAL;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	if (size < FLASH_METER_WEEK_STRLEN)
		return -ENOSPC;
	iso_week_of(t, &year, &week);
	return snprintf(buf, size, "%04d-W%02d", year, week);
}

/* Formats any t whose year has four digits (week ends included). */
static int format_time(int64_t t, char *buf, size_t size)
{
	int64_t days = floor_div(t, DAY), secs = t - days * DAY, y;
	unsigned int m, d;

	civil_from_days(days, &y, &m, &d);
	return snprintf(buf, size, "%04d-%02u-%02uT%02d:%02d:%02dZ", (int)y, m, d,
			(int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
}

FLASH_API int flash_meter_format_time(int64_t t, char *buf, size_t size)
{
	if (!buf)
		return -EINVAL;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	if (size < FLASH_METER_TIME_STRLEN)
		return -ENOSPC;
	return format_time(t, buf, size);
}

static bool digits(const char *s, size_t n, unsigned int *ret)
{
	unsigned int v = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned int)(s[i] - '0');
	}
	*ret = v;
	return true;
}

/* Strict "YYYY-MM-DDTHH:MM:SSZ" without range check on the result. */
static int parse_time_any(const char *s, int64_t *ret_t)
{
	static const unsigned int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	unsigned int y, mo, d, h, mi, se;

	if (strlen(s) != FLASH_METER_TIME_STRLEN - 1 || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
	    s[13] != ':' || s[16] != ':' || s[19] != 'Z')
		return -FLASH_E_METER_TIME;
	if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
	    !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se))
		return -FLASH_E_METER_TIME;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 59)
		return -FLASH_E_METER_TIME;
	if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
		return -FLASH_E_METER_TIME;
	*ret_t = days_from_civil(y, mo, d) * DAY + h * 3600 + mi * 60 + se;
	return 0;
}

FLASH_API int flash_meter_parse_time(const char *text, int64_t *ret_t)
{
	int64_t t;
	int r;

	if (!text || !ret_t)
		return -EINVAL;
	r = parse_time_any(text, &t);
	if (r < 0)
		return r;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	*ret_t = t;
	return 0;
}

/* ---------------------------------------------------------------- model */

struct values {
	uint32_t replicas, cpu, mem, gpu;
};

struct held {
	int64_t t;
	struct values v;
};

struct service {
	char *id, *org;
	int64_t tc;         /* committed point */
	struct values vc;   /* values in force from tc */
	struct held *held;  /* sorted, times > tc, strictly increasing */
	size_t n_held, cap_held;
	bool fresh;         /* nothing committed yet: tc is the first observation */
};

struct record {
	enum flash_meter_scope scope;
	char *id;           /* organization or service id */
	char *org;          /* == id for organization records */
	int64_t week;
	struct flash_meter_usage u;
	int64_t accrued_until;
	bool deleted;
	int64_t deleted_at;
};

struct flash_meter {
	uint32_t window, max_pending;
	int64_t max_gap;        /* longest interval counted */
	int64_t pruned_before;  /* pieces in weeks before this are dropped */
	struct service **svcs;  /* sorted by id */
	size_t n_svcs, cap_svcs;
	struct record **recs;   /* sorted by (scope, id, week) */
	size_t n_recs, cap_recs;
};

static bool id_ok(const char *s)
{
	return s && names_opaque_id_valid(s, strnlen(s, FLASH_METER_ID_MAX + 1), FLASH_METER_ID_MAX);
}

static bool values_equal(const struct values *a, const struct values *b)
{
	return a->replicas == b->replicas && a->cpu == b->cpu && a->mem == b->mem && a->gpu == b->gpu;
}

/* min(a * b * c, INT64_MAX); *sat set when the true product is larger. */
static uint64_t mul3_sat(uint64_t a, uint64_t b, uint64_t c, bool *sat)
{
	uint64_t r;

	if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r) || r > COUNTER_MAX) {
		*sat = true;
		return COUNTER_MAX;
	}
	return r;
}

/* a, b <= INT64_MAX, so a + b fits in uint64_t. */
static int64_t add_sat(int64_t a, uint64_t b, bool *sat)
{
	uint64_t s = (uint64_t)a + b;

	if (s > COUNTER_MAX) {
		*sat = true;
		return INT64_MAX;
	}
	return (int64_t)s;
}

static void usage_add_values(struct flash_meter_usage *u, const struct values *v, int64_t seconds)
{
	bool sat = false;

	if (v->replicas == 0 || seconds <= 0)
		return;
	u->cpu_millicore_seconds = add_sat(u->cpu_millicore_seconds, mul3_sat(v->cpu, v->replicas, (uint64_t)seconds, &sat), &sat);
	u->memory_mib_seconds = add_sat(u->memory_mib_seconds, mul3_sat(v->mem, v->replicas, (uint64_t)seconds, &sat), &sat);
	u->gpu_seconds = add_sat(u->gpu_seconds, mul3_sat(v->gpu, v->replicas, (uint64_t)seconds, &sat), &sat);
	u->saturated |= sat;
}

static void usage_add_usage(struct flash_meter_usage *u, const struct flash_meter_usage *x)
{
	bool sat = false;

	u->cpu_millicore_seconds = add_sat(u->cpu_millicore_seconds, (uint64_t)x->cpu_millicore_seconds, &sat);
	u->memory_mib_seconds = add_sat(u->memory_mib_seconds, (uint64_t)x->memory_mib_seconds, &sat);
	u->gpu_seconds = add_sat(u->gpu_seconds, (uint64_t)x->gpu_seconds, &sat);
	u->saturated |= sat || x->saturated;
}

static int rec_cmp(enum flash_meter_scope s1, const char *id1, int64_t w1, const struct record *r)
{
	int c;

	if (s1 != r->scope)
		return s1 < r->scope ? -1 : 1;
	c = strcmp(id1, r->id);
	if (c)
		return c;
	return w1 < r->week ? -1 : w1 > r->week ? 1 : 0;
}

struct rec_key {
	enum flash_meter_scope scope;
	const char *id;
	int64_t week;
};

static int rec_key_cmp(const void *key, const void *elem)
{
	const struct rec_key *k = key;

	return rec_cmp(k->scope, k->id, k->week, *(struct record *const *)elem);
}

/* Index of the record, or of where it would go (*found false). */
static size_t rec_search(const struct flash_meter *m, enum flash_meter_scope scope, const char *id,
			 int64_t week, bool *found)
{
	const struct rec_key k = { scope, id, week };

	return util_lower_bound(m->recs, m->n_recs, sizeof(*m->recs), &k, rec_key_cmp, found);
}

static struct record *rec_find(const struct flash_meter *m, enum flash_meter_scope scope, const char *id,
			       int64_t week)
{
	bool found;
	size_t i = rec_search(m, scope, id, week, &found);

	return found ? m->recs[i] : NULL;
}

static int svc_cmp(const void *key, const void *elem)
{
	return strcmp(key, (*(struct service *const *)elem)->id);
}

static size_t svc_search(const struct flash_meter *m, const char *id, bool *found)
{
	return util_lower_bound(m->svcs, m->n_svcs, sizeof(*m->svcs), id, svc_cmp, found);
}

static struct service *svc_find(const struct flash_meter *m, const char *id)
{
	bool found;
	size_t i = svc_search(m, id, &found);

	return found ? m->svcs[i] : NULL;
}

static void record_free(struct record *r)
{
	if (!r)
		return;
	if (r->org != r->id)
		free(r->org);
	free(r->id);
	free(r);
}

static void service_free(struct service *s)
{
	if (!s)
		return;
	free(s->id);
	free(s->org);
	free(s->held);
	free(s);
}

static struct record *record_alloc(enum flash_meter_scope scope, const char *id, const char *org, int64_t week)
{
	struct record *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->scope = scope;
	r->week = week;
	r->accrued_until = week;
	r->id = strdup(id);
	if (!r->id)
		goto out_free;
	if (scope == FLASH_METER_SCOPE_ORGANIZATION) {
		r->org = r->id;
	} else {
		r->org = strdup(org);
		if (!r->org)
			goto out_free;
	}
	return r;
out_free:
	record_free(r);
	return NULL;
}

static int grow(void *pptr, size_t *cap, size_t need, size_t elem)
{
	void **p = pptr;
	size_t n;
	void *q;

	if (need <= *cap)
		return 0;
	n = *cap ? *cap : 16;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* Inserts @r at its place; the caller reserved capacity and checked that
 * the key is new. */
static void rec_insert_reserved(struct flash_meter *m, struct record *r)
{
	bool found;
	size_t i = rec_search(m, r->scope, r->id, r->week, &found);

	memmove(&m->recs[i + 1], &m->recs[i], (m->n_recs - i) * sizeof(*m->recs));
	m->recs[i] = r;
	m->n_recs++;
}

/*
 * Makes sure the organization and service records of @sv exist for every
 * week from @w_first to @w_last (week starts, not before pruned_before).
 * All or nothing: on -ENOMEM no record was added.
 */
static int ensure_records(struct flash_meter *m, const struct service *sv, int64_t w_first, int64_t w_last)
{
	struct record **fresh = NULL;
	size_t n_fresh = 0, cap_fresh = 0;
	int r = 0;

	if (w_first < m->pruned_before)
		w_first = week_of(m->pruned_before) + (week_of(m->pruned_before) < m->pruned_before ? WEEK : 0);
	for (int64_t w = w_first; w <= w_last; w += WEEK) {
		for (int s = FLASH_METER_SCOPE_ORGANIZATION; s <= FLASH_METER_SCOPE_SERVICE; s++) {
			const char *id = s == FLASH_METER_SCOPE_ORGANIZATION ? sv->org : sv->id;
			struct record *rec;

			if (rec_find(m, s, id, w))
				continue;
			r = grow(&fresh, &cap_fresh, n_fresh + 1, sizeof(*fresh));
			if (r < 0)
				goto out_free;
			rec = record_alloc(s, id, sv->org, w);
			if (!rec) {
				r = -ENOMEM;
				goto out_free;
			}
			fresh[n_fresh++] = rec;
		}
	}
	if (n_fresh) {
		r = grow(&m->recs, &m->cap_recs, m->n_recs + n_fresh, sizeof(*m->recs));
		if (r < 0)
			goto out_free;
		for (size_t i = 0; i < n_fresh; i++)
			rec_insert_reserved(m, fresh[i]);
		n_fresh = 0;
	}
out_free:
	for (size_t i = 0; i < n_fresh; i++)
		record_free(fresh[i]);
	free(fresh);
	return r;
}

/* Adds the interval [a, b) at @v to the records of @sv, split at week
 * boundaries.  Cannot fail once ensure_records() succeeded. */
static int accrue(struct flash_meter *m, const struct service *sv, const struct values *v, int64_t a, int64_t b)
{
	int r;

	if (b <= a || v->replicas == 0 || (v->cpu == 0 && v->mem == 0 && v->gpu == 0))
		return 0;
	r = ensure_records(m, sv, week_of(a), week_of(b - 1));
	if (r < 0)
		return r;
	for (int64_t w = week_of(a); a < b; w += WEEK) {
		int64_t e = b < w + WEEK ? b : w + WEEK;

		if (w >= m->pruned_before) {
			struct record *ro = rec_find(m, FLASH_METER_SCOPE_ORGANIZATION, sv->org, w);
			struct record *rs = rec_find(m, FLASH_METER_SCOPE_SERVICE, sv->id, w);

			usage_add_values(&ro->u, v, e - a);
			usage_add_values(&rs->u, v, e - a);
			if (ro->accrued_until < e)
				ro->accrued_until = e;
			if (rs->accrued_until < e)
				rs->accrued_until = e;
		}
		a = e;
	}
	return 0;
}

/* End of the interval [a, b) that counts: at most max_gap long. */
static int64_t gap_end(int64_t max_gap, int64_t a, int64_t b)
{
	return b - a > max_gap ? a + max_gap : b;
}

/* Accrues [tc, b) of @sv at its committed values, capped at max_gap. */
static int accrue_from_committed(struct flash_meter *m, const struct service *sv, int64_t b)
{
	int64_t e = gap_end(m->max_gap, sv->tc, b);

	if (e < b)
		pr_warn("meter: service %s not observed for %lld s (%lld to %lld); only the first %lld s are counted",
			sv->id, (long long)(b - sv->tc), (long long)sv->tc, (long long)b, (long long)m->max_gap);
	return accrue(m, sv, &sv->vc, sv->tc, e);
}

/* Commits the oldest held observation of @sv. */
static int commit_one(struct flash_meter *m, struct service *sv)
{
	struct held h = sv->held[0];
	int r;

	r = accrue_from_committed(m, sv, h.t);
	if (r < 0)
		return r;
	sv->tc = h.t;
	sv->vc = h.v;
	sv->fresh = false;
	memmove(&sv->held[0], &sv->held[1], (sv->n_held - 1) * sizeof(*sv->held));
	sv->n_held--;
	return 0;
}

static int64_t newest_time(const struct service *sv)
{
	return sv->n_held ? sv->held[sv->n_held - 1].t : sv->tc;
}

/* The tombstone of a deleted service: any of its records marked deleted. */
static const struct record *tombstone(const struct flash_meter *m, const char *id)
{
	bool found;
	size_t i = rec_search(m, FLASH_METER_SCOPE_SERVICE, id, INT64_MIN, &found);

	for (; i < m->n_recs; i++) {
		const struct record *r = m->recs[i];

		if (r->scope != FLASH_METER_SCOPE_SERVICE || strcmp(r->id, id) != 0)
			break;
		if (r->deleted)
			return r;
	}
	return NULL;
}

static bool has_records(const struct flash_meter *m, const char *id)
{
	bool found;
	size_t i = rec_search(m, FLASH_METER_SCOPE_SERVICE, id, INT64_MIN, &found);

	return i < m->n_recs && m->recs[i]->scope == FLASH_METER_SCOPE_SERVICE && strcmp(m->recs[i]->id, id) == 0;
}

FLASH_API int flash_meter_new(const struct flash_meter_opts *opts, struct flash_meter **ret)
{
	struct flash_meter *m;
	uint32_t window, pending, gap;

	if (!ret || !OPTS_VALID(opts, flash_meter_opts))
		return -EINVAL;
	window = OPTS_GET(opts, reorder_window, 0);
	pending = OPTS_GET(opts, max_pending, 0);
	gap = OPTS_GET(opts, max_gap, 0);
	if (pending == 0)
		pending = PENDING_DEFAULT;
	if (gap == 0)
		gap = GAP_DEFAULT;
	if (window > WINDOW_MAX || pending > PENDING_MAX || gap < GAP_MIN || gap > GAP_DEFAULT)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->window = window;
	m->max_pending = pending;
	m->max_gap = gap;
	*ret = m;
	return 0;
}

static void meter_clear(struct flash_meter *m)
{
	for (size_t i = 0; i < m->n_svcs; i++)
		service_free(m->svcs[i]);
	for (size_t i = 0; i < m->n_recs; i++)
		record_free(m->recs[i]);
	free(m->svcs);
	free(m->recs);
	m->svcs = NULL;
	m->recs = NULL;
	m->n_svcs = m->cap_svcs = m->n_recs = m->cap_recs = 0;
	m->pruned_before = 0;
}

FLASH_API void flash_meter_free(struct flash_meter *m)
{
	if (!m)
		return;
	meter_clear(m);
	free(m);
}

static int service_add(struct flash_meter *m, const char *id, const char *org, int64_t t,
		       const struct values *v, struct service **ret)
{
	struct service *sv;
	bool found;
	size_t i;
	int r;

	r = grow(&m->svcs, &m->cap_svcs, m->n_svcs + 1, sizeof(*m->svcs));
	if (r < 0)
		return r;
	sv = calloc(1, sizeof(*sv));
	if (!sv)
		return -ENOMEM;
	sv->id = strdup(id);
	sv->org = strdup(org);
	if (!sv->id || !sv->org) {
		service_free(sv);
		return -ENOMEM;
	}
	sv->tc = t;
	sv->vc = *v;
	sv->fresh = true;
	i = svc_search(m, id, &found);
	memmove(&m->svcs[i + 1], &m->svcs[i], (m->n_svcs - i) * sizeof(*m->svcs));
	m->svcs[i] = sv;
	m->n_svcs++;
	if (ret)
		*ret = sv;
	return 0;
}

/* Holds (t, v) in @sv's sorted list; t > tc and no held entry has t. */
static int held_insert(struct service *sv, int64_t t, const struct values *v)
{
	size_t i;
	int r;

	r = grow(&sv->held, &sv->cap_held, sv->n_held + 1, sizeof(*sv->held));
	if (r < 0)
		return r;
	for (i = sv->n_held; i > 0 && sv->held[i - 1].t > t; i--)
		;
	memmove(&sv->held[i + 1], &sv->held[i], (sv->n_held - i) * sizeof(*sv->held));
	sv->held[i] = (struct held){ .t = t, .v = *v };
	sv->n_held++;
	return 0;
}

/* Commits the held observations that left the window (or overflow it). */
static int settle(struct flash_meter *m, struct service *sv)
{
	int64_t newest = newest_time(sv);

	while (sv->n_held > 0) {
		int r;

		if (sv->held[0].t > newest - (int64_t)m->window && sv->n_held <= m->max_pending)
			break;
		if (sv->held[0].t > newest - (int64_t)m->window)
			pr_debug("meter: service %s holds more than %u observations, committing early",
				 sv->id, m->max_pending);
		r = commit_one(m, sv);
		if (r < 0)
			return r;
	}
	return 0;
}

FLASH_API int flash_meter_observe(struct flash_meter *m, const struct flash_meter_observation *obs)
{
	struct service *sv;
	struct values v;
	int64_t t;
	int outcome, r;

	if (!m || !obs || !OPTS_VALID(obs, flash_meter_observation) ||
	    !OPTS_HAS(obs, gpu_count))
		return -EINVAL;
	if (!id_ok(obs->service_id) || !id_ok(obs->organization))
		return -FLASH_E_METER_ID;
	t = obs->time;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	v = (struct values){ obs->ready_replicas, obs->cpu_millis, obs->memory_mib, obs->gpu_count };

	sv = svc_find(m, obs->service_id);
	if (!sv) {
		const struct record *tomb = tombstone(m, obs->service_id);

		if (tomb) {
			if (t <= tomb->deleted_at) {
				pr_warn("meter: observation of deleted service %s at %lld is not after its deletion at %lld; ignored",
					obs->service_id, (long long)t, (long long)tomb->deleted_at);
				return FLASH_METER_LATE;
			}
			return -FLASH_E_METER_DELETED;
		}
		/* Records of a service that is not live are all marked
		 * deleted; once pruned, the id starts afresh. */
		r = service_add(m, obs->service_id, obs->organization, t, &v, NULL);
		return r < 0 ? r : FLASH_METER_APPLIED;
	}
	if (strcmp(sv->org, obs->organization) != 0)
		return -FLASH_E_METER_ORG_MISMATCH;
	if (t < sv->tc && sv->fresh && t >= newest_time(sv) - (int64_t)m->window) {
		/* Nothing accrued from the first point yet: an earlier
		 * observation within the window becomes the first. */
		r = held_insert(sv, sv->tc, &sv->vc);
		if (r < 0)
			return r;
		sv->tc = t;
		sv->vc = v;
		r = settle(m, sv);
		return r < 0 ? r : FLASH_METER_REORDERED;
	}
	if (t < sv->tc) {
		pr_warn("meter: service %s observed at %lld, before its committed point %lld (clock went backwards or older than the %u s window); interval ignored",
			sv->id, (long long)t, (long long)sv->tc, m->window);
		return FLASH_METER_LATE;
	}
	if (t == sv->tc) {
		if (values_equal(&v, &sv->vc))
			return FLASH_METER_DUPLICATE;
		sv->vc = v;
		return FLASH_METER_REPLACED;
	}
	for (size_t i = 0; i < sv->n_held; i++) {
		if (sv->held[i].t == t) {
			if (values_equal(&v, &sv->held[i].v))
				return FLASH_METER_DUPLICATE;
			sv->held[i].v = v;
			return FLASH_METER_REPLACED;
		}
	}
	outcome = t < newest_time(sv) ? FLASH_METER_REORDERED : FLASH_METER_APPLIED;
	r = held_insert(sv, t, &v);
	if (r < 0)
		return r;
	/* On -ENOMEM here the observation stays held and commits later;
	 * the state is consistent either way. */
	r = settle(m, sv);
	return r < 0 ? r : outcome;
}

static void mark_deleted(struct flash_meter *m, const char *id, int64_t t)
{
	bool found;
	size_t i = rec_search(m, FLASH_METER_SCOPE_SERVICE, id, INT64_MIN, &found);

	for (; i < m->n_recs; i++) {
		struct record *r = m->recs[i];

		if (r->scope != FLASH_METER_SCOPE_SERVICE || strcmp(r->id, id) != 0)
			break;
		r->deleted = true;
		r->deleted_at = t;
	}
}

FLASH_API int flash_meter_delete_service(struct flash_meter *m, const char *service_id, int64_t t)
{
	struct service *sv;
	bool found;
	size_t idx;
	int r;

	if (!m || !service_id)
		return -EINVAL;
	if (!id_ok(service_id))
		return -FLASH_E_METER_ID;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	idx = svc_search(m, service_id, &found);
	if (!found)
		return -FLASH_E_METER_UNKNOWN_SERVICE;
	sv = m->svcs[idx];
	if (t < sv->tc)
		return -ERANGE;
	while (sv->n_held > 0 && sv->held[0].t <= t) {
		r = commit_one(m, sv);
		if (r < 0)
			return r;
	}
	/* The tombstone needs a record in the week of the deletion. */
	r = ensure_records(m, sv, week_of(sv->tc), week_of(t));
	if (r < 0)
		return r;
	r = accrue_from_committed(m, sv, t);
	if (r < 0)
		return r;
	if (sv->n_held)
		pr_warn("meter: service %s deleted at %lld; %zu later observation(s) dropped",
			sv->id, (long long)t, sv->n_held);
	mark_deleted(m, sv->id, t);
	memmove(&m->svcs[idx], &m->svcs[idx + 1], (m->n_svcs - idx - 1) * sizeof(*m->svcs));
	m->n_svcs--;
	service_free(sv);
	return 0;
}

/* Adds the held part of @sv within [ws, t) to @u. */
static void project(const struct service *sv, int64_t max_gap, int64_t ws, int64_t t,
		    struct flash_meter_usage *u)
{
	int64_t a = sv->tc;
	const struct values *v = &sv->vc;

	for (size_t i = 0; i <= sv->n_held; i++) {
		int64_t b = gap_end(max_gap, a, i < sv->n_held ? sv->held[i].t : t);
		int64_t lo = a > ws ? a : ws, hi = b < t ? b : t;

		if (hi > lo)
			usage_add_values(u, v, hi - lo);
		if (i < sv->n_held) {
			a = sv->held[i].t;
			v = &sv->held[i].v;
		}
	}
}

/* The values of @sv in force at @t, and since when (*ret_since). */
static const struct values *values_at(const struct service *sv, int64_t t, int64_t *ret_since)
{
	const struct values *v = &sv->vc;
	int64_t since = sv->tc;

	for (size_t i = 0; i < sv->n_held && sv->held[i].t <= t; i++) {
		v = &sv->held[i].v;
		since = sv->held[i].t;
	}
	if (ret_since)
		*ret_since = since;
	return v;
}

static void org_usage(const struct flash_meter *m, const char *org, int64_t t, struct flash_meter_usage *u)
{
	int64_t ws = week_of(t);
	const struct record *r = rec_find(m, FLASH_METER_SCOPE_ORGANIZATION, org, ws);

	*u = r ? r->u : (struct flash_meter_usage){ 0 };
	for (size_t i = 0; i < m->n_svcs; i++)
		if (strcmp(m->svcs[i]->org, org) == 0)
			project(m->svcs[i], m->max_gap, ws, t, u);
}

FLASH_API int flash_meter_org_usage(const struct flash_meter *m, const char *org, int64_t t,
				    struct flash_meter_usage *ret_usage)
{
	if (!m || !org || !ret_usage)
		return -EINVAL;
	if (!id_ok(org))
		return -FLASH_E_METER_ID;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	org_usage(m, org, t, ret_usage);
	return 0;
}

FLASH_API int flash_meter_service_usage(const struct flash_meter *m, const char *service_id, int64_t t,
					struct flash_meter_usage *ret_usage)
{
	const struct service *sv;
	const struct record *r;
	struct flash_meter_usage u;
	int64_t ws;

	if (!m || !service_id || !ret_usage)
		return -EINVAL;
	if (!id_ok(service_id))
		return -FLASH_E_METER_ID;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	ws = week_of(t);
	sv = svc_find(m, service_id);
	if (!sv && !has_records(m, service_id))
		return -FLASH_E_METER_UNKNOWN_SERVICE;
	r = rec_find(m, FLASH_METER_SCOPE_SERVICE, service_id, ws);
	u = r ? r->u : (struct flash_meter_usage){ 0 };
	if (sv)
		project(sv, m->max_gap, ws, t, &u);
	*ret_usage = u;
	return 0;
}

/* First second >= t at which @used + rate × (s - t) >= @limit, if before
 * @week_end; FLASH_METER_NEVER otherwise. */
static int64_t reach_time(int64_t used, uint64_t rate, uint64_t limit, int64_t t, int64_t week_end)
{
	uint64_t remaining, k;

	if (limit == FLASH_METER_UNLIMITED)
		return FLASH_METER_NEVER;
	if ((uint64_t)used >= limit)
		return t;
	if (rate == 0)
		return FLASH_METER_NEVER;
	remaining = limit - (uint64_t)used;
	k = remaining / rate + (remaining % rate != 0);
	if (k >= (uint64_t)(week_end - t))
		return FLASH_METER_NEVER;
	return t + (int64_t)k;
}

static uint64_t rate_add(uint64_t acc, uint32_t a, uint32_t b)
{
	uint64_t s = acc + (uint64_t)a * b; /* each term < 2^64, saturate the sum */

	return s < acc ? UINT64_MAX : s;
}

static bool limit_ok(uint64_t l)
{
	return l <= COUNTER_MAX || l == FLASH_METER_UNLIMITED;
}

FLASH_API int flash_meter_decide(const struct flash_meter *m, const char *org,
				 const struct flash_meter_limits *limits, int64_t t,
				 struct flash_meter_decision *ret)
{
	struct flash_meter_decision d = { 0 };
	uint64_t lcpu, lmem, lgpu, rcpu = 0, rmem = 0, rgpu = 0;
	size_t n = 0;

	if (!m || !org || !limits || !ret || !OPTS_VALID(limits, flash_meter_limits))
		return -EINVAL;
	if (!id_ok(org))
		return -FLASH_E_METER_ID;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	lcpu = OPTS_GET(limits, cpu_millicore_seconds, FLASH_METER_UNLIMITED);
	lmem = OPTS_GET(limits, memory_mib_seconds, FLASH_METER_UNLIMITED);
	lgpu = OPTS_GET(limits, gpu_seconds, FLASH_METER_UNLIMITED);
	if (!limit_ok(lcpu) || !limit_ok(lmem) || !limit_ok(lgpu))
		return -FLASH_E_METER_LIMIT;

	org_usage(m, org, t, &d.usage);
	d.week_start = week_of(t);
	d.week_end = d.week_start + WEEK;
	for (size_t i = 0; i < m->n_svcs; i++) {
		const struct service *sv = m->svcs[i];
		const struct values *v;
		int64_t since;

		if (strcmp(sv->org, org) != 0)
			continue;
		v = values_at(sv, t, &since);
		/* Past max_gap since its last observation a service no
		 * longer accrues (see gap_end()). */
		if (t - since >= m->max_gap)
			continue;
		rcpu = rate_add(rcpu, v->cpu, v->replicas);
		rmem = rate_add(rmem, v->mem, v->replicas);
		rgpu = rate_add(rgpu, v->gpu, v->replicas);
	}
	d.cpu_reached = lcpu != FLASH_METER_UNLIMITED && (uint64_t)d.usage.cpu_millicore_seconds >= lcpu;
	d.memory_reached = lmem != FLASH_METER_UNLIMITED && (uint64_t)d.usage.memory_mib_seconds >= lmem;
	d.gpu_reached = lgpu != FLASH_METER_UNLIMITED && (uint64_t)d.usage.gpu_seconds >= lgpu;
	d.suspend_all = d.cpu_reached || d.memory_reached;
	d.suspend_gpu = d.gpu_reached;
	d.lifts_at = d.suspend_all || d.suspend_gpu ? d.week_end : FLASH_METER_NEVER;
	d.cpu_reached_at = reach_time(d.usage.cpu_millicore_seconds, rcpu, lcpu, t, d.week_end);
	d.memory_reached_at = reach_time(d.usage.memory_mib_seconds, rmem, lmem, t, d.week_end);
	d.gpu_reached_at = reach_time(d.usage.gpu_seconds, rgpu, lgpu, t, d.week_end);
	d.next_check_at = d.week_end;
	if (d.cpu_reached_at > t && d.cpu_reached_at < d.next_check_at)
		d.next_check_at = d.cpu_reached_at;
	if (d.memory_reached_at > t && d.memory_reached_at < d.next_check_at)
		d.next_check_at = d.memory_reached_at;
	if (d.gpu_reached_at > t && d.gpu_reached_at < d.next_check_at)
		d.next_check_at = d.gpu_reached_at;

	if (d.suspend_all || d.suspend_gpu) {
		for (size_t i = 0; i < m->n_svcs; i++)
			if (strcmp(m->svcs[i]->org, org) == 0)
				n++;
		if (n) {
			d.suspend = calloc(n, sizeof(*d.suspend));
			if (!d.suspend)
				return -ENOMEM;
		}
		for (size_t i = 0; i < m->n_svcs; i++) {
			const struct service *sv = m->svcs[i];

			if (strcmp(sv->org, org) != 0)
				continue;
			if (!d.suspend_all && values_at(sv, t, NULL)->gpu == 0)
				continue;
			d.suspend[d.n_suspend] = strdup(sv->id);
			if (!d.suspend[d.n_suspend]) {
				flash_meter_decision_clear(&d);
				return -ENOMEM;
			}
			d.n_suspend++;
		}
	}
	*ret = d;
	return 0;
}

FLASH_API void flash_meter_decision_clear(struct flash_meter_decision *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_suspend; i++)
		free(d->suspend[i]);
	free(d->suspend);
	memset(d, 0, sizeof(*d));
}

/* ---------------------------------------------------------------- records */

static void record_export(const struct record *r, struct flash_meter_record *ret)
{
	*ret = (struct flash_meter_record){
		.scope = r->scope,
		.organization = r->org,
		.service_id = r->scope == FLASH_METER_SCOPE_SERVICE ? r->id : NULL,
		.week_start = r->week,
		.usage = r->u,
		.accrued_until = r->accrued_until,
		.service_deleted = r->deleted,
		.deleted_at = r->deleted ? r->deleted_at : 0,
	};
}

FLASH_API size_t flash_meter_record_count(const struct flash_meter *m)
{
	return m ? m->n_recs : 0;
}

FLASH_API int flash_meter_record_get(const struct flash_meter *m, size_t index, struct flash_meter_record *ret)
{
	if (!m || !ret)
		return -EINVAL;
	if (index >= m->n_recs)
		return -ERANGE;
	record_export(m->recs[index], ret);
	return 0;
}

FLASH_API int flash_meter_record_find(const struct flash_meter *m, enum flash_meter_scope scope,
				      const char *id, int64_t t, struct flash_meter_record *ret)
{
	const struct record *r;

	if (!m || !id || !ret ||
	    (scope != FLASH_METER_SCOPE_ORGANIZATION && scope != FLASH_METER_SCOPE_SERVICE))
		return -EINVAL;
	if (!id_ok(id))
		return -FLASH_E_METER_ID;
	if (!time_ok(t))
		return -FLASH_E_METER_TIME;
	r = rec_find(m, scope, id, week_of(t));
	if (!r)
		return -ENOENT;
	record_export(r, ret);
	return 0;
}

FLASH_API int flash_meter_prune(struct flash_meter *m, int64_t before)
{
	size_t j = 0;
	int dropped = 0;

	if (!m || !time_ok(before))
		return -EINVAL;
	for (size_t i = 0; i < m->n_recs; i++) {
		if (m->recs[i]->week < before) {
			record_free(m->recs[i]);
			dropped++;
		} else {
			m->recs[j++] = m->recs[i];
		}
	}
	m->n_recs = j;
	if (before > m->pruned_before)
		m->pruned_before = before;
	return dropped;
}

/* ---------------------------------------------------------------- JSON out */

static void gen_time(struct json_writer *w, const char *key, int64_t t)
{
	char buf[FLASH_METER_TIME_STRLEN];

	format_time(t, buf, sizeof(buf));
	jw_kv_string(w, key, buf);
}

static void gen_record(struct json_writer *w, const struct flash_meter_record *r)
{
	char week[FLASH_METER_WEEK_STRLEN];
	int ry, rw;

	iso_week_of(r->week_start, &ry, &rw);
	snprintf(week, sizeof(week), "%04d-W%02d", ry, rw);
	jw_object_open(w);
	jw_kv_string(w, "scope", r->scope == FLASH_METER_SCOPE_SERVICE ? "Service" : "Organization");
	jw_kv_string(w, "organization", r->organization);
	if (r->scope == FLASH_METER_SCOPE_SERVICE)
		jw_kv_string(w, "serviceId", r->service_id);
	jw_kv_string(w, "week", week);
	gen_time(w, "weekStart", r->week_start);
	gen_time(w, "weekEnd", r->week_start + WEEK);
	jw_kv_int(w, "cpuMillicoreSeconds", r->usage.cpu_millicore_seconds);
	jw_kv_int(w, "memoryMiBSeconds", r->usage.memory_mib_seconds);
	jw_kv_int(w, "gpuSeconds", r->usage.gpu_seconds);
	jw_kv_bool(w, "saturated", r->usage.saturated);
	gen_time(w, "accruedUntil", r->accrued_until);
	if (r->scope == FLASH_METER_SCOPE_SERVICE) {
		jw_kv_bool(w, "serviceDeleted", r->service_deleted);
		if (r->service_deleted)
			gen_time(w, "deletedAt", r->deleted_at);
	}
	jw_object_close(w);
}

/* Documents of this module: beautified, ending with one newline. */
#define METER_JSON (JSON_WRITE_PRETTY | JSON_WRITE_NEWLINE)

FLASH_API int flash_meter_record_to_json(const struct flash_meter_record *r, char **ret_json, size_t *ret_len)
{
	struct json_writer *w;

	if (!r || !ret_json ||
	    (r->scope != FLASH_METER_SCOPE_ORGANIZATION && r->scope != FLASH_METER_SCOPE_SERVICE) ||
	    !id_ok(r->organization) || (r->scope == FLASH_METER_SCOPE_SERVICE && !id_ok(r->service_id)) ||
	    !time_ok(r->week_start) || week_of(r->week_start) != r->week_start ||
	    r->accrued_until < r->week_start || r->accrued_until > r->week_start + WEEK ||
	    r->usage.cpu_millicore_seconds < 0 || r->usage.memory_mib_seconds < 0 || r->usage.gpu_seconds < 0 ||
	    (r->service_deleted && !time_ok(r->deleted_at)))
		return -EINVAL;
	w = json_writer_new(METER_JSON);
	gen_record(w, r);
	return json_writer_finish(w, ret_json, ret_len);
}

static void gen_values(struct json_writer *w, const struct values *v)
{
	jw_kv_int(w, "readyReplicas", v->replicas);
	jw_kv_int(w, "cpuMillis", v->cpu);
	jw_kv_int(w, "memoryMiB", v->mem);
	jw_kv_int(w, "gpuCount", v->gpu);
}

FLASH_API int flash_meter_to_json(const struct flash_meter *m, char **ret_json, size_t *ret_len)
{
	struct json_writer *w;

	if (!m || !ret_json)
		return -EINVAL;
	w = json_writer_new(METER_JSON);
	jw_object_open(w);
	jw_kv_string(w, "format", STATE_FORMAT);
	gen_time(w, "prunedBefore", m->pruned_before);
	jw_key(w, "records");
	jw_array_open(w);
	for (size_t i = 0; i < m->n_recs; i++) {
		struct flash_meter_record rec;

		record_export(m->recs[i], &rec);
		gen_record(w, &rec);
	}
	jw_array_close(w);
	jw_key(w, "services");
	jw_array_open(w);
	for (size_t i = 0; i < m->n_svcs; i++) {
		const struct service *sv = m->svcs[i];

		jw_object_open(w);
		jw_kv_string(w, "serviceId", sv->id);
		jw_kv_string(w, "organization", sv->org);
		gen_time(w, "committedAt", sv->tc);
		jw_kv_bool(w, "fresh", sv->fresh);
		gen_values(w, &sv->vc);
		jw_key(w, "held");
		jw_array_open(w);
		for (size_t j = 0; j < sv->n_held; j++) {
			jw_object_open(w);
			gen_time(w, "time", sv->held[j].t);
			gen_values(w, &sv->held[j].v);
			jw_object_close(w);
		}
		jw_array_close(w);
		jw_object_close(w);
	}
	jw_array_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret_json, ret_len);
}

FLASH_API int flash_meter_save(const struct flash_meter *m, const char *path)
{
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r;

	if (!m || !path)
		return -EINVAL;
	r = flash_meter_to_json(m, &json, &len);
	if (r < 0)
		return r;
	return util_write_file_atomic(path, json, len, 0600);
}

/* ---------------------------------------------------------------- JSON in */

/* The loader stops at the first problem: a state file is either whole or
 * refused. */
struct loader {
	struct json_path path;
	struct diag *diag;
};

static int _printf_(3, 4) fail(struct loader *l, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_add_textv(l->diag, DIAG_ERROR, json_path_str(&l->path),
		       code == FLASH_E_METER_STATE_INCONSISTENT ? "state-inconsistent" : "state-invalid", NULL, fmt, ap);
	va_end(ap);
	return -code;
}

/*
 * The state file's formats, each a list of fields: json_read_object()
 * refuses unknown keys, missing required fields and wrong types (at the
 * loader's path); the getters below then check each value's meaning.
 */
#define REQ(name, type) { name, type, true, NULL, 0, NULL }
#define OPT(name, type) { name, type, false, NULL, 0, NULL }
static const struct json_field doc_fields[] = {
	REQ("format", JSON_STRING), REQ("prunedBefore", JSON_STRING),
	REQ("records", JSON_ARRAY), REQ("services", JSON_ARRAY),
};
static const struct json_field record_fields[] = {
	REQ("scope", JSON_STRING), REQ("organization", JSON_STRING), OPT("serviceId", JSON_STRING),
	REQ("week", JSON_STRING), REQ("weekStart", JSON_STRING), REQ("weekEnd", JSON_STRING),
	REQ("cpuMillicoreSeconds", JSON_NUMBER), REQ("memoryMiBSeconds", JSON_NUMBER), REQ("gpuSeconds", JSON_NUMBER),
	REQ("saturated", JSON_BOOL), REQ("accruedUntil", JSON_STRING), OPT("serviceDeleted", JSON_BOOL),
	OPT("deletedAt", JSON_STRING),
};
static const struct json_field service_fields[] = {
	REQ("serviceId", JSON_STRING), REQ("organization", JSON_STRING), REQ("committedAt", JSON_STRING),
	REQ("fresh", JSON_BOOL), REQ("readyReplicas", JSON_NUMBER), REQ("cpuMillis", JSON_NUMBER),
	REQ("memoryMiB", JSON_NUMBER), REQ("gpuCount", JSON_NUMBER), REQ("held", JSON_ARRAY),
};
static const struct json_field held_fields[] = {
	REQ("time", JSON_STRING), REQ("readyReplicas", JSON_NUMBER), REQ("cpuMillis", JSON_NUMBER),
	REQ("memoryMiB", JSON_NUMBER), REQ("gpuCount", JSON_NUMBER),
};
#undef REQ
#undef OPT

static int check_fields(struct loader *l, const struct json_value *obj, const struct json_field *fields, size_t n)
{
	struct check_ctx ctx;
	int r;

	check_ctx_init(&ctx, l->diag);
	ctx.path = l->path;
	r = json_read_object(&ctx, obj, fields, n, NULL);
	return r == JSON_READ_REPORTED ? -FLASH_E_METER_STATE_INVALID : r;
}

/* Member @key of @obj of @type (the common typed getter, reporting at the
 * loader's path); *ret NULL when absent and not required.  The path is
 * left unchanged. */
static int member(struct loader *l, const struct json_value *obj, const char *key, enum json_type type,
		  bool required, const struct json_value **ret)
{
	const struct json_value *v = NULL;
	struct check_ctx ctx;
	int r;

	check_ctx_init(&ctx, l->diag);
	ctx.path = l->path;
	r = json_read_value_at(&ctx, obj, key, type, required, &v);
	if (r < 0)
		return r == JSON_READ_REPORTED ? -FLASH_E_METER_STATE_INVALID : r;
	if (v && type == JSON_STRING && v->u.string.has_nul) {
		size_t saved = json_path_push_key(&l->path, key);

		r = fail(l, FLASH_E_METER_STATE_INVALID, "must not contain a NUL character");
		json_path_pop(&l->path, saved);
		return r;
	}
	*ret = v;
	return 0;
}

static int get_int(struct loader *l, const struct json_value *obj, const char *key, int64_t max, int64_t *ret)
{
	const struct json_value *v;
	int64_t x;
	int r;

	r = member(l, obj, key, JSON_NUMBER, true, &v);
	if (r < 0)
		return r;
	if (json_get_int64(v, &x) < 0 || x < 0 || x > max) {
		json_path_push_key(&l->path, key);
		return fail(l, FLASH_E_METER_STATE_INVALID, "must be an integer in [0, %lld]", (long long)max);
	}
	*ret = x;
	return 0;
}

static int get_bool(struct loader *l, const struct json_value *obj, const char *key, bool required, bool *ret)
{
	const struct json_value *v;
	int r;

	r = member(l, obj, key, JSON_BOOL, required, &v);
	if (r < 0)
		return r;
	*ret = v ? v->u.boolean : false;
	return 0;
}

static int get_id(struct loader *l, const struct json_value *obj, const char *key, bool required, const char **ret)
{
	const struct json_value *v;
	const char *s;
	int r;

	r = member(l, obj, key, JSON_STRING, required, &v);
	if (r < 0)
		return r;
	if (!v) {
		*ret = NULL;
		return 0;
	}
	if (json_get_string(v, &s) < 0 || !id_ok(s)) {
		json_path_push_key(&l->path, key);
		return fail(l, FLASH_E_METER_STATE_INVALID,
			    "must be 1..%d characters of [A-Za-z0-9._:-]", FLASH_METER_ID_MAX);
	}
	*ret = s;
	return 0;
}

/* A time in [0, @max]; *ret untouched when absent and not required. */
static int get_time(struct loader *l, const struct json_value *obj, const char *key, bool required,
		    int64_t max, int64_t *ret)
{
	const struct json_value *v;
	const char *s;
	int64_t t;
	int r;

	r = member(l, obj, key, JSON_STRING, required, &v);
	if (r < 0 || !v)
		return r;
	if (json_get_string(v, &s) < 0 || parse_time_any(s, &t) < 0 || t < 0 || t > max) {
		json_path_push_key(&l->path, key);
		return fail(l, FLASH_E_METER_STATE_INVALID,
			    "must be a UTC time \"YYYY-MM-DDTHH:MM:SSZ\" between 1970 and 9999-12-26");
	}
	*ret = t;
	return 0;
}

/* Appends (fast path for sorted input) or inserts @rec; -EEXIST for a
 * duplicate key. */
static int load_rec_insert(struct flash_meter *m, struct record *rec)
{
	bool found = false;
	size_t i;
	int r;

	r = grow(&m->recs, &m->cap_recs, m->n_recs + 1, sizeof(*m->recs));
	if (r < 0)
		return r;
	if (m->n_recs == 0 || rec_cmp(rec->scope, rec->id, rec->week, m->recs[m->n_recs - 1]) > 0)
		i = m->n_recs;
	else
		i = rec_search(m, rec->scope, rec->id, rec->week, &found);
	if (found)
		return -EEXIST;
	memmove(&m->recs[i + 1], &m->recs[i], (m->n_recs - i) * sizeof(*m->recs));
	m->recs[i] = rec;
	m->n_recs++;
	return 0;
}

static int load_record(struct loader *l, struct flash_meter *m, const struct json_value *o)
{
	const struct json_value *v;
	const char *scope_s, *org, *svc, *week_s;
	char week[FLASH_METER_WEEK_STRLEN];
	struct record tmp = { 0 }, *rec;
	int64_t ws = 0, we = 0;
	int r;

	r = check_fields(l, o, record_fields, ARRAY_SIZE(record_fields));
	if (r < 0)
		return r;
	r = member(l, o, "scope", JSON_STRING, true, &v);
	if (r < 0)
		return r;
	scope_s = v->u.string.ptr;
	if (strcmp(scope_s, "Organization") == 0)
		tmp.scope = FLASH_METER_SCOPE_ORGANIZATION;
	else if (strcmp(scope_s, "Service") == 0)
		tmp.scope = FLASH_METER_SCOPE_SERVICE;
	else {
		json_path_push_key(&l->path, "scope");
		return fail(l, FLASH_E_METER_STATE_INVALID, "must be \"Organization\" or \"Service\"");
	}
	r = get_id(l, o, "organization", true, &org);
	if (r < 0)
		return r;
	r = get_id(l, o, "serviceId", tmp.scope == FLASH_METER_SCOPE_SERVICE, &svc);
	if (r < 0)
		return r;
	if (svc && tmp.scope == FLASH_METER_SCOPE_ORGANIZATION) {
		json_path_push_key(&l->path, "serviceId");
		return fail(l, FLASH_E_METER_STATE_INVALID, "not allowed in an organization record");
	}
	r = get_time(l, o, "weekStart", true, FLASH_METER_TIME_MAX, &ws);
	if (r < 0)
		return r;
	if (week_of(ws) != ws) {
		json_path_push_key(&l->path, "weekStart");
		return fail(l, FLASH_E_METER_STATE_INVALID, "must be a Monday 00:00:00 UTC");
	}
	if (ws < m->pruned_before) {
		json_path_push_key(&l->path, "weekStart");
		return fail(l, FLASH_E_METER_STATE_INCONSISTENT, "is before prunedBefore");
	}
	r = get_time(l, o, "weekEnd", true, FLASH_METER_TIME_MAX + 1, &we);
	if (r < 0)
		return r;
	if (we != ws + WEEK) {
		json_path_push_key(&l->path, "weekEnd");
		return fail(l, FLASH_E_METER_STATE_INVALID, "must be weekStart plus 7 days");
	}
	r = member(l, o, "week", JSON_STRING, true, &v);
	if (r < 0)
		return r;
	week_s = v->u.string.ptr;
	flash_meter_week_name(ws, week, sizeof(week));
	if (strcmp(week_s, week) != 0) {
		json_path_push_key(&l->path, "week");
		return fail(l, FLASH_E_METER_STATE_INVALID, "must be the ISO week of weekStart, %s", week);
	}
	tmp.week = ws;
	if ((r = get_int(l, o, "cpuMillicoreSeconds", INT64_MAX, &tmp.u.cpu_millicore_seconds)) < 0 ||
	    (r = get_int(l, o, "memoryMiBSeconds", INT64_MAX, &tmp.u.memory_mib_seconds)) < 0 ||
	    (r = get_int(l, o, "gpuSeconds", INT64_MAX, &tmp.u.gpu_seconds)) < 0 ||
	    (r = get_bool(l, o, "saturated", true, &tmp.u.saturated)) < 0)
		return r;
	r = get_time(l, o, "accruedUntil", true, FLASH_METER_TIME_MAX + 1, &tmp.accrued_until);
	if (r < 0)
		return r;
	if (tmp.accrued_until < ws || tmp.accrued_until > we) {
		json_path_push_key(&l->path, "accruedUntil");
		return fail(l, FLASH_E_METER_STATE_INVALID, "must lie within the week");
	}
	if (tmp.scope == FLASH_METER_SCOPE_SERVICE) {
		r = get_bool(l, o, "serviceDeleted", true, &tmp.deleted);
		if (r < 0)
			return r;
		r = get_time(l, o, "deletedAt", tmp.deleted, FLASH_METER_TIME_MAX, &tmp.deleted_at);
		if (r < 0)
			return r;
		if (!tmp.deleted && json_get(o, "deletedAt")) {
			json_path_push_key(&l->path, "deletedAt");
			return fail(l, FLASH_E_METER_STATE_INVALID, "not allowed unless serviceDeleted");
		}
		if (tmp.deleted && tmp.deleted_at < tmp.accrued_until) {
			json_path_push_key(&l->path, "deletedAt");
			return fail(l, FLASH_E_METER_STATE_INCONSISTENT, "is before accruedUntil");
		}
	} else if (json_get(o, "serviceDeleted") || json_get(o, "deletedAt")) {
		json_path_push_key(&l->path, json_get(o, "serviceDeleted") ? "serviceDeleted" : "deletedAt");
		return fail(l, FLASH_E_METER_STATE_INVALID, "not allowed in an organization record");
	}

	rec = record_alloc(tmp.scope, tmp.scope == FLASH_METER_SCOPE_SERVICE ? svc : org, org, ws);
	if (!rec)
		return -ENOMEM;
	rec->u = tmp.u;
	rec->accrued_until = tmp.accrued_until;
	rec->deleted = tmp.deleted;
	rec->deleted_at = tmp.deleted_at;
	r = load_rec_insert(m, rec);
	if (r < 0) {
		record_free(rec);
		if (r == -EEXIST)
			return fail(l, FLASH_E_METER_STATE_INCONSISTENT, "duplicate record for %s %s week %s",
				    scope_s, tmp.scope == FLASH_METER_SCOPE_SERVICE ? svc : org, week);
	}
	return r;
}

static int load_values(struct loader *l, const struct json_value *o, struct values *v)
{
	int64_t x[4];
	int r;

	if ((r = get_int(l, o, "readyReplicas", UINT32_MAX, &x[0])) < 0 ||
	    (r = get_int(l, o, "cpuMillis", UINT32_MAX, &x[1])) < 0 ||
	    (r = get_int(l, o, "memoryMiB", UINT32_MAX, &x[2])) < 0 ||
	    (r = get_int(l, o, "gpuCount", UINT32_MAX, &x[3])) < 0)
		return r;
	*v = (struct values){ (uint32_t)x[0], (uint32_t)x[1], (uint32_t)x[2], (uint32_t)x[3] };
	return 0;
}

static int load_service(struct loader *l, struct flash_meter *m, const struct json_value *o)
{
	const struct json_value *held;
	const char *id, *org;
	struct service *sv;
	struct values v;
	bool found, fresh = false;
	int64_t tc = 0;
	int r;

	r = check_fields(l, o, service_fields, ARRAY_SIZE(service_fields));
	if (r < 0)
		return r;
	if ((r = get_id(l, o, "serviceId", true, &id)) < 0 ||
	    (r = get_id(l, o, "organization", true, &org)) < 0 ||
	    (r = get_time(l, o, "committedAt", true, FLASH_METER_TIME_MAX, &tc)) < 0 ||
	    (r = get_bool(l, o, "fresh", true, &fresh)) < 0 ||
	    (r = load_values(l, o, &v)) < 0 ||
	    (r = member(l, o, "held", JSON_ARRAY, true, &held)) < 0)
		return r;
	if (held->u.array.n > PENDING_MAX) {
		json_path_push_key(&l->path, "held");
		return fail(l, FLASH_E_METER_STATE_INVALID, "more than %u held observations", PENDING_MAX);
	}
	svc_search(m, id, &found);
	if (found) {
		json_path_push_key(&l->path, "serviceId");
		return fail(l, FLASH_E_METER_STATE_INCONSISTENT, "service %s appears twice", id);
	}
	r = service_add(m, id, org, tc, &v, &sv);
	if (r < 0)
		return r;
	sv->fresh = fresh;
	json_path_push_key(&l->path, "held");
	for (size_t i = 0; i < held->u.array.n; i++) {
		const struct json_value *h = held->u.array.items[i];
		size_t saved = json_path_push_index(&l->path, i);
		int64_t t = 0;

		if ((r = check_fields(l, h, held_fields, ARRAY_SIZE(held_fields))) < 0 ||
		    (r = get_time(l, h, "time", true, FLASH_METER_TIME_MAX, &t)) < 0 ||
		    (r = load_values(l, h, &v)) < 0)
			return r;
		if (t <= newest_time(sv)) {
			json_path_push_key(&l->path, "time");
			return fail(l, FLASH_E_METER_STATE_INVALID,
				    "must be after committedAt and the previous held time");
		}
		r = held_insert(sv, t, &v);
		if (r < 0)
			return r;
		json_path_pop(&l->path, saved);
	}
	return 0;
}

static int check_consistency(struct loader *l, const struct flash_meter *m)
{
	_cleanup_free_ struct flash_meter_usage *sums = NULL;
	char week[FLASH_METER_WEEK_STRLEN];

	json_path_init(&l->path);
	json_path_push_key(&l->path, "records");
	sums = calloc(m->n_recs ? m->n_recs : 1, sizeof(*sums));
	if (!sums)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_recs; i++) {
		const struct record *r = m->recs[i];
		const struct service *sv;
		bool found;
		size_t oi;

		if (r->scope != FLASH_METER_SCOPE_SERVICE)
			continue;
		flash_meter_week_name(r->week, week, sizeof(week));
		oi = rec_search(m, FLASH_METER_SCOPE_ORGANIZATION, r->org, r->week, &found);
		if (!found)
			return fail(l, FLASH_E_METER_STATE_INCONSISTENT,
				    "service %s week %s has no record of its organization %s", r->id, week, r->org);
		usage_add_usage(&sums[oi], &r->u);
		if (i > 0 && m->recs[i - 1]->scope == FLASH_METER_SCOPE_SERVICE &&
		    strcmp(m->recs[i - 1]->id, r->id) == 0) {
			const struct record *p = m->recs[i - 1];

			if (strcmp(p->org, r->org) != 0)
				return fail(l, FLASH_E_METER_STATE_INCONSISTENT,
					    "service %s has records under organizations %s and %s", r->id, p->org, r->org);
			if (p->deleted != r->deleted || p->deleted_at != r->deleted_at)
				return fail(l, FLASH_E_METER_STATE_INCONSISTENT,
					    "records of service %s disagree on its deletion", r->id);
		}
		sv = svc_find(m, r->id);
		if (!sv && !r->deleted)
			return fail(l, FLASH_E_METER_STATE_INCONSISTENT,
				    "service %s has records but is neither live nor deleted", r->id);
		if (sv && r->deleted)
			return fail(l, FLASH_E_METER_STATE_INCONSISTENT,
				    "service %s is live but its records say deleted", r->id);
		if (sv && strcmp(sv->org, r->org) != 0)
			return fail(l, FLASH_E_METER_STATE_INCONSISTENT,
				    "service %s is live under %s but its records say %s", r->id, sv->org, r->org);
		if (sv && r->accrued_until > sv->tc)
			return fail(l, FLASH_E_METER_STATE_INCONSISTENT,
				    "service %s week %s accrued past its committedAt", r->id, week);
	}
	for (size_t i = 0; i < m->n_recs; i++) {
		const struct record *r = m->recs[i];
		const struct flash_meter_usage *s = &sums[i];

		if (r->scope != FLASH_METER_SCOPE_ORGANIZATION)
			continue;
		if (r->u.cpu_millicore_seconds != s->cpu_millicore_seconds ||
		    r->u.memory_mib_seconds != s->memory_mib_seconds || r->u.gpu_seconds != s->gpu_seconds ||
		    r->u.saturated != s->saturated) {
			flash_meter_week_name(r->week, week, sizeof(week));
			return fail(l, FLASH_E_METER_STATE_INCONSISTENT,
				    "organization %s week %s: counters (%lld, %lld, %lld) differ from the sum of its service records (%lld, %lld, %lld)",
				    r->id, week, (long long)r->u.cpu_millicore_seconds,
				    (long long)r->u.memory_mib_seconds, (long long)r->u.gpu_seconds,
				    (long long)s->cpu_millicore_seconds, (long long)s->memory_mib_seconds,
				    (long long)s->gpu_seconds);
		}
	}
	return 0;
}

static int meter_from_json(struct flash_meter *m, const char *text, size_t len, struct diag *diag)
{
	const struct json_limits limits = {
		.max_depth = 8,
		.max_string = 1024,
		.max_members = 1000000,
		.max_nodes = 20000000,
		.max_input = STATE_FILE_MAX,
	};
	struct flash_meter tmp = { .window = 0 };
	struct json_value *doc = NULL;
	const struct json_value *v, *records, *services;
	struct loader l = { .diag = diag };
	int r;

	json_path_init(&l.path);
	r = json_parse_diag(text ? text : "", len, &limits, -FLASH_E_METER_STATE_SYNTAX, &doc, diag);
	if (r < 0)
		return r;
	tmp.window = m->window;
	tmp.max_pending = m->max_pending;
	tmp.max_gap = m->max_gap;
	if ((r = check_fields(&l, doc, doc_fields, ARRAY_SIZE(doc_fields))) < 0 ||
	    (r = member(&l, doc, "format", JSON_STRING, true, &v)) < 0)
		goto out;
	if (strcmp(v->u.string.ptr, STATE_FORMAT) != 0) {
		json_path_push_key(&l.path, "format");
		r = fail(&l, FLASH_E_METER_STATE_INVALID, "must be \"%s\"", STATE_FORMAT);
		goto out;
	}
	if ((r = get_time(&l, doc, "prunedBefore", true, FLASH_METER_TIME_MAX, &tmp.pruned_before)) < 0 ||
	    (r = member(&l, doc, "records", JSON_ARRAY, true, &records)) < 0 ||
	    (r = member(&l, doc, "services", JSON_ARRAY, true, &services)) < 0)
		goto out;
	for (size_t i = 0; i < services->u.array.n; i++) {
		json_path_init(&l.path);
		json_path_push_key(&l.path, "services");
		json_path_push_index(&l.path, i);
		r = load_service(&l, &tmp, services->u.array.items[i]);
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < records->u.array.n; i++) {
		json_path_init(&l.path);
		json_path_push_key(&l.path, "records");
		json_path_push_index(&l.path, i);
		r = load_record(&l, &tmp, records->u.array.items[i]);
		if (r < 0)
			goto out;
	}
	r = check_consistency(&l, &tmp);
	if (r < 0)
		goto out;
	/* Everything checked: swap the new state in. */
	meter_clear(m);
	m->pruned_before = tmp.pruned_before;
	m->svcs = tmp.svcs;
	m->n_svcs = tmp.n_svcs;
	m->cap_svcs = tmp.cap_svcs;
	m->recs = tmp.recs;
	m->n_recs = tmp.n_recs;
	m->cap_recs = tmp.cap_recs;
	tmp = (struct flash_meter){ 0 };
out:
	meter_clear(&tmp);
	json_free(doc);
	return r;
}

FLASH_API int flash_meter_from_json(struct flash_meter *m, const char *text, size_t len,
				    struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);

	if (!m || (!text && len))
		return -EINVAL;
	diag_begin(diag, 0);
	return meter_from_json(m, text, len, diag);
}

FLASH_API int flash_meter_load(struct flash_meter *m, const char *path, struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	_cleanup_free_ char *data = NULL;
	const struct diag_entry *e;
	size_t size;
	int r;

	if (!m || !path)
		return -EINVAL;
	diag_begin(diag, 0);
	r = util_read_file(path, STATE_FILE_MAX, &data, &size);
	if (r < 0) {
		diag_add_text(diag, DIAG_ERROR, "", "read", NULL, "cannot read %s: %s", path, util_read_strerror(r));
		return r;
	}
	r = meter_from_json(m, data, size, diag);
	e = diag_first_error(diag);
	if (r < 0)
		pr_warn("meter: refusing state file %s: %s%s%s (the previous state is kept)", path,
			e && e->path[0] ? e->path : "", e && e->path[0] ? ": " : "",
			e ? e->message : flash_strerror(r));
	return r;
}
