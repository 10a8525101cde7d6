/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The provider/v1 sandbox routes (operator/sandbox-http.c) over a real
 * Unix socket, driven by the <flash/client.h> sandbox calls and by raw
 * requests: a token of another action is refused both ways, a session of
 * another tenant is 404 like an unknown one, hostile ids, paths and sizes
 * are refused, and the streamed routes move bytes both ways.  The backend
 * is a fake that keeps sessions in memory and runs exec's argv on this
 * host (fork and execve, pipes, the deadline), so that libflash's
 * provider runs its real in-sandbox commands against files of the test's
 * own directory.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>
#include <flash/sandbox.h>

#include "helpers.h"
#include "http-helpers.h"
#include "http.h"
#include "operator-helpers.h"
#include "sandbox-helpers.h"
#include "sandbox-http.h"
#include "util.h"

/* ---------------------------------------------------------------- the fake backend */

#define FAKE_MAX 16

struct fake {
	pthread_mutex_t lock;
	struct flash_sandbox_info s[FAKE_MAX];
	bool used[FAKE_MAX];
	bool revoked[FAKE_MAX]; /* the session's gate closed (its Reap began) */
	int revoke_rc;          /* fault: the revoke fails */
	unsigned int provisions;
	char tenant[160];       /* "org/project" the last Provision's tenant lookup gave, or "-" */
};

static struct op_sandbox_tenants *tenants;

static struct fake *the_fake;

static int fake_find(struct fake *f, const char *id)
{
	for (int i = 0; i < FAKE_MAX; i++)
		if (f->used[i] && strcmp(f->s[i].session_id, id) == 0)
			return i;
	return -1;
}

static int fake_provision(void *b, const char *id, const struct flash_spec *spec, uint32_t ttl,
			  struct flash_sandbox_info *ret, struct flash_diag *diag)
{
	struct fake *f = b;
	int i, r = 0;

