/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The FlashService and FlashUsageRecord CustomResourceDefinitions.
 *
 * The FlashService spec schema is generated from the spec field table
 * (spec-fields.h), the table the spec validator enforces, so a changed
 * limit, pattern or enum changes both.  What a structural schema cannot
 * say stays with the C validator: map key patterns (propertyNames is not
 * allowed in CRDs), uniqueness of port names, CIDR classes and the
 * cross-field rules.  maxLength is in bytes in the table and in characters
 * in Kubernetes, so the CRD is never stricter than the C validator.
 */
#include "config.h"

#include "internal.h"
#include "render-internal.h"
#include "spec-fields.h"

static struct kdoc *schema_of(const struct spec_field *f);

/* One CEL rule (x-kubernetes-validations) with the message the API
 * server answers and, for a rule on an object, the field it blames. */
static void cel_rule(struct kdoc *schema, const char *rule, const char *message, const char *field_path)
{
	struct kdoc *list = kdoc_get(schema, "x-kubernetes-validations");
	struct kdoc *r;

	if (!list)
		list = kdoc_set_arr(schema, "x-kubernetes-validations");
	r = kdoc_append_obj(list);
	kdoc_set_str(r, "rule", rule);
	kdoc_set_str(r, "message", message);
	kdoc_set_str(r, "reason", "FieldValueInvalid");
	if (field_path)
		kdoc_set_str(r, "fieldPath", field_path);
}

static void add_enum(struct kdoc *s, const char *const *values)
{
	struct kdoc *e = kdoc_set_arr(s, "enum");

	for (size_t i = 0; values[i]; i++)
		kdoc_append_str(e, values[i]);
}

static struct kdoc *schema_of(const struct spec_field *f)
{
	struct kdoc *s = kdoc_object();
	struct kdoc *props, *req;

	if (f->description)
		kdoc_set_str(s, "description", f->description);
	switch (f->type) {
	case SPEC_STRING:
		kdoc_set_str(s, "type", "string");
		if (f->min_length)
			kdoc_set_int(s, "minLength", (int64_t)f->min_length);
		if (f->max_length)
			kdoc_set_int(s, "maxLength", (int64_t)f->max_length);
		if (f->pattern)
			kdoc_set_str(s, "pattern", f->pattern);
		if (f->enum_values)
			add_enum(s, f->enum_values);
		if (f->has_default && f->default_string)
			kdoc_set_str(s, "default", f->default_string);
		/* CIDR syntax (the Kubernetes CEL net library): an address, or
		 * a prefix without host bits; the address classes stay with
		 * the webhook. */
		if (f->format == SPEC_FMT_CIDR)
			cel_rule(s, "isCIDR(self) ? cidr(self) == cidr(self).masked() : isIP(self)",
				 "must be an IP address or a CIDR without host bits", NULL);
		break;
	case SPEC_INTEGER:
		kdoc_set_str(s, "type", "integer");
		kdoc_set_str(s, "format", f->minimum >= INT32_MIN && f->maximum <= INT32_MAX ? "int32" : "int64");
		kdoc_set_int(s, "minimum", f->minimum);
		kdoc_set_int(s, "maximum", f->maximum);
		if (f->has_default)
			kdoc_set_int(s, "default", f->default_int);
		break;
	case SPEC_BOOLEAN:
		kdoc_set_str(s, "type", "boolean");
		if (f->has_default)
			kdoc_set_bool(s, "default", f->default_bool);
		break;
	case SPEC_OBJECT:
		kdoc_set_str(s, "type", "object");
		props = kdoc_set_obj(s, "properties");
		req = kdoc_array();
		for (size_t i = 0; i < f->n_fields; i++) {
			kdoc_set(props, f->fields[i].name, schema_of(&f->fields[i]));
			if (f->fields[i].required)
				kdoc_append_str(req, f->fields[i].name);
		}
		if (kdoc_len(req))
			kdoc_set(s, "required", req);
		else
			kdoc_free(req);
		break;
	case SPEC_ARRAY:
		kdoc_set_str(s, "type", "array");
		if (f->max_items)
			kdoc_set_int(s, "maxItems", (int64_t)f->max_items);
		kdoc_set(s, "items", f->items ? schema_of(f->items) : NULL);
		/* Uniqueness is a list type in structural schemas; "set"
		 * needs scalar items. */
		if (f->unique_items && f->items && f->items->type != SPEC_OBJECT && f->items->type != SPEC_ARRAY &&
		    f->items->type != SPEC_MAP)
			kdoc_set_str(s, "x-kubernetes-list-type", "set");
		break;
	case SPEC_MAP:
		kdoc_set_str(s, "type", "object");
		if (f->max_items)
			kdoc_set_int(s, "maxProperties", (int64_t)f->max_items);
		kdoc_set(s, "additionalProperties", f->items ? schema_of(f->items) : NULL);
		/* Key rules: no propertyNames in CRDs, so CEL over the keys. */
		if (f->key && f->key->pattern) {
			struct kdoc *msg = kdoc_stringf("every key must match %s", f->key->pattern_hint ? f->key->pattern_hint
												: f->key->pattern);
			struct kdoc *rule = kdoc_stringf("self.all(k, size(k) <= %zu && k.matches(r'%s'))", f->key->max_length,
							 f->key->pattern);

			cel_rule(s, kdoc_string_value(rule), kdoc_string_value(msg), NULL);
			kdoc_free(rule);
			kdoc_free(msg);
		}
		break;
	}
	return s;
}

