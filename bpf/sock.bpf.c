// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The socket load balancer: cgroup sock_addr programs attached to a
 * cgroup v2 directory (the root in production), so that a process of that
 * cgroup that connects to a service frontend is connected to a backend
 * instead, with no per-packet translation at all.
 *
 *   connect4/6    TCP and UDP connect(): frontend -> backend (the backend
 *                 chosen by lib/lb.h); the choice is recorded in
 *                 flowsdn_sock_rnat under the socket's cookie and the
 *                 backend; the record of the peer it had goes first, so
 *                 a connect() to anything else forgets the frontend.
 *   sendmsg4/6    unconnected UDP sendmsg() to a frontend: the same, per
 *                 datagram (one socket may send to many frontends).
 *   recvmsg4/6    UDP recvmsg(): a datagram from a backend this socket was
 *                 sent to appears to come from the frontend.
 *   getpeername4/6  the frontend, not the backend.
 *   sock_release  a connected socket's record goes with it.
 *
 * The record is an LRU hash entry, not socket storage: measured beside
 * each other (bench/services, README), creating a socket's storage in
 * connect() and freeing it at close cost the connect/close cycle about
 * 5 %, the hash update, its delete at release and the release hook about
 * 2 %.  Deleted at release, entries stay as many as the translated
 * sockets open at once, so a live connection's record is pushed out only
 * past FLOWSDN_MAX_SOCK_REVNAT of them; unconnected UDP's records, and
 * those of a connect() that failed before the socket took its peer, age
 * out of the LRU.
 *
 * IPv6 sockets reaching IPv4 services through IPv4-mapped addresses
 * (::ffff:a.b.c.d) are translated as IPv4, the backend written back
 * mapped.  Clients are always in the cluster, so a frontend with two
 * scopes answers from its internal view.  A frontend with no active
 * backend refuses connect() and sendmsg() with ECONNREFUSED; a frontend
 * whose backend family differs from the socket's is refused with
 * EAFNOSUPPORT.  Anything that is not a frontend is left alone.
 */
#include "lib/common.h"
#include "lib/lb.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SYS_PROCEED 1
#define SYS_REJECT 0
#define ECONNREFUSED_ 111
#define EAFNOSUPPORT_ 97

/* A socket address as the programs see it: IPv4 in addr[0]. */
struct sock_addr {
	__be32 addr[4];
	__be16 port;
	__u8 family;
};

static __always_inline int is_v4_mapped(const __be32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0x0000ffff);
}

static __always_inline void addr_from_ctx4(struct bpf_sock_addr *ctx, struct sock_addr *sa)
{
	sa->addr[0] = ctx->user_ip4;
	sa->addr[1] = 0;
	sa->addr[2] = 0;
	sa->addr[3] = 0;
	sa->port = (__be16)ctx->user_port;
	sa->family = AF_INET;
}

/* IPv4-mapped addresses become AF_INET. */
static __always_inline void addr_from_ctx6(struct bpf_sock_addr *ctx, struct sock_addr *sa)
{
	sa->addr[0] = ctx->user_ip6[0];
	sa->addr[1] = ctx->user_ip6[1];
	sa->addr[2] = ctx->user_ip6[2];
	sa->addr[3] = ctx->user_ip6[3];
	sa->port = (__be16)ctx->user_port;
	sa->family = AF_INET6;
	if (is_v4_mapped(sa->addr)) {
		sa->addr[0] = sa->addr[3];
		sa->addr[1] = 0;
		sa->addr[2] = 0;
		sa->addr[3] = 0;
		sa->family = AF_INET;
	}
}

static __always_inline void addr_to_ctx4(struct bpf_sock_addr *ctx, const __be32 *addr, __be16 port)
{
	ctx->user_ip4 = addr[0];
	ctx->user_port = (__u32)port;
}

/* @family AF_INET is written back IPv4-mapped. */
static __always_inline void addr_to_ctx6(struct bpf_sock_addr *ctx, __u8 family, const __be32 *addr, __be16 port)
{
	if (family == AF_INET) {
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = bpf_htonl(0x0000ffff);
		ctx->user_ip6[3] = addr[0];
	} else {
		ctx->user_ip6[0] = addr[0];
		ctx->user_ip6[1] = addr[1];
		ctx->user_ip6[2] = addr[2];
		ctx->user_ip6[3] = addr[3];
	}
	ctx->user_port = (__u32)port;
}

