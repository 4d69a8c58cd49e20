/*
 * exec_int: what the parts of the executor share; nothing outside src/exec/ includes it (exec.h is the interface).
 *
 * Each part calls only those below it:
 *   exec.c         the executor's life cycle (start, stop, free), its options, what it says of its devices
 *   exec_admit.c   admission: placement, limits and estimates, submit
 *   exec_worker.c  the workers (running a job, falling back to the next device), their backends, the reaper
 *   exec_job.c     jobs (references, states and their names, records and their confirmation), requests, the ring
 *                  of recent jobs, the queues, a job as the API shows it (rendered by jobdoc.c)
 *
 * One mutex (ex->mu) guards every queue, job state and the ring of recent jobs. A worker owns the job it runs:
 * the buffers and results of a running job are touched only by its worker until the job is finalised under the
 * mutex. Done callbacks and history records are always made with the mutex released.
 */
#ifndef ACCELD_EXEC_INT_H
#define ACCELD_EXEC_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/pool.h"
#include "exec/exec.h"
#include "exec/jobdata.h"

#define EXEC_BACKENDS_MAX 8 /* backends serving one device */

struct exec_job {
	atomic_int refs;
	struct exec *ex;
	char id[24];
	uint64_t seq;
	struct exec_request req;           /* the inputs are owned until the run */
	enum exec_state state;
	size_t chain[EXEC_CHAIN_MAX];      /* worker indices */
	const struct backend_ops *chain_ops[EXEC_CHAIN_MAX];
	unsigned nchain;
	unsigned chain_pos;                /* where in the chain it runs now: chain[chain_pos] */
	bool fell_back;
	char fallback_from[DEVICE_ID_MAX];
	char fallback_reason[512];
	char placement[512];
	char device_id[DEVICE_ID_MAX];
	const struct backend_ops *ops;     /* the backend of the device it is on */
	int64_t created_ms, started_ms, finished_ms;
	uint64_t created_ns, started_ns, finished_ns, deadline_ns;
	uint64_t timeout_ms;
	double prepare_ms, transfer_ms, kernel_ms;
	double generate_ms, verify_ms;     /* making the inputs (host or device), verifying; NAN unknown */
	uint64_t transfer_bytes;           /* bytes the transfers moved, both ways */
	double upload_ms, download_ms;     /* the transfers by direction: host to device, device to host */
	uint64_t upload_bytes, download_bytes;
	enum backend_memory transfer_memory; /* the host memory they used */
	double compile_ms;                 /* NAN: the backend builds no programs */
	int cached;                        /* the program came from the backend's cache (1), was built (0); -1 */
	bool kernel_device_clock;          /* kernel_ms from the device's clock (backend_timing) */
	enum kernel_precision precision;   /* what ran */
	double flops, bytes;
	double usd_per_hour;
	bool ran;                          /* the kernel completed */
	float *output;                     /* kept when req.full */
	size_t out_len;
	double value;                      /* a scalar output */
	struct jobdata_summary summary;
	struct kernel_verification verification;
	bool verify_done;
	enum reason reason;                /* why it did not succeed; REASON_COUNT while it has not failed */
	char error[640];
	bool running_timed_out;            /* answered as timed out while its kernel kept running */
	bool done_called;
	bool final_sent;                   /* the final record went to on_job_record */
	bool provisional_sent;             /* the provisional timed_out record did */
	bool confirmed;                    /* a record of its final state was answered: the state is shown */
	bool final_confirmed;              /* the final record was answered */
	bool recorded_ok;                  /* and durable */
	exec_done_fn done;
	void *done_arg;
	exec_done_fn cancel_done;          /* DELETE /run/{id}'s answer, once the cancellation is recorded */
	void *cancel_arg;
	/* while its record waits for confirmation: in ex's list of them, oldest first */
	bool awaiting;
	uint64_t await_due_ns;
	struct exec_job *await_prev, *await_next;
};

/* One backend of a worker's device. */
struct worker_backend {
	const struct backend_ops *ops;
	void *state;
	bool opened;
	bool ready;                        /* opened by the worker: may serve tiny jobs inline */
	atomic_bool failed;                /* it failed to open: the device's next backend is its default now */
	enum acceld_err open_err;
	char open_msg[512];
};

struct worker {
	struct exec *ex;
	size_t index;
	struct device dev;
	pthread_t thread;
	bool started;                      /* its thread runs: the device takes jobs */
	pthread_cond_t cv;
	struct exec_job **queue;
	unsigned qlen;
	struct exec_job *running;
	unsigned inline_running;           /* tiny jobs running on submitting threads now */
	struct worker_backend be[EXEC_BACKENDS_MAX];
	unsigned nbe;
	uint64_t busy_ns;                  /* time spent running jobs, finished ones */
	uint64_t run_start_ns;             /* when the running job started */
	uint64_t seen_busy_ns;             /* busy time at the last exec_busy_fraction call */
	uint64_t seen_at_ns;
	double best_gflops[KERNEL_COUNT];
	double best_gbps[KERNEL_COUNT];
	unsigned threads;
};

