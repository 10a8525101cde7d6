/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The owner quota policy: parsing, limits, regions, GPU catalog,
 * protected ranges, organization totals and weekly limits. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <flash/policy.h>
#include <flash/spec.h>

#include "helpers.h"
#include "util.h"

static char *read_rel(const char *rel, size_t *len)
{
	const char *top = getenv("top_srcdir");
	char *path = NULL, *data = NULL;

	cr_assert(asprintf(&path, "%s/%s", top ? top : "..", rel) > 0);
	cr_assert(util_read_file(path, 1 << 20, &data, len) == 0, "read %s", path);
	free(path);
	return data;
}

static struct flash_policy *example_policy(void)
{
	struct flash_policy *p = NULL;
	size_t len;
	char *text = read_rel("examples/owner-policy.json", &len);

	ASSERT_OK(flash_policy_parse(text, len, &p, NULL), "example policy");
	free(text);
	return p;
}

static struct flash_spec *spec_of(const char *text)
{
	struct flash_spec *s = NULL;
	int r = flash_spec_parse(text, strlen(text), NULL, &s, NULL);

	cr_assert(r == 0, "spec %s: %d", text, r);
	return s;
}

static char *problems(const struct flash_diag *diag)
{
	char *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);

	for (size_t i = 0; i < flash_diag_count(diag); i++)
		fprintf(f, "%s %s\n", flash_diag_get(diag, i)->path, flash_diag_get(diag, i)->code);
	fclose(f);
	return out;
}

Test(policy, example_getters)
{
	struct flash_policy *p = example_policy();
	FLASH_OPTS(flash_policy_weekly_limits, wk);
	char text[FLOWSDN_PREFIX_STRLEN];

	cr_assert_eq(flash_policy_region_count(p), 2);
	ASSERT_STREQ(flash_policy_region(p, 1), "eu-central", "region");
	cr_assert_null(flash_policy_region(p, 2));
	cr_assert(flash_policy_has_region(p, "heteronet-global"));
	cr_assert_not(flash_policy_has_region(p, "mars-1"));
	cr_assert_eq(flash_policy_gpu_type_count(p), 2);
	cr_assert(flash_policy_has_gpu_type(p, "nvidia-geforce-gtx-1080-ti"));
	ASSERT_STREQ(flash_policy_gpu_type(p, 1), "nvidia-a100-80gb", "gpu");
	cr_assert_eq(flash_policy_protected_count(p), 4);
	/* Sorted: IPv4 before IPv6, then by address. */
	flowsdn_prefix_format(flash_policy_protected(p, 0), text, sizeof(text));
	ASSERT_STREQ(text, "10.0.0.0/8", "first protected");
	flowsdn_prefix_format(flash_policy_protected(p, 3), text, sizeof(text));
	ASSERT_STREQ(text, "fd00::/8", "last protected");
	cr_assert_eq(flash_policy_workload_limit(p, FLASH_POLICY_CPU_MILLIS), 4000);
	cr_assert_eq(flash_policy_workload_limit(p, FLASH_POLICY_PORTS), 16);
	cr_assert_eq(flash_policy_organization_limit(p, FLASH_POLICY_GPUS), 4);
	cr_assert_eq(flash_policy_organization_limit(p, FLASH_POLICY_RESOURCE_COUNT_), UINT64_MAX);
	ASSERT_OK(flash_policy_weekly_limits(p, &wk), "weekly");
	cr_assert_eq(wk.cpu_millicore_seconds, UINT64_C(2419200000));
	cr_assert_eq(wk.memory_mib_seconds, UINT64_C(9909043200));
	cr_assert_eq(wk.gpu_seconds, 1209600);
	ASSERT_STREQ(flash_policy_resource_name(FLASH_POLICY_EPHEMERAL_STORAGE_GIB), "ephemeral_storage_gib", "name");
	cr_assert_null(flash_policy_resource_name(FLASH_POLICY_RESOURCE_COUNT_));
	flash_policy_free(p);
}