static __always_inline void revnat_key_make(struct flowsdn_sock_revnat_key *k, __u64 cookie, __u8 family,
					    const __be32 *addr, __be16 port)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->cookie = cookie;
	k->addr[0] = addr[0];
	k->addr[1] = addr[1];
	k->addr[2] = addr[2];
	k->addr[3] = addr[3];
	k->port = port;
	k->family = family;
}

/* The record of the peer @sk is connected to (its destination as the
 * socket holds it: a backend if the socket LB chose one), removed: before
 * a connect() replaces that peer, and when the socket is released.  A
 * socket that was never connected (port 0) has none. */
static __always_inline void revnat_forget_peer(struct bpf_sock *sk, __u64 cookie)
{
	struct flowsdn_sock_revnat_key rk;
	__be32 a[4] = { 0, 0, 0, 0 };
	__u8 family = AF_INET;

	if (!sk->dst_port)
		return;
	if (sk->family == AF_INET) {
		a[0] = sk->dst_ip4;
	} else if (sk->family == AF_INET6) {
		a[0] = sk->dst_ip6[0];
		a[1] = sk->dst_ip6[1];
		a[2] = sk->dst_ip6[2];
		a[3] = sk->dst_ip6[3];
		family = AF_INET6;
		if (is_v4_mapped(a)) {
			a[0] = a[3];
			a[1] = 0;
			a[2] = 0;
			a[3] = 0;
			family = AF_INET;
		}
	} else {
		return;
	}
	revnat_key_make(&rk, cookie, family, a, (__be16)sk->dst_port);
	bpf_map_delete_elem(&flowsdn_sock_rnat, &rk);
}

/*
 * Forward translation of @sa (the destination the application gave):
 * 0 and @sa rewritten to the backend, 1 when @sa is no frontend (nothing
 * to do), or a negative errno to refuse the call with.  The choice is
 * recorded in flowsdn_sock_rnat under the socket's cookie and the
 * backend, for recvmsg and getpeername.
 */
static __always_inline int xlate_fwd(struct bpf_sock_addr *ctx, struct sock_addr *sa, int connect)
{
	struct flowsdn_service_value *svc;
	struct flowsdn_backend *be;
	struct flowsdn_affinity_key aff;
	struct flowsdn_sock_revnat_key rk;
	struct flowsdn_sock_revnat_value rv;
	__u64 cookie;
	__u32 id = 0, hash;
	__u8 protocol = (__u8)ctx->protocol;

	if (protocol != IPPROTO_TCP && protocol != IPPROTO_UDP)
		return 1;
	svc = lb_lookup_service(sa->family, protocol, sa->addr, sa->port, 1);
	if (!svc) {
		/* A socket connected again elsewhere (UDP) forgets its frontend. */
		if (connect && ctx->sk->dst_port)
			revnat_forget_peer(ctx->sk, bpf_get_socket_cookie(ctx));
		return 1;
	}
	cookie = bpf_get_socket_cookie(ctx);
	/* Maglev: every datagram of a socket on the same backend; random:
	 * a fresh choice per connect()/sendmsg(). */
	hash = (svc->flags & FLOWSDN_SVC_F_MAGLEV) ? lb_hash_u64(cookie) : bpf_get_prandom_u32();
	lb_affinity_key_netns(&aff, svc->svc_id, bpf_get_netns_cookie(ctx));
	be = lb_select_backend(svc, &aff, hash, &id);
	if (!be)
		return -ECONNREFUSED_;
	if (be->family != sa->family)
		return -EAFNOSUPPORT_;
	if (connect)
		revnat_forget_peer(ctx->sk, cookie);
	revnat_key_make(&rk, cookie, be->family, be->addr, be->port);
	rv.addr[0] = sa->addr[0];
	rv.addr[1] = sa->addr[1];
	rv.addr[2] = sa->addr[2];
	rv.addr[3] = sa->addr[3];
	rv.port = sa->port;
	rv.family = sa->family;
	rv.pad0 = 0;
	rv.svc_id = svc->svc_id;
	bpf_map_update_elem(&flowsdn_sock_rnat, &rk, &rv, BPF_ANY);
	sa->addr[0] = be->addr[0];
	sa->addr[1] = be->addr[1];
	sa->addr[2] = be->addr[2];
	sa->addr[3] = be->addr[3];
	sa->port = be->port;
	return 0;
}

