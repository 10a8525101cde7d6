/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kubernetes rendering of a Flash spec (SPEC §3.3, §3.4): Deployment,
 * Service, NetworkPolicy and the /root PersistentVolumeClaim; public port
 * assignment; printing as YAML or as a v1 List in JSON.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <flash/policy.h>
#include <flash/spec.h>

#include "image-internal.h"
#include "internal.h"
#include "json.h"
#include "names.h"
#include "render-internal.h"

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

FLASH_API int flash_public_ports_assign(const struct flash_operator_config *config, const struct flash_spec *spec,
					const struct flash_public_port *previous, size_t n_previous,
					const uint16_t *taken, size_t n_taken,
					struct flash_public_port **ret_ports, size_t *ret_n)
{
	struct flash_public_port *out = NULL;
	size_t n;
	uint8_t *used = NULL;
	uint32_t span;
	int r = 0;

	if (!config || !spec || !ret_ports || !ret_n || (n_previous && !previous) || (n_taken && !taken))
		return -EINVAL;
	n = flash_spec_exposure_type(spec) == FLASH_SPEC_EXPOSURE_PUBLIC ? flash_spec_port_count(spec) : 0;
	if (n == 0) {
		*ret_ports = NULL;
		*ret_n = 0;
		return 0;
	}
	span = (uint32_t)config->port_last - config->port_first + 1;
	out = calloc(n, sizeof(*out));
	used = calloc(span, 1);
	if (!out || !used) {
		r = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < n_taken; i++)
		if (taken[i] >= config->port_first && taken[i] <= config->port_last)
			used[taken[i] - config->port_first] = 1;
	/* Pass 1: unchanged pairs keep their port. */
	for (size_t i = 0; i < n; i++) {
		const char *name = flash_spec_port_name(spec, i);
		const char *proto = flash_spec_protocol_name(flash_spec_port_protocol(spec, i));

		if (strlen(name) >= sizeof(out[i].name)) {
			r = -EINVAL;
			goto out_free;
		}
		snprintf(out[i].name, sizeof(out[i].name), "%s", name);
		snprintf(out[i].protocol, sizeof(out[i].protocol), "%s", proto);
		for (size_t j = 0; j < n_previous; j++) {
			uint16_t p = previous[j].port;

			if (render_port_pair_equal(&previous[j], proto, name) && p >= config->port_first &&
			    p <= config->port_last && !used[p - config->port_first]) {
				out[i].port = p;
				used[p - config->port_first] = 1;
				break;
			}
		}
	}
	/* Pass 2: new pairs take the lowest free port. */
	for (size_t i = 0, next = 0; i < n; i++) {
		if (out[i].port)
			continue;
		while (next < span && used[next])
			next++;
		if (next == span) {
			r = -FLASH_E_RENDER_PORTS_EXHAUSTED;
			goto out_free;
		}
		used[next] = 1;
		out[i].port = (uint16_t)(config->port_first + next);
	}
	*ret_ports = TAKE_PTR(out);
	*ret_n = n;
out_free:
	free(used);
	free(out);
	return r;
}

/* ------------------------------------------------------------ prefixes */

void kdoc_append_prefix(struct kdoc *arr, const struct flowsdn_prefix *p)
{
	char buf[FLOWSDN_PREFIX_STRLEN];

	if (flowsdn_prefix_format(p, buf, sizeof(buf)) < 0) {
		kdoc_append(arr, NULL);
		return;
	}
	kdoc_append_str(arr, buf);
}

struct plist {
	struct flowsdn_prefix *v;
	size_t n, cap;
	bool oom;
};

