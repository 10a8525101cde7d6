/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's services in-process, without privileges: the reader and its
 * field-naming errors, the lowering into backend sets and frontends as a
 * fake datapath (struct agent_ops) receives it, live changes, frontend
 * ownership, the state file across a restart, and the configuration's
 * "services", "node-addresses" and "socket-lb-cgroup".
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <flowsdn/datapath.h>

#include "agent-api.h"
#include "conf.h"
#include "diag.h"
#include "diag-helpers.h"
#include "helpers.h"
#include "json.h"
#include "services.h"

/* What the fake datapath was last given. */
static struct {
	unsigned int publishes, removes, attaches, fail_publish;
	bool had_old;
	size_t n_sets, n_fe;
	struct flowsdn_lb_set sets[8];
	size_t n_backends[8];
	uint32_t backend_ids[8][4];
	uint8_t backend_state[8][4], backend_flags[8][4];
	struct flowsdn_lb_frontend fe[16];
	char cgroup[256];
	unsigned int destroys;
	uint16_t destroyed_port;
	uint8_t destroyed_proto;
} fk;

static int token;
#define FAKE_DP ((struct flowsdn_datapath *)&token)

static int f_publish(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_lb_service *svc,
		     const struct flowsdn_lb_service *old)
{
	(void)ctx;
	cr_assert(dp == FAKE_DP);
	if (fk.fail_publish) {
		fk.fail_publish--;
		return -EIO;
	}
	fk.publishes++;
	fk.had_old = old != NULL;
	fk.n_sets = svc->n_sets;
	fk.n_fe = svc->n_frontends;
	for (size_t i = 0; i < svc->n_sets && i < 8; i++) {
		fk.sets[i] = svc->sets[i];
		fk.n_backends[i] = svc->sets[i].n_backends;
		for (size_t j = 0; j < svc->sets[i].n_backends && j < 4; j++) {
			fk.backend_ids[i][j] = svc->sets[i].backends[j].id;
			fk.backend_state[i][j] = svc->sets[i].backends[j].state;
			fk.backend_flags[i][j] = svc->sets[i].backends[j].flags;
		}
	}
	for (size_t i = 0; i < svc->n_frontends && i < 16; i++)
		fk.fe[i] = svc->frontends[i];
	/* What the library itself would refuse must never come from the agent. */
	for (size_t i = 0; i < svc->n_frontends; i++)
		cr_assert(svc->frontends[i].set < svc->n_sets, "frontend %zu names set %zu of %zu", i,
			  svc->frontends[i].set, svc->n_sets);
	return 0;
}

static int f_remove(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_lb_service *old)
{
	(void)ctx;
	(void)dp;
	(void)old;
	fk.removes++;
	return 0;
}

static int f_attach(void *ctx, struct flowsdn_datapath *dp, const char *path)
{
	(void)ctx;
	(void)dp;
	fk.attaches++;
	snprintf(fk.cgroup, sizeof(fk.cgroup), "%s", path);
	return 0;
}

static int f_destroy(void *ctx, const struct flowsdn_addr *peer, uint16_t port, uint8_t protocol, size_t *ret)
{
	(void)ctx;
	(void)peer;
	fk.destroys++;
	fk.destroyed_port = port;
	fk.destroyed_proto = protocol;
	*ret = 1;
	return 0;
}

/* Namespaces searched by sock_destroy_netns, in call order. */
static struct {
	unsigned int calls;
	char paths[8][64];
	uint64_t inos[8]; /* the inode each was to be checked against */
	uint16_t port;
} fn;

static int f_destroy_netns(void *ctx, const char *netns, uint64_t ino, const struct flowsdn_addr *peer, uint16_t port,
			   uint8_t protocol, size_t *ret)
{
	(void)ctx;
	(void)peer;
	cr_assert_eq(protocol, IPPROTO_UDP);
	if (fn.calls < 8) {
		snprintf(fn.paths[fn.calls], sizeof(fn.paths[0]), "%s", netns);
		fn.inos[fn.calls] = ino;
	}
	fn.calls++;
	fn.port = port;
	*ret = 2;
	return 0;
}

/* Three endpoints: two interfaces of one runc-style netns, one sandbox
 * translated per packet (no host sockets). */
static int f_endpoints(void *userdata, struct agent_api_endpoint **ret, size_t *ret_n)
{
	struct agent_api_endpoint *v = calloc(3, sizeof(*v));

	cr_assert_str_eq(userdata, "core");
	cr_assert(v);
	snprintf(v[0].netns, sizeof(v[0].netns), "/proc/100/ns/net");
	v[0].netns_ino = 4026530001;
	v[1] = v[0];
	snprintf(v[2].netns, sizeof(v[2].netns), "/proc/200/ns/net");
	v[2].netns_ino = 4026530002;
	v[2].svc_translation = FLOWSDN_CNI_SVC_PACKET;
	*ret = v;
	*ret_n = 3;
	return 0;
}

/* Source ranges written per backend set (the last call). */
static struct {
	unsigned int calls;
	uint32_t svc_id;
	size_t n_allow, n_deny;
	struct flowsdn_prefix deny0;
} fr;

static int f_srcrange(void *ctx, struct flowsdn_datapath *dp, uint32_t svc_id, const struct flowsdn_prefix *allow,
		      size_t n_allow, const struct flowsdn_prefix *deny, size_t n_deny)
{
	(void)ctx;
	(void)dp;
	(void)allow;
	fr.calls++;
	fr.svc_id = svc_id;
	fr.n_allow = n_allow;
	fr.n_deny = n_deny;
	if (n_deny)
		fr.deny0 = deny[0];
	return 0;
}

