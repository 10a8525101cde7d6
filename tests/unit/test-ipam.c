/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* IPAM: allocation by owner, reserved addresses, explicit requests,
 * release, exhaustion, summary and listing, persistence, several handles,
 * and every kind of bad pool and bad state file. */
#include "ipam-helpers.h"

#include <sys/stat.h>
#include <flowsdn/ipam.h>

#include "diag-helpers.h"
#include "helpers.h"

DIAG_TEST_HELPERS(flowsdn)

static char top[256], dir[300], state[320];

static void setup(void)
{
	make_tmpdir(top, sizeof(top), dir, sizeof(dir));
	snprintf(state, sizeof(state), "%s/ipam.state", dir);
}

static void teardown(void)
{
	rm_tree(top);
}

TestSuite(ipam, .init = setup, .fini = teardown);

static struct flowsdn_ipam *open_pools(const char *const *cidrs, size_t n)
{
	struct flowsdn_prefix p[8];
	struct flowsdn_ipam *ipam = NULL;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();
	int r;

	for (size_t i = 0; i < n; i++)
		p[i] = PFX(cidrs[i]);
	r = flowsdn_ipam_new(dir, p, n, NULL, &ipam, err);
	cr_assert(r == 0, "ipam_new: %s (%s)", flowsdn_strerror(r), flowsdn_test_messages(err));
	return ipam;
}

static struct flowsdn_ipam *open_default(void)
{
	static const char *const pools[] = { "10.1.0.0/29", "fd00:1::/125" };

	return open_pools(pools, 2);
}

static void expect_lease(const struct flowsdn_ipam_lease *l, const char *addr, const char *pool, const char *gw)
{
	char a[FLOWSDN_ADDR_STRLEN], b[FLOWSDN_PREFIX_STRLEN];

	ASSERT_STREQ(FMT(&l->addr, a), addr, "lease address");
	cr_assert(flowsdn_prefix_format(&l->pool, b, sizeof(b)) > 0);
	ASSERT_STREQ(b, pool, "lease pool");
	ASSERT_STREQ(FMT(&l->gateway, a), gw, "lease gateway");
}

Test(ipam, allocate_both_families_and_same_owner_again)
{
	struct flowsdn_ipam *ipam = open_default();
	struct flowsdn_ipam_result res, again;
	struct stat st;

	cr_assert(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "state directory created with mode 0700");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c1", "eth0", NULL, &res, NULL), "allocate");
	cr_assert_eq(res.n, 2);
	expect_lease(&res.leases[0], "10.1.0.2", "10.1.0.0/29", "10.1.0.1");
	expect_lease(&res.leases[1], "fd00:1::2", "fd00:1::/125", "fd00:1::1");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c1", "eth0", NULL, &again, NULL), "allocate again");
	cr_assert(memcmp(&res, &again, sizeof(res)) == 0, "same owner must get the same addresses");
	/* Another interface of the same container is another owner. */
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c1", "eth1", NULL, &res, NULL), "second interface");
	expect_lease(&res.leases[0], "10.1.0.3", "10.1.0.0/29", "10.1.0.1");
	ASSERT_OK(flowsdn_ipam_lookup(ipam, "c1", "eth0", &again), "lookup");
	expect_lease(&again.leases[0], "10.1.0.2", "10.1.0.0/29", "10.1.0.1");
	ASSERT_ERR(flowsdn_ipam_lookup(ipam, "c9", "eth0", &again), -ENOENT, "lookup of unknown owner");
	flowsdn_ipam_free(ipam);
}

Test(ipam, reserved_addresses_never_given_and_exhaustion_names_pool)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	static const char *const pools[] = { "10.1.0.0/29" };
	struct flowsdn_ipam *ipam = open_pools(pools, 1);
	struct flowsdn_ipam_result res;
	char owner[16], a[FLOWSDN_ADDR_STRLEN];
	bool seen[8] = { false };

	/* /29: 8 addresses, network .0, gateway .1, broadcast .7 reserved. */
	for (int i = 0; i < 5; i++) {
		snprintf(owner, sizeof(owner), "c%d", i);
		ASSERT_OK(flowsdn_ipam_allocate(ipam, owner, "eth0", NULL, &res, NULL), "allocate");
		cr_assert_eq(res.n, 1);
		FMT(&res.leases[0].addr, a);
		cr_assert(res.leases[0].addr.bytes[3] >= 2 && res.leases[0].addr.bytes[3] <= 6, "got %s", a);
		cr_assert(!seen[res.leases[0].addr.bytes[3]], "%s given twice", a);
		seen[res.leases[0].addr.bytes[3]] = true;
	}
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "c5", "eth0", NULL, &res, d), -FLOWSDN_E_IPAM_EXHAUSTED, "sixth");
	cr_assert(strstr(flowsdn_test_messages(d), "10.1.0.0/29"), "message names the pool: %s",
		  flowsdn_test_messages(d));
	ASSERT_STREQ(flowsdn_strerror(-FLOWSDN_E_IPAM_EXHAUSTED), "address pool is exhausted", "strerror");
	flowsdn_ipam_free(ipam);
}

