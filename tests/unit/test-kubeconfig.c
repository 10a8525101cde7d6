/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where the Kubernetes client connects (common/kubeconfig.c): a table of
 * good and bad kubeconfig files (each refusal names what is wrong), files
 * relative to the kubeconfig, and the in-cluster configuration from a
 * temporary service-account directory.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "helpers.h"
#include "k8s.h"
#include "util.h"

#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"
#define KEY_B64 "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUJrZXkKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo="
#define PEM "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"

/* A kubeconfig with one context "c" on cluster "k" and user "u" whose
 * bodies are @cluster and @user (YAML lines indented by 4). */
static char *config(const char *cluster, const char *user)
{
	char *s;

	cr_assert(asprintf(&s,
			   "apiVersion: v1\n"
			   "kind: Config\n"
			   "current-context: c\n"
			   "preferences: {}\n"
			   "contexts:\n"
			   "- name: c\n"
			   "  context:\n"
			   "    cluster: k\n"
			   "    user: u\n"
			   "    namespace: flash-system\n"
			   "- name: other\n"
			   "  context: {cluster: k, user: u}\n"
			   "clusters:\n"
			   "- name: k\n"
			   "  cluster:\n"
			   "%s"
			   "users:\n"
			   "- name: u\n"
			   "  user:\n"
			   "%s",
			   cluster, user) > 0);
	return s;
}

#define SERVER "    server: https://10.0.0.1:6443\n"
#define TOKEN "    token: abc\n"

static int parse(const char *text, const char *context, struct k8s_config **cfg, struct diag *d)
{
	return k8s_config_parse_kubeconfig(text, strlen(text), "/etc/kube", context, cfg, d);
}

Test(kubeconfig, good_files)
{
	struct k8s_config *cfg = NULL;
	struct diag *d;
	char *t;

	ASSERT_OK(diag_new(&d), "diag");
	t = config(SERVER "    certificate-authority-data: " CA_B64 "\n", TOKEN);
	ASSERT_OK(parse(t, NULL, &cfg, d), "token, CA data");
	ASSERT_STREQ(cfg->server, "https://10.0.0.1:6443", "server");
	ASSERT_STREQ(cfg->token, "abc", "token");
	ASSERT_STREQ(cfg->namespace, "flash-system", "namespace");
	ASSERT_STREQ(cfg->context, "c", "current-context");
	ASSERT_STREQ(cfg->user, "u", "user");
	cr_assert_eq(cfg->ca_pem_len, strlen(PEM));
	cr_assert_eq(memcmp(cfg->ca_pem, PEM, strlen(PEM)), 0, "CA decoded");
	cr_assert(!cfg->insecure_skip_tls_verify);
	k8s_config_free(cfg);
	free(t);

	/* Another context; tokenFile relative to the kubeconfig's directory. */
	t = config("    server: https://api.example.com/\n    insecure-skip-tls-verify: true\n",
		   "    tokenFile: secrets/token\n");
	ASSERT_OK(parse(t, "other", &cfg, d), "tokenFile, insecure");
	ASSERT_STREQ(cfg->token_file, "/etc/kube/secrets/token", "relative tokenFile");
	ASSERT_STREQ(cfg->server, "https://api.example.com", "trailing slash dropped");
	cr_assert(cfg->insecure_skip_tls_verify);
	cr_assert_null(cfg->namespace, "the other context has none");
	k8s_config_free(cfg);
	free(t);

	/* Client certificate and key as data; http to loopback. */
	t = config("    server: http://127.0.0.1:8080\n",
		   "    client-certificate-data: " CA_B64 "\n    client-key-data: " KEY_B64 "\n");
	ASSERT_OK(parse(t, NULL, &cfg, d), "client certificate data");
	cr_assert(cfg->client_cert_pem && cfg->client_key_pem);
	cr_assert(strstr(cfg->client_key_pem, "PRIVATE KEY"));
	cr_assert_null(cfg->token);
	k8s_config_free(cfg);
	free(t);
	diag_free(d);
}

