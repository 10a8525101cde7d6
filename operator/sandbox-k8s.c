/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Kubernetes backend of sandbox sessions (sandbox-k8s.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <flash/meter.h>
#include <flash/spec.h>
#include <flowsdn/addr.h>

#include "json.h"
#include "k8s-exec.h"
#include "k8s-reconcile.h"
#include "names.h"
#include "sandbox-k8s.h"
#include "util.h"

#define POD_PREFIX "sbx-"
#define CONTAINER "sandbox"
#define ANNOTATION_EXPIRES "flash.heterocloud.io/sandbox-expires-at"
#define ANNOTATION_REVOKED "flash.heterocloud.io/sandbox-revoked"
#define MANAGED_BY "app.kubernetes.io/managed-by"
#define MAX_ITEMS 32

struct kv {
	char *key, *value;
};

struct toleration {
	char *key, *value, *effect; /* value NULL: Exists; effect NULL: all */
};

/* A session that ended (expired) and whose Pods are gone, kept until its
 * Reap or a new Provision: Info still answers it, Exec says ended. */
struct ended {
	struct flash_sandbox_info info;
	struct ended *next;
};

struct backend {
	struct op_sandbox_k8s_opts o;
	pthread_mutex_t lock;
	struct ended *ended;
	char *ns, *runtime_class, *net_setup_image;
	struct kv node_selector[MAX_ITEMS];
	size_t n_node_selector;
	struct toleration tolerations[MAX_ITEMS];
	size_t n_tolerations;
	char *pull_secrets[MAX_ITEMS];
	size_t n_pull_secrets;
};

static void backend_free(void *p)
{
	struct backend *b = p;

	if (!b)
		return;
	while (b->ended) {
		struct ended *e = b->ended;

		b->ended = e->next;
		free(e);
	}
	pthread_mutex_destroy(&b->lock);
	free(b->ns);
	free(b->runtime_class);
	free(b->net_setup_image);
	for (size_t i = 0; i < b->n_node_selector; i++) {
		free(b->node_selector[i].key);
		free(b->node_selector[i].value);
	}
	for (size_t i = 0; i < b->n_tolerations; i++) {
		free(b->tolerations[i].key);
		free(b->tolerations[i].value);
		free(b->tolerations[i].effect);
	}
	for (size_t i = 0; i < b->n_pull_secrets; i++)
		free(b->pull_secrets[i]);
	free(b);
}

/* ------------------------------------------------------------ configuration */

/* The comma-separated items of @s, each handed to @fn; -EINVAL at the
 * first it refuses (empty items refused too), -E2BIG past MAX_ITEMS. */
static int each_item(const char *s, int (*fn)(struct backend *b, char *item), struct backend *b)
{
	size_t n = 0;

	for (const char *p = s; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char *item;
		int r;

		if (!len || len > 512 || ++n > MAX_ITEMS)
			return n > MAX_ITEMS ? -E2BIG : -EINVAL;
		item = strndup(p, len);
		if (!item)
			return -ENOMEM;
		r = fn(b, item);
		free(item);
		if (r < 0)
			return r;
		p = e ? e + 1 : NULL;
		if (e && !*p)
			return -EINVAL; /* a trailing comma */
	}
	return 0;
}

static int node_selector_item(struct backend *b, char *item)
{
	char *eq = strchr(item, '=');

	if (!eq)
		return -EINVAL;
	*eq = '\0';
	if (!names_label_key_valid(item) || !names_label_value_valid(eq + 1))
		return -EINVAL;
	b->node_selector[b->n_node_selector].key = strdup(item);
	b->node_selector[b->n_node_selector].value = strdup(eq + 1);
	if (!b->node_selector[b->n_node_selector].key || !b->node_selector[b->n_node_selector].value) {
		free(b->node_selector[b->n_node_selector].key);
		free(b->node_selector[b->n_node_selector].value);
		return -ENOMEM;
	}
	b->n_node_selector++;
	return 0;
}

static int toleration_item(struct backend *b, char *item)
{
	struct toleration *t = &b->tolerations[b->n_tolerations];
	char *colon = strrchr(item, ':'), *eq;

	if (colon) {
		*colon = '\0';
		if (strcmp(colon + 1, "NoSchedule") && strcmp(colon + 1, "PreferNoSchedule") &&
		    strcmp(colon + 1, "NoExecute"))
			return -EINVAL;
	}
	eq = strchr(item, '=');
	if (eq)
		*eq = '\0';
	if (!names_label_key_valid(item) || (eq && !names_label_value_valid(eq + 1)))
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->key = strdup(item);
	t->value = eq ? strdup(eq + 1) : NULL;
	t->effect = colon ? strdup(colon + 1) : NULL;
	if (!t->key || (eq && !t->value) || (colon && !t->effect)) {
		free(t->key);
		free(t->value);
		free(t->effect);
		return -ENOMEM;
	}
	b->n_tolerations++;
	return 0;
}

static int pull_secret_item(struct backend *b, char *item)
{
	if (!names_dns_subdomain_valid(item))
		return -EINVAL;
	if (!(b->pull_secrets[b->n_pull_secrets] = strdup(item)))
		return -ENOMEM;
	b->n_pull_secrets++;
	return 0;
}

/* An image reference as a container's image: printable, no space, at
 * most 512 bytes (the registry parses the rest). */
static bool image_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 512)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* ------------------------------------------------------------ the Pod */

