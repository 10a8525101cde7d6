/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent core in-process, without privileges: its kernel operations
 * are a fake (struct agent_ops) that records veths and datapath entries in
 * memory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <flowsdn/cni.h>
#include <flowsdn/ipam.h>

#include "agent-api.h"
#include "core.h"
#include "helpers.h"
#include "log.h"

/* The fake kernel: a table of host interfaces. */
#define FAKE_MAX 64
struct fake_if {
	bool used, attached, published;
	char host[16], ifname[16], netns[256];
	int ifindex;
};
struct fake {
	struct fake_if ifs[FAKE_MAX];
	int next_ifindex;
	unsigned int setups, teardowns;
	int fail_setup; /* error to return from the next veth_setup */
};

static struct fake fk;
static char dir[64];

static struct fake_if *fake_by_host(const char *host)
{
	for (int i = 0; i < FAKE_MAX; i++)
		if (fk.ifs[i].used && !strcmp(fk.ifs[i].host, host))
			return &fk.ifs[i];
	return NULL;
}

static struct fake_if *fake_by_index(int ifindex)
{
	for (int i = 0; i < FAKE_MAX; i++)
		if (fk.ifs[i].used && fk.ifs[i].ifindex == ifindex)
			return &fk.ifs[i];
	return NULL;
}

static int f_netns_ino(void *ctx, const char *path, uint64_t *ret)
{
	(void)ctx;
	if (strncmp(path, "/fake/ns/", 9) != 0)
		return -ENOENT;
	*ret = strtoull(path + 9, NULL, 10);
	return 0;
}

static int f_veth_setup(void *ctx, const struct flowsdn_veth_config *cfg, struct flowsdn_veth *ret,
			struct flowsdn_nl_err *err)
{
	(void)ctx;
	if (fk.fail_setup) {
		int e = fk.fail_setup;

		fk.fail_setup = 0;
		snprintf(err->msg, sizeof(err->msg), "fake: setup fails");
		return e;
	}
	if (fake_by_host(cfg->host_ifname))
		return -FLOWSDN_E_NL_EXISTS;
	for (int i = 0; i < FAKE_MAX; i++) {
		struct fake_if *f = &fk.ifs[i];

		if (f->used)
			continue;
		memset(f, 0, sizeof(*f));
		f->used = true;
		snprintf(f->host, sizeof(f->host), "%s", cfg->host_ifname);
		snprintf(f->ifname, sizeof(f->ifname), "%s", cfg->ifname);
		snprintf(f->netns, sizeof(f->netns), "%s", cfg->netns_path);
		f->ifindex = ++fk.next_ifindex;
		memset(ret, 0, sizeof(*ret));
		ret->host_ifindex = f->ifindex;
		ret->mac[0] = 0x0a;
		ret->mac[5] = (uint8_t)f->ifindex;
		ret->host_mac[0] = 0x0a;
		ret->host_mac[4] = 1;
		ret->host_mac[5] = (uint8_t)f->ifindex;
		ret->netns_ino = strtoull(cfg->netns_path + 9, NULL, 10);
		fk.setups++;
		return 0;
	}
	return -ENOSPC;
}

static int f_veth_teardown(void *ctx, const char *host, const struct flowsdn_addr *a, size_t n,
			   struct flowsdn_nl_err *err)
{
	struct fake_if *f = fake_by_host(host);

	(void)ctx, (void)a, (void)n, (void)err;
	if (f) {
		f->used = false;
		fk.teardowns++;
	}
	return 0;
}

static int f_endpoint_check(void *ctx, const struct flowsdn_endpoint_iface *iface, struct flowsdn_nl_err *err)
{
	struct fake_if *f = fake_by_index(iface->host_ifindex);

	(void)ctx;
	if (!f || strcmp(f->host, iface->host_ifname) != 0) {
		snprintf(err->msg, sizeof(err->msg), "fake: %s is gone", iface->host_ifname);
		return -FLOWSDN_E_NL_NOT_FOUND;
	}
	return 0;
}

static int fake_dp_token;

