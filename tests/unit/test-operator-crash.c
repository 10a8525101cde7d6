/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash safety of flash-operator's store: an operator (a child process
 * serving a Unix socket) is SIGKILLed at random moments during 1,000
 * mixed create/update/delete/get commands.  The client behaves as the
 * management plane's outbox: a command without an answer is sent again,
 * unchanged (same generation, same operation id), to the restarted
 * operator.  Afterwards, with one more kill and restart, every service is
 * exactly as its last acknowledged command left it (generation, spec,
 * ports, deletion), and re-sending that command gives back the
 * acknowledged answer byte for byte.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>

#include "daemon.h"
#include "helpers.h"
#include "json.h"
#include "operator-helpers.h"
#include "util.h"

#define N_COMMANDS 1000
#define N_SERVICES 40

static char dir[64], sock[128], keys_path[128];
static pthread_mutex_t pid_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t op_pid;
static volatile int done;
static unsigned int kills;
/* Answers received; the killer counts them, not time, so that it kills
 * as often under valgrind as natively. */
static unsigned int answered;

static bool can_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* (Re)starts the operator when it is not running. */
static void ensure_running(void)
{
	int status;

	pthread_mutex_lock(&pid_lock);
	if (op_pid > 0 && waitpid(op_pid, &status, WNOHANG) == 0) {
		pthread_mutex_unlock(&pid_lock);
		return;
	}
	unlink(sock);
	struct op_daemon_opts o = { .sz = sizeof(o), .state_dir = dir, .keys_file = keys_path, .issuer = TEST_ISSUER,
				    .audience = TEST_AUDIENCE, .image = &test_image_ops };
	o.http.sz = sizeof(o.http);
	o.http.unix_path = sock;
	o.http.threads = 2;
	pid_t pid = test_operator_fork(&o, -1);
	cr_assert(pid >= 0);
	op_pid = pid;
	pthread_mutex_unlock(&pid_lock);
	for (int i = 0; i < 500 && !can_connect(); i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			cr_assert(WIFSIGNALED(status), "the operator failed to start (exit %d)", WEXITSTATUS(status));
			return; /* killed while starting: the caller retries */
		}
		usleep(10000);
	}
}

static void kill_operator(void)
{
	int status;

	pthread_mutex_lock(&pid_lock);
	if (op_pid > 0) {
		kill(op_pid, SIGKILL);
		waitpid(op_pid, &status, 0);
		op_pid = 0;
	}
	pthread_mutex_unlock(&pid_lock);
}

/* Kills the operator after every 5..40 answers, at a random moment of
 * the next command (0..3 ms in). */
static void *killer(void *arg)
{
	unsigned int seed = 7;

	(void)arg;
	while (!done) {
		unsigned int target = __atomic_load_n(&answered, __ATOMIC_SEQ_CST) + 5 + (unsigned int)(rand_r(&seed) % 36);

		while (!done && __atomic_load_n(&answered, __ATOMIC_SEQ_CST) < target)
			usleep(500);
		usleep((unsigned int)(rand_r(&seed) % 3000));
		pthread_mutex_lock(&pid_lock);
		if (!done && op_pid > 0) {
			kill(op_pid, SIGKILL); /* reaped by ensure_running() */
			kills++;
		}
		pthread_mutex_unlock(&pid_lock);
	}
	return NULL;
}

struct svc {
	char name[16];
	char id[64];
	uint64_t gen;          /* last generation used */
	bool live;             /* after the last acknowledged command */
	unsigned int replicas; /* of the last acknowledged spec */
	unsigned int ports;
	enum flash_auth_action last;
	char *spec;            /* of the last acknowledged create/update */
	char *answer;          /* acknowledged answer of the last mutation */
};

/* Sends one command until the operator answers something other than 503
 * or a transport error (restarting it as needed). */
