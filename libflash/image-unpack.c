/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Layer unpacking (libarchive): whiteouts first, then the entries, with the
 * secure-extraction flags.  libarchive extracts relative to the working
 * directory, so each layer is extracted in a thread of its own that
 * unshare(CLONE_FS)s and fchdir()s into the root filesystem: the process's
 * working directory and umask are never touched.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "dl.h"
#include "image-internal.h"
#include "internal.h"

#define WHITEOUT ".wh."
#define OPAQUE ".wh..wh..opq"
#define EXTRACT_FLAGS                                                                                        \
	(ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | \
	 ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME)

struct unpack_job {
	int layer_fd;
	int root_fd;
	struct image_budget *budget;
	struct diag *diag;
	int rc;
	char why[512];
};

static void job_fail(struct unpack_job *j, int rc, const char *fmt, ...) _printf_(3, 4);

static void job_fail(struct unpack_job *j, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->why, sizeof(j->why), fmt, ap);
	va_end(ap);
	j->rc = rc;
}

/* ---------------------------------------------------------------- removal */

static int remove_children(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir;
	struct dirent *de;
	int rc = 0;

	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while (rc == 0 && (errno = 0, de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		rc = image_remove_tree_at(dfd, de->d_name);
		if (rc == 0)
			rewinddir(dir);
	}
	closedir(dir);
	return rc;
}

int image_remove_tree_at(int dirfd, const char *name)
{
	struct stat st;
	int fd, rc;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = remove_children(fd);
	close(fd);
	if (rc == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -errno;
	return rc;
}

/* ---------------------------------------------------------------- paths */

/* Normalizes an entry path in place: "./a//b/" -> "a/b".  Refuses absolute
 * paths and ".." components (-FLASH_E_IMAGE_UNSAFE_ENTRY). */
static int path_normalize(const char *in, char *out, size_t size)
{
	size_t o = 0;
	const char *p = in;

	if (!in || in[0] == '/')
		return -FLASH_E_IMAGE_UNSAFE_ENTRY;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -FLASH_E_IMAGE_UNSAFE_ENTRY;
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (o + n + 2 > size)
				return -ENAMETOOLONG;
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
		if (*p == '/')
			p++;
	}
	out[o] = '\0';
	return 0;
}

/* Opens the directory holding @rel (below @root_fd) without following any
 * symlink; *ret_base points into @rel.  -ENOENT when a parent is missing,
 * -FLASH_E_IMAGE_UNSAFE_ENTRY when one is a symlink or not a directory. */
static int walk_parent(int root_fd, char *rel, int *ret_fd, const char **ret_base)
{
	int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *p = rel, *slash;

	if (fd < 0)
		return -errno;
	while ((slash = strchr(p, '/'))) {
		int next;

		*slash = '\0';
		next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		*slash = '/';
		if (next < 0) {
			int rc = errno == ENOENT ? -ENOENT : -FLASH_E_IMAGE_UNSAFE_ENTRY;

			close(fd);
			return rc;
		}
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*ret_fd = fd;
	*ret_base = p;
	return 0;
}

/* ---------------------------------------------------------------- whiteouts */

static int apply_whiteout(struct unpack_job *j, const char *path)
{
	char rel[4096];
	const char *base = NULL, *name;
	int dfd = -1, rc;

	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	name = base + strlen(WHITEOUT);
	if (strcmp(base, OPAQUE) != 0 &&
	    (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	     strncmp(name, WHITEOUT, strlen(WHITEOUT)) == 0)) {
		job_fail(j, -FLASH_E_IMAGE_UNSAFE_ENTRY, "malformed whiteout %s", path);
		return j->rc;
	}
	snprintf(rel, sizeof(rel), "%s", path);
	rc = walk_parent(j->root_fd, rel, &dfd, &base);
	if (rc == -ENOENT)
		return 0; /* nothing below to hide */
	if (rc < 0) {
		job_fail(j, rc, "whiteout %s: a parent is a symlink or not a directory", path);
		return rc;
	}
	if (strcmp(base, OPAQUE) == 0)
		rc = remove_children(dfd);
	else
		rc = image_remove_tree_at(dfd, base + strlen(WHITEOUT));
	close(dfd);
	if (rc < 0)
		job_fail(j, rc, "whiteout %s: %s", path, strerror(-rc));
	return rc;
}

static bool is_whiteout(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, WHITEOUT, strlen(WHITEOUT)) == 0;
}

/* ---------------------------------------------------------------- passes */

static struct archive *reader_open(struct unpack_job *j)
{
	struct archive *a;

	if (lseek(j->layer_fd, 0, SEEK_SET) < 0) {
		job_fail(j, -errno, "layer is not seekable: %s", strerror(errno));
		return NULL;
	}
	a = sym_archive_read_new();
	if (!a) {
		j->rc = -ENOMEM;
		return NULL;
	}
	sym_archive_read_support_filter_gzip(a);
	sym_archive_read_support_filter_zstd(a);
	sym_archive_read_support_format_tar(a);
	if (sym_archive_read_open_fd(a, j->layer_fd, 65536) != ARCHIVE_OK) {
		job_fail(j, -FLASH_E_IMAGE_LAYOUT, "layer is not a tar stream: %s", sym_archive_error_string(a));
		sym_archive_read_free(a);
		return NULL;
	}
	return a;
}

static int next_entry(struct unpack_job *j, struct archive *a, struct archive_entry **e)
{
	int r = sym_archive_read_next_header(a, e);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r < ARCHIVE_WARN) {
		job_fail(j, -FLASH_E_IMAGE_LAYOUT, "layer is not a valid tar stream: %s", sym_archive_error_string(a));
		return j->rc;
	}
	return 1;
}

