/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The datapath end to end (root): two endpoints, each a veth pair into its
 * own netns, built with flowsdn_netlink_veth_setup(), published into the
 * pinned maps and served by the BPF programs.  They must reach each other
 * over IPv4 and IPv6 with ICMP, TCP and UDP in each egress mode and attach
 * mode; policy entries must drop and count; the loader handle can go away
 * and come back (adopt) while traffic flows.
 *
 * Each test runs in its own process (Criterion) that first becomes its own
 * node (private netns + mount ns, see netns-helpers.h); the endpoint netns
 * are held by children that die with it, the bpffs is mounted inside the
 * private mount ns, and the pin directory is removed in .fini.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>

#include "diag-helpers.h"
#include "netns-helpers.h"

DIAG_TEST_HELPERS(flowsdn)

#define A4 "10.200.0.2"
#define B4 "10.200.0.3"
#define A6 "fd00:200::2"
#define B6 "fd00:200::3"

#include "endpoint-helpers.h"

static char pin_dir[64];
static struct flowsdn_datapath *dp;
static struct ep epa, epb;

static void log_cb(enum flowsdn_log_level level, const char *msg, void *u)
{
	(void)u;
	if (level <= FLOWSDN_LOG_WARNING)
		fprintf(stderr, "flowsdn: %s\n", msg);
}

static void make_endpoint(struct ep *ep, uint32_t id, const char *host, const char *a4, const char *a6,
			  uint32_t identity, bool host_routes)
{
	ep_wire(dp, ep, id, identity, 0, host, a4, a6, host_routes);
	cr_assert(flowsdn_datapath_is_attached(dp, ep->veth.host_ifindex) == 1, "programs on %s", host);
}

static void node_up_routes(enum flowsdn_egress_mode egress, enum flowsdn_attach_mode attach, bool no_peer,
			   bool host_routes)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();

	node_enter();
	flowsdn_set_log(log_cb, FLOWSDN_LOG_WARNING, NULL);
	ASSERT_OK(flowsdn_netlink_sysctl_write(NULL, "net.ipv4.ip_forward", "1", err), "ip_forward");
	ASSERT_OK(flowsdn_netlink_sysctl_write(NULL, "net.ipv6.conf.all.forwarding", "1", err), "v6 forwarding");
	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-test-XXXXXX");
	cr_assert(mkdtemp(pin_dir), "mkdtemp");
	if (attach == FLOWSDN_ATTACH_TCX && !flowsdn_datapath_probe_tcx())
		cr_skip_test("kernel has no TCX");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir, .egress_mode = egress, .attach_mode = attach,
		     .no_redirect_peer = no_peer);
	int r = flowsdn_datapath_open(&o, &dp);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	make_endpoint(&epa, 11, "fsdnA", A4, A6, 1001, host_routes);
	make_endpoint(&epb, 12, "fsdnB", B4, B6, 1002, host_routes);
}

static void node_up(enum flowsdn_egress_mode egress, enum flowsdn_attach_mode attach, bool no_peer)
{
	node_up_routes(egress, attach, no_peer, egress == FLOWSDN_EGRESS_STACK);
}

static void node_down(void)
{
	flowsdn_datapath_free(dp);
	dp = NULL;
	ns_kill(&epa.ns);
	ns_kill(&epb.ns);
	node_unpin(pin_dir);
}

static void setup_fib_tcx(void) { node_up(FLOWSDN_EGRESS_FIB, FLOWSDN_ATTACH_TCX, false); }
static void setup_fib_tc(void) { node_up(FLOWSDN_EGRESS_FIB, FLOWSDN_ATTACH_TC, true); }
static void setup_stack(void) { node_up(FLOWSDN_EGRESS_STACK, FLOWSDN_ATTACH_AUTO, false); }
static void setup_fib_routes(void) { node_up_routes(FLOWSDN_EGRESS_FIB, FLOWSDN_ATTACH_AUTO, false, true); }

/* ICMP, TCP and UDP both ways over both families. */
static void all_traffic_flows(void)
{
	cr_assert(run_in(epa.ns.path, "ping -q -c 2 -W 2 " B4 " >/dev/null") == 0, "ping A->B IPv4");
	cr_assert(run_in(epb.ns.path, "ping -q -c 2 -W 2 " A4 " >/dev/null") == 0, "ping B->A IPv4");
	cr_assert(run_in(epa.ns.path, "ping -6 -q -c 2 -W 2 " B6 " >/dev/null") == 0, "ping A->B IPv6");
	cr_assert(run_in(epb.ns.path, "ping -6 -q -c 2 -W 2 " A6 " >/dev/null") == 0, "ping B->A IPv6");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B4, 8080, SOCK_STREAM) == 0, "TCP A->B IPv4");
	cr_assert(l4_echo(epb.ns.path, epa.ns.path, A6, 8080, SOCK_STREAM) == 0, "TCP B->A IPv6");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B6, 5353, SOCK_DGRAM) == 0, "UDP A->B IPv6");
	cr_assert(l4_echo(epb.ns.path, epa.ns.path, A4, 5353, SOCK_DGRAM) == 0, "UDP B->A IPv4");
}

