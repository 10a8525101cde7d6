/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Endpoint links through rtnetlink with libnl-3 (<flowsdn/netlink.h>; the
 * design of the endpoint wiring and of the netns handling is described
 * there).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/neighbour.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>
#include <flowsdn/netlink.h>

#include "internal.h"
#include "names.h"

#define MAX_ADDRS 8

/* Logs a failure and adds it to @err (the first one is the cause). */
_printf_(2, 3) static void set_err(struct diag *err, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pr_warn("%s", buf);
	diag_add_text(err, DIAG_ERROR, "", "netlink", NULL, "%s", buf);
}

/* libnl's -NLE_* to -errno (the kernel's errno is not kept by libnl). */
static int nlerr(int e)
{
	switch (e < 0 ? -e : e) {
	case 0:
		return 0;
	case NLE_EXIST:
		return -EEXIST;
	case NLE_NODEV:
		return -ENODEV;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_RANGE:
		return -ERANGE;
	case NLE_NOADDR:
		return -EADDRNOTAVAIL;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_INVAL:
		return -EINVAL;
	}
	return -EIO;
}

_Static_assert(FLOWSDN_IFNAMSIZ == NAMES_IFNAME_MAX + 1, "one interface name limit");

FLOWSDN_API bool flowsdn_netlink_ifname_valid(const char *name)
{
	return names_ifname_valid(name);
}

static struct nl_sock *nl_open(void)
{
	struct nl_sock *sk = nl_socket_alloc();

	if (!sk)
		return NULL;
	if (nl_connect(sk, NETLINK_ROUTE) < 0) {
		nl_socket_free(sk);
		return NULL;
	}
	/* libnl opens without SOCK_CLOEXEC: set it before any exec can happen. */
	fcntl(nl_socket_get_fd(sk), F_SETFD, FD_CLOEXEC);
	return sk;
}

static void nl_closep(struct nl_sock **sk)
{
	if (*sk)
		nl_socket_free(*sk);
}
#define _cleanup_nl_ _cleanup_(nl_closep)

/* Opens @path and checks that it is a network namespace.  The path comes
 * from outside (a runtime, a state file): it is opened O_PATH first, which
 * never blocks (a FIFO, a device) and has no side effect, and only an nsfs
 * file is then opened for real. */
static int netns_open(const char *path, struct diag *err)
{
	char proc[64];
	struct statfs sfs;
	struct stat st;
	int pfd, fd, type;

	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		set_err(err, "netns %s: %s", path, strerror(errno));
		return -FLOWSDN_E_NL_NETNS;
	}
	if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode) || fstatfs(pfd, &sfs) < 0 ||
	    (unsigned long)sfs.f_type != (unsigned long)NSFS_MAGIC) {
		set_err(err, "netns %s: not a namespace file", path);
		close(pfd);
		return -FLOWSDN_E_NL_NETNS;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	close(pfd);
	if (fd < 0) {
		set_err(err, "netns %s: %s", path, strerror(errno));
		return -FLOWSDN_E_NL_NETNS;
	}
	type = ioctl(fd, NS_GET_NSTYPE);
	if (type != CLONE_NEWNET) {
		set_err(err, "netns %s: not a network namespace", path);
		close(fd);
		return -FLOWSDN_E_NL_NETNS;
	}
	return fd;
}

FLOWSDN_API int flowsdn_netlink_netns_ino(const char *path, uint64_t *ret_ino)
{
	struct stat st;
	int fd, r = 0;

	if (!path || !ret_ino)
		return -EINVAL;
	fd = netns_open(path, NULL);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else
		*ret_ino = (uint64_t)st.st_ino;
	close(fd);
	return r;
}

/*
 * Runs @fn(@arg) in a helper thread that entered the netns @netns_fd.
 * Namespaces are per thread: the caller's thread is not moved, and the
 * helper's namespace ends with it.  Returns fn's result.
 */
struct netns_call {
	int netns_fd;
	int (*fn)(void *arg);
	void *arg;
	int result;
};

static void *netns_thread(void *p)
{
	struct netns_call *c = p;

	if (setns(c->netns_fd, CLONE_NEWNET) < 0)
		c->result = -FLOWSDN_E_NL_NETNS;
	else
		c->result = c->fn(c->arg);
	return NULL;
}

static int run_in_netns(int netns_fd, int (*fn)(void *), void *arg)
{
	struct netns_call c = { .netns_fd = netns_fd, .fn = fn, .arg = arg, .result = -EIO };
	pthread_t t;
	int r;

	r = pthread_create(&t, NULL, netns_thread, &c);
	if (r != 0)
		return -r;
	pthread_join(t, NULL);
	return c.result;
}

/* run_in_netns() for the netns at @path (checked by netns_open()). */
int flowsdn__netns_run_at(const char *path, struct diag *err, int (*fn)(void *), void *arg)
{
	int fd = netns_open(path, err), r;

	if (fd < 0)
		return fd;
	r = run_in_netns(fd, fn, arg);
	close(fd);
	return r;
}

/* ------------------------------------------------------------ sysctl */

/* Writes @value into /proc/sys/@key of the calling thread's netns. */
static int sysctl_write_here(const char *key, const char *value, struct diag *err)
{
	char path[PATH_MAX];
	size_t len = strlen(value);
	int n, fd, r = 0;

	n = snprintf(path, sizeof(path), "/proc/sys/%s", key);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	/* Dotted form: dots are separators (interface names with a dot need
	 * the slash form, where only slashes separate). */
	if (!strchr(key, '/'))
		for (char *p = path + strlen("/proc/sys/"); *p; p++)
			if (*p == '.')
				*p = '/';
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		set_err(err, "sysctl %s: %s", key, strerror(errno));
		return r == -ENOENT ? -ENOENT : -FLOWSDN_E_NL_SYSCTL;
	}
	if (write(fd, value, len) != (ssize_t)len) {
		set_err(err, "sysctl %s=%s: %s", key, value, strerror(errno));
		r = -FLOWSDN_E_NL_SYSCTL;
	}
	close(fd);
	return r;
}

