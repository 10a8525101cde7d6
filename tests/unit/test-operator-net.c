/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The runtime's network half (operator/runtime-net.c) against a real
 * flowsdn-agent core and HTTP API in this process (datapath off, so no
 * privileges): the organization's namespace and the four tiered policies
 * accepted by the agent, a public port as a ClusterIP plus NodePort
 * service whose backends follow the ready replicas, nothing PUT again
 * when nothing changed, a port the spec lost withdrawn, the record read
 * back by a restarted operator and what a deleted service left withdrawn;
 * the replicas' CNI identity and the masquerade table script.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/spec.h>

#include "agent-client.h"
#include "conf.h"
#include "core.h"
#include "diag-helpers.h"
#include "helpers.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "names.h"
#include "runtime-net.h"

static char dir[64];

static int f_netns_ino(void *ctx, const char *path, uint64_t *ret)
{
	(void)ctx;
	*ret = strcmp(path, "/proc/self/ns/net") == 0 ? 4242 : 4243;
	return 0;
}

static const struct agent_ops ops = { .netns_ino = f_netns_ino };

struct node {
	struct agent_core *core;
	struct agent_http *http;
	char sock[128];
	struct op_net *net;
};

static void node_up(struct node *n)
{
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	struct agent_config *c = NULL;
	char *json = NULL;

	snprintf(n->sock, sizeof(n->sock), "%s/agent.sock", dir);
	cr_assert(asprintf(&json, "{\"socket\":\"%s\",\"state-dir\":\"%s/state\",\"pools\":[\"10.244.9.0/24\"],"
				  "\"datapath\":false,\"socket-lb-cgroup\":\"\",\"node-addresses\":[\"192.0.2.1\"]}",
			   n->sock, dir) > 0);
	ASSERT_OK(agent_config_parse(json, strlen(json), &c, d), test_engine_text(d));
	free(json);
	ASSERT_OK(agent_core_new(c, &ops, NULL, &n->core), "agent core");
	agent_config_free(c);
	ASSERT_OK(agent_http_start(n->core, &n->http), "agent http");
}

static void net_up_verify(struct node *n, unsigned int verify_ms)
{
	char rt[96], err[512] = "";
	struct op_net_opts o = { .dir = rt, .agent_socket = n->sock, .resolv_conf = "nameserver 192.0.2.53\n",
				 .verify_ms = verify_ms };

	snprintf(rt, sizeof(rt), "%s/rt", dir);
	cr_assert(op_net_new(&o, &n->net, err, sizeof(err)) == 0, "op_net_new: %s", err);
}

static void net_up(struct node *n)
{
	net_up_verify(n, 0);
}

static void node_down(struct node *n)
{
	op_net_free(n->net);
	agent_http_stop(n->http);
	agent_core_free(n->core);
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	agent_log_set_level(FLOWSDN_LOG_ERR - 1);
	snprintf(dir, sizeof(dir), "/tmp/test-operator-net.XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(operator_net, .init = setup, .fini = teardown);

#define SVC_ID "fs-0123456789abcdef0123456789abcdef"

static const char spec_two_ports[] =
	"{\"region\":\"heteronet-global\",\"image\":\"127.0.0.1:5000/echo:v1\",\"replicas\":1,\"cpu_millis\":250,"
	"\"memory_mib\":128,\"ephemeral_storage_gib\":1,\"ports\":[{\"name\":\"game-udp\",\"protocol\":\"udp\","
	"\"container_port\":7777},{\"name\":\"admin\",\"protocol\":\"tcp\",\"container_port\":8080}],"
	"\"exposure\":{\"type\":\"public\",\"traffic_mode\":\"forwarded\","
	"\"allowed_source_cidrs\":[\"203.0.113.0/24\"],\"denied_source_cidrs\":[\"203.0.113.128/25\"]},"
	"\"egress\":{\"mode\":\"disabled\",\"allow_same_organization\":false,\"allowed_destination_cidrs\":[],"
	"\"denied_destination_cidrs\":[]},\"env\":{},\"command\":[\"/echo\"],\"args\":[],\"metadata\":{}}";

struct svc {
	struct op_service s;
	struct flash_public_port ports[2];
	struct flash_spec *spec;
};

static void svc_init(struct svc *v, const char *spec_json, size_t n_ports, const char *digest)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->s.id, sizeof(v->s.id), "%s", SVC_ID);
	v->s.org = (char *)"org-1";
	v->s.name = (char *)"echo";
	snprintf(v->s.spec_digest, sizeof(v->s.spec_digest), "%s", digest);
	snprintf(v->ports[0].name, sizeof(v->ports[0].name), "game-udp");
	snprintf(v->ports[0].protocol, sizeof(v->ports[0].protocol), "udp");
	v->ports[0].port = 30000;
	snprintf(v->ports[1].name, sizeof(v->ports[1].name), "admin");
	snprintf(v->ports[1].protocol, sizeof(v->ports[1].protocol), "tcp");
	v->ports[1].port = 30001;
	v->s.ports = v->ports;
	v->s.n_ports = n_ports;
	ASSERT_OK(flash_spec_parse(spec_json, strlen(spec_json), NULL, &v->spec, NULL), "spec");
}

