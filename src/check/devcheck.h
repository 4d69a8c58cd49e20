/*
 * devcheck: device health checks. Is a device as fast as it should be, does it compute right, and does it stay fast
 * under load? A check runs the real kernels as jobs through the executor (the device pinned, verify on), one run at
 * a time so that jobs sent meanwhile go first, and judges each test against the device's peak with a rule that names
 * itself. docs/checks.md has the tests, levels, budgets (struct devcheck_settings) and verdict rules.
 *
 * (The module is devcheck, not check, because <check.h> is the unit-test framework's header.)
 *
 * All functions are thread-safe. Callbacks are made without the module's lock held.
 */
#ifndef ACCELD_DEVCHECK_H
#define ACCELD_DEVCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "detect/device.h"
#include "core/err.h"
#include "core/reason.h"

enum devcheck_level { DEVCHECK_QUICK, DEVCHECK_LONG, DEVCHECK_LEVEL_COUNT };

/*
 * A check's states are a job's: queued (accepted, its thread not started yet), running, succeeded (it ran its tests
 * and judged them), failed (an error stopped it: its device gone; it is judged too, fail), interrupted (acceld
 * stopped before it ended: SIGTERM, a crash). Whether the device is healthy is the verdict's to say, not the state's.
 */
enum devcheck_state {
	DEVCHECK_QUEUED,
	DEVCHECK_RUNNING,
	DEVCHECK_SUCCEEDED,
	DEVCHECK_FAILED,
	DEVCHECK_INTERRUPTED,
	DEVCHECK_STATE_COUNT
};

/* Whether a check in state s ended with a verdict (succeeded or failed). */
static inline bool devcheck_state_judged(enum devcheck_state s)
{
	return s == DEVCHECK_SUCCEEDED || s == DEVCHECK_FAILED;
}

enum devcheck_verdict { DEVCHECK_PASS, DEVCHECK_WARN, DEVCHECK_FAIL, DEVCHECK_VERDICT_COUNT };

#define DEVCHECK_ID_MAX 24

/* The thresholds and budgets, from the configuration (devcheck_settings_from_config) or a test. */
struct devcheck_settings {
	uint64_t long_ms;             /* the sustained phase of the long level */
	unsigned warn_percent;
	unsigned fail_percent;
	unsigned throttle_percent;
	unsigned clock_percent;
	uint64_t max_age_ms;          /* a check's figures count for selection this long; 0 never */
	uint64_t interval_ms;         /* periodic quick checks of idle devices; 0 never */
	uint64_t max_elements;        /* the executor's limit of one job's elements */
	uint64_t matrix_budget_ms;     /* device time of the matrix test */
	uint64_t memory_budget_ms;     /* device time of the memory test */
	uint64_t transfer_budget_ms;   /* device time of an accelerator's transfer test */
	uint64_t transfer_bytes;       /* what the transfer test moves each way, at most; 0: 256 MiB */
	/*
	 * The fraction of its PCIe link's theoretical rate, in percent, that a healthy accelerator's transfers are
	 * expected to reach each way (ACCELD_CHECK_TRANSFER_PERCENT); below it the transfer test warns (it never fails).
	 * Uncalibrated: the default 70 % is what copies of pinned memory reach on common hosts (nvbandwidth, DCGM's
	 * PCIe test), not a figure measured through acceld yet; 0 judges nothing.
	 */
	unsigned transfer_percent;
	unsigned max_reps;            /* runs at the final size at most */
	uint64_t matrix_max_n;         /* the largest matrix size tried; 0: 8192 */
};

struct config;

/* The settings of cfg, with the quick level's budgets (matrix 2000 ms, memory 1600 ms, transfer 1500 ms, 5 runs). */
void devcheck_settings_from_config(const struct config *cfg, struct devcheck_settings *out);

struct exec;

/* What a check needs of the rest of acceld. Callbacks are made from a check's own thread (or devcheck_stop's). */
struct devcheck_opts {
	struct exec *exec;                 /* runs the work; borrowed */
	struct devcheck_settings settings;
	/*
	 * The device with this id as detection sees it now (copied into *out), with its telemetry read anew first
	 * when fresh is true; false when no device has that id. Must not call into check.
	 */
	bool (*device)(void *ctx, const char *id, bool fresh, struct device *out);
	void *device_ctx;
	/*
	 * The ids of every device (at most cap), for periodic checks; returns how many. May be NULL when
	 * settings.interval_ms is 0.
	 */
	size_t (*list)(void *ctx, char (*ids)[DEVICE_ID_MAX], size_t cap);
	void *list_ctx;
	/* May be NULL. Keeps a check's document (borrowed) in the history: when it starts and when it ends. */
	void (*record)(void *ctx, const json_t *doc);
	void *record_ctx;
	/* May be NULL. A device's check started or ended (detection republishes the device). */
	void (*changed)(void *ctx, const char *device_id);
	void *changed_ctx;
};

struct devcheck;
struct devcheck_run;

struct devcheck_request {
	enum devcheck_level level;
	uint64_t duration_ms;             /* long level's sustained phase; 0: the setting */
	char backend[16];                 /* "" the device's default backend */
	char trigger[16];                 /* who asked: "api", "cli", "schedule" */
};

typedef void (*devcheck_done_fn)(void *arg, struct devcheck_run *run);

/* "quick", "long"; parse returns false for any other text. */
const char *devcheck_level_name(enum devcheck_level l);
bool devcheck_level_parse(const char *text, enum devcheck_level *out);
const char *devcheck_state_name(enum devcheck_state s);
bool devcheck_state_parse(const char *text, enum devcheck_state *out);
const char *devcheck_verdict_name(enum devcheck_verdict v);
bool devcheck_verdict_parse(const char *text, enum devcheck_verdict *out);

