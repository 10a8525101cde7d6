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
#include <flowsdn/common.h>

#include "agent-api.h"
#include "diag.h"
#include "conf.h"
#include "core.h"
#include "http.h"
#include "log.h"

static void usage(FILE *f)
{
	fputs("usage: flowsdn-agent [--config PATH] [--debug]\n"
	      "       flowsdn-agent --print-config [--config PATH]\n"
	      "       flowsdn-agent --help | --version\n"
	      "\n"
	      "  -c, --config PATH   JSON configuration (see flowsdn-agent.conf(5)); default: built-in defaults\n"
	      "  -p, --print-config  print the effective configuration with every key and exit\n"
	      "  -d, --debug         log debug messages\n"
	      "  -h, --help          show this help and exit\n"
	      "  -V, --version       show the version and exit\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "print-config", no_argument, NULL, 'p' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct agent_config *cfg = NULL;
	struct diag *diag = NULL;
	char why[512] = "";
	struct agent_core *core = NULL;
	struct agent_http *http = NULL;
	const char *config = NULL;
	bool print = false, debug = false;
	sigset_t set;
	int c, err, sig;

	while ((c = getopt_long(argc, argv, "c:pdhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
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
	if (print) {
		char *json = NULL;

		err = agent_config_format(cfg, &json);
		if (err == 0)
			puts(json);
		free(json);
		agent_config_free(cfg);
		return err < 0 ? 1 : 0;
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
	}
	if (err < 0) {
		fprintf(stderr, "flowsdn-agent: cannot start: %s\n", agent_api_strerror(err));
		agent_core_free(core);
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
	agent_http_stop(http);
	agent_core_free(core);
	agent_config_free(cfg);
	return 0;
}
