/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flowsdn-cni's verbs against a fake agent on a Unix socket (answering
 * canned replies, garbage, or nothing), the delete queue, install, and the
 * agent configuration.  No privileges needed. */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <flowsdn/cni.h>

#include "agent-api.h"
#include "conf.h"
#include "diag-helpers.h"
#include "helpers.h"
#include "install.h"
#include "plugin.h"
#include "queue.h"
#include "util.h"

static char dir[64];
static char sock_path[128];

/* The fake agent: answers every request with @reply (NULL: never
 * answers), recording the last request. */
struct fake {
	int fd;
	const char *reply;
	bool reset; /* close with the request unread: the client sees ECONNRESET */
	char last[4096];
	pthread_t thread;
};

static void *fake_main(void *arg)
{
	struct fake *f = arg;

	for (;;) {
		int c = accept(f->fd, NULL, NULL);
		char buf[4096];
		size_t len = 0;

		if (c < 0)
			return NULL;
		if (f->reset) { /* as an agent SIGKILLed with the request in hand */
			struct pollfd p = { .fd = c, .events = POLLIN };

			(void)poll(&p, 1, 2000);
			close(c);
			continue;
		}
		/* Read the head and the body (Content-Length). */
		for (;;) {
			ssize_t n = read(c, buf + len, sizeof(buf) - 1 - len);
			char *end, *cl;

			if (n <= 0)
				break;
			len += (size_t)n;
			buf[len] = '\0';
			end = strstr(buf, "\r\n\r\n");
			if (!end)
				continue;
			cl = strcasestr(buf, "Content-Length:");
			if (!cl || len >= (size_t)(end + 4 - buf) + strtoul(cl + 15, NULL, 10))
				break;
		}
		memcpy(f->last, buf, len + 1);
		if (!f->reply) {
			sleep(5);
		} else {
			ssize_t w = write(c, f->reply, strlen(f->reply));
			(void)w;
		}
		close(c);
	}
}

static struct fake *fake_start(const char *reply)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fake *f = calloc(1, sizeof(*f));

	cr_assert(f);
	f->reply = reply;
	strcpy(sa.sun_path, sock_path);
	f->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(f->fd >= 0);
	cr_assert(bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s: %s", sock_path, strerror(errno));
	cr_assert(listen(f->fd, 16) == 0);
	cr_assert(pthread_create(&f->thread, NULL, fake_main, f) == 0);
	return f;
}

