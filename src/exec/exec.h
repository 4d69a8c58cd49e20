/*
 * exec: the job executor behind POST /run and `acceld run`: queues, workers, the reaper, placement and the life
 * cycle of a job.
 *
 * One worker thread and one bounded queue per device that a backend serves (backend.h). A job names a kernel
 * (kernel.h), its sizes and its inputs (given inline or generated from a seed), and the devices it may run on in
 * order of preference, as the caller's selection (select.h) ranked them; the executor keeps the fallback chain of
 * its own: the first of those devices it can use now, and on failure the next ones when the job allows it. A job is
 * checked against the limits before anything is allocated (413), refused up front when even an optimistic estimate
 * of its run time exceeds its timeout (422 WOULD_TIME_OUT), queued (429 when the queue is full), run by the
 * device's backend, verified on request against a double-precision reference (jobdata.h), and kept in a bounded ring
 * of recent jobs. Running kernels cannot be interrupted: a job that overruns its deadline is answered as timed out at
 * once and its result is dropped when the kernel ends.
 */
#ifndef ACCELD_EXEC_H
#define ACCELD_EXEC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "exec/backend.h"
#include "detect/device.h"
#include "detect/holders.h"
#include "core/err.h"
#include "exec/kernel.h"
#include "core/reason.h"

/* interrupted: only read back from the history (a job that was running when acceld died) */
enum exec_state {
	EXEC_QUEUED,
	EXEC_RUNNING,
	EXEC_SUCCEEDED,
	EXEC_FAILED,
	EXEC_TIMED_OUT,
	EXEC_CANCELLED,
	EXEC_INTERRUPTED,
	EXEC_STATE_COUNT
};

#define EXEC_CHAIN_MAX 8 /* devices a job may be placed on, in order */

/*
 * Tiny jobs on an idle device whose backend allows it run on the submitting thread, so they do not pay a hand-off
 * to the worker and back (tens of microseconds, more than the kernel): every buffer of such a job holds fewer
 * than 65536 elements, the size below which the native kernels stay on the calling thread.
 */
#define EXEC_INLINE_MAX_BYTES 262144.0
#define EXEC_INLINE_MAX_FLOPS 524288.0

/*
 * Generated inputs of at least this many bytes in all are made on a device with memory of its own (the backend's
 * on_device); smaller ones are made on the host and copied, since below it the link's latency, not its bytes, sets
 * the cost, and a copy costs less than a launch of the generator per input.
 */
#define EXEC_DEVICE_GENERATE_MIN_BYTES 65536.0

/*
 * What the history store keeps of a job that starts or finishes. Every pointer is borrowed for the callback's
 * duration.
 */
struct exec_record {
	const char *id;
	const char *kernel;
	const char *device_id;
	const char *backend;
	const char *state;          /* exec_state_name: "running"; then "succeeded", "failed", "timed_out", ... */
	uint64_t m, n, k;           /* sizes; unused ones 0 */
	double queued_ms, transfer_ms, kernel_ms, total_ms; /* NAN unknown */
	double setup_ms, generate_ms, verify_ms;             /* likewise */
	double transfer_bytes;                               /* NAN unknown */
	double upload_ms, upload_bytes;                      /* host to device; NAN unknown */
	double download_ms, download_bytes;                  /* device to host; NAN unknown */
	const char *transfer_memory;                         /* "pinned", "pageable"; NULL unknown */
	double flops;
	double bytes;
	double cost_usd;            /* NAN when the device's price is unknown */
	int64_t created_ms, started_ms, finished_ms; /* wall clock; 0 = never */
	const char *reason;         /* UPPER_SNAKE reason of an error; NULL when it succeeded */
	const char *error;          /* its detail; NULL when it succeeded */
	const char *trigger;        /* who made the job (exec_request.trigger) */
	const char *check_id;       /* the health check that made it; "" none */
	double peak_gflops;         /* the device's peak figures its throughput is a fraction of; NAN unknown */
	double peak_gbytes_per_s;
	struct exec_job *job;       /* the job (borrowed: exec_job_ref it to keep it past the callback) */
	bool provisional;           /* a timed_out record written while the job's kernel still runs */
};

typedef void (*exec_record_fn)(void *ctx, const struct exec_record *rec);

enum exec_presence {
	EXEC_PRESENT,
	EXEC_GONE,    /* no device has its id any more */
	EXEC_CHANGED, /* its id now names another device (another PCI address or UUID) */
};

