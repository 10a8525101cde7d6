/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's services (agent/services.h): reader and validator of the
 * C2 service object, the lowering into backend sets and frontends, the
 * table with its frontend index, publishing through the ops seam, and the
 * state file.
 *
 * Lowering.  A service has up to 8 backend sets, one per (protocol,
 * family, view): the cluster view holds every backend, the local view
 * only those on this node ("node": "local").  Set k of service svcId has
 * the datapath id svcId * 8 + k.  A ClusterIP frontend answers from the
 * view of internalTrafficPolicy; the other types from the view of
 * externalTrafficPolicy, and when the two policies differ they get an
 * INTERNAL-scope twin answering from the internal view (FLOWSDN_SVC_F_
 * TWO_SCOPES).  NodePort frontends have no address: they are one frontend
 * per configured node address.  Backend ids are per (backend, protocol),
 * allocated from a node-wide counter and kept across PUTs for the same
 * address and port, so that flows, affinity and Maglev slots of backends
 * that stay are not disturbed.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>
#include <flowsdn/datapath.h>
#include <flowsdn/maglev.h>

#include "agent-api.h"
#include "diag.h"
#include "journal.h"
#include "json.h"
#include "log.h"
#include "names.h"
#include "services.h"
#include "util.h"

#define SETS 8
#define STATE_VERSION 1
#define MAX_STATE (64u << 20)
#define MAX_SERVICES 65536
#define STATE_FILE "services.json"
#define JOURNAL_FILE "services.journal"
/* The journal is folded into a new snapshot once it outgrows both this
 * and the snapshot itself: replaying it costs at most a second read. */
#define JOURNAL_COMPACT_MIN (1u << 20)

/* apply_locked() */
enum {
	APPLY_PUBLISH = 1 << 0,  /* write the datapath now (else: at start, in one batch) */
	APPLY_SAVE = 1 << 1,     /* append the change to the journal */
	APPLY_KEEP_IDS = 1 << 2, /* a state record: its svcId and backend ids stand */
};

enum fe_type { FE_CLUSTER_IP, FE_EXTERNAL_IP, FE_LOAD_BALANCER, FE_NODE_PORT };
static const char *const fe_type_words[] = { "ClusterIP", "ExternalIP", "LoadBalancer", "NodePort", NULL };
static const char *const protocol_words[] = { "TCP", "UDP", NULL };
static const char *const state_words[] = { "active", "terminating", "quarantined", NULL };
static const char *const selection_words[] = { "random", "maglev", NULL };
static const char *const policy_words[] = { "Cluster", "Local", NULL };
static const char *const affinity_words[] = { "None", "ClientIP", NULL };

struct svc_frontend {
	unsigned int type;    /* enum fe_type */
	struct flowsdn_addr addr; /* family 0: absent (NodePort) */
	uint16_t port;
	unsigned int protocol; /* index in protocol_words */
};

struct svc_backend {
	struct flowsdn_addr addr;
	uint16_t port;
	uint32_t weight;
	unsigned int state;    /* FLOWSDN_BACKEND_* */
	char *node;            /* "local" or a node name */
	uint32_t ids[2];       /* backend id for TCP, UDP (0: none yet) */
};

struct lowered {
	struct flowsdn_lb_set sets[SETS];
	struct flowsdn_lb_backend *backends[SETS];
	uint32_t *tables[SETS];
	struct flowsdn_lb_frontend *frontends;
	struct flowsdn_lb_service svc;
};

struct svc {
	char *id;
	uint32_t svc_id;
	struct svc_frontend *fe;
	size_t n_fe;
	struct svc_backend *be;
	size_t n_be;
	unsigned int selection;   /* 0 random, 1 maglev */
	uint32_t maglev_size;
	unsigned int itp, etp;    /* 0 Cluster, 1 Local */
	unsigned int affinity;    /* 0 None, 1 ClientIP */
	uint32_t affinity_timeout;
	struct flowsdn_prefix *ranges, *denied;
	size_t n_ranges, n_denied;
	struct lowered low;       /* what is published */
	size_t pos;               /* index in agent_services.svcs */
	/* At start, before the one batched publish: */
	bool from_state;          /* read from the state (published by an earlier run) */
	bool ranges_stale;        /* the maps may hold source ranges of an earlier version */
	struct lowered *prev;     /* what the maps may hold of an earlier version */
};

/* Frontend index: (address, port, protocol) -> service. */
struct fe_slot {
	struct flowsdn_addr addr;
	uint16_t port;
	uint8_t protocol;
	struct svc *owner; /* NULL: free */
};

struct agent_services {
	pthread_mutex_t lock;
	const struct agent_ops *ops;
	void *ctx;
	struct flowsdn_datapath *dp;
	/* agent_services_set_endpoints() */
	int (*endpoints)(void *userdata, struct agent_api_endpoint **ret, size_t *ret_n);
	void *endpoints_userdata;
	struct flowsdn_addr node_addrs[AGENT_MAX_NODE_ADDRS];
	size_t n_node_addrs;
	char *state_path, *journal_path;
	int state_dfd;
	struct journal *journal;
	uint64_t seq;             /* the last change saved (snapshot or journal record) */
	size_t snapshot_size;
	struct svc **svcs;
	size_t n, cap;
	struct fe_slot *index;
	size_t index_cap, index_used;
	struct svc **ids;         /* id hash: NULL free, TOMB deleted */
	size_t ids_cap, ids_used;
	uint32_t next_svc_id, next_backend_id;
};

/* ------------------------------------------------------------ model */

static void lowered_clear(struct lowered *l)
{
	for (size_t i = 0; i < SETS; i++) {
		free(l->backends[i]);
		free(l->tables[i]);
	}
	free(l->frontends);
	memset(l, 0, sizeof(*l));
}

static void svc_free(struct svc *s)
{
	if (!s)
		return;
	free(s->id);
	free(s->fe);
	for (size_t i = 0; i < s->n_be; i++)
		free(s->be[i].node);
	free(s->be);
	free(s->ranges);
	free(s->denied);
	lowered_clear(&s->low);
	if (s->prev)
		lowered_clear(s->prev);
	free(s->prev);
	free(s);
}

static void *dup_array(const void *p, size_t n, size_t size, bool *failed)
{
	void *d;

	if (!n)
		return NULL;
	d = malloc(n * size);
	if (!d)
		*failed = true;
	else
		memcpy(d, p, n * size);
	return d;
}

/* A copy of the model of @src (what the reader fills in), nothing
 * lowered or published. */
static struct svc *svc_dup(const struct svc *src)
{
	struct svc *s = calloc(1, sizeof(*s));
	bool failed = false;

	if (!s)
		return NULL;
	*s = (struct svc){
		.n_fe = src->n_fe,
		.selection = src->selection,
		.maglev_size = src->maglev_size,
		.itp = src->itp,
		.etp = src->etp,
		.affinity = src->affinity,
		.affinity_timeout = src->affinity_timeout,
		.n_ranges = src->n_ranges,
		.n_denied = src->n_denied,
		.svc_id = src->svc_id,
	};
	s->id = strdup(src->id);
	s->fe = dup_array(src->fe, src->n_fe, sizeof(*s->fe), &failed);
	s->ranges = dup_array(src->ranges, src->n_ranges, sizeof(*s->ranges), &failed);
	s->denied = dup_array(src->denied, src->n_denied, sizeof(*s->denied), &failed);
	s->be = dup_array(src->be, src->n_be, sizeof(*s->be), &failed);
	if (s->be)
		for (; s->n_be < src->n_be; s->n_be++)
			if (!(s->be[s->n_be].node = strdup(src->be[s->n_be].node))) {
				failed = true;
				break;
			}
	if (failed || !s->id) {
		svc_free(s);
		return NULL;
	}
	return s;
}

static uint8_t ipproto(unsigned int p)
{
	return p ? IPPROTO_UDP : IPPROTO_TCP;
}

/* ------------------------------------------------------------ reading */

static int read_word(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const char *const *words = arg;
	const char *s;
	char expected[128] = "";
	int r = json_read_strref(ctx, v, &s, NULL);

	if (r < 0)
		return r;
	for (unsigned int i = 0; words[i]; i++) {
		if (strcmp(s, words[i]) == 0) {
			*(unsigned int *)dst = i;
			return 0;
		}
		snprintf(expected + strlen(expected), sizeof(expected) - strlen(expected), "%s\"%s\"", i ? ", " : "",
			 words[i]);
	}
	check_error(ctx, "enum", v, "must be one of %s", expected);
	return JSON_READ_REPORTED;
}

static int read_addr(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const char *s;
	int r = json_read_strref(ctx, v, &s, NULL);

	(void)arg;
	if (r < 0)
		return r;
	if (flowsdn_addr_parse(s, strlen(s), dst) < 0) {
		check_error(ctx, "address", v, "\"%s\" is not an IPv4 or IPv6 address", s);
		return JSON_READ_REPORTED;
	}
	return 0;
}

static int read_node(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const char *s;
	int r = json_read_strref(ctx, v, &s, NULL);

	if (r < 0)
		return r;
	if (strcmp(s, "local") != 0 && !names_dns_subdomain_valid(s)) {
		check_error(ctx, "node", v, "must be \"local\" or a node name (a DNS subdomain)");
		return JSON_READ_REPORTED;
	}
	return json_read_string(ctx, v, dst, arg);
}

