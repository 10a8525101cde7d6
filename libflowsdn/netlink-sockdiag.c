/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn_netlink_sock_destroy() (<flowsdn/netlink.h>): sockets of the
 * calling thread's network namespace connected to a peer are found with a
 * sock_diag dump (NETLINK_SOCK_DIAG, inet_diag_req_v2) and destroyed one
 * by one with SOCK_DESTROY (CONFIG_INET_DIAG_DESTROY), so that their
 * owners get ECONNABORTED and reconnect.  libnl has no sock_diag module
 * in the libraries we link, so this speaks the protocol directly.
 * flowsdn_netlink_sock_destroy_netns() does the same in another netns: a
 * helper thread enters it only to open the sock_diag socket, which
 * answers for the namespace it was opened in, and the caller's thread
 * speaks through it.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <flowsdn/netlink.h>

#include "internal.h"
#include "netlink-sockdiag.h"

static int nl_send(int fd, uint16_t type, uint16_t flags, uint8_t family, uint8_t protocol,
		   const struct inet_diag_sockid *id, uint32_t seq)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 req;
	} msg;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	memset(&msg, 0, sizeof(msg));
	msg.nh.nlmsg_len = sizeof(msg);
	msg.nh.nlmsg_type = type;
	msg.nh.nlmsg_flags = NLM_F_REQUEST | flags;
	msg.nh.nlmsg_seq = seq;
	msg.req.sdiag_family = family;
	msg.req.sdiag_protocol = protocol;
	msg.req.idiag_states = ~0u;
	if (id)
		msg.req.id = *id;
	else
		msg.req.id.idiag_cookie[0] = msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return 0;
}

/* Whether the peer of @id (socket family @family) is @peer:@port; an
 * AF_INET6 socket matches an IPv4 peer through its IPv4-mapped form. */
static bool peer_is(const struct inet_diag_sockid *id, uint8_t family, const struct flowsdn_addr *peer, uint16_t port)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const uint8_t *dst = (const uint8_t *)id->idiag_dst;

	if (ntohs(id->idiag_dport) != port)
		return false;
	if (family == AF_INET)
		return peer->family == FLOWSDN_AF_INET && !memcmp(dst, peer->bytes, 4);
	if (peer->family == FLOWSDN_AF_INET6)
		return !memcmp(dst, peer->bytes, 16);
	return !memcmp(dst, mapped, 12) && !memcmp(dst + 12, peer->bytes, 4);
}

static int victims_add(struct flowsdn__sockdiag_victims *v, const struct inet_diag_sockid *id, uint8_t family)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		struct inet_diag_sockid *ids;
		uint8_t *fams;

		if (cap > FLOWSDN__SOCKDIAG_VICTIMS_MAX)
			return -E2BIG;
		ids = realloc(v->ids, cap * sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		v->ids = ids;
		fams = realloc(v->families, cap);
		if (!fams)
			return -ENOMEM;
		v->families = fams;
		v->cap = cap;
	}
	v->ids[v->n] = *id;
	v->families[v->n++] = family;
	return 0;
}

void flowsdn__sockdiag_victims_clear(struct flowsdn__sockdiag_victims *v)
{
	free(v->ids);
	free(v->families);
	*v = (struct flowsdn__sockdiag_victims){ 0 };
}

int flowsdn__sockdiag_parse(const void *buf, size_t len, uint32_t seq, uint8_t family,
			    const struct flowsdn_addr *peer, uint16_t port, struct flowsdn__sockdiag_victims *v)
{
	const struct nlmsghdr *nh = buf;
	int r;

	/* NLMSG_NEXT() would subtract the padding of a last message that
	 * has none from @len (a size_t: wrapped, and the next header read
	 * past the buffer); the walk stops there instead. */
	for (; NLMSG_OK(nh, len); len -= NLMSG_ALIGN(nh->nlmsg_len),
				   nh = (const void *)((const char *)nh + NLMSG_ALIGN(nh->nlmsg_len))) {
		if (nh->nlmsg_seq != seq)
			goto next;
		if (nh->nlmsg_type == NLMSG_DONE)
			return 1;
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);

			/* NLMSG_OK() checked nlmsg_len against @len: the
			 * nlmsgerr is inside the buffer once it is inside
			 * the message. */
			if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)) || e->error > 0 || e->error < -4095)
				return -EBADMSG;
			return e->error == 0 ? 1 : e->error;
		}
		if (v && nh->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    nh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(nh);

			/* the kernel answers a dump of @family with sockets
			 * of that family only; any other would be read with
			 * the wrong address layout */
			if (m->idiag_family == family && peer_is(&m->id, family, peer, port)) {
				r = victims_add(v, &m->id, family);
				if (r < 0)
					return r;
			}
		}
next:
		if (NLMSG_ALIGN(nh->nlmsg_len) >= len)
			break;
	}
	return 0;
}

/* Reads the answers to request @seq: the dump (@v non-NULL collects the
 * matches) or the ack of a destroy (its error, 0). */
