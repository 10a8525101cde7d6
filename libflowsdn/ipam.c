/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host-scope IPAM: pools of addresses handed out to (container id,
 * ifname) owners, persisted in a state directory shared by processes.
 *
 * Persistence: a snapshot, not an append log.  Every change rewrites
 * "<dir>/ipam.state" whole through util_write_file_atomic() (temporary
 * file, fsync, rename, directory fsync).  The state is small (one record
 * of ~30 + id bytes per allocation; a node holds hundreds of pods, not
 * millions), every operation already re-reads it under the lock to pick
 * up other processes' changes, and a snapshot has a single on-disk state
 * at every instant: a crash leaves either the old or the new file (plus a
 * stray temporary, removed at the next open), never a tail to repair, and
 * needs no compaction.  An append log would save the rewrite but add
 * torn-record recovery and compaction for no gain at this size.
 *
 * Format: the binary container of statefile.h (magic "FSDNIPAM", version,
 * CRC32C) rather than JSON: the file is private to the library, the
 * checksum catches damage JSON would parse silently, and there is no
 * parser to harden.  Payload version 1, little-endian:
 *   u64 generation
 *   u32 n_pools, then per pool:  u8 family, u8 len, u8 addr[16], u64 cursor
 *   u32 n_allocs, then per allocation:
 *       u8 family, u8 addr[16], u8 ifname_len, ifname, u16 id_len, id
 *
 * Concurrency: "<dir>/ipam.lock" is flock()ed (exclusive to change,
 * shared to read) around every operation; the state file itself is
 * replaced by rename so it cannot carry the lock.  Under the lock each
 * operation compares the file's payload with the one it last parsed and
 * re-parses only when another process changed it.
 */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <flowsdn/ipam.h>
#include <flowsdn/netlink.h>

#include "internal.h"
#include "names.h"
#include "statefile.h"

#define IPAM_MAGIC "FSDNIPAM"
#define IPAM_VERSION 1
#define IPAM_STATE_FILE "ipam.state"
#define IPAM_LOCK_FILE "ipam.lock"
/* Bound on the state file: every pool full with the longest ids. */
#define IPAM_STATE_MAX ((size_t)256 << 20)

struct pool {
	struct flowsdn_prefix prefix;
	uint64_t size;
	uint64_t reserved;
	uint64_t used;
	uint64_t cursor;    /* next index to try */
	uint64_t *bitmap;   /* 1 = reserved, allocated, or past the end */
	size_t words;
	/* Out of the configured set (flowsdn_ipam_set_pools()) but still
	 * holding addresses: never allocated from, dropped once empty. */
	bool draining;
};

struct alloc {
	char *id;
	char ifname[FLOWSDN_IPAM_IFNAME_MAX + 1];
	struct flowsdn_addr addr;
	size_t pool;
};

struct flowsdn_ipam {
	char *state_path;
	int lock_fd;
	struct pool pools[FLOWSDN_IPAM_MAX_POOLS];
	size_t n_pools;
	struct alloc *allocs;
	size_t n_allocs, cap_allocs;
	uint64_t generation;
	/* Payload last parsed or written; NULL forces a re-parse. */
	uint8_t *cached;
	size_t cached_len;
	/* The diag of the call in progress (flowsdn_ipam_new(),
	 * flowsdn_ipam_allocate()); NULL otherwise. */
	struct diag *diag;
};

/* Names the pool, file or holder at fault in the current call's diag
 * (and the debug log) and returns @r. */
