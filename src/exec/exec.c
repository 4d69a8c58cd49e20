/*
 * exec: job queue, per-device workers, the reaper of deadlines, placement and the life cycle of a job.
 *
 * One mutex (ex->mu) guards every queue, job state and the ring of recent jobs. A worker owns the job it runs:
 * the buffers and results of a running job are touched only by its worker until the job is finalised under the
 * mutex. Done callbacks and history records are always made with the mutex released. The backends are known only
 * through their ops (backend.h); the data around a run (inputs, summaries, verification) is jobdata's.
 */
#include "exec/exec.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/clock.h"
#include "core/config.h"
#include "exec/jobdata.h"
#include "exec/jobdoc.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/names.h"
#include "core/pool.h"
#include "core/reason.h"

#define BACKENDS_MAX 8             /* backends serving one device */
#define FULL_MAX_ELEMENTS 262144u  /* largest output returned whole */
#define MEASURE_MIN_MS 10.0        /* jobs shorter than this do not teach the estimator a rate */
/*
 * A job whose record is not confirmed this long after it ended is answered, recorded false. The reaper wakes at
 * least once a second, so the answer comes 1 to 2 s after the job ended.
 */
#define RECORD_WAIT_NS 1000000000ull

struct worker;
struct exec_job;

static bool is_final(enum exec_state s)
{
	return s != EXEC_QUEUED && s != EXEC_RUNNING;
}

static enum exec_state shown_state(const struct exec_job *job);

static void worker_step(struct worker *w, struct exec_job *job, bool here);

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
	unsigned at;                       /* position in the chain */
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
	double compile_ms;                 /* NAN: the backend builds no programs */
	int cached;                        /* the program came from the backend's cache (1), was built (0); -1 */
	enum kernel_precision precision;   /* what ran */
	double flops, bytes;
	double usd_per_hour;
	bool ran;                          /* the kernel completed */
	float *output;                     /* kept when req.full */
	size_t out_len;
	double dot;
	struct jobdata_summary summary;
	struct jobdata_verification verification;
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
	struct worker_backend be[BACKENDS_MAX];
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

/* --- names --- */

static const char *const state_names[EXEC_STATE_COUNT] = {"queued", "running", "succeeded", "failed", "timed_out",
							  "cancelled", "interrupted"};

const char *exec_state_name(enum exec_state s)
{
	return names_at(state_names, EXEC_STATE_COUNT, s);
}

bool exec_state_parse(const char *name, enum exec_state *out)
{
	int i = names_find(state_names, EXEC_STATE_COUNT, name);

	if (i < 0)
		return false;
	*out = (enum exec_state)i;
	return true;
}

const char *exec_state_names_text(void)
{
	return "queued, running, succeeded, failed, timed_out, cancelled, interrupted";
}

void exec_request_init(struct exec_request *req)
{
	memset(req, 0, sizeof(*req));
	req->alpha = 1.0f;
	req->beta = 0.0f;
	req->s = 1.0f;
	req->seed = 1;
}

void exec_request_add_device(struct exec_request *req, const char *id)
{
	if (req->ndevices < EXEC_CHAIN_MAX)
		snprintf(req->devices[req->ndevices++], sizeof(req->devices[0]), "%s", id);
}

void exec_request_release(struct exec_request *req)
{
	for (int i = 0; i < KERNEL_MAX_INPUTS; i++) {
		free(req->inputs[i]);
		req->inputs[i] = NULL;
	}
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
	s = shown_state(job);
	pthread_mutex_unlock(&job->ex->mu);
	return s;
}

bool exec_job_was_recorded(struct exec_job *job)
{
	bool r;

	pthread_mutex_lock(&job->ex->mu);
	r = job->recorded_ok;
	pthread_mutex_unlock(&job->ex->mu);
	return r;
}

enum reason exec_job_error(struct exec_job *job, char *detail, size_t detailsz)
{
	enum reason r;

	pthread_mutex_lock(&job->ex->mu);
	r = job->reason == REASON_COUNT ? REASON_INTERNAL : job->reason;
	snprintf(detail, detailsz, "%s", job->error);
	pthread_mutex_unlock(&job->ex->mu);
	return r;
}

