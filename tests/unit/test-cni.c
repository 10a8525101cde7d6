/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CNI configurations, results, environment and output, checked against
 * the examples of the CNI specification (SPEC.md, 1.1.0) and its error
 * table. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <flowsdn/cni.h>

#include "diag-helpers.h"
#include "helpers.h"

DIAG_TEST_HELPERS(flowsdn)

/* The specification's example configuration list ("dbnet"). */
static const char spec_conflist[] =
	"{\"cniVersion\":\"1.1.0\",\"cniVersions\":[\"1.0.0\",\"1.1.0\"],\"name\":\"dbnet\","
	"\"plugins\":[{\"type\":\"bridge\",\"bridge\":\"cni0\","
	"\"keyA\":[\"some more\",\"plugin specific\",\"configuration\"],"
	"\"ipam\":{\"type\":\"host-local\",\"subnet\":\"10.1.0.0/16\",\"gateway\":\"10.1.0.1\","
	"\"routes\":[{\"dst\":\"0.0.0.0/0\"}]},\"dns\":{\"nameservers\":[\"10.1.0.1\"]}},"
	"{\"type\":\"tuning\",\"capabilities\":{\"mac\":true},\"sysctl\":{\"net.core.somaxconn\":\"500\"}},"
	"{\"type\":\"portmap\",\"capabilities\":{\"portMappings\":true}}]}";

/* The specification's example result of the bridge plugin's ADD. */
static const char spec_result[] =
	"{\"cniVersion\":\"1.1.0\",\"interfaces\":["
	"{\"name\":\"cni0\",\"mac\":\"00:11:22:33:44:55\"},"
	"{\"name\":\"veth3243\",\"mac\":\"55:44:33:22:11:11\"},"
	"{\"name\":\"eth0\",\"mac\":\"99:88:77:66:55:44\",\"sandbox\":\"/var/run/netns/blue\"}],"
	"\"ips\":[{\"address\":\"10.1.0.5/16\",\"gateway\":\"10.1.0.1\",\"interface\":2}],"
	"\"routes\":[{\"dst\":\"0.0.0.0/0\"}],\"dns\":{\"nameservers\":[\"10.1.0.1\"]}}";

static int conf_parse(const char *json, struct flowsdn_diag *d, struct flowsdn_cni_conf **c)
{
	return flowsdn_cni_conf_parse(json, strlen(json), c, d);
}

Test(cni, spec_conflist_and_derived_plugin_conf)
{
	struct flowsdn_cni_conflist *l = NULL;
	struct flowsdn_cni_conf *c = NULL;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
	char *pc = NULL;
	const char *s;

	ASSERT_OK(flowsdn_cni_conflist_parse(spec_conflist, strlen(spec_conflist), &l, d), flowsdn_test_text(d));
	ASSERT_STREQ(flowsdn_cni_conflist_name(l), "dbnet", "name");
	ASSERT_STREQ(flowsdn_cni_conflist_version(l), "1.1.0", "newest of cniVersions");
	cr_assert_eq(flowsdn_cni_conflist_plugin_count(l), 3);
	cr_assert(!flowsdn_cni_conflist_disable_check(l));
	ASSERT_ERR(flowsdn_cni_conflist_plugin_conf(l, 3, NULL, &pc), -ERANGE, "past the end");

	/* The tuning plugin gets the bridge's result as prevResult. */
	ASSERT_OK(flowsdn_cni_conflist_plugin_conf(l, 1, spec_result, &pc), "plugin 1");
	ASSERT_OK(conf_parse(pc, d, &c), flowsdn_test_text(d));
	ASSERT_STREQ(flowsdn_cni_conf_type(c), "tuning", "type");
	ASSERT_STREQ(flowsdn_cni_conf_name(c), "dbnet", "name inserted");
	ASSERT_STREQ(flowsdn_cni_conf_version(c), "1.1.0", "version inserted");
	cr_assert_not_null(flowsdn_cni_conf_prev_result(c));
	cr_assert_eq(flowsdn_cni_result_iface_count(flowsdn_cni_conf_prev_result(c)), 3);
	ASSERT_ERR(flowsdn_cni_conf_get_string(c, "bridge", &s), -ENOENT, "bridge is plugin 0's");
	flowsdn_cni_conf_free(c);
	free(pc);

	ASSERT_OK(flowsdn_cni_conflist_plugin_conf(l, 0, NULL, &pc), "plugin 0");
	ASSERT_OK(conf_parse(pc, d, &c), flowsdn_test_text(d));
	ASSERT_OK(flowsdn_cni_conf_get_string(c, "bridge", &s), "bridge key");
	ASSERT_STREQ(s, "cni0", "bridge");
	ASSERT_ERR(flowsdn_cni_conf_get_string(c, "keyA", &s), -FLOWSDN_E_CNI_CONFIG, "array is not a string");
	cr_assert_null(flowsdn_cni_conf_prev_result(c));
	cr_assert_eq(flowsdn_cni_result_nameserver_count(flowsdn_cni_conf_dns(c)), 1);
	ASSERT_STREQ(flowsdn_cni_result_nameserver(flowsdn_cni_conf_dns(c), 0), "10.1.0.1", "dns");
	flowsdn_cni_conf_free(c);
	free(pc);
	flowsdn_cni_conflist_free(l);
}