static int fail(struct flowsdn_ipam *ipam, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(struct flowsdn_ipam *ipam, int r, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_debug("ipam: %s", msg);
	diag_add_text(ipam->diag, DIAG_ERROR, "", "ipam", NULL, "%s", msg);
	return r;
}

_Static_assert(FLOWSDN_IPAM_CONTAINER_ID_MAX == NAMES_CONTAINER_ID_MAX, "one container id limit");
_Static_assert(FLOWSDN_IPAM_IFNAME_MAX == NAMES_IFNAME_MAX, "one interface name limit");

FLOWSDN_API bool flowsdn_ipam_owner_valid(const char *container_id, const char *ifname)
{
	return names_container_id_valid(container_id) && names_ifname_valid(ifname);
}

static void bit_set(uint64_t *bm, uint64_t i)
{
	bm[i / 64] |= UINT64_C(1) << (i % 64);
}

static void bit_clear(uint64_t *bm, uint64_t i)
{
	bm[i / 64] &= ~(UINT64_C(1) << (i % 64));
}

static bool bit_test(const uint64_t *bm, uint64_t i)
{
	return bm[i / 64] >> (i % 64) & 1;
}

/* First clear bit at or after @from, wrapping around; UINT64_MAX if none. */
static uint64_t bitmap_next_free(const struct pool *p, uint64_t from)
{
	size_t w0 = (size_t)(from / 64);

	for (size_t k = 0; k <= p->words; k++) {
		size_t w = (w0 + k) % p->words;
		uint64_t free_bits = ~p->bitmap[w];

		if (k == 0)
			free_bits &= ~UINT64_C(0) << (from % 64);
		else if (k == p->words)
			free_bits &= from % 64 ? ~(~UINT64_C(0) << (from % 64)) : 0;
		if (free_bits)
			return (uint64_t)w * 64 + (uint64_t)__builtin_ctzll(free_bits);
	}
	return UINT64_MAX;
}

static uint64_t pool_first_usable(void)
{
	return 2; /* 0 network, 1 gateway */
}

/* Clears a pool to "nothing allocated": only reserved bits (and the bits
 * past the end of the last word) are set. */
static void pool_reset(struct pool *p)
{
	memset(p->bitmap, 0, p->words * sizeof(uint64_t));
	for (uint64_t i = p->size; i < (uint64_t)p->words * 64; i++)
		bit_set(p->bitmap, i);
	bit_set(p->bitmap, 0);
	bit_set(p->bitmap, 1);
	if (p->prefix.addr.family == FLOWSDN_AF_INET)
		bit_set(p->bitmap, p->size - 1);
	p->used = 0;
	p->cursor = pool_first_usable();
}

static bool pool_reserved(const struct pool *p, uint64_t i)
{
	return i < pool_first_usable() || (p->prefix.addr.family == FLOWSDN_AF_INET && i == p->size - 1);
}

static int find_pool(const struct flowsdn_ipam *ipam, const struct flowsdn_addr *a, uint64_t *ret_index)
{
	for (size_t i = 0; i < ipam->n_pools; i++) {
		if (flowsdn_prefix_contains_addr(&ipam->pools[i].prefix, a)) {
			if (flowsdn_prefix_index(&ipam->pools[i].prefix, a, ret_index) < 0)
				return -1;
			return (int)i;
		}
	}
	return -1;
}

static void allocs_clear(struct flowsdn_ipam *ipam)
{
	for (size_t i = 0; i < ipam->n_allocs; i++)
		free(ipam->allocs[i].id);
	ipam->n_allocs = 0;
}

static void cache_drop(struct flowsdn_ipam *ipam)
{
	free(ipam->cached);
	ipam->cached = NULL;
	ipam->cached_len = 0;
}

static int allocs_reserve(struct flowsdn_ipam *ipam, size_t n)
{
	struct alloc *na;
	size_t cap;

	if (n <= ipam->cap_allocs)
		return 0;
	cap = ipam->cap_allocs ? ipam->cap_allocs : 16;
	while (cap < n)
		cap *= 2;
	na = reallocarray(ipam->allocs, cap, sizeof(*na));
	if (!na)
		return -ENOMEM;
	ipam->allocs = na;
	ipam->cap_allocs = cap;
	return 0;
}

static int owner_cmp(const struct alloc *a, const struct alloc *b)
{
	int c = strcmp(a->id, b->id);

	if (!c)
		c = strcmp(a->ifname, b->ifname);
	if (!c)
		c = (int)a->addr.family - (int)b->addr.family;
	return c;
}

static int owner_cmp_qsort(const void *a, const void *b)
{
	return owner_cmp(*(const struct alloc *const *)a, *(const struct alloc *const *)b);
}

/* Every owner holds at most one address per family. */
static int check_owner_duplicates(struct flowsdn_ipam *ipam)
{
	_cleanup_free_ const struct alloc **v = NULL;

	if (ipam->n_allocs < 2)
		return 0;
	v = calloc(ipam->n_allocs, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ipam->n_allocs; i++)
		v[i] = &ipam->allocs[i];
	qsort(v, ipam->n_allocs, sizeof(*v), owner_cmp_qsort);
	for (size_t i = 1; i < ipam->n_allocs; i++)
		if (owner_cmp(v[i - 1], v[i]) == 0)
			return fail(ipam, -FLOWSDN_E_IPAM_STATE_CORRUPT,
				    "state file %s: owner %s/%s holds two addresses of one family",
				    ipam->state_path, v[i]->id, v[i]->ifname);
	return 0;
}

static int parse_addr(struct sreader *rd, struct flowsdn_addr *a)
{
	uint8_t fam = sreader_u8(rd);
	uint8_t bytes[16];

	sreader_get(rd, bytes, sizeof(bytes));
	if (rd->bad)
		return -1;
	if (fam != FLOWSDN_AF_INET && fam != FLOWSDN_AF_INET6)
		return -1;
	return flowsdn_addr_from_bytes(fam, bytes, a) < 0 ? -1 : 0;
}

/* Rebuilds the in-memory state from a verified payload.  On failure the
 * state is left empty and the cache dropped, so nothing half-parsed is
 * ever used or written back. */
static int state_parse(struct flowsdn_ipam *ipam, const uint8_t *payload, size_t len)
{
	struct sreader rd = { .p = payload, .len = len };
	char pbuf[FLOWSDN_PREFIX_STRLEN], abuf[FLOWSDN_ADDR_STRLEN];
	uint32_t n;
	int r;

	cache_drop(ipam);
	allocs_clear(ipam);
	for (size_t i = 0; i < ipam->n_pools; i++)
		pool_reset(&ipam->pools[i]);

	ipam->generation = sreader_u64(&rd);
	n = sreader_u32(&rd);
	if (n > len / 26)
		goto corrupt;
	for (uint32_t i = 0; i < n; i++) {
		struct flowsdn_prefix p;
		struct flowsdn_addr a;
		uint8_t plen;
		uint64_t cursor;

		if (parse_addr(&rd, &a) < 0)
			goto corrupt;
		plen = sreader_u8(&rd);
		cursor = sreader_u64(&rd);
		if (rd.bad || flowsdn_prefix_make(&a, plen, &p) < 0)
			goto corrupt;
		for (size_t k = 0; k < ipam->n_pools; k++) {
			struct pool *pl = &ipam->pools[k];

			if (flowsdn_prefix_compare(&pl->prefix, &p) != 0)
				continue;
			if (cursor >= pl->size)
				goto corrupt;
			pl->cursor = cursor;
		}
	}

	n = sreader_u32(&rd);
	if (n > len / 21)
		goto corrupt;
	r = allocs_reserve(ipam, n);
	if (r < 0)
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		struct alloc *al = &ipam->allocs[ipam->n_allocs];
		uint8_t iflen;
		uint16_t idlen;
		uint64_t idx;
		int pi;

		if (parse_addr(&rd, &al->addr) < 0)
			goto corrupt;
		iflen = sreader_u8(&rd);
		if (iflen > FLOWSDN_IPAM_IFNAME_MAX)
			goto corrupt;
		memset(al->ifname, 0, sizeof(al->ifname));
		sreader_get(&rd, al->ifname, iflen);
		idlen = sreader_u16(&rd);
		if (rd.bad || idlen > FLOWSDN_IPAM_CONTAINER_ID_MAX || idlen > rd.len - rd.off)
			goto corrupt;
		al->id = strndup((const char *)rd.p + rd.off, idlen);
		if (!al->id) {
			r = -ENOMEM;
			goto fail;
		}
		rd.off += idlen;
		ipam->n_allocs++;
		if (strlen(al->id) != idlen || strlen(al->ifname) != iflen ||
		    !flowsdn_ipam_owner_valid(al->id, al->ifname))
			goto corrupt;
		flowsdn_addr_format(&al->addr, abuf, sizeof(abuf));
		pi = find_pool(ipam, &al->addr, &idx);
		if (pi < 0) {
			r = fail(ipam, -FLOWSDN_E_IPAM_ORPHAN,
				 "state file %s: %s (owner %s/%s) is in no configured pool; add its pool back or release it",
				 ipam->state_path, abuf, al->id, al->ifname);
			goto fail;
		}
		al->pool = (size_t)pi;
		if (pool_reserved(&ipam->pools[pi], idx) || bit_test(ipam->pools[pi].bitmap, idx)) {
			flowsdn_prefix_format(&ipam->pools[pi].prefix, pbuf, sizeof(pbuf));
			r = fail(ipam, -FLOWSDN_E_IPAM_STATE_CORRUPT,
				 "state file %s: %s of pool %s is %s", ipam->state_path, abuf, pbuf,
				 pool_reserved(&ipam->pools[pi], idx) ? "a reserved address" : "allocated twice");
			goto fail;
		}
		bit_set(ipam->pools[pi].bitmap, idx);
		ipam->pools[pi].used++;
	}
	if (rd.bad || rd.off != rd.len)
		goto corrupt;
	r = check_owner_duplicates(ipam);
	if (r < 0)
		goto fail;
	ipam->cached = malloc(len ? len : 1);
	if (!ipam->cached) {
		r = -ENOMEM;
		goto fail;
	}
	memcpy(ipam->cached, payload, len);
	ipam->cached_len = len;
	return 0;

corrupt:
	r = fail(ipam, -FLOWSDN_E_IPAM_STATE_CORRUPT, "state file %s: malformed record at byte %zu",
		 ipam->state_path, rd.off + STATEFILE_HEADER_LEN);
fail:
	allocs_clear(ipam);
	for (size_t i = 0; i < ipam->n_pools; i++)
		pool_reset(&ipam->pools[i]);
	cache_drop(ipam);
	return r;
}