static void assert_counted(const struct ep *ep)
{
	struct flowsdn_endpoint_counters c;

	ASSERT_OK(flowsdn_maps_endpoint_counters(flowsdn_datapath_maps(dp), ep->e.id, &c), "counters");
	cr_assert(c.tx_packets >= 8 && c.tx_bytes >= 8 * 64, "endpoint %u tx %llu packets %llu bytes", ep->e.id,
		  (unsigned long long)c.tx_packets, (unsigned long long)c.tx_bytes);
	cr_assert(c.rx_packets >= 8 && c.rx_bytes >= 8 * 64, "endpoint %u rx %llu packets", ep->e.id,
		  (unsigned long long)c.rx_packets);
	cr_assert(c.allow_egress >= 8 && c.allow_ingress >= 8, "endpoint %u verdicts allow in %llu out %llu",
		  ep->e.id, (unsigned long long)c.allow_ingress, (unsigned long long)c.allow_egress);
	cr_assert(c.drop_packets == 0, "endpoint %u dropped %llu", ep->e.id, (unsigned long long)c.drop_packets);
}

Test(datapath, fib_tcx_redirect_peer, .init = setup_fib_tcx, .fini = node_down, .timeout = 120)
{
	cr_assert(flowsdn_datapath_attach_mode(dp) == FLOWSDN_ATTACH_TCX);
	all_traffic_flows();
	assert_counted(&epa);
	assert_counted(&epb);
}

Test(datapath, fib_tc_clsact_redirect, .init = setup_fib_tc, .fini = node_down, .timeout = 120)
{
	cr_assert(flowsdn_datapath_attach_mode(dp) == FLOWSDN_ATTACH_TC);
	all_traffic_flows();
	assert_counted(&epa);
	assert_counted(&epb);
}

Test(datapath, stack_mode_host_routes, .init = setup_stack, .fini = node_down, .timeout = 120)
{
	/* The host stack routes by the per-endpoint /32 and /128 routes. */
	cr_assert(system("ip -4 route show " B4 " | grep -q fsdnB") == 0, "host route to B");
	cr_assert(system("ip -6 route show " B6 " | grep -q fsdnB") == 0, "host route to B (IPv6)");
	all_traffic_flows();
	assert_counted(&epa);
	assert_counted(&epb);
}

Test(datapath, policy_deny_drops_and_counts, .init = setup_fib_tcx, .fini = node_down, .timeout = 120)
{
	struct flowsdn_maps *m = flowsdn_datapath_maps(dp);
	struct flowsdn_policy_key k;
	struct flowsdn_policy_value v;
	struct flowsdn_drop_counters d0, d1;
	struct flowsdn_endpoint_counters c;

	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B4, 8080, SOCK_STREAM) == 0, "TCP before the deny");
	ASSERT_OK(flowsdn_maps_drop_counters(m, FLOWSDN_DROP_POLICY_DENY, &d0), "drops before");

	/* B ingress: deny TCP 8080 from A's identity. */
	ASSERT_OK(flowsdn_policy_key_make(epb.e.id, FLOWSDN_DIR_INGRESS, epa.e.identity, IPPROTO_TCP, 8080, 16, &k),
		  "key");
	ASSERT_OK(flowsdn_maps_policy_update(m, &k, FLOWSDN_POLICY_F_DENY, 7), "deny entry");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B4, 8080, SOCK_STREAM) != 0, "TCP 8080 must be dropped");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B4, 8081, SOCK_STREAM) == 0, "TCP 8081 still allowed");
	cr_assert(run_in(epa.ns.path, "ping -q -c 1 -W 2 " B4 " >/dev/null") == 0, "ICMP still allowed");

	ASSERT_OK(flowsdn_maps_drop_counters(m, FLOWSDN_DROP_POLICY_DENY, &d1), "drops after");
	cr_assert(d1.packets > d0.packets, "POLICY_DENY drops %llu -> %llu", (unsigned long long)d0.packets,
		  (unsigned long long)d1.packets);
	ASSERT_OK(flowsdn_maps_policy_get(m, &k, &v), "entry");
	cr_assert(v.packets >= 1 && v.rule_id == 7, "entry counted %llu", (unsigned long long)v.packets);
	ASSERT_OK(flowsdn_maps_endpoint_counters(m, epb.e.id, &c), "B counters");
	cr_assert(c.deny_ingress >= 1 && c.drop_packets >= 1, "B deny_ingress %llu drops %llu",
		  (unsigned long long)c.deny_ingress, (unsigned long long)c.drop_packets);

	/* Removing the entry lets the flow through again. */
	ASSERT_OK(flowsdn_maps_policy_delete(m, &k), "delete entry");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B4, 8080, SOCK_STREAM) == 0, "TCP after removing the deny");
}

