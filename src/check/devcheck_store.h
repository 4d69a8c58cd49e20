/*
 * devcheck_store: the history of health checks (devcheck.h) in the service's SQLite database, table checks (migration
 * db/migrations/0005_checks.sql, applied by store.c like every migration).
 *
 * Checks are few (seconds to minutes each), so this module keeps one connection of its own to the database file
 * (WAL mode: it never blocks the store's writer for long, nor readers) and writes synchronously from the check's
 * own thread, never from a request handler's. The connection is opened on first use and again after a failure, so
 * a database that is not usable yet (or not migrated yet) is simply retried at the next call; the check itself
 * stays in memory meanwhile. A private in-memory database (":memory:") has no file to share: no history then.
 *
 * Thread-safe: one mutex serialises the connection.
 */
#ifndef ACCELD_DEVCHECK_STORE_H
#define ACCELD_DEVCHECK_STORE_H

#include <stdint.h>

#include <jansson.h>

#include "core/err.h"

struct devcheck_store;

/*
 * A history on the database file at path; NULL when path has none to share (NULL, ":memory:"). retention_ms: rows
 * that finished longer ago are deleted as new ones are written (0 keeps everything). Never fails otherwise: the
 * file is opened on first use.
 */
struct devcheck_store *devcheck_store_new(const char *path, int64_t retention_ms);

/* Closes the connection; NULL is allowed. */
void devcheck_store_free(struct devcheck_store *cs);

/*
 * Writes a check's document (borrowed; as devcheck_run_json makes it), replacing the row with the same id. Returns
 * ACCELD_OK, ACCELD_EINVAL for a document without id, device, level, state or created_at, or ACCELD_EUNAVAILABLE
 * (message in err) when the database cannot be written now.
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
