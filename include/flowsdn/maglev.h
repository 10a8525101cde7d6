/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/maglev.h> — Maglev consistent-hashing lookup tables.
 *
 * Builds the lookup table of "Maglev: A Fast and Reliable Software Network
 * Load Balancer" (Eisenbud et al., NSDI 2016, section 3.4): M slots (M
 * prime), each holding the id of one backend, such that every backend
 * gets a share proportional to its weight and removing or adding one
 * backend moves few slots.
 *
 * Backend permutation.  Backend b, identified by its key bytes, visits the
 * slots offset, offset + skip, offset + 2 skip, ... (mod M) where
 *   offset = SipHash-2-4(key; k0 = seed, k1 = 1) mod M
 *   skip   = SipHash-2-4(key; k0 = seed, k1 = 2) mod (M - 1) + 1
 * SipHash reads the key as little-endian words, so the table depends only
 * on the key bytes, the weights, M and the seed: every node computes the
 * same table whatever its byte order.
 *
 * Population.  Backends are sorted by key (memcmp order, shorter first on
 * a common prefix), so the input order does not matter.  Backend i gets
 * exactly q_i = floor(M w_i / W) slots plus one for the
 * (M - sum q) backends with the largest remainders (ties: lower sorted
 * position first); weight 0 gets no slot.  Backends take turns in rounds
 * as in the paper, each turn claiming the next free slot of its
 * permutation; backend i has its k-th turn in round
 * floor((k - 1) q_max / q_i) + 1, so with equal weights this is exactly
 * the paper's round robin (no backend more than one slot ahead of
 * another) and with unequal weights turns are spread evenly over the
 * rounds.  Scratch memory is O(N + M); no N x M permutation matrix.
 *
 * Tables are arrays of uint32_t backend ids owned by the caller.
 */
#ifndef FLOWSDN_MAGLEV_H
#define FLOWSDN_MAGLEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLOWSDN_MAGLEV_DEFAULT_SIZE 16381u
#define FLOWSDN_MAGLEV_MAX_SIZE 655373u
/* Seed used when the options give 0 (ASCII "flowsdn1"). */
#define FLOWSDN_MAGLEV_DEFAULT_SEED UINT64_C(0x666c6f7773646e31)
/* Longest backend key in bytes. */
#define FLOWSDN_MAGLEV_MAX_KEY 256
/* The "no backend" id in a diff against no previous table. */
#define FLOWSDN_MAGLEV_NONE UINT32_MAX

enum flowsdn_maglev_error {
	FLOWSDN_E_MAGLEV_BASE = FLOWSDN_E_BASE + 200,
	FLOWSDN_E_MAGLEV_SIZE = FLOWSDN_E_MAGLEV_BASE,  /* table size is not a supported prime */
	FLOWSDN_E_MAGLEV_NO_BACKEND,   /* no backend with a weight above 0 */
	FLOWSDN_E_MAGLEV_DUPLICATE,    /* two backends with the same key */
	FLOWSDN_E_MAGLEV_KEY,          /* empty key or longer than FLOWSDN_MAGLEV_MAX_KEY */
	FLOWSDN_E_MAGLEV_TOO_MANY,     /* more backends than slots */
	FLOWSDN_E_MAGLEV_PERMUTATION,  /* offset or skip out of range */
	FLOWSDN_E_MAGLEV_MAX_,         /* end of the block (not an error) */
};

struct flowsdn_maglev_backend {
	const void *key;  /* identifies the backend, e.g. "10.0.0.5:8080"; 1..FLOWSDN_MAGLEV_MAX_KEY bytes */
	size_t key_len;
	uint32_t weight;  /* relative share; 0 = no slot */
	uint32_t id;      /* the value stored in the backend's slots */
};

struct flowsdn_maglev_opts {
	size_t sz;
	uint64_t seed;    /* 0 = FLOWSDN_MAGLEV_DEFAULT_SEED; must be equal on every node */
};

/* True for the supported table sizes: 251, 509, 1021, 2039, 4093, 8191,
 * 16381, 32749, 65521, 131071 (those Cilium accepts), 65537 and 655373. */
FLOWSDN_API bool flowsdn_maglev_size_supported(uint32_t m);

/* The permutation of a key for table size @m (any prime 2..MAX_SIZE, see
 * above for the hash).  -EINVAL for a NULL pointer,
 * -FLOWSDN_E_MAGLEV_KEY, -FLOWSDN_E_MAGLEV_SIZE. */
FLOWSDN_API int flowsdn_maglev_permutation(const void *key, size_t key_len, uint32_t m, uint64_t seed,
					   uint32_t *ret_offset, uint32_t *ret_skip);

/* Fills @ret_table (room for @m entries, m a supported size) with the
 * backend ids.  @opts may be NULL.  Errors: -EINVAL, -ENOMEM,
 * -FLOWSDN_E_MAGLEV_SIZE, _NO_BACKEND, _DUPLICATE, _KEY, _TOO_MANY (@n
 * above @m).  @ret_table is written only on success. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maglev_build(const struct flowsdn_maglev_backend *backends, size_t n,
						 uint32_t m, const struct flowsdn_maglev_opts *opts,
						 uint32_t *ret_table);

/* The same population from given permutations, for tests and other hash
 * functions: backend i (in the given order, no sorting) has @offset[i] <
 * @m, 1 <= @skip[i] < @m and @weight[i] (@weight NULL: all 1); the table
 * holds backend indexes 0..n-1.  @m may be any prime 2..MAX_SIZE (the
 * paper's example uses 7).  Errors as flowsdn_maglev_build(), plus
 * -FLOWSDN_E_MAGLEV_PERMUTATION. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maglev_build_permutations(const uint32_t *offset, const uint32_t *skip,
							      const uint32_t *weight, size_t n, uint32_t m,
							      uint32_t *ret_table);

/* One slot that differs between two tables. */
struct flowsdn_maglev_change {
	uint32_t slot;
	uint32_t old_id;  /* FLOWSDN_MAGLEV_NONE when there was no old table */
	uint32_t new_id;
};

/* The slots of @new_table (@m entries) that differ from @old_table (NULL:
 * every slot), in slot order, so that a datapath map gets only those
 * writes.  *ret is a malloc'd array of *ret_n entries freed by the caller
 * (NULL when nothing changed).  Errors: -EINVAL, -ENOMEM; outputs
 * untouched on failure. */
FLOWSDN_API int flowsdn_maglev_diff(const uint32_t *old_table, const uint32_t *new_table, uint32_t m,
				    struct flowsdn_maglev_change **ret, size_t *ret_n);

#ifdef __cplusplus
}
#endif

#endif
