/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The replay driver of the fuzz targets outside a fuzzing build: linked
 * with a target's LLVMFuzzerTestOneInput() in place of libFuzzer, it runs
 * the target once on every file named (a directory: each regular file in
 * it), as libFuzzer does with file arguments.  make check runs every
 * target over its seed corpus and its found crashes (tests/fuzz/replay.sh),
 * so each crash a fuzzer found stays a regression test of the ordinary
 * and the sanitizer builds.  Arguments starting with '-' (libFuzzer
 * options of NAME.args) are ignored.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static unsigned long runs;

static int run_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "replay: %s: not a readable regular file\n", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -1;
	}
	while (got < (size_t)st.st_size && (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	/* An exact-size copy, so that ASan sees a read past the input. */
	{
		uint8_t *exact = malloc(got ? got : 1);

		if (!exact) {
			free(buf);
			return -1;
		}
		memcpy(exact, buf, got);
		free(buf);
		LLVMFuzzerTestOneInput(exact, got);
		free(exact);
	}
	runs++;
	return 0;
}

static int run_path(const char *path)
{
	struct stat st;
	struct dirent **names;
	int n, bad = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: missing\n", path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path);
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char *p;

		if (names[i]->d_name[0] != '.' && asprintf(&p, "%s/%s", path, names[i]->d_name) > 0) {
			struct stat est;

			if (stat(p, &est) == 0 && S_ISREG(est.st_mode) && run_file(p) < 0)
				bad = -1;
			free(p);
		}
		free(names[i]);
	}
	free(names);
	return bad;
}

int main(int argc, char **argv)
{
	int bad = 0;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		if (argv[i][0] != '-' && run_path(argv[i]) < 0)
			bad = 1;
	printf("%s: %lu inputs replayed\n", argv[0], runs);
	return bad;
}
