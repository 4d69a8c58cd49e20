/*
 * What making one job record durable costs: appending it to acceld's journal (journal_encode + journal_append,
 * the code the store runs) against committing it alone in a SQLite transaction on the store's own schema (WAL,
 * synchronous=NORMAL, no automatic checkpoint: how the store commits when there is no journal), on a table that
 * already holds PREFILL jobs. Both write to the same folder.
 * Usage: record_cost DIR [RECORDS]   (bench/durable.sh builds and runs it)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "store/journal.h"
#include "store/store.h"

#define PREFILL 200000

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static struct store_job job(long i)
{
	struct store_job j = {.device = "cpu:0", .kernel = "saxpy", .backend = "native", .state = "succeeded",
			      .submitted_ms = 1764000000000LL + i, .started_ms = 1764000000000LL + i,
			      .finished_ms = 1764000000000LL + i, .n = 1024, .flops = 2048, .bytes = 12288,
			      .queued_ms = 0.0035, .transfer_ms = 0, .kernel_ms = 0.0007, .total_ms = 0.036,
			      .cost_usd = NAN};

	snprintf(j.id, sizeof(j.id), "%012llx%08lx", (unsigned long long)j.finished_ms, (i * 2654435761L) & 0xffffffff);
	return j;
}

static void insert(sqlite3_stmt *s, const struct store_job *j)
{
	sqlite3_bind_text(s, 1, j->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 2, j->finished_ms);
	sqlite3_step(s);
	sqlite3_reset(s);
}

int main(int argc, char **argv)
{
	long records = argc > 2 ? atol(argv[2]) : 20000;
	char path[4096], line[JOURNAL_LINE_MAX], err[256];
	struct store *st = NULL;
	struct journal *jn;
	sqlite3 *db = NULL;
	sqlite3_stmt *ins = NULL, *begin = NULL, *commit = NULL;
	double t0, journal_us, commit_us;

	if (argc < 2 || records <= 0) {
		fprintf(stderr, "usage: record_cost DIR [RECORDS]\n");
		return 2;
	}
	/* the store's schema, by the store's migrations */
	snprintf(path, sizeof(path), "%s/cost.db", argv[1]);
	if (store_open(path, &st, err, sizeof(err)) != ACCELD_OK || !store_healthy(st, err, sizeof(err))) {
		fprintf(stderr, "record_cost: %s\n", err);
		return 1;
	}
	store_close(st);
	sqlite3_open(path, &db);
	sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0", NULL,
		     NULL, NULL);
	sqlite3_prepare_v2(db,
			   "INSERT INTO jobs (id, device, kernel, backend, state, submitted_at, started_at, finished_at, "
			   "n, flops, bytes, kernel_ms, total_ms, queued_ms, transfer_ms) VALUES (?1, 'cpu:0', 'saxpy', "
			   "'native', 'succeeded', ?2, ?2, ?2, 1024, 2048, 12288, 0.0007, 0.036, 0.0035, 0)",
			   -1, &ins, NULL);
	sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, NULL);
	sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL);
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	for (long i = 0; i < PREFILL; i++) {
		struct store_job j = job(i);

		insert(ins, &j);
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);

	t0 = now_us();
	for (long i = 0; i < records; i++) {
		struct store_job j = job(PREFILL + i);

		sqlite3_step(begin);
		sqlite3_reset(begin);
		insert(ins, &j);
		sqlite3_step(commit);
		sqlite3_reset(commit);
		if (i % 1000 == 999) /* as the writer does, about once a second */
			sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	}
	commit_us = (now_us() - t0) / (double)records;
	sqlite3_finalize(ins);
	sqlite3_finalize(begin);
	sqlite3_finalize(commit);
	sqlite3_close(db);

	jn = journal_claim(path);
	if (jn == NULL || journal_start(jn) != 0) {
		perror("record_cost: journal");
		return 1;
	}
	t0 = now_us();
	for (long i = 0; i < records; i++) {
		struct store_job j = job(i);
		size_t len = journal_encode(&j, line, sizeof(line));

		if (len == 0 || !journal_append(jn, line, len, (uint64_t)i)) {
			perror("record_cost: append");
			return 1;
		}
		if (i % 1000 == 999) /* a batch committed: the file is emptied, as the store does */
			journal_committed(jn, (uint64_t)i + 1);
	}
	journal_us = (now_us() - t0) / (double)records;
	journal_close(jn, true);

	printf("one-record commit %.1f us, journal append %.2f us (encode and write), ratio %.1f\n", commit_us,
	       journal_us, commit_us / journal_us);
	return 0;
}
