/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent core in-process, without privileges: its kernel operations
 * are a fake (struct agent_ops) that records veths and datapath entries in
 * memory. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <flowsdn/cni.h>
#include <flowsdn/ipam.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif

#include "agent-api.h"
#include "util.h"
#include "conntrack.h"
#include "core.h"
#include "diag.h"
#include "diag-helpers.h"
#include "helpers.h"
#include "http-helpers.h"
#include "http.h"
#include "log.h"
#include "policy.h"

/* A time bound, stretched under valgrind (which runs threads one at a
 * time and every instruction 20-50 times slower). */
#ifdef RUNNING_ON_VALGRIND
#define BOUND_MS(ms) ((double)(ms) * (RUNNING_ON_VALGRIND ? 30 : 1))
#else
#define BOUND_MS(ms) ((double)(ms))
#endif

/* The fake kernel: a table of host interfaces. */
#define FAKE_MAX 64
struct fake_if {
	bool used, attached, published, accept_local;
	char host[16], ifname[16], netns[256];
	int ifindex;
	uint32_t flags; /* endpoint_info flags last published */
	unsigned int publishes;
};
struct fake {
	struct fake_if ifs[FAKE_MAX];
	int next_ifindex;
	unsigned int setups, teardowns;
	int fail_setup; /* error to return from the next veth_setup */
	unsigned int setup_sleep_ms, teardown_sleep_ms;
	/* veth_setup for this container id (the netns path) and teardowns
	 * wait until released */
	char block_netns[64];
	bool block_setups; /* every veth_setup */
	bool block_teardown;
	unsigned int blocked;
};

static struct fake fk;
static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fk_cond = PTHREAD_COND_INITIALIZER;

static void fake_release(void)
{
	pthread_mutex_lock(&fk_lock);
	fk.block_netns[0] = '\0';
	fk.block_setups = false;
	fk.block_teardown = false;
	pthread_cond_broadcast(&fk_cond);
	pthread_mutex_unlock(&fk_lock);
}

static unsigned int fake_blocked(void)
{
	unsigned int n;

	pthread_mutex_lock(&fk_lock);
	n = fk.blocked;
	pthread_mutex_unlock(&fk_lock);
	return n;
}
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
	/* The agent's own netns is /fake/ns/4242, the initial one 4243. */
	if (!strcmp(path, "/proc/self/ns/net") || !strcmp(path, "/proc/1/ns/net")) {
		*ret = path[6] == 's' ? 4242 : 4243;
		return 0;
	}
	if (strncmp(path, "/fake/ns/", 9) != 0)
		return -ENOENT;
	*ret = strtoull(path + 9, NULL, 10);
	return 0;
}

