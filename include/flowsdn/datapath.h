/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/datapath.h> — the BPF loader and the pinned datapath maps.
 *
 * Two handles:
 *
 *  - struct flowsdn_maps: the pinned maps of a running datapath, opened by
 *    path only.  Enough to publish and remove endpoints, write policy
 *    entries and read counters; loads no program (the CNI plugin uses it).
 *
 *  - struct flowsdn_datapath: the loader (the agent).  flowsdn_datapath_open()
 *    mounts bpffs when the directory is not on one, loads the embedded BPF
 *    object once (reusing maps already pinned there, so endpoints and
 *    policy survive a restart), pins maps and programs, and then attaches
 *    the endpoint programs to host-side veths: TCX links where the kernel
 *    has them (pinned, so forwarding survives the agent), else tc clsact
 *    filters (which live as long as the interface).  Freeing the handle
 *    detaches nothing: forwarding goes on while no agent runs.  A restarted
 *    agent opens again and calls flowsdn_datapath_adopt() for each endpoint
 *    it restores; that checks the interface still belongs to the endpoint
 *    and switches its hooks to the newly loaded programs atomically.
 *
 * Pinned layout under the pin directory (default FLOWSDN_DATAPATH_PIN_DIR):
 *   <dir>/flowsdn_ep, flowsdn_policy, ...     maps (names in <flowsdn/maps.h>)
 *   <dir>/prog_from_container, prog_to_container   programs
 *   <dir>/links/<ifindex>-ingress, -egress    TCX links of each endpoint
 *
 * Errors: -errno, or the negative codes of enum flowsdn_bpf_error; details
 * go to the log callback (flowsdn_set_log()).  flowsdn_datapath_open()
 * routes libbpf's messages (verifier logs included) to that callback too;
 * libbpf's print function is process-wide, so a program that sets its own
 * must set it again after opening the datapath.  Every function needs
 * CAP_BPF/CAP_NET_ADMIN (CAP_SYS_ADMIN to mount bpffs) except
 * flowsdn_drop_reason_name() and the pure helpers (policy key, port blocks).
 */
#ifndef FLOWSDN_DATAPATH_H
#define FLOWSDN_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>
#include <flowsdn/common.h>
#include <flowsdn/maps.h>
#include <flowsdn/netlink.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLOWSDN_DATAPATH_PIN_DIR "/sys/fs/bpf/flowsdn"

/* Domain errors of the loader (block 4600). */
enum flowsdn_bpf_error {
	FLOWSDN_E_BPF_BASE = FLOWSDN_E_BASE + 600,
	FLOWSDN_E_BPF_NO_BPFFS = FLOWSDN_E_BPF_BASE,  /* pin directory not on bpffs and mounting failed */
	FLOWSDN_E_BPF_NOT_LOADED,       /* no pinned datapath maps in the directory */
	FLOWSDN_E_BPF_MAP_LAYOUT,       /* a pinned map's type/key/value size differs from <flowsdn/maps.h> */
	FLOWSDN_E_BPF_LOAD,             /* the kernel refused a program (verifier log in the log callback) */
	FLOWSDN_E_BPF_ATTACH,           /* attaching to the interface failed */
	FLOWSDN_E_BPF_NO_TCX,           /* TCX asked for, the kernel has none */
	FLOWSDN_E_BPF_IFACE_MISMATCH,   /* adoption refused: the interface is not the endpoint's any more */
	FLOWSDN_E_BPF_OBJECT,           /* the embedded object is damaged or its hash is wrong */
	FLOWSDN_E_BPF_NOT_CGROUP2,      /* the socket LB's cgroup path is not a cgroup v2 directory */
	FLOWSDN_E_BPF_MAX_,
};

/* Name of a drop reason ("policy denied"); "unknown" for a value out of
 * range.  Static string, never NULL. */
FLOWSDN_API const char *flowsdn_drop_reason_name(unsigned int reason);

/* ------------------------------------------------------------ pinned maps */

struct flowsdn_maps;

/* Opens the maps pinned in @pin_dir (NULL: FLOWSDN_DATAPATH_PIN_DIR) and
 * checks their types and key/value sizes against <flowsdn/maps.h>.
 * -FLOWSDN_E_BPF_NOT_LOADED when the datapath was never loaded there,
 * -FLOWSDN_E_BPF_MAP_LAYOUT when a pinned map does not match. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_open(const char *pin_dir, struct flowsdn_maps **ret);
/* Closes the map fds (the maps stay pinned).  NULL is fine. */
FLOWSDN_API void flowsdn_maps_free(struct flowsdn_maps *maps);

