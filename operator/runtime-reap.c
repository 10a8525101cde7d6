/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Retiring a replica's sandbox so that nothing of it outlives the retirement
 * (runtime-internal.h): runsc kill and runsc delete, then whatever a
 * delete that failed or timed out left running -- the sandbox by the pid
 * and start time recorded when the replica started or was adopted, the
 * gofer (and a sandbox known by no pid) by their command lines, anything
 * else in the replica's cgroups -- killed and waited for.  Seen under
 * load: `runsc delete -force` killed at its timeout after it had removed
 * the container's state but before it killed the sandbox, so the sandbox
 * and its gofer kept running (holding the root file system's loop
 * device) while `runsc list` no longer knew them.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "runtime-internal.h"
#include "util.h"

#define REAP_MAX 64

/* ---------------------------------------------------------------- runsc */

int op_runsc(const char *runsc, const char *root, const char *const *args, int out_fd, int err_fd, bool private_net,
	     unsigned int timeout_ms, char **ret_out, char *err, size_t err_size)
{
	const char *argv[16] = { runsc, "--root", root, "--platform=ptrace", "--network=sandbox" };
	struct op_exec e = { .argv = argv, .stdout_fd = out_fd, .stderr_fd = err_fd,
			     .private_proc_sys_net = private_net, .timeout_ms = timeout_ms };
	char *out = NULL, *errs = NULL, how[64];
	size_t n = 5;
	int status = 0, r;

	for (size_t i = 0; args[i] && n < ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	r = op_exec_run(&e, &status, &out, &errs);
	if (r < 0) {
		snprintf(err, err_size, "runsc %s: %s", args[0], r == -ETIMEDOUT ? "timed out" : strerror(-r));
		return r;
	}
	if (status != 0) {
		op_exec_status_str(status, how, sizeof(how));
		errs[strcspn(errs, "\n")] = '\0';
		snprintf(err, err_size, "runsc %s: %s: %s", args[0], how, errs[0] ? errs : "(no message)");
		free(out);
		free(errs);
		return -EIO;
	}
	if (ret_out)
		*ret_out = out;
	else
		free(out);
	free(errs);
	return 0;
}

/* ---------------------------------------------------------------- processes */

/* /proc/@pid/stat: the state letter and field 22, the start time. */
static int proc_stat(pid_t pid, char *ret_state, uint64_t *ret_start)
{
	char path[64], *text = NULL, *p;
	size_t len = 0;
	unsigned long long start = 0;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	r = util_read_file(path, 4096, &text, &len);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	/* "PID (COMM) S ..." where COMM may hold anything: after its last ')'. */
	p = strrchr(text, ')');
	r = p && sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			ret_state, &start) == 2
		    ? 0
		    : -EBADMSG;
	free(text);
	if (r == 0)
		*ret_start = start;
	return r;
}

/* The states `runsc state` reports (gVisor's runsc/container/status.go). */
static const char *const runsc_states[] = { "creating", "created", "running", "stopped", "paused" };

int op_runsc_state_parse(const char *json, size_t len, char *status, size_t status_size, pid_t *ret_pid)
{
	struct json_value *root = NULL;
	const struct json_value *v;
	const char *st;
	int64_t pid = 0;
	bool known = false;
	int r;

	if (!json || !status || !status_size)
		return -EINVAL;
	r = json_parse(json, len, NULL, &root, NULL);
	if (r < 0)
		return r == -ENOMEM ? r : -EBADMSG;
	r = -EBADMSG;
	st = json_is(root, JSON_OBJECT) ? json_string_value(json_get(root, "status")) : NULL;
	for (size_t i = 0; st && i < ARRAY_SIZE(runsc_states) && !known; i++)
		known = strcmp(st, runsc_states[i]) == 0;
	if (!known)
		goto out;
	/* runsc writes -1 for a container with no sandbox running */
	v = json_get(root, "pid");
	if (v && (json_get_int64(v, &pid) < 0 || pid < -1 || pid > INT32_MAX))
		goto out;
	if (strlen(st) >= status_size) {
		r = -ENOBUFS;
		goto out;
	}
	strcpy(status, st);
	if (ret_pid)
		*ret_pid = pid > 0 ? (pid_t)pid : 0;
	r = 0;
out:
	json_free(root);
	return r;
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
#else
	(void)pid;
	return -1;
#endif
}