Test(datapath, default_deny_with_allow_entries, .init = setup_stack, .fini = node_down, .timeout = 120)
{
	struct flowsdn_maps *m = flowsdn_datapath_maps(dp);
	struct flowsdn_policy_key k;
	uint16_t ports[32];
	uint8_t bits[32];
	int n;

	/* B enforces ingress: nothing but UDP 5000-5400 from anyone. */
	epb.e.flags = FLOWSDN_EP_F_ENFORCE_INGRESS;
	ASSERT_OK(flowsdn_maps_endpoint_publish(m, &epb.e), "republish");
	cr_assert(run_in(epa.ns.path, "ping -q -c 1 -W 1 " B4 " >/dev/null") != 0, "ICMP denied by default");
	n = flowsdn_policy_port_blocks(5000, 5400, ports, bits, 32);
	cr_assert(n > 0);
	for (int i = 0; i < n; i++) {
		ASSERT_OK(flowsdn_policy_key_make(epb.e.id, FLOWSDN_DIR_INGRESS, FLOWSDN_IDENTITY_ANY, IPPROTO_UDP,
						  ports[i], bits[i], &k), "key");
		ASSERT_OK(flowsdn_maps_policy_update(m, &k, 0, 1), "allow entry");
	}
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B6, 5353, SOCK_DGRAM) == 0, "UDP 5353 allowed (in range)");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B4, 5401, SOCK_DGRAM) != 0, "UDP 5401 denied (out of range)");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B4, 8080, SOCK_STREAM) != 0, "TCP denied");

	struct flowsdn_drop_counters d;

	ASSERT_OK(flowsdn_maps_drop_counters(m, FLOWSDN_DROP_POLICY_DEFAULT, &d), "drops");
	cr_assert(d.packets >= 3, "default-deny drops %llu", (unsigned long long)d.packets);
	/* Removing the endpoint removes its policy entries too. */
	ASSERT_OK(flowsdn_maps_endpoint_remove(m, &epb.e), "remove");
	ASSERT_ERR(flowsdn_maps_policy_get(m, &k, &(struct flowsdn_policy_value){ 0 }), -ENOENT, "entries gone");
}

/* The handle goes away without detaching and a new one adopts, while a
 * ping runs: no reply may be lost. */
static void restart_adopt(void)
{
	int st;
	pid_t ping = fork_in(epa.ns.path);

	if (ping == 0) {
		execl("/bin/sh", "sh", "-c", "ping -q -i 0.02 -c 150 -W 1 " B4 " | grep -q ' 0% packet loss'",
		      (char *)NULL);
		_exit(127);
	}
	enum flowsdn_attach_mode mode = flowsdn_datapath_attach_mode(dp);

	usleep(300 * 1000);
	flowsdn_datapath_free(dp); /* the agent "dies": nothing detached */
	dp = NULL;
	usleep(500 * 1000);
	cr_assert(l4_echo(epb.ns.path, epa.ns.path, A4, 8080, SOCK_STREAM) == 0, "TCP while no agent runs");

	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir, .attach_mode = mode);
	ASSERT_OK(flowsdn_datapath_open(&o, &dp), "reopen");
	/* The pinned maps kept their entries. */
	struct flowsdn_endpoint_info info;

	ASSERT_OK(flowsdn_maps_endpoint_lookup(flowsdn_datapath_maps(dp), &epb.e.addrs[0], &info), "B still published");
	cr_assert(info.ep_id == epb.e.id);

	struct ep *eps[] = { &epa, &epb };

	for (int i = 0; i < 2; i++) {
		uint64_t ino;

		ASSERT_OK(flowsdn_netlink_netns_ino(eps[i]->ns.path, &ino), "netns inode");
		cr_assert(ino == eps[i]->veth.netns_ino);
		FLOWSDN_OPTS(flowsdn_endpoint_iface, f, .host_ifindex = eps[i]->veth.host_ifindex,
			     .host_ifname = eps[i]->veth.host_ifname, .netns_path = eps[i]->ns.path,
			     .netns_ino = eps[i]->veth.netns_ino, .ifname = eps[i]->veth.ifname);
		memcpy(f.host_mac, eps[i]->veth.host_mac, 6);
		memcpy(f.mac, eps[i]->veth.mac, 6);
		ASSERT_OK(flowsdn_datapath_adopt(dp, &f), "adopt");
		cr_assert(flowsdn_datapath_is_attached(dp, eps[i]->veth.host_ifindex) == 1);
		/* A wrong MAC, name or netns: refused, nothing changed. */
		f.mac[5] ^= 1;
		ASSERT_ERR(flowsdn_datapath_adopt(dp, &f), -FLOWSDN_E_BPF_IFACE_MISMATCH, "wrong MAC");
		f.mac[5] ^= 1;
		f.host_ifname = "fsdnX";
		ASSERT_ERR(flowsdn_datapath_adopt(dp, &f), -FLOWSDN_E_BPF_IFACE_MISMATCH, "wrong name");
		f.host_ifname = eps[i]->veth.host_ifname;
		f.netns_path = eps[1 - i]->ns.path;
		f.netns_ino = 0;
		ASSERT_ERR(flowsdn_datapath_adopt(dp, &f), -FLOWSDN_E_BPF_IFACE_MISMATCH, "wrong netns");
	}
	waitpid(ping, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the ping across the restart lost replies");
	all_traffic_flows();
}

