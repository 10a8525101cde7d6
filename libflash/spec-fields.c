/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The field tables of the Flash spec and of the owner quota policy (see
 * spec-fields.h).  Limits here are the ones documented in flash-spec(5);
 * change them here and nowhere else.
 */
#include "config.h"

#include <string.h>

#include "spec-fields.h"

/* A DNS label (RFC 1123), lower case: the CRD's pattern; libflash checks
 * these fields with names_dns_label_valid() (SPEC_FMT_DNS_LABEL), and
 * tests/unit/test-names.c proves the two agree. */
#define DNS_LABEL "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define RE_DNS_LABEL "^" DNS_LABEL "$"

/* A host name of at least two labels of at most 63 characters. */
#define HOST_LABEL "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
#define RE_HOSTNAME "^(" HOST_LABEL "\\.)+" HOST_LABEL "$"

/* The distribution reference grammar (github.com/distribution/reference):
 *   reference := name [ ":" tag ] [ "@" digest ]
 *   name      := [domain "/"] path-component ["/" path-component]*
 *   domain    := domain-component ["." domain-component]* [":" port]
 * with the digest restricted to sha256.  The rule that the first component
 * is a domain only when it has a "." or ":" or is "localhost" is checked
 * in code (SPEC_FMT_OCI_REFERENCE), as is the 255-byte name limit. */
#define OCI_DOMAIN_COMPONENT "[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?"
#define OCI_DOMAIN OCI_DOMAIN_COMPONENT "(\\." OCI_DOMAIN_COMPONENT ")*(:[0-9]+)?"
#define OCI_PATH_COMPONENT "[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*"
#define OCI_TAG "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
#define RE_OCI_REFERENCE                                                                  \
	"^(" OCI_DOMAIN "/)?" OCI_PATH_COMPONENT "(/" OCI_PATH_COMPONENT ")*(:" OCI_TAG ")?" \
	"(@sha256:[a-f0-9]{64})?$"

#define RE_ENV_NAME "^[A-Za-z_][A-Za-z0-9_]*$"
#define RE_METADATA_KEY "^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"

#define HINT_DNS_LABEL "a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit"
#define HINT_HOSTNAME "a lower-case host name of at least two dot-separated DNS labels of at most 63 characters"
#define HINT_OCI_REFERENCE "an OCI image reference [registry/]repository[:tag][@sha256:<64 hex digits>] " \
	"with a lower-case repository"
#define HINT_ENV_NAME "an environment variable name: letters, digits and '_', not starting with a digit"
#define HINT_METADATA_KEY "letters, digits, '-', '_' and '.', starting and ending with a letter or digit"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const protocols[] = { "tcp", "udp", NULL };
static const char *const exposure_types[] = { "internal", "public", NULL };
static const char *const traffic_modes[] = { "direct", "forwarded", NULL };
static const char *const egress_modes[] = { "disabled", "internet", "restricted", NULL };

/* ---------------------------------------------------------------- spec */

static const struct spec_field cidr_item = {
	.type = SPEC_STRING,
	.description = "An IPv4 or IPv6 address or CIDR.",
	.min_length = 1,
	.max_length = 64,
	.format = SPEC_FMT_CIDR,
};

#define CIDR_LIST(NAME, DESC)                          \
	{                                              \
		.name = NAME,                          \
		.type = SPEC_ARRAY,                    \
		.description = DESC,                   \
		.max_items = 64,                       \
		.unique_items = true,                  \
		.items = &cidr_item,                   \
		.has_default = true,                   \
	}

static const struct spec_field port_fields[] = {
	{
		.name = "container_port",
		.type = SPEC_INTEGER,
		.required = true,
		.description = "Port the container listens on.",
		.minimum = 1,
		.maximum = 65535,
	},
	{
		.name = "name",
		.type = SPEC_STRING,
		.required = true,
		.description = "Port name: a DNS label of at most 15 characters, unique in the spec.",
		.min_length = 1,
		.max_length = 15,
		.pattern = RE_DNS_LABEL,
		.format = SPEC_FMT_DNS_LABEL,
		.pattern_hint = HINT_DNS_LABEL,
	},
	{
		.name = "protocol",
		.type = SPEC_STRING,
		.required = true,
		.description = "Transport protocol.",
		.min_length = 3,
		.max_length = 3,
		.enum_values = protocols,
	},
};

static const struct spec_field port_item = {
	.type = SPEC_OBJECT,
	.description = "One inbound port.",
	.fields = port_fields,
	.n_fields = N(port_fields),
};

