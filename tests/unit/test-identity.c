/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Identities: canonical label sets and Kubernetes validation, reference
 * counting, persistence across reopen, reserved identities, exclusive
 * ownership, exhaustion and wrap-around, and damaged state files. */
#include "ipam-helpers.h"

#include <sys/stat.h>
#include <flowsdn/identity.h>

#include "helpers.h"

static char top[256], dir[300], state[320];

static void setup(void)
{
	make_tmpdir(top, sizeof(top), dir, sizeof(dir));
	snprintf(state, sizeof(state), "%s/identity.state", dir);
}

static void teardown(void)
{
	rm_tree(top);
}

TestSuite(identity, .init = setup, .fini = teardown, .timeout = 120);

static struct flowsdn_identity_store *open_store(void)
{
	struct flowsdn_identity_store *s = NULL;
	int r = flowsdn_identity_new(dir, NULL, &s);

	cr_assert(r == 0, "identity_new: %s", flowsdn_strerror(r));
	return s;
}

static void expect_canonical(const struct flowsdn_label *l, size_t n, const char *want)
{
	char *text = NULL;
	int r = flowsdn_identity_labels_canonical(l, n, &text);

	cr_assert(r == 0, "canonical: %s", flowsdn_strerror(r));
	ASSERT_STREQ(text, want, "canonical text");
	free(text);
}

static void expect_label_error(const char *key, const char *value, int err)
{
	const struct flowsdn_label l[1] = { { key, value } };
	char *text = NULL;

	ASSERT_ERR(flowsdn_identity_labels_canonical(l, 1, &text), err, key);
	cr_assert_null(text);
}