Test(datapath, restart_adopt_keeps_forwarding_tcx, .init = setup_fib_tcx, .fini = node_down, .timeout = 120)
{
	restart_adopt();
}

Test(datapath, restart_adopt_keeps_forwarding_tc, .init = setup_fib_tc, .fini = node_down, .timeout = 120)
{
	restart_adopt();
}

Test(datapath, detach_stops_forwarding, .init = setup_fib_tcx, .fini = node_down, .timeout = 120)
{
	char path[PATH_MAX];

	cr_assert(run_in(epa.ns.path, "ping -q -c 1 -W 2 " B4 " >/dev/null") == 0, "ping before detach");
	snprintf(path, sizeof(path), "%s/links/%d-ingress", pin_dir, epa.veth.host_ifindex);
	cr_assert(access(path, F_OK) == 0, "TCX link pinned at %s", path);
	ASSERT_OK(flowsdn_datapath_detach(dp, epa.veth.host_ifindex), "detach");
	cr_assert(access(path, F_OK) != 0, "link pin removed");
	cr_assert(flowsdn_datapath_is_attached(dp, epa.veth.host_ifindex) == 0);
	/* Without its programs (fib mode: no host routes) A reaches nothing. */
	cr_assert(run_in(epa.ns.path, "ping -q -c 1 -W 1 " B4 " >/dev/null") != 0, "ping after detach");
	ASSERT_OK(flowsdn_datapath_detach(dp, epa.veth.host_ifindex), "detach again (idempotent)");
	ASSERT_OK(flowsdn_datapath_attach(dp, epa.veth.host_ifindex), "re-attach");
	cr_assert(run_in(epa.ns.path, "ping -q -c 1 -W 2 " B4 " >/dev/null") == 0, "ping after re-attach");
}

Test(datapath, spoofed_source_dropped, .init = setup_fib_tcx, .fini = node_down, .timeout = 60)
{
	struct flowsdn_drop_counters d0, d1;
	struct flowsdn_maps *m = flowsdn_datapath_maps(dp);

	ASSERT_OK(flowsdn_maps_drop_counters(m, FLOWSDN_DROP_SPOOFED_SOURCE, &d0), "drops");
	/* A claims B's... no: an address nobody published. */
	cr_assert(run_in(epa.ns.path, "ip addr add 10.200.0.99/32 dev eth0 && "
				      "ping -q -c 1 -W 1 -I 10.200.0.99 " B4 " >/dev/null") != 0,
		  "spoofed ping must fail");
	ASSERT_OK(flowsdn_maps_drop_counters(m, FLOWSDN_DROP_SPOOFED_SOURCE, &d1), "drops");
	cr_assert(d1.packets > d0.packets, "spoofed drops %llu -> %llu", (unsigned long long)d0.packets,
		  (unsigned long long)d1.packets);
	ASSERT_STREQ(flowsdn_drop_reason_name(FLOWSDN_DROP_SPOOFED_SOURCE), "source address is not the endpoint's",
		     "name");
}

/* Mode fib with host routes: the node itself reaches the endpoints through
 * the stack and to_container, which polices and counts that traffic. */