struct exec {
	struct exec_opts opts;
	const struct backend_ops *const *backends;
	struct device *devices;
	size_t ndevices;
	struct worker *workers;  /* one per device; nbe 0 for devices that cannot run jobs */
	pthread_mutex_t mu;
	pthread_cond_t final_cv; /* a job reached a final state */
	pthread_cond_t reaper_cv;
	pthread_t reaper;
	bool reaper_started;
	bool stop;
	struct pool *host;       /* generation, summaries and verification */
	struct pool *serial;     /* the same for jobs run inline: one thread, never shared, never waits */
	struct exec_job **ring;
	unsigned ring_cap;
	unsigned ring_len;
	unsigned ring_head;      /* index of the next slot to write */
	uint64_t next_seq;
	uint64_t salt;
	unsigned unconfirmed;    /* records handed to on_job_record and not answered yet */
	struct exec_job *await_head, *await_tail; /* jobs not answered yet for want of their record's confirmation */
};

/* Whether a job in state s has ended (neither queued nor running). */
static inline bool exec_state_final(enum exec_state s)
{
	return s != EXEC_QUEUED && s != EXEC_RUNNING;
}

/* Milliseconds from monotonic time a to b; 0 when b is not after a. */
static inline double exec_ms_between(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1e6 : 0.0;
}

/* --- jobs (exec_job.c) --- */

/* The state the API shows: a final state only once a record of it was answered (see on_job_record); ex->mu held. */
enum exec_state exec_job_shown_state(const struct exec_job *job);

/* What the job's run cost at its device's price, USD; NAN when the price or a time is unknown. */
double exec_job_cost(const struct exec_job *job);

/* Marks a job final under ex->mu; reason REASON_COUNT for a success. */
void exec_job_set_final(struct exec_job *job, enum exec_state s, enum reason reason, const char *detail);

/* Calls done once; call without ex->mu. */
void exec_job_notify(struct exec *ex, struct exec_job *job);

/* What the history keeps of job as it stands; ex->mu held. */
struct exec_record exec_record_of(const struct exec_job *job);

/*
 * The peak figures the job's throughput is a fraction of: those of the executor's copy of its device, fixed at
 * start (GFLOP/s, GB/s; NAN unknown). The job's record keeps them, so a job read back later shows the fraction it
 * had, whatever peak the device has by then.
 */
void exec_job_peak(const struct exec_job *job, double *gflops, double *gbytes_per_s);

/* Takes job out of the list of jobs waiting for their record's confirmation; ex->mu held. */
void exec_await_remove(struct exec *ex, struct exec_job *job);

/*
 * A final job: record it (provisionally while its kernel still runs); the waiter is answered once the record is
 * confirmed. Call without ex->mu.
 */
void exec_job_finished(struct exec *ex, struct exec_job *job, bool kernel_still_running);

/* Adds job to the ring of recent jobs with a reference of its own, dropping the oldest when full; ex->mu held. */
void exec_ring_add(struct exec *ex, struct exec_job *job);

/* The i-th newest job in the ring (0 = newest); ex->mu held. */
struct exec_job *exec_ring_at(const struct exec *ex, unsigned i);

/*
 * Queues job on w, which holds the reference the caller took for the queue, and wakes w and the reaper; false when
 * the queue is full. ex->mu held.
 */
bool exec_queue_push(struct exec *ex, struct worker *w, struct exec_job *job);

/* Takes the i-th job out of w's queue; its queue reference goes to the caller. ex->mu held. */
void exec_queue_remove(struct worker *w, unsigned i);

/* --- devices and their backends (exec_worker.c) --- */

/* The index of the device with this id, or ex->ndevices when the executor has none. */
size_t exec_device_index(const struct exec *ex, const char *id);

/* The index of ops among the worker's backends, or -1. */
int exec_worker_backend_index(const struct worker *w, const struct backend_ops *ops);

/* The index in be of the worker's default backend: the lowest rank of those that have not failed to open; -1. */
int exec_worker_default_index(const struct worker *w);

/* The default backend of a worker whose thread runs, or NULL. */
const struct backend_ops *exec_worker_default(const struct worker *w);

/* --- workers and the reaper (exec_worker.c) --- */

/*
 * Runs a job the worker took from its queue, or (on_caller) one the submitting thread runs inline on its own
 * thread, and finishes it.
 * Call without ex->mu; the job's queue or inline reference is the worker's.
 */
void exec_worker_step(struct worker *w, struct exec_job *job, bool on_caller);

/* A worker's thread (arg: its struct worker): opens the device's default backend, then runs its queue until stop. */
void *exec_worker_main(void *arg);

/* The reaper's thread (arg: the executor): ends jobs past their deadline and answers records that stall. */
void *exec_reaper_main(void *arg);

#endif
