/*
 * exec: job queue, per-device workers, limits, timeouts and fallback.
 *
 * One mutex (ex->mu) guards every queue, job state and the ring of recent jobs. A worker owns the job it runs:
 * the buffers and results of a running job are touched only by its worker until the job is finalised under the
 * mutex. Done callbacks and history records are always made with the mutex released.
 *
 * Verification tolerances (u = 2^-24, the float32 unit roundoff; the reference is computed in double):
 *   saxpy, triad:  |got - ref| <= 1e-6 * (|first term| + |second term|)
 *   dot, sgemm:    |got - ref| <= (2e-6 + min(k, 65536) * u) * sum |terms|     (k = n for dot; the classic
 *                  worst-case bound of float summation, k * u, plus a little for the scaling)
 *   softmax:       |got - ref| <= (2e-6 + min(cols, 65536) * u) * ref + 1e-30
 */
#include "exec.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "clock.h"
#include "config.h"
#include "exec_cpu.h"
#include "exec_opencl.h"
#include "log.h"
#include "mem.h"

#define CHAIN_MAX 8
#define FULL_MAX_ELEMENTS 262144u /* largest output returned whole */
#define SUMMARY_FIRST 8
#define VERIFY_SAMPLES 1024
#define U32 (1.0 / 16777216.0)
#define MEASURE_MIN_MS 10.0 /* jobs shorter than this do not teach the estimator a rate */

struct worker;
struct exec_job;

static void worker_step(struct worker *w, struct exec_job *job, bool here);

struct exec_job {
	atomic_int refs;
	struct exec *ex;
	char id[24];
	uint64_t seq;
	struct exec_request req;           /* the inputs are owned until the run */
	enum exec_state state;
	size_t chain[CHAIN_MAX];           /* worker indices */
	enum exec_backend_kind chain_backend[CHAIN_MAX];
	unsigned nchain;
	unsigned at;                       /* position in the chain */
	bool may_fall_back;
	bool fell_back;
	char fallback_from[16];
	char fallback_reason[384];
	char placement[192];
	char device_id[16];
	enum exec_backend_kind backend;
	int64_t created_ms, started_ms, finished_ms;
	uint64_t created_ns, started_ns, finished_ns, deadline_ns;
	uint64_t timeout_ms;
	double prepare_ms, transfer_ms, kernel_ms;
	double flops, bytes;
	double peak_gflops, peak_gbps, usd_per_hour;
	bool ran;                          /* the kernel completed */
	float *output;                     /* kept when req.full */
	size_t out_len;
	double dot;
	double checksum, vmin, vmax, mean;
	float first[SUMMARY_FIRST];
	size_t nfirst;
	bool verify_done;
	bool verified;
	double max_abs_err, worst_ratio;
	size_t checked;
	char verify_method[96];
	enum acceld_err err;
	char reason[48];
	char error[640];
	bool running_timed_out;            /* answered as timed out while its kernel kept running */
	bool done_called;
	bool recorded;
	exec_done_fn done;
	void *done_arg;
};

struct worker {
	struct exec *ex;
	size_t index;
	struct device dev;
	pthread_t thread;
	bool started;
	pthread_cond_t cv;
	struct exec_job **queue;
	unsigned qlen;
	struct exec_job *running;
	unsigned inline_running;           /* tiny jobs running on submitting threads now */
	bool ready[EXEC_BACKEND_COUNT];    /* opened by the worker: may serve tiny jobs inline */
	uint64_t busy_ns;                  /* time spent running jobs, finished ones */
	uint64_t run_start_ns;             /* when the running job started */
	uint64_t seen_busy_ns;             /* busy time at the last exec_busy_fraction call */
	uint64_t seen_at_ns;
	const struct exec_backend_ops *ops[EXEC_BACKEND_COUNT];
	void *state[EXEC_BACKEND_COUNT];
	bool opened[EXEC_BACKEND_COUNT];
	enum acceld_err open_err[EXEC_BACKEND_COUNT];
	char open_msg[EXEC_BACKEND_COUNT][512];
	double best_gflops[EXEC_KERNEL_COUNT];
	double best_gbps[EXEC_KERNEL_COUNT];
	unsigned threads;
};

struct exec {
	struct exec_opts opts;
	struct device *devices;
	size_t ndevices;
	struct worker *workers;  /* one per device; ops[] empty for devices that cannot run jobs */
	pthread_mutex_t mu;
	pthread_cond_t final_cv; /* a job reached a final state */
	pthread_cond_t reaper_cv;
	pthread_t reaper;
	bool reaper_started;
	bool stop;
	struct exec_cpu *host;   /* generation, summaries and verification */
	struct exec_cpu *serial; /* the same for jobs run inline: one thread, never shared, never waits */
	struct exec_job **ring;
	unsigned ring_cap;
	unsigned ring_len;
	unsigned ring_head;      /* index of the next slot to write */
	uint64_t next_seq;
	uint64_t salt;
};

/* --- names and sizes --- */

static const char *const kernel_names[EXEC_KERNEL_COUNT] = {"saxpy", "triad", "dot", "sgemm", "softmax"};
static const char *const state_names[] = {"queued", "running", "succeeded", "failed", "timed_out", "cancelled"};

const char *exec_kernel_name(enum exec_kernel k)
{
	return k < EXEC_KERNEL_COUNT ? kernel_names[k] : "?";
}

int exec_kernel_parse(const char *name, enum exec_kernel *out)
{
	for (int i = 0; i < EXEC_KERNEL_COUNT; i++) {
		if (strcmp(name, kernel_names[i]) == 0) {
			*out = (enum exec_kernel)i;
			return 0;
		}
	}
	return -1;
}

const char *exec_state_name(enum exec_state s)
{
	return (size_t)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "?";
}

int exec_state_parse(const char *name, enum exec_state *out)
{
	for (size_t i = 0; i < sizeof(state_names) / sizeof(state_names[0]); i++) {
		if (strcmp(name, state_names[i]) == 0) {
			*out = (enum exec_state)i;
			return 0;
		}
	}
	return -1;
}

const char *exec_backend_name(enum exec_backend_kind b)
{
	return b == EXEC_BACKEND_OPENCL ? "opencl" : "native";
}

const char *const *exec_kernel_inputs(enum exec_kernel k)
{
	static const char *const xy[] = {"x", "y", NULL};
	static const char *const bc[] = {"b", "c", NULL};
	static const char *const abc[] = {"a", "b", "c", NULL};
	static const char *const x[] = {"x", NULL};

	switch (k) {
	case EXEC_SAXPY:
	case EXEC_DOT:
		return xy;
	case EXEC_TRIAD:
		return bc;
	case EXEC_SGEMM:
		return abc;
	case EXEC_SOFTMAX:
	case EXEC_KERNEL_COUNT:
		break;
	}
	return x;
}

/* a * b, saturating at UINT64_MAX so oversized requests fail the limit checks instead of wrapping */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t exec_input_len(enum exec_kernel k, uint64_t m, uint64_t n, uint64_t kk, unsigned i)
{
	switch (k) {
	case EXEC_SAXPY:
	case EXEC_DOT:
	case EXEC_TRIAD:
		return i < 2 ? n : 0;
	case EXEC_SGEMM:
		return i == 0 ? mul_sat(m, kk) : i == 1 ? mul_sat(kk, n) : i == 2 ? mul_sat(m, n) : 0;
	case EXEC_SOFTMAX:
		return i == 0 ? mul_sat(m, n) : 0;
	case EXEC_KERNEL_COUNT:
		break;
	}
	return 0;
}

uint64_t exec_output_len(enum exec_kernel k, uint64_t m, uint64_t n, uint64_t kk)
{
	(void)kk;
	switch (k) {
	case EXEC_SAXPY:
	case EXEC_TRIAD:
		return n;
	case EXEC_DOT:
		return 1;
	case EXEC_SGEMM:
	case EXEC_SOFTMAX:
		return mul_sat(m, n);
	case EXEC_KERNEL_COUNT:
		break;
	}
	return 0;
}

double exec_flops(enum exec_kernel k, uint64_t m, uint64_t n, uint64_t kk)
{
	switch (k) {
	case EXEC_SAXPY:
	case EXEC_TRIAD:
	case EXEC_DOT:
		return 2.0 * (double)n;
	case EXEC_SGEMM:
		return 2.0 * (double)m * (double)n * (double)kk;
	case EXEC_SOFTMAX:
		return 4.0 * (double)m * (double)n; /* max, subtract and exp, sum, scale */
	case EXEC_KERNEL_COUNT:
		break;
	}
	return 0.0;
}

double exec_bytes(enum exec_kernel k, uint64_t m, uint64_t n, uint64_t kk)
{
	switch (k) {
	case EXEC_SAXPY:
	case EXEC_TRIAD:
		return 12.0 * (double)n;
	case EXEC_DOT:
		return 8.0 * (double)n;
	case EXEC_SGEMM:
		return 4.0 * ((double)m * (double)kk + (double)kk * (double)n + 2.0 * (double)m * (double)n);
	case EXEC_SOFTMAX:
		return 8.0 * (double)m * (double)n;
	case EXEC_KERNEL_COUNT:
		break;
	}
	return 0.0;
}

