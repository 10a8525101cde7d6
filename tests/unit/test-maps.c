/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The map contract: <flowsdn/maps.h> as the BPF compiler sees it (BTF of
 * tests/unit/maps-btf.bpf.o, built with clang -target bpf -g) has the same
 * struct sizes, member names, offsets and sizes as this host build; and
 * the pure helpers of <flowsdn/datapath.h> (policy keys, port blocks, drop
 * reason names, error strings).  No privileges needed.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/btf.h>
#include <flowsdn/datapath.h>
#include <flowsdn/netlink.h>

#include "helpers.h"

struct member {
	const char *name;
	size_t off, size;
};

struct layout {
	const char *name;
	size_t size;
	size_t n;
	struct member m[16];
};

#define M(T, F) { #F, offsetof(struct T, F), sizeof(((struct T *)0)->F) }
#define L(T, ...)                                                                           \
	{ #T, sizeof(struct T), sizeof((struct member[]){ __VA_ARGS__ }) / sizeof(struct member), \
	  { __VA_ARGS__ } }

static const struct layout layouts[] = {
	L(flowsdn_endpoint_key, M(flowsdn_endpoint_key, addr), M(flowsdn_endpoint_key, family),
	  M(flowsdn_endpoint_key, pad0)),
	L(flowsdn_endpoint_info, M(flowsdn_endpoint_info, ifindex), M(flowsdn_endpoint_info, ep_id),
	  M(flowsdn_endpoint_info, identity), M(flowsdn_endpoint_info, flags), M(flowsdn_endpoint_info, mac),
	  M(flowsdn_endpoint_info, host_mac), M(flowsdn_endpoint_info, policy_gen), M(flowsdn_endpoint_info, pad0)),
	L(flowsdn_endpoint_counters, M(flowsdn_endpoint_counters, rx_packets), M(flowsdn_endpoint_counters, rx_bytes),
	  M(flowsdn_endpoint_counters, tx_packets), M(flowsdn_endpoint_counters, tx_bytes),
	  M(flowsdn_endpoint_counters, drop_packets), M(flowsdn_endpoint_counters, drop_bytes),
	  M(flowsdn_endpoint_counters, allow_ingress), M(flowsdn_endpoint_counters, deny_ingress),
	  M(flowsdn_endpoint_counters, allow_egress), M(flowsdn_endpoint_counters, deny_egress)),
	L(flowsdn_ipcache_key, M(flowsdn_ipcache_key, prefixlen), M(flowsdn_ipcache_key, family),
	  M(flowsdn_ipcache_key, pad0), M(flowsdn_ipcache_key, addr)),
	L(flowsdn_ipcache_value, M(flowsdn_ipcache_value, identity), M(flowsdn_ipcache_value, flags)),
	L(flowsdn_policy_key, M(flowsdn_policy_key, prefixlen), M(flowsdn_policy_key, ep_id),
	  M(flowsdn_policy_key, direction), M(flowsdn_policy_key, pad0), M(flowsdn_policy_key, identity),
	  M(flowsdn_policy_key, protocol), M(flowsdn_policy_key, pad1), M(flowsdn_policy_key, dport)),
	L(flowsdn_policy_value, M(flowsdn_policy_value, flags), M(flowsdn_policy_value, rule_id),
	  M(flowsdn_policy_value, packets), M(flowsdn_policy_value, bytes)),
	L(flowsdn_service_key, M(flowsdn_service_key, addr), M(flowsdn_service_key, port),
	  M(flowsdn_service_key, protocol), M(flowsdn_service_key, family), M(flowsdn_service_key, scope),
	  M(flowsdn_service_key, pad0)),
	L(flowsdn_service_value, M(flowsdn_service_value, svc_id), M(flowsdn_service_value, slot_count),
	  M(flowsdn_service_value, flags), M(flowsdn_service_value, affinity_timeout),
	  M(flowsdn_service_value, maglev_size), M(flowsdn_service_value, pad0)),
	L(flowsdn_backend, M(flowsdn_backend, addr), M(flowsdn_backend, port), M(flowsdn_backend, protocol),
	  M(flowsdn_backend, family), M(flowsdn_backend, state), M(flowsdn_backend, flags), M(flowsdn_backend, pad0)),
	L(flowsdn_maglev_value, M(flowsdn_maglev_value, backend_id)),
	L(flowsdn_svc_slot_key, M(flowsdn_svc_slot_key, svc_id), M(flowsdn_svc_slot_key, slot)),
	L(flowsdn_svc_slot_value, M(flowsdn_svc_slot_value, backend_id)),
	L(flowsdn_affinity_key, M(flowsdn_affinity_key, addr), M(flowsdn_affinity_key, svc_id),
	  M(flowsdn_affinity_key, family), M(flowsdn_affinity_key, pad0)),
	L(flowsdn_affinity_value, M(flowsdn_affinity_value, last_used), M(flowsdn_affinity_value, backend_id),
	  M(flowsdn_affinity_value, pad0)),
	L(flowsdn_sock_revnat_key, M(flowsdn_sock_revnat_key, cookie), M(flowsdn_sock_revnat_key, addr),
	  M(flowsdn_sock_revnat_key, port), M(flowsdn_sock_revnat_key, family), M(flowsdn_sock_revnat_key, pad0)),
	L(flowsdn_sock_revnat_value, M(flowsdn_sock_revnat_value, addr), M(flowsdn_sock_revnat_value, port),
	  M(flowsdn_sock_revnat_value, family), M(flowsdn_sock_revnat_value, pad0), M(flowsdn_sock_revnat_value, svc_id)),
	L(flowsdn_drop_counters, M(flowsdn_drop_counters, packets), M(flowsdn_drop_counters, bytes)),
	L(flowsdn_srcrange_key, M(flowsdn_srcrange_key, prefixlen), M(flowsdn_srcrange_key, svc_id),
	  M(flowsdn_srcrange_key, list), M(flowsdn_srcrange_key, family), M(flowsdn_srcrange_key, pad0),
	  M(flowsdn_srcrange_key, addr)),
	L(flowsdn_srcrange_value, M(flowsdn_srcrange_value, flags), M(flowsdn_srcrange_value, pad0),
	  M(flowsdn_srcrange_value, packets)),
	L(flowsdn_ct_key, M(flowsdn_ct_key, saddr), M(flowsdn_ct_key, daddr), M(flowsdn_ct_key, sport),
	  M(flowsdn_ct_key, dport), M(flowsdn_ct_key, protocol), M(flowsdn_ct_key, family), M(flowsdn_ct_key, pad0)),
	L(flowsdn_ct_entry, M(flowsdn_ct_entry, expires), M(flowsdn_ct_entry, created), M(flowsdn_ct_entry, packets),
	  M(flowsdn_ct_entry, bytes), M(flowsdn_ct_entry, rev_addr), M(flowsdn_ct_entry, rev_port),
	  M(flowsdn_ct_entry, tcp_state), M(flowsdn_ct_entry, pad0), M(flowsdn_ct_entry, flags),
	  M(flowsdn_ct_entry, svc_id), M(flowsdn_ct_entry, backend_id), M(flowsdn_ct_entry, policy_rule),
	  M(flowsdn_ct_entry, ep_id)),
	L(flowsdn_ct_stats, M(flowsdn_ct_stats, new_flows), M(flowsdn_ct_stats, established), M(flowsdn_ct_stats, reply),
	  M(flowsdn_ct_stats, related), M(flowsdn_ct_stats, created), M(flowsdn_ct_stats, create_failed),
	  M(flowsdn_ct_stats, untracked), M(flowsdn_ct_stats, closed)),
	L(flowsdn_frag_key, M(flowsdn_frag_key, saddr), M(flowsdn_frag_key, daddr), M(flowsdn_frag_key, id),
	  M(flowsdn_frag_key, protocol), M(flowsdn_frag_key, family), M(flowsdn_frag_key, pad0)),
	L(flowsdn_frag_entry, M(flowsdn_frag_entry, expires), M(flowsdn_frag_entry, sport),
	  M(flowsdn_frag_entry, dport), M(flowsdn_frag_entry, pad0)),
	L(flowsdn_hostfw_state, M(flowsdn_hostfw_state, ep_id), M(flowsdn_hostfw_state, flags),
	  M(flowsdn_hostfw_state, mode), M(flowsdn_hostfw_state, policy_gen), M(flowsdn_hostfw_state, pad0)),
	L(flowsdn_hostfw_counters, M(flowsdn_hostfw_counters, allowed), M(flowsdn_hostfw_counters, denied),
	  M(flowsdn_hostfw_counters, audited), M(flowsdn_hostfw_counters, tracked)),
};

