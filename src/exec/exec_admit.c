/*
 * exec_admit: admission of a job: placement on the request's devices (the fallback chain), the limits on its sizes,
 * the estimate that refuses a job that cannot finish in time, and submission to a queue or to the submitting thread.
 */
#include "exec/exec.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/mem.h"
#include "core/reason.h"
#include "exec/backend.h"
#include "exec/exec_int.h"
#include "exec/kernel.h"

#define FULL_MAX_ELEMENTS 262144u /* largest output returned whole */

/* --- placement --- */

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
	int b = exec_worker_backend_index(w, job->chain_ops[0]);

	return b >= 0 && w->be[b].ops->inline_tiny && w->be[b].ready && w->qlen == 0 && w->running == NULL &&
	       job->bytes <= EXEC_INLINE_MAX_BYTES && job->flops <= EXEC_INLINE_MAX_FLOPS;
}

static enum exec_presence presence(struct exec *ex, size_t d)
{
	return ex->opts.presence ? ex->opts.presence(ex->opts.presence_ctx, &ex->devices[d]) : EXEC_PRESENT;
}

/*
 * Whether the job's buffers fit the memory of w's device that other processes leave free: true unless the latest
 * sample says less is free than the job needs though the device's total would hold it (more than the total is the
 * backend's EXCEEDS_DEVICE_MEMORY), and the processes NVML lists hold the difference (what acceld's own workers hold is
 * theirs to reuse). Then why is DEVICE_BUSY naming the holders: the job would otherwise wait for its runtime (a PJRT
 * client and its compile) only to fail for memory. An unknown figure refuses nothing. ex->mu held.
 */
static bool memory_left(struct exec *ex, const struct worker *w, const struct exec_job *job, struct refusal *why)
{
	uint64_t len = kernel_total_len(job->req.kernel, &job->req.shape);
	uint64_t need = len > UINT64_MAX / sizeof(float) ? UINT64_MAX : len * sizeof(float);
	uint64_t total = w->dev.memory_total_bytes, available = 0, own = 0;
	struct holder who[HOLDERS_MAX];
	char names[400];
	size_t n;

	if (ex->opts.memory_now == NULL)
		return true;
	ex->opts.memory_now(ex->opts.memory_now_ctx, &w->dev, &available, NULL, 0, NULL);
	if (available == 0 || total == 0 || need > total || need <= available)
		return true;
	n = ex->opts.memory_now(ex->opts.memory_now_ctx, &w->dev, &available, who, HOLDERS_MAX, &own);
	if (n == 0 || available == 0 || need <= available + own)
		return true;
	holders_text(who, n, names, sizeof(names));
	refusal_set(why, ACCELD_EHELD, REASON_DEVICE_BUSY,
		    "%s's memory is held by %s (NVML's running processes): %" PRIu64 " of its %" PRIu64
		    " bytes are free, and the job's buffers take %" PRIu64 " bytes",
		    w->dev.id, names, available + own, total, need);
	return false;
}

/*
 * Whether worker w can take the job with backend ops (NULL: none serves it); when not, fills why with the reason.
 * ex->mu held.
 */
static bool device_takes(struct exec *ex, const struct worker *w, const struct backend_ops *ops,
			 const struct exec_job *job, struct refusal *why)
{
	enum reason reason = REASON_TOO_LARGE;
	char detail[400];

	if (ops == NULL) {
		char what[256];

		backend_describe(ex->backends, what, sizeof(what));
		if (job->req.backend[0] != '\0' && exec_worker_default(w) != NULL)
			refusal_set(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED,
				    "%s: the requested backend is not available on it (%s; asked: %s)", w->dev.id, what,
				    job->req.backend);
		else if (w->nbe > 0 && !w->started)
			refusal_set(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED,
				    "%s: its worker thread could not be started (see the log); it runs no jobs",
				    w->dev.id);
		else
			refusal_set(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED,
				    "%s is not executable: no backend of acceld serves it (%s)", w->dev.id, what);
		return false;
	}
	if (ops->admit != NULL &&
	    ops->admit(&w->dev, job->req.kernel, &job->req.shape, &reason, detail, sizeof(detail)) != ACCELD_OK) {
		refusal_set(why, ACCELD_ETOOLARGE, reason, "%s", detail);
		return false;
	}
	return !ops->on_device || memory_left(ex, w, job, why);
}

/* Builds the fallback chain from the request's devices; returns ACCELD_OK or fills why. ex->mu held. */
static enum acceld_err build_fallback_chain(struct exec *ex, struct exec_job *job, struct refusal *why)
{
	const struct exec_request *req = &job->req;
	const struct backend_ops *named = NULL;
	struct refusal first = {.err = ACCELD_OK};
	char first_dev[DEVICE_ID_MAX] = "";