/* Maximum addresses per endpoint (one IPv4 and one IPv6 address, plus room). */
#define FLOWSDN_ENDPOINT_MAX_ADDRS 4

/* An endpoint as published in the maps. */
struct flowsdn_endpoint {
	uint32_t id;          /* 1..UINT32_MAX, unique on the node */
	uint32_t identity;    /* security identity (FLOWSDN_IDENTITY_INIT if not known yet) */
	uint32_t flags;       /* FLOWSDN_EP_F_* (policy enforcement) */
	int host_ifindex;     /* host-side veth */
	uint8_t mac[6];       /* the endpoint's interface MAC */
	uint8_t host_mac[6];  /* the host-side veth MAC */
	size_t n_addrs;       /* 1..FLOWSDN_ENDPOINT_MAX_ADDRS */
	struct flowsdn_addr addrs[FLOWSDN_ENDPOINT_MAX_ADDRS];
};

/* Writes one flowsdn_ep entry per address of @ep (replacing entries for the
 * same addresses) and creates its counters entry when missing.  From then
 * on the datapath delivers to @ep and accepts its traffic.  -EINVAL for an
 * id of 0, no or too many addresses, an address that is not IPv4/IPv6 or
 * an ifindex <= 0; -EEXIST when an address belongs to another endpoint id
 * (nothing written). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_endpoint_publish(struct flowsdn_maps *maps, const struct flowsdn_endpoint *ep);

/* Removes the address entries of @ep (those still pointing at @ep->id; an
 * address already gone is not an error), its counters and its policy
 * entries (found by walking the policy map).  Only @ep->id and addrs are
 * read.  Idempotent: 0 when nothing was there. */
FLOWSDN_API int flowsdn_maps_endpoint_remove(struct flowsdn_maps *maps, const struct flowsdn_endpoint *ep);

/* Sets the bits @mask of the flags of every address entry of @ep (only
 * id and addrs read) to those of @flags, the other bits untouched (the
 * policy switch owns FLOWSDN_EP_F_ENFORCE, the agent the rest).
 * -EINVAL for bits outside FLOWSDN_EP_F_ALL or @flags outside @mask,
 * -ENOENT when an address is not @ep's (the entries before it are
 * updated). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_endpoint_flags_update(struct flowsdn_maps *maps,
							       const struct flowsdn_endpoint *ep, uint32_t mask,
							       uint32_t flags);

/* Looks @addr up in flowsdn_ep.  -ENOENT when no endpoint has it. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_endpoint_lookup(struct flowsdn_maps *maps, const struct flowsdn_addr *addr,
							  struct flowsdn_endpoint_info *ret_info);

/* Counters of endpoint @ep_id, summed over the CPUs.  -ENOENT if unknown. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_endpoint_counters(struct flowsdn_maps *maps, uint32_t ep_id,
							    struct flowsdn_endpoint_counters *ret);

/* Drop counters of @reason (< FLOWSDN_DROP_MAX_), summed over the CPUs. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_drop_counters(struct flowsdn_maps *maps, unsigned int reason,
							struct flowsdn_drop_counters *ret);

/* Fills a policy key: endpoint @ep_id, @direction, peer @identity
 * (FLOWSDN_IDENTITY_ANY = any), @protocol (0 = any protocol, then ports
 * must be 0) and the port block @port/@port_prefix_bits (0..16 bits of
 * the port that must match; 0 = any port).  Pad bytes zeroed; bits of
 * @port past the prefix must be zero.  -EINVAL on any inconsistency. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_policy_key_make(uint32_t ep_id, enum flowsdn_direction direction, uint32_t identity,
						     uint8_t protocol, uint16_t port, unsigned int port_prefix_bits,
						     struct flowsdn_policy_key *ret);

/* Splits the inclusive port range [@first, @last] into the fewest aligned
 * blocks (port, prefix bits).  Writes at most @max blocks and returns how
 * many there are (at most 30 for any range); -EINVAL if first > last or
 * first == 0, -ENOBUFS if @max is too small (nothing written). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_policy_port_blocks(uint16_t first, uint16_t last, uint16_t *ret_ports,
							uint8_t *ret_bits, size_t max);

/* Inserts or replaces a policy entry (its counters restart at zero).
 * -EINVAL for a key with non-zero pad or out-of-range prefixlen, or
 * unknown value flags. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_policy_update(struct flowsdn_maps *maps, const struct flowsdn_policy_key *key,
							uint32_t flags, uint32_t rule_id);
/* Removes a policy entry; -ENOENT when absent. */
FLOWSDN_API int flowsdn_maps_policy_delete(struct flowsdn_maps *maps, const struct flowsdn_policy_key *key);
/* Reads a policy entry (exact key, not a longest-prefix match): its flags,
 * rule id and the packets/bytes it matched.  Walks the map to make sure
 * the exact key exists (O(entries): for reports, not per packet).
 * -ENOENT when absent. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_policy_get(struct flowsdn_maps *maps, const struct flowsdn_policy_key *key,
						     struct flowsdn_policy_value *ret);

/* Called per entry by flowsdn_maps_policy_iterate(): 0 goes on, any
 * other value stops the walk and is returned. */
