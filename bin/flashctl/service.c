/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flashctl create | update | get | list | delete | usage | logs: the provider/v1
 * commands, sent through <flash/client.h>.  Exit codes (flashctl(1)):
 * 0 done, 1 refused by the operator, 2 usage or local error, 3 not found,
 * 4 not authorized, 5 operator unreachable or unavailable, 6 --wait ran
 * out of time.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <flash/auth.h>
#include <flash/client.h>
#include <flash/meter.h>

#include "flashctl.h"
#include "json.h"
#include "names.h"
#include "util.h"

#define SPEC_MAX (1u << 20)
#define DEFAULT_ENDPOINT "unix:/run/flash/flash-operator.sock"

enum {
	EXIT_REFUSED = 1,
	EXIT_NOT_FOUND = 3,
	EXIT_AUTH = 4,
	EXIT_UNAVAILABLE = 5,
	EXIT_WAIT_TIMEOUT = 6,
};

struct ctx {
	const struct flashctl_globals *g;
	const char *cmd;
	struct flash_client *client;
	struct flash_auth_signer *signer;
	const char *project; /* of the minted tokens, or NULL */
	const char *name;    /* the service's name when its id was derived from it */
};

static void ctx_done(struct ctx *x)
{
	flash_client_free(x->client);
	flash_auth_signer_free(x->signer);
}

/* The client: endpoint from --endpoint, $FLASH_ENDPOINT or the default
 * socket; credentials from --token-file (a token, or a private JWK to
 * mint tokens with). */
static int ctx_init(struct ctx *x, const struct flashctl_globals *g, const char *cmd, const char *project)
{
	const char *ep = g->endpoint ? g->endpoint : getenv("FLASH_ENDPOINT");
	struct flash_client_opts co = { .sz = sizeof(co), .endpoint = ep && ep[0] ? ep : DEFAULT_ENDPOINT,
					.ca_file = g->ca_file, .retries = 3 };
	int r;

	x->g = g;
	x->cmd = cmd;
	x->project = project;
	if (!g->token) {
		fprintf(stderr, "%s %s: --token-file is required\n", g->progname, cmd);
		return FLASHCTL_EXIT_USAGE;
	}
	r = flash_client_new(&co, &x->client);
	if (r < 0) {
		fprintf(stderr, "%s %s: --endpoint %s: expected http://HOST:PORT, https://HOST:PORT or unix:PATH\n",
			g->progname, cmd, co.endpoint);
		return FLASHCTL_EXIT_USAGE;
	}
	if (g->token[0] == '{') {
		const char *iss = g->issuer ? g->issuer : getenv("FLASH_ISSUER");
		const char *aud = g->audience ? g->audience : getenv("FLASH_AUDIENCE");

		struct flash_diag *diag = NULL;

		if (flash_diag_new(&diag) < 0)
			diag = NULL; /* out of memory: the refusal names the reason only */
		r = flash_auth_signer_parse(g->token, g->token_len, &x->signer, diag);
		if (r < 0) {
			fprintf(stderr, "%s %s: --token-file %s: not a token and not a signing key: %s\n", g->progname, cmd,
				g->token_file, flashctl_diag_message(diag)[0] ? flashctl_diag_message(diag) : flash_strerror(r));
			flash_diag_free(diag);
			return FLASHCTL_EXIT_USAGE;
		}
		flash_diag_free(diag);
		if (!g->organization_id || !iss || !aud) {
			fprintf(stderr, "%s %s: minting tokens with a signing key needs --organization-id, --issuer and --audience\n",
				g->progname, cmd);
			return FLASHCTL_EXIT_USAGE;
		}
		struct flash_client_identity id = { .sz = sizeof(id), .issuer = iss, .audience = aud,
						    .organization = g->organization_id, .project = project };
		r = flash_client_set_signer(x->client, x->signer, &id);
		if (r < 0) {
			fprintf(stderr, "%s %s: cannot mint tokens: the key needs a kid, ids 1..%d bytes\n", g->progname, cmd,
				FLASH_AUTH_TENANT_MAX);
			return FLASHCTL_EXIT_USAGE;
		}
	} else if (flash_client_set_token(x->client, g->token) < 0) {
		fprintf(stderr, "%s %s: --token-file %s: not a compact JWS token\n", g->progname, cmd, g->token_file);
		return FLASHCTL_EXIT_USAGE;
	}
	return FLASHCTL_EXIT_OK;
}

