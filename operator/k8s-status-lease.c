/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Leader election on a coordination.k8s.io/v1 Lease (k8s-status.h). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <flash/meter.h>

#include "k8s-status.h"
#include "util.h"

#define US INT64_C(1000000)

int op_k8s_parse_micro_time(const char *text, int64_t *ret_us)
{
	char base[FLASH_METER_TIME_STRLEN];
	int64_t t, frac = 0;
	size_t n;

	if (!text || !ret_us)
		return -EINVAL;
	n = strlen(text);
	/* "YYYY-MM-DDTHH:MM:SS" then "Z" or ".f{1,9}Z". */
	if (n < 20 || text[19] != (n == 20 ? 'Z' : '.'))
		return -EINVAL;
	memcpy(base, text, 19);
	base[19] = 'Z';
	base[20] = '\0';
	if (flash_meter_parse_time(base, &t) < 0)
		return -EINVAL;
	if (n > 20) {
		size_t digits = n - 21;
		int64_t scale = US;

		if (digits < 1 || digits > 9 || text[n - 1] != 'Z')
			return -EINVAL;
		for (size_t i = 20; i < n - 1; i++) {
			if (text[i] < '0' || text[i] > '9')
				return -EINVAL;
			scale /= 10;
			if (scale)
				frac += (text[i] - '0') * scale;
		}
	}
	*ret_us = t * US + frac;
	return 0;
}

int op_k8s_format_micro_time(int64_t us, char *buf, size_t size)
{
	char base[FLASH_METER_TIME_STRLEN];
	int r;

	if (!buf || us < 0)
		return -EINVAL;
	if (size < 28)
		return -ENOSPC;
	r = flash_meter_format_time(us / US, base, sizeof(base));
	if (r < 0)
		return r;
	return snprintf(buf, size, "%.19s.%06" PRId64 "Z", base, us % US);
}

int op_lease_elector_init(struct op_lease_elector *e, const char *identity, int32_t duration_s,
			  int32_t renew_deadline_s)
{
	size_t n = identity ? strlen(identity) : 0;

	if (!e || n == 0 || n > OP_LEASE_ID_MAX || duration_s < 1 || duration_s > 3600 || renew_deadline_s < 1 ||
	    renew_deadline_s >= duration_s)
		return -EINVAL;
	*e = (struct op_lease_elector){
		.duration_us = duration_s * US,
		.renew_deadline_us = renew_deadline_s * US,
	};
	memcpy(e->identity, identity, n + 1);
	return 0;
}

bool op_lease_is_leader(const struct op_lease_elector *e, int64_t now_us)
{
	return e && e->leader_until_us && now_us < e->leader_until_us;
}

/* The record of @lease: holder ("" when free), renewTime text, transitions. */
struct record {
	const char *holder, *renew, *rv, *uid;
	int64_t transitions;
};

static int read_record(const struct json_value *lease, struct record *r)
{
	const struct json_value *spec = json_get(lease, "spec");
	const struct json_value *tr = json_get(spec, "leaseTransitions");

	if (!json_is(spec, JSON_OBJECT) || !json_string_value(json_at(lease, "metadata.resourceVersion")))
		return -EBADMSG;
	r->holder = json_string_value(json_get(spec, "holderIdentity"));
	r->renew = json_string_value(json_get(spec, "renewTime"));
	r->rv = json_string_value(json_at(lease, "metadata.resourceVersion"));
	r->uid = json_string_value(json_at(lease, "metadata.uid"));
	if (!r->holder)
		r->holder = "";
	if (!r->renew)
		r->renew = "";
	r->transitions = 0;
	if (tr && json_get_int64(tr, &r->transitions) < 0)
		return -EBADMSG;
	return 0;
}

