/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/addr.h> — IPv4 and IPv6 addresses and prefixes.
 *
 * Addresses and prefixes are plain values (no allocation).  Text is parsed
 * strictly and formatted canonically (RFC 5952 for IPv6).  The classifier
 * follows the IANA IPv4 and IPv6 Special-Purpose Address Registries
 * (RFC 6890 and its updates) plus the ranges a cloud node cares about
 * (multicast, cloud metadata endpoints), and for IPv6 the IANA IPv6
 * Address Space registry: only global unicast (2000::/3) can be public;
 * the other blocks are reserved (fec0::/10 deprecated site-local), as is
 * the returned 6bone block 3ffe::/16.
 */
#ifndef FLOWSDN_ADDR_H
#define FLOWSDN_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Address families (the values of AF_INET and AF_INET6 on Linux). */
#define FLOWSDN_AF_INET 2
#define FLOWSDN_AF_INET6 10

/* Longest canonical text, including the terminating NUL. */
#define FLOWSDN_ADDR_STRLEN 46   /* "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255" */
#define FLOWSDN_PREFIX_STRLEN 50 /* address + "/128" */

/* One address.  @bytes is in network order; an IPv4 address uses
 * bytes[0..3] and keeps bytes[4..15] zero, so two equal addresses are
 * equal with memcmp(). */
struct flowsdn_addr {
	uint8_t family; /* FLOWSDN_AF_INET or FLOWSDN_AF_INET6 */
	uint8_t bytes[16];
};

/* A prefix: @addr with every bit past @len zero (parse and
 * flowsdn_prefix_make() guarantee it). */
struct flowsdn_prefix {
	struct flowsdn_addr addr;
	uint8_t len; /* 0..32 or 0..128 */
};

/* Parses an IPv4 dotted quad (exactly four decimal octets, no leading
 * zeros) or an IPv6 address (RFC 4291 §2.2, including a trailing dotted
 * quad; zone indexes are refused) from the @len bytes at @text; @text need
 * not be NUL-terminated, and a NUL inside @len is refused.
 * Errors: -EINVAL (NULL argument), -FLOWSDN_E_ADDR_* naming the fault.
 * @ret_addr is written only on success. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_addr_parse(const char *text, size_t len, struct flowsdn_addr *ret_addr);

/* Writes the canonical text of @addr (RFC 5952: lower case, no leading
 * zeros, "::" for the longest run of two or more zero groups, the first
 * such run on a tie; IPv4-mapped addresses as ::ffff:a.b.c.d) into @buf.
 * Returns the length written (without the NUL), -ENOSPC when @size is too
 * small (use FLOWSDN_ADDR_STRLEN), -EINVAL for a bad family. */
FLOWSDN_API int flowsdn_addr_format(const struct flowsdn_addr *addr, char *buf, size_t size);

/* Orders addresses: IPv4 before IPv6, then numerically.  <0, 0, >0. */
FLOWSDN_API int flowsdn_addr_compare(const struct flowsdn_addr *a, const struct flowsdn_addr *b);
FLOWSDN_API bool flowsdn_addr_equal(const struct flowsdn_addr *a, const struct flowsdn_addr *b);

/* Bit width of the family (32 or 128), 0 for an unknown family. */
FLOWSDN_API unsigned int flowsdn_addr_bits(const struct flowsdn_addr *addr);

/* Makes an address from 4 or 16 network-order bytes. */
FLOWSDN_API int flowsdn_addr_from_bytes(int family, const void *bytes, struct flowsdn_addr *ret_addr);

/* The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d).
 * -FLOWSDN_E_ADDR_FAMILY when @addr is not one. */
FLOWSDN_API int flowsdn_addr_unmap_v4(const struct flowsdn_addr *addr, struct flowsdn_addr *ret_addr);

/* Adds the signed @delta to @addr.  -FLOWSDN_E_ADDR_RANGE when the result
 * leaves the family's address space (ret untouched). */
FLOWSDN_API int flowsdn_addr_add(const struct flowsdn_addr *addr, int64_t delta, struct flowsdn_addr *ret_addr);

/* Prefix parsing flags (struct flowsdn_prefix_opts.flags). */
enum {
	/* Clear host bits ("10.1.2.3/8" -> 10.0.0.0/8) instead of refusing
	 * them with -FLOWSDN_E_PREFIX_HOST_BITS. */
	FLOWSDN_PREFIX_NORMALIZE = 1u << 0,
	/* Accept a bare address as a host prefix (/32 or /128). */
	FLOWSDN_PREFIX_ALLOW_HOST = 1u << 1,
};