/* A transport error or an error answer, said on stderr; the exit code. */
static int report(struct ctx *x, int r, const struct flash_client_response *resp)
{
	int st;

	if (r < 0) {
		fprintf(stderr, "%s %s: cannot reach the operator: %s\n", x->g->progname, x->cmd, strerror(-r));
		return EXIT_UNAVAILABLE;
	}
	st = flash_client_response_status(resp);
	if (st < 400)
		return FLASHCTL_EXIT_OK;
	if (x->g->output != FLASHCTL_OUTPUT_TABLE)
		fputs(flash_client_response_body(resp, NULL), stdout);
	if (st == 404 && x->name)
		fprintf(stderr, "%s %s: %s: no such service\n", x->g->progname, x->cmd, x->name);
	else
		fprintf(stderr, "%s %s: %d %s: %s\n", x->g->progname, x->cmd, st,
			flash_client_response_error_code(resp) ? flash_client_response_error_code(resp) : "error",
			flash_client_response_error_message(resp) ? flash_client_response_error_message(resp) : "");
	/* Spec problems, one per line. */
	struct json_value *doc = NULL;
	const struct json_value *probs;
	size_t len;
	const char *body = flash_client_response_body(resp, &len);

	if (x->g->output == FLASHCTL_OUTPUT_TABLE && json_parse(body, len, NULL, &doc, NULL) == 0) {
		probs = json_get(json_get(doc, "error"), "problems");
		for (size_t i = 0; probs && probs->type == JSON_ARRAY && i < probs->u.array.n; i++) {
			const char *p = "", *m = "", *c = "";

			if (json_get_string(json_get(probs->u.array.items[i], "path"), &p) < 0 ||
			    json_get_string(json_get(probs->u.array.items[i], "message"), &m) < 0 ||
			    json_get_string(json_get(probs->u.array.items[i], "code"), &c) < 0)
				continue;
			fprintf(stderr, "  %s: %s [%s]\n", p, m, c);
		}
	}
	json_free(doc);
	switch (st) {
	case 404: return EXIT_NOT_FOUND;
	case 401:
	case 403: return EXIT_AUTH;
	case 503: return EXIT_UNAVAILABLE;
	default: return st >= 500 && st != 501 ? EXIT_UNAVAILABLE : EXIT_REFUSED;
	}
}

static const char *str_of(const struct json_value *v, const char *key)
{
	const char *s = NULL;

	return json_get_string(json_get(v, key), &s) == 0 ? s : "";
}

static uint64_t uint_of(const struct json_value *v, const char *key)
{
	uint64_t u = 0;

	return json_get_uint64(json_get(v, key), &u) == 0 ? u : 0;
}

static void print_ports(const struct json_value *svc)
{
	const struct json_value *pp = json_get(svc, "public_ports");

	if (!pp || pp->type != JSON_ARRAY || pp->u.array.n == 0) {
		printf("-");
		return;
	}
	for (size_t i = 0; i < pp->u.array.n; i++)
		printf("%s%s/%s=%" PRIu64, i ? "," : "", str_of(pp->u.array.items[i], "name"),
		       str_of(pp->u.array.items[i], "protocol"), uint_of(pp->u.array.items[i], "port"));
}

/* The spec's autoscaling bounds beside the autoscaler's last decision. */
static void print_autoscaling(const struct json_value *svc)
{
	const struct json_value *as = json_get(json_get(svc, "status"), "autoscaling");
	const struct json_value *sp = json_get(json_get(svc, "spec"), "autoscaling");

	if (!sp)
		return;
	printf("Autoscaling: %" PRIu64 "..%" PRIu64 " replicas at %" PRIu64 "%% CPU", uint_of(sp, "min_replicas"),
	       uint_of(sp, "max_replicas"), uint_of(sp, "target_cpu_percent"));
	if (as) {
		printf("; current %" PRIu64 ", desired %" PRIu64 ", CPU %" PRIu64 "%% over %" PRIu64 " measured (%s)",
		       uint_of(as, "current_replicas"), uint_of(as, "desired_replicas"), uint_of(as, "cpu_percent"),
		       uint_of(as, "measured_replicas"), str_of(as, "reason"));
		if (str_of(as, "last_scaled_at")[0])
			printf("; last scaled %s", str_of(as, "last_scaled_at"));
	}
	printf("\n");
}

