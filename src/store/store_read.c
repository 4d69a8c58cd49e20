/* store_read: the queries, run on the caller's thread over a small pool of read-only connections. */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"

static const int64_t tier_width[] = {0, STORE_MINUTE_MS, STORE_HOUR_MS};

/*
 * Waits, SETTLE_NS at most, until the job records queued before the call are committed, so that a read sees every
 * job already answered (the journal confirms them before their commit). At once while the database fails.
 */
static void records_settle(struct store *st)
{
	struct timespec due;
	uint64_t target;

	pthread_mutex_lock(&st->mu);
	target = st->jtail;
	due = clock_deadline(CLOCK_MONOTONIC, SETTLE_NS);
	while (st->jhead < target && st->writer_started && !st->stop && !st->failing && atomic_load(&st->ready)) {
		st->flush_req = true;
		pthread_cond_signal(&st->wake);
		if (pthread_cond_timedwait(&st->done, &st->mu, &due) != 0)
			break;
	}
	pthread_mutex_unlock(&st->mu);
}

/* A connection for reading, locked; release it with reader_release. */
static enum acceld_err reader_acquire(struct store *st, struct store_conn **out)
{
	struct store_conn *c = NULL;
	unsigned gen;

	if (st == NULL || !atomic_load(&st->ready))
		return ACCELD_EUNAVAILABLE;
	if (st->memory) {
		/* a private in-memory database has one connection: the writer's */
		pthread_mutex_lock(&st->w.lock);
		if (st->w.db == NULL) {
			pthread_mutex_unlock(&st->w.lock);
			return ACCELD_EUNAVAILABLE;
		}
		*out = &st->w;
		return ACCELD_OK;
	}
	for (int i = 0; i < READERS && c == NULL; i++)
		if (pthread_mutex_trylock(&st->readers[i].lock) == 0)
			c = &st->readers[i];
	if (c == NULL) {
		c = &st->readers[(size_t)pthread_self() % READERS];
		pthread_mutex_lock(&c->lock);
	}
	gen = atomic_load(&st->gen);
	if (c->db != NULL && c->gen != gen)
		store_conn_close(c);
	if (c->db == NULL) {
		int rc = sqlite3_open_v2(st->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);

		if (rc == SQLITE_OK) {
			sqlite3_busy_timeout(c->db, (int)st->opts.busy_timeout_ms);
			rc = sqlite3_exec(c->db, "PRAGMA query_only = 1", NULL, NULL, NULL);
		}
		if (rc != SQLITE_OK) {
			store_conn_close(c);
			pthread_mutex_unlock(&c->lock);
			return ACCELD_EUNAVAILABLE;
		}
		c->gen = gen;
	}
	*out = c;
	return ACCELD_OK;
}

/* Unlocks c; a connection that met a file-level error is closed so the next reader opens afresh. */
static enum acceld_err reader_release(struct store *st, struct store_conn *c, int rc)
{
	if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW && store_rc_needs_reopen(rc) && c != &st->w)
		store_conn_close(c);
	pthread_mutex_unlock(&c->lock);
	if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW)
		return ACCELD_OK;
	log_msg(LOGL_WARN, "store", "query failed: %s", sqlite3_errstr(rc));
	return (rc & 0xff) == SQLITE_BUSY || store_rc_needs_reopen(rc) ? ACCELD_EUNAVAILABLE : ACCELD_EIO;
}

