/* store: the store's life cycle (open, close, health, statistics) and its names; store_int.h lists the other parts. */
#include "store/store.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/names.h"
#include "store/journal.h"
#include "store/store_int.h"

static const char *const source_names[STORE_SRC_COUNT] = {"none", "proc_stat", "cgroup", "device", "executor"};
static const char *const metric_names[STORE_METRIC_COUNT] = {"utilization_ratio", "memory_used_bytes",
							      "temperature_celsius", "power_watts"};
static const char *const tier_names[] = {"raw", "minute", "hour"};

const char *store_source_name(enum store_source src)
{
	return (int)src >= 0 && src < STORE_SRC_COUNT ? source_names[src] : "none";
}

const char *store_metric_name(enum store_metric m)
{
	return names_at(metric_names, STORE_METRIC_COUNT, m);
}

int store_metric_parse(const char *text, enum store_metric *out)
{
	int i = names_find(metric_names, STORE_METRIC_COUNT, text);

	if (i < 0)
		return -1;
	*out = (enum store_metric)i;
	return 0;
}

const char *store_tier_name(enum store_tier t)
{
	return names_at(tier_names, sizeof(tier_names) / sizeof(tier_names[0]), t);
}

const char *store_sqlite_version(void)
{
	return sqlite3_libversion();
}

enum acceld_err store_open_opts(const struct store_opts *opts, struct store **out, char *err, size_t errsz)
{
	struct store *st;
	pthread_condattr_t ca;

	if (opts == NULL || opts->path == NULL || *opts->path == '\0') {
		snprintf(err, errsz, "no database path");
		return ACCELD_EINVAL;
	}
	st = xcalloc(1, sizeof(*st));
	st->opts = *opts;
	st->path = xstrdup(opts->path);
	st->opts.path = st->path;
	st->memory = strcmp(st->path, ":memory:") == 0;
	if (st->opts.retention_raw_ms <= 0)
		st->opts.retention_raw_ms = STORE_RETENTION_RAW_MS;
	if (st->opts.retention_minute_ms <= 0)
		st->opts.retention_minute_ms = STORE_RETENTION_MINUTE_MS;
	if (st->opts.retention_hour_ms <= 0)
		st->opts.retention_hour_ms = STORE_RETENTION_HOUR_MS;
	if (st->opts.backlog_samples == 0)
		st->opts.backlog_samples = STORE_BACKLOG_SAMPLES;
	if (st->opts.flush_interval_ms == 0)
		st->opts.flush_interval_ms = 1000;
	if (st->opts.retry_interval_ms == 0)
		st->opts.retry_interval_ms = 1000;
	if (st->opts.busy_timeout_ms == 0)
		st->opts.busy_timeout_ms = 2000;
	st->cap = st->opts.backlog_samples;
	st->ring = xcalloc(st->cap, sizeof(*st->ring));
	st->jobs = xcalloc(STORE_BACKLOG_RECORDS, sizeof(*st->jobs));
	st->jwait = xcalloc(STORE_BACKLOG_RECORDS, sizeof(*st->jwait));
	st->wbuf = xcalloc(BATCH_SAMPLES, sizeof(*st->wbuf));
	st->jbuf = xcalloc(BATCH_JOBS, sizeof(*st->jbuf));
	st->dbuf = xcalloc(DEVICES_MAX, sizeof(*st->dbuf));
	st->cbuf = xcalloc(STORE_BACKLOG_CHECKS, sizeof(*st->cbuf));
	pthread_mutex_init(&st->mu, NULL);
	pthread_mutex_init(&st->tp_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->wake, &ca);
	pthread_cond_init(&st->done, &ca);
	pthread_condattr_destroy(&ca);
	store_conn_init(&st->w);
	for (int i = 0; i < READERS; i++)
		store_conn_init(&st->readers[i]);
	st->wm[STORE_MINUTE] = st->wm[STORE_HOUR] = -1;

	/* the first open runs here, so the schema is in place (or the failure known) before the service starts */
	st->next_try_ns = clock_mono_ns() + (uint64_t)st->opts.retry_interval_ms * 1000000ull;
	if (store_writer_open(st) != 0)
		snprintf(err, errsz, "%s", st->open_error);
	else if (errsz > 0)
		err[0] = '\0';
	if (pthread_create(&st->writer, NULL, store_writer_main, st) == 0)
		st->writer_started = true;
	else
		log_msg(LOGL_ERROR, "store", "cannot start the writer thread");
	*out = st;
	return ACCELD_OK;
}

enum acceld_err store_open(const char *path, struct store **out, char *err, size_t errsz)
{
	struct store_opts o = {.path = path};

	return store_open_opts(&o, out, err, errsz);
}

void store_close(struct store *st)
{
	if (st == NULL)
		return;
	if (st->writer_started) {
		pthread_mutex_lock(&st->mu);
		st->stop = true;
		pthread_cond_signal(&st->wake);
		pthread_mutex_unlock(&st->mu);
		pthread_join(st->writer, NULL);
	}
	/* what the last attempt could not write is not durable: its waiters are told */
	store_fail_waiters(st);
	/* a journal whose records are all committed goes; one that holds others is replayed at the next start */
	journal_close(st->journal, store_queues_empty(st) && !st->failing && atomic_load(&st->ready));
	sqlite3_close(st->ckpt);
	for (int i = 0; i < READERS; i++) {
		store_conn_close(&st->readers[i]);
		pthread_mutex_destroy(&st->readers[i].lock);
	}
	store_conn_close(&st->w);
	pthread_mutex_destroy(&st->w.lock);
	pthread_cond_destroy(&st->wake);
	pthread_cond_destroy(&st->done);
	pthread_mutex_destroy(&st->mu);
	pthread_mutex_destroy(&st->tp_mu);
	free(st->prices_pending);
	free(st->ring);
	free(st->jobs);
	free(st->jwait);
	free(st->wbatch.v);
	free(st->wbuf);
	free(st->jbuf);
	free(st->dbuf);
	free(st->cbuf);
	for (size_t i = 0; i < st->nchecks; i++)
		free(st->checks[i].doc);
	free(st->path);
	free(st);
}

bool store_healthy(struct store *st, char *err, size_t errsz)
{
	bool ok;

	if (st == NULL) {
		snprintf(err, errsz, "database not open");
		return false;
	}
	pthread_mutex_lock(&st->mu);
	ok = atomic_load(&st->ready) && !st->failing;
	if (st->open_error[0])
		snprintf(err, errsz, "%s", st->open_error);
	else if (st->failing)
		snprintf(err, errsz, "writes failing: %s; %llu rows waiting", st->stats.last_error,
			 (unsigned long long)store_backlog_locked(st));
	else if (!ok)
		snprintf(err, errsz, "database not open");
	pthread_mutex_unlock(&st->mu);
	return ok;
}

void store_stats(struct store *st, struct store_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (st == NULL)
		return;
	pthread_mutex_lock(&st->mu);
	*out = st->stats;
	out->backlog = store_backlog_locked(st);
	out->open = atomic_load(&st->ready);
	pthread_mutex_unlock(&st->mu);
}