static void print_service_table(const struct json_value *svc)
{
	const struct json_value *ev = json_get(svc, "events"), *status = json_get(svc, "status");

	printf("ID:          %s\n", str_of(svc, "id"));
	printf("Name:        %s\n", str_of(svc, "name"));
	printf("Project:     %s\n", str_of(svc, "project"));
	printf("Generation:  %" PRIu64 "\n", uint_of(svc, "generation"));
	printf("Operation:   %s\n", str_of(svc, "operation_id"));
	printf("Phase:       %s\n", str_of(status, "phase"));
	if (json_get(status, "replicas_wanted")) {
		const struct json_value *reps = json_get(status, "replicas");

		printf("Replicas:    %" PRIu64 "/%" PRIu64 " ready, %" PRIu64 " restarts\n", uint_of(status, "replicas_ready"),
		       uint_of(status, "replicas_wanted"), uint_of(status, "restarts"));
		for (size_t i = 0; reps && reps->type == JSON_ARRAY && i < reps->u.array.n; i++) {
			const struct json_value *r = reps->u.array.items[i];

			printf("  #%" PRIu64 " gen %" PRIu64 "  %-10s %-39s restarts %" PRIu64 "\n", uint_of(r, "index"),
			       uint_of(r, "generation"), str_of(r, "state"), str_of(r, "address"), uint_of(r, "restarts"));
		}
	}
	print_autoscaling(svc);
	if (str_of(status, "message")[0])
		printf("Message:     %s\n", str_of(status, "message"));
	{
		/* Kubernetes mode: the FlashService's conditions. */
		const struct json_value *conds = json_get(status, "conditions");

		for (size_t i = 0; conds && conds->type == JSON_ARRAY && i < conds->u.array.n; i++) {
			const struct json_value *c = conds->u.array.items[i];

			printf("%s %-11s %-5s %s%s%s\n", i ? "            " : "Conditions:", str_of(c, "type"),
			       str_of(c, "status"), str_of(c, "reason"), str_of(c, "message")[0] ? ": " : "",
			       str_of(c, "message"));
		}
	}
	printf("Image:       %s (%" PRIu64 " bytes charged)\n", str_of(json_get(svc, "image"), "pinned"),
	       uint_of(json_get(svc, "image"), "charged_bytes"));
	printf("Ports:       ");
	print_ports(svc);
	printf("\nUpdated:     %s\n", str_of(svc, "updated_at"));
	if (ev && ev->type == JSON_ARRAY && ev->u.array.n) {
		printf("Events:\n");
		for (size_t i = 0; i < ev->u.array.n; i++)
			printf("  %s  %-9s %s\n", str_of(ev->u.array.items[i], "time"), str_of(ev->u.array.items[i], "type"),
			       str_of(ev->u.array.items[i], "message"));
	}
}

static void print_list_table(const struct json_value *doc)
{
	const struct json_value *list = json_get(doc, "services");

	printf("%-36s %-24s %-10s %-14s %s\n", "ID", "NAME", "PHASE", "GENERATION", "PUBLIC PORTS");
	for (size_t i = 0; list && list->type == JSON_ARRAY && i < list->u.array.n; i++) {
		const struct json_value *s = list->u.array.items[i];

		printf("%-36s %-24s %-10s %-14" PRIu64 " ", str_of(s, "id"), str_of(s, "name"),
		       str_of(json_get(s, "status"), "phase"), uint_of(s, "generation"));
		print_ports(s);
		printf("\n");
	}
}

