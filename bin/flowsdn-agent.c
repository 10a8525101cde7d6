/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-agent — the node agent: loads the datapath, owns the node's
 * endpoints and serves the API the CNI plugin uses.  Argument parsing,
 * wiring (the core of agent/core.h served by agent/http.h) and signal
 * handling only.  See flowsdn-agent(8) and flowsdn-agent.conf(5).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <flowsdn/common.h>

#include "agent-api.h"
#include "diag.h"
#include "conf.h"
#include "core.h"
#include "http.h"
#include "../agent/k8s.h"
#include "log.h"

#include "../common/k8s.h"

static void usage(FILE *f)
{
	fputs("usage: flowsdn-agent [--config PATH] [--debug]\n"
	      "                     [--kubernetes [--kubeconfig PATH] [--context NAME] [--node-name NAME]]\n"
	      "       flowsdn-agent --print-config [--config PATH]\n"
	      "       flowsdn-agent --help | --version\n"
	      "\n"
	      "  -c, --config PATH   JSON configuration (see flowsdn-agent.conf(5)); default: built-in defaults\n"
	      "  -p, --print-config  print the effective configuration with every key and exit\n"
	      "  -d, --debug         log debug messages\n"
	      "  -k, --kubernetes    follow the cluster (see KUBERNETES in flowsdn-agent(8))\n"
	      "      --kubeconfig PATH  kubeconfig to use (default: the in-cluster service account)\n"
	      "      --context NAME  the kubeconfig context (default: its current-context)\n"
	      "      --node-name NAME  this node (default: $NODE_NAME, then the host name)\n"
	      "  -h, --help          show this help and exit\n"
	      "  -V, --version       show the version and exit\n",
	      f);
}

static void kube_log(enum k8s_log_level level, const char *message, void *userdata)
{
	(void)userdata;
	agent_log(level <= K8S_LOG_ERR ? FLOWSDN_LOG_ERR
		  : level == K8S_LOG_WARNING ? FLOWSDN_LOG_WARNING
		  : level == K8S_LOG_INFO ? FLOWSDN_LOG_INFO : FLOWSDN_LOG_DEBUG,
		  "kubernetes: %s", message);
}

/* Kubernetes mode, before the core: the client configuration (flags over
 * the "kubernetes" key, in-cluster otherwise), the node's name, and its
 * Node's pools (over "pools") and InternalIPs (the NodePort addresses
 * when "node-addresses" names none). */
static int kube_prepare(struct agent_config *cfg, const char *kubeconfig, const char *context, const char *node_name,
			struct k8s_config **ret_kcfg, struct k8s_client **ret_writer)
{
	struct k8s_client_opts co = { .sz = sizeof(co), .user_agent = "flowsdn-agent", .log = kube_log };
	struct diag *diag = NULL;
	char why[512] = "", host[256];
	struct flowsdn_prefix pools[AGENT_MAX_POOLS];
	struct flowsdn_addr addrs[AGENT_MAX_NODE_ADDRS];
	size_t n_pools = 0, n_addrs = 0;
	bool fallback = false;
	int err;

	kubeconfig = kubeconfig ? kubeconfig : cfg->k8s_kubeconfig;
	context = context ? context : cfg->k8s_context;
	node_name = node_name ? node_name : cfg->k8s_node_name;
	if (!node_name)
		node_name = getenv("NODE_NAME");
	if (!node_name && gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		node_name = host;
	}
	if (!node_name || !node_name[0]) {
		fprintf(stderr, "flowsdn-agent: kubernetes: no node name (--node-name, \"nodeName\" or $NODE_NAME)\n");
		return -EINVAL;
	}
	if (diag_new(&diag) < 0)
		return -ENOMEM;
	err = kubeconfig ? k8s_config_from_kubeconfig(kubeconfig, context, ret_kcfg, diag)
			 : k8s_config_in_cluster(NULL, ret_kcfg, diag);
	if (err < 0) {
		if (diag_entry_format(diag_first_error(diag), why, sizeof(why)) < 0)
			snprintf(why, sizeof(why), "%s", strerror(-err));
		fprintf(stderr, "flowsdn-agent: kubernetes: %s: %s\n", kubeconfig ? kubeconfig : "in-cluster configuration",
			why);
		diag_free(diag);
		return err;
	}
	diag_free(diag);
	err = k8s_client_new(*ret_kcfg, &co, ret_writer);
	if (err == 0)
		err = agent_k8s_read_node(*ret_writer, node_name, pools, AGENT_MAX_POOLS, &n_pools, &fallback, addrs,
					  AGENT_MAX_NODE_ADDRS, &n_addrs, why, sizeof(why));
	if (err == 0 && (err = -!(cfg->k8s_node_name || (cfg->k8s_node_name = strdup(node_name)))) == 0 &&
	    strcmp(cfg->k8s_node_name, node_name)) {
		free(cfg->k8s_node_name);
		err = (cfg->k8s_node_name = strdup(node_name)) ? 0 : -ENOMEM;
	}
	if (err < 0) {
		fprintf(stderr, "flowsdn-agent: kubernetes: node %s: %s\n", node_name, why[0] ? why : strerror(-err));
		k8s_client_free(*ret_writer);
		k8s_config_free(*ret_kcfg);
		*ret_writer = NULL;
		*ret_kcfg = NULL;
		return err;
	}
	memcpy(cfg->pools, pools, n_pools * sizeof(*pools));
	cfg->n_pools = n_pools;
	if (!cfg->n_node_addrs) {
		memcpy(cfg->node_addrs, addrs, n_addrs * sizeof(*addrs));
		cfg->n_node_addrs = n_addrs;
	}
	fprintf(stderr, "flowsdn-agent: kubernetes: node %s, %zu pool%s%s\n", node_name, n_pools, n_pools == 1 ? "" : "s",
		fallback ? " (no podCIDR: the 10.<last IPv4 byte>.0.0/16 fallback)" : " (its podCIDRs)");
	return 0;
}

