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

FLOWSDN_API int flowsdn_maglev_permutation(const void *key, size_t key_len, uint32_t m, uint64_t seed,
					   uint32_t *ret_offset, uint32_t *ret_skip)
{
	if (!key || !ret_offset || !ret_skip)
		return -EINVAL;
	if (key_len == 0 || key_len > FLOWSDN_MAGLEV_MAX_KEY)
		return -FLOWSDN_E_MAGLEV_KEY;
	if (m > FLOWSDN_MAGLEV_MAX_SIZE || !is_prime(m))
		return -FLOWSDN_E_MAGLEV_SIZE;
	*ret_offset = (uint32_t)(flowsdn__siphash24(key, key_len, seed, 1) % m);
	*ret_skip = (uint32_t)(flowsdn__siphash24(key, key_len, seed, 2) % (m - 1) + 1);
	return 0;
}

/* Scratch of one population: every array is O(N) or O(M). */
struct scratch {
	uint32_t *pos;      /* N: current position in the permutation */
	uint32_t *quota;    /* N: slots to take */
	uint32_t *taken;    /* N: slots taken so far */
	uint32_t *next;     /* N: link in a round's list */
	uint32_t *order;    /* N: indexes sorted for the remainder apportionment */
	uint64_t *rem;      /* N: remainders of M w_i / W */
	uint32_t *head;     /* q_max + 2: first backend of each round's list */
	uint32_t *tail;     /* q_max + 2: last backend of each round's list */
	uint64_t *filled;   /* ceil(M / 64) words */
};

#define NIL UINT32_MAX

static void scratch_free(struct scratch *s)
{
	free(s->pos);
	free(s->quota);
	free(s->taken);
	free(s->next);
	free(s->order);
	free(s->rem);
	free(s->head);
	free(s->tail);
	free(s->filled);
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

/*
 * Fills table[] (m entries) with ids[i] (or i when @ids is NULL).
 * Backends are in their final order; offset[i] < m, 1 <= skip[i] < m.
 * Nothing is written to @table unless everything succeeds.
 */
static int populate(const uint32_t *offset, const uint32_t *skip, const uint32_t *weight, const uint32_t *ids,
		    size_t n, uint32_t m, uint32_t *table)
{
	struct scratch s = { 0 };
	uint64_t total = 0, assigned = 0;
	uint32_t qmax = 0;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		total += weight ? weight[i] : 1;
	if (total == 0)
		return -FLOWSDN_E_MAGLEV_NO_BACKEND;

	s.pos = calloc(n, sizeof(*s.pos));
	s.quota = calloc(n, sizeof(*s.quota));
	s.taken = calloc(n, sizeof(*s.taken));
	s.next = calloc(n, sizeof(*s.next));
	s.filled = calloc(((size_t)m + 63) / 64, sizeof(*s.filled));
	if (!s.pos || !s.quota || !s.taken || !s.next || !s.filled) {
		r = -ENOMEM;
		goto out;
	}

	/* Exact shares: floor(M w / W), then the leftover slots one each to
	 * the largest remainders.  M w < 2^20 * 2^32 fits 64 bits. */
	for (size_t i = 0; i < n; i++) {
		uint64_t prod = (uint64_t)m * (weight ? weight[i] : 1);

		s.quota[i] = (uint32_t)(prod / total);
		assigned += s.quota[i];
	}
	if (assigned < m) {
		s.order = calloc(n, sizeof(*s.order));
		s.rem = calloc(n, sizeof(*s.rem));
		if (!s.order || !s.rem) {
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			s.order[i] = (uint32_t)i;
			s.rem[i] = (uint64_t)m * (weight ? weight[i] : 1) % total;
		}
		qsort_r(s.order, n, sizeof(*s.order), rem_cmp, s.rem);
		/* m - assigned < number of backends with a nonzero remainder,
		 * so a weight-0 backend never gets a slot here. */
		for (uint64_t k = 0; k < m - assigned; k++)
			s.quota[s.order[k]]++;
	}
	for (size_t i = 0; i < n; i++)
		if (s.quota[i] > qmax)
			qmax = s.quota[i];

	s.head = malloc(((size_t)qmax + 2) * sizeof(*s.head));
	s.tail = malloc(((size_t)qmax + 2) * sizeof(*s.tail));
	if (!s.head || !s.tail) {
		r = -ENOMEM;
		goto out;
	}
	memset(s.head, 0xff, ((size_t)qmax + 2) * sizeof(*s.head));
	memset(s.tail, 0xff, ((size_t)qmax + 2) * sizeof(*s.tail));

	/* Everyone with a share has its first turn in round 1, in order. */
	for (size_t i = 0; i < n; i++) {
		s.pos[i] = offset[i];
		s.next[i] = NIL;
		if (!s.quota[i])
			continue;
		if (s.tail[1] == NIL)
			s.head[1] = (uint32_t)i;
		else
			s.next[s.tail[1]] = (uint32_t)i;
		s.tail[1] = (uint32_t)i;
	}

	for (uint32_t round = 1; round <= qmax; round++) {
		for (uint32_t i = s.head[round]; i != NIL;) {
			uint32_t following = s.next[i];
			uint32_t p = s.pos[i];

			/* The table is not full (sum of quotas = M and this turn is
			 * owed), and the permutation visits every slot, so this
			 * ends. */
			while (s.filled[p / 64] >> (p % 64) & 1) {
				uint64_t np = (uint64_t)p + skip[i];

				p = (uint32_t)(np >= m ? np - m : np);
			}
			s.filled[p / 64] |= UINT64_C(1) << (p % 64);
			table[p] = ids ? ids[i] : i;
			{
				uint64_t np = (uint64_t)p + skip[i];

				s.pos[i] = (uint32_t)(np >= m ? np - m : np);
			}
			s.taken[i]++;
			if (s.taken[i] < s.quota[i]) {
				/* Turn k + 1 (k = taken) falls in round
				 * floor(k q_max / q_i) + 1 > round. */
				uint32_t nr = (uint32_t)((uint64_t)s.taken[i] * qmax / s.quota[i]) + 1;

				s.next[i] = NIL;
				if (s.tail[nr] == NIL)
					s.head[nr] = i;
				else
					s.next[s.tail[nr]] = i;
				s.tail[nr] = i;
			}
			i = following;
		}
	}
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
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), backend_cmp, (void *)backends);
	for (size_t i = 0; i < n; i++) {
		const struct flowsdn_maglev_backend *b = &backends[order[i]];

		if (i > 0 && backend_cmp(&order[i - 1], &order[i], (void *)backends) == 0)
			return -FLOWSDN_E_MAGLEV_DUPLICATE;
		r = flowsdn_maglev_permutation(b->key, b->key_len, m, seed, &offset[i], &skip[i]);
		if (r < 0)
			return r;
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
