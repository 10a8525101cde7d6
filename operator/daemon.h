/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-operator as a whole (private to operator/): reads the key set,
 * the owner policy and the configuration, opens the store, builds the
 * provider and starts the HTTP listeners.  bin/flash-operator.c parses
 * arguments into a struct op_daemon_opts and calls this; tests and
 * bench/provider start the same daemon with their own image ops.
 */
#ifndef FLASH_OPERATOR_DAEMON_H
#define FLASH_OPERATOR_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "k8s-reconcile.h"
#include "provider.h"
#include "sandbox-gvisor.h"
#include "sandbox-http.h"
#include "sandbox-k8s.h"

/* Autoscaling settings from the command line (flash-operator(8)
 * --autoscale-period, --autoscale-window, --autoscale-tolerance); each
 * < 0 (period: <= 0) takes the configuration's autoscaling section. */
struct op_daemon_autoscale {
	int period_s, window_s, tolerance_percent;
};

struct op_daemon_opts {
	size_t sz;
	const char *state_dir;   /* required: the store is STATE_DIR/flash.db */
	const char *keys_file;   /* required: JWKS or {"kid": "x"} map (public keys) */
	const char *issuer;      /* required */
	const char *audience;    /* required */
	const char *policy_file; /* owner quota policy; NULL: none */
	const char *config_file; /* flash-operator.conf(5); NULL: defaults */
	struct op_http_opts http;
	const struct op_image_ops *image; /* NULL: op_image_default_ops with @registry */
	struct op_image_settings registry; /* CA file, plain http, timeout */
	/* The single-node runtime (runtime.h): the options given on the
	 * command line, each overriding the configuration's runtime section;
	 * the runtime runs when either names a directory.  NULL and no
	 * runtime.dir: none, services stay admitted.  Its services source and
	 * registry are filled in here. */
	const struct op_runtime_opts *runtime;
	/* Web Shell: sessions open at once and their lifetime in seconds;
	 * each 0: the configuration's exec section, else the defaults. */
	unsigned int exec_max_sessions;
	unsigned int exec_limit_s;
	/* The validating admission webhook (webhook.h) on its own TLS
	 * listener: served when @webhook is set; each NULL takes the
	 * configuration's webhook.listen, webhook.certFile, webhook.keyFile. */
	bool webhook;
	const char *webhook_listen;
	const char *webhook_cert_file;
	const char *webhook_key_file;
	/* For tests: the metering clock read from this file (meter-clock.h);
	 * NULL: the real clock. */
	const char *test_meter_clock;
	/* Autoscaling (autoscale.h), with the runtime; NULL: the
	 * configuration's settings. */
	const struct op_daemon_autoscale *autoscale;
	/* Kubernetes mode (k8s-reconcile.h): the provider API's services are
	 * published as FlashServices and reconciled on the cluster instead of
	 * run by the single-node runtime (which is not started).  Its config
	 * is the daemon's. */
	const struct op_k8s_run_opts *kubernetes;
	/* Sandbox sessions on this node (sandbox-gvisor.h, issue 20): the
	 * gVisor backend with these options (its registry defaults to the
	 * daemon's) behind a <flash/sandbox.h> provider; NULL: none. */
	const struct op_sandbox_gvisor_opts *sandbox;
	/* Sandbox sessions in Kubernetes mode (sandbox-k8s.h): the command
	 * line's settings, each over the configuration's sandbox section
	 * (op_sandbox_k8s_settings()); a namespace from either serves them
	 * (a Pod per session) with the run's client and schemas; NULL and no
	 * sandbox.namespace: none.  Only with @kubernetes. */
	const struct op_sandbox_k8s_opts *sandbox_k8s;
	/* Bounds of the provider/v1 sandbox routes over it (sandbox-http.h);
	 * NULL: their defaults. */
	const struct op_sandbox_http_opts *sandbox_http;
};

struct op_daemon;

/* Starts everything; on failure @err (@err_size bytes) says what.
 * Returns 0, -EINVAL, -ENOMEM or the error of the failing part. */
int op_daemon_start(const struct op_daemon_opts *opts, struct op_daemon **ret, char *err, size_t err_size);

/* The webhook's bound port, 0 without it. */
uint16_t op_daemon_webhook_port(const struct op_daemon *d);

/* The sandbox sessions' provider (NULL without opts->sandbox). */
struct flash_sandbox_provider *op_daemon_sandbox(struct op_daemon *d);

/* The provider and metrics of a started daemon. */
struct op_provider *op_daemon_provider(struct op_daemon *d);
uint16_t op_daemon_port(const struct op_daemon *d);

/* Stops the listeners and closes the store; NULL is fine. */
void op_daemon_stop(struct op_daemon *d);

#endif