/* GET @path from the agent: the body (freed by the caller). */
static char *agent_get(struct node *n, const char *path, long want_status)
{
	struct agent_client_opts o = { .socket = n->sock };
	char *body = NULL;
	long status = 0;

	ASSERT_OK(agent_client_get(&o, path, &body, &status), path);
	cr_assert(status == want_status, "GET %s: %ld, want %ld: %s", path, status, want_status, body);
	return body;
}

static char *port_path(const char *proto, const char *name)
{
	char id[OP_SERVICE_ID_STRLEN], *p = NULL;

	op_net_port_service_id(SVC_ID, proto, name, id);
	cr_assert(names_service_id_valid(id), "%s", id);
	cr_assert(asprintf(&p, "/v1/service/%s", id) > 0);
	return p;
}

Test(operator_net, policies_services_backends_and_withdrawal)
{
	struct node n = { 0 };
	struct svc v;
	char err[1024] = "", ns[21], path[160], *body, *p_udp, *p_tcp;
	const char *ready[] = { "10.244.9.5", "10.244.9.6" };

	node_up(&n);
	net_up(&n);
	svc_init(&v, spec_two_ports, 2, "d1");
	op_net_namespace("org-1", ns);
	cr_assert(strncmp(ns, "org-", 4) == 0 && strlen(ns) == 20 && names_dns_label_valid(ns), "%s", ns);

	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, NULL, 0, err, sizeof(err)) == 0, "%s", err);
	/* The namespace and the four tiers, as the agent stored them. */
	snprintf(path, sizeof(path), "/v1/namespace");
	body = agent_get(&n, path, 200);
	cr_assert(strstr(body, ns) && strstr(body, "\"flash.heterocloud.io/organization\":\"org-1\""), "%s", body);
	free(body);
	static const char *const suffix[] = { "-protect", "-exception", "-deny", "" };
	static const char *const tier[] = { "protect", "exception", "deny", "allow" };
	for (size_t i = 0; i < 4; i++) {
		char want[64];

		snprintf(path, sizeof(path), "/v1/policy/%s/%s%s", ns, SVC_ID, suffix[i]);
		body = agent_get(&n, path, 200);
		snprintf(want, sizeof(want), "\"flowsdn.io/tier\":\"%s\"", tier[i]);
		cr_assert(strstr(body, want), "%s: %s", path, body);
		/* The workloads' DNS (from their resolv.conf) is what port 53 may reach. */
		if (i == 1)
			cr_assert(strstr(body, "{\"ipBlock\":{\"cidr\":\"192.0.2.53/32\"}}],\"ports\":[{\"protocol\":\"UDP\",\"port\":53}"),
				  "%s", body);
		free(body);
	}
	/* One agent service per port: a ClusterIP on the container port and
	 * the assigned NodePort; no backend yet; the source ranges. */
	p_udp = port_path("udp", "game-udp");
	p_tcp = port_path("tcp", "admin");
	body = agent_get(&n, p_udp, 200);
	cr_assert(strstr(body, "\"type\":\"ClusterIP\",\"address\":\"10.") && strstr(body, "\"port\":7777") &&
			  strstr(body, "\"type\":\"NodePort\"") && strstr(body, "\"port\":30000") &&
			  strstr(body, "\"backends\":[]") && strstr(body, "\"loadBalancerSourceRanges\":[\"203.0.113.0/24\"]") &&
			  strstr(body, "\"deniedSourceRanges\":[\"203.0.113.128/25\"]"),
		  "%s", body);
	free(body);
	body = agent_get(&n, p_tcp, 200);
	cr_assert(strstr(body, "\"port\":30001") && strstr(body, "\"protocol\":\"TCP\""), "%s", body);
	free(body);

	/* Ready replicas become the backends. */
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, ready, 2, err, sizeof(err)) == 0, "%s", err);
	body = agent_get(&n, p_udp, 200);
	cr_assert(strstr(body, "\"address\":\"10.244.9.5\",\"port\":7777") &&
			  strstr(body, "\"address\":\"10.244.9.6\",\"port\":7777"),
		  "%s", body);
	free(body);
	/* One retires. */
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, ready + 1, 1, err, sizeof(err)) == 0, "%s", err);
	body = agent_get(&n, p_udp, 200);
	cr_assert(!strstr(body, "10.244.9.5") && strstr(body, "10.244.9.6"), "%s", body);
	free(body);

	/* The spec loses its TCP port: that service goes, the UDP one and
	 * its ClusterIP stay. */
	{
		struct svc v2;
		char *before = agent_get(&n, p_udp, 200), *cip = strstr(before, "\"address\":\"10.");

		cr_assert(cip);
		cip[30] = '\0';
		svc_init(&v2, spec_two_ports, 1, "d2");
		flash_spec_free(v2.spec);
		{
			char *one = strdup(spec_two_ports), *tcp = strstr(one, ",{\"name\":\"admin\"");

			memmove(tcp, strstr(tcp, "}],") + 1, strlen(strstr(tcp, "}],") + 1) + 1);
			ASSERT_OK(flash_spec_parse(one, strlen(one), NULL, &v2.spec, NULL), "one-port spec");
			free(one);
		}
		cr_assert(op_runtime_net_service(n.net, &v2.s, v2.spec, ready + 1, 1, err, sizeof(err)) == 0, "%s", err);
		free(agent_get(&n, p_tcp, 404));
		body = agent_get(&n, p_udp, 200);
		cr_assert(strstr(body, cip), "ClusterIP changed: %s, was %s", body, cip);
		free(body);
		free(before);
		flash_spec_free(v2.spec);
	}

	/* A restarted operator reads its record; the service was deleted
	 * meanwhile: prune withdraws the agent services and the policies. */
	op_net_free(n.net);
	n.net = NULL;
	net_up(&n);
	op_runtime_net_prune(n.net, NULL, 0);
	free(agent_get(&n, p_udp, 404));
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "/v1/policy/%s/%s%s", ns, SVC_ID, suffix[i]);
		free(agent_get(&n, path, 404));
	}
	snprintf(path, sizeof(path), "%s/rt/net/%s.json", dir, SVC_ID);
	cr_assert(access(path, F_OK) != 0, "record %s left", path);
	free(p_udp);
	free(p_tcp);
	flash_spec_free(v.spec);
	node_down(&n);
}

