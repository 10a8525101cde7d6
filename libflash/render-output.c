/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Rendering output: the rendered object list and its printers, the CRDs,
 * and the previous public port assignment read back from a status.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "internal.h"
#include "json.h"
#include "render-internal.h"

/* The rule code of each refusal of the block. */
static const char *render_code(int err)
{
	static const char *const codes[] = {
		[FLASH_E_RENDER_CONFIG - FLASH_E_RENDER_BASE] = "config",
		[FLASH_E_RENDER_PREVIOUS - FLASH_E_RENDER_BASE] = "previous",
		[FLASH_E_RENDER_PORTS_EXHAUSTED - FLASH_E_RENDER_BASE] = "ports-exhausted",
		[FLASH_E_RENDER_DISK - FLASH_E_RENDER_BASE] = "disk",
		[FLASH_E_RENDER_NAME - FLASH_E_RENDER_BASE] = "name",
		[FLASH_E_RENDER_BAD_DOCUMENT - FLASH_E_RENDER_BASE] = "bad-document",
		[FLASH_E_RENDER_NO_SCHEMA - FLASH_E_RENDER_BASE] = "no-schema",
		[FLASH_E_RENDER_INVALID - FLASH_E_RENDER_BASE] = "schema",
	};
	size_t i = (size_t)(-err - FLASH_E_RENDER_BASE);

	return -err >= FLASH_E_RENDER_BASE && i < ARRAY_SIZE(codes) && codes[i] ? codes[i] : "render";
}

int render_diag_fail(struct diag *diag, int err, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_add_textv(diag, DIAG_ERROR, path, render_code(err), NULL, fmt, ap);
	va_end(ap);
	return err;
}

int render_diag_json(struct diag *diag, int err, const struct json_error *jerr)
{
	diag_add_json_error(diag, jerr);
	return err;
}

/* ------------------------------------------------------------ public ports */

bool render_port_pair_equal(const struct flash_public_port *p, const char *protocol, const char *name)
{
	return strcmp(p->protocol, protocol) == 0 && strcmp(p->name, name) == 0;
}

FLASH_API int flash_public_ports_parse(const char *json, size_t len, struct flash_public_port **ret_ports,
				       size_t *ret_n, struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	struct json_value *doc = NULL;
	struct json_error err = { 0 };
	const struct json_value *list, *status;
	struct flash_public_port *out = NULL;
	int r;

	if (!json || !ret_ports || !ret_n)
		return -EINVAL;
	diag_begin(diag, 0);
	r = json_parse(json, len, NULL, &doc, &err);
	if (r == -EBADMSG)
		return render_diag_json(diag, -FLASH_E_RENDER_PREVIOUS, &err);
	if (r < 0)
		return r;
	status = json_get(doc, "status");
	list = json_get(status ? status : doc, "publicPorts");
	if (!doc || doc->type != JSON_OBJECT || (status && status->type != JSON_OBJECT)) {
		r = render_diag_fail(diag, -FLASH_E_RENDER_PREVIOUS, "", "must be a FlashService or its status object");
		goto out_doc;
	}
	if (!list) {
		*ret_ports = NULL;
		*ret_n = 0;
		goto out_doc;
	}
	if (list->type != JSON_ARRAY || list->u.array.n > 64) {
		r = render_diag_fail(diag, -FLASH_E_RENDER_PREVIOUS, "publicPorts", "must be an array of at most 64 entries");
		goto out_doc;
	}
	out = calloc(list->u.array.n ? list->u.array.n : 1, sizeof(*out));
	if (!out) {
		r = -ENOMEM;
		goto out_doc;
	}
	for (size_t i = 0; i < list->u.array.n; i++) {
		const struct json_value *e = list->u.array.items[i];
		const char *name, *proto;
		uint64_t port;
		char path[64];

		snprintf(path, sizeof(path), "publicPorts[%zu]", i);
		if (json_get_string(json_get(e, "name"), &name) < 0 || !name[0] || strlen(name) >= sizeof(out[i].name) ||
		    json_get_string(json_get(e, "protocol"), &proto) < 0 ||
		    (strcmp(proto, "tcp") != 0 && strcmp(proto, "udp") != 0) ||
		    json_get_uint64(json_get(e, "port"), &port) < 0 || port < 1 || port > 65535 ||
		    e->u.object.n != 3) {
			r = render_diag_fail(diag, -FLASH_E_RENDER_PREVIOUS, path,
				      "must be {\"name\": NAME, \"protocol\": \"tcp\"|\"udp\", \"port\": 1..65535}");
			goto out_free;
		}
		for (size_t j = 0; j < i; j++) {
			if (render_port_pair_equal(&out[j], proto, name) || out[j].port == port) {
				r = render_diag_fail(diag, -FLASH_E_RENDER_PREVIOUS, path, "repeats the pair or the port of entry %zu", j);
				goto out_free;
			}
		}
		snprintf(out[i].name, sizeof(out[i].name), "%s", name);
		snprintf(out[i].protocol, sizeof(out[i].protocol), "%s", proto);
		out[i].port = (uint16_t)port;
	}
	*ret_n = list->u.array.n;
	*ret_ports = TAKE_PTR(out);
out_free:
	free(out);
out_doc:
	json_free(doc);
	return r;
}