Test(cni, spec_result_parses_and_round_trips)
{
	struct flowsdn_cni_result *r = NULL, *r2 = NULL;
	const struct flowsdn_cni_ip *ip;
	char *out = NULL, buf[FLOWSDN_ADDR_STRLEN];
	size_t len;

	ASSERT_OK(flowsdn_cni_result_parse(spec_result, strlen(spec_result), &r, NULL), "spec result");
	cr_assert_eq(flowsdn_cni_result_iface_count(r), 3);
	ASSERT_STREQ(flowsdn_cni_result_iface(r, 2)->sandbox, "/var/run/netns/blue", "sandbox");
	ASSERT_STREQ(flowsdn_cni_result_iface(r, 0)->sandbox, "", "host interface");
	cr_assert_eq(flowsdn_cni_result_ip_count(r), 1);
	ip = flowsdn_cni_result_ip(r, 0);
	cr_assert_eq(ip->prefix_len, 16);
	cr_assert_eq(ip->iface, 2);
	cr_assert(ip->has_gateway);
	ASSERT_OK(flowsdn_addr_format(&ip->addr, buf, sizeof(buf)), "format");
	ASSERT_STREQ(buf, "10.1.0.5", "host bits kept");
	cr_assert_eq(flowsdn_cni_result_route_count(r), 1);
	cr_assert_eq(flowsdn_cni_result_route(r, 0)->dst.len, 0);

	ASSERT_OK(flowsdn_cni_result_format(r, "1.1.0", &out, &len), "format 1.1.0");
	cr_assert_eq(len, strlen(out));
	ASSERT_STREQ(out, spec_result, "1.1.0 output is the spec's example");
	ASSERT_OK(flowsdn_cni_result_parse(out, len, &r2, NULL), "reparse");
	cr_assert_eq(flowsdn_cni_result_ip_count(r2), 1);
	flowsdn_cni_result_free(r2);
	free(out);
	flowsdn_cni_result_free(r);
}

static struct flowsdn_cni_result *make_result(void)
{
	struct flowsdn_cni_result *r = NULL;
	struct flowsdn_cni_iface f = { .name = "eth0", .mac = "0a:58:0a:01:00:05", .mtu = 1450 };
	struct flowsdn_cni_ip ip4 = { .prefix_len = 24, .has_gateway = true, .iface = 0 };
	struct flowsdn_cni_ip ip6 = { .prefix_len = 64, .iface = 0 };
	struct flowsdn_cni_route rt = { 0 };
	int idx;

	strcpy(f.sandbox, "/run/netns/x");
	ASSERT_OK(flowsdn_cni_result_new(&r), "new");
	idx = flowsdn_cni_result_add_iface(r, &f);
	cr_assert_eq(idx, 0);
	cr_assert(flowsdn_addr_parse("10.1.0.5", 8, &ip4.addr) == 0);
	cr_assert(flowsdn_addr_parse("10.1.0.1", 8, &ip4.gateway) == 0);
	cr_assert(flowsdn_addr_parse("fd00::5", 7, &ip6.addr) == 0);
	ASSERT_OK(flowsdn_cni_result_add_ip(r, &ip4), "ip4");
	ASSERT_OK(flowsdn_cni_result_add_ip(r, &ip6), "ip6");
	cr_assert(flowsdn_prefix_parse("0.0.0.0/0", 9, NULL, &rt.dst) == 0);
	rt.has_gw = true;
	rt.gw = ip4.gateway;
	ASSERT_OK(flowsdn_cni_result_add_route(r, &rt), "route");
	ASSERT_OK(flowsdn_cni_result_add_nameserver(r, "10.1.0.1"), "ns");
	ASSERT_OK(flowsdn_cni_result_add_search(r, "svc.cluster.local"), "search");
	ASSERT_OK(flowsdn_cni_result_set_domain(r, "cluster.local"), "domain");
	return r;
}

