/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the spec and owner-policy parsers.  Besides "no
 * crash, no leak, no undefined behaviour" (ASan/UBSan), it checks the
 * properties the library promises:
 *  - a spec that parses has a canonical form that parses to an equal spec
 *    with the same canonical text and digest;
 *  - a refused input has at least one error, and never a spec;
 *  - the diagnostics always render as JSON.
 * Run: tests/fuzz/fuzz-spec NEW_CORPUS_DIR tests/data/spec/valid ...
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <flash/policy.h>
#include <flash/spec.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct flash_diag *diag;

static void check(int ok)
{
	if (!ok)
		abort();
}

static void round_trip(const struct flash_spec *spec)
{
	struct flash_spec *again = NULL;
	char *c1 = NULL, *c2 = NULL;
	size_t l1 = 0, l2 = 0;
	uint8_t d1[FLASH_SPEC_DIGEST_SIZE], d2[FLASH_SPEC_DIGEST_SIZE];

	check(flash_spec_to_json(spec, &c1, &l1) == 0);
	check(flash_spec_parse(c1, l1, NULL, &again, NULL) == 0);
	check(flash_spec_equal(spec, again));
	check(flash_spec_to_json(again, &c2, &l2) == 0);
	check(l1 == l2 && memcmp(c1, c2, l1) == 0);
	check(flash_spec_digest(spec, d1) == 0 && flash_spec_digest(again, d2) == 0);
	check(memcmp(d1, d2, sizeof(d1)) == 0);
	free(c1);
	free(c2);
	flash_spec_free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flash_spec *spec = NULL;
	struct flash_policy *policy = NULL;
	char *json = NULL;
	int r;

	if (!diag && flash_diag_new(&diag) < 0)
		abort();

	r = flash_spec_parse((const char *)data, size, NULL, &spec, diag);
	if (r == 0) {
		check(spec != NULL && flash_diag_errors(diag) == 0);
		round_trip(spec);
	} else {
		check(spec == NULL);
		check(r == -FLASH_E_SPEC_SYNTAX || r == -FLASH_E_SPEC_INVALID || r == -ENOMEM);
		check(r == -ENOMEM || flash_diag_errors(diag) > 0);
	}
	check(flash_diag_count(diag) <= FLASH_DIAG_MAX);
	check(flash_diag_to_json(diag, "fuzz", &json, NULL) == 0);
	free(json);

	/* The same bytes as an owner policy; a spec that parsed is checked
	 * against a policy that parsed. */
	r = flash_policy_parse((const char *)data, size, &policy, diag);
	if (r == 0 && spec) {
		FLASH_OPTS(flash_policy_usage, u);

		r = flash_policy_check_spec(policy, spec, diag);
		check(r == 0 || r == -FLASH_E_POLICY_VIOLATION || r == -ENOMEM);
		check(flash_policy_usage_of_spec(spec, &u) == 0);
		r = flash_policy_check_organization(policy, &u, spec, diag);
		check(r == 0 || r == -FLASH_E_POLICY_VIOLATION || r == -ENOMEM);
	}
	flash_policy_free(policy);
	flash_spec_free(spec);
	return 0;
}
