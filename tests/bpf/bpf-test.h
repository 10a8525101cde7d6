/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the BPF tests share: the real datapath loaded into a private bpffs
 * of the test's own node (node_enter() of netns-helpers.h first), its
 * pinned programs, the drop counters; frames for BPF_PROG_TEST_RUN, the
 * Internet checksum and the run itself.
 */
#ifndef FLASH_TESTS_BPF_TEST_H
#define FLASH_TESTS_BPF_TEST_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <flowsdn/datapath.h>
#include <flowsdn/maps.h>

#include "helpers.h"

/* ------------------------------------------------------------ the datapath */

/* Makes the bpffs directory @dir (a /tmp/flowsdn-@tag-XXXXXX name, @size
 * >= 64) and loads the datapath there with @opts (NULL: defaults; its
 * pin_dir is set here).  Returns the datapath; *ret_maps its maps. */
static inline struct flowsdn_datapath *dp_open(char *dir, size_t size, const char *tag,
					       const struct flowsdn_datapath_opts *opts, struct flowsdn_maps **ret_maps)
{
	struct flowsdn_datapath_opts o = { .sz = sizeof(o) };
	struct flowsdn_datapath *d = NULL;
	int r;

	if (opts)
		o = *opts;
	snprintf(dir, size, "/tmp/flowsdn-%s-XXXXXX", tag);
	cr_assert(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
	o.pin_dir = dir;
	r = flowsdn_datapath_open(&o, &d);
	cr_assert(r == 0, "load: %s", flowsdn_strerror(r));
	*ret_maps = flowsdn_datapath_maps(d);
	return d;
}

/* The fd of the program or map pinned as @name in @dir. */
static inline int dp_pinned(const char *dir, const char *name)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	cr_assert(fd >= 0, "pinned %s: %s", path, strerror(errno));
	return fd;
}

/* Frees *@dpp and unmounts and removes @dir (both may be unset). */
static inline void dp_close(struct flowsdn_datapath **dpp, const char *dir)
{
	flowsdn_datapath_free(*dpp);
	*dpp = NULL;
	if (dir[0]) {
		umount2(dir, MNT_DETACH);
		rmdir(dir);
	}
}

/* Packets dropped for @reason so far. */
static inline uint64_t dp_drops(struct flowsdn_maps *m, unsigned int reason)
{
	struct flowsdn_drop_counters d;

	ASSERT_OK(flowsdn_maps_drop_counters(m, reason, &d), "drop counters");
	return d.packets;
}

/* ------------------------------------------------------------ frames */

/* b sits 2 bytes past an 8-byte boundary, so that the IP header after the
 * 14-byte Ethernet header is 4-byte aligned, as in an skb. */
struct frame {
	uint8_t pad[2];
	uint8_t b[256];
	size_t len;
} __attribute__((aligned(8)));

/* The one's complement sum of @len bytes at @p added to @s (unfolded). */
static inline uint32_t sum16(const void *p, size_t len, uint32_t s)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	return s;
}

static inline uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* The Internet checksum of @len bytes (an IPv4 header). */
static inline uint16_t csum(const void *p, size_t len)
{
	return fold(sum16(p, len, 0));
}

/* The TCP/UDP/ICMPv6 checksum over @l4 (@len bytes) with the pseudo
 * header of @family's addresses @src/@dst; the checksum field must hold
 * zero for computing, or the value to verify (then the result is 0). */
static inline uint16_t l4_checksum(int family, const void *src, const void *dst, uint8_t proto, const void *l4,
				   size_t len)
{
	size_t alen = family == AF_INET ? 4 : 16;
	uint32_t s = sum16(src, alen, 0);

	s = sum16(dst, alen, s);
	s += proto;
	s += (uint32_t)len;
	return fold(sum16(l4, len, s));
}

/* Runs @prog on @f as received on @ifindex (BPF_PROG_TEST_RUN); returns
 * the verdict, @f is replaced by the output bytes (of the same length). */
static inline int run_on(int prog, struct frame *f, int ifindex)
{
	struct __sk_buff ctx = { .ifindex = (__u32)ifindex };
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = (__u32)f->len, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);
	int r = bpf_prog_test_run_opts(prog, &o);

	cr_assert(r == 0, "BPF_PROG_TEST_RUN: %s", strerror(-r));
	cr_assert(o.data_size_out == f->len, "output length %u, input %zu", o.data_size_out, f->len);
	memcpy(f->b, out, f->len);
	return (int)o.retval;
}

#endif
