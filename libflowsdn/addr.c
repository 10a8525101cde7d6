/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* IPv4/IPv6 addresses and prefixes: strict parsing, RFC 5952 formatting,
 * prefix arithmetic and the special-purpose address classifier. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <flowsdn/addr.h>

#include "internal.h"

#define V4_TEXT_MAX 15  /* 255.255.255.255 */
#define V6_TEXT_MAX 45  /* ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255 */

static bool family_ok(int family)
{
	return family == FLOWSDN_AF_INET || family == FLOWSDN_AF_INET6;
}

FLOWSDN_API unsigned int flowsdn_addr_bits(const struct flowsdn_addr *addr)
{
	if (!addr)
		return 0;
	return addr->family == FLOWSDN_AF_INET ? 32 : addr->family == FLOWSDN_AF_INET6 ? 128 : 0;
}

static unsigned int addr_bytes(const struct flowsdn_addr *addr)
{
	return addr->family == FLOWSDN_AF_INET ? 4 : 16;
}

/* Parses one strict decimal octet list "a.b.c.d" from s[0..len) into out. */
static int parse_v4(const char *s, size_t len, uint8_t out[4])
{
	unsigned int octets = 0;
	size_t i = 0;

	if (len > V4_TEXT_MAX)
		return -FLOWSDN_E_ADDR_TOO_LONG;
	while (octets < 4) {
		unsigned int v = 0, digits = 0;
		size_t start = i;

		while (i < len && s[i] >= '0' && s[i] <= '9') {
			v = v * 10 + (unsigned int)(s[i] - '0');
			if (++digits > 3)
				return -FLOWSDN_E_ADDR_OCTET_RANGE;
			i++;
		}
		if (digits == 0)
			return -FLOWSDN_E_ADDR_SYNTAX;
		if (digits > 1 && s[start] == '0')
			return -FLOWSDN_E_ADDR_LEADING_ZERO;
		if (v > 255)
			return -FLOWSDN_E_ADDR_OCTET_RANGE;
		out[octets++] = (uint8_t)v;
		if (octets < 4) {
			if (i >= len || s[i] != '.')
				return -FLOWSDN_E_ADDR_SYNTAX;
			i++;
		}
	}
	return i == len ? 0 : -FLOWSDN_E_ADDR_SYNTAX;
}

static int parse_v6(const char *s, size_t len, uint8_t out[16])
{
	uint16_t groups[8] = { 0 };
	int ngroups = 0, dc = -1;
	size_t i = 0;

	if (len > V6_TEXT_MAX)
		return -FLOWSDN_E_ADDR_TOO_LONG;
	if (len >= 2 && s[0] == ':' && s[1] == ':') {
		dc = 0;
		i = 2;
	} else if (len >= 1 && s[0] == ':') {
		return -FLOWSDN_E_ADDR_SYNTAX;
	}
	while (i < len) {
		size_t start = i;
		unsigned int v = 0, n = 0;

		if (ngroups == 8)
			return -FLOWSDN_E_ADDR_GROUP_COUNT;
		while (i < len && util_hexval(s[i]) >= 0) {
			v = (v << 4) | (unsigned int)util_hexval(s[i]);
			n++;
			i++;
			if (n > 4 && (i >= len || s[i] != '.'))
				break;
		}
		if (i < len && s[i] == '.') {
			uint8_t v4[4];
			int r;

			/* Trailing dotted quad: the last 32 bits. */
			if (ngroups > 6)
				return -FLOWSDN_E_ADDR_GROUP_COUNT;
			r = parse_v4(s + start, len - start, v4);
			if (r < 0)
				return r == -FLOWSDN_E_ADDR_TOO_LONG ? -FLOWSDN_E_ADDR_SYNTAX : r;
			groups[ngroups++] = (uint16_t)(v4[0] << 8 | v4[1]);
			groups[ngroups++] = (uint16_t)(v4[2] << 8 | v4[3]);
			i = len;
			break;
		}
		if (n == 0)
			return -FLOWSDN_E_ADDR_SYNTAX;
		if (n > 4)
			return -FLOWSDN_E_ADDR_GROUP;
		groups[ngroups++] = (uint16_t)v;
		if (i == len)
			break;
		if (s[i] != ':')
			return -FLOWSDN_E_ADDR_SYNTAX;
		i++;
		if (i < len && s[i] == ':') {
			if (dc >= 0)
				return -FLOWSDN_E_ADDR_DOUBLE_COLON;
			dc = ngroups;
			i++;
		} else if (i == len) {
			return -FLOWSDN_E_ADDR_SYNTAX; /* trailing single ':' */
		}
	}
	if (dc < 0 && ngroups != 8)
		return -FLOWSDN_E_ADDR_GROUP_COUNT;
	if (dc >= 0 && ngroups > 7)
		return -FLOWSDN_E_ADDR_GROUP_COUNT; /* "::" must stand for at least one group */

	memset(out, 0, 16);
	if (dc < 0) {
		for (int g = 0; g < 8; g++) {
			out[2 * g] = (uint8_t)(groups[g] >> 8);
			out[2 * g + 1] = (uint8_t)groups[g];
		}
	} else {
		int tail = ngroups - dc;

		for (int g = 0; g < dc; g++) {
			out[2 * g] = (uint8_t)(groups[g] >> 8);
			out[2 * g + 1] = (uint8_t)groups[g];
		}
		for (int g = 0; g < tail; g++) {
			int pos = 8 - tail + g;
			out[2 * pos] = (uint8_t)(groups[dc + g] >> 8);
			out[2 * pos + 1] = (uint8_t)groups[dc + g];
		}
	}
	return 0;
}