/* The sandbox container's capabilities: Docker's default set without
 * NET_RAW, MKNOD, SYS_CHROOT and AUDIT_WRITE. */
static const char *const sandbox_caps[] = { "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
					    "SETGID", "SETUID", "SETPCAP", "NET_BIND_SERVICE" };

/* The net-setup script: the routes of a limited sandbox flushed, those
 * to the nameservers (and, restricted, to $@) put back via the default
 * gateway. */
static const char net_setup_script[] =
	"set -e\n"
	"gw=$(ip -4 route show default | awk 'NR==1{print $3}')\n"
	"dev=$(ip -4 route show default | awk 'NR==1{print $5}')\n"
	"ip -4 route flush table main\n"
	"ip -6 route flush table main 2>/dev/null || true\n"
	"[ -n \"$gw\" ] || exit 0\n"
	"ip -4 route add \"$gw\" dev \"$dev\"\n"
	"for ns in $(awk '$1==\"nameserver\"{print $2}' /etc/resolv.conf); do\n"
	"  case $ns in *:*) ;; *) ip -4 route replace \"$ns\" via \"$gw\" dev \"$dev\";; esac\n"
	"done\n"
	"for c; do case $c in *:*) ;; *) ip -4 route replace \"$c\" via \"$gw\" dev \"$dev\";; esac; done\n";