static const struct spec_field exposure_fields[] = {
	CIDR_LIST("allowed_source_cidrs",
		  "Public sources allowed to reach the ports; empty allows every publicly routable source."),
	CIDR_LIST("denied_source_cidrs", "Sources refused even when allowed (deny wins)."),
	{
		.name = "traffic_mode",
		.type = SPEC_STRING,
		.description = "forwarded spreads public traffic over the cluster; direct keeps it on "
			       "public nodes (externalTrafficPolicy Local); direct needs type public.",
		.min_length = 6,
		.max_length = 9,
		.enum_values = traffic_modes,
		.has_default = true,
		.default_string = "forwarded",
	},
	{
		.name = "type",
		.type = SPEC_STRING,
		.description = "internal (cluster only) or public (public load balancer).",
		.min_length = 6,
		.max_length = 8,
		.enum_values = exposure_types,
		.has_default = true,
		.default_string = "internal",
	},
};

static const struct spec_field egress_fields[] = {
	{
		.name = "allow_same_organization",
		.type = SPEC_BOOLEAN,
		.description = "Allow traffic to the other workloads of the same organization.",
		.has_default = true,
		.default_bool = false,
	},
	CIDR_LIST("allowed_destination_cidrs",
		  "Public destinations allowed in restricted mode (at least one; restricted mode only)."),
	CIDR_LIST("denied_destination_cidrs", "Destinations refused even when allowed (deny wins)."),
	{
		.name = "mode",
		.type = SPEC_STRING,
		.description = "disabled (DNS only), restricted (only the allowed public destinations) "
			       "or internet (public Internet destinations).",
		.min_length = 8,
		.max_length = 10,
		.enum_values = egress_modes,
		.has_default = true,
		.default_string = "disabled",
	},
};

static const struct spec_field env_key = {
	.type = SPEC_STRING,
	.description = "An environment variable name.",
	.min_length = 1,
	.max_length = 255,
	.pattern = RE_ENV_NAME,
	.pattern_hint = HINT_ENV_NAME,
};

static const struct spec_field env_value = {
	.type = SPEC_STRING,
	.description = "A non-secret value.",
	.max_length = 32768,
};

static const struct spec_field metadata_key = {
	.type = SPEC_STRING,
	.description = "A metadata key.",
	.min_length = 1,
	.max_length = 128,
	.pattern = RE_METADATA_KEY,
	.pattern_hint = HINT_METADATA_KEY,
};

static const struct spec_field metadata_value = {
	.type = SPEC_STRING,
	.description = "A metadata value.",
	.max_length = 1024,
};

static const struct spec_field command_item = {
	.type = SPEC_STRING,
	.description = "One argument.",
	.max_length = 4096,
};

static const struct spec_field autoscaling_fields[] = {
	{
		.name = "max_replicas",
		.type = SPEC_INTEGER,
		.required = true,
		.description = "Most replicas the autoscaler may run (at least min_replicas).",
		.minimum = 1,
		.maximum = 1000,
	},
	{
		.name = "min_replicas",
		.type = SPEC_INTEGER,
		.required = true,
		.description = "Fewest replicas the autoscaler keeps.",
		.minimum = 1,
		.maximum = 1000,
	},
	{
		.name = "target_cpu_percent",
		.type = SPEC_INTEGER,
		.description = "Average CPU use, in percent of cpu_millis, the autoscaler aims at.",
		.minimum = 1,
		.maximum = 100,
		.has_default = true,
		.default_int = 80,
	},
};

static const struct spec_field domain_fields[] = {
	{
		.name = "host",
		.type = SPEC_STRING,
		.required = true,
		.description = "Fully qualified host name (lower case, at least two labels), unique in the spec.",
		.min_length = 3,
		.max_length = 253,
		.pattern = RE_HOSTNAME,
		.pattern_hint = HINT_HOSTNAME,
	},
	{
		.name = "port",
		.type = SPEC_STRING,
		.required = true,
		.description = "Name of the declared tcp port the host is routed to.",
		.min_length = 1,
		.max_length = 15,
		.pattern = RE_DNS_LABEL,
		.format = SPEC_FMT_DNS_LABEL,
		.pattern_hint = HINT_DNS_LABEL,
	},
};

static const struct spec_field domain_item = {
	.type = SPEC_OBJECT,
	.description = "A host name routed to a TCP port.",
	.fields = domain_fields,
	.n_fields = N(domain_fields),
};

