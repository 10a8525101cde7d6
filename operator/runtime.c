/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The single-node runtime: replicas, the reconcile loop, adoption
 * (runtime.h).  runsc and flowsdn-cni are executed (runtime-exec.c); the
 * bundle is written by runtime-bundle.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>
#include <flash/image.h>

#include "admission.h"
#include "agent-client.h"
#include "json.h"
#include "runtime-internal.h"
#include "runtime-net.h"
#include "runtime.h"
#include "util.h"

#define RID_MAX OP_REPLICA_RECORD_ID_MAX
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 60000
/* A replica ready this long before it exits starts its backoff over (a
 * crash loop that becomes ready each time still backs off). */
#define BACKOFF_RESET_MS 60000
#define PROBE_MS 200
/* The probe before the sandbox: the replica netns's kernel answers
 * within a millisecond. */
#define PRESTART_PROBE_MS 50
/* The next pass while a replica started less than FAST_FOR_MS ago is
 * not ready yet (its probe); afterwards the period. */
#define FAST_PASS_MS 20
#define FAST_FOR_MS 10000
#define LAST_LINES_BYTES 1024
/* A root file system template no live service uses is kept this long. */
#define TEMPLATE_KEEP_MS (10 * 60 * 1000)

enum replica_state { R_STARTING, R_READY, R_DEAD };

struct replica {
	char id[RID_MAX];
	char svc[OP_SERVICE_ID_STRLEN];
	uint64_t gen;
	unsigned int idx, restarts;
	char address[48];
	uint16_t probe_port;
	int probe_proto; /* 0: no port, else IPPROTO_TCP / IPPROTO_UDP */
	struct op_udp_readiness udp;
	enum op_probe_outcome last_probe;
	bool probed;
	enum replica_state state;
	bool ever_ready;
	int64_t ready_ms;   /* when it became ready (monotonic), 0: not ready */
	int64_t started_ms; /* when it was started or adopted (monotonic) */
	struct op_sandbox sb; /* the sandbox process (pid 0: unknown) */
	struct replica *next;
};

/* What the loop remembers of a service between passes. */
struct svc_state {
	char id[OP_SERVICE_ID_STRLEN];
	uint64_t failed_gen;      /* a terminal failure of this generation */
	uint64_t transient_gen;
	unsigned int transient_failures;
	char message[2048];
	unsigned int restarts[OP_STATUS_REPLICAS_SHOWN * 4]; /* per index */
	int64_t not_before_ms[OP_STATUS_REPLICAS_SHOWN * 4];
	unsigned int backoff_ms[OP_STATUS_REPLICAS_SHOWN * 4];
	bool seen;
	bool observed;            /* the meter was told observed_ready */
	uint32_t observed_ready;
	unsigned int desired;     /* op_runtime_set_desired(), under lock; 0: none */
	struct op_service_status status;
	struct svc_state *next;
};
#define IDX_MAX (OP_STATUS_REPLICAS_SHOWN * 4)

struct op_runtime {
	char *dir, *runsc, *cni_bin, *cni_plugin, *cni_conf, *agent_socket, *cgroup_parent, *dns, *host_resolv;
	char *runsc_root, *content_store, *mkfs;
	bool persistence, sweep;    /* sweep: look for what deleted services left (first pass) */
	struct op_image_settings registry;
	unsigned int interval_ms;
	size_t log_max;
	int (*services)(void *ctx, struct op_service ***ret, size_t *ret_n);
	int (*observe)(void *ctx, const struct op_service *s, const struct flash_spec *spec, uint32_t ready);
	int (*suspended)(void *ctx, const struct op_service *s, const struct flash_spec *spec, char *msg,
			 size_t msg_size);
	void *services_ctx;

