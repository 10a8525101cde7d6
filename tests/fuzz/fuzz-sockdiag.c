/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for what the kernel's sock_diag socket answers
 * flowsdn_netlink_sock_destroy() (libflowsdn/netlink-sockdiag.c): one
 * received buffer through flowsdn__sockdiag_parse(), the function nl_recv()
 * calls on every recv().  The first byte chooses the request (bit 0: an
 * AF_INET6 dump, else AF_INET; bit 1: an IPv6 peer fd00::7, else
 * 10.0.0.7; bit 2: awaiting a destroy's ack, no victims collected); the
 * rest is the buffer, copied to one of exactly its size so that ASan sees
 * a read past it.  The request is seq 2, the peer's port 8080.
 * Properties, against a walk of the buffer written here by offsets:
 *  - the victims are exactly the SOCK_DIAG_BY_FAMILY messages of seq 2,
 *    long enough for a whole inet_diag_msg, of the dump's family and to
 *    the peer, before the first NLMSG_DONE/NLMSG_ERROR of seq 2, in
 *    order (so never more than the messages, never another port,
 *    family or address); none when awaiting an ack;
 *  - the result is 1 when such a DONE or an ERROR of 0 ends the answer,
 *    the error of an NLMSG_ERROR that holds a whole nlmsgerr with a
 *    negative errno, -EBADMSG for any other NLMSG_ERROR, 0 when nothing
 *    of seq 2 ended it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>

#include "fuzz-helpers.h"
#include "netlink-sockdiag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEQ 2
#define PORT 8080

static bool to_peer(const struct inet_diag_msg *m, uint8_t family, const struct flowsdn_addr *peer)
{
	static const uint8_t v4[4] = { 10, 0, 0, 7 };
	static const uint8_t v6[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7 };
	static const uint8_t mapped[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7 };
	const uint8_t *dst = (const uint8_t *)m->id.idiag_dst;

	if (m->idiag_family != family || m->id.idiag_dport != htons(PORT))
		return false;
	if (family == AF_INET)
		return peer->family == FLOWSDN_AF_INET && !memcmp(dst, v4, 4);
	return !memcmp(dst, peer->family == FLOWSDN_AF_INET ? mapped : v6, 16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flowsdn__sockdiag_victims v = { 0 };
	struct flowsdn_addr peer;
	const char *peer_text;
	uint8_t family, *buf;
	size_t len, off = 0, n_want = 0, n_msgs = 0;
	bool ack, ended = false;
	int want = 0, r;

	if (size == 0)
		return 0;
	family = data[0] & 1 ? AF_INET6 : AF_INET;
	peer_text = data[0] & 2 ? "fd00::7" : "10.0.0.7";
	ack = data[0] & 4;
	fuzz_check(flowsdn_addr_parse(peer_text, strlen(peer_text), &peer) == 0);
	len = size - 1;
	buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, len);

	r = flowsdn__sockdiag_parse(buf, len, SEQ, family, &peer, PORT, ack ? NULL : &v);

	/* The same buffer walked here: header by header, each whole. */
	while (!ended && len - off >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr h;
		size_t step;

		memcpy(&h, buf + off, sizeof(h));
		if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len - off)
			break;
		n_msgs++;
		if (h.nlmsg_seq == SEQ) {
			if (h.nlmsg_type == NLMSG_DONE) {
				want = 1;
				ended = true;
			} else if (h.nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr e;

				want = -EBADMSG;
				if (h.nlmsg_len >= sizeof(h) + sizeof(e)) {
					memcpy(&e, buf + off + sizeof(h), sizeof(e));
					if (e.error == 0)
						want = 1;
					else if (e.error < 0 && e.error >= -4095)
						want = e.error;
				}
				ended = true;
			} else if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY && !ack &&
				   h.nlmsg_len >= sizeof(h) + sizeof(struct inet_diag_msg)) {
				struct inet_diag_msg m;

				memcpy(&m, buf + off + sizeof(h), sizeof(m));
				if (to_peer(&m, family, &peer)) {
					fuzz_check(r == -E2BIG || n_want < v.n);
					if (n_want < v.n) {
						fuzz_check(v.families[n_want] == family);
						fuzz_check(!memcmp(&v.ids[n_want], &m.id, sizeof(m.id)));
					}
					n_want++;
				}
			}
		}
		step = (h.nlmsg_len + 3u) & ~(size_t)3;
		if (step > len - off)
			break;
		off += step;
	}
	fuzz_check(v.n <= n_msgs);
	if (r == -E2BIG || r == -ENOMEM) {
		fuzz_check(v.n <= n_want);
	} else {
		fuzz_check(r == want);
		fuzz_check(v.n == n_want);
	}
	if (ack)
		fuzz_check(v.n == 0);
	flowsdn__sockdiag_victims_clear(&v);
	free(buf);
	return 0;
}
