/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The streaming tar checker of sandbox imports (<flash/sandbox.h>).
 *
 * The archive goes through in 512-byte blocks.  A header block is held
 * until it is checked; the extension headers that qualify the next member
 * (pax 'x'/'g', GNU 'L'/'K') are held with their data (bounded) and
 * released together with that member's header once it is accepted; the
 * data of a member passes straight through.  So the extractor downstream
 * never sees a header that was refused, and the checker never holds more
 * than a header, the pending extension headers and the set of symbolic
 * links met so far (both bounded).
 *
 * Rules (why each is enough is said where it is checked):
 *   - names: not empty, not absolute, no ".." component; "." components
 *     and repeated slashes are dropped; only a directory may be the root;
 *   - no member under a symbolic link of this archive (a path through a
 *     link would be written wherever the link points);
 *   - a symbolic link's target is relative, made of leading ".."
 *     components (no more than the link's directory is deep) followed by
 *     components without "..": it then resolves under the root whatever
 *     the other links of the archive are, as its directory holds no link;
 *   - a hard link's target is a name under the root (the rules of names)
 *     that is not a symbolic link of this archive (link() of a symlink
 *     makes a second symlink whose relative target resolves from the new
 *     place);
 *   - types: regular files, directories, symbolic and hard links, the pax
 *     and GNU long-name extensions; devices, FIFOs and anything else are
 *     refused;
 *   - headers: checksum right, numbers well-formed; the archive ends with
 *     its two zero blocks, after which only zero bytes may follow (they are
 *     not passed on).
 *
 * The checker must read every header as the extractor in the sandbox
 * does (GNU tar, BusyBox tar): where they could read one differently it
 * refuses rather than picks a reading.  So it also refuses:
 *   - pax keys outside an allow-list (path, linkpath, mtime, atime, ctime,
 *     uid, gid, uname, gname, comment, charset; in a global header the
 *     same but path and linkpath): `size` (BusyBox ignores it, so the
 *     framing would differ), GNU.sparse.* (GNU tar renames and reframes
 *     with them, BusyBox does not), `hdrcharset` (changes how GNU tar
 *     decodes path) and every other key, as one we do not know could name
 *     a path or change the framing in some extractor; a key twice in one
 *     header;
 *   - a member with both a pax path/linkpath and a GNU L/K record (GNU tar
 *     gives pax priority, BusyBox takes the last), two pax headers or two
 *     L or two K records for one member;
 *   - GNU sparse ('S'), multi-volume ('M'), volume ('V'), dump-dir ('D')
 *     and old long-name ('N') members (by the type rule);
 *   - a non-empty prefix field without the POSIX magic (BusyBox joins it
 *     to the name, GNU tar does not);
 *   - a header whose name field is empty (BusyBox takes it for an end
 *     block and reads its data as headers unless a long name is pending:
 *     not a rule to lean on);
 *   - a directory or link with a non-zero size (GNU tar 1.34 skips a
 *     symlink's data where BusyBox 1.35 reads it as headers; both ignore
 *     the size of a directory or hard link today, not a rule to lean on),
 *     a regular file whose name ends in '/' (read as a directory, with
 *     its data skipped or not);
 *   - numbers GNU tar and BusyBox could read differently: the size and
 *     checksum fields need an octal digit; base-256 only with the 0x80
 *     lead byte GNU tar takes and below 2^63; the checksum octal and
 *     terminated (BusyBox reads it with strtoul) and the unsigned sum
 *     only (BusyBox may not take the signed one).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <flash/diag.h>
#include <flash/sandbox.h>

#include "internal.h"

#define BLOCK 512
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
/* Largest pax extended header accepted (its data). */
#define PAX_MAX (64 * 1024)
/* Largest total of held extension headers and their data. */
#define PENDING_MAX (PAX_MAX + 2 * (FLASH_SANDBOX_TAR_NAME_MAX + 2 * BLOCK) + 4 * BLOCK)
/* Most symbolic links one archive may hold. */
#define SYMLINKS_MAX 16384

/* Extension headers met for the next member (ext_seen). */
#define EXT_PAX   0x1u
#define EXT_LNAME 0x2u
#define EXT_LLINK 0x4u
#define EXT_GNU_ANY (EXT_LNAME | EXT_LLINK)

enum state {
	ST_HEADER,      /* collecting a header block */
	ST_DATA,        /* passing a member's data (and padding) through */
	ST_EXT,         /* collecting an extension header's data into pending */
	ST_ZERO,        /* one zero block seen: the next must be zero too */
	ST_END,         /* end of archive: only zero bytes may follow */
	ST_FAILED,
};

struct flash_sandbox_tar {
	enum state state;
	int error;
	uint8_t hdr[BLOCK];
	size_t hdr_fill;
	uint64_t remaining;       /* ST_DATA/ST_EXT: bytes left, padding included */
	uint64_t ext_size;        /* ST_EXT: the data's size (no padding) */
	char ext_type;
	size_t ext_off;           /* ST_EXT: offset of the data in pending */
	uint8_t *pending;         /* held extension headers and data */
	size_t pending_len, pending_cap;
	/* what the held extensions say about the next member */
	char *long_name, *long_link;
	bool pax_name, pax_link;  /* long_name/long_link came from pax */
	unsigned ext_seen;        /* EXT_* met for the next member */
	char ext_code[32];        /* a refusal held until the member is named */
	char ext_msg[200];
	char **symlinks;          /* normalized names of the archive's symlinks */
	size_t n_symlinks, cap_symlinks;
	size_t members;
};

FLASH_API int flash_sandbox_tar_new(struct flash_sandbox_tar **ret)
{
	struct flash_sandbox_tar *t;

	if (!ret)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*ret = t;
	return 0;
}

static void ext_reset(struct flash_sandbox_tar *t)
{
	free(t->long_name);
	free(t->long_link);
	t->long_name = t->long_link = NULL;
	t->pax_name = t->pax_link = false;
	t->ext_seen = 0;
	t->ext_code[0] = t->ext_msg[0] = '\0';
	t->pending_len = 0;
}

FLASH_API void flash_sandbox_tar_free(struct flash_sandbox_tar *t)
{
	if (!t)
		return;
	ext_reset(t);
	free(t->pending);
	for (size_t i = 0; i < t->n_symlinks; i++)
		free(t->symlinks[i]);
	free(t->symlinks);
	free(t);
}

FLASH_API size_t flash_sandbox_tar_members(const struct flash_sandbox_tar *t)
{
	return t ? t->members : 0;
}

/* Refuses the archive: the first problem goes into @diag with the
 * member's name (shortened, may be NULL) as its path. */
_printf_(5, 6) static int refuse(struct flash_sandbox_tar *t, struct flash_diag *diag, const char *member,
				 const char *code, const char *fmt, ...)
{
	char path[256];
	va_list ap;

	if (t->state != ST_FAILED) {
		snprintf(path, sizeof(path), "%s", member ? member : "");
		va_start(ap, fmt);
		diag_add_textv(flash__diag(diag), DIAG_ERROR, path, code, NULL, fmt, ap);
		va_end(ap);
	}
	t->state = ST_FAILED;
	t->error = -FLASH_E_SANDBOX_ARCHIVE;
	return t->error;
}

/* A numeric header field: leading spaces, at least one octal digit, then
 * only NULs and spaces (when @terminated, at least one of them); or, when
 * @base256, GNU base-256: the lead byte 0x80 exactly (the only positive
 * one GNU tar takes; BusyBox keeps the low 64 bits, the same number below
 * 2^63).  Values of 2^63 and more (not an off_t) are refused.  -1 when
 * malformed. */
static int parse_number(const uint8_t *f, size_t len, bool base256, bool terminated, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i = 0, digits;

	if (base256 && f[0] == 0x80) {
		for (i = 1; i < len; i++) {
			if (v > (UINT64_MAX >> 8))
				return -1;
			v = (v << 8) | f[i];
		}
		if (v > (uint64_t)INT64_MAX)
			return -1;
		*ret = v;
		return 0;
	}
	while (i < len && f[i] == ' ')
		i++;
	digits = i;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (UINT64_MAX >> 3))
			return -1;
		v = (v << 3) | (uint64_t)(f[i] - '0');
	}
	if (i == digits || (terminated && i == len) || v > (uint64_t)INT64_MAX)
		return -1;
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return -1;
	*ret = v;
	return 0;
}

