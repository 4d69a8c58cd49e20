/* store: SQLite connections, migrations, the writer thread with its bounded queues, rollups, retention, queries. */
#include "store/store.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "core/buf.h"
#include "core/clock.h"
#include "store/journal.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/names.h"

struct store_migration {
	int version;
	const char *name;
	const char *const *lines;
};

#include "migrations.h" /* generated from db/migrations by db/embed.sh */

#define NMIGRATIONS ((int)(sizeof(store_migrations) / sizeof(store_migrations[0])))
#define READERS 4
#define DEVICES_MAX 256
#define BATCH_SAMPLES 8192
#define BATCH_JOBS 2048
#define MAX_BUCKETS 100000
#define KEYS_MAX 256
#define PRICE_WAITERS 64        /* price replacements waiting for their commit at once */
#define COALESCE_WINDOW 64      /* how far ahead a job's start record looks for its final one in a batch */
#define CHECKPOINT_NS 1000000000ull /* the writer's passive WAL checkpoint, at most this often after writes */
#define GROUP_WAIT_NS 1000000ull    /* while crash marking waits, writes with completions wait at most this long */
#define THROUGHPUT_TTL_NS 1000000000ull /* store_throughput answers from memory this long */
#define THROUGHPUT_CACHE 64
#define SETTLE_NS 2000000000ull       /* a read waits this long at most for the records queued before it */
#define RECORD_DELAY_NS 100000000ull  /* job records are committed this long after the first of them is queued */

/* --- statements: every SQL text acceld runs against the store --- */

enum stmt_id {
	S_DEVICE_UPSERT,
	S_DEVICE_ENSURE,
	S_DEVICE_KEY,
	S_SAMPLE,
	S_JOB,
	S_JOBS_INTERRUPT,
	S_PRICES_CLEAR,
	S_PRICE,
	S_ROLL_MINUTE,
	S_ROLL_HOUR,
	S_DEL_RAW,
	S_DEL_MINUTE,
	S_DEL_HOUR,
	S_DEL_JOBS,
	S_WM_MINUTE,
	S_WM_HOUR,
	S_SAMPLES_MIN,
	S_SAMPLES_MAX,
	S_DEVICES,
	S_JOBS_USAGE,
	S_THROUGHPUT,
	S_PRICES,
	S_JOB_GET,
	S_BEGIN,
	S_COMMIT,
	S_USAGE,                                          /* + tier */
	S_SERIES = S_USAGE + 3,                           /* + tier * STORE_METRIC_COUNT + metric */
	S_COUNT = S_SERIES + 3 * STORE_METRIC_COUNT
};

#define ROLLUP_MINUTE_SQL                                                                                      \
	"INSERT OR REPLACE INTO rollup_minute (device, ts, n, present_ms, util_ms, busy_ms, util_max, mem_avg, "   \
	"mem_max, temp_avg, temp_max, power_avg, power_max) "                                                   \
	"SELECT device, ts / 60000 * 60000, count(*), sum(dt), total(CASE WHEN util IS NOT NULL THEN dt END), "    \
	"total(util * dt), max(util), avg(mem), max(mem), avg(temp), max(temp), avg(power), max(power) "          \
	"FROM samples WHERE device IN (SELECT key FROM devices) AND ts >= ?1 AND ts < ?2 GROUP BY device, ts / 60000"

#define ROLLUP_HOUR_SQL                                                                                        \
	"INSERT OR REPLACE INTO rollup_hour (device, ts, n, present_ms, util_ms, busy_ms, util_max, mem_avg, "     \
	"mem_max, temp_avg, temp_max, power_avg, power_max) "                                                   \
	"SELECT device, ts / 3600000 * 3600000, sum(n), sum(present_ms), sum(util_ms), total(busy_ms), "           \
	"max(util_max), total(mem_avg * n) / sum(CASE WHEN mem_avg IS NOT NULL THEN n END), max(mem_max), "       \
	"total(temp_avg * n) / sum(CASE WHEN temp_avg IS NOT NULL THEN n END), max(temp_max), "                  \
	"total(power_avg * n) / sum(CASE WHEN power_avg IS NOT NULL THEN n END), max(power_max) "                \
	"FROM rollup_minute WHERE device IN (SELECT key FROM devices) AND ts >= ?1 AND ts < ?2 "                 \
	"GROUP BY device, ts / 3600000"

/* ?1 device key, [?2, ?3) the rows' range, ?4 the first bucket's start, ?5 the bucket width */
#define RANGE "WHERE device = ?1 AND ts >= ?2 AND ts < ?3 "
#define BUCKET "SELECT (ts - ?4) / ?5 AS b, "

#define SERIES_RAW(col) \
	BUCKET "total(" col "), count(" col "), max(" col "), sum(DISTINCT 1 << source) FROM samples " RANGE \
	       "AND " col " IS NOT NULL GROUP BY b"
#define SERIES_RAW_UTIL \
	BUCKET "total(util * dt), total(dt), max(util), sum(DISTINCT 1 << source) FROM samples " RANGE \
	       "AND util IS NOT NULL GROUP BY b"
#define SERIES_ROLL(table, col) \
	BUCKET "total(" col "_avg * n), total(n), max(" col "_max), 0 FROM " table " " RANGE "AND " col \
	       "_avg IS NOT NULL GROUP BY b"
#define SERIES_ROLL_UTIL(table) \
	BUCKET "total(busy_ms), total(util_ms), max(util_max), 0 FROM " table " " RANGE "AND util_ms > 0 GROUP BY b"
