/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-operator's HTTP side over real sockets: clients that stall in
 * their headers do not lock others out and are closed after the idle
 * timeout; bodies over the limit get 413; TLS with a certificate and key,
 * verified by <flash/client.h> against a CA file; a Unix socket of mode
 * 0600.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#include <flash/auth.h>
#include <flash/client.h>

#include "helpers.h"
#include "http-helpers.h"
#include "load-helpers.h"
#include "http.h"
#include "operator-helpers.h"
#include "util.h"

static char dir[64], sock[128];
static struct op_store *store;
static struct op_provider *prov;
static struct op_http *http;
static struct flash_auth_signer *signer;
static struct flash_auth_keyset *keys;

static void setup(void)
{
	char path[128];
	unsigned char pk[32];

	strcpy(dir, "/tmp/test-operator-http-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/flash.db", dir);
	snprintf(sock, sizeof(sock), "%s/op.sock", dir);
	ASSERT_OK(op_store_open(path, &store, NULL, 0), "store");
	ASSERT_OK(flash_auth_signer_generate("k1", &signer), "signer");
	ASSERT_OK(flash_auth_signer_public_key(signer, pk), "pk");
	ASSERT_OK(flash_auth_keyset_new(&keys), "keyset");
	ASSERT_OK(flash_auth_keyset_add(keys, "k1", pk), "add");
	struct op_provider_opts o = { .sz = sizeof(o), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE, .keys = keys,
				      .store = store, .image = &test_image_ops };
	ASSERT_OK(op_provider_new(&o, &prov), "provider");
}

static void teardown(void)
{
	char cmd[128];

	op_http_stop(http);
	op_provider_free(prov);
	op_store_close(store);
	flash_auth_signer_free(signer);
	flash_auth_keyset_free(keys);
	http = NULL, prov = NULL, store = NULL, signer = NULL, keys = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(operator_http, .init = setup, .fini = teardown, .timeout = 60);

static int unix_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	cr_assert(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s", strerror(errno));
	return fd;
}

static struct flash_client *client(const char *endpoint, const char *ca)
{
	struct flash_client_opts co = { .sz = sizeof(co), .endpoint = endpoint, .ca_file = ca, .timeout_ms = 60000 };
	struct flash_client_identity id = { .sz = sizeof(id), .issuer = TEST_ISSUER, .audience = TEST_AUDIENCE,
					    .organization = "org-h", .project = "p1" };
	struct flash_client *c = NULL;

	ASSERT_OK(flash_client_new(&co, &c), "client");
	ASSERT_OK(flash_client_set_signer(c, signer, &id), "signer");
	return c;
}

Test(operator_http, slow_clients_do_not_lock_others_out)
{
	struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .timeout_s = 1, .threads = 1 };
	struct flash_client_response *r = NULL;
	struct flash_client *c;
	struct stat sb;
	char ep[160], buf[64];
	int slow[8];

	ASSERT_OK(op_http_start(prov, &ho, &http, NULL, 0), "start");
	cr_assert(stat(sock, &sb) == 0 && (sb.st_mode & 0777) == 0600, "socket mode %o", sb.st_mode & 0777);
	/* Eight clients send half a request head and stop. */
	for (int i = 0; i < 8; i++) {
		static const char part[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";

		slow[i] = unix_connect();
		cr_assert(write(slow[i], part, sizeof(part) - 1) == (ssize_t)(sizeof(part) - 1));
	}
	/* One server thread, yet another client is answered at once. */
	snprintf(ep, sizeof(ep), "unix:%s", sock);
	c = client(ep, NULL);
	ASSERT_OK(flash_client_list(c, &r), "list while others stall");
	cr_assert_eq(flash_client_response_status(r), 200, "%s", flash_client_response_body(r, NULL));
	flash_client_response_free(r);
	/* The stalled ones are closed after the idle timeout. */
	for (int i = 0; i < 8; i++) {
		struct pollfd p = { .fd = slow[i], .events = POLLIN };

		cr_assert(poll(&p, 1, 5000) == 1, "stalled connection %d still open after 5 s", i);
		ssize_t n = read(slow[i], buf, sizeof(buf));
		cr_assert(n <= 0, "stalled connection %d got %zd bytes instead of being closed", i, n);
		close(slow[i]);
	}
	flash_client_free(c);
}

Test(operator_http, body_limit)
{
	struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .max_body_bytes = 4096 };
	struct flash_client_response *r = NULL;
	struct flash_client *c;
	char ep[160], *spec;

	ASSERT_OK(op_http_start(prov, &ho, &http, NULL, 0), "start");
	snprintf(ep, sizeof(ep), "unix:%s", sock);
	c = client(ep, NULL);
	/* The spec with 6000 bytes of metadata: a body past 4 KiB. */
	char *s = test_spec("test.invalid/a:1", 0, 1, 1), pad[6001];
	memset(pad, 'x', 6000);
	pad[6000] = '\0';
	*strstr(s, "\"metadata\":{}") = '\0';
	cr_assert(asprintf(&spec, "%s\"metadata\":{\"pad\":\"%s\"}}", s, pad) > 0);
	free(s);
	s = test_spec("test.invalid/a:1", 0, 1, 1);
	ASSERT_OK(flash_client_create(c, "big", spec, strlen(spec), 1, &r), "create");
	cr_assert_eq(flash_client_response_status(r), 413);
	ASSERT_STREQ(flash_client_response_error_code(r), "too-large", "code");
	flash_client_response_free(r);
	/* The same spec without the padding is admitted. */
	ASSERT_OK(flash_client_create(c, "big", s, strlen(s), 1, &r), "create");
	cr_assert_eq(flash_client_response_status(r), 201, "%s", flash_client_response_body(r, NULL));
	flash_client_response_free(r);
	flash_client_free(c);
	free(spec);
	free(s);
}