static int kube_routes(void *userdata, char **ret_json)
{
	return agent_k8s_routes_json(userdata, ret_json);
}

/* Kubernetes mode, once the core and the API run: the watches. */
static int kube_start(struct agent_core *core, const struct agent_config *cfg, const struct k8s_config *kcfg,
		      struct k8s_client *writer, struct agent_k8s **ret)
{
	struct agent_k8s_opts o = {
		.sz = sizeof(o),
		.node_name = cfg->k8s_node_name,
		.services = agent_core_services(core),
		.policy = agent_core_policy(core),
		.core = core,
		.route_ops = &agent_k8s_route_ops_kernel,
		.pools = cfg->pools,
		.n_pools = cfg->n_pools,
		.writer = writer,
	};
	struct agent_k8s *k = NULL;
	int err = agent_k8s_new(&o, &k);

	if (err == 0)
		err = agent_k8s_start(k, kcfg);
	if (err < 0) {
		agent_k8s_free(k);
		return err;
	}
	agent_core_set_node_routes(core, kube_routes, k);
	*ret = k;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "print-config", no_argument, NULL, 'p' },
		{ "debug", no_argument, NULL, 'd' },
		{ "kubernetes", no_argument, NULL, 'k' },
		{ "kubeconfig", required_argument, NULL, 1 },
		{ "context", required_argument, NULL, 2 },
		{ "node-name", required_argument, NULL, 3 },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct agent_config *cfg = NULL;
	struct diag *diag = NULL;
	char why[512] = "";
	struct agent_core *core = NULL;
	struct agent_http *http = NULL;
	const char *config = NULL, *kubeconfig = NULL, *context = NULL, *node_name = NULL;
	bool print = false, debug = false, kubernetes = false;
	struct k8s_config *kcfg = NULL;
	struct k8s_client *writer = NULL;
	struct agent_k8s *k8s = NULL;
	sigset_t set;
	int c, err, sig;

	while ((c = getopt_long(argc, argv, "c:pdkhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'k': kubernetes = true; break;
		case 1: kubeconfig = optarg; break;
		case 2: context = optarg; break;
		case 3: node_name = optarg; break;
		case 'p': print = true; break;
		case 'd': debug = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("flowsdn-agent %s\n", flowsdn_version()); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	agent_log_set_level(debug ? FLOWSDN_LOG_DEBUG : FLOWSDN_LOG_INFO);
	flowsdn_set_log(agent_log_library, debug ? FLOWSDN_LOG_DEBUG : FLOWSDN_LOG_INFO, NULL);
	if (config && diag_new(&diag) < 0) {
		fprintf(stderr, "flowsdn-agent: out of memory\n");
		return 1;
	}
	err = config ? agent_config_load(config, &cfg, diag) : agent_config_new(&cfg);
	if (err < 0 && diag_entry_format(diag_first_error(diag), why, sizeof(why)) < 0)
		snprintf(why, sizeof(why), "%s", agent_api_strerror(err));
	diag_free(diag);
	if (err < 0) {
		fprintf(stderr, "flowsdn-agent: %s: %s\n", config ? config : "defaults", why);
		return 1;
	}
	if (kubernetes || kubeconfig || context || node_name)
		cfg->kubernetes = true;
	if (print) {
		char *json = NULL;

		err = agent_config_format(cfg, &json);
		if (err == 0)
			puts(json);
		free(json);
		agent_config_free(cfg);
		return err < 0 ? 1 : 0;
	}
	if (cfg->kubernetes && kube_prepare(cfg, kubeconfig, context, node_name, &kcfg, &writer) < 0) {
		agent_config_free(cfg);
		return 1;
	}
	/* Block the stop signals before the library's threads start, so
	 * that only sigwait() below sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	err = agent_core_new(cfg, NULL, NULL, &core);
	if (err == 0) {
		err = agent_http_start(core, &http);
		/* DELs queued while we started, before the socket answered. */
		if (err == 0)
			(void)agent_core_replay_queue(core);
		if (err == 0 && cfg->kubernetes)
			err = kube_start(core, cfg, kcfg, writer, &k8s);
	}
	if (err < 0) {
		fprintf(stderr, "flowsdn-agent: cannot start: %s\n", agent_api_strerror(err));
		agent_http_stop(http);
		agent_core_free(core);
		k8s_client_free(writer);
		k8s_config_free(kcfg);
		agent_config_free(cfg);
		return 1;
	}
	fprintf(stderr, "flowsdn-agent: ready: %zu endpoints, API on %s\n", agent_core_endpoint_count(core),
		cfg->socket);
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			/* Replays DELs a plugin queued; nothing else reloads. */
			(void)agent_core_replay_queue(core);
			continue;
		}
		break;
	}
	fprintf(stderr, "flowsdn-agent: stopping (endpoints and datapath stay)\n");
	/* No request may still be reading the routes when they are freed. */
	agent_http_stop(http);
	if (k8s) {
		agent_core_set_node_routes(core, NULL, NULL);
		agent_k8s_free(k8s);
	}
	k8s_client_free(writer);
	k8s_config_free(kcfg);
	agent_core_free(core);
	agent_config_free(cfg);
	return 0;
}