static void setup(void)
{
	char q[128];

	snprintf(dir, sizeof(dir), "/tmp/test-cni-plugin.XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(sock_path, sizeof(sock_path), "%s/agent.sock", dir);
	/* conf_for()'s queueDir, marked as the agent marks its queue. */
	snprintf(q, sizeof(q), "%s/queue", dir);
	ASSERT_OK(agent_api_queue_dir_mark(q), "mark the queue");
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert(system(cmd) == 0);
}

/* One invocation: the exit status (the call itself must succeed). */
static int plugin_run(const char *input, size_t len, const char *(*getenv_fn)(const char *, void *), void *userdata,
		      const struct cni_plugin_opts *opts, char **out)
{
	int status = -1;

	cr_assert_eq(cni_plugin_run(input, len, getenv_fn, userdata, opts, out, &status), 0);
	return status;
}

static const char *env_table(const char *name, void *userdata)
{
	const char *const *t = userdata;

	for (size_t i = 0; t[i]; i += 2)
		if (!strcmp(t[i], name))
			return t[i + 1];
	return NULL;
}

/* Runs the plugin: @cmd with container "c1"/eth0 in /proc/self/ns/net. */
static int run(const char *cmd, const char *conf, char **out)
{
	const char *env[] = { "CNI_COMMAND", cmd, "CNI_CONTAINERID", "c1", "CNI_IFNAME", "eth0",
			      "CNI_NETNS", "/proc/self/ns/net", "CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAME=p", NULL };

	return plugin_run(conf, strlen(conf), env_table, env, NULL, out);
}

static char *conf_for(const char *version, const char *extra)
{
	char *c = NULL;

	cr_assert(asprintf(&c, "{\"cniVersion\":\"%s\",\"name\":\"flowsdn\",\"type\":\"flowsdn-cni\","
			       "\"agentSocket\":\"%s\",\"queueDir\":\"%s/queue\",\"timeoutMs\":300%s}",
			   version, sock_path, dir, extra ? extra : "") > 0);
	return c;
}

static unsigned int code_of(const char *out)
{
	const char *p = strstr(out, "\"code\":");

	return p ? (unsigned int)strtoul(p + 7, NULL, 10) : 0;
}

#define HTTP_OK(body) "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" body

static const char endpoint_reply[] = HTTP_OK(
	"{\"id\":3,\"containerID\":\"c1\",\"interface\":\"eth0\",\"netns\":\"/proc/self/ns/net\",\"netnsInode\":1,"
	"\"hostInterface\":\"fsd0123456789ab\",\"hostIfindex\":7,\"mac\":\"0a:00:00:00:00:03\","
	"\"hostMac\":\"0a:00:00:00:00:04\",\"mtu\":1450,\"created\":1,"
	"\"addresses\":[{\"address\":\"10.244.0.3/32\",\"gateway\":\"169.254.1.1\"},"
	"{\"address\":\"fd00:10:244::3/128\",\"gateway\":\"fe80::1\"}]}");

Test(cni_plugin, add_result_from_agent, .init = setup, .fini = teardown)
{
	struct fake *f = fake_start(endpoint_reply);
	struct flowsdn_cni_result *r = NULL;
	char *conf = conf_for("1.0.0", ",\"dns\":{\"nameservers\":[\"10.96.0.10\"]}"), *out = NULL;

	cr_assert_eq(run("ADD", conf, &out), 0, "%s", out);
	cr_assert(strstr(f->last, "POST /v1/cni/add "), "%s", f->last);
	cr_assert(strstr(f->last, "\"containerID\":\"c1\",\"ifname\":\"eth0\",\"netns\":\"/proc/self/ns/net\""), "%s",
		  f->last);
	ASSERT_OK(flowsdn_cni_result_parse(out, strlen(out), &r, NULL), out);
	cr_assert(strstr(out, "\"cniVersion\":\"1.0.0\""), "a 1.0.0 config gets a 1.0.0 result: %s", out);
	cr_assert_eq(flowsdn_cni_result_iface_count(r), 2);
	ASSERT_STREQ(flowsdn_cni_result_iface(r, 0)->name, "fsd0123456789ab", "host side first");
	ASSERT_STREQ(flowsdn_cni_result_iface(r, 1)->sandbox, "/proc/self/ns/net", "sandbox");
	cr_assert_eq(flowsdn_cni_result_ip_count(r), 2);
	cr_assert_eq(flowsdn_cni_result_ip(r, 0)->iface, 1);
	cr_assert_eq(flowsdn_cni_result_route_count(r), 2, "a default route per family");
	cr_assert(strstr(out, "\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"169.254.1.1\"},{\"dst\":\"::/0\",\"gw\":\"fe80::1\"}]"),
		  "%s", out);
	cr_assert(strstr(out, "\"nameservers\":[\"10.96.0.10\"]"), "%s", out);
	flowsdn_cni_result_free(r);
	free(out);
	free(conf);

	conf = conf_for("0.4.0", NULL);
	cr_assert_eq(run("ADD", conf, &out), 0, "%s", out);
	cr_assert(strstr(out, "\"version\":\"4\",\"address\":\"10.244.0.3/32\""), "%s", out);
	free(out);
	free(conf);
}

/* runtimeConfig.flowsdn.serviceTranslation goes to the agent with the ADD
 * (contract C3); a wrong value is an invalid configuration (code 7). */
Test(cni_plugin, add_passes_service_translation, .init = setup, .fini = teardown)
{
	struct fake *f = fake_start(endpoint_reply);
	char *conf = conf_for("1.1.0", ",\"runtimeConfig\":{\"flowsdn\":{\"serviceTranslation\":\"packet\"}}");
	char *out = NULL;

	cr_assert_eq(run("ADD", conf, &out), 0, "%s", out);
	cr_assert(strstr(f->last, "\"serviceTranslation\":\"packet\""), "%s", f->last);
	free(out);
	free(conf);
	conf = conf_for("1.1.0", NULL);
	cr_assert_eq(run("ADD", conf, &out), 0, "%s", out);
	cr_assert(!strstr(f->last, "serviceTranslation"), "the default is not sent: %s", f->last);
	free(out);
	free(conf);
	conf = conf_for("1.1.0", ",\"runtimeConfig\":{\"flowsdn\":{\"serviceTranslation\":\"xdp\"}}");
	cr_assert_eq(run("ADD", conf, &out), 1, "%s", out);
	cr_assert_eq(code_of(out), 7, "%s", out);
	cr_assert(strstr(out, "serviceTranslation"), "names the field: %s", out);
	free(out);
	free(conf);
}

Test(cni_plugin, check_compares_prev_result, .init = setup, .fini = teardown)
{
	struct fake *f = fake_start(endpoint_reply);
	char *conf, *out = NULL;

	conf = conf_for("1.1.0", ",\"prevResult\":{\"cniVersion\":\"1.1.0\",\"ips\":[{\"address\":\"10.244.0.3/32\"},"
				 "{\"address\":\"fd00:10:244::3/128\"}]}");
	cr_assert_eq(run("CHECK", conf, &out), 0, "%s", out);
	ASSERT_STREQ(out, "", "CHECK prints nothing on success");
	cr_assert(strstr(f->last, "POST /v1/cni/check "), "%s", f->last);
	free(out);
	free(conf);

	conf = conf_for("1.1.0", ",\"prevResult\":{\"cniVersion\":\"1.1.0\",\"ips\":[{\"address\":\"10.244.0.9/32\"}]}");
	cr_assert_eq(run("CHECK", conf, &out), 1);
	cr_assert_eq(code_of(out), CNI_PLUGIN_CODE_CONFLICT, "%s", out);
	free(out);
	free(conf);

	conf = conf_for("1.1.0", NULL);
	cr_assert_eq(run("CHECK", conf, &out), 1);
	cr_assert_eq(code_of(out), 7, "CHECK without prevResult: %s", out);
	free(out);
	free(conf);
}

Test(cni_plugin, agent_down, .init = setup, .fini = teardown)
{
	char *conf = conf_for("1.0.0", NULL), *out = NULL, *data = NULL, path[256];
	size_t len;
	FILE *fp;

	cr_assert_eq(run("ADD", conf, &out), 1);
	cr_assert_eq(code_of(out), 11, "ADD with no agent: try again later: %s", out);
	free(out);
	cr_assert_eq(run("STATUS", conf, &out), 1);
	cr_assert_eq(code_of(out), 50, "STATUS with no agent: %s", out);
	free(out);

	/* DEL is queued and succeeds, twice. */
	cr_assert_eq(run("DEL", conf, &out), 0, "%s", out);
	free(out);
	cr_assert_eq(run("DEL", conf, &out), 0, "%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/queue/c1.eth0.json", dir);
	fp = fopen(path, "r");
	cr_assert(fp, "queued DEL at %s", path);
	data = calloc(1, 256);
	len = fread(data, 1, 255, fp);
	fclose(fp);
	cr_assert(len > 0);
	ASSERT_STREQ(data, "{\"containerID\":\"c1\",\"ifname\":\"eth0\"}", "queue entry");
	free(data);
	free(conf);
}

/* A DEL with the agent down, the queue named by the network config. */
static int del_queued_in(const char *queue_dir, char **out)
{
	char *conf = NULL;
	int status;

	cr_assert(asprintf(&conf, "{\"cniVersion\":\"1.0.0\",\"name\":\"flowsdn\",\"type\":\"flowsdn-cni\","
				  "\"agentSocket\":\"%s\",\"queueDir\":\"%s\",\"timeoutMs\":300}",
			   sock_path, queue_dir) > 0);
	status = run("DEL", conf, out);
	free(conf);
	return status;
}

static void path_in(char *buf, size_t size, const char *name)
{
	cr_assert((size_t)snprintf(buf, size, "%s/%s", dir, name) < size);
}

/* issue 13 item 6: "queueDir": "/etc" made a DEL write /etc/<id>.json.
 * A configured queueDir is used only when it is the agent's marked queue,
 * private to us, reached without a symlink; the entry is never written
 * through a symlink either. */
Test(cni_plugin, configured_queue_dir_must_be_the_agents, .init = setup, .fini = teardown)
{
	static const struct {
		const char *name, *why;
	} bad[] = {
		{ "etc", "is not flowsdn-agent's delete queue" }, /* an ordinary directory, like /etc */
		{ "group-writable", "is not private" },
		{ "world-writable", "is not private" },
		{ "link", "is a symbolic link" },
		{ "marker-link", "is not flowsdn-agent's delete queue" },
		{ "missing", "No such file" },
		{ "other-owner", "is not private" },
	};
	char path[200], target[200], entry[256], q[200], *out = NULL, *data = NULL;
	struct stat st;
	size_t len;

	path_in(path, sizeof(path), "etc");
	cr_assert(mkdir(path, 0755) == 0);
	path_in(path, sizeof(path), "group-writable");
	ASSERT_OK(agent_api_queue_dir_mark(path), "mark");
	cr_assert(chmod(path, 0770) == 0);
	path_in(path, sizeof(path), "world-writable");
	ASSERT_OK(agent_api_queue_dir_mark(path), "mark");
	cr_assert(chmod(path, 01777) == 0);
	path_in(path, sizeof(path), "link");
	path_in(q, sizeof(q), "queue");
	cr_assert(symlink(q, path) == 0);
	/* A marker that is a symlink to a file proves nothing. */
	path_in(path, sizeof(path), "marker-link");
	cr_assert(mkdir(path, 0700) == 0);
	path_in(target, sizeof(target), "queue/" AGENT_API_QUEUE_MARKER);
	path_in(path, sizeof(path), "marker-link/" AGENT_API_QUEUE_MARKER);
	cr_assert(symlink(target, path) == 0);
	path_in(path, sizeof(path), "other-owner");
	ASSERT_OK(agent_api_queue_dir_mark(path), "mark");
	if (geteuid() == 0)
		cr_assert(chown(path, 65534, 65534) == 0);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!strcmp(bad[i].name, "other-owner") && geteuid() != 0)
			continue; /* needs root to give the directory away */
		path_in(path, sizeof(path), bad[i].name);
		cr_assert_eq(del_queued_in(path, &out), 1, "%s: DEL queued: %s", bad[i].name, out);
		cr_assert_eq(code_of(out), FLOWSDN_CNI_CODE_IO, "%s: %s", bad[i].name, out);
		cr_assert(strstr(out, bad[i].why), "%s: the reason: %s", bad[i].name, out);
		free(out);
		snprintf(entry, sizeof(entry), "%s/c1.eth0.json", path);
		cr_assert(lstat(entry, &st) < 0 && errno == ENOENT, "%s: an entry was written", bad[i].name);
	}
	path_in(path, sizeof(path), "missing");
	cr_assert(access(path, F_OK) < 0, "a configured queueDir is never created");

	/* The agent's queue: a symlink planted at the entry's name is
	 * replaced, its target untouched. */
	path_in(target, sizeof(target), "target");
	cr_assert(mkdir(target, 0700) == 0);
	path_in(target, sizeof(target), "target/file");
	path_in(entry, sizeof(entry), "queue/c1.eth0.json");
	cr_assert(symlink(target, entry) == 0);
	cr_assert_eq(del_queued_in(q, &out), 0, "%s", out);
	free(out);
	cr_assert(access(target, F_OK) < 0, "the DEL was written through the symlink");
	cr_assert(lstat(entry, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600, "entry 0%o",
		  (unsigned int)st.st_mode);
	ASSERT_OK(util_read_file(entry, 4096, &data, &len), "entry");
	ASSERT_STREQ(data, "{\"containerID\":\"c1\",\"ifname\":\"eth0\"}", "entry");
	free(data);
}