FLOWSDN_API int flowsdn_addr_parse(const char *text, size_t len, struct flowsdn_addr *ret_addr)
{
	struct flowsdn_addr a = { 0 };
	bool v6 = false;
	int r;

	if (!text || !ret_addr)
		return -EINVAL;
	if (len == 0)
		return -FLOWSDN_E_ADDR_EMPTY;
	if (memchr(text, '\0', len))
		return -FLOWSDN_E_ADDR_NUL;
	if (len > V6_TEXT_MAX)
		return -FLOWSDN_E_ADDR_TOO_LONG;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '%')
			return -FLOWSDN_E_ADDR_ZONE;
		if (text[i] == ':')
			v6 = true;
	}
	if (v6) {
		a.family = FLOWSDN_AF_INET6;
		r = parse_v6(text, len, a.bytes);
	} else {
		a.family = FLOWSDN_AF_INET;
		r = parse_v4(text, len, a.bytes);
	}
	if (r < 0)
		return r;
	*ret_addr = a;
	return 0;
}

static int format_v4(const uint8_t *b, char *buf, size_t size)
{
	char tmp[16];
	size_t n = 0;

	for (int i = 0; i < 4; i++) {
		if (i)
			tmp[n++] = '.';
		n += util_format_u64(b[i], tmp + n);
	}
	if (n >= size)
		return -ENOSPC;
	memcpy(buf, tmp, n);
	buf[n] = '\0';
	return (int)n;
}

FLOWSDN_API int flowsdn_addr_format(const struct flowsdn_addr *addr, char *buf, size_t size)
{
	char tmp[FLOWSDN_ADDR_STRLEN];
	size_t o = 0;
	int best = -1, bestlen = 0;
	uint16_t g[8];

	if (!addr || !buf || !family_ok(addr->family))
		return -EINVAL;
	if (addr->family == FLOWSDN_AF_INET)
		return format_v4(addr->bytes, buf, size);

	for (int i = 0; i < 8; i++)
		g[i] = (uint16_t)(addr->bytes[2 * i] << 8 | addr->bytes[2 * i + 1]);

	/* IPv4-mapped: ::ffff:a.b.c.d (RFC 5952 §5). */
	if (!g[0] && !g[1] && !g[2] && !g[3] && !g[4] && g[5] == 0xffff) {
		int n;

		memcpy(tmp, "::ffff:", 7);
		n = format_v4(addr->bytes + 12, tmp + 7, sizeof(tmp) - 7);
		if (n < 0)
			return n;
		o = 7 + (size_t)n;
		goto out;
	}

	/* Longest run of >= 2 zero groups, the first on a tie (RFC 5952 §4.2). */
	for (int i = 0; i < 8;) {
		int j = i;

		while (j < 8 && g[j] == 0)
			j++;
		if (j - i > bestlen && j - i >= 2) {
			best = i;
			bestlen = j - i;
		}
		i = j == i ? i + 1 : j;
	}
	for (int i = 0; i < 8; i++) {
		if (i == best) {
			tmp[o++] = ':';
			if (i == 0)
				tmp[o++] = ':';
			i += bestlen - 1;
			continue;
		}
		o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "%x", g[i]);
		if (i < 7)
			tmp[o++] = ':';
	}
out:
	if (o + 1 > size)
		return -ENOSPC;
	memcpy(buf, tmp, o);
	buf[o] = '\0';
	return (int)o;
}

FLOWSDN_API int flowsdn_addr_compare(const struct flowsdn_addr *a, const struct flowsdn_addr *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->bytes, b->bytes, sizeof(a->bytes));
}

FLOWSDN_API bool flowsdn_addr_equal(const struct flowsdn_addr *a, const struct flowsdn_addr *b)
{
	return flowsdn_addr_compare(a, b) == 0;
}

