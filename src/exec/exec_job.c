/*
 * exec_job: a job of the executor, from its references and the state the API shows to the records that end it (a
 * final job is answered once its record is confirmed, or a second after it ended); the ring of recent jobs and the
 * devices' queues, and cancelling a queued job; a job as the API shows it.
 */
#include "exec/exec.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/names.h"
#include "core/reason.h"
#include "exec/exec_int.h"
#include "exec/jobdoc.h"
#include "exec/kernel.h"

/*
 * A job whose record is not confirmed this long after it ended is answered, recorded false. The reaper wakes at
 * least once a second, so the answer comes 1 to 2 s after the job ended.
 */
#define RECORD_WAIT_NS 1000000000ull

/* --- names and requests --- */

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
	req->scale = 1.0f;
	req->seed = 1;
	snprintf(req->trigger, sizeof(req->trigger), "api");
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
	s = exec_job_shown_state(job);
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
	while (!exec_state_final(exec_job_shown_state(job)) || (job->running_timed_out && !job->final_confirmed))
		pthread_cond_wait(&ex->final_cv, &ex->mu);
	pthread_mutex_unlock(&ex->mu);
}

double exec_job_cost(const struct exec_job *job)
{
	if (isnan(job->usd_per_hour) || job->started_ns == 0 || job->finished_ns == 0)
		return NAN;
	return job->usd_per_hour * exec_ms_between(job->started_ns, job->finished_ns) / 1000.0 / 3600.0;
}

void exec_job_set_final(struct exec_job *job, enum exec_state s, enum reason reason, const char *detail)
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

void exec_job_notify(struct exec *ex, struct exec_job *job)
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

void exec_job_peak(const struct exec_job *job, double *gflops, double *gbytes_per_s)
{
	const struct device *dev = &job->ex->workers[job->chain[job->chain_pos]].dev;

	*gflops = dev->peak.fp32_tflops * 1000.0;
	*gbytes_per_s = dev->peak.memory_gbytes_per_s;
}

struct exec_record exec_record_of(const struct exec_job *job)
{
	bool final = exec_state_final(job->state);
	double gflops, gbps;

	exec_job_peak(job, &gflops, &gbps);
	return (struct exec_record){
		.id = job->id,
		.kernel = kernel_name(job->req.kernel),
		.device_id = job->device_id,
		.backend = job->ops ? job->ops->name : NULL,
		.state = exec_state_name(job->state),
		.m = job->req.shape.m,
		.n = job->req.shape.n,
		.k = job->req.shape.k,
		.queued_ms = job->started_ns || final
				     ? exec_ms_between(job->created_ns,
						       job->started_ns ? job->started_ns : job->finished_ns)
				     : NAN,
		.transfer_ms = job->ran ? job->transfer_ms : NAN,
		.setup_ms = job->ran ? job->compile_ms : NAN,
		.generate_ms = job->ran ? job->generate_ms : NAN,
		.verify_ms = job->ran ? job->verify_ms : NAN,
		.transfer_bytes = job->ran ? (double)job->transfer_bytes : NAN,
		.upload_ms = job->ran ? job->upload_ms : NAN,
		.upload_bytes = job->ran ? (double)job->upload_bytes : NAN,
		.download_ms = job->ran ? job->download_ms : NAN,
		.download_bytes = job->ran ? (double)job->download_bytes : NAN,
		.transfer_memory = job->ran ? backend_memory_name(job->transfer_memory) : NULL,
		.kernel_ms = job->ran ? job->kernel_ms : NAN,
		.total_ms = final ? exec_ms_between(job->created_ns, job->finished_ns) : NAN,
		.flops = job->flops,
		.bytes = job->bytes,
		.cost_usd = final ? exec_job_cost(job) : NAN,
		.created_ms = job->created_ms,
		.started_ms = job->started_ms,
		.finished_ms = final ? job->finished_ms : 0,
		.reason = job->reason != REASON_COUNT ? reason_name(job->reason) : NULL,
		.error = job->error[0] ? job->error : NULL,
		.trigger = job->req.trigger,
		.check_id = job->req.check_id,
		.peak_gflops = gflops,
		.peak_gbytes_per_s = gbps,
	};
}

