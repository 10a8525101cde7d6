/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The runtime's pieces that need no privileges: the OCI bundle config of a
 * replica, its resolv.conf, the log time format, running a program with a
 * deadline, the log shim's rotated, timestamped stream lines, the readiness
 * probes (over loopback), root file system templates and the sparse copy.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <flash/spec.h>

#include "helpers.h"
#include "json.h"
#include "runtime-internal.h"
#include "runtime-net.h"
#include "runtime.h"
#include "util.h"

static const char spec_json[] =
	"{\"region\":\"heteronet-global\",\"image\":\"127.0.0.1:5000/echo:v1\",\"replicas\":2,\"cpu_millis\":250,"
	"\"memory_mib\":128,\"ephemeral_storage_gib\":1,\"ports\":[{\"name\":\"game-udp\",\"protocol\":\"udp\","
	"\"container_port\":7777}],\"exposure\":{\"type\":\"public\",\"traffic_mode\":\"forwarded\","
	"\"allowed_source_cidrs\":[],\"denied_source_cidrs\":[]},\"egress\":{\"mode\":\"disabled\","
	"\"allow_same_organization\":false,\"allowed_destination_cidrs\":[],\"denied_destination_cidrs\":[]},"
	"\"env\":{\"FLASH_ECHO_LISTEN\":\"0.0.0.0:7777\",\"PATH\":\"/opt/bin\"},\"command\":%s,\"args\":[\"-v\"],"
	"\"metadata\":{}}";

static struct flash_spec *spec_with(const char *command)
{
	struct flash_spec *s = NULL;
	char text[2048];

	snprintf(text, sizeof(text), spec_json, command);
	ASSERT_OK(flash_spec_parse(text, strlen(text), NULL, &s, NULL), "spec");
	return s;
}

static struct json_value *config_of(const struct op_bundle_params *p)
{
	struct json_value *v = NULL;
	char *text = NULL;
	size_t len = 0;

	ASSERT_OK(op_bundle_config(p, &text, &len), "bundle config");
	cr_assert_eq(strlen(text), len);
	ASSERT_OK(json_parse(text, len, NULL, &v, NULL), "config.json parses");
	free(text);
	return v;
}

static const char *str_at(const struct json_value *v, const char *path)
{
	const char *s = json_string_value(json_at(v, path));

	cr_assert(s, "%s is a string", path);
	return s;
}

static uint64_t uint_at(const struct json_value *v, const char *path)
{
	uint64_t u = 0;

	ASSERT_OK(json_get_uint64(json_at(v, path), &u), path);
	return u;
}

/* The records read back at start keep a string their field cannot hold
 * out rather than cut it: a cut could end inside a UTF-8 sequence, and
 * the record would no longer write (fuzz-operator-state found one:
 * tests/fuzz/regress/fuzz-operator-state/replica-id-cut-in-utf8). */
Test(records, long_strings_are_not_cut)
{
	char id[200], *rec = NULL, *text = NULL, *again = NULL;
	struct op_replica_record r;
	struct op_net_record n;
	size_t len = 0;

	/* 93 bytes then a 3-byte character: the id field (96) would cut it. */
	memset(id, 'g', 93);
	strcpy(id + 93, "\xe7\xaa\xa3-x");
	cr_assert(asprintf(&rec, "{\"id\":\"%s\",\"service\":\"fs-0123456789abcdef0123456789abcdef\","
			       "\"address\":\"10.88.0.5\",\"index\":1}", id) > 0);
	ASSERT_OK(op_replica_record_parse(rec, strlen(rec), 32, &r), rec);
	ASSERT_STREQ(r.id, "", "an id too long for its field is left out");
	ASSERT_STREQ(r.service, "fs-0123456789abcdef0123456789abcdef", "the rest is read");
	ASSERT_STREQ(r.address, "10.88.0.5", "address");
	cr_assert_eq(r.index, 1);
	ASSERT_OK(op_replica_record_format(&r, &text, &len), "the record writes again");
	free(rec);
	free(text);

	/* A namespace longer than its field: the record is refused. */
	rec = "{\"id\":\"fs-0123456789abcdef0123456789abcdef\",\"namespace\":\"org-0123456789abcdef0\","
	      "\"clusterIP\":\"10.96.0.10\",\"services\":[]}";
	ASSERT_ERR(op_net_record_parse(rec, strlen(rec), &n), -EBADMSG, "namespace of 21 bytes");
	rec = "{\"id\":\"fs-0123456789abcdef0123456789abcdef\",\"namespace\":\"org-0123456789abcdef\","
	      "\"services\":[\"fs-00000000000000000000000000000001\"]}";
	ASSERT_OK(op_net_record_parse(rec, strlen(rec), &n), rec);
	ASSERT_STREQ(n.cluster_ip, "", "an absent ClusterIP is \"\"");
	cr_assert_eq(n.n_ports, 1);
	ASSERT_OK(op_net_record_format(&n, &again, &len), "format");
	cr_assert(strstr(again, "\"services\":[\"fs-00000000000000000000000000000001\"]"), "%s", again);
	free(again);
}