FLOWSDN_API int flowsdn_addr_from_bytes(int family, const void *bytes, struct flowsdn_addr *ret_addr)
{
	struct flowsdn_addr a = { 0 };

	if (!bytes || !ret_addr || !family_ok(family))
		return -EINVAL;
	a.family = (uint8_t)family;
	memcpy(a.bytes, bytes, family == FLOWSDN_AF_INET ? 4 : 16);
	*ret_addr = a;
	return 0;
}

FLOWSDN_API int flowsdn_addr_unmap_v4(const struct flowsdn_addr *addr, struct flowsdn_addr *ret_addr)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!addr || !ret_addr)
		return -EINVAL;
	if (addr->family != FLOWSDN_AF_INET6 || memcmp(addr->bytes, mapped, 12))
		return -FLOWSDN_E_ADDR_FAMILY;
	return flowsdn_addr_from_bytes(FLOWSDN_AF_INET, addr->bytes + 12, ret_addr);
}

FLOWSDN_API int flowsdn_addr_add(const struct flowsdn_addr *addr, int64_t delta, struct flowsdn_addr *ret_addr)
{
	struct flowsdn_addr a;
	unsigned int n;
	/* Two's complement of delta, sign-extended over the address width. */
	uint64_t d = (uint64_t)delta;
	uint8_t ext = delta < 0 ? 0xff : 0x00;
	unsigned int carry = 0;

	if (!addr || !ret_addr || !family_ok(addr->family))
		return -EINVAL;
	a = *addr;
	n = addr_bytes(&a);
	/* For IPv4 the bits of delta above 32 must be pure sign extension. */
	if (n < 8 && (delta >> (8 * n)) != (delta < 0 ? -1 : 0))
		return -FLOWSDN_E_ADDR_RANGE;
	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = n - 1 - k;
		unsigned int byte = k < 8 ? (unsigned int)(d >> (8 * k)) & 0xff : ext;
		unsigned int s = a.bytes[i] + byte + carry;

		a.bytes[i] = (uint8_t)s;
		carry = s >> 8;
	}
	/* Adding a negative number must carry out; a positive one must not. */
	if ((delta < 0 && !carry) || (delta >= 0 && carry))
		return -FLOWSDN_E_ADDR_RANGE;
	*ret_addr = a;
	return 0;
}

static void mask_bits(struct flowsdn_addr *a, unsigned int len)
{
	unsigned int n = addr_bytes(a);

	for (unsigned int i = 0; i < n; i++) {
		unsigned int bit = i * 8;

		if (bit >= len)
			a->bytes[i] = 0;
		else if (bit + 8 > len)
			a->bytes[i] &= (uint8_t)(0xff << (8 - (len - bit)));
	}
}

static bool has_host_bits(const struct flowsdn_addr *a, unsigned int len)
{
	struct flowsdn_addr m = *a;

	mask_bits(&m, len);
	return memcmp(m.bytes, a->bytes, sizeof(m.bytes)) != 0;
}

FLOWSDN_API int flowsdn_prefix_make(const struct flowsdn_addr *addr, unsigned int len, struct flowsdn_prefix *ret_prefix)
{
	struct flowsdn_prefix p;

	if (!addr || !ret_prefix || !family_ok(addr->family))
		return -EINVAL;
	if (len > flowsdn_addr_bits(addr))
		return -FLOWSDN_E_PREFIX_LENGTH;
	p.addr = *addr;
	p.len = (uint8_t)len;
	mask_bits(&p.addr, len);
	*ret_prefix = p;
	return 0;
}

FLOWSDN_API int flowsdn_prefix_parse(const char *text, size_t len, const struct flowsdn_prefix_opts *opts,
				     struct flowsdn_prefix *ret_prefix)
{
	unsigned int flags = OPTS_GET(opts, flags, 0u);
	int family = OPTS_GET(opts, family, 0);
	struct flowsdn_addr a;
	const char *slash;
	unsigned int plen = 0;
	size_t alen;
	int r;