	(void)spec;
	(void)diag;
	{
		/* What the gVisor backend asks for the sandbox's identity. */
		char org[64], project[64];

		if (op_sandbox_tenants_lookup(tenants, id, org, sizeof(org), project, sizeof(project)) == 0)
			snprintf(f->tenant, sizeof(f->tenant), "%s/%s", org, project);
		else
			snprintf(f->tenant, sizeof(f->tenant), "-");
	}
	pthread_mutex_lock(&f->lock);
	i = fake_find(f, id);
	if (i >= 0 && f->revoked[i]) {
		r = -FLASH_E_SANDBOX_ENDED;
	} else if (i >= 0) {
		*ret = f->s[i];
		ret->adopted = true;
	} else {
		for (i = 0; i < FAKE_MAX && f->used[i]; i++)
			;
		if (i == FAKE_MAX) {
			r = -ENOSPC;
		} else {
			memset(&f->s[i], 0, sizeof(f->s[i]));
			snprintf(f->s[i].session_id, sizeof(f->s[i].session_id), "%s", id);
			snprintf(f->s[i].backend_id, sizeof(f->s[i].backend_id), "fake-%d", i);
			f->s[i].created_at = time(NULL);
			f->s[i].expires_at = f->s[i].created_at + ttl;
			/* A session named "...-gone" has ended at once (expired). */
			if (strlen(id) > 5 && strcmp(id + strlen(id) - 5, "-gone") == 0) {
				f->s[i].end = FLASH_SANDBOX_END_EXPIRED;
				snprintf(f->s[i].end_reason, sizeof(f->s[i].end_reason), "expired at %" PRId64,
					 f->s[i].expires_at);
			}
			f->used[i] = true;
			f->revoked[i] = false;
			f->provisions++;
			*ret = f->s[i];
		}
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

static int fake_info(void *b, const char *id, struct flash_sandbox_info *ret)
{
	struct fake *f = b;
	int i;

	pthread_mutex_lock(&f->lock);
	i = fake_find(f, id);
	if (i >= 0) {
		*ret = f->s[i];
		if (f->revoked[i]) {
			ret->end = FLASH_SANDBOX_END_REAPED;
			snprintf(ret->end_reason, sizeof(ret->end_reason), "reaping");
		}
	}
	pthread_mutex_unlock(&f->lock);
	return i >= 0 ? 0 : -ENOENT;
}

/* argv on this host: stdin from the source, stdout and stderr to the
 * sinks, killed (its process group) at the deadline. */
static int fake_exec(void *b, const char *id, const struct flash_sandbox_exec_io *io, int *ret_code)
{
	struct flash_sandbox_info in;
	int pin[2], pout[2], perr[2], status = 0, r = 0;
	bool in_open = true;
	char buf[65536];
	pid_t pid;

	if (fake_info(b, id, &in) < 0)
		return -ENOENT;
	if (in.end == FLASH_SANDBOX_END_REAPED)
		return -FLASH_E_SANDBOX_ENDED;
	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		execve(io->argv[0], (char *const *)io->argv, io->env ? (char *const *)io->env : (char *const[]){ NULL });
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	if (!io->stdin_fn) {
		close(pin[1]);
		in_open = false;
	}
	struct pollfd pf[3] = { { pout[0], POLLIN, 0 }, { perr[0], POLLIN, 0 }, { in_open ? pin[1] : -1, POLLOUT, 0 } };
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		int wait_ms = -1;

		if (io->deadline_ms) {
			int64_t left = (int64_t)io->deadline_ms - util_mono_ms();

			if (left <= 0) {
				r = -ETIMEDOUT;
				break;
			}
			wait_ms = (int)left;
		}
		if (poll(pf, 3, wait_ms) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		for (int k = 0; k < 2 && r == 0; k++) {
			if (pf[k].fd < 0 || !pf[k].revents)
				continue;
			ssize_t n = read(pf[k].fd, buf, sizeof(buf));

			if (n <= 0) {
				close(pf[k].fd);
				pf[k].fd = -1;
				continue;
			}
			flash_sandbox_sink_fn fn = k ? io->stderr_fn : io->stdout_fn;
			if (fn)
				r = fn(buf, (size_t)n, k ? io->stderr_userdata : io->stdout_userdata);
		}
		if (r == 0 && pf[2].fd >= 0 && pf[2].revents) {
			ssize_t n = io->stdin_fn(buf, sizeof(buf), io->stdin_userdata);

			if (n < 0)
				r = (int)n;
			else if (n == 0 || write(pf[2].fd, buf, (size_t)n) < 0) {
				close(pf[2].fd);
				pf[2].fd = -1;
			}
		}
		if (r < 0)
			break;
	}
	if (r < 0)
		kill(-pid, SIGKILL);
	for (int k = 0; k < 3; k++)
		if (pf[k].fd >= 0)
			close(pf[k].fd);
	waitpid(pid, &status, 0);
	if (r < 0)
		return r;
	*ret_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 0;
}

static int fake_owned(void *b, char ***ret_ids, size_t *ret_n)
{
	struct fake *f = b;
	char **ids = calloc(FAKE_MAX, sizeof(*ids));
	size_t n = 0;

	if (!ids)
		return -ENOMEM;
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < FAKE_MAX; i++)
		if (f->used[i])
			ids[n++] = strdup(f->s[i].session_id);
	pthread_mutex_unlock(&f->lock);
	*ret_ids = ids;
	*ret_n = n;
	return 0;
}

static int fake_reap(void *b, const char *id)
{
	struct fake *f = b;
	int i;

	pthread_mutex_lock(&f->lock);
	i = fake_find(f, id);
	if (i >= 0)
		f->used[i] = false;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static void fake_free(void *b)
{
	free(b);
}

/* The gate: the session marked revoked (a real backend: durably). */
static int fake_revoke(void *b, const char *id)
{
	struct fake *f = b;
	int i, r;

	pthread_mutex_lock(&f->lock);
	r = f->revoke_rc;
	i = fake_find(f, id);
	if (r == 0 && i >= 0)
		f->revoked[i] = true;
	pthread_mutex_unlock(&f->lock);
	return r;
}

static const struct flash_sandbox_backend_ops fake_ops = {
	.sz = sizeof(fake_ops), .provision = fake_provision, .info = fake_info, .exec = fake_exec,
	.owned = fake_owned, .reap = fake_reap, .free = fake_free, .revoke = fake_revoke,
};

/* ---------------------------------------------------------------- setup */

static char dir[64], sock[128], endpoint[160];
static struct op_store *store;
static struct op_metrics *metrics;
static struct op_provider *prov;
static struct op_http *http;
static struct flash_sandbox_provider *sp;
static struct flash_auth_signer *signer;
static struct flash_auth_keyset *keys;

static void setup(void)
{
	char path[128];
	unsigned char pk[32];
	struct fake *f = calloc(1, sizeof(*f));
	static struct op_sandbox_http_opts so = { .sz = sizeof(so), .write_max_bytes = 4 << 20,
						 .read_max_bytes = 8 << 20, .max_ops = 8 };

	cr_assert(f);
	ASSERT_OK(op_sandbox_tenants_new(&tenants), "tenants");
	so.tenants = tenants;
	the_fake = f;
	pthread_mutex_init(&f->lock, NULL);
	strcpy(dir, "/tmp/test-operator-sandbox-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/flash.db", dir);
	snprintf(sock, sizeof(sock), "%s/op.sock", dir);
	snprintf(endpoint, sizeof(endpoint), "unix:%s", sock);
	ASSERT_OK(op_store_open(path, &store, NULL, 0), "store");
	ASSERT_OK(flash_auth_signer_generate("k1", &signer), "signer");
	ASSERT_OK(flash_auth_signer_public_key(signer, pk), "pk");
	ASSERT_OK(flash_auth_keyset_new(&keys), "keyset");
	ASSERT_OK(flash_auth_keyset_add(keys, "k1", pk), "add");
	ASSERT_OK(op_metrics_new(&metrics), "metrics");
	struct op_provider_opts o = { .sz = sizeof(o), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE, .keys = keys,
				      .store = store, .image = &test_image_ops, .metrics = metrics };
	ASSERT_OK(op_provider_new(&o, &prov), "provider");
	ASSERT_OK(flash_sandbox_provider_new(&fake_ops, f, NULL, &sp), "sandbox provider");
	struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .threads = 2, .sandbox = sp,
				   .sandbox_opts = &so };
	ASSERT_OK(op_http_start(prov, &ho, &http, NULL, 0), "start");
}

static void teardown(void)
{
	char cmd[128];

	op_http_stop(http);
	flash_sandbox_provider_free(sp);
	op_sandbox_tenants_free(tenants);
	tenants = NULL;
	op_provider_free(prov);
	op_metrics_free(metrics);
	op_store_close(store);
	flash_auth_signer_free(signer);
	flash_auth_keyset_free(keys);
	http = NULL, prov = NULL, store = NULL, signer = NULL, keys = NULL, sp = NULL, metrics = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(operator_sandbox, .init = setup, .fini = teardown, .timeout = 60);

static struct flash_client *client_of(const char *org, const char *project)
{
	return test_sandbox_client(endpoint, signer, TEST_ISSUER, TEST_AUDIENCE, org, project);
}

static char *sid_of(const char *org, const char *project, const char *name)
{
	static char id[FLASH_CLIENT_SANDBOX_ID_STRLEN];

	ASSERT_OK(flash_client_sandbox_id(org, project, name, id), "id");
	return id;
}

static const char spec_json[] =
	"{\"region\":\"heteronet-global\",\"image\":\"test.invalid/box:1\",\"replicas\":1,\"cpu_millis\":250,"
	"\"memory_mib\":128,\"egress\":{\"mode\":\"disabled\",\"allow_same_organization\":false,"
	"\"allowed_destination_cidrs\":[],\"denied_destination_cidrs\":[]}}";

/* A raw request on the socket: the reply's status line and body. */
static int raw(const char *req, char *out, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	cr_assert(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return test_http_exchange(fd, req, strlen(req), out, size);
}

static void raw_expect(const char *method, const char *path, const char *token, const char *extra, const char *want,
		       const char *what)
{
	char req[4096], out[8192];

	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%sConnection: close\r\n\r\n",
		 method, path, token, extra ? extra : "");
	cr_assert(raw(req, out, sizeof(out)) >= 0, "%s", what);
	cr_assert(strstr(out, want), "%s: wanted %s in:\n%s", what, want, out);
}

/* ---------------------------------------------------------------- cases */

Test(operator_sandbox, lifecycle_is_idempotent_and_scoped_to_the_tenant)
{
	struct flash_client *a = client_of("org-a", "p1"), *b = client_of("org-b", "p1"), *a2 = client_of("org-a", "p2");
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	struct flash_client_response *r = NULL;

	snprintf(id, sizeof(id), "%s", sid_of("org-a", "p1", "s1"));
	ASSERT_OK(flash_client_sandbox_provision(a, id, spec_json, strlen(spec_json), 120, &r), "provision");
	test_expect_status(r, 201, NULL, "made");
	cr_assert_str_eq(the_fake->tenant, "org-a/p1", "the backend learns the token's tenant for the sandbox's identity");
	cr_assert(op_sandbox_tenants_lookup(tenants, id, (char[64]){ 0 }, 64, (char[64]){ 0 }, 64) == -ENOENT,
		  "forgotten once the Provision returned");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"expires_at\":"), "expires_at");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"adopted\":false"));
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_provision(a, id, spec_json, strlen(spec_json), 120, &r), "again");
	test_expect_status(r, 200, NULL, "adopted");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"adopted\":true"));
	flash_client_response_free(r);

	ASSERT_OK(flash_client_sandbox_get(a, id, &r), "get");
	test_expect_status(r, 200, NULL, "get");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"end\":\"live\""));
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_list(a, &r), "list");
	cr_assert(strstr(flash_client_response_body(r, NULL), id), "the tenant sees its session");
	flash_client_response_free(r);
	{
		/* Every answer about the session carries its expiry as a header too. */
		char *tok = test_mint(signer, "org-a", "p1", FLASH_AUTH_ACTION_SANDBOX, UINT64_MAX), path[160];

		snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s", id);
		raw_expect("GET", path, tok, NULL, "Flash-Sandbox-Expires-At: 1", "the expiry header");
		snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s/files?path=/nonexistent", id);
		raw_expect("GET", path, tok, NULL, "Flash-Sandbox-Expires-At: 1", "the expiry header on a refusal");
		free(tok);
	}

	/* Another organization, or another project of the same: not theirs. */
	ASSERT_OK(flash_client_sandbox_list(b, &r), "list b");
	cr_assert(!strstr(flash_client_response_body(r, NULL), id), "another tenant's list");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_get(b, id, &r), "get b");
	test_expect_status(r, 404, "not-found", "another organization");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_reap(a2, id, &r), "reap a2");
	test_expect_status(r, 404, "not-found", "another project cannot reap");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_provision(b, id, spec_json, strlen(spec_json), 120, &r), "provision b");
	test_expect_status(r, 404, "not-found", "another tenant cannot provision under the id");
	flash_client_response_free(r);

	ASSERT_OK(flash_client_sandbox_reap(a, id, &r), "reap");
	test_expect_status(r, 200, NULL, "reap");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"end\":\"reaped\""));
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_get(a, id, &r), "get after");
	test_expect_status(r, 404, "not-found", "gone");
	flash_client_response_free(r);
	/* /metrics counts the sandbox routes by status (answers are counted
	 * once their connection is done: give the server a moment). */
	for (int i = 0; i < 100 && op_metrics_requests(metrics, OP_ROUTE_SANDBOX, 404) < 4; i++)
		usleep(10 * 1000);
	cr_assert_geq(op_metrics_requests(metrics, OP_ROUTE_SANDBOX, 404), 4, "404s counted");
	cr_assert_geq(op_metrics_requests(metrics, OP_ROUTE_SANDBOX, 201), 1, "the 201 counted");

	/* A bad spec names its path; a ttl out of range is refused. */
	ASSERT_OK(flash_client_sandbox_provision(a, id, "{\"image\":1}", 11, 0, &r), "bad spec");
	test_expect_status(r, 400, "invalid-spec", "spec");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_provision(a, id, spec_json, strlen(spec_json), 999999, &r), "ttl");
	test_expect_status(r, 400, "bad-request", "ttl");
	flash_client_response_free(r);
	flash_client_free(a);
	flash_client_free(a2);
	flash_client_free(b);
}

