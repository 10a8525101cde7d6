/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Helm chart deploy/helm/heterocloud-flash, generated from the same
 * rendering as deploy/kubernetes/ (flash_manifest_render() with the
 * default configuration): each template is a rendered manifest with
 * `{{ .Values.x }}` where a value belongs and `{{- if .Values.y }}`
 * around optional objects and lines, in the subset of Go templates that
 * tests/unit/helm-template.h renders.  values.yaml holds the defaults the
 * manifests were rendered with, so `helm template` with default values
 * gives the objects of deploy/kubernetes/ (tests/unit/test-helm-chart).
 */
#ifndef FLASH_TOOLS_HELM_CHART_H
#define FLASH_TOOLS_HELM_CHART_H

#include <stddef.h>

struct helm_chart_file {
	const char *path; /* relative to the chart directory ("templates/operator.yaml") */
	char *text;
	size_t len;
};

/* Every generated file of the chart (its README.md is written by hand).
 * Returns 0 and *@ret_files (helm_chart_files_free()) of *@ret_n entries,
 * -ENOMEM, or -EPROTO with a message in @err when the rendered manifests
 * no longer hold a line the chart templates (the generator must follow
 * the renderer), or libflash's error. */
int helm_chart_generate(struct helm_chart_file **ret_files, size_t *ret_n, char *err, size_t err_size);

void helm_chart_files_free(struct helm_chart_file *files, size_t n);

#endif
