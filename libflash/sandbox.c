/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sandbox sessions: the provider over a backend's primitives (<flash/sandbox.h>). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <flash/sandbox.h>

#include "internal.h"
#include "names.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

static const char *const sandbox_errors[] = {
	[FLASH_E_SANDBOX_ARCHIVE - FLASH_E_SANDBOX_BASE] = "tar stream refused",
	[FLASH_E_SANDBOX_COUNT - FLASH_E_SANDBOX_BASE] = "byte count in the sandbox differs from the bytes sent",
	[FLASH_E_SANDBOX_CONTRACT - FLASH_E_SANDBOX_BASE] = "sandbox image breaks the image contract",
	[FLASH_E_SANDBOX_ENDED - FLASH_E_SANDBOX_BASE] = "sandbox session has ended",
	[FLASH_E_SANDBOX_NOT_DIR - FLASH_E_SANDBOX_BASE] = "not a directory in the sandbox",
};

const char *flash__sandbox_strerror(int code)
{
	size_t i = (size_t)(code - FLASH_E_SANDBOX_BASE);

	return i < ARRAY_SIZE(sandbox_errors) ? sandbox_errors[i] : NULL;
}

struct flash_sandbox_provider {
	struct flash_sandbox_backend_ops ops;
	void *backend;
	int (*revoke)(const char *session_id, void *userdata);
	void *revoke_userdata;
	uint64_t read_max_bytes;
};

FLASH_API bool flash_sandbox_id_valid(const char *session_id)
{
	return session_id && names_dns_label_valid(session_id);
}

FLASH_API const char *flash_sandbox_end_name(enum flash_sandbox_end end)
{
	switch (end) {
	case FLASH_SANDBOX_LIVE:
		return "live";
	case FLASH_SANDBOX_END_REAPED:
		return "reaped";
	case FLASH_SANDBOX_END_EXPIRED:
		return "expired";
	case FLASH_SANDBOX_END_FAILED:
		return "failed";
	}
	return "unknown";
}

FLASH_API int flash_sandbox_provider_new(const struct flash_sandbox_backend_ops *ops, void *backend,
					 const struct flash_sandbox_provider_opts *opts,
					 struct flash_sandbox_provider **ret)
{
	struct flash_sandbox_provider *p;

	if (!ops || ops->sz < offsetof(struct flash_sandbox_backend_ops, free) + sizeof(ops->free) ||
	    !ops->provision || !ops->info || !ops->exec || !ops->owned || !ops->reap || !ret) {
		if (ops && ops->sz >= offsetof(struct flash_sandbox_backend_ops, free) + sizeof(ops->free) &&
		    ops->free)
			ops->free(backend);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		if (ops->free)
			ops->free(backend);
		return -ENOMEM;
	}
	/* an older backend's shorter ops: the fields it lacks stay NULL
	 * (exec_native: the wrapper) */
	memcpy(&p->ops, ops, MIN(ops->sz, sizeof(p->ops)));
	p->backend = backend;
	p->read_max_bytes = FLASH_SANDBOX_READ_MAX_DEFAULT;
	if (opts && opts->sz >= offsetof(struct flash_sandbox_provider_opts, read_max_bytes) + sizeof(uint64_t)) {
		p->revoke = opts->revoke;
		p->revoke_userdata = opts->revoke_userdata;
		if (opts->read_max_bytes)
			p->read_max_bytes = opts->read_max_bytes;
	}
	*ret = p;
	return 0;
}

FLASH_API void flash_sandbox_provider_free(struct flash_sandbox_provider *p)
{
	if (!p)
		return;
	if (p->ops.free)
		p->ops.free(p->backend);
	free(p);
}

FLASH_API int flash_sandbox_provision(struct flash_sandbox_provider *p, const char *session_id,
				      const struct flash_spec *spec, uint32_t ttl_s, struct flash_sandbox_info *ret,
				      struct flash_diag *diag)
{
	struct flash_sandbox_info info = { 0 };
	int r;

	if (!p || !flash_sandbox_id_valid(session_id) || !spec || ttl_s == 0 || !ret)
		return -EINVAL;
	r = p->ops.provision(p->backend, session_id, spec, ttl_s, &info, diag);
	if (r < 0)
		return r;
	*ret = info;
	return 0;
}

