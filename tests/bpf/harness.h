/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loading tests/bpf/nat-test.bpf.o, the harness of the bpf/lib headers,
 * with its pinned maps in @pin_dir (a bpffs the test made). */
#ifndef FLASH_TESTS_BPF_HARNESS_H
#define FLASH_TESTS_BPF_HARNESS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

/* Opens and loads the harness; *ret_prog and *ret_map are the fds of the
 * program @prog and the map @map. */
static inline struct bpf_object *harness_load(const char *pin_dir, const char *prog, const char *map, int *ret_prog,
					      int *ret_map)
{
	const char *top = getenv("top_builddir") ? getenv("top_builddir") : ".";
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = pin_dir);
	struct bpf_object *obj;
	char path[4096];

	snprintf(path, sizeof(path), "%s/tests/bpf/nat-test.bpf.o", top);
	obj = bpf_object__open_file(path, &oo);
	cr_assert(obj, "open %s: %s", path, strerror(errno));
	cr_assert(bpf_object__load(obj) == 0, "load %s (verifier log above)", path);
	*ret_prog = bpf_program__fd(bpf_object__find_program_by_name(obj, prog));
	*ret_map = bpf_map__fd(bpf_object__find_map_by_name(obj, map));
	cr_assert(*ret_prog >= 0 && *ret_map >= 0, "%s, %s in %s", prog, map, path);
	return obj;
}

#endif