static bool sysctl_key_valid(const char *key)
{
	size_t len;

	if (!key || strncmp(key, "net", 3) != 0 || (key[3] != '.' && key[3] != '/'))
		return false;
	len = strlen(key);
	if (len > 200 || strstr(key, ".."))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		if (c <= ' ' || c >= 0x7f)
			return false;
	}
	return true;
}

struct sysctl_args {
	const char *key, *value;
	struct diag *err;
};

static int sysctl_cb(void *p)
{
	struct sysctl_args *a = p;

	return sysctl_write_here(a->key, a->value, a->err);
}

FLOWSDN_API int flowsdn_netlink_sysctl_write(const char *netns_path, const char *key, const char *value,
					     struct flowsdn_diag *diag)
{
	struct diag *err = flowsdn__diag(diag);
	struct sysctl_args a = { key, value, err };

	diag_begin(err, 0);
	if (!sysctl_key_valid(key) || !value || strlen(value) > 64)
		return -EINVAL;
	if (!netns_path)
		return sysctl_write_here(key, value, err);
	return flowsdn__netns_run_at(netns_path, err, sysctl_cb, &a);
}

/* ------------------------------------------------------------ links */

static int link_get(struct nl_sock *sk, int ifindex, const char *name, struct rtnl_link **ret)
{
	int r = rtnl_link_get_kernel(sk, ifindex, name, ret);

	return r < 0 ? nlerr(r) : 0;
}

static void link_mac(struct rtnl_link *l, uint8_t mac[6])
{
	struct nl_addr *a = rtnl_link_get_addr(l);

	memset(mac, 0, 6);
	if (a && nl_addr_get_len(a) == 6)
		memcpy(mac, nl_addr_get_binary_addr(a), 6);
}

static int link_set_up(struct nl_sock *sk, struct rtnl_link *l, bool up)
{
	struct rtnl_link *change = rtnl_link_alloc();
	int r;

	if (!change)
		return -ENOMEM;
	if (up)
		rtnl_link_set_flags(change, IFF_UP);
	else
		rtnl_link_unset_flags(change, IFF_UP);
	r = rtnl_link_change(sk, l, change, 0);
	rtnl_link_put(change);
	return nlerr(r);
}

struct link_up_args {
	const char *ifname;
	bool up;
	struct diag *err;
};

static int link_up_cb(void *p)
{
	struct link_up_args *a = p;
	_cleanup_nl_ struct nl_sock *sk = nl_open();
	struct rtnl_link *l = NULL;
	int r;

	if (!sk) {
		set_err(a->err, "netlink socket: %s", strerror(errno));
		return -FLOWSDN_E_NL_SOCKET;
	}
	r = link_get(sk, 0, a->ifname, &l);
	if (r < 0) {
		set_err(a->err, "interface %s: %s", a->ifname, strerror(-r));
		return r == -ENODEV || r == -ENOENT ? -FLOWSDN_E_NL_NOT_FOUND : r;
	}
	r = link_set_up(sk, l, a->up);
	if (r < 0) {
		set_err(a->err, "set %s %s: %s", a->ifname, a->up ? "up" : "down", strerror(-r));
		r = -FLOWSDN_E_NL_LINK;
	}
	rtnl_link_put(l);
	return r;
}

FLOWSDN_API int flowsdn_netlink_link_set_up(const char *netns_path, const char *ifname, bool up,
					    struct flowsdn_diag *diag)
{
	struct diag *err = flowsdn__diag(diag);
	struct link_up_args a = { ifname, up, err };

	diag_begin(err, 0);
	if (!flowsdn_netlink_ifname_valid(ifname))
		return -EINVAL;
	if (!netns_path)
		return link_up_cb(&a);
	return flowsdn__netns_run_at(netns_path, err, link_up_cb, &a);
}

struct link_get_args {
	const char *ifname;
	int ifindex;
	uint8_t mac[6];
};

static int link_get_cb(void *p)
{
	struct link_get_args *a = p;
	_cleanup_nl_ struct nl_sock *sk = nl_open();
	struct rtnl_link *l = NULL;
	int r;

	if (!sk)
		return -FLOWSDN_E_NL_SOCKET;
	r = link_get(sk, 0, a->ifname, &l);
	if (r < 0)
		return r == -ENODEV || r == -ENOENT ? -FLOWSDN_E_NL_NOT_FOUND : r;
	a->ifindex = rtnl_link_get_ifindex(l);
	link_mac(l, a->mac);
	rtnl_link_put(l);
	return 0;
}

FLOWSDN_API int flowsdn_netlink_link_get(const char *netns_path, const char *ifname, int *ret_ifindex,
					 uint8_t ret_mac[6])
{
	struct link_get_args a = { .ifname = ifname };
	int r;

	if (!flowsdn_netlink_ifname_valid(ifname))
		return -EINVAL;
	r = netns_path ? flowsdn__netns_run_at(netns_path, NULL, link_get_cb, &a) : link_get_cb(&a);
	if (r < 0)
		return r;
	if (ret_ifindex)
		*ret_ifindex = a.ifindex;
	if (ret_mac)
		memcpy(ret_mac, a.mac, 6);
	return 0;
}

/* ------------------------------------------------------------ addresses, routes */

static struct nl_addr *nl_addr_of(const struct flowsdn_addr *a, unsigned int prefixlen)
{
	struct nl_addr *n;

	if (a->family == FLOWSDN_AF_INET)
		n = nl_addr_build(AF_INET, a->bytes, 4);
	else
		n = nl_addr_build(AF_INET6, a->bytes, 16);
	if (n)
		nl_addr_set_prefixlen(n, (int)prefixlen);
	return n;
}

