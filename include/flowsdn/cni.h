/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flowsdn/cni.h> — the Container Network Interface (CNI spec 1.1.0, with
 * 0.4.0 and 1.0.0 accepted): network configurations and configuration
 * lists, the CNI_* environment, results (interfaces, ips, routes, dns) in
 * the versions runtimes accept, prevResult, and the error/VERSION JSON a
 * plugin prints on stdout.
 *
 * Parsers are strict: a missing or wrong-typed field, a duplicate key or
 * malformed JSON is refused with a domain code from enum
 * flowsdn_cni_error; flowsdn_cni_code() maps any error of this module (or
 * an errno) to the numeric code the spec defines, so that a plugin prints
 * the right "code".  A parse failure also fills an optional struct
 * flowsdn_diag (<flowsdn/diag.h>, the last argument of every parse call)
 * whose entry names the field (path) and the fault (message);
 * flowsdn_diag_entry_format() gives the one line a plugin prints.
 *
 * Versions.  A configuration may ask for 0.4.0, 1.0.0 or 1.1.0.  Earlier
 * published versions (0.1.0 .. 0.3.1) are FLOWSDN_E_CNI_INCOMPATIBLE (CNI
 * code 1); anything that is not a published CNI version is
 * FLOWSDN_E_CNI_VERSION_UNKNOWN (CNI code 7).  A result is formatted in the
 * configuration's own version: podman 4.3 and libcni 1.1.2 refuse a 1.1.0
 * result, so a 1.0.0 configuration gets a 1.0.0 result.
 */
#ifndef FLOWSDN_CNI_H
#define FLOWSDN_CNI_H

#include <stdbool.h>
#include <stddef.h>
#include <flowsdn/addr.h>
#include <flowsdn/common.h>
#include <flowsdn/diag.h>

