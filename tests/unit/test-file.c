/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Files named from outside: util_read_file() opens them without blocking
 * and reads regular files only; secret files are regular files of mode
 * exactly 0600/0400 owned by the caller. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <flash/file.h>

#include "helpers.h"
#include "util.h"

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

/* A successful read of exactly @want (the outputs are read after the call
 * @r came from); frees the buffer. */
static void expect_read(int r, char **data, const size_t *len, const char *want, const char *what)
{
	ASSERT_OK(r, what);
	ASSERT_STREQ(*data, want, what);
	cr_assert_eq(*len, strlen(want), "%s: length %zu", what, *len);
	free(*data);
	*data = NULL;
}

TestSuite(file, .init = setup, .fini = teardown);

Test(file, mode_0600_and_0400_are_read)
{
	char *p = make("token", "secret-token\n", 0600), *q = make("ro", "x", 0400);
	char *data = NULL;
	size_t len = 0;

	expect_read(flash_file_read_secret(p, 0, &data, &len), &data, &len, "secret-token\n", "0600");
	expect_read(flash_file_read_secret(q, 0, &data, &len), &data, &len, "x", "0400");
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

/* Modes that leave group and others out but are still not 0600 or 0400:
 * write-only, setuid, setgid, sticky. */
Test(file, near_secret_modes_are_refused)
{
	static const mode_t modes[] = { 0200, 04600, 01600, 02600, 04400, 02400, 01400, 0500, 0100, 0000 };
	char *data = (char *)0x1;
	size_t len = 7;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char *p = make("token", "secret", 0600);
		int r;

		cr_assert(chmod(p, modes[i]) == 0);
		r = flash_file_read_secret(p, 0, &data, &len);
		/* Without root an unreadable mode fails at open(); either way it
		 * is refused. */
		if (geteuid() == 0 || (modes[i] & 0400))
			cr_assert(r == -EPERM, "mode %04o: %d, want -EPERM", (unsigned int)modes[i], r);
		else
			cr_assert(r == -EPERM || r == -EACCES, "mode %04o: %d", (unsigned int)modes[i], r);
		cr_assert(data == (char *)0x1 && len == 7, "outputs untouched on failure");
		unlink(p);
		free(p);
	}
}

/* A FIFO with no writer: refused at once, never waited on (the timeout
 * catches a reader that blocks in open()). */
Test(file, fifo_without_writer_is_refused_at_once, .timeout = 10)
{
	char *fifo = NULL, *data = (char *)0x1;
	size_t len = 7;

	cr_assert(asprintf(&fifo, "%s/fifo", dir) > 0);
	cr_assert(mkfifo(fifo, 0600) == 0);
	ASSERT_ERR(util_read_file(fifo, 1024, &data, &len), -EBADFD, "util_read_file on a FIFO");
	ASSERT_ERR(flash_file_read_secret(fifo, 0, &data, &len), -EBADFD, "secret file on a FIFO");
	cr_assert(data == (char *)0x1 && len == 7, "outputs untouched on failure");
	ASSERT_STREQ(util_read_strerror(-EBADFD), "not a regular file", "message");
	free(fifo);
}

Test(file, read_file_regular_only_and_bounded)
{
	char *p = make("f", "0123456789", 0644), *empty = make("empty", "", 0644);
	char *data = NULL;
	size_t len = 0;

	expect_read(util_read_file(p, 10, &data, &len), &data, &len, "0123456789", "exactly max bytes");
	ASSERT_ERR(util_read_file(p, 9, &data, &len), -EFBIG, "one byte over max");
	expect_read(util_read_file(empty, 0, &data, &len), &data, &len, "", "empty file");
	ASSERT_ERR(util_read_file(dir, 1024, &data, &len), -EBADFD, "directory");
	ASSERT_ERR(util_read_file("/dev/null", 1024, &data, &len), -EBADFD, "character device");
	ASSERT_ERR(util_read_file(NULL, 1024, &data, &len), -EINVAL, "NULL path");
	free(p);
	free(empty);
}

/* A file longer than its size said (procfs reports 0) is read whole. */
Test(file, read_fd_past_the_hint)
{
	char *p = make("f", "abcdefghijklmnopqrstuvwxyz", 0644);
	char *data = NULL;
	size_t len = 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC);

	cr_assert(fd >= 0);
	expect_read(util_read_fd(fd, 0, 26, true, &data, &len), &data, &len, "abcdefghijklmnopqrstuvwxyz", "hint 0");
	cr_assert(lseek(fd, 0, SEEK_SET) == 0);
	ASSERT_ERR(util_read_fd(fd, 3, 25, true, &data, &len), -EFBIG, "longer than max");
	close(fd);
	free(p);
}

/* Public key sets: any mode without group or other write, owned by the
 * caller or root; the type and symlink rules of secret files. */
