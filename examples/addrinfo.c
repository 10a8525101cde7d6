/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * addrinfo — print the canonical form and classes of addresses or
 * prefixes given on the command line.  A small user of libflowsdn:
 *   cc addrinfo.c $(pkg-config --cflags --libs libflowsdn)
 */
#include <stdio.h>
#include <string.h>
#include <flowsdn/addr.h>

static void print_classes(unsigned int classes)
{
	const char *sep = "";

	for (unsigned int bit = 1; bit; bit <<= 1) {
		const char *name = flowsdn_addr_class_name(bit);

		if ((classes & bit) && name) {
			printf("%s%s", sep, name);
			sep = ",";
		}
	}
}

int main(int argc, char **argv)
{
	int status = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s ADDRESS|PREFIX...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		FLOWSDN_OPTS(flowsdn_prefix_opts, opts, .flags = FLOWSDN_PREFIX_ALLOW_HOST);
		struct flowsdn_prefix p;
		char text[FLOWSDN_PREFIX_STRLEN];
		int r = flowsdn_prefix_parse(argv[i], strlen(argv[i]), &opts, &p);

		if (r < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], flowsdn_strerror(r));
			status = 1;
			continue;
		}
		if (p.len == flowsdn_addr_bits(&p.addr)) {
			struct flowsdn_addr_info info;

			flowsdn_addr_format(&p.addr, text, sizeof(text));
			if (flowsdn_addr_info(&p.addr, &info) < 0)
				return 1;
			printf("%-40s ", text);
			print_classes(info.classes);
			printf("%s%s%s\n", *info.name ? " (" : "", info.name, *info.name ? ")" : "");
		} else {
			flowsdn_prefix_format(&p, text, sizeof(text));
			printf("%-40s ", text);
			print_classes(flowsdn_prefix_classify(&p));
			printf(" (%llu addresses%s)\n", (unsigned long long)flowsdn_prefix_size(&p),
			       flowsdn_prefix_size(&p) == UINT64_MAX ? " or more" : "");
		}
	}
	return status;
}