static void plist_add(struct plist *l, const struct flowsdn_prefix *p)
{
	if (l->oom)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct flowsdn_prefix *v = reallocarray(l->v, cap, sizeof(*v));

		if (!v) {
			l->oom = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *p;
}

static void plist_add_all(struct plist *l, const struct prefix_list *src)
{
	for (size_t i = 0; i < src->n; i++)
		plist_add(l, &src->v[i]);
}

static void plist_add_text(struct plist *l, const char *text)
{
	struct flowsdn_prefix p;

	if (flowsdn_prefix_parse(text, strlen(text), NULL, &p) == 0)
		plist_add(l, &p);
	else
		l->oom = true; /* a built-in constant that does not parse: fail loudly */
}

static int prefix_cmp(const void *a, const void *b)
{
	return flowsdn_prefix_compare(a, b);
}

/* Ranges no workload may reach or be reached from, whatever the spec
 * says: pod, service, LAN, HeteroNetwork, link-local, metadata and
 * infrastructure ranges. */
static void protected_ranges(const struct flash_operator_config *c, struct plist *l)
{
	plist_add_all(l, &c->pod_cidrs);
	plist_add_all(l, &c->service_cidrs);
	plist_add_all(l, &c->lan_cidrs);
	plist_add_all(l, &c->heteronetwork_cidrs);
	plist_add_all(l, &c->infrastructure_cidrs);
	plist_add_text(l, "169.254.0.0/16");
	plist_add_text(l, "fe80::/10");
	plist_add_text(l, "169.254.169.254/32");
	plist_add_text(l, "fd00:ec2::254/128");
}

static struct kdoc *prefix_string(const struct flowsdn_prefix *p)
{
	char buf[FLOWSDN_PREFIX_STRLEN];

	if (flowsdn_prefix_format(p, buf, sizeof(buf)) < 0)
		return NULL;
	return kdoc_string(buf);
}

/* Appends {ipBlock: {cidr, except}} to @peers for @cidr minus @excl:
 * except lists the excluded prefixes strictly inside @cidr, minimal
 * (none inside another) and sorted.  Nothing is appended when an excluded
 * prefix covers all of @cidr. */
static void append_ip_block(struct kdoc *peers, const struct flowsdn_prefix *cidr, const struct plist *excl)
{
	struct plist ex = { 0 };
	struct kdoc *block, *except;

	for (size_t i = 0; i < excl->n; i++) {
		const struct flowsdn_prefix *e = &excl->v[i];

		if (e->addr.family != cidr->addr.family)
			continue;
		if (flowsdn_prefix_contains(e, cidr))
			goto out;
		if (flowsdn_prefix_contains(cidr, e))
			plist_add(&ex, e);
	}
	if (ex.oom) {
		kdoc_append(peers, NULL);
		goto out;
	}
	if (ex.n)
		qsort(ex.v, ex.n, sizeof(*ex.v), prefix_cmp);
	block = kdoc_set_obj(kdoc_append_obj(peers), "ipBlock");
	kdoc_set(block, "cidr", prefix_string(cidr));
	except = kdoc_array();
	for (size_t i = 0; i < ex.n; i++) {
		bool covered = false;

		for (size_t j = 0; j < ex.n && !covered; j++)
			covered = j != i && flowsdn_prefix_contains(&ex.v[j], &ex.v[i]) &&
				  !(flowsdn_prefix_compare(&ex.v[j], &ex.v[i]) == 0 && j > i);
		if (!covered)
			kdoc_append_prefix(except, &ex.v[i]);
	}
	if (kdoc_len(except))
		kdoc_set(block, "except", except);
	else
		kdoc_free(except);
out:
	free(ex.v);
}

/* ------------------------------------------------------------ objects */

static void labels_into(struct kdoc *labels, const struct flash_render_opts *o, bool managed)
{
	kdoc_set_str(labels, FLASH_LABEL_NAME, o->name);
	if (managed)
		kdoc_set_str(labels, FLASH_LABEL_MANAGED_BY, FLASH_MANAGER);
	kdoc_set_str(labels, FLASH_LABEL_ORGANIZATION, o->organization_id);
	if (OPTS_GET(o, project_id, NULL))
		kdoc_set_str(labels, FLASH_LABEL_PROJECT, o->project_id);
	if (OPTS_GET(o, service_id, NULL))
		kdoc_set_str(labels, FLASH_LABEL_SERVICE, o->service_id);
}

static struct kdoc *object_new(const char *api_version, const char *kind, const char *name,
			       const struct flash_render_opts *o, struct kdoc **ret_spec)
{
	struct kdoc *obj = kdoc_object();
	struct kdoc *md;

	kdoc_set_str(obj, "apiVersion", api_version);
	kdoc_set_str(obj, "kind", kind);
	md = kdoc_set_obj(obj, "metadata");
	kdoc_set_str(md, "name", name);
	kdoc_set_str(md, "namespace", o->namespace_);
	labels_into(kdoc_set_obj(md, "labels"), o, true);
	if (OPTS_GET(o, uid, NULL)) {
		struct kdoc *ref = kdoc_append_obj(kdoc_set_arr(md, "ownerReferences"));

		kdoc_set_str(ref, "apiVersion", FLASH_GROUP "/" FLASH_VERSION);
		kdoc_set_str(ref, "kind", "FlashService");
		kdoc_set_str(ref, "name", o->name);
		kdoc_set_str(ref, "uid", o->uid);
		kdoc_set_bool(ref, "controller", true);
		kdoc_set_bool(ref, "blockOwnerDeletion", true);
	}
	*ret_spec = kdoc_set_obj(obj, "spec");
	return obj;
}

static const char *upper_protocol(enum flash_spec_protocol p)
{
	return p == FLASH_SPEC_PROTOCOL_UDP ? "UDP" : "TCP";
}

/* A quantity of bytes: whole GiB as "NGi", else whole MiB (rounded down). */
static struct kdoc *bytes_quantity(uint64_t bytes)
{
	if (bytes % GIB == 0)
		return kdoc_stringf("%" PRIu64 "Gi", bytes / GIB);
	return kdoc_stringf("%" PRIu64 "Mi", bytes / MIB);
}

static void resources_into(struct kdoc *res, const struct flash_spec *spec, const char *which)
{
	struct kdoc *r = kdoc_set_obj(res, which);

	kdoc_set(r, "cpu", kdoc_stringf("%" PRIu32 "m", flash_spec_cpu_millis(spec)));
	kdoc_set(r, "memory", kdoc_stringf("%" PRIu32 "Mi", flash_spec_memory_mib(spec)));
	kdoc_set(r, "ephemeral-storage", kdoc_stringf("%" PRIu32 "Gi", flash_spec_ephemeral_storage_gib(spec)));
	if (flash_spec_gpu_type(spec))
		kdoc_set(r, "nvidia.com/gpu", kdoc_stringf("%" PRIu32, flash_spec_gpu_count(spec)));
}

/* repository@digest for @image (tag and any old digest dropped). */
static char *pinned_image(const char *image, const char *digest)
{
	size_t len = strcspn(image, "@");
	const char *slash = memrchr(image, '/', len);
	const char *colon = memchr(slash ? slash : image, ':', len - (size_t)((slash ? slash : image) - image));
	char *out = NULL;

	if (colon)
		len = (size_t)(colon - image);
	if (asprintf(&out, "%.*s@%s", (int)len, image, digest) < 0)
		return NULL;
	return out;
}

static void node_selector_into(struct kdoc *pod, const struct flash_spec *spec, const struct flash_operator_config *c)
{
	bool gpu = flash_spec_gpu_type(spec) != NULL;
	bool direct = flash_spec_exposure_type(spec) == FLASH_SPEC_EXPOSURE_PUBLIC &&
		      flash_spec_traffic_mode(spec) == FLASH_SPEC_TRAFFIC_DIRECT;
	struct kdoc *sel;

	if (!gpu && !(direct && c->public_node_labels.n))
		return;
	sel = kdoc_set_obj(pod, "nodeSelector");
	if (gpu)
		kdoc_set_str(sel, c->gpu_node_label, flash_spec_gpu_type(spec));
	if (direct)
		for (size_t i = 0; i < c->public_node_labels.n; i++)
			kdoc_set_str(sel, c->public_node_labels.v[i].key, c->public_node_labels.v[i].value);
}

/* Autoscaling renders a HorizontalPodAutoscaler; replicas 0 (stopped)
 * keeps the Deployment at 0 instead (an HPA never scales from 0). */
static bool autoscaled(const struct flash_spec *spec)
{
	return flash_spec_has_autoscaling(spec) && flash_spec_replicas(spec) != 0;
}

static struct kdoc *render_hpa(const struct flash_spec *spec, const struct flash_render_opts *o)
{
	struct kdoc *sp = NULL;
	struct kdoc *hpa = object_new("autoscaling/v2", "HorizontalPodAutoscaler", o->name, o, &sp);
	struct kdoc *ref = kdoc_set_obj(sp, "scaleTargetRef"), *m, *res, *target;

	kdoc_set_str(ref, "apiVersion", "apps/v1");
	kdoc_set_str(ref, "kind", "Deployment");
	kdoc_set_str(ref, "name", o->name);
	kdoc_set_int(sp, "minReplicas", flash_spec_autoscaling_min_replicas(spec));
	kdoc_set_int(sp, "maxReplicas", flash_spec_autoscaling_max_replicas(spec));
	m = kdoc_append_obj(kdoc_set_arr(sp, "metrics"));
	kdoc_set_str(m, "type", "Resource");
	res = kdoc_set_obj(m, "resource");
	kdoc_set_str(res, "name", "cpu");
	target = kdoc_set_obj(res, "target");
	kdoc_set_str(target, "type", "Utilization");
	kdoc_set_int(target, "averageUtilization", flash_spec_autoscaling_target_cpu_percent(spec));
	return hpa;
}

/* The Service port of the spec's port named @name: the public port when
 * exposed publicly, else the container port; 0 when there is none. */
static uint16_t service_port_of(const struct flash_spec *spec, const struct flash_render_opts *o, const char *name)
{
	for (size_t i = 0; i < flash_spec_port_count(spec); i++) {
		if (strcmp(flash_spec_port_name(spec, i), name) != 0)
			continue;
		if (flash_spec_exposure_type(spec) != FLASH_SPEC_EXPOSURE_PUBLIC)
			return flash_spec_port_container_port(spec, i);
		for (size_t j = 0; j < OPTS_GET(o, n_public_ports, 0); j++)
			if (render_port_pair_equal(&o->public_ports[j],
						   flash_spec_protocol_name(flash_spec_port_protocol(spec, i)), name))
				return o->public_ports[j].port;
	}
	return 0;
}

static int add_object(struct flash_render *rd, struct kdoc *obj);

/* One HTTPRoute per port the domains name (NAME-PORTNAME), attached to
 * the configured Gateway, its hostnames routed to that port of the
 * Service.  Appended to @rd in domain order of first use. */
static int render_routes(struct flash_render *rd, const struct flash_spec *spec, const struct flash_operator_config *c,
			 const struct flash_render_opts *o, struct diag *diag)
{
	size_t n = flash_spec_domain_count(spec);

	if (n == 0)
		return 0;
	if (!c->gateway_name)
		return render_diag_fail(diag, -FLASH_E_RENDER_CONFIG, "gateway.name",
					"domains need the Gateway their HTTPRoutes attach to (gateway.name)");
	for (size_t i = 0; i < n; i++) {
		const char *port = flash_spec_domain_port(spec, i);
		struct kdoc *sp = NULL, *route, *parent, *hosts, *backend;
		bool seen = false;
		uint16_t number;
		char *name = NULL;
		int r;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(flash_spec_domain_port(spec, j), port) == 0;
		if (seen)
			continue;
		number = service_port_of(spec, o, port);
		if (!number)
			return render_diag_fail(diag, -FLASH_E_RENDER_PORTS_EXHAUSTED, "domains",
						"port %s of domain %s has no Service port", port, flash_spec_domain_host(spec, i));
		if (asprintf(&name, "%s-%s", o->name, port) < 0)
			return -ENOMEM;
		route = object_new("gateway.networking.k8s.io/v1", "HTTPRoute", name, o, &sp);
		free(name);
		parent = kdoc_append_obj(kdoc_set_arr(sp, "parentRefs"));
		kdoc_set_str(parent, "group", "gateway.networking.k8s.io");
		kdoc_set_str(parent, "kind", "Gateway");
		kdoc_set_str(parent, "name", c->gateway_name);
		if (c->gateway_namespace)
			kdoc_set_str(parent, "namespace", c->gateway_namespace);
		if (c->gateway_section)
			kdoc_set_str(parent, "sectionName", c->gateway_section);
		hosts = kdoc_set_arr(sp, "hostnames");
		for (size_t j = i; j < n; j++)
			if (strcmp(flash_spec_domain_port(spec, j), port) == 0)
				kdoc_append_str(hosts, flash_spec_domain_host(spec, j));
		backend = kdoc_append_obj(kdoc_set_arr(kdoc_append_obj(kdoc_set_arr(sp, "rules")), "backendRefs"));
		kdoc_set_str(backend, "group", "");
		kdoc_set_str(backend, "kind", "Service");
		kdoc_set_str(backend, "name", o->name);
		kdoc_set_int(backend, "port", number);
		r = add_object(rd, route);
		if (r < 0)
			return r;
	}
	return 0;
}

static struct kdoc *render_deployment(const struct flash_spec *spec, const struct flash_operator_config *c,
				      const struct flash_render_opts *o, const char *image, const char *root_claim)
{
	struct kdoc *sp = NULL;
	struct kdoc *dep = object_new("apps/v1", "Deployment", o->name, o, &sp);
	struct kdoc *strategy, *tmpl, *pod, *ctr, *res, *sc, *mounts, *vols, *list;
	const char *service_id = OPTS_GET(o, service_id, NULL);

	/* An autoscaled Deployment leaves replicas to its HPA (an apply
	 * that names them would fight it). */
	if (!autoscaled(spec))
		kdoc_set_int(sp, "replicas", flash_spec_replicas(spec));
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(sp, "selector"), "matchLabels"), FLASH_LABEL_NAME, o->name);
	/* The replacement starts before the old Pod goes (RWX /root allows
	 * both to mount it). */
	strategy = kdoc_set_obj(sp, "strategy");
	kdoc_set_str(strategy, "type", "RollingUpdate");
	kdoc_set_int(kdoc_set_obj(strategy, "rollingUpdate"), "maxSurge", 1);
	kdoc_set_int(kdoc_get(strategy, "rollingUpdate"), "maxUnavailable", 0);
	tmpl = kdoc_set_obj(sp, "template");
	labels_into(kdoc_set_obj(kdoc_set_obj(tmpl, "metadata"), "labels"), o, false);
	pod = kdoc_set_obj(tmpl, "spec");
	kdoc_set_str(pod, "runtimeClassName", flash_spec_gpu_type(spec) ? c->runtime_gpu : c->runtime_cpu);
	kdoc_set_bool(pod, "automountServiceAccountToken", false);
	kdoc_set_bool(pod, "enableServiceLinks", false);
	kdoc_set_bool(pod, "hostNetwork", false);
	kdoc_set_bool(pod, "hostPID", false);
	kdoc_set_bool(pod, "hostIPC", false);
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(pod, "securityContext"), "seccompProfile"), "type", "RuntimeDefault");
	node_selector_into(pod, spec, c);

	ctr = kdoc_append_obj(kdoc_set_arr(pod, "containers"));
	kdoc_set_str(ctr, "name", "app");
	kdoc_set_str(ctr, "image", image);
	if (flash_spec_command_count(spec)) {
		list = kdoc_set_arr(ctr, "command");
		for (size_t i = 0; i < flash_spec_command_count(spec); i++)
			kdoc_append_str(list, flash_spec_command(spec, i));
	}
	if (flash_spec_args_count(spec)) {
		list = kdoc_set_arr(ctr, "args");
		for (size_t i = 0; i < flash_spec_args_count(spec); i++)
			kdoc_append_str(list, flash_spec_arg(spec, i));
	}
	if (flash_spec_env_count(spec)) {
		list = kdoc_set_arr(ctr, "env");
		for (size_t i = 0; i < flash_spec_env_count(spec); i++) {
			struct kdoc *e = kdoc_append_obj(list);

			kdoc_set_str(e, "name", flash_spec_env_key(spec, i));
			kdoc_set_str(e, "value", flash_spec_env_value(spec, i));
		}
	}
	if (flash_spec_port_count(spec)) {
		list = kdoc_set_arr(ctr, "ports");
		for (size_t i = 0; i < flash_spec_port_count(spec); i++) {
			struct kdoc *p = kdoc_append_obj(list);

			kdoc_set_str(p, "name", flash_spec_port_name(spec, i));
			kdoc_set_int(p, "containerPort", flash_spec_port_container_port(spec, i));
			kdoc_set_str(p, "protocol", upper_protocol(flash_spec_port_protocol(spec, i)));
		}
	}
	/* Guaranteed QoS: requests equal limits. */
	res = kdoc_set_obj(ctr, "resources");
	resources_into(res, spec, "requests");
	resources_into(res, spec, "limits");
	/* Container root as the image expects it (Web Shell sudo), inside
	 * the sandbox runtime; never privileged, and no capability at all,
	 * as the single-node runtime runs it (empty capability sets): the
	 * Pod passes the Pod Security "baseline" standard, not "restricted"
	 * (which refuses root). */
	sc = kdoc_set_obj(ctr, "securityContext");
	kdoc_set_bool(sc, "privileged", false);
	kdoc_set_bool(sc, "allowPrivilegeEscalation", false);
	kdoc_set_int(sc, "runAsUser", 0);
	kdoc_append_str(kdoc_set_arr(kdoc_set_obj(sc, "capabilities"), "drop"), "ALL");

	mounts = kdoc_array();
	vols = kdoc_array();
	if (root_claim) {
		struct kdoc *m = kdoc_append_obj(mounts), *v = kdoc_append_obj(vols);

		kdoc_set_str(m, "name", "root");
		kdoc_set_str(m, "mountPath", "/root");
		kdoc_set_str(v, "name", "root");
		kdoc_set_str(kdoc_set_obj(v, "persistentVolumeClaim"), "claimName", root_claim);
	}
	for (size_t i = 0; service_id && i < c->n_admin_mounts; i++) {
		const struct admin_mount *am = &c->admin_mounts[i];
		const struct admin_claim *ac = NULL;
		struct kdoc *m, *v, *pvc;
		bool have_volume = false;

		if (strcmp(am->service_instance_id, service_id) != 0)
			continue;
		for (size_t j = 0; j < c->n_admin_claims && !ac; j++)
			if (strcmp(c->admin_claims[j].name, am->claim) == 0)
				ac = &c->admin_claims[j];
		if (!ac) {
			kdoc_append(mounts, NULL);
			break;
		}
		m = kdoc_append_obj(mounts);
		kdoc_set_str(m, "name", ac->name);
		kdoc_set_str(m, "mountPath", am->mount_path);
		if (am->read_only || ac->read_only)
			kdoc_set_bool(m, "readOnly", true);
		/* One volume per claim, however many mounts use it. */
		for (size_t j = 0; j < i && !have_volume; j++)
			have_volume = strcmp(c->admin_mounts[j].service_instance_id, service_id) == 0 &&
				      strcmp(c->admin_mounts[j].claim, am->claim) == 0;
		if (have_volume)
			continue;
		v = kdoc_append_obj(vols);
		kdoc_set_str(v, "name", ac->name);
		pvc = kdoc_set_obj(v, "persistentVolumeClaim");
		kdoc_set_str(pvc, "claimName", ac->claim_name);
		if (ac->read_only)
			kdoc_set_bool(pvc, "readOnly", true);
	}
	if (kdoc_len(mounts))
		kdoc_set(ctr, "volumeMounts", mounts);
	else
		kdoc_free(mounts);
	if (kdoc_len(vols))
		kdoc_set(pod, "volumes", vols);
	else
		kdoc_free(vols);
	return dep;
}

