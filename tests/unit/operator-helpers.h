/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the flash-operator tests and bench/provider (no Criterion
 * here): token minting, specs, and an image seam for tests.
 *
 * The image seam resolves references of the form "test.invalid/NAME:BYTES"
 * to an image charging BYTES bytes, pinned to a digest derived from the
 * reference (refused by flash_image_check_disk() when BYTES fill the
 * limit); "test.invalid/unreachable:..." fails as a registry that
 * refuses connections (transient) and "test.invalid/missing:..." as an
 * unknown manifest.  It keeps these tests off the network; the real
 * resolver is used by flash-operator itself, the e2e test (a local OCI
 * layout) and tests/integration/test-operator-registry.
 */
#ifndef FLASH_TESTS_OPERATOR_HELPERS_H
#define FLASH_TESTS_OPERATOR_HELPERS_H

#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <flash/auth.h>
#include <flash/diag.h>
#include <flash/image.h>

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "admission.h"
#include "daemon.h"

#define TEST_ISSUER "mp.test"
#define TEST_AUDIENCE "provider.test"

static inline int test_image_admit(void *ctx, const char *ref, uint64_t limit, struct op_image_info *ret, char *err,
				   size_t err_size)
{
	unsigned char h[32];
	const char *colon = strrchr(ref, ':');
	char *end;
	unsigned long long bytes;

	(void)ctx;
	if (strncmp(ref, "test.invalid/", 13) != 0 || !colon) {
		snprintf(err, err_size, "%s: not a test image", ref);
		return -ENOENT;
	}
	if (strncmp(ref + 13, "unreachable:", 12) == 0) {
		snprintf(err, err_size, "test.invalid: connection refused");
		return -FLASH_E_IMAGE_TRANSPORT;
	}
	if (strncmp(ref + 13, "missing:", 8) == 0) {
		snprintf(err, err_size, "%s: manifest unknown", ref);
		return -FLASH_E_IMAGE_NOT_FOUND;
	}
	errno = 0;
	bytes = strtoull(colon + 1, &end, 10);
	if (errno || *end) {
		snprintf(err, err_size, "%s: tag is not a size", ref);
		return -ENOENT;
	}
	/* The one disk rule: flash_image_check_disk(). */
	struct flash_diag *diag = NULL;
	int r = flash_diag_new(&diag);

	if (r == 0)
		r = flash_image_check_disk(bytes, limit, diag);
	if (r < 0) {
		const struct flash_diag_entry *e = flash_diag_get(diag, 0);

		snprintf(err, err_size, "%s", e && e->message ? e->message : flash_strerror(r));
		flash_diag_free(diag);
		return r;
	}
	flash_diag_free(diag);
	crypto_hash_sha256(h, (const unsigned char *)ref, strlen(ref));
	memcpy(ret->digest, "sha256:", 7);
	sodium_bin2hex(ret->digest + 7, sizeof(ret->digest) - 7, h, sizeof(h));
	snprintf(ret->pinned, sizeof(ret->pinned), "%.*s@%s", (int)(colon - ref), ref, ret->digest);
	ret->charged_bytes = bytes;
	return 0;
}

static const struct op_image_ops test_image_ops = { .admit = test_image_admit };

/* A token for (@org, @project or NULL) and @action, generation @gen when
 * @gen is not UINT64_MAX, issued at @now. */
static inline char *test_mint_at(const struct flash_auth_signer *s, const char *org, const char *project,
				 enum flash_auth_action action, uint64_t gen, int64_t now)
{
	char claims[1024], genpart[48] = "", projpart[300] = "";
	char *tok = NULL;

	if (gen != UINT64_MAX)
		snprintf(genpart, sizeof(genpart), ",\"gen\":%" PRIu64, gen);
	if (project)
		snprintf(projpart, sizeof(projpart), ",\"project\":\"%s\"", project);
	snprintf(claims, sizeof(claims),
		 "{\"iss\":\"%s\",\"aud\":\"%s\",\"action\":\"%s\",\"org\":\"%s\"%s,\"iat\":%" PRId64 ",\"exp\":%" PRId64 "%s}",
		 TEST_ISSUER, TEST_AUDIENCE, flash_auth_action_name(action), org, projpart, now, now + 60, genpart);
	if (flash_auth_signer_sign(s, claims, strlen(claims), &tok) < 0)
		return NULL;
	return tok;
}

static inline char *test_mint(const struct flash_auth_signer *s, const char *org, const char *project,
			      enum flash_auth_action action, uint64_t gen)
{
	return test_mint_at(s, org, project, action, gen, (int64_t)time(NULL));
}

/* A valid spec: @image, @n_ports public tcp ports named p0.., the
 * replicas and ephemeral storage given. */
static inline char *test_spec(const char *image, unsigned int n_ports, unsigned int replicas, unsigned int disk_gib)
{
	char ports[2048] = "", *out = NULL;
	size_t len = 0;

	for (unsigned int i = 0; i < n_ports && len + 96 < sizeof(ports); i++)
		len += (size_t)snprintf(ports + len, sizeof(ports) - len,
					"%s{\"name\":\"p%u\",\"protocol\":\"tcp\",\"container_port\":%u}", i ? "," : "", i,
					8000 + i);
	if (asprintf(&out,
		     "{\"region\":\"heteronet-global\",\"image\":\"%s\",\"replicas\":%u,\"cpu_millis\":250,"
		     "\"memory_mib\":128,\"ephemeral_storage_gib\":%u,\"ports\":[%s],"
		     "\"exposure\":{\"type\":\"public\",\"traffic_mode\":\"forwarded\",\"allowed_source_cidrs\":[],"
		     "\"denied_source_cidrs\":[]},\"egress\":{\"mode\":\"disabled\",\"allow_same_organization\":false,"
		     "\"allowed_destination_cidrs\":[],\"denied_destination_cidrs\":[]},\"env\":{},\"command\":[],"
		     "\"args\":[],\"metadata\":{}}",
		     image, replicas, disk_gib, ports) < 0)
		return NULL;
	return out;
}

/* Forks an operator child running op_daemon_start(@o) until SIGTERM; it
 * dies with its parent.  When @port_fd >= 0 the child writes its TCP port
 * (uint16_t) there once it listens.  Returns the child's pid (or -1). */
static inline pid_t test_operator_fork(const struct op_daemon_opts *o, int port_fd)
{
	struct op_daemon *d = NULL;
	char err[512] = "";
	sigset_t set;
	uint16_t port;
	int sig;
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(4);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (op_daemon_start(o, &d, err, sizeof(err)) < 0) {
		fprintf(stderr, "operator: %s\n", err);
		_exit(3);
	}
	port = op_daemon_port(d);
	if (port_fd >= 0 && write(port_fd, &port, sizeof(port)) != sizeof(port))
		_exit(3);
	sigwait(&set, &sig);
	op_daemon_stop(d);
	_exit(0);
}

#endif