	struct op_net *net;         /* isolation and publishing (runtime-net.c) */
	struct op_templates *templates; /* root file system templates (runtime-template.c) */
	struct replica *replicas;   /* the loop thread's only */
	struct svc_state *svcs;     /* status guarded by lock */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping, kicked;
	pthread_t thread;
	bool thread_started;
	uint64_t seq;              /* replica id suffix */
	unsigned int teardowns;    /* in flight, under lock */
	pthread_cond_t idle;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *path_join(const char *a, const char *b)
{
	char *p = NULL;

	return asprintf(&p, "%s/%s", a, b) < 0 ? NULL : p;
}

/* ---------------------------------------------------------------- runsc */

/* runsc --root R --platform=ptrace --network=sandbox VERB ARGS... */
static int runsc(struct op_runtime *rt, const char *const *args, int out_fd, int err_fd, bool private_net,
		 unsigned int timeout_ms, char **ret_out, char *err, size_t err_size)
{
	return op_runsc(rt->runsc, rt->runsc_root, args, out_fd, err_fd, private_net, timeout_ms, ret_out, err, err_size);
}

/* The container's state: 0 with its status ("running", "stopped", ...) and
 * pid (0: none), -ENOENT when runsc does not know it, -EBADMSG when its
 * answer is not a state (op_runsc_state_parse()). */
static int runsc_state(struct op_runtime *rt, const char *id, char *status, size_t status_size, pid_t *ret_pid)
{
	char *out = NULL, err[512];
	int r = runsc(rt, (const char *const[]){ "state", id, NULL }, -1, -1, false, 10000, &out, err, sizeof(err));

	if (r < 0)
		return -ENOENT;
	r = op_runsc_state_parse(out, strlen(out), status, status_size, ret_pid);
	free(out);
	return r;
}

/* ---------------------------------------------------------------- CNI */

/* flowsdn-cni @cmd for replica @rp (runtime-net.c's op_cni_run()), with
 * the identity of contracts C3 (a gVisor endpoint: per-packet service
 * translation). */
static int cni_exec(struct op_runtime *rt, const char *cmd, const struct replica *rp, const char *org,
		    const char *netns, char *address, size_t address_size, char *err, size_t err_size)
{
	struct op_cni c = { .bin_dir = rt->cni_bin, .conf = rt->cni_conf, .agent_socket = rt->agent_socket };
	struct json_writer *w = json_writer_new(0);
	char *identity = NULL;
	int r;

	if (!w)
		return -ENOMEM;
	op_runtime_net_cni_identity(w, rp->svc, org);
	r = json_writer_finish(w, &identity, NULL);
	if (r == 0)
		r = op_cni_run(&c, cmd, rp->id, rp->svc, netns, identity, address, address_size, err, err_size);
	free(identity);
	return r;
}

/* ---------------------------------------------------------------- replica files */

static char *replica_dir(struct op_runtime *rt, const char *id)
{
	char *p = NULL;

	return asprintf(&p, "%s/replicas/%s", rt->dir, id) < 0 ? NULL : p;
}

static char *log_path(struct op_runtime *rt, const char *svc, unsigned int idx)
{
	char *p = NULL;

	return asprintf(&p, "%s/logs/%s/%u.log", rt->dir, svc, idx) < 0 ? NULL : p;
}

static int save_replica(struct op_runtime *rt, const struct replica *rp)
{
	struct op_replica_record rec = {
		.generation = rp->gen,
		.index = rp->idx,
		.restarts = rp->restarts,
		.ever_ready = rp->ever_ready,
		.udp_closed_seen = rp->udp.closed_seen,
	};
	char *text = NULL, *dir = replica_dir(rt, rp->id), *path = dir ? path_join(dir, "replica.json") : NULL;
	size_t len = 0;
	int r;

	if (!path) {
		free(dir);
		return -ENOMEM;
	}
	snprintf(rec.id, sizeof(rec.id), "%s", rp->id);
	snprintf(rec.service, sizeof(rec.service), "%s", rp->svc);
	snprintf(rec.address, sizeof(rec.address), "%s", rp->address);
	if (rp->sb.pid > 0 && rp->sb.start_time) {
		rec.sandbox_pid = (uint64_t)rp->sb.pid;
		rec.sandbox_start = rp->sb.start_time;
	}
	r = op_replica_record_format(&rec, &text, &len);
	if (r == 0)
		r = util_write_file_atomic(path, text, len, 0600);
	free(text);
	free(dir);
	free(path);
	return r;
}

/* The replica's cgroup in every hierarchy: runsc delete leaves it when a
 * sandbox process was still exiting (seen under load), so it is removed
 * here, waiting up to 3 s for it to empty. */
static void cgroup_remove(struct op_runtime *rt, const char *id)
{
	op_cgroup_remove(rt->cgroup_parent, id);
}

/* Removes everything a replica left: container, endpoint, netns, rootfs,
 * cgroups, bundle.  Slow (runsc delete takes about 1.7 s): the teardown
 * thread's. */
static void teardown(struct op_runtime *rt, struct replica *rp)
{
	char err[512], why[512] = "", cg[512], *dir = replica_dir(rt, rp->id), *p;
	struct op_retire re = {
		.runsc = rt->runsc, .root = rt->runsc_root, .id = rp->id, .bundle = dir, .cgroup = cg,
		.sandbox = rp->sb.pid > 0 ? &rp->sb : NULL, .err = why, .err_size = sizeof(why),
	};
	int k;

	snprintf(cg, sizeof(cg), "%s/%s", rt->cgroup_parent, rp->id);
	/* The daemon's log (stderr) says when runsc left processes behind. */
	k = op_sandbox_retire(&re);
	if (k > 0)
		fprintf(stderr, "flash-operator: replica %s: %s; killed the %d sandbox process%s it left\n", rp->id,
			why[0] ? why : "runsc delete left its sandbox running", k, k == 1 ? "" : "es");
	else if (k < 0)
		fprintf(stderr, "flash-operator: replica %s: %s\n", rp->id, why[0] ? why : "sandbox processes survive SIGKILL");
	cgroup_remove(rt, rp->id);
	if (dir) {
		p = path_join(dir, "netns");
		cni_exec(rt, "DEL", rp, NULL, p, NULL, 0, err, sizeof(err));
		if (p)
			op_netns_remove(p);
		free(p);
		p = path_join(dir, "rootfs");
		if (p)
			umount2(p, MNT_DETACH);
		free(p);
		op_remove_tree(dir);
	}
	free(dir);
}

struct teardown_job {
	struct op_runtime *rt;
	struct replica *rp;
};

static void *teardown_thread(void *arg)
{
	struct teardown_job *j = arg;

	struct op_runtime *rt = j->rt;

	teardown(rt, j->rp);
	op_sandbox_close(&j->rp->sb);
	free(j->rp);
	free(j);
	pthread_mutex_lock(&rt->lock);
	if (--rt->teardowns == 0)
		pthread_cond_broadcast(&rt->idle);
	pthread_mutex_unlock(&rt->lock);
	return NULL;
}

/* Hands @rp to a detached thread (the loop does not wait for runsc
 * delete); synchronously when no thread can be made. */
static void retire(struct op_runtime *rt, struct replica *rp)
{
	struct teardown_job *j = malloc(sizeof(*j));
	pthread_attr_t a;
	pthread_t t;

	if (j) {
		*j = (struct teardown_job){ rt, rp };
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_mutex_lock(&rt->lock);
		rt->teardowns++;
		pthread_mutex_unlock(&rt->lock);
		if (pthread_create(&t, &a, teardown_thread, j) == 0) {
			pthread_attr_destroy(&a);
			return;
		}
		pthread_mutex_lock(&rt->lock);
		rt->teardowns--;
		pthread_mutex_unlock(&rt->lock);
		pthread_attr_destroy(&a);
		free(j);
	}
	teardown(rt, rp);
	op_sandbox_close(&rp->sb);
	free(rp);
}

/* ---------------------------------------------------------------- image */

/* Builds the root file system template of @pinned at @limit bytes
 * (runtime-template.c): resolves and pulls the pinned image into the
 * content store, formats a new ext4 image, unpacks the layers onto it
 * (bounded by @limit), reads the image's entrypoint and env, unmounts.
 * *ret_terminal says whether retrying could help. */
static const struct op_template *template_build(struct op_runtime *rt, const char *pinned, uint64_t limit,
						 bool *ret_terminal, char *err, size_t err_size)
{
	FLASH_OPTS(flash_image_opts, o, .content_store = rt->content_store, .ca_file = rt->registry.ca_file,
		   .credentials = rt->registry.credentials, .n_credentials = rt->registry.n_credentials, .plain_http = rt->registry.plain_http, .timeout_ms = rt->registry.timeout_ms ? rt->registry.timeout_ms : 120000);
	struct flash_image_unpack_opts uo = { .sz = sizeof(uo), .max_bytes = limit };
	struct flash_image *image = NULL;
	struct flash_diag *diag = NULL;
	struct json_value *cfg = NULL;
	const struct op_template *t = NULL;
	char *blob = NULL, *text = NULL, *img = op_templates_path(rt->templates), *mnt = NULL, **entry = NULL, **env = NULL;
	bool mounted = false;
	size_t len = 0;
	int r;

	if (!img || asprintf(&mnt, "%s.mnt", img) < 0) {
		mnt = NULL;
		snprintf(err, err_size, "%s", strerror(ENOMEM));
		goto out;
	}
	r = flash_diag_new(&diag);
	if (r < 0) {
		snprintf(err, err_size, "%s", strerror(-r));
		goto out;
	}
	r = flash_image_resolve(pinned, &o, &image, diag);
	if (r == 0)
		r = flash_image_pull(image, diag);
	if (r < 0) {
		const struct flash_diag_entry *e = flash_diag_get(diag, 0);

		snprintf(err, err_size, "pulling %s: %s", pinned, e ? e->message : flash_strerror(r));
		*ret_terminal = !op_image_error_transient(r) && r != -EAGAIN;
		goto out;
	}
	r = op_storage_create(img, limit, rt->mkfs, err, err_size);
	if (r == 0)
		r = op_storage_mount(img, mnt, err, err_size);
	if (r < 0)
		goto out;
	mounted = true;
	for (size_t i = 0; i < flash_image_layer_count(image); i++) {
		free(blob);
		blob = NULL;
		r = flash_image_blob_path(rt->content_store, flash_image_layer_digest(image, i), &blob);
		if (r == 0)
			r = flash_image_layer_unpack(blob, mnt, &uo, diag);
		if (r < 0) {
			const struct flash_diag_entry *e = flash_diag_get(diag, 0);

			snprintf(err, err_size, "unpacking layer %zu of %s: %s", i, pinned, e ? e->message : flash_strerror(r));
			*ret_terminal = true;
			goto out;
		}
	}
	/* The image config: Entrypoint + Cmd and Env. */
	free(blob);
	blob = NULL;
	if (flash_image_blob_path(rt->content_store, flash_image_config_digest(image), &blob) == 0 &&
	    util_read_file(blob, FLASH_IMAGE_CONFIG_MAX, &text, &len) == 0 && json_parse(text, len, NULL, &cfg, NULL) == 0) {
		const struct json_value *c = json_get(cfg, "config");
		const char *keys[2][2] = { { "Entrypoint", "Cmd" }, { "Env", NULL } };
		char ***outs[2] = { &entry, &env };

		for (int k = 0; k < 2; k++) {
			size_t n = 0;
			char **v = calloc(64, sizeof(char *));

			if (!v)
				break;
			for (int j = 0; j < 2 && keys[k][j]; j++) {
				const struct json_value *a = json_get(c, keys[k][j]);

				for (size_t i = 0; json_is(a, JSON_ARRAY) && i < a->u.array.n && n < 63; i++)
					if (json_string_value(a->u.array.items[i]))
						v[n++] = strdup(json_string_value(a->u.array.items[i]));
			}
			*outs[k] = v;
		}
	}
	/* Unmounted before any copy: the copies are of a clean file system. */
	mounted = false;
	if (umount2(mnt, 0) < 0) {
		r = -errno;
		snprintf(err, err_size, "unmounting the template %s: %s", mnt, strerror(-r));
		umount2(mnt, MNT_DETACH);
		goto out;
	}
	if (op_templates_add(rt->templates, pinned, limit, img, entry, env) == 0) {
		entry = env = NULL;
		t = op_templates_find(rt->templates, pinned, limit);
	} else {
		snprintf(err, err_size, "%s", strerror(ENOMEM));
	}
out:
	if (mounted)
		umount2(mnt, MNT_DETACH);
	if (mnt)
		rmdir(mnt);
	if (!t && img)
		unlink(img);
	op_strv_free(entry);
	op_strv_free(env);
	json_free(cfg);
	free(text);
	free(blob);
	free(img);
	free(mnt);
	flash_image_free(image);
	flash_diag_free(diag);
	return t;
}

/* The replica's root file system: a sparse copy of the template of the
 * pinned image at @limit bytes (built first when there is none) as
 * @rootfs.img, mounted on @rootfs (image plus writable root fit the
 * workload's disk budget).  The image's entrypoint and env are returned
 * for a spec without a command.  *ret_terminal says whether retrying
 * could help. */
static int prepare_rootfs(struct op_runtime *rt, const char *pinned, uint64_t limit, const char *rootfs,
			  char ***ret_entry, char ***ret_env, bool *ret_terminal, char *err, size_t err_size)
{
	const struct op_template *t = op_templates_find(rt->templates, pinned, limit);
	char *img = NULL;
	bool oom1 = false, oom2 = false;
	int r;

	*ret_terminal = false;
	if (!t)
		t = template_build(rt, pinned, limit, ret_terminal, err, err_size);
	if (!t)
		return -EIO;
	if (mkdir(rootfs, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, err_size, "%s: %s", rootfs, strerror(-r));
		return r;
	}
	if (asprintf(&img, "%s.img", rootfs) < 0)
		return -ENOMEM;
	r = op_storage_copy(t->path, img, err, err_size);
	if (r == 0)
		r = op_storage_mount(img, rootfs, err, err_size);
	free(img);
	if (r < 0)
		return r;
	*ret_entry = op_strv_dup(t->entry, &oom1);
	*ret_env = op_strv_dup(t->env, &oom2);
	return oom1 || oom2 ? -ENOMEM : 0;
}

/* Is the program @prog in @rootfs (searching the image's PATH for a bare
 * name)?  A symbolic link counts as present (it resolves in the guest). */
static bool program_present(const char *rootfs, const char *prog)
{
	static const char *const dirs[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin" };
	struct stat st;
	char p[4096];

	if (strchr(prog, '/')) {
		snprintf(p, sizeof(p), "%s/%s", rootfs, prog);
		return lstat(p, &st) == 0 && (S_ISLNK(st.st_mode) || (S_ISREG(st.st_mode) && (st.st_mode & 0111)));
	}
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), "%s%s/%s", rootfs, dirs[i], prog);
		if (lstat(p, &st) == 0)
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------- volumes */

static char *volume_dir(struct op_runtime *rt, const char *svc)
{
	char *p = NULL;

	return asprintf(&p, "%s/volumes/%s", rt->dir, svc) < 0 ? NULL : p;
}

/* The /root volume of service @svc, mounted (made at @bytes the first
 * time; kept as it is afterwards): *ret is its mount point. */
static int root_volume(struct op_runtime *rt, const char *svc, uint64_t bytes, char **ret, char *err, size_t err_size)
{
	char *d = volume_dir(rt, svc), *img = d ? path_join(d, "root.img") : NULL, *mnt = d ? path_join(d, "root") : NULL;
	struct stat st;
	int r = d && img && mnt ? util_mkdir_p(d, 0700) : -ENOMEM;

	if (r < 0 && r != -ENOMEM)
		snprintf(err, err_size, "%s: %s", d, strerror(-r));
	if (r == 0 && !op_storage_mounted(mnt)) {
		if (lstat(img, &st) < 0 && errno == ENOENT)
			r = op_storage_create(img, bytes, rt->mkfs, err, err_size);
		else if (lstat(img, &st) < 0 || !S_ISREG(st.st_mode)) {
			r = -EINVAL;
			snprintf(err, err_size, "%s: not a regular file", img);
		}
		if (r == 0)
			r = op_storage_mount(img, mnt, err, err_size);
	}
	free(d);
	free(img);
	if (r < 0) {
		free(mnt);
		return r;
	}
	*ret = mnt;
	return 0;
}

/* Unmounts (lazily: a retiring sandbox may still hold it) and removes the
 * volume of a deleted service. */
static void volume_remove(struct op_runtime *rt, const char *svc)
{
	char *d = volume_dir(rt, svc), *mnt = d ? path_join(d, "root") : NULL;

	if (mnt && op_storage_mounted(mnt))
		umount2(mnt, MNT_DETACH);
	if (d)
		op_remove_tree(d);
	free(mnt);
	free(d);
}

/* ---------------------------------------------------------------- start */

/* The pid runsc wrote to @path (--pid-file); 0 when unreadable. */
static pid_t pid_file_read(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	uint64_t v = 0;
	int r = util_read_file(path, 64, &text, &len);

	if (r == 0) {
		char *end = NULL;

		errno = 0;
		v = strtoull(text, &end, 10);
		r = errno || end == text || (*end && *end != '\n') ? -EINVAL : 0;
	}
	free(text);
	return r == 0 && v > 0 && v <= INT32_MAX ? (pid_t)v : 0;
}

/* Starts replica @idx of @s.  0, or a negative code with @err saying why
 * and *ret_terminal set when the workload itself is at fault. */
static int start_replica(struct op_runtime *rt, const struct op_service *s, const struct flash_spec *spec,
			 unsigned int idx, unsigned int restarts, struct replica **ret, bool *ret_terminal, char *err,
			 size_t err_size)
{
	struct replica *rp = calloc(1, sizeof(*rp));
	char *dir = NULL, *rootfs = NULL, *netns = NULL, *resolv = NULL, *resolv_path = NULL, *config = NULL,
	     *config_path = NULL, *logp = NULL, **entry = NULL, **ienv = NULL, *volume = NULL, *pidf = NULL, cg[256],
	     status[32];
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, r;
	size_t config_len = 0;
	uint64_t rootfs_bytes = 0, volume_bytes = 0;

	op_storage_split((uint64_t)flash_spec_ephemeral_storage_gib(spec) << 30, s->image_bytes, rt->persistence,
			 &rootfs_bytes, &volume_bytes);

	*ret_terminal = false;
	if (!rp)
		return -ENOMEM;
	rp->sb.pidfd = -1;
	snprintf(rp->svc, sizeof(rp->svc), "%s", s->id);
	rp->gen = s->generation;
	rp->idx = idx;
	rp->restarts = restarts;
	/* Unique across restarts of the operator: a failed start's teardown
	 * may still run while its successor starts. */
	snprintf(rp->id, sizeof(rp->id), "%s-g%" PRIu64 "-%u-%" PRIx64, s->id, s->generation, idx, rt->seq++);
	if (flash_spec_port_count(spec) > 0) {
		rp->probe_port = flash_spec_port_container_port(spec, 0);
		rp->probe_proto = flash_spec_port_protocol(spec, 0) == FLASH_SPEC_PROTOCOL_UDP ? IPPROTO_UDP : IPPROTO_TCP;
	}
	dir = replica_dir(rt, rp->id);
	rootfs = dir ? path_join(dir, "rootfs") : NULL;
	netns = dir ? path_join(dir, "netns") : NULL;
	resolv_path = dir ? path_join(dir, "resolv.conf") : NULL;
	config_path = dir ? path_join(dir, "config.json") : NULL;
	logp = log_path(rt, s->id, idx);
	if (!dir || !rootfs || !netns || !resolv_path || !config_path || !logp) {
		r = -ENOMEM;
		goto fail;
	}
	r = util_mkdir_p(dir, 0700);
	if (r == 0) {
		char *ld = strdup(logp);

		if (!ld)
			r = -ENOMEM;
		else {
			*strrchr(ld, '/') = '\0';
			r = util_mkdir_p(ld, 0700);
			free(ld);
		}
	}
	if (r < 0) {
		snprintf(err, err_size, "%s: %s", dir, strerror(-r));
		goto fail;
	}
	/* Recorded first: a crash from here on leaves something to remove. */
	r = save_replica(rt, rp);
	if (r < 0) {
		snprintf(err, err_size, "recording the replica: %s", strerror(-r));
		goto fail;
	}
	r = prepare_rootfs(rt, s->image_pinned, rootfs_bytes, rootfs, &entry, &ienv, ret_terminal, err, err_size);
	if (r < 0)
		goto fail;
	if (volume_bytes) {
		r = root_volume(rt, s->id, volume_bytes, &volume, err, err_size);
		if (r < 0)
			goto fail;
	}
	{
		const char *prog = flash_spec_command_count(spec) ? flash_spec_command(spec, 0) : entry ? entry[0] : NULL;

		if (!prog) {
			snprintf(err, err_size, "neither the spec nor the image names a command");
			*ret_terminal = true;
			r = -ENOENT;
			goto fail;
		}
		if (!program_present(rootfs, prog)) {
			snprintf(err, err_size, "the image has no executable %s", prog);
			*ret_terminal = true;
			r = -ENOENT;
			goto fail;
		}
	}
	r = op_bundle_resolv_conf(rt->dns, rt->host_resolv, &resolv);
	if (r == 0)
		r = util_write_file_atomic(resolv_path, resolv, strlen(resolv), 0644);
	if (r < 0) {
		snprintf(err, err_size, "resolv.conf: %s", r == -ENOENT ? "no usable nameserver (set dns)" : strerror(-r));
		goto fail;
	}
	r = op_netns_create(netns);
	if (r < 0) {
		snprintf(err, err_size, "network namespace %s: %s", netns, strerror(-r));
		goto fail;
	}
	r = cni_exec(rt, "ADD", rp, s->org, netns, rp->address, sizeof(rp->address), err, err_size);
	if (r < 0)
		goto fail;
	snprintf(cg, sizeof(cg), "%s/%s", rt->cgroup_parent, rp->id);
	struct op_bundle_params bp = {
		.spec = spec,
		.entrypoint = (const char *const *)entry,
		.image_env = (const char *const *)ienv,
		.hostname = s->name,
		.netns_path = netns,
		.cgroups_path = cg,
		.resolv_conf = resolv_path,
		.root_volume = volume,
	};
	r = op_bundle_config(&bp, &config, &config_len);
	if (r == 0)
		r = util_write_file_atomic(config_path, config, config_len, 0600);
	if (r < 0) {
		snprintf(err, err_size, "config.json: %s", strerror(-r));
		goto fail;
	}
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(err, err_size, "pipes: %s", strerror(-r));
		goto fail;
	}
	/* The sandbox's pid from --pid-file, not a `runsc state` afterwards
	 * (one more runsc run: 50-80 ms measured). */
	pidf = path_join(dir, "sandbox.pid");
	if (!pidf) {
		r = -ENOMEM;
		goto fail;
	}
	/* Before the sandbox exists nothing in the replica's netns is bound,
	 * and its kernel answers the probe's datagram with a port-unreachable
	 * over the same path (the datapath, the policy, back to the node):
	 * the evidence that later silence is a listener (runtime-probe.c). */
	if (rp->probe_proto == IPPROTO_UDP)
		(void)op_probe_udp_ready(&rp->udp, op_probe(rp->address, rp->probe_port, IPPROTO_UDP, PRESTART_PROBE_MS));
	/* One `runsc run --detach`, not create + start: one runsc process
	 * less (100-250 ms measured). */
	r = op_log_shim_start(out[0], errp[0], logp, rt->log_max);
	if (r == 0)
		r = runsc(rt, (const char *const[]){ "run", "--detach", "--bundle", dir, "--pid-file", pidf, rp->id, NULL },
			  out[1], errp[1], true, 60000, NULL, err, err_size);
	close(out[1]);
	close(errp[1]);
	out[1] = errp[1] = -1;
	if (r < 0)
		goto fail;
	{
		pid_t pid = pid_file_read(pidf);

		if (pid <= 0 && runsc_state(rt, rp->id, status, sizeof(status), &pid) < 0)
			pid = 0;
		if (pid <= 0 || op_sandbox_identify(pid, &rp->sb) < 0)
			rp->sb = (struct op_sandbox){ .pid = pid, .pidfd = -1 };
	}
	r = save_replica(rt, rp);
	if (r < 0) {
		snprintf(err, err_size, "recording the replica: %s", strerror(-r));
		goto fail;
	}
	rp->state = R_STARTING;
	rp->started_ms = mono_ms();
	*ret = rp;
	rp = NULL;
	r = 0;
	goto out;
fail:
	retire(rt, rp);
	rp = NULL;
out:
	for (int *fd = (int[]){ out[0], out[1], errp[0], errp[1] }, k = 0; k < 4; k++)
		if (fd[k] >= 0)
			close(fd[k]);
	op_strv_free(entry);
	op_strv_free(ienv);
	free(dir);
	free(rootfs);
	free(netns);
	free(resolv);
	free(resolv_path);
	free(config);
	free(config_path);
	free(logp);
	free(volume);
	free(pidf);
	free(rp);
	return r;
}

