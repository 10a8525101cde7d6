/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Endpoint wiring through libnl (root): what flowsdn_netlink_veth_setup()
 * builds inside and outside the netns, checked with ip(8); failures leave
 * nothing behind; teardown is idempotent; the adoption check notices a
 * changed interface.  Each test is its own node (netns-helpers.h).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <flowsdn/netlink.h>

#include "diag-helpers.h"
#include "netns-helpers.h"

DIAG_TEST_HELPERS(flowsdn)

static struct test_ns ns;

static void setup(void)
{
	node_enter();
	ns_spawn(&ns);
}

static void teardown(void)
{
	ns_kill(&ns);
}

static struct flowsdn_prefix pfx(const char *text)
{
	struct flowsdn_prefix p;

	cr_assert(flowsdn_prefix_parse(text, strlen(text), NULL, &p) == 0, "%s", text);
	return p;
}

/* Output of a shell command in @path contains @needle. */
static bool shows(const char *path, const char *cmd, const char *needle)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s | grep -q -- '%s'", cmd, needle);
	return run_in(path, buf) == 0;
}

Test(netlink, veth_setup_builds_the_endpoint, .init = setup, .fini = teardown, .timeout = 60)
{
	struct flowsdn_prefix a[2] = { pfx("10.201.0.5/32"), pfx("fd00:201::5/128") };
	struct flowsdn_veth v;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();
	char mac[32], cmd[128];
	uint8_t m[6];
	int idx;

	FLOWSDN_OPTS(flowsdn_veth_config, cfg, .netns_path = ns.path, .host_ifname = "fsdn5", .ifname = "eth0",
		     .mtu = 1400, .has_mac = true, .mac = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 }, .addrs = a,
		     .n_addrs = 2, .host_routes = true);
	int r = flowsdn_netlink_veth_setup(&cfg, &v, err);

	cr_assert(r == 0, "setup: %s (%s)", flowsdn_strerror(r), flowsdn_test_messages(err));
	cr_assert(v.host_ifindex > 0 && v.ifindex > 0);
	ASSERT_STREQ(v.ifname, "eth0", "ifname");
	cr_assert(memcmp(v.mac, cfg.mac, 6) == 0, "requested MAC");
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", v.host_mac[0], v.host_mac[1], v.host_mac[2],
		 v.host_mac[3], v.host_mac[4], v.host_mac[5]);

	cr_assert(shows(ns.path, "ip -o link show eth0", "mtu 1400"), "MTU inside");
	cr_assert(shows(ns.path, "ip -o link show eth0", "02:11:22:33:44:55"), "MAC inside");
	cr_assert(shows(ns.path, "ip -o link show eth0", "state UP"), "eth0 up");
	cr_assert(shows(ns.path, "ip -o addr show dev eth0", "inet 10.201.0.5/32"), "IPv4 address");
	cr_assert(shows(ns.path, "ip -o addr show dev eth0", "inet6 fd00:201::5/128"), "IPv6 address");
	cr_assert(shows(ns.path, "ip route show", "default via 169.254.1.1 dev eth0"), "IPv4 default route");
	cr_assert(shows(ns.path, "ip -6 route show", "default via fe80::1 dev eth0"), "IPv6 default route");
	snprintf(cmd, sizeof(cmd), "169.254.1.1 dev eth0 lladdr %s PERMANENT", mac);
	cr_assert(shows(ns.path, "ip neigh show", cmd), "IPv4 gateway neighbour: %s", cmd);
	snprintf(cmd, sizeof(cmd), "fe80::1 dev eth0 lladdr %s PERMANENT", mac);
	cr_assert(shows(ns.path, "ip -6 neigh show", cmd), "IPv6 gateway neighbour");
	cr_assert(shows(ns.path, "cat /proc/sys/net/ipv6/conf/eth0/accept_ra", "0"), "accept_ra off");
	/* Host side. */
	cr_assert(system("ip -o link show fsdn5 | grep -q 'mtu 1400.*state UP'") == 0, "host side up, MTU");
	cr_assert(system("ip route show 10.201.0.5 | grep -q 'dev fsdn5'") == 0, "host route IPv4");
	cr_assert(system("ip -6 route show fd00:201::5 | grep -q 'dev fsdn5'") == 0, "host route IPv6");
	ASSERT_OK(flowsdn_netlink_link_get(ns.path, "eth0", &idx, m), "link_get in netns");
	cr_assert(idx == v.ifindex && memcmp(m, v.mac, 6) == 0);

	/* The adoption check agrees, and notices changes. */
	FLOWSDN_OPTS(flowsdn_endpoint_iface, f, .host_ifindex = v.host_ifindex, .host_ifname = "fsdn5",
		     .netns_path = ns.path, .netns_ino = v.netns_ino, .ifname = "eth0");
	memcpy(f.host_mac, v.host_mac, 6);
	memcpy(f.mac, v.mac, 6);
	ASSERT_OK(flowsdn_netlink_endpoint_check(&f, err), "check");
	f.netns_ino++;
	ASSERT_ERR(flowsdn_netlink_endpoint_check(&f, err), -FLOWSDN_E_NL_MISMATCH, "other netns inode");
	cr_assert(strstr(flowsdn_test_messages(err), "another network namespace"), "message: %s", flowsdn_test_messages(err));
	f.netns_ino--;
	cr_assert(run_in(ns.path, "ip link set eth0 address 02:11:22:33:44:56") == 0);
	ASSERT_ERR(flowsdn_netlink_endpoint_check(&f, err), -FLOWSDN_E_NL_MISMATCH, "MAC changed");

	/* Teardown removes the pair and the host routes; again: still 0. */
	ASSERT_OK(flowsdn_netlink_veth_teardown("fsdn5", &a[0].addr, 1, err), "teardown");
	cr_assert(system("ip link show fsdn5 >/dev/null 2>&1") != 0, "host side gone");
	cr_assert(run_in(ns.path, "ip link show eth0 >/dev/null 2>&1") != 0, "peer gone");
	cr_assert(system("ip route show 10.201.0.5 | grep -q .") != 0, "host route gone");
	ASSERT_OK(flowsdn_netlink_veth_teardown("fsdn5", &a[0].addr, 1, err), "teardown again");
	ASSERT_ERR(flowsdn_netlink_endpoint_check(&f, err), -FLOWSDN_E_NL_NOT_FOUND, "gone");
}