Test(maps, btf_layout_matches_host)
{
	/* make check sets top_builddir; check-valgrind runs from the build dir. */
	const char *top = getenv("top_builddir") ? getenv("top_builddir") : ".";
	char path[4096];
	struct btf *btf;

	snprintf(path, sizeof(path), "%s/tests/unit/maps-btf.bpf.o", top);
	btf = btf__parse_elf(path, NULL);
	cr_assert(btf, "BTF of %s: %s", path, strerror(errno));
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct layout *l = &layouts[i];
		int id = btf__find_by_name_kind(btf, l->name, BTF_KIND_STRUCT);
		const struct btf_type *t;
		const struct btf_member *bm;

		cr_assert(id > 0, "struct %s not in the BPF build's BTF", l->name);
		t = btf__type_by_id(btf, id);
		cr_assert(t->size == l->size, "%s: BPF size %u, host %zu", l->name, t->size, l->size);
		cr_assert(btf_vlen(t) == l->n, "%s: BPF has %u members, host table %zu", l->name, btf_vlen(t), l->n);
		bm = btf_members(t);
		for (size_t j = 0; j < l->n; j++) {
			const char *name = btf__name_by_offset(btf, bm[j].name_off);
			__s64 sz = btf__resolve_size(btf, bm[j].type);

			ASSERT_STREQ(name, l->m[j].name, l->name);
			cr_assert(btf_member_bitfield_size(t, (__u32)j) == 0, "%s.%s is a bitfield", l->name, name);
			cr_assert(btf_member_bit_offset(t, (__u32)j) == l->m[j].off * 8, "%s.%s: BPF offset %u bits, host %zu bytes",
				  l->name, name, btf_member_bit_offset(t, (__u32)j), l->m[j].off);
			cr_assert(sz == (__s64)l->m[j].size, "%s.%s: BPF size %lld, host %zu", l->name, name, (long long)sz,
				  l->m[j].size);
		}
	}
	btf__free(btf);
}

