/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tc service path from a real gVisor sandbox (root, runsc): an
 * endpoint netns wired by flowsdn_netlink_veth_setup() and marked
 * FLOWSDN_EP_F_SVC_PACKET, as flowsdn-cni wires a sandbox whose runtime
 * config asks for serviceTranslation "packet"; `runsc --network=sandbox`
 * runs BusyBox in it, so gVisor's own netstack owns the interface and no
 * socket of the sandbox ever reaches the host kernel (or the socket LB).
 * Inside, `nc` to a ClusterIP's TCP port gets its echo back from a host
 * process, and `nslookup` against the ClusterIP's UDP port 53 gets the
 * answer of a dnsmasq on the host (its replies must come from the
 * ClusterIP: gVisor's resolver socket is connected to it).  Skipped, with
 * the reason, only when runsc or dnsmasq is missing.  The sandbox's state
 * (--root), bundle and cgroup are the test's own and removed after.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>

#include "diag-helpers.h"
#include "netns-helpers.h"

static char pin_dir[64];

#include "bpf/svc-helpers.h"

DIAG_TEST_HELPERS(flowsdn)

#define A4 "10.202.0.2"
#define A6 "fd00:202::2"
#define HOST4 "10.202.9.9" /* the backends: processes of the host */
#define CLUSTER_IP "10.96.2.20"
#define RUNSC "/usr/bin/runsc"
#define DNSMASQ "/usr/sbin/dnsmasq"

#include "endpoint-helpers.h"

static struct flowsdn_datapath *dp;
static struct ep epa;
static char work[64], cgname[96];
static pid_t dns = -1;

static void setup(void)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();
	int r;

	if (access(RUNSC, X_OK) < 0)
		cr_skip_test("no %s: no gVisor to run a sandbox with", RUNSC);
	if (access(DNSMASQ, X_OK) < 0)
		cr_skip_test("no %s: no DNS server for the UDP backend", DNSMASQ);
	node_enter();
	ASSERT_OK(flowsdn_netlink_sysctl_write(NULL, "net.ipv4.ip_forward", "1", err), "ip_forward");
	cr_assert(system("ip addr add " HOST4 "/32 dev lo") == 0, "host backend address");
	snprintf(pin_dir, sizeof(pin_dir), "/tmp/flowsdn-gvisor-XXXXXX");
	cr_assert(mkdtemp(pin_dir), "mkdtemp");
	snprintf(work, sizeof(work), "/tmp/flowsdn-gvisor-work-XXXXXX");
	cr_assert(mkdtemp(work), "mkdtemp");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = pin_dir);
	r = flowsdn_datapath_open(&o, &dp);
	cr_assert(r == 0, "datapath open: %s", flowsdn_strerror(r));
	ep_wire(dp, &epa, 31, 1031, FLOWSDN_EP_F_SVC_PACKET, "fsdnGV", A4, A6, true);
}

static void teardown(void)
{
	char cmd[256];

	if (dns > 0) {
		kill(dns, SIGTERM);
		waitpid(dns, NULL, 0);
	}
	if (work[0]) {
		snprintf(cmd, sizeof(cmd), RUNSC " --root %s/state delete --force gv >/dev/null 2>&1; rm -rf %s", work,
			 work);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", work);
	}
	/* runsc makes the cgroup in each controller it uses: all ours. */
	if (cgname[0]) {
		snprintf(cmd, sizeof(cmd), "for d in /sys/fs/cgroup/*/%s; do [ -d \"$d\" ] && rmdir \"$d\"; done; true",
			 cgname);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove the cgroups %s\n", cgname);
	}
	flowsdn_datapath_free(dp);
	dp = NULL;
	ns_kill(&epa.ns);
	node_unpin(pin_dir);
}

/* A bundle in @work: BusyBox as its root file system and @script run by
 * its sh in the endpoint's netns. */