Test(kubeconfig, files_next_to_it)
{
	char dir[] = "/tmp/kubeconfig-XXXXXX", path[128], ca[128];
	struct k8s_config *cfg = NULL;
	FILE *fp;
	char *t;

	cr_assert(mkdtemp(dir));
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	fp = fopen(ca, "we");
	fputs(PEM, fp);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/config", dir);
	t = config(SERVER "    certificate-authority: ca.crt\n", TOKEN);
	fp = fopen(path, "we");
	fputs(t, fp);
	fclose(fp);
	free(t);
	ASSERT_OK(k8s_config_from_kubeconfig(path, NULL, &cfg, NULL), "CA file");
	cr_assert_eq(cfg->ca_pem_len, strlen(PEM));
	k8s_config_free(cfg);
	unlink(ca);
	ASSERT_ERR(k8s_config_from_kubeconfig(path, NULL, &cfg, NULL), -ENOENT, "CA file gone");
	unlink(path);
	ASSERT_ERR(k8s_config_from_kubeconfig(path, NULL, &cfg, NULL), -ENOENT, "no kubeconfig");
	/* A directory is not a kubeconfig. */
	cr_assert_lt(k8s_config_from_kubeconfig(dir, NULL, &cfg, NULL), 0);
	rmdir(dir);
}

static const struct {
	const char *name;
	const char *cluster;
	const char *user;
	const char *context;
	int err;
	const char *says;           /* in the diag's first message */
} bad[] = {
	{ "exec plugin", SERVER, "    exec:\n      command: aws\n", NULL, -EINVAL, "user \"u\": exec is not supported" },
	{ "auth-provider", SERVER, "    auth-provider:\n      name: gcp\n", NULL, -EINVAL,
	  "user \"u\": auth-provider is not supported" },
	{ "basic auth", SERVER, "    username: a\n    password: b\n", NULL, -EINVAL, "username is not supported" },
	{ "impersonation", SERVER, TOKEN "    as: admin\n", NULL, -EINVAL, "user \"u\": as is not supported" },
	{ "missing context", SERVER, TOKEN, "nope", -ENOENT, "context \"nope\" not found in contexts" },
	{ "CA data and file", SERVER "    certificate-authority: /x\n    certificate-authority-data: " CA_B64 "\n",
	  TOKEN, NULL, -EINVAL, "both certificate-authority and certificate-authority-data" },
	{ "bad base64", SERVER "    certificate-authority-data: '***'\n", TOKEN, NULL, -EINVAL,
	  "certificate-authority-data is not base64" },
	{ "base64 of no PEM", SERVER "    certificate-authority-data: bm90IGEgcGVt\n", TOKEN, NULL, -EINVAL,
	  "certificate-authority-data is not PEM" },
	{ "token and tokenFile", SERVER, TOKEN "    tokenFile: /t\n", NULL, -EINVAL, "both token and tokenFile" },
	{ "certificate without key", SERVER, "    client-certificate-data: " CA_B64 "\n", NULL, -EINVAL,
	  "a client certificate without its key" },
	{ "no server", "    insecure-skip-tls-verify: true\n", TOKEN, NULL, -EINVAL, "cluster \"k\": no server" },
	{ "http to a network", "    server: http://10.0.0.1:8080\n", TOKEN, NULL, -EINVAL, "is not an https:// URL" },
	{ "not a URL", "    server: 10.0.0.1\n", TOKEN, NULL, -EINVAL, "is not an https:// URL" },
	{ "proxy", SERVER "    proxy-url: http://proxy:3128\n", TOKEN, NULL, -EINVAL, "proxy-url is not supported" },
	{ "bad bool", SERVER "    insecure-skip-tls-verify: maybe\n", TOKEN, NULL, -EINVAL, "must be true or false" },
	{ "insecure with a CA", SERVER "    insecure-skip-tls-verify: true\n    certificate-authority-data: " CA_B64 "\n",
	  TOKEN, NULL, -EINVAL, "insecure-skip-tls-verify together" },
	{ "token not a string", SERVER, "    token: [a]\n", NULL, -EINVAL, "token must be a string" },
};