Test(policy, seed_passes_example_policy)
{
	struct flash_policy *p = example_policy();
	struct flash_diag *diag = NULL;
	size_t len;
	char *text = read_rel("examples/udp-echo.json", &len);
	struct flash_spec *s = NULL;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_OK(flash_spec_parse(text, len, NULL, &s, diag), "seed");
	ASSERT_OK(flash_policy_check_spec(p, s, diag), "seed within the policy");
	cr_assert_eq(flash_diag_count(diag), 0);
	ASSERT_OK(flash_policy_check_organization(p, NULL, s, diag), "org");
	free(text);
	flash_spec_free(s);
	flash_policy_free(p);
	flash_diag_free(diag);
}

Test(policy, violations_name_the_spec_field)
{
	struct flash_policy *p = example_policy();
	struct flash_diag *diag = NULL;
	struct flash_spec *s = spec_of(
		"{\"region\":\"mars-1\",\"image\":\"nginx\",\"cpu_millis\":4001,\"memory_mib\":8192,"
		"\"gpu_type\":\"nvidia-h100\",\"ephemeral_storage_gib\":51,\"replicas\":2,"
		"\"autoscaling\":{\"min_replicas\":2,\"max_replicas\":11},"
		"\"ports\":[{\"name\":\"web\",\"protocol\":\"tcp\",\"container_port\":80}],"
		"\"exposure\":{\"type\":\"public\",\"allowed_source_cidrs\":[\"192.0.2.128/25\",\"8.8.8.8\"]},"
		"\"egress\":{\"mode\":\"restricted\",\"allowed_destination_cidrs\":[\"192.0.2.64/26\",\"1.1.1.1\"]}}");
	_cleanup_free_ char *got = NULL;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_ERR(flash_policy_check_spec(p, s, diag), -FLASH_E_POLICY_VIOLATION, "violations");
	got = problems(diag);
	ASSERT_STREQ(got,
		     "region policy-region\n"
		     "gpu_type policy-gpu-type\n"
		     "cpu_millis policy-limit\n"
		     "autoscaling.max_replicas policy-limit\n"
		     "gpu_type policy-limit\n" /* 11 replicas with a GPU each */
		     "ephemeral_storage_gib policy-limit\n"
		     "exposure.allowed_source_cidrs policy-protected-cidr\n"
		     "egress.allowed_destination_cidrs policy-protected-cidr\n",
		     "problems");
	cr_assert_eq(flash_diag_errors(diag), 8);
	/* The check appends: a second run doubles the list. */
	ASSERT_ERR(flash_policy_check_spec(p, s, diag), -FLASH_E_POLICY_VIOLATION, "again");
	cr_assert_eq(flash_diag_errors(diag), 16);
	flash_spec_free(s);
	flash_policy_free(p);
	flash_diag_free(diag);
}

Test(policy, gpu_count_uses_max_replicas)
{
	struct flash_policy *p = example_policy();
	struct flash_diag *diag = NULL;
	struct flash_spec *s = spec_of("{\"region\":\"eu-central\",\"image\":\"nginx\",\"cpu_millis\":100,\"memory_mib\":64,"
				       "\"gpu_type\":\"nvidia-a100-80gb\",\"replicas\":3}");
	FLASH_OPTS(flash_policy_usage, u);

	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_ERR(flash_policy_check_spec(p, s, diag), -FLASH_E_POLICY_VIOLATION, "3 GPUs > 2");
	ASSERT_STREQ(flash_diag_get(diag, 0)->path, "gpu_type", "path");
	ASSERT_STREQ(flash_diag_get(diag, 0)->value, "3", "value");
	ASSERT_OK(flash_policy_usage_of_spec(s, &u), "usage");
	cr_assert_eq(u.amount[FLASH_POLICY_GPUS], 3);
	cr_assert_eq(u.amount[FLASH_POLICY_CPU_MILLIS], 300);
	cr_assert_eq(u.amount[FLASH_POLICY_MEMORY_MIB], 192);
	cr_assert_eq(u.amount[FLASH_POLICY_EPHEMERAL_STORAGE_GIB], 30);
	cr_assert_eq(u.amount[FLASH_POLICY_PORTS], 0);
	flash_spec_free(s);
	flash_policy_free(p);
	flash_diag_free(diag);
}

