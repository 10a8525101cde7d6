/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The body of an events.k8s.io/v1 Event (common/k8s.h): the one builder of
 * flowsdn-agent's Events (EndpointCreated, PodCIDRSelected, ...) and
 * flash-operator's (ApplyConflict). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "json.h"
#include "k8s.h"

int k8s_event_body(const struct k8s_event_about *a, char **ret_json)
{
	struct json_writer *w;
	struct timespec ts;
	struct tm tm;
	char when[64], ev_name[320];

	if (!a || !a->kind || !a->name || !a->type || !a->reason || !a->action || !a->reporting_controller ||
	    !a->reporting_instance || !ret_json)
		return -EINVAL;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
	/* As client-go's recorder names them: the object and a time in hex. */
	snprintf(ev_name, sizeof(ev_name), "%.200s.%llx", a->name,
		 (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	w = json_writer_new(0);
	if (!w)
		return -ENOMEM;
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", "events.k8s.io/v1");
	jw_kv_string(w, "kind", "Event");
	jw_key(w, "metadata");
	jw_object_open(w);
	jw_kv_string(w, "name", ev_name);
	/* Events about cluster-scoped objects go to "default". */
	jw_kv_string(w, "namespace", a->namespace ? a->namespace : "default");
	jw_object_close(w);
	jw_kv_string(w, "eventTime", when);
	jw_key(w, "regarding");
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", a->api_version ? a->api_version : "v1");
	jw_kv_string(w, "kind", a->kind);
	if (a->namespace)
		jw_kv_string(w, "namespace", a->namespace);
	jw_kv_string(w, "name", a->name);
	if (a->uid)
		jw_kv_string(w, "uid", a->uid);
	jw_object_close(w);
	if (a->related_kind && a->related_name) {
		jw_key(w, "related");
		jw_object_open(w);
		jw_kv_string(w, "apiVersion", a->related_api_version ? a->related_api_version : "v1");
		jw_kv_string(w, "kind", a->related_kind);
		jw_kv_string(w, "name", a->related_name);
		jw_object_close(w);
	}
	jw_kv_string(w, "reason", a->reason);
	jw_kv_string(w, "type", a->type);
	if (a->note)
		jw_kv_string(w, "note", a->note);
	jw_kv_string(w, "action", a->action);
	jw_kv_string(w, "reportingController", a->reporting_controller);
	jw_kv_string(w, "reportingInstance", a->reporting_instance);
	jw_object_close(w);
	return json_writer_finish(w, ret_json, NULL);
}