static const struct spec_field spec_fields[] = {
	{
		.name = "args",
		.type = SPEC_ARRAY,
		.description = "Arguments passed to the command (replace the image's CMD).",
		.max_items = 256,
		.items = &command_item,
		.has_default = true,
	},
	{
		.name = "autoscaling",
		.type = SPEC_OBJECT,
		.description = "Horizontal autoscaling on CPU use; absent means a fixed replica count.",
		.fields = autoscaling_fields,
		.n_fields = N(autoscaling_fields),
	},
	{
		.name = "command",
		.type = SPEC_ARRAY,
		.description = "Entry point (replaces the image's ENTRYPOINT); empty keeps the image's.",
		.max_items = 64,
		.items = &command_item,
		.has_default = true,
	},
	{
		.name = "cpu_millis",
		.type = SPEC_INTEGER,
		.required = true,
		.description = "CPU per replica in millicores.",
		.minimum = 1,
		.maximum = 256000,
	},
	{
		.name = "domains",
		.type = SPEC_ARRAY,
		.description = "Host names routed to declared TCP ports.",
		.max_items = 16,
		.items = &domain_item,
		.has_default = true,
	},
	{
		.name = "egress",
		.type = SPEC_OBJECT,
		.description = "Outbound traffic; DNS is always available.",
		.fields = egress_fields,
		.n_fields = N(egress_fields),
		.has_default = true,
	},
	{
		.name = "env",
		.type = SPEC_MAP,
		.description = "Environment variables: durable, non-secret configuration (64 KiB in total).",
		.max_items = 128,
		.key = &env_key,
		.items = &env_value,
		.has_default = true,
	},
	{
		.name = "ephemeral_storage_gib",
		.type = SPEC_INTEGER,
		.description = "Disk per replica in GiB; the image counts against it.",
		.minimum = 1,
		.maximum = 10240,
		.has_default = true,
		.default_int = 10,
	},
	{
		.name = "exposure",
		.type = SPEC_OBJECT,
		.description = "How the declared ports are reachable.",
		.fields = exposure_fields,
		.n_fields = N(exposure_fields),
		.has_default = true,
	},
	{
		.name = "gpu_type",
		.type = SPEC_STRING,
		.description = "GPU model from the owner's GPU catalog; one GPU per replica. Absent: no GPU.",
		.min_length = 1,
		.max_length = 63,
		.pattern = RE_DNS_LABEL,
		.format = SPEC_FMT_DNS_LABEL,
		.pattern_hint = HINT_DNS_LABEL,
	},
	{
		.name = "image",
		.type = SPEC_STRING,
		.required = true,
		.description = "OCI image reference: name[:tag][@sha256:digest].",
		.min_length = 1,
		.max_length = 512,
		.pattern = RE_OCI_REFERENCE,
		.pattern_hint = HINT_OCI_REFERENCE,
		.format = SPEC_FMT_OCI_REFERENCE,
	},
	{
		.name = "memory_mib",
		.type = SPEC_INTEGER,
		.required = true,
		.description = "Memory per replica in MiB.",
		.minimum = 4,
		.maximum = 1048576,
	},
	{
		.name = "metadata",
		.type = SPEC_MAP,
		.description = "Free-form string labels for the owner's own use.",
		.max_items = 64,
		.key = &metadata_key,
		.items = &metadata_value,
		.has_default = true,
	},
	{
		.name = "ports",
		.type = SPEC_ARRAY,
		.description = "Inbound ports; (protocol, container_port) pairs and names are unique.",
		.max_items = 64,
		.items = &port_item,
		.has_default = true,
	},
	{
		.name = "region",
		.type = SPEC_STRING,
		.required = true,
		.description = "Region to run in (one of the owner policy's regions).",
		.min_length = 1,
		.max_length = 63,
		.pattern = RE_DNS_LABEL,
		.format = SPEC_FMT_DNS_LABEL,
		.pattern_hint = HINT_DNS_LABEL,
	},
	{
		.name = "replicas",
		.type = SPEC_INTEGER,
		.description = "Number of replicas; 0 stops the workload and its metering.",
		.minimum = 0,
		.maximum = 1000,
		.has_default = true,
		.default_int = 1,
	},
};

const struct spec_field spec_root = {
	.type = SPEC_OBJECT,
	.description = "A Flash workload.",
	.fields = spec_fields,
	.n_fields = N(spec_fields),
};

/* ---------------------------------------------------------------- policy */

#define LIMIT(NAME, DESC, MAX)            \
	{                                 \
		.name = NAME,             \
		.type = SPEC_INTEGER,     \
		.required = true,         \
		.description = DESC,      \
		.minimum = 0,             \
		.maximum = MAX,           \
	}

