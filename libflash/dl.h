/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libcurl and libarchive, loaded when first used (dlopen), not at every
 * start of every program that links libflash: together with their
 * dependencies (TLS, Kerberos, LDAP, SSH, libxml2, ICU) they are 42 of the
 * 53 shared objects libflash would bring, about 6 ms of dynamic loading at
 * each start of flashctl (bench/exec).  libcurl serves the image module's
 * registry client and the provider client's https:// endpoints (its
 * unix: and http:// ones are common/http-client.h); libarchive the layer
 * unpacking.  The sonames are the ABIs compiled against.
 *
 * Call sym_NAME() for NAME() after flash_dl_curl() or flash_dl_archive()
 * returned 0; both are thread-safe and load once.  They fail with
 * -ELIBACC when the library or one of its symbols is missing
 * (flash_dl_error() says which), and flash_dl_curl() with -ENOMEM when
 * curl_global_init() fails.
 */
#ifndef FLASH_DL_H
#define FLASH_DL_H

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>

#define FLASH_DL_CURL_SONAME "libcurl.so.4"
#define FLASH_DL_ARCHIVE_SONAME "libarchive.so.13"

#define FLASH_DL_CURL_SYMBOLS(X) \
	X(curl_global_init) \
	X(curl_easy_init) \
	X(curl_easy_cleanup) \
	X(curl_easy_reset) \
	X(curl_easy_setopt) \
	X(curl_easy_perform) \
	X(curl_easy_getinfo) \
	X(curl_easy_send) \
	X(curl_easy_recv) \
	X(curl_easy_strerror) \
	X(curl_easy_escape) \
	X(curl_free) \
	X(curl_slist_append) \
	X(curl_slist_free_all) \
	X(curl_url) \
	X(curl_url_cleanup) \
	X(curl_url_get) \
	X(curl_url_set)

#define FLASH_DL_ARCHIVE_SYMBOLS(X) \
	X(archive_entry_filetype) \
	X(archive_entry_hardlink) \
	X(archive_entry_pathname) \
	X(archive_entry_perm) \
	X(archive_entry_set_hardlink) \
	X(archive_entry_set_pathname) \
	X(archive_entry_set_perm) \
	X(archive_entry_size) \
	X(archive_errno) \
	X(archive_error_string) \
	X(archive_read_data_block) \
	X(archive_read_free) \
	X(archive_read_new) \
	X(archive_read_next_header) \
	X(archive_read_open_fd) \
	X(archive_read_support_filter_gzip) \
	X(archive_read_support_filter_zstd) \
	X(archive_read_support_format_tar) \
	X(archive_write_data_block) \
	X(archive_write_disk_new) \
	X(archive_write_disk_set_options) \
	X(archive_write_finish_entry) \
	X(archive_write_free) \
	X(archive_write_header)

#define FLASH_DL_DECLARE(name) extern __typeof__(name) *sym_##name;
FLASH_DL_CURL_SYMBOLS(FLASH_DL_DECLARE)
FLASH_DL_ARCHIVE_SYMBOLS(FLASH_DL_DECLARE)
#undef FLASH_DL_DECLARE

int flash_dl_curl(void);
int flash_dl_archive(void);
/* What the last failed load said (dlerror()), or "". */
const char *flash_dl_error(void);

#endif