/* Brings the in-memory state up to date with the file (lock held). */
static int state_refresh(struct flowsdn_ipam *ipam)
{
	_cleanup_free_ char *data = NULL;
	const uint8_t *payload;
	size_t len;
	uint32_t version;
	int r;

	r = statefile_read(ipam->state_path, IPAM_MAGIC, IPAM_VERSION, IPAM_STATE_MAX, &data, &payload,
			   &len, &version);
	if (r == -ENOENT) {
		/* No state yet: empty, generation 0. */
		if (ipam->cached && ipam->cached_len == 0)
			return 0;
		cache_drop(ipam);
		allocs_clear(ipam);
		for (size_t i = 0; i < ipam->n_pools; i++)
			pool_reset(&ipam->pools[i]);
		ipam->generation = 0;
		ipam->cached = malloc(1);
		return ipam->cached ? 0 : -ENOMEM;
	}
	if (r == -EBADMSG)
		return fail(ipam, -FLOWSDN_E_IPAM_STATE_CORRUPT,
			    "state file %s is truncated or fails its checksum; move it away to start empty",
			    ipam->state_path);
	if (r == -EPROTONOSUPPORT)
		return fail(ipam, -FLOWSDN_E_IPAM_STATE_VERSION,
			    "state file %s was written by a newer format version than %d",
			    ipam->state_path, IPAM_VERSION);
	if (r < 0)
		return fail(ipam, r, "cannot read state file %s: %s", ipam->state_path, strerror(-r));
	if (ipam->cached && ipam->cached_len == len && len && memcmp(ipam->cached, payload, len) == 0)
		return 0;
	return state_parse(ipam, payload, len);
}

/* Writes the in-memory state with the next generation (lock held).  On
 * failure the cache is dropped so the next call re-reads the file. */
static int state_save(struct flowsdn_ipam *ipam)
{
	struct sbuf b = { 0 };
	int r;

	if (!ipam->state_path) /* in memory only */
		return 0;

	sbuf_u64(&b, ipam->generation + 1);
	sbuf_u32(&b, (uint32_t)ipam->n_pools);
	for (size_t i = 0; i < ipam->n_pools; i++) {
		const struct pool *p = &ipam->pools[i];

		sbuf_u8(&b, p->prefix.addr.family);
		sbuf_put(&b, p->prefix.addr.bytes, 16);
		sbuf_u8(&b, p->prefix.len);
		sbuf_u64(&b, p->cursor);
	}
	sbuf_u32(&b, (uint32_t)ipam->n_allocs);
	for (size_t i = 0; i < ipam->n_allocs; i++) {
		const struct alloc *al = &ipam->allocs[i];
		size_t iflen = strlen(al->ifname), idlen = strlen(al->id);

		sbuf_u8(&b, al->addr.family);
		sbuf_put(&b, al->addr.bytes, 16);
		sbuf_u8(&b, (uint8_t)iflen);
		sbuf_put(&b, al->ifname, iflen);
		sbuf_u16(&b, (uint16_t)idlen);
		sbuf_put(&b, al->id, idlen);
	}
	r = b.err;
	if (!r)
		r = statefile_write(ipam->state_path, IPAM_MAGIC, IPAM_VERSION, b.data, b.len);
	if (r < 0) {
		cache_drop(ipam);
		sbuf_done(&b);
		return fail(ipam, r, "cannot write state file %s: %s", ipam->state_path, strerror(-r));
	}
	ipam->generation++;
	free(ipam->cached);
	ipam->cached = b.data;
	ipam->cached_len = b.len;
	return 0;
}