static struct kdoc *render_service(const struct flash_spec *spec, const struct flash_operator_config *c,
				   const struct flash_render_opts *o, struct diag *diag, int *ret_err)
{
	struct kdoc *sp = NULL;
	struct kdoc *svc = object_new("v1", "Service", o->name, o, &sp);
	bool public = flash_spec_exposure_type(spec) == FLASH_SPEC_EXPOSURE_PUBLIC;
	struct kdoc *ports;

	*ret_err = 0;
	if (public) {
		kdoc_set_str(sp, "type", "LoadBalancer");
		kdoc_set_str(sp, "loadBalancerClass", c->load_balancer_class);
		kdoc_set_str(sp, "externalTrafficPolicy",
			     flash_spec_traffic_mode(spec) == FLASH_SPEC_TRAFFIC_DIRECT ? "Local" : "Cluster");
	} else {
		kdoc_set_str(sp, "type", "ClusterIP");
	}
	kdoc_set_str(kdoc_set_obj(sp, "selector"), FLASH_LABEL_NAME, o->name);
	ports = kdoc_set_arr(sp, "ports");
	for (size_t i = 0; i < flash_spec_port_count(spec); i++) {
		const char *name = flash_spec_port_name(spec, i);
		enum flash_spec_protocol proto = flash_spec_port_protocol(spec, i);
		uint16_t cport = flash_spec_port_container_port(spec, i);
		struct kdoc *p = kdoc_append_obj(ports);
		uint16_t port = cport;

		if (public) {
			const struct flash_public_port *pp = NULL;

			for (size_t j = 0; j < OPTS_GET(o, n_public_ports, 0) && !pp; j++)
				if (render_port_pair_equal(&o->public_ports[j], flash_spec_protocol_name(proto), name))
					pp = &o->public_ports[j];
			if (!pp) {
				*ret_err = render_diag_fail(diag, -FLASH_E_RENDER_PORTS_EXHAUSTED, "ports",
						     "port %s/%s has no public port assigned", flash_spec_protocol_name(proto),
						     name);
				break;
			}
			port = pp->port;
		}
		kdoc_set_str(p, "name", name);
		kdoc_set_str(p, "protocol", upper_protocol(proto));
		kdoc_set_int(p, "port", port);
		kdoc_set_int(p, "targetPort", cport);
	}
	if (public && flash_spec_cidr_count(spec, FLASH_SPEC_ALLOWED_SOURCES)) {
		struct kdoc *ranges = kdoc_set_arr(sp, "loadBalancerSourceRanges");

		for (size_t i = 0; i < flash_spec_cidr_count(spec, FLASH_SPEC_ALLOWED_SOURCES); i++)
			kdoc_append_prefix(ranges, flash_spec_cidr(spec, FLASH_SPEC_ALLOWED_SOURCES, i));
	}
	return svc;
}

