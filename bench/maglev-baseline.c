/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Baseline for bench/maglev: a straightforward implementation of the Maglev
 * paper's population pseudocode.  permutation[i][j] = (offset_i + j skip_i)
 * mod M is materialised for every backend (N x M entries), next[] and
 * entry[] follow the paper, and the loop stops when the table is full.
 * Computed in 64 bits so that it is correct, not artificially slow or fast.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "maglev-baseline.h"

int baseline_maglev_build(const uint32_t *offset, const uint32_t *skip, size_t n, uint32_t m, uint32_t *table)
{
	uint32_t *permutation = malloc(n * (size_t)m * sizeof(*permutation));
	uint32_t *next = calloc(n, sizeof(*next));
	uint32_t filled = 0;

	if (!permutation || !next) {
		free(permutation);
		free(next);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < m; j++)
			permutation[i * m + j] = (uint32_t)(((uint64_t)offset[i] + (uint64_t)j * skip[i]) % m);
	for (uint32_t j = 0; j < m; j++)
		table[j] = UINT32_MAX;
	while (true) {
		for (size_t i = 0; i < n; i++) {
			uint32_t c = permutation[i * m + next[i]];

			while (table[c] != UINT32_MAX) {
				next[i]++;
				c = permutation[i * m + next[i]];
			}
			table[c] = (uint32_t)i;
			next[i]++;
			filled++;
			if (filled == m)
				goto done;
		}
	}
done:
	free(permutation);
	free(next);
	return 0;
}
