/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the operator configuration
 * (flash_operator_config_parse, flash-operator.conf(5); flash-operator
 * --config and flashctl render --config read it, and flash-operator has
 * no configuration of its own beyond its options).  Properties:
 *  - a refused file leaves no configuration, is -FLASH_E_RENDER_CONFIG
 *    with a diag entry naming the key (or -ENOMEM), and the diag renders
 *    as JSON;
 *  - an accepted one has a public port range first <= last, and is
 *    usable: public ports for a fixed two-port spec are assigned inside
 *    the range (or the range is too small), the service renders with
 *    them (instance "svc-7f3a", which the configuration may give admin
 *    volumes), and the rendered objects and every deploy manifest print.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <flash/render.h>
#include <flash/spec.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char spec_json[] =
	"{\"region\":\"heteronet-global\",\"image\":\"registry.example/app:1\",\"replicas\":2,\"cpu_millis\":250,"
	"\"memory_mib\":128,\"ephemeral_storage_gib\":10,\"ports\":[{\"name\":\"http\",\"protocol\":\"tcp\","
	"\"container_port\":8080},{\"name\":\"game\",\"protocol\":\"udp\",\"container_port\":7777}],"
	"\"exposure\":{\"type\":\"public\",\"traffic_mode\":\"direct\",\"allowed_source_cidrs\":[\"203.0.113.0/24\"],"
	"\"denied_source_cidrs\":[]},\"egress\":{\"mode\":\"restricted\",\"allow_same_organization\":true,"
	"\"allowed_destination_cidrs\":[\"198.51.100.10/32\"],\"denied_destination_cidrs\":[]},\"env\":{},"
	"\"command\":[],\"args\":[],\"metadata\":{}}";

static struct flash_spec *spec;
static struct flash_diag *diag;

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (flash_spec_parse(spec_json, strlen(spec_json), NULL, &spec, NULL) < 0 || flash_diag_new(&diag) < 0)
		abort();
	return 0;
}

static void use(const struct flash_operator_config *config)
{
	FLASH_OPTS(flash_render_opts, o, .name = "web", .namespace_ = "flash-org-1", .organization_id = "org-1",
		   .project_id = "p-1", .service_id = "svc-7f3a");
	struct flash_public_port *ports = NULL;
	struct flash_render *render = NULL;
	uint16_t first = 0, last = 0;
	size_t n = 0, len = 0;
	char *text = NULL;
	int r;

	flash_operator_config_public_port_range(config, &first, &last);
	check(first >= 1 && first <= last);
	r = flash_public_ports_assign(config, spec, NULL, 0, NULL, 0, &ports, &n);
	check(r == 0 || r == -FLASH_E_RENDER_PORTS_EXHAUSTED);
	if (r == -FLASH_E_RENDER_PORTS_EXHAUSTED) {
		check(last - first + 1 < 2);
		return;
	}
	check(n == 2 && ports[0].port != ports[1].port);
	for (size_t i = 0; i < n; i++)
		check(ports[i].port >= first && ports[i].port <= last);
	o.public_ports = ports;
	o.n_public_ports = n;
	flash_diag_reset(diag);
	r = flash_render(spec, config, &o, &render, diag);
	/* A configuration that parsed renders a valid spec, unless its
	 * admin volumes give the instance an unusable name. */
	check(r == 0 || r == -FLASH_E_RENDER_NAME);
	if (r == 0) {
		check(flash_render_count(render) >= 3);
		check(flash_render_print(render, FLASH_RENDER_JSON, &text, &len) == 0 && len > 0);
		free(text);
		check(flash_render_print(render, FLASH_RENDER_YAML, &text, &len) == 0 && len > 0);
		free(text);
	}
	flash_render_free(render);
	free(ports);
	for (int m = 0; m < FLASH_MANIFEST_COUNT_; m++) {
		check(flash_manifest_render((enum flash_manifest)m, config, &text, &len) == 0 && len > 0);
		free(text);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flash_operator_config *config = (struct flash_operator_config *)&config;
	char *json = NULL;
	int r;

	flash_diag_reset(diag);
	r = flash_operator_config_parse((const char *)data, size, &config, diag);
	if (r < 0) {
		check(config == (struct flash_operator_config *)&config);
		check(r == -FLASH_E_RENDER_CONFIG || r == -ENOMEM);
		check(r == -ENOMEM || flash_diag_errors(diag) > 0);
		check(flash_diag_to_json(diag, "fuzz", &json, NULL) == 0);
		free(json);
		return 0;
	}
	use(config);
	flash_operator_config_free(config);
	return 0;
}
