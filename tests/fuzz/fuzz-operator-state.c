/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the files flash-operator's single-node runtime
 * reads back when it starts again: DIR/replicas/ID/replica.json
 * (op_replica_record_parse(), adopt() in operator/runtime.c) and
 * DIR/net/ID.json (op_net_record_parse(), operator/runtime-net.c).  The
 * first byte of an input says which; the rest is the file.
 * Properties:
 *  - a refused file is -EBADMSG (or -ENOMEM);
 *  - an accepted one holds what the reader promises (a valid service id
 *    or "", an index under the bound, a sandbox pid with its start time;
 *    valid port service ids) and round-trips: its text as the writer
 *    writes it (op_*_record_format()) reads back to the same record,
 *    which writes the same text again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-helpers.h"
#include "names.h"
#include "runtime-internal.h"
#include "runtime-net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define INDEX_MAX 32

static void replica(const char *text, size_t len)
{
	struct op_replica_record a, b;
	char *t1 = NULL, *t2 = NULL;
	size_t l1 = 0, l2 = 0;
	int r = op_replica_record_parse(text, len, INDEX_MAX, &a);

	if (r < 0) {
		fuzz_check(r == -EBADMSG || r == -ENOMEM);
		return;
	}
	fuzz_check(!a.service[0] || names_service_id_valid(a.service));
	fuzz_check(a.index < INDEX_MAX && a.restarts < UINT32_MAX);
	fuzz_check(!a.sandbox_pid == !a.sandbox_start && a.sandbox_pid <= INT32_MAX);
	fuzz_check(memchr(a.id, 0, sizeof(a.id)) && memchr(a.address, 0, sizeof(a.address)));
	fuzz_check(op_replica_record_format(&a, &t1, &l1) == 0);
	fuzz_check(op_replica_record_parse(t1, l1, INDEX_MAX, &b) == 0);
	fuzz_check(op_replica_record_format(&b, &t2, &l2) == 0);
	fuzz_check(l1 == l2 && !memcmp(t1, t2, l1));
	fuzz_check(!strcmp(a.id, b.id) && !strcmp(a.service, b.service) && a.generation == b.generation &&
	      a.index == b.index && a.restarts == b.restarts && !strcmp(a.address, b.address) &&
	      a.ever_ready == b.ever_ready && a.udp_closed_seen == b.udp_closed_seen &&
	      a.sandbox_pid == b.sandbox_pid && a.sandbox_start == b.sandbox_start);
	free(t1);
	free(t2);
}

static void net(const char *text, size_t len)
{
	struct op_net_record a, b;
	char *t1 = NULL, *t2 = NULL;
	size_t l1 = 0, l2 = 0;
	int r = op_net_record_parse(text, len, &a);

	if (r < 0) {
		fuzz_check(r == -EBADMSG || r == -ENOMEM);
		return;
	}
	fuzz_check(names_service_id_valid(a.id) && a.n_ports <= OP_NET_RECORD_PORTS_MAX);
	for (size_t i = 0; i < a.n_ports; i++)
		fuzz_check(names_service_id_valid(a.port_ids[i]));
	fuzz_check(op_net_record_format(&a, &t1, &l1) == 0);
	fuzz_check(op_net_record_parse(t1, l1, &b) == 0);
	fuzz_check(op_net_record_format(&b, &t2, &l2) == 0);
	fuzz_check(l1 == l2 && !memcmp(t1, t2, l1));
	fuzz_check(!strcmp(a.id, b.id) && !strcmp(a.ns, b.ns) && !strcmp(a.cluster_ip, b.cluster_ip) &&
	      a.n_ports == b.n_ports);
	for (size_t i = 0; i < a.n_ports; i++)
		fuzz_check(!strcmp(a.port_ids[i], b.port_ids[i]));
	free(t1);
	free(t2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] == 'n')
		net((const char *)data + 1, size - 1);
	else
		replica((const char *)data + 1, size - 1);
	return 0;
}