enum exec_state exec_job_shown_state(const struct exec_job *job)
{
	if (job->confirmed || !exec_state_final(job->state))
		return job->state;
	return job->started_ns != 0 || job->ran ? EXEC_RUNNING : EXEC_QUEUED;
}

void exec_await_remove(struct exec *ex, struct exec_job *job)
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

void exec_record_confirmed(struct exec_job *job, bool provisional, bool recorded)
{
	struct exec *ex = job->ex;
	exec_done_fn cancel_done = NULL;
	void *cancel_arg = NULL;

	pthread_mutex_lock(&ex->mu);
	exec_await_remove(ex, job);
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
	exec_job_notify(ex, job);
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
static void record_send(struct exec *ex, struct exec_job *job, bool provisional)
{
	struct exec_record rec;

	pthread_mutex_lock(&ex->mu);
	if (job->final_sent || (provisional && job->provisional_sent)) {
		pthread_mutex_unlock(&ex->mu);
		return;
	}
	if (provisional)
		job->provisional_sent = true;
	else
		job->final_sent = true;
	rec = exec_record_of(job);
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
		exec_record_confirmed(job, provisional, false);
	if (!provisional)
		log_fields(job->state == EXEC_SUCCEEDED ? LOGL_INFO : LOGL_WARN, "exec", "job finished",
			   (struct log_field[]){LOG_S("id", rec.id), LOG_S("kernel", rec.kernel),
						LOG_S("device", rec.device_id), LOG_S("backend", rec.backend),
						LOG_S("state", rec.state), LOG_D("kernel_ms", rec.kernel_ms),
						LOG_D("total_ms", rec.total_ms), LOG_S("error", rec.error)},
			   8);
}

void exec_job_finished(struct exec *ex, struct exec_job *job, bool kernel_still_running)
{
	record_send(ex, job, kernel_still_running);
}

/* --- the ring of recent jobs --- */

void exec_ring_add(struct exec *ex, struct exec_job *job)
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

struct exec_job *exec_ring_at(const struct exec *ex, unsigned i)
{
	return ex->ring[(ex->ring_head + ex->ring_cap - 1 - i) % ex->ring_cap];
}

struct exec_job *exec_get(struct exec *ex, const char *id)
{
	struct exec_job *found = NULL;

	pthread_mutex_lock(&ex->mu);
	for (unsigned i = 0; i < ex->ring_len && found == NULL; i++) {
		struct exec_job *j = exec_ring_at(ex, i);

		if (strcmp(j->id, id) == 0) {
			found = j;
			exec_job_ref(found);
		}
	}
	pthread_mutex_unlock(&ex->mu);
	return found;
}

/* --- queues --- */

bool exec_queue_push(struct exec *ex, struct worker *w, struct exec_job *job)
{
	if (w->qlen >= ex->opts.queue_depth)
		return false;
	w->queue[w->qlen++] = job;
	pthread_cond_signal(&w->cv);
	pthread_cond_signal(&ex->reaper_cv);
	return true;
}

void exec_queue_remove(struct worker *w, unsigned i)
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
				exec_queue_remove(w, i);
				break;
			}
		}
	}
	if (job != NULL) {
		exec_job_set_final(job, EXEC_CANCELLED, REASON_CANCELLED, "cancelled by DELETE /run/{id} while queued");
		job->cancel_done = done;
		job->cancel_arg = arg;
		rc = ACCELD_OK;
	} else {
		for (unsigned i = 0; i < ex->ring_len; i++)
			if (strcmp(exec_ring_at(ex, i)->id, id) == 0)
				rc = ACCELD_ECONFLICT;
	}
	pthread_mutex_unlock(&ex->mu);
	if (job != NULL) {
		exec_job_finished(ex, job, false);
		exec_job_unref(job); /* the queue's reference */
	}
	return rc;
}

