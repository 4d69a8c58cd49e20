/*
 * devcheck_store: the history of health checks (devcheck.h) in the service's database, table checks (migration
 * db/migrations/0005_checks.sql), read and written through the store (store.h) like every other table: the store's
 * writer commits the checks and its read connections read them, so one module opens the file, applies the
 * migrations and waits out a busy database.
 *
 * Checks are few (seconds to minutes each). A check's document is written from the check's own thread, never from
 * a request handler's: devcheck_store_put waits until the store has committed it (group commit, as a price change
 * is). While the database cannot be written the store keeps the newest document of each check and commits it once
 * the database recovers; the check itself stays in memory meanwhile. The history lives as long as the store's
 * database: a private in-memory one (":memory:") keeps it until acceld stops.
 *
 * Thread-safe.
 */
#ifndef ACCELD_DEVCHECK_STORE_H
#define ACCELD_DEVCHECK_STORE_H

#include <stdint.h>

#include <jansson.h>

#include "core/err.h"

struct devcheck_store;
struct store;

/*
 * A history in the store st (borrowed: it must outlive the history); NULL when st is NULL. retention_ms: checks
 * that finished longer before a check that finishes are deleted as it is written (0 keeps everything).
 */
struct devcheck_store *devcheck_store_new(struct store *st, int64_t retention_ms);

/* Frees the history (not the store); NULL is allowed. */
void devcheck_store_free(struct devcheck_store *cs);

/*
 * Writes a check's document (borrowed; as devcheck_run_json makes it), replacing the row with the same id, and
 * waits for its commit, 5 s at most. Returns ACCELD_OK once committed, ACCELD_EINVAL for a document without id,
 * device, level, state or created_at (or with one longer than the table keeps), or ACCELD_EUNAVAILABLE (message in
 * err) when the database cannot take it now: the store keeps it, and commits it once the database recovers, unless
 * too many checks wait already.
 */
enum acceld_err devcheck_store_put(struct devcheck_store *cs, const json_t *doc, char *err, size_t errsz);

/*
 * Every check left queued or running (acceld stopped without saying: a crash, kill -9) becomes interrupted with
 * reason INTERRUPTED, at now_ms. *n (may be NULL) receives how many. Call once at start, before any check runs.
 */
enum acceld_err devcheck_store_mark_interrupted(struct devcheck_store *cs, int64_t now_ms, unsigned *n);

/*
 * A device's checks, newest first, at most page_size, after the check with id after ("" or NULL: from the newest),
 * as a new JSON array of documents in *docs. *more says whether older ones follow. ACCELD_ENOTFOUND when after
 * names no check of the device, ACCELD_EUNAVAILABLE when the database cannot be read.
 */
enum acceld_err devcheck_store_list(struct devcheck_store *cs, const char *device, unsigned page_size,
				    const char *after, json_t **docs, bool *more);

/* One check of a device by id (a new document in *doc); ACCELD_ENOTFOUND when there is none. */
enum acceld_err devcheck_store_get(struct devcheck_store *cs, const char *device, const char *id, json_t **doc);

/* The last finished (done or interrupted) check of every device, as a new JSON array of documents. */
enum acceld_err devcheck_store_latest(struct devcheck_store *cs, json_t **docs);

#endif
