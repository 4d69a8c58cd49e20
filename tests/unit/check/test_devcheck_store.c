/*
 * Unit tests of the health checks' history (devcheck_store.c) through a store on a database file: documents written
 * and replaced, listed newest first with pages, read back by device and id, after a restart too, the last finished
 * check of each device, checks a crash cut short marked interrupted, an in-memory database, and a database that
 * cannot be used (the check waits in the store and is written once it recovers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "check/devcheck_store.h"
#include "store/store.h"

static char dir[256];
static char path[300];
static struct store *st;

static void setup(void)
{
	char err[256];

	snprintf(dir, sizeof(dir), "/tmp/acceld-devcheck-store-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/acceld.db", dir);
	/* the store creates the file and applies the migrations, 0005 (checks) among them */
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_msg(store_healthy(st, err, sizeof(err)), "%s", err);
}

static void teardown(void)
{
	char cmd[400];

	store_close(st);
	st = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A check document as devcheck makes one; finished_at NULL while it runs. */
static json_t *doc(const char *id, const char *device, const char *state, const char *created, const char *finished)
{
	json_t *d = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:f, s:f}}", "id", id, "device", device, "level", "quick",
			      "state", state, "created_at", created, "measured", "gflops", 100.0, "gbytes_per_s", 20.0);

	if (finished != NULL) {
		json_object_set_new(d, "finished_at", json_string(finished));
		json_object_set_new(d, "verdict", json_string("pass"));
	}
	return d;
}

static void put(struct devcheck_store *cs, json_t *d)
{
	char err[256];

	ck_assert_int_eq(devcheck_store_put(cs, d, err, sizeof(err)), ACCELD_OK);
	json_decref(d);
}

static const char *id_at(json_t *docs, size_t i)
{
	return json_string_value(json_object_get(json_array_get(docs, i), "id"));
}

START_TEST(written_listed_and_read_back)
{
	struct devcheck_store *cs = devcheck_store_new(st, 0);
	json_t *docs = NULL;
	json_t *one = NULL;
	char err[256];
	bool more;

	ck_assert_ptr_nonnull(cs);
	put(cs, doc("chk-a", "cpu:0", "succeeded", "2026-11-20T10:00:00.000Z", "2026-11-20T10:00:04.000Z"));
	put(cs, doc("chk-b", "cpu:0", "succeeded", "2026-11-20T11:00:00.000Z", "2026-11-20T11:00:04.000Z"));
	put(cs, doc("chk-g", "gpu:0", "succeeded", "2026-11-20T11:30:00.000Z", "2026-11-20T11:30:04.000Z"));
	/* a check is written when it starts and replaced when it ends */
	put(cs, doc("chk-c", "cpu:0", "running", "2026-11-20T12:00:00.000Z", NULL));
	put(cs, doc("chk-c", "cpu:0", "succeeded", "2026-11-20T12:00:00.000Z", "2026-11-20T12:00:05.000Z"));

	/* newest first, in pages; the token is the last id of a page */
	ck_assert_int_eq(devcheck_store_list(cs, "cpu:0", 2, NULL, &docs, &more), ACCELD_OK);
	ck_assert_uint_eq(json_array_size(docs), 2);
	ck_assert_str_eq(id_at(docs, 0), "chk-c");
	ck_assert_str_eq(id_at(docs, 1), "chk-b");
	ck_assert(more);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(docs, 0), "state")), "succeeded");
	json_decref(docs);
	ck_assert_int_eq(devcheck_store_list(cs, "cpu:0", 2, "chk-b", &docs, &more), ACCELD_OK);
	ck_assert_uint_eq(json_array_size(docs), 1);
	ck_assert_str_eq(id_at(docs, 0), "chk-a");
	ck_assert(!more);
	json_decref(docs);
	/* a token of another device's check, or of none, is no token */
	ck_assert_int_eq(devcheck_store_list(cs, "cpu:0", 2, "chk-g", &docs, &more), ACCELD_ENOTFOUND);
	ck_assert_int_eq(devcheck_store_list(cs, "cpu:0", 2, "chk-zz", &docs, &more), ACCELD_ENOTFOUND);
	ck_assert_int_eq(devcheck_store_list(cs, "tpu:0", 5, NULL, &docs, &more), ACCELD_OK);
	ck_assert_uint_eq(json_array_size(docs), 0);
	json_decref(docs);

	ck_assert_int_eq(devcheck_store_get(cs, "gpu:0", "chk-g", &one), ACCELD_OK);
	ck_assert_str_eq(json_string_value(json_object_get(one, "device")), "gpu:0");
	json_decref(one);
	ck_assert_int_eq(devcheck_store_get(cs, "cpu:0", "chk-g", &one), ACCELD_ENOTFOUND);

	/* the last finished check of each device, for the figures after a restart */
	ck_assert_int_eq(devcheck_store_latest(cs, &docs), ACCELD_OK);
	ck_assert_uint_eq(json_array_size(docs), 2);
	for (size_t i = 0; i < 2; i++)
		ck_assert(strcmp(id_at(docs, i), "chk-c") == 0 || strcmp(id_at(docs, i), "chk-g") == 0);
	json_decref(docs);
	devcheck_store_free(cs);

	/* a put is committed when it returns: the file has it, and so has the next start */
	store_close(st);
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	cs = devcheck_store_new(st, 0);
	ck_assert_int_eq(devcheck_store_get(cs, "cpu:0", "chk-c", &one), ACCELD_OK);
	ck_assert_str_eq(json_string_value(json_object_get(one, "state")), "succeeded");
	ck_assert_double_eq(json_real_value(json_object_get(json_object_get(one, "measured"), "gflops")), 100.0);
	json_decref(one);
	devcheck_store_free(cs);
}
END_TEST

