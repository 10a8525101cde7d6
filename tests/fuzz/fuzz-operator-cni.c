/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for what flash-operator reads around flowsdn-cni
 * (operator/runtime-net.c, op_cni_run()): the conflist of --cni-conf
 * turned into the configuration given to the plugin on stdin
 * (op_cni_config_build()), and the plugin's ADD result turned into the
 * replica's or session's address (op_cni_result_address()).  The first
 * byte says which: 'r' a result read into a buffer of FLOWSDN_ADDR_STRLEN,
 * 's' into one of 8 bytes, anything else a conflist; the rest is the
 * input.
 * Properties:
 *  - a refusal is -EBADMSG (-ENOBUFS for a result whose address does not
 *    fit, -ENOMEM) with a message saying what is wrong, and leaves the
 *    address untouched; a refused conflist is one libflowsdn's CNI codec
 *    refuses, and its message is that codec's first problem;
 *  - an accepted result gives an address flowsdn_addr_parse() accepts,
 *    canonical (it formats back to the same text), the result's first ip;
 *  - a built configuration is JSON whose cniVersion and name are the
 *    conflist's, whose runtimeConfig.flowsdn is the identity given, and
 *    whose other keys are those of the conflist's first plugin; when that
 *    plugin's configuration (as a runtime builds it) is one flowsdn-cni
 *    accepts, the built one is accepted too, with the same type.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/addr.h>
#include <flowsdn/cni.h>
#include <flowsdn/diag.h>

#include "fuzz-helpers.h"
#include "json.h"
#include "runtime-net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void result(const char *text, size_t len, size_t size)
{
	char address[FLOWSDN_ADDR_STRLEN + 1], again[FLOWSDN_ADDR_STRLEN], err[256];
	struct flowsdn_cni_result *res = NULL;
	struct flowsdn_addr a;
	int r;

	memset(address, 'x', sizeof(address));
	r = op_cni_result_address(text, len, address, size, err, sizeof(err));
	if (r < 0) {
		fuzz_check(r == -EBADMSG || r == -ENOBUFS || r == -ENOMEM);
		fuzz_check(err[0] && memchr(err, 0, sizeof(err)));
		for (size_t i = 0; i < sizeof(address); i++)
			fuzz_check(address[i] == 'x');
		if (r == -ENOBUFS)
			fuzz_check(size < FLOWSDN_ADDR_STRLEN);
		return;
	}
	fuzz_check(memchr(address, 0, size) != NULL);
	for (size_t i = size; i < sizeof(address); i++)
		fuzz_check(address[i] == 'x');
	fuzz_check(flowsdn_addr_parse(address, strlen(address), &a) == 0);
	fuzz_check(flowsdn_addr_format(&a, again, sizeof(again)) >= 0 && !strcmp(again, address));
	fuzz_check(flowsdn_cni_result_parse(text, len, &res, NULL) == 0);
	fuzz_check(flowsdn_cni_result_ip_count(res) > 0);
	fuzz_check(flowsdn_addr_equal(&flowsdn_cni_result_ip(res, 0)->addr, &a));
	flowsdn_cni_result_free(res);
}

static void conflist(const char *text, size_t len, const char *identity)
{
	struct flowsdn_cni_conflist *list = NULL;
	struct flowsdn_cni_conf *theirs = NULL, *ours = NULL;
	struct flowsdn_diag *diag = NULL;
	struct json_value *built = NULL, *plugin = NULL, *id = NULL;
	const struct json_value *rc;
	char *conf = NULL, *pconf = NULL, err[256], line[256];
	int r, lr;

	if (flowsdn_diag_new(&diag) < 0)
		return;
	lr = flowsdn_cni_conflist_parse(text, len, &list, diag);
	r = op_cni_config_build(text, len, "/run/flowsdn/agent.sock", identity, &conf, err, sizeof(err));
	if (r < 0) {
		fuzz_check(r == -EBADMSG || r == -ENOMEM);
		fuzz_check(err[0] && memchr(err, 0, sizeof(err)));
		if (r == -EBADMSG) {
			fuzz_check(lr < 0);
			if (flowsdn_diag_first_error(diag)) {
				fuzz_check(flowsdn_diag_entry_format(flowsdn_diag_first_error(diag), line, sizeof(line)) >= 0);
				fuzz_check(!line[0] || !strcmp(line, err));
			}
		}
		goto out;
	}
	fuzz_check(lr == 0);
	fuzz_check(json_parse(conf, strlen(conf), NULL, &built, NULL) == 0 && json_is(built, JSON_OBJECT));
	fuzz_check(json_string_value(json_get(built, "cniVersion")) &&
		   !strcmp(json_string_value(json_get(built, "cniVersion")), flowsdn_cni_conflist_version(list)));
	fuzz_check(json_string_value(json_get(built, "name")) &&
		   !strcmp(json_string_value(json_get(built, "name")), flowsdn_cni_conflist_name(list)));
	fuzz_check(json_parse(identity, strlen(identity), NULL, &id, NULL) == 0);
	rc = json_get(built, "runtimeConfig");
	fuzz_check(json_is(rc, JSON_OBJECT) && rc->u.object.n == 1 && json_equal(json_get(rc, "flowsdn"), id));
	/* every other key is the first plugin's, as a runtime passes it */
	fuzz_check(flowsdn_cni_conflist_plugin_conf(list, 0, NULL, &pconf) == 0);
	fuzz_check(json_parse(pconf, strlen(pconf), NULL, &plugin, NULL) == 0);
	for (size_t i = 0; i < built->u.object.n; i++) {
		const char *k = built->u.object.members[i].key;

		if (strcmp(k, "runtimeConfig") != 0)
			fuzz_check(json_equal(built->u.object.members[i].value, json_get(plugin, k)));
	}
	for (size_t i = 0; i < plugin->u.object.n; i++)
		fuzz_check(!strcmp(plugin->u.object.members[i].key, "runtimeConfig") ||
			   json_get(built, plugin->u.object.members[i].key));
	if (flowsdn_cni_conf_parse(pconf, strlen(pconf), &theirs, NULL) == 0) {
		fuzz_check(flowsdn_cni_conf_parse(conf, strlen(conf), &ours, NULL) == 0);
		fuzz_check(!strcmp(flowsdn_cni_conf_type(ours), flowsdn_cni_conf_type(theirs)));
		fuzz_check(flowsdn_cni_conf_svc_translation(ours) == FLOWSDN_CNI_SVC_PACKET);
	}
out:
	flowsdn_cni_conf_free(theirs);
	flowsdn_cni_conf_free(ours);
	json_free(built);
	json_free(plugin);
	json_free(id);
	free(conf);
	free(pconf);
	flowsdn_cni_conflist_free(list);
	flowsdn_diag_free(diag);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *identity;
	const char *text = (const char *)data + 1;

	if (size == 0)
		return 0;
	if (!identity) {
		/* what the runtime sends for a replica of service "web" */
		struct json_writer *w = json_writer_new(0);

		op_runtime_net_cni_identity(w, "web", "acme");
		if (json_writer_finish(w, &identity, NULL) < 0)
			abort();
	}
	if (data[0] == 'r' || data[0] == 's')
		result(text, size - 1, data[0] == 'r' ? FLOWSDN_ADDR_STRLEN : 8);
	else
		conflist(text, size - 1, identity);
	return 0;
}