/* What `runsc state` prints (runsc 20221219's own output, and -1 for a
 * container whose sandbox is gone, as runsc's SandboxPid() gives it). */
Test(runsc, state_is_read_and_checked)
{
	static const char running[] = "{\n  \"ociVersion\": \"1.0.2-dev\",\n  \"id\": \"fz1\",\n"
				      "  \"status\": \"running\",\n  \"pid\": 2507,\n  \"bundle\": \"/tmp/b\"\n}";
	static const char stopped[] = "{\"status\":\"stopped\",\"pid\":-1}";
	static const char *const refused[] = {
		"{\"status\":\"exited\",\"pid\":1}", "{\"pid\":1}", "{\"status\":\"running\",\"pid\":\"1\"}",
		"{\"status\":\"running\",\"pid\":-2}", "{\"status\":\"running\",\"pid\":4294967297}",
		"[\"running\"]", "container \"fz1\" does not exist",
	};
	char status[16];
	pid_t pid = 0;

	ASSERT_OK(op_runsc_state_parse(running, strlen(running), status, sizeof(status), &pid), "running");
	cr_assert_str_eq(status, "running");
	cr_assert_eq(pid, 2507);
	ASSERT_OK(op_runsc_state_parse(stopped, strlen(stopped), status, sizeof(status), &pid), "stopped");
	cr_assert_str_eq(status, "stopped");
	cr_assert_eq(pid, 0, "-1 is no sandbox, not a pid");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		pid = 77;
		strcpy(status, "same");
		ASSERT_ERR(op_runsc_state_parse(refused[i], strlen(refused[i]), status, sizeof(status), &pid), -EBADMSG,
			   refused[i]);
		cr_assert(pid == 77 && !strcmp(status, "same"), "%s: outputs left untouched", refused[i]);
	}
	ASSERT_ERR(op_runsc_state_parse(running, strlen(running), status, 7, &pid), -ENOBUFS, "7 bytes for running");
}