START_TEST(crash_leftovers_become_interrupted)
{
	struct devcheck_store *cs = devcheck_store_new(st, 0);
	json_t *one = NULL;
	json_t *err;
	unsigned n = 0;

	put(cs, doc("chk-r", "cpu:0", "running", "2026-11-20T12:00:00.000Z", NULL));
	put(cs, doc("chk-d", "cpu:0", "succeeded", "2026-11-20T11:00:00.000Z", "2026-11-20T11:00:04.000Z"));
	ck_assert_int_eq(devcheck_store_mark_interrupted(cs, 1795176000000, &n), ACCELD_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(devcheck_store_get(cs, "cpu:0", "chk-r", &one), ACCELD_OK);
	ck_assert_str_eq(json_string_value(json_object_get(one, "state")), "interrupted");
	err = json_object_get(one, "error");
	ck_assert_str_eq(json_string_value(json_object_get(err, "reason")), "INTERRUPTED");
	ck_assert_ptr_nonnull(json_object_get(one, "finished_at"));
	json_decref(one);
	/* ended ones are left alone, and a second start finds nothing left */
	ck_assert_int_eq(devcheck_store_get(cs, "cpu:0", "chk-d", &one), ACCELD_OK);
	ck_assert_str_eq(json_string_value(json_object_get(one, "state")), "succeeded");
	json_decref(one);
	ck_assert_int_eq(devcheck_store_mark_interrupted(cs, 1795176000000, &n), ACCELD_OK);
	ck_assert_uint_eq(n, 0);
	devcheck_store_free(cs);
}
END_TEST

START_TEST(retention_and_bad_input)
{
	/* rows finished more than an hour before the newest are deleted as it is written */
	struct devcheck_store *cs = devcheck_store_new(st, 3600000);
	json_t *docs = NULL;
	json_t *bad = json_pack("{s:s}", "id", "x");
	char err[256];
	bool more;

	put(cs, doc("chk-1", "cpu:0", "succeeded", "2026-11-20T08:00:00.000Z", "2026-11-20T08:00:04.000Z"));
	put(cs, doc("chk-2", "cpu:0", "succeeded", "2026-11-20T10:00:00.000Z", "2026-11-20T10:00:04.000Z"));
	ck_assert_int_eq(devcheck_store_list(cs, "cpu:0", 10, NULL, &docs, &more), ACCELD_OK);
	ck_assert_uint_eq(json_array_size(docs), 1);
	ck_assert_str_eq(id_at(docs, 0), "chk-2");
	json_decref(docs);
	ck_assert_int_eq(devcheck_store_put(cs, bad, err, sizeof(err)), ACCELD_EINVAL);
	json_decref(bad);
	/* an id longer than the table keeps is no check's */
	bad = doc("chk-0123456789012345678901234567890123456789012345678901234567890123", "cpu:0", "succeeded",
		  "2026-11-20T10:00:00.000Z", NULL);
	ck_assert_int_eq(devcheck_store_put(cs, bad, err, sizeof(err)), ACCELD_EINVAL);
	json_decref(bad);
	devcheck_store_free(cs);
	/* no store, no history */
	ck_assert_ptr_null(devcheck_store_new(NULL, 0));
}
END_TEST

START_TEST(an_in_memory_database_keeps_checks_too)
{
	struct store *mem = NULL;
	struct devcheck_store *cs;
	json_t *docs = NULL;
	char err[256];

	ck_assert_int_eq(store_open(":memory:", &mem, err, sizeof(err)), ACCELD_OK);
	cs = devcheck_store_new(mem, 0);
	ck_assert_ptr_nonnull(cs);
	put(cs, doc("chk-m", "cpu:0", "succeeded", "2026-11-20T10:00:00.000Z", "2026-11-20T10:00:04.000Z"));
	ck_assert_int_eq(devcheck_store_latest(cs, &docs), ACCELD_OK);
	ck_assert_uint_eq(json_array_size(docs), 1);
	ck_assert_str_eq(id_at(docs, 0), "chk-m");
	json_decref(docs);
	devcheck_store_free(cs);
	store_close(mem);
}
END_TEST

START_TEST(a_database_that_cannot_be_used_keeps_the_check_waiting)
{
	struct store *bad_st = NULL;
	struct store_opts o = {.retry_interval_ms = 50};
	struct devcheck_store *cs;
	json_t *docs = NULL;
	json_t *one = NULL;
	json_t *d;
	char blocked[300], bad_path[320], err[256];
	bool more;
	FILE *f;

	/* the database's folder is a regular file for now: nothing can be created there */
	snprintf(blocked, sizeof(blocked), "%s/blocked", dir);
	snprintf(bad_path, sizeof(bad_path), "%s/acceld.db", blocked);
	f = fopen(blocked, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	o.path = bad_path;
	ck_assert_int_eq(store_open_opts(&o, &bad_st, err, sizeof(err)), ACCELD_OK);
	cs = devcheck_store_new(bad_st, 0);
	ck_assert_ptr_nonnull(cs);
	d = doc("chk-w", "cpu:0", "succeeded", "2026-11-20T10:00:00.000Z", "2026-11-20T10:00:04.000Z");
	ck_assert_int_eq(devcheck_store_put(cs, d, err, sizeof(err)), ACCELD_EUNAVAILABLE);
	ck_assert_msg(strstr(err, "cannot create the folder") != NULL, "%s", err);
	json_decref(d);
	ck_assert_int_eq(devcheck_store_latest(cs, &docs), ACCELD_EUNAVAILABLE);
	ck_assert_ptr_null(docs);
	ck_assert_int_eq(devcheck_store_list(cs, "cpu:0", 5, NULL, &docs, &more), ACCELD_EUNAVAILABLE);
	ck_assert_int_eq(devcheck_store_mark_interrupted(cs, 1795176000000, NULL), ACCELD_EUNAVAILABLE);
	/* the folder appears: the store writes the check it kept */
	ck_assert_int_eq(unlink(blocked), 0);
	ck_assert_int_eq(mkdir(blocked, 0700), 0);
	ck_assert(store_flush(bad_st, 10000));
	ck_assert_int_eq(devcheck_store_get(cs, "cpu:0", "chk-w", &one), ACCELD_OK);
	ck_assert_str_eq(json_string_value(json_object_get(one, "state")), "succeeded");
	json_decref(one);
	devcheck_store_free(cs);
	store_close(bad_st);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("devcheck_store");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, written_listed_and_read_back);
	tcase_add_test(tc, crash_leftovers_become_interrupted);
	tcase_add_test(tc, retention_and_bad_input);
	tcase_add_test(tc, an_in_memory_database_keeps_checks_too);
	tcase_add_test(tc, a_database_that_cannot_be_used_keeps_the_check_waiting);
	suite_add_tcase(s, tc);
	return s;
}
