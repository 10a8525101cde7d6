/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for what flowsdn-agent reads back from its state
 * directory at start: the services snapshot services.json and the journal
 * services.journal replayed over it (agent/services.c, read by
 * agent_services_new()), and the policy store policy/KIND.KEY.json
 * (agent/policy-store.c, read by agent_policy_restore()).  The first byte
 * of an input says what the rest is:
 *   's'  the snapshot (no journal);
 *   'j'  journal records, one a line, each written with its hash by
 *        journal_append() as the agent writes them, so that the records'
 *        JSON is reached (no snapshot);
 *   'b'  a snapshot, a NUL byte, then journal records as for 'j';
 *   'n', 'p', 'e', 'h': the object of a saved namespace ("ns1"), policy
 *        ("default/p1"), endpoint's labels (7) or host firewall mode,
 *        written in its file by agent_pstore_put() as the agent saves it;
 *   'f'  the whole file policy/policy.default_p1.json;
 *   'v'  the body of PUT /v1/service/ID (agent_services_put(), what the
 *        route calls) on an empty table: what it stores is journaled,
 *        and a start reads it back;
 *   anything else: the whole input as the raw journal file (hashes,
 *        framing and torn last records).
 * Properties of the services:
 *  - a refused state directory is -FLOWSDN_E_AGENT_STATE and is kept as
 *    it is, byte for byte (flowsdn-agent(8): never rewritten);
 *  - an accepted one starts again from what the agent left behind (its
 *    snapshot folded from the journal, the torn record cut off) to the
 *    same services, byte for byte in GET /v1/services.
 * Properties of PUT /v1/service: a refused body is
 * -FLOWSDN_E_AGENT_REFUSED with a diag error and stores nothing; an
 * accepted one is what a start reads back, byte for byte in the GET.
 * Properties of the policy store:
 *  - a file is loaded or quarantined (moved to policy/quarantine/),
 *    never lost and never both;
 *  - a second start quarantines nothing and restores the same policies,
 *    namespaces and host firewall mode, byte for byte in their GETs.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <flowsdn/common.h>

#include "../../agent/conf.h"
#include "agent-api.h"
#include "../../agent/journal.h"
#include "../../agent/log.h"
#include "../../agent/ops.h"
#include "../../agent/policy-store.h"
#include "../../agent/policy.h"
#include "../../agent/services.h"
#include "diag.h"
#include "fuzz-helpers.h"
#include "json.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];
static struct agent_config *cfg;
static const struct agent_ops no_ops = { 0 };


static void cleanup(void)
{
	agent_config_free(cfg);
	fuzz_tmpdir_remove(dir);
}

static void setup(void)
{
	char conf[512];

	/* Every damaged file is logged: quiet, unless debugging. */
	if (!getenv("FUZZ_AGENT_STATE_DEBUG"))
		agent_log_set_level((enum flowsdn_log_level)0);
	fuzz_tmpdir_make(dir, sizeof(dir), "fuzz-agent-state");
	snprintf(conf, sizeof(conf), "{\"state-dir\":\"%s\",\"datapath\":false,\"socket-lb-cgroup\":\"\"}", dir);
	fuzz_check(agent_config_parse(conf, strlen(conf), &cfg, NULL) == 0);
	atexit(cleanup);
}

static void write_file(const char *name, const void *p, size_t len)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	fuzz_check(f != NULL);
	fuzz_check(len == 0 || fwrite(p, 1, len, f) == len);
	fuzz_check(fclose(f) == 0);
}

/* The file's bytes (NULL when there is none). */
static char *read_back(const char *name, size_t *ret_len)
{
	char path[1024], *p = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*ret_len = 0;
	if (util_read_file(path, 1 << 26, &p, ret_len) < 0)
		return NULL;
	return p;
}