Test(operator_net, delete_and_unreachable_agent)
{
	struct node n = { 0 };
	struct svc v;
	char err[1024] = "", *p_udp;

	node_up(&n);
	net_up(&n);
	svc_init(&v, spec_two_ports, 2, "d1");
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, NULL, 0, err, sizeof(err)) == 0, "%s", err);
	p_udp = port_path("udp", "game-udp");
	free(agent_get(&n, p_udp, 200));
	ASSERT_OK(op_runtime_net_service_del(n.net, SVC_ID), "delete");
	free(agent_get(&n, p_udp, 404));
	ASSERT_OK(op_runtime_net_service_del(n.net, SVC_ID), "delete again: nothing left");

	/* No agent: an error naming it, so that no replica starts unisolated. */
	agent_http_stop(n.http);
	n.http = NULL;
	flash_spec_free(v.spec);
	svc_init(&v, spec_two_ports, 2, "d3");
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, NULL, 0, err, sizeof(err)) < 0);
	cr_assert(strstr(err, "flowsdn-agent PUT /v1/namespace/"), "%s", err);
	free(p_udp);
	flash_spec_free(v.spec);
	node_down(&n);
}

Test(operator_net, cni_identity_and_masquerade_script)
{
	struct json_writer *w = json_writer_new(0);
	struct flowsdn_prefix pools[2];
	char *text = NULL, ns[21];

	op_runtime_net_cni_identity(w, SVC_ID, "org-1");
	ASSERT_OK(json_writer_finish(w, &text, NULL), "identity");
	op_net_namespace("org-1", ns);
	cr_assert(strstr(text, "\"serviceTranslation\":\"packet\"") && strstr(text, ns) &&
			  strstr(text, "\"app.kubernetes.io/name\":\"" SVC_ID "\"") &&
			  strstr(text, "\"flash.heterocloud.io/organization\":\"org-1\""),
		  "%s", text);
	free(text);
	op_net_namespace("org-2", ns);
	{
		char ns1[21];

		op_net_namespace("org-1", ns1);
		cr_assert(strcmp(ns, ns1) != 0, "two organizations, one namespace %s", ns);
	}

	ASSERT_OK(flowsdn_prefix_parse("10.244.9.0/24", 13, NULL, &pools[0]), "v4");
	ASSERT_OK(flowsdn_prefix_parse("fd00:9::/64", 11, NULL, &pools[1]), "v6");
	ASSERT_OK(op_net_masquerade_script(pools, 2, &text), "script");
	cr_assert_str_eq(text, "table inet flowsdn_flash {}\n"
			       "delete table inet flowsdn_flash\n"
			       "table inet flowsdn_flash {\n"
			       "\tchain postrouting {\n"
			       "\t\ttype nat hook postrouting priority srcnat; policy accept;\n"
			       "\t\tip saddr 10.244.9.0/24 ip daddr != 10.244.9.0/24 masquerade\n"
			       "\t\tip6 saddr fd00:9::/64 ip6 daddr != fd00:9::/64 masquerade\n"
			       "\t}\n"
			       "}\n");
	free(text);
}