/* A self-signed certificate for 127.0.0.1 and its key (mode 0600) in
 * the test's directory; @alg: openssl req's key options. */
static void make_cert(const char *alg, char cert[static 128], char key[static 128])
{
	char cmd[1024];

	snprintf(cert, 128, "%s/cert.pem", dir);
	snprintf(key, 128, "%s/key.pem", dir);
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 %s -nodes -keyout '%s' -out '%s' -days 1 -subj /CN=127.0.0.1 "
		 "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 && chmod 600 '%s'",
		 alg, key, cert, key);
	cr_assert(system(cmd) == 0, "openssl (scripts/deps.sh installs it)");
}

/* A header deadline for TLS listeners: handshake and head both count,
 * and a handshake under valgrind takes seconds. */
static unsigned int tls_deadline_ms(unsigned int ms)
{
#ifdef RUNNING_ON_VALGRIND
	if (RUNNING_ON_VALGRIND)
		return ms * 8;
#endif
	return ms;
}

Test(operator_http, tls)
{
	char cert[128], key[128], ep[64];
	struct flash_client_response *r = NULL;
	struct flash_client *c;

	make_cert("-newkey rsa:2048", cert, key);
	/* Generous timeouts: a TLS handshake under valgrind takes seconds. */
	struct op_http_opts ho = { .sz = sizeof(ho), .listen = "127.0.0.1:0", .tls_cert_file = cert,
				   .tls_key_file = key, .timeout_s = 60, .header_timeout_ms = tls_deadline_ms(5000) };
	char err[256] = "";
	ASSERT_OK(op_http_start(prov, &ho, &http, err, sizeof(err)), err);
	cr_assert(op_http_port(http) > 0);
	snprintf(ep, sizeof(ep), "https://127.0.0.1:%u", op_http_port(http));
	c = client(ep, cert);
	ASSERT_OK(flash_client_list(c, &r), "list over TLS");
	cr_assert_eq(flash_client_response_status(r), 200);
	flash_client_response_free(r);
	flash_client_free(c);
	/* The endpoint's path prefixes every request's, over TLS too (this
	 * operator serves none: 404). */
	snprintf(ep, sizeof(ep), "https://127.0.0.1:%u/flash/", op_http_port(http));
	c = client(ep, cert);
	ASSERT_OK(flash_client_list(c, &r), "list over TLS with a path prefix");
	cr_assert_eq(flash_client_response_status(r), 404);
	flash_client_response_free(r);
	flash_client_free(c);
	snprintf(ep, sizeof(ep), "https://127.0.0.1:%u", op_http_port(http));
	/* Without the CA the certificate is not trusted. */
	c = client(ep, NULL);
	ASSERT_ERR(flash_client_list(c, &r), -EPROTO, "untrusted certificate");
	flash_client_free(c);
	/* Plain HTTP to the TLS port is not served. */
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u", op_http_port(http));
	c = client(ep, NULL);
	r = NULL;
	int rc = flash_client_list(c, &r);
	cr_assert(rc < 0 || flash_client_response_status(r) != 200, "plain HTTP answered on the TLS port");
	flash_client_response_free(r);
	flash_client_free(c);
	op_http_stop(http);
	http = NULL;
	/* A key file readable by others is refused. */
	chmod(key, 0644);
	ASSERT_ERR(op_http_start(prov, &ho, &http, err, sizeof(err)), -EPERM, "key mode");
	cr_assert(strstr(err, "0600"), "%s", err);
}