/* Each line of @p as a journal record, hashed as the agent writes it. */
static void write_journal(const char *p, size_t len)
{
	struct journal *j = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	fuzz_check(dfd >= 0);
	fuzz_check(journal_open(dfd, "services.journal", &j) == 0);
	while (len) {
		const char *nl = memchr(p, '\n', len);
		size_t n = nl ? (size_t)(nl - p) : len;

		fuzz_check(journal_append(j, p, n) == 0);
		p += n + (nl != NULL);
		len -= n + (nl != NULL);
	}
	journal_free(j);
	close(dfd);
}

/* Starts the table over the state directory: 0 and GET /v1/services in
 * *ret_all, or the error. */
static int start(char **ret_all, size_t *ret_len)
{
	struct agent_services *s = NULL;
	struct json_writer *g;
	int r = agent_services_new(cfg, &no_ops, NULL, NULL, &s);

	if (r < 0)
		return r;
	g = json_writer_new(0);
	fuzz_check(g != NULL);
	fuzz_check(agent_services_get(s, NULL, g) == 0);
	fuzz_check(json_writer_finish(g, ret_all, ret_len) == 0);
	agent_services_free(s);
	return 0;
}

static bool exists(const char *name)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/policy/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* Starts the policy state over the state directory: the files
 * quarantined, and the GETs of policies, namespaces and host firewall. */
static int policy_start(char **ret_get)
{
	struct agent_policy *pol = NULL;
	char *pols = NULL, *nss = NULL, *fw = NULL;
	int q;

	fuzz_check(agent_policy_new(dir, NULL, &pol) == 0);
	q = agent_policy_restore(pol);
	fuzz_check(q >= 0);
	fuzz_check(agent_policy_get(pol, NULL, NULL, &pols) == 0);
	fuzz_check(agent_policy_namespaces(pol, &nss) == 0);
	fuzz_check(agent_policy_hostfw(pol, false, &fw) == 0);
	fuzz_check(asprintf(ret_get, "%s\n%s\n%s", pols, nss, fw) > 0);
	free(pols);
	free(nss);
	free(fw);
	agent_policy_free(pol);
	return q;
}

static void policy_store(char what, const char *p, size_t n)
{
	static const struct {
		char what;
		enum agent_pstore_kind kind;
		const char *key, *file;
	} objs[] = {
		{ 'n', AGENT_PSTORE_NAMESPACE, "ns1", "namespace.ns1.json" },
		{ 'p', AGENT_PSTORE_POLICY, "default/p1", "policy.default_p1.json" },
		{ 'e', AGENT_PSTORE_ENDPOINT, "7", "endpoint.7.json" },
		{ 'h', AGENT_PSTORE_HOSTFW, "mode", "hostfw.mode.json" },
		{ 'f', AGENT_PSTORE_POLICY, NULL, "policy.default_p1.json" },
	};
	struct agent_pstore *st = NULL;
	char *first = NULL, *second = NULL, qname[300];
	size_t i;
	int q;

	for (i = 0; objs[i].what != what; i++)
		;
	fuzz_check(agent_pstore_open(dir, &st) == 0);
	if (objs[i].key) {
		/* The agent saves only objects it parsed: text that is not
		 * UTF-8 cannot be wrapped in the file's JSON string. */
		if (agent_pstore_put(st, objs[i].kind, objs[i].key, p, n) < 0) {
			agent_pstore_free(st);
			return;
		}
	} else {
		char name[300];

		snprintf(name, sizeof(name), "policy/%s", objs[i].file);
		write_file(name, p, n);
	}
	agent_pstore_free(st);
	q = policy_start(&first);
	snprintf(qname, sizeof(qname), "quarantine/%s", objs[i].file);
	fuzz_check(q == 0 || q == 1);
	fuzz_check(exists(objs[i].file) == (q == 0) && exists(qname) == (q == 1));
	fuzz_check(policy_start(&second) == 0);
	fuzz_check(!strcmp(first, second));
	free(first);
	free(second);
}

