/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private pieces of the runtime module (operator/runtime*.c): running
 * programs (runsc, flowsdn-cni) with a deadline, network namespaces,
 * the log shim.
 */
#ifndef FLASH_OPERATOR_RUNTIME_INTERNAL_H
#define FLASH_OPERATOR_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "names.h"

struct op_exec {
	const char *const *argv;   /* argv[0] is the path */
	const char *const *envp;   /* NULL: an empty environment plus PATH */
	const char *input;         /* written to stdin; NULL: /dev/null */
	size_t input_len;
	int stdout_fd, stderr_fd;  /* > 0: given to the child as is (not captured) */
	bool private_proc_sys_net; /* runsc start on kernels >= 6.11 (gVisor 10704) */
	unsigned int timeout_ms;   /* killed after; 0: 30000 */
};

/* Runs @e, capturing stdout (unless stdout_fd) and stderr (unless
 * stderr_fd), each up to 64 KiB.  Returns 0 with *ret_status (the wait
 * status), -ETIMEDOUT (killed), -errno (fork, pipe).  Both captures
 * (ret_out, ret_err; may be NULL) are freed by the caller, NUL-terminated. */
int op_exec_run(const struct op_exec *e, int *ret_status, char **ret_out, char **ret_err);

/* Streams of op_exec_stream(): the callbacks of a sandbox exec
 * (<flash/sandbox.h>). */
struct op_exec_io {
	ssize_t (*stdin_fn)(void *buf, size_t cap, void *userdata);  /* NULL: /dev/null */
	void *stdin_userdata;
	int (*stdout_fn)(const void *buf, size_t len, void *userdata); /* NULL: discarded */
	void *stdout_userdata;
	int (*stderr_fn)(const void *buf, size_t len, void *userdata); /* NULL: discarded */
	void *stderr_userdata;
	uint64_t deadline_ms;      /* CLOCK_MONOTONIC ms; 0: none (e->timeout_ms is not used) */
	/* At kill_at_ms (CLOCK_MONOTONIC; 0: never) kill_fn is called (it
	 * ends what the child runs, the child itself left to exit and be
	 * read to its end until deadline_ms); a return > 0 asks for another
	 * call that many ms later, 0 for none. */
	uint64_t kill_at_ms;
	unsigned int (*kill_fn)(void *userdata);
	void *kill_userdata;
};

/* Runs @e (its argv, envp and private_proc_sys_net; not its input or
 * fds) with stdin pulled from io->stdin_fn and stdout/stderr pushed to
 * the sinks as they come, until both outputs end.  0 with *ret_status
 * (the wait status); -ETIMEDOUT at the deadline, a source's or sink's
 * error (the child SIGKILLed and reaped either way), -errno.  Needs
 * SIGPIPE ignored (the daemons do). */
int op_exec_stream(const struct op_exec *e, const struct op_exec_io *io, int *ret_status);

/* A readable description of a wait status ("exit status 1", "signal 9"). */
void op_exec_status_str(int status, char *buf, size_t size);

/* Removes @id's cgroup under @parent ("/flash") in every hierarchy
 * (cgroup2 at the root, or one per controller), waiting up to 3 s for
 * each to empty. */
void op_cgroup_remove(const char *parent, const char *id);
/* Removes the tree @dir (not crossing mounts, not following links). */
void op_remove_tree(const char *dir);
/* ---------------------------------------------------------------- runsc and its sandboxes */

/* Runs `@runsc --root @root --platform=ptrace --network=sandbox ARGS...`
 * (runtime-reap.c), killed after @timeout_ms; stdout captured into
 * *@ret_out (may be NULL) unless @out_fd.  0; -ETIMEDOUT, -errno, -EIO (a
 * non-zero exit) with @err saying what. */
int op_runsc(const char *runsc, const char *root, const char *const *args, int out_fd, int err_fd, bool private_net,
	     unsigned int timeout_ms, char **ret_out, char *err, size_t err_size);