static int f_dp_open(void *ctx, const struct flowsdn_datapath_opts *o, struct flowsdn_datapath **ret)
{
	(void)ctx, (void)o;
	*ret = (struct flowsdn_datapath *)&fake_dp_token;
	return 0;
}

static void f_dp_free(void *ctx, struct flowsdn_datapath *dp)
{
	(void)ctx;
	cr_assert_eq((void *)dp, (void *)&fake_dp_token);
}

static const char *f_dp_mode(void *ctx, struct flowsdn_datapath *dp)
{
	(void)ctx, (void)dp;
	return "fake";
}

static int f_dp_attach(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	struct fake_if *f = fake_by_index(ifindex);

	(void)ctx, (void)dp;
	if (!f)
		return -ENODEV;
	f->attached = true;
	return 0;
}

static int f_dp_detach(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	struct fake_if *f = fake_by_index(ifindex);

	(void)ctx, (void)dp;
	if (f)
		f->attached = false;
	return 0;
}

static int f_dp_is_attached(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	struct fake_if *f = fake_by_index(ifindex);

	(void)ctx, (void)dp;
	return f && f->attached;
}

static int f_dp_adopt(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint_iface *iface)
{
	struct flowsdn_nl_err err = { { 0 } };

	if (f_endpoint_check(ctx, iface, &err) < 0)
		return -FLOWSDN_E_BPF_IFACE_MISMATCH;
	return f_dp_attach(ctx, dp, iface->host_ifindex);
}

static int f_dp_publish(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep)
{
	struct fake_if *f = fake_by_index(ep->host_ifindex);

	(void)ctx, (void)dp;
	if (!f)
		return -ENODEV;
	f->published = true;
	return 0;
}

static int f_dp_remove(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep)
{
	struct fake_if *f = fake_by_index(ep->host_ifindex);

	(void)ctx, (void)dp;
	if (f)
		f->published = false;
	return 0;
}

static const struct agent_ops fake_ops = {
	.netns_ino = f_netns_ino,
	.veth_setup = f_veth_setup,
	.veth_teardown = f_veth_teardown,
	.endpoint_check = f_endpoint_check,
	.dp_open = f_dp_open,
	.dp_free = f_dp_free,
	.dp_mode = f_dp_mode,
	.dp_attach = f_dp_attach,
	.dp_detach = f_dp_detach,
	.dp_is_attached = f_dp_is_attached,
	.dp_adopt = f_dp_adopt,
	.dp_publish = f_dp_publish,
	.dp_remove = f_dp_remove,
};

static struct agent_config *config(const char *pools)
{
	struct agent_config *c = NULL;
	struct agent_diag d = { { 0 } };
	char *json = NULL;

	cr_assert(asprintf(&json, "{\"socket\":\"%s/sock\",\"state-dir\":\"%s/state\",\"pools\":%s}", dir, dir,
			   pools ? pools : "[\"10.9.0.0/29\",\"fd00:9::/125\"]") > 0);
	ASSERT_OK(agent_config_parse(json, strlen(json), &d, &c), d.msg);
	free(json);
	return c;
}

static struct agent_core *core_start(void)
{
	struct agent_config *c = config(NULL);
	struct agent_core *core = NULL;

	ASSERT_OK(agent_core_new(c, &fake_ops, NULL, &core), "core");
	agent_config_free(c);
	return core;
}

