/* store_writer: the writer thread: batches taken from the queues and committed, rollups, retention, checkpoints. */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "store/journal.h"

/* The key of device id, inserting a bare row for a device never announced by store_devices_seen. */
static int device_key(struct store *st, const char *id, int64_t ts, int64_t *key)
{
	sqlite3_stmt *s;
	char type[8];
	int rc;

	for (size_t i = 0; i < st->nkeys; i++) {
		if (strcmp(st->keys[i].id, id) == 0) {
			*key = st->keys[i].key;
			return SQLITE_OK;
		}
	}
	snprintf(type, sizeof(type), "%.*s", (int)strcspn(id, ":"), id);
	s = store_conn_stmt(&st->w, S_DEVICE_ENSURE, &rc);
	if (s == NULL)
		return rc;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, type, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, ts);
	rc = step_done(s);
	if (rc != SQLITE_OK)
		return rc;
	s = store_conn_stmt(&st->w, S_DEVICE_KEY, &rc);
	if (s == NULL)
		return rc;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(s);
		return rc == SQLITE_DONE ? SQLITE_ERROR : rc;
	}
	*key = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	if (st->nkeys < KEYS_MAX) {
		snprintf(st->keys[st->nkeys].id, sizeof(st->keys[0].id), "%s", id);
		st->keys[st->nkeys++].key = *key;
	}
	return SQLITE_OK;
}

static int write_device(struct store *st, const struct store_device_pending *d)
{
	int rc;
	sqlite3_stmt *s = store_conn_stmt(&st->w, S_DEVICE_UPSERT, &rc);

	if (s == NULL)
		return rc;
	sqlite3_bind_text(s, 1, d->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, d->type, -1, SQLITE_TRANSIENT);
	bind_text(s, 3, d->model);
	bind_text(s, 4, d->accelerator_type);
	bind_text(s, 5, d->uuid);
	bind_num(s, 6, d->usd_per_hour);
	bind_text(s, 7, d->price_source);
	sqlite3_bind_int64(s, 8, d->first_seen);
	sqlite3_bind_int64(s, 9, d->last_seen);
	return step_done(s);
}

int store_write_job(struct store *st, const struct store_job *j)
{
	int rc;
	sqlite3_stmt *s = store_conn_stmt(&st->w, S_JOB, &rc);

	if (s == NULL)
		return rc;
	sqlite3_bind_text(s, 1, j->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, j->device, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 3, j->kernel, -1, SQLITE_TRANSIENT);
	bind_text(s, 4, j->backend);
	sqlite3_bind_text(s, 5, j->state[0] ? j->state : "queued", -1, SQLITE_TRANSIENT);
	bind_pos(s, 6, j->submitted_ms);
	bind_pos(s, 7, j->started_ms);
	bind_pos(s, 8, j->finished_ms);
	bind_pos(s, 9, (int64_t)j->n);
	bind_pos(s, 10, (int64_t)j->m);
	bind_pos(s, 11, (int64_t)j->k);
	bind_num(s, 12, j->flops);
	bind_num(s, 13, j->bytes);
	bind_num(s, 14, j->kernel_ms);
	bind_num(s, 15, j->total_ms);
	bind_num(s, 16, j->cost_usd);
	bind_text(s, 17, j->error);
	bind_text(s, 18, j->reason);
	bind_num(s, 19, j->queued_ms);
	bind_num(s, 20, j->transfer_ms);
	bind_text(s, 21, j->trigger);
	bind_text(s, 22, j->check_id);
	bind_num(s, 23, j->peak_gflops);
	bind_num(s, 24, j->peak_gbytes_per_s);
	bind_num(s, 25, j->setup_ms);
	bind_num(s, 26, j->generate_ms);
	bind_num(s, 27, j->verify_ms);
	bind_num(s, 28, j->transfer_bytes);
	bind_num(s, 29, j->upload_ms);
	bind_num(s, 30, j->upload_bytes);
	bind_num(s, 31, j->download_ms);
	bind_num(s, 32, j->download_bytes);
	bind_text(s, 33, j->transfer_memory);
	return step_done(s);
}

