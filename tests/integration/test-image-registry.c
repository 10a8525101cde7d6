/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Image admission against a real registry: Debian's docker-registry on
 * 127.0.0.1 (started by tests/integration/registry.sh, filled with skopeo
 * from OCI layouts built with umoci; digests are read back, never
 * hard-coded), without auth, with basic auth, with bearer tokens from a
 * token service on loopback, and over TLS; loopback proxies for a
 * redirect to another host and port (Authorization must not follow), for
 * corrupted bytes, and for counting blob fetches.
 *
 * The registries and servers are started once, before the tests
 * (ReportHook(PRE_ALL), in the runner process), and stopped after.  Each
 * test reads the ports and facts from $FLASH_REGTEST_DIR.
 */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdarg.h>
#include <flash/image.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <flash/auth.h>
#include <time.h>

#include "helpers.h"
#include "provider.h"
#include "registry-helpers.h"

#define GIB (UINT64_C(1) << 30)

static char regdir[PATH_MAX];
static struct proxy token_srv = { .mode = PROXY_TOKEN };
static struct proxy storage = { .mode = PROXY_STORAGE };
static struct proxy redirector = { .mode = PROXY_REDIRECT_BLOBS };
static struct proxy corrupter = { .mode = PROXY_CORRUPT };
static struct proxy counter = { .mode = PROXY_FORWARD };
static struct proxy challenger = { .mode = PROXY_CHALLENGE };
static struct proxy redirector2 = { .mode = PROXY_REDIRECT_BLOBS };
static struct proxy bad_tokens = { .mode = PROXY_TOKEN_BAD };

/* ---------------------------------------------------------------- setup (runner process) */

static int sh(char *out, size_t out_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int sh(char *out, size_t out_size, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	FILE *f;
	size_t n = 0;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (out) {
		n = fread(out, 1, out_size - 1, f);
		out[n] = '\0';
		while (n && (out[n - 1] == '\n'))
			out[--n] = '\0';
	} else {
		char sink[256];

		while (fread(sink, 1, sizeof(sink), f) > 0)
			;
	}
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void put_file(const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/ports/%s", regdir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void setup_error(const char *what)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/setup-error", regdir);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s", what);
		fclose(f);
	}
}

static bool start_registry(const char *script, const char *name, const char *mode, const char *realm,
			   char port[16])
{
	char cmd_err[PATH_MAX + 256];

	if (sh(port, 16, "sh '%s' start '%s' %s %s '%s' 2>>'%s/setup.log'", script, regdir, name, mode,
	       realm ? realm : "", regdir) != 0 || !port[0]) {
		snprintf(cmd_err, sizeof(cmd_err), "registry %s (%s) did not start: see %s/setup.log", name, mode, regdir);
		setup_error(cmd_err);
		return false;
	}
	put_file(name, port);
	return true;
}

