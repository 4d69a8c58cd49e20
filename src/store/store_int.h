/*
 * store_int: what the parts of the store (src/store/store*.c) share, and only they include: the limits, the
 * statement ids, struct store with its connections and queues, the bind and column helpers, and the functions one
 * part calls in another. Everything outside src/store/ goes through store.h.
 *
 * The parts, each calling only those after it: store.c (life cycle, health, names), store_queue.c (the queues that
 * writes go into, group commit), store_writer.c (the writer thread and its connection: batches, rollups,
 * retention, checkpoints, the journal replayed), store_read.c (the queries), store_db.c (connections, the file,
 * migrations), store_sql.c (every SQL text).
 */
#ifndef ACCELD_STORE_INT_H
#define ACCELD_STORE_INT_H

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "store/store.h"

/* A numbered migration (db/migrations/NNNN_*.sql) as db/embed.sh writes it into the generated migrations.h. */
struct store_migration {
	int version;
	const char *name;
	const char *const *lines;
};

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

/* The statements each connection prepares once and keeps; their texts are store_stmt_sql's. */
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
	S_JOBS_RECENT,
	S_CHECK_PUT,
	S_CHECKS_EXPIRE,
	S_CHECK_GET,                                      /* the reads of checks: ?1 device, ?2 limit, ?3 id */
	S_CHECKS_FIRST,
	S_CHECKS_AFTER,
	S_CHECKS_LATEST,
	S_CHECKS_UNFINISHED,
	S_BEGIN,
	S_COMMIT,
	S_USAGE,                                          /* + tier */
	S_SERIES = S_USAGE + 3,                           /* + tier * STORE_METRIC_COUNT + metric */
	S_COUNT = S_SERIES + 3 * STORE_METRIC_COUNT
};

/* The columns of a job row, in the order the reads of jobs take them (store_read.c's job_of_row). */
#define STORE_JOB_COLUMNS                                                                                       \
	"id, device, kernel, backend, state, submitted_at, started_at, finished_at, n, m, k, flops, bytes, "    \
	"kernel_ms, total_ms, cost_usd, error, reason, queued_ms, transfer_ms, trigger, check_id, peak_gflops, " \
	"peak_gbytes_per_s, setup_ms, generate_ms, verify_ms, transfer_bytes, upload_ms, upload_bytes, "        \
	"download_ms, download_bytes, transfer_memory"

/* Every SQL text acceld runs against the store, by statement id (store_sql.c). */
extern const char *const store_stmt_sql[S_COUNT];

/* One connection with its cached prepared statements; lock guards both. */
struct store_conn {
	pthread_mutex_t lock;
	sqlite3 *db;
	unsigned gen;               /* the writer generation it was opened under */
	sqlite3_stmt *stmt[S_COUNT];
};

struct store_device_pending {
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

struct store_device_key {
	char id[DEVICE_ID_MAX];
	int64_t key;
};

/* A health check waiting for its commit, with its own copy of the document (row.doc is NULL). */
struct store_check_row {
	struct store_check row;
	char *doc;
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
	struct store_check_row checks[STORE_BACKLOG_CHECKS]; /* checks waiting for their commit, one per id */
	size_t nchecks;
	struct waiter cwait[STORE_BACKLOG_CHECKS]; /* their completions */
	size_t ncwait;
	struct store_device_pending devs[DEVICES_MAX];
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
	struct store_conn w;
	uint64_t next_try_ns;
	int64_t wm[3];              /* [STORE_MINUTE], [STORE_HOUR] used */
	int64_t max_ts;             /* newest sample ts written: "now" for rollups and retention */
	int64_t last_retention;
	struct store_device_key keys[KEYS_MAX];
	size_t nkeys;
	struct store_sample *wbuf;
	struct store_job *jbuf;
	struct store_device_pending *dbuf;
	struct store_check_row *cbuf;      /* the checks of the batch being written (under w.lock) */
	struct waiters wbatch;      /* the completions of the batch being written (under w.lock) */
	bool dirty;                 /* committed since the last checkpoint (under w.lock) */
	uint64_t last_ckpt_ns;      /* writer thread only, as ckpt */
	sqlite3 *ckpt;              /* the writer's checkpoint connection, so commits go on meanwhile */