	if (req->backend[0] != '\0') {
		char names[128];

		named = backend_find(ex->backends, req->backend);
		backend_names(ex->backends, names, sizeof(names));
		if (named == NULL) {
			refusal_set(why, ACCELD_EINVAL, REASON_INVALID_VALUE, "no backend '%s'; acceld has %s",
				    req->backend, names);
			return why->err;
		}
	}
	for (unsigned i = 0; i < req->ndevices && job->nchain < EXEC_CHAIN_MAX; i++) {
		size_t d = exec_device_index(ex, req->devices[i]);
		struct refusal no = {.err = ACCELD_OK};
		struct worker *w;
		const struct backend_ops *ops;

		if (d == ex->ndevices) {
			if (i == 0 && req->pinned) {
				refusal_set(why, ACCELD_ENOTFOUND, REASON_UNKNOWN_DEVICE,
					    "no device '%s' that acceld can run jobs on (see GET /devices; a device "
					    "found after start needs a restart of acceld to run jobs)",
					    req->devices[i]);
				return why->err;
			}
			refusal_set(&no, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED,
				    "%s was found after acceld started; a restart of acceld runs jobs on it",
				    req->devices[i]);
		} else {
			switch (presence(ex, d)) {
			case EXEC_GONE:
				if (i == 0 && req->pinned) {
					refusal_set(why, ACCELD_ENOTFOUND, REASON_UNKNOWN_DEVICE,
						    "device '%s' is gone since acceld started (see GET /devices)",
						    req->devices[i]);
					return why->err;
				}
				continue;
			case EXEC_CHANGED:
				if (i == 0 && req->pinned) {
					refusal_set(why, ACCELD_ECONFLICT, REASON_DEVICE_CHANGED,
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
			ops = named ? (exec_worker_backend_index(w, named) >= 0 && w->started ? named : NULL)
				    : exec_worker_default(w);
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
		refusal_set(why, ACCELD_ECONFLICT, REASON_NO_MATCHING_DEVICE,
			    "no device that acceld runs jobs on is left among the candidates");
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
			 req->placement[0] ? req->placement
					   : req->pinned ? "pinned by the request" : "the first candidate");
	return ACCELD_OK;
}

/* --- limits and estimates --- */

static enum acceld_err check_sizes(struct exec *ex, struct exec_job *job, struct refusal *why)
{
	const struct exec_request *r = &job->req;
	uint64_t total = kernel_total_len(r->kernel, &r->shape);

	if (total > ex->opts.max_elements) {
		refusal_set(why, ACCELD_ETOOLARGE, REASON_JOB_TOO_LARGE,
			    "the job needs %llu float32 elements in all; the limit is %llu (ACCELD_EXEC_MAX_ELEMENTS)",
			    (unsigned long long)total, (unsigned long long)ex->opts.max_elements);
		why->extra = json_pack("{s:I, s:I}", "elements", (json_int_t)(total > INT64_MAX ? INT64_MAX : total),
				       "limit", (json_int_t)ex->opts.max_elements);
		return why->err;
	}
	if (r->full && kernel_output_len(r->kernel, &r->shape) > FULL_MAX_ELEMENTS) {
		refusal_set(why, ACCELD_ETOOLARGE, REASON_OUTPUT_TOO_LARGE,
			    "return=full is limited to outputs of %u elements; ask for return=summary",
			    FULL_MAX_ELEMENTS);
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
	else if (!isnan(d->peak.memory_gbytes_per_s) && d->peak.memory_gbytes_per_s > 0)
		*gbps = d->peak.memory_gbytes_per_s;
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
			    struct exec_job **out, struct refusal *why)
{
	struct exec_job *job = xcalloc(1, sizeof(*job));
	enum acceld_err rc;
	struct worker *first = NULL;
	struct exec_job *inline_job = NULL; /* a tiny job this thread runs itself */
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
		refusal_set(why, ACCELD_EUNAVAILABLE, REASON_SHUTTING_DOWN, "the executor is stopping");
		rc = why->err;
		goto out;
	}
	rc = check_sizes(ex, job, why);
	if (rc != ACCELD_OK)
		goto out;
	rc = build_fallback_chain(ex, job, why);
	if (rc != ACCELD_OK)
		goto out;
	first = &ex->workers[job->chain[0]];
	est = estimate_ms(first, job);
	if (est > (double)job->timeout_ms) {
		refusal_set(why, ACCELD_EUNPROCESSABLE, REASON_WOULD_TIME_OUT,
			    "the job would take at least %.1f ms on %s, more than its timeout of %llu ms; raise "
			    "timeout_ms or shrink the job",
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
		inline_job = job;
		job->state = EXEC_RUNNING;
		job->started_ns = clock_mono_ns();
		job->started_ms = clock_real_ms();
		first->inline_running++;
	} else if (!exec_queue_push(ex, first, job)) {
		exec_job_unref(job);
		refusal_set(why, ACCELD_EBUSY, REASON_QUEUE_FULL,
			    "the queue of %s is full (%u jobs; ACCELD_EXEC_QUEUE_DEPTH)", first->dev.id,
			    ex->opts.queue_depth);
		rc = why->err;
		goto out;
	}
	exec_ring_add(ex, job);
	*out = job;
	job = NULL;
	rc = ACCELD_OK;
out:
	pthread_mutex_unlock(&ex->mu);
	if (job != NULL) {
		job->done = NULL;
		exec_job_unref(job);
	}
	if (inline_job != NULL)
		exec_worker_step(first, inline_job, true);
	return rc;
}