struct flowsdn_prefix_opts {
	size_t sz;
	unsigned int flags; /* FLOWSDN_PREFIX_* */
	/* 0 accepts both families; FLOWSDN_AF_INET or FLOWSDN_AF_INET6 refuses
	 * the other with -FLOWSDN_E_ADDR_FAMILY. */
	int family;
};

/* Parses "ADDRESS/LEN" (LEN decimal, no sign, no leading zeros, at most the
 * family's width) from the @len bytes at @text.  @opts may be NULL.
 * Errors: -EINVAL, -FLOWSDN_E_ADDR_* from the address part,
 * -FLOWSDN_E_PREFIX_LENGTH, -FLOWSDN_E_PREFIX_HOST_BITS (without
 * FLOWSDN_PREFIX_NORMALIZE).  @ret_prefix is written only on success. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_prefix_parse(const char *text, size_t len,
						 const struct flowsdn_prefix_opts *opts,
						 struct flowsdn_prefix *ret_prefix);

/* Canonical "ADDRESS/LEN".  Returns the length written or -ENOSPC. */
FLOWSDN_API int flowsdn_prefix_format(const struct flowsdn_prefix *prefix, char *buf, size_t size);

/* Builds the prefix of length @len that contains @addr (host bits cleared).
 * -FLOWSDN_E_PREFIX_LENGTH when @len exceeds the family's width. */
FLOWSDN_API int flowsdn_prefix_make(const struct flowsdn_addr *addr, unsigned int len, struct flowsdn_prefix *ret_prefix);

/* True when @addr lies in @prefix (same family). */
FLOWSDN_API bool flowsdn_prefix_contains_addr(const struct flowsdn_prefix *prefix, const struct flowsdn_addr *addr);
/* True when every address of @inner lies in @outer. */
FLOWSDN_API bool flowsdn_prefix_contains(const struct flowsdn_prefix *outer, const struct flowsdn_prefix *inner);
/* True when the two prefixes share at least one address. */
FLOWSDN_API bool flowsdn_prefix_overlaps(const struct flowsdn_prefix *a, const struct flowsdn_prefix *b);
/* Orders prefixes by family, then address, then length (shorter first). */
FLOWSDN_API int flowsdn_prefix_compare(const struct flowsdn_prefix *a, const struct flowsdn_prefix *b);

/* First and last address of the prefix (network and, for IPv4, broadcast). */
FLOWSDN_API void flowsdn_prefix_first(const struct flowsdn_prefix *prefix, struct flowsdn_addr *ret_addr);
FLOWSDN_API void flowsdn_prefix_last(const struct flowsdn_prefix *prefix, struct flowsdn_addr *ret_addr);

/* Number of addresses, saturated at UINT64_MAX for host parts of 64 bits
 * or more. */
FLOWSDN_API uint64_t flowsdn_prefix_size(const struct flowsdn_prefix *prefix);

/* The @index-th address of the prefix (0 = first).
 * -FLOWSDN_E_ADDR_RANGE when @index is past its end. */
FLOWSDN_API int flowsdn_prefix_nth(const struct flowsdn_prefix *prefix, uint64_t index, struct flowsdn_addr *ret_addr);

/* The offset of @addr inside @prefix.  -FLOWSDN_E_ADDR_RANGE when @addr is
 * not in the prefix or its offset does not fit 64 bits. */
FLOWSDN_API int flowsdn_prefix_index(const struct flowsdn_prefix *prefix, const struct flowsdn_addr *addr, uint64_t *ret_index);

/* Iteration over every address of a prefix, in order:
 *   struct flowsdn_prefix_iter it;
 *   struct flowsdn_addr a;
 *   flowsdn_prefix_iter_init(&it, &p);
 *   while (flowsdn_prefix_iter_next(&it, &a)) ...
 * The iterator holds no resources. */
struct flowsdn_prefix_iter {
	struct flowsdn_addr next;
	struct flowsdn_addr last;
	bool done;
};
/* Starts @it at the first address of @prefix (which is read, not kept);
 * with a NULL @prefix the iteration is empty.  Nothing to free. */
FLOWSDN_API void flowsdn_prefix_iter_init(struct flowsdn_prefix_iter *it, const struct flowsdn_prefix *prefix);
/* Stores the next address in *ret_addr and returns true; returns false,
 * *ret_addr untouched, once the last address was given (or when an
 * argument is NULL). */