/* --- a job as the API shows it (jobdoc.c renders the document) --- */

/* The job's document; listed leaves its output out (a summary for GET /run). */
static json_t *job_json(struct exec_job *job, bool listed)
{
	struct exec *ex = job->ex;
	const struct exec_request *r = &job->req;
	struct jobdoc d;
	uint64_t end;
	bool pending;
	json_t *o;

	jobdoc_init(&d);
	pthread_mutex_lock(&ex->mu);
	/* a final job whose record is not confirmed yet shows as it was before it ended */
	pending = exec_state_final(job->state) && !job->confirmed;
	end = job->finished_ns && !pending ? job->finished_ns : clock_mono_ns();
	d.id = job->id;
	d.state = exec_state_name(exec_job_shown_state(job));
	d.kernel = r->kernel;
	d.shape = r->shape;
	d.device = job->device_id;
	d.backend = job->ops ? job->ops->name : NULL;
	d.trigger = r->trigger;
	d.check_id = r->check_id;
	d.has_request = true;
	d.alpha = r->alpha;
	d.beta = r->beta;
	d.scale = r->scale;
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
	d.queued_ms = exec_ms_between(job->created_ns, job->started_ns ? job->started_ns : end);
	d.precision_asked = r->precision;
	d.precision = job->ran && !pending ? (int)job->precision : -1;
	if (job->ran && !pending) {
		d.prepare_ms = job->prepare_ms;
		d.transfer_ms = job->transfer_ms;
		d.transfer_bytes = (double)job->transfer_bytes;
		d.upload_ms = job->upload_ms;
		d.upload_bytes = (double)job->upload_bytes;
		d.download_ms = job->download_ms;
		d.download_bytes = (double)job->download_bytes;
		d.transfer_memory = backend_memory_name(job->transfer_memory);
		d.generate_ms = job->generate_ms;
		d.verify_ms = job->verify_ms;
		d.kernel_ms = job->kernel_ms;
		d.compile_ms = job->compile_ms;
		d.cached = job->cached;
		d.kernel_clock = job->kernel_device_clock ? 1 : 0;
		d.summary = &job->summary;
		d.value = job->value;
		d.output = listed ? NULL : job->output;
		d.output_len = listed ? 0 : job->out_len;
		d.verification = job->verify_done ? &job->verification : NULL;
	}
	if (job->finished_ns && !pending)
		d.total_ms = exec_ms_between(job->created_ns, job->finished_ns);
	d.listed = listed;
	d.flops = job->flops;
	d.bytes = job->bytes;
	exec_job_peak(job, &d.peak_gflops, &d.peak_gbps);
	if (exec_state_final(job->state) && !pending)
		d.cost_usd = exec_job_cost(job);
	if (job->error[0] && !pending) {
		d.error_reason = reason_name(job->reason == REASON_COUNT ? REASON_INTERNAL : job->reason);
		d.error_detail = job->error;
	}
	o = jobdoc_json(&d);
	json_object_set_new(o, "recorded", json_boolean(job->recorded_ok));
	pthread_mutex_unlock(&ex->mu);
	return o;
}

json_t *exec_job_json(struct exec_job *job)
{
	return job_json(job, false);
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
		struct exec_job *j = exec_ring_at(ex, i);

		if ((after != 0 && j->seq >= after) || (state >= 0 && (int)exec_job_shown_state(j) != state))
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
		json_array_append_new(arr, job_json(picked[i], true));
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

bool exec_oldest_job(struct exec *ex, int64_t *created_ms, char *id, size_t idsz)
{
	bool held;

	pthread_mutex_lock(&ex->mu);
	held = ex->ring_len > 0;
	if (held) {
		const struct exec_job *j = exec_ring_at(ex, ex->ring_len - 1);

		*created_ms = j->created_ms;
		snprintf(id, idsz, "%s", j->id);
	}
	pthread_mutex_unlock(&ex->mu);
	return held;
}
