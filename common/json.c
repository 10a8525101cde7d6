/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strict JSON parsing into an immutable tree, on yajl's callback parser.
 *
 * The tree lives in one arena: values, strings, keys and the item and
 * member arrays are carved out of a few large chunks, and json_free()
 * releases the chunks together.  The root is the first value of the
 * first chunk, which is how json_free() finds them.  While a container
 * is open its children gather on the builder's scratch stacks (the
 * children of nested containers above them); when it closes they are
 * copied into the arena at their final size.  (A tree of 150,000 values
 * had been as many mallocs, and as many frees, each.)
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <yajl/yajl_parse.h>

#include "json.h"
#include "util.h"

#define DEF_MAX_DEPTH 64
#define DEF_MAX_STRING (1u << 20)
#define DEF_MAX_MEMBERS 10000
#define DEF_MAX_NODES 1000000
#define DEF_MAX_INPUT (16u << 20)

struct chunk {
	struct chunk *next;
	size_t used, size;      /* bytes of the data after the header */
};

#define CHUNK_MIN 4096u
#define CHUNK_MAX (4u << 20)

struct frame {
	struct json_value *v;
	size_t start;           /* its first child on the scratch stack */
	const char *pending_key; /* objects: the key read (in the arena), waiting for its value */
	size_t pending_key_len;
};

struct builder {
	struct json_limits lim;
	struct frame *stack;
	size_t depth;
	struct json_value *root;
	size_t nodes;
	struct chunk *head, *cur; /* the arena: head holds the root first */
	size_t next_chunk;
	bool root_taken;
	struct json_value **items; /* children of the open arrays */
	size_t n_items, cap_items;
	struct json_member *members; /* of the open objects */
	size_t n_members, cap_members;
	struct json_error err;
	bool failed;
	/* The raw text, for what yajl's decoded strings no longer show. */
	yajl_handle h;
	const char *text;
	size_t len;
	size_t scanned;         /* raw text before this offset is checked */
	size_t fault;           /* where the fault is, when has_fault */
	bool has_fault;
};

static void set_error(struct builder *b, enum json_error_kind kind, const char *fmt, ...) _printf_(3, 4);
static void set_error(struct builder *b, enum json_error_kind kind, const char *fmt, ...)
{
	va_list ap;

	if (b->failed)
		return;
	b->failed = true;
	b->err.kind = kind;
	va_start(ap, fmt);
	vsnprintf(b->err.message, sizeof(b->err.message), fmt, ap);
	va_end(ap);
}

static void chunks_free(struct chunk *c)
{
	while (c) {
		struct chunk *next = c->next;

		free(c);
		c = next;
	}
}

/* @v is a root from json_parse(): the first value of its first chunk. */
void json_free(struct json_value *v)
{
	if (v)
		chunks_free((struct chunk *)(void *)v - 1);
}

static struct chunk *chunk_new(size_t size)
{
	struct chunk *c = malloc(sizeof(*c) + size);

	if (c)
		*c = (struct chunk){ .size = size };
	return c;
}

/* @size bytes at a multiple of @align (a power of two, at most 8) in the
 * arena; NULL with the error set when out of memory. */
static void *arena_alloc(struct builder *b, size_t size, size_t align)
{
	struct chunk *c = b->cur;
	size_t at = (c->used + align - 1) & ~(align - 1);

	if (at > c->size || size > c->size - at) {
		size_t want = b->next_chunk;

		if (size > want)
			want = size;
		c = chunk_new(want);
		if (!c) {
			set_error(b, JSON_ERR_NODES, "out of memory");
			return NULL;
		}
		b->cur->next = c;
		b->cur = c;
		if (b->next_chunk < CHUNK_MAX)
			b->next_chunk *= 2;
		at = 0;
	}
	c->used = at + size;
	return (unsigned char *)(c + 1) + at;
}

static char *copy_bytes(struct builder *b, const void *p, size_t len)
{
	char *s = arena_alloc(b, len + 1, 1);

	if (s) {
		memcpy(s, p, len);
		s[len] = '\0';
	}
	return s;
}