static void setup(void)
{
	memset(&fk, 0, sizeof(fk));
	agent_log_set_level(FLOWSDN_LOG_ERR - 1); /* quiet */
	snprintf(dir, sizeof(dir), "/tmp/test-agent-core.XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert(system(cmd) == 0);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* Queues a DEL of (@cid, eth0) in @qdir as flowsdn-cni does. */
static void queue_del(const char *qdir, const char *cid)
{
	char path[256], *body = NULL;

	ASSERT_OK(agent_api_owner_body(cid, "eth0", NULL, 0, &body), "body");
	snprintf(path, sizeof(path), "%s/%s.eth0.json", qdir, cid);
	write_text(path, body);
	free(body);
}

static int add(struct agent_core *core, const char *cid, const char *netns, struct agent_api_endpoint *ep)
{
	struct agent_request rq = { .container_id = cid, .ifname = "eth0", .netns = netns };
	struct agent_diag d = { { 0 } };

	return agent_core_add(core, &rq, ep, &d);
}

TestSuite(agent_core, .init = setup, .fini = teardown);

Test(agent_core, add_is_idempotent_and_check_sees_the_kernel)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint a, b, c;
	struct agent_request rq = { .container_id = "alpha", .ifname = "eth0", .netns = "/fake/ns/11" };
	struct agent_diag d = { { 0 } };

	ASSERT_OK(add(core, "alpha", "/fake/ns/11", &a), "ADD");
	cr_assert_eq(a.n_addrs, 2, "one address per family");
	cr_assert_eq(a.prefix_len[0], 32);
	cr_assert_eq(a.prefix_len[1], 128);
	cr_assert_eq(a.netns_ino, 11);
	cr_assert(fake_by_host(a.host_ifname) && fake_by_host(a.host_ifname)->attached &&
		  fake_by_host(a.host_ifname)->published, "veth made, datapath attached and published");
	ASSERT_OK(add(core, "alpha", "/fake/ns/11", &b), "ADD again");
	cr_assert_eq(a.id, b.id, "the same endpoint");
	cr_assert(flowsdn_addr_equal(&a.addrs[0], &b.addrs[0]));
	cr_assert_eq(fk.setups, 1, "no second veth");
	cr_assert_eq(agent_core_endpoint_count(core), 1);

	ASSERT_OK(agent_core_check(core, &rq, &c, &d), d.msg);
	rq.netns = "/fake/ns/12";
	ASSERT_ERR(agent_core_check(core, &rq, &c, &d), -FLOWSDN_E_NL_MISMATCH, "CHECK in another netns");
	rq.netns = "/fake/ns/11";
	fake_by_host(a.host_ifname)->attached = false;
	ASSERT_ERR(agent_core_check(core, &rq, &c, &d), -FLOWSDN_E_BPF_ATTACH, "CHECK without the datapath");
	fake_by_host(a.host_ifname)->used = false;
	ASSERT_ERR(agent_core_check(core, &rq, &c, &d), -FLOWSDN_E_NL_NOT_FOUND, "CHECK with the veth gone");
	rq.container_id = "nobody";
	ASSERT_ERR(agent_core_check(core, &rq, &c, &d), -FLOWSDN_E_AGENT_NOT_FOUND, "CHECK of an unknown owner");
	agent_core_free(core);
}

Test(agent_core, errors_leave_nothing_behind)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint e;
	struct flowsdn_ipam_pool_summary s[4];
	struct flowsdn_ipam_allocation *alloc = NULL;
	size_t n = 0, n_alloc = 9;
	struct agent_request bad = { .container_id = "-x", .ifname = "eth0", .netns = "/fake/ns/1" };
	struct agent_diag d = { { 0 } };

	ASSERT_ERR(add(core, "alpha", "/not/a/netns", &e), -FLOWSDN_E_NL_NETNS, "netns that does not exist");
	fk.fail_setup = -FLOWSDN_E_NL_EXISTS;
	ASSERT_ERR(add(core, "alpha", "/fake/ns/1", &e), -FLOWSDN_E_NL_EXISTS, "veth setup fails");
	ASSERT_ERR(agent_core_add(core, &bad, &e, &d), -EINVAL, "invalid container id");
	ASSERT_OK(agent_core_ipam(core, s, 4, &n, &alloc, &n_alloc), "ipam");
	cr_assert_eq(n_alloc, 0, "failed ADDs released their addresses");
	free(alloc);
	cr_assert_eq(agent_core_endpoint_count(core), 0);
	/* The pools hold 5 IPv4 addresses (/29 less network, gateway,
	 * broadcast); the sixth ADD finds none. */
	for (int i = 0; i < 5; i++) {
		char cid[16], ns[32];

		snprintf(cid, sizeof(cid), "c%d", i);
		snprintf(ns, sizeof(ns), "/fake/ns/%d", 100 + i);
		ASSERT_OK(add(core, cid, ns, &e), cid);
	}
	ASSERT_ERR(add(core, "c9", "/fake/ns/109", &e), -FLOWSDN_E_IPAM_EXHAUSTED, "pool exhausted");
	cr_assert_eq(fk.setups, 5);
	agent_core_free(core);
}

