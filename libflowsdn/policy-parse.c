/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NetworkPolicy (networking.k8s.io/v1) import: strict decoding of the JSON
 * object (types, unknown fields) and the API server's validation
 * (ValidateNetworkPolicy: object metadata, label selectors, ports, peers,
 * ipBlock with strict CIDR validation, policyTypes), with the same field
 * paths and messages, then defaulting (protocol TCP, policyTypes).
 *
 * As in the API server, decoding errors (a wrong JSON type, an unknown
 * field) are reported alone; validation errors come in the order
 * ValidateNetworkPolicy finds them.
 *
 * Decoding goes through the one JSON engine (common/json-read.c): each
 * object is a field table read with JSON_READ_NULL_ABSENT and
 * JSON_READ_TABLE_ORDER (unknown fields first, then the Go struct's
 * order), the decoder's messages given by a struct json_read_style; the
 * readers then validate what they read.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <flowsdn/policy.h>

#include "json.h"
#include "names.h"
#include "policy-internal.h"

#define MAX_CAUSES 64

/* One validation failure, as a Kubernetes StatusCause (bounded as the
 * API server's messages are). */
struct cause {
	enum flowsdn_policy_cause_type type;
	char field[256];   /* "spec.ingress[0].from[0].ipBlock.cidr" */
	char message[640]; /* "Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, ..." */
};

/* A parse in progress: the engine's context first (its path is the field
 * of a cause; the decoding hooks find the parse through it). */
struct pctx {
	struct check_ctx ck;
	struct cause decode[MAX_CAUSES];
	size_t n_decode;
	struct cause valid[MAX_CAUSES];
	size_t n_valid;
	int err;               /* -ENOMEM */
};

/* ------------------------------------------------------------ messages */