Test(cni, result_versions)
{
	struct flowsdn_cni_result *r = make_result();
	char *out = NULL;

	ASSERT_OK(flowsdn_cni_result_format(r, "0.4.0", &out, NULL), "0.4.0");
	cr_assert(strstr(out, "{\"version\":\"4\",\"address\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\",\"interface\":0}"),
		  "%s", out);
	cr_assert(strstr(out, "{\"version\":\"6\",\"address\":\"fd00::5/64\",\"interface\":0}"), "%s", out);
	cr_assert_null(strstr(out, "\"mtu\""), "no mtu before 1.1.0: %s", out);
	free(out);

	ASSERT_OK(flowsdn_cni_result_format(r, "1.0.0", &out, NULL), "1.0.0");
	cr_assert(strstr(out, "\"cniVersion\":\"1.0.0\""), "%s", out);
	cr_assert_null(strstr(out, "\"version\""), "no ip version in 1.0.0: %s", out);
	cr_assert_null(strstr(out, "\"mtu\""), "no mtu in 1.0.0: %s", out);
	cr_assert(strstr(out, "\"dns\":{\"nameservers\":[\"10.1.0.1\"],\"domain\":\"cluster.local\","
			      "\"search\":[\"svc.cluster.local\"]}"), "%s", out);
	free(out);

	ASSERT_OK(flowsdn_cni_result_format(r, "1.1.0", &out, NULL), "1.1.0");
	cr_assert(strstr(out, "\"mtu\":1450"), "%s", out);
	free(out);

	ASSERT_ERR(flowsdn_cni_result_format(r, "0.3.1", &out, NULL), -FLOWSDN_E_CNI_INCOMPATIBLE, "0.3.1");
	ASSERT_ERR(flowsdn_cni_result_format(r, "2.0", &out, NULL), -FLOWSDN_E_CNI_VERSION_UNKNOWN, "2.0");
	flowsdn_cni_result_free(r);
}

/* The result format is strict: every key the spec does not name is
 * refused, at the top and in each entry, naming where it is. */
Test(cni, result_refuses_unknown_keys)
{
	static const struct {
		const char *json;
		const char *diag;
	} bad[] = {
		{ "{\"cniVersion\":\"1.0.0\",\"extra\":1}", "result.extra: unknown key" },
		{ "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"eth0\",\"colour\":\"red\"}]}",
		  "result.interfaces[0].colour: unknown key" },
		{ "{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.0.0.2/24\"},{\"address\":\"10.0.0.3/24\",\"x\":0}]}",
		  "result.ips[1].x: unknown key" },
		{ "{\"cniVersion\":\"1.0.0\",\"routes\":[{\"dst\":\"0.0.0.0/0\",\"mtu\":\"1500\"}]}",
		  "result.routes[0].mtu: must be a number" },
		{ "{\"cniVersion\":\"1.0.0\",\"dns\":{\"nameservers\":[],\"sortlist\":[]}}", "result.dns.sortlist: unknown key" },
	};
	static const char ok[] = "{\"cniVersion\":\"1.1.0\",\"interfaces\":[{\"name\":\"eth0\",\"socketPath\":\"/s\",\"pciID\":\"0000:00:01.0\"}],"
				 "\"routes\":[{\"dst\":\"0.0.0.0/0\",\"mtu\":1400,\"advmss\":1360,\"priority\":5,\"table\":100,\"scope\":0}],"
				 "\"dns\":{\"domain\":\"example\",\"options\":[\"ndots:2\"]}}";
	struct flowsdn_cni_result *r = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();

		ASSERT_ERR(flowsdn_cni_result_parse(bad[i].json, strlen(bad[i].json), &r, d), -FLOWSDN_E_CNI_RESULT,
			   bad[i].json);
		cr_assert(strstr(flowsdn_test_text(d), bad[i].diag), "%s: diag \"%s\" lacks \"%s\"", bad[i].json,
			  flowsdn_test_text(d), bad[i].diag);
		cr_assert_null(r, "ret untouched on failure");
	}
	ASSERT_OK(flowsdn_cni_result_parse(ok, strlen(ok), &r, NULL), "every 1.1.0 field known");
	cr_assert_eq(flowsdn_cni_result_iface_count(r), 1);
	flowsdn_cni_result_free(r);
}

