/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "dl.h"

#define FLASH_DL_DEFINE(name) __typeof__(name) *sym_##name;
FLASH_DL_CURL_SYMBOLS(FLASH_DL_DEFINE)
FLASH_DL_ARCHIVE_SYMBOLS(FLASH_DL_DEFINE)
#undef FLASH_DL_DEFINE

static char dl_error[256];
static pthread_once_t curl_once = PTHREAD_ONCE_INIT, archive_once = PTHREAD_ONCE_INIT;
static int curl_rc, archive_rc;

/* dlsym() of @name into *@slot: false (and dl_error set) when missing. */
static bool resolve(void *h, const char *soname, const char *name, void **slot)
{
	*slot = dlsym(h, name);
	if (!*slot)
		snprintf(dl_error, sizeof(dl_error), "%s has no %s", soname, name);
	return *slot != NULL;
}

static void *open_lib(const char *soname)
{
	/* Never closed: its functions are the library's from then on. */
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		const char *e = dlerror();

		snprintf(dl_error, sizeof(dl_error), "%s", e ? e : soname);
	}
	return h;
}

static void load_curl(void)
{
	void *h = open_lib(FLASH_DL_CURL_SONAME);

	curl_rc = -ELIBACC;
	if (!h)
		return;
#define FLASH_DL_RESOLVE(name) \
	if (!resolve(h, FLASH_DL_CURL_SONAME, #name, (void **)&sym_##name)) \
		return;
	FLASH_DL_CURL_SYMBOLS(FLASH_DL_RESOLVE)
#undef FLASH_DL_RESOLVE
	curl_rc = sym_curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -ENOMEM;
}

static void load_archive(void)
{
	void *h = open_lib(FLASH_DL_ARCHIVE_SONAME);

	archive_rc = -ELIBACC;
	if (!h)
		return;
#define FLASH_DL_RESOLVE(name) \
	if (!resolve(h, FLASH_DL_ARCHIVE_SONAME, #name, (void **)&sym_##name)) \
		return;
	FLASH_DL_ARCHIVE_SYMBOLS(FLASH_DL_RESOLVE)
#undef FLASH_DL_RESOLVE
	archive_rc = 0;
}

int flash_dl_curl(void)
{
	pthread_once(&curl_once, load_curl);
	return curl_rc;
}

int flash_dl_archive(void)
{
	pthread_once(&archive_once, load_archive);
	return archive_rc;
}

const char *flash_dl_error(void)
{
	return dl_error;
}