FLASH_API int flash_sandbox_info(struct flash_sandbox_provider *p, const char *session_id,
				 struct flash_sandbox_info *ret)
{
	struct flash_sandbox_info info = { 0 };
	int r;

	if (!p || !flash_sandbox_id_valid(session_id) || !ret)
		return -EINVAL;
	r = p->ops.info(p->backend, session_id, &info);
	if (r < 0)
		return r;
	*ret = info;
	return 0;
}

/* ------------------------------------------------------------ helpers */

#define NONCE_HEX 32
/* The status line of the exec wrapper: "\036NONCE KIND CODE\n". */
#define STATUS_MAX (1 + NONCE_HEX + 1 + 8 + 1 + 11 + 1)
/* Bytes of a helper script's stderr kept for its answer. */
#define ANSWER_MAX 256
/* How long past the command's deadline the transport waits for the
 * wrapper's own report. */
#define TRANSPORT_GRACE_MS 5000

static int nonce_new(char out[NONCE_HEX + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t b[NONCE_HEX / 2];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -errno ? -errno : -EIO;
	for (size_t i = 0; i < sizeof(b); i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[NONCE_HEX] = '\0';
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* An absolute path of the sandbox (no NUL inside by construction). */
static bool path_ok(const char *path)
{
	return path && path[0] == '/' && strlen(path) < 4096;
}

/* Keeps the first ANSWER_MAX bytes of a helper's stderr. */
struct answer {
	char text[ANSWER_MAX + 1];
	size_t len;
};

static int answer_sink(const void *buf, size_t len, void *userdata)
{
	struct answer *a = userdata;
	size_t n = MIN(len, ANSWER_MAX - a->len);

	memcpy(a->text + a->len, buf, n);
	a->len += n;
	a->text[a->len] = '\0';
	return 0;
}

/* Runs one of our helper scripts (bash -c SCRIPT flash-sandbox ARGS...):
 * its exit code is ours to define, as the script runs no tenant command.
 * 126 and 127 (bash or a helper missing) are the image contract broken. */
static int run_script(struct flash_sandbox_provider *p, const char *sid, const char *script,
		      const char *const *args, flash_sandbox_source_fn in, void *in_ud, flash_sandbox_sink_fn out,
		      void *out_ud, struct answer *ans, int *ret_code)
{
	const char *argv[16] = { "/bin/bash", "-c", script, "flash-sandbox" };
	size_t n = 4;
	int code = -1, r;

	for (; args && *args && n < ARRAY_SIZE(argv) - 1; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	{
		struct flash_sandbox_exec_io io = {
			.sz = sizeof(io),
			.argv = argv,
			.stdin_fn = in,
			.stdin_userdata = in_ud,
			.stdout_fn = out,
			.stdout_userdata = out_ud,
			.stderr_fn = answer_sink,
			.stderr_userdata = ans,
		};

		r = p->ops.exec(p->backend, sid, &io, &code);
	}
	if (r < 0)
		return r;
	if (code == 126 || code == 127)
		return -FLASH_E_SANDBOX_CONTRACT;
	*ret_code = code;
	return 0;
}

/* ------------------------------------------------------------ exec */

/*
 * The deadline wrapper, run by /bin/bash.  Its stdin begins with the
 * nonce line (so the nonce is in no argv or environment the command could
 * read), then is the command's.  The command runs under setsid (its own
 * session and process group: in a non-interactive shell a background job
 * is no group leader, so setsid execs in place and $! is the group); a
 * watcher sleeps until the deadline and SIGKILLs the whole group, exiting
 * 99 only when that kill found the group (TERM ignored from then on: the
 * wrapper, woken by the group's death, TERMs the watcher, which must not
 * turn the 99 it is about to give into a 1).  A leader that exits while
 * members of its group live on (a background child) leaves the watcher
 * running until the group is empty or the deadline killed it (polled
 * every 50 ms).  The report is the last line of stderr, written after the
 * command is reaped: "\036NONCE timeout|exit RC" — timeout only when the
 * watcher killed the group and the command died of SIGKILL (a command
 * that exited on its own at the deadline keeps its status).
 */
static const char exec_wrapper[] =
	"IFS= read -r n || exit 126\n"
	"t=$1; d=$2; k=$3; shift 3\n"
	"e=(); while [ \"$k\" -gt 0 ]; do e+=(\"$1\"); shift; k=$((k - 1)); done\n"
	"if [ -n \"$d\" ]; then cd \"$d\" 2>/dev/null || { printf '\\036%s nocwd 1\\n' \"$n\" >&2; exit 1; }; fi\n"
	"exec 3<&0\n"
	"o=$PATH; PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
	"s=$(command -v setsid) || s=setsid\n"
	"( PATH=$o; [ ${#e[@]} = 0 ] || export \"${e[@]}\"; exec \"$s\" \"$@\" ) <&3 3<&- &\n"
	"p=$!\n"
	"exec 3<&-\n"
	"w=\n"
	"if [ \"$t\" != 0 ]; then\n"
	"  ( trap 'kill $s 2>/dev/null; exit 1' TERM; sleep \"$t\" & s=$!; wait $s &&"
	" { trap '' TERM; kill -s KILL -- -$p 2>/dev/null && exit 99; }; exit 1 ) </dev/null >/dev/null 2>&1 &\n"
	"  w=$!\n"
	"fi\n"
	"wait $p; rc=$?\n"
	"k=exit\n"
	"if [ -n \"$w\" ]; then\n"
	"  while kill -0 -- -$p 2>/dev/null && kill -0 $w 2>/dev/null; do sleep 0.05; done\n"
	"  kill $w 2>/dev/null; wait $w; [ $? = 99 ] && [ $rc = 137 ] && k=timeout\n"
	"fi\n"
	"printf '\\036%s %s %s\\n' \"$n\" $k $rc >&2\n"
	"exit $rc\n";

/* Without a deadline or a working directory nothing needs reporting:
 * bash runs setsid in the foreground (a child of a shell without job
 * control is no group leader, so setsid execs the command in place; a
 * process of `runsc exec` may be one, and setsid would then fork and
 * return at once) and exits with its status, which the transport passes
 * on (a bash or setsid that cannot start gives 126/127 like a command
 * that cannot). */
static const char exec_direct[] = "setsid \"$@\"\nexit $?\n";

struct exec_ctx {
	char nonce[NONCE_HEX + 1];
	char line[NONCE_HEX + 2];
	size_t line_off;
	flash_sandbox_source_fn in;
	void *in_ud;
	flash_sandbox_sink_fn err;
	void *err_ud;
	uint8_t tail[STATUS_MAX];
	size_t tail_len;
};

static ssize_t exec_stdin(void *buf, size_t cap, void *userdata)
{
	struct exec_ctx *c = userdata;

	if (c->line_off < NONCE_HEX + 1) {
		size_t n = MIN(cap, NONCE_HEX + 1 - c->line_off);

		memcpy(buf, c->line + c->line_off, n);
		c->line_off += n;
		return (ssize_t)n;
	}
	return c->in ? c->in(buf, cap, c->in_ud) : 0;
}

static int fwd(struct exec_ctx *c, const void *buf, size_t len)
{
	return c->err && len ? c->err(buf, len, c->err_ud) : 0;
}

/* Passes stderr on, holding back its last STATUS_MAX bytes (where the
 * wrapper's report will be). */
static int exec_stderr(const void *buf, size_t len, void *userdata)
{
	struct exec_ctx *c = userdata;
	const uint8_t *b = buf;
	size_t excess, from_tail, from_buf;
	int r;

	if (c->tail_len + len <= sizeof(c->tail)) {
		memcpy(c->tail + c->tail_len, b, len);
		c->tail_len += len;
		return 0;
	}
	excess = c->tail_len + len - sizeof(c->tail);
	from_tail = MIN(excess, c->tail_len);
	r = fwd(c, c->tail, from_tail);
	if (r < 0)
		return r;
	memmove(c->tail, c->tail + from_tail, c->tail_len - from_tail);
	c->tail_len -= from_tail;
	from_buf = excess - from_tail;
	r = fwd(c, b, from_buf);
	if (r < 0)
		return r;
	memcpy(c->tail + c->tail_len, b + from_buf, len - from_buf);
	c->tail_len += len - from_buf;
	return 0;
}

/* Finds the report at the end of the held-back stderr: 1 timeout, 0 exit
 * (with *code), -1 no report; the rest of the tail is passed on. */
static int exec_report(struct exec_ctx *c, int *code, int *ret_fwd)
{
	size_t i = c->tail_len;
	char line[STATUS_MAX + 1], kind[16];
	int rc, n = 0, res = -1;

	while (i > 0 && c->tail[i - 1] != 0x1e)
		i--;
	if (i > 0 && c->tail_len - i < sizeof(line) && c->tail[c->tail_len - 1] == '\n') {
		memcpy(line, c->tail + i, c->tail_len - i);
		line[c->tail_len - i] = '\0';
		if (strncmp(line, c->nonce, NONCE_HEX) == 0 && line[NONCE_HEX] == ' ' &&
		    sscanf(line + NONCE_HEX + 1, "%15s %d\n%n", kind, &rc, &n) == 2 &&
		    (size_t)n == strlen(line) - NONCE_HEX - 1) {
			if (strcmp(kind, "timeout") == 0)
				res = 1;
			else if (strcmp(kind, "exit") == 0 || strcmp(kind, "nocwd") == 0)
				res = 0;
			*code = rc;
		}
	}
	*ret_fwd = fwd(c, c->tail, res < 0 ? c->tail_len : i - 1);
	return res;
}

/* The backend's exec of @argv with the caller's env and streams. */
static struct flash_sandbox_exec_io exec_io_of(const struct flash_sandbox_exec_opts *o, const char *const *argv)
{
	return (struct flash_sandbox_exec_io){
		.sz = sizeof(struct flash_sandbox_exec_io),
		.argv = argv,
		.env = o->env,
		.stdin_fn = o->stdin_fn,
		.stdin_userdata = o->stdin_userdata,
		.stdout_fn = o->stdout_fn,
		.stdout_userdata = o->stdout_userdata,
		.stderr_fn = o->stderr_fn,
		.stderr_userdata = o->stderr_userdata,
	};
}

FLASH_API int flash_sandbox_exec(struct flash_sandbox_provider *p, const char *session_id,
				 const struct flash_sandbox_exec_opts *opts, struct flash_sandbox_exec_result *ret)
{
	struct flash_sandbox_exec_opts o = { 0 };
	struct exec_ctx c = { 0 };
	const char **argv = NULL;
	char tbuf[32], nbuf[24];
	size_t n = 0, ne = 0;
	uint64_t start;
	int code = -1, wcode = -1, fr = 0, rep, r;

	if (!p || !flash_sandbox_id_valid(session_id) || !opts || !ret)
		return -EINVAL;
	memcpy(&o, opts, MIN(opts->sz, sizeof(o)));
	if (!o.argv || !o.argv[0] || o.argv[0][0] != '/' || (o.cwd && o.cwd[0] != '/'))
		return -EINVAL;
	if (p->ops.exec_native) {
		/* the backend runs the command itself and enforces the
		 * deadline from outside: no wrapper, no report to parse */
		struct flash_sandbox_exec_io io = exec_io_of(&o, o.argv);
		struct flash_sandbox_exec_result res = { .exit_code = -1 };

		io.cwd = o.cwd;
		io.timeout_ms = o.timeout_ms;
		r = p->ops.exec_native(p->backend, session_id, &io, &res);
		if (r == 0 && res.timed_out)
			res.exit_code = -1;
		if (r == 0)
			*ret = res;
		goto out;
	}
	while (o.argv[n])
		n++;
	while (o.env && o.env[ne])
		ne++;
	argv = calloc(n + ne + 9, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	r = nonce_new(c.nonce);
	if (r < 0)
		goto out;
	snprintf(c.line, sizeof(c.line), "%s\n", c.nonce);
	c.in = o.stdin_fn;
	c.in_ud = o.stdin_userdata;
	c.err = o.stderr_fn;
	c.err_ud = o.stderr_userdata;
	snprintf(tbuf, sizeof(tbuf), "%u.%03u", o.timeout_ms / 1000, o.timeout_ms % 1000);
	if (o.timeout_ms == 0 && !o.cwd) {
		struct flash_sandbox_exec_io io = exec_io_of(&o, argv);

		argv[0] = "/bin/bash";
		argv[1] = "-c";
		argv[2] = exec_direct;
		argv[3] = "flash-sandbox-exec";
		for (size_t i = 0; i < n; i++)
			argv[4 + i] = o.argv[i];
		r = p->ops.exec(p->backend, session_id, &io, &wcode);
		if (r == 0) {
			ret->exit_code = wcode;
			ret->timed_out = false;
		}
		goto out;
	}
	/* -p: the wrapper reads no BASH_ENV and imports no functions from
	 * an environment the tenant may have set (a Pod's env is every
	 * process's) */
	argv[0] = "/bin/bash";
	argv[1] = "-pc";
	argv[2] = exec_wrapper;
	argv[3] = "flash-sandbox-exec";
	argv[4] = o.timeout_ms ? tbuf : "0";
	argv[5] = o.cwd ? o.cwd : "";
	/* The environment is the command's only, passed as arguments: the
	 * wrapper's own bash runs with none of the tenant's (a BASH_ENV or a
	 * PATH of its could otherwise read the nonce or stand in for the
	 * wrapper's helpers and forge the report). */
	snprintf(nbuf, sizeof(nbuf), "%zu", ne);
	argv[6] = nbuf;
	for (size_t i = 0; i < ne; i++)
		argv[7 + i] = o.env[i];
	for (size_t i = 0; i < n; i++)
		argv[7 + ne + i] = o.argv[i];
	start = now_ms();
	{
		struct flash_sandbox_exec_io io = {
			.sz = sizeof(io),
			.argv = argv,
			.env = NULL, /* the command's, in argv */
			.stdin_fn = exec_stdin,
			.stdin_userdata = &c,
			.stdout_fn = o.stdout_fn,
			.stdout_userdata = o.stdout_userdata,
			.stderr_fn = exec_stderr,
			.stderr_userdata = &c,
			.deadline_ms = o.timeout_ms ? start + o.timeout_ms + TRANSPORT_GRACE_MS : 0,
		};

		r = p->ops.exec(p->backend, session_id, &io, &wcode);
	}
	if (r == -ETIMEDOUT && o.timeout_ms) {
		/* the wrapper did not report within the grace: the transport
		 * killed what it could */
		(void)exec_report(&c, &code, &fr);
		ret->exit_code = -1;
		ret->timed_out = true;
		r = fr < 0 ? fr : 0;
		goto out;
	}
	if (r < 0)
		goto out;
	rep = exec_report(&c, &code, &fr);
	if (fr < 0) {
		r = fr;
		goto out;
	}
	if (rep < 0) {
		/* no report: bash or setsid missing, or the wrapper was killed */
		r = -FLASH_E_SANDBOX_CONTRACT;
		goto out;
	}
	/* a timeout also needs our own clock to agree */
	if (rep == 1 && now_ms() - start + 5 >= o.timeout_ms) {
		ret->exit_code = -1;
		ret->timed_out = true;
	} else {
		ret->exit_code = code;
		ret->timed_out = false;
	}
	r = 0;
out:
	free(argv);
	return r;
}

/* ------------------------------------------------------------ read */

/* Exit codes: 2 no such file, 3 a directory, 4 not a regular file, 5 stat
 * failed, 6 over the gate (the size is on stderr either way), 7 cat
 * failed. */
static const char read_script[] =
	"p=$1; max=$2\n"
	"[ -e \"$p\" ] || exit 2\n"
	"[ -d \"$p\" ] && exit 3\n"
	"[ -f \"$p\" ] || exit 4\n"
	"s=$(stat -L -c %s \"$p\") || exit 5\n"
	"printf '%s\\n' \"$s\" >&2\n"
	"[ \"$s\" -le \"$max\" ] || exit 6\n"
	"cat \"$p\" || exit 7\n";

struct read_ctx {
	flash_sandbox_sink_fn sink;
	void *userdata;
	uint64_t size, got;
	bool over;
};

static int read_sink(const void *buf, size_t len, void *userdata)
{
	struct read_ctx *c = userdata;

	if (len > c->size - c->got) {
		c->over = true;  /* the file grew: never more than stat said */
		return -EIO;
	}
	c->got += len;
	return c->sink(buf, len, c->userdata);
}

FLASH_API int flash_sandbox_read(struct flash_sandbox_provider *p, const char *session_id, const char *path,
				 uint64_t max_bytes, flash_sandbox_sink_fn sink, void *userdata, uint64_t *ret_size)
{
	struct read_ctx c = { .sink = sink, .userdata = userdata, .size = UINT64_MAX };
	struct answer ans = { 0 };
	char maxbuf[24];
	const char *args[3];
	unsigned long long size = 0;
	bool have_size;
	int code = -1, r;

	if (!p || !flash_sandbox_id_valid(session_id) || !path_ok(path) || !sink)
		return -EINVAL;
	if (max_bytes == 0)
		max_bytes = p->read_max_bytes;
	snprintf(maxbuf, sizeof(maxbuf), "%" PRIu64, max_bytes);
	args[0] = path;
	args[1] = maxbuf;
	args[2] = NULL;
	/* the size arrives on stderr before the first byte on stdout: the
	 * sink checks against max_bytes until it is known */
	c.size = max_bytes;
	r = run_script(p, session_id, read_script, args, NULL, NULL, read_sink, &c, &ans, &code);
	have_size = sscanf(ans.text, "%llu", &size) == 1;
	if (r < 0)
		return c.over ? -EIO : r;
	switch (code) {
	case 0:
		if (!have_size)
			return -FLASH_E_SANDBOX_CONTRACT;
		if (c.got != size)
			return -EIO;
		break;
	case 2:
		return -ENOENT;
	case 3:
		return -EISDIR;
	case 4:
		return -EINVAL;
	case 6:
		if (!have_size)
			return -FLASH_E_SANDBOX_CONTRACT;
		if (ret_size)
			*ret_size = size;
		return -EFBIG;
	case 7:
		return -EIO;
	default:
		return -FLASH_E_SANDBOX_CONTRACT;
	}
	if (ret_size)
		*ret_size = size;
	return 0;
}

/* ------------------------------------------------------------ write */

/* Splits @path into its directory and base name (new strings);
 * -EINVAL for "/" or a path ending in "/" "." or "..". */
static int split_path(const char *path, char **ret_dir, char **ret_base)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash + 1;

	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return -EINVAL;
	*ret_dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	*ret_base = strdup(base);
	if (!*ret_dir || !*ret_base) {
		free(*ret_dir);
		free(*ret_base);
		return -ENOMEM;
	}
	return 0;
}

/* Phase 1: the bytes into the temporary file, counted; exit 2 no
 * directory, 3 the target is a directory, 5 tee or wc failed (the
 * temporary removed).  The count is on stderr. */
static const char write_script[] =
	"d=$1; b=$2; t=$3\n"
	"[ -d \"$d\" ] || { cat >/dev/null; exit 2; }\n"
	"[ -d \"$d/$b\" ] && [ ! -L \"$d/$b\" ] && { cat >/dev/null; exit 3; }\n"
	"set -o pipefail\n"
	"c=$(tee \"$d/$t\" | wc -c) || { rm -f \"$d/$t\"; exit 5; }\n"
	"printf '%s\\n' $c >&2\n";
/* Phase 2: the mode (the target's unless it is a symlink, else 0644),
 * then the rename; exit 7 when mv failed (temporary removed).  A symlink
 * target is removed first: mv onto a symlink to a directory would move
 * the file into that directory instead of replacing the link. */
static const char commit_script[] =
	"d=$1; b=$2; t=$3\n"
	"m=644\n"
	"if [ -e \"$d/$b\" ] && [ ! -L \"$d/$b\" ]; then m=$(stat -c %a \"$d/$b\") || m=644; fi\n"
	"chmod \"$m\" \"$d/$t\" 2>/dev/null || chmod 644 \"$d/$t\"\n"
	"if [ -L \"$d/$b\" ]; then rm -f \"$d/$b\" || { rm -f \"$d/$t\"; exit 7; }; fi\n"
	"mv -f \"$d/$t\" \"$d/$b\" || { rm -f \"$d/$t\"; exit 7; }\n";
static const char abort_script[] = "rm -f \"$1/$3\"\n";

struct write_ctx {
	flash_sandbox_source_fn source;
	void *userdata;
	uint64_t sent;
	int error;
};

static ssize_t write_stdin(void *buf, size_t cap, void *userdata)
{
	struct write_ctx *c = userdata;
	ssize_t n = c->source(buf, cap, c->userdata);

	if (n < 0)
		c->error = (int)n;
	else
		c->sent += (uint64_t)n;
	return n;
}

FLASH_API int flash_sandbox_write(struct flash_sandbox_provider *p, const char *session_id, const char *path,
				  flash_sandbox_source_fn source, void *userdata, uint64_t *ret_written)
{
	_cleanup_free_ char *dir = NULL, *base = NULL, *tmp = NULL;
	struct write_ctx c = { .source = source, .userdata = userdata };
	struct answer ans = { 0 };
	char nonce[NONCE_HEX + 1];
	const char *args[4];
	unsigned long long count = 0;
	int code = -1, r, rr;

	if (!p || !flash_sandbox_id_valid(session_id) || !path_ok(path) || !source)
		return -EINVAL;
	r = split_path(path, &dir, &base);
	if (r < 0)
		return r;
	r = nonce_new(nonce);
	if (r < 0)
		return r;
	if (asprintf(&tmp, ".flash-write.%s", nonce) < 0)
		return -ENOMEM;
	args[0] = dir;
	args[1] = base;
	args[2] = tmp;
	args[3] = NULL;
	r = run_script(p, session_id, write_script, args, write_stdin, &c, NULL, NULL, &ans, &code);
	if (r < 0 && c.error < 0)
		r = c.error;
	if (r < 0)
		goto abort;
	switch (code) {
	case 0:
		break;
	case 2:
		return -ENOENT;
	case 3:
		return -EISDIR;
	case 5:
		return -EIO;
	default:
		r = -FLASH_E_SANDBOX_CONTRACT;
		goto abort;
	}
	if (sscanf(ans.text, "%llu", &count) != 1) {
		r = -FLASH_E_SANDBOX_CONTRACT;
		goto abort;
	}
	if (count != c.sent) {
		r = -FLASH_E_SANDBOX_COUNT;
		goto abort;
	}
	memset(&ans, 0, sizeof(ans));
	r = run_script(p, session_id, commit_script, args, NULL, NULL, NULL, NULL, &ans, &code);
	if (r < 0)
		goto abort;
	if (code != 0)
		return code == 7 ? -EIO : -FLASH_E_SANDBOX_CONTRACT;
	if (ret_written)
		*ret_written = c.sent;
	return 0;
abort:
	/* never leave the temporary behind (the target was not touched) */
	memset(&ans, 0, sizeof(ans));
	rr = run_script(p, session_id, abort_script, args, NULL, NULL, NULL, NULL, &ans, &code);
	(void)rr;
	return r;
}

/* ------------------------------------------------------------ import */

/* Exit 2: no such directory; otherwise tar's status. */
static const char import_script[] =
	"[ -d \"$1\" ] || { cat >/dev/null; exit 2; }\n"
	"exec tar -x -o -f - -C \"$1\"\n";

struct import_ctx {
	struct flash_sandbox_tar *tar;
	flash_sandbox_source_fn source;
	void *userdata;
	struct flash_diag *diag;
	uint8_t *q;        /* checked bytes not yet handed to the exec */
	size_t q_len, q_off, q_cap;
	uint8_t in[64 * 1024];
	bool eof;
	int error;         /* the checker's or the source's */
};

static int import_queue(const void *buf, size_t len, void *userdata)
{
	struct import_ctx *c = userdata;

	if (c->q_len + len > c->q_cap) {
		size_t cap = MAX(c->q_cap * 2, c->q_len + len);
		uint8_t *n = realloc(c->q, cap);

		if (!n)
			return -ENOMEM;
		c->q = n;
		c->q_cap = cap;
	}
	memcpy(c->q + c->q_len, buf, len);
	c->q_len += len;
	return 0;
}

/* The exec's stdin: source -> checker -> here.  A refusal ends the stream
 * (EOF, so tar finishes what it was given); the refusal is returned by
 * the import. */
static ssize_t import_stdin(void *buf, size_t cap, void *userdata)
{
	struct import_ctx *c = userdata;

	while (c->q_off == c->q_len) {
		ssize_t n;
		int r;

		c->q_off = c->q_len = 0;
		if (c->eof || c->error)
			return 0;
		n = c->source(c->in, sizeof(c->in), c->userdata);
		if (n < 0) {
			c->error = (int)n;
			return n;
		}
		if (n == 0) {
			c->eof = true;
			r = flash_sandbox_tar_finish(c->tar, c->diag);
		} else {
			r = flash_sandbox_tar_feed(c->tar, c->in, (size_t)n, import_queue, c, c->diag);
		}
		if (r < 0)
			c->error = r;
	}
	{
		size_t n = MIN(cap, c->q_len - c->q_off);

		memcpy(buf, c->q + c->q_off, n);
		c->q_off += n;
		return (ssize_t)n;
	}
}

FLASH_API int flash_sandbox_import(struct flash_sandbox_provider *p, const char *session_id, const char *dir,
				   flash_sandbox_source_fn source, void *userdata, struct flash_diag *diag)
{
	struct import_ctx *c;
	struct answer ans = { 0 };
	const char *args[2] = { dir, NULL };
	int code = -1, r;

	if (!p || !flash_sandbox_id_valid(session_id) || !path_ok(dir) || !source)
		return -EINVAL;
	diag_begin(flash__diag(diag), 0);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->source = source;
	c->userdata = userdata;
	c->diag = diag;
	r = flash_sandbox_tar_new(&c->tar);
	if (r < 0)
		goto out;
	r = run_script(p, session_id, import_script, args, import_stdin, c, NULL, NULL, &ans, &code);
	if (r >= 0 && code == 2) {
		r = -ENOENT;
		goto out;
	}
	if (c->error < 0) {
		r = c->error;  /* refused (or the source failed): that is the answer */
		goto out;
	}
	if (r < 0)
		goto out;
	if (code == 2)
		r = -ENOENT;
	else if (code != 0)
		r = -EIO;
	else if (!c->eof)
		r = -EIO; /* tar stopped reading before the end */
out:
	flash_sandbox_tar_free(c->tar);
	free(c->q);
	free(c);
	return r;
}

/* ------------------------------------------------------------ export */

/* Exit 2: no such root, 3: not a directory; otherwise tar's status. */
static const char export_script[] =
	"[ -e \"$1/$2\" ] || exit 2\n"
	"[ -d \"$1/$2\" ] || exit 3\n"
	"exec tar -c -f - -C \"$1\" -- \"$2\"\n";

FLASH_API int flash_sandbox_export(struct flash_sandbox_provider *p, const char *session_id, const char *root,
				   flash_sandbox_sink_fn sink, void *userdata)
{
	_cleanup_free_ char *trimmed = NULL, *parent = NULL, *base = NULL;
	struct answer ans = { 0 };
	const char *args[3];
	size_t len;
	int code = -1, r;

	if (!p || !flash_sandbox_id_valid(session_id) || !path_ok(root) || !sink)
		return -EINVAL;
	trimmed = strdup(root);
	if (!trimmed)
		return -ENOMEM;
	len = strlen(trimmed);
	while (len > 1 && trimmed[len - 1] == '/')
		trimmed[--len] = '\0';
	r = split_path(trimmed, &parent, &base);
	if (r < 0)
		return r;
	args[0] = parent;
	args[1] = base;
	args[2] = NULL;
	r = run_script(p, session_id, export_script, args, NULL, NULL, sink, userdata, &ans, &code);
	if (r < 0)
		return r;
	switch (code) {
	case 0:
		return 0;
	case 2:
		return -ENOENT;
	case 3:
		return -FLASH_E_SANDBOX_NOT_DIR;
	default:
		return -EIO;
	}
}

FLASH_API int flash_sandbox_owned(struct flash_sandbox_provider *p, char ***ret_ids, size_t *ret_count)
{
	char **ids = NULL;
	size_t n = 0;
	int r;

	if (!p || !ret_ids || !ret_count)
		return -EINVAL;
	r = p->ops.owned(p->backend, &ids, &n);
	if (r < 0)
		return r;
	*ret_ids = ids;
	*ret_count = n;
	return 0;
}

FLASH_API void flash_sandbox_ids_free(char **ids, size_t count)
{
	if (!ids)
		return;
	for (size_t i = 0; i < count; i++)
		free(ids[i]);
	free(ids);
}

FLASH_API int flash_sandbox_reap(struct flash_sandbox_provider *p, const char *session_id)
{
	int r;

	if (!p || !flash_sandbox_id_valid(session_id))
		return -EINVAL;
	if (p->revoke) {
		r = p->revoke(session_id, p->revoke_userdata);
		if (r < 0)
			return r;
	}
	if (p->ops.revoke) {
		r = p->ops.revoke(p->backend, session_id);
		if (r < 0)
			return r;
	}
	return p->ops.reap(p->backend, session_id);
}