#ifdef __cplusplus
extern "C" {
#endif

enum flowsdn_cni_error {
	FLOWSDN_E_CNI_BASE = FLOWSDN_E_BASE + 500,
	FLOWSDN_E_CNI_INCOMPATIBLE = FLOWSDN_E_CNI_BASE, /* a CNI version this plugin does not speak */
	FLOWSDN_E_CNI_VERSION_UNKNOWN,     /* cniVersion is not a published CNI version */
	FLOWSDN_E_CNI_DECODE,              /* not JSON, or not the expected JSON shape */
	FLOWSDN_E_CNI_CONFIG,              /* a field is missing, of the wrong type or out of range */
	FLOWSDN_E_CNI_ENV,                 /* a CNI_* environment variable is missing or invalid */
	FLOWSDN_E_CNI_CONTAINER_ID,        /* CNI_CONTAINERID outside ^[A-Za-z0-9][A-Za-z0-9_.-]*$ */
	FLOWSDN_E_CNI_IFNAME,              /* CNI_IFNAME is not a valid interface name */
	FLOWSDN_E_CNI_ARGS,                /* CNI_ARGS malformed or with an unknown key (no IgnoreUnknown) */
	FLOWSDN_E_CNI_RESULT,              /* a result (or prevResult) is malformed */
	FLOWSDN_E_CNI_NOT_FOUND,           /* the container (netns, interface) does not exist */
	FLOWSDN_E_CNI_TRY_AGAIN,           /* a transient condition: try again later */
	FLOWSDN_E_CNI_NOT_READY,           /* the plugin cannot serve requests now */
	FLOWSDN_E_CNI_MAX_,                /* end of the cni block (not an error) */
};

/* The numeric error codes of the CNI specification ("code" in the error
 * JSON).  Codes from 100 up are plugin-specific. */
enum flowsdn_cni_code {
	FLOWSDN_CNI_CODE_INCOMPATIBLE_VERSION = 1,
	FLOWSDN_CNI_CODE_UNSUPPORTED_FIELD = 2,
	FLOWSDN_CNI_CODE_UNKNOWN_CONTAINER = 3,
	FLOWSDN_CNI_CODE_INVALID_ENV = 4,
	FLOWSDN_CNI_CODE_IO = 5,
	FLOWSDN_CNI_CODE_DECODE = 6,
	FLOWSDN_CNI_CODE_INVALID_CONFIG = 7,
	FLOWSDN_CNI_CODE_TRY_AGAIN = 11,
	FLOWSDN_CNI_CODE_NOT_AVAILABLE = 50,
	FLOWSDN_CNI_CODE_NOT_AVAILABLE_DAMAGED = 51,
	FLOWSDN_CNI_CODE_INTERNAL = 100, /* plugin-specific: an unexpected system error */
};

/* Maps a (negative or positive) errno or libflowsdn error to the CNI code
 * a plugin reports for it (0 for 0). */
FLOWSDN_API unsigned int flowsdn_cni_code(int err);

/* The newest version this library speaks. */
#define FLOWSDN_CNI_VERSION_LATEST "1.1.0"
/* The versions this library reads and writes, oldest first: a static
 * array (not to be freed) of *ret_count strings (@ret_count may be NULL). */
FLOWSDN_API const char *const *flowsdn_cni_supported_versions(size_t *ret_count);

/* 0 when @version is one this library speaks, -FLOWSDN_E_CNI_INCOMPATIBLE
 * for an older published version, -FLOWSDN_E_CNI_VERSION_UNKNOWN for
 * anything else, -EINVAL for NULL. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_cni_version_check(const char *version);

/* ------------------------------------------------------------ results */

/* One interface of a result.  Strings are NUL-terminated; empty when
 * absent. */
struct flowsdn_cni_iface {
	char name[16];     /* at most IFNAMSIZ-1 characters */
	char mac[18];      /* "aa:bb:cc:dd:ee:ff" or "" */
	char sandbox[256]; /* netns path for a container interface, "" on the host */
	unsigned int mtu;  /* 0: absent (1.1.0 only) */
};

/* One address of a result: @addr with its prefix length (host bits kept,
 * "10.1.0.5/16"); @iface indexes the interfaces, -1 when absent. */
struct flowsdn_cni_ip {
	struct flowsdn_addr addr;
	unsigned int prefix_len;
	bool has_gateway;
	struct flowsdn_addr gateway;
	int iface;
};

/* One route of a result. */
struct flowsdn_cni_route {
	struct flowsdn_prefix dst;
	bool has_gw;
	struct flowsdn_addr gw;
};

/* A result: built by a plugin, or parsed from prevResult. */
struct flowsdn_cni_result;

/* An empty result.  -ENOMEM.  Free with flowsdn_cni_result_free(). */
FLOWSDN_API int flowsdn_cni_result_new(struct flowsdn_cni_result **ret);
FLOWSDN_API void flowsdn_cni_result_free(struct flowsdn_cni_result *result);

/* Appends an interface, an address, a route, a DNS name server or search
 * domain (copied).  add_iface returns the new interface's index (>= 0).
 * -EINVAL for a NULL or over-long argument, an address whose prefix length
 * exceeds its family, or an @iface index that does not exist; -E2BIG past
 * 64 entries of a kind; -ENOMEM. */
FLOWSDN_API int flowsdn_cni_result_add_iface(struct flowsdn_cni_result *result, const struct flowsdn_cni_iface *iface);
FLOWSDN_API int flowsdn_cni_result_add_ip(struct flowsdn_cni_result *result, const struct flowsdn_cni_ip *ip);
FLOWSDN_API int flowsdn_cni_result_add_route(struct flowsdn_cni_result *result, const struct flowsdn_cni_route *route);
FLOWSDN_API int flowsdn_cni_result_add_nameserver(struct flowsdn_cni_result *result, const char *nameserver);
FLOWSDN_API int flowsdn_cni_result_add_search(struct flowsdn_cni_result *result, const char *domain);
/* Sets the DNS domain ("" clears it). */
FLOWSDN_API int flowsdn_cni_result_set_domain(struct flowsdn_cni_result *result, const char *domain);

/* Counts and entries (pointers into @result, valid until it is freed or
 * changed; NULL for an index out of range or a NULL @result). */
FLOWSDN_API size_t flowsdn_cni_result_iface_count(const struct flowsdn_cni_result *result);
FLOWSDN_API const struct flowsdn_cni_iface *flowsdn_cni_result_iface(const struct flowsdn_cni_result *result, size_t i);
FLOWSDN_API size_t flowsdn_cni_result_ip_count(const struct flowsdn_cni_result *result);
FLOWSDN_API const struct flowsdn_cni_ip *flowsdn_cni_result_ip(const struct flowsdn_cni_result *result, size_t i);
FLOWSDN_API size_t flowsdn_cni_result_route_count(const struct flowsdn_cni_result *result);
FLOWSDN_API const struct flowsdn_cni_route *flowsdn_cni_result_route(const struct flowsdn_cni_result *result, size_t i);
FLOWSDN_API size_t flowsdn_cni_result_nameserver_count(const struct flowsdn_cni_result *result);
FLOWSDN_API const char *flowsdn_cni_result_nameserver(const struct flowsdn_cni_result *result, size_t i);

/* Formats @result as the JSON of CNI @version (0.4.0: "version" on every
 * ip; 1.0.0: no "version"; 1.1.0: also interface "mtu").  *ret_json is
 * NUL-terminated, freed by the caller.  -EINVAL, -FLOWSDN_E_CNI_INCOMPATIBLE
 * / -FLOWSDN_E_CNI_VERSION_UNKNOWN for @version, -ENOMEM. */
FLOWSDN_API int flowsdn_cni_result_format(const struct flowsdn_cni_result *result, const char *version,
					  char **ret_json, size_t *ret_len);

/* Parses a result object of any supported version (from a plugin's output
 * or a configuration's prevResult), @len bytes at @json.  The format is
 * strict: a key the CNI 1.1.0 result format does not name (top level,
 * interfaces, ips, routes, dns) is refused.  Errors:
 * -EINVAL, -FLOWSDN_E_CNI_DECODE (not JSON / not an object),
 * -FLOWSDN_E_CNI_RESULT (a field is wrong; @diag says which), version
 * errors for its cniVersion, -ENOMEM. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_cni_result_parse(const char *json, size_t len, struct flowsdn_cni_result **ret,
						     struct flowsdn_diag *diag);

/* ------------------------------------------------------- configuration */

/* One plugin's network configuration, as a runtime passes it on stdin. */
struct flowsdn_cni_conf;

/* Parses the @len bytes at @json: an object with string "cniVersion" (a
 * supported version), string "name" (starting with an alphanumeric, then
 * [A-Za-z0-9_.-]) and string "type"; optional "prevResult" (a result),
 * "dns" (nameservers/search/options arrays of strings, domain string),
 * "args", "runtimeConfig", "capabilities", "ipam" (objects),
 * "cni.dev/valid-attachments" (array of {containerID, ifname} for GC) and
 * "disableCheck"/"disableGC" (booleans); other keys are kept for the
 * plugin (flowsdn_cni_conf_get_*).  Errors: -EINVAL,
 * -FLOWSDN_E_CNI_DECODE (not JSON, duplicate key, too deep),
 * -FLOWSDN_E_CNI_CONFIG (@diag names the field), version errors,
 * -FLOWSDN_E_CNI_RESULT (prevResult), -ENOMEM.  Free with
 * flowsdn_cni_conf_free(). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_cni_conf_parse(const char *json, size_t len, struct flowsdn_cni_conf **ret,
						   struct flowsdn_diag *diag);
FLOWSDN_API void flowsdn_cni_conf_free(struct flowsdn_cni_conf *conf);

/* The configuration's cniVersion, name and type (never NULL for a parsed
 * configuration; owned by @conf). */
FLOWSDN_API const char *flowsdn_cni_conf_version(const struct flowsdn_cni_conf *conf);
FLOWSDN_API const char *flowsdn_cni_conf_name(const struct flowsdn_cni_conf *conf);
FLOWSDN_API const char *flowsdn_cni_conf_type(const struct flowsdn_cni_conf *conf);

/* prevResult, or NULL when the configuration has none (owned by @conf). */
FLOWSDN_API const struct flowsdn_cni_result *flowsdn_cni_conf_prev_result(const struct flowsdn_cni_conf *conf);

/* The configuration's "dns" as a result holding only DNS (NULL without
 * "dns"; owned by @conf). */
FLOWSDN_API const struct flowsdn_cni_result *flowsdn_cni_conf_dns(const struct flowsdn_cni_conf *conf);

/* How services reach an endpoint (runtimeConfig.flowsdn.serviceTranslation). */
enum flowsdn_cni_svc_translation {
	FLOWSDN_CNI_SVC_SOCKET = 0, /* "socket": the socket LB translates (the default) */
	FLOWSDN_CNI_SVC_PACKET = 1, /* "packet": tc translates each packet (gVisor netstack sandboxes) */
};

/* "socket" or "packet" to the mode: 0, or -EINVAL for anything else. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_cni_svc_translation_parse(const char *text,
							       enum flowsdn_cni_svc_translation *ret);
/* The mode's name ("socket", "packet"), NULL for a value out of range. */
FLOWSDN_API const char *flowsdn_cni_svc_translation_name(enum flowsdn_cni_svc_translation mode);

/* The configuration's runtimeConfig.flowsdn.serviceTranslation (a runtime
 * with the capability "flowsdn" passes it; the plugin's own config may
 * carry it too); FLOWSDN_CNI_SVC_SOCKET when absent.  The parse refuses
 * a runtimeConfig.flowsdn that is not an object and any other value
 * (-FLOWSDN_E_CNI_CONFIG naming the field). */
FLOWSDN_API enum flowsdn_cni_svc_translation flowsdn_cni_conf_svc_translation(const struct flowsdn_cni_conf *conf);

/* A plugin-specific top-level string key: 0 and *ret (owned by @conf),
 * -ENOENT when absent, -FLOWSDN_E_CNI_CONFIG when not a string or an empty
 * one, -EINVAL. */
FLOWSDN_API int flowsdn_cni_conf_get_string(const struct flowsdn_cni_conf *conf, const char *key, const char **ret);

/* A plugin-specific top-level integer key in [@min, @max]: 0 and *ret,
 * -ENOENT when absent, -FLOWSDN_E_CNI_CONFIG when not an integer or out of
 * range, -EINVAL. */
FLOWSDN_API int flowsdn_cni_conf_get_uint(const struct flowsdn_cni_conf *conf, const char *key, unsigned long min,
					  unsigned long max, unsigned long *ret);

/* GC: whether the configuration carries "cni.dev/valid-attachments", how
 * many, and the i-th (pointers owned by @conf; -ERANGE past the end). */
FLOWSDN_API bool flowsdn_cni_conf_has_attachments(const struct flowsdn_cni_conf *conf);
FLOWSDN_API size_t flowsdn_cni_conf_attachment_count(const struct flowsdn_cni_conf *conf);
FLOWSDN_API int flowsdn_cni_conf_attachment(const struct flowsdn_cni_conf *conf, size_t i, const char **ret_container_id,
					    const char **ret_ifname);

/* A configuration list (a .conflist file). */
struct flowsdn_cni_conflist;

/* Parses a configuration list: string "cniVersion" (supported), optional
 * "cniVersions" (array of version strings; the newest supported one wins
 * over cniVersion, as libcni does), string "name", optional booleans
 * "disableCheck"/"disableGC", and "plugins": a non-empty array of objects
 * each with a string "type".  Errors as flowsdn_cni_conf_parse(). */
FLOWSDN_API FLOWSDN_WUR int flowsdn_cni_conflist_parse(const char *json, size_t len,
						       struct flowsdn_cni_conflist **ret, struct flowsdn_diag *diag);
FLOWSDN_API void flowsdn_cni_conflist_free(struct flowsdn_cni_conflist *list);
/* The effective version, the name, disableCheck, the number of plugins. */
FLOWSDN_API const char *flowsdn_cni_conflist_version(const struct flowsdn_cni_conflist *list);
FLOWSDN_API const char *flowsdn_cni_conflist_name(const struct flowsdn_cni_conflist *list);
FLOWSDN_API bool flowsdn_cni_conflist_disable_check(const struct flowsdn_cni_conflist *list);
FLOWSDN_API size_t flowsdn_cni_conflist_plugin_count(const struct flowsdn_cni_conflist *list);
/* The i-th plugin's configuration as a runtime would pass it: the plugin
 * object with the list's "cniVersion" and "name" inserted, and
 * @prev_result (a result JSON, may be NULL) as "prevResult".  *ret_json is
 * freed by the caller.  -ERANGE past the end, -EINVAL, -ENOMEM. */
FLOWSDN_API int flowsdn_cni_conflist_plugin_conf(const struct flowsdn_cni_conflist *list, size_t i,
						 const char *prev_result, char **ret_json);

/* --------------------------------------------------- environment, args */

enum flowsdn_cni_command {
	FLOWSDN_CNI_CMD_ADD = 1,
	FLOWSDN_CNI_CMD_DEL,
	FLOWSDN_CNI_CMD_CHECK,
	FLOWSDN_CNI_CMD_STATUS,
	FLOWSDN_CNI_CMD_VERSION,
	FLOWSDN_CNI_CMD_GC,
};

/* The command named by CNI_COMMAND (exact upper-case name), or 0. */
FLOWSDN_API enum flowsdn_cni_command flowsdn_cni_command_parse(const char *text);

/* true when @id is a container id as CNI defines it: 1..255 bytes of
 * ^[A-Za-z0-9][A-Za-z0-9_.-]*$ (the limit of every flowsdn entry point:
 * FLOWSDN_IPAM_CONTAINER_ID_MAX).  Network names follow the same rule. */
FLOWSDN_API bool flowsdn_cni_container_id_valid(const char *id);

/* true for an interface name: 1..15 bytes, each a printable ASCII
 * character other than space, '/' and ':' (0x21..0x7e), and not "." or
 * "..".  The same rule as flowsdn_netlink_ifname_valid(). */
FLOWSDN_API bool flowsdn_cni_ifname_valid(const char *name);

/* The CNI_* variables of one invocation, validated for @command:
 * ADD/DEL/CHECK need CNI_CONTAINERID (valid), CNI_IFNAME (valid) and, for
 * ADD and CHECK, CNI_NETNS (non-empty); DEL tolerates an empty CNI_NETNS;
 * GC, STATUS and VERSION need none.  Strings point into the environment
 * the caller gave (or are NULL when absent). */
struct flowsdn_cni_env {
	enum flowsdn_cni_command command;
	const char *container_id;
	const char *netns;
	const char *ifname;
	const char *args;
	const char *path;
};

/* Reads the CNI_* variables through @getenv_fn (getenv for a plugin; a
 * table in tests).  Errors: -EINVAL (NULL arguments),
 * -FLOWSDN_E_CNI_ENV (missing/unknown command, missing variable),
 * -FLOWSDN_E_CNI_CONTAINER_ID, -FLOWSDN_E_CNI_IFNAME; @diag names the
 * variable.  @ret is written only on success. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_cni_env_read(const char *(*getenv_fn)(const char *name, void *userdata),
						 void *userdata, struct flowsdn_cni_env *ret,
						 struct flowsdn_diag *diag);

/* Parsed CNI_ARGS ("K=V;K=V"). */
struct flowsdn_cni_args;

/* Parses @text (NULL or "" is an empty set).  Each pair is KEY=VALUE with
 * a non-empty KEY; a key outside @known (NULL-terminated list, may be
 * NULL) is refused unless the pairs contain IgnoreUnknown=1/true (any
 * case), as the reference plugins do.  Errors: -EINVAL,
 * -FLOWSDN_E_CNI_ARGS (@diag names the pair), -E2BIG beyond 64 pairs or 4
 * KiB, -ENOMEM. */
FLOWSDN_API FLOWSDN_WUR int flowsdn_cni_args_parse(const char *text, const char *const *known,
						   struct flowsdn_cni_args **ret, struct flowsdn_diag *diag);
FLOWSDN_API void flowsdn_cni_args_free(struct flowsdn_cni_args *args);
/* The value of @key (owned by @args) or NULL. */
FLOWSDN_API const char *flowsdn_cni_args_get(const struct flowsdn_cni_args *args, const char *key);

/* ----------------------------------------------------- plugin output */

/* The error JSON a plugin prints on stdout:
 * {"cniVersion":V,"code":C,"msg":M[,"details":D]}.  @version NULL or not
 * supported -> the latest version; @details may be NULL.  *ret_json freed
 * by the caller.  -EINVAL (NULL @msg, @code 0), -ENOMEM. */
FLOWSDN_API int flowsdn_cni_error_format(const char *version, unsigned int code, const char *msg,
					 const char *details, char **ret_json);

/* The VERSION answer: {"cniVersion":V,"supportedVersions":[...]}, V being
 * @version when supported, else the latest.  -ENOMEM. */
FLOWSDN_API int flowsdn_cni_version_format(const char *version, char **ret_json);

#ifdef __cplusplus
}
#endif

#endif