Test(operator_sandbox, the_sandbox_action_is_its_own)
{
	char *sb = test_mint(signer, "org-a", "p1", FLASH_AUTH_ACTION_SANDBOX, UINT64_MAX);
	char *get = test_mint(signer, "org-a", "p1", FLASH_AUTH_ACTION_GET, UINT64_MAX);
	char *create = test_mint(signer, "org-a", "p1", FLASH_AUTH_ACTION_CREATE, 1);
	char *exec = test_mint(signer, "org-a", "p1", FLASH_AUTH_ACTION_EXEC, UINT64_MAX);
	char path[160];

	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s", sid_of("org-a", "p1", "s1"));
	raw_expect("GET", path, get, NULL, "\"wrong-action\"", "a get token on a sandbox");
	raw_expect("PUT", path, create, "Content-Length: 2\r\n", "\"wrong-action\"", "a create token on a sandbox");
	raw_expect("GET", "/provider/v1/sandboxes", exec, NULL, "403", "an exec token on the sandbox list");
	raw_expect("GET", path, "x.y.z", NULL, "401", "no valid token");
	/* ... and a sandbox token drives no service. */
	raw_expect("GET", "/provider/v1/services/fs-0123456789abcdef0123456789abcdef", sb, NULL, "\"wrong-action\"",
		   "a sandbox token on a service");
	raw_expect("GET", "/provider/v1/services", sb, NULL, "\"wrong-action\"", "a sandbox token on the list");
	raw_expect("GET", path, sb, NULL, "404", "the sandbox token works (no such session)");
	free(sb);
	free(get);
	free(create);
	free(exec);
}

