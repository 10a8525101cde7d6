/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The embedded SQLite store of flash-operator (see store.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "util.h"

struct op_store {
	sqlite3 *db;
	/* Prepared once: the statements of every get. */
	sqlite3_stmt *get_service, *get_ports, *get_events;
};

/* A cached statement, reset and unbound; kept until op_store_close(). */
static int cached(struct op_store *st, sqlite3_stmt **slot, const char *sql, sqlite3_stmt **ret)
{
	if (!*slot) {
		int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL);

		if (rc != SQLITE_OK)
			return -EIO;
	} else {
		sqlite3_reset(*slot);
		sqlite3_clear_bindings(*slot);
	}
	*ret = *slot;
	return 0;
}

/* Migration N brings the schema from version N to N + 1.  Never edit a
 * released entry: append a new one. */
static const char *const migrations[OP_STORE_SCHEMA_VERSION] = {
	/* 0 -> 1: the first schema. */
	"CREATE TABLE services ("
	" id TEXT PRIMARY KEY NOT NULL,"
	" org TEXT NOT NULL, project TEXT NOT NULL, name TEXT NOT NULL,"
	" generation INTEGER NOT NULL, created_generation INTEGER NOT NULL, operation_id TEXT NOT NULL,"
	" spec TEXT NOT NULL, spec_digest TEXT NOT NULL,"
	" image_digest TEXT, image_pinned TEXT, image_bytes INTEGER NOT NULL DEFAULT 0,"
	" phase TEXT NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,"
	" answer_status INTEGER NOT NULL, answer TEXT NOT NULL,"
	" created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
	" charge_cpu INTEGER NOT NULL DEFAULT 0, charge_memory INTEGER NOT NULL DEFAULT 0,"
	" charge_replicas INTEGER NOT NULL DEFAULT 0, charge_gpus INTEGER NOT NULL DEFAULT 0,"
	" charge_disk INTEGER NOT NULL DEFAULT 0, charge_ports INTEGER NOT NULL DEFAULT 0,"
	" UNIQUE (org, project, name));"
	"CREATE TABLE ports ("
	" port INTEGER PRIMARY KEY NOT NULL,"
	" service_id TEXT NOT NULL REFERENCES services(id),"
	" protocol TEXT NOT NULL, name TEXT NOT NULL,"
	" UNIQUE (service_id, protocol, name));"
	"CREATE TABLE events ("
	" seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	" service_id TEXT NOT NULL, time INTEGER NOT NULL,"
	" type TEXT NOT NULL, message TEXT NOT NULL);"
	"CREATE INDEX events_service ON events (service_id, seq);"
	"CREATE TABLE meter (id INTEGER PRIMARY KEY CHECK (id = 1), state TEXT NOT NULL);",
};

static int sql_err(struct op_store *st, char *err, size_t err_size, const char *what)
{
	if (err && err_size)
		snprintf(err, err_size, "%s: %s", what, sqlite3_errmsg(st->db));
	return -EIO;
}

/* SQLite result code -> -errno. */
static int rc_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	case SQLITE_FULL:
		return -ENOSPC;
	default:
		return -EIO;
	}
}

static int exec(struct op_store *st, const char *sql)
{
	return rc_errno(sqlite3_exec(st->db, sql, NULL, NULL, NULL));
}

static int user_version(struct op_store *st, int *ret)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		*ret = sqlite3_column_int(s, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return rc_errno(rc);
}

static int migrate(struct op_store *st, char *err, size_t err_size)
{
	int v, r;

	r = user_version(st, &v);
	if (r < 0)
		return sql_err(st, err, err_size, "reading the schema version");
	if (v > OP_STORE_SCHEMA_VERSION) {
		if (err && err_size)
			snprintf(err, err_size, "schema version %d is newer than this program's (%d)", v,
				 OP_STORE_SCHEMA_VERSION);
		return -EPROTONOSUPPORT;
	}
	for (; v < OP_STORE_SCHEMA_VERSION; v++) {
		char pragma[64];

		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", v + 1);
		if (exec(st, "BEGIN IMMEDIATE") < 0)
			return sql_err(st, err, err_size, "starting a migration");
		if (exec(st, migrations[v]) < 0 || exec(st, pragma) < 0) {
			r = sql_err(st, err, err_size, "migrating the schema");
			exec(st, "ROLLBACK");
			return r;
		}
		if (exec(st, "COMMIT") < 0)
			return sql_err(st, err, err_size, "committing a migration");
	}
	return 0;
}