static void print_usage_table(const struct json_value *doc)
{
	const struct json_value *org = json_get(doc, "organization"), *list = json_get(doc, "services");
	int64_t cpu = 0, mem = 0, gpu = 0;

	json_get_int64(json_get(org, "cpu_millicore_seconds"), &cpu);
	json_get_int64(json_get(org, "memory_mib_seconds"), &mem);
	json_get_int64(json_get(org, "gpu_seconds"), &gpu);
	printf("Week %s (from %s), as of %s\n", str_of(doc, "week"), str_of(doc, "week_start"), str_of(doc, "as_of"));
	printf("%-36s %22s %20s %12s\n", "SCOPE", "CPU (millicore-s)", "MEMORY (MiB-s)", "GPU (s)");
	printf("%-36s %22" PRId64 " %20" PRId64 " %12" PRId64 "\n", "organization", cpu, mem, gpu);
	for (size_t i = 0; list && list->type == JSON_ARRAY && i < list->u.array.n; i++) {
		const struct json_value *u = json_get(list->u.array.items[i], "usage");

		cpu = mem = gpu = 0;
		json_get_int64(json_get(u, "cpu_millicore_seconds"), &cpu);
		json_get_int64(json_get(u, "memory_mib_seconds"), &mem);
		json_get_int64(json_get(u, "gpu_seconds"), &gpu);
		printf("%-36s %22" PRId64 " %20" PRId64 " %12" PRId64 "\n", str_of(list->u.array.items[i], "service_id"),
		       cpu, mem, gpu);
	}
}

enum shape { SHAPE_SERVICE, SHAPE_LIST, SHAPE_USAGE, SHAPE_DELETED };

/* Prints a successful answer in the chosen format. */
static int print_answer(struct ctx *x, const struct flash_client_response *resp, enum shape shape)
{
	struct json_value *doc = NULL;
	size_t len;
	const char *body = flash_client_response_body(resp, &len);

	if (x->g->output != FLASHCTL_OUTPUT_TABLE) {
		/* JSON is also YAML 1.2 (flashctl(1)). */
		fputs(body, stdout);
		return FLASHCTL_EXIT_OK;
	}
	if (json_parse(body, len, NULL, &doc, NULL) < 0) {
		fprintf(stderr, "%s %s: the operator's answer is not JSON\n", x->g->progname, x->cmd);
		return EXIT_UNAVAILABLE;
	}
	switch (shape) {
	case SHAPE_SERVICE: print_service_table(doc); break;
	case SHAPE_LIST: print_list_table(doc); break;
	case SHAPE_USAGE: print_usage_table(doc); break;
	case SHAPE_DELETED: printf("deleted %s (%s)\n", str_of(doc, "name"), str_of(doc, "id")); break;
	}
	json_free(doc);
	return FLASHCTL_EXIT_OK;
}

/* ID or NAME -> the id (a name is looked up in list). */
static int resolve(struct ctx *x, const char *what, char *ret, size_t size)
{
	struct flash_client_response *resp = NULL;
	struct json_value *doc = NULL;
	const struct json_value *list;
	size_t len, found = 0;
	int r, status;

	if (names_service_id_valid(what)) {
		snprintf(ret, size, "%s", what);
		return FLASHCTL_EXIT_OK;
	}
	/* Minting for one organization and project: the id is derived from
	 * the name (flash_client_service_id()), no list round trip.  A name
	 * with no service gets the operator's 404. */
	if (x->signer && x->project && size >= FLASH_CLIENT_SERVICE_ID_STRLEN &&
	    flash_client_service_id(x->g->organization_id, x->project, what, ret) == 0) {
		x->name = what;
		return FLASHCTL_EXIT_OK;
	}
	r = flash_client_list(x->client, &resp);
	status = report(x, r, resp);
	if (status == FLASHCTL_EXIT_OK) {
		const char *body = flash_client_response_body(resp, &len);

		if (json_parse(body, len, NULL, &doc, NULL) < 0) {
			status = EXIT_UNAVAILABLE;
		} else {
			list = json_get(doc, "services");
			for (size_t i = 0; list && list->type == JSON_ARRAY && i < list->u.array.n; i++)
				if (strcmp(str_of(list->u.array.items[i], "name"), what) == 0) {
					snprintf(ret, size, "%s", str_of(list->u.array.items[i], "id"));
					found++;
				}
			if (found != 1) {
				fprintf(stderr, "%s %s: %s: %s\n", x->g->progname, x->cmd, what,
					found ? "several services have this name (give the id)" : "no such service");
				status = EXIT_NOT_FOUND;
			}
		}
	}
	json_free(doc);
	flash_client_response_free(resp);
	return status;
}

