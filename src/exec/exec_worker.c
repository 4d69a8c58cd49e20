/*
 * exec_worker: a device's worker runs the jobs of its queue (and a tiny job runs the same way on the thread that
 * submitted it), moves a job that its device failed on to the next device of its chain, and teaches the estimator
 * the rates it measured; the reaper ends jobs past their deadlines and answers jobs whose record stalls.
 */
#include "exec/exec.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/err.h"
#include "core/log.h"
#include "core/reason.h"
#include "exec/exec_int.h"
#include "exec/jobdata.h"
#include "exec/kernel.h"

#define MEASURE_MIN_MS 10.0 /* jobs shorter than this do not teach the estimator a rate */

/* --- devices and their backends: which backend of a worker runs a job --- */

int exec_worker_backend_index(const struct worker *w, const struct backend_ops *ops)
{
	for (unsigned i = 0; i < w->nbe; i++)
		if (w->be[i].ops == ops)
			return (int)i;
	return -1;
}

int exec_worker_default_index(const struct worker *w)
{
	int best = -1;

	for (unsigned i = 0; i < w->nbe; i++)
		if (!atomic_load(&w->be[i].failed) && (best < 0 || w->be[i].ops->rank < w->be[best].ops->rank))
			best = (int)i;
	return best;
}

const struct backend_ops *exec_worker_default(const struct worker *w)
{
	int b = w->started ? exec_worker_default_index(w) : -1;

	return b >= 0 ? w->be[b].ops : NULL;
}

