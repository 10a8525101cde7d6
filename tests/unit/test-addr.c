/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Addresses and prefixes: RFC 5952 vectors, strict parsing, prefix
 * arithmetic and the IANA special-purpose registries. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <flowsdn/addr.h>

#include "helpers.h"

static struct flowsdn_addr A(const char *s)
{
	struct flowsdn_addr a;
	int r = flowsdn_addr_parse(s, strlen(s), &a);

	cr_assert(r == 0, "parse(\"%s\") = %d (%s)", s, r, flowsdn_strerror(r));
	return a;
}

static struct flowsdn_prefix P(const char *s)
{
	struct flowsdn_prefix p;
	int r = flowsdn_prefix_parse(s, strlen(s), NULL, &p);

	cr_assert(r == 0, "prefix_parse(\"%s\") = %d (%s)", s, r, flowsdn_strerror(r));
	return p;
}

static void expect_canonical(const char *in, const char *want)
{
	char buf[FLOWSDN_ADDR_STRLEN];
	struct flowsdn_addr a = A(in);
	int n = flowsdn_addr_format(&a, buf, sizeof(buf));

	cr_assert(n == (int)strlen(want), "format(%s) length %d, want %zu", in, n, strlen(want));
	ASSERT_STREQ(buf, want, in);
}

/* RFC 5952 §2.1: every text of 2001:db8:0:0:1:0:0:1. */
Test(addr, rfc5952_2_1_leading_zeros)
{
	static const char *const in[] = {
		"2001:db8:0:0:1:0:0:1", "2001:0db8:0:0:1:0:0:1", "2001:db8::1:0:0:1",
		"2001:db8::0:1:0:0:1", "2001:0db8::1:0:0:1", "2001:db8:0:0:1::1",
		"2001:db8:0000:0:1::1", "2001:DB8:0:0:1::1",
	};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		expect_canonical(in[i], "2001:db8::1:0:0:1");
}

