/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kubernetes name and label rules (as apimachinery validates them), so
 * rendering refuses what the API server would refuse. */
#include "config.h"

#include "internal.h"
#include "render-internal.h"

static bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static bool is_alnum(char c) { return is_lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

bool k8s_dns_label(const char *s, size_t max)
{
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n > max || n > 63 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool k8s_dns1035_label(const char *s, size_t max)
{
	return k8s_dns_label(s, max) && s[0] >= 'a' && s[0] <= 'z';
}

bool k8s_dns_subdomain(const char *s)
{
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n > 253 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!is_lower_alnum(s[i]) && s[i] != '-' && s[i] != '.')
			return false;
		if (s[i] == '.' && (!is_lower_alnum(s[i - 1]) || !is_lower_alnum(s[i + 1])))
			return false;
	}
	return true;
}

static bool name_part(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

bool k8s_label_value(const char *s)
{
	return s && (s[0] == '\0' || name_part(s, strlen(s)));
}

bool k8s_qualified_name(const char *s)
{
	const char *slash;

	if (!s)
		return false;
	slash = strchr(s, '/');
	if (!slash)
		return name_part(s, strlen(s));
	{
		char prefix[254];
		size_t plen = (size_t)(slash - s);

		if (plen == 0 || plen >= sizeof(prefix))
			return false;
		memcpy(prefix, s, plen);
		prefix[plen] = '\0';
		return k8s_dns_subdomain(prefix) && name_part(slash + 1, strlen(slash + 1));
	}
}

void kdoc_append_prefix(struct kdoc *arr, const struct flowsdn_prefix *p)
{
	char buf[FLOWSDN_PREFIX_STRLEN];

	if (flowsdn_prefix_format(p, buf, sizeof(buf)) < 0) {
		kdoc_append(arr, NULL);
		return;
	}
	kdoc_append_str(arr, buf);
}