/* The unsigned (POSIX) sum only: BusyBox built without its old-Sun
 * compatibility takes no other. */
static bool checksum_ok(const uint8_t *h)
{
	uint64_t want;
	uint64_t usum = 0;

	if (parse_number(h + 148, 8, false, true, &want) < 0)
		return false;
	for (size_t i = 0; i < BLOCK; i++)
		usum += (i >= 148 && i < 156) ? ' ' : h[i];
	return want == usum;
}

/* A fixed header field as a new string (up to the first NUL). */
static char *field_dup(const uint8_t *f, size_t len)
{
	size_t n = strnlen((const char *)f, len);
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, f, n);
		s[n] = '\0';
	}
	return s;
}

/* @name normalized into a new string: "." components and repeated or
 * trailing slashes dropped.  -EINVAL for an absolute name or a ".."
 * component (*ret_code says which), -ENOMEM. */
static int normalize(const char *name, char **ret, const char **ret_code)
{
	size_t n = strlen(name);
	char *out = malloc(n + 1);
	size_t o = 0;
	const char *p = name;

	if (!out)
		return -ENOMEM;
	if (name[0] == '/') {
		free(out);
		*ret_code = "absolute-name";
		return -EINVAL;
	}
	while (*p) {
		const char *e = strchrnul(p, '/');
		size_t len = (size_t)(e - p);

		if (len == 2 && p[0] == '.' && p[1] == '.') {
			free(out);
			*ret_code = "dotdot";
			return -EINVAL;
		}
		if (len > 0 && !(len == 1 && p[0] == '.')) {
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p = *e ? e + 1 : e;
	}
	out[o] = '\0';
	*ret = out;
	return 0;
}

static bool is_symlink(const struct flash_sandbox_tar *t, const char *name, size_t len)
{
	for (size_t i = 0; i < t->n_symlinks; i++)
		if (strlen(t->symlinks[i]) == len && memcmp(t->symlinks[i], name, len) == 0)
			return true;
	return false;
}

/* True when a proper prefix of the normalized @name is a symlink of the
 * archive. */
static bool under_symlink(const struct flash_sandbox_tar *t, const char *name)
{
	for (const char *s = strchr(name, '/'); s; s = strchr(s + 1, '/'))
		if (is_symlink(t, name, (size_t)(s - name)))
			return true;
	return false;
}

static size_t depth_of_dir(const char *norm)
{
	size_t d = 0;

	for (const char *s = norm; *s; s++)
		if (*s == '/')
			d++;
	return d; /* components of the directory holding @norm */
}

/* The symlink target rule (see the head of the file). */
static bool symlink_target_ok(const char *norm_name, const char *target)
{
	size_t up = 0, depth = depth_of_dir(norm_name);
	const char *p = target;
	bool leading = true;

	if (target[0] == '\0' || target[0] == '/')
		return false;
	while (*p) {
		const char *e = strchrnul(p, '/');
		size_t len = (size_t)(e - p);

		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (!leading)
				return false;
			up++;
		} else if (len > 0 && !(len == 1 && p[0] == '.')) {
			leading = false;
		}
		p = *e ? e + 1 : e;
	}
	return up <= depth;
}