void exec_request_init(struct exec_request *req)
{
	memset(req, 0, sizeof(*req));
	req->alpha = 1.0f;
	req->beta = 0.0f;
	req->s = 1.0f;
	req->prefer = PREFER_AUTO;
	req->fallback = -1;
	req->backend = -1;
	req->seed = 1;
}

void exec_request_release(struct exec_request *req)
{
	for (int i = 0; i < EXEC_MAX_INPUTS; i++) {
		free(req->inputs[i]);
		req->inputs[i] = NULL;
	}
}

void exec_prepare_process(const char *pocl_cache_dir)
{
	exec_opencl_set_cache_dir(pocl_cache_dir);
	exec_cpu_blas_prepare();
}

void exec_opts_from_config(const struct config *cfg, struct exec_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->max_elements = cfg->exec_max_elements;
	opts->queue_depth = cfg->exec_queue_depth;
	opts->default_timeout_ms = cfg->exec_default_timeout_ms;
	opts->max_timeout_ms = cfg->exec_max_timeout_ms;
	opts->recent = cfg->exec_recent_jobs;
}

void exec_pocl_cache_dir(const struct config *cfg, char *out, size_t outsz)
{
	const char *slash;

	out[0] = '\0';
	if (cfg->pocl_cache_dir != NULL) {
		snprintf(out, outsz, "%s", cfg->pocl_cache_dir);
		return;
	}
	if (cfg->db_path == NULL || strcmp(cfg->db_path, ":memory:") == 0 || strncmp(cfg->db_path, "file:", 5) == 0)
		return;
	slash = strrchr(cfg->db_path, '/');
	if (slash == NULL)
		snprintf(out, outsz, "pocl-cache");
	else
		snprintf(out, outsz, "%.*s/pocl-cache", (int)(slash - cfg->db_path), cfg->db_path);
}

/* --- jobs --- */

void exec_job_ref(struct exec_job *job)
{
	atomic_fetch_add(&job->refs, 1);
}

void exec_job_unref(struct exec_job *job)
{
	if (job == NULL || atomic_fetch_sub(&job->refs, 1) != 1)
		return;
	exec_request_release(&job->req);
	free(job->output);
	free(job);
}

const char *exec_job_id(const struct exec_job *job)
{
	return job->id;
}

enum exec_state exec_job_state(struct exec_job *job)
{
	enum exec_state s;

	pthread_mutex_lock(&job->ex->mu);
	s = job->state;
	pthread_mutex_unlock(&job->ex->mu);
	return s;
}

enum acceld_err exec_job_error(struct exec_job *job, char *detail, size_t detailsz)
{
	enum acceld_err e;

	pthread_mutex_lock(&job->ex->mu);
	e = job->err;
	snprintf(detail, detailsz, "%s", job->error);
	pthread_mutex_unlock(&job->ex->mu);
	return e;
}

void exec_job_wait(struct exec_job *job)
{
	struct exec *ex = job->ex;

	pthread_mutex_lock(&ex->mu);
	while (job->state == EXEC_QUEUED || job->state == EXEC_RUNNING || (job->running_timed_out && !job->recorded))
		pthread_cond_wait(&ex->final_cv, &ex->mu);
	pthread_mutex_unlock(&ex->mu);
}

static bool is_final(enum exec_state s)
{
	return s != EXEC_QUEUED && s != EXEC_RUNNING;
}

static double ms_between(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1e6 : 0.0;
}

static double job_cost(const struct exec_job *job)
{
	if (isnan(job->usd_per_hour) || job->started_ns == 0 || job->finished_ns == 0)
		return NAN;
	return job->usd_per_hour * ms_between(job->started_ns, job->finished_ns) / 1000.0 / 3600.0;
}

/* Marks a job final under ex->mu. */
static void set_final(struct exec_job *job, enum exec_state s, enum acceld_err err, const char *reason,
		      const char *detail)
{
	job->state = s;
	job->err = err;
	if (reason)
		snprintf(job->reason, sizeof(job->reason), "%s", reason);
	if (detail)
		snprintf(job->error, sizeof(job->error), "%s", detail);
	if (job->finished_ns == 0) {
		job->finished_ns = clock_mono_ns();
		job->finished_ms = clock_real_ms();
	}
}

/* Calls done once; call without ex->mu. */
static void job_notify(struct exec *ex, struct exec_job *job)
{
	exec_done_fn done = NULL;
	void *arg = NULL;

	pthread_mutex_lock(&ex->mu);
	if (!job->done_called) {
		job->done_called = true;
		done = job->done;
		arg = job->done_arg;
	}
	pthread_mutex_unlock(&ex->mu);
	if (done)
		done(arg, job);
}

/* What the history keeps of job as it stands; ex->mu held. */
static struct exec_job_record record_of(const struct exec_job *job)
{
	return (struct exec_job_record){
		.id = job->id,
		.kernel = exec_kernel_name(job->req.kernel),
		.device_id = job->device_id,
		.backend = exec_backend_name(job->backend),
		.state = exec_state_name(job->state),
		.m = job->req.m,
		.n = job->req.n,
		.k = job->req.k,
		.queued_ms = ms_between(job->created_ns, job->started_ns ? job->started_ns : job->finished_ns),
		.transfer_ms = job->transfer_ms,
		.kernel_ms = job->kernel_ms,
		.total_ms = ms_between(job->created_ns, job->finished_ns),
		.flops = job->flops,
		.bytes = job->bytes,
		.cost_usd = job_cost(job),
		.created_ms = job->created_ms,
		.started_ms = job->started_ms,
		.finished_ms = job->finished_ms,
		.error = job->error[0] ? job->error : NULL,
	};
}

/* Writes the history record of a final job; call without ex->mu, once. */
static void job_record(struct exec *ex, struct exec_job *job)
{
	struct exec_job_record rec;
	bool first;

	pthread_mutex_lock(&ex->mu);
	first = !job->recorded;
	job->recorded = true;
	rec = record_of(job);
	pthread_cond_broadcast(&ex->final_cv);
	pthread_mutex_unlock(&ex->mu);
	if (first && ex->opts.on_job_done)
		ex->opts.on_job_done(ex->opts.on_job_done_ctx, &rec);
	if (first)
		log_fields(job->state == EXEC_SUCCEEDED ? LOGL_INFO : LOGL_WARN, "exec", "job finished",
			   (struct log_field[]){LOG_S("id", rec.id), LOG_S("kernel", rec.kernel),
						LOG_S("device", rec.device_id), LOG_S("backend", rec.backend),
						LOG_S("state", rec.state), LOG_D("kernel_ms", rec.kernel_ms),
						LOG_D("total_ms", rec.total_ms), LOG_S("error", rec.error)},
			   8);
}

/* A final job: answer the waiter and, unless its kernel is still running, record it. */
static void job_finished(struct exec *ex, struct exec_job *job, bool kernel_still_running)
{
	job_notify(ex, job);
	if (!kernel_still_running)
		job_record(ex, job);
}

/* --- the ring of recent jobs --- */

static void ring_add(struct exec *ex, struct exec_job *job)
{
	struct exec_job *old = NULL;

	exec_job_ref(job);
	if (ex->ring_len == ex->ring_cap)
		old = ex->ring[ex->ring_head];
	else
		ex->ring_len++;
	ex->ring[ex->ring_head] = job;
	ex->ring_head = (ex->ring_head + 1) % ex->ring_cap;
	/* an evicted job may still be queued or running; its worker holds its own reference */
	exec_job_unref(old);
}

/* The i-th newest job in the ring (0 = newest). */
static struct exec_job *ring_at(const struct exec *ex, unsigned i)
{
	return ex->ring[(ex->ring_head + ex->ring_cap - 1 - i) % ex->ring_cap];
}

struct exec_job *exec_get(struct exec *ex, const char *id)
{
	struct exec_job *found = NULL;

	pthread_mutex_lock(&ex->mu);
	for (unsigned i = 0; i < ex->ring_len && found == NULL; i++) {
		struct exec_job *j = ring_at(ex, i);

		if (strcmp(j->id, id) == 0) {
			found = j;
			exec_job_ref(found);
		}
	}
	pthread_mutex_unlock(&ex->mu);
	return found;
}

/* --- queues --- */

static bool queue_push(struct exec *ex, struct worker *w, struct exec_job *job)
{
	if (w->qlen >= ex->opts.queue_depth)
		return false;
	w->queue[w->qlen++] = job;
	pthread_cond_signal(&w->cv);
	pthread_cond_signal(&ex->reaper_cv);
	return true;
}

static void queue_remove(struct worker *w, unsigned i)
{
	memmove(&w->queue[i], &w->queue[i + 1], (w->qlen - i - 1) * sizeof(w->queue[0]));
	w->qlen--;
}

enum acceld_err exec_cancel(struct exec *ex, const char *id)
{
	struct exec_job *job = NULL;
	enum acceld_err rc = ACCELD_ENOTFOUND;

