/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Loopback servers for the registry tests (libmicrohttpd): a proxy in
 * front of a docker-registry that forwards, counts, corrupts or redirects
 * blob GETs to a "storage" server on another host name and port, and a
 * bearer-token service.  Each records the requests it saw and whether they
 * carried Authorization; GET /_stats?path=P answers
 * "REQUESTS WITH_AUTH COUNT_OF_P".
 */
#ifndef FLASH_TESTS_REGISTRY_HELPERS_H
#define FLASH_TESTS_REGISTRY_HELPERS_H

#include <arpa/inet.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum proxy_mode {
	PROXY_FORWARD,        /* forward everything (counting) */
	PROXY_CORRUPT,        /* forward; flip a byte of large blobs and of small-docker manifests,
			 * give multi's manifests Content-Type application/json, answer
			 * huge's with 5 MiB */
	PROXY_REDIRECT_BLOBS, /* forward manifests; answer blob GETs with 307 to redirect_base */
	PROXY_STORAGE,        /* forward with its own upstream credentials (the redirect target) */
	PROXY_TOKEN,          /* the token service: Basic flash:s3cret gets the token */
	PROXY_CHALLENGE,      /* answers every request 401 with a Bearer challenge to itself */
	PROXY_TOKEN_BAD,      /* a token service answering a token with CR LF in it */
};

#define PROXY_PATHS 64

struct proxy {
	struct MHD_Daemon *d;
	unsigned short port;
	enum proxy_mode mode;
	char upstream[128];
	char redirect_base[128];
	char upstream_auth[256];
	char *token;
	pthread_mutex_t lock;
	unsigned long requests, with_auth;
	struct {
		char path[256];
		unsigned long n;
	} paths[PROXY_PATHS];
	size_t n_paths;
};

struct fetched {
	long status;
	char content_type[256], digest[128], challenge[2048], location[1024];
	char *body;
	size_t len;
};

static size_t fetched_body(char *d, size_t s, size_t n, void *u)
{
	struct fetched *f = u;
	char *p = realloc(f->body, f->len + s * n + 1);

	if (!p)
		return 0;
	memcpy(p + f->len, d, s * n);
	f->body = p;
	f->len += s * n;
	return s * n;
}

static void header_take(char *dst, size_t size, const char *v, size_t n)
{
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n'))
		n--;
	if (n >= size)
		n = size - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static size_t fetched_header(char *d, size_t s, size_t n, void *u)
{
	struct fetched *f = u;
	size_t len = s * n;
	static const struct {
		const char *name;
		size_t off, size;
	} keep[] = {
		{ "content-type: ", offsetof(struct fetched, content_type), sizeof(((struct fetched *)0)->content_type) },
		{ "docker-content-digest: ", offsetof(struct fetched, digest), sizeof(((struct fetched *)0)->digest) },
		{ "www-authenticate: ", offsetof(struct fetched, challenge), sizeof(((struct fetched *)0)->challenge) },
		{ "location: ", offsetof(struct fetched, location), sizeof(((struct fetched *)0)->location) },
	};

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		size_t k = strlen(keep[i].name);

		if (len > k && strncasecmp(d, keep[i].name, k) == 0)
			header_take((char *)f + keep[i].off, keep[i].size, d + k, len - k);
	}
	return len;
}

/* GET @url with optional Accept and Authorization; no redirects followed. */
static int fetch_url(const char *url, const char *accept, const char *auth, struct fetched *f)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char line[4096];
	CURLcode rc;

	memset(f, 0, sizeof(*f));
	if (!c)
		return -1;
	if (accept) {
		snprintf(line, sizeof(line), "Accept: %s", accept);
		h = curl_slist_append(h, line);
	}
	if (auth) {
		snprintf(line, sizeof(line), "Authorization: %s", auth);
		h = curl_slist_append(h, line);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetched_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, fetched_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return rc == CURLE_OK ? 0 : -1;
}

static void proxy_count(struct proxy *p, const char *url, bool auth)
{
	pthread_mutex_lock(&p->lock);
	p->requests++;
	if (auth)
		p->with_auth++;
	for (size_t i = 0; i < p->n_paths; i++) {
		if (strcmp(p->paths[i].path, url) == 0) {
			p->paths[i].n++;
			pthread_mutex_unlock(&p->lock);
			return;
		}
	}
	if (p->n_paths < PROXY_PATHS && strlen(url) < sizeof(p->paths[0].path)) {
		strcpy(p->paths[p->n_paths].path, url);
		p->paths[p->n_paths++].n = 1;
	}
	pthread_mutex_unlock(&p->lock);
}

