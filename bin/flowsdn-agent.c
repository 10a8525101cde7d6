/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-agent — the node agent: loads the datapath, owns the node's
 * endpoints and serves the API the CNI plugin uses.  Argument parsing and
 * signal handling only; the agent is flowsdn_agent_new() in libflowsdn.
 * See flowsdn-agent(8) and flowsdn-agent.conf(5).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flowsdn/agent.h>

static void log_stderr(enum flowsdn_log_level level, const char *msg, void *userdata)
{
	static const char *const names[] = { [FLOWSDN_LOG_ERR] = "error", [FLOWSDN_LOG_WARNING] = "warning",
					     [FLOWSDN_LOG_INFO] = "info", [FLOWSDN_LOG_DEBUG] = "debug" };

	(void)userdata;
	fprintf(stderr, "flowsdn-agent: %s: %s\n", level <= FLOWSDN_LOG_DEBUG && names[level] ? names[level] : "log",
		msg);
}

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
	struct flowsdn_agent_config *cfg = NULL;
	struct flowsdn_agent_diag diag = { { 0 } };
	struct flowsdn_agent *agent = NULL;
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
	flowsdn_set_log(log_stderr, debug ? FLOWSDN_LOG_DEBUG : FLOWSDN_LOG_INFO, NULL);
	err = config ? flowsdn_agent_config_load(config, &diag, &cfg) : flowsdn_agent_config_new(&cfg);
	if (err < 0) {
		fprintf(stderr, "flowsdn-agent: %s: %s\n", config ? config : "defaults",
			diag.msg[0] ? diag.msg : flowsdn_strerror(err));
		return 1;
	}
	if (print) {
		char *json = NULL;

		err = flowsdn_agent_config_format(cfg, &json);
		if (err == 0)
			puts(json);
		free(json);
		flowsdn_agent_config_free(cfg);
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
	err = flowsdn_agent_new(cfg, &agent);
	if (err < 0) {
		fprintf(stderr, "flowsdn-agent: cannot start: %s\n", flowsdn_strerror(err));
		flowsdn_agent_config_free(cfg);
		return 1;
	}
	fprintf(stderr, "flowsdn-agent: ready: %zu endpoints, API on %s\n", flowsdn_agent_endpoint_count(agent),
		flowsdn_agent_config_socket(cfg));
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			/* Replays DELs a plugin queued; nothing else reloads. */
			flowsdn_agent_replay_queue(agent);
			continue;
		}
		break;
	}
	fprintf(stderr, "flowsdn-agent: stopping (endpoints and datapath stay)\n");
	flowsdn_agent_free(agent);
	flowsdn_agent_config_free(cfg);
	return 0;
}
