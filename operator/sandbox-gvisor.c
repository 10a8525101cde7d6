/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The gVisor backend of sandbox sessions (sandbox-gvisor.h). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <flash/diag.h>
#include <flash/image.h>
#include <flash/spec.h>

#include "diag.h"
#include "json.h"
#include "runtime-internal.h"
#include "runtime-net.h"
#include "runtime.h"
#include "sandbox-gvisor.h"
#include "util.h"

/* The sandbox's process: waits, doing nothing, until it is killed. */
static const char *const keepalive[] = { "/bin/bash", "-c",
	"trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done", NULL };

#define POOL_MAX 64
/* A sandbox directory without a record younger than this is being made. */
#define LEFTOVER_AGE_S 120
/* A struct flash_diag is a struct diag (common/diag.h, DIAG_EXPORT). */
#define flash__diag_op(d) ((struct diag *)(d))
#define CID_LEN 24

struct gv {
	char *dir, *runsc, *runsc_root, *cgroup_parent, *pool_image;
	int (*rootfs)(void *ctx, const char *image, char **ret_path, char *err, size_t err_size);
	void *rootfs_ctx;
	struct op_image_settings registry;
	unsigned int interval_ms, pool_size;
	uint32_t pool_cpu, pool_mem;
	struct flash_spec *pool_spec;
	/* flowsdn networking; NULL net: none (--network=none) */
	struct op_net *net;
	struct op_cni cni;
	char *cni_bin, *cni_conf, *agent_socket, *resolv;
	int (*tenant)(void *ctx, const char *sid, char *org, size_t org_size, char *project, size_t project_size);
	void *tenant_ctx;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	char pool[POOL_MAX][CID_LEN];
	unsigned int idle;
	pthread_t reaper, filler;
	bool reaper_started, filler_started;
};

/* One session record (sessions/<cid>/session.json). */
struct rec {
	char cid[CID_LEN];
	char session[FLASH_SANDBOX_ID_MAX + 1]; /* "" for an idle pool sandbox */
	int64_t created_at, expires_at;
	bool from_pool;
	char org[64], project[64]; /* the session's tenant (its policies' namespace) */
	char address[48];          /* flowsdn's address; "" without networking */
	bool revoked;     /* the session's gate closed: its Reap began */
};

static char *pjoin(const char *a, const char *b)
{
	char *p = NULL;

	return asprintf(&p, "%s/%s", a, b) < 0 ? NULL : p;
}

/* runsc --root R --platform=ptrace --network=none --overlay2=root:memory ARGS */
static int runsc(struct gv *g, const char *const *args, char **ret_out, char *err, size_t err_size)
{
	const char *argv[24] = { g->runsc, "--root", g->runsc_root, "--platform=ptrace",
				 g->net ? "--network=sandbox" : "--network=none", "--overlay2=root:memory" };
	int devnull = -1, runerr = -1, status = 0, r;
	size_t n = 6;
	char *out = NULL, *errs = NULL, how[64];
	bool run = strcmp(args[0], "run") == 0;
	/* the netstack's start on kernels >= 6.11 (gVisor 10704) */
	struct op_exec e = { .argv = argv, .timeout_ms = 60000, .private_proc_sys_net = run && g->net };

	for (size_t i = 0; args[i] && n < ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (run) {
		/* the sandbox inherits them and outlives runsc: never a pipe
		 * read to its end; runsc's own complaint goes to a file of
		 * the bundle (args: run --detach --bundle DIR ID), read back
		 * on failure (the keep-alive process writes nothing) */
		char path[512];

		snprintf(path, sizeof(path), "%s/run.err", args[3]);
		devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		runerr = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (devnull < 0 || runerr < 0) {
			r = -errno;
			if (devnull >= 0)
				close(devnull);
			if (runerr >= 0)
				close(runerr);
			return r;
		}
		e.stdout_fd = devnull;
		e.stderr_fd = runerr;
	}
	r = op_exec_run(&e, &status, &out, &errs);
	if (devnull >= 0)
		close(devnull);
	if (runerr >= 0) {
		if (r == 0 && status != 0) {
			char buf[400];
			ssize_t got = pread(runerr, buf, sizeof(buf) - 1, 0);

			free(errs);
			errs = strndup(buf, got > 0 ? (size_t)got : 0);
		}
		close(runerr);
	}
	if (r < 0) {
		snprintf(err, err_size, "runsc %s: %s", args[0], strerror(-r));
		goto out;
	}
	if (status != 0) {
		op_exec_status_str(status, how, sizeof(how));
		if (errs)
			errs[strcspn(errs, "\n")] = '\0';
		snprintf(err, err_size, "runsc %s: %s: %s", args[0], how, errs && errs[0] ? errs : "(no message)");
		r = -EIO;
		goto out;
	}
	if (ret_out)
		*ret_out = TAKE_PTR(out);
out:
	free(out);
	free(errs);
	return r;
}

/* "running", "stopped", ... of @cid; -ENOENT when runsc does not know it;
 * -EBADMSG when its answer is not a state (op_runsc_state_parse()). */
static int runsc_status(struct gv *g, const char *cid, char *buf, size_t size)
{
	char *out = NULL, err[256];
	int r = runsc(g, (const char *const[]){ "state", cid, NULL }, &out, err, sizeof(err));

	/* Only runsc saying so is "no such container": a timeout or any other
	 * failure of runsc is an error, never taken for a sandbox gone (a
	 * Provision would tear a live session down and start it over). */
	if (r < 0)
		return strstr(err, "does not exist") || strstr(err, "not found") ? -ENOENT : r == -ENOENT ? -EIO : r;
	r = op_runsc_state_parse(out, strlen(out), buf, size, NULL);
	free(out);
	return r;
}

/* ---------------------------------------------------------------- records */

static char *rec_path(struct gv *g, const char *cid)
{
	char *p = NULL;

	return asprintf(&p, "%s/sessions/%s/session.json", g->dir, cid) < 0 ? NULL : p;
}

static int rec_save(struct gv *g, const struct rec *rc)
{
	struct json_writer *w = json_writer_new(0);
	char *text = NULL, *path = rec_path(g, rc->cid);
	size_t len = 0;
	int r;

	if (!w || !path) {
		json_writer_free(w);
		free(path);
		return -ENOMEM;
	}
	jw_object_open(w);
	jw_kv_string(w, "session", rc->session);
	jw_kv_int(w, "created_at", rc->created_at);
	jw_kv_int(w, "expires_at", rc->expires_at);
	jw_kv_bool(w, "from_pool", rc->from_pool);
	jw_kv_string(w, "organization", rc->org);
	jw_kv_string(w, "project", rc->project);
	jw_kv_string(w, "address", rc->address);
	if (rc->revoked)
		jw_kv_bool(w, "revoked", true);
	jw_object_close(w);
	r = json_writer_finish(w, &text, &len);
	/* no fsync (the warm claim's cost): a record describes a running
	 * sandbox, which a crash of the machine ends anyway (a directory
	 * whose record it lost is a leftover for the reaper) */
	if (r == 0)
		r = util_write_file_replace(path, text, len, 0600);
	free(text);
	free(path);
	return r;
}

static int rec_load(struct gv *g, const char *cid, struct rec *ret)
{
	struct json_value *root = NULL;
	char *path = rec_path(g, cid), *text = NULL;
	size_t len = 0;
	int r;

	if (!path)
		return -ENOMEM;
	r = util_read_file(path, 4096, &text, &len);
	free(path);
	if (r < 0)
		return r;
	r = json_parse(text, len, NULL, &root, NULL);
	free(text);
	if (r < 0)
		return -EBADMSG;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->cid, sizeof(ret->cid), "%s", cid);
	snprintf(ret->session, sizeof(ret->session), "%s", json_string_value(json_get(root, "session")) ?: "");
	if (json_get_int64(json_get(root, "created_at"), &ret->created_at) < 0 ||
	    json_get_int64(json_get(root, "expires_at"), &ret->expires_at) < 0)
		r = -EBADMSG;
	(void)json_get_bool(json_get(root, "from_pool"), &ret->from_pool);
	snprintf(ret->org, sizeof(ret->org), "%s", json_string_value(json_get(root, "organization")) ?: "");
	snprintf(ret->project, sizeof(ret->project), "%s", json_string_value(json_get(root, "project")) ?: "");
	snprintf(ret->address, sizeof(ret->address), "%s", json_string_value(json_get(root, "address")) ?: "");
	(void)json_get_bool(json_get(root, "revoked"), &ret->revoked);
	/* Read back, checked against itself, not only parsed: a session id
	 * of the rule, times in order, strings that fit (never cut). */
	{
		const char *strs[] = { json_string_value(json_get(root, "session")),
				       json_string_value(json_get(root, "organization")),
				       json_string_value(json_get(root, "project")),
				       json_string_value(json_get(root, "address")) };
		const size_t caps[] = { sizeof(ret->session), sizeof(ret->org), sizeof(ret->project),
					sizeof(ret->address) };

		for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
			if (strs[i] && strlen(strs[i]) >= caps[i])
				r = -EBADMSG;
		if (r == 0 && ((ret->session[0] ? !flash_sandbox_id_valid(ret->session) : !ret->from_pool) ||
			       ret->expires_at < ret->created_at))
			r = -EBADMSG;
	}
	json_free(root);
	return r;
}