int op_sandbox_k8s_pod(void *backend, const char *session_id, const struct flash_spec *spec, uint32_t ttl_s,
		       int64_t now, char **ret, size_t *ret_len)
{
	struct backend *b = backend;
	enum flash_spec_egress eg;
	struct json_writer *w;
	char name[FLASH_SANDBOX_ID_MAX + sizeof(POD_PREFIX)], num[32];

	if (!b || !flash_sandbox_id_valid(session_id) || !spec || !ret || !flash_spec_image(spec))
		return -EINVAL;
	eg = flash_spec_egress_mode(spec);
	if (eg != FLASH_SPEC_EGRESS_INTERNET && !b->net_setup_image)
		return -EINVAL;
	snprintf(name, sizeof(name), POD_PREFIX "%s", session_id);
	w = json_writer_new(0);
	jw_object_open(w);
	jw_kv_string(w, "apiVersion", "v1");
	jw_kv_string(w, "kind", "Pod");
	jw_key(w, "metadata");
	jw_object_open(w);
	jw_kv_string(w, "name", name);
	jw_kv_string(w, "namespace", b->ns);
	jw_key(w, "labels");
	jw_object_open(w);
	jw_kv_string(w, FLASH_SANDBOX_LABEL, session_id);
	jw_kv_string(w, MANAGED_BY, "flash-operator");
	jw_object_close(w);
	jw_key(w, "annotations");
	jw_object_open(w);
	snprintf(num, sizeof(num), "%" PRId64, now + (int64_t)ttl_s);
	jw_kv_string(w, ANNOTATION_EXPIRES, num);
	jw_object_close(w);
	jw_object_close(w);
	jw_key(w, "spec");
	jw_object_open(w);
	jw_kv_string(w, "restartPolicy", "Never");
	/* The kubelet ends the Pod at its expiry by itself, also when no
	 * operator is there to see it (reason DeadlineExceeded). */
	jw_kv_int(w, "activeDeadlineSeconds", ttl_s ? (int64_t)ttl_s : 1);
	jw_kv_bool(w, "automountServiceAccountToken", false);
	jw_kv_bool(w, "enableServiceLinks", false);
	jw_kv_int(w, "terminationGracePeriodSeconds", 0);
	if (b->runtime_class)
		jw_kv_string(w, "runtimeClassName", b->runtime_class);
	if (b->n_node_selector) {
		jw_key(w, "nodeSelector");
		jw_object_open(w);
		for (size_t i = 0; i < b->n_node_selector; i++)
			jw_kv_string(w, b->node_selector[i].key, b->node_selector[i].value);
		jw_object_close(w);
	}
	if (b->n_tolerations) {
		jw_key(w, "tolerations");
		jw_array_open(w);
		for (size_t i = 0; i < b->n_tolerations; i++) {
			jw_object_open(w);
			jw_kv_string(w, "key", b->tolerations[i].key);
			jw_kv_string(w, "operator", b->tolerations[i].value ? "Equal" : "Exists");
			if (b->tolerations[i].value)
				jw_kv_string(w, "value", b->tolerations[i].value);
			if (b->tolerations[i].effect)
				jw_kv_string(w, "effect", b->tolerations[i].effect);
			jw_object_close(w);
		}
		jw_array_close(w);
	}
	if (b->n_pull_secrets) {
		jw_key(w, "imagePullSecrets");
		jw_array_open(w);
		for (size_t i = 0; i < b->n_pull_secrets; i++) {
			jw_object_open(w);
			jw_kv_string(w, "name", b->pull_secrets[i]);
			jw_object_close(w);
		}
		jw_array_close(w);
	}
	if (eg != FLASH_SPEC_EGRESS_INTERNET) {
		jw_key(w, "initContainers");
		jw_array_open(w);
		jw_object_open(w);
		jw_kv_string(w, "name", "net-setup");
		jw_kv_string(w, "image", b->net_setup_image);
		jw_key(w, "command");
		jw_array_open(w);
		jw_string(w, "/bin/sh");
		jw_string(w, "-c");
		jw_string(w, net_setup_script);
		jw_string(w, "net-setup");
		if (eg == FLASH_SPEC_EGRESS_RESTRICTED)
			for (size_t i = 0; i < flash_spec_cidr_count(spec, FLASH_SPEC_ALLOWED_DESTINATIONS); i++) {
				char cidr[64];

				if (flowsdn_prefix_format(flash_spec_cidr(spec, FLASH_SPEC_ALLOWED_DESTINATIONS, i), cidr,
							  sizeof(cidr)) >= 0)
					jw_string(w, cidr);
			}
		jw_array_close(w);
		jw_key(w, "securityContext");
		jw_object_open(w);
		jw_key(w, "capabilities");
		jw_object_open(w);
		jw_key(w, "drop");
		jw_array_open(w);
		jw_string(w, "ALL");
		jw_array_close(w);
		jw_key(w, "add");
		jw_array_open(w);
		jw_string(w, "NET_ADMIN");
		jw_array_close(w);
		jw_object_close(w);
		jw_object_close(w);
		jw_object_close(w);
		jw_array_close(w);
	}
	jw_key(w, "containers");
	jw_array_open(w);
	jw_object_open(w);
	jw_kv_string(w, "name", CONTAINER);
	jw_kv_string(w, "image", flash_spec_image(spec));
	jw_key(w, "command");
	jw_array_open(w);
	jw_string(w, "/bin/bash");
	jw_string(w, "-c");
	jw_string(w, "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done");
	jw_array_close(w);
	/* The tenant's code runs here: no raw sockets (NET_RAW would send
	 * frames past a limited sandbox's flushed routes), no device nodes,
	 * no chroot, no setuid escalation; what a root userland needs to own
	 * and write its files is kept. */
	jw_key(w, "securityContext");
	jw_object_open(w);
	jw_kv_bool(w, "allowPrivilegeEscalation", false);
	jw_key(w, "capabilities");
	jw_object_open(w);
	jw_key(w, "drop");
	jw_array_open(w);
	jw_string(w, "ALL");
	jw_array_close(w);
	jw_key(w, "add");
	jw_array_open(w);
	for (size_t i = 0; i < ARRAY_SIZE(sandbox_caps); i++)
		jw_string(w, sandbox_caps[i]);
	jw_array_close(w);
	jw_object_close(w);
	jw_object_close(w);
	if (flash_spec_env_count(spec)) {
		jw_key(w, "env");
		jw_array_open(w);
		for (size_t i = 0; i < flash_spec_env_count(spec); i++) {
			jw_object_open(w);
			jw_kv_string(w, "name", flash_spec_env_key(spec, i));
			jw_kv_string(w, "value", flash_spec_env_value(spec, i));
			jw_object_close(w);
		}
		jw_array_close(w);
	}
	jw_key(w, "resources");
	jw_object_open(w);
	{
		char cpu[32], mem[32];

		snprintf(cpu, sizeof(cpu), "%" PRIu32 "m", flash_spec_cpu_millis(spec));
		snprintf(mem, sizeof(mem), "%" PRIu32 "Mi", flash_spec_memory_mib(spec));
		for (int k = 0; k < 2; k++) {
			jw_key(w, k ? "limits" : "requests");
			jw_object_open(w);
			if (flash_spec_cpu_millis(spec))
				jw_kv_string(w, "cpu", cpu);
			if (flash_spec_memory_mib(spec))
				jw_kv_string(w, "memory", mem);
			jw_object_close(w);
		}
	}
	jw_object_close(w);
	jw_object_close(w);
	jw_array_close(w);
	jw_object_close(w);
	jw_object_close(w);
	return json_writer_finish(w, ret, ret_len);
}