int flashctl_open_service(const struct flashctl_globals *g, const char *cmd, const char *project, const char *target,
			  char *id, size_t id_size, struct flash_client **ret_client, struct flash_auth_signer **ret_signer)
{
	struct ctx x = { 0 };
	int status = ctx_init(&x, g, cmd, project);

	if (status == FLASHCTL_EXIT_OK)
		status = resolve(&x, target, id, id_size);
	if (status != FLASHCTL_EXIT_OK) {
		ctx_done(&x);
		return status;
	}
	*ret_client = x.client;
	*ret_signer = x.signer;
	return FLASHCTL_EXIT_OK;
}

/* --wait polls 20 ms after the answer, doubling up to 500 ms: a replica
 * is ready about 0.5 s after its create (bench/flash), which a poll each
 * second would see only at 1 s. */
#define WAIT_POLL_FIRST_MS 20u
#define WAIT_POLL_MAX_MS 500u

/* --wait: polls get until ready or failed, showing each new phase. */
static int wait_ready(struct ctx *x, const char *id, unsigned int timeout_s)
{
	char last[64] = "";
	time_t end = time(NULL) + timeout_s;
	unsigned int pause_ms = WAIT_POLL_FIRST_MS;

	for (;;) {
		struct flash_client_response *resp = NULL;
		struct json_value *doc = NULL;
		size_t len;
		int r = flash_client_get(x->client, id, &resp), status = report(x, r, resp);
		bool ready = false, failed = false;

		if (status != FLASHCTL_EXIT_OK) {
			flash_client_response_free(resp);
			return status;
		}
		const char *body = flash_client_response_body(resp, &len);
		if (json_parse(body, len, NULL, &doc, NULL) == 0) {
			const struct json_value *st = json_get(doc, "status");
			const char *phase = str_of(st, "phase");

			json_get_bool(json_get(st, "ready"), &ready);
			failed = strcmp(phase, "failed") == 0;
			if (strcmp(phase, last) != 0) {
				fprintf(stderr, "%s: %s: %s\n", x->g->progname, id, phase);
				snprintf(last, sizeof(last), "%s", phase);
			}
		}
		json_free(doc);
		flash_client_response_free(resp);
		if (ready)
			return FLASHCTL_EXIT_OK;
		if (failed)
			return EXIT_REFUSED;
		if (time(NULL) >= end) {
			fprintf(stderr, "%s %s: %s is not ready after %u s (phase %s)\n", x->g->progname, x->cmd, id, timeout_s,
				last);
			return EXIT_WAIT_TIMEOUT;
		}
		nanosleep(&(struct timespec){ .tv_sec = pause_ms / 1000, .tv_nsec = (long)(pause_ms % 1000) * 1000000 }, NULL);
		pause_ms = pause_ms * 2 > WAIT_POLL_MAX_MS ? WAIT_POLL_MAX_MS : pause_ms * 2;
	}
}

