/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/spec.h> — the Flash workload spec: parsing, validation, the
 * canonical form and its digest.
 *
 * A spec is a JSON object (flash-spec(5) lists every field, rule, limit and
 * default).  flash_spec_parse() checks the JSON, then every rule, and
 * reports ALL problems (up to FLASH_DIAG_MAX) in a struct flash_diag, each
 * with its JSON path ("ports[1].container_port"), a stable rule code
 * ("minimum"), a message and the offending value.  Only a spec without
 * errors becomes a struct flash_spec; it is immutable: there are getters
 * and no setters, and it may be shared between threads.
 *
 * Warnings (for example an env key that looks like a credential) never
 * make a spec invalid; they are reported in the same diagnostics.
 *
 * The canonical form (flash_spec_to_json()) has sorted keys, normalized
 * and sorted CIDR lists, and every default written out; parsing the
 * canonical form gives an equal spec, and its BLAKE2b-256 digest
 * (flash_spec_digest()) identifies the spec for deterministic operation
 * ids.
 */
#ifndef FLASH_SPEC_H
#define FLASH_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/common.h>
#include <flash/diag.h>
#include <flowsdn/addr.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Domain errors of the spec module (block FLASH_E_BASE + 0 = 6000). */
enum flash_spec_error {
	FLASH_E_SPEC_BASE = FLASH_E_BASE + 0,
	FLASH_E_SPEC_SYNTAX = FLASH_E_SPEC_BASE,   /* not acceptable JSON (syntax, UTF-8, depth, size,
				       * duplicate key): one diagnostic with line/column */
	FLASH_E_SPEC_INVALID,         /* valid JSON breaking one or more rules */
	FLASH_E_SPEC_MAX_,            /* end of the block (not an error) */
};

/* ------------------------------------------------------------------ spec */

struct flash_spec;

enum flash_spec_protocol {
	FLASH_SPEC_PROTOCOL_TCP = 0,
	FLASH_SPEC_PROTOCOL_UDP = 1,
};

enum flash_spec_exposure {
	FLASH_SPEC_EXPOSURE_INTERNAL = 0, /* ClusterIP only */
	FLASH_SPEC_EXPOSURE_PUBLIC = 1,   /* public load balancer */
};

enum flash_spec_traffic_mode {
	FLASH_SPEC_TRAFFIC_FORWARDED = 0, /* spread over the cluster */
	FLASH_SPEC_TRAFFIC_DIRECT = 1,    /* externalTrafficPolicy Local, public nodes */
};

enum flash_spec_egress {
	FLASH_SPEC_EGRESS_DISABLED = 0,   /* DNS only */
	FLASH_SPEC_EGRESS_RESTRICTED = 1, /* only the allowed public destinations */
	FLASH_SPEC_EGRESS_INTERNET = 2,   /* public Internet destinations */
};

/* The four CIDR lists of a spec. */
enum flash_spec_cidr_list {
	FLASH_SPEC_ALLOWED_SOURCES = 0,      /* exposure.allowed_source_cidrs */
	FLASH_SPEC_DENIED_SOURCES = 1,       /* exposure.denied_source_cidrs */
	FLASH_SPEC_ALLOWED_DESTINATIONS = 2, /* egress.allowed_destination_cidrs */
	FLASH_SPEC_DENIED_DESTINATIONS = 3,  /* egress.denied_destination_cidrs */
};

struct flash_spec_parse_opts {
	size_t sz;
	/* Report "dropped" beyond this many entries (0: FLASH_DIAG_MAX;
	 * larger values are clamped to FLASH_DIAG_MAX). */
	size_t max_problems;
};

/* Parses and validates the @len bytes of JSON at @json.
 * On success returns 0 and *ret_spec (free with flash_spec_free()); @diag,
 * if not NULL, is reset and receives the warnings.  On failure *ret_spec is
 * untouched and @diag (if not NULL) holds every problem found:
 *   -FLASH_E_SPEC_SYNTAX   the input is not acceptable JSON: one entry with
 *                          line and column and a code naming the fault
 *                          ("json-syntax", "json-utf8", "json-duplicate-key",
 *                          "json-depth", "json-string-size",
 *                          "json-container-size", "json-nodes",
 *                          "json-input-size", "json-empty"),
 *   -FLASH_E_SPEC_INVALID  one or more rules are broken (all reported),
 *   -EINVAL                a NULL argument or bad @opts,
 *   -ENOMEM.
 * @opts may be NULL. */
FLASH_API FLASH_WUR int flash_spec_parse(const char *json, size_t len,
					 const struct flash_spec_parse_opts *opts,
					 struct flash_spec **ret_spec, struct flash_diag *diag);

/* Frees @spec (NULL is fine). */
FLASH_API void flash_spec_free(struct flash_spec *spec);

/* The canonical JSON of @spec: keys sorted bytewise at every level, no
 * insignificant whitespace, CIDRs in canonical text and sorted, every
 * optional field with a default written out, absent optional fields
 * (gpu_type, autoscaling) omitted.  *ret_json is a new NUL-terminated
 * buffer freed by the caller; *ret_len (if @ret_len is not NULL) its
 * length.  Returns 0, -EINVAL, -ENOMEM. */
FLASH_API FLASH_WUR int flash_spec_to_json(const struct flash_spec *spec, char **ret_json, size_t *ret_len);

/* Size of the digest in bytes (BLAKE2b-256). */
#define FLASH_SPEC_DIGEST_SIZE 32
/* Hex text of a digest, with the NUL. */
#define FLASH_SPEC_DIGEST_HEX_SIZE (2 * FLASH_SPEC_DIGEST_SIZE + 1)