	pthread_mutex_lock(&ex->mu);
	for (size_t d = 0; d < ex->ndevices && job == NULL; d++) {
		struct worker *w = &ex->workers[d];

		for (unsigned i = 0; i < w->qlen; i++) {
			if (strcmp(w->queue[i]->id, id) == 0) {
				job = w->queue[i];
				queue_remove(w, i);
				break;
			}
		}
	}
	if (job != NULL) {
		set_final(job, EXEC_CANCELLED, ACCELD_ECONFLICT, "CANCELLED", "cancelled by DELETE /run/{id} while queued");
		rc = ACCELD_OK;
	} else {
		for (unsigned i = 0; i < ex->ring_len; i++)
			if (strcmp(ring_at(ex, i)->id, id) == 0)
				rc = ACCELD_ECONFLICT;
	}
	pthread_mutex_unlock(&ex->mu);
	if (job != NULL) {
		job_finished(ex, job, false);
		exec_job_unref(job); /* the queue's reference */
	}
	return rc;
}

/* --- placement --- */

static bool worker_has(const struct worker *w, enum exec_backend_kind b)
{
	return w->ops[b] != NULL;
}

static int default_backend(const struct worker *w)
{
	if (w->dev.type == DEVICE_CPU && worker_has(w, EXEC_BACKEND_NATIVE))
		return EXEC_BACKEND_NATIVE;
	if (worker_has(w, EXEC_BACKEND_OPENCL))
		return EXEC_BACKEND_OPENCL;
	if (worker_has(w, EXEC_BACKEND_NATIVE))
		return EXEC_BACKEND_NATIVE;
	return -1;
}