/* The key of a device id, or -1 when it was never seen. */
static int reader_key(struct store_conn *c, const char *id, int64_t *key)
{
	int rc;
	sqlite3_stmt *s = store_conn_stmt(c, S_DEVICE_KEY, &rc);

	*key = -1;
	if (s == NULL)
		return rc;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*key = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

enum acceld_err store_devices_list(struct store *st, struct store_device_row **out, size_t *n)
{
	struct store_conn *c;
	sqlite3_stmt *s;
	struct store_device_row *v = NULL;
	size_t len = 0, cap = 0;
	enum acceld_err e = reader_acquire(st, &c);
	int rc;

	*out = NULL;
	*n = 0;
	if (e != ACCELD_OK)
		return e;
	s = store_conn_stmt(c, S_DEVICES, &rc);
	while (s != NULL && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct store_device_row *r;

		if (len == cap) {
			cap = cap ? cap * 2 : 16;
			v = xrealloc(v, cap * sizeof(*v));
		}
		r = &v[len++];
		memset(r, 0, sizeof(*r));
		col_text(s, 0, r->id, sizeof(r->id));
		col_text(s, 1, r->type, sizeof(r->type));
		col_text(s, 2, r->model, sizeof(r->model));
		col_text(s, 3, r->accelerator_type, sizeof(r->accelerator_type));
		col_text(s, 4, r->uuid, sizeof(r->uuid));
		r->usd_per_hour = col_num(s, 5);
		col_text(s, 6, r->price_source, sizeof(r->price_source));
		r->first_seen_ms = sqlite3_column_int64(s, 7);
		r->last_seen_ms = sqlite3_column_int64(s, 8);
	}
	if (s != NULL)
		sqlite3_reset(s);
	e = reader_release(st, c, rc);
	if (e != ACCELD_OK) {
		free(v);
		return e;
	}
	*out = v;
	*n = len;
	return ACCELD_OK;
}

enum store_tier store_pick_tier(const struct store *st, int64_t start_ms, int64_t step_ms, int64_t now_ms)
{
	int64_t raw, minute, hour;

	store_retention(st, &raw, &minute, &hour);
	if (step_ms >= STORE_HOUR_MS || start_ms < now_ms - minute)
		return STORE_HOUR;
	if (step_ms >= STORE_MINUTE_MS || start_ms < now_ms - raw)
		return STORE_MINUTE;
	return STORE_RAW;
}

/* Sums of one bucket: series use a (weighted sum), b (weight), max; usage a, b, c (present, util, busy). */
struct acc {
	double a, b, c, max;
	bool any;
};

struct collect {
	struct store *st;
	struct store_conn *c;
	enum stmt_id base;          /* S_USAGE, or the series statement of the metric at the raw tier */
	bool series;
	int64_t key, origin, step;
	struct acc *acc;
	size_t nb;
	unsigned sources;
};

static int collect_rows(struct collect *k, enum store_tier t, int64_t lo, int64_t hi)
{
	int rc;
	sqlite3_stmt *s = store_conn_stmt(k->c, k->series ? k->base + t * STORE_METRIC_COUNT : k->base + t, &rc);

	if (s == NULL)
		return rc;
	sqlite3_bind_int64(s, 1, k->key);
	sqlite3_bind_int64(s, 2, lo);
	sqlite3_bind_int64(s, 3, hi);
	sqlite3_bind_int64(s, 4, k->origin);
	sqlite3_bind_int64(s, 5, k->step);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t b = sqlite3_column_int64(s, 0);
		struct acc *a;

		if (b < 0 || (size_t)b >= k->nb)
			continue;
		a = &k->acc[b];
		a->any = true;
		a->a += sqlite3_column_double(s, 1);
		a->b += sqlite3_column_double(s, 2);
		if (k->series) {
			double mx = col_num(s, 3);

			if (isfinite(mx) && (!isfinite(a->max) || mx > a->max))
				a->max = mx;
			k->sources |= (unsigned)sqlite3_column_int(s, 4);
		} else {
			a->c += sqlite3_column_double(s, 3);
		}
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/*
 * Reads [lo, hi) from tier t where it has been rolled up (whole rows only), and the edges from the finer tiers:
 * an hour row covers its whole hour, so a window starting at 10:30 takes 10:30-11:00 from minutes (or raw rows).
 */
static int collect_tier(struct collect *k, enum store_tier t, int64_t lo, int64_t hi)
{
	int64_t a, b, wm;
	int rc;

	if (lo >= hi)
		return SQLITE_OK;
	if (t == STORE_RAW)
		return collect_rows(k, t, lo, hi);
	wm = atomic_load(&k->st->pub_wm[t]);
	a = ceil_to(lo, tier_width[t]);
	b = floor_to(hi, tier_width[t]);
	if (b > wm)
		b = wm;
	if (a >= b)
		return collect_tier(k, t - 1, lo, hi);
	rc = collect_rows(k, t, a, b);
	if (rc == SQLITE_OK)
		rc = collect_tier(k, t - 1, lo, a);
	if (rc == SQLITE_OK)
		rc = collect_tier(k, t - 1, b, hi);
	return rc;
}

/* Runs a collection over [start, end) from tier t; k->acc is allocated here (k->nb buckets from k->origin). */
static enum acceld_err collect_run(struct collect *k, const char *device, enum store_tier t, int64_t start,
				   int64_t end)
{
	enum acceld_err e;
	int rc;

	if (end <= start || k->step <= 0 || (end - k->origin + k->step - 1) / k->step > MAX_BUCKETS)
		return ACCELD_EINVAL;
	k->nb = (size_t)((end - k->origin + k->step - 1) / k->step);
	e = reader_acquire(k->st, &k->c);
	if (e != ACCELD_OK)
		return e;
	rc = reader_key(k->c, device, &k->key);
	if (rc == SQLITE_OK && k->key < 0) {
		reader_release(k->st, k->c, SQLITE_OK);
		return ACCELD_ENOTFOUND;
	}
	k->acc = xcalloc(k->nb, sizeof(*k->acc));
	for (size_t i = 0; i < k->nb; i++)
		k->acc[i].max = NAN;
	if (rc == SQLITE_OK)
		rc = collect_tier(k, t, start, end);
	e = reader_release(k->st, k->c, rc);
	if (e != ACCELD_OK) {
		free(k->acc);
		k->acc = NULL;
	}
	return e;
}

enum acceld_err store_series(struct store *st, const char *device, enum store_metric metric, int64_t start_ms,
			     int64_t end_ms, int64_t step_ms, int64_t now_ms, struct store_series *out)
{
	struct collect k = {.st = st, .series = true, .step = step_ms};
	enum acceld_err e;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	if ((int)metric < 0 || metric >= STORE_METRIC_COUNT || step_ms <= 0)
		return ACCELD_EINVAL;
	/* points fall on the step's clock boundaries, not where the request time puts them: each is a whole step */
	k.origin = floor_to(start_ms, step_ms);
	k.base = (enum stmt_id)(S_SERIES + metric);
	out->tier = store_pick_tier(st, start_ms, step_ms, now_ms);
	e = collect_run(&k, device, out->tier, k.origin, end_ms);
	if (e != ACCELD_OK)
		return e;
	for (size_t i = 0; i < k.nb; i++)
		if (k.acc[i].any && k.acc[i].b > 0)
			n++;
	out->points = n ? xcalloc(n, sizeof(*out->points)) : NULL;
	for (size_t i = 0; i < k.nb; i++) {
		struct store_point *p;

		if (!k.acc[i].any || k.acc[i].b <= 0)
			continue;
		p = &out->points[out->n++];
		p->t_ms = k.origin + (int64_t)i * step_ms;
		p->value = k.acc[i].a / k.acc[i].b;
		p->max = k.acc[i].max;
	}
	/* utilization rows are weighted by milliseconds: the busy sum over the covered time */
	out->sources = k.sources;
	free(k.acc);
	return ACCELD_OK;
}

enum acceld_err store_usage(struct store *st, const char *device, int64_t start_ms, int64_t end_ms,
			    int64_t bucket_ms, struct store_usage **out, size_t *n)
{
	struct collect k = {.st = st, .base = S_USAGE, .step = bucket_ms};
	enum acceld_err e;
	size_t len = 0;

	*out = NULL;
	*n = 0;
	if (bucket_ms <= 0)
		return ACCELD_EINVAL;
	k.origin = floor_to(start_ms, bucket_ms);
	e = collect_run(&k, device, STORE_HOUR, start_ms, end_ms);
	if (e != ACCELD_OK)
		return e;
	for (size_t i = 0; i < k.nb; i++)
		if (k.acc[i].any)
			len++;
	*out = len ? xcalloc(len, sizeof(**out)) : NULL;
	for (size_t i = 0; i < k.nb; i++) {
		struct store_usage *u;

		if (!k.acc[i].any)
			continue;
		u = &(*out)[(*n)++];
		u->t_ms = k.origin + (int64_t)i * bucket_ms;
		u->present_ms = k.acc[i].a;
		u->util_ms = k.acc[i].b;
		u->busy_ms = k.acc[i].c;
	}
	free(k.acc);
	return ACCELD_OK;
}

enum acceld_err store_jobs_usage(struct store *st, const char *device, int64_t start_ms, int64_t end_ms,
				 struct store_jobs_usage *out)
{
	struct store_conn *c;
	sqlite3_stmt *s;
	enum acceld_err e;
	int rc;

	memset(out, 0, sizeof(*out));
	if (st != NULL)
		records_settle(st);
	e = reader_acquire(st, &c);
	if (e != ACCELD_OK)
		return e;
	s = store_conn_stmt(c, S_JOBS_USAGE, &rc);
	if (s != NULL) {
		sqlite3_bind_text(s, 1, device, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, 2, start_ms);
		sqlite3_bind_int64(s, 3, end_ms);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			out->jobs = (unsigned)sqlite3_column_int(s, 0);
			out->seconds = sqlite3_column_double(s, 1);
			out->cost_usd = sqlite3_column_double(s, 2);
			out->priced = (unsigned)sqlite3_column_int(s, 3);
		}
		sqlite3_reset(s);
	}
	return reader_release(st, c, rc);
}

enum acceld_err store_throughput(struct store *st, const char *device, const char *kernel, double *flops_per_s,
				 unsigned *jobs)
{
	struct store_conn *c;
	sqlite3_stmt *s;
	enum acceld_err e = reader_acquire(st, &c);
	int rc;

	uint64_t now = clock_mono_ns();

	*flops_per_s = NAN;
	*jobs = 0;
	if (e != ACCELD_OK)
		return e;
	pthread_mutex_lock(&st->tp_mu);
	for (unsigned i = 0; i < THROUGHPUT_CACHE; i++) {
		if (st->tp[i].at_ns != 0 && now - st->tp[i].at_ns < THROUGHPUT_TTL_NS &&
		    strcmp(st->tp[i].device, device) == 0 && strcmp(st->tp[i].kernel, kernel) == 0) {
			*flops_per_s = st->tp[i].flops_per_s;
			*jobs = st->tp[i].jobs;
			pthread_mutex_unlock(&st->tp_mu);
			return reader_release(st, c, SQLITE_OK);
		}
	}
	pthread_mutex_unlock(&st->tp_mu);
	s = store_conn_stmt(c, S_THROUGHPUT, &rc);
	if (s != NULL) {
		sqlite3_bind_text(s, 1, device, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(s, 2, kernel, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW && sqlite3_column_int(s, 2) > 0 && sqlite3_column_double(s, 1) > 0) {
			*jobs = (unsigned)sqlite3_column_int(s, 2);
			*flops_per_s = sqlite3_column_double(s, 0) / (sqlite3_column_double(s, 1) / 1000.0);
		}
		if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
			unsigned i;

			pthread_mutex_lock(&st->tp_mu);
			i = st->tp_next++ % THROUGHPUT_CACHE;
			snprintf(st->tp[i].device, sizeof(st->tp[i].device), "%s", device);
			snprintf(st->tp[i].kernel, sizeof(st->tp[i].kernel), "%s", kernel);
			st->tp[i].flops_per_s = *flops_per_s;
			st->tp[i].jobs = *jobs;
			st->tp[i].at_ns = now;
			pthread_mutex_unlock(&st->tp_mu);
		}
		sqlite3_reset(s);
	}
	return reader_release(st, c, rc);
}

enum acceld_err store_prices_load(struct store *st, struct store_price **out, size_t *n)
{
	struct store_conn *c;
	sqlite3_stmt *s;
	struct store_price *v = NULL;
	size_t len = 0, cap = 0;
	enum acceld_err e = reader_acquire(st, &c);
	int rc;

	*out = NULL;
	*n = 0;
	if (e != ACCELD_OK)
		return e;
	s = store_conn_stmt(c, S_PRICES, &rc);
	while (s != NULL && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct store_price *p;

		if (len == cap) {
			cap = cap ? cap * 2 : 16;
			v = xrealloc(v, cap * sizeof(*v));
		}
		p = &v[len++];
		memset(p, 0, sizeof(*p));
		col_text(s, 0, p->selector, sizeof(p->selector));
		col_text(s, 1, p->value, sizeof(p->value));
		p->usd_per_hour = sqlite3_column_double(s, 2);
		p->usd_per_hour_spot = col_num(s, 3);
		col_text(s, 4, p->unit, sizeof(p->unit));
		col_text(s, 5, p->note, sizeof(p->note));
		p->updated_ms = sqlite3_column_int64(s, 6);
	}
	if (s != NULL)
		sqlite3_reset(s);
	e = reader_release(st, c, rc);
	if (e != ACCELD_OK) {
		free(v);
		return e;
	}
	*out = v;
	*n = len;
	return ACCELD_OK;
}

/* A row of STORE_JOB_COLUMNS as a job. */
static void job_of_row(sqlite3_stmt *s, struct store_job *out)
{
	col_text(s, 0, out->id, sizeof(out->id));
	col_text(s, 1, out->device, sizeof(out->device));
	col_text(s, 2, out->kernel, sizeof(out->kernel));
	col_text(s, 3, out->backend, sizeof(out->backend));
	col_text(s, 4, out->state, sizeof(out->state));
	out->submitted_ms = sqlite3_column_int64(s, 5);
	out->started_ms = sqlite3_column_int64(s, 6);
	out->finished_ms = sqlite3_column_int64(s, 7);
	out->n = (uint64_t)sqlite3_column_int64(s, 8);
	out->m = (uint64_t)sqlite3_column_int64(s, 9);
	out->k = (uint64_t)sqlite3_column_int64(s, 10);
	out->flops = col_num(s, 11);
	out->bytes = col_num(s, 12);
	out->kernel_ms = col_num(s, 13);
	out->total_ms = col_num(s, 14);
	out->cost_usd = col_num(s, 15);
	col_text(s, 16, out->error, sizeof(out->error));
	col_text(s, 17, out->reason, sizeof(out->reason));
	out->queued_ms = col_num(s, 18);
	out->transfer_ms = col_num(s, 19);
	col_text(s, 20, out->trigger, sizeof(out->trigger));
	col_text(s, 21, out->check_id, sizeof(out->check_id));
	out->peak_gflops = col_num(s, 22);
	out->peak_gbytes_per_s = col_num(s, 23);
	out->setup_ms = col_num(s, 24);
	out->generate_ms = col_num(s, 25);
	out->verify_ms = col_num(s, 26);
	out->transfer_bytes = col_num(s, 27);
	out->upload_ms = col_num(s, 28);
	out->upload_bytes = col_num(s, 29);
	out->download_ms = col_num(s, 30);
	out->download_bytes = col_num(s, 31);
	col_text(s, 32, out->transfer_memory, sizeof(out->transfer_memory));
}

enum acceld_err store_job_get(struct store *st, const char *id, struct store_job *out)
{
	struct store_conn *c;
	sqlite3_stmt *s;
	enum acceld_err e;
	bool found = false;
	int rc;

	memset(out, 0, sizeof(*out));
	if (st != NULL)
		records_settle(st);
	e = reader_acquire(st, &c);
	if (e != ACCELD_OK)
		return e;
	s = store_conn_stmt(c, S_JOB_GET, &rc);
	if (s != NULL) {
		sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			found = true;
			job_of_row(s, out);
		}
		sqlite3_reset(s);
	}
	e = reader_release(st, c, rc);
	if (e == ACCELD_OK && !found)
		return ACCELD_ENOTFOUND;
	return e;
}