	if (!text || !ret_prefix)
		return -EINVAL;
	if (!OPTS_VALID(opts, flowsdn_prefix_opts)) {
		pr_warn("flowsdn_prefix_parse: options struct refused (sz %zu)", opts->sz);
		return -EINVAL;
	}
	if (family && !family_ok(family))
		return -EINVAL;
	if (len == 0)
		return -FLOWSDN_E_ADDR_EMPTY;
	if (memchr(text, '\0', len))
		return -FLOWSDN_E_ADDR_NUL;
	if (len > V6_TEXT_MAX + 4)
		return -FLOWSDN_E_ADDR_TOO_LONG;
	slash = memchr(text, '/', len);
	alen = slash ? (size_t)(slash - text) : len;
	r = flowsdn_addr_parse(text, alen, &a);
	if (r < 0)
		return r;
	if (family && a.family != family)
		return -FLOWSDN_E_ADDR_FAMILY;
	if (!slash) {
		if (!(flags & FLOWSDN_PREFIX_ALLOW_HOST))
			return -FLOWSDN_E_PREFIX_LENGTH;
		plen = flowsdn_addr_bits(&a);
	} else {
		const char *p = slash + 1, *end = text + len;

		if (p == end || end - p > 3 || (*p == '0' && end - p > 1))
			return -FLOWSDN_E_PREFIX_LENGTH;
		for (; p < end; p++) {
			if (*p < '0' || *p > '9')
				return -FLOWSDN_E_PREFIX_LENGTH;
			plen = plen * 10 + (unsigned int)(*p - '0');
		}
		if (plen > flowsdn_addr_bits(&a))
			return -FLOWSDN_E_PREFIX_LENGTH;
	}
	if (has_host_bits(&a, plen) && !(flags & FLOWSDN_PREFIX_NORMALIZE))
		return -FLOWSDN_E_PREFIX_HOST_BITS;
	return flowsdn_prefix_make(&a, plen, ret_prefix);
}

FLOWSDN_API int flowsdn_prefix_format(const struct flowsdn_prefix *prefix, char *buf, size_t size)
{
	char tmp[FLOWSDN_PREFIX_STRLEN];
	int n, m;

	if (!prefix || !buf)
		return -EINVAL;
	n = flowsdn_addr_format(&prefix->addr, tmp, sizeof(tmp));
	if (n < 0)
		return n;
	m = snprintf(tmp + n, sizeof(tmp) - (size_t)n, "/%u", prefix->len);
	if ((size_t)(n + m) + 1 > size)
		return -ENOSPC;
	memcpy(buf, tmp, (size_t)(n + m) + 1);
	return n + m;
}

FLOWSDN_API bool flowsdn_prefix_contains_addr(const struct flowsdn_prefix *prefix, const struct flowsdn_addr *addr)
{
	struct flowsdn_addr m;

	if (!prefix || !addr || prefix->addr.family != addr->family)
		return false;
	m = *addr;
	mask_bits(&m, prefix->len);
	return memcmp(m.bytes, prefix->addr.bytes, sizeof(m.bytes)) == 0;
}

FLOWSDN_API bool flowsdn_prefix_contains(const struct flowsdn_prefix *outer, const struct flowsdn_prefix *inner)
{
	if (!outer || !inner || outer->addr.family != inner->addr.family)
		return false;
	return outer->len <= inner->len && flowsdn_prefix_contains_addr(outer, &inner->addr);
}

FLOWSDN_API bool flowsdn_prefix_overlaps(const struct flowsdn_prefix *a, const struct flowsdn_prefix *b)
{
	/* Two prefixes either nest or are disjoint. */
	return flowsdn_prefix_contains(a, b) || flowsdn_prefix_contains(b, a);
}

FLOWSDN_API int flowsdn_prefix_compare(const struct flowsdn_prefix *a, const struct flowsdn_prefix *b)
{
	int r = flowsdn_addr_compare(&a->addr, &b->addr);

	if (r)
		return r;
	return a->len < b->len ? -1 : a->len > b->len;
}

FLOWSDN_API void flowsdn_prefix_first(const struct flowsdn_prefix *prefix, struct flowsdn_addr *ret_addr)
{
	*ret_addr = prefix->addr;
	mask_bits(ret_addr, prefix->len);
}

FLOWSDN_API void flowsdn_prefix_last(const struct flowsdn_prefix *prefix, struct flowsdn_addr *ret_addr)
{
	struct flowsdn_addr a = prefix->addr;
	unsigned int n = addr_bytes(&a);

	for (unsigned int i = 0; i < n; i++) {
		unsigned int bit = i * 8;

		if (bit >= prefix->len)
			a.bytes[i] = 0xff;
		else if (bit + 8 > prefix->len)
			a.bytes[i] |= (uint8_t)(0xff >> (prefix->len - bit));
	}
	*ret_addr = a;
}

FLOWSDN_API uint64_t flowsdn_prefix_size(const struct flowsdn_prefix *prefix)
{
	unsigned int host = flowsdn_addr_bits(&prefix->addr) - prefix->len;

	return host >= 64 ? UINT64_MAX : (uint64_t)1 << host;
}

FLOWSDN_API int flowsdn_prefix_nth(const struct flowsdn_prefix *prefix, uint64_t index, struct flowsdn_addr *ret_addr)
{
	struct flowsdn_addr a;
	unsigned int host;
	int r;

	if (!prefix || !ret_addr || !family_ok(prefix->addr.family))
		return -EINVAL;
	host = flowsdn_addr_bits(&prefix->addr) - prefix->len;
	if (host < 64 && index >> host)
		return -FLOWSDN_E_ADDR_RANGE;
	flowsdn_prefix_first(prefix, &a);
	/* Host bits of the first address are zero: OR-ing the index in is an add. */
	while (index > INT64_MAX) {
		r = flowsdn_addr_add(&a, INT64_MAX, &a);
		if (r < 0)
			return r;
		index -= INT64_MAX;
	}
	return flowsdn_addr_add(&a, (int64_t)index, ret_addr);
}