Test(policy, organization_totals)
{
	struct flash_policy *p = example_policy();
	struct flash_diag *diag = NULL;
	struct flash_spec *s = spec_of("{\"region\":\"eu-central\",\"image\":\"nginx\",\"cpu_millis\":1000,\"memory_mib\":1024,"
				       "\"replicas\":4}");
	FLASH_OPTS(flash_policy_usage, cur);
	_cleanup_free_ char *got = NULL;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	cur.amount[FLASH_POLICY_CPU_MILLIS] = 12000;  /* + 4000 = 16000: at the limit */
	cur.amount[FLASH_POLICY_MEMORY_MIB] = 28673;  /* + 4096 = 32769: one over */
	cur.amount[FLASH_POLICY_REPLICAS] = 36;        /* + 4 = 40: at the limit */
	cur.amount[FLASH_POLICY_EPHEMERAL_STORAGE_GIB] = UINT64_MAX; /* overflow saturates */
	ASSERT_ERR(flash_policy_check_organization(p, &cur, s, diag), -FLASH_E_POLICY_VIOLATION, "org");
	got = problems(diag);
	ASSERT_STREQ(got, "memory_mib policy-org-limit\nephemeral_storage_gib policy-org-limit\n", "org problems");
	cur.amount[FLASH_POLICY_MEMORY_MIB] = 0;
	cur.amount[FLASH_POLICY_EPHEMERAL_STORAGE_GIB] = 0;
	flash_diag_reset(diag);
	ASSERT_OK(flash_policy_check_organization(p, &cur, s, diag), "exactly at the limits");
	cr_assert_eq(flash_diag_count(diag), 0);
	cur.sz = 4;
	ASSERT_ERR(flash_policy_check_organization(p, &cur, s, diag), -EINVAL, "short usage struct");
	flash_spec_free(s);
	flash_policy_free(p);
	flash_diag_free(diag);
}

Test(policy, invalid_policies)
{
	static const struct {
		const char *text;
		int err;
		const char *problems;
	} cases[] = {
		{ "{\"regions\":[\"a\"]", -FLASH_E_POLICY_SYNTAX, " json-syntax\n" },
		{ "{}", -FLASH_E_POLICY_INVALID,
		  "organization_limits required\nregions required\nweekly_limits required\nworkload_limits required\n" },
		{ "{\"regions\":[\"a\",\"a\"],\"gpu_catalog\":[\"GPU\"],\"protected_cidrs\":[\"10.0.0.1/8\"],\"x\":1,"
		  "\"workload_limits\":{\"cpu_millis\":-1,\"memory_mib\":1,\"replicas\":1,\"gpus\":1,"
		  "\"ephemeral_storage_gib\":1,\"ports\":1.5},"
		  "\"organization_limits\":{\"cpu_millis\":1,\"memory_mib\":1,\"replicas\":1,\"gpus\":1,"
		  "\"ephemeral_storage_gib\":1},"
		  "\"weekly_limits\":{\"cpu_millicore_seconds\":9223372036854775808,\"memory_mib_seconds\":0,"
		  "\"gpu_seconds\":0}}",
		  -FLASH_E_POLICY_INVALID,
		  "x unknown-field\n"
		  "gpu_catalog[0] pattern\n"
		  "organization_limits.ports required\n"
		  "protected_cidrs[0] cidr\n"
		  "regions[1] duplicate\n"
		  "weekly_limits.cpu_millicore_seconds maximum\n"
		  "workload_limits.cpu_millis minimum\n"
		  "workload_limits.ports integer\n" },
	};
	struct flash_diag *diag = NULL;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct flash_policy *p = (struct flash_policy *)0x1;
		_cleanup_free_ char *got = NULL;

		ASSERT_ERR(flash_policy_parse(cases[i].text, strlen(cases[i].text), &p, diag), cases[i].err, cases[i].text);
		cr_assert(p == (struct flash_policy *)0x1, "ret_policy written on failure");
		got = problems(diag);
		ASSERT_STREQ(got, cases[i].problems, cases[i].text);
	}
	ASSERT_STREQ(flash_strerror(-FLASH_E_POLICY_VIOLATION), "spec exceeds the owner quota policy", "strerror");
	ASSERT_ERR(flash_policy_parse(NULL, 0, NULL, diag), -EINVAL, "NULL");
	flash_policy_free(NULL);
	flash_diag_free(diag);
}