static uint64_t default_generation(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || !*s || *end || s[0] == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

static void cmd_usage(FILE *out, const char *progname, const char *cmd)
{
	if (strcmp(cmd, "create") == 0)
		fprintf(out, "Usage: %s create --name NAME --spec FILE [--generation N] [--wait [--timeout S]]\n", progname);
	else if (strcmp(cmd, "update") == 0)
		fprintf(out, "Usage: %s update ID|NAME --spec FILE [--generation N] [--wait [--timeout S]]\n", progname);
	else if (strcmp(cmd, "delete") == 0)
		fprintf(out, "Usage: %s delete ID|NAME [--generation N]\n", progname);
	else if (strcmp(cmd, "get") == 0)
		fprintf(out, "Usage: %s get ID|NAME [--wait [--timeout S]]\n", progname);
	else
		fprintf(out, "Usage: %s %s\n", progname, cmd);
	fprintf(out, "Global options (before the command): --endpoint, --organization-id, --project-id,\n"
		     "--token-file, --issuer, --audience, -o; see flashctl(1).\n");
}

int flashctl_service_main(int argc, char **argv, const struct flashctl_globals *g)
{
	static const struct option options[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "spec", required_argument, NULL, 's' },
		{ "generation", required_argument, NULL, 'G' },
		{ "wait", no_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 't' },
		{ "project-id", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *cmd = argv[0], *name = NULL, *spec_path = NULL, *target = NULL, *project = g->project_id;
	struct flash_client_response *resp = NULL;
	struct ctx x = { 0 };
	char *spec = NULL, id[64] = "";
	size_t spec_len = 0;
	uint64_t gen = default_generation(), t;
	unsigned int timeout_s = 300;
	bool wait = false, want_spec = strcmp(cmd, "create") == 0 || strcmp(cmd, "update") == 0;
	bool takes_target = strcmp(cmd, "update") == 0 || strcmp(cmd, "delete") == 0 || strcmp(cmd, "get") == 0;
	int c, r, status;

	/* Options may follow the ID|NAME operand (GNU permutation). */
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 'n': name = optarg; break;
		case 's': spec_path = optarg; break;
		case 'G':
			if (parse_u64(optarg, &gen) < 0) {
				fprintf(stderr, "%s %s: --generation %s: expected an unsigned integer\n", g->progname, cmd, optarg);
				return FLASHCTL_EXIT_USAGE;
			}
			break;
		case 'w': wait = true; break;
		case 'P':
			if (!optarg[0]) {
				fprintf(stderr, "%s %s: --project-id must not be empty\n", g->progname, cmd);
				return FLASHCTL_EXIT_USAGE;
			}
			project = optarg;
			break;
		case 't':
			if (parse_u64(optarg, &t) < 0 || t == 0 || t > 86400) {
				fprintf(stderr, "%s %s: --timeout %s: expected 1..86400 seconds\n", g->progname, cmd, optarg);
				return FLASHCTL_EXIT_USAGE;
			}
			timeout_s = (unsigned int)t;
			break;
		case 'h':
			cmd_usage(stdout, g->progname, cmd);
			return FLASHCTL_EXIT_OK;
		default:
			cmd_usage(stderr, g->progname, cmd);
			return FLASHCTL_EXIT_USAGE;
		}
	}
	if (takes_target && optind < argc)
		target = argv[optind++];
	if (optind != argc || (takes_target && !target) || (want_spec && !spec_path) ||
	    (strcmp(cmd, "create") == 0) != (name != NULL) || (!want_spec && spec_path) ||
	    (wait && strcmp(cmd, "delete") == 0)) {
		cmd_usage(stderr, g->progname, cmd);
		return FLASHCTL_EXIT_USAGE;
	}
	if (spec_path) {
		r = util_read_file(spec_path, SPEC_MAX, &spec, &spec_len);
		if (r < 0) {
			fprintf(stderr, "%s %s: --spec %s: %s\n", g->progname, cmd, spec_path,
				r == -EINVAL ? "not a regular file" : r == -EFBIG ? "too large" : strerror(-r));
			return FLASHCTL_EXIT_USAGE;
		}
	}
	status = ctx_init(&x, g, cmd, project);
	if (status != FLASHCTL_EXIT_OK)
		goto out;
	if (target) {
		status = resolve(&x, target, id, sizeof(id));
		if (status != FLASHCTL_EXIT_OK)
			goto out;
	}
	enum shape shape = SHAPE_SERVICE;
	if (strcmp(cmd, "create") == 0) {
		r = flash_client_create(x.client, name, spec, spec_len, gen, &resp);
	} else if (strcmp(cmd, "update") == 0) {
		r = flash_client_update(x.client, id, spec, spec_len, gen, &resp);
	} else if (strcmp(cmd, "delete") == 0) {
		r = flash_client_delete(x.client, id, gen, &resp);
		shape = SHAPE_DELETED;
	} else if (strcmp(cmd, "get") == 0) {
		r = flash_client_get(x.client, id, &resp);
	} else if (strcmp(cmd, "list") == 0) {
		r = flash_client_list(x.client, &resp);
		shape = SHAPE_LIST;
	} else {
		r = flash_client_usage(x.client, &resp);
		shape = SHAPE_USAGE;
	}
	if (r == -EINVAL && spec) {
		fprintf(stderr, "%s %s: --spec %s: not JSON\n", g->progname, cmd, spec_path);
		status = EXIT_REFUSED;
		goto out;
	}
	status = report(&x, r, resp);
	if (status == FLASHCTL_EXIT_OK)
		status = print_answer(&x, resp, shape);
	if (status == FLASHCTL_EXIT_OK && wait) {
		struct json_value *doc = NULL;
		size_t len;
		const char *body = flash_client_response_body(resp, &len);

		if (json_parse(body, len, NULL, &doc, NULL) == 0)
			snprintf(id, sizeof(id), "%s", str_of(doc, "id"));
		json_free(doc);
		status = wait_ready(&x, id, timeout_s);
	}
out:
	flash_client_response_free(resp);
	free(spec);
	ctx_done(&x);
	return status;
}

