/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/identity.h> — numeric security identities for label sets.
 *
 * A label set is a set of Kubernetes labels (key=value).  Its canonical
 * text sorts the labels by key and joins them as "k1=v1,k2=v2"; the same
 * set always yields the same text, and within one store the same
 * identity.  Keys and values are validated as Kubernetes does: a key is
 * an optional DNS-subdomain prefix (at most 253 characters, lower case)
 * and '/', then a name of 1 to 63 characters [A-Za-z0-9._-] beginning and
 * ending with an alphanumeric; a value is empty or such a name.
 *
 * Identities 1 to 255 are reserved, numbered as in Cilium; identities of
 * label sets are allocated from FLOWSDN_IDENTITY_MIN_LOCAL to
 * FLOWSDN_IDENTITY_MAX_LOCAL.  Each is reference-counted: acquire adds a
 * reference, release drops one, and the identity is freed with its last
 * reference.  A freed number is handed out again only after the counter
 * has gone round the whole range, so stale policy entries do not match a
 * new label set early.
 *
 * The store lives in "<state_dir>/identity.state", rewritten crash-safely
 * (temp + fsync + rename + directory fsync) after every change, so
 * identities and their reference counts survive a restart.  One process
 * owns a store: a second flowsdn_identity_new() on the same directory
 * fails with -EBUSY while the first handle is open.  A handle is not
 * thread-safe.
 */
#ifndef FLOWSDN_IDENTITY_H
#define FLOWSDN_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reserved identities (Cilium's numbering). */
enum flowsdn_identity_reserved {
	FLOWSDN_IDENTITY_UNKNOWN = 0,
	FLOWSDN_IDENTITY_HOST = 1,
	FLOWSDN_IDENTITY_WORLD = 2,
	FLOWSDN_IDENTITY_UNMANAGED = 3,
	FLOWSDN_IDENTITY_HEALTH = 4,
	FLOWSDN_IDENTITY_INIT = 5,
	FLOWSDN_IDENTITY_REMOTE_NODE = 6,
	FLOWSDN_IDENTITY_KUBE_APISERVER = 7,
	FLOWSDN_IDENTITY_INGRESS = 8,
	FLOWSDN_IDENTITY_WORLD_IPV4 = 9,
	FLOWSDN_IDENTITY_WORLD_IPV6 = 10,
};

#define FLOWSDN_IDENTITY_MIN_LOCAL 256u
#define FLOWSDN_IDENTITY_MAX_LOCAL 65535u
/* Most labels in one set. */
#define FLOWSDN_IDENTITY_MAX_LABELS 64

enum flowsdn_identity_error {
	FLOWSDN_E_IDENTITY_BASE = FLOWSDN_E_BASE + 300,
	FLOWSDN_E_IDENTITY_LABEL_KEY = FLOWSDN_E_IDENTITY_BASE, /* label key is not a valid Kubernetes key */
	FLOWSDN_E_IDENTITY_LABEL_VALUE,      /* label value is not a valid Kubernetes value */
	FLOWSDN_E_IDENTITY_LABEL_DUPLICATE,  /* the same key twice in one set */
	FLOWSDN_E_IDENTITY_LABELS_EMPTY,     /* no label, or more than FLOWSDN_IDENTITY_MAX_LABELS */
	FLOWSDN_E_IDENTITY_EXHAUSTED,        /* every local identity is in use */
	FLOWSDN_E_IDENTITY_RESERVED,         /* a reserved identity cannot be released */
	FLOWSDN_E_IDENTITY_STATE_CORRUPT,    /* state file truncated, damaged or inconsistent */
	FLOWSDN_E_IDENTITY_STATE_VERSION,    /* state file written by a newer format version */
	FLOWSDN_E_IDENTITY_MAX_,             /* end of the block (not an error) */
};

/* One label; both strings NUL-terminated. */
struct flowsdn_label {
	const char *key;
	const char *value;
};

struct flowsdn_identity_store;

struct flowsdn_identity_opts {
	size_t sz;
};

