/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The replaying fake Kubernetes API server of the tests and benchmarks
 * (contract C11): libmicrohttpd on 127.0.0.1, an ephemeral port, plain
 * HTTP or TLS.
 *
 * It answers from two sources, in this order:
 *   1. scripted steps (k8s_fake_push()), each served once to the first
 *      request it matches (method and path; NULL matches any): a status,
 *      headers and body, or a recorded exchange's answer, or a stream of
 *      watch events with delays, ending normally or with the connection
 *      cut;
 *   2. the recorded exchanges of tests/data/k8s/exchanges/ (copies of
 *      ../shared/k8s/exchanges, answers of a real kube-apiserver v1.36),
 *      matched by method, path and query: every recorded query key must
 *      have the recorded value (timeoutSeconds excepted); the request may
 *      add only timeoutSeconds, allowWatchBookmarks and limit.  Among
 *      several matches the one whose recorded body equals the request's
 *      wins, then the one served least often, then the first by number
 *      (so 07 then 08 answer a first and a second identical apply).
 *      Exchanges that depend on the caller's identity (401, 403) are
 *      served by script only, or 31's 401 for a wrong bearer token when
 *      opts.token is set.
 * Two streaming subresources are served by the fake itself (synthesised:
 * no exchange records a WebSocket or a log stream, and what a command
 * prints can only be true if it is run):
 *   - pods/exec (GET with an RFC 6455 upgrade), when opts.exec_root is
 *     set: the subprotocol is the first of the client's offer among
 *     opts.exec_protocols (v5.channel.k8s.io, v4.channel.k8s.io: the
 *     apiserver's wsstream negotiation), the command (command=, repeated,
 *     the exact argv) is run for real on this host with fork/exec in the
 *     directory EXEC_ROOT/NAMESPACE/POD (made), its own session and
 *     process group, an empty environment but PATH and HOME, a pty when
 *     tty=true (resize messages set its size) or pipes; an empty message
 *     on the lowest output channel says the streams are ready (kubelet's
 *     remotecommand does so), channel 0 feeds stdin, [255, 0] closes it
 *     (v5 only), and channel 3 carries the metav1.Status the kubelet
 *     writes: Success, or Failure/NonZeroExitCode with an ExitCode cause
 *     (128+signal for a killed process), or Failure/InternalError 500
 *     when the program cannot be started.  A client that closes or goes
 *     away gets its process group killed.  A step with ws_frames
 *     answers the upgrade with those raw bytes instead (hostile servers);
 *     a step without them answers the exec path as any other request (a
 *     refused upgrade: 403 and its Status).
 *   - pods/log (GET), from the lines given with k8s_fake_pod_log_add():
 *     timestamps=true prefixes each line with its RFC 3339 time,
 *     sinceSeconds/sinceTime drop older lines, tailLines keeps the last
 *     ones, limitBytes cuts the answer; follow=true keeps the stream open
 *     and sends lines added later until k8s_fake_pod_log_end() or the
 *     fake stops.  An unknown pod is a 404 Status as the apiserver's.
 * Anything else gets a 404 Status naming the request, counted by
 * k8s_fake_unmatched().  Every request is recorded (method, path, query
 * arguments, content type, authorization, body) for the test to check.
 *
 * Test code: prints nothing, asserts nothing; errors as -errno.
 */
#ifndef FLASH_TESTS_K8S_FAKE_H
#define FLASH_TESTS_K8S_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct k8s_fake;

struct k8s_fake_opts {
	size_t sz;
	const char *exchanges_dir;  /* NULL: $top_srcdir/tests/data/k8s/exchanges (or ./tests/...) */
	const char *token;          /* set: requests without "Bearer TOKEN" get exchange 31 (401) */
	const char *tls_cert_pem;   /* set (with the key): HTTPS */
	const char *tls_key_pem;
	const char *client_ca_pem;  /* set: client certificates are verified against it (recorded) */
	/* set: a write that neither a step nor an exchange answers is
	 * accepted instead of the 404: POST 201 and PATCH/PUT 200 echoing the
	 * request's body, DELETE 200 with a Success Status (a reconcile loop
	 * over many objects; GET still answers 404). */
	bool accept_writes;
	/* set: pods/exec runs the commands for real under this directory */
	const char *exec_root;
	/* the subprotocols the exec endpoint speaks, comma-separated; NULL:
	 * "v5.channel.k8s.io,v4.channel.k8s.io" */
	const char *exec_protocols;
	/* A Pod store (synthesised, as a sandbox backend needs one): POST
	 * (201, or 409 AlreadyExists for a name taken; generateName
	 * honoured), GET of one (404 Status when absent), list with a
	 * labelSelector (k=v, k, k!=v), PATCH of one with a merge patch
	 * (RFC 7386; 415 for another patch type), DELETE (the Pod answered with its
	 * deletionTimestamp, gone @pod_delete_ms later; 0: at once) of
	 * /api/v1/namespaces/NS/pods[/NAME].  A stored Pod is Running and
	 * Ready at once (the fake's kubelet); with exec_root, exec into a Pod
	 * not stored (or terminating) is a 404 Status. */
	bool pod_store;
	unsigned int pod_delete_ms;
	/* set (root only): each Pod's exec directory is a copy of this file
	 * system with /dev/null, /dev/zero and /dev/urandom added (made at
	 * its first exec, removed with the Pod), its commands run chroot'ed
	 * into it (cwd /root) in a mount namespace of their own with /proc
	 * mounted, under an init that reaps their orphans, as a container's
	 * PID 1 does; no memory or CPU limit is enforced. */
	const char *exec_rootfs;
};