static int write_prices(struct store *st, const struct store_price *v, size_t n)
{
	int rc;
	sqlite3_stmt *s = store_conn_stmt(&st->w, S_PRICES_CLEAR, &rc);

	if (s == NULL || (rc = step_done(s)) != SQLITE_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		s = store_conn_stmt(&st->w, S_PRICE, &rc);
		if (s == NULL)
			return rc;
		sqlite3_bind_text(s, 1, v[i].selector, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(s, 2, v[i].value, -1, SQLITE_TRANSIENT);
		sqlite3_bind_double(s, 3, v[i].usd_per_hour);
		bind_num(s, 4, v[i].usd_per_hour_spot);
		bind_text(s, 5, v[i].unit);
		bind_text(s, 6, v[i].note);
		sqlite3_bind_int64(s, 7, v[i].updated_ms);
		rc = step_done(s);
		if (rc != SQLITE_OK)
			return rc;
	}
	return SQLITE_OK;
}

/* Writes a check, then deletes the checks that finished longer than its retention before it. */
static int write_check(struct store *st, const struct store_check_row *r)
{
	const struct store_check *c = &r->row;
	int rc;
	sqlite3_stmt *s = store_conn_stmt(&st->w, S_CHECK_PUT, &rc);

	if (s == NULL)
		return rc;
	sqlite3_bind_text(s, 1, c->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, c->device, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 3, c->level, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 4, c->state, -1, SQLITE_TRANSIENT);
	bind_text(s, 5, c->verdict);
	sqlite3_bind_int64(s, 6, c->created_ms);
	bind_pos(s, 7, c->finished_ms);
	bind_num(s, 8, c->gflops);
	bind_num(s, 9, c->gbytes_per_s);
	sqlite3_bind_text(s, 10, r->doc, -1, SQLITE_TRANSIENT);
	rc = step_done(s);
	if (rc != SQLITE_OK || c->finished_ms <= 0 || c->retention_ms <= 0)
		return rc;
	s = store_conn_stmt(&st->w, S_CHECKS_EXPIRE, &rc);
	if (s == NULL)
		return rc;
	sqlite3_bind_int64(s, 1, c->finished_ms - c->retention_ms);
	return step_done(s);
}

static int write_sample(struct store *st, const struct store_sample *x, int64_t key)
{
	int rc;
	sqlite3_stmt *s = store_conn_stmt(&st->w, S_SAMPLE, &rc);

	if (s == NULL)
		return rc;
	sqlite3_bind_int64(s, 1, key);
	sqlite3_bind_int64(s, 2, x->ts_ms);
	sqlite3_bind_int64(s, 3, x->dt_ms);
	sqlite3_bind_int(s, 4, (int)x->source);
	bind_num(s, 5, x->utilization_ratio);
	bind_num(s, 6, x->memory_used_bytes);
	bind_num(s, 7, x->temperature_celsius);
	bind_num(s, 8, x->power_watts);
	return step_done(s);
}

static void waiters_push(struct waiters *w, store_done_fn fn, void *ctx)
{
	if (fn == NULL)
		return;
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 64;
		w->v = xrealloc(w->v, w->cap * sizeof(*w->v));
	}
	w->v[w->n++] = (struct waiter){fn, ctx};
}

void store_waiters_call(struct store *st, struct waiters *w, bool ok)
{
	if (w->n == 0)
		return;
	pthread_mutex_lock(&st->mu);
	if (ok)
		st->stats.confirmed += w->n;
	else
		st->stats.unconfirmed += w->n;
	pthread_mutex_unlock(&st->mu);
	for (size_t i = 0; i < w->n; i++)
		w->v[i].fn(w->v[i].ctx, ok);
	w->n = 0;
}

/* Moves every completion still waiting in the queues into out (store closing, or the database failing); mu held. */
static void waiters_take_all_locked(struct store *st, struct waiters *out)
{
	for (uint64_t q = st->jhead; q != st->jtail; q++) {
		struct waiter *w = &st->jwait[q % STORE_BACKLOG_RECORDS];

		waiters_push(out, w->fn, w->ctx);
		w->fn = NULL;
	}
	for (size_t i = 0; i < st->npwait; i++)
		waiters_push(out, st->pwait[i].fn, st->pwait[i].ctx);
	st->npwait = 0;
	for (size_t i = 0; i < st->ncwait; i++)
		waiters_push(out, st->cwait[i].fn, st->cwait[i].ctx);
	st->ncwait = 0;
	st->nwait = 0;
	st->urgent = false;
	st->group_ready = false;
}

/* What one batch took from the queues, to be popped once committed. */
struct batch {
	size_t nsamples, njobs, ndevs, nchecks;
	uint64_t shead, jhead;
	struct store_price *prices;
	size_t nprices;
	bool has_prices;
	bool interrupt;
	int64_t min_ts, max_ts;
	size_t written;            /* samples actually written (older than the raw retention are skipped) */
};

/*
 * Takes a batch out of the queues, with the completions of what it holds (into st->wbatch). records_only leaves
 * samples, devices and the interrupt marking to the writer thread (a request's thread commits only records).
 */
