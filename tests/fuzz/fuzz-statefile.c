/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the binary state files libflowsdn reads back
 * (libflowsdn/statefile.c): IPAM's ipam.state and the identity store's
 * identity.state, through flowsdn_ipam_new() and flowsdn_identity_new()
 * as flowsdn-cni, flowsdn-agent and the tools open them.  The first byte
 * of an input says what the rest is:
 *   'i'  an IPAM payload, 'd' an identity payload: written in a state
 *        file with its header and checksum by statefile_write(), as the
 *        library writes them, so that the payload parsers are reached;
 *   'I', 'D': the whole file (magic, version, length, checksum).
 * IPAM is opened with the pools 10.1.0.0/24 and fd00:1::/120.
 * Properties:
 *  - a refused file is one of the state errors and is kept as it is,
 *    byte for byte;
 *  - an accepted one round-trips: a change made and undone (an address
 *    allocated and released, an identity acquired and released) makes the
 *    library write its own state, which opens again to the same
 *    allocations or identities.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/addr.h>
#include <flowsdn/identity.h>
#include <flowsdn/ipam.h>

#include "fuzz-helpers.h"
#include "statefile.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static char top[256], dir[300];
static struct flowsdn_prefix pools[2];

static void cleanup(void)
{
	fuzz_tmpdir_remove(top);
}

static void setup(void)
{
	static const char *const p[] = { "10.1.0.0/24", "fd00:1::/120" };

	fuzz_tmpdir_make(top, sizeof(top), "fuzz-statefile");
	snprintf(dir, sizeof(dir), "%s/state", top);
	for (size_t i = 0; i < 2; i++)
		fuzz_check(flowsdn_prefix_parse(p[i], strlen(p[i]), NULL, &pools[i]) == 0);
	atexit(cleanup);
}

static char *read_back(const char *path, size_t *ret_len)
{
	char *p = NULL;

	*ret_len = 0;
	return util_read_file(path, 1 << 26, &p, ret_len) < 0 ? NULL : p;
}

static int ipam_list(struct flowsdn_ipam_allocation **ret, size_t *ret_n)
{
	struct flowsdn_ipam *ipam = NULL;
	int r = flowsdn_ipam_new(dir, pools, 2, NULL, &ipam, NULL);

	if (r == 0)
		r = flowsdn_ipam_list(ipam, ret, ret_n);
	flowsdn_ipam_free(ipam);
	return r;
}

static void ipam(const char *path)
{
	struct flowsdn_ipam_allocation *a = NULL, *b = NULL;
	struct flowsdn_ipam *h = NULL;
	size_t na = 0, nb = 0, before_len, after_len;
	char *before = read_back(path, &before_len), *after;
	int r = ipam_list(&a, &na);

	if (getenv("FUZZ_STATEFILE_DEBUG"))
		fprintf(stderr, "ipam: %d, %zu allocations\n", r, na);

	if (r < 0) {
		fuzz_check(r == -FLOWSDN_E_IPAM_STATE_CORRUPT || r == -FLOWSDN_E_IPAM_STATE_VERSION ||
		      r == -FLOWSDN_E_IPAM_ORPHAN || r == -ENOMEM);
		after = read_back(path, &after_len);
		fuzz_check(!after == !before && after_len == before_len && (!before || !memcmp(after, before, before_len)));
		free(after);
		free(before);
		return;
	}
	/* A change and its undoing: the library writes the state twice. */
	fuzz_check(flowsdn_ipam_new(dir, pools, 2, NULL, &h, NULL) == 0);
	r = flowsdn_ipam_allocate(h, "fuzz-probe", "eth9", NULL, NULL, NULL);
	fuzz_check(r == 0 || r == -FLOWSDN_E_IPAM_EXHAUSTED || r == -FLOWSDN_E_IPAM_IN_USE);
	if (r == 0)
		fuzz_check(flowsdn_ipam_release(h, "fuzz-probe", "eth9", NULL) >= 1);
	flowsdn_ipam_free(h);
	fuzz_check(ipam_list(&b, &nb) == 0);
	fuzz_check(na == nb);
	for (size_t i = 0; i < na; i++)
		fuzz_check(!strcmp(a[i].container_id, b[i].container_id) && !strcmp(a[i].ifname, b[i].ifname) &&
		      flowsdn_addr_compare(&a[i].addr, &b[i].addr) == 0 &&
		      flowsdn_prefix_compare(&a[i].pool, &b[i].pool) == 0);
	free(a);
	free(b);
	free(before);
}

static int identity_list(struct flowsdn_identity_info **ret, size_t *ret_n)
{
	struct flowsdn_identity_store *s = NULL;
	int r = flowsdn_identity_new(dir, NULL, &s);

	if (r == 0)
		r = flowsdn_identity_list(s, ret, ret_n);
	flowsdn_identity_free(s);
	return r;
}

static void identity(const char *path)
{
	static const struct flowsdn_label probe = { .key = "fuzz.example/probe", .value = "x" };
	struct flowsdn_identity_info *a = NULL, *b = NULL;
	struct flowsdn_identity_store *s = NULL;
	size_t na = 0, nb = 0, before_len, after_len;
	char *before = read_back(path, &before_len), *after;
	uint32_t id;
	int r = identity_list(&a, &na);

	if (getenv("FUZZ_STATEFILE_DEBUG"))
		fprintf(stderr, "identity: %d, %zu identities\n", r, na);

	if (r < 0) {
		fuzz_check(r == -FLOWSDN_E_IDENTITY_STATE_CORRUPT || r == -FLOWSDN_E_IDENTITY_STATE_VERSION ||
		      r == -ENOMEM);
		after = read_back(path, &after_len);
		fuzz_check(!after == !before && after_len == before_len && (!before || !memcmp(after, before, before_len)));
		free(after);
		free(before);
		return;
	}
	fuzz_check(flowsdn_identity_new(dir, NULL, &s) == 0);
	r = flowsdn_identity_acquire(s, &probe, 1, &id);
	fuzz_check(r == 0 || r == -FLOWSDN_E_IDENTITY_EXHAUSTED || r == -EOVERFLOW);
	if (r == 0)
		fuzz_check(flowsdn_identity_release(s, id) >= 0);
	flowsdn_identity_free(s);
	fuzz_check(identity_list(&b, &nb) == 0);
	fuzz_check(na == nb);
	for (size_t i = 0; i < na; i++)
		fuzz_check(a[i].id == b[i].id && a[i].refcount == b[i].refcount && !strcmp(a[i].labels, b[i].labels));
	free(a);
	free(b);
	free(before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[400];
	bool is_ipam;
	FILE *f;

	if (!top[0])
		setup();
	if (size == 0)
		return 0;
	is_ipam = data[0] == 'i' || data[0] == 'I';
	fuzz_tmpdir_remove(dir);
	fuzz_check(statefile_ensure_dir(dir) == 0);
	snprintf(path, sizeof(path), "%s/%s", dir, is_ipam ? "ipam.state" : "identity.state");
	switch (data[0]) {
	case 'i': fuzz_check(statefile_write(path, "FSDNIPAM", 1, data + 1, size - 1) == 0); break;
	case 'd': fuzz_check(statefile_write(path, "FSDNIDNT", 1, data + 1, size - 1) == 0); break;
	case 'I':
	case 'D':
		f = fopen(path, "we");
		fuzz_check(f && (size == 1 || fwrite(data + 1, 1, size - 1, f) == size - 1) && fclose(f) == 0);
		break;
	default: return 0;
	}
	if (is_ipam)
		ipam(path);
	else
		identity(path);
	return 0;
}