/* The canonical text of the @n labels at @labels (1 to
 * FLOWSDN_IDENTITY_MAX_LABELS): *ret_text is malloc'd, freed by the
 * caller.  Errors: -EINVAL, -ENOMEM, -FLOWSDN_E_IDENTITY_LABEL_KEY,
 * _LABEL_VALUE, _LABEL_DUPLICATE, _LABELS_EMPTY; *ret_text untouched on
 * failure. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_identity_labels_canonical(const struct flowsdn_label *labels, size_t n,
							      char **ret_text);

/* Opens (creating @state_dir, mode 0700, when missing) the store and
 * restores it.  @state_dir NULL: an in-memory store (for tools and
 * tests: nothing is read or written, no other handle is locked out, the
 * identities go with the handle).  Errors: -EINVAL, -ENOMEM, -EBUSY (another handle holds
 * the store), -FLOWSDN_E_IDENTITY_STATE_CORRUPT, _STATE_VERSION (the file
 * is left as it is), -errno.  Free with flowsdn_identity_free(). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_identity_new(const char *state_dir, const struct flowsdn_identity_opts *opts,
						 struct flowsdn_identity_store **ret);

/* Closes the store (the state stays on disk).  NULL is accepted. */
FLOWSDN_API void flowsdn_identity_free(struct flowsdn_identity_store *store);

/* Adds a reference to the identity of the label set, allocating one when
 * the set has none, and persists the change.  Errors: the label errors of
 * flowsdn_identity_labels_canonical(), -FLOWSDN_E_IDENTITY_EXHAUSTED,
 * -EOVERFLOW (reference count at its maximum), -errno of writing (then
 * nothing changed).  *ret_id is written only on success. */
FLOWSDN_API int flowsdn_identity_acquire(struct flowsdn_identity_store *store, const struct flowsdn_label *labels,
					 size_t n, uint32_t *ret_id);

/* Drops one reference to @id and persists the change; the identity is
 * freed with its last reference.  Returns the references left (0 when it
 * was freed).  Errors: -EINVAL, -ENOENT (not allocated),
 * -FLOWSDN_E_IDENTITY_RESERVED, -errno of writing. */
FLOWSDN_API int flowsdn_identity_release(struct flowsdn_identity_store *store, uint32_t id);

/* The identity of a label set without adding a reference.  -ENOENT when
 * the set has none, or the label errors. */
FLOWSDN_API int flowsdn_identity_lookup_labels(const struct flowsdn_identity_store *store,
					       const struct flowsdn_label *labels, size_t n, uint32_t *ret_id);

/* The canonical labels of @id (malloc'd, freed by the caller); for a
 * reserved identity "reserved:NAME" (e.g. "reserved:host").  -ENOENT when
 * @id is neither reserved nor allocated. */
FLOWSDN_API int flowsdn_identity_lookup_id(const struct flowsdn_identity_store *store, uint32_t id,
					   char **ret_labels);

/* References held on @id (>= 1), or -ENOENT. */
FLOWSDN_API int flowsdn_identity_refcount(const struct flowsdn_identity_store *store, uint32_t id);

struct flowsdn_identity_info {
	uint32_t id;
	uint32_t refcount;
	const char *labels;  /* canonical text, inside the same allocation */
};

/* Every allocated identity, by id.  *ret is one malloc'd block (the array
 * and its strings) released with a single free(); NULL when empty.
 * Errors: -EINVAL, -ENOMEM; outputs untouched on failure. */
FLOWSDN_API int flowsdn_identity_list(const struct flowsdn_identity_store *store,
				      struct flowsdn_identity_info **ret, size_t *ret_n);

/* Name of a reserved identity ("host", "world", "unmanaged", "health",
 * "init", "remote-node", "kube-apiserver", "ingress", "world-ipv4",
 * "world-ipv6"), NULL for any other number. */
FLOWSDN_API const char *flowsdn_identity_reserved_name(uint32_t id);

/* The reserved identity called @name (as above), or -ENOENT. */
FLOWSDN_API int flowsdn_identity_reserved_id(const char *name);

#ifdef __cplusplus
}
#endif

#endif