/* Room for one more entry of @size bytes on a scratch stack. */
static bool scratch_reserve(struct builder *b, void **v, size_t n, size_t *cap, size_t size)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 64;
	p = realloc(*v, ncap * size);
	if (!p) {
		set_error(b, JSON_ERR_NODES, "out of memory");
		return false;
	}
	*v = p;
	*cap = ncap;
	return true;
}

/* Hands a finished value to its parent (or makes it the root). */
static int attach(struct builder *b, struct json_value *v)
{
	struct frame *f;

	if (++b->nodes > b->lim.max_nodes) {
		set_error(b, JSON_ERR_NODES, "more than %zu values", b->lim.max_nodes);
		return 0;
	}
	if (b->depth == 0) {
		b->root = v;
		return 1;
	}
	f = &b->stack[b->depth - 1];
	if (f->v->type == JSON_ARRAY) {
		if (b->n_items - f->start >= b->lim.max_members) {
			set_error(b, JSON_ERR_CONTAINER_SIZE, "array has more than %zu items", b->lim.max_members);
			return 0;
		}
		if (!scratch_reserve(b, (void **)&b->items, b->n_items, &b->cap_items, sizeof(*b->items)))
			return 0;
		b->items[b->n_items++] = v;
		return 1;
	}
	/* Object: the key came just before. */
	if (b->n_members - f->start >= b->lim.max_members) {
		set_error(b, JSON_ERR_CONTAINER_SIZE, "object has more than %zu members", b->lim.max_members);
		return 0;
	}
	if (!scratch_reserve(b, (void **)&b->members, b->n_members, &b->cap_members, sizeof(*b->members)))
		return 0;
	b->members[b->n_members++] = (struct json_member){
		.key = f->pending_key,
		.key_len = f->pending_key_len,
		.value = v,
	};
	f->pending_key = NULL;
	return 1;
}

/* The first value made is the root: it takes the slot kept for it at
 * the start of the first chunk. */
static struct json_value *new_value(struct builder *b, enum json_type t)
{
	struct json_value *v;

	if (!b->root_taken) {
		b->root_taken = true;
		v = (struct json_value *)(void *)(b->head + 1);
	} else {
		v = arena_alloc(b, sizeof(*v), _Alignof(struct json_value));
		if (!v)
			return NULL;
	}
	*v = (struct json_value){ .type = t };
	return v;
}

static int cb_null(void *ctx)
{
	struct builder *b = ctx;
	struct json_value *v = new_value(b, JSON_NULL);

	return v ? attach(b, v) : 0;
}

static int cb_boolean(void *ctx, int val)
{
	struct builder *b = ctx;
	struct json_value *v = new_value(b, JSON_BOOL);

	if (!v)
		return 0;
	v->u.boolean = val != 0;
	return attach(b, v);
}

static int cb_number(void *ctx, const char *s, size_t len)
{
	struct builder *b = ctx;
	struct json_value *v;

	if (len > b->lim.max_string) {
		set_error(b, JSON_ERR_STRING_SIZE, "number longer than %zu bytes", b->lim.max_string);
		return 0;
	}
	v = new_value(b, JSON_NUMBER);
	if (!v)
		return 0;
	v->u.number.text = copy_bytes(b, s, len);
	v->u.number.len = len;
	if (!v->u.number.text)
		return 0;
	return attach(b, v);
}

/* RFC 3629 UTF-8: yajl's own check lets overlong forms and encoded
 * surrogates through.  The emitter checks what it writes with it too. */
bool json_utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t n;

		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i - 1 < n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

