/*
 * store: the SQLite database (WAL mode) that keeps the device registry, utilization samples and their rollups,
 * jobs, price overrides and health checks. It is the only code that opens the database file.
 *
 * Writes are queued: store_add_samples, store_devices_seen, store_job_record, store_prices_replace and
 * store_check_put_notify copy what they are given into bounded in-memory queues, and one writer thread commits them
 * in batched transactions (about once a second), then computes minute and hour rollups and applies retention.
 * Writes the API confirms (a job's final record, new prices, a health check) go through the _notify variants,
 * whose completion says when they are durable. A job record is durable once appended to the journal (journal.h:
 * one write(2)), and is committed with the writer's batch 100 ms after the first record waiting; the next open
 * replays what a crash left in the journal. Prices, health checks, and job records while there is no journal
 * (ACCELD_DB_SYNC=full, a memory database, a journal that cannot be written), are committed in groups (group
 * commit: at once when no commit runs, else in the transaction after the running one). Reads of jobs
 * (store_job_get, store_jobs_usage) first wait for the records queued before them, so they see every job answered.
 * WAL checkpoints run on the writer thread only (passive, at most once a second after writes), never on a
 * committing caller's.
 * When the database cannot be written (unwritable, locked, full, corrupt, a newer schema), the service keeps
 * running: store_healthy says which check fails, the writer retries (and reopens the file) every retry interval,
 * and samples wait in the queue. Loss policy: when the sample queue is full the OLDEST sample is dropped and
 * counted (store_stats().dropped_samples); job records have their own queue, which refuses the NEWEST record when
 * full (those queued may have been confirmed already), counted in dropped_records, and so do health checks.
 *
 * Reads (the query functions below) run on the caller's thread on a small pool of read-only connections; in WAL
 * mode they never wait for the writer. Every SQL text is a constant with bound parameters.
 *
 * Schema: db/migrations/NNNN_*.sql, embedded at build time and applied in order under PRAGMA user_version. An
 * older file is upgraded when opened; a file whose user_version is newer than the last migration is left alone
 * and reported as unhealthy.
 *
 * Times are milliseconds since the Unix epoch. All functions may be called from any thread.
 */
#ifndef ACCELD_STORE_H
#define ACCELD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detect/device.h"
#include "core/err.h"
#include "store/store_job.h"

struct store;

#define STORE_MINUTE_MS 60000LL
#define STORE_HOUR_MS 3600000LL
#define STORE_DAY_MS 86400000LL

/* Default retention of each tier (ACCELD_RETENTION_RAW, _MINUTE, _HOUR). */
#define STORE_RETENTION_RAW_MS (24 * STORE_HOUR_MS)
#define STORE_RETENTION_MINUTE_MS (14 * STORE_DAY_MS)
#define STORE_RETENTION_HOUR_MS (400 * STORE_DAY_MS)

#define STORE_BACKLOG_SAMPLES 65536 /* default capacity of the sample queue */
#define STORE_BACKLOG_RECORDS 4096  /* capacity of the job/price record queue */
#define STORE_BACKLOG_CHECKS 64     /* health checks waiting for their commit (one per check id) */

struct store_opts {
	const char *path;             /* file, or ":memory:" for a private in-memory database */
	int64_t retention_raw_ms;     /* 0 = default */
	int64_t retention_minute_ms;
	int64_t retention_hour_ms;
	size_t backlog_samples;       /* 0 = STORE_BACKLOG_SAMPLES */
	unsigned flush_interval_ms;   /* how long the writer gathers a batch; 0 = 1000 */
	unsigned retry_interval_ms;   /* wait between attempts while the database fails; 0 = 1000 */
	unsigned busy_timeout_ms;     /* 0 = 2000 */
	int64_t max_pages;            /* PRAGMA max_page_count when > 0 (a hard size cap; tests use it for "full") */
	bool sync_full;               /* PRAGMA synchronous = FULL (every commit synced) instead of NORMAL */
};

/*
 * Creates the store for opts->path (creating the file and its folder when missing), applies the migrations and
 * starts the writer thread. It returns ACCELD_OK with *out set even when the database cannot be used yet: then err
 * holds the first failure (otherwise ""), store_healthy reports it and the writer keeps retrying. The options are
 * copied. Returns ACCELD_EINVAL only for invalid options.
 */
enum acceld_err store_open_opts(const struct store_opts *opts, struct store **out, char *err, size_t errsz);

