/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-operator: arguments and signals; everything else is in operator/
 * (see flash-operator(8)).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <flash/common.h>

#include "daemon.h"
#include "k8s-reconcile.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: flash-operator --keys FILE --issuer ISS --audience AUD\n"
		"                      (--socket PATH | --listen ADDRESS:PORT [--tls-cert FILE --tls-key FILE])\n"
		"                      [--state-dir DIR] [--policy FILE] [--config FILE]\n"
		"                      [--max-connections N] [--per-ip-connections N] [--timeout SECONDS]\n"
		"                      [--header-timeout MS] [--reserved-connections N]\n"
		"                      [--max-body BYTES] [--threads N] [--registry-ca FILE] [--registry-plain-http]\n"
		"                      [--runtime-dir DIR] [--cni-bin-dir DIR] [--cni-conf FILE] [--agent-socket PATH]\n"
		"                      [--runsc PATH] [--cgroup-parent PATH] [--dns SERVERS] [--masquerade]\n"
		"                      [--exec-max-sessions N] [--exec-session-limit SECONDS]\n"
		"                      [--autoscale-period SECONDS] [--autoscale-window SECONDS]\n"
		"                      [--autoscale-tolerance PERCENT]\n"
		"                      [--webhook] [--webhook-listen ADDRESS:PORT] [--webhook-cert FILE]\n"
		"                      [--webhook-key FILE]\n"
		"                      [--sandbox-dir DIR [--sandbox-pool-size N --sandbox-pool-image REF]\n"
		"                       [--sandbox-pool-cpu MILLIS] [--sandbox-pool-memory MIB] [--sandbox-max-ops N]\n"
		"                       [--sandbox-read-max BYTES] [--sandbox-write-max BYTES] [--sandbox-import-max BYTES]]\n"
		"                      [--test-meter-clock FILE]\n"
		"       flash-operator --kubernetes [--kubeconfig FILE] [--context NAME] [--config FILE]\n"
		"                      [--keys FILE --issuer ISS --audience AUD (--socket PATH | --listen ...)]\n"
		"                      [--lease-namespace NS] [--identity ID]\n"
		"                      [--sandbox-namespace NS [--sandbox-net-setup-image REF]\n"
		"                       [--sandbox-runtime-class NAME] [--sandbox-node-selector KEY=VALUE,...]\n"
		"                       [--sandbox-tolerations KEY[=VALUE][:EFFECT],...]\n"
		"                       [--sandbox-image-pull-secrets NAME,...] [--sandbox-max-ops N] ...]\n"
		"       flash-operator --help | --version\n"
		"Serves the provider/v1 API of HeteroCloud Flash; see flash-operator(8).\n");
}