/* Reads what `runsc state ID` prints (@len bytes at @json: the OCI state
 * as runsc writes it) for both users of runsc (runtime.c,
 * sandbox-gvisor.c): "status", one of the states runsc knows (creating,
 * created, running, stopped, paused), into @status (@status_size bytes,
 * NUL-terminated), and "pid" into *@ret_pid (may be NULL): the sandbox's
 * pid, 0 when absent or -1 (no sandbox running).  0; -EBADMSG (not JSON,
 * not an object, a status that is missing or unknown, a pid that is not
 * an integer from -1 to INT32_MAX), -ENOBUFS (@status too small),
 * -EINVAL, -ENOMEM; @status and *@ret_pid are untouched on failure. */
int op_runsc_state_parse(const char *json, size_t len, char *status, size_t status_size, pid_t *ret_pid)
	__attribute__((warn_unused_result));

/* A replica's sandbox process as recorded when it started or was adopted:
 * its pid, the start time of that pid (/proc/PID/stat field 22: a pid
 * reused by another process has another) and a pidfd (-1 when the kernel
 * has none), so that it can be killed by the runtime itself when runsc
 * no longer knows it. */
struct op_sandbox {
	pid_t pid;
	uint64_t start_time;
	int pidfd;
};

/* Fills @ret for live process @pid.  0, -ESRCH, -EINVAL. */
int op_sandbox_identify(pid_t pid, struct op_sandbox *ret);
/* Still running (a zombie is not) and still that process. */
bool op_sandbox_alive(const struct op_sandbox *sb);
/* Closes the pidfd (NULL fine). */
void op_sandbox_close(struct op_sandbox *sb);

/* Kills what runsc left of a container and waits up to @timeout_ms for
 * it to be gone (zombies count as gone): the sandbox @sb (NULL: none
 * recorded) when it is still that process; every process runsc started
 * for bundle @bundle under root @root -- argv[0] runsc-sandbox or
 * runsc-gofer (any "runsc*"), with --root R and --bundle B (either
 * spelling) among its arguments: the gofer, found only so, and a sandbox
 * whose pid was never recorded; every process left in cgroup @cgroup (a
 * path below each hierarchy's root, cgroup2 and v1; NULL: none).  SIGKILL
 * goes through the pidfd when there is one, else only to a pid whose
 * start time is still the one seen.  The number killed, or -ETIMEDOUT
 * when one survives. */
int op_sandbox_reap(const struct op_sandbox *sb, const char *root, const char *bundle, const char *cgroup,
		    unsigned int timeout_ms);

/* Retiring a replica's container (runtime.c's teardown): `runsc kill ID
 * KILL`, `runsc delete -force ID` (each bounded), then op_sandbox_reap()
 * whatever the delete said (under load a delete killed at its timeout had
 * removed the state but not the sandbox: it and its gofer kept running,
 * holding the root file system's loop device, unknown to runsc list). */
struct op_retire {
	const char *runsc, *root, *id;  /* required */
	const char *bundle;             /* the replica's directory (--bundle) */
	const char *cgroup;             /* its cgroup below each hierarchy's root */
	const struct op_sandbox *sandbox; /* NULL: none recorded */
	unsigned int kill_timeout_ms;   /* [10000] */
	unsigned int delete_timeout_ms; /* [30000] */
	unsigned int reap_timeout_ms;   /* [5000] */
	char *err;                      /* what the delete said when it failed (may be NULL with err_size 0) */
	size_t err_size;
};
/* The number of processes the reap killed (0: the delete left none), or
 * -ETIMEDOUT (one survived SIGKILL), -EINVAL. */
int op_sandbox_retire(const struct op_retire *r);

/* Creates a network namespace bound on @path (a new empty file); 0 or -errno. */
int op_netns_create(const char *path);
/* Unmounts and removes @path; 0 (also when absent) or -errno. */
int op_netns_remove(const char *path);

/* Starts the log shim: a process of its own (reparented, it outlives the
 * operator) that reads @out_fd and @err_fd until both close and appends
 * "TIME stdout|stderr LINE" to @log_path, rotated to @log_path.1 at
 * @max_bytes.  The fds are closed in the caller.  0 or -errno. */