Test(datapath, host_to_endpoint_through_to_container, .init = setup_fib_routes, .fini = node_down, .timeout = 60)
{
	struct flowsdn_maps *m = flowsdn_datapath_maps(dp);
	struct flowsdn_endpoint_counters c0, c1;
	struct flowsdn_policy_key k;

	/* The node's own address (the source of its pings). */
	cr_assert(system("ip addr add 192.0.2.1/32 dev lo") == 0);
	ASSERT_OK(flowsdn_maps_endpoint_counters(m, epb.e.id, &c0), "counters");
	cr_assert(system("ping -q -c 2 -W 2 " B4 " >/dev/null") == 0, "host -> B");
	ASSERT_OK(flowsdn_maps_endpoint_counters(m, epb.e.id, &c1), "counters");
	cr_assert(c1.rx_packets >= c0.rx_packets + 2 && c1.allow_ingress >= c0.allow_ingress + 2,
		  "to_container counted the host's packets (rx %llu -> %llu)", (unsigned long long)c0.rx_packets,
		  (unsigned long long)c1.rx_packets);
	/* The host is "world" here (no ipcache entry): deny world on B. */
	ASSERT_OK(flowsdn_policy_key_make(epb.e.id, FLOWSDN_DIR_INGRESS, FLOWSDN_IDENTITY_WORLD, IPPROTO_ICMP, 0, 0, &k),
		  "key");
	ASSERT_OK(flowsdn_maps_policy_update(m, &k, FLOWSDN_POLICY_F_DENY, 3), "deny world");
	cr_assert(system("ping -q -c 1 -W 1 " B4 " >/dev/null") != 0, "host -> B denied");
	cr_assert(run_in(epa.ns.path, "ping -q -c 1 -W 2 " B4 " >/dev/null") == 0, "A -> B unaffected");
	ASSERT_OK(flowsdn_maps_endpoint_counters(m, epb.e.id, &c1), "counters");
	cr_assert(c1.deny_ingress >= 1, "deny counted");
}

/* IP datagrams the node's stack forwarded (Ip: ForwDatagrams of /proc/net/snmp). */
static unsigned long long forwarded(void)
{
	FILE *f = fopen("/proc/net/snmp", "re");
	char line[1024];
	unsigned long long v = 0;

	cr_assert(f);
	/* The second "Ip:" line holds the values; ForwDatagrams is field 6. */
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Ip: ", 4) == 0 && line[4] >= '0' && line[4] <= '9') {
			cr_assert(sscanf(line, "Ip: %*u %*u %*u %*u %*u %llu", &v) == 1);
			break;
		}
	}
	fclose(f);
	return v;
}

