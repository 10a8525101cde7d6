/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the NetworkPolicy import of <flowsdn/policy.h>
 * (flowsdn_policy_parse: one NetworkPolicy object as JSON, validated the
 * way the API server validates a create).  Properties:
 *  - a refused object leaves no policy, says what is wrong (a diag entry
 *    that flowsdn_policy_diag_format() writes as the API server's
 *    message), and its diag renders as JSON;
 *  - an accepted one has a name, a namespace, policy types and the tier
 *    asked for, and compiles: applied to a database holding two pods of
 *    its namespace, every endpoint gets installed entries (or the
 *    capacity error, naming the endpoint).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/identity.h>
#include <flowsdn/policy.h>

#include "fuzz-helpers.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct flowsdn_diag *diag;
static struct flowsdn_identity_store *identities;
static char dir[64];

static void check(int ok)
{
	if (!ok)
		abort();
}

static void cleanup(void)
{
	flowsdn_identity_free(identities);
	flowsdn_diag_free(diag);
	fuzz_tmpdir_remove(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_tmpdir_make(dir, sizeof(dir), "fuzz-policy");
	if (flowsdn_identity_new(dir, NULL, &identities) < 0 || flowsdn_diag_new(&diag) < 0)
		abort();
	atexit(cleanup);
	return 0;
}

static uint32_t add_pod(struct flowsdn_policy_db *db, const char *ns, const char *name, const char *app,
			const char *addr)
{
	struct flowsdn_policy_label labels[] = { { "app", app }, { "tier", "backend" } };
	struct flowsdn_policy_named_port ports[] = { { "http", 6 /* TCP */, 8080 }, { "dns", 17 /* UDP */, 53 } };
	struct flowsdn_addr a;
	struct flowsdn_policy_pod pod = {
		.sz = sizeof(pod),
		.namespace_name = ns,
		.name = name,
		.labels = labels,
		.n_labels = 2,
		.ports = ports,
		.n_ports = 2,
		.addrs = &a,
		.n_addrs = 1,
	};
	uint32_t id = 0;

	check(flowsdn_addr_parse(addr, strlen(addr), &a) == 0);
	check(flowsdn_policy_db_set_pod(db, &pod, &id) == 0);
	return id;
}

static void compile(struct flowsdn_policy *policy)
{
	FLOWSDN_OPTS(flowsdn_policy_db_opts, o, .identities = identities, .max_entries_per_endpoint = 4096);
	struct flowsdn_policy_compile_report rep = { .sz = sizeof(rep) };
	struct flowsdn_policy_db *db = NULL;
	const char *ns = flowsdn_policy_namespace(policy);
	uint32_t ids[2];
	int r;

	check(flowsdn_policy_db_new(&o, &db) == 0);
	check(flowsdn_policy_db_set_namespace(db, ns, &(struct flowsdn_policy_label){ "team", "a" }, 1) == 0);
	ids[0] = add_pod(db, ns, "web-0", "web", "10.0.0.1");
	ids[1] = add_pod(db, ns, "db-0", "db", "fd00::2");
	check(flowsdn_policy_db_apply(db, policy) == 0);
	r = flowsdn_policy_db_compile(db, &rep);
	check(r == 0 || r == -FLOWSDN_E_POLICY_CAPACITY);
	if (r == -FLOWSDN_E_POLICY_CAPACITY)
		check((rep.failed_ep_id == ids[0] || rep.failed_ep_id == ids[1]) && rep.failed_entries > rep.capacity);
	for (size_t i = 0; r == 0 && i < 2; i++) {
		const struct flowsdn_policy_entry *e = NULL;
		size_t n = 0;
		unsigned int flags = 0;

		check(flowsdn_policy_db_entries(db, ids[i], &e, &n, &flags) == 0);
		check(n <= 4096);
		for (size_t k = 0; k < n; k++)
			check(e[k].port_bits <= 16 && e[k].direction <= 1);
	}
	flowsdn_policy_db_free(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FLOWSDN_OPTS(flowsdn_policy_parse_opts, o, .default_namespace = "default",
		     .tier = size % 2 ? FLOWSDN_POLICY_TIER_DENY : FLOWSDN_POLICY_TIER_ALLOW);
	struct flowsdn_policy *policy = (struct flowsdn_policy *)&o;
	char msg[512], *json = NULL;
	int r;

	flowsdn_diag_reset(diag);
	r = flowsdn_policy_parse((const char *)data, size, &o, &policy, diag);
	if (r < 0) {
		check(policy == (struct flowsdn_policy *)&o);
		check(r == -FLOWSDN_E_POLICY_JSON || r == -FLOWSDN_E_POLICY_INVALID || r == -ENOMEM);
		check(r == -ENOMEM || flowsdn_diag_errors(diag) > 0);
		check(r == -ENOMEM || flowsdn_policy_diag_format(diag, msg, sizeof(msg)) > 0);
		check(flowsdn_diag_count(diag) <= FLOWSDN_POLICY_MAX_CAUSES + 1);
		check(flowsdn_diag_to_json(diag, "fuzz", &json, NULL) == 0);
		free(json);
		return 0;
	}
	check(flowsdn_policy_name(policy) && flowsdn_policy_name(policy)[0]);
	check(flowsdn_policy_namespace(policy) && flowsdn_policy_namespace(policy)[0]);
	check(flowsdn_policy_types(policy) >= 1 && flowsdn_policy_types(policy) <= 3);
	check(flowsdn_policy_tier(policy) == o.tier);
	compile(policy);
	return 0;
}