static void setup(void)
{
	const char *src = getenv("top_srcdir");
	char script[PATH_MAX], anon[16], basic[16], tokenp[16], tokenbad[16], tls[16], realm[64], bad_realm[64],
		buf[PATH_MAX + 64];
	char *token;

	snprintf(regdir, sizeof(regdir), "%s/flash-registry-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(regdir)) {
		regdir[0] = '\0';
		return;
	}
	setenv("FLASH_REGTEST_DIR", regdir, 1);
	snprintf(buf, sizeof(buf), "%s/ports", regdir);
	mkdir(buf, 0700);
	snprintf(script, sizeof(script), "%s/tests/integration/registry.sh", src ? src : "..");
	curl_global_init(CURL_GLOBAL_DEFAULT);

	token = malloc(8192);
	if (!token || sh(token, 8192, "sh '%s' token '%s' 2>>'%s/setup.log'", script, regdir, regdir) != 0) {
		setup_error("could not mint a registry token (openssl): see setup.log");
		free(token);
		return;
	}
	token_srv.token = token;
	if (!proxy_start(&token_srv)) {
		setup_error("token server did not start");
		return;
	}
	snprintf(realm, sizeof(realm), "http://127.0.0.1:%u/token", token_srv.port);
	if (!start_registry(script, "anon", "none", NULL, anon))
		return;
	if (sh(NULL, 0, "sh '%s' fill '%s' %s >>'%s/setup.log' 2>&1", script, regdir, anon, regdir) != 0) {
		setup_error("filling the registry failed (umoci, skopeo): see setup.log");
		return;
	}
	if (!proxy_start(&bad_tokens)) {
		setup_error("the bad token service did not start");
		return;
	}
	snprintf(bad_realm, sizeof(bad_realm), "http://127.0.0.1:%u/token", bad_tokens.port);
	if (!start_registry(script, "basic", "basic", NULL, basic) ||
	    !start_registry(script, "token", "token", realm, tokenp) ||
	    !start_registry(script, "token-bad", "token", bad_realm, tokenbad) ||
	    !start_registry(script, "tls", "tls", NULL, tls))
		return;

	snprintf(storage.upstream, sizeof(storage.upstream), "http://127.0.0.1:%s", basic);
	snprintf(storage.upstream_auth, sizeof(storage.upstream_auth), "Basic Zmxhc2g6czNjcmV0");
	snprintf(redirector.upstream, sizeof(redirector.upstream), "http://127.0.0.1:%s", basic);
	snprintf(corrupter.upstream, sizeof(corrupter.upstream), "http://127.0.0.1:%s", anon);
	snprintf(counter.upstream, sizeof(counter.upstream), "http://127.0.0.1:%s", anon);
	if (!proxy_start(&storage) || !proxy_start(&corrupter) || !proxy_start(&counter)) {
		setup_error("a test proxy did not start");
		return;
	}
	/* another host name and port than the registry's 127.0.0.1 */
	snprintf(redirector.redirect_base, sizeof(redirector.redirect_base), "http://localhost:%u", storage.port);
	snprintf(redirector2.upstream, sizeof(redirector2.upstream), "http://127.0.0.1:%s", basic);
	if (!proxy_start(&redirector) || !proxy_start(&challenger)) {
		setup_error("the redirecting proxy did not start");
		return;
	}
	snprintf(redirector2.redirect_base, sizeof(redirector2.redirect_base), "http://localhost:%u", challenger.port);
	if (!proxy_start(&redirector2)) {
		setup_error("the second redirecting proxy did not start");
		return;
	}
#define PUT_PORT(name, p)                               \
	do {                                            \
		snprintf(buf, sizeof(buf), "%u", (p)); \
		put_file(name, buf);                    \
	} while (0)
	PUT_PORT("token-server", token_srv.port);
	PUT_PORT("storage", storage.port);
	PUT_PORT("redirector", redirector.port);
	PUT_PORT("corrupter", corrupter.port);
	PUT_PORT("counter", counter.port);
	PUT_PORT("challenger", challenger.port);
	PUT_PORT("redirector2", redirector2.port);
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	setup();
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	const char *src = getenv("top_srcdir");
	static const char *names[] = { "anon", "basic", "token", "token-bad", "tls" };

	(void)stats;
	if (!regdir[0])
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		(void)sh(NULL, 0, "sh '%s/tests/integration/registry.sh' stop '%s' %s 2>/dev/null", src ? src : "..", regdir,
			 names[i]);
	proxy_stop(&redirector);
	proxy_stop(&storage);
	proxy_stop(&corrupter);
	proxy_stop(&counter);
	proxy_stop(&redirector2);
	proxy_stop(&challenger);
	proxy_stop(&bad_tokens);
	proxy_stop(&token_srv);
	free(token_srv.token);
	(void)sh(NULL, 0, "rm -rf '%s'", regdir);
}

/* ---------------------------------------------------------------- test side */

static const char *dir(void)
{
	const char *d = getenv("FLASH_REGTEST_DIR");
	char path[PATH_MAX + 64], err[512] = "";
	FILE *f;

	cr_assert(d, "the registry setup did not run (no FLASH_REGTEST_DIR)");
	snprintf(path, sizeof(path), "%s/setup-error", d);
	f = fopen(path, "r");
	if (f) {
		size_t n = fread(err, 1, sizeof(err) - 1, f);

		err[n] = '\0';
		fclose(f);
		cr_assert_fail("registry setup failed: %s", err);
	}
	return d;
}

static void read_fact(const char *sub, const char *name, char *out, size_t size)
{
	char path[PATH_MAX + 64];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s/%s", dir(), sub, name);
	f = fopen(path, "r");
	cr_assert(f, "missing %s", path);
	n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	fclose(f);
}

static unsigned port_of(const char *name)
{
	char s[16];

	read_fact("ports", name, s, sizeof(s));
	return (unsigned)strtoul(s, NULL, 10);
}

static void fact(const char *name, char *out, size_t size)
{
	read_fact("facts", name, out, size);
}

static uint64_t fact_u64(const char *name)
{
	char s[32];

	fact(name, s, sizeof(s));
	return strtoull(s, NULL, 10);
}