Test(operator_sandbox, hostile_requests_are_refused)
{
	char *tok = test_mint(signer, "org-a", "p1", FLASH_AUTH_ACTION_SANDBOX, UINT64_MAX);
	struct flash_client *a = client_of("org-a", "p1");
	struct flash_client_response *r = NULL;
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN], path[512], longid[200];

	snprintf(id, sizeof(id), "%s", sid_of("org-a", "p1", "h1"));
	ASSERT_OK(flash_client_sandbox_provision(a, id, spec_json, strlen(spec_json), 120, &r), "provision");
	test_expect_status(r, 201, NULL, "made");
	flash_client_response_free(r);

	/* Ids: not a label, too long (a prefix of which is valid), another tenant's. */
	raw_expect("GET", "/provider/v1/sandboxes/SB-UPPER", tok, NULL, "404", "upper case id");
	snprintf(longid, sizeof(longid), "%s%s", id, "-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s", longid);
	raw_expect("GET", path, tok, NULL, "404", "an id over 63 bytes");
	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s", sid_of("org-b", "p1", "h1"));
	raw_expect("GET", path, tok, NULL, "\"not-found\"", "another tenant's id");
	raw_expect("GET", "/provider/v1/sandboxes/sb-0123456789abcdef-", tok, NULL, "404", "an empty name");

	/* Paths: NUL, relative, missing. */
	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s/files?path=/tmp/a%%00b", id);
	raw_expect("GET", path, tok, NULL, "holds a NUL", "a NUL in the path");
	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s/files?path=etc/passwd", id);
	raw_expect("GET", path, tok, NULL, "\"bad-request\"", "a relative path");
	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s/export", id);
	raw_expect("GET", path, tok, NULL, "root: required", "no root");
	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s/files?path=/tmp/x&max=0", id);
	raw_expect("GET", path, tok, NULL, "\"bad-request\"", "max 0");

	/* Sizes: over the write bound, a write without a length. */
	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s/files?path=/tmp/x", id);
	raw_expect("PUT", path, tok, "Content-Length: 99999999999\r\n", "413", "over the write bound");
	raw_expect("PUT", path, tok, "Transfer-Encoding: chunked\r\n", "411", "a write without a length");
	/* Methods and routes. */
	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s/exec", id);
	raw_expect("GET", path, tok, NULL, "405", "GET exec");
	snprintf(path, sizeof(path), "/provider/v1/sandboxes/%s/nothing", id);
	raw_expect("GET", path, tok, NULL, "\"no-route\"", "unknown sub-route");
	raw_expect("POST", "/provider/v1/sandboxes", tok, NULL, "405", "POST on the list");

	/* The client refuses what the operator would. */
	cr_assert_eq(flash_client_sandbox_get(a, "../x", &r), -EINVAL);
	cr_assert_eq(flash_client_sandbox_id("o", "p", "Bad", id), -EINVAL);
	cr_assert_eq(flash_client_sandbox_id("o", "p", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", id), -EINVAL);
	flash_client_free(a);
	free(tok);
}

/* ---------------------------------------------------------------- streams */

static char *provisioned(struct flash_client *c, const char *name)
{
	static char id[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	struct flash_client_response *r = NULL;

	snprintf(id, sizeof(id), "%s", sid_of("org-a", "p1", name));
	ASSERT_OK(flash_client_sandbox_provision(c, id, spec_json, strlen(spec_json), 120, &r), "provision");
	test_expect_status(r, 201, NULL, "made");
	flash_client_response_free(r);
	return id;
}

Test(operator_sandbox, exec_streams_output_and_reports_exit_and_timeout)
{
	struct flash_client *a = client_of("org-a", "p1");
	char *id = provisioned(a, "x1");
	struct flash_client_response *ref = NULL;
	struct flash_client_sandbox_exec_result res;
	struct test_buf out = { 0 }, err = { 0 };
	const char *echo[] = { "/bin/bash", "-c", "echo out; echo err >&2; cat; exit 3", NULL };

	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = echo, .stdin_data = "from stdin\n", .stdin_len = 11,
		   .stdout_fn = test_buf_sink, .stdout_userdata = &out, .stderr_fn = test_buf_sink,
		   .stderr_userdata = &err);
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o, &res, &ref), "exec");
	cr_assert_null(ref, "refused: %s", flash_client_response_body(ref, NULL));
	cr_assert_eq(res.exit_code, 3);
	cr_assert(!res.timed_out);
	cr_assert_gt(res.expires_at, time(NULL));
	cr_assert_str_eq(out.p, "out\nfrom stdin\n");
	cr_assert_str_eq(err.p, "err\n");

	/* 3 MiB of output: more than the buffers hold, streamed through. */
	const char *big[] = { "/bin/bash", "-c", "head -c 3145728 /dev/zero | tr '\\0' 'a'", NULL };
	free(out.p);
	out = (struct test_buf){ 0 };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o2, .argv = big, .stdout_fn = test_buf_sink, .stdout_userdata = &out);
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o2, &res, &ref), "big");
	cr_assert_null(ref);
	cr_assert_eq(res.exit_code, 0);
	cr_assert_eq(out.len, 3145728u);
	cr_assert_eq(strspn(out.p, "a"), 3145728u);

	/* The deadline: the timeout is told apart from an exit code 124. */
	const char *slow[] = { "/bin/sleep", "5", NULL };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o3, .argv = slow, .timeout_ms = 300);
	int64_t t0 = util_mono_ms();
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o3, &res, &ref), "timeout");
	cr_assert_null(ref);
	/* libflash's wrapper (sandbox.c, branch sbx) can still lose the
	 * "timeout" verdict to a race between its watcher's exit 99 and the
	 * TERM it gets once the command died (then exit 137, SIGKILL): the
	 * route is checked for passing on what the provider says and for the
	 * kill at the deadline, the verdict itself by test-sandbox. */
	cr_assert(res.timed_out || res.exit_code == 137, "timed out (exit %d)", res.exit_code);
	cr_assert_lt(util_mono_ms() - t0, 4000, "killed at the deadline");
	const char *e124[] = { "/bin/bash", "-c", "exit 124", NULL };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o4, .argv = e124, .timeout_ms = 5000);
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o4, &res, &ref), "124");
	cr_assert(!res.timed_out && res.exit_code == 124);

	/* Refusals come before any output: relative argv[0], unknown session. */
	const char *rel[] = { "bash", NULL };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o5, .argv = rel);
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o5, &res, &ref), "relative");
	test_expect_status(ref, 400, "bad-request", "relative argv[0]");
	flash_client_response_free(ref);
	ASSERT_OK(flash_client_sandbox_exec(a, sid_of("org-a", "p1", "none"), &o4, &res, &ref), "unknown");
	test_expect_status(ref, 404, "not-found", "unknown session");
	flash_client_response_free(ref);
	/* A JSON body over its bound (1 MiB): 1.2 MiB of stdin in base64. */
	char *huge = calloc(1, 1200000);
	cr_assert(huge);
	FLASH_OPTS(flash_client_sandbox_exec_opts, o6, .argv = e124, .stdin_data = huge, .stdin_len = 1200000);
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o6, &res, &ref), "huge");
	test_expect_status(ref, 413, "too-large", "an exec body over 1 MiB");
	flash_client_response_free(ref);
	free(huge);
	free(out.p);
	free(err.p);
	flash_client_free(a);
}

