/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The streaming tar checker of sandbox imports (<flash/sandbox.h>). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <flash/sandbox.h>

#include "internal.h"

struct flash_sandbox_tar {
	size_t members;
};

FLASH_API int flash_sandbox_tar_new(struct flash_sandbox_tar **ret)
{
	struct flash_sandbox_tar *t;

	if (!ret)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*ret = t;
	return 0;
}

FLASH_API void flash_sandbox_tar_free(struct flash_sandbox_tar *t)
{
	free(t);
}

FLASH_API int flash_sandbox_tar_feed(struct flash_sandbox_tar *t, const void *buf, size_t len,
				     flash_sandbox_sink_fn sink, void *userdata, struct flash_diag *diag)
{
	(void)t; (void)buf; (void)len; (void)sink; (void)userdata; (void)diag;
	return -EOPNOTSUPP;
}

FLASH_API int flash_sandbox_tar_finish(struct flash_sandbox_tar *t, struct flash_diag *diag)
{
	(void)t; (void)diag;
	return -EOPNOTSUPP;
}

FLASH_API size_t flash_sandbox_tar_members(const struct flash_sandbox_tar *t)
{
	return t ? t->members : 0;
}