static char *ref_at(const char *server, const char *repo)
{
	char *r;

	cr_assert(asprintf(&r, "127.0.0.1:%u/%s", port_of(server), repo) > 0);
	return r;
}

static char *scratch(const char *what)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s-%d-XXXXXX", dir(), what, (int)getpid()) > 0);
	cr_assert(mkdtemp(p));
	return p;
}

static const char *first_message(const struct flash_diag *d)
{
	const struct flash_diag_entry *e = flash_diag_get(d, flash_diag_count(d) ? flash_diag_count(d) - 1 : 0);

	return e ? e->message : "(no diag)";
}

static bool exists(const char *root, const char *rel)
{
	char p[PATH_MAX * 2];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	return lstat(p, &st) == 0;
}

TestSuite(registry, .timeout = 120);

Test(registry, anonymous_resolve_pull_unpack_whiteouts)
{
	char digest[128], pinned[256], cfg[128];
	char *ref = ref_at("anon", "small:v1"), *store = scratch("store"), *rootfs;
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true, .content_store = store);

	ASSERT_OK(flash_diag_new(&diag), "diag");
	fact("small.digest", digest, sizeof(digest));
	fact("small.config", cfg, sizeof(cfg));
	ASSERT_OK(flash_image_resolve(ref, &o, &img, diag), first_message(diag));
	ASSERT_STREQ(flash_image_digest(img), digest, "the digest read back from the registry");
	snprintf(pinned, sizeof(pinned), "127.0.0.1:%u/small@%s", port_of("anon"), digest);
	ASSERT_STREQ(flash_image_pinned(img), pinned, "pinned");
	cr_assert_eq(flash_image_charged_bytes(img), fact_u64("small.charged"), "config + compressed layers");
	ASSERT_STREQ(flash_image_config_digest(img), cfg, "config");
	ASSERT_STREQ(flash_image_media_type(img), "application/vnd.oci.image.manifest.v1+json", "OCI");
	cr_assert_eq(flash_image_layer_count(img), 2);
	ASSERT_OK(flash_image_pull(img, diag), first_message(diag));
	cr_assert(asprintf(&rootfs, "%s/rootfs", store) > 0);
	ASSERT_OK(flash_image_unpack(img, rootfs, NULL, diag), first_message(diag));
	cr_assert(exists(rootfs, "bin/busybox") && exists(rootfs, "bin/sh") && exists(rootfs, "etc/keep"));
	cr_assert(!exists(rootfs, "etc/drop"), "the whiteout .wh.drop removed etc/drop");
	cr_assert(!exists(rootfs, "opq/old") && !exists(rootfs, "opq/sub"), "the opaque dir hid the lower layer");
	cr_assert(exists(rootfs, "opq/new"), "the upper layer's own opq/new");
	cr_assert(!exists(rootfs, "etc/.wh.drop") && !exists(rootfs, "opq/.wh..wh..opq"), "markers not extracted");
	cr_assert_eq(flash_diag_errors(diag), 0);
	flash_image_free(img);
	flash_diag_free(diag);
	free(rootfs);
	free(store);
	free(ref);
}

/* The reference unpacker agrees: umoci's rootfs of the same layout has
 * exactly the paths and file types of ours (whiteouts and the opaque
 * directory applied the same way). */
Test(registry, unpack_agrees_with_umoci)
{
	char *ref = ref_at("anon", "small:v1"), *store = scratch("store"), *ours, *theirs, cmd[PATH_MAX * 4];
	struct flash_image *img = NULL;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true, .content_store = store);

	cr_assert(asprintf(&ours, "%s/ours", store) > 0 && asprintf(&theirs, "%s/theirs", store) > 0);
	ASSERT_OK(flash_image_resolve(ref, &o, &img, NULL), "resolve");
	ASSERT_OK(flash_image_pull(img, NULL), "pull");
	ASSERT_OK(flash_image_unpack(img, ours, NULL, NULL), "unpack");
	snprintf(cmd, sizeof(cmd), "umoci raw unpack --rootless --image '%s/layouts/small:v1' '%s' >/dev/null 2>&1", dir(),
		 theirs);
	cr_assert(system(cmd) == 0, "umoci raw unpack");
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && find . -printf '%%p %%y\\n' | sort >../ours.list && cd '%s' && "
		 "find . -printf '%%p %%y\\n' | sort >../theirs.list && cmp -s ../ours.list ../theirs.list",
		 ours, theirs);
	cr_assert(system(cmd) == 0, "the same paths and types as umoci (diff %s/ours.list %s/theirs.list)", store, store);
	flash_image_free(img);
	free(ours);
	free(theirs);
	free(store);
	free(ref);
}

