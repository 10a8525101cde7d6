/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Numeric identities for canonical label sets, reference-counted and
 * persisted.
 *
 * The store is kept as two sorted arrays of pointers to the same entries,
 * one by canonical labels and one by id, so both lookups are binary
 * searches; insertion and removal move pointers (at most 65280 of them),
 * far cheaper than the fsync that follows each change.
 *
 * Persistence: a whole-file snapshot in the container of statefile.h
 * (magic "FSDNIDNT", version, CRC32C), written with
 * util_write_file_atomic() after each change, for the reasons given in
 * ipam.c (small state, one on-disk state at every instant, nothing to
 * repair).  Payload version 1, little-endian:
 *   u32 next_id, u32 count, then per identity:
 *   u32 id, u32 refcount, u32 text_len, canonical text
 * Every entry is validated on load (range, canonical form, no duplicate)
 * and a file that fails is refused, never overwritten.
 *
 * Ownership: only the agent allocates identities, so the lock file is
 * held exclusively for the lifetime of a handle instead of per call.
 */
#include "config.h"

#include <stdio.h>
#include <flowsdn/identity.h>

#include "internal.h"
#include "names.h"
#include "statefile.h"

#define IDENTITY_MAGIC "FSDNIDNT"
#define IDENTITY_VERSION 1
#define IDENTITY_STATE_FILE "identity.state"
#define IDENTITY_LOCK_FILE "identity.lock"
#define IDENTITY_STATE_MAX ((size_t)64 << 20)
/* prefix '/' name '=' value ',' for every label */
#define CANONICAL_MAX (FLOWSDN_IDENTITY_MAX_LABELS * (NAMES_DNS_SUBDOMAIN_MAX + NAMES_LABEL_NAME_MAX + NAMES_LABEL_VALUE_MAX + 3))

static const char *const reserved_names[] = {
	[FLOWSDN_IDENTITY_HOST] = "host",
	[FLOWSDN_IDENTITY_WORLD] = "world",
	[FLOWSDN_IDENTITY_UNMANAGED] = "unmanaged",
	[FLOWSDN_IDENTITY_HEALTH] = "health",
	[FLOWSDN_IDENTITY_INIT] = "init",
	[FLOWSDN_IDENTITY_REMOTE_NODE] = "remote-node",
	[FLOWSDN_IDENTITY_KUBE_APISERVER] = "kube-apiserver",
	[FLOWSDN_IDENTITY_INGRESS] = "ingress",
	[FLOWSDN_IDENTITY_WORLD_IPV4] = "world-ipv4",
	[FLOWSDN_IDENTITY_WORLD_IPV6] = "world-ipv6",
};

FLOWSDN_API const char *flowsdn_identity_reserved_name(uint32_t id)
{
	return id < ARRAY_SIZE(reserved_names) ? reserved_names[id] : NULL;
}

FLOWSDN_API int flowsdn_identity_reserved_id(const char *name)
{
	if (!name)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(reserved_names); i++)
		if (reserved_names[i] && !strcmp(reserved_names[i], name))
			return (int)i;
	return -ENOENT;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct flowsdn_label *)a)->key, ((const struct flowsdn_label *)b)->key);
}

FLOWSDN_API int flowsdn_identity_labels_canonical(const struct flowsdn_label *labels, size_t n, char **ret_text)
{
	struct flowsdn_label sorted[FLOWSDN_IDENTITY_MAX_LABELS];
	struct sbuf b = { 0 };

	if (!ret_text || (n && !labels))
		return -EINVAL;
	if (n == 0 || n > FLOWSDN_IDENTITY_MAX_LABELS)
		return -FLOWSDN_E_IDENTITY_LABELS_EMPTY;
	for (size_t i = 0; i < n; i++) {
		if (!labels[i].key || !labels[i].value)
			return -EINVAL;
		if (!names_label_key_valid(labels[i].key))
			return -FLOWSDN_E_IDENTITY_LABEL_KEY;
		if (!names_label_value_valid(labels[i].value))
			return -FLOWSDN_E_IDENTITY_LABEL_VALUE;
		sorted[i] = labels[i];
	}
	qsort(sorted, n, sizeof(sorted[0]), label_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i && !strcmp(sorted[i - 1].key, sorted[i].key)) {
			sbuf_done(&b);
			return -FLOWSDN_E_IDENTITY_LABEL_DUPLICATE;
		}
		if (i)
			sbuf_put(&b, ",", 1);
		sbuf_put(&b, sorted[i].key, strlen(sorted[i].key));
		sbuf_put(&b, "=", 1);
		sbuf_put(&b, sorted[i].value, strlen(sorted[i].value));
	}
	sbuf_put(&b, "", 1);
	if (b.err) {
		sbuf_done(&b);
		return -ENOMEM;
	}
	*ret_text = (char *)b.data;
	return 0;
}