/* ---------------------------------------------------------------- probes */

/* Does the replica's first port answer (runtime-probe.c)?  TCP: a
 * connect completes.  UDP: a datagram comes back, or the port, seen
 * closed before (port-unreachable), now swallows datagrams. */
static bool probe(struct replica *rp)
{
	enum op_probe_outcome o;

	if (!rp->probe_proto)
		return true;
	o = op_probe(rp->address, rp->probe_port, rp->probe_proto, PROBE_MS);
	rp->last_probe = o;
	rp->probed = true;
	if (rp->probe_proto == IPPROTO_UDP)
		return op_probe_udp_ready(&rp->udp, o);
	return o == OP_PROBE_ANSWERED;
}

/* Why a starting replica is not ready yet, from its last probe. */
static void probe_message(const struct replica *rp, char *buf, size_t size)
{
	const char *proto = rp->probe_proto == IPPROTO_UDP ? "udp" : "tcp";

	if (rp->probe_proto == IPPROTO_UDP && op_probe_udp_unknown(&rp->udp))
		snprintf(buf, size, "replica %u: port %u/udp answers nothing and was never seen closed: listening unknown, not ready",
			 rp->idx, rp->probe_port);
	else if (rp->last_probe == OP_PROBE_REFUSED)
		snprintf(buf, size, "replica %u: port %u/%s refused (%s): nothing listens on it yet", rp->idx, rp->probe_port,
			 proto, rp->probe_proto == IPPROTO_UDP ? "ICMP port-unreachable" : "RST");
	else if (rp->last_probe == OP_PROBE_SILENT && rp->probe_proto == IPPROTO_TCP)
		snprintf(buf, size, "replica %u: port %u/tcp: no answer to a connect yet", rp->idx, rp->probe_port);
}

