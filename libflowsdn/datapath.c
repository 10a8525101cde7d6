/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The BPF loader (<flowsdn/datapath.h>): loads the embedded endpoint
 * programs (bpf/lxc.bpf.c, embedded by bpftool gen skeleton) once per
 * handle, pins maps and programs, attaches to host veths with TCX links or
 * tc clsact filters, detaches, and adopts endpoints after a restart.
 *
 * libbpf 1.1 knows neither TCX attach types nor bpf_program__attach_tcx():
 * the links are made with the raw bpf_link_create() and the attach types
 * BPF_TCX_INGRESS/EGRESS by value (the kernel's uapi numbers, stable ABI).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <flowsdn/datapath.h>

#include "datapath-internal.h"
#include "internal.h"
#include "lxc.hash.h"
#include "lxc.skel.h"
#include "sock.hash.h"
#include "sock.skel.h"

/* uapi values (include/uapi/linux/bpf.h of Linux >= 6.6). */
#define FSDN_BPF_TCX_INGRESS 46
#define FSDN_BPF_TCX_EGRESS 47
#define FSDN_BPF_LINK_TYPE_TCX 11

/* tc filter identity of our programs (when TCX is not used). */
#define FSDN_TC_HANDLE 0xf5d
#define FSDN_TC_PRIORITY 1

#define PROG_FROM "from_container"
#define PROG_TO "to_container"

struct flowsdn_datapath {
	struct flowsdn_lxc *skel;
	struct flowsdn_sock *sock; /* the socket LB programs (bpf/sock.bpf.c) */
	struct flowsdn_maps *maps;
	char *pin_dir;
	enum flowsdn_attach_mode mode;
	bool auto_mode; /* mode chosen by probing: an interface TCX refuses gets tc */
	bool ct_moved;  /* the old conntrack pin is parked as CT_PARKED until the load succeeds */
};

/* Where a conntrack table pinned with another size waits during a load. */
#define CT_PARKED FLOWSDN_MAP_CT "_resized" /* bpffs refuses names with a dot */

/* Set around calls whose failures are expected (probing a missing clsact
 * qdisc, creating one that exists): libbpf's warnings become debug. */
static __thread bool libbpf_quiet;

/* libbpf's messages (verifier logs included) to our log callback. */
static int __attribute__((format(printf, 2, 0))) libbpf_print(enum libbpf_print_level level, const char *fmt,
								va_list ap)
{
	char buf[1024];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (level == LIBBPF_WARN && !libbpf_quiet)
		pr_warn("libbpf: %s", buf);
	else
		pr_debug("libbpf: %s", buf);
	return 0;
}

FLOWSDN_API const char *flowsdn_datapath_object_hash(void)
{
	return FLOWSDN_LXC_SHA256;
}

/* mkdir -p @path (mode 0700 for what is created). */
static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static bool on_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && (unsigned long)st.f_type == (unsigned long)BPF_FS_MAGIC;
}

