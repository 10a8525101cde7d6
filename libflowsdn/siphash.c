/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SipHash-2-4, written from the specification ("SipHash: a fast
 * short-input PRF", Aumasson and Bernstein, 2012). */
#include "config.h"

#include <endian.h>
#include <string.h>

#include "siphash.h"

static inline uint64_t rotl(uint64_t x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

/* The @n <= 8 bytes at @p as a little-endian word (one load for 8). */
static inline uint64_t load_le64(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	memcpy(&v, p, n);
	return le64toh(v);
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

/* Two keys sharing k0 over the same message, computed in lockstep: the
 * two dependency chains interleave, the message words are loaded once. */
void flowsdn__siphash24_x2(const void *data, size_t len, uint64_t k0, uint64_t k1a, uint64_t k1b, uint64_t *ret_a,
			   uint64_t *ret_b)
{
	const uint8_t *p = data;
	uint64_t a0 = k0 ^ UINT64_C(0x736f6d6570736575), b0 = a0;
	uint64_t a1 = k1a ^ UINT64_C(0x646f72616e646f6d), b1 = k1b ^ UINT64_C(0x646f72616e646f6d);
	uint64_t a2 = k0 ^ UINT64_C(0x6c7967656e657261), b2 = a2;
	uint64_t a3 = k1a ^ UINT64_C(0x7465646279746573), b3 = k1b ^ UINT64_C(0x7465646279746573);
	size_t full = len - len % 8;
	uint64_t m;

#define SIPROUND2                                                                                  \
	do {                                                                                       \
		uint64_t v0 = a0, v1 = a1, v2 = a2, v3 = a3;                                       \
		SIPROUND;                                                                          \
		a0 = v0, a1 = v1, a2 = v2, a3 = v3;                                                \
		v0 = b0, v1 = b1, v2 = b2, v3 = b3;                                                \
		SIPROUND;                                                                          \
		b0 = v0, b1 = v1, b2 = v2, b3 = v3;                                                \
	} while (0)
#define ABSORB2(word)                                                                              \
	do {                                                                                       \
		m = (word);                                                                        \
		a3 ^= m;                                                                           \
		b3 ^= m;                                                                           \
		SIPROUND2;                                                                         \
		SIPROUND2;                                                                         \
		a0 ^= m;                                                                           \
		b0 ^= m;                                                                           \
	} while (0)
	for (size_t i = 0; i < full; i += 8)
		ABSORB2(load_le64(p + i, 8));
	ABSORB2(load_le64(p + full, len % 8) | (uint64_t)(len & 0xff) << 56);
#undef ABSORB2
	a2 ^= 0xff;
	b2 ^= 0xff;
	SIPROUND2;
	SIPROUND2;
	SIPROUND2;
	SIPROUND2;
#undef SIPROUND2
	*ret_a = a0 ^ a1 ^ a2 ^ a3;
	*ret_b = b0 ^ b1 ^ b2 ^ b3;
}