Test(ipam, smallest_pools)
{
	static const char *const pools[] = { "192.168.5.4/30", "2001:db8::/126" };
	struct flowsdn_ipam *ipam = open_pools(pools, 2);
	struct flowsdn_ipam_result res;

	ASSERT_OK(flowsdn_ipam_allocate(ipam, "a", "eth0", NULL, &res, NULL), "first");
	expect_lease(&res.leases[0], "192.168.5.6", "192.168.5.4/30", "192.168.5.5");
	expect_lease(&res.leases[1], "2001:db8::2", "2001:db8::/126", "2001:db8::1");
	FLOWSDN_OPTS(flowsdn_ipam_alloc_opts, v6, .families = FLOWSDN_IPAM_IPV6);
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "b", "eth0", &v6, &res, NULL), "IPv6 only");
	cr_assert_eq(res.n, 1);
	expect_lease(&res.leases[0], "2001:db8::3", "2001:db8::/126", "2001:db8::1");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "c", "eth0", &v6, &res, NULL), -FLOWSDN_E_IPAM_EXHAUSTED, "v6 full");
	flowsdn_ipam_free(ipam);
}

Test(ipam, all_or_nothing)
{
	static const char *const pools[] = { "10.2.0.0/24", "fd00::/126" };
	struct flowsdn_ipam *ipam = open_pools(pools, 2);
	struct flowsdn_ipam_pool_summary sum[2];
	struct flowsdn_ipam_result res;
	size_t n;

	ASSERT_OK(flowsdn_ipam_allocate(ipam, "a", "eth0", NULL, &res, NULL), "a");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "b", "eth0", NULL, &res, NULL), "b");
	/* IPv6 is full now; IPv4 is not, but c must get nothing. */
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "c", "eth0", NULL, &res, NULL), -FLOWSDN_E_IPAM_EXHAUSTED, "c");
	ASSERT_OK(flowsdn_ipam_summary(ipam, sum, 2, &n), "summary");
	cr_assert_eq(sum[0].used, 2, "the IPv4 address of the failed call was kept");
	ASSERT_ERR(flowsdn_ipam_lookup(ipam, "c", "eth0", &res), -ENOENT, "c holds nothing");
	/* And the next allocation still works. */
	ASSERT_OK(flowsdn_ipam_release(ipam, "a", "eth0", NULL), "release a");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c", "eth0", NULL, &res, NULL), "c after release");
	cr_assert_eq(res.n, 2);
	flowsdn_ipam_free(ipam);
}

/* NULL state directory: in memory only, all or nothing as on disk (the
 * failed call's IPv4 address is given back), nothing written. */
Test(ipam, in_memory_only)
{
	struct flowsdn_prefix pools[2] = { PFX("10.3.0.0/24"), PFX("fd00:3::/126") };
	struct flowsdn_ipam *ipam = NULL;
	struct flowsdn_ipam_pool_summary sum[2];
	struct flowsdn_ipam_result res;
	struct flowsdn_addr want = ADDR("10.3.0.7");
	FLOWSDN_OPTS(flowsdn_ipam_alloc_opts, o, .families = FLOWSDN_IPAM_IPV4, .request = &want, .n_request = 1);
	size_t n;

	ASSERT_OK(flowsdn_ipam_new(NULL, pools, 2, NULL, &ipam, NULL), "in memory");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "a", "eth0", NULL, &res, NULL), "a");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "b", "eth0", NULL, &res, NULL), "b");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "c", "eth0", NULL, &res, NULL), -FLOWSDN_E_IPAM_EXHAUSTED, "c");
	ASSERT_OK(flowsdn_ipam_summary(ipam, sum, 2, &n), "summary");
	cr_assert_eq(sum[0].used, 2, "the IPv4 address of the failed call was given back");
	ASSERT_ERR(flowsdn_ipam_lookup(ipam, "c", "eth0", &res), -ENOENT, "c holds nothing");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "d", "eth1", &o, &res, NULL), "explicit");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "e", "eth1", &o, &res, NULL), -FLOWSDN_E_IPAM_IN_USE, "never two owners");
	cr_assert_eq(flowsdn_ipam_release(ipam, "a", "eth0", NULL), 2);
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c", "eth0", NULL, &res, NULL), "c after release");
	flowsdn_ipam_free(ipam);
	ASSERT_ERR(flowsdn_ipam_new("", pools, 2, NULL, &ipam, NULL), -EINVAL, "empty path");
}

