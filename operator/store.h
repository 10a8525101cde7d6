/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flash-operator's embedded store (SQLite, private to operator/).
 *
 * One database file holds the services (canonical spec, generation, last
 * operation id and the answer given for it, image pin, status), their
 * public port assignments, their events and the metering state (usage
 * records).  The schema carries a version (PRAGMA user_version) and is
 * brought forward by an ordered list of migrations, each in its own
 * transaction; a database newer than this program is refused.
 *
 * Durability: WAL journal with synchronous=FULL, so a transaction is on
 * disk when op_store_commit() returns — the provider answers a command
 * only after that.  (NORMAL would lose the last transactions on power
 * loss in WAL mode, which would un-acknowledge commands.)
 *
 * Not thread-safe: the caller serializes access (the provider holds one
 * mutex around each transaction, never across client I/O).
 */
#ifndef FLASH_OPERATOR_STORE_H
#define FLASH_OPERATOR_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <flash/auth.h>
#include <flash/policy.h>
#include <flash/render.h>

#include "names.h"

/* Current schema version (the number of migrations). */
#define OP_STORE_SCHEMA_VERSION 1

/* A service id (names_service_id_valid()) and the NUL. */
#define OP_SERVICE_ID_STRLEN (NAMES_SERVICE_ID_LEN + 1)

/* What a service's status says (there is no runtime yet, issue 17: a
 * service never becomes "ready" here). */
#define OP_PHASE_ADMITTED "admitted"

struct op_service {
	char id[OP_SERVICE_ID_STRLEN];
	char *org, *project, *name;
	uint64_t generation;
	uint64_t created_generation; /* of the create that started this incarnation */
	char operation_id[FLASH_AUTH_OPID_STRLEN];
	char *spec;          /* canonical JSON (flash_spec_to_json) */
	char spec_digest[FLASH_SPEC_DIGEST_HEX_SIZE];
	char *image_digest;  /* "sha256:..." */
	char *image_pinned;  /* "host/repo@sha256:..." */
	uint64_t image_bytes;
	char *phase;
	bool deleted;        /* a tombstone: keeps the generation after delete */
	int answer_status;   /* HTTP status of the answer to operation_id */
	char *answer;        /* its body, byte for byte */
	int64_t created_at, updated_at;
	struct flash_public_port *ports;
	size_t n_ports;
	/* What the workload takes from its organization's limits. */
	uint64_t charge[FLASH_POLICY_RESOURCE_COUNT_];
};

void op_service_free(struct op_service *s);


struct op_store;

/* Opens (creating when absent, mode 0600) the database at @path and
 * migrates it.  On failure @err (if not NULL) says what.  Returns 0,
 * -EPROTONOSUPPORT (schema newer than this program), -EIO (SQLite error),
 * -ENOMEM, -EINVAL. */
int op_store_open(const char *path, struct op_store **ret, char *err, size_t err_size);
void op_store_close(struct op_store *st);

/* The schema version of the open database. */
int op_store_schema_version(struct op_store *st);

/* Transactions (BEGIN IMMEDIATE ... COMMIT).  commit gives the time it
 * took in nanoseconds in *ret_ns (may be NULL).  -EBUSY when another
 * process holds the database (transient), -EIO. */
int op_store_begin(struct op_store *st);
int op_store_commit(struct op_store *st, uint64_t *ret_ns);
void op_store_rollback(struct op_store *st);

/* The service @id (tombstones included).  -ENOENT when unknown. */
int op_store_service_get(struct op_store *st, const char *id, struct op_service **ret);

/* Inserts or replaces @s with its port assignment. */
int op_store_service_put(struct op_store *st, const struct op_service *s);

/* Live services of @org (every organization's when NULL; and of @project
 * unless NULL), by name, then id. */
int op_store_service_list(struct op_store *st, const char *org, const char *project,
			  struct op_service ***ret, size_t *ret_n);
void op_service_list_free(struct op_service **list, size_t n);

/* Public ports held by live services other than @exclude_id (NULL: all). */
int op_store_ports_taken(struct op_store *st, const char *exclude_id, uint16_t **ret, size_t *ret_n);

/* Sum of the charges of @org's live services other than @exclude_id. */
int op_store_org_charge(struct op_store *st, const char *org, const char *exclude_id,
			uint64_t ret_charge[FLASH_POLICY_RESOURCE_COUNT_]);

/* Appends an event to service @id. */
int op_store_event_add(struct op_store *st, const char *id, int64_t time, const char *type, const char *message);

struct op_event {
	int64_t time;
	char *type, *message;
};
/* The last @max events of @id, oldest first. */
int op_store_events(struct op_store *st, const char *id, size_t max, struct op_event **ret, size_t *ret_n);
void op_events_free(struct op_event *ev, size_t n);

/* The metering state document (flash_meter_to_json); *ret NULL when none
 * was saved yet. */
int op_store_meter_get(struct op_store *st, char **ret);
int op_store_meter_put(struct op_store *st, const char *json);

/* Number of live services (for tests and metrics). */
int op_store_count(struct op_store *st, size_t *ret);
/* Rows changed through this store since it was opened (every INSERT,
 * UPDATE and DELETE of any statement, rolled back or not): what was read
 * is still what is stored while it is unchanged. */
uint64_t op_store_changes(struct op_store *st);

#endif
