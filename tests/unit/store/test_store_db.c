/*
 * Unit tests of store_db.c, the database file: migrations (a fresh file, an upgrade from an older user_version keeping
 * its rows, the old vocabularies of states rewritten, a newer version refused and left alone), the folders made,
 * files that are not a database or are damaged named, and which errors make the writer reopen the file.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check_main.h"
#include "check_store.h"
#include "store/store_int.h"

/* The text of a file (malloc'ed). */
static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;
	long len;

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = calloc(1, (size_t)len + 1);
	ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return text;
}

START_TEST(fresh_file_gets_the_newest_schema)
{
	struct store *st = NULL;
	char path[300], err[256];

	tmp_path(path, sizeof(path), "sub/dir/a.db");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert(store_healthy(st, err, sizeof(err)));
	store_close(st);
	ck_assert_int_eq(file_query(path, "PRAGMA user_version"), store_schema_version());
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM sqlite_schema WHERE name IN ('devices', 'samples', "
					  "'rollup_minute', 'rollup_hour', 'jobs', 'prices', 'checks')"),
			 7);
	ck_assert_str_eq(file_text(path, "PRAGMA journal_mode"), "wal");
}
END_TEST

START_TEST(older_file_is_upgraded_keeping_its_rows)
{
	struct store *st = NULL;
	char path[300], err[256];
	char *v1 = read_text("db/migrations/0001_init.sql");

	tmp_path(path, sizeof(path), "old.db");
	file_exec(path, v1);
	file_exec(path, "PRAGMA user_version = 1; INSERT INTO devices (id, type, first_seen, last_seen) "
			"VALUES ('gpu:7', 'gpu', 1, 2)");
	free(v1);
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_msg(store_healthy(st, err, sizeof(err)), "%s", err);
	store_close(st);
	ck_assert_int_eq(file_query(path, "PRAGMA user_version"), store_schema_version());
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM devices WHERE id = 'gpu:7'"), 1);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs"), 0);
}
END_TEST

/* A history written before 0004 reads back with the API's state names and reasons. */
START_TEST(old_job_states_are_migrated)
{
	struct store *st = NULL;
	struct store_job j;
	char path[300], err[256];
	char *v1 = read_text("db/migrations/0001_init.sql");
	char *v2 = read_text("db/migrations/0002_jobs_prices.sql");

	tmp_path(path, sizeof(path), "v2.db");
	file_exec(path, v1);
	file_exec(path, v2);
	file_exec(path, "PRAGMA user_version = 2; INSERT INTO jobs (id, device, kernel, state, error) VALUES "
			"('late', 'cpu:0', 'dot', 'timeout', 'ran past its timeout'), "
			"('ok', 'cpu:0', 'dot', 'succeeded', NULL)");
	free(v1);
	free(v2);
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(store_job_get(st, "late", &j), ACCELD_OK);
	ck_assert_str_eq(j.state, "timed_out");
	ck_assert_str_eq(j.reason, "TIMED_OUT");
	ck_assert(isnan(j.queued_ms));
	ck_assert_int_eq(store_job_get(st, "ok", &j), ACCELD_OK);
	ck_assert_str_eq(j.reason, "");
	store_close(st);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs WHERE state = 'timeout'"), 0);
}
END_TEST

/*
 * A history written before 0006: its jobs read back with no trigger and no peak (a fraction of peak unknown, not
 * one against today's peak), its checks under the jobs' state names, in the row and in the document.
 */
