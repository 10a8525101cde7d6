/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The node agent: endpoints (IPAM + veth + datapath), their persisted
 * state, restore and adoption after a restart, the delete queue. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <flowsdn/agent.h>
#include <flowsdn/cni.h>
#include <flowsdn/datapath.h>
#include <flowsdn/ipam.h>
#include <flowsdn/netlink.h>

#include "agent-internal.h"
#include "internal.h"
#include "jsonutil.h"

#define MAX_STATE (16u << 20)

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void endpoint_to_iface(const struct agent_endpoint *e, struct flowsdn_endpoint_iface *f)
{
	memset(f, 0, sizeof(*f));
	f->sz = sizeof(*f);
	f->host_ifindex = e->host_ifindex;
	f->host_ifname = e->host_ifname;
	memcpy(f->host_mac, e->host_mac, 6);
	f->netns_path = e->netns;
	f->netns_ino = e->netns_ino;
	f->ifname = e->ifname;
	memcpy(f->mac, e->mac, 6);
}

static void endpoint_to_dp(const struct agent_endpoint *e, struct flowsdn_endpoint *d)
{
	memset(d, 0, sizeof(*d));
	d->id = e->id;
	d->identity = FLOWSDN_IDENTITY_INIT;
	d->host_ifindex = e->host_ifindex;
	memcpy(d->mac, e->mac, 6);
	memcpy(d->host_mac, e->host_mac, 6);
	d->n_addrs = e->n_addrs;
	for (size_t i = 0; i < e->n_addrs; i++)
		d->addrs[i] = e->addrs[i];
}

static void fmt_mac(const uint8_t m[6], char buf[18])
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static int gateway_of(const struct flowsdn_addr *a, struct flowsdn_addr *gw)
{
	const char *g = a->family == FLOWSDN_AF_INET ? FLOWSDN_GATEWAY_V4 : FLOWSDN_GATEWAY_V6;

	return flowsdn_addr_parse(g, strlen(g), gw) < 0 ? -EINVAL : 0;
}