Test(bundle, config_follows_the_spec)
{
	struct flash_spec *s = spec_with("[\"/usr/local/bin/flash-udp-echo\"]");
	struct op_bundle_params p = { .spec = s, .hostname = "echo", .netns_path = "/run/x/netns",
				      .cgroups_path = "/flash/r1", .resolv_conf = "/run/x/resolv.conf" };
	struct json_value *v = config_of(&p);
	const struct json_value *args = json_at(v, "process.args"), *env = json_at(v, "process.env"), *ns, *m;
	bool home = false, path = false, listen = false, netns = false, resolv = false;

	cr_assert_eq(args->u.array.n, 2);
	ASSERT_STREQ(json_string_value(args->u.array.items[0]), "/usr/local/bin/flash-udp-echo", "argv[0]");
	ASSERT_STREQ(json_string_value(args->u.array.items[1]), "-v", "argv[1] from args");
	for (size_t i = 0; i < env->u.array.n; i++) {
		const char *e = json_string_value(env->u.array.items[i]);

		home |= strcmp(e, "HOME=/root") == 0;
		path |= strcmp(e, "PATH=/opt/bin") == 0;
		cr_assert(strncmp(e, "PATH=/usr", 9) != 0, "the spec's PATH replaces the default");
		listen |= strcmp(e, "FLASH_ECHO_LISTEN=0.0.0.0:7777") == 0;
	}
	cr_assert(home && path && listen, "env: HOME, the spec's PATH and its FLASH_ECHO_LISTEN");
	ASSERT_STREQ(str_at(v, "process.cwd"), "/root", "cwd");
	cr_assert_eq(uint_at(v, "process.user.uid"), 0);
	cr_assert_eq(uint_at(v, "process.user.gid"), 0);
	cr_assert_eq(json_at(v, "process.capabilities.bounding")->u.array.n, 0, "no capabilities");
	cr_assert_eq(json_at(v, "process.capabilities.effective")->u.array.n, 0, "no capabilities");
	ASSERT_STREQ(str_at(v, "linux.cgroupsPath"), "/flash/r1", "cgroupsPath always set");
	cr_assert_eq(uint_at(v, "linux.resources.cpu.quota"), 25000, "250 millicores of a 100 ms period");
	cr_assert_eq(uint_at(v, "linux.resources.cpu.period"), 100000);
	cr_assert_eq(uint_at(v, "linux.resources.memory.limit"), 128u << 20);
	cr_assert_geq(uint_at(v, "linux.resources.pids.limit"), OP_BUNDLE_SANDBOX_THREADS + 1,
		      "room for the sandbox's own threads");
	ns = json_at(v, "linux.namespaces");
	for (size_t i = 0; i < ns->u.array.n; i++)
		if (strcmp(json_string_value(json_get(ns->u.array.items[i], "type")), "network") == 0)
			netns = strcmp(json_string_value(json_get(ns->u.array.items[i], "path")), "/run/x/netns") == 0;
	cr_assert(netns, "the replica's netns");
	m = json_at(v, "mounts");
	for (size_t i = 0; i < m->u.array.n; i++)
		if (strcmp(json_string_value(json_get(m->u.array.items[i], "destination")), "/etc/resolv.conf") == 0)
			resolv = strcmp(json_string_value(json_get(m->u.array.items[i], "source")), "/run/x/resolv.conf") == 0;
	cr_assert(resolv, "resolv.conf bind-mounted");
	cr_assert_eq(json_get(v, "hostname") != NULL, true);
	json_free(v);
	flash_spec_free(s);
}

Test(bundle, image_entrypoint_without_a_command)
{
	struct flash_spec *s = spec_with("[]");
	const char *const entry[] = { "/bin/echo-server", "--port", NULL };
	const char *const ienv[] = { "PATH=/image/bin", "LANG=C", NULL };
	struct op_bundle_params p = { .spec = s, .netns_path = "/n", .cgroups_path = "/c" };
	struct json_value *v;
	char *text = NULL;

	ASSERT_ERR(op_bundle_config(&p, &text, NULL), -EINVAL, "no command anywhere");
	cr_assert_null(text);
	p.entrypoint = entry;
	p.image_env = ienv;
	p.pids_limit = 500;
	v = config_of(&p);
	ASSERT_STREQ(json_string_value(json_at(v, "process.args")->u.array.items[0]), "/bin/echo-server", "entrypoint");
	cr_assert_eq(json_at(v, "process.args")->u.array.n, 2, "the image's entrypoint, not the spec's args");
	cr_assert_eq(uint_at(v, "linux.resources.pids.limit"), 500);
	/* The spec's PATH wins over the image's. */
	const struct json_value *env = json_at(v, "process.env");
	for (size_t i = 0; i < env->u.array.n; i++)
		cr_assert(strcmp(json_string_value(env->u.array.items[i]), "PATH=/image/bin") != 0, "spec env wins");
	json_free(v);
	p.netns_path = NULL;
	ASSERT_ERR(op_bundle_config(&p, &text, NULL), -EINVAL, "netns required");
	flash_spec_free(s);
}

