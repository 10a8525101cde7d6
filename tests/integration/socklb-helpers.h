/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A node for the socket LB tests: a private netns + mount ns (the test's
 * "node"), the datapath in a private bpffs with the socket LB attached to
 * a cgroup made for the test under the cgroup v2 mount, and one backend
 * netns behind a veth holding 10.210.1.2, 10.210.1.3, fd00:210::2 and
 * fd00:210::3, where a server answers on port 8080 (TCP and UDP) with the
 * last digit of the address it was reached on ("2" or "3"): TCP sends it
 * on accept and then echoes, UDP answers every datagram with it.  Clients
 * run in children that join the test cgroup.  Header-only.
 */
#ifndef FLASH_TESTS_SOCKLB_HELPERS_H
#define FLASH_TESTS_SOCKLB_HELPERS_H

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <flowsdn/datapath.h>
#include <flowsdn/maglev.h>

#include "netns-helpers.h"

#define SOCKLB_BACKENDS 2
#define SOCKLB_B2 1u   /* 10.210.1.2:8080 */
#define SOCKLB_B3 2u   /* 10.210.1.3:8080 */
#define SOCKLB_B2_6 4u /* [fd00:210::2]:8080 */
#define SOCKLB_B3_6 8u /* [fd00:210::3]:8080 */
#define SOCKLB_PORT 8080
#define SOCKLB_MAX_SVC 8
#define SOCKLB_MAX_HOLD 4
#define SOCKLB_MAGLEV_M 251

enum socklb_mode { SOCKLB_TCP, SOCKLB_UDP_CONNECTED, SOCKLB_UDP_SENDTO };

struct socklb_result {
	int err;       /* errno of the first failing call, 0 */
	char who[32];  /* the backend's digit, one per exchange */
	char peer[64]; /* getpeername() */
	char from[64]; /* source of the (last) UDP reply */
};

struct socklb_svc {
	bool used;
	struct flowsdn_lb_backend backends[4];
	uint32_t table[SOCKLB_MAGLEV_M];
	struct flowsdn_lb_set set;
	struct flowsdn_lb_frontend fe;
	struct flowsdn_lb_service svc;
};

struct socklb_hold {
	pid_t pid;
	int cmd, res;
};

struct socklb_node {
	struct test_ns ns;
	pid_t server;
	char pin_dir[64];
	char cgroup[PATH_MAX];
	struct flowsdn_datapath *dp;
	struct flowsdn_maps *maps;
	struct socklb_svc svc[SOCKLB_MAX_SVC];
	struct socklb_hold hold[SOCKLB_MAX_HOLD];
	size_t n_hold;
};

static inline void socklb_log(enum flowsdn_log_level level, const char *msg, void *u)
{
	(void)u;
	if (level <= FLOWSDN_LOG_WARNING)
		fprintf(stderr, "flowsdn: %s\n", msg);
}

/* The mount point of cgroup v2 ("" when there is none). */
static inline void socklb_cgroup2_mount(char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	buf[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], *sep = strstr(line, " - ");

		if (!sep || strncmp(sep, " - cgroup2 ", 11) != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && strlen(mnt) < size) {
			snprintf(buf, size, "%s", mnt);
			break;
		}
	}
	fclose(f);
}

