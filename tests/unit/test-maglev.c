/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Maglev: the paper's Table 1, SipHash reference vectors, exact weighted
 * shares, order independence, disruption bounds, every supported size
 * against the paper's formula, the diff API and bad input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <flowsdn/maglev.h>

#include "helpers.h"
#include "siphash.h"

/* NSDI 2016, Table 1: M = 7, B0 (offset 3, skip 4), B1 (0, 2), B2 (3, 1). */
Test(maglev, paper_table_1)
{
	const uint32_t offset[] = { 3, 0, 3 }, skip[] = { 4, 2, 1 };
	const uint32_t before[7] = { 1, 0, 1, 0, 2, 2, 0 };
	/* After B1 is removed: B0 and B2 (indexes 0 and 1 now). */
	const uint32_t offset2[] = { 3, 3 }, skip2[] = { 4, 1 };
	const uint32_t after[7] = { 0, 0, 0, 0, 1, 1, 1 };
	uint32_t t[7];

	ASSERT_OK(flowsdn_maglev_build_permutations(offset, skip, NULL, 3, 7, t), "table 1 before");
	for (int i = 0; i < 7; i++)
		cr_assert_eq(t[i], before[i], "before: slot %d holds B%u, paper says B%u", i, t[i], before[i]);
	ASSERT_OK(flowsdn_maglev_build_permutations(offset2, skip2, NULL, 2, 7, t), "table 1 after");
	for (int i = 0; i < 7; i++)
		cr_assert_eq(t[i], after[i], "after: slot %d holds index %u, paper says %u", i, t[i], after[i]);
}

/* Reference vectors of the SipHash paper (key 00..0f, message 00..n-1). */
Test(maglev, siphash_reference_vectors)
{
	uint8_t msg[64];
	const uint64_t k0 = UINT64_C(0x0706050403020100), k1 = UINT64_C(0x0f0e0d0c0b0a0908);

	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	cr_assert_eq(flowsdn__siphash24(msg, 0, k0, k1), UINT64_C(0x726fdb47dd0e0e31));
	cr_assert_eq(flowsdn__siphash24(msg, 8, k0, k1), UINT64_C(0x93f5f5799a932462));
	cr_assert_eq(flowsdn__siphash24(msg, 15, k0, k1), UINT64_C(0xa129ca6149be45e5));
	cr_assert_eq(flowsdn__siphash24(msg, 63, k0, k1), UINT64_C(0x958a324ceb064572));
	/* The two-key form gives both single results, at every length. */
	for (size_t len = 0; len <= 64; len++) {
		uint64_t a, b;

		flowsdn__siphash24_x2(msg, len, k0, k1, 2, &a, &b);
		cr_assert_eq(a, flowsdn__siphash24(msg, len, k0, k1), "x2 key a, %zu bytes", len);
		cr_assert_eq(b, flowsdn__siphash24(msg, len, k0, 2), "x2 key b, %zu bytes", len);
	}
	{
		uint64_t a, b;

		flowsdn__siphash24_x2(msg, 15, k0, k1, k1, &a, &b);
		cr_assert_eq(a, UINT64_C(0xa129ca6149be45e5));
		cr_assert_eq(b, UINT64_C(0xa129ca6149be45e5));
	}
}

/* Values computed independently (a separate SipHash implementation) so
 * that every node, whatever its byte order, agrees. */
Test(maglev, permutation_is_stable)
{
	uint32_t off, skip;

	ASSERT_OK(flowsdn_maglev_permutation("10.0.0.1:80", 11, 16381, FLOWSDN_MAGLEV_DEFAULT_SEED, &off, &skip),
		  "permutation");
	cr_assert_eq(off, 1142);
	cr_assert_eq(skip, 14000);
	ASSERT_OK(flowsdn_maglev_permutation("10.0.0.1:80", 11, 16381, 42, &off, &skip), "other seed");
	cr_assert(off != 1142 || skip != 14000, "the seed must change the permutation");
}

static char keys[1000][32];