void store_check_docs_release(struct store_check_docs *docs)
{
	for (size_t i = 0; i < docs->n; i++)
		free(docs->v[i]);
	free(docs->v);
	docs->v = NULL;
	docs->n = 0;
}

/*
 * Appends the document of every row of check statement id to out, with device (?1), limit (?2, when >= 0) and id
 * (?3) bound where given. On failure out is emptied.
 */
static enum acceld_err check_docs(struct store *st, enum stmt_id id, const char *device, int64_t limit,
				  const char *check_id, struct store_check_docs *out)
{
	struct store_conn *c;
	sqlite3_stmt *s;
	enum acceld_err e = reader_acquire(st, &c);
	int rc;

	if (e != ACCELD_OK) {
		store_check_docs_release(out);
		return e;
	}
	s = store_conn_stmt(c, id, &rc);
	if (s != NULL) {
		if (device != NULL)
			sqlite3_bind_text(s, 1, device, -1, SQLITE_TRANSIENT);
		if (limit >= 0)
			sqlite3_bind_int64(s, 2, limit);
		if (check_id != NULL)
			sqlite3_bind_text(s, 3, check_id, -1, SQLITE_TRANSIENT);
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			const unsigned char *text = sqlite3_column_text(s, 0);

			if (text == NULL)
				continue;
			out->v = xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
			out->v[out->n++] = xstrdup((const char *)text);
		}
		sqlite3_reset(s);
	}
	e = reader_release(st, c, rc);
	if (e != ACCELD_OK)
		store_check_docs_release(out);
	return e;
}