/* A JSON array of prefixes into a new array and its count. */
static int read_prefixes(struct check_ctx *ctx, const struct json_value *v, struct flowsdn_prefix **ret, size_t *ret_n)
{
	struct flowsdn_prefix *p;
	size_t errors = ctx->errors;

	if (v->u.array.n > AGENT_SVC_MAX_RANGES) {
		check_error(ctx, "size", v, "at most %d ranges", AGENT_SVC_MAX_RANGES);
		return JSON_READ_REPORTED;
	}
	p = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.array.n; i++) {
		const struct json_value *item = v->u.array.items[i];
		const char *s;

		if (json_get_string(item, &s) < 0 || flowsdn_prefix_parse(s, strlen(s), NULL, &p[i]) < 0) {
			size_t saved = json_path_push_index(&ctx->path, i);

			check_error(ctx, "prefix", item, "not a CIDR with host bits clear");
			json_path_pop(&ctx->path, saved);
		}
	}
	free(*ret);
	*ret = p;
	*ret_n = v->u.array.n;
	return ctx->errors > errors ? JSON_READ_REPORTED : 0;
}

static int read_ranges(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct svc *s = dst;

	(void)arg;
	return read_prefixes(ctx, v, &s->ranges, &s->n_ranges);
}

static int read_denied(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct svc *s = dst;

	(void)arg;
	return read_prefixes(ctx, v, &s->denied, &s->n_denied);
}

static int read_backend_ids(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	uint32_t *ids = dst;
	uint64_t x[2];

	(void)arg;
	if (v->u.array.n != 2 || json_get_uint64(v->u.array.items[0], &x[0]) < 0 ||
	    json_get_uint64(v->u.array.items[1], &x[1]) < 0 || x[0] > UINT32_MAX || x[1] > UINT32_MAX) {
		check_error(ctx, "backend-ids", v, "must be [TCP id, UDP id]");
		return JSON_READ_REPORTED;
	}
	ids[0] = (uint32_t)x[0];
	ids[1] = (uint32_t)x[1];
	return 0;
}

static const struct json_int_range port_range = { 1, 65535 }, weight_range = { 0, 256 },
				   timeout_range = { 1, 86400 }, svc_id_range = { 1, UINT32_MAX / SETS };

#define FF(name, type, req, fn, field, arg) { name, type, req, fn, offsetof(struct svc_frontend, field), arg }
static const struct json_field frontend_fields[] = {
	FF("address", JSON_STRING, false, read_addr, addr, NULL),
	FF("port", JSON_NUMBER, true, json_read_uint16, port, &port_range),
	FF("protocol", JSON_STRING, false, read_word, protocol, protocol_words),
	FF("type", JSON_STRING, true, read_word, type, fe_type_words),
};
#undef FF
#define BF(name, type, req, fn, field, arg) { name, type, req, fn, offsetof(struct svc_backend, field), arg }
static const struct json_field backend_fields[] = {
	BF("address", JSON_STRING, true, read_addr, addr, NULL),
	BF("backendIds", JSON_ARRAY, false, read_backend_ids, ids, NULL),
	BF("node", JSON_STRING, false, read_node, node, NULL),
	BF("port", JSON_NUMBER, true, json_read_uint16, port, &port_range),
	BF("state", JSON_STRING, false, read_word, state, state_words),
	BF("weight", JSON_NUMBER, false, json_read_uint32, weight, &weight_range),
};
#undef BF

/* The items of an array, each a closed object read into its element of
 * a new array (@size bytes each, @init called first). */
static int read_items(struct check_ctx *ctx, const struct json_value *v, size_t max, size_t size,
		      const struct json_field *fields, size_t n_fields, void (*init)(void *), void **ret, size_t *ret_n)
{
	size_t errors = ctx->errors;
	char *items;

	if (v->u.array.n > max) {
		check_error(ctx, "size", v, "at most %zu entries", max);
		return JSON_READ_REPORTED;
	}
	items = calloc(v->u.array.n ? v->u.array.n : 1, size);
	if (!items)
		return -ENOMEM;
	*ret = items;
	*ret_n = v->u.array.n;
	for (size_t i = 0; i < v->u.array.n; i++) {
		size_t saved = json_path_push_index(&ctx->path, i);
		int r;

		init(items + i * size);
		r = json_read_object(ctx, v->u.array.items[i], fields, n_fields, items + i * size);
		json_path_pop(&ctx->path, saved);
		if (r < 0 && r != JSON_READ_REPORTED)
			return r;
	}
	return ctx->errors > errors ? JSON_READ_REPORTED : 0;
}

static void frontend_init(void *p)
{
	(void)p;
}

static void backend_init(void *p)
{
	struct svc_backend *b = p;

	b->weight = 1;
	b->state = FLOWSDN_BACKEND_ACTIVE;
}

static int read_frontends(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct svc *s = dst;
	void *items = NULL;

	(void)arg;
	free(s->fe);
	s->fe = NULL;
	s->n_fe = 0;
	int r = read_items(ctx, v, AGENT_SVC_MAX_FRONTENDS, sizeof(struct svc_frontend), frontend_fields,
			   ARRAY_SIZE(frontend_fields), frontend_init, &items, &s->n_fe);
	s->fe = items;
	return r;
}

static int read_backends(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct svc *s = dst;
	void *items = NULL;
	int r;

	(void)arg;
	r = read_items(ctx, v, AGENT_SVC_MAX_BACKENDS, sizeof(struct svc_backend), backend_fields,
		       ARRAY_SIZE(backend_fields), backend_init, &items, &s->n_be);
	s->be = items;
	return r;
}

static int read_id(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	const char *s;
	int r = json_read_strref(ctx, v, &s, NULL);

	if (r < 0)
		return r;
	if (!names_service_id_valid(s)) {
		check_error(ctx, "service-id", v, "\"%s\" is not a service id (\"" NAMES_SERVICE_ID_PREFIX "\" and 32 lower-case hex digits)", s);
		return JSON_READ_REPORTED;
	}
	return json_read_string(ctx, v, dst, arg);
}

#define AF(name, type, req, fn, field, arg) { name, type, req, fn, offsetof(struct svc, field), arg }
static const struct json_field affinity_fields[] = {
	AF("timeoutSeconds", JSON_NUMBER, false, json_read_uint32, affinity_timeout, &timeout_range),
	AF("type", JSON_STRING, true, read_word, affinity, affinity_words),
};
static const struct json_table affinity_table = { affinity_fields, ARRAY_SIZE(affinity_fields), 0 };

/* Readers at offset 0 with no member of their own take the whole svc. */
static const struct json_field service_fields[] = {
	{ "backends", JSON_ARRAY, false, read_backends, 0, NULL },
	{ "deniedSourceRanges", JSON_ARRAY, false, read_denied, 0, NULL },
	AF("externalTrafficPolicy", JSON_STRING, false, read_word, etp, policy_words),
	{ "frontends", JSON_ARRAY, true, read_frontends, 0, NULL },
	AF("id", JSON_STRING, false, read_id, id, NULL),
	AF("internalTrafficPolicy", JSON_STRING, false, read_word, itp, policy_words),
	{ "loadBalancerSourceRanges", JSON_ARRAY, false, read_ranges, 0, NULL },
	AF("maglevTableSize", JSON_NUMBER, false, json_read_uint32, maglev_size, NULL),
	AF("selection", JSON_STRING, false, read_word, selection, selection_words),
	{ "sessionAffinity", JSON_OBJECT, false, json_read_nested, 0, &affinity_table },
	AF("svcId", JSON_NUMBER, false, json_read_uint32, svc_id, &svc_id_range),
};
#undef AF

/* A problem at ctx->path + @key[@index].@sub (@index < 0, @sub NULL:
 * left out). */
_printf_(6, 7) static void fail_at(struct check_ctx *ctx, const char *key, ssize_t index, const char *sub,
				  const char *code, const char *fmt, ...)
{
	size_t saved = json_path_push_key(&ctx->path, key);
	char msg[256];
	va_list ap;

	if (index >= 0)
		json_path_push_index(&ctx->path, (size_t)index);
	if (sub)
		json_path_push_key(&ctx->path, sub);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	check_error(ctx, code, NULL, "%s", msg);
	json_path_pop(&ctx->path, saved);
}

static bool fe_same(const struct svc_frontend *a, const struct svc_frontend *b)
{
	return a->port == b->port && a->protocol == b->protocol && a->addr.family == b->addr.family &&
	       (a->addr.family == 0 || flowsdn_addr_equal(&a->addr, &b->addr));
}

