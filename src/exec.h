/*
 * exec: the job executor behind POST /run and `acceld run`.
 *
 * One worker thread and one bounded queue per executable device. A job names a kernel (saxpy, triad, dot, sgemm,
 * softmax), its sizes and its inputs (given inline or generated from a seed); it is checked against the limits
 * before anything is allocated (413), refused up front when even an optimistic estimate of its run time exceeds
 * its timeout (422 WOULD_TIME_OUT), queued on the first device of its fallback chain (429 when the queue is full),
 * run by the device's backend (native CPU code, or OpenCL), verified on request against a double-precision
 * reference, and kept in a bounded ring of recent jobs. Running kernels cannot be interrupted: a job that overruns
 * its deadline is answered as timed out at once and its result is dropped when the kernel ends.
 *
 * Backends are ops structs (exec_backend_ops) so tests can register fakes.
 */
#ifndef ACCELD_EXEC_H
#define ACCELD_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "device.h"
#include "err.h"

enum exec_kernel { EXEC_SAXPY, EXEC_TRIAD, EXEC_DOT, EXEC_SGEMM, EXEC_SOFTMAX, EXEC_KERNEL_COUNT };

enum exec_state { EXEC_QUEUED, EXEC_RUNNING, EXEC_SUCCEEDED, EXEC_FAILED, EXEC_TIMED_OUT, EXEC_CANCELLED };

enum exec_backend_kind { EXEC_BACKEND_NATIVE, EXEC_BACKEND_OPENCL, EXEC_BACKEND_COUNT };

#define EXEC_MAX_INPUTS 3

/*
 * One kernel run as a backend sees it. Inputs are read-only; the output is written out of place.
 *   saxpy:   out[n] = alpha * in[0] + in[1]
 *   triad:   out[n] = in[0] + s * in[1]                      (STREAM's a = b + s*c)
 *   dot:     dot = sum in[0] * in[1]                          (out unused)
 *   sgemm:   out[m x n] = alpha * in[0][m x k] * in[1][k x n] + beta * in[2][m x n]; in[2] NULL means zeros;
 *            row-major
 *   softmax: out[m x n] = row-wise softmax of in[0][m x n]
 */
struct exec_work {
	enum exec_kernel kernel;
	size_t m, n, k;
	float alpha, beta, s;
	const float *in[EXEC_MAX_INPUTS];
	float *out;
	double dot;
};

/* What a backend measured. */
struct exec_backend_timing {
	double transfer_ms; /* host <-> device copies; 0 for native */
	double kernel_ms;
};

struct exec_backend_ops {
	const char *name; /* "native", "opencl" */
	enum exec_backend_kind kind;
	/*
	 * Prepares the backend for dev (threads, OpenCL context, programs); runs on the device's worker thread.
	 * *state is the backend's own. Returns ACCELD_OK, or an error with a message in err.
	 */
	enum acceld_err (*open)(const struct device *dev, unsigned threads, void **state, char *err, size_t errsz);
	/* Runs one kernel; ACCELD_EDEVICE (or ACCELD_ENOMEM) when the device failed, with a message in err. */
	enum acceld_err (*run)(void *state, struct exec_work *w, struct exec_backend_timing *t, char *err,
			       size_t errsz);
	void (*close)(void *state);
	/*
	 * true: run may also be called from the thread that submits a tiny job (at most EXEC_INLINE_MAX_BYTES and
	 * EXEC_INLINE_MAX_FLOPS) while the device has nothing queued or running, concurrently with later calls from the
	 * worker, and such a call never waits for another one. The native backend qualifies (tiny jobs run serially
	 * on the calling thread); a backend with one queue (OpenCL) does not.
	 */
	bool inline_tiny;
};

/*
 * Tiny jobs on an idle device whose backend allows it run on the submitting thread, so they do not pay a hand-off
 * to the worker and back (tens of microseconds, more than the kernel): every buffer of such a job holds fewer
 * than 65536 elements, the size below which the native kernels stay on the calling thread.
 */