static void append_port_list(struct kdoc *rule, const struct flash_spec *spec)
{
	struct kdoc *ports = kdoc_set_arr(rule, "ports");

	for (size_t i = 0; i < flash_spec_port_count(spec); i++) {
		struct kdoc *p = kdoc_append_obj(ports);

		kdoc_set_str(p, "protocol", upper_protocol(flash_spec_port_protocol(spec, i)));
		kdoc_set_int(p, "port", flash_spec_port_container_port(spec, i));
	}
}

/* The same-organization grant: Pods with the organization label in a
 * namespace with the organization label, in ONE peer (both selectors must
 * match), so that a label a tenant puts on its own Pods never opens
 * another tenant: namespace labels are the operator's (tenant namespaces
 * are created labelled, flash_render_namespace()). */
static void append_same_org_peer(struct kdoc *peers, const struct flash_render_opts *o)
{
	struct kdoc *peer = kdoc_append_obj(peers);

	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(peer, "namespaceSelector"), "matchLabels"), FLASH_LABEL_ORGANIZATION,
		     o->organization_id);
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(peer, "podSelector"), "matchLabels"), FLASH_LABEL_ORGANIZATION,
		     o->organization_id);
}

/* Appends {to|from: peers, ports?} to @rules unless @peers is empty (an
 * empty peer list would mean "everyone"). */
