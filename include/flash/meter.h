/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/meter.h> — weekly runtime metering, usage records and organization
 * suspension decisions (SPEC §3.6).
 *
 * The meter is fed observations of each service (organization, time, ready
 * replicas, cpu_millis, memory_mib, GPU count) and integrates them
 * piecewise-constant: the values an observation carries hold from its time
 * until the next observation of the same service.
 *
 *   CPU    = cpu_millis × ready replicas × seconds   (millicore-seconds)
 *   memory = memory_mib × ready replicas × seconds   (MiB-seconds)
 *   GPU    = gpu_count  × ready replicas × seconds   (GPU-seconds)
 *
 * Weeks start Monday 00:00:00 UTC (computed from Unix time, never from the
 * local time zone); an interval crossing week boundaries is split exactly at
 * each, and each week's counters start at zero.  Counters are kept per
 * (organization, week) and per (service, week) as usage records that outlive
 * the service.  Counters saturate at INT64_MAX (the largest value of a
 * Kubernetes int64 field) and then carry saturated = true; see
 * flash_meter(3) for the bounds.
 *
 * Times are Unix seconds (UTC) in [0, FLASH_METER_TIME_MAX].  A meter is not
 * thread-safe: callers serialize access to one meter.
 */
#ifndef FLASH_METER_H
#define FLASH_METER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/common.h>
#include <flash/diag.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Domain errors of the metering module (block FLASH_E_BASE + 300 = 6300). */
enum {
	FLASH_E_METER_BASE = FLASH_E_BASE + 300,
	FLASH_E_METER_ID = FLASH_E_METER_BASE,       /* service or organization id malformed */
	FLASH_E_METER_TIME,             /* time outside [0, FLASH_METER_TIME_MAX] */
	FLASH_E_METER_ORG_MISMATCH,     /* service observed under another organization */
	FLASH_E_METER_UNKNOWN_SERVICE,  /* no live service with that id */
	FLASH_E_METER_DELETED,          /* observation after the service's deletion */
	FLASH_E_METER_LIMIT,            /* a limit above INT64_MAX (and not UNLIMITED) */
	FLASH_E_METER_STATE_SYNTAX,     /* state file is not (complete) JSON */
	FLASH_E_METER_STATE_INVALID,    /* state file has a wrong field or value */
	FLASH_E_METER_STATE_INCONSISTENT, /* state file's records disagree */
	FLASH_E_METER_MAX_,             /* end of the block (not an error) */
};

/* 9999-12-26T23:59:59Z: the last second whose week ends in year 9999. */
#define FLASH_METER_TIME_MAX INT64_C(253401868799)
/* Seconds in a week. */
#define FLASH_METER_WEEK INT64_C(604800)
/* A limit that is never reached. */
#define FLASH_METER_UNLIMITED UINT64_MAX
/* "Not within this week" for the reach times of a decision. */
#define FLASH_METER_NEVER INT64_MAX
/* Longest service or organization id, in bytes. */
#define FLASH_METER_ID_MAX 253
/* "2026-W53" plus NUL. */
#define FLASH_METER_WEEK_STRLEN 9
/* "2026-12-28T00:00:00Z" plus NUL. */
#define FLASH_METER_TIME_STRLEN 21

/* ---------------------------------------------------------------- weeks */

/* The Monday 00:00:00 UTC at or before @t.  -FLASH_E_METER_TIME when @t is
 * out of range, -EINVAL for a NULL @ret_start. */
FLASH_API int flash_meter_week_start(int64_t t, int64_t *ret_start);

/* The ISO 8601 week-numbering year and week (1..53) of the week holding
 * @t (the year of that week's Thursday).  Errors as above. */
FLASH_API int flash_meter_iso_week(int64_t t, int *ret_year, int *ret_week);

/* Writes "YYYY-Www" (ISO week of @t) into @buf.  Returns the length
 * written, -ENOSPC when @size < FLASH_METER_WEEK_STRLEN, or errors as
 * above. */
FLASH_API int flash_meter_week_name(int64_t t, char *buf, size_t size);

/* Writes @t as RFC 3339 UTC "YYYY-MM-DDTHH:MM:SSZ".  Returns the length,
 * -ENOSPC when @size < FLASH_METER_TIME_STRLEN, -FLASH_E_METER_TIME. */
FLASH_API int flash_meter_format_time(int64_t t, char *buf, size_t size);

/* Parses exactly the form flash_meter_format_time() writes (a valid date,
 * seconds 00..59, "Z").  -FLASH_E_METER_TIME for anything else or a time
 * out of range; *ret_t written only on success. */
FLASH_API FLASH_WUR int flash_meter_parse_time(const char *text, int64_t *ret_t);

/* ---------------------------------------------------------------- meter */

struct flash_meter;

struct flash_meter_opts {
	size_t sz;
	/* Observations of a service up to this many seconds older than its
	 * newest one are accepted and put in order (default 0, at most
	 * 3600).  Older ones are ignored and logged. */
	uint32_t reorder_window;
	/* Bound on the observations held for reordering per service
	 * (default 64, 1..4096); past it the oldest is committed early. */
	uint32_t max_pending;
	/* Longest interval between two observations of a service that is
	 * counted, in seconds (default and maximum 366 days, at least 60):
	 * a longer gap (the observer was down, or the clock jumped forward)
	 * counts only its first max_gap seconds and is logged. */
	uint32_t max_gap;
};

