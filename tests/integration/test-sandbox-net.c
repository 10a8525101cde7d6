/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sandbox sessions on flowsdn networking (issue 20 items 2 and 5): the
 * gVisor backend with a flowsdn-agent of the test's own, its netns wired
 * by flowsdn-cni, `runsc --network=sandbox`, the session's egress policy
 * at the agent.
 *
 * Each test is its own node (node_enter(): private network and mount
 * namespace, private /tmp): the agent's state, socket and bpffs live in a
 * tmpfs there.  A "public" netns (a child of the test) is joined to the
 * node by a veth: 203.0.113.2 (a public destination, also the sessions'
 * DNS server), 203.0.113.3 (public, listed as denied or not allowed),
 * 10.99.0.2 (a LAN address, a protected range) and 169.254.169.254 (the
 * metadata address, routed there) all answer TCP on ports
 * 8080 and 53.  Connections are tried from inside the sandbox with bash's
 * /dev/tcp under BusyBox's timeout.
 *
 *  - egress modes: disabled reaches DNS only, restricted its allowed
 *    destination only, internet public destinations but neither a denied
 *    one, a protected (LAN) range nor the metadata address (each of
 *    which answers the node itself); reap releases the address (the
 *    agent's IPAM no longer lists the container).
 *  - the warm pool: an idle sandbox reaches nothing (not even DNS);
 *    claimed by an internet session, it reaches the public destination
 *    and still not the denied one.
 *
 *  - without an agent: egress other than disabled refused with a diag,
 *    nothing made.
 *
 * Skipped, with the reason, only when runsc, busybox or the built agent
 * is missing.  runsc state, bundles and cgroups are the test's own and
 * removed even when it fails.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <flash/sandbox.h>
#include <flash/spec.h>

#include "agent-client.h"
#include "netns-helpers.h"
#include "sandbox-gvisor.h"
#include "sandbox-image.h"

#define RUNSC "/usr/bin/runsc"
#define IMAGE "sbx-net-test"
#define PUB "203.0.113.2"
#define PUB_DENIED "203.0.113.3"
#define LAN "10.99.0.2"
#define METADATA "169.254.169.254"

static char dir[64], sock[128], image_dir[160], cg_parent[64], state_dir[128];
static pid_t agent = -1;
static struct test_ns pub;
static pid_t server = -1;
static const struct flash_sandbox_backend_ops *ops;
static void *backend;

static struct sbx_image the_image = { .name = IMAGE, .dir = image_dir };

/* Accepts (and closes) every TCP connection to ports 8080 and 53 of the
 * public netns, until killed. */
static void server_start(void)
{
	server = fork_in(pub.path);
	if (server == 0) {
		struct pollfd p[2];
		int ports[2] = { 8080, 53 };

		for (int i = 0; i < 2; i++) {
			struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(ports[i]) };
			int one = 1;

			p[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			p[i].events = POLLIN;
			setsockopt(p[i].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (p[i].fd < 0 || bind(p[i].fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(p[i].fd, 64) < 0)
				_exit(1);
		}
		for (;;) {
			if (poll(p, 2, -1) < 0)
				continue;
			for (int i = 0; i < 2; i++)
				if (p[i].revents & POLLIN) {
					int c = accept4(p[i].fd, NULL, NULL, SOCK_CLOEXEC);

					if (c >= 0)
						close(c);
				}
		}
	}
}

static void agent_start(void)
{
	const char *b = getenv("top_builddir");
	char bin[512], conf[160], log[160], cni_conf[160];
	struct agent_client_opts o = { .socket = sock, .timeout_ms = 500 };
	FILE *f;

	snprintf(bin, sizeof(bin), "%s/bin/flowsdn-agent", b ? b : ".");
	if (access(bin, X_OK) < 0)
		cr_skip_test("%s not built", bin);
	snprintf(conf, sizeof(conf), "%s/agent.json", dir);
	snprintf(log, sizeof(log), "%s/agent.log", dir);
	f = fopen(conf, "w");
	cr_assert(f);
	/* egress-mode stack: the node forwards to the public netns */
	fprintf(f, "{\"socket\":\"%s\",\"state-dir\":\"%s/state\",\"bpf-pin-dir\":\"%s/bpf\","
		   "\"pools\":[\"10.77.0.0/24\"],\"socket-lb-cgroup\":\"\",\"egress-mode\":\"stack\"}\n",
		sock, dir, dir);
	fclose(f);
	snprintf(cni_conf, sizeof(cni_conf), "%s/cni.conflist", dir);
	f = fopen(cni_conf, "w");
	cr_assert(f);
	fprintf(f, "{\"cniVersion\":\"1.0.0\",\"name\":\"flowsdn\",\"plugins\":[{\"type\":\"flowsdn-cni\","
		   "\"agentSocket\":\"%s\",\"queueDir\":\"%s/state/cni-queue\",\"timeoutMs\":5000}]}\n",
		sock, dir);
	fclose(f);
	agent = fork();
	cr_assert(agent >= 0);
	if (agent == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0)
			dup2(fd, 2);
		execl(bin, bin, "--config", conf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1500; i++) {
		if (agent_client_health(&o, NULL) == 0)
			return;
		usleep(20000);
	}
	cr_assert_fail("flowsdn-agent did not become healthy");
}

static void setup(void)
{
	char cmd[1024];

	if (access(RUNSC, X_OK) < 0 || access("/usr/bin/busybox", X_OK) < 0)
		cr_skip_test("no %s or /usr/bin/busybox: no gVisor sandbox to test", RUNSC);
	node_enter();
	snprintf(dir, sizeof(dir), "/tmp/sbx-net.XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/run/flowsdn.sock", dir);
	snprintf(image_dir, sizeof(image_dir), "%s/image", dir);
	snprintf(state_dir, sizeof(state_dir), "%s/sbx", dir);
	snprintf(cg_parent, sizeof(cg_parent), "/sbx-net-%d", getpid());
	/* the image: BusyBox beside the host's bash and its libraries */
	cr_assert(sbx_image_build(image_dir) == 0, "building the test image");
	cr_assert(system("echo 1 > /proc/sys/net/ipv4/ip_forward") == 0, "ip_forward");
	ns_spawn(&pub);
	snprintf(cmd, sizeof(cmd),
		 "set -e; ip link add sbxpub0 type veth peer name eth0 netns %d;"
		 "ip addr add 203.0.113.1/24 dev sbxpub0; ip addr add 10.99.0.1/24 dev sbxpub0; ip link set sbxpub0 up",
		 (int)pub.pid);
	cr_assert(system(cmd) == 0, "veth to the public netns");
	cr_assert(system("ip route add " METADATA "/32 via " PUB) == 0, "route to the metadata address");
	cr_assert(run_in(pub.path, "set -e; ip addr add " PUB "/24 dev eth0; ip addr add " PUB_DENIED "/24 dev eth0;"
				   "ip addr add " LAN "/24 dev eth0; ip addr add " METADATA "/32 dev eth0; ip link set eth0 up;"
				   "ip route add 10.77.0.0/24 via 203.0.113.1") == 0,
		  "public netns addresses");
	server_start();
	agent_start();
}

static void teardown(void)
{
	char cmd[1024];

	if (backend) {
		ops->free(backend); /* idle pool sandboxes removed */
		backend = NULL;
	}
	if (state_dir[0]) {
		snprintf(cmd, sizeof(cmd),
			 "for c in $(ls %s/sessions 2>/dev/null); do " RUNSC " --root %s/runsc delete -force $c >/dev/null 2>&1;"
			 " umount -l %s/sessions/$c/netns 2>/dev/null; done;"
			 "for d in /sys/fs/cgroup/*%s /sys/fs/cgroup%s; do [ -d $d ] && rmdir $d/* $d 2>/dev/null; done; true",
			 state_dir, state_dir, state_dir, cg_parent, cg_parent);
		if (system(cmd) != 0)
			fprintf(stderr, "cleanup of %s failed\n", state_dir);
	}
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
	}
	if (agent > 0) {
		kill(agent, SIGTERM);
		waitpid(agent, NULL, 0);
	}
	ns_kill(&pub);
	/* everything else is in the node's private /tmp */
}

static void backend_open(unsigned int pool)
{
	const char *b = getenv("top_builddir");
	char bin[512], cni_conf[160];
	FLASH_OPTS(op_sandbox_gvisor_opts, o, .dir = state_dir, .cgroup_parent = cg_parent, .rootfs = sbx_image_rootfs,
		   .rootfs_ctx = &the_image, .reap_interval_ms = 500, .pool_size = pool, .pool_image = pool ? IMAGE : NULL,
		   .pool_cpu_millis = 500, .pool_memory_mib = 256, .agent_socket = sock,
		   .resolv_conf = "nameserver " PUB "\n");
	int r;

	snprintf(bin, sizeof(bin), "%s/bin", b ? b : ".");
	snprintf(cni_conf, sizeof(cni_conf), "%s/cni.conflist", dir);
	o.cni_bin_dir = bin;
	o.cni_conf = cni_conf;
	r = op_sandbox_gvisor_new(&o, &ops, &backend);
	cr_assert(r == 0, "gVisor backend: %s", flash_strerror(r));
}

static struct flash_spec *spec_of(const char *egress)
{
	struct flash_spec *s = NULL;
	char *json = NULL;
	int r;

	cr_assert(asprintf(&json, "{\"region\":\"heteronet-global\",\"image\":\"" IMAGE "\",\"cpu_millis\":500,"
				  "\"memory_mib\":256,\"egress\":%s}", egress) > 0);
	r = flash_spec_parse(json, strlen(json), NULL, &s, NULL);
	cr_assert(r == 0, "spec %s: %s", json, flash_strerror(r));
	free(json);
	return s;
}

static void provision(const char *sid, const char *egress, struct flash_sandbox_info *info)
{
	struct flash_spec *s = spec_of(egress);
	struct flash_diag *d = NULL;
	int r;

	cr_assert(flash_diag_new(&d) == 0);
	r = ops->provision(backend, sid, s, 600, info, d);
	if (r < 0) {
		const struct flash_diag_entry *e = flash_diag_first_error(d);

		cr_assert_fail("provision %s: %s: %s", sid, flash_strerror(r), e ? e->message : "");
	}
	flash_diag_free(d);
	flash_spec_free(s);
}

/* Does a TCP connection from @sid's sandbox to @ip:@port complete (within 1 s)? */
static bool reaches(const char *sid, const char *ip, int port)
{
	char script[256];
	int code = -1, r;

	snprintf(script, sizeof(script), "timeout 1 /bin/bash -c ': </dev/tcp/%s/%d'", ip, port);
	struct flash_sandbox_exec_io io = { .sz = sizeof(io),
					    .argv = (const char *const[]){ "/bin/bash", "-c", script, NULL } };
	r = ops->exec(backend, sid, &io, &code);
	cr_assert(r == 0, "exec in %s: %s", sid, flash_strerror(r));
	return code == 0;
}

/* Is @cid's address allocated at the agent (GET /v1/ipam)? */
static bool allocated(const char *cid)
{
	struct agent_client_opts o = { .socket = sock, .timeout_ms = 2000 };
	struct json_value *root = NULL;
	const struct json_value *a;
	bool found = false;

	cr_assert(agent_client_call(&o, "GET", "/v1/ipam", NULL, &root, NULL) == 0, "GET /v1/ipam");
	a = json_get(root, "allocations");
	cr_assert(json_is(a, JSON_ARRAY));
	for (size_t i = 0; i < a->u.array.n; i++) {
		const char *c = json_string_value(json_get(a->u.array.items[i], "containerID"));

		found |= c && strcmp(c, cid) == 0;
	}
	json_free(root);
	return found;
}

#define EGRESS(mode, allowed, denied)                                                                             \
	"{\"mode\":\"" mode "\",\"allow_same_organization\":false,\"allowed_destination_cidrs\":[" allowed "],"      \
	"\"denied_destination_cidrs\":[" denied "]}"

Test(sandbox_net, egress_modes_hold_and_reap_releases_the_address, .init = setup, .fini = teardown, .timeout = 120)
{
	struct flash_sandbox_info dis, res, net;

	backend_open(0);
	provision("sb-0123456789abcdef-dis", EGRESS("disabled", "", ""), &dis);
	provision("sb-0123456789abcdef-res", EGRESS("restricted", "\"" PUB "/32\"", ""), &res);
	provision("sb-0123456789abcdef-net", EGRESS("internet", "", "\"" PUB_DENIED "/32\""), &net);
	cr_assert(allocated(dis.backend_id) && allocated(res.backend_id) && allocated(net.backend_id),
		  "each sandbox has an IPAM address");

	{
		/* the session's DNS servers are its resolv.conf's */
		int code = -1;
		struct flash_sandbox_exec_io io = {
			.sz = sizeof(io),
			.argv = (const char *const[]){ "/bin/grep", "-qx", "nameserver " PUB, "/etc/resolv.conf", NULL }
		};

		cr_assert(ops->exec(backend, "sb-0123456789abcdef-dis", &io, &code) == 0, "exec grep");
		cr_expect(code == 0, "resolv.conf names the DNS server: grep exit %d", code);
	}
	/* disabled: DNS only */
	cr_expect(reaches("sb-0123456789abcdef-dis", PUB, 53), "disabled: the DNS server on port 53");
	cr_expect(!reaches("sb-0123456789abcdef-dis", PUB, 8080), "disabled: nothing else");
	/* restricted: the allowed destination only */
	cr_expect(reaches("sb-0123456789abcdef-res", PUB, 8080), "restricted: the allowed destination");
	cr_expect(!reaches("sb-0123456789abcdef-res", PUB_DENIED, 8080), "restricted: not another");
	/* internet: public destinations, not the denied one, not a LAN range */
	cr_expect(reaches("sb-0123456789abcdef-net", PUB, 8080), "internet: a public destination");
	cr_expect(!reaches("sb-0123456789abcdef-net", PUB_DENIED, 8080), "internet: not a denied destination");
	cr_expect(!reaches("sb-0123456789abcdef-net", LAN, 8080), "internet: not a protected (LAN) range");
	cr_expect(!reaches("sb-0123456789abcdef-net", METADATA, 8080), "internet: not the metadata address");
	/* the control: from the node (no policy) each of them answers, so
	 * what the sandbox did not reach was refused by its policy */
	cr_assert(run_in(NULL, "for a in " PUB_DENIED " " LAN " " METADATA "; do"
			       " timeout 1 bash -c \": </dev/tcp/$a/8080\" || exit 1; done") == 0,
		  "the refused destinations answer the node");

	/* reap: the address goes back to IPAM */
	cr_assert(ops->reap(backend, "sb-0123456789abcdef-net") == 0, "reap");
	cr_expect(!allocated(net.backend_id), "the reaped sandbox's address is free");
	cr_expect(allocated(dis.backend_id), "the others keep theirs");
}

Test(sandbox_net, a_pool_sandbox_reaches_nothing_until_claimed, .init = setup, .fini = teardown, .timeout = 120)
{
	struct flash_sandbox_info info;
	char idle_cid[32] = "";

	backend_open(1);
	for (int i = 0; i < 600 && op_sandbox_gvisor_pool_idle(backend) < 1; i++)
		usleep(50000);
	cr_assert(op_sandbox_gvisor_pool_idle(backend) == 1, "the pool filled");
	{
		/* the idle sandbox, by its (only) directory */
		char cmd[256], *line = NULL;
		size_t cap = 0;
		FILE *p;

		snprintf(cmd, sizeof(cmd), "ls %s/sessions", state_dir);
		p = popen(cmd, "r");
		cr_assert(p);
		cr_assert(getline(&line, &cap, p) > 0);
		pclose(p);
		snprintf(idle_cid, sizeof(idle_cid), "%.*s", (int)strcspn(line, "\n"), line);
		free(line);
	}
	cr_assert(allocated(idle_cid), "the idle sandbox is wired (an IPAM address)");
	{
		/* before the claim: nothing, not even DNS (the idle sandbox
		 * has no session: exec'd into by runsc directly) */
		char c8080[600], c53[600];

		snprintf(c8080, sizeof(c8080),
			 RUNSC " --root %s/runsc exec %s /bin/bash -c \"timeout 1 /bin/bash -c ': </dev/tcp/" PUB "/8080'\"",
			 state_dir, idle_cid);
		snprintf(c53, sizeof(c53),
			 RUNSC " --root %s/runsc exec %s /bin/bash -c \"timeout 1 /bin/bash -c ': </dev/tcp/" PUB "/53'\"",
			 state_dir, idle_cid);
		cr_expect(system(c8080) != 0, "idle: no public destination");
		cr_expect(system(c53) != 0, "idle: no DNS");
	}
	provision("sb-0123456789abcdef-pool", EGRESS("internet", "", "\"" PUB_DENIED "/32\""), &info);
	cr_assert(info.from_pool, "the session claimed the pool's sandbox");
	cr_assert_str_eq(info.backend_id, idle_cid);
	cr_expect(reaches("sb-0123456789abcdef-pool", PUB, 8080), "claimed: the session's policy lets it out");
	cr_expect(!reaches("sb-0123456789abcdef-pool", PUB_DENIED, 8080), "claimed: its denied destination holds");
	cr_assert(ops->reap(backend, "sb-0123456789abcdef-pool") == 0, "reap");
	cr_expect(!allocated(idle_cid), "the claimed sandbox's address is free after reap");
}

/* Without an agent (no cni_bin_dir): --network=none as before, and a
 * mode other than disabled refused with a diag naming the field; no
 * sandbox is made. */
static void setup_no_agent(void)
{
	if (access(RUNSC, X_OK) < 0)
		cr_skip_test("no %s", RUNSC);
	node_enter();
	snprintf(dir, sizeof(dir), "/tmp/sbx-net.XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(state_dir, sizeof(state_dir), "%s/sbx", dir);
	snprintf(image_dir, sizeof(image_dir), "%s/image", dir);
	snprintf(cg_parent, sizeof(cg_parent), "/sbx-net-%d", getpid());
}

Test(sandbox_net, without_an_agent_only_disabled_egress_is_accepted, .init = setup_no_agent, .fini = teardown,
     .timeout = 30)
{
	FLASH_OPTS(op_sandbox_gvisor_opts, o, .dir = state_dir, .cgroup_parent = cg_parent, .rootfs = sbx_image_rootfs,
		   .rootfs_ctx = &the_image);
	const char *const modes[] = { EGRESS("internet", "", ""), EGRESS("restricted", "\"" PUB "/32\"", "") };

	cr_assert(op_sandbox_gvisor_new(&o, &ops, &backend) == 0, "gVisor backend");
	for (size_t i = 0; i < 2; i++) {
		struct flash_spec *s = spec_of(modes[i]);
		struct flash_sandbox_info info;
		struct flash_diag *d = NULL;
		const struct flash_diag_entry *e;
		char listing[256], *line = NULL;
		size_t cap = 0;
		FILE *p;

		cr_assert(flash_diag_new(&d) == 0);
		cr_assert_eq(ops->provision(backend, "sb-0123456789abcdef-nonet", s, 60, &info, d), -EOPNOTSUPP);
		e = flash_diag_first_error(d);
		cr_assert(e && strcmp(e->path, "egress.mode") == 0 && strstr(e->message, "no flowsdn agent"),
			  "diag: %s: %s", e ? e->path : "(none)", e ? e->message : "");
		snprintf(listing, sizeof(listing), "ls %s/sessions", state_dir);
		p = popen(listing, "r");
		cr_assert(p);
		cr_assert(getline(&line, &cap, p) < 0, "no sandbox made: %s", line ? line : "");
		free(line);
		pclose(p);
		flash_diag_free(d);
		flash_spec_free(s);
	}
}

SERIAL_TEST_MAIN()