/* Makes @dir exist on a bpffs: mounts one on it when it is not. */
static int ensure_bpffs(const char *dir, bool no_mount)
{
	int r = mkdir_p(dir);

	if (r < 0) {
		pr_warn("bpf pin directory %s: %s", dir, strerror(-r));
		return r;
	}
	if (on_bpffs(dir))
		return 0;
	if (no_mount) {
		pr_warn("%s is not on a bpf filesystem", dir);
		return -FLOWSDN_E_BPF_NO_BPFFS;
	}
	if (mount("bpffs", dir, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0) {
		pr_warn("mount bpffs on %s: %s", dir, strerror(errno));
		return -FLOWSDN_E_BPF_NO_BPFFS;
	}
	pr_info("mounted bpffs on %s", dir);
	return 0;
}

/* Maps an earlier version pinned in @dir that nothing uses any more:
 * flowsdn_sock_conn, the socket LB's socket storage before its records
 * moved to flowsdn_sock_rnat.  A pin that is not there is fine. */
static void retired_pins_remove(const char *dir)
{
	static const char *const retired[] = { "flowsdn_sock_conn" };
	char path[PATH_MAX];

	for (size_t i = 0; i < ARRAY_SIZE(retired); i++)
		if (flowsdn__pin_path(dir, retired[i], path, sizeof(path)) == 0 && unlink(path) < 0 &&
		    errno != ENOENT)
			pr_warn("remove the retired pin %s: %s", path, strerror(errno));
}

/* Pins @prog as @dir/@name, replacing an older pin. */
static int pin_prog(struct bpf_program *prog, const char *dir, const char *name)
{
	char path[PATH_MAX];
	int r = flowsdn__pin_path(dir, name, path, sizeof(path));

	if (r < 0)
		return r;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	r = bpf_program__pin(prog, path);
	if (r < 0)
		pr_warn("pin %s: %s", path, strerror(-r));
	return r;
}

FLOWSDN_API int flowsdn_datapath_probe_tcx(void)
{
	__u32 cnt = 0;
	int r;

	/* A TCX query on loopback: kernels without TCX refuse the type. */
	r = bpf_prog_query(1, (enum bpf_attach_type)FSDN_BPF_TCX_INGRESS, 0, NULL, NULL, &cnt);
	return r == 0 ? 1 : 0;
}

FLOWSDN_API void flowsdn_datapath_free(struct flowsdn_datapath *dp)
{
	if (!dp)
		return;
	flowsdn_maps_free(dp->maps);
	/* Destroying the skeleton closes fds only: pins and links stay. */
	flowsdn_lxc__destroy(dp->skel);
	flowsdn_sock__destroy(dp->sock);
	free(dp->pin_dir);
	free(dp);
}

/* Seconds (0: @def) as nanoseconds. */
static __u64 ct_ns(uint32_t s, uint32_t def)
{
	return (__u64)(s ? s : def) * 1000000000ull;
}

/* Sizes the conntrack table and writes its timeouts.  A table pinned
 * with another size cannot be reused (libbpf would refuse the load): its
 * pin is replaced by the new, empty table. */
static int ct_configure(struct flowsdn_datapath *dp, const char *dir, uint32_t max,
			const struct flowsdn_ct_timeouts *t)
{
	static const struct flowsdn_ct_timeouts none;
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int r, fd;

	if (!t)
		t = &none;
	if (!max)
		max = FLOWSDN_CT_DEFAULT_MAX;
	r = bpf_map__set_max_entries(dp->skel->maps.flowsdn_ct, max);
	if (r < 0)
		return r;
	dp->skel->rodata->cfg_ct_timeout_tcp = ct_ns(t->tcp, FLOWSDN_CT_TIMEOUT_TCP);
	dp->skel->rodata->cfg_ct_timeout_tcp_syn = ct_ns(t->tcp_syn, FLOWSDN_CT_TIMEOUT_TCP_SYN);
	dp->skel->rodata->cfg_ct_timeout_tcp_close = ct_ns(t->tcp_close, FLOWSDN_CT_TIMEOUT_TCP_CLOSE);
	dp->skel->rodata->cfg_ct_timeout_udp = ct_ns(t->udp, FLOWSDN_CT_TIMEOUT_UDP);
	dp->skel->rodata->cfg_ct_timeout_udp_replied = ct_ns(t->udp_replied, FLOWSDN_CT_TIMEOUT_UDP_REPLIED);
	dp->skel->rodata->cfg_ct_timeout_icmp = ct_ns(t->icmp, FLOWSDN_CT_TIMEOUT_ICMP);

	r = flowsdn__pin_path(dir, FLOWSDN_MAP_CT, path, sizeof(path));
	if (r < 0)
		return r;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0; /* not pinned yet */
	memset(&info, 0, sizeof(info));
	r = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	if (r == 0 && info.type == BPF_MAP_TYPE_LRU_HASH && info.max_entries != max) {
		char parked[PATH_MAX];

		r = flowsdn__pin_path(dir, CT_PARKED, parked, sizeof(parked));
		if (r < 0)
			return r;
		pr_info("conntrack table %s: resized from %u to %u entries, tracked connections forgotten", path,
			info.max_entries, max);
		if (rename(path, parked) < 0)
			return -errno;
		dp->ct_moved = true;
	}
	return 0;
}

/* After the load: drops the parked table (@loaded) or puts it back. */
static void ct_unpark(struct flowsdn_datapath *dp, const char *dir, bool loaded)
{
	char path[PATH_MAX], parked[PATH_MAX];

	if (!dp->ct_moved || flowsdn__pin_path(dir, FLOWSDN_MAP_CT, path, sizeof(path)) < 0 ||
	    flowsdn__pin_path(dir, CT_PARKED, parked, sizeof(parked)) < 0)
		return;
	if (loaded)
		unlink(parked);
	else if (rename(parked, path) < 0)
		pr_warn("conntrack table: cannot restore %s: %s", path, strerror(errno));
	dp->ct_moved = false;
}

FLOWSDN_API int flowsdn_datapath_open(const struct flowsdn_datapath_opts *opts, struct flowsdn_datapath **ret)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	struct flowsdn_datapath *dp;
	const char *dir;
	enum flowsdn_egress_mode egress;
	enum flowsdn_attach_mode mode;
	int r;

	if (!ret || !OPTS_VALID(opts, flowsdn_datapath_opts))
		return -EINVAL;
	dir = OPTS_GET(opts, pin_dir, NULL);
	if (!dir)
		dir = FLOWSDN_DATAPATH_PIN_DIR;
	egress = OPTS_GET(opts, egress_mode, FLOWSDN_EGRESS_FIB);
	mode = OPTS_GET(opts, attach_mode, FLOWSDN_ATTACH_AUTO);
	if (dir[0] != '/' || strlen(dir) >= PATH_MAX - 64 ||
	    (egress != FLOWSDN_EGRESS_FIB && egress != FLOWSDN_EGRESS_STACK) ||
	    (mode != FLOWSDN_ATTACH_AUTO && mode != FLOWSDN_ATTACH_TCX && mode != FLOWSDN_ATTACH_TC))
		return -EINVAL;

	if (mode == FLOWSDN_ATTACH_AUTO)
		mode = flowsdn_datapath_probe_tcx() ? FLOWSDN_ATTACH_TCX : FLOWSDN_ATTACH_TC;
	else if (mode == FLOWSDN_ATTACH_TCX && !flowsdn_datapath_probe_tcx())
		return -FLOWSDN_E_BPF_NO_TCX;

	r = ensure_bpffs(dir, OPTS_GET(opts, no_mount, false));
	if (r < 0)
		return r;

	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	dp->mode = mode;
	dp->auto_mode = OPTS_GET(opts, attach_mode, FLOWSDN_ATTACH_AUTO) == FLOWSDN_ATTACH_AUTO;
	dp->pin_dir = strdup(dir);
	if (!dp->pin_dir) {
		r = -ENOMEM;
		goto out_free;
	}
	libbpf_set_print(libbpf_print);
	/* Maps with LIBBPF_PIN_BY_NAME are reused from (or pinned in) dir. */
	oo.pin_root_path = dir;
	dp->skel = flowsdn_lxc__open_opts(&oo);
	if (!dp->skel) {
		r = -errno;
		pr_warn("open embedded BPF object: %s", strerror(errno));
		r = r == -ENOMEM ? r : -FLOWSDN_E_BPF_OBJECT;
		goto out_free;
	}
	dp->skel->rodata->cfg_egress_mode = (__u32)egress;
	dp->skel->rodata->cfg_redirect_peer = OPTS_GET(opts, no_redirect_peer, false) ? 0 : 1;
	r = ct_configure(dp, dir, OPTS_GET(opts, ct_max, 0), OPTS_GET(opts, ct_timeouts, NULL));
	if (r < 0) {
		ct_unpark(dp, dir, false);
		goto out_free;
	}
	r = flowsdn_lxc__load(dp->skel);
	ct_unpark(dp, dir, r == 0);
	if (r < 0) {
		pr_warn("load BPF datapath (pins in %s): %s", dir, strerror(-r));
		/* libbpf says -EINVAL when a pinned map does not match. */
		r = r == -EINVAL ? -FLOWSDN_E_BPF_MAP_LAYOUT : r == -ENOMEM ? r : -FLOWSDN_E_BPF_LOAD;
		goto out_free;
	}
	/* The socket LB second: it shares the maps just pinned. */
	dp->sock = flowsdn_sock__open_opts(&oo);
	if (!dp->sock) {
		r = -errno;
		pr_warn("open embedded socket LB object: %s", strerror(errno));
		r = r == -ENOMEM ? r : -FLOWSDN_E_BPF_OBJECT;
		goto out_free;
	}
	r = flowsdn_sock__load(dp->sock);
	if (r < 0) {
		pr_warn("load BPF socket LB (pins in %s): %s", dir, strerror(-r));
		r = r == -EINVAL ? -FLOWSDN_E_BPF_MAP_LAYOUT : r == -ENOMEM ? r : -FLOWSDN_E_BPF_LOAD;
		goto out_free;
	}
	retired_pins_remove(dir);
	r = pin_prog(dp->skel->progs.from_container, dir, "prog_" PROG_FROM);
	if (r < 0)
		goto out_free;
	r = pin_prog(dp->skel->progs.to_container, dir, "prog_" PROG_TO);
	if (r < 0)
		goto out_free;
	r = flowsdn_maps_open(dir, &dp->maps);
	if (r < 0)
		goto out_free;
	pr_debug("datapath loaded (%s, egress %s, pins in %s)", mode == FLOWSDN_ATTACH_TCX ? "tcx" : "tc",
		 egress == FLOWSDN_EGRESS_FIB ? "fib" : "stack", dir);
	*ret = dp;
	return 0;

out_free:
	flowsdn_datapath_free(dp);
	return r;
}