/* ------------------------------------------------------------ reading Pods */

struct found {
	const char *id;             /* NULL: every labelled Pod (owned) */
	struct json_value *pods[MAX_ITEMS];
	size_t n;
	char **ids;                 /* owned */
	size_t n_ids;
	int err;
};

static int found_item(const struct json_value *item, void *userdata)
{
	struct found *f = userdata;
	const char *v = json_string_value(json_get(json_at(item, "metadata.labels"), FLASH_SANDBOX_LABEL));
	if (!v || !flash_sandbox_id_valid(v))
		return 0;
	if (!f->id) {
		char **p;

		for (size_t i = 0; i < f->n_ids; i++)
			if (!strcmp(f->ids[i], v))
				return 0;
		p = realloc(f->ids, (f->n_ids + 1) * sizeof(*p));
		if (!p || !(p[f->n_ids] = strdup(v))) {
			f->ids = p ? p : f->ids;
			f->err = -ENOMEM;
			return -ENOMEM;
		}
		f->ids = p;
		f->n_ids++;
		return 0;
	}
	if (strcmp(v, f->id) || f->n >= MAX_ITEMS)
		return 0;
	/* The item belongs to the page: a copy is kept. */
	{
		char *text = NULL;
		size_t len = 0;

		if (json_write_value(item, 0, &text, &len) < 0 || json_parse(text, len, NULL, &f->pods[f->n], NULL) < 0) {
			free(text);
			f->err = -ENOMEM;
			return -ENOMEM;
		}
		free(text);
		f->n++;
	}
	return 0;
}

static void found_clear(struct found *f)
{
	for (size_t i = 0; i < f->n; i++)
		json_free(f->pods[i]);
	f->n = 0;
	for (size_t i = 0; i < f->n_ids; i++)
		free(f->ids[i]);
	free(f->ids);
	f->ids = NULL;
	f->n_ids = 0;
}

/* The Pods of @id (NULL: every labelled one, their ids in f->ids). */
static int list_pods(struct backend *b, struct k8s_client *c, const char *id, struct found *f)
{
	struct k8s_ref ref = { .version = "v1", .resource = "pods", .namespace = b->ns };
	struct k8s_list_opts lo = { .sz = sizeof(lo) };
	char sel[FLASH_SANDBOX_ID_MAX + sizeof(FLASH_SANDBOX_LABEL) + 2];
	int r;

	memset(f, 0, sizeof(*f));
	f->id = id;
	snprintf(sel, sizeof(sel), "%s%s%s", FLASH_SANDBOX_LABEL, id ? "=" : "", id ? id : "");
	lo.label_selector = sel;
	r = k8s_list(c, &ref, &lo, found_item, f, NULL, NULL);
	if (r == 0 && f->err)
		r = f->err;
	if (r < 0)
		found_clear(f);
	return r;
}

static int64_t parse_time(const char *s)
{
	int64_t t;

	return s && flash_meter_parse_time(s, &t) == 0 ? t : 0;
}

/* What a container's state says about a failed start, or NULL. */
static const char *failure_reason(const struct json_value *pod)
{
	const char *phase = json_string_value(json_at(pod, "status.phase"));
	const struct json_value *cs = json_at(pod, "status.containerStatuses");
	static const char *const fatal[] = { "ErrImagePull", "ImagePullBackOff", "InvalidImageName",
					     "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
					     "CrashLoopBackOff" };

	for (size_t i = 0; json_is(cs, JSON_ARRAY) && i < cs->u.array.n; i++) {
		const struct json_value *c = cs->u.array.items[i];
		const char *w = json_string_value(json_at(c, "state.waiting.reason"));
		const char *t = json_string_value(json_at(c, "state.terminated.reason"));

		if (t)
			return t;
		for (size_t k = 0; w && k < ARRAY_SIZE(fatal); k++)
			if (!strcmp(w, fatal[k]))
				return w;
	}
	if (phase && (!strcmp(phase, "Failed") || !strcmp(phase, "Succeeded")))
		return phase;
	return NULL;
}

/* The live Pod of a session: the one not terminating (the first). */
static const struct json_value *live_pod(const struct found *f)
{
	for (size_t i = 0; i < f->n; i++)
		if (!json_at(f->pods[i], "metadata.deletionTimestamp"))
			return f->pods[i];
	return NULL;
}

