/*
 * Unit tests of the executor (exec.c and the parts exec_int.h names): placement and fallback, limits (413),
 * estimates refused up front (422), queue full (429), cancellation, timeouts of queued and running jobs (504),
 * history records, listing, and many jobs submitted at once. Devices are built by hand; backends are the real
 * native one and fakes (one that blocks until the test opens a gate, one that always fails like a broken GPU).
 * Nothing here depends on timing: tests wait for states, never for durations.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "core/clock.h"
#include "core/config.h"
#include "exec/exec.h"
#include "exec/kernel.h"

/* --- fakes --- */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static int gate_entered;

static void gate_set(bool open)
{
	pthread_mutex_lock(&gate_mu);
	gate_open = open;
	if (!open)
		gate_entered = 0;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

static void gate_wait_entered(int n)
{
	pthread_mutex_lock(&gate_mu);
	while (gate_entered < n)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

static enum acceld_err fake_open(const struct device *dev, unsigned threads, void **state, char *err, size_t errsz)
{
	(void)dev;
	(void)threads;
	(void)err;
	(void)errsz;
	*state = NULL;
	return ACCELD_OK;
}

static enum acceld_err blocking_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
				    size_t errsz)
{
	(void)state;
	(void)err;
	(void)errsz;
	pthread_mutex_lock(&gate_mu);
	gate_entered++;
	pthread_cond_broadcast(&gate_cv);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	if (w->out)
		memset(w->out, 0, kernel_output_len(w->kernel, &(struct kernel_shape){w->m, w->n, w->k}) * sizeof(float));
	t->kernel_ms = 1.0;
	t->transfer_ms = 0.0;
	return ACCELD_OK;
}

static void fake_close(void *state)
{
	(void)state;
}

static enum acceld_err failing_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
				   size_t errsz)
{
	(void)state;
	(void)w;
	(void)t;
	snprintf(err, errsz, "clEnqueueNDRangeKernel failed: CL_OUT_OF_RESOURCES (-5)");
	return ACCELD_EDEVICE;
}

static bool serves_cpu(const struct device *dev)
{
	return dev->type == DEVICE_CPU;
}

static bool serves_opencl_view(const struct device *dev)
{
	return dev->opencl.present && dev->type != DEVICE_TPU;
}

static const struct backend_ops blocking_native = {.name = "native",
						   .serves_what = "CPUs",
						   .serves = serves_cpu,
						   .open = fake_open,
						   .run = blocking_run,
						   .close = fake_close};
/* a run that fails like a broken GPU; start() gives it the real admission check of OpenCL (largest allocation) */
static struct backend_ops failing_opencl = {.name = "opencl",
						  .serves_what = "devices with an OpenCL view",
						  .rank = 20,
						  .serves = serves_opencl_view,
						  .open = fake_open,
						  .run = failing_run,
						  .close = fake_close};

/*
 * The real native backend, allowing inline runs, that notes the thread of each run and holds jobs of GATE_N
 * elements at the gate.
 */
#define GATE_N 100000
static pthread_t last_run_thread;

static enum acceld_err noting_open(const struct device *dev, unsigned threads, void **state, char *err,
				   size_t errsz)
{
	return backend_native.open(dev, threads, state, err, errsz);
}

static enum acceld_err noting_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
				  size_t errsz)
{
	pthread_mutex_lock(&gate_mu);
	last_run_thread = pthread_self();
	if (w->n == GATE_N) {
		gate_entered++;
		pthread_cond_broadcast(&gate_cv);
		while (!gate_open)
			pthread_cond_wait(&gate_cv, &gate_mu);
	}
	pthread_mutex_unlock(&gate_mu);
	return backend_native.run(state, w, t, err, errsz);
}

static void noting_close(void *state)
{
	backend_native.close(state);
}

static const struct backend_ops noting_native = {.name = "native",
						      .serves_what = "CPUs",
						      .serves = serves_cpu,
						      .open = noting_open,
						      .run = noting_run,
						      .close = noting_close,
						      .inline_tiny = true};

static bool ran_on_this_thread(void)
{
	bool same;

	pthread_mutex_lock(&gate_mu);
	same = pthread_equal(last_run_thread, pthread_self()) != 0;
	pthread_mutex_unlock(&gate_mu);
	return same;
}

/* --- records and done callbacks --- */

static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rec_cv = PTHREAD_COND_INITIALIZER;
static int records;
static char last_state[32];
static char last_device[DEVICE_ID_MAX];
static double last_cost;
static int dones;
static int starts;
static int start_seq, record_seq, seq; /* the order in which the callbacks came */
static char start_state[32];
static char start_id[24];

