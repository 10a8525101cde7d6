/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Secret files: only regular files of mode 0600/0400 owned by the caller. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <flash/file.h>

#include "helpers.h"

static char dir[] = "/tmp/flash-test-file-XXXXXX";

static void setup(void)
{
	cr_assert(mkdtemp(dir), "mkdtemp");
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(system(cmd) == 0);
}

static char *make(const char *name, const char *content, mode_t mode)
{
	char *path = NULL;
	FILE *f;

	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	f = fopen(path, "w");
	cr_assert(f);
	fputs(content, f);
	fclose(f);
	cr_assert(chmod(path, mode) == 0);
	return path;
}

TestSuite(file, .init = setup, .fini = teardown);

Test(file, mode_0600_and_0400_are_read)
{
	char *p = make("token", "secret-token\n", 0600), *q = make("ro", "x", 0400);
	char *data = NULL;
	size_t len = 0;

	ASSERT_OK(flash_file_read_secret(p, 0, &data, &len), "0600");
	ASSERT_STREQ(data, "secret-token\n", "content");
	cr_assert_eq(len, 13);
	free(data);
	ASSERT_OK(flash_file_read_secret(q, 0, &data, &len), "0400");
	free(data);
	free(p);
	free(q);
}

Test(file, loose_modes_are_refused)
{
	static const mode_t modes[] = { 0644, 0640, 0604, 0700, 0660, 0666, 0610 };
	char *data = (char *)0x1;
	size_t len = 7;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char *p = make("token", "secret", modes[i]);

		ASSERT_ERR(flash_file_read_secret(p, 0, &data, &len), -EPERM, "loose mode");
		cr_assert(data == (char *)0x1 && len == 7, "outputs untouched on failure");
		unlink(p);
		free(p);
	}
}

Test(file, not_regular_symlink_missing_too_big)
{
	char *p = make("token", "0123456789", 0600);
	char *link = NULL, *missing = NULL, *data = NULL;
	size_t len;

	cr_assert(asprintf(&link, "%s/link", dir) > 0 && asprintf(&missing, "%s/missing", dir) > 0);
	cr_assert(symlink(p, link) == 0);
	ASSERT_ERR(flash_file_read_secret(link, 0, &data, &len), -ELOOP, "symlink");
	ASSERT_ERR(flash_file_read_secret(dir, 0, &data, &len), -EBADFD, "directory");
	ASSERT_ERR(flash_file_read_secret(missing, 0, &data, &len), -ENOENT, "missing");
	ASSERT_ERR(flash_file_read_secret(p, 5, &data, &len), -EFBIG, "larger than max");
	ASSERT_ERR(flash_file_read_secret(NULL, 0, &data, &len), -EINVAL, "NULL");
	free(p);
	free(link);
	free(missing);
}

Test(file, other_owner_is_refused)
{
	char *p = make("token", "secret", 0600);
	char *data = NULL;
	size_t len;

	if (geteuid() != 0)
		cr_skip_test("needs root to give the file to another user");
	cr_assert(chown(p, 65534, 65534) == 0);
	ASSERT_ERR(flash_file_read_secret(p, 0, &data, &len), -EPERM, "owned by nobody");
	free(p);
}