/* The configuration flowsdn-cni gets on stdin: from the conflist
 * `flowsdn-cni install` writes (its cniVersions pick 1.1.0, as libcni
 * does), from none (built in), and refusals naming the field. */
Test(operator_net, cni_config_from_the_conflist)
{
	static const char installed[] = "{\"cniVersion\":\"1.0.0\",\"cniVersions\":[\"1.0.0\",\"1.1.0\"],"
					"\"name\":\"flowsdn\",\"plugins\":[{\"type\":\"flowsdn-cni\","
					"\"agentSocket\":\"/run/a.sock\",\"runtimeConfig\":{\"x\":1}},{\"type\":\"other\"}]}";
	static const struct {
		const char *conflist, *err;
	} refused[] = {
		{ "{\"name\":\"flowsdn\",\"plugins\":[{\"type\":\"flowsdn-cni\"}]}", "cniVersion" },
		{ "{\"cniVersion\":\"1.0.0\",\"name\":\"flowsdn\",\"plugins\":[]}", "plugins" },
		{ "{\"cniVersion\":\"1.0.0\",\"name\":\"flowsdn\",\"plugins\":[{\"agentSocket\":\"/a\"}]}", "plugins[0].type" },
		{ "{\"cniVersion\":\"1.0.0\",\"name\":\"flow sdn\",\"plugins\":[{\"type\":\"flowsdn-cni\"}]}", "name" },
		{ "not json", "line 1" },
	};
	char *conf = NULL, err[256];

	ASSERT_OK(op_cni_config_build(installed, strlen(installed), "/ignored", "{\"serviceTranslation\":\"packet\"}",
				      &conf, err, sizeof(err)),
		  err);
	cr_assert_str_eq(conf, "{\"cniVersion\":\"1.1.0\",\"name\":\"flowsdn\",\"type\":\"flowsdn-cni\","
			       "\"agentSocket\":\"/run/a.sock\","
			       "\"runtimeConfig\":{\"flowsdn\":{\"serviceTranslation\":\"packet\"}}}");
	free(conf);
	ASSERT_OK(op_cni_config_build(NULL, 0, "/run/a.sock", NULL, &conf, err, sizeof(err)), "built in");
	cr_assert_str_eq(conf, "{\"cniVersion\":\"1.0.0\",\"name\":\"flowsdn\",\"type\":\"flowsdn-cni\","
			       "\"agentSocket\":\"/run/a.sock\",\"runtimeConfig\":{\"flowsdn\":{}}}");
	free(conf);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		conf = NULL;
		ASSERT_ERR(op_cni_config_build(refused[i].conflist, strlen(refused[i].conflist), NULL, NULL, &conf, err,
					       sizeof(err)),
			   -EBADMSG, refused[i].conflist);
		cr_assert(!conf);
		cr_assert(strstr(err, refused[i].err), "%s: \"%s\" does not name %s", refused[i].conflist, err,
			  refused[i].err);
	}
}