static void refuse(struct exec_refusal *why, enum acceld_err err, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void refuse(struct exec_refusal *why, enum acceld_err err, const char *reason, const char *fmt, ...)
{
	va_list ap;

	why->err = err;
	snprintf(why->reason, sizeof(why->reason), "%s", reason ? reason : acceld_err_reason(err));
	va_start(ap, fmt);
	vsnprintf(why->detail, sizeof(why->detail), fmt, ap);
	va_end(ap);
}

static const char *unsupported_why(const struct worker *w)
{
	if (w->dev.type == DEVICE_TPU)
		return "TPUs are listed but not executable: acceld has no PJRT backend yet";
	return "acceld has no backend for it (no OpenCL view of the device)";
}

static int type_rank(enum device_type t, int prefer)
{
	switch (prefer) {
	case PREFER_CPU:
		return t == DEVICE_CPU ? 0 : -1;
	case PREFER_GPU:
		return t == DEVICE_GPU ? 0 : t == DEVICE_CPU ? 1 : -1;
	default: /* auto and tpu: TPU > GPU > CPU */
		return t == DEVICE_TPU ? 0 : t == DEVICE_GPU ? 1 : 2;
	}
}

static bool tiny_job(const struct exec_request *req)
{
	return exec_flops(req->kernel, req->m, req->n, req->k) < 2e6 &&
	       exec_bytes(req->kernel, req->m, req->n, req->k) < 4e6;
}

/*
 * Whether a placed job runs on the submitting thread: tiny, on a backend that allows it and is open, and with
 * nothing queued or running on the device (so it overtakes no one and never waits); ex->mu held.
 */
static bool runs_inline(const struct worker *w, const struct exec_job *job)
{
	const struct exec_request *r = &job->req;
	enum exec_backend_kind b = job->chain_backend[0];

	return w->ops[b] != NULL && w->ops[b]->inline_tiny && w->ready[b] && w->qlen == 0 && w->running == NULL &&
	       exec_bytes(r->kernel, r->m, r->n, r->k) <= EXEC_INLINE_MAX_BYTES &&
	       exec_flops(r->kernel, r->m, r->n, r->k) <= EXEC_INLINE_MAX_FLOPS;
}

static enum exec_presence presence(struct exec *ex, size_t d)
{
	return ex->opts.presence ? ex->opts.presence(ex->opts.presence_ctx, &ex->devices[d]) : EXEC_PRESENT;
}

/* Builds the fallback chain; returns ACCELD_OK or fills why. */
static enum acceld_err place(struct exec *ex, struct exec_job *job, struct exec_refusal *why)
{
	const struct exec_request *req = &job->req;
	bool explicit_dev = req->device[0] != '\0';
	bool fallback = req->fallback < 0 ? !explicit_dev : req->fallback == 1;
	size_t order[64];
	size_t norder = 0;

	job->may_fall_back = fallback;
	if (explicit_dev) {
		size_t d;

		for (d = 0; d < ex->ndevices; d++)
			if (strcmp(ex->devices[d].id, req->device) == 0)
				break;
		if (d == ex->ndevices) {
			refuse(why, ACCELD_ENOTFOUND, "UNKNOWN_DEVICE",
			       "no device '%s' that acceld can run jobs on (see GET /devices; a device found after "
			       "start needs a restart of acceld to run jobs)",
			       req->device);
			return why->err;
		}
		switch (presence(ex, d)) {
		case EXEC_GONE:
			refuse(why, ACCELD_ENOTFOUND, "UNKNOWN_DEVICE",
			       "device '%s' is gone since acceld started (see GET /devices)", req->device);
			return why->err;
		case EXEC_CHANGED:
			refuse(why, ACCELD_ECONFLICT, "DEVICE_CHANGED",
			       "'%s' now names another device than the one acceld opened at start (devices were added or "
			       "removed); restart acceld to run jobs on it",
			       req->device);
			return why->err;
		case EXEC_PRESENT:
			break;
		}
		order[norder++] = d;
	}
	if (!explicit_dev || fallback) {
		for (int rank = 0; rank < 3; rank++)
			for (size_t d = 0; d < ex->ndevices && norder < 64; d++)
				if (type_rank(ex->devices[d].type, req->prefer) == rank &&
				    presence(ex, d) == EXEC_PRESENT &&
				    !(explicit_dev && d == order[0]) &&
				    (fallback || explicit_dev || rank == 0 || req->prefer == PREFER_AUTO))
					order[norder++] = d;
	}
	for (size_t i = 0; i < norder && job->nchain < CHAIN_MAX; i++) {
		struct worker *w = &ex->workers[order[i]];
		int b = req->backend >= 0 ? (worker_has(w, (enum exec_backend_kind)req->backend) ? req->backend : -1)
					  : default_backend(w);

		if (b < 0) {
			if (job->nchain == 0 && job->fallback_from[0] == '\0') {
				snprintf(job->fallback_from, sizeof(job->fallback_from), "%s", w->dev.id);
				snprintf(job->fallback_reason, sizeof(job->fallback_reason), "%s: %s (UNSUPPORTED)",
					 w->dev.id,
					 req->backend >= 0 && default_backend(w) >= 0
						 ? "the requested backend is not available on it"
						 : unsupported_why(w));
			}
			if (!fallback)
				break;
			continue;
		}
		job->chain[job->nchain] = order[i];
		job->chain_backend[job->nchain] = (enum exec_backend_kind)b;
		job->nchain++;
		if (!fallback)
			break;
	}
	if (job->nchain == 0) {
		if (job->fallback_from[0]) {
			refuse(why, ACCELD_EUNSUPPORTED, "UNSUPPORTED", "%s", job->fallback_reason);
			return why->err;
		}
		refuse(why, ACCELD_ECONFLICT, "NO_MATCHING_DEVICE", "no executable device matches prefer=%s%s",
		       config_prefer_name(req->prefer),
		       req->backend >= 0 ? " with the requested backend" : "");
		return why->err;
	}
	if (job->fallback_from[0] && strcmp(job->fallback_from, ex->devices[job->chain[0]].id) != 0)
		job->fell_back = true;
	else
		job->fallback_from[0] = '\0';
	if (!explicit_dev && (req->prefer == PREFER_GPU || req->prefer == PREFER_TPU) &&
	    ex->devices[job->chain[0]].type != (req->prefer == PREFER_GPU ? DEVICE_GPU : DEVICE_TPU)) {
		job->fell_back = true;
		if (job->fallback_reason[0] == '\0')
			snprintf(job->fallback_reason, sizeof(job->fallback_reason), "no executable %s; using %s",
				 config_prefer_name(req->prefer), ex->devices[job->chain[0]].id);
	}
	/* tiny jobs never pay an OpenCL launch when the CPU can take them natively */
	if (!explicit_dev && req->backend < 0 && job->chain_backend[0] == EXEC_BACKEND_OPENCL && tiny_job(req)) {
		for (unsigned i = 1; i < job->nchain; i++) {
			if (job->chain_backend[i] == EXEC_BACKEND_NATIVE) {
				size_t d = job->chain[i];

				memmove(&job->chain[1], &job->chain[0], i * sizeof(job->chain[0]));
				memmove(&job->chain_backend[1], &job->chain_backend[0], i * sizeof(job->chain_backend[0]));
				job->chain[0] = d;
				job->chain_backend[0] = EXEC_BACKEND_NATIVE;
				snprintf(job->placement, sizeof(job->placement),
					 "tiny job: runs natively on %s rather than paying an OpenCL launch",
					 ex->devices[d].id);
				break;
			}
		}
	}
	if (job->placement[0] == '\0')
		snprintf(job->placement, sizeof(job->placement), "%s %s", explicit_dev ? "device" : "prefer",
			 explicit_dev ? req->device : config_prefer_name(req->prefer));
	return ACCELD_OK;
}

/* --- limits and estimates --- */

static enum acceld_err check_sizes(struct exec *ex, struct exec_job *job, struct exec_refusal *why)
{
	const struct exec_request *r = &job->req;
	uint64_t total = exec_output_len(r->kernel, r->m, r->n, r->k);
	uint64_t largest = total;
	const struct worker *w = &ex->workers[job->chain[0]];

	for (unsigned i = 0; i < EXEC_MAX_INPUTS; i++) {
		uint64_t len = exec_input_len(r->kernel, r->m, r->n, r->k, i);

		total = add_sat(total, len);
		if (len > largest)
			largest = len;
	}
	if (total > ex->opts.max_elements) {
		refuse(why, ACCELD_ETOOLARGE, "JOB_TOO_LARGE",
		       "the job needs %llu float32 elements in all; the limit is %llu (ACCELD_EXEC_MAX_ELEMENTS)",
		       (unsigned long long)total, (unsigned long long)ex->opts.max_elements);
		why->extra = json_pack("{s:I, s:I}", "elements", (json_int_t)(total > INT64_MAX ? INT64_MAX : total),
				       "limit", (json_int_t)ex->opts.max_elements);
		return why->err;
	}
	if (job->chain_backend[0] == EXEC_BACKEND_OPENCL && w->dev.opencl.max_alloc_bytes > 0 &&
	    mul_sat(largest, sizeof(float)) > w->dev.opencl.max_alloc_bytes) {
		refuse(why, ACCELD_ETOOLARGE, "EXCEEDS_DEVICE_ALLOCATION",
		       "a buffer of %llu bytes exceeds %s's largest allocation of %llu bytes",
		       (unsigned long long)mul_sat(largest, sizeof(float)), w->dev.id,
		       (unsigned long long)w->dev.opencl.max_alloc_bytes);
		return why->err;
	}
	if (r->full && exec_output_len(r->kernel, r->m, r->n, r->k) > FULL_MAX_ELEMENTS) {
		refuse(why, ACCELD_ETOOLARGE, "OUTPUT_TOO_LARGE",
		       "return=full is limited to outputs of %u elements; ask for return=summary", FULL_MAX_ELEMENTS);
		return why->err;
	}
	return ACCELD_OK;
}

/*
 * Optimistic rates (GFLOP/s, GB/s) of a worker for a kernel: twice the best measured, else twice the peak figures,
 * else twice a generous ceiling. Estimates from them are lower bounds, so only jobs that cannot finish in time are
 * refused.
 */
static void rates(const struct worker *w, enum exec_kernel k, double *gflops, double *gbps)
{
	const struct device *d = &w->dev;
	double units = d->type == DEVICE_CPU ? (double)(w->threads ? w->threads : 1) : 1.0;

	if (w->best_gflops[k] > 0)
		*gflops = w->best_gflops[k];
	else if (!isnan(d->peak.fp32_tflops) && d->peak.fp32_tflops > 0)
		*gflops = d->peak.fp32_tflops * 1000.0;
	else
		*gflops = d->type == DEVICE_CPU ? 200.0 * units : 200000.0;
	if (w->best_gbps[k] > 0)
		*gbps = w->best_gbps[k];
	else if (!isnan(d->peak.memory_bandwidth_gbps) && d->peak.memory_bandwidth_gbps > 0)
		*gbps = d->peak.memory_bandwidth_gbps;
	else
		*gbps = d->type == DEVICE_CPU ? 400.0 : 8000.0;
	*gflops *= 2.0;
	*gbps *= 2.0;
}

static double estimate_ms(const struct worker *w, const struct exec_job *job)
{
	double gflops;
	double gbps;
	double a;
	double b;

	rates(w, job->req.kernel, &gflops, &gbps);
	a = job->flops / (gflops * 1e6);
	b = job->bytes / (gbps * 1e6);
	return a > b ? a : b;
}

/* --- submit --- */

static void job_make_id(struct exec *ex, struct exec_job *job)
{
	uint64_t z = ex->salt + job->seq * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	snprintf(job->id, sizeof(job->id), "%012llx%08x", (unsigned long long)job->created_ms & 0xffffffffffffull,
		 (unsigned)z);
}

enum acceld_err exec_submit(struct exec *ex, struct exec_request *req, exec_done_fn done, void *arg,
			    struct exec_job **out, struct exec_refusal *why)
{
	struct exec_job *job = xcalloc(1, sizeof(*job));
	enum acceld_err rc;
	struct worker *first = NULL;
	struct exec_job *here = NULL; /* a tiny job this thread runs itself */
	double est;

	memset(why, 0, sizeof(*why));
	atomic_init(&job->refs, 1);
	job->ex = ex;
	job->req = *req;
	memset(req->inputs, 0, sizeof(req->inputs));
	req->has_inputs = false;
	job->state = EXEC_QUEUED;
	job->created_ns = clock_mono_ns();
	job->created_ms = clock_real_ms();
	job->timeout_ms = job->req.timeout_ms ? job->req.timeout_ms : ex->opts.default_timeout_ms;
	if (job->timeout_ms > ex->opts.max_timeout_ms)
		job->timeout_ms = ex->opts.max_timeout_ms;
	job->deadline_ns = job->created_ns + job->timeout_ms * 1000000ull;
	job->flops = exec_flops(job->req.kernel, job->req.m, job->req.n, job->req.k);
	job->bytes = exec_bytes(job->req.kernel, job->req.m, job->req.n, job->req.k);
	job->done = done;
	job->done_arg = arg;
	job->usd_per_hour = NAN;

	pthread_mutex_lock(&ex->mu);
	if (ex->stop) {
		refuse(why, ACCELD_EUNAVAILABLE, "SHUTTING_DOWN", "the executor is stopping");
		rc = why->err;
		goto out;
	}
	rc = place(ex, job, why);
	if (rc != ACCELD_OK)
		goto out;
	rc = check_sizes(ex, job, why);
	if (rc != ACCELD_OK)
		goto out;
	first = &ex->workers[job->chain[0]];
	est = estimate_ms(first, job);
	if (est > (double)job->timeout_ms) {
		refuse(why, ACCELD_EUNPROCESSABLE, "WOULD_TIME_OUT",
		       "the job would take at least %.1f ms on %s, more than its timeout of %llu ms; raise timeout_ms "
		       "or shrink the job",
		       est, first->dev.id, (unsigned long long)job->timeout_ms);
		why->extra = json_pack("{s:f, s:I}", "estimated_ms", est, "timeout_ms", (json_int_t)job->timeout_ms);
		rc = why->err;
		goto out;
	}
	job->seq = ++ex->next_seq;
	job_make_id(ex, job);
	snprintf(job->device_id, sizeof(job->device_id), "%s", first->dev.id);
	job->backend = job->chain_backend[0];
	exec_job_ref(job); /* the queue's reference, or the inline run's */
	if (runs_inline(first, job)) {
		here = job;
		job->state = EXEC_RUNNING;
		job->started_ns = clock_mono_ns();
		job->started_ms = clock_real_ms();
		first->inline_running++;
	} else if (!queue_push(ex, first, job)) {
		exec_job_unref(job);
		refuse(why, ACCELD_EBUSY, "QUEUE_FULL", "the queue of %s is full (%u jobs; ACCELD_EXEC_QUEUE_DEPTH)",
		       first->dev.id, ex->opts.queue_depth);
		rc = why->err;
		goto out;
	}
	ring_add(ex, job);
	*out = job;
	job = NULL;
	rc = ACCELD_OK;
out:
	pthread_mutex_unlock(&ex->mu);
	if (job != NULL) {
		job->done = NULL;
		exec_job_unref(job);
	}
	if (here != NULL)
		worker_step(first, here, true);
	return rc;
}

/* --- running a job --- */

struct gen_task {
	float *p;
	uint64_t seed;
};

/* Values in [-1, 1) from a counter-based generator, so the result does not depend on the thread count. */
static void gen_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct gen_task *t = arg;

	(void)part;
	for (size_t i = b; i < e; i++) {
		uint64_t z = t->seed + (uint64_t)i * 0x9e3779b97f4a7c15ull;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		t->p[i] = (float)(z >> 40) * (float)(1.0 / 8388608.0) - 1.0f;
	}
}

static float *alloc_floats(size_t n)
{
	void *p = NULL;

	if (n == 0)
		n = 1;
	if (n > SIZE_MAX / sizeof(float) || posix_memalign(&p, 64, n * sizeof(float)) != 0)
		return NULL;
	return p;
}

struct stats_task {
	const float *p;
	double sum[256], mn[256], mx[256];
};