enum acceld_err store_check_get(struct store *st, const char *device, const char *id, char **doc)
{
	struct store_check_docs docs = {0};
	enum acceld_err e = check_docs(st, S_CHECK_GET, device, -1, id, &docs);

	*doc = NULL;
	if (e == ACCELD_OK && docs.n == 0)
		e = ACCELD_ENOTFOUND;
	if (e == ACCELD_OK) {
		*doc = docs.v[0];
		docs.v[0] = NULL;
	}
	store_check_docs_release(&docs);
	return e;
}

enum acceld_err store_checks_list(struct store *st, const char *device, const char *after, unsigned limit,
				  struct store_check_docs *out)
{
	bool paged = after != NULL && after[0] != '\0';
	enum acceld_err e = ACCELD_OK;

	memset(out, 0, sizeof(*out));
	/* the page starts after a check of this device, which must exist */
	if (paged)
		e = check_docs(st, S_CHECK_GET, device, -1, after, out);
	if (e == ACCELD_OK && paged && out->n == 0)
		e = ACCELD_ENOTFOUND;
	store_check_docs_release(out);
	if (e != ACCELD_OK)
		return e;
	return check_docs(st, paged ? S_CHECKS_AFTER : S_CHECKS_FIRST, device, limit, paged ? after : NULL, out);
}