static void on_record(void *ctx, const struct exec_record *rec)
{
	(void)ctx;
	pthread_mutex_lock(&rec_mu);
	records++;
	record_seq = ++seq;
	snprintf(last_state, sizeof(last_state), "%s", rec->state);
	snprintf(last_device, sizeof(last_device), "%s", rec->device_id);
	last_cost = rec->cost_usd;
	ck_assert_ptr_nonnull(rec->id);
	ck_assert(rec->total_ms >= 0.0);
	pthread_cond_broadcast(&rec_cv);
	pthread_mutex_unlock(&rec_mu);
}

static void on_start(void *ctx, const struct exec_record *rec)
{
	(void)ctx;
	pthread_mutex_lock(&rec_mu);
	starts++;
	start_seq = ++seq;
	snprintf(start_state, sizeof(start_state), "%s", rec->state);
	snprintf(start_id, sizeof(start_id), "%s", rec->id);
	ck_assert(rec->started_ms > 0);
	ck_assert_int_eq(rec->finished_ms, 0);
	ck_assert(isnan(rec->total_ms));
	pthread_mutex_unlock(&rec_mu);
}

static void on_done(void *arg, struct exec_job *job)
{
	(void)arg;
	ck_assert(exec_job_state(job) != EXEC_QUEUED && exec_job_state(job) != EXEC_RUNNING);
	pthread_mutex_lock(&rec_mu);
	dones++;
	pthread_cond_broadcast(&rec_cv);
	pthread_mutex_unlock(&rec_mu);
}

static void wait_records(int n)
{
	pthread_mutex_lock(&rec_mu);
	while (records < n)
		pthread_cond_wait(&rec_cv, &rec_mu);
	pthread_mutex_unlock(&rec_mu);
}

static void wait_dones(int n)
{
	pthread_mutex_lock(&rec_mu);
	while (dones < n)
		pthread_cond_wait(&rec_cv, &rec_mu);
	pthread_mutex_unlock(&rec_mu);
}

static void reset_counts(void)
{
	pthread_mutex_lock(&rec_mu);
	records = 0;
	dones = 0;
	starts = 0;
	pthread_mutex_unlock(&rec_mu);
}

/* --- devices --- */

static struct device devs[3];

static void make_devices(void)
{
	device_init(&devs[0], DEVICE_CPU);
	DEVICE_SET(devs[0].id, "cpu:0");
	devs[0].price.usd_per_hour = 3.6;
	device_init(&devs[1], DEVICE_GPU);
	DEVICE_SET(devs[1].id, "gpu:0");
	devs[1].opencl.present = true;
	devs[1].opencl.max_alloc_bytes = 1u << 22;
	device_init(&devs[2], DEVICE_TPU);
	DEVICE_SET(devs[2].id, "tpu:0");
}

/* what detection says of gpu:0 now (every other device is there) */
static enum exec_presence gpu_presence;

static enum exec_presence fake_presence(void *ctx, const struct device *dev)
{
	(void)ctx;
	return strcmp(dev->id, "gpu:0") == 0 ? gpu_presence : EXEC_PRESENT;
}

static const struct backend_ops *ops_in_use[3];
static int (*thread_create_in_use)(pthread_t *thread, void *(*fn)(void *), void *arg);
static exec_record_fn record_hook_in_use; /* on_job_record of the next start(); NULL answers at once */

static struct exec *start(const struct backend_ops *native, unsigned depth, uint64_t max_elements)
{
	struct exec_opts o = {
		.devices = devs,
		.ndevices = 3,
		.max_elements = max_elements,
		.queue_depth = depth,
		.default_timeout_ms = 600000,
		.max_timeout_ms = 3600000,
		.recent = 64,
		.cpu_threads = 2,
		.on_job_done = on_record,
		.on_job_record = record_hook_in_use,
		.on_job_start = on_start,
		.presence = fake_presence,
		.backends = ops_in_use,
		.thread_create = thread_create_in_use,
	};
	struct exec *ex = NULL;

	failing_opencl.admit = backend_opencl.admit;
	ops_in_use[0] = native;
	ops_in_use[1] = &failing_opencl;
	ops_in_use[2] = NULL;

	make_devices();
	reset_counts();
	gate_set(false);
	gpu_presence = EXEC_PRESENT;
	ck_assert_int_eq(exec_new(&o, &ex), ACCELD_OK);
	return ex;
}

/* A saxpy job named to device (pinned, no fallback), or with no device yet when device is NULL. */
static struct exec_request saxpy(uint64_t n, const char *device)
{
	struct exec_request r;

