/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one Kubernetes API client (contract C11): private code of
 * common/libk8s.la, linked by flash-operator (operator/) and flowsdn-agent
 * (agent/).  libcurl (one easy handle per client, reused: keep-alive,
 * HTTP/1.1), the project's JSON engine (common/json.h) for every body,
 * libyaml for kubeconfig files only (common/kubeconfig.c).
 *
 * Threads: a client is used by one thread at a time; k8s_client_cancel()
 * may be called from any thread (it stops the request in progress and the
 * watch loop).
 *
 * Errors: every call returns 0 or a negative errno.  When the API server
 * answered with a status other than 2xx, the answer's Status object (or
 * its body's first line when the body is not a Status, as the plain-text
 * "404 page not found" of an unknown resource) is in *ret_status and the
 * return value says what kind of refusal it is:
 *   400, 415, 422      -EINVAL      (the request is wrong: fix it, never retried)
 *   500 of kubernetes#139253 (server-side apply of an unknown field or a
 *                      wrong type: "failed to create typed patch object",
 *                      ".: field not declared in schema", "expected X, got
 *                      &value.valueUnstructured")   -EINVAL, not retried
 *   401                -EKEYREJECTED (credentials refused)
 *   403                -EACCES      (RBAC or admission forbids it)
 *   404                -ENOENT
 *   405                -EOPNOTSUPP
 *   409 AlreadyExists  -EEXIST
 *   409 (Conflict: an apply conflict, a stale resourceVersion)  -EBUSY
 *   410                -ESTALE      (resourceVersion or continue token expired)
 *   413                -E2BIG
 *   429, 503           -EAGAIN      (after the bounded retries)
 *   504                -ETIMEDOUT
 *   other 5xx          -EIO         (after the bounded retries; idempotent calls only)
 *   other              -EPROTO
 * Transport failures (ret_status->code 0): -ECONNREFUSED (no server),
 * -ETIMEDOUT (connect, whole request or watch idle timeout),
 * -ECONNRESET (connection cut), -EHOSTUNREACH (name not resolved),
 * -EKEYREJECTED (TLS: the server's certificate is not trusted),
 * -EPROTO (TLS or HTTP error), -EMSGSIZE (an answer or a watch line over
 * its bound), -EBADMSG (a 2xx body that is not the JSON expected),
 * -ECANCELED (k8s_client_cancel()).  ret_* outputs are untouched on
 * failure; *ret_status is always reset first (and cleared on success).
 */
#ifndef FLASH_COMMON_K8S_H
#define FLASH_COMMON_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

struct diag;

/* ------------------------------------------------------------ configuration */

/* Where and how to connect: from a kubeconfig file, the in-cluster
 * service account, or filled by the caller (strings malloc'd: freed by
 * k8s_config_free()).  PEM data is kept in memory; file names are read
 * when the client is made (the token file at every request whose file
 * changed: mtime, size or inode). */
struct k8s_config {
	char *server;               /* https://host[:port] (http:// only for a loopback host) */
	char *ca_pem;               /* CA bundle (PEM), NULL: the system store */
	size_t ca_pem_len;
	bool insecure_skip_tls_verify;
	char *token;                /* bearer token, or NULL */
	char *token_file;           /* re-read when it changes (service-account rotation), or NULL */
	char *client_cert_pem;      /* client certificate and key (PEM), or NULL */
	size_t client_cert_pem_len;
	char *client_key_pem;
	size_t client_key_pem_len;
	char *namespace;            /* the context's namespace (in cluster: the pod's), or NULL */
	char *context;              /* the kubeconfig context used, or NULL (in cluster) */
	char *user;                 /* the kubeconfig user used, or NULL (in cluster) */
};

void k8s_config_free(struct k8s_config *cfg);

/* True for a server URL the client connects to: https://HOST[:PORT][/PATH]
 * (HOST a name, an IPv4 literal or a bracketed IPv6 literal), or http://
 * to the loopback host only (localhost, 127.0.0.0/8, [::1]); no user
 * information, query, fragment, space or control character.  The one
 * check of kubeconfig files and of k8s_client_new(). */
bool k8s_server_url_valid(const char *url);

/* The paths of the in-cluster configuration (NULL: the kubelet's). */
struct k8s_in_cluster_opts {
	size_t sz;
	const char *dir;            /* [/var/run/secrets/kubernetes.io/serviceaccount]: token, ca.crt, namespace */
	const char *host;           /* [$KUBERNETES_SERVICE_HOST] */
	const char *port;           /* [$KUBERNETES_SERVICE_PORT] */
};

/* Reads the kubeconfig at @path (at most 1 MiB, a regular file) and picks
 * @context (NULL: current-context).  Honoured: clusters[].cluster.{server,
 * certificate-authority, certificate-authority-data,
 * insecure-skip-tls-verify}; users[].user.{token,
 * tokenFile, client-certificate, client-certificate-data, client-key,
 * client-key-data}; contexts[].context.{cluster, user, namespace};
 * current-context.  Relative file names are relative to the kubeconfig's
 * directory.  Refused with a message naming the user or cluster: exec and
 * auth-provider plugins, username/password, impersonation (as, as-groups,
 * as-uid, as-user-extra), proxy-url, tls-server-name, both a file and its -data, token and
 * tokenFile together, a certificate without its key, data that is not
 * base64 or PEM.  Unknown keys elsewhere are ignored, as kubectl does.
 * Problems go to @diag (may be NULL); the return value is -EINVAL for a
 * refused file, -ENOENT when the file, the context, its cluster or its
 * user is missing, or util_read_file()'s error. */
int k8s_config_from_kubeconfig(const char *path, const char *context, struct k8s_config **ret_cfg,
			       struct diag *diag) __attribute__((warn_unused_result));

/* The same from @len bytes of kubeconfig text at @text; @dir resolves
 * relative file names (NULL: the current directory).  The fuzz target's
 * entry point. */
int k8s_config_parse_kubeconfig(const char *text, size_t len, const char *dir, const char *context,
				struct k8s_config **ret_cfg, struct diag *diag) __attribute__((warn_unused_result));

/* The in-cluster configuration: server https://HOST:PORT (an IPv6 HOST
 * bracketed), CA from ca.crt, token file (re-read when rotated),
 * namespace from the namespace file.  -ENOENT when
 * KUBERNETES_SERVICE_HOST/PORT are unset or the token is missing,
 * -EINVAL when they are malformed; problems named in @diag. */
int k8s_config_in_cluster(const struct k8s_in_cluster_opts *opts, struct k8s_config **ret_cfg,
			  struct diag *diag) __attribute__((warn_unused_result));

/* ------------------------------------------------------------ errors */

struct k8s_cause {
	char *type;                 /* the cause's "reason" (FieldValueInvalid, FieldManagerConflict) */
	char *field;                /* "spec.replicas", ".spec.template.spec.containers[name=\"app\"].image" */
	char *message;
};

/* A refusal: the answer's Status (meta/v1), or code 0 for a transport
 * failure with @message saying what failed. */
struct k8s_status {
	int code;                   /* HTTP status; 0: no answer */
	char *reason;               /* "Conflict", "Invalid", "Expired", NULL when none */
	char *message;
	char *details_name;         /* details.name, .kind, .group (NULL when absent) */
	char *details_kind;
	char *details_group;
	struct k8s_cause *causes;
	size_t n_causes;
	unsigned int retry_after_s; /* Retry-After header or details.retryAfterSeconds; 0: none */
};

void k8s_status_clear(struct k8s_status *st);

/* Parses a Status object of @len bytes into @ret (cleared first).  The
 * watch ERROR event and every non-2xx answer go through it.  -EBADMSG
 * when @text is not a JSON Status. */
int k8s_status_parse(const char *text, size_t len, struct k8s_status *ret) __attribute__((warn_unused_result));
/* The same from a parsed object. */
int k8s_status_from_json(const struct json_value *obj, struct k8s_status *ret) __attribute__((warn_unused_result));
/* The same for a Status that may lack its "kind": the exec error
 * channel's, a metav1.Status marshalled without its TypeMeta. */
int k8s_status_from_json_kindless(const struct json_value *obj, struct k8s_status *ret)
	__attribute__((warn_unused_result));

/* The errno of an answer's status (the table above): 0 for 2xx. */
int k8s_status_errno(const struct k8s_status *st);

/* True for the 500 of kubernetes#139253 (a typed-patch conversion error
 * that is the client's fault). */
bool k8s_status_is_typed_patch_error(const struct k8s_status *st);

/* Bounds: a Status body parsed from an error answer; the defaults of
 * struct k8s_client_opts. */
#define K8S_STATUS_MAX (1u << 20)
#define K8S_DEFAULT_MAX_BODY (64u << 20)
#define K8S_DEFAULT_MAX_WATCH_LINE (16u << 20)

/* ------------------------------------------------------------ the client */

enum k8s_log_level {
	K8S_LOG_ERR = 3,
	K8S_LOG_WARNING = 4,        /* Warning: headers of the server, one call each */
	K8S_LOG_INFO = 6,           /* retries, relists, token reloads */
	K8S_LOG_DEBUG = 7,
};
typedef void (*k8s_log_fn)(enum k8s_log_level level, const char *message, void *userdata);

struct k8s_client_opts {
	size_t sz;
	const char *user_agent;          /* ["flash-k8s-client"]: "flash-operator/0.1" */
	unsigned int connect_timeout_ms; /* [5000] */
	unsigned int request_timeout_ms; /* [30000] whole request, but for watches */
	unsigned int watch_idle_ms;      /* [90000] a watch with no byte for so long is cut and resumed */
	unsigned int watch_timeout_s;    /* [300] timeoutSeconds sent with each watch */
	unsigned int max_attempts;       /* [5] tries of one request, the first included */
	unsigned int backoff_ms;         /* [250] first retry delay, doubled each time, with jitter */
	unsigned int backoff_max_ms;     /* [30000] bound of a delay (Retry-After included) */
	size_t max_body;                 /* [64 MiB] bound of one answer's body */
	size_t max_watch_line;           /* [16 MiB] bound of one watch event */
	k8s_log_fn log;                  /* NULL: nothing logged */
	void *log_userdata;
	/* Sleeps between retries (tests: a fake clock).  NULL: nanosleep,
	 * woken early by k8s_client_cancel(). */
	void (*sleep_ms)(unsigned int ms, void *userdata);
	void *sleep_userdata;
};

struct k8s_client;

/* A client for @cfg (copied: @cfg may be freed after).  Reads the
 * certificate files and the token file once to fail early.  -EINVAL for
 * a bad server URL, -ENOENT/-EACCES for a token file that cannot be
 * read, -ENOMEM. */
int k8s_client_new(const struct k8s_config *cfg, const struct k8s_client_opts *opts, struct k8s_client **ret)
	__attribute__((warn_unused_result));
void k8s_client_free(struct k8s_client *c);
/* Stops the request in progress (-ECANCELED) and makes the next ones fail
 * until k8s_client_reset_cancel(); async-signal-safe. */
void k8s_client_cancel(struct k8s_client *c);
void k8s_client_reset_cancel(struct k8s_client *c);
/* The configuration's namespace (or "default"). */
const char *k8s_client_namespace(const struct k8s_client *c);

/* What an API path names.  All names are checked (DNS subdomains or
 * labels of common/names.c, plural resources as DNS labels). */
struct k8s_ref {
	const char *group;          /* NULL or "": the core group (/api/v1) */
	const char *version;        /* "v1" */
	const char *resource;       /* plural: "deployments" */
	const char *namespace;      /* NULL: cluster-scoped, or all namespaces for a list/watch */
	const char *name;           /* NULL: the collection */
	const char *subresource;    /* NULL, "status", "scale" */
};

/* The path of @ref: "/apis/apps/v1/namespaces/ns/deployments/x/status".
 * -EINVAL (a name that is not valid). */
int k8s_ref_path(const struct k8s_ref *ref, char **ret_path) __attribute__((warn_unused_result));

/* GET the JSON document at @path, a path of the server that is not an
 * object (an OpenAPI v3 document: "/openapi/v3/apis/apps/v1"), without
 * query.  -EINVAL for a path not starting with '/' or with a query. */
int k8s_get_path(struct k8s_client *c, const char *path, struct json_value **ret_obj, struct k8s_status *ret_status)
	__attribute__((warn_unused_result));

/* Options of writes (create, replace, patch, apply, status write). */
struct k8s_write_opts {
	size_t sz;
	const char *field_manager;  /* fieldManager; required for apply */
	bool force;                 /* apply only: take the fields other managers own */
	bool dry_run;               /* dryRun=All */
	const char *field_validation; /* NULL (server default: Warn), "Strict", "Warn", "Ignore" */
};

/* GET @ref (an object): the object in *ret_obj (json_free()). */
int k8s_get(struct k8s_client *c, const struct k8s_ref *ref, struct json_value **ret_obj,
	    struct k8s_status *ret_status) __attribute__((warn_unused_result));

struct k8s_list_opts {
	size_t sz;
	const char *label_selector;
	const char *field_selector;
	const char *resource_version;       /* NULL: most recent (quorum read); "0": any (watch cache) */
	const char *resource_version_match; /* NULL, "NotOlderThan", "Exact" */
	unsigned int limit;                 /* page size; [500]; pages are followed with continue */
};

/* Called once per item of a list, in order: nonzero stops the list and is
 * returned.  @item belongs to the page and is valid during the call only. */
typedef int (*k8s_item_fn)(const struct json_value *item, void *userdata);

/* Lists @ref (a collection) page by page (limit/continue), calling @fn
 * per item; *ret_resource_version (may be NULL) gets the list's
 * resourceVersion, to watch from.  An expired continue token is -ESTALE
 * (list again). */
int k8s_list(struct k8s_client *c, const struct k8s_ref *ref, const struct k8s_list_opts *opts, k8s_item_fn fn,
	     void *userdata, char **ret_resource_version, struct k8s_status *ret_status)
	__attribute__((warn_unused_result));

/* POST @body (JSON, @len bytes) to the collection @ref.  Never retried
 * once sent, except after a 429. */
int k8s_create(struct k8s_client *c, const struct k8s_ref *ref, const char *body, size_t len,
	       const struct k8s_write_opts *opts, struct json_value **ret_obj, struct k8s_status *ret_status)
	__attribute__((warn_unused_result));
/* PUT @body (with its metadata.resourceVersion: a stale one is -EBUSY). */
int k8s_replace(struct k8s_client *c, const struct k8s_ref *ref, const char *body, size_t len,
		const struct k8s_write_opts *opts, struct json_value **ret_obj, struct k8s_status *ret_status)
	__attribute__((warn_unused_result));

/* Server-side apply: PATCH application/apply-patch+yaml with @body (JSON
 * is YAML), fieldManager=opts->field_manager (required), force=true only
 * when opts->force.  A 409 is -EBUSY with one cause per conflicting field
 * (type FieldManagerConflict, field in SSA path notation, message naming
 * the manager).  *ret_obj may be NULL. */
int k8s_apply(struct k8s_client *c, const struct k8s_ref *ref, const char *body, size_t len,
	      const struct k8s_write_opts *opts, struct json_value **ret_obj, struct k8s_status *ret_status)
	__attribute__((warn_unused_result));

/* Server-side apply to the status subresource of @ref (@ref->subresource
 * must be NULL or "status"): the operator's conditions and
 * observedGeneration, owned by its field manager. */
int k8s_status_write(struct k8s_client *c, const struct k8s_ref *ref, const char *body, size_t len,
		     const struct k8s_write_opts *opts, struct json_value **ret_obj, struct k8s_status *ret_status)
	__attribute__((warn_unused_result));

enum k8s_patch_type {
	K8S_PATCH_MERGE = 1,        /* application/merge-patch+json (RFC 7386) */
	K8S_PATCH_STRATEGIC,        /* application/strategic-merge-patch+json (built-in kinds only) */
	K8S_PATCH_JSON,             /* application/json-patch+json (RFC 6902); not idempotent: never retried once sent */
};

int k8s_patch(struct k8s_client *c, const struct k8s_ref *ref, enum k8s_patch_type type, const char *body,
	      size_t len, const struct k8s_write_opts *opts, struct json_value **ret_obj,
	      struct k8s_status *ret_status) __attribute__((warn_unused_result));

struct k8s_delete_opts {
	size_t sz;
	const char *propagation_policy;   /* NULL (the kind's default), "Foreground", "Background", "Orphan" */
	int64_t grace_period_seconds;     /* < 0: the object's default; 0: now */
	bool dry_run;
};

/* DELETE @ref: the answer (the object while finalizers keep it, or a
 * Status) in *ret_obj (may be NULL).  An absent object is -ENOENT. */
int k8s_delete(struct k8s_client *c, const struct k8s_ref *ref, const struct k8s_delete_opts *opts,
	       struct json_value **ret_obj, struct k8s_status *ret_status) __attribute__((warn_unused_result));

/* ------------------------------------------------------------ watches */

enum k8s_event_type {
	K8S_EVENT_ADDED = 1,
	K8S_EVENT_MODIFIED,
	K8S_EVENT_DELETED,
	K8S_EVENT_BOOKMARK,         /* only the resourceVersion is new */
	/* A (re)list starts: the items that follow come as ADDED, then
	 * SYNCED; an object the consumer holds that was not among them is
	 * gone (the informer's Replace).  Sent before the first list and
	 * after every 410. */
	K8S_EVENT_RELIST,
	K8S_EVENT_SYNCED,           /* the list is complete; watch events follow */
};

struct k8s_event {
	enum k8s_event_type type;
	const struct json_value *object; /* NULL for RELIST and SYNCED; valid during the call */
	const char *resource_version;    /* the latest version seen (after this event); NULL for
	                                  * RELIST and the ADDED items of a list (SYNCED has the list's) */
};

/* Nonzero stops the watch and is returned by k8s_watch()/k8s_watch_once(). */
typedef int (*k8s_event_fn)(const struct k8s_event *ev, void *userdata);

struct k8s_watch_opts {
	size_t sz;
	const char *label_selector;
	const char *field_selector;
	const char *resource_version;  /* k8s_watch(): NULL lists first; set: watches from there */
	bool no_bookmarks;             /* allowWatchBookmarks=true unless set */
	unsigned int list_limit;       /* page size of the lists; [500] */
	/* k8s_watch(): return 0 after this many watch streams ended (0: run
	 * until @fn stops it, k8s_client_cancel() or an error that a relist
	 * cannot cure).  Tests and benchmarks bound a loop with it. */
	unsigned int max_streams;
};

/* One watch stream from opts->resource_version (required): each line is
 * one event, parsed as it arrives (at most max_watch_line bytes); the
 * resourceVersion of every event and bookmark goes into
 * *io_resource_version (malloc'd; replaced).  Returns 0 when the server
 * ends the stream, -ESTALE for an ERROR event with 410 (its Status in
 * *ret_status: list again), -EPROTO or the Status's errno for another
 * ERROR event, -ECONNRESET when the connection is cut mid-stream,
 * -ETIMEDOUT after watch_idle_ms of silence.  An event repeating the
 * previous one (same type, uid and resourceVersion) is dropped. */
int k8s_watch_once(struct k8s_client *c, const struct k8s_ref *ref, const struct k8s_watch_opts *opts,
		   char **io_resource_version, k8s_event_fn fn, void *userdata, struct k8s_status *ret_status)
	__attribute__((warn_unused_result));

/* The reflector of client-go: list (RELIST, ADDED per item, SYNCED) unless
 * opts->resource_version is set, then watch from the list's version; a
 * stream the server ends, a cut connection or an idle timeout resumes
 * from the last version seen (cuts and timeouts after a backoff); an
 * ERROR 410 lists again.  Returns what @fn returned (nonzero), 0 after
 * opts->max_streams streams, -ECANCELED, or the first error a relist
 * cannot cure (-EACCES, -ENOENT, -EKEYREJECTED, ...; retries of one
 * request exhausted). */
int k8s_watch(struct k8s_client *c, const struct k8s_ref *ref, const struct k8s_watch_opts *opts, k8s_event_fn fn,
	      void *userdata, struct k8s_status *ret_status) __attribute__((warn_unused_result));

/* Parses one line of a watch stream (without its newline): the event's
 * type and object (in *ret_root: json_free(); the object is
 * json_get(*ret_root, "object")).  ERROR events come back as type 0 with
 * their Status in *ret_status and the Status's errno returned.  -EBADMSG
 * for a line that is not an event (or an event whose object has no
 * metadata.resourceVersion), -EMSGSIZE past @max_line bytes (0: the
 * default bound).  The fuzz target's entry point. */
int k8s_watch_parse_line(const char *line, size_t len, size_t max_line, enum k8s_event_type *ret_type,
			 struct json_value **ret_root, struct k8s_status *ret_status) __attribute__((warn_unused_result));

/* ------------------------------------------------------------ events */

/* What an events.k8s.io/v1 Event is about and who reports it. */
struct k8s_event_about {
	const char *api_version;          /* of the object [v1] */
	const char *kind, *name;          /* required */
	const char *namespace;            /* NULL: a cluster-scoped object (the Event goes to "default") */
	const char *uid;                  /* may be NULL */
	const char *type;                 /* "Normal" or "Warning" */
	const char *reason, *action;      /* "PodCIDRSelected", "Selected" */
	const char *note;                 /* may be NULL */
	const char *related_api_version, *related_kind, *related_name; /* NULL: none [v1] */
	const char *reporting_controller; /* "flowsdn.io/agent" */
	const char *reporting_instance;   /* the node, the operator's identity */
};

/* The body of a new Event (POSTed to events.k8s.io/v1 in its namespace):
 * named as client-go's recorder names them (the object's name and the
 * time in hex), eventTime now.  0, -EINVAL (a required field missing),
 * -ENOMEM. */
int k8s_event_body(const struct k8s_event_about *a, char **ret_json) __attribute__((warn_unused_result));

#endif