#define USAGE_ROLL(table) \
	BUCKET "total(present_ms), total(util_ms), total(busy_ms) FROM " table " " RANGE "GROUP BY b"

#define SER(tier, metric) [S_SERIES + (tier) * STORE_METRIC_COUNT + (metric)]

static const char *const stmt_sql[S_COUNT] = {
	[S_DEVICE_UPSERT] =
		"INSERT INTO devices (id, type, model, accelerator_type, uuid, usd_per_hour, price_source, first_seen, "
		"last_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO UPDATE SET "
		"type = excluded.type, model = excluded.model, accelerator_type = excluded.accelerator_type, "
		"uuid = excluded.uuid, usd_per_hour = excluded.usd_per_hour, price_source = excluded.price_source, "
		"first_seen = min(first_seen, excluded.first_seen), last_seen = max(last_seen, excluded.last_seen)",
	[S_DEVICE_ENSURE] = "INSERT INTO devices (id, type, first_seen, last_seen) VALUES (?1, ?2, ?3, ?3) "
			    "ON CONFLICT (id) DO NOTHING",
	[S_DEVICE_KEY] = "SELECT key FROM devices WHERE id = ?1",
	[S_SAMPLE] = "INSERT OR REPLACE INTO samples (device, ts, dt, source, util, mem, temp, power) "
		     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[S_JOB] = "INSERT INTO jobs (id, device, kernel, backend, state, submitted_at, started_at, finished_at, n, m, k, "
		  "flops, bytes, kernel_ms, total_ms, cost_usd, error, reason, queued_ms, transfer_ms) VALUES (?1, ?2, "
		  "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20) "
		  "ON CONFLICT (id) DO UPDATE SET device = excluded.device, "
		  "kernel = excluded.kernel, backend = coalesce(excluded.backend, backend), "
		  /* a final state is never taken back by a late "running" */
		  "state = CASE WHEN excluded.state IN ('queued', 'running') AND state NOT IN ('queued', 'running') "
		  "THEN state ELSE excluded.state END, "
		  "submitted_at = coalesce(excluded.submitted_at, submitted_at), "
		  "started_at = coalesce(excluded.started_at, started_at), "
		  "finished_at = coalesce(excluded.finished_at, finished_at), n = coalesce(excluded.n, n), "
		  "m = coalesce(excluded.m, m), k = coalesce(excluded.k, k), flops = coalesce(excluded.flops, flops), "
		  "bytes = coalesce(excluded.bytes, bytes), kernel_ms = coalesce(excluded.kernel_ms, kernel_ms), "
		  "total_ms = coalesce(excluded.total_ms, total_ms), cost_usd = coalesce(excluded.cost_usd, cost_usd), "
		  "error = coalesce(excluded.error, error), reason = coalesce(excluded.reason, reason), "
		  "queued_ms = coalesce(excluded.queued_ms, queued_ms), "
		  "transfer_ms = coalesce(excluded.transfer_ms, transfer_ms)",
	/* when it stopped is unknown: the row keeps no run time, so usage and cost do not count the downtime */
	[S_JOBS_INTERRUPT] = "UPDATE jobs SET state = 'interrupted', finished_at = coalesce(finished_at, ?1), "
			     "total_ms = coalesce(total_ms, 0), kernel_ms = coalesce(kernel_ms, 0), "
			     "error = coalesce(error, 'acceld stopped before the job finished; its run time is unknown'), "
			     "reason = coalesce(reason, 'INTERRUPTED') "
			     "WHERE state IN ('queued', 'running')",
	[S_PRICES_CLEAR] = "DELETE FROM prices",
	[S_PRICE] = "INSERT OR REPLACE INTO prices (selector, value, usd_per_hour, usd_per_hour_spot, unit, note, "
		    "updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[S_ROLL_MINUTE] = ROLLUP_MINUTE_SQL,
	[S_ROLL_HOUR] = ROLLUP_HOUR_SQL,
	[S_DEL_RAW] = "DELETE FROM samples WHERE device IN (SELECT key FROM devices) AND ts < ?1",
	[S_DEL_MINUTE] = "DELETE FROM rollup_minute WHERE device IN (SELECT key FROM devices) AND ts < ?1",
	[S_DEL_HOUR] = "DELETE FROM rollup_hour WHERE device IN (SELECT key FROM devices) AND ts < ?1",
	[S_DEL_JOBS] = "DELETE FROM jobs WHERE finished_at < ?1",
	[S_WM_MINUTE] = "SELECT max((SELECT max(ts) FROM rollup_minute WHERE device = d.key)) FROM devices d",
	[S_WM_HOUR] = "SELECT max((SELECT max(ts) FROM rollup_hour WHERE device = d.key)) FROM devices d",
	[S_SAMPLES_MIN] = "SELECT min((SELECT min(ts) FROM samples WHERE device = d.key)) FROM devices d",
	[S_SAMPLES_MAX] = "SELECT max((SELECT max(ts) FROM samples WHERE device = d.key)) FROM devices d",
	[S_DEVICES] = "SELECT id, type, model, accelerator_type, uuid, usd_per_hour, price_source, first_seen, "
		      "last_seen FROM devices ORDER BY id",
	[S_JOBS_USAGE] = "SELECT count(*), total(coalesce(total_ms, finished_at - started_at)) / 1000.0, "
			 "total(cost_usd), count(cost_usd) FROM jobs WHERE device = ?1 AND finished_at >= ?2 "
			 "AND finished_at < ?3",
	[S_THROUGHPUT] = "SELECT total(flops), total(kernel_ms), count(*) FROM (SELECT flops, kernel_ms FROM jobs "
			 "WHERE device = ?1 AND kernel = ?2 AND state = 'succeeded' AND flops > 0 AND kernel_ms > 0 "
			 "ORDER BY finished_at DESC LIMIT 20)",
	[S_PRICES] = "SELECT selector, value, usd_per_hour, usd_per_hour_spot, unit, note, updated_at FROM prices "
		     "ORDER BY selector, value",
	[S_JOB_GET] = "SELECT id, device, kernel, backend, state, submitted_at, started_at, finished_at, n, m, k, "
		      "flops, bytes, kernel_ms, total_ms, cost_usd, error, reason, queued_ms, transfer_ms FROM jobs "
		      "WHERE id = ?1",
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_USAGE + STORE_RAW] = BUCKET "total(dt), total(CASE WHEN util IS NOT NULL THEN dt END), total(util * dt) "
				       "FROM samples " RANGE "GROUP BY b",
	[S_USAGE + STORE_MINUTE] = USAGE_ROLL("rollup_minute"),
	[S_USAGE + STORE_HOUR] = USAGE_ROLL("rollup_hour"),
	SER(STORE_RAW, STORE_UTILIZATION) = SERIES_RAW_UTIL,
	SER(STORE_RAW, STORE_MEMORY_USED) = SERIES_RAW("mem"),
	SER(STORE_RAW, STORE_TEMPERATURE) = SERIES_RAW("temp"),
	SER(STORE_RAW, STORE_POWER) = SERIES_RAW("power"),
	SER(STORE_MINUTE, STORE_UTILIZATION) = SERIES_ROLL_UTIL("rollup_minute"),
	SER(STORE_MINUTE, STORE_MEMORY_USED) = SERIES_ROLL("rollup_minute", "mem"),
	SER(STORE_MINUTE, STORE_TEMPERATURE) = SERIES_ROLL("rollup_minute", "temp"),
	SER(STORE_MINUTE, STORE_POWER) = SERIES_ROLL("rollup_minute", "power"),
	SER(STORE_HOUR, STORE_UTILIZATION) = SERIES_ROLL_UTIL("rollup_hour"),
	SER(STORE_HOUR, STORE_MEMORY_USED) = SERIES_ROLL("rollup_hour", "mem"),
	SER(STORE_HOUR, STORE_TEMPERATURE) = SERIES_ROLL("rollup_hour", "temp"),
	SER(STORE_HOUR, STORE_POWER) = SERIES_ROLL("rollup_hour", "power"),
};