/* A time bound, stretched under valgrind (threads run one at a time, and
 * every instruction 20-50 times slower). */
#ifdef RUNNING_ON_VALGRIND
#define OP_BOUND_MS(ms) ((double)(ms) * (RUNNING_ON_VALGRIND ? 30 : 1))
#else
#define OP_BOUND_MS(ms) ((double)(ms))
#endif

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A raw request on a new connection: the status of the answer (0: none),
 * the answer in @out. */
static int raw_request(const char *req, size_t len, char *out, size_t out_size)
{
	return test_http_exchange(unix_connect(), req, len, out, out_size);
}

/* Issue 13 item 9: two Content-Length headers and a NUL in the path are
 * 400 before any route sees them (they were routed: 404, 200). */
Test(operator_http, malformed_heads_are_400)
{
	static const char dup_cl[] = "POST /provider/v1/services HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
				     "Content-Length: 40\r\n\r\n{}";
	static const char nul[] = "GET /healthz\0x HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char ctl[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\001b\r\n\r\n";
	static const char cl_te[] = "POST /provider/v1/services HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
				    "Transfer-Encoding: chunked\r\n\r\n{}";
	static const char ok[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .threads = 1 };
	char out[4096];

	ASSERT_OK(op_http_start(prov, &ho, &http, NULL, 0), "start");
	cr_assert_eq(raw_request(dup_cl, sizeof(dup_cl) - 1, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "Content-Length headers"), "%s", out);
	cr_assert(strstr(out, "\"code\":\"bad-request\""), "the provider API's error shape: %s", out);
	cr_assert_eq(raw_request(nul, sizeof(nul) - 1, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "NUL"), "%s", out);
	cr_assert_eq(raw_request(ctl, sizeof(ctl) - 1, out, sizeof(out)), 400, "%s", out);
	cr_assert_eq(raw_request(cl_te, sizeof(cl_te) - 1, out, sizeof(out)), 400, "%s", out);
	cr_assert(strstr(out, "Transfer-Encoding"), "%s", out);
	cr_assert_eq(raw_request(ok, sizeof(ok) - 1, out, sizeof(out)), 200, "%s", out);
}

/* Issue 13 items 5 and 9 for the operator: 64 clients trickling their
 * heads one byte per second are never idle, yet are cut at the header
 * deadline (the idle timeout, 2 s here); meanwhile healthz and an
 * authenticated list answer in under 100 ms. */