/* Creates an empty meter.  @opts may be NULL.  Errors: -EINVAL (bad
 * options), -ENOMEM.  *ret owned by the caller (flash_meter_free()). */
FLASH_API int flash_meter_new(const struct flash_meter_opts *opts, struct flash_meter **ret);

/* Frees @m and everything it holds; NULL is ignored. */
FLASH_API void flash_meter_free(struct flash_meter *m);

/* One observation of a service.  The strings are copied. */
struct flash_meter_observation {
	size_t sz;
	const char *service_id;   /* 1..253 bytes of [A-Za-z0-9._:-] */
	const char *organization; /* same syntax */
	int64_t time;             /* Unix seconds, UTC */
	uint32_t ready_replicas;  /* 0: scale zero, accrues nothing */
	uint32_t cpu_millis;
	uint32_t memory_mib;
	uint32_t gpu_count;
};

/* What flash_meter_observe() did with an observation (>= 0). */
enum flash_meter_outcome {
	FLASH_METER_APPLIED = 0,   /* newest observation of the service */
	FLASH_METER_REORDERED = 1, /* older than the newest, within the window */
	FLASH_METER_DUPLICATE = 2, /* same time and values as one held: no-op */
	FLASH_METER_REPLACED = 3,  /* same time, new values: these count */
	FLASH_METER_LATE = 4,      /* before the committed point (clock went
				    * backwards, or older than the window):
				    * ignored and logged as a warning */
};

/* Feeds one observation.  The first observation of a service starts it;
 * a later one closes the interval since the previous one, which accrues
 * at the previous values (split at week boundaries) once it is older than
 * the reorder window.  Returns an enum flash_meter_outcome, or -EINVAL
 * (NULL, bad sz), -FLASH_E_METER_ID, -FLASH_E_METER_TIME,
 * -FLASH_E_METER_ORG_MISMATCH (the service belongs to another
 * organization), -FLASH_E_METER_DELETED (the service was deleted before
 * @obs->time), -ENOMEM.  Nothing changes on error, except that after
 * -ENOMEM the observation may stay held and commit with a later call (the
 * state is consistent either way). */
FLASH_API int flash_meter_observe(struct flash_meter *m, const struct flash_meter_observation *obs);

/* Deletes a service at @t: every held observation up to @t is committed,
 * the last values accrue up to @t, later held observations are dropped
 * (logged), and the service's records are marked deleted (they stay).
 * Errors: -EINVAL, -FLASH_E_METER_ID, -FLASH_E_METER_TIME,
 * -FLASH_E_METER_UNKNOWN_SERVICE, -ERANGE (@t before the service's
 * committed point), -ENOMEM. */
FLASH_API int flash_meter_delete_service(struct flash_meter *m, const char *service_id, int64_t t);

/* Counters of one week. */
struct flash_meter_usage {
	int64_t cpu_millicore_seconds;
	int64_t memory_mib_seconds;
	int64_t gpu_seconds;
	bool saturated; /* a counter hit INT64_MAX: the true value may be larger */
};

/* Usage of organization @org (or of service @service_id) in the week
 * holding @t, as of @t: the committed counters (deleted services
 * included) plus, for each live service, its held observations and last
 * values carried forward up to @t.  Committed counters are never taken
 * back: for a @t before a service's committed point they already include
 * its later usage.  An unknown @org has zero usage; an unknown service
 * without records gives -FLASH_E_METER_UNKNOWN_SERVICE.
 * Errors: -EINVAL, -FLASH_E_METER_ID, -FLASH_E_METER_TIME. */
FLASH_API int flash_meter_org_usage(const struct flash_meter *m, const char *org, int64_t t,
				    struct flash_meter_usage *ret_usage);
FLASH_API int flash_meter_service_usage(const struct flash_meter *m, const char *service_id, int64_t t,
					struct flash_meter_usage *ret_usage);

/* ---------------------------------------------------------------- decisions */

/* Weekly limits of one organization, in the units of the counters (from
 * the owner quota policy).  Each is 0..INT64_MAX or FLASH_METER_UNLIMITED;
 * 0 means nothing is allowed (reached at once).  Fields missing from an
 * older caller's (smaller) struct are unlimited. */
struct flash_meter_limits {
	size_t sz;
	uint64_t cpu_millicore_seconds;
	uint64_t memory_mib_seconds;
	uint64_t gpu_seconds;
};