	exec_request_init(&r);
	r.kernel = KERNEL_SAXPY;
	r.shape.n = n;
	r.alpha = 2.0f;
	if (device) {
		exec_request_add_device(&r, device);
		r.pinned = true;
	}
	return r;
}

/* Places r on these devices in order (a NULL-terminated list), as selection ranks them, with fallback. */
static void rank(struct exec_request *r, const char *const *ids)
{
	for (size_t i = 0; ids[i] != NULL; i++)
		exec_request_add_device(r, ids[i]);
	r->fallback = true;
}

static const char *const tpu_first[] = {"tpu:0", "gpu:0", "cpu:0", NULL};
static const char *const gpu_first[] = {"gpu:0", "cpu:0", NULL};

static struct exec_job *submit_ok(struct exec *ex, struct exec_request *r)
{
	struct exec_job *job = NULL;
	struct exec_refusal why;
	enum acceld_err rc = exec_submit(ex, r, on_done, NULL, &job, &why);

	ck_assert_msg(rc == ACCELD_OK, "refused: %s %s", reason_name(why.reason), why.detail);
	return job;
}

static void submit_refused(struct exec *ex, struct exec_request *r, enum acceld_err want, const char *reason)
{
	struct exec_job *job = NULL;
	struct exec_refusal why;
	enum acceld_err rc = exec_submit(ex, r, on_done, NULL, &job, &why);

	ck_assert_msg(rc == want, "got %d (%s: %s), want %d", rc, reason_name(why.reason), why.detail, want);
	ck_assert_str_eq(reason_name(why.reason), reason);
	ck_assert_ptr_null(job);
	json_decref(why.extra);
}

static const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* --- tests --- */

/* on_job_record of a store whose commit stalls: keeps the job, confirms nothing. */
static struct exec_job *stalled_job;

static void stall_record(void *ctx, const struct exec_record *rec)
{
	(void)ctx;
	if (!rec->provisional && stalled_job == NULL) {
		exec_job_ref(rec->job);
		stalled_job = rec->job;
	}
}

START_TEST(stalled_record_is_answered_within_two_seconds)
{
	struct exec *ex;
	struct exec_request r = saxpy(1000, "cpu:0");
	struct exec_job *job;
	uint64_t t0;
	json_t *doc;

	record_hook_in_use = stall_record;
	ex = start(&backend_native, 8, 1u << 24);
	record_hook_in_use = NULL;
	t0 = clock_mono_ns();
	job = submit_ok(ex, &r);
	/* until its record is confirmed, a finished job reads as running */
	while (stalled_job == NULL)
		usleep(1000);
	ck_assert_int_eq(exec_job_state(job), EXEC_RUNNING);
	exec_job_wait(job);
	ck_assert_uint_ge(clock_mono_ns() - t0, 900000000ull);
	ck_assert_uint_lt(clock_mono_ns() - t0, 2500000000ull);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	doc = exec_job_json(job);
	ck_assert(json_is_false(json_object_get(doc, "recorded")));
	json_decref(doc);
	/* the commit comes later: the job says so */
	exec_record_confirmed(stalled_job, false, true);
	doc = exec_job_json(job);
	ck_assert(json_is_true(json_object_get(doc, "recorded")));
	json_decref(doc);
	exec_job_unref(stalled_job);
	stalled_job = NULL;
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(runs_and_verifies_natively)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	struct exec_request r = saxpy(100003, "cpu:0");
	struct exec_job *job;
	json_t *doc;

	r.verify = true;
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	doc = exec_job_json(job);
	ck_assert_str_eq(jstr(doc, "state"), "succeeded");
	ck_assert_str_eq(jstr(doc, "backend"), "native");
	ck_assert(json_is_true(json_object_get(doc, "verified")));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "result"), "checksum"));
	ck_assert_int_eq(json_array_size(json_object_get(json_object_get(json_object_get(doc, "result"), "summary"),
							 "first")),
			 8);
	ck_assert_ptr_nonnull(json_object_get(doc, "cost_usd")); /* the CPU has a price */
	ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "throughput"), "gflops"));
	json_decref(doc);
	wait_records(1);
	ck_assert_str_eq(last_state, "succeeded");
	ck_assert(!isnan(last_cost));
	/* the store heard of it when it started, before it finished */
	ck_assert_int_eq(starts, 1);
	ck_assert_str_eq(start_state, "running");
	ck_assert_str_eq(start_id, exec_job_id(job));
	ck_assert_int_lt(start_seq, record_seq);
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(every_kernel_verifies)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	static const enum kernel_id kernels[] = {KERNEL_SAXPY, KERNEL_TRIAD, KERNEL_DOT, KERNEL_SGEMM, KERNEL_SOFTMAX};

	for (size_t i = 0; i < 5; i++) {
		struct exec_request r;
		struct exec_job *job;
		json_t *doc;

		exec_request_init(&r);
		r.kernel = kernels[i];
		r.shape = (struct kernel_shape){.m = 37, .n = 53, .k = 29};
		r.beta = -1.0f;
		r.verify = true;
		r.full = true;
		exec_request_add_device(&r, "cpu:0");
		job = submit_ok(ex, &r);
		exec_job_wait(job);
		doc = exec_job_json(job);
		ck_assert_msg(json_is_true(json_object_get(doc, "verified")), "%s not verified",
			      kernel_name(kernels[i]));
		ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "result"), "output"));
		json_decref(doc);
		exec_job_unref(job);
	}
	exec_free(ex);
}
END_TEST