static void info_of(const char *id, const struct json_value *pod, struct flash_sandbox_info *ret)
{
	const char *reason = failure_reason(pod);
	const char *exp = json_string_value(json_get(json_at(pod, "metadata.annotations"), ANNOTATION_EXPIRES));

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->session_id, sizeof(ret->session_id), "%s", id);
	snprintf(ret->backend_id, sizeof(ret->backend_id), "%s",
		 json_string_value(json_at(pod, "metadata.name")) ?: "");
	ret->created_at = parse_time(json_string_value(json_at(pod, "metadata.creationTimestamp")));
	ret->expires_at = exp ? strtoll(exp, NULL, 10) : 0;
	if (json_get(json_at(pod, "metadata.annotations"), ANNOTATION_REVOKED)) {
		/* revoked: its Reap began (and may have stopped half-way) */
		ret->end = FLASH_SANDBOX_END_REAPED;
		snprintf(ret->end_reason, sizeof(ret->end_reason), "reaping");
	} else if (reason && !(ret->expires_at && ret->expires_at <= time(NULL) &&
				 !strcmp(json_string_value(json_at(pod, "status.reason")) ?: "", "DeadlineExceeded"))) {
		ret->end = FLASH_SANDBOX_END_FAILED;
		snprintf(ret->end_reason, sizeof(ret->end_reason), "%s", reason);
	} else if (ret->expires_at && ret->expires_at <= time(NULL)) {
		/* past its expiry (the kubelet's DeadlineExceeded is the same) */
		ret->end = FLASH_SANDBOX_END_EXPIRED;
		snprintf(ret->end_reason, sizeof(ret->end_reason), "expired");
	}
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------ ended sessions */

static void ended_put(struct backend *b, const struct flash_sandbox_info *info)
{
	struct ended *e = calloc(1, sizeof(*e));

	if (!e)
		return; /* the session is then forgotten (-ENOENT) */
	e->info = *info;
	pthread_mutex_lock(&b->lock);
	e->next = b->ended;
	b->ended = e;
	pthread_mutex_unlock(&b->lock);
}

/* The ended session @id: true and *ret (may be NULL). */
static bool ended_get(struct backend *b, const char *id, struct flash_sandbox_info *ret)
{
	bool found = false;

	pthread_mutex_lock(&b->lock);
	for (struct ended *e = b->ended; e && !found; e = e->next)
		if (!strcmp(e->info.session_id, id)) {
			found = true;
			if (ret)
				*ret = e->info;
		}
	pthread_mutex_unlock(&b->lock);
	return found;
}

static void ended_drop(struct backend *b, const char *id)
{
	pthread_mutex_lock(&b->lock);
	for (struct ended **pp = &b->ended; *pp;) {
		struct ended *e = *pp;

		if (!strcmp(e->info.session_id, id)) {
			*pp = e->next;
			free(e);
			continue;
		}
		pp = &e->next;
	}
	pthread_mutex_unlock(&b->lock);
}

/* ------------------------------------------------------------ the ops */

static int b_reap_with(struct backend *b, struct k8s_client *c, const char *id);

/* A session seen past its expiry: its Pods deleted (waited for), the
 * session kept as ended. */
static void expire(struct backend *b, struct k8s_client *c, const struct flash_sandbox_info *info)
{
	if (b_reap_with(b, c, info->session_id) == 0)
		ended_put(b, info);
}

static int b_info(void *backend, const char *id, struct flash_sandbox_info *ret)
{
	struct backend *b = backend;
	struct k8s_client *c = NULL;
	const struct json_value *pod;
	struct found f;
	int r;

	if ((r = b->o.new_client(b->o.client_ctx, &c)) < 0)
		return r;
	r = list_pods(b, c, id, &f);
	if (r == 0) {
		pod = live_pod(&f);
		if (!pod) {
			r = ended_get(b, id, ret) ? 0 : -ENOENT;
		} else {
			info_of(id, pod, ret);
			/* An expired session is reaped when seen. */
			if (ret->end == FLASH_SANDBOX_END_EXPIRED)
				expire(b, c, ret);
		}
		found_clear(&f);
	}
	k8s_client_free(c);
	return r;
}

/* Waits until the session's Pod is Running and Ready (0 and *ret) or has
 * failed (-FLASH_E_SANDBOX_ENDED, *ret says why), bounded. */
static int wait_ready(struct backend *b, struct k8s_client *c, const char *id, struct flash_sandbox_info *ret)
{
	int64_t end = util_mono_ms() + b->o.ready_timeout_ms;

	for (;;) {
		struct found f;
		const struct json_value *pod;
		int r = list_pods(b, c, id, &f);

		if (r < 0)
			return r;
		pod = live_pod(&f);
		if (pod) {
			bool adopted = ret->adopted;

			info_of(id, pod, ret);
			ret->adopted = adopted;
			if (ret->end == FLASH_SANDBOX_END_FAILED || ret->end == FLASH_SANDBOX_END_REAPED) {
				/* failed, or revoked: its Reap began */
				found_clear(&f);
				return -FLASH_E_SANDBOX_ENDED;
			}
			if (op_k8s_pod_ready(pod)) {
				found_clear(&f);
				return 0;
			}
		}
		found_clear(&f);
		if (!pod)
			return -ENOENT; /* deleted meanwhile */
		if (util_mono_ms() >= end)
			return -ETIMEDOUT;
		sleep_ms(b->o.poll_ms);
	}
}