static int addr_add(struct nl_sock *sk, int ifindex, const struct flowsdn_prefix *p)
{
	struct rtnl_addr *ra = rtnl_addr_alloc();
	struct nl_addr *local = nl_addr_of(&p->addr, p->len);
	int r = -ENOMEM;

	if (!ra || !local)
		goto out;
	rtnl_addr_set_ifindex(ra, ifindex);
	rtnl_addr_set_family(ra, p->addr.family == FLOWSDN_AF_INET ? AF_INET : AF_INET6);
	r = nlerr(rtnl_addr_set_local(ra, local));
	if (r < 0)
		goto out;
	rtnl_addr_set_prefixlen(ra, p->len);
	if (p->addr.family == FLOWSDN_AF_INET6)
		rtnl_addr_set_flags(ra, IFA_F_NODAD);
	r = nlerr(rtnl_addr_add(sk, ra, 0));
out:
	nl_addr_put(local);
	rtnl_addr_put(ra);
	return r;
}

/*
 * Adds or deletes the route @dst/@dst_len via @gw (may be NULL: a link
 * route) on @ifindex in the main table.
 */
/* One route in the main table: add with @nl_flags (NLM_F_*) or delete;
 * @protocol its rtm_protocol (the kernel matches it on delete); @ifindex
 * 0 lets the kernel resolve @gw's interface. */
static int route_msg(struct nl_sock *sk, bool add, int nl_flags, uint8_t protocol, int family,
		     const struct flowsdn_addr *dst, unsigned int dst_len, const struct flowsdn_addr *gw, int ifindex)
{
	struct rtnl_route *rt = rtnl_route_alloc();
	struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
	struct nl_addr *d = NULL, *g = NULL;
	struct flowsdn_addr zero = { .family = (uint8_t)family };
	int r = -ENOMEM;

	if (!rt || !nh)
		goto out;
	d = nl_addr_of(dst ? dst : &zero, dst_len);
	if (!d)
		goto out;
	rtnl_route_set_family(rt, family == FLOWSDN_AF_INET ? AF_INET : AF_INET6);
	rtnl_route_set_table(rt, RT_TABLE_MAIN);
	rtnl_route_set_protocol(rt, protocol);
	rtnl_route_set_scope(rt, gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK);
	r = nlerr(rtnl_route_set_dst(rt, d));
	if (r < 0)
		goto out;
	if (ifindex)
		rtnl_route_nh_set_ifindex(nh, ifindex);
	if (gw) {
		g = nl_addr_of(gw, flowsdn_addr_bits(gw));
		if (!g) {
			r = -ENOMEM;
			goto out;
		}
		rtnl_route_nh_set_gateway(nh, g);
	}
	rtnl_route_add_nexthop(rt, nh);
	nh = NULL; /* owned by the route now */
	if (add)
		r = nlerr(rtnl_route_add(sk, rt, nl_flags));
	else
		r = nlerr(rtnl_route_delete(sk, rt, 0));
out:
	if (nh)
		rtnl_route_nh_free(nh);
	nl_addr_put(d);
	nl_addr_put(g);
	if (rt)
		rtnl_route_put(rt);
	return r;
}

static int route_op(struct nl_sock *sk, bool add, int family, const struct flowsdn_addr *dst, unsigned int dst_len,
		    const struct flowsdn_addr *gw, int ifindex)
{
	return route_msg(sk, add, NLM_F_CREATE | NLM_F_REPLACE, RTPROT_STATIC, family, dst, dst_len, gw, ifindex);
}

static int neigh_add(struct nl_sock *sk, int ifindex, const struct flowsdn_addr *ip, const uint8_t mac[6])
{
	struct rtnl_neigh *n = rtnl_neigh_alloc();
	struct nl_addr *dst = nl_addr_of(ip, flowsdn_addr_bits(ip));
	struct nl_addr *ll = nl_addr_build(AF_LLC, mac, 6);
	int r = -ENOMEM;

	if (!n || !dst || !ll)
		goto out;
	rtnl_neigh_set_ifindex(n, ifindex);
	rtnl_neigh_set_family(n, ip->family == FLOWSDN_AF_INET ? AF_INET : AF_INET6);
	r = nlerr(rtnl_neigh_set_dst(n, dst));
	if (r < 0)
		goto out;
	rtnl_neigh_set_lladdr(n, ll);
	rtnl_neigh_set_state(n, NUD_PERMANENT);
	r = nlerr(rtnl_neigh_add(sk, n, NLM_F_CREATE | NLM_F_REPLACE));
out:
	nl_addr_put(dst);
	nl_addr_put(ll);
	if (n)
		rtnl_neigh_put(n);
	return r;
}

static int host_route(bool add, int ifindex, const struct flowsdn_addr *addr,
					   struct diag *err)
{
	_cleanup_nl_ struct nl_sock *sk = NULL;
	char buf[FLOWSDN_ADDR_STRLEN];
	int r;

	if (ifindex <= 0 || !addr || flowsdn_addr_bits(addr) == 0)
		return -EINVAL;
	sk = nl_open();
	if (!sk) {
		set_err(err, "netlink socket: %s", strerror(errno));
		return -FLOWSDN_E_NL_SOCKET;
	}
	r = route_op(sk, add, addr->family, addr, flowsdn_addr_bits(addr), NULL, ifindex);
	if (!add && (r == -ENOENT || r == -ESRCH || r == -ENODEV))
		r = 0;
	if (r < 0) {
		flowsdn_addr_format(addr, buf, sizeof(buf));
		set_err(err, "%s host route %s/%u dev #%d: %s", add ? "add" : "delete", buf, flowsdn_addr_bits(addr),
			ifindex, strerror(-r));
		r = r == -ENOMEM ? r : -FLOWSDN_E_NL_ROUTE;
	}
	return r;
}

FLOWSDN_API int flowsdn_netlink_host_route(bool add, int ifindex, const struct flowsdn_addr *addr,
					   struct flowsdn_diag *diag)
{
	struct diag *err = flowsdn__diag(diag);

	diag_begin(err, 0);
	return host_route(add, ifindex, addr, err);
}

/* ------------------------------------------------------------ endpoint setup */

struct inside_args {
	const struct flowsdn_veth_config *cfg;
	const uint8_t *host_mac;
	int ifindex;            /* out */
	uint8_t mac[6];         /* out */
	struct diag *err;
};