START_TEST(inline_inputs_are_used)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	struct exec_request r = saxpy(3, "cpu:0");
	struct exec_job *job;
	json_t *doc;
	json_t *out;

	r.inputs[0] = malloc(3 * sizeof(float));
	r.inputs[1] = malloc(3 * sizeof(float));
	for (int i = 0; i < 3; i++) {
		r.inputs[0][i] = (float)(i + 1);
		r.inputs[1][i] = 10.0f;
	}
	r.has_inputs = true;
	r.full = true;
	job = submit_ok(ex, &r);
	ck_assert_ptr_null(r.inputs[0]); /* taken over */
	exec_job_wait(job);
	doc = exec_job_json(job);
	out = json_object_get(json_object_get(doc, "result"), "output");
	ck_assert_int_eq(json_array_size(out), 3);
	for (int i = 0; i < 3; i++)
		ck_assert(fabs(json_real_value(json_array_get(out, (size_t)i)) - (2.0 * (i + 1) + 10.0)) < 1e-6);
	ck_assert_str_eq(jstr(doc, "inputs"), "inline");
	json_decref(doc);
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(limits_are_checked_up_front)
{
	struct exec *ex = start(&backend_native, 8, 1000);
	struct exec_request r = saxpy(400, "cpu:0");
	struct exec_request g;

	submit_refused(ex, &r, ACCELD_ETOOLARGE, "JOB_TOO_LARGE"); /* 3 x 400 elements > 1000 */
	r = saxpy(10, "nope:0");
	submit_refused(ex, &r, ACCELD_ENOTFOUND, "UNKNOWN_DEVICE");
	exec_request_init(&g);
	g.kernel = KERNEL_SGEMM;
	g.shape = (struct kernel_shape){.m = 4, .n = 4, .k = 4};
	g.timeout_ms = 1;
	g.full = true;
	exec_request_add_device(&g, "cpu:0");
	exec_free(ex);

	ex = start(&backend_native, 8, 1ull << 40);
	/* 2 * 8192^3 flops cannot finish in 1 ms even at the optimistic ceiling */
	g.shape = (struct kernel_shape){.m = 8192, .n = 8192, .k = 8192};
	g.full = false;
	submit_refused(ex, &g, ACCELD_EUNPROCESSABLE, "WOULD_TIME_OUT");
	g.shape = (struct kernel_shape){.m = 1024, .n = 1024, .k = 1};
	g.full = true;
	g.timeout_ms = 0;
	submit_refused(ex, &g, ACCELD_ETOOLARGE, "OUTPUT_TOO_LARGE");
	/* the GPU's largest allocation is 4 MiB: 2 Mi floats do not fit */
	r = saxpy(1u << 21, "gpu:0");
	submit_refused(ex, &r, ACCELD_ETOOLARGE, "EXCEEDS_DEVICE_ALLOCATION");
	exec_free(ex);
}
END_TEST