	struct store_conn readers[READERS];

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

/* v rounded down (floor_to) or up (ceil_to) to a multiple of w, negative v included. */
static inline int64_t floor_to(int64_t v, int64_t w)
{
	int64_t r = v % w;

	return r < 0 ? v - r - w : v - r;
}

static inline int64_t ceil_to(int64_t v, int64_t w)
{
	int64_t f = floor_to(v, w);

	return f == v ? v : f + w;
}

/* Parameters and columns: an unknown number (NAN), a time or size of 0 and "" are NULL in the database. */
static inline void bind_num(sqlite3_stmt *s, int i, double v)
{
	if (isfinite(v))
		sqlite3_bind_double(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

static inline void bind_pos(sqlite3_stmt *s, int i, int64_t v)
{
	if (v > 0)
		sqlite3_bind_int64(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

static inline void bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v && *v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

static inline double col_num(sqlite3_stmt *s, int i)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

static inline void col_text(sqlite3_stmt *s, int i, char *dst, size_t dstsz)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	snprintf(dst, dstsz, "%s", t ? (const char *)t : "");
}

/* Steps a statement that returns no rows (or whose rows are not needed). */
static inline int step_done(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/* Samples and records waiting in the queues; st->mu held. */
static inline uint64_t store_backlog_locked(const struct store *st)
{
	return (st->tail - st->head) + (st->jtail - st->jhead) + st->nchecks;
}

/* --- store_db.c: connections and the database file --- */

void store_conn_init(struct store_conn *c);

/* Finalizes c's statements and closes its database (c->db NULL afterwards); the lock stays. */
void store_conn_close(struct store_conn *c);

/* The cached statement id, reset and unbound; NULL with *rc set when it cannot be prepared. */
sqlite3_stmt *store_conn_stmt(struct store_conn *c, enum stmt_id id, int *rc);

/* Errors after which the connection is closed and opened again: the file itself is in trouble. */
bool store_rc_needs_reopen(int rc);

/* sqlite3_exec of sql; a failure's message goes into err. Returns the SQLite result code. */
int store_exec_sql(sqlite3 *db, const char *sql, char *err, size_t errsz);

/*
 * Opens st's database file for writing (its folders created, WAL at the sync level asked for), checks it and
 * migrates it to this build's schema (refusing a newer one). Returns SQLITE_OK with *out set, or an SQLite error
 * with why in err.
 */
int store_db_open(const struct store *st, sqlite3 **out, char *err, size_t errsz);

/* --- store_writer.c: the writer --- */

/*
 * Opens, checks and migrates the database for the writer and replays its journal: on the writer thread (w.lock
 * held), and once in store_open_opts before it starts. Returns 0, or -1 with the reason recorded.
 */
int store_writer_open(struct store *st);

/* Closes the writer's connection after a file-level error, so the next cycle opens it afresh; st->w.lock held. */
void store_writer_drop_conn(struct store *st);

/* Upserts one job record on the writer's connection (inside the caller's transaction). */
int store_write_job(struct store *st, const struct store_job *j);

/* Calls every completion of w with ok and empties it; counts them. Call without st->mu. */
void store_waiters_call(struct store *st, struct waiters *w, bool ok);

/*
 * Writes one batch in one transaction (w.lock held). Sets *more when the queues still hold rows. The batch's
 * completions are left in st->wbatch: the caller calls them with the outcome once it released w.lock.
 * records_only leaves samples, devices and the interrupt marking to the writer thread (a request's thread commits
 * only records).
 */
int store_write_batch(struct store *st, bool records_only, bool *more, char *err, size_t errsz);

/* Counts and logs a failed write (once per distinct error), and drops the connection after a file-level error. */
void store_write_failed(struct store *st, int rc, const char *why);

/* While the database fails, writes waiting for their commit are answered at once (false); they stay queued. */
void store_fail_waiters(struct store *st);

/* Whether nothing is queued or being written; st->mu held (or the writer stopped). */
bool store_queues_empty(const struct store *st);

/* The writer thread (arg: the store): waits for work or its tick, writes, checkpoints; ends once st->stop is set. */
void *store_writer_main(void *arg);

#endif