Test(operator_http, trickling_heads_are_cut_at_the_header_deadline, .timeout = 60)
{
	enum { SLOW = 64 };
	static const char partial[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	static const char hz[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .timeout_s = 2, .threads = 1 };
	struct flash_client_response *r = NULL;
	struct flash_client *c;
	int fds[SLOW], status;
	bool open_[SLOW];
	char out[4096], ep[160];
	double t0, worst_hz = 0, worst_list = 0, ms;
	int closed_at_1s = 0, closed_at_end = 0;

	ASSERT_OK(op_http_start(prov, &ho, &http, NULL, 0), "start");
	snprintf(ep, sizeof(ep), "unix:%s", sock);
	c = client(ep, NULL);
	t0 = mono_ms();
	for (int i = 0; i < SLOW; i++) {
		fds[i] = unix_connect();
		open_[i] = true;
		cr_assert_eq(write(fds[i], partial, 10), 10);
	}
	for (int round = 1; round <= 5; round++) {
		/* One more byte each, a second apart. */
		while (mono_ms() - t0 < round * 1000.0)
			usleep(10000);
		for (int i = 0; i < SLOW; i++) {
			struct pollfd p = { .fd = fds[i], .events = POLLIN };

			if (!open_[i])
				continue;
			if (poll(&p, 1, 0) == 1 && read(fds[i], out, sizeof(out)) <= 0)
				open_[i] = false;
			else
				(void)!send(fds[i], partial + 9 + round, 1, MSG_NOSIGNAL);
		}
		if (round == 1)
			for (int i = 0; i < SLOW; i++)
				closed_at_1s += !open_[i];
		ms = mono_ms();
		status = raw_request(hz, sizeof(hz) - 1, out, sizeof(out));
		ms = mono_ms() - ms;
		cr_assert_eq(status, 200, "healthz with %d trickling clients: %s", SLOW, out);
		worst_hz = ms > worst_hz ? ms : worst_hz;
		ms = mono_ms();
		ASSERT_OK(flash_client_list(c, &r), "list with trickling clients");
		ms = mono_ms() - ms;
		cr_assert_eq(flash_client_response_status(r), 200, "%s", flash_client_response_body(r, NULL));
		flash_client_response_free(r);
		r = NULL;
		worst_list = ms > worst_list ? ms : worst_list;
	}
	for (int i = 0; i < SLOW; i++) {
		struct pollfd p = { .fd = fds[i], .events = POLLIN };

		if (open_[i] && poll(&p, 1, 0) == 1 && read(fds[i], out, sizeof(out)) <= 0)
			open_[i] = false;
		closed_at_end += !open_[i];
		close(fds[i]);
	}
	cr_log_info("%d trickling clients: healthz worst %.1f ms, list worst %.1f ms, %d cut by 5 s", SLOW, worst_hz,
		    worst_list, closed_at_end);
	cr_assert_eq(closed_at_1s, 0, "%d trickling clients were cut before the deadline", closed_at_1s);
	cr_assert_eq(closed_at_end, SLOW, "%d of %d trickling clients still open after 5 s (deadline 2 s)",
		     SLOW - closed_at_end, SLOW);
	cr_assert_lt(worst_hz, OP_BOUND_MS(100), "healthz took %.1f ms with %d trickling clients", worst_hz, SLOW);
	cr_assert_lt(worst_list, OP_BOUND_MS(100), "list took %.1f ms with %d trickling clients", worst_list, SLOW);
	flash_client_free(c);
}

/* The reserve: with every ordinary slot of a listener taken by requests
 * in progress, GET /healthz is still served and others get 503. */
Test(operator_http, reserve_keeps_healthz)
{
	static const char body_partial[] = "POST /provider/v1/services HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{";
	static const char hz[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	static const char metrics[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .timeout_s = 30, .threads = 1,
				   .max_connections = 4, .reserved_connections = 1 };
	int fds[3];
	char out[4096];

	ASSERT_OK(op_http_start(prov, &ho, &http, NULL, 0), "start");
	/* Three requests with complete heads wait for their bodies. */
	for (int i = 0; i < 3; i++) {
		fds[i] = unix_connect();
		cr_assert_eq(write(fds[i], body_partial, sizeof(body_partial) - 1), (ssize_t)(sizeof(body_partial) - 1));
	}
	usleep(300000);
	cr_assert_eq(raw_request(metrics, sizeof(metrics) - 1, out, sizeof(out)), 503, "%s", out);
	cr_assert(strstr(out, "\"code\":\"unavailable\""), "%s", out);
	cr_assert_eq(raw_request(hz, sizeof(hz) - 1, out, sizeof(out)), 200, "%s", out);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}

/* A TLS client of the test: connects to 127.0.0.1:@port and completes
 * the handshake (the certificate is not checked here: the tls test does
 * that through <flash/client.h>). */
static int tls_connect(uint16_t port, gnutls_session_t *ret, gnutls_certificate_credentials_t cred)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	cr_assert(fd >= 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(gnutls_init(ret, GNUTLS_CLIENT), 0);
	cr_assert_eq(gnutls_set_default_priority(*ret), 0);
	cr_assert_eq(gnutls_credentials_set(*ret, GNUTLS_CRD_CERTIFICATE, cred), 0);
	gnutls_transport_set_int(*ret, fd);
	gnutls_handshake_set_timeout(*ret, 30000);
	do
		rc = gnutls_handshake(*ret);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	cr_assert_eq(rc, 0, "handshake: %s", gnutls_strerror(rc));
	return fd;
}

/* What the server says on @s until it closes (at most @size - 1 bytes). */
static size_t tls_read_all(gnutls_session_t s, char *out, size_t size)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < size && (r = gnutls_record_recv(s, out + n, size - 1 - n)) != 0) {
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	out[n] = '\0';
	return n;
}

/* The TLS listener goes through the front door like the plain ones: a
 * malformed head sent over TLS is answered 400 by the door, a head that
 * trickles is cut at the header deadline, and so is a client that
 * connects and never starts the handshake. */
Test(operator_http, tls_heads_go_through_the_front_door, .timeout = 150)
{
	static const char nul[] = "GET /healthz\0x HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char ok[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char cert[128], key[128], out[4096], err[256] = "";
	gnutls_certificate_credentials_t cred;
	gnutls_session_t s;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	double t0, ms;
	int fd;

	make_cert("-newkey ec -pkeyopt ec_paramgen_curve:P-256", cert, key);
	/* A head deadline of 1.5 s (12 s under valgrind). */
	const double deadline = tls_deadline_ms(1500);
	struct op_http_opts ho = { .sz = sizeof(ho), .listen = "127.0.0.1:0", .tls_cert_file = cert,
				   .tls_key_file = key, .timeout_s = 60, .header_timeout_ms = (unsigned int)deadline };
	ASSERT_OK(op_http_start(prov, &ho, &http, err, sizeof(err)), err);
	cr_assert_eq(gnutls_certificate_allocate_credentials(&cred), 0);

	fd = tls_connect(op_http_port(http), &s, cred);
	cr_assert_eq(gnutls_record_send(s, ok, sizeof(ok) - 1), (ssize_t)(sizeof(ok) - 1));
	tls_read_all(s, out, sizeof(out));
	cr_assert(strncmp(out, "HTTP/1.1 200", 12) == 0, "healthz over TLS: %s", out);
	gnutls_deinit(s);
	close(fd);

	fd = tls_connect(op_http_port(http), &s, cred);
	cr_assert_eq(gnutls_record_send(s, nul, sizeof(nul) - 1), (ssize_t)(sizeof(nul) - 1));
	tls_read_all(s, out, sizeof(out));
	cr_assert(strncmp(out, "HTTP/1.1 400", 12) == 0, "a NUL in the head over TLS: %s", out);
	cr_assert(strstr(out, "NUL") && strstr(out, "\"code\":\"bad-request\""), "the door's answer: %s", out);
	gnutls_deinit(s);
	close(fd);

	/* Part of a head, one byte at a time, never finished. */
	fd = tls_connect(op_http_port(http), &s, cred);
	t0 = mono_ms();
	cr_assert_eq(gnutls_record_send(s, ok, 10), 10);
	for (int i = 10; i < 30 && mono_ms() - t0 < 2.5 * deadline; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, (int)(deadline / 5)) == 1)
			break;
		(void)gnutls_record_send(s, ok + i, 1);
	}
	tls_read_all(s, out, sizeof(out));
	ms = mono_ms() - t0;
	cr_assert(strstr(out, "408") || out[0] == '\0', "cut with 408 or closed: %s", out);
	cr_assert(ms >= 0.66 * deadline && ms < 2.5 * deadline, "a trickling TLS head cut at the %.0f ms deadline, after %.0f ms",
		  deadline, ms);
	gnutls_deinit(s);
	close(fd);

	/* No handshake at all. */
	a.sin_port = htons(op_http_port(http));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	t0 = mono_ms();
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };

		cr_assert_eq(poll(&p, 1, (int)(3 * deadline)), 1, "closed by the server");
		cr_assert(read(fd, out, sizeof(out)) <= 0, "nothing but the close");
	}
	ms = mono_ms() - t0;
	cr_assert(ms >= 0.66 * deadline && ms < 2.5 * deadline, "a silent TLS client closed at the %.0f ms deadline, after %.0f ms",
		  deadline, ms);
	close(fd);
	gnutls_certificate_free_credentials(cred);
}