/* Inside the endpoint's netns (helper thread): sysctls, addresses, link
 * up, gateway routes and neighbours. */
static int configure_inside(void *p)
{
	struct inside_args *a = p;
	const struct flowsdn_veth_config *cfg = a->cfg;
	_cleanup_nl_ struct nl_sock *sk = nl_open();
	struct rtnl_link *l = NULL;
	bool has4 = false, has6 = false;
	struct flowsdn_addr gw4, gw6;
	char buf[FLOWSDN_PREFIX_STRLEN], key[128];
	int r;

	if (!sk) {
		set_err(a->err, "netlink socket in %s: %s", cfg->netns_path, strerror(errno));
		return -FLOWSDN_E_NL_SOCKET;
	}
	r = link_get(sk, 0, cfg->ifname, &l);
	if (r < 0) {
		set_err(a->err, "interface %s in %s: %s", cfg->ifname, cfg->netns_path, strerror(-r));
		return -FLOWSDN_E_NL_NOT_FOUND;
	}
	a->ifindex = rtnl_link_get_ifindex(l);
	link_mac(l, a->mac);
	for (size_t i = 0; i < cfg->n_addrs; i++) {
		has4 |= cfg->addrs[i].addr.family == FLOWSDN_AF_INET;
		has6 |= cfg->addrs[i].addr.family == FLOWSDN_AF_INET6;
	}
	if (has6) {
		/* The endpoint takes no router advertisements and does no DAD
		 * (its addresses are unique by IPAM); IPv6 must be on. */
		static const char *const knobs[][2] = {
			{ "disable_ipv6", "0" }, { "accept_ra", "0" }, { "accept_dad", "0" },
		};

		for (size_t i = 0; i < ARRAY_SIZE(knobs); i++) {
			snprintf(key, sizeof(key), "net/ipv6/conf/%s/%s", cfg->ifname, knobs[i][0]);
			r = sysctl_write_here(key, knobs[i][1], a->err);
			if (r < 0)
				goto out;
		}
	}
	r = link_set_up(sk, l, true);
	if (r < 0) {
		set_err(a->err, "set %s up in %s: %s", cfg->ifname, cfg->netns_path, strerror(-r));
		r = -FLOWSDN_E_NL_LINK;
		goto out;
	}
	for (size_t i = 0; i < cfg->n_addrs; i++) {
		r = addr_add(sk, a->ifindex, &cfg->addrs[i]);
		if (r < 0) {
			flowsdn_prefix_format(&cfg->addrs[i], buf, sizeof(buf));
			set_err(a->err, "add address %s on %s in %s: %s", buf, cfg->ifname, cfg->netns_path,
				strerror(-r));
			r = -FLOWSDN_E_NL_ADDR;
			goto out;
		}
	}
	if (has4) {
		if (flowsdn_addr_parse(FLOWSDN_GATEWAY_V4, strlen(FLOWSDN_GATEWAY_V4), &gw4) < 0) {
			r = -EINVAL;
			goto out;
		}
		r = neigh_add(sk, a->ifindex, &gw4, a->host_mac);
		if (r < 0) {
			set_err(a->err, "add neighbour %s on %s in %s: %s", FLOWSDN_GATEWAY_V4, cfg->ifname,
				cfg->netns_path, strerror(-r));
			r = -FLOWSDN_E_NL_NEIGH;
			goto out;
		}
		r = route_op(sk, true, FLOWSDN_AF_INET, &gw4, 32, NULL, a->ifindex);
		if (r == 0)
			r = route_op(sk, true, FLOWSDN_AF_INET, NULL, 0, &gw4, a->ifindex);
		if (r < 0) {
			set_err(a->err, "add IPv4 default route via %s on %s in %s: %s", FLOWSDN_GATEWAY_V4, cfg->ifname,
				cfg->netns_path, strerror(-r));
			r = -FLOWSDN_E_NL_ROUTE;
			goto out;
		}
	}
	if (has6) {
		if (flowsdn_addr_parse(FLOWSDN_GATEWAY_V6, strlen(FLOWSDN_GATEWAY_V6), &gw6) < 0) {
			r = -EINVAL;
			goto out;
		}
		r = neigh_add(sk, a->ifindex, &gw6, a->host_mac);
		if (r < 0) {
			set_err(a->err, "add neighbour %s on %s in %s: %s", FLOWSDN_GATEWAY_V6, cfg->ifname,
				cfg->netns_path, strerror(-r));
			r = -FLOWSDN_E_NL_NEIGH;
			goto out;
		}
		r = route_op(sk, true, FLOWSDN_AF_INET6, NULL, 0, &gw6, a->ifindex);
		if (r < 0) {
			set_err(a->err, "add IPv6 default route via %s on %s in %s: %s", FLOWSDN_GATEWAY_V6, cfg->ifname,
				cfg->netns_path, strerror(-r));
			r = -FLOWSDN_E_NL_ROUTE;
			goto out;
		}
	}
	r = 0;
out:
	rtnl_link_put(l);
	return r;
}

static int veth_config_valid(const struct flowsdn_veth_config *cfg, struct diag *err)
{
	if (!cfg || !OPTS_VALID(cfg, flowsdn_veth_config) || !cfg->netns_path) {
		set_err(err, "invalid veth configuration");
		return -EINVAL;
	}
	if (!flowsdn_netlink_ifname_valid(cfg->host_ifname) || !flowsdn_netlink_ifname_valid(cfg->ifname)) {
		set_err(err, "invalid interface name \"%s\"",
			flowsdn_netlink_ifname_valid(cfg->ifname) ? (cfg->host_ifname ? cfg->host_ifname : "")
								 : (cfg->ifname ? cfg->ifname : ""));
		return -FLOWSDN_E_NL_IFNAME;
	}
	if (cfg->mtu != 0 && (cfg->mtu < 68 || cfg->mtu > 65535)) {
		set_err(err, "MTU %u out of range 68..65535", cfg->mtu);
		return -EINVAL;
	}
	if (cfg->has_mac) {
		static const uint8_t zero[6];

		if ((cfg->mac[0] & 1) || memcmp(cfg->mac, zero, 6) == 0) {
			set_err(err, "MAC address must be unicast and not zero");
			return -EINVAL;
		}
	}
	if (cfg->n_addrs > MAX_ADDRS || (cfg->n_addrs && !cfg->addrs)) {
		set_err(err, "%zu addresses (at most %d)", cfg->n_addrs, MAX_ADDRS);
		return -EINVAL;
	}
	for (size_t i = 0; i < cfg->n_addrs; i++) {
		unsigned int bits = flowsdn_addr_bits(&cfg->addrs[i].addr);

		if (bits == 0 || cfg->addrs[i].len > bits) {
			set_err(err, "address %zu: bad family or prefix length", i);
			return -EINVAL;
		}
	}
	return 0;
}