Test(bundle, resolv_conf)
{
	char path[] = "/tmp/test-resolv.XXXXXX", *out = NULL;
	int fd = mkstemp(path);
	const char host[] = "# comment\nnameserver 127.0.0.53\nnameserver 9.9.9.9\nsearch example\nnameserver ::1\n"
			    "nameserver 2620:fe::fe # quad9\n";

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, host, sizeof(host) - 1), (ssize_t)sizeof(host) - 1);
	close(fd);
	ASSERT_OK(op_bundle_resolv_conf(NULL, path, &out), "host servers");
	ASSERT_STREQ(out, "nameserver 9.9.9.9\nnameserver 2620:fe::fe\n", "loopback resolvers left out");
	free(out);
	out = NULL;
	ASSERT_OK(op_bundle_resolv_conf("192.0.2.53, 2001:db8::53", path, &out), "configured");
	ASSERT_STREQ(out, "nameserver 192.0.2.53\nnameserver 2001:db8::53\n", "configured servers");
	free(out);
	out = NULL;
	ASSERT_ERR(op_bundle_resolv_conf("dns.example", path, &out), -EINVAL, "not an address");
	ASSERT_ERR(op_bundle_resolv_conf(" ,", path, &out), -ENOENT, "none");
	cr_assert_null(out);
	unlink(path);
}

Test(logs, time_format)
{
	char buf[OP_LOG_TIME_STRLEN];

	op_log_time(0, buf);
	ASSERT_STREQ(buf, "1970-01-01T00:00:00.000000Z", "epoch");
	op_log_time(1700000000123456789LL, buf);
	ASSERT_STREQ(buf, "2023-11-14T22:13:20.123456Z", "2023");
	op_log_time(951782400LL * 1000000000LL, buf);
	ASSERT_STREQ(buf, "2000-02-29T00:00:00.000000Z", "leap day");
	cr_assert_eq(strlen(buf), OP_LOG_TIME_STRLEN - 1);
}

Test(exec, captures_and_deadline)
{
	struct op_exec e = { .argv = (const char *const[]){ "/bin/sh", "-c", "read x; echo out $x; echo err >&2; exit 3", NULL },
			     .input = "in\n", .input_len = 3 };
	char *out = NULL, *err = NULL, how[64];
	int status = 0;

	ASSERT_OK(op_exec_run(&e, &status, &out, &err), "run");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "exit status 3");
	ASSERT_STREQ(out, "out in\n", "stdout with stdin");
	ASSERT_STREQ(err, "err\n", "stderr");
	op_exec_status_str(status, how, sizeof(how));
	ASSERT_STREQ(how, "exit status 3", "status text");
	free(out);
	free(err);
	e = (struct op_exec){ .argv = (const char *const[]){ "/bin/sleep", "5", NULL }, .timeout_ms = 100 };
	ASSERT_ERR(op_exec_run(&e, &status, NULL, NULL), -ETIMEDOUT, "killed at the deadline");
	e = (struct op_exec){ .argv = (const char *const[]){ "/nonexistent/program", NULL } };
	ASSERT_OK(op_exec_run(&e, &status, NULL, NULL), "a missing program is an exit status");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 127);
}

Test(logs, shim_lines_streams_rotation)
{
	char dir[] = "/tmp/test-shim.XXXXXX", path[128], rotated[160], *text = NULL, *old = NULL;
	int out[2], err[2];

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/0.log", dir);
	snprintf(rotated, sizeof(rotated), "%s.1", path);
	cr_assert(pipe(out) == 0 && pipe(err) == 0);
	ASSERT_OK(op_log_shim_start(out[0], err[0], path, 400), "shim");
	close(out[0]);
	close(err[0]);
	cr_assert_eq(write(out[1], "one\ntw", 6), 6);
	cr_assert_eq(write(out[1], "o\n", 2), 2);
	cr_assert_eq(write(err[1], "bad\n", 4), 4);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(write(out[1], "filler line\n", 12), 12);
	cr_assert_eq(write(out[1], "last without newline", 20), 20);
	close(out[1]);
	close(err[1]);
	/* The shim writes after our close; wait for its last line (up to
	 * 30 s: under valgrind, which traces the shim too, on a loaded
	 * machine 2 s were once not enough). */
	for (int i = 0; i < 3000; i++) {
		free(text);
		text = NULL;
		if (util_read_file(path, 1 << 20, &text, NULL) == 0 && strstr(text, "last without newline\n"))
			break;
		usleep(10000);
	}
	cr_assert(text && strstr(text, " stdout last without newline\n"), "the unterminated last line: %s", text);
	ASSERT_OK(util_read_file(rotated, 1 << 20, &old, NULL), "rotated at 400 bytes");
	cr_assert(strstr(old, " stdout one\n") && strstr(old, " stdout two\n"), "whole lines: %s", old);
	cr_assert(strstr(old, " stderr bad\n") || strstr(text, " stderr bad\n"), "stderr tagged");
	int fillers = 0;
	for (const char *f = old; (f = strstr(f, " stdout filler line\n")); f++)
		fillers++;
	for (const char *f = text; (f = strstr(f, " stdout filler line\n")); f++)
		fillers++;
	cr_assert_eq(fillers, 5, "no line lost in the rotation");
	cr_assert(strlen(text) < 400 && strlen(old) < 400, "each file within its bound");
	cr_assert(old[4] == '-' && old[10] == 'T' && old[26] == 'Z' && old[27] == ' ', "timestamp first: %s", old);
	free(text);
	free(old);
	unlink(path);
	unlink(rotated);
	rmdir(dir);
}