static bool bit_is_set(const struct flowsdn_addr *a, unsigned int bit)
{
	return a->bytes[bit / 8] & (0x80 >> (bit % 8));
}

FLOWSDN_API int flowsdn_prefix_index(const struct flowsdn_prefix *prefix, const struct flowsdn_addr *addr, uint64_t *ret_index)
{
	unsigned int bits, host, n;
	uint64_t v = 0;

	if (!prefix || !addr || !ret_index)
		return -EINVAL;
	if (!flowsdn_prefix_contains_addr(prefix, addr))
		return -FLOWSDN_E_ADDR_RANGE;
	bits = flowsdn_addr_bits(addr);
	host = bits - prefix->len;
	/* Host bits above the low 64 must be zero for the offset to fit. */
	for (unsigned int bit = prefix->len; host > 64 && bit < bits - 64; bit++)
		if (bit_is_set(addr, bit))
			return -FLOWSDN_E_ADDR_RANGE;
	n = addr_bytes(addr);
	for (unsigned int i = n > 8 ? n - 8 : 0; i < n; i++)
		v = v << 8 | addr->bytes[i];
	if (host < 64)
		v &= ((uint64_t)1 << host) - 1;
	*ret_index = v;
	return 0;
}

FLOWSDN_API void flowsdn_prefix_iter_init(struct flowsdn_prefix_iter *it, const struct flowsdn_prefix *prefix)
{
	if (!it)
		return;
	if (!prefix) {
		*it = (struct flowsdn_prefix_iter){ .done = true };
		return;
	}
	flowsdn_prefix_first(prefix, &it->next);
	flowsdn_prefix_last(prefix, &it->last);
	it->done = false;
}

FLOWSDN_API bool flowsdn_prefix_iter_next(struct flowsdn_prefix_iter *it, struct flowsdn_addr *ret_addr)
{
	if (!it || !ret_addr || it->done)
		return false;
	*ret_addr = it->next;
	if (flowsdn_addr_equal(&it->next, &it->last) || flowsdn_addr_add(&it->next, 1, &it->next) < 0)
		it->done = true;
	return true;
}

/*
 * The classifier table: the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries (RFC 6890 and updates, as of 2025), plus multicast, the
 * deprecated IPv4-compatible block, the returned 6bone block and the cloud
 * metadata endpoints.  Columns: source, destination, forwardable, globally
 * reachable.
 *
 * IPv6 needs one more registry.  The special-purpose registry lists
 * exceptions inside space that is otherwise in use; it does not say that
 * most of the IPv6 space is not in use at all.  The IANA "Internet
 * Protocol Version 6 Address Space" registry (RFC 4291 section 2.4) does:
 * only 2000::/3 is Global Unicast; fc00::/7 (unique-local), fe80::/10
 * (link-local) and ff00::/8 (multicast) have their own entries below;
 * fec0::/10 was site-local until RFC 3879 deprecated it; every other block
 * is "Reserved by IETF", with no address assigned to anyone, so none of it
 * is publicly routable (4000::1, c000::1, fe00::1).  Those blocks are the
 * "space" rows: an address takes their class (RESERVED) and attributes
 * only when no special-purpose entry holds it, so ::1 stays loopback and
 * 64:ff9b::/96 (in ::/8) keeps its registry attributes.
 *
 * Inside 2000::/3, 3ffe::/16 was the 6bone's test block; RFC 3701 phased
 * it out and returned it to IANA in 2006, and it has not been allocated
 * since, so it is not routable either (3ffe::1).  What remains public in
 * IPv6 is global unicast (2000::/3) that no entry excludes.
 */
struct special {
	const char *text;
	unsigned int classes;
	const char *name;
	const char *rfc;
	bool src, dst, fwd, global;
	bool space; /* an IPv6 Address Space block, not a special-purpose entry */
};