/* Re-canonicalizes a stored text: true when it is exactly canonical. */
static bool text_canonical(const char *text)
{
	struct flowsdn_label labels[FLOWSDN_IDENTITY_MAX_LABELS];
	_cleanup_free_ char *copy = strdup(text), *again = NULL;
	size_t n = 0;
	char *save = NULL;

	if (!copy)
		return false;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || n == FLOWSDN_IDENTITY_MAX_LABELS)
			return false;
		*eq = '\0';
		labels[n++] = (struct flowsdn_label){ .key = tok, .value = eq + 1 };
	}
	if (flowsdn_identity_labels_canonical(labels, n, &again) < 0)
		return false;
	return !strcmp(again, text);
}

struct ident {
	uint32_t id;
	uint32_t refs;
	char *labels;
};

struct flowsdn_identity_store {
	char *state_path;
	int lock_fd;
	struct ident **by_labels; /* sorted by labels */
	struct ident **by_id;     /* sorted by id */
	size_t n, cap;
	uint32_t next_id;
};

static int labels_cmp(const void *key, const void *elem)
{
	return strcmp(key, (*(struct ident *const *)elem)->labels);
}

static int id_cmp(const void *key, const void *elem)
{
	uint32_t a = *(const uint32_t *)key, b = (*(struct ident *const *)elem)->id;

	return a < b ? -1 : a > b;
}

static size_t search_labels(const struct flowsdn_identity_store *s, const char *labels, bool *found)
{
	return util_lower_bound(s->by_labels, s->n, sizeof(*s->by_labels), labels, labels_cmp, found);
}

static size_t search_id(const struct flowsdn_identity_store *s, uint32_t id, bool *found)
{
	return util_lower_bound(s->by_id, s->n, sizeof(*s->by_id), &id, id_cmp, found);
}

static int grow(struct flowsdn_identity_store *s)
{
	struct ident **a, **b;
	size_t cap;

	if (s->n < s->cap)
		return 0;
	cap = s->cap ? s->cap * 2 : 64;
	a = reallocarray(s->by_labels, cap, sizeof(*a));
	if (!a)
		return -ENOMEM;
	s->by_labels = a;
	b = reallocarray(s->by_id, cap, sizeof(*b));
	if (!b)
		return -ENOMEM;
	s->by_id = b;
	s->cap = cap;
	return 0;
}

/* Inserts @e (whose id and labels are absent) into both indexes. */
static int insert(struct flowsdn_identity_store *s, struct ident *e)
{
	size_t pl, pi;
	bool found;
	int r = grow(s);

	if (r < 0)
		return r;
	pl = search_labels(s, e->labels, &found);
	pi = search_id(s, e->id, &found);
	memmove(&s->by_labels[pl + 1], &s->by_labels[pl], (s->n - pl) * sizeof(*s->by_labels));
	s->by_labels[pl] = e;
	memmove(&s->by_id[pi + 1], &s->by_id[pi], (s->n - pi) * sizeof(*s->by_id));
	s->by_id[pi] = e;
	s->n++;
	return 0;
}

static void erase(struct flowsdn_identity_store *s, struct ident *e)
{
	bool found;
	size_t pl = search_labels(s, e->labels, &found);
	size_t pi = search_id(s, e->id, &found);

	memmove(&s->by_labels[pl], &s->by_labels[pl + 1], (s->n - pl - 1) * sizeof(*s->by_labels));
	memmove(&s->by_id[pi], &s->by_id[pi + 1], (s->n - pi - 1) * sizeof(*s->by_id));
	s->n--;
}