/* One connection with its cached prepared statements; lock guards both. */
struct conn {
	pthread_mutex_t lock;
	sqlite3 *db;
	unsigned gen;               /* the writer generation it was opened under */
	sqlite3_stmt *stmt[S_COUNT];
};

struct devrec {
	char id[DEVICE_ID_MAX];
	char type[8];
	char model[128];
	char accelerator_type[32];
	char uuid[96];
	double usd_per_hour;
	char price_source[160];
	int64_t first_seen;
	int64_t last_seen;
	uint64_t version;           /* bumped on every change */
	uint64_t written;           /* the version last committed */
};

struct keyrec {
	char id[DEVICE_ID_MAX];
	int64_t key;
};

/* A write's completion. */
struct waiter {
	store_done_fn fn;
	void *ctx;
};

/* Completions taken out of the queues by one batch, called once it committed or failed. */
struct waiters {
	struct waiter *v;
	size_t n, cap;
};

struct store {
	struct store_opts opts;
	char *path;
	bool memory;

	pthread_mutex_t mu;         /* guards everything below up to the writer-only part */
	pthread_cond_t wake;        /* the writer waits on it */
	pthread_cond_t done;        /* flushers wait on it */
	bool stop;
	bool flush_req;
	bool failing;               /* the last write cycle failed */
	struct store_sample *ring;  /* sample queue: seq s lives at ring[s % cap] */
	size_t cap;
	uint64_t head, tail;
	struct store_job *jobs;     /* job queue, same scheme */
	struct waiter *jwait;       /* the completion of each queued job record (fn NULL: none) */
	uint64_t jhead, jtail;
	uint64_t jfirst_ns;         /* when the oldest record in the job queue was queued (about) */
	bool urgent;                /* writes with completions wait for their commit */
	bool group_ready;           /* the waiting writes can be committed now (no crash marking waits) */
	unsigned nwait;             /* completions waiting in the queues */
	uint64_t group_start_ns;    /* when the first of them was queued */
	struct waiter pwait[PRICE_WAITERS]; /* completions of the pending price replacement */
	size_t npwait;
	struct devrec devs[DEVICES_MAX];
	size_t ndevs;
	struct store_price *prices_pending; /* the latest replacement not yet committed, or NULL */
	size_t nprices_pending;
	bool prices_set;
	bool batch_open;           /* a batch was taken from the queues and is not committed (or put back) yet */
	bool interrupt_pending;
	struct journal *journal;    /* confirms job records before their commit; NULL: they wait for it */
	bool journal_failing;       /* the last append failed (logged once) */
	atomic_bool journaling;     /* journal is set: a record is worth encoding before mu is taken */
	struct store_stats stats;
	char open_error[256];       /* why the database is not open; "" when it is */