/* The JSON of one endpoint: the API's object and the state file's. */
void flowsdn__agent_endpoint_gen(yajl_gen g, const struct agent_endpoint *e)
{
	char mac[18];

	yajl_gen_map_open(g);
	jgen_ki(g, "id", e->id);
	jgen_kv(g, "containerID", e->container_id);
	jgen_kv(g, "interface", e->ifname);
	jgen_kv(g, "netns", e->netns);
	jgen_ki(g, "netnsInode", (long long)e->netns_ino);
	jgen_kv(g, "hostInterface", e->host_ifname);
	jgen_ki(g, "hostIfindex", e->host_ifindex);
	fmt_mac(e->mac, mac);
	jgen_kv(g, "mac", mac);
	fmt_mac(e->host_mac, mac);
	jgen_kv(g, "hostMac", mac);
	jgen_ki(g, "mtu", e->mtu);
	jgen_ki(g, "created", (long long)e->created);
	jgen_str(g, "addresses");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < e->n_addrs; i++) {
		char a[FLOWSDN_ADDR_STRLEN], cidr[FLOWSDN_PREFIX_STRLEN];
		struct flowsdn_addr gw;

		if (flowsdn_addr_format(&e->addrs[i], a, sizeof(a)) < 0 || gateway_of(&e->addrs[i], &gw) < 0)
			continue;
		snprintf(cidr, sizeof(cidr), "%s/%u", a, flowsdn_addr_bits(&e->addrs[i]));
		yajl_gen_map_open(g);
		jgen_kv(g, "address", cidr);
		flowsdn_addr_format(&gw, a, sizeof(a));
		jgen_kv(g, "gateway", a);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];

	if (!s || strlen(s) != 17 || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static int copy_str(char *dst, size_t size, const char *src)
{
	if (!src || strlen(src) >= size)
		return -1;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/* Reads one endpoint of the state file. */
static int endpoint_from_state(const struct json_value *o, struct agent_endpoint *e)
{
	const struct json_value *addrs = json_get(o, "addresses");
	uint64_t id, ino, mtu, created;
	int64_t ifindex;

	memset(e, 0, sizeof(*e));
	if (json_get_uint64(json_get(o, "id"), &id) < 0 || id == 0 || id > UINT32_MAX ||
	    json_get_uint64(json_get(o, "netnsInode"), &ino) < 0 ||
	    json_get_uint64(json_get(o, "mtu"), &mtu) < 0 || mtu > 65535 ||
	    json_get_uint64(json_get(o, "created"), &created) < 0 ||
	    json_get_int64(json_get(o, "hostIfindex"), &ifindex) < 0 || ifindex <= 0 || ifindex > INT32_MAX ||
	    copy_str(e->container_id, sizeof(e->container_id), jstr(json_get(o, "containerID"))) < 0 ||
	    copy_str(e->ifname, sizeof(e->ifname), jstr(json_get(o, "interface"))) < 0 ||
	    copy_str(e->netns, sizeof(e->netns), jstr(json_get(o, "netns"))) < 0 ||
	    copy_str(e->host_ifname, sizeof(e->host_ifname), jstr(json_get(o, "hostInterface"))) < 0 ||
	    parse_mac(jstr(json_get(o, "mac")), e->mac) < 0 || parse_mac(jstr(json_get(o, "hostMac")), e->host_mac) < 0 ||
	    !jis(addrs, JSON_ARRAY) || addrs->u.array.n > 2)
		return -FLOWSDN_E_AGENT_STATE;
	e->id = (uint32_t)id;
	e->netns_ino = ino;
	e->mtu = (unsigned int)mtu;
	e->created = (time_t)created;
	e->host_ifindex = (int)ifindex;
	for (size_t i = 0; i < addrs->u.array.n; i++) {
		const char *cidr = jstr(json_get(addrs->u.array.items[i], "address"));
		const char *slash = cidr ? strchr(cidr, '/') : NULL;

		if (!slash || flowsdn_addr_parse(cidr, (size_t)(slash - cidr), &e->addrs[i]) < 0)
			return -FLOWSDN_E_AGENT_STATE;
		e->n_addrs++;
	}
	return 0;
}

/* Writes every endpoint to <state>/endpoints.json (atomically). */
static int state_save(struct flowsdn_agent *a)
{
	_cleanup_free_ char *json = NULL;
	size_t len;
	yajl_gen g;
	int err;

	g = jgen_new();
	if (!g)
		return -ENOMEM;
	yajl_gen_map_open(g);
	jgen_ki(g, "version", 1);
	jgen_str(g, "endpoints");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < a->n_eps; i++)
		flowsdn__agent_endpoint_gen(g, a->eps[i]);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	err = jgen_take(g, &json, &len);
	yajl_gen_free(g);
	if (err < 0)
		return err;
	err = util_write_file_atomic(a->state_path, json, len, 0600);
	if (err < 0)
		pr_err("agent: saving %s: %s", a->state_path, strerror(-err));
	return err;
}

static int ep_append(struct flowsdn_agent *a, struct agent_endpoint *e)
{
	if (a->n_eps == a->cap_eps) {
		size_t cap = a->cap_eps ? a->cap_eps * 2 : 16;
		struct agent_endpoint **p = realloc(a->eps, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->eps = p;
		a->cap_eps = cap;
	}
	a->eps[a->n_eps++] = e;
	return 0;
}

static void ep_remove_at(struct flowsdn_agent *a, size_t i)
{
	free(a->eps[i]);
	memmove(&a->eps[i], &a->eps[i + 1], (a->n_eps - i - 1) * sizeof(a->eps[0]));
	a->n_eps--;
}

ssize_t flowsdn__agent_find(struct flowsdn_agent *a, const char *container_id, const char *ifname)
{
	for (size_t i = 0; i < a->n_eps; i++)
		if (!strcmp(a->eps[i]->container_id, container_id) && !strcmp(a->eps[i]->ifname, ifname))
			return (ssize_t)i;
	return -1;
}

static uint32_t next_id(struct flowsdn_agent *a)
{
	for (uint32_t id = 1;; id++) {
		bool used = false;

		for (size_t i = 0; i < a->n_eps && !used; i++)
			used = a->eps[i]->id == id;
		if (!used)
			return id;
	}
}

/* Removes everything an endpoint has: its datapath entries and hooks, the
 * veth pair and host routes, its addresses.  Each step is idempotent. */
static void endpoint_cleanup(struct flowsdn_agent *a, const struct agent_endpoint *e)
{
	struct flowsdn_nl_err nerr = { { 0 } };
	double t[4];
	int err;

	t[0] = mono_ms();
	if (a->dp) {
		struct flowsdn_endpoint d;

		endpoint_to_dp(e, &d);
		err = flowsdn_maps_endpoint_remove(flowsdn_datapath_maps(a->dp), &d);
		if (err < 0)
			pr_warn("agent: endpoint %u: removing map entries: %s", e->id, flowsdn_strerror(err));
		err = flowsdn_datapath_detach(a->dp, e->host_ifindex);
		if (err < 0)
			pr_warn("agent: endpoint %u: detach: %s", e->id, flowsdn_strerror(err));
	}
	t[1] = mono_ms();
	err = flowsdn_netlink_veth_teardown(e->host_ifname, e->addrs,
					    e->n_addrs, &nerr);
	if (err < 0)
		pr_warn("agent: endpoint %u: teardown: %s", e->id, nerr.msg);
	t[2] = mono_ms();
	err = flowsdn_ipam_release(a->ipam, e->container_id, e->ifname);
	if (err < 0)
		pr_warn("agent: endpoint %u: releasing addresses: %s", e->id, flowsdn_strerror(err));
	t[3] = mono_ms();
	pr_debug("agent: DEL %s/%s: datapath %.2f ms, veth %.2f ms, ipam %.2f ms", e->container_id, e->ifname,
		 t[1] - t[0], t[2] - t[1], t[3] - t[2]);
}

/* DEL of one owner, with the lock held.  Returns 1 when an endpoint was
 * removed, 0 when there was none (its addresses and a leftover host
 * interface are still released), -errno when the state could not be
 * saved. */
int flowsdn__agent_delete_locked(struct flowsdn_agent *a, const char *container_id, const char *ifname)
{
	ssize_t i = flowsdn__agent_find(a, container_id, ifname);
	struct flowsdn_nl_err nerr = { { 0 } };
	char host[16];
	int err;

	if (i < 0) {
		if (flowsdn_agent_host_ifname(container_id, ifname, host, sizeof(host)) == 0)
			(void)flowsdn_netlink_veth_teardown(host, NULL, 0, &nerr);
		err = flowsdn_ipam_release(a->ipam, container_id, ifname);
		return err < 0 ? err : 0;
	}
	endpoint_cleanup(a, a->eps[i]);
	ep_remove_at(a, (size_t)i);
	err = state_save(a);
	return err < 0 ? err : 1;
}

/* ADD with the lock held (see the API in <flowsdn/agent.h>). */
int flowsdn__agent_add_locked(struct flowsdn_agent *a, const char *container_id, const char *ifname,
			      const char *netns, unsigned int mtu, const struct agent_endpoint **ret, char *msg,
			      size_t msg_size)
{
	struct flowsdn_ipam_result lease;
	struct flowsdn_prefix prefixes[2];
	struct flowsdn_nl_err nerr = { { 0 } };
	struct flowsdn_veth veth;
	struct agent_endpoint *e = NULL;
	uint64_t ino = 0;
	double t[6];
	ssize_t i;
	int err;

	t[0] = mono_ms();
	i = flowsdn__agent_find(a, container_id, ifname);
	if (i >= 0) {
		struct flowsdn_endpoint_iface f;

		/* A repeated ADD of a live endpoint returns it again. */
		endpoint_to_iface(a->eps[i], &f);
		if (!strcmp(a->eps[i]->netns, netns) && flowsdn_netlink_endpoint_check(&f, &nerr) == 0) {
			*ret = a->eps[i];
			return 0;
		}
		err = flowsdn__agent_delete_locked(a, container_id, ifname);
		if (err < 0)
			return err;
	}
	err = flowsdn_netlink_netns_ino(netns, &ino);
	if (err < 0) {
		snprintf(msg, msg_size, "netns %s: %s", netns, flowsdn_strerror(err));
		return -FLOWSDN_E_NL_NETNS;
	}
	err = flowsdn_ipam_allocate(a->ipam, container_id, ifname, NULL, &lease);
	if (err < 0) {
		snprintf(msg, msg_size, "allocating addresses: %s", flowsdn_ipam_errmsg(a->ipam)[0] ?
			 flowsdn_ipam_errmsg(a->ipam) : flowsdn_strerror(err));
		return err;
	}
	t[1] = mono_ms();
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto out_release;
	}
	if (copy_str(e->container_id, sizeof(e->container_id), container_id) < 0 ||
	    copy_str(e->ifname, sizeof(e->ifname), ifname) < 0 || copy_str(e->netns, sizeof(e->netns), netns) < 0) {
		snprintf(msg, msg_size, "containerID, ifname or netns too long");
		err = -EINVAL;
		goto out_free;
	}
	flowsdn_agent_host_ifname(container_id, ifname, e->host_ifname, sizeof(e->host_ifname));
	e->mtu = mtu ? mtu : a->cfg->mtu;
	e->n_addrs = lease.n;
	for (unsigned int k = 0; k < lease.n; k++) {
		e->addrs[k] = lease.leases[k].addr;
		flowsdn_prefix_make(&e->addrs[k], flowsdn_addr_bits(&e->addrs[k]), &prefixes[k]);
	}
	{
		FLOWSDN_OPTS(flowsdn_veth_config, vc, .netns_path = netns, .host_ifname = e->host_ifname,
			     .ifname = ifname, .mtu = e->mtu, .addrs = prefixes, .n_addrs = lease.n,
			     /* Both modes: the node and traffic entering it reach
			      * the endpoint through its host routes. */
			     .host_routes = true);

		err = flowsdn_netlink_veth_setup(&vc, &veth, &nerr);
	}
	if (err < 0) {
		snprintf(msg, msg_size, "%s", nerr.msg[0] ? nerr.msg : flowsdn_strerror(err));
		goto out_free;
	}
	t[2] = mono_ms();
	e->host_ifindex = veth.host_ifindex;
	memcpy(e->host_mac, veth.host_mac, 6);
	memcpy(e->mac, veth.mac, 6);
	e->netns_ino = veth.netns_ino;
	e->id = next_id(a);
	e->created = time(NULL);
	if (a->dp) {
		struct flowsdn_endpoint d;

		err = flowsdn_datapath_attach(a->dp, e->host_ifindex);
		if (err < 0) {
			snprintf(msg, msg_size, "attaching the datapath to %s: %s", e->host_ifname,
				 flowsdn_strerror(err));
			goto out_teardown;
		}
		endpoint_to_dp(e, &d);
		err = flowsdn_maps_endpoint_publish(flowsdn_datapath_maps(a->dp), &d);
		if (err < 0) {
			snprintf(msg, msg_size, "publishing endpoint %u: %s", e->id, flowsdn_strerror(err));
			goto out_detach;
		}
	}
	t[3] = mono_ms();
	err = ep_append(a, e);
	if (err < 0)
		goto out_unpublish;
	err = state_save(a);
	t[4] = mono_ms();
	if (err < 0) {
		snprintf(msg, msg_size, "saving state: %s", strerror(-err));
		a->n_eps--;
		goto out_unpublish;
	}
	pr_debug("agent: ADD %s/%s: ipam %.2f ms, veth %.2f ms, datapath %.2f ms, state %.2f ms", container_id, ifname,
		 t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3]);
	*ret = e;
	return 0;

out_unpublish:
	if (a->dp) {
		struct flowsdn_endpoint d;

		endpoint_to_dp(e, &d);
		(void)flowsdn_maps_endpoint_remove(flowsdn_datapath_maps(a->dp), &d);
	}
out_detach:
	if (a->dp)
		(void)flowsdn_datapath_detach(a->dp, e->host_ifindex);
out_teardown:
	(void)flowsdn_netlink_veth_teardown(e->host_ifname, e->addrs,
					    e->n_addrs, NULL);
out_free:
	free(e);
out_release:
	(void)flowsdn_ipam_release(a->ipam, container_id, ifname);
	return err;
}

