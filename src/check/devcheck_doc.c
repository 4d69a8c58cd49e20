/*
 * devcheck_doc: the names of levels, states and verdicts, and a check's document (api/openapi.yaml, HealthCheck): its
 * tests, telemetry and sustained series as JSON, read under the module's mutex so a reader sees a run as its thread
 * last published it.
 */
#include "check/devcheck_int.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "core/clock.h"
#include "core/jsonval.h"
#include "core/names.h"
#include "core/reason.h"

/* --- names --- */

static const char *const level_names[DEVCHECK_LEVEL_COUNT] = {"quick", "long"};
static const char *const state_names[DEVCHECK_STATE_COUNT] = {"queued", "running", "succeeded", "failed",
								 "interrupted"};
static const char *const verdict_names[DEVCHECK_VERDICT_COUNT] = {"pass", "warn", "fail"};

const char *devcheck_level_name(enum devcheck_level l)
{
	return names_at(level_names, DEVCHECK_LEVEL_COUNT, l);
}

bool devcheck_level_parse(const char *text, enum devcheck_level *out)
{
	int i = names_find(level_names, DEVCHECK_LEVEL_COUNT, text);

	if (i < 0)
		return false;
	*out = (enum devcheck_level)i;
	return true;
}

const char *devcheck_state_name(enum devcheck_state s)
{
	return names_at(state_names, DEVCHECK_STATE_COUNT, s);
}

bool devcheck_state_parse(const char *text, enum devcheck_state *out)
{
	int i = names_find(state_names, DEVCHECK_STATE_COUNT, text);

	if (i < 0)
		return false;
	*out = (enum devcheck_state)i;
	return true;
}

const char *devcheck_verdict_name(enum devcheck_verdict v)
{
	return names_at(verdict_names, DEVCHECK_VERDICT_COUNT, v);
}

bool devcheck_verdict_parse(const char *text, enum devcheck_verdict *out)
{
	int i = names_find(verdict_names, DEVCHECK_VERDICT_COUNT, text);

	if (i < 0)
		return false;
	*out = (enum devcheck_verdict)i;
	return true;
}

/*
 * A test's state in the words of a job's: queued until it starts, failed when a run of it failed (its failure says
 * how), interrupted when acceld stopped the check before the test ended.
 */
static const char *test_state(const struct devcheck_test *t, enum devcheck_state check)
{
	if (t->finished)
		return t->failed ? "failed" : "succeeded";
	if (check == DEVCHECK_INTERRUPTED && t->started)
		return "interrupted";
	return t->started ? "running" : "queued";
}

/* The transfer test's own figures: its size, the rates each way and the link they are judged against. */
static void transfer_json(json_t *o, const struct devcheck_test *t)
{
	json_t *link = device_pcie_json(&t->pcie);

	if (t->bytes > 0)
		json_object_set_new(o, "size", json_pack("{s:I, s:I, s:I}", "bytes", (json_int_t)t->bytes, "m",
							 (json_int_t)(t->n / TRANSFER_ROW), "n", (json_int_t)TRANSFER_ROW));
	json_object_set_new(o, "runs", json_integer(t->runs));
	jsonval_set_num(o, "upload_gbytes_per_s", t->upload);
	jsonval_set_num(o, "download_gbytes_per_s", t->download);
	if (json_object_size(link) > 0)
		json_object_set_new(o, "link", link);
	else
		json_decref(link);
	if (devcheck_usable(t->link)) {
		jsonval_set_num(o, "upload_ratio", t->upload / t->link);
		jsonval_set_num(o, "download_ratio", t->download / t->link);
	}
	jsonval_set_num(o, "expected", t->expected);
	if (t->expected_source[0] != '\0' && isfinite(t->expected))
		json_object_set_new(o, "expected_source", json_string(t->expected_source));
	if (t->runs > 0) {
		json_object_set_new(o, "verified", json_boolean(t->wrong == 0));
		jsonval_set_num(o, "max_error_ratio", t->worst_error);
	}
	json_object_set_new(o, "device_ms", json_real(t->device_ms));
	if (t->budget_ms > 0)
		json_object_set_new(o, "budget_ms", json_real(t->budget_ms));
	if (t->last_job[0] != '\0')
		json_object_set_new(o, "last_job", json_string(t->last_job));
}