int op_sandbox_identify(pid_t pid, struct op_sandbox *ret)
{
	char state;
	uint64_t start;
	int r;

	if (pid <= 0 || !ret)
		return -EINVAL;
	r = proc_stat(pid, &state, &start);
	if (r < 0)
		return r;
	ret->pid = pid;
	ret->start_time = start;
	/* Opened after the start time was read: a pid reused in between is
	 * caught by the start time read again (op_sandbox_alive()). */
	ret->pidfd = pidfd_open_(pid);
	return 0;
}

void op_sandbox_close(struct op_sandbox *sb)
{
	if (sb && sb->pidfd >= 0) {
		close(sb->pidfd);
		sb->pidfd = -1;
	}
}

/* Alive (a zombie is not) and still the process of @start (0: any). */
static bool pid_alive(pid_t pid, uint64_t start)
{
	char state = 0;
	uint64_t s = 0;

	if (pid <= 0 || proc_stat(pid, &state, &s) < 0)
		return false;
	return state != 'Z' && state != 'X' && (!start || s == start);
}

bool op_sandbox_alive(const struct op_sandbox *sb)
{
	if (!sb || sb->pid <= 0)
		return false;
	if (sb->pidfd >= 0) {
		struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };

		if (poll(&p, 1, 0) == 1)
			return false; /* exited */
	}
	return pid_alive(sb->pid, sb->start_time);
}

/* Sends SIGKILL to @pid: through @pidfd when there is one (no pid reuse
 * possible), else after checking its start time once more. */
static bool kill_one(pid_t pid, uint64_t start, int pidfd)
{
#ifdef SYS_pidfd_send_signal
	if (pidfd >= 0)
		return syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0;
#else
	(void)pidfd;
#endif
	return pid_alive(pid, start) && kill(pid, SIGKILL) == 0;
}

/* Whether @argv (@n NUL-separated words) is a runsc child of root @root
 * (--root=R or --root R) serving bundle @bundle (--bundle B or --bundle=B):
 * runsc starts its sandbox as "runsc-sandbox ... boot --bundle=B ..." and
 * its gofer as "runsc-gofer ... gofer --bundle B ...". */
static bool runsc_child_of(const char *const *argv, size_t n, const char *root, const char *bundle)
{
	const char *base = n ? strrchr(argv[0], '/') : NULL;
	bool r = false, b = false;

	base = base ? base + 1 : n ? argv[0] : "";
	if (strncmp(base, "runsc", 5) != 0)
		return false;
	for (size_t i = 1; i < n; i++) {
		const char *a = argv[i], *next = i + 1 < n ? argv[i + 1] : "";

		if ((!strncmp(a, "--root=", 7) && !strcmp(a + 7, root)) ||
		    ((!strcmp(a, "--root") || !strcmp(a, "-root")) && !strcmp(next, root)))
			r = true;
		if ((!strncmp(a, "--bundle=", 9) && !strcmp(a + 9, bundle)) ||
		    ((!strcmp(a, "--bundle") || !strcmp(a, "-bundle")) && !strcmp(next, bundle)))
			b = true;
	}
	return r && b;
}

struct victim {
	pid_t pid;
	uint64_t start;
	int pidfd;
};

static void victim_add(struct victim *v, size_t *n, pid_t pid, uint64_t start, int pidfd)
{
	for (size_t i = 0; i < *n; i++)
		if (v[i].pid == pid)
			return;
	if (*n < REAP_MAX)
		v[(*n)++] = (struct victim){ pid, start, pidfd };
}