static struct flash_client_response *send_cmd(struct flash_client *c, struct svc *s, enum flash_auth_action a,
					      const char *spec)
{
	struct flash_client_response *resp = NULL;

	for (int attempt = 0; attempt < 1000; attempt++) {
		int r;

		ensure_running();
		switch (a) {
		case FLASH_AUTH_ACTION_CREATE: r = flash_client_create(c, s->name, spec, strlen(spec), s->gen, &resp); break;
		case FLASH_AUTH_ACTION_UPDATE: r = flash_client_update(c, s->id, spec, strlen(spec), s->gen, &resp); break;
		case FLASH_AUTH_ACTION_DELETE: r = flash_client_delete(c, s->id, s->gen, &resp); break;
		default: r = flash_client_get(c, s->id, &resp); break;
		}
		if (r == 0 && flash_client_response_status(resp) != 503) {
			__atomic_add_fetch(&answered, 1, __ATOMIC_SEQ_CST);
			return resp;
		}
		flash_client_response_free(resp);
		resp = NULL;
	}
	cr_assert_fail("no answer after 1000 attempts");
	return NULL;
}

static const char *str_of(const struct json_value *v, const char *k)
{
	const char *s = NULL;

	return json_get_string(json_get(v, k), &s) == 0 ? s : "";
}

static void cleanup(void)
{
	done = 1;
	kill_operator();
}

/* A new signer "k1" whose public key set is written to @path (mode 0600). */
static struct flash_auth_signer *write_keys(const char *path)
{
	struct flash_auth_signer *signer = NULL;
	struct flash_auth_keyset *ks = NULL;
	unsigned char pk[32];
	char *jwks = NULL;

	ASSERT_OK(flash_auth_signer_generate("k1", &signer), "signer");
	ASSERT_OK(flash_auth_signer_public_key(signer, pk), "pk");
	ASSERT_OK(flash_auth_keyset_new(&ks), "ks");
	ASSERT_OK(flash_auth_keyset_add(ks, "k1", pk), "add");
	ASSERT_OK(flash_auth_keyset_to_jwks(ks, &jwks), "jwks");
	ASSERT_OK(util_write_file_atomic(path, jwks, strlen(jwks), 0600), "keys file");
	free(jwks);
	flash_auth_keyset_free(ks);
	return signer;
}

