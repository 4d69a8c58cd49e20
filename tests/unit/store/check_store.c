/*
 * check_store: the temporary folder, samples, checks and completions the store's unit tests share (check_store.h),
 * and queries on a database file through a connection of the test's own.
 */
#include "check_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

char tmpdir[256];

void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/acceld-store-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

void tmp_path(char *out, size_t outsz, const char *name)
{
	snprintf(out, outsz, "%s/%s", tmpdir, name);
}

struct store_sample sample(const char *dev, int64_t ts, uint32_t dt, double util)
{
	struct store_sample s = {.ts_ms = ts, .dt_ms = dt, .source = STORE_SRC_PROC_STAT, .utilization_ratio = util,
				 .memory_used_bytes = 1e9, .temperature_celsius = NAN, .power_watts = NAN};

	snprintf(s.device, sizeof(s.device), "%s", dev);
	return s;
}

/* Runs a one-number query on a database file with a separate connection. */
long long file_query(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	long long v = -1;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* The first text value of a query on a database file (static storage). */
const char *file_text(const char *path, const char *sql)
{
	static char out[256];
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	out[0] = '\0';
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(out, sizeof(out), "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return out;
}

void file_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s", msg ? msg : "?");
	sqlite3_close(db);
}

void count_done(void *ctx, bool recorded)
{
	struct done_count *c = ctx;

	c->calls++;
	c->recorded = recorded;
}

/* A check row with document {"id": id, "state": state}; finished 0 while it runs. */
struct store_check check_row(const char *id, const char *device, const char *state, int64_t created,
			     int64_t finished, char *doc, size_t docsz)
{
	struct store_check c = {.created_ms = created, .finished_ms = finished, .gflops = 100, .gbytes_per_s = NAN};

	snprintf(c.id, sizeof(c.id), "%s", id);
	snprintf(c.device, sizeof(c.device), "%s", device);
	snprintf(c.level, sizeof(c.level), "quick");
	snprintf(c.state, sizeof(c.state), "%s", state);
	if (finished > 0)
		snprintf(c.verdict, sizeof(c.verdict), "pass");
	snprintf(doc, docsz, "{\"id\": \"%s\", \"state\": \"%s\"}", id, state);
	c.doc = doc;
	return c;
}

/* Whether docs holds, in this order, documents with these ids (n of them). */
bool docs_are(const struct store_check_docs *docs, const char *const *ids, size_t n)
{
	char want[64];

	if (docs->n != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "\"id\": \"%s\"", ids[i]);
		if (strstr(docs->v[i], want) == NULL)
			return false;
	}
	return true;
}
