/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The baseline of bench/maglev: the paper's pseudocode, kept only here. */
#ifndef FLOWSDN_BENCH_MAGLEV_BASELINE_H
#define FLOWSDN_BENCH_MAGLEV_BASELINE_H

#include <stddef.h>
#include <stdint.h>

/* Builds the Maglev table of Eisenbud et al. (NSDI 2016), Pseudocode 1, as
 * written: the full N x M permutation matrix first, then round-robin
 * population until the table is full.  Table entries are backend indexes.
 * Returns 0, or -1 when memory runs out. */
int baseline_maglev_build(const uint32_t *offset, const uint32_t *skip, size_t n, uint32_t m, uint32_t *table);

#endif