static int hex4(const char *s, size_t avail)
{
	int v = 0;

	if (avail < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int d = util_hexval(s[i]);

		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	return v;
}

/*
 * Checks the \u escapes of the string token yajl just read.  yajl decodes
 * a high surrogate escape that no low one follows into "?" ("\ud800x"
 * reads as "?x") and pairs a high surrogate with any \u escape that comes
 * next ("\ud800\u0041" reads as U+10041), so its output cannot show
 * either fault: the raw text is looked at instead.  RFC 8259 section 8.2:
 * a string with an unpaired surrogate has no Unicode meaning; we refuse it,
 * and a lone low surrogate too.
 *
 * The token ends where yajl stopped (the byte after its closing quote);
 * it starts at the first quote after the previous string token, since no
 * other token holds a quote.
 */
static bool escapes_valid(struct builder *b)
{
	size_t end = yajl_get_bytes_consumed(b->h), i = b->scanned;

	if (end > b->len || end == 0 || b->text[end - 1] != '"')
		return true; /* not positioned on a string token: yajl reports the fault */
	while (i < end && b->text[i] != '"')
		i++;
	b->scanned = end;
	for (i++; i + 1 < end; i++) {
		int cu, lo;

		if (b->text[i] != '\\')
			continue;
		if (b->text[i + 1] != 'u') {
			i++; /* a one-character escape, possibly \\ */
			continue;
		}
		cu = hex4(b->text + i + 2, end - (i + 2));
		if (cu < 0xd800 || cu > 0xdfff) {
			i += 5;
			continue;
		}
		lo = cu <= 0xdbff && i + 7 < end && b->text[i + 6] == '\\' && b->text[i + 7] == 'u'
			     ? hex4(b->text + i + 8, end - (i + 8))
			     : -1;
		if (lo < 0xdc00 || lo > 0xdfff) {
			set_error(b, JSON_ERR_UTF8, "%s surrogate \\u%.4s in a string: \\uD800-\\uDBFF must be followed by \\uDC00-\\uDFFF",
				  cu <= 0xdbff ? "unpaired high" : "unpaired low", b->text + i + 2);
			b->fault = i;
			b->has_fault = true;
			return false;
		}
		i += 11;
	}
	return true;
}

static int cb_string(void *ctx, const unsigned char *s, size_t len)
{
	struct builder *b = ctx;
	struct json_value *v;

	if (!escapes_valid(b))
		return 0;

	if (len > b->lim.max_string) {
		set_error(b, JSON_ERR_STRING_SIZE, "string longer than %zu bytes", b->lim.max_string);
		return 0;
	}
	if (!json_utf8_valid(s, len)) {
		set_error(b, JSON_ERR_UTF8, "invalid UTF-8 in a string");
		return 0;
	}
	v = new_value(b, JSON_STRING);
	if (!v)
		return 0;
	v->u.string.ptr = copy_bytes(b, s, len);
	v->u.string.len = len;
	v->u.string.has_nul = memchr(s, '\0', len) != NULL;
	if (!v->u.string.ptr)
		return 0;
	return attach(b, v);
}

static int push(struct builder *b, enum json_type t)
{
	struct json_value *v;

	if (b->depth >= b->lim.max_depth) {
		set_error(b, JSON_ERR_DEPTH, "nested deeper than %zu levels", b->lim.max_depth);
		return 0;
	}
	v = new_value(b, t);
	if (!v)
		return 0;
	b->stack[b->depth++] = (struct frame){ .v = v, .start = t == JSON_ARRAY ? b->n_items : b->n_members };
	return 1;
}

static int cb_start_map(void *ctx)
{
	return push(ctx, JSON_OBJECT);
}

static int cb_start_array(void *ctx)
{
	return push(ctx, JSON_ARRAY);
}

static int cb_map_key(void *ctx, const unsigned char *key, size_t len)
{
	struct builder *b = ctx;
	struct frame *f = &b->stack[b->depth - 1];

	if (!escapes_valid(b))
		return 0;
	if (len > b->lim.max_string) {
		set_error(b, JSON_ERR_STRING_SIZE, "object key longer than %zu bytes", b->lim.max_string);
		return 0;
	}
	if (!json_utf8_valid(key, len)) {
		set_error(b, JSON_ERR_UTF8, "invalid UTF-8 in an object key");
		return 0;
	}
	if (memchr(key, '\0', len)) {
		set_error(b, JSON_ERR_SYNTAX, "object key contains a NUL character");
		return 0;
	}
	f->pending_key = copy_bytes(b, key, len);
	f->pending_key_len = len;
	return f->pending_key != NULL;
}

static int member_cmp(const void *a, const void *b)
{
	const struct json_member *x = *(const struct json_member *const *)a;
	const struct json_member *y = *(const struct json_member *const *)b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int r = memcmp(x->key, y->key, n);

	return r ? r : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* Finds a duplicate key of an object: O(n log n); small objects, the
 * common case, by comparing every pair without an allocation. */
static const char *find_duplicate(const struct json_value *obj, int *ret_oom)
{
	size_t n = obj->u.object.n;
	const struct json_member **idx;
	const char *dup = NULL;

	*ret_oom = 0;
	if (n < 2)
		return NULL;
	if (n <= 12) {
		const struct json_member *m = obj->u.object.members;

		for (size_t i = 1; i < n; i++)
			for (size_t j = 0; j < i; j++)
				if (m[i].key_len == m[j].key_len && !memcmp(m[i].key, m[j].key, m[i].key_len))
					return m[i].key;
		return NULL;
	}
	idx = malloc(n * sizeof(*idx));
	if (!idx) {
		*ret_oom = 1;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = &obj->u.object.members[i];
	qsort(idx, n, sizeof(*idx), member_cmp);
	for (size_t i = 1; i < n && !dup; i++)
		if (member_cmp(&idx[i - 1], &idx[i]) == 0)
			dup = idx[i]->key;
	free(idx);
	return dup;
}

/* @n entries of @size bytes from entry @start of @base copied into the
 * arena (NULL for none, and with the error set when out of memory:
 * *@ret_oom).  @base may be NULL when @n is 0: no arithmetic on it then. */
static void *arena_copy(struct builder *b, const void *base, size_t start, size_t n, size_t size, bool *ret_oom)
{
	void *d;

	*ret_oom = false;
	if (!n)
		return NULL;
	d = arena_alloc(b, n * size, 8);
	if (d)
		memcpy(d, (const char *)base + start * size, n * size);
	*ret_oom = !d;
	return d;
}

/* Closes the innermost container: its children, at their final size,
 * into the arena. */
static int pop(struct builder *b)
{
	struct frame f = b->stack[--b->depth];
	bool oom_copy;

	if (f.v->type == JSON_ARRAY) {
		f.v->u.array.n = b->n_items - f.start;
		f.v->u.array.items = arena_copy(b, b->items, f.start, f.v->u.array.n, sizeof(*b->items), &oom_copy);
		b->n_items = f.start;
		if (oom_copy)
			return 0;
	} else {
		const char *dup;
		int oom;

		f.v->u.object.n = b->n_members - f.start;
		f.v->u.object.members = arena_copy(b, b->members, f.start, f.v->u.object.n, sizeof(*b->members),
						   &oom_copy);
		b->n_members = f.start;
		if (oom_copy)
			return 0;
		dup = find_duplicate(f.v, &oom);
		if (dup || oom) {
			if (oom)
				set_error(b, JSON_ERR_NODES, "out of memory");
			else
				set_error(b, JSON_ERR_DUPLICATE_KEY, "duplicate object key \"%.100s\"", dup);
			return 0;
		}
	}
	return attach(b, f.v);
}

static int cb_end(void *ctx)
{
	return pop(ctx);
}

static const yajl_callbacks callbacks = {
	.yajl_null = cb_null,
	.yajl_boolean = cb_boolean,
	.yajl_number = cb_number,
	.yajl_string = cb_string,
	.yajl_start_map = cb_start_map,
	.yajl_map_key = cb_map_key,
	.yajl_end_map = cb_end,
	.yajl_start_array = cb_start_array,
	.yajl_end_array = cb_end,
};

static void position(const char *text, size_t offset, struct json_error *err)
{
	unsigned int line = 1, col = 1;

	for (size_t i = 0; i < offset; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	err->line = line;
	err->column = col;
}

/* True when the @len bytes at @text (not NUL-terminated) are all JSON
 * whitespace. */
static bool only_whitespace(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r' && text[i] != '\n')
			return false;
	return true;
}

int json_parse(const char *text, size_t len, const struct json_limits *limits, struct json_value **ret_value,
	       struct json_error *ret_error)
{
	struct builder b = { 0 };
	yajl_handle h = NULL;
	yajl_status st;
	size_t consumed = 0;
	int r = 0;

	if ((!text && len) || !ret_value)
		return -EINVAL;
	if (limits)
		b.lim = *limits;
	if (!b.lim.max_depth)
		b.lim.max_depth = DEF_MAX_DEPTH;
	if (!b.lim.max_string)
		b.lim.max_string = DEF_MAX_STRING;
	if (!b.lim.max_members)
		b.lim.max_members = DEF_MAX_MEMBERS;
	if (!b.lim.max_nodes)
		b.lim.max_nodes = DEF_MAX_NODES;
	if (!b.lim.max_input)
		b.lim.max_input = DEF_MAX_INPUT;

	if (len > b.lim.max_input) {
		set_error(&b, JSON_ERR_INPUT_SIZE, "input larger than %zu bytes", b.lim.max_input);
		b.err.line = b.err.column = 1;
		r = -EBADMSG;
		goto out;
	}
	b.stack = calloc(b.lim.max_depth, sizeof(*b.stack));
	/* The first chunk: the root, and room for a tree about the text's size. */
	b.next_chunk = len / 2 > CHUNK_MIN ? (len / 2 < CHUNK_MAX ? len / 2 : CHUNK_MAX) : CHUNK_MIN;
	b.head = b.cur = chunk_new(sizeof(struct json_value) + b.next_chunk);
	if (!b.stack || !b.head) {
		r = -ENOMEM;
		goto out;
	}
	b.head->used = sizeof(struct json_value);
	h = yajl_alloc(&callbacks, NULL, &b);
	if (!h) {
		r = -ENOMEM;
		goto out;
	}
	b.h = h;
	b.text = text;
	b.len = len;
	/* Defaults are strict (no comments, no trailing garbage, one value,
	 * UTF-8 validated); set them explicitly all the same. */
	yajl_config(h, yajl_allow_comments, 0);
	yajl_config(h, yajl_dont_validate_strings, 0);
	yajl_config(h, yajl_allow_trailing_garbage, 0);
	yajl_config(h, yajl_allow_multiple_values, 0);
	yajl_config(h, yajl_allow_partial_values, 0);

	st = yajl_parse(h, (const unsigned char *)text, len);
	consumed = yajl_get_bytes_consumed(h);
	if (st == yajl_status_ok) {
		st = yajl_complete_parse(h);
		if (st != yajl_status_ok)
			consumed = len;
	}
	if (st != yajl_status_ok || b.failed || !b.root) {
		if (!b.failed) {
			unsigned char *msg = yajl_get_error(h, 0, (const unsigned char *)text, len);
			const char *m = msg ? (const char *)msg : "parse error";

			if (!b.root && st == yajl_status_ok)
				set_error(&b, JSON_ERR_EMPTY, "no JSON value");
			else if (strstr(m, "UTF8"))
				set_error(&b, JSON_ERR_UTF8, "invalid UTF-8 in a string");
			else if (only_whitespace(text, len))
				set_error(&b, JSON_ERR_EMPTY, "no JSON value");
			else
				set_error(&b, JSON_ERR_SYNTAX, "%s", m[0] ? m : "parse error");
			if (msg)
				yajl_free_error(h, msg);
			/* yajl messages end with a newline. */
			b.err.message[strcspn(b.err.message, "\n")] = '\0';
		}
		position(text, b.has_fault ? b.fault : consumed < len ? consumed : len, &b.err);
		r = -EBADMSG;
		goto out;
	}
	*ret_value = b.root;
	b.head = NULL;

out:
	if (r < 0 && ret_error)
		*ret_error = b.err;
	if (h)
		yajl_free(h);
	chunks_free(b.head);
	free(b.items);
	free(b.members);
	free(b.stack);
	return r;
}

const struct json_value *json_get(const struct json_value *obj, const char *key)
{
	size_t klen;

	if (!obj || obj->type != JSON_OBJECT || !key)
		return NULL;
	klen = strlen(key);
	for (size_t i = 0; i < obj->u.object.n; i++) {
		const struct json_member *m = &obj->u.object.members[i];

		if (m->key_len == klen && memcmp(m->key, key, klen) == 0)
			return m->value;
	}
	return NULL;
}

bool json_number_is_integer(const struct json_value *v)
{
	return v && v->type == JSON_NUMBER && !strpbrk(v->u.number.text, ".eE");
}

int json_get_int64(const struct json_value *v, int64_t *ret)
{
	long long x;
	char *end;

	if (!v || v->type != JSON_NUMBER || !ret)
		return -EINVAL;
	if (!json_number_is_integer(v) || strcmp(v->u.number.text, "-0") == 0)
		return -ERANGE;
	errno = 0;
	x = strtoll(v->u.number.text, &end, 10);
	if (errno || *end)
		return -ERANGE;
	*ret = x;
	return 0;
}

int json_get_uint64(const struct json_value *v, uint64_t *ret)
{
	unsigned long long x;
	char *end;

	if (!v || v->type != JSON_NUMBER || !ret)
		return -EINVAL;
	if (!json_number_is_integer(v) || v->u.number.text[0] == '-')
		return -ERANGE;
	errno = 0;
	x = strtoull(v->u.number.text, &end, 10);
	if (errno || *end)
		return -ERANGE;
	*ret = x;
	return 0;
}

int json_get_double(const struct json_value *v, double *ret)
{
	double x;
	char *end;

	if (!v || v->type != JSON_NUMBER || !ret)
		return -EINVAL;
	errno = 0;
	x = strtod(v->u.number.text, &end);
	if (errno == ERANGE || *end)
		return -ERANGE;
	*ret = x;
	return 0;
}

int json_get_bool(const struct json_value *v, bool *ret)
{
	if (!v || v->type != JSON_BOOL || !ret)
		return -EINVAL;
	*ret = v->u.boolean;
	return 0;
}

int json_get_string(const struct json_value *v, const char **ret)
{
	if (!v || v->type != JSON_STRING || !ret)
		return -EINVAL;
	if (v->u.string.has_nul)
		return -EILSEQ;
	*ret = v->u.string.ptr;
	return 0;
}

const char *json_type_name(enum json_type t)
{
	switch (t) {
	case JSON_NULL:
		return "null";
	case JSON_BOOL:
		return "boolean";
	case JSON_NUMBER:
		return "number";
	case JSON_STRING:
		return "string";
	case JSON_ARRAY:
		return "array";
	case JSON_OBJECT:
		return "object";
	}
	return "unknown";
}

void json_path_init(struct json_path *p)
{
	p->buf[0] = '\0';
	p->len = 0;
	p->truncated = false;
}

static size_t path_append(struct json_path *p, const char *s, size_t n)
{
	size_t saved = p->len;

	if (p->len + n >= sizeof(p->buf)) {
		p->truncated = true;
		return saved;
	}
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
	return saved;
}

static bool is_ident(const char *k)
{
	if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || *k == '_'))
		return false;
	for (k++; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') || *k == '_'))
			return false;
	return true;
}

size_t json_path_push_key(struct json_path *p, const char *key)
{
	size_t saved = p->len;
	char tmp[sizeof(p->buf)];
	size_t o = 0;

	if (is_ident(key)) {
		if (p->len)
			tmp[o++] = '.';
		for (const char *k = key; *k && o < sizeof(tmp) - 1; k++)
			tmp[o++] = *k;
	} else {
		tmp[o++] = '[';
		tmp[o++] = '"';
		for (const char *k = key; *k && o < sizeof(tmp) - 4; k++) {
			unsigned char c = (unsigned char)*k;

			if (c == '"' || c == '\\')
				tmp[o++] = '\\';
			tmp[o++] = c < 0x20 ? '?' : (char)c;
		}
		tmp[o++] = '"';
		tmp[o++] = ']';
	}
	path_append(p, tmp, o);
	return saved;
}

size_t json_path_push_index(struct json_path *p, size_t index)
{
	char tmp[32];
	size_t n = 1;

	tmp[0] = '[';
	n += util_format_u64(index, tmp + 1);
	tmp[n++] = ']';
	return path_append(p, tmp, n);
}

void json_path_pop(struct json_path *p, size_t saved_len)
{
	if (saved_len <= p->len) {
		p->len = saved_len;
		p->buf[p->len] = '\0';
	}
}

const char *json_path_str(const struct json_path *p)
{
	return p->buf;
}