static int nl_recv(int fd, uint32_t seq, uint8_t family, const struct flowsdn_addr *peer, uint16_t port,
		   struct flowsdn__sockdiag_victims *v)
{
	_cleanup_free_ char *buf = malloc(32768);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = recv(fd, buf, 32768, 0);
		int r;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* SO_RCVTIMEO of diag_socket(): the dump never ended. */
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		}
		if (n == 0)
			return -EIO; /* not a netlink answer: never waited on again */
		r = flowsdn__sockdiag_parse(buf, (size_t)n, seq, family, peer, port, v);
		if (r != 0)
			return r < 0 ? r : 0;
	}
}

static bool args_valid(const struct flowsdn_addr *peer, uint16_t port, uint8_t protocol)
{
	return peer && (peer->family == FLOWSDN_AF_INET || peer->family == FLOWSDN_AF_INET6) && port &&
	       (protocol == IPPROTO_TCP || protocol == IPPROTO_UDP);
}

static int diag_socket(void)
{
	/* A dump or a destroy the kernel does not answer within 5 s is given
	 * up (-ETIMEDOUT), never waited on for ever by the agent. */
	static const struct timeval timeout = { .tv_sec = 5 };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd < 0)
		return -FLOWSDN_E_NL_SOCKET;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) < 0) {
		close(fd);
		return -FLOWSDN_E_NL_SOCKET;
	}
	return fd;
}

/* The dump and the destroys through the sock_diag socket @fd (taken). */
static int destroy_through(int fd, const struct flowsdn_addr *peer, uint16_t port, uint8_t protocol,
			   size_t *ret_count)
{
	static const uint8_t families[] = { AF_INET, AF_INET6 };
	struct flowsdn__sockdiag_victims v = { 0 };
	size_t destroyed = 0;
	uint32_t seq = 1;
	int r = 0;

	for (size_t f = 0; f < ARRAY_SIZE(families) && r == 0; f++) {
		/* IPv6 peers are only on AF_INET6 sockets. */
		if (families[f] == AF_INET && peer->family == FLOWSDN_AF_INET6)
			continue;
		r = nl_send(fd, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, families[f], protocol, NULL, ++seq);
		if (r == 0)
			r = nl_recv(fd, seq, families[f], peer, port, &v);
		/* A kernel without IPv6 has no AF_INET6 sockets. */
		if (r == -ENOENT || (r == -EAFNOSUPPORT && families[f] == AF_INET6))
			r = 0;
	}
	for (size_t i = 0; i < v.n && r == 0; i++) {
		int d;

		r = nl_send(fd, SOCK_DESTROY, NLM_F_ACK, v.families[i], protocol, &v.ids[i], ++seq);
		if (r < 0)
			break;
		d = nl_recv(fd, seq, v.families[i], peer, port, NULL);
		if (d == 0)
			destroyed++;
		else if (d == -EOPNOTSUPP)
			r = d; /* no CONFIG_INET_DIAG_DESTROY */
		else if (d != -ENOENT)
			pr_warn("sock_diag: destroying a socket to port %u: %s", port, strerror(-d));
	}
	close(fd);
	flowsdn__sockdiag_victims_clear(&v);
	if (r < 0)
		return r;
	if (ret_count)
		*ret_count = destroyed;
	return 0;
}

FLOWSDN_API int flowsdn_netlink_sock_destroy(const struct flowsdn_addr *peer, uint16_t port, uint8_t protocol,
					     size_t *ret_count)
{
	int fd;

	if (!args_valid(peer, port, protocol))
		return -EINVAL;
	fd = diag_socket();
	return fd < 0 ? fd : destroy_through(fd, peer, port, protocol, ret_count);
}

struct open_args {
	uint64_t netns_ino; /* 0: not checked */
	int fd;
};

/* In the helper thread: the socket, opened in its netns once that is the
 * namespace the caller recorded (the inode of the namespace the thread
 * is in now, not of what the path names: nothing can change between the
 * check and the socket). */
static int open_cb(void *arg)
{
	struct open_args *a = arg;
	struct stat st;
	int fd;

	if (a->netns_ino) {
		if (stat("/proc/thread-self/ns/net", &st) < 0)
			return -errno;
		if ((uint64_t)st.st_ino != a->netns_ino)
			return -FLOWSDN_E_NL_MISMATCH;
	}
	fd = diag_socket();
	if (fd >= 0)
		a->fd = fd;
	return fd < 0 ? fd : 0;
}

FLOWSDN_API int flowsdn_netlink_sock_destroy_netns(const char *netns_path, uint64_t netns_ino,
						   const struct flowsdn_addr *peer, uint16_t port, uint8_t protocol,
						   size_t *ret_count)
{
	struct open_args a = { .netns_ino = netns_ino, .fd = -1 };
	int r;

	if (!netns_path || !args_valid(peer, port, protocol))
		return -EINVAL;
	r = flowsdn__netns_run_at(netns_path, NULL, open_cb, &a);
	return r < 0 ? r : destroy_through(a.fd, peer, port, protocol, ret_count);
}
