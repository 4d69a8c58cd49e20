/*
 * devcheck: health checks of devices run as executor jobs, their verdicts, and the figures they feed back.
 *
 * One mutex (c->mu) guards the module: the recent checks, the per-device summaries and every field of a run that a
 * reader may see. A run's thread computes on its own copies and publishes them under the mutex; callbacks (the
 * device view, the history, the change notice) and executor calls are made with it released.
 */
#include "check/devcheck.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "exec/backend.h"
#include "core/clock.h"
#include "core/config.h"
#include "exec/exec.h"
#include "core/jsonval.h"
#include "exec/kernel.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/names.h"
#include "select/select.h"

#define RECENT_MAX 64          /* checks kept in memory */
#define DEVICES_MAX 64         /* devices with a summary */
#define RAMP_MAX 8             /* sgemm sizes tried */
#define SAMPLES_MAX 16         /* runs at the final size */
#define BUCKETS 120            /* points of the sustained series */
#define SUSTAINED_RUNS_MAX 100000
#define SGEMM_START_CPU 256
#define SGEMM_START_ACCEL 512
#define SGEMM_MAX 8192
#define PLATEAU_GAIN 1.05      /* a doubling that gains less than 5 % is a plateau (both kernels of 20 ms or more) */
#define PLATEAU_MIN_KERNEL_MS 20.0
#define TRIAD_MIN_N (1ull << 22)   /* 16 MiB per array */
#define TRIAD_FLOOR_N 4096         /* the smallest a job limit can force */
#define TELEMETRY_EVERY_NS 500000000ull
#define STREAM_SCALAR 3.0f     /* STREAM's triad scalar */

/* --- names --- */

static const char *const level_names[DEVCHECK_LEVEL_COUNT] = {"quick", "long"};
static const char *const state_names[DEVCHECK_STATE_COUNT] = {"queued", "running", "done", "interrupted"};
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

void devcheck_settings_from_config(const struct config *cfg, struct devcheck_settings *out)
{
	*out = (struct devcheck_settings){
		.long_ms = cfg->check_long_ms,
		.warn_percent = cfg->check_warn_percent,
		.fail_percent = cfg->check_fail_percent,
		.throttle_percent = cfg->check_throttle_percent,
		.clock_percent = cfg->check_clock_percent,
		.max_age_ms = cfg->check_max_age_ms,
		.interval_ms = cfg->check_interval_ms,
		.max_elements = cfg->exec_max_elements,
		.sgemm_budget_ms = 2000,
		.triad_budget_ms = 1600,
		.max_reps = 5,
	};
}

void devcheck_request_init(struct devcheck_request *req)
{
	memset(req, 0, sizeof(*req));
	req->level = DEVCHECK_QUICK;
	snprintf(req->trigger, sizeof(req->trigger), "api");
}

/* --- the state of a run --- */

struct ramp_step {
	uint64_t n;
	double figure;
	double kernel_ms;
};

/* One test of a check as its document shows it. */
struct test {
	const char *name;           /* "sgemm", "triad", "sustained", "telemetry" */
	const char *kind;           /* "matrix", "memory", "sustained", "telemetry" */
	const char *unit;           /* "GFLOP/s", "GB/s"; NULL for telemetry */
	bool started;
	bool finished;
	unsigned runs;              /* runs completed */
	unsigned wrong;             /* runs whose result the reference did not confirm */
	uint64_t n;                 /* final size (sgemm: m = n = k) */
	double samples[SAMPLES_MAX];
	unsigned nsamples;
	double best, median;        /* NAN until measured */
	double expected;            /* NAN unknown */
	char expected_source[512];
	double worst_error;         /* the largest error / tolerance of a run */
	struct ramp_step ramp[RAMP_MAX];
	unsigned nramp;
	char steady[200];           /* why the final size was kept */
	double device_ms;           /* the test's own run time */
	double setup_ms;            /* one-off time kept out of device_ms: the warm-up run and program compiles */
	double budget_ms;
	bool failed;                /* a run could not complete */
	char failure[400];
	char last_job[32];
	bool has_verdict;
	enum devcheck_verdict verdict;
	char rule[480];
	/* sustained only */
	double first, last;         /* mean of the first and the last quarter of the runs */
	double duration_ms;
};

/* Telemetry gathered over a check. */
struct tel {
	unsigned samples;
	const char *source;         /* "nvml", "cpufreq", "sysfs", NULL none */
	double temp_first, temp_max;
	double power_max, power_sum;
	unsigned power_n;
	double clock_min, clock_sum, clock_max_rated;
	unsigned clock_n;
	bool throttle_known;
	unsigned throttle_seen;
	double ecc_first, ecc_last;
	int retired_pending;
	double slowdown_c;
	uint64_t last_ns;
	double now_temp, now_power, now_clock; /* the latest sample's */
};

struct bucket {
	double sum;
	unsigned runs;
	double temp, power, clock;
};

struct devcheck_run {
	atomic_int refs;
	struct devcheck *c;
	char id[DEVCHECK_ID_MAX];
	char device[DEVICE_ID_MAX];
	char type[8];
	char model[128];
	char backend[16];
	struct devcheck_request req;
	enum devcheck_state state;
	int64_t created_ms, started_ms, finished_ms;
	uint64_t started_ns;
	uint64_t sustained_ms;      /* the long level's phase */
	uint64_t seed;
	struct test sgemm, triad, sustained, telemetry;
	struct tel tel;
	struct bucket buckets[BUCKETS];
	bool has_verdict;
	enum devcheck_verdict verdict;
	char rule[560];
	bool has_error;
	enum reason error_reason;
	char error[400];
	bool stop;                  /* devcheck_stop: end after the job in progress */
	bool final_recorded;        /* its final document went to the history (devcheck_stop may do it first) */
	bool ended;                 /* its thread is done with it */
	devcheck_done_fn done;
	void *done_arg;
	unsigned jobs;
};

/* A device's summary and the peak the spec table or the CPU probe gave it (the basis of expected figures). */
struct devstate {
	struct devcheck_summary s;
	bool known;                 /* s holds a finished check */
	bool has_basis;
	struct device_peak basis;
	char running_id[DEVCHECK_ID_MAX];
};

struct devcheck {
	struct devcheck_opts opts;
	pthread_mutex_t mu;
	pthread_cond_t cv;          /* a run ended, a thread ended, or stop */
	bool stopping;
	struct devcheck_run *recent[RECENT_MAX]; /* ring, newest at head - 1 */
	unsigned nrecent, head;
	struct devstate devs[DEVICES_MAX];
	size_t ndevs;
	unsigned threads;           /* run threads alive */
	pthread_t scheduler;
	bool scheduler_started;
	uint64_t salt;
	uint64_t seq;
};

static double mono_ms(uint64_t since_ns)
{
	uint64_t now = clock_mono_ns();

	return now > since_ns ? (double)(now - since_ns) / 1e6 : 0.0;
}

static bool usable(double v)
{
	return isfinite(v) && v > 0;
}

static struct devstate *devstate_of(struct devcheck *c, const char *id, bool create)
{
	for (size_t i = 0; i < c->ndevs; i++)
		if (strcmp(c->devs[i].s.device, id) == 0)
			return &c->devs[i];
	if (!create || c->ndevs == DEVICES_MAX)
		return NULL;
	memset(&c->devs[c->ndevs], 0, sizeof(c->devs[0]));
	snprintf(c->devs[c->ndevs].s.device, sizeof(c->devs[0].s.device), "%s", id);
	c->devs[c->ndevs].s.gflops = NAN;
	c->devs[c->ndevs].s.gbytes_per_s = NAN;
	c->devs[c->ndevs].s.sgemm_ratio = NAN;
	c->devs[c->ndevs].s.triad_ratio = NAN;
	return &c->devs[c->ndevs++];
}

static void test_init(struct test *t, const char *name, const char *kind, const char *unit)
{
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->kind = kind;
	t->unit = unit;
	t->best = NAN;
	t->median = NAN;
	t->expected = NAN;
	t->first = NAN;
	t->last = NAN;
}

void devcheck_run_ref(struct devcheck_run *run)
{
	atomic_fetch_add(&run->refs, 1);
}

void devcheck_run_unref(struct devcheck_run *run)
{
	if (run == NULL || atomic_fetch_sub(&run->refs, 1) != 1)
		return;
	free(run);
}

const char *devcheck_run_id(const struct devcheck_run *run)
{
	return run->id;
}

const char *devcheck_run_device(const struct devcheck_run *run)
{
	return run->device;
}

enum devcheck_state devcheck_run_state(struct devcheck_run *run)
{
	enum devcheck_state s;

	pthread_mutex_lock(&run->c->mu);
	s = run->state;
	pthread_mutex_unlock(&run->c->mu);
	return s;
}

bool devcheck_run_verdict(struct devcheck_run *run, enum devcheck_verdict *out)
{
	bool has;

	pthread_mutex_lock(&run->c->mu);
	has = run->state == DEVCHECK_DONE && run->has_verdict;
	if (has)
		*out = run->verdict;
	pthread_mutex_unlock(&run->c->mu);
	return has;
}