static void make_backends(struct flowsdn_maglev_backend *be, size_t n, uint32_t weight)
{
	for (size_t i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "10.1.%zu.%zu:443", i / 256, i % 256);
		be[i] = (struct flowsdn_maglev_backend){
			.key = keys[i], .key_len = strlen(keys[i]), .weight = weight, .id = (uint32_t)(1000 + i),
		};
	}
}

static void count_ids(const uint32_t *t, uint32_t m, uint32_t *counts, size_t n)
{
	memset(counts, 0, n * sizeof(*counts));
	for (uint32_t i = 0; i < m; i++) {
		cr_assert(t[i] >= 1000 && t[i] < 1000 + n, "slot %u holds unknown id %u", i, t[i]);
		counts[t[i] - 1000]++;
	}
}

Test(maglev, equal_weights_balanced)
{
	static const size_t ns[] = { 2, 7, 100, 1000 };
	static struct flowsdn_maglev_backend be[1000];
	static uint32_t t[65537], counts[1000];

	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		uint32_t lo = UINT32_MAX, hi = 0;

		make_backends(be, ns[k], 7);
		ASSERT_OK(flowsdn_maglev_build(be, ns[k], 65537, NULL, t), "build");
		count_ids(t, 65537, counts, ns[k]);
		for (size_t i = 0; i < ns[k]; i++) {
			lo = counts[i] < lo ? counts[i] : lo;
			hi = counts[i] > hi ? counts[i] : hi;
		}
		cr_assert(hi - lo <= 1, "N=%zu: counts range %u..%u, more than one apart", ns[k], lo, hi);
		cr_assert_eq(lo, 65537 / ns[k]);
	}
}

