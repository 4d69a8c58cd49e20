/*
 * devcheck_tests: the tests a check runs, each a series of verified jobs through the executor, one at a time: the
 * matrix ramp and its repeats, the memory test, the long level's sustained load, and the telemetry sampled between
 * runs.
 * A test computes on its own copy and publishes it under the module's mutex; executor calls and the device
 * callback are made with the mutex released.
 */
#include "check/devcheck_int.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "exec/exec.h"
#include "exec/kernel.h"
#include "core/mem.h"
#include "core/reason.h"

#define SUSTAINED_RUNS_MAX 100000
#define MATRIX_START_CPU 256
#define MATRIX_START_ACCEL 512
#define MATRIX_MAX 8192
#define PLATEAU_GAIN 1.05      /* a doubling that gains less than 5 % is a plateau (both kernels of 20 ms or more) */
#define PLATEAU_MIN_KERNEL_MS 20.0
#define MEMORY_MIN_N (1ull << 22)   /* 16 MiB per array */
#define MEMORY_FLOOR_N 4096         /* the smallest a job limit can force */
#define TELEMETRY_EVERY_NS 500000000ull
#define STREAM_SCALAR 3.0f     /* STREAM's scale of the memory test's second input */
#define TRANSFER_MIN_ROWS 16ull     /* 256 KiB each way: the smallest a job limit can force */
#define TRANSFER_DEFAULT_BYTES (256ull << 20)

static double mono_ms(uint64_t since_ns)
{
	uint64_t now = clock_mono_ns();

	return now > since_ns ? (double)(now - since_ns) / 1e6 : 0.0;
}

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
	double figure;              /* GFLOP/s for compute-bound kernels, GB/s for the rest */
	double upload, download;    /* the job's transfer rates each way, GB/s; NAN when nothing moved */
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

/* A verified run of kernel k at shape s on the run's device, pinned there, as the check's job; inputs generated. */
static void check_request(struct devcheck_run *run, enum kernel_id k, struct kernel_shape s, uint64_t timeout_ms,
			  struct exec_request *req)
{
	exec_request_init(req);
	req->kernel = k;
	req->shape = s;
	req->scale = STREAM_SCALAR;
	exec_request_add_device(req, run->device);
	req->pinned = true;
	req->fallback = false;
	snprintf(req->backend, sizeof(req->backend), "%s", run->req.backend);
	snprintf(req->placement, sizeof(req->placement), "health check %s (%s)", run->id, kernel_name(k));
	req->seed = run->seed + run->jobs;
	req->verify = true;
	req->verify_full = true; /* a health check compares every element it can (kernel_verify), as it always has */
	req->timeout_ms = timeout_ms;
	snprintf(req->trigger, sizeof(req->trigger), "check");
	snprintf(req->check_id, sizeof(req->check_id), "%s", run->id);
}