typedef int (*flowsdn_policy_visit_fn)(const struct flowsdn_policy_key *key, const struct flowsdn_policy_value *value,
				       void *userdata);
/* Visits every policy entry once (one walk of the map, in the map's
 * order), each with its value as read at that moment; entries changed
 * during the walk may be seen or not.  0, the callback's value, or
 * -errno. */
FLOWSDN_API int flowsdn_maps_policy_iterate(struct flowsdn_maps *maps, flowsdn_policy_visit_fn fn, void *userdata);

/* One policy entry to install: a key (its ep_id is ignored: the switch
 * writes the generation's id) and its value's flags and rule id. */
struct flowsdn_policy_map_entry {
	struct flowsdn_policy_key key;
	uint32_t flags;   /* FLOWSDN_POLICY_F_* */
	uint32_t rule_id;
};

/*
 * Replaces the policy of endpoint @ep (published; its id < 2^31) as one
 * atomic switch (the policy model of <flowsdn/maps.h>): writes the @n_new
 * entries under the generation not in force, flips every address entry
 * of @ep to that generation with the enforcement flags @ep_flags
 * (FLOWSDN_EP_F_*) in one update each, then deletes the @n_old entries
 * of the generation that was in force (the set the caller installed
 * last; NULL/0 for none).  A packet meets the old policy or the new one.
 * On failure before the flip, what was written is deleted again and the
 * old policy stays in force, untouched: -EINVAL (a bad entry or
 * argument), -ENOENT (@ep not published under its id), -errno of the
 * map (-E2BIG/-ENOMEM: the map is full).  Once flipped, failing to
 * delete an old entry is not an error of the switch (the entry is in the
 * generation not in force; flowsdn_maps_policy_scrub() removes it).
 */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_policy_switch(struct flowsdn_maps *maps, const struct flowsdn_endpoint *ep,
							const struct flowsdn_policy_map_entry *old_entries,
							size_t n_old,
							const struct flowsdn_policy_map_entry *new_entries,
							size_t n_new, uint32_t ep_flags);

/* The policy generation (0 or 1) in force for endpoint @ep_id, read
 * from the entry of @addr.  -ENOENT when @addr is not @ep_id's. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_policy_generation(struct flowsdn_maps *maps, uint32_t ep_id,
							    const struct flowsdn_addr *addr, unsigned int *ret_gen);

/* Deletes every policy entry that no packet can meet: those of a
 * generation not in force and those of endpoints not published (after a
 * crash between the steps of a switch).  One walk of the policy and
 * endpoint maps.  *ret_removed may be NULL.  0 or -errno. */
FLOWSDN_API int flowsdn_maps_policy_scrub(struct flowsdn_maps *maps, size_t *ret_removed);