Test(maglev, weights_exact_counts)
{
	struct flowsdn_maglev_backend be[4];
	static uint32_t t[65537];
	uint32_t counts[4];
	const uint32_t w[4] = { 1, 2, 3, 4 };
	/* 65537 w / 10 = 6553.7, 13107.4, 19661.1, 26214.8; the 2 leftover
	 * slots go to the largest remainders (.8 and .7). */
	const uint32_t want[4] = { 6554, 13107, 19661, 26215 };

	make_backends(be, 4, 0);
	for (int i = 0; i < 4; i++)
		be[i].weight = w[i];
	ASSERT_OK(flowsdn_maglev_build(be, 4, 65537, NULL, t), "build");
	count_ids(t, 65537, counts, 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(counts[i], want[i], "weight %u: %u slots, want %u", w[i], counts[i], want[i]);

	/* Weight 0 gets nothing: 251 * 5/8 = 156.875, 251 * 3/8 = 94.125. */
	be[0].weight = 5;
	be[1].weight = 0;
	be[2].weight = 3;
	ASSERT_OK(flowsdn_maglev_build(be, 3, 251, NULL, t), "build with weight 0");
	count_ids(t, 251, counts, 3);
	cr_assert_eq(counts[0], 157);
	cr_assert_eq(counts[1], 0);
	cr_assert_eq(counts[2], 94);
}

Test(maglev, input_order_does_not_matter)
{
	static struct flowsdn_maglev_backend be[100], shuffled[100];
	static uint32_t a[16381], b[16381];

	make_backends(be, 100, 1);
	for (size_t i = 0; i < 100; i++)
		be[i].weight = (uint32_t)(i % 5 + 1);
	for (size_t i = 0; i < 100; i++)
		shuffled[i] = be[(i * 37 + 11) % 100]; /* 37 is coprime with 100 */
	ASSERT_OK(flowsdn_maglev_build(be, 100, FLOWSDN_MAGLEV_DEFAULT_SIZE, NULL, a), "build");
	ASSERT_OK(flowsdn_maglev_build(shuffled, 100, FLOWSDN_MAGLEV_DEFAULT_SIZE, NULL, b), "build shuffled");
	cr_assert(memcmp(a, b, sizeof(a)) == 0, "same backends in another order gave another table");
}

static double changed_fraction(size_t n, size_t removed)
{
	static struct flowsdn_maglev_backend be[1000], less[1000];
	static uint32_t a[65537], b[65537];
	size_t k = 0, changed = 0;

	make_backends(be, n, 1);
	for (size_t i = 0; i < n; i++)
		if (i != removed)
			less[k++] = be[i];
	cr_assert(flowsdn_maglev_build(be, n, 65537, NULL, a) == 0);
	cr_assert(flowsdn_maglev_build(less, n - 1, 65537, NULL, b) == 0);
	for (size_t i = 0; i < 65537; i++)
		changed += a[i] != b[i];
	return (double)changed / 65537;
}

/*
 * Removing one of N backends at M = 65537.  The bounds (10.3 %, 1.6 %,
 * 0.68 %) are about what the paper's algorithm itself achieves: its
 * disruption varies with the backend removed (for these keys, single
 * removals range 10.17-10.22 %, 1.55-1.63 %, 0.63-0.70 %), and our
 * equal-weight tables are exactly the paper's.  So the mean over ten
 * removals (every backend for N = 10, every tenth or hundredth otherwise)
 * must meet the bound and no single removal may exceed it by more than
 * 5 %; and at least the removed backend's share must move.
 */
Test(maglev, removal_disruption_bounds)
{
	static const struct { size_t n; double bound; } cases[] = {
		{ 10, 0.103 }, { 100, 0.016 }, { 1000, 0.0068 },
	};

	for (size_t c = 0; c < 3; c++) {
		size_t n = cases[c].n, step = n / 10;
		double sum = 0;

		for (size_t r = 0; r < n; r += step) {
			double f = changed_fraction(n, r);

			sum += f;
			cr_assert(f <= cases[c].bound * 1.05, "N=%zu, removing #%zu changed %.4f%% > %.2f%% + 5%%", n, r,
				  f * 100, cases[c].bound * 100);
			cr_assert(f >= 1.0 / (double)n - 1e-3, "N=%zu: %.4f%% changed, less than the removed share", n,
				  f * 100);
		}
		cr_assert(sum / 10 <= cases[c].bound, "N=%zu: mean change %.4f%% > %.2f%%", n, sum / 10 * 100,
			  cases[c].bound * 100);
	}
}

/* The paper's loop with permutation[j] = (offset + j skip) mod M in 64-bit
 * arithmetic, computed on the fly: equal weights must give our table at
 * every supported size, including 655373 where j * skip exceeds 32 bits. */
static void reference(const uint32_t *offset, const uint32_t *skip, size_t n, uint32_t m, uint32_t *t)
{
	uint64_t next[8] = { 0 };
	uint32_t filled = 0;

	for (uint32_t i = 0; i < m; i++)
		t[i] = UINT32_MAX;
	for (;;) {
		for (size_t i = 0; i < n; i++) {
			uint32_t c = (uint32_t)(((uint64_t)offset[i] + next[i] * skip[i]) % m);

			while (t[c] != UINT32_MAX) {
				next[i]++;
				c = (uint32_t)(((uint64_t)offset[i] + next[i] * skip[i]) % m);
			}
			t[c] = (uint32_t)i;
			next[i]++;
			if (++filled == m)
				return;
		}
	}
}

Test(maglev, every_size_matches_the_paper)
{
	static const uint32_t sizes[] = { 251, 509, 1021, 2039, 4093, 8191, 16381, 32749, 65521, 65537, 131071, 655373 };
	static uint32_t ours[655373], ref[655373];
	struct flowsdn_maglev_backend be[5];
	uint32_t offset[5], skip[5];

	make_backends(be, 5, 3);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t m = sizes[s];

		cr_assert(flowsdn_maglev_size_supported(m), "%u supported", m);
		for (size_t i = 0; i < 5; i++) {
			be[i].id = (uint32_t)i; /* keys sort in index order */
			ASSERT_OK(flowsdn_maglev_permutation(be[i].key, be[i].key_len, m, FLOWSDN_MAGLEV_DEFAULT_SEED,
							     &offset[i], &skip[i]), "permutation");
			cr_assert(offset[i] < m && skip[i] >= 1 && skip[i] < m);
		}
		ASSERT_OK(flowsdn_maglev_build(be, 5, m, NULL, ours), "build");
		reference(offset, skip, 5, m, ref);
		cr_assert(memcmp(ours, ref, m * sizeof(*ours)) == 0, "M=%u differs from the paper's loop", m);
	}
	cr_assert(!flowsdn_maglev_size_supported(7));
	cr_assert(!flowsdn_maglev_size_supported(65536));
	cr_assert(!flowsdn_maglev_size_supported(655371));
}

