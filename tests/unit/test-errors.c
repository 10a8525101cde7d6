/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one error model: every domain code of both libraries has its own
 * text, the two ranges are disjoint, and libflash passes libflowsdn's
 * codes on. */
#include <stdio.h>
#include <string.h>

#include <flash/auth.h>
#include <flash/common.h>
#include <flash/image.h>
#include <flash/meter.h>
#include <flash/policy.h>
#include <flash/render.h>
#include <flash/sandbox.h>
#include <flash/sched.h>
#include <flash/spec.h>
#include <flowsdn/cni.h>
#include <flowsdn/common.h>
#include <flowsdn/datapath.h>
#include <flowsdn/identity.h>
#include <flowsdn/ipam.h>
#include <flowsdn/maglev.h>
#include <flowsdn/netlink.h>
#include <flowsdn/policy.h>

#include "helpers.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct block {
	const char *name;
	int base, end; /* [base, end): the codes the header defines */
};

/* Every block of each library, by its header's enum. */
static const struct block flowsdn_blocks[] = {
	{ "addr", FLOWSDN_E_BASE, FLOWSDN_E_ADDR_MAX_ },
	{ "ipam", FLOWSDN_E_IPAM_BASE, FLOWSDN_E_IPAM_MAX_ },
	{ "maglev", FLOWSDN_E_MAGLEV_BASE, FLOWSDN_E_MAGLEV_MAX_ },
	{ "identity", FLOWSDN_E_IDENTITY_BASE, FLOWSDN_E_IDENTITY_MAX_ },
	{ "policy", FLOWSDN_E_POLICY_BASE, FLOWSDN_E_POLICY_MAX_ },
	{ "cni", FLOWSDN_E_CNI_BASE, FLOWSDN_E_CNI_MAX_ },
	{ "bpf", FLOWSDN_E_BPF_BASE, FLOWSDN_E_BPF_MAX_ },
	{ "netlink", FLOWSDN_E_NL_BASE, FLOWSDN_E_NL_MAX_ },
	/* 4800 is flowsdn-agent's and flowsdn-cni's (common/agent-api.h),
	 * checked by tests/unit/test-agent-core. */
};

static const struct block flash_blocks[] = {
	{ "spec", FLASH_E_SPEC_BASE, FLASH_E_SPEC_MAX_ },
	{ "policy", FLASH_E_POLICY_BASE, FLASH_E_POLICY_MAX_ },
	{ "auth", FLASH_E_AUTH_BASE, FLASH_E_AUTH_MAX_ },
	{ "meter", FLASH_E_METER_BASE, FLASH_E_METER_MAX_ },
	{ "render", FLASH_E_RENDER_BASE, FLASH_E_RENDER_MAX_ },
	{ "image", FLASH_E_IMAGE_BASE, FLASH_E_IMAGE_MAX_ },
	{ "sched", FLASH_E_SCHED_BASE, FLASH_E_SCHED_MAX_ },
	{ "sandbox", FLASH_E_SANDBOX_BASE, FLASH_E_SANDBOX_MAX_ },
};

/* Each block sits on a multiple of 100 inside its library's range, holds
 * at least one code and at most 100. */
static void check_layout(const struct block *b, size_t n, int lo, int hi)
{
	for (size_t i = 0; i < n; i++) {
		cr_assert(b[i].base >= lo && b[i].base < hi, "%s block at %d outside [%d, %d)", b[i].name,
			  b[i].base, lo, hi);
		cr_assert_eq((b[i].base - lo) % 100, 0, "%s block at %d not on a block boundary", b[i].name,
			     b[i].base);
		cr_assert(b[i].end > b[i].base && b[i].end <= b[i].base + 100, "%s block [%d, %d) has %d codes",
			  b[i].name, b[i].base, b[i].end, b[i].end - b[i].base);
		for (size_t j = 0; j < i; j++)
			cr_assert(b[j].base != b[i].base, "%s and %s share block %d", b[j].name, b[i].name,
				  b[i].base);
	}
}

Test(errors, ranges_are_disjoint)
{
	cr_assert_eq(FLOWSDN_E_BASE, 4000);
	cr_assert_eq(FLOWSDN_E_END, 5000);
	cr_assert_eq(FLASH_E_BASE, 6000);
	cr_assert_eq(FLASH_E_END, 7000);
	cr_assert((int)FLOWSDN_E_END <= (int)FLASH_E_BASE || (int)FLASH_E_END <= (int)FLOWSDN_E_BASE, "ranges overlap");
	check_layout(flowsdn_blocks, ARRAY_SIZE(flowsdn_blocks), FLOWSDN_E_BASE, FLOWSDN_E_END);
	check_layout(flash_blocks, ARRAY_SIZE(flash_blocks), FLASH_E_BASE, FLASH_E_END);
}