static void append_rule(struct kdoc *rules, const char *dir, struct kdoc *peers, const struct flash_spec *ports_of)
{
	struct kdoc *rule;

	if (!kdoc_len(peers)) {
		if (kdoc_failed(peers))
			kdoc_append(rules, NULL);
		kdoc_free(peers);
		return;
	}
	rule = kdoc_append_obj(rules);
	kdoc_set(rule, dir, peers);
	if (ports_of)
		append_port_list(rule, ports_of);
}

static struct kdoc *render_network_policy(const struct flash_spec *spec, const struct flash_operator_config *c,
					  const struct flash_render_opts *o)
{
	struct kdoc *sp = NULL;
	struct kdoc *np = object_new("networking.k8s.io/v1", "NetworkPolicy", o->name, o, &sp);
	struct kdoc *types, *ingress, *egress, *peers, *dns, *dns_ports, *p;
	struct plist prot = { 0 }, excl = { 0 }, world = { 0 };
	bool same_org = flash_spec_egress_allow_same_organization(spec);

	protected_ranges(c, &prot);
	plist_add_text(&world, "0.0.0.0/0");
	plist_add_text(&world, "::/0");
	if (prot.oom || world.oom) {
		kdoc_set(sp, "podSelector", NULL);
		goto out;
	}
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(sp, "podSelector"), "matchLabels"), FLASH_LABEL_NAME, o->name);
	types = kdoc_set_arr(sp, "policyTypes");
	kdoc_append_str(types, "Ingress");
	kdoc_append_str(types, "Egress");

	/* Ingress: declared ports only.  Public: from the allowed sources
	 * (every public source when none is listed) minus the denied ones
	 * and the protected ranges.  Same-organization Pods with the grant. */
	ingress = kdoc_set_arr(sp, "ingress");
	if (flash_spec_port_count(spec)) {
		if (flash_spec_exposure_type(spec) == FLASH_SPEC_EXPOSURE_PUBLIC) {
			size_t n_allowed = flash_spec_cidr_count(spec, FLASH_SPEC_ALLOWED_SOURCES);

			plist_add_all(&excl, &(struct prefix_list){ prot.v, prot.n });
			for (size_t i = 0; i < flash_spec_cidr_count(spec, FLASH_SPEC_DENIED_SOURCES); i++)
				plist_add(&excl, flash_spec_cidr(spec, FLASH_SPEC_DENIED_SOURCES, i));
			peers = kdoc_array();
			if (excl.oom)
				kdoc_append(peers, NULL);
			for (size_t i = 0; i < (n_allowed ? n_allowed : world.n); i++)
				append_ip_block(peers, n_allowed ? flash_spec_cidr(spec, FLASH_SPEC_ALLOWED_SOURCES, i)
								 : &world.v[i], &excl);
			append_rule(ingress, "from", peers, spec);
		}
		if (same_org) {
			peers = kdoc_array();
			append_same_org_peer(peers, o);
			append_rule(ingress, "from", peers, spec);
		}
	}

	/* Egress: DNS to the cluster DNS first, then the mode. */
	egress = kdoc_set_arr(sp, "egress");
	peers = kdoc_array();
	p = kdoc_append_obj(peers);
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(p, "namespaceSelector"), "matchLabels"), "kubernetes.io/metadata.name",
		     c->dns_namespace);
	dns = kdoc_set_obj(kdoc_set_obj(p, "podSelector"), "matchLabels");
	for (size_t i = 0; i < c->dns_pod_labels.n; i++)
		kdoc_set_str(dns, c->dns_pod_labels.v[i].key, c->dns_pod_labels.v[i].value);
	for (size_t i = 0; i < c->dns_addresses.n; i++)
		kdoc_set(kdoc_set_obj(kdoc_append_obj(peers), "ipBlock"), "cidr", prefix_string(&c->dns_addresses.v[i]));
	p = kdoc_append_obj(egress);
	kdoc_set(p, "to", peers);
	dns_ports = kdoc_set_arr(p, "ports");
	for (size_t i = 0; i < 2; i++) {
		struct kdoc *dp = kdoc_append_obj(dns_ports);

		kdoc_set_str(dp, "protocol", i == 0 ? "UDP" : "TCP");
		kdoc_set_int(dp, "port", 53);
	}
	excl.n = 0;
	plist_add_all(&excl, &(struct prefix_list){ prot.v, prot.n });
	for (size_t i = 0; i < flash_spec_cidr_count(spec, FLASH_SPEC_DENIED_DESTINATIONS); i++)
		plist_add(&excl, flash_spec_cidr(spec, FLASH_SPEC_DENIED_DESTINATIONS, i));
	peers = kdoc_array();
	if (excl.oom)
		kdoc_append(peers, NULL);
	switch (flash_spec_egress_mode(spec)) {
	case FLASH_SPEC_EGRESS_DISABLED:
		break;
	case FLASH_SPEC_EGRESS_RESTRICTED:
		for (size_t i = 0; i < flash_spec_cidr_count(spec, FLASH_SPEC_ALLOWED_DESTINATIONS); i++)
			append_ip_block(peers, flash_spec_cidr(spec, FLASH_SPEC_ALLOWED_DESTINATIONS, i), &excl);
		break;
	case FLASH_SPEC_EGRESS_INTERNET:
		for (size_t i = 0; i < world.n; i++)
			append_ip_block(peers, &world.v[i], &excl);
		break;
	}
	append_rule(egress, "to", peers, NULL);
	if (same_org) {
		peers = kdoc_array();
		append_same_org_peer(peers, o);
		append_rule(egress, "to", peers, NULL);
	}
