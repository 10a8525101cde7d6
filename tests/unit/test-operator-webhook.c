/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The validating admission webhook (operator/webhook.c): the
 * AdmissionReviews a real kube-apiserver v1.36 sent (exchanges 77-80) are
 * answered as the recorded answers say (uid echoed, allowed); a spec the
 * validator refuses is denied with 422 Invalid and the validator's
 * messages and fields; the whole invalid corpus of `flashctl validate`
 * is refused by the CRD's structural schema, its CEL rules or the
 * webhook, and the webhook alone refuses every one of them while it
 * allows every valid spec; the listener serves it over TLS. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <flash/render.h>

#include "helpers.h"
#include "json.h"
#include "webhook.h"

static char *read_data(const char *rel, size_t *ret_len)
{
	const char *top = getenv("top_srcdir");
	char path[1024];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/data/%s", top ? top : ".", rel);
	f = fopen(path, "re");
	cr_assert(f, "cannot open %s", path);
	cr_assert(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0);
	buf = malloc((size_t)n + 1);
	cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (ret_len)
		*ret_len = (size_t)n;
	return buf;
}

static struct json_value *parse(const char *text, size_t len)
{
	struct json_value *v = NULL;

	cr_assert(json_parse(text, len, NULL, &v, NULL) == 0, "not JSON: %.200s", text);
	return v;
}

/* The request body of the recorded exchange @name, as JSON text. */
static char *exchange_request(const char *name, struct json_value **ret_exchange)
{
	char rel[256], *text, *body = NULL;
	size_t len;
	struct json_writer *w = json_writer_new(0);
	struct json_value *ex;

	snprintf(rel, sizeof(rel), "k8s/exchanges/%s.json", name);
	text = read_data(rel, &len);
	ex = parse(text, len);
	free(text);
	jw_value(w, json_at(ex, "request.body"));
	cr_assert(json_writer_finish(w, &body, NULL) == 0);
	*ret_exchange = ex;
	return body;
}

static struct json_value *review(const char *body, int want)
{
	char *out = NULL, err[512] = "";
	size_t len = 0;
	int r = op_webhook_review(body, strlen(body), &out, &len, err, sizeof(err));
	struct json_value *v;

	cr_assert(r == want, "review: %d (%s), wanted %d", r, err, want);
	if (r < 0)
		return NULL;
	v = parse(out, len);
	free(out);
	return v;
}

static const char *str(const struct json_value *v, const char *path)
{
	const struct json_value *s = json_at(v, path);

	return s && json_is(s, JSON_STRING) ? json_string_value(s) : NULL;
}

static bool allowed(const struct json_value *answer)
{
	bool b = false;

	cr_assert(json_get_bool(json_at(answer, "response.allowed"), &b) == 0, "no response.allowed");
	return b;
}

/* 77 (CREATE), 78 (UPDATE with oldObject), 80 (dry run): allowed, with
 * the recorded answer's apiVersion, kind and uid. */
Test(webhook, recorded_reviews_are_answered_as_recorded)
{
	static const char *const names[] = { "77-webhook-review-create", "78-webhook-review-update",
					     "80-webhook-review-dryrun" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct json_value *ex = NULL, *ans;
		char *body = exchange_request(names[i], &ex);

		ans = review(body, 0);
		ASSERT_STREQ(str(ans, "apiVersion"), str(ex, "response.body.apiVersion"), names[i]);
		ASSERT_STREQ(str(ans, "kind"), str(ex, "response.body.kind"), names[i]);
		ASSERT_STREQ(str(ans, "response.uid"), str(ex, "response.body.response.uid"), names[i]);
		ASSERT_STREQ(str(ans, "response.uid"), str(ex, "request.body.request.uid"), names[i]);
		cr_assert(allowed(ans), "%s denied", names[i]);
		cr_assert_null(json_at(ans, "response.status"), "%s: a status on an allowed answer", names[i]);
		json_free(ans);
		json_free(ex);
		free(body);
	}
}