static int f_veth_setup_locked(const struct flowsdn_veth_config *cfg, struct flowsdn_veth *ret,
			       struct flowsdn_diag *err)
{
	if (fk.fail_setup) {
		int e = fk.fail_setup;

		fk.fail_setup = 0;
		/* A fake of libflowsdn: its diag is the common engine's. */
		diag_add_text((struct diag *)err, DIAG_ERROR, "", "netlink", NULL, "fake: setup fails");
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
		f->accept_local = cfg->host_accept_local;
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

static int f_veth_setup(void *ctx, const struct flowsdn_veth_config *cfg, struct flowsdn_veth *ret,
			struct flowsdn_diag *err)
{
	int r;

	(void)ctx;
	if (fk.setup_sleep_ms)
		usleep(fk.setup_sleep_ms * 1000);
	pthread_mutex_lock(&fk_lock);
	while (fk.block_setups || (fk.block_netns[0] && !strcmp(fk.block_netns, cfg->netns_path))) {
		fk.blocked++;
		pthread_cond_wait(&fk_cond, &fk_lock);
		fk.blocked--;
	}
	r = f_veth_setup_locked(cfg, ret, err);
	pthread_mutex_unlock(&fk_lock);
	return r;
}

static int f_veth_teardown(void *ctx, const char *host, const struct flowsdn_addr *a, size_t n,
			   struct flowsdn_diag *err)
{
	struct fake_if *f;

	(void)ctx, (void)a, (void)n, (void)err;
	if (fk.teardown_sleep_ms)
		usleep(fk.teardown_sleep_ms * 1000);
	pthread_mutex_lock(&fk_lock);
	while (fk.block_teardown) {
		fk.blocked++;
		pthread_cond_wait(&fk_cond, &fk_lock);
		fk.blocked--;
	}
	f = fake_by_host(host);
	if (f) {
		f->used = false;
		fk.teardowns++;
	}
	pthread_mutex_unlock(&fk_lock);
	return 0;
}

static int f_endpoint_check_unlocked(void *ctx, const struct flowsdn_endpoint_iface *iface, struct flowsdn_diag *err)
{
	struct fake_if *f = fake_by_index(iface->host_ifindex);

	(void)ctx;
	if (!f || strcmp(f->host, iface->host_ifname) != 0) {
		diag_add_text((struct diag *)err, DIAG_ERROR, "", "netlink", NULL, "fake: %s is gone", iface->host_ifname);
		return -FLOWSDN_E_NL_NOT_FOUND;
	}
	return 0;
}

static int f_endpoint_check(void *ctx, const struct flowsdn_endpoint_iface *iface, struct flowsdn_diag *err)
{
	int r;

	pthread_mutex_lock(&fk_lock);
	r = f_endpoint_check_unlocked(ctx, iface, err);
	pthread_mutex_unlock(&fk_lock);
	return r;
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

static int f_dp_attach_unlocked(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	struct fake_if *f = fake_by_index(ifindex);

	(void)ctx, (void)dp;
	if (!f)
		return -ENODEV;
	f->attached = true;
	return 0;
}

static int f_dp_attach(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	int r;

	pthread_mutex_lock(&fk_lock);
	r = f_dp_attach_unlocked(ctx, dp, ifindex);
	pthread_mutex_unlock(&fk_lock);
	return r;
}

static int f_dp_detach_unlocked(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	struct fake_if *f = fake_by_index(ifindex);

	(void)ctx, (void)dp;
	if (f)
		f->attached = false;
	return 0;
}

static int f_dp_detach(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	int r;

	pthread_mutex_lock(&fk_lock);
	r = f_dp_detach_unlocked(ctx, dp, ifindex);
	pthread_mutex_unlock(&fk_lock);
	return r;
}

static int f_dp_is_attached_unlocked(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	struct fake_if *f = fake_by_index(ifindex);

	(void)ctx, (void)dp;
	return f && f->attached;
}

static int f_dp_is_attached(void *ctx, struct flowsdn_datapath *dp, int ifindex)
{
	int r;

	pthread_mutex_lock(&fk_lock);
	r = f_dp_is_attached_unlocked(ctx, dp, ifindex);
	pthread_mutex_unlock(&fk_lock);
	return r;
}

static int f_dp_adopt(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint_iface *iface)
{
	if (f_endpoint_check(ctx, iface, NULL) < 0)
		return -FLOWSDN_E_BPF_IFACE_MISMATCH;
	return f_dp_attach(ctx, dp, iface->host_ifindex);
}

static int f_dp_publish_unlocked(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep)
{
	struct fake_if *f = fake_by_index(ep->host_ifindex);

	(void)ctx, (void)dp;
	if (!f)
		return -ENODEV;
	f->published = true;
	f->flags = ep->flags;
	f->publishes++;
	return 0;
}

static int f_dp_publish(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep)
{
	int r;

	pthread_mutex_lock(&fk_lock);
	r = f_dp_publish_unlocked(ctx, dp, ep);
	pthread_mutex_unlock(&fk_lock);
	return r;
}

static int f_dp_flags(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep, uint32_t mask,
		      uint32_t flags)
{
	struct fake_if *f;
	int r = 0;

	(void)ctx, (void)dp;
	pthread_mutex_lock(&fk_lock);
	f = fake_by_index(ep->host_ifindex);
	if (!f || !f->published)
		r = -ENOENT;
	else
		f->flags = (f->flags & ~mask) | flags;
	pthread_mutex_unlock(&fk_lock);
	return r;
}

/* Uplinks the core attached (names, ports); "down*" ones fail. */
static char uplink_names[4][16];
static unsigned int n_uplink_calls;
static uint16_t uplink_ports[2];

static int f_dp_uplink_attach(void *ctx, struct flowsdn_datapath *dp, const char *ifname, uint16_t port_min,
			      uint16_t port_max)
{
	(void)ctx, (void)dp;
	if (n_uplink_calls < 4)
		snprintf(uplink_names[n_uplink_calls], sizeof(uplink_names[0]), "%s", ifname);
	n_uplink_calls++;
	uplink_ports[0] = port_min;
	uplink_ports[1] = port_max;
	return strncmp(ifname, "down", 4) ? 0 : -ENODEV;
}

static int f_dp_remove_unlocked(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep)
{
	struct fake_if *f = fake_by_index(ep->host_ifindex);

	(void)ctx, (void)dp;
	if (f)
		f->published = false;
	return 0;
}

static int f_dp_remove(void *ctx, struct flowsdn_datapath *dp, const struct flowsdn_endpoint *ep)
{
	int r;

	pthread_mutex_lock(&fk_lock);
	r = f_dp_remove_unlocked(ctx, dp, ep);
	pthread_mutex_unlock(&fk_lock);
	return r;
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
	.dp_flags = f_dp_flags,
	.dp_uplink_attach = f_dp_uplink_attach,
	.dp_remove = f_dp_remove,
};

static struct agent_config *config_extra(const char *pools, const char *extra)
{
	struct agent_config *c = NULL;
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	char *json = NULL;

	cr_assert(asprintf(&json, "{\"socket\":\"%s/sock\",\"state-dir\":\"%s/state\",\"pools\":%s%s}", dir, dir,
			   pools ? pools : "[\"10.9.0.0/29\",\"fd00:9::/125\"]", extra) > 0);
	ASSERT_OK(agent_config_parse(json, strlen(json), &c, d), test_engine_text(d));
	free(json);
	return c;
}

static struct agent_config *config(const char *pools)
{
	return config_extra(pools, "");
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
	/* The agent closes connections: writes to them must not kill us. */
	signal(SIGPIPE, SIG_IGN);
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
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();

	return agent_core_add(core, &rq, ep, d);
}

TestSuite(agent_core, .init = setup, .fini = teardown);

Test(agent_core, second_add_is_an_error_and_check_sees_the_kernel)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint a, b, c;
	struct agent_request rq = { .container_id = "alpha", .ifname = "eth0", .netns = "/fake/ns/11" };
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();

	ASSERT_OK(add(core, "alpha", "/fake/ns/11", &a), "ADD");
	cr_assert_eq(a.n_addrs, 2, "one address per family");
	cr_assert_eq(a.prefix_len[0], 32);
	cr_assert_eq(a.prefix_len[1], 128);
	cr_assert_eq(a.netns_ino, 11);
	cr_assert(fake_by_host(a.host_ifname) && fake_by_host(a.host_ifname)->attached &&
		  fake_by_host(a.host_ifname)->published, "veth made, datapath attached and published");
	/* CNI: a second ADD of an owner (without DEL) is an error, and one
	 * naming another netns leaves the live endpoint alone. */
	ASSERT_ERR(add(core, "alpha", "/fake/ns/11", &b), -FLOWSDN_E_AGENT_EXISTS, "ADD again");
	ASSERT_ERR(add(core, "alpha", "/fake/ns/12", &b), -FLOWSDN_E_AGENT_EXISTS, "ADD again, another netns");
	cr_assert_eq(fk.setups, 1, "no second veth");
	cr_assert_eq(fk.teardowns, 0, "the live endpoint was not torn down");
	cr_assert_eq(agent_core_endpoint_count(core), 1);

	ASSERT_OK(agent_core_check(core, &rq, &c, d), agent_diag_message(d));
	rq.netns = "/fake/ns/12";
	ASSERT_ERR(agent_core_check(core, &rq, &c, d), -FLOWSDN_E_NL_MISMATCH, "CHECK in another netns");
	rq.netns = "/fake/ns/11";
	fake_by_host(a.host_ifname)->attached = false;
	ASSERT_ERR(agent_core_check(core, &rq, &c, d), -FLOWSDN_E_BPF_ATTACH, "CHECK without the datapath");
	fake_by_host(a.host_ifname)->used = false;
	ASSERT_ERR(agent_core_check(core, &rq, &c, d), -FLOWSDN_E_NL_NOT_FOUND, "CHECK with the veth gone");
	rq.container_id = "nobody";
	ASSERT_ERR(agent_core_check(core, &rq, &c, d), -FLOWSDN_E_AGENT_NOT_FOUND, "CHECK of an unknown owner");
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
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();

	ASSERT_ERR(add(core, "alpha", "/not/a/netns", &e), -FLOWSDN_E_NL_NETNS, "netns that does not exist");
	fk.fail_setup = -FLOWSDN_E_NL_EXISTS;
	ASSERT_ERR(add(core, "alpha", "/fake/ns/1", &e), -FLOWSDN_E_NL_EXISTS, "veth setup fails");
	ASSERT_ERR(agent_core_add(core, &bad, &e, d), -EINVAL, "invalid container id");
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
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	size_t n = 0;

	ASSERT_OK(add(core, "alpha", "/fake/ns/1", &a), "ADD alpha");
	ASSERT_OK(add(core, "beta", "/fake/ns/2", &b), "ADD beta");
	ASSERT_OK(add(core, "gamma", "/fake/ns/3", &c), "ADD gamma");
	cr_assert_eq(agent_core_del(core, "alpha", "eth0", 0, d), 1, "DEL removes one");
	cr_assert_eq(agent_core_del(core, "alpha", "eth0", 0, d), 0, "DEL again: nothing, not an error");
	agent_core_flush(core);
	cr_assert(!fake_by_host(a.host_ifname), "alpha's veth is gone");
	cr_assert_eq(agent_core_gc(core, ids, ifns, 1, 0, d), 1, "GC keeps only beta");
	agent_core_flush(core);
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

/* issue 13: the entry name "<id>.<ifname>.json" of a 255-byte id is 265
 * bytes, over NAME_MAX, so an offline DEL of such an owner could not be
 * queued.  Long owners get "<prefix>~<hash>.json"; two ids that share the
 * prefix get different entries, and the agent replays both. */
Test(agent_core, queue_entries_of_the_longest_ids)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint a, b;
	char id_a[256], id_b[256], path[1024];
	_cleanup_free_ char *qdir = NULL, *na = NULL, *nb = NULL;

	memset(id_a, 'x', 255);
	id_a[255] = '\0';
	memcpy(id_b, id_a, sizeof(id_b));
	id_b[254] = 'y';
	ASSERT_OK(add(core, id_a, "/fake/ns/1", &a), "ADD a 255-byte id");
	ASSERT_OK(add(core, id_b, "/fake/ns/2", &b), "ADD another");
	agent_core_free(core);

	na = agent_api_queue_entry_name(id_a, "eth0");
	nb = agent_api_queue_entry_name(id_b, "eth0");
	cr_assert(na && nb);
	cr_assert_leq(strlen(na), NAME_MAX, "%zu bytes", strlen(na));
	cr_assert_str_neq(na, nb, "ids sharing a prefix get their own entries");
	cr_assert(strstr(na, ".json") && na[strlen(na) - 5] == '.', "%s", na);
	{
		_cleanup_free_ char *shorter = agent_api_queue_entry_name("c1", "eth0");

		ASSERT_STREQ(shorter, "c1.eth0.json", "short owners keep the plain name");
	}
	snprintf(path, sizeof(path), "%s/state", dir);
	qdir = agent_api_queue_dir(path);
	cr_assert(qdir);
	/* As the plugin writes them (cni/queue.c): the owner body under the
	 * entry name. */
	for (int k = 0; k < 2; k++) {
		_cleanup_free_ char *body = NULL;

		ASSERT_OK(agent_api_owner_body(k ? id_b : id_a, "eth0", NULL, 0, &body), "body");
		snprintf(path, sizeof(path), "%s/%s", qdir, k ? nb : na);
		write_text(path, body);
	}
	snprintf(path, sizeof(path), "%s/%s", qdir, na);

	core = core_start();
	cr_assert_eq(agent_core_endpoint_count(core), 0, "both queued DELs ran at start");
	cr_assert(access(path, F_OK) < 0, "entry consumed");
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
	/* The agent made and marked its queue at start (the plugin writes
	 * into a configured queueDir only when so marked). */
	{
		char mark[300];
		struct stat st;

		snprintf(mark, sizeof(mark), "%s/" AGENT_API_QUEUE_MARKER, qdir);
		cr_assert(lstat(qdir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700, "queue dir");
		cr_assert(lstat(mark, &st) == 0 && S_ISREG(st.st_mode), "queue marker %s", mark);
	}
	queue_del(qdir, "alpha");
	snprintf(path, sizeof(path), "%s/junk.json", qdir);
	write_text(path, "{not json");

	core = core_start();
	cr_assert_eq(agent_core_endpoint_count(core), 1, "the queued DEL ran at start");
	agent_core_flush(core);
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
	struct json_writer *g = json_writer_new(0);
	size_t len;
	int err = 0;

	cr_assert(g);
	agent_api_error_gen(g, -FLOWSDN_E_IPAM_EXHAUSTED, "pool 10.0.0.0/30 is full");
	ASSERT_OK(json_writer_finish(g, &json, &len), "finish");
	cr_assert_eq(len, strlen(json));
	ASSERT_STREQ(json, "{\"error\":{\"code\":\"FLOWSDN_E_IPAM_EXHAUSTED\",\"number\":4100,"
			   "\"message\":\"pool 10.0.0.0/30 is full\"}}", "body");
	ASSERT_OK(json_parse(json, strlen(json), NULL, &root, NULL), json);
	ASSERT_OK(agent_api_error_parse(root, &err, msg, sizeof(msg)), "parse");
	cr_assert_eq(err, -FLOWSDN_E_IPAM_EXHAUSTED);
	ASSERT_STREQ(msg, "pool 10.0.0.0/30 is full", "message");
	json_free(root);
	free(json);
}

/* --------------------------------------------------- issue 13 items */

struct adder {
	struct agent_core *core;
	char cid[16], netns[32];
	int64_t deadline_ms;
	int err;
	double ms;
	pthread_t t;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *adder_main(void *arg)
{
	struct adder *x = arg;
	struct agent_request rq = { .container_id = x->cid, .ifname = "eth0", .netns = x->netns,
				    .deadline_ms = x->deadline_ms };
	struct agent_api_endpoint e;
	struct diag *d = NULL; /* no criterion assertion in this thread */
	double t0 = now_ms();

	if (diag_new(&d) < 0)
		d = NULL;
	x->err = agent_core_add(x->core, &rq, &e, d);
	x->ms = now_ms() - t0;
	diag_free(d);
	return NULL;
}

static void adder_start(struct adder *x, struct agent_core *core, const char *cid, int ns, int64_t deadline_ms)
{
	x->core = core;
	snprintf(x->cid, sizeof(x->cid), "%s", cid);
	snprintf(x->netns, sizeof(x->netns), "/fake/ns/%d", ns);
	x->deadline_ms = deadline_ms;
	cr_assert_eq(pthread_create(&x->t, NULL, adder_main, x), 0);
}

static void wait_blocked(unsigned int n)
{
	for (int i = 0; i < 5000 && fake_blocked() < n; i++)
		usleep(2000);
	cr_assert_eq(fake_blocked(), n, "kernel calls blocked");
}

/* Item 13: no global lock across kernel calls: four ADDs of different
 * owners are inside their veth setup at the same time. */
Test(agent_core, parallel_adds_overlap)
{
	struct agent_core *core = core_start();
	struct adder x[4];

	fk.block_setups = true;
	for (int i = 0; i < 4; i++) {
		char cid[16];

		snprintf(cid, sizeof(cid), "par%d", i);
		adder_start(&x[i], core, cid, 20 + i, 0);
	}
	wait_blocked(4);
	fake_release();
	for (int i = 0; i < 4; i++) {
		pthread_join(x[i].t, NULL);
		ASSERT_OK(x[i].err, x[i].cid);
	}
	cr_assert_eq(agent_core_endpoint_count(core), 4);
	agent_core_free(core);
}

/* Items 1 and 13: an ADD stuck in the kernel holds no lock others need. */
Test(agent_core, stuck_add_blocks_nobody_else)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint e;
	struct agent_status st;
	struct adder stuck;
	double t0;

	snprintf(fk.block_netns, sizeof(fk.block_netns), "/fake/ns/30");
	adder_start(&stuck, core, "stuck", 30, 0);
	wait_blocked(1);
	t0 = now_ms();
	ASSERT_OK(add(core, "other", "/fake/ns/31", &e), "ADD of another owner");
	agent_core_status(core, &st);
	cr_assert_eq(st.endpoints, 1, "the stuck one is not reported yet");
	cr_assert_eq(agent_core_del(core, "other", "eth0", 0, NULL), 1, "DEL");
	cr_assert_lt(now_ms() - t0, BOUND_MS(100), "others waited for the stuck ADD");
	fake_release();
	pthread_join(stuck.t, NULL);
	ASSERT_OK(stuck.err, "the stuck ADD finishes");
	agent_core_free(core);
}

/* Item 2: an operation waiting for its owner is not started past its
 * deadline; a queued DEL comes before a later ADD of its owner. */
Test(agent_core, deadlines_and_order)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint e;
	struct agent_request rq = { .container_id = "late", .ifname = "eth0", .netns = "/fake/ns/40",
				    .deadline_ms = util_mono_ms() - 1 };
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	struct adder first, second;
	char qdir[128], *q;

	ASSERT_ERR(agent_core_add(core, &rq, &e, d), -FLOWSDN_E_AGENT_DEADLINE, "deadline already past");
	cr_assert(strstr(agent_diag_message(d), "deadline"), "%s", agent_diag_message(d));
	cr_assert_eq(fk.setups, 0, "nothing started");
	ASSERT_ERR(agent_core_gc(core, NULL, NULL, 0, util_mono_ms() - 1, d), -FLOWSDN_E_AGENT_DEADLINE,
		   "an abandoned GC");

	/* The first ADD of "slow" is stuck; a second ADD of the same owner
	 * with a 50 ms deadline gives up and never runs. */
	snprintf(fk.block_netns, sizeof(fk.block_netns), "/fake/ns/41");
	adder_start(&first, core, "slow", 41, 0);
	wait_blocked(1);
	adder_start(&second, core, "slow", 42, util_mono_ms() + 50);
	pthread_join(second.t, NULL);
	ASSERT_ERR(second.err, -FLOWSDN_E_AGENT_DEADLINE, "stale ADD refused");
	cr_assert_lt(second.ms, BOUND_MS(200), "gave up at its deadline (%.1f ms)", second.ms);
	fake_release();
	pthread_join(first.t, NULL);
	ASSERT_OK(first.err, "first ADD");
	cr_assert_eq(fk.setups, 1, "the stale ADD made nothing");

	/* A DEL queued for "slow" (the plugin could not reach us) is applied
	 * before the next ADD of that owner, which then succeeds. */
	snprintf(qdir, sizeof(qdir), "%s/state", dir);
	q = agent_api_queue_dir(qdir);
	cr_assert(q);
	/* The agent made (and marked) its queue directory at start. */
	cr_assert(access(q, W_OK) == 0, "queue directory %s", q);
	queue_del(q, "slow");
	ASSERT_OK(add(core, "slow", "/fake/ns/43", &e), "ADD after a queued DEL");
	ASSERT_STREQ(e.netns, "/fake/ns/43", "the new endpoint");
	cr_assert_eq(agent_core_replay_queue(core), 0, "the entry was consumed, not replayed later");
	cr_assert_eq(agent_core_endpoint_count(core), 1, "the new endpoint stays");
	free(q);
	agent_core_free(core);
}

/* Item 7: the agent's own and the initial netns are not a container's. */
Test(agent_core, own_netns_refused)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint e;

	ASSERT_ERR(add(core, "own", "/fake/ns/4242", &e), -FLOWSDN_E_AGENT_HOST_NETNS, "agent's netns");
	ASSERT_ERR(add(core, "init", "/fake/ns/4243", &e), -FLOWSDN_E_AGENT_HOST_NETNS, "initial netns");
	cr_assert_eq(fk.setups, 0);
	agent_core_free(core);
}

/* Item 15: DEL answers once the endpoint is unpublished and saved; the
 * veth goes later, and its addresses stay taken until then. */
Test(agent_core, del_answers_before_the_veth_goes)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint a, b;
	struct flowsdn_ipam_pool_summary s[4];
	struct flowsdn_ipam_allocation *alloc = NULL;
	size_t np = 0, na = 0;
	char path[128], *data = NULL;
	size_t len;
	double t0;

