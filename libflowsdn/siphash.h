/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private: SipHash-2-4 (Aumasson and Bernstein, 2012). */
#ifndef FLOWSDN_SIPHASH_H
#define FLOWSDN_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of @len bytes at @data with the 128-bit key (@k0, @k1); the
 * message is read as little-endian words, so the result is the same on
 * every host. */
uint64_t flowsdn__siphash24(const void *data, size_t len, uint64_t k0, uint64_t k1);

/* flowsdn__siphash24(data, len, k0, k1a) and (..., k0, k1b) at once. */
void flowsdn__siphash24_x2(const void *data, size_t len, uint64_t k0, uint64_t k1a, uint64_t k1b, uint64_t *ret_a,
			   uint64_t *ret_b);

#endif