/* Every field is required: exec_opts_from_config fills the limits from the configuration. */
struct exec_opts {
	const struct device *devices; /* copied */
	size_t ndevices;
	uint64_t max_elements;        /* elements of all buffers of one job together */
	unsigned queue_depth;         /* queued jobs per device */
	uint64_t default_timeout_ms;
	uint64_t max_timeout_ms;
	unsigned recent;              /* jobs kept for GET /run */
	unsigned cpu_threads;         /* native threads; 0 = the CPU's effective CPUs */
	exec_record_fn on_job_done;   /* may be NULL; called once per finished job, from an executor thread */
	void *on_job_done_ctx;
	/*
	 * May be NULL (a final job is answered at once). A job's final record, and the provisional timed_out record of
	 * a job answered while its kernel still runs: the job reads as running (queued when it never ran) and its
	 * waiter is not answered until exec_record_confirmed(rec->job, rec->provisional, ok) is called, exactly once per
	 * call, from any thread (from inside the callback too). Called without executor locks, after on_job_done.
	 */
	exec_record_fn on_job_record;
	void *on_job_record_ctx;
	/*
	 * May be NULL; called when a job starts to run on a device (again on the next device when it falls back),
	 * before its kernel, from the thread that runs it, with state "running" and no finish time or figures; for a
	 * given job it happens before on_job_done, except after a timeout that answered the job while it still ran.
	 */
	exec_record_fn on_job_start;
	void *on_job_start_ctx;
	/*
	 * May be NULL (every device is always there). Whether a device the executor opened at start is still the one
	 * detection sees: called with the executor's copy while placing a job (so it must not call into the
	 * executor). A device that is gone or changed is skipped; naming it is refused.
	 */
	enum exec_presence (*presence)(void *ctx, const struct device *dev);
	void *presence_ctx;
	/*
	 * May be NULL (no device's memory is known to be held). A device's memory now, for admission: the bytes free by
	 * the latest sample (detection's; 0 unknown) into *available, cheaply; and only when holders is not NULL, the
	 * other processes that hold its memory (at most max; the count returned) and the bytes acceld's own processes
	 * hold into *own, which is a lookup (NVML's running processes). Called with the executor's copy, under its lock.
	 */
	size_t (*memory_now)(void *ctx, const struct device *dev, uint64_t *available, struct holder *holders, size_t max,
			     uint64_t *own);
	void *memory_now_ctx;
	/*
	 * May be NULL (the device's own price at start). The price in force for a device when a job on it ends, USD
	 * per hour (NAN unknown), for the job's cost; called without the executor's lock, with the executor's copy.
	 */
	double (*price)(void *ctx, const struct device *dev);
	void *price_ctx;
	/* the backends, NULL-terminated (tests pass fakes); NULL for backend_builtin */
	const struct backend_ops *const *backends;
	/* starts the executor's threads; NULL for pthread_create (tests make it fail) */
	int (*thread_create)(pthread_t *thread, void *(*fn)(void *), void *arg);
};

/* A request, as POST /run and `acceld run` describe it. Start from exec_request_init. */
struct exec_request {
	enum kernel_id kernel;
	struct kernel_shape shape;
	/*
	 * The devices the job may run on, best first, as selection ranked them (or the one the caller named, with
	 * pinned set). The job goes to the first one the executor can use; with fallback, to the next ones when a
	 * device cannot take it or fails while running it.
	 */
	char devices[EXEC_CHAIN_MAX][DEVICE_ID_MAX];
	unsigned ndevices;
	bool pinned;                /* devices[0] was named by the caller */
	bool fallback;
	char backend[16];           /* "" = each device's default */
	char placement[512];        /* how devices[0] was chosen, for the answer */
	char fallback_from[DEVICE_ID_MAX]; /* selection already fell back from this kind or device ("" no) */
	char fallback_reason[512];
	float alpha, beta, scale;   /* the kernel's fields (kernel_params); scale is the request's "s" */
	enum kernel_precision precision; /* a matrix product's (default highest: float32) */
	float *inputs[KERNEL_MAX_INPUTS]; /* inline inputs (malloc'ed, owned) in kernel order, or NULL */
	bool has_inputs;
	uint64_t seed;
	bool full;                  /* return the whole output: it comes back from the device */
	bool verify;                /* verify the result: by sample (kernel_verify_sample) ... */
	bool verify_full;           /* ... or, with verify, the whole output (kernel_verify; it comes back) */
	uint64_t timeout_ms;        /* 0 = the default */
	char trigger[16];           /* who made the job: "api" (POST /run, the default), "cli" (acceld run), "check" */
	char check_id[24];          /* with trigger "check": the health check's id */
};

struct exec;
struct exec_job;

typedef void (*exec_done_fn)(void *arg, struct exec_job *job);

/* "queued", ... "interrupted"; the state of a name (false when unknown). */
const char *exec_state_name(enum exec_state s);
bool exec_state_parse(const char *name, enum exec_state *out);

/* "queued, running, ...": every state name, for messages. */
const char *exec_state_names_text(void);

struct config;

/* Executor options from the configuration (limits, queue depth, timeouts); devices and callbacks left unset. */
void exec_opts_from_config(const struct config *cfg, struct exec_opts *opts);

/* Fills defaults: alpha 1, beta 0, s 1, no devices, no fallback, seed 1, timeout default, trigger "api". */
void exec_request_init(struct exec_request *req);

/* Appends a device id to the request's devices (ignored beyond EXEC_CHAIN_MAX). */
void exec_request_add_device(struct exec_request *req, const char *id);

/* Frees the inline inputs a request still owns. */
void exec_request_release(struct exec_request *req);