/* The address of flowsdn-cni's result: the first ip's, canonical, no
 * prefix length; a result without one is refused with a reason. */
Test(operator_net, cni_result_address)
{
	static const char result[] =
		"{\"cniVersion\":\"1.1.0\",\"interfaces\":[{\"name\":\"eth0\",\"mac\":\"0a:58:0a:4d:00:05\","
		"\"sandbox\":\"/run/netns/x\"}],\"ips\":[{\"address\":\"fd00:77:0::5/64\",\"gateway\":\"fd00:77::1\","
		"\"interface\":0},{\"address\":\"10.77.0.5/24\",\"interface\":0}],\"dns\":{}}";
	static const char *const refused[] = {
		"{\"cniVersion\":\"1.0.0\",\"ips\":[],\"dns\":{}}",
		"{\"cniVersion\":\"1.0.0\",\"code\":7,\"msg\":\"incompatible CNI versions\"}",
		"{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.77.0.5\"}]}",
		"",
	};
	char address[64], err[256];

	ASSERT_OK(op_cni_result_address(result, strlen(result), address, sizeof(address), err, sizeof(err)), err);
	cr_assert_str_eq(address, "fd00:77::5");
	ASSERT_ERR(op_cni_result_address(result, strlen(result), address, 8, err, sizeof(err)), -ENOBUFS, "8 bytes");
	cr_assert_str_eq(address, "fd00:77::5", "untouched");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		ASSERT_ERR(op_cni_result_address(refused[i], strlen(refused[i]), address, sizeof(address), err,
						 sizeof(err)),
			   -EBADMSG, refused[i]);
		cr_assert(err[0], "%s: a reason", refused[i]);
	}
}

Test(operator_net, masquerade_is_a_runtime_key)
{
	struct flash_operator_config *c = NULL;
	struct flash_operator_runtime rt = { .sz = sizeof(rt) };
	const char on[] = "{\"runtime\":{\"dir\":\"/var/lib/flash/rt\",\"masquerade\":true}}";
	const char bad[] = "{\"runtime\":{\"masquerade\":1}}";

	ASSERT_OK(flash_operator_config_parse(on, sizeof(on) - 1, &c, NULL), "masquerade true");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime section");
	cr_assert(rt.masquerade && rt.dir && strcmp(rt.dir, "/var/lib/flash/rt") == 0);
	flash_operator_config_free(c);
	c = NULL;
	ASSERT_OK(flash_operator_config_default(&c), "defaults");
	ASSERT_OK(flash_operator_config_runtime(c, &rt), "runtime section");
	cr_assert(!rt.masquerade, "masquerade is off by default");
	flash_operator_config_free(c);
	c = NULL;
	ASSERT_ERR(flash_operator_config_parse(bad, sizeof(bad) - 1, &c, NULL), -FLASH_E_RENDER_CONFIG, "a number");
	cr_assert(c == NULL);
}

