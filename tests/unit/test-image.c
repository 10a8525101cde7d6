/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The image module without a network: the parsers of outside input
 * (references, WWW-Authenticate challenges, media types, manifests,
 * indexes, configs; compiled in from libflash/image-parse.c), the layer
 * unpacker on tar streams built here, and resolve/pull/unpack of local OCI
 * layouts written here.
 */
#include <criterion/criterion.h>
#include <flash/image.h>
#include <limits.h>
#include <stdio.h>

#include "image-helpers.h"
#include "image-internal.h"
#include "util.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OCI_M "application/vnd.oci.image.manifest.v1+json"
#define OCI_I "application/vnd.oci.image.index.v1+json"
#define DOCKER_M "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_L "application/vnd.docker.distribution.manifest.list.v2+json"

/* ---------------------------------------------------------------- references */

static void ref_ok(const char *s, const char *host, const char *repo, const char *tag, const char *digest)
{
	struct image_ref r;
	char why[256] = "";

	ASSERT_OK(image_ref_parse(s, &r, why, sizeof(why)), s);
	cr_assert(!r.layout, "%s: not a layout", s);
	ASSERT_STREQ(r.host, host, s);
	ASSERT_STREQ(r.repo, repo, s);
	if (tag)
		ASSERT_STREQ(r.tag, tag, s);
	else
		cr_assert_null(r.tag, "%s: no tag", s);
	if (digest)
		ASSERT_STREQ(r.digest, digest, s);
	else
		cr_assert_null(r.digest, "%s: no digest", s);
	image_ref_clear(&r);
}

Test(image_ref, registry_forms)
{
	ref_ok("127.0.0.1:5000/small:v1", "127.0.0.1:5000", "small", "v1", NULL);
	ref_ok("registry.example.com/team/app", "registry.example.com", "team/app", "latest", NULL);
	ref_ok("localhost/x_y__z.w-v:1.0-rc_1", "localhost", "x_y__z.w-v", "1.0-rc_1", NULL);
	ref_ok("ghcr.io/a/b@sha256:" D64, "ghcr.io", "a/b", NULL, "sha256:" D64);
	ref_ok("ghcr.io/a/b:t@sha256:" D64, "ghcr.io", "a/b", "t", "sha256:" D64);
	ref_ok("busybox", "docker.io", "library/busybox", "latest", NULL);
	ref_ok("team/app:2", "docker.io", "team/app", "2", NULL);
	ref_ok("[::1]:5000/x", "[::1]:5000", "x", "latest", NULL);
}

Test(image_ref, docker_hub_api_host)
{
	struct image_ref r;

	ASSERT_OK(image_ref_parse("busybox:1", &r, NULL, 0), "parse");
	ASSERT_STREQ(r.api_host, "registry-1.docker.io", "api host");
	image_ref_clear(&r);
	ASSERT_OK(image_ref_parse("127.0.0.1:5000/a", &r, NULL, 0), "parse");
	ASSERT_STREQ(r.api_host, "127.0.0.1:5000", "api host");
	image_ref_clear(&r);
}

Test(image_ref, layouts)
{
	struct image_ref r;

	ASSERT_OK(image_ref_parse("oci:/var/lib/img:v2", &r, NULL, 0), "with tag");
	cr_assert(r.layout);
	ASSERT_STREQ(r.dir, "/var/lib/img", "dir");
	ASSERT_STREQ(r.tag, "v2", "tag");
	image_ref_clear(&r);
	ASSERT_OK(image_ref_parse("oci:/tmp/a:b/layout", &r, NULL, 0), "colon before the last slash");
	ASSERT_STREQ(r.dir, "/tmp/a:b/layout", "dir");
	cr_assert_null(r.tag);
	image_ref_clear(&r);
	ASSERT_OK(image_ref_parse("oci:rel", &r, NULL, 0), "relative");
	ASSERT_STREQ(r.dir, "rel", "dir");
	image_ref_clear(&r);
}

Test(image_ref, refused)
{
	static const char *bad[] = {
		"", "UPPER/x", "host:99999/x", "host:0/x", "x@sha256:abc", "x@md5:" D64, "x@sha256:" D64 "0",
		"x@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "x:tag with space",
		"x::y", "a//b", "-a", "a-", "a/", "/a", "x:.tag", "x:-tag", "oci:", "oci::tag", "oci:dir:bad tag",
		"host.example/x\n", "h\x01st.example/x", "x:\xc3\xa9", "bad_host.example:5000/x", "-h.example/x",
		"h-.example/x", "[zz]:5000/x", ":tag",
	};
	char why[256];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct image_ref r;

		why[0] = '\0';
		ASSERT_ERR(image_ref_parse(bad[i], &r, why, sizeof(why)), -FLASH_E_IMAGE_REFERENCE, bad[i]);
		cr_assert(why[0], "%s: a reason is given", bad[i]);
	}
	{
		char longname[300];

		memset(longname, 'a', 256);
		longname[256] = '\0';
		ASSERT_ERR(image_ref_parse(longname, &(struct image_ref){ 0 }, why, sizeof(why)),
			   -FLASH_E_IMAGE_REFERENCE, "name over 255");
	}
}

/* ---------------------------------------------------------------- challenges */

static void chal_ok(const char *s, enum image_auth_scheme scheme, const char *realm, const char *service,
		    const char *scope, const char *error)
{
	struct image_challenge c;
	char why[256] = "";

	ASSERT_OK(image_challenge_parse(s, strlen(s), &c, why, sizeof(why)), s);
	cr_assert_eq(c.scheme, scheme, "%s: scheme %d", s, c.scheme);
	ASSERT_STREQ(c.realm, realm, s);
	ASSERT_STREQ(c.service, service, s);
	ASSERT_STREQ(c.scope, scope, s);
	ASSERT_STREQ(c.error, error, s);
}

Test(image_challenge, accepted)
{
	chal_ok("Bearer realm=\"https://auth.example/token\",service=\"registry.example\",scope=\"repository:a/b:pull\"",
		IMAGE_AUTH_BEARER, "https://auth.example/token", "registry.example", "repository:a/b:pull", "");
	chal_ok("Basic realm=\"Registry Realm\"", IMAGE_AUTH_BASIC, "Registry Realm", "", "", "");
	chal_ok("bearer REALM=\"r\" , Service=svc", IMAGE_AUTH_BEARER, "r", "svc", "", "");
	chal_ok("Bearer realm=\"x\",error=\"insufficient_scope\"", IMAGE_AUTH_BEARER, "x", "", "", "insufficient_scope");
	chal_ok("Bearer realm=\"a\\\"b\\\\c\"", IMAGE_AUTH_BEARER, "a\"b\\c", "", "", "");
	/* several challenges: Bearer is preferred wherever it stands */
	chal_ok("Basic realm=\"a\", Bearer realm=\"b\",service=\"s\"", IMAGE_AUTH_BEARER, "b", "s", "", "");
	chal_ok("Bearer realm=\"b\", Basic realm=\"a\"", IMAGE_AUTH_BEARER, "b", "", "", "");
	chal_ok("Newauth foo=\"bar\", Basic realm=\"a\"", IMAGE_AUTH_BASIC, "a", "", "", "");
	chal_ok("Negotiate, Basic realm=\"a\"", IMAGE_AUTH_BASIC, "a", "", "", "");
	chal_ok("Bearer realm=\"x\",other=\"ignored\",yet=another", IMAGE_AUTH_BEARER, "x", "", "", "");
}