	atomic_bool ready;          /* the writer holds a migrated connection */
	atomic_uint gen;            /* bumped on every (re)open, so readers reopen too */
	_Atomic int64_t pub_wm[3];  /* rows before these are rolled up (index: tier) */

	pthread_t writer;
	bool writer_started;

	/* writer thread only */
	struct conn w;
	uint64_t next_try_ns;
	int64_t wm[3];              /* [STORE_MINUTE], [STORE_HOUR] used */
	int64_t max_ts;             /* newest sample ts written: "now" for rollups and retention */
	int64_t last_retention;
	struct keyrec keys[KEYS_MAX];
	size_t nkeys;
	struct store_sample *wbuf;
	struct store_job *jbuf;
	struct devrec *dbuf;
	struct waiters wbatch;      /* the completions of the batch being written (under w.lock) */
	bool dirty;                 /* committed since the last checkpoint (under w.lock) */
	uint64_t last_ckpt_ns;      /* writer thread only, as ckpt */
	sqlite3 *ckpt;              /* the writer's checkpoint connection, so commits go on meanwhile */

	struct conn readers[READERS];

	/* store_throughput's recent answers: each commit would make a reader re-read the pages it needs */
	pthread_mutex_t tp_mu;
	struct {
		char device[DEVICE_ID_MAX];
		char kernel[16];
		double flops_per_s;
		unsigned jobs;
		uint64_t at_ns;             /* 0: empty */
	} tp[THROUGHPUT_CACHE];
	unsigned tp_next;
};

static const char *const source_names[STORE_SRC_COUNT] = {"none", "proc_stat", "cgroup", "device", "executor"};
static const char *const metric_names[STORE_METRIC_COUNT] = {"utilization_ratio", "memory_used_bytes",
							      "temperature_celsius", "power_watts"};
static const char *const tier_names[] = {"raw", "minute", "hour"};
static const int64_t tier_width[] = {0, STORE_MINUTE_MS, STORE_HOUR_MS};

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

int store_schema_version(void)
{
	return store_migrations[NMIGRATIONS - 1].version;
}

static int64_t floor_to(int64_t v, int64_t w)
{
	int64_t r = v % w;

	return r < 0 ? v - r - w : v - r;
}

static int64_t ceil_to(int64_t v, int64_t w)
{
	int64_t f = floor_to(v, w);

	return f == v ? v : f + w;
}

/* --- connections --- */

static void conn_init(struct conn *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
}

static void conn_close(struct conn *c)
{
	for (int i = 0; i < S_COUNT; i++) {
		sqlite3_finalize(c->stmt[i]);
		c->stmt[i] = NULL;
	}
	sqlite3_close(c->db);
	c->db = NULL;
}

/* The cached statement id, reset and unbound; NULL with *rc set when it cannot be prepared. */
static sqlite3_stmt *conn_stmt(struct conn *c, enum stmt_id id, int *rc)
{
	*rc = SQLITE_OK;
	if (c->stmt[id] == NULL) {
		*rc = sqlite3_prepare_v3(c->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &c->stmt[id], NULL);
		if (*rc != SQLITE_OK)
			return NULL;
	}
	sqlite3_reset(c->stmt[id]);
	sqlite3_clear_bindings(c->stmt[id]);
	return c->stmt[id];
}

static void bind_num(sqlite3_stmt *s, int i, double v)
{
	if (isfinite(v))
		sqlite3_bind_double(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

static void bind_pos(sqlite3_stmt *s, int i, int64_t v)
{
	if (v > 0)
		sqlite3_bind_int64(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v && *v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

static double col_num(sqlite3_stmt *s, int i)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

static void col_text(sqlite3_stmt *s, int i, char *dst, size_t dstsz)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	snprintf(dst, dstsz, "%s", t ? (const char *)t : "");
}

/* Steps a statement that returns no rows (or whose rows are not needed). */
static int step_done(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/* Runs a one-value query; *out is NULL-safe: it keeps def when the value is NULL. */
static int query_i64(struct conn *c, enum stmt_id id, int64_t def, int64_t *out)
{
	int rc;
	sqlite3_stmt *s = conn_stmt(c, id, &rc);

	*out = def;
	if (s == NULL)
		return rc;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Errors after which the connection is closed and opened again: the file itself is in trouble. */
static bool rc_needs_reopen(int rc)
{
	int primary = rc & 0xff;

	return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR ||
	       primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_SCHEMA;
}

/* Creates every missing folder above the file at path. */
static int make_parent_dirs(const char *path)
{
	char *copy = xstrdup(path);
	int rc = 0;

	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0750) != 0 && errno != EEXIST) {
			rc = -1;
			break;
		}
		*p = '/';
	}
	free(copy);
	return rc;
}

/* --- migrations --- */

static int exec_sql(sqlite3 *db, const char *sql, char *err, size_t errsz)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK)
		snprintf(err, errsz, "%s", msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	return rc;
}

static int apply_migration(sqlite3 *db, const struct store_migration *m, char *err, size_t errsz)
{
	struct buf sql;
	char pragma[64];
	char why[200] = "";
	int rc;

	buf_init(&sql, 1 << 20);
	for (const char *const *l = m->lines; *l; l++)
		buf_append(&sql, *l, strlen(*l));
	/* the version is this build's own constant, never input */
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", m->version);
	rc = exec_sql(db, "BEGIN IMMEDIATE", why, sizeof(why));
	if (rc != SQLITE_OK)
		goto out;
	rc = exec_sql(db, sql.data ? sql.data : "", why, sizeof(why));
	if (rc == SQLITE_OK)
		rc = exec_sql(db, pragma, why, sizeof(why));
	if (rc == SQLITE_OK)
		rc = exec_sql(db, "COMMIT", why, sizeof(why));
	if (rc != SQLITE_OK)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	if (rc != SQLITE_OK)
		snprintf(err, errsz, "migration %s failed: %s", m->name, why);
	buf_release(&sql);
	return rc;
}

/* Brings the schema up to the newest migration; refuses a file from a newer acceld. */
static int migrate(sqlite3 *db, char *err, size_t errsz)
{
	sqlite3_stmt *s = NULL;
	int version = 0;
	int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL);

	if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	else if (rc == SQLITE_OK)
		rc = sqlite3_errcode(db);
	sqlite3_finalize(s);
	if (rc != SQLITE_OK) {
		snprintf(err, errsz, "cannot read the schema version: %s", sqlite3_errstr(rc));
		return rc;
	}
	if (version > store_schema_version()) {
		snprintf(err, errsz,
			 "database schema version %d is newer than this acceld knows (%d): upgrade acceld or use "
			 "another --db",
			 version, store_schema_version());
		return SQLITE_ERROR;
	}
	for (int i = 0; i < NMIGRATIONS; i++) {
		if (store_migrations[i].version <= version)
			continue;
		rc = apply_migration(db, &store_migrations[i], err, errsz);
		if (rc != SQLITE_OK)
			return rc;
		log_fields(LOGL_INFO, "store", "schema migrated",
			   (struct log_field[]){LOG_S("migration", store_migrations[i].name),
						LOG_I("user_version", store_migrations[i].version)},
			   2);
	}
	return SQLITE_OK;
}