/* Locks and refreshes; on success the caller must call unlock(). */
static int begin(struct flowsdn_ipam *ipam, bool exclusive)
{
	int r;

	if (ipam->lock_fd < 0) /* in memory only */
		return 0;
	r = statefile_lock(ipam->lock_fd, exclusive, false);
	if (r < 0)
		return fail(ipam, r, "cannot lock %s.lock: %s", ipam->state_path, strerror(-r));
	r = state_refresh(ipam);
	if (r < 0)
		statefile_unlock(ipam->lock_fd);
	return r;
}

static void end(struct flowsdn_ipam *ipam)
{
	if (ipam->lock_fd >= 0)
		statefile_unlock(ipam->lock_fd);
}

/* Address classes a pod address can never be in: not unicast (multicast,
 * broadcast, unspecified), never routed off the host or link (loopback,
 * link-local, where the endpoints' gateway lives, and "this network"),
 * the cloud metadata service a pod must not impersonate, and the IPv6
 * forms of IPv4 addresses that the stack treats as IPv4 (mapped) or as
 * automatic tunnels (compatible). */
#define POOL_REFUSED_CLASSES                                                                       \
	(FLOWSDN_ADDR_LOOPBACK | FLOWSDN_ADDR_LINK_LOCAL | FLOWSDN_ADDR_METADATA | FLOWSDN_ADDR_MULTICAST | \
	 FLOWSDN_ADDR_UNSPECIFIED | FLOWSDN_ADDR_BROADCAST | FLOWSDN_ADDR_THIS_NETWORK |                   \
	 FLOWSDN_ADDR_V4_MAPPED | FLOWSDN_ADDR_V4_COMPAT)

/* Refuses a pool that cannot work as a pod pool, saying why. */
static int check_pool_class(struct flowsdn_ipam *ipam, const struct flowsdn_prefix *p, const char *text)
{
	const char *gw_text = p->addr.family == FLOWSDN_AF_INET ? FLOWSDN_GATEWAY_V4 : FLOWSDN_GATEWAY_V6;
	unsigned int refused = flowsdn_prefix_classify(p) & POOL_REFUSED_CLASSES;
	struct flowsdn_addr gw;

	if (flowsdn_addr_parse(gw_text, strlen(gw_text), &gw) == 0 && flowsdn_prefix_contains_addr(p, &gw))
		return fail(ipam, -FLOWSDN_E_IPAM_POOL_CLASS,
			    "pool %s holds %s, the gateway address every endpoint routes through", text, gw_text);
	for (unsigned int bit = 1; refused; bit <<= 1) {
		if (refused & bit)
			return fail(ipam, -FLOWSDN_E_IPAM_POOL_CLASS,
				    "pool %s holds %s addresses, which no pod can use", text,
				    flowsdn_addr_class_name(bit));
	}
	return 0;
}

static int check_pools(struct flowsdn_ipam *ipam, const struct flowsdn_prefix *pools, size_t n)
{
	char a[FLOWSDN_PREFIX_STRLEN], b[FLOWSDN_PREFIX_STRLEN];
	int r;

	if (n == 0 || n > FLOWSDN_IPAM_MAX_POOLS)
		return fail(ipam, -EINVAL, "between 1 and %d pools are needed, got %zu",
			    FLOWSDN_IPAM_MAX_POOLS, n);
	for (size_t i = 0; i < n; i++) {
		const struct flowsdn_prefix *p = &pools[i];
		struct flowsdn_prefix norm;
		unsigned int bits = flowsdn_addr_bits(&p->addr);

		if (!bits || flowsdn_prefix_make(&p->addr, p->len, &norm) < 0 ||
		    flowsdn_prefix_compare(&norm, p) != 0)
			return fail(ipam, -EINVAL, "pool %zu is not a valid prefix (host bits set?)", i);
		flowsdn_prefix_format(p, a, sizeof(a));
		/* IPv4: network, gateway, broadcast + one; IPv6: network, gateway + one. */
		if (p->len > bits - 2)
			return fail(ipam, -FLOWSDN_E_IPAM_POOL_TOO_SMALL,
				    "pool %s has no usable address (IPv4 needs /30 or shorter, IPv6 /126)", a);
		if (bits - p->len > 20)
			return fail(ipam, -FLOWSDN_E_IPAM_POOL_TOO_BIG,
				    "pool %s is larger than the 2^20 addresses supported (IPv4 /12, IPv6 /108 at most)", a);
		r = check_pool_class(ipam, p, a);
		if (r < 0)
			return r;
		for (size_t k = 0; k < i; k++) {
			if (flowsdn_prefix_overlaps(&pools[k], p)) {
				flowsdn_prefix_format(&pools[k], b, sizeof(b));
				return fail(ipam, -FLOWSDN_E_IPAM_POOL_OVERLAP, "pools %s and %s overlap", b, a);
			}
		}
	}
	return 0;
}

