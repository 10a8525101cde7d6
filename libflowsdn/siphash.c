/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SipHash-2-4, written from the specification ("SipHash: a fast
 * short-input PRF", Aumasson and Bernstein, 2012). */
#include "config.h"

#include "siphash.h"

static inline uint64_t rotl(uint64_t x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#define SIPROUND                                                        \
	do {                                                            \
		v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32); \
		v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                  \
		v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                  \
		v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32); \
	} while (0)

uint64_t flowsdn__siphash24(const void *data, size_t len, uint64_t k0, uint64_t k1)
{
	const uint8_t *p = data;
	uint64_t v0 = k0 ^ UINT64_C(0x736f6d6570736575);
	uint64_t v1 = k1 ^ UINT64_C(0x646f72616e646f6d);
	uint64_t v2 = k0 ^ UINT64_C(0x6c7967656e657261);
	uint64_t v3 = k1 ^ UINT64_C(0x7465646279746573);
	size_t full = len - len % 8;
	uint64_t m;

	for (size_t i = 0; i < full; i += 8) {
		m = load_le64(p + i, 8);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	m = load_le64(p + full, len % 8) | (uint64_t)(len & 0xff) << 56;
	v3 ^= m;
	SIPROUND;
	SIPROUND;
	v0 ^= m;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}