static void ident_free(struct ident *e)
{
	if (e) {
		free(e->labels);
		free(e);
	}
}

static int save(struct flowsdn_identity_store *s)
{
	struct sbuf b = { 0 };
	int r;

	if (!s->state_path)
		return 0; /* an in-memory store */

	sbuf_u32(&b, s->next_id);
	sbuf_u32(&b, (uint32_t)s->n);
	for (size_t i = 0; i < s->n; i++) {
		const struct ident *e = s->by_id[i];
		size_t len = strlen(e->labels);

		sbuf_u32(&b, e->id);
		sbuf_u32(&b, e->refs);
		sbuf_u32(&b, (uint32_t)len);
		sbuf_put(&b, e->labels, len);
	}
	r = b.err ? b.err : statefile_write(s->state_path, IDENTITY_MAGIC, IDENTITY_VERSION, b.data, b.len);
	if (r < 0)
		pr_warn("identity: cannot write %s: %s", s->state_path, strerror(-r));
	sbuf_done(&b);
	return r;
}

static int ident_id_cmp(const void *a, const void *b)
{
	const struct ident *x = *(const struct ident *const *)a, *y = *(const struct ident *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int ident_labels_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct ident *const *)a)->labels, (*(const struct ident *const *)b)->labels);
}

/* Loads the state file into the (empty) store.  On failure the entries
 * loaded so far stay in the store for flowsdn_identity_free(). */
static int load(struct flowsdn_identity_store *s)
{
	_cleanup_free_ char *data = NULL;
	const uint8_t *payload;
	struct sreader rd;
	size_t len;
	uint32_t version, count;
	int r;

	r = statefile_read(s->state_path, IDENTITY_MAGIC, IDENTITY_VERSION, IDENTITY_STATE_MAX, &data,
			   &payload, &len, &version);
	if (r == -ENOENT)
		return 0;
	if (r == -EBADMSG)
		r = -FLOWSDN_E_IDENTITY_STATE_CORRUPT;
	else if (r == -EPROTONOSUPPORT)
		r = -FLOWSDN_E_IDENTITY_STATE_VERSION;
	if (r < 0) {
		pr_warn("identity: cannot load %s: %s", s->state_path, flowsdn_strerror(r));
		return r;
	}
	rd = (struct sreader){ .p = payload, .len = len };
	s->next_id = sreader_u32(&rd);
	count = sreader_u32(&rd);
	if (s->next_id < FLOWSDN_IDENTITY_MIN_LOCAL || s->next_id > FLOWSDN_IDENTITY_MAX_LOCAL ||
	    count > FLOWSDN_IDENTITY_MAX_LOCAL - FLOWSDN_IDENTITY_MIN_LOCAL + 1)
		goto corrupt;
	/* Append in file order, then sort both indexes once and reject
	 * duplicates: O(n log n) for a full store. */
	for (uint32_t i = 0; i < count; i++) {
		struct ident *e;
		uint32_t id = sreader_u32(&rd), refs = sreader_u32(&rd), tlen = sreader_u32(&rd);

		if (rd.bad || id < FLOWSDN_IDENTITY_MIN_LOCAL || id > FLOWSDN_IDENTITY_MAX_LOCAL || refs == 0 ||
		    tlen == 0 || tlen > CANONICAL_MAX || tlen > rd.len - rd.off)
			goto corrupt;
		r = grow(s);
		if (r < 0)
			return r;
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->id = id;
		e->refs = refs;
		e->labels = strndup((const char *)rd.p + rd.off, tlen);
		rd.off += tlen;
		if (!e->labels) {
			ident_free(e);
			return -ENOMEM;
		}
		s->by_id[s->n] = s->by_labels[s->n] = e;
		s->n++;
		if (strlen(e->labels) != tlen || !text_canonical(e->labels))
			goto corrupt;
	}
	if (rd.bad || rd.off != rd.len)
		goto corrupt;
	if (s->n) {
		qsort(s->by_id, s->n, sizeof(*s->by_id), ident_id_cmp);
		qsort(s->by_labels, s->n, sizeof(*s->by_labels), ident_labels_cmp);
	}
	for (size_t i = 1; i < s->n; i++) {
		if (s->by_id[i - 1]->id == s->by_id[i]->id ||
		    !strcmp(s->by_labels[i - 1]->labels, s->by_labels[i]->labels)) {
			pr_warn("identity: %s: an identity or a label set appears twice", s->state_path);
			return -FLOWSDN_E_IDENTITY_STATE_CORRUPT;
		}
	}
	return 0;

corrupt:
	pr_warn("identity: %s: malformed record at byte %zu", s->state_path, rd.off + STATEFILE_HEADER_LEN);
	return -FLOWSDN_E_IDENTITY_STATE_CORRUPT;
}