/* 79 with a spec the validator refuses: the denial has the shape the
 * recorded denial has (status code 422, reason Invalid, a message), the
 * message names the field as the validator does, and each problem is a
 * cause; 81 shows the API server quotes the webhook by the name the
 * rendered ValidatingWebhookConfiguration gives it. */
Test(webhook, denial_has_the_recorded_shape)
{
	struct json_value *ex = NULL, *ex81 = NULL, *ans;
	char *body = exchange_request("79-webhook-review-deny", &ex), *bad, *at, *vwc = NULL, *b81;
	const struct json_value *causes;
	int64_t code = 0;

	at = strstr(body, "\"container_port\":7777");
	cr_assert(at, "the recorded spec changed");
	cr_assert(asprintf(&bad, "%.*s\"container_port\":0%s", (int)(at - body), body, at + strlen("\"container_port\":7777")) > 0);
	ans = review(bad, 0);
	cr_assert(!allowed(ans), "a port 0 spec allowed");
	ASSERT_STREQ(str(ans, "response.uid"), str(ex, "response.body.response.uid"), "uid");
	cr_assert(json_get_int64(json_at(ans, "response.status.code"), &code) == 0 && code == 422);
	cr_assert(json_at(ex, "response.body.response.status.code"), "the recording has a status code");
	ASSERT_STREQ(str(ans, "response.status.reason"), str(ex, "response.body.response.status.reason"), "reason");
	cr_assert(strncmp(str(ans, "response.status.message"), "spec.ports[0].container_port: ", 30) == 0, "%s",
		  str(ans, "response.status.message"));
	causes = json_at(ans, "response.status.details.causes");
	cr_assert(causes && causes->u.array.n == 1, "one cause");
	ASSERT_STREQ(str(causes->u.array.items[0], "field"), "spec.ports[0].container_port", "cause field");
	ASSERT_STREQ(str(causes->u.array.items[0], "reason"), "FieldValueInvalid", "cause reason");
	json_free(ans);

	/* 81: 'admission webhook "NAME" denied the request: MESSAGE'. */
	b81 = exchange_request("81-webhook-deny-client-view", &ex81);
	ASSERT_OK(flash_manifest_render(FLASH_MANIFEST_WEBHOOK, NULL, &vwc, NULL), "webhook manifest");
	cr_assert(strstr(vwc, "- name: flashservices.flash.heterocloud.io\n"), "%s", vwc);
	cr_assert(strstr(str(ex81, "response.body.message"), "admission webhook \"flashservices.flash.heterocloud.io\""));
	cr_assert(strstr(vwc, "path: " OP_WEBHOOK_PATH "\n"));
	cr_assert(strstr(str(ex, "request.path"), OP_WEBHOOK_PATH "?") == str(ex, "request.path"));
	free(vwc);
	free(b81);
	json_free(ex81);
	json_free(ex);
	free(bad);
	free(body);
}

/* A warning of the validator (a credential-looking env value) goes to
 * response.warnings, the request stays allowed. */
Test(webhook, warnings_and_other_operations)
{
	static const char head[] = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
				   "\"uid\":\"u-1\",\"kind\":{\"group\":\"flash.heterocloud.io\",\"version\":\"v1alpha1\","
				   "\"kind\":\"FlashService\"},\"operation\":";
	char *body;
	struct json_value *ans;

	cr_assert(asprintf(&body, "%s\"CREATE\",\"object\":{\"spec\":{\"region\":\"r\",\"image\":\"x\","
			   "\"cpu_millis\":100,\"memory_mib\":64,\"env\":{\"API_TOKEN\":\"ghp_0123456789abcdef0123456789abcdef0123\"}}}}}",
			   head) > 0);
	ans = review(body, 0);
	cr_assert(allowed(ans));
	cr_assert(json_at(ans, "response.warnings[0]") && strstr(str(ans, "response.warnings[0]"), "spec.env"),
		  "no warning for a credential-looking value");
	json_free(ans);
	free(body);
	/* DELETE carries no object to judge. */
	cr_assert(asprintf(&body, "%s\"DELETE\",\"object\":null}}", head) > 0);
	ans = review(body, 0);
	cr_assert(allowed(ans));
	json_free(ans);
	free(body);
	/* Not a review of ours: 400 (the API server then fails closed). */
	review("{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\"}", -EBADMSG);
	review("[]", -EBADMSG);
	review("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"kind\":"
	       "{\"group\":\"flash.heterocloud.io\",\"kind\":\"FlashService\"},\"operation\":\"CREATE\"}}",
	       -EBADMSG);
	review("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
	       "\"kind\":{\"group\":\"apps\",\"kind\":\"Deployment\"},\"operation\":\"CREATE\"}}",
	       -EBADMSG);
	review("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
	       "\"kind\":{\"group\":\"flash.heterocloud.io\",\"kind\":\"FlashService\"},\"operation\":\"CREATE\","
	       "\"object\":{}}}",
	       -EBADMSG);
}