/* A Node's podCIDR changes under flowsdn-agent: the new pool serves new
 * owners, the old one drains (its owners keep their addresses, none is
 * given again) and goes with its last release. */
Test(ipam, set_pools_adds_a_pool_and_drains_the_old_one)
{
	struct flowsdn_prefix old[2] = { PFX("10.5.0.0/29"), PFX("fd00:5::/125") };
	struct flowsdn_prefix now[2] = { PFX("10.6.0.0/29"), PFX("fd00:5::/125") };
	struct flowsdn_prefix overlapping[1] = { PFX("10.5.0.0/28") };
	struct flowsdn_ipam *ipam = NULL, *persisted;
	struct flowsdn_ipam_pool_summary sum[4];
	struct flowsdn_ipam_result res;
	struct flowsdn_addr want = ADDR("10.5.0.4");
	FLOWSDN_OPTS(flowsdn_ipam_alloc_opts, o4, .families = FLOWSDN_IPAM_IPV4);
	FLOWSDN_OPTS(flowsdn_ipam_alloc_opts, req, .families = FLOWSDN_IPAM_IPV4, .request = &want, .n_request = 1);
	_cleanup_flowsdn_diag_ struct flowsdn_diag *err = flowsdn_test_diag();
	char a[FLOWSDN_ADDR_STRLEN], b[FLOWSDN_PREFIX_STRLEN];
	size_t n;

	ASSERT_OK(flowsdn_ipam_new(NULL, old, 2, NULL, &ipam, NULL), "in memory");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "a", "eth0", NULL, &res, NULL), "a");
	expect_lease(&res.leases[0], "10.5.0.2", "10.5.0.0/29", "10.5.0.1");
	expect_lease(&res.leases[1], "fd00:5::2", "fd00:5::/125", "fd00:5::1");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "b", "eth0", &o4, &res, NULL), "b");

	ASSERT_ERR(flowsdn_ipam_set_pools(ipam, overlapping, 1, err), -FLOWSDN_E_IPAM_POOL_OVERLAP,
		   "a new pool over one still holding addresses");
	cr_assert(strstr(flowsdn_test_messages(err), "10.5.0.0/29"), "%s", flowsdn_test_messages(err));
	ASSERT_OK(flowsdn_ipam_summary(ipam, sum, 4, &n), "unchanged");
	cr_assert_eq(n, 2);

	ASSERT_OK(flowsdn_ipam_set_pools(ipam, now, 2, NULL), "podCIDR changed");
	ASSERT_OK(flowsdn_ipam_summary(ipam, sum, 4, &n), "summary");
	cr_assert_eq(n, 3, "the new pools, then the draining one");
	cr_assert(flowsdn_prefix_format(&sum[0].pool, b, sizeof(b)) > 0);
	ASSERT_STREQ(b, "10.6.0.0/29", "the new pool first");
	cr_assert_eq(sum[0].used, 0);
	cr_assert_eq(sum[1].used, 1, "the IPv6 pool kept its address");
	cr_assert(flowsdn_prefix_format(&sum[2].pool, b, sizeof(b)) > 0);
	ASSERT_STREQ(b, "10.5.0.0/29", "the old pool drains");
	cr_assert_eq(sum[2].used, 2);
	/* Owners keep what they hold; new owners get the new pool. */
	ASSERT_OK(flowsdn_ipam_lookup(ipam, "a", "eth0", &res), "a keeps its addresses");
	expect_lease(&res.leases[0], "10.5.0.2", "10.5.0.0/29", "10.5.0.1");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "a", "eth0", NULL, &res, NULL), "a again: the same");
	ASSERT_STREQ(FMT(&res.leases[0].addr, a), "10.5.0.2", "same address");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c", "eth0", &o4, &res, NULL), "c");
	expect_lease(&res.leases[0], "10.6.0.2", "10.6.0.0/29", "10.6.0.1");
	/* Released addresses of the draining pool are never given again. */
	cr_assert_eq(flowsdn_ipam_release(ipam, "b", "eth0", NULL), 1);
	for (int i = 0; i < 4; i++) {
		char id[8];

		snprintf(id, sizeof(id), "n%d", i);
		ASSERT_OK(flowsdn_ipam_allocate(ipam, id, "eth0", &o4, &res, NULL), "new owner");
		cr_assert(strncmp(FMT(&res.leases[0].addr, a), "10.6.", 5) == 0, "from the new pool only: %s", a);
	}
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "x", "eth0", &o4, &res, NULL), -FLOWSDN_E_IPAM_EXHAUSTED,
		   "the new pool full: the draining one is not used");
	/* Its last owner goes: so does the pool. */
	cr_assert_eq(flowsdn_ipam_release(ipam, "a", "eth0", NULL), 2);
	ASSERT_OK(flowsdn_ipam_summary(ipam, sum, 4, &n), "summary");
	cr_assert_eq(n, 2, "the drained pool is gone");
	ASSERT_OK(flowsdn_ipam_lookup(ipam, "c", "eth0", &res), "c");
	expect_lease(&res.leases[0], "10.6.0.2", "10.6.0.0/29", "10.6.0.1");
	/* It may come back, empty; an explicit request into it then works. */
	ASSERT_OK(flowsdn_ipam_set_pools(ipam, old, 2, NULL), "back");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "r", "eth0", &req, &res, NULL), "requested");
	flowsdn_ipam_free(ipam);

	persisted = open_default();
	ASSERT_ERR(flowsdn_ipam_set_pools(persisted, now, 2, NULL), -EOPNOTSUPP, "shared state: fixed pools");
	ASSERT_ERR(flowsdn_ipam_set_pools(NULL, now, 2, NULL), -EINVAL, "NULL");
	flowsdn_ipam_free(persisted);
}