static const struct agent_ops fake_ops = {
	.dp_srcrange_set = f_srcrange,
	.sock_destroy = f_destroy,
	.sock_destroy_netns = f_destroy_netns,
	.dp_service_publish = f_publish,
	.dp_service_remove = f_remove,
	.dp_socklb_attach = f_attach,
};

static char state_dir[64];

static void setup(void)
{
	memset(&fk, 0, sizeof(fk));
	snprintf(state_dir, sizeof(state_dir), "/tmp/test-agent-services-XXXXXX");
	cr_assert(mkdtemp(state_dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state_dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(agent_services, .init = setup, .fini = teardown);

static struct agent_config *config(const char *extra)
{
	char json[4096];
	struct agent_config *c = NULL;
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();

	snprintf(json, sizeof(json), "{\"state-dir\":\"%s\",\"socket-lb-cgroup\":\"/sys/fs/cgroup/test\"%s}", state_dir,
		 extra ? extra : "");
	ASSERT_OK(agent_config_parse(json, strlen(json), &c, d), test_engine_text(d));
	return c;
}

static struct agent_services *start(const char *extra)
{
	struct agent_config *c = config(extra);
	struct agent_services *s = NULL;

	ASSERT_OK(agent_services_new(c, &fake_ops, NULL, FAKE_DP, &s), "services start");
	agent_config_free(c);
	return s;
}

/* PUT @body as @id: the error, and the reply or the diag's first path. */
static int put(struct agent_services *s, const char *id, const char *body, char *out, size_t size)
{
	struct json_writer *g = json_writer_new(0);
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	char *json = NULL;
	int r;

	r = agent_services_put(s, id, body, strlen(body), g, d);
	if (r == 0) {
		cr_assert(json_writer_finish(g, &json, NULL) == 0);
		snprintf(out, size, "%s", json);
		free(json);
	} else {
		const struct diag_entry *e = diag_first_error(d);

		json_writer_free(g);
		snprintf(out, size, "%s", e ? e->path : "(no diag)");
	}
	return r;
}

static char *get(struct agent_services *s, const char *id, int *ret_err)
{
	struct json_writer *g = json_writer_new(0);
	char *json = NULL;

	*ret_err = agent_services_get(s, id, g);
	if (*ret_err) {
		json_writer_free(g);
		return NULL;
	}
	cr_assert(json_writer_finish(g, &json, NULL) == 0);
	return json;
}

#define WEB                                                                                                       \
	"{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.10\",\"port\":80,\"protocol\":\"TCP\"}],"  \
	"\"backends\":[{\"address\":\"10.0.0.5\",\"port\":8080},{\"address\":\"10.0.0.6\",\"port\":8080,"         \
	"\"weight\":3}]"

Test(agent_services, put_get_delete)
{
	struct agent_services *s = start(NULL);
	char out[4096];
	int err;
	char *json;

	ASSERT_OK(put(s, "fs-00000000000000000000000000000001", WEB "}", out, sizeof(out)), out);
	cr_assert(strstr(out, "\"id\":\"fs-00000000000000000000000000000001\"") && strstr(out, "\"svcId\":1"), "%s", out);
	cr_assert(strstr(out, "\"selection\":\"random\"") && strstr(out, "\"weight\":3"), "%s", out);
	cr_assert_eq(fk.publishes, 1);
	cr_assert(!fk.had_old);
	cr_assert_eq(fk.n_sets, 1, "one set (TCP, IPv4, cluster view)");
	cr_assert_eq(fk.n_backends[0], 2);
	cr_assert_eq(fk.n_fe, 1);
	cr_assert_eq(fk.fe[0].port, 80);
	cr_assert_eq(fk.fe[0].protocol, IPPROTO_TCP);
	cr_assert_eq(fk.sets[0].svc_id, 8, "svcId 1, set 0");
	json = get(s, "fs-00000000000000000000000000000001", &err);
	ASSERT_OK(err, "get");
	cr_assert_str_eq(json, out, "GET returns what PUT stored");
	free(json);
	json = get(s, NULL, &err);
	cr_assert(json && strstr(json, "{\"services\":[{\"id\":\"fs-00000000000000000000000000000001\""), "%s", json);
	free(json);
	cr_assert_eq(agent_services_count(s), 1);
	ASSERT_OK(agent_services_delete(s, "fs-00000000000000000000000000000001", NULL), "delete");
	cr_assert_eq(fk.removes, 1);
	ASSERT_ERR(agent_services_delete(s, "fs-00000000000000000000000000000001", NULL), -FLOWSDN_E_AGENT_NOT_FOUND, "delete again");
	cr_assert_null(get(s, "fs-00000000000000000000000000000001", &err));
	cr_assert_eq(err, -FLOWSDN_E_AGENT_NOT_FOUND);
	agent_services_free(s);
}

Test(agent_services, errors_name_the_field)
{
	static const struct {
		const char *body, *path;
	} cases[] = {
		{ "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.10\",\"port\":80}],"
		  "\"backends\":[{\"address\":\"10.0.0.5\",\"port\":1},{\"address\":\"10.0.0.6\",\"port\":0}]}",
		  "backends[1].port" },
		{ "{\"frontends\":[{\"type\":\"Cluster\",\"address\":\"10.96.0.10\",\"port\":80}]}", "frontends[0].type" },
		{ "{\"frontends\":[{\"type\":\"NodePort\",\"address\":\"10.96.0.10\",\"port\":80}]}",
		  "frontends[0].address" },
		{ "{\"frontends\":[{\"type\":\"ClusterIP\",\"port\":80}]}", "frontends[0].address" },
		{ "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.300\",\"port\":80}]}",
		  "frontends[0].address" },
		{ "{\"frontends\":[]}, \"x\":1}", "" },
		{ WEB ",\"color\":\"red\"}", "color" },
		{ WEB ",\"selection\":\"maglev\",\"maglevTableSize\":1000}", "maglevTableSize" },
		{ WEB ",\"sessionAffinity\":{\"type\":\"ClientIP\",\"timeoutSeconds\":0}}",
		  "sessionAffinity.timeoutSeconds" },
		{ WEB ",\"loadBalancerSourceRanges\":[\"203.0.113.0/24\",\"203.0.113.1/24\"]}",
		  "loadBalancerSourceRanges[1]" },
		{ WEB ",\"id\":\"fs-000000000000000000000000000000ff\"}", "id" },
		{ "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.10\",\"port\":80}],"
		  "\"backends\":[{\"address\":\"10.0.0.5\",\"port\":80},{\"address\":\"10.0.0.5\",\"port\":80}]}",
		  "backends[1]" },
		{ "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.10\",\"port\":80,\"protocol\":\"SCTP\"}]}",
		  "frontends[0].protocol" },
		{ "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.10\",\"port\":80}],"
		  "\"backends\":[{\"address\":\"10.0.0.5\",\"port\":80,\"node\":\"Not A Node\"}]}",
		  "backends[0].node" },
	};
	struct agent_services *s = start(NULL);
	char out[4096];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = put(s, "fs-00000000000000000000000000000001", cases[i].body, out, sizeof(out));

		cr_assert_eq(r, -FLOWSDN_E_AGENT_REFUSED, "case %zu: %d (%s)", i, r, out);
		cr_assert_str_eq(out, cases[i].path, "case %zu names the field", i);
	}
	cr_assert_eq(put(s, "Bad_Id", WEB "}", out, sizeof(out)), -FLOWSDN_E_AGENT_REFUSED);
	cr_assert_str_eq(out, "id");
	cr_assert_eq(fk.publishes, 0, "nothing refused reached the datapath");
	cr_assert_eq(agent_services_count(s), 0);
	agent_services_free(s);
}

Test(agent_services, frontend_belongs_to_one_service)
{
	struct agent_services *s = start(NULL);
	char out[4096];

	ASSERT_OK(put(s, "fs-00000000000000000000000000000001", WEB "}", out, sizeof(out)), out);
	cr_assert_eq(put(s, "fs-00000000000000000000000000000002", WEB "}", out, sizeof(out)), -FLOWSDN_E_AGENT_EXISTS);
	cr_assert_str_eq(out, "frontends");
	/* The same service may keep its own frontend. */
	ASSERT_OK(put(s, "fs-00000000000000000000000000000001", WEB ",\"selection\":\"random\"}", out, sizeof(out)), out);
	ASSERT_OK(agent_services_delete(s, "fs-00000000000000000000000000000001", NULL), "delete");
	ASSERT_OK(put(s, "fs-00000000000000000000000000000002", WEB "}", out, sizeof(out)), "free again after the delete");
	agent_services_free(s);
}

Test(agent_services, selection_changes_live_keeping_ids)
{
	struct agent_services *s = start(NULL);
	char out[4096];
	uint32_t ids[2];

	ASSERT_OK(put(s, "fs-00000000000000000000000000000001", WEB "}", out, sizeof(out)), out);
	ids[0] = fk.backend_ids[0][0];
	ids[1] = fk.backend_ids[0][1];
	cr_assert(ids[0] && ids[1] && ids[0] != ids[1]);
	ASSERT_OK(put(s, "fs-00000000000000000000000000000001", WEB ",\"selection\":\"maglev\",\"maglevTableSize\":251}", out, sizeof(out)), out);
	cr_assert(strstr(out, "\"svcId\":1") && strstr(out, "\"selection\":\"maglev\""), "%s", out);
	cr_assert(fk.had_old, "published over the old version, not recreated");
	cr_assert(fk.sets[0].flags & FLOWSDN_SVC_F_MAGLEV);
	cr_assert_eq(fk.sets[0].maglev_size, 251);
	cr_assert_not_null(fk.sets[0].maglev_table);
	cr_assert_eq(fk.backend_ids[0][0], ids[0], "backend ids kept");
	cr_assert_eq(fk.backend_ids[0][1], ids[1]);
	/* A backend going terminating keeps its id and entry. */
	ASSERT_OK(put(s, "fs-00000000000000000000000000000001",
		      "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.10\",\"port\":80}],"
		      "\"backends\":[{\"address\":\"10.0.0.5\",\"port\":8080},{\"address\":\"10.0.0.6\",\"port\":8080,"
		      "\"state\":\"terminating\"},{\"address\":\"10.0.0.7\",\"port\":8080}],"
		      "\"sessionAffinity\":{\"type\":\"ClientIP\",\"timeoutSeconds\":30}}",
		      out, sizeof(out)),
		  out);
	cr_assert_eq(fk.backend_ids[0][1], ids[1]);
	cr_assert_eq(fk.backend_state[0][1], FLOWSDN_BACKEND_TERMINATING);
	cr_assert(fk.backend_ids[0][2] > ids[1], "a new backend gets a new id");
	cr_assert(fk.sets[0].flags & FLOWSDN_SVC_F_AFFINITY);
	cr_assert_eq(fk.sets[0].affinity_timeout, 30);
	cr_assert(!(fk.sets[0].flags & FLOWSDN_SVC_F_MAGLEV), "back to random");
	agent_services_free(s);
}

Test(agent_services, traffic_policy_local_and_nodeport)
{
	struct agent_services *s = start(",\"node-addresses\":[\"192.0.2.1\",\"2001:db8::1\"]");
	char out[4096];
	bool ext = false, in = false;

	ASSERT_OK(put(s, "fs-0000000000000000000000000000000b",
		      "{\"frontends\":[{\"type\":\"LoadBalancer\",\"address\":\"203.0.113.10\",\"port\":443}],"
		      "\"backends\":[{\"address\":\"10.0.0.5\",\"port\":8443},"
		      "{\"address\":\"10.0.1.5\",\"port\":8443,\"node\":\"node-b\"}],"
		      "\"externalTrafficPolicy\":\"Local\"}",
		      out, sizeof(out)),
		  out);
	cr_assert_eq(fk.n_fe, 2, "an external and an internal entry");
	cr_assert_eq(fk.n_sets, 2);
	for (size_t i = 0; i < fk.n_fe; i++) {
		const struct flowsdn_lb_set *set = &fk.sets[fk.fe[i].set];

		cr_assert(fk.fe[i].flags & FLOWSDN_SVC_F_LOADBALANCER);
		if (fk.fe[i].scope == FLOWSDN_SVC_SCOPE_EXTERNAL) {
			ext = true;
			cr_assert(fk.fe[i].flags & FLOWSDN_SVC_F_TWO_SCOPES);
			cr_assert(set->flags & FLOWSDN_SVC_F_LOCAL);
			cr_assert_eq(fk.n_backends[fk.fe[i].set], 1, "external: the node's own backends only");
		} else {
			in = true;
			cr_assert_eq(fk.n_backends[fk.fe[i].set], 2, "internal: every backend");
			cr_assert_eq(fk.backend_flags[fk.fe[i].set][1], FLOWSDN_BACKEND_F_REMOTE);
		}
	}
	cr_assert(ext && in);

	ASSERT_OK(put(s, "fs-0000000000000000000000000000000c",
		      "{\"frontends\":[{\"type\":\"NodePort\",\"port\":30080,\"protocol\":\"UDP\"}],"
		      "\"backends\":[{\"address\":\"10.0.0.9\",\"port\":53},{\"address\":\"fd00::9\",\"port\":53}]}",
		      out, sizeof(out)),
		  out);
	cr_assert_eq(fk.n_fe, 2, "one frontend per node address");
	cr_assert_eq(fk.n_sets, 2, "one set per family");
	for (size_t i = 0; i < fk.n_fe; i++) {
		cr_assert(fk.fe[i].flags & FLOWSDN_SVC_F_NODEPORT);
		cr_assert_eq(fk.fe[i].protocol, IPPROTO_UDP);
		cr_assert_eq(fk.n_backends[fk.fe[i].set], 1, "the backend of the frontend's family");
	}
	agent_services_free(s);
}

Test(agent_services, restart_keeps_services_and_damage_is_refused)
{
	struct agent_services *s = start(NULL);
	char out[4096], path[128], *before, *after;
	int err;
	FILE *f;

	ASSERT_OK(put(s, "fs-00000000000000000000000000000001", WEB ",\"selection\":\"maglev\",\"maglevTableSize\":251}", out, sizeof(out)), out);
	ASSERT_OK(put(s, "fs-0000000000000000000000000000000d",
		      "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"fd00:96::a\",\"port\":53,"
		      "\"protocol\":\"UDP\"}],\"backends\":[{\"address\":\"fd00::53\",\"port\":53}]}",
		      out, sizeof(out)),
		  out);
	before = get(s, NULL, &err);
	agent_services_free(s);

	memset(&fk, 0, sizeof(fk));
	s = start(NULL);
	after = get(s, NULL, &err);
	cr_assert_str_eq(after, before, "a restart keeps every service as it was");
	cr_assert_eq(fk.publishes, 2, "and publishes them again");
	ASSERT_OK(put(s, "fs-00000000000000000000000000000003",
		      "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.99\",\"port\":80}]}", out,
		      sizeof(out)),
		  out);
	cr_assert(strstr(out, "\"svcId\":3"), "ids are not reused after a restart: %s", out);
	agent_services_free(s);
	free(before);
	free(after);

	snprintf(path, sizeof(path), "%s/services.json", state_dir);
	f = fopen(path, "r+");
	cr_assert(f);
	fseek(f, 20, SEEK_SET);
	fputs("\"zz\"", f);
	fclose(f);
	{
		struct agent_config *c = config(NULL);
		struct agent_services *bad = NULL;
		struct stat st0, st1;

		cr_assert(stat(path, &st0) == 0);
		ASSERT_ERR(agent_services_new(c, &fake_ops, NULL, FAKE_DP, &bad), -FLOWSDN_E_AGENT_STATE, "damaged");
		cr_assert(stat(path, &st1) == 0);
		cr_assert(st0.st_mtim.tv_sec == st1.st_mtim.tv_sec && st0.st_mtim.tv_nsec == st1.st_mtim.tv_nsec &&
			  st0.st_size == st1.st_size, "a damaged file is never rewritten");
		agent_config_free(c);
	}
}

Test(agent_services, config_services_and_keys)
{
	struct agent_config *c = NULL;
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	static const char bad[] =
		"{\"services\":[{\"id\":\"fs-0000000000000000000000000000000a\",\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.1\","
		"\"port\":80}]},{\"id\":\"fs-0000000000000000000000000000000f\",\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.2\","
		"\"port\":80}],\"backends\":[{\"address\":\"nowhere\",\"port\":80}]}]}";
	struct agent_services *s;
	char *json, *cfg_json = NULL;
	int err;

	ASSERT_ERR(agent_config_parse(bad, strlen(bad), &c, d), -FLOWSDN_E_AGENT_CONFIG, "bad backend address");
	cr_assert_str_eq(diag_first_error(d)->path, "services[1].backends[0].address");
	ASSERT_ERR(agent_config_parse("{\"services\":[{\"frontends\":[]}]}", 31, &c, d), -FLOWSDN_E_AGENT_CONFIG,
		   "no id");
	cr_assert_str_eq(diag_first_error(d)->path, "services[0].id");
	ASSERT_ERR(agent_config_parse("{\"node-addresses\":[\"x\"]}", 24, &c, d), -FLOWSDN_E_AGENT_CONFIG, "node addr");
	cr_assert_str_eq(diag_first_error(d)->path, "[\"node-addresses\"][0]");
	ASSERT_ERR(agent_config_parse("{\"socket-lb-cgroup\":\"rel\"}", 26, &c, d), -FLOWSDN_E_AGENT_CONFIG, "cgroup");
	cr_assert_str_eq(diag_first_error(d)->path, "[\"socket-lb-cgroup\"]");

	s = start(",\"services\":[{\"id\":\"fs-0000000000000000000000000000000a\",\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.1\","
		  "\"port\":80}],\"backends\":[{\"address\":\"10.0.0.1\",\"port\":80}]}]");
	json = get(s, "fs-0000000000000000000000000000000a", &err);
	ASSERT_OK(err, "config service present");
	cr_assert(strstr(json, "\"address\":\"10.0.0.1\""), "%s", json);
	cr_assert_eq(fk.attaches, 1);
	cr_assert_str_eq(fk.cgroup, "/sys/fs/cgroup/test", "the configured cgroup");
	free(json);
	agent_services_free(s);

	c = config(",\"services\":[]");
	ASSERT_OK(agent_config_format(c, &cfg_json), "format");
	cr_assert(strstr(cfg_json, "\"socket-lb-cgroup\"") && strstr(cfg_json, "\"services\""), "%s", cfg_json);
	free(cfg_json);
	agent_config_free(c);
}

Test(agent_services, refused_publish_changes_nothing)
{
	struct agent_services *s = start(NULL);
	char out[4096];
	int err;
	char *json;

	fk.fail_publish = 1;
	cr_assert_eq(put(s, "fs-00000000000000000000000000000001", WEB "}", out, sizeof(out)), -EIO);
	cr_assert_null(get(s, "fs-00000000000000000000000000000001", &err), "not stored");
	ASSERT_OK(put(s, "fs-00000000000000000000000000000001", WEB "}", out, sizeof(out)), "the frontend is still free");
	json = get(s, "fs-00000000000000000000000000000001", &err);
	cr_assert(strstr(json, "\"svcId\":1"), "the refused one used no id: %s", json);
	free(json);
	agent_services_free(s);
}

Test(agent_services, removed_udp_backend_sockets_are_destroyed)
{
	struct agent_services *s = start(NULL);
	char out[4096];
	static const char two[] = "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.53\",\"port\":53,"
				  "\"protocol\":\"UDP\"}],\"backends\":[{\"address\":\"10.0.0.5\",\"port\":5353},"
				  "{\"address\":\"10.0.0.6\",\"port\":5354}]}";
	static const char one[] = "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.53\",\"port\":53,"
				  "\"protocol\":\"UDP\"}],\"backends\":[{\"address\":\"10.0.0.5\",\"port\":5353}]}";

	ASSERT_OK(put(s, "fs-00000000000000000000000000000053", two, out, sizeof(out)), out);
	cr_assert_eq(fk.destroys, 0);
	ASSERT_OK(put(s, "fs-00000000000000000000000000000053", one, out, sizeof(out)), out);
	cr_assert_eq(fk.destroys, 1, "the removed backend's sockets");
	cr_assert_eq(fk.destroyed_port, 5354);
	cr_assert_eq(fk.destroyed_proto, IPPROTO_UDP);
	ASSERT_OK(agent_services_delete(s, "fs-00000000000000000000000000000053", NULL), "delete");
	cr_assert_eq(fk.destroys, 2, "and the last one's on DELETE");
	/* TCP services drain: nothing destroyed. */
	ASSERT_OK(put(s, "fs-00000000000000000000000000000001", WEB "}", out, sizeof(out)), out);
	ASSERT_OK(agent_services_delete(s, "fs-00000000000000000000000000000001", NULL), "delete");
	cr_assert_eq(fk.destroys, 2);
	cr_assert_eq(fn.calls, 0, "no endpoint source set: the agent's own netns only");
	agent_services_free(s);
}

/* The sockets of a removed UDP backend are searched for in every
 * endpoint netns whose sockets are the host kernel's too (once per
 * namespace), not in those of sandboxes translated per packet. */
Test(agent_services, removed_udp_backend_sockets_destroyed_in_endpoint_netns)
{
	struct agent_services *s = start(NULL);
	char out[4096];
	static const char two[] = "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.54\",\"port\":53,"
				  "\"protocol\":\"UDP\"}],\"backends\":[{\"address\":\"10.0.0.7\",\"port\":5355},"
				  "{\"address\":\"10.0.0.8\",\"port\":5356}]}";
	static const char one[] = "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.54\",\"port\":53,"
				  "\"protocol\":\"UDP\"}],\"backends\":[{\"address\":\"10.0.0.7\",\"port\":5355}]}";

	memset(&fn, 0, sizeof(fn));
	agent_services_set_endpoints(s, f_endpoints, "core");
	ASSERT_OK(put(s, "fs-00000000000000000000000000000054", two, out, sizeof(out)), out);
	cr_assert_eq(fn.calls, 0);
	ASSERT_OK(put(s, "fs-00000000000000000000000000000054", one, out, sizeof(out)), out);
	cr_assert_eq(fk.destroyed_port, 5356, "the agent's own netns");
	cr_assert_eq(fn.calls, 1, "one call for the two interfaces of one netns, none for the sandbox");
	cr_assert_str_eq(fn.paths[0], "/proc/100/ns/net");
	cr_assert_eq(fn.inos[0], 4026530001, "checked against the inode recorded for the endpoint");
	cr_assert_eq(fn.port, 5356);
	ASSERT_OK(agent_services_delete(s, "fs-00000000000000000000000000000054", NULL), "delete");
	cr_assert_eq(fn.calls, 2, "and the last backend's on DELETE");
	cr_assert_eq(fn.port, 5355);
	agent_services_free(s);
}

Test(agent_services, many_services_found_by_id_after_deletes)
{
	struct agent_services *s = start(NULL);
	char out[4096], body[512], id[40];
	int err;
	char *json;

	for (int i = 0; i < 300; i++) {
		snprintf(id, sizeof(id), "fs-%032x", i + 1);
		snprintf(body, sizeof(body),
			 "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.%d.%d\",\"port\":80}]}",
			 i / 250, i % 250 + 1);
		ASSERT_OK(put(s, id, body, out, sizeof(out)), out);
	}
	for (int i = 0; i < 300; i += 3) {
		snprintf(id, sizeof(id), "fs-%032x", i + 1);
		ASSERT_OK(agent_services_delete(s, id, NULL), id);
	}
	cr_assert_eq(agent_services_count(s), 200);
	for (int i = 0; i < 300; i++) {
		snprintf(id, sizeof(id), "fs-%032x", i + 1);
		json = get(s, id, &err);
		if (i % 3 == 0) {
			cr_assert_eq(err, -FLOWSDN_E_AGENT_NOT_FOUND, "%s deleted", id);
		} else {
			cr_assert(json && strstr(json, id), "%s still there", id);
		}
		free(json);
	}
	agent_services_free(s);
}

/* loadBalancerSourceRanges and deniedSourceRanges reach the datapath's
 * source-range map for each backend set; DELETE clears them. */
Test(agent_services, source_ranges_go_to_the_datapath)
{
	struct agent_services *s = start(NULL);
	char out[4096], text[FLOWSDN_PREFIX_STRLEN];

	memset(&fr, 0, sizeof(fr));
	ASSERT_OK(put(s, "fs-00000000000000000000000000000002",
		      "{\"frontends\":[{\"type\":\"LoadBalancer\",\"address\":\"198.51.100.80\",\"port\":80,"
		      "\"protocol\":\"TCP\"}],\"backends\":[{\"address\":\"10.0.0.5\",\"port\":8080}],"
		      "\"loadBalancerSourceRanges\":[\"203.0.113.0/24\",\"198.51.100.0/24\"],"
		      "\"deniedSourceRanges\":[\"203.0.113.7/32\"]}",
		      out, sizeof(out)),
		  out);
	cr_assert_eq(fr.calls, fk.n_sets, "one write per backend set (%u for %zu)", fr.calls, (size_t)fk.n_sets);
	cr_assert_eq(fr.svc_id, fk.sets[fk.n_sets - 1].svc_id);
	cr_assert(fr.n_allow == 2 && fr.n_deny == 1, "allow %zu deny %zu", fr.n_allow, fr.n_deny);
	cr_assert(flowsdn_prefix_format(&fr.deny0, text, sizeof(text)) > 0);
	cr_assert_str_eq(text, "203.0.113.7/32");
	fr.calls = 0;
	ASSERT_OK(agent_services_delete(s, "fs-00000000000000000000000000000002", NULL), "delete");
	cr_assert(fr.calls > 0 && fr.n_allow == 0 && fr.n_deny == 0, "cleared on delete");
	agent_services_free(s);
}

/* ------------------------------------------------------------ journal */

static off_t file_size(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", state_dir, name);
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static char *file_read(const char *name, size_t *ret_len)
{
	char path[128], *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", state_dir, name);
	f = fopen(path, "r");
	cr_assert(f, "%s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*ret_len = (size_t)n;
	return buf;
}

static void file_write(const char *name, const char *data, size_t len, const char *mode)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", state_dir, name);
	f = fopen(path, mode);
	cr_assert(f, "%s", path);
	cr_assert(fwrite(data, 1, len, f) == len);
	fclose(f);
}

/* Stops *@s (NULL: none running), calls @between (may be NULL), starts
 * again: every service must read back as it was (@before, taken; NULL:
 * what *@s showed). */
static void restart_same(struct agent_services **s, char *before, void (*between)(void *), void *arg,
			 const char *why)
{
	char *after;
	int err;

	if (!before)
		before = get(*s, NULL, &err);
	agent_services_free(*s);
	if (between)
		between(arg);
	memset(&fk, 0, sizeof(fk));
	*s = start(NULL);
	after = get(*s, NULL, &err);
	cr_assert_str_eq(after, before, "%s", why);
	free(before);
	free(after);
}

#define SVC(n) "fs-0000000000000000000000000000000" #n
#define BODY(addr) "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"" addr "\",\"port\":80}]," \
		   "\"backends\":[{\"address\":\"10.0.0.5\",\"port\":8080}]}"

Test(agent_services, a_change_is_one_journal_record)
{
	struct agent_services *s = start(NULL);
	char out[4096];
	off_t j1, j2, j3;
	int err;

	ASSERT_OK(put(s, SVC(1), BODY("10.96.1.1"), out, sizeof(out)), out);
	j1 = file_size("services.journal");
	ASSERT_OK(put(s, SVC(2), BODY("10.96.1.2"), out, sizeof(out)), out);
	j2 = file_size("services.journal");
	ASSERT_OK(put(s, SVC(3), BODY("10.96.1.3"), out, sizeof(out)), out);
	ASSERT_OK(agent_services_delete(s, SVC(2), NULL), "delete");
	j3 = file_size("services.journal");
	cr_assert(j1 > 0 && j2 > j1 && j3 > j2, "each change appends: %lld %lld %lld", (long long)j1, (long long)j2,
		  (long long)j3);
	cr_assert_eq(file_size("services.json"), -1, "no change rewrites a snapshot");
	restart_same(&s, NULL, NULL, NULL, "the journal replayed gives the same services");
	cr_assert_null(get(s, SVC(2), &err), "the deleted one stays deleted");
	cr_assert_eq(err, -FLOWSDN_E_AGENT_NOT_FOUND);
	cr_assert_eq(fk.publishes, 2, "and they are published again");
	cr_assert(file_size("services.json") > 0 && file_size("services.journal") == 0,
		  "the start folded the journal into a snapshot");
	ASSERT_OK(put(s, SVC(4), BODY("10.96.1.4"), out, sizeof(out)), out);
	cr_assert(strstr(out, "\"svcId\":4"), "ids go on after the replay: %s", out);
	agent_services_free(s);
}

static void tear_the_journal(void *arg)
{
	(void)arg;
	/* A crash in the middle of an append: a line without its newline. */
	file_write("services.journal", "0123456789abcdef {\"seq\":3,\"put\"", 32, "a");
}

Test(agent_services, torn_record_cut_damaged_record_refused)
{
	struct agent_services *s = start(NULL);
	struct agent_config *c;
	char out[4096], *data, *again, *p;
	size_t len, len2;

	ASSERT_OK(put(s, SVC(1), BODY("10.96.2.1"), out, sizeof(out)), out);
	ASSERT_OK(put(s, SVC(2), BODY("10.96.2.2"), out, sizeof(out)), out);
	restart_same(&s, NULL, tear_the_journal, NULL, "the torn record is not a change");
	cr_assert_eq(file_size("services.journal"), 0, "folded into the snapshot at the start");

	/* A whole record whose text no longer matches its checksum. */
	ASSERT_OK(put(s, SVC(3), BODY("10.96.2.3"), out, sizeof(out)), out);
	ASSERT_OK(put(s, SVC(4), BODY("10.96.2.4"), out, sizeof(out)), out);
	agent_services_free(s);
	data = file_read("services.journal", &len);
	p = strstr(data, "10.96.2.3");
	cr_assert(p);
	p[8] = '9';
	file_write("services.journal", data, len, "w");
	c = config(NULL);
	s = NULL;
	ASSERT_ERR(agent_services_new(c, &fake_ops, NULL, FAKE_DP, &s), -FLOWSDN_E_AGENT_STATE, "a damaged record");
	again = file_read("services.journal", &len2);
	cr_assert(len2 == len && !memcmp(again, data, len), "a damaged journal is kept as it is");
	free(again);
	agent_config_free(c);
	free(data);
}

struct saved {
	char *data;
	size_t len;
};

static void put_back(void *arg)
{
	struct saved *j = arg;

	file_write("services.journal", j->data, j->len, "w");
}

Test(agent_services, snapshot_covers_records_left_by_a_crash)
{
	struct agent_services *s = start(NULL);
	struct saved j;
	char out[4096], *before;
	int err;

	ASSERT_OK(put(s, SVC(1), BODY("10.96.3.1"), out, sizeof(out)), out);
	ASSERT_OK(put(s, SVC(2), BODY("10.96.3.2"), out, sizeof(out)), out);
	ASSERT_OK(agent_services_delete(s, SVC(1), NULL), "delete");
	agent_services_free(s);
	j.data = file_read("services.journal", &j.len);
	s = start(NULL); /* folds the journal into a snapshot */
	before = get(s, NULL, &err);
	/* As if the agent died after the snapshot, before the journal was
	 * emptied: the records are there again. */
	restart_same(&s, before, put_back, &j, "records the snapshot covers are not applied twice");
	agent_services_free(s);
	free(j.data);
}

/* Contract C7: a state directory written by main before the journal. */
Test(agent_services, state_of_an_agent_before_the_journal)
{
	static const char old[] =
		"{\"version\":1,\"nextSvcId\":8,\"nextBackendId\":20,\"services\":[{\"id\":\"" SVC(7) "\",\"svcId\":7,"
		"\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.4.7\",\"port\":80,\"protocol\":\"TCP\"}],"
		"\"backends\":[{\"address\":\"10.0.0.7\",\"port\":8080,\"weight\":1,\"state\":\"active\","
		"\"node\":\"local\",\"backendIds\":[18,19]}],\"selection\":\"random\",\"maglevTableSize\":16381,"
		"\"internalTrafficPolicy\":\"Cluster\",\"externalTrafficPolicy\":\"Cluster\","
		"\"sessionAffinity\":{\"type\":\"None\",\"timeoutSeconds\":10800},"
		"\"loadBalancerSourceRanges\":[],\"deniedSourceRanges\":[]}]}";
	struct agent_services *s;
	char out[4096], *all;
	int err;

	file_write("services.json", old, sizeof(old) - 1, "w");
	s = start(NULL);
	all = get(s, NULL, &err);
	cr_assert(strstr(all, SVC(7)) && strstr(all, "\"svcId\":7") && strstr(all, "10.96.4.7"), "%s", all);
	cr_assert_eq(fk.publishes, 1);
	cr_assert_eq(fk.backend_ids[0][0], 18, "backend ids kept: %u", fk.backend_ids[0][0]);
	ASSERT_OK(put(s, SVC(8), BODY("10.96.4.8"), out, sizeof(out)), out);
	cr_assert(strstr(out, "\"svcId\":8"), "%s", out);
	agent_services_free(s);
	free(all);
	memset(&fk, 0, sizeof(fk));
	s = start(NULL);
	cr_assert_eq(agent_services_count(s), 2, "the old snapshot and the new record");
	agent_services_free(s);
}

Test(agent_services, duplicate_config_ids_named_after_the_first)
{
	struct agent_config *c = NULL;
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	static const char dup[] =
		"{\"services\":[{\"id\":\"" SVC(1) "\",\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.5.1\","
		"\"port\":80}]},{\"id\":\"" SVC(2) "\",\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.5.2\","
		"\"port\":80}]},{\"id\":\"" SVC(1) "\",\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.5.3\","
		"\"port\":80}]}]}";
	const struct diag_entry *e;

	ASSERT_ERR(agent_config_parse(dup, strlen(dup), &c, d), -FLOWSDN_E_AGENT_CONFIG, "a duplicate id");
	e = diag_first_error(d);
	cr_assert_str_eq(e->path, "services[2].id");
	cr_assert(strstr(e->message, "services[0]"), "names the first: %s", e->message);
}

/* The configuration's services are read once into a model that the
 * output, the copies and the start all use: the output shows every field
 * (defaults filled in, no ids), reads back to the same output, a copy
 * shows the same, and a copy starts the same services after the
 * original is gone. */
Test(agent_services, config_services_read_once_shown_and_shared)
{
	struct agent_config *c = config(",\"services\":[{\"id\":\"" SVC(7) "\",\"svcId\":99,\"frontends\":[{\"type\":"
					"\"ClusterIP\",\"address\":\"10.96.7.1\",\"port\":53,\"protocol\":\"UDP\"}],"
					"\"backends\":[{\"address\":\"10.0.7.1\",\"port\":5353,\"weight\":3}],"
					"\"selection\":\"maglev\"}]");
	struct agent_config *again = NULL, *copy = NULL;
	struct agent_services *s = NULL;
	char *f1 = NULL, *f2 = NULL, *f3 = NULL, *json;
	int err;

	ASSERT_OK(agent_config_format(c, &f1), "format");
	cr_assert(strstr(f1, "\"id\": \"" SVC(7) "\""), "%s", f1);
	cr_assert(strstr(f1, "\"weight\": 3") && strstr(f1, "\"state\": \"active\"") && strstr(f1, "\"node\": \"local\""),
		  "every backend field: %s", f1);
	cr_assert(strstr(f1, "\"selection\": \"maglev\"") && strstr(f1, "\"sessionAffinity\""), "every field: %s", f1);
	cr_assert_null(strstr(f1, "svcId"), "no ids in the configuration's form: %s", f1);
	cr_assert_null(strstr(f1, "backendIds"), "no ids in the configuration's form: %s", f1);
	ASSERT_OK(agent_config_parse(f1, strlen(f1), &again, NULL), "the output reads back");
	ASSERT_OK(agent_config_format(again, &f2), "format again");
	cr_assert_str_eq(f1, f2);
	ASSERT_OK(agent_config_dup(c, &copy), "dup");
	agent_config_free(c);
	ASSERT_OK(agent_config_format(copy, &f3), "format the copy");
	cr_assert_str_eq(f1, f3);
	ASSERT_OK(agent_services_new(copy, &fake_ops, NULL, FAKE_DP, &s), "start from the copy");
	cr_assert_eq(agent_services_count(s), 1);
	json = get(s, SVC(7), &err);
	ASSERT_OK(err, "the service started");
	cr_assert(strstr(json, "\"svcId\":1,"), "the configuration's svcId is not taken: %s", json);
	cr_assert(strstr(json, "\"weight\":3"), "%s", json);
	free(json);
	agent_services_free(s);
	agent_config_free(copy);
	agent_config_free(again);
	free(f1);
	free(f2);
	free(f3);
}