Test(registry, docker_v2_manifest)
{
	char digest[128];
	char *ref = ref_at("anon", "small-docker:v1");
	struct flash_image *img = NULL;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true);

	fact("small-docker.digest", digest, sizeof(digest));
	ASSERT_OK(flash_image_resolve(ref, &o, &img, NULL), "resolve");
	ASSERT_STREQ(flash_image_digest(img), digest, "digest");
	ASSERT_STREQ(flash_image_media_type(img), "application/vnd.docker.distribution.manifest.v2+json", "Docker v2");
	flash_image_free(img);
	free(ref);
}

Test(registry, multi_arch_index_resolves_to_linux_amd64)
{
	char amd[128], arm[128];
	char *ref = ref_at("anon", "multi:latest");
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true);
	FLASH_OPTS(flash_image_opts, a, .plain_http = true, .platform = "linux/arm64");
	FLASH_OPTS(flash_image_opts, s, .plain_http = true, .platform = "linux/s390x");

	ASSERT_OK(flash_diag_new(&diag), "diag");
	fact("small.digest", amd, sizeof(amd));
	fact("arm.digest", arm, sizeof(arm));
	ASSERT_OK(flash_image_resolve(ref, &o, &img, diag), first_message(diag));
	ASSERT_STREQ(flash_image_digest(img), amd, "the linux/amd64 child (listed second)");
	flash_image_free(img);
	img = NULL;
	ASSERT_OK(flash_image_resolve(ref, &a, &img, diag), first_message(diag));
	ASSERT_STREQ(flash_image_digest(img), arm, "the linux/arm64 child");
	flash_image_free(img);
	img = NULL;
	ASSERT_ERR(flash_image_resolve(ref, &s, &img, diag), -FLASH_E_IMAGE_PLATFORM, "no s390x");
	cr_assert(strstr(first_message(diag), "linux/amd64"), "names what there is: %s", first_message(diag));
	flash_diag_free(diag);
	free(ref);
}

Test(registry, not_found_and_plain_http_refused)
{
	char *ref = ref_at("anon", "small:nope"), *ok = ref_at("anon", "small:v1");
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true);
	FLASH_OPTS(flash_image_opts, https, .timeout_ms = 5000);

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_ERR(flash_image_resolve(ref, &o, &img, diag), -FLASH_E_IMAGE_NOT_FOUND, "missing tag");
	cr_assert(strstr(first_message(diag), "MANIFEST_UNKNOWN"), "the registry's code: %s", first_message(diag));
	ASSERT_ERR(flash_image_resolve(ok, &https, &img, diag), -FLASH_E_IMAGE_TRANSPORT, "http registry without plain_http");
	cr_assert_null(img);
	flash_diag_free(diag);
	free(ref);
	free(ok);
}

Test(registry, basic_auth)
{
	char *ref = ref_at("basic", "small:v1"), *store = scratch("store");
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, anon, .plain_http = true);
	FLASH_OPTS(flash_image_opts, wrong, .plain_http = true, .username = "flash", .password = "nope");
	FLASH_OPTS(flash_image_opts, good, .plain_http = true, .username = "flash", .password = "s3cret",
		   .content_store = store);
	char digest[128];

	ASSERT_OK(flash_diag_new(&diag), "diag");
	fact("small.digest", digest, sizeof(digest));
	ASSERT_ERR(flash_image_resolve(ref, &anon, &img, diag), -FLASH_E_IMAGE_UNAUTHORIZED, "anonymous");
	cr_assert(strstr(first_message(diag), "credentials"), "%s", first_message(diag));
	ASSERT_ERR(flash_image_resolve(ref, &wrong, &img, diag), -FLASH_E_IMAGE_UNAUTHORIZED, "wrong password");
	ASSERT_OK(flash_image_resolve(ref, &good, &img, diag), first_message(diag));
	ASSERT_STREQ(flash_image_digest(img), digest, "digest");
	ASSERT_OK(flash_image_pull(img, diag), first_message(diag));
	flash_image_free(img);
	img = NULL;

	/* Per-registry credentials: this registry's entry wins over the
	 * catch-all pair; another registry's entry is not used. */
	{
		char host[64];
		const struct flash_image_credential ours[] = {
			{ "registry.example", "flash", "nope" },
			{ host, "flash", "s3cret" },
		};
		const struct flash_image_credential theirs[] = { { "registry.example", "flash", "s3cret" } };
		FLASH_OPTS(flash_image_opts, listed, .plain_http = true, .username = "flash", .password = "nope",
			   .credentials = ours, .n_credentials = 2);
		FLASH_OPTS(flash_image_opts, other, .plain_http = true, .credentials = theirs, .n_credentials = 1);

		snprintf(host, sizeof(host), "127.0.0.1:%u", port_of("basic"));
		ASSERT_OK(flash_image_resolve(ref, &listed, &img, diag), first_message(diag));
		ASSERT_STREQ(flash_image_digest(img), digest, "digest with per-registry credentials");
		flash_image_free(img);
		img = NULL;
		ASSERT_ERR(flash_image_resolve(ref, &other, &img, diag), -FLASH_E_IMAGE_UNAUTHORIZED,
			   "another registry's credentials");
	}
	flash_diag_free(diag);
	free(store);
	free(ref);
}