/* CHECK with the lock held: 0, -FLOWSDN_E_AGENT_NOT_FOUND, or the failed
 * check (message in @msg). */
int flowsdn__agent_check_locked(struct flowsdn_agent *a, const char *container_id, const char *ifname,
				const char *netns, const struct agent_endpoint **ret, char *msg, size_t msg_size)
{
	ssize_t i = flowsdn__agent_find(a, container_id, ifname);
	struct flowsdn_endpoint_iface f;
	struct flowsdn_nl_err nerr = { { 0 } };
	int err;

	if (i < 0) {
		snprintf(msg, msg_size, "no endpoint for %s/%s", container_id, ifname);
		return -FLOWSDN_E_AGENT_NOT_FOUND;
	}
	if (strcmp(a->eps[i]->netns, netns) != 0) {
		snprintf(msg, msg_size, "endpoint is in netns %s, not %s", a->eps[i]->netns, netns);
		return -FLOWSDN_E_NL_MISMATCH;
	}
	endpoint_to_iface(a->eps[i], &f);
	err = flowsdn_netlink_endpoint_check(&f, &nerr);
	if (err < 0) {
		snprintf(msg, msg_size, "%s", nerr.msg[0] ? nerr.msg : flowsdn_strerror(err));
		return err;
	}
	if (a->dp) {
		err = flowsdn_datapath_is_attached(a->dp, a->eps[i]->host_ifindex);
		if (err <= 0) {
			snprintf(msg, msg_size, "datapath not attached to %s", a->eps[i]->host_ifname);
			return err < 0 ? err : -FLOWSDN_E_BPF_ATTACH;
		}
	}
	*ret = a->eps[i];
	return 0;
}