/* The one rule splitting the disk budget: without persistence the root
 * file system is the whole budget; with it /root gets half of what the
 * image leaves, MiB-aligned, and the root file system the rest; a budget
 * the image (almost) fills leaves no volume and a root file system just
 * above the image. */
Test(storage, budget_split)
{
	const uint64_t MiB = UINT64_C(1) << 20, GiB = UINT64_C(1) << 30;
	uint64_t rootfs = 0, vol = 0;

	op_storage_split(GiB, 100 * MiB, false, &rootfs, &vol);
	cr_assert(rootfs == GiB && vol == 0, "no persistence: %llu %llu", (unsigned long long)rootfs,
		  (unsigned long long)vol);
	op_storage_split(GiB, 100 * MiB, true, &rootfs, &vol);
	cr_assert(vol == 462 * MiB && rootfs == 562 * MiB, "persistence: %llu %llu", (unsigned long long)rootfs,
		  (unsigned long long)vol);
	cr_assert(rootfs + vol == GiB, "the budget holds both");
	op_storage_split(GiB, 100 * MiB + 12345, true, &rootfs, &vol);
	cr_assert(vol % MiB == 0 && rootfs + vol == GiB && rootfs - (100 * MiB + 12345) >= vol,
		  "aligned, the writable root keeps at least the volume's share");
	op_storage_split(GiB, GiB - 10 * MiB, true, &rootfs, &vol);
	cr_assert(vol == 0 && rootfs == GiB - 10 * MiB + OP_STORAGE_MIN_BYTES, "10 MiB left: no volume, room for the image");
	op_storage_split(GiB, 2 * GiB, false, &rootfs, &vol);
	cr_assert(vol == 0 && rootfs == 2 * GiB + OP_STORAGE_MIN_BYTES, "never below the image");
}

/* ---------------------------------------------------------------- probes */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* A socket of @type bound on 127.0.0.1 (port chosen by the kernel). */
static int bound(int type, uint16_t *ret_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*ret_port = ntohs(sa.sin_port);
	return fd;
}

Test(probe, outcomes_over_loopback)
{
	uint16_t up, tp, closed;
	int u = bound(SOCK_DGRAM, &up), t = bound(SOCK_STREAM, &tp), c = bound(SOCK_DGRAM, &closed);

	/* A port nothing is bound to: the kernel answers port-unreachable
	 * (UDP) or RST (TCP), as gVisor's netstack does. */
	close(c);
	cr_assert_eq(op_probe("127.0.0.1", closed, IPPROTO_UDP, 500), OP_PROBE_REFUSED);
	cr_assert_eq(op_probe("127.0.0.1", closed, IPPROTO_TCP, 500), OP_PROBE_REFUSED);
	/* Bound, nobody answers: silence (UDP); a listening TCP socket
	 * completes the handshake. */
	cr_assert_eq(op_probe("127.0.0.1", up, IPPROTO_UDP, 50), OP_PROBE_SILENT);
	cr_assert_eq(listen(t, 4), 0);
	cr_assert_eq(op_probe("127.0.0.1", tp, IPPROTO_TCP, 500), OP_PROBE_ANSWERED);
	cr_assert_eq(op_probe("not-an-address", up, IPPROTO_UDP, 50), OP_PROBE_ERROR);
	close(u);
	close(t);
}