/* Submits req (taken: released here), waits for its job and reads its figures into r. */
static void submit_job(struct devcheck_run *run, struct exec_request *req, struct run_result *r)
{
	struct devcheck *c = run->c;
	enum kernel_id k = req->kernel;
	struct refusal why;
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
	r->upload = NAN;
	r->download = NAN;
	pthread_mutex_lock(&c->mu);
	run->jobs++;
	pthread_mutex_unlock(&c->mu);
	if (exec_submit(c->opts.exec, req, NULL, NULL, &job, &why) != ACCELD_OK) {
		r->refused = true;
		r->reason = why.reason;
		snprintf(r->detail, sizeof(r->detail), "%.300s", why.detail);
		refusal_release(&why);
		exec_request_release(req);
		return;
	}
	exec_request_release(req);
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
	r->figure = num_at(doc, "throughput", kernel_compute_bound(k) ? "gflops" : "gbytes_per_s");
	r->upload = num_at(doc, "timing", "upload_gbytes_per_s");
	r->download = num_at(doc, "timing", "download_gbytes_per_s");
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

/* What a check's job runs: the kernel, its shape, and whether the host makes its inputs and takes its output back. */
struct job_spec {
	enum kernel_id k;
	struct kernel_shape s;
	bool host_data;
};

/* A value for element i of an input the host makes: cheap to make, in [-0.5, 0.5). */
static float host_value(uint64_t i)
{
	return (float)(i % 1021) / 1021.0f - 0.5f;
}

/*
 * Submits one verified run of spec on the run's device, waits for it and reads its figures. With host_data, the
 * inputs are made on the host and go up, and a full verification brings the whole output back (and frees it: a
 * returned output would stay in the executor's memory with the job).
 */
static void run_spec(struct devcheck_run *run, const struct job_spec *spec, uint64_t timeout_ms, struct run_result *r)
{
	struct exec_request req;

	check_request(run, spec->k, spec->s, timeout_ms, &req);
	if (spec->host_data) {
		for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++) {
			uint64_t len = kernel_input_len(spec->k, &spec->s, i);

			if (len == 0)
				continue;
			req.inputs[i] = xmalloc(len * sizeof(float));
			for (uint64_t e = 0; e < len; e++)
				req.inputs[i][e] = host_value(e);
		}
		req.has_inputs = true;
	}
	submit_job(run, &req, r);
}

/*
 * run_spec, waiting for room when the device's queue is full (other jobs are no fault of the device): up to 50 tries
 * 100 ms apart, then the refusal stands.
 */
static void run_spec_queued(struct devcheck_run *run, const struct job_spec *spec, uint64_t timeout_ms,
			    struct run_result *r)
{
	struct timespec pause = {.tv_sec = 0, .tv_nsec = 100000000L};

	for (int i = 0; i < 50; i++) {
		run_spec(run, spec, timeout_ms, r);
		if (!r->refused || (r->reason != REASON_QUEUE_FULL && r->reason != REASON_BUSY) ||
		    devcheck_run_stopping(run))
			return;
		nanosleep(&pause, NULL);
	}
}

/* run_spec_queued of kernel k with every size it takes n (square matrices), its inputs generated. */
static void run_job_queued(struct devcheck_run *run, enum kernel_id k, uint64_t n, uint64_t timeout_ms,
			   struct run_result *r)
{
	struct job_spec spec = {.k = k,
				.s = {.m = (kernel_params(k) & KERNEL_PARAM_M) ? n : 0, .n = n,
				      .k = (kernel_params(k) & KERNEL_PARAM_K) ? n : 0}};

	run_spec_queued(run, &spec, timeout_ms, r);
}

/* --- telemetry --- */

void devcheck_tel_init(struct devcheck_telemetry *t)
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
static void tel_add(struct devcheck_telemetry *t, const struct device *d)
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

bool devcheck_run_sample(struct devcheck_run *run, bool force, struct device *dev)
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

/* Whether a matrix run of size n fits the job limit and the device's memory. */
/* The backend the check's jobs run on: the one it names, else the device's default. */
static const struct backend_ops *run_backend(const struct devcheck_run *run)
{
	return exec_device_backend_ops(run->c->opts.exec, run->device, run->req.backend);
}

/* Whether the backend that runs the check takes a run of k at shape s (its largest allocation, say): its own rule. */
static bool admits(const struct backend_ops *ops, const struct device *d, enum kernel_id k, struct kernel_shape s)
{
	enum reason reason;
	char detail[160];

	return ops == NULL || ops->admit == NULL || ops->admit(d, k, &s, &reason, detail, sizeof(detail)) == ACCELD_OK;
}

static bool matrix_fits(const struct devcheck *c, const struct backend_ops *ops, const struct device *d, uint64_t n)
{
	uint64_t bytes = 3 * n * n * sizeof(float);

	if (4 * n * n > c->opts.settings.max_elements)
		return false;
	if (d->memory_total_bytes > 0 && bytes > d->memory_total_bytes / 4)
		return false;
	if (d->type == DEVICE_CPU && d->memory_available_bytes > 0 && bytes > d->memory_available_bytes / 4)
		return false;
	return admits(ops, d, MATRIX_KERNEL, (struct kernel_shape){.m = n, .n = n, .k = n});
}

