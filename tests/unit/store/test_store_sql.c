/*
 * Unit tests of store_sql.c, every SQL text the store runs: each one prepares against a database this build
 * migrated, is one statement (a second would be silently skipped), reads or writes as its use requires (readers
 * hold read-only connections), and the per-tier statements read their own tier's table.
 */
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "check_main.h"
#include "check_store.h"
#include "store/store_int.h"

static sqlite3 *db;

/* A file migrated by the store, opened read-only with a connection of the test's own. */
static void open_migrated(void)
{
	struct store *st = NULL;
	char path[300], err[256];

	setup();
	tmp_path(path, sizeof(path), "sql.db");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_msg(store_healthy(st, err, sizeof(err)), "%s", err);
	store_close(st);
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
}

static void close_migrated(void)
{
	sqlite3_close(db);
	db = NULL;
	teardown();
}

static sqlite3_stmt *prepare(int id)
{
	sqlite3_stmt *s = NULL;
	const char *tail = NULL;
	const char *sql = store_stmt_sql[id];

	ck_assert_msg(sql != NULL, "statement %d has no text", id);
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, &tail) == SQLITE_OK, "statement %d: %s: %s", id,
		      sqlite3_errmsg(db), sql);
	ck_assert_ptr_nonnull(s);
	/* nothing after the first statement, which prepare would leave unrun */
	ck_assert_msg(tail != NULL && tail[strspn(tail, " \t\n;")] == '\0', "statement %d runs only part of: %s", id,
		      sql);
	return s;
}

START_TEST(every_statement_prepares_against_a_migrated_database)
{
	for (int id = 0; id < S_COUNT; id++)
		sqlite3_finalize(prepare(id));
}
END_TEST

START_TEST(reads_only_read_and_writes_write)
{
	static const int writes[] = {S_DEVICE_UPSERT, S_DEVICE_ENSURE, S_SAMPLE,   S_JOB,     S_JOBS_INTERRUPT,
				     S_PRICES_CLEAR,  S_PRICE,         S_ROLL_MINUTE, S_ROLL_HOUR, S_DEL_RAW,
				     S_DEL_MINUTE,    S_DEL_HOUR,      S_DEL_JOBS, S_CHECK_PUT, S_CHECKS_EXPIRE};
	/* what the readers' read-only connections run */
	static const int reads[] = {S_DEVICE_KEY,   S_DEVICES,      S_JOBS_USAGE,       S_THROUGHPUT,
				    S_PRICES,       S_JOB_GET,      S_CHECK_GET,        S_CHECKS_FIRST,
				    S_CHECKS_AFTER, S_CHECKS_LATEST, S_CHECKS_UNFINISHED, S_WM_MINUTE,
				    S_WM_HOUR,      S_SAMPLES_MIN,  S_SAMPLES_MAX};
	sqlite3_stmt *s;

	for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		s = prepare(writes[i]);
		ck_assert_msg(!sqlite3_stmt_readonly(s), "statement %d writes nothing: %s", writes[i],
			      store_stmt_sql[writes[i]]);
		sqlite3_finalize(s);
	}
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		s = prepare(reads[i]);
		ck_assert_msg(sqlite3_stmt_readonly(s), "statement %d writes: %s", reads[i], store_stmt_sql[reads[i]]);
		sqlite3_finalize(s);
	}
	for (int t = STORE_RAW; t <= STORE_HOUR; t++) {
		s = prepare(S_USAGE + t);
		ck_assert(sqlite3_stmt_readonly(s));
		sqlite3_finalize(s);
		for (int m = 0; m < STORE_METRIC_COUNT; m++) {
			s = prepare(S_SERIES + t * STORE_METRIC_COUNT + m);
			ck_assert(sqlite3_stmt_readonly(s));
			sqlite3_finalize(s);
		}
	}
}
END_TEST

/* The statement of a tier reads that tier's table, and a series statement its metric's column. */
START_TEST(each_tier_reads_its_own_table)
{
	static const char *const tables[] = {"FROM samples", "FROM rollup_minute", "FROM rollup_hour"};

	for (int t = STORE_RAW; t <= STORE_HOUR; t++) {
		ck_assert_msg(strstr(store_stmt_sql[S_USAGE + t], tables[t]) != NULL, "%s", store_stmt_sql[S_USAGE + t]);
		for (int u = STORE_RAW; u <= STORE_HOUR; u++)
			ck_assert(u == t || strstr(store_stmt_sql[S_USAGE + t], tables[u]) == NULL);
		for (int m = 0; m < STORE_METRIC_COUNT; m++) {
			const char *sql = store_stmt_sql[S_SERIES + t * STORE_METRIC_COUNT + m];

			ck_assert_msg(strstr(sql, tables[t]) != NULL, "tier %d metric %d: %s", t, m, sql);
			for (int u = STORE_RAW; u <= STORE_HOUR; u++)
				ck_assert_msg(u == t || strstr(sql, tables[u]) == NULL, "tier %d metric %d: %s", t, m, sql);
		}
	}
	/* the metrics differ from one another within a tier */
	for (int t = STORE_RAW; t <= STORE_HOUR; t++)
		for (int m = 1; m < STORE_METRIC_COUNT; m++)
			ck_assert_str_ne(store_stmt_sql[S_SERIES + t * STORE_METRIC_COUNT + m],
					 store_stmt_sql[S_SERIES + t * STORE_METRIC_COUNT + m - 1]);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("store_sql");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, open_migrated, close_migrated);
	tcase_add_test(tc, every_statement_prepares_against_a_migrated_database);
	tcase_add_test(tc, reads_only_read_and_writes_write);
	tcase_add_test(tc, each_tier_reads_its_own_table);
	suite_add_tcase(s, tc);
	return s;
}