FLOWSDN_API bool flowsdn_prefix_iter_next(struct flowsdn_prefix_iter *it, struct flowsdn_addr *ret_addr);

/* Address classes: a bit set, since ranges nest (169.254.169.254 is
 * link-local and cloud metadata; fd00:ec2::254 is unique-local and
 * metadata). */
enum flowsdn_addr_class {
	FLOWSDN_ADDR_PUBLIC        = 1u << 0,  /* in no entry (IPv6: inside 2000::/3), or one that is globally reachable */
	FLOWSDN_ADDR_PRIVATE       = 1u << 1,  /* RFC 1918, and IPv6 unique-local fc00::/7 */
	FLOWSDN_ADDR_LOOPBACK      = 1u << 2,  /* 127/8, ::1 */
	FLOWSDN_ADDR_LINK_LOCAL    = 1u << 3,  /* 169.254/16, fe80::/10 */
	FLOWSDN_ADDR_METADATA      = 1u << 4,  /* 169.254.169.254, fd00:ec2::254 */
	FLOWSDN_ADDR_CGNAT         = 1u << 5,  /* 100.64/10 shared address space */
	FLOWSDN_ADDR_MULTICAST     = 1u << 6,  /* 224/4, ff00::/8 */
	FLOWSDN_ADDR_DOCUMENTATION = 1u << 7,  /* TEST-NET-1/2/3, 2001:db8::/32, 3fff::/20 */
	FLOWSDN_ADDR_V4_MAPPED     = 1u << 8,  /* ::ffff:0:0/96 */
	FLOWSDN_ADDR_V4_COMPAT     = 1u << 9,  /* ::/96 (deprecated IPv4-compatible), but not :: and ::1 */
	FLOWSDN_ADDR_UNSPECIFIED   = 1u << 10, /* 0.0.0.0, :: */
	FLOWSDN_ADDR_BROADCAST     = 1u << 11, /* 255.255.255.255 */
	FLOWSDN_ADDR_THIS_NETWORK  = 1u << 12, /* 0/8 */
	FLOWSDN_ADDR_RESERVED      = 1u << 13, /* 240/4, IETF protocol assignments, other non-global special ranges,
						* IPv6 outside 2000::/3 in no other entry, 3ffe::/16 */
	FLOWSDN_ADDR_BENCHMARK     = 1u << 14, /* 198.18/15, 2001:2::/48 */
	FLOWSDN_ADDR_TRANSLATION   = 1u << 15, /* 64:ff9b::/96, 64:ff9b:1::/48, 6to4, Teredo */
	FLOWSDN_ADDR_DISCARD       = 1u << 16, /* 100::/64 */
};

/* IANA registry attributes of the most specific entry holding an address
 * (special-purpose entries, and for IPv6 outside 2000::/3 the Address
 * Space block, "Reserved by IETF" with every flag false).  For an address
 * in no entry every flag is true. */
struct flowsdn_addr_info {
	unsigned int classes;     /* enum flowsdn_addr_class bits */
	const char *name;         /* registry name of the entry, "" when none */
	const char *rfc;          /* defining document, "" when none */
	bool source;              /* valid as a source address */
	bool destination;         /* valid as a destination address */
	bool forwardable;         /* routers may forward it */
	bool globally_reachable;  /* reachable on the public Internet */
};

/* Classes of @addr (enum flowsdn_addr_class bits); 0 for a bad family. */
FLOWSDN_API unsigned int flowsdn_addr_classify(const struct flowsdn_addr *addr);

/* Registry attributes of @addr.  -EINVAL for a bad family. */
FLOWSDN_API int flowsdn_addr_info(const struct flowsdn_addr *addr, struct flowsdn_addr_info *ret_info);

/* True when @addr is globally reachable and in none of the classes other
 * than FLOWSDN_ADDR_PUBLIC: the addresses a tenant may name as a public
 * peer. */
FLOWSDN_API bool flowsdn_addr_is_public(const struct flowsdn_addr *addr);

/* Classes of all the addresses of @prefix: the union of the classes of
 * every special-purpose range it overlaps, plus FLOWSDN_ADDR_PUBLIC when
 * some of its addresses are public.  So 0.0.0.0/0 has every IPv4 class. */
FLOWSDN_API unsigned int flowsdn_prefix_classify(const struct flowsdn_prefix *prefix);

/* Name of one class bit ("private", "link-local", ...); NULL when @cls is
 * not exactly one known bit. */
FLOWSDN_API const char *flowsdn_addr_class_name(unsigned int cls);

#ifdef __cplusplus
}
#endif

#endif
