/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Web Shell sessions (exec.h): runsc exec under a pty or pipes, bridged
 * to a WebSocket by one thread per session.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <flash/client.h>

#include "exec.h"
#include "json.h"
#include "k8s-exec.h"
#include "runtime-internal.h"
#include "util.h"
#include "websocket.h"

#define MESSAGE_MAX ((1u << 20) + 16)  /* a client's message: 1 MiB of input and its channel */
#define CHUNK 65536
#define STDIN_PENDING_MAX (256u << 10) /* input waiting for the process: reading the socket pauses */
#define SEND_STALL_MS 30000            /* a client that reads nothing this long is gone */
#define DRAIN_MS 200                   /* output still coming after the process exited */
#define KILL_GRACE_MS 2000
#define PIDFILE_WAIT_MS 10000          /* runsc exec alive without its pid file: killed after */
#define PIDFILE_POLL_MS 20
#define ARGV_WAIT_MS 10000             /* argv_in_message: the first message within */
#define ARG_MAX_BYTES 65536            /* one argument, as the client's URL form allows */

struct op_shell {
	struct op_shell_opts o;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned int open;
	bool stopping;
	uint64_t seq;
	struct op_shell_session *sessions; /* running ones, under lock */
};

struct op_shell_session {
	struct op_shell *sh;
	char *who, *service, *term;
	struct op_exec_target target;
	char **argv;
	size_t argc;
	bool argv_pending;            /* argv_in_message: not read yet */
	bool tty;
	unsigned short cols, rows;
	uint64_t seq;
	int fd;
	uint8_t *extra;
	size_t extra_len;
	void (*done)(void *ctx);
	void *done_ctx;
	int wake[2];                  /* written by op_shell_free() */
	struct k8s_client *k8s;       /* Kubernetes mode (exec.h) */
	char *k8s_ns, *k8s_pod;
	struct k8s_exec *kx;          /* its pods/exec stream, once open */
	struct op_shell_session *next;

	/* The session thread's own. */
	struct ws_conn *ws;
	pid_t pid;
	int pidfd, master, in_fd, out_fd, err_fd;
	uint8_t *pending;             /* input not yet written to the process */
	size_t pending_len;
	bool stdin_eof, client_gone;
	uint64_t bytes_in, bytes_out;
	char procfile[4200], pidfile[4200];
	uint8_t buf[WS_FRAME_HEAD_MAX + 1 + CHUNK];
};

int op_shell_new(const struct op_shell_opts *opts, struct op_shell **ret)
{
	struct op_shell *sh;

	if (!ret || (opts && !OPTS_VALID(opts, op_shell_opts)))
		return -EINVAL;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	if (opts)
		memcpy(&sh->o, opts, opts->sz < sizeof(sh->o) ? opts->sz : sizeof(sh->o));
	sh->o.sz = sizeof(sh->o);
	if (!sh->o.max_sessions)
		sh->o.max_sessions = OP_SHELL_MAX_SESSIONS_DEFAULT;
	if (!sh->o.limit_s)
		sh->o.limit_s = OP_SHELL_LIMIT_S_DEFAULT;
	pthread_mutex_init(&sh->lock, NULL);
	pthread_cond_init(&sh->idle, NULL);
	*ret = sh;
	return 0;
}

unsigned int op_shell_open(struct op_shell *sh)
{
	unsigned int n;

	if (!sh)
		return 0;
	pthread_mutex_lock(&sh->lock);
	n = sh->open;
	pthread_mutex_unlock(&sh->lock);
	return n;
}

unsigned int op_shell_limit_s(const struct op_shell *sh)
{
	return sh ? sh->o.limit_s : 0;
}

void op_shell_free(struct op_shell *sh)
{
	if (!sh)
		return;
	pthread_mutex_lock(&sh->lock);
	sh->stopping = true;
	for (struct op_shell_session *s = sh->sessions; s; s = s->next)
		if (write(s->wake[1], "x", 1) < 0) {
			/* A full pipe was woken already. */
		}
	while (sh->open)
		pthread_cond_wait(&sh->idle, &sh->lock);
	pthread_mutex_unlock(&sh->lock);
	pthread_cond_destroy(&sh->idle);
	pthread_mutex_destroy(&sh->lock);
	free(sh);
}

static void session_free(struct op_shell_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->argc; i++)
		free(s->argv[i]);
	free(s->argv);
	free(s->who);
	free(s->service);
	free(s->term);
	free(s->extra);
	free(s->pending);
	ws_conn_free(s->ws);
	k8s_exec_free(s->kx);
	k8s_client_free(s->k8s);
	free(s->k8s_ns);
	free(s->k8s_pod);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	free(s);
}