Test(operator_net, cluster_ips_need_an_ipv4_range_of_32)
{
	struct node n = { 0 };
	struct flash_operator_config *c = NULL;
	const char small[] = "{\"serviceCIDRs\":[\"10.96.0.0/28\",\"fd00:96::/112\"]}";
	char rt[96], err[512] = "";
	struct svc v;

	node_up(&n);
	ASSERT_OK(flash_operator_config_parse(small, sizeof(small) - 1, &c, NULL), "config");
	snprintf(rt, sizeof(rt), "%s/rt", dir);
	{
		struct op_net_opts o = { .dir = rt, .agent_socket = n.sock, .config = c };

		cr_assert(op_net_new(&o, &n.net, err, sizeof(err)) == 0, "%s", err);
	}
	svc_init(&v, spec_two_ports, 2, "d1");
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, NULL, 0, err, sizeof(err)) == -EADDRNOTAVAIL, "%s", err);
	cr_assert(strstr(err, "no IPv4 serviceCIDR of /27 or more"), "%s", err);
	flash_spec_free(v.spec);
	node_down(&n);
	flash_operator_config_free(c);
}

/* Resync: what the agent lost behind the operator's back (a DELETE, an
 * agent restarted on an empty state dir) is PUT again by the first call
 * after the verification period, and only then. */
Test(operator_net, lost_objects_are_put_again_after_the_verification_period)
{
	struct agent_client_opts ao;
	struct agent_client_err ae = { 0 };
	struct json_value *root = NULL;
	struct node n = { 0 };
	struct svc v;
	char err[1024] = "", ns[21], path[160], deny[160], cmd[160], *p_udp, *p_tcp;
	const char *ready[] = { "10.244.9.5" };

	node_up(&n);
	net_up_verify(&n, 300);
	svc_init(&v, spec_two_ports, 2, "d1");
	op_net_namespace("org-1", ns);
	p_udp = port_path("udp", "game-udp");
	p_tcp = port_path("tcp", "admin");
	snprintf(deny, sizeof(deny), "/v1/policy/%s/%s-deny", ns, SVC_ID);
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, ready, 1, err, sizeof(err)) == 0, "%s", err);
	usleep(350 * 1000);
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, ready, 1, err, sizeof(err)) == 0, "%s", err);
	cr_assert_eq(op_runtime_net_resyncs(n.net), 0, "nothing lost, nothing PUT again");

	/* A DELETE behind its back: still missing until the period is over. */
	ao = (struct agent_client_opts){ .socket = n.sock };
	ASSERT_OK(agent_client_call(&ao, "DELETE", p_udp, NULL, &root, &ae), "DELETE the UDP service");
	json_free(root);
	root = NULL;
	ASSERT_OK(agent_client_call(&ao, "DELETE", deny, NULL, &root, &ae), "DELETE the deny tier");
	json_free(root);
	root = NULL;
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, ready, 1, err, sizeof(err)) == 0, "%s", err);
	free(agent_get(&n, p_udp, 404));
	usleep(350 * 1000);
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, ready, 1, err, sizeof(err)) == 0, "%s", err);
	free(agent_get(&n, deny, 200));
	{
		char *body = agent_get(&n, p_udp, 200);

		cr_assert(strstr(body, "\"address\":\"10.244.9.5\",\"port\":7777"), "backends again: %s", body);
		free(body);
	}
	cr_assert_eq(op_runtime_net_resyncs(n.net), 2, "the policies and one service PUT again");

	/* The agent restarted on an empty state dir: everything again. */
	agent_http_stop(n.http);
	agent_core_free(n.core);
	snprintf(cmd, sizeof(cmd), "rm -rf %s/state", dir);
	cr_assert(system(cmd) == 0);
	node_up(&n);
	free(agent_get(&n, p_tcp, 404));
	usleep(350 * 1000);
	cr_assert(op_runtime_net_service(n.net, &v.s, v.spec, ready, 1, err, sizeof(err)) == 0, "%s", err);
	free(agent_get(&n, p_udp, 200));
	free(agent_get(&n, p_tcp, 200));
	free(agent_get(&n, deny, 200));
	snprintf(path, sizeof(path), "/v1/policy/%s/%s", ns, SVC_ID);
	free(agent_get(&n, path, 200));
	{
		char *body = agent_get(&n, "/v1/namespace", 200);

		cr_assert(strstr(body, ns), "the namespace again: %s", body);
		free(body);
	}
	cr_assert_eq(op_runtime_net_resyncs(n.net), 5, "policies and two services: %llu",
		     (unsigned long long)op_runtime_net_resyncs(n.net));
	free(p_udp);
	free(p_tcp);
	flash_spec_free(v.spec);
	node_down(&n);
}