const char *flowsdn__datapath_pin_dir(const struct flowsdn_datapath *dp)
{
	return dp->pin_dir;
}

void flowsdn__datapath_rodata(const struct flowsdn_datapath *dp, __u32 *egress_mode, __u32 *redirect_peer,
			      __u32 *delivered_mark)
{
	*egress_mode = dp->skel->rodata->cfg_egress_mode;
	*redirect_peer = dp->skel->rodata->cfg_redirect_peer;
	*delivered_mark = dp->skel->rodata->cfg_delivered_mark;
}

FLOWSDN_API struct flowsdn_maps *flowsdn_datapath_maps(struct flowsdn_datapath *dp)
{
	return dp ? dp->maps : NULL;
}

FLOWSDN_API enum flowsdn_attach_mode flowsdn_datapath_attach_mode(const struct flowsdn_datapath *dp)
{
	return dp ? dp->mode : FLOWSDN_ATTACH_AUTO;
}

static int link_pin_path(const struct flowsdn_datapath *dp, int ifindex, bool ingress, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/links/%d-%s", dp->pin_dir, ifindex, ingress ? "ingress" : "egress");

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Reads the interface and attach type of a TCX link.  libbpf 1.1's
 * struct bpf_link_info predates TCX; the kernel writes {ifindex,
 * attach_type} at the start of the union, where the netns member sits. */
static int tcx_link_target(int link_fd, __u32 *ret_ifindex, __u32 *ret_type)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info), tail[2];

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(link_fd, &info, &len) < 0)
		return -errno;
	if (info.type != FSDN_BPF_LINK_TYPE_TCX)
		return -EINVAL;
	memcpy(tail, (const char *)&info + offsetof(struct bpf_link_info, netns), sizeof(tail));
	*ret_ifindex = tail[0];
	*ret_type = tail[1];
	return 0;
}

