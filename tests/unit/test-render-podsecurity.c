/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pod Security: every Pod template flash_render() writes (the golden
 * cases of tests/data/render/) passes the "baseline" Pod Security
 * Standard, checked rule by rule as the standard (v1.36) states them; each
 * check refuses a Pod that breaks its rule, so none can pass by accident;
 * the tenant namespace enforces, audits and warns at baseline. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <flash/render.h>

#include "helpers.h"
#include "json.h"
#include "render-test.h"

/* Each check returns NULL when @pod (a PodSpec) and @md (the template's
 * metadata) keep the rule, else what breaks it. */
typedef const char *(*pss_check_fn)(const struct json_value *pod, const struct json_value *md);

static bool is_true(const struct json_value *v)
{
	bool b = false;

	return v && json_get_bool(v, &b) == 0 && b;
}

static const char *str(const struct json_value *v, const char *path)
{
	const struct json_value *s = json_at(v, path);

	return s && json_is(s, JSON_STRING) ? json_string_value(s) : NULL;
}

/* The containers of every kind: containers, initContainers, ephemeralContainers. */
#define FOR_EACH_CONTAINER(pod, c)                                                                         \
	for (size_t k_ = 0; k_ < 3; k_++)                                                                  \
		for (const struct json_value *l_ = json_get(pod, (const char *[]){ "containers", "initContainers", \
										     "ephemeralContainers" }[k_]); \
		     l_; l_ = NULL)                                                                        \
			for (size_t i_ = 0; i_ < l_->u.array.n && ((c) = l_->u.array.items[i_]); i_++)

static const char *host_process(const struct json_value *pod, const struct json_value *md)
{
	const struct json_value *c;

	(void)md;
	if (is_true(json_at(pod, "securityContext.windowsOptions.hostProcess")))
		return "pod hostProcess";
	FOR_EACH_CONTAINER(pod, c)
		if (is_true(json_at(c, "securityContext.windowsOptions.hostProcess")))
			return "container hostProcess";
	return NULL;
}

static const char *host_namespaces(const struct json_value *pod, const struct json_value *md)
{
	(void)md;
	if (is_true(json_get(pod, "hostNetwork")) || is_true(json_get(pod, "hostPID")) ||
	    is_true(json_get(pod, "hostIPC")))
		return "a host namespace";
	return NULL;
}

static const char *privileged(const struct json_value *pod, const struct json_value *md)
{
	const struct json_value *c;

	(void)md;
	FOR_EACH_CONTAINER(pod, c)
		if (is_true(json_at(c, "securityContext.privileged")))
			return "a privileged container";
	return NULL;
}

static const char *capabilities(const struct json_value *pod, const struct json_value *md)
{
	static const char *const allowed[] = { "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
					       "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID",
					       "SYS_CHROOT" };
	const struct json_value *c;

	(void)md;
	FOR_EACH_CONTAINER(pod, c) {
		const struct json_value *add = json_at(c, "securityContext.capabilities.add");

		for (size_t i = 0; add && i < add->u.array.n; i++) {
			bool ok = false;

			for (size_t j = 0; j < sizeof(allowed) / sizeof(allowed[0]) && !ok; j++)
				ok = !strcmp(json_string_value(add->u.array.items[i]), allowed[j]);
			if (!ok)
				return "a capability beyond the default set";
		}
	}
	return NULL;
}

static const char *host_path(const struct json_value *pod, const struct json_value *md)
{
	const struct json_value *vols = json_get(pod, "volumes");

	(void)md;
	for (size_t i = 0; vols && i < vols->u.array.n; i++)
		if (json_get(vols->u.array.items[i], "hostPath"))
			return "a hostPath volume";
	return NULL;
}

static const char *host_ports(const struct json_value *pod, const struct json_value *md)
{
	const struct json_value *c;

	(void)md;
	FOR_EACH_CONTAINER(pod, c) {
		const struct json_value *ports = json_get(c, "ports");

		for (size_t i = 0; ports && i < ports->u.array.n; i++) {
			int64_t hp = 0;
			const struct json_value *v = json_get(ports->u.array.items[i], "hostPort");

			if (v && json_get_int64(v, &hp) == 0 && hp != 0)
				return "a host port";
		}
	}
	return NULL;
}

static bool apparmor_ok(const char *type)
{
	return !type || !strcmp(type, "RuntimeDefault") || !strcmp(type, "Localhost");
}

static const char *apparmor(const struct json_value *pod, const struct json_value *md)
{
	static const char prefix[] = "container.apparmor.security.beta.kubernetes.io/";
	const struct json_value *ann = json_get(md, "annotations"), *c;

	for (size_t i = 0; ann && i < ann->u.object.n; i++)
		if (!strncmp(ann->u.object.members[i].key, prefix, sizeof(prefix) - 1)) {
			const char *v = json_string_value(ann->u.object.members[i].value);

			if (strcmp(v, "runtime/default") && strncmp(v, "localhost/", 10))
				return "an AppArmor annotation other than runtime/default or localhost/*";
		}
	if (!apparmor_ok(str(pod, "securityContext.appArmorProfile.type")))
		return "pod AppArmor profile";
	FOR_EACH_CONTAINER(pod, c)
		if (!apparmor_ok(str(c, "securityContext.appArmorProfile.type")))
			return "container AppArmor profile";
	return NULL;
}