Test(cni, result_builder_refuses_bad_entries)
{
	struct flowsdn_cni_result *r = NULL;
	struct flowsdn_cni_ip ip = { .prefix_len = 33, .iface = -1 };
	struct flowsdn_cni_iface f = { .name = "" };

	ASSERT_OK(flowsdn_cni_result_new(&r), "new");
	cr_assert(flowsdn_addr_parse("10.0.0.1", 8, &ip.addr) == 0);
	ASSERT_ERR(flowsdn_cni_result_add_ip(r, &ip), -EINVAL, "prefix 33");
	ip.prefix_len = 8;
	ip.iface = 0;
	ASSERT_ERR(flowsdn_cni_result_add_ip(r, &ip), -EINVAL, "interface 0 does not exist");
	ASSERT_ERR(flowsdn_cni_result_add_iface(r, &f), -EINVAL, "empty name");
	ASSERT_ERR(flowsdn_cni_result_add_nameserver(r, "not-an-ip"), -EINVAL, "nameserver");
	flowsdn_cni_result_free(r);
}

/* Each bad configuration with its library error and the CNI code the
 * plugin prints. */
static const struct {
	const char *json;
	int err;
	unsigned int code;
	const char *diag;
} bad_confs[] = {
	{ "{\"name\":\"n\",\"type\":\"flowsdn-cni\"}", -FLOWSDN_E_CNI_CONFIG, 7, "cniVersion: missing" },
	{ "{\"cniVersion\":1,\"name\":\"n\",\"type\":\"t\"}", -FLOWSDN_E_CNI_CONFIG, 7, "cniVersion: must be" },
	{ "{\"cniVersion\":\"9.9.9\",\"name\":\"n\",\"type\":\"t\"}", -FLOWSDN_E_CNI_VERSION_UNKNOWN, 7, "not a CNI version" },
	{ "{\"cniVersion\":\"0.3.1\",\"name\":\"n\",\"type\":\"t\"}", -FLOWSDN_E_CNI_INCOMPATIBLE, 1, "not supported" },
	{ "{\"cniVersion\":\"1.0.0\",\"type\":\"t\"}", -FLOWSDN_E_CNI_CONFIG, 7, "name: missing" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":[],\"type\":\"t\"}", -FLOWSDN_E_CNI_CONFIG, 7, "name: must be" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"-bad\",\"type\":\"t\"}", -FLOWSDN_E_CNI_CONFIG, 7, "must match" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}", -FLOWSDN_E_CNI_CONFIG, 7, "type: missing" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":true}", -FLOWSDN_E_CNI_CONFIG, 7, "type: must be" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"dns\":[]}", -FLOWSDN_E_CNI_CONFIG, 7, "dns" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"disableCheck\":\"yes\"}", -FLOWSDN_E_CNI_CONFIG, 7, "disableCheck" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"prevResult\":{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.0.0.1\"}]}}",
	  -FLOWSDN_E_CNI_CONFIG, 7, "prevResult: result.ips[0]" },
	{ "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\",\"cni.dev/valid-attachments\":[{\"containerID\":\"a\"}]}",
	  -FLOWSDN_E_CNI_CONFIG, 7, "ifname: missing" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"name\":\"m\",\"type\":\"t\"}", -FLOWSDN_E_CNI_DECODE, 6, "line 1" },
	{ "{\"cniVersion\":\"1.0.0\",", -FLOWSDN_E_CNI_DECODE, 6, "line 1" },
	{ "[1,2]", -FLOWSDN_E_CNI_CONFIG, 7, "not a JSON object" },
	/* The known fields keep their types in the open format. */
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"ipam\":[]}", -FLOWSDN_E_CNI_CONFIG, 7,
	  "ipam: must be an object" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"x\":1,\"args\":\"k=v\"}", -FLOWSDN_E_CNI_CONFIG, 7,
	  "args: must be an object" },
	{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"disableGC\":0}", -FLOWSDN_E_CNI_CONFIG, 7,
	  "disableGC: must be a boolean" },
	{ "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\",\"cni.dev/valid-attachments\":{}}",
	  -FLOWSDN_E_CNI_CONFIG, 7, "[\"cni.dev/valid-attachments\"]: must be an array" },
};

Test(cni, bad_configurations)
{
	for (size_t i = 0; i < sizeof(bad_confs) / sizeof(bad_confs[0]); i++) {
		struct flowsdn_cni_conf *c = (struct flowsdn_cni_conf *)0x1;
		_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
		int err = conf_parse(bad_confs[i].json, d, &c);

		cr_assert_eq(err, bad_confs[i].err, "%s: got %d (%s) want %d", bad_confs[i].json, err, flowsdn_test_text(d),
			     bad_confs[i].err);
		cr_assert_eq(flowsdn_cni_code(err), bad_confs[i].code, "%s: code", bad_confs[i].json);
		cr_assert(strstr(flowsdn_test_text(d), bad_confs[i].diag), "%s: diag \"%s\" lacks \"%s\"", bad_confs[i].json, flowsdn_test_text(d),
			  bad_confs[i].diag);
		cr_assert_eq(c, (struct flowsdn_cni_conf *)0x1, "ret untouched on failure");
	}
}