START_TEST(tpu_is_unsupported_and_prefer_falls_back)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	struct exec_request r = saxpy(1000, "tpu:0");
	struct exec_job *job;
	json_t *doc;

	submit_refused(ex, &r, ACCELD_EUNSUPPORTED, "UNSUPPORTED");
	r = saxpy(1000, NULL);
	rank(&r, tpu_first);
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert_str_eq(jstr(doc, "state"), "succeeded");
	ck_assert(json_is_true(json_object_get(doc, "fell_back")));
	ck_assert_str_eq(jstr(doc, "fallback_from"), "tpu:0");
	ck_assert_msg(strstr(jstr(doc, "fallback_reason"), "not executable") != NULL, "%s", jstr(doc, "fallback_reason"));
	/* the GPU's (failing) OpenCL is skipped for a tiny job: it runs natively */
	ck_assert_str_eq(jstr(doc, "device"), "cpu:0");
	ck_assert_msg(strstr(jstr(doc, "placement"), "tiny job") != NULL, "%s", jstr(doc, "placement"));
	json_decref(doc);
	exec_job_unref(job);
	/* a named device may fall back when the request allows it */
	r = saxpy(1000, NULL);
	rank(&r, tpu_first);
	r.pinned = true;
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(device_failure_retries_on_next_device)
{
	struct exec *ex = start(&backend_native, 8, 1u << 26);
	struct exec_request r = saxpy(1u << 19, NULL); /* 6 MB moved: not a tiny job */
	struct exec_job *job;
	json_t *doc;

	rank(&r, gpu_first);
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert_str_eq(jstr(doc, "state"), "succeeded");
	ck_assert_str_eq(jstr(doc, "device"), "cpu:0");
	ck_assert(json_is_true(json_object_get(doc, "fell_back")));
	ck_assert_str_eq(jstr(doc, "fallback_from"), "gpu:0");
	ck_assert_msg(strstr(jstr(doc, "fallback_reason"), "CL_OUT_OF_RESOURCES") != NULL, "%s",
		      jstr(doc, "fallback_reason"));
	json_decref(doc);
	exec_job_unref(job);
	/* naming the device means no fallback: the failure is the answer */
	r = saxpy(1u << 19, "gpu:0");
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_FAILED);
	{
		char detail[256];

		ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), REASON_DEVICE_FAILURE);
		ck_assert(strstr(detail, "CL_OUT_OF_RESOURCES") != NULL);
	}
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(devices_gone_or_changed_since_start_are_not_used)
{
	struct exec *ex = start(&backend_native, 8, 1u << 26);
	struct exec_request r = saxpy(1u << 19, NULL);
	struct exec_job *job;
	json_t *doc;

	gpu_presence = EXEC_GONE;
	rank(&r, gpu_first);
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	doc = exec_job_json(job);
	/* the GPU is skipped, not tried and failed */
	ck_assert_str_eq(jstr(doc, "device"), "cpu:0");
	ck_assert(json_object_get(doc, "fallback_reason") == NULL ||
		  strstr(jstr(doc, "fallback_reason"), "gpu:0") == NULL);
	json_decref(doc);
	exec_job_unref(job);
	r = saxpy(1u << 19, "gpu:0");
	submit_refused(ex, &r, ACCELD_ENOTFOUND, "UNKNOWN_DEVICE");
	gpu_presence = EXEC_CHANGED;
	r = saxpy(1u << 19, "gpu:0");
	submit_refused(ex, &r, ACCELD_ECONFLICT, "DEVICE_CHANGED");
	exec_free(ex);
}
END_TEST

START_TEST(queue_full_and_cancel)
{
	struct exec *ex = start(&blocking_native, 2, 1u << 24);
	struct exec_request r;
	struct exec_job *running;
	struct exec_job *q1;
	struct exec_job *q2;

	r = saxpy(64, "cpu:0");
	running = submit_ok(ex, &r);
	gate_wait_entered(1); /* the first job is in the kernel; the queue is empty */
	r = saxpy(64, "cpu:0");
	q1 = submit_ok(ex, &r);
	r = saxpy(64, "cpu:0");
	q2 = submit_ok(ex, &r);
	r = saxpy(64, "cpu:0");
	submit_refused(ex, &r, ACCELD_EBUSY, "QUEUE_FULL");
	ck_assert_int_eq(exec_job_state(q1), EXEC_QUEUED);
	ck_assert_int_eq(exec_cancel(ex, exec_job_id(q1), NULL, NULL), ACCELD_OK);
	ck_assert_int_eq(exec_job_state(q1), EXEC_CANCELLED);
	ck_assert_int_eq(exec_cancel(ex, exec_job_id(q1), NULL, NULL), ACCELD_ECONFLICT);
	ck_assert_int_eq(exec_cancel(ex, exec_job_id(running), NULL, NULL), ACCELD_ECONFLICT);
	ck_assert_int_eq(exec_cancel(ex, "0000", NULL, NULL), ACCELD_ENOTFOUND);
	gate_set(true);
	exec_job_wait(running);
	exec_job_wait(q2);
	ck_assert_int_eq(exec_job_state(running), EXEC_SUCCEEDED);
	ck_assert_int_eq(exec_job_state(q2), EXEC_SUCCEEDED);
	wait_dones(3);
	{
		json_t *all = exec_list_json(ex, -1, 100, 0);
		json_t *cancelled = exec_list_json(ex, EXEC_CANCELLED, 100, 0);
		json_t *page = exec_list_json(ex, -1, 2, 0);
		json_t *next;
		const char *tok = jstr(page, "next_page_token");
		uint64_t after = strtoull(tok, NULL, 10);

		ck_assert_int_eq(json_array_size(json_object_get(all, "jobs")), 3);
		ck_assert_int_eq(json_array_size(json_object_get(cancelled, "jobs")), 1);
		ck_assert_int_eq(json_array_size(json_object_get(page, "jobs")), 2);
		ck_assert_uint_gt(after, 0);
		next = exec_list_json(ex, -1, 2, after);
		ck_assert_int_eq(json_array_size(json_object_get(next, "jobs")), 1);
		ck_assert_ptr_null(json_object_get(next, "next_page_token"));
		/* newest first */
		ck_assert_str_eq(jstr(json_array_get(json_object_get(all, "jobs"), 0), "id"), exec_job_id(q2));
		json_decref(all);
		json_decref(cancelled);
		json_decref(page);
		json_decref(next);
	}
	exec_job_unref(running);
	exec_job_unref(q1);
	exec_job_unref(q2);
	exec_free(ex);
}
END_TEST