static const char *selinux_of(const struct json_value *sc)
{
	const char *type = str(sc, "seLinuxOptions.type");

	if (type && strcmp(type, "container_t") && strcmp(type, "container_init_t") && strcmp(type, "container_kvm_t") &&
	    strcmp(type, "container_engine_t"))
		return "an SELinux type outside the container types";
	if (str(sc, "seLinuxOptions.user") || str(sc, "seLinuxOptions.role"))
		return "an SELinux user or role";
	return NULL;
}

static const char *selinux(const struct json_value *pod, const struct json_value *md)
{
	const struct json_value *c;
	const char *why = selinux_of(json_get(pod, "securityContext"));

	(void)md;
	FOR_EACH_CONTAINER(pod, c)
		if (!why)
			why = selinux_of(json_get(c, "securityContext"));
	return why;
}

static const char *proc_mount(const struct json_value *pod, const struct json_value *md)
{
	const struct json_value *c;

	(void)md;
	FOR_EACH_CONTAINER(pod, c) {
		const char *pm = str(c, "securityContext.procMount");

		if (pm && strcmp(pm, "Default"))
			return "a procMount other than Default";
	}
	return NULL;
}

static const char *seccomp(const struct json_value *pod, const struct json_value *md)
{
	const struct json_value *c;
	const char *t = str(pod, "securityContext.seccompProfile.type");

	(void)md;
	if (t && !strcmp(t, "Unconfined"))
		return "pod seccomp Unconfined";
	FOR_EACH_CONTAINER(pod, c) {
		t = str(c, "securityContext.seccompProfile.type");
		if (t && !strcmp(t, "Unconfined"))
			return "container seccomp Unconfined";
	}
	return NULL;
}

static const char *sysctls(const struct json_value *pod, const struct json_value *md)
{
	static const char *const safe[] = { "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
					    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
					    "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
					    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
					    "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes" };
	const struct json_value *l = json_at(pod, "securityContext.sysctls");

	(void)md;
	for (size_t i = 0; l && i < l->u.array.n; i++) {
		const char *name = str(l->u.array.items[i], "name");
		bool ok = false;

		for (size_t j = 0; j < sizeof(safe) / sizeof(safe[0]) && !ok; j++)
			ok = name && !strcmp(name, safe[j]);
		if (!ok)
			return "an unsafe sysctl";
	}
	return NULL;
}

/* The baseline controls of the Pod Security Standards, and for each a Pod
 * fragment that breaks it (merged into a rendered Pod by the test). */
static const struct {
	const char *control;
	pss_check_fn check;
	const char *breaking_pod;  /* PodSpec JSON that breaks the control */
	const char *breaking_md;   /* template metadata JSON, or NULL */
} baseline[] = {
	{ "HostProcess", host_process,
	  "{\"securityContext\":{\"windowsOptions\":{\"hostProcess\":true}},\"containers\":[{\"name\":\"a\"}]}", NULL },
	{ "Host Namespaces", host_namespaces, "{\"hostPID\":true,\"containers\":[{\"name\":\"a\"}]}", NULL },
	{ "Privileged Containers", privileged,
	  "{\"containers\":[{\"name\":\"a\",\"securityContext\":{\"privileged\":true}}]}", NULL },
	{ "Capabilities", capabilities,
	  "{\"containers\":[{\"name\":\"a\",\"securityContext\":{\"capabilities\":{\"add\":[\"NET_ADMIN\"]}}}]}", NULL },
	{ "HostPath Volumes", host_path, "{\"volumes\":[{\"name\":\"h\",\"hostPath\":{\"path\":\"/\"}}],"
					 "\"containers\":[{\"name\":\"a\"}]}", NULL },
	{ "Host Ports", host_ports, "{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,\"hostPort\":80}]}]}",
	  NULL },
	{ "AppArmor", apparmor, "{\"containers\":[{\"name\":\"a\"}]}",
	  "{\"annotations\":{\"container.apparmor.security.beta.kubernetes.io/a\":\"unconfined\"}}" },
	{ "SELinux", selinux, "{\"securityContext\":{\"seLinuxOptions\":{\"type\":\"spc_t\"}},\"containers\":[{\"name\":\"a\"}]}",
	  NULL },
	{ "/proc Mount Type", proc_mount,
	  "{\"containers\":[{\"name\":\"a\",\"securityContext\":{\"procMount\":\"Unmasked\"}}]}", NULL },
	{ "Seccomp", seccomp,
	  "{\"containers\":[{\"name\":\"a\",\"securityContext\":{\"seccompProfile\":{\"type\":\"Unconfined\"}}}]}", NULL },
	{ "Sysctls", sysctls, "{\"securityContext\":{\"sysctls\":[{\"name\":\"kernel.msgmax\",\"value\":\"1\"}]},"
			      "\"containers\":[{\"name\":\"a\"}]}", NULL },
};