/* Every record (a directory under sessions/ without one, left by a crash
 * before its record was written, is given session ""). */
static int rec_list(struct gv *g, struct rec **ret, size_t *ret_n)
{
	char *sd = pjoin(g->dir, "sessions");
	DIR *d = sd ? opendir(sd) : NULL;
	struct dirent *de;
	struct rec *v = NULL;
	size_t n = 0;

	free(sd);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct rec rc;
		struct rec *nv;

		if (strncmp(de->d_name, "sbx-", 4) != 0 || strlen(de->d_name) >= CID_LEN)
			continue;
		if (rec_load(g, de->d_name, &rc) < 0) {
			struct stat st;

			/* a sandbox being created has its directory a moment
			 * before its record: only an old one is a leftover */
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    st.st_mtime > time(NULL) - LEFTOVER_AGE_S)
				continue;
			memset(&rc, 0, sizeof(rc));
			snprintf(rc.cid, sizeof(rc.cid), "%s", de->d_name);
			rc.expires_at = 1; /* long expired: the reaper removes it */
		}
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		v[n++] = rc;
	}
	closedir(d);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* The record of @sid (the first, by container id), -ENOENT. */
static int rec_find(struct gv *g, const char *sid, struct rec *ret)
{
	struct rec *v = NULL;
	size_t n = 0;
	int r = rec_list(g, &v, &n);

	if (r < 0)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].session, sid) == 0 && (r < 0 || strcmp(v[i].cid, ret->cid) < 0)) {
			*ret = v[i];
			r = 0;
		}
	free(v);
	return r;
}

/* ---------------------------------------------------------------- ended sessions */

static char *ended_path(struct gv *g, const char *sid)
{
	char *p = NULL;

	return asprintf(&p, "%s/ended/%s.json", g->dir, sid) < 0 ? NULL : p;
}

static void ended_save(struct gv *g, const struct rec *rc, enum flash_sandbox_end end, const char *reason)
{
	struct json_writer *w = json_writer_new(0);
	char *text = NULL, *path = ended_path(g, rc->session);
	size_t len = 0;

	if (w && path) {
		jw_object_open(w);
		jw_kv_string(w, "backend_id", rc->cid);
		jw_kv_int(w, "created_at", rc->created_at);
		jw_kv_int(w, "expires_at", rc->expires_at);
		jw_kv_int(w, "end", end);
		jw_kv_string(w, "end_reason", reason);
		jw_object_close(w);
		if (json_writer_finish(w, &text, &len) == 0)
			(void)util_write_file_atomic(path, text, len, 0600);
		w = NULL;
	}
	json_writer_free(w);
	free(text);
	free(path);
}

static int ended_load(struct gv *g, const char *sid, struct flash_sandbox_info *ret)
{
	struct json_value *root = NULL;
	char *path = ended_path(g, sid), *text = NULL;
	size_t len = 0;
	int64_t end = 0;
	int r;

	if (!path)
		return -ENOMEM;
	r = util_read_file(path, 4096, &text, &len);
	free(path);
	if (r < 0)
		return -ENOENT;
	r = json_parse(text, len, NULL, &root, NULL);
	free(text);
	if (r < 0)
		return -ENOENT;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->session_id, sizeof(ret->session_id), "%s", sid);
	snprintf(ret->backend_id, sizeof(ret->backend_id), "%s", json_string_value(json_get(root, "backend_id")) ?: "");
	snprintf(ret->end_reason, sizeof(ret->end_reason), "%s", json_string_value(json_get(root, "end_reason")) ?: "");
	(void)json_get_int64(json_get(root, "created_at"), &ret->created_at);
	(void)json_get_int64(json_get(root, "expires_at"), &ret->expires_at);
	(void)json_get_int64(json_get(root, "end"), &end);
	ret->end = end == FLASH_SANDBOX_END_EXPIRED ? FLASH_SANDBOX_END_EXPIRED : FLASH_SANDBOX_END_FAILED;
	json_free(root);
	return 0;
}

static void ended_remove(struct gv *g, const char *sid)
{
	char *path = ended_path(g, sid);

	if (path)
		unlink(path);
	free(path);
}

/* ---------------------------------------------------------------- locks */