/* Rules across fields; reported at their paths. */
static void service_check(struct check_ctx *ctx, const struct svc *s)
{
	uint64_t slots = 0;

	for (size_t i = 0; i < s->n_fe; i++) {
		const struct svc_frontend *f = &s->fe[i];

		if (f->type == FE_NODE_PORT && f->addr.family)
			fail_at(ctx, "frontends", (ssize_t)i, "address", "nodeport-address",
				"a NodePort frontend has no address (it is every node address)");
		if (f->type != FE_NODE_PORT && !f->addr.family)
			fail_at(ctx, "frontends", (ssize_t)i, "address", "required", "required for a %s frontend",
				fe_type_words[f->type]);
		for (size_t j = 0; j < i; j++)
			if (fe_same(&s->fe[j], f)) {
				fail_at(ctx, "frontends", (ssize_t)i, NULL, "duplicate", "the same frontend as frontends[%zu]",
					j);
				break;
			}
	}
	for (size_t i = 0; i < s->n_be; i++) {
		const struct svc_backend *b = &s->be[i];

		if (b->state == FLOWSDN_BACKEND_ACTIVE)
			slots += b->weight;
		for (size_t j = 0; j < i; j++)
			if (s->be[j].port == b->port && flowsdn_addr_equal(&s->be[j].addr, &b->addr)) {
				fail_at(ctx, "backends", (ssize_t)i, NULL, "duplicate",
					"the same address and port as backends[%zu]", j);
				break;
			}
	}
	if (slots > FLOWSDN_SVC_MAX_SLOTS_PER_SET)
		fail_at(ctx, "backends", -1, NULL, "weights", "the active backends' weights add up to more than %u",
			FLOWSDN_SVC_MAX_SLOTS_PER_SET);
	if (s->selection == 1 && !flowsdn_maglev_size_supported(s->maglev_size))
		fail_at(ctx, "maglevTableSize", -1, NULL, "maglev-size",
			"%u is not a supported Maglev table size (flowsdn_maglev(3))", s->maglev_size);
}

/* One service object into a new struct svc.  @id (NULL: the object's
 * own "id", required then) names it.  JSON_READ_REPORTED with @ctx's
 * diag naming each problem. */
static int service_read(struct check_ctx *ctx, const struct json_value *v, const char *id, struct svc **ret)
{
	struct svc *s = calloc(1, sizeof(*s));
	size_t errors = ctx->errors;
	int r;

	if (!s)
		return -ENOMEM;
	s->maglev_size = FLOWSDN_MAGLEV_DEFAULT_SIZE;
	s->affinity_timeout = AGENT_SVC_DEFAULT_AFFINITY;
	if (v->type != JSON_OBJECT) {
		check_error(ctx, "type", v, "a service is an object");
		r = JSON_READ_REPORTED;
		goto out;
	}
	r = json_read_object(ctx, v, service_fields, ARRAY_SIZE(service_fields), s);
	if (r < 0 && r != JSON_READ_REPORTED)
		goto out;
	if (id && s->id && strcmp(id, s->id) != 0)
		fail_at(ctx, "id", -1, NULL, "id-mismatch", "\"%s\" is not the id of the path (\"%s\")", s->id, id);
	if (!id && !s->id)
		fail_at(ctx, "id", -1, NULL, "required", "required");
	if (id && !s->id && !(s->id = strdup(id))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s->n_be; i++)
		if (!s->be[i].node && !(s->be[i].node = strdup("local"))) {
			r = -ENOMEM;
			goto out;
		}
	service_check(ctx, s);
	r = ctx->errors > errors ? JSON_READ_REPORTED : 0;
out:
	if (r < 0)
		svc_free(s);
	else
		*ret = s;
	return r;
}

struct id_at {
	const char *id;
	size_t at;
};

static int id_at_cmp(const void *x, const void *y)
{
	const struct id_at *a = x, *b = y;
	int r = strcmp(a->id, b->id);

	return r ? r : (a->at > b->at) - (a->at < b->at);
}

/* The configuration's services, each read and checked once. */
struct agent_svc_list {
	unsigned int refs;
	size_t n;
	struct svc **v;
};

struct agent_svc_list *agent_svc_list_ref(struct agent_svc_list *l)
{
	if (l)
		__atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED);
	return l;
}

void agent_svc_list_unref(struct agent_svc_list *l)
{
	if (!l || __atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	for (size_t i = 0; i < l->n; i++)
		svc_free(l->v[i]);
	free(l->v);
	free(l);
}

int agent_services_read_config(struct check_ctx *ctx, const struct json_value *v, void *dst, const void *arg)
{
	struct agent_svc_list **ret = dst, *l;
	size_t errors = ctx->errors, n_ids = 0;
	_cleanup_free_ struct id_at *ids = NULL;
	int r = 0;

	(void)arg;
	if (v->u.array.n > MAX_SERVICES) {
		check_error(ctx, "size", v, "at most %d services", MAX_SERVICES);
		return JSON_READ_REPORTED;
	}
	l = calloc(1, sizeof(*l));
	ids = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(*ids));
	if (l) {
		l->refs = 1;
		l->v = calloc(v->u.array.n ? v->u.array.n : 1, sizeof(*l->v));
	}
	if (!l || !l->v || !ids) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < v->u.array.n; i++) {
		size_t saved = json_path_push_index(&ctx->path, i);
		struct svc *s = NULL;

		r = service_read(ctx, v->u.array.items[i], NULL, &s);
		json_path_pop(&ctx->path, saved);
		if (r == 0) {
			ids[n_ids++] = (struct id_at){ s->id, i };
			l->v[l->n++] = s;
		} else if (r != JSON_READ_REPORTED) {
			goto out;
		}
	}
	r = 0;
	/* Duplicate ids, each named after its first entry: sorted, not
	 * pairwise (10,000 services). */
	qsort(ids, n_ids, sizeof(*ids), id_at_cmp);
	for (size_t i = 1, first = 0; i < n_ids; i++) {
		size_t saved;

		if (strcmp(ids[i].id, ids[first].id) != 0) {
			first = i;
			continue;
		}
		saved = json_path_push_index(&ctx->path, ids[i].at);
		fail_at(ctx, "id", -1, NULL, "duplicate", "\"%s\" is also services[%zu]", ids[i].id, ids[first].at);
		json_path_pop(&ctx->path, saved);
	}
	if (ctx->errors > errors)
		r = JSON_READ_REPORTED;
out:
	if (r < 0) {
		agent_svc_list_unref(l);
		return r;
	}
	agent_svc_list_unref(*ret);
	*ret = l;
	return 0;
}

/* ------------------------------------------------------------ writing */

static void addr_gen(struct json_writer *g, const char *key, const struct flowsdn_addr *a)
{
	char buf[FLOWSDN_ADDR_STRLEN];

	if (flowsdn_addr_format(a, buf, sizeof(buf)) >= 0)
		jw_kv_string(g, key, buf);
}

static void prefixes_gen(struct json_writer *g, const char *key, const struct flowsdn_prefix *p, size_t n)
{
	jw_key(g, key);
	jw_array_open(g);
	for (size_t i = 0; i < n; i++) {
		char buf[FLOWSDN_PREFIX_STRLEN];

		if (flowsdn_prefix_format(&p[i], buf, sizeof(buf)) >= 0)
			jw_string(g, buf);
	}
	jw_array_close(g);
}

/* The forms of a service written by service_gen(). */
enum gen_form {
	GEN_API,    /* every field, as GET shows it */
	GEN_STATE,  /* backend ids too, and only the fields that differ from
		     * the reader's defaults (the reader fills those back in),
		     * so that saving 10,000 services stays cheap */
	GEN_CONFIG, /* every field but the ids, as the configuration declares it */
};

static void service_gen(struct json_writer *g, const struct svc *s, enum gen_form form)
{
	bool all = form != GEN_STATE, state = form == GEN_STATE;

	jw_object_open(g);
	jw_kv_string(g, "id", s->id);
	if (form != GEN_CONFIG)
		jw_kv_uint(g, "svcId", s->svc_id);
	jw_key(g, "frontends");
	jw_array_open(g);
	for (size_t i = 0; i < s->n_fe; i++) {
		jw_object_open(g);
		jw_kv_string(g, "type", fe_type_words[s->fe[i].type]);
		if (s->fe[i].addr.family)
			addr_gen(g, "address", &s->fe[i].addr);
		jw_kv_uint(g, "port", s->fe[i].port);
		if (all || s->fe[i].protocol)
			jw_kv_string(g, "protocol", protocol_words[s->fe[i].protocol]);
		jw_object_close(g);
	}
	jw_array_close(g);
	jw_key(g, "backends");
	jw_array_open(g);
	for (size_t i = 0; i < s->n_be; i++) {
		const struct svc_backend *b = &s->be[i];

		jw_object_open(g);
		addr_gen(g, "address", &b->addr);
		jw_kv_uint(g, "port", b->port);
		if (all || b->weight != 1)
			jw_kv_uint(g, "weight", b->weight);
		if (all || b->state != FLOWSDN_BACKEND_ACTIVE)
			jw_kv_string(g, "state", state_words[b->state]);
		if (all || strcmp(b->node, "local") != 0)
			jw_kv_string(g, "node", b->node);
		if (state) {
			jw_key(g, "backendIds");
			jw_array_open(g);
			jw_uint(g, b->ids[0]);
			jw_uint(g, b->ids[1]);
			jw_array_close(g);
		}
		jw_object_close(g);
	}
	jw_array_close(g);
	if (all || s->selection)
		jw_kv_string(g, "selection", selection_words[s->selection]);
	if (all || s->maglev_size != FLOWSDN_MAGLEV_DEFAULT_SIZE)
		jw_kv_uint(g, "maglevTableSize", s->maglev_size);
	if (all || s->itp)
		jw_kv_string(g, "internalTrafficPolicy", policy_words[s->itp]);
	if (all || s->etp)
		jw_kv_string(g, "externalTrafficPolicy", policy_words[s->etp]);
	if (all || s->affinity || s->affinity_timeout != AGENT_SVC_DEFAULT_AFFINITY) {
		jw_key(g, "sessionAffinity");
		jw_object_open(g);
		jw_kv_string(g, "type", affinity_words[s->affinity]);
		jw_kv_uint(g, "timeoutSeconds", s->affinity_timeout);
		jw_object_close(g);
	}
	if (all || s->n_ranges)
		prefixes_gen(g, "loadBalancerSourceRanges", s->ranges, s->n_ranges);
	if (all || s->n_denied)
		prefixes_gen(g, "deniedSourceRanges", s->denied, s->n_denied);
	jw_object_close(g);
}

