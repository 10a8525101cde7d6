/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The OCI distribution API client of the image module (libcurl): GET of
 * manifests and blobs, the WWW-Authenticate challenge (Basic, or Bearer
 * through the token service), redirects followed by hand so that
 * Authorization never reaches another scheme, host or port.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>

#include "dl.h"
#include "image-internal.h"
#include "internal.h"
#include "json.h"

#define REDIRECTS_MAX 5
#define TOKEN_ANSWER_MAX (64 * 1024)
#define LOCATION_MAX 4096

struct image_registry {
	char *base;        /* "https://host:port" */
	char *repo;
	char *ca_file;
	char *username;
	char *password;
	bool plain_http;
	char *auth;        /* "Authorization: ..." for the registry's origin */
	uint64_t deadline; /* monotonic ms */
};

#define why_set image_why

uint64_t image_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void free_secret(char *s)
{
	if (s) {
		sodium_memzero(s, strlen(s));
		free(s);
	}
}

int image_registry_new(const struct image_ref *ref, const struct flash_image_opts *opts,
		       struct image_registry **ret)
{
	struct image_registry *r;
	const char *ca = OPTS_GET(opts, ca_file, NULL), *user = OPTS_GET(opts, username, NULL),
		   *pass = OPTS_GET(opts, password, NULL);
	const struct flash_image_credential *creds = OPTS_GET(opts, credentials, NULL);
	size_t n_creds = OPTS_GET(opts, n_credentials, 0);
	int rc;

	/* The registry's own entry wins over the catch-all pair. */
	for (size_t i = 0; creds && i < n_creds; i++) {
		if (creds[i].registry && strcasecmp(creds[i].registry, ref->host) == 0) {
			user = creds[i].username;
			pass = creds[i].password;
			break;
		}
	}

	rc = flash_dl_curl();
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->plain_http = OPTS_GET(opts, plain_http, false);
	if (asprintf(&r->base, "%s://%s", r->plain_http ? "http" : "https", ref->api_host) < 0)
		r->base = NULL;
	r->repo = strdup(ref->repo);
	r->ca_file = ca ? strdup(ca) : NULL;
	r->username = user ? strdup(user) : NULL;
	r->password = strdup(pass ? pass : "");
	if (!r->base || !r->repo || (ca && !r->ca_file) || (user && !r->username) || !r->password) {
		image_registry_free(r);
		return -ENOMEM;
	}
	*ret = r;
	return 0;
}

void image_registry_free(struct image_registry *r)
{
	if (!r)
		return;
	free(r->base);
	free(r->repo);
	free(r->ca_file);
	free_secret(r->username);
	free_secret(r->password);
	free_secret(r->auth);
	free(r);
}

void image_registry_set_deadline(struct image_registry *r, uint64_t deadline_ms)
{
	r->deadline = deadline_ms;
}

/* ---------------------------------------------------------------- one request */

struct http_resp {
	long status;
	char content_type[256];
	char digest[IMAGE_DIGEST_LEN + 1];
	bool digest_bad;
	char location[LOCATION_MAX + 1];
	bool location_bad;
	char challenge[IMAGE_CHALLENGE_MAX + 1];
	bool challenge_bad;
	char errbody[1024];
	size_t errlen;
	struct image_sink *sink;
};

static void resp_reset(struct http_resp *h)
{
	struct image_sink *sink = h->sink;

	memset(h, 0, sizeof(*h));
	h->sink = sink;
}

/* Copies a header value (printable ASCII only) into @dst; false when it
 * has another byte or does not fit. */