/* Rule codes of the spec validator that a structural schema states
 * (test-render-manifests checks the CRD refuses those), and those the
 * CRD's CEL rules state, each with the CEL rule's message in the CRD. */
static const char *const structural_codes[] = {
	"type", "integer", "pattern", "minimum", "maximum", "required", "enum", "unknown-field",
	"max-length", "min-length", "max-items", "max-properties", "duplicate",
};
static const struct {
	const char *code, *message;
} cel_codes[] = {
	{ "autoscaling-range", "autoscaling.min_replicas must not exceed max_replicas" },
	{ "replicas-outside-autoscaling", "replicas must be 0 or within autoscaling min_replicas..max_replicas" },
	{ "domains-need-public", "domains need exposure type public" },
	{ "domain-port", "every domain must name a declared tcp port" },
	{ "unique", "port names must be unique" },
	{ "direct-needs-public", "direct traffic mode needs exposure type public" },
	{ "sources-need-public", "source lists apply to public exposure only" },
	{ "restricted-needs-destination", "restricted egress needs at least one allowed destination" },
	{ "destinations-need-restricted", "allowed destinations apply to restricted egress only" },
	{ "cidr", "must be an IP address or a CIDR without host bits" },
};

static bool in_list(const char *code, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(code, list[i]))
			return true;
	return false;
}