Test(maglev, diff_only_changed_slots)
{
	static struct flowsdn_maglev_backend be[10];
	static uint32_t a[251], b[251];
	struct flowsdn_maglev_change *ch = NULL;
	size_t n = 0, expect = 0, k = 0;

	make_backends(be, 10, 1);
	ASSERT_OK(flowsdn_maglev_build(be, 10, 251, NULL, a), "build");
	be[3].weight = 0;
	ASSERT_OK(flowsdn_maglev_build(be, 10, 251, NULL, b), "build without #3");
	for (int i = 0; i < 251; i++)
		expect += a[i] != b[i];
	cr_assert(expect > 0);
	ASSERT_OK(flowsdn_maglev_diff(a, b, 251, &ch, &n), "diff");
	cr_assert_eq(n, expect);
	for (uint32_t i = 0; i < 251; i++) {
		if (a[i] == b[i])
			continue;
		cr_assert_eq(ch[k].slot, i);
		cr_assert_eq(ch[k].old_id, a[i]);
		cr_assert_eq(ch[k].new_id, b[i]);
		cr_assert_neq(ch[k].new_id, 1003u, "a weight-0 backend got slot %u", i);
		k++;
	}
	free(ch);

	ASSERT_OK(flowsdn_maglev_diff(a, a, 251, &ch, &n), "diff of equal tables");
	cr_assert(n == 0 && ch == NULL);
	ASSERT_OK(flowsdn_maglev_diff(NULL, a, 251, &ch, &n), "diff from nothing");
	cr_assert_eq(n, 251);
	cr_assert_eq(ch[250].slot, 250);
	cr_assert_eq(ch[250].old_id, FLOWSDN_MAGLEV_NONE);
	cr_assert_eq(ch[250].new_id, a[250]);
	free(ch);
	ASSERT_ERR(flowsdn_maglev_diff(a, NULL, 251, &ch, &n), -EINVAL, "no new table");
}

Test(maglev, bad_input)
{
	struct flowsdn_maglev_backend be[3];
	uint32_t t[251], ok[251];
	const uint32_t off[] = { 0 }, skip0[] = { 0 }, skip7[] = { 7 }, off7[] = { 7 }, one[] = { 1 };

	make_backends(be, 3, 1);
	for (int i = 0; i < 251; i++)
		t[i] = ok[i] = 0xdeadbeef;
	ASSERT_ERR(flowsdn_maglev_build(be, 3, 7, NULL, t), -FLOWSDN_E_MAGLEV_SIZE, "unsupported size");
	ASSERT_ERR(flowsdn_maglev_build(be, 3, 65536, NULL, t), -FLOWSDN_E_MAGLEV_SIZE, "not prime");
	ASSERT_ERR(flowsdn_maglev_build(NULL, 3, 251, NULL, t), -EINVAL, "no backends");
	ASSERT_ERR(flowsdn_maglev_build(be, 0, 251, NULL, t), -EINVAL, "zero backends");
	be[1].key = be[0].key;
	be[1].key_len = be[0].key_len;
	ASSERT_ERR(flowsdn_maglev_build(be, 3, 251, NULL, t), -FLOWSDN_E_MAGLEV_DUPLICATE, "duplicate key");
	make_backends(be, 3, 1);
	be[2].key_len = 0;
	ASSERT_ERR(flowsdn_maglev_build(be, 3, 251, NULL, t), -FLOWSDN_E_MAGLEV_KEY, "empty key");
	be[2].key_len = FLOWSDN_MAGLEV_MAX_KEY + 1;
	ASSERT_ERR(flowsdn_maglev_build(be, 3, 251, NULL, t), -FLOWSDN_E_MAGLEV_KEY, "long key");
	make_backends(be, 3, 0);
	ASSERT_ERR(flowsdn_maglev_build(be, 3, 251, NULL, t), -FLOWSDN_E_MAGLEV_NO_BACKEND, "all weights 0");
	cr_assert(memcmp(t, ok, sizeof(t)) == 0, "table written on failure");

	ASSERT_ERR(flowsdn_maglev_build_permutations(off, skip0, NULL, 1, 7, t), -FLOWSDN_E_MAGLEV_PERMUTATION, "skip 0");
	ASSERT_ERR(flowsdn_maglev_build_permutations(off, skip7, NULL, 1, 7, t), -FLOWSDN_E_MAGLEV_PERMUTATION, "skip M");
	ASSERT_ERR(flowsdn_maglev_build_permutations(off7, one, NULL, 1, 7, t), -FLOWSDN_E_MAGLEV_PERMUTATION, "offset M");
	ASSERT_ERR(flowsdn_maglev_build_permutations(off, one, NULL, 1, 9, t), -FLOWSDN_E_MAGLEV_SIZE, "9 not prime");
	ASSERT_ERR(flowsdn_maglev_build_permutations(off, one, NULL, 1, 655379, t), -FLOWSDN_E_MAGLEV_SIZE, "above max");
	ASSERT_ERR(flowsdn_maglev_permutation("k", 1, 10, 0, &t[0], &t[1]), -FLOWSDN_E_MAGLEV_SIZE, "permutation size");
	cr_assert(memcmp(t, ok, sizeof(t)) == 0, "table written on failure");
	ASSERT_STREQ(flowsdn_strerror(-FLOWSDN_E_MAGLEV_DUPLICATE), "two Maglev backends have the same key", "strerror");
}