static void batch_take(struct store *st, struct batch *b, bool records_only)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_lock(&st->mu);
	b->shead = st->head;
	b->nsamples = records_only ? 0 : (size_t)(st->tail - st->head);
	if (b->nsamples > BATCH_SAMPLES)
		b->nsamples = BATCH_SAMPLES;
	for (size_t i = 0; i < b->nsamples; i++)
		st->wbuf[i] = st->ring[(st->head + i) % st->cap];
	b->jhead = st->jhead;
	b->njobs = (size_t)(st->jtail - st->jhead);
	if (b->njobs > BATCH_JOBS)
		b->njobs = BATCH_JOBS;
	for (size_t i = 0; i < b->njobs; i++) {
		struct waiter *w = &st->jwait[(st->jhead + i) % STORE_BACKLOG_RECORDS];

		st->jbuf[i] = st->jobs[(st->jhead + i) % STORE_BACKLOG_RECORDS];
		if (w->fn != NULL && st->nwait > 0)
			st->nwait--;
		waiters_push(&st->wbatch, w->fn, w->ctx);
		w->fn = NULL;
	}
	/* a job's start record followed by its final one in the same batch is written once (the final one holds it) */
	for (size_t i = 0; i < b->njobs; i++) {
		if (strcmp(st->jbuf[i].state, "running") != 0)
			continue;
		for (size_t j = i + 1; j < b->njobs && j <= i + COALESCE_WINDOW; j++) {
			if (strcmp(st->jbuf[j].id, st->jbuf[i].id) == 0) {
				st->jbuf[i].id[0] = '\0';
				break;
			}
		}
	}
	if (!records_only)
		for (size_t i = 0; i < st->ndevs; i++)
			if (st->devs[i].version != st->devs[i].written)
				st->dbuf[b->ndevs++] = st->devs[i];
	b->has_prices = st->prices_set;
	b->prices = st->prices_pending;
	b->nprices = st->nprices_pending;
	st->prices_set = false;
	st->prices_pending = NULL;
	st->nprices_pending = 0;
	for (size_t i = 0; i < st->npwait; i++) {
		waiters_push(&st->wbatch, st->pwait[i].fn, st->pwait[i].ctx);
		if (st->nwait > 0)
			st->nwait--;
	}
	st->npwait = 0;
	/* the checks move to the batch, their documents with them */
	b->nchecks = st->nchecks;
	memcpy(st->cbuf, st->checks, st->nchecks * sizeof(*st->cbuf));
	st->nchecks = 0;
	for (size_t i = 0; i < st->ncwait; i++) {
		waiters_push(&st->wbatch, st->cwait[i].fn, st->cwait[i].ctx);
		if (st->nwait > 0)
			st->nwait--;
	}
	st->ncwait = 0;
	st->urgent = st->nwait > 0;
	st->group_ready = false;
	if (!records_only) {
		b->interrupt = st->interrupt_pending;
		st->interrupt_pending = false;
	}
	st->batch_open = true;
	pthread_mutex_unlock(&st->mu);
}

/*
 * A check whose batch failed goes back to the queue, unless a newer row of it came meanwhile (that one stays) or
 * the queue filled up (it is dropped, counted). mu held.
 */
static void checks_put_back_locked(struct store *st, struct store_check_row *r)
{
	for (size_t i = 0; i < st->nchecks; i++) {
		if (strcmp(st->checks[i].row.id, r->row.id) == 0) {
			free(r->doc);
			return;
		}
	}
	if (st->nchecks == STORE_BACKLOG_CHECKS) {
		st->stats.dropped_records++;
		free(r->doc);
		return;
	}
	st->checks[st->nchecks++] = *r;
}

/* After a commit: pops what was written. After a failure: puts back what cannot be re-read from the queues. */
static void batch_finish(struct store *st, struct batch *b, bool ok)
{
	pthread_mutex_lock(&st->mu);
	st->batch_open = false;
	if (ok) {
		if (st->head < b->shead + b->nsamples)
			st->head = b->shead + b->nsamples;
		if (st->jhead < b->jhead + b->njobs)
			st->jhead = b->jhead + b->njobs;
		if (st->jhead != st->jtail)
			st->jfirst_ns = clock_mono_ns(); /* they came while it committed */
		for (size_t i = 0; i < b->ndevs; i++)
			for (size_t j = 0; j < st->ndevs; j++)
				if (strcmp(st->devs[j].id, st->dbuf[i].id) == 0)
					st->devs[j].written = st->dbuf[i].version;
		st->stats.written_samples += b->written;
		st->stats.written_records +=
			b->njobs + b->ndevs + (b->has_prices ? b->nprices : 0) + b->nchecks + b->interrupt;
		st->stats.commits++;
		if (st->journal != NULL)
			journal_committed(st->journal, st->jhead);
		free(b->prices);
		for (size_t i = 0; i < b->nchecks; i++)
			free(st->cbuf[i].doc);
	} else {
		if (b->has_prices && !st->prices_set) {
			st->prices_set = true;
			st->prices_pending = b->prices;
			st->nprices_pending = b->nprices;
		} else {
			free(b->prices);
		}
		st->interrupt_pending = st->interrupt_pending || b->interrupt;
		for (size_t i = 0; i < b->nchecks; i++)
			checks_put_back_locked(st, &st->cbuf[i]);
	}
	pthread_mutex_unlock(&st->mu);
	b->prices = NULL;
}

