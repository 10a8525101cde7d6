/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sandbox sessions: the provider over a backend's primitives (<flash/sandbox.h>). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <flash/sandbox.h>

#include "internal.h"
#include "names.h"

static const char *const sandbox_errors[] = {
	[FLASH_E_SANDBOX_ARCHIVE - FLASH_E_SANDBOX_BASE] = "tar stream refused",
	[FLASH_E_SANDBOX_COUNT - FLASH_E_SANDBOX_BASE] = "byte count in the sandbox differs from the bytes sent",
	[FLASH_E_SANDBOX_CONTRACT - FLASH_E_SANDBOX_BASE] = "sandbox image breaks the image contract",
	[FLASH_E_SANDBOX_ENDED - FLASH_E_SANDBOX_BASE] = "sandbox session has ended",
	[FLASH_E_SANDBOX_NOT_DIR - FLASH_E_SANDBOX_BASE] = "not a directory in the sandbox",
};

const char *flash__sandbox_strerror(int code)
{
	size_t i = (size_t)(code - FLASH_E_SANDBOX_BASE);

	return i < ARRAY_SIZE(sandbox_errors) ? sandbox_errors[i] : NULL;
}

struct flash_sandbox_provider {
	struct flash_sandbox_backend_ops ops;
	void *backend;
	int (*revoke)(const char *session_id, void *userdata);
	void *revoke_userdata;
	uint64_t read_max_bytes;
};

FLASH_API bool flash_sandbox_id_valid(const char *session_id)
{
	return session_id && names_dns_label_valid(session_id);
}

FLASH_API const char *flash_sandbox_end_name(enum flash_sandbox_end end)
{
	switch (end) {
	case FLASH_SANDBOX_LIVE:
		return "live";
	case FLASH_SANDBOX_END_REAPED:
		return "reaped";
	case FLASH_SANDBOX_END_EXPIRED:
		return "expired";
	case FLASH_SANDBOX_END_FAILED:
		return "failed";
	}
	return "unknown";
}

FLASH_API int flash_sandbox_provider_new(const struct flash_sandbox_backend_ops *ops, void *backend,
					 const struct flash_sandbox_provider_opts *opts,
					 struct flash_sandbox_provider **ret)
{
	struct flash_sandbox_provider *p;

	if (!ops || ops->sz < offsetof(struct flash_sandbox_backend_ops, free) + sizeof(ops->free) ||
	    !ops->provision || !ops->info || !ops->exec || !ops->owned || !ops->reap || !ret) {
		if (ops && ops->sz >= offsetof(struct flash_sandbox_backend_ops, free) + sizeof(ops->free) &&
		    ops->free)
			ops->free(backend);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		if (ops->free)
			ops->free(backend);
		return -ENOMEM;
	}
	memcpy(&p->ops, ops, sizeof(p->ops));
	p->backend = backend;
	p->read_max_bytes = FLASH_SANDBOX_READ_MAX_DEFAULT;
	if (opts && opts->sz >= offsetof(struct flash_sandbox_provider_opts, read_max_bytes) + sizeof(uint64_t)) {
		p->revoke = opts->revoke;
		p->revoke_userdata = opts->revoke_userdata;
		if (opts->read_max_bytes)
			p->read_max_bytes = opts->read_max_bytes;
	}
	*ret = p;
	return 0;
}

FLASH_API void flash_sandbox_provider_free(struct flash_sandbox_provider *p)
{
	if (!p)
		return;
	if (p->ops.free)
		p->ops.free(p->backend);
	free(p);
}

FLASH_API int flash_sandbox_provision(struct flash_sandbox_provider *p, const char *session_id,
				      const struct flash_spec *spec, uint32_t ttl_s, struct flash_sandbox_info *ret,
				      struct flash_diag *diag)
{
	struct flash_sandbox_info info = { 0 };
	int r;

	if (!p || !flash_sandbox_id_valid(session_id) || !spec || ttl_s == 0 || !ret)
		return -EINVAL;
	r = p->ops.provision(p->backend, session_id, spec, ttl_s, &info, diag);
	if (r < 0)
		return r;
	*ret = info;
	return 0;
}

FLASH_API int flash_sandbox_info(struct flash_sandbox_provider *p, const char *session_id,
				 struct flash_sandbox_info *ret)
{
	struct flash_sandbox_info info = { 0 };
	int r;

	if (!p || !flash_sandbox_id_valid(session_id) || !ret)
		return -EINVAL;
	r = p->ops.info(p->backend, session_id, &info);
	if (r < 0)
		return r;
	*ret = info;
	return 0;
}

FLASH_API int flash_sandbox_exec(struct flash_sandbox_provider *p, const char *session_id,
				 const struct flash_sandbox_exec_opts *opts, struct flash_sandbox_exec_result *ret)
{
	(void)p; (void)session_id; (void)opts; (void)ret;
	return -EOPNOTSUPP;
}

FLASH_API int flash_sandbox_read(struct flash_sandbox_provider *p, const char *session_id, const char *path,
				 uint64_t max_bytes, flash_sandbox_sink_fn sink, void *userdata, uint64_t *ret_size)
{
	(void)p; (void)session_id; (void)path; (void)max_bytes; (void)sink; (void)userdata; (void)ret_size;
	return -EOPNOTSUPP;
}

FLASH_API int flash_sandbox_write(struct flash_sandbox_provider *p, const char *session_id, const char *path,
				  flash_sandbox_source_fn source, void *userdata, uint64_t *ret_written)
{
	(void)p; (void)session_id; (void)path; (void)source; (void)userdata; (void)ret_written;
	return -EOPNOTSUPP;
}

FLASH_API int flash_sandbox_import(struct flash_sandbox_provider *p, const char *session_id, const char *dir,
				   flash_sandbox_source_fn source, void *userdata, struct flash_diag *diag)
{
	(void)p; (void)session_id; (void)dir; (void)source; (void)userdata; (void)diag;
	return -EOPNOTSUPP;
}

FLASH_API int flash_sandbox_export(struct flash_sandbox_provider *p, const char *session_id, const char *root,
				   flash_sandbox_sink_fn sink, void *userdata)
{
	(void)p; (void)session_id; (void)root; (void)sink; (void)userdata;
	return -EOPNOTSUPP;
}

FLASH_API int flash_sandbox_owned(struct flash_sandbox_provider *p, char ***ret_ids, size_t *ret_count)
{
	char **ids = NULL;
	size_t n = 0;
	int r;

	if (!p || !ret_ids || !ret_count)
		return -EINVAL;
	r = p->ops.owned(p->backend, &ids, &n);
	if (r < 0)
		return r;
	*ret_ids = ids;
	*ret_count = n;
	return 0;
}

FLASH_API void flash_sandbox_ids_free(char **ids, size_t count)
{
	if (!ids)
		return;
	for (size_t i = 0; i < count; i++)
		free(ids[i]);
	free(ids);
}

FLASH_API int flash_sandbox_reap(struct flash_sandbox_provider *p, const char *session_id)
{
	int r;

	if (!p || !flash_sandbox_id_valid(session_id))
		return -EINVAL;
	if (p->revoke) {
		r = p->revoke(session_id, p->revoke_userdata);
		if (r < 0)
			return r;
	}
	return p->ops.reap(p->backend, session_id);
}