static bool header_copy(char *dst, size_t size, const char *v, size_t n)
{
	if (n >= size)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] >= 0x7f)
			if (v[i] != '\t')
				return false;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return true;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct http_resp *h = userdata;
	size_t n = size * nmemb, nlen, vlen;
	const char *colon, *v;

	if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		const char *sp = memchr(data, ' ', n);

		resp_reset(h);
		if (sp && (size_t)(sp - data) + 4 <= n)
			h->status = strtol(sp + 1, NULL, 10);
		return n;
	}
	colon = memchr(data, ':', n);
	if (!colon)
		return n;
	nlen = (size_t)(colon - data);
	v = colon + 1;
	vlen = n - nlen - 1;
	while (vlen && (*v == ' ' || *v == '\t'))
		v++, vlen--;
	while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	if (nlen == 12 && strncasecmp(data, "Content-Type", 12) == 0) {
		if (!header_copy(h->content_type, sizeof(h->content_type), v, vlen))
			h->content_type[0] = '\0';
	} else if (nlen == 21 && strncasecmp(data, "Docker-Content-Digest", 21) == 0) {
		if (vlen != IMAGE_DIGEST_LEN || !header_copy(h->digest, sizeof(h->digest), v, vlen) ||
		    !image_digest_valid(h->digest))
			h->digest_bad = true;
	} else if (nlen == 8 && strncasecmp(data, "Location", 8) == 0) {
		if (!header_copy(h->location, sizeof(h->location), v, vlen))
			h->location_bad = true;
	} else if (nlen == 16 && strncasecmp(data, "WWW-Authenticate", 16) == 0) {
		/* The first challenge header counts; registries send one. */
		if (!h->challenge[0] && !h->challenge_bad &&
		    !header_copy(h->challenge, sizeof(h->challenge), v, vlen))
			h->challenge_bad = true;
	}
	return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct http_resp *h = userdata;
	size_t n = size * nmemb;

	if (h->status == 200)
		return image_sink_write(h->sink, data, n) ? n : 0;
	if (h->errlen < sizeof(h->errbody) - 1) {
		size_t k = n < sizeof(h->errbody) - 1 - h->errlen ? n : sizeof(h->errbody) - 1 - h->errlen;

		memcpy(h->errbody + h->errlen, data, k);
		h->errlen += k;
		h->errbody[h->errlen] = '\0';
	}
	return n;
}

static int perform(struct image_registry *r, const char *url, const char *accept, const char *auth,
		   struct http_resp *h, char *why, size_t why_size)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL, *t;
	uint64_t now = image_now_ms();
	CURL *c;
	CURLcode cc;
	char *accept_line = NULL;
	int rc = 0;

	if (now >= r->deadline) {
		why_set(why, why_size, "image operation timed out");
		return -ETIMEDOUT;
	}
	c = sym_curl_easy_init();
	if (!c)
		return -ENOMEM;
	resp_reset(h);
	if (accept) {
		if (asprintf(&accept_line, "Accept: %s", accept) < 0) {
			accept_line = NULL;
			rc = -ENOMEM;
			goto out;
		}
		t = sym_curl_slist_append(hdrs, accept_line);
		if (!t) {
			rc = -ENOMEM;
			goto out;
		}
		hdrs = t;
	}
	if (auth) {
		t = sym_curl_slist_append(hdrs, auth);
		if (!t) {
			rc = -ENOMEM;
			goto out;
		}
		hdrs = t;
	}
	sym_curl_easy_setopt(c, CURLOPT_URL, url);
	sym_curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	sym_curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	sym_curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, r->plain_http ? "http,https" : "https");
	sym_curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(r->deadline - now));
	sym_curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(r->deadline - now));
	sym_curl_easy_setopt(c, CURLOPT_USERAGENT, "libflash/" PACKAGE_VERSION);
	sym_curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	sym_curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	sym_curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
	sym_curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	sym_curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
	sym_curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	if (r->ca_file)
		sym_curl_easy_setopt(c, CURLOPT_CAINFO, r->ca_file);
	cc = sym_curl_easy_perform(c);
	if (cc == CURLE_OK)
		goto out;
	if (cc == CURLE_WRITE_ERROR && h->sink->overflow) {
		why_set(why, why_size, "%s: answer larger than %llu bytes", url, (unsigned long long)h->sink->limit);
		rc = -FLASH_E_IMAGE_SIZE;
	} else if (cc == CURLE_WRITE_ERROR && h->sink->err) {
		why_set(why, why_size, "%s: writing the answer: %s", url, strerror(-h->sink->err));
		rc = h->sink->err;
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		why_set(why, why_size, "%s: timed out", url);
		rc = -ETIMEDOUT;
	} else if (cc == CURLE_OUT_OF_MEMORY) {
		rc = -ENOMEM;
	} else {
		why_set(why, why_size, "%s: %s", url, errbuf[0] ? errbuf : sym_curl_easy_strerror(cc));
		rc = -FLASH_E_IMAGE_TRANSPORT;
	}
out:
	sym_curl_slist_free_all(hdrs);
	free(accept_line);
	sym_curl_easy_cleanup(c);
	return rc;
}

/* ---------------------------------------------------------------- origins, redirects */

struct origin {
	char *scheme, *host, *port;
};

static void origin_clear(struct origin *o)
{
	sym_curl_free(o->scheme);
	sym_curl_free(o->host);
	sym_curl_free(o->port);
	memset(o, 0, sizeof(*o));
}