/* The host firewall's state in force (<flowsdn/maps.h> "host firewall";
 * ep_id 0: never written, off).  -errno. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_hostfw_state(struct flowsdn_maps *maps, struct flowsdn_hostfw_state *ret);
/*
 * Switches the host firewall as flowsdn_maps_policy_switch() does an
 * endpoint: the @n_new entries (ingress only; their ep_id is ignored)
 * under the generation not in force, then generation, @flags
 * (FLOWSDN_EP_F_ENFORCE_INGRESS or 0) and @mode (enum
 * flowsdn_hostfw_mode) in one update of flowsdn_hostfw, then the @n_old
 * entries installed last deleted.  A mode change alone passes the same
 * set as old and new.  On failure before the flip the state in force
 * stays, untouched: -EINVAL (a bad entry or argument), -errno.
 */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_hostfw_switch(struct flowsdn_maps *maps,
							const struct flowsdn_policy_map_entry *old_entries,
							size_t n_old,
							const struct flowsdn_policy_map_entry *new_entries,
							size_t n_new, uint32_t flags, unsigned int mode);
/* The host firewall's counters, added up over the CPUs.  -errno. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_hostfw_counters(struct flowsdn_maps *maps,
							  struct flowsdn_hostfw_counters *ret);

/* Maps the prefix @prefix to @identity in the ipcache (CIDR identities). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_ipcache_update(struct flowsdn_maps *maps, const struct flowsdn_prefix *prefix,
							 uint32_t identity);
FLOWSDN_API int flowsdn_maps_ipcache_delete(struct flowsdn_maps *maps, const struct flowsdn_prefix *prefix);

/* ------------------------------------------------------------ Maglev */

/*
 * The Maglev tables of flowsdn_maglev (<flowsdn/maps.h>): one table of @m
 * slots (a size flowsdn_maglev_size_supported() accepts) per service id
 * @svc_id (any but 0; at most FLOWSDN_MAX_MAGLEV_TABLES tables at once),
 * each slot a backend id, as
 * flowsdn_maglev_build() computes them.
 */

/* Writes @new_table (@m backend ids) as service @svc_id's table.  With
 * @old_table, the table last written for @svc_id at the same size (the
 * caller's copy), only the slots flowsdn_maglev_diff() reports changed are
 * written, in place, in one BPF_MAP_UPDATE_BATCH where the kernel has it
 * (else one update per slot); a lookup meanwhile sees each slot old or
 * new, so remove a backend from flowsdn_backend only after the tables
 * that named it are written.  Without @old_table, or when the service has
 * no table yet or one of another size, a new table is filled completely
 * and then switched in with one update of the outer map: lookups see the
 * old table or the new one, never a partial one.  *@ret_written (may be
 * NULL) gets the number of slots written.  Errors: -EINVAL (NULL maps or
 * @new_table, @svc_id 0), -E2BIG (FLOWSDN_MAX_MAGLEV_TABLES tables
 * already), -FLOWSDN_E_MAGLEV_SIZE, -ENOMEM,
 * -errno of the bpf() calls; on error the slots already written stay
 * written (write again with @old_table NULL to start from a clean table). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_maglev_write(struct flowsdn_maps *maps, uint32_t svc_id,
							const uint32_t *old_table, const uint32_t *new_table,
							uint32_t m, size_t *ret_written);

/* Reads service @svc_id's table into @ret_table (room for @m entries).
 * -ENOENT when the service has no table, -EMSGSIZE when its table does
 * not have @m slots (@ret_table untouched), -EINVAL, -errno. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_maglev_read(struct flowsdn_maps *maps, uint32_t svc_id, uint32_t *ret_table,
						       uint32_t m);

/* Removes service @svc_id's table (the kernel frees it once no program
 * holds it).  -ENOENT when it has none, -EINVAL, -errno. */
FLOWSDN_API int flowsdn_maps_maglev_remove(struct flowsdn_maps *maps, uint32_t svc_id);

/* ------------------------------------------------------------ services */

/*
 * A service as the datapath holds it (the model is described at the top
 * of <flowsdn/maps.h>): backend sets, each with its own svc_id, and
 * frontends, each naming the set its lookups answer from.  Ports are in
 * host order here; the writers convert.
 */
struct flowsdn_lb_backend {
	uint32_t id;               /* flowsdn_backend key, 1..UINT32_MAX, unique on the node */
	struct flowsdn_addr addr;  /* IPv4 or IPv6, the family of the set's frontends */
	uint16_t port;             /* 1..65535 */
	uint8_t protocol;          /* IPPROTO_TCP or IPPROTO_UDP */
	uint8_t state;             /* FLOWSDN_BACKEND_*: only ACTIVE ones get slots */
	uint8_t flags;             /* FLOWSDN_BACKEND_F_* */
	uint32_t weight;           /* slots an active backend gets (1..256); 0: none */
};

