/* jobdoc: the one rendering of a job. */
#include "exec/jobdoc.h"

#include <math.h>
#include <string.h>

#include "core/jsonval.h"

void jobdoc_init(struct jobdoc *d)
{
	memset(d, 0, sizeof(*d));
	d->queued_ms = d->prepare_ms = d->compile_ms = d->transfer_ms = d->kernel_ms = d->total_ms = NAN;
	d->generate_ms = d->verify_ms = d->transfer_bytes = NAN;
	d->upload_ms = d->upload_bytes = d->download_ms = d->download_bytes = NAN;
	d->precision = -1;
	d->cached = -1;
	d->kernel_clock = -1;
	d->flops = d->bytes = NAN;
	d->peak_gflops = d->peak_gbps = NAN;
	d->value = NAN;
	d->cost_usd = NAN;
}

static bool text(const char *s)
{
	return s != NULL && s[0] != '\0';
}

json_t *jobdoc_sizes_json(enum kernel_id k, const struct kernel_shape *s)
{
	json_t *o = json_object();
	unsigned p = kernel_params(k);

	if (p & KERNEL_PARAM_M)
		json_object_set_new(o, "m", json_integer((json_int_t)s->m));
	json_object_set_new(o, "n", json_integer((json_int_t)s->n));
	if (p & KERNEL_PARAM_K)
		json_object_set_new(o, "k", json_integer((json_int_t)s->k));
	return o;
}

/* The scalars the kernel took, and the seed of generated inputs: what POST /run accepts for the kernel. */
static json_t *params_json(const struct jobdoc *d)
{
	json_t *o = json_object();
	unsigned taken = kernel_params(d->kernel);

	const struct {
		unsigned param;
		float value;
	} scalars[] = {{KERNEL_PARAM_ALPHA, d->alpha}, {KERNEL_PARAM_BETA, d->beta}, {KERNEL_PARAM_SCALE, d->scale}};

	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
		if (taken & scalars[i].param)
			json_object_set_new(o, kernel_param_name(scalars[i].param), jsonval_float(scalars[i].value));
	if (!d->inline_inputs)
		json_object_set_new(o, "seed", json_integer((json_int_t)d->seed));
	return o;
}

static json_t *result_json(const struct jobdoc *d)
{
	const struct jobdata_summary *s = d->summary;
	json_t *res = json_object();
	json_t *first = json_array();
	json_t *sum;

	for (size_t i = 0; i < s->nfirst; i++)
		json_array_append_new(first, jsonval_num(s->first[i]));
	json_object_set_new(res, "checksum", jsonval_num(s->checksum));
	sum = json_pack("{s:o, s:o, s:o, s:o}", "min", jsonval_num(s->min), "max", jsonval_num(s->max), "mean",
				jsonval_num(s->mean), "first", first);
	/* an output that stayed on the device is summarised by its sample */
	if (s->count > 0) {
		json_object_set_new(sum, "count", json_integer((json_int_t)s->count));
		json_object_set_new(sum, "of", json_string(s->sampled ? "sample" : "output"));
	}
	json_object_set_new(res, "summary", sum);
	if (kernel_output_rank(d->kernel) == 0)
		json_object_set_new(res, "value", jsonval_num(d->value));
	if (d->listed) {
		/* a list is polled (the dashboard, every 5 s): its jobs are summaries; GET /run/{id} has the output */
	} else if (d->output != NULL) {
		json_t *arr = json_array();

		for (size_t i = 0; i < d->output_len; i++)
			json_array_append_new(arr, jsonval_num(d->output[i]));
		json_object_set_new(res, "output", arr);
	} else if (d->full && kernel_output_rank(d->kernel) == 0) {
		json_object_set_new(res, "output", jsonval_num(d->value));
	}
	return res;
}

static json_t *throughput_json(const struct jobdoc *d)
{
	double secs = d->kernel_ms / 1000.0;
	double gflops = d->flops / secs / 1e9;
	double gbps = d->bytes / secs / 1e9;
	json_t *tp = json_object();

	jsonval_set_num(tp, "gflops", gflops);
	jsonval_set_num(tp, "gbytes_per_s", gbps);
	if (kernel_compute_bound(d->kernel) && isfinite(d->peak_gflops) && d->peak_gflops > 0)
		jsonval_set_num(tp, "fraction_of_peak", gflops / d->peak_gflops);
	else if (!kernel_compute_bound(d->kernel) && isfinite(d->peak_gbps) && d->peak_gbps > 0)
		jsonval_set_num(tp, "fraction_of_peak", gbps / d->peak_gbps);
	return tp;
}

