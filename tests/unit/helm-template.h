/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A renderer for the small subset of Helm's Go templates the chart
 * deploy/helm/heterocloud-flash uses, so that a test can run what
 * `helm template` does without helm (Debian 12 does not package it):
 *
 *   {{ .Values.a.b }}            a string as is, a boolean as true/false,
 *                                an integer of at most 6 digits
 *   {{ .Values.a.b | quote }}    Helm's quote (Go's %q): "..." with \" \\
 *                                \a \b \f \n \r \t \v \xNN escapes
 *   {{ .Values.a.b | toJson }}   Helm's toJson (Go's json.Marshal) of a
 *                                string, boolean or such an integer
 *   {{ if .Values.a.b }} ... {{ end }}   Go's truth (false, 0, "", empty
 *                                list or map, null are false); nested
 *   {{- and -}}                  Go's trimming of the whitespace before
 *                                or after the action (space, tab, CR, LF)
 *
 * Anything else (another function or variable, .Release, .Chart, range,
 * with, else, define, include, comments, string literals, a value the
 * values do not hold, a list or map printed, a byte outside printable
 * ASCII in quote or toJson, an integer Go would print with an exponent)
 * is refused with its line, so that a chart using it fails the test
 * instead of rendering differently from real Helm.
 */
#ifndef FLASH_TESTS_HELM_TEMPLATE_H
#define FLASH_TESTS_HELM_TEMPLATE_H

#include <stddef.h>

#include "json.h"

/* Renders the template @text (NUL-terminated; @name for messages) with
 * the values of @layers: a path is looked up in layers[0] (the values a
 * user sets) first, then in the next (the chart's values.yaml).  Returns
 * 0 and *@ret_text (free()), or -EINVAL with a message naming @name and
 * the line in @err, -ENOMEM. */
int helm_template_render(const char *name, const char *text, const struct json_value *const *layers,
			 size_t n_layers, char **ret_text, char *err, size_t err_size);

#endif