Test(cni, gc_attachments_and_plugin_keys)
{
	static const char json[] =
		"{\"cniVersion\":\"1.1.0\",\"name\":\"flowsdn\",\"type\":\"flowsdn-cni\",\"mtu\":1500,"
		"\"agentSocket\":\"/run/x.sock\",\"cni.dev/valid-attachments\":["
		"{\"containerID\":\"abc\",\"ifname\":\"eth0\"},{\"containerID\":\"def\",\"ifname\":\"net1\"}]}";
	struct flowsdn_cni_conf *c = NULL;
	const char *cid, *ifn, *s;
	unsigned long mtu;

	ASSERT_OK(conf_parse(json, NULL, &c), "parse");
	cr_assert(flowsdn_cni_conf_has_attachments(c));
	cr_assert_eq(flowsdn_cni_conf_attachment_count(c), 2);
	ASSERT_OK(flowsdn_cni_conf_attachment(c, 1, &cid, &ifn), "attachment 1");
	ASSERT_STREQ(cid, "def", "containerID");
	ASSERT_STREQ(ifn, "net1", "ifname");
	ASSERT_ERR(flowsdn_cni_conf_attachment(c, 2, &cid, &ifn), -ERANGE, "past the end");
	ASSERT_OK(flowsdn_cni_conf_get_uint(c, "mtu", 576, 65535, &mtu), "mtu");
	cr_assert_eq(mtu, 1500);
	ASSERT_ERR(flowsdn_cni_conf_get_uint(c, "mtu", 1, 1000, &mtu), -FLOWSDN_E_CNI_CONFIG, "out of range");
	ASSERT_ERR(flowsdn_cni_conf_get_uint(c, "agentSocket", 1, 10, &mtu), -FLOWSDN_E_CNI_CONFIG, "string");
	ASSERT_OK(flowsdn_cni_conf_get_string(c, "agentSocket", &s), "socket");
	ASSERT_STREQ(s, "/run/x.sock", "socket");
	flowsdn_cni_conf_free(c);

	/* Without the key: not a GC configuration with an empty list. */
	ASSERT_OK(conf_parse("{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\"}", NULL, &c), "parse");
	cr_assert(!flowsdn_cni_conf_has_attachments(c));
	flowsdn_cni_conf_free(c);
	ASSERT_OK(conf_parse("{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\",\"cni.dev/valid-attachments\":[]}",
			     NULL, &c), "parse");
	cr_assert(flowsdn_cni_conf_has_attachments(c));
	cr_assert_eq(flowsdn_cni_conf_attachment_count(c), 0);
	flowsdn_cni_conf_free(c);
}

Test(cni, conflist_errors)
{
	static const char *const bad[] = {
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[]}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"bridge\":\"x\"}]}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[1]}",
		"{\"cniVersion\":\"1.0.0\",\"cniVersions\":[1],\"name\":\"n\",\"plugins\":[{\"type\":\"t\"}]}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"disableCheck\":1,\"plugins\":[{\"type\":\"t\"}]}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"disableGC\":\"no\",\"plugins\":[{\"type\":\"t\"}]}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":{\"type\":\"t\"}}",
	};
	struct flowsdn_cni_conflist *l = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();

		ASSERT_ERR(flowsdn_cni_conflist_parse(bad[i], strlen(bad[i]), &l, d), -FLOWSDN_E_CNI_CONFIG, bad[i]);
		cr_assert(flowsdn_test_text(d)[0], "diag for %s", bad[i]);
	}
	/* cniVersions naming only unknown versions falls back to cniVersion. */
	static const char fb[] = "{\"cniVersion\":\"1.0.0\",\"cniVersions\":[\"7.0.0\"],\"name\":\"n\","
				 "\"disableCheck\":true,\"plugins\":[{\"type\":\"t\"}]}";

	ASSERT_OK(flowsdn_cni_conflist_parse(fb, strlen(fb), &l, NULL), "fallback");
	ASSERT_STREQ(flowsdn_cni_conflist_version(l), "1.0.0", "version");
	cr_assert(flowsdn_cni_conflist_disable_check(l));
	flowsdn_cni_conflist_free(l);
}

/* CNI 1.1.0: plugins must ignore keys they do not know, in network
 * configurations and in configuration lists alike. */
