/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fragments: a datagram's later fragments carry no transport header, so
 * port-scoped policy (and connection tracking) could not place them.
 * The first fragment's ports are remembered per (source, destination,
 * identification, protocol) in the bounded LRU flowsdn_frag for
 * FLOWSDN_FRAG_TIMEOUT seconds; a later fragment takes them and is then
 * judged exactly as its first fragment was (same tuple: same policy
 * verdict, same tracked connection).  A later fragment that arrives
 * before its first (or after the entry was evicted) keeps port 0: only
 * protocol-wide and L3 rules can allow it.
 */
#ifndef FLOWSDN_BPF_FRAG_H
#define FLOWSDN_BPF_FRAG_H

#include "common.h"
#include "parse.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FLOWSDN_MAX_FRAGS);
	__type(key, struct flowsdn_frag_key);
	__type(value, struct flowsdn_frag_entry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} flowsdn_frag SEC(".maps");

static __always_inline void frag_key_of(struct flowsdn_frag_key *k, const struct pkt *p)
{
	__builtin_memcpy(k->saddr, p->saddr, 16);
	__builtin_memcpy(k->daddr, p->daddr, 16);
	k->id = p->frag_id;
	k->protocol = p->protocol;
	k->family = p->family;
	k->pad0[0] = 0;
	k->pad0[1] = 0;
}

/* Remembers a first fragment's ports; gives a later one its first's. */
static __always_inline void frag_track(struct pkt *p)
{
	struct flowsdn_frag_key k;
	struct flowsdn_frag_entry *e;

	if (p->frag == PKT_FRAG_NONE)
		return;
	frag_key_of(&k, p);
	if (p->frag == PKT_FRAG_FIRST) {
		struct flowsdn_frag_entry v = {
			.expires = bpf_ktime_get_ns() + FLOWSDN_FRAG_TIMEOUT * 1000000000ull,
			.sport = p->sport,
			.dport = p->dport,
		};

		bpf_map_update_elem(&flowsdn_frag, &k, &v, BPF_ANY);
		return;
	}
	e = bpf_map_lookup_elem(&flowsdn_frag, &k);
	if (!e || e->expires <= bpf_ktime_get_ns())
		return;
	p->sport = e->sport;
	p->dport = e->dport;
	p->frag = PKT_FRAG_LATER_KNOWN;
}

#endif
