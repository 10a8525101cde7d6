/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `flowsdn-cni install`. */
#include "config.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "install.h"
#include "json.h"
#include "util.h"

static int copy_executable(const char *src, const char *dir, const char *name)
{
	_cleanup_free_ char *data = NULL, *dst = NULL;
	size_t len;
	int err;

	if (asprintf(&dst, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	err = util_read_file(src, 256u << 20, &data, &len);
	if (err < 0)
		return err;
	return util_write_file_atomic(dst, data, len, 0755);
}

int cni_install(const struct cni_install_opts *opts)
{
	const char *bin = opts ? opts->bin_dir : NULL, *conf = opts ? opts->conf_dir : NULL;
	const char *sock = opts ? opts->socket : NULL, *queue = opts ? opts->queue_dir : NULL;
	const char *src = opts ? opts->plugin_path : NULL;
	_cleanup_free_ char *lo = NULL, *conflist = NULL, *json = NULL;
	struct json_writer *g;
	int err;

	if (!src || (sock && sock[0] != '/') ||
	    (queue && queue[0] != '/'))
		return -EINVAL;
	bin = bin ? bin : "/opt/cni/bin";
	conf = conf ? conf : "/etc/cni/net.d";
	err = util_mkdir_p(bin, 0755);
	if (err == 0)
		err = util_mkdir_p(conf, 0755);
	if (err == 0)
		err = copy_executable(src, bin, "flowsdn-cni");
	if (err < 0)
		return err;
	if (asprintf(&lo, "%s/loopback", bin) < 0 || asprintf(&conflist, "%s/00-flowsdn.conflist", conf) < 0)
		return -ENOMEM;
	if (access(lo, X_OK) < 0) {
		err = copy_executable(src, bin, "loopback");
		if (err < 0)
			return err;
	}
	g = json_writer_new(JSON_WRITE_PRETTY | JSON_WRITE_NEWLINE);
	if (!g)
		return -ENOMEM;
	jw_object_open(g);
	jw_kv_string(g, "cniVersion", "1.0.0");
	jw_string(g, "cniVersions");
	jw_array_open(g);
	jw_string(g, "1.0.0");
	jw_string(g, "1.1.0");
	jw_array_close(g);
	jw_kv_string(g, "name", "flowsdn");
	jw_string(g, "plugins");
	jw_array_open(g);
	jw_object_open(g);
	jw_kv_string(g, "type", "flowsdn-cni");
	if (sock)
		jw_kv_string(g, "agentSocket", sock);
	if (queue)
		jw_kv_string(g, "queueDir", queue);
	jw_object_close(g);
	jw_array_close(g);
	jw_object_close(g);
	err = json_writer_finish(g, &json, NULL);
	if (err < 0)
		return err;
	return util_write_file_atomic(conflist, json, strlen(json), 0644);
}