static void stats_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct stats_task *t = arg;
	double sum = 0.0;
	float mn = t->p[b];
	float mx = t->p[b];

	for (size_t i = b; i < e; i++) {
		sum += t->p[i];
		mn = t->p[i] < mn ? t->p[i] : mn;
		mx = t->p[i] > mx ? t->p[i] : mx;
	}
	t->sum[part] = sum;
	t->mn[part] = mn;
	t->mx[part] = mx;
}

static void summarise(struct exec_cpu *pool, struct exec_job *job, const float *out, size_t len)
{
	struct stats_task *t = xcalloc(1, sizeof(*t));

	for (int i = 0; i < 256; i++) {
		t->mn[i] = INFINITY;
		t->mx[i] = -INFINITY;
	}
	t->p = out;
	exec_cpu_parallel(pool, len, 1u << 16, 16, stats_part, t);
	job->checksum = 0.0;
	job->vmin = INFINITY;
	job->vmax = -INFINITY;
	for (int i = 0; i < 256; i++) {
		job->checksum += t->sum[i];
		job->vmin = t->mn[i] < job->vmin ? t->mn[i] : job->vmin;
		job->vmax = t->mx[i] > job->vmax ? t->mx[i] : job->vmax;
	}
	job->mean = len ? job->checksum / (double)len : 0.0;
	job->nfirst = len < SUMMARY_FIRST ? len : SUMMARY_FIRST;
	memcpy(job->first, out, job->nfirst * sizeof(float));
	free(t);
}

struct verify_task {
	const struct exec_work *w;
	double tol_rel;
	double max_abs[256];
	double worst[256];
	size_t checked[256];
};

static void verify_note(struct verify_task *t, unsigned part, double got, double ref, double scale)
{
	double err = fabs(got - ref);
	double tol = t->tol_rel * scale + 1e-30;
	double ratio = isnan(got) ? INFINITY : err / tol;

	if (err > t->max_abs[part] || isnan(got))
		t->max_abs[part] = isnan(got) ? INFINITY : err;
	if (ratio > t->worst[part])
		t->worst[part] = ratio;
	t->checked[part]++;
}

static void verify_vec_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct verify_task *t = arg;
	const struct exec_work *w = t->w;

	for (size_t i = b; i < e; i++) {
		double p;
		double q;

		if (w->kernel == EXEC_SAXPY) {
			p = (double)w->alpha * w->in[0][i];
			q = w->in[1][i];
		} else {
			p = w->in[0][i];
			q = (double)w->s * w->in[1][i];
		}
		verify_note(t, part, w->out[i], p + q, fabs(p) + fabs(q));
	}
}

/* One sampled (or every) entry of C: index in [0, m*n). */
static void verify_gemm_entry(struct verify_task *t, unsigned part, size_t idx)
{
	const struct exec_work *w = t->w;
	size_t i = idx / w->n;
	size_t j = idx % w->n;
	double ref = 0.0;
	double mag = 0.0;

	for (size_t p = 0; p < w->k; p++) {
		double term = (double)w->in[0][i * w->k + p] * w->in[1][p * w->n + j];

		ref += term;
		mag += fabs(term);
	}
	ref *= w->alpha;
	mag *= fabs((double)w->alpha);
	if (w->beta != 0.0f && w->in[2] != NULL) {
		ref += (double)w->beta * w->in[2][idx];
		mag += fabs((double)w->beta * w->in[2][idx]);
	}
	verify_note(t, part, w->out[idx], ref, mag);
}

static uint64_t sample_index(uint64_t i, uint64_t range)
{
	uint64_t z = i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31)) % range;
}

static void verify_gemm_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct verify_task *t = arg;
	const struct exec_work *w = t->w;
	size_t total = w->m * w->n;
	bool all = (double)total * (double)w->k <= 1.5e8;

	for (size_t s = b; s < e; s++)
		verify_gemm_entry(t, part, all ? s : sample_index(s, total));
}

static void verify_softmax_row(struct verify_task *t, unsigned part, size_t r)
{
	const struct exec_work *w = t->w;
	const float *x = w->in[0] + r * w->n;
	const float *o = w->out + r * w->n;
	double m = x[0];
	double sum = 0.0;

	for (size_t j = 1; j < w->n; j++)
		m = x[j] > m ? x[j] : m;
	for (size_t j = 0; j < w->n; j++)
		sum += exp((double)x[j] - m);
	for (size_t j = 0; j < w->n; j++) {
		double ref = exp((double)x[j] - m) / sum;

		verify_note(t, part, o[j], ref, ref);
	}
}

static void verify_softmax_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct verify_task *t = arg;
	const struct exec_work *w = t->w;
	bool all = (double)w->m * (double)w->n <= 1.6e7;

	for (size_t s = b; s < e; s++)
		verify_softmax_row(t, part, all ? s : sample_index(s, w->m));
}

static double seq_tol(size_t k)
{
	return 2e-6 + (double)(k < 65536 ? k : 65536) * U32;
}

static void verify(struct exec_cpu *pool, struct exec_job *job, const struct exec_work *w)
{
	struct verify_task *t = xcalloc(1, sizeof(*t));
	size_t count;

	t->w = w;
	switch (w->kernel) {
	case EXEC_SAXPY:
	case EXEC_TRIAD:
		t->tol_rel = 1e-6;
		exec_cpu_parallel(pool, w->n, 1u << 16, 16, verify_vec_part, t);
		snprintf(job->verify_method, sizeof(job->verify_method), "double-precision loop over every element");
		break;
	case EXEC_DOT: {
		double ref = 0.0;
		double mag = 0.0;

		for (size_t i = 0; i < w->n; i++) {
			double term = (double)w->in[0][i] * w->in[1][i];

			ref += term;
			mag += fabs(term);
		}
		t->tol_rel = seq_tol(w->n);
		verify_note(t, 0, w->dot, ref, mag);
		snprintf(job->verify_method, sizeof(job->verify_method), "double-precision sum of every product");
		break;
	}
	case EXEC_SGEMM:
		t->tol_rel = seq_tol(w->k);
		count = (double)w->m * (double)w->n * (double)w->k <= 1.5e8 ? w->m * w->n : VERIFY_SAMPLES;
		exec_cpu_parallel(pool, count, 64, 1, verify_gemm_part, t);
		snprintf(job->verify_method, sizeof(job->verify_method), "double-precision naive loop over %s",
			 count == w->m * w->n ? "every entry" : "1024 sampled entries");
		break;
	case EXEC_SOFTMAX:
		t->tol_rel = seq_tol(w->n);
		count = (double)w->m * (double)w->n <= 1.6e7 ? w->m : 64;
		if (count > w->m)
			count = w->m;
		exec_cpu_parallel(pool, count, 4, 1, verify_softmax_part, t);
		snprintf(job->verify_method, sizeof(job->verify_method), "double-precision softmax of %s",
			 count == w->m ? "every row" : "64 sampled rows");
		break;
	case EXEC_KERNEL_COUNT:
		break;
	}
	job->max_abs_err = 0.0;
	job->worst_ratio = 0.0;
	job->checked = 0;
	for (int i = 0; i < 256; i++) {
		job->max_abs_err = t->max_abs[i] > job->max_abs_err ? t->max_abs[i] : job->max_abs_err;
		job->worst_ratio = t->worst[i] > job->worst_ratio ? t->worst[i] : job->worst_ratio;
		job->checked += t->checked[i];
	}
	job->verify_done = true;
	job->verified = job->worst_ratio <= 1.0;
	free(t);
}

/* Opens a backend of the worker on first use; returns ACCELD_OK or the open error (message in err). */
static enum acceld_err worker_backend(struct worker *w, enum exec_backend_kind b, char *err, size_t errsz)
{
	if (!w->opened[b]) {
		w->opened[b] = true;
		w->open_err[b] = w->ops[b]->open(&w->dev, w->threads, &w->state[b], w->open_msg[b],
						 sizeof(w->open_msg[b]));
		if (w->open_err[b] != ACCELD_OK) {
			w->state[b] = NULL;
			log_fields(LOGL_ERROR, "exec", "backend failed to open",
				   (struct log_field[]){LOG_S("device", w->dev.id), LOG_S("backend", w->ops[b]->name),
							LOG_S("error", w->open_msg[b])},
				   3);
		}
	}
	if (w->open_err[b] != ACCELD_OK)
		snprintf(err, errsz, "%s", w->open_msg[b]);
	return w->open_err[b];
}

/*
 * Runs job with worker w's backend (ex->mu not held), preparing and checking it on pool. Returns the backend's
 * error; the job's results are filled on success.
 */