void devcheck_run_wait(struct devcheck_run *run)
{
	struct devcheck *c = run->c;

	pthread_mutex_lock(&c->mu);
	while (!run->ended && run->state != DEVCHECK_INTERRUPTED)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* --- the document --- */

static const char *test_state(const struct test *t)
{
	if (t->finished)
		return "done";
	return t->started ? "running" : "pending";
}

/* One test as the document shows it; c->mu held. */
static json_t *test_json(const struct test *t)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(t->name));
	json_object_set_new(o, "kind", json_string(t->kind));
	json_object_set_new(o, "state", json_string(test_state(t)));
	if (t->unit != NULL)
		json_object_set_new(o, "unit", json_string(t->unit));
	if (t->n > 0 && strcmp(t->name, "triad") == 0)
		json_object_set_new(o, "size", json_pack("{s:I}", "n", (json_int_t)t->n));
	else if (t->n > 0)
		json_object_set_new(o, "size", json_pack("{s:I, s:I, s:I}", "m", (json_int_t)t->n, "n",
							 (json_int_t)t->n, "k", (json_int_t)t->n));
	if (t->unit != NULL) {
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
		if (isfinite(t->best) && usable(t->expected))
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
		if (usable(t->first) && isfinite(t->last))
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

static json_t *tel_json(const struct tel *t)
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
	if (run->has_verdict && run->state == DEVCHECK_DONE) {
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
	json_object_set_new(budget, "sgemm_ms", json_real(run->sgemm.budget_ms));
	json_object_set_new(budget, "triad_ms", json_real(run->triad.budget_ms));
	if (run->req.level == DEVCHECK_LONG)
		json_object_set_new(budget, "sustained_ms", json_integer((json_int_t)run->sustained_ms));
	json_object_set_new(o, "budget", budget);
	json_object_set_new(o, "jobs", json_integer(run->jobs));
	if (run->sgemm.wrong == 0)
		jsonval_set_num(measured, "gflops", run->sgemm.best);
	if (run->triad.wrong == 0)
		jsonval_set_num(measured, "gbytes_per_s", run->triad.best);
	json_object_set_new(o, "measured", measured);
	json_array_append_new(tests, test_json(&run->sgemm));
	json_array_append_new(tests, test_json(&run->triad));
	if (run->req.level == DEVCHECK_LONG)
		json_array_append_new(tests, test_json(&run->sustained));
	json_array_append_new(tests, test_json(&run->telemetry));
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

/* Records the document (if a history is wired); call without c->mu. */
static void record(struct devcheck_run *run)
{
	struct devcheck *c = run->c;
	json_t *doc;

	if (c->opts.record == NULL)
		return;
	doc = devcheck_run_json(run);
	c->opts.record(c->opts.record_ctx, doc);
	json_decref(doc);
}

static void changed(struct devcheck *c, const char *device)
{
	if (c->opts.changed != NULL)
		c->opts.changed(c->opts.changed_ctx, device);
}

static bool stopping(struct devcheck_run *run);

/* --- one job --- */

struct run_result {
	bool ok;                    /* the job succeeded */
	bool refused;               /* the executor would not take it */
	enum reason reason;
	char detail[320];
	bool verified;
	double worst;               /* error / tolerance */
	double kernel_ms;
	double compile_ms;          /* building the job's program (0 when it was cached or none is built) */
	double run_ms;              /* the job's own time: its total less its wait in the queue and its compile */
	double figure;              /* GFLOP/s for sgemm, GB/s for the rest */
	char job[32];
	char backend[16];
};

static double num_at(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(o, a);

	if (b != NULL)
		v = json_object_get(v, b);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Submits one verified run of the kernel at size n on the run's device, waits for it and reads its figures. */
static void run_job(struct devcheck_run *run, enum kernel_id k, uint64_t n, uint64_t timeout_ms, struct run_result *r)
{
	struct devcheck *c = run->c;
	struct exec_request req;
	struct exec_refusal why;
	struct exec_job *job = NULL;
	json_t *doc;
	json_t *err;
	const char *s;
	double queued;
	double total;
	double compile;

	memset(r, 0, sizeof(*r));
	r->figure = NAN;
	r->kernel_ms = NAN;
	r->worst = NAN;
	exec_request_init(&req);
	req.kernel = k;
	if (k == KERNEL_SGEMM)
		req.shape = (struct kernel_shape){.m = n, .n = n, .k = n};
	else
		req.shape.n = n;
	req.s = STREAM_SCALAR;
	exec_request_add_device(&req, run->device);
	req.pinned = true;
	req.fallback = false;
	snprintf(req.backend, sizeof(req.backend), "%s", run->req.backend);
	snprintf(req.placement, sizeof(req.placement), "health check %s (%s)", run->id, kernel_name(k));
	req.seed = run->seed + run->jobs;
	req.verify = true;
	req.timeout_ms = timeout_ms;
	pthread_mutex_lock(&c->mu);
	run->jobs++;
	pthread_mutex_unlock(&c->mu);
	if (exec_submit(c->opts.exec, &req, NULL, NULL, &job, &why) != ACCELD_OK) {
		r->refused = true;
		r->reason = why.reason;
		snprintf(r->detail, sizeof(r->detail), "%.300s", why.detail);
		json_decref(why.extra);
		exec_request_release(&req);
		return;
	}
	exec_request_release(&req);
	exec_job_wait(job);
	doc = exec_job_json(job);
	snprintf(r->job, sizeof(r->job), "%s", exec_job_id(job));
	s = json_string_value(json_object_get(doc, "backend"));
	snprintf(r->backend, sizeof(r->backend), "%s", s ? s : "");
	r->ok = exec_job_state(job) == EXEC_SUCCEEDED;
	r->verified = json_is_true(json_object_get(doc, "verified"));
	r->worst = num_at(doc, "verification", "worst_ratio");
	r->kernel_ms = num_at(doc, "timing", "kernel_ms");
	queued = num_at(doc, "timing", "queued_ms");
	total = num_at(doc, "timing", "total_ms");
	compile = num_at(doc, "timing", "compile_ms");
	r->compile_ms = isfinite(compile) && compile > 0.0 ? compile : 0.0;
	r->run_ms = isfinite(total) ? total - (isfinite(queued) ? queued : 0.0) - r->compile_ms : 0.0;
	if (r->run_ms < 0.0)
		r->run_ms = 0.0;
	r->figure = num_at(doc, "throughput", k == KERNEL_SGEMM ? "gflops" : "gbytes_per_s");
	err = json_object_get(doc, "error");
	if (!r->ok) {
		s = json_string_value(json_object_get(err, "reason"));
		if (s == NULL || !reason_parse(s, &r->reason))
			r->reason = REASON_DEVICE_FAILURE;
		s = json_string_value(json_object_get(err, "detail"));
		snprintf(r->detail, sizeof(r->detail), "job %s %s: %s", r->job,
			 json_string_value(json_object_get(doc, "state")), s ? s : "no detail");
	}
	json_decref(doc);
	exec_job_unref(job);
}

/*
 * run_job, waiting for room when the device's queue is full (other jobs are no fault of the device): up to 50 tries
 * 100 ms apart, then the refusal stands.
 */
static void run_job_queued(struct devcheck_run *run, enum kernel_id k, uint64_t n, uint64_t timeout_ms,
			   struct run_result *r)
{
	struct timespec pause = {.tv_sec = 0, .tv_nsec = 100000000L};

	for (int i = 0; i < 50; i++) {
		run_job(run, k, n, timeout_ms, r);
		if (!r->refused || (r->reason != REASON_QUEUE_FULL && r->reason != REASON_BUSY) || stopping(run))
			return;
		nanosleep(&pause, NULL);
	}
}

/* --- telemetry --- */

static void tel_init(struct tel *t)
{
	memset(t, 0, sizeof(*t));
	t->temp_first = NAN;
	t->temp_max = NAN;
	t->power_max = NAN;
	t->clock_min = NAN;
	t->clock_max_rated = NAN;
	t->ecc_first = NAN;
	t->ecc_last = NAN;
	t->retired_pending = -1;
	t->slowdown_c = NAN;
	t->now_temp = NAN;
	t->now_power = NAN;
	t->now_clock = NAN;
}

/* Adds what the device says now to t. */
static void tel_add(struct tel *t, const struct device *d)
{
	const struct device_telemetry *x = &d->telemetry;

	t->samples++;
	t->now_temp = x->temperature_celsius;
	t->now_power = x->power_watts;
	t->now_clock = x->clock_mhz;
	if (t->source == NULL)
		t->source = (d->sources & SOURCE_NVML)	     ? "nvml"
			    : d->type == DEVICE_CPU && isfinite(x->clock_mhz) ? "cpufreq"
			    : (d->sources & SOURCE_SYSFS)	     ? "sysfs"
								     : NULL;
	if (isfinite(x->temperature_celsius)) {
		if (isnan(t->temp_first))
			t->temp_first = x->temperature_celsius;
		if (isnan(t->temp_max) || x->temperature_celsius > t->temp_max)
			t->temp_max = x->temperature_celsius;
	}
	if (isfinite(x->power_watts)) {
		if (isnan(t->power_max) || x->power_watts > t->power_max)
			t->power_max = x->power_watts;
		t->power_sum += x->power_watts;
		t->power_n++;
	}
	if (isfinite(x->clock_mhz) && x->clock_mhz > 0) {
		if (isnan(t->clock_min) || x->clock_mhz < t->clock_min)
			t->clock_min = x->clock_mhz;
		t->clock_sum += x->clock_mhz;
		t->clock_n++;
	}
	if (d->clock_mhz > 0)
		t->clock_max_rated = d->clock_mhz;
	if (x->throttle_known) {
		t->throttle_known = true;
		t->throttle_seen |= x->throttle_reasons;
	}
	if (isfinite(x->ecc_uncorrected)) {
		if (isnan(t->ecc_first))
			t->ecc_first = x->ecc_uncorrected;
		t->ecc_last = x->ecc_uncorrected;
	}
	if (x->retired_pages_pending > t->retired_pending)
		t->retired_pending = x->retired_pages_pending;
	if (d->gpu.slowdown_temperature_celsius > 0)
		t->slowdown_c = d->gpu.slowdown_temperature_celsius;
}

/* Reads the device's telemetry anew (at most every 500 ms unless forced) into the run; false when it is gone. */
static bool sample(struct devcheck_run *run, bool force, struct device *dev)
{
	struct devcheck *c = run->c;
	struct device d;
	uint64_t now = clock_mono_ns();

	if (!force && run->tel.last_ns != 0 && now - run->tel.last_ns < TELEMETRY_EVERY_NS)
		return true;
	if (!c->opts.device(c->opts.device_ctx, run->device, true, &d))
		return false;
	pthread_mutex_lock(&c->mu);
	tel_add(&run->tel, &d);
	run->tel.last_ns = now;
	pthread_mutex_unlock(&c->mu);
	if (dev != NULL)
		*dev = d;
	return true;
}

/* --- sizes --- */

/* Whether an sgemm of size n fits the job limit and the device's memory. */
static bool sgemm_fits(const struct devcheck *c, const struct device *d, uint64_t n)
{
	uint64_t bytes = 3 * n * n * sizeof(float);

	if (4 * n * n > c->opts.settings.max_elements)
		return false;
	if (d->memory_total_bytes > 0 && bytes > d->memory_total_bytes / 4)
		return false;
	if (d->type == DEVICE_CPU && d->memory_available_bytes > 0 && bytes > d->memory_available_bytes / 4)
		return false;
	return !(d->opencl.present && d->opencl.max_alloc_bytes > 0 && n * n * sizeof(float) > d->opencl.max_alloc_bytes);
}

/*
 * The sizes the ramp goes through: from *start (lowered to what fits when a small job limit allows less) up to the
 * largest power-of-two multiple of it that fits, at most the settings' cap. Returns that largest size.
 */
static uint64_t sgemm_cap(const struct devcheck *c, const struct device *d, uint64_t *start)
{
	uint64_t max = c->opts.settings.sgemm_max_n ? c->opts.settings.sgemm_max_n : SGEMM_MAX;
	uint64_t n;

	while (*start > 16 && (*start > max || !sgemm_fits(c, d, *start)))
		*start /= 2;
	n = *start;
	while (n * 2 <= max && sgemm_fits(c, d, n * 2))
		n *= 2;
	return n;
}

/* The triad length: arrays four times the CPU's last-level caches, or a 16th of an accelerator's memory. */
static uint64_t triad_length(const struct devcheck *c, const struct device *d, char *why, size_t whysz)
{
	uint64_t n;
	bool capped = false;

	if (d->type == DEVICE_CPU) {
		uint64_t llc = 0;
		unsigned packages = d->cpu.packages ? d->cpu.packages : 1;

		for (int i = 3; i >= 1 && llc == 0; i--)
			llc = d->cpu.cache_bytes[i];
		if (llc == 0) {
			llc = 32ull << 20;
			snprintf(why, whysz, "each array 4 x an assumed 32 MiB last-level cache (none reported)");
		} else {
			snprintf(why, whysz, "each array 4 x the last-level cache (%llu KiB x %u)",
				 (unsigned long long)(llc >> 10), packages);
		}
		n = 4 * llc * packages / sizeof(float);
	} else if (d->memory_total_bytes > 0) {
		n = d->memory_total_bytes / 16 / sizeof(float);
		snprintf(why, whysz, "each array a 16th of the device's memory");
	} else {
		n = 1ull << 26;
		snprintf(why, whysz, "each array 256 MiB (the device's memory is unknown)");
	}
	if (n < TRIAD_MIN_N)
		n = TRIAD_MIN_N;
	/* smaller only when the job limit or the device's memory leaves no room (then the size is said) */
	while (n > TRIAD_FLOOR_N &&
	       (3 * n > c->opts.settings.max_elements ||
		(d->opencl.present && d->opencl.max_alloc_bytes > 0 && n * sizeof(float) > d->opencl.max_alloc_bytes) ||
		(d->memory_available_bytes > 0 && 3 * n * sizeof(float) > d->memory_available_bytes / 4))) {
		n /= 2;
		capped = true;
	}
	if (capped) {
		size_t len = strlen(why);

		snprintf(why + len, whysz - len, ", halved to what the job limit and the memory allow");
	}
	return n;
}

/* --- the tests --- */

static void publish_test(struct devcheck_run *run, struct test *dst, const struct test *src)
{
	pthread_mutex_lock(&run->c->mu);
	*dst = *src;
	pthread_mutex_unlock(&run->c->mu);
}

/* The backend that ran the jobs, as the executor named it. */
static void set_backend(struct devcheck_run *run, const char *backend)
{
	if (backend[0] == '\0')
		return;
	pthread_mutex_lock(&run->c->mu);
	snprintf(run->backend, sizeof(run->backend), "%s", backend);
	pthread_mutex_unlock(&run->c->mu);
}

static bool stopping(struct devcheck_run *run)
{
	bool s;

	pthread_mutex_lock(&run->c->mu);
	s = run->stop;
	pthread_mutex_unlock(&run->c->mu);
	return s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Best and median of the samples. */
static void summarise(struct test *t)
{
	double v[SAMPLES_MAX];

	if (t->nsamples == 0)
		return;
	memcpy(v, t->samples, t->nsamples * sizeof(v[0]));
	qsort(v, t->nsamples, sizeof(v[0]), cmp_double);
	t->best = v[t->nsamples - 1];
	t->median = t->nsamples % 2 ? v[t->nsamples / 2] : (v[t->nsamples / 2 - 1] + v[t->nsamples / 2]) / 2.0;
}

/* Notes one completed run in t; false when it cannot count (failed or wrong), which ends the test. */
static bool note_run(struct test *t, const struct run_result *r)
{
	if (r->job[0] != '\0')
		snprintf(t->last_job, sizeof(t->last_job), "%s", r->job);
	if (!r->ok) {
		t->failed = true;
		snprintf(t->failure, sizeof(t->failure), "%s: %s", reason_name(r->reason), r->detail);
		return false;
	}
	t->runs++;
	t->device_ms += r->run_ms;
	t->setup_ms += r->compile_ms;
	if (isfinite(r->worst) && (isnan(t->worst_error) || r->worst > t->worst_error || t->runs == 1))
		t->worst_error = r->worst;
	if (!r->verified) {
		t->wrong++;
		return false;
	}
	return true;
}

/* What a run of sgemm at twice this run's size is expected to take. */
static double next_run_ms(const struct run_result *r)
{
	double kernel = isfinite(r->kernel_ms) ? r->kernel_ms : r->run_ms;
	double around = r->run_ms > kernel ? r->run_ms - kernel : 0.0;

	return 8.0 * kernel + 2.0 * around;
}

/* The timeout of one run: generous against what the budget allows, within the executor's ceiling. */
static uint64_t run_timeout(uint64_t budget_ms)
{
	uint64_t t = budget_ms * 4 + 10000;

	return t;
}

static void test_sgemm(struct devcheck_run *run, const struct device *dev, uint64_t budget_ms)
{
	struct devcheck *c = run->c;
	struct test t = run->sgemm;
	uint64_t start = dev->type == DEVICE_CPU ? SGEMM_START_CPU : SGEMM_START_ACCEL;
	uint64_t cap = sgemm_cap(c, dev, &start);
	uint64_t n = start;
	uint64_t wall0 = clock_mono_ns();
	double prev = 0;
	double prev_ms = 0;  /* the kernel time of the previous size: a plateau compares two long enough runs */
	double prev_run_ms = 0;
	double last_run_ms = 0;
	struct run_result r;

	t.started = true;
	t.budget_ms = (double)budget_ms;
	publish_test(run, &run->sgemm, &t);
	/*
	 * One-off costs land on a device's first job: opening the backend (a CUDA context, an OpenCL program build),
	 * compiling and autotuning; on an H100 through PJRT they took 5.6 s of a 512^3 run whose kernel took 0.6 ms.
	 * A warm-up run at the start size takes them, and neither the budget nor the ramp counts it. A failure is
	 * left to the ramp's first run, which meets it again and reports it.
	 */
	run_job_queued(run, KERNEL_SGEMM, n, run_timeout(budget_ms), &r);
	if (r.ok)
		t.setup_ms += r.run_ms + r.compile_ms;
	if (stopping(run))
		goto out;
	for (;;) {
		run_job_queued(run, KERNEL_SGEMM, n, run_timeout(budget_ms), &r);
		set_backend(run, r.backend);
		if (r.refused) {
			/* a size the executor will not take ends the ramp at the last size that ran */
			if (t.nramp > 0) {
				n /= 2;
				snprintf(t.steady, sizeof(t.steady), "%llu refused by the executor (%s): %.120s",
					 (unsigned long long)(n * 2), reason_name(r.reason), r.detail);
				break;
			}
			t.failed = true;
			snprintf(t.failure, sizeof(t.failure), "%s: %s", reason_name(r.reason), r.detail);
			goto out;
		}
		if (!note_run(&t, &r))
			goto out;
		if (t.nramp < RAMP_MAX)
			t.ramp[t.nramp++] = (struct ramp_step){.n = n, .figure = r.figure, .kernel_ms = r.kernel_ms};
		t.n = n;
		last_run_ms = r.run_ms;
		t.nsamples = 1;
		t.samples[0] = r.figure;
		publish_test(run, &run->sgemm, &t);
		sample(run, false, NULL);
		if (stopping(run))
			goto out;
		/* the first run at a size is often cold (threads, caches, page faults): a plateau must hold warm */
		if (isfinite(r.kernel_ms) && r.kernel_ms >= PLATEAU_MIN_KERNEL_MS && prev_ms >= PLATEAU_MIN_KERNEL_MS &&
		    r.figure < prev * PLATEAU_GAIN && t.nsamples < SAMPLES_MAX) {
			struct run_result again;

			run_job_queued(run, KERNEL_SGEMM, n, run_timeout(budget_ms), &again);
			if (again.refused || !note_run(&t, &again)) {
				if (again.refused) {
					t.failed = true;
					snprintf(t.failure, sizeof(t.failure), "%s: %s", reason_name(again.reason),
						 again.detail);
				}
				goto out;
			}
			t.samples[t.nsamples++] = again.figure;
			last_run_ms = again.run_ms;
			if (again.figure > r.figure) {
				r = again;
				t.ramp[t.nramp - 1].figure = r.figure;
				t.ramp[t.nramp - 1].kernel_ms = r.kernel_ms;
			}
		}
		if (isfinite(r.kernel_ms) && r.kernel_ms >= PLATEAU_MIN_KERNEL_MS && prev_ms >= PLATEAU_MIN_KERNEL_MS &&
		    r.figure < prev * PLATEAU_GAIN) {
			snprintf(t.steady, sizeof(t.steady), "plateau: %+.1f %% from %llu to %llu%s",
				 (r.figure / prev - 1.0) * 100.0, (unsigned long long)(n / 2), (unsigned long long)n,
				 r.figure < prev ? "; the smaller size, faster, is kept" : "");
			/* slower at the larger size: the smaller one is the device's steady state, and cheaper to repeat */
			if (r.figure < prev) {
				n /= 2;
				t.n = n;
				t.nsamples = 1;
				t.samples[0] = prev;
				last_run_ms = prev_run_ms;
			}
			break;
		}
		if (n * 2 > cap) {
			snprintf(t.steady, sizeof(t.steady), "largest size the device's memory and the job limit allow");
			break;
		}
		/*
		 * The next size does 8 times the kernel work; what surrounds the kernel (inputs, copies, checking the
		 * result) grows less, and checking even shrinks past the size where it samples: two runs of the next
		 * size must fit what is left of the budget.
		 */
		if (t.device_ms + 2.0 * next_run_ms(&r) > (double)budget_ms) {
			snprintf(t.steady, sizeof(t.steady), "largest size two runs of the next of which fit the %llu ms "
				 "budget", (unsigned long long)budget_ms);
			break;
		}
		prev = r.figure;
		prev_ms = isfinite(r.kernel_ms) ? r.kernel_ms : 0.0;
		prev_run_ms = r.run_ms;
		n *= 2;
	}
	/* repeat at the final size while the budget lasts (the ramp's last run counts as the first) */
	n = t.n;
	while (t.nsamples < c->opts.settings.max_reps && t.nsamples < SAMPLES_MAX &&
	       t.device_ms + last_run_ms <= (double)budget_ms && mono_ms(wall0) < 4.0 * (double)budget_ms + 10000.0 &&
	       !stopping(run)) {
		run_job_queued(run, KERNEL_SGEMM, n, run_timeout(budget_ms), &r);
		if (r.refused) {
			t.failed = true;
			snprintf(t.failure, sizeof(t.failure), "%s: %s", reason_name(r.reason), r.detail);
			break;
		}
		if (!note_run(&t, &r))
			break;
		t.samples[t.nsamples++] = r.figure;
		last_run_ms = r.run_ms;
		summarise(&t);
		publish_test(run, &run->sgemm, &t);
		sample(run, false, NULL);
	}
out:
	summarise(&t);
	t.finished = true;
	publish_test(run, &run->sgemm, &t);
}

static void test_triad(struct devcheck_run *run, const struct device *dev, uint64_t budget_ms)
{
	struct devcheck *c = run->c;
	struct test t = run->triad;
	uint64_t n = triad_length(c, dev, t.steady, sizeof(t.steady));
	uint64_t wall0 = clock_mono_ns();
	double last_run_ms = 0;
	struct run_result r;

	t.started = true;
	t.budget_ms = (double)budget_ms;
	t.n = n;
	publish_test(run, &run->triad, &t);
	while (t.nsamples < c->opts.settings.max_reps && t.nsamples < SAMPLES_MAX && !stopping(run) &&
	       (t.nsamples == 0 || (t.device_ms + last_run_ms <= (double)budget_ms &&
				    mono_ms(wall0) < 4.0 * (double)budget_ms + 10000.0))) {
		run_job_queued(run, KERNEL_TRIAD, n, run_timeout(budget_ms), &r);
		set_backend(run, r.backend);
		if (r.refused && t.nsamples == 0 && n > TRIAD_FLOOR_N &&
		    (r.reason == REASON_JOB_TOO_LARGE || r.reason == REASON_EXCEEDS_DEVICE_ALLOCATION ||
		     r.reason == REASON_WOULD_TIME_OUT)) {
			n /= 2;
			t.n = n;
			snprintf(t.steady, sizeof(t.steady), "halved to %llu elements: %.120s", (unsigned long long)n,
				 r.detail);
			continue;
		}
		if (r.refused) {
			t.failed = true;
			snprintf(t.failure, sizeof(t.failure), "%s: %s", reason_name(r.reason), r.detail);
			break;
		}
		if (!note_run(&t, &r))
			break;
		t.samples[t.nsamples++] = r.figure;
		last_run_ms = r.run_ms;
		summarise(&t);
		publish_test(run, &run->triad, &t);
		sample(run, false, NULL);
	}
	summarise(&t);
	t.finished = true;
	publish_test(run, &run->triad, &t);
}

/* The long level: sgemm at the final size back to back for the phase's duration. */
static void test_sustained(struct devcheck_run *run, uint64_t duration_ms)
{
	struct devcheck *c = run->c;
	struct test t = run->sustained;
	uint64_t t0 = clock_mono_ns();
	uint64_t n = run->sgemm.n;
	double *figs = NULL;
	size_t nfigs = 0;
	size_t cap = 0;
	struct run_result r;

	t.started = true;
	t.n = n;
	t.budget_ms = (double)duration_ms;
	publish_test(run, &run->sustained, &t);
	if (n == 0 || run->sgemm.wrong > 0 || run->sgemm.runs == 0) {
		t.failed = true;
		snprintf(t.failure, sizeof(t.failure), "no sgemm size to sustain: the sgemm test did not complete");
		goto out;
	}
	while (mono_ms(t0) < (double)duration_ms && !stopping(run) && nfigs < SUSTAINED_RUNS_MAX) {
		double at;
		unsigned b;

		run_job_queued(run, KERNEL_SGEMM, n, run_timeout(duration_ms), &r);
		if (r.refused) {
			t.failed = true;
			snprintf(t.failure, sizeof(t.failure), "%s: %s", reason_name(r.reason), r.detail);
			break;
		}
		if (!note_run(&t, &r))
			break;
		if (nfigs == cap) {
			cap = cap ? cap * 2 : 256;
			figs = xrealloc(figs, cap * sizeof(*figs));
		}
		figs[nfigs++] = r.figure;
		at = mono_ms(t0);
		b = (unsigned)(at / (double)duration_ms * BUCKETS);
		if (b >= BUCKETS)
			b = BUCKETS - 1;
		sample(run, false, NULL);
		pthread_mutex_lock(&c->mu);
		run->buckets[b].sum += r.figure;
		run->buckets[b].runs++;
		run->buckets[b].temp = run->tel.now_temp;
		run->buckets[b].power = run->tel.now_power;
		run->buckets[b].clock = run->tel.now_clock;
		pthread_mutex_unlock(&c->mu);
		if (t.nsamples < SAMPLES_MAX)
			t.samples[t.nsamples++] = r.figure;
		t.duration_ms = at;
		publish_test(run, &run->sustained, &t);
	}
	t.duration_ms = mono_ms(t0);
	if (nfigs > 0) {
		size_t q = nfigs / 4 ? nfigs / 4 : 1;
		double a = 0;
		double z = 0;
		double best = 0;

		for (size_t i = 0; i < q; i++) {
			a += figs[i];
			z += figs[nfigs - 1 - i];
		}
		for (size_t i = 0; i < nfigs; i++)
			best = figs[i] > best ? figs[i] : best;
		t.first = a / (double)q;
		t.last = z / (double)q;
		t.best = best;
		t.median = NAN;
	}
out:
	free(figs);
	t.finished = true;
	publish_test(run, &run->sustained, &t);
}

/* --- verdicts --- */

static void set_verdict(struct test *t, enum devcheck_verdict v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_verdict(struct test *t, enum devcheck_verdict v, const char *fmt, ...)
{
	va_list ap;

	t->has_verdict = true;
	t->verdict = v;
	va_start(ap, fmt);
	vsnprintf(t->rule, sizeof(t->rule), fmt, ap);
	va_end(ap);
}

/* A throughput test against its expected figure. */
static void judge_figure(const struct devcheck_settings *s, struct test *t)
{
	double pct;

	if (t->wrong > 0) {
		set_verdict(t, DEVCHECK_FAIL, "wrong result: %u run%s did not match the double-precision reference "
			    "(worst error %.3g x the tolerance)", t->wrong, t->wrong == 1 ? "" : "s", t->worst_error);
		return;
	}
	if (t->runs == 0 || isnan(t->best)) {
		set_verdict(t, DEVCHECK_FAIL, "no run completed: %s", t->failed ? t->failure : "the check stopped first");
		return;
	}
	if (!usable(t->expected)) {
		set_verdict(t, DEVCHECK_PASS, "every result verified; no expected figure is known for this device (no "
			    "spec table row or computed peak), so %.4g %s is recorded only", t->best, t->unit);
		return;
	}
	pct = t->best / t->expected * 100.0;
	if (pct < s->fail_percent)
		set_verdict(t, DEVCHECK_FAIL, "measured %.4g %s is %.3g %% of the expected %.4g %s (fail below %u %%)", t->best,
			    t->unit, pct, t->expected, t->unit, s->fail_percent);
	else if (pct < s->warn_percent)
		set_verdict(t, DEVCHECK_WARN, "measured %.4g %s is %.3g %% of the expected %.4g %s (warn below %u %%)", t->best,
			    t->unit, pct, t->expected, t->unit, s->warn_percent);
	else
		set_verdict(t, DEVCHECK_PASS, "measured %.4g %s is %.3g %% of the expected %.4g %s (warn below %u %%, fail "
			    "below %u %%)", t->best, t->unit, pct, t->expected, t->unit, s->warn_percent,
			    s->fail_percent);
	/* a run that failed after good ones (out of memory, a device error) is a fault too */
	if (t->failed && t->verdict != DEVCHECK_FAIL) {
		char was[sizeof(t->rule)];

		snprintf(was, sizeof(was), "%s", t->rule);
		set_verdict(t, DEVCHECK_FAIL, "a run failed: %.200s (before it: %.200s)", t->failure, was);
	}
}

static void judge_sustained(const struct devcheck_settings *s, struct test *t)
{
	double pct;

	if (t->wrong > 0) {
		set_verdict(t, DEVCHECK_FAIL, "wrong result under sustained load: %u run%s did not match the reference",
			    t->wrong, t->wrong == 1 ? "" : "s");
		return;
	}
	if (t->runs == 0) {
		set_verdict(t, DEVCHECK_FAIL, "no run completed: %s", t->failed ? t->failure : "the check stopped first");
		return;
	}
	if (t->failed) {
		set_verdict(t, DEVCHECK_FAIL, "a run failed under sustained load: %s", t->failure);
		return;
	}
	if (t->runs < 8 || !usable(t->first)) {
		set_verdict(t, DEVCHECK_PASS, "every result verified; %u runs are too few to judge a trend (8 needed)",
			    t->runs);
		return;
	}
	pct = t->last / t->first * 100.0;
	if (pct < s->throttle_percent)
		set_verdict(t, DEVCHECK_WARN, "throughput fell from %.4g to %.4g GFLOP/s (%.1f %%) over %.0f s of load (warn "
			    "below %u %%): thermal or power throttling", t->first, t->last, pct, t->duration_ms / 1000.0,
			    s->throttle_percent);
	else
		set_verdict(t, DEVCHECK_PASS, "throughput held at %.1f %% of the first runs' %.4g GFLOP/s over %.0f s of "
			    "load (warn below %u %%)", pct, t->first, t->duration_ms / 1000.0, s->throttle_percent);
}

/* Adds a finding to a telemetry verdict: the worst verdict wins, every finding is said. */
static void finding(struct test *t, enum devcheck_verdict v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void finding(struct test *t, enum devcheck_verdict v, const char *fmt, ...)
{
	size_t len = strlen(t->rule);
	va_list ap;

	if (!t->has_verdict || v > t->verdict)
		t->verdict = v;
	t->has_verdict = true;
	if (len > 0 && len + 2 < sizeof(t->rule)) {
		memcpy(t->rule + len, "; ", 3);
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(t->rule + len, sizeof(t->rule) - len, fmt, ap);
	va_end(ap);
}

static void judge_telemetry(const struct devcheck_settings *s, const struct tel *x, struct test *t)
{
	char reasons[128];
	double mean_clock = x->clock_n > 0 ? x->clock_sum / x->clock_n : NAN;

	t->started = true;
	t->finished = true;
	t->has_verdict = false;
	t->rule[0] = '\0';
	if (isfinite(x->ecc_last) && x->ecc_last > 0)
		finding(t, DEVCHECK_FAIL, "%.0f uncorrectable ECC error%s since the driver loaded (%.0f at the start of the "
			"check)", x->ecc_last, x->ecc_last == 1 ? "" : "s", x->ecc_first);
	if (x->retired_pending == 1)
		finding(t, DEVCHECK_FAIL, "retired pages or remapped rows wait for a GPU reset");
	if (x->throttle_known && (x->throttle_seen & DEVICE_THROTTLE_HARMFUL)) {
		device_throttle_text(x->throttle_seen & DEVICE_THROTTLE_HARMFUL, reasons, sizeof(reasons));
		finding(t, DEVCHECK_WARN, "clocks held down during the check by %s", reasons);
	}
	if (isfinite(x->temp_max) && usable(x->slowdown_c) && x->temp_max >= x->slowdown_c)
		finding(t, DEVCHECK_WARN, "reached %.0f C, at or past its slowdown temperature of %.0f C", x->temp_max,
			x->slowdown_c);
	if (isfinite(mean_clock) && usable(x->clock_max_rated) &&
	    mean_clock < x->clock_max_rated * s->clock_percent / 100.0)
		finding(t, DEVCHECK_WARN, "ran at %.0f MHz on average, %.1f %% of its maximum %.0f MHz (warn below %u %%)",
			mean_clock, mean_clock / x->clock_max_rated * 100.0, x->clock_max_rated, s->clock_percent);
	if (t->has_verdict)
		return;
	if (x->samples == 0 || x->source == NULL)
		set_verdict(t, DEVCHECK_PASS, "the device reports no health telemetry (temperature, clocks, ECC)");
	else
		set_verdict(t, DEVCHECK_PASS, "no fault in %u %s sample%s", x->samples, x->source,
			    x->samples == 1 ? "" : "s");
}

/* The check's verdict: its worst test's, with that test's rule. */
static void judge(struct devcheck_run *run)
{
	const struct devcheck_settings *s = &run->c->opts.settings;
	struct test *all[4];
	size_t n = 0;
	struct test *worst = NULL;

	pthread_mutex_lock(&run->c->mu);
	judge_figure(s, &run->sgemm);
	judge_figure(s, &run->triad);
	all[n++] = &run->sgemm;
	all[n++] = &run->triad;
	if (run->req.level == DEVCHECK_LONG) {
		judge_sustained(s, &run->sustained);
		all[n++] = &run->sustained;
	}
	judge_telemetry(s, &run->tel, &run->telemetry);
	all[n++] = &run->telemetry;
	for (size_t i = 0; i < n; i++)
		if (worst == NULL || all[i]->verdict > worst->verdict)
			worst = all[i];
	run->has_verdict = true;
	run->verdict = worst->verdict;
	snprintf(run->rule, sizeof(run->rule), "%s: %s", worst->name, worst->rule);
	pthread_mutex_unlock(&run->c->mu);
}

/* --- the run's thread --- */

/* The peak that expected figures come from: what detection gave the device before any check's overlay. */
static void expected_basis(struct devcheck_run *run, const struct device *dev, struct device_peak *out)
{
	struct devstate *ds;

	pthread_mutex_lock(&run->c->mu);
	ds = devstate_of(run->c, run->device, false);
	*out = ds != NULL && ds->has_basis ? ds->basis : dev->peak;
	pthread_mutex_unlock(&run->c->mu);
}

/* Updates the device's summary with a finished run; c->mu held. */
static void summarise_device(struct devcheck *c, const struct devcheck_run *run)
{
	struct devstate *ds = devstate_of(c, run->device, true);

	if (ds == NULL)
		return;
	if (strcmp(ds->running_id, run->id) == 0)
		ds->running_id[0] = '\0';
	ds->known = true;
	snprintf(ds->s.id, sizeof(ds->s.id), "%s", run->id);
	ds->s.level = run->req.level;
	ds->s.state = run->state;
	ds->s.has_verdict = run->state == DEVCHECK_DONE && run->has_verdict;
	ds->s.verdict = run->verdict;
	ds->s.finished_ms = run->finished_ms;
	ds->s.sgemm_ratio = usable(run->sgemm.expected) && run->sgemm.wrong == 0 ? run->sgemm.best / run->sgemm.expected
										 : NAN;
	ds->s.triad_ratio = usable(run->triad.expected) && run->triad.wrong == 0 ? run->triad.best / run->triad.expected
										 : NAN;
	/* figures only from runs the reference confirmed */
	if (run->sgemm.wrong == 0 && usable(run->sgemm.best)) {
		ds->s.gflops = run->sgemm.best;
		ds->s.figures_ms = run->finished_ms;
	}
	if (run->triad.wrong == 0 && usable(run->triad.best)) {
		ds->s.gbytes_per_s = run->triad.best;
		ds->s.figures_ms = run->finished_ms;
	}
	if (ds->s.has_verdict)
		ds->s.finished[run->verdict]++;
}

/* Ends a run: final state, summary, history, the waiter; the thread's last touch of the module. */
static void finish(struct devcheck_run *run, enum devcheck_state state)
{
	struct devcheck *c = run->c;
	bool record_now;
	devcheck_done_fn done;
	void *arg;

	enum devcheck_state final;
	const char *verdict;
	char rule[sizeof(run->rule)];

	pthread_mutex_lock(&c->mu);
	if (run->state != DEVCHECK_INTERRUPTED) {
		run->state = state;
		run->finished_ms = clock_real_ms();
		summarise_device(c, run);
	}
	record_now = !run->final_recorded;
	run->final_recorded = true;
	final = run->state;
	verdict = final == DEVCHECK_DONE && run->has_verdict ? devcheck_verdict_name(run->verdict) : "";
	snprintf(rule, sizeof(rule), "%s", final == DEVCHECK_DONE ? run->rule : run->error);
	pthread_mutex_unlock(&c->mu);
	if (record_now)
		record(run);
	changed(c, run->device);
	log_fields(strcmp(verdict, "pass") == 0 ? LOGL_INFO : LOGL_WARN, "check", "check finished",
		   (struct log_field[]){LOG_S("id", run->id), LOG_S("device", run->device),
					LOG_S("level", devcheck_level_name(run->req.level)),
					LOG_S("state", devcheck_state_name(final)), LOG_S("verdict", verdict),
					LOG_S("rule", rule)},
		   6);
	pthread_mutex_lock(&c->mu);
	done = run->done;
	arg = run->done_arg;
	run->done = NULL;
	pthread_mutex_unlock(&c->mu);
	if (done != NULL)
		done(arg, run);
	pthread_mutex_lock(&c->mu);
	run->ended = true;
	c->threads--;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	devcheck_run_unref(run); /* the thread's reference */
}

/* A test's expected figure: the spec peak, times what a healthy device reaches through the backend. c->mu held. */
static void expect_one(struct test *t, double peak, const char *peak_source, const struct backend_ops *ops,
		       double fraction, const char *why)
{
	t->expected = usable(peak) ? peak * fraction : NAN;
	if (why == NULL)
		snprintf(t->expected_source, sizeof(t->expected_source), "%s", peak_source);
	else
		snprintf(t->expected_source, sizeof(t->expected_source), "%.300s; x %.2f, what %s reaches (%.150s)",
			 peak_source, fraction, ops->name, why);
}

static void expect(struct devcheck_run *run, const struct device *dev, const struct device_peak *basis)
{
	const struct backend_ops *ops = exec_device_backend_ops(run->c->opts.exec, run->device, run->req.backend);
	const char *sgemm_why = NULL;
	const char *triad_why = NULL;
	double sgemm = backend_reference(ops, dev, KERNEL_SGEMM, &sgemm_why);
	double triad = backend_reference(ops, dev, KERNEL_TRIAD, &triad_why);

	pthread_mutex_lock(&run->c->mu);
	expect_one(&run->sgemm, basis->fp32_tflops * 1000.0, basis->source, ops, sgemm, sgemm_why);
	expect_one(&run->triad, basis->memory_bandwidth_gbps, basis->source, ops, triad, triad_why);
	pthread_mutex_unlock(&run->c->mu);
}

static void *run_main(void *arg)
{
	struct devcheck_run *run = arg;
	struct devcheck *c = run->c;
	struct device dev;
	struct device_peak basis;

	/* the device shows the check before the check shows itself running */
	changed(c, run->device);
	pthread_mutex_lock(&c->mu);
	if (run->state == DEVCHECK_QUEUED) {
		run->state = DEVCHECK_RUNNING;
		run->started_ms = clock_real_ms();
		run->started_ns = clock_mono_ns();
	}
	pthread_mutex_unlock(&c->mu);
	record(run);
	if (!sample(run, true, &dev)) {
		pthread_mutex_lock(&c->mu);
		run->has_error = true;
		run->error_reason = REASON_UNKNOWN_DEVICE;
		snprintf(run->error, sizeof(run->error), "%s is gone", run->device);
		pthread_mutex_unlock(&c->mu);
		judge(run);
		finish(run, DEVCHECK_DONE);
		return NULL;
	}
	expected_basis(run, &dev, &basis);
	pthread_mutex_lock(&c->mu);
	DEVICE_SET(run->model, dev.model);
	DEVICE_SET(run->type, device_type_name(dev.type));
	pthread_mutex_unlock(&c->mu);
	expect(run, &dev, &basis);
	test_sgemm(run, &dev, c->opts.settings.sgemm_budget_ms);
	if (!stopping(run))
		test_triad(run, &dev, c->opts.settings.triad_budget_ms);
	if (run->req.level == DEVCHECK_LONG && !stopping(run))
		test_sustained(run, run->sustained_ms);
	sample(run, true, NULL);
	if (stopping(run)) {
		finish(run, DEVCHECK_INTERRUPTED);
		return NULL;
	}
	judge(run);
	finish(run, DEVCHECK_DONE);
	return NULL;
}

/* --- the module --- */

void devcheck_stop(struct devcheck *c)
{
	struct devcheck_run *interrupted[RECENT_MAX];
	size_t n = 0;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	for (unsigned i = 0; i < c->nrecent; i++) {
		struct devcheck_run *run = c->recent[i];

		if (run->ended || (run->state != DEVCHECK_QUEUED && run->state != DEVCHECK_RUNNING))
			continue;
		run->stop = true;
		run->state = DEVCHECK_INTERRUPTED;
		run->finished_ms = clock_real_ms();
		run->has_error = true;
		run->error_reason = REASON_INTERRUPTED;
		snprintf(run->error, sizeof(run->error), "acceld stopped before the check finished");
		run->final_recorded = true;
		summarise_device(c, run);
		devcheck_run_ref(run);
		interrupted[n++] = run;
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; i < n; i++) {
		log_fields(LOGL_WARN, "check", "check interrupted",
			   (struct log_field[]){LOG_S("id", interrupted[i]->id), LOG_S("device", interrupted[i]->device)},
			   2);
		record(interrupted[i]);
		devcheck_run_unref(interrupted[i]);
	}
}

static void *scheduler_main(void *arg);

enum acceld_err devcheck_new(const struct devcheck_opts *opts, struct devcheck **out)
{
	struct devcheck *c;

	*out = NULL;
	if (opts->exec == NULL || opts->device == NULL || (opts->settings.interval_ms > 0 && opts->list == NULL))
		return ACCELD_EINVAL;
	c = xcalloc(1, sizeof(*c));
	c->opts = *opts;
	if (c->opts.settings.max_reps == 0)
		c->opts.settings.max_reps = 5;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (getrandom(&c->salt, sizeof(c->salt), 0) != sizeof(c->salt))
		c->salt = clock_mono_ns();
	if (c->opts.settings.interval_ms > 0) {
		if (pthread_create(&c->scheduler, NULL, scheduler_main, c) == 0)
			c->scheduler_started = true;
		else
			log_msg(LOGL_ERROR, "check", "cannot start the periodic check thread; checks run on request only");
	}
	*out = c;
	return ACCELD_OK;
}

void devcheck_free(struct devcheck *c)
{
	if (c == NULL)
		return;
	devcheck_stop(c);
	if (c->scheduler_started)
		pthread_join(c->scheduler, NULL);
	pthread_mutex_lock(&c->mu);
	while (c->threads > 0)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 0; i < c->nrecent; i++)
		devcheck_run_unref(c->recent[i]);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static void refuse(struct devcheck_refusal *why, enum acceld_err err, enum reason reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void refuse(struct devcheck_refusal *why, enum acceld_err err, enum reason reason, const char *fmt, ...)
{
	va_list ap;

	why->err = err;
	why->reason = reason;
	va_start(ap, fmt);
	vsnprintf(why->detail, sizeof(why->detail), fmt, ap);
	va_end(ap);
}

/* Time-ordered ids: milliseconds, then a mixed sequence number. */
static void make_id(struct devcheck *c, int64_t now_ms, char out[DEVCHECK_ID_MAX])
{
	uint64_t z = c->salt + ++c->seq * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	snprintf(out, DEVCHECK_ID_MAX, "chk-%011llx%04x", (unsigned long long)now_ms & 0xfffffffffffull,
		 (unsigned)(z & 0xffffu));
}

static void recent_add(struct devcheck *c, struct devcheck_run *run)
{
	struct devcheck_run *old = NULL;

	devcheck_run_ref(run);
	if (c->nrecent == RECENT_MAX) {
		/* the oldest that has ended makes room; running ones are never dropped */
		unsigned drop = RECENT_MAX;

		for (unsigned i = 0; i < c->nrecent && drop == RECENT_MAX; i++)
			if (c->recent[i]->ended)
				drop = i;
		if (drop == RECENT_MAX)
			drop = 0;
		old = c->recent[drop];
		memmove(&c->recent[drop], &c->recent[drop + 1], (c->nrecent - drop - 1) * sizeof(c->recent[0]));
		c->nrecent--;
	}
	c->recent[c->nrecent++] = run;
	devcheck_run_unref(old);
}

enum acceld_err devcheck_start(struct devcheck *c, const char *device_id, const struct devcheck_request *req,
			    devcheck_done_fn done, void *arg, struct devcheck_run **out, struct devcheck_refusal *why)
{
	struct devcheck_run *run = NULL;
	struct devstate *ds;
	struct device dev;
	const struct device *mine;
	pthread_t thread;
	pthread_attr_t attr;
	int rc;

	memset(why, 0, sizeof(*why));
	if (out != NULL)
		*out = NULL;
	if (!c->opts.device(c->opts.device_ctx, device_id, false, &dev)) {
		refuse(why, ACCELD_ENOTFOUND, REASON_UNKNOWN_DEVICE, "no device '%s' (see GET /devices)", device_id);
		return why->err;
	}
	mine = exec_device(c->opts.exec, device_id);
	if (mine == NULL) {
		refuse(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED,
		       "%s cannot be checked: no backend of acceld runs jobs on it (executable is false)", device_id);
		return why->err;
	}
	if (req->backend[0] != '\0') {
		const struct backend_ops *ops = backend_find(backend_builtin, req->backend);

		if (ops == NULL || !ops->serves(mine)) {
			refuse(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED, "the %s backend does not run jobs on %s",
			       req->backend, device_id);
			return why->err;
		}
	}
	run = xcalloc(1, sizeof(*run));
	atomic_init(&run->refs, 1);
	run->c = c;
	run->req = *req;
	run->state = DEVCHECK_QUEUED;
	run->done = done;
	run->done_arg = arg;
	run->sustained_ms = req->duration_ms ? req->duration_ms : c->opts.settings.long_ms;
	snprintf(run->device, sizeof(run->device), "%s", device_id);
	if (req->backend[0] != '\0')
		snprintf(run->backend, sizeof(run->backend), "%s", req->backend);
	else if (exec_device_backend(c->opts.exec, device_id) != NULL)
		snprintf(run->backend, sizeof(run->backend), "%s", exec_device_backend(c->opts.exec, device_id));
	test_init(&run->sgemm, "sgemm", "matrix", "GFLOP/s");
	test_init(&run->triad, "triad", "memory", "GB/s");
	test_init(&run->sustained, "sustained", "sustained", "GFLOP/s");
	test_init(&run->telemetry, "telemetry", "telemetry", NULL);
	run->sgemm.budget_ms = (double)c->opts.settings.sgemm_budget_ms;
	run->triad.budget_ms = (double)c->opts.settings.triad_budget_ms;
	run->sustained.budget_ms = (double)run->sustained_ms;
	tel_init(&run->tel);
	for (unsigned i = 0; i < BUCKETS; i++)
		run->buckets[i].temp = run->buckets[i].power = run->buckets[i].clock = NAN;

	pthread_mutex_lock(&c->mu);
	if (c->stopping) {
		pthread_mutex_unlock(&c->mu);
		free(run);
		refuse(why, ACCELD_EUNAVAILABLE, REASON_SHUTTING_DOWN, "acceld is stopping and starts no checks");
		return why->err;
	}
	ds = devstate_of(c, device_id, true);
	if (ds == NULL) {
		pthread_mutex_unlock(&c->mu);
		free(run);
		refuse(why, ACCELD_EBUSY, REASON_BUSY, "checks of more than %d devices are not kept", DEVICES_MAX);
		return why->err;
	}
	if (ds->running_id[0] != '\0') {
		refuse(why, ACCELD_ECONFLICT, REASON_CHECK_RUNNING, "check %s of %s is running; one check per device at a "
		       "time (see GET /devices/%s/checks/%s)", ds->running_id, device_id, device_id, ds->running_id);
		pthread_mutex_unlock(&c->mu);
		free(run);
		return why->err;
	}
	run->created_ms = clock_real_ms();
	make_id(c, run->created_ms, run->id);
	run->seed = c->seq * 1000003u + 1;
	snprintf(ds->running_id, sizeof(ds->running_id), "%s", run->id);
	recent_add(c, run);
	devcheck_run_ref(run); /* the thread's */
	c->threads++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&thread, &attr, run_main, run);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		c->threads--;
		ds->running_id[0] = '\0';
		run->state = DEVCHECK_INTERRUPTED;
		run->ended = true;
		pthread_mutex_unlock(&c->mu);
		devcheck_run_unref(run); /* the thread's */
		devcheck_run_unref(run); /* the creation reference; the ring keeps its own */
		refuse(why, ACCELD_EUNAVAILABLE, REASON_UNAVAILABLE, "cannot start the check's thread: %s", strerror(rc));
		return why->err;
	}
	if (out != NULL) {
		devcheck_run_ref(run);
		*out = run;
	}
	pthread_mutex_unlock(&c->mu);
	log_fields(LOGL_INFO, "check", "check started",
		   (struct log_field[]){LOG_S("id", run->id), LOG_S("device", device_id),
					LOG_S("level", devcheck_level_name(req->level)), LOG_S("trigger", req->trigger)},
		   4);
	devcheck_run_unref(run); /* the creation reference; the ring, the thread and *out hold theirs */
	return ACCELD_OK;
}

struct devcheck_run *devcheck_get(struct devcheck *c, const char *id)
{
	struct devcheck_run *found = NULL;

	pthread_mutex_lock(&c->mu);
	for (unsigned i = 0; i < c->nrecent && found == NULL; i++) {
		if (strcmp(c->recent[i]->id, id) == 0) {
			found = c->recent[i];
			devcheck_run_ref(found);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return found;
}

bool devcheck_running_id(struct devcheck *c, const char *device_id, char id[DEVCHECK_ID_MAX])
{
	struct devstate *ds;
	bool running = false;

	pthread_mutex_lock(&c->mu);
	ds = devstate_of(c, device_id, false);
	if (ds != NULL && ds->running_id[0] != '\0') {
		snprintf(id, DEVCHECK_ID_MAX, "%s", ds->running_id);
		running = true;
	}
	pthread_mutex_unlock(&c->mu);
	return running;
}

json_t *devcheck_list_json(struct devcheck *c, const char *device_id, unsigned page_size, const char *after)
{
	json_t *doc = json_object();
	json_t *arr = json_array();
	struct devcheck_run *picked[RECENT_MAX];
	unsigned n = 0;
	bool skipping = after != NULL && after[0] != '\0';
	bool more = false;

	pthread_mutex_lock(&c->mu);
	for (unsigned k = c->nrecent; k-- > 0;) {
		struct devcheck_run *run = c->recent[k];

		if (strcmp(run->device, device_id) != 0)
			continue;
		if (skipping) {
			skipping = strcmp(run->id, after) != 0;
			continue;
		}
		if (n == page_size) {
			more = true;
			break;
		}
		devcheck_run_ref(run);
		picked[n++] = run;
	}
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 0; i < n; i++) {
		json_array_append_new(arr, devcheck_run_json(picked[i]));
		devcheck_run_unref(picked[i]);
	}
	if (skipping) { /* the token named no check of the device */
		json_decref(arr);
		json_decref(doc);
		return NULL;
	}
	json_object_set_new(doc, "checks", arr);
	if (more && n > 0)
		json_object_set_new(doc, "next_page_token", json_string(devcheck_run_id(picked[n - 1])));
	return doc;
}

/* --- figures for the rest of acceld --- */

void devcheck_seed(struct devcheck *c, const json_t *doc)
{
	const char *id = json_string_value(json_object_get(doc, "id"));
	const char *device = json_string_value(json_object_get(doc, "device"));
	const char *state = json_string_value(json_object_get(doc, "state"));
	const char *finished = json_string_value(json_object_get(doc, "finished_at"));
	const char *verdict = json_string_value(json_object_get(doc, "verdict"));
	const char *level = json_string_value(json_object_get(doc, "level"));
	json_t *measured = json_object_get(doc, "measured");
	json_t *tests = json_object_get(doc, "tests");
	struct devstate *ds;
	int64_t finished_ms;
	enum devcheck_verdict v;
	enum devcheck_level l = DEVCHECK_QUICK;
	size_t i;
	json_t *t;

	if (id == NULL || device == NULL || state == NULL || finished == NULL ||
	    clock_parse_rfc3339(finished, &finished_ms) != 0 ||
	    (strcmp(state, "done") != 0 && strcmp(state, "interrupted") != 0))
		return;
	devcheck_level_parse(level, &l);
	pthread_mutex_lock(&c->mu);
	ds = devstate_of(c, device, true);
	if (ds == NULL || (ds->known && ds->s.finished_ms >= finished_ms)) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	ds->known = true;
	snprintf(ds->s.id, sizeof(ds->s.id), "%s", id);
	ds->s.level = l;
	ds->s.state = strcmp(state, "done") == 0 ? DEVCHECK_DONE : DEVCHECK_INTERRUPTED;
	ds->s.has_verdict = ds->s.state == DEVCHECK_DONE && devcheck_verdict_parse(verdict, &v);
	if (ds->s.has_verdict)
		ds->s.verdict = v;
	ds->s.finished_ms = finished_ms;
	if (json_is_number(json_object_get(measured, "gflops"))) {
		ds->s.gflops = json_number_value(json_object_get(measured, "gflops"));
		ds->s.figures_ms = finished_ms;
	}
	if (json_is_number(json_object_get(measured, "gbytes_per_s"))) {
		ds->s.gbytes_per_s = json_number_value(json_object_get(measured, "gbytes_per_s"));
		ds->s.figures_ms = finished_ms;
	}
	json_array_foreach(tests, i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		json_t *ratio = json_object_get(t, "ratio");

		if (name != NULL && json_is_number(ratio) && strcmp(name, "sgemm") == 0)
			ds->s.sgemm_ratio = json_number_value(ratio);
		else if (name != NULL && json_is_number(ratio) && strcmp(name, "triad") == 0)
			ds->s.triad_ratio = json_number_value(ratio);
	}
	pthread_mutex_unlock(&c->mu);
}

size_t devcheck_summaries(struct devcheck *c, struct devcheck_summary *out, size_t cap)
{
	size_t n = 0;

	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->ndevs && n < cap; i++) {
		if (!c->devs[i].known && c->devs[i].running_id[0] == '\0')
			continue;
		out[n] = c->devs[i].s;
		snprintf(out[n].running_id, sizeof(out[n].running_id), "%s", c->devs[i].running_id);
		n++;
	}
	pthread_mutex_unlock(&c->mu);
	return n;
}

bool devcheck_summary_of(struct devcheck *c, const char *device_id, struct devcheck_summary *out)
{
	struct devstate *ds;
	bool found = false;

	pthread_mutex_lock(&c->mu);
	ds = devstate_of(c, device_id, false);
	if (ds != NULL && (ds->known || ds->running_id[0] != '\0')) {
		*out = ds->s;
		snprintf(out->running_id, sizeof(out->running_id), "%s", ds->running_id);
		found = true;
	}
	pthread_mutex_unlock(&c->mu);
	return found;
}

void devcheck_apply(struct devcheck *c, struct device *dev)
{
	struct devstate *ds;
	struct device_check *dc = &dev->check;
	char when[CLOCK_RFC3339_LEN];
	char before[sizeof(dev->peak.source)];

	pthread_mutex_lock(&c->mu);
	ds = devstate_of(c, dev->id, true);
	if (ds == NULL) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	/* what detection gave the device is the basis of the next check's expected figures */
	ds->has_basis = true;
	ds->basis = dev->peak;
	snprintf(dc->running_id, sizeof(dc->running_id), "%s", ds->running_id);
	if (ds->known) {
		snprintf(dc->state, sizeof(dc->state), "%s", devcheck_state_name(ds->s.state));
		snprintf(dc->id, sizeof(dc->id), "%s", ds->s.id);
		snprintf(dc->level, sizeof(dc->level), "%s", devcheck_level_name(ds->s.level));
		snprintf(dc->verdict, sizeof(dc->verdict), "%s", ds->s.has_verdict ? devcheck_verdict_name(ds->s.verdict) : "");
		dc->gflops = ds->s.gflops;
		dc->gbytes_per_s = ds->s.gbytes_per_s;
		dc->finished_ms = ds->s.finished_ms;
	}
	/* a CPU's peak is an estimate: a check's verified figures are better, and say so */
	if (ds->known && dev->type == DEVICE_CPU && ds->s.figures_ms > 0 &&
	    (usable(ds->s.gflops) || usable(ds->s.gbytes_per_s))) {
		snprintf(before, sizeof(before), "%s", dev->peak.source);
		if (usable(ds->s.gflops))
			dev->peak.fp32_tflops = ds->s.gflops / 1000.0;
		if (usable(ds->s.gbytes_per_s))
			dev->peak.memory_bandwidth_gbps = ds->s.gbytes_per_s;
		clock_rfc3339(ds->s.figures_ms, when);
		snprintf(dev->peak.source, sizeof(dev->peak.source),
			 "measured by health check %s at %s (sgemm %.1f GFLOP/s, triad %.1f GB/s); replaces: %.120s",
			 ds->s.id, when, ds->s.gflops, ds->s.gbytes_per_s, before);
	}
	pthread_mutex_unlock(&c->mu);
}

size_t devcheck_measured(struct devcheck *c, int64_t now_ms, struct select_measured *out, char (*ids)[DEVICE_ID_MAX],
		      size_t cap)
{
	static const enum kernel_id memory_kernels[] = {KERNEL_SAXPY, KERNEL_TRIAD, KERNEL_DOT, KERNEL_SOFTMAX};
	size_t n = 0;
	size_t nid = 0;

	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->ndevs; i++) {
		const struct devcheck_summary *s = &c->devs[i].s;

		if (!c->devs[i].known || s->figures_ms == 0 || c->opts.settings.max_age_ms == 0 ||
		    now_ms - s->figures_ms > (int64_t)c->opts.settings.max_age_ms || nid == cap)
			continue;
		snprintf(ids[nid], DEVICE_ID_MAX, "%s", s->device);
		if (usable(s->gflops) && n < cap)
			out[n++] = (struct select_measured){.device_id = ids[nid], .kernel = kernel_name(KERNEL_SGEMM),
							    .gflops = s->gflops, .gbytes_per_s = NAN, .source = "check"};
		for (size_t k = 0; usable(s->gbytes_per_s) && k < sizeof(memory_kernels) / sizeof(memory_kernels[0]) &&
				   n < cap;
		     k++)
			out[n++] = (struct select_measured){.device_id = ids[nid], .kernel = kernel_name(memory_kernels[k]),
							    .gflops = NAN, .gbytes_per_s = s->gbytes_per_s,
							    .source = "check"};
		nid++;
	}
	pthread_mutex_unlock(&c->mu);
	return n;
}

/* --- periodic checks --- */

/* Waits up to ms, or until stop; returns false when stopping. */
static bool scheduler_sleep(struct devcheck *c, uint64_t ms)
{
	struct timespec until = clock_deadline(CLOCK_REALTIME, ms * 1000000ull);
	bool go;

	pthread_mutex_lock(&c->mu);
	while (!c->stopping)
		if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0)
			break;
	go = !c->stopping;
	pthread_mutex_unlock(&c->mu);
	return go;
}

/* Every interval: a quick check of each device with no job queued or running, one device at a time. */
static void *scheduler_main(void *arg)
{
	struct devcheck *c = arg;
	char (*ids)[DEVICE_ID_MAX] = xcalloc(DEVICES_MAX, DEVICE_ID_MAX);

	while (scheduler_sleep(c, c->opts.settings.interval_ms)) {
		size_t n = c->opts.list(c->opts.list_ctx, ids, DEVICES_MAX);

		for (size_t i = 0; i < n; i++) {
			struct devcheck_request req;
			struct devcheck_refusal why;
			struct devcheck_run *run = NULL;
			unsigned queued = 0;
			unsigned running = 0;

			if (exec_device(c->opts.exec, ids[i]) == NULL ||
			    exec_device_load(c->opts.exec, ids[i], &queued, &running) != ACCELD_OK || queued + running > 0)
				continue;
			devcheck_request_init(&req);
			snprintf(req.trigger, sizeof(req.trigger), "schedule");
			if (devcheck_start(c, ids[i], &req, NULL, NULL, &run, &why) != ACCELD_OK)
				continue;
			devcheck_run_wait(run);
			devcheck_run_unref(run);
		}
	}
	free(ids);
	return NULL;
}
