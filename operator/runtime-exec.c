/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Programs, network namespaces and the log shim of the runtime
 * (runtime-internal.h).  Between fork and exec the children call only
 * async-signal-safe functions (the operator is multi-threaded).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime-internal.h"
#include "runtime.h"
#include "util.h"

#define CAPTURE_MAX (64u << 10)

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *const default_env[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL };

/* In the child: never returns. */
static void child(const struct op_exec *e, pid_t parent, int in_fd, int out_fd, int err_fd)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* the operator blocks its signals */
	signal(SIGPIPE, SIG_DFL);
	/* runsc and CNI die with the operator's thread that waits for them: a
	 * SIGKILLed operator leaves no runsc create finishing a sandbox nobody
	 * records (the next operator removes what it half made). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(124);

	if (in_fd < 0)
		in_fd = devnull;
	if (dup2(in_fd, 0) < 0 || dup2(out_fd < 0 ? devnull : out_fd, 1) < 0 || dup2(err_fd < 0 ? devnull : err_fd, 2) < 0)
		_exit(126);
	if (e->private_proc_sys_net) {
		/* A private mount namespace whose /proc/sys/net is an empty
		 * tmpfs: this runsc then finds no rmem_default and starts its
		 * netstack (gVisor issue 10704). */
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", "/proc/sys/net", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k") < 0)
			_exit(125);
	}
	execve(e->argv[0], (char *const *)e->argv, (char *const *)(e->envp ? e->envp : default_env));
	_exit(127);
}