out:
	free(prot.v);
	free(excl.v);
	free(world.v);
	return np;
}

static struct kdoc *render_pvc(const struct flash_operator_config *c, const struct flash_render_opts *o,
			       const char *claim, uint64_t bytes)
{
	struct kdoc *sp = NULL;
	struct kdoc *pvc = object_new("v1", "PersistentVolumeClaim", claim, o, &sp);

	kdoc_append_str(kdoc_set_arr(sp, "accessModes"), "ReadWriteMany");
	if (c->storage_class)
		kdoc_set_str(sp, "storageClassName", c->storage_class);
	kdoc_set_str(sp, "volumeMode", "Filesystem");
	kdoc_set(kdoc_set_obj(kdoc_set_obj(sp, "resources"), "requests"), "storage", bytes_quantity(bytes));
	return pvc;
}

static int check_opts(const struct flash_render_opts *o, struct diag *diag)
{
	const char *s;

	if (!names_dns1035_label_valid(o->name) || strlen(o->name) > 52)
		return render_diag_fail(diag, -FLASH_E_RENDER_NAME, "name",
				 "\"%s\" is not a DNS-1035 label of at most 52 characters", o->name ? o->name : "");
	if (!names_dns_label_valid(o->namespace_))
		return render_diag_fail(diag, -FLASH_E_RENDER_NAME, "namespace", "\"%s\" is not a DNS label",
				 o->namespace_ ? o->namespace_ : "");
	if (!o->organization_id || !o->organization_id[0] || !names_label_value_valid(o->organization_id))
		return render_diag_fail(diag, -FLASH_E_RENDER_NAME, "organization_id",
				 "\"%s\" is not usable as a label value (1-63 of A-Z a-z 0-9 . _ -)",
				 o->organization_id ? o->organization_id : "");
	s = OPTS_GET(o, project_id, NULL);
	if (s && (!s[0] || !names_label_value_valid(s)))
		return render_diag_fail(diag, -FLASH_E_RENDER_NAME, "project_id", "\"%s\" is not usable as a label value", s);
	s = OPTS_GET(o, service_id, NULL);
	if (s && (!s[0] || !names_label_value_valid(s)))
		return render_diag_fail(diag, -FLASH_E_RENDER_NAME, "service_id", "\"%s\" is not usable as a label value", s);
	s = OPTS_GET(o, uid, NULL);
	if (s && (!s[0] || strlen(s) > 128 || strpbrk(s, " \t\n\"")))
		return render_diag_fail(diag, -FLASH_E_RENDER_NAME, "uid", "\"%s\" is not a uid", s);
	s = OPTS_GET(o, image_digest, NULL);
	if (s && !image_digest_valid(s))
		return render_diag_fail(diag, -FLASH_E_RENDER_NAME, "image_digest", "\"%s\" is not sha256:<64 lower-case hex>", s);
	if (OPTS_GET(o, n_public_ports, 0) && !o->public_ports)
		return -EINVAL;
	return 0;
}

static int add_object(struct flash_render *rd, struct kdoc *obj)
{
	struct kdoc **v;

	if (!obj)
		return -ENOMEM;
	if (kdoc_failed(obj)) {
		kdoc_free(obj);
		return -ENOMEM;
	}
	v = reallocarray(rd->objects, rd->n + 1, sizeof(*v));
	if (!v) {
		kdoc_free(obj);
		return -ENOMEM;
	}
	rd->objects = v;
	rd->objects[rd->n++] = obj;
	return 0;
}