/* An exclusive lock on @sid's lock file (processes and threads): the fd,
 * closed to unlock. */
static int session_lock_how(struct gv *g, const char *sid, int how)
{
	char *p = NULL;
	int fd;

	if (asprintf(&p, "%s/locks/%s", g->dir, sid) < 0)
		return -ENOMEM;
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(p);
	if (fd < 0)
		return -errno;
	while (flock(fd, how) < 0) {
		if (errno != EINTR) {
			int r = -errno;

			close(fd);
			return r;
		}
	}
	return fd;
}

static int session_lock(struct gv *g, const char *sid)
{
	return session_lock_how(g, sid, LOCK_EX);
}

/* ---------------------------------------------------------------- sandboxes */

static void new_cid(char out[CID_LEN])
{
	uint8_t b[8] = { 0 };

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)out;

		memcpy(b, &t, sizeof(b));
	}
	snprintf(out, CID_LEN, "sbx-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6],
		 b[7]);
}

/* Removes everything of @cid: the sandbox (killed, deleted, and gone
 * from runsc), its cgroup, netns and bundle. */
static int teardown(struct gv *g, const char *cid)
{
	char err[512], status[32], cg[256], *dir = NULL, *netns = NULL;
	int r = 0;

	if (asprintf(&dir, "%s/sessions/%s", g->dir, cid) < 0)
		return -ENOMEM;
	snprintf(cg, sizeof(cg), "%s/%s", g->cgroup_parent, cid);
	{
		/* the runtime's retirement: kill, delete, then whatever runsc
		 * left (the sandbox and gofer of this bundle, the cgroup's
		 * processes) killed too */
		struct op_retire rt = { .runsc = g->runsc, .root = g->runsc_root, .id = cid, .bundle = dir,
					.cgroup = cg, .err = err, .err_size = sizeof(err) };

		if (op_sandbox_retire(&rt) < 0)
			r = -EBUSY;
	}
	if (runsc_status(g, cid, status, sizeof(status)) != -ENOENT)
		r = -EBUSY; /* still there: the record stays, a later Reap retries */
	op_cgroup_remove(g->cgroup_parent, cid);
	netns = pjoin(dir, "netns");
	if (g->net && r == 0) {
		/* the endpoint and its address (CNI DEL: idempotent), then the
		 * session's policies; either failing keeps the record, to be
		 * retried */
		struct rec rc = { 0 };
		bool known = rec_load(g, cid, &rc) == 0;

		if (op_cni_run(&g->cni, "DEL", cid, "flash-sandbox", netns, NULL, NULL, 0, err, sizeof(err)) < 0 ||
		    op_net_released(g->net, cid, 10000, err, sizeof(err)) < 0)
			r = -EBUSY;
		else if (known && rc.session[0] && op_net_sandbox_policies_del(g->net, cid, rc.org, err, sizeof(err)) < 0)
			r = -EBUSY;
	}
	if (netns)
		(void)op_netns_remove(netns);
	if (r == 0)
		op_remove_tree(dir);
	free(netns);
	free(dir);
	return r;
}

/* The network identity of @rc's session. */
static struct op_net_sandbox sandbox_of(const struct rec *rc)
{
	return (struct op_net_sandbox){ .name = rc->cid, .sid = rc->session, .org = rc->org, .project = rc->project };
}

/* Wires netns @netns of @rc with flowsdn: a session's policies first
 * (its endpoint is born under them), or the pool's deny-all for an idle
 * pool sandbox; then CNI ADD, the address recorded. */
static int wire(struct gv *g, struct rec *rc, const struct flash_spec *spec, const char *netns, char *err,
		size_t err_size)
{
	struct op_net_sandbox sb = sandbox_of(rc);
	char *identity = NULL;
	int r;

	if (rc->session[0])
		r = op_net_sandbox_policies_put(g->net, &sb, spec, err, err_size);
	else
		r = op_net_sandbox_pool_isolate(g->net, err, err_size);
	if (r == 0)
		r = op_net_sandbox_identity(rc->session[0] ? &sb : NULL, rc->cid, &identity);
	if (r == 0)
		r = op_cni_run(&g->cni, "ADD", rc->cid, "flash-sandbox", netns, identity, rc->address,
			       sizeof(rc->address), err, err_size);
	if (r == 0)
		r = rec_save(g, rc);
	free(identity);
	return r;
}

/* Creates and starts a sandbox for @rc (its record written first, so a
 * crash leaves something the reaper finds). */
static int create(struct gv *g, struct rec *rc, const struct flash_spec *spec, struct flash_diag *diag)
{
	char *dir = NULL, *netns = NULL, *config = NULL, *config_path = NULL, *root = NULL, *sd = NULL, *label = NULL,
	     *resolv = NULL, cg[256], err[512];
	size_t config_len = 0;
	int r;

	new_cid(rc->cid);
	if (asprintf(&dir, "%s/sessions/%s", g->dir, rc->cid) < 0 ||
	    !(netns = pjoin(dir, "netns")) || !(config_path = pjoin(dir, "config.json")) ||
	    asprintf(&label, "%s=%s", FLASH_SANDBOX_LABEL, rc->session[0] ? rc->session : "") < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = util_mkdir_p(dir, 0700);
	if (r == 0)
		r = rec_save(g, rc);
	if (r < 0) {
		diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "sandbox", NULL, "%s: %s", dir, strerror(-r));
		goto fail;
	}
	r = g->rootfs(g->rootfs_ctx, flash_spec_image(spec), &root, err, sizeof(err));
	if (r < 0) {
		diag_add_text(flash__diag_op(diag), DIAG_ERROR, "image", "image", NULL, "%s", err);
		goto fail;
	}
	r = op_netns_create(netns);
	if (r < 0) {
		diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "sandbox", NULL, "network namespace: %s",
			      strerror(-r));
		goto fail;
	}
	if (g->net && g->resolv) {
		/* the DNS servers the session's policy lets it reach */
		resolv = pjoin(dir, "resolv.conf");
		r = resolv ? util_write_file_atomic(resolv, g->resolv, strlen(g->resolv), 0644) : -ENOMEM;
		if (r < 0) {
			diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "sandbox", NULL, "resolv.conf: %s",
				      strerror(-r));
			goto fail;
		}
	}
	if (g->net) {
		r = wire(g, rc, spec, netns, err, sizeof(err));
		if (r < 0) {
			diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "network", NULL, "%s", err);
			goto fail;
		}
	}
	snprintf(cg, sizeof(cg), "%s/%s", g->cgroup_parent, rc->cid);
	{
		struct op_bundle_params bp = {
			.spec = spec,
			.hostname = rc->session[0] ? rc->session : "sandbox",
			.netns_path = netns,
			.cgroups_path = cg,
			.argv = keepalive,
			.root_path = root,
			.root_readonly = false, /* writes go to the memory overlay */
			.resolv_conf = resolv,
			.annotations = (const char *const[]){ label, NULL },
		};

		r = op_bundle_config(&bp, &config, &config_len);
	}
	if (r == 0)
		r = util_write_file_atomic(config_path, config, config_len, 0600);
	if (r < 0) {
		diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "sandbox", NULL, "config.json: %s", strerror(-r));
		goto fail;
	}
	r = runsc(g, (const char *const[]){ "run", "--detach", "--bundle", dir, rc->cid, NULL }, NULL, err,
		  sizeof(err));
	if (r < 0) {
		diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "sandbox", NULL, "%s", err);
		goto fail;
	}
	goto out;