/* One test as the document shows it; c->mu held. */
static json_t *test_json(const struct devcheck_test *t, enum devcheck_state check)
{
	json_t *o = json_object();
	bool transfer = strcmp(t->kind, "transfer") == 0;

	json_object_set_new(o, "name", json_string(t->name));
	json_object_set_new(o, "kind", json_string(t->kind));
	json_object_set_new(o, "state", json_string(test_state(t, check)));
	if (t->unit != NULL)
		json_object_set_new(o, "unit", json_string(t->unit));
	if (transfer)
		transfer_json(o, t);
	else if (t->n > 0 && strcmp(t->name, kernel_name(MEMORY_KERNEL)) == 0)
		json_object_set_new(o, "size", json_pack("{s:I}", "n", (json_int_t)t->n));
	else if (t->n > 0)
		json_object_set_new(o, "size", json_pack("{s:I, s:I, s:I}", "m", (json_int_t)t->n, "n",
							 (json_int_t)t->n, "k", (json_int_t)t->n));
	if (t->unit != NULL && !transfer) {
		json_t *samples = json_array();

		json_object_set_new(o, "runs", json_integer(t->runs));
		jsonval_set_num(o, "measured", t->best);
		jsonval_set_num(o, "median", t->median);
		for (unsigned i = 0; i < t->nsamples; i++)
			json_array_append_new(samples, json_real(t->samples[i]));
		json_object_set_new(o, "samples", samples);
		jsonval_set_num(o, "expected", t->expected);
		if (t->expected_source[0] != '\0' && isfinite(t->expected))
			json_object_set_new(o, "expected_source", json_string(t->expected_source));
		if (isfinite(t->best) && devcheck_usable(t->expected))
			json_object_set_new(o, "ratio", json_real(t->best / t->expected));
		if (t->runs > 0) {
			json_object_set_new(o, "verified", json_boolean(t->wrong == 0));
			jsonval_set_num(o, "max_error_ratio", t->worst_error);
		}
		json_object_set_new(o, "device_ms", json_real(t->device_ms));
		if (t->setup_ms > 0)
			json_object_set_new(o, "setup_ms", json_real(t->setup_ms));
		if (t->budget_ms > 0)
			json_object_set_new(o, "budget_ms", json_real(t->budget_ms));
		if (t->last_job[0] != '\0')
			json_object_set_new(o, "last_job", json_string(t->last_job));
	}
	if (t->nramp > 0) {
		json_t *ramp = json_array();

		for (unsigned i = 0; i < t->nramp; i++) {
			json_t *step = json_pack("{s:I}", "n", (json_int_t)t->ramp[i].n);

			jsonval_set_num(step, "gflops", t->ramp[i].figure);
			jsonval_set_num(step, "kernel_ms", t->ramp[i].kernel_ms);
			json_array_append_new(ramp, step);
		}
		json_object_set_new(o, "ramp", ramp);
	}
	if (t->steady[0] != '\0')
		json_object_set_new(o, "steady", json_string(t->steady));
	if (strcmp(t->name, "sustained") == 0) {
		jsonval_set_num(o, "first_quarter", t->first);
		jsonval_set_num(o, "last_quarter", t->last);
		if (devcheck_usable(t->first) && isfinite(t->last))
			json_object_set_new(o, "sustained_ratio", json_real(t->last / t->first));
		jsonval_set_num(o, "duration_ms", t->duration_ms);
	}
	if (t->failed)
		json_object_set_new(o, "failure", json_string(t->failure));
	if (t->has_verdict) {
		json_object_set_new(o, "verdict", json_string(devcheck_verdict_name(t->verdict)));
		json_object_set_new(o, "rule", json_string(t->rule));
	}
	return o;
}

static json_t *tel_json(const struct devcheck_telemetry *t)
{
	json_t *o = json_object();

	json_object_set_new(o, "samples", json_integer(t->samples));
	if (t->source != NULL)
		json_object_set_new(o, "source", json_string(t->source));
	if (isfinite(t->temp_max)) {
		json_t *temp = json_object();

		jsonval_set_num(temp, "start", t->temp_first);
		jsonval_set_num(temp, "max", t->temp_max);
		jsonval_set_num(temp, "slowdown", t->slowdown_c);
		json_object_set_new(o, "temperature_celsius", temp);
	}
	if (t->power_n > 0)
		json_object_set_new(o, "power_watts",
				    json_pack("{s:f, s:f}", "mean", t->power_sum / t->power_n, "max", t->power_max));
	if (t->clock_n > 0) {
		json_t *clk = json_pack("{s:f, s:f}", "min", t->clock_min, "mean", t->clock_sum / t->clock_n);

		jsonval_set_num(clk, "max_rated", t->clock_max_rated);
		json_object_set_new(o, "clock_mhz", clk);
	}
	if (t->throttle_known)
		json_object_set_new(o, "throttle_reasons", device_throttle_json(t->throttle_seen));
	if (isfinite(t->ecc_last))
		json_object_set_new(o, "ecc_uncorrected", json_pack("{s:f, s:f}", "start", t->ecc_first, "end", t->ecc_last));
	if (t->retired_pending >= 0)
		json_object_set_new(o, "retired_pages_pending", json_boolean(t->retired_pending == 1));
	return o;
}