FLASH_API int flash_render(const struct flash_spec *spec, const struct flash_operator_config *config,
			   const struct flash_render_opts *opts, struct flash_render **ret_render,
			   struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	struct flash_render *rd = NULL;
	_cleanup_free_ char *image = NULL;
	_cleanup_free_ char *claim = NULL;
	const char *digest;
	uint64_t budget, image_bytes;
	struct kdoc *svc;
	int r;

	if (!spec || !config || !opts || !ret_render || !OPTS_VALID(opts, flash_render_opts))
		return -EINVAL;
	diag_begin(diag, 0);
	r = check_opts(opts, diag);
	if (r < 0)
		return r;
	digest = OPTS_GET(opts, image_digest, NULL);
	image = digest ? pinned_image(flash_spec_image(spec), digest) : strdup(flash_spec_image(spec));
	if (!image)
		return -ENOMEM;
	budget = (uint64_t)flash_spec_ephemeral_storage_gib(spec) * GIB;
	image_bytes = OPTS_GET(opts, image_bytes, 0);
	if (image_bytes >= budget)
		return render_diag_fail(diag, -FLASH_E_RENDER_DISK, "ephemeral_storage_gib",
				 "the image takes %" PRIu64 " bytes of the %" PRIu32 " GiB disk budget", image_bytes,
				 flash_spec_ephemeral_storage_gib(spec));
	if (config->persistence) {
		if (budget - image_bytes < MIB)
			return render_diag_fail(diag, -FLASH_E_RENDER_DISK, "ephemeral_storage_gib",
					 "less than 1 MiB left for /root after the image");
		if (asprintf(&claim, "%s-root", opts->name) < 0) {
			claim = NULL;
			return -ENOMEM;
		}
	}
	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return -ENOMEM;
	if (claim && (r = add_object(rd, render_pvc(config, opts, claim, budget - image_bytes))) < 0)
		goto out_free;
	if ((r = add_object(rd, render_network_policy(spec, config, opts))) < 0)
		goto out_free;
	if ((r = add_object(rd, render_deployment(spec, config, opts, image, claim))) < 0)
		goto out_free;
	if (autoscaled(spec) && (r = add_object(rd, render_hpa(spec, opts))) < 0)
		goto out_free;
	/* No port, no Service: the workload keeps running without one. */
	if (flash_spec_port_count(spec)) {
		svc = render_service(spec, config, opts, diag, &r);
		if (r < 0) {
			kdoc_free(svc);
			goto out_free;
		}
		if ((r = add_object(rd, svc)) < 0)
			goto out_free;
	}
	if ((r = render_routes(rd, spec, config, opts, diag)) < 0)
		goto out_free;
	*ret_render = TAKE_PTR(rd);
	return 0;
out_free:
	flash_render_free(rd);
	return r;
}


FLASH_API int flash_render_namespace(const char *namespace_, const char *organization_id,
				     enum flash_render_format format, char **ret_text, size_t *ret_len)
{
	struct kdoc *ns, *labels;
	int r;

	if (!ret_text || (format != FLASH_RENDER_YAML && format != FLASH_RENDER_JSON))
		return -EINVAL;
	if (!namespace_ || !names_dns_label_valid(namespace_) || !organization_id || !organization_id[0] ||
	    !names_label_value_valid(organization_id))
		return -FLASH_E_RENDER_NAME;
	ns = kdoc_object();
	kdoc_set_str(ns, "apiVersion", "v1");
	kdoc_set_str(ns, "kind", "Namespace");
	kdoc_set_str(kdoc_set_obj(ns, "metadata"), "name", namespace_);
	labels = kdoc_set_obj(kdoc_get(ns, "metadata"), "labels");
	kdoc_set_str(labels, FLASH_LABEL_MANAGED_BY, FLASH_MANAGER);
	kdoc_set_str(labels, FLASH_LABEL_ORGANIZATION, organization_id);
	/* Workload containers run as root by design (the Web Shell's sudo),
	 * which "restricted" refuses; "baseline" still refuses privileged
	 * Pods, host namespaces, hostPath, host ports and added capabilities. */
	pod_security_labels(labels, "baseline");
	if (kdoc_failed(ns))
		r = -ENOMEM;
	else if (format == FLASH_RENDER_JSON)
		r = kdoc_to_json(ns, ret_text, ret_len);
	else
		r = render_print_docs(&ns, 1, FLASH_RENDER_YAML, ret_text, ret_len);
	kdoc_free(ns);
	return r;
}

/* ------------------------------------------------------------ isolation lowered onto flowsdn tiers */

/* An ipBlock peer list of @ranges minus @holes (each range that a hole
 * does not cover whole, with the holes inside it as except). */
static struct kdoc *ip_peers(const struct plist *ranges, const struct plist *holes)
{
	struct kdoc *peers = kdoc_array();

	if (ranges->oom || holes->oom)
		kdoc_append(peers, NULL);
	for (size_t i = 0; i < ranges->n; i++)
		append_ip_block(peers, &ranges->v[i], holes);
	return peers;
}

/* The holes of @holes that lie inside one of @ranges: they leave the
 * protect tier and go to the deny tier, under the exception's hole. */
static void holes_inside(const struct plist *ranges, const struct plist *holes, struct plist *out)
{
	for (size_t i = 0; i < holes->n; i++)
		for (size_t j = 0; j < ranges->n; j++)
			if (holes->v[i].addr.family == ranges->v[j].addr.family &&
			    flowsdn_prefix_contains(&ranges->v[j], &holes->v[i])) {
				plist_add(out, &holes->v[i]);
				break;
			}
}

static struct kdoc *tier_policy(const char *suffix, const char *tier, const struct flash_render_opts *o,
				struct kdoc **ret_ingress, struct kdoc **ret_egress)
{
	struct kdoc *sp = NULL, *np, *types;
	char *name = NULL;