/* Every process whose command line is a runsc child of @root and @bundle. */
static void find_runsc_children(const char *root, const char *bundle, struct victim *v, size_t *n)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char path[64], *text = NULL, state;
		const char *argv[64];
		size_t len = 0, argc = 0;
		uint64_t start;
		long pid;
		char *end;

		pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		if (util_read_file(path, 1 << 16, &text, &len) < 0)
			continue;
		for (size_t o = 0; o < len && argc < ARRAY_SIZE(argv); o += strlen(text + o) + 1)
			argv[argc++] = text + o;
		if (runsc_child_of(argv, argc, root, bundle) && proc_stat((pid_t)pid, &state, &start) == 0 &&
		    state != 'Z')
			victim_add(v, n, (pid_t)pid, start, -1);
		free(text);
	}
	if (d)
		closedir(d);
}

static void procs_of(const char *path, struct victim *v, size_t *n)
{
	FILE *f = fopen(path, "re");
	long pid;

	while (f && fscanf(f, "%ld", &pid) == 1) {
		char state;
		uint64_t start;

		if (pid > 0 && pid != getpid() && proc_stat((pid_t)pid, &state, &start) == 0 && state != 'Z')
			victim_add(v, n, (pid_t)pid, start, -1);
	}
	if (f)
		fclose(f);
}

/* Every process of cgroup @cgroup (a path below each hierarchy's root) in
 * cgroup2 and in each cgroup v1 controller. */
static void find_cgroup_procs(const char *cgroup, struct victim *v, size_t *n)
{
	DIR *d = opendir("/sys/fs/cgroup");
	struct dirent *de;
	char path[1024];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cgroup.procs", cgroup);
	procs_of(path, v, n);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s/cgroup.procs", de->d_name, cgroup);
		procs_of(path, v, n);
	}
	if (d)
		closedir(d);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int op_sandbox_reap(const struct op_sandbox *sb, const char *root, const char *bundle, const char *cgroup,
		    unsigned int timeout_ms)
{
	struct victim v[REAP_MAX];
	size_t n = 0;
	int killed = 0;
	int64_t deadline = now_ms() + timeout_ms;

	if (sb && op_sandbox_alive(sb))
		victim_add(v, &n, sb->pid, sb->start_time, sb->pidfd);
	if (root && bundle)
		find_runsc_children(root, bundle, v, &n);
	if (cgroup && cgroup[0])
		find_cgroup_procs(cgroup, v, &n);
	for (size_t i = 0; i < n; i++)
		killed += kill_one(v[i].pid, v[i].start, v[i].pidfd);
	for (;;) {
		bool any = false;

		for (size_t i = 0; i < n && !any; i++)
			any = pid_alive(v[i].pid, v[i].start);
		if (!any)
			return killed;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

int op_sandbox_retire(const struct op_retire *rt)
{
	char err[512];
	int r, k;

	if (!rt || !rt->runsc || !rt->root || !rt->id)
		return -EINVAL;
	if (rt->err_size)
		rt->err[0] = '\0';
	(void)op_runsc(rt->runsc, rt->root, (const char *const[]){ "kill", rt->id, "KILL", NULL }, -1, -1, false,
		       rt->kill_timeout_ms ? rt->kill_timeout_ms : 10000, NULL, err, sizeof(err));
	r = op_runsc(rt->runsc, rt->root, (const char *const[]){ "delete", "-force", rt->id, NULL }, -1, -1, false,
		     rt->delete_timeout_ms ? rt->delete_timeout_ms : 30000, NULL, err, sizeof(err));
	if (r < 0 && rt->err_size)
		snprintf(rt->err, rt->err_size, "%s", err);
	/* Always: a delete that said yes may still have left a process
	 * exiting; one that failed or timed out may have left everything. */
	k = op_sandbox_reap(rt->sandbox, rt->root, rt->bundle, rt->cgroup,
			    rt->reap_timeout_ms ? rt->reap_timeout_ms : 5000);
	if (k < 0 && rt->err_size)
		snprintf(rt->err + strlen(rt->err), rt->err_size - strlen(rt->err), "%ssandbox processes survive SIGKILL",
			 rt->err[0] ? "; " : "");
	return k;
}