Test(cni, open_formats_ignore_unknown_keys)
{
	static const char conf[] = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"vendor.example/x\":{\"a\":[1]},"
				   "\"bridge\":\"cni0\",\"ipam\":{\"type\":\"host-local\",\"extra\":true},\"disableGC\":false}";
	static const char list[] = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"futureKey\":null,"
				   "\"disableCheck\":false,\"plugins\":[{\"type\":\"t\",\"x\":1}]}";
	struct flowsdn_cni_conf *c = NULL;
	struct flowsdn_cni_conflist *l = NULL;

	ASSERT_OK(conf_parse(conf, NULL, &c), "configuration with unknown keys");
	ASSERT_STREQ(flowsdn_cni_conf_type(c), "t", "type");
	flowsdn_cni_conf_free(c);
	ASSERT_OK(flowsdn_cni_conflist_parse(list, strlen(list), &l, NULL), "list with unknown keys");
	cr_assert(!flowsdn_cni_conflist_disable_check(l));
	cr_assert_eq(flowsdn_cni_conflist_plugin_count(l), 1);
	flowsdn_cni_conflist_free(l);
}

Test(cni, container_id_and_ifname)
{
	cr_assert(flowsdn_cni_container_id_valid("abc"));
	cr_assert(flowsdn_cni_container_id_valid("0123456789abcdef_x.y-z"));
	cr_assert(!flowsdn_cni_container_id_valid(""));
	cr_assert(!flowsdn_cni_container_id_valid("-abc"));
	cr_assert(!flowsdn_cni_container_id_valid("_abc"));
	cr_assert(!flowsdn_cni_container_id_valid("a/b"));
	cr_assert(!flowsdn_cni_container_id_valid("a b"));
	cr_assert(!flowsdn_cni_container_id_valid("a\xc3\xa9"));
	cr_assert(!flowsdn_cni_container_id_valid(NULL));
	cr_assert(flowsdn_cni_ifname_valid("eth0"));
	cr_assert(flowsdn_cni_ifname_valid("123456789012345"));
	cr_assert(!flowsdn_cni_ifname_valid("1234567890123456"));
	cr_assert(!flowsdn_cni_ifname_valid(""));
	cr_assert(!flowsdn_cni_ifname_valid(".."));
	cr_assert(!flowsdn_cni_ifname_valid("a/b"));
	cr_assert(!flowsdn_cni_ifname_valid("a b"));
	cr_assert(!flowsdn_cni_ifname_valid("a:1"));
}

/* A fake environment: NULL-terminated name/value pairs. */
static const char *table_getenv(const char *name, void *userdata)
{
	const char *const *t = userdata;

	for (size_t i = 0; t[i]; i += 2)
		if (!strcmp(t[i], name))
			return t[i + 1];
	return NULL;
}

Test(cni, environment)
{
	const char *ok[] = { "CNI_COMMAND", "ADD", "CNI_CONTAINERID", "c1", "CNI_NETNS", "/run/netns/x",
			     "CNI_IFNAME", "eth0", "CNI_ARGS", "IgnoreUnknown=1", NULL };
	const char *del_no_netns[] = { "CNI_COMMAND", "DEL", "CNI_CONTAINERID", "c1", "CNI_IFNAME", "eth0", NULL };
	const char *bad_id[] = { "CNI_COMMAND", "ADD", "CNI_CONTAINERID", "../x", "CNI_NETNS", "/n", "CNI_IFNAME", "eth0", NULL };
	const char *no_netns[] = { "CNI_COMMAND", "ADD", "CNI_CONTAINERID", "c1", "CNI_IFNAME", "eth0", NULL };
	const char *bad_cmd[] = { "CNI_COMMAND", "add", NULL };
	const char *version[] = { "CNI_COMMAND", "VERSION", NULL };
	const char *bad_if[] = { "CNI_COMMAND", "DEL", "CNI_CONTAINERID", "c1", "CNI_IFNAME", "a/b", NULL };
	struct flowsdn_cni_env e = { 0 };
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();

	ASSERT_OK(flowsdn_cni_env_read(table_getenv, ok, &e, d), flowsdn_test_text(d));
	cr_assert_eq(e.command, FLOWSDN_CNI_CMD_ADD);
	ASSERT_STREQ(e.netns, "/run/netns/x", "netns");
	ASSERT_STREQ(e.args, "IgnoreUnknown=1", "args");
	ASSERT_OK(flowsdn_cni_env_read(table_getenv, del_no_netns, &e, d), "DEL without netns");
	ASSERT_OK(flowsdn_cni_env_read(table_getenv, version, &e, d), "VERSION needs nothing");
	ASSERT_ERR(flowsdn_cni_env_read(table_getenv, bad_id, &e, d), -FLOWSDN_E_CNI_CONTAINER_ID, "bad id");
	cr_assert_eq(flowsdn_cni_code(-FLOWSDN_E_CNI_CONTAINER_ID), 4);
	ASSERT_ERR(flowsdn_cni_env_read(table_getenv, no_netns, &e, d), -FLOWSDN_E_CNI_ENV, "ADD without netns");
	cr_assert(strstr(flowsdn_test_text(d), "CNI_NETNS"), "%s", flowsdn_test_text(d));
	ASSERT_ERR(flowsdn_cni_env_read(table_getenv, bad_cmd, &e, d), -FLOWSDN_E_CNI_ENV, "lower-case command");
	ASSERT_ERR(flowsdn_cni_env_read(table_getenv, bad_if, &e, d), -FLOWSDN_E_CNI_IFNAME, "bad ifname");
}

