/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loop devices, as the runtime's storage tests look at them. */
#ifndef FLASH_TESTS_LOOP_HELPERS_H
#define FLASH_TESTS_LOOP_HELPERS_H

#include <stdio.h>
#include <string.h>

/* Loop devices whose backing file is @path. */
static inline int loops_of(const char *path)
{
	int n = 0;

	for (int i = 0; i < 256; i++) {
		char p[96], back[4096] = "";
		FILE *f;

		snprintf(p, sizeof(p), "/sys/block/loop%d/loop/backing_file", i);
		if (!(f = fopen(p, "r")))
			continue;
		if (fgets(back, sizeof(back), f))
			back[strcspn(back, "\n")] = '\0';
		fclose(f);
		n += strcmp(back, path) == 0;
	}
	return n;
}

#endif
