/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by the rendering sources of libflash (never installed). */
#ifndef FLASH_RENDER_INTERNAL_H
#define FLASH_RENDER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/render.h>
#include <flowsdn/addr.h>

#include "kdoc.h"

struct label {
	char *key;
	char *value;
};

struct label_list {
	struct label *v;
	size_t n;
};

struct prefix_list {
	struct flowsdn_prefix *v;
	size_t n;
};

struct admin_claim {
	char *name;        /* volume name inside the pod */
	char *claim_name;  /* the PersistentVolumeClaim */
	bool read_only;
};

struct admin_mount {
	char *service_instance_id;
	char *claim;       /* struct admin_claim.name */
	char *mount_path;
	bool read_only;
};

struct flash_operator_config {
	char *runtime_cpu;
	char *runtime_gpu;
	char *load_balancer_class;
	char *gpu_node_label;
	struct label_list gpu_node_selector; /* the nvidia RuntimeClass's scheduling */
	struct label_list public_node_labels;

	char *dns_namespace;
	struct label_list dns_pod_labels;
	struct prefix_list dns_addresses;

	struct prefix_list pod_cidrs;
	struct prefix_list service_cidrs;
	struct prefix_list lan_cidrs;
	struct prefix_list heteronetwork_cidrs;
	struct prefix_list infrastructure_cidrs;

	bool persistence;
	char *storage_class;   /* NULL: the cluster default */

	struct admin_claim *admin_claims;
	size_t n_admin_claims;
	struct admin_mount *admin_mounts;
	size_t n_admin_mounts;

	uint16_t port_first;
	uint16_t port_last;

	char *operator_namespace;
	char *operator_image;
	char *agent_image;

	char *registry_ca_file;          /* NULL: system CAs */
	char *registry_credentials_file; /* NULL: anonymous pulls */
	char *content_store;             /* NULL: admission resolves only */

	/* The single-node runtime (section "runtime"); each NULL when unset. */
	char *rt_dir, *rt_cni_bin_dir, *rt_cni_conf, *rt_agent_socket, *rt_runsc, *rt_cgroup_parent;
	char *rt_dns;                    /* the addresses joined by commas */
	bool rt_masquerade;              /* runtime.masquerade */

	/* The validating admission webhook (section "webhook"). */
	bool webhook_enabled;
	char *webhook_service;           /* the Service in front of the operator */
	uint16_t webhook_port;           /* the Service's port */
	char *webhook_ca_bundle;         /* base64 PEM; NULL: none written */
	char *webhook_listen;            /* the operator's TLS listener */
	char *webhook_cert_file, *webhook_key_file;

	/* Gateway API: the Gateway HTTPRoutes attach to (section "gateway"). */
	char *gateway_name, *gateway_namespace, *gateway_section;

	/* Web Shell sessions (section "exec"); 0 when unset. */
	uint32_t exec_max_sessions;      /* exec.maxSessions */
	uint32_t exec_session_limit_s;   /* exec.sessionLimitSeconds */

	/* Autoscaling on one node (section "autoscaling"; the built-in
	 * defaults 15, 300, 10). */
	uint32_t as_period_s;            /* autoscaling.syncPeriodSeconds */
	uint32_t as_window_s;            /* autoscaling.scaleDownStabilizationSeconds */
	uint32_t as_tolerance_percent;   /* autoscaling.tolerancePercent */

	/* Sandbox sessions (section "sandbox"); 0/NULL when unset. */
	char *sb_dir, *sb_pool_image;
	uint32_t sb_pool_size, sb_pool_cpu, sb_pool_mem;
	/* ... in Kubernetes mode (sb_namespace set); the strings as given. */
	char *sb_namespace, *sb_net_setup_image, *sb_runtime_class, *sb_node_selector, *sb_tolerations,
		*sb_pull_secrets;
};

/* The label every object carries and the selector label. */
#define FLASH_LABEL_NAME "app.kubernetes.io/name"
#define FLASH_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define FLASH_LABEL_ORGANIZATION "flash.heterocloud.io/organization"
#define FLASH_LABEL_PROJECT "flash.heterocloud.io/project"
#define FLASH_LABEL_SERVICE "flash.heterocloud.io/service"
#define FLASH_MANAGER "flash-operator"
#define FLASH_GROUP "flash.heterocloud.io"
#define FLASH_VERSION "v1alpha1"
/* The path the API server posts AdmissionReviews to (operator/webhook.c
 * serves it). */
#define FLASH_WEBHOOK_PATH "/validate-flashservice"

/* Sets the Pod Security Admission labels (enforce, audit, warn) of
 * @level on the labels object @labels (render-labels.c). */
void pod_security_labels(struct kdoc *labels, const char *level);

/* Adds @p as canonical text to @arr (render.c). */
void kdoc_append_prefix(struct kdoc *arr, const struct flowsdn_prefix *p);

/* The rendered objects of one service (render.c fills, render-output.c
 * prints). */
struct flash_render {
	struct kdoc **objects;
	size_t n;
};

/* Adds the refusal @err (negative) at @path to @diag (if not NULL, with
 * the block's rule code) and returns @err. */
int render_diag_fail(struct diag *diag, int err, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same for a document json_parse() refused (line and column). */
int render_diag_json(struct diag *diag, int err, const struct json_error *jerr);

/* True when @p is the pair (@protocol, @name). */
bool render_port_pair_equal(const struct flash_public_port *p, const char *protocol, const char *name);

/* Prints @docs: YAML, one document each; JSON, one v1 List holding them
 * (render.c). */
int render_print_docs(struct kdoc *const *docs, size_t n, enum flash_render_format format, char **ret_text,
		      size_t *ret_len);

/* The CRD objects (render-crd.c). */
struct kdoc *crd_flashservice(void);
struct kdoc *crd_flashusagerecord(void);

#endif