/* An empty pool of @prefix (its bitmap made). */
static int pool_init(struct pool *p, const struct flowsdn_prefix *prefix)
{
	p->prefix = *prefix;
	p->size = flowsdn_prefix_size(prefix);
	p->reserved = prefix->addr.family == FLOWSDN_AF_INET ? 3 : 2;
	p->words = (size_t)((p->size + 63) / 64);
	p->bitmap = calloc(p->words, sizeof(uint64_t));
	if (!p->bitmap)
		return -ENOMEM;
	pool_reset(p);
	return 0;
}

FLOWSDN_API void flowsdn_ipam_free(struct flowsdn_ipam *ipam)
{
	if (!ipam)
		return;
	allocs_clear(ipam);
	free(ipam->allocs);
	for (size_t i = 0; i < ipam->n_pools; i++)
		free(ipam->pools[i].bitmap);
	cache_drop(ipam);
	if (ipam->lock_fd >= 0)
		close(ipam->lock_fd);
	free(ipam->state_path);
	free(ipam);
}

FLOWSDN_API int flowsdn_ipam_new(const char *state_dir, const struct flowsdn_prefix *pools, size_t n_pools,
				 const struct flowsdn_ipam_opts *opts, struct flowsdn_ipam **ret,
				 struct flowsdn_diag *diag)
{
	struct flowsdn_ipam *ipam;
	_cleanup_free_ char *lock_path = NULL;
	int r;

	if ((state_dir && !*state_dir) || !pools || !ret || !OPTS_VALID(opts, flowsdn_ipam_opts))
		return -EINVAL;
	diag_begin(flowsdn__diag(diag), 0);
	ipam = calloc(1, sizeof(*ipam));
	if (!ipam)
		return -ENOMEM;
	ipam->lock_fd = -1;
	ipam->diag = flowsdn__diag(diag);
	r = check_pools(ipam, pools, n_pools);
	if (r < 0)
		goto out_free;
	for (size_t i = 0; i < n_pools; i++) {
		r = pool_init(&ipam->pools[i], &pools[i]);
		if (r < 0)
			goto out_free;
		ipam->n_pools++;
	}
	if (!state_dir) {
		ipam->diag = NULL;
		*ret = ipam;
		return 0;
	}
	if (asprintf(&ipam->state_path, "%s/%s", state_dir, IPAM_STATE_FILE) < 0 ||
	    asprintf(&lock_path, "%s/%s", state_dir, IPAM_LOCK_FILE) < 0) {
		ipam->state_path = lock_path = NULL;
		r = -ENOMEM;
		goto out_free;
	}
	r = statefile_ensure_dir(state_dir);
	if (r < 0) {
		r = fail(ipam, r, "cannot create state directory %s: %s", state_dir, strerror(-r));
		goto out_free;
	}
	r = statefile_lock_open(lock_path);
	if (r < 0) {
		r = fail(ipam, r, "cannot open lock file %s: %s", lock_path, strerror(-r));
		goto out_free;
	}
	ipam->lock_fd = r;
	r = begin(ipam, true);
	if (r < 0)
		goto out_free;
	/* Every writer holds this lock, so any temporary is a crashed one's. */
	statefile_remove_stale_temps(state_dir, IPAM_STATE_FILE);
	end(ipam);
	ipam->diag = NULL;
	*ret = ipam;
	return 0;

out_free:
	flowsdn_ipam_free(ipam);
	return r;
}

static struct alloc *find_owner(struct flowsdn_ipam *ipam, const char *id, const char *ifname, int family)
{
	for (size_t i = 0; i < ipam->n_allocs; i++) {
		struct alloc *al = &ipam->allocs[i];

		if (al->addr.family == family && !strcmp(al->ifname, ifname) && !strcmp(al->id, id))
			return al;
	}
	return NULL;
}

static int fail_owner(struct flowsdn_ipam *ipam, const char *id, const char *ifname)
{
	return fail(ipam, -FLOWSDN_E_IPAM_OWNER, "invalid owner \"%.64s\"/\"%.16s\"", id ? id : "(null)",
		    ifname ? ifname : "(null)");
}

static void fill_result(const struct flowsdn_ipam *ipam, const struct alloc *const found[2],
			struct flowsdn_ipam_result *res)
{
	memset(res, 0, sizeof(*res));
	for (int f = 0; f < 2; f++) {
		const struct pool *p;

		if (!found[f])
			continue;
		p = &ipam->pools[found[f]->pool];
		res->leases[res->n].addr = found[f]->addr;
		res->leases[res->n].pool = p->prefix;
		flowsdn_prefix_nth(&p->prefix, 1, &res->leases[res->n].gateway);
		res->n++;
	}
}

static int family_of(unsigned int bit)
{
	return bit == FLOWSDN_IPAM_IPV4 ? FLOWSDN_AF_INET : FLOWSDN_AF_INET6;
}

static unsigned int families_with_pools(const struct flowsdn_ipam *ipam)
{
	unsigned int m = 0;

	for (size_t i = 0; i < ipam->n_pools; i++)
		m |= ipam->pools[i].prefix.addr.family == FLOWSDN_AF_INET ? FLOWSDN_IPAM_IPV4 : FLOWSDN_IPAM_IPV6;
	return m;
}