FLASH_API void flash_render_free(struct flash_render *render)
{
	if (!render)
		return;
	for (size_t i = 0; i < render->n; i++)
		kdoc_free(render->objects[i]);
	free(render->objects);
	free(render);
}

FLASH_API size_t flash_render_count(const struct flash_render *render)
{
	return render ? render->n : 0;
}

FLASH_API const char *flash_render_kind(const struct flash_render *render, size_t i)
{
	struct kdoc *k;

	if (!render || i >= render->n)
		return NULL;
	k = kdoc_get(render->objects[i], "kind");
	return k ? kdoc_string_value(k) : NULL;
}

FLASH_API int flash_render_object_json(const struct flash_render *render, size_t i, char **ret_text, size_t *ret_len)
{
	if (!render || i >= render->n || !ret_text)
		return -EINVAL;
	return kdoc_to_json(render->objects[i], ret_text, ret_len);
}

int render_print_docs(struct kdoc *const *docs, size_t n, enum flash_render_format format, char **ret_text,
		      size_t *ret_len)
{
	struct kdoc *list, *items;
	int r;

	if (format == FLASH_RENDER_YAML)
		return kdoc_to_yaml(docs, n, ret_text, ret_len);
	if (format != FLASH_RENDER_JSON)
		return -EINVAL;
	/* A v1 List borrows the objects; detached again before freeing. */
	list = kdoc_object();
	kdoc_set_str(list, "apiVersion", "v1");
	kdoc_set_str(list, "kind", "List");
	items = kdoc_set_arr(list, "items");
	for (size_t i = 0; i < n; i++)
		kdoc_append(items, kdoc_borrow(docs[i]));
	r = kdoc_failed(list) ? -ENOMEM : kdoc_to_json(list, ret_text, ret_len);
	kdoc_free(list);
	return r;
}

FLASH_API int flash_render_print(const struct flash_render *render, enum flash_render_format format, char **ret_text,
				 size_t *ret_len)
{
	if (!render || !ret_text)
		return -EINVAL;
	return render_print_docs(render->objects, render->n, format, ret_text, ret_len);
}

FLASH_API int flash_render_crd(enum flash_crd crd, enum flash_render_format format, char **ret_text, size_t *ret_len)
{
	struct kdoc *doc;
	int r;

	if (!ret_text || (format != FLASH_RENDER_YAML && format != FLASH_RENDER_JSON))
		return -EINVAL;
	if (crd == FLASH_CRD_FLASHSERVICE)
		doc = crd_flashservice();
	else if (crd == FLASH_CRD_FLASHUSAGERECORD)
		doc = crd_flashusagerecord();
	else
		return -EINVAL;
	if (!doc || kdoc_failed(doc)) {
		kdoc_free(doc);
		return -ENOMEM;
	}
	r = format == FLASH_RENDER_YAML ? kdoc_to_yaml(&doc, 1, ret_text, ret_len) : kdoc_to_json(doc, ret_text, ret_len);
	kdoc_free(doc);
	return r;
}
