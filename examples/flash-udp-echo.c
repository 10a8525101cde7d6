/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-udp-echo: the workload of examples/udp-echo.json.  Echoes every
 * UDP datagram back to its sender on FLASH_ECHO_LISTEN (ADDRESS:PORT,
 * default 0.0.0.0:7777).  Built static by the tests and scripts/quickstart
 * into a one-file OCI image (/usr/local/bin/flash-udp-echo).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
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
		if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl) < 0)
			fprintf(stderr, "flash-udp-echo: sendto: %s\n", strerror(errno));
	}
}