Test(file, public_files_need_integrity_not_secrecy)
{
	static const mode_t ok_modes[] = { 0644, 0444, 0600, 0400, 0604, 0640 };
	static const mode_t bad_modes[] = { 0664, 0666, 0646, 0622, 0602, 0620 };
	char *p = make("keys", "{\"keys\":[]}", 0644), *link = NULL, *fifo = NULL;
	char *data = (char *)0x1;
	size_t len = 7;

	for (size_t i = 0; i < sizeof(ok_modes) / sizeof(ok_modes[0]); i++) {
		cr_assert(chmod(p, ok_modes[i]) == 0);
		expect_read(flash_file_read_public(p, 0, &data, &len), &data, &len, "{\"keys\":[]}", "readable mode");
	}
	data = (char *)0x1;
	len = 7;
	for (size_t i = 0; i < sizeof(bad_modes) / sizeof(bad_modes[0]); i++) {
		cr_assert(chmod(p, bad_modes[i]) == 0);
		cr_assert(flash_file_read_public(p, 0, &data, &len) == -EPERM, "mode %04o accepted",
			  (unsigned int)bad_modes[i]);
		cr_assert(data == (char *)0x1 && len == 7, "outputs untouched on failure");
	}
	cr_assert(chmod(p, 0644) == 0);
	cr_assert(asprintf(&link, "%s/link", dir) > 0 && asprintf(&fifo, "%s/fifo", dir) > 0);
	cr_assert(symlink(p, link) == 0 && mkfifo(fifo, 0644) == 0);
	ASSERT_ERR(flash_file_read_public(link, 0, &data, &len), -ELOOP, "symlink");
	ASSERT_ERR(flash_file_read_public(fifo, 0, &data, &len), -EBADFD, "FIFO");
	ASSERT_ERR(flash_file_read_public(dir, 0, &data, &len), -EBADFD, "directory");
	ASSERT_ERR(flash_file_read_public(p, 3, &data, &len), -EFBIG, "larger than max");
	ASSERT_ERR(flash_file_read_public(NULL, 0, &data, &len), -EINVAL, "NULL");
	/* The secret rule still refuses the world-readable file. */
	ASSERT_ERR(flash_file_read_secret(p, 0, &data, &len), -EPERM, "0644 secret");
	if (geteuid() == 0) {
		cr_assert(chown(p, 65534, 65534) == 0);
		ASSERT_ERR(flash_file_read_public(p, 0, &data, &len), -EPERM, "owned by nobody");
		cr_assert(chown(p, 0, 0) == 0);
		expect_read(flash_file_read_public(p, 0, &data, &len), &data, &len, "{\"keys\":[]}", "owned by root");
	}
	free(p);
	free(link);
	free(fifo);
}

/* Writing into a directory: only a private one, reached without a
 * symlink; the file itself is never written through a symlink. */
Test(file, private_dir_and_atomic_write_at)
{
	char *sub = NULL, *link = NULL, *file = make("plain", "x", 0600), *target = NULL, *entry = NULL;
	char *data = NULL;
	size_t len = 0;
	struct stat st;
	int dfd;

	cr_assert(asprintf(&sub, "%s/sub", dir) > 0 && asprintf(&link, "%s/link", dir) > 0);
	cr_assert(asprintf(&target, "%s/target", dir) > 0 && asprintf(&entry, "%s/sub/entry", dir) > 0);
	cr_assert(mkdir(sub, 0700) == 0 && symlink(sub, link) == 0);
	ASSERT_ERR(util_open_dir_private(link, &st), -ELOOP, "symlink to a directory");
	ASSERT_ERR(util_open_dir_private(file, &st), -ENOTDIR, "a file");
	cr_assert(chmod(sub, 0770) == 0);
	ASSERT_ERR(util_open_dir_private(sub, &st), -EPERM, "group-writable");
	cr_assert(chmod(sub, 0702) == 0);
	ASSERT_ERR(util_open_dir_private(sub, &st), -EPERM, "world-writable");
	cr_assert(chmod(sub, 0755) == 0);
	dfd = util_open_dir_private(sub, &st);
	cr_assert(dfd >= 0, "private directory: %d", dfd);
	cr_assert(symlink(target, entry) == 0);
	ASSERT_OK(util_write_file_atomic_at(dfd, "entry", "hello", 5, 0640), "write over a symlink");
	cr_assert(access(target, F_OK) < 0, "the symlink was followed");
	cr_assert(lstat(entry, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0640, "mode 0%o",
		  (unsigned int)st.st_mode);
	expect_read(util_read_file(entry, 100, &data, &len), &data, &len, "hello", "content");
	ASSERT_ERR(util_write_file_atomic_at(dfd, "a/b", "x", 1, 0600), -EINVAL, "a name with a slash");
	close(dfd);
	free(sub);
	free(link);
	free(file);
	free(target);
	free(entry);
}

/* util_write_file_replace(): util_write_file_atomic() without the fsyncs
 * — a whole file in place or none, the mode given, an existing file or
 * symlink replaced (never followed), no temporary left behind. */
Test(file, replace_writes_whole_files_without_following_links)
{
	char *path = NULL, *target = make("target", "keep", 0600), *data = NULL, cmd[256];
	size_t len = 0;
	struct stat st;

	cr_assert(asprintf(&path, "%s/rec.json", dir) > 0);
	ASSERT_OK(util_write_file_replace(path, "{\"a\":1}", 7, 0600), "new file");
	expect_read(util_read_file(path, 100, &data, &len), &data, &len, "{\"a\":1}", "new");
	ASSERT_OK(util_write_file_replace(path, "{}", 2, 0640), "over it");
	expect_read(util_read_file(path, 100, &data, &len), &data, &len, "{}", "replaced");
	cr_assert(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640, "mode 0%o", (unsigned int)st.st_mode);
	cr_assert(unlink(path) == 0 && symlink(target, path) == 0);
	ASSERT_OK(util_write_file_replace(path, "new", 3, 0600), "over a symlink");
	expect_read(util_read_file(target, 100, &data, &len), &data, &len, "keep", "the link's target");
	cr_assert(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "the symlink was not replaced");
	snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) -eq 2", dir);
	cr_assert(system(cmd) == 0, "a temporary file was left");
	ASSERT_ERR(util_write_file_replace(NULL, "x", 1, 0600), -EINVAL, "no path");
	free(path);
	free(target);
}