struct flash_meter_decision {
	struct flash_meter_usage usage; /* week of t, as of t */
	int64_t week_start;             /* Monday 00:00 UTC of t's week */
	int64_t week_end;               /* the next Monday 00:00 UTC */
	bool cpu_reached, memory_reached, gpu_reached; /* usage >= limit */
	bool suspend_all;   /* cpu_reached || memory_reached */
	bool suspend_gpu;   /* gpu_reached: GPU workloads only */
	/* When the suspension lifts (week_end), FLASH_METER_NEVER when
	 * nothing is suspended. */
	int64_t lifts_at;
	/* First second at which each limit is reached at the values in force
	 * at t (ready replicas included) if nothing changes: t when already
	 * reached, FLASH_METER_NEVER when not within this week. */
	int64_t cpu_reached_at, memory_reached_at, gpu_reached_at;
	/* The earliest of the reach times still ahead and week_end: when to
	 * decide again if no observation arrives before. */
	int64_t next_check_at;
	/* Live services of the organization to suspend, sorted: all of them
	 * with suspend_all, else those with gpu_count > 0 with suspend_gpu.
	 * Owned by the decision: flash_meter_decision_clear(). */
	char **suspend;
	size_t n_suspend;
};

/* Decides for organization @org at time @t under @limits.  *ret is
 * overwritten (call flash_meter_decision_clear() on it afterwards).
 * Errors: -EINVAL (NULL, bad sz), -FLASH_E_METER_LIMIT,
 * -FLASH_E_METER_ID, -FLASH_E_METER_TIME, -ENOMEM; *ret untouched then. */
FLASH_API int flash_meter_decide(const struct flash_meter *m, const char *org,
				 const struct flash_meter_limits *limits, int64_t t,
				 struct flash_meter_decision *ret);

/* Frees the list held by @d and zeroes it; NULL is ignored. */
FLASH_API void flash_meter_decision_clear(struct flash_meter_decision *d);

/* ---------------------------------------------------------------- records */

enum flash_meter_scope {
	FLASH_METER_SCOPE_ORGANIZATION = 1,
	FLASH_METER_SCOPE_SERVICE = 2,
};

/* One usage record (committed counters only).  Strings point into the
 * meter and stay valid until its next modifying call. */
struct flash_meter_record {
	enum flash_meter_scope scope;
	const char *organization;
	const char *service_id;     /* NULL for organization records */
	int64_t week_start;
	struct flash_meter_usage usage;
	int64_t accrued_until;      /* end of the last interval that added to it */
	bool service_deleted;       /* service records: the service is gone */
	int64_t deleted_at;         /* when service_deleted */
};

/* Number of records held, and record @index (0..count-1, ordered by scope,
 * id, week).  get: -EINVAL, -ERANGE for an index past the end. */
FLASH_API size_t flash_meter_record_count(const struct flash_meter *m);
FLASH_API int flash_meter_record_get(const struct flash_meter *m, size_t index,
				     struct flash_meter_record *ret);

/* The record of (@scope, @id, week of @t).  -ENOENT when there is none. */
FLASH_API int flash_meter_record_find(const struct flash_meter *m, enum flash_meter_scope scope,
				      const char *id, int64_t t, struct flash_meter_record *ret);

/* Serializes @r as the JSON "status" object of a FlashUsageRecord
 * (flash.heterocloud.io/v1alpha1; fields in flash_meter(3)).  *ret_json
 * is NUL-terminated, owned by the caller (free()).  -EINVAL, -ENOMEM. */
FLASH_API int flash_meter_record_to_json(const struct flash_meter_record *r, char **ret_json,
					 size_t *ret_len);

/* Drops the records of weeks starting before @before (and the tombstones
 * of services deleted in them).  Returns the number dropped, -EINVAL. */
FLASH_API int flash_meter_prune(struct flash_meter *m, int64_t before);

/* ---------------------------------------------------------------- persistence */

/* The whole meter state (records, live services and their held
 * observations) as a JSON document.  *ret_json NUL-terminated, owned by the
 * caller.  -EINVAL, -ENOMEM. */
FLASH_API int flash_meter_to_json(const struct flash_meter *m, char **ret_json, size_t *ret_len);

/* Replaces the state of @m with the document at @text (as written by
 * flash_meter_to_json()).  The document is parsed strictly and checked
 * whole (every field, ranges, week names, organization records equal to
 * the sum of their service records) before anything changes: on error @m
 * keeps its state and @diag (may be NULL) holds the problem: its JSON path
 * ("records[3].week"), code ("json-*" with line and column for a syntax
 * error, "state-invalid", "state-inconsistent", "read") and message.
 * Errors: -EINVAL, -ENOMEM, -FLASH_E_METER_STATE_SYNTAX,
 * -FLASH_E_METER_STATE_INVALID, -FLASH_E_METER_STATE_INCONSISTENT. */
FLASH_API FLASH_WUR int flash_meter_from_json(struct flash_meter *m, const char *text, size_t len,
					      struct flash_diag *diag);

/* Writes flash_meter_to_json() to @path crash-safely (temporary file,
 * fsync, rename, directory fsync; mode 0600): @path holds the old or the
 * new state, never a mix.  -EINVAL, -ENOMEM, -errno. */
FLASH_API int flash_meter_save(const struct flash_meter *m, const char *path);

/* Reads @path (at most 64 MiB) and flash_meter_from_json() it.  A
 * missing file gives -ENOENT; a truncated or corrupt one an error above,
 * with @m unchanged. */
FLASH_API FLASH_WUR int flash_meter_load(struct flash_meter *m, const char *path,
					 struct flash_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