/* BLAKE2b-256 (unkeyed) of the canonical JSON of @spec into @ret_digest.
 * Returns 0 or -EINVAL. */
FLASH_API int flash_spec_digest(const struct flash_spec *spec, uint8_t ret_digest[FLASH_SPEC_DIGEST_SIZE]);
/* The same digest as lower-case hex text, NUL-terminated, into @buf of
 * FLASH_SPEC_DIGEST_HEX_SIZE bytes.  Returns 0 or -EINVAL. */
FLASH_API int flash_spec_digest_hex(const struct flash_spec *spec, char buf[FLASH_SPEC_DIGEST_HEX_SIZE]);

/* True when @a and @b have the same canonical form (both non-NULL). */
FLASH_API bool flash_spec_equal(const struct flash_spec *a, const struct flash_spec *b);

/* Getters.  Strings are owned by @spec and live as long as it.  Indexed
 * getters return NULL / 0 when @i is out of range. */
FLASH_API const char *flash_spec_region(const struct flash_spec *spec);
FLASH_API const char *flash_spec_image(const struct flash_spec *spec);
FLASH_API uint32_t flash_spec_replicas(const struct flash_spec *spec);
FLASH_API uint32_t flash_spec_cpu_millis(const struct flash_spec *spec);
FLASH_API uint32_t flash_spec_memory_mib(const struct flash_spec *spec);
/* NULL when the spec asks for no GPU. */
FLASH_API const char *flash_spec_gpu_type(const struct flash_spec *spec);
/* GPUs per replica: 1 with a gpu_type, else 0. */
FLASH_API uint32_t flash_spec_gpu_count(const struct flash_spec *spec);
FLASH_API uint32_t flash_spec_ephemeral_storage_gib(const struct flash_spec *spec);

/* The ports, in spec order: their number (0 for a NULL @spec), then the
 * name (owned by @spec), protocol and containerPort of port @i (NULL,
 * FLASH_SPEC_PROTOCOL_TCP and 0 when @i is out of range). */
FLASH_API size_t flash_spec_port_count(const struct flash_spec *spec);
FLASH_API const char *flash_spec_port_name(const struct flash_spec *spec, size_t i);
FLASH_API enum flash_spec_protocol flash_spec_port_protocol(const struct flash_spec *spec, size_t i);
FLASH_API uint16_t flash_spec_port_container_port(const struct flash_spec *spec, size_t i);
/* "tcp" or "udp". */
FLASH_API const char *flash_spec_protocol_name(enum flash_spec_protocol protocol);

/* The network section: exposure, traffic mode, egress mode and whether
 * egress to the same organization is allowed.  A NULL @spec reads as the
 * defaults (internal, forwarded, disabled, false). */
FLASH_API enum flash_spec_exposure flash_spec_exposure_type(const struct flash_spec *spec);
FLASH_API enum flash_spec_traffic_mode flash_spec_traffic_mode(const struct flash_spec *spec);
FLASH_API enum flash_spec_egress flash_spec_egress_mode(const struct flash_spec *spec);
FLASH_API bool flash_spec_egress_allow_same_organization(const struct flash_spec *spec);

/* The prefixes of one CIDR list, normalized (a bare address is a /32 or
 * /128) and sorted with flowsdn_prefix_compare(). */
FLASH_API size_t flash_spec_cidr_count(const struct flash_spec *spec, enum flash_spec_cidr_list list);
FLASH_API const struct flowsdn_prefix *flash_spec_cidr(const struct flash_spec *spec,
						       enum flash_spec_cidr_list list, size_t i);

/* env and metadata: sorted by key (bytewise). */
FLASH_API size_t flash_spec_env_count(const struct flash_spec *spec);
FLASH_API const char *flash_spec_env_key(const struct flash_spec *spec, size_t i);
FLASH_API const char *flash_spec_env_value(const struct flash_spec *spec, size_t i);
/* Value of env @key, NULL when absent. */
FLASH_API const char *flash_spec_env_get(const struct flash_spec *spec, const char *key);
FLASH_API size_t flash_spec_metadata_count(const struct flash_spec *spec);
FLASH_API const char *flash_spec_metadata_key(const struct flash_spec *spec, size_t i);
FLASH_API const char *flash_spec_metadata_value(const struct flash_spec *spec, size_t i);
FLASH_API const char *flash_spec_metadata_get(const struct flash_spec *spec, const char *key);

/* command and args, in order. */
FLASH_API size_t flash_spec_command_count(const struct flash_spec *spec);
FLASH_API const char *flash_spec_command(const struct flash_spec *spec, size_t i);
FLASH_API size_t flash_spec_args_count(const struct flash_spec *spec);
FLASH_API const char *flash_spec_arg(const struct flash_spec *spec, size_t i);

/* autoscaling: false when absent (then the getters return 0). */
FLASH_API bool flash_spec_has_autoscaling(const struct flash_spec *spec);
FLASH_API uint32_t flash_spec_autoscaling_min_replicas(const struct flash_spec *spec);
FLASH_API uint32_t flash_spec_autoscaling_max_replicas(const struct flash_spec *spec);
FLASH_API uint32_t flash_spec_autoscaling_target_cpu_percent(const struct flash_spec *spec);

/* domains: host names routed to a declared TCP port (by port name). */
FLASH_API size_t flash_spec_domain_count(const struct flash_spec *spec);
FLASH_API const char *flash_spec_domain_host(const struct flash_spec *spec, size_t i);
FLASH_API const char *flash_spec_domain_port(const struct flash_spec *spec, size_t i);

#ifdef __cplusplus
}
#endif

#endif