Test(identity, canonical_and_validation)
{
	const struct flowsdn_label l[] = {
		{ "k8s-app", "web" }, { "app.kubernetes.io/name", "Shop_1" }, { "tier", "" }, { "a", "b" },
	};
	const struct flowsdn_label dup[] = { { "a", "1" }, { "a", "2" } };
	char *text = NULL;
	char longname[80], longprefix[300];

	expect_canonical(l, 4, "a=b,app.kubernetes.io/name=Shop_1,k8s-app=web,tier=");
	ASSERT_ERR(flowsdn_identity_labels_canonical(dup, 2, &text), -FLOWSDN_E_IDENTITY_LABEL_DUPLICATE, "dup");
	ASSERT_ERR(flowsdn_identity_labels_canonical(l, 0, &text), -FLOWSDN_E_IDENTITY_LABELS_EMPTY, "empty");
	ASSERT_ERR(flowsdn_identity_labels_canonical(l, 65, &text), -FLOWSDN_E_IDENTITY_LABELS_EMPTY, "too many");

	expect_label_error("", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("-a", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("a-", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("a=b", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("a,b", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("reserved:host", "", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("Example.com/a", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("example..com/a", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("-example.com/a", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("example.com/", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("/a", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("a/b/c", "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("a", "-v", -FLOWSDN_E_IDENTITY_LABEL_VALUE);
	expect_label_error("a", "v,w", -FLOWSDN_E_IDENTITY_LABEL_VALUE);
	expect_label_error("a", "v=w", -FLOWSDN_E_IDENTITY_LABEL_VALUE);
	expect_label_error("a", "v w", -FLOWSDN_E_IDENTITY_LABEL_VALUE);

	memset(longname, 'x', 63);
	longname[63] = '\0';
	{
		const struct flowsdn_label ok[] = { { longname, longname } };

		ASSERT_OK(flowsdn_identity_labels_canonical(ok, 1, &text), "63 characters");
		free(text);
		text = NULL;
	}
	longname[63] = 'x';
	longname[64] = '\0';
	expect_label_error(longname, "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	expect_label_error("a", longname, -FLOWSDN_E_IDENTITY_LABEL_VALUE);
	memset(longprefix, 'p', 254);
	snprintf(longprefix + 254, sizeof(longprefix) - 254, "/name");
	expect_label_error(longprefix, "v", -FLOWSDN_E_IDENTITY_LABEL_KEY);
	longprefix[253] = '/'; /* a 253-character prefix is allowed */
	memcpy(longprefix + 254, "name", 5);
	{
		const struct flowsdn_label ok[] = { { longprefix, "v" } };

		ASSERT_OK(flowsdn_identity_labels_canonical(ok, 1, &text), "253-character prefix");
		free(text);
	}
}

Test(identity, acquire_release_refcount)
{
	struct flowsdn_identity_store *s = open_store();
	const struct flowsdn_label a[] = { { "app", "web" }, { "env", "prod" } };
	const struct flowsdn_label a_rev[] = { { "env", "prod" }, { "app", "web" } };
	const struct flowsdn_label b[] = { { "app", "db" } };
	uint32_t ia, ia2, ib, ic;
	char *text = NULL;

	ASSERT_OK(flowsdn_identity_acquire(s, a, 2, &ia), "acquire a");
	cr_assert_eq(ia, FLOWSDN_IDENTITY_MIN_LOCAL);
	ASSERT_OK(flowsdn_identity_acquire(s, a_rev, 2, &ia2), "acquire a in another order");
	cr_assert_eq(ia, ia2, "same set, same identity");
	ASSERT_OK(flowsdn_identity_acquire(s, b, 1, &ib), "acquire b");
	cr_assert_neq(ib, ia);
	ASSERT_ERR(flowsdn_identity_refcount(s, ia), 2, "two references on a");
	ASSERT_OK(flowsdn_identity_lookup_id(s, ia, &text), "lookup id");
	ASSERT_STREQ(text, "app=web,env=prod", "labels of a");
	free(text);
	ASSERT_OK(flowsdn_identity_lookup_labels(s, a_rev, 2, &ia2), "lookup labels");
	cr_assert_eq(ia2, ia);

	ASSERT_ERR(flowsdn_identity_release(s, ia), 1, "one reference left");
	ASSERT_ERR(flowsdn_identity_release(s, ia), 0, "freed");
	ASSERT_ERR(flowsdn_identity_release(s, ia), -ENOENT, "already freed");
	ASSERT_ERR(flowsdn_identity_lookup_labels(s, a, 2, &ia2), -ENOENT, "gone by labels");
	ASSERT_ERR(flowsdn_identity_lookup_id(s, ia, &text), -ENOENT, "gone by id");
	/* A freed number is not handed out again at once. */
	ASSERT_OK(flowsdn_identity_acquire(s, a, 2, &ic), "acquire a again");
	cr_assert(ic != ia && ic != ib, "got %u again", ic);
	flowsdn_identity_free(s);
}

Test(identity, survives_restart)
{
	struct flowsdn_identity_store *s = open_store();
	const struct flowsdn_label a[] = { { "app", "web" } }, b[] = { { "app", "db" } };
	struct flowsdn_identity_info *list = NULL;
	uint32_t ia, ib, id;
	size_t n = 0;

	ASSERT_OK(flowsdn_identity_acquire(s, a, 1, &ia), "a");
	ASSERT_OK(flowsdn_identity_acquire(s, a, 1, &ia), "a twice");
	ASSERT_OK(flowsdn_identity_acquire(s, b, 1, &ib), "b");
	ASSERT_OK(flowsdn_identity_release(s, ib), "free b");
	flowsdn_identity_free(s);

	s = open_store();
	ASSERT_OK(flowsdn_identity_lookup_labels(s, a, 1, &id), "a after restart");
	cr_assert_eq(id, ia);
	ASSERT_ERR(flowsdn_identity_refcount(s, ia), 2, "references restored");
	ASSERT_ERR(flowsdn_identity_lookup_labels(s, b, 1, &id), -ENOENT, "b stays freed");
	ASSERT_OK(flowsdn_identity_acquire(s, b, 1, &id), "b again");
	cr_assert(id != ib, "the allocation cursor survived the restart too");
	ASSERT_OK(flowsdn_identity_list(s, &list, &n), "list");
	cr_assert_eq(n, 2);
	cr_assert(list[0].id == ia && list[0].refcount == 2);
	ASSERT_STREQ(list[0].labels, "app=web", "list labels");
	ASSERT_STREQ(list[1].labels, "app=db", "list labels");
	free(list);
	flowsdn_identity_free(s);
}

Test(identity, reserved)
{
	struct flowsdn_identity_store *s = open_store();
	char *text = NULL;

	ASSERT_STREQ(flowsdn_identity_reserved_name(FLOWSDN_IDENTITY_HOST), "host", "1");
	ASSERT_STREQ(flowsdn_identity_reserved_name(2), "world", "2");
	ASSERT_STREQ(flowsdn_identity_reserved_name(4), "health", "4");
	ASSERT_STREQ(flowsdn_identity_reserved_name(5), "init", "5");
	ASSERT_STREQ(flowsdn_identity_reserved_name(6), "remote-node", "6");
	ASSERT_STREQ(flowsdn_identity_reserved_name(7), "kube-apiserver", "7");
	cr_assert_null(flowsdn_identity_reserved_name(0));
	cr_assert_null(flowsdn_identity_reserved_name(11));
	cr_assert_null(flowsdn_identity_reserved_name(256));
	ASSERT_ERR(flowsdn_identity_reserved_id("remote-node"), 6, "remote-node");
	ASSERT_ERR(flowsdn_identity_reserved_id("world-ipv6"), 10, "world-ipv6");
	ASSERT_ERR(flowsdn_identity_reserved_id("nope"), -ENOENT, "unknown");
	ASSERT_OK(flowsdn_identity_lookup_id(s, FLOWSDN_IDENTITY_HOST, &text), "host");
	ASSERT_STREQ(text, "reserved:host", "host labels");
	free(text);
	ASSERT_ERR(flowsdn_identity_release(s, FLOWSDN_IDENTITY_WORLD), -FLOWSDN_E_IDENTITY_RESERVED, "release world");
	ASSERT_ERR(flowsdn_identity_release(s, 200), -ENOENT, "unassigned low number");
	ASSERT_ERR(flowsdn_identity_lookup_id(s, 200, &text), -ENOENT, "unassigned low number");
	flowsdn_identity_free(s);
}

Test(identity, one_owner)
{
	struct flowsdn_identity_store *s = open_store(), *s2 = NULL;

	ASSERT_ERR(flowsdn_identity_new(dir, NULL, &s2), -EBUSY, "second handle");
	cr_assert_null(s2);
	flowsdn_identity_free(s);
	s2 = open_store();
	flowsdn_identity_free(s2);
	flowsdn_identity_free(NULL);
}

/* Writes a valid state file: next_id, then "n=<i>" for ids first.. */
static void forge_state(uint32_t next_id, uint32_t first, uint32_t count)
{
	size_t cap = 64 + (size_t)count * 32, len = 0;
	uint8_t *p = malloc(cap);

#define PUT32(v) do { uint32_t _v = (v); for (int _i = 0; _i < 4; _i++) p[len++] = (uint8_t)(_v >> (8 * _i)); } while (0)
	cr_assert(p);
	memcpy(p, "FSDNIDNT", 8);
	len = 8;
	PUT32(1);
	PUT32(0);
	PUT32(0); /* payload length, patched below */
	PUT32(0);
	PUT32(next_id);
	PUT32(count);
	for (uint32_t i = 0; i < count; i++) {
		char text[16];
		int n = snprintf(text, sizeof(text), "n=%u", first + i);

		PUT32(first + i);
		PUT32(1);
		PUT32((uint32_t)n);
		memcpy(p + len, text, (size_t)n);
		len += (size_t)n;
	}
	{
		uint64_t plen = len - 24;

		for (int i = 0; i < 8; i++)
			p[16 + i] = (uint8_t)(plen >> (8 * i));
	}
	len += 4;
	fix_crc(p, len);
#undef PUT32
	cr_assert(mkdir(dir, 0700) == 0 || errno == EEXIST);
	write_whole(state, p, len);
	free(p);
}

Test(identity, wraps_and_exhausts)
{
	struct flowsdn_identity_store *s;
	const struct flowsdn_label x[] = { { "x", "1" } }, y[] = { { "y", "1" } };
	uint32_t id;

	/* Cursor at the top of the range with 256 taken: 65535, then wrap to 257. */
	forge_state(65535, 256, 1);
	s = open_store();
	ASSERT_OK(flowsdn_identity_acquire(s, x, 1, &id), "x");
	cr_assert_eq(id, 65535);
	ASSERT_OK(flowsdn_identity_acquire(s, y, 1, &id), "y");
	cr_assert_eq(id, 257, "wrapped around, skipping 256 which is in use");
	flowsdn_identity_free(s);

	/* Every local identity in use. */
	forge_state(256, 256, FLOWSDN_IDENTITY_MAX_LOCAL - FLOWSDN_IDENTITY_MIN_LOCAL + 1);
	s = open_store();
	ASSERT_ERR(flowsdn_identity_acquire(s, x, 1, &id), -FLOWSDN_E_IDENTITY_EXHAUSTED, "full");
	ASSERT_ERR(flowsdn_identity_refcount(s, 65535), 1, "the last one was loaded");
	ASSERT_OK(flowsdn_identity_release(s, 1000), "free one");
	ASSERT_OK(flowsdn_identity_acquire(s, x, 1, &id), "room again");
	cr_assert_eq(id, 1000);
	flowsdn_identity_free(s);
}

static void expect_refused(int err, const char *what)
{
	struct flowsdn_identity_store *s = NULL;
	uint8_t *before, *after;
	size_t nb, na;

	read_whole(state, &before, &nb);
	ASSERT_ERR(flowsdn_identity_new(dir, NULL, &s), err, what);
	cr_assert_null(s);
	read_whole(state, &after, &na);
	cr_assert(nb == na && memcmp(before, after, nb) == 0, "%s: state file changed", what);
	free(before);
	free(after);
}

Test(identity, bad_state_files)
{
	struct flowsdn_identity_store *s = open_store();
	const struct flowsdn_label a[] = { { "app", "web" } };
	uint8_t *good, *bad;
	size_t n;
	uint32_t id;

	ASSERT_OK(flowsdn_identity_acquire(s, a, 1, &id), "a");
	flowsdn_identity_free(s);
	read_whole(state, &good, &n);
	bad = malloc(n);

	write_whole(state, good, n - 3);
	expect_refused(-FLOWSDN_E_IDENTITY_STATE_CORRUPT, "truncated");
	write_whole(state, good, 10);
	expect_refused(-FLOWSDN_E_IDENTITY_STATE_CORRUPT, "header only");
	memcpy(bad, good, n);
	bad[8] = 9;
	fix_crc(bad, n);
	write_whole(state, bad, n);
	expect_refused(-FLOWSDN_E_IDENTITY_STATE_VERSION, "newer version");
	/* Valid checksum, but labels not canonical ("app=web" -> "App=web" is
	 * fine, "app=we " is not a value). */
	memcpy(bad, good, n);
	cr_assert_eq(bad[n - 5], 'b');
	bad[n - 5] = ' ';
	fix_crc(bad, n);
	write_whole(state, bad, n);
	expect_refused(-FLOWSDN_E_IDENTITY_STATE_CORRUPT, "bad label text");
	/* Valid checksum, a reserved id. */
	memcpy(bad, good, n);
	bad[24 + 8] = 5;
	bad[24 + 9] = 0;
	fix_crc(bad, n);
	write_whole(state, bad, n);
	expect_refused(-FLOWSDN_E_IDENTITY_STATE_CORRUPT, "reserved id in the file");

	/* Two records with one id, then two with one label set. */
	{
		uint8_t *f;
		size_t fn, rec1 = 24 + 8 + 17; /* record: id, refs, len, "n=300" */

		forge_state(256, 300, 2);
		read_whole(state, &f, &fn);
		cr_assert_eq(f[rec1], 301 & 0xff, "layout: second record is 301");
		f[rec1] = 300 & 0xff;
		fix_crc(f, fn);
		write_whole(state, f, fn);
		expect_refused(-FLOWSDN_E_IDENTITY_STATE_CORRUPT, "duplicate id");
		f[rec1] = 301 & 0xff;
		cr_assert_eq(f[rec1 + 12 + 4], '1');
		f[rec1 + 12 + 4] = '0';
		fix_crc(f, fn);
		write_whole(state, f, fn);
		expect_refused(-FLOWSDN_E_IDENTITY_STATE_CORRUPT, "duplicate labels");
		free(f);
	}

	write_whole(state, good, n);
	s = open_store();
	ASSERT_OK(flowsdn_identity_lookup_labels(s, a, 1, &id), "good file still loads");
	flowsdn_identity_free(s);
	free(good);
	free(bad);
	ASSERT_STREQ(flowsdn_strerror(-FLOWSDN_E_IDENTITY_RESERVED), "reserved identities cannot be released",
		     "strerror");
}

/* An in-memory store: same allocation rules, nothing on disk, no lock
 * (two live side by side), gone with the handle. */
Test(identity, in_memory_store)
{
	struct flowsdn_identity_store *a = NULL, *b = NULL;
	struct flowsdn_label l[] = { { "app", "web" } };
	uint32_t id1 = 0, id2 = 0, idb = 0;

	ASSERT_OK(flowsdn_identity_new(NULL, NULL, &a), "in memory");
	ASSERT_OK(flowsdn_identity_new(NULL, NULL, &b), "a second one: no lock");
	ASSERT_OK(flowsdn_identity_acquire(a, l, 1, &id1), "acquire");
	ASSERT_OK(flowsdn_identity_acquire(a, l, 1, &id2), "again");
	cr_assert(id1 == id2 && id1 >= FLOWSDN_IDENTITY_MIN_LOCAL, "one identity per label set");
	cr_assert_eq(flowsdn_identity_refcount(a, id1), 2);
	ASSERT_OK(flowsdn_identity_acquire(b, l, 1, &idb), "b");
	cr_assert_eq(flowsdn_identity_refcount(b, idb), 1, "b counts its own");
	cr_assert_eq(flowsdn_identity_release(a, id1), 1);
	cr_assert_eq(flowsdn_identity_release(a, id1), 0, "freed with its last reference");
	ASSERT_ERR(flowsdn_identity_refcount(a, id1), -ENOENT, "gone");
	ASSERT_ERR(flowsdn_identity_new("", NULL, &a), -EINVAL, "an empty path is still refused");
	flowsdn_identity_free(a);
	flowsdn_identity_free(b);
}
