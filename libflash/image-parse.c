/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The image module's parsers of outside input: references, WWW-Authenticate
 * challenges, media types, manifests, indexes and configs; and the sink
 * through which every fetched byte is bounded and hashed.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "image-internal.h"
#include "internal.h"
#include "json.h"

#define why_set image_why

void image_why(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (!why || !size)
		return;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------- digests */

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool image_digest_valid(const char *s)
{
	if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != IMAGE_DIGEST_LEN)
		return false;
	for (size_t i = 7; i < IMAGE_DIGEST_LEN; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

static void hex_digest(const unsigned char *h, char *out)
{
	static const char hex[] = "0123456789abcdef";

	memcpy(out, "sha256:", 7);
	for (size_t i = 0; i < crypto_hash_sha256_BYTES; i++) {
		out[7 + 2 * i] = hex[h[i] >> 4];
		out[8 + 2 * i] = hex[h[i] & 15];
	}
	out[IMAGE_DIGEST_LEN] = '\0';
}

void image_sha256(const void *data, size_t len, char *out)
{
	unsigned char h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, data, len);
	hex_digest(h, out);
}

/* ---------------------------------------------------------------- sink */

void image_sink_init(struct image_sink *s, int fd, uint64_t limit)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->limit = limit;
	crypto_hash_sha256_init(&s->sha);
}

bool image_sink_write(struct image_sink *s, const void *data, size_t n)
{
	if (s->overflow || s->err)
		return false;
	if (n > s->limit - s->written) {
		s->overflow = true;
		return false;
	}
	if (s->fd < 0) {
		char *p = realloc(s->buf, s->len + n + 1);

		if (!p) {
			s->err = -ENOMEM;
			return false;
		}
		memcpy(p + s->len, data, n);
		s->buf = p;
		s->len += n;
		s->buf[s->len] = '\0';
	} else {
		const char *c = data;
		size_t left = n;

		while (left) {
			ssize_t w = write(s->fd, c, left);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				s->err = w < 0 ? -errno : -EIO;
				return false;
			}
			c += w;
			left -= (size_t)w;
		}
	}
	crypto_hash_sha256_update(&s->sha, data, n);
	s->written += n;
	return true;
}

void image_sink_digest(struct image_sink *s, char *out)
{
	unsigned char h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256_final(&s->sha, h);
	hex_digest(h, out);
}

void image_sink_clear(struct image_sink *s)
{
	free(s->buf);
	s->buf = NULL;
	s->len = 0;
}

/* ---------------------------------------------------------------- references */

void image_ref_clear(struct image_ref *r)
{
	if (!r)
		return;
	free(r->dir);
	free(r->host);
	free(r->api_host);
	free(r->repo);
	free(r->tag);
	free(r->digest);
	memset(r, 0, sizeof(*r));
}

static bool is_alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* */
static bool repo_component_valid(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0 || !is_alnum_lower(s[0]) || !is_alnum_lower(s[n - 1]))
		return false;
	while (i < n) {
		if (is_alnum_lower(s[i])) {
			i++;
			continue;
		}
		if (s[i] == '.') {
			i++;
		} else if (s[i] == '_') {
			i += i + 1 < n && s[i + 1] == '_' ? 2 : 1;
		} else if (s[i] == '-') {
			while (i < n && s[i] == '-')
				i++;
		} else {
			return false;
		}
		if (i >= n || !is_alnum_lower(s[i]))
			return false;
	}
	return true;
}