#define EXEC_INLINE_MAX_BYTES 262144.0
#define EXEC_INLINE_MAX_FLOPS 524288.0

extern const struct exec_backend_ops exec_native_ops;
extern const struct exec_backend_ops exec_opencl_ops;

/*
 * What the history store keeps of a job that starts or finishes. Every pointer is borrowed for the callback's
 * duration.
 */
struct exec_job_record {
	const char *id;
	const char *kernel;
	const char *device_id;
	const char *backend;
	const char *state;          /* "running"; then "succeeded", "failed", "timed_out", "cancelled" */
	uint64_t m, n, k;           /* sizes; unused ones 0 */
	double queued_ms, transfer_ms, kernel_ms, total_ms;
	double flops;
	double bytes;
	double cost_usd;            /* NAN when the device's price is unknown */
	int64_t created_ms, started_ms, finished_ms; /* wall clock; 0 = never */
	const char *error;          /* NULL when it succeeded */
};

typedef void (*exec_record_fn)(void *ctx, const struct exec_job_record *rec);

enum exec_presence {
	EXEC_PRESENT,
	EXEC_GONE,    /* no device has its id any more */
	EXEC_CHANGED, /* its id now names another device (another PCI address or UUID) */
};

struct exec_opts {
	const struct device *devices; /* copied */
	size_t ndevices;
	uint64_t max_elements;        /* elements of all buffers of one job together */
	unsigned queue_depth;         /* queued jobs per device */
	uint64_t default_timeout_ms;
	uint64_t max_timeout_ms;
	unsigned recent;              /* jobs kept for GET /run; 0 = 256 */
	unsigned cpu_threads;         /* native threads; 0 = the CPU's effective CPUs */
	exec_record_fn on_job_done;   /* may be NULL; called once per finished job, from an executor thread */
	void *on_job_done_ctx;
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
	/* backends to use instead of the built-in ones (tests); NULL for exec_native_ops and exec_opencl_ops */
	const struct exec_backend_ops *const *backends;
	size_t nbackends;
};

/* A request, as POST /run and `acceld run` describe it. Start from exec_request_init. */
struct exec_request {
	enum exec_kernel kernel;
	char device[16];            /* "" = choose by prefer */
	int prefer;                 /* enum prefer (config.h) */
	int fallback;               /* -1 default (yes with prefer, no with a device), 0 no, 1 yes */
	int backend;                /* -1 any, else enum exec_backend_kind */
	float alpha, beta, s;
	uint64_t m, n, k;           /* saxpy/triad/dot: n; sgemm: m, n, k; softmax: m rows, n columns */
	float *inputs[EXEC_MAX_INPUTS]; /* inline inputs (malloc'ed, owned) in kernel order, or NULL */
	bool has_inputs;
	uint64_t seed;
	bool full;                  /* return the whole output */
	bool verify;
	uint64_t timeout_ms;        /* 0 = the default */
};

/* Why a submission was refused: err maps to the status; reason and detail go into the problem answer. */
struct exec_refusal {
	enum acceld_err err;
	char reason[48];
	char detail[512];
	json_t *extra;              /* members to add to the problem (owned; may be NULL) */
};

struct exec;
struct exec_job;

typedef void (*exec_done_fn)(void *arg, struct exec_job *job);

/* "saxpy", ...; the kernel for a name (returns -1 when unknown). */
const char *exec_kernel_name(enum exec_kernel k);
int exec_kernel_parse(const char *name, enum exec_kernel *out);
const char *exec_state_name(enum exec_state s);
int exec_state_parse(const char *name, enum exec_state *out);
const char *exec_backend_name(enum exec_backend_kind b);

/* Names of the inputs a kernel takes, in order (NULL-terminated); sgemm's third ("c") is optional. */
const char *const *exec_kernel_inputs(enum exec_kernel k);

/* Elements of input i of the request's kernel and sizes (0 when it has no such input). */
uint64_t exec_input_len(enum exec_kernel k, uint64_t m, uint64_t n, uint64_t kk, unsigned i);