/* The program's own default, named again by the config, needs no mark
 * and is created when missing (the agent may never have run). */
Test(cni_plugin, default_queue_dir_named_by_the_config, .init = setup, .fini = teardown)
{
	const char *env[] = { "CNI_COMMAND", "DEL", "CNI_CONTAINERID", "c1", "CNI_IFNAME", "eth0",
			      "CNI_NETNS", "/proc/self/ns/net", NULL };
	char q[256], entry[300], *conf = NULL, *out = NULL;
	struct cni_plugin_opts o = { .socket = sock_path };

	path_in(q, sizeof(q), "var/lib/flowsdn/cni-queue");
	o.queue_dir = q;
	cr_assert(asprintf(&conf, "{\"cniVersion\":\"1.0.0\",\"name\":\"flowsdn\",\"type\":\"flowsdn-cni\","
				  "\"queueDir\":\"%s\",\"timeoutMs\":300}", q) > 0);
	cr_assert_eq(plugin_run(conf, strlen(conf), env_table, env, &o, &out), 0, "%s", out);
	snprintf(entry, sizeof(entry), "%s/c1.eth0.json", q);
	cr_assert(access(entry, F_OK) == 0, "queued in the default directory");
	free(out);
	free(conf);
}

Test(cni_plugin, agent_garbage_and_hang, .init = setup, .fini = teardown)
{
	struct fake *f = fake_start("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n<html>not json</html>");
	char *conf = conf_for("1.0.0", NULL), *out = NULL;
	struct timespec t0, t1;

	cr_assert_eq(run("ADD", conf, &out), 1);
	cr_assert_eq(code_of(out), 100, "garbage: %s", out);
	cr_assert(strstr(out, "unexpected"), "%s", out);
	free(out);
	cr_assert_eq(run("STATUS", conf, &out), 1);
	cr_assert_eq(code_of(out), 51, "STATUS with a broken agent: %s", out);
	free(out);

	/* An agent that never answers: bounded by timeoutMs (300 ms). */
	f->reply = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(run("ADD", conf, &out), 1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_eq(code_of(out), 11, "hang: %s", out);
	cr_assert(t1.tv_sec - t0.tv_sec < 3, "ADD returned after %ld s", (long)(t1.tv_sec - t0.tv_sec));
	free(out);
	free(conf);
}

/* An endpoint answer whose container id or interface names break the
 * names rules is not an endpoint (agent_api_endpoint_parse() checks them
 * since fuzz-agent-api found one read as it was; its input is
 * tests/fuzz/regress/fuzz-agent-api/endpoint-container-id-not-a-name). */
Test(cni_plugin, agent_endpoint_with_bad_names, .init = setup, .fini = teardown)
{
	static const char *const replies[] = {
		HTTP_OK("{\"id\":3,\"containerID\":\"c1$\",\"interface\":\"eth0\",\"netns\":\"/proc/self/ns/net\","
			"\"netnsInode\":1,\"hostInterface\":\"fsd0123456789ab\",\"hostIfindex\":7,"
			"\"mac\":\"0a:00:00:00:00:03\",\"hostMac\":\"0a:00:00:00:00:04\",\"mtu\":1450,\"created\":1,"
			"\"addresses\":[{\"address\":\"10.244.0.3/32\",\"gateway\":\"169.254.1.1\"}]}"),
		HTTP_OK("{\"id\":3,\"containerID\":\"c1\",\"interface\":\"eth0\",\"netns\":\"/proc/self/ns/net\","
			"\"netnsInode\":1,\"hostInterface\":\"fsd/../x\",\"hostIfindex\":7,"
			"\"mac\":\"0a:00:00:00:00:03\",\"hostMac\":\"0a:00:00:00:00:04\",\"mtu\":1450,\"created\":1,"
			"\"addresses\":[{\"address\":\"10.244.0.3/32\",\"gateway\":\"169.254.1.1\"}]}"),
	};
	struct fake *f = fake_start(endpoint_reply);
	char *conf = conf_for("1.0.0", NULL), *out = NULL;

	/* The same answer with good names is an endpoint. */
	cr_assert_eq(run("ADD", conf, &out), 0, "%s", out);
	free(out);
	for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
		f->reply = replies[i];
		cr_assert_eq(run("ADD", conf, &out), 1, "reply %zu: %s", i, out);
		cr_assert_eq(code_of(out), 100, "reply %zu: %s", i, out);
		free(out);
	}
	free(conf);
}

