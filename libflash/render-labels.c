/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Labels more than one rendering file writes (a leaf: it calls no other
 * render file, so render.c and render-manifests.c both may).
 */
#include "config.h"

#include "internal.h"
#include "render-internal.h"

void pod_security_labels(struct kdoc *labels, const char *level)
{
	kdoc_set_str(labels, "pod-security.kubernetes.io/enforce", level);
	kdoc_set_str(labels, "pod-security.kubernetes.io/audit", level);
	kdoc_set_str(labels, "pod-security.kubernetes.io/warn", level);
}