int op_store_open(const char *path, struct op_store **ret, char *err, size_t err_size)
{
	struct op_store *st;
	struct stat sb;
	int fd, r;

	if (!path || !ret)
		return -EINVAL;
	/* Create the file ourselves: mode 0600, no symlink followed, and a
	 * regular file (SQLite would open a FIFO and block). */
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		if (err && err_size)
			snprintf(err, err_size, "%s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		if (err && err_size)
			snprintf(err, err_size, "%s: not a regular file", path);
		return -EBADFD;
	}
	close(fd);

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	/* NOMUTEX: the caller serializes every use of the store. */
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		r = st->db ? sql_err(st, err, err_size, path) : -ENOMEM;
		goto fail;
	}
	sqlite3_busy_timeout(st->db, 2000);
	if (exec(st, "PRAGMA journal_mode = WAL") < 0 || exec(st, "PRAGMA synchronous = FULL") < 0 ||
	    exec(st, "PRAGMA foreign_keys = ON") < 0) {
		r = sql_err(st, err, err_size, "setting WAL and synchronous=FULL");
		goto fail;
	}
	r = migrate(st, err, err_size);
	if (r < 0)
		goto fail;
	*ret = st;
	return 0;
fail:
	op_store_close(st);
	return r;
}

void op_store_close(struct op_store *st)
{
	if (!st)
		return;
	sqlite3_finalize(st->get_service);
	sqlite3_finalize(st->get_ports);
	sqlite3_finalize(st->get_events);
	sqlite3_close(st->db);
	free(st);
}

int op_store_schema_version(struct op_store *st)
{
	int v = -1;

	return user_version(st, &v) < 0 ? -EIO : v;
}

