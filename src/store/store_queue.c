/* store_queue: the bounded queues that writes go into, and the group commit of writes that wait for theirs. */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "store/journal.h"

static void wake_writer_locked(struct store *st)
{
	if (st->tail - st->head >= st->cap / 2)
		pthread_cond_signal(&st->wake);
}

void store_add_samples(struct store *st, const struct store_sample *v, size_t n)
{
	if (st == NULL || n == 0)
		return;
	pthread_mutex_lock(&st->mu);
	for (size_t i = 0; i < n; i++) {
		if (st->tail - st->head == st->cap) {
			/* full: the oldest sample goes (documented loss policy) */
			st->head++;
			st->stats.dropped_samples++;
		}
		st->ring[st->tail % st->cap] = v[i];
		st->tail++;
	}
	wake_writer_locked(st);
	pthread_mutex_unlock(&st->mu);
}

void store_devices_seen(struct store *st, const struct device *devs, size_t n, int64_t now_ms)
{
	if (st == NULL)
		return;
	pthread_mutex_lock(&st->mu);
	for (size_t i = 0; i < n; i++) {
		const struct device *d = &devs[i];
		struct store_device_pending *r = NULL;

		for (size_t j = 0; j < st->ndevs && r == NULL; j++)
			if (strcmp(st->devs[j].id, d->id) == 0)
				r = &st->devs[j];
		if (r == NULL) {
			if (st->ndevs == DEVICES_MAX)
				continue;
			r = &st->devs[st->ndevs++];
			memset(r, 0, sizeof(*r));
			snprintf(r->id, sizeof(r->id), "%s", d->id);
			r->first_seen = now_ms;
		}
		snprintf(r->type, sizeof(r->type), "%s", device_type_name(d->type));
		snprintf(r->model, sizeof(r->model), "%s", d->model);
		snprintf(r->accelerator_type, sizeof(r->accelerator_type), "%s", d->accelerator_type);
		snprintf(r->uuid, sizeof(r->uuid), "%s", d->uuid);
		r->usd_per_hour = d->price.usd_per_hour;
		snprintf(r->price_source, sizeof(r->price_source), "%s", d->price.source);
		r->last_seen = now_ms;
		r->version++;
	}
	pthread_mutex_unlock(&st->mu);
}

/* Whether a write with a completion can be committed now: the database is open and not known to fail. mu held. */
static bool durable_now_locked(const struct store *st)
{
	return atomic_load(&st->ready) && !st->failing && !st->stop && st->open_error[0] == '\0';
}

/*
 * Counts a write with a completion into the group waiting for its commit. The group is ready at once: the thread
 * that queued it commits when no commit is running, and a commit that is running takes, before it ends, whatever
 * was queued meanwhile (so writes that arrive during a commit share the next one). Only while the marking of jobs
 * a crash left unfinished waits does the writer commit them, GROUP_WAIT_NS after the first at the latest. mu held.
 */
static void group_add_locked(struct store *st)
{
	if (st->nwait++ == 0)
		st->group_start_ns = clock_mono_ns();
	st->urgent = true;
	if (!st->interrupt_pending)
		st->group_ready = true;
	else if (st->nwait == 1)
		pthread_cond_signal(&st->wake); /* the writer keeps the group's deadline */
}

/*
 * Group commit: commits every record waiting on this thread when no commit is running, else leaves the group to
 * the writer thread, woken at once. Call without locks.
 */