static bool repo_valid(const char *s, size_t n)
{
	size_t start = 0;

	if (n == 0 || n > 255)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '/') {
			if (!repo_component_valid(s + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

/* [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} */
static bool tag_valid(const char *s, size_t n)
{
	if (n == 0 || n > 128 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

/* host = label("." label)* [":" port] | "[" IPv6 "]" [":" port] */
static bool host_valid(const char *s, size_t n)
{
	size_t end = n;

	if (n == 0 || n > 255)
		return false;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (!close || close == s + 1)
			return false;
		for (const char *p = s + 1; p < close; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
				return false;
		end = (size_t)(close - s) + 1;
		if (end != n && s[end] != ':')
			return false;
	} else {
		const char *colon = memchr(s, ':', n);
		size_t label = 0;

		end = colon ? (size_t)(colon - s) : n;
		if (end == 0)
			return false;
		for (size_t i = 0; i <= end; i++) {
			if (i == end || s[i] == '.') {
				if (label == 0 || s[i - 1] == '-' || s[i - label] == '-')
					return false;
				label = 0;
			} else if (isalnum((unsigned char)s[i]) || s[i] == '-') {
				label++;
			} else {
				return false;
			}
		}
	}
	if (end < n) {
		unsigned long port = 0;
		size_t digits = n - end - 1;

		if (digits == 0 || digits > 5)
			return false;
		for (size_t i = end + 1; i < n; i++) {
			if (!isdigit((unsigned char)s[i]))
				return false;
			port = port * 10 + (unsigned long)(s[i] - '0');
		}
		if (port == 0 || port > 65535)
			return false;
	}
	return true;
}

static int ref_parse_layout(const char *s, struct image_ref *r, char *why, size_t why_size)
{
	const char *body = s + 4, *slash = strrchr(body, '/'), *colon = strrchr(body, ':');
	size_t dir_len;

	if (colon && slash && colon < slash)
		colon = NULL;
	dir_len = colon ? (size_t)(colon - body) : strlen(body);
	if (dir_len == 0) {
		why_set(why, why_size, "\"oci:\" needs a layout directory");
		return -FLASH_E_IMAGE_REFERENCE;
	}
	if (colon && !tag_valid(colon + 1, strlen(colon + 1))) {
		why_set(why, why_size, "layout tag \"%s\" is not a valid tag", colon + 1);
		return -FLASH_E_IMAGE_REFERENCE;
	}
	r->layout = true;
	r->dir = strndup(body, dir_len);
	r->tag = colon ? strdup(colon + 1) : NULL;
	if (!r->dir || (colon && !r->tag))
		return -ENOMEM;
	return 0;
}

int image_ref_parse(const char *s, struct image_ref *ret, char *why, size_t why_size)
{
	struct image_ref r = { .layout = false };
	const char *at, *name, *first_slash, *last_slash, *colon, *name_end;
	size_t len;
	int rc = -FLASH_E_IMAGE_REFERENCE;

	if (!s || !ret)
		return -EINVAL;
	len = strlen(s);
	if (len == 0 || len > 4096) {
		why_set(why, why_size, "image reference is empty or longer than 4096 bytes");
		return rc;
	}
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) {
			why_set(why, why_size, "image reference has a space, control or non-ASCII byte at offset %zu",
				i);
			return rc;
		}
	}
	if (strncmp(s, "oci:", 4) == 0) {
		rc = ref_parse_layout(s, &r, why, why_size);
		goto out;
	}

	at = strchr(s, '@');
	name_end = at ? at : s + len;
	if (at) {
		if (!image_digest_valid(at + 1)) {
			why_set(why, why_size, "digest \"%s\" is not \"sha256:\" and 64 lowercase hex digits", at + 1);
			goto out;
		}
		r.digest = strdup(at + 1);
		if (!r.digest) {
			rc = -ENOMEM;
			goto out;
		}
	}
	/* The host is the first component when it looks like one: it has a
	 * '.' or ':' or is "localhost" (the distribution/reference rule). */
	first_slash = memchr(s, '/', (size_t)(name_end - s));
	name = s;
	if (first_slash) {
		size_t hl = (size_t)(first_slash - s);

		if (memchr(s, '.', hl) || memchr(s, ':', hl) || (hl == 9 && memcmp(s, "localhost", 9) == 0) ||
		    s[0] == '[') {
			if (!host_valid(s, hl)) {
				why_set(why, why_size, "registry host \"%.*s\" is not host[:port]", (int)hl, s);
				goto out;
			}
			r.host = strndup(s, hl);
			name = first_slash + 1;
		}
	}
	last_slash = memrchr(name, '/', (size_t)(name_end - name));
	colon = memchr(last_slash ? last_slash : name, ':', (size_t)(name_end - (last_slash ? last_slash : name)));
	if (colon) {
		if (!tag_valid(colon + 1, (size_t)(name_end - colon - 1))) {
			why_set(why, why_size, "tag \"%.*s\" is not [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}",
				(int)(name_end - colon - 1), colon + 1);
			goto out;
		}
		r.tag = strndup(colon + 1, (size_t)(name_end - colon - 1));
		name_end = colon;
	}
	if (!repo_valid(name, (size_t)(name_end - name))) {
		why_set(why, why_size,
			"repository \"%.*s\" is not lowercase components [a-z0-9] separated by '.', '_', '__' or '-'",
			(int)(name_end - name), name);
		goto out;
	}
	if (!r.host) {
		r.host = strdup("docker.io");
		if (memchr(name, '/', (size_t)(name_end - name)))
			r.repo = strndup(name, (size_t)(name_end - name));
		else if (asprintf(&r.repo, "library/%.*s", (int)(name_end - name), name) < 0)
			r.repo = NULL;
	} else {
		r.repo = strndup(name, (size_t)(name_end - name));
	}
	if (!r.tag && !r.digest)
		r.tag = strdup("latest");
	r.api_host = strdup(strcmp(r.host, "docker.io") == 0 ? "registry-1.docker.io" : r.host);
	if (!r.host || !r.repo || !r.api_host || (!r.tag && !r.digest)) {
		rc = -ENOMEM;
		goto out;
	}
	rc = 0;
out:
	if (rc == 0)
		*ret = r;
	else
		image_ref_clear(&r);
	return rc;
}

/* ---------------------------------------------------------------- challenges */

static bool is_tchar(char c)
{
	return isalnum((unsigned char)c) || strchr("!#$%&'*+-.^_`|~", c);
}

struct chal_scan {
	const char *start, *p, *end;
	char *why;
	size_t why_size;
};

static void skip_ows(struct chal_scan *sc)
{
	while (sc->p < sc->end && (*sc->p == ' ' || *sc->p == '\t'))
		sc->p++;
}

static size_t scan_token(struct chal_scan *sc)
{
	const char *start = sc->p;

	while (sc->p < sc->end && is_tchar(*sc->p))
		sc->p++;
	return (size_t)(sc->p - start);
}

/* quoted-string into @out (NUL-terminated); false on malformed or too long. */
static bool scan_quoted(struct chal_scan *sc, char *out, size_t out_size, size_t *ret_len)
{
	size_t n = 0;

	sc->p++; /* the opening quote */
	while (sc->p < sc->end) {
		unsigned char c = (unsigned char)*sc->p;

		if (c == '"') {
			sc->p++;
			if (out)
				out[n] = '\0';
			*ret_len = n;
			return true;
		}
		if (c == '\\') {
			sc->p++;
			if (sc->p >= sc->end)
				break;
			c = (unsigned char)*sc->p;
			if (c != '\t' && (c < 0x20 || c >= 0x7f))
				break;
		} else if (c != '\t' && (c < 0x20 || c >= 0x7f)) {
			break;
		}
		if (out && n + 1 >= out_size) {
			why_set(sc->why, sc->why_size, "challenge parameter longer than %zu bytes", out_size - 1);
			return false;
		}
		if (out)
			out[n] = (char)c;
		n++;
		sc->p++;
	}
	why_set(sc->why, sc->why_size, "challenge has an unterminated or malformed quoted string");
	return false;
}

/* Whether the text at sc->p starts a new challenge: "token SP" not
 * followed by '='. */
static bool at_new_challenge(const struct chal_scan *sc)
{
	const char *p = sc->p;

	while (p < sc->end && is_tchar(*p))
		p++;
	if (p == sc->p)
		return false;
	while (p < sc->end && (*p == ' ' || *p == '\t'))
		p++;
	return p >= sc->end || *p != '=';
}

struct chal_one {
	enum image_auth_scheme scheme;
	bool has_realm, has_service, has_scope, has_error;
};

static int chal_param(struct chal_scan *sc, struct chal_one *one, struct image_challenge *c)
{
	const char *name = sc->p;
	size_t nlen = scan_token(sc), vlen;
	char *dst = NULL;
	size_t dst_size = 0;
	bool *seen = NULL;
	char tmp[8];

	if (nlen == 0) {
		why_set(sc->why, sc->why_size, "challenge parameter name expected at offset %zu",
			(size_t)(sc->p - sc->start));
		return -FLASH_E_IMAGE_CHALLENGE;
	}
	skip_ows(sc);
	if (sc->p >= sc->end || *sc->p != '=') {
		why_set(sc->why, sc->why_size, "challenge parameter \"%.*s\" has no '='", (int)nlen, name);
		return -FLASH_E_IMAGE_CHALLENGE;
	}
	sc->p++;
	skip_ows(sc);
	if (one->scheme != IMAGE_AUTH_OTHER) {
		if (nlen == 5 && strncasecmp(name, "realm", 5) == 0) {
			dst = c->realm, dst_size = sizeof(c->realm), seen = &one->has_realm;
		} else if (nlen == 7 && strncasecmp(name, "service", 7) == 0) {
			dst = c->service, dst_size = sizeof(c->service), seen = &one->has_service;
		} else if (nlen == 5 && strncasecmp(name, "scope", 5) == 0) {
			dst = c->scope, dst_size = sizeof(c->scope), seen = &one->has_scope;
		} else if (nlen == 5 && strncasecmp(name, "error", 5) == 0) {
			dst = c->error, dst_size = sizeof(c->error), seen = &one->has_error;
		}
	}
	if (seen && *seen) {
		why_set(sc->why, sc->why_size, "challenge parameter \"%.*s\" appears twice", (int)nlen, name);
		return -FLASH_E_IMAGE_CHALLENGE;
	}
	if (sc->p < sc->end && *sc->p == '"') {
		if (!scan_quoted(sc, dst ? dst : NULL, dst ? dst_size : sizeof(tmp), &vlen))
			return -FLASH_E_IMAGE_CHALLENGE;
	} else {
		const char *v = sc->p;

		vlen = scan_token(sc);
		if (vlen == 0) {
			why_set(sc->why, sc->why_size, "challenge parameter \"%.*s\" has no value", (int)nlen, name);
			return -FLASH_E_IMAGE_CHALLENGE;
		}
		if (dst) {
			if (vlen >= dst_size) {
				why_set(sc->why, sc->why_size, "challenge parameter longer than %zu bytes", dst_size - 1);
				return -FLASH_E_IMAGE_CHALLENGE;
			}
			memcpy(dst, v, vlen);
			dst[vlen] = '\0';
		}
	}
	if (seen)
		*seen = true;
	return 0;
}

int image_challenge_parse(const char *s, size_t len, struct image_challenge *ret, char *why, size_t why_size)
{
	struct chal_scan sc = { .start = s, .p = s, .end = s + len, .why = why, .why_size = why_size };
	struct image_challenge best = { .scheme = IMAGE_AUTH_OTHER };
	bool any = false;

	if (!s || !ret)
		return -EINVAL;
	if (len > IMAGE_CHALLENGE_MAX) {
		why_set(why, why_size, "WWW-Authenticate longer than %d bytes", IMAGE_CHALLENGE_MAX);
		return -FLASH_E_IMAGE_CHALLENGE;
	}
	skip_ows(&sc);
	while (sc.p < sc.end) {
		struct image_challenge c = { .scheme = IMAGE_AUTH_OTHER };
		struct chal_one one = { .scheme = IMAGE_AUTH_OTHER };
		const char *scheme = sc.p;
		size_t slen = scan_token(&sc);
		bool first = true;

		if (slen == 0) {
			why_set(why, why_size, "challenge scheme expected at offset %zu", (size_t)(sc.p - s));
			return -FLASH_E_IMAGE_CHALLENGE;
		}
		if (slen == 5 && strncasecmp(scheme, "Basic", 5) == 0)
			one.scheme = IMAGE_AUTH_BASIC;
		else if (slen == 6 && strncasecmp(scheme, "Bearer", 6) == 0)
			one.scheme = IMAGE_AUTH_BEARER;
		c.scheme = one.scheme;
		if (sc.p < sc.end && *sc.p != ' ' && *sc.p != ',') {
			why_set(why, why_size, "challenge scheme \"%.*s\" followed by byte 0x%02x at offset %zu", (int)slen,
				scheme, (unsigned char)*sc.p, (size_t)(sc.p - s));
			return -FLASH_E_IMAGE_CHALLENGE;
		}
		skip_ows(&sc);
		/* auth-params until the next challenge or the end */
		while (sc.p < sc.end) {
			int rc;

			if (!first) {
				if (*sc.p != ',') {
					why_set(why, why_size, "challenge expects ',' at offset %zu", (size_t)(sc.p - s));
					return -FLASH_E_IMAGE_CHALLENGE;
				}
				while (sc.p < sc.end && (*sc.p == ',' || *sc.p == ' ' || *sc.p == '\t'))
					sc.p++;
				if (sc.p >= sc.end)
					break;
				if (at_new_challenge(&sc))
					break;
			}
			if (first && *sc.p == ',')
				break;
			rc = chal_param(&sc, &one, &c);
			if (rc < 0)
				return rc;
			skip_ows(&sc);
			first = false;
		}
		if (one.scheme != IMAGE_AUTH_OTHER) {
			if (!one.has_realm) {
				why_set(why, why_size, "%s challenge without realm", one.scheme == IMAGE_AUTH_BASIC ? "Basic" : "Bearer");
				return -FLASH_E_IMAGE_CHALLENGE;
			}
			if (one.scheme == IMAGE_AUTH_BEARER && c.realm[0] == '\0') {
				why_set(why, why_size, "Bearer challenge with an empty realm");
				return -FLASH_E_IMAGE_CHALLENGE;
			}
			if (!any || (best.scheme == IMAGE_AUTH_BASIC && c.scheme == IMAGE_AUTH_BEARER))
				best = c;
			any = true;
		}
		/* a list separator between challenges */
		while (sc.p < sc.end && (*sc.p == ',' || *sc.p == ' ' || *sc.p == '\t'))
			sc.p++;
	}
	if (!any) {
		why_set(why, why_size, "no Basic or Bearer challenge in WWW-Authenticate");
		return -FLASH_E_IMAGE_UNAUTHORIZED;
	}
	*ret = best;
	return 0;
}

/* ---------------------------------------------------------------- media types */

const char image_accept_manifests[] =
	"application/vnd.oci.image.manifest.v1+json, "
	"application/vnd.oci.image.index.v1+json, "
	"application/vnd.docker.distribution.manifest.v2+json, "
	"application/vnd.docker.distribution.manifest.list.v2+json";

static const struct {
	enum image_media m;
	const char *name;
} media_names[] = {
	{ IMAGE_MEDIA_OCI_MANIFEST, "application/vnd.oci.image.manifest.v1+json" },
	{ IMAGE_MEDIA_OCI_INDEX, "application/vnd.oci.image.index.v1+json" },
	{ IMAGE_MEDIA_DOCKER_MANIFEST, "application/vnd.docker.distribution.manifest.v2+json" },
	{ IMAGE_MEDIA_DOCKER_LIST, "application/vnd.docker.distribution.manifest.list.v2+json" },
	{ IMAGE_MEDIA_OCI_CONFIG, "application/vnd.oci.image.config.v1+json" },
	{ IMAGE_MEDIA_DOCKER_CONFIG, "application/vnd.docker.container.image.v1+json" },
	{ IMAGE_MEDIA_LAYER_TAR, "application/vnd.oci.image.layer.v1.tar" },
	{ IMAGE_MEDIA_LAYER_GZIP, "application/vnd.oci.image.layer.v1.tar+gzip" },
	{ IMAGE_MEDIA_LAYER_ZSTD, "application/vnd.oci.image.layer.v1.tar+zstd" },
	{ IMAGE_MEDIA_LAYER_GZIP, "application/vnd.docker.image.rootfs.diff.tar.gzip" },
	{ IMAGE_MEDIA_LAYER_FOREIGN, "application/vnd.oci.image.layer.nondistributable.v1.tar" },
	{ IMAGE_MEDIA_LAYER_FOREIGN, "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip" },
	{ IMAGE_MEDIA_LAYER_FOREIGN, "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd" },
	{ IMAGE_MEDIA_LAYER_FOREIGN, "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" },
};

enum image_media image_media_parse(const char *s, size_t len)
{
	const char *semi;

	if (!s)
		return IMAGE_MEDIA_UNKNOWN;
	semi = memchr(s, ';', len);
	if (semi)
		len = (size_t)(semi - s);
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	while (len && (*s == ' ' || *s == '\t'))
		s++, len--;
	for (size_t i = 0; i < ARRAY_SIZE(media_names); i++)
		if (strlen(media_names[i].name) == len && strncasecmp(media_names[i].name, s, len) == 0)
			return media_names[i].m;
	return IMAGE_MEDIA_UNKNOWN;
}

const char *image_media_name(enum image_media m)
{
	for (size_t i = 0; i < ARRAY_SIZE(media_names); i++)
		if (media_names[i].m == m)
			return media_names[i].name;
	return "unknown";
}

bool image_media_is_manifest(enum image_media m)
{
	return m == IMAGE_MEDIA_OCI_MANIFEST || m == IMAGE_MEDIA_DOCKER_MANIFEST;
}

bool image_media_is_index(enum image_media m)
{
	return m == IMAGE_MEDIA_OCI_INDEX || m == IMAGE_MEDIA_DOCKER_LIST;
}

/* ---------------------------------------------------------------- documents */

static int doc_parse(const char *text, size_t len, struct json_value **ret, char *why, size_t why_size,
		     const char *what)
{
	struct json_limits lim = { .max_depth = 16, .max_input = FLASH_IMAGE_CONFIG_MAX };
	struct json_error err;
	int rc = json_parse(text, len, &lim, ret, &err);

	if (rc == -EBADMSG) {
		why_set(why, why_size, "%s is not valid JSON: line %u column %u: %s", what, err.line, err.column,
			err.message);
		return -FLASH_E_IMAGE_MANIFEST;
	}
	if (rc == 0 && (*ret)->type != JSON_OBJECT) {
		json_free(*ret);
		why_set(why, why_size, "%s is not a JSON object", what);
		return -FLASH_E_IMAGE_MANIFEST;
	}
	return rc;
}

/* mediaType of a document, if present, must agree with its Content-Type. */
static int doc_media_check(const struct json_value *doc, enum image_media media, const char *what, char *why,
			   size_t why_size)
{
	const struct json_value *mt = json_get(doc, "mediaType");
	const char *s;
	uint64_t version;

	if (json_get_uint64(json_get(doc, "schemaVersion"), &version) < 0 || version != 2) {
		why_set(why, why_size, "%s: schemaVersion must be 2", what);
		return -FLASH_E_IMAGE_MANIFEST;
	}
	if (!mt) {
		if (media == IMAGE_MEDIA_DOCKER_MANIFEST || media == IMAGE_MEDIA_DOCKER_LIST) {
			why_set(why, why_size, "%s: a Docker v2 document needs a mediaType field", what);
			return -FLASH_E_IMAGE_MANIFEST;
		}
		return 0;
	}
	if (json_get_string(mt, &s) < 0) {
		why_set(why, why_size, "%s: mediaType is not a string", what);
		return -FLASH_E_IMAGE_MANIFEST;
	}
	if (image_media_parse(s, strlen(s)) != media || strchr(s, ';')) {
		why_set(why, why_size, "%s: mediaType \"%.80s\" disagrees with its Content-Type %s", what, s,
			image_media_name(media));
		return -FLASH_E_IMAGE_MEDIA_TYPE;
	}
	return 0;
}

/* Document @text of Content-Type @media, which must be an index type
 * (@index) or a manifest type: a JSON object with schemaVersion 2 and a
 * mediaType (if any) agreeing with @media. */
static int doc_open(const char *text, size_t len, enum image_media media, bool index, struct json_value **ret,
		    char *why, size_t why_size)
{
	const char *what = index ? "index" : "manifest";
	struct json_value *doc = NULL;
	int rc;

	if (index ? !image_media_is_index(media) : !image_media_is_manifest(media)) {
		why_set(why, why_size, "%s is not an image %s type", image_media_name(media), what);
		return -FLASH_E_IMAGE_MEDIA_TYPE;
	}
	rc = doc_parse(text, len, &doc, why, why_size, what);
	if (rc < 0)
		return rc;
	rc = doc_media_check(doc, media, what, why, why_size);
	if (rc < 0) {
		json_free(doc);
		return rc;
	}
	*ret = doc;
	return 0;
}

static int desc_parse(const struct json_value *v, const char *what, struct image_desc *d, char *why,
		      size_t why_size)
{
	const char *mt, *digest;
	uint64_t size;

	if (!v || v->type != JSON_OBJECT) {
		why_set(why, why_size, "%s: descriptor missing or not an object", what);
		return -FLASH_E_IMAGE_MANIFEST;
	}
	if (json_get_string(json_get(v, "mediaType"), &mt) < 0) {
		why_set(why, why_size, "%s: mediaType missing or not a string", what);
		return -FLASH_E_IMAGE_MANIFEST;
	}
	if (json_get_string(json_get(v, "digest"), &digest) < 0 || !image_digest_valid(digest)) {
		why_set(why, why_size, "%s: digest missing or not \"sha256:\" and 64 lowercase hex digits", what);
		return -FLASH_E_IMAGE_MANIFEST;
	}
	if (json_get_uint64(json_get(v, "size"), &size) < 0 || size > IMAGE_DESC_SIZE_MAX) {
		why_set(why, why_size, "%s: size missing, negative or above %llu", what,
			(unsigned long long)IMAGE_DESC_SIZE_MAX);
		return -FLASH_E_IMAGE_MANIFEST;
	}
	d->media = image_media_parse(mt, strlen(mt));
	if (d->media == IMAGE_MEDIA_UNKNOWN) {
		why_set(why, why_size, "%s: media type \"%.80s\" is not accepted", what, mt);
		return -FLASH_E_IMAGE_MEDIA_TYPE;
	}
	memcpy(d->digest, digest, IMAGE_DIGEST_LEN + 1);
	d->size = size;
	return 0;
}

void image_manifest_clear(struct image_manifest *m)
{
	if (!m)
		return;
	free(m->layers);
	memset(m, 0, sizeof(*m));
}

int image_manifest_parse(const char *text, size_t len, enum image_media media, struct image_manifest *ret,
			 char *why, size_t why_size)
{
	struct json_value *doc = NULL;
	struct image_manifest m = { .n_layers = 0 };
	const struct json_value *layers;
	int rc;

	if (!text || !ret)
		return -EINVAL;
	rc = doc_open(text, len, media, false, &doc, why, why_size);
	if (rc < 0)
		return rc;
	rc = desc_parse(json_get(doc, "config"), "manifest config", &m.config, why, why_size);
	if (rc < 0)
		goto out;
	if (m.config.media != IMAGE_MEDIA_OCI_CONFIG && m.config.media != IMAGE_MEDIA_DOCKER_CONFIG) {
		why_set(why, why_size, "manifest config: %s is not an image config type", image_media_name(m.config.media));
		rc = -FLASH_E_IMAGE_MEDIA_TYPE;
		goto out;
	}
	if (m.config.size > FLASH_IMAGE_CONFIG_MAX) {
		why_set(why, why_size, "manifest config: size %llu above %u bytes", (unsigned long long)m.config.size,
			FLASH_IMAGE_CONFIG_MAX);
		rc = -FLASH_E_IMAGE_SIZE;
		goto out;
	}
	layers = json_get(doc, "layers");
	if (!layers || layers->type != JSON_ARRAY) {
		why_set(why, why_size, "manifest: layers missing or not an array");
		rc = -FLASH_E_IMAGE_MANIFEST;
		goto out;
	}
	if (layers->u.array.n > FLASH_IMAGE_LAYERS_MAX) {
		why_set(why, why_size, "manifest: %zu layers, at most %d", layers->u.array.n, FLASH_IMAGE_LAYERS_MAX);
		rc = -FLASH_E_IMAGE_SIZE;
		goto out;
	}
	m.layers = calloc(layers->u.array.n ? layers->u.array.n : 1, sizeof(*m.layers));
	if (!m.layers) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < layers->u.array.n; i++) {
		char what[48];
		struct image_desc *d = &m.layers[i];

		snprintf(what, sizeof(what), "manifest layers[%zu]", i);
		rc = desc_parse(layers->u.array.items[i], what, d, why, why_size);
		if (rc < 0)
			goto out;
		if (d->media == IMAGE_MEDIA_LAYER_FOREIGN) {
			why_set(why, why_size, "%s: non-distributable (foreign) layers are not pulled", what);
			rc = -FLASH_E_IMAGE_MEDIA_TYPE;
			goto out;
		}
		if (d->media != IMAGE_MEDIA_LAYER_TAR && d->media != IMAGE_MEDIA_LAYER_GZIP &&
		    d->media != IMAGE_MEDIA_LAYER_ZSTD) {
			why_set(why, why_size, "%s: %s is not a layer type", what, image_media_name(d->media));
			rc = -FLASH_E_IMAGE_MEDIA_TYPE;
			goto out;
		}
		m.n_layers++;
	}
	*ret = m;
	m.layers = NULL;
	rc = 0;
out:
	image_manifest_clear(&m);
	json_free(doc);
	return rc;
}

static void platform_split(const char *platform, char os[32], char arch[32], char variant[32])
{
	const char *a = strchr(platform, '/'), *v = a ? strchr(a + 1, '/') : NULL;

	snprintf(os, 32, "%.*s", (int)(a ? a - platform : (long)strlen(platform)), platform);
	snprintf(arch, 32, "%.*s", a ? (int)(v ? v - a - 1 : (long)strlen(a + 1)) : 0, a ? a + 1 : "");
	snprintf(variant, 32, "%s", v ? v + 1 : "");
}

static bool str_field_is(const struct json_value *obj, const char *key, const char *want)
{
	const char *s;

	if (json_get_string(json_get(obj, key), &s) < 0)
		return want[0] == '\0';
	return strcmp(s, want) == 0;
}

int image_index_select(const char *text, size_t len, enum image_media media, const char *platform,
		       const char *tag, struct image_desc *ret, char *why, size_t why_size)
{
	struct json_value *doc = NULL;
	const struct json_value *list;
	char os[32], arch[32], variant[32], seen[256] = "";
	size_t seen_len = 0, matches = 0;
	struct image_desc found = { .media = IMAGE_MEDIA_UNKNOWN };
	int rc;

	if (!text || !ret || (!platform && !tag))
		return -EINVAL;
	rc = doc_open(text, len, media, true, &doc, why, why_size);
	if (rc < 0)
		return rc;
	list = json_get(doc, "manifests");
	if (!list || list->type != JSON_ARRAY) {
		why_set(why, why_size, "index: manifests missing or not an array");
		rc = -FLASH_E_IMAGE_MANIFEST;
		goto out;
	}
	if (platform)
		platform_split(platform, os, arch, variant);
	for (size_t i = 0; i < list->u.array.n; i++) {
		const struct json_value *e = list->u.array.items[i], *p;
		struct image_desc d;
		char what[48];
		bool match;

		snprintf(what, sizeof(what), "index manifests[%zu]", i);
		rc = desc_parse(e, what, &d, why, why_size);
		if (rc < 0)
			goto out;
		if (!image_media_is_manifest(d.media) && !image_media_is_index(d.media)) {
			why_set(why, why_size, "%s: %s is not a manifest type", what, image_media_name(d.media));
			rc = -FLASH_E_IMAGE_MEDIA_TYPE;
			goto out;
		}
		if (d.size > FLASH_IMAGE_MANIFEST_MAX) {
			why_set(why, why_size, "%s: size %llu above %u bytes", what, (unsigned long long)d.size,
				FLASH_IMAGE_MANIFEST_MAX);
			rc = -FLASH_E_IMAGE_SIZE;
			goto out;
		}
		p = json_get(e, "platform");
		if (tag) {
			const char *name = NULL;

			json_get_string(json_get(json_get(e, "annotations"), "org.opencontainers.image.ref.name"), &name);
			match = tag[0] ? name && strcmp(name, tag) == 0 : list->u.array.n == 1;
			if (name && seen_len + strlen(name) + 2 < sizeof(seen))
				seen_len += (size_t)snprintf(seen + seen_len, sizeof(seen) - seen_len, "%s%s",
							     seen_len ? ", " : "", name);
		} else {
			const char *pos = NULL, *parch = NULL;

			if (p && p->type != JSON_OBJECT) {
				why_set(why, why_size, "%s: platform is not an object", what);
				rc = -FLASH_E_IMAGE_MANIFEST;
				goto out;
			}
			match = image_media_is_manifest(d.media) && p && str_field_is(p, "os", os) &&
				str_field_is(p, "architecture", arch) && (!variant[0] || str_field_is(p, "variant", variant));
			json_get_string(json_get(p, "os"), &pos);
			json_get_string(json_get(p, "architecture"), &parch);
			if (seen_len + 70 < sizeof(seen))
				seen_len += (size_t)snprintf(seen + seen_len, sizeof(seen) - seen_len, "%s%.32s/%.32s",
							     seen_len ? ", " : "", pos ? pos : "?", parch ? parch : "?");
		}
		if (match && matches++ == 0)
			found = d;
	}
	if (matches == 0) {
		if (tag)
			why_set(why, why_size, "layout has no image %s%s%s (it has: %s)", tag[0] ? "tagged " : "",
				tag[0] ? tag : "without a tag (several images)", "", seen[0] ? seen : "none");
		else
			why_set(why, why_size, "index has no manifest for %s (it has: %s)", platform,
				seen[0] ? seen : "none");
		rc = -FLASH_E_IMAGE_PLATFORM;
		goto out;
	}
	*ret = found;
	rc = 0;
out:
	json_free(doc);
	return rc;
}

int image_config_check(const char *text, size_t len, const char *platform, char *why, size_t why_size)
{
	struct json_value *doc = NULL;
	char os[32], arch[32], variant[32];
	const char *cos = NULL, *carch = NULL;
	int rc;

	rc = doc_parse(text, len, &doc, why, why_size, "image config");
	if (rc < 0)
		return rc;
	platform_split(platform, os, arch, variant);
	if (json_get_string(json_get(doc, "os"), &cos) < 0 || json_get_string(json_get(doc, "architecture"), &carch) < 0) {
		why_set(why, why_size, "image config: os or architecture missing or not a string");
		rc = -FLASH_E_IMAGE_MANIFEST;
	} else if (strcmp(cos, os) != 0 || strcmp(carch, arch) != 0) {
		why_set(why, why_size, "image config is for %.32s/%.32s, not %s", cos, carch, platform);
		rc = -FLASH_E_IMAGE_PLATFORM;
	}
	json_free(doc);
	return rc;
}

int image_token_reply_parse(const char *text, size_t len, char **ret_token, char *why, size_t why_size)
{
	struct json_value *doc = NULL;
	const char *token = NULL;
	size_t n;
	int rc = -FLASH_E_IMAGE_CHALLENGE;

	if (!text || !ret_token)
		return -EINVAL;
	if (json_parse(text, len, NULL, &doc, NULL) == -ENOMEM)
		return -ENOMEM;
	if (!json_is(doc, JSON_OBJECT) ||
	    (json_get_string(json_get(doc, "token"), &token) < 0 &&
	     json_get_string(json_get(doc, "access_token"), &token) < 0))
		goto bad;
	n = strlen(token);
	if (n == 0 || n > IMAGE_TOKEN_MAX ||
	    strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=") != n)
		goto bad;
	*ret_token = strdup(token);
	rc = *ret_token ? 0 : -ENOMEM;
	goto out;
bad:
	why_set(why, why_size, "token service answer has no usable \"token\"");
out:
	json_free(doc);
	return rc;
}