/* GC with the lock held: removes every endpoint and allocation whose
 * owner is not among the @n valid ones.  Returns the number removed. */
int flowsdn__agent_gc_locked(struct flowsdn_agent *a, const char *const *ids, const char *const *ifnames, size_t n)
{
	struct flowsdn_ipam_allocation *alloc = NULL;
	size_t n_alloc = 0;
	int removed = 0, err;

	for (size_t i = a->n_eps; i-- > 0;) {
		bool valid = false;

		for (size_t k = 0; k < n && !valid; k++)
			valid = !strcmp(ids[k], a->eps[i]->container_id) && !strcmp(ifnames[k], a->eps[i]->ifname);
		if (valid)
			continue;
		endpoint_cleanup(a, a->eps[i]);
		ep_remove_at(a, i);
		removed++;
	}
	if (flowsdn_ipam_list(a->ipam, &alloc, &n_alloc) == 0) {
		for (size_t i = 0; i < n_alloc; i++) {
			bool valid = false;

			for (size_t k = 0; k < n && !valid; k++)
				valid = !strcmp(ids[k], alloc[i].container_id) && !strcmp(ifnames[k], alloc[i].ifname);
			if (!valid && flowsdn_ipam_release(a->ipam, alloc[i].container_id, alloc[i].ifname) > 0)
				removed++;
		}
		free(alloc);
	}
	err = state_save(a);
	return err < 0 ? err : removed;
}