Test(registry, bearer_token_auth)
{
	char *ref = ref_at("token", "small:v1"), *multi = ref_at("token", "multi:latest"),
	     *other = ref_at("token", "other:v1"), *store = scratch("store");
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, anon, .plain_http = true);
	FLASH_OPTS(flash_image_opts, good, .plain_http = true, .username = "flash", .password = "s3cret",
		   .content_store = store);
	char digest[128];
	unsigned long req0, auth0, n, req1, auth1;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	fact("small.digest", digest, sizeof(digest));
	ASSERT_OK(proxy_stats((unsigned short)port_of("token-server"), "/token", &req0, &auth0, &n), "stats");
	ASSERT_ERR(flash_image_resolve(ref, &anon, &img, diag), -FLASH_E_IMAGE_UNAUTHORIZED, "no credentials");
	cr_assert(strstr(first_message(diag), "token service refused"), "%s", first_message(diag));
	ASSERT_OK(flash_image_resolve(ref, &good, &img, diag), first_message(diag));
	ASSERT_STREQ(flash_image_digest(img), digest, "digest through a token");
	ASSERT_OK(flash_image_pull(img, diag), first_message(diag));
	flash_image_free(img);
	img = NULL;
	ASSERT_OK(proxy_stats((unsigned short)port_of("token-server"), "/token", &req1, &auth1, &n), "stats");
	cr_assert(req1 >= req0 + 2 && auth1 >= auth0 + 1, "the token service was asked, with credentials");
	ASSERT_OK(flash_image_resolve(multi, &good, &img, diag), first_message(diag));
	ASSERT_STREQ(flash_image_digest(img), digest, "index through a token");
	flash_image_free(img);
	img = NULL;
	/* the token grants small and multi only */
	ASSERT_ERR(flash_image_resolve(other, &good, &img, diag), -FLASH_E_IMAGE_UNAUTHORIZED, "another repository");
	cr_assert(strstr(first_message(diag), "insufficient_scope"), "%s", first_message(diag));
	flash_diag_free(diag);
	free(store);
	free(ref);
	free(multi);
	free(other);
}

/* A token service's answer is hostile input too: a token that would put
 * a line break into the Authorization header is refused. */
Test(registry, malformed_token_refused)
{
	char *ref = ref_at("token-bad", "small:v1");
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true, .username = "flash", .password = "s3cret");

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_ERR(flash_image_resolve(ref, &o, &img, diag), -FLASH_E_IMAGE_CHALLENGE, "token with CR LF");
	cr_assert(strstr(first_message(diag), "no usable \"token\""), "%s", first_message(diag));
	cr_assert_null(img);
	flash_diag_free(diag);
	free(ref);
}

Test(registry, tls_with_ca_file)
{
	char ca[PATH_MAX + 32], digest[128];
	char *ref = ref_at("tls", "small:v1");
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, sys, .timeout_ms = 10000);
	FLASH_OPTS(flash_image_opts, o);

	ASSERT_OK(flash_diag_new(&diag), "diag");
	snprintf(ca, sizeof(ca), "%s/tls/ca.crt", dir());
	o.ca_file = ca;
	fact("small.digest", digest, sizeof(digest));
	ASSERT_ERR(flash_image_resolve(ref, &sys, &img, diag), -FLASH_E_IMAGE_TRANSPORT, "self-signed, system CAs");
	ASSERT_OK(flash_image_resolve(ref, &o, &img, diag), first_message(diag));
	ASSERT_STREQ(flash_image_digest(img), digest, "digest over TLS");
	flash_image_free(img);
	flash_diag_free(diag);
	free(ref);
}