/* The strings that mean "not known": a code with one of them is a code
 * the library forgot to describe. */
static bool is_unknown(const char *s)
{
	return !s || !s[0] || strcmp(s, "unknown flowsdn error") == 0 || strcmp(s, "unknown flash error") == 0 ||
	       strcmp(s, "unknown error") == 0 || strncmp(s, "Unknown error", 13) == 0;
}

struct seen {
	const char *text[400];
	int code[400];
	size_t n;
};

/* Asserts that every code of the blocks has a specific text, different
 * from every other code's text. */
static void check_texts(const struct block *b, size_t n, const char *(*fn)(int), struct seen *seen)
{
	for (size_t i = 0; i < n; i++) {
		for (int c = b[i].base; c < b[i].end; c++) {
			const char *s = fn(-c);

			cr_assert(!is_unknown(s), "%s code %d has no text (\"%s\")", b[i].name, c, s ? s : "(null)");
			ASSERT_STREQ(fn(c), s, "either sign");
			for (size_t k = 0; k < seen->n; k++)
				cr_assert(strcmp(seen->text[k], s) != 0, "codes %d and %d share the text \"%s\"",
					  seen->code[k], c, s);
			cr_assert_lt(seen->n, ARRAY_SIZE(seen->text));
			seen->text[seen->n] = s;
			seen->code[seen->n++] = c;
		}
		/* One past the block's last code is not known. */
		if (b[i].end < b[i].base + 100)
			cr_assert(is_unknown(fn(-b[i].end)), "%s: code %d past the block has a text: \"%s\"", b[i].name,
				  b[i].end, fn(-b[i].end));
	}
}

Test(errors, flowsdn_strerror_knows_every_code)
{
	struct seen seen = { .n = 0 };

	check_texts(flowsdn_blocks, ARRAY_SIZE(flowsdn_blocks), flowsdn_strerror, &seen);
	cr_assert_gt(seen.n, 50);
}

Test(errors, flash_strerror_knows_every_code_of_both_libraries)
{
	struct seen seen = { .n = 0 };

	check_texts(flash_blocks, ARRAY_SIZE(flash_blocks), flash_strerror, &seen);
	check_texts(flowsdn_blocks, ARRAY_SIZE(flowsdn_blocks), flash_strerror, &seen);
	/* libflowsdn's codes come back with libflowsdn's own text. */
	for (size_t i = 0; i < ARRAY_SIZE(flowsdn_blocks); i++)
		for (int c = flowsdn_blocks[i].base; c < flowsdn_blocks[i].end; c++)
			ASSERT_STREQ(flash_strerror(-c), flowsdn_strerror(-c), "passed on");
}

Test(errors, errno_and_unknown_codes)
{
	ASSERT_STREQ(flowsdn_strerror(0), "success", "0");
	ASSERT_STREQ(flash_strerror(0), "success", "0");
	ASSERT_STREQ(flowsdn_strerror(-ENOMEM), strerrordesc_np(ENOMEM), "errno");
	ASSERT_STREQ(flash_strerror(-EINVAL), strerrordesc_np(EINVAL), "errno");
	/* libflowsdn does not know libflash's range, and neither knows the gap. */
	ASSERT_STREQ(flowsdn_strerror(-FLASH_E_SPEC_SYNTAX), "unknown flowsdn error", "other library");
	ASSERT_STREQ(flash_strerror(-5500), "unknown flash error", "between the ranges");
	ASSERT_STREQ(flash_strerror(-(FLASH_E_BASE + 599)), "unknown flash error", "reserved block");
	ASSERT_STREQ(flowsdn_strerror(-(FLOWSDN_E_BASE + 999)), "unknown flowsdn error", "unused block");
}

/* helpers.h prints the library's text for domain codes. */
Test(errors, test_helper_names_domain_codes)
{
	ASSERT_STREQ(test_strerror(-FLASH_E_SPEC_INVALID), flash_strerror(FLASH_E_SPEC_INVALID), "flash");
	ASSERT_STREQ(test_strerror(-FLOWSDN_E_ADDR_SYNTAX), flowsdn_strerror(FLOWSDN_E_ADDR_SYNTAX), "flowsdn");
	ASSERT_STREQ(test_strerror(-ENOENT), strerror(ENOENT), "errno");
}