FLOWSDN_API void flowsdn_identity_free(struct flowsdn_identity_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		ident_free(s->by_id[i]);
	free(s->by_id);
	free(s->by_labels);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	free(s->state_path);
	free(s);
}

FLOWSDN_API int flowsdn_identity_new(const char *state_dir, const struct flowsdn_identity_opts *opts,
				     struct flowsdn_identity_store **ret)
{
	struct flowsdn_identity_store *s;
	_cleanup_free_ char *lock_path = NULL;
	int r;

	if ((state_dir && !*state_dir) || !ret || !OPTS_VALID(opts, flowsdn_identity_opts))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->lock_fd = -1;
	s->next_id = FLOWSDN_IDENTITY_MIN_LOCAL;
	if (!state_dir) {
		*ret = s; /* in memory: nothing read, nothing written, no lock */
		return 0;
	}
	if (asprintf(&s->state_path, "%s/%s", state_dir, IDENTITY_STATE_FILE) < 0 ||
	    asprintf(&lock_path, "%s/%s", state_dir, IDENTITY_LOCK_FILE) < 0) {
		s->state_path = lock_path = NULL;
		r = -ENOMEM;
		goto out_free;
	}
	r = statefile_ensure_dir(state_dir);
	if (r < 0)
		goto out_free;
	r = statefile_lock_open(lock_path);
	if (r < 0)
		goto out_free;
	s->lock_fd = r;
	r = statefile_lock(s->lock_fd, true, true);
	if (r == -EWOULDBLOCK)
		r = -EBUSY;
	if (r < 0)
		goto out_free;
	statefile_remove_stale_temps(state_dir, IDENTITY_STATE_FILE);
	r = load(s);
	if (r < 0)
		goto out_free;
	*ret = s;
	return 0;

out_free:
	flowsdn_identity_free(s);
	return r;
}

static struct ident *find_labels(const struct flowsdn_identity_store *s, const char *labels)
{
	bool found;
	size_t i = search_labels(s, labels, &found);

	return found ? s->by_labels[i] : NULL;
}

static struct ident *find_id(const struct flowsdn_identity_store *s, uint32_t id)
{
	bool found;
	size_t i = search_id(s, id, &found);

	return found ? s->by_id[i] : NULL;
}

/* The next free local id at or after next_id, wrapping; 0 when full. */
static uint32_t pick_id(const struct flowsdn_identity_store *s)
{
	const uint32_t range = FLOWSDN_IDENTITY_MAX_LOCAL - FLOWSDN_IDENTITY_MIN_LOCAL + 1;

	for (uint32_t k = 0; k < range; k++) {
		uint32_t id = FLOWSDN_IDENTITY_MIN_LOCAL + (s->next_id - FLOWSDN_IDENTITY_MIN_LOCAL + k) % range;

		if (!find_id(s, id))
			return id;
	}
	return 0;
}

FLOWSDN_API int flowsdn_identity_acquire(struct flowsdn_identity_store *s, const struct flowsdn_label *labels,
					 size_t n, uint32_t *ret_id)
{
	_cleanup_free_ char *text = NULL;
	struct ident *e;
	uint32_t saved_next;
	int r;

	if (!s || !ret_id)
		return -EINVAL;
	r = flowsdn_identity_labels_canonical(labels, n, &text);
	if (r < 0)
		return r;
	e = find_labels(s, text);
	if (e) {
		if (e->refs == UINT32_MAX)
			return -EOVERFLOW;
		e->refs++;
		r = save(s);
		if (r < 0) {
			e->refs--;
			return r;
		}
		*ret_id = e->id;
		return 0;
	}
	if (s->n >= FLOWSDN_IDENTITY_MAX_LOCAL - FLOWSDN_IDENTITY_MIN_LOCAL + 1)
		return -FLOWSDN_E_IDENTITY_EXHAUSTED;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->id = pick_id(s);
	e->refs = 1;
	e->labels = TAKE_PTR(text);
	r = insert(s, e);
	if (r < 0) {
		ident_free(e);
		return r;
	}
	saved_next = s->next_id;
	s->next_id = e->id == FLOWSDN_IDENTITY_MAX_LOCAL ? FLOWSDN_IDENTITY_MIN_LOCAL : e->id + 1;
	r = save(s);
	if (r < 0) {
		s->next_id = saved_next;
		erase(s, e);
		ident_free(e);
		return r;
	}
	*ret_id = e->id;
	return 0;
}

