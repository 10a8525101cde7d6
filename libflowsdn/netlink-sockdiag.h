/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private pieces of the sock_diag module (libflowsdn/netlink-sockdiag.c;
 * never installed, never exported: the fuzz target links the
 * convenience libraries). */
#ifndef FLOWSDN_NETLINK_SOCKDIAG_H
#define FLOWSDN_NETLINK_SOCKDIAG_H

#include <stddef.h>
#include <stdint.h>
#include <linux/inet_diag.h>
#include <flowsdn/addr.h>

/* At most this many sockets are collected by one dump. */
#define FLOWSDN__SOCKDIAG_VICTIMS_MAX 65536

/* The sockets a dump found connected to the peer: their ids and the
 * family each was dumped in. */
struct flowsdn__sockdiag_victims {
	struct inet_diag_sockid *ids;
	uint8_t *families;
	size_t n, cap;
};

/* Frees the arrays of @v (not @v) and empties it. */
void flowsdn__sockdiag_victims_clear(struct flowsdn__sockdiag_victims *v);

/* Reads one buffer the sock_diag socket gave (@len bytes at @buf,
 * aligned for struct nlmsghdr) as the answer to request @seq: messages
 * of another seq are skipped.  A dump's SOCK_DIAG_BY_FAMILY message that
 * holds a whole inet_diag_msg of family @family whose peer is
 * @peer:@port (an AF_INET6 socket matches an IPv4 peer through its
 * IPv4-mapped form) is added to @v (NULL: an ack is awaited and such
 * messages are skipped).  1 when the answer ends in this buffer
 * (NLMSG_DONE, or an NLMSG_ERROR of error 0: an ack), 0 when more is to
 * be read; the NLMSG_ERROR's error (a negative errno); -EBADMSG for an
 * NLMSG_ERROR too short for its struct nlmsgerr or whose error is not 0
 * or a negative errno; -E2BIG past FLOWSDN__SOCKDIAG_VICTIMS_MAX; -ENOMEM. */
int flowsdn__sockdiag_parse(const void *buf, size_t len, uint32_t seq, uint8_t family,
			    const struct flowsdn_addr *peer, uint16_t port, struct flowsdn__sockdiag_victims *v)
	__attribute__((warn_unused_result));

#endif