static void commit_now(struct store *st)
{
	char err[256] = "";
	bool more = true;
	int rc = SQLITE_OK;
	bool mine = pthread_mutex_trylock(&st->w.lock) == 0;

	if (mine && st->w.db == NULL) {
		pthread_mutex_unlock(&st->w.lock);
		mine = false;
	}
	for (;;) {
		if (!mine) {
			/* a commit is running (or the writer reopens): it takes the group (urgent keeps it awake) */
			pthread_mutex_lock(&st->mu);
			if (st->urgent)
				pthread_cond_signal(&st->wake);
			pthread_mutex_unlock(&st->mu);
			return;
		}
		more = true;
		while (rc == SQLITE_OK && more) {
			rc = store_write_batch(st, true, &more, err, sizeof(err));
			store_waiters_call(st, &st->wbatch, rc == SQLITE_OK);
		}
		if (rc != SQLITE_OK)
			store_write_failed(st, rc, err[0] ? err : sqlite3_errstr(rc));
		pthread_mutex_unlock(&st->w.lock);
		if (rc != SQLITE_OK) {
			store_fail_waiters(st);
			return;
		}
		/* a write queued after the last batch was taken, whose thread found the lock held, is this thread's */
		pthread_mutex_lock(&st->mu);
		more = st->nwait > 0 && st->group_ready;
		pthread_mutex_unlock(&st->mu);
		if (!more)
			return;
		mine = pthread_mutex_trylock(&st->w.lock) == 0;
		if (mine && st->w.db == NULL) {
			pthread_mutex_unlock(&st->w.lock);
			mine = false;
		}
	}
}

void store_job_record_notify(struct store *st, const struct store_job *job, store_done_fn done, void *ctx)
{
	char line[JOURNAL_LINE_MAX];
	size_t len = 0;
	bool journaled = false;
	bool now;
	bool commit = false;

	if (st == NULL) {
		if (done)
			done(ctx, false);
		return;
	}
	if (done != NULL && atomic_load(&st->journaling))
		len = journal_encode(job, line, sizeof(line));
	pthread_mutex_lock(&st->mu);
	if (st->jtail - st->jhead == STORE_BACKLOG_RECORDS) {
		/* the records queued may have been confirmed (journaled): the new one is refused, not the oldest */
		st->stats.dropped_records++;
		if (done != NULL)
			st->stats.unconfirmed++;
		pthread_mutex_unlock(&st->mu);
		if (done != NULL)
			done(ctx, false);
		return;
	}
	if (len > 0 && st->journal != NULL && !st->stop) {
		journaled = journal_append(st->journal, line, len, st->jtail);
		if (journaled) {
			st->stats.journaled++;
			st->stats.confirmed++;
		}
		if (!journaled && !st->journal_failing)
			log_fields(LOGL_ERROR, "store",
				   "cannot append to the journal: job answers wait for their commit",
				   (struct log_field[]){LOG_S("error", strerror(errno))}, 1);
		else if (journaled && st->journal_failing)
			log_msg(LOGL_INFO, "store", "the journal takes appends again");
		st->journal_failing = !journaled;
	}
	if (st->jtail == st->jhead) {
		/* the writer commits records RECORD_DELAY_NS after the first: it learns the deadline */
		st->jfirst_ns = clock_mono_ns();
		pthread_cond_signal(&st->wake);
	}
	st->jobs[st->jtail % STORE_BACKLOG_RECORDS] = *job;
	now = done != NULL && !journaled && durable_now_locked(st);
	st->jwait[st->jtail % STORE_BACKLOG_RECORDS] = (struct waiter){now ? done : NULL, ctx};
	st->jtail++;
	if (done != NULL && !now && !journaled)
		st->stats.unconfirmed++;
	if (now) {
		group_add_locked(st);
		commit = st->group_ready;
	} else if (st->jtail - st->jhead == STORE_BACKLOG_RECORDS / 2) {
		/* a burst of jobs is written at once rather than at the next tick, before the queue can overflow */
		pthread_cond_signal(&st->wake);
	}
	pthread_mutex_unlock(&st->mu);
	if (done != NULL && !now)
		done(ctx, journaled);
	else if (commit)
		commit_now(st);
}

void store_job_record(struct store *st, const struct store_job *job)
{
	store_job_record_notify(st, job, NULL, NULL);
}

void store_jobs_mark_interrupted(struct store *st)
{
	if (st == NULL)
		return;
	pthread_mutex_lock(&st->mu);
	st->interrupt_pending = true;
	pthread_cond_signal(&st->wake);
	pthread_mutex_unlock(&st->mu);
}