/* A ustar header of an empty regular file @name at @h (512 bytes). */
static void tar_header(unsigned char *h, const char *name)
{
	unsigned int sum = 0;

	memcpy(h, name, strlen(name));
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	memcpy(h + 124, "00000000000", 11);
	memcpy(h + 136, "00000000000", 11);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

Test(operator_sandbox, files_go_both_ways_binary_safe_and_size_gated)
{
	struct flash_client *a = client_of("org-a", "p1");
	char *id = provisioned(a, "f1"), path[160], sub[400];
	struct flash_client_response *r = NULL;
	unsigned char *data = malloc(1 << 20);
	struct test_buf got = { 0 };
	struct test_src m;

	cr_assert(data);
	for (size_t i = 0; i < (1u << 20); i++)
		data[i] = (unsigned char)(i * 7 + (i >> 9)); /* NULs and every byte value */
	snprintf(path, sizeof(path), "%s/blob", dir);
	m = (struct test_src){ data, 1u << 20 };
	ASSERT_OK(flash_client_sandbox_write(a, id, path, 1u << 20, test_src_read, &m, &r), "write");
	test_expect_status(r, 200, NULL, "write");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"written\":1048576"));
	flash_client_response_free(r);
	r = NULL;
	ASSERT_OK(flash_client_sandbox_read(a, id, path, 0, test_buf_sink, &got, &r), "read");
	cr_assert_null(r, "refused: %s", flash_client_response_body(r, NULL));
	cr_assert_eq(got.len, 1u << 20);
	cr_assert(memcmp(got.p, data, got.len) == 0, "the same bytes back");

	/* The size gate answers 413 before any byte. */
	free(got.p);
	got = (struct test_buf){ 0 };
	ASSERT_OK(flash_client_sandbox_read(a, id, path, 1000, test_buf_sink, &got, &r), "gate");
	test_expect_status(r, 413, "too-large", "gated");
	cr_assert_eq(got.len, 0u, "no byte before the refusal");
	flash_client_response_free(r);
	r = NULL;

	/* A source that holds fewer bytes than announced: the target stays. */
	m = (struct test_src){ (const unsigned char *)"short", 5 };
	cr_assert_lt(flash_client_sandbox_write(a, id, path, 100, test_src_read, &m, &r), 0, "short source");
	flash_client_response_free(r);
	r = NULL;
	ASSERT_OK(flash_client_sandbox_read(a, id, path, 0, test_buf_sink, &got, &r), "read again");
	cr_assert_eq(got.len, 1u << 20, "untouched");
	free(got.p);
	got = (struct test_buf){ 0 };

	/* No such file; a directory. */
	snprintf(sub, sizeof(sub), "%s/none", dir);
	ASSERT_OK(flash_client_sandbox_read(a, id, sub, 0, test_buf_sink, &got, &r), "none");
	test_expect_status(r, 404, "no-such-file", "missing file");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_read(a, id, dir, 0, test_buf_sink, &got, &r), "dir");
	test_expect_status(r, 400, "is-a-directory", "directory");
	flash_client_response_free(r);

	/* Export then import the tree elsewhere: one top-level directory. */
	snprintf(sub, sizeof(sub), "mkdir -p %s/tree/d && echo hi > %s/tree/d/f && mkdir %s/dest", dir, dir, dir);
	cr_assert(system(sub) == 0);
	snprintf(sub, sizeof(sub), "%s/tree", dir);
	r = NULL;
	ASSERT_OK(flash_client_sandbox_export(a, id, sub, test_buf_sink, &got, &r), "export");
	cr_assert_null(r, "refused: %s", flash_client_response_body(r, NULL));
	cr_assert_gt(got.len, 1024u);
	cr_assert(memcmp(got.p, "tree/", 5) == 0, "the top-level directory is the root's base name");
	m = (struct test_src){ (const unsigned char *)got.p, got.len };
	snprintf(sub, sizeof(sub), "%s/dest", dir);
	ASSERT_OK(flash_client_sandbox_import(a, id, sub, test_src_read, &m, &r), "import");
	test_expect_status(r, 200, NULL, "import");
	flash_client_response_free(r);
	snprintf(sub, sizeof(sub), "grep -qx hi %s/dest/tree/d/f", dir);
	cr_assert(system(sub) == 0, "imported");

	/* A hostile archive: an absolute member name (after a good one) is
	 * refused, naming it. */
	unsigned char tarbuf[2048] = { 0 };
	tar_header(tarbuf, "good");
	tar_header(tarbuf + 512, "/etc/evil");
	m = (struct test_src){ tarbuf, sizeof(tarbuf) };
	snprintf(sub, sizeof(sub), "%s/dest", dir);
	ASSERT_OK(flash_client_sandbox_import(a, id, sub, test_src_read, &m, &r), "evil");
	test_expect_status(r, 400, "bad-archive", "absolute member");
	cr_assert(strstr(flash_client_response_body(r, NULL), "/etc/evil"), "%s", flash_client_response_body(r, NULL));
	flash_client_response_free(r);

	/* A client that stops reading mid-stream: the next request is served. */
	free(got.p);
	got = (struct test_buf){ .fail_after = 100000 };
	cr_assert_eq(flash_client_sandbox_read(a, id, path, 0, test_buf_sink, &got, &r), -ECANCELED);
	free(got.p);
	got = (struct test_buf){ 0 };
	ASSERT_OK(flash_client_sandbox_read(a, id, path, 0, test_buf_sink, &got, &r), "after a dropped client");
	cr_assert_null(r);
	cr_assert_eq(got.len, 1u << 20);
	free(got.p);
	free(data);
	flash_client_free(a);
}

/* ---------------------------------------------------------------- flashctl */

/* Runs flashctl with the test's endpoint and key, @args after the global
 * options (a shell word list), its stdin from @in; the exit status. */