Test(maglev, more_backends_than_slots)
{
	static struct flowsdn_maglev_backend be[300];
	uint32_t t[251];

	make_backends(be, 300, 1);
	ASSERT_ERR(flowsdn_maglev_build(be, 300, 251, NULL, t), -FLOWSDN_E_MAGLEV_TOO_MANY, "300 > 251");
	ASSERT_OK(flowsdn_maglev_build(be, 251, 251, NULL, t), "one slot each");
	for (int i = 0; i < 251; i++)
		for (int k = 0; k < i; k++)
			cr_assert_neq(t[i], t[k], "slots %d and %d share backend %u", i, k, t[i]);
}

/* FNV-1a over the table's entries as little-endian bytes. */
static uint64_t table_digest(const uint32_t *t, uint32_t m)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (uint32_t i = 0; i < m; i++)
		for (int b = 0; b < 4; b++) {
			h ^= t[i] >> (8 * b) & 0xff;
			h *= UINT64_C(0x100000001b3);
		}
	return h;
}

/*
 * The tables themselves, pinned: digests of tables built by the straight
 * calendar-queue implementation (before the build was made faster), for
 * equal, near-equal, skewed (1 and 1000) and zero weights, so that any
 * change of the fill (fast paths, schedule arithmetic) that moves a single
 * slot fails here.  A table is shared by every node: it may never change.
 */
Test(maglev, tables_pinned)
{
	static const struct { size_t n; uint32_t m; int kind; uint64_t digest; } cases[] = {
		{ 100, 16381, 0, UINT64_C(0xea67c3d64902f01d) },
		{ 4, 65537, 1, UINT64_C(0x72bca1505089f478) },
		{ 50, 4093, 2, UINT64_C(0xb6f8014f5868a8f0) },
		{ 1000, 65537, 3, UINT64_C(0x976ef375991168f6) },
		{ 7, 251, 4, UINT64_C(0x2412af0f99b22f1e) },
		{ 300, 131071, 5, UINT64_C(0xdbad56f9c2dce409) },
	};
	static struct flowsdn_maglev_backend be[1000];
	static uint32_t t[131071];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		make_backends(be, cases[c].n, 1);
		for (size_t i = 0; i < cases[c].n; i++) {
			switch (cases[c].kind) {
			case 0: be[i].weight = (uint32_t)(i % 5 + 1); break;
			case 1: be[i].weight = (uint32_t)(i + 1); break;
			case 2: be[i].weight = i % 7 == 0 ? 1000 : 1; break;
			case 3: be[i].weight = 1; break;
			case 4: be[i].weight = i == 3 ? 0 : (uint32_t)(i * 3 + 1); break;
			default: be[i].weight = (uint32_t)(i * i % 17); break;
			}
		}
		ASSERT_OK(flowsdn_maglev_build(be, cases[c].n, cases[c].m, NULL, t), "build");
		cr_assert_eq(table_digest(t, cases[c].m), cases[c].digest, "N=%zu M=%u kind %d: table digest %#llx, pinned %#llx",
			     cases[c].n, cases[c].m, cases[c].kind, (unsigned long long)table_digest(t, cases[c].m),
			     (unsigned long long)cases[c].digest);
	}
}