/* The cross-field rules of the spec validator (libflash/spec.c) that CEL
 * can state, each with the validator's rule code in a comment; what CEL
 * cannot (address classes, env and argv size totals, image reference
 * rules) is the webhook's (operator/webhook.c runs the validator itself).
 * Fields with a default are always present here: the API server defaults
 * before it validates. */
static void spec_cel_rules(struct kdoc *spec)
{
	struct kdoc *props = kdoc_get(spec, "properties");

	/* autoscaling-range, replicas-outside-autoscaling */
	cel_rule(spec, "!has(self.autoscaling) || self.autoscaling.min_replicas <= self.autoscaling.max_replicas",
		 "autoscaling.min_replicas must not exceed max_replicas", ".autoscaling.min_replicas");
	cel_rule(spec,
		 "!has(self.autoscaling) || !has(self.replicas) || self.replicas == 0 || "
		 "self.autoscaling.min_replicas > self.autoscaling.max_replicas || "
		 "(self.replicas >= self.autoscaling.min_replicas && self.replicas <= self.autoscaling.max_replicas)",
		 "replicas must be 0 or within autoscaling min_replicas..max_replicas", ".replicas");
	/* domains-need-public, domain-port */
	cel_rule(spec,
		 "!has(self.domains) || size(self.domains) == 0 || "
		 "(has(self.exposure) && has(self.exposure.type) && self.exposure.type == 'public')",
		 "domains need exposure type public", ".domains");
	cel_rule(spec,
		 "!has(self.domains) || self.domains.all(d, has(self.ports) && "
		 "self.ports.exists(p, p.name == d.port && p.protocol == 'tcp'))",
		 "every domain must name a declared tcp port", ".domains");
	/* unique: port names, (protocol, container_port) pairs, domain hosts */
	cel_rule(kdoc_get(props, "ports"), "self.all(p, self.exists_one(q, q.name == p.name))",
		 "port names must be unique", NULL);
	cel_rule(kdoc_get(props, "ports"),
		 "self.all(p, self.exists_one(q, q.protocol == p.protocol && q.container_port == p.container_port))",
		 "(protocol, container_port) pairs must be unique", NULL);
	cel_rule(kdoc_get(props, "domains"), "self.all(d, self.exists_one(e, e.host == d.host))",
		 "domain hosts must be unique", NULL);
	/* direct-needs-public, sources-need-public */
	cel_rule(kdoc_get(props, "exposure"),
		 "!has(self.traffic_mode) || self.traffic_mode != 'direct' || (has(self.type) && self.type == 'public')",
		 "direct traffic mode needs exposure type public", ".traffic_mode");
	cel_rule(kdoc_get(props, "exposure"),
		 "(has(self.type) && self.type == 'public') || "
		 "((!has(self.allowed_source_cidrs) || size(self.allowed_source_cidrs) == 0) && "
		 "(!has(self.denied_source_cidrs) || size(self.denied_source_cidrs) == 0))",
		 "source lists apply to public exposure only", ".allowed_source_cidrs");
	/* restricted-needs-destination, destinations-need-restricted */
	cel_rule(kdoc_get(props, "egress"),
		 "!has(self.mode) || self.mode != 'restricted' || "
		 "(has(self.allowed_destination_cidrs) && size(self.allowed_destination_cidrs) > 0)",
		 "restricted egress needs at least one allowed destination", ".allowed_destination_cidrs");
	cel_rule(kdoc_get(props, "egress"),
		 "(has(self.mode) && self.mode == 'restricted') || !has(self.allowed_destination_cidrs) || "
		 "size(self.allowed_destination_cidrs) == 0",
		 "allowed destinations apply to restricted egress only", ".allowed_destination_cidrs");
}