/* Elements of the output (1 for dot). */
uint64_t exec_output_len(enum exec_kernel k, uint64_t m, uint64_t n, uint64_t kk);

/* Floating-point operations and bytes moved (the minimum traffic) of a kernel at these sizes. */
double exec_flops(enum exec_kernel k, uint64_t m, uint64_t n, uint64_t kk);
double exec_bytes(enum exec_kernel k, uint64_t m, uint64_t n, uint64_t kk);

/*
 * Process-wide preparation, before any OpenCL call and before other threads start: sets POCL_CACHE_DIR to
 * pocl_cache_dir (created; NULL or "" leaves PoCL's default) unless the environment names one, and loads OpenBLAS
 * with the right core type (see exec_cpu.h).
 */
void exec_prepare_process(const char *pocl_cache_dir);

struct config;

/* Executor options from the configuration (limits, queue depth, timeouts); devices and callbacks left unset. */
void exec_opts_from_config(const struct config *cfg, struct exec_opts *opts);

/* The PoCL cache folder: cfg->pocl_cache_dir, else "pocl-cache" beside the database, else "" (PoCL's default). */
void exec_pocl_cache_dir(const struct config *cfg, char *out, size_t outsz);

/* Fills defaults: alpha 1, beta 0, s 1, prefer auto, fallback -1, backend -1, seed 1, timeout default. */
void exec_request_init(struct exec_request *req);

/* Frees the inline inputs a request still owns. */
void exec_request_release(struct exec_request *req);

/*
 * Starts the executor: one worker per executable device (CPU natively, GPUs through OpenCL). Devices are copied.
 * Returns ACCELD_OK and *out, or an error.
 */
enum acceld_err exec_new(const struct exec_opts *opts, struct exec **out);

/*
 * Stops accepting jobs, answers queued ones as cancelled, waits for running kernels to end, joins every thread
 * and frees the executor. Jobs still referenced stay valid until unreferenced. NULL is allowed.
 */
void exec_free(struct exec *ex);

/*
 * Checks and queues a job. The request's inputs are taken over (req->inputs cleared). On success *out holds a
 * reference for the caller and done(arg, job) will be called exactly once when the job reaches a final state, with
 * no executor lock held (done may be NULL): from an executor thread, or, for a tiny job that runs inline (see
 * EXEC_INLINE_MAX_BYTES), from the caller's thread before exec_submit returns. On refusal returns the error and
 * fills why (release why->extra with json_decref).
 */
enum acceld_err exec_submit(struct exec *ex, struct exec_request *req, exec_done_fn done, void *arg,
			    struct exec_job **out, struct exec_refusal *why);

/* The job with this id (a new reference), or NULL when it is not among the recent jobs. */
struct exec_job *exec_get(struct exec *ex, const char *id);

/* Cancels a queued job: ACCELD_OK, ACCELD_ENOTFOUND, or ACCELD_ECONFLICT when it is running or done. */
enum acceld_err exec_cancel(struct exec *ex, const char *id);

/*
 * Recent jobs, newest first, as a new JSON object {jobs: [...], next_page_token?}. state < 0 lists every state.
 * after is the page token of the previous page (0 = first page).
 */
json_t *exec_list_json(struct exec *ex, int state, unsigned page_size, uint64_t after);

void exec_job_ref(struct exec_job *job);
void exec_job_unref(struct exec_job *job); /* NULL allowed */

enum exec_state exec_job_state(struct exec_job *job);
const char *exec_job_id(const struct exec_job *job);

/* The error of a failed job (the acceld_err that maps to its status) and its message; ACCELD_OK otherwise. */
enum acceld_err exec_job_error(struct exec_job *job, char *detail, size_t detailsz);

/* The job as the API shows it (a new object); the output array only when the request asked for it. */
json_t *exec_job_json(struct exec_job *job);

/* Blocks until the job is final (for the command line). */
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