/* Has the replica's sandbox exited? */
static bool exited(struct replica *rp)
{
	if (rp->sb.pidfd >= 0) {
		struct pollfd p = { .fd = rp->sb.pidfd, .events = POLLIN };

		return poll(&p, 1, 0) > 0;
	}
	return rp->sb.pid <= 0 || (kill(rp->sb.pid, 0) < 0 && errno == ESRCH);
}

/* ---------------------------------------------------------------- logs */

/* The last @max bytes of @path (whole lines). */
static char *tail_of(const char *path, size_t max)
{
	char *text = NULL;
	size_t len = 0;

	if (util_read_file(path, 16u << 20, &text, &len) < 0 || len == 0) {
		free(text);
		return NULL;
	}
	if (len > max) {
		char *start = text + len - max, *nl = strchr(start, '\n');

		if (nl)
			start = nl + 1;
		memmove(text, start, strlen(start) + 1);
	}
	return text;
}

/* "oom_kill N" of the replica's memory cgroup (cgroup v1), or its
 * cgroup2 memory.events: true when the kernel killed it for memory. */
static bool oom_killed(struct op_runtime *rt, const struct replica *rp)
{
	static const char *const files[] = { "/sys/fs/cgroup/memory", "memory.oom_control", "/sys/fs/cgroup", "memory.events" };
	bool oom = false;

	for (size_t i = 0; i < ARRAY_SIZE(files) && !oom; i += 2) {
		char path[512], *text = NULL, *k;

		snprintf(path, sizeof(path), "%s%s/%s/%s", files[i], rt->cgroup_parent, rp->id, files[i + 1]);
		if (util_read_file(path, 1 << 16, &text, NULL) == 0 && (k = strstr(text, "oom_kill ")))
			oom = strtoul(k + 9, NULL, 10) > 0;
		free(text);
	}
	return oom;
}

struct log_line {
	char *text;      /* "IDX TIME STREAM LINE" */
	size_t len, seq; /* seq: the order read, for a stable sort */
};

/* Oldest first; lines of the same microsecond keep the order read. */
static int log_line_cmp(const void *a, const void *b)
{
	const struct log_line *x = a, *y = b;
	const char *tx = strchr(x->text, ' '), *ty = strchr(y->text, ' ');
	int c = strncmp(tx ? tx + 1 : "", ty ? ty + 1 : "", OP_LOG_TIME_STRLEN - 1);

	return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Appends the lines of one log file at or after @since_text ("" : all). */
static int logs_read_file(const char *path, unsigned int idx, const char *since_text, struct log_line **lines,
			  size_t *n, size_t *cap)
{
	char *text = NULL;
	size_t tl = 0;

	if (util_read_file(path, 16u << 20, &text, &tl) < 0)
		return 0;
	for (char *line = text, *next; line && *line; line = next) {
		struct log_line *l;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* Lines start with the fixed-width time: compare text. */
		if (since_text[0] && strncmp(line, since_text, OP_LOG_TIME_STRLEN - 1) < 0)
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			struct log_line *g = realloc(*lines, nc * sizeof(**lines));

			if (!g) {
				free(text);
				return -ENOMEM;
			}
			*lines = g;
			*cap = nc;
		}
		l = &(*lines)[*n];
		if (asprintf(&l->text, "%u %s", idx, line) < 0) {
			free(text);
			return -ENOMEM;
		}
		l->len = strlen(l->text);
		l->seq = (*n)++;
	}
	free(text);
	return 0;
}