Test(ipam, explicit_requests)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	struct flowsdn_ipam *ipam = open_default();
	struct flowsdn_ipam_result res;
	struct flowsdn_addr want[2] = { ADDR("10.1.0.5"), ADDR("fd00:1::6") };
	struct flowsdn_addr bad;
	FLOWSDN_OPTS(flowsdn_ipam_alloc_opts, o, .request = want, .n_request = 2);

	ASSERT_OK(flowsdn_ipam_allocate(ipam, "x", "eth0", &o, &res, NULL), "request both");
	expect_lease(&res.leases[0], "10.1.0.5", "10.1.0.0/29", "10.1.0.1");
	expect_lease(&res.leases[1], "fd00:1::6", "fd00:1::/125", "fd00:1::1");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "x", "eth0", &o, &res, NULL), "same request again");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "y", "eth0", &o, &res, d), -FLOWSDN_E_IPAM_IN_USE, "held by x");
	cr_assert(strstr(flowsdn_test_messages(d), "x/eth0"), "names the holder: %s", flowsdn_test_messages(d));

	o.n_request = 1;
	static const char *const reserved[] = { "10.1.0.0", "10.1.0.1", "10.1.0.7" };
	for (size_t i = 0; i < 3; i++) {
		bad = ADDR(reserved[i]);
		o.request = &bad;
		ASSERT_ERR(flowsdn_ipam_allocate(ipam, "y", "eth0", &o, &res, NULL), -FLOWSDN_E_IPAM_RESERVED, reserved[i]);
	}
	bad = ADDR("fd00:1::1");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "y", "eth0", &o, &res, NULL), -FLOWSDN_E_IPAM_RESERVED, "v6 gateway");
	bad = ADDR("fd00:1::7"); /* no broadcast in IPv6: usable */
	FLOWSDN_OPTS(flowsdn_ipam_alloc_opts, o6, .request = &bad, .n_request = 1, .families = FLOWSDN_IPAM_IPV6);
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "y", "eth0", &o6, &res, NULL), "last IPv6 address");
	bad = ADDR("10.9.9.9");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "z", "eth0", &o, &res, NULL), -FLOWSDN_E_IPAM_NO_POOL, "outside");
	bad = ADDR("10.1.0.6");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "x", "eth0", &o, &res, NULL), -FLOWSDN_E_IPAM_OWNER_CONFLICT,
		   "x asks for another address");
	o.n_request = 2;
	want[1] = ADDR("10.1.0.4");
	o.request = want;
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "z", "eth0", &o, &res, NULL), -EINVAL, "two IPv4 requests");
	flowsdn_ipam_free(ipam);
}

