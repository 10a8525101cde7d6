/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* replica.json: the record of a replica the runtime reads back at start
 * (runtime-internal.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "names.h"
#include "runtime-internal.h"
#include "util.h"

int op_replica_record_format(const struct op_replica_record *r, char **ret_text, size_t *ret_len)
{
	struct json_writer *w = json_writer_new(JSON_WRITE_NEWLINE);

	if (!w)
		return -ENOMEM;
	jw_object_open(w);
	jw_kv_string(w, "id", r->id);
	jw_kv_string(w, "service", r->service);
	jw_kv_uint(w, "generation", r->generation);
	jw_kv_uint(w, "index", r->index);
	jw_kv_uint(w, "restarts", r->restarts);
	jw_kv_string(w, "address", r->address);
	jw_kv_bool(w, "everReady", r->ever_ready);
	/* The UDP probe's evidence (runtime-probe.c): kept for adoption. */
	jw_kv_bool(w, "udpClosedSeen", r->udp_closed_seen);
	/* The sandbox process, to kill it when runsc no longer knows it
	 * (op_sandbox_retire()); its start time guards against pid reuse. */
	if (r->sandbox_pid > 0 && r->sandbox_start) {
		jw_kv_uint(w, "sandboxPid", r->sandbox_pid);
		jw_kv_uint(w, "sandboxStart", r->sandbox_start);
	}
	jw_object_close(w);
	return json_writer_finish(w, ret_text, ret_len);
}

int op_replica_record_parse(const char *text, size_t len, unsigned int index_max, struct op_replica_record *ret)
{
	struct op_replica_record r = { 0 };
	struct json_value *root = NULL;
	const char *s;
	uint64_t v = 0, start = 0;
	bool b = false;
	int err = json_parse(text, len, NULL, &root, NULL);

	if (err == -ENOMEM)
		return err;
	if (err < 0 || !json_is(root, JSON_OBJECT)) {
		json_free(root);
		return -EBADMSG;
	}
	/* A string its field cannot hold whole is left out (""). */
	(void)util_strcpy_fit(r.id, sizeof(r.id), json_string_value(json_get(root, "id")));
	s = json_string_value(json_get(root, "service"));
	if (names_service_id_valid(s))
		(void)util_strcpy_fit(r.service, sizeof(r.service), s);
	if (json_get_uint64(json_get(root, "generation"), &v) == 0)
		r.generation = v;
	if (json_get_uint64(json_get(root, "index"), &v) == 0 && v < index_max)
		r.index = (unsigned int)v;
	if (json_get_uint64(json_get(root, "restarts"), &v) == 0 && v < UINT32_MAX)
		r.restarts = (unsigned int)v;
	(void)util_strcpy_fit(r.address, sizeof(r.address), json_string_value(json_get(root, "address")));
	if (json_get_bool(json_get(root, "everReady"), &b) == 0)
		r.ever_ready = b;
	if (json_get_bool(json_get(root, "udpClosedSeen"), &b) == 0)
		r.udp_closed_seen = b;
	if (json_get_uint64(json_get(root, "sandboxPid"), &v) == 0 && v > 0 && v <= INT32_MAX &&
	    json_get_uint64(json_get(root, "sandboxStart"), &start) == 0 && start) {
		r.sandbox_pid = v;
		r.sandbox_start = start;
	}
	json_free(root);
	*ret = r;
	return 0;
}