Test(probe, udp_readiness_needs_an_answer_or_seen_closed_then_silent)
{
	struct op_udp_readiness st = { 0 };

	/* Silence from the first probe on: listening unknown, never ready. */
	for (int i = 0; i < 10; i++)
		cr_assert(!op_probe_udp_ready(&st, OP_PROBE_SILENT));
	cr_assert(op_probe_udp_unknown(&st));
	/* Refused: nothing listens; not ready however often. */
	for (int i = 0; i < 10; i++)
		cr_assert(!op_probe_udp_ready(&st, OP_PROBE_REFUSED));
	cr_assert(!op_probe_udp_unknown(&st));
	/* Seen closed, then silent OP_PROBE_UDP_SILENT_READY times in a row:
	 * bound by a listener that does not answer. */
	for (int i = 0; i < OP_PROBE_UDP_SILENT_READY - 1; i++)
		cr_assert(!op_probe_udp_ready(&st, OP_PROBE_SILENT));
	cr_assert(!op_probe_udp_ready(&st, OP_PROBE_ERROR), "an error breaks the run");
	for (int i = 0; i < OP_PROBE_UDP_SILENT_READY - 1; i++)
		cr_assert(!op_probe_udp_ready(&st, OP_PROBE_SILENT));
	cr_assert(op_probe_udp_ready(&st, OP_PROBE_SILENT));
	/* An answer is ready at once, with or without evidence. */
	struct op_udp_readiness fresh = { 0 };

	cr_assert(op_probe_udp_ready(&fresh, OP_PROBE_ANSWERED));
	cr_assert(!op_probe_udp_ready(&fresh, OP_PROBE_REFUSED), "a refusal is never ready");
}

Test(probe, a_udp_port_never_bound_never_becomes_ready)
{
	struct op_udp_readiness st = { 0 };
	uint16_t port;
	int c = bound(SOCK_DGRAM, &port);

	close(c);
	for (int i = 0; i < 20; i++)
		cr_assert(!op_probe_udp_ready(&st, op_probe("127.0.0.1", port, IPPROTO_UDP, 50)));
	cr_assert(st.closed_seen);
	/* Then something binds it and stays silent: ready after the run. */
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ready = false;

	cr_assert_eq(bind(u, (struct sockaddr *)&sa, sizeof(sa)), 0);
	for (int i = 0; i < OP_PROBE_UDP_SILENT_READY && !ready; i++)
		ready = op_probe_udp_ready(&st, op_probe("127.0.0.1", port, IPPROTO_UDP, 50));
	cr_assert(ready);
	close(u);
}

/* ---------------------------------------------------------------- templates */

