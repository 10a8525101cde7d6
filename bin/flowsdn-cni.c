/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flowsdn-cni — the CNI plugin (primary veth and loopback, by "type").
 * Run by a container runtime with CNI_* in the environment and the
 * configuration on stdin; `flowsdn-cni install` puts it on a node.
 * Everything is decided in cni/ (cni_plugin_run(), cni_install()); see
 * flowsdn-cni(8).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <flowsdn/cni.h>

#include "agent-api.h"
#include "install.h"
#include "plugin.h"

#define MAX_STDIN (1u << 20)

static const char *env_get(const char *name, void *userdata)
{
	(void)userdata;
	return getenv(name);
}

static void usage(FILE *f)
{
	fputs("usage: flowsdn-cni                       (run by a CNI runtime: CNI_COMMAND=ADD|DEL|CHECK|STATUS|VERSION|GC)\n"
	      "       flowsdn-cni install [--cni-bin-dir DIR] [--cni-conf-dir DIR]\n"
	      "                           [--agent-socket PATH] [--queue-dir DIR]\n"
	      "       flowsdn-cni --help | --version\n",
	      f);
}

static int install(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cni-bin-dir", required_argument, NULL, 'b' },
		{ "cni-conf-dir", required_argument, NULL, 'c' },
		{ "agent-socket", required_argument, NULL, 's' },
		{ "queue-dir", required_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cni_install_opts o = { .plugin_path = "/proc/self/exe" };
	int c, err;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'b': o.bin_dir = optarg; break;
		case 'c': o.conf_dir = optarg; break;
		case 's': o.socket = optarg; break;
		case 'q': o.queue_dir = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	err = cni_install(&o);
	if (err < 0) {
		fprintf(stderr, "flowsdn-cni install: %s\n", agent_api_strerror(err));
		return 1;
	}
	printf("installed flowsdn-cni in %s and 00-flowsdn.conflist in %s\n", o.bin_dir ? o.bin_dir : "/opt/cni/bin",
	       o.conf_dir ? o.conf_dir : "/etc/cni/net.d");
	return 0;
}

int main(int argc, char **argv)
{
	char *in = NULL, *out = NULL;
	size_t len = 0;
	int status, err;

	if (argc > 1 && !strcmp(argv[1], "install"))
		return install(argc - 1, argv + 1);
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf("flowsdn-cni %s (CNI 0.4.0, 1.0.0, 1.1.0)\n", flowsdn_version());
		return 0;
	}
	if (argc > 1) {
		usage(stderr);
		return 2;
	}
	/* The configuration on stdin, at most 1 MiB (VERSION may have none). */
	in = malloc(MAX_STDIN + 1);
	if (!in)
		return 1;
	/* Without CNI_COMMAND there is nothing to read: the library answers
	 * with the "invalid environment" error. */
	while (getenv("CNI_COMMAND") && len <= MAX_STDIN) {
		ssize_t n = read(STDIN_FILENO, in + len, MAX_STDIN + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	err = cni_plugin_run(in, len, env_get, NULL, NULL, &out, &status);
	if (err < 0) {
		fprintf(stderr, "flowsdn-cni: %s\n", agent_api_strerror(err));
		status = 1;
	} else if (out[0]) {
		fputs(out, stdout);
		fputc('\n', stdout);
	}
	free(out);
	free(in);
	return fflush(stdout) == 0 ? status : 1;
}
