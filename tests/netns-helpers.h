/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Namespaces for the datapath tests.  The test process first moves into a
 * private network and mount namespace (its "node"); endpoint namespaces
 * are held by child processes that die with the test (PR_SET_PDEATHSIG),
 * named by /proc/PID/ns/net, so nothing outlives a test, even a crashed
 * one.  Header-only: each test program is its own process tree.
 */
#ifndef FLASH_TESTS_NETNS_HELPERS_H
#define FLASH_TESTS_NETNS_HELPERS_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

/* Unmounts and removes a test's bpffs pin directory (nothing when unset). */
static inline void node_unpin(const char *pin_dir)
{
	if (pin_dir[0]) {
		umount2(pin_dir, MNT_DETACH);
		rmdir(pin_dir);
	}
}

/* Makes the calling process its own node: new netns, private mounts and
 * a private /tmp (a tmpfs seen only here: whatever a test leaves there,
 * even when it crashes, goes with the process). */
/* The build and source trees may themselves live under /tmp (a CI clone):
 * bind them back into the private /tmp at the same paths. */
static inline void node_keep_visible(const char *const *dirs, size_t n)
{
	int fds[4];
	char paths[4][PATH_MAX];
	size_t k = 0;

	for (size_t i = 0; i < n && k < 4; i++) {
		if (!dirs[i] || !realpath(dirs[i], paths[k]) || strncmp(paths[k], "/tmp/", 5) != 0)
			continue;
		fds[k] = open(paths[k], O_PATH | O_DIRECTORY | O_CLOEXEC);
		cr_assert(fds[k] >= 0, "open %s: %s", paths[k], strerror(errno));
		k++;
	}
	cr_assert(mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") == 0, "private /tmp: %s",
		  strerror(errno));
	for (size_t i = 0; i < k; i++) {
		char cmd[PATH_MAX + 16], src[64];

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", paths[i]);
		cr_assert(system(cmd) == 0, "%s", cmd);
		snprintf(src, sizeof(src), "/proc/self/fd/%d", fds[i]);
		cr_assert(mount(src, paths[i], NULL, MS_BIND | MS_REC, NULL) == 0, "bind %s: %s", paths[i],
			  strerror(errno));
		close(fds[i]);
	}
}

static inline void node_enter(void)
{
	char cwd[PATH_MAX];
	const char *keep[3] = { getenv("top_builddir"), getenv("top_srcdir"), getcwd(cwd, sizeof(cwd)) };

	REQUIRE_ROOT();
	if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0)
		cr_skip_test("unshare(CLONE_NEWNET|CLONE_NEWNS): %s", strerror(errno));
	cr_assert(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "make / private: %s", strerror(errno));
	node_keep_visible(keep, 3);
	cr_assert(system("ip link set lo up") == 0, "lo up");
}

struct test_ns {
	pid_t pid;
	char path[64];
};

/* A new netns held by a child (lo up); path is /proc/PID/ns/net. */
static inline void ns_spawn(struct test_ns *ns)
{
	int p[2];
	char c;

	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	ns->pid = fork();
	cr_assert(ns->pid >= 0, "fork");
	if (ns->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) < 0)
			_exit(1);
		if (system("ip link set lo up") != 0)
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	cr_assert(read(p[0], &c, 1) == 1, "netns child failed");
	close(p[0]);
	snprintf(ns->path, sizeof(ns->path), "/proc/%d/ns/net", (int)ns->pid);
}

static inline void ns_kill(struct test_ns *ns)
{
	if (ns->pid > 0) {
		kill(ns->pid, SIGKILL);
		waitpid(ns->pid, NULL, 0);
		ns->pid = 0;
	}
}

/* Enters @path (NULL: stays in the caller's netns) in a forked child that
 * dies with its parent (returns its pid; 0 in the child). */
static inline pid_t fork_in(const char *path)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (!path)
			return 0; /* stays in the caller's netns */
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
			_exit(126);
		close(fd);
	}
	return pid;
}