FLOWSDN_API int flowsdn_netlink_veth_setup(const struct flowsdn_veth_config *cfg, struct flowsdn_veth *ret,
					   struct flowsdn_diag *diag)
{
	struct diag *err = flowsdn__diag(diag);
	_cleanup_nl_ struct nl_sock *sk = NULL;
	_cleanup_close_ int nsfd = -1;
	struct rtnl_link *veth = NULL, *peer = NULL, *host = NULL;
	struct nl_addr *mac = NULL;
	struct inside_args in = { .cfg = cfg, .err = err };
	struct flowsdn_veth out;
	struct stat st;
	bool created = false;
	char key[128];
	int r;

	diag_begin(err, 0);
	if (!ret)
		return -EINVAL;
	r = veth_config_valid(cfg, err);
	if (r < 0)
		return r;
	memset(&out, 0, sizeof(out));
	nsfd = netns_open(cfg->netns_path, err);
	if (nsfd < 0)
		return TAKE_FD(nsfd);
	if (fstat(nsfd, &st) < 0)
		return -errno;
	out.netns_ino = (uint64_t)st.st_ino;
	sk = nl_open();
	if (!sk) {
		set_err(err, "netlink socket: %s", strerror(errno));
		return -FLOWSDN_E_NL_SOCKET;
	}

	/* The pair, its peer created inside the netns under its final name:
	 * one request, so either both sides exist or neither. */
	veth = rtnl_link_veth_alloc();
	if (!veth) {
		r = -ENOMEM;
		goto out;
	}
	peer = rtnl_link_veth_get_peer(veth);
	rtnl_link_set_name(veth, cfg->host_ifname);
	rtnl_link_set_name(peer, cfg->ifname);
	rtnl_link_set_mtu(veth, cfg->mtu ? cfg->mtu : 1500);
	rtnl_link_set_mtu(peer, cfg->mtu ? cfg->mtu : 1500);
	rtnl_link_set_ns_fd(peer, nsfd);
	if (cfg->has_mac) {
		mac = nl_addr_build(AF_LLC, cfg->mac, 6);
		if (!mac) {
			r = -ENOMEM;
			goto out;
		}
		rtnl_link_set_addr(peer, mac);
	}
	r = nlerr(rtnl_link_add(sk, veth, NLM_F_CREATE | NLM_F_EXCL));
	if (r < 0) {
		if (r == -EEXIST) {
			bool host_taken = flowsdn_netlink_link_get(NULL, cfg->host_ifname, NULL, NULL) == 0;

			set_err(err, "create veth %s: interface name %s is taken%s", cfg->host_ifname,
				host_taken ? cfg->host_ifname : cfg->ifname,
				host_taken ? "" : " in the netns");
			r = -FLOWSDN_E_NL_EXISTS;
		} else {
			set_err(err, "create veth %s (peer %s in %s): %s", cfg->host_ifname, cfg->ifname, cfg->netns_path,
				strerror(-r));
			r = r == -ENOMEM ? r : -FLOWSDN_E_NL_LINK;
		}
		goto out;
	}
	created = true;

	r = link_get(sk, 0, cfg->host_ifname, &host);
	if (r < 0) {
		set_err(err, "veth %s vanished after creation: %s", cfg->host_ifname, strerror(-r));
		r = -FLOWSDN_E_NL_LINK;
		goto out;
	}
	out.host_ifindex = rtnl_link_get_ifindex(host);
	link_mac(host, out.host_mac);
	snprintf(out.host_ifname, sizeof(out.host_ifname), "%s", cfg->host_ifname);
	snprintf(out.ifname, sizeof(out.ifname), "%s", cfg->ifname);

	/* Host side: no router advertisements taken on it (IPv6 may be off). */
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_ra", cfg->host_ifname);
	r = sysctl_write_here(key, "0", err);
	if (r < 0 && r != -ENOENT)
		goto out;
	if (OPTS_GET(cfg, host_accept_local, false)) {
		snprintf(key, sizeof(key), "net/ipv4/conf/%s/accept_local", cfg->host_ifname);
		r = sysctl_write_here(key, "1", err);
		if (r < 0)
			goto out;
	}
	r = link_set_up(sk, host, true);
	if (r < 0) {
		set_err(err, "set %s up: %s", cfg->host_ifname, strerror(-r));
		r = -FLOWSDN_E_NL_LINK;
		goto out;
	}

	in.host_mac = out.host_mac;
	r = run_in_netns(nsfd, configure_inside, &in);
	if (r < 0)
		goto out;
	out.ifindex = in.ifindex;
	memcpy(out.mac, in.mac, 6);

	if (cfg->host_routes) {
		for (size_t i = 0; i < cfg->n_addrs; i++) {
			r = host_route(true, out.host_ifindex, &cfg->addrs[i].addr, err);
			if (r < 0)
				goto out;
		}
	}
	*ret = out;
	r = 0;
out:
	if (r < 0 && created) {
		/* Deleting the host side deletes the peer; host routes via it go too. */
		struct rtnl_link *del = rtnl_link_alloc();

		if (del) {
			rtnl_link_set_name(del, cfg->host_ifname);
			rtnl_link_delete(sk, del);
			rtnl_link_put(del);
		}
	}
	nl_addr_put(mac);
	if (host)
		rtnl_link_put(host);
	if (peer)
		rtnl_link_put(peer);
	if (veth)
		rtnl_link_put(veth);
	return r;
}