/*
 * The sizes the ramp goes through: from *start (lowered to what fits when a small job limit allows less) up to the
 * largest power-of-two multiple of it that fits, at most the settings' cap. Returns that largest size.
 */
static uint64_t matrix_cap(const struct devcheck *c, const struct backend_ops *ops, const struct device *d,
			  uint64_t *start)
{
	uint64_t max = c->opts.settings.matrix_max_n ? c->opts.settings.matrix_max_n : MATRIX_MAX;
	uint64_t n;

	while (*start > 16 && (*start > max || !matrix_fits(c, ops, d, *start)))
		*start /= 2;
	n = *start;
	while (n * 2 <= max && matrix_fits(c, ops, d, n * 2))
		n *= 2;
	return n;
}

/* The memory test's length: arrays four times the CPU's last-level caches, or a 16th of an accelerator's memory. */
static uint64_t memory_length(const struct devcheck *c, const struct backend_ops *ops, const struct device *d,
			     char *why, size_t whysz)
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
	if (n < MEMORY_MIN_N)
		n = MEMORY_MIN_N;
	/* smaller only when the job limit or the device's memory leaves no room (then the size is said) */
	while (n > MEMORY_FLOOR_N &&
	       (3 * n > c->opts.settings.max_elements ||
		!admits(ops, d, MEMORY_KERNEL, (struct kernel_shape){.n = n}) ||
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

/* The transfer kernel's shape of rows rows. */
static struct kernel_shape transfer_shape(uint64_t rows)
{
	return (struct kernel_shape){.m = rows, .n = TRANSFER_ROW};
}

/*
 * The transfer test's rows: settings.transfer_bytes each way (256 MiB unless set), halved while the job limit (the
 * input and the output), the backend's largest allocation or a quarter of the device's free memory (both ways) leave
 * no room. Says why in why.
 */
static uint64_t transfer_rows(const struct devcheck *c, const struct backend_ops *ops, const struct device *d,
			      char *why, size_t whysz)
{
	uint64_t bytes = c->opts.settings.transfer_bytes ? c->opts.settings.transfer_bytes : TRANSFER_DEFAULT_BYTES;
	uint64_t rows = bytes / sizeof(float) / TRANSFER_ROW;
	bool capped = false;

	if (rows < TRANSFER_MIN_ROWS)
		rows = TRANSFER_MIN_ROWS;
	snprintf(why, whysz, "%llu MiB each way", (unsigned long long)(rows * TRANSFER_ROW * sizeof(float) >> 20));
	while (rows > TRANSFER_MIN_ROWS &&
	       (2 * rows * TRANSFER_ROW > c->opts.settings.max_elements ||
		!admits(ops, d, TRANSFER_KERNEL, transfer_shape(rows)) ||
		(d->memory_available_bytes > 0 &&
		 2 * rows * TRANSFER_ROW * sizeof(float) > d->memory_available_bytes / 4))) {
		rows /= 2;
		capped = true;
	}
	if (capped) {
		size_t len = strlen(why);

		snprintf(why + len, whysz - len, ", halved to %llu KiB, what the job limit and the memory allow",
			 (unsigned long long)(rows * TRANSFER_ROW * sizeof(float) >> 10));
	}
	return rows;
}

/* --- the tests --- */

static void publish_test(struct devcheck_run *run, struct devcheck_test *dst, const struct devcheck_test *src)
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

bool devcheck_run_stopping(struct devcheck_run *run)
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
static void summarise(struct devcheck_test *t)
{
	double v[SAMPLES_MAX];

	if (t->nsamples == 0)
		return;
	memcpy(v, t->samples, t->nsamples * sizeof(v[0]));
	qsort(v, t->nsamples, sizeof(v[0]), cmp_double);
	t->best = v[t->nsamples - 1];
	t->median = t->nsamples % 2 ? v[t->nsamples / 2] : (v[t->nsamples / 2 - 1] + v[t->nsamples / 2]) / 2.0;
}

/* The test failed with r's reason and detail (a run refused, or one that failed). */
static void fail_with(struct devcheck_test *t, const struct run_result *r)
{
	t->failed = true;
	snprintf(t->failure, sizeof(t->failure), "%s: %s", reason_name(r->reason), r->detail);
}

/* Whether the executor refused r for its size, so that a smaller one may run. */
static bool refused_for_size(const struct run_result *r)
{
	return r->refused && (r->reason == REASON_JOB_TOO_LARGE || r->reason == REASON_EXCEEDS_DEVICE_ALLOCATION ||
			      r->reason == REASON_WOULD_TIME_OUT);
}

/* Notes one completed run in t; false when it cannot count (failed or wrong), which ends the test. */
static bool note_run(struct devcheck_test *t, const struct run_result *r)
{
	if (r->job[0] != '\0')
		snprintf(t->last_job, sizeof(t->last_job), "%s", r->job);
	if (!r->ok) {
		fail_with(t, r);
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

/*
 * Whether r ran a program built or loaded for it (its compile_ms): such a first run is cold, as a GPU loads the
 * program's module at its first launch (an sgemm 1024^3 through PJRT with its program from the disk cache: 125 ms
 * for a 0.1 ms kernel on an H200), so it is counted as setup, like the warm-up, and its size runs again.
 */
static bool cold_program(struct devcheck_run *run, struct devcheck_test *t, const struct run_result *r)
{
	if (!r->ok || r->compile_ms <= 0.0 || devcheck_run_stopping(run))
		return false;
	t->setup_ms += r->run_ms + r->compile_ms;
	return true;
}

/* What a matrix run at twice this run's size is expected to take. */
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

void devcheck_test_matrix(struct devcheck_run *run, const struct device *dev, uint64_t budget_ms)
{
	struct devcheck *c = run->c;
	struct devcheck_test t = run->matrix;
	uint64_t start = dev->type == DEVICE_CPU ? MATRIX_START_CPU : MATRIX_START_ACCEL;
	uint64_t cap = matrix_cap(c, run_backend(run), dev, &start);
	uint64_t n = start;
	uint64_t wall0 = clock_mono_ns();
	double prev = 0;
	double prev_ms = 0;  /* the kernel time of the previous size: a plateau compares two long enough runs */
	double prev_run_ms = 0;
	double last_run_ms = 0;
	struct run_result r;

	t.started = true;
	t.budget_ms = (double)budget_ms;
	publish_test(run, &run->matrix, &t);
	/*
	 * One-off costs land on a device's first job: opening the backend (a CUDA context, an OpenCL program build),
	 * compiling and autotuning; on an H100 through PJRT they took 5.6 s of a 512^3 run whose kernel took 0.6 ms.
	 * A warm-up run at the start size takes them, and neither the budget nor the ramp counts it. A failure is
	 * left to the ramp's first run, which meets it again and reports it.
	 */
	run_job_queued(run, MATRIX_KERNEL, n, run_timeout(budget_ms), &r);
	if (r.ok)
		t.setup_ms += r.run_ms + r.compile_ms;
	if (devcheck_run_stopping(run))
		goto out;
	for (;;) {
		run_job_queued(run, MATRIX_KERNEL, n, run_timeout(budget_ms), &r);
		if (cold_program(run, &t, &r))
			run_job_queued(run, MATRIX_KERNEL, n, run_timeout(budget_ms), &r);
		set_backend(run, r.backend);
		if (r.refused) {
			/* a size the executor will not take ends the ramp at the last size that ran */
			if (t.nramp > 0) {
				n /= 2;
				snprintf(t.steady, sizeof(t.steady), "%llu refused by the executor (%s): %.120s",
					 (unsigned long long)(n * 2), reason_name(r.reason), r.detail);
				break;
			}
			fail_with(&t, &r);
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
		publish_test(run, &run->matrix, &t);
		devcheck_run_sample(run, false, NULL);
		if (devcheck_run_stopping(run))
			goto out;
		/* the first run at a size is often cold (threads, caches, page faults): a plateau must hold warm */
		if (isfinite(r.kernel_ms) && r.kernel_ms >= PLATEAU_MIN_KERNEL_MS && prev_ms >= PLATEAU_MIN_KERNEL_MS &&
		    r.figure < prev * PLATEAU_GAIN && t.nsamples < SAMPLES_MAX) {
			struct run_result again;

			run_job_queued(run, MATRIX_KERNEL, n, run_timeout(budget_ms), &again);
			if (again.refused || !note_run(&t, &again)) {
				if (again.refused)
					fail_with(&t, &again);
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
	       !devcheck_run_stopping(run)) {
		run_job_queued(run, MATRIX_KERNEL, n, run_timeout(budget_ms), &r);
		if (r.refused) {
			fail_with(&t, &r);
			break;
		}
		if (!note_run(&t, &r))
			break;
		t.samples[t.nsamples++] = r.figure;
		last_run_ms = r.run_ms;
		summarise(&t);
		publish_test(run, &run->matrix, &t);
		devcheck_run_sample(run, false, NULL);
	}
out:
	summarise(&t);
	t.finished = true;
	publish_test(run, &run->matrix, &t);
}

void devcheck_test_memory(struct devcheck_run *run, const struct device *dev, uint64_t budget_ms)
{
	struct devcheck *c = run->c;
	struct devcheck_test t = run->memory;
	uint64_t n = memory_length(c, run_backend(run), dev, t.steady, sizeof(t.steady));
	uint64_t wall0 = clock_mono_ns();
	double last_run_ms = 0;
	struct run_result r;

	t.started = true;
	t.budget_ms = (double)budget_ms;
	t.n = n;
	publish_test(run, &run->memory, &t);
	while (t.nsamples < c->opts.settings.max_reps && t.nsamples < SAMPLES_MAX && !devcheck_run_stopping(run) &&
	       (t.nsamples == 0 || (t.device_ms + last_run_ms <= (double)budget_ms &&
				    mono_ms(wall0) < 4.0 * (double)budget_ms + 10000.0))) {
		run_job_queued(run, MEMORY_KERNEL, n, run_timeout(budget_ms), &r);
		if (cold_program(run, &t, &r))
			run_job_queued(run, MEMORY_KERNEL, n, run_timeout(budget_ms), &r);
		set_backend(run, r.backend);
		if (refused_for_size(&r) && t.nsamples == 0 && n > MEMORY_FLOOR_N) {
			n /= 2;
			t.n = n;
			snprintf(t.steady, sizeof(t.steady), "halved to %llu elements: %.120s", (unsigned long long)n,
				 r.detail);
			continue;
		}
		if (r.refused) {
			fail_with(&t, &r);
			break;
		}
		if (!note_run(&t, &r))
			break;
		t.samples[t.nsamples++] = r.figure;
		last_run_ms = r.run_ms;
		summarise(&t);
		publish_test(run, &run->memory, &t);
		devcheck_run_sample(run, false, NULL);
	}
	summarise(&t);
	t.finished = true;
	publish_test(run, &run->memory, &t);
}

void devcheck_test_transfer(struct devcheck_run *run, const struct device *dev, uint64_t budget_ms)
{
	struct devcheck *c = run->c;
	struct devcheck_test t = run->transfer;
	struct job_spec spec = {.k = TRANSFER_KERNEL, .host_data = true};
	uint64_t rows = transfer_rows(c, run_backend(run), dev, t.steady, sizeof(t.steady));
	uint64_t wall0 = clock_mono_ns();
	double last_run_ms = 0;
	struct run_result r;

	t.started = true;
	t.budget_ms = (double)budget_ms;
	t.n = rows * TRANSFER_ROW;
	t.bytes = t.n * sizeof(float);
	t.pcie = dev->pcie;
	t.link = device_pcie_gbytes_per_s(&dev->pcie);
	if (devcheck_usable(t.link) && c->opts.settings.transfer_percent > 0) {
		t.expected = t.link * c->opts.settings.transfer_percent / 100.0;
		devcheck_words(t.expected_source, sizeof(t.expected_source),
			       "%u %% of the PCIe link's theoretical %.4g GB/s per direction (Gen%u x%u); a healthy H200 "
			       "reached 18.8 %% host to device and 31.7 %% back through PJRT (2026-11-28)",
			       c->opts.settings.transfer_percent, t.link,
			       t.pcie.max_generation > t.pcie.generation ? t.pcie.max_generation : t.pcie.generation,
			       t.pcie.width ? t.pcie.width : t.pcie.max_width);
	}
	publish_test(run, &run->transfer, &t);
	while (t.runs == 0 ||
	       (t.nsamples < c->opts.settings.max_reps && t.nsamples < SAMPLES_MAX &&
		t.device_ms + last_run_ms <= (double)budget_ms && mono_ms(wall0) < 4.0 * (double)budget_ms + 10000.0)) {
		if (devcheck_run_stopping(run))
			break;
		spec.s = transfer_shape(rows);
		run_spec_queued(run, &spec, run_timeout(budget_ms), &r);
		set_backend(run, r.backend);
		if (refused_for_size(&r) && t.runs == 0 && rows > TRANSFER_MIN_ROWS) {
			rows /= 2;
			t.n = rows * TRANSFER_ROW;
			t.bytes = t.n * sizeof(float);
			snprintf(t.steady, sizeof(t.steady), "halved to %llu KiB each way: %.120s",
				 (unsigned long long)(t.bytes >> 10), r.detail);
			continue;
		}
		if (r.refused) {
			fail_with(&t, &r);
			break;
		}
		if (!note_run(&t, &r))
			break;
		/* the best each way: the first run of a size pays for the device's buffers */
		if (isfinite(r.upload) && !(r.upload <= t.upload))
			t.upload = r.upload;
		if (isfinite(r.download) && !(r.download <= t.download))
			t.download = r.download;
		t.samples[t.nsamples++] = isfinite(r.upload) && isfinite(r.download) ? fmin(r.upload, r.download) : NAN;
		last_run_ms = r.run_ms;
		publish_test(run, &run->transfer, &t);
		devcheck_run_sample(run, false, NULL);
	}
	t.finished = true;
	publish_test(run, &run->transfer, &t);
}

void devcheck_test_sustained(struct devcheck_run *run, uint64_t duration_ms)
{
	struct devcheck *c = run->c;
	struct devcheck_test t = run->sustained;
	uint64_t t0 = clock_mono_ns();
	uint64_t n = run->matrix.n;
	double *figs = NULL;
	size_t nfigs = 0;
	size_t cap = 0;
	struct run_result r;

	t.started = true;
	t.n = n;
	t.budget_ms = (double)duration_ms;
	publish_test(run, &run->sustained, &t);
	if (n == 0 || run->matrix.wrong > 0 || run->matrix.runs == 0) {
		t.failed = true;
		snprintf(t.failure, sizeof(t.failure), "no %s size to sustain: the %s test did not complete",
			 run->matrix.name, run->matrix.name);
		goto out;
	}
	while (mono_ms(t0) < (double)duration_ms && !devcheck_run_stopping(run) && nfigs < SUSTAINED_RUNS_MAX) {
		double at;
		unsigned b;

		run_job_queued(run, MATRIX_KERNEL, n, run_timeout(duration_ms), &r);
		if (r.refused) {
			fail_with(&t, &r);
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
		devcheck_run_sample(run, false, NULL);
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