fail:
	(void)teardown(g, rc->cid);
out:
	free(dir);
	free(netns);
	free(config);
	free(config_path);
	free(root);
	free(sd);
	free(label);
	free(resolv);
	return r;
}

static void fill_info(const struct rec *rc, bool adopted, struct flash_sandbox_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->session_id, sizeof(ret->session_id), "%s", rc->session);
	snprintf(ret->backend_id, sizeof(ret->backend_id), "%s", rc->cid);
	ret->created_at = rc->created_at;
	ret->expires_at = rc->expires_at;
	ret->adopted = adopted;
	ret->from_pool = rc->from_pool;
}

/* Why a sandbox that is not running ended. */
static void failure_reason(struct gv *g, const char *cid, char *buf, size_t size)
{
	char path[512], *text = NULL;
	unsigned long long kills = 0;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/%s/memory.oom_control", g->cgroup_parent, cid);
	if (util_read_file(path, 4096, &text, NULL) == 0) {
		const char *k = strstr(text, "oom_kill ");

		if (k && sscanf(k + 9, "%llu", &kills) == 1 && kills > 0) {
			snprintf(buf, size, "OOM killed (memory limit)");
			free(text);
			return;
		}
	}
	free(text);
	snprintf(buf, size, "sandbox stopped");
}

/* ---------------------------------------------------------------- the pool */

static bool pool_fits(struct gv *g, const struct flash_spec *spec)
{
	/* A pool sandbox was started with no environment of the spec's: a
	 * spec with env is cold-started (its commands would miss it). */
	return g->pool_size && g->pool_image && strcmp(flash_spec_image(spec), g->pool_image) == 0 &&
	       flash_spec_cpu_millis(spec) <= g->pool_cpu && flash_spec_memory_mib(spec) <= g->pool_mem &&
	       flash_spec_env_count(spec) == 0 && (g->net || flash_spec_egress_mode(spec) == FLASH_SPEC_EGRESS_DISABLED);
}

/* Takes an idle sandbox (its record is still the pool's); "" when none. */
static bool pool_take(struct gv *g, char cid[CID_LEN])
{
	bool got = false;

	pthread_mutex_lock(&g->lock);
	if (g->idle > 0) {
		memcpy(cid, g->pool[--g->idle], CID_LEN);
		got = true;
		pthread_cond_broadcast(&g->cond);
	}
	pthread_mutex_unlock(&g->lock);
	return got;
}

