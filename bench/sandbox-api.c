/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/sandbox-api [N]: sandbox sessions through the provider API (issue
 * 20 item 6, end to end), root and runsc needed.  bench/sandbox times the
 * libflash provider over the gVisor backend against bare runsc; this one
 * puts the provider/v1 routes in front (operator/sandbox-http.c on a Unix
 * socket, tokens minted and verified per request, <flash/client.h>) and
 * times the same steps both ways in the same run, so the API's own cost is
 * the difference:
 *   warm  Provision -> the first Exec (`/bin/echo ready`) answered, from a
 *         warm pool of one (refilled, untimed, before each session);
 *         through the API (flash_client_sandbox_provision + _exec) and
 *         through the provider (flash_sandbox_provision + _exec),
 *         alternating which goes first;
 *   exec  the Exec round trip (/bin/true) of one session: API, provider,
 *         and provider without a deadline, in rotating order.
 * Every API exec has a deadline (the route's default, 60 s), so the
 * provider's are given the same; the third exec line shows what the
 * deadline itself costs (libflash's wrapper starts a watcher in the
 * sandbox).
 * N sessions each (default 30); medians, p95, p99, the load average before
 * and after.  Reaps are not timed.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>
#include <flash/sandbox.h>
#include <flash/spec.h>

#include "bench.h"
#include "http.h"
#include "provider.h"
#include "runtime-internal.h"
#include "sandbox-gvisor.h"
#include "sandbox-image.h"
#include "store.h"
#include "util.h"

#define IMAGE "bench-image"
#define ISS "bench.iss"
#define AUD "bench.aud"

static char base[128], image[160];
static struct sbx_image the_image = { .name = IMAGE, .dir = image };

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)atoi(argv[1]) : 30;
	static const char spec_json[] =
		"{\"region\": \"heteronet-global\", \"image\": \"" IMAGE "\", \"cpu_millis\": 500, \"memory_mib\": 256}";
	const struct flash_sandbox_backend_ops *ops;
	struct flash_sandbox_provider *sp = NULL;
	struct flash_auth_signer *signer = NULL;
	struct flash_auth_keyset *keys = NULL;
	struct flash_client *client = NULL;
	struct op_provider *prov = NULL;
	struct op_store *store = NULL;
	struct op_http *http = NULL;
	struct flash_spec *spec = NULL;
	void *backend = NULL;
	double *t_api, *t_direct, *x_api, *x_direct, *x_nodl;
	unsigned char pk[32];
	char cmd[2048], path[256], sock[200], ep[220], exec_id[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	int r;

	if (geteuid() != 0 || access("/usr/bin/runsc", X_OK) < 0) {
		fprintf(stderr, "bench/sandbox-api needs root and /usr/bin/runsc\n");
		return 77;
	}
	if (n < 3)
		n = 3;
	signal(SIGPIPE, SIG_IGN);
	snprintf(base, sizeof(base), "/tmp/sbx-api-bench-%d", getpid());
	snprintf(image, sizeof(image), "%s/image", base);
	if (sbx_image_build(image) < 0 || flash_spec_parse(spec_json, sizeof(spec_json) - 1, NULL, &spec, NULL) < 0) {
		fprintf(stderr, "could not build the image\n");
		return 1;
	}
	/* The operator's side: the backend with a pool of one, the provider,
	 * the routes on a Unix socket. */
	snprintf(path, sizeof(path), "%s/sbx", base);
	{
		FLASH_OPTS(op_sandbox_gvisor_opts, o, .dir = path, .rootfs = sbx_image_rootfs, .rootfs_ctx = &the_image,
			   .cgroup_parent = "/sbx-api-bench", .pool_size = 1, .pool_image = IMAGE, .pool_cpu_millis = 500,
			   .pool_memory_mib = 256);

		r = op_sandbox_gvisor_new(&o, &ops, &backend);
		if (r == 0)
			r = flash_sandbox_provider_new(ops, backend, NULL, &sp);
	}
	snprintf(path, sizeof(path), "%s/flash.db", base);
	snprintf(sock, sizeof(sock), "%s/op.sock", base);
	if (r == 0)
		r = op_store_open(path, &store, NULL, 0);
	if (r == 0)
		r = flash_auth_signer_generate("bench", &signer);
	if (r == 0)
		r = flash_auth_signer_public_key(signer, pk);
	if (r == 0)
		r = flash_auth_keyset_new(&keys);
	if (r == 0)
		r = flash_auth_keyset_add(keys, "bench", pk);
	if (r == 0) {
		struct op_provider_opts po = { .sz = sizeof(po), .issuer = ISS, .audience = AUD, .keys = keys,
					       .store = store };

		r = op_provider_new(&po, &prov);
	}
	if (r == 0) {
		struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .sandbox = sp };

		r = op_http_start(prov, &ho, &http, NULL, 0);
	}
	snprintf(ep, sizeof(ep), "unix:%s", sock);
	if (r == 0) {
		struct flash_client_opts co = { .sz = sizeof(co), .endpoint = ep, .timeout_ms = 60000 };
		struct flash_client_identity id = { .sz = sizeof(id), .issuer = ISS, .audience = AUD,
						    .organization = "org-bench", .project = "p" };

		r = flash_client_new(&co, &client);
		if (r == 0)
			r = flash_client_set_signer(client, signer, &id);
	}
	if (r < 0) {
		fprintf(stderr, "setup: %s\n", strerror(-r));
		return 1;
	}
	t_api = calloc(n, sizeof(double));
	t_direct = calloc(n, sizeof(double));
	x_api = calloc(n, sizeof(double));
	x_direct = calloc(n, sizeof(double));
	x_nodl = calloc(n, sizeof(double));
	bench_load("before");
	for (unsigned int i = 0; i < n; i++) {
		for (unsigned int k = 0; k < 2; k++) {
			bool api = (i + k) % 2 == 0;
			const char *echo[] = { "/bin/echo", "ready", NULL };
			char name[32], sid[FLASH_CLIENT_SANDBOX_ID_STRLEN];
			size_t got = 0;
			double t0;

			snprintf(name, sizeof(name), "w%u-%s", i, api ? "api" : "direct");
			if (flash_client_sandbox_id("org-bench", "p", name, sid) < 0)
				return 1;
			for (int w = 0; w < 400 && op_sandbox_gvisor_pool_idle(backend) < 1; w++)
				usleep(25000);
			t0 = bench_now_ms();
			if (api) {
				struct flash_client_response *resp = NULL, *ref = NULL;
				struct flash_client_sandbox_exec_result res;
				FLASH_OPTS(flash_client_sandbox_exec_opts, eo, .argv = echo, .stdout_fn = bench_count_sink,
					   .stdout_userdata = &got);

				r = flash_client_sandbox_provision(client, sid, spec_json, sizeof(spec_json) - 1, 600, &resp);
				if (r == 0 && flash_client_response_status(resp) != 201)
					r = -EIO;
				if (r == 0)
					r = flash_client_sandbox_exec(client, sid, &eo, &res, &ref);
				if (r == 0 && ref)
					r = -EIO;
				t_api[i] = bench_now_ms() - t0;
				if (r == 0 && !strstr(flash_client_response_body(resp, NULL), "\"from_pool\":true"))
					r = -EAGAIN;
				flash_client_response_free(resp);
				flash_client_response_free(ref);
			} else {
				struct flash_sandbox_info info;
				struct flash_sandbox_exec_result res;
				FLASH_OPTS(flash_sandbox_exec_opts, eo, .argv = echo, .stdout_fn = bench_count_sink,
					   .stdout_userdata = &got, .timeout_ms = 60000);

				r = flash_sandbox_provision(sp, sid, spec, 600, &info, NULL);
				if (r == 0)
					r = flash_sandbox_exec(sp, sid, &eo, &res);
				t_direct[i] = bench_now_ms() - t0;
				if (r == 0 && !info.from_pool)
					r = -EAGAIN;
			}
			if (r < 0 || got != 6) {
				fprintf(stderr, "session %s failed: %s (got %zu)\n", name, strerror(-r), got);
				return 1;
			}
			if (flash_sandbox_reap(sp, sid) < 0)
				fprintf(stderr, "reap %s failed\n", sid);
		}
	}
	/* The Exec round trip of one session. */
	if (flash_client_sandbox_id("org-bench", "p", "exec", exec_id) < 0)
		return 1;
	{
		struct flash_sandbox_info info;

		if (flash_sandbox_provision(sp, exec_id, spec, 600, &info, NULL) < 0)
			return 1;
	}
	for (unsigned int j = 0; j < n; j++) {
		for (unsigned int k = 0; k < 3; k++) {
			unsigned int which = (j + k) % 3; /* 0 API, 1 provider, 2 provider without a deadline */
			const char *t[] = { "/bin/true", NULL };
			double s = bench_now_ms();

			if (which == 0) {
				struct flash_client_response *ref = NULL;
				struct flash_client_sandbox_exec_result res;
				FLASH_OPTS(flash_client_sandbox_exec_opts, eo, .argv = t);

				r = flash_client_sandbox_exec(client, exec_id, &eo, &res, &ref);
				if (r == 0 && (ref || res.exit_code != 0))
					r = -EIO;
				flash_client_response_free(ref);
				x_api[j] = bench_now_ms() - s;
			} else {
				struct flash_sandbox_exec_result res;
				FLASH_OPTS(flash_sandbox_exec_opts, eo, .argv = t, .timeout_ms = which == 1 ? 60000 : 0);

				r = flash_sandbox_exec(sp, exec_id, &eo, &res);
				if (r == 0 && res.exit_code != 0)
					r = -EIO;
				(which == 1 ? x_direct : x_nodl)[j] = bench_now_ms() - s;
			}
			if (r < 0) {
				fprintf(stderr, "exec round trip failed: %s\n", strerror(-r));
				return 1;
			}
		}
	}
	(void)!flash_sandbox_reap(sp, exec_id);
	bench_load("after");
	double a = bench_report("warm provision -> echo ready (API)", t_api, n);
	double d = bench_report("warm provision -> echo ready (provider)", t_direct, n);
	double xa = bench_report("Exec /bin/true (API)", x_api, n);
	double xd = bench_report("Exec /bin/true (provider)", x_direct, n);
	double xn = bench_report("Exec /bin/true (provider, no deadline)", x_nodl, n);
	printf("the API adds %.1f ms to provision -> first exec (%.2fx) and %.1f ms to an exec (%.2fx); "
	       "the deadline costs %.1f ms (medians)\n", a - d, a / d, xa - xd, xa / xd, xd - xn);
	flash_client_free(client);
	op_http_stop(http);
	op_provider_free(prov);
	op_store_close(store);
	flash_sandbox_provider_free(sp);
	flash_auth_keyset_free(keys);
	flash_auth_signer_free(signer);
	flash_spec_free(spec);
	op_cgroup_remove("", "sbx-api-bench");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	return system(cmd) == 0 ? 0 : 1;
}