static enum acceld_err run_job(struct worker *w, struct exec_cpu *pool, struct exec_job *job, char *err,
			       size_t errsz)
{
	struct exec *ex = w->ex;
	struct exec_request *r = &job->req;
	struct exec_work work;
	struct exec_backend_timing timing = {0};
	float *gen[EXEC_MAX_INPUTS] = {NULL, NULL, NULL};
	float *out = NULL;
	uint64_t t0 = clock_mono_ns();
	double prepare_ms;
	size_t out_len = (size_t)exec_output_len(r->kernel, r->m, r->n, r->k);
	enum acceld_err rc;

	memset(&work, 0, sizeof(work));
	work.kernel = r->kernel;
	work.m = (size_t)r->m;
	work.n = (size_t)r->n;
	work.k = (size_t)r->k;
	work.alpha = r->alpha;
	work.beta = r->beta;
	work.s = r->s;
	rc = worker_backend(w, job->backend, err, errsz);
	if (rc != ACCELD_OK)
		goto out;
	for (unsigned i = 0; i < EXEC_MAX_INPUTS; i++) {
		size_t len = (size_t)exec_input_len(r->kernel, r->m, r->n, r->k, i);

		if (len == 0)
			continue;
		if (r->inputs[i] != NULL) {
			work.in[i] = r->inputs[i];
			continue;
		}
		if (r->kernel == EXEC_SGEMM && i == 2 && (r->has_inputs || r->beta == 0.0f))
			continue; /* C omitted: zeros */
		gen[i] = alloc_floats(len);
		if (gen[i] == NULL) {
			snprintf(err, errsz, "cannot allocate %zu bytes for input %u", len * sizeof(float), i);
			rc = ACCELD_ENOMEM;
			goto out;
		}
		exec_cpu_parallel(pool, len, 1u << 16, 1024, gen_part,
				  &(struct gen_task){.p = gen[i], .seed = r->seed * 0x2545f4914f6cdd1dull + i});
		work.in[i] = gen[i];
	}
	if (r->kernel != EXEC_DOT) {
		out = alloc_floats(out_len);
		if (out == NULL) {
			snprintf(err, errsz, "cannot allocate %zu bytes for the output", out_len * sizeof(float));
			rc = ACCELD_ENOMEM;
			goto out;
		}
		work.out = out;
	}
	prepare_ms = ms_between(t0, clock_mono_ns());
	rc = w->ops[job->backend]->run(w->state[job->backend], &work, &timing, err, errsz);
	if (rc != ACCELD_OK)
		goto out;
	job->dot = work.dot;
	if (r->kernel == EXEC_DOT) {
		job->checksum = job->vmin = job->vmax = job->mean = work.dot;
		job->first[0] = (float)work.dot;
		job->nfirst = 1;
	} else {
		summarise(pool, job, out, out_len);
	}
	if (r->verify)
		verify(pool, job, &work);
	if (r->full && out != NULL) {
		job->output = out;
		job->out_len = out_len;
		out = NULL;
	}
	/* GET /run/{id} reads a running job under ex->mu: the results are published there, ran last */
	pthread_mutex_lock(&ex->mu);
	job->prepare_ms = prepare_ms;
	job->kernel_ms = timing.kernel_ms;
	job->transfer_ms = timing.transfer_ms;
	job->ran = true;
	pthread_mutex_unlock(&ex->mu);
out:
	for (unsigned i = 0; i < EXEC_MAX_INPUTS; i++) {
		free(gen[i]);
		free(r->inputs[i]);
		r->inputs[i] = NULL;
	}
	free(out);
	return rc;
}

/* Learns rates from a finished job that ran long enough to mean something. */
static void learn(struct worker *w, const struct exec_job *job)
{
	if (job->kernel_ms < MEASURE_MIN_MS || job->backend != job->chain_backend[0])
		return;
	if (job->flops / (job->kernel_ms * 1e6) > w->best_gflops[job->req.kernel])
		w->best_gflops[job->req.kernel] = job->flops / (job->kernel_ms * 1e6);
	if (job->bytes / (job->kernel_ms * 1e6) > w->best_gbps[job->req.kernel])
		w->best_gbps[job->req.kernel] = job->bytes / (job->kernel_ms * 1e6);
}

/* Tells on_job_start that job runs now (so a job cut short by a crash is known afterwards); call without ex->mu. */
static void job_started(struct exec *ex, struct exec_job *job)
{
	struct exec_job_record rec;

	if (ex->opts.on_job_start == NULL)
		return;
	pthread_mutex_lock(&ex->mu);
	rec = record_of(job);
	pthread_mutex_unlock(&ex->mu);
	/* nothing is measured yet */
	rec.state = exec_state_name(EXEC_RUNNING);
	rec.queued_ms = rec.transfer_ms = rec.kernel_ms = rec.total_ms = NAN;
	rec.flops = rec.bytes = rec.cost_usd = NAN;
	ex->opts.on_job_start(ex->opts.on_job_start_ctx, &rec);
}

/* Runs a job the worker took from its queue, or (here) one the submitting thread runs inline, and finishes it. */
static void worker_step(struct worker *w, struct exec_job *job, bool here)
{
	struct exec *ex = w->ex;
	char err[640] = "";
	enum acceld_err rc;
	bool requeued = false;
	bool answered_already;

	job_started(ex, job);
	rc = run_job(w, here ? ex->serial : ex->host, job, err, sizeof(err));

	pthread_mutex_lock(&ex->mu);
	if (here) {
		w->inline_running--;
		w->busy_ns += clock_mono_ns() - job->started_ns;
		pthread_cond_broadcast(&ex->final_cv); /* exec_stop may be waiting for it */
	} else {
		w->running = NULL;
		w->busy_ns += clock_mono_ns() - w->run_start_ns;
	}
	answered_already = job->state == EXEC_TIMED_OUT;
	if (rc == ACCELD_OK) {
		job->finished_ns = clock_mono_ns();
		job->finished_ms = clock_real_ms();
		learn(w, job);
		if (!answered_already)
			set_final(job, EXEC_SUCCEEDED, ACCELD_OK, NULL, NULL);
	} else if (!answered_already && (rc == ACCELD_EDEVICE || rc == ACCELD_EUNSUPPORTED || rc == ACCELD_ENOMEM) &&
		   job->may_fall_back && job->at + 1 < job->nchain && !ex->stop) {
		struct worker *next = &ex->workers[job->chain[job->at + 1]];

		if (next->qlen < ex->opts.queue_depth) {
			job->at++;
			job->fell_back = true;
			snprintf(job->fallback_from, sizeof(job->fallback_from), "%s", w->dev.id);
			snprintf(job->fallback_reason, sizeof(job->fallback_reason), "%s failed (%s): %.300s", w->dev.id,
				 acceld_err_reason(rc), err);
			snprintf(job->device_id, sizeof(job->device_id), "%s", next->dev.id);
			job->backend = job->chain_backend[job->at];
			job->state = EXEC_QUEUED;
			job->started_ns = 0;
			job->started_ms = 0;
			queue_push(ex, next, job);
			requeued = true;
		}
	}
	if (!requeued && rc != ACCELD_OK) {
		job->finished_ns = clock_mono_ns();
		job->finished_ms = clock_real_ms();
		if (!answered_already)
			set_final(job, EXEC_FAILED, rc, acceld_err_reason(rc), err);
	}
	if (!requeued)
		job->usd_per_hour = w->dev.price.usd_per_hour;
	pthread_mutex_unlock(&ex->mu);
	if (requeued)
		return; /* the next worker holds the queue's reference now */
	job_finished(ex, job, false);
	exec_job_unref(job);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct exec *ex = w->ex;
	char err[512];
	int primary = default_backend(w);

	/* the device's main backend opens at once, so the first job does not pay for a program build */
	if (primary >= 0 && !(w->dev.type == DEVICE_CPU && primary == EXEC_BACKEND_OPENCL) &&
	    worker_backend(w, (enum exec_backend_kind)primary, err, sizeof(err)) == ACCELD_OK) {
		pthread_mutex_lock(&ex->mu);
		w->ready[primary] = true; /* its state is complete: tiny jobs may run inline from now on */
		pthread_mutex_unlock(&ex->mu);
	}
	pthread_mutex_lock(&ex->mu);
	for (;;) {
		struct exec_job *job;

		while (!ex->stop && w->qlen == 0)
			pthread_cond_wait(&w->cv, &ex->mu);
		if (w->qlen == 0)
			break;
		job = w->queue[0];
		queue_remove(w, 0);
		w->running = job;
		job->state = EXEC_RUNNING;
		job->started_ns = clock_mono_ns();
		w->run_start_ns = job->started_ns;
		job->started_ms = clock_real_ms();
		pthread_mutex_unlock(&ex->mu);
		worker_step(w, job, false);
		pthread_mutex_lock(&ex->mu);
	}
	pthread_mutex_unlock(&ex->mu);
	for (int b = 0; b < EXEC_BACKEND_COUNT; b++)
		if (w->state[b] != NULL)
			w->ops[b]->close(w->state[b]);
	return NULL;
}

/* --- the reaper: deadlines of queued and running jobs --- */