/* ---------------------------------------------------------------- logs */

/* --since: an RFC 3339 UTC time as is, or a duration ("90s", "5m", "2h",
 * "1d") before now, written as one. */
static int since_of(const char *s, char *buf, size_t size)
{
	static const struct {
		char unit;
		int64_t seconds;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	int64_t t;
	char *end;
	unsigned long long v;

	if (strchr(s, 'T')) {
		if (strlen(s) >= size)
			return -EINVAL;
		snprintf(buf, size, "%s", s);
		return 0;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-' || !end[0] || end[1] || v > 3650ull * 86400)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (*end == units[i].unit) {
			t = (int64_t)time(NULL) - (int64_t)v * units[i].seconds;
			return flash_meter_format_time(t < 0 ? 0 : t, buf, size) < 0 ? -EINVAL : 0;
		}
	return -EINVAL;
}

/* Prints the lines of one answer, skipping the first *skip lines stamped
 * @last (printed by the previous poll); updates @last and *skip. */
static int print_lines(struct ctx *x, const struct flash_client_response *resp, bool follow, char *last,
		       size_t last_size, size_t *skip)
{
	struct json_value *doc = NULL;
	const struct json_value *lines;
	size_t len, seen_at_last = 0;
	const char *body = flash_client_response_body(resp, &len);

	if (json_parse(body, len, NULL, &doc, NULL) < 0 || !json_is(lines = json_get(doc, "lines"), JSON_ARRAY)) {
		json_free(doc);
		fprintf(stderr, "%s %s: the operator's answer is not a logs answer\n", x->g->progname, x->cmd);
		return EXIT_UNAVAILABLE;
	}
	for (size_t i = 0; i < lines->u.array.n; i++) {
		const struct json_value *l = lines->u.array.items[i];
		const char *t = str_of(l, "time");

		if (strcmp(t, last) == 0 && seen_at_last < *skip) {
			seen_at_last++;
			continue;
		}
		if (strcmp(t, last) != 0) {
			snprintf(last, last_size, "%s", t);
			*skip = 0;
			seen_at_last = 0;
		}
		(*skip)++;
		seen_at_last++;
		if (x->g->output != FLASHCTL_OUTPUT_TABLE) {
			char *one = NULL;
			struct json_writer *w = json_writer_new(0);

			if (w) {
				jw_value(w, l);
				if (json_writer_finish(w, &one, NULL) == 0)
					printf("%s\n", one);
			}
			free(one);
		} else {
			printf("%s #%" PRIu64 " %s %s\n", t, uint_of(l, "replica"), str_of(l, "stream"), str_of(l, "text"));
		}
	}
	if (follow)
		fflush(stdout);
	json_free(doc);
	return FLASHCTL_EXIT_OK;
}

static void logs_usage(FILE *out, const char *progname)
{
	fprintf(out, "Usage: %s logs ID|NAME [-f|--follow] [--replica N] [--since TIME|DURATION]\n"
		     "Global options (before the command): --endpoint, --organization-id, --project-id,\n"
		     "--token-file, --issuer, --audience, -o; see flashctl(1).\n",
		progname);
}

int flashctl_logs_main(int argc, char **argv, const struct flashctl_globals *g)
{
	static const struct option options[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "replica", required_argument, NULL, 'r' },
		{ "since", required_argument, NULL, 'S' },
		{ "project-id", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *project = g->project_id, *target = NULL;
	struct ctx x = { 0 };
	char id[64] = "", since[64] = "", last[64] = "";
	bool follow = false, have_since = false;
	int replica = -1, c, status;
	size_t skip = 0;
	uint64_t v;

	while ((c = getopt_long(argc, argv, "fh", options, NULL)) != -1) {
		switch (c) {
		case 'f': follow = true; break;
		case 'r':
			if (parse_u64(optarg, &v) < 0 || v > 65535) {
				fprintf(stderr, "%s logs: --replica %s: expected an index 0..65535\n", g->progname, optarg);
				return FLASHCTL_EXIT_USAGE;
			}
			replica = (int)v;
			break;
		case 'S':
			if (since_of(optarg, since, sizeof(since)) < 0) {
				fprintf(stderr, "%s logs: --since %s: expected YYYY-MM-DDTHH:MM:SS[.ffffff]Z or a duration "
						"(90s, 5m, 2h, 1d)\n", g->progname, optarg);
				return FLASHCTL_EXIT_USAGE;
			}
			have_since = true;
			break;
		case 'P':
			if (!optarg[0]) {
				fprintf(stderr, "%s logs: --project-id must not be empty\n", g->progname);
				return FLASHCTL_EXIT_USAGE;
			}
			project = optarg;
			break;
		case 'h':
			logs_usage(stdout, g->progname);
			return FLASHCTL_EXIT_OK;
		default:
			logs_usage(stderr, g->progname);
			return FLASHCTL_EXIT_USAGE;
		}
	}
	if (optind < argc)
		target = argv[optind++];
	if (!target || optind != argc) {
		logs_usage(stderr, g->progname);
		return FLASHCTL_EXIT_USAGE;
	}
	status = ctx_init(&x, g, "logs", project);
	if (status == FLASHCTL_EXIT_OK)
		status = resolve(&x, target, id, sizeof(id));
	for (bool first = true; status == FLASHCTL_EXIT_OK; first = false) {
		struct flash_client_response *resp = NULL;
		/* Each poll asks from the newest line printed on. */
		const char *from = last[0] ? last : have_since ? since : NULL;
		int r = flash_client_logs(x.client, id, replica, from, &resp);
		bool gone = !first && r == 0 && flash_client_response_status(resp) == 404;

		/* Following: an operator restarting (unreachable, 503) is
		 * waited for, not an end. */
		if (follow && !first && (r < 0 || flash_client_response_status(resp) == 503) && r != -EINVAL) {
			flash_client_response_free(resp);
			sleep(1);
			continue;
		}

		if (r == -EINVAL) {
			fprintf(stderr, "%s logs: --since %s: not a time the operator takes\n", g->progname, since);
			status = FLASHCTL_EXIT_USAGE;
		} else if (gone) {
			/* Followed until the service was deleted. */
			fprintf(stderr, "%s logs: %s was deleted\n", g->progname, id);
		} else if ((status = report(&x, r, resp)) == FLASHCTL_EXIT_OK) {
			if (!follow && x.g->output != FLASHCTL_OUTPUT_TABLE) {
				fputs(flash_client_response_body(resp, NULL), stdout);
			} else {
				status = print_lines(&x, resp, follow, last, sizeof(last), &skip);
			}
		}
		flash_client_response_free(resp);
		if (!follow || r < 0 || status != FLASHCTL_EXIT_OK || gone)
			break;
		sleep(1);
	}
	ctx_done(&x);
	return status;
}