static int quick_check(sqlite3 *db, char *err, size_t errsz)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &s, NULL);

	if (rc == SQLITE_OK) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			const unsigned char *t = sqlite3_column_text(s, 0);

			if (t && strcmp((const char *)t, "ok") == 0) {
				rc = SQLITE_OK;
			} else {
				snprintf(err, errsz, "database file is corrupt (%s): move it aside or restore it",
					 t ? (const char *)t : "?");
				rc = SQLITE_CORRUPT;
			}
		} else {
			snprintf(err, errsz, "integrity check failed: %s", sqlite3_errmsg(db));
		}
	} else {
		snprintf(err, errsz, "integrity check failed: %s", sqlite3_errmsg(db));
	}
	sqlite3_finalize(s);
	return rc;
}

/* --- the writer's connection --- */

static void set_open_error(struct store *st, const char *msg)
{
	pthread_mutex_lock(&st->mu);
	if (strcmp(st->open_error, msg) != 0)
		log_msg(LOGL_ERROR, "store", "%s; retrying every %u ms", msg, st->opts.retry_interval_ms);
	snprintf(st->open_error, sizeof(st->open_error), "%s", msg);
	snprintf(st->stats.last_error, sizeof(st->stats.last_error), "%s", msg);
	pthread_mutex_unlock(&st->mu);
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
	st->wm[STORE_MINUTE] = wm_min >= 0 ? wm_min + STORE_MINUTE_MS : first >= 0 ? floor_to(first, STORE_MINUTE_MS) : -1;
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

static int write_job(struct store *st, const struct store_job *j);

struct replay {
	struct store *st;
	int rc;
};

static int replay_one(void *ctx, const struct store_job *job)
{
	struct replay *r = ctx;

	r->rc = write_job(r->st, job);
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
			   errno == EWOULDBLOCK ? "another acceld process owns the journal of this database: job answers "
						  "wait for their commit"
						: "cannot claim the journal: job answers wait for their commit",
			   (struct log_field[]){LOG_S("error", strerror(errno))}, 1);
		return SQLITE_OK;
	}
	rc = exec_sql(st->w.db, "BEGIN IMMEDIATE", err, errsz);
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
	rc = exec_sql(st->w.db, "COMMIT", err, errsz);
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

