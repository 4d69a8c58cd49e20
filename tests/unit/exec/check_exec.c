/*
 * check_exec: the fakes, devices and callbacks the executor's unit tests share (check_exec.h): test_exec.c and the
 * tests of exec_admit.c, exec_worker.c and exec_job.c.
 */
#include "check_exec.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "exec/kernel.h"

/* --- fakes --- */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static int gate_entered;

void gate_set(bool open)
{
	pthread_mutex_lock(&gate_mu);
	gate_open = open;
	if (!open)
		gate_entered = 0;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

void gate_wait_entered(int n)
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

const struct backend_ops blocking_native = {
	.name = "native",
	.serves_what = "CPUs",
	.serves = serves_cpu,
	.open = fake_open,
	.run = blocking_run,
	.close = fake_close,
};
/* a run that fails like a broken GPU; start() gives it the real admission check of OpenCL (largest allocation) */
static struct backend_ops failing_opencl = {.name = "opencl",
						  .serves_what = "devices with an OpenCL view",
						  .rank = 20,
						  .serves = serves_opencl_view,
						  .open = fake_open,
						  .run = failing_run,
						  .close = fake_close,
						  .on_device = true};

/*
 * The real native backend, allowing inline runs, that notes the thread of each run and holds jobs of GATE_N
 * elements at the gate.
 */
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

const struct backend_ops noting_native = {
	.name = "native",
	.serves_what = "CPUs",
	.serves = serves_cpu,
	.open = noting_open,
	.run = noting_run,
	.close = noting_close,
	.inline_tiny = true,
};

bool ran_on_this_thread(void)
{
	bool same;

	pthread_mutex_lock(&gate_mu);
	same = pthread_equal(last_run_thread, pthread_self()) != 0;
	pthread_mutex_unlock(&gate_mu);
	return same;
}

/* --- records and done callbacks --- */

pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rec_cv = PTHREAD_COND_INITIALIZER;
int records;
char last_state[32];
static char last_device[DEVICE_ID_MAX];
double last_cost;
int dones;
int starts;
int start_seq, record_seq; /* the order in which the callbacks came */
static int seq;
char start_state[32];
char start_id[24];

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

void wait_records(int n)
{
	pthread_mutex_lock(&rec_mu);
	while (records < n)
		pthread_cond_wait(&rec_cv, &rec_mu);
	pthread_mutex_unlock(&rec_mu);
}

void wait_dones(int n)
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

struct device devs[3];

void make_devices(void)
{
	device_init(&devs[0], DEVICE_CPU);
	DEVICE_SET(devs[0].id, "cpu:0");
	devs[0].price.usd_per_hour = 3.6;
	device_init(&devs[1], DEVICE_GPU);
	DEVICE_SET(devs[1].id, "gpu:0");
	devs[1].opencl.present = true;
	devs[1].opencl.max_alloc_bytes = 1u << 22;
	devs[1].memory_total_bytes = 1u << 30;
	device_init(&devs[2], DEVICE_TPU);
	DEVICE_SET(devs[2].id, "tpu:0");
}

/* what detection says of gpu:0 now (every other device is there) */
enum exec_presence gpu_presence;

static enum exec_presence fake_presence(void *ctx, const struct device *dev)
{
	(void)ctx;
	return strcmp(dev->id, "gpu:0") == 0 ? gpu_presence : EXEC_PRESENT;
}

/* gpu:0's memory now: the latest sample's free bytes (0 unknown), the other processes holding it (pids 4242, ...,
 * each holding 100 MB), what acceld's own hold */
uint64_t gpu_available, gpu_own;
size_t gpu_holders;

static size_t fake_memory_now(void *ctx, const struct device *dev, uint64_t *available, struct holder *holders,
			      size_t max, uint64_t *own)
{
	size_t n = 0;

	(void)ctx;
	*available = strcmp(dev->id, "gpu:0") == 0 ? gpu_available : 0;
	if (holders == NULL || strcmp(dev->id, "gpu:0") != 0)
		return 0;
	for (; n < gpu_holders && n < max; n++)
		holders[n] = (struct holder){.pid = 4242 + (long)n, .name = "python3", .bytes = 100000000};
	*own = gpu_own;
	return n;
}

const struct backend_ops *ops_in_use[3];
int (*thread_create_in_use)(pthread_t *thread, void *(*fn)(void *), void *arg);
exec_record_fn record_hook_in_use; /* on_job_record of the next start(); NULL answers at once */

struct exec *start(const struct backend_ops *native, unsigned depth, uint64_t max_elements)
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
		.memory_now = fake_memory_now,
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
	gpu_available = gpu_own = 0;
	gpu_holders = 0;
	ck_assert_int_eq(exec_new(&o, &ex), ACCELD_OK);
	return ex;
}

/* A saxpy job named to device (pinned, no fallback), or with no device yet when device is NULL. */
struct exec_request saxpy(uint64_t n, const char *device)
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
void rank(struct exec_request *r, const char *const *ids)
{
	for (size_t i = 0; ids[i] != NULL; i++)
		exec_request_add_device(r, ids[i]);
	r->fallback = true;
}

const char *const tpu_first[] = {"tpu:0", "gpu:0", "cpu:0", NULL};
const char *const gpu_first[] = {"gpu:0", "cpu:0", NULL};

struct exec_job *submit_ok(struct exec *ex, struct exec_request *r)
{
	struct exec_job *job = NULL;
	struct refusal why;
	enum acceld_err rc = exec_submit(ex, r, on_done, NULL, &job, &why);

	ck_assert_msg(rc == ACCELD_OK, "refused: %s %s", reason_name(why.reason), why.detail);
	return job;
}

void submit_refused(struct exec *ex, struct exec_request *r, enum acceld_err want, const char *reason)
{
	struct exec_job *job = NULL;
	struct refusal why;
	enum acceld_err rc = exec_submit(ex, r, on_done, NULL, &job, &why);

	ck_assert_msg(rc == want, "got %d (%s: %s), want %d", rc, reason_name(why.reason), why.detail, want);
	ck_assert_str_eq(reason_name(why.reason), reason);
	ck_assert_ptr_null(job);
	json_decref(why.extra);
}

const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}