Test(operator_crash, sigkill_during_1000_commands, .timeout = 300, .fini = cleanup)
{
	struct flash_auth_signer *signer = NULL;
	struct flash_client *c = NULL;
	struct svc svcs[N_SERVICES] = { 0 };
	char cmd[128];
	unsigned int seed = 1, acked = 0;
	pthread_t kt;

	strcpy(dir, "/tmp/test-operator-crash-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/op.sock", dir);
	snprintf(keys_path, sizeof(keys_path), "%s/keys.jwks", dir);
	signer = write_keys(keys_path);

	char ep[160];
	snprintf(ep, sizeof(ep), "unix:%s", sock);
	struct flash_client_opts co = { .sz = sizeof(co), .endpoint = ep, .timeout_ms = 5000 };
	struct flash_client_identity id = { .sz = sizeof(id), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE,
					    .organization = "org-crash", .project = "p1" };
	ASSERT_OK(flash_client_new(&co, &c), "client");
	ASSERT_OK(flash_client_set_signer(c, signer, &id), "signer");
	for (int i = 0; i < N_SERVICES; i++)
		snprintf(svcs[i].name, sizeof(svcs[i].name), "svc-%d", i);

	ensure_running();
	cr_assert(pthread_create(&kt, NULL, killer, NULL) == 0);
	for (int i = 0; i < N_COMMANDS; i++) {
		struct svc *s = &svcs[rand_r(&seed) % N_SERVICES];
		unsigned int roll = rand_r(&seed) % 10, replicas = 1 + rand_r(&seed) % 3, ports = rand_r(&seed) % 3;
		enum flash_auth_action a;
		char *spec = NULL;

		if (!s->live)
			a = FLASH_AUTH_ACTION_CREATE;
		else if (roll < 6)
			a = FLASH_AUTH_ACTION_UPDATE;
		else if (roll < 8)
			a = FLASH_AUTH_ACTION_DELETE;
		else
			a = FLASH_AUTH_ACTION_GET;
		if (a == FLASH_AUTH_ACTION_CREATE || a == FLASH_AUTH_ACTION_UPDATE)
			spec = test_spec("test.invalid/app:4096", ports, replicas, 1);
		if (a != FLASH_AUTH_ACTION_GET)
			s->gen++;
		struct flash_client_response *resp = send_cmd(c, s, a, spec);
		int st = flash_client_response_status(resp);
		const char *body = flash_client_response_body(resp, NULL);

		if (a == FLASH_AUTH_ACTION_GET) {
			cr_assert_eq(st, 200, "get %s: %d %s", s->name, st, body);
		} else {
			cr_assert(st == 200 || st == 201, "command %d (%s %s gen %" PRIu64 "): %d %s", i,
				  flash_auth_action_name(a), s->name, s->gen, st, body);
			acked++;
			if (a == FLASH_AUTH_ACTION_CREATE) {
				struct json_value *v = NULL;

				cr_assert(json_parse(body, strlen(body), NULL, &v, NULL) == 0);
				snprintf(s->id, sizeof(s->id), "%s", str_of(v, "id"));
				json_free(v);
			}
			s->live = a != FLASH_AUTH_ACTION_DELETE;
			s->last = a;
			free(s->spec);
			s->spec = spec;
			spec = NULL;
			s->replicas = replicas;
			s->ports = ports;
			free(s->answer);
			s->answer = strdup(body);
		}
		free(spec);
		flash_client_response_free(resp);
	}
	done = 1;
	pthread_join(kt, NULL);
	cr_log_info("%u commands acknowledged, operator killed %u times", acked, kills);
	cr_assert_geq(kills, 20, "the test must actually kill the operator (killed %u times)", kills);

	/* One more crash, then check everything against the acknowledgements. */
	kill_operator();
	ensure_running();
	size_t live = 0;
	for (int i = 0; i < N_SERVICES; i++) {
		struct svc *s = &svcs[i];
		struct flash_client_response *resp = NULL;
		struct json_value *v = NULL;
		uint64_t gen = 0;

		if (!s->id[0])
			continue;
		ASSERT_OK(flash_client_get(c, s->id, &resp), "get");
		if (!s->live) {
			cr_assert_eq(flash_client_response_status(resp), 404, "%s was deleted (acknowledged)", s->name);
		} else {
			const char *body = flash_client_response_body(resp, NULL);
			const struct json_value *pp, *spec;
			uint64_t replicas = 0;

			live++;
			cr_assert_eq(flash_client_response_status(resp), 200, "%s: %s", s->name, body);
			cr_assert(json_parse(body, strlen(body), NULL, &v, NULL) == 0);
			json_get_uint64(json_get(v, "generation"), &gen);
			cr_assert_eq(gen, s->gen, "%s: generation %" PRIu64 ", acknowledged %" PRIu64, s->name, gen, s->gen);
			spec = json_get(v, "spec");
			json_get_uint64(json_get(spec, "replicas"), &replicas);
			cr_assert_eq(replicas, s->replicas, "%s: the acknowledged spec", s->name);
			pp = json_get(v, "public_ports");
			cr_assert(pp && pp->type == JSON_ARRAY && pp->u.array.n == s->ports,
				  "%s: ports of the acknowledged spec, not of another", s->name);
			json_free(v);
		}
		flash_client_response_free(resp);
		/* The acknowledged command, sent again, gets its answer back. */
		resp = send_cmd(c, s, s->last, s->spec);
		ASSERT_STREQ(flash_client_response_body(resp, NULL), s->answer, "the stored answer, byte for byte");
		flash_client_response_free(resp);
	}
	struct flash_client_response *resp = NULL;
	struct json_value *v = NULL;
	ASSERT_OK(flash_client_list(c, &resp), "list");
	cr_assert(json_parse(flash_client_response_body(resp, NULL), strlen(flash_client_response_body(resp, NULL)), NULL,
			     &v, NULL) == 0);
	cr_assert_eq(json_get(v, "services")->u.array.n, live, "no half-created service is listed");
	json_free(v);
	flash_client_response_free(resp);

	kill_operator();
	for (int i = 0; i < N_SERVICES; i++) {
		free(svcs[i].spec);
		free(svcs[i].answer);
	}
	flash_client_free(c);
	flash_auth_signer_free(signer);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(system(cmd) == 0);
}