/* Waits until no Pod of @id is left (terminating ones included). */
static int wait_gone(struct backend *b, struct k8s_client *c, const char *id)
{
	int64_t end = util_mono_ms() + b->o.reap_timeout_ms;

	for (;;) {
		struct found f;
		size_t n;
		int r = list_pods(b, c, id, &f);

		if (r < 0)
			return r;
		n = f.n;
		found_clear(&f);
		if (!n)
			return 0;
		if (util_mono_ms() >= end)
			return -ETIMEDOUT;
		sleep_ms(b->o.poll_ms);
	}
}

static int b_provision(void *backend, const char *id, const struct flash_spec *spec, uint32_t ttl_s,
		       struct flash_sandbox_info *ret, struct flash_diag *diag)
{
	struct backend *b = backend;
	struct k8s_ref ref = { .version = "v1", .resource = "pods", .namespace = b->ns };
	struct k8s_client *c = NULL;
	struct flash_sandbox_info info = { 0 };
	struct found f;
	char *body = NULL;
	size_t len = 0;
	int r;

	(void)diag;
	if ((r = b->o.new_client(b->o.client_ctx, &c)) < 0)
		return r;
	/* An ended session's id gets a new sandbox. */
	ended_drop(b, id);
	r = list_pods(b, c, id, &f);
	if (r < 0)
		goto out;
	if (f.n && !live_pod(&f)) {
		/* Only a terminating one: it goes first. */
		found_clear(&f);
		if ((r = wait_gone(b, c, id)) < 0)
			goto out;
	} else if (f.n) {
		info_of(id, live_pod(&f), &info);
		found_clear(&f);
		if (info.end != FLASH_SANDBOX_END_EXPIRED) {
			memset(&info, 0, sizeof(info));
			info.adopted = true;
			r = wait_ready(b, c, id, &info);
			goto out;
		}
		/* Past its expiry: it goes, and the session gets a new
		 * sandbox, as on gVisor. */
		if ((r = b_reap_with(b, c, id)) < 0)
			goto out;
		memset(&info, 0, sizeof(info));
	}
	r = op_sandbox_k8s_pod(b, id, spec, ttl_s, time(NULL), &body, &len);
	if (r < 0)
		goto out;
	/* Checked against the server's schema before it is sent. */
	r = flash_schema_validate_object(b->o.schemas, body, len, NULL);
	if (r < 0)
		goto out;
	{
		struct k8s_status st = { 0 };

		r = k8s_create(c, &ref, body, len, NULL, NULL, &st);
		k8s_status_clear(&st);
	}
	if (r == -EEXIST) {
		/* A racing Provision made it: adopt the winner's. */
		info.adopted = true;
		r = 0;
	}
	if (r == 0)
		r = wait_ready(b, c, id, &info);
out:
	if (r == 0 || r == -FLASH_E_SANDBOX_ENDED)
		*ret = info;
	free(body);
	k8s_client_free(c);
	return r;
}

/* The argv run in the Pod: @io->argv, behind a /bin/bash prologue that
 * exports @io->env when there is one (pods/exec has no environment). */
