/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A policy database over an identity store in a temporary directory,
 * removed again by policy_test_db_free(). */
#ifndef FLOWSDN_TESTS_POLICY_HELPERS_H
#define FLOWSDN_TESTS_POLICY_HELPERS_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <flowsdn/identity.h>
#include <flowsdn/policy.h>

#include "helpers.h"

struct policy_test_db {
	char dir[64];
	struct flowsdn_identity_store *store;
	struct flowsdn_policy_db *db;
};

static inline int policy_test_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* @max_entries 0: the default capacity. */
static inline struct flowsdn_policy_db *policy_test_db_new(struct policy_test_db *t, size_t max_entries)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(t->dir, sizeof(t->dir), "%s/policy-test.XXXXXX", tmp && strlen(tmp) < 30 ? tmp : "/tmp");
	cr_assert(mkdtemp(t->dir), "mkdtemp");
	ASSERT_OK(flowsdn_identity_new(t->dir, NULL, &t->store), "identity store");
	{
		FLOWSDN_OPTS(flowsdn_policy_db_opts, o, .identities = t->store,
			     .max_entries_per_endpoint = max_entries);

		ASSERT_OK(flowsdn_policy_db_new(&o, &t->db), "policy db");
	}
	return t->db;
}

static inline void policy_test_db_free(struct policy_test_db *t)
{
	flowsdn_policy_db_free(t->db);
	t->db = NULL;
	flowsdn_identity_free(t->store);
	t->store = NULL;
	nftw(t->dir, policy_test_rm, 8, FTW_DEPTH | FTW_PHYS);
}

#endif
