/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * IPAM under crashes and concurrency, without privileges:
 *  - a child allocating in a loop is killed with SIGKILL at random moments,
 *    120 times; after each kill the state reopens, holds no address twice,
 *    holds every allocation the child reported as done, and at most one it
 *    did not report (the one in flight when it died);
 *  - 50 processes allocating at once get 50 distinct addresses.
 */
#include "ipam-helpers.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <flowsdn/ipam.h>

#include "helpers.h"

static char top[256], dir[300];

static void setup(void)
{
	make_tmpdir(top, sizeof(top), dir, sizeof(dir));
}

static void teardown(void)
{
	rm_tree(top);
}

TestSuite(ipam_crash, .init = setup, .fini = teardown, .timeout = 300);

static const char *const pool_text[] = { "10.20.0.0/16", "fd00:20::/112" };

static int open_ipam(struct flowsdn_ipam **ret)
{
	struct flowsdn_prefix p[2];

	for (int i = 0; i < 2; i++)
		if (flowsdn_prefix_parse(pool_text[i], strlen(pool_text[i]), NULL, &p[i]) < 0)
			return -EINVAL;
	return flowsdn_ipam_new(dir, p, 2, NULL, ret, NULL);
}

/* Child: allocate "r<round>-<k>" for k = 0, 1, ... and report each k
 * after the call returned (so the report never runs ahead of the state).
 * Every fourth owner is released again and reported as negative. */
_Noreturn static void allocator_child(int round, int fd)
{
	struct flowsdn_ipam *ipam = NULL;
	char owner[32];

	if (open_ipam(&ipam) < 0)
		_exit(3);
	for (int k = 0;; k++) {
		int32_t msg = k;

		while (k >= 4000) /* the parent's bookkeeping holds 4096 */
			pause();

		snprintf(owner, sizeof(owner), "r%d-%d", round, k);
		if (flowsdn_ipam_allocate(ipam, owner, "eth0", NULL, NULL, NULL) < 0)
			_exit(4);
		if (write(fd, &msg, sizeof(msg)) != sizeof(msg))
			_exit(5);
		if (k % 4 == 3) {
			snprintf(owner, sizeof(owner), "r%d-%d", round, k - 1);
			if (flowsdn_ipam_release(ipam, owner, "eth0", NULL) != 2) /* IPv4 and IPv6 */
				_exit(6);
			msg = -(k - 1) - 1;
			if (write(fd, &msg, sizeof(msg)) != sizeof(msg))
				_exit(5);
		}
	}
}

static int addr_cmp(const void *a, const void *b)
{
	return flowsdn_addr_compare(&((const struct flowsdn_ipam_allocation *)a)->addr,
				    &((const struct flowsdn_ipam_allocation *)b)->addr);
}

static int count_temporaries(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0; /* killed before the directory was made */
	while ((de = readdir(d)))
		n += strstr(de->d_name, ".tmp.") != NULL;
	closedir(d);
	return n;
}

static void check_no_temporaries(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	cr_assert(d);
	while ((de = readdir(d)))
		cr_assert(!strstr(de->d_name, ".tmp."), "temporary %s left after open", de->d_name);
	closedir(d);
}