	ASSERT_OK(add(core, "alpha", "/fake/ns/50", &a), "ADD");
	snprintf(path, sizeof(path), "%s/state/endpoints.json", dir);
	ASSERT_OK(util_read_file(path, 1 << 20, &data, &len), "state written by the ADD");
	cr_assert(strstr(data, "\"containerID\":\"alpha\""), "%s", data);
	free(data);

	fk.block_teardown = true;
	t0 = now_ms();
	cr_assert_eq(agent_core_del(core, "alpha", "eth0", 0, NULL), 1);
	cr_assert_lt(now_ms() - t0, BOUND_MS(100), "DEL waited for the veth");
	wait_blocked(1);
	cr_assert(!fake_by_host(a.host_ifname)->published, "unpublished before the answer");
	ASSERT_OK(util_read_file(path, 1 << 20, &data, &len), "state");
	cr_assert(strstr(data, "\"deleting\":[{"), "saved as deleting: %s", data);
	free(data);
	ASSERT_OK(agent_core_ipam(core, s, 4, &np, &alloc, &na), "ipam");
	cr_assert_eq(na, 2, "alpha's addresses are held while its veth exists");
	free(alloc);
	ASSERT_OK(add(core, "beta", "/fake/ns/51", &b), "ADD meanwhile");
	cr_assert(!flowsdn_addr_equal(&a.addrs[0], &b.addrs[0]), "alpha's address is not handed out again");
	fake_release();
	agent_core_flush(core);
	cr_assert(!fake_by_host(a.host_ifname), "veth gone");
	ASSERT_OK(agent_core_ipam(core, s, 4, &np, &alloc, &na), "ipam");
	cr_assert_eq(na, 2, "only beta's addresses now");
	free(alloc);
	agent_core_free(core);
}

/* Item 4: saved state is reconciled with IPAM at restore: conflicting
 * endpoints are refused, never a second owner of an address, and the
 * agent goes on adding pods. */
Test(agent_core, restore_reconciles_with_ipam)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint a, b, c, *list = NULL;
	char path[128], *data = NULL, *edited, *p;
	size_t len, n = 0;
	struct agent_status st;

	ASSERT_OK(add(core, "alpha", "/fake/ns/60", &a), "ADD alpha");
	ASSERT_OK(add(core, "beta", "/fake/ns/61", &b), "ADD beta");
	agent_core_free(core);
	snprintf(path, sizeof(path), "%s/state/endpoints.json", dir);
	ASSERT_OK(util_read_file(path, 1 << 20, &data, &len), "state");
	/* Hand-edited: beta claims alpha's IPv4 address. */
	{
		char a4[FLOWSDN_ADDR_STRLEN], b4[FLOWSDN_ADDR_STRLEN];

		flowsdn_addr_format(&a.addrs[0], a4, sizeof(a4));
		flowsdn_addr_format(&b.addrs[0], b4, sizeof(b4));
		edited = strdup(data);
		p = strstr(edited, b4);
		cr_assert(p && strlen(a4) == strlen(b4), "%s", edited);
		memcpy(p, a4, strlen(a4));
	}
	write_text(path, edited);
	core = core_start();
	agent_core_status(core, &st);
	cr_assert_eq(st.restored, 1, "alpha adopted");
	cr_assert_eq(st.refused, 1, "beta refused");
	cr_assert(!st.state_ok, "reported as degraded");
	ASSERT_OK(agent_core_endpoints(core, &list, &n), "list");
	cr_assert_eq(n, 1);
	ASSERT_STREQ(list[0].container_id, "alpha", "the first owner keeps the address");
	free(list);
	cr_assert(fake_by_host(a.host_ifname), "alpha's veth stays");
	cr_assert(!fake_by_host(b.host_ifname), "beta's veth was removed");
	ASSERT_OK(add(core, "gamma", "/fake/ns/62", &c), "the agent still adds pods");
	cr_assert(!flowsdn_addr_equal(&c.addrs[0], &a.addrs[0]), "never a second owner");
	agent_core_free(core);

	/* Duplicate ids and addresses outside every pool are refused too. */
	free(edited);
	edited = strdup(data);
	p = strstr(edited, "\"id\":2,");
	cr_assert(p, "%s", edited);
	p[5] = '1';
	write_text(path, edited);
	core = core_start();
	agent_core_status(core, &st);
	cr_assert_eq(st.refused, 1, "duplicate id");
	agent_core_free(core);
	free(edited);

	/* The same owner twice (copied whole): the second is refused and the
	 * interface they share stays. */
	p = strstr(data, "\"containerID\":\"beta\"");
	cr_assert(p, "%s", data);
	cr_assert(asprintf(&edited, "%.*s\"containerID\":\"alpha\"%s", (int)(p - data), data,
			   p + strlen("\"containerID\":\"beta\"")) > 0);
	p = strstr(edited, b.host_ifname);
	cr_assert(p, "%s", edited);
	memcpy(p, a.host_ifname, strlen(a.host_ifname));
	write_text(path, edited);
	core = core_start();
	agent_core_status(core, &st);
	cr_assert_eq(st.refused, 1, "duplicate owner: %s", edited);
	cr_assert_eq(st.endpoints, 1);
	cr_assert(fake_by_host(a.host_ifname), "the shared interface stays");
	agent_core_free(core);
	free(edited);
	free(data);
}