static const struct spec_field workload_limit_fields[] = {
	LIMIT("cpu_millis", "Largest cpu_millis of one replica.", 256000),
	LIMIT("ephemeral_storage_gib", "Largest ephemeral_storage_gib of one replica.", 10240),
	LIMIT("gpus", "Most GPUs of one workload (replicas with a gpu_type, counting autoscaling's maximum).", 1000),
	LIMIT("memory_mib", "Largest memory_mib of one replica.", 1048576),
	LIMIT("ports", "Most ports of one workload.", 64),
	LIMIT("replicas", "Most replicas of one workload (replicas and autoscaling max_replicas).", 1000),
};

#define ORG_MAX INT64_C(1000000000000)
static const struct spec_field org_limit_fields[] = {
	LIMIT("cpu_millis", "Total millicores over all workloads of the organization.", ORG_MAX),
	LIMIT("ephemeral_storage_gib", "Total GiB of disk over all replicas.", ORG_MAX),
	LIMIT("gpus", "Total GPUs over all replicas.", ORG_MAX),
	LIMIT("memory_mib", "Total MiB over all replicas.", ORG_MAX),
	LIMIT("ports", "Total ports over all workloads.", ORG_MAX),
	LIMIT("replicas", "Total replicas over all workloads.", ORG_MAX),
};

static const struct spec_field weekly_limit_fields[] = {
	LIMIT("cpu_millicore_seconds", "CPU the organization may use per week (cpu_millis x ready replicas x seconds).",
	      INT64_MAX),
	LIMIT("gpu_seconds", "GPU time per week (GPUs x ready replicas x seconds).", INT64_MAX),
	LIMIT("memory_mib_seconds", "Memory per week (memory_mib x ready replicas x seconds).", INT64_MAX),
};

static const struct spec_field region_item = {
	.type = SPEC_STRING,
	.description = "A region name.",
	.min_length = 1,
	.max_length = 63,
	.pattern = RE_DNS_LABEL,
	.format = SPEC_FMT_DNS_LABEL,
	.pattern_hint = HINT_DNS_LABEL,
};

static const struct spec_field gpu_item = {
	.type = SPEC_STRING,
	.description = "A GPU type.",
	.min_length = 1,
	.max_length = 63,
	.pattern = RE_DNS_LABEL,
	.format = SPEC_FMT_DNS_LABEL,
	.pattern_hint = HINT_DNS_LABEL,
};

static const struct spec_field policy_fields[] = {
	{
		.name = "gpu_catalog",
		.type = SPEC_ARRAY,
		.description = "GPU types a spec may name in gpu_type; empty: no GPUs.",
		.max_items = 256,
		.unique_items = true,
		.items = &gpu_item,
		.has_default = true,
	},
	{
		.name = "organization_limits",
		.type = SPEC_OBJECT,
		.required = true,
		.description = "Limits on the sum over all workloads of one organization.",
		.fields = org_limit_fields,
		.n_fields = N(org_limit_fields),
	},
	{
		.name = "protected_cidrs",
		.type = SPEC_ARRAY,
		.description = "Infrastructure ranges no spec may grant as a source or destination.",
		.max_items = 1024,
		.unique_items = true,
		.items = &cidr_item,
		.has_default = true,
	},
	{
		.name = "regions",
		.type = SPEC_ARRAY,
		.required = true,
		.description = "Regions a spec may name.",
		.max_items = 256,
		.unique_items = true,
		.items = &region_item,
	},
	{
		.name = "weekly_limits",
		.type = SPEC_OBJECT,
		.required = true,
		.description = "Weekly metering limits of one organization (reset Monday 00:00 UTC).",
		.fields = weekly_limit_fields,
		.n_fields = N(weekly_limit_fields),
	},
	{
		.name = "workload_limits",
		.type = SPEC_OBJECT,
		.required = true,
		.description = "Limits on one workload.",
		.fields = workload_limit_fields,
		.n_fields = N(workload_limit_fields),
	},
};

const struct spec_field policy_root = {
	.type = SPEC_OBJECT,
	.description = "The owner quota policy.",
	.fields = policy_fields,
	.n_fields = N(policy_fields),
};

const struct spec_field *spec_field_find(const struct spec_field *obj, const char *name)
{
	if (!obj || obj->type != SPEC_OBJECT || !name)
		return NULL;
	for (size_t i = 0; i < obj->n_fields; i++)
		if (strcmp(obj->fields[i].name, name) == 0)
			return &obj->fields[i];
	return NULL;
}

const char *spec_type_name(enum spec_type type)
{
	switch (type) {
	case SPEC_STRING:
		return "string";
	case SPEC_INTEGER:
		return "integer";
	case SPEC_BOOLEAN:
		return "boolean";
	case SPEC_OBJECT:
	case SPEC_MAP:
		return "object";
	case SPEC_ARRAY:
		return "array";
	}
	return "unknown";
}