static int pending_add(struct flash_sandbox_tar *t, const void *buf, size_t len)
{
	if (t->pending_len + len > PENDING_MAX)
		return -E2BIG;
	if (t->pending_len + len > t->pending_cap) {
		size_t cap = t->pending_cap ? t->pending_cap * 2 : 4 * BLOCK;
		uint8_t *n;

		while (cap < t->pending_len + len)
			cap *= 2;
		n = realloc(t->pending, cap);
		if (!n)
			return -ENOMEM;
		t->pending = n;
		t->pending_cap = cap;
	}
	memcpy(t->pending + t->pending_len, buf, len);
	t->pending_len += len;
	return 0;
}

static char *dup_mem(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

/* Holds a refusal of the extensions until their member's header names
 * it (the first one wins). */
_printf_(3, 4) static void ext_refuse(struct flash_sandbox_tar *t, const char *code, const char *fmt, ...)
{
	va_list ap;

	if (t->ext_code[0])
		return;
	snprintf(t->ext_code, sizeof(t->ext_code), "%s", code);
	va_start(ap, fmt);
	vsnprintf(t->ext_msg, sizeof(t->ext_msg), fmt, ap);
	va_end(ap);
}

/* The pax keys accepted (see the head of the file); the others are
 * refused.  path and linkpath only in an 'x' header. */
static const char *const pax_keys[] = {
	"path", "linkpath", "mtime", "atime", "ctime", "uid", "gid", "uname", "gname", "comment", "charset",
};

/* Parses pax records "LEN KEY=VALUE\n" of the held data; path and
 * linkpath qualify the next member ('x'); a global header ('g') may not
 * set them. */
static int parse_pax(struct flash_sandbox_tar *t, const uint8_t *d, size_t n, bool global, struct flash_diag *diag)
{
	size_t off = 0;
	unsigned seen = 0;

	if (!global) {
		if (t->ext_seen & EXT_PAX)
			ext_refuse(t, "pax", "two pax headers for one member");
		t->ext_seen |= EXT_PAX;
	}
	while (off < n) {
		size_t reclen = 0, i = off, klen, k, nkeys = sizeof(pax_keys) / sizeof(pax_keys[0]);
		const uint8_t *key, *eq, *val, *end;

		while (i < n && d[i] >= '0' && d[i] <= '9' && i - off < 8)
			reclen = reclen * 10 + (size_t)(d[i++] - '0');
		if (i == off || i >= n || d[i] != ' ' || reclen <= i - off + 1 || reclen > n - off)
			return refuse(t, diag, NULL, "pax", "malformed pax record at byte %zu", off);
		end = d + off + reclen - 1;
		if (*end != '\n')
			return refuse(t, diag, NULL, "pax", "pax record at byte %zu does not end in a newline", off);
		key = d + i + 1;
		eq = memchr(key, '=', (size_t)(end - key));
		if (!eq || eq == key)
			return refuse(t, diag, NULL, "pax", "pax record at byte %zu has no key", off);
		klen = (size_t)(eq - key);
		val = eq + 1;
		for (k = 0; k < nkeys; k++)
			if (strlen(pax_keys[k]) == klen && memcmp(pax_keys[k], key, klen) == 0)
				break;
		if (k == nkeys) {
			/* printable for the message */
			char shown[64];
			size_t m = MIN(klen, sizeof(shown) - 1);

			for (size_t j = 0; j < m; j++)
				shown[j] = key[j] >= 0x20 && key[j] < 0x7f ? (char)key[j] : '?';
			shown[m] = '\0';
			if (global)
				return refuse(t, diag, NULL, "pax-key", "global pax key \"%s\" not accepted", shown);
			ext_refuse(t, "pax-key", "pax key \"%s\" not accepted%s", shown,
				   klen == 4 && !memcmp(key, "size", 4) ? " (extractors differ on the framing)" :
				   klen > 11 && !memcmp(key, "GNU.sparse.", 11) ? " (GNU sparse member)" : "");
		} else if (seen & (1u << k)) {
			if (global)
				return refuse(t, diag, NULL, "pax-key", "pax key \"%s\" twice", pax_keys[k]);
			ext_refuse(t, "pax-key", "pax key \"%s\" twice", pax_keys[k]);
		} else if (k <= 1) {
			char **slot = k == 0 ? &t->long_name : &t->long_link;
			size_t vlen = (size_t)(end - val);

			seen |= 1u << k;
			if (global)
				return refuse(t, diag, NULL, "pax", "global pax header sets %.*s", (int)klen, key);
			if (vlen > FLASH_SANDBOX_TAR_NAME_MAX)
				return refuse(t, diag, NULL, "name-too-long", "pax %.*s of %zu bytes (at most %d)",
					      (int)klen, key, vlen, FLASH_SANDBOX_TAR_NAME_MAX);
			if (memchr(val, '\0', vlen))
				return refuse(t, diag, NULL, "pax", "pax %.*s holds a NUL byte", (int)klen, key);
			free(*slot);
			*slot = dup_mem(val, vlen);
			if (!*slot)
				return -ENOMEM;
			if (k == 0)
				t->pax_name = true;
			else
				t->pax_link = true;
		} else {
			seen |= 1u << k;
		}
		off += reclen;
	}
	return 0;
}

static int emit(flash_sandbox_sink_fn sink, void *userdata, const void *buf, size_t len)
{
	return sink && len ? sink(buf, len, userdata) : 0;
}

/* Checks the member whose header is t->hdr; on acceptance the held
 * extensions and the header go to the sink. */
static int member_header(struct flash_sandbox_tar *t, flash_sandbox_sink_fn sink, void *userdata,
			 struct flash_diag *diag)
{
	const uint8_t *h = t->hdr;
	char type = (char)h[156];
	bool posix = memcmp(h + 257, "ustar\0", 6) == 0;
	_cleanup_free_ char *raw = NULL, *norm = NULL, *link = NULL, *nlink = NULL;
	const char *code = NULL;
	uint64_t size;
	int r;

	if (parse_number(h + 124, 12, true, false, &size) < 0)
		return refuse(t, diag, NULL, "bad-number", "malformed size field");
	/* the rules on how extractors read the header, before its name is
	 * read: the member is named by its header's name field */
	if (t->ext_code[0] || ((t->pax_name || t->pax_link) && (t->ext_seen & EXT_GNU_ANY)) ||
	    (!posix && h[345])) {
		_cleanup_free_ char *hname = field_dup(h, 100);

		if (!hname)
			return -ENOMEM;
		if (t->ext_code[0])
			return refuse(t, diag, hname, t->ext_code, "%s", t->ext_msg);
		if (!posix && h[345])
			return refuse(t, diag, hname, "prefix",
				      "prefix field set without the POSIX magic (extractors differ on the name)");
		return refuse(t, diag, hname, "ext-conflict",
			      "both a pax path/linkpath and a GNU long name/link (extractors differ on which wins)");
	}
	/* the name */
	if (t->long_name) {
		raw = TAKE_PTR(t->long_name);
	} else if (posix && h[345]) {
		_cleanup_free_ char *prefix = field_dup(h + 345, 155), *name = field_dup(h, 100);

		if (!prefix || !name)
			return -ENOMEM;
		if (asprintf(&raw, "%s/%s", prefix, name) < 0)
			return -ENOMEM;
	} else {
		raw = field_dup(h, 100);
		if (!raw)
			return -ENOMEM;
	}
	if (t->long_link) {
		link = TAKE_PTR(t->long_link);
	} else {
		link = field_dup(h + 157, 100);
		if (!link)
			return -ENOMEM;
	}

	if (raw[0] == '\0')
		return refuse(t, diag, NULL, "empty-name", "member with an empty name");
	r = normalize(raw, &norm, &code);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return refuse(t, diag, raw, code, "%s", strcmp(code, "dotdot") == 0 ?
			      "name has a \"..\" component" : "absolute name");
	switch (type) {
	case '0': case '\0': case '7':
		if (raw[strlen(raw) - 1] == '/')
			return refuse(t, diag, raw, "type", "regular file whose name ends in '/'");
		break;
	case '5': case '1': case '2':
		if (size)
			return refuse(t, diag, raw, "size", "%s with a size of %" PRIu64 " (extractors differ on its data)",
				      type == '5' ? "directory" : "link", size);
		break;
	case '3': case '4':
		return refuse(t, diag, raw, "device", "device node (type %c)", type);
	case '6':
		return refuse(t, diag, raw, "fifo", "FIFO");
	case 'S':
		return refuse(t, diag, raw, "type", "GNU sparse member");
	case 'M': case 'V':
		return refuse(t, diag, raw, "type", "GNU multi-volume header (type %c)", type);
	default:
		return refuse(t, diag, raw, "type", "member type 0x%02x not accepted", (unsigned char)type);
	}
	if (norm[0] == '\0' && type != '5')
		return refuse(t, diag, raw, "empty-name", "only a directory may name the root");
	if (under_symlink(t, norm))
		return refuse(t, diag, raw, "under-symlink", "path goes through a symbolic link of the archive");
	if (type == '2') {
		if (!symlink_target_ok(norm, link))
			return refuse(t, diag, raw, "link-outside", "symbolic link to \"%.200s\" leaves the root", link);
		if (t->n_symlinks == SYMLINKS_MAX)
			return refuse(t, diag, raw, "too-many-links", "more than %d symbolic links", SYMLINKS_MAX);
		if (t->n_symlinks == t->cap_symlinks) {
			size_t cap = t->cap_symlinks ? t->cap_symlinks * 2 : 16;
			char **n = realloc(t->symlinks, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			t->symlinks = n;
			t->cap_symlinks = cap;
		}
		t->symlinks[t->n_symlinks++] = TAKE_PTR(norm);
	} else if (type == '1') {
		if (link[0] == '\0')
			return refuse(t, diag, raw, "link-outside", "hard link without a target");
		r = normalize(link, &nlink, &code);
		if (r == -ENOMEM)
			return r;
		if (r < 0 || nlink[0] == '\0' || under_symlink(t, nlink) || is_symlink(t, nlink, strlen(nlink)))
			return refuse(t, diag, raw, "link-outside", "hard link to \"%.200s\" not a member under the root",
				      link);
	}
	/* accepted: the held extensions, then the header */
	r = emit(sink, userdata, t->pending, t->pending_len);
	if (r >= 0)
		r = emit(sink, userdata, h, BLOCK);
	ext_reset(t);
	if (r < 0)
		return r;
	t->members++;
	t->remaining = size + ((BLOCK - size % BLOCK) % BLOCK);
	t->state = t->remaining ? ST_DATA : ST_HEADER;
	return 0;
}

static int header_block(struct flash_sandbox_tar *t, flash_sandbox_sink_fn sink, void *userdata,
			struct flash_diag *diag)
{
	const uint8_t *h = t->hdr;
	char type = (char)h[156];
	uint64_t size, max;
	bool zero = true;
	int r;

	t->hdr_fill = 0;
	for (size_t i = 0; i < BLOCK && zero; i++)
		zero = h[i] == 0;
	if (t->state == ST_ZERO) {
		if (!zero)
			return refuse(t, diag, NULL, "lone-zero-block", "a zero block inside the archive");
		t->state = ST_END;
		r = emit(sink, userdata, h, BLOCK);
		return r < 0 ? r : emit(sink, userdata, h, BLOCK);
	}
	if (zero) {
		if (t->pending_len)
			return refuse(t, diag, NULL, "truncated", "extension header without its member");
		t->state = ST_ZERO;
		/* the first zero block is held: a second must follow */
		return 0;
	}
	if (!checksum_ok(h))
		return refuse(t, diag, NULL, "checksum", "header block %zu has a bad checksum", t->members);
	if (h[0] == '\0')
		return refuse(t, diag, t->long_name, "empty-name",
			      "header with an empty name field (BusyBox may read it as an end block)");
	if (type != 'x' && type != 'g' && type != 'L' && type != 'K')
		return member_header(t, sink, userdata, diag);

	if (parse_number(h + 124, 12, true, false, &size) < 0)
		return refuse(t, diag, NULL, "bad-number", "malformed size field");
	max = (type == 'L' || type == 'K') ? FLASH_SANDBOX_TAR_NAME_MAX + 1 : PAX_MAX;
	if (size > max)
		return refuse(t, diag, NULL, "name-too-long", "%s header of %" PRIu64 " bytes (at most %" PRIu64 ")",
			      type == 'L' ? "GNU long name" : type == 'K' ? "GNU long link" : "pax", size, max);
	r = pending_add(t, h, BLOCK);
	if (r == -E2BIG)
		return refuse(t, diag, NULL, "name-too-long", "extension headers over %d bytes", PENDING_MAX);
	if (r < 0)
		return r;
	t->ext_type = type;
	t->ext_size = size;
	t->ext_off = t->pending_len;
	t->remaining = size + ((BLOCK - size % BLOCK) % BLOCK);
	t->state = ST_EXT;
	return 0;
}

/* The data of an extension header is all in pending: read it. */
static int ext_done(struct flash_sandbox_tar *t, struct flash_diag *diag)
{
	const uint8_t *d = t->pending + t->ext_off;
	size_t n = (size_t)t->ext_size;
	char **slot;

	t->state = ST_HEADER;
	if (t->ext_type == 'x' || t->ext_type == 'g')
		return parse_pax(t, d, n, t->ext_type == 'g', diag);
	slot = t->ext_type == 'L' ? &t->long_name : &t->long_link;
	if (t->ext_seen & (t->ext_type == 'L' ? EXT_LNAME : EXT_LLINK))
		ext_refuse(t, "gnu-long", "two GNU long %s records for one member", t->ext_type == 'L' ? "name" : "link");
	t->ext_seen |= t->ext_type == 'L' ? EXT_LNAME : EXT_LLINK;
	n = strnlen((const char *)d, n);
	if (n > FLASH_SANDBOX_TAR_NAME_MAX)
		return refuse(t, diag, NULL, "name-too-long", "GNU long name of %zu bytes", n);
	free(*slot);
	*slot = dup_mem(d, n);
	return *slot ? 0 : -ENOMEM;
}

FLASH_API int flash_sandbox_tar_feed(struct flash_sandbox_tar *t, const void *buf, size_t len,
				     flash_sandbox_sink_fn sink, void *userdata, struct flash_diag *diag)
{
	const uint8_t *p = buf;
	int r;

	if (!t || (!buf && len))
		return -EINVAL;
	if (t->state == ST_FAILED)
		return t->error;
	while (len > 0) {
		size_t n;

		switch (t->state) {
		case ST_HEADER:
		case ST_ZERO:
			n = MIN(len, (size_t)BLOCK - t->hdr_fill);
			memcpy(t->hdr + t->hdr_fill, p, n);
			t->hdr_fill += n;
			if (t->hdr_fill == BLOCK) {
				r = header_block(t, sink, userdata, diag);
				if (r < 0)
					goto fail;
			}
			break;
		case ST_DATA:
			n = (size_t)MIN((uint64_t)len, t->remaining);
			r = emit(sink, userdata, p, n);
			if (r < 0)
				goto fail;
			t->remaining -= n;
			if (t->remaining == 0)
				t->state = ST_HEADER;
			break;
		case ST_EXT:
			n = (size_t)MIN((uint64_t)len, t->remaining);
			r = pending_add(t, p, n);
			if (r == -E2BIG)
				r = refuse(t, diag, NULL, "name-too-long", "extension headers over %d bytes",
					   PENDING_MAX);
			if (r < 0)
				goto fail;
			t->remaining -= n;
			if (t->remaining == 0) {
				r = ext_done(t, diag);
				if (r < 0)
					goto fail;
			}
			break;
		case ST_END:
			n = len;
			for (size_t i = 0; i < n; i++)
				if (p[i]) {
					r = refuse(t, diag, NULL, "trailing-data", "data after the end of the archive");
					goto fail;
				}
			break;
		default:
			return t->error;
		}
		p += n;
		len -= n;
	}
	return 0;
fail:
	/* a sink's error or ENOMEM also ends the stream */
	if (t->state != ST_FAILED) {
		t->state = ST_FAILED;
		t->error = r;
	}
	return t->error;
}

FLASH_API int flash_sandbox_tar_finish(struct flash_sandbox_tar *t, struct flash_diag *diag)
{
	if (!t)
		return -EINVAL;
	if (t->state == ST_FAILED)
		return t->error;
	if (t->state == ST_END)
		return 0;
	switch (t->state) {
	case ST_DATA:
		return refuse(t, diag, NULL, "truncated", "archive ends inside a member's data");
	case ST_EXT:
		return refuse(t, diag, NULL, "truncated", "archive ends inside an extension header");
	default:
		break;
	}
	if (t->hdr_fill)
		return refuse(t, diag, NULL, "truncated", "archive ends inside a header block");
	return refuse(t, diag, NULL, "truncated", "archive ends without its end-of-archive blocks");
}
