/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* FlashUsageRecord objects: names, bodies, adding a deleted service's
 * last seconds, and the usage finalizer (k8s-status.h). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sodium.h>

#include "k8s-status.h"
#include "names.h"
#include "util.h"

#define HASH_HEX 32

int op_k8s_usage_record_name(bool service, const char *id, int64_t t, char *buf, size_t size)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	char part[NAMES_DNS_LABEL_MAX + 1];
	int year, week, n;
	bool hashed;

	if (!id || !buf || !names_opaque_id_valid(id, strlen(id), FLASH_METER_ID_MAX) ||
	    flash_meter_iso_week(t, &year, &week) < 0)
		return -EINVAL;
	hashed = !names_dns_label_valid(id);
	if (hashed) {
		crypto_hash_sha256(h, (const unsigned char *)id, strlen(id));
		for (size_t i = 0; i < HASH_HEX / 2; i++)
			snprintf(part + 2 * i, 3, "%02x", h[i]);
	} else {
		snprintf(part, sizeof(part), "%s", id);
	}
	if (size < OP_K8S_USAGE_NAME_MAX + 1)
		return -ENOSPC;
	n = snprintf(buf, size, "%s%s.%s.%04d-w%02d", service ? "svc" : "org", hashed ? "h" : "", part, year, week);
	return n;
}

int op_k8s_usage_record_objects(const struct flash_meter_record *r, const char *ns, char **ret_object,
				char **ret_status)
{
	bool svc;
	char name[OP_K8S_USAGE_NAME_MAX + 1];
	char *status = NULL, *obj = NULL, *sbody = NULL;
	struct json_writer *w;
	size_t len;
	int ret;

	if (!r || !ns || !ret_object || !ret_status || !r->organization)
		return -EINVAL;
	svc = r->scope == FLASH_METER_SCOPE_SERVICE;
	if (svc && !r->service_id)
		return -EINVAL;
	ret = op_k8s_usage_record_name(svc, svc ? r->service_id : r->organization, r->week_start, name, sizeof(name));
	if (ret < 0)
		return ret;
	ret = flash_meter_record_to_json(r, &status, &len);
	if (ret < 0)
		return ret;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", "flash.heterocloud.io/v1alpha1");
	jw_kv_string(w, "kind", "FlashUsageRecord");
	jw_key(w, "metadata");
	jw_object_open(w);
	jw_kv_string(w, "name", name);
	jw_kv_string(w, "namespace", ns);
	jw_key(w, "labels");
	jw_object_open(w);
	jw_kv_string(w, "app.kubernetes.io/managed-by", "flash-operator");
	jw_kv_string(w, "flash.heterocloud.io/scope", svc ? "service" : "organization");
	/* Label values hold at most 63 bytes of [A-Za-z0-9._-]: the
	 * organization goes in only when it is one. */
	if (names_label_value_valid(r->organization))
		jw_kv_string(w, "flash.heterocloud.io/organization", r->organization);
	jw_object_close(w);
	jw_object_close(w);
	jw_object_close(w);
	ret = json_writer_finish(w, &obj, &len);
	if (ret < 0)
		goto out;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", "flash.heterocloud.io/v1alpha1");
	jw_kv_string(w, "kind", "FlashUsageRecord");
	jw_key(w, "metadata");
	jw_object_open(w);
	jw_kv_string(w, "name", name);
	jw_kv_string(w, "namespace", ns);
	jw_object_close(w);
	jw_key(w, "status");
	jw_raw(w, status, strlen(status));
	jw_object_close(w);
	ret = json_writer_finish(w, &sbody, &len);
	if (ret < 0)
		goto out;
	*ret_object = TAKE_PTR(obj);
	*ret_status = TAKE_PTR(sbody);
out:
	free(obj);
	free(sbody);
	free(status);
	return ret;
}

/* Saturating addition of two counters >= 0. */
static int64_t sat_add(int64_t a, int64_t b, bool *sat)
{
	if (a > INT64_MAX - b) {
		*sat = true;
		return INT64_MAX;
	}
	return a + b;
}

int op_k8s_usage_add(const struct json_value *old, const struct flash_meter_usage *add, int64_t until,
		     char **ret_json, size_t *ret_len)
{
	static const char *const counters[] = { "cpuMillicoreSeconds", "memoryMiBSeconds", "gpuSeconds" };
	int64_t val[3], addv[3], accrued;
	char stamp[FLASH_METER_TIME_STRLEN];
	const char *acc;
	struct json_writer *w;
	bool sat = false;

	if (!old || !add || !ret_json || add->cpu_millicore_seconds < 0 || add->memory_mib_seconds < 0 ||
	    add->gpu_seconds < 0 || flash_meter_format_time(until, stamp, sizeof(stamp)) < 0)
		return -EINVAL;
	addv[0] = add->cpu_millicore_seconds;
	addv[1] = add->memory_mib_seconds;
	addv[2] = add->gpu_seconds;
	acc = json_string_value(json_get(old, "accruedUntil"));
	if (!json_is(old, JSON_OBJECT) || !acc || flash_meter_parse_time(acc, &accrued) < 0 ||
	    json_get_bool(json_get(old, "saturated"), &sat) < 0)
		return -EBADMSG;
	for (size_t i = 0; i < ARRAY_SIZE(counters); i++)
		if (json_get_int64(json_get(old, counters[i]), &val[i]) < 0 || val[i] < 0)
			return -EBADMSG;
	for (size_t i = 0; i < ARRAY_SIZE(counters); i++)
		val[i] = sat_add(val[i], addv[i], &sat);
	w = json_writer_new(0);
	jw_object_open(w);
	/* Every member as it was, the counters, saturated and accruedUntil
	 * rewritten in place. */
	for (size_t i = 0; i < old->u.object.n; i++) {
		const struct json_member *m = &old->u.object.members[i];
		size_t k;

		for (k = 0; k < ARRAY_SIZE(counters) && strcmp(m->key, counters[k]) != 0; k++)
			;
		jw_key(w, m->key);
		if (k < ARRAY_SIZE(counters))
			jw_int(w, val[k]);
		else if (strcmp(m->key, "saturated") == 0)
			jw_bool(w, sat);
		else if (strcmp(m->key, "accruedUntil") == 0)
			jw_string(w, until > accrued ? stamp : acc);
		else
			jw_value(w, m->value);
	}
	jw_object_close(w);
	return json_writer_finish(w, ret_json, ret_len);
}

enum op_k8s_finalizer_action op_k8s_usage_finalizer(const struct json_value *fs, bool usage_written)
{
	const struct json_value *fins = json_at(fs, "metadata.finalizers");
	bool has = false, deleting = json_string_value(json_at(fs, "metadata.deletionTimestamp")) != NULL;

	if (json_is(fins, JSON_ARRAY))
		for (size_t i = 0; i < fins->u.array.n; i++)
			if (json_string_value(fins->u.array.items[i]) &&
			    strcmp(json_string_value(fins->u.array.items[i]), OP_K8S_USAGE_FINALIZER) == 0)
				has = true;
	if (!deleting)
		return has ? OP_K8S_FINALIZER_KEEP : OP_K8S_FINALIZER_ADD;
	if (!has)
		return OP_K8S_FINALIZER_KEEP; /* already released: Kubernetes removes the object */
	return usage_written ? OP_K8S_FINALIZER_REMOVE : OP_K8S_FINALIZER_RECORD;
}
