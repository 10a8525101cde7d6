/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Retiring a replica whose `runsc delete` removes the container's state and
 * then hangs, as one killed at the runtime's timeout under load did (the
 * sandbox and its gofer kept running, holding the root file system's loop
 * device, unknown to `runsc list`): op_sandbox_retire(), what the runtime's
 * teardown runs, kills the sandbox by the pid and start time recorded at
 * its start, the gofer by its command line and a process left in the
 * replica's cgroup, so that none is left and the loop device goes with the
 * lazy unmount; a process of another bundle and a pid whose start time is
 * not the recorded one are never touched.  Root: a private mount
 * namespace, a loop device and a cgroup v1 pids group of its own, all
 * removed; a fake runsc script (state, kill, delete that hangs).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "loop-helpers.h"
#include "runtime-internal.h"

#define MIB (UINT64_C(1) << 20)

static char dir[64], cgroup[64], cgdir[128];

static void setup(void)
{
	REQUIRE_ROOT();
	if (access("/dev/loop-control", R_OK | W_OK) < 0)
		cr_skip_test("no /dev/loop-control: the kernel has no loop devices here");
	cr_assert(unshare(CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
	cr_assert(mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0);
	strcpy(dir, "/var/tmp/test-retire-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(cgroup, sizeof(cgroup), "flash-test-retire-%d", (int)getpid());
	snprintf(cgdir, sizeof(cgdir), "/sys/fs/cgroup/pids/%s", cgroup);
}

static void teardown(void)
{
	char cmd[256];

	if (!dir[0])
		return;
	rmdir(cgdir);
	snprintf(cmd, sizeof(cmd), "umount -l '%s'/replicas/r1/rootfs 2>/dev/null; rm -rf '%s'", dir, dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(retire, .init = setup, .fini = teardown);

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert(fclose(f) == 0);
	cr_assert(chmod(path, mode) == 0);
}

/* A process that blocks for ever in a shell builtin (no child of its
 * own) with argv @argv (argv[0] is what ps shows), its working directory
 * @cwd (NULL: unchanged), in cgroup @procs (NULL: none). */
static pid_t spawn(const char *const *argv, const char *cwd, const char *procs)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		if (procs) {
			FILE *f = fopen(procs, "w");

			if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
				_exit(126);
		}
		if (cwd && chdir(cwd) < 0)
			_exit(126);
		execv("/bin/sh", (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static bool gone_by_kill(pid_t pid)
{
	int status = 0;

	for (int i = 0; i < 500; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
		usleep(10000);
	}
	return false;
}

#define BLOCK "exec 3<>\"$0\"; read -r x <&3"

Test(retire, a_delete_that_hangs_after_removing_the_state_leaves_no_process_and_no_loop_device)
{
	char runsc[128], root[128], bundle[128], rootfs[160], img[128], fifo[128], state[160], err[512], procs[192],
	     root_arg[160], bundle_arg[160], other[128], why[512] = "";
	struct op_sandbox sb, wrong;
	pid_t sandbox, gofer, stray, foreign, innocent;
	int64_t t0;
	int k;

	snprintf(runsc, sizeof(runsc), "%s/runsc", dir);
	snprintf(root, sizeof(root), "%s/runsc-root", dir);
	snprintf(bundle, sizeof(bundle), "%s/replicas/r1", dir);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", bundle);
	snprintf(img, sizeof(img), "%s/rootfs.img", dir);
	snprintf(fifo, sizeof(fifo), "%s/block", dir);
	snprintf(state, sizeof(state), "%s/r1", root);
	snprintf(other, sizeof(other), "%s/replicas/r2", dir);
	snprintf(root_arg, sizeof(root_arg), "--root=%s", root);
	snprintf(bundle_arg, sizeof(bundle_arg), "--bundle=%s", bundle);
	cr_assert(mkdir(root, 0700) == 0 && mkdir(state, 0700) == 0);
	snprintf(err, sizeof(err), "mkdir -p '%s' '%s'", bundle, other);
	cr_assert(system(err) == 0);
	cr_assert(mkfifo(fifo, 0600) == 0);
	/* runsc that removes the container's state on delete, then hangs. */
	write_file(runsc,
		   "#!/bin/sh\n"
		   "root=$2; shift 4\n"
		   "echo \"$*\" >>\"$root/calls\"\n"
		   "case $1 in\n"
		   "kill) exit 0 ;;\n"
		   "delete) rm -rf \"$root/$3\"; exec sleep 30 ;;\n"
		   "*) exit 1 ;;\n"
		   "esac\n",
		   0755);
	ASSERT_OK(op_storage_create(img, 16 * MIB, NULL, err, sizeof(err)), "image");
	ASSERT_OK(op_storage_mount(img, rootfs, err, sizeof(err)), "mount");
	cr_assert_eq(loops_of(img), 1);
	if (mkdir(cgdir, 0755) < 0)
		cr_skip_test("no cgroup v1 pids hierarchy: %s", strerror(errno));
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgdir);

	/* What runsc run left: the sandbox and the gofer, both using the
	 * root file system (their working directory), and a process in the
	 * replica's cgroup. */
	sandbox = spawn((const char *const[]){ "runsc-sandbox", "-c", BLOCK, fifo, root_arg, "--network=sandbox", "boot",
					       bundle_arg, "r1", NULL },
			rootfs, NULL);
	gofer = spawn((const char *const[]){ "runsc-gofer", "-c", BLOCK, fifo, root_arg, "gofer", "--bundle", bundle,
					     "--spec-fd=3", NULL },
		      rootfs, NULL);
	stray = spawn((const char *const[]){ "stray", "-c", BLOCK, fifo, NULL }, NULL, procs);
	/* Never to be touched: another replica's gofer, a process whose pid
	 * is given with another start time. */
	foreign = spawn((const char *const[]){ "runsc-gofer", "-c", BLOCK, fifo, root_arg, "gofer", "--bundle", other, NULL },
			NULL, NULL);
	innocent = spawn((const char *const[]){ "innocent", "-c", BLOCK, fifo, NULL }, NULL, NULL);
	usleep(100000);
	ASSERT_OK(op_sandbox_identify(sandbox, &sb), "the sandbox as recorded at its start");
	ASSERT_OK(op_sandbox_identify(innocent, &wrong), "innocent");
	op_sandbox_close(&wrong);
	wrong.start_time += 1; /* a pid reused by another process */
	cr_assert_eq(op_sandbox_reap(&wrong, NULL, NULL, NULL, 200), 0, "a reused pid is not killed");
	cr_assert_eq(kill(innocent, 0), 0);

	/* The root file system unmounted lazily (as the teardown does): the
	 * loop device stays while the sandbox's processes use it. */
	cr_assert(umount2(rootfs, MNT_DETACH) == 0);
	usleep(100000);
	cr_assert_eq(loops_of(img), 1, "held by the sandbox and the gofer");

	t0 = (int64_t)time(NULL);
	k = op_sandbox_retire(&(struct op_retire){
		.runsc = runsc, .root = root, .id = "r1", .bundle = bundle, .cgroup = cgroup, .sandbox = &sb,
		.kill_timeout_ms = 2000, .delete_timeout_ms = 300, .reap_timeout_ms = 3000, .err = why,
		.err_size = sizeof(why) });
	cr_assert_eq(k, 3, "the sandbox, the gofer and the cgroup's process killed: %d (%s)", k, why);
	cr_assert(strstr(why, "runsc delete: timed out"), "%s", why);
	cr_assert(access(state, F_OK) < 0, "the fake delete removed the state first");
	cr_assert_leq((int64_t)time(NULL) - t0, 5);
	cr_assert(gone_by_kill(sandbox), "the sandbox");
	cr_assert(gone_by_kill(gofer), "the gofer");
	cr_assert(gone_by_kill(stray), "the cgroup's process");
	cr_assert_eq(kill(foreign, 0), 0, "another bundle's gofer lives");
	cr_assert_eq(kill(innocent, 0), 0, "the innocent lives");
	for (int i = 0; i < 500 && loops_of(img); i++)
		usleep(10000);
	cr_assert_eq(loops_of(img), 0, "no loop device left");
	op_sandbox_close(&sb);
	cr_assert(!op_sandbox_alive(&sb));
	/* Nothing left to kill: a second retirement kills nothing. */
	cr_assert_eq(op_sandbox_reap(NULL, root, bundle, cgroup, 200), 0);

	kill(foreign, SIGKILL);
	kill(innocent, SIGKILL);
	waitpid(foreign, NULL, 0);
	waitpid(innocent, NULL, 0);
}