/* --keys is read as a public key file: one that others can write is
 * refused at start (-EPERM, the message naming the file); a world-readable
 * one is read, and the start goes on to the next input. */
Test(operator_daemon, keys_file_others_can_write_is_refused)
{
	char kdir[] = "/tmp/test-operator-keys-XXXXXX", kpath[128], missing[160], err[512];
	struct flash_auth_signer *signer;
	struct op_daemon *d = NULL;
	static const mode_t refused[] = { 0666, 0662, 0646, 0620, 0602 };

	cr_assert(mkdtemp(kdir));
	snprintf(kpath, sizeof(kpath), "%s/keys.jwks", kdir);
	snprintf(missing, sizeof(missing), "%s/no-such-policy.json", kdir);
	signer = write_keys(kpath);

	struct op_daemon_opts o = { .sz = sizeof(o), .state_dir = kdir, .keys_file = kpath, .issuer = TEST_ISSUER,
				    .audience = TEST_AUDIENCE, .policy_file = missing, .image = &test_image_ops };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		cr_assert(chmod(kpath, refused[i]) == 0);
		err[0] = '\0';
		ASSERT_ERR(op_daemon_start(&o, &d, err, sizeof(err)), -EPERM, "a key set others can write");
		cr_assert(d == NULL, "no daemon on failure");
		cr_assert(strstr(err, kpath) && strstr(err, "writable"), "mode %04o: %s", refused[i], err);
	}
	/* World-readable is fine: the keys are read and the start stops at
	 * the missing policy file instead. */
	cr_assert(chmod(kpath, 0644) == 0);
	err[0] = '\0';
	ASSERT_ERR(op_daemon_start(&o, &d, err, sizeof(err)), -ENOENT, "the policy file is missing");
	cr_assert(strstr(err, missing) && !strstr(err, kpath), "%s", err);

	unlink(kpath);
	rmdir(kdir);
	flash_auth_signer_free(signer);
}

/* The configuration's registry credentials file is mode-checked at start:
 * one that others may read stops the operator with its name. */
Test(operator_daemon, registry_credentials_file_others_can_read_is_refused)
{
	char kdir[] = "/tmp/test-operator-creds-XXXXXX", kpath[128], cpath[128], conf[128], text[512], err[1024];
	struct flash_auth_signer *signer;
	struct op_daemon *d = NULL;
	FILE *f;

	cr_assert(mkdtemp(kdir));
	snprintf(kpath, sizeof(kpath), "%s/keys.jwks", kdir);
	snprintf(cpath, sizeof(cpath), "%s/registries.json", kdir);
	snprintf(conf, sizeof(conf), "%s/flash-operator.conf", kdir);
	signer = write_keys(kpath);
	cr_assert((f = fopen(cpath, "w")));
	fputs("{\"registry.example\":{\"username\":\"u\",\"password\":\"p\"}}", f);
	fclose(f);
	cr_assert(chmod(cpath, 0644) == 0);
	snprintf(text, sizeof(text), "{\"registry\":{\"credentialsFile\":\"%s\"}}", cpath);
	cr_assert((f = fopen(conf, "w")));
	fputs(text, f);
	fclose(f);

	struct op_daemon_opts o = { .sz = sizeof(o), .state_dir = kdir, .keys_file = kpath, .issuer = TEST_ISSUER,
				    .audience = TEST_AUDIENCE, .config_file = conf };
	o.http.sz = sizeof(o.http);
	err[0] = '\0';
	ASSERT_ERR(op_daemon_start(&o, &d, err, sizeof(err)), -EPERM, "credentials others can read");
	cr_assert(d == NULL, "no daemon on failure");
	cr_assert(strstr(err, cpath) && strstr(err, "0600"), "%s", err);

	unlink(cpath);
	unlink(conf);
	unlink(kpath);
	char db[160];
	snprintf(db, sizeof(db), "%s/flash.db", kdir);
	unlink(db);
	snprintf(db, sizeof(db), "%s/flash.db-wal", kdir);
	unlink(db);
	snprintf(db, sizeof(db), "%s/flash.db-shm", kdir);
	unlink(db);
	rmdir(kdir);
	flash_auth_signer_free(signer);
}