/* Gives the slot back (and takes @s off the running list). */
static void release(struct op_shell_session *s)
{
	struct op_shell *sh = s->sh;

	pthread_mutex_lock(&sh->lock);
	for (struct op_shell_session **pp = &sh->sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	sh->open--;
	if (!sh->open)
		pthread_cond_broadcast(&sh->idle);
	pthread_mutex_unlock(&sh->lock);
	session_free(s);
}

int op_shell_reserve(struct op_shell *sh, const struct op_shell_params *p, struct op_shell_session **ret)
{
	static const char *const sh_argv[] = { "/bin/sh" };
	const char *const *argv = p && p->argv ? p->argv : sh_argv;
	size_t argc = p && p->argv ? p->argc : 1;
	struct op_shell_session *s;
	bool failed = false;

	if (!sh || !p || !p->target || !p->service_id || !ret || argc == 0 || argc > OP_SHELL_ARGS_MAX ||
	    (p->argv_in_message && p->argv) || (p->k8s && (!p->k8s_namespace || !p->k8s_pod)))
		return -EINVAL;
	if (p->argv_in_message)
		argc = 0; /* read from the first message (read_argv()) */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->wake[0] = s->wake[1] = -1;
	s->fd = s->pidfd = s->master = s->in_fd = s->out_fd = s->err_fd = -1;
	s->sh = sh;
	s->target = *p->target;
	s->tty = p->tty;
	s->cols = p->cols ? p->cols : 80;
	s->rows = p->rows ? p->rows : 24;
	s->who = strdup(p->who ? p->who : "");
	s->service = strdup(p->service_id);
	s->term = strdup(p->term ? p->term : "xterm");
	s->argv_pending = p->argv_in_message;
	s->argv = calloc(argc ? argc : 1, sizeof(*s->argv));
	if (p->k8s) {
		s->k8s_ns = strdup(p->k8s_namespace);
		s->k8s_pod = strdup(p->k8s_pod);
	}
	failed = !s->who || !s->service || !s->term || !s->argv || (p->k8s && (!s->k8s_ns || !s->k8s_pod));
	for (size_t i = 0; !failed && i < argc; i++) {
		s->argv[i] = strdup(argv[i]);
		failed = !s->argv[i];
		s->argc = i + 1;
	}
	if (failed || pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		session_free(s);
		return -ENOMEM;
	}
	pthread_mutex_lock(&sh->lock);
	if (sh->stopping || sh->open >= sh->o.max_sessions) {
		bool stopping = sh->stopping;

		pthread_mutex_unlock(&sh->lock);
		session_free(s);
		return stopping ? -ESHUTDOWN : -EBUSY;
	}
	sh->open++;
	s->seq = sh->seq++;
	pthread_mutex_unlock(&sh->lock);
	s->k8s = p->k8s; /* taken */
	*ret = s;
	return 0;
}

void op_shell_cancel(struct op_shell_session *s)
{
	if (s)
		release(s);
}

/* ---------------------------------------------------------------- process.json */

int op_shell_process_json(const char *bundle_config, size_t len, const char *const *argv, size_t argc, bool tty,
			  unsigned short cols, unsigned short rows, const char *term, char **ret, size_t *ret_len)
{
	struct json_value *doc = NULL;
	const struct json_value *proc, *env;
	struct json_writer *w;
	int r;

	if (!bundle_config || !argv || argc == 0 || !ret)
		return -EINVAL;
	r = json_parse(bundle_config, len, NULL, &doc, NULL);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL;
	proc = json_get(doc, "process");
	if (!proc || proc->type != JSON_OBJECT) {
		json_free(doc);
		return -EINVAL;
	}
	env = json_get(proc, "env");
	w = json_writer_new(0);
	jw_object_open(w);
	/* The workload's user, capabilities, rlimits, noNewPrivileges...;
	 * what a session sets itself is written after. */
	for (size_t i = 0; i < proc->u.object.n; i++) {
		const struct json_member *m = &proc->u.object.members[i];

		if (!strcmp(m->key, "args") || !strcmp(m->key, "cwd") || !strcmp(m->key, "terminal") ||
		    !strcmp(m->key, "consoleSize") || !strcmp(m->key, "env"))
			continue;
		jw_key(w, m->key);
		jw_value(w, m->value);
	}
	jw_kv_bool(w, "terminal", tty);
	if (tty) {
		jw_key(w, "consoleSize");
		jw_object_open(w);
		jw_kv_uint(w, "height", rows ? rows : 24);
		jw_kv_uint(w, "width", cols ? cols : 80);
		jw_object_close(w);
	}
	jw_kv_string(w, "cwd", "/root");
	jw_key(w, "args");
	jw_array_open(w);
	for (size_t i = 0; i < argc; i++)
		jw_string(w, argv[i]);
	jw_array_close(w);
	/* The workload's environment (the image's and the spec's variables,
	 * never the operator's), TERM for a terminal. */
	jw_key(w, "env");
	jw_array_open(w);
	for (size_t i = 0; env && env->type == JSON_ARRAY && i < env->u.array.n; i++) {
		const struct json_value *e = env->u.array.items[i];

		if (e->type != JSON_STRING || e->u.string.has_nul || (tty && !strncmp(e->u.string.ptr, "TERM=", 5)))
			continue;
		jw_string(w, e->u.string.ptr);
	}
	if (tty) {
		char t[80];

		snprintf(t, sizeof(t), "TERM=%s", term ? term : "xterm");
		jw_string(w, t);
	}
	jw_array_close(w);
	jw_object_close(w);
	json_free(doc);
	return json_writer_finish(w, ret, ret_len);
}

/* ---------------------------------------------------------------- the process */

static int write_file_excl(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600), r = 0;

	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		data += n;
		len -= (size_t)n;
	}
	close(fd);
	if (r < 0)
		unlink(path);
	return r;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* runsc exec --process under a pty or pipes; 0 or -errno with @err. */