Test(image_challenge, refused)
{
	static const char *bad[] = {
		"Bearer realm=\"x",                      /* unterminated */
		"Bearer realm=\"a\",realm=\"b\"",        /* duplicate */
		"Bearer service=\"s\"",                  /* no realm */
		"Basic",                                 /* no realm */
		"Bearer realm=\"\"",                     /* empty realm */
		"Bearer realm",                          /* no '=' */
		"Bearer realm=",                         /* no value */
		"Bearer realm=\"a\x01\"",                /* control character */
		"Bearer realm=\"a\nb\"",                 /* newline */
		"Bearer realm=\"caf\xc3\xa9\"",          /* obs-text */
		"Bearer realm=\"a\" service=\"s\"",      /* no comma */
		"Bearer realm=\"a\"x",                   /* garbage after the string */
		"Bearer=realm",                          /* no scheme */
		"Bearer realm=\"a\\",                    /* dangling escape */
		"\"Bearer\" realm=\"a\"",                /* quoted scheme */
		"Bearer realm=abc==",                    /* token68 */
	};
	char why[256];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct image_challenge c;

		why[0] = '\0';
		ASSERT_ERR(image_challenge_parse(bad[i], strlen(bad[i]), &c, why, sizeof(why)), -FLASH_E_IMAGE_CHALLENGE,
			   bad[i]);
		cr_assert(why[0], "%s: a reason", bad[i]);
	}
}

/* The token service's answer: "token", else "access_token"; a token is
 * 1..IMAGE_TOKEN_MAX bytes of RFC 6750's b64token set. */
Test(image_token, reply)
{
	static const char *const bad[] = {
		"", "[]", "\"tok\"", "{}", "{\"token\":\"\"}", "{\"token\":\"a b\"}", "{\"token\":\"a\\u0000b\"}",
		"{\"token\":\"ab\\n\"}", "{\"token\":\"a\",\"token\":\"b\"}", "{\"token\":\"a\"", "{\"token\":1}",
		"{\"token\":\"caf\u00e9\"}",
		/* a token present but unusable is not replaced by access_token */
		"{\"token\":\"a;b\",\"access_token\":\"ok\"}",
	};
	char why[256], *tok = NULL, *s;
	size_t n;

	s = "{\"token\":\"a.b-c_~+/=\",\"expires_in\":300}";
	ASSERT_OK(image_token_reply_parse(s, strlen(s), &tok, why, sizeof(why)), why);
	cr_assert_str_eq(tok, "a.b-c_~+/=");
	free(tok);
	tok = NULL;
	s = "{\"token\":7,\"access_token\":\"xyz\"}";
	ASSERT_OK(image_token_reply_parse(s, strlen(s), &tok, why, sizeof(why)), why);
	cr_assert_str_eq(tok, "xyz");
	free(tok);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		tok = NULL;
		why[0] = '\0';
		ASSERT_ERR(image_token_reply_parse(bad[i], strlen(bad[i]), &tok, why, sizeof(why)),
			   -FLASH_E_IMAGE_CHALLENGE, bad[i]);
		cr_assert(why[0] && !tok, "%s: a reason, no token", bad[i]);
	}
	/* the longest token, then one byte more */
	s = malloc(IMAGE_TOKEN_MAX + 32);
	cr_assert(s);
	n = (size_t)sprintf(s, "{\"token\":\"");
	memset(s + n, 'A', IMAGE_TOKEN_MAX);
	strcpy(s + n + IMAGE_TOKEN_MAX, "\"}");
	tok = NULL;
	ASSERT_OK(image_token_reply_parse(s, strlen(s), &tok, why, sizeof(why)), "token of IMAGE_TOKEN_MAX");
	cr_assert_eq(strlen(tok), IMAGE_TOKEN_MAX);
	free(tok);
	tok = NULL;
	memset(s + n, 'A', IMAGE_TOKEN_MAX + 1);
	strcpy(s + n + IMAGE_TOKEN_MAX + 1, "\"}");
	ASSERT_ERR(image_token_reply_parse(s, strlen(s), &tok, why, sizeof(why)), -FLASH_E_IMAGE_CHALLENGE, "too long");
	cr_assert_null(tok);
	free(s);
}

Test(image_challenge, bounds)
{
	char *s = malloc(IMAGE_CHALLENGE_MAX + 64);
	struct image_challenge c;
	size_t n;

	cr_assert(s);
	/* a realm one byte longer than its buffer */
	n = (size_t)sprintf(s, "Bearer realm=\"");
	memset(s + n, 'r', IMAGE_CHALLENGE_PARAM_MAX);
	n += IMAGE_CHALLENGE_PARAM_MAX;
	strcpy(s + n, "\"");
	ASSERT_ERR(image_challenge_parse(s, strlen(s), &c, NULL, 0), -FLASH_E_IMAGE_CHALLENGE, "long realm");
	/* the longest realm that fits */
	s[n - 1] = '"';
	s[n] = '\0';
	ASSERT_OK(image_challenge_parse(s, strlen(s), &c, NULL, 0), "realm of PARAM_MAX - 1");
	cr_assert_eq(strlen(c.realm), IMAGE_CHALLENGE_PARAM_MAX - 1);
	/* the whole header over the limit */
	memset(s, ' ', IMAGE_CHALLENGE_MAX + 1);
	ASSERT_ERR(image_challenge_parse(s, IMAGE_CHALLENGE_MAX + 1, &c, NULL, 0), -FLASH_E_IMAGE_CHALLENGE, "long");
	/* embedded NUL inside the given length */
	ASSERT_ERR(image_challenge_parse("Bearer realm=\"a\0b\"", 18, &c, NULL, 0), -FLASH_E_IMAGE_CHALLENGE, "NUL");
	free(s);
}

Test(image_challenge, no_known_scheme)
{
	struct image_challenge c;

	ASSERT_ERR(image_challenge_parse("Negotiate", 9, &c, NULL, 0), -FLASH_E_IMAGE_UNAUTHORIZED, "unknown only");
	ASSERT_ERR(image_challenge_parse("", 0, &c, NULL, 0), -FLASH_E_IMAGE_UNAUTHORIZED, "empty");
}

/* ---------------------------------------------------------------- media types */

Test(image_media, names)
{
	static const char *const four[] = { OCI_M, OCI_I, DOCKER_M, DOCKER_L };

	cr_assert_eq(image_media_parse(OCI_M, strlen(OCI_M)), IMAGE_MEDIA_OCI_MANIFEST);
	cr_assert_eq(image_media_parse(OCI_I, strlen(OCI_I)), IMAGE_MEDIA_OCI_INDEX);
	cr_assert_eq(image_media_parse(DOCKER_M, strlen(DOCKER_M)), IMAGE_MEDIA_DOCKER_MANIFEST);
	cr_assert_eq(image_media_parse(DOCKER_L, strlen(DOCKER_L)), IMAGE_MEDIA_DOCKER_LIST);
	cr_assert_eq(image_media_parse(OCI_M "; charset=utf-8", strlen(OCI_M) + 15), IMAGE_MEDIA_OCI_MANIFEST);
	cr_assert_eq(image_media_parse("Application/VND.OCI.image.manifest.v1+JSON", 42), IMAGE_MEDIA_OCI_MANIFEST);
	cr_assert_eq(image_media_parse("application/vnd.docker.distribution.manifest.v1+prettyjws", 57),
		     IMAGE_MEDIA_UNKNOWN, "schema1 is not accepted");
	cr_assert_eq(image_media_parse("application/json", 16), IMAGE_MEDIA_UNKNOWN);
	cr_assert_eq(image_media_parse(OCI_M "x", strlen(OCI_M) + 1), IMAGE_MEDIA_UNKNOWN, "no prefix match");
	cr_assert_eq(image_media_parse("", 0), IMAGE_MEDIA_UNKNOWN);
	cr_assert_eq(image_media_parse("application/vnd.docker.image.rootfs.diff.tar.gzip", 49), IMAGE_MEDIA_LAYER_GZIP);
	cr_assert_eq(image_media_parse("application/vnd.oci.image.layer.v1.tar+zstd", 43), IMAGE_MEDIA_LAYER_ZSTD);
	cr_assert_eq(image_media_parse("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", 57),
		     IMAGE_MEDIA_LAYER_FOREIGN);
	for (size_t i = 0; i < 4; i++)
		cr_assert(strstr(image_accept_manifests, four[i]), "Accept has %s", four[i]);
	cr_assert(image_media_is_manifest(IMAGE_MEDIA_DOCKER_MANIFEST) && !image_media_is_manifest(IMAGE_MEDIA_OCI_INDEX));
	cr_assert(image_media_is_index(IMAGE_MEDIA_DOCKER_LIST) && !image_media_is_index(IMAGE_MEDIA_OCI_MANIFEST));
}

