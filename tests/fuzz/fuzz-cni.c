/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the CNI codec of <flowsdn/cni.h>: what a runtime
 * hands a plugin.  The first byte of an input picks what the rest is:
 *   'c'  a network configuration (flowsdn_cni_conf_parse), prevResult
 *        and "dns" included;
 *   'l'  a configuration list (flowsdn_cni_conflist_parse);
 *   'r'  a result, as a plugin prints it (flowsdn_cni_result_parse);
 *   'a'  CNI_ARGS (flowsdn_cni_args_parse);
 *   'e'  the CNI_* environment, one NAME=VALUE per line
 *        (flowsdn_cni_env_read);
 *   anything else: the whole input as a network configuration.
 * Properties:
 *  - a refused input has a diag entry (unless out of memory) and no
 *    object;
 *  - a result that parses (alone, as prevResult or as "dns"), formatted
 *    in each supported version, parses again and formats to the same
 *    text;
 *  - each plugin of a list that parses gives a configuration that is
 *    JSON without duplicate keys, carrying the list's version and name.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/cni.h>

#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct flowsdn_diag *diag;

static void check(int ok)
{
	if (!ok)
		abort();
}

/* @key of @root is the string @want. */
static bool member_is(const struct json_value *root, const char *key, const char *want)
{
	const char *s = json_string_value(json_get(root, key));

	return s && strcmp(s, want) == 0;
}

static void refused(int r)
{
	check(r < 0);
	check(r == -ENOMEM || flowsdn_diag_errors(diag) > 0);
}

/* parse(format(r, v)) formats to the same text, for every version. */
static void result_round_trip(const struct flowsdn_cni_result *r)
{
	size_t n = 0;
	const char *const *versions = flowsdn_cni_supported_versions(&n);

	check(n > 0);
	for (size_t i = 0; i < n; i++) {
		struct flowsdn_cni_result *again = NULL;
		char *f1 = NULL, *f2 = NULL;
		size_t l1 = 0, l2 = 0;

		check(flowsdn_cni_result_format(r, versions[i], &f1, &l1) == 0);
		check(flowsdn_cni_result_parse(f1, l1, &again, NULL) == 0);
		check(flowsdn_cni_result_ip_count(again) == flowsdn_cni_result_ip_count(r));
		check(flowsdn_cni_result_route_count(again) == flowsdn_cni_result_route_count(r));
		check(flowsdn_cni_result_iface_count(again) == flowsdn_cni_result_iface_count(r));
		check(flowsdn_cni_result_format(again, versions[i], &f2, &l2) == 0);
		check(l1 == l2 && memcmp(f1, f2, l1) == 0);
		free(f1);
		free(f2);
		flowsdn_cni_result_free(again);
	}
}

static void conf(const char *text, size_t len)
{
	struct flowsdn_cni_conf *c = NULL;
	const char *s;
	int r;

	r = flowsdn_cni_conf_parse(text, len, &c, diag);
	if (r < 0) {
		refused(r);
		check(c == NULL);
		return;
	}
	check(flowsdn_cni_version_check(flowsdn_cni_conf_version(c)) == 0);
	check(flowsdn_cni_container_id_valid(flowsdn_cni_conf_name(c)));
	check(flowsdn_cni_conf_type(c) != NULL);
	if (flowsdn_cni_conf_prev_result(c))
		result_round_trip(flowsdn_cni_conf_prev_result(c));
	if (flowsdn_cni_conf_dns(c))
		result_round_trip(flowsdn_cni_conf_dns(c));
	for (size_t i = 0; i < flowsdn_cni_conf_attachment_count(c); i++) {
		const char *id = NULL, *ifn = NULL;

		check(flowsdn_cni_conf_attachment(c, i, &id, &ifn) == 0 && id && ifn);
	}
	/* The keys the plugin reads (cni/plugin.c). */
	r = flowsdn_cni_conf_get_string(c, "socket", &s);
	check(r == 0 || r == -ENOENT || r == -FLOWSDN_E_CNI_CONFIG);
	flowsdn_cni_conf_free(c);
}