Test(kubeconfig, refused)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct k8s_config *cfg = (struct k8s_config *)0x1;
		const struct diag_entry *de;
		struct diag *d;
		char *t = config(bad[i].cluster, bad[i].user);

		ASSERT_OK(diag_new(&d), "diag");
		ASSERT_ERR(parse(t, bad[i].context, &cfg, d), bad[i].err, bad[i].name);
		cr_assert_eq(cfg, (struct k8s_config *)0x1, "%s: output untouched", bad[i].name);
		de = diag_first_error(d);
		cr_assert(de && strstr(de->message, bad[i].says), "%s: \"%s\" says \"%s\"", bad[i].name,
			  de ? de->message : "(none)", bad[i].says);
		diag_free(d);
		free(t);
	}
}

Test(kubeconfig, refused_documents)
{
	static const struct {
		const char *text;
		const char *says;
	} docs[] = {
		{ "a: [b\n", "not YAML" },
		{ "- a\n- b\n", "a kubeconfig is a YAML map" },
		{ "contexts: []\n", "no current-context" },
		{ "current-context: c\ncontexts: 3\n", "contexts must be a list" },
		{ "current-context: c\ncontexts:\n- name: c\n", "no context map" },
		{ "current-context: c\ncontexts:\n- name: c\n  context: {user: u}\n", "no cluster" },
		{ "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n",
		  "cluster \"k\" not found in clusters" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(docs); i++) {
		struct k8s_config *cfg = NULL;
		const struct diag_entry *de;
		struct diag *d;

		ASSERT_OK(diag_new(&d), "diag");
		cr_assert_lt(parse(docs[i].text, NULL, &cfg, d), 0, "%s refused", docs[i].text);
		de = diag_first_error(d);
		cr_assert(de && strstr(de->message, docs[i].says), "\"%s\": \"%s\"", docs[i].text,
			  de ? de->message : "(none)");
		diag_free(d);
	}
	/* Size bound. */
	{
		size_t n = (1u << 20) + 1;
		char *big = malloc(n);
		struct k8s_config *cfg = NULL;

		memset(big, '#', n);
		ASSERT_ERR(k8s_config_parse_kubeconfig(big, n, NULL, NULL, &cfg, NULL), -EINVAL, "over 1 MiB");
		free(big);
	}
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "we");
	cr_assert(fp, "%s", path);
	fputs(text, fp);
	fclose(fp);
}