static int spawn(struct op_shell_session *s, char *err, size_t err_size)
{
	static const char *const envp[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	const char *argv[] = { s->target.runsc, "--root", s->target.root, "--platform=ptrace", "--network=sandbox",
			       "exec", "--process", s->procfile, "--internal-pid-file", s->pidfile,
			       s->target.container, NULL };
	char *config = NULL, *proc = NULL, cfg_path[4200], slave_name[128];
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, errp[2] = { -1, -1 }, master = -1, r;
	size_t config_len = 0, proc_len = 0;
	pid_t pid;

	snprintf(cfg_path, sizeof(cfg_path), "%s/config.json", s->target.bundle);
	snprintf(s->procfile, sizeof(s->procfile), "%s/exec-%" PRIu64 ".json", s->target.bundle, s->seq);
	snprintf(s->pidfile, sizeof(s->pidfile), "%s/exec-%" PRIu64 ".pid", s->target.bundle, s->seq);
	r = util_read_file(cfg_path, 1 << 20, &config, &config_len);
	if (r < 0) {
		snprintf(err, err_size, "the replica's bundle cannot be read: %s", strerror(-r));
		return r;
	}
	r = op_shell_process_json(config, config_len, (const char *const *)s->argv, s->argc, s->tty, s->cols, s->rows,
				  s->term, &proc, &proc_len);
	free(config);
	if (r == 0)
		r = write_file_excl(s->procfile, proc, proc_len);
	free(proc);
	if (r < 0) {
		snprintf(err, err_size, "cannot write the session's process.json: %s", strerror(-r));
		return r;
	}
	if (s->tty) {
		struct winsize wsz = { .ws_row = s->rows, .ws_col = s->cols };

		master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
		    ptsname_r(master, slave_name, sizeof(slave_name)) != 0 || ioctl(master, TIOCSWINSZ, &wsz) < 0) {
			r = -errno;
			snprintf(err, err_size, "cannot make a pseudo-terminal: %s", strerror(errno));
			goto fail;
		}
	} else if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(err, err_size, "cannot make pipes: %s", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		snprintf(err, err_size, "cannot fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigset_t all;

		/* Async-signal-safe calls only from here. */
		for (int sig = 1; sig < NSIG; sig++)
			(void)sigaction(sig, &dfl, NULL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setsid();
		if (s->tty) {
			int sl = open(slave_name, O_RDWR);

			if (sl < 0 || ioctl(sl, TIOCSCTTY, 0) < 0)
				_exit(126);
			dup2(sl, 0);
			dup2(sl, 1);
			dup2(sl, 2);
		} else {
			dup2(in[0], 0);
			dup2(out[1], 1);
			dup2(errp[1], 2);
		}
		syscall(SYS_close_range, 3U, ~0U, 0U);
		execve(argv[0], (char *const *)argv, (char *const *)envp);
		_exit(127);
	}
	s->pid = pid;
#ifdef SYS_pidfd_open
	s->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
	if (s->tty) {
		s->master = master;
		set_nonblock(master);
		s->out_fd = master;
	} else {
		close(in[0]);
		close(out[1]);
		close(errp[1]);
		s->in_fd = in[1];
		s->out_fd = out[0];
		s->err_fd = errp[0];
		set_nonblock(s->in_fd);
		set_nonblock(s->out_fd);
		set_nonblock(s->err_fd);
	}
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	if (master >= 0)
		close(master);
	unlink(s->procfile);
	return r;
}

/* Waits up to @ms for the runsc exec child; true when it was reaped. */
static bool reap(struct op_shell_session *s, int ms, int *ret_status)
{
	int64_t end = util_mono_ms() + ms;

	for (;;) {
		pid_t r = waitpid(s->pid, ret_status, WNOHANG);

		if (r == s->pid)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
		if (util_mono_ms() >= end)
			return false;
		if (s->pidfd >= 0) {
			struct pollfd p = { .fd = s->pidfd, .events = POLLIN };

			poll(&p, 1, (int)(end - util_mono_ms() > 0 ? end - util_mono_ms() : 0));
		} else {
			usleep(10000);
		}
	}
}

/* The process's pid inside the sandbox, as runsc exec wrote it once the
 * process started (--internal-pid-file); 0 while there is none. */
static unsigned long sandbox_pid(const struct op_shell_session *s)
{
	char *text = NULL;
	size_t len = 0;
	unsigned long v = 0;

	if (util_read_file(s->pidfile, 64, &text, &len) == 0) {
		v = strtoul(text, NULL, 10);
		if (v >= 1u << 22)
			v = 0;
		free(text);
	}
	return v;
}

/* Ends the process in the sandbox (runsc kill --pid of its
 * container-internal pid), then runsc exec itself.  A session ended
 * before runsc exec wrote the pid file waits for it while runsc exec
 * lives (up to PIDFILE_WAIT_MS): killing runsc exec first would leave a
 * process it was starting running in the sandbox, unseen. */
static void kill_process(struct op_shell_session *s, int *ret_status)
{
	int64_t end = util_mono_ms() + PIDFILE_WAIT_MS;
	unsigned long v = sandbox_pid(s);
	char pidbuf[24];

	while (!v && util_mono_ms() < end) {
		if (reap(s, PIDFILE_POLL_MS, ret_status))
			return; /* runsc exec ended: so did the process, or it never started */
		v = sandbox_pid(s);
	}
	if (v) {
		const char *argv[] = { s->target.runsc, "--root", s->target.root, "kill", "--pid", pidbuf,
				       s->target.container, "KILL", NULL };
		struct op_exec e = { .argv = argv, .timeout_ms = 10000 };
		int st;

		snprintf(pidbuf, sizeof(pidbuf), "%lu", v);
		(void)op_exec_run(&e, &st, NULL, NULL);
	}
	if (!reap(s, KILL_GRACE_MS, ret_status)) {
		kill(s->pid, SIGKILL);
		reap(s, 10000, ret_status);
	}
}

/* ---------------------------------------------------------------- the socket */

static int send_raw(struct op_shell_session *s, const uint8_t *buf, size_t len)
{
	int64_t deadline = util_mono_ms() + SEND_STALL_MS;

	while (len) {
		ssize_t n = send(s->fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd p = { .fd = s->fd, .events = POLLOUT };
			int64_t left = deadline - util_mono_ms();

			if (left <= 0 || poll(&p, 1, (int)left) == 0)
				return -ETIMEDOUT;
			continue;
		}
		if (n <= 0)
			return -EPIPE;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_frame(struct op_shell_session *s, uint8_t opcode, const void *payload, size_t len)
{
	uint8_t head[WS_FRAME_HEAD_MAX + 125];
	long n;

	if (s->client_gone)
		return -EPIPE;
	if (len <= 125) {
		n = ws_frame_encode(opcode, true, false, payload, len, head, sizeof(head));
		return n < 0 ? (int)n : send_raw(s, head, (size_t)n);
	}
	/* Large payloads sit at s->buf + WS_FRAME_HEAD_MAX already. */
	n = ws_frame_encode(opcode, true, false, payload, len, s->buf, sizeof(s->buf));
	return n < 0 ? (int)n : send_raw(s, s->buf, (size_t)n);
}

/* Output of the process on @channel: read from @fd into the frame
 * buffer, sent.  false at end of file (or EIO: the pty closed). */
static bool pump_output(struct op_shell_session *s, int fd, uint8_t channel)
{
	uint8_t *p = s->buf + WS_FRAME_HEAD_MAX;
	ssize_t n = read(fd, p + 1, CHUNK);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		return false;
	p[0] = channel;
	s->bytes_out += (uint64_t)n;
	if (send_frame(s, WS_OP_BINARY, p, (size_t)n + 1) < 0)
		s->client_gone = true;
	return true;
}

static void flush_stdin(struct op_shell_session *s)
{
	int fd = s->tty ? s->master : s->in_fd;

	while (s->pending_len && fd >= 0) {
		ssize_t n = write(fd, s->pending, s->pending_len);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			s->pending_len = 0; /* the process closed its input */
			break;
		}
		memmove(s->pending, s->pending + n, s->pending_len - (size_t)n);
		s->pending_len -= (size_t)n;
	}
	if (!s->pending_len && s->stdin_eof && !s->tty && s->in_fd >= 0) {
		close(s->in_fd);
		s->in_fd = -1;
	}
}

static void on_resize(struct op_shell_session *s, const uint8_t *data, size_t len)
{
	struct json_value *doc = NULL;
	uint64_t c, r;

	if (!s->tty || json_parse((const char *)data, len, NULL, &doc, NULL) < 0)
		return;
	if (json_get_uint64(json_get(doc, "cols"), &c) == 0 && json_get_uint64(json_get(doc, "rows"), &r) == 0 &&
	    c > 0 && c <= 65535 && r > 0 && r <= 65535) {
		struct winsize wsz = { .ws_row = (unsigned short)r, .ws_col = (unsigned short)c };

		(void)ioctl(s->master, TIOCSWINSZ, &wsz);
	}
	json_free(doc);
}

/* Kubernetes mode: a client's data message passed on to pods/exec
 * (stdin, resize, stdin's end).  false: the stream to the API server
 * failed. */
static bool on_message_k8s(struct op_shell_session *s, const struct ws_message *m)
{
	int64_t deadline = util_mono_ms() + SEND_STALL_MS;
	int r = 0;

	switch (m->data[0]) {
	case FLASH_EXEC_STDIN:
		if (s->stdin_eof || m->len < 2)
			return true;
		s->bytes_in += m->len - 1;
		r = k8s_exec_write_stdin(s->kx, m->data + 1, m->len - 1, deadline);
		break;
	case FLASH_EXEC_RESIZE: {
		struct json_value *doc = NULL;
		uint64_t c, rw;

		if (s->tty && json_parse((const char *)m->data + 1, m->len - 1, NULL, &doc, NULL) == 0 &&
		    json_get_uint64(json_get(doc, "cols"), &c) == 0 && json_get_uint64(json_get(doc, "rows"), &rw) == 0 &&
		    c > 0 && c <= 65535 && rw > 0 && rw <= 65535)
			r = k8s_exec_resize(s->kx, (unsigned int)c, (unsigned int)rw, deadline);
		json_free(doc);
		break;
	}
	case FLASH_EXEC_CLOSE:
		if (m->len >= 2 && m->data[1] == FLASH_EXEC_STDIN && !s->stdin_eof) {
			s->stdin_eof = true;
			r = k8s_exec_close_stdin(s->kx, deadline);
			/* v4 has no close signal: a terminal ends its input
			 * with ^D, a pipe cannot be ended. */
			if (r == -EOPNOTSUPP)
				r = s->tty ? k8s_exec_write_stdin(s->kx, "\x04", 1, deadline) : 0;
		}
		break;
	default:
		break;
	}
	return r == 0 || r == -EBADF;
}

/* A message of the client.  false: the session is over (the client
 * closed or broke the protocol). */
static bool on_message(struct op_shell_session *s, const struct ws_message *m)
{
	switch (m->opcode) {
	case WS_OP_PING:
		(void)send_frame(s, WS_OP_PONG, m->data, m->len);
		return true;
	case WS_OP_PONG:
		return true;
	case WS_OP_CLOSE:
		return false;
	case WS_OP_TEXT:
		return true; /* not of this protocol: ignored */
	default:
		break;
	}
	if (m->len < 1)
		return true;
	if (s->kx)
		return on_message_k8s(s, m);
	switch (m->data[0]) {
	case FLASH_EXEC_STDIN:
		if (s->stdin_eof || (!s->tty && s->in_fd < 0))
			return true;
		if (m->len > 1) {
			uint8_t *np = realloc(s->pending, s->pending_len + m->len - 1);

			if (!np)
				return false;
			s->pending = np;
			memcpy(s->pending + s->pending_len, m->data + 1, m->len - 1);
			s->pending_len += m->len - 1;
			s->bytes_in += m->len - 1;
			flush_stdin(s);
		}
		return true;
	case FLASH_EXEC_RESIZE:
		on_resize(s, m->data + 1, m->len - 1);
		return true;
	case FLASH_EXEC_CLOSE:
		if (m->len >= 2 && m->data[1] == FLASH_EXEC_STDIN) {
			s->stdin_eof = true;
			flush_stdin(s);
		}
		return true;
	default:
		return true;
	}
}

/* Reads what the client sent; false when the session is over. */
static bool pump_input(struct op_shell_session *s, const char **reason)
{
	uint8_t tmp[CHUNK];
	size_t room = ws_conn_room(s->ws);
	ssize_t n = recv(s->fd, tmp, room < sizeof(tmp) ? room : sizeof(tmp), 0);
	struct ws_message m;
	int r;

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0 || ws_conn_feed(s->ws, tmp, (size_t)n) < 0) {
		s->client_gone = n == 0;
		*reason = "disconnected";
		return false;
	}
	while ((r = ws_conn_next(s->ws, &m)) == 1)
		if (!on_message(s, &m)) {
			*reason = "disconnected";
			return false;
		}
	if (r < 0) {
		uint8_t p[125];

		(void)send_frame(s, WS_OP_CLOSE, p, ws_close_payload(ws_conn_close_code(s->ws), ws_conn_error(s->ws), p));
		s->client_gone = true;
		*reason = "protocol-error";
		return false;
	}
	return true;
}

/* ---------------------------------------------------------------- audit */

static void audit(struct op_shell_session *s, const char *type, int64_t duration_ms, int status, const char *reason)
{
	struct json_writer *w;
	char *text = NULL;

	if (!s->sh->o.audit)
		return;
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_string(w, "who", s->who);
	jw_kv_uint(w, "replica", s->target.replica);
	jw_kv_bool(w, "tty", s->tty);
	jw_key(w, "argv");
	jw_array_open(w);
	for (size_t i = 0; i < s->argc; i++)
		jw_string(w, s->argv[i]);
	jw_array_close(w);
	if (duration_ms >= 0) {
		jw_kv_int(w, "duration_ms", duration_ms);
		if (status >= 0 && WIFEXITED(status))
			jw_kv_int(w, "exit_code", WEXITSTATUS(status));
		else if (status >= 0 && WIFSIGNALED(status))
			jw_kv_int(w, "signal", WTERMSIG(status));
		jw_kv_uint(w, "bytes_in", s->bytes_in);
		jw_kv_uint(w, "bytes_out", s->bytes_out);
		if (reason)
			jw_kv_string(w, "reason", reason);
	}
	jw_object_close(w);
	if (json_writer_finish(w, &text, NULL) == 0)
		s->sh->o.audit(s->sh->o.audit_ctx, s->service, type, text);
	free(text);
}

/* STATUS, then a close frame. */
static void finish(struct op_shell_session *s, int status, const char *reason, const char *message)
{
	struct json_writer *w = json_writer_new(0);
	char *text = NULL;
	size_t len = 0;
	uint8_t p[125];

	jw_object_open(w);
	if (status >= 0 && WIFSIGNALED(status)) {
		jw_kv_int(w, "exit_code", 128 + WTERMSIG(status));
		jw_kv_int(w, "signal", WTERMSIG(status));
	} else {
		jw_kv_int(w, "exit_code", status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 255);
	}
	if (reason) {
		jw_kv_string(w, "reason", reason);
		jw_kv_string(w, "message", message ? message : reason);
	}
	jw_object_close(w);
	if (json_writer_finish(w, &text, &len) == 0 && len < CHUNK) {
		uint8_t *q = s->buf + WS_FRAME_HEAD_MAX;

		q[0] = FLASH_EXEC_STATUS;
		memcpy(q + 1, text, len);
		(void)send_frame(s, WS_OP_BINARY, q, len + 1);
	}
	free(text);
	(void)send_frame(s, WS_OP_CLOSE, p, ws_close_payload(reason ? WS_CLOSE_GOING_AWAY : WS_CLOSE_NORMAL, reason, p));
}

/* After the process exited: what it wrote last, for a short while. */
static void drain(struct op_shell_session *s)
{
	int64_t end = util_mono_ms() + DRAIN_MS;

	while ((s->out_fd >= 0 || s->err_fd >= 0) && !s->client_gone) {
		struct pollfd p[2] = { { .fd = s->out_fd, .events = POLLIN }, { .fd = s->err_fd, .events = POLLIN } };
		int64_t left = end - util_mono_ms();

		if (left <= 0 || poll(p, 2, (int)left) <= 0)
			break;
		if (p[0].revents && !pump_output(s, s->out_fd, FLASH_EXEC_STDOUT)) {
			if (s->out_fd != s->master)
				close(s->out_fd);
			s->out_fd = -1;
		}
		if (p[1].revents && !pump_output(s, s->err_fd, FLASH_EXEC_STDERR)) {
			close(s->err_fd);
			s->err_fd = -1;
		}
	}
}

/* argv_in_message: the client's first data message, ARGV and a JSON
 * array of 1..OP_SHELL_ARGS_MAX strings (at most ARG_MAX_BYTES each),
 * within ARGV_WAIT_MS; pings are answered meanwhile.  0, or -EBADMSG /
 * -ETIMEDOUT / -ENOMEM / -EPIPE with @err. */
static int read_argv(struct op_shell_session *s, char *err, size_t err_size)
{
	int64_t end = util_mono_ms() + ARGV_WAIT_MS;
	struct json_value *doc = NULL;
	struct ws_message m;
	int r;

	for (;;) {
		uint8_t tmp[CHUNK];
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		int64_t left = end - util_mono_ms();
		size_t room = ws_conn_room(s->ws);
		ssize_t n;

		r = ws_conn_next(s->ws, &m);
		if (r < 0) {
			snprintf(err, err_size, "%s", ws_conn_error(s->ws));
			return -EBADMSG;
		}
		if (r == 1 && m.opcode == WS_OP_PING) {
			(void)send_frame(s, WS_OP_PONG, m.data, m.len);
			continue;
		}
		if (r == 1 && m.opcode != WS_OP_PONG)
			break;
		if (r == 1)
			continue;
		if (left <= 0) {
			snprintf(err, err_size, "no ARGV message within %d s (argv=message)", ARGV_WAIT_MS / 1000);
			return -ETIMEDOUT;
		}
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		n = recv(s->fd, tmp, room < sizeof(tmp) ? room : sizeof(tmp), 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0 || ws_conn_feed(s->ws, tmp, (size_t)n) < 0) {
			s->client_gone = n <= 0;
			snprintf(err, err_size, "the client went away before its ARGV message");
			return -EPIPE;
		}
	}
	if (m.opcode != WS_OP_BINARY || m.len < 1 || m.data[0] != FLASH_EXEC_ARGV ||
	    json_parse((const char *)m.data + 1, m.len - 1, NULL, &doc, NULL) < 0 || doc->type != JSON_ARRAY ||
	    doc->u.array.n == 0 || doc->u.array.n > OP_SHELL_ARGS_MAX) {
		json_free(doc);
		snprintf(err, err_size, "the first message must be ARGV (channel %d) with a JSON array of 1..%u strings",
			 FLASH_EXEC_ARGV, OP_SHELL_ARGS_MAX);
		return -EBADMSG;
	}
	free(s->argv);
	s->argv = calloc(doc->u.array.n, sizeof(*s->argv));
	r = s->argv ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < doc->u.array.n; i++) {
		const char *a = NULL;

		if (json_get_string(doc->u.array.items[i], &a) < 0 || doc->u.array.items[i]->u.string.has_nul ||
		    strlen(a) > ARG_MAX_BYTES) {
			snprintf(err, err_size, "ARGV item %zu is not a string of at most %d bytes without NUL", i,
				 ARG_MAX_BYTES);
			r = -EBADMSG;
		} else if (!(s->argv[i] = strdup(a))) {
			r = -ENOMEM;
		} else {
			s->argc = i + 1;
		}
	}
	json_free(doc);
	if (r == -ENOMEM)
		snprintf(err, err_size, "out of memory");
	s->argv_pending = r < 0;
	return r;
}

/* Kubernetes mode (exec.h): the session's process runs in the Pod through
 * pods/exec; client and API server are bridged message by message.  At
 * the time limit, shutdown or the client's end the stream to the API
 * server is closed: the kubelet then ends the process's terminal (a
 * hangup) and its stdin. */
static void k8s_session(struct op_shell_session *s, int64_t t0, int64_t deadline)
{
	struct k8s_exec_opts o = { .sz = sizeof(o), .namespace = s->k8s_ns, .pod = s->k8s_pod, .container = "app",
				   .argv = (const char *const *)s->argv, .argc = s->argc, .stdin = true,
				   .stdout = true, .stderr = !s->tty, .tty = s->tty };
	struct k8s_status st = { 0 };
	const char *reason = NULL;
	char msg[256];
	int status = -1, r, code = 0;

	r = k8s_exec_open(s->k8s, &o, &s->kx, &st);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "pods/exec of %s/%s: %s", s->k8s_ns, s->k8s_pod,
			 st.message ? st.message : strerror(-r));
		k8s_status_clear(&st);
		audit(s, "exec-start", -1, -1, NULL);
		audit(s, "exec-end", 0, -1, "start-failed");
		finish(s, -1, "start-failed", msg);
		return;
	}
	audit(s, "exec-start", -1, -1, NULL);
	if (s->tty)
		(void)k8s_exec_resize(s->kx, s->cols, s->rows, util_mono_ms() + SEND_STALL_MS);
	{
		struct ws_message m;

		while (ws_conn_next(s->ws, &m) == 1)
			if (!on_message(s, &m))
				reason = "disconnected";
	}
	while (!reason) {
		struct k8s_exec_output out;
		struct pollfd p[3] = { { .fd = s->wake[0], .events = POLLIN },
				       { .fd = s->fd, .events = POLLIN },
				       { .fd = k8s_exec_fd(s->kx), .events = POLLIN } };
		int64_t left = deadline - util_mono_ms();

		/* What the API server sent and the parser holds first. */
		while ((r = k8s_exec_read(s->kx, -1, &out)) == 1) {
			uint8_t *q = s->buf + WS_FRAME_HEAD_MAX;
			size_t n = out.len < CHUNK ? out.len : CHUNK;

			q[0] = out.channel == K8S_EXEC_STDOUT ? FLASH_EXEC_STDOUT : FLASH_EXEC_STDERR;
			memcpy(q + 1, out.data, n);
			s->bytes_out += n;
			if (send_frame(s, WS_OP_BINARY, q, n + 1) < 0)
				s->client_gone = true;
		}
		if (r == 0) {
			r = k8s_exec_exit_code(s->kx, &code, &st);
			if (r == 0) {
				status = (code & 0xff) << 8; /* a wait status: WEXITSTATUS() is the code */
			} else {
				reason = "exec-failed";
				snprintf(msg, sizeof(msg), "pods/exec: %s", st.message ? st.message : strerror(-r));
				k8s_status_clear(&st);
			}
			break;
		}
		if (r != -EAGAIN) {
			reason = "exec-failed";
			snprintf(msg, sizeof(msg), "pods/exec: %s", k8s_exec_error(s->kx));
			break;
		}
		if (s->client_gone) {
			reason = "disconnected";
			break;
		}
		if (left <= 0) {
			reason = "time-limit";
			break;
		}
		if (poll(p, 3, (int)left) < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			reason = "shutdown";
			break;
		}
		if (p[1].revents && !pump_input(s, &reason))
			break;
	}
	if (reason && !strcmp(reason, "time-limit"))
		snprintf(msg, sizeof(msg), "the session reached its limit of %u s and was ended", s->sh->o.limit_s);
	else if (reason && !strcmp(reason, "shutdown"))
		snprintf(msg, sizeof(msg), "the operator is shutting down");
	else if (reason && strcmp(reason, "exec-failed"))
		snprintf(msg, sizeof(msg), "%s", reason);
	k8s_exec_free(s->kx);
	s->kx = NULL;
	audit(s, "exec-end", util_mono_ms() - t0, status, reason);
	finish(s, status, reason, reason ? msg : NULL);
}