/* RFC 5952 §2.2 and §4.1: leading zeros, :: placement. */
Test(addr, rfc5952_2_2_zero_compression)
{
	expect_canonical("2001:db8:aaaa:bbbb:cccc:dddd:eeee:0001", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:1");
	expect_canonical("2001:db8:aaaa:bbbb:cccc:dddd:eeee:001", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:1");
	expect_canonical("2001:db8:aaaa:bbbb:cccc:dddd:eeee:01", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:1");
	expect_canonical("2001:db8:aaaa:bbbb:cccc:dddd:eeee:1", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:1");
	expect_canonical("2001:db8:aaaa:bbbb:cccc:dddd::1", "2001:db8:aaaa:bbbb:cccc:dddd:0:1");
	expect_canonical("2001:db8:aaaa:bbbb:cccc:dddd:0:1", "2001:db8:aaaa:bbbb:cccc:dddd:0:1");
	expect_canonical("2001:db8:0:0:0::1", "2001:db8::1");
	expect_canonical("2001:db8:0:0::1", "2001:db8::1");
	expect_canonical("2001:db8:0::1", "2001:db8::1");
	expect_canonical("2001:db8::1", "2001:db8::1");
	expect_canonical("2001:db8::aaaa:0:0:1", "2001:db8::aaaa:0:0:1");
	expect_canonical("2001:db8:0:0:aaaa::1", "2001:db8::aaaa:0:0:1");
	expect_canonical("2001:0db8::0001", "2001:db8::1");
}

/* RFC 5952 §2.3 and §4.3: case. */
Test(addr, rfc5952_case)
{
	expect_canonical("2001:db8:aaaa:bbbb:cccc:dddd:eeee:aaaa", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:aaaa");
	expect_canonical("2001:db8:aaaa:bbbb:cccc:dddd:eeee:AAAA", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:aaaa");
	expect_canonical("2001:db8:aaaa:bbbb:cccc:dddd:eeee:AaAa", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:aaaa");
}

/* RFC 5952 §4.2: longest run, first on a tie, never a single group. */
Test(addr, rfc5952_4_2)
{
	expect_canonical("2001:db8:0:0:0:0:2:1", "2001:db8::2:1");
	expect_canonical("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1");
	expect_canonical("2001:0:0:1:0:0:0:1", "2001:0:0:1::1");
	expect_canonical("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1");
	expect_canonical("0:0:0:0:0:0:0:0", "::");
	expect_canonical("0:0:0:0:0:0:0:1", "::1");
	expect_canonical("1:0:0:0:0:0:0:0", "1::");
	expect_canonical("1:0:1:0:1:0:1:0", "1:0:1:0:1:0:1:0");
	expect_canonical("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
}

/* RFC 5952 §5: IPv4-mapped in mixed notation. */
Test(addr, rfc5952_5_mixed)
{
	expect_canonical("::ffff:192.0.2.1", "::ffff:192.0.2.1");
	expect_canonical("0:0:0:0:0:ffff:c000:0201", "::ffff:192.0.2.1");
	expect_canonical("::ffff:0.0.0.0", "::ffff:0.0.0.0");
	expect_canonical("64:ff9b::192.0.2.33", "64:ff9b::c000:221");
	expect_canonical("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304");
}

Test(addr, ipv4_roundtrip)
{
	expect_canonical("0.0.0.0", "0.0.0.0");
	expect_canonical("255.255.255.255", "255.255.255.255");
	expect_canonical("10.0.0.1", "10.0.0.1");
	expect_canonical("192.168.100.200", "192.168.100.200");
}

struct bad {
	const char *text;
	size_t len; /* 0: strlen */
	int err;
};

Test(addr, parse_refuses_malformed)
{
	static const char nul4[] = "1.2.3.4\0";
	static const char nul6[] = "::1\0:2";
	char longtext[200];
	const struct bad cases[] = {
		{ "", 0, -FLOWSDN_E_ADDR_EMPTY },
		{ "1.2.3.4.5", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "1.2.3", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "1.2.3.", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ ".1.2.3", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "1..2.3", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "300.1.1.1", 0, -FLOWSDN_E_ADDR_OCTET_RANGE },
		{ "256.0.0.0", 0, -FLOWSDN_E_ADDR_OCTET_RANGE },
		{ "1.2.3.1000", 0, -FLOWSDN_E_ADDR_OCTET_RANGE },
		{ "01.2.3.4", 0, -FLOWSDN_E_ADDR_LEADING_ZERO },
		{ "1.2.3.04", 0, -FLOWSDN_E_ADDR_LEADING_ZERO },
		{ "1.2.3.00", 0, -FLOWSDN_E_ADDR_LEADING_ZERO },
		{ "1.2.3.4 ", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ " 1.2.3.4", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "+1.2.3.4", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "0x1.2.3.4", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "1.2.3.4/24", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ nul4, sizeof(nul4) - 1, -FLOWSDN_E_ADDR_NUL },
		{ nul6, sizeof(nul6) - 1, -FLOWSDN_E_ADDR_NUL },
		{ "::1::", 0, -FLOWSDN_E_ADDR_DOUBLE_COLON },
		{ "1::2::3", 0, -FLOWSDN_E_ADDR_DOUBLE_COLON },
		{ ":::", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "1:::2", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ ":1::2", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "1::2:", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "1:2:3:4:5:6:7", 0, -FLOWSDN_E_ADDR_GROUP_COUNT },
		{ "1:2:3:4:5:6:7:8:9", 0, -FLOWSDN_E_ADDR_GROUP_COUNT },
		{ "1:2:3:4:5:6:7::8", 0, -FLOWSDN_E_ADDR_GROUP_COUNT },
		{ "1:2:3:4::5:6:7:8", 0, -FLOWSDN_E_ADDR_GROUP_COUNT },
		{ "12345::", 0, -FLOWSDN_E_ADDR_GROUP },
		{ "1:2:3:4:5:6:7:00008", 0, -FLOWSDN_E_ADDR_GROUP },
		{ "fe80::1%eth0", 0, -FLOWSDN_E_ADDR_ZONE },
		{ "g::1", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "::1.2.3.4.5", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "::1.2.3.256", 0, -FLOWSDN_E_ADDR_OCTET_RANGE },
		{ "::1.2.3.04", 0, -FLOWSDN_E_ADDR_LEADING_ZERO },
		{ "1:2:3:4:5:6:7:1.2.3.4", 0, -FLOWSDN_E_ADDR_GROUP_COUNT },
		{ "1.2.3.4::", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "::1.2.3.4:5", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "[::1]", 0, -FLOWSDN_E_ADDR_SYNTAX },
		{ "1.2.3.4\n", 0, -FLOWSDN_E_ADDR_SYNTAX },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct flowsdn_addr a = { .family = 99 };
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
		int r = flowsdn_addr_parse(cases[i].text, len, &a);

		cr_assert(r == cases[i].err, "parse(\"%.*s\") = %d (%s), want %d (%s)", (int)len, cases[i].text,
			  r, flowsdn_strerror(r), cases[i].err, flowsdn_strerror(cases[i].err));
		cr_assert(a.family == 99, "ret_addr written on failure for \"%s\"", cases[i].text);
	}

	memset(longtext, '1', sizeof(longtext));
	ASSERT_ERR(flowsdn_addr_parse(longtext, sizeof(longtext), &(struct flowsdn_addr){ 0 }),
		   -FLOWSDN_E_ADDR_TOO_LONG, "overlong");
	ASSERT_ERR(flowsdn_addr_parse(NULL, 3, &(struct flowsdn_addr){ 0 }), -EINVAL, "NULL text");
}

/* The parser reads only the bytes it is given: "1.2.3.4" followed by
 * garbage with len 7 is fine. */
Test(addr, parse_respects_length)
{
	struct flowsdn_addr a;

	ASSERT_OK(flowsdn_addr_parse("1.2.3.4XYZ", 7, &a), "prefix of buffer");
	cr_assert(a.family == FLOWSDN_AF_INET && a.bytes[3] == 4);
	ASSERT_OK(flowsdn_addr_parse("::1:2", 3, &a), "::1 of ::1:2");
	expect_canonical("::1", "::1");
	cr_assert(a.bytes[15] == 1 && a.bytes[13] == 0);
}

Test(addr, format_buffer_sizes)
{
	struct flowsdn_addr a = A("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
	char buf[FLOWSDN_ADDR_STRLEN];

	ASSERT_ERR(flowsdn_addr_format(&a, buf, 39), -ENOSPC, "39 bytes");
	ASSERT_OK(flowsdn_addr_format(&a, buf, 40), "40 bytes");
	a = A("::ffff:255.255.255.255");
	ASSERT_OK(flowsdn_addr_format(&a, buf, sizeof(buf)), "mapped");
	a.family = 7;
	ASSERT_ERR(flowsdn_addr_format(&a, buf, sizeof(buf)), -EINVAL, "bad family");
}

Test(prefix, parse_and_format)
{
	char buf[FLOWSDN_PREFIX_STRLEN];
	struct flowsdn_prefix p = P("10.0.0.0/8");

	cr_assert(p.len == 8);
	ASSERT_OK(flowsdn_prefix_format(&p, buf, sizeof(buf)), "format");
	ASSERT_STREQ(buf, "10.0.0.0/8", "v4");
	p = P("2001:DB8:0::/32");
	ASSERT_OK(flowsdn_prefix_format(&p, buf, sizeof(buf)), "format");
	ASSERT_STREQ(buf, "2001:db8::/32", "v6");
	p = P("0.0.0.0/0");
	cr_assert(p.len == 0);
	p = P("::/0");
	cr_assert(p.len == 0 && p.addr.family == FLOWSDN_AF_INET6);
	p = P("1.2.3.4/32");
	cr_assert(p.len == 32);
	p = P("::1/128");
	cr_assert(p.len == 128);
}

Test(prefix, parse_refuses)
{
	const struct bad cases[] = {
		{ "1.2.3.4/33", 0, -FLOWSDN_E_PREFIX_LENGTH },
		{ "::/129", 0, -FLOWSDN_E_PREFIX_LENGTH },
		{ "1.2.3.0/", 0, -FLOWSDN_E_PREFIX_LENGTH },
		{ "1.2.3.0/024", 0, -FLOWSDN_E_PREFIX_LENGTH },
		{ "1.2.3.0/+24", 0, -FLOWSDN_E_PREFIX_LENGTH },
		{ "1.2.3.0/-1", 0, -FLOWSDN_E_PREFIX_LENGTH },
		{ "1.2.3.0/24/", 0, -FLOWSDN_E_PREFIX_LENGTH },
		{ "1.2.3.0/1000", 0, -FLOWSDN_E_PREFIX_LENGTH },
		{ "1.2.3.4", 0, -FLOWSDN_E_PREFIX_LENGTH },
		{ "1.2.3.4/24", 0, -FLOWSDN_E_PREFIX_HOST_BITS },
		{ "2001:db8::1/64", 0, -FLOWSDN_E_PREFIX_HOST_BITS },
		{ "300.0.0.0/8", 0, -FLOWSDN_E_ADDR_OCTET_RANGE },
		{ "/8", 0, -FLOWSDN_E_ADDR_EMPTY },
		{ "", 0, -FLOWSDN_E_ADDR_EMPTY },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct flowsdn_prefix p = { .len = 77 };
		int r = flowsdn_prefix_parse(cases[i].text, strlen(cases[i].text), NULL, &p);

		cr_assert(r == cases[i].err, "prefix_parse(\"%s\") = %d (%s), want %d", cases[i].text, r,
			  flowsdn_strerror(r), cases[i].err);
		cr_assert(p.len == 77, "ret_prefix written on failure");
	}
}

Test(prefix, flags_and_family)
{
	struct flowsdn_prefix p;
	char buf[FLOWSDN_PREFIX_STRLEN];
	FLOWSDN_OPTS(flowsdn_prefix_opts, norm, .flags = FLOWSDN_PREFIX_NORMALIZE);
	FLOWSDN_OPTS(flowsdn_prefix_opts, host, .flags = FLOWSDN_PREFIX_ALLOW_HOST);
	FLOWSDN_OPTS(flowsdn_prefix_opts, v4only, .family = FLOWSDN_AF_INET);

	ASSERT_OK(flowsdn_prefix_parse("10.1.2.3/8", 10, &norm, &p), "normalize");
	flowsdn_prefix_format(&p, buf, sizeof(buf));
	ASSERT_STREQ(buf, "10.0.0.0/8", "normalized");
	ASSERT_OK(flowsdn_prefix_parse("2001:db8::1", 11, &host, &p), "bare host");
	cr_assert(p.len == 128);
	ASSERT_ERR(flowsdn_prefix_parse("::/0", 4, &v4only, &p), -FLOWSDN_E_ADDR_FAMILY, "family");

	/* An options struct from a newer caller: unknown non-zero tail refused. */
	struct {
		struct flowsdn_prefix_opts o;
		int future;
	} big = { .o = { .sz = sizeof(big) }, .future = 1 };
	ASSERT_ERR(flowsdn_prefix_parse("::/0", 4, &big.o, &p), -EINVAL, "non-zero unknown tail");
	big.future = 0;
	ASSERT_OK(flowsdn_prefix_parse("::/0", 4, &big.o, &p), "zero unknown tail");
	/* An older caller's shorter struct: missing fields take defaults. */
	struct flowsdn_prefix_opts old = { .sz = offsetof(struct flowsdn_prefix_opts, family) ,
					   .flags = FLOWSDN_PREFIX_ALLOW_HOST, .family = FLOWSDN_AF_INET6 };
	ASSERT_OK(flowsdn_prefix_parse("1.2.3.4", 7, &old, &p), "old struct ignores family");
	struct flowsdn_prefix_opts tiny = { .sz = 3 };
	ASSERT_ERR(flowsdn_prefix_parse("::/0", 4, &tiny, &p), -EINVAL, "sz too small");
}

Test(prefix, containment_overlap_compare)
{
	struct flowsdn_prefix p8 = P("10.0.0.0/8"), p16 = P("10.1.0.0/16"), o = P("11.0.0.0/8");
	struct flowsdn_prefix v6 = P("::/0"), v4all = P("0.0.0.0/0");

	cr_assert(flowsdn_prefix_contains(&p8, &p16));
	cr_assert(!flowsdn_prefix_contains(&p16, &p8));
	cr_assert(flowsdn_prefix_contains(&p8, &p8));
	cr_assert(flowsdn_prefix_overlaps(&p16, &p8));
	cr_assert(!flowsdn_prefix_overlaps(&p8, &o));
	cr_assert(!flowsdn_prefix_overlaps(&v6, &v4all), "families never overlap");
	cr_assert(flowsdn_prefix_contains(&v4all, &o));
	cr_assert(flowsdn_prefix_contains_addr(&p16, &(struct flowsdn_addr){ 0 }) == false);
	struct flowsdn_addr a = A("10.1.255.255");
	cr_assert(flowsdn_prefix_contains_addr(&p16, &a));
	a = A("10.2.0.0");
	cr_assert(!flowsdn_prefix_contains_addr(&p16, &a));
	cr_assert(flowsdn_prefix_compare(&p8, &p16) < 0);
	cr_assert(flowsdn_prefix_compare(&p8, &o) < 0);
	cr_assert(flowsdn_prefix_compare(&v4all, &v6) < 0, "IPv4 sorts first");
	struct flowsdn_prefix p8b = P("10.0.0.0/9");
	cr_assert(flowsdn_prefix_compare(&p8, &p8b) < 0, "shorter first");
}

Test(prefix, first_last_size_nth_index)
{
	struct flowsdn_prefix p = P("192.168.1.0/30");
	struct flowsdn_addr a, b;
	uint64_t idx;
	char buf[FLOWSDN_ADDR_STRLEN];

	flowsdn_prefix_first(&p, &a);
	flowsdn_prefix_last(&p, &b);
	flowsdn_addr_format(&b, buf, sizeof(buf));
	ASSERT_STREQ(buf, "192.168.1.3", "last");
	cr_assert(flowsdn_prefix_size(&p) == 4);
	ASSERT_OK(flowsdn_prefix_nth(&p, 2, &a), "nth 2");
	flowsdn_addr_format(&a, buf, sizeof(buf));
	ASSERT_STREQ(buf, "192.168.1.2", "nth");
	ASSERT_ERR(flowsdn_prefix_nth(&p, 4, &a), -FLOWSDN_E_ADDR_RANGE, "nth past end");
	ASSERT_OK(flowsdn_prefix_index(&p, &b, &idx), "index");
	cr_assert(idx == 3);

	p = P("2001:db8::/64");
	cr_assert(flowsdn_prefix_size(&p) == UINT64_MAX);
	flowsdn_prefix_last(&p, &b);
	flowsdn_addr_format(&b, buf, sizeof(buf));
	ASSERT_STREQ(buf, "2001:db8::ffff:ffff:ffff:ffff", "v6 last");
	ASSERT_OK(flowsdn_prefix_nth(&p, UINT64_MAX, &a), "nth max");
	cr_assert(flowsdn_addr_equal(&a, &b));
	ASSERT_OK(flowsdn_prefix_index(&p, &b, &idx), "index max");
	cr_assert(idx == UINT64_MAX);

	p = P("2001:db8::/48");
	a = A("2001:db8:0:1::5");
	ASSERT_ERR(flowsdn_prefix_index(&p, &a, &idx), -FLOWSDN_E_ADDR_RANGE, "offset past 64 bits");
	a = A("2001:db8::5");
	ASSERT_OK(flowsdn_prefix_index(&p, &a, &idx), "low offset");
	cr_assert(idx == 5);
	p = P("0.0.0.0/0");
	cr_assert(flowsdn_prefix_size(&p) == 1ull << 32);
	flowsdn_prefix_last(&p, &b);
	flowsdn_addr_format(&b, buf, sizeof(buf));
	ASSERT_STREQ(buf, "255.255.255.255", "all-ones");
}

Test(prefix, iterate)
{
	struct flowsdn_prefix p = P("10.0.0.252/30");
	struct flowsdn_prefix_iter it;
	struct flowsdn_addr a;
	char buf[FLOWSDN_ADDR_STRLEN];
	const char *want[] = { "10.0.0.252", "10.0.0.253", "10.0.0.254", "10.0.0.255" };
	size_t n = 0;

	flowsdn_prefix_iter_init(&it, &p);
	while (flowsdn_prefix_iter_next(&it, &a)) {
		cr_assert(n < 4, "too many addresses");
		flowsdn_addr_format(&a, buf, sizeof(buf));
		ASSERT_STREQ(buf, want[n], "iteration");
		n++;
	}
	cr_assert(n == 4);

	/* The very top of the space ends without wrapping. */
	p = P("255.255.255.254/31");
	n = 0;
	flowsdn_prefix_iter_init(&it, &p);
	while (flowsdn_prefix_iter_next(&it, &a))
		n++;
	cr_assert(n == 2, "got %zu", n);
	p = P("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128");
	n = 0;
	flowsdn_prefix_iter_init(&it, &p);
	while (flowsdn_prefix_iter_next(&it, &a))
		n++;
	cr_assert(n == 1);
}

/* NULL arguments give an empty iteration; the output is left alone. */
Test(prefix, iterate_null_arguments)
{
	struct flowsdn_prefix p = P("10.0.0.0/31");
	struct flowsdn_prefix_iter it;
	struct flowsdn_addr a = A("192.0.2.1"), b = a;

	flowsdn_prefix_iter_init(&it, NULL);
	cr_assert(!flowsdn_prefix_iter_next(&it, &a), "a NULL prefix has no address");
	cr_assert(flowsdn_addr_equal(&a, &b), "output untouched");
	flowsdn_prefix_iter_init(NULL, &p);
	cr_assert(!flowsdn_prefix_iter_next(NULL, &a), "NULL iterator");
	flowsdn_prefix_iter_init(&it, &p);
	cr_assert(!flowsdn_prefix_iter_next(&it, NULL), "NULL output");
	cr_assert(flowsdn_prefix_iter_next(&it, &a), "a NULL output consumes nothing");
	b = A("10.0.0.0");
	cr_assert(flowsdn_addr_equal(&a, &b), "the first address comes first");
}

Test(addr, add_bounds)
{
	struct flowsdn_addr a = A("255.255.255.255"), r;
	char buf[FLOWSDN_ADDR_STRLEN];

	ASSERT_ERR(flowsdn_addr_add(&a, 1, &r), -FLOWSDN_E_ADDR_RANGE, "v4 overflow");
	ASSERT_OK(flowsdn_addr_add(&a, -1, &r), "v4 -1");
	flowsdn_addr_format(&r, buf, sizeof(buf));
	ASSERT_STREQ(buf, "255.255.255.254", "v4 -1");
	a = A("0.0.0.0");
	ASSERT_ERR(flowsdn_addr_add(&a, -1, &r), -FLOWSDN_E_ADDR_RANGE, "v4 underflow");
	ASSERT_OK(flowsdn_addr_add(&a, 0xffffffffll, &r), "to top");
	ASSERT_ERR(flowsdn_addr_add(&a, 0x100000000ll, &r), -FLOWSDN_E_ADDR_RANGE, "past 32 bits");
	a = A("::ffff:ffff:ffff:ffff");
	ASSERT_OK(flowsdn_addr_add(&a, 1, &r), "v6 carry");
	flowsdn_addr_format(&r, buf, sizeof(buf));
	ASSERT_STREQ(buf, "0:0:0:1::", "carry into the upper half");
	ASSERT_OK(flowsdn_addr_add(&r, -1, &r), "v6 borrow");
	cr_assert(flowsdn_addr_equal(&r, &a));
	a = A("::");
	ASSERT_ERR(flowsdn_addr_add(&a, INT64_MIN, &r), -FLOWSDN_E_ADDR_RANGE, "v6 underflow");
}

Test(addr, unmap_and_bytes)
{
	struct flowsdn_addr a = A("::ffff:10.1.2.3"), v4;
	static const unsigned char raw[4] = { 10, 1, 2, 3 };
	struct flowsdn_addr b;

	ASSERT_OK(flowsdn_addr_unmap_v4(&a, &v4), "unmap");
	ASSERT_OK(flowsdn_addr_from_bytes(FLOWSDN_AF_INET, raw, &b), "from bytes");
	cr_assert(flowsdn_addr_equal(&v4, &b));
	a = A("::10.1.2.3");
	ASSERT_ERR(flowsdn_addr_unmap_v4(&a, &v4), -FLOWSDN_E_ADDR_FAMILY, "compat is not mapped");
	ASSERT_ERR(flowsdn_addr_from_bytes(3, raw, &b), -EINVAL, "family");
}

/* One row per IANA special-purpose registry entry (and our additions),
 * written from the registries, independently of the library's table. */
struct reg {
	const char *addr;
	unsigned int classes;
	const char *name;
	bool src, dst, fwd, global;
};

#define C(x) FLOWSDN_ADDR_##x
static const struct reg registry[] = {
	{ "0.1.2.3", C(THIS_NETWORK), "This network", true, false, false, false },
	{ "0.0.0.0", C(THIS_NETWORK) | C(UNSPECIFIED), "This host on this network", true, false, false, false },
	{ "10.200.3.4", C(PRIVATE), "Private-Use", true, true, true, false },
	{ "100.64.0.1", C(CGNAT), "Shared Address Space", true, true, true, false },
	{ "100.127.255.255", C(CGNAT), "Shared Address Space", true, true, true, false },
	{ "127.0.0.1", C(LOOPBACK), "Loopback", false, false, false, false },
	{ "169.254.1.1", C(LINK_LOCAL), "Link Local", true, true, false, false },
	{ "169.254.169.254", C(LINK_LOCAL) | C(METADATA), "Cloud metadata service", true, true, false, false },
	{ "172.31.255.255", C(PRIVATE), "Private-Use", true, true, true, false },
	{ "192.0.0.200", C(RESERVED), "IETF Protocol Assignments", false, false, false, false },
	{ "192.0.0.1", C(RESERVED), "IPv4 Service Continuity Prefix", true, true, true, false },
	{ "192.0.0.8", C(RESERVED), "IPv4 dummy address", true, false, false, false },
	{ "192.0.0.9", C(PUBLIC) | C(RESERVED), "Port Control Protocol Anycast", true, true, true, true },
	{ "192.0.0.10", C(PUBLIC) | C(RESERVED), "Traversal Using Relays around NAT Anycast", true, true, true, true },
	{ "192.0.0.170", C(RESERVED) | C(TRANSLATION), "NAT64/DNS64 Discovery", false, false, false, false },
	{ "192.0.0.171", C(RESERVED) | C(TRANSLATION), "NAT64/DNS64 Discovery", false, false, false, false },
	{ "192.0.2.77", C(DOCUMENTATION), "Documentation (TEST-NET-1)", false, false, false, false },
	{ "192.31.196.1", C(PUBLIC), "AS112-v4", true, true, true, true },
	{ "192.52.193.1", C(PUBLIC), "AMT", true, true, true, true },
	{ "192.88.99.1", C(RESERVED) | C(TRANSLATION), "Deprecated (6to4 Relay Anycast)", false, false, false, false },
	{ "192.168.0.1", C(PRIVATE), "Private-Use", true, true, true, false },
	{ "192.175.48.6", C(PUBLIC), "Direct Delegation AS112 Service", true, true, true, true },
	{ "198.19.255.255", C(BENCHMARK), "Benchmarking", true, true, true, false },
	{ "198.51.100.1", C(DOCUMENTATION), "Documentation (TEST-NET-2)", false, false, false, false },
	{ "203.0.113.9", C(DOCUMENTATION), "Documentation (TEST-NET-3)", false, false, false, false },
	{ "239.255.255.250", C(MULTICAST), "Multicast", false, true, true, false },
	{ "240.0.0.1", C(RESERVED), "Reserved", false, false, false, false },
	{ "255.255.255.255", C(BROADCAST) | C(RESERVED), "Limited Broadcast", false, true, false, false },
	{ "8.8.8.8", C(PUBLIC), "", true, true, true, true },
	{ "172.32.0.0", C(PUBLIC), "", true, true, true, true },
	{ "100.128.0.0", C(PUBLIC), "", true, true, true, true },
	{ "::", C(UNSPECIFIED), "Unspecified Address", true, false, false, false },
	{ "::1", C(LOOPBACK), "Loopback Address", false, false, false, false },
	{ "::1.2.3.4", C(V4_COMPAT), "IPv4-compatible (deprecated)", false, false, false, false },
	{ "::ffff:8.8.8.8", C(V4_MAPPED), "IPv4-mapped Address", false, false, false, false },
	{ "64:ff9b::8.8.8.8", C(PUBLIC) | C(TRANSLATION), "IPv4-IPv6 Translation", true, true, true, true },
	{ "64:ff9b:1::1", C(TRANSLATION), "IPv4-IPv6 Translation (local use)", true, true, true, false },
	{ "100::1", C(DISCARD), "Discard-Only Address Block", true, true, true, false },
	{ "100:0:0:1::1", C(RESERVED), "Dummy IPv6 Prefix", true, true, false, false },
	{ "2001:1ff::1", C(RESERVED), "IETF Protocol Assignments", false, false, false, false },
	{ "2001:0:1::1", C(RESERVED) | C(TRANSLATION), "TEREDO", true, true, true, false },
	{ "2001:1::1", C(PUBLIC) | C(RESERVED), "Port Control Protocol Anycast", true, true, true, true },
	{ "2001:1::2", C(PUBLIC) | C(RESERVED), "Traversal Using Relays around NAT Anycast", true, true, true, true },
	{ "2001:1::3", C(PUBLIC) | C(RESERVED), "DNS-SD Service Registration Protocol Anycast", true, true, true, true },
	{ "2001:2::1", C(RESERVED) | C(BENCHMARK), "Benchmarking", true, true, true, false },
	{ "2001:3::1", C(PUBLIC) | C(RESERVED), "AMT", true, true, true, true },
	{ "2001:4:112::1", C(PUBLIC) | C(RESERVED), "AS112-v6", true, true, true, true },
	{ "2001:10::1", C(RESERVED), "Deprecated (previously ORCHID)", false, false, false, false },
	{ "2001:20::1", C(PUBLIC) | C(RESERVED), "ORCHIDv2", true, true, true, true },
	{ "2001:30::1", C(PUBLIC) | C(RESERVED), "Drone Remote ID Protocol Entity Tags (DETs) Prefix", true, true, true, true },
	{ "2001:db8:1::1", C(DOCUMENTATION), "Documentation", false, false, false, false },
	{ "2002:c000:204::1", C(TRANSLATION), "6to4", true, true, true, false },
	{ "2620:4f:8000::1", C(PUBLIC), "Direct Delegation AS112 Service", true, true, true, true },
	{ "3fff:fff::1", C(DOCUMENTATION), "Documentation", false, false, false, false },
	{ "5f00::1", C(RESERVED), "Segment Routing (SRv6) SIDs", true, true, true, false },
	{ "fd12:3456::1", C(PRIVATE), "Unique-Local", true, true, true, false },
	{ "fc00::1", C(PRIVATE), "Unique-Local", true, true, true, false },
	{ "fd00:ec2::254", C(PRIVATE) | C(METADATA), "Cloud metadata service", true, true, true, false },
	{ "fe80::1", C(LINK_LOCAL), "Link-Local Unicast", true, true, false, false },
	{ "ff02::1", C(MULTICAST), "Multicast", false, true, true, false },
	{ "2606:4700::1111", C(PUBLIC), "", true, true, true, true },
	{ "2001:200::1", C(PUBLIC), "", true, true, true, true },
	{ "2c0f:f248::1", C(PUBLIC), "", true, true, true, true },
	/* The IPv6 Address Space registry: only 2000::/3 is Global Unicast,
	 * the rest is reserved (or deprecated: site-local fec0::/10); and the
	 * 6bone's 3ffe::/16, returned to IANA (RFC 3701). */
	{ "fec0::1", C(RESERVED), "Deprecated (Site-Local)", false, false, false, false },
	{ "feff:ffff::1", C(RESERVED), "Deprecated (Site-Local)", false, false, false, false },
	{ "4000::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "c000::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "fe00::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "3ffe::1", C(RESERVED), "Deprecated (6bone)", false, false, false, false },
	{ "3ffe:ffff::1", C(RESERVED), "Deprecated (6bone)", false, false, false, false },
	{ "::2:0:0:1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "1::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "101::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "200::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "400::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "800::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "1fff:ffff::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "6000::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "8000::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "a000::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "e000::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "f000::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "f800::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "fbff:ffff::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "fe7f:ffff::1", C(RESERVED), "Reserved by IETF", false, false, false, false },
	{ "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", C(PUBLIC), "", true, true, true, true },
};
#undef C

Test(classify, every_registry_entry)
{
	for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++) {
		const struct reg *e = &registry[i];
		struct flowsdn_addr a = A(e->addr);
		struct flowsdn_addr_info info;

		ASSERT_OK(flowsdn_addr_info(&a, &info), e->addr);
		cr_assert(info.classes == e->classes, "%s: classes 0x%x, want 0x%x", e->addr, info.classes,
			  e->classes);
		ASSERT_STREQ(info.name, e->name, e->addr);
		cr_assert(info.source == e->src && info.destination == e->dst && info.forwardable == e->fwd &&
				  info.globally_reachable == e->global,
			  "%s: flags src=%d dst=%d fwd=%d global=%d", e->addr, info.source, info.destination,
			  info.forwardable, info.globally_reachable);
		cr_assert(flowsdn_addr_classify(&a) == e->classes);
		cr_assert(flowsdn_addr_is_public(&a) == (e->classes == FLOWSDN_ADDR_PUBLIC), "%s is_public", e->addr);
	}
}

Test(classify, prefixes)
{
	struct flowsdn_prefix p;
	unsigned int c;

	p = P("0.0.0.0/0");
	c = flowsdn_prefix_classify(&p);
	cr_assert(c & FLOWSDN_ADDR_PUBLIC && c & FLOWSDN_ADDR_PRIVATE && c & FLOWSDN_ADDR_LOOPBACK &&
		  c & FLOWSDN_ADDR_METADATA && c & FLOWSDN_ADDR_MULTICAST);
	p = P("10.0.0.0/16");
	cr_assert(flowsdn_prefix_classify(&p) == FLOWSDN_ADDR_PRIVATE);
	p = P("8.8.0.0/16");
	cr_assert(flowsdn_prefix_classify(&p) == FLOWSDN_ADDR_PUBLIC);
	p = P("169.254.0.0/16");
	cr_assert(flowsdn_prefix_classify(&p) == (FLOWSDN_ADDR_LINK_LOCAL | FLOWSDN_ADDR_METADATA));
	/* 192.0.0.0/24 is not global, but holds the global anycast /32s. */
	p = P("192.0.0.0/24");
	c = flowsdn_prefix_classify(&p);
	cr_assert(c & FLOWSDN_ADDR_PUBLIC && c & FLOWSDN_ADDR_RESERVED, "0x%x", c);
	p = P("192.0.0.0/29");
	cr_assert(!(flowsdn_prefix_classify(&p) & FLOWSDN_ADDR_PUBLIC));
	p = P("fd00::/8");
	cr_assert(flowsdn_prefix_classify(&p) == (FLOWSDN_ADDR_PRIVATE | FLOWSDN_ADDR_METADATA));
	p = P("2000::/3");
	c = flowsdn_prefix_classify(&p);
	cr_assert(c & FLOWSDN_ADDR_PUBLIC && c & FLOWSDN_ADDR_DOCUMENTATION);
	p = P("8.0.0.0/7");
	cr_assert(flowsdn_prefix_classify(&p) == FLOWSDN_ADDR_PUBLIC);

	/* IPv6 outside 2000::/3 is reserved space, never public. */
	static const char *const reserved6[] = { "fec0::/10", "4000::/2", "c000::/3", "fe00::/9", "3ffe::/16",
						 "1000::/4", "e000::/4" };
	for (size_t i = 0; i < sizeof(reserved6) / sizeof(reserved6[0]); i++) {
		p = P(reserved6[i]);
		c = flowsdn_prefix_classify(&p);
		cr_assert(c == FLOWSDN_ADDR_RESERVED, "%s: 0x%x", reserved6[i], c);
	}
	/* A space block's class only where no special-purpose entry is:
	 * 64:ff9b::/96 and ::1/128 lie in ::/8 but are not "reserved". */
	p = P("64:ff9b::/96");
	cr_assert(flowsdn_prefix_classify(&p) == (FLOWSDN_ADDR_PUBLIC | FLOWSDN_ADDR_TRANSLATION), "0x%x",
		  flowsdn_prefix_classify(&p));
	p = P("::ffff:0:0/96");
	cr_assert(flowsdn_prefix_classify(&p) == FLOWSDN_ADDR_V4_MAPPED);
	p = P("fe80::/10");
	cr_assert(flowsdn_prefix_classify(&p) == FLOWSDN_ADDR_LINK_LOCAL);
	p = P("fe80::/9");
	cr_assert(flowsdn_prefix_classify(&p) == (FLOWSDN_ADDR_LINK_LOCAL | FLOWSDN_ADDR_RESERVED));
	p = P("::/8");
	c = flowsdn_prefix_classify(&p);
	cr_assert(c & FLOWSDN_ADDR_RESERVED && c & FLOWSDN_ADDR_LOOPBACK && c & FLOWSDN_ADDR_V4_MAPPED, "0x%x", c);
	p = P("::/0");
	c = flowsdn_prefix_classify(&p);
	cr_assert(c & FLOWSDN_ADDR_PUBLIC && c & FLOWSDN_ADDR_RESERVED && c & FLOWSDN_ADDR_PRIVATE, "0x%x", c);
	/* 2000::/3 less its exceptions is public; 3ffe::/16 is one of them. */
	p = P("2400::/12");
	cr_assert(flowsdn_prefix_classify(&p) == FLOWSDN_ADDR_PUBLIC);
	p = P("3ff0::/12");
	c = flowsdn_prefix_classify(&p);
	cr_assert(c == (FLOWSDN_ADDR_PUBLIC | FLOWSDN_ADDR_RESERVED | FLOWSDN_ADDR_DOCUMENTATION), "0x%x", c);
}

Test(classify, class_names)
{
	ASSERT_STREQ(flowsdn_addr_class_name(FLOWSDN_ADDR_PRIVATE), "private", "name");
	ASSERT_STREQ(flowsdn_addr_class_name(FLOWSDN_ADDR_METADATA), "metadata", "name");
	cr_assert(flowsdn_addr_class_name(3) == NULL);
	cr_assert(flowsdn_addr_class_name(0) == NULL);
}

Test(common, strerror_covers_codes)
{
	for (int c = FLOWSDN_E_BASE; c < FLOWSDN_E_ADDR_MAX_; c++) {
		const char *s = flowsdn_strerror(-c);

		cr_assert(s && strcmp(s, "unknown flowsdn error") != 0, "code %d has no text", c);
	}
	ASSERT_STREQ(flowsdn_strerror(-ENOENT), "No such file or directory", "errno");
	ASSERT_STREQ(flowsdn_strerror(0), "success", "zero");
	ASSERT_STREQ(flowsdn_strerror(-4999), "unknown flowsdn error", "unknown");
}

static int logged;
static void log_cb(enum flowsdn_log_level level, const char *msg, void *userdata)
{
	(void)level;
	(void)msg;
	*(int *)userdata += 1;
}

Test(common, log_callback_and_version)
{
	/* The library formats nothing when no callback is set; with one set,
	 * a refused options struct is reported through it. */
	struct flowsdn_prefix_opts tiny = { .sz = 1 };
	struct flowsdn_prefix p;

	flowsdn_set_log(log_cb, FLOWSDN_LOG_DEBUG, &logged);
	ASSERT_ERR(flowsdn_prefix_parse("::/0", 4, &tiny, &p), -EINVAL, "bad opts");
	flowsdn_set_log(NULL, FLOWSDN_LOG_INFO, NULL);
	cr_assert(logged >= 1, "log callback not called");
	ASSERT_STREQ(flowsdn_version(), "0.1.0", "version");
}
