/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-udp-echo: the workload of examples/udp-echo.json.  Echoes every
 * UDP datagram back to its sender on FLASH_ECHO_LISTEN (ADDRESS:PORT,
 * default 0.0.0.0:7777).  Built static by the tests and scripts/quickstart
 * into a one-file OCI image (/usr/local/bin/flash-udp-echo).
 *
 * With FLASH_ECHO_PROBES=1 a datagram that is a probe command is answered
 * with the probe's outcome instead of being echoed (the isolation tests
 * look at the network from inside the sandbox with it):
 *   "tcp ADDR PORT"      -> "tcp open" | "tcp refused" | "tcp timeout" (2 s)
 *   "udp ADDR PORT TEXT" -> "udp " + the first reply | "udp timeout" (1 s)
 *   "dns NAME"           -> "dns ADDR" (the first A record the first
 *                           nameserver of /etc/resolv.conf answers) |
 *                           "dns timeout" | "dns error"
 * Every other datagram is echoed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A socket of @type connected to @addr:@port, or -1. */
static int dial(int type, const char *addr, const char *port, int *ret_connected, int timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct pollfd p;
	int fd, err = 0;
	socklen_t el = sizeof(err);

	*ret_connected = 0;
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -1;
	sa.sin_port = htons((uint16_t)strtoul(port, NULL, 10));
	fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		*ret_connected = 1;
		return fd;
	}
	if (errno != EINPROGRESS) {
		*ret_connected = -errno;
		return fd;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&p, 1, timeout_ms) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0)
		*ret_connected = err == 0 ? 1 : -err;
	return fd;
}

/* One reply datagram on @fd within @timeout_ms into @buf; its length or -1. */
static ssize_t await(int fd, char *buf, size_t size, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) != 1)
		return -1;
	return recv(fd, buf, size, 0);
}

static void probe_dns(const char *name, char *out, size_t size)
{
	unsigned char q[512], a[512];
	char ns[64] = "";
	size_t len = 12;
	FILE *f = fopen("/etc/resolv.conf", "re");
	int fd, ok;
	ssize_t n;

	snprintf(out, size, "dns error");
	if (f) {
		char line[256];

		while (!ns[0] && fgets(line, sizeof(line), f))
			if (sscanf(line, "nameserver %63s", ns) != 1)
				ns[0] = '\0';
		fclose(f);
	}
	if (!ns[0] || strlen(name) > 200)
		return;
	/* Header: id 0x4655, recursion desired, one question. */
	memcpy(q, "\x46\x55\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12);
	for (const char *l = name; *l;) {
		size_t k = strcspn(l, ".");

		if (k == 0 || k > 63)
			return;
		q[len++] = (unsigned char)k;
		memcpy(q + len, l, k);
		len += k;
		l += k;
		if (*l == '.')
			l++;
	}
	memcpy(q + len, "\x00\x00\x01\x00\x01", 5); /* root, type A, class IN */
	len += 5;
	fd = dial(SOCK_DGRAM, ns, "53", &ok, 1000);
	if (fd < 0)
		return;
	if (send(fd, q, len, 0) < 0 || (n = await(fd, (char *)a, sizeof(a), 2000)) < 0) {
		snprintf(out, size, "dns timeout");
		close(fd);
		return;
	}
	close(fd);
	/* The answer's last 4 bytes are the first A record's address when the
	 * answer holds exactly one record, as the tests' server gives. */
	if (n >= (ssize_t)len + 16 && a[0] == 0x46 && a[1] == 0x55 && (a[3] & 0x0f) == 0 && a[7] >= 1)
		snprintf(out, size, "dns %u.%u.%u.%u", a[n - 4], a[n - 3], a[n - 2], a[n - 1]);
}

/* Answers a probe command in @buf (NUL-terminated); 0 when it is none. */
static int probe(const char *buf, char *out, size_t size)
{
	char cmd[8], addr[64], port[8], text[512] = "";
	int fd, ok;

	if (sscanf(buf, "%7s %63s %7s %511s", cmd, addr, port, text) < 2)
		return 0;
	if (strcmp(cmd, "dns") == 0) {
		probe_dns(addr, out, size);
		return 1;
	}
	if (strcmp(cmd, "tcp") != 0 && strcmp(cmd, "udp") != 0)
		return 0;
	fd = dial(cmd[0] == 't' ? SOCK_STREAM : SOCK_DGRAM, addr, port, &ok, 2000);
	if (cmd[0] == 't') {
		snprintf(out, size, "tcp %s", ok == 1 ? "open" : ok == -ECONNREFUSED ? "refused" : "timeout");
	} else {
		char r[512];
		ssize_t n = -1;

		if (fd >= 0 && ok == 1 && send(fd, text, strlen(text), 0) >= 0)
			n = await(fd, r, sizeof(r) - 1, 1000);
		if (n >= 0)
			r[n] = '\0';
		snprintf(out, size, "udp %s", n >= 0 ? r : "timeout");
	}
	if (fd >= 0)
		close(fd);
	return 1;
}

int main(void)
{
	const char *probes = getenv("FLASH_ECHO_PROBES");
	const char *listen = getenv("FLASH_ECHO_LISTEN");
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[64], buf[65536];
	unsigned long port;
	const char *colon;
	int fd;

	if (!listen)
		listen = "0.0.0.0:7777";
	colon = strrchr(listen, ':');
	if (!colon || (size_t)(colon - listen) >= sizeof(host)) {
		fprintf(stderr, "flash-udp-echo: FLASH_ECHO_LISTEN=%s: expected ADDRESS:PORT\n", listen);
		return 2;
	}
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	port = strtoul(colon + 1, NULL, 10);
	if (port == 0 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "flash-udp-echo: FLASH_ECHO_LISTEN=%s: expected an IPv4 ADDRESS:PORT\n", listen);
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "flash-udp-echo: %s: %s\n", listen, strerror(errno));
		return 1;
	}
	printf("flash-udp-echo: listening on %s/udp\n", listen);
	fflush(stdout);
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "flash-udp-echo: recvfrom: %s\n", strerror(errno));
			return 1;
		}
		if (probes && strcmp(probes, "1") == 0 && (size_t)n < sizeof(buf)) {
			char out[600];

			buf[n] = '\0';
			if (probe(buf, out, sizeof(out))) {
				if (sendto(fd, out, strlen(out), 0, (struct sockaddr *)&from, fl) < 0)
					fprintf(stderr, "flash-udp-echo: sendto: %s\n", strerror(errno));
				continue;
			}
		}
		if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl) < 0)
			fprintf(stderr, "flash-udp-echo: sendto: %s\n", strerror(errno));
	}
}
