/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private helpers of libflowsdn (never installed). */
#ifndef FLOWSDN_INTERNAL_H
#define FLOWSDN_INTERNAL_H

#include <flowsdn/common.h>

#include "diag.h"
#include "util.h"

struct flowsdn_diag;
/* The engine behind a public diag (NULL stays NULL). */
struct diag *flowsdn__diag(struct flowsdn_diag *diag);
/* Runs @fn(@arg) in a helper thread that entered the network namespace
 * at @path (checked to be one, opened without blocking); the caller's
 * thread stays where it is.  fn's result, or -FLOWSDN_E_NL_NETNS
 * (@err says why; may be NULL).  libflowsdn/netlink.c. */
int flowsdn__netns_run_at(const char *path, struct diag *err, int (*fn)(void *), void *arg);

/* Logging through the callback set with flowsdn_set_log(). */
void flowsdn__log(enum flowsdn_log_level level, const char *fmt, ...) _printf_(2, 3);
#define pr_err(...) flowsdn__log(FLOWSDN_LOG_ERR, __VA_ARGS__)
#define pr_warn(...) flowsdn__log(FLOWSDN_LOG_WARNING, __VA_ARGS__)
#define pr_info(...) flowsdn__log(FLOWSDN_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) flowsdn__log(FLOWSDN_LOG_DEBUG, __VA_ARGS__)

#endif
