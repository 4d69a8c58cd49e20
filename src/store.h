/*
 * store: the SQLite database (WAL mode) that keeps history, jobs and prices.
 *
 * The connection is opened in serialized mode; store_* functions may be called from any thread.
 */
#ifndef ACCELD_STORE_H
#define ACCELD_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct store;

/*
 * Opens (creating the file and its folder when missing) the database at path and sets WAL mode, busy_timeout and
 * synchronous=NORMAL. ":memory:" opens a private in-memory database. On failure returns an error and a message in
 * err; *out is untouched.
 */
enum acceld_err store_open(const char *path, struct store **out, char *err, size_t errsz);

/* Closes the database; NULL is allowed. */
void store_close(struct store *st);

/* Checks that the database answers a query; on failure writes why into err and returns false. */
bool store_healthy(struct store *st, char *err, size_t errsz);

/* The SQLite library version, e.g. "3.40.1". */
const char *store_sqlite_version(void);

#endif