Test(maps, policy_key_prefixes)
{
	struct flowsdn_policy_key k;

	ASSERT_OK(flowsdn_policy_key_make(5, FLOWSDN_DIR_EGRESS, 1234, 0, 0, 0, &k), "L3");
	cr_assert(k.prefixlen == FLOWSDN_POLICY_PREFIX_L3 && k.ep_id == 5 && k.direction == 1 && k.identity == 1234);
	ASSERT_OK(flowsdn_policy_key_make(5, FLOWSDN_DIR_INGRESS, 0, 6, 0, 0, &k), "proto");
	cr_assert(k.prefixlen == FLOWSDN_POLICY_PREFIX_PROTO && k.protocol == 6 && k.dport == 0);
	ASSERT_OK(flowsdn_policy_key_make(5, FLOWSDN_DIR_INGRESS, 0, 17, 53, 16, &k), "exact port");
	cr_assert(k.prefixlen == FLOWSDN_POLICY_PREFIX_FULL);
	cr_assert(((const unsigned char *)&k.dport)[0] == 0 && ((const unsigned char *)&k.dport)[1] == 53,
		  "port in network order");
	ASSERT_OK(flowsdn_policy_key_make(5, FLOWSDN_DIR_INGRESS, 0, 6, 8192, 13, &k), "block 8192-8199");
	cr_assert(k.prefixlen == FLOWSDN_POLICY_PREFIX_PROTO + 13);
	cr_assert(k.pad0[0] == 0 && k.pad0[1] == 0 && k.pad0[2] == 0 && k.pad1 == 0, "pads zero");

	ASSERT_ERR(flowsdn_policy_key_make(0, FLOWSDN_DIR_INGRESS, 0, 6, 80, 16, &k), -EINVAL, "endpoint 0");
	ASSERT_ERR(flowsdn_policy_key_make(5, (enum flowsdn_direction)2, 0, 6, 80, 16, &k), -EINVAL, "direction");
	ASSERT_ERR(flowsdn_policy_key_make(5, FLOWSDN_DIR_INGRESS, 0, 0, 80, 16, &k), -EINVAL, "port without protocol");
	ASSERT_ERR(flowsdn_policy_key_make(5, FLOWSDN_DIR_INGRESS, 0, 6, 8193, 13, &k), -EINVAL, "bits past prefix");
	ASSERT_ERR(flowsdn_policy_key_make(5, FLOWSDN_DIR_INGRESS, 0, 6, 80, 17, &k), -EINVAL, "17 bits");
	ASSERT_ERR(flowsdn_policy_key_make(5, FLOWSDN_DIR_INGRESS, 0, 6, 80, 16, NULL), -EINVAL, "NULL");
}