static inline char socklb_addr_digit(const struct sockaddr_storage *ss)
{
	const unsigned char *b;

	if (ss->ss_family == AF_INET) {
		b = (const unsigned char *)&((const struct sockaddr_in *)ss)->sin_addr;
		return (char)('0' + b[3]);
	}
	b = (const unsigned char *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
	return (char)('0' + b[15]);
}

/* The backend server (in the backend netns, never returns). */
static inline void socklb_serve(int ready_fd)
{
	static const char *const addrs[] = { "10.210.1.2", "10.210.1.3", "fd00:210::2", "fd00:210::3" };
	struct pollfd pfd[8 + 64];
	char digit[8 + 64];
	int kind[8 + 64]; /* 0 listener, 1 udp, 2 connection */
	size_t n = 0;

	for (size_t i = 0; i < 4; i++) {
		for (int t = 0; t < 2; t++) {
			struct sockaddr_storage ss;
			socklen_t len = sockaddr_of(addrs[i], SOCKLB_PORT, &ss);
			int one = 1, fd = socket(ss.ss_family, (t ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);

			if (fd < 0)
				_exit(1);
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (ss.ss_family == AF_INET6)
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
			if (bind(fd, (struct sockaddr *)&ss, len) < 0 || (!t && listen(fd, 64) < 0))
				_exit(2);
			pfd[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
			digit[n] = socklb_addr_digit(&ss);
			kind[n++] = t ? 1 : 0;
		}
	}
	if (write(ready_fd, "r", 1) != 1)
		_exit(3);
	for (;;) {
		if (poll(pfd, n, -1) < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			char buf[256];
			struct sockaddr_storage peer;
			socklen_t plen = sizeof(peer);
			ssize_t r;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (kind[i] == 0) {
				int c = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC);

				if (c < 0)
					continue;
				if (write(c, &digit[i], 1) != 1 || n >= 8 + 64) {
					close(c);
					continue;
				}
				pfd[n] = (struct pollfd){ .fd = c, .events = POLLIN };
				digit[n] = digit[i];
				kind[n++] = 2;
			} else if (kind[i] == 1) {
				r = recvfrom(pfd[i].fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &plen);
				if (r >= 0)
					sendto(pfd[i].fd, &digit[i], 1, 0, (struct sockaddr *)&peer, plen);
			} else {
				r = read(pfd[i].fd, buf, sizeof(buf));
				if (r <= 0 || write(pfd[i].fd, buf, (size_t)r) != r) {
					close(pfd[i].fd);
					pfd[i] = pfd[n - 1];
					digit[i] = digit[n - 1];
					kind[i] = kind[n - 1];
					n--;
					i--;
				}
			}
		}
	}
}

static inline void socklb_node_up(struct socklb_node *nd)
{
	char mnt[PATH_MAX], cmd[256];
	int p[2], r;
	char c;

	memset(nd, 0, sizeof(*nd));
	node_enter();
	flowsdn_set_log(socklb_log, FLOWSDN_LOG_WARNING, NULL);
	socklb_cgroup2_mount(mnt, sizeof(mnt));
	if (!mnt[0])
		cr_skip_test("no cgroup v2 mount: the socket LB attaches to a cgroup v2 directory");
	snprintf(nd->pin_dir, sizeof(nd->pin_dir), "/tmp/flowsdn-socklb-XXXXXX");
	cr_assert(mkdtemp(nd->pin_dir), "mkdtemp");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = nd->pin_dir);
	r = flowsdn_datapath_open(&o, &nd->dp);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	nd->maps = flowsdn_datapath_maps(nd->dp);

	ns_spawn(&nd->ns);
	snprintf(cmd, sizeof(cmd), "ip link add fsl0 type veth peer name eth0 netns %d", (int)nd->ns.pid);
	cr_assert(system(cmd) == 0, "%s", cmd);
	cr_assert(system("ip addr add 10.210.1.1/24 dev fsl0 && ip -6 addr add fd00:210::1/64 dev fsl0 nodad && "
			 "ip link set fsl0 up") == 0,
		  "host side of the backend veth");
	cr_assert(run_in(nd->ns.path, "ip addr add 10.210.1.2/24 dev eth0 && ip addr add 10.210.1.3/24 dev eth0 && "
				      "ip -6 addr add fd00:210::2/64 dev eth0 nodad && "
				      "ip -6 addr add fd00:210::3/64 dev eth0 nodad && ip link set eth0 up") == 0,
		  "backend addresses");
	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	nd->server = fork_in(nd->ns.path);
	if (nd->server == 0) {
		close(p[0]);
		socklb_serve(p[1]);
	}
	close(p[1]);
	cr_assert(read(p[0], &c, 1) == 1, "backend server did not start");
	close(p[0]);

	snprintf(nd->cgroup, sizeof(nd->cgroup), "%s/flowsdn-socklb-%d", mnt, (int)getpid());
	cr_assert(mkdir(nd->cgroup, 0755) == 0, "mkdir %s: %s", nd->cgroup, strerror(errno));
	r = flowsdn_datapath_socklb_attach(nd->dp, nd->cgroup);
	cr_assert(r == 0, "socket LB attach to %s: %s", nd->cgroup, flowsdn_strerror(r));
}

static inline void socklb_node_down(struct socklb_node *nd)
{
	for (size_t i = 0; i < nd->n_hold; i++) {
		kill(nd->hold[i].pid, SIGKILL);
		waitpid(nd->hold[i].pid, NULL, 0);
		close(nd->hold[i].cmd);
		close(nd->hold[i].res);
	}
	nd->n_hold = 0;
	if (nd->server > 0) {
		kill(nd->server, SIGKILL);
		waitpid(nd->server, NULL, 0);
	}
	ns_kill(&nd->ns);
	if (nd->dp)
		flowsdn_datapath_socklb_detach(nd->dp);
	flowsdn_datapath_free(nd->dp);
	nd->dp = NULL;
	if (nd->cgroup[0]) {
		/* Its clients are reaped; the kernel may lag a moment. */
		for (int i = 0; i < 50 && rmdir(nd->cgroup) < 0 && errno == EBUSY; i++)
			usleep(20000);
	}
	if (nd->pin_dir[0]) {
		umount2(nd->pin_dir, MNT_DETACH);
		rmdir(nd->pin_dir);
	}
}

static inline int socklb_backend_index(char digit)
{
	cr_assert(digit == '2' || digit == '3', "answer '%c' from no backend", digit);
	return digit - '2';
}

static inline void socklb_format(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN] = "";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s->sin_addr, a, sizeof(a));
		snprintf(buf, size, "%s:%u", a, ntohs(s->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof(a));
		snprintf(buf, size, "[%s]:%u", a, ntohs(s->sin6_port));
	} else {
		snprintf(buf, size, "family %u", ss->ss_family);
	}
}