static int pass_whiteouts(struct unpack_job *j)
{
	struct archive *a = reader_open(j);
	struct archive_entry *e;
	char path[4096];
	int r;

	if (!a)
		return j->rc;
	while ((r = next_entry(j, a, &e)) > 0) {
		const char *name = sym_archive_entry_pathname(e);

		if (path_normalize(name, path, sizeof(path)) < 0) {
			job_fail(j, -FLASH_E_IMAGE_UNSAFE_ENTRY, "entry \"%.200s\": absolute path or \"..\"",
				 name ? name : "");
			r = j->rc;
			break;
		}
		if (path[0] && is_whiteout(path) && (r = apply_whiteout(j, path)) < 0)
			break;
	}
	sym_archive_read_free(a);
	return r < 0 ? r : 0;
}

/* A hard link's target must be a regular file reached without symlinks. */
static int check_hardlink(struct unpack_job *j, const char *target)
{
	char rel[4096];
	const char *base = NULL;
	struct stat st;
	int dfd = -1, rc;

	snprintf(rel, sizeof(rel), "%s", target);
	rc = walk_parent(j->root_fd, rel, &dfd, &base);
	if (rc < 0)
		return -FLASH_E_IMAGE_UNSAFE_ENTRY;
	rc = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) ? 0 : -FLASH_E_IMAGE_UNSAFE_ENTRY;
	close(dfd);
	return rc;
}

static int copy_data(struct archive *in, struct archive *out)
{
	const void *buf;
	size_t size;
	la_int64_t off;

	for (;;) {
		int r = sym_archive_read_data_block(in, &buf, &size, &off);

		if (r == ARCHIVE_EOF)
			return ARCHIVE_OK;
		if (r < ARCHIVE_WARN)
			return r;
		r = sym_archive_write_data_block(out, buf, size, off);
		if (r < ARCHIVE_WARN)
			return r;
	}
}

static int pass_extract(struct unpack_job *j)
{
	struct archive *a = reader_open(j), *disk;
	struct archive_entry *e;
	char path[4096], link[4096];
	int r;

	if (!a)
		return j->rc;
	disk = sym_archive_write_disk_new();
	if (!disk) {
		sym_archive_read_free(a);
		return j->rc = -ENOMEM;
	}
	sym_archive_write_disk_set_options(disk, EXTRACT_FLAGS);
	while ((r = next_entry(j, a, &e)) > 0) {
		const char *name = sym_archive_entry_pathname(e), *hl = sym_archive_entry_hardlink(e);
		mode_t type = sym_archive_entry_filetype(e);

		if (path_normalize(name, path, sizeof(path)) < 0) {
			job_fail(j, -FLASH_E_IMAGE_UNSAFE_ENTRY, "entry \"%.200s\": absolute path or \"..\"", name);
			break;
		}
		if (!path[0] || is_whiteout(path))
			continue;
		if (hl) {
			if (path_normalize(hl, link, sizeof(link)) < 0 || !link[0] || check_hardlink(j, link) < 0) {
				job_fail(j, -FLASH_E_IMAGE_UNSAFE_ENTRY,
					 "entry %.200s: hard link to \"%.200s\" leaves the root or is not a regular file",
					 path, hl);
				break;
			}
			sym_archive_entry_set_hardlink(e, link);
		} else if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
			diag_add_text(j->diag, DIAG_WARNING, "image", "image-entry-skipped", NULL,
				      "entry %.200s: device nodes, FIFOs and sockets are not extracted", path);
			continue;
		}
		if (j->budget->entries == 0) {
			job_fail(j, -FLASH_E_IMAGE_SIZE, "entry %.200s: more entries than the unpacking bound", path);
			break;
		}
		j->budget->entries--;
		if (!hl && type == AE_IFREG && sym_archive_entry_size(e) > 0) {
			uint64_t size = (uint64_t)sym_archive_entry_size(e);

			if (size > j->budget->bytes) {
				job_fail(j, -FLASH_E_IMAGE_SIZE,
					 "entry %.200s: %llu bytes, more than the %llu left of the unpacking bound", path,
					 (unsigned long long)size, (unsigned long long)j->budget->bytes);
				break;
			}
			j->budget->bytes -= size;
		}
		sym_archive_entry_set_pathname(e, path);
		sym_archive_entry_set_perm(e, sym_archive_entry_perm(e) & ~(mode_t)(S_ISUID | S_ISGID));
		r = sym_archive_write_header(disk, e);
		if (r >= ARCHIVE_WARN && sym_archive_entry_size(e) > 0 && !hl)
			r = copy_data(a, disk);
		if (r >= ARCHIVE_WARN)
			r = sym_archive_write_finish_entry(disk);
		if (r < ARCHIVE_WARN) {
			int err = sym_archive_errno(disk);

			job_fail(j, err > 0 && err != EEXIST ? -err : -FLASH_E_IMAGE_UNSAFE_ENTRY, "entry %.200s: %s", path,
				 sym_archive_error_string(disk) ? sym_archive_error_string(disk) : sym_archive_error_string(a));
			break;
		}
	}
	sym_archive_write_free(disk);
	sym_archive_read_free(a);
	return j->rc;
}