json_t *jobdoc_json(const struct jobdoc *d)
{
	json_t *o = json_object();
	json_t *t = json_object();
	bool succeeded = d->state != NULL && strcmp(d->state, "succeeded") == 0;

	json_object_set_new(o, "id", json_string(d->id));
	json_object_set_new(o, "state", json_string(d->state));
	json_object_set_new(o, "kernel", json_string(kernel_name(d->kernel)));
	json_object_set_new(o, "device", json_string(d->device ? d->device : ""));
	if (text(d->backend))
		json_object_set_new(o, "backend", json_string(d->backend));
	if (d->source != NULL)
		json_object_set_new(o, "source", json_string(d->source));
	if (text(d->trigger))
		json_object_set_new(o, "trigger", json_string(d->trigger));
	if (text(d->check_id))
		json_object_set_new(o, "check_id", json_string(d->check_id));
	json_object_set_new(o, "sizes", jobdoc_sizes_json(d->kernel, &d->shape));
	if (d->has_request) {
		json_object_set_new(o, "params", params_json(d));
		json_object_set_new(o, "inputs", json_string(d->inline_inputs ? "inline" : "generated"));
		json_object_set_new(o, "return", json_string(d->full ? "full" : "summary"));
		json_object_set_new(o, "timeout_ms", json_integer((json_int_t)d->timeout_ms));
		if (kernel_params(d->kernel) & KERNEL_PARAM_PRECISION)
			json_object_set_new(o, "precision_asked",
					    json_string(kernel_precision_name(d->precision_asked)));
	}
	if ((kernel_params(d->kernel) & KERNEL_PARAM_PRECISION) && d->precision >= 0)
		json_object_set_new(o, "precision", json_string(kernel_precision_name((enum kernel_precision)d->precision)));
	if (d->cached >= 0)
		json_object_set_new(o, "program_cached", json_boolean(d->cached == 1));
	jsonval_set_time(o, "created_at", d->created_ms);
	jsonval_set_time(o, "started_at", d->started_ms);
	jsonval_set_time(o, "finished_at", d->finished_ms);
	if (d->placement != NULL) {
		json_object_set_new(o, "placement", json_string(d->placement));
		json_object_set_new(o, "fell_back", json_boolean(d->fell_back));
		if (text(d->fallback_from))
			json_object_set_new(o, "fallback_from", json_string(d->fallback_from));
		if (d->fell_back && text(d->fallback_reason))
			json_object_set_new(o, "fallback_reason", json_string(d->fallback_reason));
	}
	/* where the time went: setup (the program's build or cache load), generate, transfer (with its bytes and their
	 * rate), kernel, verify, total */
	jsonval_set_num(t, "queued_ms", d->queued_ms);
	jsonval_set_num(t, "prepare_ms", d->prepare_ms);
	jsonval_set_num(t, "setup_ms", d->compile_ms);
	jsonval_set_num(t, "compile_ms", d->compile_ms);
	jsonval_set_num(t, "generate_ms", d->generate_ms);
	jsonval_set_num(t, "transfer_ms", d->transfer_ms);
	jsonval_set_num(t, "transfer_bytes", d->transfer_bytes);
	if (isfinite(d->transfer_bytes) && isfinite(d->transfer_ms) && d->transfer_ms > 0 && d->transfer_bytes > 0)
		jsonval_set_num(t, "transfer_gbytes_per_s", d->transfer_bytes / (d->transfer_ms * 1e6));
	/* the same by direction: what the host gave going up, what it asked for coming back */
	jsonval_set_num(t, "upload_ms", d->upload_ms);
	jsonval_set_num(t, "upload_bytes", d->upload_bytes);
	if (isfinite(d->upload_bytes) && isfinite(d->upload_ms) && d->upload_ms > 0 && d->upload_bytes > 0)
		jsonval_set_num(t, "upload_gbytes_per_s", d->upload_bytes / (d->upload_ms * 1e6));
	jsonval_set_num(t, "download_ms", d->download_ms);
	jsonval_set_num(t, "download_bytes", d->download_bytes);
	if (isfinite(d->download_bytes) && isfinite(d->download_ms) && d->download_ms > 0 && d->download_bytes > 0)
		jsonval_set_num(t, "download_gbytes_per_s", d->download_bytes / (d->download_ms * 1e6));
	if (d->transfer_memory != NULL && d->transfer_memory[0] != '\0')
		json_object_set_new(t, "transfer_memory", json_string(d->transfer_memory));
	jsonval_set_num(t, "kernel_ms", d->kernel_ms);
	if (d->kernel_clock >= 0)
		json_object_set_new(t, "kernel_clock", json_string(d->kernel_clock ? "device" : "host"));
	jsonval_set_num(t, "verify_ms", d->verify_ms);
	jsonval_set_num(t, "total_ms", d->total_ms);
	json_object_set_new(o, "timing", t);
	if (succeeded && isfinite(d->kernel_ms) && d->kernel_ms > 0 && isfinite(d->flops) && isfinite(d->bytes))
		json_object_set_new(o, "throughput", throughput_json(d));
	if (succeeded && d->summary != NULL)
		json_object_set_new(o, "result", result_json(d));
	if (succeeded && d->verification != NULL) {
		const struct kernel_verification *v = d->verification;

		json_object_set_new(o, "verified", json_boolean(v->verified));
		json_object_set_new(o, "verification",
				    json_pack("{s:s, s:s, s:I, s:o, s:o}", "mode", v->sampled ? "sample" : "full", "method",
					      v->method, "checked", (json_int_t)v->checked,
					      "max_abs_error", jsonval_num(v->max_abs_error), "max_error_to_tolerance",
					      jsonval_num(v->worst_ratio)));
	}
	jsonval_set_num(o, "cost_usd", d->cost_usd);
	if (d->error_reason != NULL)
		json_object_set_new(o, "error", json_pack("{s:s, s:s}", "reason", d->error_reason, "detail",
							  d->error_detail ? d->error_detail : ""));
	return o;
}