static void conflist(const char *text, size_t len)
{
	struct flowsdn_cni_conflist *l = NULL;
	int r;

	r = flowsdn_cni_conflist_parse(text, len, &l, diag);
	if (r < 0) {
		refused(r);
		check(l == NULL);
		return;
	}
	check(flowsdn_cni_version_check(flowsdn_cni_conflist_version(l)) == 0);
	check(flowsdn_cni_conflist_plugin_count(l) > 0);
	for (size_t i = 0; i < flowsdn_cni_conflist_plugin_count(l); i++) {
		struct json_value *root = NULL;
		char *pc = NULL;

		check(flowsdn_cni_conflist_plugin_conf(l, i, NULL, &pc) == 0);
		/* The strict reader refuses duplicate keys. */
		check(json_parse(pc, strlen(pc), NULL, &root, NULL) == 0);
		check(member_is(root, "cniVersion", flowsdn_cni_conflist_version(l)));
		check(member_is(root, "name", flowsdn_cni_conflist_name(l)));
		json_free(root);
		free(pc);
	}
	check(flowsdn_cni_conflist_plugin_conf(l, flowsdn_cni_conflist_plugin_count(l), NULL, &(char *){ NULL }) ==
	      -ERANGE);
	flowsdn_cni_conflist_free(l);
}

static void result(const char *text, size_t len)
{
	struct flowsdn_cni_result *res = NULL;
	int r;

	r = flowsdn_cni_result_parse(text, len, &res, diag);
	if (r < 0) {
		refused(r);
		check(res == NULL);
		return;
	}
	result_round_trip(res);
	flowsdn_cni_result_free(res);
}

static void args(const char *text, size_t len)
{
	static const char *const known[] = { "K8S_POD_NAMESPACE", "K8S_POD_NAME", "K8S_POD_INFRA_CONTAINER_ID",
					     "K8S_POD_UID", NULL };
	struct flowsdn_cni_args *a = NULL;
	char *s = strndup(text, len);
	int r;

	if (!s)
		return;
	r = flowsdn_cni_args_parse(s, known, &a, diag);
	if (r < 0) {
		check(r == -E2BIG || flowsdn_diag_errors(diag) > 0 || r == -ENOMEM);
		check(a == NULL);
	} else {
		for (size_t i = 0; known[i]; i++) {
			const char *v = flowsdn_cni_args_get(a, known[i]);

			/* A value is a part of the text it came from. */
			check(!v || strstr(s, v) != NULL);
		}
		flowsdn_cni_args_free(a);
	}
	free(s);
}

/* The environment: NAME=VALUE lines, split in place. */
struct env_table {
	char *lines[32];
	size_t n;
};

static const char *env_get(const char *name, void *userdata)
{
	const struct env_table *t = userdata;
	size_t n = strlen(name);

	for (size_t i = 0; i < t->n; i++)
		if (!strncmp(t->lines[i], name, n) && t->lines[i][n] == '=')
			return t->lines[i] + n + 1;
	return NULL;
}

static void env(const char *text, size_t len)
{
	struct flowsdn_cni_env e = { .command = 0 };
	struct env_table t = { .n = 0 };
	char *s = strndup(text, len), *p;
	int r;

	if (!s)
		return;
	for (p = s; p && t.n < 32; t.n++) {
		t.lines[t.n] = p;
		p = strchr(p, '\n');
		if (p)
			*p++ = '\0';
	}
	r = flowsdn_cni_env_read(env_get, &t, &e, diag);
	if (r < 0) {
		refused(r);
		check(e.command == 0);
	} else {
		check(e.command >= FLOWSDN_CNI_CMD_ADD && e.command <= FLOWSDN_CNI_CMD_GC);
		if (e.command == FLOWSDN_CNI_CMD_ADD || e.command == FLOWSDN_CNI_CMD_DEL ||
		    e.command == FLOWSDN_CNI_CMD_CHECK)
			check(e.container_id && flowsdn_cni_container_id_valid(e.container_id) && e.ifname &&
			      flowsdn_cni_ifname_valid(e.ifname));
	}
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;
	size_t len = size ? size - 1 : 0;

	if (!diag && flowsdn_diag_new(&diag) < 0)
		abort();
	flowsdn_diag_reset(diag);
	if (size == 0)
		return 0;
	switch (data[0]) {
	case 'c': conf(text, len); break;
	case 'l': conflist(text, len); break;
	case 'r': result(text, len); break;
	case 'a': args(text, len); break;
	case 'e': env(text, len); break;
	default: conf((const char *)data, size); break;
	}
	return 0;
}