/* TCX: updates the pinned link of (ifindex, direction) to @prog_fd, or
 * creates and pins a new one. */
static int tcx_attach_one(struct flowsdn_datapath *dp, int ifindex, bool ingress, int prog_fd)
{
	__u32 type = ingress ? FSDN_BPF_TCX_INGRESS : FSDN_BPF_TCX_EGRESS;
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	int r;

	r = link_pin_path(dp, ifindex, ingress, path, sizeof(path));
	if (r < 0)
		return r;
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		__u32 lif = 0, ltype = 0;

		if (tcx_link_target(fd, &lif, &ltype) == 0 && lif == (__u32)ifindex && ltype == type) {
			if (bpf_link_update(fd, prog_fd, NULL) == 0)
				return 0;
			pr_warn("update TCX link %s: %s", path, strerror(errno));
		}
		/* Stale pin (interface gone, index reused, or a defunct link). */
		close(TAKE_FD(fd));
		unlink(path);
	}
	fd = bpf_link_create(prog_fd, ifindex, (enum bpf_attach_type)type, NULL);
	if (fd < 0) {
		r = -errno;
		pr_warn("TCX %s link on ifindex %d: %s", ingress ? "ingress" : "egress", ifindex, strerror(errno));
		return r == -ENODEV ? r : -FLOWSDN_E_BPF_ATTACH;
	}
	if (bpf_obj_pin(fd, path) < 0) {
		r = -errno;
		pr_warn("pin TCX link %s: %s", path, strerror(errno));
		bpf_link_detach(fd);
		return r;
	}
	return 0;
}