struct flowsdn_lb_set {
	uint32_t svc_id;           /* 1..UINT32_MAX, unique on the node */
	uint32_t flags;            /* FLOWSDN_SVC_F_LOCAL, _AFFINITY, _MAGLEV */
	uint32_t affinity_timeout; /* seconds, with FLOWSDN_SVC_F_AFFINITY (1..86400) */
	uint32_t maglev_size;      /* M, with FLOWSDN_SVC_F_MAGLEV (flowsdn_maglev_size_supported()) */
	const uint32_t *maglev_table; /* M backend ids (of active backends of the set) */
	const struct flowsdn_lb_backend *backends;
	size_t n_backends;
};

struct flowsdn_lb_frontend {
	struct flowsdn_addr addr;
	uint16_t port;             /* 1..65535 */
	uint8_t protocol;          /* IPPROTO_TCP or IPPROTO_UDP */
	uint8_t scope;             /* FLOWSDN_SVC_SCOPE_* */
	uint32_t flags;            /* FLOWSDN_SVC_F_NODEPORT, _EXTERNAL_IP, _LOADBALANCER, _TWO_SCOPES */
	size_t set;                /* index into the service's sets */
};

struct flowsdn_lb_service {
	const struct flowsdn_lb_set *sets;
	size_t n_sets;
	const struct flowsdn_lb_frontend *frontends;
	size_t n_frontends;
};

/*
 * Publishes @svc, replacing @old (what an earlier call published for the
 * same service; NULL for a new one), so that no lookup ever sees a
 * half-written service: first every backend entry of @svc, then the slots
 * of each set (and its Maglev table, only the slots that differ from
 * @old's), then the frontend entries (their values name the new slot
 * counts), and only then what @old had and @svc has not: frontends,
 * slots past a set's new count, Maglev tables no set uses, backends.  A
 * flow already on a backend that became terminating keeps it (its entry
 * stays); new flows never get it.  -EINVAL for an invalid service (ids
 * 0, a backend whose family or protocol differs from a frontend of its
 * set, a set of more than FLOWSDN_SVC_MAX_SLOTS_PER_SET slots, a Maglev
 * table naming a backend that is not an active one of the set, unknown
 * flags); nothing is written then.  A failing map write returns -errno
 * and may leave @svc partly written over @old, never a frontend that
 * names slots or backends not written: publish again or remove.
 */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_service_publish(struct flowsdn_maps *maps, const struct flowsdn_lb_service *svc,
							  const struct flowsdn_lb_service *old);

/*
 * flowsdn_maps_service_publish() of @n services at once (@olds NULL, or
 * @n pointers, NULL for a new service): the same phases and checks, each
 * phase across all @n services and written with one BPF_MAP_UPDATE_BATCH
 * per map (one update each where the kernel lacks it) — every backend,
 * then every slot and Maglev table, then every frontend, then what the
 * @olds had and the services have not.  -EINVAL before anything is
 * written when any service is invalid; a failing write returns -errno
 * and leaves the services as one failing publish would.
 */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_services_publish(struct flowsdn_maps *maps,
							   const struct flowsdn_lb_service *const *svcs,
							   const struct flowsdn_lb_service *const *olds, size_t n);

/* Removes what flowsdn_maps_service_publish() wrote for @old: frontends
 * first, then slots and Maglev tables, then backends.  Entries already
 * gone are not an error. */
FLOWSDN_API int flowsdn_maps_service_remove(struct flowsdn_maps *maps, const struct flowsdn_lb_service *old);

/* Looks frontend @addr:@port/@protocol up (@scope FLOWSDN_SVC_SCOPE_*)
 * as the datapath does: -ENOENT when it is not a frontend. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_service_lookup(struct flowsdn_maps *maps, const struct flowsdn_addr *addr,
							 uint16_t port, uint8_t protocol, uint8_t scope,
							 struct flowsdn_service_value *ret);
/* ------------------------------------------------------------ source ranges */

/* Most ranges (allowed plus denied) of one service. */
#define FLOWSDN_SRCRANGE_MAX_PER_SERVICE 1024