/* The same for IPv6 (Ip6OutForwDatagrams of /proc/net/snmp6). */
static unsigned long long forwarded6(void)
{
	FILE *f = fopen("/proc/net/snmp6", "re");
	char line[256];
	unsigned long long v = 0;

	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Ip6OutForwDatagrams %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Mode fib to a destination off the node: a "router" netns behind an
 * uplink veth.  The requests leave through bpf_fib_lookup() and a redirect
 * (bpf_redirect_neigh() while the neighbour is unresolved), never through
 * the node's IP forwarding; only the replies are forwarded by the stack
 * (to the endpoint's host route).  In mode stack the count would be 6. */
Test(datapath, fib_forwards_off_node_in_bpf, .init = setup_fib_routes, .fini = node_down, .timeout = 60)
{
	struct test_ns r;
	char cmd[256];
	unsigned long long before, after;

	ns_spawn(&r);
	snprintf(cmd, sizeof(cmd),
		 "ip link add fsdnU type veth peer name up0 netns %d && ip addr add 192.0.2.1/24 dev fsdnU && "
		 "ip link set fsdnU up && ip route add 198.51.100.0/24 via 192.0.2.2",
		 (int)r.pid);
	cr_assert(system(cmd) == 0, "uplink");
	cr_assert(run_in(r.path, "ip addr add 192.0.2.2/24 dev up0 && ip link set up0 up && "
				 "ip addr add 198.51.100.1/32 dev lo && ip route add default via 192.0.2.1") == 0,
		  "router");
	before = forwarded();
	cr_assert(run_in(epa.ns.path, "ping -q -c 3 -W 2 198.51.100.1 >/dev/null") == 0, "A -> off-node address");
	after = forwarded();
	/* 3 replies forwarded by the stack; the 3 requests were not. */
	cr_assert(after - before >= 3 && after - before < 6, "stack forwarded %llu datagrams", after - before);
	cr_assert(l4_echo(epa.ns.path, r.path, "198.51.100.1", 9000, SOCK_STREAM) == 0, "TCP off node");

	/* The same over IPv6. */
	cr_assert(system("ip addr add fd00:dead::1/64 dev fsdnU nodad && "
			 "ip route add 2001:db8:100::/64 via fd00:dead::2") == 0, "uplink IPv6");
	cr_assert(run_in(r.path, "ip addr add fd00:dead::2/64 dev up0 nodad && ip addr add 2001:db8:100::1/128 dev lo && "
				 "ip -6 route add default via fd00:dead::1") == 0,
		  "router IPv6");
	before = forwarded6();
	cr_assert(run_in(epa.ns.path, "ping -6 -q -c 3 -W 2 2001:db8:100::1 >/dev/null") == 0, "A -> off-node IPv6");
	after = forwarded6();
	cr_assert(after - before >= 3 && after - before < 6, "stack forwarded %llu IPv6 datagrams", after - before);
	cr_assert(l4_echo(epa.ns.path, r.path, "2001:db8:100::1", 9000, SOCK_DGRAM) == 0, "UDP off node (IPv6)");
	ns_kill(&r);
}

/* One test at a time: they push real traffic and measure loss. */
/* Kubernetes: "reply traffic for those allowed connections will also be
 * implicitly allowed".  A under default-deny ingress opens TCP, UDP (DNS
 * port) and ICMP to B and gets every answer; B cannot open anything to A.
 * Both egress modes: in stack mode B's to_container tracks, in fib mode
 * A's from_container does. */
static void replies_under_default_deny(void)
{
	struct flowsdn_maps *m = flowsdn_datapath_maps(dp);
	struct flowsdn_ct_stats st;
	size_t live = 0, removed = 0;

	epa.e.flags = FLOWSDN_EP_F_ENFORCE_INGRESS;
	ASSERT_OK(flowsdn_maps_endpoint_publish(m, &epa.e), "republish A");
	cr_assert(run_in(epb.ns.path, "ping -q -c 1 -W 1 " A4 " >/dev/null") != 0, "B cannot ping A");
	cr_assert(l4_echo(epb.ns.path, epa.ns.path, A4, 8080, SOCK_STREAM) != 0, "B cannot connect to A");
	cr_assert(l4_echo(epb.ns.path, epa.ns.path, A6, 53, SOCK_DGRAM) != 0, "B's datagrams to A dropped");
	cr_assert(run_in(epa.ns.path, "ping -q -c 2 -W 2 " B4 " >/dev/null") == 0, "A's ping gets its replies");
	cr_assert(run_in(epa.ns.path, "ping -6 -q -c 2 -W 2 " B6 " >/dev/null") == 0, "and over IPv6");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B4, 8080, SOCK_STREAM) == 0, "A's TCP connection gets its replies");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B6, 8080, SOCK_STREAM) == 0, "and over IPv6");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B4, 53, SOCK_DGRAM) == 0, "A's DNS query gets its answer");
	cr_assert(l4_echo(epa.ns.path, epb.ns.path, B6, 53, SOCK_DGRAM) == 0, "and over IPv6");
	ASSERT_OK(flowsdn_maps_ct_stats(m, &st), "ct stats");
	cr_assert(st.reply >= 6 && st.created >= 6, "replies %llu created %llu", (unsigned long long)st.reply,
		  (unsigned long long)st.created);
	ASSERT_OK(flowsdn_maps_ct_count(m, 0, &live, NULL), "count");
	cr_assert(live >= 6, "%zu live entries", live);
	/* Forgotten connections: their replies are judged (and denied). */
	ASSERT_OK(flowsdn_maps_ct_flush(m, &epa.e.addrs[0], &removed), "flush A's IPv4 entries");
	cr_assert(removed >= 3, "removed %zu", removed);
}

Test(datapath, conntrack_replies_under_default_deny_fib, .init = setup_fib_tcx, .fini = node_down, .timeout = 120)
{
	replies_under_default_deny();
}

Test(datapath, conntrack_replies_under_default_deny_stack, .init = setup_stack, .fini = node_down, .timeout = 120)
{
	replies_under_default_deny();
}

/* One datagram of @size bytes from @from to @ip:@port in @to (3 tries),
 * IPv6 with a destination-options header when @dstopts: 0 when the
 * server received one whole. */