int flowsdn__tc_attach(int ifindex, bool ingress, int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = ingress ? BPF_TC_INGRESS : BPF_TC_EGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = FSDN_TC_HANDLE, .priority = FSDN_TC_PRIORITY, .prog_fd = prog_fd,
		    .flags = BPF_TC_F_REPLACE);
	int r;

	libbpf_quiet = true;
	r = bpf_tc_hook_create(&hook);
	libbpf_quiet = false;
	if (r < 0 && r != -EEXIST) {
		pr_warn("tc clsact on ifindex %d: %s", ifindex, strerror(-r));
		return r == -ENODEV ? r : -FLOWSDN_E_BPF_ATTACH;
	}
	r = bpf_tc_attach(&hook, &o);
	if (r < 0) {
		pr_warn("tc %s filter on ifindex %d: %s", ingress ? "ingress" : "egress", ifindex, strerror(-r));
		return r == -ENODEV ? r : -FLOWSDN_E_BPF_ATTACH;
	}
	return 0;
}

int flowsdn__tc_detach(int ifindex, bool ingress)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = ingress ? BPF_TC_INGRESS : BPF_TC_EGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = FSDN_TC_HANDLE, .priority = FSDN_TC_PRIORITY);
	int r;

	libbpf_quiet = true;
	r = bpf_tc_detach(&hook, &o);
	libbpf_quiet = false;
	return r == -ENOENT || r == -ENODEV || r == -EINVAL ? 0 : r;
}

/* Detaches and unpins the link pinned at @path (absent: 0).  A link
 * whose target is gone is already detached (-ENOLINK etc.). */
static int unpin_link(const char *path)
{
	_cleanup_close_ int fd = bpf_obj_get(path);

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	bpf_link_detach(fd);
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int tcx_detach_one(struct flowsdn_datapath *dp, int ifindex, bool ingress)
{
	char path[PATH_MAX];
	int r = link_pin_path(dp, ifindex, ingress, path, sizeof(path));

	return r < 0 ? r : unpin_link(path);
}

static int ensure_links_dir(struct flowsdn_datapath *dp)
{
	char path[PATH_MAX];
	int r = flowsdn__pin_path(dp->pin_dir, "links", path, sizeof(path));

	if (r < 0)
		return r;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

FLOWSDN_API int flowsdn_datapath_attach(struct flowsdn_datapath *dp, int ifindex)
{
	if (!dp || ifindex <= 0)
		return -EINVAL;
	return flowsdn__hooks_attach(dp, ifindex, bpf_program__fd(dp->skel->progs.from_container),
				     bpf_program__fd(dp->skel->progs.to_container));
}

int flowsdn__hooks_attach(struct flowsdn_datapath *dp, int ifindex, int from, int to)
{
	int r;

	if (dp->mode == FLOWSDN_ATTACH_TCX) {
		r = ensure_links_dir(dp);
		if (r < 0)
			return r;
		r = tcx_attach_one(dp, ifindex, true, from);
		if (r == 0)
			r = tcx_attach_one(dp, ifindex, false, to);
		if (r < 0) {
			tcx_detach_one(dp, ifindex, true);
			tcx_detach_one(dp, ifindex, false);
			if (!dp->auto_mode || r == -ENODEV)
				return r;
			pr_info("ifindex %d: TCX refused (%s), attaching with tc clsact", ifindex, flowsdn_strerror(r));
			goto tc;
		}
		/* An older tc attachment of ours would run the old programs too. */
		flowsdn__tc_detach(ifindex, true);
		flowsdn__tc_detach(ifindex, false);
		return 0;
	}
tc:
	r = flowsdn__tc_attach(ifindex, true, from);
	if (r == 0)
		r = flowsdn__tc_attach(ifindex, false, to);
	if (r < 0) {
		flowsdn__tc_detach(ifindex, true);
		flowsdn__tc_detach(ifindex, false);
	}
	return r;
}

FLOWSDN_API int flowsdn_datapath_detach(struct flowsdn_datapath *dp, int ifindex)
{
	if (!dp || ifindex <= 0)
		return -EINVAL;
	return flowsdn__hooks_detach(dp, ifindex);
}

int flowsdn__hooks_detach(struct flowsdn_datapath *dp, int ifindex)
{
	int r = 0, t;

	/* Both kinds: an endpoint may have been attached by an agent in the
	 * other mode. */
	t = tcx_detach_one(dp, ifindex, true);
	r = r ? r : t;
	t = tcx_detach_one(dp, ifindex, false);
	r = r ? r : t;
	t = flowsdn__tc_detach(ifindex, true);
	r = r ? r : t;
	t = flowsdn__tc_detach(ifindex, false);
	r = r ? r : t;
	return r;
}

/* Whether program @id is named @name. */
static bool prog_is(__u32 id, const char *name)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	_cleanup_close_ int fd = bpf_prog_get_fd_by_id(id);

	if (fd < 0)
		return false;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
		return false;
	return strncmp(info.name, name, sizeof(info.name)) == 0;
}

static int hook_has(int ifindex, bool ingress, const char *name)
{
	__u32 ids[16], cnt = ARRAY_SIZE(ids);
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = ingress ? BPF_TC_INGRESS : BPF_TC_EGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = FSDN_TC_HANDLE, .priority = FSDN_TC_PRIORITY);
	int r;

	if (bpf_prog_query(ifindex, (enum bpf_attach_type)(ingress ? FSDN_BPF_TCX_INGRESS : FSDN_BPF_TCX_EGRESS), 0,
			   NULL, ids, &cnt) == 0) {
		for (__u32 i = 0; i < cnt && i < ARRAY_SIZE(ids); i++)
			if (prog_is(ids[i], name))
				return 1;
	}
	libbpf_quiet = true;
	r = bpf_tc_query(&hook, &o);
	libbpf_quiet = false;
	return r == 0 && prog_is(o.prog_id, name);
}