static int flashctl(const char *args, const char *in, const char *out_file)
{
	const char *b = getenv("top_builddir");
	char cmd[2048];
	int st;

	snprintf(cmd, sizeof(cmd),
		 "%s/bin/flashctl/flashctl --endpoint unix:%s --token-file %s/key.jwk --organization-id org-a "
		 "--project-id p1 --issuer %s --audience %s %s <%s >%s 2>>%s/stderr",
		 b ? b : ".", sock, dir, TEST_ISSUER, TEST_AUDIENCE, args, in ? in : "/dev/null",
		 out_file ? out_file : "/dev/null", dir);
	st = system(cmd);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		/* What flashctl said goes to the test's log. */
		snprintf(cmd, sizeof(cmd), "tail -n 3 %s/stderr >&2", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "(no stderr)\n");
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(operator_sandbox, flashctl_session_verbs)
{
	char *jwk = NULL, p[256], q[256], cmd[1024];
	FILE *f;

	ASSERT_OK(flash_auth_signer_to_jwk(signer, &jwk), "jwk");
	snprintf(p, sizeof(p), "%s/key.jwk", dir);
	ASSERT_OK(flash_auth_key_file_write(p, jwk, strlen(jwk), true), "key file");
	free(jwk);
	snprintf(p, sizeof(p), "%s/spec.json", dir);
	f = fopen(p, "w");
	cr_assert(f);
	fputs(spec_json, f);
	fclose(f);

	snprintf(cmd, sizeof(cmd), "session create s1 --spec %s --ttl 300", p);
	snprintf(q, sizeof(q), "%s/out", dir);
	cr_assert_eq(flashctl(cmd, NULL, q), 0, "create");
	snprintf(cmd, sizeof(cmd), "grep -q '^sb-[0-9a-f]\\{16\\}-s1 .*live' %s", q);
	cr_assert_eq(system(cmd), 0, "the table shows the session live");
	cr_assert_eq(flashctl("session list", NULL, q), 0, "list");
	snprintf(cmd, sizeof(cmd), "grep -q -- '-s1 ' %s", q);
	cr_assert_eq(system(cmd), 0, "listed");

	/* exec: the command's status is flashctl's; its timeout is 124. */
	cr_assert_eq(flashctl("session exec s1 -- /bin/bash -c 'echo hi; exit 7'", NULL, q), 7, "exit 7");
	snprintf(cmd, sizeof(cmd), "test \"$(cat %s)\" = hi", q);
	cr_assert_eq(system(cmd), 0, "stdout");
	snprintf(p, sizeof(p), "%s/spec.json", dir);
	cr_assert_eq(flashctl("session exec -i s1 -- /bin/cat", p, q), 0, "stdin");
	snprintf(cmd, sizeof(cmd), "cmp -s %s %s", p, q);
	cr_assert_eq(system(cmd), 0, "stdin came back");
	int rc = flashctl("session exec --timeout 0.3 s1 -- /bin/sleep 5", NULL, NULL);
	cr_assert(rc == 124 || rc == 137, "timeout: %d", rc); /* 137: see the exec case above */
	cr_assert_eq(flashctl("session exec nosuch -- /bin/true", NULL, NULL), 121, "no such session");
	cr_assert_eq(flashctl("session exec s1 -- bash", NULL, NULL), 125, "a relative command");

	/* cp both ways, with - for stdin and stdout. */
	snprintf(cmd, sizeof(cmd), "head -c 200000 /dev/urandom > %s/blob", dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "session cp %s/blob s1:%s/copy", dir, dir);
	cr_assert_eq(flashctl(cmd, NULL, NULL), 0, "cp up");
	snprintf(cmd, sizeof(cmd), "session cp s1:%s/copy -", dir);
	snprintf(q, sizeof(q), "%s/back", dir);
	cr_assert_eq(flashctl(cmd, NULL, q), 0, "cp down to stdout");
	snprintf(cmd, sizeof(cmd), "cmp -s %s/blob %s/back", dir, dir);
	cr_assert_eq(system(cmd), 0, "the same bytes");
	snprintf(cmd, sizeof(cmd), "session cp - s1:%s/fromstdin", dir);
	snprintf(p, sizeof(p), "%s/blob", dir);
	cr_assert_eq(flashctl(cmd, p, NULL), 0, "cp up from stdin");
	snprintf(cmd, sizeof(cmd), "cmp -s %s/blob %s/fromstdin", dir, dir);
	cr_assert_eq(system(cmd), 0, "stdin copy");
	/* (The fake sandbox shares this file system: another local name.) */
	snprintf(cmd, sizeof(cmd), "session cp s1:%s/none %s/none.local", dir, dir);
	cr_assert_eq(flashctl(cmd, NULL, NULL), 3, "no such file");
	snprintf(cmd, sizeof(cmd), "test -e %s/none.local", dir);
	cr_assert_neq(system(cmd), 0, "no partial file left");

	/* export then import. */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/t/d %s/imp && echo x > %s/t/d/f", dir, dir, dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "session export s1:%s/t %s/t.tar", dir, dir);
	cr_assert_eq(flashctl(cmd, NULL, NULL), 0, "export");
	snprintf(cmd, sizeof(cmd), "tar -tf %s/t.tar | grep -qx t/d/f", dir);
	cr_assert_eq(system(cmd), 0, "members under t/");
	snprintf(cmd, sizeof(cmd), "session import - s1:%s/imp", dir);
	snprintf(p, sizeof(p), "%s/t.tar", dir);
	cr_assert_eq(flashctl(cmd, p, NULL), 0, "import");
	snprintf(cmd, sizeof(cmd), "grep -qx x %s/imp/t/d/f", dir);
	cr_assert_eq(system(cmd), 0, "imported");

	/* reap; then it is gone. */
	cr_assert_eq(flashctl("session reap s1", NULL, NULL), 0, "reap");
	cr_assert_eq(flashctl("session get s1", NULL, NULL), 3, "gone");
	cr_assert_eq(flashctl("session get BAD", NULL, NULL), 2, "a bad name");
}

/* ---------------------------------------------------------------- stopping */

struct bg_exec {
	char id[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	int r, status;
};

static void *bg_exec_run(void *arg)
{
	struct bg_exec *b = arg;
	struct flash_client *c = client_of("org-a", "p1");
	struct flash_client_response *ref = NULL;
	struct flash_client_sandbox_exec_result res;
	const char *argv[] = { "/bin/sleep", "1", NULL };

	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = argv, .timeout_ms = 5000);
	b->r = flash_client_sandbox_exec(c, b->id, &o, &res, &ref);
	b->status = ref ? flash_client_response_status(ref) : 0;
	flash_client_response_free(ref);
	flash_client_free(c);
	return NULL;
}

Test(operator_sandbox, stopping_ends_waiting_requests)
{
	struct flash_client *a = client_of("org-a", "p1");
	struct bg_exec b = { 0 };
	pthread_t t;

	snprintf(b.id, sizeof(b.id), "%s", provisioned(a, "stop1"));
	cr_assert_eq(pthread_create(&t, NULL, bg_exec_run, &b), 0);
	usleep(300 * 1000); /* the exec runs; its connection waits, suspended */
	int64_t t0 = util_mono_ms();
	op_http_stop(http);
	http = NULL;
	cr_assert_lt(util_mono_ms() - t0, 5000, "the stop waited only for the running command");
	pthread_join(t, NULL);
	cr_assert(b.r < 0 || b.status == 503, "the client was told (r %d, status %d)", b.r, b.status);
	flash_client_free(a);
}

/* ---------------------------------------------------------------- ids */

/* The derivation written out again here: BLAKE2b-256 over the
 * length-prefixed parts, 8 bytes of it in hex. */
static void expected_id(const char *org, const char *project, const char *name, char *out, size_t size)
{
	const char *parts[] = { "flash-sandbox-tenant/1", org, project };
	crypto_generichash_state st;
	unsigned char h[32];
	char hex[17];

	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	for (size_t i = 0; i < 3; i++) {
		unsigned char le[8] = { 0 };
		size_t len = strlen(parts[i]);

		for (int b = 0; b < 8; b++)
			le[b] = (unsigned char)((uint64_t)len >> (8 * b));
		crypto_generichash_update(&st, le, 8);
		crypto_generichash_update(&st, (const unsigned char *)parts[i], len);
	}
	crypto_generichash_final(&st, h, sizeof(h));
	sodium_bin2hex(hex, sizeof(hex), h, 8);
	snprintf(out, size, "sb-%s-%s", hex, name);
}

Test(operator_sandbox, ids_are_derived_per_tenant)
{
	char got[FLASH_CLIENT_SANDBOX_ID_STRLEN], want[128], other[FLASH_CLIENT_SANDBOX_ID_STRLEN];

	ASSERT_OK(flash_client_sandbox_id("org-a", "p1", "build-7", got), "id");
	expected_id("org-a", "p1", "build-7", want, sizeof(want));
	cr_assert_str_eq(got, want);
	cr_assert(flash_sandbox_id_valid(got), "a valid session id");
	/* The length prefix keeps ("ab", "c") apart from ("a", "bc"). */
	ASSERT_OK(flash_client_sandbox_id("ab", "c", "x", got), "ab/c");
	ASSERT_OK(flash_client_sandbox_id("a", "bc", "x", other), "a/bc");
	cr_assert_str_neq(got, other);
	/* The longest name makes the longest id, a DNS label of 63 bytes. */
	ASSERT_OK(flash_client_sandbox_id("o", "p", "a234567890123456789012345678901234567890123", got), "43");
	cr_assert_eq(strlen(got), 63u);
	cr_assert(flash_sandbox_id_valid(got));
	cr_assert_eq(flash_client_sandbox_id("o", "p", "-a", got), -EINVAL);
	cr_assert_eq(flash_client_sandbox_id("o", "p", "a-", got), -EINVAL);
	cr_assert_eq(flash_client_sandbox_id("o", "p", "", got), -EINVAL);
	cr_assert_eq(flash_client_sandbox_id(NULL, "p", "a", got), -EINVAL);
}

Test(operator_sandbox, a_dropped_exec_client_ends_the_operation_not_the_session)
{
	struct flash_client *a = client_of("org-a", "p1");
	char *id = provisioned(a, "drop1"), script[1024], path[160];
	struct flash_client_response *ref = NULL;
	struct flash_client_sandbox_exec_result res;
	struct test_buf out = { .fail_after = 10 };
	FILE *f;
	int pid = 0;

	snprintf(path, sizeof(path), "%s/pid", dir);
	snprintf(script, sizeof(script), "echo $$ > %s.tmp; mv %s.tmp %s; while :; do echo tick; sleep 0.05; done", path,
		 path, path);
	const char *argv[] = { "/bin/bash", "-c", script, NULL };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = argv, .timeout_ms = 20000, .stdout_fn = test_buf_sink,
		   .stdout_userdata = &out);
	int64_t t0 = util_mono_ms();
	cr_assert_eq(flash_client_sandbox_exec(a, id, &o, &res, &ref), -ECANCELED, "the client stopped");
	f = fopen(path, "r");
	cr_assert(f, "the command wrote its pid");
	cr_assert_eq(fscanf(f, "%d", &pid), 1);
	fclose(f);
	/* The server notices at its next write of output and ends the
	 * operation well before the command's deadline.  The command itself
	 * runs in a session of its own under libflash's wrapper (sandbox.c,
	 * branch sbx), which kills it only at its deadline, not when its
	 * output breaks: it is killed here. */
	kill(pid, SIGKILL);
	cr_assert_lt(util_mono_ms() - t0, 10000, "the dropped exec ended well before its deadline");
	/* The session stays, and the operation slot came back. */
	const char *t[] = { "/bin/true", NULL };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o2, .argv = t);
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o2, &res, &ref), "after");
	cr_assert_null(ref);
	cr_assert_eq(res.exit_code, 0);
	free(out.p);
	flash_client_free(a);
}