/* ---------------------------------------------------------------- manifests */

#define CFG_DESC "{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:" D64 "\",\"size\":%s}"
#define LAYER_DESC "{\"mediaType\":\"%s\",\"digest\":\"sha256:" D64 "\",\"size\":%s}"

static int manifest_try(const char *text, enum image_media media, struct image_manifest *m)
{
	char why[512] = "";
	int rc = image_manifest_parse(text, strlen(text), media, m, why, sizeof(why));

	cr_assert(rc == 0 || why[0], "a failure says why: %s", text);
	return rc;
}

Test(image_manifest, oci_and_docker)
{
	struct image_manifest m;
	char text[2048];

	snprintf(text, sizeof(text), "{\"schemaVersion\":2,\"mediaType\":\"" OCI_M "\",\"config\":" CFG_DESC
		 ",\"layers\":[" LAYER_DESC "," LAYER_DESC "]}",
		 "10", "application/vnd.oci.image.layer.v1.tar+gzip", "100", "application/vnd.oci.image.layer.v1.tar", "7");
	ASSERT_OK(manifest_try(text, IMAGE_MEDIA_OCI_MANIFEST, &m), "OCI");
	cr_assert_eq(m.n_layers, 2);
	cr_assert_eq(m.config.size, 10);
	cr_assert_eq(m.layers[0].size, 100);
	cr_assert_eq(m.layers[0].media, IMAGE_MEDIA_LAYER_GZIP);
	cr_assert_eq(m.layers[1].media, IMAGE_MEDIA_LAYER_TAR);
	ASSERT_STREQ(m.layers[1].digest, "sha256:" D64, "digest");
	image_manifest_clear(&m);

	/* OCI without mediaType is fine; Docker needs it */
	snprintf(text, sizeof(text), "{\"schemaVersion\":2,\"config\":" CFG_DESC ",\"layers\":[]}", "3");
	ASSERT_OK(manifest_try(text, IMAGE_MEDIA_OCI_MANIFEST, &m), "OCI without mediaType");
	cr_assert_eq(m.n_layers, 0);
	image_manifest_clear(&m);
	ASSERT_ERR(manifest_try(text, IMAGE_MEDIA_DOCKER_MANIFEST, &m), -FLASH_E_IMAGE_MANIFEST, "Docker without mediaType");

	snprintf(text, sizeof(text),
		 "{\"schemaVersion\":2,\"mediaType\":\"" DOCKER_M "\",\"config\":{\"mediaType\":"
		 "\"application/vnd.docker.container.image.v1+json\",\"digest\":\"sha256:" D64 "\",\"size\":5},"
		 "\"layers\":[" LAYER_DESC "]}",
		 "application/vnd.docker.image.rootfs.diff.tar.gzip", "9");
	ASSERT_OK(manifest_try(text, IMAGE_MEDIA_DOCKER_MANIFEST, &m), "Docker v2");
	cr_assert_eq(m.layers[0].media, IMAGE_MEDIA_LAYER_GZIP);
	image_manifest_clear(&m);
}

Test(image_manifest, refused)
{
	struct image_manifest m;
	char text[2048];
	struct {
		const char *cfg_size, *layer_type, *layer_size, *prefix;
		enum image_media media;
		int rc;
	} cases[] = {
		{ "1", "application/vnd.oci.image.layer.v1.tar", "-1", "", IMAGE_MEDIA_OCI_MANIFEST, -FLASH_E_IMAGE_MANIFEST },
		{ "1", "application/vnd.oci.image.layer.v1.tar", "1.5", "", IMAGE_MEDIA_OCI_MANIFEST, -FLASH_E_IMAGE_MANIFEST },
		{ "1", "application/vnd.oci.image.layer.v1.tar", "2199023255553", "", IMAGE_MEDIA_OCI_MANIFEST,
		  -FLASH_E_IMAGE_MANIFEST },
		{ "1", "application/vnd.oci.image.layer.v1.tar", "\"1\"", "", IMAGE_MEDIA_OCI_MANIFEST, -FLASH_E_IMAGE_MANIFEST },
		{ "1", "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", "1", "", IMAGE_MEDIA_OCI_MANIFEST,
		  -FLASH_E_IMAGE_MEDIA_TYPE },
		{ "1", "application/x-tar", "1", "", IMAGE_MEDIA_OCI_MANIFEST, -FLASH_E_IMAGE_MEDIA_TYPE },
		{ "1", OCI_M, "1", "", IMAGE_MEDIA_OCI_MANIFEST, -FLASH_E_IMAGE_MEDIA_TYPE },
		{ "9000000", "application/vnd.oci.image.layer.v1.tar", "1", "", IMAGE_MEDIA_OCI_MANIFEST, -FLASH_E_IMAGE_SIZE },
		{ "1", "application/vnd.oci.image.layer.v1.tar", "1", "\"mediaType\":\"" DOCKER_M "\",",
		  IMAGE_MEDIA_OCI_MANIFEST, -FLASH_E_IMAGE_MEDIA_TYPE },
		{ "1", "application/vnd.oci.image.layer.v1.tar", "1", "", IMAGE_MEDIA_OCI_INDEX, -FLASH_E_IMAGE_MEDIA_TYPE },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(text, sizeof(text), "{%s\"schemaVersion\":2,\"config\":" CFG_DESC ",\"layers\":[" LAYER_DESC "]}",
			 cases[i].prefix, cases[i].cfg_size, cases[i].layer_type, cases[i].layer_size);
		ASSERT_ERR(manifest_try(text, cases[i].media, &m), cases[i].rc, text);
	}
	ASSERT_ERR(manifest_try("{\"schemaVersion\":1,\"config\":{},\"layers\":[]}", IMAGE_MEDIA_OCI_MANIFEST, &m),
		   -FLASH_E_IMAGE_MANIFEST, "schema 1");
	ASSERT_ERR(manifest_try("[]", IMAGE_MEDIA_OCI_MANIFEST, &m), -FLASH_E_IMAGE_MANIFEST, "array");
	ASSERT_ERR(manifest_try("{\"schemaVersion\":2,\"schemaVersion\":2}", IMAGE_MEDIA_OCI_MANIFEST, &m),
		   -FLASH_E_IMAGE_MANIFEST, "duplicate key");
	ASSERT_ERR(manifest_try("{\"schemaVersion\":2} x", IMAGE_MEDIA_OCI_MANIFEST, &m), -FLASH_E_IMAGE_MANIFEST,
		   "trailing garbage");
	snprintf(text, sizeof(text), "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
		 "\"digest\":\"sha512:" D64 D64 "\",\"size\":1},\"layers\":[]}");
	ASSERT_ERR(manifest_try(text, IMAGE_MEDIA_OCI_MANIFEST, &m), -FLASH_E_IMAGE_MANIFEST, "sha512");
	snprintf(text, sizeof(text), "{\"schemaVersion\":2,\"config\":" CFG_DESC "}", "1");
	ASSERT_ERR(manifest_try(text, IMAGE_MEDIA_OCI_MANIFEST, &m), -FLASH_E_IMAGE_MANIFEST, "no layers");
}