Test(ipam, release_and_next_fit)
{
	struct flowsdn_ipam *ipam = open_default();
	struct flowsdn_ipam_result res;
	char a[FLOWSDN_ADDR_STRLEN];

	ASSERT_OK(flowsdn_ipam_allocate(ipam, "a", "eth0", NULL, &res, NULL), "a");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "b", "eth0", NULL, &res, NULL), "b");
	ASSERT_ERR(flowsdn_ipam_release(ipam, "a", "eth0", NULL), 2, "release both addresses of a");
	ASSERT_ERR(flowsdn_ipam_release(ipam, "a", "eth0", NULL), 0, "second release is a no-op");
	ASSERT_ERR(flowsdn_ipam_release(ipam, "nobody", "eth0", NULL), 0, "unknown owner");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c", "eth0", NULL, &res, NULL), "c");
	/* Next fit: .2 (released) is not reused before .4 .. .6. */
	ASSERT_STREQ(FMT(&res.leases[0].addr, a), "10.1.0.4", "next address after the last given");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "d", "eth0", NULL, &res, NULL), "d");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "e", "eth0", NULL, &res, NULL), "e");
	ASSERT_STREQ(FMT(&res.leases[0].addr, a), "10.1.0.6", "e");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "f", "eth0", NULL, &res, NULL), "f wraps around");
	ASSERT_STREQ(FMT(&res.leases[0].addr, a), "10.1.0.2", "wrapped to the released one");
	flowsdn_ipam_free(ipam);
}

Test(ipam, persisted_and_restored)
{
	struct flowsdn_ipam *ipam = open_default();
	struct flowsdn_ipam_result res;
	struct flowsdn_ipam_allocation *list = NULL;
	struct flowsdn_ipam_pool_summary sum[3];
	size_t n = 0;
	char a[FLOWSDN_ADDR_STRLEN];

	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c1", "eth0", NULL, &res, NULL), "c1");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c2", "eth0", NULL, &res, NULL), "c2");
	ASSERT_OK(flowsdn_ipam_release(ipam, "c1", "eth0", NULL), "release c1");
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c3", "net1", NULL, &res, NULL), "c3");
	flowsdn_ipam_free(ipam);

	ipam = open_default();
	ASSERT_OK(flowsdn_ipam_list(ipam, &list, &n), "list");
	cr_assert_eq(n, 4);
	/* By address, IPv4 first. */
	ASSERT_STREQ(FMT(&list[0].addr, a), "10.1.0.3", "first");
	ASSERT_STREQ(list[0].container_id, "c2", "owner of .3");
	ASSERT_STREQ(FMT(&list[1].addr, a), "10.1.0.4", "second");
	ASSERT_STREQ(list[1].ifname, "net1", "ifname of .4");
	ASSERT_STREQ(FMT(&list[3].addr, a), "fd00:1::4", "last");
	free(list);
	ASSERT_OK(flowsdn_ipam_summary(ipam, sum, 3, &n), "summary");
	cr_assert_eq(n, 2);
	cr_assert(sum[0].size == 8 && sum[0].reserved == 3 && sum[0].used == 2 && sum[0].free == 3);
	cr_assert(sum[1].size == 8 && sum[1].reserved == 2 && sum[1].used == 2 && sum[1].free == 4);
	ASSERT_STREQ(FMT(&sum[0].gateway, a), "10.1.0.1", "gateway");
	/* The cursor survived too: next is .5, not the released .2. */
	ASSERT_OK(flowsdn_ipam_allocate(ipam, "c4", "eth0", NULL, &res, NULL), "c4");
	ASSERT_STREQ(FMT(&res.leases[0].addr, a), "10.1.0.5", "next fit across restart");
	ASSERT_OK(flowsdn_ipam_summary(ipam, sum, 1, &n), "summary into one slot");
	cr_assert_eq(n, 2, "the number of pools even when fewer fit");
	flowsdn_ipam_free(ipam);
}

Test(ipam, two_handles_share_state)
{
	static const char *const pools[] = { "10.3.0.0/29" };
	struct flowsdn_ipam *h1 = open_pools(pools, 1), *h2 = open_pools(pools, 1);
	struct flowsdn_ipam_result r1, r2;

	ASSERT_OK(flowsdn_ipam_allocate(h1, "a", "eth0", NULL, &r1, NULL), "h1");
	ASSERT_OK(flowsdn_ipam_allocate(h2, "b", "eth0", NULL, &r2, NULL), "h2");
	cr_assert(!flowsdn_addr_equal(&r1.leases[0].addr, &r2.leases[0].addr), "two handles gave the same address");
	ASSERT_OK(flowsdn_ipam_lookup(h2, "a", "eth0", &r2), "h2 sees h1's allocation");
	cr_assert(flowsdn_addr_equal(&r1.leases[0].addr, &r2.leases[0].addr));
	ASSERT_ERR(flowsdn_ipam_release(h2, "a", "eth0", NULL), 1, "h2 releases h1's");
	ASSERT_ERR(flowsdn_ipam_lookup(h1, "a", "eth0", &r1), -ENOENT, "h1 sees the release");
	flowsdn_ipam_free(h1);
	flowsdn_ipam_free(h2);
}