static void *filler(void *arg)
{
	struct gv *g = arg;
	unsigned int backoff_ms = 1000;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		struct rec rc = { .from_pool = true };
		int r;

		if (g->idle >= g->pool_size) {
			pthread_cond_wait(&g->cond, &g->lock);
			continue;
		}
		pthread_mutex_unlock(&g->lock);
		rc.created_at = time(NULL);
		r = create(g, &rc, g->pool_spec, NULL);
		if (r == 0) {
			/* the first exec into a sandbox loads its programs
			 * through the gofer: done here, not in the session's
			 * first Exec (no tenant data involved) — bash (and its
			 * libraries: the helper scripts of Read/Write/Import/
			 * Export) and, as bash execs it, /bin/true (the dynamic
			 * loader and libc of the image's commands) */
			char err[256];

			(void)runsc(g, (const char *const[]){ "exec", rc.cid, "/bin/bash", "-c", "/bin/true", NULL }, NULL,
				    err, sizeof(err));
		}
		pthread_mutex_lock(&g->lock);
		if (r < 0) {
			/* retried after a pause growing to a minute (a stop
			 * ends the wait) */
			struct timespec ts;

			util_abstime_after_ms(&ts, backoff_ms);
			backoff_ms = backoff_ms < 30000 ? backoff_ms * 2 : 60000;
			pthread_cond_timedwait(&g->cond, &g->lock, &ts);
			continue;
		}
		backoff_ms = 1000;
		memcpy(g->pool[g->idle++], rc.cid, CID_LEN);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

unsigned int op_sandbox_gvisor_pool_idle(void *backend)
{
	struct gv *g = backend;
	unsigned int n;

	pthread_mutex_lock(&g->lock);
	n = g->idle;
	pthread_mutex_unlock(&g->lock);
	return n;
}

/* ---------------------------------------------------------------- images */

int op_sandbox_image_rootfs(void *ctx, const char *image, char **ret_path, char *err, size_t err_size)
{
	struct gv *g = ctx;
	_cleanup_free_ char *store = pjoin(g->dir, "images/store"), *dir = NULL, *tmp = NULL;
	struct flash_image *img = NULL;
	struct flash_diag *diag = NULL;
	struct stat st;
	unsigned int nonce;
	int r;

	if (!store)
		return -ENOMEM;
	{
		FLASH_OPTS(flash_image_opts, o, .content_store = store, .ca_file = g->registry.ca_file,
			   .credentials = g->registry.credentials, .n_credentials = g->registry.n_credentials,
			   .plain_http = g->registry.plain_http,
			   .timeout_ms = g->registry.timeout_ms ? g->registry.timeout_ms : 120000);

		r = flash_diag_new(&diag);
		if (r == 0)
			r = util_mkdir_p(store, 0700);
		if (r == 0)
			r = flash_image_resolve(image, &o, &img, diag);
	}
	if (r < 0)
		goto fail;
	/* Pulled and unpacked under a name of this call's own, then renamed
	 * into place: no lock is held across the registry's I/O, and of two
	 * callers preparing the same image the second rename finds the
	 * first's tree there and drops its own.  flash_image_unpack() makes
	 * the directory itself (it refuses one that exists). */
	if (getrandom(&nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
		nonce = (unsigned int)util_mono_ms();
	if (asprintf(&dir, "%s/images/%s", g->dir, flash_image_digest(img) + strlen("sha256:")) < 0 ||
	    asprintf(&tmp, "%s.tmp-%d-%08x", dir, (int)getpid(), nonce) < 0) {
		r = -ENOMEM;
		goto out;
	}
	if (stat(dir, &st) < 0) {
		r = flash_image_pull(img, diag);
		if (r == 0)
			r = flash_image_unpack(img, tmp, NULL, diag);
		if (r == 0 && rename(tmp, dir) < 0)
			r = (errno == ENOTEMPTY || errno == EEXIST) && stat(dir, &st) == 0 ? 0 : -errno;
		op_remove_tree(tmp);
	}
	if (r < 0)
		goto fail;
	*ret_path = TAKE_PTR(dir);
	goto out;
fail:
	{
		const struct flash_diag_entry *e = flash_diag_first_error(diag);

		snprintf(err, err_size, "image %s: %s", image, e ? e->message : flash_strerror(r));
	}
out:
	flash_image_free(img);
	flash_diag_free(diag);
	return r;
}

/* ---------------------------------------------------------------- ops */

/* @rc's organization and project (opts->tenant, or the session id's
 * tenant part). */
static int tenant_of(struct gv *g, const char *sid, struct rec *rc, struct flash_diag *diag)
{
	int r = 0;

	if (g->tenant) {
		r = g->tenant(g->tenant_ctx, sid, rc->org, sizeof(rc->org), rc->project, sizeof(rc->project));
		if (r < 0 && r != -ENOENT)
			diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "tenant", NULL,
				      "the session's organization: %s", strerror(-r));
		if (r != -ENOENT)
			return r;
		/* no tenant known for it (a caller of the C API): the id's */
	}
	/* "sb-" + 16 hex digits + "-" + name (flash_client_sandbox_id()) */
	if (strncmp(sid, "sb-", 3) == 0 && strlen(sid) > 20 && sid[19] == '-')
		snprintf(rc->org, sizeof(rc->org), "%.19s", sid);
	return 0;
}

/* The claim's switch: the session's policies PUT (selecting nothing
 * yet), then one relabel moves the endpoint from the pool's deny-all to
 * them (op_net_sandbox_claim()). */
static int claim_net(struct gv *g, struct rec *rc, const struct flash_spec *spec, struct flash_diag *diag)
{
	struct op_net_sandbox sb = sandbox_of(rc);
	char err[512];
	int r = op_net_sandbox_policies_put(g->net, &sb, spec, err, sizeof(err));

	if (r == 0)
		r = op_net_sandbox_claim(g->net, rc->cid, &sb, err, sizeof(err));
	if (r < 0)
		diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "network", NULL, "claim: %s", err);
	return r;
}

static int gv_provision(void *backend, const char *sid, const struct flash_spec *spec, uint32_t ttl_s,
			struct flash_sandbox_info *ret, struct flash_diag *diag)
{
	struct gv *g = backend;
	struct rec rc = { 0 };
	char status[32];
	int lock, r;

	diag_begin(flash__diag_op(diag), 0);
	lock = session_lock(g, sid);
	if (lock < 0)
		return lock;
	r = rec_find(g, sid, &rc);
	if (r == 0 && rc.expires_at <= time(NULL)) {
		/* expired, not yet reaped: ended; a new sandbox follows */
		ended_save(g, &rc, FLASH_SANDBOX_END_EXPIRED, "expires_at passed");
		r = teardown(g, rc.cid);
		if (r < 0) {
			/* not a second sandbox beside the first's record */
			diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "teardown", NULL,
				      "the expired sandbox of the session: %s", strerror(-r));
			goto out;
		}
		r = -ENOENT;
	}
	if (r == 0 && rc.revoked) {
		/* its Reap began: refused until a Reap completes it */
		fill_info(&rc, true, ret);
		ret->end = FLASH_SANDBOX_END_REAPED;
		snprintf(ret->end_reason, sizeof(ret->end_reason), "reaping");
		r = -FLASH_E_SANDBOX_ENDED;
		goto out;
	}
	if (r == 0) {
		int st = runsc_status(g, rc.cid, status, sizeof(status));

		if (st == 0) {
			fill_info(&rc, true, ret);
			if (strcmp(status, "running") != 0) {
				ret->end = FLASH_SANDBOX_END_FAILED;
				failure_reason(g, rc.cid, ret->end_reason, sizeof(ret->end_reason));
			}
			goto out;
		}
		if (st != -ENOENT) {
			/* runsc could not say: the session is left as it is */
			diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "runsc", NULL,
				      "the state of the session's sandbox: %s", strerror(-st));
			r = st;
			goto out;
		}
		/* a record without its sandbox (a crash): start over; a
		 * teardown that fails leaves the record and refuses, rather
		 * than a second sandbox beside the first's record */
		r = teardown(g, rc.cid);
		if (r < 0) {
			diag_add_text(flash__diag_op(diag), DIAG_ERROR, "", "teardown", NULL,
				      "the remains of the session's earlier sandbox: %s", strerror(-r));
			goto out;
		}
	}
	if (!g->net && flash_spec_egress_mode(spec) != FLASH_SPEC_EGRESS_DISABLED) {
		diag_add_text(flash__diag_op(diag), DIAG_ERROR, "egress.mode", "unsupported", NULL,
			      "the gVisor sandbox backend runs sessions without network only (egress mode \"disabled\"): "
			      "no flowsdn agent is configured (flash-operator(8) SANDBOX SESSIONS)");
		r = -EOPNOTSUPP;
		goto out;
	}
	ended_remove(g, sid);
	memset(&rc, 0, sizeof(rc));
	snprintf(rc.session, sizeof(rc.session), "%s", sid);
	rc.created_at = time(NULL);
	rc.expires_at = rc.created_at + ttl_s;
	r = tenant_of(g, sid, &rc, diag);
	if (r < 0)
		goto out;
	if (pool_fits(g, spec) && pool_take(g, rc.cid)) {
		/* claimed: the record now names the session (the sandbox
		 * never returns to the pool), then the network switch */
		struct rec was = { 0 };

		rc.from_pool = true;
		if (rec_load(g, rc.cid, &was) == 0)
			snprintf(rc.address, sizeof(rc.address), "%s", was.address);
		r = rec_save(g, &rc);
		if (r == 0 && g->net)
			r = claim_net(g, &rc, spec, diag);
		if (r < 0) {
			(void)teardown(g, rc.cid);
			goto out;
		}
		fill_info(&rc, false, ret);
		goto out;
	}
	r = create(g, &rc, spec, diag);
	if (r == 0)
		fill_info(&rc, false, ret);
out:
	close(lock);
	return r;
}