START_TEST(timeouts_of_queued_and_running_jobs)
{
	struct exec *ex = start(&blocking_native, 4, 1u << 24);
	struct exec_request r = saxpy(64, "cpu:0");
	struct exec_job *running;
	struct exec_job *queued;
	json_t *doc;

	r.timeout_ms = 50;
	running = submit_ok(ex, &r);
	gate_wait_entered(1);
	r = saxpy(64, "cpu:0");
	r.timeout_ms = 30;
	queued = submit_ok(ex, &r);
	/* both deadlines pass while the gate is shut: each is answered as timed out */
	wait_dones(2);
	ck_assert_int_eq(exec_job_state(queued), EXEC_TIMED_OUT);
	ck_assert_int_eq(exec_job_state(running), EXEC_TIMED_OUT);
	doc = exec_job_json(running);
	ck_assert_str_eq(jstr(json_object_get(doc, "error"), "reason"), "TIMED_OUT");
	json_decref(doc);
	/* the queued one is recorded at once; the running one when its kernel ends */
	wait_records(1);
	gate_set(true);
	exec_job_wait(running);
	wait_records(2);
	ck_assert_str_eq(last_state, "timed_out");
	ck_assert_int_eq(exec_job_state(running), EXEC_TIMED_OUT);
	exec_job_unref(running);
	exec_job_unref(queued);
	exec_free(ex);
}
END_TEST

START_TEST(free_cancels_queued_jobs)
{
	struct exec *ex = start(&blocking_native, 4, 1u << 24);
	struct exec_request r = saxpy(64, "cpu:0");
	struct exec_job *a;
	struct exec_job *b;

	a = submit_ok(ex, &r);
	gate_wait_entered(1);
	r = saxpy(64, "cpu:0");
	b = submit_ok(ex, &r);
	gate_set(true); /* lets the running kernel end; exec_free waits for it */
	exec_free(ex);
	ck_assert(a != NULL && b != NULL);
	exec_job_unref(a);
	exec_job_unref(b);
}
END_TEST

struct submitter {
	struct exec *ex;
	int ok;
};

static void *submit_many(void *arg)
{
	struct submitter *s = arg;

	for (int i = 0; i < 12; i++) {
		struct exec_request r;
		struct exec_job *job = NULL;
		struct exec_refusal why;

		exec_request_init(&r);
		r.kernel = (enum kernel_id)(i % KERNEL_COUNT);
		r.shape = (struct kernel_shape){.m = 9 + (uint64_t)i, .n = 31 + (uint64_t)i, .k = 5};
		r.seed = (uint64_t)i;
		r.verify = true;
		exec_request_add_device(&r, "cpu:0");
		if (exec_submit(s->ex, &r, NULL, NULL, &job, &why) != ACCELD_OK) {
			json_decref(why.extra);
			continue;
		}
		exec_job_wait(job);
		if (exec_job_state(job) == EXEC_SUCCEEDED) {
			json_t *doc = exec_job_json(job);

			if (json_is_true(json_object_get(doc, "verified")))
				s->ok++;
			json_decref(doc);
		}
		exec_job_unref(job);
	}
	return NULL;
}