struct veth_delete_args {
	const char *ifname;
	struct diag *err;
};

/* Deletes the veth @a->ifname of the calling thread's netns. */
static int veth_delete_cb(void *p)
{
	struct veth_delete_args *a = p;
	_cleanup_nl_ struct nl_sock *sk = nl_open();
	struct rtnl_link *l = NULL;
	const char *type;
	int r;

	if (!sk) {
		set_err(a->err, "netlink socket: %s", strerror(errno));
		return -FLOWSDN_E_NL_SOCKET;
	}
	r = link_get(sk, 0, a->ifname, &l);
	if (r == -ENODEV || r == -ENOENT)
		return 0; /* already gone, and the pair with it */
	if (r < 0) {
		set_err(a->err, "interface %s: %s", a->ifname, strerror(-r));
		return r;
	}
	type = rtnl_link_get_type(l);
	if (!type || strcmp(type, "veth") != 0) {
		set_err(a->err, "interface %s is not a veth (%s): left alone", a->ifname, type ? type : "no type");
		r = -FLOWSDN_E_NL_MISMATCH;
	} else {
		r = nlerr(rtnl_link_delete(sk, l));
		if (r == -ENODEV || r == -ENOENT)
			r = 0;
		if (r < 0) {
			set_err(a->err, "delete %s: %s", a->ifname, strerror(-r));
			r = -FLOWSDN_E_NL_LINK;
		}
	}
	rtnl_link_put(l);
	return r;
}

FLOWSDN_API int flowsdn_netlink_veth_delete(const char *netns_path, const char *ifname, struct flowsdn_diag *diag)
{
	struct diag *err = flowsdn__diag(diag);
	struct veth_delete_args a = { ifname, err };

	diag_begin(err, 0);
	if (!netns_path || !flowsdn_netlink_ifname_valid(ifname))
		return -EINVAL;
	return flowsdn__netns_run_at(netns_path, err, veth_delete_cb, &a);
}

FLOWSDN_API int flowsdn_netlink_veth_teardown(const char *host_ifname, const struct flowsdn_addr *addrs, size_t n_addrs,
					      struct flowsdn_diag *diag)
{
	struct diag *err = flowsdn__diag(diag);
	_cleanup_nl_ struct nl_sock *sk = NULL;
	struct rtnl_link *l = NULL;
	int r, ifindex;

	diag_begin(err, 0);
	if (!flowsdn_netlink_ifname_valid(host_ifname) || (n_addrs && !addrs) || n_addrs > MAX_ADDRS)
		return -EINVAL;
	sk = nl_open();
	if (!sk) {
		set_err(err, "netlink socket: %s", strerror(errno));
		return -FLOWSDN_E_NL_SOCKET;
	}
	r = link_get(sk, 0, host_ifname, &l);
	if (r == -ENODEV || r == -ENOENT)
		return 0; /* already gone (with it, its routes) */
	if (r < 0) {
		set_err(err, "interface %s: %s", host_ifname, strerror(-r));
		return r;
	}
	ifindex = rtnl_link_get_ifindex(l);
	for (size_t i = 0; i < n_addrs; i++) {
		r = host_route(false, ifindex, &addrs[i], err);
		if (r < 0)
			goto out;
	}
	r = nlerr(rtnl_link_delete(sk, l));
	if (r == -ENODEV || r == -ENOENT)
		r = 0;
	if (r < 0) {
		set_err(err, "delete %s: %s", host_ifname, strerror(-r));
		r = -FLOWSDN_E_NL_LINK;
	}
out:
	rtnl_link_put(l);
	return r;
}

/* ------------------------------------------------------------ adoption check */

struct check_args {
	const struct flowsdn_endpoint_iface *iface;
	struct diag *err;
};

/* Every expected address is on the interface @ifindex, and a default
 * route of its family goes via its gateway (when given). */
static int check_addrs(struct nl_sock *sk, int ifindex, const struct flowsdn_endpoint_iface *f,
		       struct diag *err)
{
	struct nl_cache *addrs = NULL, *routes = NULL;
	int r = 0;

	if (rtnl_addr_alloc_cache(sk, &addrs) < 0 || rtnl_route_alloc_cache(sk, AF_UNSPEC, 0, &routes) < 0) {
		r = -FLOWSDN_E_NL_SOCKET;
		goto out;
	}
	for (size_t i = 0; i < f->n_addrs && r == 0; i++) {
		const struct flowsdn_addr *want = &f->addrs[i];
		const struct flowsdn_addr *gw = OPTS_GET(f, gateways, NULL) ? &f->gateways[i] : NULL;
		size_t alen = want->family == FLOWSDN_AF_INET ? 4 : 16;
		int fam = want->family == FLOWSDN_AF_INET ? AF_INET : AF_INET6;
		char text[FLOWSDN_ADDR_STRLEN];
		bool found = false;

		for (struct nl_object *o = nl_cache_get_first(addrs); o && !found; o = nl_cache_get_next(o)) {
			struct rtnl_addr *ra = (struct rtnl_addr *)o;
			struct nl_addr *local = rtnl_addr_get_local(ra);

			found = rtnl_addr_get_ifindex(ra) == ifindex && rtnl_addr_get_family(ra) == fam && local &&
				nl_addr_get_len(local) == alen && !memcmp(nl_addr_get_binary_addr(local), want->bytes, alen);
		}
		flowsdn_addr_format(want, text, sizeof(text));
		if (!found) {
			set_err(err, "%s in %s lacks address %s", f->ifname, f->netns_path, text);
			r = -FLOWSDN_E_NL_MISMATCH;
			break;
		}
		if (!gw)
			continue;
		found = false;
		for (struct nl_object *o = nl_cache_get_first(routes); o && !found; o = nl_cache_get_next(o)) {
			struct rtnl_route *rt = (struct rtnl_route *)o;
			struct nl_addr *dst = rtnl_route_get_dst(rt);
			struct rtnl_nexthop *nh;
			struct nl_addr *via;

			if (rtnl_route_get_family(rt) != fam || rtnl_route_get_table(rt) != RT_TABLE_MAIN ||
			    (dst && nl_addr_get_prefixlen(dst) != 0) || rtnl_route_get_nnexthops(rt) < 1)
				continue;
			nh = rtnl_route_nexthop_n(rt, 0);
			via = rtnl_route_nh_get_gateway(nh);
			found = via && nl_addr_get_len(via) == alen && !memcmp(nl_addr_get_binary_addr(via), gw->bytes, alen);
		}
		if (!found) {
			set_err(err, "%s has no default route via its gateway for %s", f->netns_path, text);
			r = -FLOWSDN_E_NL_MISMATCH;
		}
	}
out:
	nl_cache_free(addrs);
	nl_cache_free(routes);
	return r;
}