static void printer_column(struct kdoc *cols, const char *name, const char *type, const char *path)
{
	struct kdoc *c = kdoc_append_obj(cols);

	kdoc_set_str(c, "name", name);
	kdoc_set_str(c, "type", type);
	kdoc_set_str(c, "jsonPath", path);
}

static struct kdoc *prop(struct kdoc *props, const char *name, const char *type, const char *desc)
{
	struct kdoc *p = kdoc_set_obj(props, name);

	if (desc)
		kdoc_set_str(p, "description", desc);
	kdoc_set_str(p, "type", type);
	return p;
}

static struct kdoc *int_prop(struct kdoc *props, const char *name, const char *format, const char *desc)
{
	struct kdoc *p = prop(props, name, "integer", desc);

	kdoc_set_str(p, "format", format);
	kdoc_set_int(p, "minimum", 0);
	return p;
}

static void conditions_prop(struct kdoc *props)
{
	struct kdoc *c = prop(props, "conditions", "array", "Ready, Progressing and Degraded, as metav1.Condition.");
	struct kdoc *keys, *item, *req, *ip, *st;

	kdoc_set_str(c, "x-kubernetes-list-type", "map");
	keys = kdoc_set_arr(c, "x-kubernetes-list-map-keys");
	kdoc_append_str(keys, "type");
	item = kdoc_set_obj(c, "items");
	kdoc_set_str(item, "type", "object");
	req = kdoc_set_arr(item, "required");
	kdoc_append_str(req, "type");
	kdoc_append_str(req, "status");
	kdoc_append_str(req, "lastTransitionTime");
	kdoc_append_str(req, "reason");
	kdoc_append_str(req, "message");
	ip = kdoc_set_obj(item, "properties");
	prop(ip, "type", "string", NULL);
	st = prop(ip, "status", "string", NULL);
	kdoc_append_str(kdoc_set_arr(st, "enum"), "True");
	kdoc_append_str(kdoc_get(st, "enum"), "False");
	kdoc_append_str(kdoc_get(st, "enum"), "Unknown");
	int_prop(ip, "observedGeneration", "int64", NULL);
	kdoc_set_str(prop(ip, "lastTransitionTime", "string", NULL), "format", "date-time");
	prop(ip, "reason", "string", NULL);
	prop(ip, "message", "string", NULL);
}

/* The CRD skeleton: metadata, names, one served and stored version with
 * the status subresource.  Returns the version object via @ret_version. */
static struct kdoc *crd_skeleton(const char *plural, const char *singular, const char *kind, const char *short_name,
				 struct kdoc **ret_version)
{
	struct kdoc *crd = kdoc_object();
	struct kdoc *md, *spec, *names, *v;

