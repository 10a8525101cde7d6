/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's policy state on disk (policy-store.h). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "diag.h"
#include "json.h"
#include "log.h"
#include "names.h"
#include "policy-store.h"
#include "util.h"
#include <flowsdn/common.h>

#define PSTORE_VERSION 1

struct agent_pstore {
	char *dir;
	int dfd;
};

static const char *const kind_word[AGENT_PSTORE_KIND_MAX_] = { "namespace", "policy", "endpoint", "hostfw" };
static const char *const kind_name[AGENT_PSTORE_KIND_MAX_] = { "Namespace", "NetworkPolicy", "Endpoint", "HostFirewall" };

void agent_pstore_free(struct agent_pstore *s)
{
	if (!s)
		return;
	if (s->dfd >= 0)
		close(s->dfd);
	free(s->dir);
	free(s);
}

int agent_pstore_open(const char *state_dir, struct agent_pstore **ret)
{
	struct agent_pstore *s;
	struct stat st;
	int err;

	if (!state_dir || !ret)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dfd = -1;
	if (asprintf(&s->dir, "%s/policy", state_dir) < 0) {
		s->dir = NULL;
		agent_pstore_free(s);
		return -ENOMEM;
	}
	err = util_mkdir_p(s->dir, 0700);
	if (err == 0)
		err = s->dfd = util_open_dir_private(s->dir, &st);
	if (err < 0) {
		pr_err("agent: policy state %s: %s", s->dir,
		       err == -EPERM ? "not private (owned by another user, or writable by group or others)"
				     : strerror(-err));
		agent_pstore_free(s);
		return err;
	}
	*ret = s;
	return 0;
}

/* Whether @key is a key of @kind (so its file name is one of ours). */
static bool key_valid(enum agent_pstore_kind kind, const char *key)
{
	switch (kind) {
	case AGENT_PSTORE_NAMESPACE:
		return names_dns_label_valid(key);
	case AGENT_PSTORE_POLICY: {
		const char *slash = strchr(key, '/');
		char ns[64];

		if (!slash || (size_t)(slash - key) >= sizeof(ns))
			return false;
		memcpy(ns, key, (size_t)(slash - key));
		ns[slash - key] = '\0';
		return names_dns_label_valid(ns) && names_dns_subdomain_valid(slash + 1);
	}
	case AGENT_PSTORE_ENDPOINT: {
		char *end;
		unsigned long v;

		if (key[0] < '1' || key[0] > '9')
			return false;
		errno = 0;
		v = strtoul(key, &end, 10);
		return !errno && !*end && v <= UINT32_MAX;
	}
	case AGENT_PSTORE_HOSTFW:
		return !strcmp(key, "mode");
	default:
		return false;
	}
}

/* "KIND.KEY.json", the key's '/' written '_'. */
static int file_name(enum agent_pstore_kind kind, const char *key, char *buf, size_t size)
{
	int n;

	if ((unsigned int)kind >= AGENT_PSTORE_KIND_MAX_ || !key || !key_valid(kind, key))
		return -EINVAL;
	n = snprintf(buf, size, "%s.%s.json", kind_word[kind], key);
	if (n < 0 || (size_t)n >= size)
		return -EINVAL;
	for (char *p = buf + strlen(kind_word[kind]) + 1; *p; p++)
		if (*p == '/')
			*p = '_';
	return 0;
}

int agent_pstore_put(struct agent_pstore *s, enum agent_pstore_kind kind, const char *key, const char *object,
		     size_t len)
{
	_cleanup_free_ char *text = NULL;
	struct json_writer *w;
	char name[NAME_MAX + 1];
	size_t n = 0;
	int err;

	if (!s || !object)
		return -EINVAL;
	err = file_name(kind, key, name, sizeof(name));
	if (err < 0)
		return err;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_int(w, "version", PSTORE_VERSION);
	jw_kv_string(w, "kind", kind_name[kind]);
	jw_kv_string(w, "key", key);
	jw_key(w, "object");
	jw_string_len(w, object, len);
	jw_object_close(w);
	err = json_writer_finish(w, &text, &n);
	if (err < 0)
		return err;
	err = util_write_file_atomic_at(s->dfd, name, text, n, 0600);
	if (err < 0)
		pr_err("agent: saving %s/%s: %s", s->dir, name, strerror(-err));
	return err;
}

int agent_pstore_delete(struct agent_pstore *s, enum agent_pstore_kind kind, const char *key)
{
	char name[NAME_MAX + 1];
	int err;

	if (!s)
		return -EINVAL;
	err = file_name(kind, key, name, sizeof(name));
	if (err < 0)
		return err;
	if (unlinkat(s->dfd, name, 0) < 0) {
		if (errno == ENOENT)
			return 0;
		err = -errno;
		pr_err("agent: removing %s/%s: %s", s->dir, name, strerror(errno));
		return err;
	}
	return fsync(s->dfd) < 0 ? -errno : 0;
}

