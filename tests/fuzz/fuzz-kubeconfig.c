/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the kubeconfig reader (common/kubeconfig.c,
 * libyaml's document loader).  Relative file names resolve under a
 * directory that does not exist.  Properties:
 *  - a refused file leaves the output untouched and says why (a diag
 *    entry), unless memory ran out;
 *  - an accepted one has a server URL of the allowed schemes, a client
 *    certificate exactly when it has a key, never token and tokenFile
 *    together, never a CA with insecure-skip-tls-verify, PEM lengths
 *    that are the strings' own.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "k8s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct k8s_config *cfg = (struct k8s_config *)&cfg;
	struct diag *diag = NULL;
	int r;

	check(diag_new(&diag) == 0);
	r = k8s_config_parse_kubeconfig((const char *)data, size, "/nonexistent/fuzz-kubeconfig", NULL, &cfg, diag);
	if (r < 0) {
		check(cfg == (struct k8s_config *)&cfg);
		check(r == -ENOMEM || diag_errors(diag) > 0);
		diag_free(diag);
		return 0;
	}
	check(cfg->server && (!strncmp(cfg->server, "https://", 8) || !strncmp(cfg->server, "http://", 7)));
	check(!cfg->client_cert_pem == !cfg->client_key_pem);
	check(!(cfg->token && cfg->token_file));
	check(!(cfg->ca_pem && cfg->insecure_skip_tls_verify));
	check(!cfg->ca_pem || memmem(cfg->ca_pem, cfg->ca_pem_len, "-----BEGIN ", 11));
	check(cfg->context && cfg->user);
	k8s_config_free(cfg);
	diag_free(diag);
	return 0;
}