/* An agent killed with the request read by nobody resets the connection:
 * that is the agent down, not a bad answer.  DEL is queued (found by the
 * churn chaos test of test-node, where such a DEL failed with code 100),
 * ADD fails as with no agent. */
Test(cni_plugin, agent_reset_mid_request_is_down, .init = setup, .fini = teardown)
{
	struct fake *f = fake_start(NULL);
	char *conf = conf_for("1.0.0", NULL), *out = NULL, q[192];

	f->reset = true;
	cr_assert_eq(run("DEL", conf, &out), 0, "DEL with the agent reset: %s", out);
	free(out);
	snprintf(q, sizeof(q), "%s/queue/c1.eth0.json", dir);
	cr_assert(access(q, F_OK) == 0, "DEL queued at %s", q);
	cr_assert_eq(run("ADD", conf, &out), 1);
	cr_assert(strstr(out, "went away"), "ADD names the reset: %s", out);
	free(out);
	free(conf);
}

Test(cni_plugin, agent_errors_map_to_codes, .init = setup, .fini = teardown)
{
	/* The agent's error body carries the domain code; the plugin maps
	 * it (not the HTTP status) to the CNI code. */
	struct fake *f = fake_start("HTTP/1.1 409 Conflict\r\nConnection: close\r\n\r\n"
				    "{\"error\":{\"code\":\"FLOWSDN_E_NL_EXISTS\",\"number\":4703,"
				    "\"message\":\"eth0 exists in the netns\"}}");
	char *conf = conf_for("1.0.0", NULL), *out = NULL;

	cr_assert_eq(run("ADD", conf, &out), 1);
	cr_assert_eq(code_of(out), CNI_PLUGIN_CODE_CONFLICT, "%s", out);
	cr_assert(strstr(out, "eth0 exists in the netns"), "the agent's message is passed on: %s", out);
	free(out);
	f->reply = "HTTP/1.1 422 Unprocessable\r\nConnection: close\r\n\r\n"
		   "{\"error\":{\"code\":\"FLOWSDN_E_NL_NETNS\",\"number\":4701,\"message\":\"not a netns\"}}";
	cr_assert_eq(run("ADD", conf, &out), 1);
	cr_assert_eq(code_of(out), 3, "%s", out);
	free(out);
	/* Same status, another domain code: the code decides. */
	f->reply = "HTTP/1.1 409 Conflict\r\nConnection: close\r\n\r\n"
		   "{\"error\":{\"code\":\"FLOWSDN_E_IPAM_EXHAUSTED\",\"number\":4100,\"message\":\"full\"}}";
	cr_assert_eq(run("ADD", conf, &out), 1);
	cr_assert_eq(code_of(out), 11, "%s", out);
	free(out);
	/* An error body without the domain code is not the agent's. */
	f->reply = "HTTP/1.1 409 Conflict\r\nConnection: close\r\n\r\n"
		   "{\"error\":{\"code\":\"name-taken\",\"message\":\"eth0 exists\"}}";
	cr_assert_eq(run("ADD", conf, &out), 1);
	cr_assert_eq(code_of(out), 100, "%s", out);
	free(out);
	f->reply = HTTP_OK("{\"removed\":2}");
	free(conf);
	conf = conf_for("1.1.0", ",\"cni.dev/valid-attachments\":[{\"containerID\":\"keep\",\"ifname\":\"eth0\"}]");
	cr_assert_eq(run("GC", conf, &out), 0, "%s", out);
	cr_assert(strstr(f->last, "{\"validAttachments\":[{\"containerID\":\"keep\",\"ifname\":\"eth0\"}]}"), "%s",
		  f->last);
	free(out);
	free(conf);
}