/*
 * Sets the source ranges of service @svc_id (its EXTERNAL scope's
 * flowsdn_service_value.svc_id; the model is "source ranges" in
 * <flowsdn/maps.h>): @allow (loadBalancerSourceRanges; none = every
 * source) and @deny (denied ranges, winning over @allow).  Host bits of
 * a prefix are ignored.  Writes the denied ranges first, then the
 * allowed ones and the META entry, then removes the service's ranges that
 * are no longer listed: a source newly denied is never let in on the
 * way, and while an allow list is replaced both old and new ranges
 * allow.  Ranges kept keep their counters.  -EINVAL for a bad prefix,
 * svc_id 0 or NULL with a count; -E2BIG beyond
 * FLOWSDN_SRCRANGE_MAX_PER_SERVICE (nothing written then); -ENOMEM,
 * -errno of the map.
 */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_srcrange_set(struct flowsdn_maps *maps, uint32_t svc_id,
						       const struct flowsdn_prefix *allow, size_t n_allow,
						       const struct flowsdn_prefix *deny, size_t n_deny);
/* Removes every range of @svc_id (everyone may reach it again);
 * idempotent. */
FLOWSDN_API int flowsdn_maps_srcrange_clear(struct flowsdn_maps *maps, uint32_t svc_id);
/* The packets the range @prefix of @list decided for @svc_id, or the
 * META entry's (sources refused for being outside the allow list) when
 * @list is FLOWSDN_SRCRANGE_META (@prefix ignored).  -ENOENT if absent. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_srcrange_packets(struct flowsdn_maps *maps, uint32_t svc_id,
							   enum flowsdn_srcrange_list list,
							   const struct flowsdn_prefix *prefix, uint64_t *ret);

/* ------------------------------------------------------------ conntrack */

/*
 * The connection tracking table flowsdn_ct (<flowsdn/maps.h>): the BPF
 * programs create, update and read entries; userspace counts, lists,
 * collects the dead and flushes.  An entry is dead once its expires (ns,
 * CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns()) has passed; the
 * datapath ignores dead entries, flowsdn_maps_ct_gc() removes them.
 */

/* Timeouts in seconds; a member of 0 keeps its default
 * (FLOWSDN_CT_TIMEOUT_* of <flowsdn/maps.h>). */
struct flowsdn_ct_timeouts {
	uint32_t tcp;         /* established TCP */
	uint32_t tcp_syn;     /* handshake not finished */
	uint32_t tcp_close;   /* after RST or both FINs */
	uint32_t udp;         /* UDP and other ported protocols, no reply yet */
	uint32_t udp_replied; /* once a reply was seen */
	uint32_t icmp;        /* ICMP/ICMPv6 echo */
};

/* Fills a conntrack key for the tuple @src:@sport -> @dst:@dport of
 * @protocol (ports in host order; ICMP/ICMPv6 echo: the identifier in
 * @sport, @dport 0), the original direction.  -EINVAL when the families
 * differ or are not IPv4/IPv6, or ICMP has a non-zero @dport. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_ct_key_make(const struct flowsdn_addr *src, uint16_t sport,
						 const struct flowsdn_addr *dst, uint16_t dport, uint8_t protocol,
						 struct flowsdn_ct_key *ret);

/* Reads the entry of @key (exact: the original direction).  -ENOENT when
 * absent (dead entries are returned: compare expires with the clock). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_ct_lookup(struct flowsdn_maps *maps, const struct flowsdn_ct_key *key,
						    struct flowsdn_ct_entry *ret);

/* Called for each entry by flowsdn_maps_ct_iterate(): 0 goes on, any
 * other value stops the walk and is returned. */
typedef int (*flowsdn_ct_visit_fn)(const struct flowsdn_ct_key *key, const struct flowsdn_ct_entry *entry,
				   void *userdata);

/* Calls @fn for each entry (dead ones too).  The datapath keeps writing
 * while the walk runs: an entry created or evicted meanwhile may be
 * missed or seen with newer counters, none is seen twice unless the
 * table is flushed meanwhile.  Returns 0, @fn's value, or -errno. */
FLOWSDN_API int flowsdn_maps_ct_iterate(struct flowsdn_maps *maps, flowsdn_ct_visit_fn fn, void *userdata);

/* Removes the dead entries: those that expired before @now_ns
 * (CLOCK_MONOTONIC ns; 0: the current time).  *ret_removed (may be NULL)
 * says how many.  0 or -errno. */