	kdoc_set_str(crd, "apiVersion", "apiextensions.k8s.io/v1");
	kdoc_set_str(crd, "kind", "CustomResourceDefinition");
	md = kdoc_set_obj(crd, "metadata");
	kdoc_set(md, "name", kdoc_stringf("%s.%s", plural, FLASH_GROUP));
	kdoc_set_str(kdoc_set_obj(md, "labels"), FLASH_LABEL_MANAGED_BY, FLASH_MANAGER);
	spec = kdoc_set_obj(crd, "spec");
	kdoc_set_str(spec, "group", FLASH_GROUP);
	kdoc_set_str(spec, "scope", "Namespaced");
	names = kdoc_set_obj(spec, "names");
	kdoc_set_str(names, "plural", plural);
	kdoc_set_str(names, "singular", singular);
	kdoc_set_str(names, "kind", kind);
	kdoc_set(names, "listKind", kdoc_stringf("%sList", kind));
	kdoc_append_str(kdoc_set_arr(names, "shortNames"), short_name);
	kdoc_append_str(kdoc_set_arr(names, "categories"), "flash");
	v = kdoc_append_obj(kdoc_set_arr(spec, "versions"));
	kdoc_set_str(v, "name", FLASH_VERSION);
	kdoc_set_bool(v, "served", true);
	kdoc_set_bool(v, "storage", true);
	kdoc_set_obj(kdoc_set_obj(v, "subresources"), "status");
	*ret_version = v;
	return crd;
}

static struct kdoc *root_schema(struct kdoc *version, const char *desc)
{
	struct kdoc *s = kdoc_set_obj(kdoc_set_obj(version, "schema"), "openAPIV3Schema");
	struct kdoc *props;

	kdoc_set_str(s, "description", desc);
	kdoc_set_str(s, "type", "object");
	props = kdoc_set_obj(s, "properties");
	kdoc_set_str(kdoc_set_obj(props, "apiVersion"), "type", "string");
	kdoc_set_str(kdoc_set_obj(props, "kind"), "type", "string");
	kdoc_set_str(kdoc_set_obj(props, "metadata"), "type", "object");
	return props;
}

struct kdoc *crd_flashservice(void)
{
	struct kdoc *v = NULL;
	struct kdoc *crd = crd_skeleton("flashservices", "flashservice", "FlashService", "fsvc", &v);
	struct kdoc *cols = kdoc_set_arr(v, "additionalPrinterColumns");
	struct kdoc *props, *status, *sp, *pp, *item, *ip, *proto;

	printer_column(cols, "Image", "string", ".spec.image");
	printer_column(cols, "Replicas", "integer", ".spec.replicas");
	printer_column(cols, "Ready", "string", ".status.conditions[?(@.type==\"Ready\")].status");
	printer_column(cols, "Endpoint", "string", ".status.endpoint");
	printer_column(cols, "Age", "date", ".metadata.creationTimestamp");
	props = root_schema(v, "FlashService is an isolated container service managed by flash-operator.");
	kdoc_set(props, "spec", schema_of(&spec_root));
	spec_cel_rules(kdoc_get(props, "spec"));
	/* The spec object itself is required in a FlashService. */
	kdoc_append_str(kdoc_set_arr(kdoc_get(kdoc_get(v, "schema"), "openAPIV3Schema"), "required"), "spec");

	status = kdoc_set_obj(props, "status");
	kdoc_set_str(status, "type", "object");
	sp = kdoc_set_obj(status, "properties");
	int_prop(sp, "observedGeneration", "int64", "metadata.generation the status describes.");
	int_prop(sp, "replicas", "int32", "Replicas that exist.");
	int_prop(sp, "readyReplicas", "int32", "Replicas that are ready.");
	prop(sp, "endpoint", "string", "Routable endpoint (address or host name) once ready.");
	prop(sp, "imageDigest", "string", "Digest the workload is pinned to.");
	pp = prop(sp, "publicPorts", "array", "Public port of each (protocol, name) pair; kept across updates.");
	kdoc_set_str(pp, "x-kubernetes-list-type", "map");
	kdoc_append_str(kdoc_set_arr(pp, "x-kubernetes-list-map-keys"), "name");
	item = kdoc_set_obj(pp, "items");
	kdoc_set_str(item, "type", "object");
	kdoc_append_str(kdoc_set_arr(item, "required"), "name");
	kdoc_append_str(kdoc_get(item, "required"), "protocol");
	kdoc_append_str(kdoc_get(item, "required"), "port");
	ip = kdoc_set_obj(item, "properties");
	prop(ip, "name", "string", NULL);
	proto = prop(ip, "protocol", "string", NULL);
	kdoc_append_str(kdoc_set_arr(proto, "enum"), "tcp");
	kdoc_append_str(kdoc_get(proto, "enum"), "udp");
	kdoc_set_int(int_prop(ip, "port", "int32", NULL), "maximum", 65535);
	kdoc_set_int(kdoc_get(ip, "port"), "minimum", 1);
	conditions_prop(sp);
	return crd;
}

