/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A replica's OCI bundle: config.json and resolv.conf (runtime.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/addr.h>

#include "json.h"
#include "runtime.h"
#include "util.h"

#define CPU_PERIOD_US 100000u
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static bool env_key_in_spec(const struct flash_spec *spec, const char *kv)
{
	size_t n = strcspn(kv, "=");

	for (size_t i = 0; i < flash_spec_env_count(spec); i++) {
		const char *k = flash_spec_env_key(spec, i);

		if (strlen(k) == n && strncmp(k, kv, n) == 0)
			return true;
	}
	return false;
}

static bool env_key_in_image(const char *const *image_env, const char *key)
{
	size_t n = strlen(key);

	for (size_t i = 0; image_env && image_env[i]; i++)
		if (strncmp(image_env[i], key, n) == 0 && image_env[i][n] == '=')
			return true;
	return false;
}

static void mount_entry(struct json_writer *w, const char *dst, const char *type, const char *src,
			const char *const *options)
{
	jw_object_open(w);
	jw_kv_string(w, "destination", dst);
	jw_kv_string(w, "type", type);
	jw_kv_string(w, "source", src);
	jw_key(w, "options");
	jw_array_open(w);
	for (size_t i = 0; options[i]; i++)
		jw_string(w, options[i]);
	jw_array_close(w);
	jw_object_close(w);
}

static void empty_caps(struct json_writer *w)
{
	static const char *const sets[] = { "bounding", "effective", "inheritable", "permitted", "ambient" };

	jw_key(w, "capabilities");
	jw_object_open(w);
	for (size_t i = 0; i < ARRAY_SIZE(sets); i++) {
		jw_key(w, sets[i]);
		jw_array_open(w);
		jw_array_close(w);
	}
	jw_object_close(w);
}