size_t exec_device_index(const struct exec *ex, const char *id)
{
	size_t d;

	for (d = 0; d < ex->ndevices; d++)
		if (strcmp(ex->devices[d].id, id) == 0)
			break;
	return d;
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
 *
 * What crosses the link: a backend with a device of its own (ops->on_device) makes generated inputs there, keeps
 * the output there unless the request returns it (return full) or a full verification needs it, and sends back
 * the output's sample, which the summary and sampled verification read. Other backends get every input and an
 * output on the host, and the sample is taken from that output here.
 */
static enum acceld_err run_job(struct worker *w, struct pool *pool, struct exec_job *job, char *err, size_t errsz)
{
	struct exec *ex = w->ex;
	struct exec_request *r = &job->req;
	struct kernel_work work;
	struct backend_timing timing = {0};
	float *gen[KERNEL_MAX_INPUTS] = {NULL, NULL, NULL};
	float *out = NULL;
	float *sample = NULL;
	struct kernel_sample smp = {0};
	uint64_t t0 = clock_mono_ns();
	uint64_t tg, tv;
	double prepare_ms, host_gen_ms, verify_ms = NAN;
	size_t out_len = (size_t)kernel_output_len(r->kernel, &r->shape);
	int b = exec_worker_backend_index(w, job->ops);
	bool on_dev = job->ops->on_device;
	bool full_verify = r->verify && r->verify_full;
	bool want_out = !on_dev || r->full || full_verify;
	bool device_sample = on_dev && !want_out; /* the output stays on the device: only its sample comes back */
	enum acceld_err rc;

	memset(&work, 0, sizeof(work));
	work.kernel = r->kernel;
	work.m = (size_t)r->shape.m;
	work.n = (size_t)r->shape.n;
	work.k = (size_t)r->shape.k;
	work.alpha = r->alpha;
	work.beta = r->beta;
	work.scale = r->scale;
	work.precision = r->precision;
	work.deadline_ns = job->deadline_ns;
	work.seed = r->seed;
	work.generate = on_dev && !r->has_inputs;
	if (work.generate) {
		double bytes = 0.0;

		for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
			if (kernel_input_generated(&work, i))
				bytes += 4.0 * (double)kernel_input_len(r->kernel, &r->shape, i);
		work.generate = bytes >= EXEC_DEVICE_GENERATE_MIN_BYTES;
	}
	timing.compile_ms = NAN;
	timing.cached = -1;
	rc = worker_open(w, b, err, errsz);
	if (rc != ACCELD_OK)
		goto out;
	tg = clock_mono_ns();
	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++) {
		size_t len = (size_t)kernel_input_len(r->kernel, &r->shape, i);

		if (len == 0)
			continue;
		if (r->inputs[i] != NULL) {
			work.in[i] = r->inputs[i];
			continue;
		}
		if (r->has_inputs || !kernel_input_generated(&work, i))
			continue; /* an optional input left out: zeros */
		if (work.generate && !full_verify)
			continue; /* made on the device, and no reference needs it whole */
		gen[i] = jobdata_alloc(len);
		if (gen[i] == NULL) {
			snprintf(err, errsz, "cannot allocate %zu bytes for input %u", len * sizeof(float), i);
			rc = ACCELD_ENOMEM;
			goto out;
		}
		jobdata_generate(pool, gen[i], len, r->seed, i);
		if (!work.generate)
			work.in[i] = gen[i]; /* else the full reference's copy: the device makes its own */
	}
	host_gen_ms = exec_ms_between(tg, clock_mono_ns());
	if (kernel_output_rank(r->kernel) > 0) {
		/* the sample: what comes back of an output that stays on the device, and what sampled verification reads
		 * (taken here from an output that came back) */
		bool sampled = device_sample || (r->verify && !full_verify);

		kernel_sample_of(r->kernel, &r->shape, r->seed, &smp);
		work.grid = smp;
		if (!sampled)
			smp.count = 0;
		sample = sampled ? jobdata_alloc(smp.count) : NULL;
		if (want_out)
			out = jobdata_alloc(out_len);
		if ((sampled && sample == NULL) || (want_out && out == NULL)) {
			snprintf(err, errsz, "cannot allocate %zu bytes for the output", out_len * sizeof(float));
			rc = ACCELD_ENOMEM;
			goto out;
		}
		work.out = out;
		if (device_sample) {
			work.sample = sample;
			work.nsample = smp.count;
		}
	}
	prepare_ms = exec_ms_between(t0, clock_mono_ns()) - host_gen_ms;
	rc = job->ops->run(w->be[b].state, &work, &timing, err, errsz);
	if (rc != ACCELD_OK)
		goto out;
	if (sample != NULL && !device_sample) /* the host holds the output: its sample is taken here */
		for (size_t j = 0; j < smp.count; j++)
			sample[j] = out[kernel_sample_index(&smp, j)];
	work.sample = sample;
	work.nsample = smp.count;
	job->value = work.value;
	if (kernel_output_rank(r->kernel) == 0) {
		jobdata_summarise_value(work.value, &job->summary);
	} else if (out != NULL) {
		jobdata_summarise(pool, out, out_len, &job->summary);
	} else {
		jobdata_summarise(pool, sample, smp.count, &job->summary);
		job->summary.sampled = smp.count < out_len;
	}
	tv = clock_mono_ns();
	if (full_verify) {
		for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
			if (gen[i] != NULL)
				work.in[i] = gen[i];
		kernel_verify(pool, &work, &job->verification);
		job->verify_done = true;
	} else if (r->verify) {
		kernel_verify_sample(pool, &work, &job->verification);
		job->verify_done = true;
	}
	if (r->verify)
		verify_ms = exec_ms_between(tv, clock_mono_ns());
	if (r->full && out != NULL) {
		job->output = out;
		job->out_len = out_len;
		out = NULL;
	}
	/* GET /run/{id} reads a running job under ex->mu: the results are published there, ran last */
	pthread_mutex_lock(&ex->mu);
	job->prepare_ms = prepare_ms;
	job->generate_ms = host_gen_ms + timing.generate_ms;
	job->verify_ms = verify_ms;
	job->kernel_ms = timing.kernel_ms;
	job->transfer_ms = timing.transfer_ms;
	job->transfer_bytes = timing.transfer_bytes;
	job->upload_ms = timing.upload_ms;
	job->upload_bytes = timing.upload_bytes;
	job->download_ms = timing.download_ms;
	job->download_bytes = timing.download_bytes;
	job->transfer_memory = timing.transfer_memory;
	job->compile_ms = timing.compile_ms;
	job->cached = timing.cached;
	job->kernel_device_clock = timing.kernel_device_clock;
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
	free(sample);
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
	struct exec_record rec;

	if (ex->opts.on_job_start == NULL)
		return;
	pthread_mutex_lock(&ex->mu);
	rec = exec_record_of(job);
	pthread_mutex_unlock(&ex->mu);
	ex->opts.on_job_start(ex->opts.on_job_start_ctx, &rec);
}

/* Whether a failure of the device lets the job move on to the next one in its chain. */
static bool device_failure(enum acceld_err rc)
{
	return rc == ACCELD_EDEVICE || rc == ACCELD_EUNSUPPORTED || rc == ACCELD_ENOMEM || rc == ACCELD_EHELD ||
	       rc == ACCELD_EDEVMEM || rc == ACCELD_ECRASHED;
}

/*
 * Where in its chain a job moves on to after its device failed with rc: the next device, or, when another process
 * holds the devices (ACCELD_EHELD), the next one that another backend serves: the held backend's other devices are
 * held too (one PJRT client per plugin and process).
 */