Test(netlink, taken_names_and_bad_input_leave_nothing, .init = setup, .fini = teardown, .timeout = 60)
{
	struct flowsdn_prefix a[1] = { pfx("10.201.0.6/32") };
	struct flowsdn_veth v;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();

	cr_assert(system("ip link add fsdnT type veth peer name fsdnT2") == 0);
	FLOWSDN_OPTS(flowsdn_veth_config, cfg, .netns_path = ns.path, .host_ifname = "fsdnT", .ifname = "eth0",
		     .addrs = a, .n_addrs = 1);
	ASSERT_ERR(flowsdn_netlink_veth_setup(&cfg, &v, err), -FLOWSDN_E_NL_EXISTS, "host name taken");
	cr_assert(strstr(flowsdn_test_messages(err), "fsdnT is taken"), "message: %s", flowsdn_test_messages(err));
	cr_assert(run_in(ns.path, "ip link show eth0 >/dev/null 2>&1") != 0, "no peer left");

	/* Name taken inside the netns. */
	cr_assert(run_in(ns.path, "ip link add eth0 type veth peer name eth0p") == 0);
	cfg.host_ifname = "fsdnU";
	ASSERT_ERR(flowsdn_netlink_veth_setup(&cfg, &v, err), -FLOWSDN_E_NL_EXISTS, "peer name taken");
	cr_assert(strstr(flowsdn_test_messages(err), "in the netns"), "message: %s", flowsdn_test_messages(err));
	cr_assert(system("ip link show fsdnU >/dev/null 2>&1") != 0, "no host side left");

	/* A failure after the pair exists (the kernel refuses a multicast
	 * interface address): the pair is removed again. */
	struct flowsdn_prefix b[2] = { pfx("10.201.0.7/32"), pfx("ff02::5/128") };

	cfg.ifname = "eth1";
	cfg.addrs = b;
	cfg.n_addrs = 2;
	cfg.host_ifname = "fsdnV";
	ASSERT_ERR(flowsdn_netlink_veth_setup(&cfg, &v, err), -FLOWSDN_E_NL_ADDR, "multicast address");
	cr_assert(strstr(flowsdn_test_messages(err), "add address ff02::5/128 on eth1"), "message: %s", flowsdn_test_messages(err));
	cr_assert(system("ip link show fsdnV >/dev/null 2>&1") != 0, "failed setup removed the host side");
	cr_assert(run_in(ns.path, "ip link show eth1 >/dev/null 2>&1") != 0, "failed setup removed the peer");

	/* Bad netns path, bad names, bad MTU. */
	cfg.ifname = "eth2";
	cfg.host_ifname = "fsdnW";
	cfg.netns_path = "/var/run/netns/does-not-exist-flowsdn";
	ASSERT_ERR(flowsdn_netlink_veth_setup(&cfg, &v, err), -FLOWSDN_E_NL_NETNS, "missing netns");
	cr_assert(strstr(flowsdn_test_messages(err), "does-not-exist-flowsdn"), "message names the path: %s", flowsdn_test_messages(err));
	cfg.netns_path = "/proc/self/ns/mnt";
	ASSERT_ERR(flowsdn_netlink_veth_setup(&cfg, &v, err), -FLOWSDN_E_NL_NETNS, "not a netns");
	cfg.netns_path = ns.path;
	cfg.host_ifname = "this-name-is-too-long";
	ASSERT_ERR(flowsdn_netlink_veth_setup(&cfg, &v, err), -FLOWSDN_E_NL_IFNAME, "long name");
	cfg.host_ifname = "a/b";
	ASSERT_ERR(flowsdn_netlink_veth_setup(&cfg, &v, err), -FLOWSDN_E_NL_IFNAME, "slash");
	cfg.host_ifname = "fsdnW";
	cfg.mtu = 40;
	ASSERT_ERR(flowsdn_netlink_veth_setup(&cfg, &v, err), -EINVAL, "MTU");
	cr_assert(system("ip link show fsdnW >/dev/null 2>&1") != 0, "nothing made");
}