Test(registry, redirect_does_not_forward_authorization)
{
	char *ref = ref_at("redirector", "small:v1"), *store = scratch("store"), *rootfs;
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true, .username = "flash", .password = "s3cret",
		   .content_store = store);
	unsigned long sreq0, sauth0, sreq, sauth, rreq, rauth, n;
	char digest[128];

	ASSERT_OK(flash_diag_new(&diag), "diag");
	fact("small.digest", digest, sizeof(digest));
	ASSERT_OK(proxy_stats((unsigned short)port_of("storage"), "/", &sreq0, &sauth0, &n), "storage stats");
	ASSERT_OK(flash_image_resolve(ref, &o, &img, diag), first_message(diag));
	ASSERT_STREQ(flash_image_digest(img), digest, "digest");
	ASSERT_OK(flash_image_pull(img, diag), first_message(diag));
	cr_assert(asprintf(&rootfs, "%s/rootfs", store) > 0);
	ASSERT_OK(flash_image_unpack(img, rootfs, NULL, diag), first_message(diag));
	cr_assert(exists(rootfs, "bin/busybox"), "layers came through the redirect");
	ASSERT_OK(proxy_stats((unsigned short)port_of("storage"), "/", &sreq, &sauth, &n), "storage stats");
	ASSERT_OK(proxy_stats((unsigned short)port_of("redirector"), "/", &rreq, &rauth, &n), "redirector stats");
	cr_assert(sreq >= sreq0 + 3, "config and both layers fetched from the other host (%lu requests)", sreq - sreq0);
	cr_assert_eq(sauth, sauth0, "Authorization never sent to the other host (%lu times)", sauth - sauth0);
	cr_assert(rauth > 0, "the registry's own origin did get Authorization");
	flash_image_free(img);
	flash_diag_free(diag);
	free(rootfs);
	free(store);
	free(ref);
}

/* The host a blob is redirected to asks for credentials itself: it is
 * not answered (only the registry's own challenge is). */
Test(registry, challenge_from_a_redirect_target_not_answered)
{
	char *ref = ref_at("redirector2", "small:v1");
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true, .username = "flash", .password = "s3cret");
	unsigned long req0, auth0, req, auth, n;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_OK(proxy_stats((unsigned short)port_of("challenger"), "/", &req0, &auth0, &n), "stats");
	ASSERT_ERR(flash_image_resolve(ref, &o, &img, diag), -FLASH_E_IMAGE_UNAUTHORIZED, "config blob behind a foreign 401");
	ASSERT_OK(proxy_stats((unsigned short)port_of("challenger"), "/", &req, &auth, &n), "stats");
	cr_assert(req > req0, "the redirect was followed");
	cr_assert_eq(auth, auth0, "no credentials sent to the redirect target (%lu times)", auth - auth0);
	cr_assert_null(img);
	flash_diag_free(diag);
	free(ref);
}

Test(registry, digest_mismatch_refused)
{
	char *docker = ref_at("corrupter", "small-docker:v1"), *small = ref_at("corrupter", "small:v1"),
	     *store = scratch("store"), *blob, layer0[128], cmd[PATH_MAX + 128];
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true, .content_store = store);

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_ERR(flash_image_resolve(docker, &o, &img, diag), -FLASH_E_IMAGE_DIGEST, "corrupted manifest");
	cr_assert(strstr(first_message(diag), "Docker-Content-Digest"), "%s", first_message(diag));
	/* small blobs (the config) pass, the busybox layer is corrupted */
	ASSERT_OK(flash_image_resolve(small, &o, &img, diag), first_message(diag));
	ASSERT_ERR(flash_image_pull(img, diag), -FLASH_E_IMAGE_DIGEST, "corrupted layer");
	fact("small.layer0", layer0, sizeof(layer0));
	ASSERT_OK(flash_image_blob_path(store, layer0, &blob), "path");
	cr_assert(access(blob, F_OK) != 0, "the wrong blob is not kept");
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s/blobs/sha256' | grep '^\\.tmp-')\"", store);
	cr_assert(system(cmd) == 0, "no temporary file left behind");
	free(blob);
	flash_image_free(img);
	flash_diag_free(diag);
	free(store);
	free(docker);
	free(small);
}

Test(registry, content_type_checked)
{
	char *ref = ref_at("corrupter", "multi:latest");
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true);

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_ERR(flash_image_resolve(ref, &o, &img, diag), -FLASH_E_IMAGE_MEDIA_TYPE, "application/json");
	cr_assert(strstr(first_message(diag), "application/json"), "%s", first_message(diag));
	flash_diag_free(diag);
	free(ref);
}