Test(agent_core, restore_refuses_addresses_outside_the_pools)
{
	struct agent_core *core = core_start();
	struct agent_config *c2 = config("[\"10.19.0.0/29\",\"fd00:9::/125\"]");
	struct agent_api_endpoint a;
	struct agent_status st;

	ASSERT_OK(add(core, "alpha", "/fake/ns/70", &a), "ADD");
	agent_core_free(core);
	/* The IPv4 pool changed: alpha's address is in none. */
	ASSERT_OK(agent_core_new(c2, &fake_ops, NULL, &core), "core");
	agent_core_status(core, &st);
	cr_assert_eq(st.refused, 1);
	cr_assert_eq(st.endpoints, 0);
	agent_core_free(core);
	agent_config_free(c2);
}

/* Items 1 and 3: a FIFO named as a netns is refused at once, without
 * blocking in open() (the real kernel operations, no privileges needed). */
Test(agent_core, fifo_netns_does_not_block)
{
	char fifo[128];
	uint64_t ino = 0;
	double t0;

	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert(mkfifo(fifo, 0600) == 0);
	t0 = now_ms();
	ASSERT_ERR(agent_ops_kernel.netns_ino(NULL, fifo, &ino), -FLOWSDN_E_NL_NETNS, "FIFO");
	ASSERT_ERR(agent_ops_kernel.netns_ino(NULL, "/dev/null", &ino), -FLOWSDN_E_NL_NETNS, "device");
	ASSERT_ERR(agent_ops_kernel.netns_ino(NULL, dir, &ino), -FLOWSDN_E_NL_NETNS, "directory");
	cr_assert_lt(now_ms() - t0, BOUND_MS(100));
	ASSERT_OK(agent_ops_kernel.netns_ino(NULL, "/proc/self/ns/net", &ino), "a netns");
	cr_assert_gt(ino, 0);
}

/* ------------------------------------------------------------- HTTP */

static int sock_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	cr_assert(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s: %s", path, strerror(errno));
	return fd;
}

/* Sends @len bytes of @req and returns the status of the answer (0: none). */
static int http_raw(const char *sock, const char *req, size_t len, char *out, size_t out_size)
{
	return test_http_exchange(sock_connect(sock), req, len, out, out_size);
}

static double healthz_ms(const char *sock, int *status)
{
	static const char req[] = "GET /v1/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char out[2048];
	double t0 = now_ms();

	*status = http_raw(sock, req, sizeof(req) - 1, out, sizeof(out));
	return now_ms() - t0;
}

TestSuite(agent_http, .init = setup, .fini = teardown);

struct served {
	struct agent_core *core;
	struct agent_http *http;
	char sock[128];
};

static void serve(struct served *s)
{
	s->core = core_start();
	ASSERT_OK(agent_http_start(s->core, &s->http), "http");
	snprintf(s->sock, sizeof(s->sock), "%s", agent_core_config(s->core)->socket);
}

static void unserve(struct served *s)
{
	agent_http_stop(s->http);
	agent_core_free(s->core);
}

/* Item 9: duplicate Content-Length and a NUL in the path are 400. */
/* ---------------------------------------------------------- conntrack */

Test(agent_conf, conntrack_keys_defaults_ranges_and_output)
{
	struct agent_config *c = NULL;
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	char *json = NULL;
	const char *good = "{\"conntrack-max\":4096,\"conntrack-gc-interval-seconds\":5,"
			   "\"conntrack-timeout-tcp-seconds\":3600,\"conntrack-timeout-udp-seconds\":20,"
			   "\"conntrack-timeout-icmp-seconds\":7}";
	const char *bad = "{\"conntrack-max\":10}";

	ASSERT_OK(agent_config_new(&c), "defaults");
	cr_assert(c->ct_max == FLOWSDN_CT_DEFAULT_MAX && c->ct_gc_interval_s == 30, "default size and interval");
	cr_assert(c->ct_timeouts.tcp == 21600 && c->ct_timeouts.tcp_syn == 60 && c->ct_timeouts.tcp_close == 10 &&
			  c->ct_timeouts.udp == 60 && c->ct_timeouts.udp_replied == 180 && c->ct_timeouts.icmp == 30,
		  "default timeouts");
	agent_config_free(c);
	c = NULL;
	ASSERT_OK(agent_config_parse(good, strlen(good), &c, d), test_engine_text(d));
	cr_assert(c->ct_max == 4096 && c->ct_gc_interval_s == 5 && c->ct_timeouts.tcp == 3600 &&
			  c->ct_timeouts.udp == 20 && c->ct_timeouts.icmp == 7 && c->ct_timeouts.udp_replied == 180,
		  "parsed");
	ASSERT_OK(agent_config_format(c, &json), "format");
	cr_assert(strstr(json, "\"conntrack-max\": 4096") && strstr(json, "\"conntrack-timeout-udp-seconds\": 20"),
		  "formatted: %s", json);
	free(json);
	agent_config_free(c);
	c = NULL;
	cr_assert(agent_config_parse(bad, strlen(bad), &c, d) == -FLOWSDN_E_AGENT_CONFIG, "conntrack-max 10 refused");
	cr_assert(c == NULL);
	cr_assert(strstr(test_engine_text(d), "conntrack-max"), "names the key: %s", test_engine_text(d));
}

static int gc_calls;
static pthread_mutex_t gc_lock = PTHREAD_MUTEX_INITIALIZER;

static int f_dp_ct_gc(void *ctx, struct flowsdn_datapath *dp, size_t *ret_removed)
{
	(void)ctx;
	(void)dp;
	pthread_mutex_lock(&gc_lock);
	gc_calls++;
	pthread_mutex_unlock(&gc_lock);
	*ret_removed = 3;
	return 0;
}

Test(agent_conntrack, collector_runs_on_its_interval_and_on_demand, .timeout = 20)
{
	struct agent_ops ops = fake_ops;
	struct agent_ct *ct = NULL;
	struct agent_ct_status st;
	size_t removed = 0;
	int calls;

	ops.dp_ct_gc = f_dp_ct_gc;
	ASSERT_ERR(agent_ct_start(&fake_ops, NULL, (struct flowsdn_datapath *)&ops, 1, &ct), -EINVAL,
		   "ops without a collector");
	ASSERT_ERR(agent_ct_start(&ops, NULL, (struct flowsdn_datapath *)&ops, 0, &ct), -EINVAL, "interval 0");
	cr_assert(ct == NULL);
	ASSERT_OK(agent_ct_start(&ops, NULL, (struct flowsdn_datapath *)&ops, 1, &ct), "start");
	ASSERT_OK(agent_ct_run(ct, &removed), "a pass now");
	cr_assert(removed == 3);
	for (int i = 0; i < 50; i++) {
		pthread_mutex_lock(&gc_lock);
		calls = gc_calls;
		pthread_mutex_unlock(&gc_lock);
		if (calls >= 2)
			break;
		usleep(100 * 1000);
	}
	cr_assert(calls >= 2, "the thread ran a pass within 5 s (%d calls)", calls);
	agent_ct_status(ct, &st);
	cr_assert(st.runs >= 2 && st.removed >= 6 && st.last_err == 0, "runs %llu removed %llu",
		  (unsigned long long)st.runs, (unsigned long long)st.removed);
	agent_ct_stop(ct);
}

Test(agent_http, malformed_heads_are_400)
{
	static const char dup_cl[] = "POST /v1/cni/del HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
				     "Content-Length: 40\r\n\r\n{}";
	static const char nul[] = "GET /v1/healthz\0x HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char ok[] = "GET /v1/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct served s;
	char out[4096];

	serve(&s);
	cr_assert_eq(http_raw(s.sock, dup_cl, sizeof(dup_cl) - 1, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "Content-Length"), "%s", out);
	cr_assert(strstr(out, "\"number\":4806"), "the domain code: %s", out);
	cr_assert_eq(http_raw(s.sock, nul, sizeof(nul) - 1, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "NUL"), "%s", out);
	cr_assert_eq(http_raw(s.sock, ok, sizeof(ok) - 1, out, sizeof(out)), 200, "%s", out);
	unserve(&s);
}

/* Item 5: 64 clients sending one header byte every 100 ms, and a request
 * stuck in the kernel, keep neither healthz nor DEL from answering. */