#define C(x) FLOWSDN_ADDR_##x
static const struct special specials[] = {
	/* IPv4 */
	{ "0.0.0.0/8", C(THIS_NETWORK), "This network", "RFC 791", true, false, false, false },
	{ "0.0.0.0/32", C(UNSPECIFIED) | C(THIS_NETWORK), "This host on this network", "RFC 1122", true, false, false, false },
	{ "10.0.0.0/8", C(PRIVATE), "Private-Use", "RFC 1918", true, true, true, false },
	{ "100.64.0.0/10", C(CGNAT), "Shared Address Space", "RFC 6598", true, true, true, false },
	{ "127.0.0.0/8", C(LOOPBACK), "Loopback", "RFC 1122", false, false, false, false },
	{ "169.254.0.0/16", C(LINK_LOCAL), "Link Local", "RFC 3927", true, true, false, false },
	{ "169.254.169.254/32", C(LINK_LOCAL) | C(METADATA), "Cloud metadata service", "", true, true, false, false },
	{ "172.16.0.0/12", C(PRIVATE), "Private-Use", "RFC 1918", true, true, true, false },
	{ "192.0.0.0/24", C(RESERVED), "IETF Protocol Assignments", "RFC 6890", false, false, false, false },
	{ "192.0.0.0/29", C(RESERVED), "IPv4 Service Continuity Prefix", "RFC 7335", true, true, true, false },
	{ "192.0.0.8/32", C(RESERVED), "IPv4 dummy address", "RFC 7600", true, false, false, false },
	{ "192.0.0.9/32", 0, "Port Control Protocol Anycast", "RFC 7723", true, true, true, true },
	{ "192.0.0.10/32", 0, "Traversal Using Relays around NAT Anycast", "RFC 8155", true, true, true, true },
	{ "192.0.0.170/32", C(TRANSLATION), "NAT64/DNS64 Discovery", "RFC 8880", false, false, false, false },
	{ "192.0.0.171/32", C(TRANSLATION), "NAT64/DNS64 Discovery", "RFC 8880", false, false, false, false },
	{ "192.0.2.0/24", C(DOCUMENTATION), "Documentation (TEST-NET-1)", "RFC 5737", false, false, false, false },
	{ "192.31.196.0/24", 0, "AS112-v4", "RFC 7535", true, true, true, true },
	{ "192.52.193.0/24", 0, "AMT", "RFC 7450", true, true, true, true },
	{ "192.88.99.0/24", C(RESERVED) | C(TRANSLATION), "Deprecated (6to4 Relay Anycast)", "RFC 7526", false, false, false, false },
	{ "192.168.0.0/16", C(PRIVATE), "Private-Use", "RFC 1918", true, true, true, false },
	{ "192.175.48.0/24", 0, "Direct Delegation AS112 Service", "RFC 7534", true, true, true, true },
	{ "198.18.0.0/15", C(BENCHMARK), "Benchmarking", "RFC 2544", true, true, true, false },
	{ "198.51.100.0/24", C(DOCUMENTATION), "Documentation (TEST-NET-2)", "RFC 5737", false, false, false, false },
	{ "203.0.113.0/24", C(DOCUMENTATION), "Documentation (TEST-NET-3)", "RFC 5737", false, false, false, false },
	{ "224.0.0.0/4", C(MULTICAST), "Multicast", "RFC 5771", false, true, true, false },
	{ "240.0.0.0/4", C(RESERVED), "Reserved", "RFC 1112", false, false, false, false },
	{ "255.255.255.255/32", C(BROADCAST) | C(RESERVED), "Limited Broadcast", "RFC 919", false, true, false, false },
	/* IPv6 */
	{ "::/96", C(V4_COMPAT), "IPv4-compatible (deprecated)", "RFC 4291", false, false, false, false },
	{ "::/128", C(UNSPECIFIED), "Unspecified Address", "RFC 4291", true, false, false, false },
	{ "::1/128", C(LOOPBACK), "Loopback Address", "RFC 4291", false, false, false, false },
	{ "::ffff:0:0/96", C(V4_MAPPED), "IPv4-mapped Address", "RFC 4291", false, false, false, false },
	{ "64:ff9b::/96", C(TRANSLATION), "IPv4-IPv6 Translation", "RFC 6052", true, true, true, true },
	{ "64:ff9b:1::/48", C(TRANSLATION), "IPv4-IPv6 Translation (local use)", "RFC 8215", true, true, true, false },
	{ "100::/64", C(DISCARD), "Discard-Only Address Block", "RFC 6666", true, true, true, false },
	{ "100:0:0:1::/64", C(RESERVED), "Dummy IPv6 Prefix", "RFC 9780", true, true, false, false },
	{ "2001::/23", C(RESERVED), "IETF Protocol Assignments", "RFC 2928", false, false, false, false },
	{ "2001::/32", C(TRANSLATION), "TEREDO", "RFC 4380", true, true, true, false },
	{ "2001:1::1/128", 0, "Port Control Protocol Anycast", "RFC 7723", true, true, true, true },
	{ "2001:1::2/128", 0, "Traversal Using Relays around NAT Anycast", "RFC 8155", true, true, true, true },
	{ "2001:1::3/128", 0, "DNS-SD Service Registration Protocol Anycast", "RFC 9665", true, true, true, true },
	{ "2001:2::/48", C(BENCHMARK), "Benchmarking", "RFC 5180", true, true, true, false },
	{ "2001:3::/32", 0, "AMT", "RFC 7450", true, true, true, true },
	{ "2001:4:112::/48", 0, "AS112-v6", "RFC 7535", true, true, true, true },
	{ "2001:10::/28", C(RESERVED), "Deprecated (previously ORCHID)", "RFC 4843", false, false, false, false },
	{ "2001:20::/28", 0, "ORCHIDv2", "RFC 7343", true, true, true, true },
	{ "2001:30::/28", 0, "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", true, true, true, true },
	{ "2001:db8::/32", C(DOCUMENTATION), "Documentation", "RFC 3849", false, false, false, false },
	{ "2002::/16", C(TRANSLATION), "6to4", "RFC 3056", true, true, true, false },
	{ "2620:4f:8000::/48", 0, "Direct Delegation AS112 Service", "RFC 7534", true, true, true, true },
	{ "3ffe::/16", C(RESERVED), "Deprecated (6bone)", "RFC 3701", false, false, false, false },
	{ "3fff::/20", C(DOCUMENTATION), "Documentation", "RFC 9637", false, false, false, false },
	{ "5f00::/16", C(RESERVED), "Segment Routing (SRv6) SIDs", "RFC 9602", true, true, true, false },
	{ "fc00::/7", C(PRIVATE), "Unique-Local", "RFC 4193", true, true, true, false },
	{ "fd00:ec2::254/128", C(PRIVATE) | C(METADATA), "Cloud metadata service", "", true, true, true, false },
	{ "fe80::/10", C(LINK_LOCAL), "Link-Local Unicast", "RFC 4291", true, true, false, false },
	{ "ff00::/8", C(MULTICAST), "Multicast", "RFC 4291", false, true, true, false },
	/* IPv6 Address Space registry: the blocks outside 2000::/3 that are no
	 * special-purpose entry's. */
	{ "::/8", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "100::/8", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "200::/7", C(RESERVED), "Reserved by IETF", "RFC 4048", false, false, false, false, true },
	{ "400::/6", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "800::/5", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "1000::/4", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "4000::/3", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "6000::/3", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "8000::/3", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "a000::/3", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "c000::/3", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "e000::/4", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "f000::/5", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "f800::/6", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "fe00::/9", C(RESERVED), "Reserved by IETF", "RFC 4291", false, false, false, false, true },
	{ "fec0::/10", C(RESERVED), "Deprecated (Site-Local)", "RFC 3879", false, false, false, false, true },
};
#undef C