/* store_open_opts with default options for path. */
enum acceld_err store_open(const char *path, struct store **out, char *err, size_t errsz);

/* Writes what is queued (one last attempt), stops the writer and closes the database; NULL is allowed. */
void store_close(struct store *st);

/*
 * True when the database is open, migrated, and the last write (if any) succeeded. Otherwise writes the failing
 * check ("cannot open ...", "schema version 9 is newer ...", "writes failing: database or disk is full; 120 rows
 * waiting") into err and returns false. Never touches the database (no I/O).
 */
bool store_healthy(struct store *st, char *err, size_t errsz);

/* The SQLite library version, e.g. "3.40.1". */
const char *store_sqlite_version(void);

/* The newest schema version this build knows (the number of the last migration). */
int store_schema_version(void);

/* --- writing (asynchronous, never blocks on I/O) --- */

/* Where a sample's figures came from. */
enum store_source {
	STORE_SRC_NONE = 0,      /* presence only: the device existed, nothing was measured */
	STORE_SRC_PROC_STAT = 1, /* /proc/stat deltas */
	STORE_SRC_CGROUP = 2,    /* the cgroup's cpu.stat usage_usec */
	STORE_SRC_DEVICE = 3,    /* the device's own telemetry (NVML, sysfs) */
	STORE_SRC_EXECUTOR = 4,  /* acceld's executor: the fraction of time it ran jobs on the device */
	STORE_SRC_COUNT
};

/* "none", "proc_stat", "cgroup", "device", "executor". */
const char *store_source_name(enum store_source src);

/* One sampling tick of one device. Unknown figures are NAN. */
struct store_sample {
	char device[DEVICE_ID_MAX]; /* "cpu:0" */
	int64_t ts_ms;
	uint32_t dt_ms;             /* wall time this sample stands for (the sampling interval) */
	enum store_source source;
	double utilization_ratio;   /* 0..1 */
	double memory_used_bytes;
	double temperature_celsius;
	double power_watts;
};

/* Queues n samples. When the queue is full the oldest samples are dropped and counted. */
void store_add_samples(struct store *st, const struct store_sample *v, size_t n);

/*
 * Records that these devices are present at now_ms: the devices table keeps id, type, model, accelerator type,
 * uuid, the built-in price and first/last seen, so devices that disappear stay in history. Copies what it needs.
 */
void store_devices_seen(struct store *st, const struct device *devs, size_t n, int64_t now_ms);

/* Queues an insert-or-update of the job with this id (a job is usually recorded when it starts and ends). */
void store_job_record(struct store *st, const struct store_job *job);

/*
 * A write's completion: called exactly once, with true once the write is durable (a job record appended to the
 * journal, or the transaction holding the write committed), or with false when it cannot be made durable now (no
 * journal and the database known to fail, the record queue full, the store closing). A write answered false stays
 * queued (unless a full queue refused it) and is committed when the database recovers. Called from whichever
 * thread commits, with no store lock held; it must not call into the store.
 */
typedef void (*store_done_fn)(void *ctx, bool recorded);

/*
 * store_job_record with a completion (done may be NULL). With a journal the record is appended to it and done is
 * called, true, before this returns. Without one, group commit: when no commit is running, the calling thread
 * commits every record waiting, its own included, before returning (done is called before it returns); otherwise
 * the thread committing now takes the record into its next transaction before it ends (or the writer thread does).
 * Records that arrive while a commit runs thus share the next one. Never waits on another thread's commit.
 */
void store_job_record_notify(struct store *st, const struct store_job *job, store_done_fn done, void *ctx);

/* Queues: every job still 'queued' or 'running' (left so by a crash) becomes 'interrupted'. Call once at start. */
void store_jobs_mark_interrupted(struct store *st);

/* A price override. selector is "device", "accelerator_type" or "type"; value the id, type name or cpu|gpu|tpu. */
struct store_price {
	char selector[20];
	char value[40];
	double usd_per_hour;
	double usd_per_hour_spot;   /* NAN unknown */
	char unit[16];
	char note[160];
	int64_t updated_ms;
};

/* Queues replacing every stored override with these n (copied). */
void store_prices_replace(struct store *st, const struct store_price *v, size_t n);

/* store_prices_replace with a completion, as store_job_record_notify (a later replacement confirms earlier ones). */
void store_prices_replace_notify(struct store *st, const struct store_price *v, size_t n, store_done_fn done,
				 void *ctx);

