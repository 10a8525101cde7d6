// SPDX-License-Identifier: LGPL-2.1-or-later
/* <flowsdn/maps.h> compiled for the BPF target with -g: one global of each
 * struct puts every type into the BTF that tests/unit/test-maps.c reads. */
#include <flowsdn/maps.h>

struct flowsdn_endpoint_key btf_endpoint_key;
struct flowsdn_endpoint_info btf_endpoint_info;
struct flowsdn_endpoint_counters btf_endpoint_counters;
struct flowsdn_ipcache_key btf_ipcache_key;
struct flowsdn_ipcache_value btf_ipcache_value;
struct flowsdn_policy_key btf_policy_key;
struct flowsdn_policy_value btf_policy_value;
struct flowsdn_service_key btf_service_key;
struct flowsdn_service_value btf_service_value;
struct flowsdn_backend btf_backend;
struct flowsdn_maglev_value btf_maglev_value;
struct flowsdn_svc_slot_key btf_svc_slot_key;
struct flowsdn_svc_slot_value btf_svc_slot_value;
struct flowsdn_affinity_key btf_affinity_key;
struct flowsdn_affinity_value btf_affinity_value;
struct flowsdn_sock_revnat_key btf_sock_revnat_key;
struct flowsdn_sock_revnat_value btf_sock_revnat_value;
struct flowsdn_drop_counters btf_drop_counters;
struct flowsdn_srcrange_key btf_srcrange_key;
struct flowsdn_srcrange_value btf_srcrange_value;
struct flowsdn_ct_key btf_ct_key;
struct flowsdn_ct_entry btf_ct_entry;
struct flowsdn_ct_stats btf_ct_stats;
struct flowsdn_frag_key btf_frag_key;
struct flowsdn_frag_entry btf_frag_entry;
struct flowsdn_hostfw_state btf_hostfw_state;
struct flowsdn_hostfw_counters btf_hostfw_counters;