START_TEST(many_jobs_at_once)
{
	struct exec *ex = start(&backend_native, 64, 1u << 24);
	pthread_t th[8];
	struct submitter s[8];
	int total = 0;

	for (int i = 0; i < 8; i++) {
		s[i] = (struct submitter){.ex = ex};
		pthread_create(&th[i], NULL, submit_many, &s[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		total += s[i].ok;
	}
	ck_assert_int_eq(total, 8 * 12);
	wait_records(8 * 12);
	{
		/* the ring keeps the 64 most recent */
		json_t *all = exec_list_json(ex, -1, 1000, 0);

		ck_assert_int_eq(json_array_size(json_object_get(all, "jobs")), 64);
		json_decref(all);
	}
	exec_free(ex);
}
END_TEST

static int dones_now(void)
{
	int n;

	pthread_mutex_lock(&rec_mu);
	n = dones;
	pthread_mutex_unlock(&rec_mu);
	return n;
}

static json_t *result_of(struct exec_job *job)
{
	json_t *doc = exec_job_json(job);
	json_t *res = json_incref(json_object_get(doc, "result"));

	ck_assert(json_is_true(json_object_get(doc, "verified")));
	json_decref(doc);
	return res;
}

/*
 * A tiny job on an idle device runs on the submitting thread and is final (done called) when exec_submit returns;
 * with a job running on the device the same tiny job queues behind it and runs on the worker, with the same
 * result. Jobs above the inline size always queue.
 */
START_TEST(tiny_jobs_run_inline_only_when_idle)
{
	struct exec *ex = start(&noting_native, 8, 1u << 24);
	struct exec_request r = saxpy(1024, "cpu:0");
	struct exec_job *warm;
	struct exec_job *here;
	struct exec_job *gate;
	struct exec_job *queued;
	json_t *a;
	json_t *b;

	/* once a job has run on the worker, its backend is open and ready for inline runs */
	gate_set(true);
	r = saxpy(GATE_N, "cpu:0");
	warm = submit_ok(ex, &r);
	exec_job_wait(warm);
	ck_assert(!ran_on_this_thread()); /* above the inline size: the worker ran it */
	exec_job_unref(warm);
	wait_dones(1);

	r = saxpy(1024, "cpu:0");
	r.verify = true;
	here = submit_ok(ex, &r);
	ck_assert_int_eq(dones_now(), 2); /* answered before exec_submit returned */
	ck_assert_int_eq(exec_job_state(here), EXEC_SUCCEEDED);
	ck_assert(ran_on_this_thread());

	gate_set(false);
	r = saxpy(GATE_N, "cpu:0");
	gate = submit_ok(ex, &r);
	gate_wait_entered(1);
	r = saxpy(1024, "cpu:0");
	r.verify = true;
	queued = submit_ok(ex, &r);
	ck_assert_int_eq(exec_job_state(queued), EXEC_QUEUED);
	ck_assert_int_eq(dones_now(), 2);
	gate_set(true);
	exec_job_wait(queued);
	ck_assert_int_eq(exec_job_state(queued), EXEC_SUCCEEDED);
	ck_assert(!ran_on_this_thread());

	a = result_of(here);
	b = result_of(queued);
	ck_assert_msg(json_equal(a, b), "inline and queued runs of the same job differ");
	json_decref(a);
	json_decref(b);
	exec_job_unref(here);
	exec_job_unref(gate);
	exec_job_unref(queued);
	exec_free(ex);
}
END_TEST

/* Backends that do not allow inline runs (OpenCL, the fakes) always go through the worker. */
START_TEST(tiny_jobs_queue_on_other_backends)
{
	struct exec *ex = start(&blocking_native, 8, 1u << 24);
	struct exec_request r = saxpy(16, "cpu:0");
	struct exec_job *job;

	job = submit_ok(ex, &r);
	gate_wait_entered(1);
	ck_assert_int_eq(exec_job_state(job), EXEC_RUNNING);
	gate_set(true);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(state_names)
{
	enum exec_state st;

	ck_assert(exec_state_parse("timed_out", &st));
	ck_assert_int_eq(st, EXEC_TIMED_OUT);
	ck_assert(exec_state_parse("interrupted", &st));
	ck_assert_int_eq(st, EXEC_INTERRUPTED);
	ck_assert(!exec_state_parse("timeout", &st));
	for (unsigned i = 0; i < EXEC_STATE_COUNT; i++)
		ck_assert_ptr_nonnull(strstr(exec_state_names_text(), exec_state_name((enum exec_state)i)));
}
END_TEST

/* a thread creator that fails for the worker of the second device (and the reaper when told) */
static int creations;
static bool fail_reaper;

static int failing_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	int n = __atomic_add_fetch(&creations, 1, __ATOMIC_SEQ_CST);

	/* workers start in device order (cpu:0, gpu:0; the TPU has none), then the reaper */
	if (n == 2 || (fail_reaper && n == 3))
		return EAGAIN;
	return pthread_create(thread, NULL, fn, arg);
}

/* A worker that cannot start is said, and leaves its device without jobs; without a reaper nothing runs. */
START_TEST(threads_that_fail_to_start_are_said)
{
	struct exec *ex;
	struct exec_request r;
	struct exec_refusal why;
	struct exec_job *job = NULL;
	struct exec_opts bad = {.queue_depth = 1};

	creations = 0;
	fail_reaper = false;
	thread_create_in_use = failing_create;
	ex = start(&backend_native, 8, 1u << 24);
	ck_assert_ptr_nonnull(exec_device(ex, "cpu:0"));
	ck_assert_ptr_null(exec_device(ex, "gpu:0"));
	ck_assert_ptr_null(exec_device(ex, "tpu:0"));
	ck_assert_str_eq(exec_device_backend(ex, "cpu:0"), "native");
	ck_assert_ptr_null(exec_device_backend(ex, "gpu:0"));
	r = saxpy(1u << 19, "gpu:0");
	ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_EUNSUPPORTED);
	ck_assert_str_eq(reason_name(why.reason), "UNSUPPORTED");
	ck_assert_msg(strstr(why.detail, "worker thread could not be started") != NULL, "%s", why.detail);
	/* placed by preference, the job goes on to the CPU */
	r = saxpy(1u << 19, NULL);
	rank(&r, gpu_first);
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	exec_job_unref(job);
	exec_free(ex);

	creations = 0;
	fail_reaper = true;
	make_devices();
	{
		struct exec_opts o = {.devices = devs, .ndevices = 3, .max_elements = 1000, .queue_depth = 1,
				      .default_timeout_ms = 1000, .max_timeout_ms = 1000, .recent = 4,
				      .backends = ops_in_use, .thread_create = failing_create};

		ex = (struct exec *)&bad; /* must be cleared on failure */
		ck_assert_int_eq(exec_new(&o, &ex), ACCELD_EUNAVAILABLE);
		ck_assert_ptr_null(ex);
	}
	thread_create_in_use = NULL;
	/* options the configuration would never give are refused, not patched */
	ck_assert_int_eq(exec_new(&bad, &ex), ACCELD_EINVAL);
}
END_TEST

/* A named backend is used where it serves the device, and refused plainly where it does not. */
START_TEST(named_backend)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	struct exec_request r = saxpy(1000, "cpu:0");
	struct exec_job *job;
	json_t *doc;

	snprintf(r.backend, sizeof(r.backend), "opencl");
	submit_refused(ex, &r, ACCELD_EUNSUPPORTED, "UNSUPPORTED");
	r = saxpy(1000, "cpu:0");
	snprintf(r.backend, sizeof(r.backend), "cuda");
	submit_refused(ex, &r, ACCELD_EINVAL, "INVALID_VALUE");
	r = saxpy(1000, "cpu:0");
	snprintf(r.backend, sizeof(r.backend), "native");
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert_str_eq(jstr(doc, "backend"), "native");
	json_decref(doc);
	exec_job_unref(job);
	r = saxpy(10, NULL);
	submit_refused(ex, &r, ACCELD_ECONFLICT, "NO_MATCHING_DEVICE"); /* no device at all */
	exec_free(ex);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("exec");
	TCase *tc = tcase_create("executor");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, state_names);
	tcase_add_test(tc, stalled_record_is_answered_within_two_seconds);
	tcase_add_test(tc, threads_that_fail_to_start_are_said);
	tcase_add_test(tc, named_backend);
	tcase_add_test(tc, runs_and_verifies_natively);
	tcase_add_test(tc, every_kernel_verifies);
	tcase_add_test(tc, inline_inputs_are_used);
	tcase_add_test(tc, limits_are_checked_up_front);
	tcase_add_test(tc, tpu_is_unsupported_and_prefer_falls_back);
	tcase_add_test(tc, device_failure_retries_on_next_device);
	tcase_add_test(tc, devices_gone_or_changed_since_start_are_not_used);
	tcase_add_test(tc, queue_full_and_cancel);
	tcase_add_test(tc, timeouts_of_queued_and_running_jobs);
	tcase_add_test(tc, free_cancels_queued_jobs);
	tcase_add_test(tc, many_jobs_at_once);
	tcase_add_test(tc, tiny_jobs_run_inline_only_when_idle);
	tcase_add_test(tc, tiny_jobs_queue_on_other_backends);
	suite_add_tcase(s, tc);
	return s;
}