Test(netlink, sysctl_and_link_state_in_netns, .init = setup, .fini = teardown, .timeout = 60)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();

	ASSERT_OK(flowsdn_netlink_sysctl_write(ns.path, "net.ipv4.ip_forward", "1", err), "sysctl in netns");
	cr_assert(shows(ns.path, "cat /proc/sys/net/ipv4/ip_forward", "1"), "set inside");
	cr_assert(system("grep -q 0 /proc/sys/net/ipv4/ip_forward") == 0, "not set in the caller's netns");
	ASSERT_ERR(flowsdn_netlink_sysctl_write(ns.path, "kernel.hostname", "x", err), -EINVAL, "only net.");
	ASSERT_ERR(flowsdn_netlink_sysctl_write(ns.path, "net/../kernel/hostname", "x", err), -EINVAL, "no ..");
	cr_assert(run_in(ns.path, "ip link add d0 type veth peer name d0p") == 0);
	ASSERT_OK(flowsdn_netlink_link_set_up(ns.path, "d0", true, err), "up");
	cr_assert(shows(ns.path, "ip -o link show d0", "UP"), "d0 up");
	ASSERT_OK(flowsdn_netlink_link_set_up(ns.path, "d0", false, err), "down");
	cr_assert(!shows(ns.path, "ip -o link show d0", ",UP"), "d0 down");
	ASSERT_ERR(flowsdn_netlink_link_set_up(ns.path, "nope0", true, err), -FLOWSDN_E_NL_NOT_FOUND, "missing link");
	cr_assert(flowsdn_netlink_ifname_valid("eth0") && !flowsdn_netlink_ifname_valid("") &&
		  !flowsdn_netlink_ifname_valid("..") && !flowsdn_netlink_ifname_valid("a b") &&
		  !flowsdn_netlink_ifname_valid("0123456789abcdef"));
}

SERIAL_TEST_MAIN()

/* flowsdn_netlink_veth_delete(): the pair removed from the container's
 * side, the caller's netns (here the node's) left as it is; a non-veth is
 * left alone; a missing one is success; a FIFO is not a netns, and is not
 * waited on. */