/* Takes the next free address of the family (first pool with room). */
static int take_next(struct flowsdn_ipam *ipam, int family, struct flowsdn_addr *ret_addr, size_t *ret_pool)
{
	char names[FLOWSDN_IPAM_MAX_POOLS * 8 + 64] = "", pbuf[FLOWSDN_PREFIX_STRLEN];
	size_t off = 0, usable = 0;

	for (size_t i = 0; i < ipam->n_pools; i++) {
		struct pool *p = &ipam->pools[i];
		uint64_t idx;
		int n;

		if (p->prefix.addr.family != family || p->draining)
			continue;
		idx = bitmap_next_free(p, p->cursor);
		if (idx != UINT64_MAX && idx < p->size) {
			if (flowsdn_prefix_nth(&p->prefix, idx, ret_addr) < 0)
				return -EIO;
			bit_set(p->bitmap, idx);
			p->used++;
			p->cursor = idx + 1 < p->size ? idx + 1 : pool_first_usable();
			*ret_pool = i;
			return 0;
		}
		flowsdn_prefix_format(&p->prefix, pbuf, sizeof(pbuf));
		n = snprintf(names + off, sizeof(names) - off, "%s%s", off ? ", " : "", pbuf);
		if (n > 0 && (size_t)n < sizeof(names) - off)
			off += (size_t)n;
		usable += (size_t)(p->size - p->reserved);
	}
	return fail(ipam, -FLOWSDN_E_IPAM_EXHAUSTED, "pool %s is exhausted: %zu usable address%s, all in use",
		    names, usable, usable == 1 ? "" : "es");
}

static int take_requested(struct flowsdn_ipam *ipam, const struct flowsdn_addr *a, size_t *ret_pool)
{
	char abuf[FLOWSDN_ADDR_STRLEN], pbuf[FLOWSDN_PREFIX_STRLEN];
	uint64_t idx;
	int pi = find_pool(ipam, a, &idx);
	struct pool *p;

	flowsdn_addr_format(a, abuf, sizeof(abuf));
	if (pi < 0)
		return fail(ipam, -FLOWSDN_E_IPAM_NO_POOL, "requested address %s is in no pool", abuf);
	p = &ipam->pools[pi];
	flowsdn_prefix_format(&p->prefix, pbuf, sizeof(pbuf));
	if (pool_reserved(p, idx))
		return fail(ipam, -FLOWSDN_E_IPAM_RESERVED, "requested address %s is reserved in pool %s", abuf, pbuf);
	if (bit_test(p->bitmap, idx)) {
		for (size_t i = 0; i < ipam->n_allocs; i++)
			if (flowsdn_addr_equal(&ipam->allocs[i].addr, a))
				return fail(ipam, -FLOWSDN_E_IPAM_IN_USE, "requested address %s is held by %s/%s",
					    abuf, ipam->allocs[i].id, ipam->allocs[i].ifname);
		return fail(ipam, -FLOWSDN_E_IPAM_IN_USE, "requested address %s is in use", abuf);
	}
	bit_set(p->bitmap, idx);
	p->used++;
	*ret_pool = (size_t)pi;
	return 0;
}

static int allocate(struct flowsdn_ipam *ipam, const char *container_id, const char *ifname,
		    const struct flowsdn_ipam_alloc_opts *opts, struct flowsdn_ipam_result *ret)
{
	const struct flowsdn_addr *want[2] = { NULL, NULL };
	const struct flowsdn_addr *request;
	const struct alloc *found[2] = { NULL, NULL };
	size_t n_request, n_before;
	unsigned int families, have;
	bool changed = false;
	int r;

	if (!ipam || !OPTS_VALID(opts, flowsdn_ipam_alloc_opts))
		return -EINVAL;
	if (!flowsdn_ipam_owner_valid(container_id, ifname))
		return fail_owner(ipam, container_id, ifname);
	families = OPTS_GET(opts, families, 0);
	request = OPTS_GET(opts, request, NULL);
	n_request = OPTS_GET(opts, n_request, 0);
	have = families_with_pools(ipam);
	if (families & ~(FLOWSDN_IPAM_IPV4 | FLOWSDN_IPAM_IPV6) || (n_request && !request) || n_request > 2)
		return fail(ipam, -EINVAL, "bad allocation options");
	if (!families)
		families = have;
	if (families & ~have)
		return fail(ipam, -FLOWSDN_E_IPAM_NO_POOL, "no %s pool is configured",
			    families & ~have & FLOWSDN_IPAM_IPV4 ? "IPv4" : "IPv6");
	for (size_t i = 0; i < n_request; i++) {
		int f = request[i].family == FLOWSDN_AF_INET ? 0 : request[i].family == FLOWSDN_AF_INET6 ? 1 : -1;

		if (f < 0 || want[f] || !(families & (1u << f)))
			return fail(ipam, -EINVAL, "requested addresses must be one per selected family");
		want[f] = &request[i];
	}

	r = begin(ipam, true);
	if (r < 0)
		return r;
	n_before = ipam->n_allocs;
	r = allocs_reserve(ipam, ipam->n_allocs + 2);
	if (r < 0)
		goto out_unlock;
	for (int f = 0; f < 2; f++) {
		int family = family_of(1u << f);
		struct alloc *al;
		size_t pool = 0;

		if (!(families & (1u << f)))
			continue;
		al = find_owner(ipam, container_id, ifname, family);
		if (al) {
			if (want[f] && !flowsdn_addr_equal(want[f], &al->addr)) {
				char a[FLOWSDN_ADDR_STRLEN], b[FLOWSDN_ADDR_STRLEN];

				flowsdn_addr_format(want[f], a, sizeof(a));
				flowsdn_addr_format(&al->addr, b, sizeof(b));
				r = fail(ipam, -FLOWSDN_E_IPAM_OWNER_CONFLICT,
					 "%s/%s asked for %s but already holds %s", container_id, ifname, a, b);
				goto out_undo;
			}
			continue;
		}
		al = &ipam->allocs[ipam->n_allocs];
		r = want[f] ? take_requested(ipam, want[f], &pool) : take_next(ipam, family, &al->addr, &pool);
		if (r < 0)
			goto out_undo;
		if (want[f])
			al->addr = *want[f];
		al->pool = pool;
		snprintf(al->ifname, sizeof(al->ifname), "%s", ifname);
		al->id = strdup(container_id);
		ipam->n_allocs++;
		changed = true;
		if (!al->id) {
			r = -ENOMEM;
			goto out_undo;
		}
	}
	if (changed) {
		r = state_save(ipam);
		if (r < 0)
			goto out_undo;
	}
	found[0] = find_owner(ipam, container_id, ifname, FLOWSDN_AF_INET);
	found[1] = find_owner(ipam, container_id, ifname, FLOWSDN_AF_INET6);
	if (!(families & FLOWSDN_IPAM_IPV4))
		found[0] = NULL;
	if (!(families & FLOWSDN_IPAM_IPV6))
		found[1] = NULL;
	if (ret)
		fill_result(ipam, found, ret);
	r = 0;
	goto out_unlock;

out_undo:
	/* Nothing of this call was persisted: forget the in-memory changes by
	 * re-reading the file next time (in memory only: undo them). */
	cache_drop(ipam);
	if (!ipam->state_path) {
		while (ipam->n_allocs > n_before) {
			struct alloc *al = &ipam->allocs[--ipam->n_allocs];
			uint64_t index;
			int pi = find_pool(ipam, &al->addr, &index);

			if (pi >= 0) {
				bit_clear(ipam->pools[pi].bitmap, index);
				ipam->pools[pi].used--;
			}
			free(al->id);
			al->id = NULL;
		}
	}
out_unlock:
	end(ipam);
	return r;
}

