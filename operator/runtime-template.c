/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Root file system templates of the runtime (runtime-internal.h): one
 * ext4 image per pinned image and root size, unpacked once; each replica
 * gets a sparse copy of its own.  Measured with the echo image (a 1 GiB
 * root): mkfs.ext4 10-23 ms and the unpack 33-73 ms per replica before,
 * the copy of the template's data extents 1-3 ms.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime-internal.h"
#include "util.h"

struct op_templates {
	char *dir;
	uint64_t seq;
	struct op_template *list;
};

void op_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

char **op_strv_dup(char *const *v, bool *ret_oom)
{
	size_t n = 0;
	char **c;

	*ret_oom = false;
	if (!v)
		return NULL;
	while (v[n])
		n++;
	c = calloc(n + 1, sizeof(*c));
	for (size_t i = 0; c && i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			op_strv_free(c);
			c = NULL;
		}
	*ret_oom = !c;
	return c;
}

static int rm_any(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

int op_templates_new(const char *dir, struct op_templates **ret)
{
	struct op_templates *t = calloc(1, sizeof(*t));
	struct dirent *de;
	DIR *d;
	int r;

	if (!t || !(t->dir = strdup(dir))) {
		free(t);
		return -ENOMEM;
	}
	/* A template being built is mounted on tN.img.mnt: detached first. */
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char *m = NULL;

		if (len > 4 && strcmp(de->d_name + len - 4, ".mnt") == 0 && asprintf(&m, "%s/%s", dir, de->d_name) >= 0) {
			umount2(m, MNT_DETACH);
			free(m);
		}
	}
	if (d)
		closedir(d);
	nftw(dir, rm_any, 8, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	r = util_mkdir_p(dir, 0700);
	if (r < 0) {
		op_templates_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

static void template_free(struct op_template *e)
{
	if (e->path)
		unlink(e->path);
	free(e->pinned);
	free(e->path);
	op_strv_free(e->entry);
	op_strv_free(e->env);
	free(e);
}

void op_templates_free(struct op_templates *t)
{
	if (!t)
		return;
	while (t->list) {
		struct op_template *e = t->list;

		t->list = e->next;
		template_free(e);
	}
	free(t->dir);
	free(t);
}

const struct op_template *op_templates_find(struct op_templates *t, const char *pinned, uint64_t bytes)
{
	for (struct op_template **pp = &t->list, *e; (e = *pp); pp = &e->next) {
		struct stat st;

		if (e->bytes != bytes || strcmp(e->pinned, pinned) != 0)
			continue;
		if (lstat(e->path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == bytes)
			return e;
		*pp = e->next; /* gone or replaced: built again */
		template_free(e);
		return NULL;
	}
	return NULL;
}

char *op_templates_path(struct op_templates *t)
{
	char *p = NULL;

	return asprintf(&p, "%s/t%" PRIu64 ".img", t->dir, t->seq++) < 0 ? NULL : p;
}

int op_templates_add(struct op_templates *t, const char *pinned, uint64_t bytes, const char *path, char **entry,
		     char **env)
{
	struct op_template *e = calloc(1, sizeof(*e));

	if (!e || !(e->pinned = strdup(pinned)) || !(e->path = strdup(path))) {
		if (e)
			free(e->pinned);
		free(e);
		unlink(path);
		return -ENOMEM;
	}
	e->bytes = bytes;
	e->entry = entry;
	e->env = env;
	e->next = t->list;
	t->list = e;
	return 0;
}

void op_templates_prune(struct op_templates *t, const char *const *live, size_t n, int64_t now_ms, int64_t keep_ms)
{
	for (struct op_template **pp = &t->list, *e; (e = *pp);) {
		bool used = false;

		for (size_t i = 0; i < n && !used; i++)
			used = live[i] && strcmp(live[i], e->pinned) == 0;
		if (used)
			e->unused_since = 0;
		else if (!e->unused_since)
			e->unused_since = now_ms;
		if (used || now_ms - e->unused_since < keep_ms) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		template_free(e);
	}
}