void agent_svc_list_gen(const struct agent_svc_list *l, struct json_writer *w)
{
	jw_array_open(w);
	for (size_t i = 0; l && i < l->n; i++)
		service_gen(w, l->v[i], GEN_CONFIG);
	jw_array_close(w);
}

/* ------------------------------------------------------------ lowering */

static unsigned int set_index(unsigned int protocol, uint8_t family, bool local)
{
	return protocol * 4 + (family == FLOWSDN_AF_INET6 ? 2 : 0) + (local ? 1 : 0);
}

/* Builds set @k of @s into @l (backends of that protocol and family,
 * only the node's own for the local view; its Maglev table). */
static int lower_set(const struct svc *s, unsigned int k, struct lowered *l)
{
	unsigned int protocol = k / 4;
	uint8_t family = (k & 2) ? FLOWSDN_AF_INET6 : FLOWSDN_AF_INET;
	bool local = k & 1;
	struct flowsdn_lb_set *set = &l->sets[k];
	struct flowsdn_lb_backend *bs = calloc(s->n_be ? s->n_be : 1, sizeof(*bs));
	size_t n = 0, nm = 0;

	if (!bs)
		return -ENOMEM;
	l->backends[k] = bs;
	for (size_t i = 0; i < s->n_be; i++) {
		const struct svc_backend *b = &s->be[i];
		bool on_node = !strcmp(b->node, "local");

		if (b->addr.family != family || (local && !on_node))
			continue;
		bs[n] = (struct flowsdn_lb_backend){ .id = b->ids[protocol], .addr = b->addr, .port = b->port,
						     .protocol = ipproto(protocol), .state = (uint8_t)b->state,
						     .flags = on_node ? 0 : FLOWSDN_BACKEND_F_REMOTE, .weight = b->weight };
		if (b->state == FLOWSDN_BACKEND_ACTIVE && b->weight)
			nm++;
		n++;
	}
	*set = (struct flowsdn_lb_set){ .svc_id = s->svc_id * SETS + k, .backends = bs, .n_backends = n };
	if (local)
		set->flags |= FLOWSDN_SVC_F_LOCAL;
	if (s->affinity) {
		set->flags |= FLOWSDN_SVC_F_AFFINITY;
		set->affinity_timeout = s->affinity_timeout;
	}
	if (s->selection == 1 && nm) {
		_cleanup_free_ struct flowsdn_maglev_backend *mb = calloc(nm, sizeof(*mb));
		_cleanup_free_ char *keys = calloc(nm, FLOWSDN_ADDR_STRLEN + 8);
		size_t j = 0;
		int r;

		l->tables[k] = calloc(s->maglev_size, sizeof(uint32_t));
		if (!mb || !keys || !l->tables[k])
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			char *key = keys + j * (FLOWSDN_ADDR_STRLEN + 8), a[FLOWSDN_ADDR_STRLEN];

			if (bs[i].state != FLOWSDN_BACKEND_ACTIVE || !bs[i].weight)
				continue;
			flowsdn_addr_format(&bs[i].addr, a, sizeof(a));
			snprintf(key, FLOWSDN_ADDR_STRLEN + 8, "%s:%u", a, bs[i].port);
			mb[j] = (struct flowsdn_maglev_backend){ .key = key, .key_len = strlen(key), .weight = bs[i].weight,
								 .id = bs[i].id };
			j++;
		}
		r = flowsdn_maglev_build(mb, nm, s->maglev_size, NULL, l->tables[k]);
		if (r < 0)
			return r;
		set->flags |= FLOWSDN_SVC_F_MAGLEV;
		set->maglev_size = s->maglev_size;
		set->maglev_table = l->tables[k];
	}
	return 0;
}

static uint32_t type_flags(unsigned int type)
{
	switch (type) {
	case FE_EXTERNAL_IP:
		return FLOWSDN_SVC_F_EXTERNAL_IP;
	case FE_LOAD_BALANCER:
		return FLOWSDN_SVC_F_LOADBALANCER;
	case FE_NODE_PORT:
		return FLOWSDN_SVC_F_NODEPORT;
	default:
		return 0;
	}
}

/* The whole service into @l (sets used by no frontend are left out). */
static int lower(const struct agent_services *as, const struct svc *s, struct lowered *l)
{
	size_t n_fe = 0, cap = 0, map[SETS], n_sets = 0;
	bool used[SETS] = { false };
	struct flowsdn_lb_frontend *fes;
	int r;

	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < s->n_fe; i++)
		cap += (s->fe[i].addr.family ? 1 : as->n_node_addrs) * 2;
	fes = calloc(cap ? cap : 1, sizeof(*fes));
	if (!fes)
		return -ENOMEM;
	l->frontends = fes;
	for (size_t i = 0; i < s->n_fe; i++) {
		const struct svc_frontend *f = &s->fe[i];
		size_t n_addrs = f->addr.family ? 1 : as->n_node_addrs;

		for (size_t a = 0; a < n_addrs; a++) {
			const struct flowsdn_addr *addr = f->addr.family ? &f->addr : &as->node_addrs[a];
			unsigned int ext = set_index(f->protocol, addr->family, f->type == FE_CLUSTER_IP ? s->itp : s->etp);
			unsigned int in = set_index(f->protocol, addr->family, s->itp);
			struct flowsdn_lb_frontend base = { .addr = *addr, .port = f->port, .protocol = ipproto(f->protocol),
							    .scope = FLOWSDN_SVC_SCOPE_EXTERNAL,
							    .flags = type_flags(f->type), .set = ext };

			used[ext] = true;
			if (ext != in) {
				base.flags |= FLOWSDN_SVC_F_TWO_SCOPES;
				fes[n_fe] = base;
				fes[n_fe].flags &= ~FLOWSDN_SVC_F_TWO_SCOPES;
				fes[n_fe].scope = FLOWSDN_SVC_SCOPE_INTERNAL;
				fes[n_fe++].set = in;
				used[in] = true;
			}
			fes[n_fe++] = base;
		}
	}
	for (unsigned int k = 0; k < SETS; k++) {
		if (!used[k])
			continue;
		r = lower_set(s, k, l);
		if (r < 0)
			return r;
	}
	/* Compact: the library wants the sets in one array. */
	for (unsigned int k = 0; k < SETS; k++) {
		map[k] = n_sets;
		if (used[k]) {
			if (n_sets != k) {
				l->sets[n_sets] = l->sets[k];
				memset(&l->sets[k], 0, sizeof(l->sets[k]));
			}
			n_sets++;
		}
	}
	for (size_t i = 0; i < n_fe; i++)
		fes[i].set = map[fes[i].set];
	l->svc = (struct flowsdn_lb_service){ .sets = l->sets, .n_sets = n_sets, .frontends = fes, .n_frontends = n_fe };
	return 0;
}

/* ------------------------------------------------------------ the table */