enum acceld_err store_checks_latest(struct store *st, struct store_check_docs *out)
{
	memset(out, 0, sizeof(*out));
	return check_docs(st, S_CHECKS_LATEST, NULL, -1, NULL, out);
}

enum acceld_err store_checks_unfinished(struct store *st, struct store_check_docs *out)
{
	memset(out, 0, sizeof(*out));
	return check_docs(st, S_CHECKS_UNFINISHED, NULL, -1, NULL, out);
}

void store_retention(const struct store *st, int64_t *raw_ms, int64_t *minute_ms, int64_t *hour_ms)
{
	*raw_ms = st ? st->opts.retention_raw_ms : STORE_RETENTION_RAW_MS;
	*minute_ms = st ? st->opts.retention_minute_ms : STORE_RETENTION_MINUTE_MS;
	*hour_ms = st ? st->opts.retention_hour_ms : STORE_RETENTION_HOUR_MS;
}

enum acceld_err store_jobs_recent(struct store *st, const char *state, int64_t before_ms, const char *before_id,
				  struct store_job *out, size_t cap, size_t *n)
{
	struct store_conn *c;
	sqlite3_stmt *s;
	enum acceld_err e;
	int rc;

	*n = 0;
	if (st != NULL)
		records_settle(st);
	e = reader_acquire(st, &c);
	if (e != ACCELD_OK)
		return e;
	s = store_conn_stmt(c, S_JOBS_RECENT, &rc);
	if (s != NULL) {
		bind_text(s, 1, state);
		sqlite3_bind_int64(s, 2, before_ms > 0 ? before_ms : 0);
		sqlite3_bind_text(s, 3, before_id != NULL ? before_id : "", -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, 4, (sqlite3_int64)cap);
		while (*n < cap && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			memset(&out[*n], 0, sizeof(out[*n]));
			job_of_row(s, &out[(*n)++]);
		}
		if (rc == SQLITE_DONE || rc == SQLITE_ROW)
			rc = SQLITE_OK;
		sqlite3_reset(s);
	}
	return reader_release(st, c, rc);
}