/* memcmp order, shorter first on a common prefix: the documented order. */
static int key_cmp(const void *x, const void *y)
{
	const struct flowsdn_maglev_backend *a = x, *b = y;
	size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
	int c = memcmp(a->key, b->key, n);

	return c ? c : (a->key_len > b->key_len) - (a->key_len < b->key_len);
}

/*
 * Keys that the sort must order by all their bytes: 40-byte keys sharing
 * their first 30, keys that differ only by trailing zero bytes ("k",
 * "k\0", "k\0\0"), bytes above 0x7f and keys shorter than 8 bytes, given
 * in a scrambled order.  The table must be the one the paper's loop
 * builds from the keys in memcmp order, and an exact duplicate of a long
 * key is still found.
 */
Test(maglev, sort_orders_keys_by_every_byte)
{
	static uint8_t kb[64][40];
	static struct flowsdn_maglev_backend be[64], sorted[64];
	static uint32_t ours[4093], ref[4093], offset[64], skip[64];
	size_t n = 0;

	for (int i = 0; i < 24; i++, n++) {
		memset(kb[n], 'p', 30);
		for (int j = 30; j < 40; j++)
			kb[n][j] = (uint8_t)((i * 37 + j * 11) % 256);
		be[n] = (struct flowsdn_maglev_backend){ .key = kb[n], .key_len = 40 };
	}
	for (int i = 0; i < 3; i++, n++) {
		kb[n][0] = 'k';
		be[n] = (struct flowsdn_maglev_backend){ .key = kb[n], .key_len = (size_t)i + 1 };
	}
	for (int i = 0; i < 20; i++, n++) {
		kb[n][0] = (uint8_t)(0xf0 + i % 16);
		kb[n][1] = (uint8_t)(i * 13);
		be[n] = (struct flowsdn_maglev_backend){ .key = kb[n], .key_len = (size_t)(i % 7) + 1 };
	}
	for (int i = 0; i < 17; i++, n++) {
		memset(kb[n], 0, 20);
		kb[n][15] = (uint8_t)i;
		kb[n][17] = (uint8_t)(255 - i);
		be[n] = (struct flowsdn_maglev_backend){ .key = kb[n], .key_len = 16 + (size_t)(i % 4) };
	}
	cr_assert_eq(n, 64);
	memcpy(sorted, be, sizeof(be));
	qsort(sorted, n, sizeof(*sorted), key_cmp);
	for (size_t i = 0; i < n; i++) {
		cr_assert(i == 0 || key_cmp(&sorted[i - 1], &sorted[i]) < 0, "test keys are distinct");
		sorted[i].id = (uint32_t)i;
		sorted[i].weight = 1;
		ASSERT_OK(flowsdn_maglev_permutation(sorted[i].key, sorted[i].key_len, 4093, FLOWSDN_MAGLEV_DEFAULT_SEED,
						     &offset[i], &skip[i]), "permutation");
	}
	ASSERT_OK(flowsdn_maglev_build_permutations(offset, skip, NULL, n, 4093, ref), "reference");
	/* The same backends scrambled (7 is coprime with 64). */
	for (size_t i = 0; i < n; i++)
		be[i] = sorted[(i * 7 + 3) % n];
	ASSERT_OK(flowsdn_maglev_build(be, n, 4093, NULL, ours), "build");
	cr_assert(memcmp(ours, ref, sizeof(ours)) == 0, "the table is not the one of the keys in memcmp order");

	be[5].key = be[9].key;
	be[5].key_len = be[9].key_len;
	ASSERT_ERR(flowsdn_maglev_build(be, n, 4093, NULL, ours), -FLOWSDN_E_MAGLEV_DUPLICATE, "duplicate key");
}