Test(cni_plugin, bad_input_codes, .init = setup, .fini = teardown)
{
	const char *bad_id[] = { "CNI_COMMAND", "ADD", "CNI_CONTAINERID", "a b", "CNI_IFNAME", "eth0", "CNI_NETNS",
				 "/proc/self/ns/net", NULL };
	const char *bad_args[] = { "CNI_COMMAND", "ADD", "CNI_CONTAINERID", "c1", "CNI_IFNAME", "eth0", "CNI_NETNS",
				   "/proc/self/ns/net", "CNI_ARGS", "FOO=bar", NULL };
	const char *no_netns[] = { "CNI_COMMAND", "ADD", "CNI_CONTAINERID", "c1", "CNI_IFNAME", "eth0", "CNI_NETNS",
				   "/nonexistent/netns", NULL };
	const char *version[] = { "CNI_COMMAND", "VERSION", NULL };
	char *conf = conf_for("1.0.0", NULL), *out = NULL;

	cr_assert_eq(plugin_run(conf, strlen(conf), env_table, bad_id, NULL, &out), 1);
	cr_assert_eq(code_of(out), 4, "%s", out);
	cr_assert(strstr(out, "\"cniVersion\":\"1.0.0\""), "answered in the config's version: %s", out);
	free(out);
	cr_assert_eq(plugin_run(conf, strlen(conf), env_table, bad_args, NULL, &out), 1);
	cr_assert_eq(code_of(out), 4, "%s", out);
	free(out);
	cr_assert_eq(plugin_run(conf, strlen(conf), env_table, no_netns, NULL, &out), 1);
	cr_assert_eq(code_of(out), 3, "%s", out);
	free(out);
	cr_assert_eq(run("ADD", "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"flowsdn-cni\",\"mtu\":\"big\"}", &out), 1);
	cr_assert_eq(code_of(out), 7, "%s", out);
	free(out);
	cr_assert_eq(run("ADD", "{\"cniVersion\":\"0.3.1\",\"name\":\"n\",\"type\":\"flowsdn-cni\"}", &out), 1);
	cr_assert_eq(code_of(out), 1, "%s", out);
	free(out);
	cr_assert_eq(run("ADD", "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"flowsdn-cni\",\"agentSocket\":\"rel\"}", &out), 1);
	cr_assert_eq(code_of(out), 7, "%s", out);
	free(out);
	cr_assert_eq(plugin_run("{\"cniVersion\":\"0.4.0\"}", 22, env_table, version, NULL, &out), 0);
	ASSERT_STREQ(out, "{\"cniVersion\":\"0.4.0\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\",\"1.1.0\"]}", "VERSION");
	free(out);
	free(conf);
}