int op_runtime_logs(struct op_runtime *rt, const char *id, int index, int64_t since, size_t max_bytes, char **ret,
		    size_t *ret_len)
{
	struct log_line *lines = NULL;
	size_t n = 0, cap = 0, len = 0, first = 0;
	char *dirp = NULL, *out = NULL, since_text[OP_LOG_TIME_STRLEN] = "";
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (!rt || !id || !names_service_id_valid(id) || !ret)
		return -EINVAL;
	if (asprintf(&dirp, "%s/logs/%s", rt->dir, id) < 0)
		return -ENOMEM;
	d = opendir(dirp);
	if (!d) {
		free(dirp);
		return -ENOENT;
	}
	if (since > 0)
		op_log_time(since, since_text);
	while (r == 0 && (de = readdir(d))) {
		char *end = NULL, path[4096];
		unsigned long v = strtoul(de->d_name, &end, 10);

		if (end == de->d_name || strcmp(end, ".log") != 0 || v >= IDX_MAX)
			continue;
		if (index >= 0 && (unsigned long)index != v)
			continue;
		/* The rotated file holds the older lines. */
		snprintf(path, sizeof(path), "%s/%s.1", dirp, de->d_name);
		r = logs_read_file(path, (unsigned int)v, since_text, &lines, &n, &cap);
		snprintf(path, sizeof(path), "%s/%s", dirp, de->d_name);
		if (r == 0)
			r = logs_read_file(path, (unsigned int)v, since_text, &lines, &n, &cap);
	}
	closedir(d);
	free(dirp);
	if (r == 0 && n > 1)
		qsort(lines, n, sizeof(*lines), log_line_cmp);
	/* The newest lines that fit in @max_bytes. */
	for (first = n; r == 0 && first > 0 && (!max_bytes || len + lines[first - 1].len + 1 <= max_bytes); first--)
		len += lines[first - 1].len + 1;
	if (r == 0 && !(out = malloc(len + 1)))
		r = -ENOMEM;
	if (r == 0) {
		size_t o = 0;

		for (size_t i = first; i < n; i++) {
			memcpy(out + o, lines[i].text, lines[i].len);
			o += lines[i].len;
			out[o++] = '\n';
		}
		out[o] = '\0';
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	if (r < 0)
		return r;
	*ret = out;
	if (ret_len)
		*ret_len = len;
	return 0;
}

/* ---------------------------------------------------------------- status */

static struct svc_state *svc_state_get(struct op_runtime *rt, const char *id)
{
	struct svc_state *s;

	for (s = rt->svcs; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->id, sizeof(s->id), "%s", id);
	pthread_mutex_lock(&rt->lock);
	s->next = rt->svcs;
	rt->svcs = s;
	pthread_mutex_unlock(&rt->lock);
	return s;
}

int op_runtime_status(struct op_runtime *rt, const char *id, struct op_service_status *ret)
{
	int r = -ENOENT;

	if (!rt || !id || !ret)
		return -EINVAL;
	pthread_mutex_lock(&rt->lock);
	for (struct svc_state *s = rt->svcs; s; s = s->next)
		if (strcmp(s->id, id) == 0 && s->status.phase[0]) {
			*ret = s->status;
			r = 0;
		}
	pthread_mutex_unlock(&rt->lock);
	return r;
}

int op_runtime_exec_target(struct op_runtime *rt, const char *id, int index, struct op_exec_target *ret)
{
	const struct op_replica_view *hit = NULL;
	struct op_exec_target t = { 0 };
	bool seen = false;
	int r = -ENOENT;

	if (!rt || !id || !ret)
		return -EINVAL;
	pthread_mutex_lock(&rt->lock);
	for (struct svc_state *s = rt->svcs; s && !hit; s = s->next) {
		if (strcmp(s->id, id) != 0 || !s->status.phase[0])
			continue;
		for (size_t i = 0; i < s->status.n_replicas && !hit; i++) {
			const struct op_replica_view *v = &s->status.replicas[i];

			if (index >= 0 && v->index != (unsigned int)index)
				continue;
			seen = true;
			if (strcmp(v->state, "ready") == 0)
				hit = v;
		}
		if (hit) {
			t.replica = hit->index;
			snprintf(t.container, sizeof(t.container), "%s", hit->container);
		}
		r = hit ? 0 : seen || index < 0 ? -EAGAIN : -ENOENT;
	}
	pthread_mutex_unlock(&rt->lock);
	if (r < 0)
		return r;
	snprintf(t.runsc, sizeof(t.runsc), "%s", rt->runsc);
	snprintf(t.root, sizeof(t.root), "%s", rt->runsc_root);
	snprintf(t.bundle, sizeof(t.bundle), "%s/replicas/%s", rt->dir, t.container);
	*ret = t;
	return 0;
}

static void fail_service(struct op_runtime *rt, struct svc_state *ss, const struct replica *rp, uint64_t gen,
			 const char *reason)
{
	char *logp = rp ? log_path(rt, rp->svc, rp->idx) : NULL, *last = logp ? tail_of(logp, LAST_LINES_BYTES) : NULL;

	ss->failed_gen = gen;
	snprintf(ss->message, sizeof(ss->message), "%s%s%s", reason, last ? "; last log lines:\n" : "", last ? last : "");
	free(last);
	free(logp);
}

/* ---------------------------------------------------------------- the loop */

/* With autoscaling: the autoscaler's count within the spec's bounds;
 * before its first, `replicas` or what this generation already runs
 * (adopted by a restarted operator), whichever is more. */
static unsigned int autoscaled_want(struct op_runtime *rt, struct svc_state *ss, const struct op_service *s,
				    const struct flash_spec *spec)
{
	unsigned int lo = flash_spec_autoscaling_min_replicas(spec), hi = flash_spec_autoscaling_max_replicas(spec), n;

	pthread_mutex_lock(&rt->lock);
	n = ss->desired;
	pthread_mutex_unlock(&rt->lock);
	if (!n) {
		n = flash_spec_replicas(spec);
		for (struct replica *rp = rt->replicas; rp; rp = rp->next)
			if (strcmp(rp->svc, s->id) == 0 && rp->gen == s->generation && rp->idx + 1 > n)
				n = rp->idx + 1;
	}
	return n < lo ? lo : n > hi ? hi : n;
}

int op_runtime_set_desired(struct op_runtime *rt, const char *id, unsigned int n)
{
	int r = -ENOENT;

	if (!rt || !id || n == 0 || n > IDX_MAX)
		return -EINVAL;
	pthread_mutex_lock(&rt->lock);
	for (struct svc_state *s = rt->svcs; s; s = s->next)
		if (strcmp(s->id, id) == 0) {
			s->desired = n;
			r = 0;
		}
	pthread_mutex_unlock(&rt->lock);
	if (r == 0)
		op_runtime_kick(rt);
	return r;
}

static void reconcile_service(struct op_runtime *rt, const struct op_service *s)
{
	struct svc_state *ss = svc_state_get(rt, s->id);
	struct flash_spec *spec = NULL;
	struct op_service_status st = { 0 };
	unsigned int want, ready = 0, restarts = 0;
	bool have[IDX_MAX] = { false }, all_ready, suspended, net_ok;
	char suspend_msg[512] = "";
	int64_t now = mono_ms();
	char err[1024];

	if (!ss)
		return;
	ss->seen = true;
	if (flash_spec_parse(s->spec, strlen(s->spec), NULL, &spec, NULL) < 0) {
		fail_service(rt, ss, NULL, s->generation, "the stored spec no longer parses");
		goto publish;
	}
	want = flash_spec_has_autoscaling(spec) ? autoscaled_want(rt, ss, s, spec) : flash_spec_replicas(spec);
	if (want > IDX_MAX)
		want = IDX_MAX;
	suspended = rt->suspended &&
		    rt->suspended(rt->services_ctx, s, spec, suspend_msg, sizeof(suspend_msg)) == -EDQUOT;
	if (suspended)
		want = 0; /* stopped until the limit lifts (Monday 00:00 UTC) */
	if (ss->failed_gen && ss->failed_gen != s->generation)
		ss->failed_gen = 0, ss->message[0] = '\0';
	if (ss->transient_gen != s->generation)
		ss->transient_gen = s->generation, ss->transient_failures = 0;

	/* Deaths, probes, scale-down. */
	for (struct replica **pp = &rt->replicas, *rp; (rp = *pp);) {
		if (strcmp(rp->svc, s->id) != 0) {
			pp = &rp->next;
			continue;
		}
		if (exited(rp)) {
			bool oom = oom_killed(rt, rp);
			char why[256];

			snprintf(why, sizeof(why), "replica %u exited%s", rp->idx, oom ? ": killed for memory (OOM)" : "");
			if (!rp->ever_ready && rp->gen == s->generation) {
				char reason[512];

				snprintf(reason, sizeof(reason), "%s before it was ready", why);
				fail_service(rt, ss, rp, s->generation, reason);
			} else if (rp->idx < IDX_MAX) {
				unsigned int *b = &ss->backoff_ms[rp->idx];

				if (rp->ready_ms && now - rp->ready_ms >= BACKOFF_RESET_MS)
					*b = 0;
				*b = *b ? (*b * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *b * 2) : BACKOFF_FIRST_MS;
				ss->not_before_ms[rp->idx] = now + *b;
				ss->restarts[rp->idx] = rp->restarts + 1;
			}
			*pp = rp->next;
			retire(rt, rp);
			continue;
		}
		if (rp->gen == s->generation && flash_spec_port_count(spec) > 0 && !rp->probe_port) {
			rp->probe_port = flash_spec_port_container_port(spec, 0);
			rp->probe_proto = flash_spec_port_protocol(spec, 0) == FLASH_SPEC_PROTOCOL_UDP ? IPPROTO_UDP : IPPROTO_TCP;
		}
		if (rp->gen == s->generation && rp->idx >= want) {
			*pp = rp->next;
			retire(rt, rp);
			continue;
		}
		if (rp->state == R_STARTING && probe(rp)) {
			rp->state = R_READY;
			rp->ready_ms = now;
			if (!rp->ever_ready) {
				rp->ever_ready = true;
				save_replica(rt, rp);
			}
		} else if (rp->state == R_STARTING && rp->probed && rp->gen == s->generation) {
			probe_message(rp, ss->message, sizeof(ss->message));
		}
		pp = &rp->next;
	}

	/* The agent first (runtime-net.c): isolation before any replica
	 * starts, the ready replicas as backends. */
	{
		const char *addrs[IDX_MAX * 2];
		size_t n_addrs = 0;

		for (struct replica *rp = rt->replicas; rp && n_addrs < ARRAY_SIZE(addrs); rp = rp->next)
			if (strcmp(rp->svc, s->id) == 0 && rp->state == R_READY && rp->address[0])
				addrs[n_addrs++] = rp->address;
		net_ok = op_runtime_net_service(rt->net, s, spec, addrs, n_addrs, err, sizeof(err)) == 0;
		if (!net_ok)
			snprintf(ss->message, sizeof(ss->message), "network: %s (retrying)", err);
	}
	/* Starts: one missing replica per pass, so a pass stays short. */
	for (struct replica *rp = rt->replicas; rp; rp = rp->next)
		if (strcmp(rp->svc, s->id) == 0 && rp->gen == s->generation && rp->idx < IDX_MAX)
			have[rp->idx] = true;
	for (unsigned int i = 0; i < want && net_ok && ss->failed_gen != s->generation; i++) {
		struct replica *nrp = NULL;
		bool terminal = false;

		if (have[i] || now < ss->not_before_ms[i])
			continue;
		int r = start_replica(rt, s, spec, i, ss->restarts[i], &nrp, &terminal, err, sizeof(err));
		if (r == 0) {
			nrp->next = rt->replicas;
			rt->replicas = nrp;
			have[i] = true;
		} else if (terminal) {
			char reason[1200];

			snprintf(reason, sizeof(reason), "replica %u cannot start: %s", i, err);
			fail_service(rt, ss, NULL, s->generation, reason);
		} else {
			unsigned int *b = &ss->backoff_ms[i];

			/* Transient (agent, CNI, runsc, registry): retried for as
			 * long as the cause lasts, as a kubelet does, the delay
			 * capped; the attempts are counted in the message. */
			*b = *b ? (*b * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *b * 2) : BACKOFF_FIRST_MS;
			ss->not_before_ms[i] = now + *b;
			ss->transient_failures++;
			snprintf(ss->message, sizeof(ss->message), "replica %u: %s (attempt %u, retrying in %u ms)", i, err,
				 ss->transient_failures, *b);
		}
		break;
	}

	/* Readiness of this generation; the old one retires once it is. */
	for (struct replica *rp = rt->replicas; rp; rp = rp->next)
		if (strcmp(rp->svc, s->id) == 0 && rp->gen == s->generation && rp->state == R_READY)
			ready++;
	all_ready = ready >= want;
	if (all_ready) {
		for (struct replica **pp = &rt->replicas, *rp; (rp = *pp);) {
			if (strcmp(rp->svc, s->id) == 0 && rp->gen != s->generation) {
				*pp = rp->next;
				retire(rt, rp);
				continue;
			}
			pp = &rp->next;
		}
	}
	/* The meter counts ready replicas of the service (any generation:
	 * during an update both run and both are billed). */
	{
		uint32_t billed = 0;

		for (struct replica *rp = rt->replicas; rp; rp = rp->next)
			if (strcmp(rp->svc, s->id) == 0 && rp->state == R_READY)
				billed++;
		if (rt->observe && (!ss->observed || ss->observed_ready != billed) &&
		    rt->observe(rt->services_ctx, s, spec, billed) >= 0) {
			ss->observed = true;
			ss->observed_ready = billed;
		}
	}
	for (unsigned int i = 0; i < IDX_MAX; i++)
		restarts += ss->restarts[i];
	st.wanted = want;
	st.ready_replicas = ready;
	st.restarts = restarts;
	st.ready = all_ready && !suspended && ss->failed_gen != s->generation; /* suspended: stopped, not done */
	snprintf(st.phase, sizeof(st.phase), "%s",
		 ss->failed_gen == s->generation ? "failed" : suspended ? "suspended" : want == 0 ? "stopped" :
		 all_ready ? "ready" : "provisioning");
	if (suspended && ss->failed_gen != s->generation)
		snprintf(st.message, sizeof(st.message), "%s", suspend_msg);
	else if (ss->failed_gen == s->generation || !all_ready)
		snprintf(st.message, sizeof(st.message), "%s", ss->message);
	else
		snprintf(st.message, sizeof(st.message), "%u of %u replicas ready", ready, want);
	for (struct replica *rp = rt->replicas; rp && st.n_replicas < OP_STATUS_REPLICAS_SHOWN; rp = rp->next) {
		struct op_replica_view *v;

		if (strcmp(rp->svc, s->id) != 0)
			continue;
		v = &st.replicas[st.n_replicas++];
		v->index = rp->idx;
		v->generation = rp->gen;
		v->restarts = rp->restarts;
		snprintf(v->address, sizeof(v->address), "%s", rp->address);
		snprintf(v->container, sizeof(v->container), "%s", rp->id);
		snprintf(v->state, sizeof(v->state), "%s",
			 rp->gen != s->generation ? "retiring" : rp->state == R_READY ? "ready" : "starting");
	}
publish:
	if (!st.phase[0]) {
		snprintf(st.phase, sizeof(st.phase), "failed");
		snprintf(st.message, sizeof(st.message), "%s", ss->message);
	}
	pthread_mutex_lock(&rt->lock);
	ss->status = st;
	pthread_mutex_unlock(&rt->lock);
	flash_spec_free(spec);
}

/* What a deleted service leaves: its logs and its /root volume. */
static void service_files_remove(struct op_runtime *rt, const char *id)
{
	char *d = NULL;

	if (asprintf(&d, "%s/logs/%s", rt->dir, id) >= 0)
		op_remove_tree(d);
	free(d);
	volume_remove(rt, id);
}

/* The first pass after a start: logs and volumes of services deleted
 * while no operator ran. */
static void sweep(struct op_runtime *rt, struct op_service **list, size_t n)
{
	static const char *const subdirs[] = { "logs", "volumes" };

	for (size_t k = 0; k < ARRAY_SIZE(subdirs); k++) {
		char *p = path_join(rt->dir, subdirs[k]);
		DIR *d = p ? opendir(p) : NULL;
		struct dirent *de;

		while (d && (de = readdir(d))) {
			bool live = false;

			if (!names_service_id_valid(de->d_name))
				continue;
			for (size_t i = 0; i < n && !live; i++)
				live = strcmp(list[i]->id, de->d_name) == 0;
			if (!live)
				service_files_remove(rt, de->d_name);
		}
		if (d)
			closedir(d);
		free(p);
	}
}

static void reconcile(struct op_runtime *rt)
{
	struct op_service **list = NULL;
	size_t n = 0;

	if (rt->services(rt->services_ctx, &list, &n) < 0)
		return; /* the store is busy: next pass */
	for (struct svc_state *s = rt->svcs; s; s = s->next)
		s->seen = false;
	for (size_t i = 0; i < n; i++)
		if (list[i]->image_pinned && list[i]->image_pinned[0])
			reconcile_service(rt, list[i]);
	{
		const char **live = calloc(n ? n : 1, sizeof(*live));

		for (size_t i = 0; live && i < n; i++)
			live[i] = list[i]->id;
		if (live)
			op_runtime_net_prune(rt->net, live, n); /* deleted services withdrawn */
		/* Templates of images no live service runs go. */
		for (size_t i = 0; live && i < n; i++)
			live[i] = list[i]->image_pinned;
		if (live)
			op_templates_prune(rt->templates, live, n, mono_ms(), TEMPLATE_KEEP_MS);
		free(live);
	}
	/* Replicas of deleted services go; so does their status and logs. */
	for (struct replica **pp = &rt->replicas, *rp; (rp = *pp);) {
		struct svc_state *s;

		for (s = rt->svcs; s && strcmp(s->id, rp->svc) != 0; s = s->next)
			;
		if (!s || !s->seen) {
			*pp = rp->next;
			retire(rt, rp);
			continue;
		}
		pp = &rp->next;
	}
	struct svc_state *gone = NULL;

	pthread_mutex_lock(&rt->lock);
	for (struct svc_state **pp = &rt->svcs, *s; (s = *pp);) {
		if (!s->seen) {
			*pp = s->next;
			s->next = gone;
			gone = s;
			continue;
		}
		pp = &s->next;
	}
	pthread_mutex_unlock(&rt->lock);
	/* Files are removed outside the lock. */
	while (gone) {
		struct svc_state *s = gone;

		gone = s->next;
		service_files_remove(rt, s->id);
		free(s);
	}
	if (rt->sweep) {
		sweep(rt, list, n);
		rt->sweep = false;
	}
	op_service_list_free(list, n);
}

static void *loop(void *arg)
{
	struct op_runtime *rt = arg;

	for (;;) {
		struct timespec ts;

		pthread_mutex_lock(&rt->lock);
		if (rt->stopping) {
			pthread_mutex_unlock(&rt->lock);
			break;
		}
		rt->kicked = false;
		pthread_mutex_unlock(&rt->lock);
		unsigned int wait_ms = rt->interval_ms;

		reconcile(rt);
		/* A starting replica is probed again soon: readiness is seen
		 * within a probe, not a period. */
		for (struct replica *rp = rt->replicas; rp; rp = rp->next)
			if (rp->state == R_STARTING && mono_ms() - rp->started_ms < FAST_FOR_MS && wait_ms > FAST_PASS_MS)
				wait_ms = FAST_PASS_MS;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += wait_ms / 1000;
		ts.tv_nsec += (long)(wait_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&rt->lock);
		while (!rt->stopping && !rt->kicked)
			if (pthread_cond_timedwait(&rt->wake, &rt->lock, &ts) != 0)
				break;
		pthread_mutex_unlock(&rt->lock);
	}
	return NULL;
}

/* ---------------------------------------------------------------- adoption */

/* Sandboxes runsc knows (its --root is the runtime's own) without a
 * replica directory: left by an operator killed between runsc create and
 * its record, or by a runsc that finished after it.  Removed. */
static void remove_orphans(struct op_runtime *rt)
{
	char *out = NULL, err[512], *save = NULL;

	if (runsc(rt, (const char *const[]){ "list", "-quiet", NULL }, -1, -1, false, 10000, &out, err, sizeof(err)) < 0)
		return;
	for (char *id = strtok_r(out, "\n", &save); id; id = strtok_r(NULL, "\n", &save)) {
		char *dir = replica_dir(rt, id);
		struct replica *rp;
		struct stat st;

		if (!dir || strlen(id) >= RID_MAX || lstat(dir, &st) == 0 || errno != ENOENT ||
		    !(rp = calloc(1, sizeof(*rp)))) {
			free(dir);
			continue;
		}
		free(dir);
		rp->sb.pidfd = -1;
		snprintf(rp->id, sizeof(rp->id), "%s", id);
		retire(rt, rp);
	}
	free(out);
}

/* Reads every DIR/replicas/ID: a replica runsc still runs is adopted as it is;
 * anything else is removed. */
static void adopt(struct op_runtime *rt)
{
	char *dirp = path_join(rt->dir, "replicas");
	DIR *d = dirp ? opendir(dirp) : NULL;
	struct dirent *de;

	while (d && (de = readdir(d))) {
		struct replica *rp;
		struct op_replica_record rec;
		struct op_sandbox now;
		char path[4096], *text = NULL, status[32] = "";
		size_t len = 0;
		pid_t pid = 0;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= RID_MAX)
			continue;
		rp = calloc(1, sizeof(*rp));
		if (!rp)
			break;
		rp->sb.pidfd = -1;
		snprintf(rp->id, sizeof(rp->id), "%s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s/replica.json", dirp, de->d_name);
		if (util_read_file(path, 1 << 16, &text, &len) == 0 &&
		    op_replica_record_parse(text, len, IDX_MAX, &rec) == 0) {
			if (rec.service[0]) {
				snprintf(rp->svc, sizeof(rp->svc), "%s", rec.service);
				rp->gen = rec.generation;
				rp->idx = rec.index;
				rp->restarts = rec.restarts;
				snprintf(rp->address, sizeof(rp->address), "%s", rec.address);
				rp->ever_ready = rec.ever_ready;
				rp->udp.closed_seen = rec.udp_closed_seen;
			}
			/* The sandbox recorded at its start: still that process
			 * (same start time), it is what to kill when runsc no
			 * longer knows it. */
			if (rec.sandbox_pid && op_sandbox_identify((pid_t)rec.sandbox_pid, &now) == 0) {
				if (now.start_time == rec.sandbox_start)
					rp->sb = now;
				else
					op_sandbox_close(&now); /* the pid is another process's now */
			}
		}
		free(text);
		if (rp->svc[0] && rp->address[0] && runsc_state(rt, rp->id, status, sizeof(status), &pid) == 0 &&
		    strcmp(status, "running") == 0) {
			struct svc_state *ss = svc_state_get(rt, rp->svc);

			if (pid > 0 && pid != rp->sb.pid) {
				op_sandbox_close(&rp->sb);
				if (op_sandbox_identify(pid, &rp->sb) < 0)
					rp->sb = (struct op_sandbox){ .pid = pid, .pidfd = -1 };
				(void)save_replica(rt, rp); /* replicas of an older operator: recorded now */
			}
			rp->state = R_STARTING; /* probed again before it counts */
			rp->started_ms = mono_ms();
			if (ss && rp->idx < IDX_MAX)
				ss->restarts[rp->idx] = rp->restarts;
			rp->next = rt->replicas;
			rt->replicas = rp;
		} else {
			retire(rt, rp);
		}
	}
	if (d)
		closedir(d);
	free(dirp);
	remove_orphans(rt);
	/* The probe port comes from the spec on the first pass
	 * (reconcile_service). */
}