/* Runs a shell command inside @path; its exit status (-1 on signal). */
static inline int run_in(const char *path, const char *cmd)
{
	int st;
	pid_t pid = fork_in(path);

	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline void set_timeouts(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static inline socklen_t sockaddr_of(const char *ip, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		inet_pton(AF_INET6, ip, &s6->sin6_addr);
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	inet_pton(AF_INET, ip, &s4->sin_addr);
	return sizeof(*s4);
}

/* Server side of l4_echo: one TCP connection echoed, or UDP datagrams
 * echoed until 3 s pass without one. */
static inline int echo_server(const char *ip, int port, int type, int ready_fd)
{
	struct sockaddr_storage ss, peer;
	socklen_t len = sockaddr_of(ip, port, &ss), plen;
	int one = 1, fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0), c, echoed = 0;
	char buf[256];
	ssize_t n;

	if (fd < 0)
		return 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		return 2;
	if (type == SOCK_STREAM && listen(fd, 4) < 0)
		return 3;
	if (write(ready_fd, "r", 1) != 1)
		return 4;
	if (type == SOCK_STREAM) {
		set_timeouts(fd, 5000);
		c = accept(fd, NULL, NULL);
		if (c < 0)
			return 5;
		set_timeouts(c, 5000);
		n = read(c, buf, sizeof(buf));
		if (n <= 0 || write(c, buf, (size_t)n) != n)
			return 6;
		close(c);
	} else {
		set_timeouts(fd, 3000);
		for (;;) {
			plen = sizeof(peer);
			n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &plen);
			if (n <= 0)
				break;
			if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, plen) == n)
				echoed++;
		}
		if (!echoed)
			return 7;
	}
	close(fd);
	return 0;
}

/* Client side: TCP retransmits by itself; UDP is tried 3 times (a first
 * datagram can be lost while neighbours are resolved). */
static inline int echo_client(const char *ip, int port, int type)
{
	static const char msg[] = "flowsdn echo";
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(ip, port, &ss);
	int fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0), tries = type == SOCK_DGRAM ? 3 : 1;
	char buf[256];
	ssize_t n = -1;

	if (fd < 0)
		return 1;
	set_timeouts(fd, type == SOCK_DGRAM ? 1000 : 2000);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0)
		return 2;
	for (int i = 0; i < tries; i++) {
		if (write(fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			return 3;
		n = read(fd, buf, sizeof(buf));
		if (n == (ssize_t)sizeof(msg))
			break;
	}
	if (n != (ssize_t)sizeof(msg) || memcmp(buf, msg, sizeof(msg)) != 0)
		return 4;
	close(fd);
	return 0;
}

/*
 * A TCP (SOCK_STREAM) or UDP (SOCK_DGRAM) exchange from netns @from (NULL:
 * the caller's own) to @dst:@dport, answered by a server on
 * @srv_ip:@srv_port in netns @to (NULL: the caller's own): the two differ
 * when a service address translates to the server.  0 when the echo came
 * back (UDP: from @dst:@dport, the client's socket is connected).
 */
static inline int l4_echo_via(const char *from, const char *to, const char *srv_ip, int srv_port, const char *dst,
			      int dport, int type)
{
	int p[2], st_s, st_c;
	pid_t srv, cli;
	char c;

	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	srv = fork_in(to);
	if (srv == 0) {
		close(p[0]);
		_exit(echo_server(srv_ip, srv_port, type, p[1]));
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1) {
		close(p[0]);
		waitpid(srv, NULL, 0);
		return 100;
	}
	close(p[0]);
	cli = fork_in(from);
	if (cli == 0)
		_exit(echo_client(dst, dport, type));
	waitpid(cli, &st_c, 0);
	if (!WIFEXITED(st_c) || WEXITSTATUS(st_c) != 0 || type == SOCK_DGRAM) {
		/* Failed, or UDP echoed back: the server has nothing more to say. */
		kill(srv, SIGKILL);
		waitpid(srv, NULL, 0);
		if (WIFEXITED(st_c) && WEXITSTATUS(st_c) == 0)
			return 0;
		return WIFEXITED(st_c) ? 10 + WEXITSTATUS(st_c) : 99;
	}
	waitpid(srv, &st_s, 0);
	return WIFEXITED(st_s) ? WEXITSTATUS(st_s) ? 20 + WEXITSTATUS(st_s) : 0 : 98;
}

/* A TCP or UDP exchange from netns @from to @ip:@port served in netns @to. */
static inline int l4_echo(const char *from, const char *to, const char *ip, int port, int type)
{
	return l4_echo_via(from, to, ip, port, ip, port, type);
}

/*
 * A main() that runs the tests one at a time.  Namespace tests fork,
 * push traffic and time out on loss: on a 2-core machine running them in
 * parallel only adds noise (and Criterion 2.4's parallel runner leaks under
 * LeakSanitizer).  --jobs on the command line still overrides.
 */
#define SERIAL_TEST_MAIN()                                                  \
	int main(int argc, char *argv[])                                    \
	{                                                                   \
		struct criterion_test_set *tests = criterion_initialize(); \
		int result = 0;                                             \
									    \
		criterion_options.jobs = 1;                                 \
		if (criterion_handle_args(argc, argv, true))                \
			result = !criterion_run_all_tests(tests);           \
		criterion_finalize(tests);                                  \
		return result;                                              \
	}

#endif
