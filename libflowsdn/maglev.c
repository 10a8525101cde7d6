/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Maglev lookup tables (NSDI 2016, section 3.4) with exact weighted
 * shares, O(N + M) scratch memory and a slot diff.
 *
 * Instead of the paper's N x M permutation matrix, each backend keeps only
 * its current position in its permutation: the next candidate is
 * pos + skip (mod M), computed by one addition and one conditional
 * subtraction.  Positions stay below 2M <= 2 * 655373, and the turn
 * schedule products ((k - 1) * q_max, up to M^2) are computed in 64 bits.
 *
 * The rounds are a calendar queue: one FIFO list per round (head/tail
 * arrays of q_max + 1 entries, a next link per backend).  A backend is
 * appended to the list of the round of its next turn after each turn, so
 * the work is O(M + N + q_max) rather than one pass over all N backends
 * per round, whatever the weights.
 */
#include "config.h"

#include <endian.h>
#include <flowsdn/maglev.h>

#include "internal.h"
#include "siphash.h"

static const uint32_t supported_sizes[] = {
	251, 509, 1021, 2039, 4093, 8191, 16381, 32749, 65521, 65537, 131071, 655373,
};

FLOWSDN_API bool flowsdn_maglev_size_supported(uint32_t m)
{
	for (size_t i = 0; i < ARRAY_SIZE(supported_sizes); i++)
		if (supported_sizes[i] == m)
			return true;
	return false;
}

static bool is_prime(uint32_t m)
{
	if (m < 2)
		return false;
	for (uint32_t d = 2; (uint64_t)d * d <= m; d++)
		if (m % d == 0)
			return false;
	return true;
}

/* The hash of the header comment; @m already checked. */
static void permute(const void *key, size_t key_len, uint32_t m, uint64_t seed, uint32_t *offset, uint32_t *skip)
{
	uint64_t h1, h2;

	flowsdn__siphash24_x2(key, key_len, seed, 1, 2, &h1, &h2);
	*offset = (uint32_t)(h1 % m);
	*skip = (uint32_t)(h2 % (m - 1) + 1);
}

FLOWSDN_API int flowsdn_maglev_permutation(const void *key, size_t key_len, uint32_t m, uint64_t seed,
					   uint32_t *ret_offset, uint32_t *ret_skip)
{
	if (!key || !ret_offset || !ret_skip)
		return -EINVAL;
	if (key_len == 0 || key_len > FLOWSDN_MAGLEV_MAX_KEY)
		return -FLOWSDN_E_MAGLEV_KEY;
	if (m > FLOWSDN_MAGLEV_MAX_SIZE || !is_prime(m))
		return -FLOWSDN_E_MAGLEV_SIZE;
	permute(key, key_len, m, seed, ret_offset, ret_skip);
	return 0;
}

/* The state of one backend while the table fills: 16 bytes, so that the
 * round-robin pass walks one contiguous array. */
struct turn {
	uint32_t pos;    /* next candidate slot of the permutation, < m */
	uint32_t skip;
	uint32_t id;     /* the value written to its slots */
	uint32_t index;  /* position in the sorted input (the schedule's order) */
};

/* Scratch of one population: every array is O(N) or O(M). */
struct scratch {
	struct turn *turn;  /* N: backends with a share, in order */
	uint32_t *quota;    /* N: slots to take */
	uint32_t *order;    /* N: indexes sorted for the remainder apportionment */
	uint64_t *rem;      /* N: remainders of M w_i / W */
	uint8_t *filled;    /* 2M bytes: slot taken, twice */
	/* General schedule only: */
	uint32_t *left;     /* N: turns still owed */
	uint32_t *step;     /* N: floor(q_max / q_i) */
	uint32_t *stepr;    /* N: q_max mod q_i */
	uint32_t *acc;      /* N: floor(k q_max / q_i) after k turns */
	uint32_t *accr;     /* N: k q_max mod q_i */
	uint32_t *next;     /* N: link in a round's list */
	uint32_t *head;     /* q_max + 2: first backend of each round's list */
	uint32_t *tail;     /* q_max + 2: last backend of each round's list */
};

#define NIL UINT32_MAX

static void scratch_free(struct scratch *s)
{
	free(s->turn);
	free(s->quota);
	free(s->order);
	free(s->rem);
	free(s->filled);
	free(s->left);
	free(s->step);
	free(s->stepr);
	free(s->acc);
	free(s->accr);
	free(s->next);
	free(s->head);
	free(s->tail);
}