/* Every port of [first, last] is in exactly one block, none outside. */
static void check_blocks(uint16_t first, uint16_t last)
{
	uint16_t ports[32];
	uint8_t bits[32];
	int n = flowsdn_policy_port_blocks(first, last, ports, bits, 32);

	cr_assert(n > 0 && n <= 30, "%u-%u: %d blocks", first, last, n);
	for (uint32_t p = 1; p <= 65535; p++) {
		int hits = 0;

		for (int i = 0; i < n; i++) {
			uint32_t size = 1u << (16 - bits[i]);

			cr_assert((ports[i] & (size - 1)) == 0, "block %u/%u not aligned", ports[i], bits[i]);
			hits += p >= ports[i] && p < ports[i] + size;
		}
		cr_assert(hits == (p >= first && p <= last), "%u-%u: port %u in %d blocks", first, last, p, hits);
	}
}

Test(maps, port_blocks_cover_ranges_exactly)
{
	uint16_t ports[32];
	uint8_t bits[32];

	check_blocks(80, 80);
	check_blocks(5000, 5400);
	check_blocks(1, 65535);
	check_blocks(1024, 2047);
	check_blocks(2, 65534);
	check_blocks(1, 65534);
	cr_assert(flowsdn_policy_port_blocks(1024, 2047, ports, bits, 32) == 1 && bits[0] == 6, "aligned range: one block");
	cr_assert(flowsdn_policy_port_blocks(1, 65534, ports, bits, 32) == 30, "worst case: 30 blocks");
	ASSERT_ERR(flowsdn_policy_port_blocks(1, 65534, ports, bits, 29), -ENOBUFS, "too small");
	ASSERT_ERR(flowsdn_policy_port_blocks(0, 10, ports, bits, 32), -EINVAL, "port 0");
	ASSERT_ERR(flowsdn_policy_port_blocks(10, 9, ports, bits, 32), -EINVAL, "reversed");
}

Test(maps, drop_reasons_and_errors_have_text)
{
	for (unsigned int r = 0; r < FLOWSDN_DROP_MAX_; r++)
		cr_assert(strcmp(flowsdn_drop_reason_name(r), "unknown") != 0, "reason %u has no text", r);
	ASSERT_STREQ(flowsdn_drop_reason_name(FLOWSDN_DROP_POLICY_DENY), "policy denied", "deny");
	ASSERT_STREQ(flowsdn_drop_reason_name(FLOWSDN_DROP_MAX_), "unknown", "out of range");
	for (int e = FLOWSDN_E_BPF_BASE; e < FLOWSDN_E_BPF_MAX_; e++)
		cr_assert(strcmp(flowsdn_strerror(-e), "unknown flowsdn error") != 0, "loader error %d", e);
	for (int e = FLOWSDN_E_NL_BASE; e < FLOWSDN_E_NL_MAX_; e++)
		cr_assert(strcmp(flowsdn_strerror(-e), "unknown flowsdn error") != 0, "netlink error %d", e);
	ASSERT_STREQ(flowsdn_strerror(-FLOWSDN_E_BPF_IFACE_MISMATCH), "the interface no longer belongs to the endpoint",
		     "mismatch");
	cr_assert(strlen(flowsdn_datapath_object_hash()) == 64, "object hash is a sha256");
}

