/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/render: time to load the recorded Kubernetes OpenAPI documents,
 * to render and print a spec (YAML and JSON), and to validate every
 * rendered object against the schemas.  Prints figures; never fails on
 * time.
 *   bench/render [TOP_SRCDIR] [ITERATIONS]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <flash/render.h>
#include <flash/spec.h>

#include "util.h"
#include "bench.h"

static char *slurp(const char *top, const char *rel, size_t *len)
{
	char path[1024];
	char *data = NULL;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	if (util_read_file(path, 64u << 20, &data, len) < 0) {
		fprintf(stderr, "bench/render: cannot read %s\n", path);
		exit(2);
	}
	return data;
}

int main(int argc, char **argv)
{
	static const char *const docs[] = { "apps_v1", "core_v1", "networking_v1", "apiextensions_v1" };
	const char *top = argc > 1 ? argv[1] : ".";
	long iters = argc > 2 ? strtol(argv[2], NULL, 10) : 2000;
	struct flash_schema_set *set = NULL;
	struct flash_operator_config *config = NULL;
	struct flash_spec *spec = NULL;
	struct flash_public_port *ports = NULL;
	size_t n_ports = 0, len, total = 0;
	char *text;
	double t0, t_load, t_render, t_validate;
	struct flash_render *rd = NULL;

	if (iters < 1)
		iters = 1;
	t0 = bench_now_s();
	if (flash_schema_set_new(&set) < 0)
		return 2;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "tests/data/k8s/openapi/%s.json", docs[i]);
		text = slurp(top, rel, &len);
		total += len;
		if (flash_schema_set_add_openapi(set, text, len, NULL) < 0)
			return 2;
		free(text);
	}
	t_load = bench_now_s() - t0;

	text = slurp(top, "examples/udp-echo.json", &len);
	if (flash_spec_parse(text, len, NULL, &spec, NULL) < 0 || flash_operator_config_default(&config) < 0 ||
	    flash_public_ports_assign(config, spec, NULL, 0, NULL, 0, &ports, &n_ports) < 0)
		return 2;
	free(text);
	FLASH_OPTS(flash_render_opts, opts, .name = "fs-udp-echo", .namespace_ = "flash-demo",
		   .uid = "56ae4acd-23a1-48b4-aecf-39c3886155de", .organization_id = "org-1234",
		   .public_ports = ports, .n_public_ports = n_ports);

	t0 = bench_now_s();
	for (long i = 0; i < iters; i++) {
		char *yaml = NULL, *json = NULL;

		if (flash_render(spec, config, &opts, &rd, NULL) < 0 ||
		    flash_render_print(rd, FLASH_RENDER_YAML, &yaml, NULL) < 0 ||
		    flash_render_print(rd, FLASH_RENDER_JSON, &json, NULL) < 0)
			return 2;
		free(yaml);
		free(json);
		flash_render_free(rd);
	}
	t_render = bench_now_s() - t0;

	if (flash_render(spec, config, &opts, &rd, NULL) < 0)
		return 2;
	t0 = bench_now_s();
	for (long i = 0; i < iters; i++) {
		for (size_t k = 0; k < flash_render_count(rd); k++) {
			char *obj = NULL;

			if (flash_render_object_json(rd, k, &obj, &len) < 0 ||
			    flash_schema_validate_object(set, obj, len, NULL) < 0)
				return 2;
			free(obj);
		}
	}
	t_validate = bench_now_s() - t0;

	printf("load 4 OpenAPI documents (%zu bytes): %.1f ms\n", total, t_load * 1e3);
	printf("render + print YAML and JSON (seed spec, %zu objects): %.1f us per spec (%ld iterations)\n",
	       flash_render_count(rd), t_render / (double)iters * 1e6, iters);
	printf("validate the %zu objects against the schemas: %.1f us per spec\n", flash_render_count(rd),
	       t_validate / (double)iters * 1e6);
	flash_render_free(rd);
	free(ports);
	flash_operator_config_free(config);
	flash_spec_free(spec);
	flash_schema_set_free(set);
	return 0;
}
