/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The naming rules, each written once (private; linked into both
 * libraries).  Every module that accepts one of these names from outside
 * calls the function here, so a name is accepted or refused the same way
 * at every entry point (CNI environment, agent API, IPAM, netlink, policy
 * import, identities, rendering); tests/unit/test-names.c runs one corpus
 * through all of them.
 *
 *   rule                 limit   characters
 *   container id         1..255  [A-Za-z0-9][A-Za-z0-9_.-]*       (CNI spec)
 *   interface name       1..15   bytes 0x21..0x7e but '/' ':'; not "." ".."
 *   DNS-1123 label       1..63   [a-z0-9]([-a-z0-9]*[a-z0-9])?
 *   DNS-1035 label       1..63   [a-z]([-a-z0-9]*[a-z0-9])?
 *   DNS-1123 subdomain   1..253  DNS-1123 labels joined by '.'
 *   label key            [DNS-1123 subdomain '/'] name, name 1..63 of
 *                                ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
 *   label value          0..63   empty, or as the name part of a key
 *   port name            1..15   [a-z0-9-], a letter, no "--", no '-' at an end
 *   opaque id            1..max  [A-Za-z0-9._:-]  (key ids, meter ids: the
 *                                caller's module sets the limit)
 *   Flash service id     35      "fs-" and 32 lower-case hex digits (the
 *                                operator's ids; flashctl tells an id from
 *                                a name by it)
 *
 * The Kubernetes rules are those of apimachinery (k8s.io/apimachinery/pkg/
 * util/validation): lengths are in bytes, nothing outside ASCII passes.
 * The interface name rule is the kernel's dev_valid_name() narrowed to
 * printable ASCII (the kernel also takes control and non-ASCII bytes,
 * which no tool prints back faithfully).
 */
#ifndef FLASH_COMMON_NAMES_H
#define FLASH_COMMON_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define NAMES_CONTAINER_ID_MAX 255
#define NAMES_IFNAME_MAX 15 /* IFNAMSIZ - 1 */
#define NAMES_DNS_LABEL_MAX 63
#define NAMES_DNS_SUBDOMAIN_MAX 253
#define NAMES_LABEL_NAME_MAX 63
#define NAMES_LABEL_VALUE_MAX 63
#define NAMES_PORT_NAME_MAX 15
#define NAMES_SERVICE_ID_PREFIX "fs-"
#define NAMES_SERVICE_ID_LEN 35 /* the prefix and 32 lower-case hex digits */

bool names_container_id_valid(const char *s);
bool names_ifname_valid(const char *s);
bool names_dns_label_valid(const char *s);
bool names_dns1035_label_valid(const char *s);
bool names_dns_subdomain_valid(const char *s);
bool names_label_key_valid(const char *s);
bool names_label_value_valid(const char *s);
bool names_port_name_valid(const char *s);
bool names_service_id_valid(const char *s);
/* @len bytes at @s (NUL not required); false when @len is 0 or > @max. */
bool names_opaque_id_valid(const char *s, size_t len, size_t max);

/* The same Kubernetes rules with apimachinery's messages, for callers that
 * must answer as the API server does: each reports every rule @s breaks,
 * in apimachinery's words and order, through @fn (NULL: count only) and
 * returns how many it found (0: valid).  @prefix (may be NULL) starts each
 * subdomain message, as IsQualifiedName's "prefix part ". */
typedef void (*names_msg_fn)(void *userdata, const char *msg);
size_t names_dns_label_check(const char *s, names_msg_fn fn, void *userdata);
size_t names_dns1035_label_check(const char *s, names_msg_fn fn, void *userdata);
size_t names_dns_subdomain_check(const char *s, const char *prefix, names_msg_fn fn, void *userdata);
size_t names_label_key_check(const char *s, names_msg_fn fn, void *userdata);
size_t names_label_value_check(const char *s, names_msg_fn fn, void *userdata);
size_t names_port_name_check(const char *s, names_msg_fn fn, void *userdata);

#endif