static void *unpack_thread(void *arg)
{
	struct unpack_job *j = arg;

	if (unshare(CLONE_FS) < 0) {
		job_fail(j, -errno, "unshare(CLONE_FS): %s", strerror(errno));
		return NULL;
	}
	if (fchdir(j->root_fd) < 0) {
		job_fail(j, -errno, "fchdir to the root filesystem: %s", strerror(errno));
		return NULL;
	}
	umask(022);
	if (pass_whiteouts(j) == 0)
		(void)pass_extract(j);
	return NULL;
}

void image_budget_init(struct image_budget *b, const struct flash_image_unpack_opts *opts)
{
	uint64_t bytes = OPTS_GET(opts, max_bytes, 0), entries = OPTS_GET(opts, max_entries, 0);

	b->bytes = bytes ? bytes : UINT64_MAX;
	b->entries = entries ? entries : UINT64_MAX;
}

int image_layer_unpack(const char *layer_path, const char *rootfs, struct image_budget *budget, struct diag *diag)
{
	struct unpack_job j = { .layer_fd = -1, .root_fd = -1, .budget = budget, .diag = diag };
	struct stat st;
	pthread_t t;
	int rc;

	if (!layer_path || !rootfs)
		return -EINVAL;
	rc = flash_dl_archive();
	if (rc < 0) {
		snprintf(j.why, sizeof(j.why), "unpacking needs libarchive: %s", flash_dl_error());
		goto out;
	}
	j.layer_fd = open(layer_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (j.layer_fd < 0) {
		rc = -errno;
		snprintf(j.why, sizeof(j.why), "layer %s: %s", layer_path, strerror(-rc));
		goto out;
	}
	if (fstat(j.layer_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		snprintf(j.why, sizeof(j.why), "layer %s is not a regular file", layer_path);
		goto out;
	}
	j.root_fd = open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j.root_fd < 0) {
		rc = -errno;
		snprintf(j.why, sizeof(j.why), "root filesystem %s: %s", rootfs, strerror(-rc));
		goto out;
	}
	rc = -pthread_create(&t, NULL, unpack_thread, &j);
	if (rc < 0)
		goto out;
	pthread_join(t, NULL);
	rc = j.rc;
out:
	if (rc < 0 && rc != -ENOMEM)
		diag_add_text(diag, DIAG_ERROR, "image",
			      rc == -FLASH_E_IMAGE_UNSAFE_ENTRY ? "image-unsafe-entry"
			      : rc == -FLASH_E_IMAGE_LAYOUT	? "image-layout"
			      : rc == -FLASH_E_IMAGE_SIZE	? "image-size"
								: "image-unpack",
			      NULL, "%s", j.why[0] ? j.why : flash_strerror(rc));
	if (j.layer_fd >= 0)
		close(j.layer_fd);
	if (j.root_fd >= 0)
		close(j.root_fd);
	return rc;
}

FLASH_API int flash_image_layer_unpack(const char *layer_path, const char *rootfs,
				       const struct flash_image_unpack_opts *opts, struct flash_diag *diag)
{
	struct image_budget budget;

	diag_begin(flash__diag(diag), 0);
	if (!OPTS_VALID(opts, flash_image_unpack_opts))
		return -EINVAL;
	image_budget_init(&budget, opts);
	return image_layer_unpack(layer_path, rootfs, &budget, flash__diag(diag));
}