int op_log_shim_start(int out_fd, int err_fd, const char *log_path, size_t max_bytes);

/* ---------------------------------------------------------------- storage */

/* Disk-backed bounded file systems (runtime-storage.c): a sparse file
 * formatted ext4, on a loop device, mounted nosuid,nodev. */
#define OP_STORAGE_MIN_BYTES (16u << 20)

/* The one rule splitting a workload's disk budget (bytes): the root file
 * system (the unpacked image and its writable part) and, with
 * persistence, the /root volume, which gets half of what the image
 * leaves (MiB-aligned; none when that is under 2 * OP_STORAGE_MIN_BYTES).
 * The root file system is never smaller than @image_bytes +
 * OP_STORAGE_MIN_BYTES. */
void op_storage_split(uint64_t budget, uint64_t image_bytes, bool persistence, uint64_t *ret_rootfs,
		      uint64_t *ret_root_volume);

/* Makes @path (a new file: never replaces one) a sparse ext4 file system
 * of @bytes with @mkfs (NULL: /sbin/mkfs.ext4).  On failure nothing is
 * left and @err says why: -EINVAL (size), -EEXIST, -EIO (mkfs failed),
 * -errno. */
int op_storage_create(const char *path, uint64_t bytes, const char *mkfs, char *err, size_t err_size);

/* Attaches @path to a free loop device (autoclear) and mounts it on
 * @target (made when missing).  On failure no device stays attached.
 * 0 or -errno with @err. */
int op_storage_mount(const char *path, const char *target, char *err, size_t err_size);

/* Is an ext4 file system mounted on @target? */
bool op_storage_mounted(const char *target);

/* Copies the (unmounted) file system image @src to @dst (a new file:
 * never replaces one), of the same size, writing only @src's data
 * extents (SEEK_DATA/SEEK_HOLE, copy_file_range: a reflink where the
 * file system can): the copy is as sparse as @src.  On failure nothing
 * is left and @err says why.  0 or -errno. */
int op_storage_copy(const char *src, const char *dst, char *err, size_t err_size);

/* ---------------------------------------------------------------- templates */

/* Root file system templates (runtime-template.c): per pinned image and
 * root size, an ext4 image holding the unpacked image, made once and
 * copied sparse for each replica (op_storage_copy()) instead of a mkfs
 * and an unpack per replica.  Each replica still gets its own image file
 * of its own bounded size; the template is never mounted by a replica.
 * Used by the reconcile thread only (no lock). */
struct op_templates;

struct op_template {
	char *pinned;     /* the image, pinned by digest */
	uint64_t bytes;   /* the root file system's size */
	char *path;       /* DIR/tN.img */
	char **entry;     /* the image's Entrypoint+Cmd (NULL-terminated; may be NULL) */
	char **env;       /* the image's Env */
	int64_t unused_since; /* monotonic ms; 0: a live service names it */
	struct op_template *next;
};

/* Opens the template directory @dir (made mode 0700; what an earlier
 * operator left there is removed: templates are rebuilt on demand).
 * 0 or -errno. */
int op_templates_new(const char *dir, struct op_templates **ret);
void op_templates_free(struct op_templates *t);

/* The template of @pinned at @bytes whose file is still there, or NULL. */
const struct op_template *op_templates_find(struct op_templates *t, const char *pinned, uint64_t bytes);

/* A new file name for a template being built (DIR/tN.img), freed by the
 * caller; NULL on ENOMEM. */
char *op_templates_path(struct op_templates *t);

/* Records the template built at @path; takes @entry and @env (NULL-
 * terminated vectors, may be NULL) on success.  0 or -ENOMEM (then the
 * file is removed and the vectors are the caller's). */
int op_templates_add(struct op_templates *t, const char *pinned, uint64_t bytes, const char *path, char **entry,
		     char **env);