Test(agent_http, slow_clients_and_stuck_requests_do_not_lock_out_the_api, .timeout = 30)
{
	enum { SLOW = 64 };
	static const char partial[] = "POST /v1/cni/add HTTP/1.1\r\nHost: x\r\nX-Slow: ";
	static const char del[] = "POST /v1/cni/del HTTP/1.1\r\nHost: x\r\nContent-Length: 38\r\n"
				  "Connection: close\r\n\r\n{\"containerID\":\"gone\",\"ifname\":\"eth0\"}";
	struct served s;
	int fds[SLOW], status;
	char out[4096], body[160], req[512];
	double worst = 0;

	serve(&s);
	for (int i = 0; i < SLOW; i++) {
		fds[i] = sock_connect(s.sock);
		cr_assert_eq(write(fds[i], partial, 10), 10);
	}
	for (int round = 0; round < 10; round++) {
		double ms;

		for (int i = 0; i < SLOW; i++)
			(void)!write(fds[i], partial + 10 + (round % 20), 1);
		ms = healthz_ms(s.sock, &status);
		cr_assert_eq(status, 200, "healthz with %d slow clients", SLOW);
		worst = ms > worst ? ms : worst;
		usleep(100000);
	}
	/* A server held up by them would answer only when their heads time
	 * out (2 s after they connected, over 1 s before the last round);
	 * 500 ms leaves a machine loaded by a parallel make check (one run
	 * at load average 8.7 went past 100 ms) room without letting that
	 * through. */
	cr_assert_lt(worst, BOUND_MS(500), "healthz took %.1f ms with %d slow clients", worst, SLOW);
	cr_assert_eq(http_raw(s.sock, del, sizeof(del) - 1, out, sizeof(out)), 200, "DEL: %s", out);
	for (int i = 0; i < SLOW; i++)
		close(fds[i]);

	/* An ADD stuck in the kernel. */
	snprintf(fk.block_netns, sizeof(fk.block_netns), "/fake/ns/80");
	snprintf(body, sizeof(body), "{\"containerID\":\"stuck\",\"ifname\":\"eth0\",\"netns\":\"/fake/ns/80\"}");
	snprintf(req, sizeof(req), "POST /v1/cni/add HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
		 strlen(body), body);
	{
		int stuck = sock_connect(s.sock);

		cr_assert_eq(write(stuck, req, strlen(req)), (ssize_t)strlen(req));
		wait_blocked(1);
		cr_assert_lt(healthz_ms(s.sock, &status), BOUND_MS(500), "healthz while an ADD is stuck");
		cr_assert_eq(status, 200);
		fake_release();
		close(stuck);
	}
	unserve(&s);
}

/* /v1/service over the socket: PUT, GET one and all, a refused body
 * naming its field, 404s, DELETE, and the read-only rules. */
Test(agent_http, service_routes)
{
	static const char body[] = "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.10\",\"port\":80}],"
				   "\"backends\":[{\"address\":\"10.0.0.5\",\"port\":8080}]}";
	static const char bad[] = "{\"frontends\":[{\"type\":\"ClusterIP\",\"address\":\"10.96.0.10\",\"port\":80}],"
				  "\"backends\":[{\"address\":\"10.0.0.5\",\"port\":8080},{\"address\":\"10.0.0.6\"}]}";
	static const char path[] = "/v1/service/fs-0123456789abcdef0123456789abcdef";
	struct served s;
	char out[8192], req[1024];
	int n;

	serve(&s);
	n = snprintf(req, sizeof(req), "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
		     path, sizeof(body) - 1, body);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"svcId\":1"), "%s", out);
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"address\":\"10.0.0.5\""), "%s", out);
	n = snprintf(req, sizeof(req), "GET /v1/service HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "{\"services\":[{\"id\":\"fs-0123456789abcdef0123456789abcdef\""), "%s", out);
	n = snprintf(req, sizeof(req), "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
		     path, sizeof(bad) - 1, bad);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "\"field\":\"backends[1].port\""), "the field at fault: %s", out);
	n = snprintf(req, sizeof(req), "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
		     path);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 405, "%s", out);
	n = snprintf(req, sizeof(req), "DELETE %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 200, "%s", out);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 404, "%s", out);
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 404, "%s", out);
	unserve(&s);
}

/* Contract C3: an endpoint ADDed with serviceTranslation "packet" is
 * published with FLOWSDN_EP_F_SVC_PACKET; PUT /v1/endpoint/{id}/translation
 * switches it (republished, saved, restored by the next agent). */
Test(agent_core, service_translation_marks_the_endpoint)
{
	struct agent_core *core = core_start();
	struct agent_request rq = { .container_id = "gvisor", .ifname = "eth0", .netns = "/fake/ns/21",
				    .svc_translation = FLOWSDN_CNI_SVC_PACKET };
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	struct agent_api_endpoint a, b, got;
	struct fake_if *f;

	ASSERT_OK(agent_core_add(core, &rq, &a, d), agent_diag_message(d));
	cr_assert_eq(a.svc_translation, FLOWSDN_CNI_SVC_PACKET);
	f = fake_by_host(a.host_ifname);
	cr_assert(f && (f->flags & FLOWSDN_EP_F_SVC_PACKET), "published with FLOWSDN_EP_F_SVC_PACKET");
	ASSERT_OK(add(core, "runc", "/fake/ns/22", &b), "ADD without the key");
	cr_assert_eq(b.svc_translation, FLOWSDN_CNI_SVC_SOCKET);
	cr_assert(!(fake_by_host(b.host_ifname)->flags & FLOWSDN_EP_F_SVC_PACKET), "socket: no flag");

	/* The policy's enforcement flags are not the switch's to change. */
	fake_by_host(b.host_ifname)->flags |= FLOWSDN_EP_F_ENFORCE_INGRESS;
	ASSERT_OK(agent_core_set_translation(core, b.id, FLOWSDN_CNI_SVC_PACKET, &got, d), agent_diag_message(d));
	cr_assert_eq(got.svc_translation, FLOWSDN_CNI_SVC_PACKET);
	cr_assert(fake_by_host(b.host_ifname)->flags & FLOWSDN_EP_F_SVC_PACKET, "republished with the flag");
	cr_assert(fake_by_host(b.host_ifname)->flags & FLOWSDN_EP_F_ENFORCE_INGRESS, "enforcement kept");
	ASSERT_OK(agent_core_set_translation(core, a.id, FLOWSDN_CNI_SVC_SOCKET, &got, d), agent_diag_message(d));
	cr_assert(!(f->flags & FLOWSDN_EP_F_SVC_PACKET), "flag cleared");
	/* The same mode again changes nothing. */
	unsigned int before = f->publishes;
	uint32_t flags_before = f->flags;
	ASSERT_OK(agent_core_set_translation(core, a.id, FLOWSDN_CNI_SVC_SOCKET, &got, d), agent_diag_message(d));
	cr_assert_eq(f->publishes, before, "no republish for an unchanged mode");
	cr_assert_eq(f->flags, flags_before, "nothing changed");
	ASSERT_ERR(agent_core_set_translation(core, 999, FLOWSDN_CNI_SVC_PACKET, &got, d), -FLOWSDN_E_AGENT_NOT_FOUND,
		   "unknown id");
	ASSERT_ERR(agent_core_set_translation(core, a.id, (enum flowsdn_cni_svc_translation)7, &got, d), -EINVAL,
		   "no such mode");
	agent_core_free(core);

	/* The state file carries the modes into the next agent. */
	core = core_start();
	ASSERT_OK(agent_core_endpoint(core, a.id, &got), "restored a");
	cr_assert_eq(got.svc_translation, FLOWSDN_CNI_SVC_SOCKET);
	ASSERT_OK(agent_core_endpoint(core, b.id, &got), "restored b");
	cr_assert_eq(got.svc_translation, FLOWSDN_CNI_SVC_PACKET);
	agent_core_free(core);
}

Test(agent_http, translation_route, .timeout = 30)
{
	static const char put[] = "PUT /v1/endpoint/%u/translation HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				  "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s";
	struct served s;
	struct agent_api_endpoint a;
	char req[512], out[4096];
	const char *body = "{\"serviceTranslation\":\"packet\"}", *bad = "{\"serviceTranslation\":\"ebpf\"}";
	int n;

	serve(&s);
	ASSERT_OK(add(s.core, "gvisor", "/fake/ns/31", &a), "ADD");
	n = snprintf(req, sizeof(req), put, a.id, strlen(body), body);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"serviceTranslation\":\"packet\""), "the endpoint as it is now: %s", out);
	cr_assert(fake_by_host(a.host_ifname)->flags & FLOWSDN_EP_F_SVC_PACKET, "published with the flag");
	n = snprintf(req, sizeof(req), put, a.id, strlen(bad), bad);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "serviceTranslation"), "names the field: %s", out);
	n = snprintf(req, sizeof(req), put, a.id + 100, strlen(body), body);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 404, "%s", out);
	n = snprintf(req, sizeof(req), "GET /v1/endpoint/%u/translation HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		     a.id);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 405, "%s", out);
	n = snprintf(req, sizeof(req), "PUT /v1/endpoint/%u/x/translation HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		     "Content-Length: %zu\r\n\r\n%s", a.id, strlen(body), body);
	cr_assert_eq(http_raw(s.sock, req, (size_t)n, out, sizeof(out)), 400, "%s", out);
	unserve(&s);
}

/* ---------------------------------------------------------- policy API */

/* @method @path with @body (may be NULL) over the agent's socket. */
static int http_call(const char *sock, const char *method, const char *path, const char *body, char *out, size_t size)
{
	char req[8192];
	int n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			 method, path, body ? strlen(body) : 0, body ? body : "");

	cr_assert(n > 0 && (size_t)n < sizeof(req));
	return http_raw(sock, req, (size_t)n, out, size);
}

