/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Baseline for bench/maglev: the Maglev paper's population loop as the
 * production balancers write it (Katran's MaglevHash::generateHashRing,
 * Cilium's pkg/maglev minus its precomputed matrix): per backend only
 * offset, skip and next; the candidate slot (offset + next * skip) mod M
 * is computed when it is needed; a slot is taken when table[c] is not the
 * empty marker; the loop stops as soon as the table is full.
 *
 * The arithmetic is 32-bit as in Katran while it is exact, that is while
 * (M - 1) + (M - 1)^2 fits 32 bits (M <= 65536).  Above that Katran's
 * uint32_t expression wraps and yields another table, so the product is
 * taken in 64 bits there (as Cilium's uint64 does) to stay correct: on
 * this kind of CPU (Intel since Ice Lake, AMD Zen) a 64-bit divide costs
 * about what a 32-bit one does.  Hashing is the same SipHash-2-4 as
 * flowsdn_maglev_permutation(), so both sides build the same table.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "maglev-baseline.h"
#include "siphash.h"

int baseline_maglev_build(const struct baseline_backend *be, size_t n, uint32_t m, uint64_t seed, uint32_t *table)
{
	uint32_t *perm = malloc(2 * n * sizeof(*perm));
	uint32_t *next = calloc(n, sizeof(*next));
	uint32_t filled = 0;

	if (!perm || !next) {
		free(perm);
		free(next);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		perm[2 * i] = (uint32_t)(flowsdn__siphash24(be[i].key, be[i].key_len, seed, 1) % m);
		perm[2 * i + 1] = (uint32_t)(flowsdn__siphash24(be[i].key, be[i].key_len, seed, 2) % (m - 1) + 1);
	}
	for (uint32_t j = 0; j < m; j++)
		table[j] = UINT32_MAX;
	if (m <= 65536) {
		for (;;) {
			for (size_t i = 0; i < n; i++) {
				uint32_t offset = perm[2 * i], skip = perm[2 * i + 1];
				uint32_t c = (offset + next[i] * skip) % m;

				while (table[c] != UINT32_MAX) {
					next[i]++;
					c = (offset + next[i] * skip) % m;
				}
				table[c] = (uint32_t)i;
				next[i]++;
				if (++filled == m)
					goto done;
			}
		}
	} else {
		for (;;) {
			for (size_t i = 0; i < n; i++) {
				uint32_t offset = perm[2 * i], skip = perm[2 * i + 1];
				uint32_t c = (uint32_t)((offset + (uint64_t)next[i] * skip) % m);

				while (table[c] != UINT32_MAX) {
					next[i]++;
					c = (uint32_t)((offset + (uint64_t)next[i] * skip) % m);
				}
				table[c] = (uint32_t)i;
				next[i]++;
				if (++filled == m)
					goto done;
			}
		}
	}
done:
	free(perm);
	free(next);
	return 0;
}