FLOWSDN_API int flowsdn_maps_ct_gc(struct flowsdn_maps *maps, uint64_t now_ns, size_t *ret_removed);

/* Removes every entry (@addr NULL), or those with @addr as source or
 * destination (an endpoint that goes: a later endpoint with the address
 * must not inherit its connections).  Their next packets are judged by
 * policy as new connections.  0 or -errno. */
FLOWSDN_API int flowsdn_maps_ct_flush(struct flowsdn_maps *maps, const struct flowsdn_addr *addr,
				      size_t *ret_removed);

/* Counts the entries alive at @now_ns (0: now) and all of them (dead
 * ones included; either pointer may be NULL).  O(entries). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_ct_count(struct flowsdn_maps *maps, uint64_t now_ns, size_t *ret_live,
						   size_t *ret_total);

/* The lookup counters of the datapath, summed over the CPUs. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_maps_ct_stats(struct flowsdn_maps *maps, struct flowsdn_ct_stats *ret);

/* ------------------------------------------------------------ the loader */

struct flowsdn_datapath;

enum flowsdn_attach_mode {
	FLOWSDN_ATTACH_AUTO = 0, /* TCX when the kernel has it, else tc clsact */
	FLOWSDN_ATTACH_TCX = 1,  /* TCX only (-FLOWSDN_E_BPF_NO_TCX without it) */
	FLOWSDN_ATTACH_TC = 2,   /* tc clsact filters only */
};

struct flowsdn_datapath_opts {
	size_t sz;
	/* bpffs directory for pins; NULL: FLOWSDN_DATAPATH_PIN_DIR.  Created
	 * (with its parents) if missing; bpffs is mounted on it when it is
	 * not on a bpffs. */
	const char *pin_dir;
	enum flowsdn_egress_mode egress_mode;
	enum flowsdn_attach_mode attach_mode;
	/* Same-node delivery with bpf_redirect() to the peer's host veth
	 * instead of bpf_redirect_peer() into its namespace (slower; for
	 * kernels or setups where redirect_peer does not apply). */
	bool no_redirect_peer;
	/* Do not mount bpffs; fail with -FLOWSDN_E_BPF_NO_BPFFS instead. */
	bool no_mount;
	/* Connection tracking table size (flowsdn_ct max entries); 0:
	 * FLOWSDN_CT_DEFAULT_MAX.  A table pinned with another size is
	 * replaced by an empty one (tracked connections are forgotten:
	 * their next packets are judged by policy as new ones). */
	uint32_t ct_max;
	/* Conntrack timeouts; NULL: the defaults of <flowsdn/maps.h>. */
	const struct flowsdn_ct_timeouts *ct_timeouts;
};

/* Loads the embedded datapath (see the top of this file).  Outputs
 * untouched on failure, and nothing already pinned is removed. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_datapath_open(const struct flowsdn_datapath_opts *opts, struct flowsdn_datapath **ret);

/* Releases the handle.  Attachments, pinned programs, links and maps stay:
 * the datapath keeps forwarding.  NULL is fine. */
FLOWSDN_API void flowsdn_datapath_free(struct flowsdn_datapath *dp);

/* The maps of @dp (owned by @dp, valid until flowsdn_datapath_free()). */
FLOWSDN_API struct flowsdn_maps *flowsdn_datapath_maps(struct flowsdn_datapath *dp);

/* The attach mode in use (never FLOWSDN_ATTACH_AUTO). */
FLOWSDN_API enum flowsdn_attach_mode flowsdn_datapath_attach_mode(const struct flowsdn_datapath *dp);

/* Attaches the endpoint programs to the host-side veth @ifindex: tc
 * ingress (from the endpoint) and egress (to it).  Replaces an older
 * flowsdn attachment of the same interface.  TCX links are pinned as
 * <dir>/links/<ifindex>-ingress/-egress.  In FLOWSDN_ATTACH_AUTO mode an
 * interface whose TCX attach fails gets tc clsact filters instead.
 * -ENODEV when the interface is gone, -FLOWSDN_E_BPF_ATTACH when the
 * kernel refuses, -errno when pinning a link fails. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_datapath_attach(struct flowsdn_datapath *dp, int ifindex);

/* Removes the flowsdn programs from @ifindex (and the link pins).  0 also
 * when nothing was attached or the interface is gone (idempotent). */