Test(agent_core, del_gc_and_restore)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint a, b, c, *list = NULL;
	const char *ids[] = { "beta" }, *ifns[] = { "eth0" };
	struct agent_diag d = { { 0 } };
	size_t n = 0;

	ASSERT_OK(add(core, "alpha", "/fake/ns/1", &a), "ADD alpha");
	ASSERT_OK(add(core, "beta", "/fake/ns/2", &b), "ADD beta");
	ASSERT_OK(add(core, "gamma", "/fake/ns/3", &c), "ADD gamma");
	cr_assert_eq(agent_core_del(core, "alpha", "eth0", &d), 1, "DEL removes one");
	cr_assert_eq(agent_core_del(core, "alpha", "eth0", &d), 0, "DEL again: nothing, not an error");
	cr_assert(!fake_by_host(a.host_ifname), "alpha's veth is gone");
	cr_assert_eq(agent_core_gc(core, ids, ifns, 1, &d), 1, "GC keeps only beta");
	cr_assert(!fake_by_host(c.host_ifname), "gamma's veth is gone");
	agent_core_free(core);

	/* A restarted core adopts beta from the state directory. */
	core = core_start();
	cr_assert_eq(agent_core_endpoint_count(core), 1);
	ASSERT_OK(agent_core_endpoints(core, &list, &n), "list");
	cr_assert_eq(n, 1);
	ASSERT_STREQ(list[0].container_id, "beta", "restored");
	cr_assert_eq(list[0].id, b.id);
	cr_assert(flowsdn_addr_equal(&list[0].addrs[0], &b.addrs[0]));
	free(list);
	{
		struct agent_status st;

		agent_core_status(core, &st);
		cr_assert_eq(st.restored, 1);
		cr_assert(st.datapath);
		ASSERT_STREQ(st.datapath_mode, "fake", "mode");
	}
	agent_core_free(core);

	/* Beta's veth went while no core ran: the next one cleans up. */
	fake_by_host(b.host_ifname)->used = false;
	core = core_start();
	cr_assert_eq(agent_core_endpoint_count(core), 0, "an endpoint whose interface is gone is dropped");
	{
		struct flowsdn_ipam_pool_summary s[4];
		struct flowsdn_ipam_allocation *alloc = NULL;
		size_t np = 0, na = 9;

		ASSERT_OK(agent_core_ipam(core, s, 4, &np, &alloc, &na), "ipam");
		cr_assert_eq(na, 0, "its addresses are released");
		free(alloc);
	}
	agent_core_free(core);
}

Test(agent_core, queue_replay_at_start_and_on_demand)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint a, b;
	char *qdir = NULL, path[256];

	ASSERT_OK(add(core, "alpha", "/fake/ns/1", &a), "ADD alpha");
	ASSERT_OK(add(core, "beta", "/fake/ns/2", &b), "ADD beta");
	agent_core_free(core);

	snprintf(path, sizeof(path), "%s/state", dir);
	qdir = agent_api_queue_dir(path);
	cr_assert(qdir);
	cr_assert(mkdir(qdir, 0700) == 0);
	queue_del(qdir, "alpha");
	snprintf(path, sizeof(path), "%s/junk.json", qdir);
	write_text(path, "{not json");

	core = core_start();
	cr_assert_eq(agent_core_endpoint_count(core), 1, "the queued DEL ran at start");
	cr_assert(!fake_by_host(a.host_ifname));
	{
		struct agent_status st;

		agent_core_status(core, &st);
		cr_assert_eq(st.replayed, 1);
	}
	snprintf(path, sizeof(path), "%s/alpha.eth0.json", qdir);
	cr_assert(access(path, F_OK) < 0, "entry removed");
	snprintf(path, sizeof(path), "%s/junk.json", qdir);
	cr_assert(access(path, F_OK) < 0, "unreadable entry removed");

	queue_del(qdir, "beta");
	cr_assert_eq(agent_core_replay_queue(core), 1);
	cr_assert_eq(agent_core_endpoint_count(core), 0);
	cr_assert_eq(agent_core_replay_queue(core), 0, "nothing left");
	agent_core_free(core);
	free(qdir);
}

