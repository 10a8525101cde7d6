/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel and iproute2 agree with our canonical text.  Each test runs
 * in its own process (Criterion forks one per test) and moves it into a
 * fresh network namespace with unshare(): the namespace and everything in
 * it vanish with the process, also when an assertion fails or it crashes.
 */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <flowsdn/addr.h>

#include "helpers.h"

static void enter_private_netns(void)
{
	REQUIRE_ROOT();
	if (unshare(CLONE_NEWNET) < 0)
		cr_skip_test("unshare(CLONE_NEWNET) failed: %s (no network namespaces in this kernel?)", strerror(errno));
	cr_assert(system("ip link set lo up") == 0, "ip link set lo up");
}

/* Reads `ip -o addr show dev lo` into a buffer. */
static char *ip_addr_show(void)
{
	FILE *f = popen("ip -o addr show dev lo", "r");
	size_t cap = 1 << 16, len = 0;
	char *buf = calloc(1, cap);

	cr_assert(f && buf);
	len = fread(buf, 1, cap - 1, f);
	buf[len] = '\0';
	pclose(f);
	return buf;
}

Test(addr_kernel, ipv6_text_matches_kernel, .init = enter_private_netns)
{
	/* Addresses with zero runs in every position, including ties. */
	static const char *const texts[] = {
		"2001:db8:0:0:1:0:0:1", "2001:0:0:1:0:0:0:1", "2001:db8:0:1:1:1:1:1",
		"2001:db8::2:1", "2001:db8:aaaa:bbbb:cccc:dddd:0:1", "fd00:1:0:0:0:0:0:0",
		"fd00:0:0:1:0:0:1:0", "2001:db8:a:0:0:b:0:0",
	};
	unsigned int seed = 12345;
	char *out;
	char want[64];

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct flowsdn_addr a;
		char buf[FLOWSDN_ADDR_STRLEN], cmd[128];

		ASSERT_OK(flowsdn_addr_parse(texts[i], strlen(texts[i]), &a), texts[i]);
		ASSERT_OK(flowsdn_addr_format(&a, buf, sizeof(buf)), "format");
		/* Give the kernel the uncompressed form, compare its output to ours. */
		snprintf(cmd, sizeof(cmd), "ip -6 addr add %s/128 dev lo nodad", texts[i]);
		cr_assert(system(cmd) == 0, "%s", cmd);
		out = ip_addr_show();
		snprintf(want, sizeof(want), " %s/128 ", buf);
		cr_assert(strstr(out, want), "kernel does not show \"%s\" for %s:\n%s", buf, texts[i], out);
		free(out);
	}

	/* Random addresses with random zero groups. */
	for (int n = 0; n < 40; n++) {
		struct flowsdn_addr a = { .family = FLOWSDN_AF_INET6 };
		char buf[FLOWSDN_ADDR_STRLEN], cmd[160];

		a.bytes[0] = 0xfd;
		for (int g = 1; g < 8; g++) {
			int zero = rand_r(&seed) % 2;
			a.bytes[2 * g] = zero ? 0 : (unsigned char)rand_r(&seed);
			a.bytes[2 * g + 1] = zero ? 0 : (unsigned char)(rand_r(&seed) | 1);
		}
		ASSERT_OK(flowsdn_addr_format(&a, buf, sizeof(buf)), "format");
		snprintf(cmd, sizeof(cmd), "ip -6 addr add %s/128 dev lo nodad 2>/dev/null", buf);
		if (system(cmd) != 0)
			continue; /* a duplicate of an earlier random address */
		out = ip_addr_show();
		snprintf(want, sizeof(want), " %s/128 ", buf);
		cr_assert(strstr(out, want), "kernel does not show \"%s\":\n%s", buf, out);
		free(out);
	}
}

Test(addr_kernel, ipv4_prefix_matches_kernel, .init = enter_private_netns)
{
	/* A veth pair inside the private namespace: it goes away with it. */
	cr_assert(system("ip link add v0 type veth peer name v1 && ip link set v0 up && ip link set v1 up") == 0,
		  "veth pair");
	static const char *const texts[] = { "10.1.2.3/8", "192.168.255.1/30", "100.64.7.7/10", "203.0.113.129/25" };

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		FLOWSDN_OPTS(flowsdn_prefix_opts, o, .flags = FLOWSDN_PREFIX_NORMALIZE);
		struct flowsdn_prefix p;
		char buf[FLOWSDN_PREFIX_STRLEN], cmd[160], line[256] = "";
		FILE *f;

		ASSERT_OK(flowsdn_prefix_parse(texts[i], strlen(texts[i]), &o, &p), texts[i]);
		ASSERT_OK(flowsdn_prefix_format(&p, buf, sizeof(buf)), "format");
		snprintf(cmd, sizeof(cmd), "ip addr add %s dev v0", texts[i]);
		cr_assert(system(cmd) == 0, "%s", cmd);
		/* The kernel's connected prefix for the address is our normalized prefix. */
		snprintf(cmd, sizeof(cmd), "ip -4 route show table main dev v0 | grep -o '^%s '", buf);
		f = popen(cmd, "r");
		cr_assert(f);
		cr_assert(fgets(line, sizeof(line), f), "kernel has no connected route %s", buf);
		pclose(f);
	}
}