static void *session_main(void *arg)
{
	struct op_shell_session *s = arg;
	int64_t t0 = util_mono_ms(), deadline = t0 + (int64_t)s->sh->o.limit_s * 1000;
	const char *reason = NULL;
	char err[256], msg[160];
	int status = -1;
	bool exited = false;

	if (ws_conn_new(true, MESSAGE_MAX, &s->ws) < 0 ||
	    (s->extra_len && ws_conn_feed(s->ws, s->extra, s->extra_len) < 0)) {
		finish(s, -1, "internal", "out of memory");
		goto out;
	}
	if (s->argv_pending && read_argv(s, err, sizeof(err)) < 0) {
		audit(s, "exec-start", -1, -1, NULL);
		audit(s, "exec-end", 0, -1, "bad-argv");
		finish(s, -1, "bad-argv", err);
		goto out;
	}
	if (s->k8s) {
		k8s_session(s, t0, deadline);
		goto out;
	}
	if (spawn(s, err, sizeof(err)) < 0) {
		audit(s, "exec-start", -1, -1, NULL);
		audit(s, "exec-end", 0, -1, "start-failed");
		finish(s, -1, "start-failed", err);
		goto out;
	}
	audit(s, "exec-start", -1, -1, NULL);
	/* Bytes the server read with the head are messages too, and so is
	 * what came after ARGV. */
	{
		struct ws_message m;

		while (ws_conn_next(s->ws, &m) == 1)
			if (!on_message(s, &m))
				reason = "disconnected";
	}
	while (!reason && !exited) {
		struct pollfd p[6];
		int np = 0, i_ws = -1, i_pid = -1, i_out = -1, i_err = -1, i_in = -1;
		int64_t left = deadline - util_mono_ms();

		if (left <= 0) {
			reason = "time-limit";
			break;
		}
		p[np++] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		if (s->pending_len < STDIN_PENDING_MAX) {
			i_ws = np;
			p[np++] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
		}
		if (s->pidfd >= 0) {
			i_pid = np;
			p[np++] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
		}
		if (s->out_fd >= 0) {
			i_out = np;
			p[np++] = (struct pollfd){ .fd = s->out_fd, .events = POLLIN };
		}
		if (s->err_fd >= 0) {
			i_err = np;
			p[np++] = (struct pollfd){ .fd = s->err_fd, .events = POLLIN };
		}
		if (s->pending_len) {
			i_in = np;
			p[np++] = (struct pollfd){ .fd = s->tty ? s->master : s->in_fd, .events = POLLOUT };
		}
		/* Without a pidfd the child is looked at every 100 ms. */
		if (poll(p, (nfds_t)np, s->pidfd >= 0 ? (int)left : (int)(left < 100 ? left : 100)) < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			reason = "shutdown";
			break;
		}
		if (i_ws >= 0 && p[i_ws].revents && !pump_input(s, &reason))
			break;
		if (i_out >= 0 && p[i_out].revents && !pump_output(s, s->out_fd, FLASH_EXEC_STDOUT)) {
			if (s->out_fd != s->master)
				close(s->out_fd);
			s->out_fd = -1;
		}
		if (i_err >= 0 && p[i_err].revents && !pump_output(s, s->err_fd, FLASH_EXEC_STDERR)) {
			close(s->err_fd);
			s->err_fd = -1;
		}
		if (i_in >= 0 && p[i_in].revents)
			flush_stdin(s);
		if (s->client_gone) {
			reason = "disconnected";
			break;
		}
		if ((i_pid >= 0 && p[i_pid].revents) || s->pidfd < 0)
			exited = reap(s, 0, &status);
	}
	if (exited) {
		drain(s);
	} else {
		kill_process(s, &status);
	}
	if (reason && !strcmp(reason, "time-limit"))
		snprintf(msg, sizeof(msg), "the session reached its limit of %u s and was ended", s->sh->o.limit_s);
	else if (reason && !strcmp(reason, "shutdown"))
		snprintf(msg, sizeof(msg), "the operator is shutting down");
	else
		snprintf(msg, sizeof(msg), "%s", reason ? reason : "");
	audit(s, "exec-end", util_mono_ms() - t0, status, reason);
	finish(s, status, reason, msg);
	unlink(s->procfile);
	unlink(s->pidfile);
out:
	if (s->pidfd >= 0)
		close(s->pidfd);
	if (s->master >= 0)
		close(s->master);
	if (s->in_fd >= 0)
		close(s->in_fd);
	if (s->out_fd >= 0 && s->out_fd != s->master)
		close(s->out_fd);
	if (s->err_fd >= 0)
		close(s->err_fd);
	s->done(s->done_ctx);
	release(s);
	return NULL;
}

int op_shell_start(struct op_shell_session *s, int fd, const void *extra, size_t extra_len, void (*done)(void *ctx),
		   void *done_ctx)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (!s || fd < 0 || !done || (extra_len && !extra))
		return -EINVAL;
	if (extra_len) {
		s->extra = malloc(extra_len);
		if (!s->extra) {
			release(s);
			return -ENOMEM;
		}
		memcpy(s->extra, extra, extra_len);
		s->extra_len = extra_len;
	}
	s->fd = fd;
	s->done = done;
	s->done_ctx = done_ctx;
	pthread_mutex_lock(&s->sh->lock);
	s->next = s->sh->sessions;
	s->sh->sessions = s;
	if (s->sh->stopping && write(s->wake[1], "x", 1) < 0) {
		/* The pipe is non-blocking and new: never full. */
	}
	pthread_mutex_unlock(&s->sh->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &attr, session_main, s);
	pthread_attr_destroy(&attr);
	if (r < 0)
		release(s);
	return r;
}