Test(registry, manifest_size_bounded)
{
	char *ref = ref_at("corrupter", "huge:v1");
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true);

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_ERR(flash_image_resolve(ref, &o, &img, diag), -FLASH_E_IMAGE_SIZE, "a 5 MiB manifest");
	cr_assert(strstr(first_message(diag), "larger than 4194304 bytes"), "%s", first_message(diag));
	cr_assert_null(img);
	flash_diag_free(diag);
	free(ref);
}

Test(registry, oversized_image_refused_before_start)
{
	char *big = ref_at("anon", "big:v1"), *small = ref_at("anon", "small:v1"), want[128];
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true);
	uint64_t charged;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_OK(flash_image_resolve(big, &o, &img, diag), first_message(diag));
	charged = flash_image_charged_bytes(img);
	cr_assert_eq(charged, fact_u64("big.charged"), "charged as the descriptors declare");
	cr_assert(charged > 2 * GIB, "2 GiB layer");
	ASSERT_ERR(flash_image_check_disk(flash_image_charged_bytes(img), 1 * GIB, diag), -FLASH_E_IMAGE_TOO_LARGE, "over a 1 GiB limit");
	snprintf(want, sizeof(want), "needs %llu bytes", (unsigned long long)charged);
	cr_assert(strstr(first_message(diag), want), "image size: %s", first_message(diag));
	snprintf(want, sizeof(want), "limit is %llu bytes", (unsigned long long)GIB);
	cr_assert(strstr(first_message(diag), want), "limit: %s", first_message(diag));
	ASSERT_OK(flash_image_check_disk(flash_image_charged_bytes(img), 3 * GIB, diag), "fits in 3 GiB");
	flash_image_free(img);
	img = NULL;
	ASSERT_OK(flash_image_resolve(small, &o, &img, diag), first_message(diag));
	charged = flash_image_charged_bytes(img);
	ASSERT_ERR(flash_image_check_disk(flash_image_charged_bytes(img), charged, diag), -FLASH_E_IMAGE_TOO_LARGE, "filling the limit");
	ASSERT_OK(flash_image_check_disk(flash_image_charged_bytes(img), charged + 1, diag), "one byte to spare");
	flash_image_free(img);
	flash_diag_free(diag);
	free(big);
	free(small);
}

struct puller {
	const char *ref, *store;
	int rc;
};

static void *pull_thread(void *arg)
{
	struct puller *p = arg;
	struct flash_image *img = NULL;
	FLASH_OPTS(flash_image_opts, o, .plain_http = true, .content_store = p->store);

	p->rc = flash_image_resolve(p->ref, &o, &img, NULL);
	if (p->rc == 0)
		p->rc = flash_image_pull(img, NULL);
	flash_image_free(img);
	return NULL;
}