static int gv_info(void *backend, const char *sid, struct flash_sandbox_info *ret)
{
	struct gv *g = backend;
	struct rec rc;
	char status[32];
	int r = rec_find(g, sid, &rc);

	if (r == -ENOENT)
		return ended_load(g, sid, ret);
	if (r < 0)
		return r;
	fill_info(&rc, false, ret);
	if (rc.revoked) {
		ret->end = FLASH_SANDBOX_END_REAPED;
		snprintf(ret->end_reason, sizeof(ret->end_reason), "reaping");
	} else if (rc.expires_at <= time(NULL)) {
		/* the reaper is on it (or about to be) */
		ret->end = FLASH_SANDBOX_END_EXPIRED;
		snprintf(ret->end_reason, sizeof(ret->end_reason), "expires_at passed");
	} else if (runsc_status(g, rc.cid, status, sizeof(status)) < 0) {
		ret->end = FLASH_SANDBOX_END_FAILED;
		snprintf(ret->end_reason, sizeof(ret->end_reason), "sandbox gone");
	} else if (strcmp(status, "running") != 0) {
		ret->end = FLASH_SANDBOX_END_FAILED;
		failure_reason(g, rc.cid, ret->end_reason, sizeof(ret->end_reason));
	}
	return 0;
}

/* The live record of @sid for an exec: -ENOENT, or
 * -FLASH_E_SANDBOX_ENDED for a session ended (recorded, expired, or its
 * gate closed by a revoke). */
static int exec_record(struct gv *g, const char *sid, struct rec *ret)
{
	int r = rec_find(g, sid, ret);

	if (r < 0)
		return r == -ENOENT ? (ended_load(g, sid, &(struct flash_sandbox_info){ 0 }) == 0 ?
				       -FLASH_E_SANDBOX_ENDED : -ENOENT) : r;
	return ret->expires_at <= time(NULL) || ret->revoked ? -FLASH_E_SANDBOX_ENDED : 0;
}

/* `runsc --root R exec [--internal-pid-file F] [--cwd D] [--env E]... CID
 * ARGV...` (a new NULL-terminated array of borrowed strings; NULL when
 * out of memory): the process spec on the command line, the argv after
 * the container id reaching the process exactly. */
static const char **exec_argv(struct gv *g, const char *cid, const char *pidfile, const char *cwd,
			      const char *const *env, const char *const *args)
{
	size_t k = 0, na = 0, ne = 0;
	const char **argv;

	while (args[na])
		na++;
	while (env && env[ne])
		ne++;
	argv = calloc(na + 2 * ne + 12, sizeof(*argv));
	if (!argv)
		return NULL;
	argv[k++] = g->runsc;
	argv[k++] = "--root";
	argv[k++] = g->runsc_root;
	argv[k++] = "exec";
	if (pidfile) {
		argv[k++] = "--internal-pid-file";
		argv[k++] = pidfile;
	}
	if (cwd) {
		argv[k++] = "--cwd";
		argv[k++] = cwd;
	}
	for (size_t i = 0; i < ne; i++) {
		argv[k++] = "--env";
		argv[k++] = env[i];
	}
	argv[k++] = cid;
	for (size_t i = 0; i < na; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	return argv;
}

/* The caller's streams, for op_exec_stream(). */
static struct op_exec_io exec_streams(const struct flash_sandbox_exec_io *io)
{
	return (struct op_exec_io){
		.stdin_fn = io->stdin_fn,
		.stdin_userdata = io->stdin_userdata,
		.stdout_fn = io->stdout_fn,
		.stdout_userdata = io->stdout_userdata,
		.stderr_fn = io->stderr_fn,
		.stderr_userdata = io->stderr_userdata,
	};
}

static int gv_exec(void *backend, const char *sid, const struct flash_sandbox_exec_io *io, int *ret_code)
{
	struct gv *g = backend;
	struct rec rc;
	const char **argv = NULL;
	int status = 0, r;

	r = exec_record(g, sid, &rc);
	if (r < 0)
		return r;
	argv = exec_argv(g, rc.cid, NULL, NULL, io->env, io->argv);
	if (!argv)
		return -ENOMEM;
	{
		struct op_exec e = { .argv = argv };
		struct op_exec_io x = exec_streams(io);

		x.deadline_ms = io->deadline_ms;

		r = op_exec_stream(&e, &x, &status);
	}
	free(argv);
	if (r < 0)
		return r;
	*ret_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (*ret_code == 128) {
		/* runsc's own failure status: a sandbox that stopped has ended */
		char st[32];

		if (runsc_status(g, rc.cid, st, sizeof(st)) < 0 || strcmp(st, "running") != 0)
			return -FLASH_E_SANDBOX_ENDED;
	}
	return 0;
}

/* ---------------------------------------------------------------- native exec */

/* How long past the command's deadline runsc exec has to report the
 * killed command's status before it is killed itself (-ETIMEDOUT). */
#define NATIVE_GRACE_MS 5000
/* Bytes of stderr kept to read runsc's own complaint when the command
 * could not be started. */
#define NATIVE_ERR_MAX 512

struct native {
	struct gv *g;
	const char *cid, *pidfile;
	int64_t give_up_ms;        /* no pid file by then: no kill from inside */
	bool killed;               /* the deadline's kill was sent */
	flash_sandbox_sink_fn err; /* the caller's stderr */
	void *err_ud;
	char err_text[NATIVE_ERR_MAX + 1];
	size_t err_len;
};

/* The command's pid inside the sandbox: runsc exec writes it
 * (--internal-pid-file) once the process started and before it waits for
 * it; 0 while there is none. */
static unsigned long native_pid(const char *pidfile)
{
	char *text = NULL;
	unsigned long v = 0;

	if (util_read_file(pidfile, 64, &text, NULL) == 0) {
		v = strtoul(text, NULL, 10);
		if (v >= 1u << 22)
			v = 0;
		free(text);
	}
	return v;
}

/* At the deadline: SIGKILL to the command's whole process group (its pid,
 * as runsc exec makes every process the leader of a new session and
 * group), sent by the image contract's bash in a runsc exec of its own (no
 * member of that group; runsc kill --pid signals one process only); the
 * leader alone when that bash cannot run.  A command not yet started is
 * waited for (again in 10 ms) until give_up_ms. */
static unsigned int native_kill(void *userdata)
{
	struct native *n = userdata;
	unsigned long pid = native_pid(n->pidfile);
	char pidbuf[24], err[256];

	if (!pid)
		return util_mono_ms() < n->give_up_ms ? 10 : 0;
	snprintf(pidbuf, sizeof(pidbuf), "%lu", pid);
	n->killed = true;
	if (runsc(n->g, (const char *const[]){ "exec", n->cid, "/bin/bash", "-c",
					       "kill -s KILL -- -\"$1\" 2>/dev/null; exit 0", "flash-sandbox-kill", pidbuf,
					       NULL }, NULL, err, sizeof(err)) < 0)
		(void)runsc(n->g, (const char *const[]){ "kill", "--pid", pidbuf, n->cid, "KILL", NULL }, NULL, err,
			    sizeof(err));
	return 0;
}

/* The caller's stderr, its first bytes kept: when the command could not
 * be started they are runsc's complaint. */
static int native_stderr(const void *buf, size_t len, void *userdata)
{
	struct native *n = userdata;
	size_t k = len < NATIVE_ERR_MAX - n->err_len ? len : NATIVE_ERR_MAX - n->err_len;

	memcpy(n->err_text + n->err_len, buf, k);
	n->err_len += k;
	n->err_text[n->err_len] = '\0';
	return n->err ? n->err(buf, len, n->err_ud) : 0;
}

/*
 * exec_native: `runsc exec` straight to the command, its process spec
 * given on the command line (argv after the container id, exactly; --env,
 * --cwd); gVisor makes the process the leader of a new session and
 * process group.  The deadline is enforced from here (native_kill); the
 * command's status is runsc exec's.  runsc exec's own failure (status 128
 * with no pid file written: the process never started) is told apart from
 * a command exiting 128 and turned into what a shell would say.
 */
static int gv_exec_native(void *backend, const char *sid, const struct flash_sandbox_exec_io *io,
			  struct flash_sandbox_exec_result *ret)
{
	struct gv *g = backend;
	struct native n = { .g = g, .err = io->stderr_fn, .err_ud = io->stderr_userdata };
	struct rec rc;
	const char **argv = NULL;
	char *pidfile = NULL;
	uint64_t b = 0;
	int64_t start = util_mono_ms();
	int status = 0, code, r;

	r = exec_record(g, sid, &rc);
	if (r < 0)
		return r;
	if (getrandom(&b, sizeof(b), 0) != (ssize_t)sizeof(b))
		b = (uint64_t)start ^ (uint64_t)(uintptr_t)&n;
	if (asprintf(&pidfile, "%s/sessions/%s/exec-%016" PRIx64 ".pid", g->dir, rc.cid, b) < 0)
		return -ENOMEM;
	argv = exec_argv(g, rc.cid, pidfile, io->cwd, io->env, io->argv);
	if (!argv) {
		free(pidfile);
		return -ENOMEM;
	}
	n.cid = rc.cid;
	n.pidfile = pidfile;
	{
		struct op_exec e = { .argv = argv };
		struct op_exec_io x = exec_streams(io);

		x.stderr_fn = native_stderr;
		x.stderr_userdata = &n;
		if (io->timeout_ms) {
			x.kill_at_ms = (uint64_t)start + io->timeout_ms;
			x.deadline_ms = x.kill_at_ms + NATIVE_GRACE_MS;
			x.kill_fn = native_kill;
			x.kill_userdata = &n;
			n.give_up_ms = (int64_t)x.deadline_ms;
		}
		r = op_exec_stream(&e, &x, &status);
	}
	if (r == -ETIMEDOUT && io->timeout_ms) {
		/* the deadline passed and runsc exec did not report within the
		 * grace (killed by op_exec_stream()) */
		ret->timed_out = true;
		ret->exit_code = -1;
		r = 0;
		goto out;
	}
	if (r < 0)
		goto out;
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (code == 128) {
		/* runsc's own failure status (or the command's 128) */
		char st[32];

		if (runsc_status(g, rc.cid, st, sizeof(st)) < 0 || strcmp(st, "running") != 0)
			r = -FLASH_E_SANDBOX_ENDED; /* the sandbox stopped */
		else if (native_pid(pidfile))
			; /* the command ran: its own status */
		else if (strstr(n.err_text, "initial working directory"))
			code = 1;
		else if (strstr(n.err_text, "no such file or directory"))
			code = 127;
		else if (strstr(n.err_text, "failed to load"))
			code = 126;
		else
			r = -EIO;
		if (r < 0)
			goto out;
	}
	ret->timed_out = n.killed && code == 128 + SIGKILL;
	ret->exit_code = ret->timed_out ? -1 : code;
out:
	unlink(pidfile);
	free(pidfile);
	free(argv);
	return r;
}

static int gv_owned(void *backend, char ***ret_ids, size_t *ret_count)
{
	struct gv *g = backend;
	struct rec *v = NULL;
	char **ids;
	size_t n = 0, k = 0;
	int r = rec_list(g, &v, &n);

	if (r < 0)
		return r;
	ids = calloc(n + 1, sizeof(*ids));
	if (!ids) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		bool dup = !v[i].session[0];

		for (size_t j = 0; j < k && !dup; j++)
			dup = strcmp(ids[j], v[i].session) == 0;
		if (dup)
			continue;
		ids[k] = strdup(v[i].session);
		if (!ids[k]) {
			flash_sandbox_ids_free(ids, k);
			free(v);
			return -ENOMEM;
		}
		k++;
	}
	free(v);
	*ret_ids = ids;
	*ret_count = k;
	return 0;
}

