/*
 * check_devcheck: the service the health-check tests run against (check_devcheck.h), shared by the tests of
 * devcheck.c and devcheck_tests.c.
 */
#include "check_devcheck.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/kernel.h"

/* --- the fake backend --- */

pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
double sgemm_gflops;            /* the speed reported */
double triad_gbps;
bool wrong;                     /* results off by one */
bool failing;                   /* runs fail like a device error */
int throttle_after;             /* sgemm runs after this many report a third of the speed; 0 never */
static int sgemm_runs;
static bool gated;              /* runs wait at the gate until it opens */
static int at_gate;
char order[64][24];             /* "sgemm 256", "saxpy 1000": the runs in the order they ran */
int norder;
unsigned cold_ms;               /* the first run takes this long more, as a backend's first use does */
unsigned compile_ms;            /* the first sgemm run of each size takes this long more, reported as its compile */
unsigned loaded_ms;             /* the first run of each kernel and size loads its program (1 ms, reported as its
				 * compile) and its kernel takes this long more: a GPU loads a module at its first launch */
static size_t compiled[8];      /* the sgemm sizes compiled so far */
static char loaded[16][24];     /* "sgemm 256": the programs loaded so far */
double reference;               /* what the backend says a healthy device reaches (0: it says nothing) */

static void fake_reset(void)
{
	pthread_mutex_lock(&mu);
	sgemm_gflops = 80;
	triad_gbps = 8;
	wrong = false;
	failing = false;
	throttle_after = 0;
	sgemm_runs = 0;
	gated = false;
	at_gate = 0;
	norder = 0;
	cold_ms = 0;
	compile_ms = 0;
	loaded_ms = 0;
	memset(compiled, 0, sizeof(compiled));
	memset(loaded, 0, sizeof(loaded));
	reference = 0;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

void gate(bool closed)
{
	pthread_mutex_lock(&mu);
	gated = closed;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

void wait_at_gate(int n)
{
	pthread_mutex_lock(&mu);
	while (at_gate < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static enum acceld_err rated_open(const struct device *dev, unsigned threads, void **state, char *err, size_t errsz)
{
	return backend_native.open(dev, 1, state, err, errsz);
	(void)threads;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* The one-off time this run takes: cold_ms on the first run, compile_ms on the first sgemm run of a size. */
static unsigned one_off_ms(const struct kernel_work *w, double *compile)
{
	unsigned ms = norder == 1 ? cold_ms : 0;

	*compile = 0.0;
	if (w->kernel == MATRIX_KERNEL && compile_ms > 0) {
		size_t i;

		for (i = 0; i < 8 && compiled[i] != 0 && compiled[i] != w->n; i++)
			;
		if (i < 8 && compiled[i] == 0) {
			compiled[i] = w->n;
			ms += compile_ms;
			*compile = compile_ms;
		}
	}
	return ms;
}

static enum acceld_err rated_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
				 size_t errsz)
{
	struct kernel_shape shape = {.m = w->m, .n = w->n, .k = w->k};
	enum acceld_err rc;
	double rate;
	double compile;
	unsigned extra;
	bool cold_load = false;

	pthread_mutex_lock(&mu);
	if (norder < 64)
		snprintf(order[norder++], sizeof(order[0]), "%s %zu", kernel_name(w->kernel), w->n);
	at_gate++;
	pthread_cond_broadcast(&cv);
	while (gated)
		pthread_cond_wait(&cv, &mu);
	if (failing) {
		pthread_mutex_unlock(&mu);
		snprintf(err, errsz, "clEnqueueNDRangeKernel failed: CL_OUT_OF_RESOURCES (-5)");
		return ACCELD_EDEVICE;
	}
	rate = w->kernel == MATRIX_KERNEL ? sgemm_gflops : triad_gbps;
	if (w->kernel == MATRIX_KERNEL && throttle_after > 0 && ++sgemm_runs > throttle_after)
		rate /= 3.0;
	extra = one_off_ms(w, &compile);
	if (loaded_ms > 0) {
		char name[24];
		size_t i;

		snprintf(name, sizeof(name), "%s %zu", kernel_name(w->kernel), w->n);
		for (i = 0; i < 16 && loaded[i][0] != '\0' && strcmp(loaded[i], name) != 0; i++)
			;
		if (i < 16 && loaded[i][0] == '\0') {
			snprintf(loaded[i], sizeof(loaded[i]), "%s", name);
			cold_load = true;
		}
	}
	pthread_mutex_unlock(&mu);
	sleep_ms(extra);
	rc = backend_native.run(state, w, t, err, errsz);
	if (rc != ACCELD_OK)
		return rc;
	if (compile > 0)
		t->compile_ms = compile;
	if (wrong && w->out != NULL)
		for (size_t i = 0; i < kernel_output_len(w->kernel, &shape); i += 16)
			w->out[i] += 1.0f;
	/* the time a device of this speed takes */
	t->kernel_ms = kernel_compute_bound(w->kernel) ? kernel_flops(w->kernel, &shape) / (rate * 1e6)
						       : kernel_bytes(w->kernel, &shape) / (rate * 1e6);
	if (cold_load) {
		t->compile_ms = (t->compile_ms > 0 ? t->compile_ms : 0.0) + 1.0;
		t->kernel_ms += loaded_ms;
	}
	return ACCELD_OK;
}

static void rated_close(void *state)
{
	backend_native.close(state);
}

static bool serves_cpu(const struct device *dev)
{
	return dev->type == DEVICE_CPU;
}

static double rated_reference(const struct device *dev, enum kernel_id k, const char **source)
{
	double f;

	(void)dev;
	pthread_mutex_lock(&mu);
	f = reference;
	pthread_mutex_unlock(&mu);
	if (f <= 0)
		return 1.0;
	*source = "measured on a test device";
	return k == MATRIX_KERNEL ? f : 1.0;
}

static const struct backend_ops rated = {.name = "native",
					 .serves_what = "CPUs",
					 .serves = serves_cpu,
					 .open = rated_open,
					 .run = rated_run,
					 .close = rated_close,
					 .reference = rated_reference};
static const struct backend_ops *const backends[] = {&rated, NULL};

/* --- the service around the checks --- */

struct device devs[2];
unsigned queue_depth = 16;
struct exec *ex;
struct devcheck *dc;
pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
json_t *last_doc;
int nrecords;
int nchanged;

static bool view(void *ctx, const char *id, bool fresh, struct device *out)
{
	(void)ctx;
	(void)fresh;
	for (size_t i = 0; i < 2; i++) {
		if (strcmp(devs[i].id, id) == 0) {
			pthread_mutex_lock(&rec_mu);
			*out = devs[i];
			pthread_mutex_unlock(&rec_mu);
			return true;
		}
	}
	return false;
}

static void on_record(void *ctx, const json_t *doc)
{
	(void)ctx;
	pthread_mutex_lock(&rec_mu);
	json_decref(last_doc);
	last_doc = json_deep_copy(doc);
	nrecords++;
	pthread_mutex_unlock(&rec_mu);
}

/* What the device's summary said, and what its run said, each time detection was told of a change */
char told_id[DEVCHECK_ID_MAX];
enum devcheck_state told_summary, told_run;

static void on_changed(void *ctx, const char *device)
{
	struct devcheck_summary sum;
	struct devcheck_run *run = NULL;

	(void)ctx;
	ck_assert_ptr_nonnull(device);
	pthread_mutex_lock(&rec_mu);
	nchanged++;
	if (devcheck_summary_of(dc, device, &sum) && sum.id[0] != '\0') {
		snprintf(told_id, sizeof(told_id), "%s", sum.id);
		told_summary = sum.state;
		run = devcheck_get(dc, sum.id);
		told_run = run != NULL ? devcheck_run_state(run) : DEVCHECK_QUEUED;
		devcheck_run_unref(run);
	}
	pthread_mutex_unlock(&rec_mu);
}

struct devcheck_settings settings(void)
{
	struct devcheck_settings s = {.long_ms = 1000,
				      .warn_percent = 25,
				      .fail_percent = 10,
				      .throttle_percent = 90,
				      .clock_percent = 50,
				      .max_age_ms = 3600000,
				      .max_elements = MAX_ELEMENTS,
				      .matrix_budget_ms = 2000,
				      .memory_budget_ms = 2000,
				      .max_reps = 3,
				      .matrix_max_n = 256};

	return s;
}

void start_with(const struct devcheck_settings *s)
{
	struct exec_opts eo = {.devices = devs,
			       .ndevices = 2,
			       .max_elements = MAX_ELEMENTS,
			       .queue_depth = queue_depth,
			       .default_timeout_ms = 60000,
			       .max_timeout_ms = 600000,
			       .recent = 64,
			       .cpu_threads = 1,
			       .backends = backends};
	struct devcheck_opts co = {.settings = *s,
				   .device = view,
				   .record = on_record,
				   .changed = on_changed};

	ck_assert_int_eq(exec_new(&eo, &ex), ACCELD_OK);
	co.exec = ex;
	ck_assert_int_eq(devcheck_new(&co, &dc), ACCELD_OK);
}

void setup(void)
{
	fake_reset();
	/* a CPU that should do 100 GFLOP/s and 10 GB/s, and a GPU no backend here serves */
	device_init(&devs[0], DEVICE_CPU);
	DEVICE_SET(devs[0].id, "cpu:0");
	DEVICE_SET(devs[0].model, "Test CPU");
	devs[0].peak.fp32_tflops = 0.1;
	devs[0].peak.memory_gbytes_per_s = 10;
	DEVICE_SET(devs[0].peak.source, "estimate, not measured: test");
	devs[0].memory_total_bytes = 8ull << 30;
	devs[0].memory_available_bytes = 8ull << 30;
	devs[0].cpu.cores = 1;
	devs[0].cpu.pus = 1;
	devs[0].cpu.effective_cpus = 1;
	device_init(&devs[1], DEVICE_GPU);
	DEVICE_SET(devs[1].id, "gpu:0");
	nrecords = 0;
	nchanged = 0;
	told_id[0] = '\0';
	last_doc = NULL;
	ex = NULL;
	dc = NULL;
	{
		struct devcheck_settings s = settings();

		start_with(&s);
	}
}

void teardown(void)
{
	gate(false);
	devcheck_free(dc);
	exec_free(ex);
	json_decref(last_doc);
}

/* Runs a check of cpu:0 to its end and returns its document (the caller releases it). */
json_t *run_check(enum devcheck_level level, uint64_t duration_ms, struct devcheck_run **out)
{
	struct devcheck_request req;
	struct refusal why;
	struct devcheck_run *run = NULL;
	json_t *doc;

	devcheck_request_init(&req);
	req.level = level;
	req.duration_ms = duration_ms;
	ck_assert_int_eq(devcheck_start(dc, "cpu:0", &req, NULL, NULL, &run, &why), ACCELD_OK);
	devcheck_run_wait(run);
	doc = devcheck_run_json(run);
	if (out != NULL)
		*out = run;
	else
		devcheck_run_unref(run);
	return doc;
}

json_t *test_of(json_t *doc, const char *name)
{
	size_t i;
	json_t *t;

	json_array_foreach(json_object_get(doc, "tests"), i, t)
		if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
			return t;
	return NULL;
}

const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}
