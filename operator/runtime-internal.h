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

/* A readable description of a wait status ("exit status 1", "signal 9"). */
void op_exec_status_str(int status, char *buf, size_t size);

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

#endif
