/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/k8s-client: the raw request rate of the Kubernetes client
 * (common/k8s.h) against the replaying fake API server on 127.0.0.1
 * (tests/k8s-fake.h), beside the same requests on a bare libcurl easy
 * handle (the peer: no retry logic, no token check, no Status or JSON
 * parse), in one run.  GET of a Node (exchange 41) and server-side apply
 * of a Deployment (07/08); rounds alternate which side goes first.
 * Prints median, p95, p99 per request and the rate; never fails on time.
 *   bench/k8s-client [REQUESTS_PER_ROUND] [ROUNDS]
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "json.h"
#include "k8s-fake.h"
#include "k8s.h"
#include "util.h"
#include "bench.h"

struct series {
	double *us;
	size_t n;
	double total_us;
};

/* Prints @s and returns its median. */
static double report(const char *what, struct series *s)
{
	qsort(s->us, s->n, sizeof(*s->us), bench_cmp_double);
	printf("%-28s n=%-6zu median %7.1f us  p95 %7.1f us  p99 %7.1f us  %8.0f req/s\n", what, s->n,
	       s->us[s->n / 2], s->us[s->n * 95 / 100], s->us[s->n * 99 / 100], (double)s->n * 1e6 / s->total_us);
	return s->us[s->n / 2];
}

static size_t discard(char *p, size_t size, size_t n, void *u)
{
	(void)p, (void)u;
	return size * n;
}

/* The peer: one reused easy handle, the same method, headers and body. */
static int raw_request(CURL *h, const char *url, const char *method, const char *ctype, const char *body)
{
	struct curl_slist *hd = NULL;
	char ct[128];
	CURLcode cc;
	long status = 0;

	hd = curl_slist_append(hd, "Accept: application/json");
	hd = curl_slist_append(hd, "Authorization: Bearer bench");
	if (ctype) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
		hd = curl_slist_append(hd, ct);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, strcmp(method, "GET") ? method : NULL);
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	} else
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hd);
	return cc == CURLE_OK && status >= 200 && status < 300 ? 0 : -1;
}

int main(int argc, char **argv)
{
	long per_round = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
	long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 4;
	struct series s[4] = { 0 };
	static const char *const names[4] = { "client GET node", "bare libcurl GET node", "client apply deployment",
					      "bare libcurl apply" };
	struct k8s_ref node = { NULL, "v1", "nodes", NULL, "node-a", NULL };
	struct k8s_ref dep = { "apps", "v1", "deployments", "flash-demo", "fs-web", NULL };
	struct k8s_write_opts wo = { .sz = sizeof(wo), .field_manager = "flash-operator" };
	struct k8s_config cfg = { .token = (char *)"bench" };
	char get_url[256], apply_url[256];
	struct k8s_client *c = NULL;
	struct k8s_fake *f = NULL;
	const char *body;
	double load[3] = { 0 }, med[4];
	CURL *h;
	FILE *fp;

	if (per_round < 1 || rounds < 1)
		return 2;
	if (k8s_fake_new(NULL, &f) < 0) {
		fprintf(stderr, "bench/k8s-client: no fake API server (run from the source or build tree)\n");
		return 2;
	}
	body = k8s_fake_exchange_request_body(f, "07");
	cfg.server = (char *)k8s_fake_url(f);
	if (!body || k8s_client_new(&cfg, NULL, &c) < 0 || !(h = curl_easy_init()))
		return 2;
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	snprintf(get_url, sizeof(get_url), "%s/api/v1/nodes/node-a", k8s_fake_url(f));
	snprintf(apply_url, sizeof(apply_url), "%s/apis/apps/v1/namespaces/flash-demo/deployments/fs-web?fieldManager=flash-operator",
		 k8s_fake_url(f));
	for (int i = 0; i < 4; i++) {
		s[i].us = calloc((size_t)(per_round * rounds), sizeof(double));
		if (!s[i].us)
			return 2;
	}
	if ((fp = fopen("/proc/loadavg", "re"))) {
		if (fscanf(fp, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
			load[0] = -1;
		fclose(fp);
	}
	printf("bench/k8s-client: %ld requests x %ld rounds per figure, fake API server %s, load average %.2f %.2f %.2f\n",
	       per_round, rounds, k8s_fake_url(f), load[0], load[1], load[2]);
	for (long r = 0; r < rounds; r++) {
		for (int side = 0; side < 2; side++) {
			/* Odd rounds run the bare peer first. */
			bool client = (side == 0) == (r % 2 == 0);

			for (int kind = 0; kind < 2; kind++) {
				struct series *out = &s[kind * 2 + (client ? 0 : 1)];

				for (long i = 0; i < per_round; i++) {
					struct k8s_status st = { 0 };
					struct json_value *obj = NULL;
					double t = bench_now_us();
					int rc;

					if (client && kind == 0)
						rc = k8s_get(c, &node, &obj, &st);
					else if (client)
						rc = k8s_apply(c, &dep, body, strlen(body), &wo, &obj, &st);
					else if (kind == 0)
						rc = raw_request(h, get_url, "GET", NULL, NULL);
					else
						rc = raw_request(h, apply_url, "PATCH", "application/apply-patch+yaml", body);
					t = bench_now_us() - t;
					json_free(obj);
					k8s_status_clear(&st);
					if (rc < 0) {
						fprintf(stderr, "bench/k8s-client: %s failed\n", names[kind * 2 + !client]);
						return 1;
					}
					out->us[out->n++] = t;
					out->total_us += t;
				}
			}
		}
	}
	for (int i = 0; i < 4; i++) {
		med[i] = report(names[i], &s[i]);
		free(s[i].us);
	}
	printf("client/bare median ratio: GET %.2fx, apply %.2fx\n", med[0] / med[1], med[2] / med[3]);
	curl_easy_cleanup(h);
	k8s_client_free(c);
	k8s_fake_free(f);
	return 0;
}