static int big_datagram(const char *from, const char *to, const char *ip, int port, size_t size, bool dstopts)
{
	int p[2], st;
	pid_t srv, cli;
	char c;

	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	srv = fork_in(to);
	if (srv == 0) {
		struct sockaddr_storage ss;
		socklen_t len = sockaddr_of(ip, port, &ss);
		int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		static char buf[65536];
		ssize_t n;

		close(p[0]);
		if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 || write(p[1], "r", 1) != 1)
			_exit(1);
		set_timeouts(fd, 3000);
		while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
			if ((size_t)n == size)
				_exit(0);
		_exit(2);
	}
	close(p[1]);
	cr_assert(read(p[0], &c, 1) == 1, "server ready");
	close(p[0]);
	cli = fork_in(from);
	if (cli == 0) {
		struct sockaddr_storage ss;
		socklen_t len = sockaddr_of(ip, port, &ss);
		int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), dont = IP_PMTUDISC_DONT;
		static char buf[65536];
		/* Destination options: next header (set by the kernel), length 0,
		 * one PadN option of 4 bytes. */
		uint8_t opts[8] = { 0, 0, 1, 4, 0, 0, 0, 0 };

		if (fd < 0)
			_exit(1);
		if (ss.ss_family == AF_INET)
			setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &dont, sizeof(dont));
		if (dstopts && setsockopt(fd, IPPROTO_IPV6, IPV6_DSTOPTS, opts, sizeof(opts)) < 0)
			_exit(3);
		memset(buf, 'x', size);
		for (int i = 0; i < 3; i++) {
			if (sendto(fd, buf, size, 0, (struct sockaddr *)&ss, len) != (ssize_t)size)
				_exit(4);
			usleep(200 * 1000);
		}
		_exit(0);
	}
	waitpid(cli, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client status %d", st);
	waitpid(srv, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Port-scoped policy and fragments: UDP datagrams larger than the MTU
 * reach an allowed port whole (their later fragments follow the first's
 * verdict) and not a denied one; IPv6 too, and behind a destination-
 * options header. */
Test(datapath, fragments_and_extension_headers_meet_port_policy, .init = setup_fib_tcx, .fini = node_down,
     .timeout = 120)
{
	struct flowsdn_maps *m = flowsdn_datapath_maps(dp);
	struct flowsdn_policy_key k;

	epb.e.flags = FLOWSDN_EP_F_ENFORCE_INGRESS;
	ASSERT_OK(flowsdn_maps_endpoint_publish(m, &epb.e), "republish B");
	ASSERT_OK(flowsdn_policy_key_make(epb.e.id, FLOWSDN_DIR_INGRESS, epa.e.identity, IPPROTO_UDP, 5000, 16, &k),
		  "key");
	ASSERT_OK(flowsdn_maps_policy_update(m, &k, 0, 1), "allow UDP 5000");
	ASSERT_OK(flowsdn_policy_key_make(epb.e.id, FLOWSDN_DIR_INGRESS, epa.e.identity, IPPROTO_TCP, 8080, 16, &k),
		  "key");
	ASSERT_OK(flowsdn_maps_policy_update(m, &k, 0, 2), "allow TCP 8080");
	cr_assert_eq(big_datagram(epa.ns.path, epb.ns.path, B4, 5000, 4000, false), 0, "4000 bytes to UDP 5000 (IPv4)");
	cr_assert_neq(big_datagram(epa.ns.path, epb.ns.path, B4, 5001, 4000, false), 0, "UDP 5001 denied");
	cr_assert_eq(big_datagram(epa.ns.path, epb.ns.path, B6, 5000, 4000, false), 0, "4000 bytes to UDP 5000 (IPv6)");
	cr_assert_neq(big_datagram(epa.ns.path, epb.ns.path, B6, 5001, 4000, false), 0, "IPv6 UDP 5001 denied");
	cr_assert_eq(big_datagram(epa.ns.path, epb.ns.path, B6, 5000, 200, true), 0,
		     "UDP 5000 behind a destination-options header");
	cr_assert_neq(big_datagram(epa.ns.path, epb.ns.path, B6, 5001, 200, true), 0, "and 5001 denied behind it");
	cr_assert_eq(l4_echo(epa.ns.path, epb.ns.path, B6, 8080, SOCK_STREAM), 0, "TCP 8080 over IPv6");
}

/* Sends @n datagrams alternately to @ip:@ok and @ip:@bad, each from a new
 * socket (a new connection: policy judges every one). */
static void send_alternating(const char *ip, int ok, int bad, int n)
{
	for (int i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sockaddr_of(ip, i % 2 ? bad : ok, &ss);
		int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		char b = (char)i;

		if (fd < 0 || sendto(fd, &b, 1, 0, (struct sockaddr *)&ss, len) != 1)
			_exit(1);
		close(fd);
		usleep(500);
	}
	_exit(0);
}

/* Counts datagrams on @ip:@port until 2 s pass without one; writes the
 * count to @fd. */
static void count_datagrams(const char *ip, int port, int ready, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(ip, port, &ss);
	int s = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unsigned int n = 0;
	char b[16];

	if (s < 0 || bind(s, (struct sockaddr *)&ss, len) < 0 || write(ready, "r", 1) != 1)
		_exit(1);
	set_timeouts(s, 2000);
	while (recv(s, b, sizeof(b), 0) > 0)
		n++;
	_exit(write(fd, &n, sizeof(n)) == (ssize_t)sizeof(n) ? 0 : 2);
}

static pid_t counter_in(const char *ns, const char *ip, int port, int *ret_fd)
{
	int ready[2], res[2];
	pid_t pid;
	char c;

	cr_assert(pipe2(ready, O_CLOEXEC) == 0 && pipe2(res, O_CLOEXEC) == 0);
	pid = fork_in(ns);
	if (pid == 0) {
		close(ready[0]);
		close(res[0]);
		count_datagrams(ip, port, ready[1], res[1]);
	}
	close(ready[1]);
	close(res[1]);
	cr_assert(read(ready[0], &c, 1) == 1, "counter ready");
	close(ready[0]);
	*ret_fd = res[0];
	return pid;
}

/* 1,000 policy switches on B while A sends: every datagram to the port
 * both policies allow arrives, none to the port both deny (0 wrongly
 * dropped, 0 wrongly allowed), and B never falls back to "no policy". */
Test(datapath, thousand_switches_lose_and_leak_nothing, .init = setup_fib_tcx, .fini = node_down, .timeout = 180)
{
	struct flowsdn_maps *m = flowsdn_datapath_maps(dp);
	struct flowsdn_policy_map_entry v[2][3];
	struct flowsdn_drop_counters d0, d1;
	int fd_ok, fd_bad, st, sent = 4000;
	unsigned int got_ok = 0, got_bad = 0;
	pid_t c_ok, c_bad, snd;

	/* Both versions allow UDP 5000 from A; they differ elsewhere. */
	for (int g = 0; g < 2; g++) {
		memset(v[g], 0, sizeof(v[g]));
		ASSERT_OK(flowsdn_policy_key_make(epb.e.id, FLOWSDN_DIR_INGRESS, epa.e.identity, IPPROTO_UDP, 5000, 16,
						  &v[g][0].key), "key");
		ASSERT_OK(flowsdn_policy_key_make(epb.e.id, FLOWSDN_DIR_INGRESS, FLOWSDN_IDENTITY_ANY, IPPROTO_TCP,
						  g ? 81 : 80, 16, &v[g][1].key), "key");
		ASSERT_OK(flowsdn_policy_key_make(epb.e.id, FLOWSDN_DIR_INGRESS, epa.e.identity, IPPROTO_UDP,
						  g ? 7008 : 7104, 12, &v[g][2].key), "key");
		for (int i = 0; i < 3; i++)
			v[g][i].rule_id = (uint32_t)(10 * g + i + 1);
	}
	ASSERT_OK(flowsdn_maps_policy_switch(m, &epb.e, NULL, 0, v[0], 3, FLOWSDN_EP_F_ENFORCE_INGRESS), "first");
	ASSERT_OK(flowsdn_maps_drop_counters(m, FLOWSDN_DROP_POLICY_DEFAULT, &d0), "drops");
	c_ok = counter_in(epb.ns.path, B4, 5000, &fd_ok);
	c_bad = counter_in(epb.ns.path, B4, 6000, &fd_bad);
	snd = fork_in(epa.ns.path);
	if (snd == 0)
		send_alternating(B4, 5000, 6000, sent);
	for (int i = 0; i < 1000; i++) {
		int g = (i + 1) % 2;

		ASSERT_OK(flowsdn_maps_policy_switch(m, &epb.e, v[1 - g], 3, v[g], 3, FLOWSDN_EP_F_ENFORCE_INGRESS),
			  "switch");
		usleep(1500); /* spread over the traffic (about 2 s of it) */
	}
	waitpid(snd, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sender");
	waitpid(c_ok, &st, 0);
	waitpid(c_bad, &st, 0);
	cr_assert(read(fd_ok, &got_ok, sizeof(got_ok)) == sizeof(got_ok));
	cr_assert(read(fd_bad, &got_bad, sizeof(got_bad)) == sizeof(got_bad));
	ASSERT_OK(flowsdn_maps_drop_counters(m, FLOWSDN_DROP_POLICY_DEFAULT, &d1), "drops");
	cr_assert_eq(got_ok, (unsigned int)sent / 2, "every allowed datagram arrived (%u of %d)", got_ok, sent / 2);
	cr_assert_eq(got_bad, 0, "no denied datagram arrived");
	cr_assert_eq(d1.packets - d0.packets, (uint64_t)sent / 2, "exactly the denied ones were dropped");
}

SERIAL_TEST_MAIN()