Test(cni_plugin, install_writes_conflist, .init = setup, .fini = teardown)
{
	char bin[128], confd[128], path[256], *data = NULL;
	struct flowsdn_cni_conflist *l = NULL;
	struct stat st;
	size_t len;
	FILE *fp;

	snprintf(bin, sizeof(bin), "%s/opt/cni/bin", dir);
	snprintf(confd, sizeof(confd), "%s/etc/cni/net.d", dir);
	{
		struct cni_install_opts o = { .plugin_path = "/proc/self/exe",
					      .bin_dir = bin, .conf_dir = confd, .socket = sock_path };

		ASSERT_OK(cni_install(&o), "install");
		ASSERT_OK(cni_install(&o), "install again");
		o.socket = "relative";
		ASSERT_ERR(cni_install(&o), -EINVAL, "relative socket");
	}
	snprintf(path, sizeof(path), "%s/flowsdn-cni", bin);
	cr_assert(stat(path, &st) == 0 && (st.st_mode & 0777) == 0755, "%s mode %o", path, st.st_mode & 0777);
	snprintf(path, sizeof(path), "%s/loopback", bin);
	cr_assert(stat(path, &st) == 0, "loopback installed when absent");
	snprintf(path, sizeof(path), "%s/00-flowsdn.conflist", confd);
	fp = fopen(path, "r");
	cr_assert(fp);
	data = calloc(1, 4096);
	len = fread(data, 1, 4095, fp);
	fclose(fp);
	ASSERT_OK(flowsdn_cni_conflist_parse(data, len, &l, NULL), data);
	ASSERT_STREQ(flowsdn_cni_conflist_name(l), "flowsdn", "name");
	ASSERT_STREQ(flowsdn_cni_conflist_version(l), "1.1.0", "newest of cniVersions");
	cr_assert_eq(flowsdn_cni_conflist_plugin_count(l), 1);
	cr_assert(strstr(data, "\"cniVersion\": \"1.0.0\""), "libcni 1.1.2 reads cniVersion 1.0.0: %s", data);
	flowsdn_cni_conflist_free(l);
	free(data);
}