/* Go's %q for the printable ASCII and UTF-8 we accept. */
static void goquote(char *buf, size_t size, const char *s)
{
	size_t o = 0;

	if (size < 3)
		return;
	buf[o++] = '"';
	for (; *s && o + 6 < size; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)ch;
		} else if (ch == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else if (ch == '\t') {
			buf[o++] = '\\';
			buf[o++] = 't';
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch);
		} else {
			buf[o++] = (char)ch;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

static void add_cause(struct pctx *c, bool decode, enum flowsdn_policy_cause_type type,
		      const char *field, const char *fmt, ...) _printf_(5, 6);
static void add_cause(struct pctx *c, bool decode, enum flowsdn_policy_cause_type type,
		      const char *field, const char *fmt, ...)
{
	struct cause *cs = decode ? c->decode : c->valid;
	size_t *n = decode ? &c->n_decode : &c->n_valid;
	struct cause *x;
	va_list ap;

	if (decode)
		c->ck.errors++;
	if (*n >= MAX_CAUSES) {
		(*n)++;
		return;
	}
	x = &cs[(*n)++];
	memset(x, 0, sizeof(*x));
	x->type = type;
	snprintf(x->field, sizeof(x->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(x->message, sizeof(x->message), fmt, ap);
	va_end(ap);
}

static const char *here(const struct pctx *c)
{
	return json_path_str(&c->ck.path);
}

static void invalid_str(struct pctx *c, const char *value, const char *msg)
{
	char q[300];

	goquote(q, sizeof(q), value);
	add_cause(c, false, FLOWSDN_POLICY_CAUSE_INVALID, here(c), "Invalid value: %s: %s", q, msg);
}

static void invalid_int(struct pctx *c, long long value, const char *msg)
{
	add_cause(c, false, FLOWSDN_POLICY_CAUSE_INVALID, here(c), "Invalid value: %lld: %s", value, msg);
}

static void required(struct pctx *c, const char *detail)
{
	if (detail && *detail)
		add_cause(c, false, FLOWSDN_POLICY_CAUSE_REQUIRED, here(c), "Required value: %s", detail);
	else
		add_cause(c, false, FLOWSDN_POLICY_CAUSE_REQUIRED, here(c), "Required value");
}

static void forbidden(struct pctx *c, const char *detail)
{
	add_cause(c, false, FLOWSDN_POLICY_CAUSE_FORBIDDEN, here(c), "Forbidden: %s", detail);
}

static void not_supported(struct pctx *c, const char *value, const char *supported)
{
	char q[300];

	goquote(q, sizeof(q), value);
	add_cause(c, false, FLOWSDN_POLICY_CAUSE_NOT_SUPPORTED, here(c),
		  "Unsupported value: %s: supported values: %s", q, supported);
}

static void bad_type(struct pctx *c, const struct json_value *v, const char *want)
{
	add_cause(c, true, FLOWSDN_POLICY_CAUSE_TYPE, here(c),
		  "Invalid type: expected %s, got %s", want, json_type_name(v->type));
}


static char *xstrdup(struct pctx *c, const char *s)
{
	char *d = strdup(s);

	if (!d)
		c->err = -ENOMEM;
	return d;
}

struct str_ud {
	struct pctx *c;
	const char *value;
};

static void invalid_str_cb(void *ud, const char *msg)
{
	struct str_ud *u = ud;

	invalid_str(u->c, u->value, msg);
}


/* A string; NULL with a decode error when it is not one. */
static const char *get_str(struct pctx *c, const struct json_value *v)
{
	const char *s;

	if (v->type != JSON_STRING) {
		bad_type(c, v, "string");
		return NULL;
	}
	if (json_get_string(v, &s) < 0) {
		add_cause(c, true, FLOWSDN_POLICY_CAUSE_TYPE, here(c),
			  "Invalid value: string contains a NUL character");
		return NULL;
	}
	return s;
}

/* ------------------------------------------------------------ decoding through the engine */

/* The decoder's words for what the engine finds (json_read_style). */
static void style_unknown(struct check_ctx *ck)
{
	struct pctx *c = (struct pctx *)ck;

	add_cause(c, true, FLOWSDN_POLICY_CAUSE_UNKNOWN_FIELD, here(c), "unknown field \"%s\"", here(c));
}

static void style_type(struct check_ctx *ck, const struct json_value *v, enum json_type want)
{
	bad_type((struct pctx *)ck, v,
		 want == JSON_OBJECT ? "object" : want == JSON_ARRAY ? "array" :
		 want == JSON_NUMBER ? "integer" : json_type_name(want));
}

static const struct json_read_style k8s_style = { style_unknown, style_type };

/* Reads the closed object @v by @fields into @target as the API server's
 * decoder does: null is "not set", unknown fields first, then the fields
 * in the order of the Go struct (the table's).  Returns the decoding
 * problems found in @v (0 when none); -ENOMEM stops the read. */
static int read_obj(struct pctx *c, const struct json_value *v, const struct json_field *fields, size_t n,
		    void *target)
{
	size_t before = c->ck.errors;
	int r = json_read_object_flags(&c->ck, v, fields, n, JSON_READ_NULL_ABSENT | JSON_READ_TABLE_ORDER, target);

	if (r < 0 && r != JSON_READ_REPORTED)
		return r;
	return c->ck.errors != before ? JSON_READ_REPORTED : 0;
}

/* Readers (struct json_field.read). */
static int rd_ref(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	(void)ck;
	(void)arg;
	*(const struct json_value **)dst = v;
	return 0;
}

/* A string without NUL: *dst, NULL when refused. */
static int rd_str(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	const char *s = get_str((struct pctx *)ck, v);

	(void)arg;
	*(const char **)dst = s;
	return s ? 0 : JSON_READ_REPORTED;
}

/* A string that must be @arg (apiVersion, kind). */
static int rd_fixed(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct pctx *c = (struct pctx *)ck;
	const char *s = get_str(c, v);
	char supported[64];

	(void)dst;
	if (s && strcmp(s, arg) != 0) {
		snprintf(supported, sizeof(supported), "\"%s\"", (const char *)arg);
		not_supported(c, s, supported);
	}
	return s ? 0 : JSON_READ_REPORTED;
}

/* A new array of @v's items, each of @size bytes and read by @item (in
 * order, its index pushed); *ret_n counts them.  NULL (c->err set) when
 * out of memory. */
static void *read_items(struct pctx *c, const struct json_value *v, size_t size, size_t *ret_n,
			void (*item)(struct pctx *c, const struct json_value *v, void *elem, const void *arg),
			const void *arg)
{
	char *a = calloc(v->u.array.n ? v->u.array.n : 1, size);

	if (!a) {
		c->err = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < v->u.array.n; i++) {
		size_t s = json_path_push_index(&c->ck.path, i);

		item(c, v->u.array.items[i], a + i * size, arg);
		(*ret_n)++;
		json_path_pop(&c->ck.path, s);
	}
	return a;
}

/* ------------------------------------------------------------ labels and selectors */

/* ValidateLabels(labels, path): key and value errors both at @path.  @v
 * is an object (the engine checked). */
static void parse_labels(struct pctx *c, const struct json_value *v, struct plabels *out)
{
	out->v = calloc(v->u.object.n ? v->u.object.n : 1, sizeof(*out->v));
	if (!out->v) {
		c->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < v->u.object.n; i++) {
		const struct json_member *m = &v->u.object.members[i];
		size_t s = json_path_push_key(&c->ck.path, m->key);
		const char *val = get_str(c, m->value);
		struct str_ud u = { c, m->key };

		json_path_pop(&c->ck.path, s);
		if (!val)
			continue;
		names_label_key_check(m->key, invalid_str_cb, &u);
		u.value = val;
		names_label_value_check(val, invalid_str_cb, &u);
		out->v[out->n].key = xstrdup(c, m->key);
		out->v[out->n].value = xstrdup(c, val);
		out->n++;
	}
	(void)plabels_sort(out);
}

static int rd_labels(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	(void)arg;
	parse_labels((struct pctx *)ck, v, dst);
	return 0;
}

/* requirement.values: the strings, in order (those that decode). */
static int rd_values(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct pctx *c = (struct pctx *)ck;
	struct preq *r = *(struct preq **)dst;

	(void)arg;
	r->values = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(char *));
	if (!r->values) {
		c->err = -ENOMEM;
		return 0;
	}
	for (size_t i = 0; i < v->u.array.n; i++) {
		size_t s = json_path_push_index(&c->ck.path, i);
		const char *sv = get_str(c, v->u.array.items[i]);

		if (sv)
			r->values[r->n_values++] = xstrdup(c, sv);
		json_path_pop(&c->ck.path, s);
	}
	return 0;
}

struct req_in {
	const char *key, *op;
	struct preq *r;
};

static const struct json_field req_fields[] = {
	{ "key", JSON_STRING, false, rd_str, offsetof(struct req_in, key), NULL },
	{ "operator", JSON_STRING, false, rd_str, offsetof(struct req_in, op), NULL },
	{ "values", JSON_ARRAY, false, rd_values, offsetof(struct req_in, r), NULL },
};

static void parse_requirement(struct pctx *c, const struct json_value *v, void *elem, const void *arg)
{
	struct preq *r = elem;
	struct req_in in = { "", "", r };
	const char *key, *ops;
	size_t s;

	(void)arg;
	if (read_obj(c, v, req_fields, ARRAY_SIZE(req_fields), &in) != 0)
		return;
	key = in.key;
	ops = in.op;
	r->key = xstrdup(c, key);
	/* ValidateLabelSelectorRequirement */
	if (strcmp(ops, "In") == 0 || strcmp(ops, "NotIn") == 0) {
		r->op = ops[0] == 'I' ? SEL_IN : SEL_NOT_IN;
		if (r->n_values == 0) {
			s = json_path_push_key(&c->ck.path, "values");
			required(c, "must be specified when `operator` is 'In' or 'NotIn'");
			json_path_pop(&c->ck.path, s);
		}
	} else if (strcmp(ops, "Exists") == 0 || strcmp(ops, "DoesNotExist") == 0) {
		r->op = ops[0] == 'E' ? SEL_EXISTS : SEL_DOES_NOT_EXIST;
		if (r->n_values > 0) {
			s = json_path_push_key(&c->ck.path, "values");
			forbidden(c, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
			json_path_pop(&c->ck.path, s);
		}
	} else {
		s = json_path_push_key(&c->ck.path, "operator");
		invalid_str(c, ops, "not a valid selector operator");
		json_path_pop(&c->ck.path, s);
	}
	s = json_path_push_key(&c->ck.path, "key");
	{
		struct str_ud u = { c, key };

		names_label_key_check(key, invalid_str_cb, &u);
	}
	json_path_pop(&c->ck.path, s);
	s = json_path_push_key(&c->ck.path, "values");
	for (size_t i = 0; i < r->n_values; i++) {
		size_t s2 = json_path_push_index(&c->ck.path, i);
		struct str_ud u = { c, r->values[i] };

		if (r->values[i])
			names_label_value_check(r->values[i], invalid_str_cb, &u);
		json_path_pop(&c->ck.path, s2);
	}
	json_path_pop(&c->ck.path, s);
}

static int rd_requirements(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct psel *sel = dst;

	(void)arg;
	/* a requirement that could not be decoded is still freed */
	sel->reqs = read_items((struct pctx *)ck, v, sizeof(*sel->reqs), &sel->n_reqs, parse_requirement, NULL);
	return 0;
}

/* ValidateLabelSelector */
static const struct json_field selector_fields[] = {
	{ "matchLabels", JSON_OBJECT, false, rd_labels, offsetof(struct psel, match), NULL },
	{ "matchExpressions", JSON_ARRAY, false, rd_requirements, 0, NULL },
};

static int rd_selector(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	(void)arg;
	return read_obj((struct pctx *)ck, v, selector_fields, ARRAY_SIZE(selector_fields), dst) == -ENOMEM ?
		       -ENOMEM : 0;
}

/* A selector of a peer: allocated into *dst (struct psel **). */
static int rd_peer_selector(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct psel **sel = dst;

	*sel = calloc(1, sizeof(**sel));
	if (!*sel) {
		((struct pctx *)ck)->err = -ENOMEM;
		return -ENOMEM;
	}
	return rd_selector(ck, v, *sel, arg);
}

/* ------------------------------------------------------------ ports */

struct port_in {
	const char *proto, *name;
	int64_t num, end;
	bool has_num, has_end;
};

static bool get_int32(struct pctx *c, const struct json_value *v, int64_t *ret)
{
	if (v->type != JSON_NUMBER) {
		bad_type(c, v, "integer");
		return false;
	}
	if (json_get_int64(v, ret) < 0 || *ret < INT32_MIN || *ret > INT32_MAX) {
		add_cause(c, true, FLOWSDN_POLICY_CAUSE_TYPE, here(c),
			  "Invalid value: %s: must be a 32-bit integer", v->u.number.text);
		return false;
	}
	return true;
}

/* port: an IntOrString (the type is the reader's to check). */
static int rd_port(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct pctx *c = (struct pctx *)ck;
	struct port_in *in = dst;

	(void)arg;
	if (v->type == JSON_STRING)
		in->name = get_str(c, v);
	else if (v->type == JSON_NUMBER)
		in->has_num = get_int32(c, v, &in->num);
	else
		bad_type(c, v, "integer or string");
	return 0;
}

static int rd_end_port(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct port_in *in = dst;

	(void)arg;
	in->has_end = get_int32((struct pctx *)ck, v, &in->end);
	return 0;
}

static const struct json_field port_fields[] = {
	{ "protocol", JSON_STRING, false, rd_str, offsetof(struct port_in, proto), NULL },
	{ "port", JSON_NULL, false, rd_port, 0, NULL },
	{ "endPort", JSON_NUMBER, false, rd_end_port, 0, NULL },
};

static void port_num_check(struct pctx *c, int64_t n, const char *child)
{
	size_t s = json_path_push_key(&c->ck.path, child);

	if (n < 1 || n > 65535)
		invalid_int(c, n, "must be between 1 and 65535, inclusive");
	json_path_pop(&c->ck.path, s);
}

/* ValidateNetworkPolicyPort, then SetDefaults_NetworkPolicyPort. */
static void parse_port(struct pctx *c, const struct json_value *v, void *elem, const void *arg)
{
	struct pport *p = elem;
	struct port_in in = { .proto = "TCP" };
	const char *protos, *portname;
	int64_t portnum, endnum;
	bool has_port, has_end;
	size_t s;

	(void)arg;
	if (read_obj(c, v, port_fields, ARRAY_SIZE(port_fields), &in) != 0)
		return;
	protos = in.proto;
	portname = in.name;
	portnum = in.num;
	endnum = in.end;
	has_port = in.has_num || in.name;
	has_end = in.has_end;

	if (strcmp(protos, "TCP") == 0) {
		p->proto = PROTO_TCP;
	} else if (strcmp(protos, "UDP") == 0) {
		p->proto = PROTO_UDP;
	} else if (strcmp(protos, "SCTP") == 0) {
		p->proto = PROTO_SCTP;
	} else {
		s = json_path_push_key(&c->ck.path, "protocol");
		not_supported(c, protos, "\"TCP\", \"UDP\", \"SCTP\"");
		json_path_pop(&c->ck.path, s);
	}
	if (has_port && !portname) {
		port_num_check(c, portnum, "port");
		if (has_end) {
			if (endnum < portnum) {
				s = json_path_push_key(&c->ck.path, "endPort");
				invalid_int(c, endnum, "must be greater than or equal to `port`");
				json_path_pop(&c->ck.path, s);
			}
			port_num_check(c, endnum, "endPort");
		}
		p->has_port = true;
		p->port = (uint16_t)(portnum >= 1 && portnum <= 65535 ? portnum : 0);
		p->end = (uint16_t)(has_end && endnum >= 1 && endnum <= 65535 ? endnum : p->port);
	} else if (has_port) {
		struct str_ud u = { c, portname };

		if (has_end) {
			s = json_path_push_key(&c->ck.path, "endPort");
			invalid_int(c, endnum, "may not be specified when `port` is non-numeric");
			json_path_pop(&c->ck.path, s);
		}
		s = json_path_push_key(&c->ck.path, "port");
		names_port_name_check(portname, invalid_str_cb, &u);
		json_path_pop(&c->ck.path, s);
		p->has_port = true;
		p->name = xstrdup(c, portname);
	} else if (has_end) {
		s = json_path_push_key(&c->ck.path, "endPort");
		invalid_int(c, endnum, "may not be specified when `port` is not specified");
		json_path_pop(&c->ck.path, s);
	}
}

/* ------------------------------------------------------------ ipBlock */

/* ------------------------------------------------------------ ipBlock */

/* apimachinery's parseCIDR with strict validation (IsValidCIDRForLegacyField):
 * returns true when the value is usable (maybe with errors reported, as
 * for host bits, where ParseCIDRSloppy still succeeds), with the masked
 * prefix in *ret. */
static bool check_cidr(struct pctx *c, const char *text, struct flowsdn_prefix *ret)
{
	static const char generic[] = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
	FLOWSDN_OPTS(flowsdn_prefix_opts, norm, .flags = FLOWSDN_PREFIX_NORMALIZE);
	struct flowsdn_prefix p;
	struct flowsdn_addr v4;
	const char *slash = strchr(text, '/');
	int r;

	r = flowsdn_prefix_parse(text, strlen(text), NULL, &p);
	if (r == 0) {
		if (p.addr.family == FLOWSDN_AF_INET6 && flowsdn_addr_unmap_v4(&p.addr, &v4) == 0) {
			invalid_str(c, text, "must not have an IPv4-mapped IPv6 address");
			return false;
		}
		*ret = p;
		return true;
	}
	if (r == -FLOWSDN_E_PREFIX_HOST_BITS && flowsdn_prefix_parse(text, strlen(text), &norm, &p) == 0) {
		invalid_str(c, text, "must not have bits set beyond the prefix length");
		*ret = p;
		return true;
	}
	if (r == -FLOWSDN_E_ADDR_LEADING_ZERO) {
		invalid_str(c, text, "must not have leading 0s in IP or prefix length");
		return false;
	}
	/* a prefix length with leading zeros ("/08") that is otherwise valid */
	if (r == -FLOWSDN_E_PREFIX_LENGTH && slash && slash[1] == '0' && slash[2] != '\0') {
		const char *d = slash + 1;
		unsigned long len = 0;
		bool digits = true;
		struct flowsdn_addr a;

		for (; *d; d++) {
			if (*d < '0' || *d > '9' || len > 1000)
				digits = false;
			else
				len = len * 10 + (unsigned long)(*d - '0');
		}
		if (digits && flowsdn_addr_parse(text, (size_t)(slash - text), &a) == 0 &&
		    len <= flowsdn_addr_bits(&a)) {
			invalid_str(c, text, "must not have leading 0s in IP or prefix length");
			return false;
		}
	}
	invalid_str(c, text, generic);
	return false;
}


/* ValidateIPBlock.  cidr and except are checked here (their types too):
 * except is decoded only once cidr is usable, as the API server's
 * validation walks it. */
struct ipblock_in {
	const struct json_value *cidr, *except;
};

static const struct json_field ipblock_fields[] = {
	{ "cidr", JSON_NULL, false, rd_ref, offsetof(struct ipblock_in, cidr), NULL },
	{ "except", JSON_NULL, false, rd_ref, offsetof(struct ipblock_in, except), NULL },
};

static int rd_ipblock(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct pctx *c = (struct pctx *)ck;
	struct ppeer *peer = dst;
	struct ipblock_in in = { 0 };
	const struct json_value *exc;
	const char *cidrs = "";
	bool cidr_ok = false;
	size_t s;

	(void)arg;
	peer->kind = PEER_IPBLOCK;
	if (read_obj(c, v, ipblock_fields, ARRAY_SIZE(ipblock_fields), &in) == -ENOMEM)
		return -ENOMEM;
	exc = in.except;
	if (in.cidr) {
		s = json_path_push_key(&c->ck.path, "cidr");
		cidrs = get_str(c, in.cidr);
		json_path_pop(&c->ck.path, s);
		if (!cidrs)
			return 0;
	}
	if (exc && exc->type != JSON_ARRAY) {
		s = json_path_push_key(&c->ck.path, "except");
		bad_type(c, exc, "array");
		json_path_pop(&c->ck.path, s);
		return 0;
	}
	s = json_path_push_key(&c->ck.path, "cidr");
	if (*cidrs == '\0') {
		required(c, "");
		json_path_pop(&c->ck.path, s);
		return 0;
	}
	cidr_ok = check_cidr(c, cidrs, &peer->cidr);
	json_path_pop(&c->ck.path, s);
	if (!exc)
		return 0;
	peer->except = calloc(exc->u.array.n ? exc->u.array.n : 1, sizeof(*peer->except));
	if (!peer->except) {
		c->err = -ENOMEM;
		return 0;
	}
	s = json_path_push_key(&c->ck.path, "except");
	for (size_t i = 0; i < exc->u.array.n; i++) {
		size_t s2 = json_path_push_index(&c->ck.path, i);
		const char *es = get_str(c, exc->u.array.items[i]);
		struct flowsdn_prefix ep;

		if (es && check_cidr(c, es, &ep)) {
			if (cidr_ok && (ep.addr.family != peer->cidr.addr.family ||
					!flowsdn_prefix_contains_addr(&peer->cidr, &ep.addr) ||
					peer->cidr.len >= ep.len))
				invalid_str(c, es, "must be a strict subset of `cidr`");
			peer->except[peer->n_except++] = ep;
		}
		json_path_pop(&c->ck.path, s2);
	}
	json_path_pop(&c->ck.path, s);
	return 0;
}

/* ValidateNetworkPolicyPeer */
static const struct json_field peer_fields[] = {
	{ "podSelector", JSON_OBJECT, false, rd_peer_selector, offsetof(struct ppeer, pod), NULL },
	{ "namespaceSelector", JSON_OBJECT, false, rd_peer_selector, offsetof(struct ppeer, ns), NULL },
	{ "ipBlock", JSON_OBJECT, false, rd_ipblock, 0, NULL },
};

static void parse_peer(struct pctx *c, const struct json_value *v, void *elem, const void *arg)
{
	struct ppeer *peer = elem;
	int n;

	(void)arg;
	peer->kind = PEER_SELECTOR;
	if (read_obj(c, v, peer_fields, ARRAY_SIZE(peer_fields), peer) == -ENOMEM)
		return;
	n = !!peer->pod + !!peer->ns + (peer->kind == PEER_IPBLOCK);
	if (n == 0)
		required(c, "must specify a peer");
	else if (n > 1 && peer->kind == PEER_IPBLOCK)
		forbidden(c, "may not specify both ipBlock and another peer");
}

static int rd_ports(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct prule *rule = dst;

	(void)arg;
	rule->ports = read_items((struct pctx *)ck, v, sizeof(*rule->ports), &rule->n_ports, parse_port, NULL);
	return 0;
}

static int rd_peers(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct prule *rule = dst;

	(void)arg;
	rule->peers = read_items((struct pctx *)ck, v, sizeof(*rule->peers), &rule->n_peers, parse_peer, NULL);
	return 0;
}

/* NetworkPolicyIngressRule and NetworkPolicyEgressRule (ports first, as
 * in the Go structs). */
static const struct json_field rule_fields[2][2] = {
	[FLOWSDN_POLICY_INGRESS] = {
		{ "ports", JSON_ARRAY, false, rd_ports, 0, NULL },
		{ "from", JSON_ARRAY, false, rd_peers, 0, NULL },
	},
	[FLOWSDN_POLICY_EGRESS] = {
		{ "ports", JSON_ARRAY, false, rd_ports, 0, NULL },
		{ "to", JSON_ARRAY, false, rd_peers, 0, NULL },
	},
};

static void parse_rule(struct pctx *c, const struct json_value *v, void *elem, const void *arg)
{
	const int *dir = arg;

	(void)read_obj(c, v, rule_fields[*dir], ARRAY_SIZE(rule_fields[*dir]), elem);
}

static const int dir_ingress = FLOWSDN_POLICY_INGRESS, dir_egress = FLOWSDN_POLICY_EGRESS;

/* spec.ingress / spec.egress (arg: the direction) into the policy. */
static int rd_rules(struct check_ctx *ck, const struct json_value *v, void *dst, const void *arg)
{
	struct flowsdn_policy *p = dst;
	const int *dir = arg;

	p->rules[*dir] = read_items((struct pctx *)ck, v, sizeof(struct prule), &p->n_rules[*dir], parse_rule, dir);
	return 0;
}

/* ValidateNetworkPolicySpec's policyTypes part; sets p->types (with the
 * defaulting of SetDefaults_NetworkPolicySpec when empty).  @v: the array,
 * NULL when not given. */
static void parse_policy_types(struct pctx *c, const struct json_value *v, struct flowsdn_policy *p)
{
	size_t s;

	p->types = 0;
	if (v) {
		s = json_path_push_key(&c->ck.path, "policyTypes");
		if (v->u.array.n > 2) {
			char buf[400];
			size_t o = 0;

			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "[");
			for (size_t i = 0; i < v->u.array.n && o < sizeof(buf); i++) {
				const struct json_value *it = v->u.array.items[i];

				if (it->type != JSON_STRING) {
					size_t s2 = json_path_push_index(&c->ck.path, i);

					bad_type(c, it, "string");
					json_path_pop(&c->ck.path, s2);
					continue;
				}
				o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s", i ? "," : "");
				if (o < sizeof(buf))
					goquote(buf + o, sizeof(buf) - o, it->u.string.ptr);
				o = strlen(buf);
			}
			if (o < sizeof(buf))
				snprintf(buf + o, sizeof(buf) - o, "]");
			add_cause(c, false, FLOWSDN_POLICY_CAUSE_INVALID, here(c),
				  "Invalid value: %s: may not specify more than two policyTypes", buf);
		} else {
			for (size_t i = 0; i < v->u.array.n; i++) {
				size_t s2 = json_path_push_index(&c->ck.path, i);
				const char *t = get_str(c, v->u.array.items[i]);

				if (t && strcmp(t, "Ingress") == 0)
					p->types |= 1u << FLOWSDN_POLICY_INGRESS;
				else if (t && strcmp(t, "Egress") == 0)
					p->types |= 1u << FLOWSDN_POLICY_EGRESS;
				else if (t)
					not_supported(c, t, "\"Ingress\", \"Egress\"");
				json_path_pop(&c->ck.path, s2);
			}
		}
		json_path_pop(&c->ck.path, s);
	}
	if (!v || v->u.array.n == 0) {
		p->types = 1u << FLOWSDN_POLICY_INGRESS;
		if (p->n_rules[FLOWSDN_POLICY_EGRESS] > 0)
			p->types |= 1u << FLOWSDN_POLICY_EGRESS;
	}
}

/* NetworkPolicySpec, read into the policy. */
static const struct json_field spec_fields[] = {
	{ "podSelector", JSON_OBJECT, false, rd_selector, offsetof(struct flowsdn_policy, podsel), NULL },
	{ "ingress", JSON_ARRAY, false, rd_rules, 0, &dir_ingress },
	{ "egress", JSON_ARRAY, false, rd_rules, 0, &dir_egress },
	{ "policyTypes", JSON_ARRAY, false, NULL, 0, NULL },
};

static void parse_spec(struct pctx *c, const struct json_value *spec, struct flowsdn_policy *p)
{
	size_t s = json_path_push_key(&c->ck.path, "spec");
	const struct json_value *types;

	if (read_obj(c, spec, spec_fields, ARRAY_SIZE(spec_fields), p) != -ENOMEM && spec->type == JSON_OBJECT) {
		types = json_get(spec, "policyTypes");
		parse_policy_types(c, json_is(types, JSON_ARRAY) ? types : NULL, p);
	}
	json_path_pop(&c->ck.path, s);
}

/* ObjectMeta: the fields the API server takes (name, namespace and labels
 * are read, the rest accepted as they are). */
struct meta_in {
	const char *name, *ns;
	const struct json_value *labels;
};

static const struct json_field meta_fields[] = {
	{ "name", JSON_STRING, false, rd_str, offsetof(struct meta_in, name), NULL },
	{ "namespace", JSON_STRING, false, rd_str, offsetof(struct meta_in, ns), NULL },
	{ "labels", JSON_OBJECT, false, rd_ref, offsetof(struct meta_in, labels), NULL },
	{ "annotations", JSON_NULL, false, NULL, 0, NULL },
	{ "creationTimestamp", JSON_NULL, false, NULL, 0, NULL },
	{ "deletionGracePeriodSeconds", JSON_NULL, false, NULL, 0, NULL },
	{ "deletionTimestamp", JSON_NULL, false, NULL, 0, NULL },
	{ "finalizers", JSON_NULL, false, NULL, 0, NULL },
	{ "generateName", JSON_NULL, false, NULL, 0, NULL },
	{ "generation", JSON_NULL, false, NULL, 0, NULL },
	{ "managedFields", JSON_NULL, false, NULL, 0, NULL },
	{ "ownerReferences", JSON_NULL, false, NULL, 0, NULL },
	{ "resourceVersion", JSON_NULL, false, NULL, 0, NULL },
	{ "selfLink", JSON_NULL, false, NULL, 0, NULL },
	{ "uid", JSON_NULL, false, NULL, 0, NULL },
};

/* ValidateObjectMeta (the parts that matter here: name, namespace, labels).
 * @meta: NULL when absent. */
static void parse_metadata(struct pctx *c, const struct json_value *meta, const char *default_ns,
			   struct flowsdn_policy *p, struct diag *diag)
{
	struct meta_in in = { .name = "" };
	const char *names, *nss;
	size_t s = json_path_push_key(&c->ck.path, "metadata");
	struct plabels l = { 0 };

	if (meta && read_obj(c, meta, meta_fields, ARRAY_SIZE(meta_fields), &in) == -ENOMEM) {
		json_path_pop(&c->ck.path, s);
		return;
	}
	names = in.name;
	nss = in.ns ? in.ns : json_is(json_get(meta, "namespace"), JSON_STRING) ? "" : default_ns;
	if (names) {
		size_t s2 = json_path_push_key(&c->ck.path, "name");
		struct str_ud u = { c, names };

		diag_set_subject(diag, names);
		if (*names == '\0')
			required(c, "name or generateName is required");
		else
			names_dns_subdomain_check(names, NULL, invalid_str_cb, &u);
		json_path_pop(&c->ck.path, s2);
		p->name = xstrdup(c, names);
	}
	{
		size_t s2 = json_path_push_key(&c->ck.path, "namespace");

		if (!nss || *nss == '\0') {
			required(c, "");
		} else {
			struct str_ud u = { c, nss };

			names_dns_label_check(nss, invalid_str_cb, &u);
			p->ns = xstrdup(c, nss);
		}
		json_path_pop(&c->ck.path, s2);
	}
	if (in.labels) {
		size_t s2 = json_path_push_key(&c->ck.path, "labels");

		parse_labels(c, in.labels, &l);
		plabels_free(&l);
		json_path_pop(&c->ck.path, s2);
	}
	json_path_pop(&c->ck.path, s);
}

/* ------------------------------------------------------------ the object */

void ppolicy_free_rules(struct flowsdn_policy *p)
{
	for (int d = 0; d < 2; d++) {
		for (size_t i = 0; i < p->n_rules[d]; i++) {
			struct prule *r = &p->rules[d][i];

			for (size_t j = 0; j < r->n_peers; j++) {
				psel_free(r->peers[j].pod);
				free(r->peers[j].pod);
				psel_free(r->peers[j].ns);
				free(r->peers[j].ns);
				free(r->peers[j].except);
				free(r->peers[j].cache_ids);
				free(r->peers[j].cache_idents);
			}
			free(r->peers);
			for (size_t j = 0; j < r->n_ports; j++)
				free(r->ports[j].name);
			free(r->ports);
		}
		free(p->rules[d]);
		p->rules[d] = NULL;
		p->n_rules[d] = 0;
	}
}

FLOWSDN_API void flowsdn_policy_free(struct flowsdn_policy *policy)
{
	if (!policy)
		return;
	ppolicy_free_rules(policy);
	psel_free(&policy->podsel);
	free(policy->name);
	free(policy->ns);
	free(policy->key);
	free(policy);
}

/* The @n causes found (at most MAX_CAUSES of them stored) into @d, which
 * keeps FLOWSDN_POLICY_MAX_CAUSES and counts the rest. */
static void fill_diag(struct diag *d, const struct cause *cs, size_t n)
{
	size_t stored = n < MAX_CAUSES ? n : MAX_CAUSES;

	for (size_t i = 0; i < stored; i++)
		diag_add_text(d, DIAG_ERROR, cs[i].field, flowsdn_policy_cause_reason(cs[i].type), NULL, "%s",
			      cs[i].message);
	diag_add_dropped(d, DIAG_ERROR, n - stored);
}

/* NetworkPolicy: metadata and spec are read after apiVersion and kind,
 * in that order, also when absent (a missing name is reported). */
struct root_in {
	const struct json_value *meta, *spec;
};

static const struct json_field root_fields[] = {
	{ "apiVersion", JSON_STRING, false, rd_fixed, 0, "networking.k8s.io/v1" },
	{ "kind", JSON_STRING, false, rd_fixed, 0, "NetworkPolicy" },
	{ "metadata", JSON_NULL, false, rd_ref, offsetof(struct root_in, meta), NULL },
	{ "spec", JSON_NULL, false, rd_ref, offsetof(struct root_in, spec), NULL },
};

FLOWSDN_API int flowsdn_policy_parse(const char *json, size_t len,
				     const struct flowsdn_policy_parse_opts *opts,
				     struct flowsdn_policy **ret_policy,
				     struct flowsdn_diag *public_diag)
{
	struct diag *diag = flowsdn__diag(public_diag);
	struct json_value *root = NULL;
	struct json_error jerr;
	struct flowsdn_policy *p = NULL;
	struct pctx *c = NULL;
	struct root_in in = { 0 };
	int tier, r;

	if (!json || !ret_policy || !OPTS_VALID(opts, flowsdn_policy_parse_opts))
		return -EINVAL;
	tier = OPTS_GET(opts, tier, 0);
	if (tier == 0)
		tier = FLOWSDN_POLICY_TIER_ALLOW;
	if (tier < FLOWSDN_POLICY_TIER_ALLOW || tier > FLOWSDN_POLICY_TIER_PROTECT)
		return -EINVAL;
	diag_begin(diag, FLOWSDN_POLICY_MAX_CAUSES);

	r = json_parse(json, len, NULL, &root, &jerr);
	if (r == -EBADMSG) {
		diag_add_json_error(diag, &jerr);
		return diag_oom(diag) ? -ENOMEM : -FLOWSDN_E_POLICY_JSON;
	}
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	p = calloc(1, sizeof(*p));
	if (!c || !p) {
		r = -ENOMEM;
		goto out;
	}
	p->tier = tier;
	/* the causes are kept here, in the API server's two lists */
	check_ctx_init(&c->ck, NULL);
	c->ck.style = &k8s_style;
	if (read_obj(c, root, root_fields, ARRAY_SIZE(root_fields), &in) == -ENOMEM || root->type != JSON_OBJECT)
		goto finish;
	parse_metadata(c, in.meta, OPTS_GET(opts, default_namespace, NULL), p, diag);
	if (in.spec)
		parse_spec(c, in.spec, p);
	else
		p->types = 1u << FLOWSDN_POLICY_INGRESS;
finish:
	if (c->err) {
		r = c->err;
		goto out;
	}
	if (c->n_decode || c->n_valid) {
		if (c->n_decode)
			fill_diag(diag, c->decode, c->n_decode);
		else
			fill_diag(diag, c->valid, c->n_valid);
		r = diag_oom(diag) ? -ENOMEM : -FLOWSDN_E_POLICY_INVALID;
		goto out;
	}
	if (asprintf(&p->key, "%s/%s", p->ns, p->name) < 0) {
		p->key = NULL;
		r = -ENOMEM;
		goto out;
	}
	*ret_policy = TAKE_PTR(p);
	r = 0;
out:
	flowsdn_policy_free(p);
	free(c);
	json_free(root);
	return r;
}

FLOWSDN_API const char *flowsdn_policy_name(const struct flowsdn_policy *policy)
{
	return policy ? policy->name : NULL;
}

FLOWSDN_API const char *flowsdn_policy_namespace(const struct flowsdn_policy *policy)
{
	return policy ? policy->ns : NULL;
}

FLOWSDN_API unsigned int flowsdn_policy_types(const struct flowsdn_policy *policy)
{
	return policy ? policy->types : 0;
}

FLOWSDN_API int flowsdn_policy_tier(const struct flowsdn_policy *policy)
{
	return policy ? policy->tier : -EINVAL;
}

FLOWSDN_API const char *flowsdn_policy_cause_reason(enum flowsdn_policy_cause_type type)
{
	switch (type) {
	case FLOWSDN_POLICY_CAUSE_INVALID:
		return "FieldValueInvalid";
	case FLOWSDN_POLICY_CAUSE_REQUIRED:
		return "FieldValueRequired";
	case FLOWSDN_POLICY_CAUSE_NOT_SUPPORTED:
		return "FieldValueNotSupported";
	case FLOWSDN_POLICY_CAUSE_FORBIDDEN:
		return "FieldValueForbidden";
	case FLOWSDN_POLICY_CAUSE_TYPE:
		return "FieldValueTypeInvalid";
	case FLOWSDN_POLICY_CAUSE_UNKNOWN_FIELD:
		return "FieldValueUnknown";
	}
	return "";
}

FLOWSDN_API int flowsdn_policy_diag_format(const struct flowsdn_diag *public_diag, char *buf, size_t size)
{
	const struct diag *diag = flowsdn__diag((struct flowsdn_diag *)public_diag);
	const struct diag_entry *first = diag_get(diag, 0);
	size_t n = diag_count(diag), o = 0;
	char tmp[1];

	if (!diag || (!buf && size))
		return -EINVAL;
	if (!buf) {
		buf = tmp;
		size = 0;
	}
#define PUT(...)                                                                        \
	do {                                                                            \
		int _n = snprintf(o < size ? buf + o : NULL, o < size ? size - o : 0, __VA_ARGS__); \
		if (_n > 0)                                                             \
			o += (size_t)_n;                                                \
	} while (0)
	if (n == 0 || first->line) {
		PUT("invalid JSON at line %u, column %u: %s", first ? first->line : 0, first ? first->column : 0,
		    first ? first->message : "");
		return (int)o;
	}
	PUT("NetworkPolicy.networking.k8s.io \"%s\" is invalid: %s", diag_subject(diag), n > 1 ? "[" : "");
	for (size_t i = 0; i < n; i++)
		PUT("%s%s: %s", i ? ", " : "", diag_get(diag, i)->path, diag_get(diag, i)->message);
	if (diag_dropped(diag))
		PUT(", and %zu more", diag_dropped(diag));
	PUT("%s", n > 1 ? "]" : "");
#undef PUT
	return (int)o;
}
