/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/ipam.h> — host-scope IP address management.
 *
 * An IPAM handle manages one or more pools (IPv4 and/or IPv6 prefixes, no
 * two overlapping) whose allocations live in a state directory.  Each
 * allocation belongs to an owner, the pair (container id, interface name)
 * of the CNI specification; an owner holds at most one address per family.
 *
 * In every pool the first address (the network address; for IPv6 the
 * subnet-router anycast address) and the second (the gateway) are
 * reserved, and for IPv4 also the last (broadcast).  A pool therefore
 * needs at least one more address: IPv4 /30 and IPv6 /126 are the
 * smallest; /31, /32, /127 and /128 are refused.  Pools hold at most
 * FLOWSDN_IPAM_MAX_POOL_ADDRS addresses (one bit each in memory): IPv4 /12
 * and IPv6 /108 are the largest.
 *
 * A pool must hold only addresses a pod can use: one that reaches into a
 * loopback, link-local (which holds the endpoints' gateway,
 * FLOWSDN_GATEWAY_V4 and FLOWSDN_GATEWAY_V6 of <flowsdn/netlink.h>), cloud
 * metadata, multicast, unspecified, "this network", broadcast,
 * IPv4-mapped or IPv4-compatible range (classes of <flowsdn/addr.h>) is
 * refused, naming the range.
 *
 * Several processes (the CNI plugin and the agent) may open the same state
 * directory at once.  Every call takes a lock on "<dir>/ipam.lock",
 * re-reads the state when another process changed it, applies the
 * operation and persists it before returning, so no two processes ever
 * hand out the same address.  A handle itself is not thread-safe: use one
 * per thread or serialize the calls.  Do not use a handle inherited across
 * fork() in both processes (they would share one lock); open a new one.
 *
 * Addresses are handed out next-fit: after the last address given out in
 * the pool, wrapping around, so a released address is reused as late as
 * possible (stale ARP/neighbour and conntrack entries of its previous
 * owner have time to expire).
 */
#ifndef FLOWSDN_IPAM_H
#define FLOWSDN_IPAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>
#include <flowsdn/common.h>
#include <flowsdn/diag.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest pool, in addresses (2^20). */
#define FLOWSDN_IPAM_MAX_POOL_ADDRS (UINT64_C(1) << 20)
/* Most pools per handle. */
#define FLOWSDN_IPAM_MAX_POOLS 16
/* Longest container id (bytes); ids are [A-Za-z0-9_.-]+. */
#define FLOWSDN_IPAM_CONTAINER_ID_MAX 255
/* Longest interface name (IFNAMSIZ - 1). */
#define FLOWSDN_IPAM_IFNAME_MAX 15

/* Domain errors of the IPAM block (returned negated). */
enum flowsdn_ipam_error {
	FLOWSDN_E_IPAM_BASE = FLOWSDN_E_BASE + 100,
	FLOWSDN_E_IPAM_EXHAUSTED = FLOWSDN_E_IPAM_BASE, /* every address of the pool is in use */
	FLOWSDN_E_IPAM_POOL_OVERLAP,     /* two configured pools overlap */
	FLOWSDN_E_IPAM_POOL_TOO_SMALL,   /* pool has no usable address (/31, /32, /127, /128) */
	FLOWSDN_E_IPAM_POOL_TOO_BIG,     /* pool larger than FLOWSDN_IPAM_MAX_POOL_ADDRS */
	FLOWSDN_E_IPAM_NO_POOL,          /* no pool for the family, or the address is in no pool */
	FLOWSDN_E_IPAM_RESERVED,         /* requested address is a reserved one */
	FLOWSDN_E_IPAM_IN_USE,           /* requested address belongs to another owner */
	FLOWSDN_E_IPAM_OWNER,            /* container id or interface name is invalid */
	FLOWSDN_E_IPAM_OWNER_CONFLICT,   /* owner already holds another address of that family */
	FLOWSDN_E_IPAM_STATE_CORRUPT,    /* state file truncated, damaged or inconsistent */
	FLOWSDN_E_IPAM_STATE_VERSION,    /* state file written by a newer format version */
	FLOWSDN_E_IPAM_ORPHAN,           /* state holds allocations outside every configured pool */
	FLOWSDN_E_IPAM_POOL_CLASS,       /* pool holds addresses no pod can use (loopback, link-local, the gateway, ...) */
	FLOWSDN_E_IPAM_MAX_,             /* end of the block (not an error) */
};