/* Notes @r as seen at @now_us; a record that changed restarts the wait. */
static void observe(struct op_lease_elector *e, const struct record *r, int64_t now_us)
{
	if (e->seen && strcmp(e->seen_holder, r->holder) == 0 && strcmp(e->seen_renew, r->renew) == 0 &&
	    e->seen_transitions == r->transitions)
		return;
	e->seen = true;
	snprintf(e->seen_holder, sizeof(e->seen_holder), "%s", r->holder);
	snprintf(e->seen_renew, sizeof(e->seen_renew), "%s", r->renew);
	e->seen_transitions = r->transitions;
	e->seen_at_us = now_us;
}

static int body(const struct op_lease_elector *e, const char *ns, const char *name, const struct record *old,
		int64_t acquire_us, int64_t renew_us, int64_t transitions, char **ret)
{
	char acq[32], ren[32];
	struct json_writer *w;
	size_t len;

	if (op_k8s_format_micro_time(acquire_us, acq, sizeof(acq)) < 0 ||
	    op_k8s_format_micro_time(renew_us, ren, sizeof(ren)) < 0)
		return -EINVAL;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", "coordination.k8s.io/v1");
	jw_kv_string(w, "kind", "Lease");
	jw_key(w, "metadata");
	jw_object_open(w);
	jw_kv_string(w, "name", name);
	jw_kv_string(w, "namespace", ns);
	if (old) {
		if (old->uid)
			jw_kv_string(w, "uid", old->uid);
		jw_kv_string(w, "resourceVersion", old->rv);
	}
	jw_object_close(w);
	jw_key(w, "spec");
	jw_object_open(w);
	jw_kv_string(w, "holderIdentity", e->identity);
	jw_kv_int(w, "leaseDurationSeconds", e->duration_us / US);
	jw_kv_string(w, "acquireTime", acq);
	jw_kv_string(w, "renewTime", ren);
	jw_kv_int(w, "leaseTransitions", transitions);
	jw_object_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret, &len);
}

int op_lease_decide(struct op_lease_elector *e, const struct json_value *lease, const char *ns, const char *name,
		    int64_t now_us, int64_t wall_us, char **ret_body)
{
	struct record r;
	int64_t acquire_us, transitions;
	int ret;

	if (!e || !ns || !name || !ret_body || wall_us < 0)
		return -EINVAL;
	*ret_body = NULL;
	if (!lease) {
		e->acquire_time_us = wall_us;
		ret = body(e, ns, name, NULL, wall_us, wall_us, 0, ret_body);
		return ret < 0 ? ret : OP_LEASE_CREATE;
	}
	ret = read_record(lease, &r);
	if (ret < 0)
		return ret;
	observe(e, &r, now_us);
	if (strcmp(r.holder, e->identity) == 0) {
		/* Ours: renew, keeping acquireTime and the transitions. */
		const char *acq = json_string_value(json_at(lease, "spec.acquireTime"));

		if (!acq || op_k8s_parse_micro_time(acq, &acquire_us) < 0)
			acquire_us = e->acquire_time_us ? e->acquire_time_us : wall_us;
		transitions = r.transitions;
	} else {
		/* Another holder's (or nobody's) record: never leader while it
		 * stands; take it only once it is free or has not changed for
		 * a whole duration by our own clock. */
		e->leader_until_us = 0;
		if (r.holder[0] && now_us - e->seen_at_us < e->duration_us)
			return OP_LEASE_WAIT;
		acquire_us = wall_us;
		transitions = r.transitions + 1;
	}
	e->acquire_time_us = acquire_us;
	ret = body(e, ns, name, &r, acquire_us, wall_us, transitions, ret_body);
	return ret < 0 ? ret : OP_LEASE_UPDATE;
}

int op_lease_written(struct op_lease_elector *e, const struct json_value *lease, int64_t sent_us)
{
	struct record r;
	int ret;

	if (!e || !lease)
		return -EINVAL;
	ret = read_record(lease, &r);
	if (ret < 0)
		return ret;
	if (strcmp(r.holder, e->identity) != 0)
		return -EBADMSG;
	observe(e, &r, sent_us);
	e->leader_until_us = sent_us + e->renew_deadline_us;
	return 0;
}