int store_write_batch(struct store *st, bool records_only, bool *more, char *err, size_t errsz)
{
	struct batch b;
	int64_t raw_cutoff = st->max_ts - st->opts.retention_raw_ms;
	bool sync;
	int rc;

	batch_take(st, &b, records_only);
	b.min_ts = INT64_MAX;
	b.max_ts = INT64_MIN;
	*more = false;
	if (b.nsamples == 0 && b.njobs == 0 && b.ndevs == 0 && !b.has_prices && b.nchecks == 0 && !b.interrupt) {
		batch_finish(st, &b, true);
		return SQLITE_OK;
	}
	/*
	 * A batch with a health check is synced as it commits, whatever ACCELD_DB_SYNC says: checks had that promise
	 * on the connection of their own they had before (SQLite's default, FULL), and they are too few for the fsync
	 * to cost anything that matters.
	 */
	sync = b.nchecks > 0 && !st->opts.sync_full && !st->memory;
	if (sync)
		sqlite3_exec(st->w.db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
	{
		sqlite3_stmt *s = store_conn_stmt(&st->w, S_BEGIN, &rc);

		if (s != NULL)
			rc = step_done(s);
	}
	for (size_t i = 0; rc == SQLITE_OK && i < b.ndevs; i++)
		rc = write_device(st, &st->dbuf[i]);
	if (rc == SQLITE_OK && b.interrupt) {
		sqlite3_stmt *s = store_conn_stmt(&st->w, S_JOBS_INTERRUPT, &rc);

		if (s != NULL) {
			sqlite3_bind_int64(s, 1, clock_real_ms());
			rc = step_done(s);
			if (rc == SQLITE_OK && sqlite3_changes(st->w.db) > 0)
				log_fields(LOGL_WARN, "store",
					   "jobs left unfinished by the last run marked interrupted",
					   (struct log_field[]){LOG_I("jobs", sqlite3_changes(st->w.db))}, 1);
		}
	}
	if (rc == SQLITE_OK && b.has_prices)
		rc = write_prices(st, b.prices, b.nprices);
	for (size_t i = 0; rc == SQLITE_OK && i < b.nchecks; i++)
		rc = write_check(st, &st->cbuf[i]);
	for (size_t i = 0; rc == SQLITE_OK && i < b.njobs; i++)
		if (st->jbuf[i].id[0] != '\0')
			rc = store_write_job(st, &st->jbuf[i]);
	for (size_t i = 0; rc == SQLITE_OK && i < b.nsamples; i++) {
		const struct store_sample *x = &st->wbuf[i];
		int64_t key = -1;

		/* rows the raw retention would delete at once are not worth writing (a long outage's backlog) */
		if (st->max_ts > 0 && x->ts_ms < raw_cutoff)
			continue;
		rc = device_key(st, x->device, x->ts_ms, &key);
		if (rc == SQLITE_OK)
			rc = write_sample(st, x, key);
		if (rc == SQLITE_OK) {
			b.written++;
			b.min_ts = x->ts_ms < b.min_ts ? x->ts_ms : b.min_ts;
			b.max_ts = x->ts_ms > b.max_ts ? x->ts_ms : b.max_ts;
		}
	}
	if (rc == SQLITE_OK) {
		sqlite3_stmt *s = store_conn_stmt(&st->w, S_COMMIT, &rc);

		if (s != NULL)
			rc = step_done(s);
	}
	if (rc != SQLITE_OK) {
		snprintf(err, errsz, "%s", sqlite3_errmsg(st->w.db));
		sqlite3_exec(st->w.db, "ROLLBACK", NULL, NULL, NULL);
	}
	if (sync)
		sqlite3_exec(st->w.db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		/* keys of devices inserted in the rolled-back transaction are void */
		st->nkeys = 0;
		batch_finish(st, &b, false);
		return rc;
	}
	if (b.written > 0) {
		/* late rows (a backlog written after an outage) make their minutes and hours be rolled up again */
		if (st->wm[STORE_MINUTE] < 0 || b.min_ts < st->wm[STORE_MINUTE])
			st->wm[STORE_MINUTE] = floor_to(b.min_ts, STORE_MINUTE_MS);
		if (st->wm[STORE_HOUR] < 0 || b.min_ts < st->wm[STORE_HOUR])
			st->wm[STORE_HOUR] = floor_to(b.min_ts, STORE_HOUR_MS);
		if (b.max_ts > st->max_ts)
			st->max_ts = b.max_ts;
	}
	st->dirty = true;
	batch_finish(st, &b, true);
	pthread_mutex_lock(&st->mu);
	*more = (!records_only && st->tail != st->head) || st->jtail != st->jhead;
	pthread_mutex_unlock(&st->mu);
	return SQLITE_OK;
}

static int run_range(struct store *st, enum stmt_id id, int64_t a, int64_t b)
{
	int rc;
	sqlite3_stmt *s = store_conn_stmt(&st->w, id, &rc);

	if (s == NULL)
		return rc;
	sqlite3_bind_int64(s, 1, a);
	if (b != INT64_MIN)
		sqlite3_bind_int64(s, 2, b);
	return step_done(s);
}

/* Rolls complete minutes and hours up and applies retention, in one transaction. */
static int maintain(struct store *st, char *err, size_t errsz)
{
	int64_t target_m, target_h, new_m, new_h;
	bool retention;
	int rc;

	if (st->wm[STORE_MINUTE] < 0 || st->max_ts <= 0)
		return SQLITE_OK;
	/* a minute is complete once a sample of a later minute has been written */
	target_m = floor_to(st->max_ts, STORE_MINUTE_MS);
	target_h = floor_to(target_m, STORE_HOUR_MS);
	retention = st->max_ts - st->last_retention >= STORE_MINUTE_MS;
	if (st->wm[STORE_MINUTE] >= target_m && st->wm[STORE_HOUR] >= target_h && !retention)
		return SQLITE_OK;
	new_m = st->wm[STORE_MINUTE] < target_m ? target_m : st->wm[STORE_MINUTE];
	new_h = st->wm[STORE_HOUR] < target_h ? target_h : st->wm[STORE_HOUR];
	rc = store_exec_sql(st->w.db, "BEGIN IMMEDIATE", err, errsz);
	if (rc == SQLITE_OK && st->wm[STORE_MINUTE] < target_m)
		rc = run_range(st, S_ROLL_MINUTE, st->wm[STORE_MINUTE], target_m);
	if (rc == SQLITE_OK && st->wm[STORE_HOUR] < target_h)
		rc = run_range(st, S_ROLL_HOUR, st->wm[STORE_HOUR], target_h);
	if (rc == SQLITE_OK && retention) {
		int64_t raw = st->max_ts - st->opts.retention_raw_ms;
		int64_t minute = st->max_ts - st->opts.retention_minute_ms;

		/* never delete rows that have not been rolled up yet */
		rc = run_range(st, S_DEL_RAW, raw < new_m ? raw : new_m, INT64_MIN);
		if (rc == SQLITE_OK)
			rc = run_range(st, S_DEL_MINUTE, minute < new_h ? minute : new_h, INT64_MIN);
		if (rc == SQLITE_OK)
			rc = run_range(st, S_DEL_HOUR, st->max_ts - st->opts.retention_hour_ms, INT64_MIN);
		/* finished jobs are kept as long as the hourly rollups (unfinished ones have no finish time) */
		if (rc == SQLITE_OK)
			rc = run_range(st, S_DEL_JOBS, st->max_ts - st->opts.retention_hour_ms, INT64_MIN);
	}
	if (rc == SQLITE_OK)
		rc = store_exec_sql(st->w.db, "COMMIT", err, errsz);
	else
		snprintf(err, errsz, "%s", sqlite3_errmsg(st->w.db));
	if (rc != SQLITE_OK) {
		sqlite3_exec(st->w.db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	st->wm[STORE_MINUTE] = new_m;
	st->wm[STORE_HOUR] = new_h;
	if (retention)
		st->last_retention = st->max_ts;
	atomic_store(&st->pub_wm[STORE_MINUTE], new_m);
	atomic_store(&st->pub_wm[STORE_HOUR], new_h);
	return SQLITE_OK;
}

void store_fail_waiters(struct store *st)
{
	struct waiters all = {0};

	pthread_mutex_lock(&st->mu);
	waiters_take_all_locked(st, &all);
	pthread_mutex_unlock(&st->mu);
	store_waiters_call(st, &all, false);
	free(all.v);
}

void store_write_failed(struct store *st, int rc, const char *why)
{
	uint64_t backlog;

	pthread_mutex_lock(&st->mu);
	backlog = store_backlog_locked(st);
	if (!st->failing || strcmp(st->stats.last_error, why) != 0)
		log_fields(LOGL_ERROR, "store", "database write failed; retrying",
			   (struct log_field[]){LOG_S("error", why), LOG_I("backlog", backlog)}, 2);
	st->failing = true;
	st->stats.write_errors++;
	snprintf(st->stats.last_error, sizeof(st->stats.last_error), "%s", why);
	pthread_mutex_unlock(&st->mu);
	if (store_rc_needs_reopen(rc))
		store_writer_drop_conn(st);
}

/* One round of the writer: open when needed, write everything queued, roll up. */
static void writer_cycle(struct store *st, bool final)
{
	char err[256] = "";
	uint64_t now = clock_mono_ns();
	bool more = true;
	bool failing;
	int rc = SQLITE_OK;

	pthread_mutex_lock(&st->mu);
	failing = st->failing || st->w.db == NULL;
	pthread_mutex_unlock(&st->mu);
	if (failing && !final && now < st->next_try_ns)
		return;
	st->next_try_ns = now + (uint64_t)st->opts.retry_interval_ms * 1000000ull;
	pthread_mutex_lock(&st->w.lock);
	if (st->w.db == NULL && store_writer_open(st) != 0) {
		store_fail_waiters(st);
		goto out;
	}
	while (rc == SQLITE_OK && more) {
		rc = store_write_batch(st, false, &more, err, sizeof(err));
		store_waiters_call(st, &st->wbatch, rc == SQLITE_OK);
	}
	if (rc == SQLITE_OK)
		rc = maintain(st, err, sizeof(err));
	if (rc != SQLITE_OK) {
		store_write_failed(st, rc, err[0] ? err : sqlite3_errstr(rc));
		store_fail_waiters(st);
		goto out;
	}
	pthread_mutex_lock(&st->mu);
	if (st->failing)
		log_msg(LOGL_INFO, "store", "database writes succeed again");
	st->failing = false;
	st->stats.last_error[0] = '\0';
	pthread_mutex_unlock(&st->mu);
out:
	pthread_mutex_unlock(&st->w.lock);
}

bool store_queues_empty(const struct store *st)
{
	bool devs_clean = true;

	for (size_t i = 0; i < st->ndevs && devs_clean; i++)
		devs_clean = st->devs[i].version == st->devs[i].written;
	/* what a batch took out is not written until it commits: store_flush must not return in between */
	return st->head == st->tail && st->jhead == st->jtail && devs_clean && !st->prices_set && st->nchecks == 0 &&
	       !st->interrupt_pending && !st->batch_open;
}

/*
 * A passive checkpoint at most once a second after writes, on a connection of its own: commits never run one
 * (wal_autocheckpoint is off) and go on while it copies pages. Writer thread only.
 */
static void writer_checkpoint(struct store *st)
{
	uint64_t now = clock_mono_ns();
	bool dirty;

	if (st->memory || now - st->last_ckpt_ns < CHECKPOINT_NS)
		return;
	pthread_mutex_lock(&st->w.lock);
	dirty = st->dirty && st->w.db != NULL;
	st->dirty = false;
	pthread_mutex_unlock(&st->w.lock);
	if (!dirty)
		return;
	if (st->ckpt == NULL &&
	    sqlite3_open_v2(st->path, &st->ckpt, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		sqlite3_close(st->ckpt);
		st->ckpt = NULL;
		return;
	}
	sqlite3_busy_timeout(st->ckpt, 0);
	if (sqlite3_wal_checkpoint_v2(st->ckpt, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) != SQLITE_OK) {
		/* a replaced or broken file: open afresh next time */
		sqlite3_close(st->ckpt);
		st->ckpt = NULL;
	}
	st->last_ckpt_ns = now;
}

/* Whether the writer has work to do now rather than at its next tick; mu held. */
static bool writer_due_locked(struct store *st)
{
	bool high = st->tail - st->head >= st->cap / 2 || st->jtail - st->jhead >= STORE_BACKLOG_RECORDS / 2;

	if (st->stop || st->flush_req)
		return true;
	/* while the database fails or is not open, the writer retries at its own pace */
	if (st->failing || st->open_error[0] != '\0' || !atomic_load(&st->ready))
		return false;
	return high || st->urgent || st->interrupt_pending || st->prices_set || st->nchecks > 0;
}

void *store_writer_main(void *arg)
{
	struct store *st = arg;

	pthread_mutex_lock(&st->mu);
	for (;;) {
		bool final;

		/* writes with completions that no caller may commit yet (crash marking waits): GROUP_WAIT_NS at most */
		while (st->urgent && !st->failing && !st->group_ready && !st->stop && !st->flush_req) {
			uint64_t now = clock_mono_ns();
			struct timespec due;

			if (now >= st->group_start_ns + GROUP_WAIT_NS)
				break;
			due = clock_deadline(CLOCK_MONOTONIC, st->group_start_ns + GROUP_WAIT_NS - now);
			pthread_cond_timedwait(&st->wake, &st->mu, &due);
		}
		if (!writer_due_locked(st)) {
			unsigned wait_ms = st->failing || st->open_error[0] ? st->opts.retry_interval_ms
									     : st->opts.flush_interval_ms;
			uint64_t due_ns = clock_mono_ns() + wait_ms * 1000000ull;

			for (;;) {
				uint64_t now = clock_mono_ns(), until = due_ns;
				struct timespec ts;

				/* job records (answered once journaled) wait RECORD_DELAY_NS after the first of them */
				if (st->jtail != st->jhead && !st->failing && st->jfirst_ns + RECORD_DELAY_NS < until)
					until = st->jfirst_ns + RECORD_DELAY_NS;
				if (now >= until)
					break;
				ts = clock_deadline(CLOCK_MONOTONIC, until - now);
				if (pthread_cond_timedwait(&st->wake, &st->mu, &ts) != 0 || writer_due_locked(st))
					break;
			}
		}
		final = st->stop;
		st->flush_req = false;
		pthread_mutex_unlock(&st->mu);
		writer_cycle(st, final);
		if (!final)
			writer_checkpoint(st);
		pthread_mutex_lock(&st->mu);
		pthread_cond_broadcast(&st->done);
		if (final)
			break;
	}
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

/* --- the writer's connection: opened on the database file, where rollups stand, the journal replayed --- */

static void set_open_error(struct store *st, const char *msg)
{
	pthread_mutex_lock(&st->mu);
	if (strcmp(st->open_error, msg) != 0)
		log_msg(LOGL_ERROR, "store", "%s; retrying every %u ms", msg, st->opts.retry_interval_ms);
	snprintf(st->open_error, sizeof(st->open_error), "%s", msg);
	snprintf(st->stats.last_error, sizeof(st->stats.last_error), "%s", msg);
	pthread_mutex_unlock(&st->mu);
}

/* Runs a one-value query; *out is NULL-safe: it keeps def when the value is NULL. */
static int query_i64(struct store_conn *c, enum stmt_id id, int64_t def, int64_t *out)
{
	int rc;
	sqlite3_stmt *s = store_conn_stmt(c, id, &rc);

	*out = def;
	if (s == NULL)
		return rc;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Loads where rollups stand and the newest sample, so a restart carries on where the last run stopped. */
static int load_watermarks(struct store *st)
{
	int64_t wm_min, wm_hour, first, last;
	int rc = query_i64(&st->w, S_WM_MINUTE, -1, &wm_min);

	if (rc == SQLITE_OK)
		rc = query_i64(&st->w, S_WM_HOUR, -1, &wm_hour);
	if (rc == SQLITE_OK)
		rc = query_i64(&st->w, S_SAMPLES_MIN, -1, &first);
	if (rc == SQLITE_OK)
		rc = query_i64(&st->w, S_SAMPLES_MAX, 0, &last);
	if (rc != SQLITE_OK)
		return rc;
	/* -1: nothing rolled up yet; the first samples written set the start */
	if (wm_min >= 0)
		st->wm[STORE_MINUTE] = wm_min + STORE_MINUTE_MS;
	else
		st->wm[STORE_MINUTE] = first >= 0 ? floor_to(first, STORE_MINUTE_MS) : -1;
	if (wm_hour >= 0)
		st->wm[STORE_HOUR] = wm_hour + STORE_HOUR_MS;
	else if (first >= 0 || wm_min >= 0)
		st->wm[STORE_HOUR] = floor_to(first >= 0 ? first : wm_min, STORE_HOUR_MS);
	else
		st->wm[STORE_HOUR] = -1;
	st->max_ts = last;
	st->last_retention = 0;
	atomic_store(&st->pub_wm[STORE_MINUTE], st->wm[STORE_MINUTE] < 0 ? 0 : st->wm[STORE_MINUTE]);
	atomic_store(&st->pub_wm[STORE_HOUR], st->wm[STORE_HOUR] < 0 ? 0 : st->wm[STORE_HOUR]);
	return rc;
}

struct replay {
	struct store *st;
	int rc;
};

static int replay_one(void *ctx, const struct store_job *job)
{
	struct replay *r = ctx;

	r->rc = store_write_job(r->st, job);
	return r->rc != SQLITE_OK;
}

/*
 * Writes every record of the journal (what a crash, or a failing database, left in it) into the database in one
 * transaction, then starts it afresh, or, with ACCELD_DB_SYNC=full, releases it (records then wait for their
 * commit). The writer's connection is open. Appends stop meanwhile, so nothing is added while it is read. Without
 * the journal (another process owns it, its files cannot be read) job records wait for their commit.
 */
static int journal_recover(struct store *st, char *err, size_t errsz)
{
	struct replay r = {st, SQLITE_OK};
	struct journal *j;
	size_t skipped = 0;
	long n;
	int rc;

	if (st->memory)
		return SQLITE_OK;
	pthread_mutex_lock(&st->mu);
	j = st->journal;
	st->journal = NULL;
	atomic_store(&st->journaling, false);
	pthread_mutex_unlock(&st->mu);
	if (j == NULL && (j = journal_claim(st->path)) == NULL) {
		log_fields(LOGL_WARN, "store",
			   errno == EWOULDBLOCK
				   ? "another acceld process owns the journal of this database: job answers wait for "
				     "their commit"
				   : "cannot claim the journal: job answers wait for their commit",
			   (struct log_field[]){LOG_S("error", strerror(errno))}, 1);
		return SQLITE_OK;
	}
	rc = store_exec_sql(st->w.db, "BEGIN IMMEDIATE", err, errsz);
	if (rc != SQLITE_OK)
		goto fail;
	n = journal_replay(j, replay_one, &r, &skipped);
	if (n < 0) {
		if (r.rc != SQLITE_OK)
			snprintf(err, errsz, "cannot replay the journal of %s: %s", st->path, sqlite3_errmsg(st->w.db));
		else
			snprintf(err, errsz, "cannot read the journal of %s: %s", st->path, strerror(errno));
		sqlite3_exec(st->w.db, "ROLLBACK", NULL, NULL, NULL);
		rc = r.rc != SQLITE_OK ? r.rc : SQLITE_IOERR;
		goto fail;
	}
	rc = store_exec_sql(st->w.db, "COMMIT", err, errsz);
	if (rc != SQLITE_OK) {
		sqlite3_exec(st->w.db, "ROLLBACK", NULL, NULL, NULL);
		goto fail;
	}
	if (n > 0 || skipped > 0)
		log_fields(skipped ? LOGL_WARN : LOGL_INFO, "store", "job records replayed from the journal",
			   (struct log_field[]){LOG_I("records", n), LOG_I("cut_short", skipped)}, 2);
	if (st->opts.sync_full) {
		journal_close(j, true);
		return SQLITE_OK;
	}
	if (journal_start(j) != 0) {
		/* what it held is committed: without it, answers wait for their commit */
		log_fields(LOGL_WARN, "store", "cannot start the journal: job answers wait for their commit",
			   (struct log_field[]){LOG_S("error", strerror(errno))}, 1);
		journal_close(j, false);
		return SQLITE_OK;
	}
	pthread_mutex_lock(&st->mu);
	st->journal = j;
	st->journal_failing = false;
	atomic_store(&st->journaling, true);
	pthread_mutex_unlock(&st->mu);
	return SQLITE_OK;
fail:
	/* its files stay for the next attempt (the writer reopens the database) or the next start */
	journal_close(j, false);
	return rc;
}

int store_writer_open(struct store *st)
{
	char err[256] = "";
	sqlite3 *db = NULL;

	if (store_db_open(st, &db, err, sizeof(err)) != SQLITE_OK)
		goto fail;
	st->w.db = db;
	st->nkeys = 0;
	if (load_watermarks(st) != SQLITE_OK) {
		snprintf(err, sizeof(err), "cannot read database %s: %s", st->path, sqlite3_errmsg(db));
		store_conn_close(&st->w);
		db = NULL;
		goto fail;
	}
	if (journal_recover(st, err, sizeof(err)) != SQLITE_OK) {
		store_conn_close(&st->w);
		db = NULL;
		goto fail;
	}
	st->w.gen = atomic_fetch_add(&st->gen, 1) + 1;
	atomic_store(&st->ready, true);
	pthread_mutex_lock(&st->mu);
	if (st->open_error[0])
		log_msg(LOGL_INFO, "store", "database %s usable again", st->path);
	st->open_error[0] = '\0';
	st->stats.reopens++;
	st->stats.open = true;
	pthread_mutex_unlock(&st->mu);
	return 0;
fail:
	sqlite3_close(db);
	set_open_error(st, err);
	return -1;
}

void store_writer_drop_conn(struct store *st)
{
	store_conn_close(&st->w);
	st->nkeys = 0;
	atomic_store(&st->ready, false);
	atomic_fetch_add(&st->gen, 1);
	pthread_mutex_lock(&st->mu);
	st->stats.open = false;
	pthread_mutex_unlock(&st->mu);
}
