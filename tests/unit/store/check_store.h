/*
 * check_store: what the store's unit tests share: a temporary folder per test (the checked fixture setup and
 * teardown), samples and health-check rows built in one line, a completion that counts its calls, and queries on a
 * database file through a connection of the test's own (so they see only what was committed).
 */
#ifndef ACCELD_CHECK_STORE_H
#define ACCELD_CHECK_STORE_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define T0 1700002800000LL /* 2023-11-14T23:00:00Z, an hour boundary */

/* The test's folder, made by setup and removed with what it holds by teardown. */
extern char tmpdir[256];
void setup(void);
void teardown(void);

/* tmpdir/name into out. */
void tmp_path(char *out, size_t outsz, const char *name);

/* A /proc/stat sample of dev at ts standing for dt ms: utilization util, 1 GB of memory, no temperature or power. */
struct store_sample sample(const char *dev, int64_t ts, uint32_t dt, double util);

/* Runs a one-number query on a database file with a separate connection; -1 when it returns no row. */
long long file_query(const char *path, const char *sql);

/* The first text value of a query on a database file (static storage). */
const char *file_text(const char *path, const char *sql);

/* Runs SQL on a database file, asserting it succeeds. */
void file_exec(const char *path, const char *sql);

/* A completion's calls: how many, and the last outcome. */
struct done_count {
	int calls;
	bool recorded;
};

/* A store_done_fn counting into the struct done_count ctx. */
void count_done(void *ctx, bool recorded);

/* A check row with document {"id": id, "state": state} in doc; finished 0 while it runs. */
struct store_check check_row(const char *id, const char *device, const char *state, int64_t created,
			     int64_t finished, char *doc, size_t docsz);

/* Whether docs holds, in this order, documents with these ids (n of them). */
bool docs_are(const struct store_check_docs *docs, const char *const *ids, size_t n);

#endif