int op_exec_run(const struct op_exec *e, int *ret_status, char **ret_out, char **ret_err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	char *buf[2] = { NULL, NULL };
	size_t len[2] = { 0, 0 };
	int64_t deadline;
	size_t in_off = 0;
	int status = 0, r = 0;
	pid_t pid, parent;

	if (!e || !e->argv || !e->argv[0] || !ret_status)
		return -EINVAL;
	deadline = now_ms() + (e->timeout_ms ? e->timeout_ms : 30000);
	for (int i = 0; i < 2; i++) {
		buf[i] = calloc(1, CAPTURE_MAX + 1);
		if (!buf[i]) {
			r = -ENOMEM;
			goto out;
		}
	}
	if ((e->input && pipe2(in, O_CLOEXEC) < 0) || (e->stdout_fd <= 0 && pipe2(out, O_CLOEXEC) < 0) ||
	    (e->stderr_fd <= 0 && pipe2(err, O_CLOEXEC) < 0)) {
		r = -errno;
		goto out;
	}
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if (pid == 0)
		child(e, parent, in[0], e->stdout_fd > 0 ? e->stdout_fd : out[1], e->stderr_fd > 0 ? e->stderr_fd : err[1]);
	for (int *fd = (int[]){ in[0], out[1], err[1] }, k = 0; k < 3; k++)
		if (fd[k] >= 0)
			close(fd[k]);
	in[0] = out[1] = err[1] = -1;
	if (in[1] >= 0)
		fcntl(in[1], F_SETFL, O_NONBLOCK);
	if (in[1] >= 0 && e->input_len == 0) {
		close(in[1]);
		in[1] = -1;
	}
	for (;;) {
		struct pollfd p[3] = { { .fd = out[0], .events = POLLIN }, { .fd = err[0], .events = POLLIN },
				       { .fd = in[1], .events = POLLOUT } };
		int64_t left = deadline - now_ms();

		if (out[0] < 0 && err[0] < 0 && in[1] < 0)
			break;
		if (left <= 0) {
			kill(pid, SIGKILL);
			r = -ETIMEDOUT;
			break;
		}
		if (poll(p, 3, (int)left) < 0 && errno != EINTR) {
			kill(pid, SIGKILL);
			r = -errno;
			break;
		}
		for (int i = 0; i < 2; i++) {
			int *fd = i == 0 ? &out[0] : &err[0];

			if (*fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char chunk[4096];
			ssize_t n = read(*fd, chunk, sizeof(chunk));

			if (n > 0) {
				size_t take = (size_t)n < CAPTURE_MAX - len[i] ? (size_t)n : CAPTURE_MAX - len[i];

				memcpy(buf[i] + len[i], chunk, take);
				len[i] += take;
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(*fd);
				*fd = -1;
			}
		}
		if (in[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = write(in[1], e->input + in_off, e->input_len - in_off);

			if (n > 0)
				in_off += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || in_off == e->input_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r == 0) {
		*ret_status = status;
		if (ret_out)
			*ret_out = TAKE_PTR(buf[0]);
		if (ret_err)
			*ret_err = TAKE_PTR(buf[1]);
	}
out:
	for (int *fd = (int[]){ in[0], in[1], out[0], out[1], err[0], err[1] }, k = 0; k < 6; k++)
		if (fd[k] >= 0)
			close(fd[k]);
	free(buf[0]);
	free(buf[1]);
	return r;
}

int op_exec_stream(const struct op_exec *e, const struct op_exec_io *io, int *ret_status)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	char inbuf[16384];
	size_t in_len = 0, in_off = 0;
	uint64_t kill_at;
	int status = 0, r = 0;
	pid_t pid, parent;

	if (!e || !e->argv || !e->argv[0] || !io || !ret_status)
		return -EINVAL;
	kill_at = io->kill_fn ? io->kill_at_ms : 0;
	if ((io->stdin_fn && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if (pid == 0)
		child(e, parent, in[0], out[1], err[1]);
	for (int *fd = (int[]){ in[0], out[1], err[1] }, k = 0; k < 3; k++)
		if (fd[k] >= 0)
			close(fd[k]);
	in[0] = out[1] = err[1] = -1;
	if (in[1] >= 0)
		fcntl(in[1], F_SETFL, O_NONBLOCK);
	while (out[0] >= 0 || err[0] >= 0) {
		struct pollfd p[3] = { { .fd = out[0], .events = POLLIN }, { .fd = err[0], .events = POLLIN },
				       { .fd = in[1], .events = POLLOUT } };
		int timeout = -1;

		if (kill_at && (int64_t)kill_at <= now_ms()) {
			unsigned int again = io->kill_fn(io->kill_userdata);

			kill_at = again ? (uint64_t)now_ms() + again : 0;
		}
		if (io->deadline_ms) {
			int64_t left = (int64_t)io->deadline_ms - now_ms();

			if (left <= 0) {
				r = -ETIMEDOUT;
				break;
			}
			timeout = left > INT32_MAX ? INT32_MAX : (int)left;
		}
		if (kill_at) {
			int64_t left = (int64_t)kill_at - now_ms();

			left = left < 0 ? 0 : left;
			if (timeout < 0 || left < timeout)
				timeout = (int)(left > INT32_MAX ? INT32_MAX : left);
		}
		if (poll(p, 3, timeout) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		for (int i = 0; i < 2 && r == 0; i++) {
			int *fd = i == 0 ? &out[0] : &err[0];
			int (*sink)(const void *, size_t, void *) = i == 0 ? io->stdout_fn : io->stderr_fn;
			void *ud = i == 0 ? io->stdout_userdata : io->stderr_userdata;
			char chunk[16384];
			ssize_t n;

			if (*fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(*fd, chunk, sizeof(chunk));
			if (n > 0) {
				if (sink)
					r = sink(chunk, (size_t)n, ud);
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(*fd);
				*fd = -1;
			}
		}
		if (r < 0)
			break;
		if (in[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n;

			if (in_off == in_len) {
				n = io->stdin_fn(inbuf, sizeof(inbuf), io->stdin_userdata);
				if (n < 0) {
					r = (int)n;
					break;
				}
				in_off = 0;
				in_len = (size_t)n;
				if (n == 0) {
					close(in[1]);
					in[1] = -1;
					continue;
				}
			}
			n = write(in[1], inbuf + in_off, in_len - in_off);
			if (n > 0) {
				in_off += (size_t)n;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				/* the child no longer reads its stdin */
				close(in[1]);
				in[1] = -1;
			}
		}
	}
	if (r < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r == 0)
		*ret_status = status;
out:
	for (int *fd = (int[]){ in[0], in[1], out[0], out[1], err[0], err[1] }, k = 0; k < 6; k++)
		if (fd[k] >= 0)
			close(fd[k]);
	return r;
}

void op_cgroup_remove(const char *parent, const char *id)
{
	DIR *d = opendir("/sys/fs/cgroup");
	struct dirent *de;
	char p[1024];

	snprintf(p, sizeof(p), "/sys/fs/cgroup%s/%s", parent, id);
	for (int i = 0; i < 30 && rmdir(p) < 0 && errno == EBUSY; i++)
		usleep(100000);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/fs/cgroup/%s%s/%s", de->d_name, parent, id);
		for (int i = 0; i < 30 && rmdir(p) < 0 && errno == EBUSY; i++)
			usleep(100000);
	}
	if (d)
		closedir(d);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void op_remove_tree(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

void op_exec_status_str(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "wait status %d", status);
}

/* ---------------------------------------------------------------- netns */

struct netns_job {
	const char *path;
	int r;
};

/* A thread of its own: unshare(CLONE_NEWNET) changes the calling thread
 * only, and this one ends right after binding its namespace. */
static void *netns_thread(void *arg)
{
	struct netns_job *j = arg;
	char self[64];

	if (unshare(CLONE_NEWNET) < 0) {
		j->r = -errno;
		return NULL;
	}
	snprintf(self, sizeof(self), "/proc/self/task/%ld/ns/net", (long)syscall(SYS_gettid));
	j->r = mount(self, j->path, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
	return NULL;
}

int op_netns_create(const char *path)
{
	struct netns_job j = { .path = path };
	pthread_t t;
	int fd;

	if (!path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	close(fd);
	if (pthread_create(&t, NULL, netns_thread, &j) != 0) {
		unlink(path);
		return -EAGAIN;
	}
	pthread_join(t, NULL);
	if (j.r < 0)
		unlink(path);
	return j.r;
}

int op_netns_remove(const char *path)
{
	if (!path)
		return -EINVAL;
	if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
		return -errno;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* ---------------------------------------------------------------- log shim */

struct shim_stream {
	int fd;
	const char *name;
	char line[8192];
	size_t len;
};

struct shim {
	const char *path;
	char rotated[4096];
	int log_fd;
	size_t size, max;
};

static void shim_write(struct shim *s, const char *name, const char *data, size_t n)
{
	char head[OP_LOG_TIME_STRLEN + 16];
	struct timespec ts;
	size_t hl;

	if (s->size + n + sizeof(head) > s->max) {
		close(s->log_fd);
		rename(s->path, s->rotated);
		s->log_fd = open(s->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		s->size = 0;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	op_log_time((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, head);
	hl = strlen(head);
	head[hl++] = ' ';
	memcpy(head + hl, name, strlen(name));
	hl += strlen(name);
	head[hl++] = ' ';
	if (s->log_fd >= 0) {
		struct iovec_like { const char *p; size_t n; } parts[3] = { { head, hl }, { data, n }, { "\n", 1 } };

		for (int i = 0; i < 3; i++)
			if (write(s->log_fd, parts[i].p, parts[i].n) < 0)
				break;
	}
	s->size += hl + n + 1;
}

static _Noreturn void shim_run(int out_fd, int err_fd, const char *path, size_t max)
{
	struct shim_stream st[2] = { { .fd = out_fd, .name = "stdout" }, { .fd = err_fd, .name = "stderr" } };
	struct shim s = { .path = path, .max = max };
	struct stat sb;

	if ((size_t)snprintf(s.rotated, sizeof(s.rotated), "%s.1", path) >= sizeof(s.rotated))
		_exit(1);
	s.log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s.log_fd >= 0 && fstat(s.log_fd, &sb) == 0)
		s.size = (size_t)sb.st_size;
	while (st[0].fd >= 0 || st[1].fd >= 0) {
		struct pollfd p[2] = { { .fd = st[0].fd, .events = POLLIN }, { .fd = st[1].fd, .events = POLLIN } };

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			struct shim_stream *x = &st[i];
			ssize_t n;

			if (x->fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(x->fd, x->line + x->len, sizeof(x->line) - x->len);
			if (n <= 0) {
				if (n < 0 && (errno == EINTR || errno == EAGAIN))
					continue;
				if (x->len)
					shim_write(&s, x->name, x->line, x->len);
				x->len = 0;
				close(x->fd);
				x->fd = -1;
				continue;
			}
			x->len += (size_t)n;
			/* Whole lines out; a line longer than the buffer is split. */
			size_t start = 0;
			for (size_t k = 0; k < x->len; k++) {
				if (x->line[k] == '\n') {
					shim_write(&s, x->name, x->line + start, k - start);
					start = k + 1;
				}
			}
			if (start == 0 && x->len == sizeof(x->line)) {
				shim_write(&s, x->name, x->line, x->len);
				start = x->len;
			}
			memmove(x->line, x->line + start, x->len - start);
			x->len -= start;
		}
	}
	_exit(0);
}

int op_log_shim_start(int out_fd, int err_fd, const char *log_path, size_t max_bytes)
{
	pid_t pid;
	int status;

	if (out_fd < 0 || err_fd < 0 || !log_path)
		return -EINVAL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* The middle process exits at once: the shim is reparented
		 * and survives a SIGKILLed operator. */
		if (setsid() < 0 && errno != EPERM)
			_exit(1);
		pid_t shim = fork();

		if (shim < 0)
			_exit(1);
		if (shim > 0)
			_exit(0);
		for (int fd = 3; fd < 1024; fd++)
			if (fd != out_fd && fd != err_fd)
				close(fd);
		signal(SIGPIPE, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		shim_run(out_fd, err_fd, log_path, max_bytes ? max_bytes : (1u << 20));
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}