static struct json_value *parse(const char *text)
{
	struct json_value *v = NULL;

	cr_assert(json_parse(text, strlen(text), NULL, &v, NULL) == 0, "not JSON: %s", text);
	return v;
}

Test(podsecurity, every_check_refuses_what_breaks_it)
{
	for (size_t i = 0; i < sizeof(baseline) / sizeof(baseline[0]); i++) {
		struct json_value *pod = parse(baseline[i].breaking_pod);
		struct json_value *md = parse(baseline[i].breaking_md ? baseline[i].breaking_md : "{}");
		struct json_value *plain = parse("{\"containers\":[{\"name\":\"a\"}]}");
		struct json_value *none = parse("{}");

		cr_assert_not_null(baseline[i].check(pod, md), "%s: the check lets a breaking Pod through", baseline[i].control);
		cr_assert_null(baseline[i].check(plain, none), "%s: the check refuses a plain Pod", baseline[i].control);
		json_free(pod);
		json_free(md);
		json_free(plain);
		json_free(none);
	}
}

Test(podsecurity, rendered_pods_pass_baseline)
{
	const char *top = getenv("top_srcdir");
	char dirpath[1024];
	struct dirent *de;
	size_t pods = 0;
	DIR *dir;

	snprintf(dirpath, sizeof(dirpath), "%s/tests/data/render", top ? top : ".");
	dir = opendir(dirpath);
	cr_assert(dir, "cannot open %s", dirpath);
	while ((de = readdir(dir))) {
		char rel[512];
		struct json_value *list;
		const struct json_value *items;
		char *text;

		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "render/%s/expected.json", de->d_name);
		text = render_test_read(rel, NULL);
		list = parse(text);
		items = json_get(list, "items");
		for (size_t i = 0; items && i < items->u.array.n; i++) {
			const struct json_value *o = items->u.array.items[i];
			const struct json_value *pod = json_at(o, "spec.template.spec");
			const struct json_value *md = json_at(o, "spec.template.metadata");

			if (strcmp(str(o, "kind"), "Deployment") != 0)
				continue;
			cr_assert(pod && md, "%s: no Pod template", rel);
			for (size_t k = 0; k < sizeof(baseline) / sizeof(baseline[0]); k++) {
				const char *why = baseline[k].check(pod, md);

				cr_assert_null(why, "%s breaks baseline control %s: %s", rel, baseline[k].control, why);
			}
			/* Beyond baseline: nothing kept that the runtime does
			 * not need (the single-node runtime grants none). */
			cr_assert_str_eq(str(pod, "containers[0].securityContext.capabilities.drop[0]"), "ALL", "%s", rel);
			cr_assert_null(json_at(pod, "containers[0].securityContext.capabilities.add"), "%s", rel);
			pods++;
		}
		json_free(list);
		free(text);
	}
	closedir(dir);
	cr_assert(pods >= 9, "only %zu Pod templates", pods);
}

Test(podsecurity, tenant_namespace_is_baseline)
{
	struct flash_schema_set *set = render_test_schema_set(true);
	_cleanup_diag_ struct flash_diag *d = render_test_diag();
	char *json = NULL, *yaml = NULL;
	struct json_value *ns;
	size_t len = 0;
	int r;

	ASSERT_OK(flash_render_namespace("org-1234", "org-1234", FLASH_RENDER_JSON, &json, &len), "namespace");
	r = flash_schema_validate_object(set, json, len, d);
	cr_assert(r == 0, "%s: %s", diag_path(d), diag_message(d));
	ns = parse(json);
	for (size_t i = 0; i < 3; i++) {
		char key[128];
		const struct json_value *labels = json_at(ns, "metadata.labels");
		const struct json_value *v;

		snprintf(key, sizeof(key), "pod-security.kubernetes.io/%s", (const char *[]){ "enforce", "audit", "warn" }[i]);
		v = json_get(labels, key);
		cr_assert(v && !strcmp(json_string_value(v), "baseline"), "%s is not baseline", key);
	}
	cr_assert_str_eq(json_string_value(json_get(json_at(ns, "metadata.labels"), "flash.heterocloud.io/organization")),
			 "org-1234");
	json_free(ns);
	ASSERT_OK(flash_render_namespace("org-1234", "org-1234", FLASH_RENDER_YAML, &yaml, NULL), "yaml");
	cr_assert(strstr(yaml, "pod-security.kubernetes.io/enforce: baseline"), "%s", yaml);
	ASSERT_ERR(flash_render_namespace("Org", "org-1234", FLASH_RENDER_JSON, &(char *){ NULL }, NULL),
		   -FLASH_E_RENDER_NAME, "bad namespace");
	ASSERT_ERR(flash_render_namespace("org", "org 1", FLASH_RENDER_JSON, &(char *){ NULL }, NULL),
		   -FLASH_E_RENDER_NAME, "bad organization");
	ASSERT_ERR(flash_render_namespace("org", "o", FLASH_RENDER_JSON, NULL, NULL), -EINVAL, "NULL output");
	free(json);
	free(yaml);
	flash_schema_set_free(set);
}
