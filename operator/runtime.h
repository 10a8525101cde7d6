/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The single-node runtime of flash-operator (private to operator/): every
 * replica of a stored service runs in gVisor (runsc, ptrace platform,
 * netstack) from an OCI bundle built from the pinned image, in a network
 * namespace of its own wired by executing flowsdn-cni as a kubelet would.
 *
 * One reconcile thread compares the live services of the store with the
 * replicas it runs and converges: starts missing replicas, probes them
 * until their first port answers (ready), restarts a replica that exits
 * after it was ready with exponential backoff (restarts counted), turns a
 * replica that exits before it was ever ready into a service error (the
 * reason and the replica's last log lines), retries transient failures
 * (agent, CNI, runsc, image pull) with backoff, starts the replacement of
 * an updated service before retiring the old replicas, and removes what a
 * deleted or scaled-down service leaves (container, netns, endpoint,
 * cgroup, bundle).  The thread holds its lock only to publish status,
 * never across runsc, CNI or image I/O.  Replicas are recorded on disk
 * (DIR/replicas/ID/replica.json): a restarted operator adopts the ones
 * runsc still runs without restarting them.
 *
 * Files (all under opts->dir, made mode 0700): replicas/ID/ (bundle:
 * config.json, rootfs: an ext4 image rootfs.img, sparse, bounded by the
 * workload's disk budget (op_storage_split()), mounted through a loop
 * device, resolv.conf, netns), volumes/SERVICE/ (with persistence: the
 * /root volume root.img mounted on root/, shared by the service's
 * replicas, kept across replica and operator restarts, removed with the
 * service), logs/SERVICE/N.log (+ N.log.1, rotated), runsc/ (runsc
 * --root), images/ (the content store), templates/ (per pinned image and
 * root size, the unpacked image on an ext4 image each replica's root is a
 * sparse copy of; runtime-template.c).
 */
#ifndef FLASH_OPERATOR_RUNTIME_H
#define FLASH_OPERATOR_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/policy.h>
#include <flash/render.h>
#include <flash/spec.h>

#include "admission.h"
#include "store.h"

/* ---------------------------------------------------------------- bundle */

/* What config.json of a replica's bundle says (runtime-bundle.c). */
struct op_bundle_params {
	const struct flash_spec *spec;  /* command, args, env, cpu, memory */
	const char *const *entrypoint;  /* the image's Entrypoint+Cmd when the spec has no command (NULL-terminated); may be NULL */
	const char *const *image_env;   /* the image's Env ("K=V", NULL-terminated); the spec's env wins; may be NULL */
	const char *hostname;
	const char *netns_path;         /* required */
	const char *cgroups_path;       /* required ("/flash/ID") */
	const char *resolv_conf;        /* host path bind-mounted read-only on /etc/resolv.conf; NULL: none */
	const char *root_volume;        /* host path mounted on /root (persistence); NULL: none */
	uint32_t pids_limit;            /* 0: OP_BUNDLE_PIDS_DEFAULT */
	/* Sandbox sessions (sandbox-gvisor.c): */
	const char *const *argv;        /* the process, winning over the spec's command; NULL: as above */
	const char *root_path;          /* NULL: "rootfs" (in the bundle) */
	bool root_readonly;
	const char *const *annotations; /* more annotations, "KEY=VALUE", NULL-terminated; may be NULL */
};

/* The sandbox's own host threads count against the OCI pids limit (25
 * idle, 70 busy were measured): the limit leaves room for them. */
#define OP_BUNDLE_SANDBOX_THREADS 128u
#define OP_BUNDLE_PIDS_DEFAULT (OP_BUNDLE_SANDBOX_THREADS + 1024u)

/* Writes the OCI runtime config (spec 1.0.2): process args from the
 * spec's command+args (or the image's entrypoint), env (PATH, HOME=/root,
 * the image's, then the spec's), cwd /root, uid/gid 0, no capabilities
 * beyond runsc's default empty set (every set empty), noNewPrivileges,
 * root "rootfs" writable, linux.cgroupsPath, CPU quota/period from
 * cpu_millis, memory limit from memory_mib, the pids limit, a network
 * namespace at netns_path and new pid/ipc/uts/mount namespaces, the
 * standard /proc, /dev, /sys mounts.  *ret (NUL-terminated) freed by the
 * caller.  -EINVAL (no command anywhere, missing required field), -ENOMEM. */
int op_bundle_config(const struct op_bundle_params *p, char **ret, size_t *ret_len);

/* The nameserver lines for a replica's resolv.conf: @servers (comma or
 * space separated addresses) when set, else the non-loopback nameservers
 * of @host_resolv (the host's upstream servers).  -ENOENT when none is
 * left, -EINVAL for a server that is not an IP address. */
int op_bundle_resolv_conf(const char *servers, const char *host_resolv, char **ret);

/* Splits "2026-..Z" log lines: formats a log line prefix for @ns_epoch
 * (UTC, microseconds) into @buf (at least OP_LOG_TIME_STRLEN); async-signal
 * safe (the log shim calls it after fork). */
#define OP_LOG_TIME_STRLEN 28
void op_log_time(int64_t ns_epoch, char buf[OP_LOG_TIME_STRLEN]);

/* ---------------------------------------------------------------- runtime */

#define OP_RUNTIME_CGROUP_PARENT_DEFAULT "/flash"

struct op_runtime_opts {
	size_t sz;
	const char *dir;            /* required: runtime state directory */
	const char *runsc;          /* NULL: "runsc" from PATH */
	const char *cni_bin_dir;    /* required: holds flowsdn-cni */
	const char *cni_conf;       /* conflist; NULL: one naming flowsdn-cni with agent_socket */
	const char *agent_socket;   /* NULL: the agent's default */
	const char *cgroup_parent;  /* NULL: OP_RUNTIME_CGROUP_PARENT_DEFAULT */
	const char *dns;            /* nameservers; NULL: the host's upstream servers */
	const char *host_resolv;    /* NULL: /etc/resolv.conf */
	const struct op_image_settings *registry; /* pulling the pinned image */
	/* Isolation and publishing (runtime-net.h): the operator
	 * configuration (ranges, serviceCIDRs; NULL: defaults) and the owner
	 * policy (protected ranges; NULL: none). */
	const struct flash_operator_config *config;
	const struct flash_policy *policy;
	bool masquerade;            /* egress masquerade (runtime-net.h): nft table made at start, removed at stop */
	unsigned int interval_ms;   /* reconcile period; 0: 500 */
	unsigned int log_max_bytes; /* per replica log file before rotation; 0: 1 MiB */
	/* The live services (the reconcile loop's desired state). */
	int (*services)(void *ctx, struct op_service ***ret, size_t *ret_n);
	/* Metering (same ctx; NULL: none): told when a service's count of
	 * ready replicas changes; asked every pass whether its organization
	 * is suspended (-EDQUOT and a message: its replicas are stopped). */
	int (*observe)(void *ctx, const struct op_service *s, const struct flash_spec *spec, uint32_t ready);
	int (*suspended)(void *ctx, const struct op_service *s, const struct flash_spec *spec, char *msg,
			 size_t msg_size);
	void *services_ctx;
	/* flash-operator.conf(5) persistence.enabled: each service gets a
	 * restart-safe /root volume (op_storage_split()). */
	bool persistence;
	const char *mkfs;           /* NULL: mkfs.ext4 from PATH, /usr/sbin, /sbin */
};

/* What a service's replicas look like now. */
#define OP_STATUS_REPLICAS_SHOWN 16
struct op_replica_view {
	unsigned int index;
	char address[48];     /* "" until wired */
	char state[16];       /* "starting", "ready", "restarting", "retiring" */
	unsigned int restarts;
	uint64_t generation;
	char container[96];   /* the runsc container id (exec) */
};

/* A condition of a FlashService's status (Kubernetes mode only). */
#define OP_STATUS_CONDITIONS_SHOWN 8
struct op_condition_view {
	char type[16];        /* "Ready", "Progressing", "Degraded", "Suspended", "Queued" */
	char status[8];       /* "True", "False", "Unknown" */
	char reason[64];
	char message[256];
	char since[32];       /* lastTransitionTime as written ("" when none) */
};

struct op_service_status {
	char phase[16];       /* "provisioning", "ready", "failed", "stopped" (zero replicas), "suspended",
	                       * "queued" (Kubernetes mode: a GPU service waiting) */
	bool ready;
	unsigned int wanted, ready_replicas, restarts;
	char message[2048];
	size_t n_replicas;
	struct op_replica_view replicas[OP_STATUS_REPLICAS_SHOWN];
	/* Kubernetes mode: the FlashService's conditions and the generation
	 * they describe (n_conditions 0: none shown). */
	size_t n_conditions;
	struct op_condition_view conditions[OP_STATUS_CONDITIONS_SHOWN];
	int64_t observed_generation;
};

struct op_runtime;

/* Checks the options (runsc and flowsdn-cni executable, the directory
 * made), adopts the replicas runsc still runs, and starts the reconcile
 * thread.  @err says what is wrong.  -EINVAL, -ENOENT, -ENOMEM, -errno. */
int op_runtime_start(const struct op_runtime_opts *opts, struct op_runtime **ret, char *err, size_t err_size);

/* Wakes the reconcile thread (a service changed). */
void op_runtime_kick(struct op_runtime *rt);

/* The status of service @id; -ENOENT when the runtime has not seen it yet. */
int op_runtime_status(struct op_runtime *rt, const char *id, struct op_service_status *ret);

/* The newest whole lines of the logs of service @id that fit in
 * @max_bytes (0: all), replica @index or every replica when negative,
 * lines at or after @since (ns since the epoch; 0: all), oldest first,
 * each "INDEX TIME STREAM TEXT\n" (TIME as op_log_time() writes it,
 * STREAM stdout or stderr).  -ENOENT when the service has no logs,
 * -EINVAL, -ENOMEM. */
int op_runtime_logs(struct op_runtime *rt, const char *id, int index, int64_t since, size_t max_bytes, char **ret,
		    size_t *ret_len);

/* Where a Web Shell session of service @id runs (operator/exec.c):
 * replica @index (< 0: the first ready one), which must be ready. */
struct op_exec_target {
	unsigned int replica;
	char container[96];   /* runsc container id */
	char runsc[4096];     /* the runsc binary */
	char root[4096];      /* its --root */
	char bundle[4096];    /* the replica's bundle directory (config.json) */
};
/* 0 and *ret; -ENOENT (no such service or replica), -EAGAIN (the replica,
 * or every replica, is not ready), -EINVAL. */
int op_runtime_exec_target(struct op_runtime *rt, const char *id, int index, struct op_exec_target *ret);

/* The autoscaler's count for service @id (operator/autoscale.c): while
 * its spec has `autoscaling`, the runtime runs @n replicas (within
 * min_replicas..max_replicas) instead of `replicas`, and wakes for it.
 * Until the first call it runs `replicas`, or the replicas of the current
 * generation it adopted when more.  -ENOENT (the runtime has not seen the
 * service), -EINVAL (@n 0 or above its replica limit). */
int op_runtime_set_desired(struct op_runtime *rt, const char *id, unsigned int n);

/* Stops the reconcile thread; the replicas keep running (a restarted
 * operator adopts them).  NULL is fine. */
void op_runtime_stop(struct op_runtime *rt);

#endif
