/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strict JSON parsing into a small immutable tree (private to the
 * libraries; built on yajl's callback parser).
 *
 * Strict means: RFC 8259 only (no comments, no trailing garbage, one value),
 * UTF-8 validated, surrogate escapes only as pairs (a lone "\ud800" is
 * refused, not turned into "?"), duplicate object keys refused, nesting
 * depth, string length, container size and total node count bounded.  Numbers keep their
 * exact text; json_get_int64()/json_get_uint64() refuse fractions,
 * exponents, negative zero and out-of-range values instead of rounding.
 * A malformed document gives its line and column.
 */
#ifndef FLASH_COMMON_JSON_H
#define FLASH_COMMON_JSON_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum json_type {
	JSON_NULL,
	JSON_BOOL,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json_value;

struct json_member {
	const char *key;            /* NUL-terminated; may not contain NUL */
	size_t key_len;
	struct json_value *value;
};

struct json_value {
	enum json_type type;
	union {
		bool boolean;
		struct {
			const char *text;   /* exact number text, NUL-terminated */
			size_t len;
		} number;
		struct {
			const char *ptr;    /* NUL-terminated; may contain NUL when has_nul */
			size_t len;
			bool has_nul;       /* the string contained \u0000 */
		} string;
		struct {
			struct json_value **items;
			size_t n;
		} array;
		struct {
			struct json_member *members; /* in document order */
			size_t n;
		} object;
	} u;
};

/* Limits; zero fields take the defaults in brackets. */
struct json_limits {
	size_t max_depth;       /* [64] nesting of arrays/objects */
	size_t max_string;      /* [1 MiB] bytes of one string or key */
	size_t max_members;     /* [10000] items of one array or object */
	size_t max_nodes;       /* [1000000] values in the document */
	size_t max_input;       /* [16 MiB] bytes of input */
};

/* Why a parse failed. */
enum json_error_kind {
	JSON_ERR_SYNTAX = 1,    /* not JSON (message from the parser) */
	JSON_ERR_UTF8,          /* invalid UTF-8 in a string */
	JSON_ERR_DUPLICATE_KEY, /* an object has the same key twice */
	JSON_ERR_DEPTH,         /* nested deeper than max_depth */
	JSON_ERR_STRING_SIZE,   /* a string longer than max_string */
	JSON_ERR_CONTAINER_SIZE,/* an array/object larger than max_members */
	JSON_ERR_NODES,         /* more than max_nodes values */
	JSON_ERR_INPUT_SIZE,    /* input larger than max_input */
	JSON_ERR_EMPTY,         /* no value at all */
};

struct json_error {
	enum json_error_kind kind;
	unsigned int line;      /* 1-based position of the fault */
	unsigned int column;    /* 1-based, in bytes */
	char message[160];      /* human-readable, names the fault (and key) */
};

/* Parses @len bytes at @text.  @limits may be NULL (defaults).
 * Returns 0 and *ret_value (free with json_free()), -ENOMEM, -EINVAL (bad
 * arguments) or -EBADMSG with *ret_error filled (if non-NULL). */
int json_parse(const char *text, size_t len, const struct json_limits *limits,
	       struct json_value **ret_value, struct json_error *ret_error);

void json_free(struct json_value *v);

/* Member @key of an object (NULL when absent or @obj is not an object). */
const struct json_value *json_get(const struct json_value *obj, const char *key);

/* Typed accessors: return 0, or -EINVAL when @v is NULL or of another type,
 * -ERANGE when a number does not fit or is not an integer (fraction,
 * exponent, "-0"). */
int json_get_int64(const struct json_value *v, int64_t *ret);
int json_get_uint64(const struct json_value *v, uint64_t *ret);
int json_get_double(const struct json_value *v, double *ret);
int json_get_bool(const struct json_value *v, bool *ret);
/* The string of @v (NUL-terminated); -EINVAL when not a string, -EILSEQ when
 * it contains a NUL character. */
int json_get_string(const struct json_value *v, const char **ret);

/* True when the number's text is an integer (no '.', 'e', 'E'). */
bool json_number_is_integer(const struct json_value *v);

const char *json_type_name(enum json_type t);

/* True when @len bytes at @s are RFC 3629 UTF-8 (no overlong forms, no
 * encoded surrogates, nothing above U+10FFFF). */
bool json_utf8_valid(const unsigned char *s, size_t len);

/* The string of @v, or NULL when @v is absent, not a string or holds a
 * NUL character. */
const char *json_string_value(const struct json_value *v);
static inline bool json_is(const struct json_value *v, enum json_type t)
{
	return v && v->type == t;
}

/*
 * JSON paths for error messages: "ports[1].container_port".
 * json_path_push_key/_index append to a bounded buffer; _pop restores the
 * previous length.  Keys that are not identifiers are written as
 * ["key with spaces"].
 */
struct json_path {
	char buf[256];
	size_t len;
	bool truncated;
};
void json_path_init(struct json_path *p);
size_t json_path_push_key(struct json_path *p, const char *key);
size_t json_path_push_index(struct json_path *p, size_t index);
void json_path_pop(struct json_path *p, size_t saved_len);
const char *json_path_str(const struct json_path *p); /* "" for the root */

/*
 * Reading with diagnostics.  A struct check_ctx (diag.h) carries the diag
 * and the JSON path of the value being read; every problem is reported
 * there with its full path ("ports[1].name") and a rule code, and the
 * reader carries on so that one pass reports every problem.  Readers
 * return 0, JSON_READ_REPORTED when they reported a problem (the caller
 * maps it to its own domain code), or a negative errno that stops the
 * read (-ENOMEM).
 */
#define JSON_READ_REPORTED (-EBADMSG)

struct check_ctx;
struct diag;

/* json_parse() for a reader with a diag: input that is not JSON is
 * reported into @diag (diag_add_json_error(): line, column, the parser's
 * message) and gives @code, the reader's domain code (-ENOMEM when the
 * diag could not keep it); other failures as json_parse(). */
int json_parse_diag(const char *text, size_t len, const struct json_limits *limits, int code,
		    struct json_value **ret_value, struct diag *diag);

/* The value at @path below @root: member names joined by '.', array
 * indexes in brackets ("spec.ports[0].port"; "" is @root).  NULL when a
 * step is missing or of the wrong kind. */
const struct json_value *json_at(const struct json_value *root, const char *path);

/* Typed getters by path, reporting at ctx->path + @path.  Absent: 0 with
 * *ret untouched unless @required (then "required").  Wrong type: "type".
 * Integers out of [@min, @max]: "range".  Strings with a NUL: "nul". */
int json_read_value_at(struct check_ctx *ctx, const struct json_value *root, const char *path,
		       enum json_type type, bool required, const struct json_value **ret);
int json_read_string_at(struct check_ctx *ctx, const struct json_value *root, const char *path, bool required,
			const char **ret);
int json_read_int_at(struct check_ctx *ctx, const struct json_value *root, const char *path, bool required,
		     int64_t min, int64_t max, int64_t *ret);
int json_read_bool_at(struct check_ctx *ctx, const struct json_value *root, const char *path, bool required,
		      bool *ret);

/*
 * Table-driven reading of a closed object: a format that is a list of
 * fields is described as a table, and json_read_object() checks the
 * object against it — unknown keys refused ("unknown-field"), required
 * fields present ("required"), each value of its field's type ("type") —
 * then calls each present field's reader with the path pushed.
 */
struct json_field {
	const char *name;
	enum json_type type;     /* the type the value must have */
	bool required;
	/* Stores the value at (char *)target + offset; NULL: nothing to store. */
	int (*read)(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);
	size_t offset;
	const void *arg;         /* the reader's parameter (bounds, a nested table) */
};

/* How json_read_object_flags() treats the object. */
enum json_read_flags {
	/* Keys the table does not name are skipped, not refused: for open
	 * formats whose readers must ignore what they do not know (CNI
	 * network configurations). */
	JSON_READ_IGNORE_UNKNOWN = 1u << 0,
	/* A member whose value is null counts as absent (Kubernetes objects:
	 * null is "not set").  With it, a field of type JSON_NULL takes a
	 * value of any type, which its reader checks (an int-or-string). */
	JSON_READ_NULL_ABSENT = 1u << 1,
	/* Unknown keys are reported first, in document order, then the
	 * fields are read in the table's order (the order a decoder that
	 * walks a struct reports in), a required one missing at its place. */
	JSON_READ_TABLE_ORDER = 1u << 2,
};

/* How a format words its decoding problems when its messages are fixed by
 * another implementation (the Kubernetes API server's): set as
 * ctx->style, each hook replaces the engine's report and counts the
 * problem itself (ctx->errors++), as check_error() does.  A NULL hook
 * keeps the engine's words. */
struct json_read_style {
	/* A key the table does not name (ctx->path ends with it). */
	void (*unknown)(struct check_ctx *ctx);
	/* @v is not of type @want (ctx->path is @v's). */
	void (*type)(struct check_ctx *ctx, const struct json_value *v, enum json_type want);
};

/* A nested table, as the arg of json_read_nested (flags: enum
 * json_read_flags). */
struct json_table {
	const struct json_field *fields;
	size_t n;
	unsigned int flags;
};

/* Bounds for json_read_int64/_uint16/_uint32 (NULL: the type's range). */
struct json_int_range {
	int64_t min, max;
};

int json_read_object(struct check_ctx *ctx, const struct json_value *obj, const struct json_field *fields, size_t n,
		     void *target);
/* json_read_object() with @flags (enum json_read_flags); 0 is
 * json_read_object(). */
int json_read_object_flags(struct check_ctx *ctx, const struct json_value *obj, const struct json_field *fields,
			   size_t n, unsigned int flags, void *target);

/* Readers for struct json_field.read.  Strings: _string copies into a
 * char * (the old value freed), _strref points into the tree. */
int json_read_string(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);
int json_read_strref(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);
int json_read_bool(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);
int json_read_int64(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);
int json_read_uint16(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);
int json_read_uint32(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);
/* A nested closed object into the same target (arg: struct json_table). */
int json_read_nested(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);
/* An array whose every item is such an object, each read into the same
 * target (arg: struct json_table); every item is checked. */
int json_read_objects(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg);

/*
 * Writing: one emitter for every JSON document the libraries and programs
 * produce.  Strings are checked to be UTF-8 (json_utf8_valid()) and
 * escaped one way everywhere: \" \\ \n \r \t, every other byte below
 * 0x20 as \u00xx (lowercase hex), everything else (solidus, DEL, non-ASCII)
 * as itself.  Compact output has no whitespace at all.  Pretty output puts
 * one member or item a line, "key": value, and writes an empty object or
 * array as {} or [].  Errors are sticky so that emitting code stays linear:
 * after the first failure every call does nothing, and
 * json_writer_finish() reports it.  A NULL writer (json_writer_new() out of
 * memory) is accepted everywhere and finishes with -ENOMEM.
 */
enum json_write_flags {
	JSON_WRITE_PRETTY = 1u << 0,   /* one member a line, indented by four spaces */
	JSON_WRITE_NEWLINE = 1u << 1,  /* end the text with one newline */
	JSON_WRITE_INDENT2 = 1u << 2,  /* with _PRETTY: indent by two spaces (Kubernetes
	                                * manifests, kubectl's layout) */
};

/* Containers nested deeper than this are refused by the emitter. */
#define JSON_WRITE_MAX_DEPTH 128

struct json_writer;

struct json_writer *json_writer_new(unsigned int flags);
/* Frees @w without taking its text (NULL is fine). */
void json_writer_free(struct json_writer *w);
/* Takes the text (NUL-terminated, *ret_len without the NUL; freed by the
 * caller) and frees @w in every case.  Returns 0, -ENOMEM, or -EINVAL
 * when a call failed (invalid UTF-8, a key where a value belongs) or the
 * document is not complete. */
int json_writer_finish(struct json_writer *w, char **ret, size_t *ret_len);
/* The first error so far (0 when none). */
int json_writer_error(const struct json_writer *w);

void jw_object_open(struct json_writer *w);
void jw_object_close(struct json_writer *w);
void jw_array_open(struct json_writer *w);
void jw_array_close(struct json_writer *w);
/* A key (inside an object, before its value). */
void jw_key(struct json_writer *w, const char *key);
/* Values.  jw_string() of NULL writes null. */
void jw_string(struct json_writer *w, const char *s);
void jw_string_len(struct json_writer *w, const char *s, size_t len);
void jw_int(struct json_writer *w, int64_t v);
void jw_uint(struct json_writer *w, uint64_t v);
void jw_bool(struct json_writer *w, bool v);
void jw_null(struct json_writer *w);
/* A number given as its JSON text (refused unless it is JSON number syntax). */
void jw_number(struct json_writer *w, const char *text, size_t len);
/* A parsed value, written back exactly (numbers keep their text). */
void jw_value(struct json_writer *w, const struct json_value *v);
/* @v as text, in one call: *ret NUL-terminated (freed by the caller),
 * *ret_len (may be NULL) without the NUL.  0, -EINVAL, -ENOMEM. */
int json_write_value(const struct json_value *v, unsigned int flags, char **ret, size_t *ret_len);
/* Text that already is one JSON value, parsed strictly and written back. */
void jw_raw(struct json_writer *w, const char *json, size_t len);
/* key + value shorthands. */
void jw_kv_string(struct json_writer *w, const char *key, const char *s);
void jw_kv_int(struct json_writer *w, const char *key, int64_t v);
void jw_kv_uint(struct json_writer *w, const char *key, uint64_t v);
void jw_kv_bool(struct json_writer *w, const char *key, bool v);

/* Equality of two parsed values as JSON Schema defines it (enum,
 * uniqueItems): same type, numbers of equal value (1 and 1.0), strings
 * byte for byte, arrays item by item, objects with the same members in any
 * order. */
bool json_equal(const struct json_value *a, const struct json_value *b);

#endif