static int origin_of(const char *url, struct origin *o)
{
	CURLU *u = sym_curl_url();
	int rc = -FLASH_E_IMAGE_REGISTRY;

	memset(o, 0, sizeof(*o));
	if (!u)
		return -ENOMEM;
	if (sym_curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    sym_curl_url_get(u, CURLUPART_SCHEME, &o->scheme, 0) == CURLUE_OK &&
	    sym_curl_url_get(u, CURLUPART_HOST, &o->host, 0) == CURLUE_OK &&
	    sym_curl_url_get(u, CURLUPART_PORT, &o->port, CURLU_DEFAULT_PORT) == CURLUE_OK)
		rc = 0;
	if (rc < 0)
		origin_clear(o);
	sym_curl_url_cleanup(u);
	return rc;
}

/* Same scheme, host and port (RFC 6454 origin). */
static bool same_origin(const char *a, const char *b)
{
	struct origin oa, ob;
	bool same = false;

	if (origin_of(a, &oa) < 0)
		return false;
	if (origin_of(b, &ob) == 0) {
		same = strcasecmp(oa.scheme, ob.scheme) == 0 && strcasecmp(oa.host, ob.host) == 0 &&
		       strcmp(oa.port, ob.port) == 0;
		origin_clear(&ob);
	}
	origin_clear(&oa);
	return same;
}

/* @location resolved against @base into a new string. */
static int resolve_location(const char *base, const char *location, bool plain_http, char **ret, char *why,
			    size_t why_size)
{
	CURLU *u = sym_curl_url();
	char *out = NULL, *scheme = NULL;
	int rc = -FLASH_E_IMAGE_REGISTRY;

	if (!u)
		return -ENOMEM;
	if (sym_curl_url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
	    sym_curl_url_set(u, CURLUPART_URL, location, 0) != CURLUE_OK ||
	    sym_curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    sym_curl_url_get(u, CURLUPART_URL, &out, 0) != CURLUE_OK) {
		why_set(why, why_size, "redirect to a malformed location");
		goto out;
	}
	if (strcasecmp(scheme, "https") != 0 && !(plain_http && strcasecmp(scheme, "http") == 0)) {
		why_set(why, why_size, "redirect to a %s:// location refused", scheme);
		goto out;
	}
	*ret = strdup(out);
	rc = *ret ? 0 : -ENOMEM;
out:
	sym_curl_free(scheme);
	sym_curl_free(out);
	sym_curl_url_cleanup(u);
	return rc;
}

/* GET @url following redirects; @auth goes only to @origin_url's origin.
 * *ret_at_origin (may be NULL) tells whether the last answer came from
 * that origin: a challenge from another host is never answered. */
static int get_following(struct image_registry *r, const char *url, const char *origin_url, const char *accept,
			 const char *auth, struct http_resp *h, bool *ret_at_origin, char *why, size_t why_size)
{
	char *cur = strdup(url);
	int rc;

	if (!cur)
		return -ENOMEM;
	for (int hops = 0;; hops++) {
		bool at_origin = same_origin(cur, origin_url);
		char *next = NULL;

		if (ret_at_origin)
			*ret_at_origin = at_origin;
		rc = perform(r, cur, accept, auth && at_origin ? auth : NULL, h, why, why_size);
		if (rc < 0)
			break;
		if (h->status != 301 && h->status != 302 && h->status != 303 && h->status != 307 && h->status != 308)
			break;
		if (hops >= REDIRECTS_MAX) {
			why_set(why, why_size, "%s: more than %d redirects", url, REDIRECTS_MAX);
			rc = -FLASH_E_IMAGE_REGISTRY;
			break;
		}
		if (h->location_bad || !h->location[0]) {
			why_set(why, why_size, "%s: redirect %ld without a usable Location", cur, h->status);
			rc = -FLASH_E_IMAGE_REGISTRY;
			break;
		}
		rc = resolve_location(cur, h->location, r->plain_http, &next, why, why_size);
		if (rc < 0)
			break;
		free(cur);
		cur = next;
	}
	free(cur);
	return rc;
}

