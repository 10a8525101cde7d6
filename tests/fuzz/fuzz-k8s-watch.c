/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for what the Kubernetes client reads from an API
 * server before anything else looks at it (common/k8s-status.c): the
 * Status of an error answer, and each line of a watch stream.  The input
 * is taken whole as a Status body, then line by line as watch events.
 * Properties:
 *  - a Status parses only from a JSON object of kind Status, its code in
 *    0..999, every cause present, its errno 0 only for a 2xx code;
 *  - an event parses to one of the four types with an object that has a
 *    metadata.resourceVersion; an ERROR event never returns 0 and leaves
 *    its Status; nothing parses past the line bound.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "k8s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

#define LINE_MAX_FUZZ 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct k8s_status st = { 0 };
	size_t at = 0;
	int r;

	r = k8s_status_parse(text, size, &st);
	if (r == 0) {
		check(st.code >= 0 && st.code <= 999);
		for (size_t i = 0; i < st.n_causes; i++)
			check(st.causes != NULL);
		check((k8s_status_errno(&st) == 0) == (st.code >= 200 && st.code < 300));
	} else
		check(r == -EBADMSG && st.code == 0 && !st.message && !st.n_causes);
	k8s_status_clear(&st);
	while (at < size) {
		const char *nl = memchr(text + at, '\n', size - at);
		size_t n = nl ? (size_t)(nl - (text + at)) : size - at;
		struct json_value *root = NULL;
		enum k8s_event_type type = 0;

		r = k8s_watch_parse_line(text + at, n, LINE_MAX_FUZZ, &type, &root, &st);
		if (r == 0) {
			check(type >= K8S_EVENT_ADDED && type <= K8S_EVENT_BOOKMARK);
			check(json_string_value(json_at(json_get(root, "object"), "metadata.resourceVersion")) != NULL);
			check(n <= LINE_MAX_FUZZ);
			json_free(root);
		} else {
			check(root == NULL);
			if (r != -EBADMSG && r != -EMSGSIZE && r != -ENOMEM)
				check(st.code != 0 || st.reason || st.message || r == -EPROTO);
		}
		k8s_status_clear(&st);
		at += n + (nl ? 1 : 0);
	}
	return 0;
}
