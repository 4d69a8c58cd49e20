/* jobjson: a job of the executor, and the recent jobs, as the API shows them; jobdoc.c renders the document. */
#include "exec/exec.h"

#include <pthread.h>
#include <stdio.h>

#include "core/clock.h"
#include "core/reason.h"
#include "exec/exec_int.h"
#include "exec/jobdoc.h"

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
		d.kernel_ms = job->kernel_ms;
		d.compile_ms = job->compile_ms;
		d.cached = job->cached;
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