static int exec_argv(const struct flash_sandbox_exec_io *io, const char ***ret, size_t *ret_n)
{
	size_t na = 0, ne = 0, n = 0;
	const char **v;

	while (io->argv[na])
		na++;
	while (io->env && io->env[ne])
		ne++;
	v = calloc(na + ne + 6, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (ne) {
		v[n++] = "/bin/bash";
		v[n++] = "-c";
		v[n++] = "while [ \"$1\" != -- ]; do export \"$1\"; shift; done; shift; exec \"$@\"";
		v[n++] = "flash-sandbox-env";
		for (size_t i = 0; i < ne; i++)
			v[n++] = io->env[i];
		v[n++] = "--";
	}
	for (size_t i = 0; i < na; i++)
		v[n++] = io->argv[i];
	*ret = v;
	*ret_n = n;
	return 0;
}

static int b_exec(void *backend, const char *id, const struct flash_sandbox_exec_io *io, int *ret_exit_code)
{
	struct backend *b = backend;
	struct k8s_client *c = NULL;
	const struct json_value *pod;
	const char **argv = NULL;
	char name[256];
	struct found f;
	size_t argc = 0;
	int r;

	if (!io || !io->argv || !io->argv[0] || !ret_exit_code)
		return -EINVAL;
	if ((r = b->o.new_client(b->o.client_ctx, &c)) < 0)
		return r;
	r = list_pods(b, c, id, &f);
	if (r < 0)
		goto out;
	pod = live_pod(&f);
	if (!pod || !json_string_value(json_at(pod, "metadata.name"))) {
		found_clear(&f);
		r = ended_get(b, id, NULL) ? -FLASH_E_SANDBOX_ENDED : -ENOENT;
		goto out;
	}
	{
		struct flash_sandbox_info info;

		info_of(id, pod, &info);
		if (info.end != FLASH_SANDBOX_LIVE) {
			found_clear(&f);
			if (info.end == FLASH_SANDBOX_END_EXPIRED)
				expire(b, c, &info);
			r = -FLASH_E_SANDBOX_ENDED;
			goto out;
		}
	}
	snprintf(name, sizeof(name), "%s", json_string_value(json_at(pod, "metadata.name")));
	found_clear(&f);
	r = exec_argv(io, &argv, &argc);
	if (r < 0)
		goto out;
	{
		struct k8s_exec_opts o = { .sz = sizeof(o), .namespace = b->ns, .pod = name, .container = CONTAINER,
					   .argv = argv, .argc = argc };
		struct k8s_exec_run_io rio = { .sz = sizeof(rio), .in = io->stdin_fn, .in_userdata = io->stdin_userdata,
					       .out = io->stdout_fn, .out_userdata = io->stdout_userdata,
					       .err = io->stderr_fn, .err_userdata = io->stderr_userdata,
					       .deadline = (int64_t)io->deadline_ms };
		struct k8s_status st = { 0 };

		r = k8s_exec_run(c, &o, &rio, ret_exit_code, &st);
		/* The Pod went away between the list and the exec. */
		if (r == -ENOENT && st.code == 404)
			r = -ENOENT;
		k8s_status_clear(&st);
	}
out:
	free(argv);
	k8s_client_free(c);
	return r;
}

static int b_owned(void *backend, char ***ret_ids, size_t *ret_count)
{
	struct backend *b = backend;
	struct k8s_client *c = NULL;
	struct found f;
	int r;

	if ((r = b->o.new_client(b->o.client_ctx, &c)) < 0)
		return r;
	r = list_pods(b, c, NULL, &f);
	k8s_client_free(c);
	if (r < 0)
		return r;
	*ret_ids = f.ids;
	*ret_count = f.n_ids;
	return 0;
}

static int b_reap_with(struct backend *b, struct k8s_client *c, const char *id)
{
	struct k8s_delete_opts d = { .sz = sizeof(d), .grace_period_seconds = 0, .propagation_policy = "Background" };
	struct found f;
	int r = list_pods(b, c, id, &f);

	if (r < 0)
		return r;
	for (size_t i = 0; i < f.n && r == 0; i++) {
		const char *name = json_string_value(json_at(f.pods[i], "metadata.name"));
		struct k8s_ref ref = { .version = "v1", .resource = "pods", .namespace = b->ns, .name = name };

		if (!name)
			continue;
		r = k8s_delete(c, &ref, &d, NULL, NULL);
		if (r == -ENOENT)
			r = 0; /* gone already */
	}
	found_clear(&f);
	return r < 0 ? r : wait_gone(b, c, id);
}

static int b_reap(void *backend, const char *id)
{
	struct backend *b = backend;
	struct k8s_client *c = NULL;
	int r;

	if ((r = b->o.new_client(b->o.client_ctx, &c)) < 0)
		return r;
	r = b_reap_with(b, c, id);
	if (r == 0)
		ended_drop(b, id);
	k8s_client_free(c);
	return r;
}

/* The session's gate: the annotation ANNOTATION_REVOKED merge-patched
 * onto every Pod of the session (selected by label), before its Reap
 * deletes anything.  Info then answers REAPED "reaping", Exec and
 * Provision refuse, on every operator replica and after a restart. */
static int b_revoke(void *backend, const char *id)
{
	struct backend *b = backend;
	struct k8s_client *c = NULL;
	char body[160];
	struct found f;
	int r;

	if ((r = b->o.new_client(b->o.client_ctx, &c)) < 0)
		return r;
	snprintf(body, sizeof(body), "{\"metadata\":{\"annotations\":{\"" ANNOTATION_REVOKED "\":\"%" PRId64 "\"}}}",
		 (int64_t)time(NULL));
	r = list_pods(b, c, id, &f);
	if (r < 0)
		goto out;
	for (size_t i = 0; r == 0 && i < f.n; i++) {
		const char *name = json_string_value(json_at(f.pods[i], "metadata.name"));
		struct k8s_ref ref = { .version = "v1", .resource = "pods", .namespace = b->ns, .name = name };
		struct k8s_status st = { 0 };

		if (!name || json_at(f.pods[i], "metadata.deletionTimestamp"))
			continue; /* already being deleted: nothing left to refuse with */
		r = k8s_patch(c, &ref, K8S_PATCH_MERGE, body, strlen(body), NULL, NULL, &st);
		if (r == -ENOENT)
			r = 0; /* gone meanwhile */
		k8s_status_clear(&st);
	}
	found_clear(&f);
out:
	k8s_client_free(c);
	return r;
}

static const struct flash_sandbox_backend_ops k8s_ops = {
	.sz = sizeof(k8s_ops),
	.provision = b_provision,
	.info = b_info,
	.exec = b_exec,
	.owned = b_owned,
	.reap = b_reap,
	.free = backend_free,
	.revoke = b_revoke,
};

bool op_sandbox_k8s_settings(const struct op_sandbox_k8s_opts *cli, const struct flash_operator_config *config,
			     struct op_sandbox_k8s_opts *ret)
{
	struct flash_operator_runtime cr = { .sz = sizeof(cr) };

	memset(ret, 0, sizeof(*ret));
	ret->sz = sizeof(*ret);
	if (config && flash_operator_config_runtime(config, &cr) < 0)
		memset(&cr, 0, sizeof(cr));
#define PICK(field, key) ret->field = cli && cli->field ? cli->field : cr.key
	PICK(namespace, sandbox_namespace);
	PICK(net_setup_image, sandbox_net_setup_image);
	PICK(runtime_class, sandbox_runtime_class);
	PICK(node_selector, sandbox_node_selector);
	PICK(tolerations, sandbox_tolerations);
	PICK(image_pull_secrets, sandbox_image_pull_secrets);
#undef PICK
	return ret->namespace != NULL;
}

static int refuse(struct diag *diag, const char *path, const char *what, const char *value)
{
	if (diag)
		diag_add(diag, DIAG_ERROR, path, "invalid", NULL, "%s: \"%.200s\"", what, value ? value : "");
	return -EINVAL;
}

int op_sandbox_k8s_new(const struct op_sandbox_k8s_opts *opts, const struct flash_sandbox_backend_ops **ret_ops,
		       void **ret_backend, struct diag *diag)
{
	struct backend *b;
	int r;

	if (!OPTS_VALID(opts, op_sandbox_k8s_opts) || !opts || !ret_ops || !ret_backend || !opts->new_client ||
	    !opts->schemas)
		return -EINVAL;
	if (!opts->namespace || !names_dns_label_valid(opts->namespace))
		return refuse(diag, "namespace", "not a namespace name (a DNS label)", opts->namespace);
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->lock, NULL);
	memcpy(&b->o, opts, opts->sz < sizeof(b->o) ? opts->sz : sizeof(b->o));
	b->o.sz = sizeof(b->o);
	if (!b->o.ready_timeout_ms)
		b->o.ready_timeout_ms = 120000;
	if (!b->o.reap_timeout_ms)
		b->o.reap_timeout_ms = 60000;
	if (!b->o.poll_ms)
		b->o.poll_ms = 200;
	r = -ENOMEM;
	if (!(b->ns = strdup(opts->namespace)))
		goto fail;
	if (OPTS_GET(opts, runtime_class, NULL)) {
		r = names_dns_subdomain_valid(opts->runtime_class)
			    ? 0
			    : refuse(diag, "runtimeClass", "not a RuntimeClass name (a DNS subdomain)", opts->runtime_class);
		if (r < 0 || !(b->runtime_class = strdup(opts->runtime_class))) {
			r = r < 0 ? r : -ENOMEM;
			goto fail;
		}
	}
	if (OPTS_GET(opts, net_setup_image, NULL)) {
		r = image_ok(opts->net_setup_image)
			    ? 0
			    : refuse(diag, "netSetupImage", "not an image reference", opts->net_setup_image);
		if (r < 0 || !(b->net_setup_image = strdup(opts->net_setup_image))) {
			r = r < 0 ? r : -ENOMEM;
			goto fail;
		}
	}
	r = each_item(OPTS_GET(opts, node_selector, NULL), node_selector_item, b);
	if (r < 0) {
		r = r == -ENOMEM ? r
				 : refuse(diag, "nodeSelector", "expected key=value[,key=value...] of label keys and values",
					  opts->node_selector);
		goto fail;
	}
	r = each_item(OPTS_GET(opts, tolerations, NULL), toleration_item, b);
	if (r < 0) {
		r = r == -ENOMEM ? r
				 : refuse(diag, "tolerations",
					  "expected KEY[=VALUE][:NoSchedule|PreferNoSchedule|NoExecute][,...]",
					  opts->tolerations);
		goto fail;
	}
	r = each_item(OPTS_GET(opts, image_pull_secrets, NULL), pull_secret_item, b);
	if (r < 0) {
		r = r == -ENOMEM ? r
				 : refuse(diag, "imagePullSecrets", "expected name[,name...] of Secret names",
					  opts->image_pull_secrets);
		goto fail;
	}
	*ret_ops = &k8s_ops;
	*ret_backend = b;
	return 0;
fail:
	backend_free(b);
	return r;
}
