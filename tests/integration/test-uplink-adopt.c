/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The uplink program across an agent restart (root): an agent attaches
 * from_uplink to the uplink's tc ingress and exits (the filter stays, the
 * program pinned); the next agent, a new datapath on the same pins,
 * attaches again.  The filter found there is replaced in place — one
 * filter, now running the new program, which is the pinned one — never a
 * second filter beside it; detaching leaves none.  Everything in a netns
 * and a pin directory of the test's own.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <flowsdn/datapath.h>

#include "helpers.h"
#include "netns-helpers.h"

static char pin_dir[64];

static void setup(void)
{
	node_enter();
	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-uplink-XXXXXX");
	cr_assert(mkdtemp(pin_dir), "mkdtemp");
	cr_assert(system("ip link add fsu0 type veth peer name fsu1 && ip addr add 192.0.2.1/24 dev fsu0 && "
			 "ip link set fsu0 up && ip link set fsu1 up") == 0,
		  "uplink veth");
}

static void teardown(void)
{
	node_unpin(pin_dir);
}

TestSuite(uplink_adopt, .init = setup, .fini = teardown, .timeout = 60);

/* The program ids of the bpf filters on fsu0's ingress, from tc(8). */
static size_t ingress_filters(unsigned int *ids, size_t max)
{
	FILE *f = popen("tc filter show dev fsu0 ingress 2>&1", "r");
	char line[512];
	size_t n = 0;

	cr_assert(f, "tc filter show");
	while (fgets(line, sizeof(line), f)) {
		const char *id = strstr(line, " id ");

		if (!strstr(line, " bpf ") || !id)
			continue;
		cr_assert(n < max, "more than %zu filters: %s", max, line);
		ids[n++] = (unsigned int)strtoul(id + 4, NULL, 10);
	}
	pclose(f);
	return n;
}

static unsigned int pinned_prog_id(int ifindex)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/prog_from_uplink_%d", pin_dir, ifindex);
	fd = bpf_obj_get(path);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	memset(&info, 0, sizeof(info));
	cr_assert(bpf_obj_get_info_by_fd(fd, &info, &len) == 0, "prog info");
	close(fd);
	return info.id;
}

static struct flowsdn_datapath *agent_start(int ifindex)
{
	struct flowsdn_datapath *dp = NULL;
	struct flowsdn_addr a;
	int r;

	ASSERT_OK(flowsdn_addr_parse("192.0.2.1", 9, &a), "addr");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir);
	r = flowsdn_datapath_open(&o, &dp);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	FLOWSDN_OPTS(flowsdn_uplink_opts, u, .addr4 = &a);
	r = flowsdn_datapath_uplink_attach(dp, ifindex, &u);
	cr_assert(r == 0, "uplink attach: %s", flowsdn_strerror(r));
	return dp;
}

Test(uplink_adopt, restart_replaces_the_filter_it_finds)
{
	int ifindex = (int)if_nametoindex("fsu0");
	unsigned int first[4], again[4];
	struct flowsdn_datapath *dp;

	cr_assert(ifindex > 0);
	dp = agent_start(ifindex);
	cr_assert_eq(ingress_filters(first, 4), 1, "one filter after the first start");
	cr_assert_eq(first[0], pinned_prog_id(ifindex), "the filter runs the pinned program");
	flowsdn_datapath_free(dp); /* the agent exits: its filter stays */
	cr_assert_eq(ingress_filters(again, 4), 1, "the filter outlives the agent");
	cr_assert_eq(again[0], first[0]);

	dp = agent_start(ifindex);
	cr_assert_eq(ingress_filters(again, 4), 1, "the restart replaced the filter, not added one");
	cr_assert_neq(again[0], first[0], "the new agent's program runs now (%u)", again[0]);
	cr_assert_eq(again[0], pinned_prog_id(ifindex), "and it is the pinned one");
	ASSERT_OK(flowsdn_datapath_uplink_detach(dp, ifindex), "detach");
	cr_assert_eq(ingress_filters(again, 4), 0, "detached: no filter left");
	flowsdn_datapath_free(dp);
}
