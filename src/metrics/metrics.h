/*
 * metrics: Prometheus counters, gauges and histograms kept in memory, and their text exposition (format 0.0.4).
 *
 * Modules record what happens (a request answered, a job finished, a store batch written) with metrics_* calls
 * that take one mutex for a moment and never do I/O. A scrape renders those values together with a device
 * snapshot it is handed, so it never waits on a device or the database. Every family has a fixed label set and
 * holds at most METRICS_MAX_SERIES label combinations; observations for further combinations are dropped and
 * counted in acceld_metrics_dropped_observations_total. Label values are copied (cut at METRICS_LABEL_MAX - 1
 * bytes) and escaped when rendered; invalid UTF-8 is rendered as U+FFFD.
 *
 * Names: prefix acceld_, base units (_bytes, _seconds, _celsius, _watts, _ratio, _joules), counters end in _total.
 * Unknown device values are left out, never written as a sentinel.
 */
#ifndef ACCELD_METRICS_H
#define ACCELD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/conns.h"
#include "core/err.h"

#define METRICS_MAX_SERIES 512 /* label combinations per family */
#define METRICS_LABEL_MAX 96   /* bytes of one stored label value, NUL included */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics;
struct detect_snapshot;

/* A new, empty registry; never NULL (allocation failure aborts, see mem.h). Free with metrics_free. */
struct metrics *metrics_new(void);

/* Frees the registry; NULL is allowed. No metrics_* call may run concurrently or afterwards. */
void metrics_free(struct metrics *m);

/*
 * One HTTP request answered: handler is the route pattern ("/devices/{id}") or "unmatched", method the method
 * name ("GET"; anything else should be "OTHER"), code the status sent, seconds from the first byte read to the
 * last byte queued. Counts acceld_http_requests_total{handler,method,code} and observes
 * acceld_http_request_duration_seconds{handler}. Strings are copied. m NULL is a no-op.
 */
void metrics_http_observe(struct metrics *m, const char *handler, const char *method, int code, double seconds);

/* The same with the signature of http_observe_fn (http.h): ctx is the struct metrics; route NULL = "unmatched". */
void metrics_http_hook(void *ctx, const char *method, const char *route, int status, double seconds);

/*
 * One job finished: kernel (its name in the kernel table), device id ("cpu:0"), outcome (the job's final state:
 * "succeeded", "failed", "timed_out", "cancelled"; "rejected" for a refused submission), seconds from submission to completion. Counts
 * acceld_jobs_total{kernel,device,outcome} and observes acceld_job_duration_seconds{kernel,device}. Strings are
 * copied. m NULL is a no-op.
 */
void metrics_job_observe(struct metrics *m, const char *kernel, const char *device, const char *outcome,
			 double seconds);

/* The executor's queue for a device: jobs waiting (acceld_job_queue_depth) and running (acceld_jobs_running). */
void metrics_set_queue_depth(struct metrics *m, const char *device, unsigned queued, unsigned running);

/* The database writer's state, as the store last saw it. The counts are totals since start (the store keeps them). */
struct metrics_store_stats {
	bool up;                  /* the last write or health check succeeded */
	uint64_t write_backlog;   /* rows waiting to be written */
	uint64_t rows_written;    /* acceld_store_rows_written_total */
	uint64_t samples_dropped; /* acceld_store_dropped_samples_total: pushed out of a full backlog */
	uint64_t records_dropped; /* acceld_store_dropped_records_total: job and price records, the same way */
	uint64_t write_errors;    /* acceld_store_write_errors_total: failed write batches */
	uint64_t commits;         /* acceld_store_commits_total: transactions of queued writes committed */
	uint64_t confirmed;       /* acceld_store_confirmed_writes_total: writes answered once durable */
	uint64_t journaled;       /* acceld_store_journaled_writes_total: of them, confirmed by the journal */
	uint64_t unconfirmed;     /* acceld_store_unconfirmed_writes_total: writes answered before a commit */
};

/*
 * Sets the store series: acceld_store_up (together with metrics_view.store_open), the backlog and the counters.
 * Until it is first called, acceld_store_up follows store_open alone and the rest are 0.
 */
void metrics_set_store_stats(struct metrics *m, const struct metrics_store_stats *st);

/* One HTTP listener's connection table, for the acceld_http_connections* families (label listener). */
struct metrics_listener {
	const char *name;                      /* "main", "health" */
	struct conns_stats conns;
};

/* The host as the price book sees it (cloud.h, cost.h); strings borrowed, "" unknown. */
struct metrics_host {
	const char *cloud;            /* "gce", "aws", "azure", "none" */
	const char *state;            /* "known", "failed", "not_a_cloud", "off", "pending" */
	const char *instance_type;
	const char *region;
	const char *zone;
	const char *billing;          /* "spot", "on_demand"; "" when the host is no known cloud VM */
	double usd_per_hour;          /* the applied host price; NAN unknown (the sample is left out) */
};

/* A device's health checks (devcheck.h), for the acceld_device_check* families. */
struct metrics_check {
	const char *device;                    /* "cpu:0" */
	const char *verdict;                   /* the last check's "pass", "warn", "fail"; NULL: none (interrupted) */
	double gflops;                         /* last measured matrix GFLOP/s; NAN unknown */
	double gbytes_per_s;                   /* last measured memory GB/s; NAN unknown */
	double matrix_ratio;                    /* measured / expected of the last check; NAN unknown */
	double memory_ratio;
	int64_t finished_ms;                   /* when the last check ended; 0 never */
	bool running;                          /* a check runs now */
	uint64_t finished[3];                  /* checks finished since start: pass, warn, fail */
};

/* What a backend's worker processes did since start (worker_proxy.h), for acceld_worker_*_total{backend}. */
#define METRICS_WORKER_CAUSES 8
struct metrics_worker {
	const char *backend;                   /* "pjrt" */
	uint64_t starts;
	const char *causes[METRICS_WORKER_CAUSES]; /* why workers ended ("idle", "crash", ...), NULL-padded */
	uint64_t exits[METRICS_WORKER_CAUSES];
};

/* What a scrape shows besides the registry; every member is read, none is kept. */
struct metrics_view {
	const struct detect_snapshot *devices; /* borrowed; NULL while there is no registry yet */
	const double *device_prices;           /* applied USD/h of each snapshot device (NAN unknown); may be NULL */
	const struct metrics_host *host;       /* NULL while the price book is not running */
	bool store_open;                       /* a database connection exists */
	int64_t started_at_ms;                 /* process start, wall clock; 0 leaves the series out */
	unsigned http_inflight;                /* requests received and not yet answered */
	const struct metrics_listener *listeners; /* borrowed, nlisteners of them; NULL leaves their series out */
	size_t nlisteners;
	const struct metrics_check *checks;    /* borrowed, nchecks of them (devices ever checked) */
	const struct metrics_worker *workers;  /* borrowed, nworkers of them (backends that run in workers) */
	size_t nworkers;
	size_t nchecks;
};

/*
 * Renders every family in the Prometheus text format 0.0.4. On success *out is a new NUL-terminated text the
 * caller frees with free(), *len its length. Process figures are read from /proc/self. Returns ACCELD_OK, or
 * ACCELD_ENOMEM when the text would pass its cap (64 MiB), leaving *out untouched.
 */
enum acceld_err metrics_render(struct metrics *m, const struct metrics_view *view, char **out, size_t *len);

#endif