Test(cni_plugin, queue_and_host_ifname, .init = setup, .fini = teardown)
{
	char q[128], a[16], b[16], c[16], why[384];

	snprintf(q, sizeof(q), "%s/var/lib/flowsdn/cni-queue", dir);
	ASSERT_OK(cni_queue_delete(q, false, "abc", "eth0", why, sizeof(why)), "queue, parents made");
	ASSERT_OK(cni_queue_delete(q, false, "abc", "eth0", why, sizeof(why)), "queue again");
	ASSERT_ERR(cni_queue_delete("relative", false, "abc", "eth0", why, sizeof(why)), -EINVAL, "relative dir");
	ASSERT_ERR(cni_queue_delete(q, false, "../x", "eth0", why, sizeof(why)), -EINVAL, "bad id");
	ASSERT_ERR(cni_queue_delete(q, false, "abc", "a/b", why, sizeof(why)), -EINVAL, "bad ifname");
	/* Configured, the same directory needs the agent's mark. */
	ASSERT_ERR(cni_queue_delete(q, true, "abc", "eth0", why, sizeof(why)), -EPERM, "configured, unmarked");
	cr_assert(strstr(why, AGENT_API_QUEUE_MARKER), "%s", why);
	ASSERT_OK(agent_api_queue_dir_mark(q), "mark");
	ASSERT_OK(agent_api_queue_dir_mark(q), "mark again");
	ASSERT_OK(cni_queue_delete(q, true, "abc", "eth0", why, sizeof(why)), "configured, marked");
	ASSERT_OK(agent_api_host_ifname("abc", "eth0", a, sizeof(a)), "name");
	ASSERT_OK(agent_api_host_ifname("abc", "eth0", b, sizeof(b)), "name");
	ASSERT_OK(agent_api_host_ifname("abce", "th0", c, sizeof(c)), "name");
	ASSERT_STREQ(a, b, "deterministic");
	cr_assert(strcmp(a, c) != 0, "owner boundaries matter");
	cr_assert_eq(strlen(a), 15);
	cr_assert(!strncmp(a, "fsd", 3));
}