int op_bundle_config(const struct op_bundle_params *p, char **ret, size_t *ret_len)
{
	struct json_writer *w;
	const struct flash_spec *s;
	uint64_t mem;
	bool has_cmd;
	char buf[64];

	if (!p || !p->spec || !p->netns_path || !p->cgroups_path || !ret)
		return -EINVAL;
	s = p->spec;
	has_cmd = flash_spec_command_count(s) > 0;
	if (!p->argv && !has_cmd && (!p->entrypoint || !p->entrypoint[0]))
		return -EINVAL;
	w = json_writer_new(JSON_WRITE_NEWLINE);
	if (!w)
		return -ENOMEM;
	jw_object_open(w);
	jw_kv_string(w, "ociVersion", "1.0.2");
	jw_key(w, "process");
	jw_object_open(w);
	jw_kv_bool(w, "terminal", false);
	jw_key(w, "user");
	jw_object_open(w);
	jw_kv_uint(w, "uid", 0);
	jw_kv_uint(w, "gid", 0);
	jw_object_close(w);
	jw_key(w, "args");
	jw_array_open(w);
	if (p->argv) {
		for (size_t i = 0; p->argv[i]; i++)
			jw_string(w, p->argv[i]);
	} else if (has_cmd) {
		for (size_t i = 0; i < flash_spec_command_count(s); i++)
			jw_string(w, flash_spec_command(s, i));
		for (size_t i = 0; i < flash_spec_args_count(s); i++)
			jw_string(w, flash_spec_arg(s, i));
	} else {
		for (size_t i = 0; p->entrypoint[i]; i++)
			jw_string(w, p->entrypoint[i]);
	}
	jw_array_close(w);
	jw_key(w, "env");
	jw_array_open(w);
	if (!env_key_in_image(p->image_env, "PATH") && !flash_spec_env_get(s, "PATH"))
		jw_string(w, DEFAULT_PATH);
	if (!env_key_in_image(p->image_env, "HOME") && !flash_spec_env_get(s, "HOME"))
		jw_string(w, "HOME=/root");
	for (size_t i = 0; p->image_env && p->image_env[i]; i++)
		if (!env_key_in_spec(s, p->image_env[i]))
			jw_string(w, p->image_env[i]);
	for (size_t i = 0; i < flash_spec_env_count(s); i++) {
		char *kv = NULL;

		if (asprintf(&kv, "%s=%s", flash_spec_env_key(s, i), flash_spec_env_value(s, i)) < 0) {
			json_writer_free(w);
			return -ENOMEM;
		}
		jw_string(w, kv);
		free(kv);
	}
	jw_array_close(w);
	jw_kv_string(w, "cwd", "/root");
	empty_caps(w);
	jw_kv_bool(w, "noNewPrivileges", true);
	jw_object_close(w);

	jw_key(w, "root");
	jw_object_open(w);
	jw_kv_string(w, "path", p->root_path ? p->root_path : "rootfs");
	jw_kv_bool(w, "readonly", p->root_readonly);
	jw_object_close(w);
	jw_kv_string(w, "hostname", p->hostname ? p->hostname : "flash");

	jw_key(w, "mounts");
	jw_array_open(w);
	mount_entry(w, "/proc", "proc", "proc", (const char *const[]){ "nosuid", "noexec", "nodev", NULL });
	mount_entry(w, "/dev", "tmpfs", "tmpfs", (const char *const[]){ "nosuid", "strictatime", "mode=755", "size=65536k", NULL });
	mount_entry(w, "/sys", "sysfs", "sysfs", (const char *const[]){ "nosuid", "noexec", "nodev", "ro", NULL });
	mount_entry(w, "/tmp", "tmpfs", "tmpfs", (const char *const[]){ "nosuid", "nodev", "mode=1777", NULL });
	if (p->resolv_conf)
		mount_entry(w, "/etc/resolv.conf", "bind", p->resolv_conf, (const char *const[]){ "rbind", "ro", NULL });
	if (p->root_volume)
		mount_entry(w, "/root", "bind", p->root_volume, (const char *const[]){ "rbind", "rw", NULL });
	jw_array_close(w);

	jw_key(w, "linux");
	jw_object_open(w);
	jw_kv_string(w, "cgroupsPath", p->cgroups_path);
	jw_key(w, "resources");
	jw_object_open(w);
	jw_key(w, "cpu");
	jw_object_open(w);
	jw_kv_uint(w, "quota", (uint64_t)flash_spec_cpu_millis(s) * CPU_PERIOD_US / 1000u);
	jw_kv_uint(w, "period", CPU_PERIOD_US);
	jw_kv_uint(w, "shares", flash_spec_cpu_millis(s) * 1024u / 1000u ? flash_spec_cpu_millis(s) * 1024u / 1000u : 2);
	jw_object_close(w);
	mem = (uint64_t)flash_spec_memory_mib(s) << 20;
	jw_key(w, "memory");
	jw_object_open(w);
	jw_kv_uint(w, "limit", mem);
	jw_object_close(w);
	jw_key(w, "pids");
	jw_object_open(w);
	jw_kv_uint(w, "limit", p->pids_limit ? p->pids_limit : OP_BUNDLE_PIDS_DEFAULT);
	jw_object_close(w);
	jw_object_close(w);
	jw_key(w, "namespaces");
	jw_array_open(w);
	static const char *const own[] = { "pid", "ipc", "uts", "mount" };
	for (size_t i = 0; i < ARRAY_SIZE(own); i++) {
		jw_object_open(w);
		jw_kv_string(w, "type", own[i]);
		jw_object_close(w);
	}
	jw_object_open(w);
	jw_kv_string(w, "type", "network");
	jw_kv_string(w, "path", p->netns_path);
	jw_object_close(w);
	jw_array_close(w);
	jw_object_close(w);
	snprintf(buf, sizeof(buf), "%u", flash_spec_replicas(s));
	jw_key(w, "annotations");
	jw_object_open(w);
	jw_kv_string(w, "io.heterocloud.flash/replicas", buf);
	for (size_t i = 0; p->annotations && p->annotations[i]; i++) {
		const char *eq = strchr(p->annotations[i], '=');
		char *key;

		if (!eq)
			continue;
		key = strndup(p->annotations[i], (size_t)(eq - p->annotations[i]));
		if (!key) {
			json_writer_free(w);
			return -ENOMEM;
		}
		jw_kv_string(w, key, eq + 1);
		free(key);
	}
	jw_object_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret, ret_len);
}