int k8s_fake_new(const struct k8s_fake_opts *opts, struct k8s_fake **ret);
void k8s_fake_free(struct k8s_fake *f);
/* "http://127.0.0.1:PORT" or "https://127.0.0.1:PORT". */
const char *k8s_fake_url(const struct k8s_fake *f);
uint16_t k8s_fake_port(const struct k8s_fake *f);
/* Recorded exchanges loaded. */
size_t k8s_fake_exchanges(const struct k8s_fake *f);

/* One scripted answer. */
struct k8s_fake_step {
	const char *method;         /* NULL: any */
	const char *path;           /* without the query; NULL: any */
	const char *exchange;       /* "22": answer as that recorded exchange; or: */
	int status;                 /* [200] */
	const char *headers;        /* "Name: value" lines joined by '\n' (Retry-After, Warning) */
	const char *body;           /* NUL-terminated; NULL: empty */
	/* A watch stream: these lines, each with its '\n', one chunk each
	 * (status 200, application/json), instead of @body. */
	const char *const *events;
	size_t n_events;
	unsigned int delay_ms;      /* before the answer's head */
	unsigned int event_delay_ms;/* before each event */
	unsigned int hang_ms;       /* after the last event, before the end (or the cut) */
	bool cut;                   /* close the connection without the final chunk */
	size_t cut_after;           /* with cut: cut after this many bytes of the stream (0: at the end) */
	/* A WebSocket upgrade (101, the accept value of the client's key,
	 * subprotocol @ws_protocol or, when NULL, the first one offered)
	 * followed by these raw bytes, then the connection closed. */
	const void *ws_frames;
	size_t ws_frames_len;
	const char *ws_protocol;
};

/* Queues @step (copied). */
int k8s_fake_push(struct k8s_fake *f, const struct k8s_fake_step *step);
/* Steps still queued. */
size_t k8s_fake_pending(struct k8s_fake *f);

/* The recorded exchange numbered @nn ("09"): its response body (compact
 * JSON; watch events one per line) and status, or NULL. */
const char *k8s_fake_exchange_body(const struct k8s_fake *f, const char *nn, int *ret_status);
/* Its request body (compact JSON), or NULL when it had none. */
const char *k8s_fake_exchange_request_body(const struct k8s_fake *f, const char *nn);

struct k8s_fake_request {
	char *method;
	char *path;
	char *query;                /* "k=v&k=v" decoded, in the order sent */
	char *content_type;
	char *authorization;
	char *user_agent;
	char *body;
	size_t body_len;
	char exchange[3];           /* the recorded exchange served ("" when none) */
	bool scripted;
	bool client_cert_verified;  /* TLS with opts.client_ca_pem: a valid client certificate */
	int status;                 /* what was answered */
};

/* Requests so far; the array is valid until the next request or reset:
 * copy what you need, or read after the client is done. */
size_t k8s_fake_requests(struct k8s_fake *f);
/* A copy of request @i (k8s_fake_request_clear()), or -ENOENT. */
int k8s_fake_request_get(struct k8s_fake *f, size_t i, struct k8s_fake_request *ret);
void k8s_fake_request_clear(struct k8s_fake_request *r);
/* The value of query argument @key in @r (NULL when absent): a static
 * buffer of the caller's @buf. */
const char *k8s_fake_query_arg(const struct k8s_fake_request *r, const char *key, char *buf, size_t size);
/* Requests answered with the "no exchange" 404. */
size_t k8s_fake_unmatched(struct k8s_fake *f);
void k8s_fake_reset_requests(struct k8s_fake *f);

/* Pods in the store (terminating ones included). */
size_t k8s_fake_pod_count(struct k8s_fake *f);
/* Is Pod @namespace/@name in the store (terminating or not)? */
bool k8s_fake_pod_exists(struct k8s_fake *f, const char *namespace, const char *name);

/* Exec sessions finished so far (the status sent, the process reaped). */
size_t k8s_fake_exec_sessions(struct k8s_fake *f);

/* A log line of @namespace/@pod (container @container, NULL: any) at unix
 * time @t_ns nanoseconds (0: now), without its newline. */
int k8s_fake_pod_log_add(struct k8s_fake *f, const char *namespace, const char *pod, const char *container,
			 int64_t t_ns, const char *line);
/* Ends the log of @namespace/@pod: followers get the end of the stream. */
int k8s_fake_pod_log_end(struct k8s_fake *f, const char *namespace, const char *pod);

#endif