/* Removes every sandbox recorded for @sid; records the end when @end is
 * not REAPED. */
static int reap_session(struct gv *g, const char *sid, enum flash_sandbox_end end, const char *reason)
{
	struct rec *v = NULL;
	size_t n = 0;
	int lock, r, rr = 0;

	/* The expiry thread does not wait on a session busy elsewhere (a
	 * Provision pulling an image from a registry the tenant chose can
	 * hold its lock for minutes): it comes back on its next round, and
	 * expiry goes on for the other sessions meanwhile. */
	lock = session_lock_how(g, sid, end == FLASH_SANDBOX_END_REAPED ? LOCK_EX : LOCK_EX | LOCK_NB);
	if (lock < 0)
		return lock;
	r = rec_list(g, &v, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (strcmp(v[i].session, sid) != 0)
			continue;
		if (end != FLASH_SANDBOX_END_REAPED && v[i].expires_at > time(NULL))
			continue; /* provisioned again meanwhile */
		/* the end first: from the moment the sandbox goes, Info and
		 * Exec find it */
		if (end != FLASH_SANDBOX_END_REAPED)
			ended_save(g, &v[i], end, reason);
		int t = teardown(g, v[i].cid);

		if (t < 0)
			rr = t;
	}
	if (r == 0 && end == FLASH_SANDBOX_END_REAPED)
		ended_remove(g, sid);
	free(v);
	close(lock);
	return r < 0 ? r : rr;
}

static int gv_reap(void *backend, const char *sid)
{
	return reap_session(backend, sid, FLASH_SANDBOX_END_REAPED, "");
}

/* The session's gate: "revoked" written into each of its records
 * (atomically, fsynced) under the session's lock, before its Reap
 * removes anything; Info then answers REAPED "reaping", Exec and
 * Provision refuse, also after a restart. */
static int gv_revoke(void *backend, const char *sid)
{
	struct gv *g = backend;
	struct rec *v = NULL;
	size_t n = 0;
	int lock, r;

	lock = session_lock(g, sid);
	if (lock < 0)
		return lock;
	r = rec_list(g, &v, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (strcmp(v[i].session, sid) != 0 || v[i].revoked)
			continue;
		v[i].revoked = true;
		r = rec_save(g, &v[i]);
	}
	free(v);
	close(lock);
	return r;
}

