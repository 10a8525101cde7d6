/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The uplink programs across an agent restart (root): an agent attaches
 * from_uplink and to_uplink to the uplink and exits (the attachment
 * stays, the programs pinned); the next agent, a new datapath on the same
 * pins, attaches again.  In tc mode the clsact filter found there is
 * replaced in place — one filter, now running the new program, which is
 * the pinned one — never a second filter beside it; in TCX mode the
 * pinned links are updated in place the same way (one program per
 * direction), and a clsact filter an older tc-mode agent left is removed
 * when a TCX agent takes over.  Detaching leaves nothing.  Everything in
 * a netns and a pin directory of the test's own.
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

/* The ids of the programs on fsu0's TCX ingress or egress. */
static size_t tcx_progs(bool ingress, __u32 *ids, __u32 max)
{
	__u32 cnt = max, flags = 0;
	int r = bpf_prog_query((int)if_nametoindex("fsu0"), (enum bpf_attach_type)(ingress ? 46 : 47), 0, &flags, ids,
			       &cnt);

	cr_assert(r == 0, "TCX query: %s", strerror(errno));
	return cnt;
}

static unsigned int pinned_id(int ifindex, bool ingress)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/prog_%s_uplink_%d", pin_dir, ingress ? "from" : "to", ifindex);
	fd = bpf_obj_get(path);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	memset(&info, 0, sizeof(info));
	cr_assert(bpf_obj_get_info_by_fd(fd, &info, &len) == 0, "prog info");
	close(fd);
	return info.id;
}

static struct flowsdn_datapath *agent_start_mode(int ifindex, enum flowsdn_attach_mode mode)
{
	struct flowsdn_datapath *dp = NULL;
	struct flowsdn_addr a;
	int r;

	ASSERT_OK(flowsdn_addr_parse("192.0.2.1", 9, &a), "addr");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir, .attach_mode = mode);
	r = flowsdn_datapath_open(&o, &dp);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	FLOWSDN_OPTS(flowsdn_uplink_opts, u, .addr4 = &a);
	r = flowsdn_datapath_uplink_attach(dp, ifindex, &u);
	cr_assert(r == 0, "uplink attach: %s", flowsdn_strerror(r));
	return dp;
}

/* An agent of the tc (clsact) mode. */
static struct flowsdn_datapath *agent_start(int ifindex)
{
	return agent_start_mode(ifindex, FLOWSDN_ATTACH_TC);
}

Test(uplink_adopt, restart_replaces_the_filter_it_finds)
{
	int ifindex = (int)if_nametoindex("fsu0");
	unsigned int first[4], again[4];
	struct flowsdn_datapath *dp;

	cr_assert(ifindex > 0);
	dp = agent_start(ifindex);
	cr_assert_eq(ingress_filters(first, 4), 1, "one filter after the first start");
	cr_assert_eq(first[0], pinned_id(ifindex, true), "the filter runs the pinned program");
	flowsdn_datapath_free(dp); /* the agent exits: its filter stays */
	cr_assert_eq(ingress_filters(again, 4), 1, "the filter outlives the agent");
	cr_assert_eq(again[0], first[0]);

	dp = agent_start(ifindex);
	cr_assert_eq(ingress_filters(again, 4), 1, "the restart replaced the filter, not added one");
	cr_assert_neq(again[0], first[0], "the new agent's program runs now (%u)", again[0]);
	cr_assert_eq(again[0], pinned_id(ifindex, true), "and it is the pinned one");
	ASSERT_OK(flowsdn_datapath_uplink_detach(dp, ifindex), "detach");
	cr_assert_eq(ingress_filters(again, 4), 0, "detached: no filter left");
	flowsdn_datapath_free(dp);
}

static void require_tcx(void)
{
	if (!flowsdn_datapath_probe_tcx())
		cr_skip_test("the kernel has no TCX links");
}

Test(uplink_adopt, tcx_restart_updates_the_pinned_links_in_place)
{
	int ifindex = (int)if_nametoindex("fsu0");
	__u32 first[2][4], again[2][4];
	unsigned int filters[4];
	struct flowsdn_datapath *dp;

	require_tcx();
	dp = agent_start_mode(ifindex, FLOWSDN_ATTACH_TCX);
	for (int in = 0; in < 2; in++) {
		cr_assert_eq(tcx_progs(in, first[in], 4), 1, "one TCX program per direction (%s)", in ? "ingress" : "egress");
		cr_assert_eq(first[in][0], pinned_id(ifindex, in), "the link runs the pinned program");
	}
	cr_assert_eq(ingress_filters(filters, 4), 0, "no clsact filter beside the links");
	flowsdn_datapath_free(dp); /* the agent exits: its links stay (pinned) */
	cr_assert_eq(tcx_progs(true, again[1], 4), 1, "the link outlives the agent");

	dp = agent_start_mode(ifindex, FLOWSDN_ATTACH_TCX);
	for (int in = 0; in < 2; in++) {
		cr_assert_eq(tcx_progs(in, again[in], 4), 1, "the restart updated the link, not added one");
		cr_assert_neq(again[in][0], first[in][0], "the new agent's program runs now");
		cr_assert_eq(again[in][0], pinned_id(ifindex, in), "and it is the pinned one");
	}
	ASSERT_OK(flowsdn_datapath_uplink_detach(dp, ifindex), "detach");
	cr_assert_eq(tcx_progs(true, again[1], 4), 0, "detached: no ingress program left");
	cr_assert_eq(tcx_progs(false, again[0], 4), 0, "nor egress");
	flowsdn_datapath_free(dp);
}

Test(uplink_adopt, a_tcx_agent_takes_over_an_older_clsact_uplink)
{
	int ifindex = (int)if_nametoindex("fsu0");
	unsigned int filters[4];
	__u32 ids[4];
	struct flowsdn_datapath *dp;

	require_tcx();
	dp = agent_start(ifindex);
	cr_assert_eq(ingress_filters(filters, 4), 1, "the tc-mode agent's filter");
	flowsdn_datapath_free(dp);
	dp = agent_start_mode(ifindex, FLOWSDN_ATTACH_AUTO);
	cr_assert_eq(flowsdn_datapath_attach_mode(dp), FLOWSDN_ATTACH_TCX, "auto chose TCX");
	cr_assert_eq(tcx_progs(true, ids, 4), 1, "a TCX link now");
	cr_assert_eq(ids[0], pinned_id(ifindex, true));
	cr_assert_eq(ingress_filters(filters, 4), 0, "the old filter is gone: the old program runs no more");
	ASSERT_OK(flowsdn_datapath_uplink_detach(dp, ifindex), "detach");
	flowsdn_datapath_free(dp);
}