static bool cel_code(const char *code)
{
	for (size_t i = 0; i < sizeof(cel_codes) / sizeof(cel_codes[0]); i++)
		if (!strcmp(code, cel_codes[i].code))
			return true;
	return false;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* NNN-name stems of tests/data/spec/@dir ending in @ext, sorted. */
static size_t corpus(const char *dir, const char *ext, char **names, size_t max)
{
	const char *top = getenv("top_srcdir");
	char path[1024];
	struct dirent *de;
	size_t n = 0, el = strlen(ext);
	DIR *d;

	snprintf(path, sizeof(path), "%s/tests/data/spec/%s", top ? top : ".", dir);
	d = opendir(path);
	cr_assert(d, "cannot open %s", path);
	while ((de = readdir(d)) && n < max) {
		size_t len = strlen(de->d_name);

		if (len > el && !strcmp(de->d_name + len - el, ext))
			cr_assert(names[n++] = strndup(de->d_name, len - el));
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_names);
	return n;
}

static char *wrap(const char *spec, size_t i)
{
	char *body;

	cr_assert(asprintf(&body,
			   "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
			   "\"uid\":\"corpus-%zu\",\"kind\":{\"group\":\"flash.heterocloud.io\",\"version\":\"v1alpha1\","
			   "\"kind\":\"FlashService\"},\"operation\":\"CREATE\",\"object\":{\"apiVersion\":"
			   "\"flash.heterocloud.io/v1alpha1\",\"kind\":\"FlashService\",\"metadata\":{\"name\":\"c\"},"
			   "\"spec\":%s}}}",
			   i, spec) > 0);
	return body;
}

Test(webhook, the_corpus_is_refused_exactly_as_flashctl_validate_refuses_it)
{
	char *names[512], *crd = NULL;
	size_t n = corpus("invalid", ".expected", names, 512);
	size_t not_json = 0, by_schema = 0, by_cel = 0, webhook_only = 0;

	ASSERT_OK(flash_render_crd(FLASH_CRD_FLASHSERVICE, FLASH_RENDER_JSON, &crd, NULL), "crd");
	for (size_t i = 0; i < sizeof(cel_codes) / sizeof(cel_codes[0]); i++)
		cr_assert(strstr(crd, cel_codes[i].message), "the CRD has no CEL rule for %s", cel_codes[i].code);
	cr_assert(n >= 100, "only %zu invalid specs", n);
	for (size_t f = 0; f < n; f++) {
		char rel[512], *expected, *spec, *body, *line, *save = NULL;
		bool schema = false, cel = false, json_level = false;
		size_t n_paths = 0;
		char paths[32][300];
		struct json_value *ans;
		char *out = NULL, err[512];
		size_t out_len = 0;
		int r;

		snprintf(rel, sizeof(rel), "spec/invalid/%s.expected", names[f]);
		expected = read_data(rel, NULL);
		for (line = strtok_r(expected, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char sev[16], path[256], code[64];

			if (sscanf(line, "%15s %255s %63s", sev, path, code) != 3 || strcmp(sev, "error") != 0)
				continue;
			json_level |= !strncmp(code, "json-", 5) || !strcmp(code, "nul-character");
			schema |= in_list(code, structural_codes, sizeof(structural_codes) / sizeof(structural_codes[0]));
			cel |= cel_code(code);
			if (n_paths < 32)
				snprintf(paths[n_paths++], sizeof(paths[0]), "spec%s%s", strcmp(path, "-") ? "." : "",
					 strcmp(path, "-") ? path : "");
		}
		free(expected);
		snprintf(rel, sizeof(rel), "spec/invalid/%s.json", names[f]);
		spec = read_data(rel, NULL);
		body = wrap(spec, f);
		r = op_webhook_review(body, strlen(body), &out, &out_len, err, sizeof(err));
		if (json_level) {
			/* Not JSON the API server decodes into an object, or
			 * nothing the webhook takes: refused before the
			 * validator (the webhook answers 400; failurePolicy
			 * Fail refuses the write) or by it. */
			if (r == -EBADMSG) {
				not_json++;
			} else {
				cr_assert(r == 0, "%s: %d", rel, r);
				ans = parse(out, out_len);
				cr_assert(!allowed(ans), "%s: allowed by the webhook", rel);
				json_free(ans);
				by_schema++;
			}
		} else {
			const struct json_value *causes;

			cr_assert(r == 0, "%s: the webhook did not answer (%d %s)", rel, r, err);
			ans = parse(out, out_len);
			cr_assert(!allowed(ans), "%s: allowed by the webhook", rel);
			ASSERT_STREQ(str(ans, "response.status.reason"), "Invalid", rel);
			/* Every field the validator names is a cause, with its
			 * path under spec. */
			causes = json_at(ans, "response.status.details.causes");
			for (size_t p = 0; p < n_paths; p++) {
				bool found = false;

				for (size_t c = 0; causes && c < causes->u.array.n && !found; c++)
					found = !strcmp(str(causes->u.array.items[c], "field"), paths[p]);
				cr_assert(found, "%s: no cause for %s in %s", rel, paths[p], str(ans, "response.status.message"));
			}
			json_free(ans);
			if (schema)
				by_schema++;
			else if (cel)
				by_cel++;
			else
				webhook_only++;
		}
		free(out);
		free(body);
		free(spec);
		free(names[f]);
	}
	free(crd);
	cr_log_info("%zu invalid specs: %zu not JSON, %zu refused by the structural schema, %zu by a CEL rule, "
		    "%zu by the webhook alone (all %zu by the webhook)",
		    n / 1, not_json, by_schema, by_cel, webhook_only, n);
	cr_assert(by_cel >= 10, "only %zu specs refused by CEL rules", by_cel);
	cr_assert(not_json + by_schema + by_cel + webhook_only == n);
}

Test(webhook, every_valid_spec_is_allowed)
{
	char *names[128];
	size_t n = corpus("valid", ".json", names, 128);

	cr_assert(n >= 10, "only %zu valid specs", n);
	for (size_t f = 0; f < n; f++) {
		char rel[512], *spec, *body;
		struct json_value *ans;

		snprintf(rel, sizeof(rel), "spec/valid/%s.json", names[f]);
		spec = read_data(rel, NULL);
		body = wrap(spec, f);
		ans = review(body, 0);
		cr_assert(allowed(ans), "%s denied: %s", rel, str(ans, "response.status.message"));
		json_free(ans);
		free(body);
		free(spec);
		free(names[f]);
	}
}

/* The listener: TLS on its own port, POST /validate-flashservice only. */
static size_t tls_exchange(uint16_t port, const char *request, char *out, size_t size)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	gnutls_certificate_credentials_t cred;
	gnutls_session_t s;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;
	size_t n = 0;
	ssize_t r;

	cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	cr_assert_eq(gnutls_certificate_allocate_credentials(&cred), 0);
	cr_assert_eq(gnutls_init(&s, GNUTLS_CLIENT), 0);
	cr_assert_eq(gnutls_set_default_priority(s), 0);
	cr_assert_eq(gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred), 0);
	gnutls_transport_set_int(s, fd);
	gnutls_handshake_set_timeout(s, 30000);
	do
		rc = gnutls_handshake(s);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	cr_assert_eq(rc, 0, "handshake: %s", gnutls_strerror(rc));
	cr_assert(gnutls_record_send(s, request, strlen(request)) == (ssize_t)strlen(request));
	while (n + 1 < size && (r = gnutls_record_recv(s, out + n, size - 1 - n)) != 0) {
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	out[n] = '\0';
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(cred);
	close(fd);
	return n;
}

Test(webhook, served_over_tls, .timeout = 120)
{
	char dir[] = "/tmp/test-webhook-XXXXXX", cert[128], key[128], cmd[1024], err[256] = "", *req, *out;
	struct json_value *ex = NULL;
	char *body = exchange_request("77-webhook-review-create", &ex);
	struct op_webhook *wh = NULL;
	struct op_webhook_opts o = { .sz = sizeof(o), .listen = "127.0.0.1:0", .cert_file = cert, .key_file = key,
				     .header_timeout_ms = 30000 };

	cr_assert(mkdtemp(dir));
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout '%s' -out '%s' -days 1 "
		 "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 && chmod 600 '%s'",
		 key, cert, key);
	cr_assert(system(cmd) == 0, "openssl (scripts/deps.sh installs it)");
	ASSERT_OK(op_webhook_start(&o, &wh, err, sizeof(err)), err);
	cr_assert(op_webhook_port(wh) > 0);
	out = malloc(65536);
	cr_assert(out);
	cr_assert(asprintf(&req, "POST " OP_WEBHOOK_PATH "?timeout=5s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
			   "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", strlen(body), body) > 0);
	tls_exchange(op_webhook_port(wh), req, out, 65536);
	cr_assert(strncmp(out, "HTTP/1.1 200", 12) == 0, "%.300s", out);
	cr_assert(strstr(out, "\"uid\":\"16236060-9d79-4841-9a91-8afd8f9ff347\",\"allowed\":true"), "%s", out);
	free(req);
	tls_exchange(op_webhook_port(wh), "GET " OP_WEBHOOK_PATH " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		     out, 65536);
	cr_assert(strncmp(out, "HTTP/1.1 405", 12) == 0, "%.300s", out);
	tls_exchange(op_webhook_port(wh), "POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
		     out, 65536);
	cr_assert(strncmp(out, "HTTP/1.1 404", 12) == 0, "%.300s", out);
	tls_exchange(op_webhook_port(wh), "POST " OP_WEBHOOK_PATH " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
		     "Connection: close\r\n\r\n{}", out, 65536);
	cr_assert(strncmp(out, "HTTP/1.1 400", 12) == 0, "%.300s", out);
	op_webhook_stop(wh);
	/* A key file others can read is refused before anything listens. */
	cr_assert(chmod(key, 0644) == 0);
	wh = NULL;
	cr_assert(op_webhook_start(&o, &wh, err, sizeof(err)) < 0 && !wh, "a world-readable key taken");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(system(cmd) == 0);
	free(out);
	free(body);
	json_free(ex);
}