FLOWSDN_API int flowsdn_ipam_allocate(struct flowsdn_ipam *ipam, const char *container_id, const char *ifname,
				      const struct flowsdn_ipam_alloc_opts *opts, struct flowsdn_ipam_result *ret,
				      struct flowsdn_diag *diag)
{
	int r;

	if (!ipam)
		return -EINVAL;
	ipam->diag = flowsdn__diag(diag);
	diag_begin(ipam->diag, 0);
	r = allocate(ipam, container_id, ifname, opts, ret);
	ipam->diag = NULL;
	return r;
}

FLOWSDN_API int flowsdn_ipam_lookup(struct flowsdn_ipam *ipam, const char *container_id, const char *ifname,
				    struct flowsdn_ipam_result *ret)
{
	const struct alloc *found[2];
	int r;

	if (!ipam || !ret)
		return -EINVAL;
	if (!flowsdn_ipam_owner_valid(container_id, ifname))
		return fail_owner(ipam, container_id, ifname);
	r = begin(ipam, false);
	if (r < 0)
		return r;
	found[0] = find_owner(ipam, container_id, ifname, FLOWSDN_AF_INET);
	found[1] = find_owner(ipam, container_id, ifname, FLOWSDN_AF_INET6);
	if (found[0] || found[1])
		fill_result(ipam, found, ret);
	else
		r = -ENOENT;
	end(ipam);
	return r;
}

/* Drops the draining pools that hold no address any more, renumbering
 * the allocations' pool indexes. */
static void pools_compact(struct flowsdn_ipam *ipam)
{
	size_t map[FLOWSDN_IPAM_MAX_POOLS], j = 0;

	for (size_t i = 0; i < ipam->n_pools; i++) {
		if (ipam->pools[i].draining && !ipam->pools[i].used) {
			free(ipam->pools[i].bitmap);
			map[i] = SIZE_MAX;
			continue;
		}
		map[i] = j;
		if (j != i)
			ipam->pools[j] = ipam->pools[i];
		j++;
	}
	if (j == ipam->n_pools)
		return;
	for (size_t i = j; i < ipam->n_pools; i++)
		memset(&ipam->pools[i], 0, sizeof(ipam->pools[i]));
	ipam->n_pools = j;
	for (size_t i = 0; i < ipam->n_allocs; i++)
		ipam->allocs[i].pool = map[ipam->allocs[i].pool];
}

static int release(struct flowsdn_ipam *ipam, const char *container_id, const char *ifname)
{
	size_t kept = 0;
	int released = 0, r;

	if (!ipam)
		return -EINVAL;
	if (!flowsdn_ipam_owner_valid(container_id, ifname))
		return fail_owner(ipam, container_id, ifname);
	r = begin(ipam, true);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ipam->n_allocs; i++) {
		struct alloc *al = &ipam->allocs[i];

		if (!strcmp(al->id, container_id) && !strcmp(al->ifname, ifname)) {
			struct pool *p = &ipam->pools[al->pool];
			uint64_t idx;

			if (flowsdn_prefix_index(&p->prefix, &al->addr, &idx) == 0) {
				bit_clear(p->bitmap, idx);
				p->used--;
			}
			free(al->id);
			released++;
			continue;
		}
		ipam->allocs[kept++] = *al;
	}
	ipam->n_allocs = kept;
	if (released && !ipam->state_path)
		pools_compact(ipam);
	if (released) {
		r = state_save(ipam);
		if (r < 0)
			goto out_unlock;
	}
	r = released;
out_unlock:
	end(ipam);
	return r;
}

FLOWSDN_API int flowsdn_ipam_release(struct flowsdn_ipam *ipam, const char *container_id, const char *ifname,
				     struct flowsdn_diag *diag)
{
	int r;

	if (!ipam)
		return -EINVAL;
	ipam->diag = flowsdn__diag(diag);
	diag_begin(ipam->diag, 0);
	r = release(ipam, container_id, ifname);
	ipam->diag = NULL;
	return r;
}

