/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Assembly of flash-operator (daemon.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/file.h>
#include <flash/policy.h>
#include <flash/render.h>
#include <flash/spec.h>

#include "autoscale.h"
#include "daemon.h"
#include "meter-clock.h"
#include "registry-auth.h"
#include "util.h"
#include "webhook.h"

#define INPUT_MAX (4u << 20)

struct op_daemon {
	struct flash_auth_keyset *keys;
	struct flash_policy *policy;
	struct flash_operator_config *config;
	struct op_store *store;
	struct op_metrics *metrics;
	struct op_provider *provider;
	struct op_http *http;
	struct op_runtime *runtime;
	struct op_autoscale *autoscale;
	struct op_image_settings registry;
	struct op_registry_auth auth;
	struct op_image_ops image;
	struct op_meter_clock *meter_clock; /* --test-meter-clock */
	struct op_webhook *webhook;         /* --webhook */
	struct op_k8s_run *k8s;             /* --kubernetes */
	struct flash_sandbox_provider *sandbox; /* --sandbox-dir */
	struct op_sandbox_tenants *tenants;     /* whose session a Provision makes */
	struct op_sandbox_http_opts sandbox_http; /* the routes' settings, with tenants */
};

/* Reads an input file through the one reader of common/ (regular files
 * only, bounded, a FIFO never blocks the start). */
static int read_input(const char *path, char **ret, size_t *ret_len, char *err, size_t err_size)
{
	int r = util_read_file(path, INPUT_MAX, ret, ret_len);

	if (r < 0)
		snprintf(err, err_size, "%s: %s", path,
			 r == -EINVAL ? "not a regular file" : r == -EFBIG ? "too large" : strerror(-r));
	return r;
}

/* Reads the --keys JWKS through flash_file_read_public(): whoever can
 * write the key set can mint commands, so a group- or world-writable file,
 * or one another user owns, is refused (a world-readable one is fine). */
static int read_keys(const char *path, char **ret, size_t *ret_len, char *err, size_t err_size)
{
	int r = flash_file_read_public(path, 0, ret, ret_len);

	if (r < 0)
		snprintf(err, err_size, "%s: %s", path,
			 r == -EPERM    ? "group- or world-writable, or not owned by this user or root (a key set "
					  "others can write is refused)" :
			 r == -ELOOP    ? "a symbolic link" :
			 r == -EBADFD   ? "not a regular file" :
			 r == -EFBIG    ? "too large" : strerror(-r));
	return r;
}

static void first_problem(const struct flash_diag *d, char *out, size_t size)
{
	const struct flash_diag_entry *e = flash_diag_get(d, 0);

	snprintf(out, size, "%s%s%s", e ? e->path : "", e && e->path[0] ? ": " : "", e ? e->message : "invalid");
}

static bool runtime_configured(const struct flash_operator_config *c)
{
	struct flash_operator_runtime cr = { .sz = sizeof(cr) };

	return c && flash_operator_config_runtime(c, &cr) == 0 && cr.dir;
}

/* Does the configuration name a sandbox directory (sandbox.dir)? */
static bool sandbox_configured(const struct flash_operator_config *c)
{
	struct flash_operator_runtime cr = { .sz = sizeof(cr) };

	return c && flash_operator_config_runtime(c, &cr) == 0 && cr.sandbox_dir;
}

/* Sandbox sessions in Kubernetes mode: the backend over the run's client
 * and schemas, behind the provider the routes serve; @err names the
 * setting refused (sandbox.KEY, or its --sandbox-* option). */
static int sandbox_k8s_start(struct op_daemon *d, struct op_sandbox_k8s_opts *ko, char *err, size_t err_size)
{
	const struct flash_sandbox_backend_ops *ops = NULL;
	void *backend = NULL;
	struct diag *dg = NULL;
	int r;

	ko->schemas = op_k8s_run_schemas(d->k8s);
	ko->new_client = op_k8s_run_new_client;
	ko->client_ctx = d->k8s;
	r = diag_new(&dg);
	if (r == 0)
		r = op_sandbox_k8s_new(ko, &ops, &backend, dg);
	if (r == 0)
		r = flash_sandbox_provider_new(ops, backend, NULL, &d->sandbox);
	if (r < 0) {
		const struct diag_entry *e = dg && diag_count(dg) ? diag_get(dg, 0) : NULL;

		if (e)
			snprintf(err, err_size, "sandbox sessions in Kubernetes mode: sandbox.%s: %s", e->path, e->message);
		else
			snprintf(err, err_size, "sandbox sessions in Kubernetes mode: %s", flash_strerror(r));
	}
	diag_free(dg);
	return r;
}

/* The runtime settings: each option given on the command line wins over
 * the configuration's runtime section (flash-operator.conf(5)). */
static int runtime_settings(struct op_runtime_opts *ro, const struct flash_operator_config *c, char *err,
			    size_t err_size)
{
	struct flash_operator_runtime cr = { .sz = sizeof(cr) };

	if (c && flash_operator_config_runtime(c, &cr) == 0) {
		ro->dir = ro->dir ?: cr.dir;
		ro->cni_bin_dir = ro->cni_bin_dir ?: cr.cni_bin_dir;
		ro->cni_conf = ro->cni_conf ?: cr.cni_conf;
		ro->agent_socket = ro->agent_socket ?: cr.agent_socket;
		ro->runsc = ro->runsc ?: cr.runsc;
		ro->cgroup_parent = ro->cgroup_parent ?: cr.cgroup_parent;
		ro->dns = ro->dns ?: cr.dns;
		ro->masquerade = ro->masquerade || cr.masquerade;
	}
	if (!ro->dir) {
		snprintf(err, err_size, "the runtime settings need runtime.dir (or --runtime-dir)");
		return -EINVAL;
	}
	if (!ro->cni_bin_dir) {
		snprintf(err, err_size, "runtime.dir needs runtime.cniBinDir (or --cni-bin-dir)");
		return -EINVAL;
	}
	return 0;
}

/* The autoscaler beside the runtime: the command line's settings over
 * the configuration's autoscaling section. */
static int autoscale_start(struct op_daemon *d, const struct op_daemon_opts *opts, const char *cgroup_parent,
			   char *err, size_t err_size)
{
	const struct op_daemon_autoscale *f = OPTS_GET(opts, autoscale, NULL);
	struct flash_operator_runtime cr = { .sz = sizeof(cr) };
	struct op_autoscale_opts ao = { .sz = sizeof(ao), .runtime = d->runtime, .services = op_provider_live_services,
					.event = op_provider_event, .ctx = d->provider, .cgroup_parent = cgroup_parent,
					.window_s = -1, .tolerance_percent = -1 };
	int r;

	if (flash_operator_config_runtime(d->config, &cr) == 0) {
		ao.period_s = cr.autoscale_period_s;
		ao.window_s = (int)cr.autoscale_window_s;
		ao.tolerance_percent = (int)cr.autoscale_tolerance_percent;
	}
	if (f && f->period_s > 0)
		ao.period_s = (unsigned int)f->period_s;
	if (f && f->window_s >= 0)
		ao.window_s = f->window_s;
	if (f && f->tolerance_percent >= 0)
		ao.tolerance_percent = f->tolerance_percent;
	r = op_autoscale_start(&ao, &d->autoscale);
	if (r < 0) {
		snprintf(err, err_size, "the autoscaler: %s", strerror(-r));
		return r;
	}
	op_provider_set_autoscale(d->provider, d->autoscale);
	return 0;
}

/* The webhook listener: the options, else the configuration's webhook
 * section (defaults included). */
static int start_webhook(const struct op_daemon_opts *opts, const struct flash_operator_config *config,
			 struct op_webhook **ret, char *err, size_t err_size)
{
	struct flash_operator_runtime c = { .sz = sizeof(c) };
	struct flash_operator_config *defaults = NULL;
	struct op_webhook_opts wo = { .sz = sizeof(wo) };
	int r;

	if (!config) {
		r = flash_operator_config_default(&defaults);
		if (r < 0)
			return r;
		config = defaults;
	}
	r = flash_operator_config_runtime(config, &c);
	if (r == 0) {
		wo.listen = opts->webhook_listen ?: c.webhook_listen;
		wo.cert_file = opts->webhook_cert_file ?: c.webhook_cert_file;
		wo.key_file = opts->webhook_key_file ?: c.webhook_key_file;
		if (!wo.listen || !wo.cert_file || !wo.key_file) {
			snprintf(err, err_size, "the webhook needs webhook.listen, webhook.certFile and webhook.keyFile "
						"(or --webhook-listen, --webhook-cert, --webhook-key)");
			r = -EINVAL;
		} else {
			r = op_webhook_start(&wo, ret, err, err_size);
		}
	}
	flash_operator_config_free(defaults);
	return r;
}

int op_daemon_start(const struct op_daemon_opts *opts, struct op_daemon **ret, char *err, size_t err_size)
{
	struct op_daemon *d;
	char *text = NULL, path[4096];
	size_t len = 0;
	int r;

	if (!opts || !OPTS_VALID(opts, op_daemon_opts) || !opts->state_dir || !opts->keys_file || !opts->issuer ||
	    !opts->audience || !ret)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;

	r = read_keys(opts->keys_file, &text, &len, err, err_size);
	if (r < 0)
		goto fail;
	{
		struct flash_diag *kd = NULL;

		r = flash_diag_new(&kd);
		if (r == 0)
			r = flash_auth_keyset_parse(text, len, &d->keys, kd);
		free(text);
		text = NULL;
		if (r < 0) {
			char what[512];

			first_problem(kd, what, sizeof(what));
			snprintf(err, err_size, "%s: %s", opts->keys_file,
				 flash_diag_count(kd) ? what : flash_strerror(r));
			flash_diag_free(kd);
			goto fail;
		}
		flash_diag_free(kd);
	}
	if (opts->policy_file) {
		struct flash_diag *diag = NULL;

		r = read_input(opts->policy_file, &text, &len, err, err_size);
		if (r < 0)
			goto fail;
		r = flash_diag_new(&diag);
		if (r == 0)
			r = flash_policy_parse(text, len, &d->policy, diag);
		free(text);
		text = NULL;
		if (r < 0) {
			char what[512];

			first_problem(diag, what, sizeof(what));
			snprintf(err, err_size, "%s: %s", opts->policy_file, what);
			flash_diag_free(diag);
			goto fail;
		}
		flash_diag_free(diag);
	}
	if (opts->config_file) {
		struct flash_diag *rd = NULL;

		r = read_input(opts->config_file, &text, &len, err, err_size);
		if (r < 0)
			goto fail;
		r = flash_diag_new(&rd);
		if (r < 0) {
			snprintf(err, err_size, "%s: %s", opts->config_file, flash_strerror(r));
			goto fail;
		}
		r = flash_operator_config_parse(text, len, &d->config, rd);
		free(text);
		text = NULL;
		if (r < 0) {
			char what[512];

			if (flash_diag_count(rd) > 0)
				first_problem(rd, what, sizeof(what));
			else
				snprintf(what, sizeof(what), "%s", flash_strerror(r));
			snprintf(err, err_size, "%s: %s", opts->config_file, what);
			flash_diag_free(rd);
			goto fail;
		}
		flash_diag_free(rd);
	}
	if (mkdir(opts->state_dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, err_size, "%s: %s", opts->state_dir, strerror(-r));
		goto fail;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/flash.db", opts->state_dir) >= sizeof(path)) {
		snprintf(err, err_size, "%s: path too long", opts->state_dir);
		r = -ENAMETOOLONG;
		goto fail;
	}
	r = op_store_open(path, &d->store, err, err_size);
	if (r < 0)
		goto fail;
	r = op_metrics_new(&d->metrics);
	if (r < 0)
		goto fail;

	struct op_provider_opts po = {
		.sz = sizeof(po),
		.issuer = opts->issuer,
		.audience = opts->audience,
		.keys = d->keys,
		.policy = d->policy,
		.config = d->config,
		.store = d->store,
		.metrics = d->metrics,
		.image = opts->image,
		.exec_max_sessions = OPTS_GET(opts, exec_max_sessions, 0),
		.exec_limit_s = OPTS_GET(opts, exec_limit_s, 0),
	};
	struct flash_operator_runtime cexec = { .sz = sizeof(cexec) };

	/* The command line wins over the configuration's exec section. */
	if (flash_operator_config_runtime(d->config, &cexec) == 0) {
		po.exec_max_sessions = po.exec_max_sessions ?: cexec.exec_max_sessions;
		po.exec_limit_s = po.exec_limit_s ?: cexec.exec_session_limit_s;
	}
	if (opts->test_meter_clock) {
		r = op_meter_clock_open(opts->test_meter_clock, &d->meter_clock, err, err_size);
		if (r < 0)
			goto fail;
		po.meter_now = op_meter_clock_now;
		po.meter_now_ctx = d->meter_clock;
	}
	if (!opts->image) {
		const char *ca = NULL, *creds = NULL, *store = NULL;

		d->registry = opts->registry; /* strings borrowed: they outlive the daemon */
		/* The configuration's registry section; the command line's CA wins. */
		flash_operator_config_registry(d->config, &ca, &creds, &store);
		if (!d->registry.ca_file)
			d->registry.ca_file = ca;
		d->registry.content_store = store;
		if (creds) {
			r = op_registry_auth_load(creds, &d->auth, err, err_size);
			if (r < 0)
				goto fail;
			d->registry.credentials = d->auth.v;
			d->registry.n_credentials = d->auth.n;
		}
		d->image = (struct op_image_ops){ .admit = op_image_default_ops.admit, .ctx = &d->registry };
		po.image = &d->image;
	}
	r = op_provider_new(&po, &d->provider);
	if (r < 0) {
		snprintf(err, err_size, "%s: loading the metering state: %s", path, flash_strerror(r));
		goto fail;
	}
	if (OPTS_GET(opts, kubernetes, NULL)) {
		struct op_k8s_run_opts ko = *opts->kubernetes;

		ko.config = d->config;
		r = op_k8s_run_start(&ko, &d->k8s);
		if (r == 0)
			r = op_k8s_run_publish(d->k8s, op_provider_live_services, d->provider);
		if (r < 0) {
			snprintf(err, err_size, "Kubernetes mode: %s", flash_strerror(r));
			goto fail;
		}
		op_provider_set_kick(d->provider, op_k8s_run_kick, d->k8s);
		op_provider_set_k8s(d->provider, op_k8s_run_new_client, d->k8s);
		op_provider_set_status(d->provider, op_k8s_run_service_status, d->k8s);
	} else if (opts->runtime || runtime_configured(d->config)) {
		struct op_runtime_opts ro = { .sz = sizeof(ro) };

		if (opts->runtime)
			ro = *opts->runtime;
		ro.sz = sizeof(ro);
		r = runtime_settings(&ro, d->config, err, err_size);
		if (r < 0)
			goto fail;
		ro.services = op_provider_live_services;
		ro.observe = op_provider_observe;
		ro.suspended = op_provider_suspended;
		ro.services_ctx = d->provider;
		ro.persistence = flash_operator_config_persistence(d->config);
		ro.config = d->config;
		ro.policy = d->policy;
		if (!ro.registry)
			ro.registry = opts->image ? &opts->registry : &d->registry;
		r = op_runtime_start(&ro, &d->runtime, err, err_size);
		if (r < 0)
			goto fail;
		op_provider_set_runtime(d->provider, d->runtime);
		r = autoscale_start(d, opts, ro.cgroup_parent, err, err_size);
		if (r < 0)
			goto fail;
	}
	{
		struct op_sandbox_k8s_opts ko;

		if (op_sandbox_k8s_settings(OPTS_GET(opts, sandbox_k8s, NULL), d->config, &ko)) {
			if (!opts->kubernetes) {
				snprintf(err, err_size, "sandbox.namespace (--sandbox-namespace) serves sandbox sessions "
							"in Kubernetes mode only (--kubernetes)");
				r = -EINVAL;
				goto fail;
			}
			r = sandbox_k8s_start(d, &ko, err, err_size);
			if (r < 0)
				goto fail;
		}
	}
	if (OPTS_GET(opts, sandbox, NULL) || sandbox_configured(d->config)) {
		struct op_sandbox_gvisor_opts so = { .sz = sizeof(so) };
		struct flash_operator_runtime cr = { .sz = sizeof(cr) };
		const struct flash_sandbox_backend_ops *ops = NULL;
		void *backend = NULL;
		char *sb_resolv = NULL;

		/* the command line's options over the configuration's sandbox
		 * section (and runtime.runsc) */
		if (OPTS_GET(opts, sandbox, NULL))
			so = *opts->sandbox;
		so.sz = sizeof(so);
		if (flash_operator_config_runtime(d->config, &cr) == 0) {
			if (!so.dir)
				so.dir = cr.sandbox_dir;
			if (!so.pool_size && !so.pool_image) {
				so.pool_size = cr.sandbox_pool_size;
				so.pool_image = cr.sandbox_pool_image;
			}
			if (!so.pool_cpu_millis)
				so.pool_cpu_millis = cr.sandbox_pool_cpu_millis;
			if (!so.pool_memory_mib)
				so.pool_memory_mib = cr.sandbox_pool_memory_mib;
			if (!so.runsc)
				so.runsc = cr.runsc;
		}
		if (opts->kubernetes) {
			snprintf(err, err_size, "sandbox sessions run gVisor on this node, not in Kubernetes mode");
			r = -EINVAL;
			goto fail;
		}
		if (!so.registry)
			so.registry = opts->image ? &opts->registry : &d->registry;
		/* flowsdn networking with the runtime's CNI and agent settings
		 * (flags over runtime keys; none: --network=none) */
		if (!so.cni_bin_dir) {
			const struct op_runtime_opts *rf = opts->runtime;

			so.cni_bin_dir = rf && rf->cni_bin_dir ? rf->cni_bin_dir : cr.cni_bin_dir;
			so.cni_conf = rf && rf->cni_conf ? rf->cni_conf : cr.cni_conf;
			so.agent_socket = rf && rf->agent_socket ? rf->agent_socket : cr.agent_socket;
			if (so.cni_bin_dir && op_bundle_resolv_conf(rf && rf->dns ? rf->dns : cr.dns,
								    rf ? rf->host_resolv : NULL, &sb_resolv) == 0)
				so.resolv_conf = sb_resolv;
		}
		so.config = d->config;
		so.policy = d->policy;
		r = op_sandbox_tenants_new(&d->tenants);
		if (r < 0) {
			snprintf(err, err_size, "sandbox sessions: %s", strerror(-r));
			free(sb_resolv);
			goto fail;
		}
		so.tenant = op_sandbox_tenants_lookup;
		so.tenant_ctx = d->tenants;
		r = op_sandbox_gvisor_new(&so, &ops, &backend);
		free(sb_resolv);
		if (r == 0)
			r = flash_sandbox_provider_new(ops, backend, NULL, &d->sandbox);
		if (r < 0) {
			snprintf(err, err_size, "sandbox sessions (%s): %s", so.dir ? so.dir : "no directory",
				 flash_strerror(r));
			goto fail;
		}
	}
	/* The routes serve the sandbox provider when there is one. */
	struct op_http_opts ho = opts->http;

	ho.sz = sizeof(ho);
	ho.sandbox = d->sandbox;
	if (OPTS_GET(opts, sandbox_http, NULL))
		d->sandbox_http = *opts->sandbox_http;
	d->sandbox_http.sz = sizeof(d->sandbox_http);
	d->sandbox_http.tenants = d->tenants;
	ho.sandbox_opts = &d->sandbox_http;
	r = op_http_start(d->provider, &ho, &d->http, err, err_size);
	if (r < 0)
		goto fail;
	if (OPTS_GET(opts, webhook, false)) {
		r = start_webhook(opts, d->config, &d->webhook, err, err_size);
		if (r < 0)
			goto fail;
	}
	*ret = d;
	return 0;
fail:
	op_daemon_stop(d);
	return r;
}

struct flash_sandbox_provider *op_daemon_sandbox(struct op_daemon *d)
{
	return d ? d->sandbox : NULL;
}

struct op_provider *op_daemon_provider(struct op_daemon *d)
{
	return d ? d->provider : NULL;
}

uint16_t op_daemon_webhook_port(const struct op_daemon *d)
{
	return d ? op_webhook_port(d->webhook) : 0;
}

uint16_t op_daemon_port(const struct op_daemon *d)
{
	return d ? op_http_port(d->http) : 0;
}

void op_daemon_stop(struct op_daemon *d)
{
	if (!d)
		return;
	op_webhook_stop(d->webhook);
	op_http_stop(d->http);
	flash_sandbox_provider_free(d->sandbox);
	op_sandbox_tenants_free(d->tenants);
	op_autoscale_stop(d->autoscale);
	op_runtime_stop(d->runtime);
	op_k8s_run_stop(d->k8s);
	op_provider_free(d->provider);
	op_meter_clock_free(d->meter_clock);
	op_metrics_free(d->metrics);
	op_store_close(d->store);
	op_registry_auth_clear(&d->auth);
	flash_operator_config_free(d->config);
	flash_policy_free(d->policy);
	flash_auth_keyset_free(d->keys);
	free(d);
}