/* ---------------------------------------------------------------- lifecycle */

static bool executable(const char *path)
{
	return path && access(path, X_OK) == 0;
}

static char *find_in_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy, *save = NULL, *out = NULL;

	if (strchr(name, '/'))
		return strdup(name);
	copy = strdup(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !out; dir = strtok_r(NULL, ":", &save)) {
		char *c = path_join(dir, name);

		if (executable(c))
			out = c;
		else
			free(c);
	}
	free(copy);
	return out;
}

void op_runtime_kick(struct op_runtime *rt)
{
	if (!rt)
		return;
	pthread_mutex_lock(&rt->lock);
	rt->kicked = true;
	pthread_cond_signal(&rt->wake);
	pthread_mutex_unlock(&rt->lock);
}

int op_runtime_start(const struct op_runtime_opts *opts, struct op_runtime **ret, char *err, size_t err_size)
{
	struct op_runtime *rt;
	int r;

	if (!opts || !OPTS_VALID(opts, op_runtime_opts) || !opts->dir || opts->dir[0] != '/' || !opts->cni_bin_dir ||
	    !opts->services || !ret) {
		snprintf(err, err_size, "the runtime needs an absolute directory, the CNI bin directory and a service source");
		return -EINVAL;
	}
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	pthread_mutex_init(&rt->lock, NULL);
	pthread_cond_init(&rt->wake, NULL);
	pthread_cond_init(&rt->idle, NULL);
	rt->seq = (uint64_t)time(NULL) << 8;
	rt->dir = strdup(opts->dir);
	rt->runsc = find_in_path(opts->runsc ? opts->runsc : "runsc");
	rt->cni_bin = strdup(opts->cni_bin_dir);
	rt->cni_plugin = path_join(opts->cni_bin_dir, "flowsdn-cni");
	rt->cni_conf = opts->cni_conf ? strdup(opts->cni_conf) : NULL;
	rt->agent_socket = opts->agent_socket ? strdup(opts->agent_socket) : NULL;
	rt->cgroup_parent = strdup(opts->cgroup_parent ? opts->cgroup_parent : OP_RUNTIME_CGROUP_PARENT_DEFAULT);
	rt->dns = opts->dns ? strdup(opts->dns) : NULL;
	rt->host_resolv = opts->host_resolv ? strdup(opts->host_resolv) : NULL;
	rt->runsc_root = path_join(opts->dir, "runsc");
	rt->persistence = opts->persistence;
	rt->sweep = true;
	rt->mkfs = find_in_path(opts->mkfs ? opts->mkfs : "mkfs.ext4");
	for (size_t i = 0; !opts->mkfs && !executable(rt->mkfs) && i < 2; i++) {
		free(rt->mkfs);
		rt->mkfs = strdup(i == 0 ? "/usr/sbin/mkfs.ext4" : "/sbin/mkfs.ext4");
	}
	/* The admission's content store when configured (blobs pulled once). */
	rt->content_store = opts->registry && opts->registry->content_store ? strdup(opts->registry->content_store)
									  : path_join(opts->dir, "images");
	if (opts->registry)
		rt->registry = *opts->registry;
	rt->interval_ms = opts->interval_ms ? opts->interval_ms : 500;
	rt->log_max = opts->log_max_bytes ? opts->log_max_bytes : (1u << 20);
	rt->services = opts->services;
	rt->services_ctx = opts->services_ctx;
	rt->observe = opts->observe;
	rt->suspended = opts->suspended;
	if (!rt->dir || !rt->cni_bin || !rt->cni_plugin || !rt->cgroup_parent || !rt->runsc_root || !rt->content_store ||
	    (opts->cni_conf && !rt->cni_conf) || (opts->agent_socket && !rt->agent_socket) || (opts->dns && !rt->dns) ||
	    (opts->host_resolv && !rt->host_resolv)) {
		r = -ENOMEM;
		goto fail;
	}
	if (!executable(rt->runsc)) {
		snprintf(err, err_size, "%s: runsc not found or not executable", opts->runsc ? opts->runsc : "runsc");
		r = -ENOENT;
		goto fail;
	}
	if (!executable(rt->mkfs)) {
		snprintf(err, err_size, "%s: not found or not executable (e2fsprogs): replicas' root file systems are ext4 images",
			 opts->mkfs ? opts->mkfs : "mkfs.ext4");
		r = -ENOENT;
		goto fail;
	}
	if (!executable(rt->cni_plugin)) {
		snprintf(err, err_size, "%s: not executable (flowsdn-cni install puts it there)", rt->cni_plugin);
		r = -ENOENT;
		goto fail;
	}
	if (rt->agent_socket) {
		/* The agent's API is the runtime's peer (contracts C5): it must
		 * answer before replicas are wired through it. */
		struct agent_client_opts ao = { .socket = rt->agent_socket, .timeout_ms = 5000 };
		struct agent_client_err ae = { 0 };

		r = agent_client_health(&ao, &ae);
		if (r < 0) {
			snprintf(err, err_size, "flowsdn-agent at %s: %s", rt->agent_socket,
				 ae.message[0] ? ae.message : "not healthy");
			goto fail;
		}
	}
	if (rt->cgroup_parent[0] != '/' || strstr(rt->cgroup_parent, "..")) {
		snprintf(err, err_size, "%s: the cgroup parent must be an absolute path without ..", rt->cgroup_parent);
		r = -EINVAL;
		goto fail;
	}
	{
		char *sub[] = { rt->dir, rt->runsc_root, NULL, NULL };
		char *rep = path_join(rt->dir, "replicas"), *logs = path_join(rt->dir, "logs");

		sub[2] = rep;
		r = rep && logs ? 0 : -ENOMEM;
		for (size_t i = 0; r == 0 && sub[i]; i++)
			r = util_mkdir_p(sub[i], 0700);
		if (r == 0)
			r = util_mkdir_p(logs, 0700);
		if (r < 0)
			snprintf(err, err_size, "%s: %s", rt->dir, strerror(-r));
		free(rep);
		free(logs);
		if (r < 0)
			goto fail;
	}
	{
		struct op_net_opts no = { .dir = rt->dir, .agent_socket = rt->agent_socket,
					  .config = OPTS_GET(opts, config, NULL), .policy = OPTS_GET(opts, policy, NULL) };
		char *resolv = NULL;

		if (op_bundle_resolv_conf(rt->dns, rt->host_resolv, &resolv) == 0)
			no.resolv_conf = resolv; /* else no DNS is allowed: replicas fail on resolv.conf anyway */
		r = op_net_new(&no, &rt->net, err, err_size);
		free(resolv);
		if (r == 0 && OPTS_GET(opts, masquerade, false))
			r = op_net_masquerade_start(rt->net, err, err_size);
		if (r < 0)
			goto fail;
	}
	{
		char *td = path_join(rt->dir, "templates");

		r = td ? op_templates_new(td, &rt->templates) : -ENOMEM;
		if (r < 0)
			snprintf(err, err_size, "%s: %s", td ? td : rt->dir, strerror(-r));
		free(td);
		if (r < 0)
			goto fail;
	}
	adopt(rt);
	if (pthread_create(&rt->thread, NULL, loop, rt) != 0) {
		r = -EAGAIN;
		snprintf(err, err_size, "cannot start the reconcile thread");
		goto fail;
	}
	rt->thread_started = true;
	*ret = rt;
	return 0;
fail:
	op_runtime_stop(rt);
	return r;
}