/* ---------------------------------------------------------------- slow clients */

Test(operator_sandbox, a_slow_sender_loses_its_operation_at_the_transfer_deadline)
{
	static const struct op_sandbox_http_opts so = { .sz = sizeof(so), .max_ops = 1, .transfer_timeout_s = 1 };
	struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .threads = 2, .sandbox = sp,
				   .sandbox_opts = &so, .timeout_s = 30 };
	struct flash_client *a = client_of("org-a", "p1");
	struct flash_client_response *r = NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *tok = test_mint(signer, "org-a", "p1", FLASH_AUTH_ACTION_SANDBOX, UINT64_MAX), *id, req[2048];
	int fd;

	id = provisioned(a, "slow1");
	op_http_stop(http);
	ASSERT_OK(op_http_start(prov, &ho, &http, NULL, 0), "restart with one operation slot and a 1 s transfer");
	/* A write that sends 10 of its 1000000 bytes, then nothing (within
	 * the idle timeout of 30 s: only the transfer deadline ends it). */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	cr_assert(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	snprintf(req, sizeof(req),
		 "PUT /provider/v1/sandboxes/%s/files?path=%s/slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
		 "Content-Length: 1000000\r\n\r\n0123456789", id, dir, tok);
	cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	usleep(300 * 1000);
	ASSERT_OK(flash_client_sandbox_get(a, id, &r), "get while the write holds the slot");
	test_expect_status(r, 503, "unavailable", "the one slot is taken");
	flash_client_response_free(r);
	usleep(1200 * 1000);
	ASSERT_OK(flash_client_sandbox_get(a, id, &r), "get after the deadline");
	test_expect_status(r, 200, NULL, "the slot came back at the deadline");
	flash_client_response_free(r);
	close(fd);
	snprintf(req, sizeof(req), "test ! -e %s/slow", dir);
	cr_assert_eq(system(req), 0, "nothing was written");
	free(tok);
	flash_client_free(a);
}

/* ---------------------------------------------------------------- ended sessions */

Test(operator_sandbox, an_ended_session_says_how_and_refuses_work)
{
	struct flash_client *a = client_of("org-a", "p1");
	char *id = provisioned(a, "x-gone");
	struct flash_client_response *r = NULL;
	struct flash_client_sandbox_exec_result res;
	struct test_buf got = { 0 };
	const char *t[] = { "/bin/true", NULL };

	ASSERT_OK(flash_client_sandbox_get(a, id, &r), "get");
	test_expect_status(r, 200, NULL, "an ended session is still shown");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"end\":\"expired\""));
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"end_reason\":\"expired at "));
	flash_client_response_free(r);
	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = t);
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o, &res, &r), "exec");
	test_expect_status(r, 410, "ended", "exec on an ended session");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"end\":\"expired\""));
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"expires_at\":"));
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_read(a, id, "/etc/hostname", 0, test_buf_sink, &got, &r), "read");
	test_expect_status(r, 410, "ended", "read on an ended session");
	cr_assert_eq(got.len, 0u);
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_reap(a, id, &r), "reap");
	test_expect_status(r, 200, NULL, "an ended session is reaped");
	flash_client_response_free(r);
	flash_client_free(a);
}