static inline const char *socklb_frontend_text(const char *ip, int port)
{
	static char buf[64];
	struct sockaddr_storage ss;

	sockaddr_of(ip, port, &ss);
	socklb_format(&ss, buf, sizeof(buf));
	return buf;
}

static inline void socklb_join(const struct socklb_node *nd)
{
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", nd->cgroup);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		_exit(120);
	close(fd);
}

/* The client's side of one socklb_run(), in the child. */
static inline void socklb_client(enum socklb_mode mode, const char *ip, int port, int count, struct socklb_result *r)
{
	struct sockaddr_storage ss, peer;
	socklen_t len = sockaddr_of(ip, port, &ss), plen;
	int fd = socket(ss.ss_family, (mode == SOCKLB_TCP ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);

	memset(r, 0, sizeof(*r));
	if (fd < 0) {
		r->err = errno;
		return;
	}
	set_timeouts(fd, 2000);
	if (mode != SOCKLB_UDP_SENDTO && connect(fd, (struct sockaddr *)&ss, len) < 0) {
		r->err = errno;
		return;
	}
	if (mode == SOCKLB_TCP) {
		if (read(fd, r->who, 1) != 1)
			r->err = errno ? errno : EIO;
	} else {
		for (int i = 0; i < count && i < (int)sizeof(r->who) - 1; i++) {
			ssize_t n = -1;

			for (int t = 0; t < 3 && n != 1; t++) {
				if (sendto(fd, "x", 1, 0, mode == SOCKLB_UDP_SENDTO ? (struct sockaddr *)&ss : NULL,
					   mode == SOCKLB_UDP_SENDTO ? len : 0) != 1) {
					r->err = errno;
					return;
				}
				plen = sizeof(peer);
				n = recvfrom(fd, &r->who[i], 1, 0, (struct sockaddr *)&peer, &plen);
			}
			if (n != 1) {
				r->err = errno ? errno : EIO;
				return;
			}
			socklb_format(&peer, r->from, sizeof(r->from));
		}
	}
	plen = sizeof(peer);
	if (mode != SOCKLB_UDP_SENDTO && getpeername(fd, (struct sockaddr *)&peer, &plen) == 0)
		socklb_format(&peer, r->peer, sizeof(r->peer));
	close(fd);
}

static inline void socklb_run_as(const struct socklb_node *nd, bool in_cgroup, enum socklb_mode mode, const char *ip,
				 int port, int count, struct socklb_result *ret)
{
	int p[2], st;
	pid_t pid;

	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		struct socklb_result r;

		close(p[0]);
		if (in_cgroup)
			socklb_join(nd);
		socklb_client(mode, ip, port, count, &r);
		_exit(write(p[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(p[1]);
	cr_assert(read(p[0], ret, sizeof(*ret)) == (ssize_t)sizeof(*ret), "client child failed");
	close(p[0]);
	waitpid(pid, &st, 0);
}

static inline void socklb_run(const struct socklb_node *nd, enum socklb_mode mode, const char *ip, int port, int count,
			      struct socklb_result *ret)
{
	socklb_run_as(nd, true, mode, ip, port, count, ret);
}

static inline void socklb_run_outside(const struct socklb_node *nd, enum socklb_mode mode, const char *ip, int port,
				      struct socklb_result *ret)
{
	socklb_run_as(nd, false, mode, ip, port, 1, ret);
}

/* Points the service's pointers into the struct itself (after a copy). */
static inline void socklb_svc_fixup(struct socklb_svc *s)
{
	s->set.backends = s->backends;
	s->set.maglev_table = s->table;
	s->svc = (struct flowsdn_lb_service){ .sets = &s->set, .n_sets = 1, .frontends = &s->fe, .n_frontends = 1 };
}

/*
 * Publishes service @id (1..SOCKLB_MAX_SVC-1) with frontend @ip:@port/@proto
 * and the backends of @mask (ids 10*id+2, 10*id+3), over what the same id
 * published before.  @flags FLOWSDN_SVC_F_AFFINITY (timeout @timeout) /
 * _MAGLEV (M = SOCKLB_MAGLEV_M); @terminating lists the digits of the
 * backends that are terminating (NULL: none).
 */
static inline void socklb_publish(struct socklb_node *nd, uint32_t id, const char *ip, int port, uint8_t proto,
				  unsigned int mask, uint32_t flags, uint32_t timeout, const char *terminating)
{
	static const char *const addrs[] = { "10.210.1.2", "10.210.1.3", "fd00:210::2", "fd00:210::3" };
	struct socklb_svc *s, nsvc;
	struct flowsdn_maglev_backend mb[4];
	char keys[4][64];
	size_t nb = 0, nm = 0;
	int r;

	cr_assert(id > 0 && id < SOCKLB_MAX_SVC);
	s = &nd->svc[id];
	memset(&nsvc, 0, sizeof(nsvc));
	for (unsigned int i = 0; i < 4; i++) {
		struct flowsdn_lb_backend *b = &nsvc.backends[nb];
		char digit = (char)('2' + (i & 1));

		if (!(mask & (1u << i)))
			continue;
		b->id = 10 * id + (uint32_t)(digit - '0');
		ASSERT_OK(flowsdn_addr_parse(addrs[i], strlen(addrs[i]), &b->addr), addrs[i]);
		b->port = SOCKLB_PORT;
		b->protocol = proto;
		b->weight = 1;
		b->state = terminating && strchr(terminating, digit) ? FLOWSDN_BACKEND_TERMINATING : FLOWSDN_BACKEND_ACTIVE;
		if (b->state == FLOWSDN_BACKEND_ACTIVE) {
			snprintf(keys[nm], sizeof(keys[nm]), "%s:%d", addrs[i], SOCKLB_PORT);
			mb[nm] = (struct flowsdn_maglev_backend){ .key = keys[nm], .key_len = strlen(keys[nm]),
								  .weight = 1, .id = b->id };
			nm++;
		}
		nb++;
	}
	nsvc.set = (struct flowsdn_lb_set){ .svc_id = id, .flags = flags, .affinity_timeout = timeout,
					    .backends = nsvc.backends, .n_backends = nb };
	ASSERT_OK(flowsdn_addr_parse(ip, strlen(ip), &nsvc.fe.addr), ip);
	nsvc.fe.port = (uint16_t)port;
	nsvc.fe.protocol = proto;
	nsvc.fe.scope = FLOWSDN_SVC_SCOPE_EXTERNAL;
	nsvc.used = true;
	if (flags & FLOWSDN_SVC_F_MAGLEV) {
		ASSERT_OK(flowsdn_maglev_build(mb, nm, SOCKLB_MAGLEV_M, NULL, nsvc.table), "maglev build");
		nsvc.set.maglev_size = SOCKLB_MAGLEV_M;
	}
	socklb_svc_fixup(&nsvc);
	r = flowsdn_maps_service_publish(nd->maps, &nsvc.svc, s->used ? &s->svc : NULL);
	cr_assert(r == 0, "publish service %u: %s", id, flowsdn_strerror(r));
	*s = nsvc;
	socklb_svc_fixup(s);
}

static inline void socklb_remove(struct socklb_node *nd, uint32_t id)
{
	cr_assert(nd->svc[id].used, "service %u never published", id);
	ASSERT_OK(flowsdn_maps_service_remove(nd->maps, &nd->svc[id].svc), "remove");
	memset(&nd->svc[id], 0, sizeof(nd->svc[id]));
}

/* Entries of the pinned map @name. */
static inline size_t socklb_map_count(const struct socklb_node *nd, const char *name)
{
	char path[PATH_MAX], key[64], next[64];
	size_t n = 0;
	int fd;
	void *prev = NULL;

	snprintf(path, sizeof(path), "%s/%s", nd->pin_dir, name);
	fd = bpf_obj_get(path);
	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, sizeof(key));
		prev = key;
		n++;
	}
	close(fd);
	return n;
}

/* A connected TCP (@type SOCK_STREAM) or UDP (SOCK_DGRAM) socket from the
 * cgroup to @ip:@port, kept open by a child after a first exchange,
 * made in the netns at @netns (NULL: the node's, as a host process; else
 * as a process of a runc-style endpoint); returns its handle for
 * socklb_hold_ping(). */
static inline int socklb_hold_in(struct socklb_node *nd, const char *netns, int type, const char *ip, int port)
{
	int cmd[2], res[2];
	struct socklb_hold *h;
	char c;

	cr_assert(nd->n_hold < SOCKLB_MAX_HOLD);
	h = &nd->hold[nd->n_hold];
	cr_assert(pipe2(cmd, O_CLOEXEC) == 0 && pipe2(res, O_CLOEXEC) == 0);
	h->pid = fork();
	cr_assert(h->pid >= 0);
	if (h->pid == 0) {
		struct sockaddr_storage ss;
		socklen_t len = sockaddr_of(ip, port, &ss);
		int fd;
		char who, buf[8];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		socklb_join(nd);
		if (netns) {
			int nfd = open(netns, O_RDONLY | O_CLOEXEC);

			if (nfd < 0 || setns(nfd, CLONE_NEWNET) < 0)
				_exit(126);
			close(nfd);
		}
		fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
		set_timeouts(fd, 2000);
		if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0 ||
		    (type == SOCK_DGRAM && write(fd, "x", 1) != 1) || read(fd, &who, 1) != 1)
			_exit(1);
		if (write(res[1], &who, 1) != 1)
			_exit(1);
		while (read(cmd[0], buf, 1) == 1) {
			/* TCP: the server echoes; UDP: it answers its digit. */
			unsigned char err = 0;
			ssize_t n;

			errno = 0;
			if (write(fd, "ping", 4) != 4)
				err = (unsigned char)(errno ? errno : EIO);
			else if ((n = read(fd, buf, sizeof(buf))) != (type == SOCK_STREAM ? 4 : 1))
				err = (unsigned char)(errno ? errno : EIO);
			if (write(res[1], &err, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(cmd[0]);
	close(res[1]);
	h->cmd = cmd[1];
	h->res = res[0];
	cr_assert(read(h->res, &c, 1) == 1, "held connection failed");
	nd->n_hold++;
	return (int)(nd->n_hold - 1);
}

static inline int socklb_hold(struct socklb_node *nd, int type, const char *ip, int port)
{
	return socklb_hold_in(nd, NULL, type, ip, port);
}

/* 0 when the held socket @h still exchanges, else the errno it got. */
static inline int socklb_hold_ping(struct socklb_node *nd, int h)
{
	unsigned char c = 'p';

	cr_assert(write(nd->hold[h].cmd, &c, 1) == 1);
	cr_assert(read(nd->hold[h].res, &c, 1) == 1, "held socket child died");
	return c;
}

#endif
