/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/sandbox [N]: sandbox sessions on the gVisor backend (issue 20
 * item 6), root and runsc needed.
 *
 * Provision -> the first Exec (`/bin/echo ready`) answered, N sequential
 * sessions (default 30) each of:
 *   cold  the provider over a backend without a pool (runsc run of a new
 *         sandbox, then the exec through the deadline wrapper);
 *   warm  the same with a pool of one (the pool refilled, untimed, before
 *         each session);
 *   bare  `runsc run --detach` + `runsc exec ID /bin/echo ready` of the
 *         same bundle (same config.json, netns, overlay, flags);
 * in an order that rotates every session (the warm claim, Provision
 * alone, reported too).  Then the Exec round trip:
 * flash_sandbox_exec(/bin/true), without and with a 60 s deadline,
 * against a bare `runsc exec ID /bin/true` of one sandbox, in rotating
 * order, N each.  Medians, p95, p99 and the bench_load
 * average before and after.  Reaps and deletes are not timed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <flash/sandbox.h>
#include <flash/spec.h>

#include "bench.h"
#include "runtime-internal.h"
#include "runtime.h"
#include "sandbox-gvisor.h"
#include "sandbox-image.h"
#include "util.h"

#define RUNSC "/usr/bin/runsc"
#define IMAGE "bench-image"

static char base[128], image[160];
static struct sbx_image the_image = { .name = IMAGE, .dir = image };

/* Whatever a run leaves (also a failed one): sandboxes, netns mounts,
 * cgroups, files. */
static void cleanup(void)
{
	char cmd[2048];

	if (!base[0])
		return;
	snprintf(cmd, sizeof(cmd),
		 "B=%s; for R in $B/bare-runsc $B/cold/runsc $B/warm/runsc; do"
		 " for c in $(" RUNSC " --root $R list -q 2>/dev/null); do " RUNSC " --root $R delete -force $c >/dev/null 2>&1; done; done;"
		 " for n in $B/bare/netns $B/*/sessions/*/netns; do umount $n 2>/dev/null; done; rm -rf $B;"
		 " for d in $(find /sys/fs/cgroup/ -maxdepth 3 -type d -path '*/sbx-bench*' 2>/dev/null | sort -r); do rmdir $d 2>/dev/null; done; true",
		 base);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", base);
}

static int run(const char *const *argv, bool to_null)
{
	struct op_exec e = { .argv = argv, .timeout_ms = 60000 };
	int status = -1, devnull = -1, r;

	if (to_null) {
		devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		e.stdout_fd = e.stderr_fd = devnull;
	}
	r = op_exec_run(&e, &status, NULL, NULL);
	if (devnull >= 0)
		close(devnull);
	return r < 0 ? r : status == 0 ? 0 : -EIO;
}