static uint64_t fe_hash(const struct flowsdn_addr *a, uint16_t port, uint8_t protocol)
{
	uint64_t h = 1469598103934665603ull;
	const uint8_t *p = a->bytes;

	for (size_t i = 0; i < 16; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	h = (h ^ a->family) * 1099511628211ull;
	h = (h ^ port) * 1099511628211ull;
	return (h ^ protocol) * 1099511628211ull;
}

static struct fe_slot *index_find(struct agent_services *as, const struct flowsdn_addr *a, uint16_t port,
				  uint8_t protocol, bool for_insert)
{
	size_t mask = as->index_cap - 1, i;

	if (!as->index_cap)
		return NULL;
	i = fe_hash(a, port, protocol) & mask;
	for (;;) {
		struct fe_slot *e = &as->index[i];

		if (!e->owner && !e->addr.family)
			return for_insert ? e : NULL;
		if (e->addr.family && e->port == port && e->protocol == protocol && flowsdn_addr_equal(&e->addr, a))
			return e;
		if (for_insert && !e->owner)
			return e; /* a tombstone */
		i = (i + 1) & mask;
	}
}

static int index_grow(struct agent_services *as, size_t more)
{
	struct fe_slot *old = as->index;
	size_t old_cap = as->index_cap, cap = old_cap ? old_cap : 1024;

	if ((as->index_used + more) * 2 < cap && old_cap)
		return 0;
	while ((as->index_used + more) * 2 >= cap)
		cap *= 2;
	as->index = calloc(cap, sizeof(*as->index));
	if (!as->index) {
		as->index = old;
		return -ENOMEM;
	}
	as->index_cap = cap;
	as->index_used = 0;
	for (size_t i = 0; i < old_cap; i++) {
		if (!old[i].owner)
			continue;
		*index_find(as, &old[i].addr, old[i].port, old[i].protocol, true) = old[i];
		as->index_used++;
	}
	free(old);
	return 0;
}

/* Calls @fn for every (address, port, protocol) frontend key of @s. */
static int fe_keys(const struct agent_services *as, const struct svc *s,
		   int (*fn)(struct agent_services *, const struct flowsdn_addr *, uint16_t, uint8_t, void *), void *u)
{
	for (size_t i = 0; i < s->n_fe; i++) {
		size_t n = s->fe[i].addr.family ? 1 : as->n_node_addrs;

		for (size_t a = 0; a < n; a++) {
			int r = fn((struct agent_services *)as, s->fe[i].addr.family ? &s->fe[i].addr : &as->node_addrs[a],
				   s->fe[i].port, ipproto(s->fe[i].protocol), u);
			if (r)
				return r;
		}
	}
	return 0;
}

struct conflict {
	const struct svc *self, *other;
	const struct svc *other_old; /* the service being replaced */
	char text[96];
};

static int key_conflicts(struct agent_services *as, const struct flowsdn_addr *a, uint16_t port, uint8_t proto,
			 void *u)
{
	struct conflict *c = u;
	struct fe_slot *e = index_find(as, a, port, proto, false);
	char buf[FLOWSDN_ADDR_STRLEN];

	if (!e || !e->owner || e->owner == c->other_old)
		return 0;
	c->other = e->owner;
	flowsdn_addr_format(a, buf, sizeof(buf));
	snprintf(c->text, sizeof(c->text), "%s port %u/%s", buf, port, proto == IPPROTO_UDP ? "UDP" : "TCP");
	return 1;
}

static int key_add(struct agent_services *as, const struct flowsdn_addr *a, uint16_t port, uint8_t proto, void *u)
{
	struct fe_slot *e = index_find(as, a, port, proto, true);

	if (!e->owner)
		as->index_used++;
	*e = (struct fe_slot){ .addr = *a, .port = port, .protocol = proto, .owner = u };
	return 0;
}

static int key_drop(struct agent_services *as, const struct flowsdn_addr *a, uint16_t port, uint8_t proto, void *u)
{
	struct fe_slot *e = index_find(as, a, port, proto, false);

	if (e && e->owner == u)
		e->owner = NULL; /* tombstone: addr stays set */
	return 0;
}

static size_t fe_key_count(const struct agent_services *as, const struct svc *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_fe; i++)
		n += s->fe[i].addr.family ? 1 : as->n_node_addrs;
	return n;
}

#define TOMB ((struct svc *)&tomb_marker)
static const char tomb_marker;

static uint64_t id_hash(const char *id)
{
	uint64_t h = 1469598103934665603ull;

	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 1099511628211ull;
	return h;
}

/* The id slot of @id: its entry, or (@for_insert) the first free one. */
static struct svc **id_slot(const struct agent_services *as, const char *id, bool for_insert)
{
	size_t mask = as->ids_cap - 1, i;
	struct svc **free_slot = NULL;

	if (!as->ids_cap)
		return NULL;
	for (i = id_hash(id) & mask;; i = (i + 1) & mask) {
		struct svc **e = &as->ids[i];

		if (!*e)
			return for_insert ? (free_slot ? free_slot : e) : NULL;
		if (*e == TOMB) {
			if (!free_slot)
				free_slot = e;
			continue;
		}
		if (!strcmp((*e)->id, id))
			return e;
	}
}

static int ids_grow(struct agent_services *as)
{
	struct svc **old = as->ids;
	size_t old_cap = as->ids_cap, cap = old_cap ? old_cap : 256;

	if (old_cap && (as->ids_used + 1) * 2 < old_cap)
		return 0;
	while ((as->n + 1) * 2 >= cap)
		cap *= 2;
	as->ids = calloc(cap, sizeof(*as->ids));
	if (!as->ids) {
		as->ids = old;
		return -ENOMEM;
	}
	as->ids_cap = cap;
	as->ids_used = 0;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i] && old[i] != TOMB) {
			*id_slot(as, old[i]->id, true) = old[i];
			as->ids_used++;
		}
	free(old);
	return 0;
}

static ssize_t svc_find(const struct agent_services *as, const char *id)
{
	struct svc **e = id_slot(as, id, false);

	return e ? (ssize_t)(*e)->pos : -1;
}

/* Backend ids: those of @old for the same address and port, new ones
 * from the counter for the others. */
static void assign_ids(struct agent_services *as, struct svc *s, const struct svc *old)
{
	for (size_t i = 0; i < s->n_be; i++) {
		struct svc_backend *b = &s->be[i];

		b->ids[0] = b->ids[1] = 0;
		for (size_t j = 0; old && j < old->n_be; j++)
			if (old->be[j].port == b->port && flowsdn_addr_equal(&old->be[j].addr, &b->addr)) {
				b->ids[0] = old->be[j].ids[0];
				b->ids[1] = old->be[j].ids[1];
			}
		for (int p = 0; p < 2; p++) {
			if (b->ids[p])
				continue;
			if (!as->next_backend_id)
				as->next_backend_id = 1; /* wrapped: 0 is never an id */
			b->ids[p] = as->next_backend_id++;
		}
	}
}

/* ------------------------------------------------------------ state */

/* Writes every service to a new snapshot (atomic rename, fsynced) that
 * covers the journal up to as->seq, then empties the journal. */
static int state_save(struct agent_services *as)
{
	struct json_writer *g = json_writer_new(0);
	_cleanup_free_ char *json = NULL;
	size_t len = 0;
	int r;

	jw_object_open(g);
	jw_kv_uint(g, "version", STATE_VERSION);
	jw_kv_uint(g, "nextSvcId", as->next_svc_id);
	jw_kv_uint(g, "nextBackendId", as->next_backend_id);
	jw_kv_uint(g, "journalSeq", as->seq);
	jw_key(g, "services");
	jw_array_open(g);
	for (size_t i = 0; i < as->n; i++)
		service_gen(g, as->svcs[i], GEN_STATE);
	jw_array_close(g);
	jw_object_close(g);
	r = json_writer_finish(g, &json, &len);
	if (r == 0)
		r = util_write_file_atomic_at(as->state_dfd, STATE_FILE, json, len, 0600);
	/* A crash here leaves records the snapshot covers: replay skips them. */
	if (r == 0)
		r = journal_reset(as->journal);
	if (r == 0)
		as->snapshot_size = len;
	if (r < 0)
		pr_err("agent: saving %s: %s", as->state_path, strerror(-r));
	return r;
}

/* Saves one change: a journal record {"seq", "nextSvcId", "nextBackendId",
 * and "put": the service with its ids, or "delete": its id}, folded into
 * a new snapshot when the journal has grown past JOURNAL_COMPACT_MIN and
 * the snapshot's size. */
static int state_record(struct agent_services *as, const struct svc *put, const char *deleted)
{
	struct json_writer *g = json_writer_new(0);
	_cleanup_free_ char *json = NULL;
	size_t len = 0;
	int r;

	jw_object_open(g);
	jw_kv_uint(g, "seq", as->seq + 1);
	jw_kv_uint(g, "nextSvcId", as->next_svc_id);
	jw_kv_uint(g, "nextBackendId", as->next_backend_id);
	if (put) {
		jw_key(g, "put");
		service_gen(g, put, GEN_STATE);
	} else {
		jw_kv_string(g, "delete", deleted);
	}
	jw_object_close(g);
	r = json_writer_finish(g, &json, &len);
	if (r == 0)
		r = journal_append(as->journal, json, len);
	if (r < 0) {
		pr_err("agent: saving a change to %s: %s", as->journal_path, strerror(-r));
		return r;
	}
	as->seq++;
	if ((uint64_t)journal_size(as->journal) > JOURNAL_COMPACT_MIN &&
	    (uint64_t)journal_size(as->journal) > as->snapshot_size)
		r = state_save(as);
	return r;
}

/* ------------------------------------------------------------ changes */

/* The source ranges of @s (NULL: none, a removal) on every backend set
 * of @l: the uplink program enforces them on traffic from outside. */
static int dp_srcranges(struct agent_services *as, const struct lowered *l, const struct svc *s)
{
	int r = 0;

	if (!as->dp || !as->ops->dp_srcrange_set)
		return 0;
	for (size_t i = 0; i < l->svc.n_sets && r == 0; i++)
		r = as->ops->dp_srcrange_set(as->ctx, as->dp, l->svc.sets[i].svc_id, s ? s->ranges : NULL,
					     s ? s->n_ranges : 0, s ? s->denied : NULL, s ? s->n_denied : 0);
	return r;
}

static int dp_publish(struct agent_services *as, const struct svc *s, const struct lowered *old)
{
	int r;

	if (!as->dp || !as->ops->dp_service_publish)
		return 0;
	/* Ranges first: a newly denied source is never let in meanwhile. */
	r = dp_srcranges(as, &s->low, s);
	if (r == 0)
		r = as->ops->dp_service_publish(as->ctx, as->dp, &s->low.svc, old ? &old->svc : NULL);
	return r;
}

static int dp_remove(struct agent_services *as, const struct lowered *old)
{
	int r;

	if (!as->dp || !as->ops->dp_service_remove)
		return 0;
	r = as->ops->dp_service_remove(as->ctx, as->dp, &old->svc);
	if (r == 0)
		r = dp_srcranges(as, old, NULL);
	return r;
}

