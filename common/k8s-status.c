/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Kubernetes client's pure parsers (common/k8s.h): the meta/v1 Status
 * of every refusal, the errno it maps to, and one line of a watch stream.
 * No I/O: the fuzz target tests/fuzz/fuzz-k8s-watch.c drives them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "k8s.h"
#include "util.h"

void k8s_status_clear(struct k8s_status *st)
{
	if (!st)
		return;
	free(st->reason);
	free(st->message);
	free(st->details_name);
	free(st->details_kind);
	free(st->details_group);
	for (size_t i = 0; i < st->n_causes; i++) {
		free(st->causes[i].type);
		free(st->causes[i].field);
		free(st->causes[i].message);
	}
	free(st->causes);
	memset(st, 0, sizeof(*st));
}

/* A copy of the string member @key of @obj: 0 (absent: *ret NULL),
 * -EBADMSG (not a string), -ENOMEM. */
static int dup_member(const struct json_value *obj, const char *key, char **ret)
{
	const struct json_value *v = json_get(obj, key);
	const char *s;

	*ret = NULL;
	if (!v || v->type == JSON_NULL)
		return 0;
	s = json_string_value(v);
	if (!s)
		return -EBADMSG;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static int status_from_json(const struct json_value *obj, bool need_kind, struct k8s_status *ret);

int k8s_status_from_json(const struct json_value *obj, struct k8s_status *ret)
{
	return status_from_json(obj, true, ret);
}

int k8s_status_from_json_kindless(const struct json_value *obj, struct k8s_status *ret)
{
	return status_from_json(obj, false, ret);
}

static int status_from_json(const struct json_value *obj, bool need_kind, struct k8s_status *ret)
{
	struct k8s_status st = { 0 };
	const struct json_value *details, *causes, *code, *kind;
	int64_t n;
	int r;

	if (!ret)
		return -EINVAL;
	if (!json_is(obj, JSON_OBJECT))
		return -EBADMSG;
	kind = json_get(obj, "kind");
	if ((need_kind || kind) && (!kind || !json_string_value(kind) || strcmp(json_string_value(kind), "Status") != 0))
		return -EBADMSG;
	code = json_get(obj, "code");
	if (code) {
		if (json_get_int64(code, &n) < 0 || n < 0 || n > 999)
			return -EBADMSG;
		st.code = (int)n;
	}
	if ((r = dup_member(obj, "reason", &st.reason)) < 0 || (r = dup_member(obj, "message", &st.message)) < 0)
		goto fail;
	details = json_get(obj, "details");
	if (details && details->type != JSON_NULL) {
		const struct json_value *ra;

		r = -EBADMSG;
		if (details->type != JSON_OBJECT)
			goto fail;
		if ((r = dup_member(details, "name", &st.details_name)) < 0 ||
		    (r = dup_member(details, "kind", &st.details_kind)) < 0 ||
		    (r = dup_member(details, "group", &st.details_group)) < 0)
			goto fail;
		ra = json_get(details, "retryAfterSeconds");
		if (ra) {
			r = -EBADMSG;
			if (json_get_int64(ra, &n) < 0 || n < 0)
				goto fail;
			st.retry_after_s = n > 86400 ? 86400 : (unsigned int)n;
		}
		causes = json_get(details, "causes");
		if (causes && causes->type != JSON_NULL) {
			r = -EBADMSG;
			if (causes->type != JSON_ARRAY)
				goto fail;
			if (causes->u.array.n) {
				r = -ENOMEM;
				st.causes = calloc(causes->u.array.n, sizeof(*st.causes));
				if (!st.causes)
					goto fail;
			}
			for (size_t i = 0; i < causes->u.array.n; i++) {
				const struct json_value *c = causes->u.array.items[i];
				struct k8s_cause *out = &st.causes[i];

				r = -EBADMSG;
				if (!json_is(c, JSON_OBJECT))
					goto fail;
				st.n_causes = i + 1;
				/* CauseType is serialized as "reason" (meta/v1 StatusCause). */
				if ((r = dup_member(c, "reason", &out->type)) < 0 ||
				    (r = dup_member(c, "field", &out->field)) < 0 ||
				    (r = dup_member(c, "message", &out->message)) < 0)
					goto fail;
			}
		}
	}
	k8s_status_clear(ret);
	*ret = st;
	return 0;
fail:
	k8s_status_clear(&st);
	return r;
}

int k8s_status_parse(const char *text, size_t len, struct k8s_status *ret)
{
	struct json_value *v = NULL;
	struct json_error err;
	struct json_limits lim = { .max_depth = 16, .max_input = K8S_STATUS_MAX };
	int r;

	if (!text || !ret)
		return -EINVAL;
	if (json_parse(text, len, &lim, &v, &err) < 0)
		return -EBADMSG;
	r = k8s_status_from_json(v, ret);
	json_free(v);
	return r;
}

/* kubernetes#139253: server-side apply of an object with an unknown field
 * or a value of the wrong type answers 500 InternalError although the
 * request is wrong.  Its messages come from structured-merge-diff's typed
 * conversion. */
bool k8s_status_is_typed_patch_error(const struct k8s_status *st)
{
	static const char *const shapes[] = {
		"failed to create typed patch object",
		"failed to create typed live object",
		"field not declared in schema",
		"&value.valueUnstructured",
	};

	if (!st || st->code != 500 || !st->message)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(shapes); i++)
		if (strstr(st->message, shapes[i]))
			return true;
	return false;
}