FLOWSDN_API int flowsdn_identity_release(struct flowsdn_identity_store *s, uint32_t id)
{
	struct ident *e;
	int r;

	if (!s)
		return -EINVAL;
	if (id < FLOWSDN_IDENTITY_MIN_LOCAL)
		return flowsdn_identity_reserved_name(id) ? -FLOWSDN_E_IDENTITY_RESERVED : -ENOENT;
	e = find_id(s, id);
	if (!e)
		return -ENOENT;
	if (e->refs > 1) {
		e->refs--;
		r = save(s);
		if (r < 0) {
			e->refs++;
			return r;
		}
		return (int)(e->refs > INT32_MAX ? INT32_MAX : e->refs);
	}
	erase(s, e);
	r = save(s);
	if (r < 0) {
		int r2 = insert(s, e);

		if (r2 < 0)
			ident_free(e); /* cannot happen: the arrays did hold it */
		return r;
	}
	ident_free(e);
	return 0;
}

FLOWSDN_API int flowsdn_identity_lookup_labels(const struct flowsdn_identity_store *s,
					       const struct flowsdn_label *labels, size_t n, uint32_t *ret_id)
{
	_cleanup_free_ char *text = NULL;
	const struct ident *e;
	int r;

	if (!s || !ret_id)
		return -EINVAL;
	r = flowsdn_identity_labels_canonical(labels, n, &text);
	if (r < 0)
		return r;
	e = find_labels(s, text);
	if (!e)
		return -ENOENT;
	*ret_id = e->id;
	return 0;
}

FLOWSDN_API int flowsdn_identity_lookup_id(const struct flowsdn_identity_store *s, uint32_t id, char **ret_labels)
{
	const struct ident *e;
	const char *name = flowsdn_identity_reserved_name(id);
	char *text;

	if (!s || !ret_labels)
		return -EINVAL;
	if (name) {
		if (asprintf(&text, "reserved:%s", name) < 0)
			return -ENOMEM;
		*ret_labels = text;
		return 0;
	}
	e = find_id(s, id);
	if (!e)
		return -ENOENT;
	text = strdup(e->labels);
	if (!text)
		return -ENOMEM;
	*ret_labels = text;
	return 0;
}

FLOWSDN_API int flowsdn_identity_refcount(const struct flowsdn_identity_store *s, uint32_t id)
{
	const struct ident *e;

	if (!s)
		return -EINVAL;
	e = find_id(s, id);
	if (!e)
		return -ENOENT;
	return (int)(e->refs > INT32_MAX ? INT32_MAX : e->refs);
}

FLOWSDN_API int flowsdn_identity_list(const struct flowsdn_identity_store *s, struct flowsdn_identity_info **ret,
				      size_t *ret_n)
{
	struct flowsdn_identity_info *v;
	size_t strings = 0;
	char *p;

	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (s->n == 0) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	for (size_t i = 0; i < s->n; i++)
		strings += strlen(s->by_id[i]->labels) + 1;
	v = malloc(s->n * sizeof(*v) + strings);
	if (!v)
		return -ENOMEM;
	p = (char *)(v + s->n);
	for (size_t i = 0; i < s->n; i++) {
		size_t len = strlen(s->by_id[i]->labels) + 1;

		memcpy(p, s->by_id[i]->labels, len);
		v[i] = (struct flowsdn_identity_info){ .id = s->by_id[i]->id, .refcount = s->by_id[i]->refs, .labels = p };
		p += len;
	}
	*ret = v;
	*ret_n = s->n;
	return 0;
}
