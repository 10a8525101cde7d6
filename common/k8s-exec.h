/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The streaming subresources of Pods for the one Kubernetes client
 * (common/k8s.h): `pods/exec` as a client of the WebSocket channel
 * protocol, and `pods/log` streamed.
 *
 * pods/exec.  GET /api/v1/namespaces/NS/pods/NAME/exec?command=ARG
 * (repeated, one per argument, in order: the exact argv)&container=C
 * &stdin=true&stdout=true&stderr=true&tty=true (only the true ones are
 * sent) with an RFC 6455 opening handshake over a connection of its own
 * (libcurl CONNECT_ONLY with the client's TLS settings and bearer token:
 * the same trust as every other request), offering the subprotocols
 * "v5.channel.k8s.io" then "v4.channel.k8s.io" (the server picks the
 * first it knows; Kubernetes >= 1.30 knows v5).  After the switch every
 * message is binary, its first byte the channel (kubelet's
 * remotecommand, apimachinery's wsstream):
 *   0 stdin (client -> server), 1 stdout, 2 stderr (server -> client),
 *   3 error: one metav1.Status JSON when the command ended: "Success"
 *     for exit status 0; "Failure" with reason "NonZeroExitCode" and a
 *     cause {"reason":"ExitCode","message":"N"} for status N; any other
 *     Failure is an error of the exec itself (no such container, the
 *     runtime failed),
 *   4 resize (client -> server, tty only): {"Width":W,"Height":H},
 *   255 (v5 only) close: [255, N] half-closes stream N (stdin: EOF).
 * The server sends an empty message on the lowest output channel when
 * the streams are ready; empty messages carry nothing and are skipped.
 * Over v4 stdin cannot be closed (k8s_exec_close_stdin() is -EOPNOTSUPP):
 * a command that reads its input to the end needs v5 (or a tty).
 *
 * Authorization: the upgrade is a GET, authorized as verb "get" on
 * pods/exec; since Kubernetes 1.35 (AuthorizePodWebsocketUpgradeCreate-
 * Permission, on by default) it needs "create" on pods/exec as well.
 *
 * What the server may not do (each a clear error, k8s_exec_error()):
 * break RFC 6455 (common/websocket.h refuses it: -EPROTO), send a text
 * message, a message on a channel that is not 1, 2 or 3 (-EPROTO), a
 * status over K8S_EXEC_STATUS_MAX bytes (-EMSGSIZE) or one that is not a
 * Status (-EBADMSG), close without a status (-ECONNRESET).
 *
 * pods/log: GET /api/v1/namespaces/NS/pods/NAME/log?container=&follow=
 * &sinceSeconds=|sinceTime=&timestamps=&limitBytes=&tailLines=&previous=
 * streamed to a sink as the bytes arrive (a follow has no idle bound).
 */
#ifndef FLASH_COMMON_K8S_EXEC_H
#define FLASH_COMMON_K8S_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "k8s.h"

#define K8S_EXEC_PROTOCOL_V5 "v5.channel.k8s.io"
#define K8S_EXEC_PROTOCOL_V4 "v4.channel.k8s.io"
#define K8S_EXEC_STATUS_MAX (64u << 10) /* the error channel's Status */
#define K8S_EXEC_MESSAGE_MAX (1u << 20) /* one message from the server */
#define K8S_EXEC_ARGS_MAX 256u

enum k8s_exec_channel {
	K8S_EXEC_STDIN = 0,
	K8S_EXEC_STDOUT = 1,
	K8S_EXEC_STDERR = 2,
	K8S_EXEC_ERROR = 3,
	K8S_EXEC_RESIZE = 4,
	K8S_EXEC_CLOSE = 255,       /* v5: [255, channel] */
};

struct k8s_exec_opts {
	size_t sz;
	const char *namespace;      /* NULL: the client's */
	const char *pod;            /* required */
	const char *container;      /* NULL: the pod's only (or default) container */
	const char *const *argv;    /* 1..K8S_EXEC_ARGS_MAX arguments, none NULL */
	size_t argc;
	bool stdin, stdout, stderr, tty;
	/* NULL: offer v5 then v4; else offer only this one (tests). */
	const char *protocol;
	unsigned int connect_timeout_ms; /* [the client's] connection and upgrade answer */
};

struct k8s_exec;

/* Connects and upgrades.  0 with *ret; a refusal of the upgrade (403,
 * 404, 400 ...) is the errno of its Status (k8s.h) with the Status in
 * *ret_status (may be NULL); -EPROTO for an answer that is not a
 * WebSocket upgrade to an offered subprotocol; transport errors as in
 * k8s.h; -EINVAL for bad options. */
int k8s_exec_open(struct k8s_client *c, const struct k8s_exec_opts *opts, struct k8s_exec **ret,
		  struct k8s_status *ret_status) __attribute__((warn_unused_result));
void k8s_exec_free(struct k8s_exec *x);

/* 5 or 4: the subprotocol the server chose. */
int k8s_exec_version(const struct k8s_exec *x);
/* The connection to poll for input (POLLIN) and room (POLLOUT). */
int k8s_exec_fd(const struct k8s_exec *x);
/* True when bytes are already buffered (poll() would not say so). */
bool k8s_exec_pending(const struct k8s_exec *x);
/* The last error's text ("" when none). */
const char *k8s_exec_error(const struct k8s_exec *x);

/* Writes @len bytes of stdin (split into messages of at most 64 KiB)
 * before @deadline (util_mono_ms(); 0: none).  0, -ETIMEDOUT, -EPIPE,
 * -EBADF (stdin was not asked for, or closed). */
int k8s_exec_write_stdin(struct k8s_exec *x, const void *buf, size_t len, int64_t deadline);
/* v5: stdin's end.  -EOPNOTSUPP over v4. */
int k8s_exec_close_stdin(struct k8s_exec *x, int64_t deadline);
/* A terminal's new size (tty only, else -EBADF). */
int k8s_exec_resize(struct k8s_exec *x, unsigned int width, unsigned int height, int64_t deadline);

struct k8s_exec_output {
	enum k8s_exec_channel channel; /* K8S_EXEC_STDOUT or K8S_EXEC_STDERR */
	const uint8_t *data;           /* valid until the next call */
	size_t len;                    /* > 0 */
};

/* The next output, waiting until @deadline (0: none; -1: do not wait,
 * -EAGAIN when nothing is there).  1 with *ret; 0 when the command has
 * ended (its status read, the connection closed: k8s_exec_exit_code());
 * -ETIMEDOUT; the protocol errors of the header. */
int k8s_exec_read(struct k8s_exec *x, int64_t deadline, struct k8s_exec_output *ret)
	__attribute__((warn_unused_result));

/* After k8s_exec_read() returned 0: the exit status (0..255) in
 * *ret_code, 0; an exec that failed (its Status in *ret_status, may be
 * NULL): the Status's errno or -EPROTO. */
int k8s_exec_exit_code(const struct k8s_exec *x, int *ret_code, struct k8s_status *ret_status);

/* Parses the error channel's @len bytes: 0 and the exit status, or the
 * Status's errno (-EPROTO for a Failure without an HTTP code) with the
 * Status in *ret_status; -EBADMSG when it is no Status.  The fuzz and
 * unit tests' entry point. */
int k8s_exec_status_parse(const char *text, size_t len, int *ret_code, struct k8s_status *ret_status)
	__attribute__((warn_unused_result));

/* Whole runs: stdin from @in (NULL: no stdin), outputs to @out/@err
 * (NULL: discarded; nonzero stops the run and is returned), until the
 * command ends or @deadline (-ETIMEDOUT: the connection is closed, the
 * container's runtime ends the process).  0 with *ret_exit_code. */
typedef int (*k8s_exec_sink_fn)(const void *buf, size_t len, void *userdata);
typedef ssize_t (*k8s_exec_source_fn)(void *buf, size_t cap, void *userdata);
struct k8s_exec_run_io {
	size_t sz;
	k8s_exec_source_fn in;
	void *in_userdata;
	k8s_exec_sink_fn out;
	void *out_userdata;
	k8s_exec_sink_fn err;
	void *err_userdata;
	int64_t deadline;           /* util_mono_ms(); 0: none */
};
int k8s_exec_run(struct k8s_client *c, const struct k8s_exec_opts *opts, const struct k8s_exec_run_io *io,
		 int *ret_exit_code, struct k8s_status *ret_status) __attribute__((warn_unused_result));

/* ------------------------------------------------------------ pods/log */

struct k8s_log_opts {
	size_t sz;
	const char *namespace;      /* NULL: the client's */
	const char *container;
	bool follow;
	bool timestamps;
	bool previous;
	int64_t since_seconds;      /* > 0: sinceSeconds */
	const char *since_time;     /* RFC 3339: sinceTime (not with since_seconds) */
	int64_t limit_bytes;        /* > 0: limitBytes */
	int64_t tail_lines;         /* >= 0 with has_tail_lines: tailLines */
	bool has_tail_lines;
};

/* Streams the log of @pod to @sink (nonzero stops it and is returned);
 * 0 when the server ended it.  Errors as k8s.h (404: -ENOENT, a
 * container that is not there: -EINVAL with the Status). */
int k8s_pod_log(struct k8s_client *c, const char *pod, const struct k8s_log_opts *opts, k8s_exec_sink_fn sink,
		void *userdata, struct k8s_status *ret_status) __attribute__((warn_unused_result));

#endif