FLOWSDN_API int flowsdn_datapath_is_attached(struct flowsdn_datapath *dp, int ifindex)
{
	if (!dp || ifindex <= 0)
		return -EINVAL;
	return hook_has(ifindex, true, PROG_FROM) && hook_has(ifindex, false, PROG_TO);
}

FLOWSDN_API int flowsdn_datapath_adopt(struct flowsdn_datapath *dp, const struct flowsdn_endpoint_iface *iface)
{
	int r;

	if (!dp || !iface || iface->host_ifindex <= 0)
		return -EINVAL;
	/* The check logs the step that failed. */
	r = flowsdn_netlink_endpoint_check(iface, NULL);
	if (r < 0) {
		pr_warn("adopt ifindex %d: %s", iface->host_ifindex, flowsdn_strerror(r));
		return r == -EINVAL ? r : -FLOWSDN_E_BPF_IFACE_MISMATCH;
	}
	return flowsdn_datapath_attach(dp, iface->host_ifindex);
}


/* ------------------------------------------------------------ socket LB */

/* The socket LB hooks: program, attach type, link pin name. */
static int socklb_progs(struct flowsdn_datapath *dp, struct bpf_program **progs, enum bpf_attach_type *types,
			const char **names)
{
	static const char *const n[] = { "connect4",   "connect6",    "sendmsg4",     "sendmsg6",
					 "recvmsg4",   "recvmsg6",    "getpeername4", "getpeername6",
					 "release" };
	static const enum bpf_attach_type t[] = {
		BPF_CGROUP_INET4_CONNECT, BPF_CGROUP_INET6_CONNECT, BPF_CGROUP_UDP4_SENDMSG,
		BPF_CGROUP_UDP6_SENDMSG,  BPF_CGROUP_UDP4_RECVMSG,  BPF_CGROUP_UDP6_RECVMSG,
		BPF_CGROUP_INET4_GETPEERNAME, BPF_CGROUP_INET6_GETPEERNAME, BPF_CGROUP_INET_SOCK_RELEASE,
	};
	struct bpf_program *p[] = {
		dp->sock->progs.sock_connect4,     dp->sock->progs.sock_connect6,
		dp->sock->progs.sock_sendmsg4,     dp->sock->progs.sock_sendmsg6,
		dp->sock->progs.sock_recvmsg4,     dp->sock->progs.sock_recvmsg6,
		dp->sock->progs.sock_getpeername4, dp->sock->progs.sock_getpeername6,
		dp->sock->progs.sock_release,
	};

	for (size_t i = 0; i < ARRAY_SIZE(n); i++) {
		progs[i] = p[i];
		types[i] = t[i];
		names[i] = n[i];
	}
	return (int)ARRAY_SIZE(n);
}
#define SOCKLB_HOOKS 9