/* The whole document; c->mu held. */
/* A throughput test's budget in the check's budget object: "<its name>_ms". */
static void budget_set(json_t *budget, const struct devcheck_test *t)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_ms", t->name);
	json_object_set_new(budget, key, json_real(t->budget_ms));
}

static json_t *run_json_locked(const struct devcheck_run *run)
{
	json_t *o = json_object();
	json_t *tests = json_array();
	json_t *measured = json_object();
	json_t *budget = json_object();
	int64_t end = run->finished_ms > 0 ? run->finished_ms : clock_real_ms();

	json_object_set_new(o, "id", json_string(run->id));
	json_object_set_new(o, "device", json_string(run->device));
	if (run->type[0] != '\0')
		json_object_set_new(o, "type", json_string(run->type));
	if (run->model[0] != '\0')
		json_object_set_new(o, "model", json_string(run->model));
	json_object_set_new(o, "level", json_string(devcheck_level_name(run->req.level)));
	json_object_set_new(o, "trigger", json_string(run->req.trigger));
	json_object_set_new(o, "state", json_string(devcheck_state_name(run->state)));
	if (run->has_verdict && devcheck_state_judged(run->state)) {
		json_object_set_new(o, "verdict", json_string(devcheck_verdict_name(run->verdict)));
		json_object_set_new(o, "rule", json_string(run->rule));
	}
	if (run->backend[0] != '\0')
		json_object_set_new(o, "backend", json_string(run->backend));
	jsonval_set_time(o, "created_at", run->created_ms);
	jsonval_set_time(o, "started_at", run->started_ms);
	jsonval_set_time(o, "finished_at", run->finished_ms);
	if (run->started_ms > 0)
		json_object_set_new(o, "duration_s", json_real((double)(end - run->started_ms) / 1000.0));
	budget_set(budget, &run->matrix);
	budget_set(budget, &run->memory);
	if (run->has_transfer)
		budget_set(budget, &run->transfer);
	if (run->req.level == DEVCHECK_LONG)
		json_object_set_new(budget, "sustained_ms", json_integer((json_int_t)run->sustained_ms));
	json_object_set_new(o, "budget", budget);
	json_object_set_new(o, "jobs", json_integer(run->jobs));
	if (run->matrix.wrong == 0)
		jsonval_set_num(measured, "gflops", run->matrix.best);
	if (run->memory.wrong == 0)
		jsonval_set_num(measured, "gbytes_per_s", run->memory.best);
	json_object_set_new(o, "measured", measured);
	json_array_append_new(tests, test_json(&run->matrix, run->state));
	json_array_append_new(tests, test_json(&run->memory, run->state));
	if (run->has_transfer)
		json_array_append_new(tests, test_json(&run->transfer, run->state));
	if (run->req.level == DEVCHECK_LONG)
		json_array_append_new(tests, test_json(&run->sustained, run->state));
	json_array_append_new(tests, test_json(&run->telemetry, run->state));
	json_object_set_new(o, "tests", tests);
	json_object_set_new(o, "telemetry", tel_json(&run->tel));
	if (run->req.level == DEVCHECK_LONG) {
		json_t *series = json_array();
		double step = (double)run->sustained_ms / BUCKETS / 1000.0;

		for (unsigned i = 0; i < BUCKETS; i++) {
			const struct bucket *b = &run->buckets[i];
			json_t *p;

			if (b->runs == 0)
				continue;
			p = json_pack("{s:f, s:f, s:i}", "t_s", step * (i + 1), "gflops", b->sum / b->runs, "runs",
				      (int)b->runs);
			jsonval_set_num(p, "temperature_celsius", b->temp);
			jsonval_set_num(p, "power_watts", b->power);
			jsonval_set_num(p, "clock_mhz", b->clock);
			json_array_append_new(series, p);
		}
		json_object_set_new(o, "series", series);
	}
	if (run->has_error)
		json_object_set_new(o, "error", json_pack("{s:s, s:s}", "reason", reason_name(run->error_reason), "detail",
							 run->error));
	return o;
}

json_t *devcheck_run_json(struct devcheck_run *run)
{
	json_t *o;

	pthread_mutex_lock(&run->c->mu);
	o = run_json_locked(run);
	pthread_mutex_unlock(&run->c->mu);
	return o;
}

json_t *devcheck_run_json_in(struct devcheck_run *run, enum devcheck_state state)
{
	enum devcheck_state was;
	json_t *o;

	pthread_mutex_lock(&run->c->mu);
	was = run->state;
	run->state = state;
	o = run_json_locked(run);
	run->state = was;
	pthread_mutex_unlock(&run->c->mu);
	return o;
}