Test(maps, bad_arguments_without_privileges)
{
	struct flowsdn_maps *m = (struct flowsdn_maps *)1;
	struct flowsdn_datapath *dp = NULL;

	ASSERT_ERR(flowsdn_maps_open("", &m), -EINVAL, "empty dir");
	cr_assert(m == (struct flowsdn_maps *)1, "ret untouched");
	ASSERT_ERR(flowsdn_maps_endpoint_publish(NULL, NULL), -EINVAL, "NULL");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o, .pin_dir = "relative/dir");
	ASSERT_ERR(flowsdn_datapath_open(&o, &dp), -EINVAL, "relative pin dir");
	FLOWSDN_OPTS(flowsdn_datapath_opts, o2, .egress_mode = (enum flowsdn_egress_mode)7);
	ASSERT_ERR(flowsdn_datapath_open(&o2, &dp), -EINVAL, "egress mode");
	cr_assert(dp == NULL);
	flowsdn_maps_free(NULL);
	flowsdn_datapath_free(NULL);
	ASSERT_ERR(flowsdn_datapath_attach(NULL, 1), -EINVAL, "attach NULL");
	ASSERT_ERR(flowsdn_datapath_detach(NULL, 1), -EINVAL, "detach NULL");
	cr_assert(!flowsdn_netlink_ifname_valid(NULL));
	ASSERT_ERR(flowsdn_netlink_sysctl_write(NULL, "vm.swappiness", "1", NULL), -EINVAL, "non-net sysctl");
	ASSERT_ERR(flowsdn_netlink_veth_setup(NULL, NULL, NULL), -EINVAL, "NULL config");
}

Test(maps, ct_key_make_fills_the_original_tuple)
{
	struct flowsdn_addr a, b, c6;
	struct flowsdn_ct_key k, untouched;

	ASSERT_OK(flowsdn_addr_parse("10.0.0.1", 8, &a), "a");
	ASSERT_OK(flowsdn_addr_parse("10.0.0.2", 8, &b), "b");
	ASSERT_OK(flowsdn_addr_parse("fd00::2", 7, &c6), "c6");
	memset(&k, 0xff, sizeof(k));
	ASSERT_OK(flowsdn_ct_key_make(&a, 40000, &b, 80, IPPROTO_TCP, &k), "TCP key");
	cr_assert(memcmp(k.saddr, a.bytes, 4) == 0 && k.saddr[1] == 0 && k.saddr[3] == 0, "saddr");
	cr_assert(memcmp(k.daddr, b.bytes, 4) == 0 && k.daddr[1] == 0, "daddr");
	cr_assert(k.sport == htons(40000) && k.dport == htons(80), "ports in network order");
	cr_assert(k.protocol == IPPROTO_TCP && k.family == FLOWSDN_AF_INET && k.pad0[0] == 0 && k.pad0[1] == 0);
	ASSERT_OK(flowsdn_ct_key_make(&a, 77, &b, 0, IPPROTO_ICMP, &k), "ICMP echo: identifier in sport");
	cr_assert(k.sport == htons(77) && k.dport == 0);
	memset(&untouched, 0x5a, sizeof(untouched));
	k = untouched;
	ASSERT_ERR(flowsdn_ct_key_make(&a, 77, &b, 1, IPPROTO_ICMP, &k), -EINVAL, "ICMP with a dport");
	ASSERT_ERR(flowsdn_ct_key_make(&a, 1, &c6, 2, IPPROTO_UDP, &k), -EINVAL, "mixed families");
	ASSERT_ERR(flowsdn_ct_key_make(NULL, 1, &b, 2, IPPROTO_UDP, &k), -EINVAL, "NULL source");
	cr_assert(memcmp(&k, &untouched, sizeof(k)) == 0, "ret untouched on failure");
	ASSERT_ERR(flowsdn_maps_ct_gc(NULL, 0, NULL), -EINVAL, "gc NULL maps");
	ASSERT_ERR(flowsdn_maps_ct_flush(NULL, NULL, NULL), -EINVAL, "flush NULL maps");
	ASSERT_ERR(flowsdn_maps_ct_iterate(NULL, NULL, NULL), -EINVAL, "iterate NULL");
	ASSERT_ERR(flowsdn_maps_ct_count(NULL, 0, NULL, NULL), -EINVAL, "count NULL");
	ASSERT_ERR(flowsdn_maps_ct_stats(NULL, NULL), -EINVAL, "stats NULL");
	ASSERT_ERR(flowsdn_maps_hostfw_state(NULL, NULL), -EINVAL, "host firewall state NULL");
	ASSERT_ERR(flowsdn_maps_hostfw_counters(NULL, NULL), -EINVAL, "host firewall counters NULL");
	ASSERT_ERR(flowsdn_maps_hostfw_switch(NULL, NULL, 0, NULL, 0, 0, FLOWSDN_HOSTFW_AUDIT), -EINVAL,
		   "host firewall switch NULL");
}