Test(agent_core, damaged_state_is_refused)
{
	struct agent_config *c = config(NULL);
	struct agent_core *core = NULL;
	char path[128];

	snprintf(path, sizeof(path), "%s/state", dir);
	cr_assert(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/state/endpoints.json", dir);
	write_text(path, "{\"version\":1,\"endpoints\":[{\"id\":1}]}");
	ASSERT_ERR(agent_core_new(c, &fake_ops, NULL, &core), -FLOWSDN_E_AGENT_STATE, "damaged endpoint");
	cr_assert_null(core);
	agent_config_free(c);
}

Test(agent_api, error_names_cover_every_code)
{
	static const struct {
		int lo, hi;
	} blocks[] = {
		{ FLOWSDN_E_AGENT_BASE, FLOWSDN_E_AGENT_MAX_ }, { FLOWSDN_E_NL_BASE, FLOWSDN_E_NL_MAX_ },
		{ FLOWSDN_E_IPAM_BASE, FLOWSDN_E_IPAM_MAX_ },   { FLOWSDN_E_BPF_BASE, FLOWSDN_E_BPF_MAX_ },
		{ FLOWSDN_E_CNI_BASE, FLOWSDN_E_CNI_MAX_ },     { FLOWSDN_E_BASE, FLOWSDN_E_ADDR_MAX_ },
	};

	for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
		for (int code = blocks[b].lo; code < blocks[b].hi; code++) {
			const char *name = agent_api_error_name(-code);

			cr_assert(name && !strncmp(name, "FLOWSDN_E_", 10), "code %d has no name", code);
			cr_assert_eq(agent_api_error_from_name(name), -code, "%s", name);
			cr_assert(strcmp(agent_api_strerror(-code), "unknown flowsdn error") != 0, "code %d", code);
		}
	}
	/* The node programs' own block: a distinct text for each code. */
	for (int code = FLOWSDN_E_AGENT_BASE; code < FLOWSDN_E_AGENT_MAX_; code++)
		for (int other = FLOWSDN_E_AGENT_BASE; other < code; other++)
			cr_assert(strcmp(agent_api_strerror(-code), agent_api_strerror(-other)) != 0, "%d and %d", code,
				  other);
	cr_assert_eq(FLOWSDN_E_AGENT_BASE, FLOWSDN_E_BASE + 800, "a block of the flowsdn range");
	cr_assert_eq(strcmp(flowsdn_strerror(-FLOWSDN_E_AGENT_STATE), "unknown flowsdn error"), 0,
		     "no library function returns it");
	ASSERT_STREQ(agent_api_error_name(-EINVAL), "EINVAL", "errno names");
	cr_assert_null(agent_api_error_name(-4999));
}

Test(agent_api, error_body_round_trip)
{
	struct json_value *root = NULL;
	char *json = NULL, msg[64];
	yajl_gen g = yajl_gen_alloc(NULL);
	size_t len;
	int err = 0;

	cr_assert(g);
	agent_api_error_gen(g, -FLOWSDN_E_IPAM_EXHAUSTED, "pool 10.0.0.0/30 is full");
	{
		const unsigned char *buf;

		cr_assert_eq(yajl_gen_get_buf(g, &buf, &len), yajl_gen_status_ok);
		json = strndup((const char *)buf, len);
	}
	yajl_gen_free(g);
	ASSERT_STREQ(json, "{\"error\":{\"code\":\"FLOWSDN_E_IPAM_EXHAUSTED\",\"number\":4100,"
			   "\"message\":\"pool 10.0.0.0/30 is full\"}}", "body");
	ASSERT_OK(json_parse(json, strlen(json), NULL, &root, NULL), json);
	ASSERT_OK(agent_api_error_parse(root, &err, msg, sizeof(msg)), "parse");
	cr_assert_eq(err, -FLOWSDN_E_IPAM_EXHAUSTED);
	ASSERT_STREQ(msg, "pool 10.0.0.0/30 is full", "message");
	json_free(root);
	free(json);
}