Test(image_manifest, layer_count_bound)
{
	size_t cap = 300 * 200 + 512, n;
	char *text = malloc(cap);
	struct image_manifest m;

	cr_assert(text);
	n = (size_t)snprintf(text, cap, "{\"schemaVersion\":2,\"config\":" CFG_DESC ",\"layers\":[", "1");
	for (int i = 0; i <= FLASH_IMAGE_LAYERS_MAX; i++)
		n += (size_t)snprintf(text + n, cap - n, "%s" LAYER_DESC, i ? "," : "",
				      "application/vnd.oci.image.layer.v1.tar", "1");
	snprintf(text + n, cap - n, "]}");
	ASSERT_ERR(manifest_try(text, IMAGE_MEDIA_OCI_MANIFEST, &m), -FLASH_E_IMAGE_SIZE, "257 layers");
	free(text);
}

/* ---------------------------------------------------------------- indexes */

#define ENTRY(os, arch, hex) \
	"{\"mediaType\":\"" OCI_M "\",\"digest\":\"sha256:" hex "\",\"size\":50,\"platform\":{\"os\":\"" os \
	"\",\"architecture\":\"" arch "\"}}"
#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"
#define H3 "3333333333333333333333333333333333333333333333333333333333333333"

Test(image_index, platform_selection)
{
	const char *text = "{\"schemaVersion\":2,\"mediaType\":\"" OCI_I "\",\"manifests\":[" ENTRY("linux", "arm64", H1)
			   "," ENTRY("windows", "amd64", H2) "," ENTRY("linux", "amd64", H3) "]}";
	struct image_desc d;
	char why[512] = "";

	ASSERT_OK(image_index_select(text, strlen(text), IMAGE_MEDIA_OCI_INDEX, "linux/amd64", NULL, &d, why,
				     sizeof(why)), "linux/amd64");
	ASSERT_STREQ(d.digest, "sha256:" H3, "the amd64 entry");
	cr_assert_eq(d.size, 50);
	ASSERT_OK(image_index_select(text, strlen(text), IMAGE_MEDIA_OCI_INDEX, "linux/arm64", NULL, &d, why,
				     sizeof(why)), "linux/arm64");
	ASSERT_STREQ(d.digest, "sha256:" H1, "the arm64 entry");
	ASSERT_ERR(image_index_select(text, strlen(text), IMAGE_MEDIA_OCI_INDEX, "linux/s390x", NULL, &d, why,
				      sizeof(why)), -FLASH_E_IMAGE_PLATFORM, "none");
	cr_assert(strstr(why, "linux/arm64") && strstr(why, "windows/amd64"), "lists what there is: %s", why);
	ASSERT_ERR(image_index_select(text, strlen(text), IMAGE_MEDIA_DOCKER_LIST, "linux/amd64", NULL, &d, why,
				      sizeof(why)), -FLASH_E_IMAGE_MEDIA_TYPE, "mediaType disagrees with Content-Type");
	ASSERT_ERR(image_index_select(text, strlen(text), IMAGE_MEDIA_OCI_MANIFEST, "linux/amd64", NULL, &d, why,
				      sizeof(why)), -FLASH_E_IMAGE_MEDIA_TYPE, "not an index type");
}

Test(image_index, variants_and_tags)
{
	const char *text = "{\"schemaVersion\":2,\"manifests\":["
			   "{\"mediaType\":\"" OCI_M "\",\"digest\":\"sha256:" H1 "\",\"size\":5,\"platform\":"
			   "{\"os\":\"linux\",\"architecture\":\"arm\",\"variant\":\"v6\"},"
			   "\"annotations\":{\"org.opencontainers.image.ref.name\":\"six\"}},"
			   "{\"mediaType\":\"" OCI_M "\",\"digest\":\"sha256:" H2 "\",\"size\":6,\"platform\":"
			   "{\"os\":\"linux\",\"architecture\":\"arm\",\"variant\":\"v7\"},"
			   "\"annotations\":{\"org.opencontainers.image.ref.name\":\"seven\"}}]}";
	struct image_desc d;
	char why[512];

	ASSERT_OK(image_index_select(text, strlen(text), IMAGE_MEDIA_OCI_INDEX, "linux/arm/v7", NULL, &d, why,
				     sizeof(why)), "variant");
	ASSERT_STREQ(d.digest, "sha256:" H2, "v7");
	ASSERT_OK(image_index_select(text, strlen(text), IMAGE_MEDIA_OCI_INDEX, NULL, "six", &d, why, sizeof(why)),
		  "tag");
	ASSERT_STREQ(d.digest, "sha256:" H1, "six");
	ASSERT_ERR(image_index_select(text, strlen(text), IMAGE_MEDIA_OCI_INDEX, NULL, "", &d, why, sizeof(why)),
		   -FLASH_E_IMAGE_PLATFORM, "no tag but two images");
	ASSERT_ERR(image_index_select(text, strlen(text), IMAGE_MEDIA_OCI_INDEX, NULL, "eight", &d, why, sizeof(why)),
		   -FLASH_E_IMAGE_PLATFORM, "unknown tag");
	cr_assert(strstr(why, "six") && strstr(why, "seven"), "lists the tags: %s", why);
}

Test(image_index, refused_entries)
{
	const char *big = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"" OCI_M "\",\"digest\":\"sha256:" H1
			  "\",\"size\":4194305,\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
	const char *layer = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
			    "\"digest\":\"sha256:" H1 "\",\"size\":4}]}";
	const char *noarr = "{\"schemaVersion\":2,\"manifests\":{}}";
	struct image_desc d;

	ASSERT_ERR(image_index_select(big, strlen(big), IMAGE_MEDIA_OCI_INDEX, "linux/amd64", NULL, &d, NULL, 0),
		   -FLASH_E_IMAGE_SIZE, "child over the manifest bound");
	ASSERT_ERR(image_index_select(layer, strlen(layer), IMAGE_MEDIA_OCI_INDEX, "linux/amd64", NULL, &d, NULL, 0),
		   -FLASH_E_IMAGE_MEDIA_TYPE, "a layer in an index");
	ASSERT_ERR(image_index_select(noarr, strlen(noarr), IMAGE_MEDIA_OCI_INDEX, "linux/amd64", NULL, &d, NULL, 0),
		   -FLASH_E_IMAGE_MANIFEST, "manifests not an array");
}

Test(image_config, platform)
{
	const char *amd = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\"}}";
	const char *arm = "{\"architecture\":\"arm64\",\"os\":\"linux\"}";
	char why[256];

	ASSERT_OK(image_config_check(amd, strlen(amd), "linux/amd64", why, sizeof(why)), "amd64");
	ASSERT_ERR(image_config_check(arm, strlen(arm), "linux/amd64", why, sizeof(why)), -FLASH_E_IMAGE_PLATFORM, "arm64");
	cr_assert(strstr(why, "linux/arm64"), "%s", why);
	ASSERT_ERR(image_config_check("{}", 2, "linux/amd64", why, sizeof(why)), -FLASH_E_IMAGE_MANIFEST, "missing");
	ASSERT_ERR(image_config_check("{", 1, "linux/amd64", why, sizeof(why)), -FLASH_E_IMAGE_MANIFEST, "not JSON");
}

/* ---------------------------------------------------------------- digests and sinks */

