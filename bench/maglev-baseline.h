/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The baseline of bench/maglev: the paper's pseudocode as production
 * balancers write it, kept only here. */
#ifndef FLOWSDN_BENCH_MAGLEV_BASELINE_H
#define FLOWSDN_BENCH_MAGLEV_BASELINE_H

#include <stddef.h>
#include <stdint.h>

struct baseline_backend {
	const void *key;
	size_t key_len;
};

/* Builds the Maglev table of Eisenbud et al. (NSDI 2016), Pseudocode 1, the
 * way Katran (MaglevHash::generateHashRing) and Cilium (pkg/maglev) write
 * it: offset and skip hashed from each key (the same SipHash-2-4 as
 * flowsdn), next[] per backend, each candidate slot computed on the fly
 * as (offset + next * skip) mod M, no permutation matrix; round robin over
 * the backends until the table is full.  Entries are backend indexes.
 * Returns 0, or -1 when memory runs out. */
int baseline_maglev_build(const struct baseline_backend *be, size_t n, uint32_t m, uint64_t seed, uint32_t *table);

#endif