FLOWSDN_API int flowsdn_datapath_detach(struct flowsdn_datapath *dp, int ifindex);

/* Whether @ifindex has the flowsdn programs on both hooks: 1 yes, 0 no. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_datapath_is_attached(struct flowsdn_datapath *dp, int ifindex);

/* Adopts an endpoint after a restart: checks through netlink that
 * @iface->host_ifindex still has that name and MAC, that the netns at
 * netns_path is the same (inode) and holds @ifname with that MAC as the
 * veth peer of host_ifindex; then (re)attaches the newly loaded programs
 * (replacing the old ones atomically: bpf_link_update for pinned TCX
 * links, tc filter replace otherwise).  -FLOWSDN_E_BPF_IFACE_MISMATCH
 * (nothing changed) when a check fails. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_datapath_adopt(struct flowsdn_datapath *dp, const struct flowsdn_endpoint_iface *iface);

/* Attaches the socket load balancer (bpf/sock.bpf.c: connect, sendmsg,
 * recvmsg and getpeername, IPv4 and IPv6) to the cgroup v2 directory
 * @cgroup_path: every process in that cgroup and below connects to a
 * service frontend's backend.  The links are pinned as
 * <dir>/links/sock-<hook>, so the socket LB outlives the agent; calling
 * again with the same cgroup switches the links to the programs of @dp
 * atomically, with another cgroup moves them.  -FLOWSDN_E_BPF_NOT_CGROUP2
 * when @cgroup_path is not a directory of a cgroup v2 mount (opened
 * without following a final symlink), -FLOWSDN_E_BPF_ATTACH when the
 * kernel refuses (nothing stays attached then). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_datapath_socklb_attach(struct flowsdn_datapath *dp, const char *cgroup_path);

/* Detaches the socket load balancer and removes its link pins.  0 when
 * it was not attached. */
FLOWSDN_API int flowsdn_datapath_socklb_detach(struct flowsdn_datapath *dp);

/* ------------------------------------------------------------ uplinks */

struct flowsdn_uplink_opts {
	size_t sz;
	/* The node's addresses on the uplink, the source of the flows it
	 * sends to other nodes' backends (NodePort/LoadBalancer with
	 * externalTrafficPolicy Cluster) and what a NodePort answers on;
	 * NULL: none of that family. */
	const struct flowsdn_addr *addr4;
	const struct flowsdn_addr *addr6;
	/* Source ports of those flows (both 0: 61000..65535, apart from the
	 * kernel's ephemeral ports). */
	uint16_t snat_port_min, snat_port_max;
};

/*
 * Loads the uplink program (bpf/node.bpf.c: services from outside --
 * NodePort, LoadBalancer and external IPs -- DNAT to this node's
 * backends, SNAT and FIB forwarding to other nodes' backends, traffic
 * policy Local, source ranges, ICMP errors about those flows) with @opts,
 * pins it as <dir>/prog_from_uplink_<ifindex> and attaches it to
 * @ifindex's ingress (replacing an older one); to_uplink (ICMP errors the
 * node sends about them, the host firewall's connection tracking;
 * <dir>/prog_to_uplink_<ifindex>) goes on the egress.  Attached as
 * flowsdn_datapath_attach() attaches: TCX links in TCX mode (auto mode:
 * clsact where TCX refuses), else tc clsact.  -EINVAL for bad options,
 * -FLOWSDN_E_BPF_LOAD/_ATTACH, -ENODEV, -errno.
 */
FLOWSDN_API FLOWSDN_WUR int flowsdn_datapath_uplink_attach(struct flowsdn_datapath *dp, int ifindex,
							    const struct flowsdn_uplink_opts *opts);
/* Removes it again (0 also when it was not there). */
FLOWSDN_API int flowsdn_datapath_uplink_detach(struct flowsdn_datapath *dp, int ifindex);

/* Whether the running kernel supports TCX links: 1 yes, 0 no. */
FLOWSDN_API int flowsdn_datapath_probe_tcx(void);

/* SHA-256 (hex) of the embedded BPF object, as recorded in bpf/bpf.lock. */
FLOWSDN_API const char *flowsdn_datapath_object_hash(void);

#ifdef __cplusplus
}
#endif

#endif