void agent_services_set_endpoints(struct agent_services *as,
				  int (*fn)(void *userdata, struct agent_api_endpoint **ret, size_t *ret_n),
				  void *userdata)
{
	pthread_mutex_lock(&as->lock);
	as->endpoints = fn;
	as->endpoints_userdata = userdata;
	pthread_mutex_unlock(&as->lock);
}

/* The endpoints whose namespaces hold sockets of the host kernel, one per
 * namespace (an endpoint may have several interfaces): compacted in
 * place in *@v, their count returned.  NULL *@v when there are none. */
static size_t socket_namespaces(struct agent_services *as, struct agent_api_endpoint **v)
{
	size_t n = 0, k = 0;

	*v = NULL;
	if (!as->endpoints || !as->ops->sock_destroy_netns || as->endpoints(as->endpoints_userdata, v, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		bool seen = (*v)[i].svc_translation == FLOWSDN_CNI_SVC_PACKET;

		for (size_t j = 0; j < k && !seen; j++)
			seen = (*v)[j].netns_ino == (*v)[i].netns_ino && !strcmp((*v)[j].netns, (*v)[i].netns);
		if (!seen)
			(*v)[k++] = (*v)[i];
	}
	return k;
}

/* The UDP sockets still connected to a backend of @old that @s (NULL:
 * none) no longer has are destroyed, so that their clients get an error
 * and choose again; TCP connections drain.  Those of host processes (the
 * agent's netns) and of the processes of every endpoint whose sockets
 * are the host kernel's (runc-style: the socket LB connected them). */
static void destroy_removed(struct agent_services *as, const struct svc *old, const struct svc *s)
{
	_cleanup_free_ struct agent_api_endpoint *eps = NULL;
	size_t n_eps = 0;
	bool udp = false, listed = false;

	if (!as->dp || !as->ops->sock_destroy)
		return;
	for (size_t i = 0; i < old->n_fe; i++)
		udp |= old->fe[i].protocol == 1;
	for (size_t i = 0; udp && i < old->n_be; i++) {
		const struct svc_backend *b = &old->be[i];
		bool kept = false;
		size_t n = 0, total;
		int r;

		for (size_t j = 0; s && j < s->n_be && !kept; j++)
			kept = s->be[j].port == b->port && flowsdn_addr_equal(&s->be[j].addr, &b->addr);
		if (kept)
			continue;
		r = as->ops->sock_destroy(as->ctx, &b->addr, b->port, IPPROTO_UDP, &n);
		if (r < 0)
			pr_warn("agent: service %s: closing the UDP sockets of a removed backend: %s", old->id,
				flowsdn_strerror(r));
		total = n;
		if (!listed) {
			n_eps = socket_namespaces(as, &eps);
			listed = true;
		}
		for (size_t e = 0; e < n_eps && r != -EOPNOTSUPP; e++) {
			n = 0;
			/* Only the namespace the endpoint was made in: a
			 * /proc/PID path whose PID was reused names another. */
			r = as->ops->sock_destroy_netns(as->ctx, eps[e].netns, eps[e].netns_ino, &b->addr, b->port,
							IPPROTO_UDP, &n);
			if (r == -FLOWSDN_E_NL_MISMATCH)
				pr_info("agent: service %s: %s is another network namespace now: not searched", old->id,
					eps[e].netns);
			else if (r < 0 && r != -FLOWSDN_E_NL_NETNS)
				pr_warn("agent: service %s: closing the UDP sockets of a removed backend in %s: %s", old->id,
					eps[e].netns, flowsdn_strerror(r));
			total += r < 0 ? 0 : n;
		}
		if (total)
			pr_info("agent: service %s: %zu UDP sockets of a removed backend closed", old->id, total);
	}
}

/* Puts @s (taken) in the table: index, ids, datapath and state as @how
 * (APPLY_*) says.  On failure nothing changed and @s is freed. */
static int apply_locked(struct agent_services *as, struct svc *s, unsigned int how, struct diag *diag)
{
	ssize_t at = svc_find(as, s->id);
	struct svc *old = at >= 0 ? as->svcs[at] : NULL;
	struct conflict c = { .self = s, .other_old = old };
	uint32_t saved_next = as->next_backend_id, saved_svc = as->next_svc_id;
	struct lowered *prev = NULL;
	int r;

	if (fe_keys(as, s, key_conflicts, &c)) {
		diag_add_text(diag, DIAG_ERROR, "frontends", "frontend-taken", NULL, "%s belongs to service \"%s\"",
			      c.text, c.other->id);
		r = -FLOWSDN_E_AGENT_EXISTS;
		goto fail;
	}
	if ((how & APPLY_KEEP_IDS) && old && old->svc_id != s->svc_id) {
		diag_add_text(diag, DIAG_ERROR, "svcId", "state", NULL, "service \"%s\" had svcId %u", s->id,
			      (unsigned int)old->svc_id);
		r = -FLOWSDN_E_AGENT_STATE;
		goto fail;
	}
	if (!old && as->n >= MAX_SERVICES) {
		diag_add_text(diag, DIAG_ERROR, "", "services", NULL, "at most %d services", MAX_SERVICES);
		r = -FLOWSDN_E_AGENT_REFUSED;
		goto fail;
	}
	r = index_grow(as, fe_key_count(as, s));
	if (r == 0 && old && old->from_state && !(how & (APPLY_PUBLISH | APPLY_KEEP_IDS)) && !(prev = calloc(1, sizeof(*prev))))
		r = -ENOMEM;
	if (r == 0 && !old)
		r = ids_grow(as);
	if (r == 0 && !old && as->n == as->cap) {
		size_t cap = as->cap ? as->cap * 2 : 64;
		struct svc **p = realloc(as->svcs, cap * sizeof(*p));

		if (!p)
			r = -ENOMEM;
		else {
			as->svcs = p;
			as->cap = cap;
		}
	}
	if (r < 0)
		goto fail;
	if (how & APPLY_KEEP_IDS) {
		/* a state record: its ids stand (checked by the reader) */
	} else if (old) {
		s->svc_id = old->svc_id;
	} else if (!s->svc_id) {
		s->svc_id = as->next_svc_id++;
	}
	if (!(how & APPLY_KEEP_IDS) && (!s->be || !s->be->ids[0] || old))
		assign_ids(as, s, old);
	r = lower(as, s, &s->low);
	if (r == 0 && (how & APPLY_PUBLISH))
		r = dp_publish(as, s, old ? &old->low : NULL);
	if (r < 0) {
		diag_add_text(diag, DIAG_ERROR, "", "datapath", NULL, "publishing service \"%s\": %s", s->id,
			      flowsdn_strerror(r));
		/* Put the old one back over what may be half written. */
		if (old && (how & APPLY_PUBLISH) && dp_publish(as, old, &s->low) < 0)
			pr_err("agent: service %s: the datapath may hold parts of the refused version", s->id);
		goto fail;
	}
	if (old) {
		if (how & APPLY_PUBLISH) {
			destroy_removed(as, old, s);
		} else {
			/* Start: the maps hold the last version read from the state. */
			s->ranges_stale = old->ranges_stale || old->n_ranges || old->n_denied;
			if (old->from_state && !(how & APPLY_KEEP_IDS)) {
				s->prev = prev;
				prev = NULL;
				*s->prev = old->low;
				memset(&old->low, 0, sizeof(old->low));
			} else if (!(how & APPLY_KEEP_IDS)) {
				s->prev = old->prev;
				old->prev = NULL;
			}
		}
		fe_keys(as, old, key_drop, old);
	}
	fe_keys(as, s, key_add, s);
	if (old) {
		s->pos = (size_t)at;
		as->svcs[at] = s;
		*id_slot(as, s->id, false) = s;
		svc_free(old);
	} else {
		struct svc **e = id_slot(as, s->id, true);

		if (!*e)
			as->ids_used++;
		*e = s;
		s->pos = as->n;
		as->svcs[as->n++] = s;
	}
	s->from_state = how & APPLY_KEEP_IDS;
	free(prev);
	if (how & APPLY_SAVE) {
		r = state_record(as, s, NULL);
		if (r < 0)
			diag_add_text(diag, DIAG_ERROR, "", "state", NULL, "saving the services: %s", strerror(-r));
	}
	return r;
fail:
	as->next_backend_id = saved_next;
	as->next_svc_id = saved_svc;
	free(prev);
	svc_free(s);
	return r;
}

static int parse_body(const char *body, size_t len, struct json_value **ret, struct diag *diag)
{
	struct json_error je = { 0 };
	int r = json_parse(body, len, NULL, ret, &je);

	if (r == -EBADMSG) {
		diag_add_json_error(diag, &je);
		return -FLOWSDN_E_AGENT_REFUSED;
	}
	return r;
}

int agent_services_put(struct agent_services *as, const char *id, const char *body, size_t len, struct json_writer *g,
		       struct diag *diag)
{
	struct json_value *root = NULL;
	struct check_ctx ctx;
	struct svc *s = NULL;
	int r;

	if (!as || !id || !body)
		return -EINVAL;
	diag_begin(diag, 0);
	if (!names_service_id_valid(id)) {
		diag_add_text(diag, DIAG_ERROR, "id", "service-id", NULL, "\"%.64s\" is not a service id (\"" NAMES_SERVICE_ID_PREFIX "\" and 32 lower-case hex digits)", id);
		return -FLOWSDN_E_AGENT_REFUSED;
	}
	r = parse_body(body, len, &root, diag);
	if (r < 0)
		return r;
	check_ctx_init(&ctx, diag);
	r = service_read(&ctx, root, id, &s);
	json_free(root);
	if (r == JSON_READ_REPORTED)
		return -FLOWSDN_E_AGENT_REFUSED;
	if (r < 0)
		return r;
	s->svc_id = 0; /* assigned by the agent, whatever the body said */
	for (size_t i = 0; i < s->n_be; i++)
		s->be[i].ids[0] = s->be[i].ids[1] = 0;
	pthread_mutex_lock(&as->lock);
	r = apply_locked(as, s, APPLY_PUBLISH | APPLY_SAVE, diag);
	if (r == 0)
		service_gen(g, s, GEN_API);
	pthread_mutex_unlock(&as->lock);
	return r;
}

int agent_services_put_many(struct agent_services *as, const char *const *ids, const char *const *bodies, size_t n,
			    int *ret_errs, size_t *ret_applied)
{
	struct diag *d = NULL;
	size_t applied = 0;
	int r = 0;

	if (!as || (n && (!ids || !bodies || !ret_errs)))
		return -EINVAL;
	if (diag_new(&d) < 0)
		return -ENOMEM;
	pthread_mutex_lock(&as->lock);
	for (size_t i = 0; i < n; i++) {
		struct json_value *root = NULL;
		struct check_ctx ctx;
		struct svc *sv = NULL;
		int e;

		diag_begin(d, 0);
		if (!ids[i] || !bodies[i] || !names_service_id_valid(ids[i])) {
			ret_errs[i] = -FLOWSDN_E_AGENT_REFUSED;
			continue;
		}
		e = parse_body(bodies[i], strlen(bodies[i]), &root, d);
		if (e == 0) {
			check_ctx_init(&ctx, d);
			e = service_read(&ctx, root, ids[i], &sv);
			json_free(root);
			if (e == JSON_READ_REPORTED)
				e = -FLOWSDN_E_AGENT_REFUSED;
		}
		if (e == 0) {
			sv->svc_id = 0;
			for (size_t b = 0; b < sv->n_be; b++)
				sv->be[b].ids[0] = sv->be[b].ids[1] = 0;
			e = apply_locked(as, sv, APPLY_PUBLISH, d);
		}
		if (e < 0) {
			const struct diag_entry *de = diag_first_error(d);

			pr_warn("agent: service %s refused: %s", ids[i], de ? de->message : flowsdn_strerror(e));
		}
		else
			applied++;
		ret_errs[i] = e;
	}
	/* One snapshot for the batch instead of one journal record each. */
	if (applied)
		r = state_save(as);
	pthread_mutex_unlock(&as->lock);
	diag_free(d);
	if (ret_applied)
		*ret_applied = applied;
	return r;
}

/* Takes service @at out of the table (and the datapath with @publish). */
static int delete_locked(struct agent_services *as, size_t at, bool publish, struct diag *diag)
{
	struct svc *s = as->svcs[at];
	int r = publish ? dp_remove(as, &s->low) : 0;

	if (r < 0) {
		diag_add_text(diag, DIAG_ERROR, "", "datapath", NULL, "removing service \"%s\": %s", s->id,
			      flowsdn_strerror(r));
		return r;
	}
	if (publish)
		destroy_removed(as, s, NULL);
	fe_keys(as, s, key_drop, s);
	*id_slot(as, s->id, false) = TOMB;
	svc_free(s);
	if (at != --as->n) {
		as->svcs[at] = as->svcs[as->n];
		as->svcs[at]->pos = at;
	}
	return 0;
}

int agent_services_delete(struct agent_services *as, const char *id, struct diag *diag)
{
	ssize_t at;
	int r = 0;

	if (!as || !id)
		return -EINVAL;
	pthread_mutex_lock(&as->lock);
	at = svc_find(as, id);
	if (at < 0) {
		r = -FLOWSDN_E_AGENT_NOT_FOUND;
		diag_add_text(diag, DIAG_ERROR, "id", "not-found", NULL, "no service \"%.64s\"", id);
		goto out;
	}
	r = delete_locked(as, (size_t)at, true, diag);
	if (r == 0)
		r = state_record(as, NULL, id);
out:
	pthread_mutex_unlock(&as->lock);
	return r;
}

int agent_services_get(struct agent_services *as, const char *id, struct json_writer *g)
{
	int r = 0;

	if (!as || !g)
		return -EINVAL;
	pthread_mutex_lock(&as->lock);
	if (id) {
		ssize_t at = svc_find(as, id);

		if (at < 0)
			r = -FLOWSDN_E_AGENT_NOT_FOUND;
		else
			service_gen(g, as->svcs[at], GEN_API);
	} else {
		jw_object_open(g);
		jw_key(g, "services");
		jw_array_open(g);
		for (size_t i = 0; i < as->n; i++)
			service_gen(g, as->svcs[i], GEN_API);
		jw_array_close(g);
		jw_object_close(g);
	}
	pthread_mutex_unlock(&as->lock);
	return r;
}

size_t agent_services_count(struct agent_services *as)
{
	size_t n;

	pthread_mutex_lock(&as->lock);
	n = as->n;
	pthread_mutex_unlock(&as->lock);
	return n;
}

/* ------------------------------------------------------------ start */

/* A service of the state (snapshot or journal record, at @ctx's path)
 * into the table with its ids, unpublished.  JSON_READ_REPORTED or
 * -FLOWSDN_E_AGENT_STATE for a service that breaks the state's rules. */
static int state_service(struct agent_services *as, struct check_ctx *ctx, const struct json_value *v, bool replace,
			 struct diag *d)
{
	struct svc *s = NULL;
	int r = service_read(ctx, v, NULL, &s);

	if (r < 0)
		return r;
	for (size_t j = 0; j < s->n_be; j++)
		if (!s->be[j].ids[0] || !s->be[j].ids[1])
			r = JSON_READ_REPORTED;
	if (!s->svc_id || s->svc_id >= as->next_svc_id || (!replace && svc_find(as, s->id) >= 0))
		r = JSON_READ_REPORTED;
	if (r < 0) {
		svc_free(s);
		return r;
	}
	return apply_locked(as, s, APPLY_KEEP_IDS, d);
}

static void report(const char *what, size_t i, const struct diag *d)
{
	const struct diag_entry *e = diag_first_error(d);

	pr_err("agent: %s[%zu]: %s%s%s", what, i, e ? e->path : "", e ? ": " : "", e ? e->message : "damaged");
}

/* Every service of the state's JSON array @arr (each with its "id", its
 * svcId and backend ids kept).  Errors name the entry under @what.
 * Nothing is published: agent_services_new() does it in one batch. */
static int apply_list(struct agent_services *as, const struct json_value *arr, const char *what)
{
	struct diag *d = NULL;
	int r = 0;

	if (diag_new(&d) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < arr->u.array.n && r == 0; i++) {
		struct check_ctx ctx;

		diag_reset(d);
		check_ctx_init(&ctx, d);
		json_path_push_key(&ctx.path, what);
		json_path_push_index(&ctx.path, i);
		r = state_service(as, &ctx, arr->u.array.items[i], false, d);
		if (r < 0) {
			report(what, i, d);
			r = -FLOWSDN_E_AGENT_STATE;
		}
	}
	diag_free(d);
	return r;
}

/* The configuration's services, read and checked by
 * agent_services_read_config(): copied into the table as they are, new
 * ones getting ids (-FLOWSDN_E_AGENT_CONFIG when one cannot be taken in,
 * e.g. a frontend of a service of the state).  Nothing is published. */
static int apply_config(struct agent_services *as, const struct agent_svc_list *l)
{
	struct diag *d = NULL;
	int r = 0;

	if (diag_new(&d) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < l->n && r == 0; i++) {
		struct svc *s = svc_dup(l->v[i]);

		if (!s) {
			r = -ENOMEM;
			break;
		}
		diag_reset(d);
		/* The agent assigns the ids (the reader takes them for the state). */
		s->svc_id = 0;
		for (size_t j = 0; j < s->n_be; j++)
			s->be[j].ids[0] = s->be[j].ids[1] = 0;
		r = apply_locked(as, s, 0, d);
		if (r < 0) {
			report("services", i, d);
			if (r != -ENOMEM)
				r = -FLOWSDN_E_AGENT_CONFIG;
		}
	}
	diag_free(d);
	return r;
}

static int counters_read(const struct json_value *root, uint32_t *ret_svc, uint32_t *ret_be)
{
	uint64_t next_svc = 0, next_be = 0;

	if (json_get_uint64(json_get(root, "nextSvcId"), &next_svc) < 0 ||
	    json_get_uint64(json_get(root, "nextBackendId"), &next_be) < 0 || next_svc == 0 ||
	    next_svc > UINT32_MAX / SETS || next_be > UINT32_MAX)
		return -EBADMSG;
	*ret_svc = (uint32_t)next_svc;
	*ret_be = (uint32_t)next_be;
	return 0;
}

/* One journal record over the table (see state_record()). */
static int replay_record(const char *text, size_t len, void *userdata)
{
	struct agent_services *as = userdata;
	struct json_value *root = NULL;
	const struct json_value *put, *del;
	uint64_t seq = 0;
	uint32_t next_svc, next_be;
	struct diag *d = NULL;
	int r = -EBADMSG;

	if (json_parse(text, len, NULL, &root, NULL) < 0 || json_get_uint64(json_get(root, "seq"), &seq) < 0 ||
	    counters_read(root, &next_svc, &next_be) < 0)
		goto out;
	if (seq <= as->seq) {
		r = 0; /* in the snapshot already (a crash before the journal was emptied) */
		goto out;
	}
	put = json_get(root, "put");
	del = json_get(root, "delete");
	if (seq != as->seq + 1 || !put == !del || next_svc < as->next_svc_id || next_be < as->next_backend_id)
		goto out;
	as->next_svc_id = next_svc;
	as->next_backend_id = next_be;
	if (put) {
		struct check_ctx ctx;

		if (diag_new(&d) < 0) {
			r = -ENOMEM;
			goto out;
		}
		check_ctx_init(&ctx, d);
		json_path_push_key(&ctx.path, "put");
		r = state_service(as, &ctx, put, true, d) < 0 ? -EBADMSG : 0;
	} else {
		const char *id = json_string_value(del);
		ssize_t at = id ? svc_find(as, id) : -1;

		if (at >= 0)
			r = delete_locked(as, (size_t)at, false, NULL);
	}
	if (r == 0)
		as->seq = seq;
out:
	diag_free(d);
	json_free(root);
	return r;
}

/* Reads the snapshot, then replays the journal over it: *ret_changed
 * when the journal held changes.  -FLOWSDN_E_AGENT_STATE when either is
 * damaged (both kept as they are). */
static int state_load(struct agent_services *as, bool *ret_changed)
{
	_cleanup_free_ char *data = NULL;
	struct json_value *root = NULL;
	const struct json_value *list = NULL;
	uint64_t version = 0, seq = 0;
	size_t len, line = 0;
	bool torn = false;
	int r = util_read_file(as->state_path, MAX_STATE, &data, &len);

	if (r < 0 && r != -ENOENT) {
		pr_err("agent: %s: %s", as->state_path, util_read_strerror(r));
		return -FLOWSDN_E_AGENT_STATE;
	}
	if (r == 0) {
		/* "journalSeq" is absent from the files of agents before the journal. */
		if (json_parse(data, len, NULL, &root, NULL) < 0 ||
		    json_get_uint64(json_get(root, "version"), &version) < 0 || version != STATE_VERSION ||
		    counters_read(root, &as->next_svc_id, &as->next_backend_id) < 0 ||
		    (json_get(root, "journalSeq") && json_get_uint64(json_get(root, "journalSeq"), &seq) < 0) ||
		    !(list = json_get(root, "services")) || list->type != JSON_ARRAY) {
			pr_err("agent: %s is damaged (kept as it is)", as->state_path);
			json_free(root);
			return -FLOWSDN_E_AGENT_STATE;
		}
		as->seq = seq;
		as->snapshot_size = len;
		r = apply_list(as, list, "services");
		json_free(root);
		if (r == 0 && as->next_backend_id == 0 && as->n)
			r = -FLOWSDN_E_AGENT_STATE;
		if (r < 0)
			return r;
	}
	seq = as->seq;
	r = journal_read(as->journal, MAX_STATE, replay_record, as, &torn, &line);
	if (torn)
		pr_warn("agent: %s: a torn last record (a change never acknowledged) cut off", as->journal_path);
	if (r < 0) {
		if (line)
			pr_err("agent: %s: record %zu is damaged (kept as it is)", as->journal_path, line);
		else
			pr_err("agent: %s: %s", as->journal_path, strerror(-r));
		return -FLOWSDN_E_AGENT_STATE;
	}
	*ret_changed = as->seq != seq;
	return 0;
}

/* Everything the table holds into the datapath: source ranges first (a
 * denied source is never let in meanwhile), then every service in one
 * batched publish over what an earlier version may have left. */
static int publish_all(struct agent_services *as)
{
	_cleanup_free_ const struct flowsdn_lb_service **v = NULL, **o = NULL;
	int r = 0;

	if (!as->dp)
		return 0;
	for (size_t i = 0; i < as->n && r == 0; i++) {
		struct svc *s = as->svcs[i];

		if (s->n_ranges || s->n_denied || s->ranges_stale)
			r = dp_srcranges(as, &s->low, s);
		if (r == 0 && s->prev && s->ranges_stale)
			r = dp_srcranges(as, s->prev, NULL);
	}
	if (r < 0 || !as->n)
		return r;
	if (!as->ops->dp_services_publish) {
		for (size_t i = 0; i < as->n && r == 0 && as->ops->dp_service_publish; i++)
			r = as->ops->dp_service_publish(as->ctx, as->dp, &as->svcs[i]->low.svc,
							as->svcs[i]->prev ? &as->svcs[i]->prev->svc : NULL);
		return r;
	}
	v = calloc(as->n, sizeof(*v));
	o = calloc(as->n, sizeof(*o));
	if (!v || !o)
		return -ENOMEM;
	for (size_t i = 0; i < as->n; i++) {
		v[i] = &as->svcs[i]->low.svc;
		o[i] = as->svcs[i]->prev ? &as->svcs[i]->prev->svc : NULL;
	}
	return as->ops->dp_services_publish(as->ctx, as->dp, v, o, as->n);
}

void agent_services_free(struct agent_services *as)
{
	if (!as)
		return;
	for (size_t i = 0; i < as->n; i++)
		svc_free(as->svcs[i]);
	free(as->svcs);
	free(as->ids);
	free(as->index);
	free(as->state_path);
	free(as->journal_path);
	journal_free(as->journal);
	if (as->state_dfd >= 0)
		close(as->state_dfd);
	pthread_mutex_destroy(&as->lock);
	free(as);
}

/* The mount point of cgroup v2, from /proc/self/mountinfo. */
static int cgroup2_mount(char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char mnt[4096], *sep = strstr(line, " - ");

		if (!sep || strncmp(sep, " - cgroup2 ", 11) != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && strlen(mnt) < size) {
			snprintf(buf, size, "%s", mnt);
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

static int socklb_attach(struct agent_services *as, const char *want)
{
	char path[4096];
	int r;

	if (!as->dp || !want[0] || !as->ops->dp_socklb_attach)
		return 0;
	if (!strcmp(want, "auto")) {
		if (cgroup2_mount(path, sizeof(path)) < 0) {
			pr_warn("agent: no cgroup v2 mount: the socket load balancer is not attached");
			return 0;
		}
	} else {
		snprintf(path, sizeof(path), "%s", want);
	}
	r = as->ops->dp_socklb_attach(as->ctx, as->dp, path);
	if (r < 0)
		pr_err("agent: attaching the socket load balancer to %s: %s", path, flowsdn_strerror(r));
	else
		pr_info("agent: socket load balancer on %s", path);
	return r;
}

int agent_services_new(const struct agent_config *cfg, const struct agent_ops *ops, void *ctx,
		       struct flowsdn_datapath *dp, struct agent_services **ret)
{
	struct agent_services *as;
	bool changed = false;
	int r;

	if (!cfg || !ops || !ret)
		return -EINVAL;
	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	pthread_mutex_init(&as->lock, NULL);
	as->ops = ops;
	as->ctx = ctx;
	as->dp = dp;
	as->state_dfd = -1;
	as->next_svc_id = 1;
	as->next_backend_id = 1;
	memcpy(as->node_addrs, cfg->node_addrs, sizeof(as->node_addrs));
	as->n_node_addrs = cfg->n_node_addrs;
	if (asprintf(&as->state_path, "%s/" STATE_FILE, cfg->state_dir) < 0)
		as->state_path = NULL;
	if (asprintf(&as->journal_path, "%s/" JOURNAL_FILE, cfg->state_dir) < 0)
		as->journal_path = NULL;
	if (!as->state_path || !as->journal_path) {
		r = -ENOMEM;
		goto out;
	}
	r = util_mkdir_p(cfg->state_dir, 0700);
	if (r == 0) {
		as->state_dfd = open(cfg->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = as->state_dfd < 0 ? -errno : journal_open(as->state_dfd, JOURNAL_FILE, &as->journal);
	}
	if (r < 0) {
		pr_err("agent: %s: %s", as->journal_path, strerror(-r));
		goto out;
	}
	r = socklb_attach(as, cfg->socket_lb_cgroup);
	if (r == 0)
		r = state_load(as, &changed);
	if (r == 0 && cfg->services)
		r = apply_config(as, cfg->services);
	if (r == 0) {
		r = publish_all(as);
		if (r < 0)
			pr_err("agent: publishing the services: %s", flowsdn_strerror(r));
	}
	for (size_t i = 0; i < as->n; i++) {
		struct svc *s = as->svcs[i];

		if (s->prev)
			lowered_clear(s->prev);
		free(s->prev);
		s->prev = NULL;
		s->from_state = s->ranges_stale = false;
	}
	/* One snapshot for what the start changed: the configuration's
	 * services, the journal folded in. */
	if (r == 0 && (changed || cfg->services))
		r = state_save(as);
out:
	if (r < 0) {
		agent_services_free(as);
		return r;
	}
	*ret = as;
	return 0;
}