static int socklb_pin_path(const struct flowsdn_datapath *dp, const char *name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/links/sock-%s", dp->pin_dir, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* One hook: the pinned link of the same cgroup and type is switched to
 * @prog_fd; any other pin is replaced by a new link. */
static int socklb_attach_one(int cg_fd, uint64_t cg_id, const char *path, enum bpf_attach_type type, int prog_fd)
{
	_cleanup_close_ int fd = bpf_obj_get(path);
	int r;

	if (fd >= 0) {
		struct bpf_link_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.type == BPF_LINK_TYPE_CGROUP &&
		    info.cgroup.cgroup_id == cg_id && info.cgroup.attach_type == type &&
		    bpf_link_update(fd, prog_fd, NULL) == 0)
			return 0;
		bpf_link_detach(fd);
		close(TAKE_FD(fd));
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
	}
	fd = bpf_link_create(prog_fd, cg_fd, type, NULL);
	if (fd < 0) {
		pr_warn("socket LB: attach %s: %s", path, strerror(errno));
		return -FLOWSDN_E_BPF_ATTACH;
	}
	if (bpf_obj_pin(fd, path) < 0) {
		r = -errno;
		pr_warn("socket LB: pin %s: %s", path, strerror(errno));
		bpf_link_detach(fd);
		return r;
	}
	return 0;
}

FLOWSDN_API int flowsdn_datapath_socklb_attach(struct flowsdn_datapath *dp, const char *cgroup_path)
{
	struct bpf_program *progs[SOCKLB_HOOKS];
	enum bpf_attach_type types[SOCKLB_HOOKS];
	const char *names[SOCKLB_HOOKS];
	_cleanup_close_ int cg_fd = -1;
	struct statfs sfs;
	struct stat st;
	int n, r;

	if (!dp || !cgroup_path || cgroup_path[0] != '/')
		return -EINVAL;
	cg_fd = open(cgroup_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (cg_fd < 0) {
		pr_warn("socket LB cgroup %s: %s", cgroup_path, strerror(errno));
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? -FLOWSDN_E_BPF_NOT_CGROUP2 : -errno;
	}
	if (fstatfs(cg_fd, &sfs) < 0 || fstat(cg_fd, &st) < 0)
		return -errno;
	if ((unsigned long)sfs.f_type != (unsigned long)CGROUP2_SUPER_MAGIC) {
		pr_warn("socket LB cgroup %s: not on a cgroup v2 mount", cgroup_path);
		return -FLOWSDN_E_BPF_NOT_CGROUP2;
	}
	r = ensure_links_dir(dp);
	if (r < 0)
		return r;
	n = socklb_progs(dp, progs, types, names);
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];

		r = socklb_pin_path(dp, names[i], path, sizeof(path));
		if (r == 0)
			r = socklb_attach_one(cg_fd, (uint64_t)st.st_ino, path, types[i], bpf_program__fd(progs[i]));
		if (r < 0) {
			flowsdn_datapath_socklb_detach(dp);
			return r;
		}
	}
	pr_debug("socket LB attached to %s", cgroup_path);
	return 0;
}

FLOWSDN_API int flowsdn_datapath_socklb_detach(struct flowsdn_datapath *dp)
{
	struct bpf_program *progs[SOCKLB_HOOKS];
	enum bpf_attach_type types[SOCKLB_HOOKS];
	const char *names[SOCKLB_HOOKS];
	int n, r = 0;

	if (!dp)
		return -EINVAL;
	n = socklb_progs(dp, progs, types, names);
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		int t = socklb_pin_path(dp, names[i], path, sizeof(path));

		if (t == 0)
			t = unpin_link(path);
		r = r ? r : t;
	}
	return r;
}
