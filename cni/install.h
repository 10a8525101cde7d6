/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `flowsdn-cni install`: the plugin and its network configuration list on
 * a node.  Private to cni/. */
#ifndef FLOWSDN_CNI_INSTALL_H
#define FLOWSDN_CNI_INSTALL_H

struct cni_install_opts {
	const char *plugin_path; /* required: the flowsdn-cni executable to copy */
	const char *bin_dir;     /* NULL: /opt/cni/bin */
	const char *conf_dir;    /* NULL: /etc/cni/net.d */
	const char *socket;      /* "agentSocket" written into the conflist (NULL: none, the default) */
	const char *queue_dir;   /* "queueDir" written into the conflist (NULL: none) */
};

/*
 * Copies @plugin_path to <bin_dir>/flowsdn-cni, and to <bin_dir>/loopback
 * when there is no loopback plugin yet (each copy written to a temporary
 * file, fsync'd and renamed, mode 0755), then atomically writes
 * <conf_dir>/00-flowsdn.conflist (cniVersion 1.0.0, cniVersions 1.0.0 and
 * 1.1.0, one plugin of type "flowsdn-cni").  Directories are created.
 * Errors: -EINVAL, -errno of the file system (nothing half-written).
 */
int cni_install(const struct cni_install_opts *opts);

#endif