/* The registry's error code ("MANIFEST_UNKNOWN") from an error body. */
static void error_code(const struct http_resp *h, char *out, size_t size)
{
	struct json_value *doc = NULL;
	const struct json_value *errs;
	const char *code = NULL;

	out[0] = '\0';
	if (h->errlen == 0 || json_parse(h->errbody, h->errlen, NULL, &doc, NULL) < 0)
		return;
	errs = json_get(doc, "errors");
	if (errs && errs->type == JSON_ARRAY && errs->u.array.n > 0 &&
	    json_get_string(json_get(errs->u.array.items[0], "code"), &code) == 0) {
		size_t n = strspn(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");

		if (code[n] == '\0' && n < size)
			snprintf(out, size, "%s", code);
	}
	json_free(doc);
}

/* ---------------------------------------------------------------- authentication */

static int basic_header(const char *user, const char *pass, char **ret)
{
	size_t ul = strlen(user), pl = strlen(pass), raw_len = ul + 1 + pl;
	size_t b64_len = sodium_base64_encoded_len(raw_len, sodium_base64_VARIANT_ORIGINAL);
	char *raw = malloc(raw_len + 1), *b64 = malloc(b64_len);
	int rc = -ENOMEM;

	if (raw && b64) {
		memcpy(raw, user, ul);
		raw[ul] = ':';
		memcpy(raw + ul + 1, pass, pl);
		sodium_bin2base64(b64, b64_len, (unsigned char *)raw, raw_len, sodium_base64_VARIANT_ORIGINAL);
		rc = asprintf(ret, "Authorization: Basic %s", b64) < 0 ? -ENOMEM : 0;
	}
	if (raw)
		sodium_memzero(raw, raw_len);
	if (b64)
		sodium_memzero(b64, b64_len);
	free(raw);
	free(b64);
	return rc;
}

static int bearer_token(struct image_registry *r, const struct image_challenge *ch, char *why, size_t why_size)
{
	_cleanup_free_ char *url = NULL, *scope = NULL;
	char *basic = NULL, *service = NULL, *scope_esc = NULL;
	struct image_sink sink;
	struct http_resp *h = calloc(1, sizeof(*h));
	char *token = NULL;
	int rc;

	if (!h)
		return -ENOMEM;
	image_sink_init(&sink, -1, TOKEN_ANSWER_MAX);
	h->sink = &sink;
	rc = resolve_location(r->base, ch->realm, r->plain_http, &url, why, why_size);
	if (rc < 0) {
		why_set(why, why_size, "token realm \"%.200s\" is not an acceptable URL", ch->realm);
		rc = -FLASH_E_IMAGE_CHALLENGE;
		goto out;
	}
	if (asprintf(&scope, "repository:%s:pull", r->repo) < 0) {
		scope = NULL;
		rc = -ENOMEM;
		goto out;
	}
	service = sym_curl_easy_escape(NULL, ch->service, 0);
	scope_esc = sym_curl_easy_escape(NULL, scope, 0);
	if (!service || !scope_esc) {
		rc = -ENOMEM;
		goto out;
	}
	{
		char *full;

		if (asprintf(&full, "%s%s%s%s%sscope=%s", url, strchr(url, '?') ? "&" : "?",
			     ch->service[0] ? "service=" : "", ch->service[0] ? service : "",
			     ch->service[0] ? "&" : "", scope_esc) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		free(url);
		url = full;
	}
	if (r->username) {
		rc = basic_header(r->username, r->password, &basic);
		if (rc < 0)
			goto out;
	}
	rc = get_following(r, url, url, NULL, basic, h, NULL, why, why_size);
	if (rc < 0)
		goto out;
	if (h->status == 401 || h->status == 403) {
		why_set(why, why_size, "token service refused the %s (status %ld)",
			r->username ? "credentials" : "anonymous request", h->status);
		rc = -FLASH_E_IMAGE_UNAUTHORIZED;
		goto out;
	}
	if (h->status != 200) {
		why_set(why, why_size, "token service answered status %ld", h->status);
		rc = -FLASH_E_IMAGE_REGISTRY;
		goto out;
	}
	rc = image_token_reply_parse(sink.buf ? sink.buf : "", sink.len, &token, why, why_size);
	if (rc < 0)
		goto out;
	free_secret(r->auth);
	if (asprintf(&r->auth, "Authorization: Bearer %s", token) < 0) {
		r->auth = NULL;
		rc = -ENOMEM;
		goto out;
	}
	rc = 0;
out:
	free_secret(token);
	if (sink.buf)
		sodium_memzero(sink.buf, sink.len);
	image_sink_clear(&sink);
	free_secret(basic);
	sym_curl_free(service);
	sym_curl_free(scope_esc);
	free(h);
	return rc;
}

static int authenticate(struct image_registry *r, const struct http_resp *h, char *why, size_t why_size)
{
	struct image_challenge ch;
	int rc;

	if (h->challenge_bad || !h->challenge[0]) {
		why_set(why, why_size, "registry answered 401 without a usable WWW-Authenticate");
		return -FLASH_E_IMAGE_CHALLENGE;
	}
	rc = image_challenge_parse(h->challenge, strlen(h->challenge), &ch, why, why_size);
	if (rc < 0)
		return rc;
	if (ch.scheme == IMAGE_AUTH_BASIC) {
		if (!r->username) {
			why_set(why, why_size, "registry requires credentials (Basic realm \"%.200s\")", ch.realm);
			return -FLASH_E_IMAGE_UNAUTHORIZED;
		}
		free_secret(r->auth);
		r->auth = NULL;
		return basic_header(r->username, r->password, &r->auth);
	}
	return bearer_token(r, &ch, why, why_size);
}

/* ---------------------------------------------------------------- fetch */

static int fetch(struct image_registry *r, const char *what, const char *path, const char *accept,
		 struct image_sink *sink, struct http_resp *h, char *why, size_t why_size)
{
	_cleanup_free_ char *url = NULL;
	bool authed = false;
	char code[64];
	int rc;

	if (asprintf(&url, "%s/v2/%s/%s", r->base, r->repo, path) < 0) {
		url = NULL;
		return -ENOMEM;
	}
	h->sink = sink;
	for (;;) {
		bool at_origin;

		rc = get_following(r, url, r->base, accept, r->auth, h, &at_origin, why, why_size);
		if (rc < 0)
			return rc;
		/* Only the registry's own challenge is answered: a host it
		 * redirected to never learns the credentials. */
		if (h->status != 401 || authed || !at_origin)
			break;
		rc = authenticate(r, h, why, why_size);
		if (rc < 0)
			return rc;
		authed = true;
	}
	if (h->status == 200)
		return 0;
	error_code(h, code, sizeof(code));
	if (h->status == 401 || h->status == 403) {
		struct image_challenge ch = { .error = "" };

		if (h->challenge[0])
			(void)image_challenge_parse(h->challenge, strlen(h->challenge), &ch, NULL, 0);
		why_set(why, why_size, "%s of %s: access refused (status %ld%s%s%s%s)", what, r->repo, h->status,
			ch.error[0] ? ", " : "", ch.error, code[0] ? ", " : "", code);
		return -FLASH_E_IMAGE_UNAUTHORIZED;
	}
	if (h->status == 404) {
		why_set(why, why_size, "%s of %s not found%s%s", what, r->repo, code[0] ? ": " : "", code);
		return -FLASH_E_IMAGE_NOT_FOUND;
	}
	if (h->status == 429 || h->status == 502 || h->status == 503 || h->status == 504) {
		why_set(why, why_size, "%s of %s: registry busy (status %ld%s%s), try again later", what, r->repo,
			h->status, code[0] ? " " : "", code);
		return -EAGAIN;
	}
	why_set(why, why_size, "%s of %s: registry answered status %ld%s%s", what, r->repo, h->status,
		code[0] ? " " : "", code);
	return -FLASH_E_IMAGE_REGISTRY;
}

int image_registry_manifest(struct image_registry *r, const char *ref, struct image_sink *sink,
			    enum image_media *ret_media, char *ret_digest, char *why, size_t why_size)
{
	_cleanup_free_ char *path = NULL;
	struct http_resp *h = calloc(1, sizeof(*h));
	enum image_media m;
	int rc;

	if (!h)
		return -ENOMEM;
	if (asprintf(&path, "manifests/%s", ref) < 0) {
		path = NULL;
		rc = -ENOMEM;
		goto out;
	}
	rc = fetch(r, "manifest", path, image_accept_manifests, sink, h, why, why_size);
	if (rc < 0)
		goto out;
	m = image_media_parse(h->content_type, strlen(h->content_type));
	if (!image_media_is_manifest(m) && !image_media_is_index(m)) {
		why_set(why, why_size, "manifest %s: Content-Type \"%.100s\" is not one of the accepted manifest types",
			ref, h->content_type);
		rc = -FLASH_E_IMAGE_MEDIA_TYPE;
		goto out;
	}
	if (h->digest_bad) {
		why_set(why, why_size, "manifest %s: malformed Docker-Content-Digest", ref);
		rc = -FLASH_E_IMAGE_REGISTRY;
		goto out;
	}
	*ret_media = m;
	if (ret_digest)
		snprintf(ret_digest, IMAGE_DIGEST_LEN + 1, "%s", h->digest);
out:
	free(h);
	return rc;
}

int image_registry_blob(struct image_registry *r, const char *digest, struct image_sink *sink, char *why,
			size_t why_size)
{
	_cleanup_free_ char *path = NULL;
	struct http_resp *h = calloc(1, sizeof(*h));
	int rc;

	if (!h)
		return -ENOMEM;
	if (asprintf(&path, "blobs/%s", digest) < 0) {
		path = NULL;
		rc = -ENOMEM;
		goto out;
	}
	rc = fetch(r, "blob", path, NULL, sink, h, why, why_size);
out:
	free(h);
	return rc;
}