Test(cni, cni_args)
{
	static const char *const known[] = { "K8S_POD_NAME", "K8S_POD_NAMESPACE", NULL };
	struct flowsdn_cni_args *a = NULL;
	_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();

	ASSERT_OK(flowsdn_cni_args_parse("K8S_POD_NAME=web;K8S_POD_NAMESPACE=default", known, &a, d), flowsdn_test_text(d));
	ASSERT_STREQ(flowsdn_cni_args_get(a, "K8S_POD_NAME"), "web", "pod");
	cr_assert_null(flowsdn_cni_args_get(a, "OTHER"));
	flowsdn_cni_args_free(a);

	ASSERT_ERR(flowsdn_cni_args_parse("FOO=bar", known, &a, d), -FLOWSDN_E_CNI_ARGS, "unknown key");
	cr_assert(strstr(flowsdn_test_text(d), "FOO"), "%s", flowsdn_test_text(d));
	ASSERT_OK(flowsdn_cni_args_parse("IgnoreUnknown=1;FOO=bar;K8S_POD_NAME=x=y", known, &a, d), flowsdn_test_text(d));
	ASSERT_STREQ(flowsdn_cni_args_get(a, "K8S_POD_NAME"), "x=y", "value with =");
	ASSERT_STREQ(flowsdn_cni_args_get(a, "FOO"), "bar", "tolerated key");
	flowsdn_cni_args_free(a);
	ASSERT_OK(flowsdn_cni_args_parse("FOO=bar;IgnoreUnknown=true", NULL, &a, d), "IgnoreUnknown anywhere");
	flowsdn_cni_args_free(a);
	ASSERT_ERR(flowsdn_cni_args_parse("IgnoreUnknown=0;FOO=bar", NULL, &a, d), -FLOWSDN_E_CNI_ARGS, "0");
	ASSERT_ERR(flowsdn_cni_args_parse("noequals", NULL, &a, d), -FLOWSDN_E_CNI_ARGS, "no =");
	ASSERT_ERR(flowsdn_cni_args_parse("=v", NULL, &a, d), -FLOWSDN_E_CNI_ARGS, "empty key");
	ASSERT_ERR(flowsdn_cni_args_parse("IgnoreUnknown=maybe", NULL, &a, d), -FLOWSDN_E_CNI_ARGS, "maybe");
	ASSERT_OK(flowsdn_cni_args_parse("", NULL, &a, d), "empty");
	flowsdn_cni_args_free(a);
	ASSERT_OK(flowsdn_cni_args_parse(NULL, NULL, &a, d), "NULL");
	flowsdn_cni_args_free(a);
}

Test(cni, error_and_version_output)
{
	char *out = NULL;
	struct flowsdn_cni_result *r = NULL;

	ASSERT_OK(flowsdn_cni_error_format("1.0.0", 7, "invalid network config", "name: missing", &out), "error");
	ASSERT_STREQ(out, "{\"cniVersion\":\"1.0.0\",\"code\":7,\"msg\":\"invalid network config\","
			  "\"details\":\"name: missing\"}", "error JSON");
	free(out);
	ASSERT_OK(flowsdn_cni_error_format("0.1.0", 11, "try again", NULL, &out), "old version");
	ASSERT_STREQ(out, "{\"cniVersion\":\"1.1.0\",\"code\":11,\"msg\":\"try again\"}", "latest for unsupported");
	free(out);
	ASSERT_ERR(flowsdn_cni_error_format("1.0.0", 0, "x", NULL, &out), -EINVAL, "code 0");

	ASSERT_OK(flowsdn_cni_version_format("1.0.0", &out), "version");
	ASSERT_STREQ(out, "{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\",\"1.1.0\"]}", "VERSION");
	free(out);
	cr_assert_eq(flowsdn_cni_code(-ETIMEDOUT), 11);
	cr_assert_eq(flowsdn_cni_code(-FLOWSDN_E_CNI_NOT_READY), 50);
	cr_assert_eq(flowsdn_cni_code(-FLOWSDN_E_CNI_NOT_FOUND), 3);
	ASSERT_STREQ(flowsdn_strerror(-FLOWSDN_E_CNI_CONFIG), "invalid network configuration", "strerror");
	(void)r;
}