static enum MHD_Result proxy_answer(struct MHD_Connection *c, unsigned int status, const char *body, size_t len,
				    const char *const *headers)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	for (size_t i = 0; headers && headers[i]; i += 2)
		if (headers[i + 1] && headers[i + 1][0])
			MHD_add_response_header(r, headers[i], headers[i + 1]);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result proxy_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				     const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct proxy *p = cls;
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	char target[1024];
	struct fetched f;
	enum MHD_Result ret;

	(void)version, (void)upload, (void)upload_size;
	if (!*state) {
		*state = p;
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0)
		return proxy_answer(c, 405, "", 0, NULL);
	if (strcmp(url, "/_stats") == 0) {
		const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
		unsigned long n = 0;
		char out[128];

		pthread_mutex_lock(&p->lock);
		for (size_t i = 0; q && i < p->n_paths; i++)
			if (strcmp(p->paths[i].path, q) == 0)
				n = p->paths[i].n;
		snprintf(out, sizeof(out), "%lu %lu %lu", p->requests, p->with_auth, n);
		pthread_mutex_unlock(&p->lock);
		return proxy_answer(c, 200, out, strlen(out), NULL);
	}
	proxy_count(p, url, auth != NULL);
	if (p->mode == PROXY_TOKEN) {
		char body[16384];

		if (!auth || strcmp(auth, "Basic Zmxhc2g6czNjcmV0") != 0) { /* flash:s3cret */
			const char *h[] = { "WWW-Authenticate", "Basic realm=\"flash-token\"", NULL };

			return proxy_answer(c, 401, "{}", 2, h);
		}
		snprintf(body, sizeof(body), "{\"token\":\"%s\",\"expires_in\":3600}", p->token);
		return proxy_answer(c, 200, body, strlen(body), NULL);
	}
	if (p->mode == PROXY_TOKEN_BAD) {
		static const char body[] = "{\"token\":\"abc\\r\\nX-Injected: 1\"}";

		return proxy_answer(c, 200, body, strlen(body), NULL);
	}
	if (p->mode == PROXY_CHALLENGE) {
		/* a token service of its own: a client answering this would
		 * send the registry credentials here */
		const char *h[] = { "WWW-Authenticate", target, NULL };

		snprintf(target, sizeof(target), "Bearer realm=\"http://localhost:%u/token\",service=\"evil\"", p->port);
		return proxy_answer(c, 401, "{}", 2, h);
	}
	if (p->mode == PROXY_REDIRECT_BLOBS && strstr(url, "/blobs/")) {
		const char *h[] = { "Location", target, NULL };

		snprintf(target, sizeof(target), "%s%s", p->redirect_base, url);
		return proxy_answer(c, 307, "", 0, h);
	}
	if (p->mode == PROXY_CORRUPT && strstr(url, "/huge/manifests/")) {
		/* a manifest past any bound: 5 MiB of JSON whitespace */
		size_t n = 5u << 20;
		char *big = malloc(n);
		const char *h[] = { "Content-Type", "application/vnd.oci.image.manifest.v1+json", NULL };

		if (!big)
			return MHD_NO;
		memset(big, ' ', n);
		ret = proxy_answer(c, 200, big, n, h);
		free(big);
		return ret;
	}
	snprintf(target, sizeof(target), "%s%s", p->upstream, url);
	if (fetch_url(target, accept, p->mode == PROXY_STORAGE ? p->upstream_auth : auth, &f) < 0) {
		free(f.body);
		return proxy_answer(c, 502, "", 0, NULL);
	}
	if (p->mode == PROXY_CORRUPT && f.status == 200 && f.len > 0 &&
	    ((strstr(url, "/blobs/") && f.len > 65536) || strstr(url, "/small-docker/manifests/")))
		f.body[f.len / 2] ^= 0x20;
	/* the bytes intact, the media type not one of the four */
	if (p->mode == PROXY_CORRUPT && strstr(url, "/multi/manifests/"))
		snprintf(f.content_type, sizeof(f.content_type), "application/json");
	{
		const char *h[] = { "Content-Type", f.content_type, "Docker-Content-Digest", f.digest,
				    "WWW-Authenticate", f.challenge, "Location", f.location, NULL };

		ret = proxy_answer(c, (unsigned int)f.status, f.body ? f.body : "", f.len, h);
	}
	free(f.body);
	return ret;
}

/* Starts @p on 127.0.0.1 (a free port); false on failure. */
static bool proxy_start(struct proxy *p)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
	const union MHD_DaemonInfo *info;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pthread_mutex_init(&p->lock, NULL);
	p->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
				proxy_request, p, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
	if (!p->d)
		return false;
	info = MHD_get_daemon_info(p->d, MHD_DAEMON_INFO_BIND_PORT);
	p->port = info ? info->port : 0;
	return p->port != 0;
}

static void proxy_stop(struct proxy *p)
{
	if (p->d)
		MHD_stop_daemon(p->d);
	p->d = NULL;
}

/* The statistics of the server on @port: requests, with Authorization,
 * GETs of @path. */
static int proxy_stats(unsigned short port, const char *path, unsigned long *requests, unsigned long *with_auth,
		       unsigned long *count)
{
	char url[512];
	struct fetched f;
	int rc = -1;
	char *esc = curl_easy_escape(NULL, path, 0);

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/_stats?path=%s", port, esc);
	curl_free(esc);
	if (fetch_url(url, NULL, NULL, &f) == 0 && f.status == 200 && f.body) {
		f.body = realloc(f.body, f.len + 1);
		f.body[f.len] = '\0';
		if (sscanf(f.body, "%lu %lu %lu", requests, with_auth, count) == 3)
			rc = 0;
	}
	free(f.body);
	return rc;
}

#endif