Test(agent_config, defaults_parse_and_errors)
{
	struct agent_config *c = NULL;
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	static const char good[] = "{\"socket\":\"/tmp/x.sock\",\"state-dir\":\"/tmp/st\",\"pools\":[\"10.1.0.0/24\"],"
				   "\"datapath\":false,\"egress-mode\":\"stack\",\"http-listen\":\"127.0.0.1:9090\","
				   "\"mtu\":9000,\"max-connections\":8}";
	static const char *const bad[][2] = {
		{ "{\"sockett\":\"/x\"}", "sockett: unknown key" },
		{ "{\"socket\":\"relative\"}", "socket: must be an absolute path" },
		{ "{\"pools\":[\"10.1.0.1/24\"]}", "pools[0]" },
		{ "{\"pools\":[]}", "pools: must be" },
		{ "{\"datapath\":\"yes\"}", "datapath: must be a boolean" },
		{ "{\"egress-mode\":\"nat\"}", "egress-mode" },
		{ "{\"http-listen\":\"0.0.0.0:80\"}", "not a loopback address" },
		{ "{\"http-listen\":\"10.0.0.1:80\"}", "not a loopback address" },
		{ "{\"http-listen\":\"127.0.0.1\"}", "not ADDRESS:PORT" },
		{ "{\"mtu\":100}", "mtu: must be an integer" },
		{ "{\"mtu\":1500.5}", "mtu: must be an integer" },
		{ "{\"mtu\":1500,\"mtu\":1400}", "line 1" },
		{ "{\"max-connections\":4,\"reserved-connections\":4}", "must be less than max-connections (4)" },
		{ "{\"max-connections\":1}", "max-connections" },
		{ "{\"reserved-connections\":0}", "reserved-connections" },
		{ "{\"header-timeout-ms\":5}", "header-timeout-ms" },
	};
	char *out = NULL;

	ASSERT_OK(agent_config_new(&c), "defaults");
	ASSERT_STREQ(c->socket, "/var/run/flowsdn/flowsdn.sock", "default socket");
	ASSERT_STREQ(c->state_dir, "/var/lib/flowsdn", "default state");
	ASSERT_OK(agent_config_format(c, &out), "format");
	cr_assert(strstr(out, "\"pools\": [\n        \"10.244.0.0/16\",\n        \"fd00:10:244::/112\"\n    ]"), "%s", out);
	cr_assert(strstr(out, "\"attach-mode\": \"tc\""), "%s", out);
	free(out);
	agent_config_free(c);

	ASSERT_OK(agent_config_parse(good, strlen(good), &c, d), test_engine_text(d));
	ASSERT_STREQ(c->socket, "/tmp/x.sock", "socket");
	ASSERT_OK(agent_config_format(c, &out), "format");
	cr_assert(strstr(out, "\"egress-mode\": \"stack\""), "%s", out);
	cr_assert(strstr(out, "\"datapath\": false"), "%s", out);
	cr_assert(strstr(out, "\"max-connections\": 8"), "%s", out);
	cr_assert(strstr(out, "\"reserved-connections\": 1"), "the reserve follows max-connections: %s", out);
	free(out);
	agent_config_free(c);

	{
		static const char tuned[] = "{\"max-connections\":16,\"reserved-connections\":3,\"header-timeout-ms\":750}";

		ASSERT_OK(agent_config_parse(tuned, strlen(tuned), &c, d), test_engine_text(d));
		cr_assert_eq(c->reserved_connections, 3, "reserved-connections read");
		cr_assert_eq(c->header_timeout_ms, 750, "header-timeout-ms read");
		agent_config_free(c);
	}

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = (struct agent_config *)0x1;
		ASSERT_ERR(agent_config_parse(bad[i][0], strlen(bad[i][0]), &c, d), -FLOWSDN_E_AGENT_CONFIG,
			   bad[i][0]);
		cr_assert(strstr(test_engine_text(d), bad[i][1]), "%s: \"%s\" lacks \"%s\"", bad[i][0], test_engine_text(d),
			  bad[i][1]);
		cr_assert_eq(c, (struct agent_config *)0x1);
	}
}

Test(agent_config, uplinks_and_snat_ports)
{
	struct agent_config *c = NULL, *dup = NULL;
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	static const char good[] = "{\"uplink-interfaces\":[\"eth0\",\"bond0.100\"],\"snat-port-min\":40000,"
				   "\"snat-port-max\":40999}";
	static const char *const bad[][2] = {
		{ "{\"uplink-interfaces\":\"eth0\"}", "uplink-interfaces" },
		{ "{\"uplink-interfaces\":[\"eth0/1\"]}", "must be an interface name" },
		{ "{\"uplink-interfaces\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "at most 4" },
		{ "{\"uplink-interfaces\":[\"eth0\",\"eth0\"]}", "twice" },
		{ "{\"snat-port-min\":80}", "snat-port-min" },
		{ "{\"snat-port-min\":50000,\"snat-port-max\":40000}", "must not exceed snat-port-max" },
	};
	char *out = NULL;

	ASSERT_OK(agent_config_new(&c), "defaults");
	cr_assert_eq(c->n_uplinks, 0u, "no uplink by default");
	cr_assert(c->snat_port_min == 61000 && c->snat_port_max == 65535, "default SNAT ports");
	agent_config_free(c);
	ASSERT_OK(agent_config_parse(good, strlen(good), &c, d), test_engine_text(d));
	cr_assert_eq(c->n_uplinks, 2u);
	ASSERT_STREQ(c->uplinks[1], "bond0.100", "second uplink");
	cr_assert(c->snat_port_min == 40000 && c->snat_port_max == 40999);
	ASSERT_OK(agent_config_dup(c, &dup), "dup");
	ASSERT_STREQ(dup->uplinks[0], "eth0", "copied");
	ASSERT_OK(agent_config_format(dup, &out), "format");
	cr_assert(strstr(out, "\"uplink-interfaces\": [\n        \"eth0\",\n        \"bond0.100\"\n    ]"), "%s", out);
	cr_assert(strstr(out, "\"snat-port-max\": 40999"), "%s", out);
	free(out);
	agent_config_free(dup);
	agent_config_free(c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_engine_diag_ struct diag *e = test_engine_diag();

		c = NULL;
		ASSERT_ERR(agent_config_parse(bad[i][0], strlen(bad[i][0]), &c, e), -FLOWSDN_E_AGENT_CONFIG, bad[i][0]);
		cr_assert(strstr(test_engine_text(e), bad[i][1]), "%s: \"%s\" lacks \"%s\"", bad[i][0], test_engine_text(e),
			  bad[i][1]);
		cr_assert_null(c);
	}
}