static void *reaper_main(void *arg)
{
	struct exec *ex = arg;

	pthread_mutex_lock(&ex->mu);
	while (!ex->stop) {
		uint64_t now = clock_mono_ns();
		uint64_t next = now + 1000000000ull;
		struct exec_job *expired = NULL;
		bool running = false;

		for (size_t d = 0; d < ex->ndevices && expired == NULL; d++) {
			struct worker *w = &ex->workers[d];

			for (unsigned i = 0; i < w->qlen; i++) {
				if (w->queue[i]->deadline_ns <= now) {
					expired = w->queue[i];
					queue_remove(w, i);
					set_final(expired, EXEC_TIMED_OUT, ACCELD_ETIMEOUT, "TIMED_OUT", NULL);
					snprintf(expired->error, sizeof(expired->error),
						 "waited in the queue of %s past its timeout of %llu ms", w->dev.id,
						 (unsigned long long)expired->timeout_ms);
					break;
				}
				if (w->queue[i]->deadline_ns < next)
					next = w->queue[i]->deadline_ns;
			}
			if (expired == NULL && w->running != NULL && w->running->state == EXEC_RUNNING) {
				struct exec_job *j = w->running;

				if (j->deadline_ns <= now) {
					expired = j;
					running = true;
					exec_job_ref(j);
					j->running_timed_out = true;
					j->state = EXEC_TIMED_OUT;
					j->err = ACCELD_ETIMEOUT;
					snprintf(j->reason, sizeof(j->reason), "TIMED_OUT");
					snprintf(j->error, sizeof(j->error),
						 "ran past its timeout of %llu ms on %s; a running kernel cannot be "
						 "interrupted, so its result will be dropped",
						 (unsigned long long)j->timeout_ms, w->dev.id);
				} else if (j->deadline_ns < next) {
					next = j->deadline_ns;
				}
			}
		}
		if (expired != NULL) {
			pthread_mutex_unlock(&ex->mu);
			job_finished(ex, expired, running);
			exec_job_unref(expired); /* the queue's reference, or the one taken above */
			pthread_mutex_lock(&ex->mu);
			continue;
		}
		{
			struct timespec ts;
			uint64_t wait_ns = next > now ? next - now : 0;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (time_t)(wait_ns / 1000000000ull);
			ts.tv_nsec += (long)(wait_ns % 1000000000ull);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&ex->reaper_cv, &ex->mu, &ts);
		}
	}
	pthread_mutex_unlock(&ex->mu);
	return NULL;
}

/* --- life cycle --- */

static unsigned cpu_threads(const struct exec_opts *opts, const struct device *d)
{
	if (opts->cpu_threads)
		return opts->cpu_threads;
	if (!isnan(d->cpu.effective_cpus) && d->cpu.effective_cpus >= 1.0)
		return (unsigned)floor(d->cpu.effective_cpus);
	if (d->cpu.pus > 0 && d->cpu.pus < exec_cpu_usable())
		return d->cpu.pus;
	return exec_cpu_usable();
}

enum acceld_err exec_new(const struct exec_opts *opts, struct exec **out)
{
	struct exec *ex = xcalloc(1, sizeof(*ex));
	pthread_condattr_t ca;
	const struct exec_backend_ops *const builtin[] = {&exec_native_ops, &exec_opencl_ops};
	const struct exec_backend_ops *const *backends = opts->backends ? opts->backends : builtin;
	size_t nbackends = opts->backends ? opts->nbackends : 2;

	ex->opts = *opts;
	if (ex->opts.queue_depth == 0)
		ex->opts.queue_depth = 1;
	if (ex->opts.recent == 0)
		ex->opts.recent = 256;
	if (ex->opts.default_timeout_ms == 0)
		ex->opts.default_timeout_ms = 60000;
	if (ex->opts.max_timeout_ms == 0)
		ex->opts.max_timeout_ms = 3600000;
	if (ex->opts.max_elements == 0)
		ex->opts.max_elements = 1ull << 28;
	if (getrandom(&ex->salt, sizeof(ex->salt), 0) != sizeof(ex->salt))
		ex->salt = clock_mono_ns();
	pthread_mutex_init(&ex->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ex->reaper_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&ex->final_cv, NULL);
	ex->ring_cap = ex->opts.recent;
	ex->ring = xcalloc(ex->ring_cap, sizeof(ex->ring[0]));
	ex->ndevices = opts->ndevices;
	ex->devices = xcalloc(opts->ndevices ? opts->ndevices : 1, sizeof(struct device));
	if (opts->ndevices)
		memcpy(ex->devices, opts->devices, opts->ndevices * sizeof(struct device));
	ex->workers = xcalloc(opts->ndevices ? opts->ndevices : 1, sizeof(struct worker));
	exec_cpu_new(0, &ex->host);
	exec_cpu_new(1, &ex->serial);
	for (size_t d = 0; d < ex->ndevices; d++) {
		struct worker *w = &ex->workers[d];

		w->ex = ex;
		w->index = d;
		w->dev = ex->devices[d];
		w->threads = w->dev.type == DEVICE_CPU ? cpu_threads(opts, &w->dev) : 1;
		pthread_cond_init(&w->cv, NULL);
		w->queue = xcalloc(ex->opts.queue_depth, sizeof(w->queue[0]));
		for (size_t b = 0; b < nbackends; b++) {
			const struct exec_backend_ops *o = backends[b];

			if (o->kind == EXEC_BACKEND_NATIVE && w->dev.type == DEVICE_CPU)
				w->ops[EXEC_BACKEND_NATIVE] = o;
			else if (o->kind == EXEC_BACKEND_OPENCL && w->dev.opencl.present && w->dev.type != DEVICE_TPU)
				w->ops[EXEC_BACKEND_OPENCL] = o;
		}
		ex->devices[d].executable = default_backend(w) >= 0;
		if (default_backend(w) < 0)
			continue;
		if (pthread_create(&w->thread, NULL, worker_main, w) == 0)
			w->started = true;
	}
	if (pthread_create(&ex->reaper, NULL, reaper_main, ex) == 0)
		ex->reaper_started = true;
	*out = ex;
	return ACCELD_OK;
}

bool exec_stop(struct exec *ex, uint64_t wait_ms)
{
	struct exec_job **cancelled;
	size_t ncancelled = 0;
	size_t cap = 0;
	uint64_t deadline = clock_mono_ns() + wait_ms * 1000000u;
	bool busy = true;

	pthread_mutex_lock(&ex->mu);
	ex->stop = true;
	for (size_t d = 0; d < ex->ndevices; d++)
		cap += ex->workers[d].qlen;
	cancelled = xcalloc(cap ? cap : 1, sizeof(cancelled[0]));
	for (size_t d = 0; d < ex->ndevices; d++) {
		struct worker *w = &ex->workers[d];

		while (w->qlen > 0) {
			struct exec_job *j = w->queue[0];

			queue_remove(w, 0);
			set_final(j, EXEC_CANCELLED, ACCELD_EUNAVAILABLE, "SHUTTING_DOWN",
				  "the executor stopped before the job ran");
			cancelled[ncancelled++] = j;
		}
		pthread_cond_broadcast(&w->cv);
	}
	pthread_cond_broadcast(&ex->reaper_cv);
	pthread_mutex_unlock(&ex->mu);
	for (size_t i = 0; i < ncancelled; i++) {
		job_finished(ex, cancelled[i], false);
		exec_job_unref(cancelled[i]);
	}
	free(cancelled);
	/* a running kernel cannot be interrupted: wait for it, but only so long */
	pthread_mutex_lock(&ex->mu);
	while (busy) {
		struct timespec tick;

		busy = false;
		for (size_t d = 0; d < ex->ndevices; d++)
			busy = busy || ex->workers[d].running != NULL || ex->workers[d].inline_running > 0;
		if (!busy || clock_mono_ns() >= deadline)
			break;
		clock_gettime(CLOCK_REALTIME, &tick);
		tick.tv_nsec += 10 * 1000 * 1000;
		if (tick.tv_nsec >= 1000000000L) {
			tick.tv_sec++;
			tick.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&ex->final_cv, &ex->mu, &tick);
	}
	pthread_mutex_unlock(&ex->mu);
	return !busy;
}

void exec_free(struct exec *ex)
{
	if (ex == NULL)
		return;
	exec_stop(ex, UINT64_MAX / 2000000u);
	for (size_t d = 0; d < ex->ndevices; d++) {
		if (ex->workers[d].started)
			pthread_join(ex->workers[d].thread, NULL);
		pthread_cond_destroy(&ex->workers[d].cv);
		free(ex->workers[d].queue);
	}
	if (ex->reaper_started)
		pthread_join(ex->reaper, NULL);
	for (unsigned i = 0; i < ex->ring_len; i++)
		exec_job_unref(ring_at(ex, i));
	exec_cpu_free(ex->host);
	exec_cpu_free(ex->serial);
	pthread_cond_destroy(&ex->final_cv);
	pthread_cond_destroy(&ex->reaper_cv);
	pthread_mutex_destroy(&ex->mu);
	free(ex->ring);
	free(ex->workers);
	free(ex->devices);
	free(ex);
}

/* --- JSON --- */