int op_store_begin(struct op_store *st)
{
	return exec(st, "BEGIN IMMEDIATE");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int op_store_commit(struct op_store *st, uint64_t *ret_ns)
{
	uint64_t t0 = mono_ns();
	int r = exec(st, "COMMIT");

	if (r < 0) {
		exec(st, "ROLLBACK");
		return r;
	}
	if (ret_ns)
		*ret_ns = mono_ns() - t0;
	return 0;
}

void op_store_rollback(struct op_store *st)
{
	if (!sqlite3_get_autocommit(st->db))
		exec(st, "ROLLBACK");
}

/* ---------------------------------------------------------------- services */

void op_service_free(struct op_service *s)
{
	if (!s)
		return;
	free(s->org);
	free(s->project);
	free(s->name);
	free(s->spec);
	free(s->image_digest);
	free(s->image_pinned);
	free(s->phase);
	free(s->answer);
	free(s->ports);
	free(s);
}

void op_service_list_free(struct op_service **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		op_service_free(list[i]);
	free(list);
}

static int dup_col(sqlite3_stmt *s, int col, char **ret)
{
	const unsigned char *t = sqlite3_column_text(s, col);

	*ret = NULL;
	if (!t)
		return 0;
	*ret = strdup((const char *)t);
	return *ret ? 0 : -ENOMEM;
}

static void copy_col(sqlite3_stmt *s, int col, char *buf, size_t size)
{
	const unsigned char *t = sqlite3_column_text(s, col);

	snprintf(buf, size, "%s", t ? (const char *)t : "");
}

#define SERVICE_COLUMNS                                                                     \
	"id, org, project, name, generation, created_generation, operation_id, spec, spec_digest, " \
	"image_digest, " \
	"image_pinned, image_bytes, phase, deleted, answer_status, answer, created_at, "      \
	"updated_at, charge_cpu, charge_memory, charge_replicas, charge_gpus, charge_disk, "  \
	"charge_ports"

static int load_ports(struct op_store *st, struct op_service *sv)
{
	sqlite3_stmt *s = NULL;
	int rc, r = 0;

	r = cached(st, &st->get_ports, "SELECT protocol, name, port FROM ports WHERE service_id = ?1 ORDER BY port", &s);
	if (r < 0)
		return r;
	sqlite3_bind_text(s, 1, sv->id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct flash_public_port *np = realloc(sv->ports, (sv->n_ports + 1) * sizeof(*np));

		if (!np) {
			r = -ENOMEM;
			break;
		}
		sv->ports = np;
		memset(&np[sv->n_ports], 0, sizeof(*np));
		copy_col(s, 0, np[sv->n_ports].protocol, sizeof(np->protocol));
		copy_col(s, 1, np[sv->n_ports].name, sizeof(np->name));
		np[sv->n_ports].port = (uint16_t)sqlite3_column_int(s, 2);
		sv->n_ports++;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = rc_errno(rc);
	sqlite3_reset(s);
	return r;
}

static int row_to_service(struct op_store *st, sqlite3_stmt *s, struct op_service **ret)
{
	struct op_service *sv = calloc(1, sizeof(*sv));
	int r;

	if (!sv)
		return -ENOMEM;
	copy_col(s, 0, sv->id, sizeof(sv->id));
	r = dup_col(s, 1, &sv->org);
	if (r == 0)
		r = dup_col(s, 2, &sv->project);
	if (r == 0)
		r = dup_col(s, 3, &sv->name);
	sv->generation = (uint64_t)sqlite3_column_int64(s, 4);
	sv->created_generation = (uint64_t)sqlite3_column_int64(s, 5);
	copy_col(s, 6, sv->operation_id, sizeof(sv->operation_id));
	if (r == 0)
		r = dup_col(s, 7, &sv->spec);
	copy_col(s, 8, sv->spec_digest, sizeof(sv->spec_digest));
	if (r == 0)
		r = dup_col(s, 9, &sv->image_digest);
	if (r == 0)
		r = dup_col(s, 10, &sv->image_pinned);
	sv->image_bytes = (uint64_t)sqlite3_column_int64(s, 11);
	if (r == 0)
		r = dup_col(s, 12, &sv->phase);
	sv->deleted = sqlite3_column_int(s, 13) != 0;
	sv->answer_status = sqlite3_column_int(s, 14);
	if (r == 0)
		r = dup_col(s, 15, &sv->answer);
	sv->created_at = sqlite3_column_int64(s, 16);
	sv->updated_at = sqlite3_column_int64(s, 17);
	for (int i = 0; i < FLASH_POLICY_RESOURCE_COUNT_; i++)
		sv->charge[i] = (uint64_t)sqlite3_column_int64(s, 18 + i);
	if (r == 0)
		r = load_ports(st, sv);
	if (r < 0) {
		op_service_free(sv);
		return r;
	}
	*ret = sv;
	return 0;
}

int op_store_service_get(struct op_store *st, const char *id, struct op_service **ret)
{
	sqlite3_stmt *s = NULL;
	int rc, r;

	if (!st || !id || !ret)
		return -EINVAL;
	r = cached(st, &st->get_service, "SELECT " SERVICE_COLUMNS " FROM services WHERE id = ?1", &s);
	if (r < 0)
		return r;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		r = row_to_service(st, s, ret);
	else
		r = rc == SQLITE_DONE ? -ENOENT : rc_errno(rc);
	sqlite3_reset(s);
	return r;
}

int op_store_service_put(struct op_store *st, const struct op_service *sv)
{
	static const char sql[] =
		"INSERT OR REPLACE INTO services (" SERVICE_COLUMNS ") VALUES "
		"(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)";
	sqlite3_stmt *s = NULL;
	int rc, r;

	if (!st || !sv || !sv->org || !sv->project || !sv->name || !sv->spec || !sv->phase || !sv->answer)
		return -EINVAL;
	/* Ports first: the REPLACE of the row must not leave ports of an old
	 * assignment behind. */
	rc = sqlite3_prepare_v2(st->db, "DELETE FROM ports WHERE service_id = ?1", -1, &s, NULL);
	if (rc != SQLITE_OK)
		return rc_errno(rc);
	sqlite3_bind_text(s, 1, sv->id, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return rc_errno(rc);

	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return rc_errno(rc);
	sqlite3_bind_text(s, 1, sv->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, sv->org, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, sv->project, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, sv->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)sv->generation);
	sqlite3_bind_int64(s, 6, (sqlite3_int64)sv->created_generation);
	sqlite3_bind_text(s, 7, sv->operation_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 8, sv->spec, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 9, sv->spec_digest, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 10, sv->image_digest, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 11, sv->image_pinned, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 12, (sqlite3_int64)sv->image_bytes);
	sqlite3_bind_text(s, 13, sv->phase, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 14, sv->deleted);
	sqlite3_bind_int(s, 15, sv->answer_status);
	sqlite3_bind_text(s, 16, sv->answer, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 17, sv->created_at);
	sqlite3_bind_int64(s, 18, sv->updated_at);
	for (int i = 0; i < FLASH_POLICY_RESOURCE_COUNT_; i++)
		sqlite3_bind_int64(s, 19 + i, (sqlite3_int64)sv->charge[i]);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return rc_errno(rc);

	r = 0;
	for (size_t i = 0; i < sv->n_ports && r == 0 && !sv->deleted; i++) {
		rc = sqlite3_prepare_v2(st->db, "INSERT INTO ports (port, service_id, protocol, name) VALUES (?1, ?2, ?3, ?4)",
					-1, &s, NULL);
		if (rc != SQLITE_OK)
			return rc_errno(rc);
		sqlite3_bind_int(s, 1, sv->ports[i].port);
		sqlite3_bind_text(s, 2, sv->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, sv->ports[i].protocol, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, sv->ports[i].name, -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		sqlite3_finalize(s);
		if (rc != SQLITE_DONE)
			r = rc_errno(rc); /* -EEXIST: a port another service holds */
	}
	return r;
}

int op_store_service_list(struct op_store *st, const char *org, const char *project,
			  struct op_service ***ret, size_t *ret_n)
{
	sqlite3_stmt *s = NULL;
	struct op_service **list = NULL;
	size_t n = 0;
	int rc, r = 0;

	if (!st || !ret || !ret_n)
		return -EINVAL;
	rc = sqlite3_prepare_v2(st->db,
				"SELECT " SERVICE_COLUMNS " FROM services WHERE (?1 IS NULL OR org = ?1) AND deleted = 0"
				" AND (?2 IS NULL OR project = ?2) ORDER BY name, id",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return rc_errno(rc);
	if (org)
		sqlite3_bind_text(s, 1, org, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 1);
	if (project)
		sqlite3_bind_text(s, 2, project, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 2);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct op_service **nl = realloc(list, (n + 1) * sizeof(*nl));

		if (!nl) {
			r = -ENOMEM;
			break;
		}
		list = nl;
		r = row_to_service(st, s, &list[n]);
		if (r < 0)
			break;
		n++;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = rc_errno(rc);
	sqlite3_finalize(s);
	if (r < 0) {
		op_service_list_free(list, n);
		return r;
	}
	*ret = list;
	*ret_n = n;
	return 0;
}

int op_store_ports_taken(struct op_store *st, const char *exclude_id, uint16_t **ret, size_t *ret_n)
{
	sqlite3_stmt *s = NULL;
	uint16_t *ports = NULL;
	size_t n = 0;
	int rc, r = 0;

	rc = sqlite3_prepare_v2(st->db, "SELECT port FROM ports WHERE ?1 IS NULL OR service_id <> ?1 ORDER BY port", -1,
				&s, NULL);
	if (rc != SQLITE_OK)
		return rc_errno(rc);
	if (exclude_id)
		sqlite3_bind_text(s, 1, exclude_id, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		uint16_t *np = realloc(ports, (n + 1) * sizeof(*np));

		if (!np) {
			r = -ENOMEM;
			break;
		}
		ports = np;
		ports[n++] = (uint16_t)sqlite3_column_int(s, 0);
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = rc_errno(rc);
	sqlite3_finalize(s);
	if (r < 0) {
		free(ports);
		return r;
	}
	*ret = ports;
	*ret_n = n;
	return 0;
}

int op_store_org_charge(struct op_store *st, const char *org, const char *exclude_id,
			uint64_t ret_charge[FLASH_POLICY_RESOURCE_COUNT_])
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(st->db,
				"SELECT total(charge_cpu), total(charge_memory), total(charge_replicas),"
				" total(charge_gpus), total(charge_disk), total(charge_ports) FROM services"
				" WHERE org = ?1 AND deleted = 0 AND (?2 IS NULL OR id <> ?2)",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return rc_errno(rc);
	sqlite3_bind_text(s, 1, org, -1, SQLITE_STATIC);
	if (exclude_id)
		sqlite3_bind_text(s, 2, exclude_id, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 2);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		for (int i = 0; i < FLASH_POLICY_RESOURCE_COUNT_; i++)
			ret_charge[i] = (uint64_t)sqlite3_column_double(s, i);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return rc_errno(rc);
}

uint64_t op_store_changes(struct op_store *st)
{
	return st ? (uint64_t)sqlite3_total_changes64(st->db) : 0;
}

int op_store_count(struct op_store *st, size_t *ret)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, "SELECT count(*) FROM services WHERE deleted = 0", -1, &s, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		*ret = (size_t)sqlite3_column_int64(s, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return rc_errno(rc);
}

/* ---------------------------------------------------------------- events */

int op_store_event_add(struct op_store *st, const char *id, int64_t time, const char *type, const char *message)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, "INSERT INTO events (service_id, time, type, message) VALUES (?1, ?2, ?3, ?4)",
				    -1, &s, NULL);

	if (rc != SQLITE_OK)
		return rc_errno(rc);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, time);
	sqlite3_bind_text(s, 3, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, message, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : rc_errno(rc);
}

void op_events_free(struct op_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(ev[i].type);
		free(ev[i].message);
	}
	free(ev);
}

int op_store_events(struct op_store *st, const char *id, size_t max, struct op_event **ret, size_t *ret_n)
{
	sqlite3_stmt *s = NULL;
	struct op_event *ev = NULL;
	size_t n = 0;
	int rc, r = 0;

	r = cached(st, &st->get_events,
		   "SELECT time, type, message FROM (SELECT seq, time, type, message FROM events"
		   " WHERE service_id = ?1 ORDER BY seq DESC LIMIT ?2) ORDER BY seq",
		   &s);
	if (r < 0)
		return r;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct op_event *ne = realloc(ev, (n + 1) * sizeof(*ne));

		if (!ne) {
			r = -ENOMEM;
			break;
		}
		ev = ne;
		ev[n].time = sqlite3_column_int64(s, 0);
		r = dup_col(s, 1, &ev[n].type);
		if (r == 0)
			r = dup_col(s, 2, &ev[n].message);
		n++;
		if (r < 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = rc_errno(rc);
	sqlite3_reset(s);
	if (r < 0) {
		op_events_free(ev, n);
		return r;
	}
	*ret = ev;
	*ret_n = n;
	return 0;
}

/* ---------------------------------------------------------------- meter */

int op_store_meter_get(struct op_store *st, char **ret)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, "SELECT state FROM meter WHERE id = 1", -1, &s, NULL), r = 0;

	if (rc != SQLITE_OK)
		return rc_errno(rc);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		r = dup_col(s, 0, ret);
	else if (rc == SQLITE_DONE)
		*ret = NULL;
	else
		r = rc_errno(rc);
	sqlite3_finalize(s);
	return r;
}

int op_store_meter_put(struct op_store *st, const char *json)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO meter (id, state) VALUES (1, ?1)", -1, &s, NULL);

	if (rc != SQLITE_OK)
		return rc_errno(rc);
	sqlite3_bind_text(s, 1, json, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : rc_errno(rc);
}