/* Creates the module and, with settings.interval_ms set, its scheduler thread. opts is copied. */
enum acceld_err devcheck_new(const struct devcheck_opts *opts, struct devcheck **out);

/*
 * Stops taking checks and ends the ones running: each is recorded at once as interrupted (reason INTERRUPTED), and
 * its thread ends after the job it waits for. Call before the executor stops. Idempotent; NULL is allowed.
 */
void devcheck_stop(struct devcheck *c);

/* devcheck_stop, then waits for every check thread and frees the module; runs still referenced stay valid. */
void devcheck_free(struct devcheck *c);

/* Fills req with the defaults: quick, the device's default backend, trigger "api". */
void devcheck_request_init(struct devcheck_request *req);

/*
 * Starts a check of device_id on a thread of its own. On success *out (may be NULL) holds a reference for the
 * caller and done(arg, run) is called exactly once when it ends (done may be NULL). Refusals: 404 UNKNOWN_DEVICE
 * (no such device), 422 UNSUPPORTED (no backend runs jobs on it, or the backend asked for does not), 409
 * CHECK_RUNNING (one runs on the device now), 503 SHUTTING_DOWN.
 */
enum acceld_err devcheck_start(struct devcheck *c, const char *device_id, const struct devcheck_request *req,
			    devcheck_done_fn done, void *arg, struct devcheck_run **out, struct refusal *why);

/* A check held in memory (running, or among the recent ones), as a new reference; NULL when none. */
struct devcheck_run *devcheck_get(struct devcheck *c, const char *id);

void devcheck_run_ref(struct devcheck_run *run);
void devcheck_run_unref(struct devcheck_run *run); /* NULL allowed */

const char *devcheck_run_id(const struct devcheck_run *run);
const char *devcheck_run_device(const struct devcheck_run *run);
enum devcheck_state devcheck_run_state(struct devcheck_run *run);

/* The verdict of a check that succeeded or failed; false while it runs or when it was interrupted. */
bool devcheck_run_verdict(struct devcheck_run *run, enum devcheck_verdict *out);

/* Blocks until the check ends (succeeded, failed or interrupted). */
void devcheck_run_wait(struct devcheck_run *run);

/* The check's document (a new object; see api/openapi.yaml, HealthCheck). */
json_t *devcheck_run_json(struct devcheck_run *run);

/*
 * The checks of a device held in memory, newest first, as {checks: [...], next_page_token?}: the listing when no
 * history database is open. after is the page token of the previous page ("" or NULL: the first page); NULL when
 * it names no check of the device held in memory.
 */
json_t *devcheck_list_json(struct devcheck *c, const char *device_id, unsigned page_size, const char *after);

/* The ids of the checks of device_id running now (at most one), for merging with the history's listing. */
bool devcheck_running_id(struct devcheck *c, const char *device_id, char id[DEVCHECK_ID_MAX]);

/*
 * Takes a finished check's document from the history (acceld restarted) as a device's last check, unless a newer
 * one is known. Documents that are not a finished check are ignored.
 */
void devcheck_seed(struct devcheck *c, const json_t *doc);

/* A device's last finished check and the one running now, as metrics and selection use them. */
struct devcheck_summary {
	char device[DEVICE_ID_MAX];
	char id[DEVCHECK_ID_MAX];           /* the last finished check; "" none */
	enum devcheck_level level;
	enum devcheck_state state;          /* DEVCHECK_SUCCEEDED, DEVCHECK_FAILED or DEVCHECK_INTERRUPTED */
	bool has_verdict;
	enum devcheck_verdict verdict;
	double gflops;                   /* best verified matrix GFLOP/s of the last check that measured it; NAN */
	double gbytes_per_s;             /* best verified memory GB/s, likewise; NAN */
	double matrix_ratio;              /* measured / expected of the last check; NAN unknown */
	double memory_ratio;
	int64_t finished_ms;             /* when the last check ended; 0 never */
	int64_t figures_ms;              /* when the figures above were measured; 0 never */
	char running_id[DEVCHECK_ID_MAX];   /* "" when none runs */
	uint64_t finished[DEVCHECK_VERDICT_COUNT]; /* checks finished since start, by verdict */
};

/* Every device's summary, in the order devices were first checked, at most cap; returns how many. */
size_t devcheck_summaries(struct devcheck *c, struct devcheck_summary *out, size_t cap);

/* One device's summary; false when it was never checked. */
bool devcheck_summary_of(struct devcheck *c, const char *device_id, struct devcheck_summary *out);

/*
 * What GET /devices shows of checks, applied to a copy of a device (detection's snapshots): dev->check, and for a
 * CPU whose last verified figures exist, its peak replaced by them (peak.source says so; the estimate is kept
 * for the next check's expected figure). Never calls into detection.
 */
void devcheck_apply(struct devcheck *c, struct device *dev);

struct select_measured;

/*
 * The figures of checks younger than settings.max_age_ms at now_ms, for selection: per device, the matrix test's
 * GFLOP/s and the memory test's GB/s (for every memory-bound kernel), source "check". Device ids are written into
 * ids (cap entries) and out's device_id points there; kernel names are static. Returns how many were written (at
 * most cap).
 */
size_t devcheck_measured(struct devcheck *c, int64_t now_ms, struct select_measured *out, char (*ids)[DEVICE_ID_MAX],
		      size_t cap);

#endif