/* A health check as the checks table keeps it (devcheck_store.h makes it from a check's document). */
struct store_check {
	char id[64];
	char device[DEVICE_ID_MAX];
	char level[16];             /* quick | long */
	char state[16];             /* queued | running | succeeded | failed | interrupted */
	char verdict[16];           /* pass | warn | fail once it succeeded or failed; "" none */
	int64_t created_ms;
	int64_t finished_ms;        /* 0 while it runs */
	double gflops;              /* best verified sgemm GFLOP/s; NAN unknown */
	double gbytes_per_s;        /* best verified triad GB/s; NAN unknown */
	int64_t retention_ms;       /* > 0 with finished_ms: checks finished this long before it are deleted with it */
	const char *doc;            /* the check as JSON text, as the API shows it (borrowed) */
};

/*
 * Queues writing check c (copied, doc included), replacing the row with its id; done (may be NULL) is called as
 * store_prices_replace_notify's: group commit, true once the transaction holding it committed, false when the
 * database is known to fail (the check stays queued and is committed once it recovers) or when STORE_BACKLOG_CHECKS
 * other checks wait already (refused, counted in dropped_records). A check written again while it waits replaces
 * the waiting row, whose completion is then answered with the newer one's commit. The commit that holds a check is
 * synced whatever the sync level (store_opts.sync_full): a confirmed check survives a power loss too.
 */
void store_check_put_notify(struct store *st, const struct store_check *c, store_done_fn done, void *ctx);

/*
 * Waits until everything queued so far has been committed and its completions called, at most timeout_ms. Returns
 * true when the queues are empty. Tests and shutdown use it; request handlers never do.
 */
bool store_flush(struct store *st, unsigned timeout_ms);

struct store_stats {
	uint64_t written_samples;   /* samples committed */
	uint64_t written_records;   /* jobs, devices, prices and checks committed */
	uint64_t dropped_samples;   /* pushed out of a full queue */
	uint64_t dropped_records;
	uint64_t backlog;           /* samples and records waiting */
	uint64_t write_errors;      /* failed batches */
	uint64_t reopens;           /* times the writer (re)opened the database */
	uint64_t commits;           /* transactions of queued writes committed */
	uint64_t confirmed;         /* completions called with true */
	uint64_t journaled;         /* of them, job records confirmed by the journal before their commit */
	uint64_t unconfirmed;       /* completions called with false */
	bool open;                  /* the writer holds a migrated connection */
	char last_error[256];       /* "" when none */
};

void store_stats(struct store *st, struct store_stats *out);

/* --- reading (synchronous, on the caller's thread) --- */

/* The retention of each tier, as configured. */
void store_retention(const struct store *st, int64_t *raw_ms, int64_t *minute_ms, int64_t *hour_ms);

/* A device as the devices table remembers it. */
struct store_device_row {
	char id[DEVICE_ID_MAX];
	char type[8];
	char model[128];
	char accelerator_type[32];
	char uuid[96];
	double usd_per_hour;        /* NAN unknown */
	char price_source[160];
	int64_t first_seen_ms;
	int64_t last_seen_ms;
};

/* Every device ever seen, ordered by id; *out is malloc'ed (free() it), possibly NULL when *n is 0. */
enum acceld_err store_devices_list(struct store *st, struct store_device_row **out, size_t *n);

enum store_metric { STORE_UTILIZATION, STORE_MEMORY_USED, STORE_TEMPERATURE, STORE_POWER, STORE_METRIC_COUNT };

/* "utilization_ratio", "memory_used_bytes", "temperature_celsius", "power_watts". */
const char *store_metric_name(enum store_metric m);
/* Parses those names; returns 0, or -1. */
int store_metric_parse(const char *text, enum store_metric *out);

enum store_tier { STORE_RAW, STORE_MINUTE, STORE_HOUR };

/* "raw", "minute", "hour". */
const char *store_tier_name(enum store_tier t);

/*
 * The tier a time series over [start_ms, end_ms) with this step reads: hour when the step is an hour or more or
 * the window starts before the minute retention (counted back from now_ms), minute when the step is a minute or
 * more or the window starts before the raw retention, else raw. Rows not yet rolled up are read from the finer
 * tiers.
 */
enum store_tier store_pick_tier(const struct store *st, int64_t start_ms, int64_t step_ms, int64_t now_ms);

struct store_point {
	int64_t t_ms;               /* the bucket's start */
	double value;               /* average over the bucket (utilization weighted by time) */
	double max;
};