/* Replays the queue with the lock held. */
static int replay_locked(struct flowsdn_agent *a)
{
	DIR *d = opendir(a->queue_dir);
	struct dirent *de;
	int replayed = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		_cleanup_free_ char *path = NULL, *data = NULL;
		struct json_value *root = NULL;
		const char *cid, *ifn;
		size_t len, nl = strlen(de->d_name);

		if (nl < 6 || strcmp(de->d_name + nl - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		if (asprintf(&path, "%s/%s", a->queue_dir, de->d_name) < 0)
			break;
		if (util_read_file(path, 4096, &data, &len) < 0 || json_parse(data, len, NULL, &root, NULL) < 0) {
			pr_warn("agent: queue entry %s is unreadable; removed", path);
			unlink(path);
			continue;
		}
		cid = jstr(json_get(root, "containerID"));
		ifn = jstr(json_get(root, "ifname"));
		if (cid && ifn && flowsdn_cni_container_id_valid(cid) && flowsdn_cni_ifname_valid(ifn)) {
			int err = flowsdn__agent_delete_locked(a, cid, ifn);

			if (err < 0) {
				pr_warn("agent: replaying DEL %s/%s: %s", cid, ifn, flowsdn_strerror(err));
				json_free(root);
				continue;
			}
			pr_info("agent: replayed queued DEL %s/%s", cid, ifn);
			replayed++;
		} else {
			pr_warn("agent: queue entry %s names no valid owner; removed", path);
		}
		json_free(root);
		unlink(path);
	}
	closedir(d);
	a->replayed += (unsigned int)replayed;
	return replayed;
}

FLOWSDN_API int flowsdn_agent_replay_queue(struct flowsdn_agent *a)
{
	int r;

	if (!a)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	r = replay_locked(a);
	pthread_mutex_unlock(&a->lock);
	return r;
}

/* Loads endpoints.json and adopts each endpoint's interface. */
static int restore(struct flowsdn_agent *a)
{
	_cleanup_free_ char *data = NULL;
	struct json_value *root = NULL;
	const struct json_value *eps;
	bool dropped = false;
	size_t len;
	int err;

	err = util_read_file(a->state_path, MAX_STATE, &data, &len);
	if (err == -ENOENT)
		return 0;
	if (err < 0)
		return err;
	err = json_parse(data, len, NULL, &root, NULL);
	eps = json_get(root, "endpoints");
	if (err < 0 || !jis(eps, JSON_ARRAY)) {
		pr_err("agent: %s is damaged", a->state_path);
		json_free(root);
		return -FLOWSDN_E_AGENT_STATE;
	}
	for (size_t i = 0; i < eps->u.array.n; i++) {
		struct agent_endpoint *e = calloc(1, sizeof(*e));
		struct flowsdn_endpoint_iface f;
		struct flowsdn_nl_err nerr = { { 0 } };

		if (!e) {
			err = -ENOMEM;
			break;
		}
		if (endpoint_from_state(eps->u.array.items[i], e) < 0) {
			pr_err("agent: %s: endpoint %zu is damaged", a->state_path, i);
			free(e);
			err = -FLOWSDN_E_AGENT_STATE;
			break;
		}
		endpoint_to_iface(e, &f);
		err = a->dp ? flowsdn_datapath_adopt(a->dp, &f) : flowsdn_netlink_endpoint_check(&f, &nerr);
		if (err == -FLOWSDN_E_BPF_IFACE_MISMATCH || err == -FLOWSDN_E_NL_MISMATCH ||
		    err == -FLOWSDN_E_NL_NOT_FOUND || err == -FLOWSDN_E_NL_NETNS) {
			pr_warn("agent: endpoint %u (%s/%s) is gone: cleaning up", e->id, e->container_id, e->ifname);
			endpoint_cleanup(a, e);
			free(e);
			dropped = true;
			err = 0;
			continue;
		}
		if (err < 0)
			pr_warn("agent: endpoint %u: adoption failed: %s", e->id, flowsdn_strerror(err));
		err = ep_append(a, e);
		if (err < 0) {
			free(e);
			break;
		}
		a->restored++;
	}
	json_free(root);
	if (err == 0 && dropped)
		err = state_save(a);
	return err;
}

FLOWSDN_API size_t flowsdn_agent_endpoint_count(struct flowsdn_agent *a)
{
	size_t n;

	if (!a)
		return 0;
	pthread_mutex_lock(&a->lock);
	n = a->n_eps;
	pthread_mutex_unlock(&a->lock);
	return n;
}

static int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(copy, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

FLOWSDN_API void flowsdn_agent_free(struct flowsdn_agent *a)
{
	if (!a)
		return;
	flowsdn__agent_http_stop(a);
	for (size_t i = 0; i < a->n_eps; i++)
		free(a->eps[i]);
	free(a->eps);
	flowsdn_datapath_free(a->dp);
	flowsdn_ipam_free(a->ipam);
	free(a->state_path);
	free(a->queue_dir);
	free(a->dp_error);
	flowsdn_agent_config_free(a->cfg);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

FLOWSDN_API int flowsdn_agent_new(const struct flowsdn_agent_config *cfg, struct flowsdn_agent **ret)
{
	struct flowsdn_agent *a;
	_cleanup_free_ char *ipam_dir = NULL, *sock_dir = NULL;
	char errbuf[256] = "";
	int err;

	if (!cfg || !ret)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	a->unix_fd = -1;
	a->started = time(NULL);
	err = flowsdn__agent_config_dup(cfg, &a->cfg);
	if (err < 0)
		goto out;
	if (asprintf(&a->state_path, "%s/endpoints.json", cfg->state_dir) < 0 ||
	    asprintf(&ipam_dir, "%s/ipam", cfg->state_dir) < 0 || !(a->queue_dir = flowsdn_agent_queue_dir(cfg->state_dir)) ||
	    !(sock_dir = strdup(cfg->socket))) {
		err = -ENOMEM;
		goto out;
	}
	*strrchr(sock_dir, '/') = '\0';
	err = mkdir_p(cfg->state_dir, 0700);
	if (err == 0 && sock_dir[0])
		err = mkdir_p(sock_dir, 0755);
	if (err < 0) {
		pr_err("agent: creating %s or %s: %s", cfg->state_dir, sock_dir, strerror(-err));
		goto out;
	}
	{
		FLOWSDN_OPTS(flowsdn_ipam_opts, io, .errbuf = errbuf, .errbuf_size = sizeof(errbuf));

		err = flowsdn_ipam_new(ipam_dir, cfg->pools, cfg->n_pools, &io, &a->ipam);
	}
	if (err < 0) {
		pr_err("agent: IPAM in %s: %s", ipam_dir, errbuf[0] ? errbuf : flowsdn_strerror(err));
		goto out;
	}
	if (cfg->datapath) {
		FLOWSDN_OPTS(flowsdn_datapath_opts, dpo, .pin_dir = cfg->pin_dir,
			     .egress_mode = cfg->egress_stack ? FLOWSDN_EGRESS_STACK : FLOWSDN_EGRESS_FIB,
			     .attach_mode = (enum flowsdn_attach_mode)cfg->attach_mode);

		err = flowsdn_datapath_open(&dpo, &a->dp);
		if (err < 0) {
			pr_err("agent: loading the datapath in %s: %s", cfg->pin_dir, flowsdn_strerror(err));
			goto out;
		}
	}
	err = restore(a);
	if (err < 0)
		goto out;
	err = replay_locked(a);
	if (err < 0)
		goto out;
	err = flowsdn__agent_http_start(a);
	if (err < 0)
		goto out;
	/* DELs queued while we started, before the socket answered. */
	(void)flowsdn_agent_replay_queue(a);
	*ret = a;
	return 0;
out:
	flowsdn_agent_free(a);
	return err;
}