/* Removes the templates of images no live service has named for
 * @keep_ms (@live: the pinned images of the live services; @now_ms:
 * monotonic), so that a service deleted and created again soon finds its
 * template, and disk is not held for images nobody runs. */
void op_templates_prune(struct op_templates *t, const char *const *live, size_t n, int64_t now_ms, int64_t keep_ms);

/* A copy of a NULL-terminated vector (NULL for NULL); -ENOMEM as NULL
 * with *ret_oom set. */
char **op_strv_dup(char *const *v, bool *ret_oom);
void op_strv_free(char **v);

/* ---------------------------------------------------------------- probes */

/* Readiness probes (runtime-probe.c).  What one probe of a replica's
 * first port saw: */
enum op_probe_outcome {
	OP_PROBE_ANSWERED, /* TCP: the connect completed; UDP: a datagram came back */
	OP_PROBE_REFUSED,  /* TCP RST or UDP ICMP port-unreachable: nothing listens */
	OP_PROBE_SILENT,   /* nothing within the timeout */
	OP_PROBE_ERROR,    /* another error (no route, a local failure) */
};

/* Probes @address:@port (IPv4) over @proto (IPPROTO_TCP, IPPROTO_UDP;
 * UDP: an empty datagram), waiting up to @timeout_ms. */
enum op_probe_outcome op_probe(const char *address, uint16_t port, int proto, unsigned int timeout_ms);

/* UDP readiness, from consecutive probes of one replica.  A datagram
 * back is ready.  Silence alone proves nothing (a lost datagram, a
 * filtered port-unreachable): it counts as a silent listener only once
 * the port has been seen closed on the same path (closed_seen: the
 * sandbox's netstack answers port-unreachable for an unbound port, so a
 * port that was refused and now swallows datagrams is bound), and then
 * after OP_PROBE_UDP_SILENT_READY silent probes in a row. */
#define OP_PROBE_UDP_SILENT_READY 3
struct op_udp_readiness {
	bool closed_seen;
	unsigned int silent; /* silent probes in a row */
};

/* Folds probe outcome @o into @st: is the replica ready? */
bool op_probe_udp_ready(struct op_udp_readiness *st, enum op_probe_outcome o);

/* Is the state "listening unknown": silent probes without the port ever
 * seen closed (not ready, and the status says so)? */
bool op_probe_udp_unknown(const struct op_udp_readiness *st);

/* ---------------------------------------------------------------- replica.json */

/* What DIR/replicas/ID/replica.json records of a replica, read back when
 * the operator starts again to adopt the replicas runsc still runs
 * (runtime-record.c, the one reader and writer of the file). */
#define OP_REPLICA_RECORD_ID_MAX 96
struct op_replica_record {
	char id[OP_REPLICA_RECORD_ID_MAX];
	char service[NAMES_SERVICE_ID_LEN + 1]; /* "" when the file names no valid service id */
	uint64_t generation;
	unsigned int index;   /* < @index_max of the reader, else 0 */
	unsigned int restarts;
	char address[48];
	bool ever_ready;
	bool udp_closed_seen;
	uint64_t sandbox_pid; /* 1..INT32_MAX with sandbox_start, else 0 (not recorded) */
	uint64_t sandbox_start;
};

/* The file's text for @r (a JSON object, one member a line): 0 and
 * *ret_text (free()), -ENOMEM. */
int op_replica_record_format(const struct op_replica_record *r, char **ret_text, size_t *ret_len);
/* Reads the file's text (@len bytes): 0 and *ret, or -EBADMSG when it is
 * not a JSON object.  Leniently, as a file of an older operator may be:
 * a member that is absent or out of range (an index of @index_max or
 * more, restarts of UINT32_MAX or more, a sandbox pid of 0 or past
 * INT32_MAX or without its start time) is left 0, a string too long for
 * its field is left "" (never cut: the record writes back as it read),
 * and a service that is not a valid service id leaves the service ""
 * (the replica is then retired). */
int op_replica_record_parse(const char *text, size_t len, unsigned int index_max, struct op_replica_record *ret);

#endif