static int check_inside(void *p)
{
	struct check_args *a = p;
	const struct flowsdn_endpoint_iface *f = a->iface;
	_cleanup_nl_ struct nl_sock *sk = nl_open();
	struct rtnl_link *l = NULL;
	uint8_t mac[6];
	int r;

	if (!sk)
		return -FLOWSDN_E_NL_SOCKET;
	r = link_get(sk, 0, f->ifname, &l);
	if (r < 0) {
		set_err(a->err, "interface %s not found in %s", f->ifname, f->netns_path);
		return -FLOWSDN_E_NL_NOT_FOUND;
	}
	link_mac(l, mac);
	r = 0;
	if (memcmp(mac, f->mac, 6) != 0) {
		set_err(a->err, "%s in %s has another MAC", f->ifname, f->netns_path);
		r = -FLOWSDN_E_NL_MISMATCH;
	} else if (rtnl_link_get_link(l) != f->host_ifindex) {
		set_err(a->err, "%s in %s is not the peer of ifindex %d (peer %d)", f->ifname, f->netns_path,
			f->host_ifindex, rtnl_link_get_link(l));
		r = -FLOWSDN_E_NL_MISMATCH;
	}
	if (r == 0 && OPTS_GET(f, n_addrs, 0) && OPTS_GET(f, addrs, NULL))
		r = check_addrs(sk, rtnl_link_get_ifindex(l), f, a->err);
	rtnl_link_put(l);
	return r;
}

FLOWSDN_API int flowsdn_netlink_endpoint_check(const struct flowsdn_endpoint_iface *iface, struct flowsdn_diag *diag)
{
	struct diag *err = flowsdn__diag(diag);
	_cleanup_nl_ struct nl_sock *sk = NULL;
	_cleanup_close_ int nsfd = -1;
	struct check_args a = { iface, err };
	struct rtnl_link *l = NULL;
	const char *type;
	uint8_t mac[6];
	struct stat st;
	int r;

	diag_begin(err, 0);
	if (!iface || !OPTS_VALID(iface, flowsdn_endpoint_iface) || iface->host_ifindex <= 0 ||
	    !flowsdn_netlink_ifname_valid(iface->host_ifname) || !flowsdn_netlink_ifname_valid(iface->ifname) ||
	    !iface->netns_path)
		return -EINVAL;
	sk = nl_open();
	if (!sk)
		return -FLOWSDN_E_NL_SOCKET;
	r = link_get(sk, iface->host_ifindex, NULL, &l);
	if (r < 0) {
		set_err(err, "host interface #%d (%s) is gone", iface->host_ifindex, iface->host_ifname);
		return -FLOWSDN_E_NL_NOT_FOUND;
	}
	link_mac(l, mac);
	type = rtnl_link_get_type(l);
	if (strcmp(rtnl_link_get_name(l), iface->host_ifname) != 0) {
		set_err(err, "host interface #%d is now %s, not %s", iface->host_ifindex, rtnl_link_get_name(l),
			iface->host_ifname);
		r = -FLOWSDN_E_NL_MISMATCH;
	} else if (memcmp(mac, iface->host_mac, 6) != 0) {
		set_err(err, "host interface %s has another MAC", iface->host_ifname);
		r = -FLOWSDN_E_NL_MISMATCH;
	} else if (!type || strcmp(type, "veth") != 0) {
		set_err(err, "host interface %s is not a veth", iface->host_ifname);
		r = -FLOWSDN_E_NL_MISMATCH;
	}
	rtnl_link_put(l);
	if (r < 0)
		return r;
	nsfd = netns_open(iface->netns_path, err);
	if (nsfd < 0)
		return TAKE_FD(nsfd);
	if (fstat(nsfd, &st) < 0)
		return -errno;
	if (iface->netns_ino && (uint64_t)st.st_ino != iface->netns_ino) {
		set_err(err, "%s is another network namespace now", iface->netns_path);
		return -FLOWSDN_E_NL_MISMATCH;
	}
	return run_in_netns(nsfd, check_inside, &a);
}


/* ------------------------------------------------------------ gateway routes */

/* @a (an nl_addr of AF_INET/AF_INET6) as a flowsdn address; false otherwise. */
static bool addr_from_nl(struct nl_addr *a, struct flowsdn_addr *ret)
{
	int fam;

	if (!a)
		return false;
	fam = nl_addr_get_family(a);
	if ((fam != AF_INET || nl_addr_get_len(a) != 4) && (fam != AF_INET6 || nl_addr_get_len(a) != 16))
		return false;
	return flowsdn_addr_from_bytes(fam == AF_INET ? FLOWSDN_AF_INET : FLOWSDN_AF_INET6, nl_addr_get_binary_addr(a),
				       ret) == 0;
}

/* One route of protocol FLOWSDN_NETLINK_RTPROT: @dst via @gw, the
 * interface the kernel resolves for @gw. */
static int gw_route_op(struct nl_sock *sk, bool add, int nl_flags, const struct flowsdn_prefix *dst,
		       const struct flowsdn_addr *gw)
{
	return route_msg(sk, add, nl_flags, FLOWSDN_NETLINK_RTPROT, dst->addr.family, &dst->addr, dst->len, gw, 0);
}