/* Largest-remainder order: remainder descending, then index ascending. */
static int rem_cmp(const void *a, const void *b, void *ctx)
{
	const uint64_t *rem = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (rem[x] != rem[y])
		return rem[x] > rem[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static inline uint32_t add_mod(uint32_t a, uint32_t b, uint32_t m)
{
	a += b;
	return a >= m ? a - m : a;
}

static inline uint32_t is_taken(const uint8_t *filled, uint32_t p)
{
	return filled[p];
}

/* Slot p is byte p and byte p + M of the taken map (see below). */
static inline void set_taken(uint8_t *filled, uint32_t p, uint32_t m)
{
	filled[p] = 1;
	filled[p + m] = 1;
}

/*
 * Candidates are tested four at a time: pos + k skip for k = 0..3, each
 * one addition from pos, so the chain of dependent steps (pos += 4 skip
 * mod M) is a quarter as long as the permutation walk.  The taken map
 * has 2M bytes, slot j being both byte j and byte j + M, so that a
 * candidate pos + (k skip mod M) < 2M needs no reduction; only the chain
 * does, with one conditional subtraction (positions stay below M < 2^20,
 * sums below 2^21: no modulo, no 64-bit arithmetic).  Bytes rather than
 * bits: a test is one load, no variable shift; measured 20 % faster than
 * a 2M-bit bitmap at M = 16381, 65537 and 131071 (N = 1000), and half the
 * footprint of testing the 4-byte table entries.
 */
struct stride {
	uint32_t s1, s2, s3, s4;  /* skip, 2, 3 and 4 skip, mod M */
};

static inline struct stride stride_of(uint32_t skip, uint32_t m)
{
	struct stride st = { .s1 = skip };

	st.s2 = add_mod(skip, skip, m);
	st.s3 = add_mod(st.s2, skip, m);
	st.s4 = add_mod(st.s2, st.s2, m);
	return st;
}

/* Bit k set when candidate p + k skip is free. */
static inline uint32_t free_of(const uint8_t *filled, uint32_t p, const struct stride *st)
{
	return (is_taken(filled, p) | is_taken(filled, p + st->s1) << 1 | is_taken(filled, p + st->s2) << 2 |
		is_taken(filled, p + st->s3) << 3) ^ 0xf;
}

static inline uint32_t candidate(uint32_t p, uint32_t free_mask, const struct stride *st, uint32_t m)
{
	const uint32_t off[4] = { 0, st->s1, st->s2, st->s3 };

	return add_mod(p, off[__builtin_ctz(free_mask)], m);
}

static inline void claim(struct turn *t, uint32_t p, uint8_t *filled, uint32_t m, uint32_t *table)
{
	set_taken(filled, p, m);
	table[p] = t->id;
	t->pos = add_mod(p, t->skip, m);
}

/*
 * One turn: the first free slot of t's permutation from t->pos.  The table
 * is not full when a turn is owed (the quotas sum to M) and a permutation
 * visits every slot, so the scan ends.
 */
static inline void take_turn(struct turn *t, uint8_t *filled, uint32_t m, uint32_t *table)
{
	struct stride st = stride_of(t->skip, m);
	uint32_t p = t->pos, f;

	while (!(f = free_of(filled, p, &st)))
		p = add_mod(p, st.s4, m);
	claim(t, candidate(p, f, &st, m), filled, m, table);
}

/* Exact shares: floor(M w / W), then the leftover slots one each to the
 * largest remainders (ties: lower index).  M w < 2^20 * 2^32 fits 64 bits. */
static int apportion(const uint32_t *weight, size_t n, uint32_t m, uint64_t total, struct scratch *s)
{
	uint64_t assigned = 0;
	bool same_rem = true;

	for (size_t i = 0; i < n; i++) {
		uint64_t prod = (uint64_t)m * (weight ? weight[i] : 1);

		s->quota[i] = (uint32_t)(prod / total);
		assigned += s->quota[i];
	}
	if (assigned == m)
		return 0;
	s->order = calloc(n, sizeof(*s->order));
	s->rem = calloc(n, sizeof(*s->rem));
	if (!s->order || !s->rem)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		s->order[i] = (uint32_t)i;
		s->rem[i] = (uint64_t)m * (weight ? weight[i] : 1) % total;
		same_rem &= s->rem[i] == s->rem[0];
	}
	/* Equal remainders (equal weights): index order is already the order. */
	if (!same_rem)
		qsort_r(s->order, n, sizeof(*s->order), rem_cmp, s->rem);
	/* m - assigned < number of backends with a nonzero remainder, so a
	 * weight-0 backend never gets a slot here. */
	for (uint64_t k = 0; k < m - assigned; k++)
		s->quota[s->order[k]]++;
	return 0;
}

/*
 * The general schedule: backend i has its k-th turn in round
 * floor((k - 1) q_max / q_i) + 1.  The rounds are a calendar queue: one
 * FIFO list per round (head/tail arrays of q_max + 2 entries, a next link
 * per backend); a backend is appended to the list of the round of its next
 * turn after each turn, so the work is O(M + N + q_max) whatever the
 * weights.  The round of the next turn is kept as a quotient and a
 * remainder advanced by (q_max / q_i, q_max mod q_i): no division per turn.
 */
static int populate_scheduled(struct scratch *s, size_t k, uint32_t qmax, uint32_t m, uint32_t *table)
{
	s->left = malloc(k * sizeof(*s->left));
	s->step = malloc(k * sizeof(*s->step));
	s->stepr = malloc(k * sizeof(*s->stepr));
	s->acc = calloc(k, sizeof(*s->acc));
	s->accr = calloc(k, sizeof(*s->accr));
	s->next = malloc(k * sizeof(*s->next));
	s->head = malloc(((size_t)qmax + 2) * sizeof(*s->head));
	s->tail = malloc(((size_t)qmax + 2) * sizeof(*s->tail));
	if (!s->left || !s->step || !s->stepr || !s->acc || !s->accr || !s->next || !s->head || !s->tail)
		return -ENOMEM;
	memset(s->head, 0xff, ((size_t)qmax + 2) * sizeof(*s->head));
	memset(s->tail, 0xff, ((size_t)qmax + 2) * sizeof(*s->tail));

	/* Everyone with a share has its first turn in round 1, in order. */
	for (size_t j = 0; j < k; j++) {
		uint32_t q = s->quota[s->turn[j].index];

		s->left[j] = q;
		s->step[j] = qmax / q;
		s->stepr[j] = qmax % q;
		s->next[j] = NIL;
		if (s->tail[1] == NIL)
			s->head[1] = (uint32_t)j;
		else
			s->next[s->tail[1]] = (uint32_t)j;
		s->tail[1] = (uint32_t)j;
	}
	for (uint32_t round = 1; round <= qmax; round++) {
		for (uint32_t j = s->head[round]; j != NIL;) {
			uint32_t following = s->next[j];

			take_turn(&s->turn[j], s->filled, m, table);
			if (--s->left[j]) {
				uint32_t q = s->quota[s->turn[j].index], nr;

				s->acc[j] += s->step[j];
				s->accr[j] += s->stepr[j];
				if (s->accr[j] >= q) {
					s->accr[j] -= q;
					s->acc[j]++;
				}
				nr = s->acc[j] + 1;
				s->next[j] = NIL;
				if (s->tail[nr] == NIL)
					s->head[nr] = j;
				else
					s->next[s->tail[nr]] = j;
				s->tail[nr] = j;
			}
			j = following;
		}
	}
	return 0;
}

/*
 * Fills table[] (m entries) with ids[i] (or i when @ids is NULL).
 * Backends are in their final order; offset[i] < m, 1 <= skip[i] < m.
 * Nothing is written to @table unless everything succeeds.
 *
 * When every share is q_max or q_max - 1 (equal weights always are), the
 * schedule above is the paper's plain round robin: rounds 1 .. q_max - 1
 * give every backend a turn in order, round q_max those with q_max slots.
 * That case walks the turn array directly, with no queue.
 */
static int populate(const uint32_t *offset, const uint32_t *skip, const uint32_t *weight, const uint32_t *ids,
		    size_t n, uint32_t m, uint32_t *table)
{
	struct scratch s = { 0 };
	uint64_t total = 0;
	uint32_t qmax = 0;
	bool near_equal = true;
	size_t k = 0;
	int r;

	for (size_t i = 0; i < n; i++)
		total += weight ? weight[i] : 1;
	if (total == 0)
		return -FLOWSDN_E_MAGLEV_NO_BACKEND;

	s.turn = malloc(n * sizeof(*s.turn));
	s.quota = malloc(n * sizeof(*s.quota));
	s.filled = calloc(2 * (size_t)m, 1);
	if (!s.turn || !s.quota || !s.filled) {
		r = -ENOMEM;
		goto out;
	}
	r = apportion(weight, n, m, total, &s);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (s.quota[i] > qmax)
			qmax = s.quota[i];
	for (size_t i = 0; i < n; i++) {
		if (!s.quota[i])
			continue;
		near_equal &= s.quota[i] + 1 >= qmax;
		s.turn[k++] = (struct turn){
			.pos = offset[i], .skip = skip[i], .id = ids ? ids[i] : (uint32_t)i, .index = (uint32_t)i,
		};
	}
	if (!near_equal) {
		r = populate_scheduled(&s, k, qmax, m, table);
		goto out;
	}
	for (uint32_t round = 1; round < qmax; round++)
		for (size_t j = 0; j < k; j++)
			take_turn(&s.turn[j], s.filled, m, table);
	for (size_t j = 0; j < k; j++)
		if (s.quota[s.turn[j].index] == qmax)
			take_turn(&s.turn[j], s.filled, m, table);
out:
	scratch_free(&s);
	return r;
}

FLOWSDN_API int flowsdn_maglev_build_permutations(const uint32_t *offset, const uint32_t *skip,
						  const uint32_t *weight, size_t n, uint32_t m,
						  uint32_t *ret_table)
{
	_cleanup_free_ uint32_t *tmp = NULL;
	int r;

	if (!offset || !skip || !ret_table || n == 0)
		return -EINVAL;
	if (m > FLOWSDN_MAGLEV_MAX_SIZE || !is_prime(m))
		return -FLOWSDN_E_MAGLEV_SIZE;
	if (n > m)
		return -FLOWSDN_E_MAGLEV_TOO_MANY;
	for (size_t i = 0; i < n; i++)
		if (offset[i] >= m || skip[i] == 0 || skip[i] >= m)
			return -FLOWSDN_E_MAGLEV_PERMUTATION;
	/* Built aside so that ret_table stays untouched on failure. */
	tmp = malloc((size_t)m * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	r = populate(offset, skip, weight, NULL, n, m, tmp);
	if (r < 0)
		return r;
	memcpy(ret_table, tmp, (size_t)m * sizeof(*tmp));
	return 0;
}

static int backend_cmp(const void *a, const void *b, void *ctx)
{
	const struct flowsdn_maglev_backend *be = ctx;
	const struct flowsdn_maglev_backend *x = &be[*(const uint32_t *)a], *y = &be[*(const uint32_t *)b];
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

/* A backend's first 16 key bytes (zero-padded) as two big-endian words:
 * comparing (hi, lo) is memcmp on those bytes. */
struct sort_item {
	uint64_t hi, lo;
	uint32_t index;
};

static uint64_t load_be64(const uint8_t *p, size_t len)
{
	uint8_t buf[8] = { 0 };
	uint64_t v;

	memcpy(buf, p, len < 8 ? len : 8);
	memcpy(&v, buf, 8);
	return be64toh(v);
}

static uint8_t item_byte(const struct sort_item *it, unsigned int k)
{
	return (uint8_t)((k < 8 ? it->hi >> (56 - 8 * k) : it->lo >> (56 - 8 * (k - 8))) & 0xff);
}

/*
 * Sorts order[] (the backend indexes) by key in backend_cmp() order: a
 * stable LSD radix sort on the zero-padded 16-byte prefixes (only over
 * the byte positions where keys differ), then insertion sort by
 * the full comparison within runs of equal prefixes (keys that share
 * their first 16 bytes, or differ only by trailing zero bytes).  O(N)
 * for the usual keys, and no comparison callback per pair as qsort has.
 */
static int sort_backends(const struct flowsdn_maglev_backend *be, size_t n, uint32_t *order)
{
	_cleanup_free_ struct sort_item *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
	uint64_t vary_hi = 0, vary_lo = 0;
	size_t count[256];

	if (!a || !b)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *k = be[i].key;
		size_t len = be[i].key_len;

		a[i] = (struct sort_item){
			.hi = load_be64(k, len),
			.lo = len > 8 ? load_be64(k + 8, len - 8) : 0,
			.index = (uint32_t)i,
		};
		vary_hi |= a[i].hi ^ a[0].hi;
		vary_lo |= a[i].lo ^ a[0].lo;
	}
	for (int k = 15; k >= 0; k--) {
		uint64_t vary = k < 8 ? vary_hi >> (56 - 8 * k) : vary_lo >> (56 - 8 * (k - 8));
		size_t sum = 0;
		struct sort_item *t;

		if (!(vary & 0xff))
			continue; /* every key has the same byte k */
		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[item_byte(&a[i], (unsigned int)k)]++;
		for (size_t c = 0; c < 256; c++) {
			size_t here = count[c];

			count[c] = sum;
			sum += here;
		}
		for (size_t i = 0; i < n; i++)
			b[count[item_byte(&a[i], (unsigned int)k)]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = a[i].index;
	for (size_t i = 1; i < n; i++) {
		size_t j = i;

		if (a[i].hi != a[i - 1].hi || a[i].lo != a[i - 1].lo)
			continue;
		/* Within a run of equal prefixes: insertion by full key. */
		while (j > 0 && a[j - 1].hi == a[i].hi && a[j - 1].lo == a[i].lo &&
		       backend_cmp(&order[j - 1], &order[j], (void *)be) > 0) {
			uint32_t t = order[j - 1];

			order[j - 1] = order[j];
			order[j] = t;
			j--;
		}
	}
	return 0;
}

FLOWSDN_API int flowsdn_maglev_build(const struct flowsdn_maglev_backend *backends, size_t n, uint32_t m,
				     const struct flowsdn_maglev_opts *opts, uint32_t *ret_table)
{
	_cleanup_free_ uint32_t *order = NULL, *offset = NULL, *skip = NULL, *weight = NULL, *ids = NULL;
	uint64_t seed;
	int r;

	if (!backends || n == 0 || !ret_table || !OPTS_VALID(opts, flowsdn_maglev_opts))
		return -EINVAL;
	seed = OPTS_GET(opts, seed, 0);
	if (!seed)
		seed = FLOWSDN_MAGLEV_DEFAULT_SEED;
	if (!flowsdn_maglev_size_supported(m))
		return -FLOWSDN_E_MAGLEV_SIZE;
	if (n > m)
		return -FLOWSDN_E_MAGLEV_TOO_MANY;
	for (size_t i = 0; i < n; i++)
		if (!backends[i].key || backends[i].key_len == 0 || backends[i].key_len > FLOWSDN_MAGLEV_MAX_KEY)
			return -FLOWSDN_E_MAGLEV_KEY;

	order = malloc(n * sizeof(*order));
	offset = malloc(n * sizeof(*offset));
	skip = malloc(n * sizeof(*skip));
	weight = malloc(n * sizeof(*weight));
	ids = malloc(n * sizeof(*ids));
	if (!order || !offset || !skip || !weight || !ids)
		return -ENOMEM;
	r = sort_backends(backends, n, order);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct flowsdn_maglev_backend *b = &backends[order[i]];

		if (i > 0 && backend_cmp(&order[i - 1], &order[i], (void *)backends) == 0)
			return -FLOWSDN_E_MAGLEV_DUPLICATE;
		/* m is supported and the keys were checked above. */
		permute(b->key, b->key_len, m, seed, &offset[i], &skip[i]);
		weight[i] = b->weight;
		ids[i] = b->id;
	}
	/* populate() checks everything before its first write to the table. */
	return populate(offset, skip, weight, ids, n, m, ret_table);
}

FLOWSDN_API int flowsdn_maglev_diff(const uint32_t *old_table, const uint32_t *new_table, uint32_t m,
				    struct flowsdn_maglev_change **ret, size_t *ret_n)
{
	struct flowsdn_maglev_change *v = NULL;
	size_t count = 0, k = 0;

	if (!new_table || !ret || !ret_n || m == 0)
		return -EINVAL;
	for (uint32_t i = 0; i < m; i++)
		if (!old_table || old_table[i] != new_table[i])
			count++;
	if (count) {
		v = malloc(count * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (uint32_t i = 0; i < m; i++) {
			if (old_table && old_table[i] == new_table[i])
				continue;
			v[k++] = (struct flowsdn_maglev_change){
				.slot = i,
				.old_id = old_table ? old_table[i] : FLOWSDN_MAGLEV_NONE,
				.new_id = new_table[i],
			};
		}
	}
	*ret = v;
	*ret_n = count;
	return 0;
}