/* issue 21 item 4: the provider API under 16 concurrent clients for 30 s
 * (LOAD_SECONDS; 3 s under valgrind) over the Unix socket: lists, gets
 * and one create in eight (each a SQLite transaction on disk), while 32
 * slow clients trickle heads byte by byte.  0 errors; the median, p99 and
 * the process's RSS (server and clients) are printed, the RSS bounded. */
struct prov_load {
	struct flash_client *c[16];
	unsigned int seq[16];
	char ids[16][64];
};

static int provider_load_request(void *ctx, unsigned int thread, char *msg)
{
	struct prov_load *L = ctx;
	struct flash_client_response *r = NULL;
	unsigned int k = L->seq[thread]++;
	int err, st;

	if (k % 8 == 0) {
		static const char spec[] = "{\"region\":\"heteronet-global\",\"image\":\"test.invalid/app:1\",\"cpu_millis\":1,"
					   "\"memory_mib\":4,\"replicas\":0}";
		char name[32];

		snprintf(name, sizeof(name), "load-%u-%u", thread, k);
		err = flash_client_create(L->c[thread], name, spec, sizeof(spec) - 1, 1, &r);
	} else if (k % 2 == 0) {
		err = flash_client_list(L->c[thread], &r);
	} else {
		err = flash_client_get(L->c[thread], L->ids[thread][0] ? L->ids[thread] : "svc-none", &r);
	}
	if (err < 0) {
		snprintf(msg, 256, "client: %s", flash_strerror(err));
		return 0;
	}
	st = flash_client_response_status(r);
	if (k % 8 == 0 && st / 100 == 2) {
		const char *b = flash_client_response_body(r, NULL), *id = b ? strstr(b, "\"id\":\"") : NULL;

		if (id)
			snprintf(L->ids[thread], sizeof(L->ids[thread]), "%.*s", (int)strcspn(id + 6, "\""), id + 6);
	}
	if (k % 8 != 0 && k % 2 != 0 && !L->ids[thread][0] && st == 404)
		st = 200; /* a get before the first create: the expected answer */
	if (st / 100 != 2)
		snprintf(msg, 256, "%.200s", flash_client_response_body(r, NULL));
	flash_client_response_free(r);
	return st / 100 == 2 ? 200 : st;
}