Test(kubeconfig, in_cluster)
{
	char dir[] = "/tmp/serviceaccount-XXXXXX", path[256];
	struct k8s_in_cluster_opts o = { .sz = sizeof(o), .host = "10.96.0.1", .port = "443" };
	struct k8s_config *cfg = NULL;
	struct diag *d;

	cr_assert(mkdtemp(dir));
	o.dir = dir;
	ASSERT_OK(diag_new(&d), "diag");
	ASSERT_ERR(k8s_config_in_cluster(&o, &cfg, d), -ENOENT, "no token yet");
	cr_assert(strstr(diag_first_error(d)->message, "/token"));
	put(dir, "token", "sa-token\n");
	diag_reset(d);
	ASSERT_ERR(k8s_config_in_cluster(&o, &cfg, d), -ENOENT, "no ca.crt");
	put(dir, "ca.crt", "garbage");
	ASSERT_ERR(k8s_config_in_cluster(&o, &cfg, d), -EINVAL, "ca.crt not PEM");
	put(dir, "ca.crt", PEM);
	ASSERT_OK(k8s_config_in_cluster(&o, &cfg, d), "in cluster");
	ASSERT_STREQ(cfg->server, "https://10.96.0.1:443", "server");
	snprintf(path, sizeof(path), "%s/token", dir);
	ASSERT_STREQ(cfg->token_file, path, "token file, read by the client");
	cr_assert_null(cfg->token);
	cr_assert_null(cfg->namespace, "no namespace file");
	k8s_config_free(cfg);
	put(dir, "namespace", "flash-system\n");
	o.host = "fd00::1";
	ASSERT_OK(k8s_config_in_cluster(&o, &cfg, d), "IPv6");
	ASSERT_STREQ(cfg->server, "https://[fd00::1]:443", "bracketed");
	ASSERT_STREQ(cfg->namespace, "flash-system", "namespace file");
	k8s_config_free(cfg);
	o.port = "99999";
	ASSERT_ERR(k8s_config_in_cluster(&o, &cfg, d), -EINVAL, "bad port");
	o.port = "443";
	o.host = "a/b";
	ASSERT_ERR(k8s_config_in_cluster(&o, &cfg, d), -EINVAL, "bad host");
	/* From the environment. */
	o.host = o.port = NULL;
	unsetenv("KUBERNETES_SERVICE_HOST");
	ASSERT_ERR(k8s_config_in_cluster(&o, &cfg, d), -ENOENT, "not in a cluster");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
	ASSERT_OK(k8s_config_in_cluster(&o, &cfg, d), "environment");
	ASSERT_STREQ(cfg->server, "https://10.96.0.1:6443", "from the environment");
	k8s_config_free(cfg);
	put(dir, "namespace", "Not/A-Namespace\n");
	ASSERT_ERR(k8s_config_in_cluster(&o, &cfg, d), -EINVAL, "bad namespace");
	diag_free(d);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	cr_assert_eq(system(path), 0);
}

/* The two common/util.c helpers the client brought: the growing buffer
 * and the Retry-After header (shared with libflash's provider client). */
Test(util, buf_append_bounded)
{
	struct util_buf b = { 0 };

	ASSERT_OK(util_buf_append(&b, "abc", 3, 8), "append");
	ASSERT_OK(util_buf_append(&b, "", 0, 8), "empty append");
	ASSERT_OK(util_buf_append(&b, "defgh", 5, 8), "up to the bound");
	ASSERT_STREQ(b.p, "abcdefgh", "contents, NUL-terminated");
	ASSERT_ERR(util_buf_append(&b, "i", 1, 8), -EMSGSIZE, "past the bound");
	cr_assert_eq(b.len, 8, "unchanged on failure");
	ASSERT_ERR(util_buf_append(&b, "i", SIZE_MAX, 0), -EMSGSIZE, "overflow");
	for (int i = 0; i < 1000; i++)
		ASSERT_OK(util_buf_append(&b, "0123456789", 10, 0), "grows");
	cr_assert_eq(b.len, 10008);
	cr_assert_eq(b.p[b.len], '\0');
	free(b.p);
}

Test(util, retry_after)
{
	unsigned int s = 77;

	cr_assert(util_retry_after_parse("Retry-After: 3\r\n", 16, &s));
	cr_assert_eq(s, 3);
	cr_assert(util_retry_after_parse("retry-after:120", 15, &s));
	cr_assert_eq(s, 120);
	cr_assert(util_retry_after_parse("Retry-After: 99999999999999\r\n", 29, &s));
	cr_assert_eq(s, 86400, "bounded to a day");
	s = 77;
	cr_assert(!util_retry_after_parse("Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n", 44, &s), "a date");
	cr_assert(!util_retry_after_parse("Retry-After: \r\n", 15, &s), "empty");
	cr_assert(!util_retry_after_parse("Retry-After: 5x\r\n", 17, &s), "junk");
	cr_assert(!util_retry_after_parse("Warning: 299 -\r\n", 16, &s), "another header");
	cr_assert_eq(s, 77, "untouched when false");
}