int k8s_status_errno(const struct k8s_status *st)
{
	if (!st)
		return -EINVAL;
	if (st->code >= 200 && st->code < 300)
		return 0;
	switch (st->code) {
	case 400:
	case 415:
	case 422:
		return -EINVAL;
	case 401:
		return -EKEYREJECTED;
	case 403:
		return -EACCES;
	case 404:
		return -ENOENT;
	case 405:
		return -EOPNOTSUPP;
	case 409:
		return st->reason && strcmp(st->reason, "AlreadyExists") == 0 ? -EEXIST : -EBUSY;
	case 410:
		return -ESTALE;
	case 413:
		return -E2BIG;
	case 429:
	case 503:
		return -EAGAIN;
	case 504:
		return -ETIMEDOUT;
	case 500:
		return k8s_status_is_typed_patch_error(st) ? -EINVAL : -EIO;
	default:
		return st->code > 500 && st->code < 600 ? -EIO : -EPROTO;
	}
}

static const struct {
	const char *name;
	enum k8s_event_type type;
} event_types[] = {
	{ "ADDED", K8S_EVENT_ADDED },
	{ "MODIFIED", K8S_EVENT_MODIFIED },
	{ "DELETED", K8S_EVENT_DELETED },
	{ "BOOKMARK", K8S_EVENT_BOOKMARK },
};

int k8s_watch_parse_line(const char *line, size_t len, size_t max_line, enum k8s_event_type *ret_type,
			 struct json_value **ret_root, struct k8s_status *ret_status)
{
	struct json_limits lim = { .max_input = max_line ? max_line : K8S_DEFAULT_MAX_WATCH_LINE };
	struct json_value *root = NULL;
	const struct json_value *obj;
	struct json_error err;
	const char *type;
	int r = -EBADMSG;

	if (!line || !ret_type || !ret_root || !ret_status)
		return -EINVAL;
	if (len > lim.max_input)
		return -EMSGSIZE;
	if (json_parse(line, len, &lim, &root, &err) < 0)
		return err.kind == JSON_ERR_INPUT_SIZE ? -EMSGSIZE : -EBADMSG;
	type = json_string_value(json_get(root, "type"));
	obj = json_get(root, "object");
	if (!type || !json_is(obj, JSON_OBJECT))
		goto out;
	if (strcmp(type, "ERROR") == 0) {
		struct k8s_status st = { 0 };

		if ((r = k8s_status_from_json(obj, &st)) < 0)
			goto out;
		r = k8s_status_errno(&st);
		if (r == 0)
			r = -EPROTO; /* an ERROR event that claims success */
		k8s_status_clear(ret_status);
		*ret_status = st;
		*ret_type = 0;
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(event_types); i++)
		if (strcmp(type, event_types[i].name) == 0) {
			/* Every event names its object's version: without one a
			 * client cannot resume. */
			if (!json_string_value(json_at(obj, "metadata.resourceVersion")))
				goto out;
			*ret_type = event_types[i].type;
			*ret_root = TAKE_PTR(root);
			return 0;
		}
out:
	json_free(root);
	return r;
}
