/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Web Shell sessions of flash-operator (private to operator/): a process
 * run in a ready replica with `runsc exec --process`, spoken to over a
 * WebSocket the provider route upgraded (the channel protocol of
 * <flash/client.h>, FLASH_CLIENT_EXEC_PROTOCOL).
 *
 * A session runs exactly the argv asked for, in /root, as the replica's
 * workload runs (its user, capabilities and environment from the bundle's
 * config.json: the spec's and the image's variables, nothing of the
 * operator's or the host's), with a terminal (a pty whose master the
 * session holds: runsc gets the slave as its controlling terminal, and a
 * RESIZE sets the master's window size) or three pipes.  Each session has
 * a thread of its own; at most max_sessions are open at once (the
 * reservation is taken before the protocol switches, so a refused one
 * gets an HTTP answer), each lives at most limit_s seconds (then its
 * process is killed and STATUS says "time-limit").  Start and end are
 * audited through the audit hook: who, service, replica, argv, and at the
 * end the duration, the exit status and the bytes each way.
 */
#ifndef FLASH_OPERATOR_EXEC_H
#define FLASH_OPERATOR_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s.h"
#include "runtime.h"

#define OP_SHELL_MAX_SESSIONS_DEFAULT 16u
#define OP_SHELL_LIMIT_S_DEFAULT 1800u
#define OP_SHELL_ARGS_MAX 256u

struct op_shell_opts {
	size_t sz;
	unsigned int max_sessions; /* open at once; 0: OP_SHELL_MAX_SESSIONS_DEFAULT */
	unsigned int limit_s;      /* a session's lifetime; 0: OP_SHELL_LIMIT_S_DEFAULT */
	/* An event of service @service_id ("exec-start", "exec-end"); called
	 * from the session's thread, without any lock of ours held. */
	void (*audit)(void *ctx, const char *service_id, const char *type, const char *message);
	void *audit_ctx;
};

struct op_shell;

int op_shell_new(const struct op_shell_opts *opts, struct op_shell **ret);
/* Ends every open session (STATUS reason "shutdown", the process killed)
 * and waits for their threads; NULL is fine. */
void op_shell_free(struct op_shell *sh);
/* Sessions open now (reserved or running). */
unsigned int op_shell_open(struct op_shell *sh);
unsigned int op_shell_limit_s(const struct op_shell *sh);

/* What a session runs (copied by op_shell_reserve()). */
struct op_shell_params {
	const char *who;          /* the caller, for the audit ("kid K org O project P") */
	const char *service_id;
	const struct op_exec_target *target;
	const char *const *argv;  /* NULL: /bin/sh (unless argv_in_message) */
	size_t argc;
	/* The argv comes in the client's first message instead (ARGV: a
	 * JSON array of 1..OP_SHELL_ARGS_MAX strings), for one too large for
	 * the URL; argv must be NULL. */
	bool argv_in_message;
	bool tty;
	unsigned short cols, rows; /* tty; 0: 80x24 */
	const char *term;          /* tty; NULL: xterm */
	/* Kubernetes mode: the session runs through pods/exec of Pod
	 * @k8s_pod (container "app") in @k8s_namespace over @k8s, a client
	 * of the session's own (taken by op_shell_reserve() when it
	 * succeeds), instead of runsc; target->replica is the Pod's replica
	 * index (k8s-pods.c).  No cluster credential reaches the caller: the
	 * operator's client speaks to the API server, the caller only to the
	 * operator. */
	struct k8s_client *k8s;
	const char *k8s_namespace, *k8s_pod;
};

struct op_shell_session;

/* Takes a slot for a session.  0; -EBUSY (max_sessions open), -ESHUTDOWN
 * (stopping), -EINVAL, -ENOMEM. */
int op_shell_reserve(struct op_shell *sh, const struct op_shell_params *p, struct op_shell_session **ret);
/* Gives back a slot that was never started. */
void op_shell_cancel(struct op_shell_session *s);
/* Runs the session on the upgraded connection @fd (bytes the HTTP server
 * already read after the request head in @extra) on a thread of its own;
 * @done(@done_ctx) is called from it when the connection may be closed
 * (the session is over; @fd is no longer used).  0, or -errno (the slot
 * given back; @done is not called). */
int op_shell_start(struct op_shell_session *s, int fd, const void *extra, size_t extra_len, void (*done)(void *ctx),
		   void *done_ctx);

/* The process.json of a session (exported for tests): the "process" of
 * the bundle's config.json @bundle_config with args @argv, cwd /root,
 * terminal @tty (consoleSize, TERM=@term when a tty).  -EINVAL (the
 * config has no process object), -ENOMEM. */
int op_shell_process_json(const char *bundle_config, size_t len, const char *const *argv, size_t argc, bool tty,
			  unsigned short cols, unsigned short rows, const char *term, char **ret, size_t *ret_len);

#endif