Test(image_sink, digest_and_bound)
{
	struct image_sink s;
	char d[IMAGE_DIGEST_LEN + 1];

	image_sha256("abc", 3, d);
	ASSERT_STREQ(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "FIPS 180-2 abc");
	cr_assert(image_digest_valid(d));
	cr_assert(!image_digest_valid("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
	image_sink_init(&s, -1, 5);
	cr_assert(image_sink_write(&s, "ab", 2));
	cr_assert(image_sink_write(&s, "c", 1));
	cr_assert(!image_sink_write(&s, "def", 3), "past the bound");
	cr_assert(s.overflow);
	cr_assert_eq(s.written, 3);
	image_sink_digest(&s, d);
	ASSERT_STREQ(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "hash of what was kept");
	ASSERT_STREQ(s.buf, "abc", "buffer");
	image_sink_clear(&s);
}

/* ---------------------------------------------------------------- unpacking */

struct unpack_fixture {
	char *dir, *root, *layer;
};

static void fixture_init(struct unpack_fixture *f)
{
	f->dir = test_tmpdir("unpack");
	cr_assert(asprintf(&f->root, "%s/root", f->dir) > 0);
	cr_assert(asprintf(&f->layer, "%s/layer.tar", f->dir) > 0);
	cr_assert(mkdir(f->root, 0755) == 0);
}

static void fixture_fini(struct unpack_fixture *f)
{
	rm_rf(f->dir);
	free(f->dir);
	free(f->root);
	free(f->layer);
}

static int unpack_items(struct unpack_fixture *f, const struct tar_item *items, size_t n, bool gzip,
			struct flash_diag *diag)
{
	tar_write(f->layer, items, n, gzip);
	return flash_image_layer_unpack(f->layer, f->root, NULL, diag);
}

Test(image_unpack, files_dirs_links_modes)
{
	struct unpack_fixture f;
	const struct tar_item items[] = {
		{ 'd', "./", NULL, 0755 },
		{ 'd', "./bin", NULL, 0755 },
		{ 'f', "./bin/tool", "#!/bin/sh\n", 0755 },
		{ 'f', "bin/suid", "x", 04755 },
		{ 'f', "etc//conf", "k=v\n", 0640 },
		{ 'l', "bin/sh", "/bin/tool", 0 },
		{ 'h', "bin/tool2", "bin/tool", 0 },
	};
	char path[PATH_MAX], cwd_before[PATH_MAX], cwd_after[PATH_MAX], target[64];
	struct stat st, st2;
	ssize_t n;

	fixture_init(&f);
	cr_assert(getcwd(cwd_before, sizeof(cwd_before)));
	ASSERT_OK(unpack_items(&f, items, ARRAY_SIZE(items), true, NULL), "unpack gzip layer");
	cr_assert(getcwd(cwd_after, sizeof(cwd_after)));
	ASSERT_STREQ(cwd_after, cwd_before, "the process's working directory is untouched");
	snprintf(path, sizeof(path), "%s/bin/tool", f.root);
	cr_assert(stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0755, "tool mode %o",
		  st.st_mode & 07777);
	snprintf(path, sizeof(path), "%s/bin/suid", f.root);
	cr_assert(stat(path, &st2) == 0 && (st2.st_mode & 07777) == 0755, "setuid stripped: %o", st2.st_mode & 07777);
	snprintf(path, sizeof(path), "%s/etc/conf", f.root);
	cr_assert(stat(path, &st2) == 0 && (st2.st_mode & 0777) == 0640, "conf mode %o", st2.st_mode & 0777);
	cr_assert(st2.st_uid == geteuid(), "owned by the caller");
	snprintf(path, sizeof(path), "%s/bin/sh", f.root);
	n = readlink(path, target, sizeof(target) - 1);
	cr_assert(n > 0);
	target[n] = '\0';
	ASSERT_STREQ(target, "/bin/tool", "absolute symlink target kept");
	snprintf(path, sizeof(path), "%s/bin/tool2", f.root);
	cr_assert(stat(path, &st2) == 0 && st2.st_ino == st.st_ino, "hard link to the same inode");
	fixture_fini(&f);
}

static void expect_unsafe(const struct tar_item *items, size_t n, const char *outside, const char *what)
{
	struct unpack_fixture f;
	struct flash_diag *diag;

	fixture_init(&f);
	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_ERR(unpack_items(&f, items, n, false, diag), -FLASH_E_IMAGE_UNSAFE_ENTRY, what);
	cr_assert_eq(flash_diag_errors(diag), 1, "%s: one error", what);
	ASSERT_STREQ(flash_diag_get(diag, 0)->code, "image-unsafe-entry", what);
	if (outside)
		cr_assert(!file_exists(f.dir, outside), "%s: nothing written outside the root (%s)", what, outside);
	flash_diag_free(diag);
	fixture_fini(&f);
}

Test(image_unpack, traversal_refused)
{
	const struct tar_item dotdot[] = { { 'f', "../evil", "x", 0 } };
	const struct tar_item inner[] = { { 'd', "a", NULL, 0 }, { 'f', "a/../../evil", "x", 0 } };
	const struct tar_item absolute[] = { { 'f', "/evil", "x", 0 } };
	const struct tar_item hard[] = { { 'h', "link", "../evil", 0 } };
	const struct tar_item hard_abs[] = { { 'h', "link", "/etc/passwd", 0 } };

	expect_unsafe(dotdot, 1, "evil", "../evil");
	expect_unsafe(inner, 2, "evil", "a/../../evil");
	expect_unsafe(absolute, 1, NULL, "/evil");
	expect_unsafe(hard, 1, NULL, "hard link ../evil");
	expect_unsafe(hard_abs, 1, NULL, "hard link /etc/passwd");
}

Test(image_unpack, symlink_escape_refused)
{
	struct unpack_fixture f;
	char outside[PATH_MAX / 2];

	/* a symlink to a directory outside, then a file through it */
	fixture_init(&f);
	snprintf(outside, sizeof(outside), "%s/outside", f.dir);
	cr_assert(mkdir(outside, 0755) == 0);
	{
		const struct tar_item items[] = {
			{ 'l', "esc", outside, 0 },
			{ 'f', "esc/pwned", "x", 0 },
		};

		ASSERT_ERR(unpack_items(&f, items, 2, false, NULL), -FLASH_E_IMAGE_UNSAFE_ENTRY, "through a symlink");
	}
	cr_assert(!file_exists(outside, "pwned"), "nothing written through the symlink");
	fixture_fini(&f);
	{
		const struct tar_item items[] = {
			{ 'l', "up", "..", 0 },
			{ 'f', "up/pwned", "x", 0 },
		};
		const struct tar_item hard_sym[] = {
			{ 'l', "sym", "/etc/passwd", 0 },
			{ 'h', "hl", "sym", 0 },
		};

		expect_unsafe(items, 2, "pwned", "through a relative symlink");
		expect_unsafe(hard_sym, 2, NULL, "hard link to a symlink");
	}
}

Test(image_unpack, whiteouts_and_opaque_dirs)
{
	struct unpack_fixture f;
	const struct tar_item lower[] = {
		{ 'f', "a/file1", "1", 0 },   { 'f', "a/file2", "2", 0 },   { 'f', "b/keep", "k", 0 },
		{ 'f', "c/old", "o", 0 },     { 'f', "c/sub/deep", "d", 0 }, { 'f', "d/tree/x", "x", 0 },
		{ 'f', "e/.hidden", "h", 0 },
	};
	/* the opaque marker after the layer's own c/new: order in the tar
	 * does not matter, only lower layers are hidden */
	const struct tar_item upper[] = {
		{ 'f', "a/.wh.file1", "", 0 }, { 'f', "c/new", "n", 0 }, { 'f', "c/.wh..wh..opq", "", 0 },
		{ 'f', "./.wh.d", "", 0 },     { 'f', "x/.wh.absent", "", 0 }, { 'f', "e/.wh..hidden", "", 0 },
	};

	fixture_init(&f);
	ASSERT_OK(unpack_items(&f, lower, ARRAY_SIZE(lower), true, NULL), "lower layer");
	ASSERT_OK(unpack_items(&f, upper, ARRAY_SIZE(upper), false, NULL), "upper layer");
	cr_assert(!file_exists(f.root, "a/file1"), "whiteout removed a/file1");
	cr_assert(file_exists(f.root, "a/file2"), "a/file2 stays");
	cr_assert(file_exists(f.root, "b/keep"), "b untouched");
	cr_assert(!file_exists(f.root, "c/old") && !file_exists(f.root, "c/sub"), "opaque c hides the lower content");
	cr_assert(file_exists(f.root, "c/new"), "the layer's own c/new stays");
	cr_assert(!file_exists(f.root, "d"), "whiteout of a directory removes the tree");
	cr_assert(!file_exists(f.root, "e/.hidden"), "whiteout of a dot file");
	cr_assert(!file_exists(f.root, "a/.wh.file1") && !file_exists(f.root, "c/.wh..wh..opq"),
		  "whiteout markers are not extracted");
	cr_assert(!file_exists(f.root, "x"), "a whiteout for nothing creates nothing");
	fixture_fini(&f);
}

Test(image_unpack, malformed_whiteouts)
{
	const struct tar_item empty[] = { { 'f', "a/.wh.", "", 0 } };
	const struct tar_item reserved[] = { { 'f', ".wh..wh.plnk", "", 0 } };
	const struct tar_item dots[] = { { 'f', "a/.wh...", "", 0 } };

	expect_unsafe(empty, 1, NULL, ".wh. alone");
	expect_unsafe(reserved, 1, NULL, ".wh..wh. other than opq");
	expect_unsafe(dots, 1, NULL, ".wh...");
}

Test(image_unpack, whiteout_through_symlink_refused)
{
	struct unpack_fixture f;
	char outside[PATH_MAX / 2];

	fixture_init(&f);
	snprintf(outside, sizeof(outside), "%s/outside", f.dir);
	cr_assert(mkdir(outside, 0755) == 0);
	{
		char p[PATH_MAX * 2];
		const struct tar_item lower[] = { { 'l', "link", outside, 0 } };
		const struct tar_item upper[] = { { 'f', "link/.wh.victim", "", 0 } };

		snprintf(p, sizeof(p), "%s/victim", outside);
		file_put(p, "v", 1);
		ASSERT_OK(unpack_items(&f, lower, 1, false, NULL), "lower");
		ASSERT_ERR(unpack_items(&f, upper, 1, false, NULL), -FLASH_E_IMAGE_UNSAFE_ENTRY, "whiteout via symlink");
		cr_assert(file_exists(outside, "victim"), "the file outside survives");
	}
	fixture_fini(&f);
}

Test(image_unpack, devices_skipped_with_warning)
{
	struct unpack_fixture f;
	struct flash_diag *diag;
	const struct tar_item items[] = { { 'c', "dev/null", NULL, 0 }, { 'f', "ok", "1", 0 } };

	fixture_init(&f);
	ASSERT_OK(flash_diag_new(&diag), "diag");
	ASSERT_OK(unpack_items(&f, items, 2, false, diag), "unpack");
	cr_assert_eq(flash_diag_warnings(diag), 1, "one warning");
	ASSERT_STREQ(flash_diag_get(diag, 0)->code, "image-entry-skipped", "code");
	cr_assert(!file_exists(f.root, "dev/null") && file_exists(f.root, "ok"));
	flash_diag_free(diag);
	fixture_fini(&f);
}

Test(image_unpack, not_a_tar)
{
	struct unpack_fixture f;

	fixture_init(&f);
	file_put(f.layer, "this is not a tar stream at all, just words.....", 48);
	ASSERT_ERR(flash_image_layer_unpack(f.layer, f.root, NULL, NULL), -FLASH_E_IMAGE_LAYOUT, "text");
	ASSERT_ERR(flash_image_layer_unpack(f.dir, f.root, NULL, NULL), -EINVAL, "a directory as layer");
	ASSERT_ERR(flash_image_layer_unpack(f.layer, f.layer, NULL, NULL), -ENOTDIR, "a file as root");
	ASSERT_ERR(flash_image_layer_unpack(NULL, f.root, NULL, NULL), -EINVAL, "NULL");
	fixture_fini(&f);
}

/* ---------------------------------------------------------------- layouts */

struct layout {
	char *dir;
	char manifest[72], config[72], layer[2][72];
	size_t manifest_size, config_size, layer_size[2];
};

/* An OCI layout with two layers (the second whites out /etc/drop) tagged
 * "v1", with @arch in its config. */
static void layout_build(struct layout *l, const char *arch)
{
	const struct tar_item l1[] = { { 'f', "etc/keep", "keep\n", 0 }, { 'f', "etc/drop", "drop\n", 0 },
				       { 'f', "bin/app", "#!/bin/sh\necho hi\n", 0755 } };
	const struct tar_item l2[] = { { 'f', "etc/.wh.drop", "", 0 }, { 'f', "etc/new", "new\n", 0 } };
	char path[PATH_MAX], *cfg, *man, *idx, *data;
	size_t len;

	l->dir = test_tmpdir("layout");
	layout_init(l->dir);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/l%d.tar", l->dir, i);
		tar_write(path, i ? l2 : l1, i ? ARRAY_SIZE(l2) : ARRAY_SIZE(l1), true);
		data = file_slurp(path, &len);
		layout_blob(l->dir, data, len, l->layer[i]);
		l->layer_size[i] = len;
		free(data);
		unlink(path);
	}
	cr_assert(asprintf(&cfg, "{\"architecture\":\"%s\",\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
			   arch) > 0);
	l->config_size = strlen(cfg);
	layout_blob(l->dir, cfg, l->config_size, l->config);
	cr_assert(asprintf(&man,
			   "{\"schemaVersion\":2,\"mediaType\":\"" OCI_M "\",\"config\":{\"mediaType\":"
			   "\"application/vnd.oci.image.config.v1+json\",\"digest\":\"%s\",\"size\":%zu},\"layers\":["
			   "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"%s\",\"size\":%zu},"
			   "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"%s\",\"size\":%zu}]}",
			   l->config, l->config_size, l->layer[0], l->layer_size[0], l->layer[1], l->layer_size[1]) > 0);
	l->manifest_size = strlen(man);
	layout_blob(l->dir, man, l->manifest_size, l->manifest);
	cr_assert(asprintf(&idx,
			   "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"" OCI_M "\",\"digest\":\"%s\",\"size\":%zu,"
			   "\"annotations\":{\"org.opencontainers.image.ref.name\":\"v1\"}}]}",
			   l->manifest, l->manifest_size) > 0);
	snprintf(path, sizeof(path), "%s/index.json", l->dir);
	file_put(path, idx, strlen(idx));
	free(cfg);
	free(man);
	free(idx);
}

static void layout_free(struct layout *l)
{
	rm_rf(l->dir);
	free(l->dir);
}

static char *ref_of(const struct layout *l, const char *suffix)
{
	char *r;

	cr_assert(asprintf(&r, "oci:%s%s", l->dir, suffix) > 0);
	return r;
}

Test(image_layout, resolve_charge_pin)
{
	struct layout l;
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	char *ref, pinned[PATH_MAX];
	uint64_t charged;

	layout_build(&l, "amd64");
	ASSERT_OK(flash_diag_new(&diag), "diag");
	ref = ref_of(&l, ":v1");
	ASSERT_OK(flash_image_resolve(ref, NULL, &img, diag), "resolve");
	ASSERT_STREQ(flash_image_digest(img), l.manifest, "manifest digest");
	snprintf(pinned, sizeof(pinned), "oci:%s@%s", l.dir, l.manifest);
	ASSERT_STREQ(flash_image_pinned(img), pinned, "pinned");
	charged = l.config_size + l.layer_size[0] + l.layer_size[1];
	cr_assert_eq(flash_image_charged_bytes(img), charged, "config + compressed layers");
	ASSERT_STREQ(flash_image_config_digest(img), l.config, "config");
	ASSERT_STREQ(flash_image_media_type(img), OCI_M, "media type");
	cr_assert_eq(flash_image_layer_count(img), 2);
	ASSERT_STREQ(flash_image_layer_digest(img, 1), l.layer[1], "layer 1");
	cr_assert_eq(flash_image_layer_size(img, 0), l.layer_size[0]);
	cr_assert_null(flash_image_layer_digest(img, 2));

	/* the admission decision: fills or exceeds is refused, with both sizes */
	ASSERT_OK(flash_image_check_disk(flash_image_charged_bytes(img), charged + 1, diag), "fits");
	cr_assert_eq(flash_diag_errors(diag), 0);
	ASSERT_ERR(flash_image_check_disk(flash_image_charged_bytes(img), charged, diag), -FLASH_E_IMAGE_TOO_LARGE, "fills");
	cr_assert_eq(flash_diag_errors(diag), 1);
	cr_assert(strstr(flash_diag_get(diag, 0)->message, "fills"), "%s", flash_diag_get(diag, 0)->message);
	ASSERT_ERR(flash_image_check_disk(flash_image_charged_bytes(img), charged - 1, diag), -FLASH_E_IMAGE_TOO_LARGE, "exceeds");
	cr_assert_eq(flash_diag_errors(diag), 1, "the diag is refilled by each call");
	{
		const struct flash_diag_entry *e = flash_diag_get(diag, 0);
		char want[64];

		ASSERT_STREQ(e->code, "image-too-large", "code");
		ASSERT_STREQ(e->path, "image", "path");
		snprintf(want, sizeof(want), "needs %llu bytes", (unsigned long long)charged);
		cr_assert(strstr(e->message, want), "image size in: %s", e->message);
		snprintf(want, sizeof(want), "limit is %llu bytes", (unsigned long long)charged - 1);
		cr_assert(strstr(e->message, want), "limit in: %s", e->message);
	}
	ASSERT_ERR(flash_image_pull(img, NULL), -EINVAL, "no content store");
	flash_image_free(img);
	img = NULL;
	free(ref);

	/* without a tag: the only image; the digest form pins it */
	ref = ref_of(&l, "");
	ASSERT_OK(flash_image_resolve(ref, NULL, &img, NULL), "the only image");
	flash_image_free(img);
	img = NULL;
	free(ref);
	flash_diag_free(diag);
	layout_free(&l);
}

static void corrupt(const char *dir, const char *digest)
{
	char path[PATH_MAX];
	size_t len;
	char *data;

	snprintf(path, sizeof(path), "%s/blobs/sha256/%s", dir, digest + 7);
	data = file_slurp(path, &len);
	data[len / 2] ^= 0x01;
	file_put(path, data, len);
	free(data);
}

/* A failed call leaves exactly one entry at path "image", with a message. */
static void one_entry(const struct flash_diag *diag)
{
	const struct flash_diag_entry *e = flash_diag_get(diag, 0);

	cr_assert_eq(flash_diag_errors(diag), 1, "one entry per failed call, got %zu", flash_diag_errors(diag));
	ASSERT_STREQ(e->path, "image", "path");
	cr_assert(e->message && e->message[0] && strncmp(e->code, "image-", 6) == 0, "code %s, a message", e->code);
}

Test(image_layout, refusals)
{
	struct layout l;
	struct flash_image *img = NULL;
	struct flash_diag *diag;
	char *ref, path[PATH_MAX];
	FLASH_OPTS(flash_image_opts, arm, .platform = "linux/arm64");

	layout_build(&l, "amd64");
	ASSERT_OK(flash_diag_new(&diag), "diag");
	ref = ref_of(&l, ":nope");
	ASSERT_ERR(flash_image_resolve(ref, NULL, &img, diag), -FLASH_E_IMAGE_PLATFORM, "unknown tag");
	one_entry(diag);
	free(ref);
	ref = ref_of(&l, ":v1");
	ASSERT_ERR(flash_image_resolve(ref, &arm, &img, diag), -FLASH_E_IMAGE_PLATFORM, "config for another platform");
	one_entry(diag);
	cr_assert_null(img, "ret untouched");
	corrupt(l.dir, l.config);
	ASSERT_ERR(flash_image_resolve(ref, NULL, &img, diag), -FLASH_E_IMAGE_DIGEST, "corrupt config");
	one_entry(diag);
	corrupt(l.dir, l.config);
	corrupt(l.dir, l.manifest);
	ASSERT_ERR(flash_image_resolve(ref, NULL, &img, diag), -FLASH_E_IMAGE_DIGEST, "corrupt manifest");
	one_entry(diag);
	corrupt(l.dir, l.manifest);
	ASSERT_OK(flash_image_resolve(ref, NULL, &img, NULL), "restored");
	flash_image_free(img);
	img = NULL;
	/* a blob replaced by a symlink is not followed */
	snprintf(path, sizeof(path), "%s/blobs/sha256/%s", l.dir, l.config + 7);
	{
		char moved[PATH_MAX];

		snprintf(moved, sizeof(moved), "%s/moved", l.dir);
		cr_assert(rename(path, moved) == 0);
		cr_assert(symlink(moved, path) == 0);
		ASSERT_ERR(flash_image_resolve(ref, NULL, &img, diag), -ELOOP, "symlinked blob");
	one_entry(diag);
	}
	snprintf(path, sizeof(path), "%s/oci-layout", l.dir);
	cr_assert(unlink(path) == 0);
	ASSERT_ERR(flash_image_resolve(ref, NULL, &img, diag), -FLASH_E_IMAGE_LAYOUT, "no oci-layout");
	one_entry(diag);
	ASSERT_ERR(flash_image_resolve("oci:/nonexistent/layout", NULL, &img, diag), -FLASH_E_IMAGE_LAYOUT, "no dir");
	one_entry(diag);
	ASSERT_ERR(flash_image_resolve("Bad Ref", NULL, &img, diag), -FLASH_E_IMAGE_REFERENCE, "bad reference");
	one_entry(diag);
	free(ref);
	flash_diag_free(diag);
	layout_free(&l);
}

Test(image_layout, pull_and_unpack)
{
	struct layout l;
	struct flash_image *img = NULL;
	char *ref, *store, *rootfs, *blob;
	FLASH_OPTS(flash_image_opts, opts);
	struct stat st;

	layout_build(&l, "amd64");
	cr_assert(asprintf(&store, "%s/store", l.dir) > 0);
	cr_assert(asprintf(&rootfs, "%s/rootfs", l.dir) > 0);
	opts.content_store = store;
	ref = ref_of(&l, ":v1");
	ASSERT_OK(flash_image_resolve(ref, &opts, &img, NULL), "resolve into a store");
	ASSERT_OK(flash_image_blob_path(store, l.config, &blob), "path");
	cr_assert(stat(blob, &st) == 0 && (size_t)st.st_size == l.config_size, "config kept at resolve");
	free(blob);
	ASSERT_OK(flash_image_blob_path(store, l.manifest, &blob), "path");
	cr_assert(stat(blob, &st) == 0 && (size_t)st.st_size == l.manifest_size, "manifest kept at resolve");
	free(blob);
	ASSERT_ERR(flash_image_unpack(img, rootfs, NULL, NULL), -ENOENT, "layers not pulled yet");
	cr_assert(!file_exists(l.dir, "rootfs"), "no rootfs after a failed unpack");
	ASSERT_OK(flash_image_pull(img, NULL), "pull");
	ASSERT_OK(flash_image_pull(img, NULL), "pull again (nothing to fetch)");
	ASSERT_OK(flash_image_unpack(img, rootfs, NULL, NULL), "unpack");
	cr_assert(file_exists(rootfs, "etc/keep") && file_exists(rootfs, "etc/new") && file_exists(rootfs, "bin/app"));
	cr_assert(!file_exists(rootfs, "etc/drop"), "the second layer's whiteout applied");
	ASSERT_ERR(flash_image_unpack(img, rootfs, NULL, NULL), -EEXIST, "rootfs exists");
	ASSERT_ERR(flash_image_blob_path(store, "sha256:xyz", &blob), -EINVAL, "malformed digest");
	flash_image_free(img);
	free(ref);
	free(store);
	free(rootfs);
	layout_free(&l);
}

Test(image_layout, wrong_blob_refused_and_removed)
{
	struct layout l;
	struct flash_image *img = NULL;
	char *ref, *store, *blob, *tmps;
	FLASH_OPTS(flash_image_opts, opts);

	layout_build(&l, "amd64");
	cr_assert(asprintf(&store, "%s/store", l.dir) > 0);
	opts.content_store = store;
	ref = ref_of(&l, ":v1");
	ASSERT_OK(flash_image_resolve(ref, &opts, &img, NULL), "resolve");
	corrupt(l.dir, l.layer[1]);
	ASSERT_ERR(flash_image_pull(img, NULL), -FLASH_E_IMAGE_DIGEST, "corrupt layer");
	ASSERT_OK(flash_image_blob_path(store, l.layer[1], &blob), "path");
	cr_assert(access(blob, F_OK) != 0, "the wrong blob is not in the store");
	free(blob);
	cr_assert(asprintf(&tmps, "test -z \"$(ls -A '%s/blobs/sha256' | grep '^\\.tmp-')\"", store) > 0);
	cr_assert(system(tmps) == 0, "no temporary file left");
	free(tmps);
	ASSERT_OK(flash_image_blob_path(store, l.layer[0], &blob), "path");
	cr_assert(access(blob, F_OK) == 0, "the good layer before it is kept");
	free(blob);
	flash_image_free(img);
	free(ref);
	free(store);
	layout_free(&l);
}

Test(image_opts, arguments)
{
	struct flash_image *img = NULL;
	struct { struct flash_image_opts o; char tail[8]; } big = { .o = { .sz = sizeof(big) }, .tail = { 1 } };
	FLASH_OPTS(flash_image_opts, badplat, .platform = "linux");

	ASSERT_ERR(flash_image_resolve(NULL, NULL, &img, NULL), -EINVAL, "NULL reference");
	ASSERT_ERR(flash_image_resolve("a", NULL, NULL, NULL), -EINVAL, "NULL ret");
	ASSERT_ERR(flash_image_resolve("a", &big.o, &img, NULL), -EINVAL, "unknown non-zero tail");
	ASSERT_ERR(flash_image_resolve("a", &badplat, &img, NULL), -EINVAL, "platform without arch");
	ASSERT_ERR(flash_image_check_disk(0, 0, NULL), -FLASH_E_IMAGE_TOO_LARGE, "an empty image fills a zero limit");
	ASSERT_OK(flash_image_check_disk(0, 1, NULL), "an empty image fits one byte");
	ASSERT_ERR(flash_image_check_disk(UINT64_MAX, UINT64_MAX, NULL), -FLASH_E_IMAGE_TOO_LARGE, "UINT64_MAX fills");
	cr_assert_null(flash_image_digest(NULL));
	cr_assert_eq(flash_image_charged_bytes(NULL), 0);
	flash_image_free(NULL);
	ASSERT_STREQ(flash_strerror(-FLASH_E_IMAGE_TOO_LARGE), "image fills or exceeds the disk limit", "strerror");
	ASSERT_STREQ(flash_strerror(-FLASH_E_IMAGE_DIGEST), "image content does not match its digest", "strerror");
}

Test(image_unpack, upper_layer_never_writes_through_links)
{
	struct unpack_fixture f;
	char outside[PATH_MAX / 2], path[PATH_MAX * 2];
	size_t len;
	char *data;

	fixture_init(&f);
	snprintf(outside, sizeof(outside), "%s/outside-file", f.dir);
	file_put(outside, "precious", 8);
	{
		const struct tar_item lower[] = {
			{ 'f', "a", "old", 0 }, { 'h', "b", "a", 0 }, { 'l', "s", outside, 0 },
		};
		const struct tar_item upper[] = { { 'f', "b", "new", 0 }, { 'f', "s", "over", 0 } };

		ASSERT_OK(unpack_items(&f, lower, ARRAY_SIZE(lower), false, NULL), "lower");
		ASSERT_OK(unpack_items(&f, upper, ARRAY_SIZE(upper), false, NULL), "upper");
	}
	snprintf(path, sizeof(path), "%s/a", f.root);
	data = file_slurp(path, &len);
	ASSERT_STREQ(data, "old", "the hard link's other name keeps its content");
	free(data);
	snprintf(path, sizeof(path), "%s/b", f.root);
	data = file_slurp(path, &len);
	ASSERT_STREQ(data, "new", "b replaced");
	free(data);
	data = file_slurp(outside, &len);
	ASSERT_STREQ(data, "precious", "a file replacing a symlink does not write through it");
	free(data);
	fixture_fini(&f);
}

Test(image_unpack, bounds_on_what_layers_expand_to)
{
	struct unpack_fixture f;
	const struct tar_item items[] = {
		{ 'f', "a", "0123456789", 0 }, { 'd', "d", NULL, 0 }, { 'f', "d/b", "0123456789", 0 },
	};
	FLASH_OPTS(flash_image_unpack_opts, exact, .max_bytes = 20, .max_entries = 3);
	FLASH_OPTS(flash_image_unpack_opts, bytes, .max_bytes = 19);
	FLASH_OPTS(flash_image_unpack_opts, entries, .max_entries = 2);
	struct flash_diag *diag;

	ASSERT_OK(flash_diag_new(&diag), "diag");
	fixture_init(&f);
	tar_write(f.layer, items, ARRAY_SIZE(items), true);
	ASSERT_OK(flash_image_layer_unpack(f.layer, f.root, &exact, diag), "exactly at both bounds");
	fixture_fini(&f);
	fixture_init(&f);
	tar_write(f.layer, items, ARRAY_SIZE(items), true);
	ASSERT_ERR(flash_image_layer_unpack(f.layer, f.root, &bytes, diag), -FLASH_E_IMAGE_SIZE, "one byte over");
	ASSERT_STREQ(flash_diag_get(diag, 0)->code, "image-size", "code");
	cr_assert(strstr(flash_diag_get(diag, 0)->message, "d/b"), "names the entry: %s", flash_diag_get(diag, 0)->message);
	cr_assert(!file_exists(f.root, "d/b"), "the entry over the bound is not written");
	fixture_fini(&f);
	fixture_init(&f);
	tar_write(f.layer, items, ARRAY_SIZE(items), true);
	ASSERT_ERR(flash_image_layer_unpack(f.layer, f.root, &entries, diag), -FLASH_E_IMAGE_SIZE, "one entry over");
	cr_assert(!file_exists(f.root, "d/b"));
	fixture_fini(&f);
	flash_diag_free(diag);
}

Test(image_layout, unpack_bounds_hold_over_all_layers)
{
	struct layout l;
	struct flash_image *img = NULL;
	char *ref, *store, *rootfs;
	FLASH_OPTS(flash_image_opts, opts);
	/* layer 0 has 3 entries, layer 1 has 1 besides its whiteout */
	FLASH_OPTS(flash_image_unpack_opts, three, .max_entries = 3);
	FLASH_OPTS(flash_image_unpack_opts, four, .max_entries = 4);

	layout_build(&l, "amd64");
	cr_assert(asprintf(&store, "%s/store", l.dir) > 0);
	cr_assert(asprintf(&rootfs, "%s/rootfs", l.dir) > 0);
	opts.content_store = store;
	ref = ref_of(&l, ":v1");
	ASSERT_OK(flash_image_resolve(ref, &opts, &img, NULL), "resolve");
	ASSERT_OK(flash_image_pull(img, NULL), "pull");
	ASSERT_ERR(flash_image_unpack(img, rootfs, &three, NULL), -FLASH_E_IMAGE_SIZE, "the second layer crosses the bound");
	cr_assert(!file_exists(l.dir, "rootfs"), "no rootfs after a failed unpack");
	ASSERT_OK(flash_image_unpack(img, rootfs, &four, NULL), "all four entries");
	flash_image_free(img);
	free(ref);
	free(store);
	free(rootfs);
	layout_free(&l);
}

Test(image_unpack, bad_opts)
{
	struct { struct flash_image_unpack_opts o; char tail[8]; } big = { .o = { .sz = sizeof(big) }, .tail = { 1 } };

	ASSERT_ERR(flash_image_layer_unpack("/nonexistent", "/nonexistent", &big.o, NULL), -EINVAL, "unknown tail");
}