void exec_job_wait(struct exec_job *job)
{
	struct exec *ex = job->ex;

	pthread_mutex_lock(&ex->mu);
	while (!is_final(shown_state(job)) || (job->running_timed_out && !job->final_confirmed))
		pthread_cond_wait(&ex->final_cv, &ex->mu);
	pthread_mutex_unlock(&ex->mu);
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

/* Marks a job final under ex->mu; reason REASON_COUNT for a success. */
static void set_final(struct exec_job *job, enum exec_state s, enum reason reason, const char *detail)
{
	job->state = s;
	job->reason = reason;
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
	bool final = is_final(job->state);

	return (struct exec_job_record){
		.id = job->id,
		.kernel = kernel_name(job->req.kernel),
		.device_id = job->device_id,
		.backend = job->ops ? job->ops->name : NULL,
		.state = exec_state_name(job->state),
		.m = job->req.shape.m,
		.n = job->req.shape.n,
		.k = job->req.shape.k,
		.queued_ms = job->started_ns || final
				     ? ms_between(job->created_ns, job->started_ns ? job->started_ns : job->finished_ns)
				     : NAN,
		.transfer_ms = job->ran ? job->transfer_ms : NAN,
		.kernel_ms = job->ran ? job->kernel_ms : NAN,
		.total_ms = final ? ms_between(job->created_ns, job->finished_ns) : NAN,
		.flops = job->flops,
		.bytes = job->bytes,
		.cost_usd = final ? job_cost(job) : NAN,
		.created_ms = job->created_ms,
		.started_ms = job->started_ms,
		.finished_ms = final ? job->finished_ms : 0,
		.reason = job->reason != REASON_COUNT ? reason_name(job->reason) : NULL,
		.error = job->error[0] ? job->error : NULL,
	};
}

/* The state the API shows: a final state only once a record of it was answered (see on_job_record); ex->mu held. */
static enum exec_state shown_state(const struct exec_job *job)
{
	if (job->confirmed || !is_final(job->state))
		return job->state;
	return job->started_ns != 0 || job->ran ? EXEC_RUNNING : EXEC_QUEUED;
}

/* Takes job out of the list of jobs waiting for their record's confirmation; ex->mu held. */
static void await_remove(struct exec *ex, struct exec_job *job)
{
	if (!job->awaiting)
		return;
	if (job->await_prev)
		job->await_prev->await_next = job->await_next;
	else
		ex->await_head = job->await_next;
	if (job->await_next)
		job->await_next->await_prev = job->await_prev;
	else
		ex->await_tail = job->await_prev;
	job->await_prev = job->await_next = NULL;
	job->awaiting = false;
}

/* Puts job at the end of that list, due RECORD_WAIT_NS from now; ex->mu held. */
static void await_add(struct exec *ex, struct exec_job *job)
{
	if (job->awaiting || job->confirmed)
		return;
	job->awaiting = true;
	job->await_due_ns = clock_mono_ns() + RECORD_WAIT_NS;
	job->await_prev = ex->await_tail;
	job->await_next = NULL;
	if (ex->await_tail)
		ex->await_tail->await_next = job;
	else
		ex->await_head = job;
	ex->await_tail = job;
	/* no wake-up per job: the reaper looks at least once a second */
}

void exec_job_recorded(struct exec_job *job, bool provisional, bool recorded)
{
	struct exec *ex = job->ex;
	exec_done_fn cancel_done = NULL;
	void *cancel_arg = NULL;

	pthread_mutex_lock(&ex->mu);
	await_remove(ex, job);
	if (!provisional || !job->final_confirmed)
		job->recorded_ok = recorded;
	job->confirmed = true;
	if (!provisional)
		job->final_confirmed = true;
	cancel_done = job->cancel_done;
	cancel_arg = job->cancel_arg;
	job->cancel_done = NULL;
	pthread_cond_broadcast(&ex->final_cv);
	pthread_mutex_unlock(&ex->mu);
	job_notify(ex, job);
	if (cancel_done)
		cancel_done(cancel_arg, job);
	/* last: exec_free waits for this count before it frees the executor */
	pthread_mutex_lock(&ex->mu);
	if (ex->unconfirmed > 0)
		ex->unconfirmed--;
	pthread_cond_broadcast(&ex->final_cv);
	pthread_mutex_unlock(&ex->mu);
}

/*
 * Hands the record of a final job (provisional: timed out while its kernel still runs) to on_job_record; the job is
 * answered when that is confirmed. Call without ex->mu; each kind once (later calls do nothing).
 */
static void job_record(struct exec *ex, struct exec_job *job, bool provisional)
{
	struct exec_job_record rec;

	pthread_mutex_lock(&ex->mu);
	if (job->final_sent || (provisional && job->provisional_sent)) {
		pthread_mutex_unlock(&ex->mu);
		return;
	}
	if (provisional)
		job->provisional_sent = true;
	else
		job->final_sent = true;
	rec = record_of(job);
	rec.job = job;
	rec.provisional = provisional;
	ex->unconfirmed++;
	await_add(ex, job);
	pthread_mutex_unlock(&ex->mu);
	if (!provisional && ex->opts.on_job_done)
		ex->opts.on_job_done(ex->opts.on_job_done_ctx, &rec);
	if (ex->opts.on_job_record)
		ex->opts.on_job_record(ex->opts.on_job_record_ctx, &rec);
	else
		exec_job_recorded(job, provisional, false);
	if (!provisional)
		log_fields(job->state == EXEC_SUCCEEDED ? LOGL_INFO : LOGL_WARN, "exec", "job finished",
			   (struct log_field[]){LOG_S("id", rec.id), LOG_S("kernel", rec.kernel),
						LOG_S("device", rec.device_id), LOG_S("backend", rec.backend),
						LOG_S("state", rec.state), LOG_D("kernel_ms", rec.kernel_ms),
						LOG_D("total_ms", rec.total_ms), LOG_S("error", rec.error)},
			   8);
}

/*
 * A final job: record it (provisionally while its kernel still runs); the waiter is answered once the record is
 * confirmed.
 */
static void job_finished(struct exec *ex, struct exec_job *job, bool kernel_still_running)
{
	job_record(ex, job, kernel_still_running);
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

enum acceld_err exec_cancel(struct exec *ex, const char *id, exec_done_fn done, void *arg)
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
		set_final(job, EXEC_CANCELLED, REASON_CANCELLED, "cancelled by DELETE /run/{id} while queued");
		job->cancel_done = done;
		job->cancel_arg = arg;
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

/* --- devices and their backends --- */

/* The index of ops among the worker's backends, or -1. */
static int worker_backend_index(const struct worker *w, const struct backend_ops *ops)
{
	for (unsigned i = 0; i < w->nbe; i++)
		if (w->be[i].ops == ops)
			return (int)i;
	return -1;
}

/* The index in be of the worker's default backend: the lowest rank of those that have not failed to open; -1. */
static int worker_default_index(const struct worker *w)
{
	int best = -1;

	for (unsigned i = 0; i < w->nbe; i++)
		if (!atomic_load(&w->be[i].failed) && (best < 0 || w->be[i].ops->rank < w->be[best].ops->rank))
			best = (int)i;
	return best;
}

/* The default backend of a worker whose thread runs, or NULL. */
static const struct backend_ops *worker_default(const struct worker *w)
{
	int b = w->started ? worker_default_index(w) : -1;

	return b >= 0 ? w->be[b].ops : NULL;
}

static size_t device_index(const struct exec *ex, const char *id)
{
	size_t d;

	for (d = 0; d < ex->ndevices; d++)
		if (strcmp(ex->devices[d].id, id) == 0)
			break;
	return d;
}

const struct device *exec_device(const struct exec *ex, const char *id)
{
	size_t d = device_index(ex, id);

	return d < ex->ndevices && worker_default(&ex->workers[d]) != NULL ? &ex->workers[d].dev : NULL;
}

const char *exec_device_backend(const struct exec *ex, const char *id)
{
	size_t d = device_index(ex, id);
	const struct backend_ops *ops = d < ex->ndevices ? worker_default(&ex->workers[d]) : NULL;

	return ops ? ops->name : NULL;
}

const struct backend_ops *exec_device_backend_ops(const struct exec *ex, const char *id, const char *backend)
{
	size_t d = device_index(ex, id);
	const struct worker *w = d < ex->ndevices ? &ex->workers[d] : NULL;

	if (w == NULL || backend == NULL || backend[0] == '\0')
		return w != NULL ? worker_default(w) : NULL;
	for (unsigned i = 0; i < w->nbe; i++)
		if (strcmp(w->be[i].ops->name, backend) == 0)
			return w->be[i].ops;
	return NULL;
}

/* --- placement --- */

void exec_refuse(struct exec_refusal *why, enum acceld_err err, enum reason reason, const char *fmt, ...)
{
	va_list ap;

	why->err = err;
	why->reason = reason;
	va_start(ap, fmt);
	vsnprintf(why->detail, sizeof(why->detail), fmt, ap);
	va_end(ap);
}

static bool tiny_job(const struct exec_job *job)
{
	return job->flops < 2e6 && job->bytes < 4e6;
}

/*
 * Whether a placed job runs on the submitting thread: tiny, on a backend that allows it and is open, and with
 * nothing queued or running on the device (so it overtakes no one and never waits); ex->mu held.
 */
static bool runs_inline(const struct worker *w, const struct exec_job *job)
{
	int b = worker_backend_index(w, job->chain_ops[0]);

	return b >= 0 && w->be[b].ops->inline_tiny && w->be[b].ready && w->qlen == 0 && w->running == NULL &&
	       job->bytes <= EXEC_INLINE_MAX_BYTES && job->flops <= EXEC_INLINE_MAX_FLOPS;
}

static enum exec_presence presence(struct exec *ex, size_t d)
{
	return ex->opts.presence ? ex->opts.presence(ex->opts.presence_ctx, &ex->devices[d]) : EXEC_PRESENT;
}

/*
 * Whether worker w can take the job with backend ops (NULL: none serves it); when not, fills why with the reason.
 * ex->mu held.
 */
static bool device_takes(struct exec *ex, const struct worker *w, const struct backend_ops *ops,
			 const struct exec_job *job, struct exec_refusal *why)
{
	enum reason reason = REASON_TOO_LARGE;
	char detail[400];

	if (ops == NULL) {
		char what[256];

		backend_describe(ex->backends, what, sizeof(what));
		if (job->req.backend[0] != '\0' && worker_default(w) != NULL)
			exec_refuse(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED, "%s: the requested backend is not available on "
			       "it (%s; asked: %s)", w->dev.id, what, job->req.backend);
		else if (w->nbe > 0 && !w->started)
			exec_refuse(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED, "%s: its worker thread could not be started "
			       "(see the log); it runs no jobs", w->dev.id);
		else
			exec_refuse(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED, "%s is not executable: no backend of acceld "
			       "serves it (%s)", w->dev.id, what);
		return false;
	}
	if (ops->admit != NULL &&
	    ops->admit(&w->dev, job->req.kernel, &job->req.shape, &reason, detail, sizeof(detail)) != ACCELD_OK) {
		exec_refuse(why, ACCELD_ETOOLARGE, reason, "%s", detail);
		return false;
	}
	return true;
}

/* Builds the fallback chain from the request's devices; returns ACCELD_OK or fills why. ex->mu held. */
static enum acceld_err place(struct exec *ex, struct exec_job *job, struct exec_refusal *why)
{
	const struct exec_request *req = &job->req;
	const struct backend_ops *named = NULL;
	struct exec_refusal first = {.err = ACCELD_OK};
	char first_dev[DEVICE_ID_MAX] = "";

	if (req->backend[0] != '\0') {
		char names[128];

		named = backend_find(ex->backends, req->backend);
		backend_names(ex->backends, names, sizeof(names));
		if (named == NULL) {
			exec_refuse(why, ACCELD_EINVAL, REASON_INVALID_VALUE, "no backend '%s'; acceld has %s", req->backend,
			       names);
			return why->err;
		}
	}
	for (unsigned i = 0; i < req->ndevices && job->nchain < EXEC_CHAIN_MAX; i++) {
		size_t d = device_index(ex, req->devices[i]);
		struct exec_refusal no = {.err = ACCELD_OK};
		struct worker *w;
		const struct backend_ops *ops;

		if (d == ex->ndevices) {
			if (i == 0 && req->pinned) {
				exec_refuse(why, ACCELD_ENOTFOUND, REASON_UNKNOWN_DEVICE,
				       "no device '%s' that acceld can run jobs on (see GET /devices; a device found after "
				       "start needs a restart of acceld to run jobs)",
				       req->devices[i]);
				return why->err;
			}
			exec_refuse(&no, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED,
			       "%s was found after acceld started; a restart of acceld runs jobs on it", req->devices[i]);
		} else {
			switch (presence(ex, d)) {
			case EXEC_GONE:
				if (i == 0 && req->pinned) {
					exec_refuse(why, ACCELD_ENOTFOUND, REASON_UNKNOWN_DEVICE,
					       "device '%s' is gone since acceld started (see GET /devices)",
					       req->devices[i]);
					return why->err;
				}
				continue;
			case EXEC_CHANGED:
				if (i == 0 && req->pinned) {
					exec_refuse(why, ACCELD_ECONFLICT, REASON_DEVICE_CHANGED,
					       "'%s' now names another device than the one acceld opened at start "
					       "(devices were added or removed); restart acceld to run jobs on it",
					       req->devices[i]);
					return why->err;
				}
				continue;
			case EXEC_PRESENT:
				break;
			}
			w = &ex->workers[d];
			ops = named ? (worker_backend_index(w, named) >= 0 && w->started ? named : NULL)
				    : worker_default(w);
			if (device_takes(ex, w, ops, job, &no)) {
				job->chain[job->nchain] = d;
				job->chain_ops[job->nchain] = ops;
				job->nchain++;
				if (!req->fallback)
					break;
				continue;
			}
		}
		/* this device cannot take the job: the first such one is what the job fell back from */
		if (job->nchain == 0 && first.err == ACCELD_OK) {
			first = no;
			snprintf(first_dev, sizeof(first_dev), "%s", req->devices[i]);
		}
		if (!req->fallback)
			break;
	}
	if (job->nchain == 0) {
		if (first.err != ACCELD_OK) {
			*why = first;
			return why->err;
		}
		exec_refuse(why, ACCELD_ECONFLICT, REASON_NO_MATCHING_DEVICE, "no device that acceld runs jobs on is left among "
		       "the candidates");
		return why->err;
	}
	if (first.err != ACCELD_OK) {
		job->fell_back = true;
		snprintf(job->fallback_from, sizeof(job->fallback_from), "%s", first_dev);
		snprintf(job->fallback_reason, sizeof(job->fallback_reason), "%.440s (%s)", first.detail,
			 reason_name(first.reason));
	} else if (req->fallback_from[0] != '\0') {
		job->fell_back = true;
		snprintf(job->fallback_from, sizeof(job->fallback_from), "%s", req->fallback_from);
		snprintf(job->fallback_reason, sizeof(job->fallback_reason), "%s", req->fallback_reason);
	}
	/* a tiny job never pays a launch when a later device's backend takes it on the spot */
	if (!req->pinned && req->backend[0] == '\0' && !job->chain_ops[0]->inline_tiny && tiny_job(job)) {
		for (unsigned i = 1; i < job->nchain; i++) {
			if (job->chain_ops[i]->inline_tiny) {
				size_t d = job->chain[i];
				const struct backend_ops *ops = job->chain_ops[i];

				memmove(&job->chain[1], &job->chain[0], i * sizeof(job->chain[0]));
				memmove(&job->chain_ops[1], &job->chain_ops[0], i * sizeof(job->chain_ops[0]));
				job->chain[0] = d;
				job->chain_ops[0] = ops;
				snprintf(job->placement, sizeof(job->placement),
					 "tiny job: runs on %s (%s) rather than paying a %s launch", ex->devices[d].id,
					 ops->name, job->chain_ops[1]->name);
				break;
			}
		}
	}
	if (job->placement[0] == '\0')
		snprintf(job->placement, sizeof(job->placement), "%s",
			 req->placement[0] ? req->placement : req->pinned ? "pinned by the request" : "the first candidate");
	return ACCELD_OK;
}

/* --- limits and estimates --- */

static enum acceld_err check_sizes(struct exec *ex, struct exec_job *job, struct exec_refusal *why)
{
	const struct exec_request *r = &job->req;
	uint64_t total = kernel_total_len(r->kernel, &r->shape);

	if (total > ex->opts.max_elements) {
		exec_refuse(why, ACCELD_ETOOLARGE, REASON_JOB_TOO_LARGE,
		       "the job needs %llu float32 elements in all; the limit is %llu (ACCELD_EXEC_MAX_ELEMENTS)",
		       (unsigned long long)total, (unsigned long long)ex->opts.max_elements);
		why->extra = json_pack("{s:I, s:I}", "elements", (json_int_t)(total > INT64_MAX ? INT64_MAX : total),
				       "limit", (json_int_t)ex->opts.max_elements);
		return why->err;
	}
	if (r->full && kernel_output_len(r->kernel, &r->shape) > FULL_MAX_ELEMENTS) {
		exec_refuse(why, ACCELD_ETOOLARGE, REASON_OUTPUT_TOO_LARGE,
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
static void rates(const struct worker *w, enum kernel_id k, double *gflops, double *gbps)
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
	job->flops = kernel_flops(job->req.kernel, &job->req.shape);
	job->bytes = kernel_bytes(job->req.kernel, &job->req.shape);
	job->done = done;
	job->done_arg = arg;
	job->usd_per_hour = NAN;
	job->reason = REASON_COUNT;

	pthread_mutex_lock(&ex->mu);
	if (ex->stop) {
		exec_refuse(why, ACCELD_EUNAVAILABLE, REASON_SHUTTING_DOWN, "the executor is stopping");
		rc = why->err;
		goto out;
	}
	rc = check_sizes(ex, job, why);
	if (rc != ACCELD_OK)
		goto out;
	rc = place(ex, job, why);
	if (rc != ACCELD_OK)
		goto out;
	first = &ex->workers[job->chain[0]];
	est = estimate_ms(first, job);
	if (est > (double)job->timeout_ms) {
		exec_refuse(why, ACCELD_EUNPROCESSABLE, REASON_WOULD_TIME_OUT,
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
	job->ops = job->chain_ops[0];
	exec_job_ref(job); /* the queue's reference, or the inline run's */
	if (runs_inline(first, job)) {
		here = job;
		job->state = EXEC_RUNNING;
		job->started_ns = clock_mono_ns();
		job->started_ms = clock_real_ms();
		first->inline_running++;
	} else if (!queue_push(ex, first, job)) {
		exec_job_unref(job);
		exec_refuse(why, ACCELD_EBUSY, REASON_QUEUE_FULL, "the queue of %s is full (%u jobs; ACCELD_EXEC_QUEUE_DEPTH)",
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

/* Opens a backend of the worker on first use; returns ACCELD_OK or the open error (message in err). */
static enum acceld_err worker_open(struct worker *w, int b, char *err, size_t errsz)
{
	struct worker_backend *be = &w->be[b];

	if (!be->opened) {
		be->opened = true;
		be->open_err = be->ops->open(&w->dev, w->threads, &be->state, be->open_msg, sizeof(be->open_msg));
		if (be->open_err != ACCELD_OK) {
			be->state = NULL;
			atomic_store(&be->failed, true);
			log_fields(LOGL_ERROR, "exec", "backend failed to open",
				   (struct log_field[]){LOG_S("device", w->dev.id), LOG_S("backend", be->ops->name),
							LOG_S("error", be->open_msg)},
				   3);
		}
	}
	if (be->open_err != ACCELD_OK)
		snprintf(err, errsz, "%s", be->open_msg);
	return be->open_err;
}

/*
 * Runs job with worker w's backend (ex->mu not held), preparing and checking it on pool. Returns the backend's
 * error; the job's results are filled on success.
 */
static enum acceld_err run_job(struct worker *w, struct pool *pool, struct exec_job *job, char *err, size_t errsz)
{
	struct exec *ex = w->ex;
	struct exec_request *r = &job->req;
	struct backend_work work;
	struct backend_timing timing = {0};
	float *gen[KERNEL_MAX_INPUTS] = {NULL, NULL, NULL};
	float *out = NULL;
	uint64_t t0 = clock_mono_ns();
	double prepare_ms;
	size_t out_len = (size_t)kernel_output_len(r->kernel, &r->shape);
	int b = worker_backend_index(w, job->ops);
	enum acceld_err rc;

	memset(&work, 0, sizeof(work));
	work.kernel = r->kernel;
	work.m = (size_t)r->shape.m;
	work.n = (size_t)r->shape.n;
	work.k = (size_t)r->shape.k;
	work.alpha = r->alpha;
	work.beta = r->beta;
	work.s = r->s;
	work.precision = r->precision;
	work.deadline_ns = job->deadline_ns;
	timing.compile_ms = NAN;
	timing.cached = -1;
	rc = worker_open(w, b, err, errsz);
	if (rc != ACCELD_OK)
		goto out;
	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++) {
		size_t len = (size_t)kernel_input_len(r->kernel, &r->shape, i);

		if (len == 0)
			continue;
		if (r->inputs[i] != NULL) {
			work.in[i] = r->inputs[i];
			continue;
		}
		if (kernel_input_optional(r->kernel, i) && (r->has_inputs || r->beta == 0.0f))
			continue; /* sgemm's C left out: zeros */
		gen[i] = jobdata_alloc(len);
		if (gen[i] == NULL) {
			snprintf(err, errsz, "cannot allocate %zu bytes for input %u", len * sizeof(float), i);
			rc = ACCELD_ENOMEM;
			goto out;
		}
		jobdata_generate(pool, gen[i], len, r->seed, i);
		work.in[i] = gen[i];
	}
	if (r->kernel != KERNEL_DOT) {
		out = jobdata_alloc(out_len);
		if (out == NULL) {
			snprintf(err, errsz, "cannot allocate %zu bytes for the output", out_len * sizeof(float));
			rc = ACCELD_ENOMEM;
			goto out;
		}
		work.out = out;
	}
	prepare_ms = ms_between(t0, clock_mono_ns());
	rc = job->ops->run(w->be[b].state, &work, &timing, err, errsz);
	if (rc != ACCELD_OK)
		goto out;
	job->dot = work.dot;
	if (r->kernel == KERNEL_DOT)
		jobdata_summarise_value(work.dot, &job->summary);
	else
		jobdata_summarise(pool, out, out_len, &job->summary);
	if (r->verify) {
		jobdata_verify(pool, &work, &job->verification);
		job->verify_done = true;
	}
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
	job->compile_ms = timing.compile_ms;
	job->cached = timing.cached;
	job->precision = work.precision;
	job->ran = true;
	pthread_mutex_unlock(&ex->mu);
out:
	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++) {
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
	if (job->kernel_ms < MEASURE_MIN_MS || job->ops != job->chain_ops[0])
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
	ex->opts.on_job_start(ex->opts.on_job_start_ctx, &rec);
}

/* Whether a failure of the device lets the job move on to the next one in its chain. */
static bool device_failure(enum acceld_err rc)
{
	return rc == ACCELD_EDEVICE || rc == ACCELD_EUNSUPPORTED || rc == ACCELD_ENOMEM || rc == ACCELD_EHELD ||
	       rc == ACCELD_EDEVMEM;
}

/*
 * Where in its chain a job moves on to after its device failed with rc: the next device, or, when another process
 * holds the devices (ACCELD_EHELD), the next one that another backend serves: the held backend's other devices are
 * held too (one PJRT client per plugin and process).
 */
static unsigned next_in_chain(const struct exec_job *job, enum acceld_err rc)
{
	unsigned to = job->at + 1;

	while (rc == ACCELD_EHELD && to < job->nchain && job->chain_ops[to] == job->ops)
		to++;
	return to;
}

/* Runs a job the worker took from its queue, or (here) one the submitting thread runs inline, and finishes it. */
static void worker_step(struct worker *w, struct exec_job *job, bool here)
{
	struct exec *ex = w->ex;
	char err[640] = "";
	enum acceld_err rc;
	bool requeued = false;
	bool answered_already;

	double usd_per_hour;

	job_started(ex, job);
	rc = run_job(w, here ? ex->serial : ex->host, job, err, sizeof(err));
	usd_per_hour = ex->opts.price ? ex->opts.price(ex->opts.price_ctx, &w->dev) : w->dev.price.usd_per_hour;

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
			set_final(job, EXEC_SUCCEEDED, REASON_COUNT, NULL);
	} else if (!answered_already && device_failure(rc) && job->req.fallback && next_in_chain(job, rc) < job->nchain &&
		   !ex->stop) {
		unsigned to = next_in_chain(job, rc);
		struct worker *next = &ex->workers[job->chain[to]];

		if (next->qlen < ex->opts.queue_depth) {
			job->at = to;
			job->fell_back = true;
			snprintf(job->fallback_from, sizeof(job->fallback_from), "%s", w->dev.id);
			snprintf(job->fallback_reason, sizeof(job->fallback_reason), "%s failed (%s): %.440s", w->dev.id,
				 reason_name(acceld_err_to_reason(rc)), err);
			snprintf(job->device_id, sizeof(job->device_id), "%s", next->dev.id);
			job->ops = job->chain_ops[job->at];
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
		/* a backend that gave up at the deadline may say so before the reaper does */
		if (!answered_already)
			set_final(job, rc == ACCELD_ETIMEOUT ? EXEC_TIMED_OUT : EXEC_FAILED, acceld_err_to_reason(rc), err);
	}
	if (!requeued)
		job->usd_per_hour = usd_per_hour;
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

	/* the device's default backend opens at once, so the first job does not pay for a program build; one that
	 * cannot open leaves the next one the default */
	for (int b = worker_default_index(w); b >= 0; b = worker_default_index(w)) {
		if (worker_open(w, b, err, sizeof(err)) == ACCELD_OK) {
			pthread_mutex_lock(&ex->mu);
			w->be[b].ready = true; /* its state is complete: tiny jobs may run inline from now on */
			pthread_mutex_unlock(&ex->mu);
			break;
		}
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
	for (unsigned b = 0; b < w->nbe; b++)
		if (w->be[b].state != NULL)
			w->be[b].ops->close(w->be[b].state);
	return NULL;
}

/* --- the reaper: deadlines of queued and running jobs --- */

/* The first job of ex whose deadline has passed at now, made final under ex->mu (and *running said); or NULL, with
 * *next lowered to the nearest deadline still ahead. */
static struct exec_job *reap_one(struct exec *ex, uint64_t now, uint64_t *next, bool *running)
{
	for (size_t d = 0; d < ex->ndevices; d++) {
		struct worker *w = &ex->workers[d];
		struct exec_job *j = w->running;

		for (unsigned i = 0; i < w->qlen; i++) {
			j = w->queue[i];
			if (j->deadline_ns <= now) {
				queue_remove(w, i);
				set_final(j, EXEC_TIMED_OUT, REASON_TIMED_OUT, NULL);
				snprintf(j->error, sizeof(j->error), "waited in the queue of %s past its timeout of %llu ms",
					 w->dev.id, (unsigned long long)j->timeout_ms);
				*running = false;
				return j; /* the queue's reference goes to the caller */
			}
			if (j->deadline_ns < *next)
				*next = j->deadline_ns;
		}
		j = w->running;
		if (j == NULL || j->state != EXEC_RUNNING)
			continue;
		if (j->deadline_ns > now) {
			if (j->deadline_ns < *next)
				*next = j->deadline_ns;
			continue;
		}
		exec_job_ref(j);
		j->running_timed_out = true;
		j->state = EXEC_TIMED_OUT;
		j->reason = REASON_TIMED_OUT;
		snprintf(j->error, sizeof(j->error),
			 "ran past its timeout of %llu ms on %s; a running kernel cannot be interrupted, so its result "
			 "will be dropped",
			 (unsigned long long)j->timeout_ms, w->dev.id);
		*running = true;
		return j;
	}
	return NULL;
}

static void *reaper_main(void *arg)
{
	struct exec *ex = arg;

	pthread_mutex_lock(&ex->mu);
	while (!ex->stop) {
		uint64_t now = clock_mono_ns();
		uint64_t next = now + 1000000000ull;
		bool running = false;
		struct exec_job *expired = reap_one(ex, now, &next, &running);
		struct timespec ts;

		if (expired != NULL) {
			pthread_mutex_unlock(&ex->mu);
			job_finished(ex, expired, running);
			exec_job_unref(expired); /* the queue's reference, or the one taken for a running job */
			pthread_mutex_lock(&ex->mu);
			continue;
		}
		/* a record whose commit stalls: the job is answered anyway, recorded false (the record stays queued) */
		expired = ex->await_head;
		if (expired != NULL && expired->await_due_ns <= now) {
			exec_done_fn cancel_done = expired->cancel_done;
			void *cancel_arg = expired->cancel_arg;

			await_remove(ex, expired);
			expired->confirmed = true;
			expired->recorded_ok = false;
			expired->cancel_done = NULL;
			exec_job_ref(expired);
			pthread_cond_broadcast(&ex->final_cv);
			pthread_mutex_unlock(&ex->mu);
			log_fields(LOGL_WARN, "exec", "job answered before its record was durable",
				   (struct log_field[]){LOG_S("id", expired->id)}, 1);
			job_notify(ex, expired);
			if (cancel_done)
				cancel_done(cancel_arg, expired);
			exec_job_unref(expired);
			pthread_mutex_lock(&ex->mu);
			continue;
		}
		if (expired != NULL && expired->await_due_ns < next)
			next = expired->await_due_ns;
		ts = clock_deadline(CLOCK_MONOTONIC, next > now ? next - now : 0);
		pthread_cond_timedwait(&ex->reaper_cv, &ex->mu, &ts);
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
	if (d->cpu.pus > 0 && d->cpu.pus < pool_usable_cpus())
		return d->cpu.pus;
	return pool_usable_cpus();
}

/* The backends of ex that serve w's device. */
static void worker_backends(struct exec *ex, struct worker *w)
{
	for (size_t b = 0; ex->backends[b] != NULL && w->nbe < BACKENDS_MAX; b++) {
		if (!ex->backends[b]->serves(&w->dev))
			continue;
		if (ex->backends[b]->attach != NULL)
			ex->backends[b]->attach(&w->dev);
		atomic_init(&w->be[w->nbe].failed, false);
		w->be[w->nbe++].ops = ex->backends[b];
	}
}

static int start_thread(const struct exec *ex, pthread_t *t, void *(*fn)(void *), void *arg)
{
	return ex->opts.thread_create ? ex->opts.thread_create(t, fn, arg) : pthread_create(t, NULL, fn, arg);
}

static bool opts_valid(const struct exec_opts *o)
{
	return o->max_elements > 0 && o->queue_depth > 0 && o->default_timeout_ms > 0 && o->max_timeout_ms > 0 &&
	       o->recent > 0 && (o->ndevices == 0 || o->devices != NULL);
}

enum acceld_err exec_new(const struct exec_opts *opts, struct exec **out)
{
	struct exec *ex;
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (!opts_valid(opts))
		return ACCELD_EINVAL;
	ex = xcalloc(1, sizeof(*ex));
	ex->opts = *opts;
	ex->backends = opts->backends ? opts->backends : backend_builtin;
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
	ex->host = pool_new(0);
	ex->serial = pool_new(1);
	for (size_t d = 0; d < ex->ndevices; d++) {
		struct worker *w = &ex->workers[d];

		w->ex = ex;
		w->index = d;
		w->dev = ex->devices[d];
		w->threads = w->dev.type == DEVICE_CPU ? cpu_threads(opts, &w->dev) : 1;
		pthread_cond_init(&w->cv, NULL);
		w->queue = xcalloc(ex->opts.queue_depth, sizeof(w->queue[0]));
		worker_backends(ex, w);
	}
	/* every backend knows all of its devices before any worker opens one */
	for (size_t d = 0; d < ex->ndevices; d++) {
		struct worker *w = &ex->workers[d];

		if (w->nbe == 0)
			continue;
		rc = start_thread(ex, &w->thread, worker_main, w);
		if (rc == 0) {
			w->started = true;
			continue;
		}
		log_fields(LOGL_ERROR, "exec", "cannot start the worker thread of a device; it runs no jobs",
			   (struct log_field[]){LOG_S("device", w->dev.id), LOG_S("error", strerror(rc))}, 2);
	}
	rc = start_thread(ex, &ex->reaper, reaper_main, ex);
	if (rc != 0) {
		log_fields(LOGL_ERROR, "exec", "cannot start the thread that enforces job deadlines; no job runs",
			   (struct log_field[]){LOG_S("error", strerror(rc))}, 1);
		exec_free(ex);
		return ACCELD_EUNAVAILABLE;
	}
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
			set_final(j, EXEC_CANCELLED, REASON_SHUTTING_DOWN, "the executor stopped before the job ran");
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
		tick = clock_deadline(CLOCK_REALTIME, 10 * 1000 * 1000); /* final_cv runs on the default clock */
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
	/* records not answered yet will call exec_job_recorded: wait for them (the store answers within seconds) */
	pthread_mutex_lock(&ex->mu);
	for (int tries = 0; ex->unconfirmed > 0 && tries < 500; tries++) {
		struct timespec tick = clock_deadline(CLOCK_REALTIME, 10 * 1000 * 1000);

		pthread_cond_timedwait(&ex->final_cv, &ex->mu, &tick);
	}
	if (ex->unconfirmed > 0) {
		pthread_mutex_unlock(&ex->mu);
		log_fields(LOGL_WARN, "exec", "job records still unanswered; the executor is left allocated",
			   (struct log_field[]){LOG_I("records", ex->unconfirmed)}, 1);
		return;
	}
	pthread_mutex_unlock(&ex->mu);
	for (unsigned i = 0; i < ex->ring_len; i++)
		exec_job_unref(ring_at(ex, i));
	pool_free(ex->host);
	pool_free(ex->serial);
	pthread_cond_destroy(&ex->final_cv);
	pthread_cond_destroy(&ex->reaper_cv);
	pthread_mutex_destroy(&ex->mu);
	free(ex->ring);
	free(ex->workers);
	free(ex->devices);
	free(ex);
}

/* --- JSON --- */

json_t *exec_job_json(struct exec_job *job)
{
	struct exec *ex = job->ex;
	const struct exec_request *r = &job->req;
	const struct device *dev;
	struct jobdoc d;
	uint64_t end;
	bool pending;
	json_t *o;

	jobdoc_init(&d);
	pthread_mutex_lock(&ex->mu);
	dev = &ex->workers[job->chain[job->at]].dev;
	/* a final job whose record is not confirmed yet shows as it was before it ended */
	pending = is_final(job->state) && !job->confirmed;
	end = job->finished_ns && !pending ? job->finished_ns : clock_mono_ns();
	d.id = job->id;
	d.state = exec_state_name(shown_state(job));
	d.kernel = r->kernel;
	d.shape = r->shape;
	d.device = job->device_id;
	d.backend = job->ops ? job->ops->name : NULL;
	d.has_request = true;
	d.alpha = r->alpha;
	d.beta = r->beta;
	d.s = r->s;
	d.seed = r->seed;
	d.inline_inputs = r->has_inputs;
	d.full = r->full;
	d.timeout_ms = job->timeout_ms;
	d.placement = job->placement;
	d.fell_back = job->fell_back;
	d.fallback_from = job->fallback_from;
	d.fallback_reason = job->fallback_reason;
	d.created_ms = job->created_ms;
	d.started_ms = job->started_ms;
	d.finished_ms = pending ? 0 : job->finished_ms;
	d.queued_ms = ms_between(job->created_ns, job->started_ns ? job->started_ns : end);
	d.precision_asked = r->precision;
	d.precision = job->ran && !pending ? (int)job->precision : -1;
	if (job->ran && !pending) {
		d.prepare_ms = job->prepare_ms;
		d.transfer_ms = job->transfer_ms;
		d.kernel_ms = job->kernel_ms;
		d.compile_ms = job->compile_ms;
		d.cached = job->cached;
		d.summary = &job->summary;
		d.dot = job->dot;
		d.output = job->output;
		d.output_len = job->out_len;
		d.verification = job->verify_done ? &job->verification : NULL;
	}
	if (job->finished_ns && !pending)
		d.total_ms = ms_between(job->created_ns, job->finished_ns);
	d.flops = job->flops;
	d.bytes = job->bytes;
	d.peak_gflops = dev->peak.fp32_tflops * 1000.0;
	d.peak_gbps = dev->peak.memory_bandwidth_gbps;
	if (is_final(job->state) && !pending)
		d.cost_usd = job_cost(job);
	if (job->error[0] && !pending) {
		d.error_reason = reason_name(job->reason == REASON_COUNT ? REASON_INTERNAL : job->reason);
		d.error_detail = job->error;
	}
	o = jobdoc_json(&d);
	json_object_set_new(o, "recorded", json_boolean(job->recorded_ok));
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

		if ((after != 0 && j->seq >= after) || (state >= 0 && (int)shown_state(j) != state))
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

/* The worker of a device id, or NULL; ex->mu held. */
static struct worker *worker_of(struct exec *ex, const char *device_id)
{
	size_t d = device_index(ex, device_id);

	return d < ex->ndevices ? &ex->workers[d] : NULL;
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
	if (w != NULL && worker_default(w) == NULL)
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
