/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The image of the gVisor sandboxes that the tests and benches start
 * (tests/integration/test-sandbox-contract.c, test-sandbox-net.c,
 * bench/sandbox.c, bench/sandbox-api.c): BusyBox beside the host's
 * /bin/bash and the libraries ldd names, in a directory that stands for
 * one image name through the backend's rootfs callback.  No Criterion
 * here: the benches include it too.
 */
#ifndef FLASH_TESTS_SANDBOX_IMAGE_H
#define FLASH_TESTS_SANDBOX_IMAGE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The image @name is the tree at @dir. */
struct sbx_image {
	const char *name;
	const char *dir;
};

/* Builds the image in @dir (made, or emptied first); 0 or -EIO. */
static inline int sbx_image_build(const char *dir)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "set -e; R=%s; rm -rf $R; mkdir -p $R/bin $R/root $R/tmp $R/etc $R/proc $R/dev $R/sys;"
		 "cp /usr/bin/busybox $R/bin/busybox;"
		 "for a in $(/usr/bin/busybox --list); do case $a in busybox|bash) ;; *) ln -s busybox $R/bin/$a;; esac; done;"
		 "cp /bin/bash $R/bin/bash;"
		 "for l in $(ldd /bin/bash | grep -o '/[^ ]*'); do mkdir -p $R$(dirname $l); cp -L $l $R$l; done",
		 dir);
	return system(cmd) == 0 ? 0 : -EIO;
}

/* The backend's rootfs callback (op_sandbox_gvisor_opts.rootfs) with
 * @ctx a struct sbx_image: its directory for its name, -ENOENT for any
 * other. */
static inline int sbx_image_rootfs(void *ctx, const char *image, char **ret, char *err, size_t err_size)
{
	const struct sbx_image *img = ctx;

	if (strcmp(image, img->name) != 0) {
		snprintf(err, err_size, "no image %s", image);
		return -ENOENT;
	}
	*ret = strdup(img->dir);
	return *ret ? 0 : -ENOMEM;
}

#endif