Test(netlink, veth_delete_from_inside_the_netns, .init = setup, .fini = teardown, .timeout = 60)
{
	struct flowsdn_veth v;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();
	char fifo[] = "/tmp/test-netlink-fifo-XXXXXX";
	int fd;

	FLOWSDN_OPTS(flowsdn_veth_config, cfg, .netns_path = ns.path, .host_ifname = "fsdn7", .ifname = "eth0");
	ASSERT_OK(flowsdn_netlink_veth_setup(&cfg, &v, err), flowsdn_test_messages(err));
	ASSERT_OK(flowsdn_netlink_veth_delete(ns.path, "eth0", err), flowsdn_test_messages(err));
	cr_assert(run_in(ns.path, "ip link show eth0 >/dev/null 2>&1") != 0, "container side gone");
	cr_assert(system("ip link show fsdn7 >/dev/null 2>&1") != 0, "host side went with it");
	ASSERT_OK(flowsdn_netlink_veth_delete(ns.path, "eth0", err), "again: already gone");

	cr_assert(run_in(ns.path, "ip link add br7 type bridge") == 0);
	ASSERT_ERR(flowsdn_netlink_veth_delete(ns.path, "br7", err), -FLOWSDN_E_NL_MISMATCH, "a bridge");
	cr_assert(strstr(flowsdn_test_messages(err), "not a veth"), "%s", flowsdn_test_messages(err));
	cr_assert(run_in(ns.path, "ip link show br7 >/dev/null 2>&1") == 0, "the bridge is left alone");

	fd = mkstemp(fifo);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert(unlink(fifo) == 0 && mkfifo(fifo, 0600) == 0);
	ASSERT_ERR(flowsdn_netlink_veth_delete(fifo, "eth0", err), -FLOWSDN_E_NL_NETNS, "a FIFO");
	unlink(fifo);
	ASSERT_ERR(flowsdn_netlink_veth_delete(NULL, "eth0", err), -EINVAL, "no netns");
	ASSERT_ERR(flowsdn_netlink_veth_delete(ns.path, "a/b", err), -EINVAL, "bad name");
}

/* host_accept_local: accept_local on the host side only (not on "all",
 * not inside); without it the host side keeps the default 0. */
Test(netlink, host_accept_local_on_the_host_side_only, .init = setup, .fini = teardown, .timeout = 60)
{
	struct flowsdn_prefix a[1] = { pfx("10.201.0.9/32") };
	struct flowsdn_veth v;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();

	FLOWSDN_OPTS(flowsdn_veth_config, cfg, .netns_path = ns.path, .host_ifname = "fsdn9", .ifname = "eth0",
		     .addrs = a, .n_addrs = 1, .host_routes = true, .host_accept_local = true);
	int r = flowsdn_netlink_veth_setup(&cfg, &v, err);

	cr_assert(r == 0, "setup: %s (%s)", flowsdn_strerror(r), flowsdn_test_messages(err));
	cr_assert(system("grep -qx 1 /proc/sys/net/ipv4/conf/fsdn9/accept_local") == 0, "host side accepts local");
	cr_assert(system("grep -qx 0 /proc/sys/net/ipv4/conf/all/accept_local") == 0, "not on all");
	cr_assert(shows(ns.path, "cat /proc/sys/net/ipv4/conf/eth0/accept_local", "0"), "not inside");
	ASSERT_OK(flowsdn_netlink_veth_teardown("fsdn9", &a[0].addr, 1, err), "teardown");

	cfg.host_accept_local = false;
	r = flowsdn_netlink_veth_setup(&cfg, &v, err);
	cr_assert(r == 0, "setup: %s (%s)", flowsdn_strerror(r), flowsdn_test_messages(err));
	cr_assert(system("grep -qx 0 /proc/sys/net/ipv4/conf/fsdn9/accept_local") == 0, "off unless asked");
	ASSERT_OK(flowsdn_netlink_veth_teardown("fsdn9", &a[0].addr, 1, err), "teardown");
}

static struct flowsdn_addr ip(const char *text)
{
	struct flowsdn_addr a;

	cr_assert(flowsdn_addr_parse(text, strlen(text), &a) == 0, "%s", text);
	return a;
}