FLOWSDN_API int flowsdn_ipam_set_pools(struct flowsdn_ipam *ipam, const struct flowsdn_prefix *pools, size_t n_pools,
				       struct flowsdn_diag *diag)
{
	struct pool next[FLOWSDN_IPAM_MAX_POOLS];
	size_t map[FLOWSDN_IPAM_MAX_POOLS], n = 0;
	bool reused[FLOWSDN_IPAM_MAX_POOLS] = { false };
	char a[FLOWSDN_PREFIX_STRLEN], b[FLOWSDN_PREFIX_STRLEN];
	int r;

	if (!ipam || !pools)
		return -EINVAL;
	if (ipam->state_path)
		return -EOPNOTSUPP;
	ipam->diag = flowsdn__diag(diag);
	diag_begin(ipam->diag, 0);
	memset(next, 0, sizeof(next));
	r = check_pools(ipam, pools, n_pools);
	if (r < 0)
		goto out;
	/* The configured pools, in their order: a pool already there keeps
	 * its bitmap (its addresses stay where they are). */
	for (size_t i = 0; i < n_pools; i++) {
		struct pool *p = &next[n++];
		size_t k;

		for (k = 0; k < ipam->n_pools; k++)
			if (!reused[k] && flowsdn_prefix_compare(&ipam->pools[k].prefix, &pools[i]) == 0)
				break;
		if (k < ipam->n_pools) {
			*p = ipam->pools[k];
			p->draining = false;
			reused[k] = true;
			map[k] = n - 1;
			continue;
		}
		r = pool_init(p, &pools[i]);
		if (r < 0)
			goto out_undo;
	}
	/* The pools left out that still hold addresses drain: they must not
	 * overlap a configured one (an address would belong to two). */
	for (size_t k = 0; k < ipam->n_pools; k++) {
		if (reused[k])
			continue;
		map[k] = SIZE_MAX;
		if (!ipam->pools[k].used)
			continue;
		flowsdn_prefix_format(&ipam->pools[k].prefix, a, sizeof(a));
		for (size_t i = 0; i < n_pools; i++)
			if (flowsdn_prefix_overlaps(&pools[i], &ipam->pools[k].prefix)) {
				flowsdn_prefix_format(&pools[i], b, sizeof(b));
				r = fail(ipam, -FLOWSDN_E_IPAM_POOL_OVERLAP,
					 "pool %s overlaps pool %s, which still holds %" PRIu64 " address%s", b, a,
					 ipam->pools[k].used, ipam->pools[k].used == 1 ? "" : "es");
				goto out_undo;
			}
		if (n == FLOWSDN_IPAM_MAX_POOLS) {
			r = fail(ipam, -EINVAL, "more than %d pools with the draining pool %s", FLOWSDN_IPAM_MAX_POOLS, a);
			goto out_undo;
		}
		next[n] = ipam->pools[k];
		next[n].draining = true;
		map[k] = n++;
	}
	for (size_t k = 0; k < ipam->n_pools; k++)
		if (map[k] == SIZE_MAX)
			free(ipam->pools[k].bitmap);
	for (size_t i = 0; i < ipam->n_allocs; i++)
		ipam->allocs[i].pool = map[ipam->allocs[i].pool];
	memcpy(ipam->pools, next, sizeof(next));
	ipam->n_pools = n;
	r = 0;
	goto out;
out_undo:
	/* Only the bitmaps made here go; the old pools are untouched. */
	for (size_t i = 0; i < n; i++) {
		bool old = false;

		for (size_t k = 0; k < ipam->n_pools && !old; k++)
			old = next[i].bitmap == ipam->pools[k].bitmap;
		if (!old)
			free(next[i].bitmap);
	}
out:
	ipam->diag = NULL;
	return r;
}

FLOWSDN_API int flowsdn_ipam_summary(struct flowsdn_ipam *ipam, struct flowsdn_ipam_pool_summary *out,
				     size_t max, size_t *ret_n)
{
	int r;

	if (!ipam || !ret_n || (max && !out))
		return -EINVAL;
	r = begin(ipam, false);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ipam->n_pools && i < max; i++) {
		const struct pool *p = &ipam->pools[i];

		out[i] = (struct flowsdn_ipam_pool_summary){
			.pool = p->prefix,
			.size = p->size,
			.reserved = p->reserved,
			.used = p->used,
			.free = p->size - p->reserved - p->used,
		};
		flowsdn_prefix_nth(&p->prefix, 1, &out[i].gateway);
	}
	*ret_n = ipam->n_pools;
	end(ipam);
	return 0;
}

static int alloc_addr_cmp(const void *a, const void *b)
{
	const struct flowsdn_ipam_allocation *x = a, *y = b;

	return flowsdn_addr_compare(&x->addr, &y->addr);
}

FLOWSDN_API int flowsdn_ipam_list(struct flowsdn_ipam *ipam, struct flowsdn_ipam_allocation **ret, size_t *ret_n)
{
	struct flowsdn_ipam_allocation *v = NULL;
	int r;

	if (!ipam || !ret || !ret_n)
		return -EINVAL;
	r = begin(ipam, false);
	if (r < 0)
		return r;
	if (ipam->n_allocs) {
		v = calloc(ipam->n_allocs, sizeof(*v));
		if (!v) {
			r = -ENOMEM;
			goto out_unlock;
		}
		for (size_t i = 0; i < ipam->n_allocs; i++) {
			const struct alloc *al = &ipam->allocs[i];

			snprintf(v[i].container_id, sizeof(v[i].container_id), "%s", al->id);
			snprintf(v[i].ifname, sizeof(v[i].ifname), "%s", al->ifname);
			v[i].addr = al->addr;
			v[i].pool = ipam->pools[al->pool].prefix;
		}
		qsort(v, ipam->n_allocs, sizeof(*v), alloc_addr_cmp);
	}
	*ret = v;
	*ret_n = ipam->n_allocs;
out_unlock:
	end(ipam);
	return r;
}