static int parse_range(const char *opt, const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || !*s || *end || s[0] == '-' || s[0] == '+' || s[0] == ' ' || v < min || v > max) {
		fprintf(stderr, "flash-operator: %s %s: expected an integer %lu..%lu\n", opt, s, min, max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int parse_uint(const char *opt, const char *s, unsigned long max, unsigned long *ret)
{
	return parse_range(opt, s, 1, max, ret);
}

static void k8s_log(enum k8s_log_level level, const char *message, void *userdata)
{
	(void)userdata;
	if (level <= K8S_LOG_INFO)
		fprintf(stderr, "flash-operator: %s%s\n",
			level == K8S_LOG_ERR ? "error: " : level == K8S_LOG_WARNING ? "warning: " : "", message);
}

/* Signals are taken synchronously by the main thread only: blocked here
 * before any thread starts, then sigwait()ed. */
static void block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* --kubernetes: the reconcile loop until SIGTERM or SIGINT. */
static int run_kubernetes(struct op_k8s_run_opts *ko)
{
	struct op_k8s_run *run = NULL;
	sigset_t set;
	int sig, r;

	block_signals(&set);
	r = op_k8s_run_start(ko, &run);
	if (r < 0) {
		fprintf(stderr, "flash-operator: Kubernetes mode: %s\n", flash_strerror(r));
		return 1;
	}
	fprintf(stderr, "flash-operator: Kubernetes mode: CRDs Established, watching FlashServices\n");
	do {
		if (sigwait(&set, &sig) != 0)
			sig = SIGTERM;
	} while (sig == SIGHUP);
	op_k8s_run_stop(run);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "keys", required_argument, NULL, 'k' },
		{ "issuer", required_argument, NULL, 'i' },
		{ "audience", required_argument, NULL, 'a' },
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "tls-cert", required_argument, NULL, 'C' },
		{ "tls-key", required_argument, NULL, 'K' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "policy", required_argument, NULL, 'p' },
		{ "config", required_argument, NULL, 'c' },
		{ "max-connections", required_argument, NULL, 'm' },
		{ "per-ip-connections", required_argument, NULL, 'P' },
		{ "timeout", required_argument, NULL, 't' },
		{ "header-timeout", required_argument, NULL, 'e' },
		{ "reserved-connections", required_argument, NULL, 'r' },
		{ "max-body", required_argument, NULL, 'b' },
		{ "threads", required_argument, NULL, 'T' },
		{ "registry-ca", required_argument, NULL, 'R' },
		{ "registry-plain-http", no_argument, NULL, 'H' },
		{ "runtime-dir", required_argument, NULL, 1000 },
		{ "cni-bin-dir", required_argument, NULL, 1001 },
		{ "cni-conf", required_argument, NULL, 1002 },
		{ "agent-socket", required_argument, NULL, 1003 },
		{ "runsc", required_argument, NULL, 1004 },
		{ "cgroup-parent", required_argument, NULL, 1005 },
		{ "dns", required_argument, NULL, 1006 },
		{ "masquerade", no_argument, NULL, 1007 },
		{ "test-meter-clock", required_argument, NULL, 1008 },
		{ "exec-max-sessions", required_argument, NULL, 1009 },
		{ "exec-session-limit", required_argument, NULL, 1010 },
		{ "autoscale-period", required_argument, NULL, 1011 },
		{ "autoscale-window", required_argument, NULL, 1012 },
		{ "autoscale-tolerance", required_argument, NULL, 1013 },
		{ "webhook", no_argument, NULL, 1014 },
		{ "webhook-listen", required_argument, NULL, 1015 },
		{ "webhook-cert", required_argument, NULL, 1016 },
		{ "webhook-key", required_argument, NULL, 1017 },
		{ "sandbox-dir", required_argument, NULL, 1018 },
		{ "sandbox-max-ops", required_argument, NULL, 1023 },
		{ "sandbox-read-max", required_argument, NULL, 1024 },
		{ "sandbox-write-max", required_argument, NULL, 1025 },
		{ "sandbox-import-max", required_argument, NULL, 1026 },
		{ "sandbox-pool-size", required_argument, NULL, 1019 },
		{ "sandbox-pool-image", required_argument, NULL, 1020 },
		{ "sandbox-pool-cpu", required_argument, NULL, 1021 },
		{ "sandbox-pool-memory", required_argument, NULL, 1022 },
		{ "sandbox-namespace", required_argument, NULL, 1027 },
		{ "sandbox-net-setup-image", required_argument, NULL, 1028 },
		{ "sandbox-runtime-class", required_argument, NULL, 1029 },
		{ "sandbox-node-selector", required_argument, NULL, 1030 },
		{ "sandbox-tolerations", required_argument, NULL, 1031 },
		{ "sandbox-image-pull-secrets", required_argument, NULL, 1032 },
		{ "kubernetes", no_argument, NULL, 1100 },
		{ "kubeconfig", required_argument, NULL, 1101 },
		{ "context", required_argument, NULL, 1102 },
		{ "lease-namespace", required_argument, NULL, 1103 },
		{ "identity", required_argument, NULL, 1104 },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	struct op_daemon_opts o = { .sz = sizeof(o), .state_dir = "/var/lib/flash" };
	struct op_runtime_opts rt = { .sz = sizeof(rt) };
	struct op_sandbox_gvisor_opts sb = { .sz = sizeof(sb) };
	struct op_sandbox_http_opts sbh = { .sz = sizeof(sbh) };
	/* Kubernetes mode's: parsed by the backend (op_sandbox_k8s_new()) */
	struct op_sandbox_k8s_opts sk = { .sz = sizeof(sk) };
	struct op_daemon_autoscale as = { .period_s = -1, .window_s = -1, .tolerance_percent = -1 };
	struct op_daemon *d = NULL;
	struct op_k8s_run_opts ko = { .sz = sizeof(ko), .log = k8s_log };
	bool kubernetes = false;
	char err[1024] = "";
	unsigned long v;
	sigset_t set;
	int c, sig, r;

	o.http.sz = sizeof(o.http);
	while ((c = getopt_long(argc, argv, "hV", options, NULL)) != -1) {
		switch (c) {
		case 'k': o.keys_file = optarg; break;
		case 'i': o.issuer = optarg; break;
		case 'a': o.audience = optarg; break;
		case 's': o.http.unix_path = optarg; break;
		case 'l': o.http.listen = optarg; break;
		case 'C': o.http.tls_cert_file = optarg; break;
		case 'K': o.http.tls_key_file = optarg; break;
		case 'd': o.state_dir = optarg; break;
		case 'p': o.policy_file = optarg; break;
		case 'c': o.config_file = optarg; break;
		case 'R': o.registry.ca_file = optarg; break;
		case 'H': o.registry.plain_http = true; break;
		case 1000: rt.dir = optarg; o.runtime = &rt; break;
		case 1001: rt.cni_bin_dir = optarg; o.runtime = &rt; break;
		case 1002: rt.cni_conf = optarg; o.runtime = &rt; break;
		case 1003: rt.agent_socket = optarg; o.runtime = &rt; break;
		case 1004: rt.runsc = optarg; o.runtime = &rt; break;
		case 1005: rt.cgroup_parent = optarg; o.runtime = &rt; break;
		case 1006: rt.dns = optarg; o.runtime = &rt; break;
		case 1007: rt.masquerade = true; o.runtime = &rt; break;
		case 1009:
		case 1010:
			if (parse_uint(c == 1009 ? "--exec-max-sessions" : "--exec-session-limit", optarg,
				       c == 1009 ? 1024 : 86400, &v) < 0)
				return 2;
			if (c == 1009)
				o.exec_max_sessions = (unsigned int)v;
			else
				o.exec_limit_s = (unsigned int)v;
			break;
		case 1008: o.test_meter_clock = optarg; break;
		case 1011:
		case 1012:
		case 1013:
			if (parse_range(c == 1011 ? "--autoscale-period" : c == 1012 ? "--autoscale-window" : "--autoscale-tolerance",
					optarg, c == 1011 ? 1 : 0, c == 1013 ? 99 : 3600, &v) < 0)
				return 2;
			*(c == 1011 ? &as.period_s : c == 1012 ? &as.window_s : &as.tolerance_percent) = (int)v;
			o.autoscale = &as;
			break;
		case 1100: kubernetes = true; break;
		case 1101: ko.kubeconfig = optarg; kubernetes = true; break;
		case 1102: ko.context = optarg; kubernetes = true; break;
		case 1103: ko.lease_namespace = optarg; kubernetes = true; break;
		case 1104: ko.identity = optarg; kubernetes = true; break;
		case 1014: o.webhook = true; break;
		case 1015: o.webhook_listen = optarg; o.webhook = true; break;
		case 1016: o.webhook_cert_file = optarg; o.webhook = true; break;
		case 1017: o.webhook_key_file = optarg; o.webhook = true; break;
		case 1018: sb.dir = optarg; o.sandbox = &sb; break;
		case 1020: sb.pool_image = optarg; break;
		case 1027: sk.namespace = optarg; o.sandbox_k8s = &sk; break;
		case 1028: sk.net_setup_image = optarg; o.sandbox_k8s = &sk; break;
		case 1029: sk.runtime_class = optarg; o.sandbox_k8s = &sk; break;
		case 1030: sk.node_selector = optarg; o.sandbox_k8s = &sk; break;
		case 1031: sk.tolerations = optarg; o.sandbox_k8s = &sk; break;
		case 1032: sk.image_pull_secrets = optarg; o.sandbox_k8s = &sk; break;
		case 1023:
			if (parse_uint("--sandbox-max-ops", optarg, 4096, &v) < 0)
				return 2;
			sbh.max_ops = (unsigned int)v;
			o.sandbox_http = &sbh;
			break;
		case 1024:
		case 1025:
		case 1026:
			if (parse_uint(c == 1024 ? "--sandbox-read-max" : c == 1025 ? "--sandbox-write-max" : "--sandbox-import-max",
				       optarg, ULONG_MAX, &v) < 0)
				return 2;
			*(c == 1024 ? &sbh.read_max_bytes : c == 1025 ? &sbh.write_max_bytes : &sbh.import_max_bytes) = v;
			o.sandbox_http = &sbh;
			break;
		case 1019:
		case 1021:
		case 1022:
			if (parse_uint(c == 1019 ? "--sandbox-pool-size" : c == 1021 ? "--sandbox-pool-cpu" : "--sandbox-pool-memory",
				       optarg, c == 1019 ? 64 : c == 1021 ? 64000 : 1048576, &v) < 0)
				return 2;
			if (c == 1019)
				sb.pool_size = (unsigned int)v;
			else
				*(c == 1021 ? &sb.pool_cpu_millis : &sb.pool_memory_mib) = (uint32_t)v;
			break;
		case 'm':
		case 'P':
		case 't':
		case 'T':
		case 'b':
		case 'e':
		case 'r':
			if (parse_uint(c == 'm'   ? "--max-connections"
				       : c == 'P' ? "--per-ip-connections"
				       : c == 't' ? "--timeout"
				       : c == 'T' ? "--threads"
				       : c == 'e' ? "--header-timeout"
				       : c == 'r' ? "--reserved-connections"
						  : "--max-body",
				       optarg, c == 'b' ? 64ul << 20 : c == 'e' ? 600000 : 65535, &v) < 0)
				return 2;
			if (c == 'm')
				o.http.max_connections = (unsigned int)v;
			else if (c == 'P')
				o.http.per_ip_connections = (unsigned int)v;
			else if (c == 't')
				o.http.timeout_s = (unsigned int)v;
			else if (c == 'T')
				o.http.threads = (unsigned int)v;
			else if (c == 'e')
				o.http.header_timeout_ms = (unsigned int)v;
			else if (c == 'r')
				o.http.reserved_connections = (unsigned int)v;
			else
				o.http.max_body_bytes = v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("flash-operator %s (libflash %s)\n", PACKAGE_VERSION, flash_version());
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (kubernetes && !o.keys_file) {
		/* The reconcile loop alone: FlashServices written with kubectl. */
		if (optind != argc) {
			usage(stderr);
			return 2;
		}
		if (o.sandbox_k8s || o.sandbox_http) {
			fprintf(stderr, "flash-operator: sandbox sessions are served by the provider API (--keys ...)\n");
			return 2;
		}
		ko.config_file = o.config_file;
		return run_kubernetes(&ko);
	}
	if (kubernetes)
		o.kubernetes = &ko; /* the provider API on top */
	if ((sb.pool_size || sb.pool_image || sb.pool_cpu_millis || sb.pool_memory_mib) &&
	    (!o.sandbox || !sb.pool_size != !sb.pool_image)) {
		fprintf(stderr, "flash-operator: the sandbox pool needs --sandbox-dir, --sandbox-pool-size and --sandbox-pool-image\n");
		return 2;
	}
	if (o.sandbox_http && !o.sandbox && !kubernetes) {
		fprintf(stderr, "flash-operator: the sandbox routes' bounds need --sandbox-dir (or --kubernetes)\n");
		return 2;
	}
	if (o.sandbox_k8s && !kubernetes) {
		fprintf(stderr, "flash-operator: --sandbox-namespace and its options are Kubernetes mode's (--kubernetes)\n");
		return 2;
	}
	if (o.sandbox && kubernetes) {
		fprintf(stderr, "flash-operator: --sandbox-dir runs gVisor sandboxes on this node, not in Kubernetes mode\n");
		return 2;
	}
	sb.runsc = rt.runsc;
	if (optind != argc || !o.keys_file || !o.issuer || !o.audience || (!o.http.unix_path && !o.http.listen)) {
		usage(stderr);
		return 2;
	}
	/* The runtime options complete the configuration's runtime section
	 * (checked together by op_daemon_start()). */
	if (!o.http.tls_cert_file != !o.http.tls_key_file) {
		fprintf(stderr, "flash-operator: --tls-cert and --tls-key go together\n");
		return 2;
	}
	if (o.http.tls_cert_file && !o.http.listen) {
		fprintf(stderr, "flash-operator: --tls-cert needs --listen\n");
		return 2;
	}

	block_signals(&set);

	r = op_daemon_start(&o, &d, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "flash-operator: %s\n", err[0] ? err : flash_strerror(r));
		return 1;
	}
	if (o.http.listen)
		fprintf(stderr, "flash-operator: listening on %s (port %u)%s\n", o.http.listen, op_daemon_port(d),
			o.http.tls_cert_file ? " with TLS" : "");
	if (o.http.unix_path)
		fprintf(stderr, "flash-operator: listening on unix:%s\n", o.http.unix_path);
	do {
		if (sigwait(&set, &sig) != 0)
			sig = SIGTERM;
	} while (sig == SIGHUP);
	op_daemon_stop(d);
	return 0;
}