/* Reverse translation of @sa (a peer address about to be shown to the
 * application): 1 when @sa was rewritten to the frontend. */
static __always_inline int xlate_rev(struct bpf_sock_addr *ctx, struct sock_addr *sa)
{
	struct flowsdn_sock_revnat_key rk;
	struct flowsdn_sock_revnat_value *rv;

	revnat_key_make(&rk, bpf_get_socket_cookie(ctx), sa->family, sa->addr, sa->port);
	rv = bpf_map_lookup_elem(&flowsdn_sock_rnat, &rk);
	if (!rv || rv->family != sa->family)
		return 0;
	sa->addr[0] = rv->addr[0];
	sa->addr[1] = rv->addr[1];
	sa->addr[2] = rv->addr[2];
	sa->addr[3] = rv->addr[3];
	sa->port = rv->port;
	return 1;
}

static __always_inline int fwd4(struct bpf_sock_addr *ctx, int connect)
{
	struct sock_addr sa;
	int r;

	addr_from_ctx4(ctx, &sa);
	r = xlate_fwd(ctx, &sa, connect);
	if (r < 0) {
		bpf_set_retval(r);
		return SYS_REJECT;
	}
	if (r == 0)
		addr_to_ctx4(ctx, sa.addr, sa.port);
	return SYS_PROCEED;
}

static __always_inline int fwd6(struct bpf_sock_addr *ctx, int connect)
{
	struct sock_addr sa;
	int r;

	addr_from_ctx6(ctx, &sa);
	r = xlate_fwd(ctx, &sa, connect);
	if (r < 0) {
		bpf_set_retval(r);
		return SYS_REJECT;
	}
	if (r == 0)
		addr_to_ctx6(ctx, sa.family, sa.addr, sa.port);
	return SYS_PROCEED;
}

static __always_inline int rev4(struct bpf_sock_addr *ctx)
{
	struct sock_addr sa;

	addr_from_ctx4(ctx, &sa);
	if (xlate_rev(ctx, &sa))
		addr_to_ctx4(ctx, sa.addr, sa.port);
	return SYS_PROCEED;
}

static __always_inline int rev6(struct bpf_sock_addr *ctx)
{
	struct sock_addr sa;

	addr_from_ctx6(ctx, &sa);
	if (xlate_rev(ctx, &sa))
		addr_to_ctx6(ctx, sa.family, sa.addr, sa.port);
	return SYS_PROCEED;
}

SEC("cgroup/connect4")
int sock_connect4(struct bpf_sock_addr *ctx)
{
	return fwd4(ctx, 1);
}

SEC("cgroup/connect6")
int sock_connect6(struct bpf_sock_addr *ctx)
{
	return fwd6(ctx, 1);
}

SEC("cgroup/sendmsg4")
int sock_sendmsg4(struct bpf_sock_addr *ctx)
{
	return fwd4(ctx, 0);
}

SEC("cgroup/sendmsg6")
int sock_sendmsg6(struct bpf_sock_addr *ctx)
{
	return fwd6(ctx, 0);
}

SEC("cgroup/recvmsg4")
int sock_recvmsg4(struct bpf_sock_addr *ctx)
{
	return rev4(ctx);
}

SEC("cgroup/recvmsg6")
int sock_recvmsg6(struct bpf_sock_addr *ctx)
{
	return rev6(ctx);
}

SEC("cgroup/getpeername4")
int sock_getpeername4(struct bpf_sock_addr *ctx)
{
	return rev4(ctx);
}

SEC("cgroup/getpeername6")
int sock_getpeername6(struct bpf_sock_addr *ctx)
{
	return rev6(ctx);
}

/* A TCP or UDP socket released: the record of its connected peer goes
 * with it (unconnected UDP's records, one per backend sent to, are left
 * to the LRU). */
SEC("cgroup/sock_release")
int sock_release(struct bpf_sock *sk)
{
	if (sk->dst_port && (sk->protocol == IPPROTO_TCP || sk->protocol == IPPROTO_UDP))
		revnat_forget_peer(sk, bpf_get_socket_cookie(sk));
	return SYS_PROCEED;
}