static void expect_bad_pools(const char *const *cidrs, size_t n, int err, const char *needle)
{
	struct flowsdn_prefix p[4];
	struct flowsdn_ipam *ipam = NULL;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();

	for (size_t i = 0; i < n; i++)
		p[i] = PFX(cidrs[i]);
	ASSERT_ERR(flowsdn_ipam_new(dir, p, n, NULL, &ipam, d), err, cidrs[n - 1]);
	cr_assert_null(ipam);
	cr_assert(strstr(flowsdn_test_messages(d), needle), "message \"%s\" lacks \"%s\"", flowsdn_test_messages(d), needle);
}

Test(ipam, bad_pools)
{
	static const char *const overlap[] = { "10.0.0.0/16", "10.0.5.0/24" };
	static const char *const v4_32[] = { "10.0.0.1/32" };
	static const char *const v4_31[] = { "10.0.0.0/31" };
	static const char *const v6_128[] = { "fd00::1/128" };
	static const char *const v6_127[] = { "fd00::/127" };
	static const char *const big4[] = { "10.0.0.0/11" };
	static const char *const big6[] = { "fd00::/64" };
	static const char *const ok_big[] = { "10.0.0.0/12", "fd00::/108" };
	struct flowsdn_prefix p = PFX("10.0.0.0/24");
	struct flowsdn_ipam *ipam = NULL;

	expect_bad_pools(overlap, 2, -FLOWSDN_E_IPAM_POOL_OVERLAP, "10.0.0.0/16 and 10.0.5.0/24");
	expect_bad_pools(v4_32, 1, -FLOWSDN_E_IPAM_POOL_TOO_SMALL, "10.0.0.1/32");
	expect_bad_pools(v4_31, 1, -FLOWSDN_E_IPAM_POOL_TOO_SMALL, "10.0.0.0/31");
	expect_bad_pools(v6_128, 1, -FLOWSDN_E_IPAM_POOL_TOO_SMALL, "fd00::1/128");
	expect_bad_pools(v6_127, 1, -FLOWSDN_E_IPAM_POOL_TOO_SMALL, "fd00::/127");
	expect_bad_pools(big4, 1, -FLOWSDN_E_IPAM_POOL_TOO_BIG, "10.0.0.0/11");
	expect_bad_pools(big6, 1, -FLOWSDN_E_IPAM_POOL_TOO_BIG, "fd00::/64");
	ipam = open_pools(ok_big, 2);
	flowsdn_ipam_free(ipam);
	ipam = NULL;

	p.addr.bytes[3] = 1; /* host bits set */
	ASSERT_ERR(flowsdn_ipam_new(dir, &p, 1, NULL, &ipam, NULL), -EINVAL, "host bits");
	ASSERT_ERR(flowsdn_ipam_new(dir, &p, 0, NULL, &ipam, NULL), -EINVAL, "no pool");
	ASSERT_ERR(flowsdn_ipam_new(NULL, &p, 1, NULL, &ipam, NULL), -EINVAL, "no directory");
	cr_assert_null(ipam);
}

/* Pools that cannot work: refused with the reason, and nothing written to
 * the state directory.  Documentation, benchmarking, CGNAT, private and
 * public ranges remain fine. */
Test(ipam, unusable_pools_are_refused_with_the_reason)
{
	static const struct {
		const char *pool, *needle;
	} bad[] = {
		{ "127.0.0.0/24", "pool 127.0.0.0/24 holds loopback addresses" },
		{ "127.255.255.0/30", "loopback" },
		{ "169.254.1.0/24", "pool 169.254.1.0/24 holds 169.254.1.1, the gateway address" },
		{ "169.254.0.0/22", "169.254.1.1, the gateway" },
		{ "169.254.200.0/24", "holds link-local addresses" },
		{ "169.254.169.0/24", "link-local" },
		{ "224.0.0.0/24", "holds multicast addresses" },
		{ "239.255.0.0/16", "multicast" },
		{ "0.0.0.0/24", "holds unspecified addresses" },
		{ "0.1.0.0/24", "holds this-network addresses" },
		{ "255.255.255.0/24", "holds broadcast addresses" },
		{ "::/126", "pool ::/126 holds loopback addresses" },
		{ "fe80::/120", "holds fe80::1, the gateway address" },
		{ "fe80::100/120", "holds link-local addresses" },
		{ "::ffff:10.0.0.0/120", "holds ipv4-mapped addresses" },
		{ "::ffff:0:0/108", "ipv4-mapped" },
		{ "::a00:0/120", "holds ipv4-compatible addresses" },
		{ "ff02::/120", "holds multicast addresses" },
		{ "fd00:ec2::200/120", "holds metadata addresses" },
	};
	static const char *const fine[] = { "192.0.2.0/24", "198.18.0.0/24", "100.64.0.0/24", "172.16.0.0/24",
					    "8.8.8.0/24", "2001:db8::/120", "2606:4700::/120", "fd00:ec2::/120",
					    "169.253.255.0/24", "126.255.255.0/24" };
	struct flowsdn_ipam *ipam;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *one[] = { bad[i].pool };
		const char *two[] = { "10.9.0.0/24", bad[i].pool };

		expect_bad_pools(one, 1, -FLOWSDN_E_IPAM_POOL_CLASS, bad[i].needle);
		expect_bad_pools(two, 2, -FLOWSDN_E_IPAM_POOL_CLASS, bad[i].needle);
	}
	cr_assert(access(dir, F_OK) < 0 || rmdir(dir) == 0, "a refused pool left state behind in %s", dir);
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		const char *one[] = { fine[i] };

		ipam = open_pools(one, 1);
		flowsdn_ipam_free(ipam);
	}
	ASSERT_STREQ(flowsdn_strerror(-FLOWSDN_E_IPAM_POOL_CLASS), "address pool holds addresses no pod can use",
		     "strerror");
}