	if (asprintf(&name, "%s-%s", o->name, suffix) < 0)
		return NULL;
	np = object_new("networking.k8s.io/v1", "NetworkPolicy", name, o, &sp);
	free(name);
	kdoc_set_str(kdoc_set_obj(kdoc_get(np, "metadata"), "annotations"), "flowsdn.io/tier", tier);
	kdoc_set_str(kdoc_set_obj(kdoc_set_obj(sp, "podSelector"), "matchLabels"), FLASH_LABEL_NAME, o->name);
	types = kdoc_set_arr(sp, "policyTypes");
	kdoc_append_str(types, "Ingress");
	kdoc_append_str(types, "Egress");
	*ret_ingress = kdoc_set_arr(sp, "ingress");
	*ret_egress = kdoc_set_arr(sp, "egress");
	return np;
}

FLASH_API int flash_render_isolation(const struct flash_spec *spec, const struct flash_operator_config *config,
				     const struct flash_isolation_opts *opts, struct flash_render **ret_render,
				     struct flash_diag *public_diag)
{
	struct diag *diag = flash__diag(public_diag);
	struct flash_render *rd = NULL;
	struct plist prot = { 0 }, dns = { 0 }, node = { 0 }, deny_in = { 0 }, deny_out = { 0 };
	struct kdoc *np, *in, *out, *rule, *ports;
	struct flash_render_opts ro;
	int r;

	if (!spec || !config || !opts || !ret_render || !OPTS_VALID(opts, flash_isolation_opts) ||
	    (OPTS_GET(opts, n_node_addresses, 0) && !opts->node_addresses) ||
	    (OPTS_GET(opts, n_dns_addresses, 0) && !opts->dns_addresses))
		return -EINVAL;
	diag_begin(diag, 0);
	ro = (struct flash_render_opts){
		.sz = sizeof(ro),
		.name = opts->name,
		.namespace_ = opts->namespace_,
		.organization_id = opts->organization_id,
		.project_id = OPTS_GET(opts, project_id, NULL),
		.service_id = OPTS_GET(opts, service_id, NULL),
	};
	r = check_opts(&ro, diag);
	if (r < 0)
		return r;

	/* The facts: protected ranges (operator configuration, owner policy,
	 * metadata and link-local), the node's own addresses, the DNS. */
	protected_ranges(config, &prot);
	for (size_t i = 0; i < flash_policy_protected_count(OPTS_GET(opts, policy, NULL)); i++)
		plist_add(&prot, flash_policy_protected(opts->policy, i));
	for (size_t i = 0; i < OPTS_GET(opts, n_node_addresses, 0); i++)
		plist_add(&node, &opts->node_addresses[i]);
	if (OPTS_GET(opts, n_dns_addresses, 0))
		for (size_t i = 0; i < opts->n_dns_addresses; i++)
			plist_add(&dns, &opts->dns_addresses[i]);
	else
		plist_add_all(&dns, &config->dns_addresses);
	for (size_t i = 0; i < flash_spec_cidr_count(spec, FLASH_SPEC_DENIED_SOURCES); i++)
		plist_add(&deny_in, flash_spec_cidr(spec, FLASH_SPEC_DENIED_SOURCES, i));
	for (size_t i = 0; i < flash_spec_cidr_count(spec, FLASH_SPEC_DENIED_DESTINATIONS); i++)
		plist_add(&deny_out, flash_spec_cidr(spec, FLASH_SPEC_DENIED_DESTINATIONS, i));
	holes_inside(&prot, &node, &deny_in);
	holes_inside(&prot, &dns, &deny_out);
	/* The node itself is never a destination. */
	plist_add_all(&deny_out, &(struct prefix_list){ node.v, node.n });

	rd = calloc(1, sizeof(*rd));
	if (!rd) {
		r = -ENOMEM;
		goto out_free;
	}
	/* protect: the protected ranges both ways, but for the node's
	 * addresses (readiness probes come from there) on the way in and the
	 * DNS servers on the way out, which the tiers below settle. */
	np = tier_policy("protect", "protect", &ro, &in, &out);
	if (np) {
		append_rule(in, "from", ip_peers(&prot, &node), NULL);
		append_rule(out, "to", ip_peers(&prot, &dns), NULL);
	}
	if ((r = add_object(rd, np)) < 0)
		goto out_free;
	/* exception: the node's probes on the declared ports; DNS, port 53,
	 * to exactly the workload DNS servers. */
	np = tier_policy("exception", "exception", &ro, &in, &out);
	if (np) {
		struct plist none = { 0 };

		if (flash_spec_port_count(spec))
			append_rule(in, "from", ip_peers(&node, &none), spec);
		if (dns.n) {
			rule = kdoc_append_obj(out);
			kdoc_set(rule, "to", ip_peers(&dns, &none));
			ports = kdoc_set_arr(rule, "ports");
			for (size_t i = 0; i < 2; i++) {
				struct kdoc *dp = kdoc_append_obj(ports);

				kdoc_set_str(dp, "protocol", i == 0 ? "UDP" : "TCP");
				kdoc_set_int(dp, "port", 53);
			}
		}
	}
	if ((r = add_object(rd, np)) < 0)
		goto out_free;
	/* deny: the denied sources and destinations (deny wins over every
	 * allow), the node as a destination, and the holes left in protect. */
	np = tier_policy("deny", "deny", &ro, &in, &out);
	if (np) {
		struct plist none = { 0 };

		append_rule(in, "from", ip_peers(&deny_in, &none), NULL);
		append_rule(out, "to", ip_peers(&deny_out, &none), NULL);
	}
	if ((r = add_object(rd, np)) < 0)
		goto out_free;
	/* allow: the workload's own NetworkPolicy, the one Kubernetes gets
	 * (declared ports, sources, egress mode, same organization). */
	np = render_network_policy(spec, config, &ro);
	if (np)
		kdoc_set_str(kdoc_set_obj(kdoc_get(np, "metadata"), "annotations"), "flowsdn.io/tier", "allow");
	if ((r = add_object(rd, np)) < 0)
		goto out_free;
	*ret_render = TAKE_PTR(rd);
out_free:
	flash_render_free(rd);
	free(prot.v);
	free(dns.v);
	free(node.v);
	free(deny_in.v);
	free(deny_out.v);
	return r;
}