/*
 * Starts the executor: one worker per device that a backend serves. Devices are copied. A worker that cannot be
 * started is logged and leaves its device without a backend (exec_device answers NULL for it). Returns ACCELD_OK
 * and *out, or ACCELD_EINVAL for options out of range, or ACCELD_EUNAVAILABLE (logged) when the thread that
 * enforces deadlines cannot be started.
 */
enum acceld_err exec_new(const struct exec_opts *opts, struct exec **out);

/*
 * Stops accepting jobs, answers queued ones as cancelled, waits for running kernels to end, joins every thread
 * and frees the executor. Jobs still referenced stay valid until unreferenced. NULL is allowed.
 */
void exec_free(struct exec *ex);

/*
 * The executor's copy of the device with this id when it runs jobs on it (a worker is running and a backend
 * serves it), else NULL. The copy is fixed at start; no lock is taken, so detection may ask while it refreshes.
 */
const struct device *exec_device(const struct exec *ex, const char *id);

/* The name of the backend a job on this device would use by default, or NULL when it has none. */
const char *exec_device_backend(const struct exec *ex, const char *id);

/* The backend a job on this device would use when it names backend ("" or NULL: the default), or NULL. */
const struct backend_ops *exec_device_backend_ops(const struct exec *ex, const char *id, const char *backend);

/*
 * Checks and queues a job. The request's inputs are taken over (req->inputs cleared). On success *out holds a
 * reference for the caller and done(arg, job) will be called exactly once when the job reaches a final state, with
 * no executor lock held (done may be NULL): from an executor thread, or, for a tiny job that runs inline (see
 * EXEC_INLINE_MAX_BYTES), from the caller's thread before exec_submit returns. On refusal returns the error and
 * fills why (release why->extra with json_decref).
 */
enum acceld_err exec_submit(struct exec *ex, struct exec_request *req, exec_done_fn done, void *arg,
			    struct exec_job **out, struct refusal *why);

/* The job with this id (a new reference), or NULL when it is not among the recent jobs. */
struct exec_job *exec_get(struct exec *ex, const char *id);

/*
 * Cancels a queued job: ACCELD_OK, ACCELD_ENOTFOUND, or ACCELD_ECONFLICT when it is running or done. On ACCELD_OK
 * done(arg, job) (may be NULL) is called once the cancellation is recorded (see on_job_record), possibly before
 * exec_cancel returns.
 */
enum acceld_err exec_cancel(struct exec *ex, const char *id, exec_done_fn done, void *arg);

/*
 * The completion of on_job_record: the record of job (provisional or final) is durable (recorded true: journaled
 * or committed) or could not be made durable now (false). Answers the job's waiter and shows its final state.
 */
void exec_record_confirmed(struct exec_job *job, bool provisional, bool recorded);

/* Whether the job's final (or provisional timed_out) record was confirmed durable. */
bool exec_job_was_recorded(struct exec_job *job);

/*
 * Recent jobs, newest first, as a new JSON object {jobs: [...], next_page_token?}: each job's summary, its document
 * without the output (result.output, which return=full keeps for GET /run/{id}). state < 0 lists every state.
 * after is the page token of the previous page (0 = first page).
 */
json_t *exec_list_json(struct exec *ex, int state, unsigned page_size, uint64_t after);

/*
 * The oldest job the executor still holds (its creation time and id), so that a listing can go on in the history
 * before it; false when it holds none.
 */
bool exec_oldest_job(struct exec *ex, int64_t *created_ms, char *id, size_t idsz);

void exec_job_ref(struct exec_job *job);
void exec_job_unref(struct exec_job *job); /* NULL allowed */

enum exec_state exec_job_state(struct exec_job *job);
const char *exec_job_id(const struct exec_job *job);

/* Why a job did not succeed (the reason gives the status of its answer), and its message in detail. */
enum reason exec_job_error(struct exec_job *job, char *detail, size_t detailsz);

/*
 * The job as the API shows it (a new object, see jobdoc.h, plus `recorded`); the output array only when the request
 * asked for it. A final job whose record is not confirmed yet shows as running (queued when it never ran).
 */
json_t *exec_job_json(struct exec_job *job);

/* Blocks until the job is final and its records confirmed (for the command line). */
void exec_job_wait(struct exec_job *job);

/*
 * Stops taking jobs, cancels the queued ones (their waiters get 503) and waits up to wait_ms for running kernels,
 * which cannot be interrupted. Returns true when none is running any more. exec_free does this without a limit.
 */
bool exec_stop(struct exec *ex, uint64_t wait_ms);

/* Jobs waiting and running on a device now; ACCELD_ENOTFOUND for an unknown id. */
enum acceld_err exec_device_load(struct exec *ex, const char *device_id, unsigned *queued, unsigned *running);

/*
 * The fraction (0..1) of time the device spent running jobs since the previous call (the first call covers
 * window_ms and only sees a job running now), or NAN for an unknown device or one with no backend. Meant for one
 * caller, the sampler: each call moves the window on.
 */
double exec_busy_fraction(struct exec *ex, const char *device_id, uint64_t window_ms);

#endif