Test(registry, concurrent_pulls_fetch_each_blob_once)
{
	char *ref = ref_at("counter", "small:v1"), *store = scratch("store"), blob[128], path[256];
	struct puller p[4];
	pthread_t t[4];
	pid_t kids[2];
	unsigned long req, auth, n;
	static const char *blobs[] = { "small.config", "small.layer0", "small.layer1" };

	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		cr_assert(kids[k] >= 0);
		if (kids[k] == 0) {
			struct puller me = { .ref = ref, .store = store };

			pull_thread(&me);
			_exit(me.rc == 0 ? 0 : 1);
		}
	}
	for (int i = 0; i < 4; i++) {
		p[i] = (struct puller){ .ref = ref, .store = store };
		cr_assert(pthread_create(&t[i], NULL, pull_thread, &p[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ASSERT_OK(p[i].rc, "thread pull");
	}
	for (int k = 0; k < 2; k++) {
		int st;

		cr_assert(waitpid(kids[k], &st, 0) == kids[k]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process pull");
	}
	for (size_t b = 0; b < 3; b++) {
		fact(blobs[b], blob, sizeof(blob));
		snprintf(path, sizeof(path), "/v2/small/blobs/%s", blob);
		ASSERT_OK(proxy_stats((unsigned short)port_of("counter"), path, &req, &auth, &n), "stats");
		cr_assert_eq(n, 1, "%s fetched %lu times by 6 concurrent pullers", blobs[b], n);
	}
	free(store);
	free(ref);
}

/* flash-operator's admission (operator/) with libflash's resolver behind
 * its seam, against the registry: an image over the workload's disk limit
 * is refused before anything is stored, with both sizes; one that fits is
 * admitted and pinned to its digest. */
static char *op_create(struct op_provider *p, struct flash_auth_signer *signer, const char *name,
		       const char *image, unsigned int gib, int *ret_status)
{
	char claims[512], body[1024];
	char *tok = NULL, *auth = NULL, *out;
	int64_t now = (int64_t)time(NULL);
	struct op_request req = { .method = "POST", .path = "/provider/v1/services" };
	struct op_response resp = { .status = 0 };

	snprintf(claims, sizeof(claims),
		 "{\"iss\":\"mp\",\"aud\":\"prov\",\"action\":\"create\",\"org\":\"o1\",\"project\":\"p1\","
		 "\"iat\":%lld,\"exp\":%lld,\"gen\":1}",
		 (long long)now, (long long)now + 50);
	ASSERT_OK(flash_auth_signer_sign(signer, claims, strlen(claims), &tok), "mint a token");
	cr_assert(asprintf(&auth, "Bearer %s", tok) > 0);
	snprintf(body, sizeof(body),
		 "{\"name\":\"%s\",\"spec\":{\"region\":\"heteronet-global\",\"image\":\"%s\",\"cpu_millis\":100,"
		 "\"memory_mib\":64,\"ephemeral_storage_gib\":%u}}",
		 name, image, gib);
	req.authorization = auth;
	req.body = body;
	req.body_len = strlen(body);
	op_provider_handle(p, &req, &resp);
	*ret_status = resp.status;
	out = strndup(resp.body ? resp.body : "", resp.body_len);
	op_response_clear(&resp);
	free(auth);
	free(tok);
	return out;
}

Test(registry, operator_refuses_an_oversized_image_from_the_registry)
{
	char *state = scratch("operator"), *db, *big = ref_at("anon", "big:v1"), *small = ref_at("anon", "small:v1");
	char err[512] = "", want[256], digest[128];
	struct op_store *st = NULL;
	struct op_provider *p = NULL;
	struct flash_auth_signer *signer = NULL;
	struct flash_auth_keyset *keys = NULL;
	unsigned char pub[32];
	struct op_image_settings cfg = { .plain_http = true, .timeout_ms = 20000 };
	struct op_image_ops ops = { .admit = op_image_default_ops.admit, .ctx = &cfg };
	struct op_provider_opts po = { .sz = sizeof(po), .issuer = "mp", .audience = "prov", .image = &ops };
	struct op_service **list = NULL;
	size_t n = 0;
	int status;
	char *answer;

	cr_assert(asprintf(&db, "%s/store.db", state) > 0);
	ASSERT_OK(op_store_open(db, &st, err, sizeof(err)), err);
	ASSERT_OK(flash_auth_signer_generate("k1", &signer), "signer");
	ASSERT_OK(flash_auth_signer_public_key(signer, pub), "public key");
	ASSERT_OK(flash_auth_keyset_new(&keys), "key set");
	ASSERT_OK(flash_auth_keyset_add(keys, "k1", pub), "add key");
	po.keys = keys;
	po.store = st;
	ASSERT_OK(op_provider_new(&po, &p), "provider");

	answer = op_create(p, signer, "big", big, 1, &status);
	cr_assert_eq(status, 422, "the 2 GiB image in 1 GiB: %d %s", status, answer);
	cr_assert(strstr(answer, "image-too-large"), "%s", answer);
	snprintf(want, sizeof(want), "needs %llu bytes", (unsigned long long)fact_u64("big.charged"));
	cr_assert(strstr(answer, want), "the image's size in: %s", answer);
	snprintf(want, sizeof(want), "limit is %llu bytes", (unsigned long long)GIB);
	cr_assert(strstr(answer, want), "the limit in: %s", answer);
	free(answer);
	ASSERT_OK(op_store_service_list(st, "o1", "p1", &list, &n), "list");
	cr_assert_eq(n, 0, "nothing stored for a refused image");
	op_service_list_free(list, n);

	answer = op_create(p, signer, "small", small, 1, &status);
	cr_assert(status == 200 || status == 201 || status == 202, "the small image fits: %d %s", status, answer);
	fact("small.digest", digest, sizeof(digest));
	snprintf(want, sizeof(want), "127.0.0.1:%u/small@%s", port_of("anon"), digest);
	cr_assert(strstr(answer, want), "pinned to the registry's digest %s: %s", want, answer);
	free(answer);

	op_provider_free(p);
	op_store_close(st);
	flash_auth_keyset_free(keys);
	flash_auth_signer_free(signer);
	free(db);
	free(state);
	free(big);
	free(small);
}