Test(agent_http, policy_namespace_identity_and_labels_routes, .timeout = 30)
{
	static const char deny_all[] = "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
				       "\"metadata\":{\"name\":\"deny-all\",\"namespace\":\"prod\"},"
				       "\"spec\":{\"podSelector\":{},\"policyTypes\":[\"Ingress\"]}}";
	static const char bad_cidr[] = "{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"podSelector\":{},"
				       "\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/33\"}}]}]}}";
	static const char bad_tier[] = "{\"metadata\":{\"name\":\"t\",\"annotations\":{\"flowsdn.io/tier\":\"top\"}},"
				       "\"spec\":{\"podSelector\":{}}}";
	struct served s;
	struct agent_api_endpoint a, b;
	char out[8192], path[128];

	serve(&s);
	ASSERT_OK(add(s.core, "alpha", "/fake/ns/21", &a), "ADD alpha");
	ASSERT_OK(add(s.core, "beta", "/fake/ns/22", &b), "ADD beta");

	cr_assert_eq(http_call(s.sock, "PUT", "/v1/namespace/prod", "{\"labels\":{\"team\":\"a\"}}", out, sizeof(out)),
		     200, "%s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/namespace/prod", "{\"labels\":{\"team\":7}}", out, sizeof(out)), 400,
		     "%s", out);
	cr_assert(strstr(out, "labels.team"), "names the label: %s", out);
	cr_assert_eq(http_call(s.sock, "GET", "/v1/namespace", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"name\":\"prod\"") && strstr(out, "\"team\":\"a\""), "%s", out);

	snprintf(path, sizeof(path), "/v1/endpoint/%u/labels", a.id);
	cr_assert_eq(http_call(s.sock, "PUT", path,
			       "{\"namespace\":\"prod\",\"name\":\"web-1\",\"labels\":{\"app\":\"web\"},"
			       "\"namedPorts\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":8080}]}",
			       out, sizeof(out)),
		     200, "%s", out);
	snprintf(path, sizeof(path), "/v1/endpoint/%u/labels", b.id);
	cr_assert_eq(http_call(s.sock, "PUT", path, "{\"namespace\":\"prod\",\"labels\":{\"app\":\"web\"}}", out,
			       sizeof(out)),
		     200, "%s", out);
	cr_assert_eq(http_call(s.sock, "PUT", path, "{\"namespace\":\"prod\",\"labels\":{\"-bad\":\"x\"}}", out,
			       sizeof(out)),
		     400, "%s", out);
	cr_assert(strstr(out, "labels.-bad"), "%s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/endpoint/999/labels", "{\"namespace\":\"prod\"}", out, sizeof(out)),
		     404, "%s", out);
	/* Same labels: one identity for both, a local one (>= 256). */
	cr_assert_eq(http_call(s.sock, "GET", "/v1/identity", NULL, out, sizeof(out)), 200, "%s", out);
	{
		const char *p1 = strstr(out, "\"identity\":"), *p2 = p1 ? strstr(p1 + 1, "\"identity\":") : NULL;
		unsigned int i1 = 0, i2 = 1;

		cr_assert(p1 && p2, "%s", out);
		cr_assert(sscanf(p1, "\"identity\":%u", &i1) == 1 && sscanf(p2, "\"identity\":%u", &i2) == 1);
		cr_assert(i1 == i2 && i1 >= 256, "identities %u and %u", i1, i2);
	}
	cr_assert(strstr(out, "\"name\":\"web-1\"") && strstr(out, "app=web,io.kubernetes.pod.namespace=prod"), "%s", out);

	cr_assert_eq(http_call(s.sock, "PUT", "/v1/policy/prod/deny-all", deny_all, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"deny-all\""), "the stored object: %s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/policy/prod/bad", bad_cidr, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "NetworkPolicy.networking.k8s.io \\\"bad\\\" is invalid: spec.ingress[0].from[0].ipBlock.cidr"),
		  "the API server's message: %s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/policy/prod/t", bad_tier, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "flowsdn.io/tier"), "%s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/policy/prod/other", deny_all, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "the path names prod/other"), "%s", out);
	cr_assert_eq(http_call(s.sock, "GET", "/v1/policy", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"items\":[{") && strstr(out, "deny-all") && !strstr(out, "\"bad\""), "%s", out);
	cr_assert_eq(http_call(s.sock, "GET", "/v1/policy/prod/deny-all", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert_eq(http_call(s.sock, "GET", "/v1/policy/verdicts", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"endpoints\":["), "%s", out);
	cr_assert_eq(http_call(s.sock, "POST", "/v1/policy/prod/deny-all", deny_all, out, sizeof(out)), 405, "%s", out);
	cr_assert_eq(http_call(s.sock, "DELETE", "/v1/policy/prod/deny-all", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert_eq(http_call(s.sock, "DELETE", "/v1/policy/prod/deny-all", NULL, out, sizeof(out)), 404, "%s", out);
	cr_assert(strstr(out, "not found"), "%s", out);
	cr_assert_eq(http_call(s.sock, "DELETE", "/v1/namespace/prod", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert_eq(http_call(s.sock, "DELETE", "/v1/namespace/prod", NULL, out, sizeof(out)), 404, "%s", out);
	unserve(&s);
}

/* flowsdn-agent.conf(5) "namespaces" and "policies": applied at start,
 * listed by the API, kept by agent_config_format(); a refused policy
 * stops the start, naming its item. */
Test(agent_core, config_namespaces_and_policies_are_applied_at_start, .init = setup, .fini = teardown)
{
	static const char pol[] = "{\"metadata\":{\"name\":\"deny\",\"namespace\":\"prod\"},\"spec\":{\"podSelector\":{}}}";
	static const char bad[] = "{\"metadata\":{\"name\":\"bad\",\"namespace\":\"prod\"},\"spec\":{\"podSelector\":{},"
				  "\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/33\"}}]}]}}";
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	struct agent_config *c = NULL;
	struct agent_core *core = NULL;
	char *json = NULL, *out = NULL;

	cr_assert(asprintf(&json, "{\"socket\":\"%s/sock\",\"state-dir\":\"%s/state\",\"pools\":[\"10.9.0.0/29\"],"
				  "\"namespaces\":[{\"name\":\"prod\",\"labels\":{\"env\":\"prod\"}}],\"policies\":[%s]}",
			   dir, dir, pol) > 0);
	ASSERT_OK(agent_config_parse(json, strlen(json), &c, d), test_engine_text(d));
	free(json);
	ASSERT_OK(agent_config_format(c, &json), "format");
	cr_assert(strstr(json, "\"env\": \"prod\"") && strstr(json, "\"name\": \"deny\""), "kept: %s", json);
	free(json);
	ASSERT_OK(agent_core_new(c, &fake_ops, NULL, &core), "start");
	ASSERT_OK(agent_policy_get(agent_core_policy(core), NULL, NULL, &out), "list");
	cr_assert(strstr(out, "\"deny\""), "%s", out);
	free(out);
	ASSERT_OK(agent_policy_namespaces(agent_core_policy(core), &out), "namespaces");
	cr_assert(strstr(out, "\"env\":\"prod\""), "%s", out);
	free(out);
	agent_core_free(core);
	agent_config_free(c);
	c = NULL;

	cr_assert(asprintf(&json, "{\"socket\":\"%s/sock\",\"state-dir\":\"%s/state2\",\"pools\":[\"10.9.0.0/29\"],"
				  "\"policies\":[%s,%s]}", dir, dir, pol, bad) > 0);
	ASSERT_OK(agent_config_parse(json, strlen(json), &c, d), test_engine_text(d));
	free(json);
	core = NULL;
	cr_assert(agent_core_new(c, &fake_ops, NULL, &core) == -FLOWSDN_E_POLICY_INVALID, "refused at start");
	cr_assert(core == NULL);
	agent_config_free(c);
	c = NULL;
	{
		static const char nameless[] = "{\"namespaces\":[{\"labels\":{}}]}";

		ASSERT_ERR(agent_config_parse(nameless, strlen(nameless), &c, d), -FLOWSDN_E_AGENT_CONFIG,
			   "a namespace without its name");
	}
	cr_assert(strstr(test_engine_text(d), "namespaces[0]"), "%s", test_engine_text(d));
}

/* "uplink-interfaces": each gets the uplink program at start, with the
 * SNAT ports; one that fails is reported, the others work. */
Test(agent_core, uplinks_get_the_uplink_program)
{
	struct agent_config *c = NULL;
	struct agent_core *core = NULL;
	struct agent_status st;
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	char *json = NULL;

	cr_assert(asprintf(&json, "{\"socket\":\"%s/sock\",\"state-dir\":\"%s/state\",\"pools\":[\"10.9.0.0/29\"],"
			   "\"uplink-interfaces\":[\"up0\",\"down1\"],\"snat-port-min\":50000,\"snat-port-max\":50099}",
			   dir, dir) > 0);
	ASSERT_OK(agent_config_parse(json, strlen(json), &c, d), test_engine_text(d));
	free(json);
	n_uplink_calls = 0;
	ASSERT_OK(agent_core_new(c, &fake_ops, NULL, &core), "core");
	agent_config_free(c);
	cr_assert_eq(n_uplink_calls, 2u, "both uplinks tried");
	ASSERT_STREQ(uplink_names[0], "up0", "first");
	ASSERT_STREQ(uplink_names[1], "down1", "second");
	cr_assert(uplink_ports[0] == 50000 && uplink_ports[1] == 50099, "SNAT ports %u-%u", uplink_ports[0],
		  uplink_ports[1]);
	agent_core_status(core, &st);
	cr_assert_eq(st.uplinks, 1u, "the failing one is not counted");
	agent_core_free(core);
}

static void ns_put(struct agent_core *core, const char *name, const char *body)
{
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();

	ASSERT_OK(agent_policy_namespace_put(agent_core_policy(core), name, body, strlen(body), d), agent_diag_message(d));
}

static void pol_put(struct agent_core *core, const char *name, const char *spec)
{
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	char body[1024];

	snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"prod\"},\"spec\":%s}", name, spec);
	ASSERT_OK(agent_policy_put(agent_core_policy(core), "prod", name, body, strlen(body), d), agent_diag_message(d));
}

static void labels_put(struct agent_core *core, uint32_t id, const char *body)
{
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	struct agent_policy_meta_buf b;

	ASSERT_OK(agent_policy_meta_parse(body, strlen(body), &b, d), agent_diag_message(d));
	ASSERT_OK(agent_core_endpoint_labels(core, id, &b.meta, d), agent_diag_message(d));
	agent_policy_meta_buf_clear(&b);
}

static char *policy_list(struct agent_core *core)
{
	char *out = NULL;

	ASSERT_OK(agent_policy_get(agent_core_policy(core), NULL, NULL, &out), "GET /v1/policy");
	return out;
}

static char *identity_list(struct agent_core *core)
{
	char *out = NULL;

	ASSERT_OK(agent_policy_identities(agent_core_policy(core), &out), "GET /v1/identity");
	return out;
}

/* Whether state/policy/@name exists (lstat: a link counts). */
static bool exists(const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/state/policy/%s", dir, name);
	return lstat(path, &st) == 0;
}

/* issue 15: namespaces, policies and endpoint labels set through the API
 * survive a restart (one file each in state/policy/); a deleted one stays
 * deleted; the identities keep their numbers and one reference each; a
 * damaged file is quarantined, named in the log, and the rest loads. */
Test(agent_core, api_policy_state_survives_a_restart)
{
	static const char web[] = "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"from\":"
				  "[{\"podSelector\":{\"matchLabels\":{\"app\":\"client\"}}}],\"ports\":[{\"port\":\"http\"}]}]}";
	struct agent_core *core = core_start();
	struct agent_api_endpoint a, b;
	char *before, *after, *out, path[512];

	ASSERT_OK(add(core, "alpha", "/fake/ns/1", &a), "ADD alpha");
	ASSERT_OK(add(core, "beta", "/fake/ns/2", &b), "ADD beta");
	ns_put(core, "prod", "{\"labels\":{\"env\":\"prod\"}}");
	ns_put(core, "gone", "{\"labels\":{}}");
	labels_put(core, a.id, "{\"namespace\":\"prod\",\"name\":\"web-1\",\"labels\":{\"app\":\"web\"},"
			       "\"namedPorts\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":8080}]}");
	labels_put(core, b.id, "{\"namespace\":\"prod\",\"labels\":{\"app\":\"client\"}}");
	pol_put(core, "web", web);
	pol_put(core, "deleted", "{\"podSelector\":{}}");
	{
		_cleanup_engine_diag_ struct diag *d = test_engine_diag();

		ASSERT_OK(agent_policy_delete(agent_core_policy(core), "prod", "deleted", d), "DELETE");
		ASSERT_OK(agent_policy_namespace_delete(agent_core_policy(core), "gone", d), "DELETE namespace");
	}
	cr_assert(exists("policy.prod_web.json"), "one file per policy");
	cr_assert(!exists("policy.prod_deleted.json"), "a deleted policy has no file");
	before = identity_list(core);
	agent_core_free(core);

	core = core_start();
	out = policy_list(core);
	cr_assert(strstr(out, "\"name\":\"web\"") && !strstr(out, "\"deleted\""), "policies restored: %s", out);
	free(out);
	ASSERT_OK(agent_policy_namespaces(agent_core_policy(core), &out), "namespaces");
	cr_assert(strstr(out, "\"env\":\"prod\"") && !strstr(out, "\"gone\""), "namespaces restored: %s", out);
	free(out);
	after = identity_list(core);
	ASSERT_STREQ(after, before, "the same endpoints, names, labels, identities and one reference each");
	cr_assert(strstr(after, "\"name\":\"web-1\"") && strstr(after, "\"references\":1"), "%s", after);
	free(after);
	agent_core_free(core);

	/* Damage: garbage, an object under another object's name, a
	 * policy the API server would refuse, a symbolic link. */
	snprintf(path, sizeof(path), "%s/state/policy/policy.prod_junk.json", dir);
	write_text(path, "{\"version\":1,\"kind\":\"NetworkPol");
	snprintf(path, sizeof(path), "%s/state/policy/policy.prod_other.json", dir);
	write_text(path, "{\"version\":1,\"kind\":\"NetworkPolicy\",\"key\":\"prod/web\",\"object\":\"{}\"}");
	snprintf(path, sizeof(path), "%s/state/policy/policy.prod_bad.json", dir);
	write_text(path, "{\"version\":1,\"kind\":\"NetworkPolicy\",\"key\":\"prod/bad\",\"object\":"
			 "\"{\\\"metadata\\\":{\\\"name\\\":\\\"bad\\\",\\\"namespace\\\":\\\"prod\\\"},"
			 "\\\"spec\\\":{\\\"podSelector\\\":{},\\\"ingress\\\":[{\\\"from\\\":[{\\\"ipBlock\\\":"
			 "{\\\"cidr\\\":\\\"10.0.0.0/33\\\"}}]}]}}\"}");
	snprintf(path, sizeof(path), "%s/state/policy/namespace.link.json", dir);
	cr_assert(symlink("/etc/passwd", path) == 0);
	core = core_start();
	out = policy_list(core);
	cr_assert(strstr(out, "\"name\":\"web\"") && !strstr(out, "\"bad\"") && !strstr(out, "\"other\""),
		  "the good one loads, the damaged ones do not: %s", out);
	free(out);
	after = identity_list(core);
	ASSERT_STREQ(after, before, "the endpoints' labels are untouched by the damage");
	free(after);
	free(before);
	for (size_t i = 0; i < 4; i++) {
		static const char *const names[] = { "policy.prod_junk.json", "policy.prod_other.json",
						     "policy.prod_bad.json", "namespace.link.json" };

		char q[128];

		snprintf(q, sizeof(q), "quarantine/%s", names[i]);
		cr_assert(exists(q), "%s quarantined", names[i]);
		cr_assert(!exists(names[i]), "%s moved", names[i]);
	}
	cr_assert(exists("policy.prod_web.json"), "the good file stays");
	agent_core_free(core);
}

/* Contract C7: a state directory written by main before the policy
 * state existed (endpoints.json and identities/ only) starts, and the
 * endpoints are restored; labels of an endpoint that is gone at restart
 * are forgotten. */
Test(agent_core, state_dir_without_policy_state_starts)
{
	struct agent_core *core = core_start();
	struct agent_api_endpoint a, b;
	char cmd[512], *out;

	ASSERT_OK(add(core, "alpha", "/fake/ns/1", &a), "ADD alpha");
	ASSERT_OK(add(core, "beta", "/fake/ns/2", &b), "ADD beta");
	labels_put(core, a.id, "{\"namespace\":\"prod\",\"labels\":{\"app\":\"web\"}}");
	labels_put(core, b.id, "{\"namespace\":\"prod\",\"labels\":{\"app\":\"db\"}}");
	agent_core_free(core);
	snprintf(cmd, sizeof(cmd), "rm -rf %s/state/policy", dir);
	cr_assert(system(cmd) == 0);
	core = core_start();
	cr_assert_eq(agent_core_endpoint_count(core), 2, "the endpoints are restored");
	out = identity_list(core);
	cr_assert(strstr(out, "\"items\":[]"), "no labels to restore: %s", out);
	free(out);
	labels_put(core, a.id, "{\"namespace\":\"prod\",\"labels\":{\"app\":\"web\"}}");
	labels_put(core, b.id, "{\"namespace\":\"prod\",\"labels\":{\"app\":\"db\"}}");
	agent_core_free(core);

	/* beta's interface went while no agent ran: its labels go too. */
	fake_by_host(b.host_ifname)->used = false;
	core = core_start();
	cr_assert_eq(agent_core_endpoint_count(core), 1);
	out = identity_list(core);
	cr_assert(strstr(out, "app=web") && !strstr(out, "app=db"), "%s", out);
	free(out);
	{
		char name[64];

		snprintf(name, sizeof(name), "endpoint.%u.json", b.id);
		cr_assert(!exists(name), "beta's labels file removed");
		snprintf(name, sizeof(name), "endpoint.%u.json", a.id);
		cr_assert(exists(name), "alpha's stays");
	}
	agent_core_free(core);
}

/* issue 15: POST /v1/policy/lookup answers the verdict with the rule
 * that decides it (name and tier), or the reason, from the compiled
 * entries and from the simulator; bad bodies are 400, an endpoint
 * outside policy 404. */
Test(agent_http, policy_lookup_names_the_deciding_rule, .timeout = 30)
{
	static const char web[] = "{\"metadata\":{\"name\":\"web\",\"namespace\":\"prod\"},\"spec\":{\"podSelector\":"
				  "{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"ports\":[{\"port\":443}]},{\"from\":"
				  "[{\"podSelector\":{\"matchLabels\":{\"app\":\"cli\"}}}],\"ports\":[{\"port\":80}]}]}}";
	struct served s;
	struct agent_api_endpoint a, b, c;
	char out[8192], body[512], cli[FLOWSDN_ADDR_STRLEN];

	serve(&s);
	ASSERT_OK(add(s.core, "alpha", "/fake/ns/31", &a), "ADD alpha");
	ASSERT_OK(add(s.core, "beta", "/fake/ns/32", &b), "ADD beta");
	ASSERT_OK(add(s.core, "gamma", "/fake/ns/33", &c), "ADD gamma");
	labels_put(s.core, a.id, "{\"namespace\":\"prod\",\"labels\":{\"app\":\"web\"}}");
	labels_put(s.core, b.id, "{\"namespace\":\"prod\",\"labels\":{\"app\":\"cli\"}}");
	flowsdn_addr_format(&b.addrs[0], cli, sizeof(cli));
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/policy/prod/web", web, out, sizeof(out)), 200, "%s", out);

	snprintf(body, sizeof(body), "{\"endpoint\":%u,\"direction\":\"ingress\",\"peer\":\"%s\",\"protocol\":\"TCP\","
				     "\"port\":80}", a.id, cli);
	cr_assert_eq(http_call(s.sock, "POST", "/v1/policy/lookup", body, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"verdict\":\"allow\",\"reason\":\"rule\",\"rule\":2,\"name\":\"prod/web ingress[1]\","
			      "\"tier\":\"allow\",\"simulated\":{\"verdict\":\"allow\",\"reason\":\"rule\",\"rule\":2,"
			      "\"name\":\"prod/web ingress[1]\",\"tier\":\"allow\"}"),
		  "the rule, both ways: %s", out);
	snprintf(body, sizeof(body), "{\"endpoint\":%u,\"direction\":\"ingress\",\"peer\":\"%s\",\"protocol\":\"UDP\","
				     "\"port\":80}", a.id, cli);
	cr_assert_eq(http_call(s.sock, "POST", "/v1/policy/lookup", body, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"verdict\":\"deny\",\"reason\":\"default deny\",\"simulated\":{\"verdict\":\"deny\","
			      "\"reason\":\"default deny\"}"), "%s", out);
	snprintf(body, sizeof(body), "{\"endpoint\":%u,\"direction\":\"egress\",\"peer\":\"203.0.113.7\",\"protocol\":1,"
				     "\"port\":0}", a.id);
	cr_assert_eq(http_call(s.sock, "POST", "/v1/policy/lookup", body, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"reason\":\"no policy selects\""), "%s", out);
	snprintf(body, sizeof(body), "{\"endpoint\":%u,\"direction\":\"ingress\",\"peer\":\"%s\",\"protocol\":\"TCP\","
				     "\"port\":80}", c.id, cli);
	cr_assert_eq(http_call(s.sock, "POST", "/v1/policy/lookup", body, out, sizeof(out)), 404, "%s", out);
	cr_assert(strstr(out, "no endpoint"), "%s", out);
	cr_assert_eq(http_call(s.sock, "POST", "/v1/policy/lookup", "{\"endpoint\":1}", out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "\\\"direction\\\""), "says the shape: %s", out);
	snprintf(body, sizeof(body), "{\"endpoint\":%u,\"direction\":\"ingress\",\"peer\":\"10.0.0.300\",\"protocol\":"
				     "\"TCP\",\"port\":80}", a.id);
	cr_assert_eq(http_call(s.sock, "POST", "/v1/policy/lookup", body, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "peer: not an IPv4 or IPv6 address"), "%s", out);
	cr_assert_eq(http_call(s.sock, "GET", "/v1/policy/lookup", NULL, out, sizeof(out)), 405, "%s", out);
	unserve(&s);
}

/* Egress mode stack: each endpoint's host veth accepts the node's own
 * addresses as source (reverse-translated NodePort replies); mode fib
 * leaves accept_local alone. */
Test(agent_core, stack_mode_sets_accept_local_on_the_host_veth)
{
	struct agent_config *c = config_extra(NULL, ",\"egress-mode\":\"stack\"");
	struct agent_core *core = NULL;
	struct agent_api_endpoint a, b;

	ASSERT_OK(agent_core_new(c, &fake_ops, NULL, &core), "core in stack mode");
	agent_config_free(c);
	ASSERT_OK(add(core, "alpha", "/fake/ns/11", &a), "ADD");
	cr_assert(fake_by_host(a.host_ifname) && fake_by_host(a.host_ifname)->accept_local, "stack: accept_local");
	agent_core_free(core);
	core = core_start();
	ASSERT_OK(add(core, "beta", "/fake/ns/12", &b), "ADD");
	cr_assert(fake_by_host(b.host_ifname) && !fake_by_host(b.host_ifname)->accept_local, "fib: no accept_local");
	agent_core_free(core);
}

/* issue 15 item 6: the host firewall's routes, its refusals, the
 * configuration key and the mode saved across a restart (no datapath
 * here: tests/integration/test-hostfw has the packets). */
Test(agent_http, host_firewall_routes_refusals_and_restart, .timeout = 30)
{
	static const char allow[] = "{\"metadata\":{\"name\":\"ssh\",\"namespace\":\"flowsdn-host\"},"
				    "\"spec\":{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"port\":22}]}]}}";
	static const char selective[] = "{\"metadata\":{\"name\":\"sel\",\"namespace\":\"flowsdn-host\"},"
					"\"spec\":{\"podSelector\":{\"matchLabels\":{\"role\":\"edge\"}}}}";
	static const char egress[] = "{\"metadata\":{\"name\":\"out\",\"namespace\":\"flowsdn-host\"},"
				     "\"spec\":{\"podSelector\":{},\"policyTypes\":[\"Egress\"]}}";
	static const char lookup[] = "{\"endpoint\":2147483647,\"direction\":\"ingress\",\"peer\":\"198.51.100.7\","
				     "\"protocol\":\"TCP\",\"port\":%d}";
	_cleanup_engine_diag_ struct diag *d = test_engine_diag();
	struct agent_api_endpoint a;
	struct agent_config *c = NULL;
	struct served s;
	char out[8192], path[128], body[256];

	/* The key: the three words, others refused naming it. */
	ASSERT_OK(agent_config_parse("{\"host-firewall\":\"audit\"}", 25, &c, d), test_engine_text(d));
	cr_assert_eq(c->host_firewall, FLOWSDN_HOSTFW_AUDIT);
	{
		char *json = NULL;

		ASSERT_OK(agent_config_format(c, &json), "format");
		cr_assert(strstr(json, "\"host-firewall\": \"audit\""), "%s", json);
		free(json);
	}
	agent_config_free(c);
	c = NULL;
	cr_assert(agent_config_parse("{\"host-firewall\":\"drop\"}", 24, &c, d) == -FLOWSDN_E_AGENT_CONFIG);
	cr_assert(strstr(test_engine_text(d), "host-firewall"), "names the key: %s", test_engine_text(d));

	serve(&s);
	cr_assert_eq(http_call(s.sock, "GET", "/v1/hostfw", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"mode\":\"off\"") && strstr(out, "\"selected\":false"), "default off: %s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/hostfw", "{\"mode\":\"audit\"}", out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"mode\":\"audit\""), "%s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/hostfw", "{\"mode\":\"block\"}", out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "\\\"block\\\" is not"), "names the word: %s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/hostfw", "{\"mode\":\"audit\",\"x\":1}", out, sizeof(out)), 400,
		     "%s", out);
	cr_assert_eq(http_call(s.sock, "DELETE", "/v1/hostfw", NULL, out, sizeof(out)), 405, "%s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/hostfw/verdicts", "{}", out, sizeof(out)), 405, "%s", out);

	cr_assert_eq(http_call(s.sock, "PUT", "/v1/policy/flowsdn-host/sel", selective, out, sizeof(out)), 400, "%s",
		     out);
	cr_assert(strstr(out, "spec.podSelector") && strstr(out, "must be {}"), "%s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/policy/flowsdn-host/out", egress, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "spec.policyTypes") && strstr(out, "Ingress only"), "%s", out);
	cr_assert_eq(http_call(s.sock, "GET", "/v1/hostfw", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"selected\":false"), "nothing refused was applied: %s", out);
	cr_assert_eq(http_call(s.sock, "PUT", "/v1/policy/flowsdn-host/ssh", allow, out, sizeof(out)), 200, "%s", out);
	cr_assert_eq(http_call(s.sock, "GET", "/v1/hostfw/verdicts", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"selected\":true") && strstr(out, "\"rules\":["), "%s", out);

	/* The node as the reserved endpoint of the lookup route. */
	snprintf(body, sizeof(body), lookup, 22);
	cr_assert_eq(http_call(s.sock, "POST", "/v1/policy/lookup", body, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"verdict\":\"allow\"") && strstr(out, "flowsdn-host/ssh"), "port 22: %s", out);
	snprintf(body, sizeof(body), lookup, 23);
	cr_assert_eq(http_call(s.sock, "POST", "/v1/policy/lookup", body, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"verdict\":\"deny\"") && strstr(out, "default deny"), "port 23: %s", out);

	/* No endpoint joins the host's namespace. */
	ASSERT_OK(add(s.core, "alpha", "/fake/ns/31", &a), "ADD alpha");
	snprintf(path, sizeof(path), "/v1/endpoint/%u/labels", a.id);
	cr_assert_eq(http_call(s.sock, "PUT", path, "{\"namespace\":\"flowsdn-host\"}", out, sizeof(out)), 400, "%s",
		     out);
	cr_assert(strstr(out, "flowsdn-host is the host firewall's"), "%s", out);
	unserve(&s);
	cr_assert(exists("hostfw.mode.json"), "the mode set through the API is saved");

	/* Restart: the saved mode and the host policy come back. */
	serve(&s);
	cr_assert_eq(http_call(s.sock, "GET", "/v1/hostfw", NULL, out, sizeof(out)), 200, "%s", out);
	cr_assert(strstr(out, "\"mode\":\"audit\"") && strstr(out, "\"selected\":true"), "restored: %s", out);
	unserve(&s);
}