START_TEST(version_5_reads_back_in_one_vocabulary)
{
	static const char *const migrations[] = {"db/migrations/0001_init.sql", "db/migrations/0002_jobs_prices.sql",
						 "db/migrations/0003_jobs_by_device_time.sql",
						 "db/migrations/0004_job_states.sql", "db/migrations/0005_checks.sql"};
	struct store *st = NULL;
	struct store_job j;
	struct store_check_docs docs = {0};
	char path[300], err[256];
	char *doc = NULL;

	tmp_path(path, sizeof(path), "v5.db");
	for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]); i++) {
		char *sql = read_text(migrations[i]);

		file_exec(path, sql);
		free(sql);
	}
	file_exec(path, "PRAGMA user_version = 5; INSERT INTO jobs (id, device, kernel, state, flops, kernel_ms) "
			"VALUES ('old', 'cpu:0', 'sgemm', 'succeeded', 2e9, 10); "
			"INSERT INTO checks (id, device, level, state, verdict, created_at, finished_at, doc) VALUES "
			"('chk-ok', 'cpu:0', 'quick', 'done', 'pass', 1, 2, '{\"id\":\"chk-ok\",\"state\":\"done\","
			"\"ratio\":0.1,\"tests\":[{\"state\":\"done\"},{\"state\":\"done\",\"failure\":\"x\"}]}'), "
			"('chk-gone', 'gpu:0', 'quick', 'done', 'fail', 1, 2, '{\"id\":\"chk-gone\",\"state\":\"done\","
			"\"error\":{\"reason\":\"UNKNOWN_DEVICE\"},\"tests\":[{\"state\":\"pending\"}]}'), "
			"('chk-cut', 'tpu:0', 'quick', 'interrupted', NULL, 1, 2, '{\"id\":\"chk-cut\","
			"\"state\":\"interrupted\",\"tests\":[{\"state\":\"running\"}]}')");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_msg(store_healthy(st, err, sizeof(err)), "%s", err);
	ck_assert_int_eq(store_job_get(st, "old", &j), ACCELD_OK);
	ck_assert_str_eq(j.trigger, "");
	ck_assert(isnan(j.peak_gflops) && isnan(j.peak_gbytes_per_s));
	ck_assert_int_eq(store_check_get(st, "cpu:0", "chk-ok", &doc), ACCELD_OK);
	ck_assert_str_eq(doc, "{\"id\":\"chk-ok\",\"state\":\"succeeded\",\"ratio\":0.1,\"tests\":[{\"state\":"
			      "\"succeeded\"},{\"state\":\"failed\",\"failure\":\"x\"}]}");
	free(doc);
	ck_assert_int_eq(store_check_get(st, "gpu:0", "chk-gone", &doc), ACCELD_OK);
	ck_assert_ptr_nonnull(strstr(doc, "\"state\":\"failed\""));
	ck_assert_ptr_nonnull(strstr(doc, "\"tests\":[{\"state\":\"queued\"}]"));
	free(doc);
	ck_assert_int_eq(store_checks_latest(st, &docs), ACCELD_OK);
	ck_assert_uint_eq(docs.n, 3);
	store_check_docs_release(&docs);
	store_close(st);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM checks WHERE state = 'done'"), 0);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM checks WHERE state = 'failed'"), 1);
}
END_TEST

START_TEST(newer_file_is_refused_and_left_alone)
{
	struct store *st = NULL;
	char path[300], err[256];
	struct store_sample s = sample("cpu:0", T0, 1000, 0.5);

	tmp_path(path, sizeof(path), "new.db");
	file_exec(path, "CREATE TABLE future (x); PRAGMA user_version = 99");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_ptr_nonnull(strstr(err, "newer"));
	ck_assert(!store_healthy(st, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "schema version 99 is newer"));
	store_add_samples(st, &s, 1);
	ck_assert(!store_flush(st, 100));
	store_close(st);
	ck_assert_int_eq(file_query(path, "PRAGMA user_version"), 99);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'samples'"), 0);
}
END_TEST

START_TEST(corrupt_file_is_reported_and_replaced_file_recovers)
{
	struct store *st = NULL;
	struct store_opts o = {.retry_interval_ms = 50};
	struct store_sample s = sample("cpu:0", T0, 1000, 0.5);
	char path[300], err[256];
	FILE *f;

	tmp_path(path, sizeof(path), "bad.db");
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 512; i++)
		fputs("this is not a database file ", f);
	fclose(f);
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert(!store_healthy(st, err, sizeof(err)));
	ck_assert_msg(strstr(err, "not a database") != NULL, "%s", err);
	store_add_samples(st, &s, 1);
	ck_assert(!store_flush(st, 200));
	/* an operator moves the file aside: the next attempt creates a fresh database with the waiting sample */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert(store_flush(st, 10000));
	ck_assert(store_healthy(st, err, sizeof(err)));
	store_close(st);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM samples"), 1);
}
END_TEST