/* PUT /v1/service/ID with @body, then a start over what it saved. */
static void service_put(const char *body, size_t len)
{
	static const char id[] = "fs-00000000000000000000000000000001";
	struct agent_services *s = NULL;
	struct json_writer *g = json_writer_new(0), *all = json_writer_new(0);
	struct diag *d = NULL;
	char *before = NULL, *after = NULL;
	size_t before_len = 0, after_len = 0;
	int r;

	fuzz_check(g && all && diag_new(&d) == 0);
	fuzz_check(agent_services_new(cfg, &no_ops, NULL, NULL, &s) == 0);
	r = agent_services_put(s, id, body, len, g, d);
	if (r == -ENOMEM)
		goto out;
	if (r < 0) {
		fuzz_check(r == -FLOWSDN_E_AGENT_REFUSED && diag_errors(d) > 0);
		fuzz_check(agent_services_count(s) == 0);
	} else {
		fuzz_check(agent_services_count(s) == 1);
	}
	fuzz_check(agent_services_get(s, NULL, all) == 0);
	fuzz_check(json_writer_finish(all, &before, &before_len) == 0);
	all = NULL;
	if (getenv("FUZZ_AGENT_STATE_DEBUG")) {
		char why[512] = "";

		if (diag_first_error(d))
			diag_entry_format(diag_first_error(d), why, sizeof(why));
		fprintf(stderr, "PUT: %d %s, %.*s\n", r, why, (int)before_len, before);
	}
	agent_services_free(s);
	s = NULL;
	r = start(&after, &after_len);
	if (r < 0)
		fprintf(stderr, "start after PUT: %d, the table was %.*s\n", r, (int)before_len, before);
	fuzz_check(r == 0);
	fuzz_check(after_len == before_len && !memcmp(after, before, before_len));
out:
	json_writer_free(g);
	json_writer_free(all);
	agent_services_free(s);
	diag_free(d);
	free(before);
	free(after);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1;
	char *snap = NULL, *jour = NULL, *after, *all = NULL, *again = NULL;
	size_t n = size ? size - 1 : 0, snap_len, jour_len, after_len, all_len = 0, again_len = 0;
	const char *nul;
	int r;

	if (!cfg)
		setup();
	if (size == 0)
		return 0;
	fuzz_tmpdir_remove(dir);
	fuzz_check(mkdir(dir, 0700) == 0);
	switch (data[0]) {
	case 'n':
	case 'p':
	case 'e':
	case 'h':
	case 'f': policy_store((char)data[0], p, n); return 0;
	case 'v': service_put(p, n); return 0;
	case 's': write_file("services.json", p, n); break;
	case 'j': write_journal(p, n); break;
	case 'b':
		nul = memchr(p, '\0', n);
		write_file("services.json", p, nul ? (size_t)(nul - p) : n);
		if (nul)
			write_journal(nul + 1, n - (size_t)(nul - p) - 1);
		break;
	default: write_file("services.journal", data, size); break;
	}
	snap = read_back("services.json", &snap_len);
	jour = read_back("services.journal", &jour_len);
	r = start(&all, &all_len);
	if (getenv("FUZZ_AGENT_STATE_DEBUG"))
		fprintf(stderr, "start: %s %.*s\n", r < 0 ? "refused" : "ok", (int)all_len, all ? all : "");
	if (r < 0) {
		fuzz_check(r == -FLOWSDN_E_AGENT_STATE || r == -ENOMEM);
		after = read_back("services.json", &after_len);
		fuzz_check(!snap == !after && after_len == snap_len && (!snap || !memcmp(after, snap, snap_len)));
		free(after);
		/* The journal is opened (made empty when there was none)
		 * before the snapshot is read: absent and empty are alike. */
		after = read_back("services.journal", &after_len);
		fuzz_check(after_len == jour_len && (jour_len == 0 || !memcmp(after, jour, jour_len)));
		free(after);
	} else {
		r = start(&again, &again_len);
		if (r < 0)
			fprintf(stderr, "restart: %s (%d) after %.*s\n", strerror(-r), r, (int)all_len, all);
		fuzz_check(r == 0);
		fuzz_check(again_len == all_len && !memcmp(again, all, all_len));
	}
	free(snap);
	free(jour);
	free(all);
	free(again);
	return 0;
}
