/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's policy state on disk (flowsdn-agent(8) "FILES"): the
 * namespaces, NetworkPolicy objects and endpoint labels set through the
 * API, one file per object in <state-dir>/policy/:
 *
 *   namespace.NAME.json   policy.NS_NAME.json   endpoint.ID.json
 *   hostfw.mode.json
 *
 * (a namespace is a DNS label and a policy name a DNS subdomain, so
 * neither holds '_').  Each file is
 *   {"version":1,"kind":"...","key":"...","object":"<the object's text>"}
 * written crash-safely (temporary file, fsync, rename, fsync of the
 * directory), so a file is either the old or the new object.  A file read
 * back is checked: a regular file, JSON, this version, its kind and key
 * those of its name, and then the caller's own check of the object.  A
 * file that fails is moved to <state-dir>/policy/quarantine/ and named
 * with the reason in the log; the other files load.  Private to agent/.
 */
#ifndef FLOWSDN_AGENT_POLICY_STORE_H
#define FLOWSDN_AGENT_POLICY_STORE_H

#include <stddef.h>

struct diag;

enum agent_pstore_kind {
	AGENT_PSTORE_NAMESPACE,
	AGENT_PSTORE_POLICY,   /* key "NS/NAME" */
	AGENT_PSTORE_ENDPOINT, /* key the endpoint id in decimal */
	AGENT_PSTORE_HOSTFW,   /* key "mode": {"mode": ...} as PUT /v1/hostfw */
	AGENT_PSTORE_KIND_MAX_,
};

/* The largest object file read back. */
#define AGENT_PSTORE_MAX_FILE (4u << 20)

struct agent_pstore;

/* Opens (creating it 0700) <@state_dir>/policy.  -errno; -EPERM when the
 * directory is not private to us. */
int agent_pstore_open(const char *state_dir, struct agent_pstore **ret);
void agent_pstore_free(struct agent_pstore *s);

/* Stores @object (@len bytes) as the object @key of @kind, replacing the
 * previous one.  -EINVAL for a key that cannot be a file name, -errno. */
int agent_pstore_put(struct agent_pstore *s, enum agent_pstore_kind kind, const char *key, const char *object,
		     size_t len);
/* Removes it; 0 also when there was none. */
int agent_pstore_delete(struct agent_pstore *s, enum agent_pstore_kind kind, const char *key);

/* Called per object read back: 0 to keep it, < 0 to have its file
 * quarantined (with @diag's message, or the error's text, as reason). */
typedef int (*agent_pstore_fn)(void *ctx, enum agent_pstore_kind kind, const char *key, const char *object,
			       size_t len, struct diag *diag);

/* Reads every file of @kind in the order of their names and calls @fn on
 * each.  Returns how many files were quarantined (>= 0), or -errno when
 * the directory cannot be read. */
int agent_pstore_load(struct agent_pstore *s, enum agent_pstore_kind kind, agent_pstore_fn fn, void *ctx);

#endif