/* Enforces expires_at; removes what a crash left (records without a
 * session or sandbox directories without a record). */
static void *reaper(void *arg)
{
	struct gv *g = arg;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		struct timespec ts;
		struct rec *v = NULL;
		size_t n = 0;

		pthread_mutex_unlock(&g->lock);
		if (rec_list(g, &v, &n) == 0) {
			int64_t now = time(NULL);

			for (size_t i = 0; i < n; i++) {
				if (v[i].from_pool && !v[i].session[0])
					continue; /* idle in the pool */
				if (!v[i].session[0]) {
					(void)teardown(g, v[i].cid);
					continue;
				}
				if (v[i].expires_at <= now)
					(void)reap_session(g, v[i].session, FLASH_SANDBOX_END_EXPIRED,
							   "expires_at passed");
			}
			free(v);
		}
		pthread_mutex_lock(&g->lock);
		if (g->stop)
			break;
		util_abstime_after_ms(&ts, g->interval_ms);
		pthread_cond_timedwait(&g->cond, &g->lock, &ts);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

static void gv_free(void *backend)
{
	struct gv *g = backend;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	if (g->reaper_started)
		pthread_join(g->reaper, NULL);
	if (g->filler_started)
		pthread_join(g->filler, NULL);
	/* idle pool sandboxes hold no tenant data: removed */
	for (unsigned int i = 0; i < g->idle; i++)
		(void)teardown(g, g->pool[i]);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	flash_spec_free(g->pool_spec);
	op_net_free(g->net);
	free(g->cni_bin);
	free(g->cni_conf);
	free(g->agent_socket);
	free(g->resolv);
	free(g->dir);
	free(g->runsc);
	free(g->runsc_root);
	free(g->cgroup_parent);
	free(g->pool_image);
	free(g);
}

static const struct flash_sandbox_backend_ops gv_ops = {
	.sz = sizeof(gv_ops),
	.provision = gv_provision,
	.info = gv_info,
	.exec = gv_exec,
	.owned = gv_owned,
	.reap = gv_reap,
	.free = gv_free,
	.revoke = gv_revoke,
	.exec_native = gv_exec_native,
};

int op_sandbox_gvisor_new(const struct op_sandbox_gvisor_opts *opts, const struct flash_sandbox_backend_ops **ret_ops,
			  void **ret_backend)
{
	struct gv *g;
	char *sub = NULL;
	int r;

	if (!opts || !opts->dir || !ret_ops || !ret_backend ||
	    (opts->pool_size && !opts->pool_image) || opts->pool_size > POOL_MAX)
		return -EINVAL;
	if (access(opts->runsc ? opts->runsc : "/usr/bin/runsc", X_OK) < 0)
		return -ENOENT;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->dir = strdup(opts->dir);
	g->runsc = strdup(opts->runsc ? opts->runsc : "/usr/bin/runsc");
	g->runsc_root = pjoin(opts->dir, "runsc");
	g->cgroup_parent = strdup(opts->cgroup_parent ? opts->cgroup_parent : OP_SANDBOX_CGROUP_PARENT_DEFAULT);
	g->rootfs = opts->rootfs ? opts->rootfs : op_sandbox_image_rootfs;
	g->rootfs_ctx = opts->rootfs ? opts->rootfs_ctx : g;
	if (opts->registry)
		g->registry = *opts->registry;
	g->interval_ms = opts->reap_interval_ms ? opts->reap_interval_ms : 1000;
	g->pool_size = opts->pool_size;
	g->pool_cpu = opts->pool_cpu_millis ? opts->pool_cpu_millis : 1000;
	g->pool_mem = opts->pool_memory_mib ? opts->pool_memory_mib : 512;
	if (!g->dir || !g->runsc || !g->runsc_root || !g->cgroup_parent ||
	    (opts->pool_image && !(g->pool_image = strdup(opts->pool_image)))) {
		r = -ENOMEM;
		goto fail;
	}
	g->tenant = opts->tenant;
	g->tenant_ctx = opts->tenant_ctx;
	if (opts->cni_bin_dir) {
		struct op_net_opts no = { .dir = opts->dir, .agent_socket = opts->agent_socket, .config = opts->config,
					  .policy = opts->policy, .resolv_conf = opts->resolv_conf };
		char err[256];

		if (!(g->cni_bin = strdup(opts->cni_bin_dir)) || (opts->cni_conf && !(g->cni_conf = strdup(opts->cni_conf))) ||
		    (opts->agent_socket && !(g->agent_socket = strdup(opts->agent_socket))) ||
		    (opts->resolv_conf && !(g->resolv = strdup(opts->resolv_conf)))) {
			r = -ENOMEM;
			goto fail;
		}
		g->cni = (struct op_cni){ .bin_dir = g->cni_bin, .conf = g->cni_conf, .agent_socket = g->agent_socket };
		r = util_mkdir_p(opts->dir, 0700);
		if (r == 0)
			r = op_net_new(&no, &g->net, err, sizeof(err));
		if (r < 0)
			goto fail;
	}
	static const char *const subs[] = { "", "runsc", "sessions", "locks", "ended", "images" };
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		sub = pjoin(opts->dir, subs[i]);
		r = sub ? util_mkdir_p(sub, 0700) : -ENOMEM;
		free(sub);
		if (r < 0)
			goto fail;
	}
	/* idle pool sandboxes of a previous run hold no tenant data: removed
	 * (the pool is refilled) */
	{
		struct rec *v = NULL;
		size_t n = 0;

		if (rec_list(g, &v, &n) == 0) {
			for (size_t i = 0; i < n; i++)
				if (!v[i].session[0])
					(void)teardown(g, v[i].cid);
			free(v);
		}
	}
	if (g->pool_size) {
		char *json = NULL;

		if (asprintf(&json, "{\"region\": \"heteronet-global\", \"image\": \"%s\", \"cpu_millis\": %u, \"memory_mib\": %u}",
			     g->pool_image, g->pool_cpu, g->pool_mem) < 0) {
			r = -ENOMEM;
			goto fail;
		}
		r = flash_spec_parse(json, strlen(json), NULL, &g->pool_spec, NULL);
		free(json);
		if (r < 0)
			goto fail;
		r = -pthread_create(&g->filler, NULL, filler, g);
		if (r < 0)
			goto fail;
		g->filler_started = true;
	}
	r = -pthread_create(&g->reaper, NULL, reaper, g);
	if (r < 0)
		goto fail;
	g->reaper_started = true;
	*ret_ops = &gv_ops;
	*ret_backend = g;
	return 0;
fail:
	gv_free(g);
	return r;
}
