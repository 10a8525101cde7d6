/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * <flash/sandbox.h> — sandbox sessions: one disposable sandbox per session
 * id, behind a provider that is the same over every backend.
 *
 * A backend (gVisor on this node, a Kubernetes Pod per session) supplies
 * five primitives (struct flash_sandbox_backend_ops): provision, info,
 * exec, owned, reap.  Everything else — the deadline wrapper of Exec, the
 * size-gated Read, the byte-counted temp-then-rename Write, the checked tar
 * Import and the tar Export — is written once here, on top of exec, as
 * commands run inside the sandbox.  The sandbox image must therefore meet
 * the image contract: /bin/bash at that path and a userland with setsid,
 * sleep (fractions of a second: the deadline watcher of a backend without
 * exec_native), tee, wc, cat, mv, rm, tar, chmod and a stat that accepts
 * -c (GNU or BusyBox).
 *
 * Every sandbox object a backend makes carries the ownership label
 * FLASH_SANDBOX_LABEL=<session id> (pod labels, runsc container
 * annotations), and is selected by it, never by a name derived from the
 * session id.
 *
 * Session ids are DNS labels (and so Kubernetes label values):
 * [a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?; every entry point refuses another
 * with -EINVAL before calling the backend.
 *
 * Errors: 0 or a negative errno, or the negation of a code of the sandbox
 * block (FLASH_E_SANDBOX_*, flash_strerror()).
 */
#ifndef FLASH_SANDBOX_H
#define FLASH_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <flash/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct flash_spec;
struct flash_diag;

/* Longest session id, in bytes (a DNS label). */
#define FLASH_SANDBOX_ID_MAX 63
/* The ownership label (key) every sandbox object carries; its value is the
 * session id. */
#define FLASH_SANDBOX_LABEL "flash.heterocloud.io/sandbox-session"
/* Size gate of flash_sandbox_read() when neither the call nor the provider
 * options give one. */
#define FLASH_SANDBOX_READ_MAX_DEFAULT (64ULL * 1024 * 1024)
/* Longest member name (a pax path or GNU long name included) and link
 * target an import accepts, in bytes. */
#define FLASH_SANDBOX_TAR_NAME_MAX 4096

/* Domain errors of sandbox sessions (block FLASH_E_BASE + 900 = 6900). */
enum {
	FLASH_E_SANDBOX_BASE = FLASH_E_BASE + 900,
	FLASH_E_SANDBOX_ARCHIVE = FLASH_E_SANDBOX_BASE, /* tar stream refused (the diag names the member) */
	FLASH_E_SANDBOX_COUNT,    /* a write's byte count in the sandbox differs from what was sent */
	FLASH_E_SANDBOX_CONTRACT, /* the image broke the image contract, or a helper answered nonsense */
	FLASH_E_SANDBOX_ENDED,    /* the session's sandbox has ended (expired, failed or reaped) */
	FLASH_E_SANDBOX_NOT_DIR,  /* an import or export root is not a directory */
	FLASH_E_SANDBOX_MAX_,     /* end of the block (not an error) */
};

/* Receives bytes (stdout, stderr, a file, a tar stream): 0 to go on, a
 * negative errno to abort the operation (which then returns it). */
typedef int (*flash_sandbox_sink_fn)(const void *buf, size_t len, void *userdata);
/* Supplies bytes (stdin, a file, a tar stream): up to @cap bytes into @buf,
 * the count, 0 at the end, or a negative errno (which aborts). */
typedef ssize_t (*flash_sandbox_source_fn)(void *buf, size_t cap, void *userdata);

enum flash_sandbox_end {
	FLASH_SANDBOX_LIVE = 0,
	FLASH_SANDBOX_END_REAPED,   /* Reap ended it */
	FLASH_SANDBOX_END_EXPIRED,  /* expires_at passed (the backend reaps it) */
	FLASH_SANDBOX_END_FAILED,   /* the sandbox died: OOM, crash, pod failed; end_reason says which */
};

/* What a session's sandbox is; every reply carries expires_at. */
struct flash_sandbox_info {
	char session_id[FLASH_SANDBOX_ID_MAX + 1];
	char backend_id[128];      /* runsc container id / pod name: informative only, never used to select */
	int64_t created_at;        /* unix seconds */
	int64_t expires_at;        /* unix seconds */
	enum flash_sandbox_end end;
	char end_reason[128];      /* "" while live */
	bool adopted;              /* Provision found the session's sandbox already there (idempotent path) */
	bool from_pool;            /* gVisor: claimed from the warm pool */
};

/* One command for a backend's exec primitive. */
struct flash_sandbox_exec_io {
	size_t sz;
	const char *const *argv;               /* exact argv; argv[0] an absolute path */
	const char *const *env;                /* "NAME=value", NULL-terminated, or NULL */
	flash_sandbox_source_fn stdin_fn;      /* NULL: stdin empty (closed at once) */
	void *stdin_userdata;
	flash_sandbox_sink_fn stdout_fn;       /* NULL: discarded */
	void *stdout_userdata;
	flash_sandbox_sink_fn stderr_fn;       /* NULL: discarded */
	void *stderr_userdata;
	uint64_t deadline_ms;                  /* CLOCK_MONOTONIC ms, 0 = none: the transport gives up (and kills
	                                          what it can) at it; -ETIMEDOUT.  Not given to exec_native */
	/* exec_native only (the provider leaves them NULL and 0 for exec): */
	const char *cwd;                       /* absolute; NULL: the image's working directory */
	uint32_t timeout_ms;                   /* the command's deadline, 0 = none */
};

struct flash_sandbox_exec_result;

/*
 * What a backend is: five primitives and a destructor.  @backend is the
 * backend's own state, given to flash_sandbox_provider_new().  The
 * functions may be called from several threads at once.
 */
struct flash_sandbox_backend_ops {
	size_t sz;
	/* Idempotent: the session's sandbox if one exists (ret->adopted), else
	 * create and start it; two racing callers converge on one sandbox (the
	 * loser adopts the winner's).  @spec is a parsed Flash spec (image,
	 * cpu, memory, env, egress mode and destinations); @ttl_s sets
	 * expires_at. */
	int (*provision)(void *backend, const char *session_id, const struct flash_spec *spec, uint32_t ttl_s,
			 struct flash_sandbox_info *ret, struct flash_diag *diag);
	/* The session's sandbox, live or ended; -ENOENT when there is none. */
	int (*info)(void *backend, const char *session_id, struct flash_sandbox_info *ret);
	/* Runs io->argv in the session's sandbox; *ret_exit_code is the
	 * process's exit status (128+signal when killed by one).  -ENOENT: no
	 * such session; -ETIMEDOUT: deadline. */
	int (*exec)(void *backend, const char *session_id, const struct flash_sandbox_exec_io *io,
		    int *ret_exit_code);
	/* The distinct session ids of everything carrying the ownership label;
	 * the caller frees them with flash_sandbox_ids_free(). */
	int (*owned)(void *backend, char ***ret_ids, size_t *ret_count);
	/* Deletes everything of the session selected by label (never by
	 * derived name) and returns only once it is gone (not merely
	 * terminating).  A session owning nothing: 0. */
	int (*reap)(void *backend, const char *session_id);
	/* Frees @backend (called by flash_sandbox_provider_free()). */
	void (*free)(void *backend);
	/* The session's gate: marks the session revoked durably (it survives
	 * a crash and a restart) before its Reap deletes anything.  From then
	 * on info answers FLASH_SANDBOX_END_REAPED with end_reason "reaping"
	 * and exec and provision refuse with -FLASH_E_SANDBOX_ENDED until the
	 * Reap completes; a failure leaves the session as it was.  A session
	 * owning nothing: 0.  NULL (or an older, shorter struct): nothing to
	 * mark. */
	int (*revoke)(void *backend, const char *session_id);
	/* Optional (NULL, or absent from an older ops whose sz ends before
	 * it: flash_sandbox_exec() then runs the command under its /bin/bash
	 * wrapper over exec).  Runs io->argv itself (no shell, no helper
	 * program) as the leader of a new session and process group, in
	 * io->cwd, with io->env, and enforces io->timeout_ms itself: at the
	 * deadline the command's whole process group is SIGKILLed.  Fills
	 * @ret: ret->timed_out only when the deadline came and the kill ended
	 * the command (a command exiting by itself, with any status, or
	 * SIGKILLing itself before the deadline is not timed out), else
	 * ret->exit_code as exec's (128+signal); a command that cannot be
	 * started gives 127 (argv[0] missing) or 126 (not executable), a
	 * missing io->cwd gives 1, with a message on stderr.  -ENOENT: no
	 * such session. */
	int (*exec_native)(void *backend, const char *session_id, const struct flash_sandbox_exec_io *io,
			   struct flash_sandbox_exec_result *ret);
};

/* The provider: the backend plus everything written over its exec. */
struct flash_sandbox_provider;

struct flash_sandbox_provider_opts {
	size_t sz;
	/* Called FIRST by flash_sandbox_reap() (revokes the session's gate
	 * token); a negative return stops the Reap, which returns it and leaves
	 * the sandbox.  NULL: nothing to revoke. */
	int (*revoke)(const char *session_id, void *userdata);
	void *revoke_userdata;
	uint64_t read_max_bytes;     /* default size gate of Read (0 = FLASH_SANDBOX_READ_MAX_DEFAULT) */
};

/* Makes a provider over @ops and @backend (which it owns from then on,
 * also on failure: ops->free(backend) is called).  @opts may be NULL.
 * Errors: -EINVAL (NULL ops, a primitive missing), -ENOMEM. */
FLASH_API FLASH_WUR int flash_sandbox_provider_new(const struct flash_sandbox_backend_ops *ops, void *backend,
						   const struct flash_sandbox_provider_opts *opts,
						   struct flash_sandbox_provider **ret);
/* Frees @p and calls ops->free(backend).  NULL is accepted. */
FLASH_API void flash_sandbox_provider_free(struct flash_sandbox_provider *p);

/* True when @session_id is a valid session id (the one check every entry
 * point makes). */
FLASH_API bool flash_sandbox_id_valid(const char *session_id);

/* Returns the session's sandbox, creating and starting it when none
 * exists (idempotent; ret->adopted tells which).  @spec gives the image and
 * the resources; @ttl_s (> 0) sets expires_at.  Problems with the spec go
 * into @diag (may be NULL).  Errors: -EINVAL (bad id, NULL spec, ttl 0),
 * the backend's. */
FLASH_API FLASH_WUR int flash_sandbox_provision(struct flash_sandbox_provider *p, const char *session_id,
						const struct flash_spec *spec, uint32_t ttl_s,
						struct flash_sandbox_info *ret, struct flash_diag *diag);
/* The session's sandbox (live or ended).  -ENOENT when none. */
FLASH_API FLASH_WUR int flash_sandbox_info(struct flash_sandbox_provider *p, const char *session_id,
					   struct flash_sandbox_info *ret);

struct flash_sandbox_exec_opts {
	size_t sz;
	const char *const *argv;          /* exact argv, NULL-terminated; argv[0] an absolute path */
	const char *const *env;           /* "NAME=value", NULL-terminated, or NULL */
	const char *cwd;                  /* absolute; NULL: the image's working directory */
	flash_sandbox_source_fn stdin_fn; /* NULL: empty stdin */
	void *stdin_userdata;
	flash_sandbox_sink_fn stdout_fn;  /* NULL: discarded */
	void *stdout_userdata;
	flash_sandbox_sink_fn stderr_fn;  /* NULL: discarded */
	void *stderr_userdata;
	uint32_t timeout_ms;              /* 0: no deadline */
};

struct flash_sandbox_exec_result {
	int exit_code;   /* the command's status; 128+N when signal N ended it; -1 when timed out */
	bool timed_out;  /* the deadline came first: the command's whole process group was killed */
};

/* Runs opts->argv in the session's sandbox, in its own session and
 * process group; at the deadline the whole process group is killed.  A
 * backend with exec_native (gVisor) runs the command itself and enforces
 * the deadline from outside.  Otherwise (Kubernetes) it runs under
 * /bin/bash's wrapper (setsid, a watcher killing the group): the
 * command's exit status and the fact of the timeout come back on a
 * channel the command cannot forge (a status line tagged with a per-call
 * random nonce on a descriptor the command does not hold), so a command
 * printing the same text or exiting 124 is not taken for a timeout;
 * without timeout_ms and cwd there is nothing to report: bash runs setsid
 * and the command (one program start less) and exits with the command's
 * status, which is the transport's.  Returns 0 when the command ran
 * (whatever its status); -EINVAL (bad id or argv), -ENOENT (no such
 * session), -FLASH_E_SANDBOX_CONTRACT (the wrapper could not run: no
 * /bin/bash, setsid...), a sink's or source's error, the backend's. */
FLASH_API FLASH_WUR int flash_sandbox_exec(struct flash_sandbox_provider *p, const char *session_id,
					   const struct flash_sandbox_exec_opts *opts,
					   struct flash_sandbox_exec_result *ret);

/* Streams the regular file @path (absolute) of the sandbox to @sink,
 * binary-safe.  Its size (stat -c %s) is checked before any byte is
 * sent: larger than @max_bytes (0: the provider's read_max_bytes) gives
 * -EFBIG with *ret_size set to the size found.  *ret_size (may be NULL) is
 * the size read.  -ENOENT (no such file), -EISDIR, -EINVAL (bad path),
 * -EIO (fewer or more bytes than stat said: the file changed). */
FLASH_API FLASH_WUR int flash_sandbox_read(struct flash_sandbox_provider *p, const char *session_id,
					   const char *path, uint64_t max_bytes, flash_sandbox_sink_fn sink,
					   void *userdata, uint64_t *ret_size);

/* Writes the bytes of @source to @path (absolute) in the sandbox: under a
 * temporary name in the target's directory (tee | wc -c), the count
 * compared with the bytes sent, the target's mode carried over (stat -c
 * %a, chmod) or 0644 for a new file, then renamed into place.  A count
 * that differs (-FLASH_E_SANDBOX_COUNT), a source error or any failure
 * removes the temporary file and leaves the target untouched.
 * Symbolic links: a final component that is a symlink is replaced by a
 * regular file (the rename replaces the link itself; its target is never
 * written).  Directories on the way are not created (-ENOENT).
 * *ret_written (may be NULL) is the byte count. */
FLASH_API FLASH_WUR int flash_sandbox_write(struct flash_sandbox_provider *p, const char *session_id,
					    const char *path, flash_sandbox_source_fn source, void *userdata,
					    uint64_t *ret_written);

/* Extracts the tar stream of @source under @dir (absolute, an existing
 * directory) in the sandbox (tar -x -o -f - -C @dir), checking every
 * member while it streams (flash_sandbox_tar_feed()): a header reaches tar
 * only once accepted.  A refusal (-FLASH_E_SANDBOX_ARCHIVE, the diag's
 * path naming the member) ends the stream there: the members before it
 * may be extracted, the refused one and everything after it are not.
 * Links already under @dir belong to the session and are not checked.
 * -ENOENT (no such directory), -EIO (tar failed), the source's error. */
FLASH_API FLASH_WUR int flash_sandbox_import(struct flash_sandbox_provider *p, const char *session_id,
					     const char *dir, flash_sandbox_source_fn source, void *userdata,
					     struct flash_diag *diag);

/* Streams `tar -cf - -C <parent> <base>` of @root (absolute, a directory)
 * to @sink: members under one top-level directory named after @root's
 * base name.  -ENOENT (no such root), -FLASH_E_SANDBOX_NOT_DIR. */
FLASH_API FLASH_WUR int flash_sandbox_export(struct flash_sandbox_provider *p, const char *session_id,
					     const char *root, flash_sandbox_sink_fn sink, void *userdata);

/* The distinct session ids owning a sandbox (by label), in a new array of
 * new strings freed with flash_sandbox_ids_free(). */
FLASH_API FLASH_WUR int flash_sandbox_owned(struct flash_sandbox_provider *p, char ***ret_ids,
					    size_t *ret_count);
FLASH_API void flash_sandbox_ids_free(char **ids, size_t count);

/* Ends the session: calls the revoke hook first, then the backend's
 * revoke (the session marked revoked durably: from then on it refuses
 * every operation but Info and Reap), each failure returned with the
 * sandbox left as it was, so that the Reap can be retried; then deletes
 * everything of the session selected by label and returns once it is
 * gone.  A Reap that failed after the revoke (or a crash there) leaves a
 * revoked session that a second Reap completes.  A session owning
 * nothing: 0. */
FLASH_API FLASH_WUR int flash_sandbox_reap(struct flash_sandbox_provider *p, const char *session_id);

/* Text of an end ("live", "reaped", "expired", "failed"); never NULL. */
FLASH_API const char *flash_sandbox_end_name(enum flash_sandbox_end end);

/*
 * The tar checker: a streaming parser of ustar, pax and GNU headers that
 * passes the bytes of an archive through once they are checked and never
 * holds more than one header block and a bounded long name.  It refuses
 * absolute names, ".." components, hard links whose target is not a name
 * under the root, symbolic links whose target is absolute or leaves the
 * root (resolved from the link's directory), members under a symbolic
 * link of the same archive, character and block devices, FIFOs, names
 * longer than FLASH_SANDBOX_TAR_NAME_MAX, malformed headers (bad
 * checksum, bad number) and truncated archives.  Where GNU tar and BusyBox
 * tar could read a header differently from it, it refuses: pax keys
 * outside path, linkpath, mtime, atime, ctime, uid, gid, uname, gname,
 * comment, charset (so pax size and GNU.sparse.*), pax path/linkpath with
 * a GNU L/K record, sparse and multi-volume members, a prefix field
 * without the POSIX magic, an empty name field, directories and links
 * with a size, signed-only checksums, ambiguous numbers.  The first
 * refusal goes into the diag with the member's name as its path and the
 * rule as its code (flash_sandbox(3) lists them).
 */
struct flash_sandbox_tar;

/* A new checker.  -ENOMEM. */
FLASH_API FLASH_WUR int flash_sandbox_tar_new(struct flash_sandbox_tar **ret);
FLASH_API void flash_sandbox_tar_free(struct flash_sandbox_tar *t);
/* Feeds @len bytes of the archive.  The bytes checked so far go to @sink
 * (may be NULL): a header reaches it only once accepted.  Returns 0, or
 * -FLASH_E_SANDBOX_ARCHIVE (the diag, may be NULL, says why; every later
 * call returns the same), or the sink's error. */
FLASH_API FLASH_WUR int flash_sandbox_tar_feed(struct flash_sandbox_tar *t, const void *buf, size_t len,
					       flash_sandbox_sink_fn sink, void *userdata,
					       struct flash_diag *diag);
/* Ends the stream: 0 when the archive was whole (its two end-of-archive
 * blocks seen), else -FLASH_E_SANDBOX_ARCHIVE ("truncated").  Nothing
 * more goes to a sink after it. */
FLASH_API FLASH_WUR int flash_sandbox_tar_finish(struct flash_sandbox_tar *t, struct flash_diag *diag);
/* Members accepted so far. */
FLASH_API size_t flash_sandbox_tar_members(const struct flash_sandbox_tar *t);

#ifdef __cplusplus
}
#endif

#endif