static struct flowsdn_prefix special_prefix[ARRAY_SIZE(specials)];
_Static_assert(ARRAY_SIZE(specials) < UINT8_MAX, "entry indexes fit a byte");
static pthread_once_t special_once = PTHREAD_ONCE_INIT;

static void special_init(void)
{
	FLOWSDN_OPTS(flowsdn_prefix_opts, o, .flags = 0);

	for (size_t i = 0; i < ARRAY_SIZE(specials); i++) {
		/* The table is ours; a parse failure is a bug caught by the tests,
		 * which check every entry against its registry text. */
		if (flowsdn_prefix_parse(specials[i].text, strlen(specials[i].text), &o, &special_prefix[i]) < 0)
			special_prefix[i].addr.family = 0;
	}
}

/* The most specific entry holding @addr, or -1. */
static int special_lookup(const struct flowsdn_addr *addr, unsigned int *ret_classes)
{
	int best = -1;
	unsigned int classes = 0;

	pthread_once(&special_once, special_init);
	for (size_t i = 0; i < ARRAY_SIZE(specials); i++) {
		if (!flowsdn_prefix_contains_addr(&special_prefix[i], addr))
			continue;
		if (!specials[i].space)
			classes |= specials[i].classes;
		/* IPv4-compatible ::/96 does not cover :: and ::1 (their own entries). */
		if (best < 0 || special_prefix[i].len > special_prefix[best].len)
			best = (int)i;
	}
	/* A space block counts only where no special-purpose entry does. */
	if (best >= 0 && specials[best].space)
		classes |= specials[best].classes;
	if (classes & FLOWSDN_ADDR_V4_COMPAT && best >= 0 &&
	    (specials[best].classes & (FLOWSDN_ADDR_UNSPECIFIED | FLOWSDN_ADDR_LOOPBACK)))
		classes &= ~(unsigned int)FLOWSDN_ADDR_V4_COMPAT;
	*ret_classes = classes;
	return best;
}