/* The bare bundle: the backend's config.json for the same spec. */
static int bare_bundle(const struct flash_spec *spec, const char *dir)
{
	static const char *const keepalive[] = { "/bin/bash", "-c",
		"trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done", NULL };
	char netns[512], cfg[512], *config = NULL;
	size_t len = 0;
	int r;

	snprintf(netns, sizeof(netns), "%s/netns", dir);
	snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
	r = util_mkdir_p(dir, 0700);
	if (r == 0) {
		struct op_bundle_params bp = { .spec = spec, .hostname = "bare", .netns_path = netns,
					       .cgroups_path = "/sbx-bench/bare", .argv = keepalive,
					       .root_path = image };

		r = op_bundle_config(&bp, &config, &len);
	}
	if (r == 0)
		r = util_write_file_atomic(cfg, config, len, 0600);
	free(config);
	return r;
}

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)atoi(argv[1]) : 30;
	static const char spec_json[] =
		"{\"region\": \"heteronet-global\", \"image\": \"" IMAGE "\", \"cpu_millis\": 500, \"memory_mib\": 256}";
	const struct flash_sandbox_backend_ops *ops_cold, *ops_warm;
	struct flash_sandbox_provider *cold = NULL, *warm = NULL;
	void *bc = NULL, *bw = NULL;
	struct flash_spec *spec = NULL;
	double *t_cold, *t_warm, *t_claim, *t_bare, *x_ours, *x_dl, *x_bare;
	char dir[256], bare_dir[200], bare_root[256], netns[512];
	int r;

	if (geteuid() != 0 || access(RUNSC, X_OK) < 0) {
		fprintf(stderr, "bench/sandbox needs root and %s\n", RUNSC);
		return 77;
	}
	if (n < 3)
		n = 3;
	signal(SIGPIPE, SIG_IGN);
	snprintf(base, sizeof(base), "/tmp/sbx-bench-%d", getpid());
	atexit(cleanup);
	snprintf(image, sizeof(image), "%s/image", base);
	if (sbx_image_build(image) < 0) {
		fprintf(stderr, "could not build the image\n");
		return 1;
	}
	if (flash_spec_parse(spec_json, sizeof(spec_json) - 1, NULL, &spec, NULL) < 0)
		return 1;
	{
		FLASH_OPTS(op_sandbox_gvisor_opts, o, .rootfs = sbx_image_rootfs, .rootfs_ctx = &the_image,
			   .cgroup_parent = "/sbx-bench");

		snprintf(dir, sizeof(dir), "%s/cold", base);
		o.dir = dir;
		r = op_sandbox_gvisor_new(&o, &ops_cold, &bc);
		if (r == 0)
			r = flash_sandbox_provider_new(ops_cold, bc, NULL, &cold);
		snprintf(dir, sizeof(dir), "%s/warm", base);
		o.dir = dir;
		o.pool_size = 1;
		o.pool_image = IMAGE;
		o.pool_cpu_millis = 500;
		o.pool_memory_mib = 256;
		if (r == 0)
			r = op_sandbox_gvisor_new(&o, &ops_warm, &bw);
		if (r == 0)
			r = flash_sandbox_provider_new(ops_warm, bw, NULL, &warm);
		if (r < 0) {
			fprintf(stderr, "backends: %s\n", strerror(-r));
			return 1;
		}
	}
	snprintf(bare_dir, sizeof(bare_dir), "%s/bare", base);
	snprintf(bare_root, sizeof(bare_root), "%s/bare-runsc", base);
	snprintf(netns, sizeof(netns), "%s/netns", bare_dir);
	if (bare_bundle(spec, bare_dir) < 0) {
		fprintf(stderr, "bare bundle failed\n");
		return 1;
	}
	t_cold = calloc(n, sizeof(double));
	t_warm = calloc(n, sizeof(double));
	t_claim = calloc(n, sizeof(double));
	x_dl = calloc(n, sizeof(double));
	t_bare = calloc(n, sizeof(double));
	x_ours = calloc(n, sizeof(double));
	x_bare = calloc(n, sizeof(double));
	bench_load("before");
	for (unsigned int i = 0; i < n; i++) {
		for (unsigned int k = 0; k < 3; k++) {
			unsigned int which = (i + k) % 3;
			char sid[32];
			struct flash_sandbox_info info;
			struct flash_sandbox_exec_result res;
			size_t got = 0;
			const char *echo[] = { "/bin/echo", "ready", NULL };
			FLASH_OPTS(flash_sandbox_exec_opts, eo, .argv = echo, .stdout_fn = bench_count_sink,
				   .stdout_userdata = &got);
			double t0;

			snprintf(sid, sizeof(sid), "bench-%u-%u", which, i);
			if (which < 2) {
				struct flash_sandbox_provider *p = which == 0 ? cold : warm;

				if (which == 1)
					for (int w = 0; w < 400 && op_sandbox_gvisor_pool_idle(bw) < 1; w++)
						usleep(25000);
				t0 = bench_now_ms();
				r = flash_sandbox_provision(p, sid, spec, 600, &info, NULL);
				if (which == 1)
					t_claim[i] = bench_now_ms() - t0;
				if (r == 0)
					r = flash_sandbox_exec(p, sid, &eo, &res);
				(which == 0 ? t_cold : t_warm)[i] = bench_now_ms() - t0;
				if (r < 0 || got != 6 || (which == 1 && !info.from_pool)) {
					fprintf(stderr, "%s session %u failed: %s (got %zu, pool %d)\n",
						which ? "warm" : "cold", i, strerror(-r), got, info.from_pool);
					return 1;
				}
				if (flash_sandbox_reap(p, sid) < 0)
					fprintf(stderr, "reap %s failed\n", sid);
			} else {
				char cid[32];

				snprintf(cid, sizeof(cid), "bare-%u", i);
				r = op_netns_create(netns);
				if (r < 0) {
					fprintf(stderr, "netns %s: %s\n", netns, strerror(-r));
					return 1;
				}
				t0 = bench_now_ms();
				r = run((const char *const[]){ RUNSC, "--root", bare_root, "--platform=ptrace",
							       "--network=none", "--overlay2=root:memory", "run",
							       "--detach", "--bundle", bare_dir, cid, NULL }, true);
				if (r == 0)
					r = run((const char *const[]){ RUNSC, "--root", bare_root, "exec", cid,
								       "/bin/echo", "ready", NULL }, false);
				t_bare[i] = bench_now_ms() - t0;
				if (r < 0) {
					fprintf(stderr, "bare session %u failed\n", i);
					return 1;
				}
				if (i == n - 1) {
					/* the exec round trip, on this sandbox and a session */
					static const char *const true_argv[] = { "/bin/true", NULL };
					FLASH_OPTS(flash_sandbox_exec_opts, to, .argv = true_argv);
					FLASH_OPTS(flash_sandbox_exec_opts, tdl, .argv = true_argv, .timeout_ms = 60000);
					struct flash_sandbox_info wi;

					r = flash_sandbox_provision(warm, "bench-exec", spec, 600, &wi, NULL);
					if (r < 0) {
						fprintf(stderr, "provision for the exec round trip: %s\n", flash_strerror(r));
						return 1;
					}
					for (unsigned int j = 0; j < n; j++) {
						for (int o2 = 0; o2 < 3; o2++) {
							unsigned int kind = (j + (unsigned int)o2) % 3;
							bool ours = kind < 2;
							double s = bench_now_ms();

							if (ours)
								r = flash_sandbox_exec(warm, "bench-exec", kind ? &tdl : &to,
										       &res);
							else
								r = run((const char *const[]){ RUNSC, "--root", bare_root,
											       "exec", cid, "/bin/true",
											       NULL }, false);
							(kind == 0 ? x_ours : kind == 1 ? x_dl : x_bare)[j] = bench_now_ms() - s;
							if (r < 0 || (ours && res.exit_code != 0)) {
								fprintf(stderr, "%s exec %u: %s\n", ours ? "provider" : "bare", j,
									flash_strerror(r));
								return 1;
							}
						}
					}
					if (flash_sandbox_reap(warm, "bench-exec") < 0)
						fprintf(stderr, "reap failed\n");
				}
				(void)run((const char *const[]){ RUNSC, "--root", bare_root, "delete", "-force", cid, NULL },
					  true);
				(void)op_netns_remove(netns);
			}
		}
	}
	bench_load("after");
	bench_report("cold provision -> echo ready", t_cold, n);
	bench_report("warm provision -> echo ready", t_warm, n);
	bench_report("  of which the claim (Provision)", t_claim, n);
	bench_report("bare runsc run + runsc exec", t_bare, n);
	bench_report("Exec /bin/true (provider)", x_ours, n);
	bench_report("Exec /bin/true, 60 s deadline", x_dl, n);
	bench_report("bare runsc exec /bin/true", x_bare, n);
	printf("cold/bare %.2fx, warm/bare %.2fx, exec/bare exec %.2fx, with a deadline %.2fx (medians)\n",
	       t_cold[n / 2] / t_bare[n / 2], t_warm[n / 2] / t_bare[n / 2], x_ours[n / 2] / x_bare[n / 2],
	       x_dl[n / 2] / x_bare[n / 2]);
	flash_sandbox_provider_free(cold);
	flash_sandbox_provider_free(warm);
	flash_spec_free(spec);
	return 0;
}