static void bundle(const char *script)
{
	char path[PATH_MAX], cmd[PATH_MAX + 64];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "mkdir -p %s/bundle/rootfs/bin %s/state && cp /bin/busybox %s/bundle/rootfs/bin/",
		 work, work, work);
	cr_assert(system(cmd) == 0, "%s", cmd);
	snprintf(cgname, sizeof(cgname), "flowsdn-test-gvisor-%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/bundle/config.json", work);
	f = fopen(path, "we");
	cr_assert(f, "%s", path);
	fprintf(f,
		"{\"ociVersion\":\"1.0.2\",\"process\":{\"terminal\":false,\"user\":{\"uid\":0,\"gid\":0},"
		"\"args\":[\"/bin/busybox\",\"sh\",\"-c\",\"%s\"],\"env\":[\"PATH=/bin\"],\"cwd\":\"/\","
		"\"noNewPrivileges\":true},"
		"\"root\":{\"path\":\"rootfs\",\"readonly\":true},\"hostname\":\"gv\","
		"\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
		"{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"}],"
		"\"linux\":{\"cgroupsPath\":\"/%s\",\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\"},"
		"{\"type\":\"uts\"},{\"type\":\"mount\"},{\"type\":\"network\",\"path\":\"%s\"}]}}\n",
		script, cgname, epa.ns.path);
	cr_assert(fclose(f) == 0);
}

/* Runs the bundle to its end with gVisor's netstack (runsc run, in a
 * mount namespace whose /proc/sys/net is an empty tmpfs: this runsc
 * refuses the netstack where it finds rmem_default, gVisor issue 10704);
 * its output in @out. */
static int sandbox_run(char *out, size_t size)
{
	int p[2], st;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	cr_assert(pipe2(p, O_CLOEXEC) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char root[128], bdir[128];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", "/proc/sys/net", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k") < 0)
			_exit(126);
		if (dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
			_exit(126);
		snprintf(root, sizeof(root), "%s/state", work);
		snprintf(bdir, sizeof(bdir), "%s/bundle", work);
		execl(RUNSC, "runsc", "--root", root, "--network=sandbox", "run", "--bundle", bdir, "gv", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (got + 1 < size && (n = read(p[0], out + got, size - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(p[0]);
	cr_assert(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(svc_gvisor, clusterip_tcp_and_udp_from_a_gvisor_sandbox, .init = setup, .fini = teardown, .timeout = 120)
{
	uint32_t tcp[] = { 1 }, udp[] = { 2 };
	char out[8192];
	int ready[2], r;
	pid_t srv;
	char c;

	backend_put(1, AF_INET, HOST4, 9090, IPPROTO_TCP, FLOWSDN_BACKEND_ACTIVE);
	backend_put(2, AF_INET, HOST4, 9053, IPPROTO_UDP, FLOWSDN_BACKEND_ACTIVE);
	service_put(81, AF_INET, CLUSTER_IP, 443, IPPROTO_TCP, tcp, 1);
	service_put(82, AF_INET, CLUSTER_IP, 53, IPPROTO_UDP, udp, 1);
	/* The UDP backend: a DNS server answering one name. */
	dns = fork();
	cr_assert(dns >= 0);
	if (dns == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(DNSMASQ, "dnsmasq", "-k", "--conf-file=/dev/null", "--no-hosts", "--no-resolv", "--user=root",
		      "--pid-file=", "--bind-interfaces", "--listen-address=" HOST4, "--port=9053",
		      "--address=/svc.flowsdn.test/192.0.2.77", (char *)NULL);
		_exit(127);
	}
	/* The TCP backend: one echoed connection. */
	cr_assert(pipe2(ready, O_CLOEXEC) == 0);
	srv = fork();
	cr_assert(srv >= 0);
	if (srv == 0) {
		close(ready[0]);
		_exit(echo_server(HOST4, 9090, SOCK_STREAM, ready[1]));
	}
	close(ready[1]);
	cr_assert(read(ready[0], &c, 1) == 1, "echo server up");
	close(ready[0]);
	bundle("echo flowsdn-gvisor-tcp | busybox nc -w 5 " CLUSTER_IP " 443; "
	       "busybox nslookup svc.flowsdn.test " CLUSTER_IP);
	r = sandbox_run(out, sizeof(out));
	cr_assert(strstr(out, "flowsdn-gvisor-tcp"), "TCP: the echo through the ClusterIP (runsc %d):\n%s", r, out);
	cr_assert(strstr(out, "192.0.2.77"), "UDP: the DNS answer through the ClusterIP (runsc %d):\n%s", r, out);
	cr_assert_eq(waitpid(srv, &r, 0), srv);
	cr_assert(WIFEXITED(r) && WEXITSTATUS(r) == 0, "the echo server served its connection");
}

SERIAL_TEST_MAIN()