static void set_time(json_t *obj, const char *key, int64_t ms)
{
	char text[CLOCK_RFC3339_LEN];

	if (ms == 0)
		return;
	clock_rfc3339(ms, text);
	json_object_set_new(obj, key, json_string(text));
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *sizes_json(const struct exec_request *r)
{
	switch (r->kernel) {
	case EXEC_SGEMM:
		return json_pack("{s:I, s:I, s:I}", "m", (json_int_t)r->m, "n", (json_int_t)r->n, "k", (json_int_t)r->k);
	case EXEC_SOFTMAX:
		return json_pack("{s:I, s:I}", "m", (json_int_t)r->m, "n", (json_int_t)r->n);
	default:
		return json_pack("{s:I}", "n", (json_int_t)r->n);
	}
}

static json_t *result_json(const struct exec_job *job)
{
	json_t *res = json_object();
	json_t *first = json_array();
	json_t *summary;

	for (size_t i = 0; i < job->nfirst; i++)
		json_array_append_new(first, num(job->first[i]));
	summary = json_pack("{s:o, s:o, s:o, s:o}", "min", num(job->vmin), "max", num(job->vmax), "mean",
			    num(job->mean), "first", first);
	json_object_set_new(res, "checksum", num(job->checksum));
	json_object_set_new(res, "summary", summary);
	if (job->req.kernel == EXEC_DOT)
		json_object_set_new(res, "value", num(job->dot));
	if (job->output != NULL) {
		json_t *arr = json_array();

		for (size_t i = 0; i < job->out_len; i++)
			json_array_append_new(arr, num(job->output[i]));
		json_object_set_new(res, "output", arr);
	} else if (job->req.full && job->req.kernel == EXEC_DOT) {
		json_object_set_new(res, "output", num(job->dot));
	}
	return res;
}

json_t *exec_job_json(struct exec_job *job)
{
	struct exec *ex = job->ex;
	json_t *o = json_object();
	const struct exec_request *r = &job->req;

	pthread_mutex_lock(&ex->mu);
	json_object_set_new(o, "id", json_string(job->id));
	json_object_set_new(o, "state", json_string(exec_state_name(job->state)));
	json_object_set_new(o, "kernel", json_string(exec_kernel_name(r->kernel)));
	json_object_set_new(o, "device", json_string(job->device_id));
	json_object_set_new(o, "backend", json_string(exec_backend_name(job->backend)));
	json_object_set_new(o, "sizes", sizes_json(r));
	json_object_set_new(o, "params", json_pack("{s:o, s:o, s:o, s:I}", "alpha", num(r->alpha), "beta",
						   num(r->beta), "s", num(r->s), "seed", (json_int_t)r->seed));
	json_object_set_new(o, "inputs", json_string(r->has_inputs ? "inline" : "generated"));
	json_object_set_new(o, "return", json_string(r->full ? "full" : "summary"));
	json_object_set_new(o, "timeout_ms", json_integer((json_int_t)job->timeout_ms));
	set_time(o, "created_at", job->created_ms);
	set_time(o, "started_at", job->started_ms);
	set_time(o, "finished_at", job->finished_ms);
	json_object_set_new(o, "placement", json_string(job->placement));
	json_object_set_new(o, "fell_back", json_boolean(job->fell_back));
	if (job->fallback_from[0])
		json_object_set_new(o, "fallback_from", json_string(job->fallback_from));
	if (job->fell_back && job->fallback_reason[0])
		json_object_set_new(o, "fallback_reason", json_string(job->fallback_reason));
	{
		uint64_t end = job->finished_ns ? job->finished_ns : clock_mono_ns();
		json_t *t = json_object();

		json_object_set_new(t, "queued_ms", json_real(ms_between(job->created_ns,
									  job->started_ns ? job->started_ns : end)));
		if (job->ran) {
			json_object_set_new(t, "prepare_ms", json_real(job->prepare_ms));
			json_object_set_new(t, "transfer_ms", json_real(job->transfer_ms));
			json_object_set_new(t, "kernel_ms", json_real(job->kernel_ms));
		}
		if (job->finished_ns)
			json_object_set_new(t, "total_ms", json_real(ms_between(job->created_ns, job->finished_ns)));
		json_object_set_new(o, "timing", t);
	}
	if (job->ran && job->state == EXEC_SUCCEEDED) {
		double secs = job->kernel_ms / 1000.0;
		json_t *tp = json_object();
		double gflops = secs > 0 ? job->flops / secs / 1e9 : 0.0;
		double gbps = secs > 0 ? job->bytes / secs / 1e9 : 0.0;
		const struct device *d = &ex->workers[job->chain[job->at]].dev;
		bool compute_bound = r->kernel == EXEC_SGEMM;

		json_object_set_new(tp, "gflops", num(gflops));
		json_object_set_new(tp, "gbytes_per_s", num(gbps));
		if (compute_bound && !isnan(d->peak.fp32_tflops) && d->peak.fp32_tflops > 0)
			json_object_set_new(tp, "fraction_of_peak", num(gflops / (d->peak.fp32_tflops * 1000.0)));
		else if (!compute_bound && !isnan(d->peak.memory_bandwidth_gbps) && d->peak.memory_bandwidth_gbps > 0)
			json_object_set_new(tp, "fraction_of_peak", num(gbps / d->peak.memory_bandwidth_gbps));
		json_object_set_new(o, "throughput", tp);
		json_object_set_new(o, "result", result_json(job));
		if (job->verify_done) {
			json_object_set_new(o, "verified", json_boolean(job->verified));
			json_object_set_new(o, "verification",
					    json_pack("{s:s, s:I, s:o, s:o}", "method", job->verify_method, "checked",
						      (json_int_t)job->checked, "max_abs_error", num(job->max_abs_err),
						      "max_error_to_tolerance", num(job->worst_ratio)));
		}
	}
	if (is_final(job->state) && !isnan(job_cost(job)))
		json_object_set_new(o, "cost_usd", json_real(job_cost(job)));
	if (job->error[0])
		json_object_set_new(o, "error", json_pack("{s:s, s:s}", "reason", job->reason[0] ? job->reason : "FAILED",
							  "detail", job->error));
	pthread_mutex_unlock(&ex->mu);
	return o;
}

json_t *exec_list_json(struct exec *ex, int state, unsigned page_size, uint64_t after)
{
	json_t *arr = json_array();
	json_t *doc = json_object();
	struct exec_job *picked[1000];
	unsigned n = 0;
	uint64_t last = 0;
	bool more = false;

	if (page_size == 0 || page_size > 1000)
		page_size = 1000;
	pthread_mutex_lock(&ex->mu);
	for (unsigned i = 0; i < ex->ring_len; i++) {
		struct exec_job *j = ring_at(ex, i);

		if ((after != 0 && j->seq >= after) || (state >= 0 && (int)j->state != state))
			continue;
		if (n == page_size) {
			more = true;
			break;
		}
		exec_job_ref(j);
		picked[n++] = j;
		last = j->seq;
	}
	pthread_mutex_unlock(&ex->mu);
	for (unsigned i = 0; i < n; i++) {
		json_array_append_new(arr, exec_job_json(picked[i]));
		exec_job_unref(picked[i]);
	}
	json_object_set_new(doc, "jobs", arr);
	if (more) {
		char tok[24];

		snprintf(tok, sizeof(tok), "%llu", (unsigned long long)last);
		json_object_set_new(doc, "next_page_token", json_string(tok));
	}
	return doc;
}

static bool worker_can_run(const struct worker *w)
{
	for (int b = 0; b < EXEC_BACKEND_COUNT; b++)
		if (w->ops[b] != NULL)
			return true;
	return false;
}

/* The worker of a device id, or NULL; ex->mu held. */
static struct worker *worker_of(struct exec *ex, const char *device_id)
{
	for (size_t d = 0; d < ex->ndevices; d++)
		if (strcmp(ex->devices[d].id, device_id) == 0)
			return &ex->workers[d];
	return NULL;
}

enum acceld_err exec_device_load(struct exec *ex, const char *device_id, unsigned *queued, unsigned *running)
{
	struct worker *w;
	enum acceld_err rc = ACCELD_ENOTFOUND;

	pthread_mutex_lock(&ex->mu);
	w = worker_of(ex, device_id);
	if (w != NULL) {
		*queued = w->qlen;
		*running = (w->running != NULL) + w->inline_running;
		rc = ACCELD_OK;
	}
	pthread_mutex_unlock(&ex->mu);
	return rc;
}

double exec_busy_fraction(struct exec *ex, const char *device_id, uint64_t window_ms)
{
	struct worker *w;
	uint64_t now = clock_mono_ns();
	double frac = NAN;

	pthread_mutex_lock(&ex->mu);
	w = worker_of(ex, device_id);
	if (w != NULL && !worker_can_run(w))
		w = NULL; /* a device with no backend is never busy with our jobs: say nothing */
	if (w != NULL) {
		uint64_t busy = w->busy_ns + (w->running != NULL ? now - w->run_start_ns : 0);
		uint64_t span = w->seen_at_ns ? now - w->seen_at_ns : window_ms * 1000000u;

		if (span > 0)
			frac = (double)(busy - w->seen_busy_ns) / (double)span;
		if (w->seen_at_ns == 0) /* first call: only the running job can be counted */
			frac = w->running != NULL ? 1.0 : 0.0;
		w->seen_busy_ns = busy;
		w->seen_at_ns = now;
	}
	pthread_mutex_unlock(&ex->mu);
	if (frac > 1.0)
		frac = 1.0;
	return frac;
}