/* The runtime settings come from the configuration's runtime section,
 * each command-line option overriding its key: the runtime starts from
 * the file alone, a flag replaces the file's runsc, and a missing
 * cniBinDir is named. */
Test(operator_daemon, runtime_settings_from_the_config_file)
{
	char kdir[] = "/tmp/test-operator-rtconf-XXXXXX", kpath[128], conf[128], text[1024], err[1024], cmd[200];
	struct flash_auth_signer *signer;
	struct op_daemon *d = NULL;
	FILE *f;

	cr_assert(mkdtemp(kdir));
	snprintf(kpath, sizeof(kpath), "%s/keys.jwks", kdir);
	snprintf(conf, sizeof(conf), "%s/flash-operator.conf", kdir);
	signer = write_keys(kpath);

	struct op_daemon_opts o = { .sz = sizeof(o), .state_dir = kdir, .keys_file = kpath, .issuer = TEST_ISSUER,
				    .audience = TEST_AUDIENCE, .config_file = conf, .image = &test_image_ops };
	o.http.sz = sizeof(o.http);

	/* dir without cniBinDir: the missing key is named. */
	snprintf(text, sizeof(text), "{\"runtime\":{\"dir\":\"%s/rt\"}}", kdir);
	cr_assert((f = fopen(conf, "w")));
	fputs(text, f);
	fclose(f);
	err[0] = '\0';
	ASSERT_ERR(op_daemon_start(&o, &d, err, sizeof(err)), -EINVAL, "runtime.dir without runtime.cniBinDir");
	cr_assert(d == NULL);
	cr_assert(strstr(err, "runtime.cniBinDir"), "%s", err);

	/* The file alone starts the runtime: it goes as far as its runsc. */
	snprintf(text, sizeof(text),
		 "{\"runtime\":{\"dir\":\"%s/rt\",\"cniBinDir\":\"%s\",\"runsc\":\"%s/no-such-runsc\"}}", kdir, kdir, kdir);
	cr_assert((f = fopen(conf, "w")));
	fputs(text, f);
	fclose(f);
	err[0] = '\0';
	ASSERT_ERR(op_daemon_start(&o, &d, err, sizeof(err)), -ENOENT, "the file's runsc is missing");
	cr_assert(strstr(err, "no-such-runsc") && strstr(err, "runsc not found"), "%s", err);

	/* --runsc overrides runtime.runsc. */
	struct op_runtime_opts ro = { .sz = sizeof(ro), .runsc = "/nonexistent/flag-runsc" };
	o.runtime = &ro;
	err[0] = '\0';
	ASSERT_ERR(op_daemon_start(&o, &d, err, sizeof(err)), -ENOENT, "the flag's runsc is missing");
	cr_assert(strstr(err, "/nonexistent/flag-runsc") && !strstr(err, "no-such-runsc"), "%s", err);

	/* A runtime option without any directory is refused by name. */
	unlink(conf);
	o.config_file = NULL;
	err[0] = '\0';
	ASSERT_ERR(op_daemon_start(&o, &d, err, sizeof(err)), -EINVAL, "no runtime directory");
	cr_assert(strstr(err, "runtime.dir") && strstr(err, "--runtime-dir"), "%s", err);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", kdir);
	cr_assert(system(cmd) == 0);
	flash_auth_signer_free(signer);
}