struct store_series {
	enum store_tier tier;
	unsigned sources;           /* bit (1 << enum store_source) for each source seen in raw rows */
	struct store_point *points; /* malloc'ed; buckets without data are left out */
	size_t n;
};

/*
 * The series of one metric of one device over [start_ms, end_ms) in buckets of step_ms on the clock's boundaries
 * of the step (multiples of it since the epoch: a 60 s step starts on the minute), so the same question asked a
 * moment later answers the same point times. The first bucket is the one holding start_ms, whole: it may begin
 * before start_ms. At most 100,000 buckets. ACCELD_ENOTFOUND when the device was never seen, ACCELD_EUNAVAILABLE
 * when the database cannot be read. Free out->points with free().
 */
enum acceld_err store_series(struct store *st, const char *device, enum store_metric metric, int64_t start_ms,
			     int64_t end_ms, int64_t step_ms, int64_t now_ms, struct store_series *out);

/* Time a device was present and busy in one bucket. */
struct store_usage {
	int64_t t_ms;               /* the bucket's start */
	double present_ms;          /* wall time covered by samples */
	double util_ms;             /* the part of it with a known utilization */
	double busy_ms;             /* utilization-weighted time */
};

/*
 * Usage of one device over [start_ms, end_ms) in buckets of bucket_ms aligned to the epoch (UTC hours and days);
 * buckets without data are left out; at most 100,000 buckets. Free *out with free().
 */
enum acceld_err store_usage(struct store *st, const char *device, int64_t start_ms, int64_t end_ms,
			    int64_t bucket_ms, struct store_usage **out, size_t *n);

struct store_jobs_usage {
	unsigned jobs;
	double seconds;             /* sum of the jobs' total time */
	double cost_usd;            /* sum of the costs the jobs recorded */
	unsigned priced;            /* jobs that recorded a cost */
};

/* Jobs on device that finished in [start_ms, end_ms). */
enum acceld_err store_jobs_usage(struct store *st, const char *device, int64_t start_ms, int64_t end_ms,
				 struct store_jobs_usage *out);

/*
 * Measured throughput of kernel on device: floating-point operations per second over the last (up to 20)
 * succeeded jobs with a known flop count and kernel time. *jobs is 0 (and *flops_per_s NAN) when there are none.
 * The answer for a device and kernel is kept for 1 s (it is asked for every placed job, and every commit would make
 * the query read its pages again), so jobs finished in the last second may not count yet.
 */
enum acceld_err store_throughput(struct store *st, const char *device, const char *kernel, double *flops_per_s,
				 unsigned *jobs);

/*
 * Up to cap jobs of the history, newest first (by submission time, then id), of one state (NULL: any), submitted
 * before (before_ms, before_id) when before_ms > 0: GET /run's listing past the jobs still in memory.
 */
enum acceld_err store_jobs_recent(struct store *st, const char *state, int64_t before_ms, const char *before_id,
				  struct store_job *out, size_t cap, size_t *n);

/* Every stored price override; *out is malloc'ed (free() it). */
enum acceld_err store_prices_load(struct store *st, struct store_price **out, size_t *n);

/* A stored job by id; ACCELD_ENOTFOUND when there is none. */
enum acceld_err store_job_get(struct store *st, const char *id, struct store_job *out);

/* Health checks' documents as the reads below return them: n JSON texts, each malloc'ed, in v (malloc'ed). */
struct store_check_docs {
	char **v;
	size_t n;
};

/* Frees every text and the array; docs is empty afterwards. */
void store_check_docs_release(struct store_check_docs *docs);

/* The document of device's check id in *doc (malloc'ed; free() it); ACCELD_ENOTFOUND when there is none. */
enum acceld_err store_check_get(struct store *st, const char *device, const char *id, char **doc);

/*
 * device's checks, newest first (by created_at, then id), at most limit, after the check with id after (NULL or
 * "": from the newest), into *out (empty on failure). ACCELD_ENOTFOUND when after names no check of device.
 */
enum acceld_err store_checks_list(struct store *st, const char *device, const char *after, unsigned limit,
				  struct store_check_docs *out);

/* The last check of every device that ended (succeeded, failed or interrupted), into *out (empty on failure). */
enum acceld_err store_checks_latest(struct store *st, struct store_check_docs *out);

/* Every check left queued or running (by a crash: nothing runs before start-up marks them), into *out. */
enum acceld_err store_checks_unfinished(struct store *st, struct store_check_docs *out);

#endif