Test(operator_sandbox, a_session_gone_behind_the_routes_is_not_found)
{
	struct flash_client *a = client_of("org-a", "p1");
	char *id = provisioned(a, "behind"), path[160];
	struct flash_client_response *r = NULL;
	struct flash_client_sandbox_exec_result res;
	struct test_buf got = { 0 };
	const char *t[] = { "/bin/true", NULL };

	/* Known live to the routes (its Provision went through them), then
	 * reaped by someone else (the expiry reaper, another operator). */
	ASSERT_OK(flash_sandbox_reap(sp, id), "reap behind the routes");
	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = t);
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o, &res, &r), "exec");
	test_expect_status(r, 404, "not-found", "exec on a session gone");
	flash_client_response_free(r);
	snprintf(path, sizeof(path), "%s/none", dir);
	ASSERT_OK(flash_client_sandbox_read(a, id, path, 0, test_buf_sink, &got, &r), "read");
	test_expect_status(r, 404, "not-found", "a read says the session, not the file, is missing");
	flash_client_response_free(r);
	flash_client_free(a);
}

/* ---------------------------------------------------------------- the gate */

/* Reap revokes first: a revoke that fails answers the Reap's failure and
 * leaves the session working; a Reap stopped after the revoke (a crash,
 * simulated by the backend's revoke alone, on a session the routes know
 * live) leaves a session whose info says "reaping" and whose every other
 * route answers 409 "reaping", until the next DELETE completes it. */
Test(operator_sandbox, a_reap_stopped_after_its_revoke_is_told_reaping_and_completed_by_the_next)
{
	struct flash_client *a = client_of("org-a", "p1");
	char *id = provisioned(a, "gate"), path[160];
	struct flash_client_response *r = NULL;
	struct flash_client_sandbox_exec_result res;
	struct test_buf got = { 0 };
	const char *t[] = { "/bin/true", NULL };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = t);

	the_fake->revoke_rc = -EIO;
	ASSERT_OK(flash_client_sandbox_reap(a, id, &r), "reap");
	test_expect_status(r, 500, "internal", "a failed revoke fails the Reap");
	flash_client_response_free(r);
	the_fake->revoke_rc = 0;
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o, &res, &r), "exec");
	cr_assert_null(r, "the session still works: %s", flash_client_response_body(r, NULL));
	cr_assert_eq(res.exit_code, 0);

	ASSERT_OK(fake_ops.revoke(the_fake, id), "the revoke alone (the Reap stopped there)");
	ASSERT_OK(flash_client_sandbox_exec(a, id, &o, &res, &r), "exec");
	test_expect_status(r, 409, "reaping", "exec on a revoked session the routes knew live");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"end_reason\":\"reaping\""), "%s",
		  flash_client_response_body(r, NULL));
	flash_client_response_free(r);
	snprintf(path, sizeof(path), "%s/none", dir);
	ASSERT_OK(flash_client_sandbox_read(a, id, path, 0, test_buf_sink, &got, &r), "read");
	test_expect_status(r, 409, "reaping", "read on a revoked session");
	cr_assert_eq(got.len, 0u);
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_provision(a, id, spec_json, strlen(spec_json), 120, &r), "provision");
	test_expect_status(r, 409, "reaping", "a revoked session is not adopted");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_get(a, id, &r), "get");
	test_expect_status(r, 200, NULL, "its info is still served");
	cr_assert(strstr(flash_client_response_body(r, NULL), "\"end\":\"reaped\"") &&
		  strstr(flash_client_response_body(r, NULL), "\"end_reason\":\"reaping\""), "%s",
		  flash_client_response_body(r, NULL));
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_reap(a, id, &r), "the second reap");
	test_expect_status(r, 200, NULL, "the next Reap completes it");
	flash_client_response_free(r);
	ASSERT_OK(flash_client_sandbox_get(a, id, &r), "get");
	test_expect_status(r, 404, "not-found", "gone after its Reap");
	flash_client_response_free(r);
	flash_client_free(a);
}

/* One tenant whose operations stall (a sandbox that never answers) holds
 * at most its share of the operation slots: max_ops 8 gives 2 per
 * organization+project; a third of its own is refused, another tenant's
 * goes through. */
struct slow_exec {
	struct flash_client *c;
	const char *id;
	int rc;
};

static void *slow_exec_thread(void *arg)
{
	struct slow_exec *x = arg;
	const char *sl[] = { "/bin/sleep", "2", NULL };
	struct flash_client_response *ref = NULL;
	struct flash_client_sandbox_exec_result res;
	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = sl, .timeout_ms = 10000);

	x->rc = flash_client_sandbox_exec(x->c, x->id, &o, &res, &ref);
	flash_client_response_free(ref);
	return NULL;
}

Test(operator_sandbox, one_tenant_holds_only_its_share_of_the_operation_slots)
{
	struct flash_client *a = client_of("org-a", "p1"), *b = client_of("org-b", "p1");
	char ida[FLASH_CLIENT_SANDBOX_ID_STRLEN], idb[FLASH_CLIENT_SANDBOX_ID_STRLEN];
	struct slow_exec x[2] = { { a, ida, -1 }, { a, ida, -1 } };
	struct flash_client_response *ref = NULL;
	struct flash_client_sandbox_exec_result res;
	const char *t[] = { "/bin/true", NULL };
	FLASH_OPTS(flash_client_sandbox_exec_opts, o, .argv = t);
	pthread_t th[2];

	snprintf(ida, sizeof(ida), "%s", provisioned(a, "busy"));
	snprintf(idb, sizeof(idb), "%s", sid_of("org-b", "p1", "calm"));
	ASSERT_OK(flash_client_sandbox_provision(b, idb, spec_json, strlen(spec_json), 120, &ref), "org-b's");
	test_expect_status(ref, 201, NULL, "made");
	flash_client_response_free(ref);
	ref = NULL;
	for (int i = 0; i < 2; i++)
		cr_assert(pthread_create(&th[i], NULL, slow_exec_thread, &x[i]) == 0);
	usleep(500000); /* both running */
	ASSERT_OK(flash_client_sandbox_exec(a, ida, &o, &res, &ref), "a third of org-a's");
	cr_assert_not_null(ref, "refused");
	test_expect_status(ref, 503, "unavailable", NULL);
	cr_assert(strstr(flash_client_response_body(ref, NULL), "of this organization and project"), "%s",
		  flash_client_response_body(ref, NULL));
	flash_client_response_free(ref);
	ref = NULL;
	ASSERT_OK(flash_client_sandbox_exec(b, idb, &o, &res, &ref), "org-b's");
	cr_assert_null(ref, "another tenant is served: %s", flash_client_response_body(ref, NULL));
	cr_assert_eq(res.exit_code, 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(x[i].rc, 0, "the slow ones finished");
	}
	flash_client_free(a);
	flash_client_free(b);
}