FLOWSDN_API int flowsdn_addr_info(const struct flowsdn_addr *addr, struct flowsdn_addr_info *ret_info)
{
	struct flowsdn_addr_info info = { 0 };
	unsigned int classes;
	int best;

	if (!addr || !ret_info || !family_ok(addr->family))
		return -EINVAL;
	best = special_lookup(addr, &classes);
	info.classes = classes;
	if (best < 0) {
		info.name = "";
		info.rfc = "";
		info.source = info.destination = info.forwardable = info.globally_reachable = true;
	} else {
		info.name = specials[best].name;
		info.rfc = specials[best].rfc;
		info.source = specials[best].src;
		info.destination = specials[best].dst;
		info.forwardable = specials[best].fwd;
		info.globally_reachable = specials[best].global;
	}
	if (info.globally_reachable)
		info.classes |= FLOWSDN_ADDR_PUBLIC;
	*ret_info = info;
	return 0;
}

FLOWSDN_API unsigned int flowsdn_addr_classify(const struct flowsdn_addr *addr)
{
	struct flowsdn_addr_info info;

	return flowsdn_addr_info(addr, &info) < 0 ? 0 : info.classes;
}

FLOWSDN_API bool flowsdn_addr_is_public(const struct flowsdn_addr *addr)
{
	return flowsdn_addr_classify(addr) == FLOWSDN_ADDR_PUBLIC;
}

#define N_SPECIALS ARRAY_SIZE(specials)

/*
 * Marks in @seen each entry that is the most specific one for some address
 * of @p (seen[N_SPECIALS]: an address in no entry).  Walks down the prefix
 * tree only where an entry lies strictly inside the current prefix, and
 * looks at the @n candidate entries @cand only: those that can matter
 * below (the one governing the parent, and the entries inside it), so a
 * call costs about the table size times the depth of its entries.
 */
static void prefix_governing(const struct flowsdn_prefix *p, const uint8_t *cand, size_t n, bool *seen)
{
	uint8_t sub[N_SPECIALS + 1];
	size_t m = 0;
	int governing = -1;

	for (size_t k = 0; k < n; k++) {
		const struct flowsdn_prefix *e = &special_prefix[cand[k]];

		if (flowsdn_prefix_contains(e, p)) {
			if (governing < 0 || e->len > special_prefix[governing].len)
				governing = cand[k];
		} else if (flowsdn_prefix_contains(p, e)) {
			sub[m++] = cand[k];
		}
	}
	if (m && p->len < flowsdn_addr_bits(&p->addr)) {
		struct flowsdn_prefix lo = *p, hi;
		unsigned int bit = p->len;
		bool news = !seen[governing < 0 ? N_SPECIALS : (size_t)governing];

		/* Below, only these entries (or none) can govern: nothing to
		 * learn when each was seen already. */
		for (size_t k = 0; k < m && !news; k++)
			news = !seen[sub[k]];
		if (!news)
			return;
		if (governing >= 0)
			sub[m++] = (uint8_t)governing;
		lo.len = (uint8_t)(p->len + 1);
		hi = lo;
		hi.addr.bytes[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		prefix_governing(&lo, sub, m, seen);
		prefix_governing(&hi, sub, m, seen);
		return;
	}
	seen[governing < 0 ? N_SPECIALS : (size_t)governing] = true;
}

FLOWSDN_API unsigned int flowsdn_prefix_classify(const struct flowsdn_prefix *prefix)
{
	bool seen[N_SPECIALS + 1] = { false };
	uint8_t all[N_SPECIALS];
	unsigned int classes = 0;

	if (!prefix || !family_ok(prefix->addr.family))
		return 0;
	if (prefix->len == flowsdn_addr_bits(&prefix->addr))
		return flowsdn_addr_classify(&prefix->addr);
	pthread_once(&special_once, special_init);
	for (size_t i = 0; i < N_SPECIALS; i++)
		all[i] = (uint8_t)i;
	prefix_governing(prefix, all, N_SPECIALS, seen);
	for (size_t i = 0; i < N_SPECIALS; i++) {
		/* A special-purpose entry counts where it overlaps; a space
		 * block only where some address of @prefix is no
		 * special-purpose entry's (it governs that address). */
		if (specials[i].space ? seen[i] : flowsdn_prefix_overlaps(&special_prefix[i], prefix))
			classes |= specials[i].classes;
		if (seen[i] && specials[i].global)
			classes |= FLOWSDN_ADDR_PUBLIC;
	}
	if (seen[N_SPECIALS])
		classes |= FLOWSDN_ADDR_PUBLIC;
	return classes;
}

FLOWSDN_API const char *flowsdn_addr_class_name(unsigned int cls)
{
	static const char *const names[] = {
		"public", "private", "loopback", "link-local", "metadata", "cgnat",
		"multicast", "documentation", "ipv4-mapped", "ipv4-compatible",
		"unspecified", "broadcast", "this-network", "reserved", "benchmarking",
		"translation", "discard",
	};

	if (!cls || (cls & (cls - 1)))
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (cls == 1u << i)
			return names[i];
	return NULL;
}
