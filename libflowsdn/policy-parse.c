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

struct pctx {
	struct json_path path;
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
	return json_path_str(&c->path);
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

/* Reports every member of @obj not in @known (NULL-terminated). */
static void unknown_fields(struct pctx *c, const struct json_value *obj, const char *const *known)
{
	for (size_t i = 0; i < obj->u.object.n; i++) {
		const char *k = obj->u.object.members[i].key;
		bool ok = false;

		for (size_t j = 0; known[j]; j++)
			if (strcmp(k, known[j]) == 0)
				ok = true;
		if (!ok) {
			size_t s = json_path_push_key(&c->path, k);

			add_cause(c, true, FLOWSDN_POLICY_CAUSE_UNKNOWN_FIELD, here(c),
				  "unknown field \"%s\"", here(c));
			json_path_pop(&c->path, s);
		}
	}
}

/* Member @key of @obj that is not null, or NULL. */
static const struct json_value *member(const struct json_value *obj, const char *key)
{
	const struct json_value *v = json_get(obj, key);

	return v && v->type != JSON_NULL ? v : NULL;
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

/* ------------------------------------------------------------ labels and selectors */

/* ValidateLabels(labels, path): key and value errors both at @path. */
static void parse_labels(struct pctx *c, const struct json_value *v, struct plabels *out)
{
	if (v->type != JSON_OBJECT) {
		bad_type(c, v, "object");
		return;
	}
	out->v = calloc(v->u.object.n ? v->u.object.n : 1, sizeof(*out->v));
	if (!out->v) {
		c->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < v->u.object.n; i++) {
		const struct json_member *m = &v->u.object.members[i];
		size_t s = json_path_push_key(&c->path, m->key);
		const char *val = get_str(c, m->value);
		struct str_ud u = { c, m->key };

		json_path_pop(&c->path, s);
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

static void parse_requirement(struct pctx *c, const struct json_value *v, struct preq *r)
{
	static const char *const known[] = { "key", "operator", "values", NULL };
	const struct json_value *k, *op, *vals;
	const char *key = "", *ops = "";
	size_t s;

	if (v->type != JSON_OBJECT) {
		bad_type(c, v, "object");
		return;
	}
	unknown_fields(c, v, known);
	k = member(v, "key");
	op = member(v, "operator");
	vals = member(v, "values");
	if (k) {
		s = json_path_push_key(&c->path, "key");
		key = get_str(c, k);
		json_path_pop(&c->path, s);
	}
	if (op) {
		s = json_path_push_key(&c->path, "operator");
		ops = get_str(c, op);
		json_path_pop(&c->path, s);
	}
	if (vals) {
		s = json_path_push_key(&c->path, "values");
		if (vals->type != JSON_ARRAY) {
			bad_type(c, vals, "array");
			vals = NULL;
		} else {
			r->values = calloc(vals->u.array.n ? vals->u.array.n : 1, sizeof(char *));
			if (!r->values)
				c->err = -ENOMEM;
			for (size_t i = 0; r->values && i < vals->u.array.n; i++) {
				size_t s2 = json_path_push_index(&c->path, i);
				const char *sv = get_str(c, vals->u.array.items[i]);

				if (sv)
					r->values[r->n_values++] = xstrdup(c, sv);
				json_path_pop(&c->path, s2);
			}
		}
		json_path_pop(&c->path, s);
	}
	if (!key || !ops)
		return;
	r->key = xstrdup(c, key);
	/* ValidateLabelSelectorRequirement */
	if (strcmp(ops, "In") == 0 || strcmp(ops, "NotIn") == 0) {
		r->op = ops[0] == 'I' ? SEL_IN : SEL_NOT_IN;
		if (r->n_values == 0) {
			s = json_path_push_key(&c->path, "values");
			required(c, "must be specified when `operator` is 'In' or 'NotIn'");
			json_path_pop(&c->path, s);
		}
	} else if (strcmp(ops, "Exists") == 0 || strcmp(ops, "DoesNotExist") == 0) {
		r->op = ops[0] == 'E' ? SEL_EXISTS : SEL_DOES_NOT_EXIST;
		if (r->n_values > 0) {
			s = json_path_push_key(&c->path, "values");
			forbidden(c, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
			json_path_pop(&c->path, s);
		}
	} else {
		s = json_path_push_key(&c->path, "operator");
		invalid_str(c, ops, "not a valid selector operator");
		json_path_pop(&c->path, s);
	}
	s = json_path_push_key(&c->path, "key");
	{
		struct str_ud u = { c, key };

		names_label_key_check(key, invalid_str_cb, &u);
	}
	json_path_pop(&c->path, s);
	s = json_path_push_key(&c->path, "values");
	for (size_t i = 0; i < r->n_values; i++) {
		size_t s2 = json_path_push_index(&c->path, i);
		struct str_ud u = { c, r->values[i] };

		if (r->values[i])
			names_label_value_check(r->values[i], invalid_str_cb, &u);
		json_path_pop(&c->path, s2);
	}
	json_path_pop(&c->path, s);
}

/* ValidateLabelSelector */
static void parse_selector(struct pctx *c, const struct json_value *v, struct psel *sel)
{
	static const char *const known[] = { "matchLabels", "matchExpressions", NULL };
	const struct json_value *ml, *me;

	if (v->type != JSON_OBJECT) {
		bad_type(c, v, "object");
		return;
	}
	unknown_fields(c, v, known);
	ml = member(v, "matchLabels");
	me = member(v, "matchExpressions");
	if (ml) {
		size_t s = json_path_push_key(&c->path, "matchLabels");

		parse_labels(c, ml, &sel->match);
		json_path_pop(&c->path, s);
	}
	if (me) {
		size_t s = json_path_push_key(&c->path, "matchExpressions");

		if (me->type != JSON_ARRAY) {
			bad_type(c, me, "array");
		} else {
			sel->reqs = calloc(me->u.array.n ? me->u.array.n : 1, sizeof(*sel->reqs));
			if (!sel->reqs)
				c->err = -ENOMEM;
			for (size_t i = 0; sel->reqs && i < me->u.array.n; i++) {
				size_t s2 = json_path_push_index(&c->path, i);

				parse_requirement(c, me->u.array.items[i], &sel->reqs[sel->n_reqs]);
				/* a requirement that could not be decoded is still freed */
				sel->n_reqs++;
				json_path_pop(&c->path, s2);
			}
		}
		json_path_pop(&c->path, s);
	}
}

/* ------------------------------------------------------------ ports */

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

static void port_num_check(struct pctx *c, int64_t n, const char *child)
{
	size_t s = json_path_push_key(&c->path, child);

	if (n < 1 || n > 65535)
		invalid_int(c, n, "must be between 1 and 65535, inclusive");
	json_path_pop(&c->path, s);
}

/* ValidateNetworkPolicyPort, then SetDefaults_NetworkPolicyPort. */
static void parse_port(struct pctx *c, const struct json_value *v, struct pport *p)
{
	static const char *const known[] = { "protocol", "port", "endPort", NULL };
	const struct json_value *proto, *port, *endp;
	const char *protos = "TCP", *portname = NULL;
	int64_t portnum = 0, endnum = 0;
	bool has_port = false, has_end = false, decoded = true;
	size_t s;

	if (v->type != JSON_OBJECT) {
		bad_type(c, v, "object");
		return;
	}
	unknown_fields(c, v, known);
	proto = member(v, "protocol");
	port = member(v, "port");
	endp = member(v, "endPort");
	if (proto) {
		s = json_path_push_key(&c->path, "protocol");
		protos = get_str(c, proto);
		json_path_pop(&c->path, s);
		decoded = decoded && protos;
	}
	if (port) {
		s = json_path_push_key(&c->path, "port");
		if (port->type == JSON_STRING) {
			portname = get_str(c, port);
			has_port = portname != NULL;
		} else if (port->type == JSON_NUMBER) {
			has_port = get_int32(c, port, &portnum);
		} else {
			bad_type(c, port, "integer or string");
		}
		json_path_pop(&c->path, s);
		decoded = decoded && has_port;
	}
	if (endp) {
		s = json_path_push_key(&c->path, "endPort");
		has_end = get_int32(c, endp, &endnum);
		json_path_pop(&c->path, s);
		decoded = decoded && has_end;
	}
	if (!decoded)
		return;

	if (strcmp(protos, "TCP") == 0) {
		p->proto = PROTO_TCP;
	} else if (strcmp(protos, "UDP") == 0) {
		p->proto = PROTO_UDP;
	} else if (strcmp(protos, "SCTP") == 0) {
		p->proto = PROTO_SCTP;
	} else {
		s = json_path_push_key(&c->path, "protocol");
		not_supported(c, protos, "\"TCP\", \"UDP\", \"SCTP\"");
		json_path_pop(&c->path, s);
	}
	if (has_port && !portname) {
		port_num_check(c, portnum, "port");
		if (has_end) {
			if (endnum < portnum) {
				s = json_path_push_key(&c->path, "endPort");
				invalid_int(c, endnum, "must be greater than or equal to `port`");
				json_path_pop(&c->path, s);
			}
			port_num_check(c, endnum, "endPort");
		}
		p->has_port = true;
		p->port = (uint16_t)(portnum >= 1 && portnum <= 65535 ? portnum : 0);
		p->end = (uint16_t)(has_end && endnum >= 1 && endnum <= 65535 ? endnum : p->port);
	} else if (has_port) {
		struct str_ud u = { c, portname };

		if (has_end) {
			s = json_path_push_key(&c->path, "endPort");
			invalid_int(c, endnum, "may not be specified when `port` is non-numeric");
			json_path_pop(&c->path, s);
		}
		s = json_path_push_key(&c->path, "port");
		names_port_name_check(portname, invalid_str_cb, &u);
		json_path_pop(&c->path, s);
		p->has_port = true;
		p->name = xstrdup(c, portname);
	} else if (has_end) {
		s = json_path_push_key(&c->path, "endPort");
		invalid_int(c, endnum, "may not be specified when `port` is not specified");
		json_path_pop(&c->path, s);
	}
}

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

/* ValidateIPBlock */
static void parse_ipblock(struct pctx *c, const struct json_value *v, struct ppeer *peer)
{
	static const char *const known[] = { "cidr", "except", NULL };
	const struct json_value *cidr, *exc;
	const char *cidrs = "";
	bool cidr_ok = false;
	size_t s;

	if (v->type != JSON_OBJECT) {
		bad_type(c, v, "object");
		return;
	}
	unknown_fields(c, v, known);
	cidr = member(v, "cidr");
	exc = member(v, "except");
	if (cidr) {
		s = json_path_push_key(&c->path, "cidr");
		cidrs = get_str(c, cidr);
		json_path_pop(&c->path, s);
		if (!cidrs)
			return;
	}
	if (exc && exc->type != JSON_ARRAY) {
		s = json_path_push_key(&c->path, "except");
		bad_type(c, exc, "array");
		json_path_pop(&c->path, s);
		return;
	}
	s = json_path_push_key(&c->path, "cidr");
	if (*cidrs == '\0') {
		required(c, "");
		json_path_pop(&c->path, s);
		return;
	}
	cidr_ok = check_cidr(c, cidrs, &peer->cidr);
	json_path_pop(&c->path, s);
	if (!exc)
		return;
	peer->except = calloc(exc->u.array.n ? exc->u.array.n : 1, sizeof(*peer->except));
	if (!peer->except) {
		c->err = -ENOMEM;
		return;
	}
	s = json_path_push_key(&c->path, "except");
	for (size_t i = 0; i < exc->u.array.n; i++) {
		size_t s2 = json_path_push_index(&c->path, i);
		const char *es = get_str(c, exc->u.array.items[i]);
		struct flowsdn_prefix ep;

		if (es && check_cidr(c, es, &ep)) {
			if (cidr_ok && (ep.addr.family != peer->cidr.addr.family ||
					!flowsdn_prefix_contains_addr(&peer->cidr, &ep.addr) ||
					peer->cidr.len >= ep.len))
				invalid_str(c, es, "must be a strict subset of `cidr`");
			peer->except[peer->n_except++] = ep;
		}
		json_path_pop(&c->path, s2);
	}
	json_path_pop(&c->path, s);
}

/* ValidateNetworkPolicyPeer */
static void parse_peer(struct pctx *c, const struct json_value *v, struct ppeer *peer)
{
	static const char *const known[] = { "podSelector", "namespaceSelector", "ipBlock", NULL };
	const struct json_value *ps, *ns, *ib;
	int n = 0;
	size_t s;

	if (v->type != JSON_OBJECT) {
		bad_type(c, v, "object");
		return;
	}
	unknown_fields(c, v, known);
	ps = member(v, "podSelector");
	ns = member(v, "namespaceSelector");
	ib = member(v, "ipBlock");
	peer->kind = PEER_SELECTOR;
	if (ps) {
		n++;
		peer->pod = calloc(1, sizeof(*peer->pod));
		if (!peer->pod) {
			c->err = -ENOMEM;
			return;
		}
		s = json_path_push_key(&c->path, "podSelector");
		parse_selector(c, ps, peer->pod);
		json_path_pop(&c->path, s);
	}
	if (ns) {
		n++;
		peer->ns = calloc(1, sizeof(*peer->ns));
		if (!peer->ns) {
			c->err = -ENOMEM;
			return;
		}
		s = json_path_push_key(&c->path, "namespaceSelector");
		parse_selector(c, ns, peer->ns);
		json_path_pop(&c->path, s);
	}
	if (ib) {
		n++;
		peer->kind = PEER_IPBLOCK;
		s = json_path_push_key(&c->path, "ipBlock");
		parse_ipblock(c, ib, peer);
		json_path_pop(&c->path, s);
	}
	if (n == 0)
		required(c, "must specify a peer");
	else if (n > 1 && ib)
		forbidden(c, "may not specify both ipBlock and another peer");
}

static void parse_rule(struct pctx *c, const struct json_value *v, int dir, struct prule *rule)
{
	static const char *const known_in[] = { "from", "ports", NULL };
	static const char *const known_eg[] = { "to", "ports", NULL };
	const char *peers_key = dir == FLOWSDN_POLICY_INGRESS ? "from" : "to";
	const struct json_value *ports, *peers;
	size_t s;

	if (v->type != JSON_OBJECT) {
		bad_type(c, v, "object");
		return;
	}
	unknown_fields(c, v, dir == FLOWSDN_POLICY_INGRESS ? known_in : known_eg);
	ports = member(v, "ports");
	peers = member(v, peers_key);
	if (ports) {
		s = json_path_push_key(&c->path, "ports");
		if (ports->type != JSON_ARRAY) {
			bad_type(c, ports, "array");
		} else {
			rule->ports = calloc(ports->u.array.n ? ports->u.array.n : 1, sizeof(*rule->ports));
			if (!rule->ports)
				c->err = -ENOMEM;
			for (size_t i = 0; rule->ports && i < ports->u.array.n; i++) {
				size_t s2 = json_path_push_index(&c->path, i);

				parse_port(c, ports->u.array.items[i], &rule->ports[rule->n_ports++]);
				json_path_pop(&c->path, s2);
			}
		}
		json_path_pop(&c->path, s);
	}
	if (peers) {
		s = json_path_push_key(&c->path, peers_key);
		if (peers->type != JSON_ARRAY) {
			bad_type(c, peers, "array");
		} else {
			rule->peers = calloc(peers->u.array.n ? peers->u.array.n : 1, sizeof(*rule->peers));
			if (!rule->peers)
				c->err = -ENOMEM;
			for (size_t i = 0; rule->peers && i < peers->u.array.n; i++) {
				size_t s2 = json_path_push_index(&c->path, i);

				parse_peer(c, peers->u.array.items[i], &rule->peers[rule->n_peers++]);
				json_path_pop(&c->path, s2);
			}
		}
		json_path_pop(&c->path, s);
	}
}

static void parse_rules(struct pctx *c, const struct json_value *spec, int dir, struct flowsdn_policy *p)
{
	const char *key = dir == FLOWSDN_POLICY_INGRESS ? "ingress" : "egress";
	const struct json_value *v = member(spec, key);
	size_t s;

	if (!v)
		return;
	s = json_path_push_key(&c->path, key);
	if (v->type != JSON_ARRAY) {
		bad_type(c, v, "array");
	} else {
		p->rules[dir] = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(struct prule));
		if (!p->rules[dir])
			c->err = -ENOMEM;
		for (size_t i = 0; p->rules[dir] && i < v->u.array.n; i++) {
			size_t s2 = json_path_push_index(&c->path, i);

			parse_rule(c, v->u.array.items[i], dir, &p->rules[dir][p->n_rules[dir]++]);
			json_path_pop(&c->path, s2);
		}
	}
	json_path_pop(&c->path, s);
}

/* ValidateNetworkPolicySpec's policyTypes part; sets p->types (with the
 * defaulting of SetDefaults_NetworkPolicySpec when empty). */
static void parse_policy_types(struct pctx *c, const struct json_value *spec, struct flowsdn_policy *p)
{
	const struct json_value *v = member(spec, "policyTypes");
	size_t s;

	p->types = 0;
	if (v) {
		s = json_path_push_key(&c->path, "policyTypes");
		if (v->type != JSON_ARRAY) {
			bad_type(c, v, "array");
		} else if (v->u.array.n > 2) {
			char buf[400];
			size_t o = 0;

			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "[");
			for (size_t i = 0; i < v->u.array.n && o < sizeof(buf); i++) {
				const struct json_value *it = v->u.array.items[i];

				if (it->type != JSON_STRING) {
					size_t s2 = json_path_push_index(&c->path, i);

					bad_type(c, it, "string");
					json_path_pop(&c->path, s2);
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
				size_t s2 = json_path_push_index(&c->path, i);
				const char *t = get_str(c, v->u.array.items[i]);

				if (t && strcmp(t, "Ingress") == 0)
					p->types |= 1u << FLOWSDN_POLICY_INGRESS;
				else if (t && strcmp(t, "Egress") == 0)
					p->types |= 1u << FLOWSDN_POLICY_EGRESS;
				else if (t)
					not_supported(c, t, "\"Ingress\", \"Egress\"");
				json_path_pop(&c->path, s2);
			}
		}
		json_path_pop(&c->path, s);
	}
	if (!v || v->u.array.n == 0) {
		p->types = 1u << FLOWSDN_POLICY_INGRESS;
		if (p->n_rules[FLOWSDN_POLICY_EGRESS] > 0)
			p->types |= 1u << FLOWSDN_POLICY_EGRESS;
	}
}

/* ValidateObjectMeta (the parts that matter here: name, namespace, labels). */
static void parse_metadata(struct pctx *c, const struct json_value *meta, const char *default_ns,
			   struct flowsdn_policy *p, struct diag *diag)
{
	static const char *const known[] = {
		"annotations", "creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp",
		"finalizers", "generateName", "generation", "labels", "managedFields", "name",
		"namespace", "ownerReferences", "resourceVersion", "selfLink", "uid", NULL,
	};
	const struct json_value *name = NULL, *ns = NULL, *labels = NULL;
	const char *names = "", *nss = NULL;
	size_t s = json_path_push_key(&c->path, "metadata");
	struct plabels l = { 0 };

	if (meta && meta->type != JSON_OBJECT) {
		bad_type(c, meta, "object");
		meta = NULL;
	}
	if (meta) {
		unknown_fields(c, meta, known);
		name = member(meta, "name");
		ns = member(meta, "namespace");
		labels = member(meta, "labels");
	}
	if (name) {
		size_t s2 = json_path_push_key(&c->path, "name");

		names = get_str(c, name);
		json_path_pop(&c->path, s2);
	}
	if (ns) {
		size_t s2 = json_path_push_key(&c->path, "namespace");

		nss = get_str(c, ns);
		json_path_pop(&c->path, s2);
		if (!nss)
			nss = "";
	} else {
		nss = default_ns;
	}
	if (names) {
		size_t s2 = json_path_push_key(&c->path, "name");
		struct str_ud u = { c, names };

		diag_set_subject(diag, names);
		if (*names == '\0')
			required(c, "name or generateName is required");
		else
			names_dns_subdomain_check(names, NULL, invalid_str_cb, &u);
		json_path_pop(&c->path, s2);
		p->name = xstrdup(c, names);
	}
	{
		size_t s2 = json_path_push_key(&c->path, "namespace");

		if (!nss || *nss == '\0') {
			required(c, "");
		} else {
			struct str_ud u = { c, nss };

			names_dns_label_check(nss, invalid_str_cb, &u);
			p->ns = xstrdup(c, nss);
		}
		json_path_pop(&c->path, s2);
	}
	if (labels) {
		size_t s2 = json_path_push_key(&c->path, "labels");

		parse_labels(c, labels, &l);
		plabels_free(&l);
		json_path_pop(&c->path, s2);
	}
	json_path_pop(&c->path, s);
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

FLOWSDN_API int flowsdn_policy_parse(const char *json, size_t len,
				     const struct flowsdn_policy_parse_opts *opts,
				     struct flowsdn_policy **ret_policy,
				     struct flowsdn_diag *public_diag)
{
	struct diag *diag = flowsdn__diag(public_diag);
	static const char *const known[] = { "apiVersion", "kind", "metadata", "spec", NULL };
	static const char *const known_spec[] = { "podSelector", "ingress", "egress", "policyTypes", NULL };
	struct json_value *root = NULL;
	struct json_error jerr;
	struct flowsdn_policy *p = NULL;
	struct pctx *c = NULL;
	const struct json_value *v, *spec;
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
	json_path_init(&c->path);
	if (root->type != JSON_OBJECT) {
		bad_type(c, root, "object");
		goto finish;
	}
	unknown_fields(c, root, known);
	if ((v = member(root, "apiVersion"))) {
		size_t s = json_path_push_key(&c->path, "apiVersion");
		const char *av = get_str(c, v);

		if (av && strcmp(av, "networking.k8s.io/v1") != 0)
			not_supported(c, av, "\"networking.k8s.io/v1\"");
		json_path_pop(&c->path, s);
	}
	if ((v = member(root, "kind"))) {
		size_t s = json_path_push_key(&c->path, "kind");
		const char *k = get_str(c, v);

		if (k && strcmp(k, "NetworkPolicy") != 0)
			not_supported(c, k, "\"NetworkPolicy\"");
		json_path_pop(&c->path, s);
	}
	parse_metadata(c, member(root, "metadata"), OPTS_GET(opts, default_namespace, NULL), p, diag);
	spec = member(root, "spec");
	if (spec) {
		size_t s = json_path_push_key(&c->path, "spec");

		if (spec->type != JSON_OBJECT) {
			bad_type(c, spec, "object");
		} else {
			unknown_fields(c, spec, known_spec);
			if ((v = member(spec, "podSelector"))) {
				size_t s2 = json_path_push_key(&c->path, "podSelector");

				parse_selector(c, v, &p->podsel);
				json_path_pop(&c->path, s2);
			}
			parse_rules(c, spec, FLOWSDN_POLICY_INGRESS, p);
			parse_rules(c, spec, FLOWSDN_POLICY_EGRESS, p);
			parse_policy_types(c, spec, p);
		}
		json_path_pop(&c->path, s);
	} else {
		p->types = 1u << FLOWSDN_POLICY_INGRESS;
	}
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