/* Sandbox sessions (issue 20): the identities flowsdn-cni gets, the
 * pool's deny-all policy, a session's four tiered policies in its
 * organization's namespace and their removal, a claim of a container
 * the agent does not know refused, an address never allocated released
 * at once. */
Test(operator_net, sandbox_identity_pool_policies_and_claim)
{
	struct node n;
	struct op_net_sandbox sb = { .name = "sbx-00112233aabbccdd", .sid = "sb-0123456789abcdef-one",
				     .org = "org-1", .project = "proj-1" };
	struct flash_spec *spec = NULL;
	char *text = NULL, ns[21], path[160], err[512] = "";
	static const char *const suffix[] = { "", "-deny", "-exception", "-protect" };

	op_net_namespace("org-1", ns);
	ASSERT_OK(op_net_sandbox_identity(&sb, NULL, &text), "session identity");
	cr_assert(strstr(text, "\"serviceTranslation\":\"packet\"") && strstr(text, ns) &&
			  strstr(text, "\"app.kubernetes.io/name\":\"sbx-00112233aabbccdd\"") &&
			  strstr(text, "\"flash.heterocloud.io/organization\":\"org-1\"") &&
			  strstr(text, "\"flash.heterocloud.io/project\":\"proj-1\"") &&
			  strstr(text, "\"flash.heterocloud.io/sandbox-session\":\"sb-0123456789abcdef-one\""),
		  "%s", text);
	free(text);
	ASSERT_OK(op_net_sandbox_identity(NULL, "sbx-ffeeddccbbaa9988", &text), "pool identity");
	cr_assert(strstr(text, "\"namespace\":\"" OP_NET_POOL_NAMESPACE "\"") &&
			  strstr(text, "\"flash.heterocloud.io/sandbox-pool\":\"" OP_NET_POOL_POLICY "\"") &&
			  !strstr(text, "organization") && !strstr(text, "sandbox-session"),
		  "%s", text);
	free(text);

	node_up(&n);
	net_up(&n);
	cr_assert(op_net_sandbox_pool_isolate(n.net, err, sizeof(err)) == 0, "%s", err);
	text = agent_get(&n, "/v1/policy/" OP_NET_POOL_NAMESPACE "/" OP_NET_POOL_POLICY, 200);
	cr_assert(strstr(text, "\"podSelector\":{}") && strstr(text, "\"egress\":[]") && strstr(text, "\"ingress\":[]"),
		  "deny-all both ways: %s", text);
	free(text);

	ASSERT_OK(flash_spec_parse(spec_two_ports, strlen(spec_two_ports), NULL, &spec, NULL), "spec");
	cr_assert(op_net_sandbox_policies_put(n.net, &sb, spec, err, sizeof(err)) == 0, "%s", err);
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "/v1/policy/%s/%s%s", ns, sb.name, suffix[i]);
		text = agent_get(&n, path, 200);
		cr_assert(strstr(text, "\"app.kubernetes.io/name\":\"sbx-00112233aabbccdd\""), "%s: %s", path, text);
		free(text);
	}
	/* a claim needs the container's endpoint */
	cr_assert(op_net_sandbox_claim(n.net, "sbx-0000000000000000", &sb, err, sizeof(err)) == -ENOENT, "%s", err);
	cr_assert(strstr(err, "no endpoint"), "%s", err);
	ASSERT_OK(op_net_released(n.net, "sbx-0000000000000000", 1000, err, sizeof(err)), "never allocated");

	cr_assert(op_net_sandbox_policies_del(n.net, sb.name, sb.org, err, sizeof(err)) == 0, "%s", err);
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "/v1/policy/%s/%s%s", ns, sb.name, suffix[i]);
		free(agent_get(&n, path, 404));
	}
	/* again: nothing left is fine */
	cr_assert(op_net_sandbox_policies_del(n.net, sb.name, sb.org, err, sizeof(err)) == 0, "%s", err);
	flash_spec_free(spec);
	node_down(&n);
}