/* The newest schema is the last migration file's number: a build knows every file under db/migrations. */
START_TEST(schema_version_is_the_last_migration)
{
	DIR *d = opendir("db/migrations");
	struct dirent *e;
	int last = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		char *end = NULL;
		long v = strtol(e->d_name, &end, 10);

		if (end != e->d_name && *end == '_' && strstr(e->d_name, ".sql") != NULL && v > last)
			last = (int)v;
	}
	closedir(d);
	ck_assert_int_gt(last, 0);
	ck_assert_int_eq(store_schema_version(), last);
}
END_TEST

/* Folders are made down to the file; one that cannot be made is named with why. */
START_TEST(missing_folders_are_made_and_a_blocked_one_is_named)
{
	struct store *st = NULL;
	struct stat sb;
	char path[320], blocker[300], err[256];
	FILE *f;

	tmp_path(path, sizeof(path), "a/b/c/d.db");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_str_eq(err, "");
	store_close(st);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert(S_ISREG(sb.st_mode));

	/* a regular file where a folder should be: the store runs, unhealthy, and says which folder */
	tmp_path(blocker, sizeof(blocker), "plain");
	f = fopen(blocker, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/sub/d.db", blocker);
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_msg(strstr(err, "cannot create the folder of") != NULL && strstr(err, path) != NULL, "%s", err);
	ck_assert(!store_healthy(st, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "Not a directory"));
	store_close(st);
}
END_TEST

/* A file whose pages are damaged (its header intact) is found at open and said to be corrupt, with what to do. */
START_TEST(corrupt_pages_are_named)
{
	struct store *st = NULL;
	struct store_opts o = {.retry_interval_ms = 60000};
	char path[300], err[256];
	char junk[4096];
	FILE *f;

	tmp_path(path, sizeof(path), "damaged.db");
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	for (int i = 0; i < 2000; i++) {
		struct store_sample s = sample(i % 2 ? "cpu:0" : "gpu:0", T0 + i * 1000, 1000, 0.5);

		store_add_samples(st, &s, 1);
	}
	ck_assert(store_flush(st, 10000));
	store_close(st);
	ck_assert_int_gt(file_query(path, "PRAGMA page_count"), 4);
	/* every page after the first (the header and the schema's root) overwritten */
	memset(junk, 0x5a, sizeof(junk));
	f = fopen(path, "r+");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, (long)file_query(path, "PRAGMA page_size"), SEEK_SET), 0);
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
	fclose(f);
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert(!store_healthy(st, err, sizeof(err)));
	ck_assert_msg(strstr(err, path) != NULL, "%s", err);
	ck_assert_msg(strstr(err, "corrupt") != NULL || strstr(err, "malformed") != NULL, "%s", err);
	store_close(st);
}
END_TEST

/* Only errors of the file itself make the writer close and reopen its connection. */
START_TEST(file_errors_reopen_the_connection)
{
	static const int reopen[] = {SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_IOERR, SQLITE_IOERR_WRITE, SQLITE_CANTOPEN,
				     SQLITE_READONLY, SQLITE_READONLY_DBMOVED, SQLITE_SCHEMA};
	static const int stay[] = {SQLITE_OK, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL, SQLITE_CONSTRAINT,
				   SQLITE_ERROR, SQLITE_NOMEM, SQLITE_BUSY_SNAPSHOT};

	for (size_t i = 0; i < sizeof(reopen) / sizeof(reopen[0]); i++)
		ck_assert_msg(store_rc_needs_reopen(reopen[i]), "%s", sqlite3_errstr(reopen[i]));
	for (size_t i = 0; i < sizeof(stay) / sizeof(stay[0]); i++)
		ck_assert_msg(!store_rc_needs_reopen(stay[i]), "%s", sqlite3_errstr(stay[i]));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("store_db");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, fresh_file_gets_the_newest_schema);
	tcase_add_test(tc, older_file_is_upgraded_keeping_its_rows);
	tcase_add_test(tc, old_job_states_are_migrated);
	tcase_add_test(tc, version_5_reads_back_in_one_vocabulary);
	tcase_add_test(tc, newer_file_is_refused_and_left_alone);
	tcase_add_test(tc, corrupt_file_is_reported_and_replaced_file_recovers);
	tcase_add_test(tc, schema_version_is_the_last_migration);
	tcase_add_test(tc, missing_folders_are_made_and_a_blocked_one_is_named);
	tcase_add_test(tc, corrupt_pages_are_named);
	tcase_add_test(tc, file_errors_reopen_the_connection);
	suite_add_tcase(s, tc);
	return s;
}