/* The routes of flowsdn-agent's Kubernetes mode (<podCIDR> via <nodeIP>)
 * in this test's own netns: installed with protocol 201, listed, replaced
 * only when ours, a route not ours left alone (add refused, delete a
 * no-op), removed, and the kernel's refusal of an unreachable gateway. */
Test(netlink, gateway_routes_to_other_nodes, .init = setup, .fini = teardown, .timeout = 60)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	struct flowsdn_prefix p2 = pfx("10.244.2.0/24"), p3 = pfx("10.244.3.0/24"), p6 = pfx("fd00:10:244:2::/64");
	struct flowsdn_addr gw = ip("192.0.2.12"), gw2 = ip("192.0.2.22"), gw6 = ip("2001:db8::12");
	struct flowsdn_route *v = NULL;
	size_t n = 0;
	bool found = false;

	cr_assert(system("ip link add fsdnR type veth peer name fsdnQ && ip link set fsdnQ up && ip link set fsdnR up && ip addr add 192.0.2.1/24 dev fsdnR && "
			 "ip -6 addr add 2001:db8::1/64 dev fsdnR nodad") == 0, "a veth pair as the uplink (no dummy module needed)");
	ASSERT_OK(flowsdn_netlink_gateway_route(true, &p2, &gw, d), "add");
	cr_assert(run_in(NULL, "ip route show proto 201 | grep -q '^10.244.2.0/24 via 192.0.2.12 dev fsdnR'") == 0,
		  "installed with protocol 201");
	ASSERT_OK(flowsdn_netlink_gateway_route(true, &p6, &gw6, d), "add IPv6");
	cr_assert(run_in(NULL, "ip -6 route show proto 201 | grep -q '^fd00:10:244:2::/64 via 2001:db8::12 dev fsdnR'") == 0,
		  "IPv6 installed");
	ASSERT_OK(flowsdn_netlink_route_list(FLOWSDN_AF_INET, &v, &n, d), "list");
	for (size_t i = 0; i < n; i++)
		if (v[i].dst.len == 24 && flowsdn_addr_equal(&v[i].dst.addr, &p2.addr)) {
			found = true;
			cr_assert_eq(v[i].protocol, FLOWSDN_NETLINK_RTPROT);
			cr_assert(flowsdn_addr_equal(&v[i].gateway, &gw));
			cr_assert_gt(v[i].ifindex, 0);
		}
	cr_assert(found, "the route is listed");
	free(v);
	/* Ours again with another gateway: replaced. */
	ASSERT_OK(flowsdn_netlink_gateway_route(true, &p2, &gw2, d), "replace ours");
	cr_assert(run_in(NULL, "ip route show proto 201 | grep -q '^10.244.2.0/24 via 192.0.2.22 '") == 0, "replaced");
	/* A route not ours: never replaced nor removed. */
	cr_assert(system("ip route add 10.244.3.0/24 via 192.0.2.13") == 0);
	ASSERT_ERR(flowsdn_netlink_gateway_route(true, &p3, &gw, d), -EEXIST, "not ours");
	cr_assert(strstr(flowsdn_test_message(d), "not flowsdn's"), "%s", flowsdn_test_message(d));
	ASSERT_OK(flowsdn_netlink_gateway_route(false, &p3, &gw, d), "delete of a route not ours is a no-op");
	cr_assert(run_in(NULL, "ip route show | grep -q '^10.244.3.0/24 via 192.0.2.13 '") == 0, "the foreign route stays");
	/* Removed, and removing again succeeds. */
	ASSERT_OK(flowsdn_netlink_gateway_route(false, &p2, &gw2, d), "delete");
	ASSERT_OK(flowsdn_netlink_gateway_route(false, &p2, &gw2, d), "delete again");
	cr_assert(run_in(NULL, "ip route show | grep -q '^10.244.2.0/24'") != 0, "gone");
	/* A gateway no interface reaches. */
	{
		struct flowsdn_addr far = ip("198.51.100.1");

		ASSERT_ERR(flowsdn_netlink_gateway_route(true, &p2, &far, d), -FLOWSDN_E_NL_ROUTE, "unreachable");
	}
	ASSERT_ERR(flowsdn_netlink_gateway_route(true, &p2, &gw6, d), -EINVAL, "families differ");
}