struct flowsdn_ipam;

struct flowsdn_ipam_opts {
	size_t sz;
	/* No option yet: the struct is there so that the call can grow. */
};

/* Opens the IPAM state in @state_dir (created, mode 0700, when missing;
 * NULL: the allocations live in this handle's memory only, for a caller
 * that persists them itself, as flowsdn-agent does in its endpoint state;
 * the parent must exist) for the @n_pools pools at @pools (1 to
 * FLOWSDN_IPAM_MAX_POOLS, each with host bits clear).  Restores the
 * allocations saved there; pools may be added between runs, but a pool
 * that still holds allocations may not be removed (-FLOWSDN_E_IPAM_ORPHAN,
 * nothing is changed).  Removes temporary files left by a writer that
 * crashed.  The pools are copied.  @opts may be NULL.
 * Errors: -EINVAL, -ENOMEM, -errno of the file system,
 * -FLOWSDN_E_IPAM_POOL_OVERLAP, _POOL_TOO_SMALL, _POOL_TOO_BIG,
 * _POOL_CLASS, _STATE_CORRUPT, _STATE_VERSION, _ORPHAN.  A state file that cannot be
 * read is never overwritten.  *ret is written only on success; free it
 * with flowsdn_ipam_free().  On failure @diag (may be NULL) names the
 * pool or file at fault (code "ipam"). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_ipam_new(const char *state_dir, const struct flowsdn_prefix *pools,
					     size_t n_pools, const struct flowsdn_ipam_opts *opts,
					     struct flowsdn_ipam **ret, struct flowsdn_diag *diag);

/* Closes the handle (the state stays on disk).  NULL is accepted. */
FLOWSDN_API void flowsdn_ipam_free(struct flowsdn_ipam *ipam);

/* Address family selection (struct flowsdn_ipam_alloc_opts.families). */
enum {
	FLOWSDN_IPAM_IPV4 = 1u << 0,
	FLOWSDN_IPAM_IPV6 = 1u << 1,
};

/* One address of an owner. */
struct flowsdn_ipam_lease {
	struct flowsdn_addr addr;
	struct flowsdn_prefix pool;    /* the pool it came from */
	struct flowsdn_addr gateway;   /* the pool's gateway (second address) */
};

/* The addresses of one owner: IPv4 first, then IPv6. */
struct flowsdn_ipam_result {
	unsigned int n;
	struct flowsdn_ipam_lease leases[2];
};

struct flowsdn_ipam_alloc_opts {
	size_t sz;
	/* FLOWSDN_IPAM_IPV4 | FLOWSDN_IPAM_IPV6; 0 means every family that
	 * has a pool. */
	unsigned int families;
	/* Explicit addresses, at most one per family; a family of @families
	 * without one gets the next free address. */
	const struct flowsdn_addr *request;
	size_t n_request;
};

/* Gives the owner (@container_id, @ifname) one address of each selected
 * family and persists it.  An owner that already holds an address of a
 * family gets that same address again (so a repeated call returns the
 * same result); with several pools of a family, they are tried in the
 * order given to flowsdn_ipam_new().  All or nothing: on failure no
 * address is taken.  @opts may be NULL.  Errors: -EINVAL,
 * -FLOWSDN_E_IPAM_OWNER, _NO_POOL, _EXHAUSTED (every pool of the family
 * is full; @diag names it), _RESERVED, _IN_USE,
 * _OWNER_CONFLICT (an explicit request differs from the address the owner
 * holds), _STATE_CORRUPT, _STATE_VERSION, -errno.
 * *ret (may be NULL) is written only on success; @diag (may be NULL)
 * names the pool, address or holder at fault. */
FLOWSDN_API int flowsdn_ipam_allocate(struct flowsdn_ipam *ipam, const char *container_id, const char *ifname,
				      const struct flowsdn_ipam_alloc_opts *opts, struct flowsdn_ipam_result *ret,
				      struct flowsdn_diag *diag);