Test(ipam_crash, sigkill_at_random_moments)
{
	static bool held[4096];
	unsigned int seed = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	int kills = 0, total_reported = 0, torn_writes = 0, in_flight = 0;

	cr_log_info("seed %u", seed);
	srand(seed);
	for (int round = 0; round < 120; round++) {
		struct flowsdn_ipam *ipam = NULL;
		struct flowsdn_ipam_allocation *list = NULL;
		size_t n = 0, unreported = 0, missing = 0;
		int fds[2], status, max_k = -1;
		int32_t msg;
		pid_t pid;
		char prefix[16];

		cr_assert(pipe2(fds, O_CLOEXEC) == 0);
		pid = fork();
		cr_assert(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			allocator_child(round, fds[1]);
		}
		close(fds[1]);
		/* One round in eight: 0 to 5 ms, before or during the open.
		 * The others: once the child has allocated (however slow, e.g.
		 * under valgrind), 0 to 40 ms more: in the middle of a write,
		 * or after many allocations. */
		if (round % 8 == 0) {
			usleep((useconds_t)(rand() % 5000));
		} else {
			struct pollfd pfd = { .fd = fds[0], .events = POLLIN };

			cr_assert(poll(&pfd, 1, 60000) == 1, "round %d: child made no allocation in 60 s", round);
			usleep((useconds_t)(rand() % 40000));
		}
		cr_assert(kill(pid, SIGKILL) == 0);
		cr_assert(waitpid(pid, &status, 0) == pid);
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			  "round %d: child ended by itself (status %d): it failed", round, status);
		kills++;

		memset(held, 0, sizeof(held));
		while (read(fds[0], &msg, sizeof(msg)) == sizeof(msg)) {
			if (msg >= 0) {
				cr_assert(msg < 4096);
				held[msg] = true;
				max_k = msg > max_k ? msg : max_k;
				total_reported++;
			} else {
				held[-msg - 1] = false;
			}
		}
		close(fds[0]);

		torn_writes += count_temporaries() > 0;
		ASSERT_OK(open_ipam(&ipam), "reopen after SIGKILL");
		check_no_temporaries();
		ASSERT_OK(flowsdn_ipam_list(ipam, &list, &n), "list");
		if (n)
			qsort(list, n, sizeof(*list), addr_cmp);
		for (size_t i = 1; i < n; i++)
			cr_assert(!flowsdn_addr_equal(&list[i - 1].addr, &list[i].addr),
				  "round %d: address given twice (%s/%s and %s/%s)", round, list[i - 1].container_id,
				  list[i - 1].ifname, list[i].container_id, list[i].ifname);
		snprintf(prefix, sizeof(prefix), "r%d-", round);
		for (size_t i = 0; i < n; i++) {
			int k;

			if (strncmp(list[i].container_id, prefix, strlen(prefix)) != 0)
				continue;
			if (list[i].addr.family != FLOWSDN_AF_INET)
				continue; /* count owners once */
			k = atoi(list[i].container_id + strlen(prefix));
			if (k < 0 || k >= 4096 || !held[k])
				unreported++;
		}
		for (int k = 0; k <= max_k; k++) {
			struct flowsdn_ipam_result res;
			char owner[32];

			if (!held[k])
				continue;
			snprintf(owner, sizeof(owner), "r%d-%d", round, k);
			if (flowsdn_ipam_lookup(ipam, owner, "eth0", &res) < 0) {
				/* Only the release in flight may be missing: that of
				 * k - 1 right after allocation k with k % 4 == 3. */
				cr_assert(k == max_k - 1 && max_k % 4 == 3, "round %d: reported allocation %s lost",
					  round, owner);
				missing++;
				continue;
			}
			cr_assert_eq(res.n, 2, "round %d: %s lost an address", round, owner);
		}
		/* One operation was in flight: an allocation done but not
		 * reported, or a release done but not reported. */
		cr_assert(unreported + missing <= 1, "round %d: %zu unreported allocations, %zu unreported releases",
			  round, unreported, missing);
		in_flight += unreported + missing;
		free(list);
		/* Start the next round from a small state. */
		for (size_t k = 0; k <= (size_t)max_k + 1; k++) {
			char owner[32];

			snprintf(owner, sizeof(owner), "r%d-%zu", round, k);
			cr_assert(flowsdn_ipam_release(ipam, owner, "eth0", NULL) >= 0);
		}
		flowsdn_ipam_free(ipam);
	}
	cr_assert(kills >= 100);
	/* How often the kill hit inside a write (a temporary was left) and
	 * after a persisted but unreported operation: evidence that the
	 * moments were varied, not a pass/fail criterion. */
	cr_log_info("%d kills, %d allocations reported, %d kills left a temporary file, %d an unreported operation",
		    kills, total_reported, torn_writes, in_flight);
	cr_assert(total_reported > 0, "no child ever allocated: the test did not test anything");
}

Test(ipam_crash, fifty_parallel_processes)
{
	struct flowsdn_ipam *ipam = NULL;
	struct flowsdn_ipam_allocation *list = NULL;
	pid_t pids[50];
	int fds[2];
	size_t n = 0;
	struct flowsdn_addr got[50];
	int ngot = 0;

	/* Create the state first so all children race on allocation only. */
	ASSERT_OK(open_ipam(&ipam), "create");
	flowsdn_ipam_free(ipam);
	cr_assert(pipe2(fds, O_CLOEXEC) == 0);
	for (int i = 0; i < 50; i++) {
		pids[i] = fork();
		cr_assert(pids[i] >= 0);
		if (pids[i] == 0) {
			struct flowsdn_ipam *h = NULL;
			struct flowsdn_ipam_result res;
			char owner[16];

			close(fds[0]);
			snprintf(owner, sizeof(owner), "p%d", i);
			if (open_ipam(&h) < 0 || flowsdn_ipam_allocate(h, owner, "eth0", NULL, &res, NULL) < 0)
				_exit(1);
			if (write(fds[1], &res.leases[0].addr, sizeof(res.leases[0].addr)) !=
			    sizeof(res.leases[0].addr))
				_exit(2);
			flowsdn_ipam_free(h);
			_exit(0);
		}
	}
	close(fds[1]);
	for (int i = 0; i < 50; i++) {
		int status;

		cr_assert(waitpid(pids[i], &status, 0) == pids[i]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d failed (status %d)", i, status);
	}
	while (ngot < 50 && read(fds[0], &got[ngot], sizeof(got[0])) == sizeof(got[0]))
		ngot++;
	close(fds[0]);
	cr_assert_eq(ngot, 50);
	for (int i = 0; i < 50; i++)
		for (int k = 0; k < i; k++)
			cr_assert(!flowsdn_addr_equal(&got[i], &got[k]), "processes %d and %d got the same address", i, k);
	ASSERT_OK(open_ipam(&ipam), "reopen");
	ASSERT_OK(flowsdn_ipam_list(ipam, &list, &n), "list");
	cr_assert_eq(n, 100, "50 owners x 2 families");
	free(list);
	flowsdn_ipam_free(ipam);
}
