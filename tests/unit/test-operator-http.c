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
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>

#include "helpers.h"
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

Test(operator_http, tls)
{
	char cmd[1024], cert[128], key[128], ep[64];
	struct flash_client_response *r = NULL;
	struct flash_client *c;

	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey rsa:2048 -nodes -keyout '%s' -out '%s' -days 1 -subj /CN=127.0.0.1 "
		 "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 && chmod 600 '%s'",
		 key, cert, key);
	cr_assert(system(cmd) == 0, "openssl (scripts/deps.sh installs it)");
	/* Generous timeouts: a TLS handshake under valgrind takes seconds. */
	struct op_http_opts ho = { .sz = sizeof(ho), .listen = "127.0.0.1:0", .tls_cert_file = cert,
				   .tls_key_file = key, .timeout_s = 60 };
	char err[256] = "";
	ASSERT_OK(op_http_start(prov, &ho, &http, err, sizeof(err)), err);
	cr_assert(op_http_port(http) > 0);
	snprintf(ep, sizeof(ep), "https://127.0.0.1:%u", op_http_port(http));
	c = client(ep, cert);
	ASSERT_OK(flash_client_list(c, &r), "list over TLS");
	cr_assert_eq(flash_client_response_status(r), 200);
	flash_client_response_free(r);
	flash_client_free(c);
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