Test(operator_http, load_provider_api_with_trickling_clients, .timeout = 180)
{
	enum { CLIENTS = 16, SLOW = 32 };
	static const char partial[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	struct op_http_opts ho = { .sz = sizeof(ho), .unix_path = sock, .timeout_s = 2 };
	double seconds = load_seconds(30);
	static struct prov_load L;
	struct load_result r;
	char ep[160];
	int slow[SLOW];

#ifdef RUNNING_ON_VALGRIND
	if (RUNNING_ON_VALGRIND)
		seconds = 3;
#endif
	signal(SIGPIPE, SIG_IGN);
	ASSERT_OK(op_http_start(prov, &ho, &http, NULL, 0), "start");
	snprintf(ep, sizeof(ep), "unix:%s", sock);
	for (int i = 0; i < CLIENTS; i++)
		L.c[i] = client(ep, NULL);
	/* Slow clients: a few bytes of a head, then nothing. */
	for (int i = 0; i < SLOW; i++) {
		slow[i] = unix_connect();
		cr_assert_eq(write(slow[i], partial, 20), 20);
	}
	load_run(provider_load_request, &L, CLIENTS, seconds, getpid(), &r);
	load_print("provider API", CLIENTS, &r);
	if (r.errors)
		cr_log_warn("first error: %s", r.first_error);
	for (int i = 0; i < SLOW; i++) {
		char buf[256];
		struct pollfd p = { .fd = slow[i], .events = POLLIN };

		/* Closed by the door (a reset: it only peeked at the bytes) or
		 * answered 408: readable either way, at once. */
		cr_assert(poll(&p, 1, 0) == 1, "slow client %d still open after %.0f s (header deadline 2 s)", i,
			  r.seconds);
		cr_assert(read(slow[i], buf, sizeof(buf)) <= 0 || !strncmp(buf, "HTTP/1.1 408", 12),
			  "slow client %d answered otherwise", i);
		close(slow[i]);
	}
	for (int i = 0; i < CLIENTS; i++)
		flash_client_free(L.c[i]);
	cr_assert_eq(r.errors, 0ul, "%lu of %lu requests failed under load; first: %s", r.errors, r.ok + r.errors,
		     r.first_error);
	cr_assert_gt(r.ok, (unsigned long)(seconds * 10), "only %lu requests answered in %.0f s", r.ok, r.seconds);
	cr_assert_lt(r.rss_max_kib, load_rss_bound_kib(512 * 1024), "RSS up to %ld KiB (bound %ld)", r.rss_max_kib,
		     load_rss_bound_kib(512 * 1024));
}