Test(ipam, bad_owner)
{
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	struct flowsdn_ipam *ipam = open_default();
	struct flowsdn_ipam_result res;
	char longid[300];

	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "", "eth0", NULL, &res, NULL), -FLOWSDN_E_IPAM_OWNER, "empty id");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "a/b", "eth0", NULL, &res, NULL), -FLOWSDN_E_IPAM_OWNER, "slash in id");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "-a", "eth0", NULL, &res, NULL), -FLOWSDN_E_IPAM_OWNER, "leading dash");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, longid, "eth0", NULL, &res, NULL), -FLOWSDN_E_IPAM_OWNER, "long id");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "a", "", NULL, &res, NULL), -FLOWSDN_E_IPAM_OWNER, "empty ifname");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "a", "..", NULL, &res, NULL), -FLOWSDN_E_IPAM_OWNER, "..");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "a", "eth 0", NULL, &res, NULL), -FLOWSDN_E_IPAM_OWNER, "space");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, "a", "abcdefghijklmnop", NULL, &res, NULL), -FLOWSDN_E_IPAM_OWNER, "16 bytes");
	ASSERT_ERR(flowsdn_ipam_allocate(ipam, NULL, "eth0", NULL, &res, NULL), -FLOWSDN_E_IPAM_OWNER, "NULL id");
	ASSERT_ERR(flowsdn_ipam_allocate(NULL, "a", "eth0", NULL, &res, NULL), -EINVAL, "NULL handle");
	ASSERT_ERR(flowsdn_ipam_release(ipam, "a/b", "eth0", d), -FLOWSDN_E_IPAM_OWNER, "release, bad id");
	cr_assert(strstr(flowsdn_test_messages(d), "invalid owner \"a/b\""), "%s", flowsdn_test_messages(d));
	ASSERT_ERR(flowsdn_ipam_lookup(ipam, "a", "x/y", &res), -FLOWSDN_E_IPAM_OWNER, "lookup, bad ifname");
	cr_assert(flowsdn_ipam_owner_valid("0123abc_d.e-f", "abcdefghijklmno"));
	flowsdn_ipam_free(ipam);
}

/* A state file that cannot be trusted refuses the open, names the file,
 * and is left byte for byte as it was. */
static void expect_state_refused(int err, const char *what)
{
	struct flowsdn_prefix p[2] = { PFX("10.1.0.0/29"), PFX("fd00:1::/125") };
	struct flowsdn_ipam *ipam = NULL;
	uint8_t *before, *after;
	size_t nb, na;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();

	read_whole(state, &before, &nb);
	ASSERT_ERR(flowsdn_ipam_new(dir, p, 2, NULL, &ipam, d), err, what);
	cr_assert(strstr(flowsdn_test_messages(d), "ipam.state"), "%s: message names the file: %s", what, flowsdn_test_messages(d));
	read_whole(state, &after, &na);
	cr_assert(nb == na && memcmp(before, after, nb) == 0, "%s: the state file was changed", what);
	free(before);
	free(after);
}

