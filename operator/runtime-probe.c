/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Readiness probes of the runtime (runtime-internal.h).  gVisor's
 * netstack answers a datagram to an unbound UDP port with an ICMP
 * port-unreachable (measured: every probe of a replica whose process does
 * not bind the port gets ECONNREFUSED on the connected socket), which is
 * what lets a silent UDP listener be told from an absent one.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime-internal.h"

enum op_probe_outcome op_probe(const char *address, uint16_t port, int proto, unsigned int timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	bool udp = proto == IPPROTO_UDP;
	enum op_probe_outcome o = OP_PROBE_ERROR;
	int fd, soerr = 0, n;
	socklen_t sl = sizeof(soerr);
	char b[16];

	if (inet_pton(AF_INET, address, &sa.sin_addr) != 1)
		return OP_PROBE_ERROR;
	fd = socket(AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return OP_PROBE_ERROR;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		o = errno == ECONNREFUSED ? OP_PROBE_REFUSED : OP_PROBE_ERROR;
		goto out;
	}
	/* A connected UDP socket: the port-unreachable comes back as
	 * ECONNREFUSED on it (and only from this address and port). */
	if (udp && send(fd, "", 0, 0) < 0) {
		o = errno == ECONNREFUSED ? OP_PROBE_REFUSED : OP_PROBE_ERROR;
		goto out;
	}
	struct pollfd p = { .fd = fd, .events = udp ? POLLIN : POLLOUT };

	do
		n = poll(&p, 1, (int)timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n == 0) {
		o = OP_PROBE_SILENT;
	} else if (n > 0 && udp) {
		if (recv(fd, b, sizeof(b), 0) >= 0)
			o = OP_PROBE_ANSWERED;
		else
			o = errno == ECONNREFUSED ? OP_PROBE_REFUSED : OP_PROBE_ERROR;
	} else if (n > 0) {
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			o = OP_PROBE_ERROR;
		else
			o = soerr == 0 ? OP_PROBE_ANSWERED : soerr == ECONNREFUSED ? OP_PROBE_REFUSED : OP_PROBE_ERROR;
	}
out:
	close(fd);
	return o;
}

bool op_probe_udp_ready(struct op_udp_readiness *st, enum op_probe_outcome o)
{
	switch (o) {
	case OP_PROBE_ANSWERED:
		st->silent = 0;
		return true;
	case OP_PROBE_REFUSED:
		st->closed_seen = true;
		st->silent = 0;
		return false;
	case OP_PROBE_SILENT:
		if (st->silent < OP_PROBE_UDP_SILENT_READY)
			st->silent++;
		return st->closed_seen && st->silent >= OP_PROBE_UDP_SILENT_READY;
	case OP_PROBE_ERROR:
	default:
		st->silent = 0;
		return false;
	}
}

bool op_probe_udp_unknown(const struct op_udp_readiness *st)
{
	return !st->closed_seen && st->silent >= OP_PROBE_UDP_SILENT_READY;
}
