/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The naming rules, each written once (see names.h for the table). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "names.h"

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* ------------------------------------------------------------ CNI and the kernel */

bool names_container_id_valid(const char *s)
{
	size_t n;

	if (!s)
		return false;
	n = strnlen(s, NAMES_CONTAINER_ID_MAX + 1);
	if (n == 0 || n > NAMES_CONTAINER_ID_MAX || !alnum(s[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

bool names_ifname_valid(const char *s)
{
	size_t n;

	if (!s)
		return false;
	n = strnlen(s, NAMES_IFNAME_MAX + 1);
	if (n == 0 || n > NAMES_IFNAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c >= 0x7f || c == '/' || c == ':')
			return false;
	}
	return true;
}

bool names_opaque_id_valid(const char *s, size_t len, size_t max)
{
	if (!s || len == 0 || len > max)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != ':' && s[i] != '-')
			return false;
	return true;
}

bool names_service_id_valid(const char *s)
{
	const size_t plen = sizeof(NAMES_SERVICE_ID_PREFIX) - 1;

	if (!s || strlen(s) != NAMES_SERVICE_ID_LEN || strncmp(s, NAMES_SERVICE_ID_PREFIX, plen) != 0)
		return false;
	for (s += plen; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* ------------------------------------------------------------ Kubernetes (apimachinery) */

static const char qualified_name_msg[] =
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
static const char qualified_name_fmt[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
static const char label_value_msg[] =
	"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
static const char label_value_fmt[] = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
static const char dns1123_subdomain_msg[] =
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
static const char dns1123_subdomain_fmt[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
static const char dns1123_label_msg[] =
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
static const char dns1123_label_fmt[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
static const char dns1035_label_msg[] =
	"a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
static const char dns1035_label_fmt[] = "[a-z]([-a-z0-9]*[a-z0-9])?";

/* A message sink that counts, and passes on when the caller gave one. */
struct sink {
	names_msg_fn fn;
	void *userdata;
	size_t n;
};

static void report(struct sink *k, const char *msg)
{
	k->n++;
	if (k->fn)
		k->fn(k->userdata, msg);
}

/* Formats only when someone reads the message. */
static void reportf(struct sink *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reportf(struct sink *k, const char *fmt, ...)
{
	char m[512];
	va_list ap;

	if (!k->fn) {
		k->n++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	report(k, m);
}

/* apimachinery's RegexError(): "MSG (e.g. 'A',  or 'B', regex used for
 * validation is 'FMT')" (the double space is theirs). */
static void report_regex(struct sink *k, const char *before, const char *msg, const char *fmt,
			 const char *const *examples, const char *after)
{
	char r[400];
	size_t o;

	if (!k->fn) {
		k->n++;
		return;
	}
	o = (size_t)snprintf(r, sizeof(r), "%s (e.g. ", msg);
	for (size_t i = 0; examples[i] && o < sizeof(r); i++)
		o += (size_t)snprintf(r + o, sizeof(r) - o, "%s'%s', ", i ? " or " : "", examples[i]);
	if (o < sizeof(r))
		snprintf(r + o, sizeof(r) - o, "regex used for validation is '%s')", fmt);
	reportf(k, "%s%s%s", before, r, after);
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over @n bytes */
static bool match_dns_label(const char *s, size_t n)
{
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* DNS-1123 labels joined by '.', over @n bytes */
static bool match_dns_subdomain(const char *s, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i <= n; i++)
		if (i == n || s[i] == '.') {
			if (!match_dns_label(s + start, i - start))
				return false;
			start = i + 1;
		}
	return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over @n bytes */
static bool match_qualified(const char *s, size_t n)
{
	if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* IsDNS1123Label */
size_t names_dns_label_check(const char *s, names_msg_fn fn, void *userdata)
{
	static const char *const ex[] = { "my-name", "123-abc", NULL };
	struct sink k = { fn, userdata, 0 };
	size_t n = strlen(s);

	if (n > NAMES_DNS_LABEL_MAX)
		reportf(&k, "must be no more than %d characters", NAMES_DNS_LABEL_MAX);
	if (!match_dns_label(s, n))
		report_regex(&k, "", dns1123_label_msg, dns1123_label_fmt, ex, "");
	return k.n;
}

/* IsDNS1035Label */
size_t names_dns1035_label_check(const char *s, names_msg_fn fn, void *userdata)
{
	static const char *const ex[] = { "my-name", "abc-123", NULL };
	struct sink k = { fn, userdata, 0 };
	size_t n = strlen(s);

	if (n > NAMES_DNS_LABEL_MAX)
		reportf(&k, "must be no more than %d characters", NAMES_DNS_LABEL_MAX);
	if (!match_dns_label(s, n) || !(s[0] >= 'a' && s[0] <= 'z'))
		report_regex(&k, "", dns1035_label_msg, dns1035_label_fmt, ex, "");
	return k.n;
}

/* IsDNS1123Subdomain over @n bytes */
static void subdomain_check(const char *s, size_t n, const char *prefix, struct sink *k)
{
	static const char *const ex[] = { "example.com", NULL };

	if (n > NAMES_DNS_SUBDOMAIN_MAX)
		reportf(k, "%smust be no more than %d characters", prefix, NAMES_DNS_SUBDOMAIN_MAX);
	if (!match_dns_subdomain(s, n))
		report_regex(k, prefix, dns1123_subdomain_msg, dns1123_subdomain_fmt, ex, "");
}

size_t names_dns_subdomain_check(const char *s, const char *prefix, names_msg_fn fn, void *userdata)
{
	struct sink k = { fn, userdata, 0 };

	subdomain_check(s, strlen(s), prefix ? prefix : "", &k);
	return k.n;
}

/* IsQualifiedName */
size_t names_label_key_check(const char *s, names_msg_fn fn, void *userdata)
{
	static const char *const ex[] = { "MyName", "my.name", "123-abc", NULL };
	struct sink k = { fn, userdata, 0 };
	const char *slash = strchr(s, '/');
	const char *name = s;
	size_t n;

	if (slash && strchr(slash + 1, '/')) {
		report_regex(&k, "a qualified name ", qualified_name_msg, qualified_name_fmt, ex,
			     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
		return k.n;
	}
	if (slash) {
		size_t plen = (size_t)(slash - s);

		name = slash + 1;
		if (plen == 0)
			report(&k, "prefix part must be non-empty");
		else
			subdomain_check(s, plen, "prefix part ", &k);
	}
	n = strlen(name);
	if (n == 0) {
		report(&k, "name part must be non-empty");
		return k.n;
	}
	if (n > NAMES_LABEL_NAME_MAX)
		reportf(&k, "name part must be no more than %d characters", NAMES_LABEL_NAME_MAX);
	if (!match_qualified(name, n))
		report_regex(&k, "name part ", qualified_name_msg, qualified_name_fmt, ex, "");
	return k.n;
}

/* IsValidLabelValue */
size_t names_label_value_check(const char *s, names_msg_fn fn, void *userdata)
{
	static const char *const ex[] = { "MyValue", "my_value", "12345", NULL };
	struct sink k = { fn, userdata, 0 };
	size_t n = strlen(s);

	if (n > NAMES_LABEL_VALUE_MAX)
		reportf(&k, "must be no more than %d characters", NAMES_LABEL_VALUE_MAX);
	if (n && !match_qualified(s, n))
		report_regex(&k, "", label_value_msg, label_value_fmt, ex, "");
	return k.n;
}

/* IsValidPortName (IANA_SVC_NAME) */
size_t names_port_name_check(const char *s, names_msg_fn fn, void *userdata)
{
	struct sink k = { fn, userdata, 0 };
	size_t n = strlen(s);
	bool charset = n > 0, letter = false;

	if (n > NAMES_PORT_NAME_MAX)
		reportf(&k, "must be no more than %d characters", NAMES_PORT_NAME_MAX);
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= 'a' && s[i] <= 'z')
			letter = true;
		else if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
			charset = false;
	}
	if (!charset)
		report(&k, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
	if (!letter)
		report(&k, "must contain at least one letter (a-z)");
	if (strstr(s, "--"))
		report(&k, "must not contain consecutive hyphens");
	if (n > 0 && (s[0] == '-' || s[n - 1] == '-'))
		report(&k, "must not begin or end with a hyphen");
	return k.n;
}

bool names_dns_label_valid(const char *s)
{
	return s && names_dns_label_check(s, NULL, NULL) == 0;
}

bool names_dns1035_label_valid(const char *s)
{
	return s && names_dns1035_label_check(s, NULL, NULL) == 0;
}

bool names_dns_subdomain_valid(const char *s)
{
	return s && names_dns_subdomain_check(s, NULL, NULL, NULL) == 0;
}

bool names_label_key_valid(const char *s)
{
	return s && names_label_key_check(s, NULL, NULL) == 0;
}

bool names_label_value_valid(const char *s)
{
	return s && names_label_value_check(s, NULL, NULL) == 0;
}

bool names_port_name_valid(const char *s)
{
	return s && names_port_name_check(s, NULL, NULL) == 0;
}