void store_prices_replace_notify(struct store *st, const struct store_price *v, size_t n, store_done_fn done,
				 void *ctx)
{
	struct store_price *copy = n ? xcalloc(n, sizeof(*copy)) : NULL;
	bool now;

	if (st == NULL) {
		free(copy);
		if (done)
			done(ctx, false);
		return;
	}
	if (n)
		memcpy(copy, v, n * sizeof(*copy));
	pthread_mutex_lock(&st->mu);
	free(st->prices_pending);
	st->prices_pending = copy;
	st->nprices_pending = n;
	st->prices_set = true;
	now = done != NULL && durable_now_locked(st) && st->npwait < PRICE_WAITERS;
	if (now) {
		st->pwait[st->npwait++] = (struct waiter){done, ctx};
		group_add_locked(st);
		st->group_ready = !st->interrupt_pending; /* prices are rare: no reason to wait for others */
	} else {
		if (done != NULL)
			st->stats.unconfirmed++;
		pthread_cond_signal(&st->wake);
	}
	pthread_mutex_unlock(&st->mu);
	if (done != NULL && !now)
		done(ctx, false);
	else if (now)
		commit_now(st);
}

void store_prices_replace(struct store *st, const struct store_price *v, size_t n)
{
	store_prices_replace_notify(st, v, n, NULL, NULL);
}

void store_check_put_notify(struct store *st, const struct store_check *c, store_done_fn done, void *ctx)
{
	char *doc;
	struct store_check_row *r = NULL;
	bool now;

	if (st == NULL) {
		if (done)
			done(ctx, false);
		return;
	}
	doc = xstrdup(c->doc ? c->doc : "{}");
	pthread_mutex_lock(&st->mu);
	for (size_t i = 0; i < st->nchecks && r == NULL; i++)
		if (strcmp(st->checks[i].row.id, c->id) == 0)
			r = &st->checks[i];
	if (r == NULL && st->nchecks == STORE_BACKLOG_CHECKS) {
		/* the checks waiting may have been confirmed: the new one is refused, not one of them */
		st->stats.dropped_records++;
		if (done != NULL)
			st->stats.unconfirmed++;
		pthread_mutex_unlock(&st->mu);
		free(doc);
		if (done != NULL)
			done(ctx, false);
		return;
	}
	if (r == NULL)
		r = &st->checks[st->nchecks++];
	else
		free(r->doc);
	r->row = *c;
	r->row.doc = NULL;
	r->doc = doc;
	now = done != NULL && durable_now_locked(st) && st->ncwait < STORE_BACKLOG_CHECKS;
	if (now) {
		st->cwait[st->ncwait++] = (struct waiter){done, ctx};
		group_add_locked(st);
		st->group_ready = !st->interrupt_pending; /* checks are rare: no reason to wait for others */
	} else {
		if (done != NULL)
			st->stats.unconfirmed++;
		pthread_cond_signal(&st->wake);
	}
	pthread_mutex_unlock(&st->mu);
	if (done != NULL && !now)
		done(ctx, false);
	else if (now)
		commit_now(st);
}

bool store_flush(struct store *st, unsigned timeout_ms)
{
	struct timespec ts;
	bool empty;

	if (st == NULL)
		return false;
	ts = clock_deadline(CLOCK_MONOTONIC, timeout_ms * 1000000ull);
	pthread_mutex_lock(&st->mu);
	for (;;) {
		empty = store_queues_empty(st) && !st->failing && atomic_load(&st->ready);
		if (empty || !st->writer_started)
			break;
		st->flush_req = true;
		pthread_cond_signal(&st->wake);
		if (pthread_cond_timedwait(&st->done, &st->mu, &ts) != 0) {
			empty = store_queues_empty(st) && !st->failing && atomic_load(&st->ready);
			break;
		}
	}
	pthread_mutex_unlock(&st->mu);
	return empty;
}