static unsigned next_in_chain(const struct exec_job *job, enum acceld_err rc)
{
	unsigned to = job->chain_pos + 1;

	while (rc == ACCELD_EHELD && to < job->nchain && job->chain_ops[to] == job->ops)
		to++;
	return to;
}

void exec_worker_step(struct worker *w, struct exec_job *job, bool on_caller)
{
	struct exec *ex = w->ex;
	char err[640] = "";
	enum acceld_err rc;
	bool requeued = false;
	bool answered_already;

	double usd_per_hour;

	job_started(ex, job);
	rc = run_job(w, on_caller ? ex->serial : ex->host, job, err, sizeof(err));
	usd_per_hour = ex->opts.price ? ex->opts.price(ex->opts.price_ctx, &w->dev) : w->dev.price.usd_per_hour;

	pthread_mutex_lock(&ex->mu);
	if (on_caller) {
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
			exec_job_set_final(job, EXEC_SUCCEEDED, REASON_COUNT, NULL);
	} else if (!answered_already && device_failure(rc) && job->req.fallback &&
		   next_in_chain(job, rc) < job->nchain && !ex->stop) {
		unsigned to = next_in_chain(job, rc);
		struct worker *next = &ex->workers[job->chain[to]];

		if (next->qlen < ex->opts.queue_depth) {
			job->chain_pos = to;
			job->fell_back = true;
			snprintf(job->fallback_from, sizeof(job->fallback_from), "%s", w->dev.id);
			snprintf(job->fallback_reason, sizeof(job->fallback_reason), "%s failed (%s): %.440s",
				 w->dev.id, reason_name(acceld_err_to_reason(rc)), err);
			snprintf(job->device_id, sizeof(job->device_id), "%s", next->dev.id);
			job->ops = job->chain_ops[job->chain_pos];
			job->state = EXEC_QUEUED;
			job->started_ns = 0;
			job->started_ms = 0;
			exec_queue_push(ex, next, job);
			requeued = true;
		}
	}
	if (!requeued && rc != ACCELD_OK) {
		job->finished_ns = clock_mono_ns();
		job->finished_ms = clock_real_ms();
		/* a backend that gave up at the deadline may say so before the reaper does */
		if (!answered_already)
			exec_job_set_final(job, rc == ACCELD_ETIMEOUT ? EXEC_TIMED_OUT : EXEC_FAILED,
					   acceld_err_to_reason(rc), err);
	}
	if (!requeued)
		job->usd_per_hour = usd_per_hour;
	pthread_mutex_unlock(&ex->mu);
	if (requeued)
		return; /* the next worker holds the queue's reference now */
	exec_job_finished(ex, job, false);
	exec_job_unref(job);
}

void *exec_worker_main(void *arg)
{
	struct worker *w = arg;
	struct exec *ex = w->ex;
	char err[512];

	/* the device's default backend opens at once, so the first job does not pay for a program build; one that
	 * cannot open leaves the next one the default */
	for (int b = exec_worker_default_index(w); b >= 0; b = exec_worker_default_index(w)) {
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
		exec_queue_remove(w, 0);
		w->running = job;
		job->state = EXEC_RUNNING;
		job->started_ns = clock_mono_ns();
		w->run_start_ns = job->started_ns;
		job->started_ms = clock_real_ms();
		pthread_mutex_unlock(&ex->mu);
		exec_worker_step(w, job, false);
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
				exec_queue_remove(w, i);
				exec_job_set_final(j, EXEC_TIMED_OUT, REASON_TIMED_OUT, NULL);
				snprintf(j->error, sizeof(j->error),
					 "waited in the queue of %s past its timeout of %llu ms", w->dev.id,
					 (unsigned long long)j->timeout_ms);
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

void *exec_reaper_main(void *arg)
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
			exec_job_finished(ex, expired, running);
			exec_job_unref(expired); /* the queue's reference, or the one taken for a running job */
			pthread_mutex_lock(&ex->mu);
			continue;
		}
		/* a record whose commit stalls: the job is answered anyway, recorded false (the record stays queued) */
		expired = ex->await_head;
		if (expired != NULL && expired->await_due_ns <= now) {
			exec_done_fn cancel_done = expired->cancel_done;
			void *cancel_arg = expired->cancel_arg;

			exec_await_remove(ex, expired);
			expired->confirmed = true;
			expired->recorded_ok = false;
			expired->cancel_done = NULL;
			exec_job_ref(expired);
			pthread_cond_broadcast(&ex->final_cv);
			pthread_mutex_unlock(&ex->mu);
			log_fields(LOGL_WARN, "exec", "job answered before its record was durable",
				   (struct log_field[]){LOG_S("id", expired->id)}, 1);
			exec_job_notify(ex, expired);
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