/* Appends "nameserver ADDR\n" for @addr after checking it. */
static int add_server(char **out, size_t *len, const char *addr, size_t n)
{
	struct flowsdn_addr a;
	char tmp[64], *grown;

	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, addr, n);
	tmp[n] = '\0';
	if (flowsdn_addr_parse(tmp, n, &a) < 0)
		return -EINVAL;
	grown = realloc(*out, *len + n + 13);
	if (!grown)
		return -ENOMEM;
	*out = grown;
	*len += (size_t)sprintf(*out + *len, "nameserver %s\n", tmp);
	return 0;
}

int op_bundle_resolv_conf(const char *servers, const char *host_resolv, char **ret)
{
	char *out = NULL, *text = NULL;
	size_t len = 0;
	int r = 0;

	if (!ret)
		return -EINVAL;
	if (servers) {
		for (const char *s = servers; *s && r == 0;) {
			size_t n;

			s += strspn(s, ", \t");
			n = strcspn(s, ", \t");
			if (n)
				r = add_server(&out, &len, s, n);
			s += n;
		}
	} else {
		r = util_read_file(host_resolv ? host_resolv : "/etc/resolv.conf", 64 << 10, &text, NULL);
		for (char *line = text, *next; r == 0 && line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			if (strncmp(line, "nameserver", 10) != 0 || (line[10] != ' ' && line[10] != '\t'))
				continue;
			line += 11;
			line += strspn(line, " \t");
			size_t n = strcspn(line, " \t#");
			struct flowsdn_addr a;
			char tmp[64];

			if (n == 0 || n >= sizeof(tmp))
				continue;
			memcpy(tmp, line, n);
			tmp[n] = '\0';
			/* The host's own loopback resolver is not reachable from a replica. */
			if (flowsdn_addr_parse(tmp, n, &a) < 0 || (flowsdn_addr_classify(&a) & FLOWSDN_ADDR_LOOPBACK))
				continue;
			r = add_server(&out, &len, line, n);
		}
		free(text);
	}
	if (r == 0 && !out)
		r = -ENOENT;
	if (r < 0) {
		free(out);
		return r;
	}
	*ret = out;
	return 0;
}

void op_log_time(int64_t ns, char buf[OP_LOG_TIME_STRLEN])
{
	/* Days to civil date (Howard Hinnant's algorithm): no locale, no
	 * lock, safe after fork. */
	int64_t secs = ns / 1000000000, us = (ns % 1000000000) / 1000;
	int64_t days = secs / 86400, rem = secs % 86400;
	int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = (int64_t)yoe + era * 400;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	unsigned v[7] = { (unsigned)(y + (m <= 2)), m, d, (unsigned)(rem / 3600), (unsigned)(rem % 3600 / 60),
			  (unsigned)(rem % 60), (unsigned)us };
	static const unsigned width[7] = { 4, 2, 2, 2, 2, 2, 6 };
	static const char sep[7] = { '-', '-', 'T', ':', ':', '.', 'Z' };
	size_t o = 0;

	for (int i = 0; i < 7; i++) {
		for (unsigned k = width[i], x = v[i]; k > 0; k--, x /= 10)
			buf[o + k - 1] = (char)('0' + x % 10);
		o += width[i];
		buf[o++] = sep[i];
	}
	buf[o] = '\0';
}
