/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private structures of the policy module (importer, model, compiler,
 * simulator). */
#ifndef FLOWSDN_POLICY_INTERNAL_H
#define FLOWSDN_POLICY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>
#include <flowsdn/identity.h>
#include <flowsdn/policy.h>

#include "internal.h"

#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_SCTP 132

/* Identities of pods come from the identity store (<flowsdn/identity.h>);
 * CIDR identities are node-local, allocated here, above every store
 * identity (the map contract's FLOWSDN_IDENTITY_LOCAL_BASE). */
#define POLICY_IDENTITY_ANY 0u
#define POLICY_IDENTITY_LOCAL_BASE 0x01000000u
/* The pod label that carries the namespace in an identity's label set. */
#define POLICY_NS_LABEL "io.kubernetes.pod.namespace"

/* ------------------------------------------------------------ hash map */

/* Open addressing, byte-string keys owned by the caller (they must live
 * as long as the entry), void * values. */
struct pmap_slot {
	const void *key;
	size_t len;
	uint64_t hash;
	void *value;   /* NULL with key != NULL: tombstone */
};
struct pmap {
	struct pmap_slot *slots;
	size_t cap, used, live;
};
void *pmap_get(const struct pmap *m, const void *key, size_t len);
int pmap_put(struct pmap *m, const void *key, size_t len, void *value);
void *pmap_del(struct pmap *m, const void *key, size_t len);
void pmap_free(struct pmap *m);

/* ------------------------------------------------------------ labels, selectors */
/* policy-util.c, the module's leaf: every other policy file may call it. */

struct plabel {
	char *key;
	char *value;
};
/* Sorted by key, keys unique. */
struct plabels {
	struct plabel *v;
	size_t n;
};
const char *plabels_get(const struct plabels *l, const char *key);
void plabels_free(struct plabels *l);

struct flowsdn_policy_decision;
/* Writes the out fields of a decision (policy-util.c). */
void policy_decision_set(struct flowsdn_policy_decision *d, int verdict, int reason, uint32_t rule_id,
			 uint8_t tier);
int plabels_copy(struct plabels *dst, const struct plabels *src);
/* Sorts and refuses duplicate keys (-EEXIST). */
int plabels_sort(struct plabels *l);

enum { SEL_IN = 1, SEL_NOT_IN, SEL_EXISTS, SEL_DOES_NOT_EXIST };
struct preq {
	char *key;
	int op;
	char **values;
	size_t n_values;
};
struct psel {
	struct plabels match;
	struct preq *reqs;
	size_t n_reqs;
};
bool psel_matches(const struct psel *sel, const struct plabels *labels);
void psel_free(struct psel *sel);

/* ------------------------------------------------------------ policy objects */

struct pport {
	uint8_t proto;
	bool has_port;
	char *name;        /* named port, else NULL */
	uint16_t port, end;
};

enum { PEER_SELECTOR = 1, PEER_IPBLOCK };
struct ppeer {
	int kind;
	struct psel *pod;  /* NULL: absent */
	struct psel *ns;   /* NULL: absent */
	struct flowsdn_prefix cidr;
	struct flowsdn_prefix *except;
	size_t n_except;
	/* compiler cache, valid for cache_gen: the identities (selector) or
	 * the indexes into db->cidrs (ipBlock) this peer selects */
	struct pident **cache_idents;
	uint32_t *cache_ids;
	size_t n_cache;
	uint64_t cache_gen;
};

struct prule {
	struct ppeer *peers;  /* n_peers == 0: every peer */
	size_t n_peers;
	struct pport *ports;  /* n_ports == 0: every port */
	size_t n_ports;
	uint32_t rule_id;
};

struct flowsdn_policy {
	char *name;
	char *ns;
	char *key;      /* "ns/name" */
	int tier;
	struct psel podsel;
	unsigned int types;
	struct prule *rules[2];
	size_t n_rules[2];
	uint64_t serial;  /* application order in the database */
	uint64_t marked_epoch; /* compile_epoch + 1 when its pods were marked dirty */
};

/* ------------------------------------------------------------ model */

struct pnamed {
	char *name;
	uint8_t proto;
	uint16_t port;
	size_t count;   /* identities: pods contributing it */
};

struct pns {
	char *name;
	struct plabels labels;
	size_t n_pods;
	bool explicit_;
	/* indexes (unordered) */
	struct ppod **podv;
	size_t npodv;
	struct pident **identv;
	size_t nidentv;
	struct flowsdn_policy **polv;
	size_t npolv;
};

struct pident {
	uint32_t id;
	char *key;               /* canonical label set */
	char *ns;
	struct pns *nsp;         /* its namespace (namespaces are never freed) */
	struct plabels labels;
	struct pnamed *ports;    /* union of its pods' named ports */
	size_t n_ports;
	size_t refs;
};

struct ppod {
	char *key;               /* "ns/name" */
	char *ns, *name;
	struct plabels labels;
	struct pnamed *ports;
	size_t n_ports;
	struct flowsdn_addr *addrs;
	size_t n_addrs;
	uint32_t ep_id;
	struct pident *ident;
	/* compiled */
	struct flowsdn_policy_entry *entries;
	size_t n_entries;
	unsigned int flags;
	bool dirty;
	bool compiled;
};

struct pcidr {
	struct flowsdn_prefix prefix;
	uint32_t id;
	size_t refs;
};

struct prule_ref {
	struct flowsdn_policy *policy; /* NULL: free */
	uint8_t dir;
	uint32_t index;
};

struct flowsdn_policy_db {
	size_t max_entries;
	struct pmap ns_by_name, pod_by_key, pod_by_addr, ident_by_key, policy_by_key;
	struct pns **nss;
	size_t n_nss;
	struct ppod **eps;       /* by ep_id (index); NULL: free id */
	size_t n_eps;
	size_t free_hint;        /* no free slot below it */
	struct pident **idents;  /* live identities, unordered */
	size_t n_idents;
	struct flowsdn_policy **policies; /* unordered */
	size_t n_policies;
	uint64_t next_serial;
	struct pcidr *cidrs;     /* sorted by prefix */
	size_t n_cidrs;
	uint32_t *cidr_free;     /* released CIDR identities */
	size_t n_cidr_free;
	uint32_t cidr_next;      /* next never-used CIDR identity - LOCAL_BASE */
	uint64_t gen;            /* bumped when identities or CIDRs change */
	uint64_t compile_epoch;  /* bumped by every successful compile */
	size_t n_clean;          /* compiled endpoints that are not dirty */
	struct prule_ref *rules; /* by rule_id */
	size_t n_rules;
	struct flowsdn_identity_store *store; /* borrowed */
	/* outputs */
	struct flowsdn_policy_ipcache_entry *ipcache;
	size_t n_ipcache;
	bool ipcache_valid;
	unsigned int ipcache_lens[2][5]; /* prefix lengths present, bitmap per family */
	uint32_t *report;
	size_t n_report;
};

/* policy-model.c */
struct pns *pdb_namespace(const struct flowsdn_policy_db *db, const char *name);
void pdb_mark_policy(struct flowsdn_policy_db *db, struct flowsdn_policy *p);
void pdb_pod_dirty(struct flowsdn_policy_db *db, struct ppod *pod);
struct ppod *pdb_pod_by_addr(const struct flowsdn_policy_db *db, const struct flowsdn_addr *a);

/* policy-parse.c */
void ppolicy_free_rules(struct flowsdn_policy *p);

#endif
