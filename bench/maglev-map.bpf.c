// SPDX-License-Identifier: LGPL-2.1-or-later
/* bench/maglev-map's programs: 256 Maglev slot lookups per run through
 * the datapath's own flowsdn_maglev and maglev_lookup() (bpf/lib/maglev.h),
 * through a {svc_id, slot} hash (the layout it replaced), and the same
 * loop without a lookup (the floor).  The loader unpins every map. */
#include "lib/maglev.h"

struct slot_key {
	__u32 svc_id;
	__u32 slot;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16381);
	__type(key, struct slot_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} slots_hash SEC(".maps");

#define LOOKUPS 256
#define SLOT(x, i) (((x) * 2654435761u + (i) * 40503u) % 16381)

SEC("tc")
int floor_loop(struct __sk_buff *skb)
{
	__u32 s = 0, x = skb->len;

	for (int i = 0; i < LOOKUPS; i++)
		s += SLOT(x, i);
	return s & 0xff;
}

SEC("tc")
int hash_lookup(struct __sk_buff *skb)
{
	__u32 s = 0, x = skb->len;

	for (int i = 0; i < LOOKUPS; i++) {
		struct slot_key k = { 42, SLOT(x, i) };
		__u32 *v = bpf_map_lookup_elem(&slots_hash, &k);

		if (v)
			s += *v;
	}
	return s & 0xff;
}

SEC("tc")
int maglev_table_lookup(struct __sk_buff *skb)
{
	__u32 s = 0, x = skb->len;

	for (int i = 0; i < LOOKUPS; i++)
		s += maglev_lookup(42, SLOT(x, i), 16381);
	return s & 0xff;
}

char LICENSE[] SEC("license") = "GPL";