struct kdoc *crd_flashusagerecord(void)
{
	struct kdoc *v = NULL;
	struct kdoc *crd = crd_skeleton("flashusagerecords", "flashusagerecord", "FlashUsageRecord", "fur", &v);
	struct kdoc *cols = kdoc_set_arr(v, "additionalPrinterColumns");
	struct kdoc *props, *status, *sp, *req, *scope;
	static const char *const required[] = {
		"scope", "organization", "week", "weekStart", "weekEnd", "cpuMillicoreSeconds",
		"memoryMiBSeconds", "gpuSeconds", "saturated", "accruedUntil",
	};

	printer_column(cols, "Scope", "string", ".status.scope");
	printer_column(cols, "Organization", "string", ".status.organization");
	printer_column(cols, "Service", "string", ".status.serviceId");
	printer_column(cols, "Week", "string", ".status.week");
	printer_column(cols, "CPU", "integer", ".status.cpuMillicoreSeconds");
	printer_column(cols, "Memory", "integer", ".status.memoryMiBSeconds");
	printer_column(cols, "GPU", "integer", ".status.gpuSeconds");
	printer_column(cols, "Age", "date", ".metadata.creationTimestamp");
	props = root_schema(v, "FlashUsageRecord keeps one week of allocated runtime of an organization or a service; "
			       "it outlives the service.");
	status = kdoc_set_obj(props, "status");
	kdoc_set_str(status, "type", "object");
	req = kdoc_set_arr(status, "required");
	for (size_t i = 0; i < ARRAY_SIZE(required); i++)
		kdoc_append_str(req, required[i]);
	sp = kdoc_set_obj(status, "properties");
	scope = prop(sp, "scope", "string", "Organization or Service.");
	kdoc_append_str(kdoc_set_arr(scope, "enum"), "Organization");
	kdoc_append_str(kdoc_get(scope, "enum"), "Service");
	prop(sp, "organization", "string", "Opaque organization id.");
	prop(sp, "serviceId", "string", "Opaque service id (service records).");
	kdoc_set_str(prop(sp, "week", "string", "ISO 8601 week (YYYY-Www)."), "pattern", "^[0-9]{4}-W[0-9]{2}$");
	kdoc_set_str(prop(sp, "weekStart", "string", "Monday 00:00 UTC."), "format", "date-time");
	kdoc_set_str(prop(sp, "weekEnd", "string", "The next Monday 00:00 UTC."), "format", "date-time");
	int_prop(sp, "cpuMillicoreSeconds", "int64", "cpu_millis x ready replicas x seconds.");
	int_prop(sp, "memoryMiBSeconds", "int64", "memory_mib x ready replicas x seconds.");
	int_prop(sp, "gpuSeconds", "int64", "GPUs x ready replicas x seconds.");
	prop(sp, "saturated", "boolean", "A counter reached the int64 maximum.");
	kdoc_set_str(prop(sp, "accruedUntil", "string", "End of the last interval counted."), "format", "date-time");
	prop(sp, "serviceDeleted", "boolean", "The service is gone; the record stays.");
	kdoc_set_str(prop(sp, "deletedAt", "string", "When the service was deleted."), "format", "date-time");
	/* date-time strings are CEL timestamps: compared as instants, not
	 * as text. */
	cel_rule(status, "self.weekEnd >= self.weekStart", "weekEnd must not be before weekStart", ".weekEnd");
	return crd;
}
