/*
 * Unit tests for journal.c: a record's line round-trips every field (unknown figures, text that is not UTF-8), lines
 * cut short are skipped on replay, one owner at a time, a committed file is emptied or removed, and a large one is
 * sealed while appends go on in a new one.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "store/journal.h"

static char tmpdir[256];
static char db[300];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/acceld-journal-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(db, sizeof(db), "%s/a.db", tmpdir);
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* The size of db's journal file with this suffix, -1 when there is none. */
static long file_size(const char *suffix)
{
	char path[320];
	struct stat sb;

	snprintf(path, sizeof(path), "%s%s", db, suffix);
	return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static struct store_job job(unsigned i)
{
	struct store_job j = {.device = "cpu:0", .kernel = "dot", .backend = "native", .state = "succeeded",
			      .submitted_ms = 1700000000000LL + i, .started_ms = 1700000000001LL + i,
			      .finished_ms = 1700000000002LL + i, .n = 1024 + i, .flops = 2048, .bytes = 8192,
			      .queued_ms = 0.25, .transfer_ms = NAN, .kernel_ms = 1.0 / 3.0, .total_ms = 0.5,
			      .cost_usd = NAN};

	snprintf(j.id, sizeof(j.id), "job-%06u", i);
	return j;
}

/* What a replay hands over. */
struct seen {
	unsigned n;
	char ids[4096][64];
};

static int collect(void *ctx, const struct store_job *j)
{
	struct seen *s = ctx;

	if (s->n < 4096)
		snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", j->id);
	s->n++;
	return 0;
}

static int refuse(void *ctx, const struct store_job *j)
{
	(void)ctx;
	(void)j;
	return 1;
}

/* A claimed, started journal for db. */
static struct journal *started(void)
{
	struct journal *jn = journal_claim(db);

	ck_assert_ptr_nonnull(jn);
	ck_assert_int_eq(journal_start(jn), 0);
	return jn;
}

static void append(struct journal *jn, unsigned i)
{
	struct store_job j = job(i);
	char line[JOURNAL_LINE_MAX];
	size_t len = journal_encode(&j, line, sizeof(line));

	ck_assert_uint_gt(len, 0);
	ck_assert(journal_append(jn, line, len, i));
}

START_TEST(a_record_round_trips)
{
	struct store_job in = job(7), out;
	char line[JOURNAL_LINE_MAX];
	size_t len;

	snprintf(in.reason, sizeof(in.reason), "DEVICE_FAILURE");
	snprintf(in.error, sizeof(in.error), "driver said \"no\"\tand \xff\xfe then\nstopped");
	in.m = 3;
	in.k = 5;
	snprintf(in.trigger, sizeof(in.trigger), "check");
	snprintf(in.check_id, sizeof(in.check_id), "chk-1f");
	in.peak_gflops = 0.1 + 0.2;
	in.peak_gbytes_per_s = NAN;
	len = journal_encode(&in, line, sizeof(line));
	ck_assert_uint_gt(len, 0);
	ck_assert_int_eq(line[len - 1], '\n');
	ck_assert_ptr_null(memchr(line, '\n', len - 1)); /* one line, whatever the text holds */
	ck_assert(journal_decode(line, len - 1, &out));
	ck_assert_str_eq(out.id, in.id);
	ck_assert_str_eq(out.device, "cpu:0");
	ck_assert_str_eq(out.kernel, "dot");
	ck_assert_str_eq(out.backend, "native");
	ck_assert_str_eq(out.state, "succeeded");
	ck_assert_str_eq(out.reason, "DEVICE_FAILURE");
	ck_assert_str_eq(out.error, "driver said \"no\"\tand \xef\xbf\xbd\xef\xbf\xbd then\nstopped");
	ck_assert_int_eq(out.submitted_ms, in.submitted_ms);
	ck_assert_int_eq(out.started_ms, in.started_ms);
	ck_assert_int_eq(out.finished_ms, in.finished_ms);
	ck_assert_uint_eq(out.n, 1031);
	ck_assert_uint_eq(out.m, 3);
	ck_assert_uint_eq(out.k, 5);
	ck_assert(out.flops == 2048 && out.bytes == 8192 && out.queued_ms == 0.25 && out.total_ms == 0.5);
	ck_assert(out.kernel_ms == 1.0 / 3.0); /* exactly: 17 significant digits */
	ck_assert(isnan(out.transfer_ms) && isnan(out.cost_usd));
	ck_assert_str_eq(out.trigger, "check");
	ck_assert_str_eq(out.check_id, "chk-1f");
	ck_assert(out.peak_gflops == 0.1 + 0.2 && isnan(out.peak_gbytes_per_s));
	/* an id cut inside a UTF-8 sequence still makes a line */
	snprintf(in.id, sizeof(in.id), "job-\xce");
	len = journal_encode(&in, line, sizeof(line));
	ck_assert_uint_gt(len, 0);
	ck_assert(journal_decode(line, len - 1, &out));
	ck_assert_str_eq(out.id, "job-\xef\xbf\xbd");
	/* a line of an earlier version: no trigger, no peak (unknown, not 0) */
	{
		static const char old[] = "{\"v\":1,\"id\":\"a\",\"device\":\"cpu:0\",\"kernel\":\"dot\"}";

		ck_assert(journal_decode(old, sizeof(old) - 1, &out));
	}
	ck_assert(out.trigger[0] == '\0' && out.check_id[0] == '\0');
	ck_assert(isnan(out.peak_gflops) && isnan(out.peak_gbytes_per_s));
	/* no room: nothing, rather than a line without its end */
	ck_assert_uint_eq(journal_encode(&in, line, 40), 0);
	/* not a record: no id, another format, not an object, cut short */
	{
		static const char *const bad[] = {"{\"v\":1}",
						  "{\"v\":2,\"id\":\"a\",\"device\":\"cpu:0\",\"kernel\":\"dot\"}", "[1,2]",
						  "{\"v\":1,\"id\":\"a"};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			ck_assert(!journal_decode(bad[i], strlen(bad[i]), &out));
	}
}
END_TEST

START_TEST(replay_reads_every_whole_line_and_skips_a_cut_one)
{
	struct journal *jn = started();
	struct seen *s = calloc(1, sizeof(*s));
	size_t skipped = 9;
	FILE *f;
	char path[320];

	ck_assert_int_eq(journal_replay(jn, collect, s, &skipped), 0); /* empty */
	ck_assert_uint_eq(skipped, 0);
	for (unsigned i = 0; i < 3; i++)
		append(jn, i);
	journal_close(jn, false); /* as a crash leaves it */
	/* a write cut short by power loss, and a line of garbage */
	snprintf(path, sizeof(path), "%s-redo", db);
	f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fputs("not json\n{\"v\":1,\"id\":\"job-cut\",\"dev", f);
	fclose(f);
	jn = journal_claim(db);
	ck_assert_ptr_nonnull(jn);
	ck_assert_int_eq(journal_replay(jn, collect, s, &skipped), 3);
	ck_assert_uint_eq(skipped, 2);
	ck_assert_str_eq(s->ids[0], "job-000000");
	ck_assert_str_eq(s->ids[2], "job-000002");
	/* a consumer that fails stops it */
	ck_assert_int_eq(journal_replay(jn, refuse, NULL, &skipped), -1);
	/* started afresh: nothing to replay */
	ck_assert_int_eq(journal_start(jn), 0);
	ck_assert_int_eq(file_size("-redo"), 0);
	s->n = 0;
	ck_assert_int_eq(journal_replay(jn, collect, s, &skipped), 0);
	/* a file that is there but cannot be read is an error, not an empty journal */
	if (geteuid() != 0) {
		append(jn, 1);
		ck_assert_int_eq(chmod(path, 0), 0);
		ck_assert_int_eq(journal_replay(jn, collect, s, &skipped), -1);
	}
	journal_close(jn, true);
	ck_assert_int_eq(file_size("-redo"), -1);
	free(s);
}
END_TEST

START_TEST(one_process_owns_a_journal)
{
	struct journal *a = journal_claim(db);
	struct journal *b;

	ck_assert_ptr_nonnull(a);
	/* another claim (another open file, as another process would hold) is refused while the first holds it */
	b = journal_claim(db);
	ck_assert_ptr_null(b);
	ck_assert_int_eq(errno, EWOULDBLOCK);
	journal_close(a, false);
	b = journal_claim(db);
	ck_assert_ptr_nonnull(b);
	journal_close(b, true);
}
END_TEST

START_TEST(committed_files_are_emptied_and_a_large_one_sealed)
{
	struct journal *jn = started();
	struct seen *s = calloc(1, sizeof(*s));
	size_t skipped;
	unsigned i = 0;

	append(jn, i++);
	append(jn, i++);
	journal_committed(jn, 1); /* record 1 is not committed yet: the file stays */
	ck_assert_int_gt(file_size("-redo"), 0);
	journal_committed(jn, 2);
	ck_assert_int_eq(file_size("-redo"), 0);
	/* past the seal size, with its newest records uncommitted: sealed, and appends go on in a new file */
	while (file_size("-redo") < (long)JOURNAL_SEAL_BYTES)
		append(jn, i++);
	journal_committed(jn, 10);
	ck_assert_int_ge(file_size("-redo.1"), (long)JOURNAL_SEAL_BYTES);
	ck_assert_int_eq(file_size("-redo"), 0);
	append(jn, i++);
	append(jn, i++);
	/* a crash now: replay gives both files' records, the sealed ones first */
	ck_assert_int_eq(journal_replay(jn, collect, s, &skipped), (long)i - 2);
	ck_assert_uint_eq(skipped, 0);
	ck_assert_str_eq(s->ids[0], "job-000002");
	{
		char last[16];

		snprintf(last, sizeof(last), "job-%06u", i - 1);
		ck_assert_str_eq(s->ids[i - 3], last);
	}
	/* the sealed file goes once its newest record is committed; the active one once all of its are */
	journal_committed(jn, i - 2);
	ck_assert_int_eq(file_size("-redo.1"), -1);
	ck_assert_int_gt(file_size("-redo"), 0);
	journal_committed(jn, i);
	ck_assert_int_eq(file_size("-redo"), 0);
	journal_close(jn, true);
	ck_assert_int_eq(file_size("-redo"), -1);
	free(s);
}
END_TEST

START_TEST(an_unwritable_folder_gives_no_journal)
{
	char bad[320];

	snprintf(bad, sizeof(bad), "%s/missing/a.db", tmpdir);
	ck_assert_ptr_null(journal_claim(bad));
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("journal");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_record_round_trips);
	tcase_add_test(tc, replay_reads_every_whole_line_and_skips_a_cut_one);
	tcase_add_test(tc, one_process_owns_a_journal);
	tcase_add_test(tc, committed_files_are_emptied_and_a_large_one_sealed);
	tcase_add_test(tc, an_unwritable_folder_gives_no_journal);
	suite_add_tcase(s, tc);
	return s;
}