struct route_walk {
	struct flowsdn_route *v;
	size_t n, cap;
	int family;
	int err;
};

static void route_walk_one(struct nl_object *o, void *arg)
{
	struct rtnl_route *rt = (struct rtnl_route *)o;
	struct route_walk *w = arg;
	struct flowsdn_route e = { 0 };
	struct rtnl_nexthop *nh;

	if (w->err || rtnl_route_get_table(rt) != RT_TABLE_MAIN || rtnl_route_get_type(rt) != RTN_UNICAST)
		return;
	if (!addr_from_nl(rtnl_route_get_dst(rt), &e.dst.addr)) {
		/* A default route's destination has no bytes in libnl. */
		int fam = rtnl_route_get_family(rt);

		if (fam != AF_INET && fam != AF_INET6)
			return;
		e.dst.addr.family = fam == AF_INET ? FLOWSDN_AF_INET : FLOWSDN_AF_INET6;
	}
	if (w->family && e.dst.addr.family != w->family)
		return;
	e.dst.len = (uint8_t)nl_addr_get_prefixlen(rtnl_route_get_dst(rt));
	e.protocol = rtnl_route_get_protocol(rt);
	nh = rtnl_route_nexthop_n(rt, 0);
	if (nh) {
		e.ifindex = rtnl_route_nh_get_ifindex(nh);
		(void)addr_from_nl(rtnl_route_nh_get_gateway(nh), &e.gateway);
	}
	if (w->n == w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 32;
		struct flowsdn_route *nv = realloc(w->v, nc * sizeof(*nv));

		if (!nv) {
			w->err = -ENOMEM;
			return;
		}
		w->v = nv;
		w->cap = nc;
	}
	w->v[w->n++] = e;
}

static int route_list(struct nl_sock *sk, int family, struct flowsdn_route **ret, size_t *ret_n)
{
	struct nl_cache *cache = NULL;
	struct route_walk w = { .family = family };
	int r;

	r = nlerr(rtnl_route_alloc_cache(sk, family == FLOWSDN_AF_INET ? AF_INET
					     : family == FLOWSDN_AF_INET6 ? AF_INET6 : AF_UNSPEC, 0, &cache));
	if (r < 0)
		return r;
	nl_cache_foreach(cache, route_walk_one, &w);
	nl_cache_free(cache);
	if (w.err) {
		free(w.v);
		return w.err;
	}
	*ret = w.v;
	*ret_n = w.n;
	return 0;
}

FLOWSDN_API int flowsdn_netlink_route_list(int family, struct flowsdn_route **ret, size_t *ret_n,
					   struct flowsdn_diag *diag)
{
	struct diag *err = flowsdn__diag(diag);
	_cleanup_nl_ struct nl_sock *sk = NULL;
	int r;

	diag_begin(err, 0);
	if (!ret || !ret_n || (family && family != FLOWSDN_AF_INET && family != FLOWSDN_AF_INET6))
		return -EINVAL;
	sk = nl_open();
	if (!sk) {
		set_err(err, "netlink socket: %s", strerror(errno));
		return -FLOWSDN_E_NL_SOCKET;
	}
	r = route_list(sk, family, ret, ret_n);
	if (r < 0 && r != -ENOMEM) {
		set_err(err, "route dump: %s", strerror(-r));
		r = -FLOWSDN_E_NL_ROUTE;
	}
	return r;
}

FLOWSDN_API int flowsdn_netlink_gateway_route(bool add, const struct flowsdn_prefix *dst,
					      const struct flowsdn_addr *gw, struct flowsdn_diag *diag)
{
	struct diag *err = flowsdn__diag(diag);
	_cleanup_nl_ struct nl_sock *sk = NULL;
	char dbuf[FLOWSDN_PREFIX_STRLEN], gbuf[FLOWSDN_ADDR_STRLEN];
	int r;

	diag_begin(err, 0);
	if (!dst || !gw || flowsdn_addr_bits(&dst->addr) == 0 || dst->addr.family != gw->family ||
	    dst->len > flowsdn_addr_bits(&dst->addr))
		return -EINVAL;
	sk = nl_open();
	if (!sk) {
		set_err(err, "netlink socket: %s", strerror(errno));
		return -FLOWSDN_E_NL_SOCKET;
	}
	flowsdn_prefix_format(dst, dbuf, sizeof(dbuf));
	flowsdn_addr_format(gw, gbuf, sizeof(gbuf));
	if (!add) {
		/* The kernel matches the protocol: a route not ours stays. */
		r = gw_route_op(sk, false, 0, dst, gw);
		if (r == -ENOENT || r == -ESRCH)
			r = 0;
	} else {
		r = gw_route_op(sk, true, NLM_F_CREATE | NLM_F_EXCL, dst, gw);
		if (r == -EEXIST) {
			struct flowsdn_route *v = NULL;
			size_t n = 0;
			bool ours = false, foreign = false;

			/* Replaced only when every route to @dst is flowsdn's:
			 * whatever order the dump lists several in. */
			r = route_list(sk, dst->addr.family, &v, &n);
			for (size_t i = 0; r == 0 && i < n; i++)
				if (v[i].dst.len == dst->len && flowsdn_addr_equal(&v[i].dst.addr, &dst->addr)) {
					if (v[i].protocol == FLOWSDN_NETLINK_RTPROT)
						ours = true;
					else
						foreign = true;
				}
			free(v);
			ours = ours && !foreign;
			if (r == 0 && !ours) {
				set_err(err, "route %s exists and is not flowsdn's", dbuf);
				return -EEXIST;
			}
			if (r == 0)
				r = gw_route_op(sk, true, NLM_F_CREATE | NLM_F_REPLACE, dst, gw);
		}
	}
	if (r < 0) {
		set_err(err, "%s route %s via %s: %s", add ? "add" : "delete", dbuf, gbuf, strerror(-r));
		r = r == -ENOMEM ? r : -FLOWSDN_E_NL_ROUTE;
	}
	return r;
}