/* Opens, checks and migrates the database for the writer. Returns 0, or -1 with the reason recorded. */
static int writer_open(struct store *st)
{
	char err[256] = "";
	sqlite3 *db = NULL;
	int rc;

	if (!st->memory && make_parent_dirs(st->path) != 0) {
		snprintf(err, sizeof(err), "cannot create the folder of %s: %s", st->path, strerror(errno));
		goto fail;
	}
	rc = sqlite3_open_v2(st->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, sizeof(err), "cannot open database %s: %s", st->path,
			 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(db, (int)st->opts.busy_timeout_ms);
	if (exec_sql(db,
		     st->opts.sync_full
			     ? "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA journal_size_limit = 16777216; "
			       "PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 0"
			     : "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA journal_size_limit = "
			       "16777216; PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 0",
		     err, sizeof(err)) != SQLITE_OK) {
		char why[200];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, sizeof(err), "cannot use database %s: %s", st->path, why);
		goto fail;
	}
	if (quick_check(db, err, sizeof(err)) != SQLITE_OK || migrate(db, err, sizeof(err)) != SQLITE_OK)
		goto fail;
	if (st->opts.max_pages > 0) {
		char pragma[64];

		snprintf(pragma, sizeof(pragma), "PRAGMA max_page_count = %lld", (long long)st->opts.max_pages);
		exec_sql(db, pragma, err, sizeof(err));
	}
	st->w.db = db;
	st->nkeys = 0;
	if (load_watermarks(st) != SQLITE_OK) {
		snprintf(err, sizeof(err), "cannot read database %s: %s", st->path, sqlite3_errmsg(db));
		conn_close(&st->w);
		db = NULL;
		goto fail;
	}
	if (journal_recover(st, err, sizeof(err)) != SQLITE_OK) {
		conn_close(&st->w);
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

static void writer_drop_conn(struct store *st)
{
	conn_close(&st->w);
	st->nkeys = 0;
	atomic_store(&st->ready, false);
	atomic_fetch_add(&st->gen, 1);
	pthread_mutex_lock(&st->mu);
	st->stats.open = false;
	pthread_mutex_unlock(&st->mu);
}

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
	s = conn_stmt(&st->w, S_DEVICE_ENSURE, &rc);
	if (s == NULL)
		return rc;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, type, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, ts);
	rc = step_done(s);
	if (rc != SQLITE_OK)
		return rc;
	s = conn_stmt(&st->w, S_DEVICE_KEY, &rc);
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

static int write_device(struct store *st, const struct devrec *d)
{
	int rc;
	sqlite3_stmt *s = conn_stmt(&st->w, S_DEVICE_UPSERT, &rc);

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

static int write_job(struct store *st, const struct store_job *j)
{
	int rc;
	sqlite3_stmt *s = conn_stmt(&st->w, S_JOB, &rc);

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
	return step_done(s);
}

static int write_prices(struct store *st, const struct store_price *v, size_t n)
{
	int rc;
	sqlite3_stmt *s = conn_stmt(&st->w, S_PRICES_CLEAR, &rc);

	if (s == NULL || (rc = step_done(s)) != SQLITE_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		s = conn_stmt(&st->w, S_PRICE, &rc);
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

static int write_sample(struct store *st, const struct store_sample *x, int64_t key)
{
	int rc;
	sqlite3_stmt *s = conn_stmt(&st->w, S_SAMPLE, &rc);

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

/* Calls every completion of w with ok and empties it; counts them. Call without st->mu. */
static void waiters_call(struct store *st, struct waiters *w, bool ok)
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
	st->nwait = 0;
	st->urgent = false;
	st->group_ready = false;
}

/* What one batch took from the queues, to be popped once committed. */
struct batch {
	size_t nsamples, njobs, ndevs;
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
	st->urgent = st->nwait > 0;
	st->group_ready = false;
	if (!records_only) {
		b->interrupt = st->interrupt_pending;
		st->interrupt_pending = false;
	}
	st->batch_open = true;
	pthread_mutex_unlock(&st->mu);
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
		st->stats.written_records += b->njobs + b->ndevs + (b->has_prices ? b->nprices : 0) + b->interrupt;
		st->stats.commits++;
		if (st->journal != NULL)
			journal_committed(st->journal, st->jhead);
		free(b->prices);
	} else {
		if (b->has_prices && !st->prices_set) {
			st->prices_set = true;
			st->prices_pending = b->prices;
			st->nprices_pending = b->nprices;
		} else {
			free(b->prices);
		}
		st->interrupt_pending = st->interrupt_pending || b->interrupt;
	}
	pthread_mutex_unlock(&st->mu);
	b->prices = NULL;
}

/*
 * Writes one batch in one transaction (w.lock held). Sets *more when the queues still hold rows. The batch's
 * completions are left in st->wbatch: the caller calls them with the outcome once it released w.lock.
 */
static int write_batch(struct store *st, bool records_only, bool *more, char *err, size_t errsz)
{
	struct batch b;
	int64_t raw_cutoff = st->max_ts - st->opts.retention_raw_ms;
	int rc;

	batch_take(st, &b, records_only);
	b.min_ts = INT64_MAX;
	b.max_ts = INT64_MIN;
	*more = false;
	if (b.nsamples == 0 && b.njobs == 0 && b.ndevs == 0 && !b.has_prices && !b.interrupt) {
		batch_finish(st, &b, true);
		return SQLITE_OK;
	}
	{
		sqlite3_stmt *s = conn_stmt(&st->w, S_BEGIN, &rc);

		if (s != NULL)
			rc = step_done(s);
	}
	for (size_t i = 0; rc == SQLITE_OK && i < b.ndevs; i++)
		rc = write_device(st, &st->dbuf[i]);
	if (rc == SQLITE_OK && b.interrupt) {
		sqlite3_stmt *s = conn_stmt(&st->w, S_JOBS_INTERRUPT, &rc);

		if (s != NULL) {
			sqlite3_bind_int64(s, 1, clock_real_ms());
			rc = step_done(s);
			if (rc == SQLITE_OK && sqlite3_changes(st->w.db) > 0)
				log_fields(LOGL_WARN, "store", "jobs left unfinished by the last run marked interrupted",
					   (struct log_field[]){LOG_I("jobs", sqlite3_changes(st->w.db))}, 1);
		}
	}
	if (rc == SQLITE_OK && b.has_prices)
		rc = write_prices(st, b.prices, b.nprices);
	for (size_t i = 0; rc == SQLITE_OK && i < b.njobs; i++)
		if (st->jbuf[i].id[0] != '\0')
			rc = write_job(st, &st->jbuf[i]);
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
		sqlite3_stmt *s = conn_stmt(&st->w, S_COMMIT, &rc);

		if (s != NULL)
			rc = step_done(s);
	}
	if (rc != SQLITE_OK)
		snprintf(err, errsz, "%s", sqlite3_errmsg(st->w.db));
	if (rc != SQLITE_OK) {
		sqlite3_exec(st->w.db, "ROLLBACK", NULL, NULL, NULL);
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
	sqlite3_stmt *s = conn_stmt(&st->w, id, &rc);

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
	rc = exec_sql(st->w.db, "BEGIN IMMEDIATE", err, errsz);
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
		rc = exec_sql(st->w.db, "COMMIT", err, errsz);
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

/* While the database fails, writes waiting for their commit are answered at once (false); they stay queued. */
static void fail_waiters(struct store *st)
{
	struct waiters all = {0};

	pthread_mutex_lock(&st->mu);
	waiters_take_all_locked(st, &all);
	pthread_mutex_unlock(&st->mu);
	waiters_call(st, &all, false);
	free(all.v);
}

static void write_failed(struct store *st, int rc, const char *why)
{
	uint64_t backlog;

	pthread_mutex_lock(&st->mu);
	backlog = (st->tail - st->head) + (st->jtail - st->jhead);
	if (!st->failing || strcmp(st->stats.last_error, why) != 0)
		log_fields(LOGL_ERROR, "store", "database write failed; retrying",
			   (struct log_field[]){LOG_S("error", why), LOG_I("backlog", backlog)}, 2);
	st->failing = true;
	st->stats.write_errors++;
	snprintf(st->stats.last_error, sizeof(st->stats.last_error), "%s", why);
	pthread_mutex_unlock(&st->mu);
	if (rc_needs_reopen(rc))
		writer_drop_conn(st);
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
	if (st->w.db == NULL && writer_open(st) != 0) {
		fail_waiters(st);
		goto out;
	}
	while (rc == SQLITE_OK && more) {
		rc = write_batch(st, false, &more, err, sizeof(err));
		waiters_call(st, &st->wbatch, rc == SQLITE_OK);
	}
	if (rc == SQLITE_OK)
		rc = maintain(st, err, sizeof(err));
	if (rc != SQLITE_OK) {
		write_failed(st, rc, err[0] ? err : sqlite3_errstr(rc));
		fail_waiters(st);
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

static bool queues_empty(const struct store *st)
{
	bool devs_clean = true;

	for (size_t i = 0; i < st->ndevs && devs_clean; i++)
		devs_clean = st->devs[i].version == st->devs[i].written;
	/* what a batch took out is not written until it commits: store_flush must not return in between */
	return st->head == st->tail && st->jhead == st->jtail && devs_clean && !st->prices_set &&
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
	return high || st->urgent || st->interrupt_pending || st->prices_set;
}

static void *writer_main(void *arg)
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

/* --- life cycle --- */

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
	pthread_mutex_init(&st->mu, NULL);
	pthread_mutex_init(&st->tp_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->wake, &ca);
	pthread_cond_init(&st->done, &ca);
	pthread_condattr_destroy(&ca);
	conn_init(&st->w);
	for (int i = 0; i < READERS; i++)
		conn_init(&st->readers[i]);
	st->wm[STORE_MINUTE] = st->wm[STORE_HOUR] = -1;

	/* the first open runs here, so the schema is in place (or the failure known) before the service starts */
	st->next_try_ns = clock_mono_ns() + (uint64_t)st->opts.retry_interval_ms * 1000000ull;
	if (writer_open(st) != 0)
		snprintf(err, errsz, "%s", st->open_error);
	else if (errsz > 0)
		err[0] = '\0';
	if (pthread_create(&st->writer, NULL, writer_main, st) == 0)
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
	fail_waiters(st);
	/* a journal whose records are all committed goes; one that holds others is replayed at the next start */
	journal_close(st->journal, queues_empty(st) && !st->failing && atomic_load(&st->ready));
	sqlite3_close(st->ckpt);
	for (int i = 0; i < READERS; i++) {
		conn_close(&st->readers[i]);
		pthread_mutex_destroy(&st->readers[i].lock);
	}
	conn_close(&st->w);
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
			 (unsigned long long)((st->tail - st->head) + (st->jtail - st->jhead)));
	else if (!ok)
		snprintf(err, errsz, "database not open");
	pthread_mutex_unlock(&st->mu);
	return ok;
}

/* --- queueing --- */

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
		struct devrec *r = NULL;

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
			/* a commit is running (or the writer reopens): it takes the group (the urgent flag keeps it awake) */
			pthread_mutex_lock(&st->mu);
			if (st->urgent)
				pthread_cond_signal(&st->wake);
			pthread_mutex_unlock(&st->mu);
			return;
		}
		more = true;
		while (rc == SQLITE_OK && more) {
			rc = write_batch(st, true, &more, err, sizeof(err));
			waiters_call(st, &st->wbatch, rc == SQLITE_OK);
		}
		if (rc != SQLITE_OK)
			write_failed(st, rc, err[0] ? err : sqlite3_errstr(rc));
		pthread_mutex_unlock(&st->w.lock);
		if (rc != SQLITE_OK) {
			fail_waiters(st);
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
			log_fields(LOGL_ERROR, "store", "cannot append to the journal: job answers wait for their commit",
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

bool store_flush(struct store *st, unsigned timeout_ms)
{
	struct timespec ts;
	bool empty;

	if (st == NULL)
		return false;
	ts = clock_deadline(CLOCK_MONOTONIC, timeout_ms * 1000000ull);
	pthread_mutex_lock(&st->mu);
	for (;;) {
		empty = queues_empty(st) && !st->failing && atomic_load(&st->ready);
		if (empty || !st->writer_started)
			break;
		st->flush_req = true;
		pthread_cond_signal(&st->wake);
		if (pthread_cond_timedwait(&st->done, &st->mu, &ts) != 0) {
			empty = queues_empty(st) && !st->failing && atomic_load(&st->ready);
			break;
		}
	}
	pthread_mutex_unlock(&st->mu);
	return empty;
}

void store_stats(struct store *st, struct store_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (st == NULL)
		return;
	pthread_mutex_lock(&st->mu);
	*out = st->stats;
	out->backlog = (st->tail - st->head) + (st->jtail - st->jhead);
	out->open = atomic_load(&st->ready);
	pthread_mutex_unlock(&st->mu);
}

void store_retention(const struct store *st, int64_t *raw_ms, int64_t *minute_ms, int64_t *hour_ms)
{
	*raw_ms = st ? st->opts.retention_raw_ms : STORE_RETENTION_RAW_MS;
	*minute_ms = st ? st->opts.retention_minute_ms : STORE_RETENTION_MINUTE_MS;
	*hour_ms = st ? st->opts.retention_hour_ms : STORE_RETENTION_HOUR_MS;
}

/* --- reading --- */

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
static enum acceld_err reader_acquire(struct store *st, struct conn **out)
{
	struct conn *c = NULL;
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
		conn_close(c);
	if (c->db == NULL) {
		int rc = sqlite3_open_v2(st->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);

		if (rc == SQLITE_OK) {
			sqlite3_busy_timeout(c->db, (int)st->opts.busy_timeout_ms);
			rc = sqlite3_exec(c->db, "PRAGMA query_only = 1", NULL, NULL, NULL);
		}
		if (rc != SQLITE_OK) {
			conn_close(c);
			pthread_mutex_unlock(&c->lock);
			return ACCELD_EUNAVAILABLE;
		}
		c->gen = gen;
	}
	*out = c;
	return ACCELD_OK;
}

/* Unlocks c; a connection that met a file-level error is closed so the next reader opens afresh. */
static enum acceld_err reader_release(struct store *st, struct conn *c, int rc)
{
	if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW && rc_needs_reopen(rc) && c != &st->w)
		conn_close(c);
	pthread_mutex_unlock(&c->lock);
	if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW)
		return ACCELD_OK;
	log_msg(LOGL_WARN, "store", "query failed: %s", sqlite3_errstr(rc));
	return (rc & 0xff) == SQLITE_BUSY || rc_needs_reopen(rc) ? ACCELD_EUNAVAILABLE : ACCELD_EIO;
}

/* The key of a device id, or -1 when it was never seen. */
static int reader_key(struct conn *c, const char *id, int64_t *key)
{
	int rc;
	sqlite3_stmt *s = conn_stmt(c, S_DEVICE_KEY, &rc);

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
	struct conn *c;
	sqlite3_stmt *s;
	struct store_device_row *v = NULL;
	size_t len = 0, cap = 0;
	enum acceld_err e = reader_acquire(st, &c);
	int rc;

	*out = NULL;
	*n = 0;
	if (e != ACCELD_OK)
		return e;
	s = conn_stmt(c, S_DEVICES, &rc);
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
	struct conn *c;
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
	sqlite3_stmt *s = conn_stmt(k->c, k->series ? k->base + t * STORE_METRIC_COUNT : k->base + t, &rc);

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
	struct collect k = {.st = st, .series = true, .origin = start_ms, .step = step_ms};
	enum acceld_err e;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	if ((int)metric < 0 || metric >= STORE_METRIC_COUNT)
		return ACCELD_EINVAL;
	k.base = (enum stmt_id)(S_SERIES + metric);
	out->tier = store_pick_tier(st, start_ms, step_ms, now_ms);
	e = collect_run(&k, device, out->tier, start_ms, end_ms);
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
		p->t_ms = start_ms + (int64_t)i * step_ms;
		p->value = k.acc[i].a / k.acc[i].b;
		p->max = k.acc[i].max;
	}
	/* utilisation rows are weighted by milliseconds: the busy sum over the covered time */
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
	struct conn *c;
	sqlite3_stmt *s;
	enum acceld_err e;
	int rc;

	memset(out, 0, sizeof(*out));
	if (st != NULL)
		records_settle(st);
	e = reader_acquire(st, &c);
	if (e != ACCELD_OK)
		return e;
	s = conn_stmt(c, S_JOBS_USAGE, &rc);
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
	struct conn *c;
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
	s = conn_stmt(c, S_THROUGHPUT, &rc);
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
	struct conn *c;
	sqlite3_stmt *s;
	struct store_price *v = NULL;
	size_t len = 0, cap = 0;
	enum acceld_err e = reader_acquire(st, &c);
	int rc;

	*out = NULL;
	*n = 0;
	if (e != ACCELD_OK)
		return e;
	s = conn_stmt(c, S_PRICES, &rc);
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

enum acceld_err store_job_get(struct store *st, const char *id, struct store_job *out)
{
	struct conn *c;
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
	s = conn_stmt(c, S_JOB_GET, &rc);
	if (s != NULL) {
		sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			found = true;
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
		}
		sqlite3_reset(s);
	}
	e = reader_release(st, c, rc);
	if (e == ACCELD_OK && !found)
		return ACCELD_ENOTFOUND;
	return e;
}