/* Moves the file @name to quarantine/ (replacing one of the same name). */
static void quarantine(struct agent_pstore *s, const char *name, const char *why)
{
	int qfd;

	if (mkdirat(s->dfd, "quarantine", 0700) < 0 && errno != EEXIST) {
		pr_err("agent: %s/%s is damaged (%s); cannot create quarantine/: %s", s->dir, name, why, strerror(errno));
		return;
	}
	qfd = openat(s->dfd, "quarantine", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (qfd < 0 || renameat(s->dfd, name, qfd, name) < 0) {
		pr_err("agent: %s/%s is damaged (%s); moving it to quarantine/: %s", s->dir, name, why, strerror(errno));
	} else {
		pr_err("agent: %s/%s is damaged (%s): moved to %s/quarantine/%s, the other objects are restored", s->dir,
		       name, why, s->dir, name);
		(void)fsync(qfd);
		(void)fsync(s->dfd);
	}
	if (qfd >= 0)
		close(qfd);
}

/* Reads the file @name of @kind: its key and object (pointers into
 * *@ret_root).  0, or -1 with @why filled. */
static int read_one(struct agent_pstore *s, enum agent_pstore_kind kind, const char *name, char **ret_data,
		    struct json_value **ret_root, char *key, size_t key_size, const char **ret_obj, size_t *ret_len,
		    char *why, size_t why_size)
{
	size_t plen = strlen(kind_word[kind]) + 1, nlen = strlen(name), len;
	struct json_value *root = NULL;
	struct json_limits lim = { .max_string = AGENT_PSTORE_MAX_FILE };
	struct json_error je = { 0 };
	const struct json_value *obj;
	const char *fkind, *fkey;
	char *data = NULL;
	int64_t version = 0;
	struct stat st;
	int fd, err;

	if (nlen - plen - 5 >= key_size) {
		snprintf(why, why_size, "name too long");
		return -1;
	}
	memcpy(key, name + plen, nlen - plen - 5);
	key[nlen - plen - 5] = '\0';
	if (kind == AGENT_PSTORE_POLICY) {
		char *u = strchr(key, '_');

		if (u)
			*u = '/';
	}
	if (!key_valid(kind, key)) {
		snprintf(why, why_size, "its name is not that of a %s", kind_name[kind]);
		return -1;
	}
	fd = openat(s->dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_size, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(why, why_size, "not a regular file");
		return -1;
	}
	err = util_read_fd(fd, (size_t)st.st_size, AGENT_PSTORE_MAX_FILE, false, &data, &len);
	close(fd);
	if (err < 0) {
		snprintf(why, why_size, "%s", err == -EFBIG ? "larger than 4 MiB" : strerror(-err));
		return -1;
	}
	if (json_parse(data, len, &lim, &root, &je) < 0) {
		snprintf(why, why_size, "not JSON: %s (line %u, column %u)", je.message, je.line, je.column);
		free(data);
		return -1;
	}
	obj = json_get(root, "object");
	fkind = json_string_value(json_get(root, "kind"));
	fkey = json_string_value(json_get(root, "key"));
	if (!json_is(root, JSON_OBJECT) || json_get_int64(json_get(root, "version"), &version) < 0 ||
	    version != PSTORE_VERSION || !fkind || !fkey || !json_is(obj, JSON_STRING)) {
		snprintf(why, why_size, "not a version %d object file", PSTORE_VERSION);
	} else if (strcmp(fkind, kind_name[kind]) || strcmp(fkey, key)) {
		snprintf(why, why_size, "it holds %.32s \"%.128s\", its name says %s \"%s\"", fkind, fkey,
			 kind_name[kind], key);
	} else {
		*ret_data = data;
		*ret_root = root;
		*ret_obj = obj->u.string.ptr;
		*ret_len = obj->u.string.len;
		return 0;
	}
	json_free(root);
	free(data);
	return -1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int agent_pstore_load(struct agent_pstore *s, enum agent_pstore_kind kind, agent_pstore_fn fn, void *ctx)
{
	char **names = NULL;
	size_t n = 0, cap = 0, plen;
	int quarantined = 0, dfd, err = 0;
	struct dirent *de;
	DIR *d;

	if (!s || !fn || (unsigned int)kind >= AGENT_PSTORE_KIND_MAX_)
		return -EINVAL;
	plen = strlen(kind_word[kind]);
	dfd = openat(s->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		err = -errno;
		if (dfd >= 0)
			close(dfd);
		return err;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len <= plen + 6 || strncmp(de->d_name, kind_word[kind], plen) || de->d_name[plen] != '.' ||
		    strcmp(de->d_name + len - 5, ".json"))
			continue;
		if (n == cap) {
			char **t = reallocarray(names, cap ? cap * 2 : 16, sizeof(*t));

			if (!t) {
				err = -ENOMEM;
				break;
			}
			names = t;
			cap = cap ? cap * 2 : 16;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (err == 0 && n > 1) /* qsort(NULL, 0, ...) is undefined */
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && err == 0; i++) {
		struct json_value *root = NULL;
		char *data = NULL, key[320], why[512];
		const char *obj = NULL;
		size_t len = 0;

		if (read_one(s, kind, names[i], &data, &root, key, sizeof(key), &obj, &len, why, sizeof(why)) == 0) {
			struct diag *dg = NULL;
			int r;

			if (diag_new(&dg) < 0)
				dg = NULL;
			r = fn(ctx, kind, key, obj, len, dg);
			if (r == -ENOMEM)
				err = r;
			else if (r < 0)
				snprintf(why, sizeof(why), "%s",
					 dg && agent_diag_message(dg)[0] ? agent_diag_message(dg) : flowsdn_strerror(r));
			diag_free(dg);
			json_free(root);
			free(data);
			if (r >= 0 || err < 0)
				continue;
		}
		quarantine(s, names[i], why);
		quarantined++;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return err < 0 ? err : quarantined;
}