void op_runtime_stop(struct op_runtime *rt)
{
	if (!rt)
		return;
	if (rt->thread_started) {
		pthread_mutex_lock(&rt->lock);
		rt->stopping = true;
		pthread_cond_signal(&rt->wake);
		pthread_mutex_unlock(&rt->lock);
		pthread_join(rt->thread, NULL);
	}
	pthread_mutex_lock(&rt->lock);
	while (rt->teardowns > 0)
		pthread_cond_wait(&rt->idle, &rt->lock);
	pthread_mutex_unlock(&rt->lock);
	/* Replicas keep running: the next operator adopts them. */
	while (rt->replicas) {
		struct replica *rp = rt->replicas;

		rt->replicas = rp->next;
		op_sandbox_close(&rp->sb);
		free(rp);
	}
	while (rt->svcs) {
		struct svc_state *s = rt->svcs;

		rt->svcs = s->next;
		free(s);
	}
	{
		char err[512];

		op_net_masquerade_stop(rt->net, err, sizeof(err)); /* nothing to report it to */
	}
	op_net_free(rt->net);
	op_templates_free(rt->templates);
	free(rt->dir);
	free(rt->runsc);
	free(rt->cni_bin);
	free(rt->cni_plugin);
	free(rt->cni_conf);
	free(rt->agent_socket);
	free(rt->cgroup_parent);
	free(rt->dns);
	free(rt->host_resolv);
	free(rt->runsc_root);
	free(rt->content_store);
	free(rt->mkfs);
	pthread_mutex_destroy(&rt->lock);
	pthread_cond_destroy(&rt->wake);
	pthread_cond_destroy(&rt->idle);
	free(rt);
}