/* Found by fuzz-cni: the result's table reader computed "NULL + offset"
 * for the nested ips table it only checks (UBSan: applying zero offset to
 * null pointer; clang's UBSan reports it, gcc's does not).  The input is
 * replayed here; tests/fuzz/corpus/fuzz-cni/ keeps it for the fuzzer. */
Test(cni, result_tables_checked_without_a_target)
{
	static const char json[] = "{\"cniVersion\":\"0.4.0\",\"ips\":[{\"version\":\"4\",\"address\":\"10.244.7.3/24\","
				   "\"gateway\":\"10.244.7.1\"}]}";
	struct flowsdn_cni_result *r = NULL;

	ASSERT_OK(flowsdn_cni_result_parse(json, strlen(json), &r, NULL), "a 0.4.0 result with one address");
	cr_assert_eq(flowsdn_cni_result_ip_count(r), 1, "its one address");
	flowsdn_cni_result_free(r);
}

/* runtimeConfig.flowsdn.serviceTranslation (contract C3). */
Test(cni, runtime_config_service_translation)
{
	static const struct {
		const char *rc;
		int err;
		enum flowsdn_cni_svc_translation want;
	} cases[] = {
		{ "", 0, FLOWSDN_CNI_SVC_SOCKET },
		{ ",\"runtimeConfig\":{}", 0, FLOWSDN_CNI_SVC_SOCKET },
		{ ",\"runtimeConfig\":{\"flowsdn\":{}}", 0, FLOWSDN_CNI_SVC_SOCKET },
		{ ",\"runtimeConfig\":{\"flowsdn\":{\"serviceTranslation\":\"packet\"}}", 0, FLOWSDN_CNI_SVC_PACKET },
		{ ",\"runtimeConfig\":{\"flowsdn\":{\"serviceTranslation\":\"socket\",\"namespace\":\"x\"}}", 0,
		  FLOWSDN_CNI_SVC_SOCKET },
		{ ",\"runtimeConfig\":{\"flowsdn\":{\"serviceTranslation\":\"tc\"}}", -FLOWSDN_E_CNI_CONFIG, 0 },
		{ ",\"runtimeConfig\":{\"flowsdn\":{\"serviceTranslation\":1}}", -FLOWSDN_E_CNI_CONFIG, 0 },
		{ ",\"runtimeConfig\":{\"flowsdn\":\"packet\"}", -FLOWSDN_E_CNI_CONFIG, 0 },
	};
	enum flowsdn_cni_svc_translation m;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_flowsdn_diag_ struct flowsdn_diag *d = flowsdn_test_diag();
		struct flowsdn_cni_conf *c = NULL;
		char json[256];
		int err;

		snprintf(json, sizeof(json), "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\"%s}", cases[i].rc);
		err = conf_parse(json, d, &c);
		cr_assert_eq(err, cases[i].err, "%s: got %d (%s)", json, err, flowsdn_test_text(d));
		if (err) {
			cr_assert(strstr(flowsdn_test_text(d), "runtimeConfig.flowsdn"), "%s: diag \"%s\" names the field",
				  json, flowsdn_test_text(d));
			continue;
		}
		cr_assert_eq(flowsdn_cni_conf_svc_translation(c), cases[i].want, "%s", json);
		flowsdn_cni_conf_free(c);
	}
	ASSERT_OK(flowsdn_cni_svc_translation_parse("packet", &m), "packet");
	cr_assert_eq(m, FLOWSDN_CNI_SVC_PACKET);
	ASSERT_ERR(flowsdn_cni_svc_translation_parse("PACKET", &m), -EINVAL, "case matters");
	ASSERT_STREQ(flowsdn_cni_svc_translation_name(FLOWSDN_CNI_SVC_SOCKET), "socket", "name");
	cr_assert_null(flowsdn_cni_svc_translation_name((enum flowsdn_cni_svc_translation)3));
	cr_assert_eq(flowsdn_cni_conf_svc_translation(NULL), FLOWSDN_CNI_SVC_SOCKET);
}