Test(ipam, bad_state_files)
{
	struct flowsdn_ipam *ipam = open_default();
	struct flowsdn_ipam_result res;
	uint8_t *good, *bad;
	size_t n;

	ASSERT_OK(flowsdn_ipam_allocate(ipam, "keep", "eth0", NULL, &res, NULL), "allocate");
	flowsdn_ipam_free(ipam);
	read_whole(state, &good, &n);
	bad = malloc(n);

	/* Truncated, at several places. */
	static const size_t cuts[] = { 0, 7, 23, 30 };
	for (size_t i = 0; i < 4; i++) {
		write_whole(state, good, cuts[i]);
		expect_state_refused(-FLOWSDN_E_IPAM_STATE_CORRUPT, "truncated");
	}
	write_whole(state, good, n - 1);
	expect_state_refused(-FLOWSDN_E_IPAM_STATE_CORRUPT, "last byte missing");
	/* A flipped bit in the payload. */
	memcpy(bad, good, n);
	bad[40] ^= 0x10;
	write_whole(state, bad, n);
	expect_state_refused(-FLOWSDN_E_IPAM_STATE_CORRUPT, "bad checksum");
	/* Wrong magic. */
	memcpy(bad, good, n);
	bad[0] = 'X';
	fix_crc(bad, n);
	write_whole(state, bad, n);
	expect_state_refused(-FLOWSDN_E_IPAM_STATE_CORRUPT, "magic");
	/* Newer version, valid checksum. */
	memcpy(bad, good, n);
	bad[8] = 2;
	fix_crc(bad, n);
	write_whole(state, bad, n);
	expect_state_refused(-FLOWSDN_E_IPAM_STATE_VERSION, "version 2");
	/* Valid container, an allocation on the gateway address. */
	memcpy(bad, good, n);
	{
		/* header 24, generation 8, n_pools 4, 2 pools x 26, n_allocs 4,
		 * then family (1) and the address: make the first .1. */
		size_t at = 24 + 8 + 4 + 2 * 26 + 4 + 1 + 3;

		cr_assert_eq(bad[at], 2, "layout: first allocation is 10.1.0.2");
		bad[at] = 1;
	}
	fix_crc(bad, n);
	write_whole(state, bad, n);
	expect_state_refused(-FLOWSDN_E_IPAM_STATE_CORRUPT, "reserved address allocated");

	/* The good file still opens, with the allocation. */
	write_whole(state, good, n);
	ipam = open_default();
	ASSERT_OK(flowsdn_ipam_lookup(ipam, "keep", "eth0", &res), "allocation survived");
	flowsdn_ipam_free(ipam);
	free(good);
	free(bad);
}

Test(ipam, removed_pool_with_allocations_is_refused)
{
	static const char *const both[] = { "10.1.0.0/29", "10.2.0.0/29" };
	static const char *const only2[] = { "10.2.0.0/29" };
	struct flowsdn_ipam *ipam = open_pools(both, 2);
	struct flowsdn_prefix p = PFX("10.2.0.0/29");
	struct flowsdn_ipam_result res;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();

	ASSERT_OK(flowsdn_ipam_allocate(ipam, "a", "eth0", NULL, &res, NULL), "a in the first pool");
	flowsdn_ipam_free(ipam);
	ipam = NULL;
	ASSERT_ERR(flowsdn_ipam_new(dir, &p, 1, NULL, &ipam, d), -FLOWSDN_E_IPAM_ORPHAN, "pool removed");
	cr_assert(strstr(flowsdn_test_messages(d), "10.1.0.2"), "names the address: %s", flowsdn_test_messages(d));
	ipam = open_pools(both, 2);
	ASSERT_OK(flowsdn_ipam_lookup(ipam, "a", "eth0", &res), "still there");
	ASSERT_OK(flowsdn_ipam_release(ipam, "a", "eth0", NULL), "release");
	flowsdn_ipam_free(ipam);
	/* Empty now: the pool may go. */
	ipam = open_pools(only2, 1);
	flowsdn_ipam_free(ipam);
}

Test(ipam, stale_temporaries_removed_at_open)
{
	struct flowsdn_ipam *ipam = open_default();
	char tmp[400];
	FILE *f;

	flowsdn_ipam_free(ipam);
	snprintf(tmp, sizeof(tmp), "%s/ipam.state.tmp.AbC123", dir);
	f = fopen(tmp, "w");
	cr_assert(f);
	fputs("half written", f);
	fclose(f);
	ipam = open_default();
	cr_assert(access(tmp, F_OK) < 0, "stale temporary %s still there", tmp);
	flowsdn_ipam_free(ipam);
	flowsdn_ipam_free(NULL);
}

Test(ipam, strerror_block)
{
	ASSERT_STREQ(flowsdn_strerror(-FLOWSDN_E_IPAM_STATE_VERSION), "IPAM state file has a newer format version",
		     "strerror");
	ASSERT_STREQ(flowsdn_strerror(FLOWSDN_E_IPAM_MAX_), "unknown flowsdn error", "end of block");
}