Test(templates, find_add_prune_and_leftovers)
{
	char dir[] = "/tmp/test-templates.XXXXXX", *p1, *p2, path[512];
	struct op_templates *t = NULL;
	const struct op_template *e;
	struct stat st;
	bool oom = true;
	char **entry = op_strv_dup((char *[]){ "/bin/echo", "hi", NULL }, &oom);

	cr_assert(!oom && entry);
	cr_assert(mkdtemp(dir));
	/* A leftover of an earlier operator goes. */
	snprintf(path, sizeof(path), "%s/t7.img", dir);
	ASSERT_OK(util_write_file_atomic(path, "x", 1, 0600), "leftover");
	ASSERT_OK(op_templates_new(dir, &t), "new");
	cr_assert(lstat(path, &st) < 0 && errno == ENOENT, "leftover removed");
	cr_assert_null(op_templates_find(t, "reg/a@sha256:1", 1 << 20));
	p1 = op_templates_path(t);
	p2 = op_templates_path(t);
	cr_assert(p1 && p2 && strcmp(p1, p2) != 0, "fresh names");
	{
		int fd = open(p1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

		cr_assert(fd >= 0);
		cr_assert_eq(ftruncate(fd, 1 << 20), 0);
		close(fd);
	}
	ASSERT_OK(op_templates_add(t, "reg/a@sha256:1", 1 << 20, p1, entry, NULL), "add");
	e = op_templates_find(t, "reg/a@sha256:1", 1 << 20);
	cr_assert(e && strcmp(e->entry[1], "hi") == 0 && !e->env);
	cr_assert_null(op_templates_find(t, "reg/a@sha256:1", 2 << 20), "another size is another template");
	cr_assert_null(op_templates_find(t, "reg/b@sha256:2", 1 << 20));
	/* Named by a live service: kept; unnamed: kept for keep_ms, then removed. */
	op_templates_prune(t, (const char *[]){ "reg/a@sha256:1" }, 1, 1000, 500);
	cr_assert(op_templates_find(t, "reg/a@sha256:1", 1 << 20));
	op_templates_prune(t, NULL, 0, 2000, 500);
	cr_assert(op_templates_find(t, "reg/a@sha256:1", 1 << 20), "within keep_ms");
	op_templates_prune(t, NULL, 0, 2600, 500);
	cr_assert_null(op_templates_find(t, "reg/a@sha256:1", 1 << 20));
	cr_assert(lstat(p1, &st) < 0 && errno == ENOENT, "its file removed");
	/* A template whose file went is not found (built again). */
	{
		int fd = open(p2, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

		cr_assert(fd >= 0);
		cr_assert_eq(ftruncate(fd, 1 << 20), 0);
		close(fd);
	}
	ASSERT_OK(op_templates_add(t, "reg/a@sha256:1", 1 << 20, p2, NULL, NULL), "add again");
	cr_assert(op_templates_find(t, "reg/a@sha256:1", 1 << 20));
	cr_assert_eq(unlink(p2), 0);
	cr_assert_null(op_templates_find(t, "reg/a@sha256:1", 1 << 20));
	op_templates_free(t);
	free(p1);
	free(p2);
	cr_assert_eq(rmdir(dir), 0, "nothing left in the directory");
}

Test(storage, copy_is_sparse_and_exact)
{
	char dir[] = "/tmp/test-storage-copy.XXXXXX", src[512], dst[512], err[512] = "", *a = NULL, *b = NULL;
	struct stat ss, ds;
	size_t la = 0, lb = 0;
	int fd;

	cr_assert(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(dst, sizeof(dst), "%s/dst", dir);
	fd = open(src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, 64 << 20), 0);
	cr_assert_eq(pwrite(fd, "head", 4, 0), 4);
	cr_assert_eq(pwrite(fd, "middle", 6, 20 << 20), 6);
	cr_assert_eq(pwrite(fd, "tail", 4, (64 << 20) - 4), 4);
	close(fd);
	cr_assert_eq(op_storage_copy(src, dst, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(stat(src, &ss), 0);
	cr_assert_eq(stat(dst, &ds), 0);
	cr_assert_eq(ds.st_size, ss.st_size);
	cr_assert_leq(ds.st_blocks, ss.st_blocks + 64, "the copy is sparse (%lld blocks, source %lld)",
		      (long long)ds.st_blocks, (long long)ss.st_blocks);
	ASSERT_OK(util_read_file(src, 128 << 20, &a, &la), "read src");
	ASSERT_OK(util_read_file(dst, 128 << 20, &b, &lb), "read dst");
	cr_assert(la == lb && memcmp(a, b, la) == 0, "same bytes");
	free(a);
	free(b);
	/* Never replaces a file; a source that is not a regular file is
	 * refused; nothing is left behind. */
	cr_assert_eq(op_storage_copy(src, dst, err, sizeof(err)), -EEXIST);
	cr_assert_eq(unlink(dst), 0);
	cr_assert_eq(op_storage_copy(dir, dst, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "not a regular file"), "%s", err);
	cr_assert(lstat(dst, &ds) < 0 && errno == ENOENT);
	cr_assert_eq(op_storage_copy("/nonexistent/x", dst, err, sizeof(err)), -ENOENT);
	cr_assert(lstat(dst, &ds) < 0 && errno == ENOENT);
	cr_assert_eq(unlink(src), 0);
	cr_assert_eq(rmdir(dir), 0);
}
