/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/netlink.h> — the endpoint's links, addresses, routes,
 * neighbours and sysctls, through rtnetlink (libnl-3 / libnl-route-3;
 * never by running ip(8)).
 *
 * Endpoint wiring.  An endpoint is a veth pair: the host side stays in
 * the node's namespace (where the datapath programs are attached), the
 * peer lives in the endpoint's netns under CNI_IFNAME.  The endpoint gets
 * its addresses as /32 and /128 and a default route via a fixed gateway
 * address that no interface owns: 169.254.1.1 (IPv4) and fe80::1 (IPv6),
 * with a PERMANENT neighbour entry mapping the gateway to the host veth's
 * MAC (the design of Calico and Cilium).  Why:
 *   - the gateway is the same in every endpoint and needs no address from
 *     the pool, and no address on the host veth (nothing to conflict with);
 *   - the permanent neighbour means the endpoint never ARPs or solicits for
 *     it: no proxy-ARP on the host and no ARP responder in BPF, and
 *     neighbour state can never go stale or flap;
 *   - with /32 and /128 addresses every destination, same node or not,
 *     goes to the gateway MAC, i.e. into the host veth where the tc
 *     programs see it; they rewrite both MACs on delivery.
 *
 * Namespaces.  Work inside the endpoint's netns is done on a netlink
 * socket created by a short-lived helper thread that entered the netns
 * with setns(2): a socket stays bound to the netns it was created in,
 * and setns() in a helper thread changes neither the calling thread's
 * nor the process's namespace (namespaces are per thread).  Sysctls are
 * written the same way: the helper thread opens /proc/sys/... after
 * setns(), and /proc/sys/net resolves to the opener's netns.
 *
 * Errors: -errno, or the negative codes of enum flowsdn_nl_error; the
 * diag passed last (<flowsdn/diag.h>, may be NULL) gets one entry (code
 * "netlink") per failed step, the first naming the step and object that
 * failed ("add address 10.0.0.2/32 on eth0 in /var/run/netns/x: File
 * exists").
 */
#ifndef FLOWSDN_NETLINK_H
#define FLOWSDN_NETLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flowsdn/addr.h>
#include <flowsdn/common.h>
#include <flowsdn/diag.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Domain errors (block 4700). */
enum flowsdn_nl_error {
	FLOWSDN_E_NL_BASE = FLOWSDN_E_BASE + 700,
	FLOWSDN_E_NL_SOCKET = FLOWSDN_E_NL_BASE, /* netlink socket could not be opened */
	FLOWSDN_E_NL_NETNS,         /* netns path missing, not a netns, or setns failed */
	FLOWSDN_E_NL_IFNAME,        /* interface name invalid (empty, > 15 bytes, '/', ':', space) */
	FLOWSDN_E_NL_EXISTS,        /* interface name already taken */
	FLOWSDN_E_NL_LINK,          /* creating or changing a link failed */
	FLOWSDN_E_NL_ADDR,          /* adding an address failed */
	FLOWSDN_E_NL_ROUTE,         /* adding or removing a route failed */
	FLOWSDN_E_NL_NEIGH,         /* adding the gateway neighbour failed */
	FLOWSDN_E_NL_SYSCTL,        /* a sysctl could not be written */
	FLOWSDN_E_NL_NOT_FOUND,     /* no such interface */
	FLOWSDN_E_NL_MISMATCH,      /* the interface is not what was expected */
	FLOWSDN_E_NL_MAX_,
};

#define FLOWSDN_GATEWAY_V4 "169.254.1.1"
#define FLOWSDN_GATEWAY_V6 "fe80::1"
#define FLOWSDN_IFNAMSIZ 16 /* IFNAMSIZ, with the NUL */

/* What to build for one endpoint. */
struct flowsdn_veth_config {
	size_t sz;
	const char *netns_path;  /* required: /var/run/netns/X or /proc/PID/ns/net */
	const char *host_ifname; /* required: host-side name, unique on the node */
	const char *ifname;      /* required: name inside the netns (CNI_IFNAME) */
	unsigned int mtu;        /* 0: 1500; else 68..65535 */
	bool has_mac;            /* use @mac for the endpoint side, else random */
	uint8_t mac[6];          /* unicast, not zero */
	/* Addresses of the endpoint side, normally a /32 and/or a /128. */
	const struct flowsdn_prefix *addrs;
	size_t n_addrs;          /* 0..8 */
	/* Also add host routes addr/32 and addr/128 via the host veth in the
	 * caller's namespace.  Egress mode "stack" needs them for everything;
	 * in mode "fib" same-node delivery does not, but the node itself and
	 * traffic entering the node (replies from elsewhere) reach the
	 * endpoint through them (and its to_container program). */
	bool host_routes;
	/* Set net.ipv4.conf.HOST_IFNAME.accept_local=1 on the host side: a
	 * packet arriving from the endpoint whose source is one of the node's
	 * own addresses is taken, not dropped as a martian.  Egress mode
	 * "stack" needs it for reverse-translated NodePort replies of
	 * per-packet translated (gVisor) endpoints, whose source is the
	 * node's address. */
	bool host_accept_local;
};

/* What was built. */
struct flowsdn_veth {
	int host_ifindex;
	char host_ifname[FLOWSDN_IFNAMSIZ];
	uint8_t host_mac[6];
	int ifindex;             /* inside the netns */
	char ifname[FLOWSDN_IFNAMSIZ];
	uint8_t mac[6];
	uint64_t netns_ino;      /* inode of the netns (identifies it) */
};

/*
 * Builds an endpoint: the veth pair (peer created directly inside the netns
 * under @cfg->ifname, so no temporary name ever appears there), MTU, MAC,
 * IPv6 DAD off on the endpoint side (addresses usable at once), the
 * addresses (nodad), both sides up, the gateway route and default route
 * for each family present, the permanent gateway neighbours, and the host
 * routes if asked.  The host side gets IPv6 router advertisements off.
 * On failure everything made is removed (deleting the host side removes
 * the pair) and @ret is untouched.  -FLOWSDN_E_NL_EXISTS when a name is
 * taken (on either side), -FLOWSDN_E_NL_NETNS for a bad netns path.
 */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_veth_setup(const struct flowsdn_veth_config *cfg, struct flowsdn_veth *ret,
							struct flowsdn_diag *diag);

/* Removes the endpoint whose host side is @host_ifname (the pair goes
 * with it) and the host routes to @addrs (may be NULL/0).  Idempotent:
 * returns 0 when the interface or routes are already gone. */
FLOWSDN_API int flowsdn_netlink_veth_teardown(const char *host_ifname, const struct flowsdn_addr *addrs, size_t n_addrs,
					      struct flowsdn_diag *diag);

/* Deletes the veth @ifname inside the netns at @netns_path (entered by a
 * helper thread, the caller's netns untouched): the pair goes with it, so
 * this removes an endpoint from the container's side, whichever netns the
 * caller and the host side are in.  Idempotent: 0 when @ifname is not
 * there.  -EINVAL, -FLOWSDN_E_NL_NETNS (not a network namespace),
 * -FLOWSDN_E_NL_MISMATCH (@ifname is not a veth: it is left alone),
 * -FLOWSDN_E_NL_LINK. */
FLOWSDN_API int flowsdn_netlink_veth_delete(const char *netns_path, const char *ifname, struct flowsdn_diag *diag);

/* What an endpoint's host interface must still be (adoption after a
 * restart; used by flowsdn_datapath_adopt()). */
struct flowsdn_endpoint_iface {
	size_t sz;
	int host_ifindex;          /* host-side veth */
	const char *host_ifname;
	uint8_t host_mac[6];
	const char *netns_path;    /* the endpoint's netns */
	uint64_t netns_ino;        /* its inode when the endpoint was made (0: not checked) */
	const char *ifname;        /* interface inside the netns */
	uint8_t mac[6];
	/* Optional (0/NULL: not checked): addresses that must be on @ifname,
	 * and per address the gateway a default route of its family must
	 * use. */
	const struct flowsdn_addr *addrs;
	size_t n_addrs;
	const struct flowsdn_addr *gateways;
};

/* Checks that @iface still describes a live endpoint: host_ifindex exists
 * in the caller's netns with host_ifname and host_mac and is a veth; the
 * netns path is the same namespace (inode); @ifname exists there with
 * @mac and is the veth peer of host_ifindex, holding @addrs with their
 * default routes when given.  0 or
 * -FLOWSDN_E_NL_MISMATCH / -FLOWSDN_E_NL_NOT_FOUND / -FLOWSDN_E_NL_NETNS,
 * with @diag saying which check failed. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_endpoint_check(const struct flowsdn_endpoint_iface *iface,
							    struct flowsdn_diag *diag);

/* Looks up @ifname in @netns_path (NULL: the caller's netns): its index
 * and MAC (either output may be NULL).  -FLOWSDN_E_NL_NOT_FOUND. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_link_get(const char *netns_path, const char *ifname, int *ret_ifindex,
						      uint8_t ret_mac[6]);

/* Sets @ifname in @netns_path (NULL: the caller's) up or down. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_link_set_up(const char *netns_path, const char *ifname, bool up,
							 struct flowsdn_diag *diag);

/* Adds (@add) or removes a host route @addr/32 or /128 to @ifindex in the
 * caller's netns (egress mode "stack").  Adding an existing identical
 * route and removing a missing one succeed. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_host_route(bool add, int ifindex, const struct flowsdn_addr *addr,
							struct flowsdn_diag *diag);

/* The routing protocol number (rtm_protocol) of the routes
 * flowsdn_netlink_gateway_route() installs: how they are told from routes
 * that are not flowsdn's ("ip route show proto 201"). */
#define FLOWSDN_NETLINK_RTPROT 201

/* Adds (@add) or removes the route @dst via @gw (same family) in the main
 * table of the caller's netns, protocol FLOWSDN_NETLINK_RTPROT, through
 * the interface the kernel resolves for @gw (a directly reachable
 * gateway: the routes to other nodes' pod CIDRs).  Adding replaces a
 * route to @dst only when it is flowsdn's: a route to @dst that is not
 * fails with -EEXIST and stays.  Removing removes only flowsdn's route
 * (a missing one succeeds).  -EINVAL, -FLOWSDN_E_NL_SOCKET,
 * -FLOWSDN_E_NL_ROUTE (the kernel's refusal in @diag: an unreachable
 * gateway is "Network is unreachable"), -ENOMEM.  Since FLOWSDN_0.2. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_gateway_route(bool add, const struct flowsdn_prefix *dst,
							   const struct flowsdn_addr *gw, struct flowsdn_diag *diag);

/* A unicast route of the main table. */
struct flowsdn_route {
	struct flowsdn_prefix dst;      /* 0.0.0.0/0, ::/0 for the default routes */
	struct flowsdn_addr gateway;    /* family 0: none (a directly connected route) */
	int ifindex;                    /* of the first next hop; 0: none */
	uint8_t protocol;               /* rtm_protocol: FLOWSDN_NETLINK_RTPROT for flowsdn's */
};

/* The unicast routes of the main table of the caller's netns, of @family
 * (FLOWSDN_AF_INET, FLOWSDN_AF_INET6, 0: both): *ret a malloc'd array of
 * *ret_n entries (NULL when none), freed with free().  -EINVAL,
 * -FLOWSDN_E_NL_SOCKET, -FLOWSDN_E_NL_ROUTE, -ENOMEM; outputs untouched on
 * failure.  Since FLOWSDN_0.2. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_route_list(int family, struct flowsdn_route **ret, size_t *ret_n,
							struct flowsdn_diag *diag);

/* Writes @value to the sysctl @key ("net.ipv4.ip_forward" or
 * "net/ipv4/ip_forward"; interface names containing '.' need the '/'
 * form) inside @netns_path (NULL: the caller's netns).  Only keys under
 * net. are accepted; no "..". */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_sysctl_write(const char *netns_path, const char *key, const char *value,
							  struct flowsdn_diag *diag);

/* Inode of the netns at @path (which must be a network namespace). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_netns_ino(const char *path, uint64_t *ret_ino);

/* Whether @name is a valid interface name: 1..15 bytes, each a printable
 * ASCII character other than space, '/' and ':' (0x21..0x7e), and not "."
 * or "..": the kernel's rule narrowed to printable ASCII.  The same rule
 * as flowsdn_cni_ifname_valid() and the interface half of
 * flowsdn_ipam_owner_valid(). */
FLOWSDN_API bool flowsdn_netlink_ifname_valid(const char *name);

/* Destroys (sock_diag SOCK_DESTROY) every @protocol (IPPROTO_TCP or
 * IPPROTO_UDP) socket of the calling thread's network namespace whose
 * peer is @peer:@port (AF_INET6 sockets with the IPv4-mapped peer too):
 * their owners get ECONNABORTED, so that clients of a removed service
 * backend reconnect.  *ret_count (may be NULL) says how many; sockets
 * that went away meanwhile are not counted.  Needs CAP_NET_ADMIN;
 * -EOPNOTSUPP when the kernel has no CONFIG_INET_DIAG_DESTROY,
 * -FLOWSDN_E_NL_SOCKET when no sock_diag socket can be opened. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_sock_destroy(const struct flowsdn_addr *peer, uint16_t port,
							  uint8_t protocol, size_t *ret_count);
/* flowsdn_netlink_sock_destroy() for the sockets of the network namespace
 * at @netns_path (an endpoint's: /proc/PID/ns/net, /var/run/netns/X),
 * whose processes reach services through the socket LB: a helper thread
 * enters it to open the sock_diag socket, the caller's thread stays where
 * it is.  @netns_ino (0: not checked) is the namespace's inode as the
 * caller recorded it (flowsdn_veth.netns_ino): when the namespace the
 * helper entered has another one — the /proc/PID path now names the
 * namespace of a process that reused the PID — nothing is searched and
 * -FLOWSDN_E_NL_MISMATCH is returned.  -FLOWSDN_E_NL_NETNS when
 * @netns_path is not a namespace; else as flowsdn_netlink_sock_destroy(). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_netlink_sock_destroy_netns(const char *netns_path, uint64_t netns_ino,
								const struct flowsdn_addr *peer, uint16_t port,
								uint8_t protocol, size_t *ret_count);

#ifdef __cplusplus
}
#endif

#endif