/* The addresses the owner holds.  -ENOENT when none. */
FLOWSDN_API int flowsdn_ipam_lookup(struct flowsdn_ipam *ipam, const char *container_id, const char *ifname,
				    struct flowsdn_ipam_result *ret);

/* Releases every address of the owner and persists that.  Returns the
 * number released (0 when the owner held none: releasing twice is not an
 * error, as CNI DEL requires).  @diag (may be NULL) names what is wrong. */
FLOWSDN_API int flowsdn_ipam_release(struct flowsdn_ipam *ipam, const char *container_id, const char *ifname,
				     struct flowsdn_diag *diag);

/* Replaces the pools of a handle without a state directory (the
 * flowsdn-agent's: a Node's podCIDRs changed) with the @n_pools pools at
 * @pools, checked as flowsdn_ipam_new() checks them.  A pool in both sets
 * keeps its addresses; a new one starts empty; one left out that holds no
 * address goes, and one that still holds addresses drains: its owners
 * keep them (lookup and release work as before) but nothing is allocated
 * from it again, and it goes with its last release.  All or nothing.
 * flowsdn_ipam_summary() lists the draining pools after the configured
 * ones.  Errors: -EINVAL (also: more than FLOWSDN_IPAM_MAX_POOLS pools with
 * the draining ones), -ENOMEM, -EOPNOTSUPP (a handle with a state
 * directory: its pools are shared with other processes),
 * -FLOWSDN_E_IPAM_POOL_OVERLAP (also: a new pool overlaps a pool that
 * still holds addresses), _POOL_TOO_SMALL, _POOL_TOO_BIG, _POOL_CLASS;
 * @diag (may be NULL) names the pool at fault. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_ipam_set_pools(struct flowsdn_ipam *ipam, const struct flowsdn_prefix *pools,
						   size_t n_pools, struct flowsdn_diag *diag);

/* Occupancy of one pool.  size = reserved + used + free. */
struct flowsdn_ipam_pool_summary {
	struct flowsdn_prefix pool;
	struct flowsdn_addr gateway;
	uint64_t size;      /* addresses in the prefix */
	uint64_t reserved;  /* network, gateway, broadcast */
	uint64_t used;      /* allocated */
	uint64_t free;      /* still available */
};

/* Fills @out (room for @max entries) with one summary per pool, in the
 * configured order, and sets *ret_n to the number of pools (which may
 * exceed @max: then only @max are written).  Errors: -EINVAL, those of
 * re-reading the state. */
FLOWSDN_API int flowsdn_ipam_summary(struct flowsdn_ipam *ipam, struct flowsdn_ipam_pool_summary *out,
				     size_t max, size_t *ret_n);

/* One allocation, as listed. */
struct flowsdn_ipam_allocation {
	char container_id[FLOWSDN_IPAM_CONTAINER_ID_MAX + 1];
	char ifname[FLOWSDN_IPAM_IFNAME_MAX + 1];
	struct flowsdn_addr addr;
	struct flowsdn_prefix pool;
};

/* Every allocation, ordered by address (IPv4 first).  *ret is a malloc'd
 * array of *ret_n entries (NULL when there are none) that the caller
 * frees with free().  Errors: -EINVAL, -ENOMEM, those of re-reading the
 * state; outputs untouched on failure. */
FLOWSDN_API int flowsdn_ipam_list(struct flowsdn_ipam *ipam, struct flowsdn_ipam_allocation **ret, size_t *ret_n);

/* True when the owner (container id and interface name) is well formed:
 * flowsdn_cni_container_id_valid(@container_id) (1..
 * FLOWSDN_IPAM_CONTAINER_ID_MAX bytes of ^[A-Za-z0-9][A-Za-z0-9_.-]*$)
 * and flowsdn_netlink_ifname_valid(@ifname) (1..FLOWSDN_IPAM_IFNAME_MAX
 * bytes of 0x21..0x7e other than '/' and ':', not "." or ".."). */
FLOWSDN_API bool flowsdn_ipam_owner_valid(const char *container_id, const char *ifname);

#ifdef __cplusplus
}
#endif

#endif
